/* The command prompt (prefix :): one line in a client's status bar that runs a dashboard command by name, with its arguments, as the CLI's commands take them. */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "tui-int.h"

static int tui_cmdline_new(struct tui *, char **, char **);
static int tui_cmdline_kill(struct tui *, char **, char **);
static int tui_cmdline_send(struct tui *, char **, char **);
static int tui_cmdline_pause(struct tui *, char **, char **);
static int tui_cmdline_port(struct tui *, char **, char **);
static int tui_cmdline_attach(struct tui *, char **, char **);

/*
 * What the prompt takes: the server's commands that make sense from a
 * dashboard, named and used as `agentmux NAME` is (a SESSION left out is
 * the focused one), and two that do what a prefix key does.
 */
static const struct tui_cmdline_cmd tui_cmdline_table[] = {
	{ .name = "new", .args = "[-d] [-a AGENT] [-C DIR] [--worktree] "
	  "[--shared] [-- COMMAND...]",
	  .help = "start a session (-d: not shown here; DIR: the focused "
	  "one's project)",
	  .run = tui_cmdline_new },
	{ .name = "attach", .args = "-t SESSION",
	  .help = "show a session in the focused place",
	  .run = tui_cmdline_attach },
	{ .name = "kill", .args = "[SESSION]",
	  .help = "close a session (its jail is stopped)",
	  .run = tui_cmdline_kill },
	{ .name = "send", .args = "[-l] SESSION KEYS...",
	  .help = "type into a session (tmux key names: Enter, C-c)",
	  .run = tui_cmdline_send },
	{ .name = "pause", .args = "[SESSION]",
	  .help = "freeze a session (as prefix P)", .run = tui_cmdline_pause },
	{ .name = "resume", .args = "[SESSION]",
	  .help = "let a paused session go on", .run = tui_cmdline_pause },
	{ .name = "port", .args = "[-d] [-t SESSION] JAIL_PORT [HOST_PORT]",
	  .help = "forward a port of a session (as prefix f)",
	  .run = tui_cmdline_port },
	{ .name = "ls", .args = "",
	  .help = "the sessions view (as prefix s)",
	  .bind = { .action = TUI_ACT_SESSIONS } },
	{ .name = "reload", .args = "",
	  .help = "re-read the config file for new sessions (as prefix R)",
	  .bind = { .action = TUI_ACT_RELOAD } },
	{ .name = "detach", .args = "",
	  .help = "detach this terminal (as prefix d)",
	  .bind = { .action = TUI_ACT_DETACH } },
	{ .name = "kill-server", .args = "",
	  .help = "close every session and end the server (asks, as prefix q)",
	  .bind = { .action = TUI_ACT_QUIT } },
};

const struct tui_cmdline_cmd *
tui_cmdline_commands(size_t *n)
{
	*n = nitems(tui_cmdline_table);
	return tui_cmdline_table;
}

/* The prompt's hint after the text (TEXT owned from now on; NULL clears it). */
static void
tui_cmdline_hint(struct tui *t, char *text)
{
	free(t->c->cmdline_hint);
	t->c->cmdline_hint = text;
}

void
tui_cmdline_open(struct tui *t)
{
	tui_cmdline_hint(t, NULL);
	buf_reset(&t->c->cmdline.text);
	t->c->cmdline.active = true;
	tui_redraw(t);
}

/* ---- arguments ---- */

/* "last": the live session started most recently (the highest number); -1 with *CAUSE. */
static int64_t
tui_cmdline_last(struct tui *t, char **cause)
{
	int64_t id = 0;
	size_t i;

	for (i = 0; i < t->npanes; i++) {
		if (!t->panes[i]->closing && t->panes[i]->id > id)
			id = t->panes[i]->id;
	}
	if (id == 0) {
		*cause = xstrdup("last: no session is running");
		return -1;
	}
	return id;
}

/* Session ARG as a number or "last", or the focused one for NULL; -1 with *CAUSE. */
static int64_t
tui_cmdline_session(struct tui *t, const char *arg, char **cause)
{
	struct tui_pane *wp;
	char *end, *q;
	long long id;

	if (arg == NULL) {
		if ((wp = tui_focus_pane(t)) != NULL && wp->id > 0)
			return wp->id;
		*cause = xstrdup("no session is focused: name one");
		return -1;
	}
	if (strcmp(arg, "last") == 0)
		return tui_cmdline_last(t, cause);
	id = strtoll(arg, &end, 10);
	if (*arg < '0' || *arg > '9' || *end != '\0' || id <= 0) {
		q = quote_name(arg);
		*cause = xprintf("%s is not a session number (the number on "
		    "its tab) or 'last'", q);
		free(q);
		return -1;
	}
	return id;
}

