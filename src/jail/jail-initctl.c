/*
 * The jail's pid 1 once the command runs: it reaps and forwards signals,
 * and answers agentmux over the status channel: what the jail's processes
 * wrote, and stopping every one of them (and holding them stopped) or
 * letting them continue, for jails without a cgroup freezer.
 */
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <linux/capability.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "jail/jail-int.h"

/* How long stopping every process may take: one still exiting is waited for. */
#define JAIL_STOP_MS 5000
/* How long one may keep running with no SIGSTOP pending (something keeps sending it SIGCONT). */
#define JAIL_STOP_RUNNING_MS 250
/* How often a jail held stopped is looked at. */
#define JAIL_HOLD_MS 200

/* What one task is doing, for stopping the jail; a higher value is worse. */
enum jail_task {
	JAIL_TASK_STOPPED,    /* stopped, a zombie, or asleep uninterruptibly with SIGSTOP pending */
	JAIL_TASK_STOPPING,   /* SIGSTOP pending, about to act on it */
	JAIL_TASK_EXITING,    /* ending: it cannot stop, but it will be gone */
	JAIL_TASK_RUNNING,    /* none of those */
};

/* A task seen stopped while the jail is held, and how long it had run by then. */
struct jail_held_task {
	pid_t tid;
	pid_t pid;
	uint64_t runtime;     /* ns, from its schedstat */
};

/* A process found ending and unreaped by a count: the same one if its start time is. */
struct jail_zombie {
	pid_t pid;
	unsigned long long start;
};

struct jail_initctl {
	pid_t cmd;
	int sfd;                     /* every signal, blocked, read here */
	int self_io;                 /* our own /proc/PID/io */
	int sock;                    /* to agentmux; -1 once it hung up */
	bool held;                   /* every other process is held stopped */
	int64_t checked_us;
	pid_t *stopped;              /* stopped by their own job control before */
	size_t nstopped;
	struct jail_held_task *tasks;
	size_t ntasks;
	struct jail_zombie *left;    /* ending, unread and unreaped at the last count */
	size_t nleft;
};

static struct jail_initctl jail_ic = { .sfd = -1, .self_io = -1,
	.sock = -1 };

static void jail_initctl_reap(struct jail_initctl *);

/* Reads a small /proc file into BUF; -1 if it cannot be read (errno says why). */
static ssize_t
jail_initctl_read(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return n;
}

