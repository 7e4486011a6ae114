/* A session's snapshots: at its start (before the command runs), at turn boundaries, on demand, at its end; config changes at its end. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "session-int.h"
#include "store/store.h"

static void __attribute__((format(printf, 3, 4)))
session_snap_notice(struct session *s, const char *level, const char *fmt,
    ...)
{
	va_list ap;
	char *msg;

	va_start(ap, fmt);
	xvasprintf(&msg, fmt, ap);
	va_end(ap);
	store_event_add(s->ctx->st, s->id, strcmp(level, "alert") == 0 ?
	    "error" : level, "snapshot", "%s", msg);
	if (s->ev.notice != NULL)
		s->ev.notice(s->arg, s, level, msg);
	free(msg);
}

static void
session_snap_started(void *arg, const struct snap_result *res,
    const char *error)
{
	struct session *s = arg;
	size_t i;

	if (error != NULL) {
		session_snap_notice(s, "alert", "the start snapshot failed, so "
		    "this session cannot be undone: %s", error);
		return;
	}
	for (i = 0; i < res->nwarnings; i++)
		session_snap_notice(s, "warn", "start snapshot: %s",
		    res->warnings[i]);
}

/* What keeping the snapshots within budget did (its events are recorded already). */
static void
session_snap_kept(void *arg, const char *message)
{
	struct session *s = arg;

	if (s->ev.notice != NULL)
		s->ev.notice(s->arg, s, "warn", message);
}

static void
session_snap_progress(void *arg, int64_t files)
{
	struct session *s = arg;
	char *msg;

	if (s->ev.notice == NULL)
		return;
	msg = xprintf("snapshot: %lld files hashed", (long long)files);
	s->ev.notice(s->arg, s, "info", msg);
	free(msg);
}

/*
 * The start snapshot, taken before the command runs: it is started here,
 * once the jail is being made (held before the command), and the session
 * lets the command go only once its tree is saved and its ref written
 * (session_snap_when_saved): nothing may change the tree before that,
 * and until the ref is written a `git prune` in the jail could drop the
 * snapshot's new objects (a shadow repository is out of the jail's reach:
 * there the tree is enough); the rest follows on the loop. Failing to
 * snapshot does not stop the session; the user is told undo is not possible.
 */
void
session_snap_start(struct session *s)
{
	struct snap_checkout co;
	char *cause = NULL, *index;
	int64_t t0 = loop_trace_begin();

	s->snap = snap_session_create(s->ctx->base, s->ctx->st, s->cf,
	    s->id, s->project, &cause);
	loop_trace_end(t0, "start snapshot: its repository opened");
	if (s->snap == NULL) {
		session_snap_notice(s, "alert", "cannot snapshot the project, "
		    "so this session cannot be undone: %s", cause);
		free(cause);
		return;
	}
	snap_session_set_progress(s->snap, session_snap_progress, s);
	snap_session_set_notice(s->snap, session_snap_kept, s);
	/* A new worktree: what git's checkout hashed need not be hashed again. */
	if (s->wt != NULL && s->wt->admin != NULL && s->wt->base != NULL) {
		index = xprintf("%s/index", s->wt->admin);
		memset(&co, 0, sizeof co);
		co.base = s->wt->base;
		co.common = s->wt->common;
		co.index = index;
		co.tree = s->wt->tree;
		co.converted = s->wt->attrs_known ? &s->wt->converted : NULL;
		snap_session_set_checkout(s->snap, &co);
		free(index);
	}
	if (snap_session_take(s->snap, "start", NULL, session_snap_started, s,
	    &cause) == -1) {
		session_snap_notice(s, "alert", "%s", cause);
		free(cause);
		return;
	}
}

/* FN(S) runs on the loop once the start snapshot saved the tree; false: nothing to wait for. */
bool
session_snap_when_saved(struct session *s, void (*fn)(void *))
{
	return s->snap != NULL && snap_session_when_saved(s->snap, fn, s) == 1;
}

/* Says in red which saved files the end found replaced by a socket, FIFO or device. */
static void
session_snap_nonfiles(struct session *s, const struct snap_result *res)
{
	struct buf b;
	char *q;
	size_t i;

	if (res->nnonfiles == 0)
		return;
	buf_init(&b);
	for (i = 0; i < res->nnonfiles && i < 10; i++) {
		q = quote_name(res->nonfiles[i]);
		buf_printf(&b, "%s%s", i > 0 ? ", " : "", q);
		free(q);
	}
	session_snap_notice(s, "alert", "end snapshot: %zu saved file%s "
	    "replaced by a socket, FIFO or device, counted as deleted: %s%s "
	    "(agentmux undo puts %s back)", res->nnonfiles,
	    res->nnonfiles == 1 ? "" : "s", b.data, res->nnonfiles > 10 ?
	    ", ..." : "", res->nnonfiles == 1 ? "it" : "them");
	buf_free(&b);
}

