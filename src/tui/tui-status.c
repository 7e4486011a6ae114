/* The status bar: project, sessions and their states, those that need you, prompts waiting, requests denied, unsafe flags in red; telling the user a session needs them. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "core/core.h"
#include "session/session.h"
#include "tui-int.h"

/* The focused session's project (its last part), else the first's. */
static const char *
tui_status_project(const struct tui *t)
{
	struct tui_pane *wp = tui_focus_pane((struct tui *)t);
	const char *p, *slash;

	if (wp == NULL)
		wp = t->npanes > 0 ? t->panes[0] : NULL;
	if (wp == NULL || wp->project == NULL)
		return "agentmux";
	p = wp->project;
	slash = strrchr(p, '/');
	return slash != NULL && slash[1] != '\0' ? slash + 1 : p;
}

/* Notifications closer together than this are dropped (one at a time is enough to look). */
#define TUI_STATUS_NOTIFY_GAP_US 2000000

/* A notification command gets this long before it is killed. */
#define TUI_STATUS_NOTIFY_TIMEOUT 10

bool
tui_status_needs(const struct tui_pane *wp)
{
	enum session_state st;

	if (wp->s == NULL || wp->exited)
		return false;
	st = session_state(wp->s);
	return st == SESSION_NEEDS_YOU || st == SESSION_PROMPT;
}

/* How many sessions need the user. */
static size_t
tui_status_count_needs(const struct tui *t)
{
	size_t i, n = 0;

	for (i = 0; i < t->npanes; i++) {
		if (tui_status_needs(t->panes[i]))
			n++;
	}
	return n;
}

static void
tui_status_notify_done(struct proc *p, void *arg)
{
	struct tui *t = arg;

	if (proc_cause(p) != NULL)
		tui_message(t, true, "[ui] notify: %s", proc_cause(p));
	else if (proc_status(p) != 0)
		tui_message(t, true, "[ui] notify command failed (status %d)",
		    proc_status(p));
	proc_free(p);
	t->notify_proc = NULL;
}

/* [ui] notify = command ARGV...: the message is its last argument, never a shell's. */
static void
tui_status_notify_command(struct tui *t, const char *msg)
{
	const struct strv *a = &t->cf->ui.notify_argv;
	struct proc_opts po = { .timeout = TUI_STATUS_NOTIFY_TIMEOUT,
	    .in_fd = -1, .out_fd = -1, .umask = -1 };
	struct strv argv;
	char *cause = NULL;
	size_t i;

	if (t->notify_proc != NULL)
		return;
	strv_init(&argv);
	for (i = 0; i < a->n; i++)
		strv_add(&argv, a->v[i]);
	strv_add(&argv, msg);
	po.argv = argv.v;
	t->notify_proc = proc_start(t->base, &po, tui_status_notify_done, t,
	    &cause);
	if (t->notify_proc == NULL) {
		tui_message(t, true, "[ui] notify: %s", cause);
		free(cause);
	}
	strv_free(&argv);
}

/* Writes LEN bytes of DATA to every attached client's terminal. */
static void
tui_status_write_all(struct tui *t, const char *data, size_t len)
{
	size_t i;

	for (i = 0; i < t->nclients; i++) {
		if (t->clients[i]->scr != NULL)
			tui_screen_write(t->clients[i]->scr, data, len);
	}
}

/* Whether an attached client shows WP focused, nothing over it: its user is looking at it. */
static bool
tui_status_looking(struct tui *t, const struct tui_pane *wp)
{
	struct tui_client *cur = t->c;
	bool looking = false;
	size_t i;

	for (i = 0; i < t->nclients && !looking; i++) {
		t->c = t->clients[i];
		/* A suspended client's user has put the dashboard away. */
		looking = t->c->scr != NULL && !t->c->suspended &&
		    wp == tui_focus_pane(t) &&
		    tui_view_top(t) == TUI_VIEW_PANES;
	}
	t->c = cur;
	return looking;
}

/* OSC 9 (iTerm2, kitty, WezTerm, ...) and OSC 777 (urxvt, foot, Ghostty, VTE): MSG has no control character. */
static void
tui_status_notify_osc(struct tui *t, const char *msg)
{
	struct buf b;
	const char *p;

	buf_init(&b);
	buf_adds(&b, "\033]9;");
	buf_adds(&b, msg);
	buf_adds(&b, "\a\033]777;notify;agentmux;");
	/* A ';' would end OSC 777's body field early. */
	for (p = msg; *p != '\0'; p++)
		buf_add(&b, *p == ';' ? "," : p, 1);
	buf_adds(&b, "\a");
	/* raw: two OSCs around quoted text, which has no control byte */
	tui_status_write_all(t, b.data, b.len);
	buf_free(&b);
}

