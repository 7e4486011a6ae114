/*
 * Taking a snapshot: git add -A into the private index, the tree (the
 * index's own cache of it, else write-tree), the commit and the refs, as a
 * chain of async steps.
 */
#include <sys/stat.h>

#include <errno.h>
#include <event2/event.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "store/snap-int.h"

/* Rounds of adopting nested repositories before giving up on new ones. */
#define SNAP_ADOPT_ROUNDS 3
/* Progress is reported every this many files. */
#define SNAP_PROGRESS_STEP 250

struct snap_take {
	struct event_base *base;
	struct store *st;
	struct snap_repo *repo;
	char *kind;               /* NULL: a tree only, not recorded */
	char *label;
	int64_t session;
	bool if_changed;
	bool record_refs;
	char *parent;             /* the commit the new one follows */
	char *head_ref;           /* the branch HEAD names, at the chain's start */
	char *head_tree;          /* its commit's tree, from for-each-ref */
	char *prev_tree;          /* the chain's last tree */
	char *prev_commit;        /* the chain's last commit (the record's parent) */
	int64_t prev_changed;     /* and its count of changed files */
	char *count_from;         /* changes are counted from this tree-ish */
	int rounds;
	struct strv nested;       /* nested repositories to adopt */
	struct strv submodules;   /* gitlinks of the copied index, adopted first */
	size_t nested_i;
	struct buf adopt;         /* their files, NUL-separated */
	struct strv warnings;
	struct strv quoted;         /* names quoted for the warnings */
	struct strv unreadable;
	int64_t files;
	struct snap_proc *procs[3];
	int pending;
	/*
	 * A snapshot that starts a chain always makes a commit: the commands
	 * that write it and its refs start with the job, waiting for their
	 * input, so their start-up is not on the way to the ref.
	 */
	struct snap_proc *early_commit;   /* hash-object -t commit -w --stdin */
	struct snap_proc *early_ref;      /* update-ref --stdin */
	bool ref_done;            /* the update-ref step has run */
	bool tree_saved;          /* the index is final and its blobs stored */
	struct buf refs;          /* for-each-ref output (record_refs) */
	bool fresh;               /* the private index was just copied from the user's */
	bool need_fix;            /* some copied entries must be hashed afresh */
	bool fixed;
	bool added;               /* git add has run since the last index change */
	bool autocrlf;            /* the user's git converts line endings */
	struct buf names;         /* the copied index's paths (for check-attr) */
	struct buf rehash;        /* paths to drop from it, to be hashed raw */
	char *tree;
	int64_t entries;          /* the index's entries in the tree; -1 unknown */
	char *commit;
	int64_t changed;
	char *error;
	void (*progress)(void *, int64_t);
	snap_done_cb done;
	void *arg;
	bool *finished;           /* set when the job is over */
};

static bool snap_take_add(struct snap_take *);
static void snap_take_write_tree(struct snap_take *);
static void snap_take_after_prep(struct snap_take *);
static void snap_take_fix(struct snap_take *);

void
snap_result_clear(struct snap_result *res)
{
	size_t i;

	free(res->commit);
	free(res->tree);
	for (i = 0; i < res->nwarnings; i++)
		free(res->warnings[i]);
	free(res->warnings);
	for (i = 0; i < res->nunreadable; i++)
		free(res->unreadable[i]);
	free(res->unreadable);
	memset(res, 0, sizeof *res);
}

static void
snap_take_free(struct snap_take *t)
{
	size_t i;

	for (i = 0; i < nitems(t->procs); i++)
		snap_proc_free(t->procs[i]);
	snap_proc_free(t->early_commit);
	snap_proc_free(t->early_ref);
	free(t->kind);
	free(t->label);
	free(t->parent);
	free(t->head_ref);
	free(t->head_tree);
	free(t->prev_tree);
	free(t->prev_commit);
	free(t->count_from);
	strv_free(&t->nested);
	strv_free(&t->submodules);
	buf_free(&t->adopt);
	strv_free(&t->warnings);
	strv_free(&t->quoted);
	strv_free(&t->unreadable);
	buf_free(&t->refs);
	buf_free(&t->names);
	buf_free(&t->rehash);
	free(t->tree);
	free(t->commit);
	free(t->error);
	free(t);
}

/* Slot I's process is done with; frees it. */
static void
snap_take_reap(struct snap_take *t, struct snap_proc *p)
{
	size_t i;

	for (i = 0; i < nitems(t->procs); i++) {
		if (t->procs[i] == p) {
			snap_proc_free(p);
			t->procs[i] = NULL;
		}
	}
}

static void
snap_take_track(struct snap_take *t, struct snap_proc *p)
{
	size_t i;

	for (i = 0; i < nitems(t->procs); i++) {
		if (t->procs[i] == NULL) {
			t->procs[i] = p;
			t->pending++;
			return;
		}
	}
	fatalx("snapshot: too many git commands at once");
}

/*
 * P, started early, ended before it was given its input: it failed to
 * start (its step runs a command of its own instead). True if so.
 */
static bool
snap_take_early_died(struct snap_take *t, struct snap_proc *p)
{
	struct snap_proc **slot = p == t->early_commit ? &t->early_commit :
	    p == t->early_ref ? &t->early_ref : NULL;

	if (slot == NULL)
		return false;
	log_debug("%s", snap_proc_err(p)->data != NULL ?
	    snap_proc_err(p)->data : "an early git command ended");
	*slot = NULL;
	snap_proc_free(p);
	return true;
}

/* Gives the early command in *SLOT its input and makes it a step of the job. */
static void
snap_take_feed(struct snap_take *t, struct snap_proc **slot,
    const struct buf *in)
{
	struct snap_proc *p = *slot;

	*slot = NULL;
	snap_take_track(t, p);
	snap_proc_input(p, in->data, in->len);
}

