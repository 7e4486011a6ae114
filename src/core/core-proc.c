/*
 * The child-process runner: a child whose pipes and exit the event loop
 * watches, reaped by its pidfd. The child is a copy-on-write clone (clone3
 * with CLONE_PIDFD, no CLONE_VM or CLONE_VFORK), so the loop never waits
 * for it to exec; whether its exec failed comes back through a CLOEXEC
 * pipe, read once the child has ended (or at once by proc_run, which
 * blocks anyway).
 */
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <poll.h>

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"

extern char **environ;

#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif

/* How often to look for the exit when pidfds are unavailable. */
#define PROC_POLL_US 10000

struct proc {
	struct event_base *base;
	pid_t pid;
	int pidfd;
	int fds[3];               /* our ends: stdin (socket), stdout, stderr */
	struct event *ev[3];
	struct event *exit_ev;    /* pidfd readable, or the polling timer */
	struct event *timeout_ev; /* its time is up: it is killed */
	struct buf in;
	size_t inoff;
	bool in_held;             /* more input comes (proc_input) */
	struct buf out;
	struct buf err;
	size_t lineoff;           /* stdout bytes already passed to line() */
	void (*line)(void *, const char *, size_t);
	void (*chunk)(void *, const char *, size_t);
	void *chunk_arg;
	proc_cb done;
	void *arg;
	int status;               /* -1 until reaped */
	char *what;               /* the command's first words, for the debug log */
	int64_t started;          /* util_mono_us() at spawn */
	int timeout;              /* seconds it may take, 0: no limit */
	size_t err_max;           /* stderr kept up to so many bytes, 0: all */
	int execfd;               /* says the exec's errno if it failed; -1 */
	bool err_to_out;          /* the exec failure is said on stdout */
	char *argv0;              /* for "cannot run ARGV0" */
	char *cause;              /* "cannot run X: why", if its exec failed */
};

/* Test hook: the clone's child sleeps so long (ms) before its exec. */
int proc_test_exec_delay_ms;
/* RLIMIT_NOFILE as this process started, if proc_raise_nofile raised it: its children's. */
static struct rlimit proc_nofile_was;
static bool proc_nofile_raised;
#define PROC_NOFILE_MAX 65536

/* Test hook: children proc_vfork started. */
unsigned proc_test_vforked;
/* Bench hook: proc_small is not asked (bench/spawn-bench.c). */
bool proc_test_clone_always;
/* Test hook: clone3 is taken to be refused. */
bool proc_test_no_clone3;

static void proc_arm(struct proc *);
static void proc_exec_result(struct proc *);

int
proc_status(struct proc *p)
{
	return p->status;
}

struct buf *
proc_out(struct proc *p)
{
	return &p->out;
}

struct buf *
proc_err(struct proc *p)
{
	return &p->err;
}

static void
proc_close(struct proc *p, int i)
{
	if (p->ev[i] != NULL) {
		event_free(p->ev[i]);
		p->ev[i] = NULL;
	}
	if (p->fds[i] != -1) {
		close(p->fds[i]);
		p->fds[i] = -1;
	}
}

/* Hands complete stdout lines to the line callback. */
static void
proc_lines(struct proc *p)
{
	char *nl;

	if (p->line == NULL)
		return;
	while (p->lineoff < p->out.len &&
	    (nl = memchr(p->out.data + p->lineoff, '\n',
	    p->out.len - p->lineoff)) != NULL) {
		p->line(p->arg, p->out.data + p->lineoff,
		    (size_t)(nl - (p->out.data + p->lineoff)));
		p->lineoff = (size_t)(nl - p->out.data) + 1;
	}
}

/* Reads what is there; returns false at EOF or on error. */
static bool
proc_read(struct proc *p, int i)
{
	char chunk[65536];
	ssize_t n;

	for (;;) {
		n = read(p->fds[i], chunk, sizeof chunk);
		if (n > 0 && i == 1 && p->chunk != NULL) {
			p->chunk(p->chunk_arg, chunk, (size_t)n);
			continue;
		}
		if (n > 0 && i == 2 && p->err_max > 0) {
			if (p->err.len < p->err_max)
				buf_add(&p->err, chunk, p->err_max - p->err.len <
				    (size_t)n ? p->err_max - p->err.len : (size_t)n);
			continue;
		}
		if (n > 0) {
			buf_add(i == 1 ? &p->out : &p->err, chunk, (size_t)n);
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		if (i == 1)
			proc_lines(p);
		return n == -1 && errno == EAGAIN;
	}
}

/* Writes input as the child takes it; MSG_NOSIGNAL spares us SIGPIPE. */
static void
proc_write(struct proc *p)
{
	ssize_t n;

	while (p->inoff < p->in.len) {
		n = send(p->fds[0], p->in.data + p->inoff, p->in.len - p->inoff,
		    MSG_NOSIGNAL);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN)
			return;
		if (n == -1) {
			p->in_held = false;
			break;
		}
		p->inoff += (size_t)n;
	}
	/* Written so far: stop watching until there is more. */
	if (p->in_held) {
		if (p->ev[0] != NULL)
			event_del(p->ev[0]);
		return;
	}
	proc_close(p, 0);
}

void
proc_input(struct proc *p, const void *data, size_t len)
{
	p->in_held = false;
	if (p->fds[0] == -1)
		return;
	buf_add(&p->in, data, len);
	if (p->ev[0] != NULL)
		event_add(p->ev[0], NULL);
}

