/*
 * Worktree sessions: the session's own linked worktree (under the data
 * dir) is its project in the jail. The main working tree is not there;
 * the shared git dir is, read-only, with only what git needs to commit on
 * the session's branch writable: the worktree's own git dir and the
 * session's ref dir (refs/heads/agentmux/ID, where git also makes its lock
 * files), so the kernel refuses any other ref. Objects go through the
 * history overlay (session-history.c): new ones land in the session's own
 * upper dir and are checked and brought back; old ones cannot be touched.
 */
#include <sys/file.h>
#include <sys/stat.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "session-int.h"
#include "store/store.h"

/* True if the session should get a worktree: asked for, or its profile's. */
bool
session_worktree_wanted(const struct session_opts *o,
    const struct config_agent *a)
{
	return o->worktree || a->worktree;
}

/* A live session other than S whose tree is PROJECT: its id, else 0. */
static int64_t
session_worktree_sharer(struct session_ctx *ctx, const char *project)
{
	struct store_session **v;
	size_t i, n;
	int64_t id = 0;

	v = store_session_list(ctx->st, true, &n);
	for (i = 0; i < n && id == 0; i++) {
		if (v[i]->project != NULL && strcmp(v[i]->project, project) ==
		    0 && store_session_live(v[i]))
			id = v[i]->id;
	}
	store_session_list_free(v, n);
	return id;
}

int64_t
session_tree_sharer(struct session_ctx *ctx, const char *dir)
{
	char *project, *cause = NULL;
	int64_t id;

	if (jail_project(dir != NULL ? dir : ".", &project, &cause) == -1) {
		free(cause);
		return 0;
	}
	id = session_worktree_sharer(ctx, project);
	free(project);
	return id;
}

const char *
session_branch(struct session *s)
{
	return s->wt != NULL && s->wt->branch != NULL ? s->wt->branch : NULL;
}

/* Tests only: called with the project once its tree is checked (and free), before the session is recorded. */
AM_TESTABLE void (*session_tree_checked)(const char *lock);

/* $DATA/trees/NAME-HASH.lock: the lock of the tree PROJECT (FNV-1a of its path). */
static char *
session_tree_lock_file(const char *data_dir, const char *project)
{
	const char *base = strrchr(project, '/');
	uint64_t h = 1469598103934665603ULL;
	char name[25];
	size_t i;

	for (i = 0; project[i] != '\0'; i++)
		h = (h ^ (unsigned char)project[i]) * 1099511628211ULL;
	base = base != NULL && base[1] != '\0' ? base + 1 : "root";
	for (i = 0; i < sizeof name - 1 && base[i] != '\0'; i++)
		name[i] = isalnum((unsigned char)base[i]) || base[i] == '-' ?
		    base[i] : '_';
	name[i] = '\0';
	return xprintf("%s/trees/%s-%016llx.lock", data_dir, name,
	    (unsigned long long)h);
}

char *
session_tree_lock_path(struct session_ctx *ctx, const char *project)
{
	return session_tree_lock_file(ctx->data_dir, project);
}

