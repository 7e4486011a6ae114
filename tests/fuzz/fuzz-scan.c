/*
 * Fuzzes the streaming placeholder scanner against a plain reference: the
 * input cut into pieces at places the input chooses must give the same
 * answer as a search of the whole input and of its percent-decoded form
 * (decoded here by code of its own) for every pattern. In WebSocket mode
 * the input is a client's frames, read here by a frame parser of its own:
 * a placeholder in the bytes, in the data frames' unmasked payloads taken
 * together or in one control frame must be found, and nothing else.
 *
 * Input: a mode byte (bit 0: WebSocket; bits 1-7: which secrets to look
 * for), a seed byte for the cuts, then the stream.
 */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "fuzz.h"
#include "proxy/proxy-int.h"

static char *fs_hosts[] = { "api.example.com", NULL };
static struct proxy_secret fs_secrets[] = {
	{ .name = "A", .placeholder = "sk-ant-api03-Fz8Pq2Lm4Nx7Rt1Vb6Kc",
	  .value = "v", .hosts = fs_hosts },
	{ .name = "B", .placeholder = "wJalrXUtnF/K7MDE+bPxRfiCYqZ3",
	  .value = "v", .hosts = fs_hosts },
	{ .name = "C", .placeholder = "ghp_0a1b2c3d4e5f6g7h8i9j",
	  .value = "v", .hosts = fs_hosts },
};
static struct proxy_patterns *fs_pp;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fs_pp = proxy_scan_patterns(fs_secrets, nitems(fs_secrets));
	return 0;
}

static int
fs_hex(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Percent-decodes D; a '%' not followed by two hex digits stays as it is. */
static void
fs_decode(const uint8_t *d, size_t len, struct buf *out)
{
	size_t i;

	for (i = 0; i < len; i++) {
		if (d[i] == '%' && i + 2 < len && fs_hex(d[i + 1]) != -1 &&
		    fs_hex(d[i + 2]) != -1) {
			buf_addc(out, (char)(fs_hex(d[i + 1]) * 16 +
			    fs_hex(d[i + 2])));
			i += 2;
		} else
			buf_addc(out, (char)d[i]);
	}
}

/* The secrets (a bit each) whose wanted patterns are in D, raw or decoded. */
static unsigned
fs_reference(const uint8_t *d, size_t len, const bool *want)
{
	struct buf dec;
	unsigned found = 0;
	size_t i, n = proxy_scan_npatterns(fs_pp), secret;
	const char *p;

	buf_init(&dec);
	buf_add(&dec, "", 0);
	fs_decode(d, len, &dec);
	for (i = 0; i < n; i++) {
		p = proxy_scan_pattern(fs_pp, i, &secret);
		if (want[secret] && (memmem(d, len, p, strlen(p)) != NULL ||
		    memmem(dec.data, dec.len, p, strlen(p)) != NULL))
			found |= 1u << secret;
	}
	buf_free(&dec);
	return found;
}

/* The next cut, from a generator seeded by the input: up to 5, 64, 1024 or 16384 bytes. */
static size_t
fs_cut(uint32_t *seed)
{
	static const uint32_t max[] = { 5, 64, 1024, 16384 };

	*seed = *seed * 1103515245 + 12345;
	return 1 + (*seed >> 16) % max[(*seed >> 8) & 3];
}

static void
fs_check(int got, unsigned ref)
{
	if ((got == -1) != (ref == 0))
		abort();
	if (got != -1 && !(ref & (1u << got)))
		abort();
}

static void
fs_stream(const uint8_t *d, size_t len, const bool *want, uint32_t seed)
{
	struct proxy_scan sc;
	size_t off = 0, n;
	int got = -1;

	proxy_scan_init(&sc);
	proxy_scan_reset(&sc, fs_pp, want);
	while (off < len) {
		n = fs_cut(&seed);
		if (n > len - off)
			n = len - off;
		got = proxy_scan_feed(&sc, d + off, n);
		off += n;
	}
	proxy_scan_free(&sc);
	fs_check(got, fs_reference(d, len, want));
	fs_check(proxy_scan_once(fs_pp, want, d, len), fs_reference(d, len,
	    want));
}

/* Reads D as client frames: 0 if whole frames, -1 if one cannot be read (RSV bits, long control frames). */
static int
fs_frames(const uint8_t *d, size_t len, struct buf *data, unsigned *ctl,
    const bool *want)
{
	size_t off = 0, hl, ext, i, k;
	uint64_t n;
	const uint8_t *mask;
	struct buf c;

	while (off < len) {
		if (d[off] & 0x70)
			return -1;
		if (off + 2 > len)
			return 0;
		n = d[off + 1] & 0x7f;
		ext = n == 126 ? 2 : n == 127 ? 8 : 0;
		hl = 2 + ext + ((d[off + 1] & 0x80) ? 4 : 0);
		if ((d[off] & 0x08) && n > 125)
			return -1;
		if (off + hl > len)
			return 0;
		for (k = 0, n = ext != 0 ? 0 : n; k < ext; k++)
			n = n << 8 | d[off + 2 + k];
		mask = (d[off + 1] & 0x80) ? d + off + hl - 4 : NULL;
		buf_init(&c);
		buf_add(&c, "", 0);
		for (i = 0; i < n && off + hl + i < len; i++)
			buf_addc(&c, (char)(d[off + hl + i] ^ (mask != NULL ?
			    mask[i & 3] : 0)));
		if (d[off] & 0x08) {
			if (i == n)
				*ctl |= fs_reference((uint8_t *)c.data, c.len, want);
		} else
			buf_add(data, c.data, c.len);
		buf_free(&c);
		if (i < n)
			return 0;
		off += hl + (size_t)n;
	}
	return 0;
}

static void
fs_ws(const uint8_t *d, size_t len, const bool *want, uint32_t seed)
{
	struct proxy_ws ws;
	struct buf data;
	unsigned ref, ctl = 0;
	size_t off = 0, n;
	int got = -1, rc;

	buf_init(&data);
	buf_add(&data, "", 0);
	rc = fs_frames(d, len, &data, &ctl, want);
	ref = fs_reference(d, len, want) | ctl |
	    fs_reference((uint8_t *)data.data, data.len, want);
	proxy_ws_init(&ws, fs_pp, want);
	while (off < len && got == -1) {
		n = fs_cut(&seed);
		if (n > len - off)
			n = len - off;
		got = proxy_ws_feed(&ws, d + off, n);
		off += n;
	}
	/* A frame that cannot be read stops it: what came before may still have been found. */
	if (got == -2) {
		if (rc != -1 || ws.error == NULL)
			abort();
	} else if (got == -1 ? ref != 0 : !(ref & (1u << got)))
		abort();
	else if (rc == -1 && got == -1)
		abort();
	proxy_ws_free(&ws);
	buf_free(&data);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	bool want[nitems(fs_secrets)];
	uint32_t seed;
	size_t i;

	if (size < 2)
		return 0;
	for (i = 0; i < nitems(fs_secrets); i++)
		want[i] = (data[0] & (2u << i)) == 0;
	seed = data[1];
	if (data[0] & 1)
		fs_ws(data + 2, size - 2, want, seed);
	else
		fs_stream(data + 2, size - 2, want, seed);
	return 0;
}
