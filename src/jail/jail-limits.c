/* Limits: a cgroup for pids, memory and freezing where one can be had (v2 delegated, or v1 as root), else rlimits. */
#include <sys/resource.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jail/jail-int.h"

/*
 * Where this process may create jail cgroups, found once: RLIMIT_NPROC is
 * not enforced at all for host root (the kernel exempts the initial user),
 * so root needs the cgroup; an ordinary user usually gets rlimits.
 */
struct jail_cg_bases {
	bool detected;
	char *v2;          /* a v2 dir with pids (and maybe memory) in subtree_control */
	bool v2_memory;
	char *v1_pids;     /* writable v1 dirs */
	char *v1_memory;
	char *v1_freezer;
	char *v1_cpuacct;  /* counts CPU time only: no limit is set there */
	unsigned seq;
};

static struct jail_cg_bases jail_cg;

static int
jail_limits_write(const char *dir, const char *file, const char *text)
{
	char path[PATH_MAX];
	size_t len = strlen(text);
	int fd, rc = 0;

	snprintf(path, sizeof path, "%s/%s", dir, file);
	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) == -1)
		return -1;
	if (write(fd, text, len) != (ssize_t)len)
		rc = -1;
	close(fd);
	return rc;
}

static char *
jail_limits_read(const char *dir, const char *file)
{
	char *path = xprintf("%s/%s", dir, file);
	struct buf b;

	buf_init(&b);
	if (buf_read_file(&b, path) == -1) {
		buf_free(&b);
		free(path);
		return NULL;
	}
	free(path);
	return buf_steal(&b);
}

static bool
jail_limits_has_word(const char *list, const char *word)
{
	size_t n = strlen(word);
	const char *s;

	for (s = list; s != NULL && (s = strstr(s, word)) != NULL; s += n) {
		if ((s == list || s[-1] == ' ' || s[-1] == ',' ||
		    s[-1] == '+') && (s[n] == '\0' || s[n] == ' ' ||
		    s[n] == ',' || s[n] == '\n'))
			return true;
	}
	return false;
}

/* /proc/self/cgroup and /proc/self/mountinfo, read once for every hierarchy. */
struct jail_cg_files {
	char *cgroup;
	char *mountinfo;
};

/* Our cgroup path in the hierarchy whose controller list matches WANT ("" for v2). */
static char *
jail_limits_own_path(const char *cgroup, const char *want)
{
	char *copy = xstrdup(cgroup), *line, *save = NULL, *ctl, *path;
	char *found = NULL;

	for (line = strtok_r(copy, "\n", &save); line != NULL && found == NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		if ((ctl = strchr(line, ':')) == NULL ||
		    (path = strchr(ctl + 1, ':')) == NULL)
			continue;
		*path++ = '\0';
		ctl++;
		if ((*want == '\0' && *ctl == '\0') ||
		    (*want != '\0' && jail_limits_has_word(ctl, want)))
			found = xstrdup(path);
	}
	free(copy);
	return found;
}

/* The mount's root and mount point for one mountinfo line of fstype TYPE with option WANT. */
static bool
jail_limits_mount(char *line, const char *type, const char *want,
    char **root, char **mnt)
{
	char *f[10], *sep, *s, *save = NULL;
	size_t n;

	if ((sep = strstr(line, " - ")) == NULL)
		return false;
	*sep = '\0';
	for (n = 0, s = strtok_r(line, " ", &save); s != NULL && n < 10;
	    s = strtok_r(NULL, " ", &save))
		f[n++] = s;
	if (n < 5)
		return false;
	save = NULL;
	s = strtok_r(sep + 3, " ", &save);
	if (s == NULL || strcmp(s, type) != 0)
		return false;
	strtok_r(NULL, " ", &save);
	s = strtok_r(NULL, " ", &save);
	if (*want != '\0' && (s == NULL || !jail_limits_has_word(s, want)))
		return false;
	*root = f[3];
	*mnt = f[4];
	return true;
}

