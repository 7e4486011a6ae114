/*
 * The user's git history while a session runs (see snap-history.c): the
 * jail gets an overlay over each git dir's objects, the objects its git
 * writes are brought back as it writes them (the user's own git outside sees
 * the agent's commits), and when it ends the rest follows, reflog entries
 * it removed are put back and refs it deleted reported. A session that
 * ended without agentmux is finished at the next start.
 */
#include <sys/stat.h>

#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "session-int.h"
#include "store/store.h"

/*
 * The objects the session's git writes are brought back when the watch
 * says it wrote some, after a short delay that gathers a commit's objects
 * into one pass (and bounds the passes a busy git causes); on a timer
 * only while there is no watch or work no write will announce.
 */
#define SESSION_HISTORY_GATHER_MS 250
#define SESSION_HISTORY_SECS 1

/*
 * A submodule's git dir PROJECT/.git/modules/NAME (REL: relative): its
 * work tree at NAME, where git submodule puts it, or where its
 * core.worktree says, if that dir's .git file names it back; then that
 * dir joins the repositories whose index the end checks.
 */
static void
session_history_module(struct session *s, const char *rel)
{
	char *gitdir, *want, *wt;
	const char *name = rel + strlen(".git/modules/");

	if (*name == '\0' || strv_contains(&s->guard_nested, name))
		return;
	gitdir = snap_nested_gitdir_of(s->project, name);
	want = xprintf("%s/%s", s->project, rel);
	if (gitdir != NULL && strcmp(gitdir, want) == 0)
		strv_add(&s->guard_nested, name);
	/* Else where its core.worktree says, if that names it back (a name that is not its path, one nested in another). */
	else if ((wt = snap_nested_module_worktree(s->project, rel)) != NULL) {
		if (!strv_contains(&s->guard_nested, wt))
			strv_add(&s->guard_nested, wt);
		free(wt);
	}
	free(want);
	free(gitdir);
}

/*
 * OBJECTS (a protected git dir's objects) in a nested repository of the
 * project, PROJECT/REL/.git (not the project's .git nor one under it), or
 * a submodule's git dir in .git/modules: REL joins the ones whose index
 * the end checks too.
 */
static void
session_history_nested(struct session *s, const char *objects)
{
	size_t plen = strlen(s->project), len = strlen(objects);
	static const char tail[] = "/objects";
	char *rel;

	if (len <= plen + sizeof tail || strncmp(objects, s->project, plen) !=
	    0 || objects[plen] != '/' || strcmp(objects + len - (sizeof tail -
	    1), tail) != 0)
		return;
	rel = xstrndup(objects + plen + 1, len - plen - 1 - (sizeof tail - 1));
	if (strncmp(rel, ".git/modules/", 13) == 0)
		session_history_module(s, rel);
	else if (strlen(rel) > 5 && strcmp(rel + strlen(rel) - 5, "/.git") ==
	    0 && strncmp(rel, ".git/", 5) != 0) {
		rel[strlen(rel) - 5] = '\0';
		if (!strv_contains(&s->guard_nested, rel))
			strv_add(&s->guard_nested, rel);
	}
	free(rel);
}

int
session_history_begin(struct session *s, struct session_setup *sp,
    void (*done)(void *), char **cause)
{
	char *gitdir, *err = NULL;

	/* A worktree session's objects are the shared git dir's. */
	gitdir = s->wt != NULL ? xstrdup(s->wt->common) :
	    xprintf("%s/.git", s->project);
	s->history_start = snap_history_start_new(gitdir, s->wt != NULL ?
	    NULL : s->project, sp->dir);
	free(gitdir);
	/* Without it, the walk still finds the nested repositories whose index the end checks. */
	s->history_start->find_only = !s->cf->jail.history;
	s->history_job = thread_job_start(s->ctx->base,
	    snap_history_start_run, s->history_start, done, s, &err);
	if (s->history_job == NULL) {
		*cause = xprintf("cannot look for the project's git dirs: %s",
		    err);
		free(err);
		snap_history_start_free(s->history_start);
		s->history_start = NULL;
		return -1;
	}
	return 1;
}

