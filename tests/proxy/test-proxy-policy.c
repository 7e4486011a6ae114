/* Policy rules: parsing, errors, most-specific-wins matching with deny on ties, and what built-in profiles allow. */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "lib/testlib.h"
#include "proxy/proxy.h"

static struct proxy_policy *
policy(const char *const *rules)
{
	struct proxy_policy *pol = proxy_policy_create();
	char *cause = NULL, *verb, *text;

	for (; *rules != NULL; rules++) {
		verb = xstrndup(*rules, strcspn(*rules, " "));
		text = xstrdup(*rules + strlen(verb) + 1);
		if (proxy_policy_add(pol, verb, text, "test", &cause) == -1)
			fail_msg("rule '%s': %s", *rules, cause);
		free(verb);
		free(text);
	}
	return pol;
}

static void
bad(const char *verb, const char *text, const char *needle)
{
	char *cause = NULL;

	assert_int_equal(proxy_policy_validate(verb, text, &cause), -1);
	if (strstr(cause, needle) == NULL)
		fail_msg("'%s %s': '%s' lacks '%s'", verb, text, cause, needle);
	free(cause);
}

static void
test_parse_errors(void **state)
{
	char *cause = NULL;

	assert_int_equal(proxy_policy_validate("allow", "api.github.com", &cause), 0);
	assert_int_equal(proxy_policy_validate("allow", "[::1]:443 GET /", &cause), 0);
	assert_int_equal(proxy_policy_validate("deny", "*.evil.com:* *", &cause), 0);
	bad("permit", "x.com", "allow, deny or tunnel");
	bad("allow", "", "empty");
	bad("allow", "https://x.com/", "URL");
	bad("allow", "x.com:99999", "port");
	bad("allow", "x.com:abc", "port");
	bad("allow", "x.com GET /a extra", "unexpected");
	bad("allow", "x.com G3T", "method");
	bad("allow", "::1", "brackets");
	bad("allow", "[::1", "]");
	bad("allow", "x/y.com", "cannot be in a host");
	bad("tunnel", "x.com GET", "HOST[:PORT] only");
}

static void
test_specific_wins(void **state)
{
	static const char *const rules[] = {
		"deny *",
		"allow api.github.com",
		"deny api.github.com POST",
		"allow *.example.com GET /public/",
		"deny *.example.com * /public/secret",
		NULL
	};
	struct proxy_policy *pol = policy(rules);
	const char *rule;

	assert_int_equal(proxy_policy_check(pol, "api.github.com", 443, "GET",
	    "/repos", &rule), PROXY_ALLOW);
	assert_non_null(strstr(rule, "allow api.github.com (test)"));
	assert_int_equal(proxy_policy_check(pol, "api.github.com", 443, "POST",
	    "/repos", &rule), PROXY_DENY);
	assert_int_equal(proxy_policy_check(pol, "other.com", 443, "GET", "/",
	    &rule), PROXY_DENY);
	assert_int_equal(proxy_policy_check(pol, "a.example.com", 443, "GET",
	    "/public/x", &rule), PROXY_ALLOW);
	assert_int_equal(proxy_policy_check(pol, "a.example.com", 443, "GET",
	    "/public/secret/x", &rule), PROXY_DENY);
	/* "deny *" is less specific than the host glob, but GET /private matches only deny *. */
	assert_int_equal(proxy_policy_check(pol, "a.example.com", 443, "GET",
	    "/private", &rule), PROXY_DENY);
	proxy_policy_free(pol);
}

static void
test_tie_denies(void **state)
{
	static const char *const rules[] = {
		"allow x.com", "deny x.com", NULL
	};
	struct proxy_policy *pol = policy(rules);

	assert_int_equal(proxy_policy_check(pol, "x.com", 80, "GET", "/", NULL),
	    PROXY_DENY);
	assert_int_equal(proxy_policy_check(pol, "x.com", 80, NULL, NULL, NULL),
	    PROXY_DENY);
	proxy_policy_free(pol);
}

