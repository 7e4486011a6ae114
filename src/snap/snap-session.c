/* Snapshots of a running session (queued, async, turn boundaries rate-limited) and standalone ones. */
#include <event2/event.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "snap/snap-int.h"

/* Seconds after a session's start before its repository is looked after. */
#define SNAP_SESSION_KEEP_DELAY 30

struct snap_queued {
	char *kind;
	char *label;
	bool if_changed;
	snap_done_cb done;
	void *arg;
};

struct snap_session {
	struct event_base *base;
	struct store *st;
	const struct config *cf;
	int64_t id;
	struct snap_repo *repo;
	struct snap_take *job;          /* the snapshot running */
	struct snap_queued running;     /* what it was asked for */
	struct snap_queued *queue;
	size_t nqueue;
	bool closing;
	struct event *turn_ev;          /* a turn snapshot waiting for the interval */
	int64_t last_turn_us;
	void (*progress)(void *, int64_t);
	void *progress_arg;
	struct snap_keep *keep;         /* packing and the budget, in the background */
	struct event *keep_ev;          /* a keep job waiting to start */
	void (*notice)(void *, const char *);
	void *notice_arg;
	int held;                       /* queued snapshots wait (snap_session_hold) */
	void (*saved_fn)(void *);       /* held: when_saved for the next snapshot */
	void *saved_arg;
	bool orphan;                    /* freed while busy: it frees itself once done */
	int calling;                    /* inside a done callback (which may free it) */
	int64_t first_write_ms;         /* snap_session_set_first_write; 0: not set */
	/* snap_session_set_checkout's, for the start snapshot; NULL: none */
	char *co_base, *co_common, *co_index, *co_tree;
	bool co_attrs_known;
	struct strv co_converted;
};

/* Sessions freed with snapshots still to take: each frees itself when they are taken. */
static int snap_session_norphans;

static void snap_session_next(struct snap_session *);

/* Older snapshots of the project came into its own repository: the snapshots held go ahead. */
static void
snap_session_legacy_done(void *arg)
{
	snap_session_release_hold(arg);
}

/*
 * Older snapshots of the project come into its own repository first, on
 * the loop; true if they do (the hold goes once they are in).
 */
static bool
snap_session_legacy(struct snap_session *ss)
{
	return snap_legacy_project_start(ss->base, ss->st, ss->cf,
	    ss->repo->worktree, snap_session_legacy_done, ss);
}

struct snap_session *
snap_session_create(struct event_base *base, struct store *st,
    const struct config *cf, int64_t session, const char *project,
    char **cause)
{
	struct snap_session *ss;
	char tag[32];

	snprintf(tag, sizeof tag, "%lld", (long long)session);
	ss = xcalloc(1, sizeof *ss);
	ss->base = base;
	ss->st = st;
	ss->cf = cf;
	ss->id = session;
	ss->repo = snap_repo_open(project, cf, tag, cause);
	if (ss->repo == NULL) {
		free(ss);
		return NULL;
	}
	/* Older snapshots of the project come in first: snapshots held meanwhile. */
	snap_session_hold(ss);
	if (!snap_session_legacy(ss)) {
		/* Nothing is queued yet, nothing to start: the hold just goes. */
		ss->held--;
	}
	return ss;
}

static void
snap_queued_clear(struct snap_queued *q)
{
	free(q->kind);
	free(q->label);
	memset(q, 0, sizeof *q);
}

int
snap_session_when_saved(struct snap_session *ss, void (*fn)(void *),
    void *arg)
{
	ss->saved_fn = NULL;
	if (fn != NULL && ss->job == NULL && ss->nqueue > 0)
		snap_session_next(ss);
	/* Held: for the snapshot that starts once it is let go. */
	if (fn != NULL && ss->job == NULL && ss->nqueue > 0) {
		ss->saved_fn = fn;
		ss->saved_arg = arg;
		return 1;
	}
	if (ss->job == NULL)
		return 0;
	snap_take_when_saved(ss->job, fn, arg);
	return 1;
}