/* Whether FD is still the lock file PATH: gc removes one nobody holds, perhaps while a start waited for it. */
static bool
session_tree_lock_current(int fd, const char *path)
{
	struct stat a, b;

	return fstat(fd, &a) == 0 && lstat(path, &b) == 0 &&
	    a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/*
 * Takes the lock of S's tree (flock, waiting) into S->tree_lock: from the
 * shared-tree check to the session's record, so that two sessions
 * starting on one tree at once (in one agentmux process or two) cannot
 * both find it free. It is held for a store insert only.
 */
static int
session_tree_lock(struct session *s, char **cause)
{
	char *path = session_tree_lock_path(s->ctx, s->project), *dir;
	int fd;

	dir = xstrndup(path, (size_t)(strrchr(path, '/') - path));
	for (;;) {
		if (path_mkdir_p(dir, 0700) == -1 || (fd = open(path, O_RDWR |
		    O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600)) == -1) {
			*cause = xprintf("cannot open the tree lock %s: %s; "
			    "check the data dir's permissions", path,
			    strerror(errno));
			free(dir);
			free(path);
			return -1;
		}
		while (flock(fd, LOCK_EX) == -1 && errno == EINTR)
			;
		/* Removed by gc meanwhile: a later start would lock a new file. */
		if (session_tree_lock_current(fd, path))
			break;
		close(fd);
	}
	s->tree_lock = fd;
	free(dir);
	free(path);
	return 0;
}

/* Whether a live session's tree has the lock file PATH. */
static bool
session_tree_lock_live(struct store *st, const char *data_dir,
    const char *path)
{
	struct store_session **v;
	size_t i, n;
	char *mine;
	bool live = false;

	v = store_session_list(st, true, &n);
	for (i = 0; i < n && !live; i++) {
		if (v[i]->project == NULL || !store_session_live(v[i]))
			continue;
		mine = session_tree_lock_file(data_dir, v[i]->project);
		live = strcmp(mine, path) == 0;
		free(mine);
	}
	store_session_list_free(v, n);
	return live;
}

/* Removes (unless DRY) the lock file NAME in DIR if it is ours, nobody holds it and no live session's tree has it: 1 if so. */
static int
session_tree_lock_gc(struct store *st, const char *data_dir, int dfd,
    const char *dir, const char *name, bool dry)
{
	char *path = xprintf("%s/%s", dir, name);
	struct stat sb;
	int fd, rc = 0;

	fd = openat(dfd, name, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd != -1 && fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) &&
	    sb.st_uid == geteuid() && !session_tree_lock_live(st, data_dir,
	    path) && flock(fd, LOCK_EX | LOCK_NB) == 0 &&
	    (dry || unlinkat(dfd, name, 0) == 0))
		rc = 1;
	if (fd != -1)
		close(fd);
	free(path);
	return rc;
}

int
session_tree_locks_gc(struct store *st, const char *data_dir, bool dry)
{
	char *dir = xprintf("%s/trees", data_dir);
	struct dirent *de;
	size_t len;
	int n = 0;
	DIR *d;

	if ((d = opendir(dir)) == NULL) {
		free(dir);
		return 0;
	}
	while ((de = readdir(d)) != NULL) {
		len = strlen(de->d_name);
		if (len > 5 && strcmp(de->d_name + len - 5, ".lock") == 0)
			n += session_tree_lock_gc(st, data_dir, dirfd(d), dir,
			    de->d_name, dry);
	}
	closedir(d);
	free(dir);
	return n;
}

void
session_tree_unlock(struct session *s)
{
	if (s->tree_lock == -1)
		return;
	close(s->tree_lock);
	s->tree_lock = -1;
}

/* The session whose worktree (ROOT of the data dir's DATA) PROJECT is in, with its branch, or 0. */
static int64_t
session_worktree_owner(const char *data, const char *project, char **branch)
{
	struct snap_worktree wt;
	char *root, *cause;
	int64_t *ids, id = 0;
	size_t n, i, len;

	snap_worktree_sessions(data, &ids, &n);
	for (i = 0; i < n && id == 0; i++) {
		root = cause = NULL;
		if (snap_worktree_find(data, ids[i], &wt, &root, &cause) == 0) {
			len = strlen(root);
			if (strncmp(project, root, len) == 0 &&
			    (project[len] == '/' || project[len] == '\0')) {
				id = ids[i];
				*branch = xstrdup(wt.branch);
			}
			snap_worktree_clear(&wt);
		}
		free(cause);
		free(root);
	}
	free(ids);
	return id;
}

