/* The command table: every command, its options and arguments; help is printed from it. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/core.h"

#define CLI_END { NULL, 0, NULL, CLI_TEXT, NULL }
#define CLI_ARGS_END { NULL, CLI_TEXT, 0, NULL }

#define CLI_OPT_JSON(what) \
	{ "json", 0, NULL, CLI_TEXT, "print JSON (" what ")" }
#define CLI_OPT_AGENT(what) \
	{ "agent", 'a', "AGENT", CLI_AGENT, what }
#define CLI_OPT_ALLOW \
	{ "allow", 0, "RULE", CLI_TEXT, \
	  "also allow HOST[:PORT] [METHOD] [PATH] (repeat)" }
#define CLI_OPT_DENY \
	{ "deny", 0, "RULE", CLI_TEXT, \
	  "also deny HOST[:PORT] [METHOD] [PATH] (repeat)" }
#define CLI_OPT_UPSTREAM_CA \
	{ "upstream-ca", 0, "FILE", CLI_FILE, \
	  "also trust FILE's CA certificates upstream (repeat)" }
#define CLI_OPT_SERVER \
	{ "socket-name", 'L', "NAME", CLI_TEXT, \
	  "the server named NAME (default: default), as tmux's -L" }
/* A session in a worktree of its own, or knowingly in a shared tree (cmd_worktree_opts). */
#define CLI_OPTS_WORKTREE \
	{ "worktree", 0, NULL, CLI_TEXT, "work in a git worktree of its own " \
	  "(under the data dir, on branch agentmux/ID/NAME)" }, \
	{ "base", 0, "REF", CLI_TEXT, "with --worktree: start its branch at " \
	  "REF (default: HEAD)" }, \
	{ "branch", 0, "NAME", CLI_TEXT, "with --worktree: NAME in " \
	  "agentmux/ID/NAME (default: the agent's name)" }, \
	{ "shared", 0, NULL, CLI_TEXT, "start even if another session runs " \
	  "in the project's tree" }
#define CLI_ARG_SESSION \
	{ "SESSION", CLI_SESSION, 0, "a session number, or 'last'" }
#define CLI_ARG_PATHS(what) \
	{ "PATH", CLI_FILE, CLI_OPTIONAL | CLI_REPEAT, what }

static const struct cli_opt cli_top_opts[] = {
	CLI_OPT_AGENT("the agent of the first session (default: [ui] "
	    "default_agent, else shell)"),
	{ "dir", 'C', "DIR", CLI_DIR, "the project: DIR's git top-level, or "
	  "DIR (default: .)" },
	CLI_OPT_SERVER,
	{ "version", 'V', NULL, CLI_TEXT, "print the version and what this "
	  "machine gives the jail" },
	CLI_END
};
static const struct cli_arg cli_top_args[] = {
	{ "COMMAND", CLI_COMMAND, CLI_OPTIONAL | CLI_REPEAT, "the first "
	  "session's command (default: the agent's)" },
	CLI_ARGS_END
};
static const struct cli_cmd cli_top_cmd = {
	.name = "agentmux", .fn = cmd_dashboard, .opts = cli_top_opts,
	.args = cli_top_args, .flags = CLI_ORDERED,
	.summary = "the dashboard: agents in jailed panes, their requests, "
	"prompts and snapshots",
	.help = "The sessions belong to a server (one per user, started by the "
	"first\nagentmux): with sessions running, agentmux attaches to them; "
	"-a, -C or a\ncommand start a new one. In the dashboard the prefix key "
	"(C-a, or [ui]\nprefix) then ? lists every key; prefix d detaches, and "
	"the sessions keep\nrunning.\n",
};

