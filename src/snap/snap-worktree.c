/* Worktree sessions: a linked worktree of the project on a branch of its own, made by host-side git kept away from what the project names. */
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "snap-int.h"
#include "snap.h"

/* The most of .worktreeinclude agentmux reads. */
#define SNAP_WORKTREE_INCLUDE_MAX (256 * 1024)
/* How long git may take to check a worktree out. */
#define SNAP_WORKTREE_TIMEOUT 600
/* How long each git learning the start snapshot's facts beside git worktree add may take. */
#define SNAP_WORKTREE_SIDE_SECS 60
/* What .worktreeinclude may copy into the data dir, in bytes of data. */
#define SNAP_WORKTREE_COPY_MAX ((int64_t)1 << 30)

void
snap_worktree_clear(struct snap_worktree *wt)
{
	free(wt->path);
	free(wt->project);
	free(wt->common);
	free(wt->admin);
	free(wt->branch);
	free(wt->base);
	free(wt->tree);
	strv_free(&wt->converted);
	memset(wt, 0, sizeof *wt);
}

/*
 * The drivers in OUT (git config -z --get-regexp's) into NAMES, each as
 * its section and name: "filter.NAME", "merge.NAME" or "diff.NAME".
 */
static void
snap_worktree_filter_parse(struct buf *out, struct strv *names)
{
	char *p, *end, *name;
	const char *dot;

	buf_add(out, "", 1);
	for (p = out->data; p < out->data + out->len - 1; p = end + 1) {
		end = p + strlen(p);
		/* "filter.NAME.smudge\nVALUE": NAME may hold dots. */
		*strchrnul(p, '\n') = '\0';
		if ((dot = strrchr(p, '.')) == NULL ||
		    strchr(p, '.') == dot)
			continue;
		name = xstrndup(p, (size_t)(dot - p));
		if (!strv_contains(names, name))
			strv_add(names, name);
		free(name);
	}
}

/*
 * The attributes file the config in OUT (git config -z --get-regexp's, as
 * above) names instead of the user's own (core.attributesFile, the last
 * one), as git reads the path: absolute, or from ~/. NULL if none (or one
 * named otherwise, which is not looked at).
 */
static char *
snap_worktree_attrs_file(const struct buf *out)
{
	static const char key[] = "core.attributesfile\n";
	const char *p, *end, *value = NULL, *home = getenv("HOME");

	if (out->data == NULL)
		return NULL;
	end = out->data + out->len;
	for (p = out->data; p < end; p += strnlen(p, (size_t)(end - p)) + 1) {
		if ((size_t)(end - p) > sizeof key - 1 &&
		    memcmp(p, key, sizeof key - 1) == 0 &&
		    memchr(p, '\0', (size_t)(end - p)) != NULL)
			value = p + sizeof key - 1;
	}
	if (value == NULL)
		return NULL;
	if (*value == '/')
		return xstrdup(value);
	if (strncmp(value, "~/", 2) == 0 && home != NULL && *home == '/')
		return xprintf("%s/%s", home, value + 2);
	return NULL;
}

/* The command that lists GITDIR's drivers, into *O (ENV is filled). */
static void
snap_worktree_filter_opts(const char *gitdir, struct strv *env,
    struct proc_opts *o)
{
	static const char drivers[] = "^(filter\\..*\\.(smudge|clean|process)|"
	    "merge\\..*\\.driver|diff\\..*\\.(textconv|command)|"
	    "core\\.attributesfile)$";
	static const char *const args[] = { "git", "config", "-z",
	    "--get-regexp", drivers, NULL };

	snap_env_plain(env);
	strv_addf(env, "GIT_DIR=%s", gitdir);
	memset(o, 0, sizeof *o);
	o->data_max = snap_git_mem;
	o->argv = (char **)args;
	o->env = env->v;
	o->dir = "/";
	o->out_fd = -1;
	o->umask = -1;
	o->timeout = 30;
}

/*
 * The filter, merge and diff drivers git knows for GITDIR (its config,
 * the user's, the system's) into NAMES. A project's .gitattributes names
 * which one runs on each file, and a jailed command sharing the tree can
 * define one in .git/config: checking out or merging an agent's branch
 * would run the user's smudge filter on content the agent chose (git-lfs
 * then fetches from a URL in the project's .lfsconfig, outside the
 * proxy), or a command the project wrote, on the host.
 * Blocking: for the commands that are their process's only loop.
 */
static void
snap_worktree_filter_names(const char *gitdir, struct strv *names)
{
	struct proc_opts o;
	struct strv env;
	struct buf out, err;
	char *cause = NULL;
	int st;

	snap_worktree_filter_opts(gitdir, &env, &o);
	buf_init(&out);
	buf_init(&err);
	if (proc_run(&o, &out, &err, &st, &cause) == 0 && st == 0)
		snap_worktree_filter_parse(&out, names);
	free(cause);
	buf_free(&out);
	buf_free(&err);
	strv_free(&env);
}

/*
 * What a merge driver becomes: git's own text merge of the three files,
 * as if the attribute named no driver (a conflict keeps its markers).
 */
#define SNAP_WORKTREE_MERGE_TEXT \
	"git merge-file --marker-size=%L -L ours -L base -L theirs %A %O %B"

/* Config that blanks the driver NAME ("filter.X", "merge.X", "diff.X") into ENV, from key *COUNT on. */
static void
snap_worktree_no_driver(struct strv *env, const char *name, size_t *count)
{
	static const char *const blank[][2] = {
		{ "filter.", "smudge=" }, { "filter.", "clean=" },
		{ "filter.", "process=" }, { "filter.", "required=false" },
		{ "merge.", "driver=" SNAP_WORKTREE_MERGE_TEXT },
		{ "merge.", "recursive=text" },
		{ "diff.", "textconv=cat" }, { "diff.", "command=" },
	};
	const char *eq;
	size_t i;

	for (i = 0; i < nitems(blank); i++) {
		if (strncmp(name, blank[i][0], strlen(blank[i][0])) != 0)
			continue;
		eq = strchr(blank[i][1], '=');
		strv_addf(env, "GIT_CONFIG_KEY_%zu=%s.%.*s", *count, name,
		    (int)(eq - blank[i][1]), blank[i][1]);
		strv_addf(env, "GIT_CONFIG_VALUE_%zu=%s", (*count)++, eq + 1);
	}
}

/*
 * Adds to ENV (whose GIT_CONFIG_COUNT entries come first) config that
 * blanks every driver NAMES holds: git then checks files out and in as
 * they are, merges them as text and diffs them as they are. git-lfs's
 * own smudge is skipped too.
 */
static void
snap_worktree_no_filters_named(struct strv *env, const struct strv *names)
{
	size_t i, at = env->n, count = 0;

	for (i = 0; i < env->n; i++) {
		if (strncmp(env->v[i], "GIT_CONFIG_COUNT=", 17) == 0) {
			at = i;
			count = (size_t)strtoul(env->v[i] + 17, NULL, 10);
		}
	}
	strv_add(env, "GIT_LFS_SKIP_SMUDGE=1");
	for (i = 0; i < names->n; i++)
		snap_worktree_no_driver(env, names->v[i], &count);
	if (at < env->n) {
		free(env->v[at]);
		env->v[at] = xprintf("GIT_CONFIG_COUNT=%zu", count);
	} else
		strv_addf(env, "GIT_CONFIG_COUNT=%zu", count);
}

/* The same for the drivers GITDIR knows, looked up (blocking). */
static void
snap_worktree_no_filters(struct strv *env, const char *gitdir)
{
	struct strv names;

	strv_init(&names);
	snap_worktree_filter_names(gitdir, &names);
	snap_worktree_no_filters_named(env, &names);
	strv_free(&names);
}

/*
 * git in DIR with GIT_DIR=GITDIR (and GIT_WORK_TREE=WORKTREE if set), the
 * filter drivers NAMES blanked: into *O, with ENV and ARGV filled.
 */
static void
snap_worktree_git_opts(const char *gitdir, const char *worktree,
    const char *dir, const char *const *args, const struct strv *names,
    struct strv *env, struct strv *argv, struct proc_opts *o)
{
	size_t i;

	snap_env_plain(env);
	snap_worktree_no_filters_named(env, names);
	strv_addf(env, "GIT_DIR=%s", gitdir);
	if (worktree != NULL)
		strv_addf(env, "GIT_WORK_TREE=%s", worktree);
	strv_init(argv);
	strv_add(argv, "git");
	for (i = 0; args[i] != NULL; i++)
		strv_add(argv, args[i]);
	memset(o, 0, sizeof *o);
	o->data_max = snap_git_mem;
	o->argv = argv->v;
	o->env = env->v;
	o->dir = dir;
	o->out_fd = -1;
	/* The checkout's files as the user's own git would make them. */
	o->umask = (int)util_user_umask();
	o->timeout = SNAP_WORKTREE_TIMEOUT;
}

static int snap_worktree_git_chunk(const char *, const char *, const char *,
    const char *const *, const char *, int, int, struct buf *,
    void (*)(void *, const char *, size_t), void *, char **);

/*
 * snap_worktree_git with stdin INPUT (a string) or from the file IN_FD,
 * and stdout into the file OUT_FD (NULL and -1: /dev/null, and OUT).
 */
static int
snap_worktree_git_io(const char *gitdir, const char *worktree,
    const char *dir, const char *const *args, const char *input, int in_fd,
    int out_fd, struct buf *out, char **cause)
{
	return snap_worktree_git_chunk(gitdir, worktree, dir, args, input,
	    in_fd, out_fd, out, NULL, NULL, cause);
}

/* snap_worktree_git_io with stdout given to CHUNK(ARG, ...) as it comes (if not NULL). */
static int
snap_worktree_git_chunk(const char *gitdir, const char *worktree,
    const char *dir, const char *const *args, const char *input, int in_fd,
    int out_fd, struct buf *out, void (*chunk)(void *, const char *, size_t),
    void *arg, char **cause)
{
	struct proc_opts o;
	struct strv env, argv, names;
	struct buf err;
	int st, rc;

	strv_init(&names);
	snap_worktree_filter_names(gitdir, &names);
	snap_worktree_git_opts(gitdir, worktree, dir, args, &names, &env,
	    &argv, &o);
	strv_free(&names);
	o.input = input;
	o.inputlen = input != NULL ? strlen(input) : 0;
	o.has_in_fd = in_fd != -1;
	o.in_fd = in_fd;
	o.out_fd = out_fd;
	o.chunk = chunk;
	o.chunk_arg = arg;
	buf_init(&err);
	rc = proc_run(&o, out, &err, &st, cause);
	if (rc == 0 && st != 0) {
		*cause = snap_git_complaint(args[0], &err, st);
		rc = -1;
	}
	buf_free(&err);
	strv_free(&env);
	strv_free(&argv);
	return rc;
}

/*
 * Runs git as snap_worktree_git_opts sets it up, to the end (blocking:
 * for the commands that are their process's only loop); -1 with *CAUSE
 * unless it exits 0.
 */
static int
snap_worktree_git(const char *gitdir, const char *worktree, const char *dir,
    const char *const *args, struct buf *out, char **cause)
{
	return snap_worktree_git_io(gitdir, worktree, dir, args, NULL, -1, -1,
	    out, cause);
}

/*
 * Makes (or opens) REL under the directory DIRFD one component at a time,
 * never through a symlink: the project's .git may hold links an earlier
 * jailed command planted. Returns its fd, or -1 with errno.
 */
