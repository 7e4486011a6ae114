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

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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
	ssize_t n, off;
	size_t i, turn;

	if (h == NULL || h->wfd == -1)
		return false;
	/*
	 * A few buffers a turn: one change is all the import needs to hear,
	 * and a jail making events as fast as they are read must not keep
	 * the loop here; what is left wakes the loop again.
	 */
	for (turn = 0; turn < 8 && (n = read(h->wfd, b, sizeof b)) > 0;
	    turn++) {
		for (off = 0; off < n; off += (ssize_t)(sizeof *ev + ev->len)) {
			ev = (const struct inotify_event *)(b + off);
			if (ev->mask & IN_Q_OVERFLOW) {
				/* Events were lost: dirs made meanwhile are watched from now. */
				for (i = 0; i < h->n; i++) {
					if (!snap_watch_git(h, &h->v[i]))
						h->wlost = true;
				}
				changed = true;
			} else if (ev->mask & (IN_CREATE | IN_MOVED_TO |
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