/* Starts a git step; false (with t->error set) if it cannot run. */
static bool
snap_take_spawn(struct snap_take *t, enum snap_env env,
    const char *const *args, const struct buf *input,
    void (*line)(void *, const char *, size_t), snap_proc_cb cb)
{
	struct snap_proc *p;
	char *cause = NULL;

	p = snap_git_start(t->base, t->repo, env, args, input, line, cb, t,
	    &cause);
	if (p == NULL) {
		if (t->error == NULL)
			t->error = cause;
		else
			free(cause);
		return false;
	}
	snap_take_track(t, p);
	return true;
}

/* Moves the strv's strings into a plain array for the result. */
static char **
snap_take_strings(struct strv *sv, size_t *n)
{
	char **v = NULL;
	size_t i;

	*n = sv->n;
	if (sv->n > 0) {
		v = xcalloc(sv->n, sizeof *v);
		for (i = 0; i < sv->n; i++)
			v[i] = xstrdup(sv->v[i]);
	}
	return v;
}

static void
snap_take_end(struct snap_take *t, struct snap_result *res)
{
	if (t->progress != NULL && t->files > 0)
		t->progress(t->arg, t->files);
	if (t->finished != NULL)
		*t->finished = true;
	if (t->done != NULL)
		t->done(t->arg, t->error == NULL ? res : NULL, t->error);
	snap_take_free(t);
}

static void
snap_take_fail(struct snap_take *t, char *error)
{
	if (t->error == NULL)
		t->error = error;
	else
		free(error);
	if (t->pending == 0)
		snap_take_end(t, NULL);
}

/* Fills the result from what the job found; the strings are copied. */
static void
snap_take_result(struct snap_take *t, struct snap_result *res)
{
	memset(res, 0, sizeof *res);
	res->session = t->session;
	res->commit = t->commit != NULL ? xstrdup(t->commit) : NULL;
	res->tree = t->tree != NULL ? xstrdup(t->tree) : NULL;
	res->files_changed = t->changed;
	res->warnings = snap_take_strings(&t->warnings, &res->nwarnings);
	res->unreadable = snap_take_strings(&t->unreadable, &res->nunreadable);
}

