/* The dashboard: the terminal, the loop's events, where each key goes, and what each frame draws. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "core/core.h"
#include "session/session.h"
#include "tui-int.h"

/* Below this the dashboard shows a message instead of itself. */
#define TUI_MIN_SX 20
#define TUI_MIN_SY 5
/* How long a message stays in the status bar. */
#define TUI_MESSAGE_SEC 5
/* How long quitting waits for closed sessions: their kill grace, and a second. */
#define TUI_QUIT_WAIT_SEC 6

static size_t tui_running(const struct tui *);
static void tui_detached(struct tui_client *, const char *);
static void tui_remove_pane(struct tui *, struct tui_pane *);
static void tui_reload(struct tui *);
static void tui_clients_reap(struct tui *);
static void tui_suspend_key(struct tui *);

/* A frame for client C that draws everything, the rows around the panes too. */
static void
tui_redraw_client(struct tui_client *c)
{
	c->chrome = true;
	if (c->scr != NULL)
		tui_frames_schedule(c->frames);
}

/* What is shared changed, or one client's view did: every attached client draws. */
void
tui_redraw(struct tui *t)
{
	size_t i;

	for (i = 0; i < t->nclients; i++)
		tui_redraw_client(t->clients[i]);
}

void
tui_redraw_pane(struct tui *t, const struct tui_pane *wp)
{
	struct tui_client *c;
	size_t i;

	for (i = 0; i < t->nclients; i++) {
		c = t->clients[i];
		/* (A zoomed layout hides some of its panes: drawn all the same.) */
		if (c->scr != NULL && c->layout != NULL &&
		    (c->nviews == 0 ||
		        c->views[c->nviews - 1] == TUI_VIEW_PANES) &&
		    tui_layout_contains(c->layout, wp->num))
			tui_frames_schedule(c->frames);
	}
}

void
tui_relayout_all(struct tui *t)
{
	size_t i;

	for (i = 0; i < t->nclients; i++)
		t->clients[i]->relayout = true;
	tui_redraw(t);
}

static void
tui_message_expire(evutil_socket_t fd, short what, void *arg)
{
	struct tui_client *c = arg;

	free(c->message);
	c->message = NULL;
	tui_redraw_client(c);
}

/* TEXT (owned from now on) in client C's status bar for a while. */
static void
tui_client_message(struct tui_client *c, bool alert, char *text)
{
	struct timeval tv = { TUI_MESSAGE_SEC, 0 };

	free(c->message);
	c->message = text;
	c->message_alert = alert;
	evtimer_add(c->msg_ev, &tv);
	tui_redraw_client(c);
}

void
tui_message(struct tui *t, bool alert, const char *fmt, ...)
{
	va_list ap;
	char *text;
	size_t i;

	va_start(ap, fmt);
	if (vasprintf(&text, fmt, ap) == -1)
		fatalx("out of memory");
	va_end(ap);
	/* The view kept for the next client gets it too: it may attach soon. */
	for (i = 0; i < t->nclients; i++)
		tui_client_message(t->clients[i], alert, xstrdup(text));
	free(text);
}

void
tui_reply(struct tui *t, bool alert, const char *fmt, ...)
{
	va_list ap;
	char *text;

	va_start(ap, fmt);
	if (vasprintf(&text, fmt, ap) == -1)
		fatalx("out of memory");
	va_end(ap);
	tui_client_message(t->c, alert, text);
}

struct tui_pane *
tui_pane_by_num(struct tui *t, int num)
{
	size_t i;

	for (i = 0; i < t->npanes; i++) {
		if (t->panes[i]->num == num)
			return t->panes[i];
	}
	return NULL;
}

struct tui_pane *
tui_pane_by_id(struct tui *t, int64_t id)
{
	size_t i;

	for (i = 0; i < t->npanes; i++) {
		if (t->panes[i]->id == id)
			return t->panes[i];
	}
	return NULL;
}

struct tui_pane *
tui_focus_pane(struct tui *t)
{
	if (t->c->layout == NULL)
		return NULL;
	return tui_pane_by_num(t, tui_layout_focus(t->c->layout));
}

enum tui_view
tui_view_top(const struct tui *t)
{
	return t->c->nviews == 0 ? TUI_VIEW_PANES :
	                           t->c->views[t->c->nviews - 1];
}

void
tui_view_push(struct tui *t, enum tui_view v)
{
	if (tui_view_top(t) == v)
		return;
	if (t->c->nviews == nitems(t->c->views))
		memmove(t->c->views, t->c->views + 1,
		    (t->c->nviews - 1) * sizeof *t->c->views);
	else
		t->c->nviews++;
	t->c->views[t->c->nviews - 1] = v;
	tui_screen_invalidate(t->c->scr);
	tui_redraw(t);
}

void
tui_view_pop(struct tui *t)
{
	size_t i;

	if (t->c->nviews > 0)
		t->c->nviews--;
	if (tui_view_top(t) == TUI_VIEW_PANES) {
		/* The panes were covered: all of them draw afresh. */
		for (i = 0; i < t->npanes; i++)
			t->panes[i]->redraw = true;
	}
	tui_status_live_check(t);
	tui_redraw(t);
}

/* The rows the panes (or a view) get: all but the status, disk and prompt bars. */
static struct tui_rect
tui_area(const struct tui *t)
{
	struct tui_rect r = { 0, 0, t->c->sx, t->c->sy - 1 };

	if (t->ndisks > 0 && r.sy > 1)
		r.sy--;
	if (t->nprompts > 0 && r.sy > 1)
		r.sy--;
	return r;
}

/* The prompt bar's row: above the disk bar, if there is one. */
static unsigned
tui_prompt_row(const struct tui *t)
{
	return t->c->sy - 2 - (t->ndisks > 0 ? 1 : 0);
}

/*
 * Puts the panes where the current client's layout has them. The panes
 * are shared, their places are not: a client that draws or takes a
 * mouse click after another places them again (as every pane is then
 * drawn whole). Only the most recently active client resizes them.
 */
static void
tui_place(struct tui *t)
{
	struct tui_rect area = tui_area(t), r;
	int shown[64];
	size_t n, i;
	bool titled;

	t->placed = t->c;
	t->c->too_small = t->c->sx < TUI_MIN_SX || t->c->sy < TUI_MIN_SY;
	for (i = 0; i < t->npanes; i++)
		t->panes[i]->shown = false;
	if (t->c->layout == NULL || t->c->too_small)
		return;
	if (!tui_layout_apply(t->c->layout, area.x, area.y, area.sx, area.sy)) {
		t->c->too_small = true;
		return;
	}
	n = tui_layout_panes(t->c->layout, shown, nitems(shown));
	titled = n > 1;
	for (i = 0; i < n && i < nitems(shown); i++) {
		struct tui_pane *wp = tui_pane_by_num(t, shown[i]);

		if (wp != NULL && tui_layout_rect(t->c->layout, shown[i], &r))
			tui_pane_place(wp, &r, titled, t->c == t->latest);
	}
}

