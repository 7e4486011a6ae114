/* Scrollable text views: a request's details, the output of diff/undo/confdiff run as a child, the help. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "tui-int.h"

extern char **environ;

/*
 * A command whose output a text view shows. The view may be left before
 * the command ends: the job then outlives it (TX NULL), its output is
 * dropped, and it frees itself when the command exits. (An undo left
 * half done because the user looked away would be worse than one that
 * finishes unseen.)
 */
struct tui_text_job {
	struct tui *t;
	struct tui_text *tx;
	struct proc *proc;
};

void
tui_text_free(struct tui_text *tx)
{
	if (tx == NULL)
		return;
	if (tx->job != NULL)
		tx->job->tx = NULL;
	free(tx->title);
	strv_free(&tx->lines);
	buf_free(&tx->partial);
	free(tx);
}

static struct tui_text *
tui_text_new(struct tui *t, const char *title, bool diff)
{
	struct tui_text *tx = xcalloc(1, sizeof *tx);

	tx->title = xstrdup(title);
	strv_init(&tx->lines);
	buf_init(&tx->partial);
	tx->diff = diff;
	tui_text_free(t->c->text);
	t->c->text = tx;
	return tx;
}

/* Adds DATA to the text, line by line; a line without its newline waits. */
static void
tui_text_add(struct tui_text *tx, const char *data, size_t len)
{
	const char *nl;

	while (len > 0) {
		if ((nl = memchr(data, '\n', len)) == NULL) {
			buf_add(&tx->partial, data, len);
			return;
		}
		buf_add(&tx->partial, data, (size_t)(nl - data));
		strv_add(&tx->lines, tx->partial.data != NULL ?
		    tx->partial.data : "");
		buf_reset(&tx->partial);
		len -= (size_t)(nl + 1 - data);
		data = nl + 1;
	}
}

void
tui_text_show(struct tui *t, const char *title, const char *body, bool diff)
{
	struct tui_text *tx = tui_text_new(t, title, diff);

	tui_text_add(tx, body, strlen(body));
	if (tx->partial.len > 0)
		tui_text_add(tx, "\n", 1);
	tui_view_push(t, TUI_VIEW_TEXT);
	tui_redraw(t);
}

/* Output as the command writes it (stdout and stderr, in order). */
static void
tui_text_chunk(void *arg, const char *data, size_t len)
{
	struct tui_text_job *job = arg;

	if (job->tx == NULL)
		return;
	tui_text_add(job->tx, data, len);
	tui_redraw(job->t);
}

static void
tui_text_done(struct proc *p, void *arg)
{
	struct tui_text_job *job = arg;
	struct tui_text *tx = job->tx;
	struct tui *t = job->t;
	int status = proc_status(p);

	proc_free(p);
	free(job);
	if (tx == NULL)
		return;
	tx->job = NULL;
	if (tx->partial.len > 0)
		tui_text_add(tx, "\n", 1);
	if (status != 0)
		strv_addf(&tx->lines, "[exited with status %d]", status);
	tui_redraw(t);
}

/* Runs "agentmux ARGV..." (this very binary) with its output shown in TX. */
/* The environment whose [secret] values a command about session ARG sees. */
static char *const *
tui_text_secret_env(struct tui *t, const char *arg)
{
	char *end;
	long long id;
	size_t i;

	id = arg != NULL ? strtoll(arg, &end, 10) : 0;
	for (i = 0; id > 0 && *end == '\0' && i < t->npanes; i++) {
		if (t->panes[i]->id == id && t->panes[i]->has_env)
			return t->panes[i]->env.v;
	}
	return t->c != NULL && t->c->has_env ? t->c->env.v : NULL;
}

/*
 * A command's environment: this process's, which holds no client's
 * secrets, and the [secret] variables of the session it is about (else
 * of the client that asks), so that confdiff redacts that session's own
 * values and no other client's.
 */
static void
tui_text_env(struct tui *t, char *const *argv, struct strv *env)
{
	char *const *from = tui_text_secret_env(t, argv[0] != NULL ?
	    argv[1] : NULL), *const *e;
	const char *name;
	size_t i, n;

	for (e = environ; *e != NULL; e++)
		strv_add(env, *e);
	for (i = 0; from != NULL && i < t->cf->nsecrets; i++) {
		if ((name = t->cf->secrets[i].from_env) == NULL)
			continue;
		n = strlen(name);
		for (e = from; *e != NULL; e++) {
			if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
				strv_setenv(env, name, *e + n + 1);
		}
	}
}

