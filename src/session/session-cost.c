/*
 * What a session costs: CPU, memory and processes of its jail from its
 * cgroups where it has them, else from /proc; bytes written (the disk
 * watch's count), and its proxy's counts.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "session-int.h"

/* One process of the host, as its /proc/PID/stat says. */
struct session_cost_pid {
	pid_t pid;
	pid_t ppid;
	bool in;                     /* the jail's init or one of its descendants */
	double cpu_sec;              /* its own CPU time and its waited-for children's */
	int64_t rss;                 /* bytes */
};

/* Reads process PID's parent, CPU time and resident memory; -1 if it is gone. */
static int
session_cost_stat(pid_t pid, struct session_cost_pid *p, long tick, long page)
{
	char path[64], buf[1024], *q;
	unsigned long long ut, st, cut, cst, rss;
	int ppid;
	ssize_t n;
	int fd;

	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* The name may hold anything, ')' too: the fields start after the last. */
	if ((q = strrchr(buf, ')')) == NULL || sscanf(q + 1, " %*c %d %*d "
	    "%*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %llu %llu %*d %*d %*d "
	    "%*d %*u %*u %llu", &ppid, &ut, &st, &cut, &cst, &rss) != 6)
		return -1;
	p->pid = pid;
	p->ppid = (pid_t)ppid;
	p->in = false;
	p->cpu_sec = (double)(ut + st + cut + cst) / (double)tick;
	p->rss = (int64_t)rss * page;
	return 0;
}

static int
session_cost_cmp(const void *a, const void *b)
{
	pid_t x = ((const struct session_cost_pid *)a)->pid;
	pid_t y = ((const struct session_cost_pid *)b)->pid;

	return x < y ? -1 : x > y;
}

/* Every process of the host that /proc shows, sorted by pid; the caller frees. */
static struct session_cost_pid *
session_cost_list(size_t *np)
{
	long tick = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
	struct session_cost_pid *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	long pid;
	char *end;
	DIR *d;

	*np = 0;
	if (tick <= 0 || (d = opendir("/proc")) == NULL)
		return NULL;
	while ((de = readdir(d)) != NULL) {
		pid = strtol(de->d_name, &end, 10);
		if (*end != '\0' || pid <= 0)
			continue;
		if (n == cap) {
			cap = cap == 0 ? 256 : cap * 2;
			v = xreallocarray(v, cap, sizeof *v);
		}
		if (session_cost_stat((pid_t)pid, &v[n], tick, page) == 0)
			n++;
	}
	closedir(d);
	if (n > 0)
		qsort(v, n, sizeof *v, session_cost_cmp);
	*np = n;
	return v;
}

/*
 * Every process of the jail: its init and the descendants of it, by the
 * parents /proc/PID/stat gives (readable by anyone, where the jail's
 * namespace links are not: its init is not dumpable, and an ordinary
 * user may not look at them). An orphan in the jail is its init's child:
 * no process of the jail has a parent outside it.
 */
AM_TESTABLE void
session_cost_procs(struct session *s, struct session_costs *c)
{
	struct session_cost_pid key, *v, *par;
	size_t n, i;
	bool more = true;
	int pass;

	if ((v = session_cost_list(&n)) == NULL)
		return;
	memset(&key, 0, sizeof key);
	key.pid = jail_pid(s->jail);
	if ((par = bsearch(&key, v, n, sizeof *v, session_cost_cmp)) == NULL) {
		free(v);
		return;
	}
	par->in = true;
	/* One pass a generation, however deep: no process is its own ancestor. */
	for (pass = 0; more && (size_t)pass < n; pass++) {
		more = false;
		for (i = 0; i < n; i++) {
			if (v[i].in)
				continue;
			key.pid = v[i].ppid;
			par = bsearch(&key, v, n, sizeof *v, session_cost_cmp);
			if (par != NULL && par->in)
				more = v[i].in = true;
		}
	}
	for (i = 0; i < n; i++) {
		if (!v[i].in)
			continue;
		c->cpu_sec += v[i].cpu_sec;
		c->memory += v[i].rss;
		c->procs++;
	}
	free(v);
}

/*
 * CPU, memory and processes: from the jail's cgroups (CPU time of every
 * process that ever ran in it, an orphan reaped by its init too; the
 * memory its limit counts; its processes), and from /proc for what they
 * do not count, or all of it without a cgroup.
 */
static void
session_cost_jail(struct session *s, struct session_costs *c)
{
	struct session_costs p;
	struct jail_usage u;
	bool cg = jail_usage(s->jail, &u) == 0;

	if (cg && u.cpu_ns >= 0 && u.memory >= 0 && u.procs >= 0) {
		c->cpu_sec = (double)u.cpu_ns / 1e9;
		c->memory = u.memory;
		c->procs = (int)u.procs;
		c->from = "cgroup";
		return;
	}
	memset(&p, 0, sizeof p);
	session_cost_procs(s, &p);
	c->cpu_sec = cg && u.cpu_ns >= 0 ? (double)u.cpu_ns / 1e9 : p.cpu_sec;
	c->memory = cg && u.memory >= 0 ? u.memory : p.memory;
	c->procs = cg && u.procs >= 0 ? (int)u.procs : p.procs;
	c->from = cg ? "cgroup and /proc" : "/proc";
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
	session_cost_jail(s, c);
	if (c->run_ms > 0)
		c->cpu_share = c->cpu_sec / ((double)c->run_ms / 1000.0);
}
