/*
 * Index entries a session rewrote to hide a change: an entry whose stat
 * data matches the file (so the user's git status and git diff take it as
 * unchanged, without reading it) but whose object id is not the content
 * the end snapshot just recorded. Found at the session's end from the
 * index as git lists it and the snapshot's tree, both read by git on the
 * loop, for the project's own index. A nested repository's entries are
 * compared with the files themselves (it may be ignored by the project,
 * so not in the snapshot): a file whose stat data matches its entry is
 * hashed as git hashes a blob, opened without following a link. The
 * entries are looked at on a helper thread, one repository after another
 * (the loop does not wait for the walk, nor for the hashing).
 */
#include <sys/stat.h>

#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "snap/snap-int.h"

/* The most entries told one by one; the rest are counted. */
#define SNAP_STALE_TELL 10
/* The most bytes of a nested repository's files hashed at a session's end. */
#define SNAP_STALE_HASH_MAX (256ULL << 20)

enum { SNAP_STALE_INDEX, SNAP_STALE_TREE, SNAP_STALE_NRUNS };

struct snap_stale {
	struct proc *p[SNAP_STALE_NRUNS];
	struct buf out[SNAP_STALE_NRUNS];
	int status[SNAP_STALE_NRUNS];
	int pending;
	struct event_base *base;
	char *project;
	char *projgit;            /* the git dir of PROJECT's index: a worktree's admin dir, or NULL */
	char *gitdir;             /* the own repository */
	char *repogit;            /* the git dir of the one looked at */
	char *tree;               /* the end snapshot's tree there */
	struct strv repos;        /* "" (the project), then nested ones (relative) */
	size_t at;                /* the one looked at */
	struct strv alerts;
	int64_t since;
	void (*done)(void *, struct strv *);
	void *arg;
	struct thread_job *job;   /* the walk of one repository's entries */
	char *dir;                /* ... in that dir */
	char *ipath;              /* ... whose index is that file */
	struct strv found;        /* what it found there */
	atomic_bool stop;         /* set: the walk ends at its next entry */
};

/* One entry of git ls-files --debug -s: what git compares with lstat. */
struct snap_stale_entry {
	unsigned mode;
	char oid[65];
	unsigned ctime, mtime, ino, uid, gid, size;
	const char *path;
};

/*
 * The entry at *P (git ls-files -s --debug -z: "mode oid stage\tpath\0"
 * then five lines of stat data), P moved past it; -1 at the end or if
 * it does not parse (the rest is then not looked at).
 */
static int
snap_stale_entry_next(const char **p, const char *end,
    struct snap_stale_entry *e)
{
	unsigned stage, cns, mns, dev, flags;
	const char *path;
	int n = 0;

	if (*p >= end || (path = memchr(*p, '\t', end - *p)) == NULL)
		return -1;
	if (sscanf(*p, "%o %64[0-9a-f] %u", &e->mode, e->oid, &stage) != 3)
		return -1;
	e->path = path + 1;
	*p = e->path + strlen(e->path) + 1;
	if (*p >= end || sscanf(*p, "  ctime: %u:%u\n  mtime: %u:%u\n"
	    "  dev: %u\tino: %u\n  uid: %u\tgid: %u\n  size: %u\tflags: %x\n%n",
	    &e->ctime, &cns, &e->mtime, &mns, &dev, &e->ino, &e->uid, &e->gid,
	    &e->size, &flags, &n) != 10 || n == 0)
		return -1;
	*p += n;
	return stage == 0 ? 0 : 1;
}

/*
 * True if git would take the entry E as unchanged from lstat alone
 * (core.checkStat default, core.trustctime: git compares the low 32 bits
 * of each): the same type and executable bit, times, inode, owner, size.
 */
