/* Finding an agent's real install: npm symlinks, native binaries, interpreters outside /usr. */
#include <sys/stat.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "session/session.h"
#include "core/core.h"
#include "lib/testlib.h"

static char *dir;

static int
setup(void **state)
{
	dir = test_tmpdir("agent");
	return 0;
}

static int
teardown(void **state)
{
	test_rmtree(dir);
	free(dir);
	return 0;
}

static void
exe(const char *path, const char *text)
{
	test_write_file(path, text);
	chmod(path, 0755);
}

static void
test_npm_symlink(void **state)
{
	char *pkg = xprintf("%s/npm/lib/node_modules/@anthropic-ai/claude-code", dir);
	char *cli = xprintf("%s/cli.js", pkg), *bin = xprintf("%s/npm/bin", dir);
	char *link = xprintf("%s/claude", bin), *path, *cause = NULL;
	struct agent_install in;
	struct config_agent a;

	exe(cli, "#!/usr/bin/env node\nconsole.log(1)\n");
	mkdir(bin, 0755);
	assert_int_equal(symlink("../lib/node_modules/@anthropic-ai/claude-code/cli.js",
	    link), 0);
	memset(&a, 0, sizeof a);
	a.command = (char *)"claude -p 'say hi'";
	path = xprintf("%s:/usr/bin:/bin", bin);
	assert_int_equal(agent_resolve(&a, NULL, path, &in, &cause), 0);
	assert_string_equal(in.argv.v[0], cli);
	assert_string_equal(in.argv.v[1], "-p");
	assert_string_equal(in.argv.v[2], "say hi");
	assert_int_equal(in.argv.n, 3);
	assert_true(strv_contains(&in.binds, pkg));
	/* The shared bin dir itself stays hidden. */
	assert_false(strv_contains(&in.binds, bin));
	assert_string_equal(in.interpreter, "/usr/bin/node");
	agent_install_free(&in);
	free(pkg);
	free(cli);
	free(bin);
	free(link);
	free(path);
}

static void
test_native_and_nvm(void **state)
{
	char *ver = xprintf("%s/home/.local/share/tool/versions/1.2", dir);
	char *real = xprintf("%s/tool", ver), *bin = xprintf("%s/home/.local/bin", dir);
	char *link = xprintf("%s/tool", bin), *nvm = xprintf("%s/nvm/v20", dir);
	char *node = xprintf("%s/bin/node", nvm), *nodebin = xprintf("%s/bin", nvm);
	char *script = xprintf("%s/scripts/run-it", dir), *sdir = xprintf("%s/scripts", dir);
	char *path, *cause = NULL;
	struct agent_install in;
	struct config_agent a;

	exe(real, "\x7f" "ELF not really");
	mkdir(bin, 0755);
	assert_int_equal(symlink(real, link), 0);
	memset(&a, 0, sizeof a);
	a.command = (char *)"tool";
	path = xprintf("%s:%s:/usr/bin", bin, nodebin);
	assert_int_equal(agent_resolve(&a, NULL, path, &in, &cause), 0);
	assert_string_equal(in.argv.v[0], real);
	assert_true(strv_contains(&in.binds, ver));
	assert_null(in.interpreter);
	agent_install_free(&in);
	/* A script whose interpreter lives in an nvm-like tree. */
	exe(node, "#!/bin/sh\n");
	exe(script, "#!/usr/bin/env node\n");
	a.command = NULL;
	{
		char *argv[] = { script, (char *)"--x", NULL };

		assert_int_equal(agent_resolve(&a, argv, path, &in, &cause), 0);
	}
	assert_string_equal(in.argv.v[0], script);
	assert_string_equal(in.argv.v[1], "--x");
	assert_true(strv_contains(&in.binds, sdir));
	assert_true(strv_contains(&in.binds, nvm));
	assert_true(strv_contains(&in.path, nodebin));
	agent_install_free(&in);
	free(ver);
	free(real);
	free(bin);
	free(link);
	free(nvm);
	free(node);
	free(nodebin);
	free(script);
	free(sdir);
	free(path);
}

static void
test_not_found(void **state)
{
	struct agent_install in;
	struct config_agent a;
	char *cause = NULL;

	memset(&a, 0, sizeof a);
	a.command = (char *)"codex";
	assert_int_equal(agent_resolve(&a, NULL, "/nonexistent", &in, &cause), -1);
	assert_non_null(strstr(cause, "npm install -g @openai/codex"));
	free(cause);
}

static void
test_shell_default(void **state)
{
	struct agent_install in;
	struct config_agent a;
	char *cause = NULL;

	memset(&a, 0, sizeof a);
	setenv("SHELL", "/bin/sh", 1);
	assert_int_equal(agent_resolve(&a, NULL, "/usr/bin:/bin", &in, &cause), 0);
	assert_string_equal(in.argv.v[0], "/bin/sh");
	assert_int_equal(in.binds.n, 0);
	agent_install_free(&in);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_npm_symlink),
		cmocka_unit_test(test_native_and_nvm),
		cmocka_unit_test(test_not_found),
		cmocka_unit_test(test_shell_default),
	};

	return test_run_group(tests, setup, teardown);
}
