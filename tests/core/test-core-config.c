/* Config file: valid files load, every kind of problem is reported with its line. */
#include <sys/stat.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "lib/testlib.h"

/* Loads TEXT as a config file; returns the config (or NULL) and its problems. */
static struct config *
load(const char *text, struct config_problems *ps)
{
	char *path = xprintf("%s/config/agentmux/config", test_dir);
	struct config *cf;

	test_write_file(path, text);
	memset(ps, 0, sizeof *ps);
	cf = config_load(path, ps);
	free(path);
	return cf;
}

/* Asserts that the only problem is on LINE and mentions NEEDLE. */
static void
expect_problem(const char *text, int line, const char *needle)
{
	struct config_problems ps;
	struct config *cf = load(text, &ps);

	assert_null(cf);
	assert_int_equal(ps.n, 1);
	assert_int_equal(ps.v[0].line, line);
	if (strstr(ps.v[0].message, needle) == NULL)
		fail_msg("problem '%s' lacks '%s'", ps.v[0].message, needle);
	config_problems_free(&ps);
}

static void
test_valid(void **state)
{
	struct config_problems ps;
	struct config *cf;
	const struct config_agent *a;
	const struct config_secret *s;

	cf = load("; a comment\n"
	    "# another\n"
	    "[policy]\n"
	    "on_unknown = deny\n"
	    "prompt_timeout = 2m\n"
	    "allow = api.github.com GET,HEAD /repos/\n"
	    "deny = *.evil.com\n"
	    "tunnel = pinned.example.com:443\n"
	    "\n"
	    "[secret gh]\n"
	    "env = GH_TOKEN\n"
	    "from_env = GH_TOKEN\n"
	    "host = api.github.com github.com\n"
	    "header = Authorization\n"
	    "[agent mine]\n"
	    "command = my-agent --flag 'two words'\n"
	    "allow = api.mine.dev\n"
	    "config_dir = ~/.mine\n"
	    "secret = gh\n"
	    "env = MINE_MODE=jail\n"
	    "wall_clock = 1h\n"
	    "[limits]\n"
	    "memory = 2G\n"
	    "pids = 512\n"
	    "[ui]\n"
	    "prefix = C-b\n"
	    "escape_time = 0\n"
	    "idle_after = 1500\n"
	    "notify = command notify-send -a 'agent mux'\n"
	    "[proxy]\n"
	    "connect_timeout = 5\n"
	    "connect_to = api.mine.dev:443:127.0.0.1:8443\n"
	    "record_bodies = 64K\n"
	    "[snapshots]\n"
	    "max_size = 512M\n", &ps);
	assert_int_equal(ps.n, 0);
	assert_non_null(cf);
	assert_int_equal(cf->on_unknown, CONFIG_DENY);
	assert_int_equal(cf->prompt_timeout, 120);
	assert_int_equal(cf->rules.n, 3);
	assert_string_equal(cf->rules.v[0].verb, "allow");
	assert_string_equal(cf->rules.v[0].text, "api.github.com GET,HEAD /repos/");
	assert_non_null(strstr(cf->rules.v[0].origin, ":6"));
	a = config_agent(cf, "mine");
	assert_non_null(a);
	assert_string_equal(a->command, "my-agent --flag 'two words'");
	assert_int_equal(a->rules.n, 1);
	assert_int_equal(a->config_dirs.n, 1);
	assert_int_equal(a->wall_clock, 3600);
	assert_int_equal(a->env.n, 1);
	s = config_secret(cf, "gh");
	assert_non_null(s);
	assert_int_equal(s->hosts.n, 2);
	assert_int_equal(cf->limits.memory, 2LL << 30);
	assert_int_equal(cf->limits.pids, 512);
	assert_int_equal(cf->ui.prefix_key, 2);
	assert_int_equal(cf->ui.escape_time, 0);
	assert_int_equal(cf->ui.idle_after, 1500);
	assert_int_equal(cf->ui.notify, CONFIG_NOTIFY_COMMAND);
	assert_int_equal(cf->ui.notify_argv.n, 3);
	assert_string_equal(cf->ui.notify_argv.v[2], "agent mux");
	assert_int_equal(cf->proxy.connect_timeout, 5);
	assert_int_equal(cf->proxy.connect_to.n, 1);
	assert_int_equal(cf->proxy.max_body_record, 65536);
	assert_int_equal(cf->snapshots.max_size, 512LL << 20);
	config_free(cf);
	/* No limit at all, and the default. */
	cf = load("[snapshots]\nmax_size = off\n", &ps);
	assert_int_equal(cf->snapshots.max_size, 0);
	config_free(cf);
	cf = load("", &ps);
	assert_int_equal(cf->snapshots.max_size, 2LL << 30);
	assert_int_equal(cf->jail.scan_limit, 1000000);
	config_free(cf);
	cf = load("[jail]\nscan_limit = 5000000\n", &ps);
	assert_int_equal(cf->jail.scan_limit, 5000000);
	config_free(cf);
	/* watch_ignored: repeated, once each; none drops those before. */
	cf = load("[jail]\nwatch_ignored = a\nwatch_ignored = target/debug\n"
	    "watch_ignored = target/debug\n", &ps);
	assert_int_equal(cf->jail.watch_ignored.n, 2);
	assert_string_equal(cf->jail.watch_ignored.v[1], "target/debug");
	config_free(cf);
	cf = load("[jail]\nwatch_ignored = a\nwatch_ignored = none\n"
	    "watch_ignored = tools/*/bin\n", &ps);
	assert_int_equal(cf->jail.watch_ignored.n, 1);
	assert_string_equal(cf->jail.watch_ignored.v[0], "tools/*/bin");
	config_free(cf);
}

