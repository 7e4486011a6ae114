/*
 * The end-of-session look at what a jailed command left in the project for
 * the host to run later: git dirs the host's git would obey (snap-nested.c),
 * set-uid and set-gid files, changes to the files the user's own tools
 * run (.envrc, .vscode/tasks.json, ...), and a rebase or other git
 * sequence left in progress or given new exec lines. One walk of the
 * project, which never follows a link.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "snap/snap-int.h"

/* Entries walked between two moments the clone gate is let go (a gated scan). */
#define SNAP_PLANT_GATE_EVERY 64

static void snap_plant_watch_in(const struct snap_plant_opts *,
    struct snap_plant_result *, int, const char *, const struct stat *,
    const char *);
static void snap_plant_watch(const struct snap_plant_opts *,
    struct snap_plant_result *, int, const char *, const struct stat *);
static void snap_plant_watch_gone(const struct snap_plant_opts *,
    struct snap_plant_result *, int);
static void snap_plant_seq_left(const struct snap_plant_opts *,
    struct snap_plant_result *, int);

struct snap_plant_walk {
	const struct snap_plant_opts *o;
	struct snap_plant_result *res;
	struct snap_nested nc;
	char *inside;             /* the git dir not named .git the walk is in */
	char *moved;              /* the dir nearest the top the session changed that the walk is in */
	size_t links_out;         /* links out of the project the session made */
	size_t venv_links;        /* of them, venv interpreters (not flagged) */
	struct strv direct;       /* watched paths looked at by name before the walk */
	bool direct_cut;          /* some were not: too many */
	struct snap_plant_reopened {
		char *rel;
		dev_t dev;
		ino_t ino;
		mode_t mode;
	} *reopened;              /* dirs opened up for the walk, to close again */
	size_t nreopened;
	bool dir_changed;         /* the dir being read was changed in the session */
	bool at_top;              /* the walk has not read a dir yet */
	size_t entries;           /* looked at so far (a gated scan lets go of the gate every few) */
};

/* The most paths looked at by name before the walk (snap_plant_direct). */
#define SNAP_PLANT_DIRECT_MAX 10000

/* The most links out of the project told one by one; the rest are counted. */
#define SNAP_PLANT_MAX_LINKS_OUT 20
/* The largest attributes file git reads (attr.c's ATTR_MAX_FILE_SIZE). */
#define SNAP_PLANT_ATTRS_MAX (100 * 1024 * 1024)
/* The same for dirs opened up and for watched files moved in with their dir. */
#define SNAP_PLANT_MAX_TOLD 20
/* The most entries of one watched dir looked at by name before the walk. */
#define SNAP_PLANT_DIRECT_PER 1000

/*
 * A hostile tree can be as wide as the disk allows; past max_entries
 * ([jail] scan_limit) the walk stops and says so, in every session it
 * stops in (one that fills an ignored dir first would otherwise hide what
 * it planted past it); the watched files are looked at by name before the
 * walk, which is breadth first (snap-walk.c): a filled dir hides nothing
 * at a lesser depth. Deep is bounded already: the walk goes into nothing
 * past PATH_MAX, and neither
 * can git's own search for a repository (it starts from the working
 * directory's path).
 */

void
snap_plant_result_init(struct snap_plant_result *res)
{
	memset(res, 0, sizeof *res);
	strv_init(&res->alerts);
	strv_init(&res->watched);
	strv_init(&res->notes);
}

void
snap_plant_result_free(struct snap_plant_result *res)
{
	strv_free(&res->alerts);
	strv_free(&res->watched);
	strv_free(&res->notes);
}

/* True if a file named HEAD is in the dir REL: it is a git dir. */
static bool
snap_plant_is_gitdir(struct snap_plant_walk *w, const char *rel)
{
	char *head = xprintf("%s/HEAD", rel);
	int fd = path_open_beneath(w->nc.projfd, head, O_PATH, 0);

	free(head);
	if (fd == -1)
		return false;
	close(fd);
	return true;
}

/*
 * True if HEAD in DIRFD is one git's validate_headref() accepts, or may
 * (a FIFO or device: not read): a link to "refs/...", "ref: refs/..." or
 * an object name.
 */
static bool
snap_plant_headref(int dirfd)
{
	char b[256];
	struct stat st;
	ssize_t n;
	size_t sp;
	int fd;

	if (dirfd == -1 || fstatat(dirfd, "HEAD", &st,
	    AT_SYMLINK_NOFOLLOW) == -1 || S_ISDIR(st.st_mode))
		return false;
	if (S_ISLNK(st.st_mode)) {
		n = readlinkat(dirfd, "HEAD", b, sizeof b - 1);
		return n >= 5 && memcmp(b, "refs/", 5) == 0;
	}
	if (!S_ISREG(st.st_mode))
		return true;
	if ((fd = openat(dirfd, "HEAD", O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC)) == -1)
		return false;
	n = read(fd, b, sizeof b - 1);
	close(fd);
	if (n < 0)
		return false;
	b[n] = '\0';
	if (strncmp(b, "ref:", 4) == 0) {
		sp = 4 + strspn(b + 4, " \t\n\v\f\r");
		return strncmp(b + sp, "refs/", 5) == 0;
	}
	return strspn(b, "0123456789abcdefABCDEF") >= 40;
}

/* True if NAME is in DIRFD or DIRFD2 (-1: none), whatever it is (git follows a link there). */
static bool
snap_plant_has(int dirfd, int dirfd2, const char *name)
{
	struct stat st;

	return (dirfd != -1 && fstatat(dirfd, name, &st,
	    AT_SYMLINK_NOFOLLOW) == 0) || (dirfd2 != -1 && fstatat(dirfd2,
	    name, &st, AT_SYMLINK_NOFOLLOW) == 0);
}

bool
snap_plant_repo_at(int dirfd, int dirfd2)
{
	return (snap_plant_headref(dirfd) || snap_plant_headref(dirfd2)) &&
	    (snap_plant_has(dirfd, dirfd2, "commondir") ||
	    (snap_plant_has(dirfd, dirfd2, "objects") &&
	    snap_plant_has(dirfd, dirfd2, "refs")));
}

/* True if the dir REL ("." for the project) is one git would take for a repository. */
static bool
snap_plant_repo_dir(struct snap_plant_walk *w, const char *rel)
{
	bool is;
	int fd;

	/* O_PATH: git finds HEAD by name in a dir it cannot list, and so do we. */
	fd = strcmp(rel, ".") == 0 ? openat(w->nc.projfd, ".", O_PATH |
	    O_DIRECTORY | O_CLOEXEC) : path_open_beneath(w->nc.projfd, rel,
	    O_PATH | O_DIRECTORY, 0);
	if (fd == -1)
		return false;
	is = snap_plant_repo_at(fd, -1);
	close(fd);
	return is;
}

/*
 * The set-uid and set-gid bits of REL (changed in the session) come off,
 * but a dir's set-gid bit: it runs nothing (new entries take the dir's
 * group), the jail cannot set it (seccomp), only have it from the kernel
 * in a set-gid dir or from the user, and taking it off broke a repository
 * shared with a group (.git, set-gid as each of its dirs, changes in
 * every session) and any set-gid dir of the user's a session added to.
 */
static void
snap_plant_setid(struct snap_plant_walk *w, const char *rel,
    const struct stat *st)
{
	struct stat now;
	char *q;
	int fd, rc = -1;

	if (!(st->st_mode & (S_ISUID | S_ISGID)) ||
	    !(S_ISREG(st->st_mode) || S_ISDIR(st->st_mode)) ||
	    (S_ISDIR(st->st_mode) && !(st->st_mode & S_ISUID)) ||
	    !snap_nested_changed(st, w->o->since))
		return;
	fd = path_open_beneath(w->nc.projfd, rel, O_RDONLY | O_NONBLOCK |
	    (S_ISDIR(st->st_mode) ? O_DIRECTORY : 0), 0);
	if (fd != -1 && fstat(fd, &now) == 0 && now.st_ino == st->st_ino &&
	    now.st_dev == st->st_dev)
		rc = fchmod(fd, now.st_mode & 01777);
	if (fd != -1)
		close(fd);
	q = snap_nested_quote(rel);
	if (rc == 0)
		strv_addf(&w->res->alerts, "%s was made set-%s (owner uid %lu) "
		    "in the session; agentmux took that bit off", q,
		    (st->st_mode & S_ISUID) ? "uid" : "gid",
		    (unsigned long)st->st_uid);
	else
		strv_addf(&w->res->alerts, "%s was made set-%s (owner uid %lu) "
		    "in the session and agentmux could not take that bit off: "
		    "%s; remove it before anyone runs it", q,
		    (st->st_mode & S_ISUID) ? "uid" : "gid",
		    (unsigned long)st->st_uid, strerror(errno));
	w->res->setid++;
	free(q);
}

/* True if REL lies under DIR (NULL: nowhere). */
static bool
snap_plant_under(const char *dir, const char *rel)
{
	size_t n;

	if (dir == NULL)
		return false;
	n = strlen(dir);
	return strncmp(rel, dir, n) == 0 && rel[n] == '/';
}

/* True if REL lies in a git dir: under a ".git" component, or in one of another name. */
static bool
snap_plant_gitpath(struct snap_plant_walk *w, const char *rel)
{
	if (strncmp(rel, ".git/", 5) == 0 || strstr(rel, "/.git/") != NULL)
		return true;
	return snap_plant_under(w->inside, rel);
}

AM_TESTABLE void (*snap_plant_dir_checked)(const char *);

/*
 * A git dir made unreadable (chmod 0111: git on the host still finds its
 * HEAD, config and hooks by name, agentmux could not open it to defuse
 * it) gets read, write and search back for its owner, the user, and it
 * is said; so does any other dir (WHAT says which) the session changed
 * that the walk cannot read, so that what it holds is looked at (review
 * 14: a repository planted beneath a dir made search-only, chmod 0111,
 * was never found, and the host's git status ran its fsmonitor). True
 * if it was opened up.
 */
static bool
snap_plant_open_up(struct snap_plant_walk *w, struct snap_walk_ent *e,
    const char *rel, const char *what, bool keep)
{
	const struct stat *was = &e->st;
	struct stat now;
	char *q;
	int fd, rc = -1;

	if ((fd = snap_walk_open_dir(w->nc.projfd, rel)) != -1) {
		close(fd);
		return false;
	}
	if (errno != EACCES || was->st_uid != geteuid())
		return false;
	if (snap_plant_dir_checked != NULL)
		snap_plant_dir_checked(rel);
	/*
	 * Changed through an O_PATH descriptor of the dir the walk saw, never by
	 * name: a dir swapped since for a link would have the chmod land
	 * where the link points (a --shared session's jail may still run).
	 */
	if ((fd = path_open_beneath(w->nc.projfd, rel, O_PATH | O_DIRECTORY,
	    0)) == -1)
		return false;
	if (fstat(fd, &now) == 0 && now.st_ino == was->st_ino &&
	    now.st_dev == was->st_dev)
		rc = snap_modes_fchmod(fd, (now.st_mode & 0777) | 0700);
	close(fd);
	if (rc == -1)
		return false;
	/* Not a git dir: its mode is put back after the walk (the snapshot keeps the session's modes). */
	if (keep) {
		w->reopened = xreallocarray(w->reopened, w->nreopened + 1,
		    sizeof *w->reopened);
		w->reopened[w->nreopened].rel = xstrdup(rel);
		w->reopened[w->nreopened].dev = now.st_dev;
		w->reopened[w->nreopened].ino = now.st_ino;
		w->reopened[w->nreopened++].mode = now.st_mode & 07777;
	}
	if (++w->res->unreadable > SNAP_PLANT_MAX_TOLD)
		return true;
	q = snap_nested_quote(rel);
	if (keep)
		strv_addf(&w->res->alerts, "%s, %s, was made unreadable in the "
		    "session (mode %04o); agentmux looked in it and left its "
		    "mode as it was", q, what, (unsigned)(was->st_mode & 07777));
	else
		strv_addf(&w->res->alerts, "%s, %s, was made unreadable in the "
		    "session (mode %04o); agentmux gave its owner read, write "
		    "and search on it back to look in it", q, what,
		    (unsigned)(was->st_mode & 07777));
	free(q);
	return true;
}

