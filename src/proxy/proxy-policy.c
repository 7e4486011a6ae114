/* Policy rules "allow|deny|tunnel HOST[:PORT] [METHOD] [PATH]": parsing and most-specific-wins matching. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/core.h"
#include "proxy/proxy.h"

struct proxy_rule {
	enum proxy_verdict verdict;
	char *host;            /* lower case; may be a glob; IPv6 without brackets */
	bool host_glob;
	int port;              /* 0: any */
	struct strv methods;   /* empty: any */
	char *path;            /* NULL: any */
	bool path_glob;
	char *desc;            /* "allow host GET /x (origin)" */
	char *text;            /* "allow host GET /x" */
	char *origin;
	/* Specificity, compared in this order (proxy_rule_cmp). */
	int spec_host;
	int spec_path;
	int spec_method;
	int spec_port;
};

struct proxy_policy {
	struct proxy_rule *v;
	size_t n;
};

struct proxy_policy *
proxy_policy_create(void)
{
	return xcalloc(1, sizeof(struct proxy_policy));
}

static void
proxy_rule_free(struct proxy_rule *r)
{
	free(r->host);
	strv_free(&r->methods);
	free(r->path);
	free(r->desc);
	free(r->text);
	free(r->origin);
}

void
proxy_policy_free(struct proxy_policy *pol)
{
	size_t i;

	if (pol == NULL)
		return;
	for (i = 0; i < pol->n; i++)
		proxy_rule_free(&pol->v[i]);
	free(pol->v);
	free(pol);
}

static bool
proxy_policy_is_glob(const char *s)
{
	return strpbrk(s, "*?[") != NULL;
}

/* Counts the characters of S that are not wildcards. */
static int
proxy_policy_literal_len(const char *s)
{
	int n = 0;

	for (; *s != '\0'; s++) {
		if (*s != '*' && *s != '?')
			n++;
	}
	return n;
}

static int
proxy_policy_parse_port(const char *s, int *port, char **cause)
{
	long long v;
	char *err = NULL;

	if (strcmp(s, "*") == 0) {
		*port = 0;
		return 0;
	}
	if (util_parse_int(s, 1, 65535, &v, &err) == -1) {
		*cause = xprintf("bad port '%s' (1 to 65535, or *)", s);
		free(err);
		return -1;
	}
	*port = (int)v;
	return 0;
}

static int
proxy_policy_parse_host(struct proxy_rule *r, const char *word, char **cause)
{
	const char *colon, *end;
	char *host, *p;

	if (strstr(word, "://") != NULL) {
		*cause = xprintf("'%s' is a URL; write HOST[:PORT] [METHOD] "
		    "[PATH] (e.g. 'api.example.com:443 GET /v1/')", word);
		return -1;
	}
	if (word[0] == '[') {
		if ((end = strchr(word, ']')) == NULL) {
			*cause = xprintf("'%s': missing ']' after an IPv6 "
			    "address", word);
			return -1;
		}
		host = xstrndup(word + 1, (size_t)(end - word - 1));
		colon = end[1] == ':' ? end + 1 : NULL;
		if (end[1] != '\0' && colon == NULL) {
			*cause = xprintf("'%s': expected ':PORT' after ']'", word);
			free(host);
			return -1;
		}
	} else {
		colon = strrchr(word, ':');
		if (colon != NULL && strchr(word, ':') != colon) {
			*cause = xprintf("'%s': put an IPv6 address in brackets, "
			    "e.g. [::1]:443", word);
			return -1;
		}
		host = colon != NULL ? xstrndup(word, (size_t)(colon - word)) :
		    xstrdup(word);
	}
	if (*host == '\0') {
		*cause = xprintf("'%s' has no host", word);
		free(host);
		return -1;
	}
	for (p = host; *p != '\0'; p++) {
		if (!isalnum((unsigned char)*p) && strchr(".-_*?:", *p) == NULL) {
			*cause = xprintf("'%s': '%c' cannot be in a host name",
			    word, *p);
			free(host);
			return -1;
		}
		*p = (char)tolower((unsigned char)*p);
	}
	r->host = host;
	r->host_glob = proxy_policy_is_glob(host);
	if (colon != NULL && proxy_policy_parse_port(colon + 1, &r->port,
	    cause) == -1)
		return -1;
	return 0;
}

