/* History: past sessions from the store, and one session's snapshots, decisions and requests, with diff and undo. */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "session/session.h"
#include "tui-int.h"

void
tui_history_view_free(struct tui_client *c)
{
	session_records_list_free(c->hist, c->nhist);
	c->hist = NULL;
	c->nhist = 0;
	strv_free(&c->hist_branch);
	session_record_snapshots_free(c->snaps, c->nsnaps);
	c->snaps = NULL;
	c->nsnaps = 0;
	strv_free(&c->detail_lines);
}

static void tui_session_undo_remove(struct tui *, size_t);

void
tui_history_free(struct tui *t)
{
	while (t->nundos > 0)
		tui_session_undo_remove(t, t->nundos - 1);
	free(t->undos);
	t->undos = NULL;
}

void
tui_history_client_gone(struct tui *t, struct tui_client *c)
{
	size_t i;

	for (i = 0; i < t->nundos; i++) {
		if (t->undos[i]->c == c)
			t->undos[i]->c = NULL;
	}
}

void
tui_history_open(struct tui *t)
{
	struct tui_client *c = t->c;

	session_records_flush(t->ctx);
	char *mark;
	size_t i;

	session_records_list_free(c->hist, c->nhist);
	c->hist = session_records_list(t->ctx, true, &c->nhist);
	c->hist_sel = c->hist_top = 0;
	/* Worktree sessions' branches, read once here, not at each draw. */
	strv_free(&c->hist_branch);
	for (i = 0; i < c->nhist; i++) {
		mark = session_record_branch(t->ctx, c->hist[i]);
		strv_add(&c->hist_branch, mark != NULL ? mark : "");
		free(mark);
	}
	tui_view_push(t, TUI_VIEW_HISTORY);
}

static const char *
tui_history_base(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash != NULL && slash[1] != '\0' ? slash + 1 : path;
}

/* "exited 0", "closed", "running" ...: the words `agentmux sessions` uses. */
static const char *
tui_history_exit(const struct store_session *ss, char *buf, size_t len)
{
	return session_record_end_text(ss, buf, len);
}

/* Files changed, or "-" while no end snapshot has counted them. */
static const char *
tui_history_files(const struct store_session *ss, char *buf, size_t len)
{
	if (ss->files_changed < 0)
		return "-";
	snprintf(buf, len, "%lld", (long long)ss->files_changed);
	return buf;
}

static void
tui_history_row(struct tui *t, const struct store_session *ss,
    const char *branch, unsigned y, unsigned sx, bool selected)
{
	struct tui_client *c = t->c;
	char start[32], dur[16], ex[32], files[24];
	enum tui_style style = selected ? TUI_STYLE_SELECTED : TUI_STYLE_NORMAL;
	unsigned x;

	util_fmt_time(start, sizeof start, ss->started_at);
	if (ss->ended_at != 0)
		util_fmt_duration(dur, sizeof dur, ss->ended_at - ss->started_at);
	else
		snprintf(dur, sizeof dur, "-");
	tui_screen_fill(c->scr, &(struct tui_rect){ 0, y, sx, 1 }, style);
	x = tui_screen_printf(c->scr, 0, y, sx, style,
	    "%5lld %-10.10s %-18.18s %s %8s %-10.10s %5lld %5lld %5lld %5s",
	    (long long)ss->id, ss->agent != NULL ? ss->agent : "-",
	    tui_history_base(ss->project != NULL ? ss->project : "-"), start,
	    dur, tui_history_exit(ss, ex, sizeof ex), (long long)ss->nallowed,
	    (long long)ss->ndenied, (long long)ss->nerrors,
	    tui_history_files(ss, files, sizeof files));
	/* A worktree session: its branch (quoted), which the project column cannot say. */
	if (branch != NULL && *branch != '\0' && x + 2 < sx)
		x += 1 +
		    tui_screen_printf(c->scr, x + 1, y, sx - x - 1,
		        TUI_STYLE_DIM, "wt %s", branch);
	if (ss->unsafe != NULL && x + 2 < sx)
		x += 1 +
		    tui_screen_printf(c->scr, x + 1, y, sx - x - 1,
		        TUI_STYLE_ALERT, "UNSAFE %s", ss->unsafe);
	if (ss->unrecorded > 0 && x + 2 < sx)
		x += 1 +
		    tui_screen_print(c->scr, x + 1, y, sx - x - 1,
		        TUI_STYLE_WARN, "BUDGET");
	/* Planted files, files the user's tools run: in red at a glance. */
	if (ss->flags != NULL && x + 2 < sx)
		tui_screen_printf(c->scr, x + 1, y, sx - x - 1,
		    TUI_STYLE_ALERT, "! %s", ss->flags);
}