/* A profile's command given after its resume (a user's file over a built-in one) keeps the resume. */
static void
test_resume_then_command(void **state)
{
	struct config_problems ps;
	struct config *cf;
	const struct config_agent *a;

	cf = load("[agent x]\nresume = x --continue\ncommand = x --fast\n", &ps);
	assert_non_null(cf);
	assert_int_equal(ps.n, 0);
	a = config_agent(cf, "x");
	assert_non_null(a);
	assert_string_equal(a->command, "x --fast");
	assert_non_null(a->resume);
	assert_string_equal(a->resume, "x --continue");
	config_free(cf);
}

/* needs_you_screen compiles once; a bad one is a problem on its line; the built-in claude has one. */
static void
test_needs_you_screen(void **state)
{
	struct config_problems ps;
	struct config *cf;
	const struct config_agent *a;

	cf = load("[agent x]\ncommand = x\nneeds_you_screen = Allow.*1\\. Yes\n"
	    "needs_you_screen = Proceed\\?\n", &ps);
	assert_non_null(cf);
	assert_int_equal(ps.n, 0);
	a = config_agent(cf, "x");
	assert_non_null(a);
	assert_string_equal(a->needs_you_screen, "Proceed\\?");
	assert_non_null(a->needs_you_re);
	assert_int_equal(regexec(a->needs_you_re, "go on?\nProceed?", 0, NULL,
	    0), 0);
	assert_int_not_equal(regexec(a->needs_you_re, "Proceed", 0, NULL, 0),
	    0);
	a = config_agent(cf, "claude");
	assert_non_null(a);
	assert_non_null(a->needs_you_re);
	assert_null(config_agent(cf, "shell")->needs_you_re);
	config_free(cf);
	expect_problem("[agent x]\ncommand = x\n\nneeds_you_screen = (1. Yes\n",
	    4, "needs_you_screen: '(1. Yes' is not an extended regular "
	    "expression");
	expect_problem("[agent x]\nneeds_you_screen =\n", 2,
	    "needs_you_screen: give a regular expression");
}

/* needs_you_file names a file in the project or the jail's HOME; a path that could leave them is a problem. */
static void
test_needs_you_file(void **state)
{
	struct config_problems ps;
	struct config *cf;
	const char *bad[] = { "/tmp/waiting", "../waiting", "a/../b", "a/./b",
	    "~/", "a//b", "dir/", "~/..", "./x", "." };
	size_t i;
	char *text;

	cf = load("[agent x]\ncommand = x\nneeds_you_file = .x/waiting\n"
	    "needs_you_file = ~/.agent/needs-you\n", &ps);
	assert_non_null(cf);
	assert_int_equal(ps.n, 0);
	assert_string_equal(config_agent(cf, "x")->needs_you_file,
	    "~/.agent/needs-you");
	assert_null(config_agent(cf, "shell")->needs_you_file);
	config_free(cf);
	for (i = 0; i < nitems(bad); i++) {
		text = xprintf("[agent x]\nneeds_you_file = %s\n", bad[i]);
		expect_problem(text, 2, "needs_you_file: '");
		free(text);
	}
}

static void
test_builtin_profiles(void **state)
{
	struct config_problems ps;
	struct config *cf = load("", &ps);

	assert_non_null(cf);
	assert_non_null(config_agent(cf, "shell"));
	config_free(cf);
}

static void
test_missing_default_is_fine(void **state)
{
	struct config_problems ps = { NULL, 0 };
	struct config *cf;

	setenv("XDG_CONFIG_HOME", "/nonexistent-amx", 1);
	cf = config_load(NULL, &ps);
	assert_non_null(cf);
	assert_null(cf->path);
	assert_int_equal(ps.n, 0);
	config_free(cf);
	test_isolate(test_dir);
}

