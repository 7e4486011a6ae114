/* Redaction of what is recorded: credential headers and every known secret value. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "proxy/proxy-int.h"

#define PROXY_REDACTED "[redacted]"

/* True if the LEFT bytes at S start with WORD (a literal). */
#define PROXY_REDACT_AT(s, left, word) \
	((left) >= sizeof(word) - 1 && memcmp((s), (word), sizeof(word) - 1) == 0)

/*
 * True if a credential word starts at S (lower case, LEFT bytes). Every
 * well-known credential header (authorization, proxy-authorization,
 * cookie, set-cookie, x-api-key, x-goog-api-key, private-token,
 * x-auth-token, x-csrf-token, ...) contains one of these words. This runs
 * for every header of every request recorded, so it looks only where a
 * word could start, and only at the words that start that way.
 */
static bool
proxy_redact_part_at(const char *s, size_t left)
{
	switch (*s) {
	case 'a':
		return PROXY_REDACT_AT(s, left, "auth") ||
		    PROXY_REDACT_AT(s, left, "api-key") ||
		    PROXY_REDACT_AT(s, left, "api_key") ||
		    PROXY_REDACT_AT(s, left, "apikey");
	case 'c':
		return PROXY_REDACT_AT(s, left, "cookie") ||
		    PROXY_REDACT_AT(s, left, "credential");
	case 'p':
		return PROXY_REDACT_AT(s, left, "passw");
	case 's':
		return PROXY_REDACT_AT(s, left, "secret") ||
		    PROXY_REDACT_AT(s, left, "session") ||
		    PROXY_REDACT_AT(s, left, "signature");
	case 't':
		return PROXY_REDACT_AT(s, left, "token");
	default:
		return false;
	}
}

/* True if the LEN bytes of NAME name a header that carries credentials. */
static bool
proxy_redact_name_n(const char *name, size_t len)
{
	char lower[128];
	size_t i;

	if (len >= sizeof lower)
		return true;   /* no credential header is that long: be safe */
	for (i = 0; i < len; i++)
		lower[i] = (char)(name[i] >= 'A' && name[i] <= 'Z' ?
		    name[i] + 32 : name[i]);
	for (i = 0; i < len; i++) {
		if (proxy_redact_part_at(lower + i, len - i))
			return true;
	}
	/* "X-Foo-Key" style names; not Keep-Alive, Sec-WebSocket-Key is harmless. */
	return len > 4 && memcmp(lower + len - 4, "-key", 4) == 0;
}

bool
proxy_redact_name(const char *name)
{
	return proxy_redact_name_n(name, strlen(name));
}

static bool
proxy_redact_has_value(const char *s, size_t len, const char *const *values)
{
	for (; values != NULL && *values != NULL; values++) {
		if (**values != '\0' &&
		    memmem(s, len, *values, strlen(*values)) != NULL)
			return true;
	}
	return false;
}

/* Whether LINE ("Name: value\n", LEN bytes) must be redacted, and where its name ends. */
static bool
proxy_redact_line(const char *line, size_t len, const char *const *values,
    size_t *namelen)
{
	const char *colon = memchr(line, ':', len);

	*namelen = colon != NULL ? (size_t)(colon - line) : len;
	if (colon != NULL && proxy_redact_name_n(line, *namelen))
		return true;
	return proxy_redact_has_value(line, len, values);
}

void
proxy_redact_inplace(struct buf *b, const char *const *values)
{
	const char *line, *end, *stop;
	struct buf out;
	size_t len, namelen;
	bool any = false;

	if (b->data == NULL)
		return;
	stop = b->data + b->len;
	for (line = b->data; line < stop && !any; line = end) {
		end = memchr(line, '\n', (size_t)(stop - line));
		end = end != NULL ? end + 1 : stop;
		any = proxy_redact_line(line, (size_t)(end - line), values,
		    &namelen);
	}
	if (!any)
		return;
	buf_init(&out);
	buf_add(&out, "", 0);
	for (line = b->data; line < stop; line = end) {
		end = memchr(line, '\n', (size_t)(stop - line));
		end = end != NULL ? end + 1 : stop;
		len = (size_t)(end - line);
		if (!proxy_redact_line(line, len, values, &namelen))
			buf_add(&out, line, len);
		else if (namelen < len &&
		    proxy_redact_has_value(line, namelen, values))
			/* A server may echo a value as a header's name, too. */
			buf_adds(&out, PROXY_REDACTED ": " PROXY_REDACTED "\n");
		else if (namelen < len) {
			buf_add(&out, line, namelen);
			buf_adds(&out, ": " PROXY_REDACTED "\n");
		}
	}
	buf_free(b);
	*b = out;
}

char *
proxy_redact_headers(const char *headers, const char *const *values)
{
	struct buf b;

	buf_init(&b);
	buf_adds(&b, headers);
	proxy_redact_inplace(&b, values);
	return buf_steal(&b);
}

void
proxy_redact_buf(struct buf *b, const char *const *values)
{
	struct buf out;
	const char *p, *at, *end;
	size_t vlen;

	for (; values != NULL && *values != NULL; values++) {
		if ((vlen = strlen(*values)) == 0 || b->len == 0)
			continue;
		if (memmem(b->data, b->len, *values, vlen) == NULL)
			continue;
		buf_init(&out);
		p = b->data;
		end = b->data + b->len;
		while ((at = memmem(p, (size_t)(end - p), *values, vlen)) !=
		    NULL) {
			buf_add(&out, p, (size_t)(at - p));
			buf_adds(&out, PROXY_REDACTED);
			p = at + vlen;
		}
		buf_add(&out, p, (size_t)(end - p));
		buf_free(b);
		*b = out;
	}
}