/* Frees what is left once nothing runs. */
static void
snap_session_release(struct snap_session *ss)
{
	size_t i;

	ss->closing = true;
	if (ss->keep_ev != NULL)
		event_free(ss->keep_ev);
	snap_keep_free(ss->keep);
	/* The loose objects are packed by a process that outlives this one. */
	snap_keep_detached(ss->base, ss->repo->gitdir);
	for (i = 0; i < ss->nqueue; i++)
		snap_queued_clear(&ss->queue[i]);
	free(ss->queue);
	snap_repo_free(ss->repo);
	free(ss->co_base);
	free(ss->co_common);
	free(ss->co_index);
	free(ss->co_tree);
	strv_free(&ss->co_converted);
	free(ss);
}

/* An orphan whose last snapshot is taken goes; true if it went. */
static bool
snap_session_reap(struct snap_session *ss)
{
	if (!ss->orphan || ss->calling > 0 || ss->job != NULL ||
	    ss->nqueue > 0 || ss->held > 0)
		return false;
	snap_session_norphans--;
	snap_session_release(ss);
	return true;
}

void
snap_session_free(struct snap_session *ss)
{
	size_t i;

	if (ss == NULL || ss->orphan)
		return;
	if (ss->turn_ev != NULL)
		event_free(ss->turn_ev);
	ss->turn_ev = NULL;
	/* Nobody hears of them any more; what was asked for is still taken. */
	for (i = 0; i < ss->nqueue; i++)
		ss->queue[i].done = NULL;
	ss->running.done = NULL;
	ss->saved_fn = NULL;
	ss->progress = NULL;
	ss->notice = NULL;
	if (ss->job != NULL)
		snap_take_when_saved(ss->job, NULL, NULL);
	ss->orphan = true;
	snap_session_norphans++;
	if (ss->job == NULL && ss->nqueue > 0)
		snap_session_next(ss);
	snap_session_reap(ss);
}

int
snap_session_orphans(void)
{
	/* A repack's shell started as the last of them went is one too. */
	return snap_session_norphans + snap_keep_detaching();
}

static void
snap_session_progress(void *arg, int64_t files)
{
	struct snap_session *ss = arg;

	if (ss->progress != NULL)
		ss->progress(ss->progress_arg, files);
}

static void
snap_session_kept(void *arg, const struct snap_keep *k)
{
	struct snap_session *ss = arg;
	const char *const *msgs;
	size_t n, i;

	msgs = snap_keep_messages(k, &n);
	for (i = 0; i < n && ss->notice != NULL; i++)
		ss->notice(ss->notice_arg, msgs[i]);
	snap_keep_free(ss->keep);
	ss->keep = NULL;
}

static void
snap_session_keep_cb(evutil_socket_t fd, short what, void *arg)
{
	struct snap_session *ss = arg;
	char *cause = NULL;

	if (ss->keep != NULL || ss->closing)
		return;
	ss->keep = snap_keep_start(ss->base, ss->st, ss->cf, ss->repo->gitdir,
	    ss->repo->worktree, snap_session_kept, ss, &cause);
	if (ss->keep == NULL) {
		log_debug("%s", cause);
		free(cause);
	}
}

/*
 * The repository packed and its budget kept, meanwhile: after a session's
 * end, and a while after its start (a short command is spared the work;
 * the end of a session that outlives its process is not).
 */
static void
snap_session_keep(struct snap_session *ss, bool at_start)
{
	struct timeval tv = { at_start ? SNAP_SESSION_KEEP_DELAY : 0, 0 };

	if (ss->keep != NULL || ss->closing || ss->orphan)
		return;
	if (ss->keep_ev == NULL)
		ss->keep_ev = evtimer_new(ss->base, snap_session_keep_cb, ss);
	evtimer_add(ss->keep_ev, &tv);
}

void
snap_session_set_notice(struct snap_session *ss,
    void (*fn)(void *, const char *), void *arg)
{
	ss->notice = fn;
	ss->notice_arg = arg;
}

void
snap_session_set_first_write(struct snap_session *ss, int64_t ms)
{
	ss->first_write_ms = ms;
}

