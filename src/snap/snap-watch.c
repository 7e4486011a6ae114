/*
 * Tells when a session's git wrote objects (inotify on the upper dirs of
 * its history's overlays), so they are brought back when written instead
 * of by scanning every fanout dir every second. The dirs under each upper
 * dir are the jail's to make and replace: a watch is added only by name
 * under the upper dir, never through a link (IN_DONT_FOLLOW, IN_ONLYDIR),
 * and what an event says is taken only as "look again": the import's own
 * checks decide what is brought back.
 */
#include <sys/inotify.h>
#include <sys/resource.h>

#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "snap/snap-int.h"

/* What is watched: new names and files written, in each dir. */
#define SNAP_WATCH_MASK (IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE | \
	IN_ONLYDIR | IN_DONT_FOLLOW)

/* A dir of an upper dir's that holds objects: a fanout dir or pack. */
static bool
snap_watch_name_ok(const char *name)
{
	if (strcmp(name, "pack") == 0)
		return true;
	/* Two characters, so neither is the terminator strchr would find. */
	return strlen(name) == 2 && strchr("0123456789abcdef", name[0]) !=
	    NULL && strchr("0123456789abcdef", name[1]) != NULL;
}

/*
 * The most watches one history adds: the jail makes and renames the dirs,
 * and a watch lives as long as its dir does, whatever its name becomes,
 * so a jail renaming fanout dirs away in a loop would otherwise take the
 * host user's whole inotify allowance (fs.inotify.max_user_watches).
 * Past it the history looks on its timer instead.
 */
#define SNAP_WATCH_MAX(h) (4 * 258 * (h)->n)

/* Watches NAME under G's upper dir; false if the watch could not be had for want of room. */
static bool
snap_watch_add(struct snap_history *h, struct snap_hgit *g, const char *name)
{
	char *path;
	int wd;

	if (!snap_watch_name_ok(name))
		return true;
	if (h->nwatch >= SNAP_WATCH_MAX(h))
		return false;
	path = xprintf("%s/%s", g->upper, name);
	wd = inotify_add_watch(h->wfd, path, SNAP_WATCH_MASK);
	free(path);
	if (wd != -1)
		h->nwatch++;
	/* Gone again, or not a dir (a link, a file): nothing to watch. */
	return wd != -1 || errno == ENOENT || errno == ENOTDIR ||
	    errno == ELOOP;
}

/* Watches G's upper dir and every objects dir in it; false if one could not be had. */
static bool
snap_watch_git(struct snap_history *h, struct snap_hgit *g)
{
	struct dirent *de;
	bool ok = true;
	int fd;
	DIR *d;

	g->wd = inotify_add_watch(h->wfd, g->upper, SNAP_WATCH_MASK);
	if (g->wd == -1)
		return false;
	fd = open(g->upper, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1 || (d = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		return false;
	}
	while ((de = readdir(d)) != NULL)
		ok = snap_watch_add(h, g, de->d_name) && ok;
	closedir(d);
	return ok;
}

int
snap_history_watch(struct snap_history *h)
{
	size_t i;

	if (h == NULL || h->n == 0)
		return -1;
	if (h->wfd == -1 &&
	    (h->wfd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) == -1)
		return -1;
	for (i = 0; i < h->n; i++) {
		if (!snap_watch_git(h, &h->v[i]))
			h->wlost = true;
	}
	return h->wfd;
}

/*
 * A worktree session's writable git dirs (snap_history_watch_worktree):
 * each watched through a descriptor of its own, opened from its parent's
 * without following a link, and watched through /proc/self/fd, so that
 * the watch and the removals are of that very dir whatever its path
 * becomes. The jail makes the subdirs: so many at most, so deep.
 */
#define SNAP_WT_DIRS 256
#define SNAP_WT_DEPTH 32
/*
 * Dirs watched at once by all the sessions of this process: each holds a
 * descriptor, and hostile sessions making dirs must not take the fds
 * the server needs (its proxy's connections, pipes, the store): a
 * quarter of RLIMIT_NOFILE, at least 16 and at most 4,096.
 */
static size_t snap_wt_held;

static size_t
snap_wt_held_max(void)
{
	static size_t max;
	struct rlimit rl;

	if (max == 0) {
		max = 256;
		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
		    rl.rlim_cur != RLIM_INFINITY)
			max = rl.rlim_cur / 4 < 16 ? 16 : rl.rlim_cur / 4 >
			    4096 ? 4096 : (size_t)rl.rlim_cur / 4;
	}
	return max;
}