/* Recomputes where every pane goes and tells each its size. */
static void
tui_relayout(struct tui *t)
{
	t->c->relayout = false;
	t->c->chrome = true;
	tui_place(t);
	tui_screen_invalidate(t->c->scr);
}

/*
 * Client C's view is the one worked on from now: its key, its frame.
 * The panes are placed for it first if another client's layout (or a
 * change) placed them last.
 */
static void
tui_client_set(struct tui *t, struct tui_client *c)
{
	t->c = c;
	if (c->scr == NULL)
		return;
	tui_screen_use(c->scr);
	if (c->relayout)
		tui_relayout(t);
	else if (t->placed != c)
		tui_place(t);
}

/*
 * Client C did something (a key, attached, resized): the panes take its
 * sizes, as tmux's window-size latest does, before the key reaches one.
 */
static void
tui_client_active(struct tui *t, struct tui_client *c)
{
	if (t->latest == c)
		return;
	t->latest = c;
	c->relayout = true;
	tui_client_set(t, c);
}

static void
tui_draw_small(struct tui *t)
{
	struct tui_rect all = { 0, 0, t->c->sx, t->c->sy };

	tui_screen_fill(t->c->scr, &all, TUI_STYLE_NORMAL);
	tui_screen_printf(t->c->scr, 0, 0, t->c->sx, TUI_STYLE_ALERT,
	    "too small: %ux%u", t->c->sx, t->c->sy);
	if (t->c->sy > 1)
		tui_screen_printf(t->c->scr, 0, 1, t->c->sx, TUI_STYLE_NORMAL,
		    "need %dx%d", TUI_MIN_SX, TUI_MIN_SY);
}

static void
tui_draw_borders(struct tui *t)
{
	struct tui_rect b[64];
	size_t n = tui_layout_borders(t->c->layout, b, nitems(b)), i;

	for (i = 0; i < n && i < nitems(b); i++)
		tui_screen_border(t->c->scr, &b[i], TUI_STYLE_BORDER);
}

/* Draws the panes (what changed in them). */
static void
tui_draw_panes(struct tui *t)
{
	struct tui_pane *focus = tui_focus_pane(t), *wp;
	struct tui_rect area = tui_area(t);
	size_t i, shown = 0;

	if (t->c->layout == NULL) {
		tui_screen_fill(t->c->scr, &area, TUI_STYLE_NORMAL);
		tui_screen_print(t->c->scr, 1, 1, area.sx - 1, TUI_STYLE_DIM,
		    "no sessions: press the prefix key, then c to start one");
		return;
	}
	for (i = 0; i < t->npanes; i++)
		shown += t->panes[i]->shown;
	tui_draw_borders(t);
	for (i = 0; i < t->npanes; i++) {
		wp = t->panes[i];
		if (wp->shown)
			tui_pane_draw(wp, wp == focus, shown > 1);
	}
}

/*
 * The terminal's cursor, placed after everything else is drawn: in a
 * dialog or on the prompt bar's choice when one has the keys, else where
 * the focused pane has it, as the pane shows it (or hidden).
 */
static void
tui_draw_cursor(struct tui *t)
{
	struct tui_pane *focus = tui_focus_pane(t);
	unsigned cx, cy;

	if (t->c->too_small) {
		tui_screen_cursor(t->c->scr, false, 0, 0, PANE_CURSOR_DEFAULT);
		return;
	}
	if (t->c->cmdline.active) {
		tui_screen_cursor(t->c->scr, true, t->c->cmdline_cx,
		    t->c->sy - 1, PANE_CURSOR_DEFAULT);
		return;
	}
	if (t->c->dialog != TUI_DIALOG_NONE) {
		tui_screen_cursor(t->c->scr, true, t->c->dialog_cx,
		    t->c->dialog_cy, PANE_CURSOR_DEFAULT);
		return;
	}
	if (t->c->disk_focus) {
		tui_screen_cursor(t->c->scr, false, 0, 0, PANE_CURSOR_DEFAULT);
		return;
	}
	if (t->c->prompt_focus && t->nprompts > 0) {
		tui_screen_cursor(t->c->scr, true,
		    t->c->choice_x[t->c->prompt_choice % 6][0],
		    tui_prompt_row(t), PANE_CURSOR_DEFAULT);
		return;
	}
	if (tui_view_top(t) == TUI_VIEW_PANES && t->c->layout != NULL &&
	    focus != NULL && focus->shown &&
	    tui_pane_view(focus)->copy != NULL) {
		/* Copy mode's own cursor. */
		if (tui_copy_cursor(focus, &cx, &cy))
			tui_screen_cursor(t->c->scr, true, focus->r.x + cx,
			    focus->r.y + cy, PANE_CURSOR_DEFAULT);
		else
			tui_screen_cursor(t->c->scr, false, 0, 0,
			    PANE_CURSOR_DEFAULT);
		return;
	}
	if (tui_view_top(t) != TUI_VIEW_PANES || t->c->layout == NULL ||
	    focus == NULL || !focus->shown || focus->exited ||
	    tui_pane_view(focus)->offset != 0 ||
	    !pane_cursor_visible(focus->pane)) {
		tui_screen_cursor(t->c->scr, false, 0, 0, PANE_CURSOR_DEFAULT);
		return;
	}
	pane_cursor(focus->pane, &cx, &cy);
	cx = pane_cursor_column(focus->pane);
	if (cx >= focus->r.sx || cy >= focus->r.sy) {
		tui_screen_cursor(t->c->scr, false, 0, 0, PANE_CURSOR_DEFAULT);
		return;
	}
	tui_screen_cursor(t->c->scr, true, focus->r.x + cx, focus->r.y + cy,
	    pane_cursor_shape(focus->pane));
}

static void
tui_draw_view(struct tui *t)
{
	struct tui_rect area = tui_area(t);

	switch (tui_view_top(t)) {
	case TUI_VIEW_PANES:
		tui_draw_panes(t);
		return;
	case TUI_VIEW_REQUESTS:
		tui_requests_draw(t, &area);
		break;
	case TUI_VIEW_HISTORY:
		tui_history_draw(t, &area);
		break;
	case TUI_VIEW_SESSION:
		tui_session_draw(t, &area);
		break;
	case TUI_VIEW_TEXT:
		tui_text_draw(t, &area);
		break;
	case TUI_VIEW_HELP:
		tui_help_draw(t, &area);
		break;
	}
}