int
session_worktree_inside_check(struct session *s, char **cause)
{
	char *under = xprintf("%s/worktrees", s->ctx->data_dir);
	char *branch = NULL, *qp, *qb;
	size_t len = strlen(under);
	int64_t id;

	if (strncmp(s->project, under, len) != 0 || (s->project[len] != '/' &&
	    s->project[len] != '\0')) {
		free(under);
		return 0;
	}
	free(under);
	qp = quote_name(s->project);
	if ((id = session_worktree_owner(s->ctx->data_dir, s->project,
	    &branch)) == 0) {
		*cause = xprintf("%s is in agentmux's own worktrees dir, not a "
		    "project: start the session in the project itself (with "
		    "--worktree for a tree of its own)", qp);
		free(qp);
		return -1;
	}
	qb = quote_name(branch);
	*cause = xprintf("%s is the worktree of session %lld (branch %s): a "
	    "session started in it would find no git there (a worktree's git "
	    "lives in the main project, which its jail does not show); to go "
	    "on with that work, start one "
	    "from the main project on a worktree of its own from that branch: "
	    "agentmux run --worktree --base %s (or bring it in first: "
	    "'agentmux merge %lld')", qp, (long long)id, qb, qb,
	    (long long)id);
	free(qb);
	free(qp);
	free(branch);
	return -1;
}

int
session_worktree_shared_check(struct session *s, const struct session_opts *o,
    char **cause)
{
	int64_t other;

	if (s->wt != NULL)
		return 0;
	if (session_tree_lock(s, cause) == -1)
		return -1;
	if (o->shared || (other = session_worktree_sharer(s->ctx,
	    s->project)) == 0) {
		if (session_tree_checked != NULL)
			session_tree_checked(s->project);
		return 0;
	}
	*cause = xprintf("session %lld is running on %s already: two sessions "
	    "in one tree see and undo each other's changes; start this one "
	    "with --worktree (a tree of its own), or with --shared to share "
	    "the tree knowingly", (long long)other, s->project);
	return -1;
}

/*
 * Before the session is recorded: where its worktree will be (a fresh
 * dir under the data dir, named like the project so tools see the same
 * name), which becomes the project the session records, snapshots and
 * jails. The command's dir is carried over.
 */
int
session_worktree_plan(struct session *s, const struct session_opts *o,
    char **cause)
{
	char *parent = xprintf("%s/worktrees", s->ctx->data_dir);
	char *root = xprintf("%s/wt-XXXXXX", parent);
	const char *name = strrchr(s->project, '/') + 1;
	size_t n = strlen(s->project);
	char *cwd;

	if (path_mkdir_p(parent, 0700) == -1 || mkdtemp(root) == NULL) {
		*cause = xprintf("cannot make a worktree dir in %s: %s", parent,
		    strerror(errno));
		free(parent);
		free(root);
		return -1;
	}
	free(parent);
	s->wt = xcalloc(1, sizeof *s->wt);
	s->wt_root = root;
	s->wt_main = s->project;
	s->wt_base = o->base != NULL ? xstrdup(o->base) : NULL;
	s->wt_name = xstrdup(o->branch != NULL ? o->branch : s->agent);
	s->project = xprintf("%s/%s", root, *name != '\0' ? name : "project");
	cwd = s->cwd;
	s->cwd = xprintf("%s%s", s->project, strncmp(cwd, s->wt_main, n) ==
	    0 ? cwd + n : "");
	free(cwd);
	return 0;
}

/* What the worktree is, beside it, for the commands that review it later. */
static int
session_worktree_note(struct session *s, char **cause)
{
	const struct snap_worktree *wt = s->wt;
	char *path = xprintf("%s/session", s->wt_root);
	char *text = xprintf("session=%lld\nproject=%s\nworktree=%s\n"
	    "branch=%s\nbase=%s\ncommon=%s\nadmin=%s\n", (long long)s->id,
	    wt->project, wt->path, wt->branch, wt->base, wt->common,
	    wt->admin);
	int rc;

	rc = util_write_file_atomic(path, text, strlen(text), 0600, cause);
	free(path);
	free(text);
	return rc;
}

