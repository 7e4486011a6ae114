/* The async runner: output, exit codes, signals, big stdin, line callbacks, concurrency, moving, killing. */
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <event2/event.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "lib/testlib.h"

static void
opts_sh(struct proc_opts *o, char **argv)
{
	memset(o, 0, sizeof *o);
	o->argv = argv;
	o->out_fd = -1;
	o->umask = -1;
}

static void
test_output_and_status(void **state)
{
	char *argv[] = { "sh", "-c", "echo out; echo err >&2; exit 3", NULL };
	struct proc_opts o;
	struct buf out, err;
	char *cause = NULL;
	int st;

	opts_sh(&o, argv);
	buf_init(&out);
	buf_init(&err);
	assert_int_equal(proc_run(&o, &out, &err, &st, &cause), 0);
	assert_int_equal(st, 3);
	assert_string_equal(out.data, "out\n");
	assert_string_equal(err.data, "err\n");
	buf_free(&out);
	buf_free(&err);
}

static void
test_signal_status(void **state)
{
	char *argv[] = { "sh", "-c", "kill -9 $$", NULL };
	struct proc_opts o;
	char *cause = NULL;
	int st;

	opts_sh(&o, argv);
	assert_int_equal(proc_run(&o, NULL, NULL, &st, &cause), 0);
	assert_int_equal(st, 128 + SIGKILL);
}

/*
 * A command past its time (one waiting on a FIFO nobody writes, as git
 * would on a planted one) is killed, so nothing waits for it for ever.
 */
