/*
 * The git dir's own modes against a hostile session. The jail can chmod
 * what it sees of a git dir (the dir itself, HEAD, index, config, hooks,
 * refs, logs...): one it leaves writable by the group or by everyone lets
 * any other local user swap the user's hooks or config (run by the user's
 * next commit) or move branches. At the start the mode and owner of each
 * dir and file of a git dir (the objects dir and its dirs, not its files)
 * are kept in HISTORY/<n>/modes; at the end (and by undo --refs) an entry
 * that gained a group or world write bit or a set-id bit, lost its sticky
 * bit or changed owner is put back, and one the session made loses such
 * bits beyond what core.sharedRepository (as at the start) asks of git.
 * Nothing is followed: each entry is opened O_PATH|O_NOFOLLOW beneath a
 * dir opened the same way, and changed through that descriptor.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "snap/snap-int.h"

/* Entries kept or looked at, and how deep. */
#define SNAP_GM_MAX 200000
#define SNAP_GM_DEPTH 32
/* Entries named one by one in what is told; the rest are counted. */
#define SNAP_GM_NAMED 16
/* The bits a session must not give, beyond what the start had. */
#define SNAP_GM_BAD (S_IWGRP | S_IWOTH | S_ISUID | S_ISGID)

struct snap_gm_ent {
	char *rel;
	mode_t mode;
	uid_t uid;
	gid_t gid;
	dev_t dev;
	ino_t ino;
};

struct snap_gm_walk;
static void snap_gm_dir(struct snap_gm_walk *, int, const char *, int);

struct snap_gm_walk {
	void (*cb)(struct snap_gm_walk *, int fd, const char *rel,
	    const struct stat *);
	size_t n;
	struct buf *out;          /* the start: the record written */
	struct snap_gm_ent *v;    /* the end: the record read, sorted */
	size_t nv;
	mode_t shared;            /* bits core.sharedRepository lets git give */
	bool shared_read;
	const char *base;
	const char *gitdir;
	bool dry;
	bool cut;                 /* SNAP_GM_MAX or SNAP_GM_DEPTH left entries out */
	size_t fixed, failed;
	struct strv *told;
};

/* Whether REL ("objects/ab/..."), not a dir, lies in the objects dir: its files are not kept. */
static bool
snap_gm_object(const char *rel)
{
	return strncmp(rel, "objects/", 8) == 0;
}

static int snap_gm_cmp(const void *, const void *);

/*
 * Whether the walk goes into dir REL: not into the objects dir's dirs or
 * LFS's objects; into modules/ one level (each submodule's git dir is
 * kept apart, with a record of its own), and at the end into a dir there
 * the start did not have (the session made it: no record holds it).
 */
static bool
snap_gm_descend(const struct snap_gm_walk *w, const char *rel, int depth)
{
	struct snap_gm_ent key;

	if (depth >= SNAP_GM_DEPTH || snap_gm_object(rel) ||
	    strcmp(rel, "lfs/objects") == 0)
		return false;
	if (strncmp(rel, "modules/", 8) != 0 || strchr(rel + 8, '/') != NULL)
		return true;
	if (w->v == NULL)
		return false;
	memset(&key, 0, sizeof key);
	key.rel = (char *)rel;
	return bsearch(&key, w->v, w->nv, sizeof *w->v, snap_gm_cmp) == NULL;
}

/* Entry NAME of dir DFD (REL under the git dir): handed to the walk's callback, then walked if a dir. */
static void
snap_gm_entry(struct snap_gm_walk *w, int dfd, const char *name,
    const char *rel, int depth)
{
	struct stat st;
	int fd;

	fd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1)
		return;
	if (fstat(fd, &st) == -1 || !(S_ISDIR(st.st_mode) ||
	    (S_ISREG(st.st_mode) && !snap_gm_object(rel)))) {
		close(fd);
		return;
	}
	w->n++;
	w->cb(w, fd, rel, &st);
	close(fd);
	if (S_ISDIR(st.st_mode) && depth >= SNAP_GM_DEPTH)
		w->cut = true;
	if (S_ISDIR(st.st_mode) && snap_gm_descend(w, rel, depth) &&
	    (fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) != -1) {
		snap_gm_dir(w, fd, rel, depth + 1);
		close(fd);
	}
}

