/*
 * Directories git cannot keep: a snapshot's tree holds no dir without a
 * file beneath it, so each such dir (an empty one, or one holding only
 * dirs) is recorded beside the modes, in the snapshot's commit message,
 * with its path and mode. That list is exact for the snapshot it rides
 * with and costs no extra hashing: it is one walk that opens only the
 * dirs that may hold one (a dir whose link count says it has no subdir
 * besides those the index knows is not read at all). `diff` shows such a
 * dir made, removed or with a new mode; undo makes, removes and chmods
 * them, never through a link.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "snap/snap-int.h"

/* Deeper than this (or a path longer than PATH_MAX) is not looked into. */
#define SNAP_DIRS_DEPTH 256

/* A dir the index knows (a file lies beneath it) and how many of its subdirs it knows. */
struct snap_dirs_known {
	char *path;
	size_t subdirs;
};

struct snap_dirs_walk {
	struct snap_dirs_known *v;
	size_t n;
	size_t cap;
	struct buf prev;          /* the previous entry's name */
};

static int
snap_dirs_known_cmp(const void *a, const void *b)
{
	const struct snap_dirs_known *x = a, *y = b;

	return strcmp(x->path, y->path);
}

static void
snap_dirs_known_add(struct snap_dirs_walk *w, const char *path, size_t len)
{
	if (w->n == w->cap) {
		w->cap = w->cap == 0 ? 64 : w->cap * 2;
		w->v = xreallocarray(w->v, w->cap, sizeof *w->v);
	}
	w->v[w->n].path = xstrndup(path, len);
	w->v[w->n].subdirs = 0;
	w->n++;
}

/* Each dir above an entry, once (git sorts by bytes: a dir's entries come together). */
static int
snap_dirs_walk_cb(void *arg, const struct snap_index_ent *e)
{
	struct snap_dirs_walk *w = arg;
	const char *slash;
	size_t len;

	for (slash = strchr(e->name, '/'); slash != NULL;
	    slash = strchr(slash + 1, '/')) {
		len = (size_t)(slash - e->name);
		if (w->prev.len > len && memcmp(w->prev.data, e->name, len) ==
		    0 && w->prev.data[len] == '/')
			continue;
		snap_dirs_known_add(w, e->name, len);
	}
	buf_reset(&w->prev);
	buf_add(&w->prev, e->name, e->namelen);
	return 0;
}

static struct snap_dirs_known *
snap_dirs_known_find(const struct snap_dirs_walk *w, const char *path)
{
	struct snap_dirs_known key = { (char *)path, 0 };

	if (w->n == 0)
		return NULL;
	return bsearch(&key, w->v, w->n, sizeof *w->v, snap_dirs_known_cmp);
}

/* The dirs of the index, sorted, "." first, each with its count of known subdirs. */
static void
snap_dirs_known(struct snap_dirs_walk *w, const char *index, size_t oidlen)
{
	struct snap_dirs_known *parent;
	const char *slash;
	char *up;
	size_t i;

	memset(w, 0, sizeof *w);
	buf_init(&w->prev);
	snap_dirs_known_add(w, ".", 1);
	snap_index_each(index, oidlen, snap_dirs_walk_cb, w);
	buf_free(&w->prev);
	qsort(w->v, w->n, sizeof *w->v, snap_dirs_known_cmp);
	for (i = 0; i < w->n; i++) {
		if (strcmp(w->v[i].path, ".") == 0)
			continue;
		if ((slash = strrchr(w->v[i].path, '/')) == NULL)
			up = xstrdup(".");
		else
			up = xstrndup(w->v[i].path, (size_t)(slash -
			    w->v[i].path));
		if ((parent = snap_dirs_known_find(w, up)) != NULL)
			parent->subdirs++;
		free(up);
	}
}

static void
snap_dirs_known_free(struct snap_dirs_walk *w)
{
	size_t i;

	for (i = 0; i < w->n; i++)
		free(w->v[i].path);
	free(w->v);
}

void
snap_dirs_add(struct snap_modes *m, const char *path, mode_t mode)
{
	if (m->en == m->ecap) {
		m->ecap = m->ecap == 0 ? 8 : m->ecap * 2;
		m->e = xreallocarray(m->e, m->ecap, sizeof *m->e);
	}
	m->e[m->en].path = xstrdup(path);
	m->e[m->en].mode = mode & 0777;
	m->en++;
}