static void
test_timeout(void **state)
{
	char *dir = test_tmpdir("proctimeout"), *fifo, *cmd;
	struct proc_opts o;
	char *cause = NULL;
	int64_t t0;
	int st;

	fifo = xprintf("%s/fifo", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	/* exec: the shell is the reader; a cat it forked would outlive the kill. */
	cmd = xprintf("exec cat %s", fifo);
	{
		char *argv[] = { "sh", "-c", cmd, NULL };

		opts_sh(&o, argv);
		o.timeout = 1;
		t0 = util_mono_us();
		assert_int_equal(proc_run(&o, NULL, NULL, &st, &cause), 0);
	}
	assert_int_equal(st, 128 + SIGKILL);
	/* Killed at its time, not at some later one (generous for a loaded machine). */
	assert_true(util_mono_us() - t0 < 60 * 1000000LL);
	free(cmd);
	free(fifo);
	test_rmtree(dir);
	free(dir);
}

static void
test_missing_command(void **state)
{
	char *argv[] = { "agentmux-no-such-command", NULL };
	struct proc_opts o;
	char *cause = NULL;
	int st;

	opts_sh(&o, argv);
	assert_int_equal(proc_run(&o, NULL, NULL, &st, &cause), -1);
	assert_non_null(strstr(cause, "agentmux-no-such-command"));
	free(cause);
}

/* Far more than a pipe holds, both ways, so reading and writing must interleave. */
static void
test_big_input(void **state)
{
	char *argv[] = { "sh", "-c", "cat; echo done >&2", NULL };
	size_t len = 3 * 1024 * 1024, i;
	struct proc_opts o;
	struct buf out, err;
	char *in = xmalloc(len), *cause = NULL;
	int st;

	for (i = 0; i < len; i++)
		in[i] = (char)('a' + i % 26);
	opts_sh(&o, argv);
	o.input = in;
	o.inputlen = len;
	buf_init(&out);
	buf_init(&err);
	assert_int_equal(proc_run(&o, &out, &err, &st, &cause), 0);
	assert_int_equal(st, 0);
	assert_int_equal(out.len, len);
	assert_memory_equal(out.data, in, len);
	assert_string_equal(err.data, "done\n");
	buf_free(&out);
	buf_free(&err);
	free(in);
}

/* A child that exits without reading its input must not kill us with SIGPIPE. */
static void
test_unread_input(void **state)
{
	char *argv[] = { "true", NULL };
	size_t len = 1024 * 1024;
	struct proc_opts o;
	char *in = xcalloc(1, len), *cause = NULL;
	int st;

	signal(SIGPIPE, SIG_DFL);
	opts_sh(&o, argv);
	o.input = in;
	o.inputlen = len;
	assert_int_equal(proc_run(&o, NULL, NULL, &st, &cause), 0);
	assert_int_equal(st, 0);
	free(in);
}

static void
count_line(void *arg, const char *line, size_t len)
{
	int *n = arg;

	if (len == 4 && memcmp(line, "line", 4) == 0)
		(*n)++;
}

struct two {
	int done;
	int lines;
	struct event_base *base;
};

static void
two_done(struct proc *p, void *arg)
{
	struct two *t = arg;

	assert_int_equal(proc_status(p), 0);
	if (++t->done == 2)
		event_base_loopbreak(t->base);
}

static void
two_line(void *arg, const char *line, size_t len)
{
	struct two *t = arg;

	count_line(&t->lines, line, len);
}

/* Two commands at once on one loop; lines arrive as they are written. */
static void
test_concurrent_lines(void **state)
{
	char *a[] = { "sh", "-c", "i=0; while [ $i -lt 500 ]; do echo line; "
	    "i=$((i+1)); done", NULL };
	char *b[] = { "sh", "-c", "sleep 0.2; printf 'line\\nline'", NULL };
	struct proc_opts o;
	struct proc *pa, *pb;
	struct two t;
	char *cause = NULL;

	memset(&t, 0, sizeof t);
	t.base = event_base_new();
	opts_sh(&o, a);
	o.line = two_line;
	pa = proc_start(t.base, &o, two_done, &t, &cause);
	o.argv = b;
	pb = proc_start(t.base, &o, two_done, &t, &cause);
	assert_non_null(pa);
	assert_non_null(pb);
	event_base_dispatch(t.base);
	assert_int_equal(t.done, 2);
	/* The last line had no newline: it is still passed on at the end. */
	assert_int_equal(t.lines, 502);
	proc_free(pa);
	proc_free(pb);
	event_base_free(t.base);
}

static void
flag_done(struct proc *p, void *arg)
{
	*(int *)arg = proc_status(p) + 1000;
}

/* A command started on one loop is finished on another. */
static void
test_move(void **state)
{
	char *argv[] = { "sh", "-c", "sleep 0.1; echo moved", NULL };
	struct event_base *a = event_base_new(), *b = event_base_new();
	struct proc_opts o;
	struct proc *p;
	char *cause = NULL;
	int done = 0;

	opts_sh(&o, argv);
	p = proc_start(a, &o, flag_done, &done, &cause);
	assert_non_null(p);
	proc_move(p, b);
	while (done == 0)
		event_base_loop(b, EVLOOP_ONCE);
	assert_int_equal(done, 1000);
	assert_string_equal(proc_out(p)->data, "moved\n");
	proc_free(p);
	event_base_free(a);
	event_base_free(b);
}

/* Freeing a running command kills and reaps it. */
static void
test_free_kills(void **state)
{
	char *argv[] = { "sleep", "30", NULL };
	struct event_base *base = event_base_new();
	struct proc_opts o;
	struct proc *p;
	char *cause = NULL;
	int done = 0, st;

	opts_sh(&o, argv);
	p = proc_start(base, &o, flag_done, &done, &cause);
	assert_non_null(p);
	proc_free(p);
	assert_int_equal(done, 0);
	/* The loop reaps it (it ends once that is done): nothing is left. */
	assert_int_not_equal(event_base_dispatch(base), -1);
	assert_int_equal(waitpid(-1, &st, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
	event_base_free(base);
}

/*
 * proc_term does not wait for a command that ignores SIGTERM: it returns
 * at once, and the loop kills and reaps it once its grace is over.
 */
static void
test_term_does_not_wait(void **state)
{
	char *dir = test_tmpdir("proc-term"), *file = xprintf("%s/pid", dir);
	char *script = xprintf("echo $$ > %s; trap '' TERM; echo ready; "
	    "exec sleep 30", file);
	char *argv[] = { "sh", "-c", script, NULL };
	struct event_base *base = event_base_new();
	struct proc_opts o;
	struct proc *p;
	char *cause = NULL, *text;
	int64_t t0, spent;
	pid_t pid;
	int i, st, done = 0;

	opts_sh(&o, argv);
	p = proc_start(base, &o, flag_done, &done, &cause);
	assert_non_null(p);
	/* Until it says ready, it has not set its trap. */
	for (i = 0; i < 500 && strstr(proc_out(p)->data != NULL ?
	    proc_out(p)->data : "", "ready") == NULL; i++)
		event_base_loop(base, EVLOOP_ONCE);
	text = test_read_file(file);
	assert_non_null(text);
	pid = (pid_t)atoi(text);
	free(text);
	t0 = util_mono_us();
	proc_term(p);
	spent = util_mono_us() - t0;
	assert_true(spent < 100000);
	/* Not reaped yet: it ignores SIGTERM, and nobody waited. */
	assert_int_equal(kill(pid, 0), 0);
	assert_int_not_equal(event_base_dispatch(base), -1);
	assert_int_equal(kill(pid, 0), -1);
	assert_int_equal(errno, ESRCH);
	assert_int_equal(waitpid(-1, &st, WNOHANG), -1);
	assert_int_equal(done, 0);
	event_base_free(base);
	test_rmtree(dir);
	free(dir);
	free(file);
	free(script);
}

static void
test_dir_and_umask(void **state)
{
	char *argv[] = { "sh", "-c", "pwd; umask", NULL };
	struct proc_opts o;
	struct buf out;
	char *cause = NULL;
	int st;

	opts_sh(&o, argv);
	o.dir = "/";
	o.umask = 027;
	buf_init(&out);
	assert_int_equal(proc_run(&o, &out, NULL, &st, &cause), 0);
	assert_string_equal(out.data, "/\n0027\n");
	buf_free(&out);
}

/*
 * A child leads a session of its own, so it has no controlling terminal:
 * git over a repository a jail wrote, sent to /dev/tty by a link there,
 * cannot open it (before, it did, and waited there stopped).
 */
static void
test_no_terminal(void **state)
{
	char *argv[] = { "sh", "-c", "echo $$ $(cut -d' ' -f6 /proc/$$/stat); "
	    "(exec 3</dev/tty) 2>/dev/null && echo TTY || echo NO-TTY", NULL };
	struct proc_opts o;
	struct buf out;
	char *cause = NULL;
	long pid, sid;
	int st;

	opts_sh(&o, argv);
	buf_init(&out);
	assert_int_equal(proc_run(&o, &out, NULL, &st, &cause), 0);
	assert_int_equal(sscanf(out.data, "%ld %ld", &pid, &sid), 2);
	assert_int_equal(pid, sid);
	assert_true(sid != (long)getsid(0));
	assert_non_null(strstr(out.data, "NO-TTY"));
	buf_free(&out);
	/* With KEEP_TTY (a secret command, which may ask): our session. */
	o.keep_tty = true;
	buf_init(&out);
	assert_int_equal(proc_run(&o, &out, NULL, &st, &cause), 0);
	assert_int_equal(sscanf(out.data, "%ld %ld", &pid, &sid), 2);
	assert_int_equal(sid, (long)getsid(0));
	buf_free(&out);
}

/* RLIMIT_NOFILE's soft limit as the test started (test_nofile), its children's. */
static rlim_t nofile_was;

/* O's command ("ulimit -n") says NOFILE_WAS: the child got the old limit back. */
static void
expect_nofile_was(const struct proc_opts *o)
{
	struct buf out;
	char *cause = NULL, want[64];
	int st;

	buf_init(&out);
	assert_int_equal(proc_run(o, &out, NULL, &st, &cause), 0);
	buf_adds(&out, "");
	snprintf(want, sizeof want, "%llu\n", (unsigned long long)nofile_was);
	assert_string_equal(out.data, want);
	buf_free(&out);
}

/*
 * proc_raise_nofile raises this process's soft RLIMIT_NOFILE to its hard
 * limit (65,536 at most); its children get the old one back.
 */
static void
test_nofile(void **state)
{
	char *argv[] = { "sh", "-c", "ulimit -n", NULL };
	struct rlimit before, after;
	struct proc_opts o;

	(void)state;
	/* Below its hard limit first (as a login's 1,024 under 524,288), whatever this runs under. */
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &before), 0);
	if (before.rlim_max != RLIM_INFINITY && before.rlim_max >= 256) {
		before.rlim_cur = before.rlim_max > 2048 ? 1024 :
		    before.rlim_max / 2;
		assert_int_equal(setrlimit(RLIMIT_NOFILE, &before), 0);
	}
	nofile_was = before.rlim_cur;
	proc_raise_nofile();
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &after), 0);
	assert_int_equal(after.rlim_max, before.rlim_max);
	if (before.rlim_cur >= 65536 || before.rlim_cur >= before.rlim_max)
		assert_int_equal(after.rlim_cur, before.rlim_cur);
	else
		assert_int_equal(after.rlim_cur, before.rlim_max < 65536 ?
		    before.rlim_max : 65536);
	print_message("RLIMIT_NOFILE %llu -> %llu (hard %llu)\n",
	    (unsigned long long)before.rlim_cur,
	    (unsigned long long)after.rlim_cur,
	    (unsigned long long)after.rlim_max);
	opts_sh(&o, argv);
	expect_nofile_was(&o);
}

