/*
 * Writing a pack and its index directly, without git: the writer a
 * project's first snapshot needs (every file hashed and stored) to cost
 * what git add -A into a fresh index costs. git hashes each object twice
 * with its collision-detecting SHA-1 (the object id, then the pack
 * checksum); here each id is one OpenSSL SHA-1 and entries are stored
 * (deflate blocks of type 0, no compression: the background pack
 * compresses them), so a byte is read once, hashed twice by the fast
 * SHA-1 and copied once. A file is streamed a block at a time, so the
 * writer's memory is the same for a 1 TiB file as for an empty one. A
 * sparse file (most of it holes) is deflated instead: stored, its holes
 * would cost the data dir's disk their full size. Files are read with
 * read(2), never mapped: reading a hole through a mapping allocates it
 * on tmpfs, so the project's sparse files would fill its disk.
 *
 * Format: gitformat-pack(5): a "PACK" v2 header with the object count,
 * entries (type and size, then a zlib stream), the SHA-1 of all that; the
 * .idx v2 beside it (fan-out, sorted ids, CRC-32s, offsets, the pack's
 * and its own checksum). Both are written under temporary names in
 * objects/pack and renamed once whole, the .idx last (it makes the pack
 * visible to git).
 *
 * Plain SHA-1, not git's collision-detecting sha1dc (no C library of it
 * is packaged here): an agent could craft two files with one id (an
 * identical-prefix collision of "blob <size>\0..." costs about 2^63
 * SHA-1 computations). Within one pack that is caught: an id seen again
 * is compared byte for byte with what is stored under it, and two
 * contents refuse the pack. Against later snapshots it is harmless: they
 * are written by git, whose sha1dc refuses the other half of a pair.
 */
#include <sys/stat.h>

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <zlib.h>

#include "snap/snap-int.h"

/* Bytes buffered before a write(2). */
#define SNAP_PACK_BUF (256 * 1024)
/* The most a stored deflate block holds. */
#define SNAP_PACK_BLOCK 65535
/* Files read ahead of the writer, and the largest read so (bigger: streamed). */
#define SNAP_PACK_AHEAD 64
#define SNAP_PACK_AHEAD_MAX (256 * 1024)
/* snap_pack_file's answer on a reading thread: the writer's own to store. */
#define SNAP_PACK_WRITERS 3

struct snap_pack_obj {
	unsigned char oid[SNAP_PACK_OID];
	uint32_t crc;
	uint64_t offset;
	uint64_t data;            /* where its zlib stream starts */
	size_t len;               /* its size */
	bool deflated;            /* compressed (a sparse file), not stored */
};

/*
 * A file read whole, and its blob's id taken, by a reading thread ahead
 * of the thread writing the pack (see snap_pack_job_files): R is what
 * snap_pack_file answered for it, or SNAP_PACK_WRITERS (a link, a large
 * or sparse file: the writer stores it itself, as with no reader).
 */
struct snap_pack_fetched {
	size_t want;              /* the file whose turn this slot is */
	bool ready;               /* filled for WANT, not yet taken */
	int r;
	char *cause;
	struct snap_pack_entry e;
	struct stat sb;
	unsigned char *data;      /* SNAP_PACK_AHEAD_MAX + 1 bytes */
	size_t len;
};

struct snap_pack {
	char *dir;                /* objects/pack */
	char *tmp;                /* the pack's temporary name */
	int fd;
	uint32_t want;            /* objects announced in the header */
	uint64_t offset;          /* bytes written so far */
	EVP_MD_CTX *sum;          /* the pack's checksum */
	EVP_MD_CTX *id;           /* an object's id */
	uint32_t crc;             /* the current entry's CRC-32 */
	unsigned char *buf;
	size_t len;
	unsigned char *rbuf;      /* a file's next block, as read */
	EVP_MD_CTX *saved;        /* the checksum before the current entry */
	struct snap_pack_obj *objs;
	size_t n;
	/*
	 * On a helper thread, it allocates only inside the clone gate (a
	 * jail's clone waits for no more than that) and gives up between
	 * blocks once STOP is set.
	 */
	bool gated;
	atomic_bool *stop;
	/*
	 * The directory of the last file stored (its fd, and its path with
	 * the '/'): the next file of that directory is opened from it, not
	 * by a walk from the top again.
	 */
	int dirfd;
	size_t dirlen;
	char dirpath[4096];
	/* The objects by id (index + 1; 0: free), to store each once. */
	uint32_t *ids;
	size_t nids;              /* a power of two, at least twice want */
	/* A reading thread's: a file is read into it, not stored. */
	struct snap_pack_fetched *fetch;
};

static const char *const snap_pack_types[] = {
	[SNAP_PACK_COMMIT] = "commit", [SNAP_PACK_TREE] = "tree",
	[SNAP_PACK_BLOB] = "blob",
};

/*
 * Around what may allocate (the allocator's lock must not be held when a
 * jail is cloned), on a helper thread: nothing otherwise.
 */
static void
snap_pack_enter(const struct snap_pack *p)
{
	int e = errno;

	if (p->gated)
		clone_gate_enter();
	errno = e;
}

static void
snap_pack_leave(const struct snap_pack *p)
{
	int e = errno;

	if (p->gated)
		clone_gate_leave();
	errno = e;
}

/* *CAUSE = xprintf(...), inside the gate (its strerror(errno) too). */
#define SNAP_PACK_CAUSE(p, cause, ...) do {				\
	snap_pack_enter(p);						\
	*(cause) = xprintf(__VA_ARGS__);				\
	snap_pack_leave(p);						\
} while (0)

static int
snap_pack_flush(struct snap_pack *p, char **cause)
{
	size_t off = 0;
	ssize_t w;

	while (off < p->len) {
		w = write(p->fd, p->buf + off, p->len - off);
		if (w == -1 && errno == EINTR)
			continue;
		if (w <= 0) {
			SNAP_PACK_CAUSE(p, cause, "cannot write %s: %s", p->tmp,
			    w == -1 ? strerror(errno) : "short write");
			return -1;
		}
		off += (size_t)w;
	}
	p->len = 0;
	return 0;
}

/* Appends to the pack; its checksum, the entry CRC-32 and the offset follow. */
static int
snap_pack_put(struct snap_pack *p, const void *data, size_t len, char **cause)
{
	const unsigned char *d = data;
	size_t chunk;

	EVP_DigestUpdate(p->sum, d, len);
	p->crc = (uint32_t)crc32_z(p->crc, d, len);
	p->offset += len;
	while (len > 0) {
		if (p->len == SNAP_PACK_BUF && snap_pack_flush(p, cause) == -1)
			return -1;
		chunk = SNAP_PACK_BUF - p->len;
		if (chunk > len)
			chunk = len;
		memcpy(p->buf + p->len, d, chunk);
		p->len += chunk;
		d += chunk;
		len -= chunk;
	}
	return 0;
}

static void
snap_pack_be32(unsigned char *b, uint32_t v)
{
	b[0] = (unsigned char)(v >> 24);
	b[1] = (unsigned char)(v >> 16);
	b[2] = (unsigned char)(v >> 8);
	b[3] = (unsigned char)v;
}

struct snap_pack *
snap_pack_begin(const char *gitdir, uint32_t count, char **cause)
{
	struct snap_pack *p = xcalloc(1, sizeof *p);
	unsigned char head[12] = { 'P', 'A', 'C', 'K', 0, 0, 0, 2 };

	p->dirfd = -1;
	p->dir = xprintf("%s/objects/pack", gitdir);
	p->tmp = xprintf("%s/tmp_pack_XXXXXX", p->dir);
	p->want = count;
	p->buf = xmalloc(SNAP_PACK_BUF);
	p->rbuf = xmalloc(SNAP_PACK_BLOCK);
	p->objs = xcalloc(count > 0 ? count : 1, sizeof *p->objs);
	for (p->nids = 16; p->nids < 2 * (size_t)count; p->nids *= 2)
		;
	p->ids = xcalloc(p->nids, sizeof *p->ids);
	p->sum = EVP_MD_CTX_new();
	p->id = EVP_MD_CTX_new();
	p->saved = EVP_MD_CTX_new();
	if (p->sum == NULL || p->id == NULL || p->saved == NULL)
		fatalx("out of memory");
	EVP_DigestInit_ex(p->sum, EVP_sha1(), NULL);
	if ((p->fd = mkostemp(p->tmp, O_CLOEXEC)) == -1) {
		*cause = xprintf("cannot create a pack in %s: %s", p->dir,
		    strerror(errno));
		p->tmp[0] = '\0';
		snap_pack_abort(p);
		return NULL;
	}
	snap_pack_be32(head + 8, count);
	if (snap_pack_put(p, head, sizeof head, cause) == -1) {
		snap_pack_abort(p);
		return NULL;
	}
	return p;
}

/* The zlib stream of DATA in stored blocks: header, blocks, Adler-32. */
static int
snap_pack_stored(struct snap_pack *p, const unsigned char *data, size_t len,
    char **cause)
{
	unsigned char zh[2] = { 0x78, 0x01 }, bh[5];
	size_t chunk;

	if (snap_pack_put(p, zh, sizeof zh, cause) == -1)
		return -1;
	do {
		chunk = len > SNAP_PACK_BLOCK ? SNAP_PACK_BLOCK : len;
		bh[0] = chunk == len;           /* BFINAL, BTYPE 00 */
		bh[1] = (unsigned char)chunk;
		bh[2] = (unsigned char)(chunk >> 8);
		bh[3] = (unsigned char)~chunk;
		bh[4] = (unsigned char)(~chunk >> 8);
		if (snap_pack_put(p, bh, sizeof bh, cause) == -1 ||
		    snap_pack_put(p, data, chunk, cause) == -1)
			return -1;
		data += chunk;
		len -= chunk;
	} while (len > 0);
	return 0;
}