void
session_history_begin_stop(struct session *s)
{
	struct snap_history_start *hs = s->history_start;

	if (hs == NULL)
		return;
	atomic_store(&hs->stop, true);
	thread_job_free(s->history_job);
	s->history_job = NULL;
	/* What it kept at the start is put back by the history's end. */
	if (s->history == NULL) {
		s->history = hs->h;
		hs->h = NULL;
	}
	snap_history_start_free(hs);
	s->history_start = NULL;
}

/* The identity of the dir PATH into *ID, if it is one (not a link); else zero. */
static void
session_history_id(const char *path, struct snap_dirid *id)
{
	struct stat st;

	memset(id, 0, sizeof *id);
	if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		id->dev = st.st_dev;
		id->ino = st.st_ino;
	}
}

/*
 * The git dir GITDIR, found before the jail, with its objects and hooks
 * dirs, joins S's git dirs of the start: the end takes a git dir changed
 * in the session and not among them, or a hooks dir changed that was not
 * its git dir's, for a new one, everything in it the session's
 * (snap_plant_opts.gitids).
 */
static void
session_history_ids(struct session *s, const char *gitdir)
{
	char *hooks = xprintf("%s/hooks", gitdir);
	char *objects = xprintf("%s/objects", gitdir);
	struct snap_gitdirid *g;

	if (!strv_contains(&s->start_gitdirs, gitdir))
		strv_add(&s->start_gitdirs, gitdir);

	s->guard_gitids = xreallocarray(s->guard_gitids, s->guard_ngitids + 1,
	    sizeof *s->guard_gitids);
	g = &s->guard_gitids[s->guard_ngitids++];
	session_history_id(gitdir, &g->dir);
	session_history_id(objects, &g->objects);
	session_history_id(hooks, &g->hooks);
	free(objects);
	free(hooks);
	s->guard_gitids_known = true;
}

/* The project's dirs as the start's walk found them: the end tells what was moved in (snap-dirmap.c). */
static void
session_history_dirs(struct session *s, struct snap_history_start *hs)
{
	if (hs == NULL || hs->dirs == NULL)
		return;
	snap_dirmap_unref(s->start_dirs);
	s->start_dirs = hs->dirs;
	hs->dirs = NULL;
}

/*
 * [jail] history = off: the git dirs the walk found (nothing kept) give
 * the nested repositories whose index the end checks, read now, before
 * the jail.
 */
static void
session_history_found(struct session *s)
{
	struct snap_history_start *hs = s->history_start;
	char *objects;
	size_t i;

	for (i = 0; hs != NULL && i < hs->found.n; i++) {
		session_history_ids(s, hs->found.v[i]);
		objects = xprintf("%s/objects", hs->found.v[i]);
		session_history_nested(s, objects);
		free(objects);
	}
	for (i = 0; hs != NULL && i < hs->alerts.n; i++)
		log_warnx("%s", hs->alerts.v[i]);
	session_history_dirs(s, hs);
	snap_history_start_free(hs);
	s->history_start = NULL;
	snap_blind_nested(s->project, &s->guard_nested, &s->guard_blind);
}