static int
proxy_policy_parse_methods(struct proxy_rule *r, const char *word,
    char **cause)
{
	char *copy, *tok, *save = NULL, *p;

	if (strcmp(word, "*") == 0)
		return 0;
	copy = xstrdup(word);
	for (tok = strtok_r(copy, ",", &save); tok != NULL;
	    tok = strtok_r(NULL, ",", &save)) {
		for (p = tok; *p != '\0'; p++) {
			if (!isalpha((unsigned char)*p) && *p != '-') {
				*cause = xprintf("'%s' is not a method list "
				    "(e.g. GET,HEAD or *)", word);
				free(copy);
				return -1;
			}
			*p = (char)toupper((unsigned char)*p);
		}
		strv_add(&r->methods, tok);
	}
	free(copy);
	if (r->methods.n == 0) {
		*cause = xprintf("'%s' is not a method list", word);
		return -1;
	}
	return 0;
}

static int
proxy_policy_parse_verb(const char *verb, enum proxy_verdict *v, char **cause)
{
	if (strcmp(verb, "allow") == 0)
		*v = PROXY_ALLOW;
	else if (strcmp(verb, "deny") == 0)
		*v = PROXY_DENY;
	else if (strcmp(verb, "tunnel") == 0)
		*v = PROXY_TUNNEL;
	else {
		*cause = xprintf("'%s' is not allow, deny or tunnel", verb);
		return -1;
	}
	return 0;
}

static void
proxy_policy_describe(struct proxy_rule *r, const char *verb)
{
	struct buf b;
	size_t i;

	buf_init(&b);
	buf_adds(&b, verb);
	buf_addc(&b, ' ');
	if (strchr(r->host, ':') != NULL)
		buf_printf(&b, "[%s]", r->host);
	else
		buf_adds(&b, r->host);
	if (r->port != 0)
		buf_printf(&b, ":%d", r->port);
	for (i = 0; i < r->methods.n; i++)
		buf_printf(&b, "%c%s", i == 0 ? ' ' : ',', r->methods.v[i]);
	if (r->path != NULL)
		buf_printf(&b, "%s%s", r->methods.n == 0 ? " * " : " ", r->path);
	r->text = buf_steal(&b);
	r->desc = xprintf("%s (%s)", r->text, r->origin);
}

/* Parses one rule into R; R is cleaned up by the caller either way. */
static int
proxy_policy_parse(struct proxy_rule *r, const char *verb, const char *text,
    const char *origin, char **cause)
{
	struct strv w;
	size_t i = 1;
	int rc = -1;

	memset(r, 0, sizeof *r);
	strv_init(&r->methods);
	r->origin = xstrdup(origin != NULL ? origin : "rule");
	strv_init(&w);
	if (proxy_policy_parse_verb(verb, &r->verdict, cause) == -1 ||
	    strv_split_words(&w, text, cause) == -1)
		goto out;
	if (w.n == 0) {
		*cause = xstrdup("empty rule; write HOST[:PORT] [METHOD] [PATH]");
		goto out;
	}
	if (proxy_policy_parse_host(r, w.v[0], cause) == -1)
		goto out;
	if (i < w.n && w.v[i][0] != '/') {
		if (proxy_policy_parse_methods(r, w.v[i], cause) == -1)
			goto out;
		i++;
	}
	if (i < w.n && w.v[i][0] == '/') {
		r->path = xstrdup(w.v[i]);
		r->path_glob = proxy_policy_is_glob(r->path);
		i++;
	}
	if (i < w.n) {
		*cause = xprintf("unexpected '%s'; write HOST[:PORT] [METHOD] "
		    "[PATH] (a path starts with /)", w.v[i]);
		goto out;
	}
	if (r->verdict == PROXY_TUNNEL && (r->methods.n != 0 || r->path)) {
		*cause = xstrdup("a tunnel is not decrypted, so it takes "
		    "HOST[:PORT] only, no method or path");
		goto out;
	}
	r->spec_host = r->host_glob ? proxy_policy_literal_len(r->host) :
	    10000 + (int)strlen(r->host);
	r->spec_port = r->port != 0;
	r->spec_path = r->path == NULL ? 0 : 1 +
	    proxy_policy_literal_len(r->path);
	r->spec_method = r->methods.n != 0;
	proxy_policy_describe(r, verb);
	rc = 0;
out:
	strv_free(&w);
	return rc;
}

