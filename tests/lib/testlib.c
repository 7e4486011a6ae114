/* Helpers shared by the tests: scratch dirs, isolated XDG dirs, running the binary. */
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"
#include "testlib.h"

int test_skipped;
char *test_dir;
char *test_proj;
static char *test_cwd;

int
test_dir_setup(void **state)
{
	const char *tag = program_invocation_short_name;

	if (strncmp(tag, "test-", 5) == 0)
		tag += 5;
	test_dir = test_tmpdir(tag);
	test_isolate(test_dir);
	return 0;
}

int
test_dir_teardown(void **state)
{
	/*
	 * The process's runtime dir was made in this test's XDG_RUNTIME_DIR:
	 * the next test makes its own, or its snapshots' private indexes
	 * would bring this test's dir back after it is gone.
	 */
	path_runtime_dir_remove();
	test_rmtree(test_dir);
	free(test_dir);
	test_dir = NULL;
	return 0;
}

int
test_proj_setup(void **state)
{
	char cwd[4096];

	test_dir_setup(state);
	test_proj = xprintf("%s/proj", test_dir);
	if (mkdir(test_proj, 0755) != 0 || getcwd(cwd, sizeof cwd) == NULL)
		fail_msg("cannot make %s: %s", test_proj, strerror(errno));
	test_cwd = xstrdup(cwd);
	if (chdir(test_proj) != 0)
		fail_msg("cannot enter %s: %s", test_proj, strerror(errno));
	return 0;
}

int
test_proj_teardown(void **state)
{
	if (chdir(test_cwd) != 0)
		fail_msg("cannot go back to %s: %s", test_cwd, strerror(errno));
	free(test_cwd);
	free(test_proj);
	test_proj = NULL;
	return test_dir_teardown(state);
}

int
test_exit(int failed)
{
	if (failed != 0)
		return failed;
	if (test_skipped != 0) {
		fprintf(stderr, "%d test(s) skipped: reported as SKIP\n",
		    test_skipped);
		return 77;
	}
	return 0;
}

char *
test_tmpdir(const char *tag)
{
	char *p;

	if (asprintf(&p, "/tmp/amx-test-%s.XXXXXX", tag) == -1)
		abort();
	if (mkdtemp(p) == NULL)
		abort();
	chmod(p, 0755);
	return p;
}

static int
test_rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	if (flag == FTW_DP)
		rmdir(p);
	else
		unlink(p);
	return 0;
}

void
test_rmtree(const char *path)
{
	if (path != NULL)
		nftw(path, test_rm_one, 32, FTW_DEPTH | FTW_PHYS);
}

void
test_isolate(const char *dir)
{
	char buf[4096];

	snprintf(buf, sizeof buf, "%s/config", dir);
	mkdir(buf, 0700);
	setenv("XDG_CONFIG_HOME", buf, 1);
	snprintf(buf, sizeof buf, "%s/data", dir);
	mkdir(buf, 0700);
	setenv("XDG_DATA_HOME", buf, 1);
	snprintf(buf, sizeof buf, "%s/run", dir);
	mkdir(buf, 0700);
	setenv("XDG_RUNTIME_DIR", buf, 1);
}

static void
test_mkparents(const char *path)
{
	char *p = strdup(path), *s;

	for (s = p + 1; (s = strchr(s, '/')) != NULL; s++) {
		*s = '\0';
		mkdir(p, 0755);
		*s = '/';
	}
	free(p);
}

void
test_write_file(const char *path, const char *text)
{
	FILE *fp;

	test_mkparents(path);
	fp = fopen(path, "w");
	assert_non_null(fp);
	fputs(text, fp);
	fclose(fp);
}

char *
test_read_file(const char *path)
{
	FILE *fp = fopen(path, "r");
	char *buf = NULL, *more;
	size_t len = 0;
	ssize_t n;
	char chunk[65536];

	if (fp == NULL)
		return NULL;
	if ((buf = calloc(1, 1)) == NULL)
		abort();
	while ((n = (ssize_t)fread(chunk, 1, sizeof chunk, fp)) > 0) {
		if ((more = realloc(buf, len + (size_t)n + 1)) == NULL)
			abort();
		buf = more;
		memcpy(buf + len, chunk, (size_t)n);
		len += (size_t)n;
		buf[len] = '\0';
	}
	fclose(fp);
	return buf;
}

static void
test_append(char **buf, size_t *len, const char *p, size_t n)
{
	*buf = realloc(*buf, *len + n + 1);
	memcpy(*buf + *len, p, n);
	*len += n;
	(*buf)[*len] = '\0';
}

