/* Paths: the runtime dir is private and refused when it is a symlink, foreign, or open. */
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <grp.h>
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

/*
 * Dirs of mode 000 (an overlay's work/work, with the incompat/volatile
 * marker a volatile mount leaves) go too, for their owner: they stayed,
 * and a later session given the same dir could mount no overlay there.
 * As root (which reads any dir) the removal runs in a child as nobody.
 */
static void
test_remove_tree_unreadable(void **state)
{
	char *box = xprintf("%s/box", test_dir);
	char *w = xprintf("%s/box/sess/work/work", test_dir);
	char *v = xprintf("%s/box/sess/work/work/incompat/volatile", test_dir);
	char *dirty = xprintf("%s/dirty", v);
	pid_t pid;
	int st;

	assert_int_equal(path_mkdir_p(v, 0700), 0);
	test_write_file(dirty, "");
	if (getuid() == 0)
		test_sh_ok("chown -R 65534:65534 %s", box);
	assert_int_equal(chmod(v, 0), 0);
	assert_int_equal(chmod(w, 0), 0);
	/* From inside its dir: the parents need not be open to nobody. */
	if ((pid = fork()) == 0) {
		if (chdir(box) == -1 || (getuid() == 0 &&
		    (setgroups(0, NULL) == -1 || setgid(65534) == -1 ||
		    setuid(65534) == -1)))
			_exit(3);
		_exit(path_remove_tree("sess") == 0 && access("sess", F_OK) ==
		    -1 && errno == ENOENT ? 0 : 1);
	}
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	free(box);
	free(w);
	free(v);
	free(dirty);
}

/*
 * A tree deeper than a path can name (3,000 levels: nftw stopped at
 * PATH_MAX and said nothing), with dirs of mode 0500 holding files (a
 * jail's, as its user: their entries cannot be taken until the dir is
 * opened up), goes whole; run as nobody, as a user runs it. A part that
 * cannot go (a file of root's in a dir of root's, for nobody) makes it
 * fail, ENOTEMPTY, with the rest gone.
 */
static void
test_remove_tree_deep(void **state)
{
	char *box = xprintf("%s/deepbox", test_dir);
	pid_t pid;
	int st;

	assert_int_equal(path_mkdir_p(box, 0755), 0);
	test_sh_ok("cd %s && mkdir t && python3 -c 'import os\n"
	    "fd = os.open(\"t\", os.O_RDONLY)\nfor i in range(3000):\n"
	    "    os.mkdir(\"d\", dir_fd=fd)\n"
	    "    fd = os.open(\"d\", os.O_RDONLY, dir_fd=fd)\n"
	    "os.close(os.open(\"f\", os.O_CREAT | os.O_WRONLY, dir_fd=fd))'",
	    box);
	test_sh_ok("cd %s && mkdir -p t/ro/sub && echo a >t/ro/a && echo b "
	    ">t/ro/sub/b && chmod 500 t/ro/sub t/ro", box);
	if (getuid() == 0)
		test_sh_ok("chown 65534:65534 %s && chown -R 65534:65534 %s/t && "
		    "mkdir -p %s/u/x "
		    "%s/u/rootdir && echo r >%s/u/rootdir/f && chown 65534:65534 "
		    "%s/u %s/u/x", box, box, box, box, box, box, box);
	if ((pid = fork()) == 0) {
		if (chdir(box) == -1 || (getuid() == 0 &&
		    (setgroups(0, NULL) == -1 || setgid(65534) == -1 ||
		    setuid(65534) == -1)))
			_exit(3);
		if (path_remove_tree("t") != 0 || access("t", F_OK) != -1)
			_exit(1);
		/* Root's own dir in nobody's: it stays, said; the rest goes. */
		if (getuid() == 65534 && (path_remove_tree("u") != -1 || errno !=
		    ENOTEMPTY || access("u/x", F_OK) != -1 ||
		    access("u/rootdir/f", F_OK) != 0))
			_exit(2);
		_exit(0);
	}
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	test_sh_ok("rm -rf %s/u", box);
	free(box);
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
		cmocka_unit_test(test_remove_tree_unreadable),
		cmocka_unit_test(test_remove_tree_deep),
		cmocka_unit_test(test_find_exec),
	};

	return test_run_group(tests, test_dir_setup, test_dir_teardown);
}
