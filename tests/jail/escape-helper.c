/*
 * amx-escape: one escape attempt per run, made from inside a jail by the
 * escape suite. Prints "ESCAPED: ..." and exits 0 when the attempt worked,
 * "BLOCKED: ..." and exits 1 when it did not, exits 2 on bad usage.
 */
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <arpa/inet.h>
#include <linux/bpf.h>
#include <linux/keyctl.h>
#include <linux/netlink.h>
#include <linux/perf_event.h>
#include <netdb.h>
#include <netinet/in.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

static int
escaped(const char *fmt, ...)
{
	va_list ap;

	printf("ESCAPED: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	return 0;
}

static int
blocked(const char *what)
{
	printf("BLOCKED: %s: %s\n", what, strerror(errno));
	return 1;
}

/* A syscall refused with exactly EXPECT (else the filter did not catch it). */
static int
refused(long rc, const char *what, int expect)
{
	if (rc != -1)
		return escaped("%s succeeded", what);
	if (errno != expect) {
		printf("UNEXPECTED: %s failed with %s, not %s\n", what,
		    strerror(errno), strerror(expect));
		return 3;
	}
	return blocked(what);
}

static int
do_read(const char *path)
{
	char buf[256];
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDONLY)) == -1)
		return blocked(path);
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n < 0)
		return blocked(path);
	buf[n] = '\0';
	return escaped("read %s: %.40s", path, buf);
}

static int
do_write(const char *path)
{
	int fd;

	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644)) == -1)
		return blocked(path);
	if (write(fd, "pwned\n", 6) != 6) {
		close(fd);
		return blocked(path);
	}
	close(fd);
	return escaped("wrote %s", path);
}

static int
do_append(const char *path)
{
	int fd;

	if ((fd = open(path, O_WRONLY | O_APPEND)) == -1)
		return blocked(path);
	if (write(fd, "pwned\n", 6) != 6) {
		close(fd);
		return blocked(path);
	}
	close(fd);
	return escaped("appended to %s", path);
}

static int
do_connect(int fam, struct sockaddr *sa, socklen_t len, const char *what)
{
	int fd = socket(fam, SOCK_STREAM, 0);

	if (fd == -1)
		return blocked("socket");
	if (connect(fd, sa, len) == -1) {
		close(fd);
		return blocked(what);
	}
	close(fd);
	return escaped("connected to %s", what);
}

static int
do_tcp(const char *host, const char *port)
{
	struct sockaddr_in sin;

	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)atoi(port));
	if (inet_pton(AF_INET, host, &sin.sin_addr) != 1)
		return 2;
	return do_connect(AF_INET, (struct sockaddr *)&sin, sizeof sin, host);
}

static int
do_unix(const char *path, int abstract)
{
	struct sockaddr_un sun;
	socklen_t len;

	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	if (abstract) {
		snprintf(sun.sun_path + 1, sizeof sun.sun_path - 1, "%s", path);
		len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
		    strlen(path));
	} else {
		snprintf(sun.sun_path, sizeof sun.sun_path, "%s", path);
		len = sizeof sun;
	}
	return do_connect(AF_UNIX, (struct sockaddr *)&sun, len, path);
}

/*
 * A name resolves to nothing real: not at all, or (transparent
 * interception) only to agentmux's synthetic addresses, 198.18.0.0/15.
 */
static int
do_resolve(const char *name)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai, *i;
	struct sockaddr_in *sin;
	int rc;

	if ((rc = getaddrinfo(name, "443", &hints, &ai)) != 0) {
		printf("BLOCKED: resolve %s: %s\n", name, gai_strerror(rc));
		return 1;
	}
	for (i = ai; i != NULL; i = i->ai_next) {
		sin = (struct sockaddr_in *)i->ai_addr;
		if (i->ai_family != AF_INET || (ntohl(sin->sin_addr.s_addr) &
		    0xfffe0000U) != 0xc6120000U) {
			freeaddrinfo(ai);
			return escaped("resolved %s to a real address", name);
		}
	}
	freeaddrinfo(ai);
	printf("BLOCKED: %s resolves only to agentmux's synthetic addresses\n",
	    name);
	return 1;
}