/* The dirs opened up for the walk that are no git dirs: their modes put back, the deepest first (each by a descriptor, its identity checked). */
static void
snap_plant_close_up(struct snap_plant_walk *w)
{
	struct snap_plant_reopened *r;
	struct stat st;
	size_t i;
	int fd;

	for (i = w->nreopened; i > 0; i--) {
		r = &w->reopened[i - 1];
		if ((fd = path_open_beneath(w->nc.projfd, r->rel, O_PATH |
		    O_DIRECTORY, 0)) != -1) {
			if (fstat(fd, &st) == 0 && st.st_dev == r->dev &&
			    st.st_ino == r->ino)
				(void)snap_modes_fchmod(fd, r->mode);
			close(fd);
		}
		free(r->rel);
	}
	free(w->reopened);
	w->reopened = NULL;
	w->nreopened = 0;
}

/*
 * A dir the walk cannot read that is no git dir: opened up if the
 * session changed it (then gone into), else said: what lies beneath is
 * not looked at.
 */
static void
snap_plant_unreadable(struct snap_plant_walk *w, struct snap_walk_ent *e,
    const char *rel)
{
	char *q;

	if (snap_nested_changed(&e->st, w->o->since) &&
	    snap_plant_open_up(w, e, rel, "a dir", true)) {
		e->info = SNAP_WALK_D;
		return;
	}
	q = snap_nested_quote(rel);
	strv_addf(&w->res->notes, "%s cannot be read (mode %04o, owner %lu): "
	    "what lies beneath it was not looked at for planted git dirs, "
	    "set-uid files and links out of the project", q,
	    (unsigned)(e->st.st_mode & 07777), (unsigned long)e->st.st_uid);
	free(q);
}

/*
 * A dir git would take for a repository, not named .git (src/ holding
 * HEAD, objects/, refs/ and a config with core.worktree = ..): git on
 * the host obeys it from any dir below the worktree it names. It is
 * defused as a nested .git is, and what is in it is looked at as what is
 * in a git dir.
 */
static bool
snap_plant_other_gitdir(struct snap_plant_walk *w, struct snap_walk_ent *e,
    const char *rel)
{
	char *repo;

	if (w->inside != NULL || (e->level == 1 && w->o->had_git &&
	    strcmp(e->name, ".git") == 0) || !snap_plant_repo_dir(w, rel))
		return false;
	if (e->info == SNAP_WALK_D)
		w->inside = xstrdup(rel);
	(void)snap_plant_open_up(w, e, rel, "a git dir", false);
	repo = xprintf("%s (a git dir named %s)", e->path, e->name);
	snap_nested_gitdir(&w->nc, repo, rel);
	free(repo);
	return true;
}

/* Whether DIR (of REL's ancestors, the git dir ROOT long) is a git dir inside that one: a submodule's under modules/, a linked worktree's under worktrees/. */
static bool
snap_plant_inner_gitdir(struct snap_plant_walk *w, const char *dir,
    size_t root)
{
	return (strstr(dir + root, "/modules/") != NULL ||
	    strstr(dir + root, "/worktrees/") != NULL) &&
	    snap_plant_is_gitdir(w, dir);
}

/*
 * Whether a dir on the way from REL's git dir to REL was changed in the
 * session (the git dir itself not counted, nor a submodule's or a linked
 * worktree's inside it: git writes in each at every commit). A dir moved
 * into a git dir brings what it holds with the ctimes of before (a
 * rename changes only the dir's): a link made in an earlier session,
 * outside any git dir, among them.
 */
static bool
snap_plant_moved_in(struct snap_plant_walk *w, const char *rel)
{
	const char *end;
	char *dir, *slash;
	struct stat st;
	bool moved = false;
	size_t root;
	int fd;

	if (snap_plant_under(w->inside, rel))
		root = strlen(w->inside);
	else if (strncmp(rel, ".git/", 5) == 0)
		root = 4;
	else if ((end = strstr(rel, "/.git/")) != NULL)
		root = (size_t)(end - rel) + 5;
	else
		return false;
	dir = xstrdup(rel);
	while (!moved && (slash = strrchr(dir, '/')) != NULL &&
	    (size_t)(slash - dir) > root) {
		*slash = '\0';
		if (snap_plant_inner_gitdir(w, dir, root))
			break;
		fd = path_open_beneath(w->nc.projfd, dir, O_PATH | O_DIRECTORY,
		    0);
		moved = fd != -1 && fstat(fd, &st) == 0 &&
		    snap_nested_changed(&st, w->o->since);
		if (fd != -1)
			close(fd);
	}
	free(dir);
	return moved;
}

/*
 * A link, FIFO, socket or device made in a git dir (or brought into one
 * in a dir moved there): git on the host would write its reflogs and
 * refs through a link (into ~/.bashrc, say) and hang on a FIFO. It goes
 * to the quarantine.
 */
static void
snap_plant_special(struct snap_plant_walk *w, const char *rel,
    const struct stat *st)
{
	const char *slash = strrchr(rel, '/');
	char *dir, *to, *q;
	int fd;

	if (S_ISDIR(st->st_mode) || S_ISREG(st->st_mode) ||
	    (S_ISSOCK(st->st_mode) &&
	    strcmp(slash + 1, "fsmonitor--daemon.ipc") == 0) ||
	    (!snap_nested_changed(st, w->o->since) &&
	    !snap_plant_moved_in(w, rel)))
		return;
	dir = xstrndup(rel, (size_t)(slash - rel));
	fd = path_open_beneath(w->nc.projfd, dir, O_RDONLY | O_DIRECTORY, 0);
	to = fd != -1 ? snap_nested_keep(&w->nc, fd, slash + 1, true) : NULL;
	q = snap_nested_quote(rel);
	if (to != NULL)
		strv_addf(&w->res->alerts, "%s in a git dir was made a %s in the "
		    "session (git would write or read through it); it was moved "
		    "to %s", q, S_ISLNK(st->st_mode) ? "link" : "FIFO, socket "
		    "or device", to);
	else
		strv_addf(&w->res->alerts, "%s in a git dir was made a %s in the "
		    "session and agentmux could not move it: %s; remove it "
		    "before you run git there", q, S_ISLNK(st->st_mode) ?
		    "link" : "FIFO, socket or device", strerror(errno));
	if (fd != -1)
		close(fd);
	free(q);
	free(to);
	free(dir);
}

/*
 * NAME in DFD, an entry of a git dir's rr-cache made or changed in the
 * session (a dir of preimage, postimage, thisimage): its files kept in
 * the quarantine and taken out, then the dir. 0, or -1 if any stays.
 */
static int
snap_plant_rerere_entry(struct snap_plant_walk *w, int dfd, const char *name)
{
	struct strv names;
	struct dirent *de;
	struct stat st;
	char *to;
	DIR *d;
	size_t i;
	int fd, rc = 0;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == -1)
		return -1;
	if (!S_ISDIR(st.st_mode)) {
		to = snap_nested_keep(&w->nc, dfd, name, true);
		free(to);
		return to != NULL ? 0 : -1;
	}
	if ((fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1 || (d = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		return -1;
	}
	strv_init(&names);
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			strv_add(&names, de->d_name);
	}
	for (i = 0; i < names.n; i++) {
		if ((to = snap_nested_keep(&w->nc, dirfd(d), names.v[i],
		    true)) == NULL)
			rc = -1;
		free(to);
	}
	strv_free(&names);
	closedir(d);
	if (rc == 0 && unlinkat(dfd, name, AT_REMOVEDIR) == -1)
		rc = -1;
	return rc;
}

/*
 * REL, a git dir's rr-cache: what the session recorded there would be
 * replayed by git's rerere at the user's next merge (the conflict
 * resolved the agent's way, said in one line among many), and a new
 * rr-cache turns rerere on. The jail keeps one that existed read-only;
 * entries made or changed in the session go to the quarantine, and a
 * rr-cache made in it goes too.
 */
static void
snap_plant_rerere(struct snap_plant_walk *w, const char *rel,
    const struct stat *st)
{
	struct strv names;
	struct dirent *de;
	struct stat est;
	char *q, *parent;
	size_t i, moved = 0, left = 0;
	bool gone = false;
	int fd, pfd;
	DIR *d;

	if ((fd = path_open_beneath(w->nc.projfd, rel, O_RDONLY | O_DIRECTORY,
	    0)) == -1 || (d = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		return;
	}
	strv_init(&names);
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") !=
		    0 && fstatat(dirfd(d), de->d_name, &est,
		    AT_SYMLINK_NOFOLLOW) == 0 && snap_nested_changed(&est,
		    w->o->since))
			strv_add(&names, de->d_name);
	}
	for (i = 0; i < names.n; i++) {
		if (snap_plant_rerere_entry(w, dirfd(d), names.v[i]) == 0)
			moved++;
		else
			left++;
	}
	strv_free(&names);
	closedir(d);
	/* Made in the session and now empty: gone, so that rerere stays off. */
	parent = xstrndup(rel, (size_t)(strrchr(rel, '/') - rel));
	if (snap_nested_changed(st, w->o->since) && (pfd =
	    path_open_beneath(w->nc.projfd, parent, O_RDONLY | O_DIRECTORY,
	    0)) != -1) {
		gone = unlinkat(pfd, "rr-cache", AT_REMOVEDIR) == 0;
		close(pfd);
	}
	free(parent);
	if (moved == 0 && left == 0 && !gone)
		return;
	q = snap_nested_quote(rel);
	if (left == 0)
		strv_addf(&w->res->alerts, "%s (git's rerere cache) was made or "
		    "changed in the session: your next merge would replay the "
		    "conflict resolutions it recorded without asking; they were "
		    "moved to %s", q, w->nc.quarantine);
	else
		strv_addf(&w->res->alerts, "%s (git's rerere cache) was made or "
		    "changed in the session: your next merge would replay the "
		    "conflict resolutions it recorded without asking, and "
		    "agentmux could not move %zu of them; remove %s (rm -rf) "
		    "before you merge", q, left, q);
	free(q);
}

/*
 * Inside a git dir: module git dirs defused, links moved out. Object
 * stores are walked too: "any file named HEAD beside it" is all a skip
 * could go by, and a link out of the project planted there would go
 * untold (git reads a loose object or a pack through a link, and the
 * user's tools follow it as well). The git dirs agentmux keeps (their
 * objects/ an overlay whose writes come back checked) hold few loose
 * objects; they count towards [jail] scan_limit as any file does.
 */
static void
snap_plant_in_gitdir(struct snap_plant_walk *w, struct snap_walk_ent *e,
    const char *rel)
{
	char *parent, *repo;

	if (e->info != SNAP_WALK_D) {
		snap_plant_special(w, rel, &e->st);
		return;
	}
	parent = xstrndup(rel, (size_t)(strrchr(rel, '/') - rel));
	if (strcmp(e->name, "rr-cache") == 0 &&
	    snap_plant_is_gitdir(w, parent)) {
		snap_plant_rerere(w, rel, &e->st);
		e->skip = true;
	}
	else if (strncmp(rel, ".git/modules/", 13) == 0 &&
	    snap_plant_is_gitdir(w, rel)) {
		/* However it got there: renamed, copied or made in the session. */
		repo = xprintf("%s (a submodule's git dir)", e->path);
		snap_nested_gitdir(&w->nc, repo, rel);
		free(repo);
	}
	free(parent);
}

/*
 * True if the link REL to TARGET is a venv's interpreter: in a dir "bin"
 * beside a regular file pyvenv.cfg (what python -m venv, virtualenv and
 * tox make), to a system python. Every venv has one (bin/python ->
 * /usr/bin/python3); flagging it in red hid the real links out among
 * false alarms. Nothing on the way is followed.
 */