static const struct cli_opt cli_server_opts[] = {
	CLI_OPT_SERVER,
	CLI_END
};
static const struct cli_opt cli_attach_opts[] = {
	CLI_OPT_SERVER,
	{ "target", 't', "SESSION", CLI_TEXT, "show this live session "
	  "(agentmux ls)" },
	CLI_END
};
static const struct cli_opt cli_ls_opts[] = {
	CLI_OPT_SERVER,
	CLI_OPT_JSON("an array of sessions"),
	CLI_END
};
static const struct cli_opt cli_new_opts[] = {
	CLI_OPT_SERVER,
	{ "detached", 'd', NULL, CLI_TEXT, "start it without attaching; "
	  "print its number" },
	CLI_OPT_AGENT("the agent (default: [ui] default_agent, else shell)"),
	{ "dir", 'C', "DIR", CLI_DIR, "the project: DIR's git top-level, or "
	  "DIR (default: .)" },
	CLI_OPTS_WORKTREE,
	CLI_END
};
static const struct cli_opt cli_send_opts[] = {
	CLI_OPT_SERVER,
	{ "literal", 'l', NULL, CLI_TEXT, "type the words as they are (no key "
	  "names)" },
	CLI_END
};
static const struct cli_opt cli_port_opts[] = {
	CLI_OPT_SERVER,
	{ "delete", 'd', NULL, CLI_TEXT, "remove the forward to JAIL_PORT "
	  "instead" },
	{ "host", 0, "ADDR", CLI_TEXT, "listen on ADDR (default: the "
	  "session's own loopback address, 127.77.ID.1); an address that "
	  "is not loopback only so" },
	CLI_END
};
static const struct cli_arg cli_port_args[] = {
	{ "SESSION", CLI_TEXT, 0, "a live session's number (agentmux ls)" },
	{ "JAIL_PORT", CLI_TEXT, 0, "the port its program listens on, on the "
	  "jail's 127.0.0.1" },
	{ "HOST_PORT", CLI_TEXT, CLI_OPTIONAL, "[ADDR:]PORT on the host "
	  "(default: JAIL_PORT on 127.77.ID.1; 0: any free port)" },
	CLI_ARGS_END
};
static const struct cli_opt cli_wait_opts[] = {
	CLI_OPT_SERVER,
	{ "for", 0, "needs-you|prompt|exit", CLI_CHOICE, "the state to wait "
	  "for (default exit)" },
	{ "timeout", 0, "SECONDS", CLI_TEXT, "give up after this long "
	  "(exit 1)" },
	CLI_END
};
static const struct cli_arg cli_live_args[] = {
	{ "SESSION", CLI_TEXT, 0, "a live session's number (agentmux ls)" },
	CLI_ARGS_END
};
static const struct cli_arg cli_send_args[] = {
	{ "SESSION", CLI_TEXT, 0, "a live session's number (agentmux ls)" },
	{ "KEYS", CLI_TEXT, CLI_REPEAT, "text, or key names as tmux's "
	  "send-keys takes them: Enter, Escape, C-c, M-x, Up, F1" },
	CLI_ARGS_END
};

static const struct cli_opt cli_run_opts[] = {
	CLI_OPT_AGENT("the agent profile (default: [ui] default_agent, else "
	    "shell)"),
	{ "dir", 'C', "DIR", CLI_DIR, "the project: DIR's git top-level, or "
	  "DIR (default: .)" },
	CLI_OPT_ALLOW,
	CLI_OPT_DENY,
	{ "on-unknown", 0, "deny", CLI_CHOICE, "deny destinations no rule "
	  "covers (the only choice without the dashboard, which can ask)" },
	{ "memory", 0, "SIZE", CLI_TEXT, "memory limit, e.g. 2G (default: the "
	  "agent's, then [limits])" },
	{ "pids", 0, "N", CLI_TEXT, "process limit (default: the agent's, then "
	  "[limits])" },
	CLI_OPT_UPSTREAM_CA,
	CLI_OPTS_WORKTREE,
	CLI_END
};
static const struct cli_arg cli_run_args[] = {
	{ "COMMAND", CLI_COMMAND, CLI_OPTIONAL | CLI_REPEAT, "what to run "
	  "(default: the agent's command; shell: $SHELL)" },
	CLI_ARGS_END
};

static const struct cli_opt cli_proxy_opts[] = {
	{ "listen", 0, "HOST:PORT", CLI_TEXT, "where to listen: 127.0.0.1 or "
	  "[::1] (port 0: any)" },
	CLI_OPT_AGENT("also apply this agent profile's rules and secrets"),
	{ "allow", 0, "RULE", CLI_TEXT, "allow HOST[:PORT] [METHOD] [PATH] "
	  "(repeat)" },
	{ "deny", 0, "RULE", CLI_TEXT, "deny HOST[:PORT] [METHOD] [PATH] "
	  "(repeat)" },
	CLI_OPT_UPSTREAM_CA,
	{ "verbose", 'v', NULL, CLI_TEXT, "print each request as it ends" },
	CLI_END
};

static const struct cli_opt cli_sessions_opts[] = {
	CLI_OPT_JSON("an array of session objects"),
	{ "all", 0, NULL, CLI_TEXT, "every session, not just the latest 50" },
	CLI_END
};

static const struct cli_opt cli_json_opts[] = {
	{ "json", 0, NULL, CLI_TEXT, "print JSON" },
	CLI_END
};
static const struct cli_arg cli_session_args[] = {
	CLI_ARG_SESSION,
	CLI_ARGS_END
};