static int
do_socket(int fam, int type, int proto, const char *what)
{
	int fd = socket(fam, type, proto);

	if (fd == -1)
		return blocked(what);
	close(fd);
	return escaped("opened a %s socket", what);
}

static int
do_ptrace(void)
{
	pid_t pid = fork();
	long rc;
	int st;

	if (pid == 0) {
		pause();
		_exit(0);
	}
	rc = ptrace(PTRACE_ATTACH, pid, NULL, NULL);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return refused(rc, "ptrace attach", EPERM);
}

static int
do_tiocsti(void)
{
	char c = 'x';
	int m, s;

	/* A pty of our own: a failure here would prove nothing about the filter. */
	if ((m = posix_openpt(O_RDWR | O_NOCTTY)) == -1 || grantpt(m) == -1 ||
	    unlockpt(m) == -1 || (s = open(ptsname(m), O_RDWR)) == -1)
		return blocked("opening a pty to test with");
	if (ioctl(s, TIOCSTI, &c) != -1)
		return escaped("TIOCSTI on a pty");
	if (errno != EPERM)
		return refused(-1, "TIOCSTI", EPERM);
	/* The kernel reads the request as 32 bits; high bits must not slip by. */
	if (syscall(SYS_ioctl, s, (unsigned long)TIOCSTI | (1UL << 32), &c) !=
	    -1)
		return escaped("TIOCSTI with high bits set");
	return refused(-1, "TIOCSTI", EPERM);
}

static int
do_tioclinux(void)
{
	char sub = 6;   /* TIOCL_GETSHIFTSTATE: harmless, but refused all the same */
	int m;

	if ((m = posix_openpt(O_RDWR | O_NOCTTY)) == -1)
		return blocked("opening a pty to test with");
	return refused(ioctl(m, TIOCLINUX, &sub), "TIOCLINUX", EPERM);
}

/* The i386 entry point from a 64-bit process: the filter must kill us. */
static int
do_int80(void)
{
#if defined(__x86_64__)
	long rc = 20;   /* getpid on i386 */

	__asm__ volatile ("int $0x80" : "+a"(rc) : : "memory");
	return escaped("an i386 syscall returned %ld", rc);
#else
	printf("SKIP: not x86_64\n");
	return 4;
#endif
}

/*
 * A TCP server of the jail's own on another port than the proxy's:
 * Landlock (ABI 4 and later) lets the jail connect to the proxy port only.
 */
static int
do_selfconnect(const char *port)
{
	struct sockaddr_in sin;
	long abi;
	int l;

	abi = syscall(SYS_landlock_create_ruleset, NULL, 0, 1U);
	if (abi < 4) {
		printf("SKIP: Landlock ABI %ld has no network rules\n", abi);
		return 4;
	}
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)atoi(port));
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((l = socket(AF_INET, SOCK_STREAM, 0)) == -1 ||
	    bind(l, (struct sockaddr *)&sin, sizeof sin) == -1 ||
	    listen(l, 1) == -1)
		return blocked("listening inside the jail");
	return do_connect(AF_INET, (struct sockaddr *)&sin, sizeof sin,
	    "a listener inside the jail");
}

static int
do_forks(int n)
{
	pid_t pid;
	int i;

	for (i = 0; i < n; i++) {
		if ((pid = fork()) == -1) {
			printf("BLOCKED: fork %d of %d: %s\n", i + 1, n,
			    strerror(errno));
			return 1;
		}
		if (pid == 0) {
			pause();
			_exit(0);
		}
	}
	return escaped("forked %d processes", n);
}

static int
do_alloc(int mib)
{
	char *p;
	int i;

	for (i = 0; i < mib; i += 8) {
		if ((p = malloc(8 << 20)) == NULL) {
			printf("BLOCKED: allocation stopped at %d MiB\n", i);
			return 1;
		}
		memset(p, 1, 8 << 20);
	}
	/* Kept on purpose: the point is to hold as much as the limit allows. */
	/* NOLINTNEXTLINE(clang-analyzer-unix.Malloc) */
	return escaped("allocated %d MiB", mib);
}