static void
jail_initctl_nap(int ms)
{
	struct timespec ts = { 0, (long)ms * 1000000L };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

static void
jail_initctl_vsay(struct jail_initctl *ic, const char *fmt, va_list ap)
{
	char msg[512];

	vsnprintf(msg, sizeof msg, fmt, ap);
	if (ic->sock != -1 && send(ic->sock, msg, strlen(msg), MSG_NOSIGNAL) ==
	    -1 && errno != EINTR) {
		close(ic->sock);
		ic->sock = -1;
	}
}

static void __attribute__((format(printf, 2, 3)))
jail_initctl_say(struct jail_initctl *ic, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	jail_initctl_vsay(ic, fmt, ap);
	va_end(ap);
}

/* Calls FN for every process of the jail but ourselves. */
static int
jail_initctl_each(void (*fn)(pid_t, void *), void *arg)
{
	struct dirent *de;
	char *end;
	long pid;
	DIR *d;

	if ((d = opendir("/proc")) == NULL)
		return -1;
	while ((de = readdir(d)) != NULL) {
		pid = strtol(de->d_name, &end, 10);
		if (*end != '\0' || pid <= 1)
			continue;
		fn((pid_t)pid, arg);
	}
	closedir(d);
	return 0;
}

/* The task's state letter, and its flags (PF_EXITING is 0x4). */
static int
jail_initctl_stat(const char *dir, char *state, unsigned long *flags)
{
	char path[384], buf[1024], *s;
	int field;

	snprintf(path, sizeof path, "%s/stat", dir);
	if (jail_initctl_read(path, buf, sizeof buf) == -1)
		return -1;
	/* The command name may hold anything, ')' too: the last one ends it. */
	if ((s = strrchr(buf, ')')) == NULL || s[1] != ' ' || s[2] == '\0')
		return -1;
	*state = s[2];
	*flags = 0;
	for (field = 3, s += 2; field < 9 && s != NULL; field++)
		s = strchr(s + 1, ' ');
	if (s != NULL)
		*flags = strtoul(s + 1, NULL, 10);
	return 0;
}

static bool
jail_initctl_stop_pending(const char *dir)
{
	static const char *const keys[] = { "\nSigPnd:", "\nShdPnd:" };
	char path[384], buf[4096], *s;
	size_t i;

	snprintf(path, sizeof path, "%s/status", dir);
	if (jail_initctl_read(path, buf, sizeof buf) == -1)
		return false;
	for (i = 0; i < nitems(keys); i++) {
		if ((s = strstr(buf, keys[i])) != NULL &&
		    (strtoull(s + strlen(keys[i]), NULL, 16) &
		    (1ULL << (SIGSTOP - 1))) != 0)
			return true;
	}
	return false;
}

static enum jail_task
jail_initctl_task(const char *dir, char *state)
{
	unsigned long flags;
	bool pending;

	if (jail_initctl_stat(dir, state, &flags) == -1)
		return JAIL_TASK_STOPPED;   /* gone: it cannot run */
	if (strchr("TtZXx", *state) != NULL)
		return JAIL_TASK_STOPPED;
	if (flags & 0x4)
		return JAIL_TASK_EXITING;
	pending = jail_initctl_stop_pending(dir);
	if (pending && (*state == 'D' || *state == 'I'))
		return JAIL_TASK_STOPPED;   /* it stops before it runs user code */
	return pending ? JAIL_TASK_STOPPING : JAIL_TASK_RUNNING;
}

/* The worst state of any task, and a process that is in it. */
struct jail_pass {
	enum jail_task worst;
	pid_t who;
};

/*
 * Calls FN(ARG, PID, TID, its /proc dir) for each thread of PID while FN
 * says true; false when FN said false (a process gone is no thread).
 */
static bool
jail_initctl_each_task(pid_t pid, bool (*fn)(void *, pid_t, pid_t,
    const char *), void *arg)
{
	char dir[64], tdir[352];
	struct dirent *de;
	bool go = true;
	DIR *d;

	snprintf(dir, sizeof dir, "/proc/%ld/task", (long)pid);
	if ((d = opendir(dir)) == NULL)
		return true;
	while (go && (de = readdir(d)) != NULL) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(tdir, sizeof tdir, "%s/%s", dir, de->d_name);
		go = fn(arg, pid, (pid_t)strtol(de->d_name, NULL, 10), tdir);
	}
	closedir(d);
	return go;
}

static bool
jail_initctl_pass_task(void *arg, pid_t pid, pid_t tid, const char *tdir)
{
	struct jail_pass *jp = arg;
	enum jail_task t;
	char state;

	if ((t = jail_initctl_task(tdir, &state)) > jp->worst) {
		jp->worst = t;
		jp->who = pid;
	}
	return true;
}

static void
jail_initctl_pass_one(pid_t pid, void *arg)
{
	jail_initctl_each_task(pid, jail_initctl_pass_task, arg);
}

static struct jail_pass
jail_initctl_pass(void)
{
	struct jail_pass jp = { JAIL_TASK_STOPPED, 0 };

	if (jail_initctl_each(jail_initctl_pass_one, &jp) == -1)
		jp.worst = JAIL_TASK_RUNNING;
	return jp;
}

/* Processes their own job control had stopped are left stopped at the end. */
static void
jail_initctl_note_one(pid_t pid, void *arg)
{
	struct jail_initctl *ic = arg;
	char dir[64], state;
	unsigned long flags;

	snprintf(dir, sizeof dir, "/proc/%ld", (long)pid);
	if (jail_initctl_stat(dir, &state, &flags) == -1 || state != 'T')
		return;
	ic->stopped = xreallocarray(ic->stopped, ic->nstopped + 1,
	    sizeof *ic->stopped);
	ic->stopped[ic->nstopped++] = pid;
}

/* Says why, then ends the jail: it could not be held frozen. */
static void __attribute__((noreturn, format(printf, 2, 3)))
jail_initctl_end(struct jail_initctl *ic, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	jail_initctl_vsay(ic, fmt, ap);
	va_end(ap);
	kill(-1, SIGKILL);
	_exit(128 + SIGKILL);
}

/*
 * Stops every process but ours: rounds of one SIGSTOP to all until each
 * is stopped (or cannot run before it stops). Processes still exiting are
 * waited for: the exit of one can send SIGCONT to a stopped process group
 * it orphans (POSIX), which the next round stops again.
 */