void
tui_history_draw(struct tui *t, const struct tui_rect *area)
{
	struct tui_client *c = t->c;
	size_t rows = area->sy > 3 ? area->sy - 3 : 1, i;
	unsigned y;

	tui_screen_fill(c->scr, area, TUI_STYLE_NORMAL);
	tui_screen_printf(c->scr, 0, area->y, area->sx, TUI_STYLE_TITLE,
	    " history: %zu sessions, newest first", c->nhist);
	tui_screen_print(c->scr, 0, area->y + 1, area->sx, TUI_STYLE_DIM,
	    "   id agent      project            started             "
	    "duration state      allow  deny error files");
	if (c->hist_sel < c->hist_top)
		c->hist_top = c->hist_sel;
	if (c->hist_sel >= c->hist_top + rows)
		c->hist_top = c->hist_sel - rows + 1;
	for (i = c->hist_top, y = area->y + 2; i < c->nhist && y < area->y + 2 +
	    rows; i++, y++)
		tui_history_row(t, c->hist[i], i < c->hist_branch.n ?
		    c->hist_branch.v[i] : NULL, y, area->sx, i == c->hist_sel);
	tui_screen_print(c->scr, 0, area->y + area->sy - 1, area->sx,
	    TUI_STYLE_DIM, " up/down move  Enter open  Esc back");
}

bool
tui_history_key(struct tui *t, const struct tui_key *k)
{
	struct tui_client *c = t->c;

	if (k->code == 0x1b || k->code == 'q')
		tui_view_pop(t);
	else if (k->code == '\r' && c->hist_sel < c->nhist)
		tui_session_open(t, c->hist[c->hist_sel]->id);
	else if (!tui_list_key(k, c->nhist, 10, &c->hist_sel))
		return false;
	tui_redraw(t);
	return true;
}

/*
 * What the session was flagged for and why (error events): lines that
 * start with "! ", which are drawn in red.
 */
static void
tui_session_alerts(struct tui *t, const struct store_session *ss,
    struct strv *out)
{
	struct store_event **e;
	size_t ne, i, n = 0;

	if (ss->flags == NULL)
		return;
	strv_addf(out, "! flagged: %s", ss->flags);
	e = session_record_events(t->ctx, ss->id, &ne);
	for (i = 0; i < ne && n < 8; i++) {
		if (strcmp(e[i]->level, "error") != 0)
			continue;
		strv_addf(out, "! %s", e[i]->message);
		n++;
	}
	session_record_events_free(e, ne);
}