int
proxy_policy_validate(const char *verb, const char *text, char **cause)
{
	struct proxy_rule r;
	int rc;

	rc = proxy_policy_parse(&r, verb, text, NULL, cause);
	proxy_rule_free(&r);
	return rc;
}

int
proxy_policy_add(struct proxy_policy *pol, const char *verb, const char *text,
    const char *origin, char **cause)
{
	struct proxy_rule r;

	if (proxy_policy_parse(&r, verb, text, origin, cause) == -1) {
		proxy_rule_free(&r);
		return -1;
	}
	pol->v = xreallocarray(pol->v, pol->n + 1, sizeof *pol->v);
	pol->v[pol->n++] = r;
	return 0;
}

size_t
proxy_policy_count(const struct proxy_policy *pol)
{
	return pol->n;
}

const char *
proxy_policy_rule(const struct proxy_policy *pol, size_t i,
    const char **origin)
{
	if (origin != NULL)
		*origin = pol->v[i].origin;
	return pol->v[i].text;
}

static bool
proxy_rule_match_dest(const struct proxy_rule *r, const char *host, int port)
{
	if (r->port != 0 && r->port != port)
		return false;
	if (r->host_glob)
		return util_glob_match(r->host, host, true);
	return strcasecmp(r->host, host) == 0;
}

static bool
proxy_rule_match_method(const struct proxy_rule *r, const char *method)
{
	size_t i;

	if (r->methods.n == 0)
		return true;
	for (i = 0; i < r->methods.n; i++) {
		if (strcasecmp(r->methods.v[i], method) == 0)
			return true;
	}
	return false;
}

static bool
proxy_rule_match_path(const struct proxy_rule *r, const char *path)
{
	if (r->path == NULL)
		return true;
	if (r->path_glob)
		return util_glob_match(r->path, path, false);
	return strncmp(path, r->path, strlen(r->path)) == 0;
}

/*
 * Compares specificity: the host first (a name beats a glob, then the
 * longer literal part), then the path (a rule naming one beats a rule that
 * does not, then the longer literal part), then the method (named beats
 * any), then the port (named beats any). A rule that narrows what is asked
 * for (path, method) is more specific than one that narrows only where it
 * goes (port), whatever the port. On equal specificity deny beats tunnel
 * beats allow.
 */
static int
proxy_rule_cmp(const struct proxy_rule *a, const struct proxy_rule *b)
{
	static const int rank[] = { [PROXY_UNKNOWN] = 0, [PROXY_ALLOW] = 1,
		[PROXY_TUNNEL] = 2, [PROXY_DENY] = 3 };

	if (a->spec_host != b->spec_host)
		return a->spec_host < b->spec_host ? -1 : 1;
	if (a->spec_path != b->spec_path)
		return a->spec_path < b->spec_path ? -1 : 1;
	if (a->spec_method != b->spec_method)
		return a->spec_method < b->spec_method ? -1 : 1;
	if (a->spec_port != b->spec_port)
		return a->spec_port < b->spec_port ? -1 : 1;
	return rank[a->verdict] - rank[b->verdict];
}