static void
jail_initctl_stop(struct jail_initctl *ic)
{
	int64_t start = util_mono_us(), running = 0, now;
	struct jail_pass jp;

	if (ic->held) {
		jail_initctl_say(ic, "s");
		return;
	}
	jail_initctl_each(jail_initctl_note_one, ic);
	for (;;) {
		/*
		 * One signal to every process of the namespace, sent by the
		 * kernel under the task list lock: a fork racing it makes a
		 * child with the signal pending too.
		 */
		kill(-1, SIGSTOP);
		jail_initctl_nap(1);
		jp = jail_initctl_pass();
		now = util_mono_us();
		if (jp.worst == JAIL_TASK_STOPPED)
			break;
		if (jp.worst != JAIL_TASK_RUNNING)
			running = 0;
		else if (running == 0)
			running = now;
		if (running != 0 && now - running > JAIL_STOP_RUNNING_MS * 1000LL)
			jail_initctl_end(ic, "f process %ld of the jail kept "
			    "running: something sends it SIGCONT; the jail was "
			    "killed", (long)jp.who);
		if (now - start > JAIL_STOP_MS * 1000LL)
			jail_initctl_end(ic, "f process %ld of the jail did "
			    "not stop within 5 seconds; the jail was killed",
			    (long)jp.who);
	}
	ic->held = true;
	ic->checked_us = util_mono_us();
	jail_initctl_say(ic, "s");
}

static uint64_t
jail_initctl_runtime(const char *tdir)
{
	char path[384], buf[128];

	snprintf(path, sizeof path, "%s/schedstat", tdir);
	if (jail_initctl_read(path, buf, sizeof buf) == -1)
		return 0;
	return strtoull(buf, NULL, 10);
}

static struct jail_held_task *
jail_initctl_held_task(struct jail_initctl *ic, pid_t tid)
{
	size_t i;

	for (i = 0; i < ic->ntasks; i++) {
		if (ic->tasks[i].tid == tid)
			return &ic->tasks[i];
	}
	return NULL;
}

/*
 * One task of a held jail: once seen stopped, it must not run again. A
 * stopped task's run time does not move; one that was sent SIGCONT (by a
 * timer it set, say) has run, even if it stopped itself again since.
 */
static bool
jail_initctl_hold_task(struct jail_initctl *ic, pid_t pid, const char *tdir,
    pid_t tid)
{
	struct jail_held_task *ht = jail_initctl_held_task(ic, tid);
	char state;
	enum jail_task t;

	if (ht != NULL)
		return jail_initctl_runtime(tdir) == ht->runtime;
	t = jail_initctl_task(tdir, &state);
	if (t == JAIL_TASK_RUNNING) {
		/* Between taking SIGSTOP off its queue and stopping: look again. */
		jail_initctl_nap(5);
		t = jail_initctl_task(tdir, &state);
	}
	if (t == JAIL_TASK_RUNNING)
		return false;
	if (state == 'T' || state == 't') {
		ic->tasks = xreallocarray(ic->tasks, ic->ntasks + 1,
		    sizeof *ic->tasks);
		ic->tasks[ic->ntasks].tid = tid;
		ic->tasks[ic->ntasks].pid = pid;
		ic->tasks[ic->ntasks++].runtime = jail_initctl_runtime(tdir);
	}
	return true;
}

static bool
jail_initctl_hold_each(void *arg, pid_t pid, pid_t tid, const char *tdir)
{
	return jail_initctl_hold_task(arg, pid, tdir, tid);
}

static void
jail_initctl_hold_one(pid_t pid, void *arg)
{
	if (!jail_initctl_each_task(pid, jail_initctl_hold_each, arg))
		jail_initctl_end(arg, "x process %ld of the jail ran while "
		    "the session was frozen (something sent it SIGCONT); the "
		    "jail was killed", (long)pid);
}

static void
jail_initctl_hold(struct jail_initctl *ic)
{
	ic->checked_us = util_mono_us();
	if (jail_initctl_each(jail_initctl_hold_one, ic) == -1)
		jail_initctl_end(ic, "x cannot look at the jail's processes "
		    "(%ld); the jail was killed", (long)errno);
}

static bool
jail_initctl_was_stopped(struct jail_initctl *ic, pid_t pid)
{
	size_t i;

	for (i = 0; i < ic->nstopped; i++) {
		if (ic->stopped[i] == pid)
			return true;
	}
	return false;
}

