/*
 * Whether the untracked cache a session left in an index hides
 * untracked files from the user's git status: git status is run twice on
 * a copy of the index, with the cache and without, in a git dir of
 * agentmux's making (nothing of the project's config read but the ignore
 * file it names, every filter off), and what only the second shows was
 * hidden. git's own update of a real cache hides nothing.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "snap/snap-int.h"

/* The user's index is read whole up to this size (as snap-index.c does). */
#define SNAP_UNTR_INDEX_MAX (1024 * 1024 * 1024)
/* The most a run of git status may take before it is given up. */
#define SNAP_UNTR_TIMEOUT 60

/* Writes LEN bytes of DATA to the new file NAME in the dir DIRFD. */
static int
snap_untr_put(int dirfd, const char *name, const void *data, size_t len)
{
	int fd, rc;

	if ((fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL |
	    O_NOFOLLOW | O_CLOEXEC, 0600)) == -1)
		return -1;
	rc = util_write_all(fd, data, len);
	if (close(fd) == -1)
		rc = -1;
	return rc;
}

/*
 * Where the index looked at is: GITDIR (whose index it is) and COMMON
 * (its config and info/exclude; GITDIR's own but for a worktree's), paths
 * agentmux found or made; both NULL: PROJECT/.git, read beneath the
 * project.
 */
struct snap_untr_at {
	const char *project;
	const char *gitdir;
	const char *common;
};

/* A's FILE, read whole into OUT, no link followed (its git dir's neither): 0, -1 (errno). */
static int
snap_untr_read(const struct snap_untr_at *a, bool common, const char *file,
    struct buf *out)
{
	const char *dir = common ? a->common : a->gitdir;
	char *path = dir != NULL ? xstrdup(dir) : xprintf("%s/.git",
	    a->project);
	int fd, rc, err;

	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	free(path);
	if (fd == -1)
		return -1;
	rc = path_read_beneath(fd, file, SNAP_UNTR_INDEX_MAX, out);
	err = errno;
	close(fd);
	errno = err;
	return rc;
}

/*
 * Fills the scratch git dir DIR: HEAD on an unborn branch (git status
 * needs no object), the attributes agentmux's own repository has (no
 * filter runs), the repository's info/exclude byte for byte (the cache
 * records its hash) and INDEX.
 */
static int
snap_untr_fill(const char *dir, const struct snap_untr_at *a,
    const struct buf *index)
{
	static const char head[] = "ref: refs/heads/agentmux-untr\n";
	struct buf exclude;
	int fd, rc = -1;

	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return -1;
	buf_init(&exclude);
	if (snap_untr_read(a, true, "info/exclude", &exclude) == -1 &&
	    errno != ENOENT)
		goto out;
	if (mkdirat(fd, "objects", 0700) == -1 || mkdirat(fd, "refs",
	    0700) == -1 || mkdirat(fd, "info", 0700) == -1 ||
	    snap_untr_put(fd, "HEAD", head, strlen(head)) == -1 ||
	    snap_untr_put(fd, "info/attributes", snap_raw_attributes,
	    strlen(snap_raw_attributes)) == -1 ||
	    snap_untr_put(fd, "index", index->data, index->len) == -1)
		goto out;
	if (exclude.data != NULL && snap_untr_put(fd, "info/exclude",
	    exclude.data, exclude.len) == -1)
		goto out;
	rc = 0;
out:
	buf_free(&exclude);
	close(fd);
	return rc;
}

/*
 * The core.excludesFile of A's own config, read through no link and from
 * no FIFO (snap_untr_read; a nested repository's is the session's), no
 * include followed, or NULL.
 */
static char *
snap_untr_excludes_file(const struct snap_untr_at *a)
{
	struct buf config;
	char *v = NULL;

	buf_init(&config);
	if (snap_untr_read(a, true, "config", &config) == 0)
		v = snap_git_config_get(config.data, config.len,
		    "core.excludesFile");
	buf_free(&config);
	return v;
}

