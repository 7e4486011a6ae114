/*
 * A main-tree session's .git as its jail sees it. The project's .git lies
 * under the project, whose Landlock rule grants links: a jail could link
 * .git/FETCH_HEAD to a file of the user's and the user's own git fetch,
 * run there meanwhile, wrote through it. So the jail sees the real git dir
 * elsewhere, sealed (no link, socket or FIFO can be made in it), and at
 * PROJECT/.git a dir of agentmux's: HEAD and the index copies, everything
 * else a link into the sealed dir, which git follows to read and to
 * write, locks included. HEAD because git reads a HEAD that is a link
 * not to a ref as no repository; the index because git stash renames a
 * lock of it to a file beside the name it was given, which across two
 * mounts fails. Both are brought back to the real git dir as the jail's
 * git writes them (snap_jailgit_sync). What git makes there anew (a
 * rebase's state, ORIG_HEAD) stays the jail's. Submodules' git dirs,
 * .git/modules, are a dir the jail binds the real one over (git writes
 * paths relative to them).
 */
#include <sys/stat.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "snap/snap-int.h"

/*
 * The files at the top of the git dir the jail's git reads from the
 * user's, linked (whether there or not: a link to nothing stays one):
 * all read only there, since the top is (the user's git renames its
 * config.lock into place there, and a jail that held it open wrote the
 * user's new config). packed-refs is a copy (git locks it for every ref
 * it deletes), brought back merged with the user's (snap_jailgit_packed).
 * Every other file git writes at its dir's top (FETCH_HEAD, ORIG_HEAD,
 * COMMIT_EDITMSG, a merge's) is the jail's own, made in PRIV.
 */
static const char *const snap_jailgit_files[] = { "shallow", "config",
    "description" };

/* Dirs at the top of the git dir not linked: a merge, rebase or cherry-pick of the user's under way (its todo names commands) is theirs. */
static const char *const snap_jailgit_unlinked[] = { "rebase-merge",
    "rebase-apply", "sequencer", "modules" };

/*
 * The largest index brought back from the jail (git's own for 500,000
 * files is under this): each the jail writes is read whole on the loop
 * and written to the project's .git.
 */
#define SNAP_JAILGIT_INDEX_MAX (64LL * 1024 * 1024)

/* The largest packed-refs given to the jail as a copy (a larger one is linked, read only: the jail's git cannot delete a ref). */
#define SNAP_JAILGIT_PACKED_MAX (64LL * 1024 * 1024)

/* The bytes at an index's end compared: its checksum (SHA-256's 32, or SHA-1's 20 and more). */
#define SNAP_JAILGIT_TRAILER 32

struct snap_jailgit {
	char *gitdir;
	char *quoted;         /* GITDIR as it is printed */
	char *priv;
	char *head;           /* the HEAD GITDIR was last given */
	char *head_told;      /* what of the jail's HEAD was last told */
	struct stat index;    /* the jail's index as it was last brought back, */
	unsigned char trailer[SNAP_JAILGIT_TRAILER]; /* its last bytes, */
	size_t trailer_len;
	struct stat host_index; /* and GITDIR's as it then was */
	struct stat index_refused; /* the jail's index last refused: not read again */
	char *index_told;
	size_t hash_len;       /* the hex digits of the repository's ids */
	char *at;             /* GITDIR as the jail sees it */
	struct buf packed_base; /* the jail's packed-refs as last given or brought back, */
	struct stat packed;   /* and its stat then (zero: none) */
	struct stat host_packed; /* GITDIR's as the jail's was last given (zero: none) */
	bool packed_pending;  /* brought back not yet: the user's git held the lock */
	bool index_pending;   /* the same for the index (index.lock) */
	bool ended;           /* the jail is gone: its copies are not refreshed */
	bool gated;           /* the end runs inside the clone gate (a helper thread) */
	time_t stale_since;   /* not given again since (the jail's git held its lock), or 0 */
	char *stale_told;
	char *packed_told;
	bool left_told;       /* lines of the jail's packed-refs left out of the user's were told */
};

/*
 * Dirs git makes below itself on first use: made in the real git dir
 * first (a link to nothing cannot be made a dir through), and so linked;
 * hooks, info and worktrees are made by the jail's mounts anyway (read
 * only there), and would otherwise be the jail's own.
 */
static const char *const snap_jailgit_dirs[] = { "logs", "modules", "hooks",
    "info", "worktrees" };

/* The HEAD in GFD (a git dir) as git reads it ("ref: X" or an id), or NULL with *CAUSE. */
static char *
snap_jailgit_read_head(int gfd, const char *what, char **cause)
{
	char link[4096], *v, *q;
	struct buf b;
	ssize_t n;

	buf_init(&b);
	if (path_read_beneath(gfd, "HEAD", 4096, &b) == 0) {
		/* git reads up to a NUL: none is taken. */
		v = b.len > 0 && memchr(b.data, '\0', b.len) == NULL ?
		    (buf_add(&b, "", 1), snap_hist_parse(b.data)) : NULL;
		buf_free(&b);
		/* git takes a .git whose HEAD names no ref under refs/ (ref: FETCH_HEAD) for no repository. */
		if (v != NULL && strncmp(v, "ref: ", 5) == 0 &&
		    strncmp(v + 5, "refs/", 5) != 0) {
			free(v);
			v = NULL;
		}
		if (v == NULL)
			*cause = xprintf("%s/HEAD is neither a ref under refs/ "
			    "nor a commit id", what);
		return v;
	}
	buf_free(&b);
	/* A link HEAD -> refs/heads/x: git's old way of a symbolic ref. */
	if (errno == ELOOP && (n = readlinkat(gfd, "HEAD", link,
	    sizeof link - 1)) > 0) {
		link[n] = '\0';
		if (snap_hist_refname_ok(link))
			return xprintf("ref: %s", link);
		q = quote_name(link);
		*cause = xprintf("%s/HEAD is a link to %s, not to a ref", what,
		    q);
		free(q);
		return NULL;
	}
	*cause = xprintf("cannot read %s/HEAD: %s", what, errno == EFBIG ?
	    "it is larger than 4 KiB" : errno == EINVAL ? "it is not a file" :
	    strerror(errno));
	return NULL;
}

static void snap_jailgit_index_kept(struct snap_jailgit *, int, int,
    const struct stat *, const struct stat *);
static int snap_jailgit_packed_give(struct snap_jailgit *, int, int,
    const char *, char **);

