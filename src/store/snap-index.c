/*
 * Reading git's index file (versions 2 to 4) for the names and flags of
 * its entries: enough to check a copied index before trusting its stat
 * data, without running git.
 */
#include <arpa/inet.h>

#include <stdlib.h>
#include <string.h>

#include "store/snap-int.h"

#define SNAP_CE_VALID     0x8000  /* assume-unchanged */
#define SNAP_CE_EXTENDED  0x4000
#define SNAP_CE_NAMEMASK  0x0fff
#define SNAP_CE_SKIP_WT   0x4000  /* in the extended flags */
#define SNAP_CE_FIXED     40      /* ctime, mtime, dev, ino, mode, uid, gid, size */

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

int
snap_index_scan(const char *path, size_t oidlen, struct snap_index_info *info)
{
	const unsigned char *p, *end, *e;
	struct buf file, name;
	uint32_t version, n, i, mode;
	uint16_t flags, xflags;
	size_t len, strip, entlen;
	int rc = -1;

	memset(info, 0, sizeof *info);
	buf_init(&file);
	buf_init(&name);
	buf_init(&info->names);
	buf_init(&info->assumed);
	buf_init(&info->gitlinks);
	if (buf_read_file(&file, path) == -1 || file.len < 12 ||
	    memcmp(file.data, "DIRC", 4) != 0)
		goto out;
	p = (const unsigned char *)file.data;
	end = p + file.len;
	version = snap_index_u32(p + 4);
	n = snap_index_u32(p + 8);
	if (version < 2 || version > 4)
		goto out;
	p += 12;
	for (i = 0; i < n; i++) {
		e = p;
		if ((size_t)(end - p) < SNAP_CE_FIXED + oidlen + 2)
			goto out;
		mode = snap_index_u32(p + 24);
		p += SNAP_CE_FIXED + oidlen;
		flags = (uint16_t)(p[0] << 8 | p[1]);
		p += 2;
		xflags = 0;
		if ((flags & SNAP_CE_EXTENDED) && version >= 3) {
			if (end - p < 2)
				goto out;
			xflags = (uint16_t)(p[0] << 8 | p[1]);
			p += 2;
		}
		if (version == 4) {
			if (!snap_index_varint(&p, end, &strip) ||
			    strip > name.len)
				goto out;
			name.len -= strip;
		} else
			name.len = 0;
		len = strnlen((const char *)p, (size_t)(end - p));
		if (p + len >= end)
			goto out;
		buf_add(&name, p, len);
		p += len + 1;
		if (version != 4) {
			/* Entries are NUL-padded to a multiple of eight. */
			entlen = (size_t)(p - e);
			p = e + ((entlen + 7) & ~(size_t)7);
			if (p > end)
				goto out;
		}
		if ((mode & 0170000) == 0040000)
			continue; /* a sparse index's directory */
		if ((mode & 0170000) == 0160000) {
			buf_add(&info->gitlinks, name.data, name.len);
			buf_addc(&info->gitlinks, '\0');
			info->ngitlinks++;
		}
		buf_add(&info->names, name.data, name.len);
		buf_addc(&info->names, '\0');
		info->nnames++;
		if ((flags & SNAP_CE_VALID) && !(xflags & SNAP_CE_SKIP_WT)) {
			buf_add(&info->assumed, name.data, name.len);
			buf_addc(&info->assumed, '\0');
			info->nassumed++;
		}
		if (strcmp(name.data, ".gitattributes") == 0 || (name.len >= 15 &&
		    strcmp(name.data + name.len - 15, "/.gitattributes") == 0))
			info->attributes = true;
	}
	rc = 0;
out:
	buf_free(&file);
	buf_free(&name);
	if (rc == -1)
		snap_index_info_free(info);
	return rc;
}

void
snap_index_info_free(struct snap_index_info *info)
{
	buf_free(&info->names);
	buf_free(&info->assumed);
	buf_free(&info->gitlinks);
	memset(info, 0, sizeof *info);
}