/* git status's command line and environment over the scratch git dir DIR, the cache used or not (USE). */
static void
snap_untr_cmd(const char *project, const char *dir, const char *excludes,
    bool use, struct strv *argv, struct strv *env)
{
	snap_env_plain(env);
	strv_addf(env, "GIT_DIR=%s", dir);
	strv_addf(env, "GIT_WORK_TREE=%s", project);
	strv_addf(env, "GIT_INDEX_FILE=%s/index", dir);
	strv_init(argv);
	strv_add(argv, "git");
	strv_add(argv, "--no-pager");
	strv_add(argv, "-c");
	strv_add(argv, use ? "core.untrackedCache=true" :
	    "core.untrackedCache=false");
	if (excludes != NULL) {
		strv_add(argv, "-c");
		strv_addf(argv, "core.excludesFile=%s", excludes);
	}
	strv_add(argv, "status");
	strv_add(argv, "--porcelain");
	strv_add(argv, "-z");
	strv_add(argv, "--untracked-files=normal");
	strv_add(argv, "--ignore-submodules=all");
	strv_add(argv, "--no-renames");
}

static void
snap_untr_opts(struct proc_opts *o, const char *project,
    const struct strv *argv, const struct strv *env)
{
	memset(o, 0, sizeof *o);
	o->data_max = snap_git_mem;
	o->argv = argv->v;
	o->env = env->v;
	o->dir = project;
	o->out_fd = -1;
	o->umask = -1;
	o->timeout = SNAP_UNTR_TIMEOUT;
	o->err_max = 64 * 1024;
}

/* The untracked files of git status -z output B into OUT. */
static void
snap_untr_parse(const struct buf *b, struct strv *out)
{
	const char *p, *end;

	for (p = b->data, end = b->data + b->len; p != NULL && p < end;
	    p += strlen(p) + 1) {
		if (strncmp(p, "?? ", 3) == 0)
			strv_add(out, p + 3);
	}
}

/*
 * git status's untracked files in PROJECT (scratch git dir DIR), the
 * cache used or not (USE), into OUT: -1 with *CAUSE if git failed.
 */
static int
snap_untr_status(const char *project, const char *dir, const char *excludes,
    bool use, struct strv *out, char **cause)
{
	struct proc_opts o;
	struct strv env, argv;
	struct buf b;
	int st, rc;

	snap_untr_cmd(project, dir, excludes, use, &argv, &env);
	snap_untr_opts(&o, project, &argv, &env);
	buf_init(&b);
	rc = proc_run(&o, &b, NULL, &st, cause);
	if (rc == 0 && st != 0) {
		*cause = xprintf("git status exited %d", st);
		rc = -1;
	}
	if (rc == 0)
		snap_untr_parse(&b, out);
	buf_free(&b);
	strv_free(&argv);
	strv_free(&env);
	return rc;
}

static int
snap_untr_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Adds to HIDDEN what is in ALL and not in SEEN (sorted here). */
static void
snap_untr_missing(struct strv *seen, const struct strv *all,
    struct strv *hidden)
{
	size_t i;

	if (seen->n > 0)
		qsort(seen->v, seen->n, sizeof *seen->v, snap_untr_cmp);
	for (i = 0; i < all->n; i++) {
		if (seen->n == 0 || bsearch(&all->v[i], seen->v, seen->n,
		    sizeof *seen->v, snap_untr_cmp) == NULL)
			strv_add(hidden, all->v[i]);
	}
}

/* Both runs of git status over the scratch git dir DIR. */
static int
snap_untr_compare(const struct snap_untr_at *a, const char *dir,
    struct strv *hidden, char **cause)
{
	const char *project = a->project;
	struct strv cached, all;
	char *excludes = snap_untr_excludes_file(a);
	int rc;

	strv_init(&cached);
	strv_init(&all);
	rc = snap_untr_status(project, dir, excludes, true, &cached, cause);
	if (rc == 0)
		rc = snap_untr_status(project, dir, excludes, false, &all,
		    cause);
	if (rc == 0)
		snap_untr_missing(&cached, &all, hidden);
	strv_free(&cached);
	strv_free(&all);
	free(excludes);
	return rc;
}

