/*
 * Keeping a project's snapshot repository bounded, in the background:
 * loose objects (written uncompressed, for speed) are packed with deltas,
 * and when the snapshots still take more than [snapshots] max_size, the
 * oldest turn snapshots are dropped (never a session's start, end or
 * last one) and the user is told. Each step is a git command on the
 * event loop; nothing here waits.
 */
#include <sys/file.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "snap/snap-int.h"

/* Loose objects or bytes of them that make a pack worth it. */
#define SNAP_KEEP_LOOSE 2048
#define SNAP_KEEP_LOOSE_BYTES (64LL << 20)
/* Packs beyond this are folded into one. */
#define SNAP_KEEP_PACKS 16
/*
 * Unreachable objects younger than this stay: a snapshot being taken in
 * another process may be about to name them (git freshens what it
 * reuses, so an object in use is never that old).
 */
#define SNAP_KEEP_UNPACK "--unpack-unreachable=1.hour.ago"
#define SNAP_KEEP_EXPIRE "--expire=1.hour.ago"
/*
 * Held by whoever packs or prunes the repository: this process's keep, or
 * a detached repack (flock(1)) that outlived an earlier one. Two at once
 * undo each other's work: a repack packing loose objects a prune is
 * deleting keeps them on disk past the budget.
 */
#define SNAP_KEEP_LOCK "agentmux-keep.lock"
/*
 * A file in each objects/XX directory, so that no pack empties it: git
 * prune-packed (run by repack -d, under the lock) and prune rmdir every
 * fan-out directory they leave empty, and a snapshot writing there at once
 * (the lock does not cover snapshots: they never wait for a pack) failed
 * with "unable to create temporary file" when the rmdir fell between its
 * git's mkdir and mkstemp. The name is one git passes over: fsck says
 * nothing of tmp_obj_*, and prune only takes one older than its expiry,
 * which a date in the future never is.
 */
/* SNAP_KEEP_FANOUT (snap-int.h) is its name. */
#define SNAP_KEEP_FANOUT_TIME 4102444800LL /* 2100-01-01 */
/* How often a keep asks again for the lock a detached repack holds. */
#define SNAP_KEEP_LOCK_RETRY_MS 200

struct snap_keep {
	struct event_base *base;
	struct store *st;
	struct snap_repo *repo;
	int64_t max_size;
	struct proc *proc;
	int64_t loose;            /* count-objects: loose objects and their bytes */
	int64_t loose_bytes;
	int64_t packs;
	int64_t usage;            /* bytes the reachable objects take */
	struct store_snapshot **cand;   /* turn snapshots that may go, oldest first */
	size_t ncand;
	struct strv kept;         /* commits of the snapshots that stay */
	size_t lo, hi;            /* the search for how many to drop */
	size_t ndrop;
	bool dropped;
	bool thorough;            /* gc: fold and prune even without a drop */
	bool prune;               /* the next fold is followed by a prune */
	bool recompress;          /* the next fold compresses afresh (a first snapshot's pack) */
	struct strv messages;
	int lock;                 /* the repository's keep lock, held; -1: not */
	struct event *wait;       /* retries the lock while another holds it */
	void (*done)(void *, const struct snap_keep *);
	void *arg;
};

static void snap_keep_usage(struct snap_keep *);
static void snap_keep_try(struct snap_keep *);
static void snap_keep_fold(struct snap_keep *);
static void snap_keep_end(struct snap_keep *);
static void snap_keep_unlock(struct snap_keep *);

/*
 * Takes GITDIR's keep lock without waiting: its descriptor, -2 if another
 * holds it, -1 if it cannot be had at all (then nothing stops the keep).
 */
static int
snap_keep_lock_take(const char *gitdir)
{
	char *path = xprintf("%s/%s", gitdir, SNAP_KEEP_LOCK);
	int fd, error;

	fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd == -1)
		log_debug("%s: %s", path, strerror(errno));
	free(path);
	if (fd == -1 || flock(fd, LOCK_EX | LOCK_NB) == 0)
		return fd;
	error = errno;
	close(fd);
	return error == EWOULDBLOCK ? -2 : -1;
}

static void
snap_keep_unlock(struct snap_keep *k)
{
	if (k->lock >= 0)
		close(k->lock);
	k->lock = -1;
}