/* The usage of command NAME, as an error. */
static int
tui_cmdline_usage(const char *name, char **cause)
{
	size_t i;

	for (i = 0; i < nitems(tui_cmdline_table); i++) {
		if (strcmp(tui_cmdline_table[i].name, name) == 0)
			break;
	}
	*cause = xprintf("usage: %s %s", name, i < nitems(tui_cmdline_table) ?
	    tui_cmdline_table[i].args : "");
	return -1;
}

/* The one optional SESSION after NAME (ARGV[0]): -1 with *CAUSE. */
static int64_t
tui_cmdline_one_session(struct tui *t, char **argv, char **cause)
{
	if (argv[1] != NULL && argv[2] != NULL)
		return tui_cmdline_usage(argv[0], cause);
	return tui_cmdline_session(t, argv[1], cause);
}

/* ---- the commands ---- */

/* Takes the value of option ARGV[*I] into *VAL; false if it has none. */
static bool
tui_cmdline_value(char **argv, size_t *i, const char **val)
{
	if (argv[*i + 1] == NULL)
		return false;
	*val = argv[++*i];
	return true;
}

/*
 * The project of a new session: -C DIR (absolute, or from ~: the server
 * has no current directory of the client's), else the focused
 * session's, as the new-session dialog offers; caller frees.
 */
static char *
tui_cmdline_dir(struct tui *t, const char *dir, char **cause)
{
	struct tui_pane *wp = tui_focus_pane(t);
	char *q;

	if (dir != NULL && (dir[0] == '/' || dir[0] == '~'))
		return tui_new_expand(dir);
	if (dir != NULL) {
		q = quote_name(dir);
		*cause = xprintf("-C %s: say the directory from / or ~ here",
		    q);
		free(q);
		return NULL;
	}
	if (wp != NULL && wp->project != NULL)
		return xstrdup(wp->project);
	*cause = xstrdup("no session is focused: say where with -C DIR");
	return NULL;
}

static int
tui_cmdline_new(struct tui *t, char **argv, char **cause)
{
	struct tui_client *c = t->c;
	struct tui_opts o = { .refuse_shared = true,
	    .env = c->has_env ? c->env.v : NULL };
	const char *dir = NULL;
	char *project;
	bool focus = true;
	size_t i;
	int rc;

	for (i = 1; argv[i] != NULL; i++) {
		if (strcmp(argv[i], "-d") == 0)
			focus = false;
		else if (strcmp(argv[i], "--worktree") == 0)
			o.worktree = true;
		else if (strcmp(argv[i], "--shared") == 0)
			o.refuse_shared = false;
		else if (strcmp(argv[i], "-a") == 0 &&
		    tui_cmdline_value(argv, &i, &o.agent))
			continue;
		else if (strcmp(argv[i], "-C") == 0 &&
		    tui_cmdline_value(argv, &i, &dir))
			continue;
		else if (strcmp(argv[i], "--") == 0 && argv[i + 1] != NULL) {
			o.command = argv + i + 1;
			break;
		} else
			return tui_cmdline_usage(argv[0], cause);
	}
	if ((project = tui_cmdline_dir(t, dir, cause)) == NULL)
		return -1;
	o.dir = project;
	rc = tui_start(t, &o, focus, cause) == -1 ? -1 : 0;
	free(project);
	return rc;
}

static int
tui_cmdline_attach(struct tui *t, char **argv, char **cause)
{
	int64_t id;

	if (argv[1] == NULL || strcmp(argv[1], "-t") != 0 ||
	    argv[2] == NULL || argv[3] != NULL)
		return tui_cmdline_usage(argv[0], cause);
	if ((id = tui_cmdline_session(t, argv[2], cause)) == -1)
		return -1;
	return tui_focus(t, id, cause);
}

static int
tui_cmdline_kill(struct tui *t, char **argv, char **cause)
{
	int64_t id = tui_cmdline_one_session(t, argv, cause);

	return id == -1 ? -1 : tui_kill(t, id, cause);
}