void
tui_status_notify(struct tui *t, struct tui_pane *wp, enum session_state st)
{
	int64_t now = util_mono_us();
	struct buf b;
	char *raw;

	/* A user is looking at it (in a client attached). */
	if (tui_status_looking(t, wp))
		return;
	if (t->notify_last_us != 0 &&
	    now - t->notify_last_us < TUI_STATUS_NOTIFY_GAP_US)
		return;
	t->notify_last_us = now;
	raw = xprintf("agentmux: session %lld (%s) %s", (long long)wp->id,
	    wp->agent, st == SESSION_PROMPT ? "has a prompt" : "needs you");
	buf_init(&b);
	quote_line_add(&b, raw, strlen(raw));
	buf_adds(&b, "");
	free(raw);
	switch (t->cf->ui.notify) {
	case CONFIG_NOTIFY_OSC:
		tui_status_notify_osc(t, b.data);
		break;
	case CONFIG_NOTIFY_COMMAND:
		tui_status_notify_command(t, b.data);
		break;
	default:
		/* raw: the bell, nothing of the session's */
		tui_status_write_all(t, "\a", 1);
		break;
	}
	buf_free(&b);
}

/* One session's line of the sessions view. */
static void
tui_status_cost_line(struct buf *b, struct tui_pane *wp)
{
	struct session_costs c;
	char state[32], mem[16], up[16], down[16], wr[16] = "-";

	tui_pane_state(wp, state, sizeof state);
	if (wp->s == NULL) {
		buf_printf(b, "%4lld  %-10s %-10s\n", (long long)wp->id,
		    wp->agent, state);
		return;
	}
	session_costs(wp->s, &c);
	util_fmt_size(mem, sizeof mem, c.memory);
	util_fmt_size(up, sizeof up, c.bytes_up);
	util_fmt_size(down, sizeof down, c.bytes_down);
	if (c.written >= 0)
		util_fmt_size(wr, sizeof wr, c.written);
	buf_printf(b, "%4lld  %-10s %-10s %7.1fs %4.0f%% %7s %5d %7s "
	    "%6lld %6lld %7s %7s %5lld\n", (long long)wp->id, wp->agent, state,
	    c.cpu_sec, c.cpu_share * 100.0, mem, c.procs, wr,
	    (long long)c.allowed, (long long)c.denied, up, down,
	    (long long)c.turns);
}

/* The sessions view's text: a line per session, then what the columns mean. */
static void
tui_status_sessions_text(struct tui *t, struct buf *b)
{
	size_t i;

	buf_printf(b, "%4s  %-10s %-10s %8s %5s %7s %5s %7s %6s %6s %7s %7s "
	    "%5s\n", "ID", "AGENT", "STATE", "CPU", "SHARE", "MEMORY", "PROCS",
	    "WRITTEN", "ALLOW", "DENY", "UP", "DOWN", "TURNS");
	for (i = 0; i < t->npanes; i++)
		tui_status_cost_line(b, t->panes[i]);
	buf_adds(b, "\nCPU: time of its processes, live and ended; SHARE: of "
	    "one CPU since it started;\nMEMORY: resident, of its live "
	    "processes; WRITTEN: to disk, as its disk watch counted it (-: "
	    "none);\nALLOW, DENY, UP, DOWN: requests and body bytes through "
	    "its proxy; TURNS: model-API answers.\nRead anew each second "
	    "while this view is open.\n");
}

/* Whether client C shows a sessions view now (not covered by another view). */
static bool
tui_status_live_shown(const struct tui_client *c)
{
	return c->scr != NULL && !c->suspended && c->text != NULL &&
	    c->text->live &&
	    c->nviews > 0 && c->views[c->nviews - 1] == TUI_VIEW_TEXT;
}

/* TX's lines are read anew; where it is scrolled to stays. */
static void
tui_status_live_fill(struct tui *t, struct tui_text *tx)
{
	struct buf b;
	const char *line, *nl;

	buf_init(&b);
	tui_status_sessions_text(t, &b);
	strv_free(&tx->lines);
	strv_init(&tx->lines);
	for (line = b.data; *line != '\0'; line = nl + 1) {
		if ((nl = strchr(line, '\n')) == NULL)
			break;
		strv_addf(&tx->lines, "%.*s", (int)(nl - line), line);
	}
	buf_free(&b);
}

static void tui_status_live_arm(struct tui *);

/*
 * Each second while some client shows a sessions view: its figures are
 * read anew. Nothing runs once none does.
 */