static void
session_snap_ended(void *arg, const struct snap_result *res,
    const char *error)
{
	struct session *s = arg;
	char *msg;

	if (error == NULL && (msg = snap_too_long_message(res->modes)) !=
	    NULL) {
		session_snap_notice(s, "alert", "end snapshot: %s", msg);
		free(msg);
	}
	if (error == NULL)
		session_snap_nonfiles(s, res);
	if (error != NULL)
		session_snap_notice(s, "warn", "the end snapshot failed: %s",
		    error);
	/* It waits on for the look at what the snapshot recorded. */
	else if (res->tree != NULL && session_guard_stale(s, res->tree))
		return;
	s->snap_end_pending = false;
	session_snap_done(s);
}

/* Once the exit is reported and the history's end, the end's look at the index, the end snapshot and config_persist's run are over, the project is free for others to write. */
void
session_snap_done(struct session *s)
{
	if (!s->ended || s->guard_scan != NULL || s->history_ending ||
	    s->guard_end_job != NULL || s->guard_end_wanted ||
	    s->snap_end_pending ||
	    s->guard_blind_ending || s->confdiff_end != NULL || s->done_told)
		return;
	s->done_told = true;
	if (s->ev.done != NULL)
		s->ev.done(s->arg, s);
}

static void
session_snap_confdiff_done(void *arg, int n, const char *cause)
{
	struct session *s = arg;

	s->confdiff_end = NULL;
	if (n == -1)
		session_snap_notice(s, "warn", "config changes: %s", cause);
	session_snap_done(s);
}

/*
 * The command has ended (the jail and its overlays are gone): the end
 * snapshot is queued, and the profile's config_persist is carried out.
 */
void
session_snap_end(struct session *s)
{
	const struct config_agent *a;
	char *cause = NULL;

	if (s->snap_ended)
		return;
	s->snap_ended = true;
	s->snap_end_pending = s->snap != NULL;
	if (s->snap != NULL && snap_session_take(s->snap, "end", NULL,
	    session_snap_ended, s, &cause) == -1) {
		s->snap_end_pending = false;
		session_snap_notice(s, "warn", "%s", cause);
		free(cause);
		cause = NULL;
	}
	if ((a = config_agent(s->cf, s->agent)) == NULL ||
	    (a->persist != CONFIG_PERSIST_ALWAYS &&
	    a->persist != CONFIG_PERSIST_NEVER))
		return;
	/* What it merges is the jail's, up to 16 MiB a file: off the loop. */
	s->confdiff_end = snap_confdiff_end_start(s->ctx->base, s->ctx->st,
	    s->id, (int)a->persist, session_snap_confdiff_done, s, &cause);
	if (s->confdiff_end == NULL) {
		session_snap_notice(s, "warn", "config changes: %s", cause);
		free(cause);
	}
}

/*
 * Lets go of the snapshots: those queued are still taken, on the loop.
 * RAN: the command ran, so an end snapshot is taken if none was (the
 * session was killed).
 */
void
session_snap_free(struct session *s, bool ran)
{
	if (s->snap != NULL)
		snap_session_when_saved(s->snap, NULL, NULL);
	if (s->snap != NULL && ran && s->id != -1)
		session_snap_end(s);
	/* The config run goes on to its end without telling the session. */
	snap_confdiff_end_detach(s->confdiff_end);
	s->confdiff_end = NULL;
	snap_session_free(s->snap);
	s->snap = NULL;
}

int
session_snapshot(struct session *s, const char *label, char **cause)
{
	if (s->snap == NULL) {
		*cause = xstrdup("this session has no snapshots (its start "
		    "snapshot failed)");
		return -1;
	}
	/* Git runs on the project only once what the command planted is defused. */
	if (s->guard_scan != NULL) {
		*cause = xstrdup("this session's end is being checked (the "
		    "scan for what the command planted): its end snapshot "
		    "follows; snapshot again once it is done");
		return -1;
	}
	return snap_session_take(s->snap, "manual", label, NULL, NULL, cause);
}

/*
 * A request finished: one to a model host of the profile ends an agent
 * turn, and the tree is snapshotted if it changed (rate-limited).
 */
void
session_snap_request_done(struct session *s, const char *host)
{
	const struct config_agent *a;
	size_t i;

	if (s->snap == NULL || s->ended || host == NULL ||
	    (a = config_agent(s->cf, s->agent)) == NULL)
		return;
	for (i = 0; i < a->model_hosts.n; i++) {
		if (util_glob_match(a->model_hosts.v[i], host, true)) {
			snap_session_turn(s->snap);
			return;
		}
	}
}