/* The environment a command had may hold a session's secrets: wiped. */
static void
tui_text_env_free(struct strv *env)
{
	size_t i;

	for (i = 0; i < env->n; i++)
		explicit_bzero(env->v[i], strlen(env->v[i]));
	strv_free(env);
}

void
tui_text_run(struct tui *t, const char *title, char *const *argv, bool diff)
{
	struct tui_text *tx = tui_text_new(t, title, diff);
	struct tui_text_job *job = xcalloc(1, sizeof *job);
	struct proc_opts o;
	struct strv args, env;
	char *cause = NULL;

	strv_init(&args);
	strv_init(&env);
	tui_text_env(t, argv, &env);
	strv_add(&args, "agentmux");
	for (; *argv != NULL; argv++)
		strv_add(&args, *argv);
	memset(&o, 0, sizeof o);
	o.argv = args.v;
	o.env = env.v;
	o.exe = "/proc/self/exe";
	o.err_to_out = true;
	o.out_fd = -1;
	o.umask = -1;
	o.chunk = tui_text_chunk;
	o.chunk_arg = job;
	job->t = t;
	job->tx = tx;
	if ((job->proc = proc_start(t->base, &o, tui_text_done, job,
	    &cause)) == NULL) {
		strv_add(&tx->lines, cause);
		free(cause);
		free(job);
	} else
		tx->job = job;
	strv_free(&args);
	tui_text_env_free(&env);
	tui_view_push(t, TUI_VIEW_TEXT);
	tui_redraw(t);
}

static enum tui_style
tui_text_style(const struct tui_text *tx, const char *line)
{
	if (!tx->diff)
		return TUI_STYLE_NORMAL;
	if (strncmp(line, "+++", 3) == 0 || strncmp(line, "---", 3) == 0 ||
	    strncmp(line, "diff ", 5) == 0)
		return TUI_STYLE_TITLE;
	if (line[0] == '+')
		return TUI_STYLE_OK;
	if (line[0] == '-')
		return TUI_STYLE_ALERT;
	if (strncmp(line, "@@", 2) == 0)
		return TUI_STYLE_KEY;
	return TUI_STYLE_NORMAL;
}

void
tui_text_draw(struct tui *t, const struct tui_rect *area)
{
	struct tui_text *tx = t->c->text;
	size_t rows = area->sy > 2 ? area->sy - 2 : 1, i;
	unsigned y;

	tui_screen_fill(t->c->scr, area, TUI_STYLE_NORMAL);
	if (tx == NULL)
		return;
	if (tx->top + rows > tx->lines.n)
		tx->top = tx->lines.n > rows ? tx->lines.n - rows : 0;
	tui_screen_printf(t->c->scr, 0, area->y, area->sx, TUI_STYLE_TITLE,
	    " %s  (%zu lines%s)", tx->title, tx->lines.n,
	    tx->job != NULL ? ", running" : "");
	for (i = tx->top, y = area->y + 1; i < tx->lines.n && y < area->y + 1 +
	    rows; i++, y++)
		tui_screen_print(t->c->scr, 0, y, area->sx,
		    tui_text_style(tx, tx->lines.v[i]), tx->lines.v[i]);
	tui_screen_print(t->c->scr, 0, area->y + area->sy - 1, area->sx,
	    TUI_STYLE_DIM, " up/down/PageUp/PageDown scroll  Esc back");
}

bool
tui_text_key(struct tui *t, const struct tui_key *k)
{
	struct tui_text *tx = t->c->text;
	size_t page = t->c->sy > 4 ? t->c->sy - 4 : 1;

	if (k->code == 0x1b || k->code == 'q') {
		tui_view_pop(t);
		return true;
	}
	if (tx == NULL || !tui_list_key(k, tx->lines.n > 0 ? tx->lines.n : 1,
	    page, &tx->top))
		return false;
	tui_redraw(t);
	return true;
}