/* Entries of a dir looked at when it is first watched (made by the jail a moment ago). */
#define SNAP_WT_SCAN 1000
/* Removals told by name; the rest are counted. */
#define SNAP_WT_TOLD 10
#define SNAP_WT_MASK (IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_ONLYDIR)
/* In the ref dir, a file that grows too (a truncate, a write far out). */
#define SNAP_WT_REFS_MASK (SNAP_WT_MASK | IN_MODIFY | IN_CLOSE_WRITE)
/*
 * Entries looked at in one read of the events, at most: a jail renaming
 * in dirs full of entries must not hold the loop (the rest of its events
 * wait for the loop's next turn; entries a scan does not reach are left
 * to the end's walk).
 */
#define SNAP_WT_OPS 4096
/* A path or link target in the end's message is cut to its last so many bytes. */
#define SNAP_WT_SAY 160

struct snap_wtdir {
	int wd;                   /* -1: a free slot */
	int fd;
	dev_t dev;                /* the dir, once watched */
	ino_t ino;
	char *path;               /* for messages */
	int depth;
	bool refs;                /* in the branch's ref dir: files over SNAP_REF_MAX are cut */
};

static void snap_wt_look(struct snap_history *, size_t, const char *);

/* Whether the dir ST is watched already. */
static bool
snap_wt_watched(const struct snap_history *h, const struct stat *st)
{
	size_t i;

	for (i = 0; i < h->nwt; i++) {
		if (h->wt[i].wd != -1 && h->wt[i].dev == st->st_dev &&
		    h->wt[i].ino == st->st_ino)
			return true;
	}
	return false;
}

/*
 * NAME (made by the jail, stat ST) in the dir I removed, and told. It is
 * first renamed aside and looked at again under that name: what is
 * removed is what was looked at, not a file swapped in for it meanwhile
 * (a ref the user's git moved into place over a planted link is put back).
 */
static void
snap_wt_remove(struct snap_history *h, size_t i, const char *name)
{
	struct snap_wtdir *e = &h->wt[i];
	char target[PATH_MAX], aside[64], *path, *q, *qt = NULL;
	struct stat now;
	uint32_t r[2];
	ssize_t n;

	util_random(r, sizeof r);
	snprintf(aside, sizeof aside, ".agentmux-gone.%08x%08x", r[0], r[1]);
	if (renameat2(e->fd, name, e->fd, aside, RENAME_NOREPLACE) == -1)
		return;
	if (fstatat(e->fd, aside, &now, AT_SYMLINK_NOFOLLOW) == -1)
		return;
	if (S_ISREG(now.st_mode) || S_ISDIR(now.st_mode)) {
		(void)renameat2(e->fd, aside, e->fd, name, RENAME_NOREPLACE);
		return;
	}
	if (S_ISLNK(now.st_mode) && (n = readlinkat(e->fd, aside, target,
	    sizeof target - 1)) >= 0) {
		target[n] = '\0';
		qt = snap_nested_quote_cut(target, SNAP_WT_SAY);
	}
	if (unlinkat(e->fd, aside, 0) == 0) {
		path = xprintf("%s/%s", e->path, name);
		q = snap_nested_quote_cut(path, SNAP_WT_SAY);
		if (h->wt_removed++ < SNAP_WT_TOLD)
			strv_addf(&h->wt_told, "%s (%s%s)", q, S_ISLNK(now.st_mode) ?
			    "a link to " : "a special file",
			    qt != NULL ? qt : "");
		free(q);
		free(path);
	}
	free(qt);
}

/* NAME, a regular file over SNAP_REF_MAX in the ref dir I, cut (snap_ref_cut), and told. */
static void
snap_wt_cut(struct snap_history *h, size_t i, const char *name,
    const struct stat *st)
{
	const char *what = NULL;
	char *path, *q;

	if (snap_ref_cut(h->wt[i].fd, name, st, &what) != 1)
		return;
	path = xprintf("%s/%s", h->wt[i].path, name);
	q = snap_nested_quote_cut(path, SNAP_WT_SAY);
	if (h->wt_removed++ < SNAP_WT_TOLD)
		strv_addf(&h->wt_told, "%s (a file of %lld bytes where git "
		    "reads a ref whole: %s)", q, (long long)st->st_size, what);
	free(q);
	free(path);
}