static void
jail_initctl_continue_one(pid_t pid, void *arg)
{
	if (!jail_initctl_was_stopped(arg, pid))
		kill(pid, SIGCONT);
}

static void
jail_initctl_continue(struct jail_initctl *ic)
{
	if (ic->held)
		jail_initctl_each(jail_initctl_continue_one, ic);
	ic->held = false;
	free(ic->stopped);
	ic->stopped = NULL;
	ic->nstopped = 0;
	free(ic->tasks);
	ic->tasks = NULL;
	ic->ntasks = 0;
	jail_initctl_say(ic, "c");
}

/* One process for a count: who its parent is, how deep in the tree. */
struct jail_count_proc {
	pid_t pid;
	pid_t ppid;
	int depth;
};

struct jail_count {
	struct jail_count_proc *v;
	size_t n;
};

static void
jail_initctl_count_one(pid_t pid, void *arg)
{
	struct jail_count *jc = arg;
	char path[64], buf[1024], *s;
	long ppid;

	snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
	if (jail_initctl_read(path, buf, sizeof buf) == -1 ||
	    (s = strrchr(buf, ')')) == NULL || sscanf(s + 1, " %*c %ld",
	    &ppid) != 1)
		return;
	jc->v = xreallocarray(jc->v, jc->n + 1, sizeof *jc->v);
	jc->v[jc->n].pid = pid;
	jc->v[jc->n].ppid = (pid_t)ppid;
	jc->v[jc->n++].depth = 0;
}

