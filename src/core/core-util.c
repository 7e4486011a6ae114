/* Small utilities: time, units, processes, file descriptors, globs. */
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "core.h"

int64_t
util_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t
util_mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/*
 * Parses a number followed by one optional unit letter from UNITS (MULTS[0]
 * is the factor without a unit); sizes may also end in "B" or "iB".
 */
static int64_t
util_parse_unit(const char *s, const char *units, const int64_t *mults,
    bool size)
{
	char *end;
	const char *u;
	long long v;

	if (s == NULL || !isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno != 0)
		return -1;
	if (*end == '\0')
		return v * mults[0];
	if ((u = strchr(units, tolower((unsigned char)*end))) == NULL)
		return -1;
	end++;
	if (size && (strcasecmp(end, "b") == 0 || strcasecmp(end, "ib") == 0))
		end += strlen(end);
	if (*end != '\0' || v > INT64_MAX / mults[u - units + 1])
		return -1;
	return v * mults[u - units + 1];
}

int64_t
util_parse_duration(const char *s)
{
	static const int64_t m[] = { 1, 1, 60, 3600, 86400, 604800 };

	return util_parse_unit(s, "smhdw", m, false);
}

int64_t
util_parse_size(const char *s)
{
	static const int64_t m[] = { 1, 1024, 1048576, 1073741824,
		1099511627776LL };

	return util_parse_unit(s, "kmgt", m, true);
}

int64_t
util_inode_reserve(uint64_t files)
{
	uint64_t floor = files / 10 < 1000 ? files / 10 : 1000;

	if (files == 0 || files > INT64_MAX)
		return 0;
	return (int64_t)(files / 100 > floor ? files / 100 : floor);
}

const char *
util_fmt_size(char *buf, size_t len, int64_t bytes)
{
	static const char units[] = "BKMGT";
	double v = (double)bytes;
	int i = 0;

	if (bytes < 0) {
		snprintf(buf, len, "-");
		return buf;
	}
	while (v >= 1024 && i < 4) {
		v /= 1024;
		i++;
	}
	if (i == 0)
		snprintf(buf, len, "%lldB", (long long)bytes);
	else if (v < 10)
		snprintf(buf, len, "%.1f%c", v, units[i]);
	else
		snprintf(buf, len, "%.0f%c", v, units[i]);
	return buf;
}

const char *
util_fmt_time(char *buf, size_t len, int64_t ms)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	if (ms <= 0 || localtime_r(&t, &tm) == NULL) {
		snprintf(buf, len, "-");
		return buf;
	}
	strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm);
	return buf;
}

const char *
util_fmt_duration(char *buf, size_t len, int64_t ms)
{
	if (ms < 0)
		snprintf(buf, len, "-");
	else if (ms < 1000)
		snprintf(buf, len, "%lldms", (long long)ms);
	else if (ms < 60000)
		snprintf(buf, len, "%.1fs", (double)ms / 1000);
	else if (ms < 3600000)
		snprintf(buf, len, "%lldm%02llds", (long long)(ms / 60000),
		    (long long)(ms / 1000 % 60));
	else
		snprintf(buf, len, "%lldh%02lldm", (long long)(ms / 3600000),
		    (long long)(ms / 60000 % 60));
	return buf;
}

size_t
util_edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i, j, *row, prev, tmp, best;

	row = xcalloc(lb + 1, sizeof *row);
	for (j = 0; j <= lb; j++)
		row[j] = j;
	for (i = 1; i <= la; i++) {
		prev = row[0];
		row[0] = i;
		for (j = 1; j <= lb; j++) {
			tmp = row[j];
			best = prev + (tolower((unsigned char)a[i - 1]) !=
			    tolower((unsigned char)b[j - 1]));
			if (row[j] + 1 < best)
				best = row[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			prev = tmp;
		}
	}
	best = row[lb];
	free(row);
	return best;
}

int
util_parse_int(const char *s, long long min, long long max, long long *out,
    char **cause)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (*s == '\0' || *end != '\0' || errno != 0) {
		*cause = xprintf("'%s' is not a number", s);
		return -1;
	}
	if (v < min || v > max) {
		*cause = xprintf("%s is out of range (%lld to %lld)", s, min, max);
		return -1;
	}
	*out = v;
	return 0;
}