void
snap_session_set_checkout(struct snap_session *ss,
    const struct snap_checkout *co)
{
	size_t i;

	free(ss->co_base);
	free(ss->co_common);
	free(ss->co_index);
	free(ss->co_tree);
	strv_free(&ss->co_converted);
	ss->co_base = xstrdup(co->base);
	ss->co_common = xstrdup(co->common);
	ss->co_index = xstrdup(co->index);
	ss->co_tree = co->tree != NULL ? xstrdup(co->tree) : NULL;
	ss->co_attrs_known = co->converted != NULL;
	strv_init(&ss->co_converted);
	for (i = 0; co->converted != NULL && i < co->converted->n; i++)
		strv_add(&ss->co_converted, co->converted->v[i]);
}

static void
snap_session_done(void *arg, const struct snap_result *res, const char *error)
{
	struct snap_session *ss = arg;
	struct snap_queued q = ss->running;

	ss->job = NULL;
	memset(&ss->running, 0, sizeof ss->running);
	if (error != NULL)
		store_event_add(ss->st, ss->id, "warn", "snapshot",
		    "the %s snapshot failed: %s", q.kind, error);
	ss->calling++;
	if (q.done != NULL)
		q.done(q.arg, res, error);
	ss->calling--;
	if (error == NULL && (strcmp(q.kind, "start") == 0 ||
	    strcmp(q.kind, "end") == 0))
		snap_session_keep(ss, strcmp(q.kind, "start") == 0);
	snap_queued_clear(&q);
	if (!ss->closing)
		snap_session_next(ss);
	snap_session_reap(ss);
}

/* Starts the first queued snapshot; one runs at a time (they share an index). */
static void
snap_session_next(struct snap_session *ss)
{
	struct snap_take_opts o;
	struct snap_checkout co;
	struct snap_queued q;
	char *cause = NULL;
	void (*saved)(void *);

	while (ss->job == NULL && ss->nqueue > 0 && ss->held == 0) {
		q = ss->queue[0];
		memmove(ss->queue, ss->queue + 1, --ss->nqueue * sizeof *ss->queue);
		memset(&o, 0, sizeof o);
		o.kind = q.kind;
		o.label = q.label;
		o.session = ss->id;
		o.if_changed = q.if_changed;
		o.record_refs = strcmp(q.kind, "start") == 0;
		if (strcmp(q.kind, "end") == 0)
			o.first_write_ms = ss->first_write_ms;
		if (strcmp(q.kind, "start") == 0 && ss->co_base != NULL) {
			memset(&co, 0, sizeof co);
			co.base = ss->co_base;
			co.common = ss->co_common;
			co.index = ss->co_index;
			co.tree = ss->co_tree;
			co.converted = ss->co_attrs_known ? &ss->co_converted :
			    NULL;
			o.checkout = &co;
		}
		ss->running = q;
		ss->job = snap_take_start(ss->base, ss->st, ss->repo, &o,
		    snap_session_progress, snap_session_done, ss, &cause);
		saved = ss->saved_fn;
		ss->saved_fn = NULL;
		if (ss->job != NULL) {
			if (saved != NULL)
				snap_take_when_saved(ss->job, saved,
				    ss->saved_arg);
			return;
		}
		/* Nothing will be saved: what waits for it goes on. */
		if (saved != NULL)
			saved(ss->saved_arg);
		memset(&ss->running, 0, sizeof ss->running);
		store_event_add(ss->st, ss->id, "warn", "snapshot",
		    "the %s snapshot failed: %s", q.kind, cause);
		ss->calling++;
		if (q.done != NULL)
			q.done(q.arg, NULL, cause);
		ss->calling--;
		free(cause);
		cause = NULL;
		snap_queued_clear(&q);
	}
}

