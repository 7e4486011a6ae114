/*
 * The writer a project's first snapshot is to use (src/snap/snap-pack.c),
 * alone: reads the files named on stdin (NUL-separated, relative to the
 * working directory), stores them and their trees in one pack of GITDIR
 * and writes GITDIR/index with their stat data; prints the top tree's id.
 * bench/pack.sh runs it beside git add -A. Not timed: the walk (the list
 * is made beforehand) and the commit. With -r READERS, the job a
 * session's start snapshot runs (on a helper thread, with READERS
 * threads reading and hashing the files ahead of it; 0: it reads them
 * itself), waited for on an event loop.
 * Usage: amx-pack-bench [-r READERS] GITDIR < list
 */
#include <sys/stat.h>

#include <errno.h>
#include <event2/event.h>
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

struct job_out {
	bool over;
	int result;
	char tree[2 * SNAP_PACK_OID + 1];
	int64_t files;
	char *cause;
};

static void
job_done(void *arg, int result, const char *tree, const struct buf *modes,
    const struct buf *borrowed, int64_t files, const char *cause)
{
	struct job_out *o = arg;

	(void)modes;
	(void)borrowed;
	o->over = true;
	o->result = result;
	o->files = files;
	if (tree != NULL)
		snprintf(o->tree, sizeof o->tree, "%s", tree);
	if (cause != NULL)
		o->cause = xstrdup(cause);
}

/* The files of LIST by the start snapshot's job, READERS reading ahead. */
static int
job_main(const char *gitdir, unsigned readers, struct buf *list)
{
	struct event_base *base = event_base_new();
	struct job_out o;
	char *cause = NULL, *index = xprintf("%s/index", gitdir);

	if (base == NULL)
		return 1;
	memset(&o, 0, sizeof o);
	unlink(index);
	snap_pack_job_readers = readers;
	/* It frees itself once it told job_done. */
	if (snap_pack_job_start(base, gitdir, index, ".", list, NULL,
	    job_done, NULL, &o, &cause) == NULL) {
		fprintf(stderr, "amx-pack-bench: %s\n", cause);
		return 1;
	}
	while (!o.over)
		event_base_loop(base, EVLOOP_ONCE);
	event_base_free(base);
	free(index);
	if (o.result != 0) {
		fprintf(stderr, "amx-pack-bench: %s\n", o.cause != NULL ?
		    o.cause : "the job failed");
		return 1;
	}
	printf("%s: %lld files\n", o.tree, (long long)o.files);
	return 0;
}

int
main(int argc, char **argv)
{
	unsigned char root[SNAP_PACK_OID];
	struct snap_pack_entry *e;
	struct buf list;
	struct snap_pack *p;
	struct stat *sb;
	char *cause = NULL, *s, **paths, name[64], *index;
	size_t n = 0, i = 0;
	int wt, r;

	if (argc == 4 && strcmp(argv[1], "-r") == 0) {
		buf_init(&list);
		if (read_fd(STDIN_FILENO, &list) == -1 || list.len == 0)
			return 1;
		return job_main(argv[3], (unsigned)atoi(argv[2]), &list);
	}
	if (argc != 2) {
		fprintf(stderr, "usage: amx-pack-bench [-r READERS] GITDIR < "
		    "list\n");
		return 2;
	}
	buf_init(&list);
	if (read_fd(STDIN_FILENO, &list) == -1 || list.len == 0)
		return 1;
	for (s = list.data; s < list.data + list.len; s += strlen(s) + 1)
		n++;
	paths = xcalloc(n, sizeof *paths);
	e = xcalloc(n, sizeof *e);
	sb = xcalloc(n, sizeof *sb);
	for (s = list.data; s < list.data + list.len; s += strlen(s) + 1)
		paths[i++] = s;
	/* At most a tree per file, and the top one. */
	if ((p = snap_pack_begin(argv[1], (uint32_t)(2 * n + 1),
	    &cause)) == NULL) {
		fprintf(stderr, "amx-pack-bench: %s\n", cause);
		return 1;
	}
	wt = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	r = snap_pack_files(p, wt, paths, n, e, sb, &cause);
	if (r == 0)
		r = snap_pack_trees(p, e, n, root, &cause);
	if (r != 0) {
		fprintf(stderr, "amx-pack-bench: %s\n", cause != NULL ? cause :
		    "a file changed while read");
		snap_pack_abort(p);
		return 1;
	}
	if (snap_pack_finish(p, name, sizeof name, &cause) == -1) {
		fprintf(stderr, "amx-pack-bench: %s\n", cause);
		return 1;
	}
	index = xprintf("%s/index", argv[1]);
	unlink(index);
	if (snap_pack_index(index, e, sb, n, &cause) == -1) {
		fprintf(stderr, "amx-pack-bench: %s\n", cause);
		return 1;
	}
	for (i = 0; i < SNAP_PACK_OID; i++)
		printf("%02x", root[i]);
	printf(" pack-%s: %zu files\n", name, n);
	free(index);
	free(sb);
	free(e);
	free(paths);
	close(wt);
	buf_free(&list);
	return 0;
}
