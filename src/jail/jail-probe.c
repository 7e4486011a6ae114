/* Probes of what this kernel lets a jail use, for agentmux doctor. */
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jail/jail-int.h"

int
jail_probe_landlock(void)
{
	return jail_landlock_abi();
}

int
jail_probe_seccomp(char **cause)
{
	uint32_t action = SECCOMP_RET_ERRNO;

	if (prctl(PR_GET_SECCOMP) == -1 && errno == EINVAL) {
		*cause = xstrdup("the kernel has no seccomp (CONFIG_SECCOMP); "
		    "use a kernel built with it");
		return -1;
	}
	if (syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) == -1) {
		*cause = xprintf("seccomp filters are not available: %s; use a "
		    "kernel with CONFIG_SECCOMP_FILTER", strerror(errno));
		return -1;
	}
	return (int)seccomp_api_get();
}

static int
jail_probe_write(const char *path, const char *text)
{
	int fd, rc;

	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) == -1)
		return -1;
	rc = util_write_all(fd, text, strlen(text));
	close(fd);
	return rc;
}

/* In a new user+mount namespace: overlay LOWER/UPPER/WORK on MERGED, write through it. */
static int
jail_probe_overlay_child(uid_t uid, gid_t gid, const char *dir)
{
	char map[64], *opts, *merged, *file, *upper_file;
	int fd;

	snprintf(map, sizeof map, "%ld %ld 1\n", (long)uid, (long)uid);
	if (jail_probe_write("/proc/self/uid_map", map) == -1)
		return 10;
	jail_probe_write("/proc/self/setgroups", "deny\n");
	snprintf(map, sizeof map, "%ld %ld 1\n", (long)gid, (long)gid);
	if (jail_probe_write("/proc/self/gid_map", map) == -1)
		return 10;
	opts = xprintf("lowerdir=%s/lower,upperdir=%s/upper,workdir=%s/work,"
	    "userxattr", dir, dir, dir);
	merged = xprintf("%s/merged", dir);
	if (mount("overlay", merged, "overlay", 0, opts) == -1)
		return 11;
	file = xprintf("%s/probe", merged);
	if ((fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0600)) == -1)
		return 12;
	close(fd);
	upper_file = xprintf("%s/upper/probe", dir);
	return access(upper_file, F_OK) == 0 ? 0 : 13;
}

int
jail_probe_overlay(char **cause)
{
	char tmpl[] = "/tmp/agentmux-overlay-probe.XXXXXX", *sub;
	static const char *const subs[] = { "lower", "upper", "work", "merged" };
	uid_t uid = getuid();
	gid_t gid = getgid();
	pid_t pid;
	size_t i;
	int st;

	if (mkdtemp(tmpl) == NULL) {
		*cause = xprintf("cannot make a probe dir in /tmp: %s",
		    strerror(errno));
		return -1;
	}
	for (i = 0; i < nitems(subs); i++) {
		sub = xprintf("%s/%s", tmpl, subs[i]);
		mkdir(sub, 0700);
		free(sub);
	}
	pid = (pid_t)syscall(SYS_clone, CLONE_NEWUSER | CLONE_NEWNS | SIGCHLD,
	    NULL, NULL, NULL, NULL);
	if (pid == 0)
		_exit(jail_probe_overlay_child(uid, gid, tmpl));
	st = 0;
	if (pid != -1)
		while (waitpid(pid, &st, 0) == -1 && errno == EINTR)
			;
	path_remove_tree(tmpl);
	if (pid == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		*cause = xprintf("overlayfs with userxattr does not work in a "
		    "user namespace here (%s); agent config dirs cannot be "
		    "overlaid: use a kernel >= 5.11 with CONFIG_OVERLAY_FS",
		    pid == -1 ? strerror(errno) : !WIFEXITED(st) ? "probe died" :
		    WEXITSTATUS(st) == 11 ? "the mount was refused" :
		    WEXITSTATUS(st) == 10 ? "no id map" : "writes did not reach "
		    "the upper dir");
		return -1;
	}
	return 0;
}

char *
jail_probe_limits(void)
{
	return jail_limits_describe();
}
