/*
 * Undo: snapshot the present, check the snapshot to go back to (every
 * object it needs, hashed), then put the working tree (or some paths)
 * back as it had it: bytes, names and real modes.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "snap/snap-int.h"

/* What a user whose session still runs is told to do. */
#define SNAP_UNDO_WHY "end it before undoing what it did"

struct snap_change {
	unsigned old_mode;
	unsigned new_mode;
	char *new_oid;
	char status;          /* A, D, M or T: from the present to the target; C: mode only; E, R: a dir with no file beneath made, removed */
	char *path;
	mode_t perm;          /* the file's permissions before undo (M, T) */
	bool had_perm;
	mode_t from_perm;     /* C: the real modes, before and after */
	mode_t to_perm;
};

struct snap_changes {
	struct snap_change *v;
	size_t n;
};

/* One entry of the target tree (ls-tree -r -t). */
struct snap_entry {
	unsigned mode;
	char *oid;
	char *path;
};

struct snap_entries {
	struct snap_entry *v;
	size_t n;
};

static void
snap_changes_free(struct snap_changes *c)
{
	size_t i;

	for (i = 0; i < c->n; i++) {
		free(c->v[i].new_oid);
		free(c->v[i].path);
	}
	free(c->v);
	c->v = NULL;
	c->n = 0;
}

static struct snap_change *
snap_changes_add(struct snap_changes *c)
{
	struct snap_change *ch;

	c->v = xreallocarray(c->v, c->n + 1, sizeof *c->v);
	ch = &c->v[c->n++];
	memset(ch, 0, sizeof *ch);
	return ch;
}

/* Parses `diff-tree -r -z --raw`: ":old new oldoid newoid S\0path\0". */
static void
snap_changes_parse(struct snap_changes *c, const struct buf *out)
{
	struct snap_change *ch;
	const char *p = out->data, *end = out->data + out->len, *path;
	char oldoid[80], newoid[80], st;
	unsigned om, nm;

	while (p != NULL && p < end && *p == ':') {
		path = memchr(p, '\0', (size_t)(end - p));
		if (path == NULL || sscanf(p, ":%o %o %79s %79s %c", &om, &nm,
		    oldoid, newoid, &st) != 5)
			break;
		path++;
		ch = snap_changes_add(c);
		ch->old_mode = om;
		ch->new_mode = nm;
		ch->new_oid = xstrdup(newoid);
		ch->status = st;
		ch->path = xstrdup(path);
		p = path + strlen(path) + 1;
	}
}

static int
snap_undo_changes(struct snap_repo *r, const char *from, const char *to,
    char *const *paths, struct snap_changes *c, char **cause)
{
	struct strv args;
	struct buf out;
	int rc;

	strv_init(&args);
	strv_add(&args, "diff-tree");
	strv_add(&args, "-r");
	strv_add(&args, "-z");
	strv_add(&args, "--no-renames");
	strv_add(&args, "--raw");
	strv_add(&args, from);
	strv_add(&args, to);
	if (paths != NULL && *paths != NULL) {
		strv_add(&args, "--");
		for (; *paths != NULL; paths++)
			strv_add(&args, *paths);
	}
	buf_init(&out);
	rc = snap_git(r, SNAP_ENV_DB, (const char *const *)args.v, NULL, &out,
	    cause);
	if (rc == 0)
		snap_changes_parse(c, &out);
	buf_free(&out);
	strv_free(&args);
	return rc;
}

static void
snap_entries_free(struct snap_entries *e)
{
	size_t i;

	for (i = 0; i < e->n; i++) {
		free(e->v[i].oid);
		free(e->v[i].path);
	}
	free(e->v);
	memset(e, 0, sizeof *e);
}

static int
snap_entry_cmp(const void *a, const void *b)
{
	const struct snap_entry *x = a, *y = b;

	return strcmp(x->path, y->path);
}

/* Every entry of TREE, trees too: "mode type oid\tpath\0". */
static int
snap_entries_list(struct snap_repo *r, const char *tree,
    struct snap_entries *e, char **cause)
{
	const char *args[] = { "ls-tree", "-r", "-t", "-z", "--full-tree", tree,
	    NULL };
	const char *p, *end, *tab;
	char oid[80], type[16];
	struct buf out;
	unsigned mode;

	buf_init(&out);
	if (snap_git(r, SNAP_ENV_DB, args, NULL, &out, cause) == -1) {
		buf_free(&out);
		return -1;
	}
	for (p = out.data, end = p + out.len; p != NULL && p < end;
	    p += strlen(p) + 1) {
		if ((tab = strchr(p, '\t')) == NULL || sscanf(p, "%o %15s %79s",
		    &mode, type, oid) != 3)
			continue;
		e->v = xreallocarray(e->v, e->n + 1, sizeof *e->v);
		e->v[e->n].mode = mode;
		e->v[e->n].oid = xstrdup(oid);
		e->v[e->n].path = xstrdup(tab + 1);
		e->n++;
	}
	buf_free(&out);
	if (e->n > 1)
		qsort(e->v, e->n, sizeof *e->v, snap_entry_cmp);
	return 0;
}