static bool
proxy_rule_unconstrained(const struct proxy_rule *r)
{
	return r->methods.n == 0 && r->path == NULL;
}

/*
 * At CONNECT only the destination is known. A narrower allow that is more
 * specific than the deny that covers the host makes the verdict "decrypt
 * and decide per request"; so does a narrower deny more specific than a
 * tunnel, which could not be enforced in a tunnel.
 */
static enum proxy_verdict
proxy_policy_connect(const struct proxy_rule **best,
    const struct proxy_rule *allow_in, const struct proxy_rule *deny_in)
{
	const struct proxy_rule *b = *best;

	if (allow_in != NULL && (b == NULL || (b->verdict == PROXY_DENY &&
	    proxy_rule_cmp(allow_in, b) > 0))) {
		*best = allow_in;
		return PROXY_ALLOW;
	}
	if (deny_in != NULL && b != NULL && b->verdict == PROXY_TUNNEL &&
	    proxy_rule_cmp(deny_in, b) > 0)
		return PROXY_ALLOW;
	return b != NULL ? b->verdict : PROXY_UNKNOWN;
}

static enum proxy_verdict
proxy_policy_decide(const struct proxy_policy *pol, const char *host, int port,
    const char *method, const char *path, const struct proxy_rule **bestp)
{
	const struct proxy_rule *best = NULL, *allow_in = NULL, *deny_in = NULL;
	const struct proxy_rule *r;
	enum proxy_verdict v;
	size_t i;

	for (i = 0; i < pol->n; i++) {
		r = &pol->v[i];
		if (!proxy_rule_match_dest(r, host, port))
			continue;
		if (method == NULL && !proxy_rule_unconstrained(r)) {
			/* At CONNECT a narrower rule may still match inside. */
			if (r->verdict == PROXY_ALLOW && (allow_in == NULL ||
			    proxy_rule_cmp(r, allow_in) > 0))
				allow_in = r;
			if (r->verdict == PROXY_DENY && (deny_in == NULL ||
			    proxy_rule_cmp(r, deny_in) > 0))
				deny_in = r;
			continue;
		}
		if (method != NULL && (!proxy_rule_match_method(r, method) ||
		    !proxy_rule_match_path(r, path != NULL ? path : "/")))
			continue;
		if (best == NULL || proxy_rule_cmp(r, best) > 0)
			best = r;
	}
	if (method == NULL)
		v = proxy_policy_connect(&best, allow_in, deny_in);
	else
		v = best != NULL ? best->verdict : PROXY_UNKNOWN;
	*bestp = best;
	return v;
}

enum proxy_verdict
proxy_policy_check(const struct proxy_policy *pol, const char *host, int port,
    const char *method, const char *path, const char **rule)
{
	const struct proxy_rule *best;
	enum proxy_verdict v;

	v = proxy_policy_decide(pol, host, port, method, path, &best);
	if (rule != NULL)
		*rule = best != NULL ? best->desc : NULL;
	return v;
}

enum proxy_verdict
proxy_policy_check_dest(const struct proxy_policy *pol, const char *host,
    int port, const char **rule, bool *names_port)
{
	const struct proxy_rule *best;
	enum proxy_verdict v;

	v = proxy_policy_decide(pol, host, port, NULL, NULL, &best);
	if (rule != NULL)
		*rule = best != NULL ? best->desc : NULL;
	*names_port = best != NULL && best->port != 0;
	return v;
}

bool
proxy_policy_names_host(const struct proxy_policy *pol, const char *host)
{
	size_t i;

	for (i = 0; i < pol->n; i++) {
		if (pol->v[i].verdict != PROXY_DENY && !pol->v[i].host_glob &&
		    strcasecmp(pol->v[i].host, host) == 0)
			return true;
	}
	return false;
}