static bool
snap_plant_venv_python(struct snap_plant_walk *w, const char *rel,
    const char *target)
{
	static const char *const pythons[] = {
		"/usr/bin/python*", "/usr/local/bin/python*",
	};
	const char *slash = strrchr(rel, '/');
	struct stat st;
	char *dir, *cfg;
	size_t i, n;
	int fd;

	if (slash == NULL)
		return false;
	dir = xstrndup(rel, (size_t)(slash - rel));
	n = strlen(dir);
	if (n < 3 || strcmp(dir + n - 3, "bin") != 0 || (n > 3 &&
	    dir[n - 4] != '/')) {
		free(dir);
		return false;
	}
	cfg = n == 3 ? xstrdup("pyvenv.cfg") : xprintf("%.*s/pyvenv.cfg",
	    (int)(n - 4), dir);
	free(dir);
	fd = path_open_beneath(w->nc.projfd, cfg, O_PATH, 0);
	free(cfg);
	if (fd == -1)
		return false;
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		close(fd);
		return false;
	}
	close(fd);
	for (i = 0; i < nitems(pythons); i++) {
		if (fnmatch(pythons[i], target, FNM_PATHNAME) == 0)
			return true;
	}
	return false;
}

/* A venv's interpreter link made in the session: said plainly, not flagged. */
static void
snap_plant_venv_told(struct snap_plant_walk *w, const char *rel,
    const char *target)
{
	char *q, *qt;

	if (++w->venv_links > SNAP_PLANT_MAX_LINKS_OUT)
		return;
	q = snap_nested_quote(rel);
	qt = snap_nested_quote(target);
	strv_addf(&w->res->notes, "%s is a link made in the session to the "
	    "system interpreter %s, as every Python venv has one (pyvenv.cfg "
	    "is beside its bin dir); not flagged", q, qt);
	free(qt);
	free(q);
}

/*
 * A link the session made or changed (ctime: the jail cannot set it back)
 * that leads out of the project: agentmux never follows it, but the
 * user's editor, build or shell would, and read or write where it points
 * (the session's copy of a config dir, the user's home). Told, with its
 * target as written, never followed: the rest of the way is read
 * component by component and only links there before are resolved.
 */
static void
snap_plant_link_out(struct snap_plant_walk *w, const char *rel,
    const struct stat *st)
{
	char target[PATH_MAX], *path, *link, *q, *qt;
	const char *slash = strrchr(rel, '/');
	enum snap_plant_where where;
	ssize_t n;

	if (!snap_nested_changed(st, w->o->since) ||
	    (n = readlinkat(w->nc.projfd, rel, target, sizeof target - 1)) <= 0)
		return;
	target[n] = '\0';
	path = target[0] == '/' || slash == NULL ? xstrdup(target) :
	    xprintf("%.*s/%s", (int)(slash - rel), rel, target);
	/* A link of the session's on the way is told where it is met. */
	where = snap_plant_where(w->o->project, w->nc.projfd, path,
	    w->o->since, &link);
	free(link);
	free(path);
	if (where != SNAP_PLANT_OUT)
		return;
	if (snap_plant_venv_python(w, rel, target)) {
		snap_plant_venv_told(w, rel, target);
		return;
	}
	if (++w->links_out > SNAP_PLANT_MAX_LINKS_OUT)
		return;
	q = snap_nested_quote(rel);
	qt = snap_nested_quote(target);
	strv_addf(&w->res->alerts, "%s is a link made or changed in the session "
	    "that leads out of the project, to %s; agentmux did not follow it, "
	    "but your editor, build or shell would read and write there: "
	    "remove it unless you asked for it", q, qt);
	free(qt);
	free(q);
}

static void
snap_plant_more_links(struct snap_plant_walk *w)
{
	char *q = snap_nested_quote(w->o->project);

	strv_addf(&w->res->alerts, "and %zu more links made or changed in the "
	    "session lead out of the project; list them with find %s -type l",
	    w->links_out - SNAP_PLANT_MAX_LINKS_OUT, q);
	free(q);
}

/*
 * A dir's carry: whether the session changed it ('c', else '-'), then the
 * git dir of another name it lies in, then the dir the session moved
 * that it is or lies in, each NUL-terminated (empty: none); NULL if none
 * of them.
 */
static char *
snap_plant_carry(bool changed, const char *inside, const char *moved)
{
	size_t a, b;
	char *c;

	if (!changed && inside == NULL && moved == NULL)
		return NULL;
	a = inside != NULL ? strlen(inside) : 0;
	b = moved != NULL ? strlen(moved) : 0;
	c = xmalloc(a + b + 3);
	c[0] = changed ? 'c' : '-';
	memcpy(c + 1, inside != NULL ? inside : "", a + 1);
	memcpy(c + a + 2, moved != NULL ? moved : "", b + 1);
	return c;
}

/*
 * Whether the dir REL (its lstat ST) was moved or made there in the
 * session: changed (a rename changes its ctime) and not the dir that was
 * there at the start, as the start's walk found it (review 16: by times
 * alone, every file a tool runs in a monorepo was told whenever a file
 * was added beside it); where the start's walk did not look, changed in
 * a dir that changed too (PARENT_CHANGED: a rename changes both).
 */
static bool
snap_plant_dir_moved(const struct snap_plant_opts *o, const char *rel,
    const struct stat *st, bool parent_changed)
{
	if (!snap_nested_changed(st, o->since))
		return false;
	switch (snap_dirmap_same(o->dirs, rel, st)) {
	case 1:
		return false;
	case 0:
		return true;
	default:
		return parent_changed;
	}
}

/*
 * The dir the session moved that the dir E is or lies in, for what it
 * holds; none in a git dir (git's own files, looked at by what they are;
 * git changes its dirs all the time).
 */
static const char *
snap_plant_carry_moved(struct snap_plant_walk *w, struct snap_walk_ent *e)
{
	if (strcmp(e->name, ".git") == 0 || snap_plant_gitpath(w, e->rel))
		return NULL;
	if (w->moved != NULL)
		return w->moved;
	return snap_plant_dir_moved(w->o, e->rel, &e->st, w->dir_changed) ?
	    e->rel : NULL;
}

/* A dir of the walk is read: its CARRY (snap_plant_carry's). */
static void
snap_plant_dir_read(void *arg, const char *carry)
{
	struct snap_plant_walk *w = arg;
	const char *inside = carry != NULL ? carry + 1 : NULL;
	const char *moved = inside != NULL ? inside + strlen(inside) + 1 :
	    NULL;

	free(w->inside);
	free(w->moved);
	/* The top's own change is known before the walk (snap_plant_scan_in). */
	if (carry != NULL || !w->at_top)
		w->dir_changed = carry != NULL && carry[0] == 'c';
	w->at_top = false;
	w->inside = inside != NULL && *inside != '\0' ? xstrdup(inside) :
	    NULL;
	w->moved = moved != NULL && *moved != '\0' ? xstrdup(moved) : NULL;
}

/* Tests only: called with each entry the walk looks at (relative), before it is looked at. */
AM_TESTABLE void (*snap_plant_entry_walked)(const char *rel);

/* One entry of the walk. */
static void
snap_plant_entry(void *arg, struct snap_walk_ent *e)
{
	struct snap_plant_walk *w = arg;
	const char *rel = e->rel;
	bool own = e->level == 1 && w->o->had_git, gitdir;

	if (snap_plant_entry_walked != NULL)
		snap_plant_entry_walked(rel);

	/* Left the git dir of another name: a sibling of it comes next. */
	if (w->inside != NULL && !snap_plant_under(w->inside, rel)) {
		free(w->inside);
		w->inside = NULL;
	}
	/* A repository of the session's making, nested or at the top. */
	if (strcmp(e->name, ".git") == 0 && !own)
		snap_nested_dotgit(&w->nc, rel);
	else if (strcmp(e->name, ".git") == 0)
		snap_nested_own_dotgit(&w->nc, rel);
	if (e->info != SNAP_WALK_DNR && snap_plant_gitpath(w, rel))
		snap_plant_in_gitdir(w, e, rel);
	/* After: a submodule's git dir is named as one. Unreadable ones too. */
	gitdir = (e->info == SNAP_WALK_D || e->info == SNAP_WALK_DNR) &&
	    snap_plant_other_gitdir(w, e, rel);
	/*
	 * Any other dir it cannot read (a git dir of another name is opened
	 * up above), in a git dir too (review 16: a reflog dir made 0111
	 * hid a link the host's git commit then wrote through).
	 */
	if (e->info == SNAP_WALK_DNR && !gitdir)
		snap_plant_unreadable(w, e, rel);
	else if (e->info == SNAP_WALK_SL && strcmp(e->name, ".git") != 0 &&
	    !snap_plant_gitpath(w, rel))
		snap_plant_link_out(w, rel, &e->st);
	snap_plant_setid(w, rel, &e->st);
	/* Looked at by name already (snap_plant_direct): once. */
	if (snap_nested_changed(&e->st, w->o->since) ? !strv_contains(&w->direct,
	    rel) : w->moved != NULL && !S_ISDIR(e->st.st_mode) &&
	    !strv_contains(&w->direct, rel))
		snap_plant_watch_in(w->o, w->res, w->nc.projfd, rel, &e->st,
		    w->moved);
	/*
	 * What lies in it is read later: it carries the git dir it is in,
	 * and the dir the session changed that it is or lies in.
	 */
	if (e->info == SNAP_WALK_D)
		e->carry = snap_plant_carry(snap_nested_changed(&e->st,
		    w->o->since), w->inside != NULL && (strcmp(w->inside, rel) ==
		    0 || snap_plant_under(w->inside, rel)) ? w->inside : NULL,
		    snap_plant_carry_moved(w, e));
}

static void
snap_plant_too_many(struct snap_plant_walk *w, int64_t limit)
{
	char *q;

	w->res->partial = true;
	q = snap_nested_quote(w->o->project);
	strv_addf(&w->res->notes, "%s holds more than %lld files and dirs "
	    "([jail] scan_limit): this session's end-of-session check for "
	    "planted git dirs, set-uid files and links out of the project "
	    "looked at the first %lld only, so what the session left past "
	    "them is not checked (the files your tools run, protected, were "
	    "looked at by name first); look before you run git there (find "
	    "%s -name HEAD -o -perm /6000 -o -type l), or raise the limit",
	    q, (long long)limit, (long long)limit, q);
	free(q);
}

static void snap_plant_direct(struct snap_plant_walk *);

/* With the clone gate held (O->gated): let go now and then, so a clone waits little. */
static void
snap_plant_gate_breathe(struct snap_plant_walk *w)
{
	if (w->o->gated && ++w->entries % SNAP_PLANT_GATE_EVERY == 0) {
		clone_gate_leave();
		clone_gate_enter();
	}
}

/* One entry of the walk, then a breath of the clone gate (snap_walk allocates nothing meanwhile). */
static void
snap_plant_entry_gated(void *arg, struct snap_walk_ent *e)
{
	snap_plant_entry(arg, e);
	snap_plant_gate_breathe(arg);
}

static int snap_plant_scan_in(const struct snap_plant_opts *,
    struct snap_plant_result *, char **);

int
snap_plant_scan(const struct snap_plant_opts *o,
    struct snap_plant_result *res, char **cause)
{
	int rc;

	if (o->gated)
		clone_gate_enter();
	rc = snap_plant_scan_in(o, res, cause);
	if (o->gated)
		clone_gate_leave();
	return rc;
}

static int
snap_plant_scan_in(const struct snap_plant_opts *o,
    struct snap_plant_result *res, char **cause)
{
	int64_t limit = o->max_entries > 0 ? o->max_entries :
	    CONFIG_SCAN_LIMIT;
	struct snap_plant_walk w;
	struct stat st;