/*
 * One frame: called at most ~60 times a second, and only after a change.
 * A frame for a pane's output alone (tui_redraw_pane) draws the panes
 * and what lies over them: the status, prompt and disk rows below them
 * are drawn only when something else asked for a frame (tui_redraw, a
 * message, a new layout), as every change they show does. A typed key's
 * echo then costs the pane's changed rows, not the whole bar again.
 */
static void
tui_draw(void *arg)
{
	struct tui_client *c = arg;
	struct tui *t = c->t;
	bool chrome;

	if (c->scr == NULL || c->suspended)
		return;           /* detached or suspended: drawn all when back */
	tui_client_set(t, c);
	chrome = c->chrome || tui_view_top(t) != TUI_VIEW_PANES;
	c->chrome = false;
	if (t->c->too_small)
		tui_draw_small(t);
	else {
		tui_draw_view(t);
		if (chrome && t->ndisks > 0)
			tui_disk_draw(t, t->c->sy - 2);
		if (chrome && t->nprompts > 0)
			tui_prompt_draw(t, tui_prompt_row(t));
		if (chrome)
			tui_status_draw(t, t->c->sy - 1);
		if (chrome && t->c->cmdline.active)
			tui_cmdline_draw(t, t->c->sy - 1);
		tui_dialog_draw(t);
	}
	tui_draw_cursor(t);
	tui_screen_flush(t->c->scr);
}

void
tui_dash_ran(struct tui *t, int64_t id)
{
	t->ran = xreallocarray(t->ran, t->nran + 1, sizeof *t->ran);
	t->ran[t->nran++] = id;
}

/* Panes the user closed go once their sessions ended; quitting ends with the last. */
static void
tui_reap_cb(evutil_socket_t fd, short what, void *arg)
{
	struct tui *t = arg;
	size_t i;

	tui_clients_reap(t);
	for (i = t->npanes; i > 0; i--) {
		if (t->panes[i - 1]->closing && t->panes[i - 1]->exited)
			tui_remove_pane(t, t->panes[i - 1]);
	}
	if (t->quitting && tui_running(t) == 0)
		event_base_loopexit(t->base, NULL);
}

void
tui_pane_closed(struct tui *t)
{
	struct timeval tv = { 0, 0 };

	evtimer_add(t->reap_ev, &tv);
}

/*
 * The grace is over: what is left is killed as the panes are freed, but
 * for a start still in git worktree add, which the quit waits for (a
 * second at a time; git's own time limit bounds it): git killed halfway
 * leaves a worktree and branch that no record names, for nothing to
 * remove. Its start then fails, naming them.
 */
static void
tui_quit_cb(evutil_socket_t fd, short what, void *arg)
{
	struct tui *t = arg;
	struct timeval tv = { 1, 0 };
	struct tui_pane *wp;
	size_t i;

	for (i = 0; i < t->npanes; i++) {
		wp = t->panes[i];
		if (wp->s == NULL || wp->exited ||
		    !session_making_worktree(wp->s))
			continue;
		if (!t->quit_told)
			tui_message(t, false, "waiting for session %lld's git "
			    "worktree add to finish (not cut short)",
			    (long long)session_id(wp->s));
		t->quit_told = true;
		evtimer_add(t->quit_ev, &tv);
		return;
	}
	event_base_loopexit(t->base, NULL);
}

/*
 * Every running session is closed as the user closes one (a hang-up,
 * then SIGTERM) and the dashboard ends once they have ended, or after
 * their grace period; whatever is left is killed as the panes are freed.
 * Asked twice (the terminal went away meanwhile, a SIGTERM), it ends at
 * once, but for a start in git worktree add (tui_quit_cb).
 */
void
tui_quit(struct tui *t)
{
	struct timeval tv = { TUI_QUIT_WAIT_SEC, 0 }, now = { 0, 0 };
	struct tui_pane *wp;
	size_t i, n;

	if (t->quitting) {
		evtimer_add(t->quit_ev, &now);
		return;
	}
	t->quitting = true;
	for (i = 0; i < t->npanes; i++) {
		wp = t->panes[i];
		wp->closing = true;
		if (wp->s != NULL && !wp->exited)
			session_close(wp->s);
	}
	if ((n = tui_running(t)) == 0) {
		event_base_loopexit(t->base, NULL);
		return;
	}
	tui_message(t, false, "closing %zu session%s", n, n == 1 ? "" : "s");
	evtimer_add(t->quit_ev, &tv);
}

static void
tui_quit_confirmed(struct tui *t, void *arg)
{
	tui_quit(t);
}

static size_t
tui_running(const struct tui *t)
{
	size_t i, n = 0;

	for (i = 0; i < t->npanes; i++) {
		if (t->panes[i]->s != NULL && !t->panes[i]->exited)
			n++;
	}
	return n;
}

static void
tui_ask_quit(struct tui *t)
{
	char *q;
	size_t n = tui_running(t);

	if (n == 0) {
		tui_quit(t);
		return;
	}
	q = xprintf("Quit? %zu running session%s will be stopped.", n,
	    n == 1 ? "" : "s");
	tui_confirm(t, q, tui_quit_confirmed, NULL);
	free(q);
}

/*
 * The pane at its place, if it still runs the session asked about: the
 * pane may have gone (and another taken its number) before the answer.
 */
static void
tui_close_confirmed(struct tui *t, void *arg)
{
	struct tui_pane *wp = tui_pane_by_num(t, (int)(intptr_t)arg);

	if (wp != NULL && wp->id == t->c->confirm_session && wp->s != NULL &&
	    !wp->exited) {
		wp->closing = true;
		session_close(wp->s);
		tui_message(t, false, "closing session %lld", (long long)wp->id);
	}
}

/* Takes pane WP out of client C's layout: a pane it does not show yet takes its place. */
static void
tui_unshow_pane(struct tui *t, struct tui_client *c, struct tui_pane *wp)
{
	struct tui_pane *hidden = NULL;
	size_t i;

	if (c->layout == NULL || !tui_layout_contains(c->layout, wp->num))
		return;
	for (i = 0; i < t->npanes; i++) {
		if (t->panes[i] != wp &&
		    !tui_layout_contains(c->layout, t->panes[i]->num)) {
			hidden = t->panes[i];
			break;
		}
	}
	if (hidden != NULL)
		tui_layout_replace(c->layout, wp->num, hidden->num);
	else if (!tui_layout_remove(c->layout, wp->num)) {
		tui_layout_free(c->layout);
		c->layout = NULL;
	}
}

/* Takes pane WP off every client's screen and out of the list. */
static void
tui_remove_pane(struct tui *t, struct tui_pane *wp)
{
	size_t i;

	for (i = 0; i < t->nclients; i++)
		tui_unshow_pane(t, t->clients[i], wp);
	for (i = 0; i < t->npanes; i++) {
		if (t->panes[i] == wp) {
			memmove(t->panes + i, t->panes + i + 1,
			    (t->npanes - i - 1) * sizeof *t->panes);
			t->npanes--;
			break;
		}
	}
	tui_prompt_drop_pane(t, wp);
	tui_disk_drop_pane(t, wp);
	tui_dialog_drop_pane(t, wp, "is gone");
	tui_pane_free(wp);
	tui_relayout_all(t);
}