/*
 * Reads from the exec pipe whether the child's exec failed (it has ended
 * or exec'd, so this does not wait): if so its status is 127, and why is
 * said in its stderr (stdout with err_to_out) and by proc_cause.
 */
static void
proc_exec_result(struct proc *p)
{
	ssize_t n;
	int e = 0;

	if (p->execfd == -1)
		return;
	do
		n = read(p->execfd, &e, sizeof e);
	while (n == -1 && errno == EINTR);
	close(p->execfd);
	p->execfd = -1;
	if (n != (ssize_t)sizeof e)
		return;
	p->cause = xprintf("cannot run %s: %s", p->argv0, strerror(e));
	p->status = 127;
	buf_printf(p->err_to_out ? &p->out : &p->err, "%s\n", p->cause);
}

const char *
proc_cause(struct proc *p)
{
	return p->cause;
}

/*
 * The child has exited, so everything it wrote is in the pipes: drain
 * them and report. (Output still open after that would belong to a
 * grandchild, which is not ours to wait for.)
 */
static void
proc_finish(struct proc *p)
{
	int i;
	int64_t t0;
	char *what;

	proc_exec_result(p);
	proc_close(p, 0);
	for (i = 1; i < 3; i++) {
		if (p->fds[i] != -1)
			proc_read(p, i);
		proc_close(p, i);
	}
	if (p->out.len > p->lineoff && p->line != NULL) {
		p->line(p->arg, p->out.data + p->lineoff, p->out.len - p->lineoff);
		p->lineoff = p->out.len;
	}
	if (p->exit_ev != NULL) {
		event_free(p->exit_ev);
		p->exit_ev = NULL;
	}
	if (p->timeout_ev != NULL) {
		event_free(p->timeout_ev);
		p->timeout_ev = NULL;
	}
	log_debug("%s: exit %d after %lld ms", p->what, p->status,
	    (long long)(util_mono_us() - p->started) / 1000);
	t0 = loop_trace_begin();
	what = t0 != 0 ? xstrdup(p->what) : NULL;   /* DONE may free P */
	p->done(p, p->arg);
	loop_trace_end(t0, "child done: %s", what);
	free(what);
}

static void
proc_io_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proc *p = arg;
	int i = fd == p->fds[0] ? 0 : fd == p->fds[1] ? 1 : 2;
	int64_t t0 = loop_trace_begin();
	char *name = t0 != 0 ? xstrdup(p->what) : NULL;  /* a line callback may free P */

	if (i == 0)
		proc_write(p);
	else if (!proc_read(p, i))
		proc_close(p, i);
	loop_trace_end(t0, "child output: %s", name);
	free(name);
}

static bool
proc_reap(struct proc *p)
{
	int st;
	pid_t r;

	do
		r = waitpid(p->pid, &st, WNOHANG);
	while (r == -1 && errno == EINTR);
	if (r == 0)
		return false;
	if (r == -1) /* someone else reaped it: a bug elsewhere, but not a hang */
		p->status = 255;
	else
		p->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	p->pid = -1;
	return true;
}

static void
proc_exit_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proc *p = arg;
	struct timeval tv = { 0, PROC_POLL_US };

	if (proc_reap(p)) {
		proc_finish(p);
		return;
	}
	if (p->pidfd == -1)
		event_add(p->exit_ev, &tv);
}

/* A command took longer than it may (it may wait on something planted): it goes. */
static void
proc_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proc *p = arg;

	log_debug("%s: killed after its time ran out", p->what);
	if (p->pid > 0)
		kill(p->pid, SIGKILL);
}

/* (Re)creates the watchers on p->base (none without one: proc_run). */
static void
proc_arm(struct proc *p)
{
	struct timeval tv = { 0, PROC_POLL_US };
	int i;

	if (p->base == NULL)
		return;
	for (i = 0; i < 3; i++) {
		if (p->fds[i] == -1)
			continue;
		if (p->ev[i] != NULL)
			event_free(p->ev[i]);
		p->ev[i] = event_new(p->base, p->fds[i], (i == 0 ? EV_WRITE :
		    EV_READ) | EV_PERSIST, proc_io_cb, p);
		if (i != 0 || !p->in_held || p->inoff < p->in.len)
			event_add(p->ev[i], NULL);
	}
	if (p->timeout_ev != NULL)
		event_free(p->timeout_ev);
	p->timeout_ev = NULL;
	if (p->timeout > 0 && p->pid > 0) {
		struct timeval left = { p->timeout, 0 };
		int64_t spent = (util_mono_us() - p->started) / 1000000;

		left.tv_sec = spent < p->timeout ? p->timeout - spent : 0;
		p->timeout_ev = evtimer_new(p->base, proc_timeout_cb, p);
		evtimer_add(p->timeout_ev, &left);
	}
	if (p->exit_ev != NULL)
		event_free(p->exit_ev);
	if (p->pidfd != -1) {
		p->exit_ev = event_new(p->base, p->pidfd, EV_READ | EV_PERSIST,
		    proc_exit_cb, p);
		event_add(p->exit_ev, NULL);
	} else {
		p->exit_ev = evtimer_new(p->base, proc_exit_cb, p);
		event_add(p->exit_ev, &tv);
	}
}