	memset(&w, 0, sizeof w);
	w.o = o;
	w.res = res;
	w.nc.project = o->project;
	w.nc.since = o->since;
	w.nc.quarantine = o->quarantine;
	w.nc.messages = &res->alerts;
	w.nc.own_git = o->had_git;
	w.nc.ids = o->gitids;
	w.nc.nids = o->ngitids;
	w.nc.ids_known = o->gitids_known;
	w.nc.ids_index = o->gitids_index;
	strv_init(&w.nc.done);
	strv_init(&w.direct);
	w.nc.projfd = open(o->project, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (w.nc.projfd == -1) {
		*cause = xprintf("cannot read %s: %s", o->project,
		    strerror(errno));
		strv_free(&w.nc.done);
		return -1;
	}
	snap_plant_direct(&w);
	w.at_top = true;
	w.dir_changed = fstat(w.nc.projfd, &st) == 0 &&
	    snap_nested_changed(&st, o->since);
	/* The project itself made a repository (where it had no .git). */
	if (snap_plant_repo_dir(&w, "."))
		snap_nested_gitdir(&w.nc, o->project, ".");
	if (snap_walk(o->project, w.nc.projfd, (size_t)limit,
	    snap_plant_dir_read, snap_plant_entry_gated, &w) == 1)
		snap_plant_too_many(&w, limit);
	snap_plant_close_up(&w);
	if (w.links_out > SNAP_PLANT_MAX_LINKS_OUT)
		snap_plant_more_links(&w);
	if (res->unreadable > SNAP_PLANT_MAX_TOLD)
		strv_addf(&res->alerts, "and %zu more dirs were made unreadable "
		    "in the session; agentmux gave their owner read, write and "
		    "search on them back", res->unreadable -
		    SNAP_PLANT_MAX_TOLD);
	if (res->moved > SNAP_PLANT_MAX_TOLD)
		strv_addf(&res->watched, "and %zu more files your tools run "
		    "lie in dirs the session made or moved there: read them "
		    "before you use them", res->moved - SNAP_PLANT_MAX_TOLD);
	/* Past the limit, and the watched paths too many to look at by name first. */
	if (res->partial && w.direct_cut)
		strv_addf(&res->alerts, "the files your tools run were too "
		    "many to look at by name before the walk stopped at [jail] "
		    "scan_limit: a change to one past the limit may be untold; "
		    "raise the limit, or look at them yourself");
	free(w.inside);
	free(w.moved);
	snap_plant_watch_gone(o, res, w.nc.projfd);
	snap_plant_seq_left(o, res, w.nc.projfd);
	close(w.nc.projfd);
	strv_free(&w.nc.done);
	strv_free(&w.direct);
	return 0;
}

/* ---- files the user's own tools run ---- */

/* What runs a watched file, for the message; NULL: a pattern of the user's. */
static const char *const snap_plant_tools[][2] = {
	{ "**/.envrc", "direnv runs it in your shell" },
	{ ".vscode/tasks.json", "VS Code runs its tasks" },
	{ ".vscode/launch.json", "VS Code runs its launch configurations" },
	{ ".vscode/settings.json", "VS Code obeys it (terminal, tool and "
	    "interpreter paths)" },
	{ ".mcp.json", "MCP clients start the servers it names" },
	{ ".claude/settings*.json", "Claude Code runs its hooks" },
	{ ".devcontainer", "Dev Containers build and run it" },
	{ ".idea/runConfigurations", "JetBrains IDEs run its configurations" },
	{ ".idea/workspace.xml", "JetBrains IDEs run its configurations" },
	{ "**/.gitattributes", "git runs the filter or driver it names" },
	{ ".git/info/attributes", "git runs the filter or driver it names" },
	{ ".githooks", "git runs its hooks where core.hooksPath names it" },
	{ ".husky", "git runs its hooks (husky sets core.hooksPath)" },
	{ ".pre-commit-config.yaml", "pre-commit runs its local hooks at "
	    "each commit" },
	{ ".tool-versions", "asdf and mise install and run what it names" },
	{ ".mise.toml", "mise runs its tasks and hooks" },
	{ "mise.toml", "mise runs its tasks and hooks" },
	{ "*.code-workspace", "VS Code runs its tasks and obeys its settings" },
	{ ".cargo/config.toml", "cargo runs the wrappers and runners it "
	    "names" },
	{ ".cargo/config", "cargo runs the wrappers and runners it names" },
	{ ".yarnrc.yml", "yarn runs the yarnPath it names" },
	{ ".yarnrc", "yarn runs the yarn-path it names" },
	{ ".npmrc", "npm obeys it (node-options, script-shell)" },
	{ ".mvn/jvm.config", "Maven passes its options to the JVM" },
	{ ".mvn/maven.config", "Maven obeys its options" },
	{ ".gemini/settings.json", "Gemini CLI starts the MCP servers and "
	    "runs the hooks it names" },
	{ ".qwen/settings.json", "Qwen Code starts the MCP servers it names" },
	{ "opencode.json", "opencode starts the MCP servers and runs the "
	    "commands it names" },
	{ ".opencode", "opencode loads its plugins, agents and commands" },
	{ ".crush.json", "Crush starts the MCP servers it names" },
	{ ".cursor/mcp.json", "Cursor starts the MCP servers it names" },
	{ ".vscode/mcp.json", "VS Code starts the MCP servers it names" },
	{ ".claude/hooks", "Claude Code runs the hook scripts its settings "
	    "name" },
	{ ".devcontainer.json", "Dev Containers run its initializeCommand on "
	    "your machine" },
	{ ".run", "JetBrains IDEs run its configurations" },
	{ "lefthook.yml", "lefthook runs its commands at each commit" },
	{ ".lefthook.yml", "lefthook runs its commands at each commit" },
	{ "lefthook-local.yml", "lefthook runs its commands at each commit" },
	{ ".zed", "Zed runs its tasks and language servers" },
	{ ".helix/languages.toml", "Helix starts the language servers it "
	    "names" },
	{ ".codex/config.toml", "Codex CLI starts the MCP servers it names" },
	{ ".cursor/hooks.json", "Cursor runs the hooks it names" },
	{ ".kiro/settings/mcp.json", "Kiro starts the MCP servers it names" },
	{ ".roo/mcp.json", "Roo Code starts the MCP servers it names" },
	{ "rust-toolchain.toml", "rustup runs the toolchain its path names" },
	{ "rust-toolchain", "rustup runs the toolchain its path names" },
};

/* Watched at any depth, whatever [jail] protect says. */
static const char *const snap_plant_always[] = {
	"**/.envrc", "**/.gitattributes", ".git/info/attributes",
};


/* PATTERN matches S, or a dir S lies in (".devcontainer" covers its files). */
static bool
snap_plant_match_here(const char *pattern, const char *s)
{
	char *copy;
	size_t i;
	bool m = false;

	if (fnmatch(pattern, s, FNM_PATHNAME) == 0)
		return true;
	copy = xstrdup(s);
	for (i = strlen(copy); i > 0 && !m; i--) {
		if (copy[i] != '/')
			continue;
		copy[i] = '\0';
		m = fnmatch(pattern, copy, FNM_PATHNAME) == 0;
	}
	free(copy);
	return m;
}

bool
snap_plant_match(const char *pattern, const char *rel)
{
	const char *s;

	if (strncmp(pattern, "**/", 3) != 0)
		return snap_plant_match_here(pattern, rel);
	for (s = rel; s != NULL; s = strchr(s, '/'), s = s != NULL ? s + 1 :
	    NULL) {
		if (snap_plant_match_here(pattern + 3, s))
			return true;
	}
	return false;
}

/*
 * PATTERN matches REL where the list puts it, or one dir down or deeper:
 * app/.vscode/tasks.json runs as .vscode/tasks.json does when the user
 * opens app. Paths in .git stay where they are.
 */
static bool
snap_plant_match_deep(const char *pattern, const char *rel)
{
	const char *s;

	if (snap_plant_match(pattern, rel))
		return true;
	if (strncmp(pattern, "**/", 3) == 0 ||
	    strncmp(pattern, ".git/", 5) == 0 || strcmp(pattern, ".git") == 0)
		return false;
	for (s = strchr(rel, '/'); s != NULL; s = strchr(s + 1, '/')) {
		if (snap_plant_match_here(pattern, s + 1))
			return true;
	}
	return false;
}

/* The first watched pattern REL falls under, or NULL. */
static const char *
snap_plant_watched(const struct snap_plant_opts *o, const char *rel)
{
	size_t i;

	for (i = 0; i < nitems(snap_plant_always); i++) {
		if (snap_plant_match(snap_plant_always[i], rel))
			return snap_plant_always[i];
	}
	for (i = 0; i < o->nwatch; i++) {
		if (snap_plant_match_deep(o->watch[i], rel))
			return o->watch[i];
	}
	if (o->hooks != NULL && snap_plant_match(o->hooks, rel))
		return o->hooks;
	for (i = 0; i < o->ngitfiles; i++) {
		if (snap_plant_match(o->gitfiles[i], rel))
			return o->gitfiles[i];
	}
	return NULL;
}

static const char *
snap_plant_tool(const struct snap_plant_opts *o, const char *rel)
{
	size_t i;

	if (o->hooks != NULL && snap_plant_match(o->hooks, rel))
		return "git runs its hooks: your core.hooksPath names it";
	for (i = 0; i < o->ngitfiles; i++) {
		if (snap_plant_match(o->gitfiles[i], rel))
			return "git runs or reads it: a link in a hooks dir, "
			    "a core.hooksPath or an include of a git config "
			    "leads to it, or it is your git config";
	}
	for (i = 0; i < nitems(snap_plant_tools); i++) {
		if (snap_plant_match_deep(snap_plant_tools[i][0], rel))
			return snap_plant_tools[i][1];
	}
	return "you marked it with [jail] protect";
}

/* A byte of an attribute's name, as git's attr.c takes them: another attribute if one comes before "filter=". */
static bool
snap_plant_attr_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
}

/*
 * True if attributes text REL names a driver: filter=, diff= or merge=
 * with a value, after anything git may take as its start (found 2026-12-07:
 * a quoted pattern needs no blank before it, "*"filter=x, and git's blanks
 * include \r: only a space or a tab was looked for). What is not an
 * attribute's name byte counts, a few false alarms rather than a miss.
 */
static bool
snap_plant_names_driver(int projfd, const char *rel)
{
	static const char *const attrs[] = { "filter=", "diff=", "merge=" };
	struct buf b;
	struct stat st;
	const char *p, *end;
	size_t i, len;
	bool named = false;
	int fd;

	if ((fd = path_open_beneath(projfd, rel, O_RDONLY | O_NONBLOCK,
	    0)) == -1)
		return false;
	buf_init(&b);
	/* git reads attributes files up to 100 MB: one larger is told unread. */
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    st.st_size > SNAP_PLANT_ATTRS_MAX)
		named = true;
	else if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    buf_read_fd(&b, fd) == 0 && b.data != NULL) {
		/* The whole of it: a NUL ends a line for git, not the file (review 16). */
		end = b.data + b.len;
		for (i = 0; i < nitems(attrs) && !named; i++) {
			len = strlen(attrs[i]);
			for (p = b.data; !named && (p = memmem(p, (size_t)(end -
			    p), attrs[i], len)) != NULL; p++)
				named = p == b.data ||
				    !snap_plant_attr_char(p[-1]);
		}
	}
	buf_free(&b);
	close(fd);
	return named;
}

static bool
snap_plant_attributes(const char *rel)
{
	const char *base = strrchr(rel, '/') != NULL ? strrchr(rel, '/') + 1 :
	    rel;

	return strcmp(base, ".gitattributes") == 0 ||
	    strcmp(rel, ".git/info/attributes") == 0;
}

/*
 * REL is a leading dir of PATTERN where the list puts it or deeper
 * (".vscode" or "app/.vscode" for .vscode/tasks.json): a link there
 * leads every tool to what the session put behind it.
 */
static bool
snap_plant_lead_of(const char *pattern, const char *rel)
{
	const char *base = pattern, *slash, *s;
	bool git = strncmp(pattern, ".git/", 5) == 0, any = false;
	char *prefix;
	bool m = false;

	if (strncmp(base, "**/", 3) == 0) {
		base += 3;
		any = true;
	}
	for (slash = strchr(base, '/'); slash != NULL && !m;
	    slash = strchr(slash + 1, '/')) {
		prefix = xstrndup(base, (size_t)(slash - base));
		m = fnmatch(prefix, rel, FNM_PATHNAME) == 0;
		for (s = strchr(rel, '/'); s != NULL && !m && (any || !git);
		    s = strchr(s + 1, '/'))
			m = fnmatch(prefix, s + 1, FNM_PATHNAME) == 0;
		free(prefix);
	}
	return m;
}

