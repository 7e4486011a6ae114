/*
 * Checking the cache-tree (TREE extension) of the user's index against its
 * entries, by hashing the trees they give here, in memory, never in .git.
 */
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#include "snap/snap-int.h"

#define SNAP_CACHETREE_ITA 0x2000 /* intent-to-add, an extended flag */

/* One index entry, copied. */
struct snap_cachetree_ent {
	char *name;
	uint32_t mode;
	unsigned char oid[32];
	bool unmerged;
	bool ita;
};

/* The entries of an index, in its order, and its id length. */
struct snap_cachetree {
	struct snap_cachetree_ent *v;
	size_t n;
	size_t cap;
	size_t oidlen;
	struct strv *bad;
};

static int
snap_cachetree_add(void *arg, const struct snap_index_ent *ie)
{
	struct snap_cachetree *ct = arg;
	struct snap_cachetree_ent *e;

	if (ct->n == ct->cap) {
		ct->cap = ct->cap == 0 ? 64 : ct->cap * 2;
		ct->v = xreallocarray(ct->v, ct->cap, sizeof *ct->v);
	}
	e = &ct->v[ct->n++];
	e->name = xstrndup(ie->name, ie->namelen);
	e->mode = ie->mode;
	memcpy(e->oid, ie->oid, ct->oidlen);
	e->unmerged = (ie->flags & 0x3000) != 0;
	e->ita = (ie->xflags & SNAP_CACHETREE_ITA) != 0;
	return 0;
}

static void
snap_cachetree_free(struct snap_cachetree *ct)
{
	size_t i;

	for (i = 0; i < ct->n; i++)
		free(ct->v[i].name);
	free(ct->v);
}

/* git's object id of a tree object with BODY. */
static void
snap_cachetree_digest(const struct buf *body, size_t oidlen,
    unsigned char *oid)
{
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	char hdr[32];
	int n = snprintf(hdr, sizeof hdr, "tree %zu", body->len);

	if (md == NULL || EVP_DigestInit_ex(md, oidlen == 20 ? EVP_sha1() :
	    EVP_sha256(), NULL) != 1 ||
	    EVP_DigestUpdate(md, hdr, (size_t)n + 1) != 1 ||
	    EVP_DigestUpdate(md, body->data, body->len) != 1 ||
	    EVP_DigestFinal_ex(md, oid, NULL) != 1)
		fatalx("cannot hash a tree");
	EVP_MD_CTX_free(md);
}

/*
 * The tree of the entries from *I on under PREFIX (empty, or ending in
 * '/'), hashed into OID as git's write-tree would (intent-to-add entries
 * and trees left empty out); false if an entry there is unmerged, or the
 * tree is empty.
 */
static bool
snap_cachetree_hash(const struct snap_cachetree *ct, size_t *i,
    const char *prefix, size_t plen, unsigned char *oid)
{
	const struct snap_cachetree_ent *e;
	unsigned char sub[32];
	struct buf body;
	const char *rest, *slash;
	char *dir;
	bool ok = true;

	buf_init(&body);
	while (*i < ct->n && strncmp(ct->v[*i].name, prefix, plen) == 0) {
		e = &ct->v[*i];
		rest = e->name + plen;
		if ((slash = strchr(rest, '/')) != NULL) {
			dir = xstrndup(e->name, (size_t)(slash - e->name) + 1);
			if (snap_cachetree_hash(ct, i, dir, strlen(dir), sub)) {
				buf_printf(&body, "40000 %.*s", (int)(slash -
				    rest), rest);
				buf_addc(&body, '\0');
				buf_add(&body, sub, ct->oidlen);
			}
			free(dir);
			continue;
		}
		(*i)++;
		ok = ok && !e->unmerged;
		if (e->ita)
			continue;
		buf_printf(&body, "%o %s", e->mode, rest);
		buf_addc(&body, '\0');
		buf_add(&body, e->oid, ct->oidlen);
	}
	ok = ok && body.len > 0;
	snap_cachetree_digest(&body, ct->oidlen, oid);
	buf_free(&body);
	return ok;
}