void
proc_move(struct proc *p, struct event_base *base)
{
	p->base = base;
	proc_arm(p);
}

/* Sets up the child's fds, directory and signals for posix_spawn. */
static int
proc_actions(posix_spawn_file_actions_t *fa, posix_spawnattr_t *sa,
    const struct proc_opts *o, int in, int out, int err)
{
	sigset_t none, def;

	posix_spawn_file_actions_init(fa);
	posix_spawnattr_init(sa);
	if (in != -1)
		posix_spawn_file_actions_adddup2(fa, in, 0);
	else
		posix_spawn_file_actions_addopen(fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(fa, out, 1);
	posix_spawn_file_actions_adddup2(fa, err, 2);
	posix_spawn_file_actions_addclosefrom_np(fa, 3);
	if (o->dir != NULL)
		posix_spawn_file_actions_addchdir_np(fa, o->dir);
	sigemptyset(&none);
	sigemptyset(&def);
	sigaddset(&def, SIGPIPE);
	sigaddset(&def, SIGCHLD);
	sigaddset(&def, SIGINT);
	sigaddset(&def, SIGTERM);
	/* The server ignores these (no job control): its commands do not. */
	sigaddset(&def, SIGHUP);
	sigaddset(&def, SIGTSTP);
	sigaddset(&def, SIGTTIN);
	sigaddset(&def, SIGTTOU);
	posix_spawnattr_setsigmask(sa, &none);
	posix_spawnattr_setsigdefault(sa, &def);
	return posix_spawnattr_setflags(sa, POSIX_SPAWN_SETSIGMASK |
	    POSIX_SPAWN_SETSIGDEF | (o->keep_tty ? 0 : POSIX_SPAWN_SETSID));
}

/* Creates the pipes: child ends in C, ours (non-blocking) in p->fds. */
static int
proc_pipes(struct proc *p, const struct proc_opts *o, int c[3])
{
	int sv[2], pp[2], i;

	c[0] = c[1] = c[2] = -1;
	if (o->has_in_fd)
		c[0] = o->in_fd;
	else if (o->input != NULL || o->input_later) {
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == -1)
			return -1;
		shutdown(sv[0], SHUT_RD);
		p->fds[0] = sv[0];
		c[0] = sv[1];
	}
	for (i = 1; i < 3; i++) {
		if (i == 1 && o->out_fd >= 0) {
			c[1] = o->out_fd;
			continue;
		}
		if (i == 2 && o->err_to_out) {
			c[2] = c[1];
			continue;
		}
		if (pipe2(pp, O_CLOEXEC) == -1)
			return -1;
		p->fds[i] = pp[0];
		c[i] = pp[1];
	}
	for (i = 0; i < 3; i++) {
		if (p->fds[i] != -1)
			util_set_nonblock(p->fds[i]);
	}
	return 0;
}

/*
 * Where NAME is on PATH, looked up once per name and PATH (the last pair
 * asked for is kept): posix_spawnp would try every PATH entry before
 * git's on each of the several commands a snapshot runs. Helper threads
 * run git too, so the cache is behind a lock and each caller gets its
 * own copy (caller frees). NULL: let posix_spawnp search.
 */
static char *
proc_which(const char *name)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static char *last_name, *last_env, *last_path;
	const char *path = getenv("PATH"), *dir, *end;
	struct stat sb;
	char *cand, *found;

	if (strchr(name, '/') != NULL || path == NULL)
		return NULL;
	pthread_mutex_lock(&lock);
	if (last_name == NULL || strcmp(last_name, name) != 0 ||
	    strcmp(last_env, path) != 0) {
		free(last_name);
		free(last_env);
		free(last_path);
		last_name = xstrdup(name);
		last_env = xstrdup(path);
		last_path = NULL;
		/*
		 * An empty or relative entry (the current dir) is left to
		 * posix_spawnp.
		 */
		for (dir = path; *dir == '/' && last_path == NULL;
		    dir = end + 1) {
			end = strchrnul(dir, ':');
			cand = xprintf("%.*s/%s", (int)(end - dir), dir, name);
			if (stat(cand, &sb) == 0 && S_ISREG(sb.st_mode) &&
			    access(cand, X_OK) == 0)
				last_path = cand;
			else
				free(cand);
			if (*end == '\0')
				break;
		}
	}
	found = last_path != NULL ? xstrdup(last_path) : NULL;
	pthread_mutex_unlock(&lock);
	return found;
}

static pid_t
proc_posix_spawn(const struct proc_opts *o, const char *exe, int c[3],
    int *err)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t sa;
	mode_t old = 0;
	pid_t pid = -1;

	proc_actions(&fa, &sa, o, c[0], c[1], c[2]);
	if (o->umask >= 0)
		old = umask((mode_t)o->umask);
	if (exe != NULL)
		*err = posix_spawn(&pid, exe, &fa, &sa, o->argv,
		    o->env != NULL ? o->env : environ);
	else
		*err = posix_spawnp(&pid, o->argv[0], &fa, &sa, o->argv,
		    o->env != NULL ? o->env : environ);
	if (o->umask >= 0)
		umask(old);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&sa);
	/*
	 * posix_spawn sets no limit: set once it has exec'd (it returns
	 * then). Only where clone3 and clone are both refused (proc_spawn
	 * clones or vforks a child with a limit): what the child takes
	 * before this line is not bounded. The open files' soft limit this
	 * process raised goes back the same way (the child may be gone).
	 */
	if (*err == 0 && proc_nofile_raised)
		(void)prlimit(pid, RLIMIT_NOFILE, &proc_nofile_was, NULL);
	if (*err == 0 && o->data_max > 0 && prlimit(pid, RLIMIT_DATA,
	    &(struct rlimit){ (rlim_t)o->data_max, (rlim_t)o->data_max },
	    NULL) == -1) {
		*err = errno;
		kill(pid, SIGKILL);
		while (waitpid(pid, NULL, 0) == -1 && errno == EINTR)
			;
		return -1;
	}
	return *err == 0 ? pid : -1;
}

