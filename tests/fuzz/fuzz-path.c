/*
 * Fuzzes the path normaliser with any request target. A path it accepts
 * must be in the form policy assumes: starting with '/', no empty, "." or
 * ".." segments, no escape of an unreserved character, no encoded '\' or
 * NUL, none of those either when an encoded '/' is read as one, nothing a second decoding would turn into '.', '/' or '\',
 * escapes in upper case; normalising it again changes nothing;
 * the query is the input's, byte for byte.
 */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "fuzz.h"
#include "proxy/proxy-int.h"

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	return 0;
}

static bool
fuzz_path_unreserved(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || strchr("-._~", c) != NULL;
}

/* Aborts unless the escape at P (two characters follow) is one a normal path may hold. */
static void
fuzz_path_escape(const char *p)
{
	int hi = proxy_hexval((unsigned char)p[1]);
	int lo = proxy_hexval((unsigned char)p[2]);
	int c = hi * 16 + lo;

	if (hi == -1 || lo == -1 || (p[1] >= 'a' && p[1] <= 'f') ||
	    (p[2] >= 'a' && p[2] <= 'f') || c == 0 || c == '\\' ||
	    fuzz_path_unreserved(c))
		abort();
}

/* Aborts if the path part P[0..LEN) has an empty segment (but a last), "." or "..". */
static void
fuzz_path_segments(const char *p, size_t len)
{
	size_t start, n;

	for (start = 1; start <= len; start += n + 1) {
		for (n = 0; start + n < len && p[start + n] != '/'; n++)
			;
		if (n == 0 && start + n < len)
			abort();
		if ((n == 1 && p[start] == '.') ||
		    (n == 2 && p[start] == '.' && p[start + 1] == '.'))
			abort();
	}
}

/* Aborts unless the path part P[0..LEN) is in normal form. */
static void
fuzz_path_check(const char *p, size_t len)
{
	char *path, *slashed;
	size_t i;

	if (len == 0 || p[0] != '/')
		abort();
	for (i = 0; i < len; i++) {
		if (p[i] == '\\' || p[i] == '?' || p[i] == '\0')
			abort();
		if (p[i] != '%')
			continue;
		if (i + 2 >= len)
			abort();
		fuzz_path_escape(p + i);
		/* A server that decodes twice must not find '.', '/' or '\\' either. */
		if (i + 4 < len && p[i + 1] == '2' && p[i + 2] == '5' &&
		    ((p[i + 3] == '2' && strchr("EeFf", p[i + 4]) != NULL) ||
		    (p[i + 3] == '5' && strchr("Cc", p[i + 4]) != NULL)))
			abort();
	}
	/* No empty segment but after a final '/', none "." or "..". */
	fuzz_path_segments(p, len);
	/* Nor in the reading of a server that decodes "%2F". */
	path = xstrndup(p, len);
	if ((slashed = proxy_path_slash_reading(path)) != NULL)
		fuzz_path_segments(slashed, strlen(slashed));
	free(slashed);
	free(path);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *in = xstrndup((const char *)data, size), *out, *again;
	const char *why = NULL, *q_in, *q_out;
	size_t len = 0, len2 = 0;

	out = proxy_path_normalise(in, &len, &why);
	if (out == NULL) {
		if (why == NULL || *why == '\0')
			abort();
		free(in);
		return 0;
	}
	if (len > strlen(out))
		abort();
	fuzz_path_check(out, len);
	/* The query, from the first '?', is passed as it came. */
	q_in = strchr(in, '?');
	q_out = out + len;
	if (q_in != NULL ? strcmp(q_in, q_out) != 0 : *q_out != '\0')
		abort();
	if ((again = proxy_path_normalise(out, &len2, &why)) == NULL ||
	    strcmp(again, out) != 0 || len2 != len)
		abort();
	free(again);
	free(out);
	free(in);
	return 0;
}
