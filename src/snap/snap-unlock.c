/*
 * Files and dirs of the work tree that their owner (this uid) made
 * unreadable, opened up for as long as a snapshot's git reads them (or
 * undo's git writes beside them) and put back to their own modes right
 * after: an agent's chmod 000 hides nothing from a snapshot or undo.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "snap/snap-int.h"

/* Locked entries opened up at most: each is a descriptor-free record. */
#define SNAP_UNLOCK_MAX 100000

void
snap_unlock_init(struct snap_unlock *u)
{
	memset(u, 0, sizeof *u);
}

static void
snap_unlock_note(struct snap_unlock *u, const char *path, const struct stat *sb)
{
	if (u->n == u->cap) {
		u->cap = u->cap == 0 ? 8 : u->cap * 2;
		u->v = xreallocarray(u->v, u->cap, sizeof *u->v);
	}
	u->v[u->n].path = xstrdup(path);
	u->v[u->n].dev = sb->st_dev;
	u->v[u->n].ino = sb->st_ino;
	u->v[u->n].mode = sb->st_mode & 07777;
	u->n++;
}

/*
 * Gives the file or dir open (O_PATH, never through a link) as FD the
 * bits WANT if this uid owns it and lacks them, noting its mode under
 * PATH: 1 if opened up, 0 if it needs nothing (or is not ours), -1.
 */
static int
snap_unlock_fd(struct snap_unlock *u, int fd, const char *path, mode_t want)
{
	char proc[64];
	struct stat sb;

	if (fstat(fd, &sb) == -1)
		return -1;
	if ((!S_ISDIR(sb.st_mode) && !S_ISREG(sb.st_mode)) ||
	    sb.st_uid != geteuid() || (sb.st_mode & want) == want)
		return 0;
	if (u->n >= SNAP_UNLOCK_MAX) {
		errno = EMFILE;
		return -1;
	}
	snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
	if (fchmodat(AT_FDCWD, proc, (sb.st_mode & 07777) | want, 0) == -1)
		return -1;
	snap_unlock_note(u, path, &sb);
	return 1;
}

static void snap_unlock_dir(struct snap_unlock *, int, struct buf *, mode_t,
    mode_t);

/* One entry NAME of the dir DFD (whose path is in PATH). */
static void
snap_unlock_entry(struct snap_unlock *u, int dfd, struct buf *path,
    const char *name, mode_t dirbits, mode_t filebits)
{
	size_t len = path->len;
	struct stat sb;
	int fd;

	if (fstatat(dfd, name, &sb, AT_SYMLINK_NOFOLLOW) == -1 ||
	    (!S_ISDIR(sb.st_mode) && !S_ISREG(sb.st_mode)))
		return;
	if (len > 0)
		buf_addc(path, '/');
	buf_adds(path, name);
	if (S_ISREG(sb.st_mode) && (sb.st_mode & filebits) != filebits &&
	    (fd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC)) != -1) {
		if (snap_unlock_fd(u, fd, path->data, filebits) == -1)
			log_debug("cannot open up %s: %s", path->data,
			    strerror(errno));
		close(fd);
	} else if (S_ISDIR(sb.st_mode) &&
	    (fd = openat(dfd, name,
	         O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) != -1)
		snap_unlock_dir(u, fd, path, dirbits, filebits);
	path->len = len;
	path->data[len] = '\0';
}

/* The dir open (O_PATH) as FD, then what is in it; FD is closed. */
static void
snap_unlock_dir(struct snap_unlock *u, int fd, struct buf *path, mode_t dirbits,
    mode_t filebits)
{
	const char *shown = path->len > 0 ? path->data : ".";
	struct dirent *de;
	DIR *d;
	int rfd;

	if (snap_unlock_fd(u, fd, shown, dirbits) == -1)
		log_debug("cannot open up %s: %s", shown, strerror(errno));
	/* Reopened through the descriptor: the same dir, whatever its name is now. */
	rfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	close(fd);
	if (rfd == -1 || (d = fdopendir(rfd)) == NULL) {
		if (rfd != -1)
			close(rfd);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0 ||
		    strcmp(de->d_name, ".git") == 0)
			continue;
		snap_unlock_entry(u, dirfd(d), path, de->d_name, dirbits,
		    filebits);
	}
	closedir(d);
}

int
snap_unlock_tree(struct snap_unlock *u, const char *worktree, bool write)
{
	struct buf path;
	int fd;

	if ((fd = open(worktree, O_PATH | O_DIRECTORY | O_CLOEXEC)) == -1)
		return -1;
	buf_init(&path);
	buf_adds(&path, "");
	snap_unlock_dir(u, fd, &path, write ? S_IRWXU : S_IRUSR | S_IXUSR,
	    S_IRUSR);
	buf_free(&path);
	if (u->n > 0)
		log_debug("%zu path(s) of %s opened up for a moment", u->n,
		    worktree);
	return 0;
}

/*
 * Puts each mode back, the deepest first (its dir is still open), on
 * the same file only (by device and inode), never through a link.
 */
void
snap_unlock_restore(struct snap_unlock *u, const char *worktree)
{
	char proc[64];
	struct stat sb;
	int root, fd;
	size_t i;

	root = u->n > 0 ? open(worktree, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
	for (i = u->n; i > 0 && root != -1; i--) {
		fd = strcmp(u->v[i - 1].path, ".") == 0 ?
		    fcntl(root, F_DUPFD_CLOEXEC, 0) :
		    path_open_beneath(root, u->v[i - 1].path, O_PATH, 0);
		if (fd == -1)
			continue;
		snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
		if (fstat(fd, &sb) == 0 && sb.st_dev == u->v[i - 1].dev &&
		    sb.st_ino == u->v[i - 1].ino &&
		    fchmodat(AT_FDCWD, proc, u->v[i - 1].mode, 0) == -1)
			log_warn("cannot give %s its mode %03o back",
			    u->v[i - 1].path, (unsigned)u->v[i - 1].mode);
		close(fd);
	}
	if (root != -1)
		close(root);
	snap_unlock_free(u);
}

void
snap_unlock_free(struct snap_unlock *u)
{
	size_t i;

	for (i = 0; i < u->n; i++)
		free(u->v[i].path);
	free(u->v);
	snap_unlock_init(u);
}