static const struct cli_opt cli_requests_opts[] = {
	CLI_OPT_JSON("an array of request objects"),
	{ "denied", 0, NULL, CLI_TEXT, "only denied requests" },
	{ "host", 0, "GLOB", CLI_TEXT, "only hosts matching GLOB (e.g. "
	  "'*.github.com')" },
	CLI_END
};
static const struct cli_arg cli_requests_args[] = {
	{ "SESSION", CLI_SESSION, CLI_OPTIONAL, "a session number, or 'last' "
	  "(default: every session)" },
	CLI_ARGS_END
};

static const struct cli_opt cli_doctor_opts[] = {
	CLI_OPT_JSON("{ok, checks: [{name, ok, detail, fix}]}"),
	CLI_END
};

static const struct cli_opt cli_export_opts[] = {
	{ "har", 0, "FILE", CLI_FILE, "HAR 1.2 (the default; to stdout "
	  "without FILE or with -), importable by browsers' developer tools "
	  "and mitmproxy" },
	{ "json", 0, "FILE", CLI_FILE, "everything recorded: session, "
	  "requests, decisions, snapshots, config changes, events" },
	CLI_END
};

static const struct cli_opt cli_policy_opts[] = {
	CLI_OPT_AGENT("the rules are for the agent profile AGENT ([agent "
	    "AGENT]) instead of every session ([policy])"),
	{ "write", 0, NULL, CLI_TEXT, "add the new rules to the config file "
	  "(atomically, comments kept), after showing the diff" },
	CLI_END
};
static const struct cli_arg cli_policy_args[] = {
	{ "SESSION", CLI_SESSION, CLI_REPEAT, "session numbers, or 'last'" },
	CLI_ARGS_END
};
static const struct cli_cmd cli_policy_subs[] = {
	{ .name = "suggest", .fn = cmd_policy_suggest, .opts = cli_policy_opts,
	  .args = cli_policy_args,
	  .summary = "suggest the smallest rule set that allows what sessions "
	  "did" },
	{ .name = NULL },
};

static const struct cli_opt cli_agents_opts[] = {
	CLI_OPT_JSON("an array of profile objects"),
	CLI_END
};

static const struct cli_arg cli_probe_connect_args[] = {
	{ "HOST", CLI_TEXT, 0, NULL },
	{ "PORT", CLI_TEXT, 0, NULL },
	CLI_ARGS_END
};
static const struct cli_arg cli_probe_resolve_args[] = {
	{ "NAME", CLI_TEXT, 0, NULL },
	CLI_ARGS_END
};
static const struct cli_arg cli_probe_write_args[] = {
	{ "PATH", CLI_FILE, 0, NULL },
	CLI_ARGS_END
};
static const struct cli_arg cli_probe_fetch_args[] = {
	{ "URL", CLI_TEXT, 0, NULL },
	{ "HEADER", CLI_TEXT, CLI_OPTIONAL | CLI_REPEAT, "sent as given; "
	  "${NAME} in it is taken from the environment" },
	CLI_ARGS_END
};
static const struct cli_cmd cli_probe_subs[] = {
	{ .name = "connect", .fn = cmd_probe_connect,
	  .args = cli_probe_connect_args, .flags = CLI_ORDERED,
	  .summary = "open a TCP connection" },
	{ .name = "resolve", .fn = cmd_probe_resolve,
	  .args = cli_probe_resolve_args, .flags = CLI_ORDERED,
	  .summary = "look a name up" },
	{ .name = "write", .fn = cmd_probe_write, .args = cli_probe_write_args,
	  .flags = CLI_ORDERED, .summary = "create or truncate a file" },
	{ .name = "fetch", .fn = cmd_probe_fetch, .args = cli_probe_fetch_args,
	  .flags = CLI_ORDERED,
	  .summary = "GET an http(s) URL through HTTP(S)_PROXY, verifying TLS "
	  "against SSL_CERT_FILE; prints the response" },
	{ .name = NULL },
};

static const struct cli_opt cli_config_opts[] = {
	{ "file", 'f', "FILE", CLI_FILE, "this config file instead of the "
	  "usual one" },
	CLI_END
};
static const struct cli_arg cli_config_keys_args[] = {
	{ "SECTION", CLI_SECTION, CLI_OPTIONAL, "only this section's keys" },
	CLI_ARGS_END
};
static const struct cli_cmd cli_config_subs[] = {
	{ .name = "check", .fn = cmd_config_check, .opts = cli_config_opts,
	  .summary = "report every problem as FILE:LINE: message (exit 2 if "
	  "any)" },
	{ .name = "path", .fn = cmd_config_path, .opts = cli_config_opts,
	  .summary = "print the config file's path" },
	{ .name = "keys", .fn = cmd_config_keys, .args = cli_config_keys_args,
	  .summary = "list every section and key the config file takes" },
	{ .name = NULL },
};