void
test_run(struct test_run *r, const char *input, int timeout,
    char *const argv[])
{
	int in[2], out[2], err[2], status;
	size_t lo = 0, le = 0;
	struct pollfd pfd[2];
	time_t deadline = time(NULL) + timeout;
	char chunk[65536];
	pid_t pid;
	ssize_t n;

	memset(r, 0, sizeof *r);
	r->out = calloc(1, 1);
	r->err = calloc(1, 1);
	if (pipe2(in, O_CLOEXEC) == -1 || pipe2(out, O_CLOEXEC) == -1 ||
	    pipe2(err, O_CLOEXEC) == -1)
		abort();
	if ((pid = fork()) == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(err[1], 2);
		execv(argv[0], argv);
		dprintf(2, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	close(err[1]);
	if (input != NULL)
		write(in[1], input, strlen(input));
	close(in[1]);
	pfd[0].fd = out[0];
	pfd[1].fd = err[0];
	pfd[0].events = pfd[1].events = POLLIN;
	while (pfd[0].fd != -1 || pfd[1].fd != -1) {
		if (time(NULL) > deadline) {
			kill(pid, SIGKILL);
			break;
		}
		if (poll(pfd, 2, 1000) <= 0)
			continue;
		for (int i = 0; i < 2; i++) {
			if (pfd[i].fd == -1 || pfd[i].revents == 0)
				continue;
			n = read(pfd[i].fd, chunk, sizeof chunk);
			if (n <= 0) {
				close(pfd[i].fd);
				pfd[i].fd = -1;
				continue;
			}
			if (i == 0)
				test_append(&r->out, &lo, chunk, (size_t)n);
			else
				test_append(&r->err, &le, chunk, (size_t)n);
		}
	}
	for (int i = 0; i < 2; i++) {
		if (pfd[i].fd != -1)
			close(pfd[i].fd);
	}
	waitpid(pid, &status, 0);
	r->status = WIFEXITED(status) ? WEXITSTATUS(status) :
	    128 + WTERMSIG(status);
}

const char *
test_agentmux(void)
{
	const char *p = getenv("AGENTMUX");

	if (p == NULL) {
		fprintf(stderr, "AGENTMUX is not set; run through meson test\n");
		abort();
	}
	return p;
}

char *
test_stage_agentmux(const char *dir)
{
	const char *share = getenv("AGENTMUX_SHARE");
	char *cmd;

	if (share == NULL) {
		fprintf(stderr, "AGENTMUX_SHARE is not set; run through meson "
		    "test\n");
		abort();
	}
	/* The small front and the whole program it runs, side by side. */
	test_sh_ok("mkdir -p '%s/bin' && cp '%s' '%s/bin/agentmux' && "
	    "cp \"$(dirname '%s')/agentmux-full\" '%s/bin/agentmux-full' && "
	    "rm -rf '%s/share' && cp -r '%s' '%s/share' && "
	    "chmod -R a+rX '%s/bin' '%s/share' && chmod a+x '%s'", dir,
	    test_agentmux(), dir, test_agentmux(), dir, dir, share, dir, dir,
	    dir, dir);
	if (asprintf(&cmd, "env AGENTMUX_SHARE='%s/share' '%s/bin/agentmux'",
	    dir, dir) == -1)
		abort();
	return cmd;
}

void
test_amx(struct test_run *r, const char *arg, ...)
{
	char *argv[64];
	va_list ap;
	int n = 0;

	argv[n++] = (char *)test_agentmux();
	va_start(ap, arg);
	for (; arg != NULL && n < 63; arg = va_arg(ap, const char *))
		argv[n++] = (char *)arg;
	va_end(ap);
	argv[n] = NULL;
	test_run(r, NULL, 120, argv);
}

void
test_run_free(struct test_run *r)
{
	free(r->out);
	free(r->err);
}

int
test_sh(const char *fmt, ...)
{
	char *cmd;
	va_list ap;
	int st;

	va_start(ap, fmt);
	if (vasprintf(&cmd, fmt, ap) == -1)
		abort();
	va_end(ap);
	st = system(cmd);
	free(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

void
test_sh_ok(const char *fmt, ...)
{
	char *cmd;
	va_list ap;
	int st;

	va_start(ap, fmt);
	if (vasprintf(&cmd, fmt, ap) == -1)
		abort();
	va_end(ap);
	st = test_sh("%s", cmd);
	if (st != 0)
		fail_msg("'%s' exited %d", cmd, st);
	free(cmd);
}

char *
test_sh_out(const char *fmt, ...)
{
	char *cmd, chunk[4096];
	struct buf b;
	va_list ap;
	size_t n;
	FILE *fp;

	va_start(ap, fmt);
	if (vasprintf(&cmd, fmt, ap) == -1)
		abort();
	va_end(ap);
	fp = popen(cmd, "r");
	if (fp == NULL)
		fail_msg("cannot run '%s'", cmd);
	buf_init(&b);
	while ((n = fread(chunk, 1, sizeof chunk, fp)) > 0)
		buf_add(&b, chunk, n);
	pclose(fp);
	free(cmd);
	if (b.data == NULL)
		buf_adds(&b, "");
	return buf_steal(&b);
}