static int
do_fill(const char *path, int mib)
{
	static char buf[1 << 20];
	int fd, i;

	signal(SIGXFSZ, SIG_IGN);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644)) == -1)
		return blocked(path);
	for (i = 0; i < mib; i++) {
		if (write(fd, buf, sizeof buf) != (ssize_t)sizeof buf) {
			printf("BLOCKED: writing stopped at %d MiB: %s\n", i,
			    strerror(errno));
			close(fd);
			unlink(path);
			return 1;
		}
	}
	close(fd);
	unlink(path);
	return escaped("wrote %d MiB to %s", mib, path);
}

/* Writes MIB files of 1 MiB each into DIR; ESCAPED if all of them were written. */
static int
write_files(const char *dir, int mib)
{
	static char buf[1 << 20];
	char path[4096];
	int fd, i;

	for (i = 0; i < mib; i++) {
		snprintf(path, sizeof path, "%s/w%d", dir, i);
		if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644)) == -1)
			return blocked(path);
		if (write(fd, buf, sizeof buf) != (ssize_t)sizeof buf) {
			close(fd);
			return blocked(path);
		}
		close(fd);
		usleep(10000);
	}
	return escaped("wrote %d MiB to %s", mib, dir);
}

/* The same, once the process's counters are out of an ordinary user's reach. */
static int
do_undumpable(const char *dir, int mib)
{
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == -1)
		return blocked("prctl(PR_SET_DUMPABLE)");
	return write_files(dir, mib);
}

/*
 * A process that has SIGCONT sent to it from outside the jail (the
 * kernel, as lines are typed on its terminal: F_SETSIG on /dev/tty) and
 * by a timer, and stops itself again after each beat into FILE, so that
 * it is seen stopped nearly whenever one looks; for up to 60 s. A frozen
 * session must not see it beat however much is typed.
 */
static void
on_cont(int sig)
{
	(void)sig;
}

static int
selfcont_tty(void)
{
	int fd;

	/* A tty gives O_ASYNC to its foreground group: take it back after. */
	if ((fd = open("/dev/tty", O_RDONLY | O_NOCTTY)) == -1 ||
	    fcntl(fd, F_SETSIG, SIGCONT) == -1 ||
	    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_ASYNC) == -1 ||
	    fcntl(fd, F_SETOWN, getpid()) == -1)
		return -1;
	return 0;
}

static int
do_selfcont(const char *file)
{
	struct sigevent sev;
	struct itimerspec its;
	struct sigaction sa;
	timer_t tm;
	int fd, i;

	/* A signal ignored (SIGCONT's default) would park the timer. */
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_cont;
	sigaction(SIGCONT, &sa, NULL);
	if (selfcont_tty() == -1)
		return blocked("F_SETSIG on /dev/tty");
	memset(&sev, 0, sizeof sev);
	sev.sigev_notify = SIGEV_SIGNAL;
	sev.sigev_signo = SIGCONT;
	memset(&its, 0, sizeof its);
	its.it_value.tv_nsec = its.it_interval.tv_nsec = 1000000;
	if (timer_create(CLOCK_MONOTONIC, &sev, &tm) == -1 ||
	    timer_settime(tm, 0, &its, NULL) == -1)
		return blocked("timer_create");
	if ((fd = open(file, O_WRONLY | O_CREAT | O_APPEND, 0644)) == -1)
		return blocked(file);
	for (i = 0; i < 60000; i++) {
		if (write(fd, ".", 1) != 1)
			return blocked(file);
		raise(SIGSTOP);
	}
	return escaped("beat for 60 s");
}

static int
do_grep(const char *path, const char *needle)
{
	char buf[65536];
	ssize_t n, i;
	int fd;

	if ((fd = open(path, O_RDONLY)) == -1)
		return blocked(path);
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n < 0)
		return blocked(path);
	for (i = 0; i < n; i++) {
		if (buf[i] == '\0')
			buf[i] = '\n';
	}
	buf[n] = '\0';
	if (strstr(buf, needle) != NULL)
		return escaped("found the secret in %s", path);
	printf("BLOCKED: %s does not hold the secret\n", path);
	return 1;
}

static int
do_clone_ns(void)
{
	long rc = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, NULL, NULL,
	    NULL, NULL);

	if (rc == 0)
		_exit(0);
	if (rc > 0) {
		waitpid((pid_t)rc, NULL, 0);
		return escaped("cloned into a new user namespace");
	}
	return refused(rc, "clone(CLONE_NEWUSER)", EPERM);
}

