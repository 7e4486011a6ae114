/* Checks several fuzzers share: secret values that must never be recorded. */
#include <stdlib.h>
#include <string.h>

#include "fuzz-util.h"

bool
fuzz_secret_like(const char *v)
{
	size_t len = strlen(v);

	if (len < 8 || strstr("[redacted]", v) != NULL)
		return false;
	return strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "0123456789._~+/=-") == len;
}

void
fuzz_check_redacted(const char *data, size_t len, const char *const *values)
{
	for (; values != NULL && *values != NULL; values++) {
		if (fuzz_secret_like(*values) &&
		    memmem(data, len, *values, strlen(*values)) != NULL)
			abort();
	}
}
