/* The jail's pid 1: runs the setup script, starts the command, then reaps, forwards signals and answers agentmux (jail-initctl.c). */
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jail/jail-int.h"

static int
jail_init_intcmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return x < y ? -1 : x > y;
}

/* Closes every descriptor inherited from agentmux except those the jail needs. */
static void
jail_init_close_fds(struct jail_plan *p)
{
	int keep[5], n = 0, i, from = 3;

	keep[n++] = p->sock;
	for (i = 0; i < 3; i++) {
		if (p->pipes[i] != -1)
			keep[n++] = p->pipes[i];
	}
	qsort(keep, (size_t)n, sizeof keep[0], jail_init_intcmp);
	for (i = 0; i < n; i++) {
		if (keep[i] > from)
			syscall(SYS_close_range, (unsigned)from,
			    (unsigned)keep[i] - 1, 0U);
		if (keep[i] >= from)
			from = keep[i] + 1;
	}
	syscall(SYS_close_range, (unsigned)from, ~0U, 0U);
}

static void
jail_init_early(struct jail_plan *p)
{
	struct pollfd pfd = { .fd = p->sock, .events = 0 };
	struct sigaction sa;
	sigset_t all;
	int sig;

	/* If agentmux dies, pid 1 dies, and with it the whole namespace. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) == -1)
		jail_child_fail(p, "cannot set the parent-death signal");
	/* It may have died before we asked. */
	if (poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLHUP))
		_exit(127);
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	/* Ignored signals stay ignored across exec: start from the defaults. */
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = SIG_DFL;
	for (sig = 1; sig < NSIG; sig++)
		sigaction(sig, &sa, NULL);
	jail_init_close_fds(p);
}

/*
 * Waits for agentmux's go: by then we sit in our cgroup, and the message
 * carries the seccomp program the command will install.
 */
static void
jail_init_wait_release(struct jail_plan *p)
{
	struct iovec iov[2];
	struct msghdr mh;
	char tag = '\0';
	ssize_t n;

	iov[0].iov_base = &tag;
	iov[0].iov_len = 1;
	iov[1].iov_base = p->seccomp_buf;
	iov[1].iov_len = JAIL_SECCOMP_MAX * sizeof *p->seccomp_buf;
	memset(&mh, 0, sizeof mh);
	mh.msg_iov = iov;
	mh.msg_iovlen = 2;
	n = util_recvmsg(p->sock, &mh, 0);
	if (n < 1 || tag != 'G' || (n - 1) % sizeof *p->seccomp_buf != 0)
		_exit(127);
	p->seccomp.filter = p->seccomp_buf;
	p->seccomp.len = (unsigned short)((size_t)(n - 1) /
	    sizeof *p->seccomp_buf);
}

/*
 * Our memory still holds agentmux's environment (it may name secrets); the
 * command cannot read /proc/1/environ, but there is no reason to keep it.
 */
static void
jail_init_wipe_env(void)
{
	unsigned long start = 0, end = 0;
	char buf[4096], *s;
	ssize_t n;
	int fd, field;

	if ((fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC)) == -1)
		return;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0 || (buf[n] = '\0', s = strrchr(buf, ')')) == NULL)
		return;
	/* Fields 50 and 51 are env_start and env_end; s points at field 2's end. */
	for (field = 2; s != NULL && field < 51; field++) {
		if ((s = strchr(s + 1, ' ')) == NULL)
			return;
		if (field + 1 == 50)
			start = strtoul(s + 1, NULL, 10);
		else if (field + 1 == 51)
			end = strtoul(s + 1, NULL, 10);
	}
	if (start != 0 && end > start && end - start < (1UL << 24))
		memset((void *)start, 0, end - start);
}

static void
jail_init_drop(struct jail_plan *p, pid_t cmd)
{
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == -1 ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1) {
		kill(cmd, SIGKILL);
		jail_child_fail(p, "cannot restrict the jail's init");
	}
	jail_initctl_caps(p);
	jail_init_wipe_env();
}

/*
 * The command shares our memory until it execs (vfork, like posix_spawn):
 * our pages are agentmux's, and copying their tables for a process that
 * execs at once is most of a fork's cost. We wait meanwhile; it never
 * returns here (it execs or exits) and changes only its own kernel state.
 */
static pid_t
jail_init_spawn(struct jail_plan *p, int slave)
{
	pid_t pid;

	if ((pid = vfork()) == 0)
		jail_spawn_exec(p, slave); /* NOLINT(clang-analyzer-unix.Vfork) */
	return pid;
}

/*
 * Hands agentmux the jail's user and network namespaces, for reaching the
 * jail's loopback later (jail-door.c). Opened now, on itself: the init
 * is soon not dumpable, and then an ordinary user's agentmux could no
 * longer open them through /proc/PID/ns.
 */
static void
jail_init_send_ns(struct jail_plan *p)
{
	int fds[2];

	if ((fds[0] = open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC)) == -1 ||
	    (fds[1] = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC)) == -1)
		jail_child_fail(p, "cannot open the jail's namespaces");
	if (jail_send_fds(p->sock, "U", fds, 2) == -1)
		jail_child_fail(p, "cannot hand the jail's namespaces out");
	close(fds[0]);
	close(fds[1]);
}

void
jail_init_main(struct jail_plan *p)
{
	int fds[3], n = 0, slave = -1;
	char *cause = NULL;
	pid_t cmd;

	jail_init_early(p);
	jail_ns_ids(p);
	jail_init_send_ns(p);
	/*
	 * Planned here, not in agentmux: this overlaps with the parent's
	 * share (cgroups, the seccomp program) instead of delaying the clone.
	 */
	if (jail_mount_plan(p, &cause) == -1)
		jail_child_failx(p, "%s", cause);
	jail_mount_setup(p);
	jail_ns_uts(p);
	fds[n++] = jail_net_listen(p);
	if (p->conf->transparent) {
		int nfds[3];

		jail_redirect_setup(p, nfds);
		if (jail_send_fds(p->sock, "N", nfds, 3) == -1)
			jail_child_fail(p, "cannot hand the jail's resolver "
			    "sockets out");
		close(nfds[0]);
		close(nfds[1]);
		close(nfds[2]);
	}
	/* The host reads the agent's config files here after the jail is gone. */
	if ((fds[n++] = open(p->conf->home, O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) == -1)
		jail_child_fail(p, "cannot open the jail's home %s",
		    p->conf->home);
	if (p->conf->pty)
		fds[n++] = jail_spawn_pty(p, &slave);
	if (jail_send_fds(p->sock, "F", fds, n) == -1)
		jail_child_fail(p, "cannot hand the jail's descriptors out");
	while (n > 0)
		close(fds[--n]);
	jail_init_wait_release(p);
	if (unshare(CLONE_NEWCGROUP) == -1)
		jail_child_fail(p, "cannot create the cgroup namespace");
	jail_initctl_prepare(p);
	if ((cmd = jail_init_spawn(p, slave)) == -1)
		jail_child_fail(p, "cannot start the command");
	if (slave != -1)
		close(slave);
	for (n = 0; n < 3; n++) {
		if (p->pipes[n] != -1)
			close(p->pipes[n]);
	}
	jail_init_drop(p, cmd);
	/*
	 * The command has exec'd, or failed and said so on this channel
	 * before it exited: either way agentmux hears it before this.
	 */
	send(p->sock, "R", 1, MSG_NOSIGNAL);
	jail_initctl_loop(p, cmd);
}