/* Makes NAME in GFD a dir, as git would (0755 but for the user's umask), if it is not there. */
static void
snap_jailgit_mkdir(int gfd, const char *name)
{
	mode_t mode = 0755 & ~util_user_umask();
	struct stat st;
	int fd;

	if (fstatat(gfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 ||
	    mkdirat(gfd, name, 0700) == -1)
		return;
	/* A repository shared with a group (set-gid dirs): its mode, as git makes them. */
	if (fstat(gfd, &st) == 0 && (st.st_mode & S_ISGID))
		mode = st.st_mode & 07777;
	if ((fd = path_open_beneath(gfd, name, O_RDONLY | O_DIRECTORY, 0)) !=
	    -1) {
		(void)fchmod(fd, mode);
		close(fd);
	}
}

/* NAME in PFD a link to AT/NAME; false with *CAUSE. */
static bool
snap_jailgit_link(int pfd, const char *priv, const char *at,
    const char *name, char **cause)
{
	char *to = xprintf("%s/%s", at, name);
	bool ok = symlinkat(to, pfd, name) == 0 || errno == EEXIST;

	if (!ok)
		*cause = xprintf("cannot make %s/%s: %s", priv, name,
		    strerror(errno));
	free(to);
	return ok;
}

/* Links in PFD to the dirs at the top of GFD (but a merge's or rebase's, and modules) and to the files the jail's git reads there. */
static int
snap_jailgit_links(int gfd, int pfd, const char *priv, const char *at,
    char **cause)
{
	struct dirent *de;
	struct stat st;
	size_t i;
	bool ok = true;
	DIR *d;
	int fd;

	if ((fd = openat(gfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1 ||
	    (d = fdopendir(fd)) == NULL) {
		*cause = xprintf("cannot read the project's git dir: %s",
		    strerror(errno));
		if (fd != -1)
			close(fd);
		return -1;
	}
	while (ok && (de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") ==
		    0 || fstatat(gfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) ==
		    -1 || !S_ISDIR(st.st_mode))
			continue;
		for (i = 0; i < nitems(snap_jailgit_unlinked) &&
		    strcmp(de->d_name, snap_jailgit_unlinked[i]) != 0; i++)
			;
		if (i == nitems(snap_jailgit_unlinked))
			ok = snap_jailgit_link(pfd, priv, at, de->d_name,
			    cause);
	}
	closedir(d);
	for (i = 0; ok && i < nitems(snap_jailgit_files); i++)
		ok = snap_jailgit_link(pfd, priv, at, snap_jailgit_files[i],
		    cause);
	return ok ? 0 : -1;
}

/* Writes TEXT (a HEAD's value) as PFD's HEAD, with the newline git ends it with. */
static int
snap_jailgit_write_head(int gfd, const char *value)
{
	struct buf b;
	int rc;

	buf_init(&b);
	buf_printf(&b, "%s\n", value);
	rc = snap_hist_write(gfd, "HEAD", &b, 0644);
	buf_free(&b);
	return rc;
}

/* Why an index could not be copied (snap_jailgit_copy's ERR). */
static const char *
snap_jailgit_why(int err)
{
	switch (err) {
	case EFBIG:
		return "it is larger than 64 MiB";
	case EINVAL:
		return "it is not a file";
	case ELOOP:
		return "it is a link";
	case ENOTSUP:
		return "it has holes, which git never writes";
	case EBADMSG:
		return "its entries cannot be read as git would read them (cut "
		    "short, a name's length not where the name ends), or some "
		    "are elsewhere (a split or sparse index, an offset table)";
	default:
		return strerror(err);
	}
}

/*
 * FROM's regular file NAME (at most MAX bytes) read into B (caller frees),
 * through no link; ST its stat as read. An index from the jail (BAD not
 * NULL, ids of OIDLEN bytes) only if git's checkout could write each of
 * its entries only where git would (snap_index_paths_check): else EPERM,
 * what it could not into BAD, or EBADMSG if it cannot be read as git
 * reads it. -1 with errno.
 */
static int
snap_jailgit_read(int from, const char *name, long long max,
    struct stat *st, size_t oidlen, struct strv *bad, struct buf *b)
{
	int check;

	buf_init(b);
	if (fstatat(from, name, st, AT_SYMLINK_NOFOLLOW) == -1)
		return -1;
	if (S_ISLNK(st->st_mode) || !S_ISREG(st->st_mode) ||
	    st->st_size > max) {
		errno = S_ISLNK(st->st_mode) ? ELOOP : S_ISREG(st->st_mode) ?
		    EFBIG : EINVAL;
		return -1;
	}
	/*
	 * Holes cost the jail nothing, and git writes none (a quarter: a
	 * compressing file system stores an index's ids in no less).
	 */
	if (st->st_size > 65536 && st->st_blocks * 512 < st->st_size / 4) {
		errno = ENOTSUP;
		return -1;
	}
	/* Read to MAX whatever it grew to since (the jail may write on). */
	if (path_read_beneath(from, name, (size_t)max, b) == -1)
		return -1;
	/* What is checked is what is written. */
	if (bad != NULL && (check = snap_index_paths_check(b, oidlen,
	    bad)) != 0) {
		errno = check == 1 ? EPERM : EBADMSG;
		return -1;
	}
	return 0;
}

/*
 * The mode TO's NAME has, kept as it is (a repository shared with a group
 * keeps 0664 whatever the user's umask), never executable; or git's 0644
 * but for the user's umask.
 */
static mode_t
snap_jailgit_mode(int to, const char *name)
{
	struct stat was;

	if (fstatat(to, name, &was, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISREG(was.st_mode))
		return was.st_mode & 0666;
	return 0644 & ~util_user_umask();
}

/* Whether the lock FD is still the file at NAME in GFD (the user may have removed ours, and their git taken a new one). */
static bool
snap_jailgit_lock_ours(int gfd, const char *name, int fd)
{
	struct stat a, b;

	return fstat(fd, &a) == 0 && fstatat(gfd, name, &b,
	    AT_SYMLINK_NOFOLLOW) == 0 && a.st_dev == b.st_dev &&
	    a.st_ino == b.st_ino;
}

/*
 * B written as GFD's index, with git's index.lock held only around the
 * rename: written and synced first as a temp file beside it; then the
 * lock taken with O_EXCL (held by the user's git: -1 with EAGAIN), the
 * index looked at again under it (not the one WAS: the user's git wrote
 * it meanwhile, -1 with ESTALE), the temp renamed over it and the lock
 * let go. git does not wait for index.lock, it fails: held a moment, it
 * fails the user's git seldom, and agentmux killed leaves a temp file,
 * not a lock every git there stops at. *WROTE: the stat of what was
 * written.
 */
static int
snap_jailgit_index_write(int gfd, const struct buf *b, mode_t mode,
    const struct stat *was, struct stat *wrote)
{
	unsigned char rnd[6];
	struct stat now;
	char *tmp;
	int fd, lfd = -1, rc = -1, saved;

	util_random(rnd, sizeof rnd);
	tmp = xprintf("index.agentmux-%02x%02x%02x%02x%02x%02x", rnd[0],
	    rnd[1], rnd[2], rnd[3], rnd[4], rnd[5]);
	fd = openat(gfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, 0600);
	if (fd == -1) {
		free(tmp);
		return -1;
	}
	if (fchmod(fd, mode) == -1 ||
	    util_write_all(fd, b->data != NULL ? b->data : "", b->len) == -1 ||
	    fsync(fd) == -1)
		goto out;
	if ((lfd = openat(gfd, "index.lock", O_WRONLY | O_CREAT | O_EXCL |
	    O_NOFOLLOW | O_CLOEXEC, 0600)) == -1) {
		if (errno == EEXIST)
			errno = EAGAIN;
		goto out;
	}
	if (fstatat(gfd, "index", &now, AT_SYMLINK_NOFOLLOW) == -1)
		memset(&now, 0, sizeof now);
	if (!path_stat_unchanged(&now, was))
		errno = ESTALE;
	else if (renameat(gfd, tmp, gfd, "index") == 0)
		rc = 0;
out:
	saved = errno;
	/* Its stat after the rename (which changes its ctime), whatever is at the name by now. */
	if (rc == 0 && fstat(fd, wrote) == -1)
		memset(wrote, 0, sizeof *wrote);
	close(fd);
	if (rc == -1)
		(void)unlinkat(gfd, tmp, 0);
	if (lfd != -1) {
		if (snap_jailgit_lock_ours(gfd, "index.lock", lfd))
			(void)unlinkat(gfd, "index.lock", 0);
		close(lfd);
	}
	free(tmp);
	errno = saved;
	return rc;
}

/*
 * FROM's regular file NAME (at most MAX bytes) written as TO's, through
 * no link on either side; ST its stat as read (snap_jailgit_read).
 * -1 with errno.
 */
static int
snap_jailgit_copy(int from, int to, const char *name, long long max,
    struct stat *st, size_t oidlen, struct strv *bad)
{
	struct buf b;
	int rc = -1;

	if (snap_jailgit_read(from, name, max, st, oidlen, bad, &b) == 0)
		rc = snap_hist_write(to, name, &b, snap_jailgit_mode(to, name));
	buf_free(&b);
	return rc;
}


/* The name snap_jailgit_index_write gives its temp file: "index.agentmux-" and 12 hex digits. */
static bool
snap_jailgit_tmp_name(const char *name)
{
	return strncmp(name, "index.agentmux-", 15) == 0 &&
	    strlen(name) == 27 &&
	    strspn(name + 15, "0123456789abcdef") == 12;
}

/*
 * Temp files of snap_jailgit_index_write an agentmux killed mid-write
 * left in GFD (up to 64 MiB each), removed: those a minute old, so that
 * another session's write under way is not taken from it.
 */
static void
snap_jailgit_tmp_clean(int gfd)
{
	struct dirent *de;
	struct stat st;
	time_t old = time(NULL) - 60;
	DIR *d;
	int fd;

	if ((fd = openat(gfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		if (snap_jailgit_tmp_name(de->d_name) &&
		    fstatat(dirfd(d), de->d_name, &st,
		    AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
		    st.st_mtime < old)
			(void)unlinkat(dirfd(d), de->d_name, 0);
	}
	closedir(d);
}

struct snap_jailgit *
snap_jailgit_make(const char *gitdir, const char *priv, const char *at,
    char **cause)
{
	struct snap_jailgit *jg = xcalloc(1, sizeof *jg);
	struct stat st;
	size_t i;
	int gfd, pfd = -1;

	*cause = NULL;
	jg->gitdir = xstrdup(gitdir);
	jg->quoted = quote_name(gitdir);
	jg->priv = xstrdup(priv);
	jg->at = xstrdup(at);
	gfd = open(gitdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (gfd == -1) {
		*cause = xprintf("cannot open %s: %s", jg->quoted,
		    strerror(errno));
		snap_jailgit_free(jg);
		return NULL;
	}
	if ((jg->head = snap_jailgit_read_head(gfd, jg->quoted, cause)) ==
	    NULL)
		goto out;
	jg->hash_len = snap_hist_hash_len(gfd);
	snap_jailgit_tmp_clean(gfd);
	for (i = 0; i < nitems(snap_jailgit_dirs); i++)
		snap_jailgit_mkdir(gfd, snap_jailgit_dirs[i]);
	/* Made anew at each start: nothing of an earlier run's jail is kept. */
	if ((path_remove_tree(priv) == -1 && errno != ENOENT) ||
	    mkdir(priv, 0755) == -1 || (pfd = open(priv, O_RDONLY |
	    O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1 ||
	    mkdirat(pfd, "modules", 0755) == -1) {
		*cause = xprintf("cannot make %s: %s", priv, strerror(errno));
		goto out;
	}
	(void)fchmod(pfd, 0755);
	if (snap_jailgit_links(gfd, pfd, priv, at, cause) == -1 ||
	    snap_jailgit_packed_give(jg, gfd, pfd, at, cause) == -1)
		goto out;
	if (snap_jailgit_write_head(pfd, jg->head) == -1) {
		*cause = xprintf("cannot write %s/HEAD: %s", priv,
		    strerror(errno));
		goto out;
	}
	/* No index yet (nothing added): git makes one in the jail's dir. */
	if (snap_jailgit_copy(gfd, pfd, "index", SNAP_JAILGIT_INDEX_MAX,
	    &st, 0, NULL) == -1 && errno != ENOENT)
		*cause = xprintf("cannot copy %s/index: %s", jg->quoted,
		    snap_jailgit_why(errno));
	else if (fstatat(pfd, "index", &st, AT_SYMLINK_NOFOLLOW) == 0)
		snap_jailgit_index_kept(jg, pfd, gfd, &st, NULL);
	else
		snap_jailgit_index_kept(jg, pfd, gfd, &jg->index, NULL);
out:
	if (pfd != -1)
		close(pfd);
	close(gfd);
	if (*cause != NULL) {
		snap_jailgit_free(jg);
		return NULL;
	}
	return jg;
}

void
snap_jailgit_free(struct snap_jailgit *jg)
{
	if (jg == NULL)
		return;
	free(jg->gitdir);
	free(jg->quoted);
	free(jg->priv);
	free(jg->at);
	free(jg->head);
	free(jg->head_told);
	free(jg->index_told);
	free(jg->packed_told);
	free(jg->stale_told);
	buf_free(&jg->packed_base);
	free(jg);
}

/* Told once for the same WHY (kept in *TOLD). */
static void
snap_jailgit_tell(char **told, const char *why, struct strv *alerts,
    const char *msg)
{
	if (*told != NULL && strcmp(*told, why) == 0)
		return;
	strv_add(alerts, msg);
	free(*told);
	*told = xstrdup(why);
}

/* Why REF's name cannot be a ref of GFD (a ref above it: refs/heads/x/y where refs/heads/x is one), or NULL. */
static char *
snap_jailgit_ref_below(int gfd, const char *ref)
{
	char *part = xstrdup(ref), *slash, *cause = NULL;
	struct stat st;

	for (slash = strchr(part, '/'); slash != NULL && cause == NULL;
	    slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		if (fstatat(gfd, part, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    !S_ISDIR(st.st_mode))
			cause = xprintf("%s names a ref below the ref %s", ref,
			    part);
		*slash = '/';
	}
	free(part);
	return cause;
}

/*
 * Why REF cannot be a ref of GFD beside its packed refs (LEN the hex
 * digits of its ids): one packed above it (refs/heads/x where it is
 * refs/heads/x/y), or below it (refs/heads/x/y where it is
 * refs/heads/x); the user's next commit there failed "cannot lock ref".
 * NULL if none, or the file cannot be read.
 */
static char *
snap_jailgit_ref_packed(int gfd, const char *ref, size_t len)
{
	char *line, *next, *name, *q, *cause = NULL;
	size_t n = strlen(ref), m;
	struct buf b;

	buf_init(&b);
	if (path_read_beneath(gfd, "packed-refs", SNAP_JAILGIT_PACKED_MAX,
	    &b) == -1) {
		buf_free(&b);
		return NULL;
	}
	buf_add(&b, "", 1);
	for (line = b.data; line != NULL && cause == NULL; line = next) {
		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		if (strlen(line) <= len + 1 || line[0] == '#' || line[0] == '^')
			continue;
		name = line + len + 1;
		m = strlen(name);
		if ((m < n && strncmp(ref, name, m) == 0 && ref[m] == '/') ||
		    (m > n && strncmp(name, ref, n) == 0 && name[n] == '/')) {
			q = quote_name(name);
			cause = xprintf("%s names a ref %s the packed ref %s", ref,
			    m < n ? "below" : "above", q);
			free(q);
		}
	}
	buf_free(&b);
	return cause;
}

/* Git follows at most this many symbolic refs (its SYMREF_MAXDEPTH). */
#define SNAP_JAILGIT_SYMREF_DEPTH 5

/*
 * Whether HEAD's value V (as snap_jailgit_read_head gives it) leaves
 * GFD's git working: an id of the repository's length, or a ref that is
 * not below a ref, not a dir, and, if a symbolic ref (a branch alias), one
 * of a chain git follows to its end (none naming one before it: a ref
 * naming itself made the user's git say "your current branch appears to
 * be broken"). Else a cause.
 */
static char *
snap_jailgit_head_bad(const struct snap_jailgit *jg, int gfd, const char *v)
{
	const char *seen[SNAP_JAILGIT_SYMREF_DEPTH + 1];
	char *chain[SNAP_JAILGIT_SYMREF_DEPTH], *next, *cause = NULL;
	const char *ref;
	struct stat st;
	struct buf b;
	size_t depth = 0, i;

	if (strncmp(v, "ref: ", 5) != 0)
		return strlen(v) == jg->hash_len ? NULL : xprintf("an id of %zu "
		    "digits, where this repository's have %zu", strlen(v),
		    jg->hash_len);
	seen[0] = ref = v + 5;
	while (cause == NULL) {
		if ((cause = snap_jailgit_ref_below(gfd, ref)) != NULL ||
		    (cause = snap_jailgit_ref_packed(gfd, ref,
		    jg->hash_len)) != NULL ||
		    fstatat(gfd, ref, &st, AT_SYMLINK_NOFOLLOW) == -1)
			break;
		if (!S_ISREG(st.st_mode)) {
			cause = xprintf("%s is not a file", ref);
			break;
		}
		buf_init(&b);
		next = NULL;
		if (path_read_beneath(gfd, ref, 4096, &b) == 0 && b.len >= 4 &&
		    memcmp(b.data, "ref:", 4) == 0 &&
		    memchr(b.data, '\0', b.len) == NULL) {
			buf_add(&b, "", 1);
			if ((next = snap_hist_parse(b.data)) == NULL ||
			    strncmp(next, "ref: refs/", 10) != 0)
				cause = xprintf("%s is a symbolic ref to what "
				    "git cannot follow", ref);
		}
		buf_free(&b);
		if (next == NULL || cause != NULL) {
			free(next);
			break;
		}
		chain[depth] = next;
		ref = next + 5;
		for (i = 0; i <= depth && cause == NULL; i++) {
			if (strcmp(seen[i], ref) == 0)
				cause = xprintf("%s is a symbolic ref that leads "
				    "back to itself", seen[0]);
		}
		seen[++depth] = ref;
		if (cause == NULL && depth == SNAP_JAILGIT_SYMREF_DEPTH)
			cause = xprintf("%s leads through more symbolic refs "
			    "than git follows (%d)", seen[0],
			    SNAP_JAILGIT_SYMREF_DEPTH);
	}
	for (i = 0; i < depth; i++)
		free(chain[i]);
	return cause;
}

/* The jail's HEAD brought back if its git moved it. */
static void
snap_jailgit_head(struct snap_jailgit *jg, int pfd, int gfd,
    struct strv *alerts)
{
	char *now, *real = NULL, *why = NULL, *msg;

	if ((now = snap_jailgit_read_head(pfd, ".git", &why)) == NULL) {
		if (why == NULL)
			why = xstrdup("unreadable");
		msg = xprintf("the session made its HEAD what git cannot "
		    "read (%s): your .git/HEAD is left as it was (%s)", why,
		    jg->head);
		snap_jailgit_tell(&jg->head_told, why, alerts, msg);
		free(msg);
		free(why);
		return;
	}
	if (strcmp(now, jg->head) == 0) {
		free(now);
		return;
	}
	if ((why = snap_jailgit_head_bad(jg, gfd, now)) != NULL) {
		msg = xprintf("the session made its HEAD %s, which your git "
		    "could not use (%s): your .git/HEAD is left as it was (%s)",
		    now, why, jg->head);
		/* Once, whatever it makes next (a jail writing a new one each moment). */
		snap_jailgit_tell(&jg->head_told, "unusable", alerts, msg);
		free(msg);
		free(why);
		free(now);
		return;
	}
	real = snap_jailgit_read_head(gfd, jg->quoted, &why);
	if (real == NULL || strcmp(real, jg->head) != 0) {
		/* Moved by the user's own git meanwhile: theirs stays. */
		msg = xprintf("the session's git moved its HEAD to %s, but "
		    "%s/HEAD was moved meanwhile (to %s), by your git or by the "
		    "session through /.agentmux-git: it is left as it is", now,
		    jg->quoted, real != NULL ? real : why);
		snap_jailgit_tell(&jg->head_told, now, alerts, msg);
		free(msg);
	} else if (snap_jailgit_write_head(gfd, now) == -1)
		strv_addf(alerts, "the session's git moved its HEAD to %s, but "
		    "%s/HEAD could not be written (%s): write it yourself", now,
		    jg->quoted, strerror(errno));
	else {
		free(jg->head);
		jg->head = now;
		now = NULL;
	}
	free(now);
	free(real);
	free(why);
}

/* The last bytes of FD (an index: its checksum) into T; their count, or 0. */
static size_t
snap_jailgit_trailer(int fd, const struct stat *st, unsigned char *t)
{
	static const unsigned char none[20];
	ssize_t n;

	if (st->st_size < SNAP_JAILGIT_TRAILER)
		return 0;
	n = pread(fd, t, SNAP_JAILGIT_TRAILER, st->st_size -
	    SNAP_JAILGIT_TRAILER);
	/*
	 * index.skipHash writes zeros for the checksum (20 at least, SHA-1's
	 * length): nothing to tell two indexes apart by.
	 */
	if (n != SNAP_JAILGIT_TRAILER || memcmp(t + SNAP_JAILGIT_TRAILER -
	    sizeof none, none, sizeof none) == 0)
		return 0;
	return (size_t)n;
}

/*
 * Whether the jail's index (ST) holds what was last brought back: the
 * same size and checksum (git ends an index with the hash of the rest),
 * only its times changed (a jail that touched it in a loop had it
 * rewritten in the user's .git at 100 MiB/s).
 */
static bool
snap_jailgit_index_same(struct snap_jailgit *jg, int pfd,
    const struct stat *st)
{
	unsigned char t[SNAP_JAILGIT_TRAILER];
	bool same = false;
	int fd;

	if (!S_ISREG(st->st_mode) || jg->trailer_len == 0 || st->st_size !=
	    jg->index.st_size)
		return false;
	fd = path_open_beneath(pfd, "index", O_RDONLY | O_NONBLOCK, 0);
	if (fd == -1)
		return false;
	same = snap_jailgit_trailer(fd, st, t) == jg->trailer_len &&
	    memcmp(t, jg->trailer, jg->trailer_len) == 0;
	close(fd);
	return same;
}

/* What was brought back (ST, the jail's index), and the user's index as it then was. */
static void
snap_jailgit_index_kept(struct snap_jailgit *jg, int pfd, int gfd,
    const struct stat *st, const struct stat *host)
{
	int fd;

	jg->index = *st;
	jg->trailer_len = 0;
	if ((fd = path_open_beneath(pfd, "index", O_RDONLY | O_NONBLOCK,
	    0)) != -1) {
		jg->trailer_len = snap_jailgit_trailer(fd, st, jg->trailer);
		close(fd);
	}
	if (host != NULL)
		jg->host_index = *host;
	else if (fstatat(gfd, "index", &jg->host_index, AT_SYMLINK_NOFOLLOW) ==
	    -1)
		memset(&jg->host_index, 0, sizeof jg->host_index);
}

/* The user's index changed while the session ran: theirs stays, told once. */
static void
snap_jailgit_index_theirs(struct snap_jailgit *jg, struct strv *alerts)
{
	char *msg = xprintf("your %s/index changed while the session ran "
	    "(your git wrote it): the session's index is not brought back over "
	    "it; if 'git status' there shows the session's commits as changes "
	    "to undo, 'git reset' makes the index HEAD's (what you staged with "
	    "it)", jg->quoted);

	snap_jailgit_tell(&jg->index_told, "theirs", alerts, msg);
	free(msg);
}

/*
 * The jail's index brought back if its git wrote it, unless the user's
 * changed since it was last given (their own git wrote it meanwhile, up
 * to the moment it is written: git's index.lock is taken for that):
 * theirs stays, told once.
 */
static void
snap_jailgit_index(struct snap_jailgit *jg, int pfd, int gfd,
    struct strv *alerts)
{
	struct stat st, now, wrote;
	struct strv bad;
	struct buf b;
	const char *why;
	char *msg, *names;
	int rc, saved;

	jg->index_pending = false;
	if (fstatat(pfd, "index", &st, AT_SYMLINK_NOFOLLOW) == -1 ||
	    path_stat_unchanged(&st, &jg->index) ||
	    path_stat_unchanged(&st, &jg->index_refused))
		return;
	if (snap_jailgit_index_same(jg, pfd, &st)) {
		jg->index = st;
		return;
	}
	if (fstatat(gfd, "index", &now, AT_SYMLINK_NOFOLLOW) == -1)
		memset(&now, 0, sizeof now);
	if (!path_stat_unchanged(&now, &jg->host_index)) {
		snap_jailgit_index_theirs(jg, alerts);
		return;
	}
	/* The user's git holds index.lock: nothing read (up to 64 MiB) until it lets go. */
	if (faccessat(gfd, "index.lock", F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
		jg->index_pending = true;
		return;
	}
	strv_init(&bad);
	if (snap_jailgit_read(pfd, "index", SNAP_JAILGIT_INDEX_MAX, &st,
	    jg->hash_len / 2, &bad, &b) == 0) {
		rc = snap_jailgit_index_write(gfd, &b, snap_jailgit_mode(gfd,
		    "index"), &jg->host_index, &wrote);
		saved = errno;
		buf_free(&b);
		strv_free(&bad);
		/* The user's git holds index.lock: tried again a moment later (at the end, by snap_jailgit_index_wait). */
		jg->index_pending = rc == -1 && saved == EAGAIN;
		if (rc == 0)
			snap_jailgit_index_kept(jg, pfd, gfd, &st, &wrote);
		else if (saved == ESTALE)
			snap_jailgit_index_theirs(jg, alerts);
		else if (saved != EAGAIN) {
			why = snap_jailgit_why(saved);
			msg = xprintf("the session's index could not be brought "
			    "back to %s/index (%s): yours is left as it was; 'git "
			    "reset' there makes one from HEAD", jg->quoted, why);
			snap_jailgit_tell(&jg->index_told, why, alerts, msg);
			free(msg);
		}
		return;
	}
	buf_free(&b);
	/* Read and refused once: up to 256 MiB again each second otherwise. */
	jg->index_refused = st;
	if (errno == EPERM) {
		/* Told each time it names others: a jail may try one at a time. */
		names = snap_quote_names(&bad, 16);
		msg = xprintf("the session's index has entries that git's "
		    "checkout would write into a git dir or outside the tree "
		    "(%s): it is not brought back to %s/index, and yours is "
		    "left as it was (a 'git checkout -- .' there would have "
		    "written them, a hook your next git runs); 'git reset' "
		    "makes one from HEAD", names, jg->quoted);
		snap_jailgit_tell(&jg->index_told, names, alerts, msg);
		free(names);
	} else {
		why = snap_jailgit_why(errno);
		msg = xprintf("the session's index could not be brought back "
		    "to %s/index (%s): yours is left as it was; 'git reset' "
		    "there makes one from HEAD", jg->quoted, why);
		snap_jailgit_tell(&jg->index_told, why, alerts, msg);
	}
	free(msg);
	strv_free(&bad);
}

/*
 * packed-refs given to the jail's git dir PFD as a copy of GFD's (git
 * locks it for every ref it deletes, and the top of GFD is read only in
 * the jail), and what was given kept, to merge what the jail writes with
 * what the user's git writes meanwhile. One larger than
 * SNAP_JAILGIT_PACKED_MAX, a link or not a file is linked (read only
 * there: the jail's git cannot delete a ref). -1 with *CAUSE.
 */
static int
snap_jailgit_packed_give(struct snap_jailgit *jg, int gfd, int pfd,
    const char *at, char **cause)
{
	struct buf b;

	/* Its stat first: one the user's git writes meanwhile is given again. */
	if (fstatat(gfd, "packed-refs", &jg->host_packed, AT_SYMLINK_NOFOLLOW) ==
	    -1)
		memset(&jg->host_packed, 0, sizeof jg->host_packed);
	buf_init(&b);
	if (path_read_beneath(gfd, "packed-refs", SNAP_JAILGIT_PACKED_MAX,
	    &b) == -1) {
		buf_free(&b);
		if (errno == ENOENT)
			return 0;
		return snap_jailgit_link(pfd, jg->priv, at, "packed-refs",
		    cause) ? 0 : -1;
	}
	if (snap_hist_write(pfd, "packed-refs", &b, jg->host_packed.st_mode &
	    0777) == -1 || fstatat(pfd, "packed-refs", &jg->packed,
	    AT_SYMLINK_NOFOLLOW) == -1) {
		*cause = xprintf("cannot write %s/packed-refs: %s", jg->priv,
		    strerror(errno));
		buf_free(&b);
		return -1;
	}
	jg->packed_base = b;
	return 0;
}

/*
 * The mode of GFD's packed-refs written anew: the one it has (git gave
 * it the group's bits of core.sharedRepository, which the user's umask
 * would take off), never writable by all; for a new one, HEAD's.
 */
static mode_t
snap_jailgit_packed_mode(int gfd)
{
	struct stat st;

	if (fstatat(gfd, "packed-refs", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISREG(st.st_mode))
		return st.st_mode & 0775;
	if (fstatat(gfd, "HEAD", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISREG(st.st_mode))
		return st.st_mode & 0664;
	return 0644 & ~util_user_umask();
}

/*
 * The merge of OURS (the jail's packed-refs) with GFD's into its lock LFD
 * (held), renamed over it; what was lost (both changed a ref) told, and
 * (once) the jail's lines left out (git could not read them, or refuses
 * a name): the rest of its change comes back all the same.
 */
static int
snap_jailgit_packed_merge(struct snap_jailgit *jg, int gfd, int lfd,
    const struct buf *ours, struct strv *alerts)
{
	struct buf theirs, out;
	struct strv lost, left;
	char *names;
	int rc = -1;

	buf_init(&theirs);
	buf_init(&out);
	strv_init(&lost);
	strv_init(&left);
	if ((path_read_beneath(gfd, "packed-refs", SNAP_JAILGIT_PACKED_MAX,
	    &theirs) == -1 && errno != ENOENT) ||
	    snap_hist_packed_merge(&jg->packed_base, ours, &theirs,
	    jg->hash_len, &out, &lost, &left) == -1)
		goto out;
	if (fchmod(lfd, snap_jailgit_packed_mode(gfd)) == -1 ||
	    util_write_all(lfd, out.data != NULL ? out.data : "", out.len) ==
	    -1 || fsync(lfd) == -1 || renameat(gfd, "packed-refs.lock", gfd,
	    "packed-refs") == -1)
		goto out;
	rc = 0;
	if (lost.n > 0) {
		names = snap_quote_names(&lost, 16);
		strv_addf(alerts, "the session's git and yours both changed "
		    "packed refs while it ran, each its own way (%s): yours "
		    "are kept in %s/packed-refs", names, jg->quoted);
		free(names);
	}
	if (left.n > 0 && !jg->left_told) {
		names = snap_quote_names(&left, 16);
		strv_addf(alerts, "the session's git wrote lines to its "
		    "packed-refs that git cannot read, or names git refuses "
		    "(%s): they were left out of %s/packed-refs (a ref they "
		    "named is kept as yours has it), the rest of its change was "
		    "brought back", names, jg->quoted);
		free(names);
		jg->left_told = true;
	}
out:
	buf_free(&theirs);
	buf_free(&out);
	strv_free(&lost);
	strv_free(&left);
	return rc;
}

/*
 * The jail's packed-refs, if its git wrote it, brought back to GFD merged
 * with the user's (each ref as the side that changed it has it), under
 * git's own lock: if the user's git holds it, later (PACKED_PENDING).
 */
static void
snap_jailgit_packed(struct snap_jailgit *jg, int pfd, int gfd,
    struct strv *alerts)
{
	struct stat st;
	struct buf ours;
	char *msg;
	int lfd, err;

	if (fstatat(pfd, "packed-refs", &st, AT_SYMLINK_NOFOLLOW) == -1) {
		if (errno != ENOENT || jg->packed.st_ino == 0)
			return;
		memset(&st, 0, sizeof st);
	} else if (S_ISLNK(st.st_mode) || (path_stat_unchanged(&st,
	    &jg->packed) && !jg->packed_pending))
		return;
	buf_init(&ours);
	if (st.st_ino != 0 && path_read_beneath(pfd, "packed-refs",
	    SNAP_JAILGIT_PACKED_MAX, &ours) == -1) {
		err = errno;
		goto told;
	}
	/* (Its stat is the one before the read: a write meanwhile is brought back at the next sync.) */
	lfd = openat(gfd, "packed-refs.lock", O_WRONLY | O_CREAT | O_EXCL |
	    O_NOFOLLOW | O_CLOEXEC, 0600);
	if (lfd == -1 && errno == EEXIST) {
		jg->packed_pending = true;
		buf_free(&ours);
		return;
	}
	if (lfd == -1 || snap_jailgit_packed_merge(jg, gfd, lfd, &ours,
	    alerts) == -1) {
		err = errno;
		if (lfd != -1) {
			(void)unlinkat(gfd, "packed-refs.lock", 0);
			close(lfd);
		}
		goto told;
	}
	close(lfd);
	jg->packed_pending = false;
	buf_free(&jg->packed_base);
	jg->packed_base = ours;
	jg->packed = st;
	return;
told:
	buf_free(&ours);
	msg = xprintf("the session's git changed its packed refs, and they "
	    "could not be brought back to %s/packed-refs (%s): the branches "
	    "and tags it deleted or packed there may be missing; 'agentmux "
	    "undo --refs' puts back the ones of the start", jg->quoted,
	    err == EFBIG ? "larger than 64 MiB" : err == EBADMSG ? "yours "
	    "has a line git cannot read, or a ref listed twice" :
	    strerror(err));
	snap_jailgit_tell(&jg->packed_told, "failed", alerts, msg);
	free(msg);
	jg->packed = st;
}

/* Whether A and B hold the same bytes. */
static bool
snap_jailgit_buf_same(const struct buf *a, const struct buf *b)
{
	return a->len == b->len && (a->len == 0 || memcmp(a->data, b->data,
	    a->len) == 0);
}

/* The jail's packed-refs made a link to the user's (read only there), in one rename. */
static bool
snap_jailgit_relink(const struct snap_jailgit *jg, int pfd)
{
	char *to = xprintf("%s/packed-refs", jg->at);
	bool ok;

	ok = symlinkat(to, pfd, "packed-refs.agentmux") == 0 &&
	    renameat(pfd, "packed-refs.agentmux", pfd, "packed-refs") == 0;
	if (!ok)
		(void)unlinkat(pfd, "packed-refs.agentmux", 0);
	free(to);
	return ok;
}

/*
 * The jail's copy of packed-refs given again, under its own lock, once
 * the user's git wrote theirs (pack-refs, gc, branch -d, fetch --prune
 * move a ref there and delete its own file): else the jail's git read a
 * branch of the user's as it was at the start, and a commit on it there
 * dropped the user's. Only once the jail's own changes are brought back
 * (its copy as it was last given or brought back); if its git holds its
 * lock, at the next sync (its rename brings one). One grown past
 * SNAP_JAILGIT_PACKED_MAX is linked, read only.
 */
static void
snap_jailgit_packed_refresh(struct snap_jailgit *jg, int pfd, int gfd,
    struct strv *alerts)
{
	struct stat hs, js;
	struct buf theirs, ours;
	bool linked = false, renamed = false, was_link, ok = false;
	char *msg;
	int lfd;

	if (fstatat(gfd, "packed-refs", &hs, AT_SYMLINK_NOFOLLOW) == -1) {
		if (errno != ENOENT)
			return;
		memset(&hs, 0, sizeof hs);
	}
	if (jg->ended || jg->packed_pending || path_stat_unchanged(&hs,
	    &jg->host_packed)) {
		jg->stale_since = 0;
		return;
	}
	lfd = openat(pfd, "packed-refs.lock", O_WRONLY | O_CREAT | O_EXCL |
	    O_NOFOLLOW | O_CLOEXEC, 0600);
	if (lfd == -1) {
		/* The jail's git holds it: tried again (snap_jailgit_waiting), told after a while. */
		if (jg->stale_since == 0)
			jg->stale_since = time(NULL);
		else if (time(NULL) - jg->stale_since >= 10) {
			msg = xprintf("the session's git has held its "
			    ".git/packed-refs.lock for 10 s: it reads your "
			    "packed branches and tags as they were before your "
			    "git last wrote %s/packed-refs, and a commit there "
			    "on one of them would leave out yours", jg->quoted);
			snap_jailgit_tell(&jg->stale_told, "stale", alerts, msg);
			free(msg);
		}
		return;
	}
	jg->stale_since = 0;
	buf_init(&theirs);
	buf_init(&ours);
	/* A link (the user's was too large) shows theirs as it is, till it is small again. */
	was_link = fstatat(pfd, "packed-refs", &js, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISLNK(js.st_mode);
	if (hs.st_ino != 0 && path_read_beneath(gfd, "packed-refs",
	    SNAP_JAILGIT_PACKED_MAX, &theirs) == -1) {
		if (errno != EFBIG && errno != ELOOP && errno != EINVAL)
			goto unlock;
		linked = true;
	}
	/* The jail's git wrote it since: brought back first. */
	if (!was_link && ((path_read_beneath(pfd, "packed-refs",
	    SNAP_JAILGIT_PACKED_MAX, &ours) == -1 && errno != ENOENT) ||
	    !snap_jailgit_buf_same(&ours, &jg->packed_base)))
		goto unlock;
	if (linked && was_link)
		ok = true;
	else if (!linked && !was_link && hs.st_ino != 0 &&
	    snap_jailgit_buf_same(&theirs, &jg->packed_base))
		/* What was brought back, as it was (the merge there took nothing of the user's). */
		ok = true;
	else if (linked) {
		ok = snap_jailgit_relink(jg, pfd);
		memset(&jg->packed, 0, sizeof jg->packed);
	} else if (hs.st_ino == 0) {
		ok = unlinkat(pfd, "packed-refs", 0) == 0 || errno == ENOENT;
		memset(&jg->packed, 0, sizeof jg->packed);
	} else {
		ok = fchmod(lfd, hs.st_mode & 0777 & ~util_user_umask()) == 0 &&
		    util_write_all(lfd, theirs.data != NULL ? theirs.data : "",
		    theirs.len) == 0 && renameat(pfd, "packed-refs.lock", pfd,
		    "packed-refs") == 0;
		/* Renamed: the lock now is the jail's git's, if any. */
		renamed = ok;
		if (ok && fstat(lfd, &jg->packed) == -1)
			memset(&jg->packed, 0, sizeof jg->packed);
	}
	if (ok) {
		jg->host_packed = hs;
		buf_free(&jg->packed_base);
		jg->packed_base = theirs;
		buf_init(&theirs);
	}
unlock:
	if (!renamed)
		(void)unlinkat(pfd, "packed-refs.lock", 0);
	close(lfd);
	buf_free(&theirs);
	buf_free(&ours);
}

bool
snap_jailgit_waiting(const struct snap_jailgit *jg)
{
	return !jg->ended && (jg->stale_since != 0 || jg->packed_pending ||
	    jg->index_pending);
}

void
snap_jailgit_sync(struct snap_jailgit *jg, struct strv *alerts)
{
	int pfd, gfd;

	pfd = open(jg->priv, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	gfd = open(jg->gitdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (pfd != -1 && gfd != -1) {
		snap_jailgit_packed(jg, pfd, gfd, alerts);
		snap_jailgit_packed_refresh(jg, pfd, gfd, alerts);
		snap_jailgit_index(jg, pfd, gfd, alerts);
		snap_jailgit_head(jg, pfd, gfd, alerts);
	}
	if (pfd != -1)
		close(pfd);
	if (gfd != -1)
		close(gfd);
}

const char *
snap_jailgit_dir(const struct snap_jailgit *jg)
{
	return jg->priv;
}

void
snap_jailgit_remove(struct snap_jailgit *jg)
{
	if (path_remove_tree(jg->priv) == -1 && errno != ENOENT)
		log_warnx("cannot remove %s: %s", jg->priv, strerror(errno));
}

/* What git leaves at its dir's top while a merge, rebase, cherry-pick, revert or bisect is under way. */
static const char *const snap_jailgit_going[] = { "MERGE_HEAD",
    "CHERRY_PICK_HEAD", "REVERT_HEAD", "rebase-merge", "rebase-apply",
    "sequencer", "BISECT_LOG" };

/*
 * At the end: SYNC (snap_jailgit_packed or _index) tried again for 2 s
 * while *PENDING (the user's git held the lock). Whether it still is.
 */
static bool
snap_jailgit_retry(struct snap_jailgit *jg, struct strv *alerts,
    const bool *pending, void (*sync)(struct snap_jailgit *, int, int,
    struct strv *))
{
	const struct timespec pause = { 0, 20 * 1000 * 1000 };
	int64_t until = util_mono_us() + 2000000;
	int pfd, gfd;

	pfd = open(jg->priv, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	gfd = open(jg->gitdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	/* 2 s by the clock, however long a try takes (one that reads and writes 64 MiB). */
	while (*pending && pfd != -1 && gfd != -1 && util_mono_us() < until) {
		/* A jail's start does not wait for the pause. */
		if (jg->gated)
			clone_gate_leave();
		(void)nanosleep(&pause, NULL);
		if (jg->gated)
			clone_gate_enter();
		sync(jg, pfd, gfd, alerts);
	}
	if (pfd != -1)
		close(pfd);
	if (gfd != -1)
		close(gfd);
	return *pending;
}

/*
 * The jail's NAME, not brought back, kept beside its git dir (which
 * goes): 0 with *Q where (quoted, to free), or -1 with errno.
 */
static int
snap_jailgit_keep(struct snap_jailgit *jg, const char *name, char **q)
{
	char *kept;
	int pfd, rc = -1, saved;

	*q = NULL;
	pfd = open(jg->priv, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (pfd == -1)
		return -1;
	kept = xprintf("%s.%s", jg->priv, name);
	if (renameat(pfd, name, AT_FDCWD, kept) == 0) {
		*q = quote_name(kept);
		rc = 0;
	}
	saved = errno;
	close(pfd);
	free(kept);
	errno = saved;
	return rc;
}

/* At the end: the jail's packed-refs, if the user's git held the lock for 2 s, kept aside and told. */
static void
snap_jailgit_packed_wait(struct snap_jailgit *jg, struct strv *alerts)
{
	char *q;

	if (!snap_jailgit_retry(jg, alerts, &jg->packed_pending,
	    snap_jailgit_packed))
		return;
	if (snap_jailgit_keep(jg, "packed-refs", &q) == 0)
		strv_addf(alerts, "the session's git changed its packed refs, "
		    "and %s/packed-refs.lock stayed taken (by your git?) for 2 "
		    "s: they are kept at %s; the branches and tags it deleted "
		    "or packed are there", jg->quoted, q);
	else
		strv_addf(alerts, "the session's git changed its packed refs, "
		    "and %s/packed-refs.lock stayed taken (by your git?): they "
		    "could not be kept either (%s); 'agentmux undo --refs' puts "
		    "back the refs of the start", jg->quoted, strerror(errno));
	free(q);
}

/*
 * At the end: the jail's index, if the user's git held index.lock for
 * 2 s, kept aside and told: HEAD was brought back all the same, so the
 * user's git status shows the session's commits as changes until 'git
 * reset'.
 */
static void
snap_jailgit_index_wait(struct snap_jailgit *jg, struct strv *alerts)
{
	char *q;

	if (!snap_jailgit_retry(jg, alerts, &jg->index_pending,
	    snap_jailgit_index))
		return;
	jg->index_pending = false;
	if (snap_jailgit_keep(jg, "index", &q) == 0)
		strv_addf(alerts, "the session's git staged changes, and "
		    "%s/index.lock stayed taken (by your git?) for 2 s: its "
		    "index is kept at %s, yours is left as it was; 'git status' "
		    "there may show the session's commits as changes to undo, "
		    "and 'git reset' makes the index HEAD's", jg->quoted, q);
	else
		strv_addf(alerts, "the session's git staged changes, and "
		    "%s/index.lock stayed taken (by your git?): its index could "
		    "not be kept either (%s); yours is left as it was, and 'git "
		    "reset' makes the index HEAD's", jg->quoted,
		    strerror(errno));
	free(q);
}

void
snap_jailgit_end(struct snap_jailgit *jg, struct strv *alerts, bool gated)
{
	struct buf own;
	struct stat st;
	const char *name;
	size_t i;
	int pfd;

	jg->ended = true;
	jg->gated = gated;
	snap_jailgit_sync(jg, alerts);
	snap_jailgit_packed_wait(jg, alerts);
	snap_jailgit_index_wait(jg, alerts);
	if ((pfd = open(jg->priv, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1)
		return;
	buf_init(&own);
	/* The jail's own: the user's (a merge of theirs under way) is not linked, and stays theirs. */
	for (i = 0; i < nitems(snap_jailgit_going); i++) {
		name = snap_jailgit_going[i];
		if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    !S_ISLNK(st.st_mode))
			buf_printf(&own, "%s%s", own.len > 0 ? ", " : "", name);
	}
	close(pfd);
	/*
	 * Not carried over: its state could name commands to run (a rebase's
	 * exec lines), and the user's git would go on with them.
	 */
	if (own.len > 0)
		strv_addf(alerts, "the session left a merge, rebase, "
		    "cherry-pick, revert or bisect under way in its git (%.*s), "
		    "which is not carried over to %s: the working tree holds "
		    "what it left, conflicts too; 'git status' there shows it, "
		    "and 'git restore' or 'git reset' puts it right",
		    (int)own.len, own.data, jg->quoted);
	buf_free(&own);
}