/* True if PATH is (or is under) one of the paths git could not read. */
static bool
snap_undo_protected(const char *path, const struct snap_result *present)
{
	size_t i, n;

	for (i = 0; i < present->nunreadable; i++) {
		n = strlen(present->unreadable[i]);
		if (strncmp(path, present->unreadable[i], n) == 0 &&
		    (path[n] == '\0' || path[n] == '/'))
			return true;
	}
	return false;
}

static const char *
snap_undo_verb(const struct snap_change *ch)
{
	switch (ch->status) {
	case 'A':
		return "restore";
	case 'D':
		return "remove";
	case 'C':
		return "chmod";
	case 'E':
		return "mkdir";
	case 'R':
		return "rmdir";
	case 'L':
		return "remove";
	case 'M':
		return ch->old_mode != ch->new_mode && S_ISREG(ch->old_mode) &&
		    S_ISREG(ch->new_mode) ? "chmod" : "revert";
	default:
		return "revert";
	}
}

/*
 * A tree that is the present one with only the chosen changes applied:
 * a copy of the private index (the present, with its stat data) plus
 * --index-info lines, written out.
 */
static char *
snap_undo_hybrid(struct snap_repo *r, const struct snap_changes *c,
    char **cause)
{
	struct buf in, out, err;
	char *idx, *tree = NULL;
	const char *info[] = { "update-index", "-z", "--index-info", NULL };
	const char *wt[] = { "write-tree", NULL };
	size_t i;
	int st;

	idx = xprintf("%s/hybrid-index", r->private);
	if (snap_copy_file(r->index, idx, cause) == -1) {
		free(idx);
		return NULL;
	}
	buf_init(&in);
	buf_init(&out);
	buf_init(&err);
	for (i = 0; i < c->n; i++) {
		if (c->v[i].status == 'C' || c->v[i].status == 'E' ||
		    c->v[i].status == 'R' || c->v[i].status == 'L')
			continue;
		if (c->v[i].new_mode == 0)
			buf_printf(&in, "0 %s\t%s", snap_repo_empty_tree(r),
			    c->v[i].path);
		else
			buf_printf(&in, "%o %s\t%s", c->v[i].new_mode,
			    c->v[i].new_oid, c->v[i].path);
		buf_addc(&in, '\0');
	}
	st = snap_git_status(r, SNAP_ENV_TREE, idx, info, &in, NULL, &err, -1,
	    cause);
	if (st == 0)
		st = snap_git_status(r, SNAP_ENV_TREE, idx, wt, NULL, &out,
		    &err, -1, cause);
	if (st > 0)
		*cause = xprintf("cannot build the tree to restore: %s",
		    err.data != NULL ? err.data : "git failed");
	else if (st == 0)
		tree = xstrndup(out.data, strcspn(out.data, "\n"));
	unlink(idx);
	free(idx);
	buf_free(&in);
	buf_free(&out);
	buf_free(&err);
	return tree;
}

/* Notes the permissions of files about to be rewritten (a snapshot without modes: git would widen 0600 to 0644). */
static void
snap_undo_save_perms(int rootfd, struct snap_changes *c)
{
	struct stat sb;
	size_t i;

	for (i = 0; i < c->n; i++) {
		if (!S_ISREG(c->v[i].new_mode))
			continue;
		if (fstatat(rootfd, c->v[i].path, &sb, AT_SYMLINK_NOFOLLOW) ==
		    0 && S_ISREG(sb.st_mode)) {
			c->v[i].perm = sb.st_mode & 0777;
			c->v[i].had_perm = true;
		}
	}
}

/* Gives rewritten files back their permissions, with the snapshot's x bit (a snapshot without modes). */
static void
snap_undo_restore_perms(int rootfd, struct snap_changes *c)
{
	mode_t perm;
	size_t i;

	for (i = 0; i < c->n; i++) {
		if (!c->v[i].had_perm)
			continue;
		perm = c->v[i].perm;
		if ((c->v[i].new_mode & 0111) != 0)
			perm |= (perm & 0444) >> 2;
		else
			perm &= ~(mode_t)0111;
		if (snap_modes_apply(rootfd, c->v[i].path, perm) == -1)
			log_warn("cannot restore the permissions of %s",
			    c->v[i].path);
	}
}

static void
snap_undo_print(FILE *out, const struct snap_changes *c, bool dry)
{
	struct strv q;
	size_t i;

	strv_init(&q);
	for (i = 0; i < c->n; i++) {
		const struct snap_change *ch = &c->v[i];

		out_printf(out, "  %s%-7s %s", dry ? "would " : "",
		    snap_undo_verb(ch), quote_keep(&q, ch->path));
		if (S_ISLNK(ch->new_mode))
			out_puts(out, " (symlink)");
		else if (ch->status == 'E')
			out_printf(out, " (%03o)", (unsigned)ch->to_perm);
		else if (ch->status == 'L')
			out_puts(out, " (made in the session; it holds paths "
			    "too long for git, so no snapshot has them)");
		else if (ch->status == 'C')
			out_printf(out, " (%03o, now %03o)", (unsigned)ch->to_perm,
			    (unsigned)ch->from_perm);
		else if (strcmp(snap_undo_verb(ch), "chmod") == 0)
			out_puts(out, (ch->new_mode & 0111) != 0 ? " (+x)" :
			    " (-x)");
		out_puts(out, "\n");
	}
	strv_free(&q);
}