int
session_history_start(struct session *s, struct session_setup *sp,
    char **cause)
{
	struct snap_history_start *hs = s->history_start;
	const char *path, *upper, *work;
	char *gitdir;
	size_t i;

	if (!s->cf->jail.history) {
		strv_add(&sp->notices, "[jail] history = off: the jailed command "
		    "can delete the objects, refs and reflogs of the project's "
		    "git history");
		session_history_found(s);
		return 0;
	}
	for (i = 0; i < hs->notices.n; i++)
		strv_add(&sp->notices, hs->notices.v[i]);
	for (i = 0; i < hs->alerts.n; i++)
		strv_add(&sp->alerts, hs->alerts.v[i]);
	s->history = hs->h;
	hs->h = NULL;
	if (s->history == NULL && hs->cause != NULL) {
		*cause = xprintf("cannot keep the project's git history out of "
		    "the jail's reach: %s", hs->cause);
		snap_history_start_free(hs);
		s->history_start = NULL;
		return -1;
	}
	session_history_dirs(s, hs);
	snap_history_start_free(hs);
	s->history_start = NULL;
	for (i = 0; i < snap_history_count(s->history); i++) {
		snap_history_overlay(s->history, i, &path, &upper, &work);
		strv_add(&sp->ov_path, path);
		strv_add(&sp->ov_lower, path);
		strv_add(&sp->ov_upper, upper);
		strv_add(&sp->ov_work, work);
		session_history_nested(s, path);
		gitdir = xstrndup(path, strlen(path) - strlen("/objects"));
		session_history_ids(s, gitdir);
		free(gitdir);
	}
	/* Before the jail: marks there now are the user's. */
	snap_blind_nested(s->project, &s->guard_nested, &s->guard_blind);
	return 0;
}

/* The jail could not mount a history overlay: say how to run without it. */
void
session_history_hint(struct session *s, char **cause)
{
	char *more;

	if (s->history == NULL || *cause == NULL ||
	    strstr(*cause, "overlay") == NULL ||
	    strstr(*cause, "/objects") == NULL)
		return;
	more = xprintf("%s; the git history's overlay needs overlayfs with "
	    "user extended attributes on the data dir's file system: move "
	    "the data dir ($XDG_DATA_HOME) to one that has them, or set "
	    "'history = off' under [jail] in the config to run without "
	    "protecting it", *cause);
	free(*cause);
	*cause = more;
}

/* A pass, and the next: at the loop's next turn if this one had to stop, in a while if it must poll. */
static void
session_history_cb(evutil_socket_t fd, short what, void *arg)
{
	struct session *s = arg;
	struct timeval tv = { SESSION_HISTORY_SECS, 0 }, now = { 0, 0 };

	if (!snap_history_import(s->history, s->ctx->base))
		event_add(s->history_ev, &now);
	else if (snap_history_busy(s->history))
		event_add(s->history_ev, &tv);
}

/* The session's git wrote: a pass soon, unless one is due already (a busy git does not put it off). */
static void
session_history_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct session *s = arg;
	struct timeval tv = { 0, SESSION_HISTORY_GATHER_MS * 1000 };

	if (snap_history_watch_read(s->history) &&
	    !evtimer_pending(s->history_ev, NULL))
		event_add(s->history_ev, &tv);
}

void
session_history_watch(struct session *s)
{
	struct timeval now = { 0, 0 };
	int fd;

	if (s->history == NULL)
		return;
	s->history_ev = evtimer_new(s->ctx->base, session_history_cb, s);
	if (s->history_ev == NULL)
		fatalx("cannot create a timer");
	fd = snap_history_watch(s->history);
	/* Links and special files in its writable git dirs go as they come. */
	if (s->wt != NULL)
		snap_history_watch_worktree(s->history, s->wt);
	if (fd != -1) {
		s->history_watch_ev = event_new(s->ctx->base, fd,
		    EV_READ | EV_PERSIST, session_history_read_cb, s);
		if (s->history_watch_ev == NULL)
			fatalx("cannot create the history's watch event");
		event_add(s->history_watch_ev, NULL);
	}
	/* A first pass: what was written before the watch was set. */
	event_add(s->history_ev, &now);
}

/* Tells the user and the record what the history's end found. */
static void
session_history_tell(struct session *s, struct strv *alerts,
    struct strv *warnings)
{
	size_t i;