/* The host dir of our cgroup in the hierarchy of fstype TYPE with option WANT. */
static char *
jail_limits_own_dir(const struct jail_cg_files *cf, const char *type,
    const char *want)
{
	char *own, *copy, *line, *save = NULL, *root, *mnt, *dir = NULL;
	size_t rootlen;

	if ((own = jail_limits_own_path(cf->cgroup, want)) == NULL)
		return NULL;
	copy = xstrdup(cf->mountinfo);
	for (line = strtok_r(copy, "\n", &save); line != NULL && dir == NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		if (!jail_limits_mount(line, type, want, &root, &mnt))
			continue;
		rootlen = strcmp(root, "/") == 0 ? 0 : strlen(root);
		if (strncmp(own, root, rootlen) == 0)
			dir = xprintf("%s%s", mnt, own + rootlen);
	}
	free(copy);
	free(own);
	return dir;
}

/*
 * Cgroups left by agentmux processes that were killed before cleaning up:
 * empty ones go. A jail frozen when its agentmux died is still there, its
 * parent-death SIGKILL pending (a frozen process cannot act on it), so its
 * cgroup is thawed first (FILE and TEXT: how this kind of cgroup thaws; NULL
 * for none): the jail then dies, and the next sweep removes the cgroup.
 */
static void
jail_limits_sweep(const char *base, const char *file, const char *text)
{
	struct dirent *de;
	char *path;
	long pid;
	DIR *d;

	if ((d = opendir(base)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (sscanf(de->d_name, "agentmux-%ld-", &pid) != 1 ||
		    pid == (long)getpid() || kill((pid_t)pid, 0) == 0 ||
		    errno != ESRCH)
			continue;
		path = xprintf("%s/%s", base, de->d_name);
		if (rmdir(path) == -1 && errno == EBUSY && file != NULL &&
		    text != NULL)
			jail_limits_write(path, file, text);
		free(path);
	}
	closedir(d);
}

/*
 * v2 allows controllers in a child only if the parent has no processes of
 * its own (except at the root): if enabling them fails because we are in
 * the way, agentmux moves itself into a leaf of its own first.
 */
static bool
jail_limits_v2_enable(const char *dir, bool memory)
{
	const char *want = memory ? "+pids +memory" : "+pids";
	char *leaf, pid[32];

	if (jail_limits_write(dir, "cgroup.subtree_control", want) == 0)
		return true;
	if (errno != EBUSY)
		return false;
	leaf = xprintf("%s/agentmux-%ld-self", dir, (long)getpid());
	snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
	if ((mkdir(leaf, 0755) == -1 && errno != EEXIST) ||
	    jail_limits_write(leaf, "cgroup.procs", pid) == -1) {
		rmdir(leaf);
		free(leaf);
		return false;
	}
	if (jail_limits_write(dir, "cgroup.subtree_control", want) == 0) {
		free(leaf);
		return true;
	}
	/* Others share the cgroup: give up and go back where we were. */
	jail_limits_write(dir, "cgroup.procs", pid);
	rmdir(leaf);
	free(leaf);
	return false;
}

static void
jail_limits_detect_v2(const struct jail_cg_files *cf)
{
	char *dir, *ctl = NULL, *sub = NULL, *procs;
	bool memory;

	if ((dir = jail_limits_own_dir(cf, "cgroup2", "")) == NULL)
		return;
	procs = xprintf("%s/cgroup.procs", dir);
	if ((ctl = jail_limits_read(dir, "cgroup.controllers")) == NULL ||
	    !jail_limits_has_word(ctl, "pids") || access(procs, W_OK) == -1)
		goto out;
	memory = jail_limits_has_word(ctl, "memory");
	sub = jail_limits_read(dir, "cgroup.subtree_control");
	if ((sub != NULL && jail_limits_has_word(sub, "pids") &&
	    (!memory || jail_limits_has_word(sub, "memory"))) ||
	    jail_limits_v2_enable(dir, memory)) {
		jail_cg.v2 = dir;
		jail_cg.v2_memory = memory;
		dir = NULL;
	}
out:
	free(procs);
	free(ctl);
	free(sub);
	free(dir);
}

static char *
jail_limits_detect_v1(const struct jail_cg_files *cf, const char *controller)
{
	char *dir = jail_limits_own_dir(cf, "cgroup", controller);

	if (dir != NULL && access(dir, W_OK) == -1) {
		free(dir);
		dir = NULL;
	}
	return dir;
}

static void
jail_limits_detect(void)
{
	struct jail_cg_files cf;

	if (jail_cg.detected)
		return;
	jail_cg.detected = true;
	cf.cgroup = jail_limits_read("/proc/self", "cgroup");
	cf.mountinfo = jail_limits_read("/proc/self", "mountinfo");
	if (cf.cgroup != NULL && cf.mountinfo != NULL) {
		jail_limits_detect_v2(&cf);
		if (jail_cg.v2 == NULL) {
			jail_cg.v1_pids = jail_limits_detect_v1(&cf, "pids");
			jail_cg.v1_memory = jail_limits_detect_v1(&cf,
			    "memory");
			jail_cg.v1_freezer = jail_limits_detect_v1(&cf,
			    "freezer");
			jail_cg.v1_cpuacct = jail_limits_detect_v1(&cf,
			    "cpuacct");
		}
	}
	free(cf.cgroup);
	free(cf.mountinfo);
	if (jail_cg.v2 != NULL)
		jail_limits_sweep(jail_cg.v2, "cgroup.freeze", "0\n");
	if (jail_cg.v1_pids != NULL)
		jail_limits_sweep(jail_cg.v1_pids, NULL, NULL);
	if (jail_cg.v1_memory != NULL)
		jail_limits_sweep(jail_cg.v1_memory, NULL, NULL);
	if (jail_cg.v1_freezer != NULL)
		jail_limits_sweep(jail_cg.v1_freezer, "freezer.state",
		    "THAWED\n");
	if (jail_cg.v1_cpuacct != NULL)
		jail_limits_sweep(jail_cg.v1_cpuacct, NULL, NULL);
}

/*
 * The first cgroup attach of a while waits for an RCU grace period (see
 * jail_cg_join below); one that comes within a grace period of another
 * does not. So as soon as a root process knows it will jail something in
 * v1 cgroups, a thread "moves" agentmux into the pids cgroup it is already
 * in (which changes nothing: the kernel skips a move to the same cgroup,
 * but takes the lock, and waits) while the config, store and proxy are set
 * up; the jail's own cgroups are made and joined in a thread too (the wait
 * holds the cgroup mutex), after it. The strings are written beforehand:
 * the thread calls nothing but open, write and close, and it ends in
 * jail_limits_join_wait, so a clone made meanwhile inherits no lock it
 * holds (core-thread.c).
 */
static char jail_prewarm_path[PATH_MAX];
static char jail_prewarm_pid[32];
static struct thread jail_prewarm_thread;

static void
jail_limits_prewarm_run(void *arg)
{
	size_t len = strlen(jail_prewarm_pid);
	int fd;

	(void)arg;
	/* Whether it worked does not matter: it only saves time. */
	if ((fd = open(jail_prewarm_path, O_WRONLY | O_CLOEXEC)) != -1) {
		if (write(fd, jail_prewarm_pid, len) != (ssize_t)len)
			errno = 0;
		close(fd);
	}
}

void
jail_limits_prewarm(void)
{
	if (getuid() != 0 || jail_prewarm_path[0] != '\0')
		return;
	/* Found now, once: reading /proc/self/cgroup would wait for the lock too. */
	jail_limits_detect();
	if (jail_cg.v2 != NULL || jail_cg.v1_pids == NULL)
		return;
	snprintf(jail_prewarm_path, sizeof jail_prewarm_path,
	    "%s/cgroup.procs", jail_cg.v1_pids);
	snprintf(jail_prewarm_pid, sizeof jail_prewarm_pid, "%ld\n",
	    (long)getpid());
	if (thread_spawn(&jail_prewarm_thread, jail_limits_prewarm_run,
	    NULL) != 0)
		log_debug("cannot start the cgroup warm-up thread");
}

/*
 * Making the jail's cgroups and moving it in, as a list of steps run by a
 * thread (see jail_cg_join): a directory to make, or a file to write.
 */
struct jail_cg_op {
	char *path;
	char *text;         /* NULL: mkdir PATH */
	bool optional;      /* a failure is not an error */
};

struct jail_cg_join {
	struct thread thread;
	struct jail_cg_op *ops;
	size_t nops;
	size_t failed;      /* the step that failed, if err != 0 */
	int err;
};

static void
jail_limits_op(struct jail_cg_join *cj, char *path, char *text,
    bool optional)
{
	struct jail_cg_op *op;

	cj->ops = xreallocarray(cj->ops, cj->nops + 1, sizeof *cj->ops);
	op = &cj->ops[cj->nops++];
	op->path = path;
	op->text = text;
	op->optional = optional;
}

/* A cgroup of the jail's under BASE: made, and listed in DIRS to be removed. */
static char *
jail_limits_mkcg(struct jail_cg_join *cj, pid_t owner, const char *base,
    struct strv *dirs)
{
	char *dir;

	dir = xprintf("%s/agentmux-%ld-%u", base, (long)owner, jail_cg.seq);
	strv_add(dirs, dir);
	jail_limits_op(cj, xstrdup(dir), NULL, false);
	return dir;
}

static void
jail_limits_setcg(struct jail_cg_join *cj, const char *dir, const char *file,
    int64_t value, bool optional)
{
	jail_limits_op(cj, xprintf("%s/%s", dir, file), xprintf("%lld\n",
	    (long long)value), optional);
}

static void
jail_limits_v2(struct jail_plan *p, struct jail_cg_join *cj, pid_t owner,
    struct strv *dirs)
{
	const struct jail_limits *l = &p->conf->limits;
	char *dir;

	dir = jail_limits_mkcg(cj, owner, jail_cg.v2, dirs);
	/* Every v2 cgroup but the root can be frozen (cgroup.freeze). */
	p->freezer = xstrdup(dir);
	p->freezer_v2 = true;
	/* And counts its CPU time (cpu.stat) and processes. */
	p->cg_cpu = xstrdup(dir);
	p->cg_procs = xstrdup(dir);
	if (jail_cg.v2_memory)
		p->cg_memory = xstrdup(dir);
	if (l->pids > 0)
		jail_limits_setcg(cj, dir, "pids.max", l->pids, false);
	if (l->memory > 0 && jail_cg.v2_memory) {
		jail_limits_setcg(cj, dir, "memory.max", l->memory, false);
		/* Without swap accounting the limit still holds for RAM. */
		jail_limits_setcg(cj, dir, "memory.swap.max", 0, true);
	}
	free(dir);
}

static void
jail_limits_v1(struct jail_plan *p, struct jail_cg_join *cj, pid_t owner,
    struct strv *dirs)
{
	const struct jail_limits *l = &p->conf->limits;
	char *dir;

	if (jail_cg.v1_pids != NULL && l->pids > 0) {
		dir = jail_limits_mkcg(cj, owner, jail_cg.v1_pids, dirs);
		jail_limits_setcg(cj, dir, "pids.max", l->pids, false);
		p->cg_procs = dir;
	}
	if (jail_cg.v1_memory != NULL && l->memory > 0) {
		dir = jail_limits_mkcg(cj, owner, jail_cg.v1_memory, dirs);
		jail_limits_setcg(cj, dir, "memory.limit_in_bytes", l->memory,
		    false);
		jail_limits_setcg(cj, dir, "memory.memsw.limit_in_bytes",
		    l->memory, true);
		p->cg_memory = dir;
	}
	if (jail_cg.v1_freezer != NULL)
		p->freezer = jail_limits_mkcg(cj, owner, jail_cg.v1_freezer,
		    dirs);
	/* Only where another is made: the costs view is no reason for a cgroup. */
	if (jail_cg.v1_cpuacct != NULL && dirs->n > 0)
		p->cg_cpu = jail_limits_mkcg(cj, owner, jail_cg.v1_cpuacct,
		    dirs);
	if (p->cg_procs == NULL && (dir = p->cg_memory != NULL ? p->cg_memory :
	    p->freezer) != NULL)
		p->cg_procs = xstrdup(dir);
}

/*
 * Decides, before the clone, how each limit will be enforced, and how the
 * jail will be frozen (jail_freeze): by a cgroup wherever one is made.
 */
int
jail_limits_prepare(struct jail_plan *p, char **cause)
{
	const struct jail_limits *l = &p->conf->limits;

	jail_limits_detect();
	p->how_freeze = "SIGSTOP from the jail's init";
	if (jail_cg.v2 != NULL) {
		p->cg = JAIL_CG_V2;
		p->how_freeze = "cgroup v2 freezer";
		if (l->pids > 0)
			p->how_pids = "cgroup v2";
		if (l->memory > 0 && jail_cg.v2_memory)
			p->how_memory = "cgroup v2";
	} else {
		if (jail_cg.v1_pids != NULL && l->pids > 0)
			p->how_pids = "cgroup v1";
		if (jail_cg.v1_memory != NULL && l->memory > 0)
			p->how_memory = "cgroup v1";
		if (jail_cg.v1_freezer != NULL)
			p->how_freeze = "cgroup v1 freezer";
		if (p->how_pids != NULL || p->how_memory != NULL ||
		    jail_cg.v1_freezer != NULL)
			p->cg = JAIL_CG_V1;
	}
	if (l->pids > 0 && p->how_pids == NULL) {
		p->nproc_rlimit = true;
		/* The kernel does not apply RLIMIT_NPROC to host root. */
		p->how_pids = p->uid == 0 ? "none (RLIMIT_NPROC does not "
		    "bind root and no cgroup is writable)" : "rlimit";
	}
	/*
	 * RLIMIT_DATA (private writable memory), not RLIMIT_AS: V8 reserves
	 * about 10 GiB of inaccessible address space for every WebAssembly
	 * memory, so Node agents that use wasm (Gemini CLI) cannot even start
	 * under an address-space limit of a few GiB; what they write to
	 * still counts.
	 */
	if (l->memory > 0 && p->how_memory == NULL) {
		p->data_rlimit = true;
		p->how_memory = "rlimit (private writable memory per process)";
	}
	return 0;
}

/*
 * Moving a process into a cgroup (writing cgroup.procs) takes the kernel's
 * cgroup threadgroup lock for writing, which first waits for an RCU grace
 * period unless another move happened within the last one: ~10 ms on a
 * cgroup v1 host, all of it waiting, and with the cgroup mutex held, so
 * that making a cgroup waits too. A thread makes the cgroups and does the
 * moves while the caller goes on (the start snapshot, the child's mounts);
 * the command is let go only after jail_limits_join_wait. The thread makes
 * no calls but mkdir, open, write and close on strings made beforehand,
 * and ends only in jail_limits_join_wait: the parent may clone other jails
 * meanwhile, and a clone child must not inherit a held lock (core-thread.c).
 */
static void
jail_limits_join_run(void *arg)
{
	struct jail_cg_join *cj = arg;
	struct jail_cg_op *op;
	size_t i, len;
	int fd;

	for (i = 0; i < cj->nops; i++) {
		op = &cj->ops[i];
		if (op->text == NULL) {
			if (mkdir(op->path, 0755) == 0 || errno == EEXIST)
				continue;
		} else if ((fd = open(op->path, O_WRONLY | O_CLOEXEC)) != -1) {
			len = strlen(op->text);
			if (write(fd, op->text, len) == (ssize_t)len) {
				close(fd);
				continue;
			}
			close(fd);
		}
		if (op->optional)
			continue;
		cj->err = errno != 0 ? errno : EIO;
		cj->failed = i;
		break;
	}
}

static void
jail_limits_join_free(struct jail_cg_join *cj)
{
	size_t i;

	for (i = 0; i < cj->nops; i++) {
		free(cj->ops[i].path);
		free(cj->ops[i].text);
	}
	free(cj->ops);
	free(cj);
}

/* What failed, as the user should hear it. */
static char *
jail_limits_join_error(struct jail_cg_join *cj)
{
	const struct jail_cg_op *op = &cj->ops[cj->failed];
	const char *file = strrchr(op->path, '/');

	if (op->text == NULL)
		return xprintf("cannot create the cgroup %s: %s", op->path,
		    strerror(cj->err));
	if (file != NULL && strcmp(file, "/cgroup.procs") == 0)
		return xprintf("cannot move the jail into the cgroup %.*s: %s",
		    (int)(file - op->path), op->path, strerror(cj->err));
	return xprintf("cannot set %s: %s", op->path, strerror(cj->err));
}

int
jail_limits_join_wait(struct jail_cg_join *cj, char **cause)
{
	int rc = 0;

	/* Ends the warm-up too: the jail's own moves have waited for it. */
	thread_join(&jail_prewarm_thread);
	if (cj == NULL)
		return 0;
	thread_join(&cj->thread);
	if (cj->err != 0) {
		if (cause != NULL)
			*cause = jail_limits_join_error(cj);
		rc = -1;
	}
	jail_limits_join_free(cj);
	return rc;
}

/*
 * Starts making the jail's cgroups (listed in DIRS, for removal) and moving
 * PID (its init, waiting) into them, in a thread: jail_limits_join_wait(
 * *JOIN) says when that is done, and how it went.
 */
int
jail_limits_join(struct jail_plan *p, pid_t pid, struct strv *dirs,
    struct jail_cg_join **join, char **cause)
{
	struct jail_cg_join *cj = xcalloc(1, sizeof *cj);
	size_t i, n;
	int rc;

	*join = NULL;
	jail_cg.seq++;
	if (p->cg == JAIL_CG_V2)
		jail_limits_v2(p, cj, getpid(), dirs);
	else
		jail_limits_v1(p, cj, getpid(), dirs);
	for (i = 0, n = dirs->n; i < n; i++)
		jail_limits_op(cj, xprintf("%s/cgroup.procs", dirs->v[i]),
		    xprintf("%ld\n", (long)pid), false);
	if (cj->nops == 0) {
		jail_limits_join_free(cj);
		return 0;
	}
	if ((rc = thread_spawn(&cj->thread, jail_limits_join_run, cj)) != 0) {
		*cause = xprintf("cannot start a thread to make the jail's "
		    "cgroups: %s", strerror(rc));
		jail_limits_join_free(cj);
		return -1;
	}
	*join = cj;
	return 0;
}

void
jail_limits_remove(struct strv *dirs)
{
	size_t i;

	for (i = 0; i < dirs->n; i++)
		rmdir(dirs->v[i]);
	strv_free(dirs);
	strv_init(dirs);
}

static void
jail_limits_set(struct jail_plan *p, int resource, const char *name,
    int64_t value)
{
	struct rlimit r;
	rlim_t v = (rlim_t)value;

	if (getrlimit(resource, &r) == -1)
		jail_child_fail(p, "cannot read RLIMIT_%s", name);
	/* Never above the hard limit we were given: that would fail. */
	if (r.rlim_max != RLIM_INFINITY && v > r.rlim_max)
		v = r.rlim_max;
	r.rlim_cur = r.rlim_max = v;
	if (setrlimit(resource, &r) == -1)
		jail_child_fail(p, "cannot set RLIMIT_%s", name);
}

void
jail_limits_rlimits(struct jail_plan *p)
{
	const struct jail_limits *l = &p->conf->limits;

	jail_limits_set(p, RLIMIT_CORE, "CORE", 0);
	if (l->file_size > 0)
		jail_limits_set(p, RLIMIT_FSIZE, "FSIZE", l->file_size);
	if (l->open_files > 0)
		jail_limits_set(p, RLIMIT_NOFILE, "NOFILE", l->open_files);
	if (l->cpu_seconds > 0)
		jail_limits_set(p, RLIMIT_CPU, "CPU", l->cpu_seconds);
	if (p->nproc_rlimit)
		jail_limits_set(p, RLIMIT_NPROC, "NPROC", l->pids);
	if (p->data_rlimit)
		jail_limits_set(p, RLIMIT_DATA, "DATA", l->memory);
}

static void
jail_limits_json_one(struct json *js, const char *key, int64_t value,
    const char *how)
{
	json_key(js, key);
	json_obj_begin(js);
	json_kint(js, "value", value);
	json_kstr(js, "by", value > 0 ? how : "none");
	json_obj_end(js);
}

void
jail_limits_json(struct jail_plan *p, struct json *js)
{
	const struct jail_limits *l = &p->conf->limits;

	json_key(js, "limits");
	json_obj_begin(js);
	jail_limits_json_one(js, "pids", l->pids, p->how_pids);
	jail_limits_json_one(js, "memory", l->memory, p->how_memory);
	jail_limits_json_one(js, "file_size", l->file_size, "rlimit");
	jail_limits_json_one(js, "open_files", l->open_files, "rlimit");
	jail_limits_json_one(js, "cpu_seconds", l->cpu_seconds, "rlimit");
	jail_limits_json_one(js, "tmp_size", l->tmp_size, "tmpfs size");
	json_kint(js, "core_size", 0);
	json_obj_end(js);
	json_kstr(js, "freeze", p->how_freeze);
}

/* A number at the start of DIR/FILE, or after KEY and a space in it (KEY NULL: the first); -1 if none. */
static int64_t
jail_limits_number(const char *dir, const char *file, const char *key)
{
	char *text, *p;
	long long v = -1;

	if (dir == NULL || (text = jail_limits_read(dir, file)) == NULL)
		return -1;
	p = text;
	if (key != NULL) {
		for (p = text; p != NULL; p = strchr(p, '\n'), p = p ? p + 1 : p)
			if (strncmp(p, key, strlen(key)) == 0 &&
			    p[strlen(key)] == ' ')
				break;
		p = p != NULL ? p + strlen(key) : NULL;
	}
	if (p == NULL || sscanf(p, "%lld", &v) != 1 || v < 0)
		v = -1;
	free(text);
	return v;
}

/* The processes listed in DIR/cgroup.procs; -1 if it cannot be read. */
static int64_t
jail_limits_nprocs(const char *dir)
{
	char *text, *p;
	int64_t n = 0;

	if (dir == NULL || (text = jail_limits_read(dir, "cgroup.procs")) ==
	    NULL)
		return -1;
	for (p = text; *p != '\0'; p++)
		n += *p == '\n';
	free(text);
	return n;
}

int
jail_limits_usage(const struct jail_cg_paths *cg, struct jail_usage *u)
{
	int64_t us;

	u->cpu_ns = u->memory = u->procs = -1;
	if (cg->v2) {
		if ((us = jail_limits_number(cg->cpu, "cpu.stat",
		    "usage_usec")) >= 0)
			u->cpu_ns = us * 1000;
		u->memory = jail_limits_number(cg->memory, "memory.current",
		    NULL);
	} else {
		u->cpu_ns = jail_limits_number(cg->cpu, "cpuacct.usage", NULL);
		u->memory = jail_limits_number(cg->memory,
		    "memory.usage_in_bytes", NULL);
	}
	u->procs = jail_limits_nprocs(cg->procs);
	return u->cpu_ns >= 0 || u->memory >= 0 || u->procs >= 0 ? 0 : -1;
}

char *
jail_limits_describe(void)
{
	jail_limits_detect();
	if (jail_cg.v2 != NULL)
		return xprintf("cgroup v2 (delegated: %s; pids%s)", jail_cg.v2,
		    jail_cg.v2_memory ? ", memory" : "");
	if (jail_cg.v1_pids != NULL || jail_cg.v1_memory != NULL ||
	    jail_cg.v1_freezer != NULL)
		return xprintf("cgroup v1 (%s%s%s%s%s), rlimits for the rest",
		    jail_cg.v1_pids != NULL ? "pids" : "",
		    jail_cg.v1_pids != NULL && jail_cg.v1_memory != NULL ?
		    ", " : "", jail_cg.v1_memory != NULL ? "memory" : "",
		    jail_cg.v1_freezer != NULL && (jail_cg.v1_pids != NULL ||
		    jail_cg.v1_memory != NULL) ? ", " : "",
		    jail_cg.v1_freezer != NULL ? "freezer" : "");
	return xstrdup("limits by rlimit (no delegated cgroup v2; NPROC, DATA, "
	    "FSIZE, NOFILE)");
}