static void
test_connect_level(void **state)
{
	static const char *const rules[] = {
		"allow api.x.com GET",
		"deny *.x.com",
		"tunnel pinned.x.com:443",
		"allow 127.0.0.1:8443",
		NULL
	};
	struct proxy_policy *pol = policy(rules);
	const char *rule;

	/* A method-limited allow makes CONNECT allowed: decide inside. */
	assert_int_equal(proxy_policy_check(pol, "api.x.com", 443, NULL, NULL,
	    &rule), PROXY_ALLOW);
	assert_int_equal(proxy_policy_check(pol, "api.x.com", 443, "POST", "/",
	    &rule), PROXY_DENY);
	assert_int_equal(proxy_policy_check(pol, "b.x.com", 443, NULL, NULL,
	    &rule), PROXY_DENY);
	assert_int_equal(proxy_policy_check(pol, "pinned.x.com", 443, NULL, NULL,
	    &rule), PROXY_TUNNEL);
	assert_int_equal(proxy_policy_check(pol, "pinned.x.com", 8443, NULL,
	    NULL, &rule), PROXY_DENY);
	assert_int_equal(proxy_policy_check(pol, "unknown.org", 443, NULL, NULL,
	    &rule), PROXY_UNKNOWN);
	assert_null(rule);
	assert_int_equal(proxy_policy_check(pol, "127.0.0.1", 8443, NULL, NULL,
	    &rule), PROXY_ALLOW);
	assert_int_equal(proxy_policy_check(pol, "127.0.0.1", 8444, NULL, NULL,
	    &rule), PROXY_UNKNOWN);
	proxy_policy_free(pol);
}

static void
test_methods_and_paths(void **state)
{
	static const char *const rules[] = {
		"allow a.com GET,HEAD /v1/",
		"allow b.com * /files/*.txt",
		NULL
	};
	struct proxy_policy *pol = policy(rules);

	assert_int_equal(proxy_policy_check(pol, "a.com", 443, "HEAD", "/v1/x",
	    NULL), PROXY_ALLOW);
	assert_int_equal(proxy_policy_check(pol, "a.com", 443, "head", "/v1/x",
	    NULL), PROXY_ALLOW);
	assert_int_equal(proxy_policy_check(pol, "a.com", 443, "GET", "/v2/x",
	    NULL), PROXY_UNKNOWN);
	assert_int_equal(proxy_policy_check(pol, "b.com", 443, "PUT",
	    "/files/a/b.txt", NULL), PROXY_ALLOW);
	assert_int_equal(proxy_policy_check(pol, "b.com", 443, "PUT",
	    "/files/a.bin", NULL), PROXY_UNKNOWN);
	proxy_policy_free(pol);
}

static void
test_names_host(void **state)
{
	static const char *const rules[] = {
		"allow *", "allow 127.0.0.1:8443", "allow localhost",
		"deny 10.0.0.1", NULL
	};
	struct proxy_policy *pol = policy(rules);

	assert_true(proxy_policy_names_host(pol, "127.0.0.1"));
	assert_true(proxy_policy_names_host(pol, "localhost"));
	assert_false(proxy_policy_names_host(pol, "10.0.0.1"));
	assert_false(proxy_policy_names_host(pol, "192.168.1.1"));
	assert_int_equal(proxy_policy_count(pol), 4);
	assert_string_equal(proxy_policy_rule(pol, 1, NULL),
	    "allow 127.0.0.1:8443");
	proxy_policy_free(pol);
}

static void
test_ipv6_and_case(void **state)
{
	static const char *const rules[] = {
		"allow [::1]:8443", "allow API.Example.COM", NULL
	};
	struct proxy_policy *pol = policy(rules);

	assert_int_equal(proxy_policy_check(pol, "::1", 8443, "GET", "/", NULL),
	    PROXY_ALLOW);
	assert_int_equal(proxy_policy_check(pol, "api.example.com", 1, "GET",
	    "/", NULL), PROXY_ALLOW);
	assert_string_equal(proxy_policy_rule(pol, 0, NULL), "allow [::1]:8443");
	proxy_policy_free(pol);
}

/*
 * The order, written down in the README and config.example: host (a name,
 * then the longer glob), then path (named, then longer), then method, then
 * port; deny on a tie. Each pair of rules that differ in one of these is
 * checked both ways round: the more specific one decides, whatever its
 * verdict, at the request and (where it can decide there) at CONNECT.
 */
struct order_pair {
	const char *strong;    /* "HOST[:PORT] [METHOD] [PATH]" */
	const char *weak;
};