	for (i = 0; i < alerts->n; i++) {
		store_event_add(s->ctx->st, s->id, "error", "tampering", "%s",
		    alerts->v[i]);
		store_session_flag(s->ctx->st, s->id, "tampering");
		if (s->ev.notice != NULL && !s->freed)
			s->ev.notice(s->arg, s, "alert", alerts->v[i]);
	}
	for (i = 0; i < warnings->n; i++) {
		store_event_add(s->ctx->st, s->id, "warn", "history", "%s",
		    warnings->v[i]);
		if (s->ev.notice != NULL && !s->freed)
			s->ev.notice(s->arg, s, "warn", warnings->v[i]);
	}
}

static void session_history_looked(void *);

/* History ends still running, of sessions freed or not. */
static int session_history_nending;

/* The history's end is over: told, and the end snapshot may run. */
static void
session_history_ended(void *arg, struct strv *alerts, struct strv *warnings)
{
	struct session *s = arg;
	struct snap_session *held = s->history_snap;

	session_history_tell(s, alerts, warnings);
	snap_history_free(s->history);
	s->history = NULL;
	s->history_snap = NULL;
	s->history_ending = false;
	session_history_nending--;
	if (held != NULL)
		snap_session_release_hold(held);
	/* Inside session_history_stop, its caller goes on and tells. */
	if (!s->history_in_stop)
		session_snap_done(s);
	session_remove_ref(s);
}

/*
 * With [jail] history = off there is no history's end: a worktree
 * session's own git dirs get its checks all the same (its HEAD, links,
 * special files and files too big for a ref there), told in red.
 */
static void
session_history_wt_end(struct session *s)
{
	struct strv alerts, none;

	if (s->wt == NULL || s->wt_ended)
		return;
	s->wt_ended = true;
	strv_init(&alerts);
	strv_init(&none);
	snap_history_worktree_end(NULL, s->id, &alerts);
	session_history_tell(s, &alerts, &none);
	strv_free(&alerts);
	strv_free(&none);
}

/*
 * The jail is gone: everything left is brought back, the reflogs mended,
 * on the loop (a pack the session's git wrote is indexed by git
 * index-pack, which may take a while). The session's snapshots wait for
 * it: the end snapshot records the refs as mended.
 */
void
session_history_stop(struct session *s)
{
	if (s->history_ev != NULL)
		event_free(s->history_ev);
	s->history_ev = NULL;
	if (s->history_watch_ev != NULL)
		event_free(s->history_watch_ev);
	s->history_watch_ev = NULL;
	if (s->history == NULL) {
		session_history_wt_end(s);
		return;
	}
	if (s->history_ending)
		return;
	s->history_ending = true;
	session_history_nending++;
	session_add_ref(s);
	if ((s->history_snap = s->snap) != NULL)
		snap_session_hold(s->history_snap);
	s->history_in_stop = true;
	snap_history_end_looked(s->history, session_history_looked, s);
	snap_history_end(s->history, s->ctx->base, s->id,
	    session_history_ended, s);
	s->history_in_stop = false;
}

/* The git dirs are looked at (what to keep follows): what waits for that goes on. */
static void
session_history_looked(void *arg)
{
	struct session *s = arg;
	void (*then)(struct session *) = s->history_then;

	s->history_looked = true;
	if (s->history_in_stop)
		return;
	s->history_then = NULL;
	if (then != NULL && !s->freed)
		then(s);
}

bool
session_history_stop_begin(struct session *s,
    void (*then)(struct session *))
{
	/* One already under way (not reached today) would never call THEN. */
	if (s->history_ending)
		return false;
	s->history_then = then;
	s->history_looked = false;
	session_history_stop(s);
	if (s->history_ending && !s->history_looked)
		return true;
	s->history_then = NULL;
	return false;
}

void
session_history_wait(struct session *s)
{
	if (s->history_ending && s->history != NULL)
		snap_history_end_wait(s->history);
}

int
session_history_endings(void)
{
	return session_history_nending;
}

void
session_history_recover(struct session_ctx *ctx)
{
	snap_history_recover(ctx->st, ctx->base, ctx->data_dir);
}