static int
snap_undo_exists(struct store *st, int64_t session, char **cause)
{
	struct store_session *s;

	if ((s = store_session_get(st, session)) == NULL) {
		*cause = xprintf("there is no session %lld", (long long)session);
		return -1;
	}
	store_session_free(s);
	return 0;
}

/* Turns the command line's paths into paths in the tree; NULL list means all. */
static int
snap_undo_paths(struct snap_repo *r, char *const *paths, struct strv *out,
    char **cause)
{
	char *rel;
	bool all = false;

	for (; paths != NULL && *paths != NULL; paths++) {
		if ((rel = snap_relpath(r->worktree, *paths, cause)) == NULL)
			return -1;
		if (*rel == '\0')
			all = true;
		strv_take(out, rel);
	}
	if (all) {
		strv_free(out);
		strv_init(out);
	}
	return 0;
}

/* Whether PATH is one the command line named (or under one); all when none were. */
static bool
snap_undo_wanted(const struct strv *paths, const char *path)
{
	size_t i, n;

	if (paths->n == 0)
		return true;
	for (i = 0; i < paths->n; i++) {
		n = strlen(paths->v[i]);
		if (strncmp(path, paths->v[i], n) == 0 && (path[n] == '\0' ||
		    path[n] == '/'))
			return true;
	}
	return false;
}

/* Drops changes to paths that could not be read now (they were not saved), and says so. */
static void
snap_undo_protect(struct snap_changes *c, const struct snap_result *present,
    const struct strv *paths, FILE *out, size_t *skipped)
{
	struct strv q;
	size_t i, j;

	*skipped = 0;
	strv_init(&q);
	for (i = 0; i < present->nunreadable; i++) {
		if (!snap_undo_wanted(paths, present->unreadable[i]))
			continue;
		out_printf(out, "  skip    %s (agentmux cannot read it, so it "
		    "could not be saved first)\n",
		    quote_keep(&q, present->unreadable[i]));
		(*skipped)++;
	}
	for (i = j = 0; i < c->n; i++) {
		if (!snap_undo_protected(c->v[i].path, present)) {
			c->v[j++] = c->v[i];
			continue;
		}
		free(c->v[i].new_oid);
		free(c->v[i].path);
	}
	c->n = j;
	strv_free(&q);
}

struct snap_undo {
	struct store *st;
	int64_t session;
	const struct snap_undo_opts *o;
	struct snap_repo *repo;
	struct store_snapshot *target;
	int64_t seq;
	struct snap_result present;
	struct strv paths;
	struct snap_changes changes;
	struct snap_entries entries;  /* the target tree's */
	struct snap_modes to_modes;   /* the target's real modes */
	struct snap_modes now_modes;  /* the present's */
	int rootfd;
};

static int
snap_undo_present(struct snap_undo *u, char **cause)
{
	struct snap_take_opts to;
	char *label;
	int rc;

	label = xprintf("before undo to %lld", (long long)u->seq);
	memset(&to, 0, sizeof to);
	to.kind = u->o->dry_run ? NULL : "undo";
	to.label = label;
	to.session = u->session;
	rc = snap_take_sync(u->st, u->repo, &to, &u->present, cause);
	free(label);
	if (rc == 0)
		snap_modes_parse(&u->now_modes, u->present.modes,
		    strlen(u->present.modes));
	return rc;
}

/*
 * The snapshot to go back to, checked before anything is written: its
 * commit (which holds its modes) and every tree in it must hash to their
 * ids; then its entries are listed from those trees.
 */
static int
snap_undo_check_target(struct snap_undo *u, char **cause)
{
	struct snap_verify_obj *v;
	struct buf commit;
	char *err = NULL, *want;
	size_t i, n = 0;
	int rc;

	if (snap_entries_list(u->repo, u->target->tree, &u->entries,
	    &err) == -1) {
		*cause = xprintf("snapshot %lld cannot be restored: its tree %s "
		    "cannot be read from %s (%s)", (long long)u->seq,
		    u->target->tree, u->repo->gitdir, err);
		free(err);
		return -1;
	}
	v = xcalloc(u->entries.n + 2, sizeof *v);
	v[n++] = (struct snap_verify_obj){ u->target->commit, "commit",
	    "the snapshot's commit" };
	v[n++] = (struct snap_verify_obj){ u->target->tree, "tree", "/" };
	for (i = 0; i < u->entries.n; i++) {
		if (S_ISDIR(u->entries.v[i].mode))
			v[n++] = (struct snap_verify_obj){ u->entries.v[i].oid,
			    "tree", u->entries.v[i].path };
	}
	buf_init(&commit);
	rc = snap_verify_objects(u->repo, v, n, &commit, &err);
	want = xprintf("tree %s\n", u->target->tree);
	if (rc == 0 && (commit.data == NULL || strncmp(commit.data, want,
	    strlen(want)) != 0)) {
		err = xprintf("commit %s is not for tree %s", u->target->commit,
		    u->target->tree);
		rc = -1;
	}
	if (rc == -1)
		*cause = xprintf("snapshot %lld cannot be restored, so nothing "
		    "was: %s in %s", (long long)u->seq, err, u->repo->gitdir);
	else
		snap_modes_from_commit(&u->to_modes, commit.data, commit.len);
	free(err);
	free(want);
	buf_free(&commit);
	free(v);
	return rc;
}

