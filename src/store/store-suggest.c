/* Learning a policy: the smallest rule set that allows exactly what recorded sessions were allowed. */
#include <arpa/inet.h>

#include <libpsl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "store/store-int.h"

/* Methods beyond this many distinct ones are written as "*". */
#define STORE_SUGGEST_MAX_METHODS 5
/* Path groups (by first segment) beyond this many drop the path. */
#define STORE_SUGGEST_MAX_GROUPS 4
/* Distinct subdomains needed before they are folded into a glob. */
#define STORE_SUGGEST_FOLD_MIN 3

/* One request reduced to what a rule can say about it. */
struct store_suggest_req {
	char *method;
	char *path;          /* without the query */
};

/* The allowed traffic of one destination (or of a folded glob). */
struct store_suggest_dest {
	char *host;          /* name, address, or "*.domain" once folded */
	int port;
	bool tunnel;
	bool folded;
	char *regdomain;     /* registrable domain, NULL for addresses */
	struct store_suggest_req *reqs;
	size_t nreqs;
};

struct store_suggest_ctx {
	struct store_suggest_dest *dests;
	size_t ndests;
	psl_ctx_t *psl;
};

static bool
store_suggest_is_addr(const char *host)
{
	unsigned char buf[16];

	return inet_pton(AF_INET, host, buf) == 1 ||
	    inet_pton(AF_INET6, host, buf) == 1;
}

static struct store_suggest_dest *
store_suggest_dest(struct store_suggest_ctx *sc, const char *host, int port,
    bool tunnel)
{
	struct store_suggest_dest *d;
	const char *reg;
	size_t i;

	for (i = 0; i < sc->ndests; i++) {
		d = &sc->dests[i];
		if (d->port == port && d->tunnel == tunnel &&
		    strcasecmp(d->host, host) == 0)
			return d;
	}
	sc->dests = xreallocarray(sc->dests, sc->ndests + 1, sizeof *d);
	d = &sc->dests[sc->ndests++];
	memset(d, 0, sizeof *d);
	d->host = xstrdup(host);
	d->port = port;
	d->tunnel = tunnel;
	if (!store_suggest_is_addr(host) && sc->psl != NULL &&
	    (reg = psl_registrable_domain(sc->psl, host)) != NULL)
		d->regdomain = xstrdup(reg);
	return d;
}

static void
store_suggest_add_req(struct store_suggest_dest *d, const char *method,
    const char *path)
{
	struct store_suggest_req *r;

	d->reqs = xreallocarray(d->reqs, d->nreqs + 1, sizeof *d->reqs);
	r = &d->reqs[d->nreqs++];
	r->method = xstrdup(method != NULL ? method : "GET");
	r->path = xstrndup(path != NULL ? path : "/",
	    strcspn(path != NULL ? path : "/", "?#"));
	if (*r->path == '\0') {
		free(r->path);
		r->path = xstrdup("/");
	}
}

static void
store_suggest_dest_free(struct store_suggest_dest *d)
{
	size_t i;

	for (i = 0; i < d->nreqs; i++) {
		free(d->reqs[i].method);
		free(d->reqs[i].path);
	}
	free(d->reqs);
	free(d->host);
	free(d->regdomain);
}

/* Folds destinations sharing a registrable domain and port when there are several. */
static void
store_suggest_fold(struct store_suggest_ctx *sc)
{
	struct store_suggest_dest *a, *b, *g;
	size_t i, j, k, count;
	char *glob;

	for (i = 0; i < sc->ndests; i++) {
		a = &sc->dests[i];
		if (a->regdomain == NULL || a->tunnel || a->folded ||
		    strcasecmp(a->host, a->regdomain) == 0)
			continue;
		count = 0;
		for (j = i; j < sc->ndests; j++) {
			b = &sc->dests[j];
			if (b->regdomain != NULL && !b->tunnel && !b->folded &&
			    b->port == a->port &&
			    strcasecmp(b->regdomain, a->regdomain) == 0 &&
			    strcasecmp(b->host, b->regdomain) != 0)
				count++;
		}
		if (count < STORE_SUGGEST_FOLD_MIN)
			continue;
		glob = xprintf("*.%s", a->regdomain);
		g = store_suggest_dest(sc, glob, a->port, false);
		a = &sc->dests[i]; /* the array may have moved */
		g->folded = true;
		free(glob);
		for (j = i; j < sc->ndests; j++) {
			b = &sc->dests[j];
			if (b == g || b->regdomain == NULL || b->tunnel ||
			    b->folded || b->port != g->port ||
			    strcasecmp(b->regdomain, a->regdomain) != 0 ||
			    strcasecmp(b->host, b->regdomain) == 0)
				continue;
			/* Move the requests into the glob's destination. */
			for (k = 0; k < b->nreqs; k++) {
				store_suggest_add_req(g, b->reqs[k].method,
				    b->reqs[k].path);
				free(b->reqs[k].method);
				free(b->reqs[k].path);
			}
			b->nreqs = 0;
		}
	}
}

