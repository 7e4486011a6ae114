/*
 * Brings the objects a session's git wrote (into the upper layer of the
 * jail's .git/objects overlay) back into the user's repository. The upper
 * dir is the jail's to fill, so nothing in it is trusted: a loose object is
 * taken only if it inflates to exactly what its name is the hash of, and a
 * pack only through `git index-pack`, which names every object by its own
 * hash; no link is followed, no FIFO opened, nothing named there is run.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <openssl/evp.h>
#include <zlib.h>

#include "snap/snap-int.h"

/*
 * How much one pass over the loose objects may do before it lets the loop
 * go on: entries looked at, and bytes inflated. Bigger objects wait for
 * the session's end; one that says it is bigger than the cap is refused
 * (an inflation bomb would otherwise hold agentmux for hours), and so is
 * everything once a session has had the total cap inflated.
 */
#define SNAP_IMPORT_ENTRIES 20000
#define SNAP_IMPORT_TICK_BYTES (64ULL << 20)
#define SNAP_IMPORT_OBJECT_MAX (4ULL << 30)
#define SNAP_IMPORT_TOTAL_MAX (32ULL << 30)
/*
 * And how long it may hold the loop: each object written is synced, which
 * can take tens of milliseconds; the rest follows at the loop's next turn.
 */
#define SNAP_IMPORT_SLICE_US 10000

/* A pack looked at: its name, and what it was when it was looked at. */
struct snap_import_pack {
	char *name;
	off_t size;
	struct timespec mtime;
	bool done;                /* imported, or refused: not tried again as it is */
};

struct snap_import {
	char *gitdir;
	struct snap_gitid id;       /* what GITDIR was at the start */
	bool not_start;             /* told: GITDIR is not the one of the start */
	char *upper;
	struct timespec seen[256];  /* each fanout dir's mtime when last read whole */
	int next;                   /* the fanout dir a pass starts at */
	uint64_t inflated;          /* bytes inflated so far */
	struct snap_import_pack *packs;
	size_t npacks;
	struct proc *proc;     /* a pack being indexed in the background */
	size_t proc_pack;
	int proc_fd;
	int64_t loose;              /* objects brought back */
	int64_t refused;            /* files that were not what their name said */
	int64_t too_big;            /* objects over the caps, not brought back */
	int64_t pack_refused;       /* packs index-pack refused */
	bool failed;                /* the host's side refused a write: try again later */
	struct strv problems;
	int64_t until_us;           /* when the pass running must let the loop go on */
	struct event *fin_ev;       /* finishing: the loose objects' next slice */
	struct event_base *fin_base;  /* finishing: the loop the packs left are indexed on */
	void (*fin_done)(void *);     /* told once the last pass is over */
	void *fin_arg;
	bool fin_loose;             /* finishing: the loose objects' slices are over */
};

static void snap_import_finish_next(struct snap_import *);

struct snap_import *
snap_import_create(const char *gitdir, const char *upper)
{
	struct snap_import *im = xcalloc(1, sizeof *im);

	im->gitdir = xstrdup(gitdir);
	im->upper = xstrdup(upper);
	im->proc_fd = -1;
	strv_init(&im->problems);
	return im;
}

void
snap_import_set_id(struct snap_import *im, const struct snap_gitid *id)
{
	im->id = *id;
}

/*
 * The host's objects dir, checked to be the one of the start on each
 * pass (this runs while the jail runs, and the jail may swap the
 * repository's dir for a link meanwhile): -1 if it is not, told once.
 */
static int
snap_import_host(struct snap_import *im)
{
	char *cause = NULL, *q;
	int gitfd, objfd = -1;

	gitfd = snap_gitdir_open(im->gitdir, &im->id, &objfd, &cause);
	if (gitfd == -2 && !im->not_start) {
		im->not_start = true;
		q = snap_nested_quote(im->gitdir);
		strv_addf(&im->problems, "the objects the session wrote were not "
		    "brought into %s: %s. They are kept in %s", q, cause,
		    im->upper);
		free(q);
	}
	free(cause);
	if (gitfd < 0)
		return -1;
	close(gitfd);
	return objfd;
}

void
snap_import_free(struct snap_import *im)
{
	size_t i;

	if (im == NULL)
		return;
	proc_free(im->proc);
	if (im->fin_ev != NULL)
		event_free(im->fin_ev);
	if (im->proc_fd != -1)
		close(im->proc_fd);
	for (i = 0; i < im->npacks; i++)
		free(im->packs[i].name);
	free(im->packs);
	strv_free(&im->problems);
	free(im->gitdir);
	free(im->upper);
	free(im);
}