/* The scratch git dir for A, filled: its path (caller removes and frees), NULL with *CAUSE. */
static char *
snap_untr_prepare(const struct snap_untr_at *a, char **cause)
{
	struct buf index;
	const char *rt;
	char *dir = NULL, *tmpl;

	/* The runtime dir is private (0700) where /tmp is shared with every user. */
	if ((rt = path_runtime_dir_need(cause)) == NULL)
		return NULL;
	tmpl = xprintf("%s/untr.XXXXXX", rt);
	buf_init(&index);
	if (snap_untr_read(a, false, "index", &index) == -1)
		*cause = xprintf("cannot read the index in %s: %s",
		    a->gitdir != NULL ? a->gitdir : ".git", strerror(errno));
	else if (mkdtemp(tmpl) == NULL)
		*cause = xprintf("cannot make a dir in %s: %s", rt,
		    strerror(errno));
	else if (snap_untr_fill(tmpl, a, &index) == -1) {
		*cause = xprintf("cannot fill %s: %s", tmpl, strerror(errno));
		path_remove_tree(tmpl);
	} else
		dir = xstrdup(tmpl);
	free(tmpl);
	buf_free(&index);
	return dir;
}

int
snap_untr_hidden(const char *project, const char *gitdir, const char *common,
    struct strv *hidden, char **cause)
{
	struct snap_untr_at a = { project, gitdir, common };
	char *dir;
	int rc;

	if ((dir = snap_untr_prepare(&a, cause)) == NULL)
		return -1;
	rc = snap_untr_compare(&a, dir, hidden, cause);
	path_remove_tree(dir);
	free(dir);
	return rc;
}

/* The same on the loop: the two runs of git status one after the other. */
struct snap_untr {
	struct event_base *base;
	char *project;
	char *dir;
	char *excludes;
	struct proc *p;
	struct strv cached;
	struct strv all;
	struct strv *hidden;
	char **cause;
	int *rc;
	void (*done)(void *);
	void *arg;
};

static void snap_untr_over(struct proc *, void *);

/* Starts the run with the cache (USE) or without: -1 with *U->cause. */
static int
snap_untr_run(struct snap_untr *u, bool use)
{
	struct proc_opts o;
	struct strv argv, env;

	snap_untr_cmd(u->project, u->dir, u->excludes, use, &argv, &env);
	snap_untr_opts(&o, u->project, &argv, &env);
	u->p = proc_start(u->base, &o, snap_untr_over, u, u->cause);
	strv_free(&argv);
	strv_free(&env);
	return u->p == NULL ? -1 : 0;
}

/* A run is over: the next one starts, or the answer is in and DONE runs. */
static void
snap_untr_over(struct proc *p, void *arg)
{
	struct snap_untr *u = arg;
	bool first = *u->rc == 1;
	int st = proc_status(p);

	if (st != 0) {
		*u->cause = xprintf("git status exited %d", st);
		*u->rc = -1;
	} else if (first)
		snap_untr_parse(proc_out(p), &u->cached);
	else
		snap_untr_parse(proc_out(p), &u->all);
	proc_free(p);
	u->p = NULL;
	if (st == 0 && first) {
		*u->rc = 2;
		if (snap_untr_run(u, false) == 0)
			return;
		*u->rc = -1;
	}
	if (*u->rc != -1) {
		snap_untr_missing(&u->cached, &u->all, u->hidden);
		*u->rc = 0;
	}
	u->done(u->arg);
}

struct snap_untr *
snap_untr_start(struct event_base *base, const char *project,
    const char *gitdir, const char *common, struct strv *hidden, int *rc,
    char **cause, void (*done)(void *), void *arg)
{
	struct snap_untr_at a = { project, gitdir, common };
	struct snap_untr *u;
	char *dir;

	*rc = -1;
	if ((dir = snap_untr_prepare(&a, cause)) == NULL)
		return NULL;
	u = xcalloc(1, sizeof *u);
	u->base = base;
	u->project = xstrdup(project);
	u->dir = dir;
	u->excludes = snap_untr_excludes_file(&a);
	strv_init(&u->cached);
	strv_init(&u->all);
	u->hidden = hidden;
	u->cause = cause;
	u->rc = rc;
	u->done = done;
	u->arg = arg;
	*rc = 1;
	if (snap_untr_run(u, true) == -1) {
		*rc = -1;
		snap_untr_free(u);
		return NULL;
	}
	return u;
}

void
snap_untr_free(struct snap_untr *u)
{
	if (u == NULL)
		return;
	proc_free(u->p);
	path_remove_tree(u->dir);
	free(u->dir);
	free(u->project);
	free(u->excludes);
	strv_free(&u->cached);
	strv_free(&u->all);
	free(u);
}