/* Records HEAD and the branch tips as they are at session start. */
static void
snap_take_record_refs(struct snap_take *t)
{
	char *line, *save = NULL, *sp, *head, *sym = NULL, *v;

	/* "<oid> <refname> <tree>" (a ref name has no spaces). */
	for (line = strtok_r(t->refs.data, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		if ((sp = strchr(line, ' ')) == NULL)
			continue;
		*sp++ = '\0';
		sp[strcspn(sp, " ")] = '\0';
		store_session_ref_add(t->st, t->session, sp, line);
	}
	head = snap_repo_head(t->repo, &sym);
	v = sym != NULL ? xprintf("ref: %s", sym) : head;
	if (v != NULL)
		store_session_ref_add(t->st, t->session, "HEAD", v);
	if (v != head)
		free(v);
	free(head);
	free(sym);
}

/* Counts snapshots of the session up to ID: the number users type. */
static int64_t
snap_take_seq(struct store *st, int64_t session, int64_t id)
{
	struct store_snapshot **v;
	size_t n, i;
	int64_t seq = 0;

	v = store_snapshot_list(st, session, &n);
	for (i = 0; i < n; i++) {
		if (v[i]->id <= id)
			seq++;
	}
	store_snapshot_list_free(v, n);
	return seq;
}

static void
snap_take_record(struct snap_take *t)
{
	struct store_snapshot s;
	struct snap_result res;
	char *ref, *cause = NULL, *q;
	int64_t id;

	snap_take_result(t, &res);
	if (t->kind == NULL) {
		snap_take_end(t, &res);
		snap_result_clear(&res);
		return;
	}
	ref = xprintf("refs/agentmux/sessions/%lld", (long long)t->session);
	memset(&s, 0, sizeof s);
	s.session_id = t->session;
	s.label = t->label;
	s.kind = t->kind;
	s.commit = t->commit;
	s.tree = t->tree;
	s.parent = t->prev_commit;
	s.ref = ref;
	s.files_changed = t->changed;
	if (snap_repo_record(t->st, t->session, t->repo, &cause) == -1 ||
	    (id = store_snapshot_add(t->st, &s, &cause)) == -1) {
		free(ref);
		snap_result_clear(&res);
		snap_take_fail(t, cause);
		return;
	}
	free(ref);
	if (t->record_refs)
		snap_take_record_refs(t);
	if (t->unreadable.n > 0) {
		q = quote_name(t->unreadable.v[0]);
		store_event_add(t->st, t->session, "warn", "snapshot",
		    "snapshot %lld could not save %zu unreadable path(s), e.g. "
		    "%s", (long long)id, t->unreadable.n, q);
		free(q);
	}
	snap_repo_save_index(t->repo);
	res.id = id;
	res.seq = snap_take_seq(t->st, t->session, id);
	snap_take_end(t, &res);
	snap_result_clear(&res);
}

/* One step of the parallel tail is done; the last one records. */
static void
snap_take_step_done(struct snap_take *t)
{
	if (t->pending > 0)
		return;
	if (t->error != NULL)
		snap_take_end(t, NULL);
	else
		snap_take_record(t);
}

static char *
snap_take_oid(struct snap_proc *p)
{
	struct buf *out = snap_proc_out(p);

	if (out->data == NULL)
		return xstrdup("");
	return xstrndup(out->data, strcspn(out->data, " \t\n"));
}

static void
snap_take_update_ref_cb(struct snap_proc *p, void *arg)
{
	struct snap_take *t = arg;

	if (snap_take_early_died(t, p))
		return;
	t->pending--;
	t->ref_done = true;
	if (snap_proc_status(p) != 0 && t->error == NULL)
		t->error = snap_git_error("update-ref", p);
	snap_take_reap(t, p);
	snap_take_step_done(t);
}

static const char *const snap_take_update_ref[] = { "update-ref", "-m",
    "agentmux snapshot", "--stdin", NULL };

/* The commit is written (by commit-tree, or hash-object given its text). */
static void
snap_take_commit_cb(struct snap_proc *p, void *arg)
{
	struct snap_take *t = arg;
	struct buf in;

	if (snap_take_early_died(t, p))
		return;
	t->pending--;
	if (snap_proc_status(p) != 0) {
		if (t->error == NULL)
			t->error = snap_git_error("commit", p);
		snap_take_reap(t, p);
		snap_take_step_done(t);
		return;
	}
	t->commit = snap_take_oid(p);
	snap_take_reap(t, p);
	if (t->error != NULL) {
		snap_take_step_done(t);
		return;
	}
	/*
	 * The chain's tip, and a ref of the snapshot's own: an agent that marks
	 * snapshot commits shallow would make gc drop every snapshot behind
	 * the tip, but never one a ref points at.
	 */
	buf_init(&in);
	buf_printf(&in, "update refs/agentmux/sessions/%lld %s\n"
	    "update refs/agentmux/snaps/%lld/%s %s\n", (long long)t->session,
	    t->commit, (long long)t->session, t->commit, t->commit);
	if (t->early_ref != NULL)
		snap_take_feed(t, &t->early_ref, &in);
	else
		snap_take_spawn(t, SNAP_ENV_DB, snap_take_update_ref, &in, NULL,
		    snap_take_update_ref_cb);
	buf_free(&in);
	snap_take_step_done(t);
}

static void
snap_take_count_cb(struct snap_proc *p, void *arg)
{
	struct snap_take *t = arg;
	struct buf *out = snap_proc_out(p);
	size_t i;

	t->pending--;
	if (snap_proc_status(p) != 0) {
		if (t->error == NULL)
			t->error = snap_git_error("diff-tree", p);
	} else {
		for (i = 0, t->changed = 0; i < out->len; i++)
			t->changed += out->data[i] == '\0';
	}
	snap_take_reap(t, p);
	snap_take_step_done(t);
}

/* The tree of HEAD's branch, if for-each-ref saw it where the chain started. */
static void
snap_take_head_tree(struct snap_take *t)
{
	const char *line, *end, *ref, *tree;
	size_t n;

	if (t->head_ref == NULL || t->parent == NULL || t->refs.data == NULL)
		return;
	n = strlen(t->head_ref);
	for (line = t->refs.data; *line != '\0'; line = end + (*end != '\0')) {
		end = strchrnul(line, '\n');
		if ((ref = memchr(line, ' ', (size_t)(end - line))) == NULL ||
		    strncmp(ref + 1, t->head_ref, n) != 0 || ref[1 + n] != ' ')
			continue;
		tree = ref + 2 + n;
		if ((size_t)(ref - line) == strlen(t->parent) &&
		    strncmp(line, t->parent, (size_t)(ref - line)) == 0 &&
		    end > tree)
			t->head_tree = xstrndup(tree, (size_t)(end - tree));
		return;
	}
}

static void
snap_take_refs_cb(struct snap_proc *p, void *arg)
{
	struct snap_take *t = arg;

	t->pending--;
	if (snap_proc_status(p) != 0 && t->error == NULL)
		t->error = snap_git_error("for-each-ref", p);
	else {
		buf_add(&t->refs, snap_proc_out(p)->data, snap_proc_out(p)->len);
		snap_take_head_tree(t);
	}
	snap_take_reap(t, p);
	/* The add may still be running; whichever ends last moves on. */
	if (t->pending == 0)
		snap_take_after_prep(t);
}

static char *
snap_take_message(struct snap_take *t)
{
	return xprintf("agentmux snapshot: %s, session %lld%s%s\n", t->kind,
	    (long long)t->session, t->label != NULL ? "\n\n" : "",
	    t->label != NULL ? t->label : "");
}

/*
 * The commit object as commit-tree writes it, for the early hash-object:
 * its author and committer are agentmux, now, in the local time zone.
 */
static void
snap_take_commit_text(struct snap_take *t, struct buf *b)
{
	time_t now = time(NULL);
	struct tm tm;
	long off;
	char *msg;

	localtime_r(&now, &tm);
	off = tm.tm_gmtoff / 60;
	buf_printf(b, "tree %s\n", t->tree);
	if (t->parent != NULL)
		buf_printf(b, "parent %s\n", t->parent);
	buf_printf(b, "author agentmux <agentmux@localhost> %lld %c%02ld%02ld\n"
	    "committer agentmux <agentmux@localhost> %lld %c%02ld%02ld\n\n",
	    (long long)now, off < 0 ? '-' : '+', labs(off) / 60, labs(off) % 60,
	    (long long)now, off < 0 ? '-' : '+', labs(off) / 60, labs(off) % 60);
	msg = snap_take_message(t);
	buf_adds(b, msg);
	free(msg);
}

static bool
snap_take_commit_tree(struct snap_take *t)
{
	struct strv args;
	bool ok;

	strv_init(&args);
	strv_add(&args, "commit-tree");
	if (t->parent != NULL) {
		strv_add(&args, "-p");
		strv_add(&args, t->parent);
	}
	strv_add(&args, "-m");
	strv_take(&args, snap_take_message(t));
	strv_add(&args, t->tree);
	ok = snap_take_spawn(t, SNAP_ENV_DB, (const char *const *)args.v, NULL,
	    NULL, snap_take_commit_cb);
	strv_free(&args);
	return ok;
}

/*
 * What changed since t->count_from, without git where it is known: nothing
 * if the trees are the same (HEAD's is known from for-each-ref), every
 * entry of the index if it counts from the empty tree and the tree is the
 * index's.
 */
static bool
snap_take_count(struct snap_take *t)
{
	const char *count[] = { "diff-tree", "-r", "-z", "--no-renames",
	    "--name-only", t->count_from, t->tree, NULL };

	if (strcmp(t->count_from, t->tree) == 0 || (t->head_tree != NULL &&
	    strcmp(t->count_from, t->parent) == 0 &&
	    strcmp(t->head_tree, t->tree) == 0)) {
		t->changed = 0;
		return true;
	}
	if (t->entries >= 0 &&
	    strcmp(t->count_from, snap_repo_empty_tree(t->repo)) == 0) {
		t->changed = t->entries;
		return true;
	}
	return snap_take_spawn(t, SNAP_ENV_DB, count, NULL, NULL,
	    snap_take_count_cb);
}

/* The tree is written: commit it and count what changed, in parallel. */
static void
snap_take_commit(struct snap_take *t)
{
	struct buf text;
	bool ok;

	if (t->kind == NULL) {
		snap_take_record(t);
		return;
	}
	if (t->early_commit != NULL) {
		buf_init(&text);
		snap_take_commit_text(t, &text);
		snap_take_feed(t, &t->early_commit, &text);
		buf_free(&text);
		ok = true;
	} else
		ok = snap_take_commit_tree(t);
	if (!ok || !snap_take_count(t))
		snap_take_fail(t, NULL);
}

/* The tree is known: done if it did not change, else on to the commit. */
static void
snap_take_have_tree(struct snap_take *t)
{
	if (t->if_changed && t->prev_tree != NULL &&
	    strcmp(t->prev_tree, t->tree) == 0) {
		struct snap_result res;

		snap_take_result(t, &res);
		res.unchanged = true;
		snap_take_end(t, &res);
		snap_result_clear(&res);
		return;
	}
	/* Nothing changed since the last one: it is recorded again, as it is. */
	if (t->kind != NULL && t->prev_tree != NULL &&
	    strcmp(t->prev_tree, t->tree) == 0) {
		t->commit = xstrdup(t->prev_commit);
		t->changed = t->prev_changed;
		snap_take_record(t);
		return;
	}
	snap_take_commit(t);
}

static size_t
snap_take_oidlen(struct snap_take *t)
{
	return strcmp(t->repo->format, "sha1") == 0 ? 20 : 32;
}

static void
snap_take_write_tree_cb(struct snap_proc *p, void *arg)
{
	struct snap_take *t = arg;
	char *cached = NULL;

	t->pending--;
	if (snap_proc_status(p) != 0) {
		t->error = snap_git_error("write-tree", p);
		snap_take_reap(t, p);
		snap_take_end(t, NULL);
		return;
	}
	t->tree = snap_take_oid(p);
	snap_take_reap(t, p);
	/* write-tree keeps the tree in the index: its entry count comes with it. */
	if (snap_index_tree(t->repo->index, snap_take_oidlen(t), &cached,
	    &t->entries) != 1 || strcmp(cached, t->tree) != 0)
		t->entries = -1;
	free(cached);
	snap_take_have_tree(t);
}

/*
 * The tree of the private index as git keeps it in the index itself (its
 * cache-tree, invalidated by git on every change to an entry): what
 * write-tree would print, without running it. git takes a valid cache as
 * it is if the tree object exists; so does this, if the object is loose
 * (or the empty tree, which git never needs stored); else NULL.
 */
static char *
snap_take_cached_tree(struct snap_take *t)
{
	char *tree = NULL, *path;
	bool ok;

	if (snap_index_tree(t->repo->index, snap_take_oidlen(t), &tree,
	    &t->entries) != 1)
		return NULL;
	path = xprintf("%s/objects/%.2s/%s", t->repo->commondir, tree,
	    tree + 2);
	ok = strcmp(tree, snap_repo_empty_tree(t->repo)) == 0 ||
	    access(path, F_OK) == 0;
	free(path);
	if (!ok) {
		free(tree);
		t->entries = -1;
		return NULL;
	}
	return tree;
}

static void
snap_take_write_tree(struct snap_take *t)
{
	const char *args[] = { "write-tree", NULL };

	/* From here on only the private index is read, not the work tree. */
	t->tree_saved = true;
	if ((t->tree = snap_take_cached_tree(t)) != NULL) {
		snap_take_have_tree(t);
		return;
	}
	if (!snap_take_spawn(t, SNAP_ENV_TREE, args, NULL, NULL,
	    snap_take_write_tree_cb))
		snap_take_end(t, NULL);
}

/* Paths inside quotes on git's message line, e.g. "error: unable to index file 'x'". */
static void
snap_take_quoted(struct strv *sv, const char *line, const char *prefix)
{
	size_t n = strlen(prefix), len;

	if (strncmp(line, prefix, n) != 0)
		return;
	line += n;
	len = strlen(line);
	if (len > 0 && line[len - 1] == '\'')
		len--;
	if (len > 0 && line[len - 1] == '/')
		len--;
	strv_take(sv, xstrndup(line, len));
}

/*
 * Reads git add's complaints: nested repositories to adopt, files and
 * dirs it could not read (reported, and never touched by undo).
 */
static void
snap_take_parse_add(struct snap_take *t, char *err)
{
	char *line, *save = NULL;
	size_t before = t->nested.n;

	for (line = strtok_r(err, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "warning: adding embedded git repository: ",
		    41) == 0) {
			strv_add(&t->nested, line + 41);
			continue;
		}
		if (strncmp(line, "error: '", 8) == 0 && strstr(line,
		    "' does not have a commit checked out") != NULL) {
			strv_take(&t->nested, xstrndup(line + 8,
			    strcspn(line + 8, "'")));
			continue;
		}
		snap_take_quoted(&t->unreadable, line,
		    "error: unable to index file '");
		snap_take_quoted(&t->unreadable, line,
		    "warning: could not open directory '");
		if (strncmp(line, "error: ", 7) == 0 ||
		    strncmp(line, "warning: ", 9) == 0 ||
		    strncmp(line, "fatal: ", 7) == 0)
			strv_add(&t->warnings, line);
	}
	/* Trailing slashes: "sub/" names the dir. */
	for (; before < t->nested.n; before++) {
		char *s = t->nested.v[before];
		size_t len = strlen(s);

		if (len > 1 && s[len - 1] == '/')
			s[len - 1] = '\0';
	}
}