/* Whether the walk has taken all it may (SNAP_GM_MAX): then it is cut, and says so. */
static bool
snap_gm_full(struct snap_gm_walk *w)
{
	if (w->n < SNAP_GM_MAX)
		return false;
	w->cut = true;
	return true;
}

/* What git uses, walked first, so that a dir filled in the session cannot use up the walk before them. */
static const char *const snap_gm_firsts[] = {
	"HEAD", "config", "index", "packed-refs", "hooks", "info", "refs",
	"logs", "objects", "commondir", "shallow", "worktrees", "modules"
};

static bool
snap_gm_is_first(const char *name)
{
	size_t i;

	for (i = 0; i < nitems(snap_gm_firsts); i++) {
		if (strcmp(name, snap_gm_firsts[i]) == 0)
			return true;
	}
	return false;
}

static void
snap_gm_first(struct snap_gm_walk *w, int gitfd)
{
	size_t i;

	for (i = 0; i < nitems(snap_gm_firsts) && !snap_gm_full(w); i++)
		snap_gm_entry(w, gitfd, snap_gm_firsts[i], snap_gm_firsts[i], 0);
}

static void
snap_gm_dir(struct snap_gm_walk *w, int dfd, const char *rel, int depth)
{
	struct dirent *de;
	char *sub;
	DIR *d;
	int dup;

	if ((dup = fcntl(dfd, F_DUPFD_CLOEXEC, 0)) == -1)
		return;
	if ((d = fdopendir(dup)) == NULL) {
		close(dup);
		return;
	}
	if (*rel == '\0')
		snap_gm_first(w, dfd);
	while ((de = readdir(d)) != NULL && !snap_gm_full(w)) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0 ||
		    strchr(de->d_name, '\n') != NULL ||
		    (*rel == '\0' && snap_gm_is_first(de->d_name)))
			continue;
		sub = *rel == '\0' ? xstrdup(de->d_name) : xprintf("%s/%s",
		    rel, de->d_name);
		snap_gm_entry(w, dfd, de->d_name, sub, depth);
		free(sub);
	}
	closedir(d);
}

/* Walks the git dir GITFD: the dir itself ("."), then its entries. */
static void
snap_gm_walk(struct snap_gm_walk *w, int gitfd)
{
	struct stat st;

	if (fstat(gitfd, &st) == 0) {
		w->n++;
		w->cb(w, gitfd, ".", &st);
	}
	snap_gm_dir(w, gitfd, "", 0);
}

/* ---- the start ---- */

static void
snap_gm_save_cb(struct snap_gm_walk *w, int fd, const char *rel,
    const struct stat *st)
{
	(void)fd;
	buf_printf(w->out, "%o %lu %lu %llu %llu %s\n",
	    (unsigned)(st->st_mode & 07777), (unsigned long)st->st_uid,
	    (unsigned long)st->st_gid, (unsigned long long)st->st_dev,
	    (unsigned long long)st->st_ino, rel);
}

int
snap_gitmodes_save(const struct snap_hgit *g, int gitfd, char **cause)
{
	struct snap_gm_walk w;
	struct buf b;
	char *path;
	int rc;

	memset(&w, 0, sizeof w);
	buf_init(&b);
	w.cb = snap_gm_save_cb;
	w.out = &b;
	snap_gm_walk(&w, gitfd);
	path = xprintf("%s/modes", g->base);
	rc = util_write_file_atomic(path, b.data != NULL ? b.data : "", b.len,
	    0600, cause);
	free(path);
	buf_free(&b);
	return rc;
}

/* ---- the end, and undo --refs ---- */

static int
snap_gm_cmp(const void *a, const void *b)
{
	return strcmp(((const struct snap_gm_ent *)a)->rel,
	    ((const struct snap_gm_ent *)b)->rel);
}

