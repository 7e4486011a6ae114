/* Where agentmux keeps things: config file, data dir, per-process runtime dir. */
#include <sys/stat.h>
#include <sys/syscall.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core.h"

static char *path_runtime;
static pid_t path_runtime_owner;

static pthread_once_t path_home_once = PTHREAD_ONCE_INIT;
static char *path_home_pw_dir;

/*
 * The password database's home for this user, read once: helper threads
 * ask too (the history's end reaches the data dir), and getpwuid's
 * result is shared static storage.
 */
static void
path_home_pw(void)
{
	struct passwd pw, *res = NULL;
	long max = sysconf(_SC_GETPW_R_SIZE_MAX);
	size_t len = max > 0 ? (size_t)max : 16384;
	char *buf = xmalloc(len);
	int e;

	while ((e = getpwuid_r(getuid(), &pw, buf, len, &res)) == ERANGE &&
	    len < ((size_t)1 << 20)) {
		len *= 2;
		buf = xrealloc(buf, len);
	}
	if (e == 0 && res != NULL && pw.pw_dir != NULL && *pw.pw_dir == '/')
		path_home_pw_dir = xstrdup(pw.pw_dir);
	free(buf);
}

const char *
path_home(void)
{
	const char *home = getenv("HOME");

	if (home != NULL && *home == '/')
		return home;
	pthread_once(&path_home_once, path_home_pw);
	return path_home_pw_dir != NULL ? path_home_pw_dir : "/";
}

/* $VAR if it is an absolute path, else HOME/FALLBACK; caller frees. */
static char *
path_xdg(const char *var, const char *fallback)
{
	const char *v = getenv(var);

	if (v != NULL && *v == '/')
		return xstrdup(v);
	return xprintf("%s/%s", path_home(), fallback);
}

char *
path_config_file(void)
{
	char *base = path_xdg("XDG_CONFIG_HOME", ".config"), *p;

	p = xprintf("%s/agentmux/config", base);
	free(base);
	return p;
}

int
path_check_private_dir(const char *dir, uid_t uid, mode_t mode, char **cause)
{
	struct stat st;
	int fd;

	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1) {
		if (errno == ELOOP || errno == ENOTDIR)
			*cause = xprintf("%s is not a directory (or is a "
			    "symlink); remove it and try again", dir);
		else
			*cause = xprintf("cannot open %s: %s", dir,
			    strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) == -1) {
		*cause = xprintf("cannot stat %s: %s", dir, strerror(errno));
		goto fail;
	}
	if (st.st_uid != uid) {
		*cause = xprintf("%s is owned by uid %ld, not by you (uid %ld); "
		    "remove it or set the XDG variable to a dir of your own",
		    dir, (long)st.st_uid, (long)uid);
		goto fail;
	}
	if ((st.st_mode & 07777 & ~mode) != 0) {
		*cause = xprintf("%s has mode %04o, which lets others in; "
		    "run 'chmod %o %s'", dir, (unsigned)(st.st_mode & 07777),
		    (unsigned)mode, dir);
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return -1;
}

int
path_mkdir_p(const char *path, mode_t mode)
{
	char *p = xstrdup(path), *s;
	struct stat st;

	for (s = p + 1; ; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char c = *s;
		*s = '\0';
		if (mkdir(p, mode) == -1 && errno != EEXIST) {
			free(p);
			return -1;
		}
		*s = c;
		if (c == '\0')
			break;
	}
	free(p);
	if (stat(path, &st) == -1)
		return -1;
	if (!S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;
		return -1;
	}
	return 0;
}

char *
path_data_dir_name(void)
{
	char *base = path_xdg("XDG_DATA_HOME", ".local/share"), *dir;

	dir = xprintf("%s/agentmux", base);
	free(base);
	return dir;
}