/* What the clone's child is given: all of it made before the clone. */
struct proc_child {
	const char *exe;
	char *const *argv;
	char *const *envp;
	const char *dir;
	int umask;
	int c[3];                 /* its stdin (-1: /dev/null), stdout, stderr */
	int execfd;               /* the exec pipe's write end */
	int maxfd;                /* fds above it are closed without close_range */
	bool keep_tty;
	uint64_t data_max;
	bool nofile;              /* proc_nofile_was is set back */
};

/* Signals the child gets at their default, as posix_spawn's SETSIGDEF gave them. */
static const int proc_sigdef[] = { SIGPIPE, SIGCHLD, SIGINT, SIGTERM, SIGHUP,
    SIGTSTP, SIGTTIN, SIGTTOU };

/* FD becomes the child's fd TO (kept across exec). Async-signal-safe. */
static int __attribute__((no_sanitize_address))
proc_child_fd(int fd, int to)
{
	int fl;

	if (fd != to)
		return dup2(fd, to);
	if ((fl = fcntl(fd, F_GETFD)) == -1)
		return -1;
	return fcntl(fd, F_SETFD, fl & ~FD_CLOEXEC);
}

/* Closes the child's fds from LO to HI. Async-signal-safe. */
static void __attribute__((no_sanitize_address))
proc_child_close(int lo, int hi, int maxfd)
{
	int fd;

	if (lo > hi || syscall(SYS_close_range, (unsigned)lo, (unsigned)hi,
	    0) == 0)
		return;
	for (fd = lo; fd <= hi && fd <= maxfd; fd++)
		close(fd);
}

/*
 * The clone's child, signals all blocked: only async-signal-safe calls
 * (it is a copy of a process with threads, or shares its memory:
 * proc_vfork) until its exec; if that or anything before it fails, the
 * errno goes up the exec pipe. Not instrumented by ASan (proc_vfork).
 */
static void __attribute__((noreturn, no_sanitize_address))
proc_child(const struct proc_child *k)
{
	struct timespec ts;
	struct sigaction sa, cur;
	sigset_t none;
	size_t i;
	int e, in = k->c[0], sig;

	/* The parent's handlers are not the command's: default, as posix_spawn does. */
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = SIG_DFL;
	for (sig = 1; sig < NSIG; sig++) {
		if (sigaction(sig, NULL, &cur) == 0 &&
		    cur.sa_handler != SIG_DFL && cur.sa_handler != SIG_IGN)
			sigaction(sig, &sa, NULL);
	}
	for (i = 0; i < sizeof proc_sigdef / sizeof proc_sigdef[0]; i++)
		sigaction(proc_sigdef[i], &sa, NULL);
	if (proc_test_exec_delay_ms > 0) {
		ts.tv_sec = proc_test_exec_delay_ms / 1000;
		ts.tv_nsec = (proc_test_exec_delay_ms % 1000) * 1000000L;
		while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
			;
	}
	if (in == -1 && (in = open("/dev/null", O_RDONLY | O_CLOEXEC)) == -1)
		goto fail;
	if (proc_child_fd(in, 0) == -1 || proc_child_fd(k->c[1], 1) == -1 ||
	    proc_child_fd(k->c[2], 2) == -1)
		goto fail;
	proc_child_close(3, k->execfd - 1, k->maxfd);
	proc_child_close(k->execfd + 1, ~0U >> 1, k->maxfd);
	if (k->dir != NULL && chdir(k->dir) == -1)
		goto fail;
	if (k->umask >= 0)
		umask((mode_t)k->umask);
	if (k->data_max > 0 && setrlimit(RLIMIT_DATA, &(struct rlimit){
	    (rlim_t)k->data_max, (rlim_t)k->data_max }) == -1)
		goto fail;
	/* Its fds are closed: the limit this process started with, back. */
	if (k->nofile)
		(void)setrlimit(RLIMIT_NOFILE, &proc_nofile_was);
	/* No terminal (proc_opts): a session of its own. */
	if (!k->keep_tty)
		(void)setsid();
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	execve(k->exe, k->argv, k->envp);
fail:
	e = errno;
	(void)!write(k->execfd, &e, sizeof e);
	_exit(127);
}

/* clone3's arguments (linux/sched.h's struct clone_args, its first version). */
struct proc_clone_args {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack,
	    stack_size, tls;
};

/*
 * Set once clone3 is refused (a kernel before 5.3, a seccomp filter such
 * as older container runtimes'), or clone with a pidfd (before 5.2):
 * proc_vfork, or posix_spawn, then.
 */
static bool proc_no_clone3, proc_no_vfork;

