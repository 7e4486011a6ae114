/* One session in a pane: its session's events, its terminal, its size, drawing it, its scrollback. */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "session/session.h"
#include "tui-int.h"

/* Lines one turn of the mouse wheel scrolls. */
#define TUI_WHEEL_LINES 3

/* The session's pane took output: bells are counted for the tab, and it is drawn. */
static void
tui_pane_changed(void *arg, struct session *s)
{
	struct tui_pane *wp = arg;

	if (pane_bells(wp->pane) != wp->bells_seen) {
		wp->bells = pane_bells(wp->pane) - wp->bells_seen;
		tui_redraw(wp->t);
	}
	tui_redraw_pane(wp->t, wp);
}

static void
tui_pane_exited(void *arg, struct session *s, int status)
{
	struct tui_pane *wp = arg;

	wp->exited = true;
	wp->status = status;
	wp->redraw = true;
	tui_prompt_drop_pane(wp->t, wp);
	tui_disk_drop_pane(wp->t, wp);
	if (wp->t->change_cb != NULL)
		wp->t->change_cb(wp->t->change_arg);
	if (wp->closing) {
		/* Closed by the user: nothing to look at, it goes (its dialogs with it). */
		tui_message(wp->t, false, "session %lld (%s) closed",
		    (long long)wp->id, wp->agent);
		tui_pane_closed(wp->t);
		return;
	}
	tui_message(wp->t, status != 0, "session %lld (%s) exited with status "
	    "%d", (long long)wp->id, wp->agent, status);
	/* The pane stays, a dialog about it goes (last: its note is the one read). */
	tui_dialog_drop_pane(wp->t, wp, "ended");
}

/* The session's command runs, or it did not start: then the pane says why, as an ended one. */
static void
tui_pane_started(void *arg, struct session *s, bool ok, const char *cause)
{
	struct tui_pane *wp = arg;

	wp->redraw = true;
	tui_redraw(wp->t);
	tui_session_changed(wp->t, wp->id);
	if (ok)
		return;
	wp->exited = true;
	wp->status = 127;
	free(wp->start_failed);
	wp->start_failed = xstrdup(cause);
	tui_prompt_drop_pane(wp->t, wp);
	tui_disk_drop_pane(wp->t, wp);
	if (wp->t->change_cb != NULL)
		wp->t->change_cb(wp->t->change_arg);
	if (wp->closing) {
		tui_message(wp->t, false, "session %lld (%s) closed",
		    (long long)wp->id, wp->agent);
		tui_pane_closed(wp->t);
		return;
	}
	tui_message(wp->t, true, "session %lld (%s) did not start: %s",
	    (long long)wp->id, wp->agent, cause);
	tui_dialog_drop_pane(wp->t, wp, "did not start");
}

static void
tui_pane_request(void *arg, struct session *s, const struct request *r)
{
	struct tui_pane *wp = arg;

	tui_requests_event(wp->t, wp, r);
}

static void
tui_pane_ask(void *arg, struct session *s, const struct session_ask *a)
{
	struct tui_pane *wp = arg;

	tui_prompt_ask(wp->t, wp, a);
}

static void
tui_pane_answered(void *arg, struct session *s, uint64_t id,
    const char *answer, const char *by)
{
	struct tui_pane *wp = arg;

	tui_prompt_answered(wp->t, wp, id, answer, by);
}

static void
tui_pane_notice(void *arg, struct session *s, const char *level,
    const char *message)
{
	struct tui_pane *wp = arg;
	bool alert = strcmp(level, "alert") == 0;

	if (alert)
		wp->alert = true;
	tui_message(wp->t, alert || strcmp(level, "warn") == 0, "%lld: %s",
	    (long long)wp->id, message);
}

static void
tui_pane_disk(void *arg, struct session *s, const struct session_disk_ask *a)
{
	struct tui_pane *wp = arg;

	wp->alert = true;
	tui_disk_ask(wp->t, wp, a);
}

static void
tui_pane_done(void *arg, struct session *s)
{
	struct tui_pane *wp = arg;

	wp->done = true;
	tui_session_changed(wp->t, wp->id);
	tui_session_undo_resume(wp->t);
}