static void
test_missing_explicit_fails(void **state)
{
	struct config_problems ps = { NULL, 0 };

	assert_null(config_load("/nonexistent-amx/config", &ps));
	assert_int_equal(ps.n, 1);
	assert_non_null(strstr(ps.v[0].message, "cannot read"));
	config_problems_free(&ps);
}

static void
test_unknown_key_suggests(void **state)
{
	expect_problem("[policy]\non_unknown = deny\nfrobulate = 3\n", 3,
	    "unknown key 'frobulate'");
	expect_problem("[policy]\nprompt_timout = 3\n", 2,
	    "did you mean 'prompt_timeout'");
}

static void
test_bad_values(void **state)
{
	expect_problem("[policy]\non_unknown = maybe\n", 2, "ask");
	expect_problem("\n[policy]\nprompt_timeout = soon\n", 3, "duration");
	expect_problem("[limits]\nmemory = lots\n", 2, "size");
	expect_problem("[snapshots]\nmax_size = big\n", 2, "size");
	expect_problem("[limits]\npids = 2\n", 2, "out of range");
	expect_problem("[jail]\nscan_limit = 0\n", 2, "out of range");
	expect_problem("[jail]\nscan_limit = many\n", 2, "scan_limit");
	expect_problem("[jail]\nwatch_ignored = ../x\n", 2, "watch_ignored");
	expect_problem("[jail]\nwatch_ignored = /usr/bin\n", 2,
	    "relative to the project");
	expect_problem("[ui]\nprefix = X\n", 2, "not a key");
	expect_problem("[ui]\nescape_time = soon\n", 2, "escape_time");
	expect_problem("[ui]\nescape_time = 10001\n", 2, "out of range");
	expect_problem("[ui]\nidle_after = 50\n", 2, "out of range");
	expect_problem("[ui]\nnotify = loudly\n", 2, "notify must be");
	expect_problem("[agent x]\ncommand = x\nresume =\n", 3, "resume: give");
	expect_problem("[ui]\nnotify = command\n", 2, "notify must be");
	expect_problem("[ui]\n\nidle_after = soon\n", 3, "idle_after");
	expect_problem("[proxy]\nconnect_to = nonsense\n", 2, "HOST:PORT");
	expect_problem("[proxy]\nupstream_ca = /nonexistent/ca.pem\n", 2,
	    "cannot read");
	expect_problem("[agent x]\nconfig_dir = relative\n", 2, "absolute");
	expect_problem("[agent x]\nenv = NOEQUALS\n", 2, "NAME=VALUE");
	expect_problem("[agent x]\ncommand = 'unterminated\n", 2, "quote");
}

/* The disk a session may take: defaults, sizes, a share, and what is refused. */
static void
test_disk_limits(void **state)
{
	struct config_problems ps;
	struct config *cf;

	cf = load("", &ps);
	assert_non_null(cf);
	assert_int_equal(cf->limits.disk_write, 20LL << 30);
	assert_int_equal(cf->limits.disk_reserve, 1LL << 30);
	assert_int_equal(cf->limits.disk_reserve_pct, 0);
	config_free(cf);
	config_problems_free(&ps);
	cf = load("[limits]\ndisk_write = 0\ndisk_reserve = 5%\n", &ps);
	assert_non_null(cf);
	assert_int_equal(ps.n, 0);
	assert_int_equal(cf->limits.disk_write, 0);
	assert_int_equal(cf->limits.disk_reserve, 0);
	assert_int_equal(cf->limits.disk_reserve_pct, 5);
	config_free(cf);
	config_problems_free(&ps);
	/* The last one given wins, a size after a share too. */
	cf = load("[limits]\ndisk_reserve = 5%\ndisk_reserve = 512M\n", &ps);
	assert_non_null(cf);
	assert_int_equal(cf->limits.disk_reserve, 512LL << 20);
	assert_int_equal(cf->limits.disk_reserve_pct, 0);
	config_free(cf);
	config_problems_free(&ps);
	expect_problem("[limits]\ndisk_write = much\n", 2, "not a size");
	expect_problem("[limits]\ndisk_reserve = 100%\n", 2,
	    "not a share of the disk from 0% to 99%");
	expect_problem("[limits]\ndisk_reserve = -1%\n", 2, "share");
	expect_problem("[limits]\ndisk_reserve = %\n", 2, "share");
	expect_problem("[limits]\ndisk_reserve = lots\n", 2, "not a size");
}