uint64_t
util_proc_start_time(pid_t pid)
{
	char path[64], *p;
	struct buf b;
	unsigned long long start = 0;
	int field;

	snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
	buf_init(&b);
	if (buf_read_file(&b, path) == -1 || (p = strrchr(b.data, ')')) == NULL) {
		buf_free(&b);
		return 0;
	}
	/* Field 22 is starttime; the text after ')' starts at field 3. */
	for (field = 2; field < 22 && p != NULL; field++)
		p = strchr(p + 1, ' ');
	if (p != NULL)
		start = strtoull(p + 1, NULL, 10);
	buf_free(&b);
	return start;
}

bool
util_proc_alive(pid_t pid, uint64_t start)
{
	if (pid <= 0)
		return false;
	if (kill(pid, 0) == -1 && errno == ESRCH)
		return false;
	if (start != 0 && util_proc_start_time(pid) != start)
		return false;
	return true;
}

int
util_set_nonblock(int fd)
{
	int flags;

	if ((flags = fcntl(fd, F_GETFL)) == -1)
		return -1;
	return fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

int
util_set_cloexec(int fd)
{
	int flags;

	if ((flags = fcntl(fd, F_GETFD)) == -1)
		return -1;
	return fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

int
util_cmsg_put(struct msghdr *msg, void *control, size_t space,
    const int *fds, size_t n)
{
	struct cmsghdr *cm;

	if (n == 0 || CMSG_SPACE(sizeof(int) * n) > space) {
		errno = EMSGSIZE;
		return -1;
	}
	memset(control, 0, space);
	msg->msg_control = control;
	msg->msg_controllen = CMSG_SPACE(sizeof(int) * n);
	cm = CMSG_FIRSTHDR(msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int) * n);
	memcpy(CMSG_DATA(cm), fds, sizeof(int) * n);
	return 0;
}

size_t
util_cmsg_take(struct msghdr *msg, int *fds, size_t max)
{
	struct cmsghdr *cm;
	size_t taken = 0, n, i;
	int fd;

	for (cm = CMSG_FIRSTHDR(msg); cm != NULL; cm = CMSG_NXTHDR(msg, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < n; i++) {
			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof fd);
			if (taken < max) {
				util_set_cloexec(fd);
				fds[taken++] = fd;
			} else
				close(fd);
		}
	}
	return taken;
}

ssize_t
util_recvmsg(int fd, struct msghdr *msg, int flags)
{
	bool reset = false;
	ssize_t n;

	for (;;) {
		if ((n = recvmsg(fd, msg, flags)) != -1)
			return n;
		if (errno == EINTR)
			continue;
		if (errno != ECONNRESET || reset)
			return -1;
		reset = true;
	}
}

ssize_t
util_recv(int fd, void *buf, size_t len, int flags)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

	return util_recvmsg(fd, &msg, flags);
}

int
util_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t n;

	while (len > 0) {
		n = write(fd, p, len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int
util_write_file_atomic(const char *path, const void *data, size_t len,
    mode_t mode, char **cause)
{
	char *tmp;
	int fd;

	tmp = xprintf("%s.tmp.%ld", path, (long)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
	if (fd == -1) {
		*cause = xprintf("cannot create %s: %s", tmp, strerror(errno));
		free(tmp);
		return -1;
	}
	if (fchmod(fd, mode) == -1 || util_write_all(fd, data, len) == -1 ||
	    fsync(fd) == -1) {
		*cause = xprintf("cannot write %s: %s", tmp, strerror(errno));
		goto fail;
	}
	if (close(fd) == -1) {
		fd = -1;
		*cause = xprintf("cannot write %s: %s", tmp, strerror(errno));
		goto fail;
	}
	fd = -1;
	if (rename(tmp, path) == -1) {
		*cause = xprintf("cannot replace %s: %s", path, strerror(errno));
		goto fail;
	}
	free(tmp);
	return 0;
fail:
	if (fd != -1)
		close(fd);
	unlink(tmp);
	free(tmp);
	return -1;
}

void
util_random(void *p, size_t len)
{
	char *c = p;
	ssize_t n;

	while (len > 0) {
		n = getrandom(c, len, 0);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			fatal("getrandom");
		c += n;
		len -= (size_t)n;
	}
}

bool
util_glob_match(const char *pattern, const char *s, bool icase)
{
	return fnmatch(pattern, s, icase ? FNM_CASEFOLD : 0) == 0;
}

static mode_t util_umask_saved;
static bool util_umask_known;

void
util_set_user_umask(mode_t m)
{
	util_umask_saved = m;
	util_umask_known = true;
}

mode_t
util_user_umask(void)
{
	mode_t m;

	if (util_umask_known)
		return util_umask_saved;
	m = umask(022);
	umask(m);
	return m;
}
