/* The command table, help texts and the option and output helpers commands share. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "core/core.h"
#include "store/store.h"

static const struct cli_cmd cli_cmds[] = {
	{ .name = "run", .fn = cmd_run,
	  .usage = "[-a AGENT] [-C DIR] [--allow RULE]... [--deny RULE]... "
	  "[--on-unknown deny] [--memory SIZE] [--pids N] [--upstream-ca FILE] "
	  "[-- COMMAND [ARG...]]",
	  .summary = "run a command (default: the agent's) in a jail, in this "
	  "terminal",
	  .help =
	  "  -a AGENT             the agent profile (default: [ui] default_agent, "
	  "else shell)\n"
	  "  -C DIR               the project: DIR's git top-level, or DIR "
	  "(default: .)\n"
	  "  --allow RULE         also allow HOST[:PORT] [METHOD] [PATH] "
	  "(repeat)\n"
	  "  --deny RULE          also deny HOST[:PORT] [METHOD] [PATH] "
	  "(repeat)\n"
	  "  --on-unknown deny    deny destinations no rule covers (the only "
	  "choice\n"
	  "                       without the dashboard, which can ask)\n"
	  "  --memory SIZE        memory limit, e.g. 2G (default: the agent's, "
	  "then [limits])\n"
	  "  --pids N             process limit (default: the agent's, then "
	  "[limits])\n"
	  "  --upstream-ca FILE   also trust FILE's CA certificates upstream "
	  "(repeat)\n"
	  "  -- COMMAND [ARG...]  what to run (default: the agent's command; "
	  "shell: $SHELL)\n"
	  "\n"
	  "The command gets its own pty when this is a terminal, else pipes. The\n"
	  "jail sees the project read-write, a private HOME and /tmp, the system\n"
	  "read-only, and no network but agentmux's proxy. agentmux exits with\n"
	  "the command's status (128+N if signal N ended it); 2 for usage errors,\n"
	  "1 if the jail could not start.\n" },
	{ .name = "proxy", .fn = cmd_proxy,
	  .usage = "--listen HOST:PORT [-a AGENT] [--allow RULE]... "
	  "[--deny RULE]... [--upstream-ca FILE] [-v]",
	  .summary = "run the jail's proxy without a jail, in the foreground",
	  .help =
	  "  --listen HOST:PORT   where to listen: 127.0.0.1 or [::1] "
	  "(port 0: any)\n"
	  "  -a AGENT             also apply this agent profile's rules and "
	  "secrets\n"
	  "  --allow RULE         allow HOST[:PORT] [METHOD] [PATH] (repeat)\n"
	  "  --deny RULE          deny HOST[:PORT] [METHOD] [PATH] (repeat)\n"
	  "  --upstream-ca FILE   also trust FILE's CA certificates upstream "
	  "(repeat)\n"
	  "  -v, --verbose        print each request as it ends\n"
	  "\n"
	  "The same proxy a jail gets: HTTP and CONNECT, TLS interception with\n"
	  "agentmux's CA (its path is printed: clients must trust it), the\n"
	  "policy from [policy], the profile and the command line; destinations\n"
	  "no rule covers are denied. Requests are recorded as a session of\n"
	  "kind proxy. SIGINT or SIGTERM end it.\n" },
	{ .name = "sessions", .fn = cmd_sessions,
	  .usage = "[--json] [--all]",
	  .summary = "list recorded sessions, newest first",
	  .help =
	  "  --json        print JSON (an array of session objects)\n"
	  "  --all         every session, not just the latest 50\n" },
	{ .name = "show", .fn = cmd_show,
	  .usage = "SESSION [--json]",
	  .summary = "show one session: settings, counts, snapshots, decisions, events",
	  .help =
	  "  SESSION       a session number, or 'last'\n"
	  "  --json        print JSON\n" },
	{ .name = "requests", .fn = cmd_requests,
	  .usage = "[SESSION] [--json] [--denied] [--host GLOB]",
	  .summary = "list recorded requests (of one session, or all)",
	  .help =
	  "  SESSION       a session number, or 'last' (default: every session)\n"
	  "  --json        print JSON (an array of request objects)\n"
	  "  --denied      only denied requests\n"
	  "  --host GLOB   only hosts matching GLOB (e.g. '*.github.com')\n" },
	{ .name = "doctor", .fn = cmd_doctor,
	  .usage = "[--json]",
	  .summary = "check this machine, then prove the jail's boundary with real jails",
	  .help =
	  "  --json        print JSON ({ok, checks: [{name, ok, detail, fix}]})\n"
	  "Checks user namespaces, seccomp, Landlock, overlayfs, how limits are\n"
	  "enforced, git, the CA, the config and the data and runtime dirs; then\n"
	  "starts real jails and a local HTTPS server to show that a direct\n"
	  "connection, DNS and a write outside the project fail, that the proxy\n"
	  "allows a request by rule and refuses it without one, and that a\n"
	  "secret is swapped in on the way out. Exits 0 only if everything holds.\n" },
	{ .name = "export", .fn = cmd_export,
	  .usage = "SESSION [--har FILE | --json FILE]",
	  .summary = "export a session as HAR 1.2, or as agentmux's own complete JSON record",
	  .help =
	  "  SESSION       a session number, or 'last'\n"
	  "  --har FILE    HAR 1.2 (the default; to stdout without FILE or with -),\n"
	  "                importable by browsers' developer tools and mitmproxy\n"
	  "  --json FILE   everything recorded: session, requests, decisions,\n"
	  "                snapshots, config changes, events\n"
	  "Headers are exported as stored: secrets redacted.\n" },
	{ .name = "policy", .fn = cmd_policy,
	  .usage = "suggest SESSION... [--agent NAME] [--write]",
	  .summary = "suggest the smallest rule set that allows what sessions did",
	  .help =
	  "  SESSION...    session numbers, or 'last'\n"
	  "  --agent NAME  the rules are for the agent profile NAME ([agent NAME])\n"
	  "                instead of every session ([policy])\n"
	  "  --write       add the new rules to the config file (atomically,\n"
	  "                comments kept), after showing the diff\n" },
	{ .name = "agents", .fn = cmd_agents,
	  .usage = "[--json]",
	  .summary = "list agent profiles: command, where it is installed, hosts, secrets, config dirs",
	  .help =
	  "  --json        print JSON (an array of profile objects)\n"
	  "Profiles ship in share/agentmux/agents/; [agent NAME] in the config adds\n"
	  "or extends them.\n" },
	{ .name = "probe", .fn = cmd_probe,
	  .usage = "connect HOST PORT | resolve NAME | write PATH | fetch URL [HEADER...]",
	  .summary = "check from inside a jail what it lets through (doctor uses it)",
	  .help =
	  "  connect HOST PORT   open a TCP connection\n"
	  "  resolve NAME        look a name up\n"
	  "  write PATH          create or truncate a file\n"
	  "  fetch URL [HEADER]  GET an http(s) URL through HTTP(S)_PROXY, verifying TLS\n"
	  "                      against SSL_CERT_FILE; prints the response; ${NAME}\n"
	  "                      in a header is taken from the environment\n"
	  "Each exits 0 when the action succeeded and 1 with 'blocked: why' when not.\n"
	  "Run it jailed: agentmux run -- agentmux probe connect 127.0.0.1 22\n" },
	{ .name = "config", .fn = cmd_config,
	  .usage = "check | path",
	  .summary = "check the config file, or print where it is",
	  .help =
	  "  check         report every problem as FILE:LINE: message (exit 2 if any)\n"
	  "  path          print the config file's path\n" },
	{ .name = "snapshot", .fn = cmd_snapshot,
	  .usage = "[SESSION] [-C DIR] [-m LABEL]",
	  .summary = "snapshot a project now (git commit of the whole tree, kept under refs/agentmux/)",
	  .help =
	  "  SESSION       add the snapshot to this session's chain (a number or 'last')\n"
	  "  -C DIR        without SESSION: the project of DIR (default: the current dir);\n"
	  "                its standalone snapshots are kept in one 'snapshot' session per\n"
	  "                project, shown by 'agentmux sessions'\n"
	  "  -m, --message LABEL   a label to remember it by\n" },
	{ .name = "snapshots", .fn = cmd_snapshots,
	  .usage = "SESSION [--json]",
	  .summary = "list a session's snapshots",
	  .help =
	  "  SESSION       a session number, or 'last'\n"
	  "  --json        print JSON (an array of snapshot objects)\n"
	  "The SNAP column is what --from, --to and undo --to take; they also take\n"
	  "start, end, latest, NAME~N (N before NAME) and commit id prefixes.\n" },
	{ .name = "diff", .fn = cmd_diff,
	  .usage = "SESSION [--from SNAP] [--to SNAP|worktree] [--stat] [PATH...]",
	  .summary = "show what changed in a session's project (default: from its start to now)",
	  .help =
	  "  SESSION       a session number, or 'last'\n"
	  "  --from SNAP   the older side (default: start)\n"
	  "  --to SNAP     the newer side, or 'worktree' for the files as they are now\n"
	  "                (the default)\n"
	  "  --stat        a summary: files and lines changed\n"
	  "  PATH...       only these files or dirs\n"
	  "SNAP: a number from 'agentmux snapshots SESSION', start, end, latest,\n"
	  "NAME~N (N before NAME) or a commit id prefix. Coloured on a terminal\n"
	  "unless NO_COLOR is set.\n" },
	{ .name = "undo", .fn = cmd_undo,
	  .usage = "SESSION [--to SNAP] [--dry-run] [--refs] [PATH...]",
	  .summary = "put a session's project back as it was at a snapshot (default: its start)",
	  .help =
	  "  SESSION       a session number, or 'last'; it must have ended\n"
	  "  --to SNAP     the snapshot to go back to (default: start); see 'snapshots'\n"
	  "  --dry-run     print what would change, change nothing\n"
	  "  --refs        also reset the branch tips the session moved, HEAD and the\n"
	  "                index to what they were at its start (the old tips stay in\n"
	  "                the reflog)\n"
	  "  PATH...       only these files or dirs\n"
	  "The present state is snapshotted first, so every undo can be undone:\n"
	  "the last line says how. Files created since are removed, deleted ones\n"
	  "come back, modified ones, modes and symlinks are restored; ignored\n"
	  "files are left alone.\n" },
	{ .name = "confdiff", .fn = cmd_confdiff,
	  .usage = "SESSION [PATH...] [--apply|--discard]",
	  .summary = "show, keep or drop what a session changed in the agent's config dirs",
	  .help =
	  "  SESSION       a session number, or 'last'\n"
	  "  PATH...       only changes at or under these host paths\n"
	  "  --apply       copy the changes into the host dirs (atomically per file,\n"
	  "                modes kept; deletions too); the session must have ended\n"
	  "  --discard     drop the changes: the host dirs stay as they are\n"
	  "Without --apply or --discard, shows the pending changes as unified diffs\n"
	  "against the host files, with values that look like secrets redacted and\n"
	  "binary files summarised. Nothing is applied unless asked (or the agent\n"
	  "profile says config_persist = always).\n" },
	{ .name = "gc", .fn = cmd_gc,
	  .usage = "--older-than DURATION [--dry-run]",
	  .summary = "delete sessions (and their records and snapshots) older than DURATION",
	  .help =
	  "  --older-than DURATION   e.g. 30d, 12h, 2w\n"
	  "  --dry-run               list what would be deleted\n" },
};

const struct cli_cmd *
cli_find(const char *name)
{
	size_t i;

	for (i = 0; i < nitems(cli_cmds); i++) {
		if (strcmp(cli_cmds[i].name, name) == 0)
			return &cli_cmds[i];
	}
	return NULL;
}

void
cli_print_usage(FILE *fp)
{
	size_t i;

	out_printf(fp, "usage: agentmux [--version] [--help] [COMMAND [ARGS]]\n"
	    "       agentmux [-a AGENT] [-C DIR] [-- COMMAND [ARG...]]   "
	    "the dashboard\n"
	    "\n"
	    "Runs AI coding agents in namespace jails whose only way out is an\n"
	    "intercepting, policy-enforcing proxy, and records what they do.\n"
	    "\n"
	    "Commands:\n");
	for (i = 0; i < nitems(cli_cmds); i++)
		out_printf(fp, "  %-10s %s\n", cli_cmds[i].name,
		    cli_cmds[i].summary);
	out_printf(fp,
	    "\nRun 'agentmux COMMAND --help' for a command's options.\n");
}

int
cli_help(const char *name)
{
	const struct cli_cmd *c = cli_find(name);

	out_printf(stdout, "usage: agentmux %s %s\n\n%s.\n\n%s", c->name,
	    c->usage, c->summary, c->help);
	return 0;
}

int
cli_bad_option(const char *cmd, char **argv, int c)
{
	const char *arg = argv[optind - 1];

	if (c == ':')
		out_printf(stderr,
		    "agentmux %s: option '%s' needs a value; see "
		    "'agentmux %s --help'\n", cmd, arg, cmd);
	else if (optopt != 0 && optopt != '?')
		out_printf(stderr, "agentmux %s: unknown option '-%c'; see "
		    "'agentmux %s --help'\n", cmd, optopt, cmd);
	else
		out_printf(stderr, "agentmux %s: unknown option '%s'; see "
		    "'agentmux %s --help'\n", cmd, arg, cmd);
	return 2;
}

int
cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	out_printf(stderr, "agentmux %s: ", cmd);
	va_start(ap, fmt);
	out_vprintf(stderr, fmt, ap);
	va_end(ap);
	out_printf(stderr, "; see 'agentmux %s --help'\n", cmd);
	return 2;
}

int
cli_error(const char *fmt, ...)
{
	va_list ap;

	out_puts(stderr, "agentmux: ");
	va_start(ap, fmt);
	out_vprintf(stderr, fmt, ap);
	va_end(ap);
	out_puts(stderr, "\n");
	return 1;
}

struct store *
cli_open_store(void)
{
	struct store *st;
	char *cause = NULL;

	if ((st = store_open(NULL, &cause)) == NULL) {
		cli_error("%s", cause);
		free(cause);
	}
	return st;
}

struct config *
cli_load_config(void)
{
	struct config *cf;
	char *cause = NULL;

	if ((cf = config_load_or_cause(NULL, &cause)) == NULL) {
		cli_error("%s", cause);
		free(cause);
	}
	return cf;
}

int
cli_resolve_session(struct store *st, const char *spec, int64_t *id)
{
	char *cause = NULL;

	if (store_session_resolve(st, spec, id, &cause) == -1) {
		cli_error("%s", cause);
		free(cause);
		return -1;
	}
	return 0;
}

const char *
cli_iso_time(char *buf, size_t len, int64_t ms)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	char tmp[32];

	gmtime_r(&t, &tm);
	strftime(tmp, sizeof tmp, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%03dZ", tmp, (int)(ms % 1000));
	return buf;
}

bool
cli_color(void)
{
	const char *nc = getenv("NO_COLOR");

	return isatty(STDOUT_FILENO) && (nc == NULL || *nc == '\0');
}

void
cli_table_init(struct cli_table *t, size_t ncols, const char *const *headers)
{
	memset(t, 0, sizeof *t);
	t->ncols = ncols;
	t->right = xcalloc(ncols, sizeof *t->right);
	cli_table_add(t, headers);
}

void
cli_table_add(struct cli_table *t, const char *const *cells)
{
	size_t i;

	t->cells = xreallocarray(t->cells, (t->nrows + 1) * t->ncols,
	    sizeof *t->cells);
	for (i = 0; i < t->ncols; i++) {
		t->cells[t->nrows * t->ncols + i] = xstrdup(cells[i] != NULL &&
		    *cells[i] != '\0' ? cells[i] : "-");
	}
	t->nrows++;
}

void
cli_table_right(struct cli_table *t, size_t col)
{
	t->right[col] = true;
}

/* Display width of UTF-8 text, counting code points. */
static size_t
cli_width(const char *s)
{
	size_t w = 0;

	for (; *s != '\0'; s++) {
		if (((unsigned char)*s & 0xc0) != 0x80)
			w++;
	}
	return w;
}