/* The session's summary and its latest decisions and requests, as lines. */
static void
tui_session_lines(struct tui *t, struct strv *out)
{
	struct tui_client *c = t->c;
	struct store_session *ss = session_record_get(t->ctx, c->detail);
	struct store_decision **d;
	struct request **r;
	struct store_request_filter f = { .session_id = c->detail };
	char when[32], ex[32], files[24], *url, *wt;
	struct strv q;
	size_t nd, nr, i;

	if (ss == NULL) {
		strv_addf(out, "session %lld is not in the store",
		    (long long)c->detail);
		return;
	}
	strv_init(&q);
	util_fmt_time(when, sizeof when, ss->started_at);
	strv_addf(out, "session %lld: %s in %s, started %s, %s", (long long)ss->id,
	    quote_keep(&q, ss->agent), quote_keep(&q, ss->project), when,
	    tui_history_exit(ss, ex, sizeof ex));
	strv_addf(out, "requests %lld (allowed %lld, denied %lld, errors %lld), "
	    "files changed %s%s%s", (long long)ss->nrequests,
	    (long long)ss->nallowed, (long long)ss->ndenied,
	    (long long)ss->nerrors, tui_history_files(ss, files, sizeof files),
	    ss->unsafe != NULL ? ", UNSAFE: " :
	    "", ss->unsafe != NULL ? ss->unsafe : "");
	if (ss->unrecorded > 0)
		strv_addf(out, "BUDGET: the session's records reached [proxy] "
		    "record_budget; %lld request(s) (%lld denied) and %lld "
		    "other record(s) were counted, not stored",
		    (long long)ss->unrecorded, (long long)ss->unrecorded_denied,
		    (long long)ss->unrecorded_other);
	if ((wt = session_record_worktree(t->ctx, ss)) != NULL) {
		strv_add(out, wt);
		free(wt);
	}
	tui_session_alerts(t, ss, out);
	d = session_record_decisions(t->ctx, c->detail, &nd);
	strv_addf(out, "decisions: %zu", nd);
	for (i = nd > 5 ? nd - 5 : 0; i < nd; i++)
		strv_addf(out, "  %s %s %s:%d (%s, by %s)", d[i]->answer,
		    d[i]->scope, quote_keep(&q, d[i]->host), d[i]->port,
		    d[i]->method != NULL ? quote_keep(&q, d[i]->method) :
		    "any method", d[i]->by);
	session_record_decisions_free(d, nd);
	r = session_record_requests(t->ctx, &f, &nr);
	strv_addf(out, "requests: %zu (the last ones)", nr);
	for (i = nr > 8 ? nr - 8 : 0; i < nr; i++) {
		url = tui_req_url(r[i]->scheme, r[i]->host, r[i]->port,
		    r[i]->path);
		strv_addf(out, "  %-5s %-6s %s %d", r[i]->decision,
		    quote_keep(&q, r[i]->method), url, r[i]->status);
		free(url);
	}
	session_record_requests_free(r, nr);
	session_record_free(ss);
	strv_free(&q);
}

/* The start snapshot is selected first: undo goes back there by default, as `agentmux undo` does. */
static size_t
tui_session_start_snap(const struct tui *t)
{
	struct tui_client *c = t->c;
	size_t i;

	for (i = 0; i < c->nsnaps; i++)
		if (c->snaps[i]->kind != NULL &&
		    strcmp(c->snaps[i]->kind, "start") == 0)
			return i;
	return 0;
}

/* Reads session ID's record and snapshots for the client's view; the snapshot SEL (an id, -1: the start) selected. */
static void
tui_session_load(struct tui *t, int64_t id, int64_t sel)
{
	struct tui_client *c = t->c;
	size_t i;

	session_records_flush(t->ctx);
	c->detail = id;
	session_record_snapshots_free(c->snaps, c->nsnaps);
	c->snaps = session_record_snapshots(t->ctx, id, &c->nsnaps);
	c->snap_sel = tui_session_start_snap(t);
	for (i = 0; sel != -1 && i < c->nsnaps; i++)
		if (c->snaps[i]->id == sel)
			c->snap_sel = i;
	strv_free(&c->detail_lines);
	strv_init(&c->detail_lines);
	tui_session_lines(t, &c->detail_lines);
}

void
tui_session_open(struct tui *t, int64_t id)
{
	tui_session_load(t, id, -1);
	tui_view_push(t, TUI_VIEW_SESSION);
}

/*
 * Session ID started, changed state or ended (a snapshot may have been
 * recorded meanwhile): each client that shows it reads it again, its
 * selected snapshot kept. A view opened while the start snapshot was
 * being taken said "starting" and "snapshots: 0", and had nothing to
 * undo to, until it was opened again.
 */
void
tui_session_changed(struct tui *t, int64_t id)
{
	struct tui_client *was = t->c, *c;
	size_t i;
	bool any = false;

	for (i = 0; i < t->nclients; i++) {
		c = t->clients[i];
		if (c->nviews == 0 || c->views[c->nviews - 1] !=
		    TUI_VIEW_SESSION || c->detail != id)
			continue;
		t->c = c;
		tui_session_load(t, id, c->snap_sel < c->nsnaps ?
		    c->snaps[c->snap_sel]->id : -1);
		any = true;
	}
	t->c = was;
	if (any)
		tui_redraw(t);
}