static void
snap_take_update_index_cb(struct snap_proc *p, void *arg)
{
	struct snap_take *t = arg;

	t->pending--;
	if (snap_proc_status(p) != 0)
		strv_take(&t->warnings, snap_git_error("update-index", p));
	snap_take_reap(t, p);
	t->added = false;
	snap_take_after_prep(t);
}

static void snap_take_adopt_next(struct snap_take *);

static void
snap_take_ls_cb(struct snap_proc *p, void *arg)
{
	struct snap_take *t = arg;
	struct buf *out = snap_proc_out(p);
	const char *dir = t->nested.v[t->nested_i], *s;
	size_t off, len;

	t->pending--;
	if (snap_proc_status(p) != 0)
		strv_take(&t->warnings, xprintf("cannot list the files of the "
		    "nested repository %s: %s", quote_keep(&t->quoted, dir),
		    snap_proc_err(p)->data));
	for (off = 0; snap_proc_status(p) == 0 && off < out->len;
	    off += len + 1) {
		s = out->data + off;
		len = strlen(s);
		if (len == 0)
			continue;
		buf_printf(&t->adopt, "%s/%s", dir, s);
		buf_addc(&t->adopt, '\0');
	}
	snap_take_reap(t, p);
	t->nested_i++;
	snap_take_adopt_next(t);
}

