/* Redacting what looks like a secret from lines shown to the user (config diffs). */
#include <ctype.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "snap/snap-int.h"

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

#define SNAP_REDACT_WORDS 8   /* words of a key looked at, the last ones */
#define SNAP_REDACT_WORDLEN 32

/*
 * The last words of key K (N bytes), lower case, into W, the last one at
 * W[*nw - 1]: words end at '_', '-', '.', a space, or where lower case
 * turns upper ("apiKey" is "api key", "GITHUB_TOKEN" is "github token").
 */
static void
snap_redact_key_words(const char *k, size_t n,
    char w[SNAP_REDACT_WORDS][SNAP_REDACT_WORDLEN], size_t *nw)
{
	size_t i, len = 0;
	bool split;

	*nw = 0;
	for (i = 0; i < n; i++) {
		split = !isalnum((unsigned char)k[i]) || (i > 0 &&
		    islower((unsigned char)k[i - 1]) &&
		    isupper((unsigned char)k[i]));
		if (split)
			len = 0;
		if (!isalnum((unsigned char)k[i]) || len + 1 >= SNAP_REDACT_WORDLEN)
			continue;
		if (len == 0) {
			if (*nw == SNAP_REDACT_WORDS) {
				memmove(w[0], w[1], sizeof w[0] *
				    (SNAP_REDACT_WORDS - 1));
				(*nw)--;
			}
			(*nw)++;
		}
		w[*nw - 1][len++] = (char)tolower((unsigned char)k[i]);
		w[*nw - 1][len] = '\0';
	}
}

/* Whether word W is WANT or its plural ("tokens", "apiKeys"). */
static bool
snap_redact_word_is(const char *w, const char *want)
{
	size_t n = strlen(want);

	return strncmp(w, want, n) == 0 && (w[n] == '\0' ||
	    (w[n] == 's' && w[n + 1] == '\0'));
}

/* Whether W names a credential: token, secret, password, key... or their plurals. */
static bool
snap_redact_credential_word(const char *w)
{
	static const char *const words[] = { "token", "secret", "password",
	    "passwd", "pwd", "passphrase", "credential", "cookie", "auth",
	    "authorization", "apikey", "bearer", "pat", "key" };
	size_t i;

	for (i = 0; i < nitems(words); i++)
		if (snap_redact_word_is(w, words[i]))
			return true;
	return false;
}

/*
 * How key K (N bytes) names a credential. SNAP_REDACT_KEY: its last word
 * does (api_key, GITHUB_TOKEN, hmacKey, apiKeys), unless it is a key that
 * the word before makes harmless ("primary key", "sortKey"); every value
 * under it is hidden. SNAP_REDACT_RANDOM: a credential word is elsewhere in
 * it (secret_key_base, apiKeyHelper, awsAuthRefresh); only a value that
 * looks like key material is hidden, so commands stay visible. Else
 * SNAP_REDACT_ALWAYS, meaning not a credential.
 */
static enum snap_redact_check
snap_redact_credential_key(const char *k, size_t n)
{
	static const char *const harmless[] = { "public", "primary",
	    "foreign", "sort", "partition", "idempotency", "cache" };
	char w[SNAP_REDACT_WORDS][SNAP_REDACT_WORDLEN] = { { 0 } };
	const char *last, *prev;
	size_t i, nw;

	snap_redact_key_words(k, n, w, &nw);
	if (nw == 0)
		return SNAP_REDACT_ALWAYS;
	last = w[nw - 1];
	prev = nw > 1 ? w[nw - 2] : "";
	if (snap_redact_credential_word(last)) {
		if (!snap_redact_word_is(last, "key"))
			return SNAP_REDACT_KEY;
		for (i = 0; i < nitems(harmless); i++)
			if (strcmp(prev, harmless[i]) == 0)
				return SNAP_REDACT_RANDOM;
		return SNAP_REDACT_KEY;
	}
	for (i = 0; i + 1 < nw; i++)
		if (snap_redact_credential_word(w[i]))
			return SNAP_REDACT_RANDOM;
	return SNAP_REDACT_ALWAYS;
}

/*
 * Whether value V (N bytes) looks like key material: random-looking, or 32
 * or more hex digits, or of lower case and digits (key-3ax6..., a Rails
 * secret_key_base), which snap_redact_random alone lets through.
 */
static bool
snap_redact_material(const char *s, size_t n)
{
	bool hex = true, low = true, alpha = false, dig = false;
	size_t i;

	if (n >= 16 && snap_redact_random(s, n))
		return true;
	if (n < 32)
		return false;
	for (i = 0; i < n; i++) {
		hex = hex && isxdigit((unsigned char)s[i]);
		low = low && (islower((unsigned char)s[i]) ||
		    isdigit((unsigned char)s[i]) || s[i] == '-' || s[i] == '_');
		alpha |= isalpha((unsigned char)s[i]) != 0;
		dig |= isdigit((unsigned char)s[i]) != 0;
	}
	return hex || (low && alpha && dig);
}

/* Whether pattern I's match M at P is to be hidden. */
static bool
snap_redact_hides(size_t i, const char *p, const regmatch_t *m)
{
	int g = snap_redact_patterns[i].group, kg = snap_redact_patterns[i].key;
	const char *v = p + m[g].rm_so;
	size_t n = (size_t)(m[g].rm_eo - m[g].rm_so);
	enum snap_redact_check kc;

	if (m[g].rm_so == -1)
		return false;
	switch (snap_redact_patterns[i].check) {
	case SNAP_REDACT_ALWAYS:
		return true;
	case SNAP_REDACT_KEY:
		if (m[kg].rm_so == -1 || snap_redact_harmless(v, n))
			return false;
		kc = snap_redact_credential_key(p + m[kg].rm_so,
		    (size_t)(m[kg].rm_eo - m[kg].rm_so));
		return kc == SNAP_REDACT_KEY || (kc == SNAP_REDACT_RANDOM &&
		    snap_redact_material(v, n));
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