static void
tui_status_live_cb(evutil_socket_t fd, short what, void *arg)
{
	struct tui *t = arg;
	bool any = false;
	size_t i;

	(void)fd;
	(void)what;
	for (i = 0; i < t->nclients; i++) {
		if (!tui_status_live_shown(t->clients[i]))
			continue;
		tui_status_live_fill(t, t->clients[i]->text);
		any = true;
	}
	if (!any)
		return;
	tui_redraw(t);
	tui_status_live_arm(t);
}

static void
tui_status_live_arm(struct tui *t)
{
	struct timeval tv = { 1, 0 };

	if (t->live_ev == NULL &&
	    (t->live_ev = evtimer_new(t->base, tui_status_live_cb, t)) == NULL)
		fatalx("cannot create the sessions view's timer");
	if (!evtimer_pending(t->live_ev, NULL))
		evtimer_add(t->live_ev, &tv);
}

/*
 * After a client comes back to a sessions view (attached with it kept,
 * resumed, or the view over it closed): its figures are read anew again.
 */
void
tui_status_live_check(struct tui *t)
{
	size_t i;

	for (i = 0; i < t->nclients; i++) {
		if (tui_status_live_shown(t->clients[i])) {
			tui_status_live_arm(t);
			return;
		}
	}
}

void
tui_status_sessions(struct tui *t)
{
	struct buf b;

	buf_init(&b);
	tui_status_sessions_text(t, &b);
	tui_text_show(t, "sessions", b.data, false);
	buf_free(&b);
	t->c->text->live = true;
	tui_status_live_arm(t);
}

void
tui_status_free(struct tui *t)
{
	if (t->live_ev != NULL)
		event_free(t->live_ev);
	t->live_ev = NULL;
	proc_free(t->notify_proc);
	t->notify_proc = NULL;
}

/* One session's label: "2:claude working", the focused one marked (Z: zoomed), ! a bell not seen. */
static char *
tui_status_label(struct tui *t, struct tui_pane *wp, bool focused)
{
	char state[32];
	bool zoomed = focused && t->c->layout != NULL &&
	    tui_layout_zoomed(t->c->layout);

	return xprintf("%lld:%s%s %s%s", (long long)wp->id, wp->agent,
	    focused ? (zoomed ? "*Z" : "*") : "", tui_pane_state(wp, state,
	    sizeof state), wp->bells > 0 && !focused ? " !" : "");
}

/* The columns one session's entry takes, its trailing blank included. */
static unsigned
tui_status_pane_width(struct tui *t, struct tui_pane *wp, bool focused)
{
	char *label = tui_status_label(t, wp, focused), *unsafe;
	unsigned w = tui_screen_width(label) + 1;

	free(label);
	if (wp->unsafe != NULL) {
		unsafe = xprintf(" UNSAFE:%s", wp->unsafe);
		w += tui_screen_width(unsafe);
		free(unsafe);
	}
	if (wp->s != NULL && session_budget_reached(wp->s))
		w += 7;
	return w;
}

/* One session's entry, drawn at X up to END; returns the next column. */
static unsigned
tui_status_pane(struct tui *t, struct tui_pane *wp, bool focused, unsigned x,
    unsigned y, unsigned end)
{
	enum tui_style style = focused ? TUI_STYLE_BAR_FOCUS : TUI_STYLE_BAR;
	char *label;

	if (wp->unsafe != NULL || wp->alert || (wp->exited && wp->status != 0))
		style = TUI_STYLE_ALERT;
	else if (tui_status_needs(wp))
		style = TUI_STYLE_NEEDS;
	if (x >= end)
		return x;
	label = tui_status_label(t, wp, focused);
	x += tui_screen_print(t->c->scr, x, y, end - x, style, label);
	free(label);
	if (wp->unsafe != NULL && x < end)
		x += tui_screen_printf(t->c->scr, x, y, end - x,
		    TUI_STYLE_ALERT, " UNSAFE:%s", wp->unsafe);
	/* What it does is no longer all recorded: said for as long as it runs. */
	if (wp->s != NULL && session_budget_reached(wp->s) && x < end)
		x += tui_screen_print(t->c->scr, x, y, end - x, TUI_STYLE_WARN,
		    " BUDGET");
	if (x < end)
		x += tui_screen_print(t->c->scr, x, y, end - x, TUI_STYLE_BAR,
		    " ");
	return x;
}

/*
 * The first entry shown: 0 if all fit in AVAIL columns, else one that
 * keeps the focused entry in view, with room for the marks ("< ", "> ").
 */
