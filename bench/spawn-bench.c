/*
 * What proc_start holds its caller (the loop) for, by how a child is
 * started (src/core/core-proc.c): a process holding HEAP MiB of touched
 * private memory starts COUNT children of `git --version`, one at a time,
 * each waited for on an event loop; with -l each has a memory limit
 * (RLIMIT_DATA, as every git agentmux runs has). Up to 32 MiB a child is
 * cloned (no wait for its exec); above, one without a limit is started by
 * posix_spawn and one with a limit by proc_vfork (both wait for the
 * exec); with -c the child is cloned whatever the size (what the runner
 * did with a limit before proc_vfork). Prints the median, p90 and longest
 * hold in ms, and how many children were vforked. bench/spawn.sh runs it.
 * Usage: amx-spawn-bench [-l] [-c] HEAP_MIB COUNT
 */
#include <sys/mman.h>

#include <time.h>

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"

static void
done(struct proc *p, void *arg)
{
	int *left = arg;

	(void)p;
	(*left)--;
}

/* Monotonic time in microseconds. */
static int64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int
cmp_ms(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int
main(int argc, char **argv)
{
	char *gargv[] = { "git", "--version", NULL };
	struct event_base *base;
	struct proc_opts o;
	struct proc *p;
	double *ms;
	char *cause = NULL, *heap = NULL;
	size_t mib, count, i;
	int64_t t0;
	bool limit = false;
	int c, left;

	while ((c = getopt(argc, argv, "lc")) != -1) {
		if (c == 'l')
			limit = true;
		else if (c == 'c')
			proc_test_clone_always = true;
		else
			return 2;
	}
	if (argc - optind != 2) {
		fprintf(stderr, "usage: amx-spawn-bench [-l] [-c] HEAP_MIB COUNT\n");
		return 2;
	}
	mib = strtoul(argv[optind], NULL, 10);
	count = strtoul(argv[optind + 1], NULL, 10);
	if (count == 0)
		return 2;
	if (mib > 0) {
		heap = mmap(NULL, mib << 20, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (heap == MAP_FAILED) {
			perror("mmap");
			return 1;
		}
		memset(heap, 1, mib << 20);
	}
	base = event_base_new();
	ms = xcalloc(count, sizeof *ms);
	for (i = 0; i < count; i++) {
		memset(&o, 0, sizeof o);
		o.argv = gargv;
		o.out_fd = -1;
		o.umask = -1;
		o.data_max = limit ? (uint64_t)4 << 30 : 0;
		left = 1;
		t0 = now_us();
		if ((p = proc_start(base, &o, done, &left, &cause)) == NULL) {
			fprintf(stderr, "amx-spawn-bench: %s\n", cause);
			return 1;
		}
		ms[i] = (double)(now_us() - t0) / 1000.0;
		while (left > 0)
			event_base_loop(base, EVLOOP_ONCE);
		if (proc_status(p) != 0) {
			fprintf(stderr, "amx-spawn-bench: git --version: %d\n",
			    proc_status(p));
			return 1;
		}
		proc_free(p);
	}
	qsort(ms, count, sizeof *ms, cmp_ms);
	printf("%.2f %.2f %.2f %u\n", ms[count / 2], ms[count * 9 / 10],
	    ms[count - 1], proc_test_vforked);
	free(ms);
	event_base_free(base);
	return 0;
}