/* The session's state changed: its tab is redrawn, and if it now needs the user, they are told. */
static void
tui_pane_state_changed(void *arg, struct session *s, enum session_state st)
{
	struct tui_pane *wp = arg;

	wp->redraw = true;
	tui_redraw(wp->t);
	tui_session_changed(wp->t, wp->id);
	if (st == SESSION_NEEDS_YOU || st == SESSION_PROMPT)
		tui_status_notify(wp->t, wp, st);
	if (wp->t->change_cb != NULL)
		wp->t->change_cb(wp->t->change_arg);
}

/* What its start waits for changed: the starting line says so now, not at the next output. */
static void
tui_pane_waiting(void *arg, struct session *s, const char *why)
{
	struct tui_pane *wp = arg;

	wp->redraw = true;
	tui_redraw_pane(wp->t, wp);
}

static const struct session_events tui_pane_events = {
	.pane_changed = tui_pane_changed,
	.started = tui_pane_started,
	.exited = tui_pane_exited,
	.request = tui_pane_request,
	.ask = tui_pane_ask,
	.answered = tui_pane_answered,
	.notice = tui_pane_notice,
	.disk = tui_pane_disk,
	.done = tui_pane_done,
	.state = tui_pane_state_changed,
	.waiting = tui_pane_waiting,
};

/* The lowest pane number not in use. */
static int
tui_pane_free_num(struct tui *t)
{
	int num;

	for (num = 1; tui_pane_by_num(t, num) != NULL; num++)
		;
	return num;
}

/* The size a new pane starts with: the focused place, or the whole area. */
static void
tui_pane_start_size(struct tui *t, unsigned *sx, unsigned *sy)
{
	struct tui_pane *focus = tui_focus_pane(t);

	if (focus != NULL && focus->shown) {
		*sx = focus->r.sx;
		*sy = focus->r.sy;
		return;
	}
	*sx = t->c->sx;
	*sy = t->c->sy > 2 ? t->c->sy - 1 : 1;
}

/*
 * What a pane shows until its session gives it its own (and if the
 * session cannot start): an empty screen of its size, which answers
 * nothing.
 */
static struct pane *
tui_pane_blank(unsigned sx, unsigned sy)
{
	return pane_create(sx, sy, 0, NULL, NULL);
}

/* Starts WP's session (again, for a restart); false with *CAUSE. */
static bool
tui_pane_session(struct tui_pane *wp, char *const *kept, char **cause)
{
	struct tui *t = wp->t;
	struct session_opts o = { .kind = "dashboard", .on_unknown = -1,
	    .pty = true, .pane = true, .listen_fd = -1 };
	struct store_session *ss;
	unsigned sx, sy;

	sx = pane_grid_sx(pane_grid(wp->pane));
	sy = pane_grid_sy(pane_grid(wp->pane));
	o.agent = wp->agent;
	o.dir = wp->dir;
	o.command = wp->command.n > 0 ? wp->command.v : NULL;
	o.kept = kept;
	o.env = wp->has_env ? wp->env.v : NULL;
	o.worktree = wp->worktree || t->cf->ui.worktree;
	o.base = wp->base;
	o.branch = wp->branch;
	/*
	 * A tree another session runs in is refused, as run refuses it,
	 * unless agentmux new was given --shared or the new-session dialog
	 * asked and the user chose to share it.
	 */
	o.shared = !o.worktree && !wp->refuse_shared;
	o.rows = (unsigned short)sy;
	o.cols = (unsigned short)sx;
	if ((wp->s = session_start(t->ctx, &o, &tui_pane_events, wp,
	    cause)) == NULL)
		return false;
	/* The session keeps the terminal's state; the dashboard draws it. */
	pane_free(wp->pane);
	wp->pane = pane_ref(session_pane(wp->s));
	wp->id = session_id(wp->s);
	tui_dash_ran(t, wp->id);
	free(wp->agent);
	wp->agent = xstrdup(session_agent(wp->s));
	free(wp->project);
	wp->project = xstrdup(session_project(wp->s));
	if ((ss = session_record_get(t->ctx, wp->id)) != NULL) {
		free(wp->unsafe);
		wp->unsafe = ss->unsafe != NULL ? xstrdup(ss->unsafe) : NULL;
		session_record_free(ss);
	}
	wp->exited = false;
	free(wp->start_failed);
	wp->start_failed = NULL;
	wp->done = false;
	wp->status = 0;
	tui_session_undo_cancel(t, wp);
	return true;
}