/* The help: every prefix key, then the keys of each panel. */
static void
tui_help_lines(struct tui *t, struct strv *out)
{
	static const char *more[] = {
	    "",
	    "Without the prefix, every key goes to the focused pane.",
	    "",
	    "Scrollback and copy (prefix [ or PageUp, or the mouse wheel):",
	    "  arrows h/j/k/l move, PageUp/PageDown b/C-f, 0/$ line start/end,",
	    "  g/G top/bottom, q/Esc leave",
	    "  / search down, ? search up, n/N next/previous match",
	    "  Space start a selection (v: whole lines), Enter or y copy it",
	    "  (to the paste buffer, prefix ] pastes it; and to the terminal's",
	    "  clipboard, [ui] clipboard); a mouse drag selects and copies too",
	    "A pane whose program ended: r restart, x close, c continue its",
	    "  conversation (the profile's resume command, if it has one)",
	    "",
	    "Status bar: each session as N:agent and its state: starting,",
	    "  working, needs you (quiet, its program waiting for your input),",
	    "  prompt (a network question waits), paused, frozen (a disk",
	    "  limit), exited N, crashed, closed, failed. Its marks:",
	    "  * the focused session (*Z zoomed); ! it rang its bell since you",
	    "  last looked at it; magenta: it needs you or has a prompt, and",
	    "  'needs you N' counts those (prefix w goes to the next one; a",
	    "  bell or [ui] notify tells you when one starts to); red: unsafe",
	    "  flags (UNSAFE:...), an alert, or a failure; BUDGET: its records",
	    "  reached [proxy] record_budget; < > more sessions than fit;",
	    "  'prompts N' questions waiting; 'denied N' requests denied.",
	    "",
	    "Prompt queue (prefix a, or a click on the prompt bar):",
	    "  a allow once   s allow for the session   A always allow",
	    "  d deny once    e deny for the session    D always deny",
	    "  1-6 the same, left/right and Enter, up/down other prompts, Esc back",
	    "",
	    "A session frozen at a disk limit (prefix a, or a click on its bar):",
	    "  c continue (a larger budget, or less space kept free), s stop",
	    "",
	    "Requests panel: / filter by typing, Enter details, Esc back",
	    "History: Enter opens a session; there d diff, u undo to the",
	    "  selected snapshot, g config diff, a apply config changes, Esc back",
	};
	const struct tui_binding *b;
	const struct tui_cmdline_cmd *cmds;
	size_t n, i;

	b = tui_keys_bindings(&n);
	strv_addf(out, "agentmux keys. The prefix is %s.", t->cf->ui.prefix);
	strv_add(out, "");
	for (i = 0; i < n; i++) {
		if (b[i].name == NULL)
			continue;
		strv_addf(out, "  %s %-7s %s", t->cf->ui.prefix, b[i].key == 0 ?
		    t->cf->ui.prefix : b[i].name, b[i].help);
	}
	strv_add(out, "");
	strv_addf(out, "Command prompt (%s :): a command, then Enter; Tab "
	    "completes its name, Esc leaves; a SESSION left out is the "
	    "focused one", t->cf->ui.prefix);
	cmds = tui_cmdline_commands(&n);
	for (i = 0; i < n; i++)
		strv_addf(out, "  :%s%s%s  %s", cmds[i].name,
		    *cmds[i].args != '\0' ? " " : "", cmds[i].args, cmds[i].help);
	for (i = 0; i < nitems(more); i++)
		strv_add(out, more[i]);
}

void
tui_help_draw(struct tui *t, const struct tui_rect *area)
{
	struct strv lines;
	size_t i, rows = area->sy > 1 ? area->sy - 1 : 1;
	unsigned y;

	strv_init(&lines);
	tui_help_lines(t, &lines);
	if (t->c->help_top + rows > lines.n)
		t->c->help_top = lines.n > rows ? lines.n - rows : 0;
	tui_screen_fill(t->c->scr, area, TUI_STYLE_NORMAL);
	for (i = t->c->help_top, y = area->y; i < lines.n && y < area->y + rows;
	    i++, y++)
		tui_screen_print(t->c->scr, 0, y, area->sx,
		    i == 0 ? TUI_STYLE_TITLE : TUI_STYLE_NORMAL, lines.v[i]);
	tui_screen_print(t->c->scr, 0, area->y + area->sy - 1, area->sx,
	    TUI_STYLE_DIM, " up/down scroll  Esc back");
	strv_free(&lines);
}

bool
tui_help_key(struct tui *t, const struct tui_key *k)
{
	if (k->code == 0x1b || k->code == 'q') {
		tui_view_pop(t);
		return true;
	}
	if (!tui_list_key(k, 100, 10, &t->c->help_top))
		return false;
	tui_redraw(t);
	return true;
}