static int
tui_cmdline_pause(struct tui *t, char **argv, char **cause)
{
	int64_t id = tui_cmdline_one_session(t, argv, cause);

	if (id == -1)
		return -1;
	return tui_set_paused(t, id, strcmp(argv[0], "pause") == 0, cause);
}

static int
tui_cmdline_send(struct tui *t, char **argv, char **cause)
{
	bool literal = argv[1] != NULL && strcmp(argv[1], "-l") == 0;
	char **rest = argv + (literal ? 2 : 1);
	int64_t id;

	if (rest[0] == NULL || rest[1] == NULL)
		return tui_cmdline_usage(argv[0], cause);
	if ((id = tui_cmdline_session(t, rest[0], cause)) == -1)
		return -1;
	return tui_send(t, id, rest + 1, literal, cause);
}

/*
 * port's words but -t SESSION into REST, that session's number into *ID
 * (the focused one's without -t); -1 with *CAUSE.
 */
static int
tui_cmdline_port_args(struct tui *t, char **argv, struct strv *rest,
    int64_t *id, char **cause)
{
	const char *target = NULL;
	size_t i;

	for (i = 1; argv[i] != NULL; i++) {
		if (strcmp(argv[i], "-t") != 0)
			strv_add(rest, argv[i]);
		else if (target != NULL || !tui_cmdline_value(argv, &i, &target))
			return tui_cmdline_usage(argv[0], cause);
	}
	if (rest->n == 0)
		return tui_cmdline_usage(argv[0], cause);
	return (*id = tui_cmdline_session(t, target, cause)) == -1 ? -1 : 0;
}

static int
tui_cmdline_port(struct tui *t, char **argv, char **cause)
{
	struct tui_port_opts o;
	struct strv rest;
	char *line, *text = NULL;
	int64_t id = 0;
	int rc;

	strv_init(&rest);
	if (tui_cmdline_port_args(t, argv, &rest, &id, cause) == -1) {
		strv_free(&rest);
		return -1;
	}
	/* The port dialog's own line: "JAIL_PORT [HOST_PORT]" or "-d JAIL_PORT". */
	line = strv_join_shell(rest.v);
	strv_free(&rest);
	rc = tui_port_parse(line, &o, cause);
	if (rc == 0)
		rc = tui_port(t, id, &o, &text, cause);
	free(line);
	if (rc == 0 && o.remove)
		tui_reply(t, false, "session %lld: its port %d is no longer "
		    "forwarded", (long long)id, o.jail_port);
	else if (rc == 0)
		tui_reply(t, false, "session %lld: %s", (long long)id,
		    text != NULL ? text : "forwarded");
	free(text);
	return rc;
}

/* ---- the line ---- */

/* The command named NAME, or NULL. */
static const struct tui_cmdline_cmd *
tui_cmdline_find(const char *name)
{
	size_t i;

	for (i = 0; i < nitems(tui_cmdline_table); i++) {
		if (strcmp(tui_cmdline_table[i].name, name) == 0)
			return &tui_cmdline_table[i];
	}
	return NULL;
}

/* An unknown name: refused, and where the list is (the user's typing, quoted). */
static void
tui_cmdline_unknown(struct tui *t, const char *name)
{
	char *q = quote_name(name);

	tui_reply(t, true, "%s: no such command; Tab at the prompt lists "
	    "them, prefix ? says what each does", q);
	free(q);
}

/* Runs the words typed (ARGV, at least one), or sets *RUN to the binding of a prefix key's command. */
static void
tui_cmdline_run(struct tui *t, char **argv, const struct tui_binding **run)
{
	const struct tui_cmdline_cmd *cmd = tui_cmdline_find(argv[0]);
	char *cause = NULL;

	if (cmd == NULL)
		tui_cmdline_unknown(t, argv[0]);
	else if (cmd->run == NULL && argv[1] != NULL)
		tui_reply(t, true, "%s takes no arguments", cmd->name);
	else if (cmd->run == NULL)
		*run = &cmd->bind;
	else if (cmd->run(t, argv, &cause) == -1) {
		tui_reply(t, true, "%s: %s", cmd->name, cause);
		free(cause);
	}
}

/* Runs the line typed; an error goes to the client's bar. */
static void
tui_cmdline_exec(struct tui *t, const struct tui_binding **run)
{
	const char *text = t->c->cmdline.text.len > 0 ?
	    t->c->cmdline.text.data : "";
	struct strv argv;
	char *cause = NULL;

	strv_init(&argv);
	if (strv_split_words(&argv, text, &cause) == -1) {
		tui_reply(t, true, "%s", cause);
		free(cause);
	} else if (argv.n > 0)
		tui_cmdline_run(t, argv.v, run);
	strv_free(&argv);
}

