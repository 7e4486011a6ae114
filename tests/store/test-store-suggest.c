/* Policy suggestions: smallest rule sets, folding only within a registrable domain, round trip through the matcher. */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "lib/testlib.h"
#include "proxy/proxy.h"
#include "store/store.h"

static char *dir;
static struct store *st;
static int64_t sid;

static int
setup(void **state)
{
	struct store_session s;
	char *cause = NULL, *p;

	dir = test_tmpdir("suggest");
	test_isolate(dir);
	p = xprintf("%s/s.db", dir);
	st = store_open(p, &cause);
	free(p);
	assert_non_null(st);
	memset(&s, 0, sizeof s);
	s.agent = (char *)"t";
	s.project = (char *)"/p";
	sid = store_session_begin(st, &s, &cause);
	return 0;
}

static int
teardown(void **state)
{
	store_close(st);
	test_rmtree(dir);
	free(dir);
	return 0;
}

static void
req(const char *decision, const char *method, const char *host, int port,
    const char *path)
{
	struct request r;

	memset(&r, 0, sizeof r);
	r.session_id = sid;
	r.method = (char *)method;
	r.host = (char *)host;
	r.port = port;
	r.path = (char *)path;
	r.decision = (char *)decision;
	r.scheme = (char *)"https";
	r.ttfb_us = -1;
	store_request_add(st, &r);
}

static bool
has_rule(const struct store_suggestion *sg, const char *verb, const char *text)
{
	size_t i;

	for (i = 0; i < sg->nrules; i++) {
		if (strcmp(sg->rules[i].verb, verb) == 0 &&
		    strcmp(sg->rules[i].text, text) == 0)
			return true;
	}
	return false;
}

static void
dump(const struct store_suggestion *sg)
{
	size_t i;

	for (i = 0; i < sg->nrules; i++)
		print_message("  %s %s\n", sg->rules[i].verb, sg->rules[i].text);
}

#define expect_rule(sg, verb, text) do { \
	if (!has_rule(sg, verb, text)) { dump(sg); \
		fail_msg("no rule '%s %s'", verb, text); } } while (0)

static void
test_suggest(void **state)
{
	struct store_suggestion sg;

	req("allow", "POST", "api.anthropic.com", 443, "/v1/messages?beta=true");
	req("allow", "POST", "api.anthropic.com", 443, "/v1/messages");
	req("allow", "GET", "a.github.com", 443, "/repos/x");
	req("allow", "GET", "b.github.com", 443, "/repos/y");
	req("allow", "HEAD", "c.github.com", 443, "/repos/z");
	req("allow", "GET", "one.example.org", 443, "/repos/a/b");
	req("allow", "GET", "two.example.org", 443, "/users/q");
	req("allow", "GET", "p.foo.co.uk", 443, "/");
	req("allow", "GET", "q.foo.co.uk", 443, "/");
	req("allow", "GET", "r.foo.co.uk", 443, "/");
	req("allow", "GET", "127.0.0.1", 8443, "/repos/x");
	req("allow", "PUT", "127.0.0.1", 8443, "/users/y/z");
	req("allow", "GET", "127.0.0.2", 8443, "/a");
	req("allow", "GET", "127.0.0.3", 8443, "/a");
	req("tunnel", "CONNECT", "pinned.example.net", 443, NULL);
	req("deny", "GET", "evil.example.com", 443, "/steal");
	req("deny", "GET", "evil.example.com", 443, "/more");
	store_suggest(st, &sid, 1, &sg);
	assert_int_equal(sg.nrequests, 15);
	expect_rule(&sg, "allow", "api.anthropic.com:443 POST /v1/messages");
	expect_rule(&sg, "allow", "*.github.com:443 GET,HEAD /repos/");
	/* Two subdomains are not "several": no glob. */
	expect_rule(&sg, "allow", "one.example.org:443 GET /repos/a/b");
	expect_rule(&sg, "allow", "two.example.org:443 GET /users/q");
	/* Never broader than the registrable domain. */
	expect_rule(&sg, "allow", "*.foo.co.uk:443 GET");
	/* Addresses are never folded; diverging paths become one rule per segment. */
	expect_rule(&sg, "allow", "127.0.0.1:8443 GET /repos/x");
	expect_rule(&sg, "allow", "127.0.0.1:8443 PUT /users/y/z");
	expect_rule(&sg, "allow", "127.0.0.2:8443 GET /a");
	expect_rule(&sg, "tunnel", "pinned.example.net:443");
	expect_rule(&sg, "allow", "127.0.0.3:8443 GET /a");
	assert_int_equal(sg.nrules, 10);
	assert_int_equal(sg.denied.n, 1);
	assert_non_null(strstr(sg.denied.v[0], "evil.example.com:443 (2 requests"));
	store_suggestion_free(&sg);
}