static const struct order_pair order_pairs[] = {
	/* host beats everything below it */
	{ "h.example.com", "*.example.com:443 GET /secret/" },
	{ "*.example.com", "*.com:443 GET /secret/" },
	{ "h.example.com", "* * /secret/" },
	/* path beats method and port, whatever the port (issue 15) */
	{ "h.example.com * /secret/", "h.example.com:443" },
	{ "h.example.com * /secret/", "h.example.com GET" },
	{ "h.example.com * /secret/", "h.example.com:443 GET" },
	{ "h.example.com * /secret/x", "h.example.com:443 GET /secret/" },
	{ "h.example.com * /secret/*", "h.example.com:443 GET /secret" },
	/* method beats port */
	{ "h.example.com GET", "h.example.com:443" },
	{ "h.example.com GET /", "h.example.com:443 * /" },
	/* port beats nothing */
	{ "h.example.com:443", "h.example.com" },
};

static enum proxy_verdict
order_check(const char *verb_strong, const struct order_pair *p,
    const char **rule)
{
	const char *verb_weak = strcmp(verb_strong, "allow") == 0 ? "deny" :
	    "allow";
	struct proxy_policy *pol = proxy_policy_create();
	enum proxy_verdict v;
	char *cause = NULL;

	/* Added in both orders of the config: the order of lines never matters. */
	if (proxy_policy_add(pol, verb_weak, p->weak, "weak", &cause) == -1 ||
	    proxy_policy_add(pol, verb_strong, p->strong, "strong", &cause) == -1 ||
	    proxy_policy_add(pol, verb_weak, p->weak, "weak", &cause) == -1)
		fail_msg("%s", cause);
	v = proxy_policy_check(pol, "h.example.com", 443, "GET", "/secret/x",
	    rule);
	if (rule != NULL && *rule != NULL && strstr(*rule, "(strong)") == NULL)
		v = PROXY_UNKNOWN;
	proxy_policy_free(pol);
	return v;
}

static void
test_order_pairs(void **state)
{
	const char *rule = NULL;
	size_t i;

	for (i = 0; i < nitems(order_pairs); i++) {
		if (order_check("allow", &order_pairs[i], &rule) != PROXY_ALLOW)
			fail_msg("allow %s should beat deny %s",
			    order_pairs[i].strong, order_pairs[i].weak);
		if (order_check("deny", &order_pairs[i], &rule) != PROXY_DENY)
			fail_msg("deny %s should beat allow %s",
			    order_pairs[i].strong, order_pairs[i].weak);
	}
}

/* Issue 15: a user's path deny is not lost to a profile's port allow. */
static void
test_path_beats_port(void **state)
{
	static const char *const rules[] = {
		"allow h.com:443",
		"deny h.com * /secret/",
		"tunnel t.com:443",
		"deny t.com * /admin/",
		"tunnel u.com",
		"deny u.com:443",
		NULL
	};
	struct proxy_policy *pol = policy(rules);
	const char *rule;

	assert_int_equal(proxy_policy_check(pol, "h.com", 443, "GET",
	    "/secret/x", &rule), PROXY_DENY);
	assert_non_null(strstr(rule, "deny h.com * /secret/"));
	assert_int_equal(proxy_policy_check(pol, "h.com", 443, "GET", "/pub",
	    &rule), PROXY_ALLOW);
	assert_int_equal(proxy_policy_check(pol, "h.com", 443, NULL, NULL,
	    &rule), PROXY_ALLOW);
	/* A tunnel could not enforce the path deny: decrypt and decide inside. */
	assert_int_equal(proxy_policy_check(pol, "t.com", 443, NULL, NULL,
	    &rule), PROXY_ALLOW);
	assert_int_equal(proxy_policy_check(pol, "t.com", 443, "GET",
	    "/admin/x", &rule), PROXY_DENY);
	assert_int_equal(proxy_policy_check(pol, "t.com", 443, "GET", "/",
	    &rule), PROXY_TUNNEL);
	/* A port-only deny is more specific than a host-only tunnel. */
	assert_int_equal(proxy_policy_check(pol, "u.com", 443, NULL, NULL,
	    &rule), PROXY_DENY);
	assert_int_equal(proxy_policy_check(pol, "u.com", 8443, NULL, NULL,
	    &rule), PROXY_TUNNEL);
	proxy_policy_free(pol);
}