void
tui_session_draw(struct tui *t, const struct tui_rect *area)
{
	struct tui_client *c = t->c;
	const struct strv *lines = &c->detail_lines;
	struct store_snapshot *sn;
	char when[32];
	size_t i;
	unsigned y = area->y;

	tui_screen_fill(c->scr, area, TUI_STYLE_NORMAL);
	for (i = 0; i < lines->n && y + 2 < area->y + area->sy; i++, y++)
		tui_screen_print(c->scr, 0, y, area->sx,
		    i == 0                                 ? TUI_STYLE_TITLE :
		        strncmp(lines->v[i], "! ", 2) == 0 ? TUI_STYLE_ALERT :
		                                             TUI_STYLE_NORMAL,
		    lines->v[i]);
	tui_screen_printf(c->scr, 0, y++, area->sx, TUI_STYLE_DIM,
	    "snapshots: %zu", c->nsnaps);
	for (i = 0; i < c->nsnaps && y + 1 < area->y + area->sy; i++, y++) {
		sn = c->snaps[i];
		util_fmt_time(when, sizeof when, sn->created_at);
		tui_screen_printf(c->scr, 0, y, area->sx,
		    i == c->snap_sel ? TUI_STYLE_SELECTED : TUI_STYLE_NORMAL,
		    "  %s %-7s %-10.10s files %-4lld %s", when,
		    sn->dropped_at != 0 ? "dropped" : sn->kind,
		    sn->commit != NULL ? sn->commit : "-",
		    (long long)sn->files_changed,
		    sn->label != NULL ? sn->label : "");
	}
	tui_screen_print(c->scr, 0, area->y + area->sy - 1, area->sx,
	    TUI_STYLE_DIM,
	    " d diff  Enter diff from snapshot  u undo to "
	    "snapshot  g config diff  a apply config  p suggest policy  "
	    "w write policy  Esc back");
}

static void
tui_session_run(struct tui *t, const char *title, const char *cmd,
    const char *opt, const char *optval, bool diff)
{
	char id[32];
	char *argv[6] = { (char *)cmd, id, NULL, NULL, NULL, NULL };

	snprintf(id, sizeof id, "%lld", (long long)t->c->detail);
	if (opt != NULL) {
		argv[2] = (char *)opt;
		argv[3] = (char *)optval;
	}
	tui_text_run(t, title, argv, diff);
}

/* Whether pane WP's session still writes where undoing session ID in PROJECT writes. */
static bool
tui_session_blocks_undo(const struct tui_pane *wp, int64_t id,
    const char *project)
{
	return wp->s != NULL && !wp->done && (wp->id == id || (project != NULL &&
	    wp->project != NULL && strcmp(wp->project, project) == 0));
}

/* Says which of this dashboard's sessions an undo must stop first ("session 9 (shell)"); NULL: none. */
static char *
tui_session_undo_blockers(struct tui *t, int64_t id, const char *project)
{
	struct buf b;
	char *q;
	size_t i, n = 0;

	buf_init(&b);
	for (i = 0; i < t->npanes; i++) {
		if (!tui_session_blocks_undo(t->panes[i], id, project))
			continue;
		buf_printf(&b, "%s%d (%s)", n++ > 0 ? ", " : "",
		    t->panes[i]->num, t->panes[i]->agent);
	}
	if (n == 0)
		return NULL;
	q = xprintf("session%s %s", n == 1 ? "" : "s", b.data);
	buf_free(&b);
	return q;
}

/* Takes waiting undo I out of the list. */
static void
tui_session_undo_remove(struct tui *t, size_t i)
{
	struct tui_undo *u = t->undos[i];

	memmove(t->undos + i, t->undos + i + 1,
	    (t->nundos - i - 1) * sizeof *t->undos);
	t->nundos--;
	free(u->commit);
	free(u->project);
	free(u);
}