/*
 * Clones K's child: a copy-on-write process (no CLONE_VM, no
 * CLONE_VFORK), so this returns without waiting for its exec. Its pidfd in
 * *PIDFD. -1 with *ERR; ENOSYS if clone3 cannot be used here.
 */
static pid_t
proc_clone(const struct proc_child *k, int *pidfd, int *err)
{
	struct proc_clone_args ca;
	sigset_t all, old;
	long r;

	memset(&ca, 0, sizeof ca);
	ca.flags = CLONE_PIDFD;
	ca.pidfd = (uint64_t)(uintptr_t)pidfd;
	ca.exit_signal = SIGCHLD;
	/* No handler of ours may run in the child before it resets them. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = syscall(SYS_clone3, &ca, sizeof ca);
	if (r == 0)
		proc_child(k);
	*err = r == -1 ? errno : 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r == -1 && (*err == ENOSYS || *err == EPERM || *err == EINVAL))
		*err = ENOSYS;
	return r == -1 ? -1 : (pid_t)r;
}

/*
 * The stack a vforked child runs on (proc_vfork): one, made at first use
 * and kept, taken under a lock (its parent waits for the child's exec,
 * so one child at a time runs on it).
 */
#define PROC_VFORK_STACK (256 * 1024)
static char *proc_vfork_stack;
static pthread_mutex_t proc_vfork_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * The vforked child: it shares this process's memory until its exec, so
 * it is not instrumented by ASan (whose stack poisoning would be left in
 * the shared shadow once the child is gone).
 */
static int __attribute__((noreturn, no_sanitize_address))
proc_vfork_child(void *arg)
{
	proc_child(arg);
}

/*
 * Starts K's child sharing this process's memory and waiting for its
 * exec (CLONE_VM | CLONE_VFORK, as posix_spawn does): no page table is
 * copied, so a big process starts it as cheaply as posix_spawn would, and
 * its limits are set before its exec (posix_spawn sets none). Its pidfd
 * in *PIDFD. -1 with *ERR.
 */
static pid_t
proc_vfork(const struct proc_child *k, int *pidfd, int *err)
{
	sigset_t all, old;
	void *st;
	pid_t pid;
	int saved;

	pthread_mutex_lock(&proc_vfork_lock);
	if (proc_vfork_stack == NULL) {
		st = mmap(NULL, PROC_VFORK_STACK, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
		if (st == MAP_FAILED) {
			*err = errno;
			pthread_mutex_unlock(&proc_vfork_lock);
			return -1;
		}
		proc_vfork_stack = st;
	}
	/*
	 * No handler may run in the child before it resets them: every
	 * signal blocked, glibc's own two too (pthread_sigmask leaves them
	 * out), as posix_spawn blocks them. The child shares this thread's
	 * errno (no TLS of its own): kept.
	 */
	saved = errno;
	/* (glibc's sigfillset leaves its two out too.) */
	memset(&all, 0xff, sizeof all);
	(void)syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, &old, _NSIG / 8);
	pid = clone(proc_vfork_child, proc_vfork_stack + PROC_VFORK_STACK,
	    CLONE_VM | CLONE_VFORK | CLONE_PIDFD | SIGCHLD, (void *)k, pidfd);
	*err = pid == -1 ? errno : 0;
	if (pid != -1)
		proc_test_vforked++;
	(void)syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, _NSIG / 8);
	pthread_mutex_unlock(&proc_vfork_lock);
	errno = saved;
	if (pid == -1 && (*err == ENOSYS || *err == EPERM || *err == EINVAL))
		*err = ENOSYS;
	return pid;
}

/* An fd of at least 3, so that the child's dup2s to 0-2 cannot take it. */
static int
proc_high_fd(int fd)
{
	int hi;

	if (fd >= 3 || fd == -1)
		return fd;
	hi = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	close(fd);
	return hi;
}

/*
 * Above this much private memory, copying this process's page tables for
 * a clone costs the loop more than posix_spawn's wait for the exec
 * (bench/RESULTS.md: under load, 15 ms a clone at 60 MiB, 45 ms at 200).
 */
#define PROC_CLONE_MAX_MIB 32

/* Whether this process is small enough to clone (its private resident memory). */
static bool
proc_small(void)
{
	unsigned long size, res, shared;
	FILE *f;
	bool small = true;

	if ((f = fopen("/proc/self/statm", "re")) == NULL)
		return true;
	if (fscanf(f, "%lu %lu %lu", &size, &res, &shared) == 3 && res > shared)
		small = (res - shared) * (unsigned long)sysconf(_SC_PAGESIZE) <=
		    (unsigned long)PROC_CLONE_MAX_MIB << 20;
	fclose(f);
	return small;
}

/*
 * Starts P's child: cloned without waiting for its exec when its program
 * is known (an absolute path, or found on PATH), its exec's result then
 * coming through p->execfd; where this process is too big to copy
 * cheaply or clone3 is refused, by posix_spawn, which waits for the exec
 * and says at once, or, for a child with a limit, by proc_vfork, which
 * waits for it too (its exec's result comes through p->execfd as well).
 */