static const struct cli_arg cli_completion_words_args[] = {
	{ "WORD", CLI_TEXT, CLI_OPTIONAL | CLI_REPEAT, "the command line "
	  "after 'agentmux', the last word the one being completed" },
	CLI_ARGS_END
};
static const struct cli_cmd cli_completion_subs[] = {
	{ .name = "bash", .fn = cmd_completion,
	  .summary = "print the bash completion script" },
	{ .name = "zsh", .fn = cmd_completion,
	  .summary = "print the zsh completion script" },
	{ .name = "fish", .fn = cmd_completion,
	  .summary = "print the fish completion script" },
	{ .name = "words", .fn = cmd_completion_words,
	  .args = cli_completion_words_args, .flags = CLI_ORDERED,
	  .summary = "print what may come next on a command line (the "
	  "scripts ask this): commands, options, agent names, session "
	  "numbers, snapshots, config sections" },
	{ .name = NULL },
};

static const struct cli_opt cli_snapshot_opts[] = {
	{ "dir", 'C', "DIR", CLI_DIR, "without SESSION: the project of DIR "
	  "(default: the current dir); its standalone snapshots are kept in one "
	  "'snapshot' session per project, shown by 'agentmux sessions'" },
	{ "message", 'm', "LABEL", CLI_TEXT, "a label to remember it by" },
	CLI_END
};
static const struct cli_arg cli_snapshot_args[] = {
	{ "SESSION", CLI_SESSION, CLI_OPTIONAL, "add the snapshot to this "
	  "session's chain (a number or 'last')" },
	CLI_ARGS_END
};

static const struct cli_opt cli_snapshots_opts[] = {
	CLI_OPT_JSON("an array of snapshot objects"),
	CLI_END
};

static const struct cli_opt cli_diff_opts[] = {
	{ "from", 0, "SNAP", CLI_SNAP, "the older side (default: start)" },
	{ "to", 0, "SNAP", CLI_SNAP, "the newer side, or 'worktree' for the "
	  "files as they are now (the default)" },
	{ "stat", 0, NULL, CLI_TEXT, "a summary: files and lines changed" },
	CLI_END
};
static const struct cli_arg cli_diff_args[] = {
	CLI_ARG_SESSION,
	CLI_ARG_PATHS("only these files or dirs"),
	CLI_ARGS_END
};

static const struct cli_opt cli_merge_opts[] = {
	{ "squash", 0, NULL, CLI_TEXT, "one commit of all its changes, not a "
	  "merge commit" },
	{ "apply", 0, NULL, CLI_TEXT, "its changes staged in the main tree, "
	  "not committed" },
	{ "into", 0, "BRANCH", CLI_TEXT, "refuse unless the main tree is on "
	  "BRANCH" },
	CLI_END
};
static const struct cli_opt cli_discard_opts[] = {
	{ "yes", 0, NULL, CLI_TEXT, "do not ask (needed when not on a "
	  "terminal)" },
	{ "no-keep", 0, NULL, CLI_TEXT, "keep no copy of the branch's commits "
	  "for restore (when they cannot be kept: too big, the disk full); "
	  "restore then needs them still in the project" },
	CLI_END
};

static const struct cli_opt cli_restore_opts[] = {
	{ "to", 0, "SNAP", CLI_SNAP, "the snapshot whose files the worktree "
	  "gets (default: the last); see 'snapshots'" },
	{ "branch", 0, "NAME", CLI_TEXT, "make the branch agentmux/ID/NAME, "
	  "not the one discarded (when that name is taken)" },
	CLI_END
};

static const struct cli_opt cli_undo_opts[] = {
	{ "to", 0, "SNAP", CLI_SNAP, "the snapshot to go back to (default: "
	  "start); see 'snapshots'" },
	{ "dry-run", 0, NULL, CLI_TEXT, "print what would change, change "
	  "nothing" },
	{ "refs", 0, NULL, CLI_TEXT, "also reset the branch tips the session "
	  "moved, HEAD and the index to what they were at its start (the old "
	  "tips stay in the reflog), and delete the replace refs it made" },
	{ "force", 0, NULL, CLI_TEXT, "undo even if another session changed "
	  "the same tree while this one ran" },
	CLI_END
};
static const struct cli_arg cli_undo_args[] = {
	{ "SESSION", CLI_SESSION, 0, "a session number, or 'last'; it must "
	  "have ended" },
	CLI_ARG_PATHS("only these files or dirs"),
	CLI_ARGS_END
};