/*
 * Nested repositories (and submodules) are content too: their files go
 * into the private index, after which git add -A treats the dir as an
 * ordinary one (it recurses into dirs that have index entries).
 */
static void
snap_take_adopt_next(struct snap_take *t)
{
	struct snap_proc_opts o;
	struct snap_proc *p;
	char *dir, *cause = NULL;
	char *argv[] = { "git", "ls-files", "-z", "-c", "-o",
	    "--exclude-standard", NULL };
	const char *upd[] = { "update-index", "--add", "--remove", "--replace",
	    "-z", "--stdin", NULL };

	if (t->nested_i >= t->nested.n) {
		t->rounds++;
		if (t->adopt.len == 0 || !snap_take_spawn(t, SNAP_ENV_TREE, upd,
		    &t->adopt, NULL, snap_take_update_index_cb))
			snap_take_write_tree(t);
		return;
	}
	dir = xprintf("%s/%s", t->repo->worktree, t->nested.v[t->nested_i]);
	memset(&o, 0, sizeof o);
	o.argv = argv;
	o.env = t->repo->env[SNAP_ENV_NESTED].v;
	o.dir = dir;
	o.out_fd = -1;
	o.umask = -1;
	p = snap_proc_start(t->base, &o, snap_take_ls_cb, t, &cause);
	free(dir);
	if (p == NULL) {
		strv_take(&t->warnings, cause);
		t->nested_i++;
		snap_take_adopt_next(t);
		return;
	}
	snap_take_track(t, p);
}

/* Submodules (gitlinks in the copied index) with a checkout are adopted like nested repositories. */
static void
snap_take_submodules(struct snap_take *t)
{
	struct stat sb;
	char *p;
	size_t i;

	for (i = 0; i < t->submodules.n; i++) {
		p = xprintf("%s/%s/.git", t->repo->worktree, t->submodules.v[i]);
		if (lstat(p, &sb) == 0)
			strv_add(&t->nested, t->submodules.v[i]);
		free(p);
	}
}

static void
snap_take_add_cb(struct snap_proc *p, void *arg)
{
	struct snap_take *t = arg;
	int st = snap_proc_status(p);

	t->pending--;
	t->added = true;
	/* Exit 1 with --ignore-errors: some files could not be added; the index is written. */
	if (st != 0 && st != 1 && t->error == NULL)
		t->error = snap_git_error("add", p);
	strv_free(&t->nested);
	strv_init(&t->nested);
	if (t->rounds == 0)
		snap_take_submodules(t);
	if (snap_proc_err(p)->data != NULL)
		snap_take_parse_add(t, snap_proc_err(p)->data);
	snap_take_reap(t, p);
	if (t->pending == 0)
		snap_take_after_prep(t);
}

/*
 * Everything before writing the tree is done (git add, and at the start
 * the refs and the config query): hash afresh what the copied index
 * cannot be trusted with, add, adopt nested repositories, then write.
 */
static void
snap_take_after_prep(struct snap_take *t)
{
	if (t->error != NULL) {
		snap_take_end(t, NULL);
		return;
	}
	if (t->need_fix && !t->fixed) {
		t->fixed = true;
		t->added = false;
		snap_take_fix(t);
		return;
	}
	if (!t->added) {
		if (!snap_take_add(t))
			snap_take_end(t, NULL);
		return;
	}
	if (t->nested.n > 0 && t->rounds < SNAP_ADOPT_ROUNDS) {
		buf_reset(&t->adopt);
		t->nested_i = 0;
		snap_take_adopt_next(t);
		return;
	}
	snap_take_write_tree(t);
}

static void
snap_take_line(void *arg, const char *line, size_t len)
{
	struct snap_take *t = arg;

	if (len < 5 || (strncmp(line, "add '", 5) != 0 &&
	    strncmp(line, "remove '", 8) != 0))
		return;
	if (++t->files % SNAP_PROGRESS_STEP == 0 && t->progress != NULL)
		t->progress(t->arg, t->files);
}

static bool
snap_take_add(struct snap_take *t)
{
	const char *args[] = { "add", "-A", "--ignore-errors", "--verbose",
	    NULL };

	/* A second round's warnings replace the first's. */
	strv_free(&t->warnings);
	strv_free(&t->quoted);
	strv_init(&t->warnings);
	strv_init(&t->quoted);
	strv_free(&t->unreadable);
	strv_init(&t->unreadable);
	return snap_take_spawn(t, SNAP_ENV_TREE, args, NULL, snap_take_line,
	    snap_take_add_cb);
}