/* The longest common prefix of the paths in R[0..N), cut back to a '/'. */
static char *
store_suggest_prefix(const struct store_suggest_req *r, const size_t *idx,
    size_t n)
{
	size_t len = strlen(r[idx[0]].path), i, j;
	bool same = true;

	for (i = 1; i < n; i++) {
		const char *p = r[idx[i]].path;

		for (j = 0; j < len && p[j] == r[idx[0]].path[j]; j++)
			;
		if (j != len || p[j] != '\0')
			same = false;
		len = j;
	}
	/* Identical paths stay whole; otherwise keep up to the last '/'. */
	if (!same) {
		while (len > 0 && r[idx[0]].path[len - 1] != '/')
			len--;
	}
	if (len <= 1)
		return NULL;
	return xstrndup(r[idx[0]].path, len);
}

static int
store_suggest_cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "GET,HEAD" for the requests in IDX, or NULL for "any". */
static char *
store_suggest_methods(const struct store_suggest_req *r, const size_t *idx,
    size_t n)
{
	struct strv m;
	struct buf b;
	size_t i;

	strv_init(&m);
	for (i = 0; i < n; i++) {
		if (!strv_contains(&m, r[idx[i]].method))
			strv_add(&m, r[idx[i]].method);
	}
	if (m.n > STORE_SUGGEST_MAX_METHODS) {
		strv_free(&m);
		return NULL;
	}
	qsort(m.v, m.n, sizeof *m.v, store_suggest_cmp_str);
	buf_init(&b);
	for (i = 0; i < m.n; i++)
		buf_printf(&b, "%s%s", i == 0 ? "" : ",", m.v[i]);
	strv_free(&m);
	return buf_steal(&b);
}

static void
store_suggest_emit(struct store_suggestion *out, const char *verb,
    const char *dest, const char *methods, const char *path, size_t count)
{
	struct store_suggest_rule *r;

	out->rules = xreallocarray(out->rules, out->nrules + 1,
	    sizeof *out->rules);
	r = &out->rules[out->nrules++];
	r->verb = xstrdup(verb);
	if (path != NULL)
		r->text = xprintf("%s %s %s", dest, methods != NULL ? methods :
		    "*", path);
	else if (methods != NULL)
		r->text = xprintf("%s %s", dest, methods);
	else
		r->text = xstrdup(dest);
	r->requests = count;
}

/* The first path segment ("/v1/" of "/v1/messages") as a group key. */
static size_t
store_suggest_segment_len(const char *path)
{
	const char *slash = strchr(path + 1, '/');

	return slash != NULL ? (size_t)(slash - path) + 1 : strlen(path);
}

static void
store_suggest_dest_rules(struct store_suggestion *out,
    const struct store_suggest_dest *d)
{
	size_t *idx, *grp, ngroups = 0, i, j, n, seglen;
	char *dest, *prefix, *methods;
	const char *seg;
	bool *done;

	if (d->nreqs == 0)
		return;
	if (strchr(d->host, ':') != NULL)
		dest = xprintf("[%s]:%d", d->host, d->port);
	else
		dest = xprintf("%s:%d", d->host, d->port);
	if (d->tunnel) {
		store_suggest_emit(out, "tunnel", dest, NULL, NULL, d->nreqs);
		free(dest);
		return;
	}
	idx = xcalloc(d->nreqs, sizeof *idx);
	for (i = 0; i < d->nreqs; i++)
		idx[i] = i;
	prefix = store_suggest_prefix(d->reqs, idx, d->nreqs);
	/* Count the distinct first segments. */
	done = xcalloc(d->nreqs, sizeof *done);
	grp = xcalloc(d->nreqs, sizeof *grp);
	for (i = 0; i < d->nreqs; i++) {
		if (done[i])
			continue;
		ngroups++;
		seg = d->reqs[i].path;
		seglen = store_suggest_segment_len(seg);
		for (j = i; j < d->nreqs; j++) {
			if (!done[j] && strncmp(d->reqs[j].path, seg, seglen) == 0 &&
			    store_suggest_segment_len(d->reqs[j].path) == seglen)
				done[j] = true;
		}
	}
	if (prefix != NULL || ngroups == 1 || ngroups > STORE_SUGGEST_MAX_GROUPS) {
		methods = store_suggest_methods(d->reqs, idx, d->nreqs);
		store_suggest_emit(out, "allow", dest, methods,
		    ngroups > STORE_SUGGEST_MAX_GROUPS ? NULL : prefix, d->nreqs);
		free(methods);
	} else {
		memset(done, 0, d->nreqs * sizeof *done);
		for (i = 0; i < d->nreqs; i++) {
			if (done[i])
				continue;
			seg = d->reqs[i].path;
			seglen = store_suggest_segment_len(seg);
			for (n = 0, j = i; j < d->nreqs; j++) {
				if (!done[j] && strncmp(d->reqs[j].path, seg,
				    seglen) == 0 && store_suggest_segment_len(
				    d->reqs[j].path) == seglen) {
					done[j] = true;
					grp[n++] = j;
				}
			}
			free(prefix);
			prefix = store_suggest_prefix(d->reqs, grp, n);
			methods = store_suggest_methods(d->reqs, grp, n);
			store_suggest_emit(out, "allow", dest, methods, prefix, n);
			free(methods);
		}
	}
	free(prefix);
	free(done);
	free(grp);
	free(idx);
	free(dest);
}