static void
snap_dirs_drop_to(struct snap_modes *m, size_t keep)
{
	while (m->en > keep)
		free(m->e[--m->en].path);
}

/*
 * Whether the dir FD (open for reading, at PATH) holds dirs only; their
 * names into NAMES. ALL: every subdir is listed, past the first other
 * entry. *TOOLONG: an entry's path is longer than git can take.
 */
static bool
snap_dirs_only_dirs(int fd, const char *path, bool all, struct strv *names,
    bool *toolong)
{
	struct dirent *de;
	struct stat sb;
	DIR *d;
	int dup;
	bool only = true;

	if ((dup = fcntl(fd, F_DUPFD_CLOEXEC, 0)) == -1)
		return false;
	if ((d = fdopendir(dup)) == NULL) {
		close(dup);
		return false;
	}
	while ((only || all) && (errno = 0, de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") ==
		    0)
			continue;
		if (strlen(path) + 1 + strlen(de->d_name) >= PATH_MAX) {
			*toolong = true;
			only = false;
			break;
		}
		/* A repository of its own is never taken for an empty dir. */
		if (strcmp(de->d_name, ".git") == 0)
			only = false;
		else if (de->d_type == DT_DIR)
			strv_add(names, de->d_name);
		else if (de->d_type != DT_UNKNOWN)
			only = false;
		else if (fstatat(fd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) ==
		    0 && S_ISDIR(sb.st_mode))
			strv_add(names, de->d_name);
		else
			only = false;
	}
	if (de == NULL && errno != 0)
		only = false;
	closedir(d);
	return only;
}

/*
 * Records NAME (under the dir PARENT, at PATH) and every dir beneath it
 * if nothing but dirs lies there; else records nothing and returns false.
 */
static bool
snap_dirs_take(struct snap_modes *m, int parent, const char *name,
    const char *path, int depth, bool *toolong)
{
	struct strv names;
	struct stat sb;
	size_t keep = m->en, i;
	char *sub;
	bool ok;
	int fd;

	if (depth > SNAP_DIRS_DEPTH || strlen(path) >= PATH_MAX) {
		*toolong = strlen(path) >= PATH_MAX;
		return false;
	}
	fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (fd == -1)
		return false;
	strv_init(&names);
	ok = fstat(fd, &sb) == 0 && snap_dirs_only_dirs(fd, path, false,
	    &names, toolong);
	if (ok)
		snap_dirs_add(m, path, sb.st_mode);
	for (i = 0; ok && i < names.n; i++) {
		sub = xprintf("%s/%s", path, names.v[i]);
		ok = snap_dirs_take(m, fd, names.v[i], sub, depth + 1,
		    toolong);
		free(sub);
	}
	strv_free(&names);
	close(fd);
	if (!ok)
		snap_dirs_drop_to(m, keep);
	return ok;
}

/*
 * PATH holds a path longer than PATH_MAX, which git cannot take (so no
 * snapshot holds it): its top dir in the project is kept, once, to be
 * told and for undo.
 */
static void
snap_dirs_too_long(struct snap_modes *m, const char *path)
{
	char *top = xstrndup(path, strcspn(path, "/"));

	if (strcmp(top, ".") == 0 || strv_contains(&m->toolong, top))
		free(top);
	else
		strv_take(&m->toolong, top);
}

