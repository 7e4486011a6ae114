/*
 * The writer a project's first snapshot is to use (src/snap/snap-pack.c),
 * alone: reads the files named on stdin (NUL-separated, relative to the
 * working directory), hashes each as a blob and stores it in one pack of
 * GITDIR, as bench/pack.sh runs it beside git add -A. No walk, no ignore
 * rules, no index and no trees: the hashing and writing only.
 * Usage: amx-pack-bench GITDIR < list
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "snap/snap-int.h"

/* Reads FD to its end into B; -1 if it cannot. */
static int
read_fd(int fd, struct buf *b)
{
	char chunk[65536];
	ssize_t n;

	b->len = 0;
	while ((n = read(fd, chunk, sizeof chunk)) > 0)
		buf_add(b, chunk, (size_t)n);
	return n == 0 ? 0 : -1;
}

/* Reads PATH (never through a symlink) into B; -1 if it cannot. */
static int
read_file(const char *path, struct buf *b)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	int r;

	if (fd == -1)
		return -1;
	r = read_fd(fd, b);
	close(fd);
	return r;
}

int
main(int argc, char **argv)
{
	unsigned char oid[SNAP_PACK_OID];
	struct buf list, data;
	struct snap_pack *p;
	char *cause = NULL, *s, *end, name[64];
	uint32_t n = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: amx-pack-bench GITDIR < list\n");
		return 2;
	}
	buf_init(&list);
	buf_init(&data);
	if (read_fd(STDIN_FILENO, &list) == -1 || list.len == 0)
		return 1;
	for (s = list.data; s < list.data + list.len; s += strlen(s) + 1)
		n++;
	if ((p = snap_pack_begin(argv[1], n, &cause)) == NULL) {
		fprintf(stderr, "amx-pack-bench: %s\n", cause);
		return 1;
	}
	end = list.data + list.len;
	for (s = list.data; s < end; s += strlen(s) + 1) {
		if (read_file(s, &data) == -1 || snap_pack_add(p,
		    SNAP_PACK_BLOB, data.data != NULL ? data.data : "", data.len,
		    oid, &cause) == -1) {
			fprintf(stderr, "amx-pack-bench: %s: %s\n", s,
			    cause != NULL ? cause : strerror(errno));
			snap_pack_abort(p);
			return 1;
		}
	}
	if (snap_pack_finish(p, name, sizeof name, &cause) == -1) {
		fprintf(stderr, "amx-pack-bench: %s\n", cause);
		return 1;
	}
	printf("pack-%s: %u objects\n", name, n);
	buf_free(&data);
	buf_free(&list);
	return 0;
}