static const struct cli_opt cli_confdiff_opts[] = {
	{ "apply", 0, NULL, CLI_TEXT, "copy the changes into the host dirs "
	  "(atomically per file, modes kept; deletions too); the session must "
	  "have ended" },
	{ "discard", 0, NULL, CLI_TEXT, "drop the changes: the host dirs stay "
	  "as they are" },
	{ "force", 0, NULL, CLI_TEXT, "with --apply: where the host changed a "
	  "file in the same places since the session started (a conflict, "
	  "left pending otherwise), the session's version replaces it" },
	CLI_END
};
static const struct cli_arg cli_confdiff_args[] = {
	CLI_ARG_SESSION,
	CLI_ARG_PATHS("only changes at or under these host paths"),
	CLI_ARGS_END
};

static const struct cli_opt cli_gc_opts[] = {
	{ "older-than", 0, "DURATION", CLI_TEXT, "e.g. 30d, 12h, 2w" },
	{ "dry-run", 0, NULL, CLI_TEXT, "list what would be deleted" },
	{ "force", 0, NULL, CLI_TEXT, "remove unmerged worktrees too" },
	CLI_END
};

static const struct cli_cmd cli_cmds[] = {
	{ .name = "attach", .fn = cmd_attach, .opts = cli_attach_opts,
	  .summary = "attach this terminal to the server's dashboard",
	  .help =
	  "Draws the dashboard of the running server (see agentmux) in this\n"
	  "terminal; prefix d detaches again. Starts the server, and a session\n"
	  "in the current directory, if none runs.\n" },
	{ .name = "ls", .fn = cmd_ls, .opts = cli_ls_opts,
	  .summary = "the server's live sessions: number, agent, project, "
	  "state, age, requests, denials, prompts waiting" },
	{ .name = "new", .fn = cmd_new, .opts = cli_new_opts,
	  .args = cli_run_args, .flags = CLI_ORDERED,
	  .summary = "start a session in the server (and attach, unless -d)" },
	{ .name = "kill", .fn = cmd_kill, .opts = cli_server_opts,
	  .args = cli_live_args,
	  .summary = "close a live session (its jail is stopped)" },
	{ .name = "pause", .fn = cmd_pause, .opts = cli_server_opts,
	  .args = cli_live_args,
	  .summary = "freeze a live session's jail; its proxy holds new "
	  "requests and its prompts' countdowns stop" },
	{ .name = "resume", .fn = cmd_resume, .opts = cli_server_opts,
	  .args = cli_live_args,
	  .summary = "let a paused session go on where it stopped" },
	{ .name = "wait", .fn = cmd_wait, .opts = cli_wait_opts,
	  .args = cli_live_args,
	  .summary = "wait until a live session needs you, has a prompt, or "
	  "exits (exit 0; 1 on timeout)" },
	{ .name = "kill-server", .fn = cmd_kill_server, .opts = cli_server_opts,
	  .summary = "close every session and end the server" },
	{ .name = "reload", .fn = cmd_reload, .opts = cli_server_opts,
	  .summary = "read the config file again for the server's new "
	  "sessions (running ones keep theirs)" },
	{ .name = "send", .fn = cmd_send, .opts = cli_send_opts,
	  .args = cli_send_args, .flags = CLI_ORDERED,
	  .summary = "type into a live session (for scripts)" },
	{ .name = "port", .fn = cmd_port, .opts = cli_port_opts,
	  .args = cli_port_args,
	  .summary = "forward a host port to a port in a live session's jail "
	  "(its dev server)",
	  .help =
	  "Each jail has a network of its own, so dev servers in different\n"
	  "sessions never clash on ports, and the host cannot reach them. This\n"
	  "listens on HOST_PORT of the session's own loopback address\n"
	  "(127.77.ID.1 for session ID; 127.77+ID/256.ID%256.1 above 255) on\n"
	  "the host, in the server, and connects each connection to\n"
	  "127.0.0.1:JAIL_PORT inside the jail, from outside: nothing in the\n"
	  "jail gains a way out. The forward lasts until\n"
	  "'agentmux port -d SESSION JAIL_PORT' or the session's end;\n"
	  "'agentmux ls' lists it. An address that is not loopback, where other\n"
	  "machines could connect, is used only when named with --host.\n"
	  "A page the jail serves runs in your browser with this host's\n"
	  "network, outside the jail and its proxy: its own address keeps it\n"
	  "from the cookies of 127.0.0.1 and of other sessions. Any local user\n"
	  "can connect to a forward, as with ssh -L. A connection is closed\n"
	  "when the jail's side is not made within 10 s, or when nothing\n"
	  "moves either way for an hour.\n" },
	{ .name = "run", .fn = cmd_run, .opts = cli_run_opts,
	  .args = cli_run_args, .flags = CLI_ORDERED,
	  .summary = "run a command (default: the agent's) in a jail, in this "
	  "terminal",
	  .help =
	  "The command gets its own pty when this is a terminal, else pipes. The\n"
	  "jail sees the project read-write, a private HOME and /tmp, the system\n"
	  "read-only, and no network but agentmux's proxy. agentmux exits with\n"
	  "the command's status (128+N if signal N ended it); 2 for usage errors,\n"
	  "1 if the jail could not start.\n" },
	{ .name = "proxy", .fn = cmd_proxy, .opts = cli_proxy_opts,
	  .flags = CLI_ORDERED,
	  .summary = "run the jail's proxy without a jail, in the foreground",
	  .help =
	  "The same proxy a jail gets: HTTP and CONNECT, TLS interception with\n"
	  "agentmux's CA (its path is printed: clients must trust it), the\n"
	  "policy from [policy], the profile and the command line; destinations\n"
	  "no rule covers are denied. Requests are recorded as a session of\n"
	  "kind proxy. SIGINT or SIGTERM end it.\n" },
	{ .name = "sessions", .fn = cmd_sessions, .opts = cli_sessions_opts,
	  .summary = "list recorded sessions, newest first" },
	{ .name = "show", .fn = cmd_show, .opts = cli_json_opts,
	  .args = cli_session_args,
	  .summary = "show one session: settings, counts, snapshots, "
	  "decisions, events" },
	{ .name = "requests", .fn = cmd_requests, .opts = cli_requests_opts,
	  .args = cli_requests_args,
	  .summary = "list recorded requests (of one session, or all)" },
	{ .name = "doctor", .fn = cmd_doctor, .opts = cli_doctor_opts,
	  .summary = "check this machine, then prove the jail's boundary with "
	  "real jails",
	  .help =
	  "Checks user namespaces, seccomp, Landlock, overlayfs, how limits are\n"
	  "enforced, git, the CA, the config and the data and runtime dirs; then\n"
	  "starts real jails and a local HTTPS server to show that a direct\n"
	  "connection, DNS and a write outside the project fail, that the proxy\n"
	  "allows a request by rule and refuses it without one, and that a\n"
	  "secret is swapped in on the way out. Exits 0 only if everything holds.\n" },
	{ .name = "export", .fn = cmd_export, .opts = cli_export_opts,
	  .args = cli_session_args,
	  .summary = "export a session as HAR 1.2, or as agentmux's own "
	  "complete JSON record",
	  .help = "Give one of --har and --json. Headers are exported as "
	  "stored: secrets redacted.\n" },
	{ .name = "policy", .subs = cli_policy_subs,
	  .summary = "suggest the smallest rule set that allows what sessions "
	  "did" },
	{ .name = "agents", .fn = cmd_agents, .opts = cli_agents_opts,
	  .summary = "list agent profiles: command, where it is installed, "
	  "hosts, secrets, config dirs",
	  .help = "Built-in profiles ship in the agents directory that "
	  "'agentmux --version' names;\n[agent NAME] in the config adds or "
	  "extends them.\n" },
	{ .name = "probe", .subs = cli_probe_subs,
	  .summary = "check from inside a jail what it lets through (doctor "
	  "uses it)",
	  .help = "Each exits 0 when the action succeeded and 1 with 'blocked: "
	  "why' when not.\nRun it jailed: agentmux run -- agentmux probe "
	  "connect 127.0.0.1 22\n" },
	{ .name = "config", .subs = cli_config_subs,
	  .summary = "check the config file, print where it is, or list the "
	  "keys it takes" },
	{ .name = "completion", .subs = cli_completion_subs,
	  .summary = "print a shell completion script (bash, zsh, fish)",
	  .help = "Installed ones are loaded by the shells already; to try "
	  "one: source <(agentmux completion bash)\n" },
	{ .name = "snapshot", .fn = cmd_snapshot, .opts = cli_snapshot_opts,
	  .args = cli_snapshot_args,
	  .summary = "snapshot a project now (git commit of the whole tree, "
	  "kept under refs/agentmux/)" },
	{ .name = "snapshots", .fn = cmd_snapshots, .opts = cli_snapshots_opts,
	  .args = cli_session_args,
	  .summary = "list a session's snapshots",
	  .help =
	  "The SNAP column is what --from, --to and undo --to take; they also take\n"
	  "start, end, latest, NAME~N (N before NAME) and commit id prefixes.\n" },
	{ .name = "diff", .fn = cmd_diff, .opts = cli_diff_opts,
	  .args = cli_diff_args,
	  .summary = "show what changed in a session's project (default: from "
	  "its start to now)",
	  .help =
	  "SNAP: a number from 'agentmux snapshots SESSION', start, end, latest,\n"
	  "NAME~N (N before NAME) or a commit id prefix. Coloured on a terminal\n"
	  "unless NO_COLOR is set.\n" },
	{ .name = "merge", .fn = cmd_merge, .opts = cli_merge_opts,
	  .args = cli_session_args,
	  .summary = "bring a worktree session's branch into the main tree's "
	  "branch",
	  .help =
	  "Runs in the project's main working tree, with your git identity\n"
	  "and settings but no hooks. Refuses when that tree has uncommitted\n"
	  "changes; a conflict is left to you as git leaves it, with the files\n"
	  "named and how to go back.\n" },
	{ .name = "discard", .fn = cmd_discard, .opts = cli_discard_opts,
	  .args = cli_session_args,
	  .summary = "remove a worktree session's worktree and branch (its "
	  "snapshots stay)" },
	{ .name = "restore", .fn = cmd_restore, .opts = cli_restore_opts,
	  .args = cli_session_args,
	  .summary = "bring back a discarded worktree session's worktree and "
	  "branch",
	  .help =
	  "Remakes the worktree where it was, on its branch (at the commit the\n"
	  "branch was at when discarded, else at the session's base), the same\n"
	  "way a session's start makes one (no hooks, no filter drivers), then\n"
	  "puts back the files of its last snapshot (or --to SNAP), uncommitted\n"
	  "changes included, as 'undo' does: links stay links, never followed.\n"
	  "merge, discard, diff and undo then work on it as before.\n" },
	{ .name = "undo", .fn = cmd_undo, .opts = cli_undo_opts,
	  .args = cli_undo_args,
	  .summary = "put a session's project back as it was at a snapshot "
	  "(default: its start)",
	  .help =
	  "The present state is snapshotted first, so every undo can be undone:\n"
	  "the last line says how. Files created since are removed, deleted ones\n"
	  "come back, modified ones, modes and symlinks are restored; ignored\n"
	  "files are left alone.\n" },
	{ .name = "confdiff", .fn = cmd_confdiff, .opts = cli_confdiff_opts,
	  .args = cli_confdiff_args,
	  .summary = "show, keep or drop what a session changed in the agent's "
	  "config dirs",
	  .help =
	  "Without --apply or --discard, shows the pending changes as unified diffs\n"
	  "against the host files, with values that look like secrets redacted and\n"
	  "binary files summarised. Nothing is applied unless asked (or the agent\n"
	  "profile says config_persist = always).\n" },
	{ .name = "gc", .fn = cmd_gc, .opts = cli_gc_opts,
	  .summary = "delete sessions (and their records and snapshots) older "
	  "than DURATION" },
};