int64_t
snap_import_count(const struct snap_import *im, int64_t *refused,
    int64_t *too_big)
{
	if (refused != NULL)
		*refused = im->refused;
	if (too_big != NULL)
		*too_big = im->too_big;
	return im->loose;
}

bool
snap_import_failed(const struct snap_import *im)
{
	return im->failed;
}

bool
snap_import_busy(const struct snap_import *im)
{
	return im->proc != NULL || im->failed;
}

const struct strv *
snap_import_problems(const struct snap_import *im)
{
	return &im->problems;
}

static int
snap_import_hex(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Fanout dir XX plus a NAME of 38 (SHA-1) or 62 (SHA-256) lower-case hex digits. */
static bool
snap_import_name_ok(const char *name)
{
	size_t n = strlen(name), i;

	if (n != 38 && n != 62)
		return false;
	for (i = 0; i < n; i++) {
		if (snap_import_hex((unsigned char)name[i]) == -1)
			return false;
	}
	return true;
}

/* Checks the header "TYPE SIZE\0" that starts an object; its length, or 0. */
static size_t
snap_import_header(const unsigned char *p, size_t len, uint64_t *size)
{
	static const char *const types[] = { "blob ", "tree ", "commit ",
	    "tag " };
	size_t i, t, digits = 0;

	for (t = 0; t < nitems(types); t++) {
		if (len >= strlen(types[t]) && memcmp(p, types[t],
		    strlen(types[t])) == 0)
			break;
	}
	if (t == nitems(types))
		return 0;
	*size = 0;
	for (i = strlen(types[t]); i < len && p[i] >= '0' && p[i] <= '9';
	    i++) {
		if (++digits > 19 || (digits > 1 && *size == 0))
			return 0;
		*size = *size * 10 + (uint64_t)(p[i] - '0');
	}
	if (digits == 0 || i >= len || p[i] != '\0')
		return 0;
	return i + 1;
}

struct snap_import_check {
	z_stream z;
	EVP_MD_CTX *md;
	unsigned char hdr[32];
	size_t hdrlen;
	size_t hdrdone;           /* its length once it is whole, else 0 */
	uint64_t size;            /* what the header says */
	uint64_t total;           /* bytes inflated, header included */
	bool bad;
};

/* Feeds inflated bytes to the hash, checking the header on the way. */
static void
snap_import_feed(struct snap_import_check *c, const unsigned char *p,
    size_t n)
{
	size_t take;

	if (c->bad || n == 0)
		return;
	EVP_DigestUpdate(c->md, p, n);
	c->total += n;
	if (c->hdrdone == 0) {
		take = sizeof c->hdr - c->hdrlen < n ? sizeof c->hdr -
		    c->hdrlen : n;
		memcpy(c->hdr + c->hdrlen, p, take);
		c->hdrlen += take;
		if (memchr(c->hdr, '\0', c->hdrlen) == NULL) {
			c->bad = c->hdrlen == sizeof c->hdr;
			return;
		}
		c->hdrdone = snap_import_header(c->hdr, c->hdrlen, &c->size);
		if (c->hdrdone == 0) {
			c->bad = true;
			return;
		}
	}
	if (c->total > c->hdrdone + c->size)
		c->bad = true;
}

/*
 * 1 if FD holds one zlib stream that inflates to an object whose hash is
 * HEX, 0 if not, -1 if its header says it is bigger than MAX (not read
 * further). *INFLATED gets the bytes inflated.
 */
static int
snap_import_verify(int fd, const char *hex, uint64_t max, uint64_t *inflated)
{
	unsigned char in[65536], out[65536], digest[EVP_MAX_MD_SIZE];
	struct snap_import_check c;
	unsigned int dlen;
	ssize_t n;
	size_t i;
	int zr = Z_OK, ok = 0;

	memset(&c, 0, sizeof c);
	if (inflateInit(&c.z) != Z_OK)
		return 0;
	c.md = EVP_MD_CTX_new();
	if (c.md == NULL || EVP_DigestInit_ex(c.md, strlen(hex) == 40 ?
	    EVP_sha1() : EVP_sha256(), NULL) != 1)
		goto out;
	while (zr != Z_STREAM_END && !c.bad) {
		if ((n = read(fd, in, sizeof in)) <= 0)
			goto out;
		c.z.next_in = in;
		c.z.avail_in = (uInt)n;
		do {
			c.z.next_out = out;
			c.z.avail_out = sizeof out;
			zr = inflate(&c.z, Z_NO_FLUSH);
			if (zr != Z_OK && zr != Z_STREAM_END)
				goto out;
			snap_import_feed(&c, out, sizeof out - c.z.avail_out);
			if (c.hdrdone != 0 && c.size > max) {
				ok = -1;
				goto out;
			}
		} while (c.z.avail_out == 0 && zr != Z_STREAM_END && !c.bad);
		/* Nothing may follow the stream. */
		if (zr == Z_STREAM_END && (c.z.avail_in != 0 ||
		    read(fd, in, 1) != 0))
			goto out;
	}
	if (c.bad || c.hdrdone == 0 || c.total != c.hdrdone + c.size ||
	    EVP_DigestFinal_ex(c.md, digest, &dlen) != 1 ||
	    dlen * 2 != strlen(hex))
		goto out;
	for (i = 0; i < dlen; i++) {
		if (snap_import_hex((unsigned char)hex[2 * i]) != digest[i] >> 4 ||
		    snap_import_hex((unsigned char)hex[2 * i + 1]) !=
		    (digest[i] & 0xf))
			goto out;
	}
	ok = 1;
out:
	*inflated = c.total;
	inflateEnd(&c.z);
	EVP_MD_CTX_free(c.md);
	return ok;
}

mode_t
snap_git_mode(int dirfd, mode_t mode)
{
	struct stat st;

	if (fstat(dirfd, &st) == 0 && (st.st_mode & S_ISGID)) {
		if (mode & 0111)
			return st.st_mode & 07777;
		return (mode & ~util_user_umask()) | (mode & st.st_mode & 0060);
	}
	return mode & ~util_user_umask();
}

/* Writes what FD holds as NAME in the host's fanout dir DIRFD, as git does (a temp file linked into place). */
static int
snap_import_write(int dirfd, const char *name, int fd)
{
	unsigned char rnd[6];
	char tmp[64];
	int out, rc = -1;

	util_random(rnd, sizeof rnd);
	snprintf(tmp, sizeof tmp, "tmp_obj_agentmux_%02x%02x%02x%02x%02x%02x",
	    rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5]);
	out = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, 0400);
	if (out == -1)
		return -1;
	if (fchmod(out, snap_git_mode(dirfd, 0444)) == 0 &&
	    lseek(fd, 0, SEEK_SET) == 0 && snap_copy_fd(fd, out) == 0 &&
	    fsync(out) == 0)
		rc = 0;
	if (close(out) == -1)
		rc = -1;
	if (rc == 0 && linkat(dirfd, tmp, dirfd, name, 0) == -1 &&
	    errno != EEXIST)
		rc = -1;
	unlinkat(dirfd, tmp, 0);
	return rc;
}