int64_t
tui_pane_sharer(const struct tui_pane *wp)
{
	int64_t id;

	if (wp->worktree || wp->t->cf->ui.worktree || !wp->refuse_shared)
		return 0;
	id = session_tree_sharer(wp->t->ctx, wp->dir);
	return id == wp->id ? 0 : id;
}

/*
 * WP does not start yet: another session works in its tree and the user
 * is asked first (tui_share_ask). It stands as a pane that did not start,
 * named after the agent it would run, and r asks again.
 */
static void
tui_pane_waits(struct tui_pane *wp)
{
	const struct config *cf = wp->t->cf;

	if (wp->agent == NULL)
		wp->agent = xstrdup(cf->ui.default_agent != NULL ?
		    cf->ui.default_agent : "shell");
	wp->exited = true;
	wp->status = 0;
	free(wp->start_failed);
	wp->start_failed = xprintf("session %lld works in this tree already: "
	    "r asks whether to start in a worktree of its own or share it",
	    (long long)wp->ask_sharer);
}

struct tui_pane *
tui_pane_start(struct tui *t, const struct tui_opts *o, char **cause)
{
	struct tui_pane *wp = xcalloc(1, sizeof *wp);
	char *const *command = o->command;
	unsigned sx, sy;

	wp->t = t;
	wp->num = tui_pane_free_num(t);
	wp->started_us = util_mono_us();
	wp->agent = o->agent != NULL ? xstrdup(o->agent) : NULL;
	wp->dir = o->dir != NULL ? xstrdup(o->dir) : NULL;
	wp->worktree = o->worktree;
	wp->base = o->base != NULL ? xstrdup(o->base) : NULL;
	wp->branch = o->branch != NULL ? xstrdup(o->branch) : NULL;
	wp->refuse_shared = o->refuse_shared;
	strv_init(&wp->command);
	for (; command != NULL && *command != NULL; command++)
		strv_add(&wp->command, *command);
	strv_init(&wp->env);
	wp->has_env = o->env != NULL;
	for (command = o->env; command != NULL && *command != NULL; command++)
		strv_add(&wp->env, *command);
	tui_pane_start_size(t, &sx, &sy);
	wp->pane = tui_pane_blank(sx, sy);
	if (o->ask_shared && !wp->refuse_shared) {
		/* Shared only if the user says so, as in the new-session dialog. */
		wp->refuse_shared = true;
		wp->ask_sharer = tui_pane_sharer(wp);
	}
	if (wp->ask_sharer != 0)
		tui_pane_waits(wp);
	else if (!tui_pane_session(wp, NULL, cause)) {
		tui_pane_free(wp);
		return NULL;
	}
	t->panes = xreallocarray(t->panes, t->npanes + 1, sizeof *t->panes);
	t->panes[t->npanes++] = wp;
	wp->redraw = true;
	return wp;
}

void
tui_pane_close(struct tui_pane *wp)
{
	if (wp->s == NULL)
		return;
	session_free(wp->s);
	wp->s = NULL;
}

struct tui_pane_view *
tui_pane_view(struct tui_pane *wp)
{
	struct tui_client *c = wp->t->c;
	struct tui_pane_view *v;
	size_t i;

	for (i = 0; i < c->npviews; i++) {
		if (c->pviews[i]->wp == wp)
			return c->pviews[i];
	}
	v = xcalloc(1, sizeof *v);
	v->wp = wp;
	v->scrolled = pane_grid_scrolled(pane_grid(wp->pane));
	c->pviews = xreallocarray(c->pviews, c->npviews + 1, sizeof *c->pviews);
	c->pviews[c->npviews++] = v;
	return v;
}

