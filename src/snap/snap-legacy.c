/*
 * Snapshots agentmux took before it had repositories of its own live in
 * the project's .git, under refs/agentmux/. They are brought into the own
 * repository once, the first time agentmux touches their session or
 * project: git fetch checks every object it receives against its id, and
 * each snapshot's commit must be there with its recorded tree. The
 * project's .git is read only, never written; its old refs stay until
 * the user removes them.
 */
#include <stdlib.h>
#include <string.h>

#include "snap/snap-int.h"

/* Seconds git may take over the project's .git, where anything may be planted. */
#define SNAP_LEGACY_TIMEOUT 300

/* The fetch of session ID's snapshot refs from GITDIR: ARGS points into A. */
struct snap_legacy_fetch_args {
	char depth[32], chain[96], snaps[96];
	const char *args[18];
};

static void
snap_legacy_fetch_args(struct snap_legacy_fetch_args *a, const char *gitdir,
    int64_t id, size_t nsnaps)
{
	const char *args[] = { "-c", "fetch.fsckObjects=true", "-c",
	    "transfer.fsckObjects=true", "-c", "protocol.allow=never", "-c",
	    "protocol.file.allow=always", "fetch", "--no-tags",
	    "--no-write-fetch-head", "--no-recurse-submodules", "-q", a->depth,
	    gitdir, a->chain, a->snaps, NULL };

	/*
	 * A chain's first commit has the user's HEAD as its parent: the
	 * depth keeps the user's history out (a session's chain is no longer
	 * than its snapshots).
	 */
	snprintf(a->depth, sizeof a->depth, "--depth=%zu", nsnaps + 1);
	snprintf(a->chain, sizeof a->chain, "+refs/agentmux/sessions/%lld:"
	    "refs/agentmux/sessions/%lld", (long long)id, (long long)id);
	snprintf(a->snaps, sizeof a->snaps, "+refs/agentmux/snaps/%lld/*:"
	    "refs/agentmux/snaps/%lld/*", (long long)id, (long long)id);
	memcpy(a->args, args, sizeof args);
}

/* The git log that shows each snapshot of V's commit and tree, into ARGS. */
static void
snap_legacy_check_args(struct strv *args, struct store_snapshot **v, size_t n)
{
	size_t i;

	strv_init(args);
	strv_add(args, "log");
	strv_add(args, "--no-walk=unsorted");
	strv_add(args, "--format=%H %T");
	for (i = 0; i < n; i++)
		strv_add(args, v[i]->commit);
}

/* Whether OUT (that log) has every snapshot of V with the tree its record names. */
static int
snap_legacy_check_out(const struct buf *out, struct store_snapshot **v,
    size_t n, char **cause)
{
	size_t i;

	for (i = 0; i < n; i++) {
		char *line = xprintf("%s %s\n", v[i]->commit, v[i]->tree);
		bool found = out->data != NULL && strstr(out->data, line) != NULL;

		free(line);
		if (!found) {
			*cause = xprintf("snapshot %zu (%.12s) did not come over "
			    "with the tree it was recorded with", i + 1,
			    v[i]->commit);
			return -1;
		}
	}
	return 0;
}

/* Fetches session ID's snapshot refs from the project's GITDIR into R; -1 with *CAUSE. */
static int
snap_legacy_fetch(struct snap_repo *r, const char *gitdir, int64_t id,
    size_t nsnaps, char **cause)
{
	struct snap_legacy_fetch_args a;

	snap_legacy_fetch_args(&a, gitdir, id, nsnaps);
	return snap_git(r, SNAP_ENV_DB, a.args, NULL, NULL, cause);
}

/* Whether every snapshot of V is in R with the tree its record names. */
static int
snap_legacy_check(struct snap_repo *r, struct store_snapshot **v, size_t n,
    char **cause)
{
	struct strv args;
	struct buf out;
	int rc = -1;

	snap_legacy_check_args(&args, v, n);
	buf_init(&out);
	if (snap_git(r, SNAP_ENV_DB, (const char *const *)args.v, NULL, &out,
	    cause) == 0)
		rc = snap_legacy_check_out(&out, v, n, cause);
	buf_free(&out);
	strv_free(&args);
	return rc;
}

/* Why session ID's snapshots in GITDIR stay there, from ERR; caller frees. */
static char *
snap_legacy_failed(int64_t id, const char *gitdir, const char *err)
{
	return xprintf("the snapshots of session %lld are in %s, from before "
	    "agentmux kept its own, and could not be brought over: %s",
	    (long long)id, gitdir, err);
}