static bool
snap_stale_stat_clean(int projfd, int64_t since, int64_t index_mtime,
    const struct snap_stale_entry *e)
{
	struct stat st;
	bool same;
	int fd;

	/*
	 * Racily clean (recorded in the second the index was written, or
	 * after): git reads such a file again whatever its stat data says, so
	 * nothing is hidden (a file edited in the second it was committed).
	 */
	if (index_mtime < 0 || (int64_t)e->mtime >= index_mtime)
		return false;
	fd = path_open_beneath(projfd, e->path, O_PATH | O_NOFOLLOW, 0);
	if (fd == -1)
		return false;
	if (fstat(fd, &st) == -1) {
		close(fd);
		return false;
	}
	close(fd);
	/* Changed before the session: not the session's rewrite. */
	if (!snap_nested_changed(&st, since))
		return false;
	if (S_ISLNK(st.st_mode))
		same = e->mode == 0120000;
	else if (S_ISREG(st.st_mode))
		same = e->mode == ((st.st_mode & 0100) ? 0100755U : 0100644U);
	else
		same = false;
	return same && (unsigned)st.st_mtim.tv_sec == e->mtime &&
	    (unsigned)st.st_ctim.tv_sec == e->ctime &&
	    (unsigned)st.st_ino == e->ino && (unsigned)st.st_uid == e->uid &&
	    (unsigned)st.st_gid == e->gid && (unsigned)st.st_size == e->size;
}

/*
 * The blob the snapshot's tree (git ls-tree -r -z: "mode blob oid\tpath")
 * records at PATH, or NULL. Both lists are in git's path order, so the
 * tree is read on from *AT.
 */
static const char *
snap_stale_tree_oid(const struct buf *tree, const char **at,
    const char *path)
{
	const char *p, *tab, *end = tree->data + tree->len;
	int cmp;

	for (p = *at; p != NULL && p < end; p += strlen(p) + 1) {
		if ((tab = strchr(p, '\t')) == NULL)
			continue;
		if ((cmp = strcmp(tab + 1, path)) > 0)
			break;
		*at = p + strlen(p) + 1;
		if (cmp == 0 && tab - p > 12 && strncmp(p + 7, "blob ", 5) == 0)
			return p + 12;
	}
	return NULL;
}

/*
 * Whether the file at PATH beneath PROJFD holds the blob OID (hex: sha-1
 * or sha-256 by its length) as git hashes its raw bytes; true too if it
 * cannot be read (nothing is told then). No link is followed: a link's
 * blob is its target. Its real size is charged to *BUDGET (the index
 * keeps 32 bits of it: a sparse file of 4 GiB and 2 bytes matches an
 * entry of 2); one past the budget is not read: *OVER set, true.
 */
static bool
snap_stale_file_is(int projfd, const char *path, const char *oid,
    unsigned long long *budget, bool *over)
{
	unsigned char md[EVP_MAX_MD_SIZE], chunk[65536];
	char hex[2 * EVP_MAX_MD_SIZE + 1], head[64];
	const EVP_MD *type = strlen(oid) == 64 ? EVP_sha256() : EVP_sha1();
	EVP_MD_CTX *ctx;
	struct stat st;
	unsigned long long left;
	unsigned int mdlen = 0, i;
	ssize_t n = 0;
	bool ok;
	int fd;

	fd = path_open_beneath(projfd, path, O_PATH | O_NOFOLLOW, 0);
	if (fd == -1 || fstat(fd, &st) == -1 || (!S_ISREG(st.st_mode) &&
	    !S_ISLNK(st.st_mode))) {
		if (fd != -1)
			close(fd);
		return true;
	}
	if (S_ISREG(st.st_mode)) {
		close(fd);
		fd = path_open_beneath(projfd, path, O_RDONLY | O_NOFOLLOW |
		    O_NONBLOCK, 0);
		if (fd == -1)
			return true;
		if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
			close(fd);
			return true;
		}
		if ((unsigned long long)st.st_size > *budget) {
			close(fd);
			*over = true;
			return true;
		}
		*budget -= (unsigned long long)st.st_size;
	}
	ctx = EVP_MD_CTX_new();
	ok = ctx != NULL && EVP_DigestInit_ex(ctx, type, NULL) == 1;
	if (S_ISLNK(st.st_mode)) {
		n = readlinkat(fd, "", (char *)chunk, sizeof chunk);
		ok = ok && n >= 0;
		snprintf(head, sizeof head, "blob %zd", n);
		ok = ok && EVP_DigestUpdate(ctx, head, strlen(head) + 1) == 1 &&
		    EVP_DigestUpdate(ctx, chunk, (size_t)n) == 1;
	} else {
		snprintf(head, sizeof head, "blob %lld", (long long)st.st_size);
		ok = ok && EVP_DigestUpdate(ctx, head, strlen(head) + 1) == 1;
		/* No more than was charged: a file that grows is not the blob. */
		left = (unsigned long long)st.st_size;
		while (ok && left > 0 && (n = read(fd, chunk, left <
		    sizeof chunk ? (size_t)left : sizeof chunk)) > 0) {
			ok = EVP_DigestUpdate(ctx, chunk, (size_t)n) == 1;
			left -= (unsigned long long)n;
		}
		ok = ok && left == 0 && n >= 0;
	}
	ok = ok && EVP_DigestFinal_ex(ctx, md, &mdlen) == 1;
	EVP_MD_CTX_free(ctx);
	close(fd);
	if (!ok)
		return true;
	for (i = 0; i < mdlen; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	return strcmp(hex, oid) == 0;
}