static pid_t
proc_spawn_exe(struct proc *p, const struct proc_opts *o, const char *exe,
    int c[3], int *err)
{
	struct proc_child k;
	struct rlimit rl;
	int ep[2];
	pid_t pid;
	bool cow, vfork;

	if (exe == NULL)
		return proc_posix_spawn(o, exe, c, err);
	/*
	 * A limit is set in the child before its exec: posix_spawn's child
	 * could only be limited after its exec, once it already ran. So a
	 * child with one that cannot be cloned copy-on-write (this process
	 * too big, or clone3 refused) is vforked.
	 */
	cow = !proc_no_clone3 && !proc_test_no_clone3 &&
	    (proc_test_clone_always || proc_small());
	vfork = !cow && o->data_max > 0 && !proc_no_vfork;
	if (!cow && !vfork)
		return proc_posix_spawn(o, exe, c, err);
	if (pipe2(ep, O_CLOEXEC) == -1 || (ep[1] = proc_high_fd(ep[1])) == -1) {
		*err = errno;
		return -1;
	}
	memset(&k, 0, sizeof k);
	k.exe = exe;
	k.argv = o->argv;
	k.envp = o->env != NULL ? o->env : environ;
	k.dir = o->dir;
	k.umask = o->umask;
	k.keep_tty = o->keep_tty;
	k.nofile = proc_nofile_raised;
	k.data_max = o->data_max;
	memcpy(k.c, c, sizeof k.c);
	k.execfd = ep[1];
	k.maxfd = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 65536 ?
	    (int)rl.rlim_cur : 65536;
	pid = vfork ? proc_vfork(&k, &p->pidfd, err) :
	    proc_clone(&k, &p->pidfd, err);
	close(ep[1]);
	if (pid == -1) {
		close(ep[0]);
		if (*err != ENOSYS)
			return -1;
		/* Refused: the next way (each is tried once). */
		if (vfork) {
			log_debug("clone refused: children with a limit are "
			    "started by posix_spawn, limited after their exec");
			proc_no_vfork = true;
		} else {
			log_debug("clone3 refused: children are vforked or "
			    "started by posix_spawn");
			proc_no_clone3 = true;
		}
		return proc_spawn_exe(p, o, exe, c, err);
	}
	p->execfd = ep[0];
	util_set_nonblock(p->execfd);
	return pid;
}

/* proc_spawn_exe with O's program, found on PATH once per name. */
static pid_t
proc_spawn(struct proc *p, const struct proc_opts *o, int c[3], int *err)
{
	char *found = o->exe != NULL ? NULL : proc_which(o->argv[0]);
	pid_t pid;

	pid = proc_spawn_exe(p, o, o->exe != NULL ? o->exe : found, c, err);
	free(found);
	return pid;
}

/*
 * For proc_run (which blocks anyway): waits until P's child has exec'd or
 * failed to; errno of the failure (the child is then reaped), 0 if it
 * runs.
 */
static int
proc_exec_wait(struct proc *p)
{
	struct pollfd pfd[2];
	ssize_t n;
	int e = 0;

	if (p->execfd == -1)
		return 0;
	pfd[0].fd = p->execfd;
	pfd[0].events = POLLIN;
	pfd[1].fd = p->pidfd;
	pfd[1].events = POLLIN;
	/* Its end too: a fork elsewhere may hold the pipe's write end open. */
	while (poll(pfd, 2, -1) == -1 && errno == EINTR)
		;
	do
		n = read(p->execfd, &e, sizeof e);
	while (n == -1 && errno == EINTR);
	close(p->execfd);
	p->execfd = -1;
	if (n != (ssize_t)sizeof e)
		return 0;
	while (waitpid(p->pid, NULL, 0) == -1 && errno == EINTR)
		;
	p->pid = -1;
	return e;
}

/*
 * What the log calls a command: its program and first two arguments,
 * past git's "-c NAME=VALUE" settings (else every git would be "git
 * --no-pager -c", whatever it does).
 */
static char *
proc_what(char *const *argv)
{
	const char *a[2] = { "", "" };
	size_t i, n = 0;

	for (i = 1; argv[i] != NULL && n < 2; i++) {
		if (strcmp(argv[i], "-c") == 0 && argv[i + 1] != NULL)
			i++;
		else
			a[n++] = argv[i];
	}
	return xprintf("%s %s %s", argv[0], a[0], a[1]);
}

struct proc *
proc_start(struct event_base *base, const struct proc_opts *o,
    proc_cb done, void *arg, char **cause)
{
	struct proc *p = xcalloc(1, sizeof *p);
	int c[3], i, err = 0;

	p->base = base;
	p->fds[0] = p->fds[1] = p->fds[2] = -1;
	p->pidfd = -1;
	p->execfd = -1;
	p->status = -1;
	p->err_to_out = o->err_to_out;
	p->argv0 = xstrdup(o->argv[0]);
	p->line = o->line;
	p->chunk = o->chunk;
	p->chunk_arg = o->chunk_arg;
	p->err_max = o->err_max;
	p->done = done;
	p->arg = arg;
	if (o->input != NULL)
		buf_add(&p->in, o->input, o->inputlen);
	p->in_held = o->input_later;
	if (proc_pipes(p, o, c) == -1) {
		err = errno;
		goto fail;
	}
	p->what = proc_what(o->argv);
	p->started = util_mono_us();
	p->pid = proc_spawn(p, o, c, &err);
	for (i = 0; i < 3; i++) {
		if (c[i] != -1 && c[i] != o->out_fd &&
		    !(i == 0 && o->has_in_fd) && !(i == 2 && o->err_to_out))
			close(c[i]);
	}
	if (p->pid == -1)
		goto fail;
	if (p->pidfd == -1 &&
	    (p->pidfd = (int)syscall(SYS_pidfd_open, p->pid, 0)) != -1)
		util_set_cloexec(p->pidfd);
	/* Without a loop to say it later, an exec failure is said now. */
	if (base == NULL && (err = proc_exec_wait(p)) != 0)
		goto fail;
	p->timeout = o->timeout;
	proc_arm(p);
	return p;
fail:
	*cause = xprintf("cannot run %s: %s", o->argv[0], strerror(err));
	proc_free(p);
	return NULL;
}