static void
tui_ask_close(struct tui *t)
{
	struct tui_pane *wp = tui_focus_pane(t);
	char *q;

	if (wp == NULL)
		return;
	if (wp->s == NULL || wp->exited) {
		tui_remove_pane(t, wp);
		return;
	}
	q = xprintf("Close session %lld (%s)? Its jail is stopped.",
	    (long long)wp->id, wp->agent);
	tui_confirm(t, q, tui_close_confirmed, (void *)(intptr_t)wp->num);
	t->c->confirm_session = wp->id;
	free(q);
}

/* Shows pane NUM in the focused place (or focuses it where it is). */
static void
tui_select(struct tui *t, int num)
{
	struct tui_pane *wp = tui_pane_by_num(t, num);

	if (wp == NULL) {
		tui_reply(t, false, "no session %d", num);
		return;
	}
	if (t->c->layout == NULL)
		t->c->layout = tui_layout_create(num);
	else if (!tui_layout_set_focus(t->c->layout, num))
		tui_layout_replace(t->c->layout, tui_layout_focus(t->c->layout),
		    num);
	tui_layout_set_focus(t->c->layout, num);
	while (tui_view_top(t) != TUI_VIEW_PANES)
		tui_view_pop(t);
	t->c->relayout = true;
	tui_redraw(t);
}

/* C-a 1 to 9, 0: the Nth session in the status bar. */
static void
tui_select_nth(struct tui *t, int n)
{
	if (n < 1 || (size_t)n > t->npanes) {
		tui_reply(t, false, "no session at place %d of the bar", n);
		return;
	}
	tui_select(t, t->panes[n - 1]->num);
}

/* The next (or previous) pane in number order from the focused one. */
static void
tui_cycle(struct tui *t, int dir)
{
	struct tui_pane *focus = tui_focus_pane(t);
	size_t i, at = 0;

	if (t->npanes == 0)
		return;
	for (i = 0; i < t->npanes; i++) {
		if (t->panes[i] == focus)
			at = i;
	}
	at = (at + t->npanes + (size_t)(dir > 0 ? 1 : -1)) % t->npanes;
	if (t->panes[at] != NULL)
		tui_select(t, t->panes[at]->num);
}

/* C-a P: pauses the focused session, or resumes it. */
static void
tui_pause(struct tui *t, struct tui_pane *wp)
{
	char *cause = NULL;
	bool pause;

	if (wp == NULL || wp->s == NULL || wp->exited) {
		tui_reply(t, false, "no running session to pause");
		return;
	}
	pause = !session_paused(wp->s);
	if (session_pause(wp->s, pause, &cause) == -1) {
		tui_reply(t, true, "%s", cause);
		free(cause);
		return;
	}
	tui_reply(t, false, "session %lld (%s) %s", (long long)wp->id,
	    wp->agent, pause ? "paused: prefix P resumes it" : "resumed");
}

/* C-a w: the next session after the focused one that needs the user. */
static void
tui_next_needs(struct tui *t)
{
	struct tui_pane *focus = tui_focus_pane(t), *wp;
	size_t i, at = 0, k;

	for (i = 0; i < t->npanes; i++) {
		if (t->panes[i] == focus)
			at = i;
	}
	for (k = 1; k <= t->npanes; k++) {
		wp = t->panes[(at + k) % t->npanes];
		if (wp != NULL && tui_status_needs(wp) && (wp != focus ||
		    tui_view_top(t) != TUI_VIEW_PANES)) {
			tui_select(t, wp->num);
			return;
		}
	}
	tui_reply(t, false, "no other session needs you");
}

static void
tui_split(struct tui *t, bool side)
{
	size_t i;

	if (t->c->layout == NULL)
		return;
	for (i = 0; i < t->npanes; i++) {
		if (tui_layout_contains(t->c->layout, t->panes[i]->num))
			continue;
		if (!tui_layout_split(t->c->layout, t->panes[i]->num, side))
			tui_reply(t, false,
			    tui_layout_zoomed(t->c->layout) ?
			        "unzoom first (prefix z)" :
			        "no room to split");
		t->c->relayout = true;
		tui_redraw(t);
		return;
	}
	tui_reply(t, false, "every session is shown already; prefix c "
	    "starts another");
}

static void
tui_open_focused(struct tui *t, enum tui_action act)
{
	struct tui_pane *wp = tui_focus_pane(t);
	char *argv[5], id[32];

	if (wp == NULL || wp->id <= 0) {
		tui_reply(t, false, "no session to show");
		return;
	}
	snprintf(id, sizeof id, "%lld", (long long)wp->id);
	if (act == TUI_ACT_SNAPSHOTS) {
		tui_session_open(t, wp->id);
		return;
	}
	argv[0] = (char *)(act == TUI_ACT_DIFF ? "diff" : "confdiff");
	argv[1] = id;
	argv[2] = NULL;
	tui_text_run(t, act == TUI_ACT_DIFF ? "project diff" : "config diff",
	    argv, true);
}

static void
tui_toggle_view(struct tui *t, enum tui_view v)
{
	if (tui_view_top(t) == v)
		tui_view_pop(t);
	else if (v == TUI_VIEW_HISTORY)
		tui_history_open(t);
	else
		tui_view_push(t, v);
}