/* The first entry at or after PREFIX (the entries are sorted, as git keeps them). */
static size_t
snap_cachetree_find(const struct snap_cachetree *ct, const char *prefix)
{
	size_t lo = 0, hi = ct->n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (strcmp(ct->v[mid].name, prefix) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Whether the cached dir PREFIX, of COUNT entries and tree OID, is what the entries give. */
static bool
snap_cachetree_agrees(const struct snap_cachetree *ct, const char *prefix,
    long long count, const unsigned char *oid)
{
	unsigned char have[32];
	size_t first, i;

	first = i = snap_cachetree_find(ct, prefix);
	if (!snap_cachetree_hash(ct, &i, prefix, strlen(prefix), have))
		return false;
	return (long long)(i - first) == count &&
	    memcmp(have, oid, ct->oidlen) == 0;
}

/*
 * Reads one node of the TREE data at *PP (its path, "<entries>
 * <subtrees>\n", its id unless <entries> is -1, then its subtrees) under
 * PREFIX, checking the valid ones; false if it cannot be read.
 */
static bool
snap_cachetree_node(struct snap_cachetree *ct, const unsigned char **pp,
    const unsigned char *end, const char *prefix, int depth)
{
	const unsigned char *p = *pp, *nul, *nl;
	long long count, subs, k;
	char *path, *s;
	bool ok = true;

	if (depth > 4096 ||
	    (nul = memchr(p, '\0', (size_t)(end - p))) == NULL ||
	    (nl = memchr(nul, '\n', (size_t)(end - nul))) == NULL)
		return false;
	/* strtoll would skip white space, past the line. */
	if (nul[1] != '-' && (nul[1] < '0' || nul[1] > '9'))
		return false;
	count = strtoll((const char *)nul + 1, &s, 10);
	if (*s != ' ' || s[1] < '0' || s[1] > '9' ||
	    (subs = strtoll(s + 1, &s, 10)) < 0 ||
	    s != (const char *)nl || count < -1)
		return false;
	path = *prefix == '\0' && nul == p ? xstrdup("") :
	    xprintf("%s%.*s/", prefix, (int)(nul - p), (const char *)p);
	p = nl + 1;
	if (count >= 0) {
		if ((size_t)(end - p) < ct->oidlen) {
			free(path);
			return false;
		}
		if (!snap_cachetree_agrees(ct, path, count, p))
			strv_add(ct->bad, *path == '\0' ? "." : path);
		p += ct->oidlen;
	}
	for (k = 0; k < subs && ok; k++)
		ok = snap_cachetree_node(ct, &p, end, path, depth + 1);
	free(path);
	*pp = p;
	return ok;
}

int
snap_cachetree_check(const struct buf *file, size_t oidlen,
    const struct buf *tree, struct strv *bad)
{
	struct snap_cachetree ct = { NULL, 0, 0, oidlen, bad };
	const unsigned char *p, *end;
	int rc = -1;

	if (tree->len < 8 || snap_index_each_buf(file, oidlen,
	    snap_cachetree_add, &ct) == -1)
		goto out;
	p = (const unsigned char *)tree->data + 8;
	end = (const unsigned char *)tree->data + tree->len;
	if (snap_cachetree_node(&ct, &p, end, "", 0) && p == end)
		rc = 0;
out:
	snap_cachetree_free(&ct);
	return rc;
}

int
snap_cachetree_root(const struct buf *file, size_t oidlen, unsigned char *oid)
{
	struct snap_cachetree ct = { NULL, 0, 0, oidlen, NULL };
	size_t i = 0, k;
	int rc = -1;

	if (snap_index_each_buf(file, oidlen, snap_cachetree_add, &ct) == -1)
		goto out;
	for (k = 0; k < ct.n; k++)
		if (ct.v[k].ita || ct.v[k].unmerged)
			goto out;
	if (snap_cachetree_hash(&ct, &i, "", 0, oid) && i == ct.n)
		rc = 0;
out:
	snap_cachetree_free(&ct);
	return rc;
}