int
snap_worktree_mkdirs(int dirfd, const char *rel, mode_t mode)
{
	char *copy = xstrdup(rel), *part, *save = NULL;
	int fd = dup(dirfd), next;
	bool made;

	for (part = strtok_r(copy, "/", &save); fd != -1 && part != NULL;
	    part = strtok_r(NULL, "/", &save)) {
		if (strcmp(part, "..") == 0 || strcmp(part, ".") == 0) {
			close(fd);
			fd = -1;
			errno = EINVAL;
			break;
		}
		made = mkdirat(fd, part, 0700) == 0;
		if (!made && errno != EEXIST) {
			close(fd);
			fd = -1;
			break;
		}
		next = openat(fd, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
		/* As git makes it: MODE less the user's umask, not agentmux's own. */
		if (made && next != -1)
			(void)fchmod(next, snap_git_mode(fd, mode));
		close(fd);
		fd = next;
	}
	free(copy);
	return fd;
}

/* The project's own git dir: PROJECT/.git, a real directory. */
static char *
snap_worktree_common(const char *project, char **cause)
{
	char *git = xprintf("%s/.git", project), *real;
	struct stat st;

	if (lstat(git, &st) == -1 || !S_ISDIR(st.st_mode)) {
		*cause = xprintf("cannot make a worktree of %s: it has no .git "
		    "directory of its own (a worktree session needs the main "
		    "checkout of a git repository); run it without --worktree",
		    project);
		free(git);
		return NULL;
	}
	real = realpath(git, NULL);
	free(git);
	if (real == NULL)
		*cause = xprintf("cannot make a worktree of %s: %s", project,
		    strerror(errno));
	return real;
}

/* Reads PATH/.git ("gitdir: X") as git just wrote it: X must be a dir under COMMON/worktrees. */
static char *
snap_worktree_admin(const char *path, const char *common, char **cause)
{
	char *file = xprintf("%s/.git", path), *admin = NULL, *real = NULL;
	char *under = xprintf("%s/worktrees/", common);
	struct buf b;
	struct stat st;

	buf_init(&b);
	if (buf_read_file(&b, file) == 0 && b.data != NULL &&
	    strncmp(b.data, "gitdir: ", 8) == 0) {
		b.data[strcspn(b.data, "\n")] = '\0';
		real = realpath(b.data + 8, NULL);
	}
	if (real != NULL && strncmp(real, under, strlen(under)) == 0 &&
	    strchr(real + strlen(under), '/') == NULL &&
	    lstat(real, &st) == 0 && S_ISDIR(st.st_mode))
		admin = real;
	else {
		*cause = xprintf("git made the worktree %s, but its .git does "
		    "not point into %s/worktrees; remove it with 'git worktree "
		    "remove %s'", path, common, path);
		free(real);
	}
	buf_free(&b);
	free(file);
	free(under);
	return admin;
}

/*
 * An empty config.worktree in the worktree's admin dir, for the jail to
 * bind read-only: one the agent wrote there would be obeyed by the
 * user's git (core.fsmonitor runs a command) once
 * extensions.worktreeConfig is set.
 */
static int
snap_worktree_noconfig(const struct snap_worktree *wt, char **cause)
{
	int dfd, fd = -1;

	if ((dfd = open(wt->admin, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) != -1) {
		fd = openat(dfd, "config.worktree", O_WRONLY | O_CREAT |
		    O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd != -1)
			(void)fchmod(fd, snap_git_mode(dfd, 0666));
		close(dfd);
	}
	if (fd == -1) {
		*cause = xprintf("cannot make %s/config.worktree: %s",
		    wt->admin, strerror(errno));
		return -1;
	}
	close(fd);
	return 0;
}

/* The branch's dirs (refs and reflogs) exist as real dirs, for the jail's writable binds. */
static int
snap_worktree_refdirs(const struct snap_worktree *wt, char **cause)
{
	const char *slash = strrchr(wt->branch, '/');
	char *dir = xstrndup(wt->branch, (size_t)(slash - wt->branch));
	char *refs = xprintf("refs/heads/%s", dir);
	char *logs = xprintf("logs/refs/heads/%s", dir);
	int cfd, fd = -1, fd2 = -1;

	if ((cfd = open(wt->common, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) != -1) {
		fd = snap_worktree_mkdirs(cfd, refs, 0777);
		fd2 = snap_worktree_mkdirs(cfd, logs, 0777);
		close(cfd);
	}
	if (fd == -1 || fd2 == -1)
		*cause = xprintf("cannot make the branch's dirs under %s "
		    "(%s, %s): %s; something there is not a directory", wt->common,
		    refs, logs, strerror(errno));
	if (fd != -1)
		close(fd);
	if (fd2 != -1)
		close(fd2);
	free(dir);
	free(refs);
	free(logs);
	return fd == -1 || fd2 == -1 ? -1 : 0;
}

static int snap_worktree_open_dir(int, const char *);

/*
 * The dirs snap_worktree_refdirs made for WT's branch, each as far up as
 * "agentmux/ID", removed where empty (a make that ended before git made
 * the branch: a stop in the lock wait left two empty dirs in the user's
 * .git each time). Never through a link; nothing in them is removed.
 */
static void
snap_worktree_refdirs_undo(const struct snap_worktree *wt)
{
	static const char *const tops[] = { "refs/heads/", "logs/refs/heads/" };
	const char *slash = strrchr(wt->branch, '/');
	char *rel, *name;
	size_t i, keep;
	int cfd, pfd, rc;

	if ((cfd = open(wt->common, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1)
		return;
	for (i = 0; i < nitems(tops); i++) {
		/* "refs/heads/agentmux" stays: it is a mount point in main-tree jails. */
		keep = strlen(tops[i]) + strlen("agentmux");
		rel = xprintf("%s%.*s", tops[i], (int)(slash - wt->branch),
		    wt->branch);
		for (rc = 0; rc == 0 && strlen(rel) > keep;) {
			name = strrchr(rel, '/');
			*name++ = '\0';
			if ((pfd = snap_worktree_open_dir(cfd, rel)) == -1)
				break;
			rc = unlinkat(pfd, name, AT_REMOVEDIR);
			close(pfd);
		}
		free(rel);
	}
	close(cfd);
}

/* A branch name agentmux makes: agentmux/ID/NAME, NAME of safe characters. */
static bool
snap_worktree_branch_ok(const char *branch)
{
	const char *p;

	if (strncmp(branch, "agentmux/", 9) != 0 || strlen(branch) > 200)
		return false;
	for (p = branch; *p != '\0'; p++) {
		if (!(*p >= 'a' && *p <= 'z') && !(*p >= 'A' && *p <= 'Z') &&
		    !(*p >= '0' && *p <= '9') && strchr("/._-", *p) == NULL)
			return false;
	}
	return strstr(branch, "..") == NULL && strstr(branch, "//") == NULL &&
	    strchr(branch + 9, '/') != NULL && branch[strlen(branch) - 1] !=
	    '/' && strstr(branch, ".lock") == NULL && strstr(branch, "/.") ==
	    NULL;
}

/* Writes LEN bytes of BUF at OFF of FD, all of them; -1 with errno. */
static int
snap_worktree_pwrite(int fd, const char *buf, size_t len, off_t off)
{
	ssize_t n;

	while (len > 0) {
		if ((n = pwrite(fd, buf, len, off)) == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		buf += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

/*
 * Copies IN's data to OUT at the same offsets from *POS on, leaving holes
 * as holes (a sparse file the project holds costs the data dir no more
 * than it costs the project), until LIMIT bytes are copied: 0 if there is
 * more (*POS is where to go on), 1 once OUT has it all and IN's SIZE, -1
 * with errno.
 */
static int
snap_worktree_copy_some(int in, int out, off_t size, off_t *pos, off_t limit)
{
	char buf[65536];
	off_t data, hole, o, done = 0;
	ssize_t n;

	while (*pos < size && done < limit) {
		if ((data = lseek(in, *pos, SEEK_DATA)) == -1) {
			if (errno == ENXIO) {
				*pos = size;    /* no data after it */
				break;
			}
			if (errno != EINVAL)
				return -1;
			data = *pos;            /* no SEEK_DATA here: all is data */
			hole = size;
		} else if ((hole = lseek(in, data, SEEK_HOLE)) == -1)
			return -1;
		for (o = data; o < hole && done < limit; o += n, done += n) {
			n = pread(in, buf, (size_t)(hole - o < (off_t)sizeof buf ?
			    hole - o : (off_t)sizeof buf), o);
			if (n == -1 && errno == EINTR) {
				n = 0;
				continue;
			}
			if (n <= 0 || snap_worktree_pwrite(out, buf, (size_t)n,
			    o) == -1)
				return -1;
		}
		*pos = o;
	}
	if (*pos < size)
		return 0;
	return ftruncate(out, size) == -1 ? -1 : 1;
}

/*
 * Opens the regular file REL under SRCFD (*IN) and makes it under DSTFD
 * (*OUT), following no link on either side, if its data fits in what is
 * left of *BUDGET (taken from it): 0 if opened, 1 if over the budget, -1
 * if it cannot be copied.
 */
static int
snap_worktree_copy_open(int srcfd, int dstfd, const char *rel,
    int64_t *budget, int *in, int *out, off_t *size)
{
	const char *slash = strrchr(rel, '/');
	char *dir = slash != NULL ? xstrndup(rel, (size_t)(slash - rel)) : NULL;
	struct stat st;
	int64_t cost;
	int dfd, rc = -1;

	*out = -1;
	*in = path_open_beneath(srcfd, rel, O_RDONLY | O_NONBLOCK | O_CLOEXEC,
	    0);
	if (*in == -1 || fstat(*in, &st) == -1 || !S_ISREG(st.st_mode))
		goto out;
	/* What it takes on disk: a sparse file's holes cost nothing. */
	cost = (int64_t)st.st_blocks * 512;
	if (cost > (int64_t)st.st_size)
		cost = (int64_t)st.st_size;
	if (cost > *budget) {
		rc = 1;
		goto out;
	}
	dfd = dir != NULL ? snap_worktree_mkdirs(dstfd, dir, 0777) :
	    dup(dstfd);
	if (dfd == -1)
		goto out;
	*out = openat(dfd, slash != NULL ? slash + 1 : rel, O_WRONLY | O_CREAT |
	    O_EXCL | O_NOFOLLOW | O_CLOEXEC, st.st_mode & 0777);
	close(dfd);
	if (*out != -1) {
		*budget -= cost;
		*size = st.st_size;
		rc = 0;
	}
out:
	if (rc != 0 && *in != -1)
		close(*in);
	if (rc != 0)
		*in = -1;
	free(dir);
	return rc;
}

/*
 * Making a worktree on the caller's loop: each git is a child of core's
 * runner, and .worktreeinclude's copies go in slices of a few MiB a loop
 * turn, so the sessions, panes and proxies beside it run on meanwhile.
 */
enum snap_worktree_step {
	SNAP_WORKTREE_FILTERS,    /* git config: the filter drivers */
	SNAP_WORKTREE_COMMIT,     /* git rev-parse: the base commit */
	SNAP_WORKTREE_ADD,        /* git worktree add */
	SNAP_WORKTREE_LIST,       /* git ls-files: what .worktreeinclude names */
	SNAP_WORKTREE_COPY,       /* the copies, a slice a turn */
};

/* What one loop turn copies at most, in bytes of data. */
#define SNAP_WORKTREE_SLICE ((off_t)4 << 20)

struct snap_worktree_make {
	struct event_base *base;
	struct snap_worktree *wt;
	enum snap_worktree_step step;
	char *ref;                /* what the worktree starts from */
	char *scratch;
	char *excl;               /* the copy of .worktreeinclude git reads */
	struct strv filters;      /* the filter drivers, blanked for every git */
	struct strv env, argv;
	struct proc *proc;
	struct event *slice_ev;
	struct buf list;          /* ls-files -z: the files to copy */
	size_t at;                /* the next of them */
	size_t cur;               /* the one being copied */
	int pfd, wfd;             /* the project and the worktree */
	int in, out;              /* the file being copied */
	off_t pos, size;
	int64_t budget;
	struct snap_worktree_made made;
	int lock;                 /* the worktrees' lock, held over git worktree add */
	struct event *lock_ev;    /* the next try to take it */
	int64_t lock_until;       /* util_now_ms when the wait for it ends */
	snap_worktree_cb done;
	void *arg;
	bool stopped;             /* snap_worktree_make_stop: no next step */
	bool refdirs;             /* the branch's ref and reflog dirs were made */
	/*
	 * Beside git worktree add: what the start snapshot needs of the
	 * commit (its tree, then its files' names, then their attributes),
	 * a git at a time. M ends once it is over too (END_WAITS).
	 */
	struct proc *side;
	int side_step;            /* 0 rev-parse, 1 ls-tree, 2 check-attr */
	bool end_waits;
	char *attr_stamp;         /* the attributes' files as the side chain began */
	char *attrs_file;         /* core.attributesFile, where it is known */
};

static void snap_worktree_make_cb(struct proc *, void *);

/* How long a worktree's start waits for another's git worktree add in its repository. */
#define SNAP_WORKTREE_LOCK_WAIT 600
/* How often it tries meanwhile, in milliseconds. */
#define SNAP_WORKTREE_LOCK_POLL 25

/*
 * The worktrees' lock of git dir COMMON, open and not taken: DATA/locks/
 * worktrees-DEV-INO.lock (-1 with *CAUSE). git is not safe with two
 * `worktree add` (or an add and a remove) at once in one repository: one
 * reads the other's admin dir half made ("failed to read .git/worktrees/
 * NAME/commondir"). Sessions, restore and discard, in one agentmux process
 * or several, take it around theirs. In the data dir, not in the git dir,
 * which a jail can write.
 */
static int
snap_worktree_lock_open(const char *common, char **cause)
{
	char *data, *dir, *path;
	struct stat sb;
	int fd = -1;

	if (lstat(common, &sb) == -1) {
		*cause = xprintf("cannot look at %s: %s", common,
		    strerror(errno));
		return -1;
	}
	if ((data = path_data_dir(cause)) == NULL)
		return -1;
	dir = xprintf("%s/locks", data);
	path = xprintf("%s/worktrees-%llx-%llx.lock", dir,
	    (unsigned long long)sb.st_dev, (unsigned long long)sb.st_ino);
	if (path_mkdir_p(dir, 0700) == -1 || (fd = open(path, O_RDWR |
	    O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600)) == -1)
		*cause = xprintf("cannot open the worktrees' lock %s: %s; check "
		    "the data dir's permissions", path, strerror(errno));
	free(path);
	free(dir);
	free(data);
	return fd;
}

/*
 * Takes COMMON's worktrees' lock, waiting (blocking: for the commands that
 * are their process's only loop) SNAP_WORKTREE_LOCK_WAIT seconds at most:
 * its fd, or -1 with *CAUSE.
 */
static int
snap_worktree_lock(const char *common, char **cause)
{
	struct timespec poll = { 0, SNAP_WORKTREE_LOCK_POLL * 1000000L };
	int64_t until = util_now_ms() + SNAP_WORKTREE_LOCK_WAIT * 1000LL;
	int fd;

	if ((fd = snap_worktree_lock_open(common, cause)) == -1)
		return -1;
	while (flock(fd, LOCK_EX | LOCK_NB) == -1) {
		if (errno == EWOULDBLOCK && util_now_ms() < until) {
			nanosleep(&poll, NULL);
			continue;
		}
		if (errno != EINTR) {
			*cause = errno == EWOULDBLOCK ? xprintf("another "
			    "agentmux was still making or removing a worktree "
			    "of %s after %d s: try again once it is done",
			    common, SNAP_WORKTREE_LOCK_WAIT) : xprintf("cannot "
			    "lock the worktrees of %s: %s", common,
			    strerror(errno));
			close(fd);
			return -1;
		}
	}
	return fd;
}

/* Starts the next git of M on its loop; -1 with *CAUSE. */
static int
snap_worktree_make_git(struct snap_worktree_make *m, const char *worktree,
    const char *dir, const char *const *args, char **cause)
{
	struct proc_opts o;

	strv_free(&m->env);
	strv_free(&m->argv);
	snap_worktree_git_opts(m->wt->common, worktree, dir, args, &m->filters,
	    &m->env, &m->argv, &o);
	o.err_max = 64 * 1024;
	m->proc = proc_start(m->base, &o, snap_worktree_make_cb, m, cause);
	return m->proc == NULL ? -1 : 0;
}

/* Tells the caller how it went (ERROR: NULL if made) and lets M go. */
static void snap_worktree_refdirs_undo(const struct snap_worktree *);

static void snap_worktree_attr_recheck(struct snap_worktree_make *);

static void
snap_worktree_make_end(struct snap_worktree_make *m, const char *error)
{
	/* Made: the commit's facts, still being learnt, are waited for. */
	if (error == NULL && m->side != NULL && !m->stopped) {
		m->end_waits = true;
		return;
	}
	proc_free(m->side);
	m->side = NULL;
	if (error == NULL)
		snap_worktree_attr_recheck(m);
	if (!m->made.added && m->refdirs)
		snap_worktree_refdirs_undo(m->wt);
	if (!m->made.added)
		snap_worktree_clear(m->wt);
	m->done(m->arg, &m->made, error);
	snap_worktree_make_free(m);
}

static void
snap_worktree_make_fail(struct snap_worktree_make *m, char *cause)
{
	snap_worktree_make_end(m, cause);
	free(cause);
}

/* Opens the next file of M's list to copy: 0, or 1 if it is not copied (noted). */
static int
snap_worktree_make_open(struct snap_worktree_make *m)
{
	const char *rel = m->list.data + m->at;
	int rc;

	m->cur = m->at;
	m->at += strlen(rel) + 1;
	if (*rel == '\0')
		return 1;
	rc = snap_worktree_copy_open(m->pfd, m->wfd, rel, &m->budget, &m->in,
	    &m->out, &m->size);
	if (rc == 0) {
		m->pos = 0;
		return 0;
	}
	strv_add(rc == 1 ? &m->made.over : &m->made.skipped, rel);
	return 1;
}

/* The next slice of the copies, on the loop; the last one ends M. */
static void
snap_worktree_make_slice(evutil_socket_t fd, short what, void *arg)
{
	struct snap_worktree_make *m = arg;
	struct timeval now = { 0, 0 };
	off_t left = SNAP_WORKTREE_SLICE, was;
	int rc;

	if (m->stopped) {
		snap_worktree_make_end(m, SNAP_WORKTREE_STOPPED);
		return;
	}
	while (left > 0 && (m->in != -1 || m->at < m->list.len)) {
		/* Opening costs a little too: many small files take turns. */
		left -= 4096;
		if (m->in == -1 && snap_worktree_make_open(m) != 0)
			continue;
		was = m->pos;
		rc = snap_worktree_copy_some(m->in, m->out, m->size, &m->pos,
		    left > 0 ? left : 1);
		left -= m->pos - was;
		if (rc == 0)
			continue;
		close(m->in);
		close(m->out);
		m->in = m->out = -1;
		if (rc == 1)
			m->made.copied++;
		else
			strv_add(&m->made.skipped, m->list.data + m->cur);
	}
	if (m->in != -1 || m->at < m->list.len)
		event_add(m->slice_ev, &now);
	else
		snap_worktree_make_end(m, NULL);
}

/* git ls-files is over: the copies start, or, if it failed, M ends. */
static void
snap_worktree_make_listed(struct snap_worktree_make *m, struct proc *p)
{
	int st = proc_status(p);
	char *cause;

	if (st != 0) {
		snap_worktree_make_fail(m, snap_git_complaint("ls-files",
		    proc_err(p), st));
		return;
	}
	buf_add(&m->list, proc_out(p)->data, proc_out(p)->len);
	if ((m->wfd = open(m->wt->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1) {
		cause = xprintf("cannot open %s: %s", m->wt->path,
		    strerror(errno));
		snap_worktree_make_fail(m, cause);
		return;
	}
	m->step = SNAP_WORKTREE_COPY;
	m->slice_ev = evtimer_new(m->base, snap_worktree_make_slice, m);
	if (m->slice_ev == NULL)
		fatalx("cannot make a timer");
	snap_worktree_make_slice(-1, 0, m);
}

/*
 * The worktree is made: what the project's .worktreeinclude names is
 * listed next (git ls-files), if it has one; else M is over.
 */
static int
snap_worktree_make_include(struct snap_worktree_make *m, char **cause)
{
	const char *args[] = { "ls-files", "-z", "--others", "--ignored",
	    NULL, NULL };
	struct buf b;
	char *arg;
	int rc;

	buf_init(&b);
	if ((m->pfd = open(m->wt->project, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1) {
		*cause = xprintf("cannot open %s: %s", m->wt->project,
		    strerror(errno));
		return -1;
	}
	/* A link, FIFO or device there is not read: the project is hostile. */
	if (path_read_beneath(m->pfd, ".worktreeinclude",
	    SNAP_WORKTREE_INCLUDE_MAX, &b) == -1) {
		buf_free(&b);
		return 1;
	}
	m->excl = xprintf("%s/worktreeinclude", m->scratch);
	rc = util_write_file_atomic(m->excl, b.data != NULL ? b.data : "",
	    b.len, 0600, cause);
	buf_free(&b);
	if (rc == -1)
		return -1;
	arg = xprintf("--exclude-from=%s", m->excl);
	args[4] = arg;
	m->step = SNAP_WORKTREE_LIST;
	rc = snap_worktree_make_git(m, m->wt->project, m->wt->project, args,
	    cause);
	free(arg);
	return rc;
}

/* git worktree add is over: its admin dir checked, the jail's binds made. */
static void
snap_worktree_make_added(struct snap_worktree_make *m, struct proc *p)
{
	int st = proc_status(p);
	struct snap_worktree *wt = m->wt;
	char *cause = NULL;
	int rc;

	/* Its admin dir is whole: another's git worktree add may go on. */
	close(m->lock);
	m->lock = -1;
	if (st != 0) {
		snap_worktree_make_fail(m, snap_git_complaint("worktree",
		    proc_err(p), st));
		return;
	}
	if ((wt->admin = snap_worktree_admin(wt->path, wt->common, &cause)) ==
	    NULL || snap_worktree_refdirs(wt, &cause) == -1 ||
	    snap_worktree_noconfig(wt, &cause) == -1) {
		snap_worktree_make_fail(m, cause);
		return;
	}
	m->made.added = true;
	if (m->stopped)
		snap_worktree_make_end(m, SNAP_WORKTREE_STOPPED);
	else if ((rc = snap_worktree_make_include(m, &cause)) == -1)
		snap_worktree_make_fail(m, cause);
	else if (rc == 1)
		snap_worktree_make_end(m, NULL);
}

static void snap_worktree_log_clear(const struct snap_worktree *);

/*
 * git worktree add, once M has its repository's worktrees' lock: tried
 * now and every few milliseconds on the loop while another agentmux
 * holds it, for SNAP_WORKTREE_LOCK_WAIT seconds at most.
 */
static void
snap_worktree_make_add(evutil_socket_t fd, short what, void *arg)
{
	struct snap_worktree_make *m = arg;
	const char *args[] = { "worktree", "add", "--quiet", "-b",
	    m->wt->branch, m->wt->path, m->wt->base, NULL };
	struct timeval poll = { 0, SNAP_WORKTREE_LOCK_POLL * 1000 };
	char *cause = NULL;
	int e;

	if (flock(m->lock, LOCK_EX | LOCK_NB) == -1) {
		e = errno;
		if ((e == EWOULDBLOCK || e == EINTR) &&
		    util_now_ms() < m->lock_until) {
			event_add(m->lock_ev, &poll);
			return;
		}
		snap_worktree_make_fail(m, e == EWOULDBLOCK ?
		    xprintf("another agentmux was still making or removing a "
		    "worktree of %s after %d s: try again once it is done",
		    m->wt->common, SNAP_WORKTREE_LOCK_WAIT) :
		    xprintf("cannot lock the worktrees of %s: %s",
		    m->wt->common, strerror(e)));
		return;
	}
	/* Hooks off (core.hooksPath), no fsmonitor, no GIT_* of the caller's. */
	if (snap_worktree_make_git(m, NULL, m->wt->common, args, &cause) == -1)
		snap_worktree_make_fail(m, cause);
}

/*
 * The commit's facts for the start snapshot, learnt beside git worktree
 * add (which takes the most of a worktree session's start): the tree of
 * BASE, then the names of its files, then which of them an attribute
 * has git's checkout convert, asked as the snapshot would ask it (the
 * project's info/attributes, the user's and the system's; no index, so
 * no .gitattributes). A git that fails leaves the fact unknown: the
 * snapshot learns it itself then.
 */
static void snap_worktree_side_cb(struct proc *, void *);

static bool
snap_worktree_side_git(struct snap_worktree_make *m, char *const *argv,
    const struct buf *input)
{
	struct proc_opts o;
	struct strv env;
	char *cause = NULL;

	snap_env_plain(&env);
	strv_addf(&env, "GIT_DIR=%s", m->wt->common);
	strv_addf(&env, "GIT_INDEX_FILE=%s/agentmux-no-index", m->scratch);
	memset(&o, 0, sizeof o);
	o.argv = argv;
	o.env = env.v;
	o.dir = m->wt->common;
	o.out_fd = -1;
	o.umask = -1;
	o.data_max = snap_git_mem;
	o.timeout = SNAP_WORKTREE_SIDE_SECS;
	o.err_max = 64 * 1024;
	if (input != NULL) {
		o.input = input->data != NULL ? input->data : "";
		o.inputlen = input->len;
	}
	m->side = proc_start(m->base, &o, snap_worktree_side_cb, m, &cause);
	strv_free(&env);
	if (m->side == NULL) {
		log_debug("a worktree's start snapshot learns its commit itself: "
		    "%s", cause);
		free(cause);
		return false;
	}
	return true;
}

static void
snap_worktree_attr_stamp_one(struct buf *b, const struct stat *sb)
{
	buf_printf(b, "%llu %llu %lld %lld.%09ld %lld.%09ld\n",
	    (unsigned long long)sb->st_dev, (unsigned long long)sb->st_ino,
	    (long long)sb->st_size, (long long)sb->st_mtim.tv_sec,
	    sb->st_mtim.tv_nsec, (long long)sb->st_ctim.tv_sec,
	    sb->st_ctim.tv_nsec);
}

/*
 * What git's attributes depend on, as each file's identity, size and
 * times (caller frees): COMMON's info/attributes and config, the user's
 * attributes file and config where git looks for them, the one
 * core.attributesFile names (ATTRS_FILE, if known), and the system's.
 * Neither a jail in the main tree (it sees .git/info and .git/config
 * read-only) nor any other reaches them; the user may change them while
 * a worktree is made.
 */
static char *
snap_worktree_attr_stamp(const char *common, const char *attrs_file)
{
	const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
	char *paths[7], *cfg;
	struct stat sb;
	struct buf b;
	size_t i;

	paths[0] = xprintf("%s/info/attributes", common);
	paths[1] = xprintf("%s/config", common);
	cfg = xdg != NULL && *xdg == '/' ? xstrdup(xdg) : home != NULL ?
	    xprintf("%s/.config", home) : xstrdup("/nonexistent");
	paths[2] = xprintf("%s/git/attributes", cfg);
	paths[3] = xprintf("%s/git/config", cfg);
	paths[4] = xprintf("%s/.gitconfig", home != NULL ? home :
	    "/nonexistent");
	paths[5] = xstrdup("/etc/gitattributes");
	paths[6] = xstrdup(attrs_file != NULL ? attrs_file : "/nonexistent");
	free(cfg);
	buf_init(&b);
	for (i = 0; i < nitems(paths); i++) {
		if (lstat(paths[i], &sb) == -1) {
			buf_printf(&b, "-\n");
			free(paths[i]);
			continue;
		}
		snap_worktree_attr_stamp_one(&b, &sb);
		/*
		 * A link (a dotfiles manager's ~/.gitconfig): git reads what
		 * it names, whose change moves nothing of the link's. Only
		 * looked at: these are the user's files, out of every jail's reach.
		 */
		if (S_ISLNK(sb.st_mode) && stat(paths[i], &sb) == 0)
			snap_worktree_attr_stamp_one(&b, &sb);
		free(paths[i]);
	}
	return buf_steal(&b);
}

/*
 * The attributes learnt beside git worktree add hold only if their files
 * did not change from before they were asked to after the checkout
 * (review 13 F2: one written while git checked out had git convert files
 * agentmux was told of no conversion for); else the snapshot asks again.
 */
static void
snap_worktree_attr_recheck(struct snap_worktree_make *m)
{
	char *now;

	if (!m->wt->attrs_known || m->attr_stamp == NULL)
		return;
	now = snap_worktree_attr_stamp(m->wt->common, m->attrs_file);
	if (strcmp(now, m->attr_stamp) != 0) {
		log_info("the attributes' files of %s changed while its worktree "
		    "was made: the start snapshot asks git again",
		    m->wt->common);
		m->wt->attrs_known = false;
		strv_free(&m->wt->converted);
	}
	free(now);
}

static void
snap_worktree_side_start(struct snap_worktree_make *m)
{
	char *spec = xprintf("%s^{tree}", m->wt->base);
	char *argv[] = { "git", "rev-parse", "--verify", "--quiet",
	    "--end-of-options", spec, NULL };

	m->side_step = 0;
	m->attr_stamp = snap_worktree_attr_stamp(m->wt->common,
	    m->attrs_file);
	(void)snap_worktree_side_git(m, argv, NULL);
	free(spec);
}

/* The next fact (or the end): false once there is none to learn. */
static bool
snap_worktree_side_next(struct snap_worktree_make *m, struct proc *p)
{
	static char *attrs[] = { "git", "check-attr", "--cached", "--stdin",
	    "-z", "-a", NULL };
	char *names[] = { "git", "ls-tree", "-r", "-z", "--name-only",
	    "--full-tree", NULL, NULL };
	struct buf *out = proc_out(p);
	size_t len;

	if (proc_status(p) != 0) {
		log_debug("a worktree's start snapshot learns its commit itself: "
		    "%s", proc_err(p)->data != NULL ? proc_err(p)->data :
		    "git failed");
		return false;
	}
	switch (m->side_step++) {
	case 0:
		len = out->data != NULL ? strcspn(out->data, "\n") : 0;
		if (len != 40 || strspn(out->data, "0123456789abcdef") < len)
			return false;
		m->wt->tree = xstrndup(out->data, len);
		names[6] = m->wt->tree;
		return snap_worktree_side_git(m, names, NULL);
	case 1:
		/* An empty tree: nothing to ask. */
		if (out->len == 0) {
			strv_init(&m->wt->converted);
			m->wt->attrs_known = true;
			return false;
		}
		return snap_worktree_side_git(m, attrs, out);
	default:
		strv_init(&m->wt->converted);
		snap_attrs_converted(out, &m->wt->converted);
		m->wt->attrs_known = true;
		return false;
	}
}

static void
snap_worktree_side_cb(struct proc *p, void *arg)
{
	struct snap_worktree_make *m = arg;

	m->side = NULL;
	if (!m->stopped)
		(void)snap_worktree_side_next(m, p);
	proc_free(p);
	if (m->side == NULL && m->end_waits)
		snap_worktree_make_end(m, NULL);
}

/* The base commit is known (or not): git worktree add comes next. */
static void
snap_worktree_make_commit(struct snap_worktree_make *m, struct proc *p)
{
	int st = proc_status(p);
	struct buf *out = proc_out(p);
	char *cause = NULL, *parent;

	if (st != 0 || out->len < 40) {
		snap_worktree_make_fail(m, xprintf("cannot start a worktree "
		    "from '%s': no such commit in the project; pass --base "
		    "with a branch, tag or commit", m->ref));
		return;
	}
	m->wt->base = xstrndup(out->data, strcspn(out->data, "\n"));
	snap_worktree_side_start(m);
	parent = xstrndup(m->wt->path, (size_t)(strrchr(m->wt->path, '/') -
	    m->wt->path));
	if (path_mkdir_p(parent, 0700) == -1) {
		snap_worktree_make_fail(m, xprintf("cannot make %s: %s", parent,
		    strerror(errno)));
		free(parent);
		return;
	}
	free(parent);
	snap_worktree_log_clear(m->wt);
	/*
	 * The branch's dirs made (no link followed) before git writes the
	 * branch and its reflog there: one a session in the main tree made a
	 * link (where nothing kept it from doing so) took the reflog's first
	 * line to where it pointed.
	 */
	if (snap_worktree_refdirs(m->wt, &cause) == -1) {
		snap_worktree_make_fail(m, cause);
		return;
	}
	m->refdirs = true;
	if ((m->lock = snap_worktree_lock_open(m->wt->common, &cause)) == -1) {
		snap_worktree_make_fail(m, cause);
		return;
	}
	m->step = SNAP_WORKTREE_ADD;
	m->lock_ev = evtimer_new(m->base, snap_worktree_make_add, m);
	if (m->lock_ev == NULL)
		fatalx("cannot make a timer");
	m->lock_until = util_now_ms() + SNAP_WORKTREE_LOCK_WAIT * 1000LL;
	snap_worktree_make_add(-1, 0, m);
}

/* The filter drivers are known: the base commit is looked up next. */
static void
snap_worktree_make_filters(struct snap_worktree_make *m, struct proc *p)
{
	int st = proc_status(p);
	char *spec = xprintf("%s^{commit}", m->ref), *cause = NULL;
	const char *args[] = { "rev-parse", "--verify", "--quiet",
	    "--end-of-options", spec, NULL };

	if (st == 0) {
		m->attrs_file = snap_worktree_attrs_file(proc_out(p));
		snap_worktree_filter_parse(proc_out(p), &m->filters);
	}
	m->step = SNAP_WORKTREE_COMMIT;
	if (snap_worktree_make_git(m, NULL, m->wt->common, args, &cause) == -1)
		snap_worktree_make_fail(m, cause);
	free(spec);
}

/* One git of M ended: the step it was for goes on. */
static void
snap_worktree_make_cb(struct proc *p, void *arg)
{
	struct snap_worktree_make *m = arg;

	/* Each step starts its successor's git (or ends M): this one goes. */
	m->proc = NULL;
	/* Stopped: nothing is made before the add, and no next step after it. */
	if (m->stopped && m->step != SNAP_WORKTREE_ADD) {
		snap_worktree_make_end(m, SNAP_WORKTREE_STOPPED);
		proc_free(p);
		return;
	}
	switch (m->step) {
	case SNAP_WORKTREE_FILTERS:
		snap_worktree_make_filters(m, p);
		break;
	case SNAP_WORKTREE_COMMIT:
		snap_worktree_make_commit(m, p);
		break;
	case SNAP_WORKTREE_ADD:
		snap_worktree_make_added(m, p);
		break;
	case SNAP_WORKTREE_LIST:
		snap_worktree_make_listed(m, p);
		break;
	case SNAP_WORKTREE_COPY:
		fatalx("a worktree's copies run no git");
	}
	proc_free(p);
}

struct snap_worktree_make *
snap_worktree_make_start(struct event_base *base, const char *project,
    const char *path, const char *branch, const char *ref,
    const char *scratch, struct snap_worktree *wt, snap_worktree_cb done,
    void *arg, char **cause)
{
	struct snap_worktree_make *m;
	struct strv env;
	struct proc_opts o;

	memset(wt, 0, sizeof *wt);
	if (!snap_worktree_branch_ok(branch)) {
		*cause = xprintf("cannot use '%s' as a session's branch: use "
		    "letters, digits, '.', '_' and '-'", branch);
		return NULL;
	}
	wt->project = xstrdup(project);
	wt->branch = xstrdup(branch);
	wt->path = xstrdup(path);
	if ((wt->common = snap_worktree_common(project, cause)) == NULL) {
		snap_worktree_clear(wt);
		return NULL;
	}
	m = xcalloc(1, sizeof *m);
	m->base = base;
	m->wt = wt;
	m->ref = xstrdup(ref != NULL ? ref : "HEAD");
	m->scratch = xstrdup(scratch);
	m->pfd = m->wfd = m->in = m->out = m->lock = -1;
	m->budget = SNAP_WORKTREE_COPY_MAX;
	m->done = done;
	m->arg = arg;
	strv_init(&m->filters);
	strv_init(&m->env);
	strv_init(&m->argv);
	strv_init(&m->made.skipped);
	strv_init(&m->made.over);
	buf_init(&m->list);
	snap_worktree_filter_opts(wt->common, &env, &o);
	m->proc = proc_start(base, &o, snap_worktree_make_cb, m, cause);
	strv_free(&env);
	if (m->proc == NULL) {
		snap_worktree_clear(wt);
		snap_worktree_make_free(m);
		return NULL;
	}
	return m;
}

/*
 * At once while M waits for the worktrees' lock (nothing is made yet) or
 * runs a git that only reads (config, rev-parse, ls-files: killed, so a
 * git that hangs does not hold the stop); once git worktree add is done
 * if that runs: cut short, it would leave its admin dir and branch half
 * made. A worktree that was added stays (as a session's does), its
 * copies cut short.
 */
bool
snap_worktree_make_stop(struct snap_worktree_make *m)
{
	if (m == NULL)
		return false;
	if (!m->stopped) {
		m->stopped = true;
		if ((m->step == SNAP_WORKTREE_ADD && m->proc == NULL) ||
		    (m->step != SNAP_WORKTREE_ADD && m->proc != NULL) ||
		    m->end_waits) {
			/* M is gone once DONE is told. */
			snap_worktree_make_end(m, SNAP_WORKTREE_STOPPED);
			return false;
		}
	}
	return m->step == SNAP_WORKTREE_ADD && m->proc != NULL;
}

void
snap_worktree_make_free(struct snap_worktree_make *m)
{
	if (m == NULL)
		return;
	proc_free(m->proc);
	proc_free(m->side);
	free(m->attr_stamp);
	free(m->attrs_file);
	if (m->slice_ev != NULL)
		event_free(m->slice_ev);
	if (m->lock_ev != NULL)
		event_free(m->lock_ev);
	if (m->lock != -1)
		close(m->lock);
	if (m->excl != NULL)
		unlink(m->excl);
	if (m->pfd != -1)
		close(m->pfd);
	if (m->wfd != -1)
		close(m->wfd);
	if (m->in != -1)
		close(m->in);
	if (m->out != -1)
		close(m->out);
	strv_free(&m->filters);
	strv_free(&m->env);
	strv_free(&m->argv);
	strv_free(&m->made.skipped);
	strv_free(&m->made.over);
	buf_free(&m->list);
	free(m->ref);
	free(m->scratch);
	free(m->excl);
	free(m);
}

/*
 * git for the user's own operations on the main tree (merge): their
 * identity and settings, but no hooks, fsmonitor, external diff, signing
 * program, or filter, merge or diff driver (snap_worktree_no_filters),
 * and none of the caller's GIT_*. Exit status in *ST, git's stderr in ERR.
 */
static int
snap_worktree_user_git(const struct snap_worktree *wt, const char *const *args,
    struct buf *out, struct buf *err, int *st, char **cause)
{
	static const char *const conf[][2] = {
		{ "core.hooksPath", "/dev/null" },
		{ "core.fsmonitor", "false" },
		{ "diff.external", "" },
		{ "core.pager", "cat" },
		{ "commit.gpgSign", "false" },
		{ "merge.verifySignatures", "false" },
		/* no file moved into a directory the branch renamed (and the merge check reckons as the merge) */
		{ "merge.directoryRenames", "false" },
	};
	struct proc_opts o;
	struct strv env, argv;
	char **e;
	size_t i;
	int rc;

	strv_init(&env);
	for (e = environ; *e != NULL; e++) {
		if (strncmp(*e, "GIT_", 4) != 0)
			strv_add(&env, *e);
	}
	strv_add(&env, "GIT_TERMINAL_PROMPT=0");
	strv_add(&env, "GIT_EDITOR=true");
	strv_addf(&env, "GIT_DIR=%s", wt->common);
	strv_addf(&env, "GIT_WORK_TREE=%s", wt->project);
	strv_addf(&env, "GIT_CONFIG_COUNT=%zu", nitems(conf));
	for (i = 0; i < nitems(conf); i++) {
		strv_addf(&env, "GIT_CONFIG_KEY_%zu=%s", i, conf[i][0]);
		strv_addf(&env, "GIT_CONFIG_VALUE_%zu=%s", i, conf[i][1]);
	}
	snap_worktree_no_filters(&env, wt->common);
	strv_init(&argv);
	strv_add(&argv, "git");
	for (i = 0; args[i] != NULL; i++)
		strv_add(&argv, args[i]);
	memset(&o, 0, sizeof o);
	o.data_max = snap_git_mem;
	o.argv = argv.v;
	o.env = env.v;
	o.dir = wt->project;
	o.out_fd = -1;
	o.umask = (int)util_user_umask();
	o.timeout = SNAP_WORKTREE_TIMEOUT;
	rc = proc_run(&o, out, err, st, cause);
	strv_free(&env);
	strv_free(&argv);
	return rc;
}

/* Like snap_worktree_user_git, -1 with *CAUSE (git's complaint) unless it exits 0. */
static int
snap_worktree_user_ok(const struct snap_worktree *wt, const char *const *args,
    struct buf *out, char **cause)
{
	struct buf err;
	int st, rc;

	buf_init(&err);
	rc = snap_worktree_user_git(wt, args, out, &err, &st, cause);
	if (rc == 0 && st != 0) {
		*cause = snap_git_complaint(args[0], &err, st);
		rc = -1;
	}
	buf_free(&err);
	return rc;
}

/* The line KEY=... of TEXT, or NULL; caller frees. */
static char *
snap_worktree_field(const char *text, const char *key)
{
	size_t n = strlen(key);
	const char *p, *end;

	for (p = text; p != NULL && *p != '\0'; p = strchr(p, '\n'),
	    p = p != NULL ? p + 1 : NULL) {
		if (strncmp(p, key, n) == 0 && p[n] == '=') {
			end = strchr(p, '\n');
			return xstrndup(p + n + 1, end != NULL ?
			    (size_t)(end - p - n - 1) : strlen(p + n + 1));
		}
	}
	return NULL;
}

/* The session of the record beside the worktree dir NAME under DIR, or 0 if it has none. */
static int64_t
snap_worktree_record_id(const char *dir, const char *name)
{
	char *path = xprintf("%s/%s/session", dir, name), *id, *end;
	struct buf b;
	long long v = 0;

	buf_init(&b);
	buf_adds(&b, "");
	id = buf_read_file(&b, path) == 0 ?
	    snap_worktree_field(b.data, "session") : NULL;
	if (id != NULL && ((v = strtoll(id, &end, 10)) <= 0 || *end != '\0'))
		v = 0;
	free(id);
	buf_free(&b);
	free(path);
	return v;
}

/*
 * Each worktree dir under DATA_DIR's worktrees/ that is ours (a real dir,
 * not a link, owned by us): FN(ARG, DIR, NAME, its session or 0).
 */
static void
snap_worktree_each(const char *data_dir,
    void (*fn)(void *, const char *, const char *, int64_t), void *arg)
{
	char *dir = xprintf("%s/worktrees", data_dir);
	struct dirent *de;
	struct stat st;
	DIR *d;

	if ((d = opendir(dir)) == NULL) {
		free(dir);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, "wt-", 3) != 0 ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) ==
		    -1 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
			continue;
		fn(arg, dir, de->d_name, snap_worktree_record_id(dir,
		    de->d_name));
	}
	closedir(d);
	free(dir);
}

struct snap_worktree_ids {
	int64_t *ids;
	size_t n;
};

static void
snap_worktree_sessions_one(void *arg, const char *dir, const char *name,
    int64_t id)
{
	struct snap_worktree_ids *v = arg;

	if (id == 0)
		return;
	v->ids = xreallocarray(v->ids, v->n + 1, sizeof *v->ids);
	v->ids[v->n++] = id;
}

void
snap_worktree_sessions(const char *data_dir, int64_t **ids, size_t *n)
{
	struct snap_worktree_ids v = { NULL, 0 };

	snap_worktree_each(data_dir, snap_worktree_sessions_one, &v);
	*ids = v.ids;
	*n = v.n;
}

static void
snap_worktree_orphans_one(void *arg, const char *dir, const char *name,
    int64_t id)
{
	if (id == 0)
		strv_addf(arg, "%s/%s", dir, name);
}

void
snap_worktree_orphans(const char *data_dir, struct strv *dirs)
{
	snap_worktree_each(data_dir, snap_worktree_orphans_one, dirs);
}

int
snap_worktree_find(const char *data_dir, int64_t session,
    struct snap_worktree *wt, char **root, char **cause)
{
	char *dir = xprintf("%s/worktrees", data_dir), *path, *id;
	struct dirent *de;
	struct buf b;
	DIR *d;

	memset(wt, 0, sizeof *wt);
	*root = NULL;
	id = xprintf("%lld", (long long)session);
	if ((d = opendir(dir)) != NULL) {
		while (*root == NULL && (de = readdir(d)) != NULL) {
			if (strncmp(de->d_name, "wt-", 3) != 0)
				continue;
			path = xprintf("%s/%s/session", dir, de->d_name);
			buf_init(&b);
			buf_adds(&b, "");
			if (buf_read_file(&b, path) == 0) {
				char *s = snap_worktree_field(b.data, "session");

				if (s != NULL && strcmp(s, id) == 0)
					*root = xprintf("%s/%s", dir, de->d_name);
				free(s);
			}
			if (*root != NULL) {
				wt->project = snap_worktree_field(b.data, "project");
				wt->path = snap_worktree_field(b.data, "worktree");
				wt->branch = snap_worktree_field(b.data, "branch");
				wt->base = snap_worktree_field(b.data, "base");
				wt->common = snap_worktree_field(b.data, "common");
				wt->admin = snap_worktree_field(b.data, "admin");
			}
			buf_free(&b);
			free(path);
		}
		closedir(d);
	}
	free(dir);
	free(id);
	if (*root != NULL && wt->project != NULL && wt->path != NULL &&
	    wt->branch != NULL && wt->base != NULL && wt->common != NULL &&
	    wt->admin != NULL)
		return 0;
	if (*root == NULL)
		*cause = xprintf("session %lld has no worktree (it was not "
		    "started with --worktree, or its worktree was discarded)",
		    (long long)session);
	else
		*cause = xprintf("the worktree record %s/session is damaged",
		    *root);
	free(*root);
	*root = NULL;
	snap_worktree_clear(wt);
	return -1;
}

/* The branch of the main tree, or NULL (detached); caller frees. */
static char *
snap_worktree_main_branch(const struct snap_worktree *wt)
{
	const char *args[] = { "symbolic-ref", "-q", "--short", "HEAD", NULL };
	char *err = NULL;
	struct buf out;

	buf_init(&out);
	if (snap_worktree_user_ok(wt, args, &out, &err) == -1 ||
	    out.len == 0) {
		free(err);
		buf_free(&out);
		return NULL;
	}
	out.data[strcspn(out.data, "\n")] = '\0';
	return buf_steal(&out);
}

/*
 * Whether REF is a link: a symref, or a loose ref file that is a symlink. The
 * session's ref dir is writable in its jail, so either may point at main.
 */
static int
snap_worktree_ref_link(const char *common, const char *ref,
    const char *symref)
{
	char *path = xprintf("%s/%s", common, ref);
	struct stat st;
	int link;

	link = (symref != NULL && *symref != '\0') ||
	    (lstat(path, &st) == 0 && S_ISLNK(st.st_mode));
	free(path);
	return link;
}

/* 0 if the session's branch is a plain ref, -1 with *CAUSE if it is a link or unreadable. */
static int
snap_worktree_branch_plain(const struct snap_worktree *wt, char **cause)
{
	char *ref = xprintf("refs/heads/%s", wt->branch), *line, *p, *sp;
	const char *args[] = { "for-each-ref", "--format=%(refname) %(symref)",
	    ref, NULL };
	struct buf out;
	int rc = 0;

	buf_init(&out);
	if (snap_worktree_git(wt->common, NULL, wt->common, args, &out,
	    cause) == -1) {
		buf_free(&out);
		free(ref);
		return -1;
	}
	buf_adds(&out, "");
	for (p = out.data; rc == 0 && (line = strsep(&p, "\n")) != NULL;) {
		if ((sp = strchr(line, ' ')) == NULL)
			continue;
		*sp = '\0';
		if (strcmp(line, ref) == 0 &&
		    snap_worktree_ref_link(wt->common, line, sp + 1))
			rc = -1;
	}
	if (rc == 0 && snap_worktree_ref_link(wt->common, ref, NULL))
		rc = -1;
	free(ref);
	if (rc == -1)
		*cause = xprintf("the session's branch %s is a link to another "
		    "ref (made in the jail); agentmux does not follow it: look "
		    "at it with 'git symbolic-ref %s' and 'discard' the session",
		    wt->branch, wt->branch);
	buf_free(&out);
	return rc;
}

int
snap_worktree_merged(const struct snap_worktree *wt, const char *into)
{
	/*
	 * The branch named in full: git takes a file .git/agentmux/ID/NAME,
	 * refs/agentmux/ID/NAME or refs/tags/agentmux/ID/NAME (a main-tree
	 * session can make each) before refs/heads/agentmux/ID/NAME for the
	 * short name, and a forged "merged" let gc remove an unmerged branch.
	 */
	char *full = xprintf("refs/heads/%s", wt->branch);
	const char *args[] = { "merge-base", "--is-ancestor", "--end-of-options",
	    full, into != NULL ? into : "HEAD", NULL };
	char *cause = NULL;
	struct buf err;
	int st;

	/* A symref would report its target as merged. */
	if (snap_worktree_branch_plain(wt, &cause) == -1) {
		free(cause);
		free(full);
		return -1;
	}
	buf_init(&err);
	if (snap_worktree_user_git(wt, args, NULL, &err, &st, &cause) == -1)
		st = -1;
	free(cause);
	buf_free(&err);
	free(full);
	return st == 0 ? 1 : st == 1 ? 0 : -1;
}

/* The main tree must be on INTO (if given) with nothing uncommitted in tracked files. */
static int
snap_worktree_merge_check(const struct snap_worktree *wt, const char *into,
    char **on, char **cause)
{
	const char *status[] = { "status", "--porcelain", "--untracked-files=no",
	    NULL };
	struct buf out;

	if ((*on = snap_worktree_main_branch(wt)) == NULL) {
		*cause = xprintf("the main tree %s is on no branch (detached "
		    "HEAD); check out the branch to merge into first",
		    wt->project);
		return -1;
	}
	if (into != NULL && strcmp(*on, into) != 0) {
		*cause = xprintf("the main tree %s is on %s, not %s; check out "
		    "%s there first ('git switch %s')", wt->project, *on, into,
		    into, into);
		return -1;
	}
	buf_init(&out);
	if (snap_worktree_user_ok(wt, status, &out, cause) == -1) {
		buf_free(&out);
		return -1;
	}
	if (out.len > 0) {
		*cause = xprintf("the main tree %s has uncommitted changes; "
		    "commit or stash them first, then merge again", wt->project);
		buf_free(&out);
		return -1;
	}
	buf_free(&out);
	return 0;
}

/* After a merge that stopped: which files conflict, for the message. */
static char *
snap_worktree_conflicts(const struct snap_worktree *wt)
{
	const char *args[] = { "diff", "--no-ext-diff", "--no-textconv",
	    "--name-only", "--diff-filter=U", "-z", NULL };
	char *err = NULL, *p;
	struct buf out, list;

	buf_init(&out);
	buf_init(&list);
	if (snap_worktree_user_ok(wt, args, &out, &err) == 0 && out.len > 0) {
		buf_add(&out, "", 1);
		for (p = out.data; p < out.data + out.len - 1; p += strlen(p) + 1) {
			char *q = quote_name(p);

			buf_printf(&list, "%s%s", list.len > 0 ? ", " : "", q);
			free(q);
		}
	}
	free(err);
	buf_free(&out);
	if (list.len == 0)
		buf_adds(&list, "(see 'git status')");
	return buf_steal(&list);
}

/*
 * Whether PATH (relative) or a leading directory of it names something
 * in the main tree DIRFD that is not a directory, or PATH exists at all:
 * walked through no link.
 */
static int
snap_worktree_in_way(int dirfd, const char *path)
{
	char *copy = xstrdup(path), *part, *next, *save = NULL;
	struct stat st;
	int fd = dup(dirfd), sub, hit = 0;

	part = strtok_r(copy, "/", &save);
	while (fd != -1 && part != NULL) {
		next = strtok_r(NULL, "/", &save);
		if (fstatat(fd, part, &st, AT_SYMLINK_NOFOLLOW) == -1)
			break;
		if (next == NULL || !S_ISDIR(st.st_mode)) {
			hit = 1;
			break;
		}
		sub = openat(fd, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
		close(fd);
		fd = sub;
		part = next;
	}
	if (fd != -1)
		close(fd);
	free(copy);
	return hit;
}

/*
 * The tree the merge of the branch into HEAD would write (git merge-tree,
 * conflicts and all), or NULL with *CAUSE; caller frees.
 */
static char *
snap_worktree_merge_tree(const struct snap_worktree *wt, const char *ref,
    char **cause)
{
	const char *args[] = { "merge-tree", "--write-tree", "--no-messages",
	    "-z", "--end-of-options", "HEAD", ref, NULL };
	struct buf out, err;
	char *tree = NULL;
	int st;

	buf_init(&out);
	buf_init(&err);
	if (snap_worktree_user_git(wt, args, &out, &err, &st, cause) == 0) {
		buf_add(&out, "", 1);
		/* 1: conflicts, whose files (markers, FILE~SIDE) the tree holds */
		if ((st == 0 || st == 1) && strlen(out.data) > 0 &&
		    strspn(out.data, "0123456789abcdef") == strlen(out.data))
			tree = xstrdup(out.data);
		else if (st != 0 && st != 1)
			*cause = snap_git_complaint(args[0], &err, st);
		else
			*cause = xprintf("git merge-tree gave no tree for "
			    "merging %s; nothing was merged: check the "
			    "repository with 'git fsck' and merge again",
			    wt->branch);
	}
	buf_free(&err);
	buf_free(&out);
	return tree;
}

/*
 * Git lets a merge overwrite ignored files (a .env the session committed
 * with 'git add -f' would replace the user's, which no snapshot holds; a
 * directory rename can carry the user's own newer file onto one): refuse,
 * naming them, when a path the merge would write that HEAD does not track
 * (however git came to it: added, renamed, a conflict's side file) is
 * already in the main tree, untracked.
 */
static int
snap_worktree_merge_untracked(const struct snap_worktree *wt,
    const char *tree, char **cause)
{
	const char *args[] = { "diff", "--no-ext-diff", "--no-textconv",
	    "--no-renames", "--name-only", "-z", "--diff-filter=A", "HEAD",
	    tree, "--", NULL };
	struct buf out, list;
	char *p, *q;
	int dirfd = -1, n = 0;

	buf_init(&out);
	buf_init(&list);
	if (snap_worktree_user_ok(wt, args, &out, cause) == 0 &&
	    (dirfd = open(wt->project, O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) == -1)
		*cause = xprintf("cannot open the main tree %s: %s",
		    wt->project, strerror(errno));
	if (dirfd == -1) {
		buf_free(&out);
		return -1;
	}
	buf_add(&out, "", 1);
	for (p = out.data; p < out.data + out.len - 1; p += strlen(p) + 1) {
		if (!snap_worktree_in_way(dirfd, p) || n++ >= 10)
			continue;
		q = quote_name(p);
		buf_printf(&list, "%s%s", list.len > 0 ? ", " : "", q);
		free(q);
	}
	close(dirfd);
	if (n > 0)
		*cause = xprintf("merging %s would overwrite %d untracked or "
		    "ignored file%s of the main tree %s (%s%s), which no "
		    "snapshot keeps; move them aside (or delete them from the "
		    "branch) and merge again", wt->branch, n, n == 1 ? "" : "s",
		    wt->project, list.data, n > 10 ? ", ..." : "");
	buf_free(&list);
	buf_free(&out);
	return n > 0 ? -1 : 0;
}

/* The files a merge would write: each path's new blob, from diff-tree -z's raw output OUT. */
struct snap_worktree_wfile {
	const char *path;
	char oid[65];
	int64_t size;
};

/* The regular files in diff-tree -z's raw output RAW (NUL-ended) into *V; how many. */
static size_t
snap_worktree_written(char *raw, size_t len, struct snap_worktree_wfile **v)
{
	char *p = raw, *end = raw + len, *f[5], *save;
	size_t n = 0, cap = 0, i, rec;

	*v = NULL;
	while (p < end && *p == ':') {
		rec = strlen(p);
		save = p + 1;
		for (i = 0; i < 5 && save != NULL; i++)
			f[i] = strsep(&save, " ");
		p += rec + 1;
		if (p >= end)
			break;
		if (i == 5 && (strcmp(f[1], "100644") == 0 ||
		    strcmp(f[1], "100755") == 0) && strlen(f[3]) < 65) {
			if (n == cap) {
				cap = cap == 0 ? 16 : cap * 2;
				*v = xreallocarray(*v, cap, sizeof **v);
			}
			(*v)[n].path = p;
			snprintf((*v)[n].oid, sizeof (*v)[n].oid, "%s", f[3]);
			(*v)[n].size = 0;
			n++;
		}
		p += strlen(p) + 1;
	}
	return n;
}

/* The sizes of V's blobs (git cat-file --batch-check); -1 with *CAUSE. */
static int
snap_worktree_written_sizes(const struct snap_worktree *wt,
    struct snap_worktree_wfile *v, size_t n, char **cause)
{
	const char *args[] = { "cat-file", "--batch-check=%(objectsize)",
	    NULL };
	struct buf in, out;
	char *p, *line, *e;
	size_t i;
	int rc = 0;

	buf_init(&in);
	buf_init(&out);
	for (i = 0; i < n; i++)
		buf_printf(&in, "%s\n", v[i].oid);
	buf_adds(&in, "");
	if (snap_worktree_git_io(wt->common, NULL, wt->common, args, in.data,
	    -1, -1, &out, cause) == -1)
		rc = -1;
	buf_adds(&out, "");
	p = out.data;
	for (i = 0; rc == 0 && i < n; i++) {
		if ((line = strsep(&p, "\n")) == NULL ||
		    (v[i].size = strtoll(line, &e, 10)) < 0 || *e != '\0') {
			*cause = xprintf("git cat-file gave no size for %s",
			    v[i].oid);
			rc = -1;
		}
	}
	buf_free(&in);
	buf_free(&out);
	return rc;
}

/* Free bytes on the disk of WHERE less what [limits] disk_reserve keeps; -1 if unknown. */
static int64_t
snap_worktree_room(const char *where, const struct config_limits *l)
{
	struct statvfs sv;
	int64_t avail, total, reserve;

	if (statvfs(where, &sv) == -1)
		return -1;
	avail = (int64_t)sv.f_bavail * (int64_t)sv.f_frsize;
	total = (int64_t)sv.f_blocks * (int64_t)sv.f_frsize;
	reserve = l->disk_reserve_pct > 0 ? total / 100 * l->disk_reserve_pct :
	    l->disk_reserve;
	return avail > reserve ? avail - reserve : 0;
}

/*
 * A session can commit a file it never wrote (a compressed git object of
 * a megabyte holds gigabytes, under any number of names), which a merge
 * or a restore then has git write: refuse, naming them (DOING says what
 * would), when a file of TO that FROM does not have is larger than
 * [limits] file_size (what a jailed process may write in one file) or
 * those files together take more than the disk of WHERE has free above
 * [limits] disk_reserve.
 */
static int
snap_worktree_write_check(const struct snap_worktree *wt, const char *from,
    const char *to, const char *where, const char *doing,
    const struct config_limits *l, char **cause)
{
	const char *args[] = { "diff-tree", "-r", "-z", "--no-renames",
	    "--diff-filter=AMT", "--end-of-options", from, to, NULL };
	struct snap_worktree_wfile *v = NULL;
	struct buf out, list;
	char sz[32], lim[32], *q;
	int64_t total = 0, room;
	size_t n, i, big = 0;
	int rc = 0;

	buf_init(&out);
	buf_init(&list);
	if (snap_worktree_user_ok(wt, args, &out, cause) == -1) {
		buf_free(&out);
		return -1;
	}
	buf_add(&out, "", 1);
	n = snap_worktree_written(out.data, out.len - 1, &v);
	if (n > 0 && snap_worktree_written_sizes(wt, v, n, cause) == -1)
		rc = -1;
	for (i = 0; rc == 0 && i < n; i++) {
		total += v[i].size;
		if (l->file_size <= 0 || v[i].size <= l->file_size ||
		    big++ >= 10)
			continue;
		q = quote_name(v[i].path);
		buf_printf(&list, "%s%s (%s)", list.len > 0 ? ", " : "", q,
		    util_fmt_size(sz, sizeof sz, v[i].size));
		free(q);
	}
	if (rc == 0 && big > 0) {
		*cause = xprintf("%s would write %zu file%s larger than "
		    "[limits] file_size (%s), which no jailed process could "
		    "write: %s%s; the session committed %s without writing %s "
		    "(a git object is compressed); nothing was written: delete "
		    "%s from the branch, or raise file_size, and try again",
		    doing, big, big == 1 ? "" : "s", util_fmt_size(lim,
		    sizeof lim, l->file_size), list.data, big > 10 ? ", ..." :
		    "", big == 1 ? "it" : "them", big == 1 ? "it" : "them",
		    big == 1 ? "it" : "them");
		rc = -1;
	} else if (rc == 0 && (room = snap_worktree_room(where, l)) >= 0 &&
	    total > room) {
		*cause = xprintf("%s would write %s into %s (%zu files), more "
		    "than its disk has free above [limits] disk_reserve (%s); "
		    "nothing was written: look at the branch's files with 'git "
		    "diff --stat %s %s', free space, and try again", doing,
		    util_fmt_size(sz, sizeof sz, total), where, n,
		    util_fmt_size(lim, sizeof lim, room), from, to);
		rc = -1;
	}
	free(v);
	buf_free(&list);
	buf_free(&out);
	return rc;
}

/* snap_worktree_write_check for merging WT's branch (its tree TREE) into the main tree. */
static int
snap_worktree_merge_size(const struct snap_worktree *wt, const char *tree,
    const struct config_limits *l, char **cause)
{
	char *doing = xprintf("merging %s", wt->branch);
	int rc;

	rc = snap_worktree_write_check(wt, "HEAD", tree, wt->project, doing, l,
	    cause);
	free(doing);
	return rc;
}

int
snap_worktree_restore_check(const struct snap_worktree *kept,
    const char *tip, const char *where, const struct config_limits *l,
    char **cause)
{
	struct snap_worktree wt = *kept;
	char *common = NULL, *doing;
	int rc;

	if (wt.common == NULL)
		wt.common = common = xprintf("%s/.git", kept->project);
	doing = xprintf("restoring %s at %.12s", kept->branch, tip);
	rc = snap_worktree_write_check(&wt, kept->base, tip, where, doing, l,
	    cause);
	free(doing);
	free(common);
	return rc;
}

static char *snap_worktree_tip(const struct snap_worktree *);

/*
 * The commit the session's branch is at, read once, and only where its
 * reflog's last line agrees (only the session and the user's git write
 * that reflog; a session in the main tree can write packed-refs, where a
 * branch the user's git gc packed is): else NULL with *CAUSE.
 */
static char *
snap_worktree_tip_checked(const struct snap_worktree *wt, char **cause)
{
	char *ref = xprintf("refs/heads/%s", wt->branch), *raw = NULL;
	char *peel, *tip = NULL, *err = NULL, *last = NULL;
	const char *args[] = { "rev-parse", "--verify", "-q",
	    "--end-of-options", ref, NULL };
	struct buf out;
	bool unread = false;
	int fd;

	buf_init(&out);
	if (snap_worktree_git(wt->common, NULL, wt->common, args, &out,
	    &err) == -1 || out.data == NULL) {
		*cause = xprintf("cannot read the commit the session's branch "
		    "%s is at; look at it with 'git log -1 %s' and merge again",
		    wt->branch, wt->branch);
		goto out;
	}
	buf_adds(&out, "");
	out.data[strcspn(out.data, "\n")] = '\0';
	raw = xstrdup(out.data);
	if ((fd = open(wt->common, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) != -1) {
		last = snap_hist_log_last(fd, ref, &unread);
		close(fd);
	}
	if (unread) {
		*cause = xprintf("the session's branch %s is at %.12s, and the "
		    "last line of its reflog is over 16 MiB long (no git writes "
		    "such a line): whether something else moved the branch "
		    "cannot be told; look with 'git log -1 %s', and put its "
		    "reflog right ('git reflog expire --expire=now %s') to "
		    "merge", wt->branch, raw, wt->branch, ref);
		goto out;
	}
	if (last != NULL && strcmp(last, raw) != 0) {
		*cause = xprintf("the session's branch %s is at %.12s, and its "
		    "reflog (which only the session and your own git write) "
		    "says %.12s: something else moved it, such as a session "
		    "in the main tree through packed-refs; look with 'git log "
		    "-g %s', put it back with 'git update-ref %s %s' if the "
		    "reflog is right, and merge again", wt->branch, raw, last,
		    wt->branch, ref, last);
		goto out;
	}
	/* The commit of the value read, never of the name read again. */
	peel = xprintf("%s^{commit}", raw);
	args[4] = peel;
	buf_reset(&out);
	if (snap_worktree_git(wt->common, NULL, wt->common, args, &out,
	    &err) == 0 && out.data != NULL) {
		buf_adds(&out, "");
		out.data[strcspn(out.data, "\n")] = '\0';
		tip = xstrdup(out.data);
	} else
		*cause = xprintf("the session's branch %s is at %.12s, which "
		    "is not a commit; look at it with 'git log -1 %s'",
		    wt->branch, raw, wt->branch);
	free(peel);
out:
	free(err);
	free(last);
	free(raw);
	free(ref);
	buf_free(&out);
	return tip;
}

int
snap_worktree_merge(const struct snap_worktree *wt, int64_t session,
    enum snap_worktree_how how, const char *into,
    const struct config_limits *limits, char **done, char **cause)
{
	char *msg = xprintf("Merge agentmux session %lld (%s)",
	    (long long)session, wt->branch), *on = NULL, *files, *err = NULL;
	char *ref = NULL, *tree = NULL;
	const char *merge[] = { "merge", "--no-ff", "--no-edit", "-m", msg,
	    "--end-of-options", wt->branch, NULL };
	const char *squash[] = { "merge", "--squash", "--end-of-options",
	    wt->branch, NULL };
	const char *commit[] = { "commit", "-q", "--no-verify", "-m", msg,
	    NULL };
	int rc = -1;

	*done = NULL;
	if (snap_worktree_branch_plain(wt, cause) == -1 ||
	    snap_worktree_merge_check(wt, into, &on, cause) == -1)
		goto out;
	if (snap_worktree_merged(wt, NULL) == 1) {
		*done = xprintf("%s is merged into %s already", wt->branch, on);
		rc = 0;
		goto out;
	}
	/*
	 * One commit for the checks and the merge: a session still running
	 * could move its branch between them (to files the checks refuse).
	 */
	if ((ref = snap_worktree_tip_checked(wt, cause)) == NULL)
		goto out;
	merge[6] = ref;
	squash[3] = ref;
	if ((tree = snap_worktree_merge_tree(wt, ref, cause)) == NULL ||
	    snap_worktree_merge_untracked(wt, tree, cause) == -1 ||
	    (limits != NULL && snap_worktree_merge_size(wt, tree, limits,
	    cause) == -1))
		goto out;
	if (snap_worktree_user_ok(wt, how == SNAP_WORKTREE_MERGE ? merge :
	    squash, NULL, &err) == -1) {
		files = snap_worktree_conflicts(wt);
		*cause = xprintf("merging %s into %s stopped on conflicts in "
		    "%s: resolve them in %s and commit, or undo the merge with "
		    "'%s'", wt->branch, on, files, wt->project,
		    how == SNAP_WORKTREE_MERGE ? "git merge --abort" :
		    "git reset --merge");
		free(files);
		free(err);
		goto out;
	}
	if (how == SNAP_WORKTREE_SQUASH &&
	    snap_worktree_user_ok(wt, commit, NULL, cause) == -1)
		goto out;
	*done = xprintf(how == SNAP_WORKTREE_APPLY ? "%s applied to %s as "
	    "uncommitted (staged) changes" : how == SNAP_WORKTREE_SQUASH ?
	    "%s squashed into one commit on %s" : "%s merged into %s",
	    wt->branch, on);
	rc = 0;
out:
	free(tree);
	free(ref);
	free(on);
	free(msg);
	return rc;
}

static int snap_worktree_keep_record(const char *,
    const struct snap_worktree *, const char *, int64_t, bool, char **);

/* What the session made of the worktree's HEAD (open in FD) if it is not WANT, or NULL; caller frees. */
static char *
snap_worktree_head_was(int fd, const char *want)
{
	struct stat st;
	struct buf b;
	char *q, *was = NULL;

	if (fstatat(fd, "HEAD", &st, AT_SYMLINK_NOFOLLOW) == -1)
		return xstrdup(errno == ENOENT ? "deleted it" : "made it "
		    "unreadable");
	if (S_ISLNK(st.st_mode))
		return xstrdup("made it a link");
	buf_init(&b);
	if (!S_ISREG(st.st_mode) || snap_hist_read(fd, "HEAD", &b, 4096) == -1)
		was = xstrdup("made it something other than a file");
	else {
		buf_add(&b, "", 1);
		b.data[strcspn(b.data, "\n")] = '\0';
		if (strcmp(b.data, want) == 0)
			was = NULL;
		else if (!snap_hist_value_ok(b.data))
			was = xstrdup("filled it with what git does not take "
			    "for a HEAD");
		else if (strncmp(b.data, "ref: ", 5) == 0) {
			q = quote_name(b.data + 5);
			was = xprintf("pointed it at %s", q);
			free(q);
		} else
			was = xprintf("detached it at %.12s", b.data);
	}
	buf_free(&b);
	return was;
}

int
snap_worktree_head_fix(const struct snap_worktree *wt, bool dry, char **was,
    char **cause)
{
	char *want = xprintf("ref: refs/heads/%s", wt->branch);
	struct buf text;
	int fd, rc = 0;

	*was = NULL;
	/* The admin path is agentmux's record's, never the worktree's .git file's. */
	if ((fd = open(wt->admin, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1) {
		if (errno != ENOENT) {
			*cause = xprintf("cannot open the worktree's git dir "
			    "%s: %s", wt->admin, strerror(errno));
			rc = -1;
		}
		free(want);
		return rc;
	}
	*was = snap_worktree_head_was(fd, want);
	buf_init(&text);
	buf_printf(&text, "%s\n", want);
	if (*was != NULL && !dry && snap_hist_write(fd, "HEAD", &text,
	    0644) == -1) {
		*cause = xprintf("cannot write %s/HEAD: %s; write '%s' into "
		    "it", wt->admin, strerror(errno), want);
		rc = -1;
	}
	buf_free(&text);
	close(fd);
	free(want);
	return rc;
}

int
snap_worktree_modules_fix(const struct snap_worktree *wt, char **moved,
    char **cause)
{
	uint32_t r[2];
	struct stat st;
	char name[64];
	int fd, rc = 0;

	*moved = NULL;
	/* The admin path is agentmux's record's, never the worktree's .git file's. */
	if ((fd = open(wt->admin, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1)
		return 0;
	if (fstatat(fd, "modules", &st, AT_SYMLINK_NOFOLLOW) == 0) {
		/* A name the jail cannot have taken beforehand, and git never reads. */
		util_random(r, sizeof r);
		snprintf(name, sizeof name, "agentmux-quarantine-modules.%08x%08x",
		    r[0], r[1]);
		if (renameat2(fd, "modules", fd, name, RENAME_NOREPLACE) == 0)
			*moved = xprintf("%s/%s", wt->admin, name);
		else {
			*cause = xprintf("cannot move %s/modules aside: %s; "
			    "remove it (rm -rf) before any 'git submodule' in "
			    "the worktree %s", wt->admin, strerror(errno),
			    wt->path);
			rc = -1;
		}
	}
	close(fd);
	return rc;
}

/* Entries of a worktree's admin dir looked at, at most, and how deep. */
#define SNAP_WORKTREE_ADMIN_MAX 100000
#define SNAP_WORKTREE_ADMIN_DEPTH 32

/* What the walk of an admin dir found and removed. */
struct snap_worktree_odd {
	struct strv told;         /* "PATH (what)", quoted */
	size_t seen;              /* in the walk under way */
	size_t n;                 /* removed */
	bool failed;              /* one could not be removed, or a walk was cut */
	bool refs;                /* the walk is of the ref dir: big files are cut */
};

/* Whether LINE (LEN bytes, no newline) could be a loose ref's value: printable, one line. */
static bool
snap_ref_line_ok(const char *line, size_t len)
{
	size_t i;

	if (len == 0)
		return false;
	for (i = 0; i < len; i++) {
		if ((unsigned char)line[i] < 0x20 || (unsigned char)line[i] >
		    0x7e)
			return false;
	}
	return true;
}

int
snap_ref_cut(int dfd, const char *name, const struct stat *st,
    const char **what)
{
	char buf[SNAP_REF_MAX], tmp[64], *nl;
	struct stat now;
	uint32_t r[2];
	ssize_t n;
	int fd, out, error;

	if ((fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC)) == -1)
		return errno == ENOENT || errno == ELOOP ? 0 : -1;
	if (fstat(fd, &now) == -1 || !S_ISREG(now.st_mode) ||
	    now.st_dev != st->st_dev || now.st_ino != st->st_ino) {
		close(fd);
		return 0;
	}
	n = pread(fd, buf, sizeof buf, 0);
	close(fd);
	nl = n > 0 ? memchr(buf, '\n', (size_t)n) : NULL;
	if (nl == NULL || !snap_ref_line_ok(buf, (size_t)(nl - buf))) {
		*what = "removed";
		return unlinkat(dfd, name, 0) == 0 ? 1 : -1;
	}
	/* A dot-name: git takes no ref from it meanwhile. */
	util_random(r, sizeof r);
	snprintf(tmp, sizeof tmp, ".agentmux-ref.%08x%08x", r[0], r[1]);
	if ((out = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, 0600)) == -1)
		return -1;
	if (fchmod(out, 0666 & ~util_user_umask()) == -1 ||
	    util_write_all(out, buf, (size_t)(nl - buf) + 1) == -1 ||
	    close(out) == -1 || renameat(dfd, tmp, dfd, name) == -1) {
		error = errno;
		(void)unlinkat(dfd, tmp, 0);
		errno = error;
		return -1;
	}
	*what = "cut to its first line";
	return 1;
}

/* NAME, a regular file over SNAP_REF_MAX in the ref dir FD at REL, cut (snap_ref_cut), for *O. */
static void
snap_worktree_odd_big(int fd, const char *name, const char *rel,
    const struct stat *st, struct snap_worktree_odd *o)
{
	const char *what = NULL;
	char *q = snap_nested_quote_cut(rel, 160);
	int rc = snap_ref_cut(fd, name, st, &what);

	if (rc == -1) {
		o->failed = true;
		strv_addf(&o->told, "%s (a file of %lld bytes where git reads "
		    "a ref whole, NOT cut: %s)", q, (long long)st->st_size,
		    strerror(errno));
	} else if (rc == 1 && o->n++ < 10)
		strv_addf(&o->told, "%s (a file of %lld bytes where git reads "
		    "a ref whole: %s)", q, (long long)st->st_size, what);
	free(q);
}

/*
 * What git in a worktree reads or writes in its admin dir, looked at by
 * name before the walk, so that no number of entries hides them.
 */
static const char *const snap_worktree_git_names[] = {
	"HEAD", "ORIG_HEAD", "FETCH_HEAD", "MERGE_HEAD", "CHERRY_PICK_HEAD",
	"REVERT_HEAD", "REBASE_HEAD", "BISECT_HEAD", "AUTO_MERGE", "index",
	"logs/HEAD"
};

/* Removes NAME (a link or special file, stat ST) from FD at REL, for *O. */
static void
snap_worktree_odd_one(int fd, const char *name, const char *rel,
    const struct stat *st, struct snap_worktree_odd *o)
{
	char target[PATH_MAX], *q, *qt = NULL;
	ssize_t n;

	if (S_ISLNK(st->st_mode) && (n = readlinkat(fd, name, target,
	    sizeof target - 1)) >= 0) {
		target[n] = '\0';
		qt = snap_nested_quote_cut(target, 160);
	}
	q = snap_nested_quote_cut(rel, 160);
	if (unlinkat(fd, name, 0) == -1) {
		o->failed = true;
		strv_addf(&o->told, "%s (NOT removed: %s)", q, strerror(errno));
	} else if (o->n++ < 10)
		strv_addf(&o->told, "%s (%s%s)", q, qt != NULL ? "a link to " :
		    "a special file", qt != NULL ? qt : "");
	free(q);
	free(qt);
}

/* NAME (a path) under the dir FD at REL, if a link or special file, for snap_worktree_odd_one; through no link. */
static void
snap_worktree_odd_name(int fd, const char *rel, const char *name,
    struct snap_worktree_odd *o)
{
	const char *slash = strrchr(name, '/'), *leaf;
	char *dir, *path;
	struct stat st;
	int dfd;

	dir = slash != NULL ? xstrndup(name, (size_t)(slash - name)) :
	    xstrdup(".");
	leaf = slash != NULL ? slash + 1 : name;
	if ((dfd = snap_worktree_open_dir(fd, dir)) != -1) {
		if (fstatat(dfd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    !S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
			path = xprintf("%s/%s", rel, name);
			snap_worktree_odd_one(dfd, leaf, path, &st, o);
			free(path);
		}
		close(dfd);
	}
	free(dir);
}

static void snap_worktree_unlink_links(int, bool);

/* The dir NAME in FD at REL, deeper than the walk goes: removed whole, no link followed, for *O. */
static void
snap_worktree_odd_deep(int fd, const char *name, const char *rel,
    struct snap_worktree_odd *o)
{
	char *q = quote_name(rel);
	int sub;

	if ((sub = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) != -1)
		snap_worktree_unlink_links(sub, true);
	if (unlinkat(fd, name, AT_REMOVEDIR) == -1) {
		o->failed = true;
		strv_addf(&o->told, "%s (a dir %d deep, NOT removed: %s)", q,
		    SNAP_WORKTREE_ADMIN_DEPTH, strerror(errno));
	} else if (o->n++ < 10)
		strv_addf(&o->told, "%s (a dir %d deep, removed with what it "
		    "held)", q, SNAP_WORKTREE_ADMIN_DEPTH);
	free(q);
}

/*
 * Walks the dir FD (which it closes) at REL, never through a link, for
 * snap_worktree_odd_one. A walk cut at SNAP_WORKTREE_ADMIN_MAX entries is
 * told (once, at ROOT) and counts as failed.
 */
static void
snap_worktree_odd_walk(int fd, const char *rel, int depth,
    struct snap_worktree_odd *o)
{
	struct dirent *de;
	struct stat st;
	char *path;
	int sub;
	DIR *d;

	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		if (o->seen++ == SNAP_WORKTREE_ADMIN_MAX) {
			o->failed = true;
			path = quote_name(rel);
			strv_addf(&o->told, "more not looked at: the look stopped "
			    "after %d entries, in %s ('find DIR ! -type f ! "
			    "-type d' in the dir it names lists what is left)",
			    SNAP_WORKTREE_ADMIN_MAX, path);
			free(path);
		}
		if (o->seen > SNAP_WORKTREE_ADMIN_MAX)
			break;
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == -1)
			continue;
		path = *rel != '\0' ? xprintf("%s/%s", rel, de->d_name) :
		    xstrdup(de->d_name);
		if (S_ISDIR(st.st_mode) && depth < SNAP_WORKTREE_ADMIN_DEPTH) {
			if ((sub = openat(dirfd(d), de->d_name, O_RDONLY |
			    O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) != -1)
				snap_worktree_odd_walk(sub, path, depth + 1, o);
		} else if (S_ISDIR(st.st_mode))
			/* Deeper than git makes anything there: gone whole, told. */
			snap_worktree_odd_deep(dirfd(d), de->d_name, path, o);
		else if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
			snap_worktree_odd_one(dirfd(d), de->d_name, path, &st, o);
		else if (o->refs && S_ISREG(st.st_mode) && st.st_size >
		    SNAP_REF_MAX)
			snap_worktree_odd_big(dirfd(d), de->d_name, path, &st,
			    o);
		free(path);
	}
	closedir(d);
}

int
snap_worktree_odd_fix(const struct snap_worktree *wt, char **told)
{
	const char *slash = strrchr(wt->branch, '/');
	char *logs = xprintf("logs/refs/heads/%.*s", (int)(slash - wt->branch),
	    wt->branch), *refs = xprintf("refs/heads/%.*s", (int)(slash -
	    wt->branch), wt->branch), *at;
	struct snap_worktree_odd o;
	struct buf b;
	size_t i;
	int fd, cfd;

	*told = NULL;
	memset(&o, 0, sizeof o);
	strv_init(&o.told);
	/* The admin path is agentmux's record's, never the worktree's .git file's. */
	if ((fd = open(wt->admin, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) != -1) {
		for (i = 0; i < nitems(snap_worktree_git_names); i++)
			snap_worktree_odd_name(fd, wt->admin,
			    snap_worktree_git_names[i], &o);
		snap_worktree_odd_walk(fd, wt->admin, 0, &o);
	}
	/* The branch's reflog dir: a commit in the worktree appends to its reflog. */
	if ((cfd = open(wt->common, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) != -1) {
		if ((fd = snap_worktree_open_dir(cfd, logs)) != -1) {
			at = xprintf("%s/%s", wt->common, logs);
			snap_worktree_odd_name(fd, at, slash + 1, &o);
			o.seen = 0;
			snap_worktree_odd_walk(fd, at, 0, &o);
			free(at);
		}
		/*
		 * And its ref dir: git reads every ref there whenever it lists
		 * branches (git branch, for-each-ref, gc, worktree add), the
		 * user's in the main tree too; it waits on a FIFO, and follows
		 * a link that names no ref to whatever it names (/dev/zero,
		 * /dev/tty, a FIFO elsewhere). git makes neither there.
		 */
		if ((fd = snap_worktree_open_dir(cfd, refs)) != -1) {
			at = xprintf("%s/%s", wt->common, refs);
			o.seen = 0;
			o.refs = true;
			snap_worktree_odd_walk(fd, at, 0, &o);
			free(at);
		}
		close(cfd);
	}
	free(refs);
	free(logs);
	buf_init(&b);
	for (i = 0; i < o.told.n; i++)
		buf_printf(&b, "%s%s", i > 0 ? ", " : "", o.told.v[i]);
	if (o.n > 10)
		buf_adds(&b, ", ...");
	if (b.len > 0)
		*told = buf_steal(&b);
	buf_free(&b);
	strv_free(&o.told);
	return o.failed ? -1 : 0;
}

/*
 * Removes the symlinks under the directory FD (which it closes): git lists
 * no symlinked loose ref, nor deletes one. With FILES, every other
 * non-directory too.
 */
static void
snap_worktree_unlink_links(int fd, bool files)
{
	DIR *d;
	struct dirent *de;
	int sub;

	if (fd == -1)
		return;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_type == DT_LNK || (files && de->d_type != DT_DIR))
			unlinkat(fd, de->d_name, 0);
		else if (de->d_type == DT_DIR && strcmp(de->d_name, ".") != 0 &&
		    strcmp(de->d_name, "..") != 0) {
			sub = openat(fd, de->d_name, O_RDONLY | O_DIRECTORY |
			    O_NOFOLLOW | O_CLOEXEC);
			snap_worktree_unlink_links(sub, files);
			unlinkat(fd, de->d_name, AT_REMOVEDIR);
		}
	}
	closedir(d);
}

/* Opens REL under DIRFD one component at a time, never through a symlink; -1 with errno. */
static int
snap_worktree_open_dir(int dirfd, const char *rel)
{
	char *copy = xstrdup(rel), *part, *save = NULL;
	int fd = dup(dirfd), next;

	for (part = strtok_r(copy, "/", &save); fd != -1 && part != NULL;
	    part = strtok_r(NULL, "/", &save)) {
		next = openat(fd, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
		close(fd);
		fd = next;
	}
	free(copy);
	return fd;
}

/*
 * Removes what is at the reflog of WT's branch (not a dir, never through a
 * link) before git makes the branch: that dir is writable in the session's
 * jail, and git appends its first line through a link left there.
 */
static void
snap_worktree_log_clear(const struct snap_worktree *wt)
{
	char *rel = xprintf("logs/refs/heads/%s", wt->branch), *name;
	int cfd, pfd;

	name = strrchr(rel, '/');
	*name++ = '\0';
	if ((cfd = open(wt->common, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) != -1) {
		if ((pfd = snap_worktree_open_dir(cfd, rel)) != -1) {
			(void)unlinkat(pfd, name, 0);
			close(pfd);
		}
		close(cfd);
	}
	free(rel);
}

/*
 * Empties and removes the session's ref dir NS ("refs/heads/agentmux/ID/")
 * under COMMON, through no link: its links, and with FILES (the reflog dir,
 * once git deleted the refs and their reflogs) whatever else the jail left.
 */
static void
snap_worktree_discard_dir(const char *common, const char *ns, bool files)
{
	char *parent = xstrdup(ns), *name;
	int cfd, pfd;

	parent[strlen(parent) - 1] = '\0';
	name = strrchr(parent, '/');
	*name++ = '\0';
	if ((cfd = open(common, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) != -1) {
		if ((pfd = snap_worktree_open_dir(cfd, parent)) != -1) {
			snap_worktree_unlink_links(openat(pfd, name, O_RDONLY |
			    O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), files);
			(void)unlinkat(pfd, name, AT_REMOVEDIR);
			close(pfd);
		}
		close(cfd);
	}
	free(parent);
}

/*
 * Deletes one ref of the session from a for-each-ref line "REF OID SYMREF".
 * Never through a link: --no-deref deletes a symref (or a symlinked loose
 * ref) itself, not main it may point at; a plain ref only if still at OID.
 */
static int
snap_worktree_discard_ref(const struct snap_worktree *wt, const char *ns,
    char *line, char **cause)
{
	char *oid, *symref;
	const char *del[] = { "update-ref", "--no-deref", "-d",
	    "--end-of-options", line, NULL, NULL };

	if ((oid = strchr(line, ' ')) == NULL)
		return 0;
	*oid++ = '\0';
	if ((symref = strchr(oid, ' ')) != NULL)
		*symref++ = '\0';
	if (strncmp(line, ns, strlen(ns)) != 0)
		return 0;
	if (!snap_worktree_ref_link(wt->common, line, symref))
		del[5] = oid;
	return snap_worktree_git(wt->common, NULL, wt->common, del, NULL,
	    cause);
}

/* The commit the session's branch is at (a plain ref only), for restore; NULL if none. */
static char *
snap_worktree_tip(const struct snap_worktree *wt)
{
	char *ref = xprintf("refs/heads/%s^{commit}", wt->branch), *err = NULL;
	const char *args[] = { "rev-parse", "--verify", "-q",
	    "--end-of-options", ref, NULL };
	struct buf out;

	buf_init(&out);
	if (snap_worktree_branch_plain(wt, &err) == -1 ||
	    snap_worktree_git(wt->common, NULL, wt->common, args, &out,
	    &err) == -1 || out.data == NULL) {
		free(err);
		free(ref);
		buf_free(&out);
		return NULL;
	}
	free(ref);
	buf_adds(&out, "");
	out.data[strcspn(out.data, "\n")] = '\0';
	return buf_steal(&out);
}

int
snap_worktree_discard(const struct snap_worktree *wt, const char *root,
    int64_t pack_max, bool no_keep, char **cause)
{
	const char *slash = strrchr(wt->branch, '/');
	char *ns = xprintf("refs/heads/%.*s/", (int)(slash - wt->branch),
	    wt->branch), *ref, *p, *err = NULL, *logs;
	/* Twice: a 'locked' file the jail left in its admin dir is no bar. */
	const char *remove[] = { "worktree", "remove", "--force", "--force",
	    wt->path, NULL };
	const char *prune[] = { "worktree", "prune", NULL };
	const char *list[] = { "for-each-ref",
	    "--format=%(refname) %(objectname) %(symref)", ns, NULL };
	struct buf out;
	char *tip = snap_worktree_tip(wt);
	int rc = 0, lock;

	/* Nothing goes before what restore needs is kept. */
	if (snap_worktree_keep_record(root, wt, tip, pack_max, no_keep,
	    cause) == -1 || (lock = snap_worktree_lock(wt->common,
	    cause)) == -1) {
		free(tip);
		free(ns);
		return -1;
	}
	/* Its files first (git removes them without following links), then its refs. */
	if (snap_worktree_git(wt->common, NULL, wt->common, remove, NULL,
	    &err) == -1) {
		free(err);
		err = NULL;
		path_remove_tree(wt->path);
		(void)snap_worktree_git(wt->common, NULL, wt->common, prune,
		    NULL, &err);
		free(err);
		err = NULL;
	}
	close(lock);
	buf_init(&out);
	if (snap_worktree_git(wt->common, NULL, wt->common, list, &out,
	    cause) == -1)
		rc = -1;
	buf_adds(&out, "");
	for (p = out.data; rc == 0 && (ref = strsep(&p, "\n")) != NULL;)
		rc = snap_worktree_discard_ref(wt, ns, ref, cause);
	if (rc == 0) {
		snap_worktree_discard_dir(wt->common, ns, false);
		/* A reflog left there (a link to a host file) would take the first line of the next git to make that ref: restore's. */
		logs = xprintf("logs/%s", ns);
		snap_worktree_discard_dir(wt->common, logs, true);
		free(logs);
	}
	buf_free(&out);
	free(ns);
	if (rc == 0)
		path_remove_tree(root);
	free(tip);
	return rc;
}

/* DATA/sessions/SESSION/worktree: the record of a discarded worktree, for restore. */
static char *
snap_worktree_kept_path(const char *data_dir, const char *session)
{
	return xprintf("%s/sessions/%s/worktree", data_dir, session);
}

/* DATA/sessions/SESSION/worktree.pack: the commits of its branch, kept at discard for restore. */
static char *
snap_worktree_pack_path(const char *data_dir, const char *session)
{
	return xprintf("%s/sessions/%s/worktree.pack", data_dir, session);
}

/* Where discard's pack goes as git writes it: FD, at most MAX bytes (0: any). */
struct snap_worktree_pack_out {
	int fd;
	int64_t max;
	int64_t written;
	int error;                /* errno of a failed write, or 0 */
	bool over;                /* more than MAX came */
};

static void
snap_worktree_pack_chunk(void *arg, const char *data, size_t len)
{
	struct snap_worktree_pack_out *po = arg;
	ssize_t n;

	po->written += (int64_t)len;
	if (po->error != 0 || po->over)
		return;
	if (po->max > 0 && po->written > po->max) {
		po->over = true;
		return;
	}
	while (len > 0) {
		if ((n = write(po->fd, data, len)) == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			po->error = n == -1 ? errno : EIO;
			return;
		}
		data += n;
		len -= (size_t)n;
	}
}

/* Why the pack PO went wrong into *CAUSE (for DST, of WT's branch), or 0 if it did not. */
static int
snap_worktree_pack_failed(const struct snap_worktree *wt,
    const struct snap_worktree_pack_out *po, const char *dst, char **cause)
{
	char max[32];

	if (po->over) {
		util_fmt_size(max, sizeof max, po->max);
		*cause = xprintf("the commits of %s take more than [snapshots] "
		    "max_size = %s packed, too much to keep in agentmux's "
		    "store for restore; merge what you want of it first, "
		    "raise max_size, or discard --no-keep (restore then "
		    "needs its commits still in the project)", wt->branch,
		    max);
		return -1;
	}
	if (po->error != 0) {
		*cause = xprintf("cannot write %s: %s", dst,
		    strerror(po->error));
		return -1;
	}
	return 0;
}

/*
 * The commits (and their trees and files) from WT's base to TIP, packed
 * by the user's git into DST (through DST.tmp), at most MAX bytes (0:
 * any), so that restore has them even if the project's git gc pruned them
 * after the discard. -1 with *CAUSE.
 */
static int
snap_worktree_keep_pack(const struct snap_worktree *wt, const char *tip,
    const char *dst, int64_t max, char **cause)
{
	const char *args[] = { "pack-objects", "--revs", "--stdout", "-q",
	    NULL };
	struct snap_worktree_pack_out po = { .fd = -1, .max = max };
	char *tmp = xprintf("%s.tmp", dst);
	char *in = xprintf("%s\n^%s\n", tip, wt->base);
	int rc = -1;

	(void)unlink(tmp);
	if ((po.fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, 0600)) == -1)
		*cause = xprintf("cannot create %s: %s", tmp, strerror(errno));
	else if (snap_worktree_git_chunk(wt->common, NULL, wt->common, args,
	    in, -1, -1, NULL, snap_worktree_pack_chunk, &po, cause) == 0 &&
	    snap_worktree_pack_failed(wt, &po, tmp, cause) == 0) {
		if (fsync(po.fd) == -1 || rename(tmp, dst) == -1)
			*cause = xprintf("cannot write %s: %s", dst,
			    strerror(errno));
		else
			rc = 0;
	}
	if (po.fd != -1)
		close(po.fd);
	if (rc == -1)
		(void)unlink(tmp);
	free(in);
	free(tmp);
	return rc;
}

/*
 * Before ROOT (DATA/worktrees/wt-X) goes: its record is kept under
 * DATA/sessions/ID/, so that 'restore' knows the main project, the
 * worktree's path and its branch, with the commits of the branch (WT's,
 * at TIP) packed beside it, at most PACK_MAX bytes (0: any), unless
 * NO_KEEP. -1 with *CAUSE if either cannot be kept (with NO_KEEP: only
 * said); then nothing may be removed.
 */
static int
snap_worktree_keep_record(const char *root, const struct snap_worktree *wt,
    const char *tip, int64_t pack_max, bool no_keep, char **cause)
{
	char *path = xprintf("%s/session", root), *data, *slash, *id = NULL;
	char *dir, *dst, *why = NULL;
	struct buf b;
	int rc = 0;

	data = xstrdup(root);
	buf_init(&b);
	buf_adds(&b, "");
	if ((slash = strrchr(data, '/')) != NULL)
		*slash = '\0';
	if ((slash = strrchr(data, '/')) != NULL)
		*slash = '\0';
	if (slash == NULL || buf_read_file(&b, path) == -1 ||
	    (id = snap_worktree_field(b.data, "session")) == NULL) {
		why = xprintf("cannot read the session of %s: %s is missing "
		    "or damaged", root, path);
		goto out;
	}
	if (tip != NULL)
		buf_printf(&b, "tip=%s\n", tip);
	dir = xprintf("%s/sessions/%s", data, id);
	dst = snap_worktree_kept_path(data, id);
	if (path_mkdir_p(dir, 0700) == -1)
		why = xprintf("cannot make %s: %s", dir, strerror(errno));
	else
		(void)util_write_file_atomic(dst, b.data, strlen(b.data), 0600,
		    &why);
	free(dst);
	free(dir);
	dst = snap_worktree_pack_path(data, id);
	if (no_keep)
		(void)unlink(dst);
	else if (why == NULL && tip != NULL && wt->common != NULL &&
	    wt->base != NULL)
		(void)snap_worktree_keep_pack(wt, tip, dst, pack_max, &why);
	free(dst);
out:
	if (why != NULL && no_keep)
		log_warn("discard --no-keep of %s: %s", wt->branch, why);
	else if (why != NULL) {
		*cause = xprintf("kept the worktree %s and branch %s as they "
		    "are: %s (so that 'restore' can bring them back); free "
		    "space or fix that and discard again, or discard --no-keep "
		    "to do without", wt->path, wt->branch, why);
		rc = -1;
	}
	free(why);
	free(id);
	buf_free(&b);
	free(data);
	free(path);
	return rc;
}

/* Whether the commit REV is in the repository GITDIR. */
static bool
snap_worktree_has_commit(const char *gitdir, const char *rev)
{
	char *spec = xprintf("%s^{commit}", rev), *err = NULL;
	const char *args[] = { "cat-file", "-e", "--end-of-options", spec,
	    NULL };
	bool has;

	has = snap_worktree_git(gitdir, NULL, gitdir, args, NULL, &err) == 0;
	free(err);
	free(spec);
	return has;
}

/* The pack PATH (kept at discard) read into GITDIR's objects by git index-pack (which checks every object). */
static int
snap_worktree_unpack(const char *gitdir, const char *path, char **cause)
{
	const char *args[] = { "index-pack", "--stdin", NULL };
	int fd, rc;

	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) == -1) {
		*cause = xprintf("cannot open %s: %s", path, strerror(errno));
		return -1;
	}
	rc = snap_worktree_git_io(gitdir, NULL, gitdir, args, NULL, fd, -1,
	    NULL, cause);
	close(fd);
	return rc;
}

int
snap_worktree_bring_back(const char *data_dir, int64_t session,
    const struct snap_worktree *kept, const char *tip, char **cause)
{
	char *gitdir = xprintf("%s/.git", kept->project);
	char *id = xprintf("%lld", (long long)session);
	char *pack = snap_worktree_pack_path(data_dir, id), *why = NULL;
	int rc = 0;

	if (snap_worktree_has_commit(gitdir, tip))
		goto out;
	if (access(pack, F_OK) == 0 && snap_worktree_unpack(gitdir, pack,
	    &why) == 0) {
		if (snap_worktree_has_commit(gitdir, tip))
			goto out;
		why = xprintf("%s does not hold it", pack);
	}
	rc = -1;
	*cause = xprintf("the commit %.12s that session %lld's branch %s was "
	    "at when discarded is gone from %s (a git gc there pruned it), and "
	    "%s%s; its files are in its snapshots: 'agentmux undo %lld' says "
	    "how to get them", tip, (long long)session, kept->branch, gitdir,
	    why != NULL ? "agentmux could not bring it back from its own copy: "
	    : "agentmux kept no copy of it (it was discarded by an older "
	    "agentmux)", why != NULL ? why : "", (long long)session);
out:
	free(why);
	free(pack);
	free(id);
	free(gitdir);
	return rc;
}

const char *
snap_worktree_absent(bool running, int64_t nsnapshots)
{
	if (running)
		return "not made yet";
	if (nsnapshots == 0)
		return "none: the start ended before it was made";
	return "discarded";
}

int
snap_worktree_kept(const char *data_dir, int64_t session,
    struct snap_worktree *wt, char **tip, char **cause)
{
	char *id = xprintf("%lld", (long long)session);
	char *path = snap_worktree_kept_path(data_dir, id);
	struct buf b;

	memset(wt, 0, sizeof *wt);
	*tip = NULL;
	buf_init(&b);
	buf_adds(&b, "");
	if (buf_read_file(&b, path) == 0) {
		wt->project = snap_worktree_field(b.data, "project");
		wt->path = snap_worktree_field(b.data, "worktree");
		wt->branch = snap_worktree_field(b.data, "branch");
		wt->base = snap_worktree_field(b.data, "base");
		wt->common = snap_worktree_field(b.data, "common");
		wt->admin = snap_worktree_field(b.data, "admin");
		*tip = snap_worktree_field(b.data, "tip");
	}
	buf_free(&b);
	free(id);
	if (wt->project != NULL && wt->path != NULL && wt->branch != NULL &&
	    wt->base != NULL && snap_worktree_branch_ok(wt->branch) &&
	    wt->path[0] == '/') {
		free(path);
		return 0;
	}
	*cause = xprintf("there is no record of session %lld's discarded "
	    "worktree (%s is missing or damaged: it was discarded by an "
	    "older agentmux, or the record was removed); its files are in "
	    "its snapshots: 'agentmux undo %lld' says how to get them",
	    (long long)session, path, (long long)session);
	free(path);
	free(*tip);
	*tip = NULL;
	snap_worktree_clear(wt);
	return -1;
}
