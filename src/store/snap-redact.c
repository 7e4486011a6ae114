/* Redacting what looks like a secret from lines shown to the user (config diffs). */
#include <ctype.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "store/snap-int.h"

#define SNAP_REDACTED "[REDACTED]"

/* Names whose values are secrets: api_key, GITHUB_TOKEN, "password", ... */
#define SNAP_SECRET_NAME \
	"(token|secret|passw|pwd|key|auth|credential|cookie|session)"

/*
 * Each pattern and the group that holds what to hide. Compiled once; they
 * live as long as the process.
 */
static const struct {
	const char *re;
	int group;
} snap_redact_patterns[] = {
	/* "apiKey": "..." in JSON */
	{ "\"[^\"]*" SNAP_SECRET_NAME "[^\"]*\"[[:space:]]*:[[:space:]]*"
	  "\"(([^\"\\\\]|\\\\.)*)\"", 2 },
	/* Authorization: Bearer ..., Basic ..., token ... */
	{ "(bearer|basic|token)[[:space:]]+([A-Za-z0-9._~+/=-]{8,})", 2 },
	/* api_key = ..., TOKEN=..., password: ... (INI, env, YAML, TOML) */
	{ "[A-Za-z0-9_.-]*" SNAP_SECRET_NAME "[A-Za-z0-9_.-]*['\"]?[[:space:]]*"
	  "[:=][[:space:]]*['\"]?([^'\"[:space:],;]+)", 2 },
	/* well-known token shapes */
	{ "(sk-[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|"
	  "github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{16,}|"
	  "xox[abprs]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}|"
	  "AIza[0-9A-Za-z_-]{30,}|npm_[A-Za-z0-9]{30,}|"
	  "eyJ[A-Za-z0-9_-]{8,}\\.[A-Za-z0-9_-]{8,}\\.[A-Za-z0-9_-]{8,})", 1 },
	/* long random-looking runs (key material, base64 secrets) */
	{ "([A-Za-z0-9+/_=-]{40,})", 1 },
};

static regex_t snap_redact_re[nitems(snap_redact_patterns)];
static bool snap_redact_ready;

static void
snap_redact_init(void)
{
	size_t i;
	int flags;

	if (snap_redact_ready)
		return;
	for (i = 0; i < nitems(snap_redact_patterns); i++) {
		flags = REG_EXTENDED | (i < 3 ? REG_ICASE : 0);
		if (regcomp(&snap_redact_re[i], snap_redact_patterns[i].re,
		    flags) != 0)
			fatalx("cannot compile redaction pattern %zu", i);
	}
	snap_redact_ready = true;
}

/* Values that are not secrets even under a secret-sounding name. */
static bool
snap_redact_harmless(const char *s, size_t n)
{
	static const char *const words[] = { "true", "false", "null", "yes",
	    "no", "on", "off", "none", "bearer", "basic", "token",
	    SNAP_REDACTED };
	size_t i, digits = 0;

	for (i = 0; i < n; i++)
		digits += isdigit((unsigned char)s[i]) || s[i] == '.';
	if (n == 0 || digits == n || n < 4)
		return true;
	for (i = 0; i < nitems(words); i++) {
		if (strlen(words[i]) == n && strncasecmp(s, words[i], n) == 0)
			return true;
	}
	return false;
}

/* A long run is random-looking if it mixes upper case, lower case and digits. */
static bool
snap_redact_random(const char *s, size_t n)
{
	bool up = false, low = false, dig = false;
	size_t i;

	for (i = 0; i < n; i++) {
		up |= isupper((unsigned char)s[i]) != 0;
		low |= islower((unsigned char)s[i]) != 0;
		dig |= isdigit((unsigned char)s[i]) != 0;
	}
	return up && low && dig;
}

/* Applies pattern I to LINE; returns the new line (caller frees). */
static char *
snap_redact_one(const char *line, size_t i)
{
	regmatch_t m[8];
	struct buf b;
	const char *p = line;
	int g = snap_redact_patterns[i].group, eflags = 0;
	size_t so, eo;

	buf_init(&b);
	while (regexec(&snap_redact_re[i], p, nitems(m), m, eflags) == 0) {
		so = (size_t)m[g].rm_so;
		eo = (size_t)m[g].rm_eo;
		if (m[0].rm_eo == 0) { /* empty match: step on */
			if (*p == '\0')
				break;
			buf_addc(&b, *p++);
			eflags = REG_NOTBOL;
			continue;
		}
		if (m[g].rm_so == -1 || ((i == 0 || i == 2) && snap_redact_harmless(p + so,
		    eo - so)) || (i == 4 && !snap_redact_random(p + so,
		    eo - so))) {
			buf_add(&b, p, (size_t)m[0].rm_eo);
		} else {
			buf_add(&b, p, so);
			buf_adds(&b, SNAP_REDACTED);
			buf_add(&b, p + eo, (size_t)m[0].rm_eo - eo);
		}
		p += m[0].rm_eo;
		eflags = REG_NOTBOL;
	}
	buf_adds(&b, p);
	return buf_steal(&b);
}

/* Replaces every occurrence of SECRET in LINE. */
static char *
snap_redact_value(const char *line, const char *secret)
{
	struct buf b;
	const char *p = line, *q;
	size_t n = strlen(secret);

	buf_init(&b);
	while ((q = strstr(p, secret)) != NULL) {
		buf_add(&b, p, (size_t)(q - p));
		buf_adds(&b, SNAP_REDACTED);
		p = q + n;
	}
	buf_adds(&b, p);
	return buf_steal(&b);
}

char *
snap_redact_line(const char *line, char *const *secrets, size_t nsecrets)
{
	char *cur = xstrdup(line), *next;
	size_t i;

	snap_redact_init();
	for (i = 0; i < nsecrets; i++) {
		next = snap_redact_value(cur, secrets[i]);
		free(cur);
		cur = next;
	}
	for (i = 0; i < nitems(snap_redact_patterns); i++) {
		next = snap_redact_one(cur, i);
		free(cur);
		cur = next;
	}
	return cur;
}

/* A secret's value from its environment variable or file; caller frees. */
static char *
snap_redact_source(const struct config_secret *s)
{
	struct buf b;
	char *path;
	const char *v;

	if (s->from_env != NULL && (v = getenv(s->from_env)) != NULL)
		return xstrdup(v);
	if (s->file == NULL)
		return NULL; /* a command's output is not run for this */
	path = path_expand_home(s->file);
	buf_init(&b);
	if (buf_read_file(&b, path) == -1 || b.data == NULL) {
		free(path);
		buf_free(&b);
		return NULL;
	}
	free(path);
	while (b.len > 0 && isspace((unsigned char)b.data[b.len - 1]))
		b.data[--b.len] = '\0';
	return buf_steal(&b);
}

char **
snap_redact_secrets(const struct config *cf, size_t *n)
{
	char **v = NULL, *val;
	size_t i;

	*n = 0;
	for (i = 0; cf != NULL && i < cf->nsecrets; i++) {
		if ((val = snap_redact_source(&cf->secrets[i])) == NULL)
			continue;
		if (strlen(val) < 4) {
			free(val);
			continue;
		}
		v = xreallocarray(v, *n + 1, sizeof *v);
		v[(*n)++] = val;
	}
	return v;
}
