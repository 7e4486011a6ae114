/* The command line contract: exit codes, messages, JSON on an empty store, config check. */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "lib/testlib.h"

static void
expect_usage_error3(const char *needle, const char *a1, const char *a2,
    const char *a3)
{
	struct test_run r;

	test_amx(&r, a1, a2, a3, NULL);
	assert_int_equal(r.status, 2);
	if (strstr(r.err, needle) == NULL)
		fail_msg("stderr '%s' lacks '%s'", r.err, needle);
	/* One clear line. */
	assert_non_null(strchr(r.err, '\n'));
	assert_null(strchr(strchr(r.err, '\n') + 1, '\n'));
	test_run_free(&r);
}

static void
expect_usage_error(const char *needle, const char *a1, const char *a2)
{
	expect_usage_error3(needle, a1, a2, NULL);
}

static void
test_version_and_help(void **state)
{
	struct test_run r;

	test_amx(&r, "--version", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "agentmux "));
	/* What a bug report needs from this machine. */
	assert_non_null(strstr(r.out, "\nLandlock:"));
	assert_non_null(strstr(r.out, "\nseccomp:"));
	assert_non_null(strstr(r.out, "\nlimits:"));
	assert_non_null(strstr(r.out, "\nlibvterm:"));
	assert_non_null(strstr(r.out, "\nprofiles:"));
	test_run_free(&r);
	test_amx(&r, "-V", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "\nLandlock:"));
	test_run_free(&r);
	test_amx(&r, "--help", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "sessions"));
	assert_non_null(strstr(r.out, "requests"));
	test_run_free(&r);
	test_amx(&r, "sessions", "--help", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "usage: agentmux sessions"));
	test_run_free(&r);
}

static void
test_unknown_command(void **state)
{
	expect_usage_error("unknown command 'frobnicate'", "frobnicate", NULL);
}

static void
test_unknown_option(void **state)
{
	expect_usage_error("unknown option '--bogus'", "sessions", "--bogus");
	expect_usage_error("agentmux sessions --help", "sessions", "--bogus");
	expect_usage_error("unknown option '-z'", "requests", "-z");
	expect_usage_error("needs a value", "requests", "--host");
	expect_usage_error("--older-than", "gc", NULL);
	expect_usage_error("which session", "show", NULL);
	expect_usage_error("say 'check', 'path'", "config", NULL);
	expect_usage_error("unknown subcommand 'frob'", "config", "frob");
	expect_usage_error("option '--json' takes no value", "sessions",
	    "--json=1");
	expect_usage_error3("unexpected 'b'", "show", "a", "b");
	expect_usage_error3("a command goes after --", "-a", "shell", "x");
	expect_usage_error3("PORT is missing", "probe", "connect", "x");
}

/* Options after arguments, --opt=value, -Xvalue and "--" parse as before. */
static void
test_option_forms(void **state)
{
	struct test_run r;

	test_amx(&r, "requests", "--host=*.example", "--json", NULL);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out, "[]\n");
	test_run_free(&r);
	test_amx(&r, "config", "path", "-f/tmp/x.conf", NULL);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out, "/tmp/x.conf\n");
	test_run_free(&r);
	test_amx(&r, "config", "path", "--file", "/tmp/y.conf", NULL);
	assert_string_equal(r.out, "/tmp/y.conf\n");
	test_run_free(&r);
	test_amx(&r, "config", "keys", "ui", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "ui prefix\n"));
	assert_null(strstr(r.out, "policy"));
	test_run_free(&r);
	/* After "--" a word is an argument even if it looks like an option. */
	expect_usage_error3("unexpected '--json'", "sessions", "--", "--json");
}

static void
test_sessions_empty(void **state)
{
	struct test_run r;

	test_amx(&r, "sessions", "--json", NULL);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out, "[]\n");
	test_run_free(&r);
	test_amx(&r, "requests", "--json", NULL);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out, "[]\n");
	test_run_free(&r);
	test_amx(&r, "show", "last", NULL);
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "no sessions yet"));
	test_run_free(&r);
}

static void
test_config_check(void **state)
{
	char *path = xprintf("%s/config/agentmux/config", test_dir);
	struct test_run r;

	test_amx(&r, "config", "path", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, path));
	test_run_free(&r);
	test_write_file(path, "[policy]\non_unknown = deny\nfrobulate = 3\n"
	    "allow = https://x.com\n");
	test_amx(&r, "config", "check", NULL);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, ":3: unknown key 'frobulate'"));
	assert_non_null(strstr(r.err, ":4: allow = https://x.com"));
	test_run_free(&r);
	/* A broken config is never silently replaced by defaults. */
	test_amx(&r, "sessions", NULL);
	test_run_free(&r);
	test_write_file(path, "[policy]\nallow = api.github.com GET\n");
	test_amx(&r, "config", "check", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "ok"));
	test_run_free(&r);
	free(path);
}

static void
test_gc_bad_duration(void **state)
{
	expect_usage_error("not a duration", "gc", "--older-than=soon");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_version_and_help),
		cmocka_unit_test(test_unknown_command),
		cmocka_unit_test(test_unknown_option),
		cmocka_unit_test(test_option_forms),
		cmocka_unit_test(test_sessions_empty),
		cmocka_unit_test(test_config_check),
		cmocka_unit_test(test_gc_bad_duration),
	};

	return test_run_group(tests, test_dir_setup, test_dir_teardown);
}
