/*
 * Fuzzes the redaction of what is recorded (proxy-redact.c): header lines
 * and bodies, with secret values from the input. Beyond "no crash": no
 * value that looks like a secret survives, and credential headers keep
 * their name but never their value.
 *
 * Input: secret values, one a line, then a NUL byte, then the headers
 * ("Name: value\n" lines, arbitrary bytes).
 */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "fuzz.h"
#include "fuzz-util.h"
#include "proxy/proxy-int.h"

#define FUZZ_REDACT_VALUES 4

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	return 0;
}

/* Every line of OUT whose name carries credentials has no other value. */
static void
fuzz_redact_names(const char *out)
{
	const char *line, *end, *colon;
	char *name;

	for (line = out; *line != '\0'; line = end) {
		end = strchr(line, '\n');
		end = end != NULL ? end + 1 : line + strlen(line);
		if ((colon = memchr(line, ':', (size_t)(end - line))) == NULL)
			continue;
		name = xstrndup(line, (size_t)(colon - line));
		if (proxy_redact_name(name) &&
		    strncmp(colon, ": [redacted]\n", 13) != 0)
			abort();
		free(name);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *values[FUZZ_REDACT_VALUES + 1] = { NULL };
	const uint8_t *nul = memchr(data, '\0', size);
	char *text = xstrndup((const char *)data, size), *line, *save = NULL;
	char *headers, *out;
	struct buf b;
	size_t n = 0;

	/* xstrndup stops at the NUL: TEXT holds the values only. */
	headers = nul != NULL ? xstrndup((const char *)nul + 1,
	    size - (size_t)(nul + 1 - data)) : xstrdup("");
	for (line = strtok_r(text, "\n", &save); line != NULL &&
	    n < FUZZ_REDACT_VALUES; line = strtok_r(NULL, "\n", &save))
		values[n++] = line;

	out = proxy_redact_headers(headers, values);
	fuzz_check_redacted(out, strlen(out), values);
	fuzz_redact_names(out);
	free(out);

	buf_init(&b);
	buf_add(&b, headers, strlen(headers));
	proxy_redact_buf(&b, values);
	if (b.len != 0)
		fuzz_check_redacted(b.data, b.len, values);
	buf_free(&b);

	free(headers);
	free(text);
	return 0;
}