void
cli_table_print(struct cli_table *t, FILE *fp)
{
	size_t *w = xcalloc(t->ncols, sizeof *w), r, c, cw, pad;
	const char *cell;
	struct buf line;

	for (r = 0; r < t->nrows; r++) {
		for (c = 0; c < t->ncols; c++) {
			cw = cli_width(t->cells[r * t->ncols + c]);
			if (cw > w[c])
				w[c] = cw;
		}
	}
	/* A row at a time through the quoting helper. */
	buf_init(&line);
	for (r = 0; r < t->nrows; r++) {
		buf_reset(&line);
		for (c = 0; c < t->ncols; c++) {
			cell = t->cells[r * t->ncols + c];
			pad = w[c] - cli_width(cell);
			if (t->right[c])
				buf_printf(&line, "%*s%s", (int)pad, "", cell);
			else if (c + 1 < t->ncols)
				buf_printf(&line, "%s%*s", cell, (int)pad, "");
			else
				buf_adds(&line, cell);
			buf_adds(&line, c + 1 < t->ncols ? "  " : "\n");
		}
		out_puts(fp, line.data);
	}
	buf_free(&line);
	free(w);
}

void
cli_table_free(struct cli_table *t)
{
	size_t i;

	for (i = 0; i < t->nrows * t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	free(t->right);
}