/*
 * One loose object of the upper dir, NAME in fanout dir UPFD (host's
 * HOSTFD); objects over MAX wait (0 if one did). -1 if it did work that
 * counts against a pass, 1 if not.
 */
static int
snap_import_object(struct snap_import *im, int upfd, int hostfd,
    const char *fan, const char *name, uint64_t max)
{
	char hex[65];
	struct stat st;
	uint64_t used = 0;
	int fd, v, rc = -1;

	if (fstatat(hostfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
		return 1;       /* the host has it (git's freshening copied it up) */
	fd = openat(upfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd == -1)
		return 1;
	snprintf(hex, sizeof hex, "%s%s", fan, name);
	if (im->inflated >= SNAP_IMPORT_TOTAL_MAX)
		v = -1;
	else if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode))
		v = 0;
	else
		v = snap_import_verify(fd, hex, max, &used);
	im->inflated += used;
	if (v == 0)
		im->refused++;
	else if (v == -1 && max < SNAP_IMPORT_OBJECT_MAX)
		rc = 0;         /* too big for a pass on the loop: at the end */
	else if (v == -1)
		im->too_big++;
	else if (snap_import_write(hostfd, name, fd) == 0)
		im->loose++;
	else {
		im->failed = true;
		if (im->problems.n < 8)
			strv_addf(&im->problems, "cannot write object %s into "
			    "%s: %s", hex, im->gitdir, strerror(errno));
	}
	close(fd);
	return rc;
}