static int
do_clone3(void)
{
	uint64_t args[11];
	long rc;

	memset(args, 0, sizeof args);
	args[0] = CLONE_NEWUSER;   /* flags */
	args[4] = SIGCHLD;         /* exit_signal */
	rc = syscall(SYS_clone3, args, 88);
	if (rc == 0)
		_exit(0);
	if (rc > 0) {
		waitpid((pid_t)rc, NULL, 0);
		return escaped("clone3 into a new user namespace");
	}
	return refused(rc, "clone3", ENOSYS);
}

static int
do_perf(void)
{
	struct perf_event_attr attr;

	memset(&attr, 0, sizeof attr);
	attr.size = sizeof attr;
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_CPU_CLOCK;
	return refused(syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0),
	    "perf_event_open", EPERM);
}

static int
do_bpf(void)
{
	union bpf_attr attr;

	memset(&attr, 0, sizeof attr);
	attr.map_type = BPF_MAP_TYPE_ARRAY;
	attr.key_size = 4;
	attr.value_size = 4;
	attr.max_entries = 1;
	return refused(syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof attr),
	    "bpf", EPERM);
}

static int
do_kill(const char *pid, const char *sig)
{
	if (kill((pid_t)atoi(pid), atoi(sig)) == -1)
		return blocked("kill");
	return escaped("signalled %s", pid);
}

static int
do_stat(const char *path)
{
	struct stat st;

	if (stat(path, &st) == -1)
		return blocked(path);
	return escaped("%s exists", path);
}

/* DIR/NAME has a set-uid or set-gid bit. */
static int
setid_in(const char *dir, const char *name)
{
	char path[4096];
	struct stat st;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	return lstat(path, &st) == 0 && (st.st_mode & (S_ISUID | S_ISGID));
}

/*
 * Every way to give a file in DIR a set-uid or set-gid mode: creating it
 * so (open, openat, creat, mknod, openat2) and changing it (chmod, fchmod,
 * fchmodat, fchmodat2).
 */
static int
do_setid(const char *dir)
{
	static const char *const names[] = { "open", "openat", "creat",
	    "mknod", "openat2", "chmod", "fchmod", "fchmodat", "fchmodat2",
	    "chmod-gid" };
	struct { uint64_t flags, mode, resolve; } how;
	char path[4096];
	size_t i;
	int fd, dfd;

	if ((dfd = open(dir, O_RDONLY | O_DIRECTORY)) == -1)
		return blocked(dir);
	snprintf(path, sizeof path, "%s/open", dir);
	if ((fd = open(path, O_WRONLY | O_CREAT, 04755)) != -1)
		close(fd);
	if ((fd = openat(dfd, "openat", O_WRONLY | O_CREAT, 02755)) != -1)
		close(fd);
	snprintf(path, sizeof path, "%s/creat", dir);
	if ((fd = creat(path, 04755)) != -1)
		close(fd);
	snprintf(path, sizeof path, "%s/mknod", dir);
	mknod(path, S_IFREG | 04755, 0);
	memset(&how, 0, sizeof how);
	how.flags = O_WRONLY | O_CREAT;
	how.mode = 04755;
	if ((fd = (int)syscall(437, dfd, "openat2", &how, sizeof how)) != -1)
		close(fd);
	for (i = 5; i < sizeof names / sizeof names[0]; i++) {
		if ((fd = openat(dfd, names[i], O_WRONLY | O_CREAT, 0755)) != -1)
			close(fd);
	}
	snprintf(path, sizeof path, "%s/chmod", dir);
	chmod(path, 04755);
	if ((fd = openat(dfd, "fchmod", O_RDONLY)) != -1) {
		fchmod(fd, 04755);
		close(fd);
	}
	fchmodat(dfd, "fchmodat", 04755, 0);
	syscall(452, dfd, "fchmodat2", 04755, 0);
	snprintf(path, sizeof path, "%s/chmod-gid", dir);
	chmod(path, 02755);
	for (i = 0; i < sizeof names / sizeof names[0]; i++) {
		if (setid_in(dir, names[i]))
			return escaped("made %s/%s set-uid or set-gid", dir,
			    names[i]);
	}
	close(dfd);
	errno = EPERM;
	return blocked("set-uid and set-gid modes");
}