void
snap_pack_hex(const unsigned char *oid, char *hex)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < SNAP_PACK_OID; i++) {
		hex[2 * i] = digits[oid[i] >> 4];
		hex[2 * i + 1] = digits[oid[i] & 0xf];
	}
	hex[2 * SNAP_PACK_OID] = '\0';
}

/* The slot of OID in P's table: the object there, or the free slot for it. */
static uint32_t *
snap_pack_slot(struct snap_pack *p, const unsigned char *oid)
{
	size_t i = ((size_t)oid[0] << 24 | (size_t)oid[1] << 16 |
	    (size_t)oid[2] << 8 | oid[3]) & (p->nids - 1);

	while (p->ids[i] != 0 && memcmp(p->objs[p->ids[i] - 1].oid, oid,
	    SNAP_PACK_OID) != 0)
		i = (i + 1) & (p->nids - 1);
	return &p->ids[i];
}

/*
 * Whether O, already in the pack, holds DATA: an id seen twice is the
 * same content written twice (stored once), unless two contents collide
 * (plain SHA-1 does not detect a crafted collision; this does, here).
 */
static int
snap_pack_same(struct snap_pack *p, const struct snap_pack_obj *o,
    const unsigned char *data, size_t len, char **cause)
{
	unsigned char chunk[SNAP_PACK_BLOCK];
	uint64_t at = o->data + 2;
	size_t left = len, n;

	/* A deflated one is a file's blob: the same id from a buffer is a collision. */
	if (o->len != len || o->deflated)
		return 0;
	if (p->len > 0 && snap_pack_flush(p, cause) == -1)
		return -1;
	do {
		n = left > SNAP_PACK_BLOCK ? SNAP_PACK_BLOCK : left;
		/* Each stored block: a 5-byte header, then its bytes. */
		if (pread(p->fd, chunk, n, (off_t)(at + 5)) != (ssize_t)n) {
			SNAP_PACK_CAUSE(p, cause, "cannot read back %s",
			    p->tmp);
			return -1;
		}
		if (memcmp(chunk, data, n) != 0)
			return 0;
		at += 5 + n;
		data += n;
		left -= n;
	} while (left > 0);
	return 1;
}

/*
 * An entry's type and size (4 bits of the size first, then 7 a byte, low
 * first); its CRC-32 starts there.
 */
static int
snap_pack_head(struct snap_pack *p, enum snap_pack_type type, uint64_t s,
    char **cause)
{
	unsigned char eh[16];
	size_t el = 0;

	eh[0] = (unsigned char)(((unsigned)type << 4) | (s & 15));
	s >>= 4;
	while (s > 0) {
		eh[el++] |= 0x80;
		eh[el] = s & 0x7f;
		s >>= 7;
	}
	el++;
	p->crc = (uint32_t)crc32_z(0, NULL, 0);
	return snap_pack_put(p, eh, el, cause);
}

int
snap_pack_add(struct snap_pack *p, enum snap_pack_type type,
    const void *data, size_t len, unsigned char oid[SNAP_PACK_OID],
    char **cause)
{
	struct snap_pack_obj *o;
	unsigned char tail[4];
	uint32_t *slot;
	char head[64], hex[2 * SNAP_PACK_OID + 1];
	int hl, same;

	hl = snprintf(head, sizeof head, "%s %zu", snap_pack_types[type], len);
	snap_pack_enter(p);
	EVP_DigestInit_ex(p->id, EVP_sha1(), NULL);
	snap_pack_leave(p);
	EVP_DigestUpdate(p->id, head, (size_t)hl + 1);
	EVP_DigestUpdate(p->id, data, len);
	snap_pack_enter(p);
	EVP_DigestFinal_ex(p->id, oid, NULL);
	snap_pack_leave(p);
	slot = snap_pack_slot(p, oid);
	if (*slot != 0) {
		if ((same = snap_pack_same(p, &p->objs[*slot - 1], data, len,
		    cause)) == -1)
			return -1;
		if (same == 0) {
			snap_pack_hex(oid, hex);
			SNAP_PACK_CAUSE(p, cause,
			    "two different contents have the same "
			    "SHA-1 id %s: a crafted collision", hex);
			return -1;
		}
		return 0;
	}
	if (p->n == p->want) {
		SNAP_PACK_CAUSE(p, cause, "more objects than the %u announced",
		    p->want);
		return -1;
	}
	o = &p->objs[p->n];
	memcpy(o->oid, oid, SNAP_PACK_OID);
	o->offset = p->offset;
	o->len = len;
	if (snap_pack_head(p, type, len, cause) == -1)
		return -1;
	o->data = p->offset;
	if (snap_pack_stored(p, data, len, cause) == -1)
		return -1;
	snap_pack_be32(tail, (uint32_t)adler32_z(adler32_z(0, NULL, 0),
	    data, len));
	if (snap_pack_put(p, tail, sizeof tail, cause) == -1)
		return -1;
	o->crc = p->crc;
	p->n++;
	*slot = (uint32_t)p->n;
	return 0;
}

static int
snap_pack_cmp(const void *a, const void *b)
{
	const struct snap_pack_obj *x = a, *y = b;

	return memcmp(x->oid, y->oid, SNAP_PACK_OID);
}

/* Appends to IDX (and to its checksum MD). */
static void
snap_pack_idx_put(struct buf *idx, EVP_MD_CTX *md, const void *d, size_t len)
{
	EVP_DigestUpdate(md, d, len);
	buf_add(idx, d, len);
}

/* The .idx v2 of P's sorted objects, ending with PACKSUM and its own sum. */
static void
snap_pack_idx(struct snap_pack *p, const unsigned char *packsum,
    struct buf *idx)
{
	unsigned char b[8], magic[8] = { 0xff, 't', 'O', 'c', 0, 0, 0, 2 };
	unsigned char own[SNAP_PACK_OID];
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	uint32_t large = 0;
	size_t i, k = 0;
	unsigned f;

	if (md == NULL)
		fatalx("out of memory");
	EVP_DigestInit_ex(md, EVP_sha1(), NULL);
	snap_pack_idx_put(idx, md, magic, sizeof magic);
	for (f = 0; f < 256; f++) {
		while (k < p->n && p->objs[k].oid[0] <= f)
			k++;
		snap_pack_be32(b, (uint32_t)k);
		snap_pack_idx_put(idx, md, b, 4);
	}
	for (i = 0; i < p->n; i++)
		snap_pack_idx_put(idx, md, p->objs[i].oid, SNAP_PACK_OID);
	for (i = 0; i < p->n; i++) {
		snap_pack_be32(b, p->objs[i].crc);
		snap_pack_idx_put(idx, md, b, 4);
	}
	/* Offsets past 2^31 - 1 go to a table of 8-byte ones. */
	for (i = 0; i < p->n; i++) {
		if (p->objs[i].offset < 0x80000000u)
			snap_pack_be32(b, (uint32_t)p->objs[i].offset);
		else
			snap_pack_be32(b, 0x80000000u | large++);
		snap_pack_idx_put(idx, md, b, 4);
	}
	for (i = 0; i < p->n; i++) {
		if (p->objs[i].offset < 0x80000000u)
			continue;
		snap_pack_be32(b, (uint32_t)(p->objs[i].offset >> 32));
		snap_pack_be32(b + 4, (uint32_t)p->objs[i].offset);
		snap_pack_idx_put(idx, md, b, 8);
	}
	snap_pack_idx_put(idx, md, packsum, SNAP_PACK_OID);
	EVP_DigestFinal_ex(md, own, NULL);
	buf_add(idx, own, sizeof own);
	EVP_MD_CTX_free(md);
}

