/* The jail library itself: exit statuses and signals, the handed-out listener, the pty, pipes, errors, projects. */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include <sys/syscall.h>
#include <sys/wait.h>

#include <linux/magic.h>
#include <net/if.h>

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "jail/jail.h"
#include "jail/jail-int.h"
#include "lib/testlib.h"

#define PORT 3128

static char *dir;
static char *proj;
static char *home;
static char *no_userns;

static char *test_env[] = {
	"PATH=/usr/local/bin:/usr/bin:/bin", "TERM=dumb", NULL,
};

static int
setup(void **state)
{
	if (jail_probe_userns(&no_userns) == 0)
		no_userns = NULL;
	dir = test_tmpdir("jail");
	proj = xprintf("%s/proj", dir);
	home = xprintf("%s/home", dir);
	mkdir(proj, 0755);
	mkdir(home, 0700);
	return 0;
}

static int
teardown(void **state)
{
	test_rmtree(dir);
	free(no_userns);
	free(dir);
	free(proj);
	free(home);
	return 0;
}

static void
conf_init(struct jail_conf *c, char **argv, bool pty)
{
	if (no_userns != NULL)
		test_skip("SKIP: no user namespaces here: %s", no_userns);
	memset(c, 0, sizeof *c);
	c->project = proj;
	c->argv = argv;
	c->envp = test_env;
	c->home = home;
	c->pty = pty;
	c->rows = 30;
	c->cols = 100;
	c->proxy_port = PORT;
	c->limits.tmp_size = 16 << 20;
	c->limits.open_files = 256;
	c->limits.file_size = 64 << 20;
}

/* Reads FD until EOF or EIO (a pty whose slaves are all closed). */
static char *
read_all(int fd)
{
	struct buf b;
	char chunk[4096];
	ssize_t n;

	buf_init(&b);
	while ((n = read(fd, chunk, sizeof chunk)) > 0)
		buf_add(&b, chunk, (size_t)n);
	buf_addc(&b, '\0');
	return buf_steal(&b);
}

static int
wait_jail(struct jail *j)
{
	int st, i;

	for (i = 0; i < 10000; i++) {
		if (jail_reap(j, &st) == 1)
			return st;
		usleep(1000);
	}
	fail_msg("the jail did not end");
	return -1;
}

/* Runs ARGV in pipe mode with no input; returns the status, *OUT its stdout. */
static int
run(char **argv, char **out)
{
	struct jail_conf c;
	struct jail *j;
	char *cause = NULL;
	int st;

	conf_init(&c, argv, false);
	j = jail_start(&c, &cause);
	if (j == NULL)
		fail_msg("jail_start: %s", cause);
	jail_close_stdin(j);
	*out = read_all(jail_stdout_fd(j));
	st = wait_jail(j);
	jail_free(j);
	return st;
}

static void
test_exit_status(void **state)
{
	char *a1[] = { "true", NULL }, *a2[] = { "sh", "-c", "exit 7", NULL };
	char *a3[] = { "sh", "-c", "kill -KILL $$", NULL };
	char *out;

	assert_int_equal(run(a1, &out), 0);
	free(out);
	assert_int_equal(run(a2, &out), 7);
	free(out);
	assert_int_equal(run(a3, &out), 128 + SIGKILL);
	free(out);
}

static void
test_signal_forwarded(void **state)
{
	char *argv[] = { "sh", "-c", "echo up; exec sleep 30", NULL };
	struct jail_conf c;
	struct jail *j;
	char *cause = NULL, buf[16];

	conf_init(&c, argv, false);
	assert_non_null(j = jail_start(&c, &cause));
	/* Once it runs, SIGTERM to the jail reaches the command through pid 1. */
	assert_int_equal(read(jail_stdout_fd(j), buf, 3), 3);
	jail_signal(j, SIGTERM);
	assert_int_equal(wait_jail(j), 128 + SIGTERM);
	jail_free(j);
}

