/* Redacting what looks like a secret from lines shown to the user (config diffs). */
#include <ctype.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "store/snap-int.h"

#define SNAP_REDACTED "[REDACTED]"

/* What a pattern's match must pass before it is hidden. */
enum snap_redact_check {
	SNAP_REDACT_ALWAYS,
	SNAP_REDACT_KEY,      /* under a credential-shaped key, and not harmless */
	SNAP_REDACT_VALUE,    /* not a harmless value */
	SNAP_REDACT_RANDOM,   /* random-looking: upper case, lower case, digits */
};

/*
 * Each pattern, the group that holds what to hide, the group that holds its
 * key (0: none), and the check. Compiled once; they live as long as the
 * process. A key decides, never a word in prose: "sessionId" or "token
 * refresh" hide nothing, "apiKey" and GITHUB_TOKEN do.
 */
static const struct {
	const char *re;
	int group;
	int key;
	enum snap_redact_check check;
} snap_redact_patterns[] = {
	/* "apiKey": "..." in JSON */
	{ "\"([^\"\\\\]*)\"[[:space:]]*:[[:space:]]*\"(([^\"\\\\]|\\\\.)*)\"",
	  2, 1, SNAP_REDACT_KEY },
	/* Authorization: Bearer ..., Basic ..., or the bare value */
	{ "(proxy-)?authorization['\"]?[[:space:]]*[:=][[:space:]]*['\"]?"
	  "((bearer|basic|token|digest)[[:space:]]+)?([^'\"[:space:],;]+)", 4, 0,
	  SNAP_REDACT_VALUE },
	/* a bearer token in a command line (curl -H ...), if random-looking */
	{ "bearer[[:space:]]+([A-Za-z0-9._~+/=-]{16,})", 1, 0,
	  SNAP_REDACT_RANDOM },
	/* api_key = ..., TOKEN=..., password: ... (INI, env, YAML, TOML) */
	{ "([A-Za-z0-9_.-]+)['\"]?[[:space:]]*[:=][[:space:]]*['\"]?"
	  "([^'\"[:space:],;]+)", 2, 1, SNAP_REDACT_KEY },
	/* well-known token shapes */
	{ "(sk-[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|"
	  "github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{16,}|"
	  "xox[abprs]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}|"
	  "AIza[0-9A-Za-z_-]{30,}|npm_[A-Za-z0-9]{30,}|"
	  "eyJ[A-Za-z0-9_-]{8,}\\.[A-Za-z0-9_-]{8,}\\.[A-Za-z0-9_-]{8,})", 1, 0,
	  SNAP_REDACT_ALWAYS },
	/* long random-looking runs (key material, base64 secrets) */
	{ "([A-Za-z0-9+/_=-]{40,})", 1, 0, SNAP_REDACT_RANDOM },
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
		flags = REG_EXTENDED | (i < 4 ? REG_ICASE : 0);
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

/*
 * The last two words of key K (N bytes), lower case, into LAST and PREV:
 * words end at '_', '-', '.', a space, or where lower case turns upper
 * ("apiKey" is "api key", "GITHUB_TOKEN" is "github token").
 */
static void
snap_redact_key_words(const char *k, size_t n, char *last, char *prev,
    size_t cap)
{
	size_t i, len = 0;
	bool split;

	*last = *prev = '\0';
	for (i = 0; i < n; i++) {
		split = !isalnum((unsigned char)k[i]) || (i > 0 &&
		    islower((unsigned char)k[i - 1]) &&
		    isupper((unsigned char)k[i]));
		if (split && len > 0) {
			memcpy(prev, last, cap);
			len = 0;
			*last = '\0';
		}
		if (!isalnum((unsigned char)k[i]) || len + 1 >= cap)
			continue;
		last[len++] = (char)tolower((unsigned char)k[i]);
		last[len] = '\0';
	}
}

/* Whether key K (N bytes) names a credential: api_key, GITHUB_TOKEN, password, clientSecret... */
static bool
snap_redact_credential_key(const char *k, size_t n)
{
	static const char *const lasts[] = { "token", "secret", "password",
	    "passwd", "pwd", "passphrase", "credential", "credentials", "cookie",
	    "auth", "authorization", "apikey", "bearer", "pat" };
	static const char *const keys[] = { "api", "access", "private",
	    "secret", "signing", "encryption", "client", "license", "auth",
	    "master", "session", "ssh", "account" };
	char last[32], prev[32];
	size_t i;

	snap_redact_key_words(k, n, last, prev, sizeof last);
	for (i = 0; i < nitems(lasts); i++)
		if (strcmp(last, lasts[i]) == 0)
			return true;
	if (strcmp(last, "key") != 0)
		return false;
	for (i = 0; i < nitems(keys); i++)
		if (strcmp(prev, keys[i]) == 0)
			return true;
	return false;
}

/* Whether pattern I's match M at P is to be hidden. */
static bool
snap_redact_hides(size_t i, const char *p, const regmatch_t *m)
{
	int g = snap_redact_patterns[i].group, kg = snap_redact_patterns[i].key;
	const char *v = p + m[g].rm_so;
	size_t n = (size_t)(m[g].rm_eo - m[g].rm_so);

	if (m[g].rm_so == -1)
		return false;
	switch (snap_redact_patterns[i].check) {
	case SNAP_REDACT_ALWAYS:
		return true;
	case SNAP_REDACT_KEY:
		return m[kg].rm_so != -1 && snap_redact_credential_key(p +
		    m[kg].rm_so, (size_t)(m[kg].rm_eo - m[kg].rm_so)) &&
		    !snap_redact_harmless(v, n);
	case SNAP_REDACT_VALUE:
		return !snap_redact_harmless(v, n);
	case SNAP_REDACT_RANDOM:
		return snap_redact_random(v, n);
	}
	return true;
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
		if (!snap_redact_hides(i, p, m)) {
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