/* ---- completion ---- */

/* What Tab may put for the word being typed: the candidates it starts. */
struct tui_cmdline_comp {
	const char *word;
	size_t len;
	struct strv cands;
};

static void
tui_cmdline_offer(struct tui_cmdline_comp *cc, const char *cand)
{
	if (strncmp(cand, cc->word, cc->len) == 0)
		strv_add(&cc->cands, cand);
}

/* Every command's name. */
static void
tui_cmdline_offer_names(struct tui_cmdline_comp *cc)
{
	size_t i;

	for (i = 0; i < nitems(tui_cmdline_table); i++)
		tui_cmdline_offer(cc, tui_cmdline_table[i].name);
}

/* The flags of CMD, as its usage in the table names them ("[-a AGENT]": -a). */
static void
tui_cmdline_offer_flags(struct tui_cmdline_comp *cc,
    const struct tui_cmdline_cmd *cmd)
{
	const char *p = cmd->args;
	char flag[32];
	size_t n;

	while (*p != '\0') {
		p += strspn(p, " [");
		n = strcspn(p, " ]");
		if (*p == '-' && n < sizeof flag) {
			memcpy(flag, p, n);
			flag[n] = '\0';
			tui_cmdline_offer(cc, flag);
		}
		p += n;
		p += strspn(p, "]");
	}
}

/* The live sessions' numbers, and "last" (the most recently started). */
static void
tui_cmdline_offer_sessions(struct tui *t, struct tui_cmdline_comp *cc)
{
	char id[24];
	size_t i;

	for (i = 0; i < t->npanes; i++) {
		if (t->panes[i]->id <= 0 || t->panes[i]->closing)
			continue;
		snprintf(id, sizeof id, "%lld", (long long)t->panes[i]->id);
		tui_cmdline_offer(cc, id);
	}
	tui_cmdline_offer(cc, "last");
}

/* The agents the config knows, for new -a. */
static void
tui_cmdline_offer_agents(struct tui *t, struct tui_cmdline_comp *cc)
{
	size_t i;

	for (i = 0; i < t->cf->nagents; i++)
		tui_cmdline_offer(cc, t->cf->agents[i].name);
}

/* Whether the word after ARGV (N words: the command and its arguments so far) is a session. */
static bool
tui_cmdline_wants_session(char **argv, size_t n)
{
	const char *cmd = argv[0], *prev = argv[n - 1];
	size_t i, first = 1;

	if (strcmp(cmd, "attach") == 0 || strcmp(cmd, "port") == 0)
		return strcmp(prev, "-t") == 0;
	if (strcmp(cmd, "send") == 0) {
		if (n > 1 && strcmp(argv[1], "-l") == 0)
			first = 2;
		return n == first;
	}
	for (i = 0; i < nitems(tui_cmdline_table); i++) {
		if (strcmp(tui_cmdline_table[i].args, "[SESSION]") == 0 &&
		    strcmp(tui_cmdline_table[i].name, cmd) == 0)
			return n == 1;
	}
	return false;
}

/* What may come as the word after ARGV (N words, N > 0) in the line. */
static void
tui_cmdline_offer_args(struct tui *t, struct tui_cmdline_comp *cc,
    char **argv, size_t n)
{
	const struct tui_cmdline_cmd *cmd = tui_cmdline_find(argv[0]);
	size_t i;

	if (cmd == NULL || cmd->run == NULL)
		return;
	for (i = 1; i < n; i++) {
		if (strcmp(argv[i], "--") == 0)
			return;   /* a command to run: its words are its own */
	}
	if (strcmp(cmd->name, "new") == 0 && strcmp(argv[n - 1], "-a") == 0) {
		tui_cmdline_offer_agents(t, cc);
		return;
	}
	if (strcmp(argv[n - 1], "-C") == 0)
		return;           /* a directory: the server's, not completed */
	if (tui_cmdline_wants_session(argv, n)) {
		tui_cmdline_offer_sessions(t, cc);
		if (argv[n - 1][0] == '-')
			return;   /* the value of -t */
	}
	if (cc->len == 0 || cc->word[0] == '-')
		tui_cmdline_offer_flags(cc, cmd);
}

