/* Growable byte buffers, always NUL-terminated so text can be used in place. */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core.h"

void
buf_init(struct buf *b)
{
	b->data = NULL;
	b->len = b->cap = 0;
}

void
buf_free(struct buf *b)
{
	free(b->data);
	buf_init(b);
}

void
buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->data != NULL)
		b->data[0] = '\0';
}

static void
buf_grow(struct buf *b, size_t more)
{
	size_t want = b->len + more + 1;

	if (want <= b->cap)
		return;
	if (b->cap == 0)
		b->cap = 64;
	while (b->cap < want)
		b->cap *= 2;
	b->data = xrealloc(b->data, b->cap);
}

void
buf_add(struct buf *b, const void *p, size_t n)
{
	buf_grow(b, n);
	if (n != 0)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
}

void
buf_adds(struct buf *b, const char *s)
{
	buf_add(b, s, strlen(s));
}

void
buf_addc(struct buf *b, char c)
{
	buf_add(b, &c, 1);
}

void
buf_vprintf(struct buf *b, const char *fmt, va_list ap)
{
	va_list ap2;
	int n;

	va_copy(ap2, ap);
	n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n < 0)
		fatalx("buf_vprintf: bad format");
	buf_grow(b, (size_t)n);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
}

void
buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	buf_vprintf(b, fmt, ap);
	va_end(ap);
}

char *
buf_steal(struct buf *b)
{
	char *p = b->data;

	if (p == NULL)
		p = xstrdup("");
	buf_init(b);
	return p;
}

int
buf_read_fd(struct buf *b, int fd)
{
	ssize_t n;

	for (;;) {
		buf_grow(b, 65536);
		n = read(fd, b->data + b->len, b->cap - b->len - 1);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			return -1;
		if (n == 0)
			break;
		b->len += (size_t)n;
		b->data[b->len] = '\0';
	}
	return 0;
}

int
buf_read_file(struct buf *b, const char *path)
{
	int fd, rc, saved;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	rc = buf_read_fd(b, fd);
	saved = errno;
	close(fd);
	errno = saved;
	return rc;
}

/* A regular file opened without following a link or waiting on a FIFO. */
static int
buf_open_regular(const char *path, struct stat *sb)
{
	int fd;

	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd == -1)
		return -1;
	if (fstat(fd, sb) == -1 || !S_ISREG(sb->st_mode)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Reads up to LEN bytes (fewer only at the end); -1 on error. */
static ssize_t
buf_read_full(int fd, char *p, size_t len)
{
	size_t got = 0;
	ssize_t n;

	while (got < len) {
		n = read(fd, p + got, len - got);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			return -1;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

bool
buf_same_file(const char *a, const char *b)
{
	char x[65536], y[65536];
	struct stat sa, sb;
	ssize_t n, m;
	bool same = false;
	int fa, fb = -1;

	if ((fa = buf_open_regular(a, &sa)) == -1 ||
	    (fb = buf_open_regular(b, &sb)) == -1 || sa.st_size != sb.st_size)
		goto out;
	for (;;) {
		n = buf_read_full(fa, x, sizeof x);
		m = buf_read_full(fb, y, sizeof y);
		if (n == -1 || n != m || memcmp(x, y, (size_t)n) != 0)
			goto out;
		if ((size_t)n < sizeof x)
			break;
	}
	same = true;
out:
	if (fa != -1)
		close(fa);
	if (fb != -1)
		close(fb);
	return same;
}