/* The N snapshots of session ID are in R: its record moves there. */
static int
snap_legacy_moved(struct store *st, int64_t id, struct snap_repo *r,
    const char *gitdir, size_t n, char **cause)
{
	if (store_snap_repo_move(st, id, r->gitdir, cause) == -1)
		return -1;
	store_event_add(st, id, "info", "snapshot", "the session's %zu "
	    "snapshot(s) were brought from %s into %s", n, gitdir, r->gitdir);
	return 0;
}

int
snap_legacy_migrate(struct store *st, const struct config *cf, int64_t id,
    const struct store_snap_where *w, char **cause)
{
	struct store_snapshot **v;
	struct snap_repo *r;
	char *err = NULL;
	size_t n;
	int rc = -1;

	if ((r = snap_repo_open(w->worktree, cf, "legacy", cause)) == NULL)
		return -1;
	/* git reads the project's .git, where anything may be planted. */
	r->timeout = SNAP_LEGACY_TIMEOUT;
	v = store_snapshot_list(st, id, &n);
	if (n > 0 && (snap_legacy_fetch(r, w->gitdir, id, n, &err) == -1 ||
	    snap_legacy_check(r, v, n, &err) == -1))
		*cause = snap_legacy_failed(id, w->gitdir, err);
	else
		rc = snap_legacy_moved(st, id, r, w->gitdir, n, cause);
	free(err);
	store_snapshot_list_free(v, n);
	snap_repo_free(r);
	return rc;
}

/* A session's snapshots that could not come over: logged and recorded. */
static void
snap_legacy_warn(struct store *st, int64_t id, const char *cause)
{
	log_warnx("%s", cause);
	store_event_add(st, id, "warn", "snapshot", "%s", cause);
}

int
snap_legacy_project(struct store *st, const struct config *cf,
    const char *worktree)
{
	struct store_snap_where w;
	int64_t *ids;
	char **gitdirs, *cause = NULL;
	size_t n, i;
	int failed = 0;

	store_snap_legacy_list(st, worktree, &ids, &gitdirs, &n);
	for (i = 0; i < n; i++) {
		w.gitdir = gitdirs[i];
		w.worktree = (char *)worktree;
		w.shadow = false;
		if (snap_legacy_migrate(st, cf, ids[i], &w, &cause) == -1) {
			snap_legacy_warn(st, ids[i], cause);
			free(cause);
			cause = NULL;
			failed++;
		}
		free(gitdirs[i]);
	}
	free(ids);
	free(gitdirs);
	return failed;
}

/* ---- the same on a loop, for a session's start ---- */

struct snap_legacy {
	struct event_base *base;
	struct store *st;
	const struct config *cf;
	char *worktree;
	int64_t *ids;
	char **gitdirs;
	size_t n, i;                    /* sessions to bring over, the one at */
	struct snap_repo *r;            /* the own repository, for the one at */
	struct store_snapshot **v;      /* its snapshots */
	size_t nv;
	struct snap_legacy_waiter *waiters;   /* told once all is done */
	size_t nwaiters;
	struct snap_legacy *next;       /* in snap_legacy_running */
};

struct snap_legacy_waiter {
	void (*done)(void *);
	void *arg;
};

/* The projects being brought over: a second start on one waits for the first. */
static struct snap_legacy *snap_legacy_running;

static void snap_legacy_next(struct snap_legacy *);

/* Lets go of what the session at L->I used; CAUSE (freed) says why it stays behind. */
static void
snap_legacy_clear(struct snap_legacy *l, char *cause)
{
	if (cause != NULL)
		snap_legacy_warn(l->st, l->ids[l->i], cause);
	free(cause);
	store_snapshot_list_free(l->v, l->nv);
	l->v = NULL;
	l->nv = 0;
	snap_repo_free(l->r);
	l->r = NULL;
}

/* The session at L->I is done with, from a git that ended: the next. */
static void
snap_legacy_step_done(struct snap_legacy *l, char *cause)
{
	snap_legacy_clear(l, cause);
	l->i++;
	snap_legacy_next(l);
}

/* The snapshots' commits were looked up: checked, then the record moves. */
static void
snap_legacy_checked(struct proc *p, void *arg)
{
	struct snap_legacy *l = arg;
	const char *gitdir = l->gitdirs[l->i];
	char *err = NULL, *cause = NULL;

	if (proc_status(p) != 0)
		err = snap_git_error("log", p);
	else
		snap_legacy_check_out(proc_out(p), l->v, l->nv, &err);
	proc_free(p);
	if (err != NULL)
		cause = snap_legacy_failed(l->ids[l->i], gitdir, err);
	else
		snap_legacy_moved(l->st, l->ids[l->i], l->r, gitdir, l->nv,
		    &cause);
	free(err);
	snap_legacy_step_done(l, cause);
}