static void
test_listener(void **state)
{
	char *bash[] = { "bash", "-c",
	    "echo hello-from-inside > /dev/tcp/127.0.0.1/3128", NULL };
	struct jail_conf c;
	struct jail *j;
	struct pollfd pfd;
	char *cause = NULL, buf[64];
	int lfd, cfd;
	ssize_t n;

	conf_init(&c, bash, false);
	assert_non_null(j = jail_start(&c, &cause));
	lfd = jail_take_listen_fd(j);
	assert_true(lfd >= 0);
	assert_int_equal(jail_take_listen_fd(j), -1);
	pfd.fd = lfd;
	pfd.events = POLLIN;
	assert_int_equal(poll(&pfd, 1, 10000), 1);
	assert_true((cfd = accept(lfd, NULL, NULL)) >= 0);
	n = read(cfd, buf, sizeof buf - 1);
	assert_true(n > 0);
	buf[n] = '\0';
	assert_string_equal(buf, "hello-from-inside\n");
	close(cfd);
	close(lfd);
	assert_int_equal(wait_jail(j), 0);
	jail_free(j);
}

static void
test_pty(void **state)
{
	char *argv[] = { "sh", "-c", "tty; stty size; test -t 0 && echo tty0",
	    NULL };
	struct jail_conf c;
	struct jail *j;
	char *cause = NULL, *out;

	conf_init(&c, argv, true);
	assert_non_null(j = jail_start(&c, &cause));
	assert_true(jail_pty_fd(j) >= 0);
	assert_int_equal(jail_stdout_fd(j), -1);
	out = read_all(jail_pty_fd(j));
	/* ttyname works: the pty comes from the jail's own devpts. */
	assert_non_null(strstr(out, "/dev/pts/0"));
	assert_non_null(strstr(out, "30 100"));
	assert_non_null(strstr(out, "tty0"));
	free(out);
	assert_int_equal(wait_jail(j), 0);
	jail_free(j);
}

static void
test_resize(void **state)
{
	char *argv[] = { "sh", "-c", "read x; stty size", NULL };
	struct jail_conf c;
	struct jail *j;
	char *cause = NULL, *out;

	conf_init(&c, argv, true);
	assert_non_null(j = jail_start(&c, &cause));
	assert_int_equal(jail_resize(j, 40, 120), 0);
	assert_int_equal(write(jail_pty_fd(j), "go\n", 3), 3);
	out = read_all(jail_pty_fd(j));
	assert_non_null(strstr(out, "40 120"));
	free(out);
	assert_int_equal(wait_jail(j), 0);
	jail_free(j);
}

static void
test_pipes(void **state)
{
	char *argv[] = { "sh", "-c", "cat; echo to-stderr >&2", NULL };
	struct jail_conf c;
	struct jail *j;
	char *cause = NULL, *out, *err;

	conf_init(&c, argv, false);
	assert_non_null(j = jail_start(&c, &cause));
	assert_int_equal(write(jail_stdin_fd(j), "piped\n", 6), 6);
	jail_close_stdin(j);
	out = read_all(jail_stdout_fd(j));
	err = read_all(jail_stderr_fd(j));
	assert_string_equal(out, "piped\n");
	assert_string_equal(err, "to-stderr\n");
	free(out);
	free(err);
	assert_int_equal(wait_jail(j), 0);
	jail_free(j);
}