static void
snap_session_queue(struct snap_session *ss, const char *kind,
    const char *label, bool if_changed, snap_done_cb done, void *arg)
{
	struct snap_queued *q;

	ss->queue = xreallocarray(ss->queue, ss->nqueue + 1, sizeof *ss->queue);
	q = &ss->queue[ss->nqueue++];
	q->kind = xstrdup(kind);
	q->label = label != NULL ? xstrdup(label) : NULL;
	q->if_changed = if_changed;
	q->done = done;
	q->arg = arg;
	if (!ss->closing)
		snap_session_next(ss);
}

int
snap_session_take(struct snap_session *ss, const char *kind,
    const char *label, snap_done_cb done, void *arg, char **cause)
{
	static const char *const kinds[] = { "start", "end", "manual", "turn",
	    "undo" };
	size_t i;

	for (i = 0; i < nitems(kinds); i++) {
		if (strcmp(kind, kinds[i]) == 0)
			break;
	}
	if (i == nitems(kinds)) {
		*cause = xprintf("'%s' is not a kind of snapshot", kind);
		return -1;
	}
	snap_session_queue(ss, kind, label, strcmp(kind, "turn") == 0, done,
	    arg);
	return 0;
}

static bool
snap_session_turn_queued(struct snap_session *ss)
{
	size_t i;

	for (i = 0; i < ss->nqueue; i++) {
		if (strcmp(ss->queue[i].kind, "turn") == 0)
			return true;
	}
	return false;
}

static void
snap_session_turn_now(struct snap_session *ss)
{
	ss->last_turn_us = util_mono_us();
	if (!snap_session_turn_queued(ss))
		snap_session_queue(ss, "turn", NULL, true, NULL, NULL);
}

static void
snap_session_turn_cb(evutil_socket_t fd, short what, void *arg)
{
	snap_session_turn_now(arg);
}

void
snap_session_turn(struct snap_session *ss)
{
	int64_t interval = (ss->cf != NULL ? ss->cf->snapshots.interval : 30) *
	    1000000, now = util_mono_us(), wait;
	struct timeval tv;

	if (ss->closing)
		return;
	if (ss->last_turn_us == 0 || now - ss->last_turn_us >= interval) {
		snap_session_turn_now(ss);
		return;
	}
	/* Within the interval: one snapshot when it runs out catches this turn. */
	if (ss->turn_ev == NULL)
		ss->turn_ev = evtimer_new(ss->base, snap_session_turn_cb, ss);
	if (evtimer_pending(ss->turn_ev, NULL))
		return;
	wait = ss->last_turn_us + interval - now;
	tv.tv_sec = wait / 1000000;
	tv.tv_usec = wait % 1000000;
	evtimer_add(ss->turn_ev, &tv);
}

void
snap_session_set_progress(struct snap_session *ss,
    void (*fn)(void *, int64_t), void *arg)
{
	ss->progress = fn;
	ss->progress_arg = arg;
}

void
snap_session_hold(struct snap_session *ss)
{
	ss->held++;
}

void
snap_session_release_hold(struct snap_session *ss)
{
	if (--ss->held > 0)
		return;
	if (!ss->closing)
		snap_session_next(ss);
	snap_session_reap(ss);
}

bool
snap_session_busy(struct snap_session *ss)
{
	return ss->job != NULL || ss->nqueue > 0 ||
	    (ss->turn_ev != NULL && evtimer_pending(ss->turn_ev, NULL));
}

int
snap_project(struct store *st, const struct config *cf, const char *dir,
    const char *label, struct snap_result *res, int64_t *session,
    char **cause)
{
	struct snap_take_opts o;
	struct snap_repo *repo;
	int rc;

	if ((repo = snap_repo_open(dir, cf, "project", cause)) == NULL)
		return -1;
	snap_legacy_project(st, cf, repo->worktree);
	if ((*session = store_snap_project_session(st, repo->worktree,
	    cause)) == -1) {
		snap_repo_free(repo);
		return -1;
	}
	memset(&o, 0, sizeof o);
	o.kind = "manual";
	o.label = label;
	o.session = *session;
	rc = snap_take_sync(st, repo, &o, res, cause);
	if (rc == 0) {
		store_snap_project_touch(st, *session);
		snap_keep_detached(NULL, repo->gitdir);
	}
	snap_repo_free(repo);
	return rc;
}