/* Whether a file whose stat data matches can hold other bytes than the blob git recorded. */
static bool
snap_take_converts(const char *attr, const char *value, bool autocrlf)
{
	bool set = strcmp(value, "unspecified") != 0 &&
	    strcmp(value, "unset") != 0;

	if (strcmp(attr, "text") == 0)
		return set || (autocrlf && strcmp(value, "unspecified") == 0);
	if (strcmp(attr, "ident") == 0)
		return strcmp(value, "set") == 0;
	return set; /* eol, filter, working-tree-encoding */
}

static void
snap_take_rehash_cb(struct snap_proc *p, void *arg)
{
	struct snap_take *t = arg;

	t->pending--;
	if (snap_proc_status(p) != 0 && t->error == NULL)
		t->error = snap_git_error("update-index", p);
	snap_take_reap(t, p);
	if (t->pending == 0)
		snap_take_after_prep(t);
}

/* Drops the entries to hash afresh from the private index; add puts them back raw. */
static const char *const snap_take_rehash_args[] = { "update-index",
    "--force-remove", "-z", "--stdin", NULL };

static void
snap_take_rehash(struct snap_take *t)
{
	if (t->rehash.len == 0 || !snap_take_spawn(t, SNAP_ENV_TREE,
	    snap_take_rehash_args, &t->rehash, NULL, snap_take_rehash_cb))
		snap_take_after_prep(t);
}

/* Reads check-attr -z: "path\0attr\0value\0" for each path and attribute. */
static void
snap_take_attr_cb(struct snap_proc *p, void *arg)
{
	struct snap_take *t = arg;
	struct buf *out = snap_proc_out(p);
	const char *f[3], *last = "";
	size_t off = 0, i;

	t->pending--;
	if (snap_proc_status(p) != 0 && t->error == NULL)
		t->error = snap_git_error("check-attr", p);
	while (t->error == NULL && off < out->len) {
		for (i = 0; i < 3 && off < out->len; i++) {
			f[i] = out->data + off;
			off += strlen(f[i]) + 1;
		}
		if (i < 3)
			break;
		if (strcmp(f[0], last) != 0 &&
		    snap_take_converts(f[1], f[2], t->autocrlf)) {
			buf_adds(&t->rehash, f[0]);
			buf_addc(&t->rehash, '\0');
			last = f[0];
		}
	}
	snap_take_reap(t, p);
	snap_take_rehash(t);
}

/*
 * The copied index trusts stat data, so a file that is unchanged keeps
 * the blob the user's git made of it: with line-ending conversion or a
 * clean filter that is not the bytes on disk. Such paths (found with the
 * user's attributes) are hashed afresh, through ours (none).
 */
static const char *const snap_take_attr_args[] = { "check-attr", "-z",
    "--stdin", "text", "eol", "filter", "ident", "working-tree-encoding",
    NULL };

static void
snap_take_fix(struct snap_take *t)
{
	if (t->names.len == 0 || !snap_take_spawn(t, SNAP_ENV_DB,
	    snap_take_attr_args, &t->names, NULL, snap_take_attr_cb))
		snap_take_rehash(t);
}

/*
 * The fix as the job's first step, when no query runs whose end would
 * start it: its first command starts here (the job ends on the loop,
 * never inside snap_take_start); false with t->error if it cannot.
 */
static bool
snap_take_fix_first(struct snap_take *t)
{
	t->fixed = true;
	t->added = false;
	if (t->names.len > 0)
		return snap_take_spawn(t, SNAP_ENV_DB, snap_take_attr_args,
		    &t->names, NULL, snap_take_attr_cb);
	if (t->rehash.len > 0)
		return snap_take_spawn(t, SNAP_ENV_TREE, snap_take_rehash_args,
		    &t->rehash, NULL, snap_take_rehash_cb);
	return snap_take_add(t);
}

static void
snap_take_config_cb(struct snap_proc *p, void *arg)
{
	struct snap_take *t = arg;
	struct buf *out = snap_proc_out(p);
	const char *scope, *kv;
	size_t off = 0;

	t->pending--;
	/* "scope\0key\nvalue\0"; our own settings come as scope "command". */
	while (off < out->len) {
		scope = out->data + off;
		off += strlen(scope) + 1;
		if (off >= out->len)
			break;
		kv = out->data + off;
		off += strlen(kv) + 1;
		if (strcmp(scope, "command") == 0)
			continue;
		if (strncmp(kv, "core.autocrlf\n", 14) == 0)
			t->autocrlf = strcmp(kv + 14, "false") != 0;
		else
			t->need_fix = true; /* core.attributesfile */
	}
	if (t->autocrlf)
		t->need_fix = true;
	snap_take_reap(t, p);
	if (t->pending == 0)
		snap_take_after_prep(t);
}

/* Whether DIR/NAME is a non-empty file (DIR NULL: no). */
static bool
snap_take_exists(const char *dir, const char *name)
{
	struct stat sb;
	char *p;
	bool yes;

	if (dir == NULL)
		return false;
	p = xprintf("%s/%s", dir, name);
	yes = stat(p, &sb) == 0 && sb.st_size > 0;
	free(p);
	return yes;
}

/*
 * Right after copying the user's index: what in it must be hashed afresh.
 * Attribute files and assume-unchanged bits are read here; the config
 * (core.autocrlf, core.attributesFile) is asked while git add runs
 * (snap_take_ask_config).
 */
static void
snap_take_check_seed(struct snap_take *t)
{
	struct snap_index_info info;
	const char *xdg = getenv("XDG_CONFIG_HOME");
	size_t off;

	if (snap_index_scan(t->repo->index, strcmp(t->repo->format, "sha1") ==
	    0 ? 20 : 32, &info) == 0) {
		buf_add(&t->names, info.names.data, info.names.len);
		buf_add(&t->rehash, info.assumed.data, info.assumed.len);
		for (off = 0; off < info.gitlinks.len; off += strlen(
		    info.gitlinks.data + off) + 1)
			strv_add(&t->submodules, info.gitlinks.data + off);
		t->need_fix = info.attributes || info.nassumed > 0;
		snap_index_info_free(&info);
	}
	if (snap_take_exists(t->repo->commondir, "info/attributes") ||
	    snap_take_exists(xdg != NULL && *xdg == '/' ? xdg : NULL,
	    "git/attributes") || snap_take_exists(path_home(),
	    ".config/git/attributes") || snap_take_exists("/etc",
	    "gitattributes"))
		t->need_fix = true;
}

