/* Checks several fuzzers share: secret values that must never be recorded. */
#ifndef AGENTMUX_FUZZ_UTIL_H
#define AGENTMUX_FUZZ_UTIL_H

#include <stdbool.h>
#include <stddef.h>

/* A secret's real value, as a profile would configure it. */
#define FUZZ_SECRET_VALUE "sk-fuzz-S3cr3tV4lu3-0123456789"

/*
 * True if V looks like a real secret: at least 8 characters of the sort
 * tokens are made of, and not a piece of the "[redacted]" marker itself,
 * which the redaction writes.
 */
bool fuzz_secret_like(const char *v);
/* Aborts if one of VALUES that looks like a secret occurs in DATA. */
void fuzz_check_redacted(const char *data, size_t len,
    const char *const *values);

#endif
