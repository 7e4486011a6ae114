/* Secret placeholders, the swap, and the redaction of what is recorded. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "lib/testlib.h"
#include "proxy/proxy-int.h"

static void
test_placeholder_shape(void **state)
{
	static const char *const values[] = {
		"sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-xyz_AA",
		"ghp_0123456789abcdefABCDEF0123456789abcd",
		"AKIAIOSFODNN7EXAMPLE", "short", "x",
		"my-password-is-hunter2",
	};
	size_t i, j, n;
	char *p, *q;

	for (i = 0; i < nitems(values); i++) {
		p = proxy_secret_placeholder(values[i]);
		q = proxy_secret_placeholder(values[i]);
		assert_string_not_equal(p, values[i]);
		assert_string_not_equal(p, q);
		assert_true(strlen(p) >= strlen(values[i]));
		assert_true(strlen(p) >= 16);
		/* Never a window of the value beyond its harmless prefix. */
		n = strlen(values[i]);
		for (j = 0; j + 8 <= n; j++) {
			if (j >= 16 && memmem(p, strlen(p), values[i] + j, 8))
				fail_msg("placeholder %s keeps part of %s", p,
				    values[i]);
		}
		free(p);
		free(q);
	}
	p = proxy_secret_placeholder(values[0]);
	assert_memory_equal(p, "sk-ant-api03-", 13);
	assert_int_equal(strlen(p), strlen(values[0]));
	for (j = 13; j < strlen(p); j++)
		assert_true(isalnum((unsigned char)p[j]) || p[j] == '-' ||
		    p[j] == '_');
	free(p);
	p = proxy_secret_placeholder(values[1]);
	assert_memory_equal(p, "ghp_", 4);
	free(p);
	p = proxy_secret_placeholder(values[2]);
	assert_int_equal(strlen(p), strlen(values[2]));
	assert_true(isupper((unsigned char)p[0]));
	free(p);
}

static void
test_swap_bound(void **state)
{
	char *hosts[] = { "api.example.com", "*.example.org", NULL };
	struct proxy_secret s[2];
	char *out;

	memset(s, 0, sizeof s);
	s[0].name = "A";
	s[0].value = "REAL-VALUE-AAAAAAAAAAAAAAAA";
	s[0].placeholder = "PH-AAAAAAAAAAAAAAAAAAAAAAAAA";
	s[0].hosts = hosts;
	s[1].name = "B";
	s[1].value = "REAL-VALUE-BBBBBBBBBBBBBBBBBB";
	s[1].placeholder = "PH-BBBBBBBBBBBBBBBBBBBBBBBBBBBB";
	s[1].hosts = NULL;
	assert_true(proxy_secret_bound(&s[0], "api.example.com"));
	assert_true(proxy_secret_bound(&s[0], "API.EXAMPLE.COM"));
	assert_true(proxy_secret_bound(&s[0], "x.example.org"));
	assert_false(proxy_secret_bound(&s[0], "example.org"));
	assert_false(proxy_secret_bound(&s[0], "api.example.com.evil.io"));
	assert_false(proxy_secret_bound(&s[1], "api.example.com"));
	out = proxy_secret_swap(&s[0], "Bearer PH-AAAAAAAAAAAAAAAAAAAAAAAAA, "
	    "PH-AAAAAAAAAAAAAAAAAAAAAAAAA");
	assert_string_equal(out, "Bearer REAL-VALUE-AAAAAAAAAAAAAAAA, "
	    "REAL-VALUE-AAAAAAAAAAAAAAAA");
	free(out);
	assert_null(proxy_secret_swap(&s[0], "nothing here"));
}

static void
test_redact(void **state)
{
	const char *values[] = { "TOPSECRET-123", NULL };
	char *out;
	struct buf b;

	out = proxy_redact_headers("Host: a.com\n"
	    "Authorization: Bearer xyz\n"
	    "Proxy-Authorization: Basic abc\n"
	    "Cookie: a=b\n"
	    "Set-Cookie: s=1\n"
	    "X-Api-Key: k\n"
	    "x-goog-api-key: g\n"
	    "X-Amz-Security-Token: t\n"
	    "Private-Token: p\n"
	    "X-Custom: has TOPSECRET-123 inside\n"
	    "X-TOPSECRET-123: a server echoing it as a name\n"
	    "Keep-Alive: timeout=5\n"
	    "Accept: */*\n", values);
	assert_string_equal(out, "Host: a.com\n"
	    "Authorization: [redacted]\n"
	    "Proxy-Authorization: [redacted]\n"
	    "Cookie: [redacted]\n"
	    "Set-Cookie: [redacted]\n"
	    "X-Api-Key: [redacted]\n"
	    "x-goog-api-key: [redacted]\n"
	    "X-Amz-Security-Token: [redacted]\n"
	    "Private-Token: [redacted]\n"
	    "X-Custom: [redacted]\n"
	    "[redacted]: [redacted]\n"
	    "Keep-Alive: timeout=5\n"
	    "Accept: */*\n");
	free(out);
	buf_init(&b);
	buf_adds(&b, "{\"key\":\"TOPSECRET-123\",\"again\":\"TOPSECRET-123\"}");
	proxy_redact_buf(&b, values);
	assert_string_equal(b.data, "{\"key\":\"[redacted]\",\"again\":"
	    "\"[redacted]\"}");
	buf_free(&b);
	assert_true(proxy_redact_name("X-Service-Key"));
	assert_false(proxy_redact_name("Content-Type"));
	assert_false(proxy_redact_name("Keep-Alive"));
}

/* Every well-known credential header, in any case; none of the common others. */
static void
test_redact_names(void **state)
{
	static const char *const secret[] = { "Authorization",
		"proxy-authorization", "COOKIE", "Set-Cookie", "x-api-key",
		"Api-Key", "apikey", "X-Goog-Api-Key", "Private-Token",
		"X-Auth-Token", "x-access-token", "X-CSRF-Token", "X-Amz-Security-Token",
		"X-Session-Id", "X-Hub-Signature-256", "X-Client-Secret",
		"X-Password", "X-Api_Key", "Credentials", "WWW-Authenticate",
		"anthropic-api-key", "x-stainless-key", };
	static const char *const plain[] = { "Host", "User-Agent", "Accept",
		"Accept-Encoding", "Accept-Language", "Content-Length",
		"Content-Type", "Date", "Server", "Connection", "Cache-Control",
		"ETag", "Last-Modified", "Vary", "Transfer-Encoding",
		"Keep-Alive", "Strict-Transport-Security",
		"Location", "X-Request-Id", "anthropic-version", "", "key", };
	char longname[200];
	size_t i;

	for (i = 0; i < nitems(secret); i++)
		assert_true(proxy_redact_name(secret[i]));
	for (i = 0; i < nitems(plain); i++)
		assert_false(proxy_redact_name(plain[i]));
	/* Any "-key" name is kept out of the record, harmlessly so for this one. */
	assert_true(proxy_redact_name("Sec-WebSocket-Key"));
	/* A word at the very end, and a name too long to be checked. */
	assert_true(proxy_redact_name("x-tok-token"));
	assert_false(proxy_redact_name("x-toke"));
	memset(longname, 'a', sizeof longname - 1);
	longname[sizeof longname - 1] = '\0';
	assert_true(proxy_redact_name(longname));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_placeholder_shape),
		cmocka_unit_test(test_swap_bound),
		cmocka_unit_test(test_redact),
		cmocka_unit_test(test_redact_names),
	};

	return test_run_group(tests, NULL, NULL);
}
