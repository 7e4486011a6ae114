/* Helpers shared by the tests: scratch dirs, isolated XDG dirs, running the binary. */
#ifndef AGENTMUX_TESTLIB_H
#define AGENTMUX_TESTLIB_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

/* A scratch directory under /tmp, removed by test_rmtree; caller frees. */
char *test_tmpdir(const char *tag);
/* rm -rf. */
void test_rmtree(const char *path);
/* Points XDG_CONFIG_HOME, XDG_DATA_HOME, XDG_RUNTIME_DIR into DIR. */
void test_isolate(const char *dir);
/* Writes TEXT to PATH (creating parent dirs). */
void test_write_file(const char *path, const char *text);
/* Reads a whole file; caller frees; NULL if missing. */
char *test_read_file(const char *path);

struct test_run {
	int status;     /* exit code, or 128+signal */
	char *out;      /* stdout */
	char *err;      /* stderr */
};

/* Runs ARGV (argv[0] a path) with INPUT on stdin (may be NULL); waits at most TIMEOUT s. */
void test_run(struct test_run *, const char *input, int timeout, char *const argv[]);
/* Runs the agentmux binary under test with the NULL-terminated arguments. */
void test_amx(struct test_run *, const char *arg, ...);
void test_run_free(struct test_run *);
/* The binary under test ($AGENTMUX). */
const char *test_agentmux(void);
/* Runs a shell command line; returns its exit status. */
int test_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Runs a shell command line and fails the test unless it exits 0. */
void test_sh_ok(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A shell command line's standard output ("" if none); caller frees. */
char *test_sh_out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/*
 * Fixtures (group or per test): test_dir_setup makes a scratch dir,
 * test_dir, with the XDG dirs isolated in it; test_proj_setup also makes
 * test_dir/proj, test_proj, and enters it. Their teardowns undo that.
 */
extern char *test_dir;
extern char *test_proj;
int test_dir_setup(void **state);
int test_dir_teardown(void **state);
int test_proj_setup(void **state);
int test_proj_teardown(void **state);
/* Tests skipped so far in this binary (test_skip counts them). */
extern int test_skipped;
/* Skips the running test with a reason; the binary then exits 77. */
#define test_skip(...) do {						\
	test_skipped++;							\
	print_message(__VA_ARGS__);					\
	print_message("\n");						\
	skip();								\
} while (0)
/*
 * Runs a group of cmocka tests and gives meson its exit status: the
 * number failed, else 77 (SKIP) when any test was skipped, else 0.
 */
#define test_run_group(tests, setup, teardown)				\
	test_exit(cmocka_run_group_tests(tests, setup, teardown))
int test_exit(int failed);

#endif