static size_t
tui_status_first(struct tui *t, const unsigned *w, size_t focus,
    unsigned avail)
{
	size_t first = 0, i;
	unsigned sum = 0;

	for (i = 0; i < t->npanes; i++)
		sum += w[i];
	if (sum <= avail || focus >= t->npanes)
		return 0;
	for (;;) {
		sum = first > 0 ? 2 : 0;
		for (i = first; i <= focus; i++)
			sum += w[i];
		if (focus + 1 < t->npanes)
			sum += 2;
		if (sum <= avail || first == focus)
			return first;
		first++;
	}
}

/* The sessions' entries from X to END, remembered for clicks. */
static unsigned
tui_status_tabs(struct tui *t, unsigned x, unsigned y, unsigned end)
{
	struct tui_pane *focus = tui_focus_pane(t);
	unsigned *w = xcalloc(t->npanes + 1, sizeof *w), x0;
	size_t i, at = t->npanes, first;

	for (i = 0; i < t->npanes; i++) {
		w[i] = tui_status_pane_width(t, t->panes[i], t->panes[i] ==
		    focus);
		if (t->panes[i] == focus)
			at = i;
	}
	first = tui_status_first(t, w, at, end > x ? end - x : 0);
	t->c->ntabs = 0;
	if (first > 0 && x + 2 <= end)
		x += tui_screen_print(t->c->scr, x, y, end - x, TUI_STYLE_WARN,
		    "< ");
	for (i = first; i < t->npanes && x < end; i++) {
		/* Whole entries only, with room for the mark of those after. */
		if (i != at && x + w[i] + (i + 1 < t->npanes ? 2 : 0) > end)
			break;
		x0 = x;
		x = tui_status_pane(t, t->panes[i], t->panes[i] == focus, x, y,
		    end);
		if (t->c->ntabs < nitems(t->c->tabs)) {
			t->c->tabs[t->c->ntabs].x0 = x0;
			t->c->tabs[t->c->ntabs].x1 = x;
			t->c->tabs[t->c->ntabs++].num = t->panes[i]->num;
		}
	}
	if (i < t->npanes && x < end)
		x += tui_screen_print(t->c->scr, x, y, end - x, TUI_STYLE_WARN,
		    "> ");
	free(w);
	return x;
}

int
tui_status_tab_at(const struct tui *t, unsigned x)
{
	size_t i;

	for (i = 0; i < t->c->ntabs; i++) {
		if (x >= t->c->tabs[i].x0 && x < t->c->tabs[i].x1)
			return t->c->tabs[i].num;
	}
	return -1;
}

void
tui_status_draw(struct tui *t, unsigned y)
{
	struct tui_rect r = { 0, y, t->c->sx, 1 };
	char right[64] = "";
	size_t needs = tui_status_count_needs(t);
	unsigned x, rw;

	tui_screen_fill(t->c->scr, &r, TUI_STYLE_BAR);
	x = tui_screen_printf(t->c->scr, 0, y, t->c->sx, TUI_STYLE_BAR, "[%s] ",
	    tui_status_project(t));
	/* The counts on the right stay: the entries get what is left. */
	if (t->nprompts > 0)
		snprintf(right, sizeof right, " prompts %zu ", t->nprompts);
	rw = (unsigned)strlen(right);
	if (needs > 0)
		rw += (unsigned)snprintf(NULL, 0, " needs you %zu ", needs);
	if (t->denied > 0)
		rw += (unsigned)snprintf(NULL, 0, " denied %lld ",
		    (long long)t->denied);
	x = tui_status_tabs(t, x, y, t->c->sx > x + rw ? t->c->sx - rw : x);
	if (needs > 0 && x < t->c->sx)
		x += tui_screen_printf(t->c->scr, x, y, t->c->sx - x,
		    TUI_STYLE_NEEDS, " needs you %zu ", needs);
	if (t->nprompts > 0 && x < t->c->sx)
		x += tui_screen_printf(t->c->scr, x, y, t->c->sx - x,
		    TUI_STYLE_WARN, " prompts %zu ", t->nprompts);
	if (t->denied > 0 && x < t->c->sx)
		x += tui_screen_printf(t->c->scr, x, y, t->c->sx - x,
		    TUI_STYLE_ALERT, " denied %lld ", (long long)t->denied);
	if (t->c->message != NULL && x + 2 < t->c->sx)
		tui_screen_printf(t->c->scr, x + 1, y, t->c->sx - x - 1,
		    t->c->message_alert ? TUI_STYLE_ALERT : TUI_STYLE_BAR,
		    " %s ", t->c->message);
	else if (x + 12 < t->c->sx)
		tui_screen_printf(t->c->scr, t->c->sx - 11, y, 11,
		    TUI_STYLE_BAR, "%s ? help", t->cf->ui.prefix);
}
