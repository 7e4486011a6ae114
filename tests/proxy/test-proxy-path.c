/* The path normaliser: what policy matches, and what it refuses to guess about. */
#include <stdlib.h>
#include <string.h>

#include "lib/testlib.h"
#include "proxy/proxy-int.h"

static void
norm(const char *in, const char *want, size_t want_pathlen)
{
	const char *why = NULL;
	size_t len = 0;
	char *out, *again;

	if ((out = proxy_path_normalise(in, &len, &why)) == NULL) {
		fail_msg("'%s' refused: %s", in, why);
		return;
	}
	if (strcmp(out, want) != 0 || len != want_pathlen)
		fail_msg("'%s' -> '%s' (path %zu), not '%s' (path %zu)", in, out,
		    len, want, want_pathlen);
	/* Normalising again changes nothing. */
	again = proxy_path_normalise(out, &len, &why);
	assert_non_null(again);
	assert_string_equal(again, out);
	free(again);
	free(out);
}

static void
refused(const char *in, const char *needle)
{
	const char *why = NULL;
	size_t len;

	if (proxy_path_normalise(in, &len, &why) != NULL)
		fail_msg("'%s' was not refused", in);
	if (strstr(why, needle) == NULL)
		fail_msg("'%s': '%s' lacks '%s'", in, why, needle);
}

static void
test_normalise(void **state)
{
	norm("/", "/", 1);
	norm("/pub/x", "/pub/x", 6);
	/* The findings of issue 15: each names the path policy must see. */
	norm("/pub/../secret", "/secret", 7);
	norm("/pub/%2e%2e/secret", "/secret", 7);
	norm("/pub/%2E%2e/secret", "/secret", 7);
	norm("/pub/.%2e/secret", "/secret", 7);
	norm("//secret", "/secret", 7);
	norm("///secret//x", "/secret/x", 9);
	norm("/%73ecret", "/secret", 7);
	norm("/%73%65%63%72%65%74/", "/secret/", 8);
	/* Dot segments, RFC 3986 5.2.4. */
	norm("/a/./b", "/a/b", 4);
	norm("/a/b/..", "/a/", 3);
	norm("/a/b/.", "/a/b/", 5);
	norm("/..", "/", 1);
	norm("/../../x", "/x", 2);
	norm("/a/../../b/", "/b/", 3);
	norm("/./", "/", 1);
	norm("/a/.../b", "/a/.../b", 8);
	norm("/a/..b/.c", "/a/..b/.c", 9);
	/* Other escapes stay, in upper case; the query is left alone. */
	norm("/a%20b/%e2%82%ac", "/a%20b/%E2%82%AC", 16);
	norm("/a/%7e%41?x=%2e%2e/../%2F", "/a/~A?x=%2e%2e/../%2F", 5);
	norm("/a//b?", "/a/b?", 4);
	norm("/100%25/%2541", "/100%25/%2541", 13);
	norm("/x?../../y", "/x?../../y", 2);
	/* An encoded '/' stays one: npm's scoped packages. */
	norm("/@scope%2fname", "/@scope%2Fname", 14);
	norm("/a/b%2fc%2F", "/a/b%2Fc%2F", 11);
}

static void
slashed(const char *match, const char *want)
{
	char *s = proxy_path_slash_reading(match);

	if (want == NULL)
		assert_null(s);
	else
		assert_string_equal(s, want);
	free(s);
}

static void
test_slash_reading(void **state)
{
	slashed("/a/b", NULL);
	slashed("/@scope%2Fname", "/@scope/name");
	slashed("/a%2Fb%2F", "/a/b/");
	slashed("/a%2f", NULL);
}

static void
test_refused(void **state)
{
	refused("/pub/..%2fsecret", "encoded '/'");
	refused("/pub/%2F", "encoded '/'");
	refused("/%2Fsecret", "empty, '.' or '..' segment");
	refused("/a%2F%2Fb", "empty, '.' or '..' segment");
	refused("/a%2F.%2Fb", "empty, '.' or '..' segment");
	refused("/a%2F..;x", "empty, '.' or '..' segment");
	refused("/a/%2e%2E%2fb", "empty, '.' or '..' segment");
	refused("/pub/..%5csecret", "'\\'");
	refused("/pub/..\\secret", "backslash");
	refused("/a%00b", "NUL");
	refused("/a%zz", "does not start an escape");
	refused("/a%4", "does not start an escape");
	refused("/a%", "does not start an escape");
	refused("/pub/%252e%252e/secret", "double-encoded");
	refused("/pub/..%252Fsecret", "double-encoded");
	refused("/pub/..%255csecret", "double-encoded");
	refused("/pub/%25%32%65%25%32%65/secret", "double-encoded");
	refused("/pub/..;/secret", "..;");
	refused("/pub/.;x/secret", "..;");
	refused("pub", "does not start with '/'");
	refused("", "does not start with '/'");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_normalise),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_slash_reading),
	};

	return test_run_group(tests, NULL, NULL);
}
