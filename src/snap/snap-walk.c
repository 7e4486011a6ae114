/*
 * The order of the end-of-session walk: breadth first, so that a dir
 * filled with files (or a deep tree) cannot hide what lies at a lesser
 * depth elsewhere (a `**` protect match, a set-uid file, a link out, a
 * planted git dir) past [jail] scan_limit; the dirs of one depth read
 * smallest first (a dir's size grows with its entries), so a filled dir
 * comes after its siblings; in each dir what is not a dir first. Nothing
 * is followed: each dir is opened beneath the root.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "snap/snap-int.h"

/* A dir waiting to be read. */
struct snap_walk_dir {
	char *rel;
	char *carry;
	off_t size;
	int level;
};

struct snap_walk {
	const char *root;
	int rootfd;
	dev_t dev;
	size_t limit;
	size_t seen;
	struct snap_walk_dir *q;
	size_t head, n, size;
	snap_walk_dir_cb *dir_cb;
	snap_walk_ent_cb *ent_cb;
	void *arg;
};

static void
snap_walk_push(struct snap_walk *sw, char *rel, char *carry, off_t size,
    int level)
{
	/* Empty: the array is used again from its start. */
	if (sw->head > 0 && sw->head == sw->n)
		sw->head = sw->n = 0;
	if (sw->n == sw->size) {
		sw->size = sw->size == 0 ? 64 : sw->size * 2;
		sw->q = xreallocarray(sw->q, sw->size, sizeof *sw->q);
	}
	sw->q[sw->n].rel = rel;
	sw->q[sw->n].carry = carry;
	sw->q[sw->n].size = size;
	sw->q[sw->n++].level = level;
}

/* The dirs first, then by name: qsort's order reversed for dirs. */
static int
snap_walk_cmp(const void *a, const void *b)
{
	const struct snap_walk_ent *x = a, *y = b;
	bool xd = S_ISDIR(x->st.st_mode), yd = S_ISDIR(y->st.st_mode);

	if (xd != yd)
		return xd ? 1 : -1;
	return strcmp(x->name, y->name);
}

/* The smaller dir first, then by path. */
static int
snap_walk_smaller(const void *a, const void *b)
{
	const struct snap_walk_dir *x = a, *y = b;

	if (x->size != y->size)
		return x->size < y->size ? -1 : 1;
	return strcmp(x->rel, y->rel);
}

/* What E is; a dir that cannot be opened beneath the root cannot be read. */
static enum snap_walk_info
snap_walk_info(struct snap_walk *sw, const struct snap_walk_ent *e)
{
	int fd;

	if (S_ISLNK(e->st.st_mode))
		return SNAP_WALK_SL;
	if (S_ISREG(e->st.st_mode))
		return SNAP_WALK_F;
	if (!S_ISDIR(e->st.st_mode))
		return SNAP_WALK_OTHER;
	if ((fd = snap_walk_open_dir(sw->rootfd, e->rel)) == -1)
		return errno == EACCES ? SNAP_WALK_DNR : SNAP_WALK_D;
	close(fd);
	return SNAP_WALK_D;
}

int
snap_walk_open_dir(int rootfd, const char *rel)
{
	int fd, dot;

	if ((fd = path_open_beneath(rootfd, rel, O_RDONLY | O_DIRECTORY,
	    0)) == -1)
		return -1;
	/*
	 * Listed is not enough: without search, nothing in it can be
	 * stat'ed (review 16: chmod 0644 hid a dir's entries, each dropped
	 * unseen). "." is looked up in it: EACCES then.
	 */
	if ((dot = openat(fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC)) == -1) {
		close(fd);
		errno = EACCES;
		return -1;
	}
	close(dot);
	return fd;
}

/*
 * Adds to *V (N of SIZE) the entries of DIR that are dirs (DIRS) or are
 * not, up to ROOM in all: stated without following a link, one that
 * cannot be (gone since) taken as no dir and left out later.
 */