/* Whether PATH (absent, or without any of WORDS in any case) cannot matter. */
static bool
snap_take_file_silent(const char *path, const char *const *words)
{
	struct buf b;
	size_t i;
	bool silent = true;

	buf_init(&b);
	if (buf_read_file(&b, path) == -1) {
		buf_free(&b);
		return errno == ENOENT || errno == ENOTDIR;
	}
	for (i = 0; b.data != NULL && words[i] != NULL && silent; i++)
		silent = strcasestr(b.data, words[i]) == NULL;
	buf_free(&b);
	return silent;
}

/*
 * Whether no config git reads for the repository could set core.autocrlf
 * or core.attributesFile: none of its files (system, global, the
 * repository's) names either, or includes another. Only then is asking
 * git spared; anything else is for git to answer.
 */
static bool
snap_take_config_silent(struct snap_take *t)
{
	static const char *const words[] = { "autocrlf", "attributesfile",
	    "include", NULL };
	const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
	char *files[5];
	size_t n = 0, i;
	bool silent = true;

	files[n++] = xstrdup("/etc/gitconfig");
	if (xdg != NULL && *xdg != '\0')
		files[n++] = xprintf("%s/git/config", xdg);
	else if (home != NULL)
		files[n++] = xprintf("%s/.config/git/config", home);
	if (home != NULL)
		files[n++] = xprintf("%s/.gitconfig", home);
	files[n++] = xprintf("%s/config", t->repo->commondir);
	files[n++] = xprintf("%s/config.worktree", t->repo->gitdir);
	for (i = 0; i < n; i++) {
		silent = silent && snap_take_file_silent(files[i], words);
		free(files[i]);
	}
	return silent;
}

static bool
snap_take_ask_config(struct snap_take *t)
{
	const char *args[] = { "config", "-z", "--show-scope",
	    "--get-regexp", "^core\\.(autocrlf|attributesfile)$", NULL };

	return snap_take_spawn(t, SNAP_ENV_DB, args, NULL, NULL,
	    snap_take_config_cb);
}

/* The chain so far: the parent, the last tree, where changes count from. */
static void
snap_take_chain(struct snap_take *t)
{
	struct store_snapshot **v;
	char *sym = NULL;
	size_t n;

	n = 0;
	v = t->session > 0 ? store_snapshot_list(t->st, t->session, &n) : NULL;
	if (n > 0) {
		t->parent = xstrdup(v[n - 1]->commit);
		t->prev_commit = xstrdup(v[n - 1]->commit);
		t->prev_tree = xstrdup(v[n - 1]->tree);
		/*
		 * Later snapshots count from the first one's tree: the same
		 * tree as the last one has its count, unless the last one is
		 * the first (whose count is from HEAD): then nothing changed.
		 */
		t->prev_changed = n > 1 ? v[n - 1]->files_changed : 0;
		t->count_from = xstrdup(v[0]->tree);
	} else {
		t->parent = snap_repo_head(t->repo, &sym);
		t->count_from = xstrdup(t->parent != NULL ? t->parent :
		    snap_repo_empty_tree(t->repo));
		t->head_ref = sym;
		sym = NULL;
	}
	free(sym);
	store_snapshot_list_free(v, n);
}

/* Keeps the user's index as it was at session start, for undo --refs. */
static void
snap_take_save_user_index(struct snap_take *t)
{
	char *data, *dir, *dst, *cause = NULL;

	if (t->repo->shadow || access(t->repo->seed, R_OK) != 0 ||
	    (data = path_data_dir(&cause)) == NULL) {
		free(cause);
		return;
	}
	dir = xprintf("%s/sessions/%lld", data, (long long)t->session);
	dst = xprintf("%s/git-index", dir);
	if (path_mkdir_p(dir, 0700) == -1 ||
	    snap_copy_file(t->repo->seed, dst, &cause) == -1) {
		strv_take(&t->warnings, xprintf("cannot keep a copy of the "
		    "index: %s", cause != NULL ? cause : strerror(errno)));
		free(cause);
	}
	free(dst);
	free(dir);
	free(data);
}

/* The first snapshot of a chain makes a commit: start its writers now. */
static void
snap_take_early(struct snap_take *t)
{
	const char *hash[] = { "hash-object", "-t", "commit", "-w", "--stdin",
	    NULL };
	char *cause = NULL;

	t->early_commit = snap_git_start_held(t->base, t->repo, SNAP_ENV_DB,
	    hash, snap_take_commit_cb, t, &cause);
	if (t->early_commit != NULL)
		t->early_ref = snap_git_start_held(t->base, t->repo,
		    SNAP_ENV_DB, snap_take_update_ref, snap_take_update_ref_cb,
		    t, &cause);
	/* Not fatal: the steps run their own commands then. */
	if (cause != NULL)
		log_debug("%s", cause);
	free(cause);
}