const struct cli_cmd *
cli_top(void)
{
	return &cli_top_cmd;
}

const struct cli_cmd *
cli_commands(size_t *n)
{
	*n = nitems(cli_cmds);
	return cli_cmds;
}

const struct cli_cmd *
cli_find(const struct cli_cmd *cmd, const char *name)
{
	const struct cli_cmd *v = cmd != NULL ? cmd->subs : cli_cmds;
	size_t i, n = cmd != NULL ? SIZE_MAX : nitems(cli_cmds);

	for (i = 0; i < n && v != NULL && v[i].name != NULL; i++) {
		if (strcmp(v[i].name, name) == 0)
			return &v[i];
	}
	return NULL;
}

static void
cli_usage_opt(struct buf *b, const struct cli_opt *o)
{
	if (o->short_name != 0)
		buf_printf(b, "[-%c%s%s]", o->short_name, o->value != NULL ?
		    " " : "", o->value != NULL ? o->value : "");
	else
		buf_printf(b, "[--%s%s%s]", o->name, o->value != NULL ? " " : "",
		    o->value != NULL ? o->value : "");
	if (o->value != NULL && strstr(o->help, "(repeat)") != NULL)
		buf_adds(b, "...");
}

static void
cli_usage_arg(struct buf *b, const struct cli_arg *a)
{
	if (a->kind == CLI_COMMAND)
		buf_adds(b, "[-- COMMAND [ARG...]]");
	else if (a->flags & CLI_OPTIONAL)
		buf_printf(b, "[%s%s]", a->name, a->flags & CLI_REPEAT ? "..." :
		    "");
	else
		buf_printf(b, "%s%s", a->name, a->flags & CLI_REPEAT ? "..." :
		    "");
}