/*
 * The index IPATH of the tree DIR for a message: ".git/index", or a
 * worktree session's own (in its admin dir, not DIR/.git), named with
 * where the commands run. Caller frees.
 */
static char *
snap_stale_said(const char *dir, const char *ipath)
{
	char *plain = xprintf("%s/.git/index", dir), *qi, *qd, *said;

	if (strcmp(plain, ipath) == 0) {
		free(plain);
		return xstrdup(".git/index");
	}
	free(plain);
	qi = snap_nested_quote(ipath);
	qd = snap_nested_quote(dir);
	said = xprintf("%s (the index of the session's worktree %s, where "
	    "the commands below run)", qi, qd);
	free(qd);
	free(qi);
	return said;
}

/* One line for an entry rewritten to hide its change (REPO: a nested repository's, or NULL: IPATH, DIR's). */
static void
snap_stale_tell(const char *dir, const char *ipath, const char *repo,
    const char *path, struct strv *out)
{
	char *full = repo != NULL ? xprintf("%s/%s", repo, path) : NULL;
	char *q = snap_nested_quote(full != NULL ? full : path);
	char *qp = snap_nested_quote(path);
	char *qr = repo != NULL ? snap_nested_quote(repo) : NULL;
	char *where = qr != NULL ? xprintf("the index of the nested "
	    "repository %s", qr) : snap_stale_said(dir, ipath);
	char *git = qr != NULL ? xprintf("git -C %s", qr) : xstrdup("git");

	strv_addf(out, "%s: its entry in %s was rewritten in the "
	    "session to hide a change (its stat data matches the file, its "
	    "object id is not the file's content): your git status and git "
	    "diff show it as unchanged; see the change with 'agentmux diff', "
	    "and make git read the file again with 'touch -- %s' (or '%s rm "
	    "--cached -- %s' then '%s add -- %s'; 'git update-index "
	    "--really-refresh' trusts the forged stat data)", q, where, q, git,
	    qp, git, qp);
	free(git);
	free(where);
	free(qr);
	free(qp);
	free(q);
	free(full);
}

/* MORE entries past those told one by one (REPO, DIR and IPATH as snap_stale_tell's). */
static void
snap_stale_more(const char *dir, const char *ipath, const char *repo,
    size_t more, struct strv *out)
{
	char *said = repo != NULL ? NULL : snap_stale_said(dir, ipath);

	strv_addf(out, "%zu more entries of %s%s were rewritten in the session "
	    "to hide a change ('agentmux diff' shows them; touching a file "
	    "makes git read it again)", more, repo != NULL ? "the index of "
	    "the nested repository " : said, repo != NULL ? repo : "");
	free(said);
}

/* UNCHECKED entries of the nested repository REPO's index past the bytes hashed: said in red. */
static void
snap_stale_unchecked(const char *repo, size_t unchecked, struct strv *out)
{
	char *q = snap_nested_quote(repo);

	strv_addf(out, "%zu entries of the index of the nested repository %s "
	    "whose files changed in the session were not checked for a "
	    "rewrite that hides a change (agentmux hashes at most %llu MiB "
	    "of such files at a session's end): git status in %s may show "
	    "one of them as unchanged; 'agentmux diff' shows what the "
	    "session changed, and touching a file makes git read it again",
	    unchecked, q, SNAP_STALE_HASH_MAX >> 20, q);
	free(q);
}

/* Tests only: called with the dir of each repository whose entries are looked at, before. */
AM_TESTABLE void (*snap_stale_dir_looked)(const char *dir);

/* Whether entry E (stat data clean) hides a change; *BUDGET, *UNCHECKED: as snap_stale_find_in. */
static bool
snap_stale_hides(int projfd, const struct snap_stale_entry *e, bool hash,
    unsigned long long *budget, size_t *unchecked)
{
	bool is, over = false;

	if (!hash)
		return true;
	is = snap_stale_file_is(projfd, e->path, e->oid, budget, &over);
	if (over)
		(*unchecked)++;
	return !is;
}