/* The blobs undo is about to write, checked the same way. */
static int
snap_undo_check_blobs(struct snap_undo *u, const struct snap_changes *c,
    char **cause)
{
	struct snap_verify_obj *v;
	char *err = NULL;
	size_t i, n = 0;
	int rc;

	v = xcalloc(c->n + 1, sizeof *v);
	for (i = 0; i < c->n; i++) {
		if (S_ISREG(c->v[i].new_mode) || S_ISLNK(c->v[i].new_mode))
			v[n++] = (struct snap_verify_obj){ c->v[i].new_oid,
			    "blob", c->v[i].path };
	}
	rc = snap_verify_objects(u->repo, v, n, NULL, &err);
	if (rc == -1)
		*cause = xprintf("snapshot %lld cannot be restored, so nothing "
		    "was: %s in %s", (long long)u->seq, err, u->repo->gitdir);
	free(err);
	free(v);
	return rc;
}

/* Paths (files and dirs) whose real mode differs while their content does not. */
static void
snap_undo_mode_changes(struct snap_undo *u, struct snap_changes *c)
{
	const struct snap_entry *e;
	struct snap_change *ch;
	mode_t from, to;
	size_t i;
	bool x;

	if (!u->to_modes.known || !u->now_modes.known)
		return;
	for (i = 0; i < u->entries.n; i++) {
		e = &u->entries.v[i];
		if ((!S_ISREG(e->mode) && !S_ISDIR(e->mode)) ||
		    !snap_undo_wanted(&u->paths, e->path))
			continue;
		x = S_ISDIR(e->mode) || (e->mode & 0111) != 0;
		from = snap_modes_of(&u->now_modes, e->path, x);
		to = snap_modes_of(&u->to_modes, e->path, x);
		if (from == to)
			continue;
		ch = snap_changes_add(c);
		ch->status = 'C';
		ch->path = xstrdup(e->path);
		ch->new_oid = xstrdup(e->oid);
		ch->old_mode = ch->new_mode = e->mode;
		ch->from_perm = from;
		ch->to_perm = to;
	}
	/* The root has no entry of its own. */
	from = snap_modes_of(&u->now_modes, ".", true);
	to = snap_modes_of(&u->to_modes, ".", true);
	if (from != to && u->paths.n == 0) {
		ch = snap_changes_add(c);
		ch->status = 'C';
		ch->path = xstrdup(".");
		ch->new_oid = xstrdup("");
		ch->old_mode = ch->new_mode = 040000;
		ch->from_perm = from;
		ch->to_perm = to;
	}
}

/* Whether the target's tree holds PATH (a dir with a file beneath, a file, a link): git puts it back. */
static bool
snap_undo_tree_dir(const struct snap_undo *u, const char *path)
{
	size_t i;

	for (i = 0; i < u->entries.n; i++) {
		if (strcmp(u->entries.v[i].path, path) == 0)
			return true;
	}
	return false;
}

static void
snap_undo_dir_change(struct snap_changes *c, char status, const char *path,
    mode_t from, mode_t to)
{
	struct snap_change *ch;

	ch = snap_changes_add(c);
	ch->status = status;
	ch->path = xstrdup(path);
	ch->new_oid = xstrdup("");
	ch->old_mode = ch->new_mode = 040000;
	ch->from_perm = from;
	ch->to_perm = to;
}

/*
 * A top dir holding paths too long for git (no snapshot has them): one
 * the target did not have was made in the session and goes whole; one
 * it had is told, for the user to look at.
 */
static void
snap_undo_long_changes(struct snap_undo *u, struct snap_changes *c)
{
	const char *top;
	char *q;
	size_t i;

	for (i = 0; i < u->now_modes.toolong.n; i++) {
		top = u->now_modes.toolong.v[i];
		if (!snap_undo_wanted(&u->paths, top))
			continue;
		if (!snap_undo_tree_dir(u, top) &&
		    !snap_dirs_has(&u->to_modes, top) &&
		    !strv_contains(&u->to_modes.toolong, top)) {
			snap_undo_dir_change(c, 'L', top, 0, 0);
			continue;
		}
		q = quote_name(top);
		out_printf(u->o->out, "  %s holds paths too long for git, so no "
		    "snapshot has them and undo leaves them: look at what the "
		    "session made there before you build or run anything\n", q);
		free(q);
	}
}

/*
 * The dirs with no file beneath (git keeps none): the target's that are
 * not such a dir now are made (or, if one is, given its mode back); the
 * present's that the target does not have are removed (once empty).
 */
