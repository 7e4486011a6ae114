/*
 * Reading git's index file (versions 2 to 4) for its entries and the tree
 * it caches, and making git hash entries again whose stat data cannot be
 * trusted, without running git.
 */
#include <sys/stat.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdatomic.h>
#include <limits.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "snap/snap-int.h"

#define SNAP_CE_VALID     0x8000  /* assume-unchanged */
#define SNAP_CE_EXTENDED  0x4000
#define SNAP_CE_SKIP      0x4000  /* skip-worktree, in the extended flags */
#define SNAP_CE_FIXED     40      /* ctime, mtime, dev, ino, mode, uid, gid, size */
#define SNAP_INDEX_MAX    (1024 * 1024 * 1024)  /* the user's index read whole, at most */
#define SNAP_INDEX_OID_MAX 32                 /* SHA-256's */
#define SNAP_INDEX_CLOCK_LAG_NS 20000000      /* the kernel's coarse clock's lag, at most */

static uint32_t
snap_index_u32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return ntohl(v);
}

/* git's offset varint (index v4 name compression). */
static bool
snap_index_varint(const unsigned char **pp, const unsigned char *end,
    size_t *out)
{
	const unsigned char *p = *pp;
	size_t v;
	unsigned char c;

	if (p >= end)
		return false;
	c = *p++;
	v = c & 127;
	while (c & 128) {
		if (p >= end || v > (SIZE_MAX >> 8))
			return false;
		c = *p++;
		v = ((v + 1) << 7) + (c & 127);
	}
	*pp = p;
	*out = v;
	return true;
}

/* One entry's fields, as snap_index_entry reads them. */
struct snap_index_entry {
	const unsigned char *fixed;   /* its fixed fields, oid and flags as on disk */
	uint32_t ctime;
	uint32_t mode;
	const unsigned char *oid;
	uint16_t flags;
	uint16_t xflags;
};

/*
 * Reads the entry at *PP into E and NAME (which holds the previous name:
 * version 4 strips a prefix of it); false if the file is cut short, or,
 * if STRICT, if git's create_from_disk could read it otherwise (a name
 * whose length in the flags is not where its NUL is, extended flags in
 * version 2, which git reads in any version).
 */
static bool
snap_index_entry_as(const unsigned char **pp, const unsigned char *end,
    uint32_t version, size_t oidlen, bool strict, struct buf *name,
    struct snap_index_entry *e)
{
	const unsigned char *p = *pp, *start = p;
	size_t len, strip, want;

	if ((size_t)(end - p) < SNAP_CE_FIXED + oidlen + 2)
		return false;
	e->fixed = p;
	e->ctime = snap_index_u32(p);
	e->mode = snap_index_u32(p + 24);
	e->oid = p + SNAP_CE_FIXED;
	p += SNAP_CE_FIXED + oidlen;
	e->flags = (uint16_t)(p[0] << 8 | p[1]);
	p += 2;
	e->xflags = 0;
	if ((e->flags & SNAP_CE_EXTENDED) && strict && version < 3)
		return false;
	if ((e->flags & SNAP_CE_EXTENDED) && version >= 3) {
		if (end - p < 2)
			return false;
		e->xflags = (uint16_t)(p[0] << 8 | p[1]);
		p += 2;
	}
	if (version == 4) {
		if (!snap_index_varint(&p, end, &strip) || strip > name->len)
			return false;
		name->len -= strip;
	} else
		name->len = 0;
	len = strnlen((const char *)p, (size_t)(end - p));
	if (p + len >= end)
		return false;
	buf_add(name, p, len);
	p += len + 1;
	/* git copies as many bytes as the flags say (0xfff: up to the NUL). */
	want = e->flags & 0xfff;
	if (strict && (want < 0xfff ? want != name->len : name->len < 0xfff))
		return false;
	if (version != 4) {
		/* Entries are NUL-padded to a multiple of eight. */
		p = start + ((size_t)(p - start + 7) & ~(size_t)7);
		if (p > end)
			return false;
	}
	*pp = p;
	return true;
}

static bool
snap_index_entry(const unsigned char **pp, const unsigned char *end,
    uint32_t version, size_t oidlen, struct buf *name,
    struct snap_index_entry *e)
{
	return snap_index_entry_as(pp, end, version, oidlen, false, name, e);
}

/*
 * Whether one more name of LEN bytes keeps the names read so far (*TOTAL)
 * within what an index of FILELEN bytes may hold: version 4 writes a name
 * as a part of the one before, so a small file can name gigabytes (review
 * 15: 4 MB of shared part asked for 8 GB and agentmux died); none is
 * longer than a path may be, and all of them no more than 4 times the
 * file (real ones: less than twice) and 64 MiB.
 */
static bool
snap_index_names_ok(size_t len, size_t *total, size_t filelen)
{
	size_t max = filelen > (SIZE_MAX - ((size_t)64 << 20)) / 4 ?
	    SIZE_MAX : filelen * 4 + ((size_t)64 << 20);

	if (len > PATH_MAX || len > max - *total)
		return false;
	*total += len;
	return true;
}

/* Reads FILE's header: the first entry, the end, version and count; false if it is no index. */
static bool
snap_index_header(const struct buf *file, const unsigned char **p,
    const unsigned char **end, uint32_t *version, uint32_t *n)
{
	if (file->len < 12 || memcmp(file->data, "DIRC", 4) != 0)
		return false;
	*p = (const unsigned char *)file->data;
	*end = *p + file->len;
	*version = snap_index_u32(*p + 4);
	*n = snap_index_u32(*p + 8);
	*p += 12;
	return *version >= 2 && *version <= 4;
}

/* Reads PATH (ours: the own repository's or a private index) and its header. */
static bool
snap_index_open(struct buf *file, const char *path, const unsigned char **p,
    const unsigned char **end, uint32_t *version, uint32_t *n)
{
	if (buf_read_file(file, path) == -1)
		return false;
	return snap_index_header(file, p, end, version, n);
}

/*
 * The root of a TREE extension: an empty path, "<entries> <subtrees>\n",
 * then the tree's id unless <entries> is -1 (invalidated).
 */
static int
snap_index_tree_root(const unsigned char *p, size_t len, size_t oidlen,
    char **tree, int64_t *entries)
{
	const unsigned char *end = p + len, *nl;
	static const char hex[] = "0123456789abcdef";
	char *s;
	size_t i;

	if (len == 0 || *p != '\0' ||
	    (nl = memchr(p + 1, '\n', len - 1)) == NULL)
		return 0;
	*entries = strtoll((const char *)p + 1, &s, 10);
	if (s == (const char *)p + 1 || *s != ' ' || *entries < 0 ||
	    (size_t)(end - (nl + 1)) < oidlen)
		return 0;
	*tree = s = xmalloc(oidlen * 2 + 1);
	for (i = 0, p = nl + 1; i < oidlen; i++) {
		*s++ = hex[p[i] >> 4];
		*s++ = hex[p[i] & 15];
	}
	*s = '\0';
	return 1;
}

int
snap_index_tree(const char *path, size_t oidlen, char **tree,
    int64_t *entries)
{
	const unsigned char *p, *end;
	struct snap_index_entry e;
	struct buf file, name;
	uint32_t version, n, i, size;
	int rc = 0;

	*tree = NULL;
	buf_init(&file);
	buf_init(&name);
	if (!snap_index_open(&file, path, &p, &end, &version, &n)) {
		rc = -1;
		goto out;
	}
	for (i = 0; i < n; i++) {
		if (!snap_index_entry(&p, end, version, oidlen, &name, &e)) {
			rc = -1;
			goto out;
		}
	}
	/* Extensions, up to the trailing checksum. */
	while ((size_t)(end - p) >= 8 + oidlen) {
		size = snap_index_u32(p + 4);
		if ((size_t)(end - p) - 8 - oidlen < size)
			break;
		/* A split or sparse index's cache covers what is not in this file. */
		if (memcmp(p, "link", 4) == 0 || memcmp(p, "sdir", 4) == 0) {
			free(*tree);
			*tree = NULL;
			rc = 0;
			break;
		}
		/* git keeps the last of two. */
		if (memcmp(p, "TREE", 4) == 0) {
			free(*tree);
			*tree = NULL;
			rc = snap_index_tree_root(p + 8, size, oidlen, tree,
			    entries);
		}
		p += 8 + size;
	}
out:
	buf_free(&file);
	buf_free(&name);
	return rc;
}

