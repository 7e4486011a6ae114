/* Request paths as policy judges them: unreserved escapes decoded, dot segments removed, slashes folded. */
#include <stdlib.h>
#include <string.h>

#include "proxy/proxy-int.h"

int
proxy_hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* RFC 3986 2.3: escapes of these mean the character itself. */
static bool
proxy_path_unreserved(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
	    c == '~';
}

/*
 * NULL unless the decoded path D holds "%25" then "2E", "2F" or "5C": what
 * a server that decodes twice would read as a dot or a separator.
 */
static const char *
proxy_path_double(const char *d)
{
	const char *p;

	for (p = d; (p = strstr(p, "%25")) != NULL; p += 3) {
		if ((p[3] == '2' && strchr("eEfF", p[4]) != NULL && p[4] != '\0') ||
		    (p[3] == '5' && strchr("cC", p[4]) != NULL && p[4] != '\0'))
			return "a double-encoded '.', '/' or '\\' (%252E, %252F, "
			    "%255C) in the path";
	}
	return NULL;
}

/*
 * Decodes the escapes of unreserved characters in P[0..LEN) into OUT and
 * writes the others in upper case; NULL, or why P cannot be normalised.
 */
static const char *
proxy_path_decode(const char *p, size_t len, struct buf *out)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t i;
	int hi, lo, c;

	for (i = 0; i < len; i++) {
		if (p[i] == '\\')
			return "a backslash in the path";
		if (p[i] != '%') {
			buf_addc(out, p[i]);
			continue;
		}
		if (len - i < 3 || (hi = proxy_hexval((unsigned char)p[i + 1]))
		    == -1 || (lo = proxy_hexval((unsigned char)p[i + 2])) == -1)
			return "a '%' in the path that does not start an escape "
			    "(%XX)";
		c = hi * 16 + lo;
		if (c == 0)
			return "an encoded NUL (%00) in the path";
		if (c == '\\')
			return "an encoded '\\' (%5C) in the path";
		/*
		 * An encoded '/' stays encoded: to a server that does not
		 * decode it, it is part of a name (npm's "@scope%2Fname"); the
		 * reading of a server that does is judged too (slash_reading).
		 */
		if (proxy_path_unreserved(c))
			buf_addc(out, (char)c);
		else {
			buf_addc(out, '%');
			buf_addc(out, hex[hi]);
			buf_addc(out, hex[lo]);
		}
		i += 2;
	}
	return NULL;
}

/* True if the segment S[0..N) is "." or ".." (2) or one of those with parameters (-1). */
static int
proxy_path_dots(const char *s, size_t n)
{
	if (n == 1 && s[0] == '.')
		return 1;
	if (n == 2 && s[0] == '.' && s[1] == '.')
		return 2;
	/* "..;x": some servers (Tomcat) read it as "..". */
	if ((n >= 2 && s[0] == '.' && s[1] == ';') ||
	    (n >= 3 && s[0] == '.' && s[1] == '.' && s[2] == ';'))
		return -1;
	return 0;
}

/* Drops the last segment of OUT ("/a/b" becomes "/a"). */
static void
proxy_path_pop(struct buf *out)
{
	while (out->len > 0 && out->data[out->len - 1] != '/')
		out->len--;
	if (out->len > 0)
		out->len--;
	if (out->data != NULL)
		out->data[out->len] = '\0';
}

/* Writes the segments of the decoded path D into OUT, folding "//", "." and "..". */
static const char *
proxy_path_segments(const char *d, struct buf *out)
{
	const char *seg = d + 1, *end;
	size_t n;
	bool slash = false;
	int dots;

	for (;;) {
		end = strchr(seg, '/');
		n = end != NULL ? (size_t)(end - seg) : strlen(seg);
		slash = end == NULL && n == 0;
		if ((dots = proxy_path_dots(seg, n)) == -1)
			return "a dot segment with parameters (..;) in the path";
		if (dots == 2)
			proxy_path_pop(out);
		if (dots != 0)
			slash = end == NULL;
		else if (n != 0) {
			buf_addc(out, '/');
			buf_add(out, seg, n);
		}
		if (end == NULL)
			break;
		seg = end + 1;
	}
	if (out->len == 0 || slash)
		buf_addc(out, '/');
	return NULL;
}

/* True if P[0..LEN) (starting with '/') has no empty, "." or ".." segment, no "..;". */
static bool
proxy_path_segments_normal(const char *p, size_t len)
{
	size_t i, seg = 1;

	for (i = 1; i <= len; i++) {
		if (i < len && p[i] != '/')
			continue;
		if ((i == seg && i < len) || proxy_path_dots(p + seg, i - seg) != 0)
			return false;
		seg = i + 1;
	}
	return true;
}

/*
 * True if P[0..LEN) (starting with '/') is normal already: no escape, no
 * backslash, no empty, "." or ".." segment, no "..;". Most paths are.
 */
static bool
proxy_path_is_normal(const char *p, size_t len)
{
	return memchr(p, '%', len) == NULL && memchr(p, '\\', len) == NULL &&
	    proxy_path_segments_normal(p, len);
}

char *
proxy_path_slash_reading(const char *match)
{
	struct buf b;
	const char *p;

	if ((p = strstr(match, "%2F")) == NULL)
		return NULL;
	buf_init(&b);
	buf_add(&b, match, (size_t)(p - match));
	for (; *p != '\0'; p++) {
		if (strncmp(p, "%2F", 3) == 0) {
			buf_addc(&b, '/');
			p += 2;
		} else
			buf_addc(&b, *p);
	}
	return buf_steal(&b);
}

/*
 * NULL unless the path part P[0..LEN) of a normalised path, read by a
 * server that decodes "%2F", holds an empty, "." or ".." segment.
 */
static const char *
proxy_path_check_slashes(const char *p, size_t len)
{
	char *path = xstrndup(p, len), *slashes;
	bool normal;

	if ((slashes = proxy_path_slash_reading(path)) == NULL) {
		free(path);
		return NULL;
	}
	normal = proxy_path_segments_normal(slashes, strlen(slashes));
	free(slashes);
	free(path);
	if (normal)
		return NULL;
	return "an encoded '/' (%2F) that a server decoding it would read as "
	    "an empty, '.' or '..' segment";
}

char *
proxy_path_normalise(const char *target, size_t *pathlen, const char **why)
{
	size_t len = strcspn(target, "?");
	struct buf d, out;

	if (target[0] != '/') {
		*why = "the path does not start with '/'";
		return NULL;
	}
	if (proxy_path_is_normal(target, len)) {
		*why = NULL;
		*pathlen = len;
		return xstrdup(target);
	}
	buf_init(&d);
	buf_init(&out);
	buf_add(&d, "", 0);
	buf_add(&out, "", 0);
	if ((*why = proxy_path_decode(target, len, &d)) != NULL ||
	    (*why = proxy_path_double(d.data)) != NULL ||
	    (*why = proxy_path_segments(d.data, &out)) != NULL ||
	    (*why = proxy_path_check_slashes(out.data, out.len)) != NULL) {
		buf_free(&d);
		buf_free(&out);
		return NULL;
	}
	buf_free(&d);
	*pathlen = out.len;
	buf_adds(&out, target + len);
	return buf_steal(&out);
}
