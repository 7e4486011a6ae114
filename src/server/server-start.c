/* Starting the server for a client that finds none: its socket bound under a lock, then a process of its own. */
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "server-int.h"
#include "server.h"

/*
 * The server keeps its socket and directory as descriptors 3 and 4 and
 * nothing else of the shell that started it: a pipe or fifo the shell
 * held open would otherwise never see its end while the server runs.
 */
static void
server_start_fds(int *lfd, int *dirfd)
{
	int l, d, fd;

	if ((l = fcntl(*lfd, F_DUPFD_CLOEXEC, 10)) == -1 ||
	    (d = fcntl(*dirfd, F_DUPFD_CLOEXEC, 10)) == -1 ||
	    dup3(l, 3, O_CLOEXEC) == -1 || dup3(d, 4, O_CLOEXEC) == -1)
		_exit(1);
	if (syscall(SYS_close_range, 5U, ~0U, 0U) == -1) {
		for (fd = 5; fd < (int)sysconf(_SC_OPEN_MAX); fd++)
			close(fd);
	}
	*lfd = 3;
	*dirfd = 4;
}

/*
 * A client that starts the server on a second try has its own signals
 * set already (blocked, caught): the server starts from none of them,
 * else SIGTERM would never reach its loop.
 */
static void
server_start_signals(void)
{
	static const int sigs[] = { SIGWINCH, SIGHUP, SIGTERM };
	sigset_t none;
	size_t i;

	for (i = 0; i < nitems(sigs); i++)
		signal(sigs[i], SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

/* Forks the server on the listening socket LFD: it is nobody's child and has no terminal. */
static int
server_start_fork(int lfd, int dirfd, int lockfd, struct config *cf,
    const char *name, char **cause)
{
	pid_t pid;
	int status;

	switch ((pid = fork())) {
	case -1:
		*cause = xprintf("cannot start the server: fork: %s",
		    strerror(errno));
		return -1;
	case 0:
		close(lockfd);
		if (setsid() == -1 || (pid = fork()) == -1)
			_exit(1);
		if (pid != 0)
			_exit(0);
		server_start_signals();
		server_start_fds(&lfd, &dirfd);
		server_main(lfd, dirfd, cf, name);
	default:
		break;
	}
	while (waitpid(pid, &status, 0) == -1 && errno == EINTR)
		;
	return 0;
}

/* Starts the server (under a lock, so two clients do not both): its socket is bound here. */
static int
server_start_one(int dirfd, const struct sockaddr_un *sun,
    struct config *cf, const char *name, char **cause)
{
	char *lock = xprintf("%s.lock", name);
	int lockfd, lfd = -1, fd = -1;

	lockfd = openat(dirfd, lock, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
	    0600);
	free(lock);
	if (lockfd == -1 || flock(lockfd, LOCK_EX) == -1) {
		*cause = xprintf("cannot lock the server's socket directory: "
		    "%s", strerror(errno));
		goto out;
	}
	/* Another client may have started it meanwhile. */
	if ((fd = server_sock_connect(sun)) != -1)
		goto out;
	/* A socket nobody listens on is a dead server's. */
	unlinkat(dirfd, name, 0);
	if ((lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0)) == -1 ||
	    bind(lfd, (const struct sockaddr *)sun, sizeof *sun) == -1 ||
	    listen(lfd, 16) == -1) {
		*cause = xprintf("cannot listen on the server's socket: %s",
		    strerror(errno));
		goto out;
	}
	if (server_start_fork(lfd, dirfd, lockfd, cf, name, cause) == 0 &&
	    (fd = server_sock_connect(sun)) == -1)
		*cause = xprintf("cannot connect to the server just started: "
		    "%s", strerror(errno));
out:
	if (lfd != -1)
		close(lfd);
	if (lockfd != -1)
		close(lockfd);
	return fd;
}

int
server_client_attach(struct config *cf, const struct server_hello *h,
    char **cause)
{
	struct server_start st = { cf, server_start_one };

	return server_client_attach_as(&st, h, cause);
}

int
server_client_command(const char *name, struct config *cf, char *const *kv,
    char **cause)
{
	struct server_start st = { cf, server_start_one };

	return server_client_command_as(name, cf != NULL ? &st : NULL, kv,
	    cause);
}