/* How long a command asked to stop (proc_term) has before it is killed. */
#define PROC_TERM_GRACE_MS 800

static void proc_reaper_cb(evutil_socket_t, short, void *);

/*
 * Reaps the child of PIDFD if it has ended, never waiting (a child killed
 * in uninterruptible sleep, on a FUSE or NFS project, ends only later): 1
 * reaped (or not ours to reap), 0 still there, -1 the kernel cannot wait
 * on a pidfd (before Linux 5.4).
 */
static int
proc_pidfd_reap(int pidfd)
{
	siginfo_t si;
	int r;

	memset(&si, 0, sizeof si);
	do
		r = waitid(P_PIDFD, (id_t)pidfd, &si, WEXITED | WNOHANG);
	while (r == -1 && errno == EINTR);
	if (r == -1)
		return errno == ECHILD ? 1 : -1;
	return si.si_pid != 0;
}

/*
 * Watches PIDFD on BASE for the exit of its child, one nobody waits for
 * any more; after GRACE_MS (0: none) it is killed. Nothing is allocated:
 * the loop's own one-off event carries the base, so a loop freed first
 * leaves only a zombie until this process ends. False if it cannot be
 * watched.
 */
static bool
proc_reaper_add(struct event_base *base, int pidfd, int grace_ms)
{
	struct timeval tv = { grace_ms / 1000, (grace_ms % 1000) * 1000 };

	return event_base_once(base, pidfd, EV_READ | (grace_ms > 0 ?
	    EV_TIMEOUT : 0), proc_reaper_cb, base, grace_ms > 0 ? &tv : NULL) ==
	    0;
}

static void
proc_reaper_cb(evutil_socket_t fd, short what, void *arg)
{
	/* Its grace is over: killed by its pidfd, which names it and no other. */
	if (what & EV_TIMEOUT)
		syscall(SYS_pidfd_send_signal, (int)fd, SIGKILL, NULL, 0);
	/* Not gone yet: the pidfd says when, the loop goes on meanwhile. */
	if (proc_pidfd_reap((int)fd) == 0 && proc_reaper_add(arg, (int)fd, 0))
		return;
	close((int)fd);
}

void
proc_reap_pidfd(struct event_base *base, int pidfd, int grace_ms)
{
	int r;

	if (pidfd == -1)
		return;
	if ((r = proc_pidfd_reap(pidfd)) == 0 &&
	    proc_reaper_add(base, pidfd, grace_ms))
		return;
	if (r == 0) {
		/* Not watchable: killed now, and left a zombie at worst. */
		syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
		proc_pidfd_reap(pidfd);
	}
	close(pidfd);
}

/*
 * Lets go of P's child, still running, after SIG: the loop reaps it when
 * its pidfd says it ended (GRACE_MS later it is killed). Without a pidfd
 * to wait on, it is killed and reaped here if it is already gone; the loop
 * is never held up waiting for it (what has not ended stays a zombie).
 */
static void
proc_let_go(struct proc *p, int sig, int grace_ms)
{
	int r;

	kill(p->pid, sig);
	if (p->pidfd != -1 && p->base != NULL &&
	    ((r = proc_pidfd_reap(p->pidfd)) == 1 ||
	    (r == 0 && proc_reaper_add(p->base, p->pidfd, grace_ms)))) {
		if (r == 1)
			close(p->pidfd);
		p->pidfd = -1;          /* the reaper's now, or reaped */
		p->pid = -1;
		return;
	}
	if (sig != SIGKILL)
		kill(p->pid, SIGKILL);
	while (waitpid(p->pid, NULL, WNOHANG) == -1 && errno == EINTR)
		;
	p->pid = -1;
}

void
proc_kill_wait(struct proc *p, int ms)
{
	struct pollfd pfd;
	siginfo_t si;
	int64_t until;

	if (p == NULL || p->pid <= 0)
		return;
	kill(p->pid, SIGKILL);
	if (p->pidfd != -1) {
		pfd.fd = p->pidfd;
		pfd.events = POLLIN;
		while (poll(&pfd, 1, ms) == -1 && errno == EINTR)
			;
		return;
	}
	/* No pidfd: asked until it is a zombie (WNOWAIT: still ours to reap). */
	until = util_mono_us() + ms * 1000LL;
	for (;;) {
		memset(&si, 0, sizeof si);
		if (waitid(P_PID, (id_t)p->pid, &si, WEXITED | WNOHANG |
		    WNOWAIT) == -1 || si.si_pid != 0 || util_mono_us() >= until)
			return;
		usleep(PROC_POLL_US);
	}
}

void
proc_term(struct proc *p)
{
	if (p != NULL && p->pid > 0)
		proc_let_go(p, SIGTERM, PROC_TERM_GRACE_MS);
	proc_free(p);
}