/* The built-in profile of AGENT (from AGENTMUX_SHARE) as the session builds it: [policy], then the agent's rules. */
static struct proxy_policy *
profile_policy(struct config **cfp, const char *agent)
{
	char *dir = test_tmpdir("policy"), *path, *cause = NULL;
	struct proxy_policy *pol = proxy_policy_create();
	const struct config_rules *sets[2];
	const struct config_agent *a;
	struct config *cf;
	size_t i, j;

	path = xprintf("%s/agentmux.conf", dir);
	test_write_file(path, "");
	cf = config_load_or_cause(path, &cause);
	if (cause != NULL)
		fail_msg("built-in profiles: %s", cause);
	assert_non_null(cf);
	a = config_agent(cf, agent);
	assert_non_null(a);
	sets[0] = &cf->rules;
	sets[1] = &a->rules;
	for (i = 0; i < nitems(sets); i++) {
		for (j = 0; j < sets[i]->n; j++) {
			if (proxy_policy_add(pol, sets[i]->v[j].verb,
			    sets[i]->v[j].text, "test", &cause) == -1)
				fail_msg("rule %s: %s", sets[i]->v[j].text, cause);
		}
	}
	test_rmtree(dir);
	free(path);
	free(dir);
	*cfp = cf;
	return pol;
}

/*
 * Copilot CLI: its GitHub token reaches only the Copilot API paths the CLI
 * calls, never GitHub's full MCP server (write tools) on the same host.
 */
static void
test_copilot_profile(void **state)
{
	static const char *hosts[] = { "api.githubcopilot.com",
		"api.individual.githubcopilot.com",
		"api.business.githubcopilot.com",
		"api.enterprise.githubcopilot.com" };
	static const char *needed[][2] = { { "GET", "/models" },
		{ "POST", "/chat/completions" }, { "POST", "/responses" },
		{ "POST", "/v1/messages" }, { "POST", "/mcp/readonly" } };
	static const char *unneeded[][2] = { { "POST", "/mcp/" },
		{ "POST", "/mcp" }, { "POST", "/mcp/x/repos" },
		{ "POST", "/mcp/x/repos/readonly" }, { "GET", "/mcp/" },
		{ "POST", "/agents/swe/v1/jobs" }, { "DELETE", "/models" },
		{ "POST", "/" } };
	const struct config_agent *a;
	const struct config_secret *sec;
	struct proxy_policy *pol;
	struct config *cf;
	const char *rule;
	size_t i, j;

	(void)state;
	pol = profile_policy(&cf, "copilot");
	for (i = 0; i < nitems(hosts); i++) {
		for (j = 0; j < nitems(needed); j++) {
			if (proxy_policy_check(pol, hosts[i], 443,
			    needed[j][0], needed[j][1], &rule) != PROXY_ALLOW)
				fail_msg("%s %s %s is not allowed", needed[j][0],
				    hosts[i], needed[j][1]);
		}
		for (j = 0; j < nitems(unneeded); j++) {
			if (proxy_policy_check(pol, hosts[i], 443,
			    unneeded[j][0], unneeded[j][1], &rule) == PROXY_ALLOW)
				fail_msg("%s %s %s is allowed by %s",
				    unneeded[j][0], hosts[i], unneeded[j][1],
				    rule);
		}
	}
	/* Only COPILOT_GITHUB_TOKEN by default: GH_TOKEN and GITHUB_TOKEN are often full-repo tokens. */
	a = config_agent(cf, "copilot");
	assert_int_equal(a->secrets.n, 1);
	assert_string_equal(a->secrets.v[0], "copilot_github_token");
	sec = config_secret(cf, "copilot_github_token");
	assert_non_null(sec);
	proxy_policy_free(pol);
	config_free(cf);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_specific_wins),
		cmocka_unit_test(test_tie_denies),
		cmocka_unit_test(test_connect_level),
		cmocka_unit_test(test_methods_and_paths),
		cmocka_unit_test(test_names_host),
		cmocka_unit_test(test_ipv6_and_case),
		cmocka_unit_test(test_order_pairs),
		cmocka_unit_test(test_path_beats_port),
		cmocka_unit_test(test_copilot_profile),
	};

	return test_run_group(tests, NULL, NULL);
}