struct snap_take *
snap_take_start(struct event_base *base, struct store *st,
    struct snap_repo *repo, const struct snap_take_opts *o,
    void (*progress)(void *, int64_t), snap_done_cb done, void *arg,
    char **cause)
{
	struct snap_take *t = xcalloc(1, sizeof *t);
	const char *refs[] = { "for-each-ref", "--format=%(objectname) "
	    "%(refname) %(tree)", "refs/heads/", NULL };

	t->base = base;
	t->st = st;
	t->repo = repo;
	t->kind = o->kind != NULL ? xstrdup(o->kind) : NULL;
	t->label = o->label != NULL ? xstrdup(o->label) : NULL;
	t->session = o->session;
	t->if_changed = o->if_changed;
	t->record_refs = o->record_refs && !repo->shadow;
	t->progress = progress;
	t->done = done;
	t->arg = arg;
	strv_init(&t->nested);
	strv_init(&t->submodules);
	strv_init(&t->warnings);
	strv_init(&t->quoted);
	strv_init(&t->unreadable);
	t->entries = -1;
	snap_take_chain(t);
	t->fresh = !repo->seeded && !repo->shadow;
	if (!repo->seeded && snap_repo_seed(repo, cause) == -1)
		goto fail;
	if (t->fresh)
		snap_take_check_seed(t);
	/*
	 * Unless the copy needs fixing first, add while the queries run; it
	 * takes longest, so it starts first.
	 */
	if (!t->need_fix && !snap_take_add(t))
		goto fail_error;
	if (t->fresh && !snap_take_config_silent(t) && !snap_take_ask_config(t))
		goto fail_error;
	if (t->record_refs) {
		snap_take_save_user_index(t);
		if (!snap_take_spawn(t, SNAP_ENV_DB, refs, NULL, NULL,
		    snap_take_refs_cb))
			goto fail_error;
	}
	if (t->need_fix && t->pending == 0 && !snap_take_fix_first(t))
		goto fail_error;
	if (t->kind != NULL && t->prev_tree == NULL)
		snap_take_early(t);
	return t;
fail_error:
	*cause = t->error;
	t->error = NULL;
fail:
	snap_take_free(t);
	return NULL;
}

void
snap_take_cancel(struct snap_take *t)
{
	if (t != NULL)
		snap_take_free(t);
}

/* Moves the job's commands' watchers to BASE. */
static void
snap_take_move(struct snap_take *t, struct event_base *base)
{
	size_t i;

	t->base = base;
	for (i = 0; i < nitems(t->procs); i++) {
		if (t->procs[i] != NULL)
			snap_proc_move(t->procs[i], base);
	}
	if (t->early_commit != NULL)
		snap_proc_move(t->early_commit, base);
	if (t->early_ref != NULL)
		snap_proc_move(t->early_ref, base);
}

/*
 * Whether the work tree may change now without harm to the snapshot: once
 * its ref is written; in a shadow repository (in agentmux's data dir, out
 * of any jail's reach, where nothing can prune the new objects) as soon as
 * the tree is saved in the private index.
 */
static bool
snap_take_ref_safe(struct snap_take *t)
{
	return t->ref_done || (t->tree_saved && t->repo->shadow);
}

/*
 * Runs the job on a private loop (blocking) until it is over, or, with
 * UNTIL_REF, until the work tree may change (snap_take_ref_safe): then what
 * is left (commit, ref, record) goes back to the job's own loop.
 */
static void
snap_take_run(struct snap_take *t, bool until_ref)
{
	struct event_base *base = event_base_new(), *orig = t->base;
	bool *finished = xcalloc(1, sizeof *finished);

	if (base == NULL)
		fatalx("cannot create an event loop");
	/* The job frees itself when it ends: the flag lives outside it. */
	t->finished = finished;
	snap_take_move(t, base);
	while (!*finished && !(until_ref && snap_take_ref_safe(t)))
		event_base_loop(base, EVLOOP_ONCE);
	if (!*finished) {
		t->finished = NULL;
		snap_take_move(t, orig);
	}
	free(finished);
	event_base_free(base);
}

void
snap_take_finish(struct snap_take *t)
{
	snap_take_run(t, false);
}

void
snap_take_finish_ref(struct snap_take *t)
{
	snap_take_run(t, true);
}

static void (*snap_sync_progress)(void *, int64_t);
static void *snap_sync_progress_arg;

void
snap_set_progress(void (*fn)(void *, int64_t), void *arg)
{
	snap_sync_progress = fn;
	snap_sync_progress_arg = arg;
}

struct snap_take_sync {
	struct snap_result *res;
	char *error;
};

static void
snap_take_sync_progress(void *arg, int64_t files)
{
	if (snap_sync_progress != NULL)
		snap_sync_progress(snap_sync_progress_arg, files);
}

static void
snap_take_sync_done(void *arg, const struct snap_result *res,
    const char *error)
{
	struct snap_take_sync *s = arg;
	size_t i;

	if (error != NULL) {
		s->error = xstrdup(error);
		return;
	}
	*s->res = *res;
	s->res->commit = res->commit != NULL ? xstrdup(res->commit) : NULL;
	s->res->tree = res->tree != NULL ? xstrdup(res->tree) : NULL;
	s->res->warnings = res->nwarnings > 0 ? xcalloc(res->nwarnings,
	    sizeof *s->res->warnings) : NULL;
	for (i = 0; i < res->nwarnings; i++)
		s->res->warnings[i] = xstrdup(res->warnings[i]);
	s->res->unreadable = res->nunreadable > 0 ? xcalloc(res->nunreadable,
	    sizeof *s->res->unreadable) : NULL;
	for (i = 0; i < res->nunreadable; i++)
		s->res->unreadable[i] = xstrdup(res->unreadable[i]);
}

int
snap_take_sync(struct store *st, struct snap_repo *repo,
    const struct snap_take_opts *o, struct snap_result *res, char **cause)
{
	struct event_base *base = event_base_new();
	struct snap_take_sync s;
	struct snap_take *t;

	if (base == NULL)
		fatalx("cannot create an event loop");
	memset(res, 0, sizeof *res);
	s.res = res;
	s.error = NULL;
	t = snap_take_start(base, st, repo, o, snap_take_sync_progress,
	    snap_take_sync_done, &s, cause);
	if (t != NULL)
		snap_take_finish(t);
	if (snap_sync_progress != NULL)
		snap_sync_progress(snap_sync_progress_arg, -1);
	event_base_free(base);
	if (t == NULL)
		return -1;
	if (s.error != NULL) {
		*cause = s.error;
		return -1;
	}
	return 0;
}
