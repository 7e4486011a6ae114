/* What may be jailed (the project dir) and whether this kernel lets us make a jail at all (user namespaces). */
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jail/jail-int.h"

/* Top-level system directories: jailing one read-write makes no sense. */
static const char *const jail_project_system[] = {
	"/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/proc",
	"/run", "/sbin", "/sys", "/tmp", "/usr", "/var", "/var/tmp",
};

/* The nearest directory from DIR up holding .git, like git's own discovery. */
static char *
jail_project_git_top(const char *dir)
{
	char *cur = xstrdup(dir), *git, *slash;
	struct stat st;

	for (;;) {
		git = xprintf("%s/.git", strcmp(cur, "/") == 0 ? "" : cur);
		if (lstat(git, &st) == 0) {
			free(git);
			return cur;
		}
		free(git);
		if (strcmp(cur, "/") == 0)
			break;
		slash = strrchr(cur, '/');
		if (slash == cur)
			slash[1] = '\0';
		else
			*slash = '\0';
	}
	free(cur);
	return NULL;
}

static int
jail_project_check(const char *dir, const char *home, char **cause)
{
	struct passwd *pw;
	struct stat st;
	size_t i;

	if (strcmp(dir, "/") == 0) {
		*cause = xstrdup("cannot jail /: the whole filesystem would be "
		    "writable; run agentmux from a project directory or pass "
		    "-C DIR");
		return -1;
	}
	if (home != NULL && strcmp(dir, home) == 0) {
		*cause = xprintf("cannot jail %s: it is your home directory; "
		    "run agentmux from a project directory or pass -C DIR",
		    dir);
		return -1;
	}
	for (i = 0; i < nitems(jail_project_system); i++) {
		if (strcmp(dir, jail_project_system[i]) == 0) {
			*cause = xprintf("cannot jail %s: it is a system "
			    "directory; run agentmux from a project directory "
			    "or pass -C DIR", dir);
			return -1;
		}
	}
	if (stat(dir, &st) == -1) {
		*cause = xprintf("cannot jail %s: %s", dir, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		*cause = xprintf("cannot jail %s: it is not a directory; pass "
		    "-C with a project directory", dir);
		return -1;
	}
	if (st.st_uid != getuid()) {
		pw = getpwuid(st.st_uid);
		*cause = xprintf("cannot jail %s: it belongs to %s (uid %lu), "
		    "not to you; jail a directory of your own, or copy the "
		    "project into one", dir, pw != NULL ? pw->pw_name : "?",
		    (unsigned long)st.st_uid);
		return -1;
	}
	return 0;
}

int
jail_project(const char *dir, char **real, char **cause)
{
	char *abs, *top, *home;

	*real = NULL;
	if ((abs = realpath(dir, NULL)) == NULL) {
		*cause = xprintf("cannot jail %s: %s; pass -C with an existing "
		    "project directory", dir, strerror(errno));
		return -1;
	}
	home = realpath(path_home(), NULL);
	/*
	 * A git repository around DIR is the project, unless that repository
	 * is the home directory or / itself (dotfiles): then DIR alone is.
	 */
	top = jail_project_git_top(abs);
	if (top != NULL && strcmp(top, abs) != 0 && (strcmp(top, "/") == 0 ||
	    (home != NULL && strcmp(top, home) == 0))) {
		free(top);
		top = NULL;
	}
	if (top != NULL) {
		free(abs);
		abs = top;
	}
	if (jail_project_check(abs, home, cause) == -1) {
		free(abs);
		free(home);
		return -1;
	}
	free(home);
	*real = abs;
	return 0;
}

/*
 * The real path of the dir PATH (absolute, as bound) is in, if PATH names
 * a socket file; else NULL. The caller frees it. The name as bound may go
 * through symlinks: its dir's real path is what a project is matched on.
 */
static char *
jail_socket_dir(const char *path)
{
	struct stat st;
	char *dir, *real;

	if (path[0] != '/' || lstat(path, &st) == -1 || !S_ISSOCK(st.st_mode))
		return NULL;
	dir = xstrndup(path, (size_t)(strrchr(path, '/') - path));
	real = realpath(dir[0] != '\0' ? dir : "/", NULL);
	free(dir);
	return real;
}

bool
jail_project_holds(const char *project, const char *dir)
{
	size_t n = strlen(project);

	return strncmp(dir, project, n) == 0 && (dir[n] == '/' ||
	    dir[n] == '\0');
}

void
jail_host_sockets(struct strv *paths, struct strv *dirs)
{
	char *line = NULL, *path, *dir;
	size_t cap = 0;
	int n;
	FILE *fp;

	if ((fp = fopen("/proc/net/unix", "re")) == NULL)
		return;
	while (getline(&line, &cap, fp) != -1) {
		line[strcspn(line, "\n")] = '\0';
		/* Num RefCount Protocol Flags Type St Inode Path */
		n = 0;
		if (sscanf(line, "%*s %*s %*s %*s %*s %*s %*s %n", &n) != 0 ||
		    n == 0 || line[n] == '\0')
			continue;
		path = line + n;
		if (strv_contains(paths, path) ||
		    (dir = jail_socket_dir(path)) == NULL)
			continue;
		strv_add(paths, path);
		strv_add(dirs, dir);
		free(dir);
	}
	free(line);
	fclose(fp);
}

void
jail_project_sockets(const char *project, struct strv *out)
{
	struct strv paths, dirs;
	size_t i;

	strv_init(&paths);
	strv_init(&dirs);
	jail_host_sockets(&paths, &dirs);
	for (i = 0; i < paths.n; i++) {
		if (jail_project_holds(project, dirs.v[i]) &&
		    !strv_contains(out, paths.v[i]))
			strv_add(out, paths.v[i]);
	}
	strv_free(&dirs);
	strv_free(&paths);
}

static long
jail_read_sysctl(const char *path)
{
	char buf[32];
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return strtol(buf, NULL, 10);
}

char *
jail_userns_hint(void)
{
	if (jail_read_sysctl("/proc/sys/kernel/unprivileged_userns_clone") ==
	    0)
		return xstrdup("unprivileged user namespaces are disabled; "
		    "enable them with 'sudo sysctl -w "
		    "kernel.unprivileged_userns_clone=1'");
	if (jail_read_sysctl(
	    "/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == 1)
		return xstrdup("AppArmor restricts unprivileged user "
		    "namespaces; allow them with 'sudo sysctl -w "
		    "kernel.apparmor_restrict_unprivileged_userns=0' or give "
		    "agentmux an AppArmor profile with 'userns,'");
	if (jail_read_sysctl("/proc/sys/user/max_user_namespaces") == 0)
		return xstrdup("user namespaces are disabled; enable them "
		    "with 'sudo sysctl -w user.max_user_namespaces=15000'");
	return NULL;
}

/* The probe child: map ourselves (UID, GID outside) and mount a tmpfs, as the jail will. */
static int
jail_probe_child(uid_t uid, gid_t gid)
{
	char map[64];
	int fd;

	if ((fd = open("/proc/self/setgroups", O_WRONLY)) == -1 ||
	    write(fd, "deny", 4) != 4)
		return 10;
	close(fd);
	snprintf(map, sizeof map, "%lu %lu 1\n", (unsigned long)uid,
	    (unsigned long)uid);
	if ((fd = open("/proc/self/uid_map", O_WRONLY)) == -1 ||
	    write(fd, map, strlen(map)) != (ssize_t)strlen(map))
		return 11;
	close(fd);
	snprintf(map, sizeof map, "%lu %lu 1\n", (unsigned long)gid,
	    (unsigned long)gid);
	if ((fd = open("/proc/self/gid_map", O_WRONLY)) == -1 ||
	    write(fd, map, strlen(map)) != (ssize_t)strlen(map))
		return 11;
	close(fd);
	if (mount(NULL, "/", NULL, MS_SLAVE | MS_REC, NULL) == -1 ||
	    mount("tmpfs", "/tmp", "tmpfs", 0, "size=4k") == -1)
		return 12;
	return 0;
}

int
jail_probe_userns(char **cause)
{
	uid_t uid = getuid();
	gid_t gid = getgid();
	char *hint;
	pid_t pid;
	int st;

	pid = (pid_t)syscall(SYS_clone, CLONE_NEWUSER | CLONE_NEWNS | SIGCHLD,
	    NULL, NULL, NULL, NULL);
	if (pid == 0)
		_exit(jail_probe_child(uid, gid));
	if (pid == -1) {
		int saved = errno;

		hint = jail_userns_hint();
		*cause = xprintf("cannot create a user namespace: %s%s%s",
		    strerror(saved), hint != NULL ? "; " : "",
		    hint != NULL ? hint : "");
		free(hint);
		return -1;
	}
	while (waitpid(pid, &st, 0) == -1 && errno == EINTR)
		;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	hint = jail_userns_hint();
	*cause = xprintf("user namespaces do not work here (%s failed)%s%s",
	    WIFEXITED(st) && WEXITSTATUS(st) == 12 ? "mounting" :
	    "mapping ids", hint != NULL ? "; " : "", hint != NULL ? hint : "");
	free(hint);
	return -1;
}