static void
tui_action(struct tui *t, const struct tui_binding *b)
{
	struct tui_pane *wp = tui_focus_pane(t);
	struct tui_key prefix = { .code = (uint32_t)t->c->km.prefix_key };

	switch (b->action) {
	case TUI_ACT_NEW:
		tui_new_session(t);
		break;
	case TUI_ACT_CLOSE:
		tui_ask_close(t);
		break;
	case TUI_ACT_NEXT:
	case TUI_ACT_PREV:
		tui_cycle(t, b->action == TUI_ACT_NEXT ? 1 : -1);
		break;
	case TUI_ACT_NEXT_NEEDS:
		tui_next_needs(t);
		break;
	case TUI_ACT_PAUSE:
		tui_pause(t, wp);
		break;
	case TUI_ACT_SESSIONS:
		tui_status_sessions(t);
		break;
	case TUI_ACT_RELOAD:
		tui_reload(t);
		break;
	case TUI_ACT_PORT:
		tui_port_dialog(t);
		break;
	case TUI_ACT_SELECT:
		tui_select_nth(t, b->arg == 0 ? 10 : b->arg);
		break;
	case TUI_ACT_ZOOM:
		if (t->c->layout != NULL)
			tui_layout_set_zoom(t->c->layout,
			    !tui_layout_zoomed(t->c->layout));
		t->c->relayout = true;
		tui_redraw(t);
		break;
	case TUI_ACT_SPLIT_H:
	case TUI_ACT_SPLIT_V:
		tui_split(t, b->action == TUI_ACT_SPLIT_H);
		break;
	case TUI_ACT_FOCUS:
		if (t->c->layout != NULL &&
		    tui_layout_focus_dir(t->c->layout, (enum tui_dir)b->arg))
			tui_redraw(t);
		break;
	case TUI_ACT_REQUESTS:
		tui_toggle_view(t, TUI_VIEW_REQUESTS);
		break;
	case TUI_ACT_HISTORY:
		tui_toggle_view(t, TUI_VIEW_HISTORY);
		break;
	case TUI_ACT_HELP:
		tui_toggle_view(t, TUI_VIEW_HELP);
		break;
	case TUI_ACT_SNAPSHOTS:
	case TUI_ACT_DIFF:
	case TUI_ACT_CONFDIFF:
		tui_open_focused(t, b->action);
		break;
	case TUI_ACT_PROMPTS:
		if (t->ndisks > 0)
			tui_disk_focus(t, true);
		else if (t->nprompts == 0)
			tui_reply(t, false, "no prompts are waiting");
		else
			tui_prompt_focus(t, true);
		break;
	case TUI_ACT_SCROLLBACK:
		if (wp != NULL && tui_view_top(t) == TUI_VIEW_PANES) {
			tui_copy_enter(wp);
			tui_pane_scroll(wp, (int)(wp->r.sy / 2));
		}
		break;
	case TUI_ACT_PASTE:
		if (tui_view_top(t) == TUI_VIEW_PANES)
			tui_copy_paste(t, wp);
		break;
	case TUI_ACT_QUIT:
		tui_ask_quit(t);
		break;
	case TUI_ACT_DETACH:
		tui_detached(t->c, NULL);
		break;
	case TUI_ACT_COMMAND:
		tui_cmdline_open(t);
		break;
	case TUI_ACT_SUSPEND:
		tui_suspend_key(t);
		break;
	case TUI_ACT_SEND_PREFIX:
		if (wp != NULL && tui_view_top(t) == TUI_VIEW_PANES)
			pane_key(wp->pane, prefix.code, prefix.mods);
		break;
	case TUI_ACT_REDRAW:
		tui_screen_invalidate(t->c->scr);
		t->c->relayout = true;
		tui_redraw(t);
		break;
	}
}

/* Keys for whatever covers the panes; false if it did not want the key. */
static bool
tui_view_key(struct tui *t, const struct tui_key *k)
{
	switch (tui_view_top(t)) {
	case TUI_VIEW_PANES:
		return false;
	case TUI_VIEW_REQUESTS:
		return tui_requests_key(t, k);
	case TUI_VIEW_HISTORY:
		return tui_history_key(t, k);
	case TUI_VIEW_SESSION:
		return tui_session_key(t, k);
	case TUI_VIEW_TEXT:
		return tui_text_key(t, k);
	case TUI_VIEW_HELP:
		return tui_help_key(t, k);
	}
	return false;
}

/* A key for the focused pane: to the program, or, once it ended, r/x. */
static void
tui_pane_key(struct tui *t, const struct tui_key *k)
{
	struct tui_pane *wp = tui_focus_pane(t);
	struct tui_input in = { .type = TUI_INPUT_KEY, .key = *k };

	if (wp == NULL)
		return;
	if (wp->exited || wp->s == NULL) {
		if (k->code == 'r')
			tui_pane_restart_ask(wp);
		else if (k->code == 'c' && wp->start_failed == NULL)
			(void)tui_pane_resume(wp);
		else if (k->code == 'x')
			tui_remove_pane(t, wp);
		return;
	}
	if (tui_copy_key(wp, k))
		return;
	tui_pane_input(wp, &in);
}

static void
tui_key(struct tui *t, const struct tui_key *k)
{
	const struct tui_binding *b;

	/*
	 * Closing every session: nothing new starts meanwhile, but a client
	 * may still detach or suspend (the wait for a git worktree add may
	 * be long).
	 */
	if (t->quitting) {
		if (tui_keys_dispatch(&t->c->km, k, &b) ==
		    TUI_DISPATCH_ACTION && (b->action == TUI_ACT_DETACH ||
		    b->action == TUI_ACT_SUSPEND))
			tui_action(t, b);
		return;
	}
	/* The client's own prompt first: a shared dialog waits for it. */
	if (tui_cmdline_key(t, k, &b)) {
		if (b != NULL)
			tui_action(t, b);
		return;
	}
	if (t->c->dialog != TUI_DIALOG_NONE) {
		tui_dialog_key(t, k);
		return;
	}
	if (t->c->disk_focus && tui_disk_key(t, k))
		return;
	if (t->c->prompt_focus && tui_prompt_key(t, k))
		return;
	if (t->c->req_filter.active && tui_view_top(t) == TUI_VIEW_REQUESTS) {
		tui_requests_key(t, k);
		return;
	}
	switch (tui_keys_dispatch(&t->c->km, k, &b)) {
	case TUI_DISPATCH_PREFIX:
		return;
	case TUI_DISPATCH_ACTION:
		tui_action(t, b);
		return;
	case TUI_DISPATCH_UNBOUND:
		tui_reply(t, false, "%s: no such command (prefix ? lists "
		    "them)", tui_keys_name(k));
		return;
	case TUI_DISPATCH_PANE:
		break;
	}
	if (!tui_view_key(t, k) && tui_view_top(t) == TUI_VIEW_PANES)
		tui_pane_key(t, k);
}

static void
tui_mouse(struct tui *t, const struct tui_mouse *m)
{
	struct tui_input in = { .type = TUI_INPUT_MOUSE, .mouse = *m };
	struct tui_pane *wp;
	int num;

	if (t->c->dialog != TUI_DIALOG_NONE || t->c->too_small)
		return;
	if (t->ndisks > 0 && m->y == t->c->sy - 2) {
		if (m->type == TUI_MOUSE_PRESS)
			tui_disk_click(t, m->x);
		return;
	}
	if (t->nprompts > 0 && m->y == tui_prompt_row(t)) {
		if (m->type == TUI_MOUSE_PRESS)
			tui_prompt_click(t, m->x);
		return;
	}
	if (m->y == t->c->sy - 1) {
		/* A session's entry in the status bar: it is shown. */
		if (m->type == TUI_MOUSE_PRESS &&
		    (num = tui_status_tab_at(t, m->x)) != -1)
			tui_select(t, num);
		return;
	}
	if (tui_view_top(t) != TUI_VIEW_PANES || t->c->layout == NULL)
		return;
	if ((wp = tui_copy_dragging(t)) != NULL) {
		/* A drag stays with the pane it started in, wherever it goes. */
		tui_copy_mouse(wp, m, (int)m->x - (int)wp->r.x,
		    (int)m->y - (int)wp->r.y);
		return;
	}
	if ((num = tui_layout_pane_at(t->c->layout, m->x, m->y)) == -1 ||
	    (wp = tui_pane_by_num(t, num)) == NULL)
		return;
	if (m->type == TUI_MOUSE_PRESS &&
	    num != tui_layout_focus(t->c->layout)) {
		tui_layout_set_focus(t->c->layout, num);
		tui_redraw(t);
	}
	if (m->y < wp->r.y)
		return;           /* the pane's title */
	in.mouse.x = m->x - wp->r.x;
	in.mouse.y = m->y - wp->r.y;
	tui_pane_input(wp, &in);
}