int
snap_index_each_buf(const struct buf *file, size_t oidlen,
    int (*fn)(void *, const struct snap_index_ent *), void *arg)
{
	const unsigned char *p, *end;
	struct snap_index_entry e;
	struct snap_index_ent ent;
	struct buf name;
	uint32_t version, n, i;
	size_t total = 0;
	int rc = -1;

	buf_init(&name);
	if (!snap_index_header(file, &p, &end, &version, &n))
		goto out;
	for (i = 0; i < n; i++) {
		if (!snap_index_entry(&p, end, version, oidlen, &name, &e) ||
		    !snap_index_names_ok(name.len, &total, file->len))
			goto out;
		if ((e.mode & 0170000) == 0040000)
			continue; /* a sparse index's directory */
		ent.name = name.data;
		ent.namelen = name.len;
		ent.mode = e.mode;
		ent.oid = e.oid;
		ent.ctime = e.ctime;
		ent.flags = e.flags;
		ent.xflags = e.xflags;
		if (fn(arg, &ent) == -1)
			goto out;
	}
	rc = 0;
out:
	buf_free(&name);
	return rc;
}

int
snap_index_each(const char *path, size_t oidlen,
    int (*fn)(void *, const struct snap_index_ent *), void *arg)
{
	struct buf file;
	int rc;

	buf_init(&file);
	rc = buf_read_file(&file, path) == -1 ? -1 :
	    snap_index_each_buf(&file, oidlen, fn, arg);
	buf_free(&file);
	return rc;
}

/*
 * Zeroes the recorded mtime (seconds at 8, nanoseconds at 12) of each
 * entry of the index in DATA that SMUDGE(ARG, entry, its name, its
 * fields) says is to be hashed again (directories of a sparse index
 * skipped): their count, -1 if the index is cut short.
 */
static int
snap_index_smudge_each(unsigned char *data, size_t len, size_t oidlen,
    bool (*smudge)(void *, unsigned char *, const char *,
    const struct snap_index_entry *), void *arg)
{
	const unsigned char *p, *end, *start;
	struct snap_index_entry e;
	struct buf name;
	uint32_t version, n, i;
	int count = 0;

	p = data + 12;
	end = data + len;
	version = snap_index_u32(data + 4);
	n = snap_index_u32(data + 8);
	buf_init(&name);
	for (i = 0; i < n; i++) {
		start = p;
		if (!snap_index_entry(&p, end, version, oidlen, &name, &e)) {
			count = -1;
			break;
		}
		if ((e.mode & 0170000) == 0040000)
			continue;
		buf_add(&name, "", 1);
		name.len--;
		if (smudge(arg, data + (start - data), name.data, &e)) {
			memset(data + (start - data) + 8, 0, 8);
			count++;
		}
	}
	buf_free(&name);
	return count;
}

/* An entry changed at *ARG (seconds) or later. */
static bool
snap_index_since(void *arg, unsigned char *ent, const char *name,
    const struct snap_index_entry *e)
{
	(void)ent;
	(void)name;
	return e->ctime >= *(const uint32_t *)arg;
}

/* The trailing checksum of an index file's DATA, recomputed. */
static int
snap_index_checksum(unsigned char *data, size_t len, size_t oidlen)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	const EVP_MD *md_type = oidlen == 20 ? EVP_sha1() : EVP_sha256();

	if (EVP_Digest(data, len - oidlen, md, &mdlen, md_type, NULL) != 1 ||
	    mdlen != oidlen)
		return -1;
	memcpy(data + len - oidlen, md, oidlen);
	return 0;
}

/* Reads the index file PATH whole into FILE, its stat data into SB: -1 with errno, or if it is no index git writes. */
static int
snap_index_read_own(const char *path, size_t oidlen, struct buf *file,
    struct stat *sb)
{
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) == -1 ||
	    fstat(fd, sb) == -1 || buf_read_fd(file, fd) == -1) {
		if (fd != -1)
			close(fd);
		return -1;
	}
	close(fd);
	if (file->len < 12 + oidlen || memcmp(file->data, "DIRC", 4) != 0 ||
	    snap_index_u32((unsigned char *)file->data + 4) < 2 ||
	    snap_index_u32((unsigned char *)file->data + 4) > 4) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

/* Writes FILE (its checksum recomputed) over the index PATH, with the times TIMES. */
static int
snap_index_write_own(const char *path, struct buf *file, size_t oidlen,
    const struct timespec times[2])
{
	char *tmp = xprintf("%s.smudge", path);
	int fd = -1, rc = 0;

	if (snap_index_checksum((unsigned char *)file->data, file->len,
	    oidlen) == -1 || (fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC |
	    O_CLOEXEC | O_NOFOLLOW, 0600)) == -1 ||
	    util_write_all(fd, file->data, file->len) == -1 ||
	    futimens(fd, times) == -1 || close(fd) == -1 ||
	    (fd = -1, rename(tmp, path) == -1)) {
		if (fd != -1)
			close(fd);
		unlink(tmp);
		rc = -1;
	}
	free(tmp);
	return rc;
}

/*
 * git trusts an entry whose stat data matches, and compares seconds only:
 * a file changed again within the second its ctime was recorded in, its
 * size kept and its mtime set back, would pass as unchanged (git's own
 * "racy" check looks at mtime, which can be forged). Such entries get
 * their mtime zeroed, so that git hashes them again next time.
 */
/* The entries of the index file PATH that FN(ARG, ...) says are to be hashed again, smudged: their count, -1. */
static int
snap_index_smudge_with(const char *path, size_t oidlen,
    bool (*fn)(void *, unsigned char *, const char *,
    const struct snap_index_entry *), void *arg)
{
	struct timespec times[2];
	struct stat sb;
	struct buf file;
	int count;

	buf_init(&file);
	count = snap_index_read_own(path, oidlen, &file, &sb) == -1 ? -1 :
	    snap_index_smudge_each((unsigned char *)file.data, file.len,
	    oidlen, fn, arg);
	if (count <= 0) {
		buf_free(&file);
		return count;
	}
	/* The index keeps its times: racy-git checks compare against them. */
	times[0] = sb.st_atim;
	times[1] = sb.st_mtim;
	if (snap_index_write_own(path, &file, oidlen, times) == -1)
		count = -1;
	buf_free(&file);
	return count;
}

int
snap_index_smudge(const char *path, size_t oidlen, uint32_t since)
{
	return snap_index_smudge_with(path, oidlen, snap_index_since, &since);
}

/* Every entry, its ctime too: no file can be the one cached. */
static bool
snap_index_forget_one(void *arg, unsigned char *ent, const char *name,
    const struct snap_index_entry *e)
{
	(void)arg;
	(void)name;
	(void)e;
	memset(ent, 0, 8);
	return true;
}

int
snap_index_forget(const char *path, size_t oidlen)
{
	return snap_index_smudge_with(path, oidlen, snap_index_forget_one, NULL);
}

/* The directory of the work tree entries are looked up in, kept while entries share it. */
struct snap_index_dir {
	int root;          /* the work tree */
	int fd;            /* NAME's directory, O_PATH; -1: none */
	struct buf name;   /* its path under the work tree, "" for the top */
};

/* lstat of the entry NAME under the work tree, no link followed on the way: -1 with errno. */
static int
snap_index_lstat(struct snap_index_dir *d, const char *name, struct stat *sb)
{
	const char *slash = strrchr(name, '/');
	size_t dirlen = slash != NULL ? (size_t)(slash - name) : 0;

	if (d->fd == -1 || d->name.len != dirlen ||
	    memcmp(d->name.data, name, dirlen) != 0) {
		if (d->fd != -1 && d->fd != d->root)
			close(d->fd);
		buf_reset(&d->name);
		buf_add(&d->name, name, dirlen);
		d->fd = d->root;
		if (dirlen > 0) {
			buf_add(&d->name, "", 1);
			d->name.len = dirlen;
			d->fd = path_open_beneath(d->root, d->name.data,
			    O_PATH | O_DIRECTORY, 0);
		}
		if (d->fd == -1)
			return -1;
	}
	return fstatat(d->fd, slash != NULL ? slash + 1 : name, sb,
	    AT_SYMLINK_NOFOLLOW);
}