/* The suggested rules allow every recorded request and little else. */
static void
test_round_trip(void **state)
{
	struct store_request_filter f;
	struct request **v;
	struct store_suggestion sg;
	struct proxy_policy *pol = proxy_policy_create();
	char *cause = NULL;
	size_t n, i;

	store_suggest(st, &sid, 1, &sg);
	for (i = 0; i < sg.nrules; i++)
		assert_int_equal(proxy_policy_add(pol, sg.rules[i].verb,
		    sg.rules[i].text, "suggest", &cause), 0);
	memset(&f, 0, sizeof f);
	f.session_id = sid;
	v = store_request_list(st, &f, &n);
	for (i = 0; i < n; i++) {
		enum proxy_verdict want = strcmp(v[i]->decision, "allow") == 0 ?
		    PROXY_ALLOW : strcmp(v[i]->decision, "tunnel") == 0 ?
		    PROXY_TUNNEL : PROXY_UNKNOWN;
		const char *method = want == PROXY_TUNNEL ? NULL : v[i]->method;
		const char *path = want == PROXY_TUNNEL ? NULL : v[i]->path;

		assert_int_equal(proxy_policy_check(pol, v[i]->host, v[i]->port,
		    method, path, NULL), want);
	}
	store_request_list_free(v, n);
	assert_int_equal(proxy_policy_check(pol, "api.anthropic.com", 443,
	    "GET", "/v1/messages", NULL), PROXY_UNKNOWN);
	assert_int_equal(proxy_policy_check(pol, "api.anthropic.com", 443,
	    "POST", "/v2/other", NULL), PROXY_UNKNOWN);
	assert_int_equal(proxy_policy_check(pol, "api.anthropic.com", 80,
	    "POST", "/v1/messages", NULL), PROXY_UNKNOWN);
	assert_int_equal(proxy_policy_check(pol, "github.com", 443, "GET", "/",
	    NULL), PROXY_UNKNOWN);
	assert_int_equal(proxy_policy_check(pol, "x.co.uk", 443, "GET", "/",
	    NULL), PROXY_UNKNOWN);
	assert_int_equal(proxy_policy_check(pol, "evil.example.com", 443, "GET",
	    "/steal", NULL), PROXY_UNKNOWN);
	store_suggestion_free(&sg);
	proxy_policy_free(pol);
}

static void
test_many_groups_drop_path(void **state)
{
	struct store_suggestion sg;
	int64_t other;
	struct store_session s;
	char *cause = NULL;

	memset(&s, 0, sizeof s);
	s.agent = (char *)"t";
	s.project = (char *)"/p";
	other = store_session_begin(st, &s, &cause);
	sid = other;
	req("allow", "GET", "registry.npmjs.org", 443, "/a");
	req("allow", "GET", "registry.npmjs.org", 443, "/b");
	req("allow", "GET", "registry.npmjs.org", 443, "/c");
	req("allow", "GET", "registry.npmjs.org", 443, "/d");
	req("allow", "GET", "registry.npmjs.org", 443, "/e");
	store_suggest(st, &other, 1, &sg);
	expect_rule(&sg, "allow", "registry.npmjs.org:443 GET");
	assert_int_equal(sg.nrules, 1);
	store_suggestion_free(&sg);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_suggest),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_many_groups_drop_path),
	};

	return test_run_group(tests, setup, teardown);
}