static void
tui_paste(struct tui *t, const char *data, size_t len)
{
	struct tui_pane *wp = tui_focus_pane(t);
	struct tui_input in = { .type = TUI_INPUT_PASTE, .paste = data,
	    .pastelen = len };

	/* A paste at the command prompt is not for the agent either. */
	if (t->c->dialog != TUI_DIALOG_NONE || t->c->prompt_focus ||
	    t->c->disk_focus || t->c->cmdline.active || wp == NULL ||
	    tui_view_top(t) != TUI_VIEW_PANES)
		return;
	tui_pane_input(wp, &in);
}

static void
tui_dash_input(void *arg, const struct tui_input *in)
{
	struct tui_client *c = arg;
	struct tui *t = c->t;

	/*
	 * Detached or suspended by a key earlier in the same read: the rest
	 * is not for it (typed after prefix C-z, it is the shell's).
	 */
	if (c->scr == NULL || c->suspended)
		return;
	tui_client_active(t, c);
	tui_client_set(t, c);
	switch (in->type) {
	case TUI_INPUT_KEY:
		tui_key(t, &in->key);
		break;
	case TUI_INPUT_MOUSE:
		tui_mouse(t, &in->mouse);
		break;
	case TUI_INPUT_PASTE:
		tui_paste(t, in->paste, in->pastelen);
		break;
	}
}

static void
tui_escape_cb(evutil_socket_t fd, short what, void *arg)
{
	struct tui_client *c = arg;

	tui_keys_flush(c->keys, tui_dash_input, c);
}

/* A client's terminal went away (or its user detached): the sessions keep running. */
static void
tui_detached(struct tui_client *c, const char *why)
{
	struct tui *t = c->t;

	tui_detach(t, c);
	if (t->detach_cb != NULL)
		t->detach_cb(t->detach_arg, c, why);
}