/* Whether the entry at P (stat data as git lays it out) is the file SB, not changed since. */
static bool
snap_index_same(const unsigned char *p, const struct stat *sb)
{
	return snap_index_u32(p) == (uint32_t)sb->st_ctim.tv_sec &&
	    snap_index_u32(p + 4) == (uint32_t)sb->st_ctim.tv_nsec &&
	    snap_index_u32(p + 16) == (uint32_t)sb->st_dev &&
	    snap_index_u32(p + 20) == (uint32_t)sb->st_ino &&
	    snap_index_u32(p + 36) == (uint32_t)sb->st_size &&
	    S_ISREG(sb->st_mode) == ((snap_index_u32(p + 24) & 0170000) ==
	    0100000);
}

/*
 * Whether the entry at P has a ctime of whole seconds (a file system that
 * keeps no finer time: ext4 with 128-byte inodes, HFS+, some NFS servers;
 * two seconds on some) within two seconds of BEFORE's: a write after
 * BEFORE would give the file that very ctime again, so it proves nothing.
 */
static bool
snap_index_coarse_late(const unsigned char *p, int64_t before)
{
	return snap_index_u32(p + 4) == 0 &&
	    (int64_t)snap_index_u32(p) + 2 > before / 1000000000;
}

/* What snap_index_verify checks against. */
struct snap_index_check {
	struct snap_index_dir dir;
	int64_t before;    /* ns */
};

/*
 * An entry is kept, with the present mtime written back (undoing an
 * earlier smudge), if its file is the one cached (same inode, size and
 * ctime to the nanosecond) and that ctime is before c->before; else
 * it is to be hashed again.
 */
static bool
snap_index_unverified(void *arg, unsigned char *ent, const char *name,
    const struct snap_index_entry *e)
{
	struct snap_index_check *c = arg;
	struct stat sb;
	int64_t cached;
	uint32_t v;

	(void)e;
	cached = (int64_t)snap_index_u32(ent) * 1000000000 +
	    snap_index_u32(ent + 4);
	if (cached >= c->before || snap_index_coarse_late(ent, c->before) ||
	    snap_index_lstat(&c->dir, name, &sb) == -1 ||
	    !snap_index_same(ent, &sb))
		return true;
	v = htonl((uint32_t)sb.st_mtim.tv_sec);
	memcpy(ent + 8, &v, 4);
	v = htonl((uint32_t)sb.st_mtim.tv_nsec);
	memcpy(ent + 12, &v, 4);
	return false;
}

/*
 * For a tree nothing but the session could write since BEFORE (ns; a
 * worktree session's new worktree, from the command's go): an entry whose
 * file still has the inode, size and ctime (to the nanosecond, which
 * cannot be set from user space) it had when cached, that ctime earlier
 * than BEFORE (a ctime of whole seconds, from a file system that keeps no
 * finer time: two seconds before BEFORE's), was not written since BEFORE,
 * whatever its mtime says;
 * every write after it, a mapped one too, moves ctime past it. Such
 * entries are trusted (their mtime put back if a snapshot smudged it),
 * every other one smudged, and the index's mtime becomes the moment
 * before the check (less the coarse clock's lag): git's racy check then
 * rereads only files written in that second. Nothing may write the tree
 * meanwhile (the session ended).
 */