void
tui_pane_view_drop(struct tui_client *c, const struct tui_pane *wp)
{
	size_t i = 0;

	while (i < c->npviews) {
		if (wp != NULL && c->pviews[i]->wp != wp) {
			i++;
			continue;
		}
		tui_copy_free(c->pviews[i]->copy);
		free(c->pviews[i]);
		c->pviews[i] = c->pviews[--c->npviews];
	}
	if (c->npviews == 0) {
		free(c->pviews);
		c->pviews = NULL;
	}
}

/* Every client's look at WP goes (it goes, or its grid is new). */
static void
tui_pane_views_drop(struct tui_pane *wp)
{
	struct tui *t = wp->t;
	size_t i;

	for (i = 0; i < t->nclients; i++)
		tui_pane_view_drop(t->clients[i], wp);
	for (i = 0; i < t->ngone; i++)
		tui_pane_view_drop(t->gone[i], wp);
}

void
tui_pane_free(struct tui_pane *wp)
{
	size_t i;

	if (wp == NULL)
		return;
	tui_pane_close(wp);
	tui_pane_views_drop(wp);
	pane_free(wp->pane);
	free(wp->agent);
	free(wp->project);
	free(wp->dir);
	free(wp->base);
	free(wp->branch);
	free(wp->unsafe);
	free(wp->start_failed);
	strv_free(&wp->command);
	/* Its client's environment may hold secrets. */
	for (i = 0; i < wp->env.n; i++)
		explicit_bzero(wp->env.v[i], strlen(wp->env.v[i]));
	strv_free(&wp->env);
	free(wp);
}

/* The profile's resume command, or NULL. */
static const char *
tui_pane_resume_command(const struct tui_pane *wp)
{
	const struct config_agent *a = wp->agent != NULL ?
	    config_agent(wp->t->cf, wp->agent) : NULL;

	return a != NULL ? a->resume : NULL;
}

/*
 * c on an exited pane: restarts it with the profile's resume command
 * (its last conversation), which further restarts keep; false if the
 * profile has none.
 */
bool
tui_pane_resume(struct tui_pane *wp)
{
	const char *line = tui_pane_resume_command(wp);
	char *cause = NULL;

	if (line == NULL)
		return false;
	strv_free(&wp->command);
	strv_init(&wp->command);
	if (strv_split_words(&wp->command, line, &cause) == -1) {
		/* Checked when the config was read. */
		tui_reply(wp->t, true, "resume: %s", cause);
		free(cause);
		return true;
	}
	/* Another session in the tree: asked first, as r does. */
	tui_pane_restart_ask(wp);
	return true;
}

void
tui_pane_restart_ask(struct tui_pane *wp)
{
	int64_t sharer = tui_pane_sharer(wp);

	if (sharer != 0)
		tui_share_ask(wp->t, wp, sharer);
	else
		tui_pane_restart(wp);
}

void
tui_pane_restart(struct tui_pane *wp)
{
	struct tui *t = wp->t;
	unsigned sx = pane_grid_sx(pane_grid(wp->pane));
	unsigned sy = pane_grid_sy(pane_grid(wp->pane));
	char *cause = NULL;
	int64_t was = wp->id;
	struct strv kept;
	char *const *k;

	/* What was answered for the session holds for its next run too. */
	strv_init(&kept);
	for (k = wp->s != NULL ? session_kept_rules(wp->s) : NULL;
	    k != NULL && *k != NULL; k++)
		strv_add(&kept, *k);
	tui_pane_close(wp);
	pane_free(wp->pane);
	wp->pane = tui_pane_blank(sx, sy);
	/* A new grid: every client's place in the old one goes. */
	tui_pane_views_drop(wp);
	wp->alert = false;
	wp->bells = wp->bells_seen = 0;
	wp->redraw = true;
	if (!tui_pane_session(wp, kept.v, &cause)) {
		wp->exited = true;
		wp->status = 127;
		tui_reply(t, true, "%s", cause);
		free(cause);
	} else if (kept.n > 0)
		tui_reply(t, false, "session %lld restarts session %lld, with "
		    "its %zu answer%s for the session", (long long)wp->id,
		    (long long)was, kept.n, kept.n == 1 ? "" : "s");
	strv_free(&kept);
	tui_redraw(t);
}