static void
snap_undo_dir_changes(struct snap_undo *u, struct snap_changes *c)
{
	const struct snap_mode *d;
	mode_t from;
	size_t i;

	if (!u->to_modes.known || !u->now_modes.known)
		return;
	for (i = 0; i < u->to_modes.en; i++) {
		d = &u->to_modes.e[i];
		if (!snap_undo_wanted(&u->paths, d->path))
			continue;
		if (!snap_dirs_has(&u->now_modes, d->path))
			snap_undo_dir_change(c, 'E', d->path, 0, d->mode);
		else if ((from = snap_modes_of(&u->now_modes, d->path,
		    true)) != d->mode)
			snap_undo_dir_change(c, 'C', d->path, from, d->mode);
	}
	for (i = u->now_modes.en; i > 0; i--) {
		d = &u->now_modes.e[i - 1];
		if (snap_undo_wanted(&u->paths, d->path) &&
		    !snap_dirs_has(&u->to_modes, d->path) &&
		    !snap_undo_tree_dir(u, d->path))
			snap_undo_dir_change(c, 'R', d->path, d->mode, 0);
	}
	snap_undo_long_changes(u, c);
}

/* The dir above REL, opened beneath the project (no link followed); NAME is REL's last part. */
static int
snap_undo_parent(int rootfd, const char *rel, const char **name)
{
	const char *slash = strrchr(rel, '/');
	char *up;
	int fd;

	if (slash == NULL) {
		*name = rel;
		return fcntl(rootfd, F_DUPFD_CLOEXEC, 0);
	}
	*name = slash + 1;
	up = xstrndup(rel, (size_t)(slash - rel));
	fd = path_open_beneath(rootfd, up, O_PATH | O_DIRECTORY, 0);
	free(up);
	return fd;
}

