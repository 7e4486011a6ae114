/* Undo: snapshot the present, then put the working tree (or some paths) back as a snapshot had it. */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/snap-int.h"

struct snap_change {
	unsigned old_mode;
	unsigned new_mode;
	char *new_oid;
	char status;          /* A, D, M or T: from the present to the target */
	char *path;
	mode_t perm;          /* the file's permissions before undo (M, T) */
	bool had_perm;
};

struct snap_changes {
	struct snap_change *v;
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
		c->v = xreallocarray(c->v, c->n + 1, sizeof *c->v);
		ch = &c->v[c->n++];
		memset(ch, 0, sizeof *ch);
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

/* Notes the permissions of files about to be rewritten: git would widen 0600 to 0644. */
static void
snap_undo_save_perms(struct snap_repo *r, struct snap_changes *c)
{
	struct stat sb;
	char *p;
	size_t i;

	for (i = 0; i < c->n; i++) {
		if (!S_ISREG(c->v[i].new_mode))
			continue;
		p = xprintf("%s/%s", r->worktree, c->v[i].path);
		if (lstat(p, &sb) == 0 && S_ISREG(sb.st_mode)) {
			c->v[i].perm = sb.st_mode & 07777;
			c->v[i].had_perm = true;
		}
		free(p);
	}
}

/* Gives rewritten files back their permissions, with the snapshot's x bit. */
static void
snap_undo_restore_perms(struct snap_repo *r, struct snap_changes *c)
{
	mode_t perm;
	char *p;
	size_t i;

	for (i = 0; i < c->n; i++) {
		if (!c->v[i].had_perm)
			continue;
		perm = c->v[i].perm;
		if ((c->v[i].new_mode & 0111) != 0)
			perm |= (perm & 0444) >> 2;
		else
			perm &= ~(mode_t)0111;
		p = xprintf("%s/%s", r->worktree, c->v[i].path);
		if (chmod(p, perm) == -1 && errno != ENOENT)
			log_warn("cannot restore the permissions of %s", p);
		free(p);
	}
}

/*
 * Two-way merge from the present tree to TREE with -u: git removes,
 * rewrites and creates exactly the differing paths, leaves ignored
 * files alone, and refuses the lot if a file changed since the present
 * snapshot (the private index copy holds its stat data).
 */
static int
snap_undo_apply(struct snap_repo *r, const char *present, const char *tree,
    struct snap_changes *c, char **cause)
{
	struct buf err;
	char *idx;
	int st;
	const char *args[] = { "read-tree", "-m", "-u",
	    "--exclude-per-directory=.gitignore", present, tree, NULL };

	idx = xprintf("%s/undo-index", r->private);
	if (snap_copy_file(r->index, idx, cause) == -1) {
		free(idx);
		return -1;
	}
	snap_undo_save_perms(r, c);
	buf_init(&err);
	st = snap_git_status(r, SNAP_ENV_TREE, idx, args, NULL, NULL, &err, -1,
	    cause);
	unlink(idx);
	free(idx);
	if (st > 0)
		*cause = xprintf("nothing was restored: %s (did something change "
		    "the project meanwhile? run undo again)", err.data != NULL ?
		    strtok(err.data, "\n") : "git read-tree failed");
	buf_free(&err);
	if (st != 0)
		return -1;
	snap_undo_restore_perms(r, c);
	return 0;
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
		else if (strcmp(snap_undo_verb(ch), "chmod") == 0)
			out_puts(out, (ch->new_mode & 0111) != 0 ? " (+x)" :
			    " (-x)");
		out_puts(out, "\n");
	}
	strv_free(&q);
}

static int
snap_undo_check_running(struct store *st, int64_t session, char **cause)
{
	struct store_session *s;
	int rc = 0;

	if ((s = store_session_get(st, session)) == NULL) {
		*cause = xprintf("there is no session %lld", (long long)session);
		return -1;
	}
	if (strcmp(s->state, "running") == 0 &&
	    util_proc_alive(s->owner_pid, s->owner_start)) {
		*cause = xprintf("session %lld is still running (agentmux pid "
		    "%ld); end it before undoing what it did",
		    (long long)session, (long)s->owner_pid);
		rc = -1;
	}
	store_session_free(s);
	return rc;
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

/* Drops changes to paths that could not be read now (they were not saved). */
static void
snap_undo_protect(struct snap_changes *c, const struct snap_result *present,
    FILE *out, size_t *skipped)
{
	struct strv q;
	size_t i, j;

	*skipped = 0;
	strv_init(&q);
	for (i = j = 0; i < c->n; i++) {
		if (!snap_undo_protected(c->v[i].path, present)) {
			c->v[j++] = c->v[i];
			continue;
		}
		out_printf(out, "  skip    %s (agentmux cannot read it, so it "
		    "could not be saved first)\n", quote_keep(&q, c->v[i].path));
		free(c->v[i].new_oid);
		free(c->v[i].path);
		(*skipped)++;
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
	return rc;
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

/* Restores the files; -1 with *CAUSE. */
static int
snap_undo_files(struct snap_undo *u, char **cause)
{
	struct snap_changes applied;
	FILE *out = u->o->out;
	char *tree = NULL;
	size_t skipped;
	int rc = -1;

	memset(&applied, 0, sizeof applied);
	snap_undo_unreadable(out, &u->present);
	if (snap_undo_changes(u->repo, u->present.tree, u->target->tree,
	    u->paths.v, &u->changes, cause) == -1)
		return -1;
	snap_undo_protect(&u->changes, &u->present, out, &skipped);
	if (u->changes.n == 0) {
		out_printf(out, "  nothing to restore: the files already match "
		    "snapshot %lld\n", (long long)u->seq);
		return 0;
	}
	if (u->o->dry_run) {
		snap_undo_print(out, &u->changes, true);
		return 0;
	}
	if (u->paths.n == 0 && skipped == 0)
		tree = xstrdup(u->target->tree);
	else if ((tree = snap_undo_hybrid(u->repo, &u->changes, cause)) == NULL)
		return -1;
	/* What really changes (a path may drag a file/dir conflict along). */
	if (snap_undo_changes(u->repo, u->present.tree, tree, NULL, &applied,
	    cause) == 0 && snap_undo_apply(u->repo, u->present.tree, tree,
	    &applied, cause) == 0) {
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
	strv_init(&u.paths);
	if (snap_undo_check_running(st, session, cause) == -1 ||
	    (u.target = snap_resolve(st, session, o->to != NULL ? o->to :
	    "start", &u.seq, cause)) == NULL ||
	    (u.repo = snap_session_repo(st, cf, session, "undo", cause)) == NULL ||
	    snap_undo_paths(u.repo, o->paths, &u.paths, cause) == -1 ||
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
	snap_changes_free(&u.changes);
	snap_result_clear(&u.present);
	strv_free(&u.paths);
	store_snapshot_free(u.target);
	snap_repo_free(u.repo);
	return rc;
}