/*
 * DIR, the project or its nested repository REPO (DIR is PROJECT/REPO),
 * opened without following a link on the way from the project to it: the
 * jail may have swapped REPO, or a dir above it, for a link to anywhere.
 */
static int
snap_stale_open_dir(const char *dir, const char *repo,
    const atomic_bool *stop)
{
	size_t n = strlen(dir), r;
	char *top;
	int topfd, fd;

	if (repo == NULL)
		return open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	r = strlen(repo);
	if (r + 1 >= n || dir[n - r - 1] != '/' || strcmp(dir + n - r,
	    repo) != 0)
		return -1;
	/* It allocates: in the gate on a helper thread. */
	if (stop != NULL)
		clone_gate_enter();
	top = xstrndup(dir, n - r - 1);
	fd = -1;
	if ((topfd = open(top, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) != -1) {
		fd = path_open_beneath(topfd, repo, O_RDONLY | O_DIRECTORY, 0);
		close(topfd);
	}
	free(top);
	if (stop != NULL)
		clone_gate_leave();
	return fd;
}

/*
 * snap_stale_find for the repository at DIR (REPO in the project, or
 * NULL: the project's own). TREE NULL: the files themselves are hashed.
 * With STOP (a helper thread's walk): it allocates inside the clone gate
 * only, and ends at the next entry once STOP is set.
 */
static void
snap_stale_find_in(const char *dir, const char *repo, const char *ipath,
    int64_t since, const struct buf *index, const struct buf *tree,
    struct strv *out, const atomic_bool *stop)
{
	struct snap_stale_entry e;
	const char *p, *end, *at;
	const char *oid;
	size_t told = 0, more = 0, unchecked = 0;
	unsigned long long budget = SNAP_STALE_HASH_MAX;
	struct stat ist;
	int64_t index_mtime;
	int projfd, rc;

	if (snap_stale_dir_looked != NULL)
		snap_stale_dir_looked(dir);
	if (index->data == NULL || (tree != NULL && tree->data == NULL) ||
	    (projfd = snap_stale_open_dir(dir, repo, stop)) == -1)
		return;
	/* The index as git status would read it now: its time decides what is racy. */
	index_mtime = lstat(ipath, &ist) == 0 ? (int64_t)ist.st_mtim.tv_sec :
	    -1;
	p = index->data;
	end = index->data + index->len;
	at = tree != NULL ? tree->data : NULL;
	while ((rc = snap_stale_entry_next(&p, end, &e)) != -1) {
		if (stop != NULL && atomic_load(stop))
			break;
		if (rc != 0 || (e.mode != 0100644 && e.mode != 0100755 &&
		    e.mode != 0120000))
			continue;
		if (tree != NULL) {
			oid = snap_stale_tree_oid(tree, &at, e.path);
			if (oid == NULL || strncmp(oid, e.oid,
			    strlen(e.oid)) == 0 || oid[strlen(e.oid)] != '\t')
				continue;
		}
		/* path_open_beneath (without openat2) and the hashing allocate. */
		if (stop != NULL)
			clone_gate_enter();
		if (snap_stale_stat_clean(projfd, since, index_mtime, &e) &&
		    snap_stale_hides(projfd, &e, tree == NULL, &budget,
		    &unchecked)) {
			if (told++ < SNAP_STALE_TELL)
				snap_stale_tell(dir, ipath, repo, e.path,
				    out);
			else
				more++;
		}
		if (stop != NULL)
			clone_gate_leave();
	}
	if (stop != NULL)
		clone_gate_enter();
	if (more > 0)
		snap_stale_more(dir, ipath, repo, more, out);
	if (unchecked > 0)
		snap_stale_unchecked(repo, unchecked, out);
	if (stop != NULL)
		clone_gate_leave();
	close(projfd);
}

void
snap_stale_find(const char *project, int64_t since, const struct buf *index,
    const struct buf *tree, struct strv *out)
{
	char *ipath = xprintf("%s/.git/index", project);

	snap_stale_find_in(project, NULL, ipath, since, index, tree, out, NULL);
	free(ipath);
}

static bool snap_stale_next(struct snap_stale *);

/* The walk of the entries of the repository at sc->at: on a helper thread. */
static void
snap_stale_walk(void *arg)
{
	struct snap_stale *sc = arg;
	const char *repo = sc->repos.v[sc->at];

	snap_stale_find_in(sc->dir, *repo != '\0' ? repo : NULL, sc->ipath,
	    sc->since, &sc->out[SNAP_STALE_INDEX], *repo != '\0' ? NULL :
	    &sc->out[SNAP_STALE_TREE], &sc->found, &sc->stop);
}

/* The walk is over, or there was none: the next repository, or the end. */
static void
snap_stale_walked(void *arg)
{
	struct snap_stale *sc = arg;
	struct strv out;
	size_t i;

	sc->job = NULL;
	free(sc->dir);
	sc->dir = NULL;
	free(sc->ipath);
	sc->ipath = NULL;
	for (i = 0; i < sc->found.n; i++)
		strv_add(&sc->alerts, sc->found.v[i]);
	strv_free(&sc->found);
	strv_init(&sc->found);
	sc->at++;
	if (snap_stale_next(sc))
		return;
	/* DONE frees SC: the alerts are handed over first. */
	out = sc->alerts;
	strv_init(&sc->alerts);
	sc->done(sc->arg, &out);
	strv_free(&out);
}

/* The walk of the entries git listed for the repository at sc->at, off the loop (on it if no thread starts). */
static void
snap_stale_walk_start(struct snap_stale *sc)
{
	const char *repo = sc->repos.v[sc->at];
	char *cause = NULL;

	sc->dir = *repo != '\0' ? xprintf("%s/%s", sc->project, repo) :
	    xstrdup(sc->project);
	sc->ipath = xprintf("%s/index", sc->repogit);
	sc->job = thread_job_start(sc->base, snap_stale_walk, sc,
	    snap_stale_walked, sc, &cause);
	if (sc->job != NULL)
		return;
	log_warnx("the look for rewritten index entries runs on the loop: %s",
	    cause);
	free(cause);
	snap_stale_find_in(sc->dir, *repo != '\0' ? repo : NULL, sc->ipath,
	    sc->since, &sc->out[SNAP_STALE_INDEX], *repo != '\0' ? NULL :
	    &sc->out[SNAP_STALE_TREE], &sc->found, NULL);
	snap_stale_walked(sc);
}

/*
 * The check of the repository REPO ("": the project's own) could not run
 * (WHY): said in red, for the edits its index may hide are not told.
 */
static void
snap_stale_failed(struct snap_stale *sc, const char *repo, const char *why)
{
	char *q = *repo != '\0' ? snap_nested_quote(repo) : NULL;
	char *own = sc->projgit != NULL ? xprintf("%s/index", sc->projgit) :
	    xprintf("%s/.git/index", sc->project);
	char *where = q != NULL ? xprintf("the index of the nested "
	    "repository %s", q) : snap_stale_said(sc->project, own);

	strv_addf(&sc->alerts, "agentmux could not check %s for entries the "
	    "session rewrote to hide a change (%s): git status%s%s may show "
	    "an edited file as unchanged; see what the session changed with "
	    "'agentmux diff'", where, why, q != NULL ? " in " : "",
	    q != NULL ? q : "");
	free(where);
	free(own);
	free(q);
}

static void
snap_stale_over(struct proc *p, void *arg)
{
	struct snap_stale *sc = arg;
	const char *repo = sc->repos.v[sc->at];
	char *cause;
	size_t i;

	for (i = 0; i < SNAP_STALE_NRUNS && sc->p[i] != p; i++)
		;
	if (i == SNAP_STALE_NRUNS)
		fatalx("a git run that is not this check's");
	sc->status[i] = proc_status(p);
	if (sc->status[i] == 0)
		buf_add(&sc->out[i], proc_out(p)->data, proc_out(p)->len);
	else {
		cause = snap_git_error(i == SNAP_STALE_INDEX ? "ls-files" :
		    "ls-tree", p);
		snap_stale_failed(sc, repo, cause);
		free(cause);
	}
	proc_free(p);
	sc->p[i] = NULL;
	if (--sc->pending > 0)
		return;
	if (sc->status[SNAP_STALE_INDEX] == 0 &&
	    sc->status[SNAP_STALE_TREE] == 0)
		snap_stale_walk_start(sc);
	else
		snap_stale_walked(sc);
}

/*
 * The git runs for the repository at sc->at: its index listed, and for
 * the project's own the end snapshot's tree (a nested repository's files
 * are compared themselves). True if they run.
 */
static bool
snap_stale_run(struct snap_stale *sc)
{
	char *ls[] = { "git", "--no-pager", "ls-files", "-s", "--debug", "-z",
	    NULL };
	char *lt[] = { "git", "--no-pager", "ls-tree", "-r", "-z",
	    "--full-tree", NULL, NULL };
	const char *repo = sc->repos.v[sc->at];
	char *projgit, *cause = NULL;
	struct stat st;
	size_t i;

	for (i = 0; i < SNAP_STALE_NRUNS; i++) {
		buf_reset(&sc->out[i]);
		sc->status[i] = -1;
	}
	free(sc->repogit);
	sc->repogit = NULL;
	if (*repo != '\0')
		sc->repogit = snap_nested_gitdir_of(sc->project, repo);
	else if (sc->projgit != NULL) {
		if (lstat(sc->projgit, &st) == 0 && S_ISDIR(st.st_mode))
			sc->repogit = xstrdup(sc->projgit);
	} else if (lstat((projgit = xprintf("%s/.git", sc->project)), &st) == 0 &&
	    S_ISDIR(st.st_mode))
		sc->repogit = projgit;
	else
		free(projgit);
	if (sc->repogit != NULL) {
		sc->p[SNAP_STALE_INDEX] = snap_git_plain_spawn(sc->base,
		    sc->repogit, ls, NULL, snap_stale_over, sc, &cause);
		if (sc->p[SNAP_STALE_INDEX] != NULL && *repo == '\0') {
			lt[6] = sc->tree;
			sc->p[SNAP_STALE_TREE] = snap_git_plain_spawn(sc->base,
			    sc->gitdir, lt, NULL, snap_stale_over, sc, &cause);
		}
	}
	if (cause != NULL) {
		snap_stale_failed(sc, repo, cause);
		free(cause);
	}
	if (sc->p[SNAP_STALE_INDEX] == NULL || (*repo == '\0' &&
	    sc->p[SNAP_STALE_TREE] == NULL)) {
		proc_free(sc->p[SNAP_STALE_INDEX]);
		sc->p[SNAP_STALE_INDEX] = NULL;
		return false;
	}
	sc->pending = *repo == '\0' ? SNAP_STALE_NRUNS : 1;
	if (*repo != '\0')
		sc->status[SNAP_STALE_TREE] = 0;
	return true;
}

/* The next repository from sc->at on whose runs start: false if none is left. */
static bool
snap_stale_next(struct snap_stale *sc)
{
	for (; sc->at < sc->repos.n; sc->at++) {
		if (snap_stale_run(sc))
			return true;
	}
	return false;
}

struct snap_stale *
snap_stale_start(struct event_base *base, const char *project,
    const char *projgit, int64_t since, const char *gitdir, const char *tree,
    const struct strv *nested, void (*done)(void *, struct strv *),
    void *arg)
{
	struct snap_stale *sc = xcalloc(1, sizeof *sc);
	size_t i;

	for (i = 0; i < SNAP_STALE_NRUNS; i++)
		buf_init(&sc->out[i]);
	sc->base = base;
	sc->project = xstrdup(project);
	sc->projgit = projgit != NULL ? xstrdup(projgit) : NULL;
	sc->gitdir = xstrdup(gitdir);
	sc->tree = xstrdup(tree);
	strv_init(&sc->repos);
	strv_add(&sc->repos, "");
	for (i = 0; nested != NULL && i < nested->n; i++)
		strv_add(&sc->repos, nested->v[i]);
	strv_init(&sc->alerts);
	strv_init(&sc->found);
	atomic_init(&sc->stop, false);
	sc->since = since;
	sc->done = done;
	sc->arg = arg;
	if (!snap_stale_next(sc)) {
		snap_stale_free(sc);
		return NULL;
	}
	return sc;
}

void
snap_stale_free(struct snap_stale *sc)
{
	size_t i;

	if (sc == NULL)
		return;
	/* A walk still running ends at its next entry, and is waited for. */
	atomic_store(&sc->stop, true);
	thread_job_free(sc->job);
	free(sc->dir);
	free(sc->ipath);
	strv_free(&sc->found);
	for (i = 0; i < SNAP_STALE_NRUNS; i++) {
		proc_free(sc->p[i]);
		buf_free(&sc->out[i]);
	}
	free(sc->project);
	free(sc->projgit);
	free(sc->gitdir);
	free(sc->repogit);
	free(sc->tree);
	strv_free(&sc->repos);
	strv_free(&sc->alerts);
	free(sc);
}