/* Whether pane WP's session still writes where waiting undo U writes. */
static bool
tui_session_undo_blocked_by(const struct tui_undo *u,
    const struct tui_pane *wp)
{
	return tui_session_blocks_undo(wp, u->session, u->project);
}

/* Whether two waits would roll back the same work: one project, or one session. */
static bool
tui_session_undo_same(const struct tui_undo *u, int64_t id,
    const char *project)
{
	return u->session == id || (u->project != NULL && project != NULL &&
	    strcmp(u->project, project) == 0);
}

/*
 * A session started (or restarted) in the project of a waiting undo cancels
 * it, and says so: the undo would wait for that session too and then roll
 * back its work, hours later, with nobody asked. So an undo only ever waits
 * for the sessions that ran when it was confirmed.
 */
void
tui_session_undo_cancel(struct tui *t, const struct tui_pane *wp)
{
	size_t i = 0;

	while (i < t->nundos) {
		if (!tui_session_undo_blocked_by(t->undos[i], wp)) {
			i++;
			continue;
		}
		tui_message(t, true, "the undo of session %lld is cancelled: "
		    "session %d started in its project, and the undo would "
		    "roll back its work too; undo again once it has stopped",
		    (long long)t->undos[i]->session, wp->num);
		tui_session_undo_remove(t, i);
	}
}

/* Whether one of this dashboard's sessions still writes where U writes. */
static bool
tui_session_undo_waits(struct tui *t, const struct tui_undo *u)
{
	size_t i;

	for (i = 0; i < t->npanes; i++) {
		if (tui_session_undo_blocked_by(u, t->panes[i]))
			return true;
	}
	return false;
}

/* Runs waiting undo I: its output opens for the client that asked, if it is still here. */
static void
tui_session_undo_run(struct tui *t, size_t i)
{
	struct tui_undo *u = t->undos[i];
	struct tui_client *was = t->c;
	char id[32];
	char *argv[] = { (char *)"undo", id, (char *)"--to", u->commit, NULL };

	snprintf(id, sizeof id, "%lld", (long long)u->session);
	/* The undo is another process: it reads the sessions' ends from the store. */
	session_records_flush(t->ctx);
	if (u->c != NULL)
		t->c = u->c;
	tui_text_run(t, "undo", argv, false);
	t->c = was;
	tui_session_undo_remove(t, i);
}

/* Runs each waiting undo once none of this dashboard's sessions writes its project any more. */
void
tui_session_undo_resume(struct tui *t)
{
	size_t i = 0;

	while (i < t->nundos) {
		if (tui_session_undo_waits(t, t->undos[i]))
			i++;
		else
			tui_session_undo_run(t, i);
	}
}

/*
 * Client C's new undo replaces its own waiting one, and one of another
 * client that would roll back the same work (the later question holds,
 * and that client is told); waits for other projects go on.
 */
static void
tui_session_undo_replace(struct tui *t, struct tui_client *c, int64_t id,
    const char *project)
{
	struct tui_undo *u;
	char *text;
	size_t i = 0;

	while (i < t->nundos) {
		u = t->undos[i];
		if (u->c != c && !tui_session_undo_same(u, id, project)) {
			i++;
			continue;
		}
		if (u->c != NULL && u->c != c) {
			text = xprintf("your undo of session %lld is replaced "
			    "by another client's undo of the same project",
			    (long long)u->session);
			tui_notice_client(t, u->c, true, text);
			free(text);
		}
		tui_session_undo_remove(t, i);
	}
}

