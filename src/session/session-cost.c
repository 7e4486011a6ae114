/* What a session costs: CPU, memory and processes of its jail from /proc, bytes written, and its proxy's counts. */
#include <sys/stat.h>

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "session-int.h"

/* The pid namespace of the jail's init (its inode), or 0. */
static ino_t
session_cost_ns(pid_t pid)
{
	char path[64];
	struct stat sb;

	snprintf(path, sizeof path, "/proc/%d/ns/pid", (int)pid);
	if (pid <= 0 || stat(path, &sb) == -1)
		return 0;
	return sb.st_ino;
}

/*
 * Adds process PID's CPU time (its own and its waited-for children's, so
 * that every process that ended is counted once, in whoever reaped it)
 * and resident memory to C.
 */
static void
session_cost_proc(pid_t pid, struct session_costs *c, long tick, long page)
{
	char path[64], buf[1024], *p;
	unsigned long long ut, st, cut, cst, rss;
	ssize_t n;
	int fd;

	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	/* The name may hold anything, ')' too: the fields start after the last. */
	if ((p = strrchr(buf, ')')) == NULL || sscanf(p + 1, " %*c %*d %*d "
	    "%*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %llu %llu %*d %*d %*d "
	    "%*d %*u %*u %llu", &ut, &st, &cut, &cst, &rss) != 5)
		return;
	c->cpu_sec += (double)(ut + st + cut + cst) / (double)tick;
	c->memory += (int64_t)rss * page;
	c->procs++;
}

/* Every process in the jail's pid namespace: /proc read once, no process followed. */
static void
session_cost_procs(struct session *s, struct session_costs *c)
{
	long tick = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
	ino_t ns = session_cost_ns(jail_pid(s->jail));
	struct dirent *de;
	DIR *d;
	long pid;
	char *end;

	if (ns == 0 || tick <= 0 || (d = opendir("/proc")) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		pid = strtol(de->d_name, &end, 10);
		if (*end != '\0' || pid <= 0)
			continue;
		if (session_cost_ns((pid_t)pid) == ns)
			session_cost_proc((pid_t)pid, c, tick, page);
	}
	closedir(d);
}

void
session_costs(struct session *s, struct session_costs *c)
{
	memset(c, 0, sizeof *c);
	c->written = session_disk_written(s);
	c->allowed = s->st_allowed;
	c->denied = s->st_denied;
	c->bytes_up = s->st_up;
	c->bytes_down = s->st_down;
	c->turns = s->st_turns;
	if (s->st_started_ms != 0)
		c->run_ms = util_now_ms() - s->st_started_ms;
	if (s->jail == NULL || s->reaped || s->starting)
		return;
	session_cost_procs(s, c);
	if (c->run_ms > 0)
		c->cpu_share = c->cpu_sec / ((double)c->run_ms / 1000.0);
}
