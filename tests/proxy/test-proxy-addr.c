/* The SSRF guard's address classes, host checks, connect_to entries. */
#include <sys/socket.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <stdlib.h>
#include <string.h>

#include "lib/testlib.h"
#include "proxy/proxy-int.h"

static enum proxy_addr_class
classify(const char *a)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

	memset(&ss, 0, sizeof ss);
	if (inet_pton(AF_INET, a, &sin->sin_addr) == 1)
		sin->sin_family = AF_INET;
	else if (inet_pton(AF_INET6, a, &sin6->sin6_addr) == 1)
		sin6->sin6_family = AF_INET6;
	else
		fail_msg("'%s' is not an address", a);
	return proxy_addr_classify((struct sockaddr *)&ss);
}

static void
test_classes(void **state)
{
	static const struct {
		const char *a;
		enum proxy_addr_class c;
	} t[] = {
		{ "8.8.8.8", PROXY_ADDR_PUBLIC },
		{ "1.1.1.1", PROXY_ADDR_PUBLIC },
		{ "127.0.0.1", PROXY_ADDR_LOOPBACK },
		{ "127.255.0.9", PROXY_ADDR_LOOPBACK },
		{ "10.1.2.3", PROXY_ADDR_PRIVATE },
		{ "172.16.0.1", PROXY_ADDR_PRIVATE },
		{ "172.31.255.255", PROXY_ADDR_PRIVATE },
		{ "172.32.0.1", PROXY_ADDR_PUBLIC },
		{ "192.168.0.1", PROXY_ADDR_PRIVATE },
		{ "169.254.1.1", PROXY_ADDR_LINKLOCAL },
		{ "169.254.169.254", PROXY_ADDR_METADATA },
		{ "100.100.100.200", PROXY_ADDR_METADATA },
		{ "100.64.0.1", PROXY_ADDR_CGNAT },
		{ "100.127.255.255", PROXY_ADDR_CGNAT },
		{ "100.128.0.1", PROXY_ADDR_PUBLIC },
		{ "224.0.0.1", PROXY_ADDR_MULTICAST },
		{ "239.255.255.250", PROXY_ADDR_MULTICAST },
		{ "0.0.0.0", PROXY_ADDR_UNSPECIFIED },
		{ "0.1.2.3", PROXY_ADDR_UNSPECIFIED },
		{ "255.255.255.255", PROXY_ADDR_UNSPECIFIED },
		{ "240.0.0.1", PROXY_ADDR_UNSPECIFIED },
		{ "192.0.2.1", PROXY_ADDR_UNSPECIFIED },
		{ "198.18.0.1", PROXY_ADDR_UNSPECIFIED },
		{ "::", PROXY_ADDR_UNSPECIFIED },
		{ "::1", PROXY_ADDR_LOOPBACK },
		{ "::ffff:127.0.0.1", PROXY_ADDR_LOOPBACK },
		{ "::ffff:169.254.169.254", PROXY_ADDR_METADATA },
		{ "::ffff:8.8.8.8", PROXY_ADDR_PUBLIC },
		{ "::127.0.0.1", PROXY_ADDR_UNSPECIFIED },
		{ "64:ff9b::a00:1", PROXY_ADDR_PRIVATE },
		{ "2002:7f00:1::1", PROXY_ADDR_LOOPBACK },
		{ "2002:808:808::1", PROXY_ADDR_PUBLIC },
		{ "fe80::1", PROXY_ADDR_LINKLOCAL },
		{ "fc00::1", PROXY_ADDR_PRIVATE },
		{ "fd12:3456::1", PROXY_ADDR_PRIVATE },
		{ "fd00:ec2::254", PROXY_ADDR_METADATA },
		{ "fec0::1", PROXY_ADDR_PRIVATE },
		{ "ff02::1", PROXY_ADDR_MULTICAST },
		{ "2001:db8::1", PROXY_ADDR_UNSPECIFIED },
		{ "2606:4700::1111", PROXY_ADDR_PUBLIC },
	};
	size_t i;

	for (i = 0; i < nitems(t); i++) {
		if (classify(t[i].a) != t[i].c)
			fail_msg("%s: got %s, want %s", t[i].a,
			    proxy_addr_class_name(classify(t[i].a)),
			    proxy_addr_class_name(t[i].c));
	}
}

static char *
refuse(struct proxy_policy *pol, const char *host, const char *a, bool named)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

	memset(&ss, 0, sizeof ss);
	if (inet_pton(AF_INET, a, &sin->sin_addr) == 1)
		sin->sin_family = AF_INET;
	else if (inet_pton(AF_INET6, a, &sin6->sin6_addr) == 1)
		sin6->sin6_family = AF_INET6;
	return proxy_addr_refuse(pol, host, (struct sockaddr *)&ss, named);
}