static int
no_clone3_teardown(void **state)
{
	(void)state;
	proc_test_no_clone3 = false;
	return 0;
}

/*
 * Where clone3 is refused (older kernels, some container runtimes'
 * seccomp filters), a child with a limit is vforked, the limit set before
 * its exec; one without is started by posix_spawn.
 */
static void
test_no_clone3(void **state)
{
	char *argv[] = { "sh", "-c", "ulimit -d", NULL };
	char *nofile_argv[] = { "sh", "-c", "sleep 0.5; ulimit -n", NULL };
	struct proc_opts o;
	struct buf out;
	char *cause = NULL;
	unsigned vforked = proc_test_vforked;
	int st;

	(void)state;
	proc_test_no_clone3 = true;
	opts_sh(&o, argv);
	o.data_max = (uint64_t)48 << 20;
	buf_init(&out);
	assert_int_equal(proc_run(&o, &out, NULL, &st, &cause), 0);
	buf_adds(&out, "");
	assert_string_equal(out.data, "49152\n");
	assert_int_equal(proc_test_vforked - vforked, 1);
	buf_free(&out);
	o.data_max = 0;
	assert_int_equal(proc_run(&o, NULL, NULL, &st, &cause), 0);
	assert_int_equal(st, 0);
	assert_int_equal(proc_test_vforked - vforked, 1);
	/*
	 * posix_spawn's child gets the open files' soft limit test_nofile
	 * raised back too, once it has exec'd (it looks a moment later).
	 */
	opts_sh(&o, nofile_argv);
	expect_nofile_was(&o);
	assert_int_equal(proc_test_vforked - vforked, 1);
	opts_sh(&o, argv);
	o.data_max = (uint64_t)48 << 20;
	o.dir = "/nonexistent/agentmux-no-such-dir";
	assert_int_equal(proc_run(&o, NULL, NULL, &st, &cause), -1);
	assert_string_equal(cause, "cannot run sh: No such file or directory");
	free(cause);
}

