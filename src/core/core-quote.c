/* The one quoting helper: strings from a jail or the network made safe to print or draw, as git quotes paths. */
#include <langinfo.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

/*
 * Whether the terminal's locale is UTF-8. Until quote_init says so, every
 * byte above 0x7f is escaped: in an 8-bit locale the continuation bytes of
 * UTF-8 (0x80-0x9f) are C1 controls to the terminal.
 */
static bool quote_utf8;

void
quote_init(void)
{
	const char *cs = nl_langinfo(CODESET);

	quote_utf8 = strcmp(cs, "UTF-8") == 0 || strcmp(cs, "utf8") == 0;
}

void
quote_set_utf8(bool on)
{
	quote_utf8 = on;
}

size_t
quote_utf8_decode(const char *s, size_t n, uint32_t *cp)
{
	const unsigned char *p = (const unsigned char *)s;
	uint32_t c, min;
	size_t len, i;

	if (n == 0)
		return 0;
	if (p[0] < 0x80) {
		*cp = p[0];
		return 1;
	}
	if (p[0] >= 0xc2 && p[0] <= 0xdf) {
		len = 2;
		c = p[0] & 0x1f;
		min = 0x80;
	} else if (p[0] >= 0xe0 && p[0] <= 0xef) {
		len = 3;
		c = p[0] & 0x0f;
		min = 0x800;
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		len = 4;
		c = p[0] & 0x07;
		min = 0x10000;
	} else
		return 0;
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (p[i] & 0x3f);
	}
	/* Overlong forms, surrogates and code points past Unicode are not UTF-8. */
	if (c < min || (c >= 0xd800 && c <= 0xdfff) || c > 0x10ffff)
		return 0;
	*cp = c;
	return len;
}

/*
 * Code points a terminal must not be handed raw: C0 and C1 controls, DEL,
 * and the invisible ones that make text read as something it is not (the
 * bidi embeddings, overrides and isolates, zero-width characters, the line
 * and paragraph separators, tag characters, Hangul fillers: Unicode's
 * format characters, Cf, and their look-alikes).
 */
bool
quote_cp_unsafe(uint32_t c)
{
	if (c < 0x20 || (c >= 0x7f && c <= 0x9f))
		return true;
	switch (c) {
	case 0x00ad: /* soft hyphen */
	case 0x034f: /* combining grapheme joiner */
	case 0x061c: /* Arabic letter mark */
	case 0x06dd:
	case 0x070f:
	case 0x08e2:
	case 0x115f: /* Hangul fillers */
	case 0x1160:
	case 0x17b4:
	case 0x17b5:
	case 0x180e: /* Mongolian vowel separator */
	case 0x3164:
	case 0xfeff: /* zero-width no-break space (BOM) */
	case 0xffa0:
		return true;
	default:
		break;
	}
	return (c >= 0x0600 && c <= 0x0605) ||
	    (c >= 0x180b && c <= 0x180f) ||
	    (c >= 0x200b && c <= 0x200f) ||  /* zero-width, LRM, RLM */
	    (c >= 0x2028 && c <= 0x202e) ||  /* separators, LRE..RLO */
	    (c >= 0x2060 && c <= 0x206f) ||  /* joiners, LRI..PDI, ... */
	    (c >= 0xfff0 && c <= 0xfffb) ||  /* interlinear annotation */
	    (c >= 0x110bd && c <= 0x110cd) ||
	    (c >= 0x13430 && c <= 0x1343f) ||
	    (c >= 0x1bca0 && c <= 0x1bca3) ||
	    (c >= 0x1d173 && c <= 0x1d17a) ||
	    (c >= 0xe0000 && c <= 0xe0fff);  /* tags, variation selectors */
}

/* The length of the run of plain ASCII at S: printable, not '"' or '\\'. */
static size_t
quote_plain_len(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (s[i] < 0x20 || s[i] > 0x7e || s[i] == '"' || s[i] == '\\')
			break;
	}
	return i;
}

/*
 * The length of the sequence at S that may be shown as it is, or 0 when
 * its first byte must be escaped: a control, a byte of invalid UTF-8, an
 * unsafe code point, or (outside a UTF-8 locale) any byte above 0x7f.
 */
static size_t
quote_safe_len(const char *s, size_t n)
{
	uint32_t c;
	size_t len;

	if ((unsigned char)s[0] >= 0x80 && !quote_utf8)
		return 0;
	if ((len = quote_utf8_decode(s, n, &c)) == 0 || quote_cp_unsafe(c))
		return 0;
	return len;
}

/* Where escaped text goes: a growing buffer, or a fixed array (fatal must not allocate). */
struct quote_out {
	struct buf *b;
	char *fixed;
	size_t len;
	size_t cap;
};

static void
quote_put(struct quote_out *o, const char *p, size_t n)
{
	if (o->b != NULL) {
		buf_add(o->b, p, n);
		return;
	}
	if (n > o->cap - 1 - o->len)
		n = o->cap - 1 - o->len;
	memcpy(o->fixed + o->len, p, n);
	o->len += n;
	o->fixed[o->len] = '\0';
}