char *
path_data_dir(char **cause)
{
	char *dir = path_data_dir_name();
	struct stat st;
	int fd;

	if (path_mkdir_p(dir, 0700) == -1) {
		*cause = xprintf("cannot create the data dir %s: %s", dir,
		    strerror(errno));
		free(dir);
		return NULL;
	}
	/* A dir of ours that is too open is tightened, not refused. */
	if (lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) &&
	    st.st_uid == getuid() && (st.st_mode & 077) != 0)
		chmod(dir, 0700);
	if ((fd = path_check_private_dir(dir, getuid(), 0700, cause)) == -1) {
		free(dir);
		return NULL;
	}
	close(fd);
	return dir;
}

const char *
path_runtime_dir(void)
{
	return path_runtime;
}

const char *
path_runtime_dir_need(char **cause)
{
	char *made;

	if (path_runtime == NULL) {
		if ((made = path_runtime_dir_create(cause)) == NULL)
			return NULL;
		free(made);
	}
	return path_runtime;
}

char *
path_runtime_dir_create(char **cause)
{
	const char *base = getenv("XDG_RUNTIME_DIR");
	char *tmpl, *err = NULL;
	struct stat st;
	int fd;

	if (base == NULL || *base != '/' || stat(base, &st) == -1 ||
	    !S_ISDIR(st.st_mode) || st.st_uid != getuid() ||
	    access(base, W_OK) == -1)
		base = "/tmp";
	tmpl = xprintf("%s/agentmux-%ld.XXXXXX", base, (long)getuid());
	if (mkdtemp(tmpl) == NULL) {
		*cause = xprintf("cannot create a runtime dir in %s: %s", base,
		    strerror(errno));
		free(tmpl);
		return NULL;
	}
	if ((fd = path_check_private_dir(tmpl, getuid(), 0700, &err)) == -1) {
		*cause = xprintf("unsafe runtime dir: %s", err);
		free(err);
		rmdir(tmpl);
		free(tmpl);
		return NULL;
	}
	close(fd);
	free(path_runtime);
	path_runtime = xstrdup(tmpl);
	path_runtime_owner = getpid();
	return tmpl;
}

/* openat2's struct open_how and its resolve flags (<linux/openat2.h> is not everywhere). */
struct path_open_how {
	uint64_t flags;
	uint64_t mode;
	uint64_t resolve;
};
#define PATH_RESOLVE_NO_MAGICLINKS 0x02
#define PATH_RESOLVE_NO_SYMLINKS   0x04
#define PATH_RESOLVE_BENEATH       0x08
#ifndef SYS_openat2
#define SYS_openat2 437
#endif

/* The same, one component at a time with O_NOFOLLOW, for kernels without openat2. */
static int
path_open_walk(int dirfd, const char *rel, int flags, mode_t mode)
{
	char *copy = xstrdup(rel), *comp, *next, *save = NULL;
	int fd = dirfd, nfd;

	for (comp = strtok_r(copy, "/", &save); comp != NULL; comp = next) {
		next = strtok_r(NULL, "/", &save);
		if (strcmp(comp, "..") == 0) {
			nfd = -1;
			errno = EXDEV;
		} else if (next == NULL)
			nfd = openat(fd, comp, flags | O_NOFOLLOW | O_CLOEXEC,
			    mode);
		else
			nfd = openat(fd, comp, O_PATH | O_DIRECTORY |
			    O_NOFOLLOW | O_CLOEXEC);
		if (fd != dirfd)
			close(fd);
		if ((fd = nfd) == -1)
			break;
	}
	free(copy);
	if (fd == dirfd) {
		errno = EINVAL;
		return -1;
	}
	return fd;
}

int
path_open_beneath(int dirfd, const char *rel, int flags, mode_t mode)
{
	struct path_open_how how;
	int fd, saved;

	memset(&how, 0, sizeof how);
	how.flags = (uint64_t)(flags | O_NOFOLLOW | O_CLOEXEC);
	how.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0;
	how.resolve = PATH_RESOLVE_BENEATH | PATH_RESOLVE_NO_SYMLINKS |
	    PATH_RESOLVE_NO_MAGICLINKS;
	fd = (int)syscall(SYS_openat2, dirfd, rel, &how, sizeof how);
	if (fd != -1 || (errno != ENOSYS && errno != EPERM))
		return fd;
	saved = errno;
	fd = path_open_walk(dirfd, rel, flags, mode);
	if (fd == -1 && errno == 0)
		errno = saved;
	return fd;
}