static void
tui_term_cb(evutil_socket_t fd, short what, void *arg)
{
	struct tui_client *c = arg;
	struct tui *t = c->t;
	int64_t ms = t->cf->ui.escape_time;
	struct timeval tv = { (time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000 };
	char buf[8192];
	ssize_t n;

	n = read(fd, buf, sizeof buf);
	if (n == 0 || (n == -1 && errno != EAGAIN && errno != EINTR)) {
		tui_detached(c, "its terminal went away");
		return;
	}
	if (n > 0 &&
	    tui_keys_parse(c->keys, buf, (size_t)n, tui_dash_input, c) &&
	    c->scr != NULL && !c->suspended)
		evtimer_add(c->esc_ev, &tv);
}

static void
tui_signal_cb(evutil_socket_t fd, short what, void *arg)
{
	struct tui *t = arg;

	t->exit_code = 128 + (int)fd;
	tui_quit(t);
}

static void
tui_events(struct tui *t)
{
	t->reap_ev = evtimer_new(t->base, tui_reap_cb, t);
	t->quit_ev = evtimer_new(t->base, tui_quit_cb, t);
	t->term_ev = evsignal_new(t->base, SIGTERM, tui_signal_cb, t);
	t->int_ev = evsignal_new(t->base, SIGINT, tui_signal_cb, t);
	if (t->reap_ev == NULL || t->quit_ev == NULL ||
	    t->term_ev == NULL || t->int_ev == NULL)
		fatalx("cannot create the dashboard's events");
	event_add(t->term_ev, NULL);
	event_add(t->int_ev, NULL);
}

/* A client's environment may hold its secrets: wiped, not just freed. */
static void
tui_env_free(struct tui_client *c)
{
	size_t i;

	for (i = 0; i < c->env.n; i++)
		explicit_bzero(c->env.v[i], strlen(c->env.v[i]));
	strv_free(&c->env);
	c->has_env = false;
}

/* A view with no terminal yet, for a client attaching. */
static struct tui_client *
tui_client_new(struct tui *t)
{
	struct tui_client *c = xcalloc(1, sizeof *c);

	c->t = t;
	strv_init(&c->env);
	buf_init(&c->cmdline.text);
	c->km.prefix_key = t->cf->ui.prefix_key;
	c->scope_choice = -1;
	c->req_follow = true;
	buf_init(&c->req_filter.text);
	strv_init(&c->detail_lines);
	c->sx = 80;
	c->sy = 24;
	c->keys = tui_keys_create();
	c->frames = tui_frames_create(t->base, tui_draw, c);
	c->esc_ev = evtimer_new(t->base, tui_escape_cb, c);
	c->msg_ev = evtimer_new(t->base, tui_message_expire, c);
	if (c->esc_ev == NULL || c->msg_ev == NULL)
		fatalx("cannot create a client's events");
	t->clients = xreallocarray(t->clients, t->nclients + 1,
	    sizeof *t->clients);
	t->clients[t->nclients++] = c;
	return c;
}

static void
tui_client_free(struct tui_client *c)
{
	tui_history_client_gone(c->t, c);
	tui_dialog_free(c);
	tui_pane_view_drop(c, NULL);
	tui_history_view_free(c);
	buf_free(&c->req_filter.text);
	if (c->input_ev != NULL)
		event_free(c->input_ev);
	tui_screen_close(c->scr);
	tui_env_free(c);
	session_scopes_free(c->scopes, c->nscopes);
	tui_text_free(c->text);
	tui_layout_free(c->layout);
	tui_keys_free(c->keys);
	tui_frames_free(c->frames);
	event_free(c->esc_ev);
	event_free(c->msg_ev);
	free(c->message);
	buf_free(&c->cmdline.text);
	free(c->cmdline_hint);
	free(c);
}

/* Clients that detached beside others go once their callbacks are over. */
static void
tui_clients_reap(struct tui *t)
{
	size_t i;

	for (i = 0; i < t->ngone; i++)
		tui_client_free(t->gone[i]);
	free(t->gone);
	t->gone = NULL;
	t->ngone = 0;
}

void
tui_free(struct tui *t)
{
	size_t i;

	if (t == NULL)
		return;
	tui_detach_all(t);
	log_set_hook(NULL, NULL);
	for (i = 0; i < t->npanes; i++)
		tui_pane_free(t->panes[i]);
	free(t->panes);
	tui_prompt_free_all(t);
	tui_disk_free_all(t);
	tui_requests_free_all(t);
	tui_history_free(t);
	tui_status_free(t);
	tui_clients_reap(t);
	for (i = 0; i < t->nclients; i++)
		tui_client_free(t->clients[i]);
	free(t->clients);
	event_free(t->reap_ev);
	event_free(t->quit_ev);
	event_free(t->term_ev);
	event_free(t->int_ev);
	free(t->ran);
	buf_free(&t->paste);
	free(t);
}

char *
tui_left_to_review(struct tui *t)
{
	struct buf ids;
	size_t i, pending = 0;
	int64_t first = 0;
	char *s = NULL;

	buf_init(&ids);
	for (i = 0; i < t->nran; i++) {
		if (session_record_confdiff_pending(t->ctx, t->ran[i]) <= 0)
			continue;
		if (pending++ == 0)
			first = t->ran[i];
		buf_printf(&ids, "%s%lld", pending > 1 ? ", " : "",
		    (long long)t->ran[i]);
	}
	if (pending > 0)
		s = xprintf("%zu session%s left config changes to review "
		    "(%s): see them with 'agentmux confdiff %lld', keep them "
		    "with --apply or drop them with --discard\n", pending,
		    pending == 1 ? "" : "s", ids.data, (long long)first);
	buf_free(&ids);
	return s;
}

/* Logged warnings would scribble over the screen: they go to the status bar. */
static void
tui_log_hook(enum log_level level, const char *msg, void *arg)
{
	struct tui *t = arg;

	if (level <= LOG_LEVEL_WARN)
		tui_message(t, level == LOG_LEVEL_ERROR, "%s", msg);
}

void
tui_notice(struct tui *t, bool alert, const char *msg)
{
	tui_message(t, alert, "%s", msg);
}

void
tui_notice_client(struct tui *t, struct tui_client *c, bool alert,
    const char *msg)
{
	tui_client_message(c, alert, xstrdup(msg));
}

struct tui *
tui_create(struct event_base *base, struct session_ctx *ctx)
{
	struct tui *t = xcalloc(1, sizeof *t);

	t->base = base;
	t->ctx = ctx;
	t->cf = session_ctx_config(ctx);
	tui_events(t);
	/* The view the first client takes. */
	t->c = t->latest = tui_client_new(t);
	log_set_hook(tui_log_hook, t);
	return t;
}

void
tui_set_reload_cb(struct tui *t, int (*cb)(void *, char **, char **),
    void *arg)
{
	t->reload_cb = cb;
	t->reload_arg = arg;
}

/* prefix R: the server re-reads its config file, and the answer is shown. */
static void
tui_reload(struct tui *t)
{
	char *text = NULL, *cause = NULL;

	if (t->reload_cb == NULL) {
		tui_reply(t, true, "no config to reload here");
		return;
	}
	if (t->reload_cb(t->reload_arg, &text, &cause) == -1)
		tui_reply(t, true, "%s", cause);
	else
		tui_reply(t, false, "%s", text);
	free(text);
	free(cause);
}

void
tui_set_change_cb(struct tui *t, void (*cb)(void *), void *arg)
{
	t->change_cb = cb;
	t->change_arg = arg;
}

void
tui_set_stuck_cb(struct tui *t, void (*cb)(void *), void *arg)
{
	t->stuck_cb = cb;
	t->stuck_arg = arg;
}

/* A terminal's bytes started to wait: whoever detaches stuck ones looks from now on. */
static void
tui_stuck_cb(void *arg)
{
	struct tui *t = arg;

	if (t->stuck_cb != NULL)
		t->stuck_cb(t->stuck_arg);
}

void
tui_set_detach_cb(struct tui *t,
    void (*cb)(void *, struct tui_client *, const char *), void *arg)
{
	t->detach_cb = cb;
	t->detach_arg = arg;
}

void
tui_set_config(struct tui *t, const struct config *cf)
{
	t->cf = cf;
	tui_redraw(t);
}

void
tui_set_env(struct tui *t, struct tui_client *c, char *const *env)
{
	tui_env_free(c);
	strv_init(&c->env);
	c->has_env = env != NULL;
	for (; env != NULL && *env != NULL; env++)
		strv_add(&c->env, *env);
}

int64_t
tui_start(struct tui *t, const struct tui_opts *opts, bool focus,
    char **cause)
{
	struct tui_pane *wp;

	struct tui_client *c = t->c;
	size_t i;

	/* Its sessions are being closed: one started now would be killed. */
	if (t->quitting) {
		*cause = xstrdup("the server is ending: its sessions are being "
		    "closed; start this one once it has ended");
		return -1;
	}
	if ((wp = tui_pane_start(t, opts, cause)) == NULL)
		return -1;
	/* The view that asked shows it; one that shows nothing does too. */
	for (i = 0; i < t->nclients; i++) {
		if (t->clients[i] != c && t->clients[i]->layout == NULL) {
			t->clients[i]->layout = tui_layout_create(wp->num);
			t->clients[i]->relayout = true;
		}
	}
	if (focus || c->layout == NULL)
		tui_select(t, wp->num);
	else
		tui_redraw(t);
	if (wp->ask_sharer != 0)
		tui_share_ask(t, wp, wp->ask_sharer);
	return wp->id;
}

int
tui_focus(struct tui *t, int64_t id, char **cause)
{
	size_t i;

	for (i = 0; i < t->npanes; i++) {
		if (t->panes[i]->id == id) {
			tui_select(t, t->panes[i]->num);
			return 0;
		}
	}
	*cause = xprintf("no session %lld here; 'agentmux ls' lists them",
	    (long long)id);
	return -1;
}

void
tui_end(struct tui *t)
{
	tui_quit(t);
}

/* Everything on client C's new screen is drawn afresh, at its size. */
static void
tui_redraw_all(struct tui *t, struct tui_client *c)
{
	size_t i;

	tui_screen_size(c->scr, &c->sx, &c->sy);
	for (i = 0; i < t->npanes; i++)
		t->panes[i]->redraw = true;
	tui_screen_invalidate(c->scr);
	c->relayout = true;
	tui_redraw(t);
}

/*
 * The view a terminal attaching takes: the one the last client to
 * detach left (its layout, focus and panels as they were), else a new
 * one showing what the most recently active client focuses.
 */
static struct tui_client *
tui_client_for_attach(struct tui *t)
{
	struct tui_client *c;
	struct tui_pane *focus;
	size_t i;

	for (i = 0; i < t->nclients; i++) {
		if (t->clients[i]->scr == NULL)
			return t->clients[i];
	}
	c = tui_client_new(t);
	t->c = t->latest;
	if ((focus = tui_focus_pane(t)) == NULL && t->npanes > 0)
		focus = t->panes[0];
	if (focus != NULL)
		c->layout = tui_layout_create(focus->num);
	return c;
}

struct tui_client *
tui_attach(struct tui *t, int infd, int outfd, const char *term, bool color,
    char **cause)
{
	struct tui_screen *scr;
	struct tui_client *c;
	int fd;

	if ((scr = tui_screen_open_fds(t->base, infd, outfd, term,
	    color && t->cf->ui.color, cause)) == NULL)
		return NULL;
	c = tui_client_for_attach(t);
	c->scr = scr;
	tui_screen_set_stuck_cb(scr, tui_stuck_cb, t);
	fd = tui_screen_infd(c->scr);
	util_set_nonblock(fd);
	c->input_ev = event_new(t->base, fd, EV_READ | EV_PERSIST, tui_term_cb,
	    c);
	if (c->input_ev == NULL)
		fatalx("cannot create the dashboard's input event");
	event_add(c->input_ev, NULL);
	/* Attaching is activity: the panes take this terminal's size. */
	t->c = t->latest = c;
	tui_redraw_all(t, c);
	tui_status_live_check(t);
	return c;
}

/* Another attached client (else any other) takes C's place as the current and the latest. */
static struct tui_client *
tui_client_other(struct tui *t, struct tui_client *c)
{
	struct tui_client *other = NULL;
	size_t i;

	for (i = 0; i < t->nclients; i++) {
		if (t->clients[i] == c)
			continue;
		if (other == NULL ||
		    (other->scr == NULL && t->clients[i]->scr != NULL))
			other = t->clients[i];
	}
	return other;
}

void
tui_detach(struct tui *t, struct tui_client *c)
{
	struct tui_client *other;
	struct timeval tv = { 0, 0 };
	size_t i;

	if (c == NULL || c->scr == NULL)
		return;
	event_free(c->input_ev);
	c->input_ev = NULL;
	evtimer_del(c->esc_ev);
	tui_screen_close(c->scr);
	c->scr = NULL;
	/* A view kept for the next client is drawn for it, suspended or not. */
	c->suspended = false;
	if (c->prompt_focus)
		tui_prompt_unfocus(t, c);
	/* The last view is kept for the next client, as it was. */
	if ((other = tui_client_other(t, c)) == NULL)
		return;
	for (i = 0; i < t->nclients; i++) {
		if (t->clients[i] == c) {
			t->clients[i] = t->clients[--t->nclients];
			break;
		}
	}
	t->gone = xreallocarray(t->gone, t->ngone + 1, sizeof *t->gone);
	t->gone[t->ngone++] = c;
	evtimer_add(t->reap_ev, &tv);
	if (t->c == c)
		t->c = other;
	if (t->placed == c)
		t->placed = NULL;
	if (t->latest == c) {
		/* The panes take the size of a client still there. */
		t->latest = other;
		other->relayout = true;
		tui_redraw(t);
	}
}

void
tui_detach_all(struct tui *t)
{
	size_t i;

	/* Each one detached may leave the list: look again from the start. */
	while (tui_attached(t)) {
		for (i = 0; i < t->nclients; i++) {
			if (t->clients[i]->scr != NULL) {
				tui_detach(t, t->clients[i]);
				break;
			}
		}
	}
}

bool
tui_attached(const struct tui *t)
{
	size_t i;

	for (i = 0; i < t->nclients; i++) {
		if (t->clients[i]->scr != NULL)
			return true;
	}
	return false;
}

int64_t
tui_stuck_us(const struct tui *t, const struct tui_client *c)
{
	(void)t;
	return c != NULL && c->scr != NULL && !c->suspended ?
	    tui_screen_stuck_us(c->scr) : 0;
}

void
tui_resize(struct tui *t, struct tui_client *c)
{
	if (c->scr == NULL || c->suspended)
		return;           /* a suspended one reads its size at resume */
	tui_screen_resize(c->scr);
	tui_screen_size(c->scr, &c->sx, &c->sy);
	c->relayout = true;
	/* A resize is activity: the panes take the new size. */
	t->latest = c;
	tui_redraw(t);
}

size_t
tui_sessions_running(const struct tui *t)
{
	return tui_running(t);
}

size_t
tui_sessions(const struct tui *t)
{
	return t->npanes;
}

int
tui_exit_code(const struct tui *t)
{
	return t->exit_code;
}

void
tui_set_suspend_cb(struct tui *t,
    int (*cb)(void *, struct tui_client *, char **), void *arg)
{
	t->suspend_cb = cb;
	t->suspend_arg = arg;
}

/* prefix C-z: the server suspends this client, or says why it cannot. */
static void
tui_suspend_key(struct tui *t)
{
	char *cause = NULL;

	if (t->suspend_cb == NULL) {
		tui_reply(t, true, "this dashboard cannot be suspended");
		return;
	}
	if (t->suspend_cb(t->suspend_arg, t->c, &cause) == -1) {
		tui_reply(t, true, "%s", cause);
		free(cause);
	}
}

/* An attached client other than C that is not suspended, or NULL. */
static struct tui_client *
tui_client_awake(struct tui *t, struct tui_client *c)
{
	size_t i;

	for (i = 0; i < t->nclients; i++) {
		if (t->clients[i] != c && t->clients[i]->scr != NULL &&
		    !t->clients[i]->suspended)
			return t->clients[i];
	}
	return NULL;
}

bool
tui_suspend(struct tui *t, struct tui_client *c)
{
	struct tui_client *other;

	if (c->scr == NULL || c->suspended)
		return false;
	/* The shell reads the terminal now: not a key of it is ours. */
	event_del(c->input_ev);
	evtimer_del(c->esc_ev);
	c->km.prefixed = false;
	if (c->prompt_focus)
		tui_prompt_unfocus(t, c);
	tui_screen_suspend(c->scr);
	c->suspended = true;
	/* The panes take the size of a client still drawn on. */
	if (t->latest == c && (other = tui_client_awake(t, c)) != NULL) {
		t->latest = other;
		other->relayout = true;
		tui_redraw(t);
	}
	return true;
}

void
tui_resume(struct tui *t, struct tui_client *c)
{
	if (c->scr == NULL || !c->suspended)
		return;
	c->suspended = false;
	tui_screen_resume(c->scr);
	util_set_nonblock(tui_screen_infd(c->scr));
	event_add(c->input_ev, NULL);
	/* Coming back is activity: the panes take this terminal's size. */
	t->c = t->latest = c;
	tui_redraw_all(t, c);
	tui_status_live_check(t);
}
