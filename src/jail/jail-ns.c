/* Namespaces: clone into new user/mount/pid/net/ipc/uts namespaces and map the caller's ids to themselves. */
#include <sys/syscall.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jail/jail-int.h"

/*
 * The cgroup namespace is unshared by the child once it sits in its own
 * cgroup (jail-init.c), so that the namespace is rooted there.
 */
#define JAIL_NS_FLAGS (CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | \
    CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS)

pid_t
jail_ns_clone(struct jail_plan *p, char **cause)
{
	char *hint;
	pid_t pid;

	/*
	 * Like fork(2), but into the new namespaces: the child is pid 1. It
	 * runs our code, malloc included, until it execs: no helper thread
	 * may hold a lock in that moment (core-thread.c).
	 */
	clone_gate_close();
	pid = (pid_t)syscall(SYS_clone, JAIL_NS_FLAGS | SIGCHLD, NULL, NULL,
	    NULL, NULL);
	if (pid == 0)
		jail_init_main(p);
	clone_gate_open();
	if (pid == -1) {
		int saved = errno;

		hint = jail_userns_hint();
		*cause = xprintf("cannot create the jail's namespaces: %s%s%s",
		    strerror(saved), hint != NULL ? "; " : "",
		    hint != NULL ? hint : "");
		free(hint);
	}
	return pid;
}

static void
jail_ns_write(struct jail_plan *p, const char *file, const char *text)
{
	size_t len = strlen(text);
	int fd;

	if ((fd = open(file, O_WRONLY | O_CLOEXEC)) == -1)
		jail_child_fail(p, "cannot open %s", file);
	if (write(fd, text, len) != (ssize_t)len)
		jail_child_fail(p, "cannot write %s", file);
	close(fd);
}

void
jail_ns_ids(struct jail_plan *p)
{
	/* Denying setgroups is what lets an ordinary user write gid_map. */
	jail_ns_write(p, "/proc/self/setgroups", "deny");
	jail_ns_write(p, "/proc/self/uid_map", p->uid_map);
	jail_ns_write(p, "/proc/self/gid_map", p->gid_map);
}

void
jail_ns_uts(struct jail_plan *p)
{
	const char *name = p->conf->hostname != NULL ? p->conf->hostname :
	    "agentmux";

	if (sethostname(name, strlen(name)) == -1)
		jail_child_fail(p, "cannot set the jail's hostname");
}
