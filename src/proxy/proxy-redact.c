/* Redaction of what is recorded: credential headers and every known secret value. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "proxy/proxy-int.h"

#define PROXY_REDACTED "[redacted]"

bool
proxy_redact_name(const char *name)
{
	static const char *const exact[] = { "authorization",
		"proxy-authorization", "cookie", "set-cookie", "x-api-key",
		"api-key", "apikey", "x-goog-api-key", "private-token",
		"x-auth-token", "x-access-token", "x-csrf-token" };
	static const char *const parts[] = { "auth", "token", "secret",
		"passw", "api-key", "api_key", "apikey", "cookie", "session",
		"signature", "credential" };
	size_t i, len = strlen(name);
	char *lower, *p;
	bool hit = false;

	for (i = 0; i < nitems(exact); i++) {
		if (strcasecmp(name, exact[i]) == 0)
			return true;
	}
	lower = xstrdup(name);
	for (p = lower; *p != '\0'; p++)
		*p = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
	for (i = 0; i < nitems(parts) && !hit; i++)
		hit = strstr(lower, parts[i]) != NULL;
	/* "X-Foo-Key" style names; not Keep-Alive, Sec-WebSocket-Key is harmless. */
	if (!hit && len > 4 && strcmp(lower + len - 4, "-key") == 0)
		hit = true;
	free(lower);
	return hit;
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

char *
proxy_redact_headers(const char *headers, const char *const *values)
{
	const char *line, *end, *colon;
	struct buf b;
	char *name;
	size_t len;

	buf_init(&b);
	buf_adds(&b, "");
	for (line = headers; *line != '\0'; line = end) {
		end = strchr(line, '\n');
		end = end != NULL ? end + 1 : line + strlen(line);
		len = (size_t)(end - line);
		colon = memchr(line, ':', len);
		if (colon == NULL) {
			if (!proxy_redact_has_value(line, len, values))
				buf_add(&b, line, len);
			continue;
		}
		name = xstrndup(line, (size_t)(colon - line));
		/* A server may echo a value as a header's name, too. */
		if (proxy_redact_has_value(name, strlen(name), values))
			buf_adds(&b, PROXY_REDACTED ": " PROXY_REDACTED "\n");
		else if (proxy_redact_name(name) ||
		    proxy_redact_has_value(line, len, values))
			buf_printf(&b, "%s: " PROXY_REDACTED "\n", name);
		else
			buf_add(&b, line, len);
		free(name);
	}
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