/* The subdirs of the known dir K that the index does not know, if they hold dirs only. */
static void
snap_dirs_look(struct snap_modes *m, const struct snap_dirs_walk *w,
    int root, const struct snap_dirs_known *k)
{
	struct strv names;
	struct stat sb;
	size_t i;
	char *path;
	bool toolong;
	int fd;

	fd = strcmp(k->path, ".") == 0 ? fcntl(root, F_DUPFD_CLOEXEC, 0) :
	    path_open_beneath(root, k->path, O_RDONLY | O_DIRECTORY, 0);
	if (fd == -1)
		return;
	/* A dir's link count is 2 and one per subdir: all known, none to read. */
	if (fstat(fd, &sb) == -1 || (sb.st_nlink >= 2 &&
	    sb.st_nlink == 2 + k->subdirs)) {
		close(fd);
		return;
	}
	strv_init(&names);
	toolong = false;
	(void)snap_dirs_only_dirs(fd, k->path, true, &names, &toolong);
	if (toolong)
		snap_dirs_too_long(m, k->path);
	for (i = 0; i < names.n; i++) {
		path = strcmp(k->path, ".") == 0 ? xstrdup(names.v[i]) :
		    xprintf("%s/%s", k->path, names.v[i]);
		toolong = false;
		if (snap_dirs_known_find(w, path) == NULL &&
		    !snap_dirs_take(m, fd, names.v[i], path, 1, &toolong) &&
		    toolong)
			snap_dirs_too_long(m, path);
		free(path);
	}
	strv_free(&names);
	close(fd);
}

void
snap_dirs_find(struct snap_modes *m, const char *worktree, const char *index,
    size_t oidlen)
{
	struct snap_dirs_walk w;
	size_t i;
	int root;

	if ((root = open(worktree, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return;
	snap_dirs_known(&w, index, oidlen);
	for (i = 0; i < w.n; i++)
		snap_dirs_look(m, &w, root, &w.v[i]);
	snap_dirs_known_free(&w);
	close(root);
	snap_dirs_sort(m);
}

void
snap_dirs_keep(struct snap_modes *m, struct snap_modes *found)
{
	size_t i;

	if (found != NULL) {
		for (i = 0; i < m->en; i++)
			free(m->e[i].path);
		free(m->e);
		strv_free(&m->toolong);
		m->e = found->e;
		m->en = found->en;
		m->ecap = found->ecap;
		m->toolong = found->toolong;
		found->e = NULL;
		found->en = found->ecap = 0;
		memset(&found->toolong, 0, sizeof found->toolong);
	}
	for (i = 0; i < m->en; i++) {
		if (m->e[i].mode != snap_modes_canonical(m->umask, true) &&
		    snap_modes_find(m, m->e[i].path) == -1)
			snap_modes_add(m, m->e[i].path, strlen(m->e[i].path),
			    m->e[i].mode);
	}
	snap_modes_sort(m);
}

/*
 * Every dir of WORKTREE with no file of the index INDEX beneath it, with
 * its mode, into M (whose modes are read: one that is not the umask's is
 * kept there too, so that diff and undo see it as any dir's).
 */
void
snap_dirs_read(struct snap_modes *m, const char *worktree, const char *index,
    size_t oidlen)
{
	if (!m->known)
		return;
	snap_dirs_find(m, worktree, index, oidlen);
	snap_dirs_keep(m, NULL);
}

void
snap_dirs_sort(struct snap_modes *m)
{
	snap_mode_sort(m->e, m->en);
}

/* Whether PATH is one of M's dirs with no file beneath. */
bool
snap_dirs_has(const struct snap_modes *m, const char *path)
{
	return snap_mode_search(m->e, m->en, path) != NULL;
}

char *
snap_too_long_message(const char *modes)
{
	struct snap_modes m;
	char *msg;

	if (modes == NULL)
		return NULL;
	snap_modes_parse(&m, modes, strlen(modes));
	msg = snap_dirs_too_long_text(&m);
	snap_modes_free(&m);
	return msg;
}

/* What to tell of M's paths too long for git, or NULL; caller frees. */
char *
snap_dirs_too_long_text(const struct snap_modes *m)
{
	struct buf b;
	char *q;
	size_t i;

	if (m->toolong.n == 0)
		return NULL;
	buf_init(&b);
	buf_adds(&b, "paths longer than git can take (PATH_MAX) were left out "
	    "of the snapshot, so diff does not show them and undo cannot put "
	    "them back, under");
	for (i = 0; i < m->toolong.n; i++) {
		q = quote_name(m->toolong.v[i]);
		buf_printf(&b, "%s %s", i == 0 ? "" : ",", q);
		free(q);
	}
	buf_adds(&b, ": look at what is there before you build or run "
	    "anything; 'agentmux undo' removes such a dir the session made");
	return buf_steal(&b);
}