/* test_data_max's 64 MiB, given back however the test ends (later tests clone). */
static char *data_max_big = MAP_FAILED;

static int
data_max_teardown(void **state)
{
	(void)state;
	if (data_max_big != MAP_FAILED)
		munmap(data_max_big, 64 << 20);
	data_max_big = MAP_FAILED;
	return 0;
}

/*
 * DATA_MAX is the child's RLIMIT_DATA (git index-pack of a session's pack
 * runs under one), set before its exec: also once this process holds over
 * 32 MiB of its own memory, where a child without a limit is started by
 * posix_spawn (which could limit it only after its exec: on a loaded
 * machine the shell had printed the old limit by then, in CI) and one
 * with a limit shares its memory until its exec (proc_vfork): its exec's
 * failure and its status are told as a clone's are.
 */
static void
test_data_max(void **state)
{
	char *argv[] = { "sh", "-c", "ulimit -d", NULL };
	char *fail_argv[] = { "sh", "-c", "exit 7", NULL };
	char *nofile_argv[] = { "sh", "-c", "ulimit -n", NULL };
	struct proc_opts o;
	struct buf out;
	char *cause = NULL;
	struct rlimit rl;
	char own[64];
	int st, round;
	unsigned vforked;

	(void)state;
	assert_int_equal(getrlimit(RLIMIT_DATA, &rl), 0);
	if (rl.rlim_cur == RLIM_INFINITY)
		snprintf(own, sizeof own, "unlimited\n");
	else
		snprintf(own, sizeof own, "%llu\n",
		    (unsigned long long)rl.rlim_cur / 1024);
	for (round = 0; round < 2; round++) {
		/* Mapped, not malloc'd: ASan's quarantine would keep it (and
		 * the next tests' children spawned) after it is given back. */
		if (round == 1) {
			data_max_big = mmap(NULL, 64 << 20,
			    PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			assert_true(data_max_big != MAP_FAILED);
			memset(data_max_big, 1, 64 << 20);
		}
		/* The soft limit of open files test_nofile raised: the old one, vforked too. */
		opts_sh(&o, nofile_argv);
		o.data_max = (uint64_t)48 << 20;
		expect_nofile_was(&o);
		opts_sh(&o, argv);
		o.data_max = (uint64_t)48 << 20;
		buf_init(&out);
		vforked = proc_test_vforked;
		assert_int_equal(proc_run(&o, &out, NULL, &st, &cause), 0);
		assert_int_equal(st, 0);
		/* (Round 0 may be big already: under ASan.) */
		if (round == 1)
			assert_int_equal(proc_test_vforked - vforked, 1);
		buf_adds(&out, "");
		assert_string_equal(out.data, "49152\n");
		buf_free(&out);
		/* Its exec's failure, and a status of its own. */
		o.dir = "/nonexistent/agentmux-no-such-dir";
		assert_int_equal(proc_run(&o, NULL, NULL, &st, &cause), -1);
		assert_string_equal(cause,
		    "cannot run sh: No such file or directory");
		free(cause);
		cause = NULL;
		o.dir = NULL;
		o.argv = fail_argv;
		assert_int_equal(proc_run(&o, NULL, NULL, &st, &cause), 0);
		assert_int_equal(st, 7);
		o.argv = argv;
		/* None asked for: ours, as it was. */
		o.data_max = 0;
		buf_init(&out);
		assert_int_equal(proc_run(&o, &out, NULL, &st, &cause), 0);
		buf_adds(&out, "");
		assert_string_equal(out.data, own);
		buf_free(&out);
	}
}

/* Input given later, after the command started (and on another loop): it waits for it. */
static void
test_input_later(void **state)
{
	char *argv[] = { "sh", "-c", "cat; echo read >&2", NULL };
	struct event_base *a = event_base_new(), *b = event_base_new();
	struct proc_opts o;
	struct proc *p;
	char *cause = NULL;
	int done = 0, i;

	opts_sh(&o, argv);
	o.input_later = true;
	p = proc_start(a, &o, flag_done, &done, &cause);
	assert_non_null(p);
	/* Nothing to read yet: the command waits, the loop does not spin. */
	for (i = 0; i < 5; i++)
		event_base_loop(a, EVLOOP_NONBLOCK);
	usleep(100000);
	event_base_loop(a, EVLOOP_NONBLOCK);
	assert_int_equal(done, 0);
	proc_move(p, b);
	proc_input(p, "given\n", 6);
	while (done == 0)
		event_base_loop(b, EVLOOP_ONCE);
	assert_int_equal(done, 1000);
	assert_string_equal(proc_out(p)->data, "given\n");
	assert_string_equal(proc_err(p)->data, "read\n");
	proc_free(p);
	event_base_free(a);
	event_base_free(b);
}

/* One that ends before its input comes is reported, and input for it goes nowhere. */
static void
test_input_later_gone(void **state)
{
	char *argv[] = { "sh", "-c", "exit 4", NULL };
	struct event_base *base = event_base_new();
	struct proc_opts o;
	struct proc *p;
	char *cause = NULL;
	int done = 0;

	signal(SIGPIPE, SIG_DFL);
	opts_sh(&o, argv);
	o.input_later = true;
	p = proc_start(base, &o, flag_done, &done, &cause);
	assert_non_null(p);
	while (done == 0)
		event_base_loop(base, EVLOOP_ONCE);
	assert_int_equal(done, 1004);
	proc_input(p, "late\n", 5);
	proc_free(p);
	event_base_free(base);
}

/* Commands are found on PATH as posix_spawnp finds them, the current dir's entry included. */
static void
test_path_lookup(void **state)
{
	char *dir = test_tmpdir("which"), *script, *path, *oldpath, cwd[4096];
	char *argv[] = { "amx-which-test", NULL };
	struct proc_opts o;
	struct buf out;
	char *cause = NULL;
	int st;

	script = xprintf("%s/bin/amx-which-test", dir);
	test_sh("mkdir -p %s/bin %s/rel && printf '#!/bin/sh\\necho abs\\n' > %s "
	    "&& chmod +x %s && printf '#!/bin/sh\\necho rel\\n' > "
	    "%s/rel/amx-which-test && chmod +x %s/rel/amx-which-test", dir, dir,
	    script, script, dir, dir);
	oldpath = xstrdup(getenv("PATH"));
	path = xprintf("%s/bin:%s", dir, oldpath);
	setenv("PATH", path, 1);
	opts_sh(&o, argv);
	buf_init(&out);
	assert_int_equal(proc_run(&o, &out, NULL, &st, &cause), 0);
	assert_string_equal(out.data, "abs\n");
	buf_free(&out);
	/* An empty entry (the current dir) first: it wins, as for execvp. */
	assert_non_null(getcwd(cwd, sizeof cwd));
	free(path);
	path = xprintf(":%s/bin:%s", dir, oldpath);
	setenv("PATH", path, 1);
	assert_int_equal(chdir(dir), 0);
	assert_int_equal(chdir("rel"), 0);
	buf_init(&out);
	assert_int_equal(proc_run(&o, &out, NULL, &st, &cause), 0);
	assert_string_equal(out.data, "rel\n");
	buf_free(&out);
	assert_int_equal(chdir(cwd), 0);
	setenv("PATH", oldpath, 1);
	free(oldpath);
	free(path);
	free(script);
	test_rmtree(dir);
	free(dir);
}

struct which_race {
	const char *name;     /* run by PATH lookup, */
	const char *want;     /* printing this */
	int ok;               /* runs that did */
};

static void *
which_race_run(void *arg)
{
	struct which_race *w = arg;
	char *argv[] = { (char *)w->name, "-c", "echo $0", NULL };
	struct proc_opts o;
	struct buf out;
	char *cause = NULL;
	int i, st;

	for (i = 0; i < 150; i++) {
		opts_sh(&o, argv);
		buf_init(&out);
		if (proc_run(&o, &out, NULL, &st, &cause) == 0 && st == 0 &&
		    out.data != NULL && strcmp(out.data, w->want) == 0)
			w->ok++;
		free(cause);
		cause = NULL;
		buf_free(&out);
	}
	return NULL;
}

/*
 * Helper threads run git while the loop runs other commands: each
 * lookup's path is the caller's own, never one another thread's lookup
 * frees (ASan's pass would say so; a freed path would run the wrong
 * program or none).
 */
static void
test_path_lookup_threads(void **state)
{
	struct which_race a = { "sh", "sh\n", 0 }, b = { "bash", "bash\n", 0 };
	pthread_t ta, tb;

	assert_int_equal(pthread_create(&ta, NULL, which_race_run, &a), 0);
	assert_int_equal(pthread_create(&tb, NULL, which_race_run, &b), 0);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	assert_int_equal(a.ok, 150);
	assert_int_equal(b.ok, 150);
}

/*
 * err_to_out: stderr is read with stdout, in the order written (the
 * dashboard's text views show both); EXE runs a program under another
 * argv[0] (the dashboard runs itself as "agentmux").
 */
static void
test_err_to_out_and_exe(void **state)
{
	char *argv[] = { "custom-name", "-c",
	    "echo one; echo two >&2; echo \"$0\"", NULL };
	struct proc_opts o;
	struct buf out, err;
	char *cause = NULL;
	int st;

	opts_sh(&o, argv);
	o.exe = "/bin/sh";
	o.err_to_out = true;
	buf_init(&out);
	buf_init(&err);
	assert_int_equal(proc_run(&o, &out, &err, &st, &cause), 0);
	assert_int_equal(st, 0);
	assert_string_equal(out.data != NULL ? out.data : "",
	    "one\ntwo\ncustom-name\n");
	assert_int_equal(err.len, 0);
	buf_free(&out);
	buf_free(&err);
}

/* Empty input (git config --file - with nothing to read): stdin is closed, cat ends. */
static void
test_empty_input(void **state)
{
	char *argv[] = { "sh", "-c", "cat; echo ended", NULL };
	struct proc_opts o;
	struct buf out;
	char *cause = NULL;
	int st;

	opts_sh(&o, argv);
	o.input = "";
	o.inputlen = 0;
	buf_init(&out);
	assert_int_equal(proc_run(&o, &out, NULL, &st, &cause), 0);
	assert_int_equal(st, 0);
	assert_string_equal(out.data != NULL ? out.data : "", "ended\n");
	buf_free(&out);
}

/* The process has one loop: the same each time, a forked child's its own. */
static void
test_one_base(void **state)
{
	struct event_base *base = proc_base();
	pid_t pid;
	int st;

	assert_non_null(base);
	assert_ptr_equal(proc_base(), base);
	if ((pid = fork()) == 0)
		_exit(proc_base() != NULL && proc_base() != base ? 0 : 3);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_ptr_equal(proc_base(), base);
}

struct in_loop {
	struct event *other;
	bool other_ran;
	bool other_ran_during;
	int status;
	char *out;
};

static void
in_loop_other_cb(evutil_socket_t fd, short what, void *arg)
{
	struct in_loop *l = arg;

	l->other_ran = true;
}

/* A callback of the process's loop runs a command to its end. */
static void
in_loop_cb(evutil_socket_t fd, short what, void *arg)
{
	char *argv[] = { "/bin/sh", "-c", "sleep 0.1; echo ran", NULL };
	struct in_loop *l = arg;
	struct proc_opts o;
	struct buf out;
	char *cause = NULL;

	event_active(l->other, EV_TIMEOUT, 0);
	opts_sh(&o, argv);
	buf_init(&out);
	assert_int_equal(proc_run(&o, &out, NULL, &l->status, &cause), 0);
	l->other_ran_during = l->other_ran;
	l->out = xstrdup(out.data != NULL ? out.data : "");
	buf_free(&out);
}

/*
 * proc_run makes no loop and runs none: called from a callback of the
 * process's loop it neither nests that loop (libevent would refuse) nor
 * runs its other events meanwhile.
 */
static void
test_run_inside_loop(void **state)
{
	struct event_base *base = proc_base();
	struct in_loop l;

	memset(&l, 0, sizeof l);
	l.status = -1;
	l.other = evtimer_new(base, in_loop_other_cb, &l);
	assert_int_equal(event_base_once(base, -1, EV_TIMEOUT, in_loop_cb, &l,
	    NULL), 0);
	while (!l.other_ran && event_base_loop(base, EVLOOP_ONCE) == 0)
		;
	assert_int_equal(l.status, 0);
	assert_string_equal(l.out, "ran\n");
	assert_false(l.other_ran_during);
	assert_true(l.other_ran);
	event_free(l.other);
	free(l.out);
}

static void
sync_inside_cb(evutil_socket_t fd, short what, void *arg)
{
	bool never = false;

	proc_sync_run(proc_base(), &never);
	_exit(0);       /* not reached: it stops the process instead */
}

/*
 * proc_sync_run, the blocking wrappers' wait on the process's loop,
 * stops the process (a bug report, exit 1) when called from inside that
 * loop, instead of hanging or nesting it.
 */
static void
test_sync_inside_loop_refused(void **state)
{
	pid_t pid;
	int st;

	if ((pid = fork()) == 0) {
		struct event_base *base = proc_base();

		event_base_once(base, -1, EV_TIMEOUT, sync_inside_cb, NULL,
		    NULL);
		event_base_dispatch(base);
		_exit(2);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 1);
}

/* The loop's longest gap between ticks of a 10 ms timer, while children start. */
struct gap {
	struct event_base *base;
	struct event *tick;
	int64_t last;
	int64_t longest;
	int done;
	int want;
	int status[4];
	char *cause[4];
};

static void
gap_tick(evutil_socket_t fd, short what, void *arg)
{
	struct gap *g = arg;
	struct timeval tv = { 0, 10000 };
	int64_t now = util_mono_us();

	if (now - g->last > g->longest)
		g->longest = now - g->last;
	g->last = now;
	evtimer_add(g->tick, &tv);
}

static void
gap_done(struct proc *p, void *arg)
{
	struct gap *g = arg;

	g->status[g->done] = proc_status(p);
	g->cause[g->done] = proc_cause(p) != NULL ? xstrdup(proc_cause(p)) :
	    NULL;
	if (++g->done == g->want)
		event_base_loopbreak(g->base);
}

/* Starts N of OPTS's command on a loop with a ticking timer; the longest gap, in ms. */
static int64_t
gap_run(struct gap *g, const struct proc_opts *o, int n)
{
	struct timeval tv = { 0, 10000 };
	struct proc *p[4];
	char *cause = NULL;
	int i;

	memset(g, 0, sizeof *g);
	g->base = event_base_new();
	g->tick = evtimer_new(g->base, gap_tick, g);
	g->want = n;
	g->last = util_mono_us();
	evtimer_add(g->tick, &tv);
	/* Each start is a turn of the loop, as the session's steps are. */
	for (i = 0; i < n; i++) {
		event_base_loop(g->base, EVLOOP_ONCE);
		p[i] = proc_start(g->base, o, gap_done, g, &cause);
		assert_non_null(p[i]);
	}
	while (g->done < n)
		event_base_loop(g->base, EVLOOP_ONCE);
	for (i = 0; i < n; i++)
		proc_free(p[i]);
	event_free(g->tick);
	event_base_free(g->base);
	return g->longest / 1000;
}

/*
 * The loop does not wait for a child's exec (posix_spawn's vfork held it
 * until then): children that take 1.5 s each to reach their exec leave
 * the loop's timer ticking (bound generous: a loaded machine).
 */
static void
test_exec_not_waited(void **state)
{
	char *argv[] = { "true", NULL };
	struct proc_opts o;
	struct gap g;
	int64_t ms;
	int i;

	opts_sh(&o, argv);
	proc_test_exec_delay_ms = 1500;
	ms = gap_run(&g, &o, 3);
	proc_test_exec_delay_ms = 0;
	for (i = 0; i < 3; i++) {
		assert_int_equal(g.status[i], 0);
		assert_null(g.cause[i]);
	}
	print_message("longest loop gap while 3 slow execs: %lld ms\n",
	    (long long)ms);
	assert_true(ms < 1000);
}

/*
 * An exec that fails after the start returned (its directory is gone)
 * is said by the runner: status 127, "cannot run X: why" in stderr and
 * from proc_cause. proc_run still says it at once.
 */
static void
test_exec_fails_later(void **state)
{
	char *argv[] = { "true", NULL };
	struct proc_opts o;
	struct gap g;
	char *cause = NULL;
	int st;

	opts_sh(&o, argv);
	o.dir = "/nonexistent/agentmux-no-such-dir";
	gap_run(&g, &o, 1);
	assert_int_equal(g.status[0], 127);
	assert_non_null(g.cause[0]);
	assert_string_equal(g.cause[0],
	    "cannot run true: No such file or directory");
	free(g.cause[0]);
	assert_int_equal(proc_run(&o, NULL, NULL, &st, &cause), -1);
	assert_string_equal(cause, "cannot run true: No such file or directory");
	free(cause);
}

/* An exec refused (not executable) reaches the done callback's stderr too. */
static void
test_exec_refused_stderr(void **state)
{
	char *dir = test_tmpdir("noexec"), *file;
	char *argv[] = { "x", NULL };
	struct proc_opts o;
	struct proc *p;
	char *cause = NULL;
	int done = 0;
	struct event_base *b = event_base_new();

	file = xprintf("%s/plain", dir);
	test_sh("printf 'not a program' > %s && chmod 0644 %s", file, file);
	opts_sh(&o, argv);
	o.exe = file;
	p = proc_start(b, &o, flag_done, &done, &cause);
	assert_non_null(p);
	while (done == 0)
		event_base_loop(b, EVLOOP_ONCE);
	assert_int_equal(done, 1127);
	assert_string_equal(proc_err(p)->data,
	    "cannot run x: Permission denied\n");
	proc_free(p);
	event_base_free(b);
	free(file);
	test_rmtree(dir);
	free(dir);
}

/* A page whose first read waits (userfaultfd) until its handler fills it, 1.5 s later. */
struct slowpage {
	int uffd;
	int stop[2];
	char *page;
	size_t size;
	pthread_t th;
	int faults;
};

static void *
slowpage_main(void *arg)
{
	struct slowpage *sp = arg;
	struct uffdio_copy cp;
	struct uffd_msg msg;
	struct pollfd pfd[2];
	char *src;

	src = xcalloc(1, sp->size);
	memcpy(src, "x", 2);
	pfd[0].fd = sp->uffd;
	pfd[0].events = POLLIN;
	pfd[1].fd = sp->stop[0];
	pfd[1].events = POLLIN;
	while (poll(pfd, 2, -1) > 0 && pfd[1].revents == 0) {
		if (read(sp->uffd, &msg, sizeof msg) != (ssize_t)sizeof msg ||
		    msg.event != UFFD_EVENT_PAGEFAULT)
			continue;
		sp->faults++;
		usleep(1500 * 1000);
		memset(&cp, 0, sizeof cp);
		cp.dst = (uintptr_t)sp->page;
		cp.src = (uintptr_t)src;
		cp.len = sp->size;
		ioctl(sp->uffd, UFFDIO_COPY, &cp);
	}
	free(src);
	return NULL;
}

static bool
slowpage_make(struct slowpage *sp)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg;

	memset(sp, 0, sizeof *sp);
	sp->size = (size_t)sysconf(_SC_PAGESIZE);
	if ((sp->uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK)) == -1)
		return false;
	if (ioctl(sp->uffd, UFFDIO_API, &api) == -1) {
		close(sp->uffd);
		return false;
	}
	sp->page = mmap(NULL, sp->size, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(sp->page != MAP_FAILED);
	memset(&reg, 0, sizeof reg);
	reg.range.start = (uintptr_t)sp->page;
	reg.range.len = sp->size;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	assert_int_equal(ioctl(sp->uffd, UFFDIO_REGISTER, &reg), 0);
	assert_int_equal(pipe(sp->stop), 0);
	assert_int_equal(pthread_create(&sp->th, NULL, slowpage_main, sp), 0);
	return true;
}