/* Makes the dir REL (if missing) and gives it MODE, never through a link. */
static void
snap_undo_make_dir(int rootfd, const char *rel, mode_t mode)
{
	const char *name;
	struct stat sb;
	int pfd, fd;

	if ((pfd = snap_undo_parent(rootfd, rel, &name)) == -1) {
		log_warn("cannot make the dir %s", rel);
		return;
	}
	if (mkdirat(pfd, name, 0700) == -1 && errno != EEXIST)
		log_warn("cannot make the dir %s", rel);
	fd = openat(pfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(pfd);
	if (fd == -1)
		return;
	if (fstat(fd, &sb) == 0 && S_ISDIR(sb.st_mode) &&
	    (sb.st_mode & 07777) != mode && snap_modes_fchmod(fd, mode) == -1)
		log_warn("cannot give %s its mode %03o", rel, (unsigned)mode);
	close(fd);
}

/* Removes the dir REL if it is (still) an empty dir, never through a link. */
static void
snap_undo_remove_dir(int rootfd, const char *rel)
{
	const char *name;
	int pfd;

	if ((pfd = snap_undo_parent(rootfd, rel, &name)) == -1)
		return;
	/* rmdir removes only an empty dir, and never follows a link. */
	if (unlinkat(pfd, name, AT_REMOVEDIR) == -1 && errno != ENOENT &&
	    errno != ENOTEMPTY && errno != EEXIST && errno != ENOTDIR)
		log_warn("cannot remove the dir %s", rel);
	close(pfd);
}

/* Removes NAME in the dir DFD and all beneath it, never through a link; -1 with errno. */
static int
snap_undo_rmtree(int dfd, const char *name, int depth)
{
	struct dirent *de;
	DIR *d;
	int fd, rc = 0;

	if (unlinkat(dfd, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -1;
	/* Each level holds a descriptor: a deeper tree is left, and said. */
	if (depth > 512) {
		errno = ELOOP;
		return -1;
	}
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (fd == -1)
		return -1;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") !=
		    0 && snap_undo_rmtree(dirfd(d), de->d_name, depth + 1) == -1)
			rc = -1;
	}
	closedir(d);
	if (unlinkat(dfd, name, AT_REMOVEDIR) == -1)
		rc = -1;
	return rc;
}

/* The top dirs made in the session that hold paths too long for git, whole. */
static void
snap_undo_apply_long(struct snap_undo *u)
{
	const char *top, *name;
	char *q;
	size_t i;
	int pfd;

	for (i = 0; i < u->changes.n; i++) {
		if (u->changes.v[i].status != 'L')
			continue;
		top = u->changes.v[i].path;
		if ((pfd = snap_undo_parent(u->rootfd, top, &name)) != -1 &&
		    snap_undo_rmtree(pfd, name, 0) == 0) {
			close(pfd);
			continue;
		}
		if (pfd != -1)
			close(pfd);
		q = quote_name(top);
		/* A command only for a name no shell reads anything into. */
		if (top[strspn(top, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN"
		    "OPQRSTUVWXYZ0123456789._-")] == '\0')
			out_printf(u->o->out, "  cannot remove all of %s (%s): "
			    "remove it yourself: cd %s && rm -rf -- ./%s\n", q,
			    strerror(errno), u->repo->worktree, top);
		else
			out_printf(u->o->out, "  cannot remove all of %s (%s): "
			    "remove that dir of %s yourself\n", q,
			    strerror(errno), u->repo->worktree);
		free(q);
	}
}

/*
 * The dirs with no file beneath as the target had them: the present's
 * it did not have go (deepest first, once empty), then the target's are
 * made where missing (parents first) and given their modes.
 */
static void
snap_undo_apply_dirs(struct snap_undo *u)
{
	const struct snap_mode *d;
	size_t i;

	if (!u->now_modes.known)
		return;
	for (i = u->now_modes.en; i > 0; i--) {
		d = &u->now_modes.e[i - 1];
		if (snap_undo_wanted(&u->paths, d->path) &&
		    !snap_undo_protected(d->path, &u->present) &&
		    !snap_dirs_has(&u->to_modes, d->path) &&
		    !snap_undo_tree_dir(u, d->path))
			snap_undo_remove_dir(u->rootfd, d->path);
	}
	for (i = 0; i < u->to_modes.en; i++) {
		d = &u->to_modes.e[i];
		if (snap_undo_wanted(&u->paths, d->path) &&
		    !snap_undo_protected(d->path, &u->present))
			snap_undo_make_dir(u->rootfd, d->path, d->mode);
	}
}

/* Whether PATH is one a change of C rewrote (or a dir it made). */
static bool
snap_undo_touched(const struct snap_changes *c, const char *path)
{
	size_t i, n = strlen(path);

	for (i = 0; i < c->n; i++) {
		if (c->v[i].status == 'D')
			continue;
		if (strcmp(c->v[i].path, path) == 0 ||
		    (strncmp(c->v[i].path, path, n) == 0 &&
		    c->v[i].path[n] == '/'))
			return true;
	}
	return false;
}

/*
 * The real modes of the target: every file and dir git wrote (with the
 * umask), and every one whose mode alone differs, get the mode they had.
 */
static void
snap_undo_apply_modes(struct snap_undo *u, const struct snap_changes *c)
{
	const struct snap_entry *e;
	size_t i;
	mode_t want;
	bool x;

	for (i = 0; i < u->entries.n; i++) {
		e = &u->entries.v[i];
		if ((!S_ISREG(e->mode) && !S_ISDIR(e->mode)) ||
		    !snap_undo_wanted(&u->paths, e->path) ||
		    snap_undo_protected(e->path, &u->present) ||
		    (!snap_undo_touched(c, e->path) &&
		    snap_modes_find(&u->to_modes, e->path) == -1 &&
		    snap_modes_find(&u->now_modes, e->path) == -1 &&
		    u->to_modes.umask == u->now_modes.umask))
			continue;
		x = S_ISDIR(e->mode) || (e->mode & 0111) != 0;
		want = snap_modes_of(&u->to_modes, e->path, x);
		if (snap_modes_apply(u->rootfd, e->path, want) == -1)
			log_warn("cannot give %s its mode %03o", e->path,
			    (unsigned)want);
	}
	if (u->paths.n == 0 && snap_modes_apply(u->rootfd, ".",
	    snap_modes_of(&u->to_modes, ".", true)) == -1)
		log_warn("cannot give %s its mode", u->repo->worktree);
}

/* What a non-file is called in undo's output. */
static const char *
snap_undo_kind(mode_t mode)
{
	if (S_ISSOCK(mode))
		return "socket";
	if (S_ISFIFO(mode))
		return "FIFO";
	return "device";
}

/*
 * git cannot write a file where a socket, FIFO or device is (at the path
 * or at a dir above it): read-tree refuses the whole undo. Such an entry
 * in the way of a path the undo writes is removed first, and said: it
 * holds no data, and the jail that made it is gone. Walked beneath the
 * project one component at a time, never through a link; files, dirs
 * and links in the way are git's to handle.
 */
static void
snap_undo_clear_way(struct snap_undo *u, const char *rel)
{
	char *copy = xstrdup(rel), *name, *save = NULL, *q, *what;
	struct stat sb;
	int dfd, next;

	dfd = fcntl(u->rootfd, F_DUPFD_CLOEXEC, 0);
	for (name = strtok_r(copy, "/", &save); name != NULL && dfd != -1;
	    name = strtok_r(NULL, "/", &save)) {
		if (fstatat(dfd, name, &sb, AT_SYMLINK_NOFOLLOW) == -1 ||
		    S_ISREG(sb.st_mode) || S_ISLNK(sb.st_mode))
			break;
		if (S_ISDIR(sb.st_mode)) {
			next = openat(dfd, name, O_PATH | O_DIRECTORY |
			    O_NOFOLLOW | O_CLOEXEC);
			close(dfd);
			dfd = next;
			continue;
		}
		q = xstrndup(rel, (size_t)(name - copy) + strlen(name));
		what = quote_name(q);
		free(q);
		q = what;
		if (unlinkat(dfd, name, 0) == 0)
			out_printf(u->o->out, "  removed the %s %s, in the way "
			    "(it held no data; the jail that made it is "
			    "gone)\n", snap_undo_kind(sb.st_mode), q);
		else
			out_printf(u->o->out, "  cannot remove the %s %s, in the "
			    "way: %s; remove it and run undo again\n",
			    snap_undo_kind(sb.st_mode), q, strerror(errno));
		free(q);
		break;
	}
	if (dfd != -1)
		close(dfd);
	free(copy);
}

/* Clears the way (snap_undo_clear_way) for every path of C the undo writes. */
static void
snap_undo_clear_ways(struct snap_undo *u, const struct snap_changes *c)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		if (c->v[i].new_mode != 0)
			snap_undo_clear_way(u, c->v[i].path);
}

