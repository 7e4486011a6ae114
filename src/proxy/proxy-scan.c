/*
 * Looks for secrets' placeholders in what goes to a host that may not have
 * them: as they are, as hex (either case) and base64 (every alignment, both
 * alphabets), in the bytes themselves and in their percent-decoded form,
 * across any number of pieces.
 */
#include <stdlib.h>
#include <string.h>

#include "proxy/proxy-int.h"

#define PROXY_SCAN_SHORTEST 8       /* shorter encoded pieces would match by chance */
#define PROXY_SCAN_LONGEST 1024     /* longer patterns are looked for by their start */

struct proxy_pattern {
	char *s;
	size_t len;
	size_t secret;              /* index into the session's secrets */
};

struct proxy_patterns {
	struct proxy_pattern *v;
	size_t n;
	size_t nsecrets;
	size_t maxlen;
};

/* Adds S[0..LEN) for SECRET; ENCODED pieces shorter than a few bytes are left out. */
static void
proxy_scan_add(struct proxy_patterns *pp, size_t secret, const char *s,
    size_t len, bool encoded)
{
	struct proxy_pattern *p;

	if (len == 0 || (encoded && len < PROXY_SCAN_SHORTEST))
		return;
	if (len > PROXY_SCAN_LONGEST)
		len = PROXY_SCAN_LONGEST;
	pp->v = xreallocarray(pp->v, pp->n + 1, sizeof *pp->v);
	p = &pp->v[pp->n++];
	p->s = xstrndup(s, len);
	p->len = len;
	p->secret = secret;
	if (len > pp->maxlen)
		pp->maxlen = len;
}

static void
proxy_scan_add_hex(struct proxy_patterns *pp, size_t secret, const char *ph,
    const char *digits)
{
	size_t i, len = strlen(ph);
	struct buf b;

	buf_init(&b);
	for (i = 0; i < len && b.len < PROXY_SCAN_LONGEST; i++) {
		buf_addc(&b, digits[(unsigned char)ph[i] >> 4]);
		buf_addc(&b, digits[(unsigned char)ph[i] & 15]);
	}
	proxy_scan_add(pp, secret, b.data, b.len, true);
	buf_free(&b);
}

/*
 * The base64 characters that depend only on PH when it starts K bytes into
 * a 3-byte group: the ones around it also carry the bytes next to it.
 */