/* The watched pattern link REL is, lies in or leads to, or NULL. */
static const char *
snap_plant_link_watched(const struct snap_plant_opts *o, const char *rel)
{
	const char *pattern;
	size_t i;

	if ((pattern = snap_plant_watched(o, rel)) != NULL)
		return pattern;
	for (i = 0; i < nitems(snap_plant_always); i++) {
		if (snap_plant_lead_of(snap_plant_always[i], rel))
			return snap_plant_always[i];
	}
	for (i = 0; i < o->nwatch; i++) {
		if (snap_plant_lead_of(o->watch[i], rel))
			return o->watch[i];
	}
	if (o->hooks != NULL && snap_plant_lead_of(o->hooks, rel))
		return o->hooks;
	return NULL;
}

/*
 * A link the session made or changed where a protected file or a dir on
 * its way is (".vscode" -> cfg): the user's tools read what it leads to.
 * Told with its target as written, never followed.
 */
static void
snap_plant_watch_link(const struct snap_plant_opts *o,
    struct snap_plant_result *res, int projfd, const char *rel)
{
	char target[PATH_MAX], *q, *qt, *qp;
	const char *pattern;
	ssize_t n;

	if ((pattern = snap_plant_link_watched(o, rel)) == NULL)
		return;
	if ((n = readlinkat(projfd, rel, target, sizeof target - 1)) < 0)
		n = 0;
	target[n] = '\0';
	q = snap_nested_quote(rel);
	qt = snap_nested_quote(target);
	qp = snap_nested_quote(pattern);
	strv_addf(&res->watched, "%s changed in the session: a link, to %s, "
	    "where the protected %s is or lies (%s); agentmux did not follow "
	    "it: read what it leads to before you use it, or remove it",
	    q, qt, qp, snap_plant_tool(o, pattern));
	free(qp);
	free(qt);
	free(q);
}

/* True if REL is, or lies in, a protected path that existed at the start (bound read-only). */
static bool
snap_plant_existed(const struct snap_plant_opts *o, const char *rel)
{
	size_t i;

	for (i = 0; i < o->nexisted; i++) {
		if (strcmp(o->existed[i], rel) == 0 ||
		    snap_plant_under(o->existed[i], rel))
			return true;
	}
	return false;
}

/*
 * The dir REL lies in that changed in the session (its ctime), nearest
 * the top; NULL if none. A dir moved into place changes its own ctime,
 * never that of what it holds: a watched file made in an earlier session
 * (or by anyone) beneath it keeps its old time (found 2026-12-07: a dir
 * of hooks made in one session and renamed to the core.hooksPath dir in
 * the next, a staged .claude dir moved to the top, were never told).
 */
static char *
snap_plant_moved_dir(const struct snap_plant_opts *o, int projfd,
    const char *rel)
{
	const char *slash;
	struct stat st;
	char *dir;
	bool parent;
	int fd;

	/* A dir moved there: changed, in a dir that changed too (the top's first). */
	parent = fstat(projfd, &st) == 0 && snap_nested_changed(&st, o->since);
	for (slash = strchr(rel, '/'); slash != NULL;
	    slash = strchr(slash + 1, '/')) {
		dir = xstrndup(rel, (size_t)(slash - rel));
		if ((fd = path_open_beneath(projfd, dir, O_PATH | O_NOFOLLOW,
		    0)) != -1) {
			if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) &&
			    snap_plant_dir_moved(o, dir, &st, parent)) {
				close(fd);
				return dir;
			}
			parent = fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) &&
			    snap_nested_changed(&st, o->since);
			close(fd);
		} else
			parent = false;
		free(dir);
	}
	return NULL;
}

/* A watched file REL of old times in DIR, a dir the session changed: told, as it may have been moved in with it. */
static void
snap_plant_watch_moved(const struct snap_plant_opts *o,
    struct snap_plant_result *res, int projfd, const char *rel,
    const char *dir)
{
	char *q, *qd;

	if (snap_plant_watched(o, rel) == NULL || snap_plant_existed(o, rel))
		return;
	if (snap_plant_attributes(rel) && !snap_plant_names_driver(projfd,
	    rel))
		return;
	/* The first few told, the rest counted (a flood would hide the one that matters). */
	if (++res->moved > SNAP_PLANT_MAX_TOLD)
		return;
	q = snap_nested_quote(rel);
	qd = snap_nested_quote(dir);
	strv_addf(&res->watched, "%s lies in %s, which the session made or "
	    "moved there: its own old times prove nothing (%s); read it before "
	    "you use it", q, qd, snap_plant_tool(o, rel));
	free(qd);
	free(q);
}

/* REL looked at by name: the dir it lies in that the session changed is looked for on the way. */
static void
snap_plant_watch(const struct snap_plant_opts *o,
    struct snap_plant_result *res, int projfd, const char *rel,
    const struct stat *st)
{
	char *dir;

	if (S_ISDIR(st->st_mode))
		return;
	if (snap_nested_changed(st, o->since)) {
		snap_plant_watch_in(o, res, projfd, rel, st, NULL);
		return;
	}
	if ((dir = snap_plant_moved_dir(o, projfd, rel)) != NULL) {
		snap_plant_watch_in(o, res, projfd, rel, st, dir);
		free(dir);
	}
}

/* REL with its lstat ST, in MOVED (a dir the session changed), if not NULL. */
static void
snap_plant_watch_in(const struct snap_plant_opts *o,
    struct snap_plant_result *res, int projfd, const char *rel,
    const struct stat *st, const char *moved)
{
	char *q;

	if (S_ISDIR(st->st_mode))
		return;
	if (!snap_nested_changed(st, o->since)) {
		if (moved != NULL)
			snap_plant_watch_moved(o, res, projfd, rel, moved);
		return;
	}
	if (S_ISLNK(st->st_mode)) {
		snap_plant_watch_link(o, res, projfd, rel);
		return;
	}
	if (snap_plant_watched(o, rel) == NULL)
		return;
	if (snap_plant_attributes(rel) && !snap_plant_names_driver(projfd, rel))
		return;
	q = snap_nested_quote(rel);
	strv_addf(&res->watched, "%s changed in the session (%s); read it "
	    "before you use it", q, snap_plant_tool(o, rel));
	free(q);
}

/* Watched files that were there at the start and are gone. */
static void
snap_plant_watch_gone(const struct snap_plant_opts *o,
    struct snap_plant_result *res, int projfd)
{
	size_t i;
	char *q;
	int fd;

	for (i = 0; i < o->nexisted; i++) {
		if ((fd = path_open_beneath(projfd, o->existed[i], O_PATH,
		    0)) != -1) {
			close(fd);
			continue;
		}
		if (errno != ENOENT)
			continue;
		q = snap_nested_quote(o->existed[i]);
		strv_addf(&res->watched, "%s was deleted in the session (%s)",
		    q, snap_plant_tool(o, o->existed[i]));
		free(q);
	}
}

/* Adds to OUT each path DIR/REST matches under the project (no link followed). */
static void
snap_plant_expand(int projfd, const char *dir, const char *rest,
    struct strv *out)
{
	const char *slash = strchr(rest, '/');
	char *comp = slash != NULL ? xstrndup(rest, (size_t)(slash - rest)) :
	    xstrdup(rest), *path;
	struct dirent *de;
	DIR *d;
	int fd;

	fd = dir[0] != '\0' ? path_open_beneath(projfd, dir, O_RDONLY |
	    O_DIRECTORY, 0) : openat(projfd, ".", O_RDONLY |
	    O_DIRECTORY | O_CLOEXEC);
	if (fd == -1 || (d = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		free(comp);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") ==
		    0 || fnmatch(comp, de->d_name, FNM_PERIOD) != 0)
			continue;
		path = dir[0] != '\0' ? xprintf("%s/%s", dir, de->d_name) :
		    xstrdup(de->d_name);
		if (slash != NULL)
			snap_plant_expand(projfd, path, slash + 1, out);
		else if (!strv_contains(out, path))
			strv_add(out, path);
		free(path);
	}
	closedir(d);
	free(comp);
}

/*
 * REL (a path the walk has not reached yet, perhaps): watched, looked at
 * now by name and kept in DIRECT, so that a tree filled past the scan
 * limit cannot hide a change to it. No link followed on the way.
 */
static void
snap_plant_direct_one(struct snap_plant_walk *w, const char *rel)
{
	struct stat st;
	int fd;

	if (w->direct.n >= SNAP_PLANT_DIRECT_MAX) {
		w->direct_cut = true;
		return;
	}
	if (strv_contains(&w->direct, rel))
		return;
	if ((fd = path_open_beneath(w->nc.projfd, rel, O_PATH | O_NOFOLLOW,
	    0)) == -1)
		return;
	if (fstat(fd, &st) == 0) {
		strv_add(&w->direct, rel);
		snap_plant_watch(w->o, w->res, w->nc.projfd, rel, &st);
	}
	close(fd);
}

static void snap_plant_direct_dir(struct snap_plant_walk *, const char *,
    int, size_t *);

/* What a watched dir REL holds, DEPTH dirs down at most, by name. */
static void
snap_plant_direct_dir(struct snap_plant_walk *w, const char *rel, int depth,
    size_t *budget)
{
	struct dirent *de;
	char *sub;
	DIR *d;
	int fd;

	if (depth > 8 || (fd = path_open_beneath(w->nc.projfd, rel,
	    O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0)) == -1)
		return;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		/* Each watched dir its share: one full dir (a plugin's node_modules) leaves the rest theirs (review 16). */
		if (*budget == 0 || w->direct.n >= SNAP_PLANT_DIRECT_MAX) {
			w->direct_cut = true;
			break;
		}
		(*budget)--;
		sub = xprintf("%s/%s", rel, de->d_name);
		snap_plant_direct_one(w, sub);
		if (de->d_type == DT_DIR)
			snap_plant_direct_dir(w, sub, depth + 1, budget);
		free(sub);
	}
	closedir(d);
}

/*
 * PATTERN (a watched one, "**" + "/" taken as the top) expanded under
 * the project by name: each match and each dir on the way to it looked
 * at (a link there is a change too), a matched dir's contents as well.
 */
static void
snap_plant_direct_pattern(struct snap_plant_walk *w, const char *pattern)
{
	struct strv found;
	const char *slash;
	char *prefix;
	size_t i, budget;

	if (strncmp(pattern, "**/", 3) == 0)
		pattern += 3;
	if (*pattern == '\0' || *pattern == '/' || strstr(pattern, "..") !=
	    NULL || strstr(pattern, "**") != NULL)
		return;
	strv_init(&found);
	/* The dirs on the way, as patterns of their own. */
	for (slash = strchr(pattern, '/'); slash != NULL;
	    slash = strchr(slash + 1, '/')) {
		prefix = xstrndup(pattern, (size_t)(slash - pattern));
		snap_plant_expand(w->nc.projfd, "", prefix, &found);
		free(prefix);
	}
	snap_plant_expand(w->nc.projfd, "", pattern, &found);
	for (i = 0; i < found.n; i++) {
		budget = SNAP_PLANT_DIRECT_PER;
		snap_plant_direct_one(w, found.v[i]);
		if (snap_plant_watched(w->o, found.v[i]) != NULL)
			snap_plant_direct_dir(w, found.v[i], 0, &budget);
	}
	strv_free(&found);
}

/*
 * Before the walk: the watched paths near the top (every pattern taken
 * from the project's top) and those there at the start, looked at by
 * name, so that a tree filled past [jail] scan_limit (an ignored dir
 * first in the walk's order) cannot hide a change to them.
 */
static void
snap_plant_direct(struct snap_plant_walk *w)
{
	const struct snap_plant_opts *o = w->o;
	size_t i;

	/* What git runs first, then what was there, then the lists. */
	if (o->hooks != NULL)
		snap_plant_direct_pattern(w, o->hooks);
	for (i = 0; i < o->ngitfiles; i++)
		snap_plant_direct_pattern(w, o->gitfiles[i]);
	for (i = 0; i < o->nexisted; i++)
		snap_plant_direct_one(w, o->existed[i]);
	for (i = 0; i < nitems(snap_plant_always); i++)
		snap_plant_direct_pattern(w, snap_plant_always[i]);
	for (i = 0; i < o->nwatch; i++)
		snap_plant_direct_pattern(w, o->watch[i]);
}

/* True if REL under PROJFD is a regular file or a dir, reached without a link. */
static bool
snap_plant_plain(int projfd, const char *rel)
{
	struct stat st;
	int fd;
	bool plain;

	if ((fd = path_open_beneath(projfd, rel, O_PATH, 0)) == -1)
		return false;
	plain = fstat(fd, &st) == 0 && (S_ISREG(st.st_mode) ||
	    S_ISDIR(st.st_mode));
	close(fd);
	return plain;
}

