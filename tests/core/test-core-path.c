/* Paths: the runtime dir is private and refused when it is a symlink, foreign, or open. */
#include <sys/stat.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "lib/testlib.h"

static void
test_private_dir_ok(void **state)
{
	char *p = xprintf("%s/ok", test_dir), *cause = NULL;
	int fd;

	mkdir(p, 0700);
	fd = path_check_private_dir(p, getuid(), 0700, &cause);
	assert_true(fd >= 0);
	close(fd);
	free(p);
}

static void
test_private_dir_symlink(void **state)
{
	char *real = xprintf("%s/real", test_dir), *link = xprintf("%s/link", test_dir);
	char *cause = NULL;

	mkdir(real, 0700);
	assert_int_equal(symlink(real, link), 0);
	assert_int_equal(path_check_private_dir(link, getuid(), 0700, &cause), -1);
	assert_non_null(strstr(cause, "symlink"));
	free(cause);
	free(real);
	free(link);
}

static void
test_private_dir_mode(void **state)
{
	char *p = xprintf("%s/open", test_dir), *cause = NULL;

	mkdir(p, 0700);
	chmod(p, 0755);
	assert_int_equal(path_check_private_dir(p, getuid(), 0700, &cause), -1);
	assert_non_null(strstr(cause, "0755"));
	assert_non_null(strstr(cause, "chmod 700"));
	free(cause);
	free(p);
}

static void
test_private_dir_owner(void **state)
{
	char *p = xprintf("%s/foreign", test_dir), *cause = NULL;

	mkdir(p, 0700);
	if (getuid() == 0) {
		assert_int_equal(chown(p, 65534, 65534), 0);
		assert_int_equal(path_check_private_dir(p, 0, 0700, &cause), -1);
	} else {
		/* Not root: check against a uid that is not ours instead. */
		assert_int_equal(path_check_private_dir(p, getuid() + 1, 0700,
		    &cause), -1);
	}
	assert_non_null(strstr(cause, "owned by"));
	free(cause);
	free(p);
}

static void
test_runtime_dir(void **state)
{
	char *cause = NULL, *rt;
	struct stat st;

	rt = path_runtime_dir_create(&cause);
	assert_non_null(rt);
	assert_non_null(getenv("XDG_RUNTIME_DIR"));
	assert_non_null(strstr(rt, getenv("XDG_RUNTIME_DIR"))); /* NOLINT(clang-analyzer-core.NonNullParamChecker) */
	assert_int_equal(lstat(rt, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0700);
	assert_int_equal(st.st_uid, getuid());
	{
		char *f = xprintf("%s/sub/file", rt);

		test_write_file(f, "x");
		free(f);
	}
	path_runtime_dir_remove();
	assert_int_equal(lstat(rt, &st), -1);
	assert_int_equal(errno, ENOENT);
	free(rt);
}

static void
test_runtime_dir_bad_base_falls_back(void **state)
{
	char *link = xprintf("%s/rtlink", test_dir), *cause = NULL, *rt;

	/* A base that is not ours is not used: the dir goes to /tmp. */
	symlink("/", link);
	setenv("XDG_RUNTIME_DIR", "/", 1);
	if (getuid() == 0)
		setenv("XDG_RUNTIME_DIR", "/nonexistent-amx", 1);
	rt = path_runtime_dir_create(&cause);
	assert_non_null(rt);
	assert_int_equal(strncmp(rt, "/tmp/agentmux-", 14), 0);
	path_runtime_dir_remove();
	free(rt);
	free(link);
	test_isolate(test_dir);
}

static void
test_data_dir(void **state)
{
	char *cause = NULL, *d = path_data_dir(&cause);
	struct stat st;

	assert_non_null(d);
	assert_int_equal(stat(d, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	free(d);
}

static void
test_data_dir_symlink_refused(void **state)
{
	char *base = xprintf("%s/data2", test_dir), *cause = NULL, *d;
	char *target = xprintf("%s/elsewhere", test_dir);
	char *link = xprintf("%s/agentmux", base);

	mkdir(base, 0700);
	mkdir(target, 0700);
	symlink(target, link);
	setenv("XDG_DATA_HOME", base, 1);
	d = path_data_dir(&cause);
	assert_null(d);
	assert_non_null(cause);
	free(cause);
	free(base);
	free(target);
	free(link);
	test_isolate(test_dir);
}

static void
test_remove_tree_no_follow(void **state)
{
	char *t = xprintf("%s/tree", test_dir), *keep = xprintf("%s/keep", test_dir);
	char *f = xprintf("%s/keep/file", test_dir), *l = xprintf("%s/tree/link", test_dir);

	mkdir(t, 0700);
	mkdir(keep, 0700);
	test_write_file(f, "precious");
	symlink(keep, l);
	assert_int_equal(path_remove_tree(t), 0);
	assert_int_equal(access(t, F_OK), -1);
	assert_int_equal(access(f, F_OK), 0);
	free(t);
	free(keep);
	free(f);
	free(l);
}

static void
test_find_exec(void **state)
{
	char *p = path_find_exec("sh", "/nonexistent:/usr/bin:/bin");

	assert_non_null(p);
	assert_int_equal(access(p, X_OK), 0);
	free(p);
	assert_null(path_find_exec("no-such-program-amx", "/usr/bin"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_private_dir_ok),
		cmocka_unit_test(test_private_dir_symlink),
		cmocka_unit_test(test_private_dir_mode),
		cmocka_unit_test(test_private_dir_owner),
		cmocka_unit_test(test_runtime_dir),
		cmocka_unit_test(test_runtime_dir_bad_base_falls_back),
		cmocka_unit_test(test_data_dir),
		cmocka_unit_test(test_data_dir_symlink_refused),
		cmocka_unit_test(test_remove_tree_no_follow),
		cmocka_unit_test(test_find_exec),
	};

	return test_run_group(tests, test_dir_setup, test_dir_teardown);
}