/* Stops this dashboard's sessions in the project (their ends snapshotted), then undoes. */
static void
tui_session_undo(struct tui *t, void *arg)
{
	struct tui_client *c = t->c;
	struct store_session *ss;
	struct tui_undo *u;
	size_t i;
	bool stopping = false;

	if (c->snap_sel >= c->nsnaps || c->snaps[c->snap_sel]->commit == NULL ||
	    (ss = session_record_get(t->ctx, c->detail)) == NULL)
		return;
	tui_session_undo_replace(t, c, c->detail, ss->project);
	u = xcalloc(1, sizeof *u);
	u->commit = xstrdup(c->snaps[c->snap_sel]->commit);
	u->session = c->detail;
	u->c = c;
	u->project = ss->project != NULL ? xstrdup(ss->project) : NULL;
	session_record_free(ss);
	t->undos = xreallocarray(t->undos, t->nundos + 1, sizeof *t->undos);
	t->undos[t->nundos++] = u;
	for (i = 0; i < t->npanes; i++) {
		if (!tui_session_undo_blocked_by(u, t->panes[i]) ||
		    t->panes[i]->exited)
			continue;
		session_terminate(t->panes[i]->s);
		stopping = true;
	}
	if (stopping)
		tui_reply(t, false, "stopping the sessions in the project; "
		    "the undo runs once their end snapshots are taken");
	tui_session_undo_resume(t);
}

/* Asks before undoing to snapshot SN, naming the sessions it stops first. */
static void
tui_session_ask_undo(struct tui *t, const struct store_snapshot *sn)
{
	struct tui_client *c = t->c;
	struct store_session *ss = session_record_get(t->ctx, c->detail);
	char *stop, *q;

	stop = tui_session_undo_blockers(t, c->detail, ss != NULL ?
	    ss->project : NULL);
	session_record_free(ss);
	if (stop != NULL)
		q = xprintf("Undo: stop %s (its end is snapshotted), then put "
		    "the project back as it was at snapshot %.10s (%s)? The "
		    "present is snapshotted first.", stop, sn->commit, sn->kind);
	else
		q = xprintf("Undo: put the project back as it was at snapshot "
		    "%.10s (%s)? The present is snapshotted first.", sn->commit,
		    sn->kind);
	tui_confirm(t, q, tui_session_undo, NULL);
	free(stop);
	free(q);
}

/* Learn a policy from this session: the rules for its agent's profile, shown or written. */
static void
tui_session_suggest(struct tui *t, bool write)
{
	struct tui_client *c = t->c;
	struct store_session *ss = session_record_get(t->ctx, c->detail);
	char id[32];
	char *argv[] = { (char *)"policy", (char *)"suggest", id,
		(char *)"--agent", NULL, write ? (char *)"--write" : NULL, NULL };

	if (ss == NULL)
		return;
	snprintf(id, sizeof id, "%lld", (long long)c->detail);
	argv[4] = ss->agent;
	tui_text_run(t, write ? "policy written" : "policy suggestion", argv,
	    write);
	session_record_free(ss);
}

static void
tui_session_suggest_write(struct tui *t, void *arg)
{
	tui_session_suggest(t, true);
}

static void
tui_session_apply(struct tui *t, void *arg)
{
	tui_session_run(t, "apply config changes", "confdiff", "--apply", NULL,
	    false);
}

bool
tui_session_key(struct tui *t, const struct tui_key *k)
{
	struct tui_client *c = t->c;
	struct store_snapshot *sn = c->snap_sel < c->nsnaps ?
	    c->snaps[c->snap_sel] : NULL;

	switch (k->code) {
	case 0x1b:
	case 'q':
		tui_view_pop(t);
		break;
	case 'd':
		tui_session_run(t, "project diff", "diff", NULL, NULL, true);
		break;
	case 'g':
		tui_session_run(t, "config diff", "confdiff", NULL, NULL, true);
		break;
	case 'a':
		tui_confirm(t, "Apply this session's config changes to your "
		    "real config dirs?", tui_session_apply, NULL);
		break;
	case 'p':
		tui_session_suggest(t, false);
		break;
	case 'w':
		tui_confirm(t, "Add the rules that allow exactly what this "
		    "session did to its agent's profile in your config?",
		    tui_session_suggest_write, NULL);
		break;
	case '\r':
		if (sn != NULL && sn->commit != NULL)
			tui_session_run(t, "diff from snapshot", "diff", "--from",
			    sn->commit, true);
		break;
	case 'u':
		if (sn == NULL || sn->commit == NULL)
			break;
		tui_session_ask_undo(t, sn);
		break;
	default:
		if (!tui_list_key(k, c->nsnaps, 5, &c->snap_sel))
			return false;
	}
	tui_redraw(t);
	return true;
}