/*
 * A protected path that is a link (.envrc -> scripts/envrc): the link is
 * not bound (a bind would land on its target), so its target, where it
 * lies in the project and is a regular file or dir, is protected in its
 * place; else the jail could rewrite what the user's tool runs through
 * the link. The link itself is told if the session changes it.
 */
static char *snap_plant_resolve(const char *, int, const char *,
    struct strv *);

static void
snap_plant_existing_link(const char *project, int projfd, const char *rel,
    struct strv *out)
{
	char *real;

	real = snap_plant_resolve(project, projfd, rel, NULL);
	if (real != NULL && snap_plant_plain(projfd, real) &&
	    !strv_contains(out, real))
		strv_add(out, real);
	free(real);
}

void
snap_plant_existing(const char *project, char *const *patterns, size_t n,
    struct strv *out)
{
	struct strv found;
	size_t i, j;
	int projfd;

	if ((projfd = open(project, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return;
	for (i = 0; i < n; i++) {
		if (strncmp(patterns[i], "**/", 3) == 0 ||
		    patterns[i][0] == '/' || strstr(patterns[i], "..") != NULL)
			continue;
		strv_init(&found);
		snap_plant_expand(projfd, "", patterns[i], &found);
		/* Regular files and dirs only: a link could be swapped. */
		for (j = 0; j < found.n; j++) {
			if (snap_plant_plain(projfd, found.v[j]) &&
			    !strv_contains(out, found.v[j]))
				strv_add(out, found.v[j]);
			else
				snap_plant_existing_link(project, projfd,
				    found.v[j], out);
		}
		strv_free(&found);
	}
	close(projfd);
}

/* ---- git sequences left in progress ---- */

/* What git keeps in .git while a sequence is in progress, and what carries it on. */
static const struct {
	const char *name;         /* in .git */
	const char *what;
	const char *cont;         /* the command that carries it on */
	const char *todo;         /* its todo list, whose exec lines run; NULL: none */
} snap_plant_seqs[] = {
	{ "rebase-merge", "a rebase", "git rebase --continue",
	    "rebase-merge/git-rebase-todo" },
	{ "rebase-apply", "a rebase or git am", "git rebase --continue or "
	    "git am --continue", NULL },
	{ "sequencer", "a cherry-pick or revert", "git cherry-pick "
	    "--continue or git revert --continue", "sequencer/todo" },
	{ "MERGE_HEAD", "a merge", "git commit or git merge --continue",
	    NULL },
	{ "CHERRY_PICK_HEAD", "a cherry-pick", "git cherry-pick --continue",
	    NULL },
	{ "REVERT_HEAD", "a revert", "git revert --continue", NULL },
	{ "BISECT_LOG", "a bisect", "git bisect", NULL },
};

bool
snap_plant_seq_named(const char *name, const char **what, const char **cont)
{
	size_t i;

	for (i = 0; i < nitems(snap_plant_seqs); i++) {
		if (strcmp(snap_plant_seqs[i].name, name) == 0) {
			*what = snap_plant_seqs[i].what;
			*cont = snap_plant_seqs[i].cont;
			return true;
		}
	}
	return false;
}

/*
 * Files of a sequence's dir that git reads as options of what it runs at
 * --continue: a merge strategy (git runs git-merge-NAME) and its options,
 * a signing key (gpg or ssh-keygen runs with it), git apply's options
 * (--unsafe-paths --directory=...), the cherry-pick or revert options
 * (strategy, strategy-option, gpg-sign). Git does not change them as it
 * carries a sequence on.
 */
static const struct {
	unsigned seq;             /* in snap_plant_seqs */
	const char *rel;          /* in .git */
} snap_plant_seq_optfiles[] = {
	{ 0, "rebase-merge/strategy" },
	{ 0, "rebase-merge/strategy_opts" },
	{ 0, "rebase-merge/gpg_sign_opt" },
	{ 1, "rebase-apply/strategy" },
	{ 1, "rebase-apply/strategy_opts" },
	{ 1, "rebase-apply/gpg_sign_opt" },
	{ 1, "rebase-apply/apply-opt" },
	{ 2, "sequencer/opts" },
};

/* Exec lines of a todo list shown, at most, and how much of each. */
#define SNAP_PLANT_MAX_EXEC 5
#define SNAP_PLANT_MAX_EXEC_LEN 200

/*
 * The git dir whose sequences count, opened through no link: GITDIR (a
 * worktree's own, from agentmux's record: its sequences are kept there,
 * and its .git file is the agent's), else .git beneath PROJFD; -1 if none.
 */
static int
snap_plant_seq_gitfd(int projfd, const char *gitdir)
{
	if (gitdir != NULL)
		return open(gitdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
	return path_open_beneath(projfd, ".git", O_RDONLY | O_DIRECTORY, 0);
}

/* The git dir of O's sequences, for messages: a worktree's own, else .git. */
static const char *
snap_plant_seq_dir(const struct snap_plant_opts *o)
{
	return o->gitdir != NULL ? o->gitdir : ".git";
}

/* The sequences in progress in the git dir GITFD, as bits. */
static unsigned
snap_plant_seq_at(int gitfd)
{
	unsigned i, bits = 0;
	int fd;

	for (i = 0; gitfd != -1 && i < nitems(snap_plant_seqs); i++) {
		if ((fd = path_open_beneath(gitfd, snap_plant_seqs[i].name,
		    O_PATH, 0)) != -1) {
			bits |= 1U << i;
			close(fd);
		}
	}
	return bits;
}

unsigned
snap_plant_sequences(const char *project, const char *gitdir)
{
	unsigned bits;
	int projfd, gitfd;

	if ((projfd = open(project, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return 0;
	gitfd = snap_plant_seq_gitfd(projfd, gitdir);
	bits = snap_plant_seq_at(gitfd);
	if (gitfd != -1)
		close(gitfd);
	close(projfd);
	return bits;
}

/* The command of a todo line if it is "exec CMD" or "x CMD", else NULL. */
static const char *
snap_plant_exec_line(const char *line)
{
	line += strspn(line, " \t");
	if (strncmp(line, "exec", 4) == 0 && (line[4] == ' ' ||
	    line[4] == '\t'))
		return line + 5 + strspn(line + 5, " \t");
	if (line[0] == 'x' && (line[1] == ' ' || line[1] == '\t'))
		return line + 2 + strspn(line + 2, " \t");
	return NULL;
}

/* Adds to OUT the commands of the exec lines of the todo list REL (in the git dir GITFD), in order. */
static void
snap_plant_exec_cmds(int gitfd, const char *rel, struct strv *out)
{
	struct buf b;
	char *line, *save = NULL;
	const char *cmd;
	int rc;

	buf_init(&b);
	rc = path_read_beneath(gitfd, rel, 1024 * 1024, &b);
	if (rc == -1 || b.data == NULL) {
		buf_free(&b);
		return;
	}
	for (line = strtok_r(b.data, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		if ((cmd = snap_plant_exec_line(line)) != NULL)
			strv_add(out, cmd);
	}
	buf_free(&b);
}

/* Appends to OUT the first few of the N commands V as exec lines, quoted. */
static void
snap_plant_exec_quote(char *const *v, size_t n, struct buf *out)
{
	char *cut, *q;
	size_t i;

	for (i = 0; i < n && i < SNAP_PLANT_MAX_EXEC; i++) {
		cut = xstrndup(v[i], SNAP_PLANT_MAX_EXEC_LEN);
		q = quote_name(cut);
		buf_printf(out, "%sexec %s%s", i == 0 ? "" : "; ", q,
		    strlen(v[i]) > SNAP_PLANT_MAX_EXEC_LEN ? "..." : "");
		free(q);
		free(cut);
	}
	if (n > SNAP_PLANT_MAX_EXEC)
		buf_printf(out, " (and %zu more)", n - SNAP_PLANT_MAX_EXEC);
}

/*
 * The option file N of snap_plant_seq_optfiles as a key of
 * snap_plant_opts.execs ("o REL\nCONTENT": no exec line's key starts
 * so), or NULL if it is not there (or not a regular file).
 */
static char *
snap_plant_optfile(int gitfd, unsigned n)
{
	char *key;
	struct buf b;

	buf_init(&b);
	if (path_read_beneath(gitfd, snap_plant_seq_optfiles[n].rel, 64 * 1024,
	    &b) == -1) {
		buf_free(&b);
		return NULL;
	}
	key = xprintf("o %s\n%s", snap_plant_seq_optfiles[n].rel,
	    b.data != NULL ? b.data : "");
	buf_free(&b);
	return key;
}

/* Adds to OUT the option files of the sequences BITS names, as keys. */
static void
snap_plant_optfiles(int gitfd, unsigned bits, struct strv *out)
{
	unsigned n;
	char *key;

	for (n = 0; n < nitems(snap_plant_seq_optfiles); n++) {
		if (!(bits & (1U << snap_plant_seq_optfiles[n].seq)))
			continue;
		if ((key = snap_plant_optfile(gitfd, n)) != NULL)
			strv_take(out, key);
	}
}

void
snap_plant_seq_execs(const char *project, const char *gitdir,
    struct strv *out)
{
	struct strv cmds;
	unsigned i, bits;
	size_t j;
	int projfd, gitfd;

	if ((projfd = open(project, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return;
	gitfd = snap_plant_seq_gitfd(projfd, gitdir);
	close(projfd);
	if (gitfd == -1)
		return;
	bits = snap_plant_seq_at(gitfd);
	for (i = 0; i < nitems(snap_plant_seqs); i++) {
		if (!(bits & (1U << i)) || snap_plant_seqs[i].todo == NULL)
			continue;
		strv_init(&cmds);
		snap_plant_exec_cmds(gitfd, snap_plant_seqs[i].todo, &cmds);
		for (j = 0; j < cmds.n; j++)
			strv_addf(out, "%u %s", i, cmds.v[j]);
		strv_free(&cmds);
	}
	snap_plant_optfiles(gitfd, bits, out);
	close(gitfd);
}

/* One sequence I left in progress by the session: what the user's git would carry on. */
static void
snap_plant_seq_one(const struct snap_plant_opts *o,
    struct snap_plant_result *res, int gitfd, unsigned i)
{
	const char *gd = snap_plant_seq_dir(o);

	struct strv cmds;
	struct buf ex;

	buf_init(&ex);
	buf_adds(&ex, "");
	strv_init(&cmds);
	if (snap_plant_seqs[i].todo != NULL)
		snap_plant_exec_cmds(gitfd, snap_plant_seqs[i].todo, &cmds);
	snap_plant_exec_quote(cmds.v, cmds.n, &ex);
	if (cmds.n > 0)
		strv_addf(&res->watched, "%s was left in progress in %s/%s; "
		    "its todo runs commands at %s: %s; run it only if you mean "
		    "those, or abort it", snap_plant_seqs[i].what, gd,
		    snap_plant_seqs[i].name, snap_plant_seqs[i].cont, ex.data);
	else
		strv_addf(&res->watched, "%s was left in progress in %s/%s; "
		    "%s carries it on as the session left it: read it first, or "
		    "abort it", snap_plant_seqs[i].what, gd,
		    snap_plant_seqs[i].name, snap_plant_seqs[i].cont);
	strv_free(&cmds);
	buf_free(&ex);
}

/* One exec line of the todo lists at the start, and how many times it was there. */
struct snap_plant_exec {
	const char *key;          /* "N CMD", as snap_plant_seq_execs makes it */
	size_t count;
};

static int
snap_plant_exec_cmp(const void *a, const void *b)
{
	return strcmp(((const struct snap_plant_exec *)a)->key,
	    ((const struct snap_plant_exec *)b)->key);
}

/* O's exec lines at the start, sorted, each once with its count; how many. */
static size_t
snap_plant_exec_counts(const struct snap_plant_opts *o,
    struct snap_plant_exec **out)
{
	struct snap_plant_exec *v;
	size_t i, n = 0;

	v = xcalloc(o->nexecs + 1, sizeof *v);
	for (i = 0; i < o->nexecs; i++)
		v[i].key = o->execs[i];
	qsort(v, o->nexecs, sizeof *v, snap_plant_exec_cmp);
	for (i = 0; i < o->nexecs; i++) {
		if (n > 0 && strcmp(v[n - 1].key, v[i].key) == 0)
			v[n - 1].count++;
		else {
			v[n].key = v[i].key;
			v[n++].count = 1;
		}
	}
	*out = v;
	return n;
}

/*
 * A sequence in progress at the start whose todo gained exec lines: each
 * one there now beyond as many as there were. Lines done (a --continue
 * during the session) or taken out are not the session's planting.
 */
static void
snap_plant_seq_grew(const struct snap_plant_opts *o,
    struct snap_plant_result *res, int gitfd, unsigned i)
{
	struct snap_plant_exec *start, k, *hit;
	struct strv cmds, added;
	struct buf ex;
	size_t j, n = snap_plant_exec_counts(o, &start);

	memset(&k, 0, sizeof k);
	strv_init(&cmds);
	strv_init(&added);
	snap_plant_exec_cmds(gitfd, snap_plant_seqs[i].todo, &cmds);
	for (j = 0; j < cmds.n; j++) {
		k.key = xprintf("%u %s", i, cmds.v[j]);
		hit = bsearch(&k, start, n, sizeof *start, snap_plant_exec_cmp);
		if (hit != NULL && hit->count > 0)
			hit->count--;
		else
			strv_add(&added, cmds.v[j]);
		free((char *)k.key);
	}
	if (added.n > 0) {
		buf_init(&ex);
		snap_plant_exec_quote(added.v, added.n, &ex);
		strv_addf(&res->watched, "%s in progress since before the "
		    "session (%s/%s) had exec lines added to its todo; they "
		    "run at %s: %s; run it only if you mean those, or abort it",
		    snap_plant_seqs[i].what, snap_plant_seq_dir(o),
		    snap_plant_seqs[i].name,
		    snap_plant_seqs[i].cont, ex.data);
		buf_free(&ex);
	}
	strv_free(&added);
	strv_free(&cmds);
	free(start);
}

/* True if KEY (an option file now) was among O's at the start, as it is. */
static bool
snap_plant_optfile_kept(const struct snap_plant_opts *o, const char *key)
{
	size_t i;

	for (i = 0; i < o->nexecs; i++) {
		if (strcmp(o->execs[i], key) == 0)
			return true;
	}
	return false;
}

/*
 * The option files of the sequences in progress now (NOW) that were made
 * or changed in the session: each is told with what it holds, quoted.
 */
static void
snap_plant_seq_opts(const struct snap_plant_opts *o,
    struct snap_plant_result *res, int gitfd, unsigned now)
{
	const char *value;
	char *key, *cut, *q;
	unsigned n, i;

	for (n = 0; n < nitems(snap_plant_seq_optfiles); n++) {
		i = snap_plant_seq_optfiles[n].seq;
		if (!(now & (1U << i)) ||
		    (key = snap_plant_optfile(gitfd, n)) == NULL)
			continue;
		if (snap_plant_optfile_kept(o, key)) {
			free(key);
			continue;
		}
		value = strchr(key, '\n') + 1;
		cut = xstrndup(value, SNAP_PLANT_MAX_EXEC_LEN);
		q = quote_name(cut);
		strv_addf(&res->watched, "%s in %s/%s had %s/%s made or "
		    "changed in the session, which git reads as options of what "
		    "it runs at %s (a merge strategy, its options, a signing "
		    "key, git apply's options): %s%s; run it only if you mean "
		    "that, or abort it", snap_plant_seqs[i].what,
		    snap_plant_seq_dir(o), snap_plant_seqs[i].name,
		    snap_plant_seq_dir(o), snap_plant_seq_optfiles[n].rel,
		    snap_plant_seqs[i].cont, q,
		    strlen(value) > SNAP_PLANT_MAX_EXEC_LEN ? "..." : "");
		free(q);
		free(cut);
		free(key);
	}
}

/*
 * Sequences in progress now that were not at the start, or whose todo
 * gained exec lines, or whose option files were made or changed.
 */
static void
snap_plant_seq_left(const struct snap_plant_opts *o,
    struct snap_plant_result *res, int projfd)
{
	int gitfd = snap_plant_seq_gitfd(projfd, o->gitdir);
	unsigned i, now = snap_plant_seq_at(gitfd);

	for (i = 0; i < nitems(snap_plant_seqs); i++) {
		if (!(now & (1U << i)))
			continue;
		if (!(o->sequences & (1U << i)))
			snap_plant_seq_one(o, res, gitfd, i);
		else if (snap_plant_seqs[i].todo != NULL)
			snap_plant_seq_grew(o, res, gitfd, i);
	}
	snap_plant_seq_opts(o, res, gitfd, now);
	if (gitfd != -1)
		close(gitfd);
}

/* ---- the user's own hooks dir (core.hooksPath) ---- */

/* The project's .git/config, a regular file no larger than 1 MiB, into OUT; -1 if not. */
int
snap_plant_read_config(const char *project, struct buf *out)
{
	struct stat st;
	int projfd, fd, rc = -1;

	if ((projfd = open(project, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return -1;
	fd = path_open_beneath(projfd, ".git/config", O_RDONLY | O_NONBLOCK,
	    0);
	close(projfd);
	if (fd == -1)
		return -1;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    st.st_size <= 1024 * 1024 && buf_read_fd(out, fd) == 0)
		rc = 0;
	close(fd);
	return rc;
}

/* VALUE made relative to PROJECT, "./" and trailing "/" gone; NULL if it leads outside. */
static char *
snap_plant_hooks_rel(const char *project, const char *value)
{
	size_t n = strlen(project);
	char *rel, *c, *save = NULL;
	bool ok = true;

	if (value[0] == '/') {
		if (strncmp(value, project, n) != 0 || value[n] != '/')
			return NULL;
		value += n + 1;
	} else if (value[0] == '~')
		return NULL;
	rel = xstrdup(value);
	for (c = strtok_r(rel, "/", &save); c != NULL && ok;
	    c = strtok_r(NULL, "/", &save))
		ok = strcmp(c, "..") != 0;
	free(rel);
	if (!ok)
		return NULL;
	while (value[0] == '.' && value[1] == '/')
		for (value += 2; *value == '/'; value++)
			;
	rel = xstrdup(value);
	for (n = strlen(rel); n > 0 && rel[n - 1] == '/'; n--)
		rel[n - 1] = '\0';
	if (rel[0] == '\0' || strcmp(rel, ".") == 0) {
		free(rel);
		return NULL;
	}
	return rel;
}

/* REL with fnmatch's special characters escaped: a pattern naming it alone. */
static char *
snap_plant_escape(const char *rel)
{
	struct buf b;

	buf_init(&b);
	for (; *rel != '\0'; rel++) {
		if (strchr("*?[]\\", *rel) != NULL)
			buf_addc(&b, '\\');
		buf_addc(&b, *rel);
	}
	return b.data;
}

/* The first component of *P (slashes before it skipped), *P moved past it; NULL at the end. */
static char *
snap_plant_comp(const char **p)
{
	const char *s = *p, *e;

	while (*s == '/')
		s++;
	if (*s == '\0')
		return NULL;
	e = strchrnul(s, '/');
	*p = e;
	return xstrndup(s, (size_t)(e - s));
}

/* Takes the last component off DONE; false if there is none (".." out of the project). */
static bool
snap_plant_pop(struct buf *done)
{
	char *slash;

	if (done->len == 0)
		return false;
	slash = strrchr(done->data, '/');
	done->len = slash != NULL ? (size_t)(slash - done->data) : 0;
	done->data[done->len] = '\0';
	return true;
}

/* A resolution in progress: links from SINCE on (0: none) are not followed. */
struct snap_plant_res {
	const char *project;
	int projfd;
	struct strv *links;       /* the links on the way (relative), or NULL */
	int64_t since;
	char *stop;               /* the first link the session made or changed */
	bool out;                 /* left the project, looped, or stopped */
};

/*
 * The link DONE/COMP (relative to PROJFD) points at, made a path to go on
 * with REST; NULL if it is no link, if its target leaves the project, or
 * if the session made or changed it (R->stop: it is not followed). An
 * absolute target inside starts DONE over.
 */
static char *
snap_plant_link(struct snap_plant_res *r, struct buf *done, const char *comp,
    const char *rest)
{
	char *cur, target[PATH_MAX];
	size_t n = strlen(r->project);
	struct stat st;
	ssize_t len;

	cur = done->len > 0 ? xprintf("%s/%s", done->data, comp) :
	    xstrdup(comp);
	if (r->since != 0 && fstatat(r->projfd, cur, &st,
	    AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode) &&
	    snap_nested_changed(&st, r->since)) {
		r->stop = cur;
		r->out = true;
		return NULL;
	}
	len = readlinkat(r->projfd, cur, target, sizeof target - 1);
	if (len <= 0) {
		free(cur);
		return NULL;
	}
	if (r->links != NULL)
		strv_take(r->links, cur);
	else
		free(cur);
	target[len] = '\0';
	if (target[0] != '/')
		return xprintf("%s/%s", target, rest);
	if (strncmp(target, r->project, n) != 0 ||
	    (target[n] != '/' && target[n] != '\0')) {
		r->out = true;
		return NULL;
	}
	buf_reset(done);
	buf_adds(done, "");
	return xprintf("%s/%s", target + n, rest);
}

/* The resolution of REL for snap_plant_resolve and snap_plant_where; NULL: the project itself. */
static char *
snap_plant_resolve_at(struct snap_plant_res *r, const char *rel)
{
	struct buf done;
	char *todo = xstrdup(rel), *comp, *next;
	const char *p = todo;
	int nlinks = 0;

	buf_init(&done);
	buf_adds(&done, "");
	while (!r->out && (comp = snap_plant_comp(&p)) != NULL) {
		if (strcmp(comp, "..") == 0)
			r->out = !snap_plant_pop(&done);
		else if (strcmp(comp, ".") == 0)
			;
		else if ((next = snap_plant_link(r, &done, comp, p)) != NULL) {
			free(todo);
			p = todo = next;
			r->out = ++nlinks > 40;
		} else if (!r->out) {
			if (done.len > 0)
				buf_addc(&done, '/');
			buf_adds(&done, comp);
		}
		free(comp);
	}
	free(todo);
	if (r->out || done.len == 0) {
		buf_free(&done);
		return NULL;
	}
	return buf_steal(&done);
}

/*
 * REL (relative to PROJECT, open as PROJFD) with each link in it resolved
 * as the kernel would, none followed out of the project (read, never
 * opened): the real path relative to the project, what does not exist kept
 * as written; NULL if it leaves the project, loops or is the project. The
 * links on the way go to LINKS (relative), if not NULL.
 */
static char *
snap_plant_resolve(const char *project, int projfd, const char *rel,
    struct strv *links)
{
	struct snap_plant_res r = { project, projfd, links, 0, NULL, false };

	return snap_plant_resolve_at(&r, rel);
}

enum snap_plant_where
snap_plant_where(const char *project, int projfd, const char *path,
    int64_t since, char **link)
{
	struct snap_plant_res r = { project, projfd, NULL, since, NULL,
	    false };
	size_t n = strlen(project);
	char *real;

	*link = NULL;
	if (path[0] == '/') {
		if (strncmp(path, project, n) != 0 || (path[n] != '/' &&
		    path[n] != '\0'))
			return SNAP_PLANT_OUT;
		path += n;
	}
	real = snap_plant_resolve_at(&r, path);
	free(real);
	if (r.stop != NULL) {
		*link = r.stop;
		return SNAP_PLANT_NEW_LINK;
	}
	return r.out ? SNAP_PLANT_OUT : SNAP_PLANT_IN;
}

/* The real dir core.hooksPath names in PROJECT, relative to it (the links on the way to LINKS); NULL if none there. */
static char *
snap_plant_hooks_real(const char *project, const struct snap_gitconf *gc,
    struct strv *links)
{
	struct buf out;
	char *rel = NULL, *real = NULL, *home;
	int projfd;

	buf_init(&out);
	if (snap_gitconf_hooks(gc, &out) == 0) {
		/* git expands "~/": the project may lie in the home dir. */
		home = strncmp(out.data, "~/", 2) == 0 ? xprintf("%s/%s",
		    path_home(), out.data + 2) : NULL;
		rel = snap_plant_hooks_rel(project, home != NULL ? home :
		    out.data);
		free(home);
	}
	buf_free(&out);
	if (rel != NULL && (projfd = open(project, O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) != -1) {
		real = snap_plant_resolve(project, projfd, rel, links);
		close(projfd);
	}
	free(rel);
	return real;
}

char *
snap_plant_hooks_path_of(const char *project, const struct snap_gitconf *gc)
{
	char *real, *pattern = NULL;

	if ((real = snap_plant_hooks_real(project, gc, NULL)) != NULL)
		pattern = snap_plant_escape(real);
	free(real);
	return pattern;
}

char *
snap_plant_hooks_path(const char *project)
{
	struct snap_gitconf *gc = snap_gitconf_read(project);
	char *pattern = snap_plant_hooks_path_of(project, gc);

	snap_gitconf_free(gc);
	return pattern;
}

/* ---- what git runs through a link or an include ---- */

/* PATH (absolute) relative to PROJECT, or NULL if it is not inside. */
static const char *
snap_plant_inside(const char *project, const char *path)
{
	size_t n = strlen(project);

	if (strncmp(path, project, n) != 0 || path[n] != '/')
		return NULL;
	return path + n + 1;
}

/* Adds to OUT a pattern naming REL alone, if not there. */
static void
snap_plant_add_pattern(struct strv *out, const char *rel)
{
	char *pattern = snap_plant_escape(rel);

	if (!strv_contains(out, pattern))
		strv_take(out, pattern);
	else
		free(pattern);
}

/* Adds REL's real path in the project to OUT, and the links on the way (patterns). */
static void
snap_plant_add_real(const char *project, int projfd, const char *rel,
    struct strv *out)
{
	struct strv links;
	char *real;
	size_t i;

	if (rel == NULL)
		return;
	strv_init(&links);
	if ((real = snap_plant_resolve(project, projfd, rel, &links)) != NULL) {
		for (i = 0; i < links.n; i++)
			snap_plant_add_pattern(out, links.v[i]);
		snap_plant_add_pattern(out, real);
	}
	strv_free(&links);
	free(real);
}

/* The targets in the project of the links in hooks dir DIR (relative, real). */
static void
snap_plant_hook_links(const char *project, int projfd, const char *dir,
    struct strv *out)
{
	char target[PATH_MAX], *rel;
	struct dirent *de;
	ssize_t len;
	DIR *d;
	int fd;

	if ((fd = path_open_beneath(projfd, dir, O_RDONLY | O_DIRECTORY,
	    0)) == -1)
		return;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		len = readlinkat(dirfd(d), de->d_name, target,
		    sizeof target - 1);
		if (len <= 0)
			continue;
		target[len] = '\0';
		if (target[0] == '/') {
			snap_plant_add_real(project, projfd,
			    snap_plant_inside(project, target), out);
			continue;
		}
		rel = xprintf("%s/%s", dir, target);
		snap_plant_add_real(project, projfd, rel, out);
		free(rel);
	}
	closedir(d);
}

/* Adds the file include path VALUE (of .git/config) names, if in the project. */
static void
snap_plant_include(const char *project, int projfd, const char *value,
    struct strv *out)
{
	char *path;

	if (value[0] == '~' && value[1] == '/')
		path = xprintf("%s/%s", path_home(), value + 2);
	else if (value[0] == '/')
		path = xstrdup(value);
	else {
		/* Relative: to the config file's own dir. */
		path = xprintf(".git/%s", value);
		snap_plant_add_real(project, projfd, path, out);
		free(path);
		return;
	}
	snap_plant_add_real(project, projfd, snap_plant_inside(project, path),
	    out);
	free(path);
}

/* The files in the project the includes of .git/config name (none followed). */
static void
snap_plant_includes(const char *project, int projfd,
    const struct snap_gitconf *gc, struct strv *out)
{
	struct strv values;
	size_t i;

	strv_init(&values);
	snap_gitconf_includes(gc, &values);
	for (i = 0; i < values.n; i++)
		snap_plant_include(project, projfd, values.v[i], out);
	strv_free(&values);
}

/*
 * A file of the user's own git config (or one such a file includes), at
 * PATH: if what it leads to, every link followed (the user's files, out
 * of any jail's reach at the start: a dotfiles manager links ~/.gitconfig
 * into a dotfiles repository), lies in the project, it is git's to read
 * and protected as what .git/config includes is (review 14: a session
 * gave the project file your ~/.gitconfig includes a core.pager, which
 * your next git log ran).
 */
static void
snap_plant_user_file(const char *project, int projfd, const char *path,
    struct strv *out)
{
	char *real, *top;
	const char *rel;

	if ((real = realpath(path, NULL)) == NULL)
		return;
	top = realpath(project, NULL);
	if ((rel = snap_plant_inside(top != NULL ? top : project, real)) !=
	    NULL)
		snap_plant_add_real(project, projfd, rel, out);
	free(top);
	free(real);
}

/* The user's and the system's git config files, and what they include, where they lead into the project. */
static void
snap_plant_user_files(const char *project, int projfd,
    const struct snap_gitconf *gc, struct strv *out)
{
	const char *xdg = getenv("XDG_CONFIG_HOME");
	struct strv files;
	size_t i;

	strv_init(&files);
	strv_addf(&files, "%s/.gitconfig", path_home());
	if (xdg != NULL && *xdg == '/')
		strv_addf(&files, "%s/git/config", xdg);
	else
		strv_addf(&files, "%s/.config/git/config", path_home());
	strv_add(&files, "/etc/gitconfig");
	snap_gitconf_user_includes(gc, &files);
	for (i = 0; i < files.n; i++)
		snap_plant_user_file(project, projfd, files.v[i], out);
	strv_free(&files);
}

void
snap_plant_git_files_of(const char *project, const struct snap_gitconf *gc,
    struct strv *out)
{
	struct strv links;
	char *hooks;
	size_t i;
	int projfd;

	if ((projfd = open(project, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return;
	strv_init(&links);
	/* .git/hooks itself a link into the tree: its real dir. */
	hooks = snap_plant_resolve(project, projfd, ".git/hooks", &links);
	if (hooks != NULL && links.n > 0)
		snap_plant_add_pattern(out, hooks);
	if (hooks != NULL)
		snap_plant_hook_links(project, projfd, hooks, out);
	free(hooks);
	if ((hooks = snap_plant_hooks_real(project, gc, &links)) != NULL)
		snap_plant_hook_links(project, projfd, hooks, out);
	/* A link replaced on the way to a hooks dir leads git elsewhere. */
	for (i = 0; i < links.n; i++)
		snap_plant_add_pattern(out, links.v[i]);
	snap_plant_includes(project, projfd, gc, out);
	snap_plant_user_files(project, projfd, gc, out);
	strv_free(&links);
	free(hooks);
	close(projfd);
}

/* The values of KEYS in the config text CONFIG (git's parser, no include followed), "key\nvalue" each. */
static void
snap_plant_config_values(const struct buf *config, struct strv *out)
{
	char *argv[] = { "git", "config", "--file", "-", "--no-includes",
	    "--null", "--get-regexp",
	    "^(core\\.hookspath|include(if\\..*)?\\.path)$", NULL };
	char *cause = NULL;
	const char *p, *end;
	struct buf o;
	int status;

	buf_init(&o);
	if (snap_git_outside_input(argv, config->data, config->len, &o, NULL,
	    &status, &cause) == 0 && status == 0 && o.data != NULL) {
		end = o.data + o.len;
		for (p = o.data; p < end && memchr(p, '\0', (size_t)(end -
		    p)) != NULL; p += strlen(p) + 1)
			strv_add(out, p);
	}
	free(cause);
	buf_free(&o);
}

/*
 * What the git dir REL of the project (a nested repository's or a
 * submodule's, found at the start) leads git to run or read in the
 * project, into OUT as the project's own .git does: the links of its
 * hooks dir, and what its config's core.hooksPath and includes name
 * (relative includes from the git dir; a relative core.hooksPath from
 * the worktree, WORKTREE, if known). Review 14: a nested repository's
 * hook that was a link to a project file, and a file its config
 * included, were rewritten from the jail and run by the host's git.
 * The config is read by git only if it says "include" or "hookspath".
 */
static void
snap_plant_nested_git(const char *project, int projfd, const char *rel,
    const char *worktree, struct strv *out)
{
	struct strv links, values;
	struct buf config;
	char *hooks, *path, *last = NULL;
	const char *v;
	size_t i;

	strv_init(&links);
	hooks = xprintf("%s/hooks", rel);
	path = snap_plant_resolve(project, projfd, hooks, &links);
	if (path != NULL && links.n > 0)
		snap_plant_add_pattern(out, path);
	if (path != NULL)
		snap_plant_hook_links(project, projfd, path, out);
	free(path);
	free(hooks);
	buf_init(&config);
	strv_init(&values);
	path = xprintf("%s/config", rel);
	if (path_read_beneath(projfd, path, (size_t)1 << 20, &config) == 0 &&
	    config.data != NULL && (strcasestr(config.data, "include") !=
	    NULL || strcasestr(config.data, "hookspath") != NULL))
		snap_plant_config_values(&config, &values);
	free(path);
	for (i = 0; i < values.n; i++) {
		if ((v = strchr(values.v[i], '\n')) == NULL)
			continue;
		if (strncmp(values.v[i], "core.hookspath\n", 15) == 0) {
			last = (char *)v + 1;
			continue;
		}
		if (v[1] == '/' || (v[1] == '~' && v[2] == '/')) {
			path = v[1] == '/' ? xstrdup(v + 1) : xprintf("%s/%s",
			    path_home(), v + 3);
			snap_plant_add_real(project, projfd,
			    snap_plant_inside(project, path), out);
		} else {
			path = xprintf("%s/%s", rel, v + 1);
			snap_plant_add_real(project, projfd, path, out);
		}
		free(path);
	}
	/* git takes the last core.hooksPath given. */
	if (last != NULL) {
		if (last[0] == '/')
			path = xstrdup(last);
		else if (last[0] == '~' && last[1] == '/')
			path = xprintf("%s/%s", path_home(), last + 2);
		else
			path = NULL;
		if (path != NULL)
			hooks = snap_plant_inside(project, path) != NULL ?
			    xstrdup(snap_plant_inside(project, path)) : NULL;
		else if (last[0] != '~' && worktree != NULL)
			hooks = *worktree != '\0' ? xprintf("%s/%s",
			    worktree, last) : xstrdup(last);
		else
			hooks = NULL;
		free(path);
		if (hooks != NULL && (path = snap_plant_resolve(project,
		    projfd, hooks, &links)) != NULL) {
			snap_plant_add_pattern(out, path);
			snap_plant_hook_links(project, projfd, path, out);
			free(path);
		}
		free(hooks);
	}
	for (i = 0; i < links.n; i++)
		snap_plant_add_pattern(out, links.v[i]);
	strv_free(&values);
	strv_free(&links);
	buf_free(&config);
}

void
snap_plant_nested_git_files(const char *project, char *const *gitdirs,
    size_t n, struct strv *out)
{
	const char *rel;
	char *top, *wt;
	size_t i, len;
	int projfd;

	if ((projfd = open(project, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return;
	top = xprintf("%s/.git", project);
	for (i = 0; i < n; i++) {
		if (strcmp(gitdirs[i], top) == 0 ||
		    (rel = snap_plant_inside(project, gitdirs[i])) == NULL)
			continue;
		/* A nested repository's worktree is the dir its .git is in. */
		len = strlen(rel);
		wt = len > 5 && strcmp(rel + len - 5, "/.git") == 0 ?
		    xstrndup(rel, len - 5) : NULL;
		snap_plant_nested_git(project, projfd, rel, wt, out);
		free(wt);
	}
	free(top);
	close(projfd);
}

void
snap_plant_git_files(const char *project, struct strv *out)
{
	struct snap_gitconf *gc = snap_gitconf_read(project);

	snap_plant_git_files_of(project, gc, out);
	snap_gitconf_free(gc);
}