static void
slowpage_free(struct slowpage *sp)
{
	assert_int_equal(write(sp->stop[1], "", 1), 1);
	pthread_join(sp->th, NULL);
	close(sp->stop[0]);
	close(sp->stop[1]);
	close(sp->uffd);
	munmap(sp->page, sp->size);
}

/*
 * Without a test hook: an argument whose page the kernel's exec waits
 * 1.5 s for (a userfaultfd page, filled late). posix_spawn's child shared
 * this memory, so its vfork held the loop until then; a clone's child has
 * its own copy (the page reads as zeros) and nothing waits. ("-c" ahead
 * of it: the runner's log line skips it unread.)
 */
static void
test_exec_memory_not_shared(void **state)
{
	struct slowpage sp;
	struct proc_opts o;
	struct gap g;
	int64_t ms;

	if (!slowpage_make(&sp)) {
		test_skip("no userfaultfd here (not root, or refused): %s",
		    strerror(errno));
		return;
	}
	{
		char *argv[] = { "true", "-c", sp.page, NULL };

		opts_sh(&o, argv);
		ms = gap_run(&g, &o, 1);
	}
	slowpage_free(&sp);
	print_message("longest loop gap, exec's argument on a slow page: "
	    "%lld ms (%d fault(s) waited for)\n", (long long)ms, sp.faults);
	assert_int_equal(g.status[0], 0);
	assert_true(ms < 1000);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_output_and_status),
		cmocka_unit_test(test_term_does_not_wait),
		cmocka_unit_test(test_signal_status),
		cmocka_unit_test(test_timeout),
		cmocka_unit_test(test_missing_command),
		cmocka_unit_test(test_big_input),
		cmocka_unit_test(test_unread_input),
		cmocka_unit_test(test_concurrent_lines),
		cmocka_unit_test(test_move),
		cmocka_unit_test(test_free_kills),
		cmocka_unit_test(test_input_later),
		cmocka_unit_test(test_input_later_gone),
		cmocka_unit_test(test_path_lookup),
		cmocka_unit_test(test_path_lookup_threads),
		cmocka_unit_test(test_dir_and_umask),
		cmocka_unit_test(test_no_terminal),
		cmocka_unit_test(test_err_to_out_and_exe),
		cmocka_unit_test(test_empty_input),
		cmocka_unit_test(test_one_base),
		cmocka_unit_test(test_run_inside_loop),
		cmocka_unit_test(test_sync_inside_loop_refused),
		cmocka_unit_test(test_exec_not_waited),
		cmocka_unit_test(test_exec_fails_later),
		cmocka_unit_test(test_exec_refused_stderr),
		cmocka_unit_test(test_exec_memory_not_shared),
		/*
		 * Last: under ASan its 64 MiB leave this process big (their
		 * shadow stays), and the tests above need it small (cloned).
		 */
		cmocka_unit_test(test_nofile),
		cmocka_unit_test_teardown(test_no_clone3, no_clone3_teardown),
		cmocka_unit_test_teardown(test_data_max, data_max_teardown),
	};

	return test_run_group(tests, NULL, NULL);
}