/*
 * Two-way merge from the present tree to TREE with -u: git removes,
 * rewrites and creates exactly the differing paths (with the user's
 * umask), leaves ignored files alone, and refuses the lot if a file
 * changed since the present snapshot (the private index copy holds its
 * stat data). Then the real modes.
 */
static int
snap_undo_apply(struct snap_undo *u, const char *tree, struct snap_changes *c,
    char **cause)
{
	struct snap_repo *r = u->repo;
	struct snap_unlock unlock;
	struct buf err;
	char *idx;
	int st;
	const char *args[] = { "read-tree", "-m", "-u",
	    "--exclude-per-directory=.gitignore", u->present.tree, tree, NULL };
	const char *refresh[] = { SNAP_GIT_STREAM, "update-index", "-q",
	    "--refresh", NULL };

	idx = xprintf("%s/undo-index", r->private);
	if (snap_copy_file(r->index, idx, cause) == -1) {
		free(idx);
		return -1;
	}
	if (!u->to_modes.known)
		snap_undo_save_perms(u->rootfd, c);
	buf_init(&err);
	/*
	 * git removes and writes in dirs the agent may have made 0111 or 0
	 * (a file planted in one must go): they are opened up meanwhile,
	 * then get their own modes back, then the target's.
	 */
	snap_unlock_init(&unlock);
	if (snap_unlock_tree(&unlock, r->worktree, true) == -1)
		log_debug("cannot look for locked dirs in %s: %s", r->worktree,
		    strerror(errno));
	snap_undo_clear_ways(u, c);
	/*
	 * Entries the present snapshot marked to be hashed again (changed in
	 * the second it read them) are compared with the files first: the
	 * same, their stat data is taken; changed since, read-tree refuses.
	 */
	st = snap_git_status(r, SNAP_ENV_TREE, idx, refresh, NULL, NULL, &err,
	    -1, cause);
	buf_reset(&err);
	if (st >= 0)
		st = snap_git_status(r, SNAP_ENV_TREE, idx, args, NULL, NULL,
		    &err, -1, cause);
	snap_unlock_restore(&unlock, r->worktree);
	unlink(idx);
	free(idx);
	if (st > 0)
		*cause = xprintf("nothing was restored: %s (did something change "
		    "the project meanwhile? run undo again)", err.data != NULL ?
		    strtok(err.data, "\n") : "git read-tree failed");
	buf_free(&err);
	if (st != 0)
		return -1;
	if (u->to_modes.known) {
		snap_undo_apply_modes(u, c);
		snap_undo_apply_dirs(u);
		snap_undo_apply_long(u);
	} else
		snap_undo_restore_perms(u->rootfd, c);
	return 0;
}

/* Says which paths could not be read now (undo leaves them alone). */
static void
snap_undo_unreadable(FILE *out, const struct snap_result *present)
{
	char *q;
	size_t i;

	if (present->nunreadable == 0)
		return;
	out_printf(out, "  %zu path%s could not be read, so %s not saved and "
	    "undo leaves %s alone:", present->nunreadable,
	    present->nunreadable == 1 ? "" : "s", present->nunreadable == 1 ?
	    "it is" : "they are", present->nunreadable == 1 ? "it" : "them");
	for (i = 0; i < present->nunreadable && i < 5; i++) {
		q = quote_name(present->unreadable[i]);
		out_printf(out, " %s", q);
		free(q);
	}
	out_printf(out, "%s\n", present->nunreadable > 5 ? " ..." : "");
}

/* The tree to write: the target's, or the present with only the chosen changes. */
static char *
snap_undo_tree(struct snap_undo *u, size_t skipped, char **cause)
{
	if (u->paths.n == 0 && skipped == 0)
		return xstrdup(u->target->tree);
	return snap_undo_hybrid(u->repo, &u->changes, cause);
}