/* A default ACL of u::rwx g::rwx o::rwx, as the kernel reads it (version 2). */
static size_t
acl_world(unsigned char *v)
{
	static const uint16_t tags[] = { 0x01, 0x04, 0x20 };
	uint32_t version = 2, id = 0xffffffffu;
	uint16_t perm = 7;
	size_t i, n = 0;

	memcpy(v, &version, 4);
	n = 4;
	for (i = 0; i < 3; i++) {
		memcpy(v + n, &tags[i], 2);
		memcpy(v + n + 2, &perm, 2);
		memcpy(v + n + 4, &id, 4);
		n += 8;
	}
	return n;
}

/*
 * Every way to set or remove an extended attribute under DIR: a default
 * ACL that makes later files world-writable through setxattr, lsetxattr,
 * fsetxattr and setxattrat; a user attribute; removing one (which fails
 * with ENODATA where the call goes through). Each must fail with ENOTSUP.
 */
static int
do_xattr(const char *dir)
{
	static const char *const names[] = { "setxattr", "lsetxattr",
	    "fsetxattr", "setxattrat", "user", "removexattr", "lremovexattr",
	    "fremovexattr", "removexattrat" };
	struct { uint64_t value; uint32_t size, flags; } args;
	const char *acl = "system.posix_acl_default";
	unsigned char v[64];
	char path[4096];
	long rc[9];
	size_t n = acl_world(v), i;
	int err[9], fd;

	if ((fd = open(dir, O_RDONLY | O_DIRECTORY)) == -1)
		return blocked(dir);
	snprintf(path, sizeof path, "%s/file", dir);
	close(open(path, O_WRONLY | O_CREAT, 0644));
	memset(&args, 0, sizeof args);
	args.value = (uint64_t)(uintptr_t)v;
	args.size = (uint32_t)n;
#define TRY(k, call) (errno = 0, rc[k] = (call), err[k] = errno)
	TRY(0, syscall(SYS_setxattr, dir, acl, v, n, 0));
	TRY(1, syscall(SYS_lsetxattr, dir, acl, v, n, 0));
	TRY(2, syscall(SYS_fsetxattr, fd, acl, v, n, 0));
	TRY(3, syscall(463, fd, "", AT_EMPTY_PATH, acl, &args, sizeof args));
	TRY(4, syscall(SYS_setxattr, path, "user.amx", "x", 1, 0));
	TRY(5, syscall(SYS_removexattr, path, "user.amx-none"));
	TRY(6, syscall(SYS_lremovexattr, path, "user.amx-none"));
	TRY(7, syscall(SYS_fremovexattr, fd, "user.amx-none"));
	TRY(8, syscall(466, fd, "", AT_EMPTY_PATH, "user.amx-none"));
#undef TRY
	close(fd);
	for (i = 0; i < 9; i++) {
		if (rc[i] == 0)
			return escaped("%s under %s worked", names[i], dir);
	}
	for (i = 0; i < 9; i++) {
		if (err[i] != ENOTSUP) {
			printf("WRONG: %s under %s failed with %s, not ENOTSUP\n",
			    names[i], dir, strerror(err[i]));
			return 3;
		}
	}
	errno = ENOTSUP;
	return blocked("setting and removing extended attributes");
}