int
path_read_beneath(int dirfd, const char *rel, size_t max, struct buf *b)
{
	char chunk[65536];
	struct stat sb;
	size_t got = 0;
	ssize_t n;
	int fd, saved, rc = -1;

	/* O_NONBLOCK: a FIFO opens at once (and is refused below) instead of waiting for a writer. */
	if ((fd = path_open_beneath(dirfd, rel, O_RDONLY | O_NONBLOCK |
	    O_NOCTTY, 0)) == -1)
		return -1;
	if (fstat(fd, &sb) == -1)
		goto out;
	if (!S_ISREG(sb.st_mode)) {
		errno = S_ISDIR(sb.st_mode) ? EISDIR : EINVAL;
		goto out;
	}
	/* Bounded as it is read too: the file may grow meanwhile. */
	for (;;) {
		n = read(fd, chunk, sizeof chunk);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = n == 0 ? 0 : -1;
			break;
		}
		if ((got += (size_t)n) > max) {
			errno = EFBIG;
			break;
		}
		buf_add(b, chunk, (size_t)n);
	}
out:
	saved = errno;
	close(fd);
	errno = saved;
	return rc;
}

int
path_open_dir_opened(int pfd, const char *name)
{
	char proc[64];
	int fd;

	if ((fd = openat(pfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1)
		return -1;
	snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
	(void)chmod(proc, 0700);
	close(fd);
	return openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
}

/* A dir on the way down: its name in its parent and what it is. */
struct path_rm_level {
	char *name;
	dev_t dev;
	ino_t ino;
};

/* Whether the dir ST is one that could not be emptied (FAILED, N of them). */
static bool
path_rm_failed(const struct stat *st, const struct path_rm_level *failed,
    size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (failed[i].dev == st->st_dev && failed[i].ino == st->st_ino)
			return true;
	}
	return false;
}

/*
 * Takes out of the dir FD what it can: files and links unlinked, empty
 * dirs removed; the first other dir (not on another file system, not one
 * in FAILED) is opened and its fd returned, its name in *NAME (a pointer
 * into nothing FD's reading keeps: caller frees); -1 when none is left,
 * *BAD set if anything could not be taken.
 */
static int
path_rm_step(int fd, dev_t dev, const struct path_rm_level *failed,
    size_t nfailed, char **name, bool *bad)
{
	struct dirent *de;
	struct stat st;
	int dup_fd, sub = -1;
	DIR *d;

	*name = NULL;
	if ((dup_fd = dup(fd)) == -1 || (d = fdopendir(dup_fd)) == NULL) {
		if (dup_fd != -1)
			close(dup_fd);
		*bad = true;
		return -1;
	}
	rewinddir(d);
	while (sub == -1 && (de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
		    fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == -1)
			continue;
		if (!S_ISDIR(st.st_mode)) {
			if (unlinkat(fd, de->d_name, 0) == -1)
				*bad = true;
		} else if (st.st_dev != dev || path_rm_failed(&st, failed,
		    nfailed))
			*bad = true;
		else if (unlinkat(fd, de->d_name, AT_REMOVEDIR) == -1) {
			if ((sub = path_open_dir_opened(fd, de->d_name)) == -1)
				*bad = true;
			else
				*name = xstrdup(de->d_name);
		}
	}
	closedir(d);
	return sub;
}

int
path_remove_tree(const char *path)
{
	struct path_rm_level *down = NULL, *failed = NULL;
	size_t n = 0, nfailed = 0;
	struct stat top, st;
	char *name;
	int fd, sub, up;
	bool bad = false;

	if (lstat(path, &top) == -1)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISDIR(top.st_mode))
		return unlink(path);
	if ((fd = path_open_dir_opened(AT_FDCWD, path)) == -1)
		return -1;
	/*
	 * One dir open at a time, whatever the depth (nftw's paths stopped
	 * at PATH_MAX, and it left what it could not remove unsaid): down
	 * into each dir in turn, and back up through "..", checked to be the
	 * dir that was left, so that nothing moved meanwhile is emptied.
	 */
	for (;;) {
		sub = path_rm_step(fd, top.st_dev, failed, nfailed, &name, &bad);
		if (sub != -1) {
			if (fstat(sub, &st) == -1) {
				close(sub);
				free(name);
				bad = true;
				continue;
			}
			down = xreallocarray(down, n + 1, sizeof *down);
			down[n].name = name;
			down[n].dev = st.st_dev;
			down[n].ino = st.st_ino;
			n++;
			close(fd);
			fd = sub;
			continue;
		}
		if (n == 0)
			break;
		/* Back up: the parent is the one left (the top, or the level above). */
		up = openat(fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		close(fd);
		fd = up;
		n--;
		if (fd == -1 || fstat(fd, &st) == -1 || (n == 0 ?
		    (st.st_dev != top.st_dev || st.st_ino != top.st_ino) :
		    (st.st_dev != down[n - 1].dev || st.st_ino !=
		    down[n - 1].ino))) {
			bad = true;
			free(down[n].name);
			while (n > 0)
				free(down[--n].name);
			break;
		}
		if (unlinkat(fd, down[n].name, AT_REMOVEDIR) == -1) {
			bad = true;
			failed = xreallocarray(failed, nfailed + 1,
			    sizeof *failed);
			failed[nfailed].dev = down[n].dev;
			failed[nfailed].ino = down[n].ino;
			failed[nfailed++].name = NULL;
		}
		free(down[n].name);
	}
	if (fd != -1)
		close(fd);
	free(down);
	free(failed);
	if (bad) {
		errno = ENOTEMPTY;
		return -1;
	}
	return rmdir(path);
}

void
path_runtime_dir_remove(void)
{
	/* Forked children share the variable but must not remove the dir. */
	if (path_runtime == NULL || path_runtime_owner != getpid())
		return;
	path_remove_tree(path_runtime);
	free(path_runtime);
	path_runtime = NULL;
}

char *
path_expand_home(const char *p)
{
	if (p[0] == '~' && p[1] == '\0')
		return xstrdup(path_home());
	if (p[0] == '~' && p[1] == '/')
		return xprintf("%s%s", path_home(), p + 1);
	return xstrdup(p);
}

char *
path_real(const char *p)
{
	char *r = realpath(p, NULL);

	if (r == NULL)
		return NULL;
	return r;
}

char *
path_find_exec(const char *name, const char *path_env)
{
	char *dirs, *dir, *save = NULL, *cand;

	if (strchr(name, '/') != NULL)
		return access(name, X_OK) == 0 ? xstrdup(name) : NULL;
	if (path_env == NULL)
		path_env = "/usr/local/bin:/usr/bin:/bin";
	dirs = xstrdup(path_env);
	for (dir = strtok_r(dirs, ":", &save); dir != NULL;
	    dir = strtok_r(NULL, ":", &save)) {
		struct stat st;

		cand = xprintf("%s/%s", *dir == '\0' ? "." : dir, name);
		if (stat(cand, &st) == 0 && S_ISREG(st.st_mode) &&
		    access(cand, X_OK) == 0) {
			free(dirs);
			return cand;
		}
		free(cand);
	}
	free(dirs);
	return NULL;
}

bool
path_stat_unchanged(const struct stat *before, const struct stat *after)
{
	return before->st_dev == after->st_dev &&
	    before->st_ino == after->st_ino &&
	    before->st_size == after->st_size &&
	    before->st_mtim.tv_sec == after->st_mtim.tv_sec &&
	    before->st_mtim.tv_nsec == after->st_mtim.tv_nsec &&
	    before->st_ctim.tv_sec == after->st_ctim.tv_sec &&
	    before->st_ctim.tv_nsec == after->st_ctim.tv_nsec;
}