/* Restores the files; -1 with *CAUSE. */
static int
snap_undo_files(struct snap_undo *u, char **cause)
{
	struct snap_changes applied;
	FILE *out = u->o->out;
	char *tree = NULL;
	size_t skipped, i;
	int rc = -1;

	memset(&applied, 0, sizeof applied);
	snap_undo_unreadable(out, &u->present);
	if (snap_undo_changes(u->repo, u->present.tree, u->target->tree,
	    u->paths.v, &u->changes, cause) == -1)
		return -1;
	snap_undo_mode_changes(u, &u->changes);
	snap_undo_dir_changes(u, &u->changes);
	snap_undo_protect(&u->changes, &u->present, &u->paths, out, &skipped);
	if (snap_undo_check_blobs(u, &u->changes, cause) == -1)
		return -1;
	if (u->changes.n == 0) {
		out_printf(out, "  nothing to restore: the files already match "
		    "snapshot %lld\n", (long long)u->seq);
		return 0;
	}
	if (u->o->dry_run) {
		snap_undo_print(out, &u->changes, true);
		return 0;
	}
	if ((tree = snap_undo_tree(u, skipped, cause)) == NULL)
		return -1;
	/* What really changes (a path may drag a file/dir conflict along). */
	if (snap_undo_changes(u->repo, u->present.tree, tree, NULL, &applied,
	    cause) == 0 && snap_undo_check_blobs(u, &applied, cause) == 0 &&
	    snap_undo_apply(u, tree, &applied, cause) == 0) {
		for (i = 0; i < u->changes.n; i++) {
			if (u->changes.v[i].status != 'C' &&
			    u->changes.v[i].status != 'E' &&
			    u->changes.v[i].status != 'R' &&
			    u->changes.v[i].status != 'L')
				continue;
			*snap_changes_add(&applied) = u->changes.v[i];
			u->changes.v[i].path = u->changes.v[i].new_oid = NULL;
		}
		snap_undo_print(out, &applied, false);
		store_event_add(u->st, u->session, "info", "undo", "restored "
		    "%zu path(s) to snapshot %lld (%.12s)", applied.n,
		    (long long)u->seq, u->target->commit);
		rc = 0;
	}
	free(tree);
	snap_changes_free(&applied);
	return rc;
}

/*
 * A project dir that is gone (discard removed the session's worktree):
 * undo has nowhere to put the files back, and says what still works.
 */
static int
snap_undo_gone(const struct snap_undo *u, char **cause)
{
	struct stat sb;

	if (lstat(u->repo->worktree, &sb) == 0 || errno != ENOENT)
		return 0;
	*cause = xprintf("the project dir %s is gone (session %lld's "
	    "worktree was discarded), so undo has nowhere to put files back. "
	    "'agentmux restore %lld --to %lld' brings the worktree and branch "
	    "back with the files of snapshot %lld; 'agentmux diff %lld' shows "
	    "the snapshots (--from and --to name two)", u->repo->worktree,
	    (long long)u->session, (long long)u->session, (long long)u->seq,
	    (long long)u->seq, (long long)u->session);
	return -1;
}

int
snap_undo(struct store *st, const struct config *cf, int64_t session,
    const struct snap_undo_opts *o, char **cause)
{
	struct snap_undo u;
	char when[32];
	int rc = -1;

	memset(&u, 0, sizeof u);
	u.st = st;
	u.session = session;
	u.o = o;
	u.rootfd = -1;
	strv_init(&u.paths);
	snap_modes_init(&u.to_modes);
	snap_modes_init(&u.now_modes);
	if (snap_undo_exists(st, session, cause) == -1 ||
	    snap_check_ended(st, session, NULL, SNAP_UNDO_WHY, cause) == -1 ||
	    (u.target = snap_resolve(st, session, o->to != NULL ? o->to :
	    "start", &u.seq, cause)) == NULL ||
	    (u.repo = snap_session_repo(st, cf, session, "undo", cause)) == NULL ||
	    snap_undo_gone(&u, cause) == -1 ||
	    snap_check_ended(st, session, u.repo->worktree, SNAP_UNDO_WHY,
	    cause) == -1 ||
	    snap_undo_paths(u.repo, o->paths, &u.paths, cause) == -1)
		goto out;
	/* A shared tree: the whole tree back would take another session's changes. */
	if (!o->force && (o->paths == NULL || o->paths[0] == NULL) &&
	    snap_overlap_check(st, u.repo, session, cause) == -1)
		goto out;
	if ((u.rootfd = open(u.repo->worktree, O_PATH | O_DIRECTORY |
	    O_CLOEXEC)) == -1) {
		*cause = xprintf("cannot open %s: %s", u.repo->worktree,
		    strerror(errno));
		goto out;
	}
	if (snap_undo_check_target(&u, cause) == -1 ||
	    snap_undo_present(&u, cause) == -1)
		goto out;
	out_printf(o->out, "%s session %lld to snapshot %lld (%s, %s):\n",
	    o->dry_run ? "undo --dry-run:" : "undo:", (long long)session,
	    (long long)u.seq, u.target->kind, util_fmt_time(when, sizeof when,
	    u.target->created_at));
	if (snap_undo_files(&u, cause) == -1)
		goto out;
	if (o->refs && snap_undo_refs(st, u.repo, session, o->dry_run, o->out,
	    cause) == -1)
		goto out;
	if (!o->dry_run)
		out_printf(o->out,
		    "the state before this undo is snapshot %lld: "
		    "'agentmux undo %lld --to %lld' brings it back\n",
		    (long long)u.present.seq, (long long)session,
		    (long long)u.present.seq);
	rc = 0;
out:
	if (u.rootfd != -1)
		close(u.rootfd);
	snap_changes_free(&u.changes);
	snap_entries_free(&u.entries);
	snap_modes_free(&u.to_modes);
	snap_modes_free(&u.now_modes);
	snap_result_clear(&u.present);
	strv_free(&u.paths);
	store_snapshot_free(u.target);
	snap_repo_free(u.repo);
	return rc;
}