/* What the watched dir I holds, looked at: SNAP_WT_SCAN entries, within this read's budget. */
static void
snap_wt_scan(struct snap_history *h, size_t i)
{
	struct dirent *de;
	size_t seen = 0;
	int sfd;
	DIR *d;

	if ((sfd = openat(h->wt[i].fd, ".", O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) == -1)
		return;
	if ((d = fdopendir(sfd)) == NULL) {
		close(sfd);
		return;
	}
	while (seen < SNAP_WT_SCAN && h->wt_ops < SNAP_WT_OPS &&
	    (de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") !=
		    0) {
			seen++;
			snap_wt_look(h, i, de->d_name);
		}
	}
	closedir(d);
}

/* Watches NAME in the dir FD (PATH, DEPTH deep), and looks at what it holds already. */
static void
snap_wt_add(struct snap_history *h, int fd, const char *name,
    const char *path, int depth, bool refs)
{
	char proc[64];
	struct snap_wtdir *e;
	struct stat st;
	size_t i;
	int dfd;

	for (i = 0; i < h->nwt && h->wt[i].wd != -1; i++)
		;
	if (i == SNAP_WT_DIRS || depth > SNAP_WT_DEPTH ||
	    snap_wt_held >= snap_wt_held_max() || (dfd = openat(fd, name,
	    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1)
		return;
	/* One watch a dir: a dir seen again (renamed, or made and looked at) is not scanned again. */
	if (fstat(dfd, &st) == -1 || snap_wt_watched(h, &st)) {
		close(dfd);
		return;
	}
	snprintf(proc, sizeof proc, "/proc/self/fd/%d", dfd);
	if (i == h->nwt) {
		h->wt = xreallocarray(h->wt, h->nwt + 1, sizeof *h->wt);
		h->nwt++;
	}
	e = &h->wt[i];
	if ((e->wd = inotify_add_watch(h->wfd, proc, refs ? SNAP_WT_REFS_MASK :
	    SNAP_WT_MASK)) == -1) {
		close(dfd);
		return;
	}
	snap_wt_held++;
	e->fd = dfd;
	e->dev = st.st_dev;
	e->ino = st.st_ino;
	e->path = xprintf("%s/%s", path, name);
	e->depth = depth;
	e->refs = refs;
	/* What the jail made in it before the watch. */
	snap_wt_scan(h, i);
}

/* NAME, just made in the watched dir I: a dir is watched, a link or special file removed. */
static void
snap_wt_look(struct snap_history *h, size_t i, const char *name)
{
	struct stat st;
	char *path;

	h->wt_ops++;
	if (fstatat(h->wt[i].fd, name, &st, AT_SYMLINK_NOFOLLOW) == -1)
		return;
	if (S_ISDIR(st.st_mode)) {
		/* H->WT may move as it grows. */
		path = xstrdup(h->wt[i].path);
		snap_wt_add(h, h->wt[i].fd, name, path, h->wt[i].depth + 1,
		    h->wt[i].refs);
		free(path);
	} else if (!S_ISREG(st.st_mode))
		snap_wt_remove(h, i, name);
	else if (h->wt[i].refs && st.st_size > SNAP_REF_MAX)
		snap_wt_cut(h, i, name, &st);
}

/* The slot of a worktree dir's watch WD, or -1. */
static ssize_t
snap_wt_slot(const struct snap_history *h, int wd)
{
	size_t i;

	for (i = 0; i < h->nwt; i++) {
		if (h->wt[i].wd == wd)
			return (ssize_t)i;
	}
	return -1;
}

/* Lets slot I go: its watch (unless the kernel let it go: GONE), its descriptor. */
static void
snap_wt_drop(struct snap_history *h, size_t i, bool gone)
{
	if (!gone)
		(void)inotify_rm_watch(h->wfd, h->wt[i].wd);
	close(h->wt[i].fd);
	free(h->wt[i].path);
	snap_wt_held--;
	h->wt[i].wd = -1;
	h->wt[i].fd = -1;
	h->wt[i].path = NULL;
}

/*
 * A dir was removed in a watched one: the slots of dirs that are gone
 * (no link left) are let go. Their descriptors keep them from being let
 * go by the kernel, so no IN_DELETE_SELF or IN_IGNORED comes for them:
 * without this, dirs made and removed took every slot.
 */
static void
snap_wt_sweep(struct snap_history *h)
{
	struct stat st;
	size_t i;

	for (i = 0; i < h->nwt; i++) {
		if (h->wt[i].wd == -1)
			continue;
		h->wt_ops++;
		if (fstat(h->wt[i].fd, &st) == 0 && st.st_nlink == 0)
			snap_wt_drop(h, i, false);
	}
}

/* Event EV of a worktree dir's watch (slot I). */
static void
snap_wt_event(struct snap_history *h, size_t i, const struct inotify_event *ev)
{
	if (ev->mask & IN_IGNORED) {
		/* Its watch is gone (the file system went): so is its slot. */
		snap_wt_drop(h, i, true);
	} else if ((ev->mask & IN_DELETE) && (ev->mask & IN_ISDIR))
		snap_wt_sweep(h);
	else if (ev->len > 0 && (ev->mask & (IN_CREATE | IN_MOVED_TO |
	    IN_MODIFY | IN_CLOSE_WRITE)))
		snap_wt_look(h, i, ev->name);
}

void
snap_history_watch_worktree(struct snap_history *h,
    const struct snap_worktree *wt)
{
	const char *slash = strrchr(wt->branch, '/');
	char *dir, *at;
	size_t i;
	int cfd, fd;

	if (h == NULL)
		return;
	/* No inotify (the user's instances taken, say by a jail): the end's walk alone, said then. */
	h->wt_nowatch = true;
	if (h->wfd == -1 || slash == NULL)
		return;
	/* The admin path is agentmux's record's, never the worktree's .git file's. */
	at = xstrndup(wt->admin, (size_t)(strrchr(wt->admin, '/') - wt->admin));
	if ((fd = open(at, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) !=
	    -1) {
		snap_wt_add(h, fd, strrchr(wt->admin, '/') + 1, at, 0, false);
		close(fd);
	}
	free(at);
	if ((cfd = open(wt->common, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return;
	dir = xprintf("refs/heads/%.*s", (int)(slash - wt->branch),
	    wt->branch);
	if ((fd = path_open_beneath(cfd, "refs/heads", O_PATH | O_DIRECTORY,
	    0)) != -1) {
		at = xprintf("%s/refs/heads", wt->common);
		snap_wt_add(h, fd, dir + strlen("refs/heads/"), at, 0, true);
		free(at);
		close(fd);
	}
	if ((fd = path_open_beneath(cfd, "logs/refs/heads", O_PATH |
	    O_DIRECTORY, 0)) != -1) {
		at = xprintf("%s/logs/refs/heads", wt->common);
		snap_wt_add(h, fd, dir + strlen("refs/heads/"), at, 0, false);
		free(at);
		close(fd);
	}
	free(dir);
	close(cfd);
	for (i = 0; i < h->nwt; i++) {
		if (h->wt[i].wd != -1)
			h->wt_nowatch = false;
	}
}

void
snap_history_watch_worktree_free(struct snap_history *h)
{
	size_t i;

	/* (The watches go with the inotify fd, closed after.) */
	for (i = 0; i < h->nwt; i++) {
		if (h->wt[i].wd != -1)
			snap_wt_drop(h, i, true);
	}
	free(h->wt);
	h->wt = NULL;
	h->nwt = 0;
	strv_free(&h->wt_told);
}

/* What event EV says of H: a new objects dir is watched too. */
static void
snap_watch_event(struct snap_history *h, const struct inotify_event *ev)
{
	size_t i;

	if (!(ev->mask & IN_ISDIR) || ev->len == 0 ||
	    !(ev->mask & (IN_CREATE | IN_MOVED_TO)))
		return;
	for (i = 0; i < h->n; i++) {
		if (h->v[i].wd == ev->wd && !snap_watch_add(h, &h->v[i],
		    ev->name))
			h->wlost = true;
	}
}

bool
snap_history_watch_read(struct snap_history *h)
{
	char b[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
	const struct inotify_event *ev;
	bool changed = false;
	ssize_t n, off, slot;
	size_t i, turn;

	if (h == NULL || h->wfd == -1)
		return false;
	/*
	 * A few buffers a turn: one change is all the import needs to hear,
	 * and a jail making events as fast as they are read must not keep
	 * the loop here; what is left wakes the loop again.
	 */
	h->wt_ops = 0;
	for (turn = 0; turn < 8 && h->wt_ops < SNAP_WT_OPS &&
	    (n = read(h->wfd, b, sizeof b)) > 0; turn++) {
		for (off = 0; off < n; off += (ssize_t)(sizeof *ev + ev->len)) {
			ev = (const struct inotify_event *)(b + off);
			if (ev->mask & IN_Q_OVERFLOW) {
				/* Events were lost: dirs made meanwhile are watched from now. */
				for (i = 0; i < h->n; i++) {
					if (!snap_watch_git(h, &h->v[i]))
						h->wlost = true;
				}
				/* And the worktree's dirs looked at again, as far as the budget goes. */
				for (i = 0; i < h->nwt; i++) {
					if (h->wt[i].wd != -1)
						snap_wt_scan(h, i);
				}
				changed = true;
			} else if ((slot = snap_wt_slot(h, ev->wd)) != -1)
				snap_wt_event(h, (size_t)slot, ev);
			else if (ev->mask & (IN_CREATE | IN_MOVED_TO |
			    IN_CLOSE_WRITE)) {
				snap_watch_event(h, ev);
				changed = true;
			}
		}
	}
	return changed;
}

bool
snap_history_busy(const struct snap_history *h)
{
	size_t i;

	if (h == NULL)
		return false;
	if (h->wfd == -1 || h->wlost)
		return true;
	for (i = 0; i < h->n; i++) {
		if (snap_import_busy(h->v[i].imp))
			return true;
	}
	return false;
}