void
proc_free(struct proc *p)
{
	int i;

	if (p == NULL)
		return;
	if (p->pid > 0)
		proc_let_go(p, SIGKILL, 0);
	for (i = 0; i < 3; i++)
		proc_close(p, i);
	if (p->exit_ev != NULL)
		event_free(p->exit_ev);
	if (p->timeout_ev != NULL)
		event_free(p->timeout_ev);
	if (p->pidfd != -1)
		close(p->pidfd);
	if (p->execfd != -1)
		close(p->execfd);
	buf_free(&p->in);
	buf_free(&p->out);
	buf_free(&p->err);
	free(p->what);
	free(p->argv0);
	free(p->cause);
	free(p);
}

/* The process's one event loop, and the process it was made in. */
static struct event_base *proc_main;
static pid_t proc_main_pid;
/* A parent's loop, kept (not freed, not lost) in a child forked after it. */
static struct event_base *volatile proc_inherited;

struct event_base *
proc_base(void)
{
	/*
	 * A child forked after it was made (the server, a confdiff merge)
	 * gets its own: the parent's shares its kernel state. The parent's
	 * is left alone, not freed, for freeing it would touch that state.
	 */
	if (proc_main == NULL || proc_main_pid != getpid()) {
		if (proc_main != NULL)
			proc_inherited = proc_main;
		if ((proc_main = event_base_new()) == NULL)
			fatalx("cannot create the event loop: libevent found "
			    "no usable backend (is /dev/epoll or poll "
			    "available?)");
		proc_main_pid = getpid();
	}
	return proc_main;
}

void
proc_base_free(void)
{
	if (proc_main != NULL && proc_main_pid == getpid())
		event_base_free(proc_main);
	proc_main = NULL;
}

void
proc_sync_run(struct event_base *base, const bool *done)
{
	/* libevent refuses (-1) to run a loop from inside its own callback. */
	while (!*done && event_base_loop(base, EVLOOP_ONCE) == 0)
		;
	if (!*done)
		fatalx("the event loop stopped before a command's work was "
		    "over, or blocking work was started from inside the loop "
		    "it waits on (a bug: there it runs with a callback)");
}

/*
 * Poll's wait, in ms, for P: until its timeout (-1: none, or it is
 * over), or the tick at which its exit is asked for without a pidfd.
 */
static int
proc_run_wait_ms(const struct proc *p, bool killed)
{
	int64_t left;
	int ms = -1;

	if (p->timeout > 0 && !killed) {
		left = p->started + p->timeout * 1000000LL - util_mono_us();
		ms = left > 0 ? (int)(left / 1000) + 1 : 0;
	}
	if (p->pidfd == -1 && (ms == -1 || ms > PROC_POLL_US / 1000))
		ms = PROC_POLL_US / 1000;
	return ms;
}

/*
 * Drives P, started without a loop, to its end: its pipes and pidfd are
 * polled and handed to the runner's own readers and writer. One that
 * outlives its timeout is killed.
 */
static void
proc_run_drive(struct proc *p)
{
	struct pollfd pfd[4];
	bool killed = false;
	int i;

	while (p->status == -1) {
		for (i = 0; i < 3; i++) {
			pfd[i].fd = p->fds[i];
			pfd[i].events = i == 0 ? POLLOUT : POLLIN;
			pfd[i].revents = 0;
		}
		/* All written: proc_write closes stdin (unless held for more). */
		if (p->in_held && p->inoff >= p->in.len)
			pfd[0].fd = -1;
		pfd[3].fd = p->pidfd;
		pfd[3].events = POLLIN;
		pfd[3].revents = 0;
		if (poll(pfd, 4, proc_run_wait_ms(p, killed)) == -1 &&
		    errno != EINTR)
			fatal("poll");
		if (!killed && p->timeout > 0 && util_mono_us() - p->started >=
		    p->timeout * 1000000LL) {
			log_debug("%s: killed after its time ran out", p->what);
			kill(p->pid, SIGKILL);
			killed = true;
		}
		if (pfd[0].revents != 0)
			proc_write(p);
		for (i = 1; i < 3; i++) {
			if (pfd[i].revents != 0 && p->fds[i] != -1 &&
			    !proc_read(p, i))
				proc_close(p, i);
		}
		if ((p->pidfd == -1 || pfd[3].revents != 0) && proc_reap(p))
			proc_finish(p);
	}
}

static void
proc_run_over(struct proc *p, void *arg)
{
}

int
proc_run(const struct proc_opts *o, struct buf *out,
    struct buf *err, int *status, char **cause)
{
	struct proc *p;

	if ((p = proc_start(NULL, o, proc_run_over, NULL, cause)) == NULL)
		return -1;
	proc_run_drive(p);
	*status = p->status;
	if (out != NULL)
		buf_add(out, p->out.data, p->out.len);
	if (err != NULL)
		buf_add(err, p->err.data, p->err.len);
	proc_free(p);
	return 0;
}

void
proc_raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == -1 || rl.rlim_cur >= rl.rlim_max ||
	    rl.rlim_cur >= PROC_NOFILE_MAX)
		return;
	proc_nofile_was = rl;
	rl.rlim_cur = rl.rlim_max < PROC_NOFILE_MAX ? rl.rlim_max :
	    PROC_NOFILE_MAX;
	if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
		proc_nofile_raised = true;
}