/* What .worktreeinclude did not copy, in the session's events. */
static void
session_worktree_report(struct session *s, const struct snap_worktree_made *m)
{
	char *q;

	store_event_add(s->ctx->st, s->id, "info", "worktree", "worktree %s "
	    "on branch %s from %s (%zu file%s copied by .worktreeinclude)",
	    s->wt->path, s->wt->branch, s->wt->base, m->copied, m->copied == 1 ?
	    "" : "s");
	if (m->skipped.n > 0)
		store_event_add(s->ctx->st, s->id, "warn", "worktree", "%zu "
		    "file%s named by .worktreeinclude not copied (not regular "
		    "files, or behind a link)", m->skipped.n, m->skipped.n == 1 ?
		    "" : "s");
	if (m->over.n > 0) {
		q = quote_name(m->over.v[0]);
		store_event_add(s->ctx->st, s->id, "warn", "worktree", "%zu "
		    "file%s named by .worktreeinclude not copied: past the "
		    "1 GiB it may copy (the first: %s); copy what the agent "
		    "needs by hand, or name less in .worktreeinclude",
		    m->over.n, m->over.n == 1 ? "" : "s", q);
		free(q);
	}
}

/* The worktree is made (or not), on the loop: the start goes on. */
static void
session_worktree_made(void *arg, const struct snap_worktree_made *m,
    const char *error)
{
	struct session *s = arg;
	char *cause = NULL;

	s->wt_make = NULL;
	if (!m->added)
		/* Nothing was made: the dir it was to be in goes. */
		path_remove_tree(s->wt_root);
	/* Noted once added, even if it stopped after: discard finds it so. */
	if (m->added && session_worktree_note(s, &cause) == 0 && error == NULL)
		session_worktree_report(s, m);
	s->wt_made(s, error != NULL ? error : cause);
	free(cause);
}

/*
 * Once recorded: the worktree, on agentmux/ID/NAME, and what
 * .worktreeinclude names, made on the loop; DONE(S, ERROR) is told once
 * it is (ERROR: NULL), unless it cannot start: -1 with *CAUSE.
 */
int
session_worktree_make(struct session *s,
    void (*done)(struct session *, const char *), char **cause)
{
	char *branch;

	branch = xprintf("agentmux/%lld/%s", (long long)s->id, s->wt_name);
	s->wt_made = done;
	s->wt_make = snap_worktree_make_start(s->ctx->base, s->wt_main,
	    s->project, branch, s->wt_base, s->wt_root, s->wt,
	    session_worktree_made, s, cause);
	free(branch);
	if (s->wt_make == NULL) {
		path_remove_tree(s->wt_root);
		return -1;
	}
	return 0;
}

/*
 * Where the jail sees the shared git dir: at its top, with no writable
 * dir above it, so that Landlock can refuse links, sockets and FIFOs in
 * all of it (jail_conf sealed). At its host path it lay under the jail's
 * HOME, whose rule grants them: a jail that planted a link to /dev/zero
 * in its ref dir again and again won some of the user's git runs (read
 * without end), however fast the live watch removed it.
 */
#define SESSION_WT_GITDIR "/.agentmux-git"

/* HOST (in the shared git dir) bound at its place in the jail's. */
static void
session_worktree_at(struct session_setup *sp, const struct snap_worktree *wt,
    const char *host, bool rw)
{
	strv_addf(&sp->at_path, "%s%s", SESSION_WT_GITDIR,
	    host + strlen(wt->common));
	strv_add(&sp->at_src, host);
	strv_add(&sp->at_rw, rw ? "rw" : "ro");
}

/*
 * The shared git dir read-only, with the worktree's git dir and the
 * session's ref dirs writable, at SESSION_WT_GITDIR; the worktree's .git
 * file there names it. The history overlay of its objects moves with it.
 */