int
main(int argc, char **argv)
{
	const char *c = argc > 1 ? argv[1] : "";
	const char *a = argc > 2 ? argv[2] : "", *b = argc > 3 ? argv[3] : "";

	setvbuf(stdout, NULL, _IONBF, 0);
	if (strcmp(c, "read") == 0)
		return do_read(a);
	if (strcmp(c, "write") == 0)
		return do_write(a);
	if (strcmp(c, "append") == 0)
		return do_append(a);
	if (strcmp(c, "mkdir") == 0)
		return mkdir(a, 0755) == 0 ? escaped("made %s", a) : blocked(a);
	if (strcmp(c, "rename") == 0)
		return rename(a, b) == 0 ? escaped("renamed %s", a) : blocked(a);
	if (strcmp(c, "link") == 0)
		return link(a, b) == 0 ? escaped("linked %s", a) : blocked(a);
	if (strcmp(c, "whiteout") == 0)
		return refused(renameat2(AT_FDCWD, a, AT_FDCWD, b,
		    RENAME_WHITEOUT), "a rename leaving a whiteout", EPERM);
	if (strcmp(c, "chmod") == 0)
		return chmod(a, 0777) == 0 ? escaped("chmod %s", a) : blocked(a);
	if (strcmp(c, "stat") == 0)
		return do_stat(a);
	if (strcmp(c, "setid") == 0)
		return do_setid(a);
	if (strcmp(c, "xattr") == 0)
		return do_xattr(a);
	if (strcmp(c, "tcp") == 0)
		return do_tcp(a, b);
	if (strcmp(c, "unix") == 0)
		return do_unix(a, 0);
	if (strcmp(c, "abstract") == 0)
		return do_unix(a, 1);
	if (strcmp(c, "resolve") == 0)
		return do_resolve(a);
	if (strcmp(c, "raw") == 0)
		return do_socket(AF_INET, SOCK_RAW, IPPROTO_ICMP, "raw");
	if (strcmp(c, "packet") == 0)
		return do_socket(AF_PACKET, SOCK_RAW, 0, "packet");
	if (strcmp(c, "netlink-audit") == 0)
		return do_socket(AF_NETLINK, SOCK_RAW, NETLINK_AUDIT,
		    "audit netlink");
	if (strcmp(c, "netlink-uevent") == 0)
		return do_socket(AF_NETLINK, SOCK_RAW,
		    NETLINK_KOBJECT_UEVENT, "uevent netlink");
	if (strcmp(c, "netlink-route") == 0)
		return do_socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE,
		    "route netlink");
	if (strcmp(c, "kill") == 0)
		return do_kill(a, b);
	if (strcmp(c, "ptrace") == 0)
		return do_ptrace();
	if (strcmp(c, "mount") == 0)
		return refused(mount("none", "/tmp", "tmpfs", 0, NULL),
		    "mount", EPERM);
	if (strcmp(c, "unshare") == 0)
		return refused(unshare(CLONE_NEWUSER), "unshare", EPERM);
	if (strcmp(c, "clone") == 0)
		return do_clone_ns();
	if (strcmp(c, "clone3") == 0)
		return do_clone3();
	if (strcmp(c, "keyctl") == 0)
		return refused(syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID,
		    KEY_SPEC_USER_KEYRING, 0), "keyctl", EPERM);
	if (strcmp(c, "add_key") == 0)
		return refused(syscall(SYS_add_key, "user", "amx", "x", 1,
		    KEY_SPEC_PROCESS_KEYRING), "add_key", EPERM);
	if (strcmp(c, "bpf") == 0)
		return do_bpf();
	if (strcmp(c, "perf") == 0)
		return do_perf();
	if (strcmp(c, "userfaultfd") == 0)
		return refused(syscall(SYS_userfaultfd, 0), "userfaultfd",
		    EPERM);
	if (strcmp(c, "io_uring") == 0)
		return refused(syscall(SYS_io_uring_setup, 1, /* NOLINT(clang-analyzer-unix.Malloc): the process exits */
		    calloc(1, 256)), "io_uring_setup", EPERM);
	if (strcmp(c, "personality") == 0)
		return refused(personality(ADDR_NO_RANDOMIZE), "personality",
		    EPERM);
	if (strcmp(c, "tiocsti") == 0)
		return do_tiocsti();
	if (strcmp(c, "tioclinux") == 0)
		return do_tioclinux();
	if (strcmp(c, "int80") == 0)
		return do_int80();
	if (strcmp(c, "selfconnect") == 0)
		return do_selfconnect(a);
	if (strcmp(c, "forks") == 0)
		return do_forks(atoi(a));
	if (strcmp(c, "alloc") == 0)
		return do_alloc(atoi(a));
	if (strcmp(c, "fill") == 0)
		return do_fill(a, atoi(b));
	if (strcmp(c, "env") == 0)
		return getenv(a) != NULL ? escaped("%s is set", a) :
		    (printf("BLOCKED: %s is not set\n", a), 1);
	if (strcmp(c, "grep") == 0)
		return do_grep(a, b);
	if (strcmp(c, "undumpable") == 0)
		return do_undumpable(a, atoi(b));
	if (strcmp(c, "selfcont") == 0)
		return do_selfcont(a);
	fprintf(stderr, "usage: amx-escape ATTEMPT [ARGS]\n");
	return 2;
}