/* Puts the fan-out file in DIRFD's objects/XX (made if need be); -1 on failure. */
static int
snap_keep_fanout_one(int objects, const char *name)
{
	struct timespec ts[2] = { { SNAP_KEEP_FANOUT_TIME, 0 },
	    { SNAP_KEEP_FANOUT_TIME, 0 } };
	struct stat sb;
	int dir, fd, r = 0;

	if (mkdirat(objects, name, 0700) == -1 && errno != EEXIST)
		return -1;
	dir = openat(objects, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (dir == -1)
		return -1;
	if (fstatat(dir, SNAP_KEEP_FANOUT, &sb, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISREG(sb.st_mode) && sb.st_mtime >= SNAP_KEEP_FANOUT_TIME) {
		close(dir);
		return 0;
	}
	fd = openat(dir, SNAP_KEEP_FANOUT, O_WRONLY | O_CREAT | O_NOFOLLOW |
	    O_NONBLOCK | O_CLOEXEC, 0444);
	if (fd == -1 || futimens(fd, ts) == -1)
		r = -1;
	if (fd != -1)
		close(fd);
	close(dir);
	return r;
}

void
snap_keep_fanout(const char *gitdir)
{
	char *path = xprintf("%s/objects", gitdir), name[3];
	int objects, i;

	objects = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (objects == -1) {
		log_debug("%s: %s", path, strerror(errno));
		free(path);
		return;
	}
	for (i = 0; i < 256; i++) {
		snprintf(name, sizeof name, "%02x", i);
		if (snap_keep_fanout_one(objects, name) == -1) {
			log_debug("%s/%s: %s", path, name, strerror(errno));
			break;
		}
	}
	close(objects);
	free(path);
}

/* Within the budget: done, unless gc asked for all of it (a fold and a prune). */
static void
snap_keep_last(struct snap_keep *k)
{
	if (k->thorough && !k->prune) {
		k->prune = true;
		snap_keep_fold(k);
	} else
		snap_keep_end(k);
}

const char *const *
snap_keep_messages(const struct snap_keep *k, size_t *n)
{
	*n = k->messages.n;
	return (const char *const *)k->messages.v;
}

static void
snap_keep_free_cand(struct snap_keep *k)
{
	size_t i;

	for (i = 0; i < k->ncand; i++)
		store_snapshot_free(k->cand[i]);
	free(k->cand);
	k->cand = NULL;
	k->ncand = 0;
}

void
snap_keep_free(struct snap_keep *k)
{
	if (k == NULL)
		return;
	/* A git command still running is asked to stop: git cleans up after itself. */
	proc_term(k->proc);
	snap_keep_unlock(k);
	if (k->wait != NULL)
		event_free(k->wait);
	snap_keep_free_cand(k);
	strv_free(&k->kept);
	strv_free(&k->messages);
	snap_repo_free(k->repo);
	free(k);
}

static void
snap_keep_end(struct snap_keep *k)
{
	proc_free(k->proc);
	k->proc = NULL;
	snap_keep_unlock(k);
	if (k->done != NULL)
		k->done(k->arg, k);
}

/*
 * Runs git ARGS (with INPUT) in the own repository, niced: it is
 * background work, and the user's session comes first. CB when done.
 */
static void
snap_keep_git(struct snap_keep *k, const char *const *args,
    const struct buf *input, proc_cb cb)
{
	struct proc_opts o;
	struct strv argv;
	char *cause = NULL;

	strv_init(&argv);
	strv_add(&argv, "nice");
	strv_add(&argv, "-n");
	strv_add(&argv, "10");
	strv_add(&argv, "git");
	strv_add(&argv, "--no-pager");
	for (; *args != NULL; args++)
		strv_add(&argv, *args);
	memset(&o, 0, sizeof o);
	o.data_max = snap_git_mem;
	o.argv = argv.v;
	o.env = k->repo->env[SNAP_ENV_DB].v;
	o.dir = k->repo->gitdir;
	o.out_fd = -1;
	o.umask = 077;
	if (input != NULL) {
		o.input = input->data != NULL ? input->data : "";
		o.inputlen = input->len;
	}
	proc_free(k->proc);
	k->proc = proc_start(k->base, &o, cb, k, &cause);
	strv_free(&argv);
	if (k->proc == NULL) {
		log_warnx("snapshots of %s: %s", k->repo->worktree, cause);
		free(cause);
		snap_keep_end(k);
	}
}

/* A failed step is logged; what follows is skipped. */
static bool
snap_keep_ok(struct snap_keep *k, struct proc *p, const char *what)
{
	char *err;

	if (proc_status(p) == 0)
		return true;
	err = snap_git_error(what, p);
	log_warnx("snapshots of %s: %s", k->repo->worktree, err);
	free(err);
	snap_keep_end(k);
	return false;
}

static int64_t
snap_keep_field(const char *out, const char *name)
{
	const char *p;
	size_t n = strlen(name);

	for (p = out; p != NULL && *p != '\0'; p = strchr(p, '\n')) {
		if (*p == '\n')
			p++;
		if (strncmp(p, name, n) == 0 && p[n] == ':')
			return strtoll(p + n + 1, NULL, 10);
	}
	return 0;
}

static void
snap_keep_pruned_cb(struct proc *p, void *arg)
{
	struct snap_keep *k = arg;

	if (snap_keep_ok(k, p, "prune"))
		snap_keep_end(k);
}

/* After a drop: a full pack, and unreachable objects past the grace go. */
static void
snap_keep_folded_cb(struct proc *p, void *arg)
{
	struct snap_keep *k = arg;
	const char *args[] = { "prune", SNAP_KEEP_EXPIRE, NULL };

	if (!snap_keep_ok(k, p, "repack"))
		return;
	if (k->prune)
		snap_keep_git(k, args, NULL, snap_keep_pruned_cb);
	else
		snap_keep_usage(k);
}

static void
snap_keep_fold(struct snap_keep *k)
{
	const char *args[] = { "repack", "-A", "-d", "-q", SNAP_KEEP_UNPACK,
	    NULL, NULL };

	if (k->recompress)
		args[5] = "-F";
	k->recompress = false;
	snap_keep_git(k, args, NULL, snap_keep_folded_cb);
}

/*
 * Whether GITDIR holds a first snapshot's objects, packed uncompressed,
 * and takes the mark: a pack of everything that compresses them afresh
 * (-F: a plain repack would copy their data as it is) follows at once.
 */
static bool
snap_keep_take_mark(const char *gitdir)
{
	char *p = xprintf("%s/%s", gitdir, SNAP_KEEP_MARK);
	bool marked = unlink(p) == 0;

	free(p);
	return marked;
}

void
snap_keep_mark_packed(const char *gitdir)
{
	char *p = xprintf("%s/%s", gitdir, SNAP_KEEP_MARK);
	int fd;

	fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd == -1)
		log_debug("cannot write %s: %s", p, strerror(errno));
	else
		close(fd);
	free(p);
}

static void
snap_keep_refs_cb(struct proc *p, void *arg)
{
	struct snap_keep *k = arg;

	if (snap_keep_ok(k, p, "update-ref"))
		snap_keep_fold(k);
}

/* Says what was dropped, in each session it was dropped from. */
static void
snap_keep_tell(struct snap_keep *k)
{
	char size[16], max[16], *msg;
	size_t i;

	util_fmt_size(size, sizeof size, k->usage);
	util_fmt_size(max, sizeof max, k->max_size);
	msg = xprintf("%zu turn snapshot%s of %s dropped, the oldest first: its "
	    "snapshots took %s, over [snapshots] max_size = %s (starts, ends "
	    "and each session's last are kept)", k->ndrop, k->ndrop == 1 ?
	    " was" : "s were", k->repo->worktree, size, max);
	strv_add(&k->messages, msg);
	for (i = 0; i < k->ndrop; i++) {
		if (i > 0 && k->cand[i]->session_id ==
		    k->cand[i - 1]->session_id)
			continue;
		store_event_add(k->st, k->cand[i]->session_id, "warn",
		    "snapshot", "%s", msg);
	}
	free(msg);
}

/* Drops the first NDROP candidates: marked in the store, their refs deleted. */
static void
snap_keep_drop(struct snap_keep *k)
{
	struct buf in;
	size_t i;

	buf_init(&in);
	for (i = 0; i < k->ndrop; i++) {
		store_snap_keep_mark(k->st, k->cand[i]->id);
		if (!strv_contains(&k->kept, k->cand[i]->commit))
			buf_printf(&in, "delete refs/agentmux/snaps/%lld/%s\n",
			    (long long)k->cand[i]->session_id,
			    k->cand[i]->commit);
	}
	k->dropped = k->prune = true;
	snap_keep_tell(k);
	if (in.len > 0) {
		const char *args[] = { "update-ref", "--stdin", NULL };

		snap_keep_git(k, args, &in, snap_keep_refs_cb);
	} else
		snap_keep_fold(k);
	buf_free(&in);
}

/* The bytes only the first N candidates hold: what dropping them frees. */
static void
snap_keep_unique_cb(struct proc *p, void *arg)
{
	struct snap_keep *k = arg;
	int64_t unique;
	size_t n = (k->lo + k->hi) / 2;

	if (!snap_keep_ok(k, p, "rev-list"))
		return;
	unique = strtoll(proc_out(p)->data != NULL ?
	    proc_out(p)->data : "0", NULL, 10);
	if (k->usage - unique <= k->max_size)
		k->hi = n;
	else
		k->lo = n;
	snap_keep_try(k);
}

/*
 * How many of the oldest to drop: the fewest whose objects, gone, bring
 * the snapshots within the budget (a search over rev-list --disk-usage of
 * the first N against all that stay), or all of them if none do.
 */
static void
snap_keep_try(struct snap_keep *k)
{
	const char *args[] = { "rev-list", "--objects", "--disk-usage",
	    "--stdin", NULL };
	struct buf in;
	size_t i, n;

	if (k->hi - k->lo <= 1) {
		k->ndrop = k->hi;
		snap_keep_drop(k);
		return;
	}
	n = (k->lo + k->hi) / 2;
	buf_init(&in);
	for (i = 0; i < n; i++)
		buf_printf(&in, "%s\n", k->cand[i]->commit);
	for (i = n; i < k->ncand; i++)
		buf_printf(&in, "^%s\n", k->cand[i]->commit);
	for (i = 0; i < k->kept.n; i++)
		buf_printf(&in, "^%s\n", k->kept.v[i]);
	snap_keep_git(k, args, &in, snap_keep_unique_cb);
	buf_free(&in);
}

/* Over the budget: which turn snapshots may go. */
static void
snap_keep_plan(struct snap_keep *k)
{
	char size[16], max[16];

	k->cand = store_snap_keep_candidates(k->st, k->repo->gitdir, &k->ncand);
	store_snap_keep_kept(k->st, k->repo->gitdir, &k->kept);
	if (k->ncand == 0) {
		util_fmt_size(size, sizeof size, k->usage);
		util_fmt_size(max, sizeof max, k->max_size);
		strv_take(&k->messages, xprintf("the snapshots of %s take %s, "
		    "over [snapshots] max_size = %s, and only starts, ends and "
		    "sessions' last snapshots are left, which are never dropped: "
		    "raise max_size or remove old sessions (agentmux gc)",
		    k->repo->worktree, size, max));
		store_event_add(k->st, store_snap_keep_newest(k->st, k->repo->gitdir),
		    "warn", "snapshot", "%s", k->messages.v[k->messages.n - 1]);
		snap_keep_end(k);
		return;
	}
	/* Between none (over) and all (taken as enough if nothing is). */
	k->lo = 0;
	k->hi = k->ncand;
	snap_keep_try(k);
}

static void
snap_keep_usage_cb(struct proc *p, void *arg)
{
	struct snap_keep *k = arg;

	if (!snap_keep_ok(k, p, "rev-list"))
		return;
	k->usage = strtoll(proc_out(p)->data != NULL ?
	    proc_out(p)->data : "0", NULL, 10);
	if (k->max_size > 0 && k->usage > k->max_size && !k->dropped)
		snap_keep_plan(k);
	else
		snap_keep_last(k);
}

/*
 * What the snapshots take: the objects reachable from their refs (and the
 * index), as stored. Unreachable ones on the way out are not counted.
 */
static void
snap_keep_usage(struct snap_keep *k)
{
	const char *args[] = { "rev-list", "--objects", "--disk-usage",
	    "--all", "--indexed-objects", NULL };

	if (k->max_size <= 0) {
		snap_keep_last(k);
		return;
	}
	snap_keep_git(k, args, NULL, snap_keep_usage_cb);
}

static void
snap_keep_packed_cb(struct proc *p, void *arg)
{
	struct snap_keep *k = arg;

	if (!snap_keep_ok(k, p, "repack"))
		return;
	if (k->packs + 1 >= SNAP_KEEP_PACKS)
		snap_keep_fold(k);
	else
		snap_keep_usage(k);
}

static void
snap_keep_count_cb(struct proc *p, void *arg)
{
	struct snap_keep *k = arg;
	const char *out = proc_out(p)->data;
	const char *args[] = { "repack", "-d", "-q", NULL };

	if (!snap_keep_ok(k, p, "count-objects"))
		return;
	k->loose = snap_keep_field(out, "count");
	k->loose_bytes = snap_keep_field(out, "size") * 1024;
	k->packs = snap_keep_field(out, "packs");
	if ((k->recompress = snap_keep_take_mark(k->repo->gitdir)))
		snap_keep_fold(k);
	else if (k->loose >= SNAP_KEEP_LOOSE || k->loose_bytes >= SNAP_KEEP_LOOSE_BYTES)
		snap_keep_git(k, args, NULL, snap_keep_packed_cb);
	else if (k->packs >= SNAP_KEEP_PACKS)
		snap_keep_fold(k);
	else
		snap_keep_usage(k);
}

/* Counts the objects, the first step, once the lock is held; -1 with *CAUSE. */
static int
snap_keep_begin(struct snap_keep *k, char **cause)
{
	const char *args[] = { "count-objects", "-v", NULL };

	snap_keep_fanout(k->repo->gitdir);
	k->proc = snap_git_start(k->base, k->repo, SNAP_ENV_DB, args, NULL,
	    NULL, snap_keep_count_cb, k, cause);
	return k->proc != NULL ? 0 : -1;
}

/* A detached repack held the lock: asked again until it is done. */
static void
snap_keep_wait_cb(evutil_socket_t fd, short what, void *arg)
{
	struct snap_keep *k = arg;
	struct timeval tv = { 0, SNAP_KEEP_LOCK_RETRY_MS * 1000 };
	char *cause = NULL;

	if ((k->lock = snap_keep_lock_take(k->repo->gitdir)) == -2) {
		evtimer_add(k->wait, &tv);
		return;
	}
	if (snap_keep_begin(k, &cause) == -1) {
		log_warnx("snapshots of %s: %s", k->repo->worktree, cause);
		free(cause);
		snap_keep_end(k);
	}
}

struct snap_keep *
snap_keep_start(struct event_base *base, struct store *st,
    const struct config *cf, const char *gitdir, const char *worktree,
    void (*done)(void *, const struct snap_keep *), void *arg, char **cause)
{
	struct snap_keep *k = xcalloc(1, sizeof *k);
	struct timeval tv = { 0, SNAP_KEEP_LOCK_RETRY_MS * 1000 };

	k->base = base;
	k->st = st;
	k->max_size = cf != NULL ? cf->snapshots.max_size : 0;
	k->done = done;
	k->arg = arg;
	k->lock = -1;
	strv_init(&k->kept);
	strv_init(&k->messages);
	if ((k->repo = snap_repo_reopen(gitdir, worktree, cf, "keep", false,
	    cause)) == NULL) {
		free(k);
		return NULL;
	}
	if ((k->lock = snap_keep_lock_take(gitdir)) == -2) {
		k->wait = evtimer_new(base, snap_keep_wait_cb, k);
		if (k->wait == NULL)
			fatalx("cannot create an event");
		evtimer_add(k->wait, &tv);
		return k;
	}
	if (snap_keep_begin(k, cause) == -1) {
		snap_keep_free(k);
		return NULL;
	}
	return k;
}

struct snap_keep_sync {
	bool done;
	struct strv *messages;
};

static void
snap_keep_sync_done(void *arg, const struct snap_keep *k)
{
	struct snap_keep_sync *s = arg;
	size_t i;

	for (i = 0; s->messages != NULL && i < k->messages.n; i++)
		strv_add(s->messages, k->messages.v[i]);
	s->done = true;
}

/* Blocking, on the process's loop: for commands only (see proc_sync_run). */
int
snap_keep_sync(struct store *st, const struct config *cf, const char *gitdir,
    const char *worktree, bool thorough, struct strv *messages, char **cause)
{
	struct event_base *base = proc_base();
	struct snap_keep_sync s = { false, messages };
	struct snap_keep *k;

	k = snap_keep_start(base, st, cf, gitdir, worktree, snap_keep_sync_done,
	    &s, cause);
	if (k != NULL) {
		k->thorough = thorough;
		proc_sync_run(base, &s.done);
	}
	snap_keep_free(k);
	return k == NULL ? -1 : 0;
}

/*
 * Whether a pack is worth starting: the loose objects counted (and their
 * bytes summed) until either is enough.
 */
bool
snap_keep_due(const char *gitdir)
{
	struct dirent *de;
	struct stat sb;
	int64_t n = 0, bytes = 0;
	char *dir;
	DIR *d;
	int i;

	dir = xprintf("%s/%s", gitdir, SNAP_KEEP_MARK);
	i = access(dir, F_OK);
	free(dir);
	if (i == 0)
		return true;
	for (i = 0; i < 256 && n < SNAP_KEEP_LOOSE &&
	    bytes < SNAP_KEEP_LOOSE_BYTES; i++) {
		dir = xprintf("%s/objects/%02x", gitdir, i);
		if ((d = opendir(dir)) != NULL) {
			while ((de = readdir(d)) != NULL) {
				if (de->d_name[0] == '.' || strncmp(de->d_name,
				    "tmp_obj_", 8) == 0)
					continue;
				n++;
				if (fstatat(dirfd(d), de->d_name, &sb,
				    AT_SYMLINK_NOFOLLOW) == 0)
					bytes += sb.st_size;
			}
			closedir(d);
		}
		free(dir);
	}
	return n >= SNAP_KEEP_LOOSE || bytes >= SNAP_KEEP_LOOSE_BYTES;
}

/*
 * The command that packs in the background: the shell puts git there and
 * ends, and git outlives agentmux, holding LOCK (flock -n: it does nothing
 * if a keep took the lock since; that keep packs instead). A first
 * snapshot's MARK goes only once its pack is compressed afresh.
 */
static void
snap_keep_detached_argv(struct strv *argv, const char *lock, const char *mark)
{
	const char *head[] = { "sh", "-c",
	    "\"$@\" </dev/null >/dev/null 2>&1 &", "sh", "flock", "-n", lock,
	    NULL };
	static const char script[] =
	    "nice -n 10 git repack -A -d -F -q \"$1\" && rm -f -- \"$0\"";
	const char *fresh[] = { "sh", "-c", script, mark, SNAP_KEEP_UNPACK,
	    NULL };
	const char *plain[] = { "nice", "-n", "10", "git", "repack", "-d", "-q",
	    NULL };
	const char *const *v;

	for (v = head; *v != NULL; v++)
		strv_add(argv, *v);
	for (v = access(mark, F_OK) == 0 ? fresh : plain; *v != NULL; v++)
		strv_add(argv, *v);
}

/* Started background repacks whose shell has not been reaped yet. */
static int snap_keep_ndetaching;

static void
snap_keep_detached_done(struct proc *p, void *arg)
{
	if (proc_status(p) != 0)
		log_debug("the background repack's shell exited %d",
		    proc_status(p));
	proc_free(p);
	snap_keep_ndetaching--;
}

int
snap_keep_detaching(void)
{
	return snap_keep_ndetaching;
}

void
snap_keep_detached(struct event_base *base, const char *gitdir)
{
	struct proc_opts o;
	struct strv env, argv;
	struct buf err;
	char *cause = NULL, *dir, *lock, *mark;
	int st, fd;

	if (!snap_keep_due(gitdir))
		return;
	/* A keep of this process's (or another detached repack) is at it. */
	if ((fd = snap_keep_lock_take(gitdir)) == -2)
		return;
	if (fd >= 0)
		close(fd);
	snap_keep_fanout(gitdir);
	lock = xprintf("%s/%s", gitdir, SNAP_KEEP_LOCK);
	mark = xprintf("%s/%s", gitdir, SNAP_KEEP_MARK);
	strv_init(&argv);
	snap_keep_detached_argv(&argv, lock, mark);
	snap_env_plain(&env);
	dir = xprintf("GIT_DIR=%s", gitdir);
	strv_add(&env, dir);
	free(dir);
	memset(&o, 0, sizeof o);
	o.data_max = snap_git_mem;
	o.argv = argv.v;
	o.env = env.v;
	o.dir = gitdir;
	o.out_fd = -1;
	o.umask = 077;
	buf_init(&err);
	/* The shell ends as soon as it has put git in the background. */
	if (base != NULL && proc_start(base, &o, snap_keep_detached_done, NULL,
	    &cause) != NULL)
		snap_keep_ndetaching++;
	else if (base == NULL)
		(void)proc_run(&o, NULL, &err, &st, &cause);
	if (cause != NULL)
		log_debug("%s", cause);
	free(cause);
	buf_free(&err);
	strv_free(&env);
	strv_free(&argv);
	free(lock);
	free(mark);
}