/*
 * A session that froze its ignore rules at its start: its later
 * snapshots (taken now by another process) use them too, beginning from
 * its start snapshot's entries.
 */
static void
snap_session_frozen(struct store *st, int64_t session, struct snap_repo *r)
{
	struct store_snapshot *start;
	char *path, *cause = NULL;
	int64_t seq;

	if ((path = snap_ignore_path(session, &cause)) == NULL) {
		free(cause);
		return;
	}
	if (access(path, R_OK) == 0 && (start = snap_resolve(st, session,
	    "start", &seq, &cause)) != NULL) {
		if (strcmp(start->kind, "start") == 0) {
			r->ignore = path;
			path = NULL;
			r->start_tree = xstrdup(start->tree);
		}
		store_snapshot_free(start);
	}
	free(cause);
	free(path);
}

/* The repository session SESSION's snapshots live in (or its project's). */
struct snap_repo *
snap_session_repo(struct store *st, const struct config *cf,
    int64_t session, const char *tag, char **cause)
{
	struct store_session *s;
	struct store_snap_where w;
	struct snap_repo *r;

	if (store_snap_where(st, session, &w) == 0 && !w.shadow &&
	    snap_legacy_migrate(st, cf, session, &w, cause) == -1) {
		store_snap_where_free(&w);
		return NULL;
	}
	store_snap_where_free(&w);
	if (store_snap_where(st, session, &w) == 0) {
		r = snap_repo_reopen(w.gitdir, w.worktree, cf, tag, true,
		    cause);
		store_snap_where_free(&w);
	} else if ((s = store_session_get(st, session)) == NULL) {
		*cause = xprintf("there is no session %lld", (long long)session);
		return NULL;
	} else {
		r = snap_repo_open(s->project, cf, tag, cause);
		store_session_free(s);
	}
	if (r != NULL)
		snap_session_frozen(st, session, r);
	return r;
}

int
snap_session_now(struct store *st, const struct config *cf, int64_t session,
    const char *label, struct snap_result *res, char **cause)
{
	struct snap_take_opts o;
	struct snap_repo *repo;
	int rc;

	if ((repo = snap_session_repo(st, cf, session, "now", cause)) == NULL)
		return -1;
	memset(&o, 0, sizeof o);
	o.kind = "manual";
	o.label = label;
	o.session = session;
	rc = snap_take_sync(st, repo, &o, res, cause);
	if (rc == 0) {
		store_snap_project_touch(st, session);
		snap_keep_detached(NULL, repo->gitdir);
	}
	snap_repo_free(repo);
	return rc;
}

int
snap_check_ended(struct store *st, int64_t session, const char *worktree,
    const char *why, char **cause)
{
	struct store_session **v;
	bool found = false;
	char *q;
	size_t n, i;
	int rc = 0;

	v = store_session_list(st, true, &n);
	for (i = 0; i < n && rc == 0; i++) {
		if (v[i]->id == session)
			found = true;
		if (!store_session_live(v[i]) ||
		    strcmp(v[i]->kind, "snapshot") == 0 ||
		    (v[i]->id != session && (worktree == NULL ||
		    strcmp(v[i]->project, worktree) != 0)))
			continue;
		if (v[i]->id == session)
			*cause = xprintf("session %lld is still running "
			    "(agentmux pid %ld); %s", (long long)session,
			    (long)v[i]->owner_pid, why);
		else {
			q = quote_name(worktree);
			*cause = xprintf("session %lld is running in %s (agentmux "
			    "pid %ld); end it before changing anything there",
			    (long long)v[i]->id, q, (long)v[i]->owner_pid);
			free(q);
		}
		rc = -1;
	}
	store_session_list_free(v, n);
	if (rc == 0 && !found) {
		*cause = xprintf("there is no session %lld", (long long)session);
		rc = -1;
	}
	return rc;
}

const char *
snap_session_gitdir(struct snap_session *ss)
{
	return ss->repo != NULL ? ss->repo->gitdir : NULL;
}