static void
proxy_scan_add_b64(struct proxy_patterns *pp, size_t secret, const char *ph,
    size_t k)
{
	static const char std[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t len = strlen(ph), n = k + len, i, first, last;
	unsigned char *in = xcalloc(n + 2, 1);
	uint32_t v;
	struct buf b;

	if (len > PROXY_SCAN_LONGEST)
		n = k + PROXY_SCAN_LONGEST;
	memcpy(in + k, ph, n - k);
	buf_init(&b);
	for (i = 0; i < n; i += 3) {
		v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
		buf_addc(&b, std[v >> 18 & 63]);
		buf_addc(&b, std[v >> 12 & 63]);
		buf_addc(&b, std[v >> 6 & 63]);
		buf_addc(&b, std[v & 63]);
	}
	first = (8 * k + 5) / 6;
	last = 8 * n / 6;
	if (last > first) {
		proxy_scan_add(pp, secret, b.data + first, last - first, true);
		/* The URL-safe alphabet, where it differs. */
		if (strcspn(b.data + first, "+/") < last - first) {
			for (i = first; i < last; i++)
				b.data[i] = b.data[i] == '+' ? '-' :
				    b.data[i] == '/' ? '_' : b.data[i];
			proxy_scan_add(pp, secret, b.data + first, last - first,
			    true);
		}
	}
	buf_free(&b);
	free(in);
}

struct proxy_patterns *
proxy_scan_patterns(const struct proxy_secret *v, size_t n)
{
	struct proxy_patterns *pp = xcalloc(1, sizeof *pp);
	size_t i, k;

	pp->nsecrets = n;
	for (i = 0; i < n; i++) {
		proxy_scan_add(pp, i, v[i].placeholder, strlen(v[i].placeholder),
		    false);
		if (*v[i].placeholder == '\0')
			continue;
		proxy_scan_add_hex(pp, i, v[i].placeholder, "0123456789abcdef");
		proxy_scan_add_hex(pp, i, v[i].placeholder, "0123456789ABCDEF");
		for (k = 0; k < 3; k++)
			proxy_scan_add_b64(pp, i, v[i].placeholder, k);
	}
	return pp;
}

void
proxy_scan_patterns_free(struct proxy_patterns *pp)
{
	size_t i;

	if (pp == NULL)
		return;
	for (i = 0; i < pp->n; i++)
		free(pp->v[i].s);
	free(pp->v);
	free(pp);
}

size_t
proxy_scan_npatterns(const struct proxy_patterns *pp)
{
	return pp != NULL ? pp->n : 0;
}

const char *
proxy_scan_pattern(const struct proxy_patterns *pp, size_t i, size_t *secret)
{
	*secret = pp->v[i].secret;
	return pp->v[i].s;
}

void
proxy_scan_init(struct proxy_scan *sc)
{
	memset(sc, 0, sizeof *sc);
	buf_init(&sc->raw);
	buf_init(&sc->dec);
	buf_init(&sc->out);
	buf_init(&sc->scratch);
	sc->found = -1;
}

void
proxy_scan_free(struct proxy_scan *sc)
{
	buf_free(&sc->raw);
	buf_free(&sc->dec);
	buf_free(&sc->out);
	buf_free(&sc->scratch);
	free(sc->want);
	proxy_scan_init(sc);
}

void
proxy_scan_reset(struct proxy_scan *sc, const struct proxy_patterns *pp,
    const bool *want)
{
	size_t i;

	buf_reset(&sc->raw);
	buf_reset(&sc->dec);
	sc->pp = pp;
	sc->found = -1;
	sc->esc = 0;
	sc->dec_same = true;
	sc->since_esc = 0;
	sc->any = false;
	if (pp == NULL || pp->n == 0)
		return;
	sc->want = xreallocarray(sc->want, pp->nsecrets, sizeof *sc->want);
	for (i = 0; i < pp->nsecrets; i++) {
		sc->want[i] = want == NULL || want[i];
		sc->any = sc->any || sc->want[i];
	}
}

bool
proxy_scan_active(const struct proxy_scan *sc)
{
	return sc->any;
}

/*
 * NEEDLE in HAY: memmem, which is fast over long buffers but costs a table
 * to set up each call, or for short ones a search for the first byte.
 */
static bool
proxy_scan_has(const char *hay, size_t n, const char *needle, size_t m)
{
	const char *p = hay, *last;

	if (n >= 4096)
		return memmem(hay, n, needle, m) != NULL;
	last = hay + (n - m);
	while (p <= last && (p = memchr(p, needle[0], (size_t)(last - p) +
	    1)) != NULL) {
		if (memcmp(p + 1, needle + 1, m - 1) == 0)
			return true;
		p++;
	}
	return false;
}

/* The secret of the first pattern in DATA among those WANT marks (NULL: all), or -1. */
static int
proxy_scan_search(const struct proxy_patterns *pp, const bool *want,
    const void *data, size_t len)
{
	size_t i;

	for (i = 0; i < pp->n; i++) {
		if ((want != NULL && !want[pp->v[i].secret]) || pp->v[i].len > len)
			continue;
		if (proxy_scan_has(data, len, pp->v[i].s, pp->v[i].len))
			return (int)pp->v[i].secret;
	}
	return -1;
}

/* The first wanted pattern in DATA: sets sc->found. */
static bool
proxy_scan_match(struct proxy_scan *sc, const void *data, size_t len)
{
	sc->found = proxy_scan_search(sc->pp, sc->want, data, len);
	return sc->found != -1;
}

/* Keeps the last maxlen - 1 bytes of TAIL followed by DATA in TAIL. */
static void
proxy_scan_keep(struct proxy_scan *sc, struct buf *tail, const char *data,
    size_t len)
{
	size_t keep = sc->pp->maxlen - 1, drop;

	if (len >= keep) {
		buf_reset(tail);
		buf_add(tail, data + len - keep, keep);
		return;
	}
	if (tail->len + len > keep) {
		drop = tail->len + len - keep;
		memmove(tail->data, tail->data + drop, tail->len - drop);
		tail->len -= drop;
	}
	buf_add(tail, data, len);
}

/*
 * Searches one view of the stream: what straddles the end of what came
 * before (TAIL) and DATA, then DATA itself (unless SEEN: another view
 * searched the same bytes).
 */
static void
proxy_scan_view(struct proxy_scan *sc, struct buf *tail, const char *data,
    size_t len, bool seen)
{
	size_t head = len < sc->pp->maxlen - 1 ? len : sc->pp->maxlen - 1;

	if (tail->len != 0) {
		buf_reset(&sc->scratch);
		buf_add(&sc->scratch, tail->data, tail->len);
		buf_add(&sc->scratch, data, head);
		if (proxy_scan_match(sc, sc->scratch.data, sc->scratch.len))
			return;
	}
	if (!seen && (tail->len == 0 || head < len) &&
	    proxy_scan_match(sc, data, len))
		return;
	proxy_scan_keep(sc, tail, data, len);
}

/* Percent-decodes DATA into OUT, carrying a split escape to the next piece. */
static void
proxy_scan_decode(struct proxy_scan *sc, const char *data, size_t len,
    struct buf *out)
{
	size_t i;
	int h = -1;

	for (i = 0; i < len; i++) {
		if (sc->esc != 0 && (h = proxy_hexval((unsigned char)data[i])) ==
		    -1) {
			/* Not an escape after all: the bytes as they were. */
			buf_add(out, sc->escbuf, (size_t)sc->esc);
			sc->esc = 0;
		}
		if (sc->esc == 0) {
			if (data[i] == '%')
				sc->escbuf[sc->esc++] = '%';
			else
				buf_addc(out, data[i]);
			continue;
		}
		sc->escbuf[sc->esc++] = data[i];
		if (sc->esc == 3) {
			buf_addc(out, (char)(proxy_hexval(
			    (unsigned char)sc->escbuf[1]) * 16 + h));
			sc->esc = 0;
			sc->last_esc = out->len;
		}
	}
}

/*
 * The percent-decoded view. Where no escape was decoded in its last
 * maxlen - 1 bytes and none is pending, it holds what the raw view holds:
 * then a piece without '%' needs no search of its own.
 */
static void
proxy_scan_decoded(struct proxy_scan *sc, const char *data, size_t len)
{
	size_t keep = sc->pp->maxlen - 1;

	if (sc->esc == 0 && memchr(data, '%', len) == NULL) {
		if (sc->dec_same)
			return;
		proxy_scan_view(sc, &sc->dec, data, len, true);
		sc->since_esc += len;
		sc->dec_same = sc->since_esc >= keep;
		return;
	}
	if (sc->dec_same) {
		buf_reset(&sc->dec);
		buf_add(&sc->dec, sc->raw.data, sc->raw.len);
		sc->since_esc = keep;
	}
	buf_reset(&sc->out);
	sc->last_esc = SIZE_MAX;
	proxy_scan_decode(sc, data, len, &sc->out);
	if (sc->last_esc != SIZE_MAX)
		sc->since_esc = sc->out.len - sc->last_esc;
	else
		sc->since_esc += sc->out.len;
	if (sc->out.len != 0)
		proxy_scan_view(sc, &sc->dec, sc->out.data, sc->out.len, false);
	sc->dec_same = sc->esc == 0 && sc->since_esc >= keep;
}

int
proxy_scan_feed(struct proxy_scan *sc, const void *data, size_t len)
{
	if (sc->found != -1 || !sc->any || len == 0)
		return sc->found;
	/* The decoded view first: it may start from the raw view's tail. */
	proxy_scan_decoded(sc, data, len);
	if (sc->found == -1)
		proxy_scan_view(sc, &sc->raw, data, len, false);
	return sc->found;
}

/*
 * A whole buffer, without a stream's state: what proxy_scan_feed would
 * say of it as one piece, with no allocation unless it holds a '%'.
 */
int
proxy_scan_once(const struct proxy_patterns *pp, const bool *want,
    const void *data, size_t len)
{
	struct proxy_scan sc;
	bool any = false;
	size_t i;
	int found;

	if (pp == NULL || pp->n == 0 || len == 0)
		return -1;
	for (i = 0; i < pp->nsecrets && !any; i++)
		any = want == NULL || want[i];
	if (!any)
		return -1;
	if ((found = proxy_scan_search(pp, want, data, len)) != -1 ||
	    memchr(data, '%', len) == NULL)
		return found;
	memset(&sc, 0, sizeof sc);
	buf_init(&sc.out);
	proxy_scan_decode(&sc, data, len, &sc.out);
	if (sc.out.len != 0)
		found = proxy_scan_search(pp, want, sc.out.data, sc.out.len);
	buf_free(&sc.out);
	return found;
}

/* ---- a WebSocket's frames, client to server ---- */

void
proxy_ws_init(struct proxy_ws *ws, const struct proxy_patterns *pp,
    const bool *want)
{
	memset(ws, 0, sizeof *ws);
	proxy_scan_init(&ws->wire);
	proxy_scan_init(&ws->data);
	proxy_scan_reset(&ws->wire, pp, want);
	proxy_scan_reset(&ws->data, pp, want);
	buf_init(&ws->ctl);
	ws->pp = pp;
	ws->want = want;
	ws->need = 2;
	ws->found = -1;
}

void
proxy_ws_free(struct proxy_ws *ws)
{
	proxy_scan_free(&ws->wire);
	proxy_scan_free(&ws->data);
	buf_free(&ws->ctl);
}

/* What a frame's first two bytes say, as soon as they come: -1 if it cannot be looked at. */
static int
proxy_ws_check(struct proxy_ws *ws)
{
	const unsigned char *h = ws->hdr;

	if (ws->nhdr == 1 && (h[0] & 0x70)) {
		ws->error = "a WebSocket frame uses an extension (RSV bits), "
		    "so what it carries cannot be checked for placeholders";
		return -1;
	}
	if (ws->nhdr == 2 && (h[0] & 0x08) && (h[1] & 0x7f) > 125) {
		ws->error = "a WebSocket control frame is longer than 125 bytes";
		return -1;
	}
	return 0;
}

/* A frame's head is complete: its length and mask. */
static void
proxy_ws_head(struct proxy_ws *ws)
{
	const unsigned char *h = ws->hdr;
	size_t n = h[1] & 0x7f, i;

	ws->control = (h[0] & 0x08) != 0;
	ws->left = n;
	if (n >= 126) {
		ws->left = 0;
		for (i = 0; i < (n == 126 ? 2u : 8u); i++)
			ws->left = ws->left << 8 | h[2 + i];
	}
	memset(ws->mask, 0, sizeof ws->mask);
	if (h[1] & 0x80)
		memcpy(ws->mask, h + ws->need - 4, 4);
	ws->pos = 0;
	ws->nhdr = 0;
	ws->need = 2;
}

/* Takes head bytes from *P: 1 once the head is complete, 0 if more must come, -1 if it cannot be looked at. */
static int
proxy_ws_take_head(struct proxy_ws *ws, const unsigned char **p,
    const unsigned char *end)
{
	size_t n;

	while (*p < end && ws->nhdr < ws->need) {
		ws->hdr[ws->nhdr++] = *(*p)++;
		if (proxy_ws_check(ws) == -1)
			return -1;
		if (ws->nhdr == 2) {
			n = ws->hdr[1] & 0x7f;
			ws->need = 2 + (n == 126 ? 2 : n == 127 ? 8 : 0) +
			    ((ws->hdr[1] & 0x80) ? 4 : 0);
		}
	}
	if (ws->nhdr < ws->need)
		return 0;
	proxy_ws_head(ws);
	return 1;
}

/* Unmasks and looks at up to LEN payload bytes at P; how many it took. */
static size_t
proxy_ws_payload(struct proxy_ws *ws, const unsigned char *p, size_t len)
{
	unsigned char clear[4096];
	size_t n = len, i;

	if ((uint64_t)n > ws->left)
		n = (size_t)ws->left;
	if (n > sizeof clear)
		n = sizeof clear;
	for (i = 0; i < n; i++)
		clear[i] = p[i] ^ ws->mask[(ws->pos + i) & 3];
	ws->pos = (ws->pos + n) & 3;
	ws->left -= n;
	/* Control frames may come between a message's pieces: each on its own. */
	if (ws->control) {
		buf_add(&ws->ctl, clear, n);
		if (ws->left == 0) {
			ws->found = proxy_scan_once(ws->pp, ws->want,
			    ws->ctl.data, ws->ctl.len);
			buf_reset(&ws->ctl);
		}
	} else
		ws->found = proxy_scan_feed(&ws->data, clear, n);
	return n;
}

int
proxy_ws_feed(struct proxy_ws *ws, const void *data, size_t len)
{
	const unsigned char *p = data, *end = p + len;
	int rc;

	if (ws->error != NULL)
		return -2;
	if (ws->found != -1)
		return ws->found;
	ws->found = proxy_scan_feed(&ws->wire, data, len);
	while (ws->found == -1 && p < end) {
		if (ws->nhdr != 0 || ws->left == 0) {
			if ((rc = proxy_ws_take_head(ws, &p, end)) == -1)
				return -2;
			if (rc == 0)
				break;
			continue;
		}
		p += proxy_ws_payload(ws, p, (size_t)(end - p));
	}
	return ws->found;
}
