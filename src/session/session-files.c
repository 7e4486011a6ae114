/* Single config files under HOME (~/.claude.json): shown in the jail's HOME as real files, captured for review when it ends. */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "session-int.h"
#include "store/store.h"

/*
 * Why not a bind mount of the session's copy: agents save these files by
 * writing a temporary file next to them and renaming it over (Claude Code
 * writes ~/.claude.json.tmp.PID.HEX, then rename(2)s it; strace shows it
 * falls back to rewriting in place when that fails with EBUSY on a mount
 * point), and a file the host does not have yet cannot be bound at all. So
 * the file is a plain file on the jail's HOME tmpfs, where every way of
 * saving works, and the jail hands out a descriptor of that tmpfs: after
 * the command ends, whatever is at the entry's name (a file, a symlink, or
 * nothing) becomes the session's copy that `agentmux confdiff` reviews.
 */

/* A file bigger than this is not brought back (the tmpfs bounds it anyway). */
#define SESSION_FILE_MAX ((off_t)64 << 20)

/*
 * Opens the dir holding REL (relative to HOME) from HOMEFD, one component
 * at a time and never through a symlink: the jailed command made them.
 * With CREATE, missing dirs are made (0700). *BASE points into REL.
 */
static int
session_files_parent(int homefd, const char *rel, bool create,
    const char **base)
{
	const char *s, *e;
	char *comp;
	int fd, next;

	if ((fd = fcntl(homefd, F_DUPFD_CLOEXEC, 0)) == -1)
		return -1;
	for (s = rel; (e = strchr(s, '/')) != NULL; s = e + 1) {
		comp = xstrndup(s, (size_t)(e - s));
		if (create && mkdirat(fd, comp, 0700) == -1 && errno != EEXIST) {
			free(comp);
			close(fd);
			return -1;
		}
		next = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
		free(comp);
		close(fd);
		if (next == -1)
			return -1;
		fd = next;
	}
	*base = s;
	return fd;
}

/* Writes the session's copy COPY as REL in the jail's HOME. */
static int
session_files_put(int homefd, const char *rel, const char *copy,
    char **cause)
{
	const char *base;
	struct stat st;
	struct buf b;
	int dfd = -1, fd = -1, rc = -1;

	buf_init(&b);
	if (stat(copy, &st) == -1 || buf_read_file(&b, copy) == -1) {
		*cause = xprintf("cannot read %s: %s", copy, strerror(errno));
		goto out;
	}
	if ((dfd = session_files_parent(homefd, rel, true, &base)) == -1 ||
	    (fd = openat(dfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, st.st_mode & 0777)) == -1 ||
	    (b.len > 0 && write(fd, b.data, b.len) != (ssize_t)b.len) ||
	    fchmod(fd, st.st_mode & 0777) == -1) {
		*cause = xprintf("cannot put ~/%s into the jail: %s", rel,
		    strerror(errno));
		goto out;
	}
	rc = 0;
out:
	if (fd != -1)
		close(fd);
	if (dfd != -1)
		close(dfd);
	buf_free(&b);
	return rc;
}

int
session_files_place(struct session *s, char **cause)
{
	char *copy;
	size_t i;
	int rc = 0;

	if (s->hfiles.n == 0)
		return 0;
	if (s->home_fd == -1) {
		*cause = xstrdup("the jail did not hand out its home directory");
		return -1;
	}
	for (i = 0; rc == 0 && i < s->hfiles.n; i++) {
		copy = xprintf("%s/file", s->hcopies.v[i]);
		/* An entry the host does not have starts out missing. */
		if (access(copy, F_OK) == 0)
			rc = session_files_put(s->home_fd, s->hfiles.v[i], copy,
			    cause);
		free(copy);
	}
	return rc;
}

/* Reads the regular file BASE in DFD whole; -1 if it is too big or unreadable. */
static int
session_files_slurp(int dfd, const char *base, struct buf *b, mode_t *mode)
{
	struct stat st;
	char chunk[65536];
	ssize_t n;
	int fd;

	fd = openat(dfd, base, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd == -1)
		return -1;
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    st.st_size > SESSION_FILE_MAX) {
		close(fd);
		errno = EFBIG;
		return -1;
	}
	*mode = st.st_mode & 0777;
	while ((n = read(fd, chunk, sizeof chunk)) > 0) {
		buf_add(b, chunk, (size_t)n);
		if ((off_t)b->len > SESSION_FILE_MAX)
			break;
	}
	close(fd);
	return n == 0 ? 0 : -1;
}

/* Replaces the session's copy with a symlink to TARGET. */
static int
session_files_link(const char *copy, const char *target)
{
	char *tmp = xprintf("%s.tmp", copy);
	int rc;

	unlink(tmp);
	rc = symlink(target, tmp) == -1 || rename(tmp, copy) == -1 ? -1 : 0;
	if (rc == -1)
		unlink(tmp);
	free(tmp);
	return rc;
}

/*
 * What is at entry I's name now becomes its copy: a file or a symlink, or
 * a "deleted" mark if the command removed a file the host has.
 */
static void
session_files_take(struct session *s, size_t i)
{
	const char *rel = s->hfiles.v[i], *base;
	char *copy = xprintf("%s/file", s->hcopies.v[i]);
	char *mark = xprintf("%s/deleted", s->hcopies.v[i]);
	char target[4096], *cause = NULL;
	struct stat st;
	struct buf b;
	mode_t mode = 0600;
	ssize_t n;
	int dfd, rc = 0;

	buf_init(&b);
	dfd = session_files_parent(s->home_fd, rel, false, &base);
	if (dfd == -1 || fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) == -1) {
		/* Gone: a deletion only if the jail had been given a file. */
		if (lstat(copy, &st) == 0) {
			unlink(copy);
			rc = util_write_file_atomic(mark, "", 0, 0600, &cause);
		}
	} else if (S_ISREG(st.st_mode)) {
		if ((rc = session_files_slurp(dfd, base, &b, &mode)) == 0)
			rc = util_write_file_atomic(copy, b.data != NULL ?
			    b.data : "", b.len, mode, &cause);
		if (rc == 0)
			unlink(mark);
	} else if (S_ISLNK(st.st_mode) && (n = readlinkat(dfd, base, target,
	    sizeof target - 1)) > 0) {
		target[n] = '\0';
		if ((rc = session_files_link(copy, target)) == 0)
			unlink(mark);
	} else {
		cause = xprintf("it became something other than a file");
		rc = -1;
	}
	if (rc == -1) {
		if (cause == NULL)
			cause = xstrdup(strerror(errno));
		store_event_add(s->ctx->st, s->id, "warn", "overlay",
		    "the session's ~/%s was not kept for review: %s", rel,
		    cause);
	}
	if (dfd != -1)
		close(dfd);
	buf_free(&b);
	free(cause);
	free(mark);
	free(copy);
}

void
session_files_capture(struct session *s)
{
	size_t i;

	if (s->home_fd == -1 || s->files_taken)
		return;
	s->files_taken = true;
	for (i = 0; i < s->hfiles.n; i++)
		session_files_take(s, i);
}

void
session_files_free(struct session *s)
{
	if (s->home_fd != -1)
		close(s->home_fd);
	s->home_fd = -1;
	strv_free(&s->hfiles);
	strv_free(&s->hcopies);
}