/* Reads the record kept at the start into W (sorted); -1 if there is none. */
static int
snap_gm_load(struct snap_gm_walk *w, const char *base)
{
	char *path = xprintf("%s/modes", base), *line, *save = NULL;
	unsigned long long dev, ino;
	unsigned long uid, gid;
	unsigned mode;
	struct buf b;
	int off;

	buf_init(&b);
	if (buf_read_file(&b, path) == -1) {
		free(path);
		buf_free(&b);
		return -1;
	}
	free(path);
	w->v = xcalloc(1 + b.len / 12, sizeof *w->v);
	for (line = strtok_r(b.data, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		if (sscanf(line, "%o %lu %lu %llu %llu %n", &mode, &uid, &gid,
		    &dev, &ino, &off) != 5 || line[off] == '\0')
			continue;
		w->v[w->nv].rel = xstrdup(line + off);
		w->v[w->nv].mode = (mode_t)mode;
		w->v[w->nv].uid = (uid_t)uid;
		w->v[w->nv].gid = (gid_t)gid;
		w->v[w->nv].dev = (dev_t)dev;
		w->v[w->nv].ino = (ino_t)ino;
		w->nv++;
	}
	buf_free(&b);
	qsort(w->v, w->nv, sizeof *w->v, snap_gm_cmp);
	return 0;
}

/*
 * What core.sharedRepository (in the config kept at the start, read by
 * git config from its bytes: no include followed, nothing run) lets git
 * give new entries: group write (and set-gid on dirs), or what its octal
 * mode says.
 */
static mode_t
snap_gm_shared(const char *base)
{
	char *path = xprintf("%s/config", base), *value = NULL, *end;
	struct buf in;
	mode_t allowed = 0;
	unsigned long v;

	buf_init(&in);
	if (buf_read_file(&in, path) == 0)
		value = snap_git_config_get(in.data, in.len,
		    "core.sharedRepository");
	if (value != NULL) {
		v = strtoul(value, &end, 8);
		if (strcasecmp(value, "group") == 0 ||
		    strcasecmp(value, "true") == 0 ||
		    strcasecmp(value, "yes") == 0 ||
		    strcasecmp(value, "on") == 0 ||
		    strcasecmp(value, "all") == 0 ||
		    strcasecmp(value, "world") == 0 ||
		    strcasecmp(value, "everybody") == 0 ||
		    (*end == '\0' && (v == 1 || v == 2)))
			allowed = S_IWGRP | S_ISGID;
		else if (*end == '\0' && v > 2)
			allowed = (mode_t)(v & (S_IWGRP | S_IWOTH)) | S_ISGID;
	}
	free(value);
	buf_free(&in);
	free(path);
	return allowed;
}

/* Tells REL's change (FROM to TO): named up to SNAP_GM_NAMED, else counted. */
static void
snap_gm_tell(struct snap_gm_walk *w, const char *rel, mode_t from, mode_t to,
    const struct snap_gm_ent *e, const struct stat *st, int err)
{
	char *path = strcmp(rel, ".") == 0 ? xstrdup(w->gitdir) :
	    xprintf("%s/%s", w->gitdir, rel), *q = quote_name(path);

	if (err != 0)
		w->failed++;
	else
		w->fixed++;
	if (w->fixed + w->failed <= SNAP_GM_NAMED && err != 0)
		strv_addf(w->told, "the session made %s mode %04o%s (other "
		    "local users could change it), and it could not be put "
		    "back to %04o (%s): run chmod %04o on it%s", q,
		    (unsigned)from, e != NULL && st->st_uid != e->uid ?
		    ", owned by another user" : "", (unsigned)to,
		    strerror(err), (unsigned)to, e != NULL && st->st_uid !=
		    e->uid ? " and give it back to its owner" : "");
	else if (w->fixed + w->failed <= SNAP_GM_NAMED)
		strv_addf(w->told, "the session made %s mode %04o%s (other "
		    "local users could change it): %s to %04o", q,
		    (unsigned)from, e != NULL && (st->st_uid != e->uid ||
		    st->st_gid != e->gid) ? " and changed its owner" : "",
		    w->dry ? "it would be put back" : e != NULL ? "put back" :
		    "changed", (unsigned)to);
	free(q);
	free(path);
}

/* REL, a file with other names than this one, opened to other users: said, left as it is. */
static void
snap_gm_tell_linked(struct snap_gm_walk *w, const char *rel, mode_t now,
    const struct stat *st)
{
	char *path = xprintf("%s/%s", w->gitdir, rel), *q = quote_name(path);

	w->failed++;
	if (w->fixed + w->failed <= SNAP_GM_NAMED)
		strv_addf(w->told, "the session put at %s a file with %ju "
		    "other name%s (a hard link), mode %04o (other local users "
		    "could change it): it was not changed, as its mode is the "
		    "other names' too; remove %s (git makes it again if it "
		    "needs it) and look at what else links to it (find / -samefile "
		    "%s)", q, (uintmax_t)(st->st_nlink - 1), st->st_nlink == 2 ?
		    "" : "s", (unsigned)now, q, q);
	free(q);
	free(path);
}

static void
snap_gm_check_cb(struct snap_gm_walk *w, int fd, const char *rel,
    const struct stat *st)
{
	struct snap_gm_ent key, *e;
	mode_t now = st->st_mode & 07777, want, bad;
	bool owner = false, same;
	int err = 0;

	memset(&key, 0, sizeof key);
	key.rel = (char *)rel;
	e = bsearch(&key, w->v, w->nv, sizeof *w->v, snap_gm_cmp);
	bad = now & SNAP_GM_BAD & ~(e != NULL ? e->mode : 0);
	if (bad != 0 && !w->shared_read) {
		w->shared = snap_gm_shared(w->base);
		w->shared_read = true;
	}
	bad &= ~(w->shared & (S_ISDIR(st->st_mode) ? 07777 : ~S_ISGID));
	same = e != NULL && st->st_dev == e->dev && st->st_ino == e->ino;
	if (e != NULL) {
		/* Only the file that was there is given back: never another one put in its place. */
		owner = same && (st->st_uid != e->uid || st->st_gid != e->gid);
		if ((e->mode & S_ISVTX) != 0 && (now & S_ISVTX) == 0)
			bad |= S_ISVTX;
	}
	if (bad == 0 && !owner)
		return;
	/* A file of another name linked in (ln FILE .git/x): its mode is that file's too. */
	if (!same && S_ISREG(st->st_mode) && st->st_nlink > 1) {
		snap_gm_tell_linked(w, rel, now, st);
		return;
	}
	if (same)
		want = e->mode;
	else
		want = (now & ~bad) | (e != NULL ? e->mode & S_ISVTX : 0);
	if (!w->dry && owner && fchownat(fd, "", e->uid, e->gid,
	    AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) == -1)
		err = errno;
	if (!w->dry && snap_modes_fchmod(fd, want) == -1 && err == 0)
		err = errno;
	snap_gm_tell(w, rel, now, want, e, st, err);
}

/* The walk of GITDIR was cut: what lies past it was not looked at. */
static void
snap_gm_tell_cut(const char *gitdir, struct strv *told)
{
	char *q = quote_name(gitdir);

	strv_addf(told, "%s holds more than %d entries (or dirs deeper "
	    "than %d) besides its objects: agentmux looked at the modes of "
	    "what git uses first and of the first %d entries only; see what "
	    "other local users may change there with find %s -perm /022",
	    q, SNAP_GM_MAX, SNAP_GM_DEPTH, SNAP_GM_MAX, q);
	free(q);
}

int
snap_gitmodes_check(const struct snap_hgit *g, int gitfd, bool dry,
    struct strv *told)
{
	struct snap_gm_walk w;
	size_t i;

	memset(&w, 0, sizeof w);
	if (snap_gm_load(&w, g->base) == -1)
		return 0;
	w.cb = snap_gm_check_cb;
	w.base = g->base;
	w.gitdir = g->gitdir;
	w.dry = dry;
	w.told = told;
	snap_gm_walk(&w, gitfd);
	if (w.fixed + w.failed > SNAP_GM_NAMED)
		strv_addf(told, "and %zu more entries of %s were opened to "
		    "other local users (%zu of them could not be put back: "
		    "run chmod go-w on them)", w.fixed + w.failed -
		    SNAP_GM_NAMED, g->gitdir, w.failed);
	if (w.cut)
		snap_gm_tell_cut(g->gitdir, told);
	for (i = 0; i < w.nv; i++)
		free(w.v[i].rel);
	free(w.v);
	return (int)w.failed;
}