static void
test_refuse(void **state)
{
	struct proxy_policy *pol = proxy_policy_create();
	char *cause = NULL, *why;

	assert_int_equal(proxy_policy_add(pol, "allow", "*", "t", &cause), 0);
	/* A wildcard never reaches loopback, a name resolving there neither. */
	why = refuse(pol, "127.0.0.1", "127.0.0.1", false);
	assert_non_null(why);
	assert_non_null(strstr(why, "allow 127.0.0.1"));
	free(why);
	why = refuse(pol, "rebind.example", "169.254.169.254", false);
	assert_non_null(strstr(why, "rebind.example resolves to "
	    "169.254.169.254, a cloud metadata address"));
	free(why);
	assert_null(refuse(pol, "example.com", "93.184.216.34", false));
	/* connect_to names the address. */
	assert_null(refuse(pol, "api.example.com", "127.0.0.1", true));
	/* Literal rules name addresses; localhost names loopback for itself. */
	assert_int_equal(proxy_policy_add(pol, "allow", "127.0.0.1:8443", "t",
	    &cause), 0);
	assert_int_equal(proxy_policy_add(pol, "allow", "localhost", "t",
	    &cause), 0);
	assert_int_equal(proxy_policy_add(pol, "allow", "[::1]", "t",
	    &cause), 0);
	assert_null(refuse(pol, "127.0.0.1", "127.0.0.1", false));
	assert_null(refuse(pol, "x", "::ffff:127.0.0.1", false));
	assert_null(refuse(pol, "localhost", "127.0.0.2", false));
	assert_null(refuse(pol, "localhost", "::1", false));
	why = refuse(pol, "evil.example", "127.0.0.2", false);
	assert_non_null(why);
	free(why);
	why = refuse(pol, "localhost", "10.0.0.1", false);
	assert_non_null(why);
	free(why);
	/* A deny rule does not name anything. */
	assert_int_equal(proxy_policy_add(pol, "deny", "10.9.9.9", "t",
	    &cause), 0);
	why = refuse(pol, "10.9.9.9", "10.9.9.9", false);
	assert_non_null(why);
	free(why);
	why = refuse(pol, "fe80::1", "fe80::1", false);
	assert_non_null(strstr(why, "allow [fe80::1]"));
	free(why);
	proxy_policy_free(pol);
}

static void
test_hosts(void **state)
{
	static const char *const good[] = { "Example.COM", "a-b.c_d.io",
		"127.0.0.1", "::1", "fe80::1", "x." };
	static const char *const bad[] = { "", ".x", "a..b", "a b", "a/b",
		"a@b", ":::", "x\xff" };
	char buf[64];
	size_t i;

	for (i = 0; i < nitems(good); i++) {
		snprintf(buf, sizeof buf, "%s", good[i]);
		if (!proxy_host_valid(buf))
			fail_msg("'%s' should be valid", good[i]);
	}
	snprintf(buf, sizeof buf, "Example.COM.");
	assert_true(proxy_host_valid(buf));
	assert_string_equal(buf, "example.com");
	for (i = 0; i < nitems(bad); i++) {
		snprintf(buf, sizeof buf, "%s", bad[i]);
		if (proxy_host_valid(buf))
			fail_msg("'%s' should be invalid", bad[i]);
	}
	assert_true(proxy_host_is_addr("10.0.0.1"));
	assert_true(proxy_host_is_addr("::1"));
	assert_false(proxy_host_is_addr("localhost"));
}

static void
test_host_rule(void **state)
{
	char *s;

	s = proxy_host_rule("a.com", 443, "https");
	assert_string_equal(s, "a.com");
	free(s);
	s = proxy_host_rule("a.com", 8443, "https");
	assert_string_equal(s, "a.com:8443");
	free(s);
	s = proxy_host_rule("a.com", 80, "http");
	assert_string_equal(s, "a.com");
	free(s);
	s = proxy_host_rule("::1", 443, "wss");
	assert_string_equal(s, "[::1]");
	free(s);
	s = proxy_host_rule("::1", 8080, "http");
	assert_string_equal(s, "[::1]:8080");
	free(s);
}

static void
test_connect_to(void **state)
{
	static const char *const bad[] = { "a:443:b", "a:443:b:0", "a:x:b:1",
		":443:b:1", "a:443::1", "a:443:b:70000", "[::1:443:b:1",
		"a b:443:c:1" };
	struct proxy_connect_to ct, v[2];
	char *cause = NULL;
	size_t i;

	assert_int_equal(proxy_connect_to_parse("API.example.com:443:"
	    "127.0.0.1:8443", &ct, &cause), 0);
	assert_string_equal(ct.host, "api.example.com");
	assert_int_equal(ct.port, 443);
	assert_string_equal(ct.addr, "127.0.0.1");
	assert_int_equal(ct.port2, 8443);
	v[0] = ct;
	assert_int_equal(proxy_connect_to_parse("[::1]:80:[fe80::2]:81",
	    &v[1], &cause), 0);
	assert_string_equal(v[1].host, "::1");
	assert_string_equal(v[1].addr, "fe80::2");
	assert_ptr_equal(proxy_connect_to_find(v, 2, "api.example.com", 443),
	    &v[0]);
	assert_ptr_equal(proxy_connect_to_find(v, 2, "::1", 80), &v[1]);
	assert_null(proxy_connect_to_find(v, 2, "api.example.com", 80));
	proxy_connect_to_clear(&v[0]);
	proxy_connect_to_clear(&v[1]);
	for (i = 0; i < nitems(bad); i++) {
		if (proxy_connect_to_parse(bad[i], &ct, &cause) == 0)
			fail_msg("'%s' should not parse", bad[i]);
		assert_non_null(strstr(cause, "HOST:PORT:ADDR:PORT"));
		free(cause);
		cause = NULL;
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_classes),
		cmocka_unit_test(test_refuse),
		cmocka_unit_test(test_hosts),
		cmocka_unit_test(test_host_rule),
		cmocka_unit_test(test_connect_to),
	};

	return test_run_group(tests, NULL, NULL);
}
