/* The command: its pty (from the jail's own devpts) or pipes, its session, its privileges dropped, exec. */
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <linux/capability.h>
#include <linux/securebits.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "jail/jail-int.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

/*
 * The pty comes from the jail's devpts instance, so the command's
 * ttyname() names a node that exists inside; the master goes out.
 */
int
jail_spawn_pty(struct jail_plan *p, int *slave)
{
	const struct jail_conf *c = p->conf;
	struct winsize ws = { .ws_row = c->rows, .ws_col = c->cols };
	int m, unlock = 0;

	if ((m = open("/dev/pts/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC)) == -1)
		jail_child_fail(p, "cannot open /dev/pts/ptmx in the jail");
	if (ioctl(m, TIOCSPTLCK, &unlock) == -1)
		jail_child_fail(p, "cannot unlock the jail's pty");
	if ((*slave = ioctl(m, TIOCGPTPEER, O_RDWR | O_NOCTTY |
	    O_CLOEXEC)) == -1)
		jail_child_fail(p, "cannot open the jail's pty");
	if (c->rows != 0 && c->cols != 0 && ioctl(m, TIOCSWINSZ, &ws) == -1)
		jail_child_fail(p, "cannot size the jail's pty");
	return m;
}

static void
jail_spawn_stdio(struct jail_plan *p, int slave)
{
	int i;

	if (setsid() == -1)
		jail_child_fail(p, "cannot start a session");
	if (slave != -1) {
		if (ioctl(slave, TIOCSCTTY, 0) == -1)
			jail_child_fail(p, "cannot make the pty the "
			    "controlling terminal");
		for (i = 0; i < 3; i++) {
			if (dup2(slave, i) == -1)
				jail_child_fail(p, "cannot attach the pty");
		}
		return;
	}
	for (i = 0; i < 3; i++) {
		if (dup2(p->pipes[i], i) == -1)
			jail_child_fail(p, "cannot attach the pipes");
	}
}

/* execve needs a path: look ARGV[0] up on the PATH the command will see. */
static void
jail_spawn_lookup(struct jail_plan *p, char *path, size_t len)
{
	const char *name = p->conf->argv[0], *s, *e;
	struct stat st;

	if (strchr(name, '/') != NULL) {
		snprintf(path, len, "%s", name);
		return;
	}
	for (s = p->exec_path_env; *s != '\0'; s = *e == ':' ? e + 1 : e) {
		e = strchrnul(s, ':');
		snprintf(path, len, "%.*s/%s", (int)(e - s), e == s ? "." : s,
		    name);
		if (stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
		    access(path, X_OK) == 0)
			return;
	}
	jail_child_failx(p, "%s: command not found in the jail (PATH=%s); "
	    "install it where the jail can see it (/usr, the project) or "
	    "bind its directory", name, p->exec_path_env);
}

/*
 * Privileges go in this order: bounding set and securebits need
 * CAP_SETPCAP, Landlock needs no_new_privs; the capability sets last.
 */
static void
jail_spawn_drop_bounding(struct jail_plan *p)
{
	int cap;

	for (cap = 0; cap <= 63; cap++) {
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == -1) {
			if (errno == EINVAL)
				break;
			jail_child_fail(p, "cannot drop capability %d", cap);
		}
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) == -1)
		jail_child_fail(p, "cannot clear the ambient capabilities");
	/* Root inside must not get capabilities back by exec. */
	if (prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED |
	    SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED |
	    SECBIT_KEEP_CAPS_LOCKED, 0, 0, 0) == -1)
		jail_child_fail(p, "cannot lock the securebits");
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1)
		jail_child_fail(p, "cannot set no_new_privs");
}

void
jail_spawn_capset_zero(struct jail_plan *p)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[2];

	memset(d, 0, sizeof d);
	if (syscall(SYS_capset, &h, d) == -1)
		jail_child_fail(p, "cannot drop the capabilities");
}

void
jail_spawn_exec(struct jail_plan *p, int slave)
{
	const struct jail_conf *c = p->conf;
	char path[PATH_MAX];
	sigset_t none;

	jail_spawn_stdio(p, slave);
	/* Everything else closes on exec, the status channel included. */
	if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) == -1)
		jail_child_fail(p, "cannot mark descriptors close-on-exec");
	if (chdir(p->cwd) == -1)
		jail_child_fail(p, "cannot enter %s in the jail", p->cwd);
	/* What the command makes in the project gets the user's umask, not agentmux's own (077). */
	umask(util_user_umask());
	jail_spawn_lookup(p, path, sizeof path);
	jail_limits_rlimits(p);
	jail_spawn_drop_bounding(p);
	jail_landlock_apply(p);
	jail_spawn_capset_zero(p);
	jail_seccomp_install(p);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	execve(path, c->argv, c->envp);
	jail_child_fail(p, "cannot run %s in the jail", path);
}