int
session_worktree_jail(struct session *s, struct session_setup *sp,
    char **cause)
{
	const struct snap_worktree *wt = s->wt;
	const char *slash = strrchr(wt->branch, '/');
	int dirlen = (int)(slash - wt->branch);
	size_t n = strlen(wt->common);
	char *path, *text;
	int fd;

	if (strncmp(wt->admin, wt->common, n) != 0 || wt->admin[n] != '/') {
		*cause = xprintf("the worktree's git dir %s is not in the "
		    "project's %s; 'agentmux discard %lld' removes the "
		    "worktree", wt->admin, wt->common, (long long)s->id);
		return -1;
	}
	/* The jail's .git, read by git in the jail only (no fsync: made at each start). */
	text = xprintf("gitdir: %s%s\n", SESSION_WT_GITDIR, wt->admin + n);
	path = xprintf("%s/gitfile", sp->dir);
	/* Its dir is made by the history's start, which history = off skips. */
	(void)path_mkdir_p(sp->dir, 0700);
	(void)unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	    0644);
	if (fd == -1 || util_write_all(fd, text, strlen(text)) == -1) {
		*cause = xprintf("cannot write %s: %s", path, strerror(errno));
		if (fd != -1)
			close(fd);
		free(text);
		free(path);
		return -1;
	}
	close(fd);
	free(text);
	strv_addf(&sp->at_path, "%s/.git", s->project);
	strv_add(&sp->at_src, path);
	strv_add(&sp->at_rw, "ro");
	free(path);

	session_worktree_at(sp, wt, wt->common, false);
	session_worktree_at(sp, wt, wt->admin, true);
	path = xprintf("%s/refs/heads/%.*s", wt->common, dirlen, wt->branch);
	session_worktree_at(sp, wt, path, true);
	free(path);
	path = xprintf("%s/logs/refs/heads/%.*s", wt->common, dirlen,
	    wt->branch);
	session_worktree_at(sp, wt, path, true);
	free(path);
	/*
	 * Objects go through the history overlay (session_history_start);
	 * with history = off, straight into the shared dir, as a main-tree
	 * session's do (git could not commit at all).
	 */
	if (!s->cf->jail.history) {
		path = xprintf("%s/objects", wt->common);
		session_worktree_at(sp, wt, path, true);
		free(path);
	}
	/* What sends the host's git elsewhere stays as git wrote it. */
	path = xprintf("%s/commondir", wt->admin);
	session_worktree_at(sp, wt, path, false);
	free(path);
	path = xprintf("%s/gitdir", wt->admin);
	session_worktree_at(sp, wt, path, false);
	free(path);
	/* Made empty by snap_worktree_add: host git may obey it. */
	path = xprintf("%s/config.worktree", wt->admin);
	session_worktree_at(sp, wt, path, false);
	free(path);

	session_setup_move_overlays(sp, wt->common, SESSION_WT_GITDIR, NULL);
	free(sp->sealed);
	sp->sealed = xstrdup(SESSION_WT_GITDIR);
	return 0;
}

/* The profile's setup runs in the jail first; the command only if it succeeds. */
void
session_worktree_setup(struct session *s, const struct config_agent *a)
{
	struct strv argv;
	size_t i;

	if (s->wt == NULL || a->setup == NULL || *a->setup == '\0')
		return;
	strv_init(&argv);
	strv_add(&argv, "/bin/sh");
	strv_add(&argv, "-c");
	strv_addf(&argv, "%s\nst=$?\nif [ $st -ne 0 ]; then echo \"agentmux: "
	    "the setup command failed (exit $st)\" >&2; exit $st; fi\n"
	    "exec \"$@\"", a->setup);
	strv_add(&argv, "agentmux-setup");
	for (i = 0; i < s->argv.n; i++)
		strv_add(&argv, s->argv.v[i]);
	strv_free(&s->argv);
	s->argv = argv;
}

void
session_worktree_free(struct session *s)
{
	/* Stopped half made: what is there stays, as a session's worktree does. */
	snap_worktree_make_free(s->wt_make);
	s->wt_make = NULL;
	if (s->wt != NULL)
		snap_worktree_clear(s->wt);
	free(s->wt);
	free(s->wt_root);
	free(s->wt_main);
	free(s->wt_base);
	free(s->wt_name);
	s->wt = NULL;
	s->wt_root = s->wt_main = s->wt_base = s->wt_name = NULL;
}