void
cli_usage_line(struct buf *b, const struct cli_cmd *cmd)
{
	size_t i;
	bool sp = false;

	if (cmd->subs != NULL) {
		for (i = 0; cmd->subs[i].name != NULL; i++)
			buf_printf(b, "%s%s", i == 0 ? "" : " | ",
			    cmd->subs[i].name);
		buf_adds(b, " ...");
		return;
	}
	for (i = 0; cmd->args != NULL && cmd->args[i].name != NULL; i++) {
		if (cmd->args[i].kind == CLI_COMMAND)
			break;
		buf_adds(b, sp ? " " : "");
		cli_usage_arg(b, &cmd->args[i]);
		sp = true;
	}
	for (i = 0; cmd->opts != NULL && cmd->opts[i].name != NULL; i++) {
		buf_adds(b, sp ? " " : "");
		cli_usage_opt(b, &cmd->opts[i]);
		sp = true;
	}
	for (i = 0; cmd->args != NULL && cmd->args[i].name != NULL; i++) {
		if (cmd->args[i].kind != CLI_COMMAND)
			continue;
		buf_adds(b, sp ? " " : "");
		cli_usage_arg(b, &cmd->args[i]);
	}
}

/* "  -a, --agent AGENT    help", the help folded at 78 columns. */
static void
cli_help_row(FILE *fp, const char *left, const char *help)
{
	const char *p = help, *end;
	int col = 24, width = 78 - col;
	size_t len;

	if (strlen(left) + 2 >= (size_t)col)
		out_printf(fp, "  %s\n%*s", left, col, "");
	else
		out_printf(fp, "  %-*s", col - 2, left);
	while (*p != '\0') {
		len = strlen(p);
		if (len > (size_t)width) {
			end = p + width;
			while (end > p && *end != ' ')
				end--;
			len = end > p ? (size_t)(end - p) : (size_t)width;
		}
		out_printf(fp, "%.*s\n", (int)len, p);
		p += len;
		while (*p == ' ')
			p++;
		if (*p != '\0')
			out_printf(fp, "%*s", col, "");
	}
}

