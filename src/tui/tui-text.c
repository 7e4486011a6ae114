/* Scrollable text views: a request's details, the output of diff/undo/confdiff run as a child, the help. */
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "core/core.h"
#include "tui-int.h"

/* How often to look for a finished command's exit status. */
#define TUI_TEXT_REAP_US 20000

void
tui_text_free(struct tui_text *tx)
{
	if (tx == NULL)
		return;
	if (tx->ev != NULL)
		event_free(tx->ev);
	if (tx->fd != -1)
		close(tx->fd);
	if (tx->pid > 0) {
		/* Left before it finished: nobody wants its output any more. */
		kill(tx->pid, SIGTERM);
		while (waitpid(tx->pid, NULL, 0) == -1 && errno == EINTR)
			;
	}
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
	tx->pid = -1;
	tx->fd = -1;
	tx->diff = diff;
	tui_text_free(t->text);
	t->text = tx;
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

static void
tui_text_reap(evutil_socket_t fd, short what, void *arg)
{
	struct tui *t = arg;
	struct tui_text *tx = t->text;
	struct timeval tv = { 0, TUI_TEXT_REAP_US };
	char line[64];
	int st;
	pid_t r;

	if (tx == NULL || tx->pid <= 0)
		return;
	while ((r = waitpid(tx->pid, &st, WNOHANG)) == -1 && errno == EINTR)
		;
	if (r == 0) {
		evtimer_add(tx->ev, &tv);
		return;
	}
	tx->pid = -1;
	if (r > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return;
	snprintf(line, sizeof line, "[exited with status %d]", r == -1 ? -1 :
	    WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	strv_add(&tx->lines, line);
	tui_redraw(t);
}

static void
tui_text_read(evutil_socket_t fd, short what, void *arg)
{
	struct tui *t = arg;
	struct tui_text *tx = t->text;
	char buf[16384];
	ssize_t n = read(fd, buf, sizeof buf);

	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n > 0) {
		tui_text_add(tx, buf, (size_t)n);
		tui_redraw(t);
		return;
	}
	if (tx->partial.len > 0)
		tui_text_add(tx, "\n", 1);
	event_free(tx->ev);
	close(tx->fd);
	tx->fd = -1;
	tx->ev = evtimer_new(t->base, tui_text_reap, t);
	tui_text_reap(-1, 0, t);
	tui_redraw(t);
}

/* Runs "agentmux ARGV..." with its output going to a pipe; -1 on error. */
static pid_t
tui_text_spawn(char *const *argv, int *fd)
{
	struct strv args;
	int p[2], null;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) == -1)
		return -1;
	strv_init(&args);
	strv_add(&args, "agentmux");
	for (; *argv != NULL; argv++)
		strv_add(&args, *argv);
	if ((pid = fork()) == 0) {
		null = open("/dev/null", O_RDONLY);
		if (null == -1 || dup2(null, STDIN_FILENO) == -1 ||
		    dup2(p[1], STDOUT_FILENO) == -1 ||
		    dup2(p[1], STDERR_FILENO) == -1)
			_exit(127);
		execv("/proc/self/exe", args.v);
		_exit(127);
	}
	strv_free(&args);
	close(p[1]);
	if (pid == -1) {
		close(p[0]);
		return -1;
	}
	*fd = p[0];
	return pid;
}

void
tui_text_run(struct tui *t, const char *title, char *const *argv, bool diff)
{
	struct tui_text *tx = tui_text_new(t, title, diff);

	if ((tx->pid = tui_text_spawn(argv, &tx->fd)) == -1) {
		strv_addf(&tx->lines, "cannot run agentmux %s: %s", argv[0],
		    strerror(errno));
	} else {
		util_set_nonblock(tx->fd);
		tx->ev = event_new(t->base, tx->fd, EV_READ | EV_PERSIST,
		    tui_text_read, t);
		event_add(tx->ev, NULL);
	}
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
	struct tui_text *tx = t->text;
	size_t rows = area->sy > 2 ? area->sy - 2 : 1, i;
	unsigned y;

	tui_screen_fill(t->scr, area, TUI_STYLE_NORMAL);
	if (tx == NULL)
		return;
	if (tx->top + rows > tx->lines.n)
		tx->top = tx->lines.n > rows ? tx->lines.n - rows : 0;
	tui_screen_printf(t->scr, 0, area->y, area->sx, TUI_STYLE_TITLE,
	    " %s  (%zu lines%s)", tx->title, tx->lines.n, tx->pid > 0 ?
	    ", running" : "");
	for (i = tx->top, y = area->y + 1; i < tx->lines.n && y < area->y + 1 +
	    rows; i++, y++)
		tui_screen_print(t->scr, 0, y, area->sx, tui_text_style(tx,
		    tx->lines.v[i]), tx->lines.v[i]);
	tui_screen_print(t->scr, 0, area->y + area->sy - 1, area->sx,
	    TUI_STYLE_DIM, " up/down/PageUp/PageDown scroll  Esc back");
}

bool
tui_text_key(struct tui *t, const struct tui_key *k)
{
	struct tui_text *tx = t->text;
	size_t page = t->sy > 4 ? t->sy - 4 : 1;

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
	    "A pane whose program ended: r restart, x close",
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
	if (t->help_top + rows > lines.n)
		t->help_top = lines.n > rows ? lines.n - rows : 0;
	tui_screen_fill(t->scr, area, TUI_STYLE_NORMAL);
	for (i = t->help_top, y = area->y; i < lines.n && y < area->y + rows;
	    i++, y++)
		tui_screen_print(t->scr, 0, y, area->sx, i == 0 ?
		    TUI_STYLE_TITLE : TUI_STYLE_NORMAL, lines.v[i]);
	tui_screen_print(t->scr, 0, area->y + area->sy - 1, area->sx,
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
	if (!tui_list_key(k, 100, 10, &t->help_top))
		return false;
	tui_redraw(t);
	return true;
}