void
tui_pane_place(struct tui_pane *wp, const struct tui_rect *slot, bool titled,
    bool resize)
{
	struct tui_rect r = *slot;
	struct pane_grid *gd = pane_grid(wp->pane);

	if (titled && r.sy > 1) {
		r.y++;
		r.sy--;
	}
	wp->shown = true;
	wp->redraw = true;
	wp->r = r;
	/* Another client's cell: drawn cut or padded, the size kept. */
	if (!resize || (pane_grid_sx(gd) == r.sx && pane_grid_sy(gd) == r.sy))
		return;
	if (wp->s != NULL)
		session_resize(wp->s, (unsigned short)r.sy, (unsigned short)r.sx);
	else
		pane_resize(wp->pane, r.sx, r.sy);
}

const char *
tui_pane_state(const struct tui_pane *wp, char *buf, size_t len)
{
	if (wp->s == NULL && !wp->exited)
		snprintf(buf, len, "closed");
	else if (wp->start_failed != NULL)
		snprintf(buf, len, "failed");
	else if (wp->exited && wp->s == NULL)
		snprintf(buf, len, "exited %d", wp->status);
	else if (!wp->exited && tui_disk_frozen(wp))
		snprintf(buf, len, "frozen");
	else
		session_state_text(wp->s, buf, len);
	return buf;
}

static void
tui_pane_title(struct tui_pane *wp, bool focused)
{
	struct tui_screen *scr = wp->t->c->scr;
	struct tui_rect r = { wp->r.x, wp->r.y - 1, wp->r.sx, 1 };
	enum tui_style style = focused ? TUI_STYLE_BAR_FOCUS : TUI_STYLE_TITLE;
	char state[32];
	unsigned x;

	tui_screen_fill(scr, &r, style);
	x = tui_screen_printf(scr, r.x, r.y, r.sx, style, " %lld: %s  %s ",
	    (long long)wp->id, wp->agent, tui_pane_state(wp, state, sizeof state));
	if (*pane_title(wp->pane) != '\0' && x + 2 < r.sx)
		tui_screen_print(scr, r.x + x, r.y, r.sx - x, style,
		    pane_title(wp->pane));
}

/* The bar over a pane whose program ended (or never started: why, above it). */
static void
tui_pane_banner(struct tui_pane *wp)
{
	struct tui_rect r = { wp->r.x, wp->r.y + wp->r.sy - 1, wp->r.sx, 1 };

	tui_screen_fill(wp->t->c->scr, &r, TUI_STYLE_WARN);
	if (wp->start_failed == NULL && tui_pane_resume_command(wp) != NULL) {
		tui_screen_printf(wp->t->c->scr, r.x, r.y, r.sx, TUI_STYLE_WARN,
		    " %s %lld exited with status %d  --  r: restart  c: continue "
		    "its conversation (%s)  x: close ",
		    wp->agent, (long long)wp->id, wp->status,
		    tui_pane_resume_command(wp));
		return;
	}
	if (wp->start_failed == NULL) {
		tui_screen_printf(wp->t->c->scr, r.x, r.y, r.sx, TUI_STYLE_WARN,
		    " %s %lld exited with status %d  --  r: restart  x: close ",
		    wp->agent, (long long)wp->id, wp->status);
		return;
	}
	tui_screen_printf(wp->t->c->scr, r.x, r.y, r.sx, TUI_STYLE_WARN,
	    " %s %lld did not start  --  r: restart  x: close ", wp->agent,
	    (long long)wp->id);
	if (wp->r.sy > 1)
		tui_screen_print(wp->t->c->scr, r.x, r.y - 1, r.sx,
		    TUI_STYLE_WARN, wp->start_failed);
}

/* A pane whose session is starting says so until its command's output comes. */
static void
tui_pane_starting(struct tui_pane *wp)
{
	const char *why = session_start_waiting(wp->s);

	/* (The reason is agentmux's own sentence, with a session number.) */
	if (why != NULL)
		tui_screen_printf(wp->t->c->scr, wp->r.x, wp->r.y, wp->r.sx,
		    TUI_STYLE_TITLE, "starting\xe2\x80\xa6 (%s)", why);
	else
		tui_screen_print(wp->t->c->scr, wp->r.x, wp->r.y, wp->r.sx,
		    TUI_STYLE_TITLE,
		    "starting\xe2\x80\xa6 (snapshotting the project; "
		    "keys typed now are kept for it)");
}

