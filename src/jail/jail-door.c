/* A door into a running jail's network: a helper in its namespaces makes sockets there, for the host to connect from outside. */
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jail/jail-int.h"

/* What the helper answers: a socket, or the errno of a failure. */
#define JAIL_DOOR_SOCKET 's'
#define JAIL_DOOR_FAIL   'e'

/*
 * The helper tells the host why it failed, then ends: its errno as it is
 * (strerror may take locks of the server's threads), then WHAT.
 */
static void __attribute__((noreturn))
jail_door_die(int sock, const char *what)
{
	char tag = JAIL_DOOR_FAIL;
	int e = errno;
	struct iovec iov[3] = {
		{ .iov_base = &tag, .iov_len = 1 },
		{ .iov_base = &e, .iov_len = sizeof e },
		{ .iov_base = (void *)what, .iov_len = strlen(what) },
	};
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 3 };

	if (sendmsg(sock, &msg, MSG_NOSIGNAL) == -1)
		_exit(1);
	_exit(1);
}

/* Everything but the three descriptors it needs goes: none of them is the jail's business. */
static void
jail_door_close_others(int a, int b, int c)
{
	int keep[3] = { a, b, c }, t, i, j;
	unsigned from = 3;

	for (i = 0; i < 3; i++) {
		for (j = i + 1; j < 3; j++) {
			if (keep[j] < keep[i]) {
				t = keep[i];
				keep[i] = keep[j];
				keep[j] = t;
			}
		}
	}
	for (i = 0; i < 3; i++) {
		if ((unsigned)keep[i] > from)
			syscall(SYS_close_range, from, (unsigned)keep[i] - 1,
			    0U);
		if ((unsigned)keep[i] + 1 > from)
			from = (unsigned)keep[i] + 1;
	}
	syscall(SYS_close_range, from, ~0U, 0U);
}

/*
 * The helper, between fork and _exit: system calls only (the server has
 * threads, and a lock one held is held here forever). It joins the
 * jail's user namespace (where its user has the capabilities setns needs
 * over the jail's network) and network namespace, through the
 * descriptors the jail's init handed out, never its mounts or pids:
 * nothing in the jail can see it, and it runs nothing the jail names.
 * Each byte asks for one socket; it ends when the host closes.
 */
static void __attribute__((noreturn))
jail_door_main(int userns, int netns, int sock, pid_t parent)
{
	char c;
	ssize_t n;
	int fd;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) == -1 || getppid() != parent)
		_exit(1);
	prctl(PR_SET_DUMPABLE, 0);
	jail_door_close_others(userns, netns, sock);
	if (setns(userns, CLONE_NEWUSER) == -1 || setns(netns,
	    CLONE_NEWNET) == -1)
		jail_door_die(sock, "cannot enter the jail's network namespace");
	close(userns);
	close(netns);
	for (;;) {
		if ((n = util_recv(sock, &c, 1, 0)) == 0)
			_exit(0);
		if (n == -1)
			_exit(1);
		fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    0);
		if (fd == -1)
			jail_door_die(sock, "cannot create a socket in the jail");
		if (jail_send_fds(sock, "s", &fd, 1) == -1)
			_exit(1);
		close(fd);
	}
}

int
jail_door_open(struct jail *j, int *pidfd, char **cause)
{
	pid_t parent = getpid(), pid;
	int sv[2];

	*pidfd = -1;
	if (j->pid <= 0 || j->reaped) {
		*cause = xstrdup("the session's jail has ended");
		return -1;
	}
	if (j->ns_fds[0] == -1 || j->ns_fds[1] == -1) {
		*cause = xstrdup("the jail did not hand out its namespaces");
		return -1;
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == -1) {
		*cause = xprintf("cannot create a socket pair: %s",
		    strerror(errno));
		return -1;
	}
	if ((pid = fork()) == 0)
		jail_door_main(j->ns_fds[0], j->ns_fds[1], sv[1], parent);
	close(sv[1]);
	if (pid == -1) {
		*cause = xprintf("cannot fork the jail's door: %s",
		    strerror(errno));
		close(sv[0]);
		return -1;
	}
	if ((*pidfd = (int)syscall(SYS_pidfd_open, pid, 0)) != -1)
		util_set_cloexec(*pidfd);
	util_set_nonblock(sv[0]);
	return sv[0];
}

/* The socket an 's' answer carries, or -1; any more are closed. */
static int
jail_door_fd(struct msghdr *msg)
{
	int fd = -1;

	util_cmsg_take(msg, &fd, 1);
	return fd;
}

int
jail_door_recv(int door, int *fd, char **cause)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	char text[128] = "";
	struct iovec iov = { .iov_base = text, .iov_len = sizeof text - 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
	    .msg_control = u.buf, .msg_controllen = sizeof u.buf };
	ssize_t n;
	int e;

	*fd = -1;
	if ((n = util_recvmsg(door, &msg, MSG_CMSG_CLOEXEC)) == -1) {
		if (errno == EAGAIN)
			return 0;
		*cause = xprintf("the jail's door failed: %s", strerror(errno));
		return -1;
	}
	*fd = jail_door_fd(&msg);
	if (n >= 1 && text[0] == JAIL_DOOR_SOCKET && *fd != -1)
		return 1;
	if (*fd != -1)
		close(*fd);
	*fd = -1;
	text[n] = '\0';
	if (n > (ssize_t)(1 + sizeof e) && text[0] == JAIL_DOOR_FAIL) {
		memcpy(&e, text + 1, sizeof e);
		*cause = xprintf("%s: %s", text + 1 + sizeof e, strerror(e));
	} else
		*cause = xstrdup("the jail's door closed (the jail has ended)");
	return -1;
}