static void
snap_walk_read(DIR *dir, bool dirs, size_t room, struct snap_walk_ent **v,
    size_t *n, size_t *size)
{
	struct dirent *de;
	struct stat st;

	rewinddir(dir);
	while (*n < room && (de = readdir(dir)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		/*
		 * Stated in one pass only: by its d_type where the file system
		 * gives one (swapped since, it is still listed once).
		 */
		if (de->d_type != DT_UNKNOWN && (de->d_type == DT_DIR) != dirs)
			continue;
		if (fstatat(dirfd(dir), de->d_name, &st,
		    AT_SYMLINK_NOFOLLOW) == -1)
			st.st_mode = 0;
		if (de->d_type == DT_UNKNOWN && S_ISDIR(st.st_mode) != dirs)
			continue;
		if (*n == *size) {
			*size = *size == 0 ? 16 : *size * 2;
			*v = xreallocarray(*v, *size, sizeof **v);
		}
		memset(&(*v)[*n], 0, sizeof **v);
		(*v)[*n].name = xstrdup(de->d_name);
		(*v)[(*n)++].st = st;
	}
}

/*
 * The entries of the dir D into *V, sorted: what is not a dir first, so
 * that a dir with more entries than the limit leaves (only those are
 * kept) still has its files looked at before its dirs.
 */
static size_t
snap_walk_list(struct snap_walk *sw, const struct snap_walk_dir *d,
    struct snap_walk_ent **v)
{
	size_t n = 0, size = 0, room = sw->limit - sw->seen + 1;
	DIR *dir;
	int fd;

	*v = NULL;
	fd = *d->rel == '\0' ? openat(sw->rootfd, ".", O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC) : path_open_beneath(sw->rootfd, d->rel, O_RDONLY |
	    O_DIRECTORY, 0);
	if (fd == -1)
		return 0;
	if ((dir = fdopendir(fd)) == NULL) {
		close(fd);
		return 0;
	}
	snap_walk_read(dir, false, room, v, &n, &size);
	snap_walk_read(dir, true, room, v, &n, &size);
	closedir(dir);
	if (n > 1)
		qsort(*v, n, sizeof **v, snap_walk_cmp);
	return n;
}

/* Hands E (of the dir D) to the callback, and queues it if it is a dir to go into. */
static void
snap_walk_one(struct snap_walk *sw, const struct snap_walk_dir *d,
    struct snap_walk_ent *e)
{
	char *rel, *path;

	rel = *d->rel == '\0' ? xstrdup(e->name) : xprintf("%s/%s", d->rel,
	    e->name);
	path = xprintf("%s/%s", sw->root, rel);
	e->rel = rel;
	e->path = path;
	e->level = d->level + 1;
	if (e->st.st_mode != 0) {
		e->info = snap_walk_info(sw, e);
		sw->ent_cb(sw->arg, e);
	}
	/* As fts cannot, nothing longer than PATH_MAX is gone into. */
	if (e->st.st_mode != 0 && e->info == SNAP_WALK_D && !e->skip &&
	    e->st.st_dev == sw->dev && strlen(path) < PATH_MAX)
		snap_walk_push(sw, rel, e->carry, e->st.st_size, e->level);
	else {
		free(rel);
		free(e->carry);
	}
	free(path);
}

/* Reads the dir D: 1 if the limit was reached. */
static int
snap_walk_dir(struct snap_walk *sw, const struct snap_walk_dir *d)
{
	struct snap_walk_ent *v;
	size_t i, n;
	int cut = 0;

	if (sw->dir_cb != NULL)
		sw->dir_cb(sw->arg, d->carry);
	n = snap_walk_list(sw, d, &v);
	for (i = 0; i < n; i++) {
		if (!cut && ++sw->seen > sw->limit)
			cut = 1;
		if (!cut)
			snap_walk_one(sw, d, &v[i]);
		free((char *)v[i].name);
	}
	free(v);
	return cut;
}

int
snap_walk(const char *root, int rootfd, size_t limit,
    snap_walk_dir_cb *dir_cb, snap_walk_ent_cb *ent_cb, void *arg)
{
	struct snap_walk sw;
	struct snap_walk_dir d;
	struct stat st;
	int cut = 0, level = -1;

	memset(&sw, 0, sizeof sw);
	sw.root = root;
	sw.rootfd = rootfd;
	sw.limit = limit;
	sw.dir_cb = dir_cb;
	sw.ent_cb = ent_cb;
	sw.arg = arg;
	if (fstat(rootfd, &st) == -1)
		return 0;
	sw.dev = st.st_dev;
	snap_walk_push(&sw, xstrdup(""), NULL, 0, 0);
	while (sw.head < sw.n) {
		/* The first of a depth: every dir of it is queued, and no other. */
		if (sw.q[sw.head].level != level) {
			level = sw.q[sw.head].level;
			qsort(sw.q + sw.head, sw.n - sw.head, sizeof *sw.q,
			    snap_walk_smaller);
		}
		d = sw.q[sw.head++];
		if (!cut)
			cut = snap_walk_dir(&sw, &d);
		free(d.rel);
		free(d.carry);
	}
	free(sw.q);
	return cut;
}