static void
cli_help_opts(FILE *fp, const struct cli_cmd *cmd)
{
	const struct cli_opt *o;
	char *left;
	size_t i;

	for (i = 0; cmd->args != NULL && cmd->args[i].name != NULL; i++) {
		if (cmd->args[i].help != NULL)
			cli_help_row(fp, cmd->args[i].name, cmd->args[i].help);
	}
	for (i = 0; cmd->opts != NULL && cmd->opts[i].name != NULL; i++) {
		o = &cmd->opts[i];
		if (o->short_name != 0)
			left = xprintf("-%c, --%s%s%s", o->short_name, o->name,
			    o->value != NULL ? " " : "", o->value != NULL ?
			    o->value : "");
		else
			left = xprintf("--%s%s%s", o->name, o->value != NULL ?
			    " " : "", o->value != NULL ? o->value : "");
		cli_help_row(fp, left, o->help);
		free(left);
	}
}

void
cli_print_help(FILE *fp, const struct cli_cmd *cmd, const char *name)
{
	struct buf b;
	size_t i;

	if (cmd == &cli_top_cmd) {
		cli_print_usage(fp);
		out_printf(fp, "\nThe dashboard's options:\n");
		cli_help_opts(fp, cmd);
		out_printf(fp, "\n%s", cmd->help);
		return;
	}
	buf_init(&b);
	buf_adds(&b, "");
	cli_usage_line(&b, cmd);
	out_printf(fp, "usage: agentmux %s %s\n\n%s.\n\n", name, b.data,
	    cmd->summary);
	buf_free(&b);
	for (i = 0; cmd->subs != NULL && cmd->subs[i].name != NULL; i++)
		cli_help_row(fp, cmd->subs[i].name, cmd->subs[i].summary);
	cli_help_opts(fp, cmd);
	if (cmd->help != NULL)
		out_printf(fp, "\n%s", cmd->help);
	if (cmd->subs != NULL)
		out_printf(fp, "\nRun 'agentmux %s SUBCOMMAND --help' for its "
		    "options.\n", name);
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
		out_printf(fp, "  %-11s %s\n", cli_cmds[i].name,
		    cli_cmds[i].summary);
	out_printf(fp, "\nRun 'agentmux COMMAND --help' for a command's options, "
	    "'man agentmux' for all.\n");
}