/* The candidates shared start's length; the choices, two spaces apart, into NAMES. */
static size_t
tui_cmdline_common(const struct strv *cands, struct buf *names)
{
	size_t i, k, common = strlen(cands->v[0]);

	for (i = 0; i < cands->n; i++) {
		for (k = 0; k < common && cands->v[i][k] == cands->v[0][k]; k++)
			;
		common = k;
		buf_printf(names, "%s%s", i > 0 ? "  " : "", cands->v[i]);
	}
	return common;
}

/* Puts the first COMMON bytes of CAND in place of the line's last word (from AT); a space after a whole one. */
static void
tui_cmdline_put(struct buf *b, size_t at, const char *cand, size_t common,
    bool whole)
{
	b->len = at;
	buf_add(b, cand, common);
	if (whole)
		buf_addc(b, ' ');
	buf_addc(b, '\0');
	b->len--;
}

/*
 * Tab: completes the word before the cursor (the line's last) as far as
 * what it may be shares (a command's name, a flag of its command's, a
 * live session or "last", an agent after new -a), and shows the choices
 * after the line when there are several (all of a command's names for a
 * word none starts).
 */
static void
tui_cmdline_complete(struct tui *t)
{
	struct buf *b = &t->c->cmdline.text, names;
	const char *text = b->len > 0 ? b->data : "", *sp;
	struct tui_cmdline_comp cc;
	struct strv argv;
	char *before, *cause = NULL;
	size_t at, common;

	sp = strrchr(text, ' ');
	at = sp != NULL ? (size_t)(sp - text) + 1 : 0;
	cc.word = text + at;
	cc.len = strlen(cc.word);
	strv_init(&cc.cands);
	strv_init(&argv);
	before = xstrndup(text, at);
	if (at == 0)
		tui_cmdline_offer_names(&cc);
	else if (strv_split_words(&argv, before, &cause) == 0 && argv.n > 0)
		tui_cmdline_offer_args(t, &cc, argv.v, argv.n);
	free(cause);
	free(before);
	buf_init(&names);
	buf_adds(&names, "");
	if (cc.cands.n == 0 && at == 0) {
		buf_adds(&names, "no such command; it takes: ");
		cc.len = 0;
		tui_cmdline_offer_names(&cc);
		(void)tui_cmdline_common(&cc.cands, &names);
	} else if (cc.cands.n > 0) {
		common = tui_cmdline_common(&cc.cands, &names);
		tui_cmdline_put(b, at, cc.cands.v[0], common, cc.cands.n == 1);
	}
	tui_cmdline_hint(t, cc.cands.n > 1 ? xstrdup(names.data) : NULL);
	buf_free(&names);
	strv_free(&argv);
	strv_free(&cc.cands);
}

bool
tui_cmdline_key(struct tui *t, const struct tui_key *k,
    const struct tui_binding **run)
{
	struct tui_line *line = &t->c->cmdline;

	*run = NULL;
	if (!line->active)
		return false;
	tui_cmdline_hint(t, NULL);
	if (k->code == '\r' || k->code == '\n') {
		line->active = false;
		tui_cmdline_exec(t, run);
	} else if (k->code == '\t')
		tui_cmdline_complete(t);
	else if (k->code == 0x1b || k->code == 0x03 || k->code == 0x07 ||
	    ((k->code == 0x7f || k->code == 0x08) && line->text.len == 0))
		line->active = false;
	else
		tui_line_key(line, k);
	tui_redraw(t);
	return true;
}

void
tui_cmdline_draw(struct tui *t, unsigned y)
{
	struct tui_rect r = { 0, y, t->c->sx, 1 };
	const char *text = t->c->cmdline.text.len > 0 ?
	    t->c->cmdline.text.data : "";

	tui_screen_fill(t->c->scr, &r, TUI_STYLE_NORMAL);
	/* The user's own keys; drawn as every typed line is, controls shown safe. */
	t->c->cmdline_cx = tui_screen_printf(t->c->scr, 0, y, t->c->sx,
	    TUI_STYLE_NORMAL, ":%s", text);
	if (t->c->cmdline_hint != NULL && t->c->cmdline_cx + 3 < t->c->sx)
		tui_screen_printf(t->c->scr, t->c->cmdline_cx + 2, y,
		    t->c->sx - t->c->cmdline_cx - 2, TUI_STYLE_DIM, "%s",
		    t->c->cmdline_hint);
}