/* The fetch ended: what came over is checked against the records. */
static void
snap_legacy_fetched(struct proc *p, void *arg)
{
	struct snap_legacy *l = arg;
	struct strv args;
	char *err = NULL;

	if (proc_status(p) != 0)
		err = snap_git_error("fetch", p);
	proc_free(p);
	if (err == NULL) {
		snap_legacy_check_args(&args, l->v, l->nv);
		snap_git_start(l->base, l->r, SNAP_ENV_DB,
		    (const char *const *)args.v, NULL, NULL, snap_legacy_checked,
		    l, &err);
		strv_free(&args);
	}
	/* Set only if the fetch failed or the log could not start. */
	if (err != NULL) {
		snap_legacy_step_done(l, snap_legacy_failed(l->ids[l->i],
		    l->gitdirs[l->i], err));
		free(err);
	}
}

/* Starts bringing over the session at L->I; false (and *CAUSE) if it is done at once. */
static bool
snap_legacy_begin(struct snap_legacy *l, char **cause)
{
	const char *gitdir = l->gitdirs[l->i];
	struct snap_legacy_fetch_args a;
	char *err = NULL;

	*cause = NULL;
	if ((l->r = snap_repo_open(l->worktree, l->cf, "legacy",
	    cause)) == NULL)
		return false;
	l->r->timeout = SNAP_LEGACY_TIMEOUT;
	l->v = store_snapshot_list(l->st, l->ids[l->i], &l->nv);
	if (l->nv == 0) {
		snap_legacy_moved(l->st, l->ids[l->i], l->r, gitdir, 0, cause);
		return false;
	}
	snap_legacy_fetch_args(&a, gitdir, l->ids[l->i], l->nv);
	if (snap_git_start(l->base, l->r, SNAP_ENV_DB, a.args, NULL, NULL,
	    snap_legacy_fetched, l, &err) != NULL)
		return true;
	*cause = snap_legacy_failed(l->ids[l->i], gitdir, err);
	free(err);
	return false;
}

static void
snap_legacy_free(struct snap_legacy *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->gitdirs[i]);
	free(l->gitdirs);
	free(l->ids);
	free(l->worktree);
	free(l->waiters);
	free(l);
}

static void
snap_legacy_wait(struct snap_legacy *l, void (*done)(void *), void *arg)
{
	l->waiters = xreallocarray(l->waiters, l->nwaiters + 1,
	    sizeof *l->waiters);
	l->waiters[l->nwaiters].done = done;
	l->waiters[l->nwaiters++].arg = arg;
}

/* L is done: it goes, then each that waited hears (any may start another). */
static void
snap_legacy_finish(struct snap_legacy *l)
{
	struct snap_legacy **lp;
	struct snap_legacy_waiter *w = l->waiters;
	size_t n = l->nwaiters, i;

	for (lp = &snap_legacy_running; *lp != NULL; lp = &(*lp)->next) {
		if (*lp == l) {
			*lp = l->next;
			break;
		}
	}
	l->waiters = NULL;
	snap_legacy_free(l);
	for (i = 0; i < n; i++)
		w[i].done(w[i].arg);
	free(w);
}

/* One session after another; once all are done, L goes. */
static void
snap_legacy_next(struct snap_legacy *l)
{
	char *cause;

	for (; l->i < l->n; l->i++) {
		if (snap_legacy_begin(l, &cause))
			return;
		snap_legacy_clear(l, cause);
	}
	snap_legacy_finish(l);
}

bool
snap_legacy_project_start(struct event_base *base, struct store *st,
    const struct config *cf, const char *worktree, void (*done)(void *),
    void *arg)
{
	struct snap_legacy *l;

	for (l = snap_legacy_running; l != NULL; l = l->next) {
		if (strcmp(l->worktree, worktree) == 0) {
			snap_legacy_wait(l, done, arg);
			return true;
		}
	}
	l = xcalloc(1, sizeof *l);
	store_snap_legacy_list(st, worktree, &l->ids, &l->gitdirs, &l->n);
	if (l->n == 0) {
		snap_legacy_free(l);
		return false;
	}
	l->base = base;
	l->st = st;
	l->cf = cf;
	l->worktree = xstrdup(worktree);
	snap_legacy_wait(l, done, arg);
	l->next = snap_legacy_running;
	snap_legacy_running = l;
	snap_legacy_next(l);
	return true;
}