int
snap_index_verify(const char *path, size_t oidlen, const char *worktree,
    int64_t before)
{
	struct snap_index_check c;
	struct timespec times[2];
	struct stat sb;
	struct buf file;
	int count = -1;

	if (clock_gettime(CLOCK_REALTIME, &times[1]) == -1 ||
	    (c.dir.root = open(worktree, O_PATH | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1)
		return -1;
	c.dir.fd = -1;
	c.before = before;
	buf_init(&c.dir.name);
	buf_init(&file);
	if (snap_index_read_own(path, oidlen, &file, &sb) == 0 &&
	    (count = snap_index_smudge_each((unsigned char *)file.data,
	    file.len, oidlen, snap_index_unverified, &c)) >= 0) {
		times[0] = sb.st_atim;
		/* File times come from a coarse clock, a tick behind this one. */
		if (times[1].tv_nsec >= SNAP_INDEX_CLOCK_LAG_NS)
			times[1].tv_nsec -= SNAP_INDEX_CLOCK_LAG_NS;
		else {
			times[1].tv_sec--;
			times[1].tv_nsec += 1000000000 - SNAP_INDEX_CLOCK_LAG_NS;
		}
		if (snap_index_write_own(path, &file, oidlen, times) == -1)
			count = -1;
	}
	if (c.dir.fd != -1 && c.dir.fd != c.dir.root)
		close(c.dir.fd);
	close(c.dir.root);
	buf_free(&c.dir.name);
	buf_free(&file);
	return count;
}

/* Where an index's extensions are, as git reads them (snap_index_find_ext). */
struct snap_index_exts {
	size_t first;   /* the first extension's offset */
	size_t end;     /* after the last whole one */
	size_t off;     /* the last copy of the one asked for (git's) */
	size_t len;     /* its length, header too */
	int count;      /* how many copies */
	bool odd;       /* git reads bytes agentmux cannot (padding, overrun) */
	bool eoie;      /* git may read them from elsewhere (a forged EOIE) */
};

/*
 * Whether FILE has an EOIE (end of index entries) extension, which git
 * looks for at a fixed place before the checksum, even inside another
 * extension's data, that puts the extensions elsewhere than after the
 * entries, FIRST: a git reading the index with threads (20,000 entries
 * and more) reads them from there.
 */
static bool
snap_index_eoie_odd(const struct buf *file, size_t oidlen, size_t first)
{
	const unsigned char *p;

	if (file->len < 12 + 8 + 4 + 2 * oidlen)
		return false;
	p = (const unsigned char *)file->data + file->len - oidlen -
	    (8 + 4 + oidlen);
	if (memcmp(p, "EOIE", 4) != 0 || snap_index_u32(p + 4) != 4 + oidlen)
		return false;
	return snap_index_u32(p + 8) != first;
}

/*
 * FILE's extensions as git reads them (read-cache.c): one more while 8
 * bytes or more are left before the trailing checksum, its size taken
 * unchecked; fewer are skipped; a later one of a signature replaces the
 * earlier. X says where SIG's last copy is, how many there are, and
 * whether git reads something agentmux cannot: bytes left over before the
 * checksum (padding), or an extension running into it. -1 if FILE is no
 * index of OIDLEN-byte ids.
 */
static int
snap_index_find_ext(const struct buf *file, size_t oidlen, const char *sig,
    struct snap_index_exts *x)
{
	const unsigned char *p, *end, *base;
	struct snap_index_entry e;
	struct buf name;
	uint32_t version, n, i, size;
	int rc = -1;

	memset(x, 0, sizeof *x);
	buf_init(&name);
	if (!snap_index_header(file, &p, &end, &version, &n) ||
	    (size_t)(end - p) < oidlen)
		goto out;
	for (i = 0; i < n; i++) {
		if (!snap_index_entry(&p, end, version, oidlen, &name, &e))
			goto out;
	}
	base = (const unsigned char *)file->data;
	x->first = (size_t)(p - base);
	while ((size_t)(end - p) >= 8 + oidlen) {
		size = snap_index_u32(p + 4);
		/* git reads an extension too long for the file on, past it. */
		if ((size_t)(end - p) - 8 - oidlen < size)
			x->odd = true;
		if (memcmp(p, sig, 4) == 0) {
			x->off = (size_t)(p - base);
			x->len = x->odd ? (size_t)(end - p) - oidlen :
			    8 + (size_t)size;
			x->count++;
		}
		if (x->odd)
			break;
		p += 8 + size;
	}
	x->end = (size_t)(p - base);
	if ((size_t)(end - p) != oidlen)
		x->odd = true;
	if ((x->eoie = snap_index_eoie_odd(file, oidlen, x->first)))
		x->odd = true;
	rc = 0;
out:
	buf_free(&name);
	return rc;
}

/* Whether FILE's trailing checksum is that of its content, with OIDLEN-byte ids. */
static bool
snap_index_sum_ok(const struct buf *file, size_t oidlen)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	const EVP_MD *md_type = oidlen == 20 ? EVP_sha1() : EVP_sha256();

	if (file->len < 12 + oidlen || EVP_Digest(file->data, file->len -
	    oidlen, md, &mdlen, md_type, NULL) != 1 || mdlen != oidlen)
		return false;
	return memcmp(md, file->data + file->len - oidlen, oidlen) == 0;
}

static size_t snap_index_sum_len(const struct buf *);
static int snap_index_ext_summed(const struct buf *, size_t, const char *,
    size_t *, struct snap_index_exts *);

/*
 * The id length of FILE (20: SHA-1, 32: SHA-256) and its extension SIG in
 * X: the checksum tells it; failing that (index.skipHash writes none) the
 * length its extensions end exactly at, or SHA-1.
 */
static int
snap_index_ext_at(const struct buf *file, const char *sig, size_t *oidlen,
    struct snap_index_exts *x)
{
	return snap_index_ext_summed(file, snap_index_sum_len(file), sig,
	    oidlen, x);
}

/* The id length FILE's trailing checksum is right for (20, 32), 0 if none. */
static size_t
snap_index_sum_len(const struct buf *file)
{
	static const size_t lens[] = { 20, 32 };
	size_t i;

	for (i = 0; i < nitems(lens); i++) {
		if (snap_index_sum_ok(file, lens[i]))
			return lens[i];
	}
	return 0;
}

/* As snap_index_ext_at, with FILE's checksum checked already (SUMLEN: snap_index_sum_len's). */
static int
snap_index_ext_summed(const struct buf *file, size_t sumlen, const char *sig,
    size_t *oidlen, struct snap_index_exts *x)
{
	static const size_t lens[] = { 20, 32 };
	size_t i;

	if (sumlen != 0) {
		*oidlen = sumlen;
		return snap_index_find_ext(file, sumlen, sig, x);
	}
	for (i = 0; i < nitems(lens); i++) {
		*oidlen = lens[i];
		if (snap_index_find_ext(file, lens[i], sig, x) == 0 && !x->odd)
			return 0;
	}
	*oidlen = 20;
	return snap_index_find_ext(file, 20, sig, x);
}

/* Reads the index file PATH (never through a link) into FILE, its stat into SB. */
static int
snap_index_read_user(const char *path, struct buf *file, struct stat *sb)
{
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW |
	    O_NONBLOCK)) == -1)
		return -1;
	if (fstat(fd, sb) == -1 || !S_ISREG(sb->st_mode) ||
	    sb->st_size > SNAP_INDEX_MAX || buf_read_fd(file, fd) == -1) {
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/* ---- a split index (core.splitIndex), read whole ---- */

/* One entry of a split index's merge: its name (owned) and fields. */
struct snap_split_ent {
	char *name;
	size_t namelen;
	unsigned stage;
	bool added;               /* from the split part, not the shared one */
	size_t seq;               /* its place there (of two alike, git keeps the last) */
	struct snap_index_ent ent;
};

/* The fields of one entry, to keep: the bytes they point into outlive the merge. */
static void
snap_split_fill(struct snap_split_ent *se, const struct snap_index_entry *e)
{
	se->ent.mode = e->mode;
	se->ent.oid = e->oid;
	se->ent.ctime = e->ctime;
	se->ent.flags = e->flags;
	se->ent.xflags = e->xflags;
	se->stage = (e->flags >> 12) & 3;
}

/*
 * The entries of the index FILE, names copied; false if it is cut short
 * or read otherwise by git, or if its names and those read before
 * (*TOTAL) pass what files of TOTAL_MAX bytes hold.
 */
static bool
snap_split_entries(const struct buf *file, size_t oidlen, size_t *total,
    size_t total_max, struct snap_split_ent **v, size_t *n)
{
	const unsigned char *p, *end;
	struct snap_index_entry e;
	struct buf name;
	uint32_t version, count, i;
	bool ok = false;

	*v = NULL;
	*n = 0;
	buf_init(&name);
	if (!snap_index_header(file, &p, &end, &version, &count) ||
	    count > file->len / (SNAP_CE_FIXED + 2))
		goto out;
	*v = xcalloc(count + 1, sizeof **v);
	/* Strictly: a name whose length in the flags is not where its NUL is, git reads otherwise (review 15). */
	for (i = 0; i < count; i++) {
		if (!snap_index_entry_as(&p, end, version, oidlen, true, &name,
		    &e) || !snap_index_names_ok(name.len, total, total_max))
			goto out;
		(*v)[i].name = xmalloc(name.len + 1);
		memcpy((*v)[i].name, name.data != NULL ? name.data : "",
		    name.len);
		(*v)[i].name[name.len] = '\0';
		(*v)[i].namelen = name.len;
		snap_split_fill(&(*v)[i], &e);
		*n = i + 1;
	}
	ok = true;
out:
	buf_free(&name);
	return ok;
}

static void
snap_split_free(struct snap_split_ent *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(v[i].name);
	free(v);
}

/* An EWAH bitmap as git serializes it (ewah/ewah_io.c), at *P: its words. */
struct snap_ewah {
	const unsigned char *words;
	uint32_t nwords;
};

static uint64_t
snap_index_u64(const unsigned char *p)
{
	return (uint64_t)snap_index_u32(p) << 32 | snap_index_u32(p + 4);
}

/* Reads one bitmap at *P (LEFT bytes); false if it is cut short. */
static bool
snap_ewah_read(const unsigned char **p, size_t *left, struct snap_ewah *b)
{
	size_t need;

	if (*left < 12)
		return false;
	b->nwords = snap_index_u32(*p + 4);
	if (b->nwords > (*left - 12) / 8)
		return false;
	need = 8 + (size_t)b->nwords * 8 + 4;
	b->words = *p + 8;
	*p += need;
	*left -= need;
	return true;
}

/*
 * Calls FN(ARG, position) for each bit set in B, as git's ewah_each_bit
 * walks it: a run word (bit 0 the run's bit, 32 bits of run length in
 * 64-bit words, 31 of literal words that follow), then its literals.
 * False if a bit lies at or past MAX (git then dies: no entry there) or
 * the words run out, or FN says false.
 */
static bool
snap_ewah_each(const struct snap_ewah *b, size_t max,
    bool (*fn)(void *, size_t), void *arg)
{
	uint64_t w, run, lits, pos = 0, k, lit;
	uint32_t at = 0;
	unsigned c;

	while (at < b->nwords) {
		w = snap_index_u64(b->words + (size_t)at * 8);
		at++;
		run = ((w >> 1) & 0xffffffffULL) * 64;
		lits = w >> 33;
		if ((w & 1) && run > 0) {
			if (run > max - pos)
				return false;
			for (k = 0; k < run; k++) {
				if (!fn(arg, (size_t)(pos + k)))
					return false;
			}
		}
		/* Past MAX, where any bit is refused: it stops counting (no wrap). */
		pos = run > max - pos ? max : pos + run;
		if (lits > b->nwords - at)
			return false;
		for (k = 0; k < lits; k++, at++) {
			lit = snap_index_u64(b->words + (size_t)at * 8);
			for (c = 0; lit != 0 && c < 64; c++) {
				if (!(lit & ((uint64_t)1 << c)))
					continue;
				if (c >= max - pos || !fn(arg, (size_t)(pos +
				    c)))
					return false;
			}
			pos = 64 > max - pos ? max : pos + 64;
		}
	}
	return true;
}

/* The merge in progress: the shared part's entries, and the split part's in order. */
struct snap_split {
	struct snap_split_ent *base;
	size_t nbase;
	struct snap_split_ent *split;
	size_t nsplit;
	size_t replaced;          /* split entries used as replacements so far */
	bool *gone;               /* per base entry: deleted */
};

/* A replacement: the split part's next entry, with no name, takes POS's place (its name kept). */
static bool
snap_split_replace(void *arg, size_t pos)
{
	struct snap_split *m = arg;
	struct snap_split_ent *src, *dst = &m->base[pos];

	if (m->replaced >= m->nsplit)
		return false;
	src = &m->split[m->replaced++];
	if (src->namelen != 0)
		return false;
	dst->ent = src->ent;
	dst->stage = src->stage;
	return true;
}

static bool
snap_split_delete(void *arg, size_t pos)
{
	struct snap_split *m = arg;

	m->gone[pos] = true;
	return true;
}

static bool
snap_split_same(const struct snap_split_ent *x, const struct snap_split_ent *y)
{
	return x->namelen == y->namelen && x->stage == y->stage &&
	    memcmp(x->name, y->name, x->namelen) == 0;
}

/* Git's order: by name, then stage; of the same name and stage, the split part's first, its last first. */
static int
snap_split_cmp(const void *a, const void *b)
{
	const struct snap_split_ent *x = *(struct snap_split_ent *const *)a;
	const struct snap_split_ent *y = *(struct snap_split_ent *const *)b;
	size_t n = x->namelen < y->namelen ? x->namelen : y->namelen;
	int c = memcmp(x->name, y->name, n);

	if (c != 0)
		return c;
	if (x->namelen != y->namelen)
		return x->namelen < y->namelen ? -1 : 1;
	if (x->stage != y->stage)
		return x->stage < y->stage ? -1 : 1;
	if (x->added != y->added)
		return x->added ? -1 : 1;
	return x->seq > y->seq ? -1 : x->seq < y->seq;
}

/*
 * The merged entries ORDER (N, sorted) to FN, as git's add_index_entry
 * leaves them: of one name and stage, the split part's last addition; a
 * merged one (stage 0) the split part adds removes every stage of its
 * name the shared part had.
 */
static int
snap_split_emit(struct snap_split_ent **order, size_t n,
    int (*fn)(void *, const struct snap_index_ent *), void *arg)
{
	struct snap_split_ent *e, *last;
	size_t i, j, k;
	bool merged;

	for (i = 0; i < n; i = j) {
		merged = false;
		for (j = i; j < n && order[j]->namelen == order[i]->namelen &&
		    memcmp(order[j]->name, order[i]->name, order[i]->namelen) ==
		    0; j++)
			merged |= order[j]->added && order[j]->stage == 0;
		for (k = i, last = NULL; k < j; k++) {
			e = order[k];
			if ((merged && !e->added) || (last != NULL &&
			    snap_split_same(last, e)))
				continue;
			last = e;
			e->ent.name = e->name;
			e->ent.namelen = e->namelen;
			if ((e->ent.mode & 0170000) == 0040000)
				continue;
			if (fn(arg, &e->ent) == -1)
				return -1;
		}
	}
	return 0;
}

/*
 * The entries of the split index FILE merged with its shared part SHARED,
 * as git's merge_base_index does, in git's order, each to FN. LINK is the
 * link extension's data past the shared part's id (LEFT bytes: the delete
 * bitmap, then the replace bitmap; none at all is neither).
 */
static int
snap_split_merge(const struct buf *file, const struct buf *shared,
    size_t oidlen, const unsigned char *link, size_t left,
    int (*fn)(void *, const struct snap_index_ent *), void *arg,
    char **cause)
{
	struct snap_ewah del, rep;
	struct snap_split m;
	struct snap_split_ent **order = NULL;
	size_t i, n = 0, total = 0;
	int rc = -1;

	memset(&m, 0, sizeof m);
	memset(&del, 0, sizeof del);
	memset(&rep, 0, sizeof rep);
	if (left > 0 && (!snap_ewah_read(&link, &left, &del) ||
	    !snap_ewah_read(&link, &left, &rep) || left != 0)) {
		*cause = xstrdup("its link extension's bitmaps are cut short "
		    "or followed by garbage");
		return -1;
	}
	if (!snap_split_entries(shared, oidlen, &total, file->len +
	    shared->len, &m.base, &m.nbase) || !snap_split_entries(file,
	    oidlen, &total, file->len + shared->len, &m.split, &m.nsplit)) {
		*cause = xstrdup("its entries or its shared part's are cut "
		    "short, not as git reads them, or name more than such "
		    "files hold");
		goto out;
	}
	m.gone = xcalloc(m.nbase + 1, sizeof *m.gone);
	if (!snap_ewah_each(&rep, m.nbase, snap_split_replace, &m) ||
	    !snap_ewah_each(&del, m.nbase, snap_split_delete, &m)) {
		*cause = xstrdup("its link extension names entries its shared "
		    "part does not have, or replacements it does not hold");
		goto out;
	}
	order = xcalloc(m.nbase + m.nsplit + 1, sizeof *order);
	for (i = 0; i < m.nbase; i++) {
		if (!m.gone[i])
			order[n++] = &m.base[i];
	}
	for (i = m.replaced; i < m.nsplit; i++) {
		if (m.split[i].namelen == 0) {
			*cause = xstrdup("an entry it adds has no name");
			goto out;
		}
		m.split[i].added = true;
		m.split[i].seq = i;
		order[n++] = &m.split[i];
	}
	qsort(order, n, sizeof *order, snap_split_cmp);
	if (snap_split_emit(order, n, fn, arg) == -1) {
		*cause = xstrdup("its entries were refused");
		goto out;
	}
	rc = 0;
out:
	free(order);
	free(m.gone);
	snap_split_free(m.base, m.nbase);
	snap_split_free(m.split, m.nsplit);
	return rc;
}

int
snap_index_user_each(int dirfd, size_t max, size_t oidlen,
    int (*fn)(void *, const struct snap_index_ent *), void *arg,
    char **cause)
{
	static const char hex[] = "0123456789abcdef";
	static const unsigned char zero[SNAP_INDEX_OID_MAX];
	struct snap_index_exts x;
	struct buf file, shared;
	const unsigned char *link;
	char name[sizeof "sharedindex." + 2 * SNAP_INDEX_OID_MAX];
	size_t i, off;
	int rc = -1;

	buf_init(&file);
	buf_init(&shared);
	if (oidlen > SNAP_INDEX_OID_MAX) {
		*cause = xprintf("ids of %zu bytes are not known", oidlen);
		goto out;
	}
	if (path_read_beneath(dirfd, "index", max, &file) == -1) {
		*cause = xprintf("cannot read it: %s", strerror(errno));
		goto out;
	}
	if (snap_index_find_ext(&file, oidlen, "link", &x) == -1) {
		*cause = xstrdup("it is not an index git reads");
		goto out;
	}
	/* git keeps the first's bitmaps where a second names only the id: never written, refused. */
	if (x.count > 1) {
		*cause = xstrdup("it has two link extensions");
		goto out;
	}
	link = (const unsigned char *)file.data + x.off + 8;
	/* Not split, or split with no shared part (all zeros): all here. */
	if (x.count == 0 || x.odd || x.len < 8 + oidlen ||
	    memcmp(link, zero, oidlen) == 0) {
		if (x.count > 0 && (x.odd || x.len < 8 + oidlen)) {
			*cause = xstrdup("its link extension is cut short");
			goto out;
		}
		if ((rc = snap_index_each_buf(&file, oidlen, fn, arg)) == -1)
			*cause = xstrdup("it is cut short");
		goto out;
	}
	off = (size_t)snprintf(name, sizeof name, "sharedindex.");
	for (i = 0; i < oidlen; i++) {
		name[off++] = hex[link[i] >> 4];
		name[off++] = hex[link[i] & 15];
	}
	name[off] = '\0';
	/* Its name is its checksum, which must be good: git checks both. */
	/* Both files within MAX. */
	if (path_read_beneath(dirfd, name, max - file.len, &shared) == -1) {
		*cause = xprintf("it is split and its shared part %s cannot be "
		    "read: %s", name, strerror(errno));
		goto out;
	}
	if (!snap_index_sum_ok(&shared, oidlen) || memcmp(shared.data +
	    shared.len - oidlen, link, oidlen) != 0) {
		*cause = xprintf("it is split and its shared part %s is not "
		    "the one it names", name);
		goto out;
	}
	if ((rc = snap_split_merge(&file, &shared, oidlen, link + oidlen,
	    x.len - 8 - oidlen, fn, arg, cause)) == -1) {
		/* CAUSE says what is wrong: with which file. */
		char *c = *cause;

		*cause = xprintf("it is split, and %s", c);
		free(c);
	}
out:
	buf_free(&file);
	buf_free(&shared);
	return rc;
}

int
snap_index_load(const char *path, const char *sig, struct buf *file,
    size_t *oidlen, struct buf *out)
{
	struct snap_index_exts x;
	struct stat sb;
	int rc;

	buf_reset(out);
	buf_reset(file);
	if (snap_index_read_user(path, file, &sb) == -1)
		return errno == ENOENT ? 0 : -1;
	rc = snap_index_ext_at(file, sig, oidlen, &x);
	if (rc == 0 && x.count > 0)
		buf_add(out, file->data + x.off, x.len);
	/* Padding alone hides nothing of SIG. */
	if (rc == 0 && x.count > 0)
		rc = x.odd || x.count > 1 ? 2 : 1;
	return rc;
}

/* SIG's copy in FILE (checksum length SUMLEN) into OUT: snap_index_load's answer. */
static int
snap_index_ext_of(const struct buf *file, size_t sumlen, const char *sig,
    struct buf *out)
{
	struct snap_index_exts x;
	size_t oidlen;
	int rc;

	buf_reset(out);
	rc = snap_index_ext_summed(file, sumlen, sig, &oidlen, &x);
	if (rc == 0 && x.count > 0)
		buf_add(out, file->data + x.off, x.len);
	/* Padding alone hides nothing of SIG. */
	if (rc == 0 && x.count > 0)
		rc = x.odd || x.count > 1 ? 2 : 1;
	return rc;
}

void
snap_index_exts(const char *path, const char *const *sigs, size_t n,
    struct buf *outs, int *rcs)
{
	struct buf file;
	struct stat sb;
	size_t i, sumlen;
	int rc = 0;

	buf_init(&file);
	if (snap_index_read_user(path, &file, &sb) == -1)
		rc = errno == ENOENT ? 0 : -1;
	sumlen = rc == 0 ? snap_index_sum_len(&file) : 0;
	for (i = 0; i < n; i++) {
		buf_reset(&outs[i]);
		rcs[i] = rc != 0 ? rc : snap_index_ext_of(&file, sumlen,
		    sigs[i], &outs[i]);
	}
	buf_free(&file);
}

int
snap_index_ext(const char *path, const char *sig, struct buf *out)
{
	struct buf file;
	size_t oidlen;
	int rc;

	buf_init(&file);
	rc = snap_index_load(path, sig, &file, &oidlen, out);
	buf_free(&file);
	return rc;
}

/*
 * FILE's extensions again without SIG's and without what git would read
 * past the last whole one (padding, an extension running into the
 * checksum), and without any optional one if an EOIE is forged: true if
 * that changed FILE.
 */
static bool
snap_index_strip(struct buf *file, size_t oidlen, const char *sig,
    const struct snap_index_exts *x)
{
	struct buf keep;
	size_t p, size;
	bool changed = x->odd;

	buf_init(&keep);
	buf_add(&keep, file->data, x->first);
	for (p = x->first; p < x->end; p += 8 + size) {
		size = snap_index_u32((unsigned char *)file->data + p + 4);
		/* A forged EOIE hides in any optional one: all go. */
		if (memcmp(file->data + p, sig, 4) == 0 || (x->eoie &&
		    file->data[p] >= 'A' && file->data[p] <= 'Z'))
			changed = true;
		else
			buf_add(&keep, file->data + p, 8 + size);
	}
	buf_add(&keep, file->data + file->len - oidlen, oidlen);
	buf_reset(file);
	buf_add(file, keep.data, keep.len);
	buf_free(&keep);
	return changed;
}

/* Writes FILE (from SB) as the user's index PATH, under git's own lock, its times kept. */
static int
snap_index_write_user(const char *path, struct buf *file, size_t oidlen,
    const struct stat *sb)
{
	struct timespec times[2];
	char *lock;
	bool written;
	int fd, rc = -1;

	times[0] = sb->st_atim;
	times[1] = sb->st_mtim;
	/* git's own lock: none is written while the user's git holds it. */
	lock = xprintf("%s.lock", path);
	if (snap_index_checksum((unsigned char *)file->data, file->len,
	    oidlen) == 0 && (fd = open(lock, O_WRONLY | O_CREAT | O_EXCL |
	    O_CLOEXEC | O_NOFOLLOW, 0600)) != -1) {
		/* Its mode kept, whatever agentmux's own umask (077). */
		written = fchmod(fd, sb->st_mode & 0666) == 0 &&
		    util_write_all(fd, file->data, file->len) == 0 &&
		    futimens(fd, times) == 0;
		/* Closed once, whatever happened: a failed close loses the write. */
		if (close(fd) == 0 && written && rename(lock, path) == 0)
			rc = 1;
		else
			unlink(lock);
	}
	free(lock);
	return rc;
}

int
snap_index_drop_ext(const char *path, const char *sig)
{
	struct snap_index_exts x;
	struct buf file;
	struct stat sb;
	size_t oidlen;
	int rc;

	buf_init(&file);
	if (snap_index_read_user(path, &file, &sb) == -1) {
		buf_free(&file);
		return -1;
	}
	if (snap_index_ext_at(&file, sig, &oidlen, &x) == -1) {
		buf_free(&file);
		errno = EINVAL;
		return -1;
	}
	rc = 0;
	if (snap_index_strip(&file, oidlen, sig, &x))
		rc = snap_index_write_user(path, &file, oidlen, &sb);
	buf_free(&file);
	return rc;
}

/* The ls-files -v tag of entry E if it has a mark (S, s or h), else 0. */
static char
snap_index_mark_tag(const struct snap_index_entry *e)
{
	bool valid = (e->flags & SNAP_CE_VALID) != 0;

	if (e->xflags & SNAP_CE_SKIP)
		return valid ? 's' : 'S';
	return valid ? 'h' : 0;
}

/* The marked entries of the index FILE, for OIDLEN-byte ids, into OUT; -1 if it does not parse. */
static int
snap_index_marks_of(const struct buf *file, size_t oidlen, const char *repo,
    struct strv *out)
{
	const unsigned char *p, *end;
	struct snap_index_entry e;
	struct buf name;
	uint32_t version, n, i;
	char tag;
	int rc = -1;

	buf_init(&name);
	if (!snap_index_header(file, &p, &end, &version, &n))
		goto out;
	for (i = 0; i < n; i++) {
		if (!snap_index_entry(&p, end, version, oidlen, &name, &e))
			goto out;
		if ((tag = snap_index_mark_tag(&e)) != 0)
			strv_addf(out, "%zu:%s%c %.*s", strlen(repo), repo, tag,
			    (int)name.len, name.data);
	}
	rc = 0;
out:
	buf_free(&name);
	return rc;
}

int
snap_index_marks(const char *path, const char *repo, struct strv *out)
{
	struct buf file;
	struct stat sb;
	struct snap_index_exts x;
	size_t oidlen;
	int rc;

	buf_init(&file);
	if (snap_index_read_user(path, &file, &sb) == -1) {
		rc = errno == ENOENT ? 0 : -1;
		buf_free(&file);
		return rc;
	}
	/* The id length is the one the checksum and extensions fit. */
	(void)snap_index_ext_at(&file, "UNTR", &oidlen, &x);
	rc = snap_index_marks_of(&file, oidlen, repo, out);
	buf_free(&file);
	return rc;
}

/* ---- a fresh worktree's index, as git's checkout wrote it ---- */

struct snap_seed_ent {
	char *name;
	uint32_t mode;
	uint16_t flags;
	uint16_t xflags;
	unsigned char oid[SNAP_PACK_OID];
	unsigned char stat[SNAP_CE_FIXED];  /* as git lays it out */
};

struct snap_seed {
	struct snap_seed_ent *v;
	size_t n;
	int64_t written;          /* the index file's mtime (ns), less the clock's lag */
	struct snap_index_dir dir;
	size_t file_len;          /* the index file's size */
	bool has_root;            /* its cache-tree names the top tree: */
	unsigned char root[SNAP_PACK_OID];
	/* snap_seed_look_all: each entry's look, taken before the writer asks */
	bool looked;
	bool *taken;
	struct stat *sb;
};

void
snap_seed_free(struct snap_seed *sd)
{
	size_t i;

	if (sd == NULL)
		return;
	for (i = 0; i < sd->n; i++)
		free(sd->v[i].name);
	free(sd->v);
	free(sd->taken);
	free(sd->sb);
	if (sd->dir.fd != -1 && sd->dir.fd != sd->dir.root)
		close(sd->dir.fd);
	if (sd->dir.root != -1)
		close(sd->dir.root);
	buf_free(&sd->dir.name);
	free(sd);
}

/* Whether NAME's last component is .gitattributes (git converts what it names). */
static bool
snap_seed_attributes(const char *name)
{
	const char *slash = strrchr(name, '/');

	return strcmp(slash != NULL ? slash + 1 : name, ".gitattributes") == 0;
}

/* FILE's entries into SD, in its order; false if FILE is cut short or names attributes. */
static bool
snap_seed_entries(struct snap_seed *sd, const struct buf *file)
{
	const unsigned char *p, *end, *start;
	struct snap_index_entry e;
	struct snap_seed_ent *se;
	struct buf name;
	uint32_t version, n, i;
	bool ok = false;

	buf_init(&name);
	if (!snap_index_header(file, &p, &end, &version, &n) ||
	    n > file->len / (SNAP_CE_FIXED + SNAP_PACK_OID))
		goto out;
	sd->v = xcalloc(n > 0 ? n : 1, sizeof *sd->v);
	for (i = 0; i < n; i++) {
		start = p;
		if (!snap_index_entry(&p, end, version, SNAP_PACK_OID, &name,
		    &e))
			goto out;
		buf_add(&name, "", 1);
		name.len--;
		if (snap_seed_attributes(name.data))
			goto out;
		se = &sd->v[sd->n++];
		se->name = xstrdup(name.data);
		se->mode = e.mode;
		se->flags = e.flags;
		se->xflags = e.xflags;
		memcpy(se->oid, e.oid, SNAP_PACK_OID);
		memcpy(se->stat, start, SNAP_CE_FIXED);
	}
	ok = true;
out:
	buf_free(&name);
	return ok;
}

/*
 * An index of N files holds at most this many bytes: the entries (62
 * bytes, the name up to 4 KiB, padding) and git's extensions (a cache-tree
 * line per dir, the rest small). A hostile one is not read past it.
 */
#define SNAP_SEED_MAX_BYTES(n) ((size_t)(1 << 20) + (size_t)(n) * 4300)

/* The seed of FILE, the index INDEX as read (SB its stat): see snap_seed_read. */
static struct snap_seed *
snap_seed_from_buf(const struct buf *file, const struct stat *sb,
    const char *index, const char *worktree, char **cause)
{
	struct snap_seed *sd = xcalloc(1, sizeof *sd);
	const unsigned char *p, *end;
	uint32_t version, n;

	sd->dir.root = sd->dir.fd = -1;
	buf_init(&sd->dir.name);
	sd->file_len = file->len;
	if (!snap_index_header(file, &p, &end, &version, &n) ||
	    file->len > SNAP_SEED_MAX_BYTES(n)) {
		*cause = xprintf("%s is no index of a worktree's files", index);
		goto fail;
	}
	if (!snap_index_sum_ok(file, SNAP_PACK_OID)) {
		*cause = xprintf("%s is not the tree it was checked out from",
		    index);
		goto fail;
	}
	sd->has_root = snap_cachetree_root(file, SNAP_PACK_OID,
	    sd->root) == 0;
	if (!snap_seed_entries(sd, file)) {
		*cause = xprintf("%s names a .gitattributes (git may have "
		    "converted what it wrote) or is cut short", index);
		goto fail;
	}
	sd->written = (int64_t)sb->st_mtim.tv_sec * 1000000000 +
	    sb->st_mtim.tv_nsec - SNAP_INDEX_CLOCK_LAG_NS;
	if ((sd->dir.root = open(worktree, O_PATH | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1) {
		*cause = xprintf("cannot open %s: %s", worktree,
		    strerror(errno));
		goto fail;
	}
	return sd;
fail:
	snap_seed_free(sd);
	return NULL;
}

struct snap_seed *
snap_seed_read(const char *index, const char *worktree, char **cause)
{
	struct snap_seed *sd;
	struct stat sb;
	struct buf file;

	buf_init(&file);
	if (snap_index_read_user(index, &file, &sb) == -1) {
		*cause = xprintf("cannot read %s: %s", index, strerror(errno));
		buf_free(&file);
		return NULL;
	}
	sd = snap_seed_from_buf(&file, &sb, index, worktree, cause);
	buf_free(&file);
	return sd;
}

static int
snap_seed_names_cb(void *arg, const struct snap_index_ent *e)
{
	struct buf *names = arg;

	/* A gitlink's files are its repository's (sparse dirs never come). */
	if ((e->mode & 0170000) == 0160000)
		return 0;
	buf_add(names, e->name, e->namelen);
	buf_addc(names, '\0');
	return 0;
}

int
snap_seed_read_names(const char *index, const char *worktree,
    const unsigned char *tree, struct buf *names, struct snap_seed **seed,
    char **cause, char **seed_cause)
{
	struct snap_index_exts x;
	struct stat sb;
	struct buf file;

	*seed = NULL;
	buf_init(&file);
	if (snap_index_read_user(index, &file, &sb) == -1) {
		*cause = xprintf("cannot read %s: %s", index, strerror(errno));
		goto fail;
	}
	if (!snap_index_sum_ok(&file, SNAP_PACK_OID)) {
		*cause = xprintf("%s does not end with its checksum", index);
		goto fail;
	}
	/* A split index holds only what changed since its shared part. */
	if (snap_index_find_ext(&file, SNAP_PACK_OID, "link", &x) == -1 ||
	    x.count > 0) {
		*cause = xprintf("%s is %s", index, x.count > 0 ? "a split "
		    "index" : "not an index git reads");
		goto fail;
	}
	if (snap_index_each_buf(&file, SNAP_PACK_OID, snap_seed_names_cb,
	    names) == -1) {
		*cause = xprintf("%s is cut short", index);
		goto fail;
	}
	if (tree == NULL)
		*seed_cause = xprintf("the tree %s was checked out from is not "
		    "known", worktree);
	else if ((*seed = snap_seed_from_buf(&file, &sb, index, worktree,
	    seed_cause)) != NULL && (!(*seed)->has_root ||
	    memcmp((*seed)->root, tree, SNAP_PACK_OID) != 0)) {
		*seed_cause = xprintf("%s is not the tree it was checked out "
		    "from", index);
		snap_seed_free(*seed);
		*seed = NULL;
	}
	buf_free(&file);
	return 0;
fail:
	buf_reset(names);
	buf_free(&file);
	return -1;
}

int
snap_seed_believe(const struct snap_seed *sd, const char *index,
    const unsigned char *tree, size_t nfiles, char **cause)
{
	/* Its entries are the tracked files, all of which were listed. */
	if (sd->file_len > SNAP_SEED_MAX_BYTES(nfiles)) {
		*cause = xprintf("%s holds %zu bytes, more than an index of the "
		    "files listed can (%zu)", index, sd->file_len,
		    SNAP_SEED_MAX_BYTES(nfiles));
		return -1;
	}
	if (sd->n > nfiles + 64) {
		*cause = xprintf("%s is no index of the %zu files listed",
		    index, nfiles);
		return -1;
	}
	if (!sd->has_root || memcmp(sd->root, tree, SNAP_PACK_OID) != 0) {
		*cause = xprintf("%s is not the tree it was checked out from",
		    index);
		return -1;
	}
	return 0;
}

struct snap_seed *
snap_seed_load(const char *index, const unsigned char *tree,
    const char *worktree, size_t nfiles, char **cause)
{
	struct snap_seed *sd;

	if ((sd = snap_seed_read(index, worktree, cause)) == NULL)
		return NULL;
	if (snap_seed_believe(sd, index, tree, nfiles, cause) == -1) {
		snap_seed_free(sd);
		return NULL;
	}
	return sd;
}

/* NAME's entry in SD (sorted as git sorts an index: bytewise), or NULL. */
static const struct snap_seed_ent *
snap_seed_find(const struct snap_seed *sd, const char *name)
{
	size_t lo = 0, hi = sd->n, mid;
	int c;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if ((c = strcmp(sd->v[mid].name, name)) == 0)
			return &sd->v[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Whether SE's file is the one git wrote (SB its lstat data): see snap_seed_take. */
static bool
snap_seed_look(struct snap_seed *sd, const struct snap_seed_ent *se,
    struct stat *sb)
{
	const char *path = se->name;
	const unsigned char *p;
	int64_t cached;
	unsigned want;

	if ((se->flags & SNAP_CE_VALID) ||
	    (se->xflags & SNAP_CE_SKIP) ||
	    (se->mode != 0100644 && se->mode != 0100755))
		return false;
	p = se->stat;
	cached = (int64_t)snap_index_u32(p) * 1000000000 + snap_index_u32(p + 4);
	if (cached >= sd->written || snap_index_coarse_late(p, sd->written) ||
	    snap_index_lstat(&sd->dir, path, sb) == -1 ||
	    !S_ISREG(sb->st_mode) || !snap_index_same(p, sb) ||
	    snap_index_u32(p + 8) != (uint32_t)sb->st_mtim.tv_sec ||
	    snap_index_u32(p + 12) != (uint32_t)sb->st_mtim.tv_nsec ||
	    (uint64_t)sb->st_size > UINT32_MAX)
		return false;
	want = (sb->st_mode & S_IXUSR) ? 0100755 : 0100644;
	return want == se->mode;
}

void
snap_seed_look_all(struct snap_seed *sd, const atomic_bool *stop)
{
	size_t i;

	clone_gate_enter();
	sd->taken = xcalloc(sd->n > 0 ? sd->n : 1, sizeof *sd->taken);
	sd->sb = xcalloc(sd->n > 0 ? sd->n : 1, sizeof *sd->sb);
	clone_gate_leave();
	/* The look allocates when it opens another dir. */
	for (i = 0; i < sd->n; i++) {
		if (stop != NULL && atomic_load(stop))
			return;
		clone_gate_enter();
		sd->taken[i] = snap_seed_look(sd, &sd->v[i], &sd->sb[i]);
		clone_gate_leave();
	}
	sd->looked = true;
}

bool
snap_seed_take(struct snap_seed *sd, const char *path,
    unsigned char oid[SNAP_PACK_OID], unsigned *mode, struct stat *sb)
{
	const struct snap_seed_ent *se = snap_seed_find(sd, path);
	size_t i;

	if (se == NULL)
		return false;
	if (sd->looked) {
		i = (size_t)(se - sd->v);
		if (!sd->taken[i])
			return false;
		*sb = sd->sb[i];
	} else if (!snap_seed_look(sd, se, sb))
		return false;
	memcpy(oid, se->oid, SNAP_PACK_OID);
	*mode = se->mode;
	return true;
}

/*
 * Whether the path component C (N bytes) is a git dir's name to git's
 * verify_path, as it is everywhere (core.protectNTFS is on by default):
 * ".git" in any case, with dots or spaces after it (NTFS drops them), or
 * its short name "git~1".
 */
static bool
snap_index_dotgit(const char *c, size_t n)
{
	while (n > 4 && (c[n - 1] == ' ' || c[n - 1] == '.'))
		n--;
	return (n == 4 && strncasecmp(c, ".git", 4) == 0) || (n == 5 &&
	    strncasecmp(c, "git~1", 5) == 0);
}

/*
 * Whether git's checkout may write NAME (LEN bytes, MODE's kind) where
 * git's own verify_path would: relative, no empty part, no "." or "..",
 * no git dir's name, a link not named .gitmodules (in any case: git
 * reads it from the tree); a sparse index's dir ends with one '/'.
 */
static bool
snap_index_path_ok(const char *name, size_t len, uint32_t mode)
{
	const char *c = name, *end = name + len, *slash;

	if ((mode & 0170000) == 0040000) {
		if (len == 0 || name[len - 1] != '/')
			return false;
		end--;
	}
	if (c == end)
		return false;
	for (;;) {
		slash = memchr(c, '/', (size_t)(end - c));
		if (slash == NULL)
			slash = end;
		if (slash == c || (slash - c == 1 && c[0] == '.') ||
		    (slash - c == 2 && c[0] == '.' && c[1] == '.') ||
		    snap_index_dotgit(c, (size_t)(slash - c)))
			return false;
		if (slash == end)
			break;
		c = slash + 1;
	}
	return (mode & 0170000) != 0120000 || end - c != 11 ||
	    strncasecmp(c, ".gitmodules", 11) != 0;
}

/*
 * Names compared as paths: each part in turn, a name before the names
 * below it ("a" < "a/x" < "a-b"), so that the names below one follow it.
 */
static int
snap_index_pathcmp(const void *a, const void *b)
{
	const unsigned char *x = *(const unsigned char *const *)a;
	const unsigned char *y = *(const unsigned char *const *)b;
	int cx, cy;

	for (;; x++, y++) {
		cx = *x == '\0' ? 0 : *x == '/' ? 1 : *x + 1;
		cy = *y == '\0' ? 0 : *y == '/' ? 1 : *y + 1;
		if (cx != cy || cx == 0)
			return cx - cy;
	}
}

/*
 * Entries of NAMES (in path order) below another entry of it (a file, a
 * link): into BAD. One pass, a stack of the names the next may be below:
 * linear in the bytes (review 9 F2: a search per part of each name took
 * 77 s for a 6 MB index of deep names).
 */
static void
snap_index_below(const struct strv *names, struct strv *bad)
{
	const char **stack = xcalloc(names->n + 1, sizeof *stack);
	size_t i, depth = 0, len;

	for (i = 0; i < names->n; i++) {
		while (depth > 0) {
			len = strlen(stack[depth - 1]);
			if (strncmp(names->v[i], stack[depth - 1], len) == 0 &&
			    names->v[i][len] == '/')
				break;
			depth--;
		}
		if (depth > 0)
			strv_add(bad, names->v[i]);
		stack[depth++] = names->v[i];
	}
	free(stack);
}

/*
 * Whether the resolve-undo extension REUC (LEN bytes at P: for each path,
 * its name, three octal modes, the ids of the ones not zero) names only
 * paths git may write: 'git checkout -m' writes the ones it unresolves.
 * Its bad names into BAD. False if it cannot be read.
 */
static bool
snap_index_reuc_ok(const unsigned char *p, size_t len, size_t oidlen,
    struct strv *bad)
{
	const unsigned char *end = p + len, *z;
	unsigned long mode;
	size_t ids;
	int i;

	while (p < end) {
		if ((z = memchr(p, '\0', (size_t)(end - p))) == NULL)
			return false;
		if (!snap_index_path_ok((const char *)p, (size_t)(z - p),
		    0100644))
			strv_addf(bad, "%.*s", (int)(z - p), (const char *)p);
		p = z + 1;
		for (i = 0, ids = 0; i < 3; i++) {
			if ((z = memchr(p, '\0', (size_t)(end - p))) == NULL)
				return false;
			mode = strtoul((const char *)p, NULL, 8);
			ids += mode != 0;
			p = z + 1;
		}
		if ((size_t)(end - p) < ids * oidlen)
			return false;
		p += ids * oidlen;
	}
	return true;
}

int
snap_index_paths_check(const struct buf *file, size_t oidlen,
    struct strv *bad)
{
	const unsigned char *p, *end;
	struct snap_index_entry e;
	struct strv names;
	struct buf name;
	uint32_t version, n, i, size;
	int rc = -1;

	buf_init(&name);
	strv_init(&names);
	if (file->len < 12 + oidlen || !snap_index_header(file, &p, &end,
	    &version, &n))
		goto out;
	/*
	 * An end-of-entries mark (EOIE) where git looks for one, just before
	 * the checksum (its 32 bytes are SHA-1's in both formats): git's
	 * threaded reader then reads the extensions, and the offset table,
	 * from where it points, which may be inside one walked past here
	 * (review 10). Git writes one only where index.threads is set.
	 */
	if (file->len >= 12 + 32 + oidlen && memcmp(file->data + file->len -
	    oidlen - 32, "EOIE", 4) == 0)
		goto out;
	end -= oidlen;
	for (i = 0; i < n; i++) {
		if (!snap_index_entry_as(&p, end, version, oidlen, true, &name,
		    &e))
			goto out;
		/* A sparse index's dir stands for entries this file has not. */
		if ((e.mode & 0170000) == 0040000)
			goto out;
		/* Longer than a path may be: git cannot write it (and a check of it would cost squares). */
		if (name.len > PATH_MAX)
			goto out;
		buf_add(&name, "", 1);
		name.len--;
		if (!snap_index_path_ok(name.data, name.len, e.mode))
			strv_addf(bad, "%.*s", (int)name.len, name.data);
		else
			strv_add(&names, name.data);
	}
	/*
	 * A split index's entries are in a file beside it, which is not
	 * read: as bad as none; so are entries git's threaded reader finds
	 * by an offset table (IEOT, with EOIE), where this reader does not
	 * look (review 8: bad ones hidden in an extension of no name git
	 * knows). What 'git checkout -m' unresolves (REUC) is checked too.
	 */
	while ((size_t)(end - p) >= 8) {
		size = snap_index_u32(p + 4);
		if (memcmp(p, "link", 4) == 0 || memcmp(p, "sdir", 4) == 0 ||
		    memcmp(p, "IEOT", 4) == 0 || memcmp(p, "EOIE", 4) == 0 ||
		    (size_t)(end - p) - 8 < size || (memcmp(p, "REUC", 4) ==
		    0 && !snap_index_reuc_ok(p + 8, size, oidlen, bad)))
			goto out;
		p += 8 + size;
	}
	qsort(names.v, names.n, sizeof *names.v, snap_index_pathcmp);
	snap_index_below(&names, bad);
	rc = bad->n > 0;
out:
	buf_free(&name);
	strv_free(&names);
	return rc;
}