/* A record read back from a damaged store may lack its decision or host. */
static bool
store_suggest_is_denied(const struct request *r)
{
	return r->decision != NULL && r->host != NULL &&
	    strcmp(r->decision, "deny") == 0;
}

/* Adds a "denied" comment line for each denied destination, with a count. */
static void
store_suggest_denied(struct store_suggestion *out, struct request **v,
    size_t n)
{
	size_t i, j, count;
	bool seen;

	for (i = 0; i < n; i++) {
		if (!store_suggest_is_denied(v[i]))
			continue;
		for (seen = false, j = 0; j < i && !seen; j++)
			seen = store_suggest_is_denied(v[j]) &&
			    v[j]->port == v[i]->port &&
			    strcasecmp(v[j]->host, v[i]->host) == 0;
		if (seen)
			continue;
		for (count = 0, j = i; j < n; j++) {
			if (store_suggest_is_denied(v[j]) &&
			    v[j]->port == v[i]->port &&
			    strcasecmp(v[j]->host, v[i]->host) == 0)
				count++;
		}
		strv_addf(&out->denied, "%s:%d (%zu request%s, e.g. %s %s)",
		    v[i]->host, v[i]->port, count, count == 1 ? "" : "s",
		    v[i]->method != NULL ? v[i]->method : "CONNECT",
		    v[i]->path != NULL ? v[i]->path : "");
	}
}

void
store_suggest(struct store *st, const int64_t *sessions, size_t nsessions,
    struct store_suggestion *out)
{
	struct store_suggest_ctx sc;
	struct store_request_filter f;
	struct request **v = NULL, **more;
	struct store_suggest_dest *d;
	size_t n = 0, m, i;

	memset(out, 0, sizeof *out);
	strv_init(&out->denied);
	memset(&sc, 0, sizeof sc);
	sc.psl = psl_latest(NULL);
	if (sc.psl == NULL)
		sc.psl = (psl_ctx_t *)psl_builtin();
	for (i = 0; i < nsessions; i++) {
		memset(&f, 0, sizeof f);
		f.session_id = sessions[i];
		more = store_request_list(st, &f, &m);
		v = xreallocarray(v, n + m + 1, sizeof *v);
		memcpy(v + n, more, m * sizeof *v);
		n += m;
		free(more);
	}
	for (i = 0; i < n; i++) {
		if (v[i]->host == NULL || v[i]->decision == NULL)
			continue;
		if (strcmp(v[i]->decision, "allow") != 0 &&
		    strcmp(v[i]->decision, "tunnel") != 0)
			continue;
		out->nrequests++;
		d = store_suggest_dest(&sc, v[i]->host, v[i]->port,
		    strcmp(v[i]->decision, "tunnel") == 0);
		store_suggest_add_req(d, v[i]->method, v[i]->path);
	}
	store_suggest_fold(&sc);
	for (i = 0; i < sc.ndests; i++)
		store_suggest_dest_rules(out, &sc.dests[i]);
	store_suggest_denied(out, v, n);
	for (i = 0; i < sc.ndests; i++)
		store_suggest_dest_free(&sc.dests[i]);
	free(sc.dests);
	if (sc.psl != psl_builtin())
		psl_free(sc.psl);
	store_request_list_free(v, n);
}

void
store_suggestion_free(struct store_suggestion *out)
{
	size_t i;

	for (i = 0; i < out->nrules; i++) {
		free(out->rules[i].verb);
		free(out->rules[i].text);
	}
	free(out->rules);
	strv_free(&out->denied);
	memset(out, 0, sizeof *out);
}