/* A held jail is made but does not run the command until jail_go. */
static void
test_hold(void **state)
{
	char *argv[] = { "sh", "-c", "echo ran > ran.txt", NULL };
	struct jail_conf c;
	struct jail *j;
	char *cause = NULL, *mark = xprintf("%s/ran.txt", proj);
	struct stat st;
	int hfd;

	conf_init(&c, argv, false);
	c.hold = true;
	assert_non_null(j = jail_start(&c, &cause));
	assert_true(jail_stdout_fd(j) >= 0);
	/* Its set-up hands out HOME before the command may run. */
	assert_int_equal(jail_wait_setup(j, &cause), 0);
	hfd = jail_take_home_fd(j);
	assert_true(hfd >= 0);
	assert_int_equal(fstat(hfd, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	close(hfd);
	assert_int_equal(jail_wait_setup(j, &cause), 0);
	usleep(100000);
	assert_int_equal(access(mark, F_OK), -1);
	assert_int_equal(jail_go(j, &cause), 0);
	jail_close_stdin(j);
	assert_int_equal(wait_jail(j), 0);
	assert_int_equal(access(mark, F_OK), 0);
	/* A second go has nothing left to do. */
	assert_int_equal(jail_go(j, &cause), 0);
	jail_free(j);
	unlink(mark);
	free(mark);
}

/* A held jail's set-up errors come out of jail_go, as jail_start's would. */
static void
test_hold_errors(void **state)
{
	char *argv[] = { "no-such-command-anywhere", NULL };
	struct jail_conf c;
	struct jail *j;
	char *cause = NULL;

	conf_init(&c, argv, false);
	c.hold = true;
	assert_non_null(j = jail_start(&c, &cause));
	assert_int_equal(jail_go(j, &cause), -1);
	assert_non_null(strstr(cause, "no-such-command-anywhere: command not "
	    "found in the jail"));
	free(cause);
	jail_free(j);
}

static char *
cgroup_line(pid_t pid, const char *controller)
{
	char *path = xprintf("/proc/%ld/cgroup", (long)pid), *text, *line;
	char *found = NULL;

	text = test_read_file(path);
	free(path);
	for (line = strtok(text, "\n"); line != NULL && found == NULL;
	    line = strtok(NULL, "\n")) {
		if (strstr(line, controller) != NULL)
			found = xstrdup(line);
	}
	free(text);
	return found != NULL ? found : xstrdup("");
}

/*
 * As root with v1 cgroups: warming the attach lock up leaves agentmux where
 * it was, and a held jail is in its cgroups (made by the join thread) once
 * jail_go returns.
 */
static void
test_hold_cgroups(void **state)
{
	char *argv[] = { "sleep", "5", NULL };
	char *before, *after, *jailed, *cause = NULL;
	struct jail_conf c;
	struct jail *j;

	if (getuid() != 0 || access("/sys/fs/cgroup/pids", W_OK) != 0)
		test_skip("SKIP: needs root and a writable v1 pids hierarchy");
	conf_init(&c, argv, false);
	c.hold = true;
	c.limits.pids = 64;
	before = cgroup_line(getpid(), ":pids:");
	jail_prewarm();
	assert_non_null(j = jail_start(&c, &cause));
	assert_int_equal(jail_go(j, &cause), 0);
	jailed = cgroup_line(jail_pid(j), ":pids:");
	assert_non_null(strstr(jailed, "/agentmux-"));
	assert_non_null(strstr(jail_summary(j), "\"pids\":{\"value\":64,"
	    "\"by\":\"cgroup v1\"}"));
	usleep(50000);
	after = cgroup_line(getpid(), ":pids:");
	assert_string_equal(before, after);
	jail_kill(j);
	wait_jail(j);
	jail_free(j);
	free(before);
	free(after);
	free(jailed);
}

static void
test_errors(void **state)
{
	char *argv[] = { "no-such-command-anywhere", NULL };
	char *argv2[] = { "true", NULL };
	struct jail_conf c;
	char *cause = NULL;

	conf_init(&c, argv, false);
	assert_null(jail_start(&c, &cause));
	assert_non_null(strstr(cause, "no-such-command-anywhere: command not "
	    "found in the jail"));
	assert_null(strchr(cause, '\n'));
	free(cause);
	cause = NULL;
	conf_init(&c, argv2, false);
	c.cwd = "/no/such/dir";
	assert_null(jail_start(&c, &cause));
	assert_non_null(strstr(cause, "cannot enter /no/such/dir in the jail: "
	    "No such file or directory"));
	free(cause);
}

/*
 * The sealed dir: beneath it (a read-only bind with a writable one in
 * it) files and dirs can be made, links, FIFOs and sockets cannot, in a
 * dir made there too; elsewhere they still can. A writable dir above it
 * (HOME) is refused before anything runs.
 */
static void
test_sealed(void **state)
{
	char *argv[] = { "/bin/sh", "-c",
	    "w=/.sealed/w; ln -s /dev/zero $w/l 2>/dev/null && echo MADE-LINK; "
	    "mkfifo $w/f 2>/dev/null && echo FIFO; "
	    "mkdir $w/d && ln -s x $w/d/l 2>/dev/null && echo DEEP; "
	    "python3 -c 'import socket, sys; "
	    "socket.socket(socket.AF_UNIX).bind(sys.argv[1])' $w/s "
	    "2>/dev/null && echo SOCK; "
	    "echo x >$w/d/file && echo FILE; "
	    "ln -s /dev/zero /tmp/l && echo TMPLINK", NULL };
	char *src = xprintf("%s/sealed", dir), *w = xprintf("%s/w", src);
	struct jail_bind binds[2] = {
		{ .path = "/.sealed", .src = src, .rw = false },
		{ .path = "/.sealed/w", .src = w, .rw = true },
	};
	struct jail_conf c;
	struct jail *j;
	struct stat st;
	char *cause = NULL, *out, *under;
	long abi;

	assert_int_equal(path_mkdir_p(w, 0755), 0);
	conf_init(&c, argv, false);
	c.binds = binds;
	c.nbinds = nitems(binds);
	c.sealed = "/.sealed";
	assert_non_null(j = jail_start(&c, &cause));
	jail_close_stdin(j);
	out = read_all(jail_stdout_fd(j));
	assert_int_equal(wait_jail(j), 0);
	jail_free(j);
	assert_non_null(strstr(out, "FILE"));
	assert_non_null(strstr(out, "TMPLINK"));
	abi = syscall(SYS_landlock_create_ruleset, NULL, 0, 1U);
	if (abi >= 1) {
		assert_null(strstr(out, "MADE-LINK"));
		assert_null(strstr(out, "FIFO"));
		assert_null(strstr(out, "DEEP"));
		assert_null(strstr(out, "SOCK"));
		under = xprintf("%s/l", w);
		assert_int_equal(lstat(under, &st), -1);
		free(under);
	}
	free(out);

	/* HOME's rule would reach it. */
	under = xprintf("%s/x", home);
	conf_init(&c, argv, false);
	c.sealed = under;
	assert_null(jail_start(&c, &cause));
	if (strstr(cause, "cannot keep links out of") == NULL ||
	    strstr(cause, home) == NULL)
		fail_msg("the jail with a sealed dir in HOME: %s", cause);
	free(cause);
	free(under);
	free(src);
	free(w);
}

static void
test_summary(void **state)
{
	char *argv[] = { "true", NULL };
	struct jail_conf c;
	struct jail *j;
	char *cause = NULL;

	conf_init(&c, argv, false);
	assert_non_null(j = jail_start(&c, &cause));
	assert_non_null(strstr(jail_summary(j), "\"namespaces\":[\"user\","));
	assert_non_null(strstr(jail_summary(j), "\"landlock\":{\"abi\":"));
	assert_non_null(strstr(jail_summary(j), "\"file_size\":{\"value\":"
	    "67108864,\"by\":\"rlimit\"}"));
	wait_jail(j);
	jail_free(j);
}

/* The sum of the sizes of the files under the project named in NAMES. */
static long long
proj_bytes(const char *const *names)
{
	struct stat st;
	long long sum = 0;
	char *path;

	for (; *names != NULL; names++) {
		path = xprintf("%s/%s", proj, *names);
		if (stat(path, &st) == 0)
			sum += (long long)st.st_size;
		free(path);
	}
	return sum;
}

/* Waits (bounded) until the files grow: the jail runs. */
static void
wait_growing(const char *const *names)
{
	long long before = proj_bytes(names);
	int i;

	for (i = 0; i < 2000 && proj_bytes(names) == before; i++)
		usleep(5000);
	if (proj_bytes(names) == before)
		fail_msg("the jail's writers do not write");
}

static enum jail_freeze
freeze_wait(struct jail *j)
{
	enum jail_freeze st = JAIL_FREEZING;
	char *cause = NULL;
	int i;

	for (i = 0; i < 4000; i++) {
		if (jail_freeze_poll(j, &st, &cause) == -1)
			fail_msg("the freeze failed: %s", cause);
		if (st == JAIL_FROZEN)
			break;
		usleep(2500);
	}
	return st;
}

/* The host pid's parent, from its stat; -1 if gone. */
static pid_t
host_ppid(pid_t pid, char *state)
{
	char *path = xprintf("/proc/%ld/stat", (long)pid), *text, *s;
	long ppid = -1;

	text = test_read_file(path);
	free(path);
	if (text != NULL && (s = strrchr(text, ')')) != NULL &&
	    sscanf(s + 1, " %c %ld", state, &ppid) != 2)
		ppid = -1;
	free(text);
	return (pid_t)ppid;
}

static bool
below(pid_t pid, pid_t top)
{
	char state;
	int i;

	for (i = 0; i < 64 && pid > 1; i++) {
		if ((pid = host_ppid(pid, &state)) == top)
			return true;
	}
	return false;
}

/*
 * Every task of every process under the jail's init is stopped (T) or
 * frozen (a cgroup-frozen task shows D); returns how many processes.
 */
static int
all_stopped(pid_t init)
{
	struct dirent *de, *te;
	char *tdir, *path, *text, *s;
	int n = 0;
	DIR *d, *td;

	assert_non_null(d = opendir("/proc"));
	while ((de = readdir(d)) != NULL) {
		pid_t pid = (pid_t)atol(de->d_name);

		if (pid <= 0 || !below(pid, init))
			continue;
		n++;
		tdir = xprintf("/proc/%ld/task", (long)pid);
		if ((td = opendir(tdir)) == NULL) {
			free(tdir);
			continue;
		}
		while ((te = readdir(td)) != NULL) {
			if (te->d_name[0] == '.')
				continue;
			path = xprintf("%s/%s/stat", tdir, te->d_name);
			text = test_read_file(path);
			if (text != NULL && (s = strrchr(text, ')')) != NULL &&
			    strchr("TtDZX", s[2]) == NULL)
				fail_msg("jailed process %ld runs while frozen "
				    "(state %c)", (long)pid, s[2]);
			free(text);
			free(path);
		}
		closedir(td);
		free(tdir);
	}
	closedir(d);
	return n;
}

/*
 * A frozen jail writes nothing and every process in it is stopped, while
 * its processes were forking as fast as they could; thawed, it runs again;
 * over and over. The cgroup freezer as root where there is one, else the
 * init's SIGSTOP (tests/jail/disk.sh runs both paths through agentmux).
 */
static void
test_freeze(void **state)
{
	static const char *const files[] = { "beat", "beat2", NULL };
	char *argv[] = { "sh", "-c", "while :; do echo x >>beat; done & "
	    "while :; do sh -c 'echo y >>beat2' & sleep 0.001; done", NULL };
	char *cause = NULL;
	struct jail_conf c;
	struct jail *j;
	long long held;
	int round, n;

	conf_init(&c, argv, false);
	c.cwd = proj;
	assert_non_null(j = jail_start(&c, &cause));
	jail_close_stdin(j);
	for (round = 0; round < 5; round++) {
		wait_growing(files);
		if (jail_freeze(j, &cause) == -1)
			fail_msg("jail_freeze: %s", cause);
		assert_int_equal(freeze_wait(j), JAIL_FROZEN);
		held = proj_bytes(files);
		n = all_stopped(jail_pid(j));
		assert_true(n >= 2);
		usleep(300000);
		assert_int_equal(proj_bytes(files), held);
		assert_int_equal(all_stopped(jail_pid(j)), n);
		if (jail_thaw(j, &cause) == -1)
			fail_msg("jail_thaw: %s", cause);
	}
	wait_growing(files);
	/* Frozen, it still dies when killed. */
	assert_int_equal(jail_freeze(j, &cause), 0);
	assert_int_equal(freeze_wait(j), JAIL_FROZEN);
	jail_kill(j);
	assert_int_equal(wait_jail(j), 128 + SIGKILL);
	jail_free(j);
	test_sh_ok("rm -f %s/beat %s/beat2", proj, proj);
}

static bool
on_tmpfs(const char *path)
{
	struct statfs sf;

	return statfs(path, &sf) == 0 && sf.f_type == TMPFS_MAGIC;
}

static struct jail_written
count(struct jail *j)
{
	struct jail_written w;
	char *cause = NULL;
	int i;

	if (jail_count(j, &cause) == -1)
		fail_msg("jail_count: %s", cause);
	for (i = 0; i < 2000; i++) {
		if (jail_count_poll(j, &w) == 1)
			return w;
		usleep(5000);
	}
	fail_msg("the jail's init did not answer the count");
	return w;
}

/*
 * The count takes in what every process wrote: the command, a child that
 * ended (reaped by its parent), an orphan reaped by the init, and a
 * process that made itself undumpable (exec of an unreadable file).
 */
static void
test_count(void **state)
{
	/* "ready" once the orphan's megabyte is written too (it races on). */
	char *argv[] = { "sh", "-c", "head -c 3000000 /dev/zero >a; "
	    "sh -c 'head -c 1000000 /dev/zero >b & exit 0'; "
	    "cp /bin/sh xsh && chmod 111 xsh && "
	    "./xsh -c 'head -c 2000000 /dev/zero >c; "
	    "while [ \"$(wc -c <b)\" -lt 1000000 ]; do sleep 0.05; done; "
	    "echo ready; sleep 60'",
	    NULL };
	struct jail_written w;
	char *cause = NULL, *line;
	struct jail_conf c;
	struct jail *j;
	char buf[16];
	ssize_t n;

	if (on_tmpfs(proj))
		test_skip("SKIP: %s is on tmpfs, which counts no writes", proj);
	conf_init(&c, argv, false);
	c.cwd = proj;
	assert_non_null(j = jail_start(&c, &cause));
	jail_close_stdin(j);
	n = read(jail_stdout_fd(j), buf, sizeof buf - 1);
	assert_true(n > 0);
	buf[n] = '\0';
	assert_string_equal(buf, "ready\n");
	line = test_sh_out("ls -l %s/xsh", proj);
	assert_non_null(strstr(line, "---x--x--x"));
	free(line);
	w = count(j);
	/*
	 * An ordinary user cannot read the counters of an undumpable process
	 * (root owns its /proc files): it is reported, and counted once it
	 * ends. Root reads it through the init's CAP_SYS_PTRACE.
	 */
	if (w.bytes < (getuid() == 0 ? 6000000ULL : 4000000ULL))
		fail_msg("counted %llu bytes written by %u processes (%u "
		    "unread), not all that was written",
		    (unsigned long long)w.bytes, w.procs, w.unread);
	assert_int_equal(w.unread, getuid() == 0 ? 0 : 1);
	assert_true(w.procs >= 3);
	jail_kill(j);
	wait_jail(j);
	jail_free(j);
	test_sh_ok("rm -f %s/a %s/b %s/c %s/xsh", proj, proj, proj, proj);
}

/*
 * A child left unreaped a while (its parent, sh, exec'd sleep, which never
 * reaps): on a loaded machine a parent slow to reap looks the same, so the
 * count that first finds it unreaped does not call it unread; the next
 * count that finds the same one still there does. Root reads a zombie's
 * counters (CAP_SYS_PTRACE): it is never unread.
 */
static void
test_count_zombie(void **state)
{
	char *argv[] = { "sh", "-c", "(echo ready) & exec sleep 60", NULL };
	struct jail_written w;
	char *cause = NULL;
	struct jail_conf c;
	struct jail *j;
	char buf[16];
	ssize_t n;

	conf_init(&c, argv, false);
	c.cwd = proj;
	assert_non_null(j = jail_start(&c, &cause));
	jail_close_stdin(j);
	n = read(jail_stdout_fd(j), buf, sizeof buf - 1);
	assert_true(n > 0);
	buf[n] = '\0';
	assert_string_equal(buf, "ready\n");
	/* The child that said it has ended by now. */
	usleep(300000);
	w = count(j);
	assert_int_equal(w.unread, 0);
	w = count(j);
	assert_int_equal(w.unread, getuid() == 0 ? 0 : 1);
	w = count(j);
	assert_int_equal(w.unread, getuid() == 0 ? 0 : 1);
	jail_kill(j);
	wait_jail(j);
	jail_free(j);
}

static void
expect_refused(const char *d, const char *needle)
{
	char *real = NULL, *cause = NULL;

	assert_int_equal(jail_project(d, &real, &cause), -1);
	assert_null(real);
	if (strstr(cause, needle) == NULL)
		fail_msg("'%s' lacks '%s'", cause, needle);
	free(cause);
}

static void
test_project(void **state)
{
	char *real = NULL, *cause = NULL, *sub, *other, *saved;

	saved = getenv("HOME") != NULL ? xstrdup(getenv("HOME")) : NULL;
	setenv("HOME", home, 1);
	expect_refused("/", "cannot jail /: the whole filesystem");
	expect_refused(home, "it is your home directory; run agentmux from "
	    "a project directory or pass -C DIR");
	expect_refused("/usr", "it is a system directory");
	expect_refused("/no/such/dir", "No such file or directory; pass -C");
	other = xprintf("%s/other", dir);
	mkdir(other, 0755);
	assert_int_equal(chown(other, getuid() + 1, getgid()), getuid() == 0 ?
	    0 : -1);
	if (getuid() == 0)
		expect_refused(other, "not to you");
	/* A subdirectory of a git repository: the repository is the project. */
	sub = xprintf("%s/a/b", proj);
	assert_int_equal(path_mkdir_p(sub, 0755), 0);
	assert_int_equal(test_sh("git init -q %s", proj), 0);
	assert_int_equal(jail_project(sub, &real, &cause), 0);
	assert_string_equal(real, proj);
	free(real);
	/* Outside git: the directory itself. */
	assert_int_equal(jail_project(other, &real, &cause), getuid() == 0 ?
	    -1 : 0);
	free(real);
	free(cause);
	free(sub);
	free(other);
	if (saved != NULL)
		setenv("HOME", saved, 1);
	free(saved);
}

/*
 * Runs jail_net_check in a child, after unshare(FLAGS) when not 0: the
 * message it sent on failure (without the 'E'), or NULL if it passed.
 */
static char *
net_check(int flags, bool forget_host)
{
	struct jail_plan p;
	char buf[1024];
	int sv[2], status;
	ssize_t n;
	pid_t pid;

	memset(&p, 0, sizeof p);
	jail_net_plan(&p);
	if (forget_host)
		p.host_netns_ino = 0;
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	p.sock = sv[1];
	if ((pid = fork()) == 0) {
		if (flags != 0 && unshare(flags) == -1)
			_exit(3);
		jail_net_check(&p);
		_exit(0);
	}
	close(sv[1]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 0) {
		close(sv[0]);
		return NULL;
	}
	assert_int_equal(WEXITSTATUS(status), 127);
	n = recv(sv[0], buf, sizeof buf - 1, MSG_DONTWAIT);
	close(sv[0]);
	assert_true(n > 1 && buf[0] == 'E');
	buf[n] = '\0';
	return xstrdup(buf + 1);
}

/* The jail refuses to start in agentmux's own network namespace, or one with more than lo. */
static void
test_net_check(void **state)
{
	struct if_nameindex *ifs, *i;
	char *msg, *other = NULL;

	if (no_userns != NULL)
		test_skip("SKIP: no user namespaces here: %s", no_userns);
	/* A fresh namespace holds lo alone: it passes. */
	assert_null(net_check(CLONE_NEWUSER | CLONE_NEWNET, false));
	/* agentmux's own namespace is refused, whatever it holds. */
	assert_non_null(msg = net_check(0, false));
	assert_non_null(strstr(msg, "shares agentmux's network namespace"));
	free(msg);
	/* Not knowing agentmux's, the interfaces still give it away. */
	assert_non_null(ifs = if_nameindex());
	for (i = ifs; i->if_index != 0 && other == NULL; i++) {
		if (strcmp(i->if_name, "lo") != 0)
			other = xstrdup(i->if_name);
	}
	if_freenameindex(ifs);
	msg = net_check(0, true);
	if (other == NULL) {
		assert_null(msg);
		return;
	}
	assert_non_null(msg);
	assert_non_null(strstr(msg, "an interface besides lo"));
	assert_non_null(strstr(msg, other));
	free(msg);
	free(other);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exit_status),
		cmocka_unit_test(test_net_check),
		cmocka_unit_test(test_signal_forwarded),
		cmocka_unit_test(test_listener),
		cmocka_unit_test(test_pty),
		cmocka_unit_test(test_resize),
		cmocka_unit_test(test_pipes),
		cmocka_unit_test(test_hold),
		cmocka_unit_test(test_hold_errors),
		cmocka_unit_test(test_hold_cgroups),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_sealed),
		cmocka_unit_test(test_summary),
		cmocka_unit_test(test_freeze),
		cmocka_unit_test(test_count),
		cmocka_unit_test(test_count_zombie),
		cmocka_unit_test(test_project),
	};

	return test_run_group(tests, setup, teardown);
}