static int
jail_initctl_by_pid(const void *a, const void *b)
{
	const struct jail_count_proc *x = a, *y = b;

	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static int
jail_initctl_by_depth(const void *a, const void *b)
{
	const struct jail_count_proc *x = a, *y = b;

	return x->depth > y->depth ? -1 : x->depth < y->depth;
}

static void
jail_initctl_depths(struct jail_count *jc)
{
	struct jail_count_proc key = { 0, 0, 0 }, *up;
	size_t i;
	int d;

	if (jc->n == 0)
		return;
	qsort(jc->v, jc->n, sizeof *jc->v, jail_initctl_by_pid);
	for (i = 0; i < jc->n; i++) {
		key.pid = jc->v[i].ppid;
		for (d = 0; d < (int)jc->n && key.pid > 0; d++) {
			up = bsearch(&key, jc->v, jc->n, sizeof *jc->v,
			    jail_initctl_by_pid);
			if (up == NULL)
				break;
			key.pid = up->ppid;
		}
		jc->v[i].depth = d + 1;
	}
	qsort(jc->v, jc->n, sizeof *jc->v, jail_initctl_by_depth);
}

static int
jail_initctl_write_bytes(const char *text, uint64_t *bytes)
{
	const char *s;

	if ((s = strstr(text, "\nwrite_bytes: ")) == NULL) {
		errno = EINVAL;
		return -1;
	}
	*bytes = strtoull(s + 14, NULL, 10);
	return 0;
}

/*
 * A process's /proc files belong to root once it is undumpable, and a
 * root not mapped into the jail (an ordinary user's) cannot be read as:
 * such a process counts as unread while it runs, and once it ends and
 * is reaped, what it wrote is in its parent's count.
 */
static int
jail_initctl_io(pid_t pid, uint64_t *bytes)
{
	char path[64], buf[1024];

	snprintf(path, sizeof path, "/proc/%ld/io", (long)pid);
	if (jail_initctl_read(path, buf, sizeof buf) == -1)
		return -1;
	return jail_initctl_write_bytes(buf, bytes);
}

/* Ours, through the file opened while we were still dumpable: what the orphans we reaped wrote. */
static int
jail_initctl_self_io(struct jail_initctl *ic, uint64_t *bytes)
{
	char buf[1024];
	ssize_t n;

	if ((n = pread(ic->self_io, buf, sizeof buf - 1, 0)) < 0)
		return -1;
	buf[n] = '\0';
	return jail_initctl_write_bytes(buf, bytes);
}

/* Whether PID is ending: exiting, a zombie, or already reaped. */
static bool
jail_initctl_ending(pid_t pid)
{
	char dir[64], state;
	unsigned long flags;

	snprintf(dir, sizeof dir, "/proc/%ld", (long)pid);
	if (jail_initctl_stat(dir, &state, &flags) == -1)
		return true;
	return state == 'Z' || (flags & 0x4) != 0;
}

/* PID's start time (field 22 of its stat), or 0 if it cannot be read. */
static unsigned long long
jail_initctl_start_time(pid_t pid)
{
	char path[64], buf[1024], *s;
	int field;

	snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
	if (jail_initctl_read(path, buf, sizeof buf) == -1 ||
	    (s = strrchr(buf, ')')) == NULL)
		return 0;
	/* S is the name's end; each turn finds the space before field FIELD + 1. */
	for (field = 2; field < 22 && s != NULL; field++)
		s = strchr(s + 1, ' ');
	return s != NULL ? strtoull(s + 1, NULL, 10) : 0;
}

/*
 * The ending processes Z (N, 0 for those gone) still unreaped after the
 * wait: each counts as unread only if the last count left the same one
 * (same pid, same start time) unreaped too; a parent slow to reap on a
 * loaded machine (seen: more than 1.8 s) is not taken for one hiding what
 * its child wrote. They are kept for the next count.
 */
static unsigned
jail_initctl_zombies(struct jail_initctl *ic, const pid_t *z, size_t n)
{
	struct jail_zombie *now = NULL;
	size_t i, k, nnow = 0;
	unsigned unread = 0;

	for (i = 0; z != NULL && i < n; i++) {
		if (z[i] == 0)
			continue;
		now = xreallocarray(now, nnow + 1, sizeof *now);
		now[nnow].pid = z[i];
		now[nnow].start = jail_initctl_start_time(z[i]);
		for (k = 0; k < ic->nleft; k++) {
			if (ic->left[k].pid == now[nnow].pid &&
			    ic->left[k].start == now[nnow].start)
				break;
		}
		unread += k < ic->nleft;
		nnow++;
	}
	free(ic->left);
	ic->left = now;
	ic->nleft = nnow;
	return unread;
}

/*
 * Ending processes whose counters could not be read (one that is exiting
 * has let its memory go, and its /proc files go to root like those of an
 * undumpable one): one its parent reaps is counted in the parent from
 * then on; one still there after a while may be left unreaped on
 * purpose, perhaps to hide what it wrote (jail_initctl_zombies says). A
 * while is some 1.5 s: a loaded machine (a load of 18 on 2 cores) left a
 * shell's child unreaped for more than 170 ms, which froze a session for
 * nothing. Only a count that finds such a process waits that long; those
 * gone are set to 0 in Z.
 */
static void
jail_initctl_ending_wait(struct jail_initctl *ic, pid_t *z, size_t n)
{
	static const int waits[] = { 20, 50, 100, 200, 400, 800 };
	size_t i, w, left = n;
	char path[64];

	for (w = 0; w < nitems(waits) && left > 0; w++) {
		jail_initctl_nap(waits[w]);
		/* Orphans are ours to reap: what they wrote is then in our count. */
		jail_initctl_reap(ic);
		for (i = 0, left = 0; i < n; i++) {
			snprintf(path, sizeof path, "/proc/%ld", (long)z[i]);
			if (z[i] != 0 && access(path, F_OK) == -1)
				z[i] = 0;
			left += z[i] != 0;
		}
	}
}

/*
 * What every process wrote, children before parents and ourselves last: a
 * process that ends meanwhile has its count added to its parent's (or ours)
 * when it is reaped, which is then read after it, so nothing written before
 * the count started is missed (some may be counted twice).
 */
static void
jail_initctl_count(struct jail_initctl *ic)
{
	struct jail_count jc = { NULL, 0 };
	uint64_t sum = 0, bytes;
	unsigned unread = 0;
	pid_t *z = NULL;
	size_t i, nz = 0;

	jail_initctl_each(jail_initctl_count_one, &jc);
	jail_initctl_depths(&jc);
	for (i = 0; i < jc.n; i++) {
		if (jail_initctl_io(jc.v[i].pid, &bytes) == 0)
			sum += bytes;
		else if (errno == ENOENT || errno == ESRCH)
			continue;
		else if (jail_initctl_ending(jc.v[i].pid)) {
			z = xreallocarray(z, nz + 1, sizeof *z);
			z[nz++] = jc.v[i].pid;
		} else
			unread++;
	}
	if (nz > 0)
		jail_initctl_ending_wait(ic, z, nz);
	unread += jail_initctl_zombies(ic, z, nz);
	free(z);
	if (jail_initctl_self_io(ic, &bytes) == 0)
		sum += bytes;
	jail_initctl_say(ic, "i %" PRIu64 " %zu %u", sum, jc.n + 1, unread);
	free(jc.v);
}

static void
jail_initctl_request(struct jail_initctl *ic)
{
	char req;
	ssize_t n;

	n = util_recv(ic->sock, &req, 1, MSG_DONTWAIT);
	if (n == -1 && errno == EAGAIN)
		return;
	if (n != 1) {
		/* agentmux hung up: the parent-death signal comes next. */
		close(ic->sock);
		ic->sock = -1;
		return;
	}
	switch (req) {
	case JAIL_CTL_COUNT:
		jail_initctl_count(ic);
		break;
	case JAIL_CTL_STOP:
		jail_initctl_stop(ic);
		break;
	case JAIL_CTL_CONTINUE:
		jail_initctl_continue(ic);
		break;
	default:
		break;
	}
}

static void
jail_initctl_reap(struct jail_initctl *ic)
{
	pid_t r;
	int st;

	while ((r = waitpid(-1, &st, WNOHANG)) > 0) {
		if (r != ic->cmd)
			continue;
		/* Leaving takes down whatever the command left behind. */
		if (WIFSIGNALED(st))
			_exit(128 + WTERMSIG(st));
		_exit(WEXITSTATUS(st));
	}
}

static void
jail_initctl_signals(struct jail_initctl *ic)
{
	struct signalfd_siginfo si;

	while (read(ic->sfd, &si, sizeof si) == (ssize_t)sizeof si) {
		if (si.ssi_signo == SIGCHLD)
			jail_initctl_reap(ic);
		else if (!ic->held || si.ssi_signo != SIGCONT)
			kill(ic->cmd, (int)si.ssi_signo);
	}
}

/*
 * Before the command starts: every signal (all blocked already) comes
 * through a descriptor, and our I/O counters are opened while we can (see
 * jail_initctl_io).
 */
void
jail_initctl_prepare(struct jail_plan *p)
{
	sigset_t all;

	sigfillset(&all);
	if ((jail_ic.sfd = signalfd(-1, &all, SFD_NONBLOCK | SFD_CLOEXEC)) ==
	    -1)
		jail_child_fail(p, "cannot make the jail's init a signalfd");
	if ((jail_ic.self_io = open("/proc/self/io", O_RDONLY | O_CLOEXEC)) ==
	    -1)
		jail_child_fail(p, "cannot open the jail's /proc/self/io");
}

/*
 * The init keeps one capability, CAP_SYS_PTRACE, in the jail's own user
 * namespace only: /proc/PID/io of a process that made itself undumpable
 * (prctl, or exec of an unreadable file) is not readable without it, and
 * the count would miss what that process wrote. The init is undumpable
 * and cannot be traced or signalled from inside.
 */
void
jail_initctl_caps(struct jail_plan *p)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[2];

	memset(d, 0, sizeof d);
	d[CAP_TO_INDEX(CAP_SYS_PTRACE)].effective =
	    d[CAP_TO_INDEX(CAP_SYS_PTRACE)].permitted =
	    CAP_TO_MASK(CAP_SYS_PTRACE);
	if (syscall(SYS_capset, &h, d) == -1)
		jail_child_fail(p, "cannot drop the init's capabilities");
}

void
jail_initctl_loop(struct jail_plan *p, pid_t cmd)
{
	struct jail_initctl *ic = &jail_ic;
	struct pollfd pfd[2];
	int64_t left;

	ic->cmd = cmd;
	ic->sock = p->sock;
	for (;;) {
		pfd[0].fd = ic->sfd;
		pfd[0].events = POLLIN;
		pfd[1].fd = ic->sock;
		pfd[1].events = POLLIN;
		left = JAIL_HOLD_MS - (util_mono_us() - ic->checked_us) / 1000;
		if (poll(pfd, ic->sock != -1 ? 2 : 1, !ic->held ? -1 : left > 0 ?
		    (int)left : 0) == -1)
			pfd[0].revents = pfd[1].revents = 0;
		if (pfd[0].revents & POLLIN)
			jail_initctl_signals(ic);
		if (ic->sock != -1 && pfd[1].revents != 0)
			jail_initctl_request(ic);
		if (ic->held && util_mono_us() - ic->checked_us >=
		    JAIL_HOLD_MS * 1000LL)
			jail_initctl_hold(ic);
	}
}