/* Writes IDX under a temporary name in P's dir: the name, or NULL, *CAUSE. */
static char *
snap_pack_idx_write(struct snap_pack *p, const struct buf *idx, char **cause)
{
	char *tmp = xprintf("%s/tmp_idx_XXXXXX", p->dir);
	size_t off = 0;
	ssize_t w;
	int fd;

	if ((fd = mkostemp(tmp, O_CLOEXEC)) == -1) {
		*cause = xprintf("cannot create a pack index in %s: %s", p->dir,
		    strerror(errno));
		free(tmp);
		return NULL;
	}
	while (off < idx->len) {
		w = write(fd, idx->data + off, idx->len - off);
		if (w == -1 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	if (off < idx->len || fchmod(fd, 0444) == -1 || close(fd) == -1) {
		*cause = xprintf("cannot write %s: %s", tmp, strerror(errno));
		if (off < idx->len)
			close(fd);
		unlink(tmp);
		free(tmp);
		return NULL;
	}
	return tmp;
}

/*
 * Fewer objects than announced (contents written twice are stored once):
 * the header gets the count, and the checksum is taken again over the
 * file, read back.
 */
static int
snap_pack_recount(struct snap_pack *p, char **cause)
{
	unsigned char count[4], chunk[SNAP_PACK_BLOCK];
	uint64_t at = 0;
	ssize_t n;

	if (snap_pack_flush(p, cause) == -1)
		return -1;
	snap_pack_be32(count, (uint32_t)p->n);
	if (pwrite(p->fd, count, sizeof count, 8) != (ssize_t)sizeof count) {
		*cause = xprintf("cannot write %s: %s", p->tmp, strerror(errno));
		return -1;
	}
	EVP_DigestInit_ex(p->sum, EVP_sha1(), NULL);
	while (at < p->offset) {
		n = pread(p->fd, chunk, sizeof chunk, (off_t)at);
		if (n <= 0) {
			*cause = xprintf("cannot read back %s", p->tmp);
			return -1;
		}
		EVP_DigestUpdate(p->sum, chunk, (size_t)n);
		at += (uint64_t)n;
	}
	return 0;
}

int
snap_pack_finish(struct snap_pack *p, char *name, size_t namelen,
    char **cause)
{
	unsigned char sum[SNAP_PACK_OID];
	char hex[2 * SNAP_PACK_OID + 1], *tmpidx, *pack, *idxname;
	struct buf idx;
	int r = -1;

	if (p->n != p->want && snap_pack_recount(p, cause) == -1)
		goto out;
	EVP_DigestFinal_ex(p->sum, sum, NULL);
	if (p->len + sizeof sum > SNAP_PACK_BUF && snap_pack_flush(p, cause) == -1)
		goto out;
	memcpy(p->buf + p->len, sum, sizeof sum);
	p->len += sizeof sum;
	if (snap_pack_flush(p, cause) == -1)
		goto out;
	if (fchmod(p->fd, 0444) == -1 || close(p->fd) == -1) {
		p->fd = -1;
		*cause = xprintf("cannot write %s: %s", p->tmp, strerror(errno));
		goto out;
	}
	p->fd = -1;
	qsort(p->objs, p->n, sizeof *p->objs, snap_pack_cmp);
	snap_pack_hex(sum, hex);
	buf_init(&idx);
	snap_pack_idx(p, sum, &idx);
	tmpidx = snap_pack_idx_write(p, &idx, cause);
	buf_free(&idx);
	if (tmpidx == NULL)
		goto out;
	pack = xprintf("%s/pack-%s.pack", p->dir, hex);
	idxname = xprintf("%s/pack-%s.idx", p->dir, hex);
	if (rename(p->tmp, pack) == -1 || rename(tmpidx, idxname) == -1) {
		*cause = xprintf("cannot put the pack in %s: %s", p->dir,
		    strerror(errno));
		unlink(tmpidx);
		unlink(pack);
	} else {
		p->tmp[0] = '\0';
		if (name != NULL)
			snprintf(name, namelen, "%s", hex);
		r = 0;
	}
	free(pack);
	free(idxname);
	free(tmpidx);
out:
	snap_pack_abort(p);
	return r;
}

void
snap_pack_abort(struct snap_pack *p)
{
	if (p == NULL)
		return;
	if (p->fd != -1)
		close(p->fd);
	if (p->dirfd != -1)
		close(p->dirfd);
	if (p->tmp[0] != '\0')
		unlink(p->tmp);
	EVP_MD_CTX_free(p->sum);
	EVP_MD_CTX_free(p->id);
	EVP_MD_CTX_free(p->saved);
	free(p->rbuf);
	free(p->objs);
	free(p->ids);
	free(p->buf);
	free(p->tmp);
	free(p->dir);
	free(p);
}

/*
 * The tree of E[0..N), entries whose paths share the first SKIP bytes:
 * written into P (its subtrees first), its id in OID. E is in index
 * order (paths compared bytewise), which is tree order too: git compares
 * a directory's name as if it ended with '/', as its paths do.
 */
static int
snap_pack_tree(struct snap_pack *p, const struct snap_pack_entry *e,
    size_t n, size_t skip, unsigned char oid[SNAP_PACK_OID], char **cause)
{
	unsigned char sub[SNAP_PACK_OID];
	const char *name, *slash;
	char mode[16];
	struct buf t;
	size_t i = 0, j, len;
	int r = 0;

	buf_init(&t);
	while (i < n && r == 0) {
		name = e[i].path + skip;
		if ((slash = strchr(name, '/')) == NULL) {
			snprintf(mode, sizeof mode, "%o ", e[i].mode);
			buf_adds(&t, mode);
			buf_add(&t, name, strlen(name) + 1);
			buf_add(&t, e[i].oid, SNAP_PACK_OID);
			i++;
			continue;
		}
		len = (size_t)(slash - name) + 1;
		for (j = i + 1; j < n && strncmp(e[j].path + skip, name,
		    len) == 0; j++)
			;
		if ((r = snap_pack_tree(p, e + i, j - i, skip + len, sub,
		    cause)) == 0) {
			buf_adds(&t, "40000 ");
			buf_add(&t, name, len - 1);
			buf_add(&t, "", 1);
			buf_add(&t, sub, SNAP_PACK_OID);
		}
		i = j;
	}
	if (r == 0)
		r = snap_pack_add(p, SNAP_PACK_TREE, t.data != NULL ? t.data :
		    "", t.len, oid, cause);
	buf_free(&t);
	return r;
}

int
snap_pack_trees(struct snap_pack *p, const struct snap_pack_entry *e,
    size_t n, unsigned char root[SNAP_PACK_OID], char **cause)
{
	return snap_pack_tree(p, e, n, 0, root, cause);
}

static void
snap_pack_be16(unsigned char *b, uint16_t v)
{
	b[0] = (unsigned char)(v >> 8);
	b[1] = (unsigned char)v;
}

/* One index entry: stat data, mode, id, flags, path, 1-8 NULs to 8 bytes. */
static void
snap_pack_index_entry(struct buf *idx, const struct snap_pack_entry *e,
    const struct stat *sb)
{
	unsigned char b[62], pad[8] = { 0 };
	size_t len = strlen(e->path), padn;
	uint32_t v[10];
	int i;

	v[0] = (uint32_t)sb->st_ctim.tv_sec;
	v[1] = (uint32_t)sb->st_ctim.tv_nsec;
	v[2] = (uint32_t)sb->st_mtim.tv_sec;
	v[3] = (uint32_t)sb->st_mtim.tv_nsec;
	v[4] = (uint32_t)sb->st_dev;
	v[5] = (uint32_t)sb->st_ino;
	v[6] = e->mode;
	v[7] = (uint32_t)sb->st_uid;
	v[8] = (uint32_t)sb->st_gid;
	v[9] = (uint32_t)sb->st_size;
	for (i = 0; i < 10; i++)
		snap_pack_be32(b + 4 * i, v[i]);
	memcpy(b + 40, e->oid, SNAP_PACK_OID);
	snap_pack_be16(b + 60, (uint16_t)(len < 0xfff ? len : 0xfff));
	buf_add(idx, b, sizeof b);
	buf_add(idx, e->path, len);
	padn = 8 - (sizeof b + len) % 8;
	buf_add(idx, pad, padn);
}

int
snap_pack_index(const char *path, const struct snap_pack_entry *e,
    const struct stat *sb, size_t n, char **cause)
{
	unsigned char head[12] = { 'D', 'I', 'R', 'C', 0, 0, 0, 2 };
	unsigned char sum[SNAP_PACK_OID];
	char *tmp = xprintf("%s.lock", path);
	struct buf idx;
	size_t i, off = 0;
	ssize_t w;
	int fd, r = -1;

	buf_init(&idx);
	snap_pack_be32(head + 8, (uint32_t)n);
	buf_add(&idx, head, sizeof head);
	for (i = 0; i < n; i++)
		snap_pack_index_entry(&idx, &e[i], &sb[i]);
	EVP_Digest(idx.data, idx.len, sum, NULL, EVP_sha1(), NULL);
	buf_add(&idx, sum, sizeof sum);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	    0600);
	if (fd == -1) {
		*cause = xprintf("cannot create %s: %s", tmp, strerror(errno));
		goto out;
	}
	while (off < idx.len) {
		w = write(fd, idx.data + off, idx.len - off);
		if (w == -1 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	if (off < idx.len || close(fd) == -1 || rename(tmp, path) == -1) {
		*cause = xprintf("cannot write %s: %s", path, strerror(errno));
		if (off < idx.len)
			close(fd);
		unlink(tmp);
		goto out;
	}
	r = 0;
out:
	buf_free(&idx);
	free(tmp);
	return r;
}

/* Whether NAME (LEN bytes) may be walked: not empty, "." or "..". */
static bool
snap_pack_component(const char *name, size_t len)
{
	return len > 0 && !(len == 1 && name[0] == '.') &&
	    !(len == 2 && name[0] == '.' && name[1] == '.');
}

/*
 * Opens the directory holding PATH (relative to WT) one name at a time,
 * never through a symlink; its fd (WT itself: not to be closed) and, in
 * NAME, PATH's last name. -1 if a component is not a directory, or is
 * empty, "." or ".." (EINVAL): the list comes from git, which never
 * gives such a path, but a name that climbs out of WT is not followed
 * whoever wrote it.
 */
int
snap_pack_parent(int wt, const char *path, const char **name)
{
	const char *s = path, *slash;
	char part[256];
	int fd = wt, next;
	size_t len;

	while ((slash = strchr(s, '/')) != NULL) {
		len = (size_t)(slash - s);
		next = -1;
		if (!snap_pack_component(s, len))
			errno = EINVAL;
		else if (len >= sizeof part)
			errno = ENAMETOOLONG;
		else {
			memcpy(part, s, len);
			part[len] = '\0';
			next = openat(fd, part, O_RDONLY | O_DIRECTORY |
			    O_NOFOLLOW | O_CLOEXEC);
		}
		if (fd != wt)
			close(fd);
		if (next == -1)
			return -1;
		fd = next;
		s = slash + 1;
	}
	if (!snap_pack_component(s, strlen(s))) {
		if (fd != wt)
			close(fd);
		errno = EINVAL;
		return -1;
	}
	*name = s;
	return fd;
}

/* Reads up to LEN bytes of FD into BUF: how many (fewer at its end), -1. */
static ssize_t
snap_pack_fill(int fd, unsigned char *buf, size_t len)
{
	size_t got = 0;
	ssize_t n;

	while (got < len) {
		n = read(fd, buf + got, len - got);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			return -1;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

/* Takes back everything written since START (its checksum too). */
static int
snap_pack_undo(struct snap_pack *p, uint64_t start, char **cause)
{
	uint64_t ondisk = p->offset - p->len;

	if (start >= ondisk)
		p->len -= (size_t)(p->offset - start);
	else {
		p->len = 0;
		if (ftruncate(p->fd, (off_t)start) == -1 ||
		    lseek(p->fd, (off_t)start, SEEK_SET) == -1) {
			SNAP_PACK_CAUSE(p, cause, "cannot write %s: %s", p->tmp,
			    strerror(errno));
			return -1;
		}
	}
	p->offset = start;
	snap_pack_enter(p);
	EVP_MD_CTX_copy_ex(p->sum, p->saved);
	snap_pack_leave(p);
	return 0;
}

/*
 * Whether the LEN bytes at A and B in the pack are the same: two entries
 * of one size have their zlib streams laid out alike, so equal streams
 * are equal contents.
 */
static int
snap_pack_same_at(struct snap_pack *p, uint64_t a, uint64_t b, uint64_t len,
    char **cause)
{
	unsigned char x[4096], y[4096];
	size_t n;

	if (p->len > 0 && snap_pack_flush(p, cause) == -1)
		return -1;
	while (len > 0) {
		n = len > sizeof x ? sizeof x : (size_t)len;
		if (pread(p->fd, x, n, (off_t)a) != (ssize_t)n ||
		    pread(p->fd, y, n, (off_t)b) != (ssize_t)n) {
			SNAP_PACK_CAUSE(p, cause, "cannot read back %s",
			    p->tmp);
			return -1;
		}
		if (memcmp(x, y, n) != 0)
			return 0;
		a += n;
		b += n;
		len -= n;
	}
	return 1;
}

/*
 * The next CHUNK bytes of FD into P's read buffer, and into the blob's
 * id: 0; 1 if the file ended before them (it shrank); -1 with *CAUSE.
 */
static int
snap_pack_read(struct snap_pack *p, int fd, size_t chunk, const char *path,
    char **cause)
{
	ssize_t n;

	if (p->stop != NULL && atomic_load(p->stop)) {
		SNAP_PACK_CAUSE(p, cause, "stopped");
		return -1;
	}
	if ((n = snap_pack_fill(fd, p->rbuf, chunk)) == -1) {
		SNAP_PACK_CAUSE(p, cause, "cannot read %s: %s", path,
		    strerror(errno));
		return -1;
	}
	if ((size_t)n != chunk)
		return 1;
	EVP_DigestUpdate(p->id, p->rbuf, chunk);
	return 0;
}

/* SIZE bytes of FD as a zlib stream of stored blocks (see snap_pack_read). */
static int
snap_pack_body_stored(struct snap_pack *p, int fd, uint64_t size,
    const char *path, char **cause)
{
	unsigned char zh[2] = { 0x78, 0x01 }, bh[5], tail[4];
	uint32_t adler = (uint32_t)adler32_z(0, NULL, 0);
	uint64_t left = size;
	size_t chunk;
	int r;

	if (snap_pack_put(p, zh, sizeof zh, cause) == -1)
		return -1;
	do {
		chunk = left > SNAP_PACK_BLOCK ? SNAP_PACK_BLOCK : (size_t)left;
		if ((r = snap_pack_read(p, fd, chunk, path, cause)) != 0)
			return r;
		bh[0] = chunk == left;          /* BFINAL, BTYPE 00 */
		bh[1] = (unsigned char)chunk;
		bh[2] = (unsigned char)(chunk >> 8);
		bh[3] = (unsigned char)~chunk;
		bh[4] = (unsigned char)(~chunk >> 8);
		if (snap_pack_put(p, bh, sizeof bh, cause) == -1 ||
		    snap_pack_put(p, p->rbuf, chunk, cause) == -1)
			return -1;
		adler = (uint32_t)adler32_z(adler, p->rbuf, chunk);
		left -= chunk;
	} while (left > 0);
	snap_pack_be32(tail, adler);
	return snap_pack_put(p, tail, sizeof tail, cause);
}

/* Feeds Z's input to deflate with FLUSH, into the pack. */
static int
snap_pack_deflate(struct snap_pack *p, z_stream *z, int flush, char **cause)
{
	unsigned char out[SNAP_PACK_BLOCK];

	do {
		z->next_out = out;
		z->avail_out = sizeof out;
		if (deflate(z, flush) == Z_STREAM_ERROR) {
			SNAP_PACK_CAUSE(p, cause, "cannot compress: %s",
			    z->msg != NULL ? z->msg : "zlib failed");
			return -1;
		}
		if (snap_pack_put(p, out, sizeof out - z->avail_out,
		    cause) == -1)
			return -1;
	} while (z->avail_out == 0);
	return 0;
}

/*
 * SIZE bytes of FD deflated (see snap_pack_read): holes are runs of
 * zeros, which deflate takes down a thousandfold. The default level:
 * on zeros it is as fast as the fastest and four times smaller.
 */
static int
snap_pack_body_deflated(struct snap_pack *p, int fd, uint64_t size,
    const char *path, char **cause)
{
	z_stream z;
	uint64_t left = size;
	size_t chunk;
	int r = 0, zr;

	memset(&z, 0, sizeof z);
	snap_pack_enter(p);
	zr = deflateInit(&z, Z_DEFAULT_COMPRESSION);
	snap_pack_leave(p);
	if (zr != Z_OK) {
		SNAP_PACK_CAUSE(p, cause, "cannot compress %s: zlib error %d",
		    path, zr);
		return -1;
	}
	while (r == 0 && left > 0) {
		chunk = left > SNAP_PACK_BLOCK ? SNAP_PACK_BLOCK :
		    (size_t)left;
		if ((r = snap_pack_read(p, fd, chunk, path, cause)) != 0)
			break;
		left -= chunk;
		z.next_in = p->rbuf;
		z.avail_in = (uInt)chunk;
		r = snap_pack_deflate(p, &z, left == 0 ? Z_FINISH : Z_NO_FLUSH,
		    cause);
	}
	snap_pack_enter(p);
	deflateEnd(&z);
	snap_pack_leave(p);
	return r;
}

/*
 * Whether most of a file is holes: its blocks hold less than half of
 * its size (a file of one block or less is stored, whatever it is).
 */
static bool
snap_pack_sparse(const struct stat *sb)
{
	return sb->st_size > SNAP_PACK_BLOCK &&
	    (uint64_t)sb->st_blocks * 512 < (uint64_t)sb->st_size / 2;
}

/* One zlib stream of the pack, inflated a piece at a time. */
struct snap_pack_inflater {
	z_stream z;
	uint64_t at;              /* where its next input is */
	unsigned char in[4096];
	bool end;
};

/* Up to LEN bytes of S into OUT: how many (fewer at its end), -1. */
static ssize_t
snap_pack_inflate(struct snap_pack *p, struct snap_pack_inflater *s,
    unsigned char *out, size_t len)
{
	ssize_t n;
	int zr;

	s->z.next_out = out;
	s->z.avail_out = (uInt)len;
	while (s->z.avail_out > 0 && !s->end) {
		if (s->z.avail_in == 0) {
			n = pread(p->fd, s->in, sizeof s->in, (off_t)s->at);
			if (n <= 0)
				return -1;
			s->at += (uint64_t)n;
			s->z.next_in = s->in;
			s->z.avail_in = (uInt)n;
		}
		zr = inflate(&s->z, Z_NO_FLUSH);
		if (zr == Z_STREAM_END)
			s->end = true;
		else if (zr != Z_OK)
			return -1;
	}
	return (ssize_t)(len - s->z.avail_out);
}

/*
 * Whether the zlib streams at A and B in the pack hold the same bytes:
 * one content stored once and deflated once (a sparse and a dense copy)
 * is laid out apart, so it is compared inflated.
 */
static int
snap_pack_same_inflated(struct snap_pack *p, uint64_t a, uint64_t b,
    char **cause)
{
	struct snap_pack_inflater s[2];
	unsigned char x[4096], y[4096];
	ssize_t nx, ny;
	int r = -1, i;

	if (p->len > 0 && snap_pack_flush(p, cause) == -1)
		return -1;
	memset(s, 0, sizeof s);
	s[0].at = a;
	s[1].at = b;
	snap_pack_enter(p);
	for (i = 0; i < 2; i++)
		if (inflateInit(&s[i].z) != Z_OK)
			fatalx("out of memory");
	snap_pack_leave(p);
	do {
		nx = snap_pack_inflate(p, &s[0], x, sizeof x);
		ny = snap_pack_inflate(p, &s[1], y, sizeof y);
		if (nx == -1 || ny == -1) {
			SNAP_PACK_CAUSE(p, cause, "cannot read back %s",
			    p->tmp);
			goto out;
		}
	} while (nx == ny && memcmp(x, y, (size_t)nx) == 0 && nx > 0);
	r = nx == 0 && ny == 0;
out:
	snap_pack_enter(p);
	inflateEnd(&s[0].z);
	inflateEnd(&s[1].z);
	snap_pack_leave(p);
	return r;
}

/*
 * Whether O, in the pack, holds what was just written at DATA (LEN bytes
 * of zlib stream, DEFLATED or stored) for an id seen again.
 */
static int
snap_pack_same_blob(struct snap_pack *p, const struct snap_pack_obj *o,
    uint64_t size, uint64_t data, bool deflated, char **cause)
{
	/* Of another size, the streams are laid out apart. */
	if (o->len != size)
		return 0;
	if (o->deflated || deflated)
		return snap_pack_same_inflated(p, o->data, data, cause);
	return snap_pack_same_at(p, o->data, data, p->offset - data, cause);
}

/*
 * The blob just written at START (its zlib stream at DATA, SIZE bytes
 * inflated, DEFLATED or stored), of id OID, kept as a new object, or
 * taken back if the pack holds its content already: 0; -1 with *CAUSE
 * (two contents of one id: a crafted collision).
 */
static int
snap_pack_blob_keep(struct snap_pack *p, const unsigned char *oid,
    uint64_t start, uint64_t data, uint64_t size, bool deflated,
    char **cause)
{
	struct snap_pack_obj *o;
	uint32_t *slot = snap_pack_slot(p, oid);
	char hex[2 * SNAP_PACK_OID + 1];
	int r;

	if (*slot != 0) {
		if ((r = snap_pack_same_blob(p, &p->objs[*slot - 1], size, data,
		    deflated, cause)) == -1)
			return -1;
		if (r == 0) {
			snap_pack_hex(oid, hex);
			SNAP_PACK_CAUSE(p, cause,
			    "two different contents have the same "
			    "SHA-1 id %s: a crafted collision", hex);
			return -1;
		}
		return snap_pack_undo(p, start, cause);
	}
	if (p->n == p->want) {
		SNAP_PACK_CAUSE(p, cause, "more objects than the %u announced",
		    p->want);
		return -1;
	}
	o = &p->objs[p->n++];
	memcpy(o->oid, oid, SNAP_PACK_OID);
	o->offset = start;
	o->data = data;
	o->len = (size_t)size;
	o->deflated = deflated;
	o->crc = p->crc;
	*slot = (uint32_t)p->n;
	return 0;
}

/*
 * The blob of a file read whole by a reading thread (F: its bytes and
 * id) into P, laid out as snap_pack_blob streams it: the same bytes.
 */
static int
snap_pack_blob_fetched(struct snap_pack *p, const struct snap_pack_fetched *f,
    char **cause)
{
	unsigned char tail[4];
	uint64_t start = p->offset, data;

	snap_pack_enter(p);
	EVP_MD_CTX_copy_ex(p->saved, p->sum);
	snap_pack_leave(p);
	if (snap_pack_head(p, SNAP_PACK_BLOB, f->len, cause) == -1)
		return -1;
	data = p->offset;
	if (snap_pack_stored(p, f->data, f->len, cause) == -1)
		return -1;
	snap_pack_be32(tail, (uint32_t)adler32_z(adler32_z(0, NULL, 0),
	    f->data, f->len));
	if (snap_pack_put(p, tail, sizeof tail, cause) == -1)
		return -1;
	return snap_pack_blob_keep(p, f->e.oid, start, data, f->len, false,
	    cause);
}

/*
 * Streams the blob of FD (SB its fstat data) into P a block at a time,
 * so that memory stays bounded whatever its size (a sparse 1 TiB file):
 * each block is read, hashed into the id and copied into the pack once
 * (deflated if the file is sparse). The id is known only at the end, so
 * content already in the pack is written, then taken back. 1 (nothing
 * written) if the file did not hold SB's size or changed while read; -1
 * with *CAUSE.
 */
static int
snap_pack_blob(struct snap_pack *p, int fd, const struct stat *sb,
    const char *path, unsigned char oid[SNAP_PACK_OID], char **cause)
{
	struct stat after;
	unsigned char extra;
	uint64_t size = (uint64_t)sb->st_size, start = p->offset, data;
	char head[64];
	bool deflated = snap_pack_sparse(sb);
	ssize_t n;
	int hl, r;

	hl = snprintf(head, sizeof head, "blob %ju", (uintmax_t)size);
	snap_pack_enter(p);
	EVP_MD_CTX_copy_ex(p->saved, p->sum);
	EVP_DigestInit_ex(p->id, EVP_sha1(), NULL);
	snap_pack_leave(p);
	EVP_DigestUpdate(p->id, head, (size_t)hl + 1);
	if (snap_pack_head(p, SNAP_PACK_BLOB, size, cause) == -1)
		return -1;
	data = p->offset;
	r = deflated ? snap_pack_body_deflated(p, fd, size, path, cause) :
	    snap_pack_body_stored(p, fd, size, path, cause);
	if (r == -1)
		return -1;
	if (r == 1)
		goto changed;                   /* shorter than it was */
	if ((n = snap_pack_fill(fd, &extra, 1)) == -1 || fstat(fd, &after) == -1)
		goto unreadable;
	if (n != 0 || !path_stat_unchanged(sb, &after))
		goto changed;                   /* longer, or changed */
	snap_pack_enter(p);
	EVP_DigestFinal_ex(p->id, oid, NULL);
	snap_pack_leave(p);
	return snap_pack_blob_keep(p, oid, start, data, size, deflated, cause);

unreadable:
	SNAP_PACK_CAUSE(p, cause, "cannot read %s: %s", path, strerror(errno));
	return -1;
changed:
	return snap_pack_undo(p, start, cause) == -1 ? -1 : 1;
}

/*
 * On a reading thread: the file FD (SB its fstat data) read whole into
 * P's slot and its blob's id into OID, with the checks snap_pack_blob
 * makes: 1 if it did not hold SB's size or changed while read;
 * SNAP_PACK_WRITERS if it is large or sparse (streamed by the writer);
 * -1 with *CAUSE.
 */
static int
snap_pack_fetch(struct snap_pack *p, int fd, const struct stat *sb,
    const char *path, unsigned char oid[SNAP_PACK_OID], char **cause)
{
	struct snap_pack_fetched *f = p->fetch;
	uint64_t size = (uint64_t)sb->st_size;
	struct stat after;
	char head[64];
	ssize_t n;
	int hl;

	if (size > SNAP_PACK_AHEAD_MAX || snap_pack_sparse(sb))
		return SNAP_PACK_WRITERS;
	if (p->stop != NULL && atomic_load(p->stop)) {
		SNAP_PACK_CAUSE(p, cause, "stopped");
		return -1;
	}
	/* One byte more than its size: a file that grew is seen. */
	if ((n = snap_pack_fill(fd, f->data, (size_t)size + 1)) == -1 ||
	    fstat(fd, &after) == -1) {
		SNAP_PACK_CAUSE(p, cause, "cannot read %s: %s", path,
		    strerror(errno));
		return -1;
	}
	if ((uint64_t)n != size || !path_stat_unchanged(sb, &after))
		return 1;
	f->len = (size_t)size;
	hl = snprintf(head, sizeof head, "blob %ju", (uintmax_t)size);
	snap_pack_enter(p);
	EVP_DigestInit_ex(p->id, EVP_sha1(), NULL);
	snap_pack_leave(p);
	EVP_DigestUpdate(p->id, head, (size_t)hl + 1);
	EVP_DigestUpdate(p->id, f->data, f->len);
	snap_pack_enter(p);
	EVP_DigestFinal_ex(p->id, oid, NULL);
	snap_pack_leave(p);
	return 0;
}

/*
 * Whether git would take NAME, a component of a path, as it is: git
 * refuses ".git" in any case, with the dots and spaces NTFS drops, its
 * short name "git~1", a backslash or colon (core.protectNTFS, on by
 * default), and a link named like .gitmodules. A tree holding such a
 * name could never be read back by read-tree, so undo to it would fail:
 * such names are the git path's, which leaves them out as git add does.
 */
static bool
snap_pack_name_plain(const char *name, size_t len, bool link)
{
	size_t n = len;

	if (len == 0 || (len == 1 && name[0] == '.') ||
	    (len == 2 && name[0] == '.' && name[1] == '.'))
		return false;
	if (memchr(name, '\\', len) != NULL || memchr(name, ':', len) != NULL)
		return false;
	while (n > 0 && (name[n - 1] == '.' || name[n - 1] == ' '))
		n--;
	if (n == 4 && strncasecmp(name, ".git", 4) == 0)
		return false;
	if (len >= 4 && strncasecmp(name, "git~", 4) == 0)
		return false;
	if (link && (strncasecmp(name, ".git", 4) == 0 ||
	    strncasecmp(name, ".mailmap", 8) == 0 ||
	    memchr(name, '~', len) != NULL))
		return false;
	return true;
}

/* Whether every component of PATH is one git takes as it is (above). */
static bool
snap_pack_path_plain(const char *path, bool link)
{
	const char *p = path, *slash;

	for (;;) {
		slash = strchr(p, '/');
		if (slash == NULL)
			return snap_pack_name_plain(p, strlen(p), link);
		if (!snap_pack_name_plain(p, (size_t)(slash - p), false))
			return false;
		p = slash + 1;
	}
}

/*
 * The directory holding PATH, as snap_pack_parent opens it, kept for the
 * files after it in that directory (the paths come sorted: a directory's
 * files are together). Not to be closed unless it is neither WT nor P's.
 */
static int
snap_pack_dir(struct snap_pack *p, int wt, const char *path,
    const char **name)
{
	const char *slash = strrchr(path, '/');
	size_t len = slash != NULL ? (size_t)(slash - path) + 1 : 0;
	int fd;

	if (p->dirfd != -1 && len > 0 && len == p->dirlen &&
	    memcmp(path, p->dirpath, len) == 0) {
		*name = path + len;
		if (snap_pack_component(*name, strlen(*name)))
			return p->dirfd;
		errno = EINVAL;
		return -1;
	}
	if ((fd = snap_pack_parent(wt, path, name)) == -1 || fd == wt ||
	    len >= sizeof p->dirpath)
		return fd;
	if (p->dirfd != -1)
		close(p->dirfd);
	p->dirfd = fd;
	p->dirlen = len;
	memcpy(p->dirpath, path, len);
	return fd;
}

/*
 * One file of the work tree into P, as git add stores it: a regular
 * file's bytes (mode 100755 if its owner may run it, else 100644), a
 * symlink's target (120000, never followed). 1 if it changed while read
 * or is of another kind (a directory: a nested repository); 2 (and
 * *CAUSE) if it is not there; -1 with *CAUSE.
 */
static int
snap_pack_file(struct snap_pack *p, int wt, const char *path,
    struct snap_pack_entry *e, struct stat *sb, char **cause)
{
	const char *name;
	char target[4096];
	ssize_t len;
	int dir, fd, r = 1;

	/*
	 * git ls-files -o lists a nested repository as "sub/": git add
	 * goes into it (snap-take.c), which is the git path's work.
	 */
	if (*path == '\0' || path[strlen(path) - 1] == '/' ||
	    !snap_pack_path_plain(path, false))
		return 1;
	if ((dir = snap_pack_dir(p, wt, path, &name)) == -1 ||
	    fstatat(dir, name, sb, AT_SYMLINK_NOFOLLOW) == -1) {
		/* Gone since it was listed: git add would not see it either. */
		r = errno == ENOENT || errno == ENOTDIR ? 2 : -1;
		SNAP_PACK_CAUSE(p, cause, "cannot read %s: %s", path,
		    strerror(errno));
		if (dir != -1 && dir != wt && dir != p->dirfd)
			close(dir);
		return r;
	}
	e->path = path;
	if (S_ISLNK(sb->st_mode) && !snap_pack_path_plain(path, true)) {
		r = 1;
	} else if (S_ISLNK(sb->st_mode) && p->fetch != NULL) {
		r = SNAP_PACK_WRITERS;
	} else if (S_ISLNK(sb->st_mode)) {
		len = readlinkat(dir, name, target, sizeof target);
		e->mode = 0120000;
		if (len >= 0 && (size_t)len < sizeof target)
			r = snap_pack_add(p, SNAP_PACK_BLOB, target, (size_t)len,
			    e->oid, cause);
	} else if (S_ISREG(sb->st_mode)) {
		dev_t dev = sb->st_dev;
		ino_t ino = sb->st_ino;

		fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
		    O_CLOEXEC);
		/* Another file renamed over it since the lstat: git's turn. */
		if (fd == -1 || fstat(fd, sb) == -1 || !S_ISREG(sb->st_mode) ||
		    sb->st_dev != dev || sb->st_ino != ino)
			r = 1;
		else {
			e->mode = (sb->st_mode & S_IXUSR) ? 0100755 : 0100644;
			r = p->fetch != NULL ?
			    snap_pack_fetch(p, fd, sb, path, e->oid, cause) :
			    snap_pack_blob(p, fd, sb, path, e->oid, cause);
		}
		if (fd != -1)
			close(fd);
	}
	if (dir != wt && dir != p->dirfd)
		close(dir);
	if (r == -1 && *cause == NULL)
		SNAP_PACK_CAUSE(p, cause, "cannot read %s: %s", path,
		    strerror(errno));
	return r;
}

static int
snap_pack_strcmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int
snap_pack_files(struct snap_pack *p, int wt, char **paths, size_t n,
    struct snap_pack_entry *e, struct stat *sb, char **cause)
{
	size_t i;
	int r = 0;

	qsort(paths, n, sizeof *paths, snap_pack_strcmp);
	for (i = 0; i < n && r == 0; i++)
		r = snap_pack_file(p, wt, paths[i], &e[i], &sb[i], cause);
	return r == 2 ? -1 : r;
}

/* ---- a first snapshot's files, written on a helper thread ---- */

/* Progress is told to the loop every this many files. */
#define SNAP_PACK_JOB_STEP 250

struct snap_pack_job {
	struct event_base *base;
	struct event *ev;         /* the read end of PIPE, on BASE */
	int pipe[2];              /* the thread's "more done" and "over" */
	struct thread thread;
	char *gitdir;
	char *index;
	int wt;                   /* the work tree (O_DIRECTORY) */
	struct buf list;          /* the files, NUL-separated */
	atomic_bool stop;         /* the job is freed: give up */
	atomic_bool over;         /* the fields below are final */
	atomic_size_t files;      /* stored so far */
	int result;
	char *cause;
	char tree[2 * SNAP_PACK_OID + 1];
	struct buf modes;         /* as find -printf '%y %m %p\\0' gives them */
	char *worktree;
	char *seed_index;         /* git's index of a fresh worktree (snap_pack_seed), or NULL */
	struct snap_seed *seed_read; /* read already, or NULL (then the job reads it) */
	unsigned char seed_tree[SNAP_PACK_OID];
	char *seed_cause;         /* why it was not used */
	struct strv converted;    /* files read all the same (sorted) */
	struct buf borrowed;      /* ids of blobs taken from it, not stored, a line each */
	snap_pack_job_cb done;
	void (*progress)(void *, int64_t);
	void *arg;
};

/* The files of the list, sorted bytewise (index order), each once; caller frees. */
static char **
snap_pack_job_paths(struct buf *list, size_t *n)
{
	char *s, *end = list->data + list->len, **paths;
	size_t i = 0, k;

	*n = 0;
	for (s = list->data; s < end; s += strlen(s) + 1)
		(*n)++;
	paths = xcalloc(*n > 0 ? *n : 1, sizeof *paths);
	for (s = list->data; s < end; s += strlen(s) + 1)
		paths[i++] = s;
	qsort(paths, *n, sizeof *paths, snap_pack_strcmp);
	/* A worktree's tracked names come beside git's listing of the rest. */
	for (i = *n > 0 ? 1 : 0, k = i; i < *n; i++) {
		if (strcmp(paths[i], paths[k - 1]) != 0)
			paths[k++] = paths[i];
	}
	*n = k;
	return paths;
}

/*
 * The objects the pack will hold if every file is stored and no content
 * comes twice: a blob per file, a tree per directory and the top one.
 * Announced exactly, the pack's checksum is taken as it is written;
 * otherwise the header is corrected and the whole pack read back and
 * hashed again at its end (snap_pack_recount), a second pass over every
 * byte. PATHS are sorted: a directory's files come together.
 */
static uint32_t
snap_pack_job_count(char **paths, size_t n)
{
	const char *prev = "", *slash;
	size_t i, len, count = n + 1;

	for (i = 0; i < n; i++) {
		for (slash = strchr(paths[i], '/'); slash != NULL;
		    slash = strchr(slash + 1, '/')) {
			len = (size_t)(slash - paths[i]) + 1;
			if (strncmp(prev, paths[i], len) != 0)
				count++;
		}
		prev = paths[i];
	}
	return count > UINT32_MAX ? UINT32_MAX : (uint32_t)count;
}

/* Tells the loop (a lost byte is fine: one is unread already). */
static void
snap_pack_job_poke(struct snap_pack_job *j)
{
	char c = 0;

	/* Full (EAGAIN): the loop has bytes to read already. */
	if (write(j->pipe[1], &c, 1) == -1)
		return;
}

/* ---- reading threads: files read and hashed ahead of the writer ---- */

/* The most reading threads (the writer's own thread not counted). */
#define SNAP_PACK_READERS_MAX 2

unsigned snap_pack_job_readers = 1;

struct snap_pack_ahead;

struct snap_pack_reader {
	struct thread thread;
	struct snap_pack_ahead *a;
	struct snap_pack *rp;     /* its id, directory and gate; no file */
	size_t first;             /* it reads files FIRST, FIRST + readers... */
	bool waits;               /* for a slot, until TAKEN reaches WAKE */
	size_t wake;
};

/*
 * File i is read by reader i % READERS into slot i % SNAP_PACK_AHEAD,
 * and taken from there by the writer, in order: the pack is the one the
 * writer alone writes. Nobody waits on MU with the clone gate held.
 */
struct snap_pack_ahead {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool quit;                /* the writer is done: stop reading */
	unsigned running;         /* readers not yet out of their loop */
	bool writer_waits;        /* for a slot, until file WRITER_WAKE is in */
	size_t writer_wake;
	size_t taken;             /* files the writer has taken */
	char **paths;
	size_t n;
	int wt;
	unsigned readers;
	struct snap_pack_reader reader[SNAP_PACK_READERS_MAX];
	struct snap_pack_fetched slot[SNAP_PACK_AHEAD];
};

/*
 * A thread that must wait is woken only once the other side is this
 * many files on, not at each file: a wake-up per file (10,000 of them)
 * cost more than the second thread saved.
 */
#define SNAP_PACK_AHEAD_WAKE 16

/* The reader waits until slot F is free for its file I; false if told to quit. */
static bool
snap_pack_ahead_wait_free(struct snap_pack_ahead *a,
    struct snap_pack_reader *rd, struct snap_pack_fetched *f, size_t i)
{
	bool ok;

	pthread_mutex_lock(&a->mu);
	while (!a->quit && (f->want != i || f->ready)) {
		rd->waits = true;
		rd->wake = i - SNAP_PACK_AHEAD + SNAP_PACK_AHEAD_WAKE;
		pthread_cond_wait(&a->cv, &a->mu);
	}
	rd->waits = false;
	ok = !a->quit;
	pthread_mutex_unlock(&a->mu);
	return ok;
}

/* Slot F is filled for file I: the writer is woken if it waits and the time has come. */
static void
snap_pack_ahead_filled(struct snap_pack_ahead *a, struct snap_pack_fetched *f,
    size_t i)
{
	pthread_mutex_lock(&a->mu);
	f->ready = true;
	if (a->writer_waits && (i >= a->writer_wake || f->r == -1 ||
	    f->r == 1))
		pthread_cond_broadcast(&a->cv);
	pthread_mutex_unlock(&a->mu);
}

/* The writer waits until slot F holds file I; false if no reader is left to fill it. */
static bool
snap_pack_ahead_wait_ready(struct snap_pack_ahead *a,
    struct snap_pack_fetched *f, size_t i)
{
	bool ok;

	pthread_mutex_lock(&a->mu);
	while (a->running > 0 && (f->want != i || !f->ready)) {
		a->writer_waits = true;
		a->writer_wake = i + SNAP_PACK_AHEAD_WAKE < a->n ?
		    i + SNAP_PACK_AHEAD_WAKE : a->n - 1;
		pthread_cond_wait(&a->cv, &a->mu);
	}
	a->writer_waits = false;
	ok = f->want == i && f->ready;
	pthread_mutex_unlock(&a->mu);
	return ok;
}

/* Slot F is taken: free for the file SNAP_PACK_AHEAD on; readers waiting woken when due. */
static void
snap_pack_ahead_taken(struct snap_pack_ahead *a, struct snap_pack_fetched *f)
{
	unsigned k;

	pthread_mutex_lock(&a->mu);
	f->want += SNAP_PACK_AHEAD;
	f->ready = false;
	a->taken++;
	for (k = 0; k < a->readers; k++)
		if (a->reader[k].waits && (a->taken >= a->reader[k].wake ||
		    a->taken == a->n)) {
			pthread_cond_broadcast(&a->cv);
			break;
		}
	pthread_mutex_unlock(&a->mu);
}

/*
 * A reading thread: its files read and hashed into their slots, as
 * snap_pack_file would store them, until one fails (the writer stops
 * there) or the writer says to quit. It allocates in the gate only.
 */
static void
snap_pack_reader_main(void *arg)
{
	struct snap_pack_reader *rd = arg;
	struct snap_pack_ahead *a = rd->a;
	struct snap_pack_fetched *f;
	size_t i;
	int r;

	for (i = rd->first; i < a->n; i += a->readers) {
		f = &a->slot[i % SNAP_PACK_AHEAD];
		if (!snap_pack_ahead_wait_free(a, rd, f, i))
			break;
		rd->rp->fetch = f;
		memset(&f->e, 0, sizeof f->e);
		r = f->r = snap_pack_file(rd->rp, a->wt, a->paths[i], &f->e,
		    &f->sb, &f->cause);
		/* Filled, the slot is the writer's: F is not read again. */
		snap_pack_ahead_filled(a, f, i);
		if (r == -1 || r == 1)
			break;
	}
	pthread_mutex_lock(&a->mu);
	a->running--;
	pthread_cond_broadcast(&a->cv);
	pthread_mutex_unlock(&a->mu);
}

/* A reader's own pack-like state: no file, only what reading needs. */
static struct snap_pack *
snap_pack_reader_new(atomic_bool *stop)
{
	struct snap_pack *rp = xcalloc(1, sizeof *rp);

	rp->fd = rp->dirfd = -1;
	rp->gated = true;
	rp->stop = stop;
	if ((rp->id = EVP_MD_CTX_new()) == NULL)
		fatalx("out of memory");
	return rp;
}

static void
snap_pack_reader_free(struct snap_pack *rp)
{
	if (rp == NULL)
		return;
	if (rp->dirfd != -1)
		close(rp->dirfd);
	EVP_MD_CTX_free(rp->id);
	free(rp);
}

/*
 * The readers told to quit and, once out of their loops (so that none
 * waits for the gate), joined and freed in the gate.
 */
static void
snap_pack_ahead_end(struct snap_pack_ahead *a)
{
	unsigned k;
	size_t i;

	if (a == NULL)
		return;
	pthread_mutex_lock(&a->mu);
	a->quit = true;
	pthread_cond_broadcast(&a->cv);
	while (a->running > 0)
		pthread_cond_wait(&a->cv, &a->mu);
	pthread_mutex_unlock(&a->mu);
	clone_gate_enter();
	for (k = 0; k < SNAP_PACK_READERS_MAX; k++) {
		thread_join(&a->reader[k].thread);
		snap_pack_reader_free(a->reader[k].rp);
	}
	for (i = 0; i < SNAP_PACK_AHEAD; i++) {
		free(a->slot[i].cause);
		free(a->slot[i].data);
	}
	pthread_cond_destroy(&a->cv);
	pthread_mutex_destroy(&a->mu);
	free(a);
	clone_gate_leave();
}

/*
 * File I of the list into P, from its slot once its reader filled it (a
 * link, a large or sparse file read by the writer itself): as
 * snap_pack_file answers, E and SB filled for a file stored.
 */
static int
snap_pack_ahead_take(struct snap_pack_ahead *a, struct snap_pack *p,
    size_t i, struct snap_pack_entry *e, struct stat *sb, char **cause)
{
	struct snap_pack_fetched *f = &a->slot[i % SNAP_PACK_AHEAD];
	int r;

	if (!snap_pack_ahead_wait_ready(a, f, i)) {
		SNAP_PACK_CAUSE(p, cause, "stopped");
		return -1;
	}
	r = f->r;
	if (r == 0) {
		*e = f->e;
		*sb = f->sb;
		r = snap_pack_blob_fetched(p, f, cause);
	} else if (r == SNAP_PACK_WRITERS)
		r = snap_pack_file(p, a->wt, a->paths[i], e, sb, cause);
	else {
		*cause = f->cause;
		f->cause = NULL;
	}
	snap_pack_ahead_taken(a, f);
	return r;
}

/*
 * The readers of PATHS[0..N), started (in the gate: it allocates); NULL
 * if there are to be none or none starts (the writer then reads alone).
 */
static struct snap_pack_ahead *
snap_pack_ahead_start(struct snap_pack_job *j, char **paths, size_t n)
{
	struct snap_pack_ahead *a;
	unsigned k, readers = snap_pack_job_readers;
	size_t i;

	if (readers > SNAP_PACK_READERS_MAX)
		readers = SNAP_PACK_READERS_MAX;
	if (readers == 0 || n < 2)
		return NULL;
	clone_gate_enter();
	a = xcalloc(1, sizeof *a);
	pthread_mutex_init(&a->mu, NULL);
	pthread_cond_init(&a->cv, NULL);
	a->paths = paths;
	a->n = n;
	a->wt = j->wt;
	for (i = 0; i < SNAP_PACK_AHEAD; i++) {
		a->slot[i].want = i;
		a->slot[i].data = xmalloc(SNAP_PACK_AHEAD_MAX + 1);
	}
	for (k = 0; k < readers; k++) {
		a->reader[k].a = a;
		a->reader[k].first = k;
		a->reader[k].rp = snap_pack_reader_new(&j->stop);
	}
	a->readers = a->running = readers;
	for (k = 0; k < readers; k++)
		if (thread_spawn(&a->reader[k].thread, snap_pack_reader_main,
		    &a->reader[k]) != 0)
			break;
	clone_gate_leave();
	if (k < readers) {
		/* Those started stop at their first wait: the writer reads alone. */
		pthread_mutex_lock(&a->mu);
		a->running -= readers - k;
		pthread_mutex_unlock(&a->mu);
		snap_pack_ahead_end(a);
		return NULL;
	}
	return a;
}

/*
 * Each file into the pack; the clone gate is held only where the writer
 * allocates (P is gated meanwhile), so a jail's clone waits for no file,
 * and a stop is seen between blocks. Those gone since they were listed
 * are left out, as git add leaves them. N becomes the count kept.
 */
static int
snap_pack_job_files(struct snap_pack_job *j, struct snap_pack *p,
    char **paths, size_t *n, struct snap_pack_entry *e, struct stat *sb)
{
	struct snap_pack_ahead *a;
	size_t i, kept = 0;
	int r = 0;

	p->gated = true;
	p->stop = &j->stop;
	a = snap_pack_ahead_start(j, paths, *n);
	for (i = 0; i < *n && r == 0; i++) {
		if (atomic_load(&j->stop)) {
			SNAP_PACK_CAUSE(p, &j->cause, "stopped");
			r = -1;
			break;
		}
		r = a != NULL ? snap_pack_ahead_take(a, p, i, &e[kept],
		    &sb[kept], &j->cause) : snap_pack_file(p, j->wt, paths[i],
		    &e[kept], &sb[kept], &j->cause);
		if (r == 2) {
			snap_pack_enter(p);
			free(j->cause);
			snap_pack_leave(p);
			j->cause = NULL;
			r = 0;
		} else if (r == 0)
			kept++;
		if (kept % SNAP_PACK_JOB_STEP == 0 && r == 0) {
			atomic_store(&j->files, kept);
			snap_pack_job_poke(j);
		}
	}
	snap_pack_ahead_end(a);
	p->gated = false;
	p->stop = NULL;
	*n = kept;
	atomic_store(&j->files, kept);
	return r;
}

/* A record of MODES as find prints it, "TYPE MODE PATH\0"; gated. */
static void
snap_pack_job_mode(struct buf *modes, char type, mode_t mode,
    const char *path, size_t len)
{
	clone_gate_enter();
	buf_printf(modes, "%c %o ", type, (unsigned)(mode & 07777));
	buf_add(modes, path, len);
	buf_addc(modes, '\0');
	clone_gate_leave();
}

/*
 * The real modes of the top, of each regular file stored (as it was
 * read) and of each directory above one, the records find gives the
 * modes sidecar (snap_modes_paths lists the same), so that no find has
 * to lstat every file again. A directory is looked at without
 * following a link; one that is not there any more is left out, as find
 * leaves it out. On the thread, outside the clone gate.
 */
static void
snap_pack_job_modes(struct snap_pack_job *j, const struct snap_pack_entry *e,
    const struct stat *sb, size_t n)
{
	const char *prev = "", *slash, *name;
	char dir[4096];
	struct stat ds;
	size_t i, len;
	int fd;

	if (fstat(j->wt, &ds) == 0)
		snap_pack_job_mode(&j->modes, 'd', ds.st_mode, ".", 1);
	for (i = 0; i < n; i++) {
		if ((e[i].mode & 0170000) != 0100000)
			continue;
		for (slash = strchr(e[i].path, '/'); slash != NULL;
		    slash = strchr(slash + 1, '/')) {
			len = (size_t)(slash - e[i].path);
			if (strncmp(prev, e[i].path, len + 1) == 0 ||
			    len >= sizeof dir)
				continue;
			memcpy(dir, e[i].path, len);
			dir[len] = '\0';
			if ((fd = snap_pack_parent(j->wt, dir, &name)) == -1)
				continue;
			if (fstatat(fd, name, &ds, AT_SYMLINK_NOFOLLOW) == 0 &&
			    S_ISDIR(ds.st_mode))
				snap_pack_job_mode(&j->modes, 'd', ds.st_mode,
				    dir, len);
			if (fd != j->wt)
				close(fd);
		}
		snap_pack_job_mode(&j->modes, 'f', sb[i].st_mode, e[i].path,
		    strlen(e[i].path));
		prev = e[i].path;
	}
}

/* The trees, the pack put in place, then the index (what makes it count). */
static int
snap_pack_job_end(struct snap_pack_job *j, struct snap_pack *p,
    struct snap_pack_entry *e, struct stat *sb, size_t n)
{
	unsigned char root[SNAP_PACK_OID];

	if (snap_pack_trees(p, e, n, root, &j->cause) == -1) {
		snap_pack_abort(p);
		return -1;
	}
	if (snap_pack_finish(p, NULL, 0, &j->cause) == -1 ||
	    snap_pack_index(j->index, e, sb, n, &j->cause) == -1)
		return -1;
	snap_pack_hex(root, j->tree);
	return 0;
}

/*
 * The files of PATHS[0..*N) that git's checkout wrote and cached (the
 * job's seed) into KE and KSB, their ids into BORROWED, not to be read:
 * PATHS keeps the others, in order, and *N becomes their count. The
 * count taken; 0 if there is no seed or it is not to be believed (why is
 * logged). Outside the gate: it takes it for each file it allocates for.
 */
static size_t
snap_pack_job_seeded(struct snap_pack_job *j, char **paths, size_t *n,
    struct snap_pack_entry *ke, struct stat *ksb)
{
	struct snap_seed *sd;
	char hex[2 * SNAP_PACK_OID + 1];
	size_t i, kn = 0, rest = 0;
	bool taken;

	if (j->seed_index == NULL)
		return 0;
	clone_gate_enter();
	if ((sd = j->seed_read) != NULL) {
		j->seed_read = NULL;
		if (snap_seed_believe(sd, j->seed_index, j->seed_tree, *n,
		    &j->seed_cause) == -1) {
			snap_seed_free(sd);
			sd = NULL;
		}
	} else
		sd = snap_seed_load(j->seed_index, j->seed_tree, j->worktree,
		    *n, &j->seed_cause);
	clone_gate_leave();
	if (sd == NULL)
		return 0;
	/* The gate let go every SNAP_PACK_JOB_STEP files: a clone waits little. */
	for (i = 0; i < *n; i++) {
		if (i % SNAP_PACK_JOB_STEP == 0) {
			if (i > 0)
				clone_gate_leave();
			clone_gate_enter();
		}
		taken = snap_pack_path_plain(paths[i], false) &&
		    (j->converted.n == 0 || bsearch(&paths[i], j->converted.v,
		    j->converted.n, sizeof *j->converted.v,
		    snap_pack_strcmp) == NULL) &&
		    snap_seed_take(sd, paths[i], ke[kn].oid, &ke[kn].mode,
		    &ksb[kn]);
		if (taken) {
			ke[kn].path = paths[i];
			snap_pack_hex(ke[kn].oid, hex);
			hex[2 * SNAP_PACK_OID] = '\n';
			buf_add(&j->borrowed, hex, sizeof hex);
			kn++;
		} else
			paths[rest++] = paths[i];
	}
	if (*n > 0)
		clone_gate_leave();
	clone_gate_enter();
	snap_seed_free(sd);
	clone_gate_leave();
	*n = rest;
	return kn;
}

/*
 * E[0..N) (the files stored) and KE[0..KN) (those taken from the seed),
 * each sorted by path, merged into OUT and OSB, sorted too. In the gate.
 */
static void
snap_pack_job_merge(const struct snap_pack_entry *e, const struct stat *sb,
    size_t n, const struct snap_pack_entry *ke, const struct stat *ksb,
    size_t kn, struct snap_pack_entry *out, struct stat *osb)
{
	size_t i = 0, k = 0, o = 0;

	while (i < n || k < kn) {
		if (k == kn || (i < n && strcmp(e[i].path, ke[k].path) < 0)) {
			out[o] = e[i];
			osb[o++] = sb[i++];
		} else {
			out[o] = ke[k];
			osb[o++] = ksb[k++];
		}
	}
}

/* The thread's work: 0 with the tree, 1 (git's path, CAUSE says why), -1. */
static int
snap_pack_job_write(struct snap_pack_job *j)
{
	struct snap_pack_entry *e, *ke, *all;
	struct snap_pack *p;
	struct stat *sb, *ksb, *allsb;
	char **paths;
	size_t n, kn;
	uint32_t count;
	int r;

	clone_gate_enter();
	paths = snap_pack_job_paths(&j->list, &n);
	e = xcalloc(n > 0 ? n : 1, sizeof *e);
	sb = xcalloc(n > 0 ? n : 1, sizeof *sb);
	ke = xcalloc(n > 0 ? n : 1, sizeof *ke);
	ksb = xcalloc(n > 0 ? n : 1, sizeof *ksb);
	count = snap_pack_job_count(paths, n);
	clone_gate_leave();
	kn = snap_pack_job_seeded(j, paths, &n, ke, ksb);
	clone_gate_enter();
	p = snap_pack_begin(j->gitdir, count - (uint32_t)kn, &j->cause);
	clone_gate_leave();
	r = p == NULL ? -1 : snap_pack_job_files(j, p, paths, &n, e, sb);
	clone_gate_enter();
	if (r == 0 && kn > 0) {
		all = xcalloc(n + kn, sizeof *all);
		allsb = xcalloc(n + kn, sizeof *allsb);
		snap_pack_job_merge(e, sb, n, ke, ksb, kn, all, allsb);
		free(e);
		free(sb);
		e = all;
		sb = allsb;
		n += kn;
		atomic_store(&j->files, n);
	}
	free(ke);
	free(ksb);
	if (r == 0)
		r = snap_pack_job_end(j, p, e, sb, n);
	else
		snap_pack_abort(p);
	if (r == 1 && j->cause == NULL)
		j->cause = xstrdup("a file changed while it was read, or is not "
		    "a regular file or link (a nested repository)");
	clone_gate_leave();
	if (r == 0)
		snap_pack_job_modes(j, e, sb, n);
	clone_gate_enter();
	free(paths);
	free(e);
	free(sb);
	clone_gate_leave();
	return r;
}

static void
snap_pack_job_main(void *arg)
{
	struct snap_pack_job *j = arg;

	j->result = snap_pack_job_write(j);
	atomic_store(&j->over, true);
	snap_pack_job_poke(j);
}

/* On the loop: progress, or the job's end (the thread then joined). */
static void
snap_pack_job_ready(evutil_socket_t fd, short what, void *arg)
{
	struct snap_pack_job *j = arg;
	char drain[64];

	(void)what;
	while (read(fd, drain, sizeof drain) > 0)
		;
	if (!atomic_load(&j->over)) {
		if (j->progress != NULL)
			j->progress(j->arg, (int64_t)atomic_load(&j->files));
		return;
	}
	event_del(j->ev);
	thread_join(&j->thread);
	if (j->seed_cause != NULL)
		log_info("the first snapshot reads every file: %s",
		    j->seed_cause);
	j->done(j->arg, j->result, j->result == 0 ? j->tree : NULL,
	    j->result == 0 ? &j->modes : NULL,
	    j->result == 0 ? &j->borrowed : NULL,
	    (int64_t)atomic_load(&j->files), j->cause);
	snap_pack_job_free(j);
}

static bool
snap_pack_job_watch(struct snap_pack_job *j, struct event_base *base)
{
	j->base = base;
	j->ev = event_new(base, j->pipe[0], EV_READ | EV_PERSIST,
	    snap_pack_job_ready, j);
	return j->ev != NULL && event_add(j->ev, NULL) == 0;
}

struct snap_pack_job *
snap_pack_job_start(struct event_base *base, const char *gitdir,
    const char *index, const char *worktree, struct buf *list,
    const struct snap_pack_seed *seed, snap_pack_job_cb done,
    void (*progress)(void *, int64_t), void *arg, char **cause)
{
	struct snap_pack_job *j = xcalloc(1, sizeof *j);
	size_t i;
	int rc;

	j->pipe[0] = j->pipe[1] = j->wt = -1;
	j->gitdir = xstrdup(gitdir);
	j->index = xstrdup(index);
	j->worktree = xstrdup(worktree);
	buf_init(&j->borrowed);
	strv_init(&j->converted);
	if (seed != NULL) {
		j->seed_index = xstrdup(seed->index);
		j->seed_read = seed->read;
		memcpy(j->seed_tree, seed->tree, SNAP_PACK_OID);
		for (i = 0; seed->converted != NULL &&
		    i < seed->converted->n; i++)
			strv_add(&j->converted, seed->converted->v[i]);
		if (j->converted.n > 0)
			qsort(j->converted.v, j->converted.n, sizeof
			    *j->converted.v, snap_pack_strcmp);
	}
	j->done = done;
	j->progress = progress;
	j->arg = arg;
	buf_init(&j->list);
	buf_init(&j->modes);
	buf_add(&j->list, list->data, list->len);
	if ((j->wt = open(worktree, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) ==
	    -1 || pipe2(j->pipe, O_CLOEXEC | O_NONBLOCK) == -1) {
		*cause = xprintf("cannot read %s: %s", worktree,
		    strerror(errno));
		goto fail;
	}
	if (!snap_pack_job_watch(j, base)) {
		*cause = xstrdup("cannot watch the snapshot thread");
		goto fail;
	}
	if ((rc = thread_spawn(&j->thread, snap_pack_job_main, j)) != 0) {
		*cause = xprintf("cannot start a thread: %s", strerror(rc));
		goto fail;
	}
	return j;
fail:
	snap_pack_job_free(j);
	return NULL;
}

void
snap_pack_job_move(struct snap_pack_job *j, struct event_base *base)
{
	if (j == NULL)
		return;
	if (j->ev != NULL)
		event_free(j->ev);
	if (!snap_pack_job_watch(j, base))
		fatalx("cannot watch the snapshot thread");
}

void
snap_pack_job_free(struct snap_pack_job *j)
{
	if (j == NULL)
		return;
	/* The thread stops at its next block; what it wrote is dropped. */
	atomic_store(&j->stop, true);
	thread_join(&j->thread);
	if (j->ev != NULL)
		event_free(j->ev);
	if (j->pipe[0] != -1)
		close(j->pipe[0]);
	if (j->pipe[1] != -1)
		close(j->pipe[1]);
	if (j->wt != -1)
		close(j->wt);
	buf_free(&j->list);
	buf_free(&j->modes);
	buf_free(&j->borrowed);
	free(j->cause);
	free(j->gitdir);
	free(j->index);
	free(j->worktree);
	free(j->seed_index);
	snap_seed_free(j->seed_read);
	free(j->seed_cause);
	strv_free(&j->converted);
	free(j);
}