void
tui_pane_draw(struct tui_pane *wp, bool focused, bool titled)
{
	struct pane_grid *gd = pane_grid(wp->pane);
	struct tui_pane_view *v = tui_pane_view(wp);
	uint64_t scrolled = pane_grid_scrolled(gd);
	bool all = wp->redraw;

	if (titled)
		tui_pane_title(wp, focused);
	if (v->offset != 0 || v->copy != NULL)
		all = true;
	if (v->offset != 0) {
		/* Output went on: keep looking at the same lines. */
		v->offset += (unsigned)(scrolled - v->scrolled);
		if (v->offset > pane_grid_hsize(gd))
			v->offset = pane_grid_hsize(gd);
		all = true;
	}
	v->scrolled = scrolled;
	if (all || pane_grid_is_dirty(gd))
		tui_screen_draw_grid(wp->t->c->scr, gd, &wp->r, v->offset,
		    pane_reverse(wp->pane), all);
	wp->redraw = false;
	if (focused)
		wp->bells_seen = pane_bells(wp->pane);
	if (v->copy != NULL)
		tui_copy_draw(wp);
	else if (v->offset != 0)
		tui_screen_printf(wp->t->c->scr,
		    wp->r.x + (wp->r.sx > 24 ? wp->r.sx - 24 : 0), wp->r.y, 24,
		    TUI_STYLE_SELECTED, "[%u/%u] q: back", v->offset,
		    pane_grid_hsize(gd));
	if (wp->exited)
		tui_pane_banner(wp);
	else if (wp->s != NULL && session_starting(wp->s))
		tui_pane_starting(wp);
}

void
tui_pane_scroll(struct tui_pane *wp, int lines)
{
	struct tui_pane_view *v = tui_pane_view(wp);
	unsigned h = pane_grid_hsize(pane_grid(wp->pane));
	long o = (long)v->offset + lines;

	v->offset = o < 0 ? 0 : o > (long)h ? h : (unsigned)o;
	v->scrolled = pane_grid_scrolled(pane_grid(wp->pane));
	tui_copy_clamp(wp);
	wp->redraw = true;
	tui_redraw(wp->t);
}

void
tui_pane_input(struct tui_pane *wp, const struct tui_input *in)
{
	struct tui_pane_view *v = tui_pane_view(wp);
	struct pane_mouse_event m;

	if (wp->s == NULL || wp->exited)
		return;
	switch (in->type) {
	case TUI_INPUT_KEY:
		if (v->offset != 0)
			tui_pane_scroll(wp, -(int)v->offset);
		pane_key(wp->pane, in->key.code, in->key.mods);
		break;
	case TUI_INPUT_PASTE:
		pane_paste(wp->pane, in->paste, in->pastelen);
		break;
	case TUI_INPUT_MOUSE:
		tui_keys_mouse_event(&in->mouse, &m);
		if ((v->copy == NULL || !v->copy->dragging) &&
		    pane_mouse(wp->pane, &m))
			break;
		/* The program did not ask for the mouse: drags select, the wheel scrolls. */
		if (tui_copy_mouse(wp, &in->mouse, (int)in->mouse.x,
		    (int)in->mouse.y))
			break;
		if (in->mouse.type == TUI_MOUSE_WHEEL_UP) {
			tui_copy_enter(wp);
			tui_pane_scroll(wp, TUI_WHEEL_LINES);
		} else if (in->mouse.type == TUI_MOUSE_WHEEL_DOWN) {
			tui_pane_scroll(wp, -TUI_WHEEL_LINES);
			/* Back at the bottom, the wheel leaves copy mode unless something is selected. */
			if (v->offset == 0 && (v->copy == NULL ||
			    (!v->copy->selecting && !v->copy->typing)))
				tui_copy_leave(wp);
		}
		break;
	}
}