/* The host's fanout dir FAN (made if need be); -1 if it cannot be had. */
static int
snap_import_hostdir(int objfd, const char *fan)
{
	int fd;

	fd = openat(objfd, fan, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1 && errno == ENOENT && mkdirat(objfd, fan, 0700) == 0 &&
	    (fd = openat(objfd, fan, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) != -1)
		(void)fchmod(fd, snap_git_mode(objfd, 0777));
	return fd;
}

/*
 * Reads fanout dir FAN of the upper dir if it changed since it was last
 * read whole; -1 once the pass has done what it may (ALL: no limit).
 */
static int
snap_import_fanout(struct snap_import *im, int upobj, int hostobj,
    const char *fan, bool all, int *entries, uint64_t start)
{
	struct timespec *seen = &im->seen[strtol(fan, NULL, 16)];
	uint64_t max = all ? SNAP_IMPORT_OBJECT_MAX : SNAP_IMPORT_TICK_BYTES;
	struct dirent *de;
	struct stat st;
	int upfd, hostfd = -1, r;
	bool whole = true;
	DIR *d;

	upfd = openat(upobj, fan, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (upfd == -1 || fstat(upfd, &st) == -1 ||
	    (st.st_mtim.tv_sec == seen->tv_sec &&
	    st.st_mtim.tv_nsec == seen->tv_nsec) ||
	    (d = fdopendir(upfd)) == NULL) {
		if (upfd != -1)
			close(upfd);
		return 0;
	}
	while ((de = readdir(d)) != NULL) {
		if (!snap_import_name_ok(de->d_name))
			continue;
		if (hostfd == -1 && (hostfd = snap_import_hostdir(hostobj,
		    fan)) == -1) {
			im->failed = true;
			break;
		}
		r = snap_import_object(im, dirfd(d), hostfd, fan, de->d_name,
		    max);
		if (r == 0)
			whole = false;
		if (r != 1 && util_mono_us() >= im->until_us)
			break;
		if (!all && (--*entries <= 0 || im->inflated - start >
		    SNAP_IMPORT_TICK_BYTES))
			break;
	}
	/*
	 * Read whole: until it changes, there is nothing new in it; unless it
	 * changed so recently that a change in the same clock tick would not
	 * show (then it is read again next time).
	 */
	if (de == NULL && whole && st.st_mtim.tv_sec + 2 < time(NULL))
		*seen = st.st_mtim;
	if (hostfd != -1)
		close(hostfd);
	closedir(d);
	return de != NULL ? -1 : 0;
}

/*
 * Loose objects: a pass's worth (ALL: every one), from where the last one
 * stopped; false if it stopped (for the loop) before the end.
 */
static bool
snap_import_loose(struct snap_import *im, int upobj, int hostobj, bool all)
{
	int entries = SNAP_IMPORT_ENTRIES, i, n;
	uint64_t start = im->inflated;
	char fan[3];

	im->until_us = util_mono_us() + SNAP_IMPORT_SLICE_US;
	for (n = 0; n < 256; n++) {
		i = (im->next + n) % 256;
		snprintf(fan, sizeof fan, "%02x", i);
		if (snap_import_fanout(im, upobj, hostobj, fan, all, &entries,
		    start) == -1) {
			im->next = i;
			return false;
		}
	}
	im->next = 0;
	return true;
}

/* The record of pack NAME, added if it is new. */
static struct snap_import_pack *
snap_import_pack_get(struct snap_import *im, const char *name)
{
	struct snap_import_pack *pk;
	size_t i;

	for (i = 0; i < im->npacks; i++) {
		if (strcmp(im->packs[i].name, name) == 0)
			return &im->packs[i];
	}
	im->packs = xreallocarray(im->packs, im->npacks + 1, sizeof *pk);
	pk = &im->packs[im->npacks++];
	memset(pk, 0, sizeof *pk);
	pk->name = xstrdup(name);
	return pk;
}

/*
 * What git index-pack may take of time for a pack the session wrote (its
 * memory is every git's bound, snap_git_mem): many such objects as
 * snap-repo.c's comment tells of run for hours. A minute, and a second
 * more for every MiB of pack, many times what indexing takes (tens of MiB
 * a second here). snap_import_pack_secs_base is the tests' hook.
 */
#define SNAP_IMPORT_PACK_SECS 60
int snap_import_pack_secs_base = SNAP_IMPORT_PACK_SECS;

int
snap_import_pack_secs(off_t size)
{
	off_t mib = size >> 20;

	return mib > INT_MAX - snap_import_pack_secs_base ? INT_MAX :
	    snap_import_pack_secs_base + (int)mib;
}

/*
 * The options that run `git index-pack --stdin` on the host's git dir with
 * FD as its input. The git dir was checked to be the one of the start just
 * before (snap_import_host, the same pass); git opens it again by its path.
 * Left: a swap of the repository's dir for a link between that check and
 * git's own open (the jail runs meanwhile) makes git write the pack, which
 * holds only objects the session wrote, into the linked repository's
 * objects. No ref, log or mode there is touched by it, and the end, which
 * runs after the jail is gone, checks again before it writes anything.
 */
static void
snap_import_index_opts(struct snap_import *im, int fd, struct strv *env,
    struct proc_opts *o)
{
	static char *argv[] = { "git", "index-pack", "--stdin", NULL };
	struct stat st;

	snap_env_plain(env);
	strv_addf(env, "GIT_DIR=%s", im->gitdir);
	memset(o, 0, sizeof *o);
	o->data_max = snap_git_mem;
	o->timeout = snap_import_pack_secs(fstat(fd, &st) == 0 ? st.st_size :
	    0);
	o->argv = argv;
	o->env = env->v;
	o->dir = im->gitdir;
	o->out_fd = -1;
	/* The user's, not agentmux's own (077): the pack is theirs. */
	o->umask = (int)util_user_umask();
	o->has_in_fd = true;
	o->in_fd = fd;
}

static void
snap_import_pack_result(struct snap_import *im, struct snap_import_pack *pk,
    int status, const struct buf *err)
{
	char *q;

	pk->done = true;
	if (status == 0)
		return;
	im->refused++;
	im->pack_refused++;
	if (im->problems.n < 8) {
		q = snap_nested_quote(err->data != NULL ? err->data : "");
		strv_addf(&im->problems, "the pack %s the session wrote was not "
		    "taken: git index-pack failed (%.200s)%s", pk->name, q,
		    status == 128 + SIGKILL ? ": it ran out of the time it is "
		    "given" : strstr(q, "memory") != NULL || strstr(q,
		    "malloc") != NULL || strstr(q, "mmap") != NULL ? ": its "
		    "objects took more memory than agentmux lets it use; a "
		    "small pack of deltas that grows so large is what a hostile "
		    "agent writes" : "");
		free(q);
	}
}

static void
snap_import_pack_cb(struct proc *p, void *arg)
{
	struct snap_import *im = arg;

	snap_import_pack_result(im, &im->packs[im->proc_pack],
	    proc_status(p), proc_err(p));
	close(im->proc_fd);
	im->proc_fd = -1;
	/* Freed here: the runner is done with it once this returns. */
	im->proc = NULL;
	proc_free(p);
	/*
	 * Last: a finish's caller may free IM when it is told. Not while the
	 * loose objects' slices go on: their timer is pending, and comes here
	 * itself (a pack that ended first told the caller, and the timer then
	 * told it again, through a callback already cleared).
	 */
	if (im->fin_done != NULL && im->fin_loose)
		snap_import_finish_next(im);
}

/* Starts importing pack NAME (open as FD) in the background on BASE. */
static void
snap_import_pack_run(struct snap_import *im, struct snap_import_pack *pk,
    int fd, struct event_base *base)
{
	struct proc_opts o;
	struct strv env;
	char *cause = NULL;

	snap_import_index_opts(im, fd, &env, &o);
	im->proc = proc_start(base, &o, snap_import_pack_cb, im, &cause);
	if (im->proc != NULL) {
		im->proc_pack = (size_t)(pk - im->packs);
		im->proc_fd = fd;
		strv_free(&env);
		return;
	}
	if (cause != NULL) {
		im->failed = true;
		if (im->problems.n < 8)
			strv_addf(&im->problems, "cannot index the pack %s: %s",
			    pk->name, cause);
	}
	free(cause);
	strv_free(&env);
	close(fd);
}

/* True if NAME is "pack-HEX.pack" and its .idx is there too: git has finished writing it. */
static bool
snap_import_pack_whole(int packfd, const char *name)
{
	size_t n = strlen(name), i;
	char *idx;
	struct stat st;
	bool whole;

	if (n < 11 || strncmp(name, "pack-", 5) != 0 ||
	    strcmp(name + n - 5, ".pack") != 0)
		return false;
	for (i = 5; i < n - 5; i++) {
		if (snap_import_hex((unsigned char)name[i]) == -1)
			return false;
	}
	idx = xprintf("%.*s.idx", (int)(n - 5), name);
	whole = fstatat(packfd, idx, &st, AT_SYMLINK_NOFOLLOW) == 0;
	free(idx);
	return whole;
}

/* Packs: each new or changed one once (one at a time in the background). */
static void
snap_import_packs(struct snap_import *im, int upobj, struct event_base *base)
{
	struct snap_import_pack *pk;
	struct dirent *de;
	struct stat st;
	int packfd, fd;
	DIR *d;

	if (im->proc != NULL)
		return;
	packfd = openat(upobj, "pack", O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (packfd == -1 || (d = fdopendir(packfd)) == NULL) {
		if (packfd != -1)
			close(packfd);
		return;
	}
	while (im->proc == NULL && (de = readdir(d)) != NULL) {
		if (!snap_import_pack_whole(dirfd(d), de->d_name))
			continue;
		fd = openat(dirfd(d), de->d_name, O_RDONLY | O_NOFOLLOW |
		    O_NONBLOCK | O_CLOEXEC);
		if (fd == -1)
			continue;
		pk = snap_import_pack_get(im, de->d_name);
		if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
		    (pk->done && pk->size == st.st_size &&
		    pk->mtime.tv_sec == st.st_mtim.tv_sec &&
		    pk->mtime.tv_nsec == st.st_mtim.tv_nsec)) {
			close(fd);
			continue;
		}
		pk->size = st.st_size;
		pk->mtime = st.st_mtim;
		/* The pack is read through the descriptor: blocking is fine now. */
		fcntl(fd, F_SETFL, 0);
		snap_import_pack_run(im, pk, fd, base);
	}
	closedir(d);
}

bool
snap_import_run(struct snap_import *im, struct event_base *base, bool all)
{
	int upobj, hostobj;
	bool whole = true;

	upobj = open(im->upper, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	hostobj = snap_import_host(im);
	if (upobj != -1 && hostobj != -1) {
		whole = snap_import_loose(im, upobj, hostobj, all);
		snap_import_packs(im, upobj, base);
	}
	if (upobj != -1)
		close(upobj);
	if (hostobj != -1)
		close(hostobj);
	return whole;
}

/* Finishing: the next pack left is indexed on the loop; with none left, the caller is told. */
static void
snap_import_finish_next(struct snap_import *im)
{
	void (*done)(void *) = im->fin_done;
	int upobj, hostobj;

	if (im->proc == NULL && (hostobj = snap_import_host(im)) != -1) {
		close(hostobj);
		if ((upobj = open(im->upper, O_RDONLY | O_DIRECTORY |
		    O_NOFOLLOW | O_CLOEXEC)) != -1) {
			snap_import_packs(im, upobj, im->fin_base);
			close(upobj);
		}
	}
	/* Its end comes back here. */
	if (im->proc != NULL)
		return;
	im->fin_done = NULL;
	done(im->fin_arg);
}

/* Finishing: a slice of the loose objects; the rest at the loop's next turn, then the packs. */
static void
snap_import_finish_cb(evutil_socket_t fd, short what, void *arg)
{
	struct snap_import *im = arg;
	struct timeval now = { 0, 0 };

	/* A pack being indexed is left to end; the rest is started after it. */
	if (snap_import_run(im, im->fin_base, true)) {
		im->fin_loose = true;
		snap_import_finish_next(im);
	} else if (event_add(im->fin_ev, &now) == -1)
		fatalx("cannot add a timer");
}

void
snap_import_finish(struct snap_import *im, struct event_base *base,
    void (*done)(void *), void *arg)
{
	/* The last pass looks at everything again: count only what it refuses. */
	memset(im->seen, 0, sizeof im->seen);
	im->next = 0;
	im->refused = im->pack_refused;
	im->fin_base = base;
	im->fin_done = done;
	im->fin_arg = arg;
	im->fin_loose = false;
	if (im->fin_ev == NULL &&
	    (im->fin_ev = evtimer_new(base, snap_import_finish_cb, im)) == NULL)
		fatalx("cannot create a timer");
	snap_import_finish_cb(-1, 0, im);
}
