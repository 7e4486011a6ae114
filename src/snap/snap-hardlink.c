/*
 * Protected files with more than one name: the jail binds a protected
 * file read-only by its name, but a hard link to it elsewhere in the
 * project (`ln .git/config cfg`, made by the user long ago or by an
 * earlier session) is the same file, writable there. Before the jail is
 * made, such a file gets a file of its own (its bytes, mode, owner and
 * times copied, then renamed over the name, as git's own lockfile writes
 * do), so that no other name reaches it; said as a warning.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "snap/snap-int.h"

/* A protected file larger than this keeps its links (said): config files are small. */
#define SNAP_HARDLINK_MAX (64 * 1024 * 1024)
/* The files of a protected dir looked at, at most. */
#define SNAP_HARDLINK_DIR_MAX 1000

/* Copies the file IN (SB) into the new file OUT: bytes, mode, owner, times. */
static int
snap_hardlink_copy(int in, int out, const struct stat *sb)
{
	struct timespec times[2];
	char buf[65536];
	ssize_t n;

	while ((n = read(in, buf, sizeof buf)) > 0) {
		if (util_write_all(out, buf, (size_t)n) == -1)
			return -1;
	}
	if (n == -1)
		return -1;
	/* Owned as it was where agentmux may say so (root); the user's otherwise. */
	if (geteuid() == 0 && fchown(out, sb->st_uid, sb->st_gid) == -1)
		return -1;
	times[0] = sb->st_atim;
	times[1] = sb->st_mtim;
	if (fchmod(out, sb->st_mode & 0777) == -1 ||
	    futimens(out, times) == -1 || fsync(out) == -1)
		return -1;
	return 0;
}

/*
 * NAME in the dir DFD (the file IN, SB) replaced by a copy of its own:
 * a temporary file beside it, renamed over it if NAME still is that file.
 */
static int
snap_hardlink_own(int dfd, const char *name, int in, const struct stat *sb)
{
	struct stat now;
	char *tmp;
	int out, rc = -1;

	tmp = xprintf(".%s.amx-own-%ld", name, (long)getpid());
	out = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, 0600);
	if (out == -1) {
		free(tmp);
		return -1;
	}
	if (snap_hardlink_copy(in, out, sb) == 0 && close(out) == 0) {
		out = -1;
		if (fstatat(dfd, name, &now, AT_SYMLINK_NOFOLLOW) == 0 &&
		    now.st_dev == sb->st_dev && now.st_ino == sb->st_ino)
			rc = renameat(dfd, tmp, dfd, name);
		else
			errno = EAGAIN;
	}
	if (out != -1)
		close(out);
	if (rc == -1)
		unlinkat(dfd, tmp, 0);
	free(tmp);
	return rc;
}

/* REL (a regular file, opened as IN in DFD as NAME) with more links: made its own, said in NOTES. */
static void
snap_hardlink_one(int dfd, const char *name, const char *rel, int in,
    const struct stat *sb, struct strv *notes)
{
	char *q = snap_nested_quote(rel);
	int saved;

	if (sb->st_size <= SNAP_HARDLINK_MAX &&
	    snap_hardlink_own(dfd, name, in, sb) == 0)
		strv_addf(notes, "%s (protected) has %ju hard links: the jail "
		    "could write it through another name, so agentmux gave it "
		    "a file of its own (the same bytes, mode and times) before "
		    "the session; its other names keep the old one ('ln -f' "
		    "joins them again)", q, (uintmax_t)sb->st_nlink);
	else {
		saved = sb->st_size > SNAP_HARDLINK_MAX ? EFBIG : errno;
		strv_addf(notes, "%s (protected) has %ju hard links: the jail "
		    "can write it through another name, and agentmux could not "
		    "give it a file of its own (%s); its changes are flagged at "
		    "the session's end", q, (uintmax_t)sb->st_nlink,
		    strerror(saved));
	}
	free(q);
}

/* REL under PROJFD: if a regular file with more than one link, made its own; a dir's files too (DEPTH 0). */
static void
snap_hardlink_path(int projfd, const char *rel, int depth,
    struct strv *notes)
{
	const char *slash = strrchr(rel, '/');
	char *parent, *sub;
	const char *name = slash != NULL ? slash + 1 : rel;
	struct dirent *de;
	struct stat sb;
	int dfd, in, n = 0;
	DIR *d;

	parent = slash != NULL ? xstrndup(rel, (size_t)(slash - rel)) : NULL;
	dfd = parent != NULL ? path_open_beneath(projfd, parent, O_RDONLY |
	    O_DIRECTORY, 0) : dup(projfd);
	free(parent);
	if (dfd == -1)
		return;
	in = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (in == -1 || fstat(in, &sb) == -1) {
		if (in != -1)
			close(in);
		close(dfd);
		return;
	}
	if (S_ISREG(sb.st_mode) && sb.st_nlink > 1)
		snap_hardlink_one(dfd, name, rel, in, &sb, notes);
	close(dfd);
	if (!S_ISDIR(sb.st_mode) || depth > 0 || (d = fdopendir(in)) == NULL) {
		close(in);
		return;
	}
	while ((de = readdir(d)) != NULL && n++ < SNAP_HARDLINK_DIR_MAX) {
		if (de->d_type != DT_REG && de->d_type != DT_UNKNOWN)
			continue;
		sub = xprintf("%s/%s", rel, de->d_name);
		snap_hardlink_path(projfd, sub, depth + 1, notes);
		free(sub);
	}
	closedir(d);
}

void
snap_hardlink_protect(const char *project, char *const *rels, size_t n,
    struct strv *notes)
{
	static const char *const git[] = { ".git/config",
	    ".git/config.worktree", ".git/shallow", ".git/hooks",
	    ".git/info" };
	size_t i;
	int projfd;

	if ((projfd = open(project, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return;
	for (i = 0; i < nitems(git); i++)
		snap_hardlink_path(projfd, git[i], 0, notes);
	for (i = 0; i < n; i++)
		snap_hardlink_path(projfd, rels[i], 0, notes);
	close(projfd);
}