/* Puts the escape for byte C: \n and friends, else three octal digits. */
static void
quote_escape_byte(struct quote_out *o, unsigned char c)
{
	static const char names[] = "abtnvfr";
	char e[4] = { '\\' };

	if (c >= '\a' && c <= '\r') {
		e[1] = names[c - '\a'];
		quote_put(o, e, 2);
		return;
	}
	e[1] = (char)('0' + (c >> 6));
	e[2] = (char)('0' + (c >> 3 & 7));
	e[3] = (char)('0' + (c & 7));
	quote_put(o, e, 4);
}

/*
 * The bytes of an unsafe sequence at S (at least one): a whole code point
 * when it is valid UTF-8, so that each of its bytes is escaped.
 */
static size_t
quote_unsafe_len(const char *s, size_t n)
{
	uint32_t c;
	size_t len;

	if ((unsigned char)s[0] < 0x80 || (len = quote_utf8_decode(s, n,
	    &c)) == 0)
		return 1;
	return len;
}

bool
quote_needed(const char *s, size_t n)
{
	size_t i = 0, len;

	while (i < n) {
		if ((len = quote_plain_len(s + i, n - i)) > 0) {
			i += len;
			continue;
		}
		if (s[i] == '"' || s[i] == '\\')
			return true;
		if ((len = quote_safe_len(s + i, n - i)) == 0)
			return true;
		i += len;
	}
	return false;
}

/* How much of a string's layout survives. */
enum quote_mode {
	QUOTE_NAME,   /* inside "...": '"' and '\\' escaped too */
	QUOTE_LINE,   /* one line of free text: every control escaped */
	QUOTE_TEXT,   /* free text: newlines, CR LF and tabs kept */
};

/* Puts S with its unsafe bytes escaped as MODE says. */
static void
quote_add_escaped(struct quote_out *o, const char *s, size_t n,
    enum quote_mode mode)
{
	size_t i = 0, len, j;

	while (i < n) {
		/* Most text is plain ASCII: copied a run at a time. */
		if ((len = quote_plain_len(s + i, n - i)) > 0) {
			quote_put(o, s + i, len);
			i += len;
			continue;
		}
		if ((len = quote_safe_len(s + i, n - i)) > 0) {
			if (mode == QUOTE_NAME && (s[i] == '"' || s[i] == '\\'))
				quote_put(o, "\\", 1);
			quote_put(o, s + i, len);
			i += len;
			continue;
		}
		if (mode == QUOTE_TEXT && (s[i] == '\n' || s[i] == '\t')) {
			quote_put(o, s + i++, 1);
			continue;
		}
		/* A line end in raw mode; a lone CR could write over a line. */
		if (mode == QUOTE_TEXT && s[i] == '\r' && i + 1 < n &&
		    s[i + 1] == '\n') {
			quote_put(o, "\r\n", 2);
			i += 2;
			continue;
		}
		len = quote_unsafe_len(s + i, n - i);
		for (j = 0; j < len; j++)
			quote_escape_byte(o, (unsigned char)s[i + j]);
		i += len;
	}
}

void
quote_add(struct buf *b, const char *s, size_t n)
{
	if (!quote_needed(s, n)) {
		buf_add(b, s, n);
		return;
	}
	struct quote_out o = { b, NULL, 0, 0 };

	buf_addc(b, '"');
	quote_add_escaped(&o, s, n, QUOTE_NAME);
	buf_addc(b, '"');
}

void
quote_text_add(struct buf *b, const char *s, size_t n)
{
	struct quote_out o = { b, NULL, 0, 0 };

	quote_add_escaped(&o, s, n, QUOTE_TEXT);
}

void
quote_line_add(struct buf *b, const char *s, size_t n)
{
	struct quote_out o = { b, NULL, 0, 0 };

	quote_add_escaped(&o, s, n, QUOTE_LINE);
}

size_t
quote_text_fixed(char *dst, size_t cap, const char *s)
{
	struct quote_out o = { NULL, dst, 0, cap };

	dst[0] = '\0';
	quote_add_escaped(&o, s, strlen(s), QUOTE_TEXT);
	return o.len;
}

char *
quote_name(const char *s)
{
	struct buf b;

	if (s == NULL)
		return NULL;
	buf_init(&b);
	quote_add(&b, s, strlen(s));
	if (b.data == NULL)
		return xstrdup("");
	return buf_steal(&b);
}

char *
quote_text(const char *s)
{
	struct buf b;

	if (s == NULL)
		return NULL;
	buf_init(&b);
	quote_text_add(&b, s, strlen(s));
	if (b.data == NULL)
		return xstrdup("");
	return buf_steal(&b);
}

const char *
quote_keep_line(struct strv *keep, const char *s)
{
	struct buf b;

	if (s == NULL)
		return NULL;
	buf_init(&b);
	quote_line_add(&b, s, strlen(s));
	strv_take(keep, b.data != NULL ? buf_steal(&b) : xstrdup(""));
	return keep->v[keep->n - 1];
}

const char *
quote_keep(struct strv *keep, const char *s)
{
	char *q;

	if ((q = quote_name(s)) == NULL)
		return NULL;
	strv_take(keep, q);
	return q;
}

const char *
quote_keep_text(struct strv *keep, const char *s)
{
	char *q;

	if ((q = quote_text(s)) == NULL)
		return NULL;
	strv_take(keep, q);
	return q;
}