static void
test_syntax_errors(void **state)
{
	struct config_problems ps;

	expect_problem("[policy\non_unknown = deny\n", 1, "']'");
	expect_problem("[policy]\njust words\n", 2, "key = value");
	expect_problem("top = 1\n", 1, "outside any section");
	expect_problem("[weird]\nx = 1\n", 2, "unknown section");
	expect_problem("[agent bad/name]\ncommand = x\n", 2, "name");
	/* Every problem is reported, not just the first. */
	assert_null(load("[policy]\nbad one\nfoo = 1\n[x]\ny = 2\n", &ps));
	assert_int_equal(ps.n, 3);
	assert_int_equal(ps.v[0].line, 2);
	assert_int_equal(ps.v[1].line, 3);
	assert_int_equal(ps.v[2].line, 5);
	config_problems_free(&ps);
}

static void
test_long_line(void **state)
{
	char text[600];

	snprintf(text, sizeof text, "[policy]\nallow = %0400d\n", 1);
	expect_problem(text, 2, "too long");
}

static void
test_secret_checks(void **state)
{
	expect_problem("[secret k]\nfrom_env = K\nhost = a.com\n", 1, "env = NAME");
	expect_problem("[secret k]\nenv = K\nfrom_env = K\n", 1, "host");
	expect_problem("[secret k]\nenv = K\nfrom_env = K\nfile = /x\nhost = a\n",
	    1, "sources");
	expect_problem("[agent a]\ncommand = x\nsecret = nope\n", 1,
	    "no [secret nope]");
}

static int
validator(const char *verb, const char *text, char **cause)
{
	if (strstr(text, "bad") != NULL) {
		*cause = xstrdup("bad rule");
		return -1;
	}
	return 0;
}

static void
test_rule_validator(void **state)
{
	config_set_rule_validator(validator);
	expect_problem("[policy]\nallow = good.com\nallow = bad.com\n", 3,
	    "bad rule");
	config_set_rule_validator(NULL);
}

static void
test_append_keeps_comments(void **state)
{
	char *path = xprintf("%s/append.conf", test_dir), *cause = NULL, *text;

	test_write_file(path, "; top comment\n[policy]\n; keep me\n"
	    "allow = a.com\n\n[ui]\nprefix = C-b\n");
	chmod(path, 0640);
	assert_int_equal(config_append(path, "policy", "allow", "b.com",
	    &cause), 0);
	text = test_read_file(path);
	assert_string_equal(text, "; top comment\n[policy]\n; keep me\n"
	    "allow = a.com\nallow = b.com\n\n[ui]\nprefix = C-b\n");
	free(text);
	assert_int_equal(config_append(path, "agent claude", "deny", "x.com",
	    &cause), 0);
	text = test_read_file(path);
	assert_non_null(strstr(text, "prefix = C-b\n\n[agent claude]\n"
	    "deny = x.com\n"));
	free(text);
	assert_int_equal(config_append(path, "agent  claude", "deny", "y.com",
	    &cause), 0);
	text = test_read_file(path);
	assert_non_null(strstr(text, "deny = x.com\ndeny = y.com\n"));
	free(text);
	{
		struct stat st;

		stat(path, &st);
		assert_int_equal(st.st_mode & 0777, 0640);
	}
	free(path);
}

static void
test_append_creates(void **state)
{
	char *path = xprintf("%s/new/dir/config", test_dir), *cause = NULL, *text;

	assert_int_equal(config_append(path, "policy", "allow", "c.com",
	    &cause), 0);
	text = test_read_file(path);
	assert_string_equal(text, "[policy]\nallow = c.com\n");
	free(text);
	free(path);
}

static void
test_parse_key(void **state)
{
	assert_int_equal(config_parse_key("C-a"), 1);
	assert_int_equal(config_parse_key("C-B"), 2);
	assert_int_equal(config_parse_key("C-]"), 0x1d);
	assert_int_equal(config_parse_key("a"), -1);
	assert_int_equal(config_parse_key("C-ab"), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid),
		cmocka_unit_test(test_builtin_profiles),
		cmocka_unit_test(test_missing_default_is_fine),
		cmocka_unit_test(test_missing_explicit_fails),
		cmocka_unit_test(test_unknown_key_suggests),
		cmocka_unit_test(test_bad_values),
		cmocka_unit_test(test_disk_limits),
		cmocka_unit_test(test_syntax_errors),
		cmocka_unit_test(test_long_line),
		cmocka_unit_test(test_secret_checks),
		cmocka_unit_test(test_rule_validator),
		cmocka_unit_test(test_append_keeps_comments),
		cmocka_unit_test(test_append_creates),
		cmocka_unit_test(test_parse_key),
		cmocka_unit_test(test_resume_then_command),
		cmocka_unit_test(test_needs_you_screen),
		cmocka_unit_test(test_needs_you_file),
	};

	return test_run_group(tests, test_dir_setup, test_dir_teardown);
}
