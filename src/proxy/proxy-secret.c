/* Secrets: placeholders the jail holds, swapped for the real value only on the way to a bound host. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/proxy-int.h"

#define PROXY_SECRET_RANDOM_MIN 16   /* random characters in a placeholder, at least */

/*
 * How much of VALUE a placeholder may keep: a prefix that ends at a '-' or
 * '_' in the first 16 characters ("sk-ant-api03-", "ghp_") and leaves at
 * least 16 characters after it. Clients check such prefixes; they carry
 * no secret.
 */
static size_t
proxy_secret_prefix_len(const char *value)
{
	size_t len = strlen(value), i, best = 0;

	for (i = 0; i < len && i < 16; i++) {
		if (!isalnum((unsigned char)value[i]) && value[i] != '-' &&
		    value[i] != '_')
			break;
		if ((value[i] == '-' || value[i] == '_') &&
		    len - (i + 1) >= PROXY_SECRET_RANDOM_MIN)
			best = i + 1;
	}
	return best;
}

/* A random character of the same class as C, or C itself for punctuation. */
static char
proxy_secret_random_like(char c)
{
	static const char lower[] = "abcdefghijklmnopqrstuvwxyz";
	static const char upper[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
	static const char digit[] = "0123456789";
	uint32_t r;

	util_random(&r, sizeof r);
	if (islower((unsigned char)c))
		return lower[r % 26];
	if (isupper((unsigned char)c))
		return upper[r % 26];
	if (isdigit((unsigned char)c))
		return digit[r % 10];
	return c;
}

char *
proxy_secret_placeholder(const char *value)
{
	size_t keep = proxy_secret_prefix_len(value), len = strlen(value);
	size_t i, nrand = 0;
	struct buf b;
	char c;

	buf_init(&b);
	buf_add(&b, value, keep);
	for (i = keep; i < len; i++) {
		c = proxy_secret_random_like(value[i]);
		if (c != value[i] || isalnum((unsigned char)c))
			nrand++;
		buf_addc(&b, c);
	}
	/* Short values get longer placeholders: they must never collide. */
	while (nrand++ < PROXY_SECRET_RANDOM_MIN)
		buf_addc(&b, proxy_secret_random_like('a'));
	if (strcmp(b.data, value) == 0)
		fatalx("proxy_secret_placeholder: placeholder equals the value");
	return buf_steal(&b);
}

bool
proxy_secret_bound(const struct proxy_secret *s, const char *host)
{
	char *const *h;

	for (h = s->hosts; h != NULL && *h != NULL; h++) {
		if (util_glob_match(*h, host, true))
			return true;
	}
	return false;
}

char *
proxy_secret_swap(const struct proxy_secret *s, const char *value)
{
	size_t plen = strlen(s->placeholder);
	const char *p, *at;
	struct buf b;

	if (plen == 0 || strstr(value, s->placeholder) == NULL)
		return NULL;
	buf_init(&b);
	for (p = value; (at = strstr(p, s->placeholder)) != NULL; p = at + plen) {
		buf_add(&b, p, (size_t)(at - p));
		buf_adds(&b, s->value);
	}
	buf_adds(&b, p);
	return buf_steal(&b);
}
