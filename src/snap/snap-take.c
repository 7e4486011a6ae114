/*
 * Taking a snapshot into agentmux's own repository, as a chain of async
 * steps: the work tree into the private index (git add, with the ignore
 * rules as they are, or as the session froze them at its start), the
 * tree, the real modes beside it, the commit and its ref.
 */
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>

#include <dirent.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "snap/snap-int.h"

/* Rounds of adopting nested repositories before giving up on new ones. */
#define SNAP_ADOPT_ROUNDS 3
/* How often the free space of the own repository's disk is looked at while a snapshot is written. */
#define SNAP_TAKE_WATCH_MS 100
/* Progress is reported every this many files. */
#define SNAP_PROGRESS_STEP 250
/* A nested repository's dir gets an index entry of this name, so that git goes into it. */
#define SNAP_PLACEHOLDER ".agentmux-nested-placeholder"

struct snap_take {
	struct event_base *base;
	struct store *st;
	struct snap_repo *repo;
	char *kind;               /* NULL: a tree only, not recorded */
	char *label;
	int64_t session;
	bool if_changed;
	bool record_refs;
	bool frozen;              /* the session's frozen ignore rules, not the tree's own */
	bool freeze;              /* a start snapshot: freeze the rules it was taken with */
	bool bulk;                /* no stat cache: every file is hashed and written (into one pack) */
	bool native;              /* bulk, and agentmux's own pack writer is yet to be tried */
	struct snap_pack_job *packjob; /* that writer, at work on its thread */
	struct event *watch;      /* the reserve's watch ([limits] disk_reserve) */
	char *prev_tree;          /* the chain's last tree */
	char *prev_commit;        /* the chain's last commit (the record's parent) */
	int64_t prev_changed;     /* and its count of changed files */
	char *count_from;         /* changes are counted from this tree */
	int rounds;
	struct buf placeholders;  /* index lines that make git go into nested repositories */
	struct buf untracked;     /* frozen: files git lists as untracked, NUL-separated */
	struct strv warnings;
	struct strv unreadable;
	struct strv nonfiles;     /* saved files now a socket, FIFO or device */
	struct snap_unlock unlock; /* what the owner made unreadable, open until added */
	bool unlock_tried;        /* looked for it once (git add said it could not read) */
	int64_t files;
	time_t add_since;         /* the second the work tree was first read in */
	int64_t first_write_ms;   /* an end: nothing wrote the tree before (0: unknown) */
	struct proc *procs[6];
	int pending;
	int freezing;             /* the freeze's commands still running (not in PENDING) */
	bool counted;             /* the count of changed files is in */
	bool refs_done;           /* the project's refs are read (record_refs) */
	int refs_left;            /* of for-each-ref and the index's copy, those still running */
	struct thread_job *keep_job; /* that copy, made on a helper thread */
	struct snap_take_keep *keep;
	struct thread_job *names_job; /* the tracked names compared on a helper thread */
	char *names_cause;        /* why the user's index gave no names, or NULL */
	struct snap_take_names_job *names;
	struct thread_job *after_job; /* the index read after the add, on a helper thread */
	struct snap_take_after *after;
	bool recorded;            /* the store has the snapshot: the rest may follow */
	void (*next)(struct snap_take *); /* what runs once PENDING is 0 */
	/*
	 * A snapshot that starts a chain always makes a commit: the commands
	 * that write it and its ref start with the job, waiting for their
	 * input, so their start-up is not on the way to the ref.
	 */
	struct proc *early_ref;      /* update-ref --stdin */
	struct event *early_ev;      /* starts it in a turn of its own */
	bool commit_begun;           /* too late for it: the commit is written */
	struct buf refs;          /* for-each-ref output (record_refs) */
	struct snap_modes modes;
	bool modes_read;          /* MODES came with the pack writer's tree */
	struct buf ignores;       /* freeze: the .gitignore files' text (cat-file --batch) */
	struct strv ignore_dirs;  /* freeze: their dirs, in the same order */
	char *excludes_file;      /* freeze: the user's core.excludesFile */
	char *tree;
	int64_t entries;          /* the index's entries in the tree; -1 unknown */
	char *commit;
	int64_t changed;
	char *error;
	void (*progress)(void *, int64_t);
	snap_done_cb done;
	void *arg;
	bool *finished;           /* set when the job is over */
	void (*saved)(void *);    /* once recorded, or over (snap_take_when_saved) */
	void *saved_arg;
	bool starting;            /* inside snap_take_start: it reports errors itself */
	struct snap_result res;   /* recorded, waiting for the freeze to end */
	struct buf adopted;       /* index lines that take the placeholders out again */
	/*
	 * A worktree's start from what its checkout hashed (snap_pack_seed):
	 * the files git wrote are not read; their blobs are brought in from
	 * the project's objects (pack-objects there, index-pack here, then
	 * each id looked up) beside the job's steps, and the job is over
	 * only once they are all here.
	 */
	char *co_base;            /* the commit the worktree was checked out from */
	char *co_common;          /* the project's git dir */
	char *co_index;           /* the index its checkout wrote */
	char *co_tree;            /* the commit's tree, once read (hex) */
	bool co_off;              /* the seed is not to be used (logged why) */
	bool co_attrs_read;       /* the files' attributes are looked at */
	bool dirs_read;           /* the dirs' modes are read (by the after job) */
	bool co_attrs_known;      /* CO_CONVERTED was given, learnt beside git worktree add */
	bool co_unseeded;         /* the private index is not given the tracked names: */
	bool co_names_failed;     /* (they could not be read: git's path) */
	struct buf co_tracked;    /* they come from the checkout's index, */
	struct snap_seed *co_seed; /* read, its files looked at, on a helper thread */
	struct thread_job *co_names_job; /* the index read once, for both, */
	struct snap_take_co_names *co_names;
	struct thread_job *co_look_job; /* then the seed's files looked at */
	struct snap_take_co_names *co_look;
	bool ls_failed;           /* git could not list the worktree: git add's path */
	struct strv co_converted; /* files read all the same (converted, .gitignore) */
	struct buf borrowed;      /* the blob ids taken from the index, a line each */
	int borrow_fd;            /* their pack, as pack-objects writes it */
	int borrow_lock;          /* their list, locked (snap_repo_borrow_begin) */
	int borrowing;            /* its commands still running (not in PENDING) */
	bool borrow_due;          /* one of them: the copy, held until the tree is saved */
	struct event *borrow_ev;  /* starts it in a turn after that */
};

struct snap_take_keep;
struct snap_take_names_job;
struct snap_take_after;
struct snap_take_co_names;

static void snap_take_add(struct snap_take *);
static void snap_take_native_listed(struct snap_take *);
static void snap_take_try_record(struct snap_take *);
static void snap_take_keep_free(struct snap_take_keep *);
static void snap_take_names_job_free(struct snap_take_names_job *);
static void snap_take_after_free(struct snap_take_after *);
static void snap_take_finished(struct snap_take *);
static void snap_take_added(struct snap_take *);
static void snap_take_frozen_round(struct snap_take *);
static void snap_take_co_names_free(struct snap_take_co_names *);
static void snap_take_co_names_stop(struct snap_take_co_names *);
static void snap_take_co_names(struct snap_take *);
static void snap_take_co_tree_raw(const struct snap_take *, unsigned char *);

void
snap_result_clear(struct snap_result *res)
{
	size_t i;

	free(res->commit);
	free(res->tree);
	free(res->modes);
	for (i = 0; i < res->nwarnings; i++)
		free(res->warnings[i]);
	free(res->warnings);
	for (i = 0; i < res->nunreadable; i++)
		free(res->unreadable[i]);
	free(res->unreadable);
	for (i = 0; i < res->nnonfiles; i++)
		free(res->nonfiles[i]);
	free(res->nonfiles);
	memset(res, 0, sizeof *res);
}

static void
snap_take_free(struct snap_take *t)
{
	size_t i;

	if (t->watch != NULL)
		event_free(t->watch);
	/* Waits for the index's copy, if it is still being made. */
	thread_job_free(t->keep_job);
	snap_take_keep_free(t->keep);
	thread_job_free(t->names_job);
	snap_take_names_job_free(t->names);
	thread_job_free(t->co_names_job);
	snap_take_co_names_free(t->co_names);
	/* The look gives up: what it found would go unused. */
	snap_take_co_names_stop(t->co_look);
	thread_job_free(t->co_look_job);
	snap_take_co_names_free(t->co_look);
	thread_job_free(t->after_job);
	snap_take_after_free(t->after);
	snap_pack_job_free(t->packjob);
	/* Given up before git was done: the modes go back all the same. */
	if (t->unlock.n > 0)
		snap_unlock_restore(&t->unlock, t->repo->worktree);
	for (i = 0; i < nitems(t->procs); i++)
		proc_free(t->procs[i]);
	proc_free(t->early_ref);
	if (t->early_ev != NULL)
		event_free(t->early_ev);
	free(t->kind);
	free(t->label);
	free(t->prev_tree);
	free(t->prev_commit);
	free(t->count_from);
	buf_free(&t->placeholders);
	buf_free(&t->adopted);
	buf_free(&t->untracked);
	strv_free(&t->warnings);
	free(t->names_cause);
	strv_free(&t->unreadable);
	strv_free(&t->nonfiles);
	buf_free(&t->refs);
	snap_modes_free(&t->modes);
	buf_free(&t->ignores);
	strv_free(&t->ignore_dirs);
	free(t->excludes_file);
	free(t->tree);
	free(t->commit);
	free(t->error);
	free(t->co_base);
	free(t->co_common);
	free(t->co_index);
	free(t->co_tree);
	buf_free(&t->co_tracked);
	snap_seed_free(t->co_seed);
	strv_free(&t->co_converted);
	buf_free(&t->borrowed);
	if (t->borrow_fd != -1)
		close(t->borrow_fd);
	if (t->borrow_ev != NULL)
		event_free(t->borrow_ev);
	/* Not copied: the list stays for snap_repo_borrow_resume. */
	if (t->borrow_lock != -1)
		close(t->borrow_lock);
	snap_result_clear(&t->res);
	free(t);
}

static size_t
snap_take_oidlen(struct snap_take *t)
{
	return strcmp(t->repo->format, "sha1") == 0 ? 20 : 32;
}

/* Slot I's process is done with; frees it. */
static void
snap_take_reap(struct snap_take *t, struct proc *p)
{
	size_t i;

	for (i = 0; i < nitems(t->procs); i++) {
		if (t->procs[i] == p) {
			proc_free(p);
			t->procs[i] = NULL;
		}
	}
}

static void
snap_take_track(struct snap_take *t, struct proc *p)
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

/* Notes an error (the first one counts). */
static void
snap_take_error(struct snap_take *t, char *error)
{
	if (t->error == NULL)
		t->error = error;
	else
		free(error);
}

/*
 * P, started early, ended before it was given its input: it failed to
 * start (its step runs a command of its own instead). True if so.
 */
static bool
snap_take_early_died(struct snap_take *t, struct proc *p)
{
	if (p != t->early_ref)
		return false;
	log_debug("%s", proc_err(p)->data != NULL ?
	    proc_err(p)->data : "an early git command ended");
	t->early_ref = NULL;
	proc_free(p);
	return true;
}

/* Gives the early command in *SLOT its input and makes it a step of the job. */
static void
snap_take_feed(struct snap_take *t, struct proc **slot,
    const struct buf *in)
{
	struct proc *p = *slot;

	*slot = NULL;
	snap_take_track(t, p);
	proc_input(p, in->data, in->len);
}

/* Starts a git step; false (with t->error set) if it cannot run. */
static bool
snap_take_spawn(struct snap_take *t, enum snap_env env,
    const char *const *args, const struct buf *input,
    void (*line)(void *, const char *, size_t), proc_cb cb)
{
	struct proc *p;
	char *cause = NULL;

	p = snap_git_start(t->base, t->repo, env, args, input, line, cb, t,
	    &cause);
	if (p == NULL) {
		snap_take_error(t, cause);
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

/* Tells whoever waits for the tree to be safe, once. */
static void
snap_take_tell_saved(struct snap_take *t)
{
	void (*fn)(void *) = t->saved;

	t->saved = NULL;
	if (fn != NULL)
		fn(t->saved_arg);
}

static void
snap_take_end(struct snap_take *t, struct snap_result *res)
{
	snap_take_tell_saved(t);
	if (t->progress != NULL && t->files > 0)
		t->progress(t->arg, t->files);
	if (t->finished != NULL)
		*t->finished = true;
	if (t->done != NULL)
		t->done(t->arg, t->error == NULL ? res : NULL, t->error);
	snap_take_free(t);
}

/*
 * A step's command is done: once none runs, what comes next runs (or the
 * job ends with its error).
 */
static void
snap_take_step(struct snap_take *t)
{
	void (*next)(struct snap_take *) = t->next;

	if (t->pending > 0 || t->starting)
		return;
	if (t->error != NULL) {
		snap_take_end(t, NULL);
		return;
	}
	t->next = NULL;
	if (next != NULL)
		next(t);
}

/* Fills the result from what the job found; the strings are copied. */
static void
snap_take_result(struct snap_take *t, struct snap_result *res)
{
	struct buf b;

	memset(res, 0, sizeof *res);
	res->session = t->session;
	res->commit = t->commit != NULL ? xstrdup(t->commit) : NULL;
	res->tree = t->tree != NULL ? xstrdup(t->tree) : NULL;
	res->files_changed = t->changed;
	if (t->names_cause != NULL) {
		strv_take(&t->warnings, t->names_cause);
		t->names_cause = NULL;
	}
	res->warnings = snap_take_strings(&t->warnings, &res->nwarnings);
	res->unreadable = snap_take_strings(&t->unreadable, &res->nunreadable);
	res->nonfiles = snap_take_strings(&t->nonfiles, &res->nnonfiles);
	buf_init(&b);
	snap_modes_format(&t->modes, &b);
	res->modes = buf_steal(&b);
}

/* Records HEAD and the branch tips of the project as they are at session start. */
static void
snap_take_record_refs(struct snap_take *t)
{
	char *line, *save = NULL, *sp, *head, *sym = NULL, *v;

	/* "<oid> <refname>" (a ref name has no spaces). */
	for (line = t->refs.data != NULL ? strtok_r(t->refs.data, "\n",
	    &save) : NULL; line != NULL; line = strtok_r(NULL, "\n", &save)) {
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

/*
 * The copy of the user's index kept for undo --refs, made on a helper
 * thread (a read of the whole index and a write with an fsync: tens of
 * ms on a 10,000-file project, which held the loop): its own copies only.
 */
struct snap_take_keep {
	char *projgit;
	char *dir;
	char *dst;
	char *tmp;
	const char *failed;       /* what failed ("make", "create", ...), NULL */
	const char *failed_path;
	int err;                  /* its errno */
};

/* Test hook: called on the helper thread before the user's index is copied. */
AM_TESTABLE void (*snap_take_index_keeping)(const char *projgit);

static void
snap_take_keep_fail(struct snap_take_keep *k, const char *what,
    const char *path)
{
	k->failed = what;
	k->failed_path = path;
	k->err = errno;
}

/* K's copy written to its tmp file, then put in place: system calls only (outside the clone gate). */
static void
snap_take_keep_write(struct snap_take_keep *k, const struct buf *b)
{
	int fd;

	fd = open(k->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
	    0600);
	if (fd == -1) {
		snap_take_keep_fail(k, "create", k->tmp);
		return;
	}
	if (fchmod(fd, 0600) == -1 || util_write_all(fd, b->data, b->len) ==
	    -1 || fsync(fd) == -1)
		snap_take_keep_fail(k, "write", k->tmp);
	if (close(fd) == -1 && k->failed == NULL)
		snap_take_keep_fail(k, "write", k->tmp);
	if (k->failed == NULL && rename(k->tmp, k->dst) == -1)
		snap_take_keep_fail(k, "replace", k->dst);
	if (k->failed != NULL)
		unlink(k->tmp);
}

/* On the helper thread: the read and the dir inside the clone gate (they allocate), the write outside. */
static void
snap_take_keep_work(void *arg)
{
	struct snap_take_keep *k = arg;
	struct buf b;
	bool have = false;
	int fd;

	if (snap_take_index_keeping != NULL)
		snap_take_index_keeping(k->projgit);
	buf_init(&b);
	clone_gate_enter();
	fd = open(k->projgit, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd != -1 && path_read_beneath(fd, "index", (size_t)1 << 31,
	    &b) == 0 && b.data != NULL) {
		have = true;
		if (path_mkdir_p(k->dir, 0700) == -1)
			snap_take_keep_fail(k, "make", k->dir);
	}
	if (fd != -1)
		close(fd);
	clone_gate_leave();
	if (have && k->failed == NULL)
		snap_take_keep_write(k, &b);
	clone_gate_enter();
	buf_free(&b);
	clone_gate_leave();
}

static void
snap_take_keep_free(struct snap_take_keep *k)
{
	if (k == NULL)
		return;
	free(k->projgit);
	free(k->dir);
	free(k->dst);
	free(k->tmp);
	free(k);
}

/* The project's refs and the copy of its index are both in: the record may follow. */
static void
snap_take_refs_in(struct snap_take *t)
{
	t->pending--;
	if (--t->refs_left == 0)
		t->refs_done = true;
	snap_take_try_record(t);
	snap_take_step(t);
}

/* On the loop: the copy of the user's index is made (its job freed), or why not is a warning. */
static void
snap_take_keep_done(void *arg)
{
	struct snap_take *t = arg;
	struct snap_take_keep *k = t->keep;

	t->keep_job = NULL;
	t->keep = NULL;
	if (k->failed != NULL)
		strv_take(&t->warnings, xprintf("cannot keep a copy of the "
		    "index: cannot %s %s: %s", k->failed, k->failed_path,
		    strerror(k->err)));
	snap_take_keep_free(k);
	snap_take_refs_in(t);
}

/*
 * Keeps the user's index as it was at session start, for undo --refs:
 * copied on a helper thread, a step of the job (the record waits for it,
 * as for the refs).
 */
static void
snap_take_save_user_index(struct snap_take *t)
{
	struct snap_take_keep *k;
	char *data, *cause = NULL;

	if (t->repo->projgit == NULL || (data = path_data_dir(&cause)) == NULL) {
		free(cause);
		return;
	}
	k = xcalloc(1, sizeof *k);
	k->projgit = xstrdup(t->repo->projgit);
	k->dir = xprintf("%s/sessions/%lld", data, (long long)t->session);
	k->dst = xprintf("%s/git-index", k->dir);
	k->tmp = xprintf("%s.tmp.%ld", k->dst, (long)getpid());
	free(data);
	t->keep = k;
	t->keep_job = thread_job_start(t->base, snap_take_keep_work, k,
	    snap_take_keep_done, t, &cause);
	if (t->keep_job == NULL) {
		strv_take(&t->warnings, xprintf("cannot keep a copy of the "
		    "index: %s", cause));
		free(cause);
		snap_take_keep_free(k);
		t->keep = NULL;
		return;
	}
	t->pending++;
	t->refs_left++;
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

/* The chain's last commit and modes, for the next snapshot of this process. */
static void
snap_take_remember(struct snap_take *t, const struct snap_result *res)
{
	free(t->repo->last_commit);
	free(t->repo->last_modes);
	t->repo->last_commit = xstrdup(t->commit);
	t->repo->last_modes = xstrdup(res->modes);
}

static void snap_take_borrow_later(struct snap_take *);

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
	ref = xprintf("refs/agentmux/snaps/%lld/%s", (long long)t->session,
	    t->commit);
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
		/* The step that called ends the job with it. */
		free(ref);
		snap_result_clear(&res);
		snap_take_error(t, cause);
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
	/*
	 * The stat cache is kept for the next process only once the blobs it
	 * names are all here: one that ended meanwhile (killed) would trust
	 * entries whose blobs never came, and fail every later snapshot.
	 */
	if (t->borrowing == 0)
		snap_repo_save_index(t->repo);
	snap_take_remember(t, &res);
	res.id = id;
	res.seq = snap_take_seq(t->st, t->session, id);
	t->recorded = true;
	t->res = res;
	snap_take_tell_saved(t);
	snap_take_borrow_later(t);
}

/*
 * The snapshot is recorded once its commit is written and its count in:
 * the store then has it (a crash from here on loses nothing), while its
 * ref is still being written (nothing prunes a new object meanwhile).
 */
static void
snap_take_try_record(struct snap_take *t)
{
	if (!t->recorded && t->error == NULL && t->commit != NULL &&
	    t->counted && t->refs_done)
		snap_take_record(t);
}

/* The job is over once it is recorded and nothing of it runs any more. */
static void
snap_take_finished(struct snap_take *t)
{
	struct snap_result res;

	if (!t->recorded || t->pending > 0 || t->freezing > 0 ||
	    t->borrowing > 0)
		return;
	res = t->res;
	memset(&t->res, 0, sizeof t->res);
	snap_take_end(t, &res);
	snap_result_clear(&res);
}

static char *
snap_take_oid(struct proc *p)
{
	struct buf *out = proc_out(p);

	if (out->data == NULL)
		return xstrdup("");
	return xstrndup(out->data, strcspn(out->data, " \t\n"));
}

/* ---- the commit and its ref ---- */

static void
snap_take_update_ref_cb(struct proc *p, void *arg)
{
	struct snap_take *t = arg;

	if (snap_take_early_died(t, p))
		return;
	t->pending--;
	if (proc_status(p) != 0)
		snap_take_error(t, snap_git_error("update-ref", p));
	snap_take_reap(t, p);
	snap_take_step(t);
}

static const char *const snap_take_update_ref[] = { "update-ref", "--stdin",
    NULL };

/* The commit is written: its ref, and the chain's (a ref per snapshot keeps it whatever happens to the others). */
static void
snap_take_write_ref(struct snap_take *t)
{
	struct buf in;

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
}

static void
snap_take_count_cb(struct proc *p, void *arg)
{
	struct snap_take *t = arg;
	struct buf *out = proc_out(p);
	size_t i;

	t->pending--;
	if (proc_status(p) != 0) {
		/* The tree it counts from is gone (dropped): count it all. */
		log_debug("%s", proc_err(p)->data != NULL ?
		    proc_err(p)->data : "diff-tree failed");
		t->changed = t->entries >= 0 ? t->entries : 0;
	} else {
		for (i = 0, t->changed = 0; i < out->len; i++)
			t->changed += out->data[i] == '\0';
	}
	snap_take_reap(t, p);
	t->counted = true;
	snap_take_try_record(t);
	snap_take_step(t);
}

/*
 * The commit object: its tree, no parent (each snapshot stands alone, so
 * that an old one can be dropped), agentmux as author and committer, now;
 * then its message: the kind, the real modes, the label.
 */
static void
snap_take_commit_text(struct snap_take *t, struct buf *b)
{
	time_t now = time(NULL);
	struct tm tm;
	long off;

	localtime_r(&now, &tm);
	off = tm.tm_gmtoff / 60;
	buf_printf(b, "tree %s\n", t->tree);
	buf_printf(b, "author agentmux <agentmux@localhost> %lld %c%02ld%02ld\n"
	    "committer agentmux <agentmux@localhost> %lld %c%02ld%02ld\n\n",
	    (long long)now, off < 0 ? '-' : '+', labs(off) / 60, labs(off) % 60,
	    (long long)now, off < 0 ? '-' : '+', labs(off) / 60, labs(off) % 60);
	buf_printf(b, "agentmux snapshot: %s, session %lld\n\n", t->kind,
	    (long long)t->session);
	snap_modes_format(&t->modes, b);
	if (t->label != NULL)
		buf_printf(b, "\n%s\n", t->label);
}

/* What changed since t->count_from, without git where it is known. */
static bool
snap_take_count(struct snap_take *t)
{
	const char *count[] = { "diff-tree", "-r", "-z", "--no-renames",
	    "--name-only", t->count_from, t->tree, NULL };

	if (strcmp(t->count_from, t->tree) == 0) {
		t->changed = 0;
		t->counted = true;
		return true;
	}
	if (t->entries >= 0 &&
	    strcmp(t->count_from, snap_repo_empty_tree(t->repo)) == 0) {
		t->changed = t->entries;
		t->counted = true;
		return true;
	}
	return snap_take_spawn(t, SNAP_ENV_DB, count, NULL, NULL,
	    snap_take_count_cb);
}

/*
 * The tree and modes are known and differ from the last: the commit is
 * written here (one small object: no git need start for it), then its
 * ref and the count, in parallel.
 */
static void
snap_take_commit(struct snap_take *t)
{
	char hex[2 * SNAP_PACK_OID + 1], *cause = NULL;
	struct buf text;
	int rc;

	buf_init(&text);
	snap_take_commit_text(t, &text);
	t->commit_begun = true;
	t->next = snap_take_finished;
	rc = snap_repo_write_object(t->repo->gitdir, "commit", text.data,
	    text.len, hex, &cause);
	buf_free(&text);
	if (rc == -1) {
		snap_take_error(t, cause);
		snap_take_step(t);
		return;
	}
	t->commit = xstrdup(hex);
	snap_take_write_ref(t);
	if (t->error == NULL)
		snap_take_count(t);
	snap_take_try_record(t);
	snap_take_step(t);
}

/* Whether the modes now are those of the chain's last snapshot (as far as this process knows). */
static bool
snap_take_same_modes(struct snap_take *t)
{
	struct buf b;
	bool same;

	if (t->repo->last_modes == NULL || t->repo->last_commit == NULL ||
	    t->prev_commit == NULL || strcmp(t->repo->last_commit,
	    t->prev_commit) != 0)
		return false;
	buf_init(&b);
	snap_modes_format(&t->modes, &b);
	same = strcmp(b.data, t->repo->last_modes) == 0;
	buf_free(&b);
	return same;
}

/* The tree and modes are known: done if nothing changed, else on to the commit. */
static void
snap_take_have_tree(struct snap_take *t)
{
	bool same = t->prev_tree != NULL && strcmp(t->prev_tree, t->tree) ==
	    0 && snap_take_same_modes(t);
	struct snap_result res;

	if (t->if_changed && same) {
		snap_take_result(t, &res);
		res.unchanged = true;
		snap_take_end(t, &res);
		snap_result_clear(&res);
		return;
	}
	if (t->kind == NULL) {
		snap_take_record(t);
		return;
	}
	/* Nothing changed since the last one: it is recorded again, as it is. */
	if (same) {
		t->commit = xstrdup(t->prev_commit);
		t->changed = t->prev_changed;
		t->counted = true;
		t->next = snap_take_finished;
		snap_take_try_record(t);
		snap_take_step(t);
		return;
	}
	snap_take_commit(t);
}

/* ---- the tree, the modes, and (at the start) the ignore rules ---- */

static void
snap_take_write_tree_cb(struct proc *p, void *arg)
{
	struct snap_take *t = arg;
	char *cached = NULL;

	t->pending--;
	if (proc_status(p) != 0) {
		snap_take_error(t, snap_git_error("write-tree", p));
		snap_take_reap(t, p);
		snap_take_step(t);
		return;
	}
	t->tree = snap_take_oid(p);
	snap_take_reap(t, p);
	/* write-tree keeps the tree in the index: its entry count comes with it. */
	if (snap_index_tree(t->repo->index, snap_take_oidlen(t), &cached,
	    &t->entries) != 1 || strcmp(cached, t->tree) != 0)
		t->entries = -1;
	free(cached);
	snap_take_step(t);
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
	path = xprintf("%s/objects/%.2s/%s", t->repo->gitdir, tree, tree + 2);
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
snap_take_modes_cb(struct proc *p, void *arg)
{
	struct snap_take *t = arg;
	struct buf *out = proc_out(p);

	t->pending--;
	/* Exit 1: a path went meanwhile; what find saw is kept. */
	if (proc_status(p) != 0 && proc_status(p) != 1)
		snap_take_error(t, xprintf("cannot read the modes of the files: "
		    "find exited %d", proc_status(p)));
	snap_modes_from_find(&t->modes, (mode_t)t->repo->umask, out->data,
	    out->len);
	snap_take_reap(t, p);
	snap_take_step(t);
}

/*
 * The real modes of the index's files and dirs, from find in the project;
 * for a small tree, read here (as cheap as parsing the index, and never
 * through a link).
 */
static bool
snap_take_modes(struct snap_take *t, const struct buf *paths, size_t n)
{
	struct proc_opts o;
	struct proc *p;
	struct strv env;
	struct buf out;
	char *cause = NULL;
	char *argv[] = { "find", "-files0-from", "-", "-maxdepth", "0",
	    "-printf", "%y %m %p\\0", NULL };

	if (n <= SNAP_MODES_HERE) {
		buf_init(&out);
		snap_modes_stat(t->repo->worktree, paths, &out);
		snap_modes_from_find(&t->modes, (mode_t)t->repo->umask,
		    out.data, out.len);
		buf_free(&out);
		return true;
	}
	snap_env_plain(&env);
	memset(&o, 0, sizeof o);
	o.argv = argv;
	o.env = env.v;
	o.dir = t->repo->worktree;
	o.input = paths->data;
	o.inputlen = paths->len;
	o.out_fd = -1;
	o.umask = -1;
	p = proc_start(t->base, &o, snap_take_modes_cb, t, &cause);
	strv_free(&env);
	if (p == NULL) {
		snap_take_error(t, cause);
		return false;
	}
	snap_take_track(t, p);
	return true;
}

/* The freeze's commands are done: the rules are written; a job recorded meanwhile ends. */
static void
snap_take_frozen(struct snap_take *t)
{
	char *cause = NULL;

	if (--t->freezing > 0)
		return;
	if (snap_ignore_write(t->repo, t->session, t->tree, t->excludes_file,
	    &t->ignores, &t->ignore_dirs, &cause) == -1) {
		log_warnx("the ignore rules of session %lld could not be kept, "
		    "so its later snapshots use the project's as they are: %s",
		    (long long)t->session, cause);
		store_event_add(t->st, t->session, "warn", "snapshot", "the "
		    "ignore rules could not be kept, so later snapshots use the "
		    "project's as they are: %s", cause);
		free(cause);
	}
	snap_take_finished(t);
}

static void
snap_take_freeze_cb(struct proc *p, void *arg)
{
	struct snap_take *t = arg;

	if (proc_status(p) != 0)
		log_warnx("%s", proc_err(p)->data != NULL ?
		    proc_err(p)->data : "git cat-file failed");
	else
		buf_add(&t->ignores, proc_out(p)->data,
		    proc_out(p)->len);
	snap_take_reap(t, p);
	snap_take_frozen(t);
}

static void
snap_take_excludes_cb(struct proc *p, void *arg)
{
	struct snap_take *t = arg;

	/* Exit 1: not set, so git's default. */
	if (proc_status(p) == 0 && proc_out(p)->data != NULL)
		t->excludes_file = xstrndup(proc_out(p)->data,
		    strcspn(proc_out(p)->data, "\n"));
	snap_take_reap(t, p);
	snap_take_frozen(t);
}

/* Starts a command of the freeze: beside the job's own, not one of its steps. */
static bool
snap_take_spawn_side(struct snap_take *t, const char *const *args,
    const struct buf *input, proc_cb cb)
{
	if (!snap_take_spawn(t, SNAP_ENV_DB, args, input, NULL, cb))
		return false;
	t->pending--;
	t->freezing++;
	return true;
}

/*
 * The start snapshot freezes the ignore rules it was taken with: the
 * .gitignore files now in its tree (read back from the own repository),
 * the project's info/exclude and the user's excludes file. This runs
 * beside the commit and its record, which need not wait for it.
 */
static bool
snap_take_freeze(struct snap_take *t, const struct buf *oids)
{
	const char *cat[] = { "cat-file", "--batch", NULL };
	const char *cfg[] = { "config", "--path", "--get", "core.excludesFile",
	    NULL };

	/* One more than the commands: the job's tree must be known too. */
	t->freezing++;
	return (snap_ignore_config_silent() || snap_take_spawn_side(t, cfg,
	    NULL, snap_take_excludes_cb)) && (oids->len == 0 ||
	    snap_take_spawn_side(t, cat, oids, snap_take_freeze_cb));
}

/* The tree and the modes are in: the commit (the freeze, if any, goes on beside). */
static void
snap_take_tree_done(struct snap_take *t)
{
	int64_t t0 = loop_trace_begin();

	if (t->freeze)
		snap_take_frozen(t);
	if (t->error == NULL && !t->dirs_read)
		snap_dirs_read(&t->modes, t->repo->worktree, t->repo->index,
		    snap_take_oidlen(t));
	loop_trace_end(t0, "snapshot: the dirs' modes read");
	if (t->error == NULL)
		snap_take_have_tree(t);
}

/*
 * What the steps after an add need of the private index (each a parse of
 * all of it: with the racy entries' marking, 170 ms on a 10,000-file
 * project, which held the loop), read on a helper thread: its own copies
 * only.
 */
struct snap_take_after {
	char *index;
	size_t oidlen;
	uint32_t since;           /* the racy entries: changed from this second */
	bool modes;               /* the paths whose modes are read are wanted */
	bool freeze;              /* the .gitignore files' ids are wanted */
	int smudge_err;           /* the marking failed with this errno, 0 */
	struct buf paths;
	size_t npaths;
	struct buf oids;
	struct strv dirs;
	/* The work tree's dirs with no file beneath, found here (the modes are read already). */
	char *worktree;
	bool find_dirs;
	struct snap_modes found;
};

/* Test hook: called on the helper thread before the private index is read after an add. */
AM_TESTABLE void (*snap_take_index_after)(const char *index);

/* On the helper thread: each pass inside the clone gate (they allocate), let go between them. */
static void
snap_take_after_work(void *arg)
{
	struct snap_take_after *x = arg;

	if (snap_take_index_after != NULL)
		snap_take_index_after(x->index);
	clone_gate_enter();
	if (snap_index_smudge(x->index, x->oidlen, x->since) == -1 &&
	    errno != ENOENT)
		x->smudge_err = errno;
	clone_gate_leave();
	if (x->modes) {
		clone_gate_enter();
		x->npaths = snap_modes_paths(x->index, x->oidlen, &x->paths);
		clone_gate_leave();
	}
	if (x->freeze) {
		clone_gate_enter();
		snap_ignore_oids(x->index, x->oidlen, &x->oids, &x->dirs);
		clone_gate_leave();
	}
	if (x->find_dirs) {
		clone_gate_enter();
		snap_dirs_find(&x->found, x->worktree, x->index, x->oidlen);
		clone_gate_leave();
	}
}

static void
snap_take_after_free(struct snap_take_after *x)
{
	if (x == NULL)
		return;
	free(x->index);
	buf_free(&x->paths);
	buf_free(&x->oids);
	strv_free(&x->dirs);
	free(x->worktree);
	snap_modes_free(&x->found);
	free(x);
}

/*
 * The index is final: the tree (from the index's own cache if it has
 * it), the real modes and, at a session's start, its ignore rules, all
 * at once, from what X read of the index; then on.
 */
static void
snap_take_write_tree(struct snap_take *t, struct snap_take_after *x)
{
	const char *args[] = { "write-tree", NULL };

	if (x->smudge_err != 0)
		log_debug("cannot mark the racy entries of %s: %s",
		    t->repo->index, strerror(x->smudge_err));
	if (x->find_dirs && t->error == NULL) {
		snap_dirs_keep(&t->modes, &x->found);
		t->dirs_read = true;
	}
	t->next = snap_take_tree_done;
	if (t->tree == NULL && (t->tree = snap_take_cached_tree(t)) == NULL)
		snap_take_spawn(t, SNAP_ENV_TREE, args, NULL, NULL,
		    snap_take_write_tree_cb);
	if (t->error == NULL && x->modes)
		snap_take_modes(t, &x->paths, x->npaths);
	if (t->error == NULL && x->freeze) {
		strv_free(&t->ignore_dirs);
		t->ignore_dirs = x->dirs;
		strv_init(&x->dirs);
		if (!snap_take_freeze(t, &x->oids)) {
			strv_take(&t->warnings, xprintf("the ignore rules could "
			    "not be read back: %s", t->error));
			t->error = NULL;
		}
	}
	snap_take_step(t);
}

/* On the loop: the helper thread read the index (its job freed); the tree and the rest. */
static void
snap_take_after_done(void *arg)
{
	struct snap_take *t = arg;
	struct snap_take_after *x = t->after;

	t->after_job = NULL;
	t->after = NULL;
	t->pending--;
	snap_take_write_tree(t, x);
	snap_take_after_free(x);
}

/*
 * The work tree is in the private index. An entry that changed in the
 * same second as it was read could change again unseen (git compares
 * whole seconds, and mtime can be set back): such entries are made to be
 * hashed again next time (on a helper thread, with the other reads of
 * the index). Then the tree.
 */
static void
snap_take_added(struct snap_take *t)
{
	struct snap_take_after *x;
	char *cause = NULL;

	/* git has read the work tree: what was opened up gets its mode back. */
	snap_unlock_restore(&t->unlock, t->repo->worktree);
	x = xcalloc(1, sizeof *x);
	x->index = xstrdup(t->repo->index);
	x->oidlen = snap_take_oidlen(t);
	x->since = (uint32_t)t->add_since;
	x->modes = !t->modes_read;
	x->freeze = t->freeze;
	/* Read with the files' (the first snapshot's writer): the dirs' too, off the loop. */
	x->find_dirs = t->modes_read && t->modes.known;
	x->worktree = xstrdup(t->repo->worktree);
	snap_modes_init(&x->found);
	x->found.known = true;
	buf_init(&x->paths);
	buf_init(&x->oids);
	strv_init(&x->dirs);
	t->after = x;
	t->after_job = thread_job_start(t->base, snap_take_after_work, x,
	    snap_take_after_done, t, &cause);
	if (t->after_job != NULL) {
		/* A step of the job: nothing follows before it is done. */
		t->pending++;
		return;
	}
	log_debug("%s: the index is read on the loop", cause);
	free(cause);
	t->after = NULL;
	snap_take_after_work(x);
	snap_take_write_tree(t, x);
	snap_take_after_free(x);
}

/* ---- git add: nested repositories, unreadable files ---- */

/* Paths inside quotes on git's message line, e.g. "error: unable to index file 'x'". */
static void
snap_take_quoted(struct strv *sv, const char *line, const char *prefix)
{
	size_t n = strlen(prefix), len;
	const char *end;

	if (strncmp(line, prefix, n) != 0)
		return;
	line += n;
	/* "'PATH': reason", or "'PATH'" */
	if ((end = strstr(line, "': ")) != NULL)
		len = (size_t)(end - line);
	else
		len = strlen(line);
	if (len > 0 && line[len - 1] == '\'')
		len--;
	if (len > 0 && line[len - 1] == '/')
		len--;
	strv_take(sv, xstrndup(line, len));
}

/*
 * A nested repository (or submodule) is content too: an index entry
 * under its dir makes git go into it as into any dir (git treats a dir
 * with entries as tracked). The entry names no file, so the next add
 * drops it. git is never run in the nested repository itself.
 */
static void
snap_take_nested(struct snap_take *t, const char *dir, size_t len)
{
	while (len > 1 && dir[len - 1] == '/')
		len--;
	/* Its gitlink (if git made one) goes, an entry inside comes. */
	buf_printf(&t->placeholders, "0 %s\t%.*s", snap_repo_empty_tree(t->repo),
	    (int)len, dir);
	buf_addc(&t->placeholders, '\0');
	buf_printf(&t->placeholders, "100644 %s\t%.*s/" SNAP_PLACEHOLDER,
	    snap_repo_empty_blob(t->repo), (int)len, dir);
	buf_addc(&t->placeholders, '\0');
	/* Whatever is left of both goes before the tree is written. */
	buf_printf(&t->adopted, "0 %s\t%.*s", snap_repo_empty_tree(t->repo),
	    (int)len, dir);
	buf_addc(&t->adopted, '\0');
	buf_printf(&t->adopted, "0 %s\t%.*s/" SNAP_PLACEHOLDER,
	    snap_repo_empty_tree(t->repo), (int)len, dir);
	buf_addc(&t->adopted, '\0');
}

/* git add's complaint about a path it cannot add (a socket, FIFO or device). */
static const char snap_take_nonfile_msg[] = ": can only add regular files, "
    "symbolic links or git-directories";

/* NAME (under the worktree), if it is a socket, FIFO or device now, counted as deleted and told; once. */
static bool
snap_take_nonfile_add(struct snap_take *t, const char *name)
{
	struct stat sb;
	char *path;
	bool is;

	if (strv_contains(&t->nonfiles, name))
		return false;
	path = xprintf("%s/%s", t->repo->worktree, name);
	is = lstat(path, &sb) == 0 && !S_ISREG(sb.st_mode) &&
	    !S_ISDIR(sb.st_mode) && !S_ISLNK(sb.st_mode);
	free(path);
	if (is) {
		buf_printf(&t->adopted, "0 %s\t%s",
		    snap_repo_empty_tree(t->repo), name);
		buf_addc(&t->adopted, '\0');
		strv_add(&t->nonfiles, name);
	}
	return is;
}

static int
snap_take_nonfile_cb(void *arg, const struct snap_index_ent *e)
{
	char *name;

	/* A gitlink is a nested repository's, looked at apart. */
	if ((e->mode & 0170000) == 0160000 ||
	    memchr(e->name, '\0', e->namelen) != NULL)
		return 0;
	name = xstrndup(e->name, e->namelen);
	(void)snap_take_nonfile_add(arg, name);
	free(name);
	return 0;
}

/*
 * git add keeps the entry of a saved file it finds replaced by what it
 * cannot add (a socket, FIFO or device: "error: NAME: can only add
 * regular files, ..."), so the snapshot would show the file unchanged
 * and no undo would put it back: the entry goes, the file counts as
 * deleted, and the name is told. Git's message only says that there is
 * one: its line carries the raw name (a newline in it splits the line),
 * so the entries are found by an lstat of each entry of the private
 * index; a dir replaced so (git drops its entries itself) is told by the
 * name in the message, checked with lstat too.
 */
static void
snap_take_nonfiles(struct snap_take *t, const char *err)
{
	const char *line, *end;
	size_t n = sizeof snap_take_nonfile_msg - 1;
	char *name;

	if (strstr(err, snap_take_nonfile_msg) == NULL)
		return;
	snap_index_each(t->repo->index, snap_take_oidlen(t),
	    snap_take_nonfile_cb, t);
	for (line = err; *line != '\0'; line = *end != '\0' ? end + 1 : end) {
		end = line + strcspn(line, "\n");
		if (strncmp(line, "error: ", 7) != 0 ||
		    (size_t)(end - line) < 7 + n + 1 ||
		    strncmp(end - n, snap_take_nonfile_msg, n) != 0)
			continue;
		name = xstrndup(line + 7, (size_t)(end - line) - 7 - n);
		(void)snap_take_nonfile_add(t, name);
		free(name);
	}
}

/*
 * Reads git add's complaints: nested repositories to go into, files and
 * dirs it could not read (reported, and never touched by undo).
 */
static void
snap_take_parse_add(struct snap_take *t, char *err)
{
	const char *embedded = "warning: adding embedded git repository: ";
	char *line, *save = NULL;

	for (line = strtok_r(err, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, embedded, strlen(embedded)) == 0) {
			snap_take_nested(t, line + strlen(embedded),
			    strlen(line + strlen(embedded)));
			continue;
		}
		if (strncmp(line, "error: '", 8) == 0 && strstr(line,
		    "' does not have a commit checked out") != NULL) {
			snap_take_nested(t, line + 8, strcspn(line + 8, "'"));
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

/* Puts the index lines in IN into the private index, then NEXT. */
static void
snap_take_index_info_cb(struct proc *p, void *arg)
{
	struct snap_take *t = arg;

	t->pending--;
	if (proc_status(p) != 0)
		snap_take_error(t, snap_git_error("update-index", p));
	snap_take_reap(t, p);
	snap_take_step(t);
}

static void
snap_take_index_info(struct snap_take *t, const struct buf *in,
    void (*next)(struct snap_take *))
{
	const char *args[] = { "update-index", "-z", "--index-info", NULL };

	t->next = next;
	snap_take_spawn(t, SNAP_ENV_TREE, args, in, NULL,
	    snap_take_index_info_cb);
	snap_take_step(t);
}

/* After an add: into the nested repositories it found, or on to the tree. */
static void
snap_take_adopt(struct snap_take *t, void (*again)(struct snap_take *))
{
	struct buf in;

	if (t->placeholders.len == 0 || ++t->rounds > SNAP_ADOPT_ROUNDS) {
		buf_init(&in);
		buf_add(&in, t->adopted.data, t->adopted.len);
		buf_reset(&t->adopted);
		if (in.len > 0)
			snap_take_index_info(t, &in, snap_take_added);
		else
			snap_take_added(t);
		buf_free(&in);
		return;
	}
	buf_init(&in);
	buf_add(&in, t->placeholders.data, t->placeholders.len);
	buf_reset(&t->placeholders);
	snap_take_index_info(t, &in, again);
	buf_free(&in);
}

static void
snap_take_live_done(struct snap_take *t)
{
	snap_take_adopt(t, snap_take_add);
}

/*
 * git add could not read some paths. What the agent made unreadable
 * (chmod 000 main.c, 0111 tests) is the user's own: it is opened up while
 * git reads it again, so that no file or content hides from the snapshot,
 * and its modes go back once git has read the tree (snap_take_added); the
 * modes recorded are read after that. Looked for once per snapshot, and
 * only when git said so: the walk costs a stat per path. True if
 * anything was opened up (the add is then run again).
 */
static bool
snap_take_unlock(struct snap_take *t)
{
	if (t->unlock_tried || geteuid() == 0)
		return false;
	t->unlock_tried = true;
	if (snap_unlock_tree(&t->unlock, t->repo->worktree, false) == -1)
		log_debug("cannot look for unreadable paths in %s: %s",
		    t->repo->worktree, strerror(errno));
	return t->unlock.n > 0;
}

static void
snap_take_add_cb(struct proc *p, void *arg)
{
	struct snap_take *t = arg;
	int st = proc_status(p);

	t->pending--;
	/* Exit 1 with --ignore-errors: some files could not be added; the index is written. */
	if (st != 0 && st != 1)
		snap_take_error(t, snap_git_error("add", p));
	if (proc_err(p)->data != NULL) {
		snap_take_nonfiles(t, proc_err(p)->data);
		snap_take_parse_add(t, proc_err(p)->data);
	}
	if (t->unreadable.n > 0 && t->error == NULL && snap_take_unlock(t))
		t->next = snap_take_add;        /* again, with them opened up */
	snap_take_reap(t, p);
	snap_take_step(t);
}

/* Resets what an add round reports: the last round's is the snapshot's. */
static void
snap_take_round_begin(struct snap_take *t)
{
	strv_free(&t->warnings);
	strv_init(&t->warnings);
	strv_free(&t->unreadable);
	strv_init(&t->unreadable);
	strv_free(&t->nonfiles);
	strv_init(&t->nonfiles);
	if (t->add_since == 0)
		t->add_since = time(NULL);
}

/*
 * The add of a first snapshot, which wrote its objects into one pack: a
 * file that shrank while git streamed it makes git give up (where a loose
 * object would have been an error for that file only), so a failure is
 * retried the usual way. What the pack holds is compressed by the next
 * background pack.
 */
static void
snap_take_bulk_cb(struct proc *p, void *arg)
{
	struct snap_take *t = arg;
	int st = proc_status(p);

	t->bulk = false;
	if (st == 0 || st == 1) {
		/* Nothing added (an empty project): no pack was written. */
		if (t->files > 0)
			snap_keep_mark_packed(t->repo->gitdir);
		snap_take_add_cb(p, arg);
		return;
	}
	log_debug("%s", proc_err(p)->data != NULL ? proc_err(p)->data :
	    "git add into a pack failed");
	t->pending--;
	snap_take_reap(t, p);
	snap_take_add(t);
}

/* ---- a worktree's start: the blobs its checkout wrote, from the project ---- */

/*
 * How long git pack-objects (of the project's own objects, mostly copied
 * as they are packed) and cat-file may take: a bound against a hang, not
 * a limit on a large repository.
 */
#define SNAP_TAKE_BORROW_SECS 900
/* And git check-attr, on the start's way: past it, every file is read. */
#define SNAP_TAKE_ATTRS_SECS 60

static struct proc *snap_take_git_at(struct snap_take *, const char *,
    const char *, char *const *, int, const struct buf *, int, int, proc_cb,
    char **);

static void
snap_take_co_tree_cb(struct proc *p, void *arg)
{
	struct snap_take *t = arg;
	struct buf *out = proc_out(p);
	size_t len;

	t->pending--;
	len = out->data != NULL ? strcspn(out->data, "\n") : 0;
	if (proc_status(p) == 0 && len == 2 * SNAP_PACK_OID &&
	    strspn(out->data, "0123456789abcdef") >= len)
		t->co_tree = xstrndup(out->data, len);
	else
		log_info("the first snapshot of %s reads every file: the tree "
		    "of %s is not known", t->repo->worktree, t->co_base);
	snap_take_reap(t, p);
	snap_take_co_names(t);
	snap_take_step(t);
}

/*
 * The tree of the commit the worktree was checked out from, read from
 * the project's git dir itself; then the checkout's index is read.
 */
static void
snap_take_co_tree(struct snap_take *t)
{
	char *spec = xprintf("%s^{tree}", t->co_base), *cause = NULL;
	const char *args[] = { "rev-parse", "--verify", "--quiet",
	    "--end-of-options", spec, NULL };
	struct proc *p;

	if (snap_take_oidlen(t) != SNAP_PACK_OID ||
	    (p = snap_git_plain_start(t->base, t->co_common, args, NULL, -1,
	    snap_take_co_tree_cb, t, &cause)) == NULL) {
		if (cause != NULL)
			log_info("the first snapshot reads every file: %s",
			    cause);
		free(cause);
		free(spec);
		snap_take_co_names(t);
		return;
	}
	snap_take_track(t, p);
	free(spec);
}

/*
 * Whether attribute NAME bears on what git's checkout writes: any
 * mention of one (set, a value, unset too) has the file read.
 */
static bool
snap_take_converts(const char *name)
{
	static const char *const conv[] = { "text", "eol", "crlf", "ident",
	    "filter", "working-tree-encoding" };
	size_t i;

	for (i = 0; i < nitems(conv); i++)
		if (strcmp(name, conv[i]) == 0)
			return true;
	return false;
}

void
snap_attrs_converted(const struct buf *out, struct strv *converted)
{
	const char *f[3], *s, *end;
	int k;

	if (out->data == NULL)
		return;
	/* "PATH\0ATTRIBUTE\0VALUE\0", each set one (-a). */
	end = out->data + out->len;
	for (s = out->data, k = 0; s < end; s += strlen(s) + 1) {
		f[k++] = s;
		if (k < 3)
			continue;
		k = 0;
		if (snap_take_converts(f[1]) && (converted->n == 0 ||
		    strcmp(f[0], converted->v[converted->n - 1]) != 0))
			strv_add(converted, f[0]);
	}
}

static void
snap_take_co_attrs_cb(struct proc *p, void *arg)
{
	struct snap_take *t = arg;

	t->pending--;
	if (proc_status(p) != 0) {
		log_info("the first snapshot of %s reads every file: %s",
		    t->repo->worktree, proc_err(p)->data != NULL ?
		    proc_err(p)->data : "git check-attr failed");
		t->co_off = true;
	} else
		snap_attrs_converted(proc_out(p), &t->co_converted);
	snap_take_reap(t, p);
	snap_take_step(t);
}

/*
 * The attributes of the files listed, as git worktree add saw them: the
 * project's info/attributes, the user's and the system's files, and no
 * .gitattributes (the seed is not believed if the tree has one). So git
 * reads them --cached from an index that is not there (empty): neither
 * a .gitattributes copied into the worktree after the checkout (by
 * .worktreeinclude) nor one in the main tree's index, which a session
 * there can write (or make a FIFO), comes in. A file one of them names
 * a conversion attribute for (text, eol, ident, an encoding) is read
 * like any other. The names asked about are the seed's own, read with
 * it (it has no other), as soon as the checkout's index is read, beside
 * git's listing of the worktree. False if git cannot be started.
 */
static bool
snap_take_co_attrs(struct snap_take *t)
{
	static char *argv[] = { "git", "check-attr", "--cached", "--stdin",
	    "-z", "-a", NULL };
	char *cause = NULL;

	t->co_attrs_read = true;
	/* Asked already, while git worktree add ran, of the same names (the commit's). */
	if (t->co_attrs_known) {
		t->next = snap_take_native_listed;
		return true;
	}
	if (snap_take_git_at(t, t->co_common, NULL, argv, -1, &t->co_tracked,
	    -1, SNAP_TAKE_ATTRS_SECS, snap_take_co_attrs_cb, &cause) == NULL) {
		log_info("the first snapshot reads every file: %s", cause);
		free(cause);
		t->co_off = true;
		return false;
	}
	t->next = snap_take_native_listed;
	return true;
}

/*
 * The checkout's index read on a helper thread, once, on copies of what
 * it needs: the tracked names (git lists the rest) and the seed, of the
 * same bytes; then, on another, each file the seed names looked at
 * (10,000 lstat), while git check-attr asks about the names.
 */
struct snap_take_co_names {
	char *index;
	char *worktree;
	bool has_tree;
	unsigned char tree[SNAP_PACK_OID];
	struct buf names;
	char *cause;              /* why there are none (git add's path) */
	struct snap_seed *seed;
	char *seed_cause;         /* why there is none (every file read) */
	atomic_bool stop;         /* the look gives up */
};

static void
snap_take_co_names_free(struct snap_take_co_names *x)
{
	if (x == NULL)
		return;
	free(x->index);
	free(x->worktree);
	buf_free(&x->names);
	free(x->cause);
	snap_seed_free(x->seed);
	free(x->seed_cause);
	free(x);
}

static void
snap_take_co_names_stop(struct snap_take_co_names *x)
{
	if (x != NULL)
		atomic_store(&x->stop, true);
}

static void
snap_take_co_names_work(void *arg)
{
	struct snap_take_co_names *x = arg;

	clone_gate_enter();
	(void)snap_seed_read_names(x->index, x->worktree, x->has_tree ?
	    x->tree : NULL, &x->names, &x->seed, &x->cause, &x->seed_cause);
	clone_gate_leave();
}

static void
snap_take_co_look_work(void *arg)
{
	struct snap_take_co_names *x = arg;

	snap_seed_look_all(x->seed, &x->stop);
}

static void snap_take_co_look(struct snap_take *, struct snap_seed *);

/* On the loop: the index is read (the job freed): the names' attributes are asked for, the seed's files looked at. */
static void
snap_take_co_names_done(void *arg)
{
	struct snap_take *t = arg;
	struct snap_take_co_names *x = t->co_names;
	struct snap_seed *sd;

	t->co_names_job = NULL;
	t->co_names = NULL;
	t->pending--;
	if (x->cause != NULL) {
		log_info("the first snapshot of %s is taken by git: %s",
		    t->repo->worktree, x->cause);
		t->co_names_failed = true;
	}
	buf_add(&t->co_tracked, x->names.data, x->names.len);
	sd = x->seed;
	x->seed = NULL;
	if (sd == NULL && x->cause == NULL) {
		log_info("the first snapshot of %s reads every file: %s",
		    t->repo->worktree, x->seed_cause);
		t->co_off = true;
	}
	snap_take_co_names_free(x);
	if (sd != NULL && !t->co_names_failed && !t->co_off &&
	    t->co_tracked.len > 0 && snap_take_co_attrs(t))
		snap_take_co_look(t, sd);
	else
		snap_seed_free(sd);
	snap_take_step(t);
}

/* On the loop: the seed's files are looked at (the job freed). */
static void
snap_take_co_look_done(void *arg)
{
	struct snap_take *t = arg;
	struct snap_take_co_names *x = t->co_look;

	t->co_look_job = NULL;
	t->co_look = NULL;
	t->pending--;
	t->co_seed = x->seed;
	x->seed = NULL;
	snap_take_co_names_free(x);
	snap_take_step(t);
}

/* A job of X started (*JOB); false if it cannot be (logged, X freed). */
static bool
snap_take_co_job(struct snap_take *t, void (*work)(void *),
    void (*done)(void *), struct snap_take_co_names *x,
    struct thread_job **job, struct snap_take_co_names **xp, const char *what)
{
	char *cause = NULL;

	*xp = x;
	*job = thread_job_start(t->base, work, x, done, t, &cause);
	if (*job == NULL) {
		log_info("the first snapshot of %s %s: %s", t->repo->worktree,
		    what, cause);
		free(cause);
		*xp = NULL;
		snap_take_co_names_free(x);
		return false;
	}
	t->pending++;
	return true;
}

static struct snap_take_co_names *
snap_take_co_new(struct snap_take *t)
{
	struct snap_take_co_names *x = xcalloc(1, sizeof *x);

	x->index = xstrdup(t->co_index);
	x->worktree = xstrdup(t->repo->worktree);
	buf_init(&x->names);
	atomic_init(&x->stop, false);
	return x;
}

/* SD's files looked at off the loop; if that cannot be, the seed goes unused. */
static void
snap_take_co_look(struct snap_take *t, struct snap_seed *sd)
{
	struct snap_take_co_names *x = snap_take_co_new(t);

	x->seed = sd;
	if (!snap_take_co_job(t, snap_take_co_look_work, snap_take_co_look_done,
	    x, &t->co_look_job, &t->co_look, "reads every file"))
		t->co_off = true;
}

/*
 * The checkout's index read off the loop, once the commit's tree is
 * known (or known not to be: no seed then). Without its names git's
 * path is taken (they would be missing from the list).
 */
static void
snap_take_co_names(struct snap_take *t)
{
	struct snap_take_co_names *x = snap_take_co_new(t);

	if (t->co_tree != NULL) {
		x->has_tree = true;
		snap_take_co_tree_raw(t, x->tree);
	}
	if (!snap_take_co_job(t, snap_take_co_names_work,
	    snap_take_co_names_done, x, &t->co_names_job, &t->co_names,
	    "is taken by git"))
		t->co_names_failed = true;
}

static unsigned
snap_take_hexval(char c)
{
	return c >= 'a' ? (unsigned)(c - 'a' + 10) : (unsigned)(c - '0');
}

/* The commit's tree (known: lowercase hex, checked as it came in) as bytes, into OID. */
static void
snap_take_co_tree_raw(const struct snap_take *t, unsigned char *oid)
{
	size_t i;

	for (i = 0; i < SNAP_PACK_OID; i++)
		oid[i] = (unsigned char)(snap_take_hexval(t->co_tree[2 * i]) <<
		    4 | snap_take_hexval(t->co_tree[2 * i + 1]));
}

/* A file of the own repository for the borrowed blobs' pack, in T->borrow_fd; -1 (logged) if it cannot be made. */
static int
snap_take_borrow_file(struct snap_take *t)
{
	int fd;

	if ((fd = snap_repo_pack_tmpfile(t->repo)) == -1)
		log_info("the first snapshot reads every file: cannot make a "
		    "file in %s/objects/pack: %s", t->repo->gitdir,
		    strerror(errno));
	t->borrow_fd = fd;
	return fd == -1 ? -1 : 0;
}

/*
 * The seed of the pack writer, into *SEED: NULL if there is none. The
 * .gitignore files are read all the same: the freeze reads them back from
 * the own repository before the borrowed blobs are in.
 */
static const struct snap_pack_seed *
snap_take_seed(struct snap_take *t, struct snap_pack_seed *seed)
{
	const char *s, *end, *base;

	/* Only the seed the names came from, its files looked at: never read again. */
	if (t->co_tree == NULL || t->co_off || t->co_seed == NULL ||
	    (t->borrow_fd == -1 && snap_take_borrow_file(t) == -1))
		return NULL;
	end = t->untracked.data + t->untracked.len;
	for (s = t->untracked.data; s != NULL && s < end; s += strlen(s) + 1) {
		base = strrchr(s, '/');
		if (strcmp(base != NULL ? base + 1 : s, ".gitignore") == 0)
			strv_add(&t->co_converted, s);
	}
	seed->index = t->co_index;
	/* The job takes it. */
	seed->read = t->co_seed;
	t->co_seed = NULL;
	seed->converted = &t->co_converted;
	snap_take_co_tree_raw(t, seed->tree);
	return seed;
}

/*
 * Starts git (ARGV) as a step of the job on GITDIR (and WORKTREE, if not
 * NULL; and an index that is not there, so that none of the project's is
 * read) with IN_FD (a file) as its stdin or INPUT, OUT_FD (a file) as its
 * stdout or read, for at most SECS. NULL with *CAUSE.
 */
static struct proc *
snap_take_git_at(struct snap_take *t, const char *gitdir,
    const char *worktree, char *const *argv, int in_fd,
    const struct buf *input, int out_fd, int secs, proc_cb cb, char **cause)
{
	struct proc_opts o;
	struct strv env;
	struct proc *p;

	snap_env_plain(&env);
	strv_addf(&env, "GIT_DIR=%s", gitdir);
	if (worktree != NULL)
		strv_addf(&env, "GIT_WORK_TREE=%s", worktree);
	/* No index of the project's is read: one that is not there, in our own repository. */
	strv_addf(&env, "GIT_INDEX_FILE=%s/agentmux-no-index", t->repo->gitdir);
	memset(&o, 0, sizeof o);
	o.argv = argv;
	o.env = env.v;
	o.dir = worktree != NULL ? worktree : gitdir;
	o.out_fd = out_fd;
	o.umask = -1;
	o.data_max = snap_git_mem;
	o.timeout = secs;
	o.err_max = 64 * 1024;
	if (in_fd != -1) {
		o.has_in_fd = true;
		o.in_fd = in_fd;
	} else if (input != NULL) {
		o.input = input->data != NULL ? input->data : "";
		o.inputlen = input->len;
	}
	p = proc_start(t->base, &o, cb, t, cause);
	strv_free(&env);
	if (p != NULL)
		snap_take_track(t, p);
	return p;
}

/* The same for a command of the borrow: beside the job's steps, not one of them. */
static struct proc *
snap_take_borrow_git(struct snap_take *t, const char *gitdir,
    char *const *argv, int in_fd, const struct buf *input, int out_fd,
    int secs, proc_cb cb, char **cause)
{
	struct proc *p;

	p = snap_take_git_at(t, gitdir, NULL, argv, in_fd, input, out_fd,
	    secs, cb, cause);
	if (p != NULL) {
		t->pending--;
		t->borrowing++;
	}
	return p;
}

/*
 * The blobs could not all be brought in: the snapshot cannot restore
 * those files, and says so; the stat cache forgets every entry, so the
 * next snapshot reads every file and stores what it finds.
 */
static void
snap_take_borrow_failed(struct snap_take *t, size_t n, char *why)
{
	size_t i;

	if (n == 0)
		for (i = 0; i < t->borrowed.len; i++)
			n += t->borrowed.data[i] == '\n';
	if (snap_index_forget(t->repo->index, SNAP_PACK_OID) == -1 &&
	    errno != ENOENT)
		log_warn("cannot forget the stat cache %s", t->repo->index);
	if (snap_index_forget(t->repo->seed, SNAP_PACK_OID) == -1 &&
	    errno != ENOENT)
		log_warn("cannot forget the stat cache %s", t->repo->seed);
	snap_take_error(t, xprintf("the contents of %zu file%s git checked "
	    "out could not be copied from the project's repository (%s): undo "
	    "to this snapshot cannot restore %s", n, n == 1 ? "" : "s", why,
	    n == 1 ? "it" : "them"));
	free(why);
}

/* One command of the borrow is over: its slot and count go. */
static void
snap_take_borrow_over(struct snap_take *t, struct proc *p)
{
	t->borrowing--;
	snap_take_reap(t, p);
}

/* The borrow is over (T->error says if it failed): the job ends if nothing else runs. */
static void
snap_take_borrow_end(struct snap_take *t)
{
	if (t->borrow_fd != -1)
		close(t->borrow_fd);
	t->borrow_fd = -1;
	snap_repo_borrow_end(t->repo, t->borrow_lock);
	t->borrow_lock = -1;
	if (t->recorded || t->error == NULL)
		snap_take_finished(t);
	else
		snap_take_step(t);
}

static void
snap_take_borrow_check_cb(struct proc *p, void *arg)
{
	struct snap_take *t = arg;
	struct buf *out = proc_out(p);
	const char *line, *end, *first = NULL;
	size_t missing = 0, len;

	end = out->data != NULL ? out->data + out->len : NULL;
	for (line = out->data; line != NULL && line < end; line += len + 1) {
		len = strcspn(line, "\n");
		if (len == 2 * SNAP_PACK_OID + 8 &&
		    memcmp(line + 2 * SNAP_PACK_OID, " missing", 8) == 0) {
			if (first == NULL)
				first = line;
			missing++;
		}
	}
	if (proc_status(p) != 0)
		snap_take_borrow_failed(t, 0, snap_git_complaint("cat-file",
		    proc_err(p), proc_status(p)));
	else if (missing > 0)
		snap_take_borrow_failed(t, missing, xprintf("blob %.*s is not "
		    "what the project's object of that name holds: run git fsck "
		    "there", 2 * SNAP_PACK_OID, first));
	else if (t->recorded)
		snap_repo_save_index(t->repo);
	snap_take_borrow_over(t, p);
	snap_take_borrow_end(t);
}

/* The pack is indexed here: every id is looked up (a corrupt object of the project's comes out under another). */
static void
snap_take_borrow_indexed_cb(struct proc *p, void *arg)
{
	struct snap_take *t = arg;
	static char *argv[] = { "git", "cat-file", "--batch-check", NULL };
	char *cause = NULL;

	if (proc_status(p) != 0) {
		snap_take_borrow_failed(t, 0, snap_git_complaint("index-pack",
		    proc_err(p), proc_status(p)));
		snap_take_borrow_over(t, p);
		snap_take_borrow_end(t);
		return;
	}
	snap_take_borrow_over(t, p);
	if (snap_take_borrow_git(t, t->repo->gitdir, argv, -1, &t->borrowed,
	    -1, SNAP_TAKE_BORROW_SECS, snap_take_borrow_check_cb,
	    &cause) == NULL) {
		snap_take_borrow_failed(t, 0, cause);
		snap_take_borrow_end(t);
	}
}

/*
 * The project's pack of the blobs is written: git index-pack takes it
 * into agentmux's own repository, naming each object by its own hash.
 */
static void
snap_take_borrow_packed_cb(struct proc *p, void *arg)
{
	struct snap_take *t = arg;
	static char *argv[] = { "git", "index-pack", "--stdin", NULL };
	struct stat sb;
	char *cause = NULL;

	if (proc_status(p) != 0 || fstat(t->borrow_fd, &sb) == -1 ||
	    lseek(t->borrow_fd, 0, SEEK_SET) == -1) {
		snap_take_borrow_failed(t, 0, proc_status(p) != 0 ?
		    snap_git_complaint("pack-objects", proc_err(p),
		    proc_status(p)) : xprintf("cannot read the pack back: %s",
		    strerror(errno)));
		snap_take_borrow_over(t, p);
		snap_take_borrow_end(t);
		return;
	}
	snap_take_borrow_over(t, p);
	if (snap_take_borrow_git(t, t->repo->gitdir, argv, t->borrow_fd, NULL,
	    -1, snap_import_pack_secs(sb.st_size),
	    snap_take_borrow_indexed_cb, &cause) == NULL) {
		snap_take_borrow_failed(t, 0, cause);
		snap_take_borrow_end(t);
	}
}

/*
 * The blobs the tree took from the checkout's index, packed by git in the
 * project's own git dir (its objects are the user's: a session's reach
 * them only through index-pack's check at its end) into a file of ours.
 * Their list is written down at once (a process killed before the end
 * leaves it to the next); the copy starts in a loop turn after the tree
 * is saved: a start's command is let go first, and does not wait for a
 * pack of every file of the project to be made beside it.
 */
static void
snap_take_borrow_go(evutil_socket_t fd, short what, void *arg)
{
	static char *argv[] = { "git", "-c", "pack.compression=0",
	    "pack-objects", "--window=0", "--depth=0", "--stdout", "--quiet",
	    NULL };
	struct snap_take *t = arg;
	char *cause = NULL;

	(void)fd;
	(void)what;
	if (!t->borrow_due)
		return;
	t->borrow_due = false;
	t->borrowing--;
	if (snap_take_borrow_git(t, t->co_common, argv, -1, &t->borrowed,
	    t->borrow_fd, SNAP_TAKE_BORROW_SECS, snap_take_borrow_packed_cb,
	    &cause) == NULL) {
		snap_take_borrow_failed(t, 0, cause);
		snap_take_borrow_end(t);
	}
}

static void
snap_take_borrow(struct snap_take *t)
{
	t->borrow_lock = snap_repo_borrow_begin(t->repo, t->co_common,
	    &t->borrowed);
	/* Counted from now: the stat cache is not kept before the blobs are in. */
	t->borrow_due = true;
	t->borrowing++;
	t->borrow_ev = evtimer_new(t->base, snap_take_borrow_go, t);
	if (t->borrow_ev == NULL)
		fatalx("cannot make a timer");
}

/* The tree is saved: the copy starts in the loop's next turn. */
static void
snap_take_borrow_later(struct snap_take *t)
{
	struct timeval now = { 0, 0 };

	if (t->borrow_due && evtimer_add(t->borrow_ev, &now) == -1)
		fatalx("cannot add a timer");
}

/* ---- a first snapshot through agentmux's own pack writer ---- */

bool snap_take_git_only;

static void snap_take_tracked(struct snap_take *);

/*
 * git add's path after all: a private index not given the tracked names
 * (a fresh worktree's, for the writer) is given them first.
 */
static void
snap_take_git_add(struct snap_take *t)
{
	if (t->co_unseeded) {
		t->co_unseeded = false;
		snap_take_tracked(t);
		/* It may have failed to start: the job then ends here. */
		snap_take_step(t);
		return;
	}
	snap_take_add(t);
}

/*
 * The writer is over: its index is the private index, as git add's
 * would be; else git's path takes the snapshot, and the log says why.
 */
static void
snap_take_native_cb(void *arg, int result, const char *tree,
    const struct buf *modes, const struct buf *borrowed, int64_t files,
    const char *cause)
{
	struct snap_take *t = arg;
	size_t i, taken;
	char *q;

	t->packjob = NULL;
	t->pending--;
	if (result == 0) {
		for (i = 0, taken = 0; i < borrowed->len; i++)
			taken += borrowed->data[i] == '\n';
		log_debug("first snapshot of %s: %lld files (%zu of them as git's "
		    "checkout hashed them), tree %s", t->repo->worktree,
		    (long long)files, taken, tree);
		t->files = files;
		t->bulk = false;
		/* The writer made the trees from the index it wrote: write-tree's. */
		t->tree = xstrdup(tree);
		t->entries = files;
		/* And the real modes, as find would have read them. */
		snap_modes_from_find(&t->modes, (mode_t)t->repo->umask,
		    modes->data, modes->len);
		t->modes_read = true;
		snap_keep_mark_packed(t->repo->gitdir);
		t->next = snap_take_live_done;
		if (borrowed->len > 0) {
			buf_add(&t->borrowed, borrowed->data, borrowed->len);
			snap_take_borrow(t);
		}
	} else {
		log_info("the first snapshot of %s is taken by git: %s",
		    t->repo->worktree, cause);
		if (result == -1 && t->session > 0) {
			/* CAUSE names a file of the project: hostile. */
			q = quote_text(cause);
			store_event_add(t->st, t->session, "info", "snapshot",
			    "the first snapshot is taken by git (its own "
			    "writer failed: %s)", q);
			free(q);
		}
		t->next = snap_take_git_add;
	}
	snap_take_step(t);
}

static void
snap_take_native_progress(void *arg, int64_t files)
{
	struct snap_take *t = arg;

	t->files = files;
	if (t->progress != NULL)
		t->progress(t->arg, files);
}

/* The files git would add are listed: they go to the writer's thread. */
static void
snap_take_native_listed(struct snap_take *t)
{
	struct snap_pack_seed seed;
	char *cause = NULL;

	/* git could not list it, or the tracked names are not known: git's path. */
	if (t->ls_failed || t->co_names_failed) {
		snap_take_git_add(t);
		return;
	}
	/* The tracked names, beside what git listed (the writer takes each once). */
	buf_add(&t->untracked, t->co_tracked.data, t->co_tracked.len);
	buf_reset(&t->co_tracked);
	if (t->untracked.len == 0) {
		/* Nothing (an empty project), or listing failed: git's path. */
		snap_take_git_add(t);
		return;
	}
	t->packjob = snap_pack_job_start(t->base, t->repo->gitdir,
	    t->repo->index, t->repo->worktree, &t->untracked,
	    snap_take_seed(t, &seed), snap_take_native_cb,
	    snap_take_native_progress, t, &cause);
	buf_reset(&t->untracked);
	if (t->packjob == NULL) {
		log_info("the first snapshot of %s is taken by git: %s",
		    t->repo->worktree, cause);
		free(cause);
		snap_take_git_add(t);
		return;
	}
	t->pending++;
}

static void
snap_take_native_ls_cb(struct proc *p, void *arg)
{
	struct snap_take *t = arg;

	t->pending--;
	buf_reset(&t->untracked);
	/* A dir it could not open: git add's path, which reports and retries it. */
	if (proc_status(p) == 0 && (proc_err(p)->data == NULL ||
	    strstr(proc_err(p)->data, "could not open directory") == NULL))
		buf_add(&t->untracked, proc_out(p)->data, proc_out(p)->len);
	else {
		log_info("%s", proc_err(p)->data != NULL ? proc_err(p)->data :
		    "git ls-files failed");
		t->ls_failed = true;
	}
	snap_take_reap(t, p);
	snap_take_step(t);
}

/*
 * The first snapshot, with nothing cached: git lists what add -A would
 * take (the private index holds the user's tracked names: -c; what is
 * untracked and not ignored by the rules git add reads: -o
 * --exclude-standard), and agentmux's own writer stores it. A fresh
 * worktree's private index is not given the tracked names: with none,
 * -o lists every file not ignored, and the names come from the
 * checkout's index, read meanwhile (snap_take_co_names). A nested
 * repository is listed as "DIR/": the writer then leaves it all to git.
 */
static void
snap_take_native(struct snap_take *t)
{
	const char *ls[] = { "ls-files", "-z", "-c", "-o",
	    "--exclude-standard", NULL };

	t->native = false;
	snap_take_round_begin(t);
	buf_reset(&t->untracked);
	t->next = snap_take_native_listed;
	snap_take_spawn(t, SNAP_ENV_TREE, ls, NULL, NULL,
	    snap_take_native_ls_cb);
	if (t->co_base != NULL && t->co_tree != NULL)
		snap_take_co_names(t);
	else if (t->co_base != NULL)
		snap_take_co_tree(t);
	snap_take_step(t);
}

/* git add -A with the project's ignore rules as they are (a start or standalone snapshot). */
static void
snap_take_add(struct snap_take *t)
{
	const char *args[] = { SNAP_GIT_STREAM, "add", "-A",
	    "--ignore-errors", "--verbose", NULL };
	/*
	 * Nothing is cached yet: every file is hashed and written. Streamed
	 * into one pack (every file is over the threshold), uncompressed,
	 * it costs a write per file instead of a file per object.
	 */
	const char *bulk[] = { "-c", "core.bigFileThreshold=1", "-c",
	    "core.compression=0", "add", "-A", "--ignore-errors", "--verbose",
	    NULL };

	if (t->native) {
		snap_take_native(t);
		return;
	}
	snap_take_round_begin(t);
	t->next = snap_take_live_done;
	snap_take_spawn(t, SNAP_ENV_TREE, t->bulk ? bulk : args, NULL,
	    snap_take_line, t->bulk ? snap_take_bulk_cb : snap_take_add_cb);
	snap_take_step(t);
}

/* ---- the session's frozen ignore rules ---- */

static void
snap_take_untracked_cb(struct proc *p, void *arg)
{
	struct snap_take *t = arg;

	t->pending--;
	if (proc_status(p) != 0)
		snap_take_error(t, snap_git_error("ls-files", p));
	else
		buf_add(&t->untracked, proc_out(p)->data,
		    proc_out(p)->len);
	snap_take_reap(t, p);
	snap_take_step(t);
}

static void snap_take_frozen_list(struct snap_take *);

static void
snap_take_frozen_done(struct snap_take *t)
{
	snap_take_adopt(t, snap_take_frozen_list);
}

/* update-index stops at the first file it cannot read: git add then takes them one by one. */
static void
snap_take_update_cb(struct proc *p, void *arg)
{
	const char *args[] = { SNAP_GIT_STREAM, "add", "-f",
	    "--ignore-errors", "--verbose", "--pathspec-from-file=-",
	    "--pathspec-file-nul", NULL };
	struct snap_take *t = arg;
	struct buf list;

	t->pending--;
	if (proc_status(p) != 0) {
		log_debug("%s", proc_err(p)->data != NULL ?
		    proc_err(p)->data : "update-index failed");
		buf_init(&list);
		buf_add(&list, t->untracked.data, t->untracked.len);
		snap_take_spawn(t, SNAP_ENV_TREE, args, &list, snap_take_line,
		    snap_take_add_cb);
		buf_free(&list);
	}
	snap_take_reap(t, p);
	snap_take_step(t);
}

/*
 * What git lists as untracked under the frozen rules goes in: a dir with
 * a trailing slash is a nested repository, the rest are files.
 */
static void
snap_take_frozen_listed(struct snap_take *t)
{
	const char *args[] = { SNAP_GIT_STREAM, "update-index", "--add",
	    "--remove", "--verbose", "-z", "--stdin", NULL };
	const char *p = t->untracked.data, *end = p + t->untracked.len;
	struct buf files;
	size_t len;

	buf_init(&files);
	for (; p != NULL && p < end; p += len + 1) {
		len = strlen(p);
		if (len > 0 && p[len - 1] == '/')
			snap_take_nested(t, p, len);
		else if (len > 0) {
			buf_add(&files, p, len);
			buf_addc(&files, '\0');
		}
	}
	buf_reset(&t->untracked);
	buf_add(&t->untracked, files.data, files.len);
	t->next = snap_take_frozen_done;
	if (files.len > 0)
		snap_take_spawn(t, SNAP_ENV_TREE, args, &files, snap_take_line,
		    snap_take_update_cb);
	buf_free(&files);
	snap_take_step(t);
}

/* Lists what is untracked under the frozen rules (after add -u, or after placeholders went in). */
static void
snap_take_frozen_ls(struct snap_take *t)
{
	char *from = xprintf("--exclude-from=%s", t->repo->ignore);
	const char *ls[] = { "ls-files", "-z", "-o", from, NULL };

	snap_take_spawn(t, SNAP_ENV_TREE, ls, NULL, NULL,
	    snap_take_untracked_cb);
	free(from);
}

/* A later round: only what the placeholders opened up is listed. */
static void
snap_take_frozen_list(struct snap_take *t)
{
	buf_reset(&t->untracked);
	t->next = snap_take_frozen_listed;
	snap_take_frozen_ls(t);
	snap_take_step(t);
}

/*
 * git add would read the ignore rules of the tree as it is now, where
 * the agent may have added some: instead, what is tracked is updated
 * (add -u reads no rules) while git lists what is untracked under the
 * rules frozen at the session's start only (ls-files reads no
 * .gitignore unless told to).
 */
static void
snap_take_frozen_round(struct snap_take *t)
{
	const char *upd[] = { SNAP_GIT_STREAM, "add", "-u",
	    "--ignore-errors", "--verbose", NULL };

	snap_take_round_begin(t);
	buf_reset(&t->untracked);
	t->next = snap_take_frozen_listed;
	if (snap_take_spawn(t, SNAP_ENV_TREE, upd, NULL, snap_take_line,
	    snap_take_add_cb))
		snap_take_frozen_ls(t);
	snap_take_step(t);
}

/* ---- the user's tracked files, as hints ---- */

struct snap_take_names {
	struct strv names;
	struct strv modes;        /* per name, "100644" ... */
};

static int
snap_take_names_cb(void *arg, const struct snap_index_ent *e)
{
	struct snap_take_names *n = arg;

	strv_add(&n->names, e->name);
	strv_addf(&n->modes, "%o", e->mode);
	return 0;
}

static void
snap_take_names_free(struct snap_take_names *n)
{
	strv_free(&n->names);
	strv_free(&n->modes);
}

static int
snap_take_strcmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Whether NAME lies in one of the (sorted) dirs DIRS. */
static bool
snap_take_under(const struct strv *dirs, const char *name)
{
	char *copy, *slash;
	bool found = false;

	if (dirs->n == 0)
		return false;
	copy = xstrdup(name);
	while (!found && (slash = strrchr(copy, '/')) != NULL) {
		*slash = '\0';
		found = bsearch(&copy, dirs->v, dirs->n, sizeof *dirs->v,
		    snap_take_strcmp) != NULL;
	}
	free(copy);
	return found;
}

/*
 * The lines that make the private index hold what the user tracks (an
 * entry git must hash: it could be ignored, and tracked files are
 * content whatever the rules say) and nothing else kept from earlier
 * snapshots (git add decides afresh what is not tracked). The user's
 * index is only read, and only for names: never for content.
 */
static void
snap_take_tracked_lines(const char *empty_blob, const char *empty_tree,
    struct snap_take_names *user, struct snap_take_names *ours,
    struct buf *in)
{
	struct strv gitlinks;
	size_t i = 0, j = 0;
	int c;

	strv_init(&gitlinks);
	for (i = 0; i < user->names.n; i++) {
		if (strcmp(user->modes.v[i], "160000") == 0)
			strv_add(&gitlinks, user->names.v[i]);
	}
	for (i = 0; i < user->names.n || j < ours->names.n;) {
		c = i == user->names.n ? 1 : j == ours->names.n ? -1 :
		    strcmp(user->names.v[i], ours->names.v[j]);
		if (c == 0) {
			i++;
			j++;
		} else if (c < 0) {
			if (strcmp(user->modes.v[i], "160000") != 0) {
				buf_printf(in, "%s %s\t%s", user->modes.v[i],
				    empty_blob, user->names.v[i]);
				buf_addc(in, '\0');
			}
			i++;
		} else {
			if (!snap_take_under(&gitlinks, ours->names.v[j])) {
				buf_printf(in, "0 %s\t%s", empty_tree,
				    ours->names.v[j]);
				buf_addc(in, '\0');
			}
			j++;
		}
	}
	strv_free(&gitlinks);
}

/*
 * The names of the user's index and the private one compared, on a
 * helper thread (two whole indexes parsed and sorted: 67 ms on a
 * 10,000-file project, which held the loop): its own copies only.
 */
struct snap_take_names_job {
	char *projgit;
	char *index;              /* the private one */
	size_t oidlen;
	char *empty_blob;
	char *empty_tree;
	struct buf in;            /* the lines for update-index --index-info */
	char *cause;              /* why the user's index gave no names, or NULL */
};

/* Test hook: called on the helper thread before the indexes' names are read. */
AM_TESTABLE void (*snap_take_names_reading)(const char *index);

/* On the helper thread: all of it allocates, so inside the clone gate, let go between the two indexes. */
static void
snap_take_names_work(void *arg)
{
	struct snap_take_names_job *x = arg;
	struct snap_take_names user, ours;
	char *cause = NULL;
	int fd;

	if (snap_take_names_reading != NULL)
		snap_take_names_reading(x->index);
	memset(&user, 0, sizeof user);
	memset(&ours, 0, sizeof ours);
	clone_gate_enter();
	/* None (a fresh repository) is no index: nothing tracked. */
	fd = open(x->projgit, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd == -1)
		x->cause = xprintf("cannot open %s: %s", x->projgit,
		    strerror(errno));
	else if (faccessat(fd, "index", F_OK, AT_SYMLINK_NOFOLLOW) == 0 &&
	    snap_index_user_each(fd, (size_t)1 << 30, x->oidlen,
	    snap_take_names_cb, &user, &cause) == -1) {
		x->cause = xprintf("%s/index: %s", x->projgit, cause);
		free(cause);
		snap_take_names_free(&user);
		memset(&user, 0, sizeof user);
	}
	if (fd != -1)
		close(fd);
	clone_gate_leave();
	/* Not known: the private index keeps the names it has. */
	if (x->cause != NULL)
		return;
	clone_gate_enter();
	snap_index_each(x->index, x->oidlen, snap_take_names_cb, &ours);
	snap_take_tracked_lines(x->empty_blob, x->empty_tree, &user, &ours,
	    &x->in);
	snap_take_names_free(&user);
	snap_take_names_free(&ours);
	clone_gate_leave();
}

static void
snap_take_names_job_free(struct snap_take_names_job *x)
{
	if (x == NULL)
		return;
	free(x->projgit);
	free(x->index);
	free(x->empty_blob);
	free(x->empty_tree);
	buf_free(&x->in);
	free(x->cause);
	free(x);
}

/* On the loop: the lines are in (the job freed); the add follows them. */
static void
snap_take_names_done(void *arg)
{
	struct snap_take *t = arg;
	struct snap_take_names_job *x = t->names;

	t->names_job = NULL;
	t->names = NULL;
	t->pending--;
	/* Told with the snapshot: the add's rounds say theirs afresh. */
	if (x->cause != NULL) {
		free(t->names_cause);
		t->names_cause = xprintf("the names your index tracks are not "
		    "known (%s): a tracked file your ignore rules name is in "
		    "this snapshot only if it was in the last one", x->cause);
	}
	/* Each runs the job's next step itself (the job may end there). */
	if (x->in.len > 0)
		snap_take_index_info(t, &x->in, snap_take_add);
	else
		snap_take_add(t);
	snap_take_names_job_free(x);
}

/* Before a live add in a git project: the private index's names made the user's tracked ones. */
static void
snap_take_tracked(struct snap_take *t)
{
	struct snap_take_names_job *x;
	char *cause = NULL;

	if (t->repo->projgit == NULL) {
		snap_take_add(t);
		return;
	}
	x = xcalloc(1, sizeof *x);
	x->projgit = xstrdup(t->repo->projgit);
	x->index = xstrdup(t->repo->index);
	x->oidlen = snap_take_oidlen(t);
	x->empty_blob = xstrdup(snap_repo_empty_blob(t->repo));
	x->empty_tree = xstrdup(snap_repo_empty_tree(t->repo));
	buf_init(&x->in);
	t->names = x;
	t->names_job = thread_job_start(t->base, snap_take_names_work, x,
	    snap_take_names_done, t, &cause);
	if (t->names_job == NULL) {
		t->names = NULL;
		snap_take_names_job_free(x);
		snap_take_error(t, xprintf("cannot compare the index with "
		    "the project's: %s", cause));
		free(cause);
		return;
	}
	/* A step of the job: nothing follows before it is done. */
	t->pending++;
}

/* ---- starting ---- */

static void
snap_take_refs_cb(struct proc *p, void *arg)
{
	struct snap_take *t = arg;

	if (proc_status(p) != 0)
		strv_take(&t->warnings, snap_git_error("for-each-ref", p));
	else
		buf_add(&t->refs, proc_out(p)->data, proc_out(p)->len);
	snap_take_reap(t, p);
	snap_take_refs_in(t);
}

/*
 * The chain so far: the last snapshot of the session (the record's
 * parent), and where changes count from: the session's first tree, or
 * for the first, the project's last snapshot before it (else nothing).
 */
static void
snap_take_chain(struct snap_take *t)
{
	struct store_snapshot **v;
	char *last;
	size_t n;

	n = 0;
	v = t->session > 0 ? store_snapshot_list(t->st, t->session, &n) : NULL;
	if (n > 0) {
		t->prev_commit = xstrdup(v[n - 1]->commit);
		t->prev_tree = xstrdup(v[n - 1]->tree);
		/*
		 * Later snapshots count from the first one's tree: the same
		 * tree as the last one has its count, unless the last one is
		 * the first (whose count is from before): then nothing changed.
		 */
		t->prev_changed = n > 1 ? v[n - 1]->files_changed : 0;
		t->count_from = xstrdup(v[0]->tree);
	} else if ((last = store_snap_last_tree(t->st, t->repo->gitdir)) !=
	    NULL)
		t->count_from = last;
	else
		t->count_from = xstrdup(snap_repo_empty_tree(t->repo));
	store_snapshot_list_free(v, n);
}

/*
 * The first snapshot of a chain writes a ref: git update-ref starts
 * early, held for its input, in a loop turn of its own (a child's start
 * holds the loop: 40 ms under load), unless the commit is written by then.
 */
/* Test hook: called as the early writer is started ("ref"). */
AM_TESTABLE void (*snap_take_early_starting)(const char *which);

static void
snap_take_early(struct snap_take *t)
{
	char *cause = NULL;

	if (t->commit_begun || t->early_ref != NULL)
		return;
	if (snap_take_early_starting != NULL)
		snap_take_early_starting("ref");
	t->early_ref = snap_git_start_held(t->base, t->repo, SNAP_ENV_DB,
	    snap_take_update_ref, snap_take_update_ref_cb, t, &cause);
	/* Not fatal: the step runs its own command then. */
	if (cause != NULL)
		log_debug("%s", cause);
	free(cause);
}

/* The early writer's own turn. */
static void
snap_take_early_cb(evutil_socket_t fd, short what, void *arg)
{
	struct snap_take *t = arg;
	int64_t t0 = loop_trace_begin();

	(void)fd;
	(void)what;
	snap_take_early(t);
	loop_trace_end(t0, "snapshot: the early writer (ref) started");
}

/*
 * It starts in the loop's next turn (a timer due at once: the loop polls
 * keys, the proxy's connections and due timers before it), not in the
 * snapshot's start; at once if that cannot be.
 */
static void
snap_take_early_later(struct snap_take *t)
{
	struct timeval now = { 0, 0 };

	t->early_ev = evtimer_new(t->base, snap_take_early_cb, t);
	if (t->early_ev == NULL || evtimer_add(t->early_ev, &now) == -1)
		snap_take_early(t);
}

static void
snap_take_read_tree_cb(struct proc *p, void *arg)
{
	struct snap_take *t = arg;

	t->pending--;
	if (proc_status(p) != 0)
		snap_take_error(t, snap_git_error("read-tree", p));
	snap_take_reap(t, p);
	snap_take_step(t);
}

/*
 * A frozen chain begun in another process: the entries of its last
 * snapshot (the start snapshot's, if it has no other), with the stat data
 * the seed has for those that are the same (a one-way merge into the
 * index alone). A chain in one process goes on from its last index the
 * same way; reading the start tree instead would drop what the session
 * made, and every file of it, however big, would be hashed again by each
 * later diff or snapshot.
 */
static void
snap_take_from_start(struct snap_take *t)
{
	const char *args[] = { "read-tree", "-m", "-i", t->prev_tree != NULL ?
	    t->prev_tree : t->repo->start_tree, NULL };

	t->next = snap_take_frozen_round;
	snap_take_spawn(t, SNAP_ENV_TREE, args, NULL, NULL,
	    snap_take_read_tree_cb);
}

/* The job's first step (it ends on the loop, never inside snap_take_start). */
static void
snap_take_begin(struct snap_take *t, bool fresh)
{
	const char *refs[] = { "for-each-ref", "--format=%(objectname) "
	    "%(refname)", "refs/heads/", NULL };

	int64_t t0;

	if (t->record_refs) {
		t0 = loop_trace_begin();
		snap_take_save_user_index(t);
		loop_trace_end(t0, "snapshot start: the user's index's copy "
		    "started");
		t0 = loop_trace_begin();
		if (snap_take_spawn(t, SNAP_ENV_PROJECT, refs, NULL, NULL,
		    snap_take_refs_cb))
			t->refs_left++;
		loop_trace_end(t0, "snapshot start: for-each-ref started");
	}
	t0 = loop_trace_begin();
	if (t->frozen && fresh && t->repo->start_tree != NULL)
		snap_take_from_start(t);
	else if (t->frozen)
		snap_take_frozen_round(t);
	else if (t->native && t->co_base != NULL) {
		/* The names come from the checkout's index, read off the loop. */
		t->co_unseeded = true;
		snap_take_add(t);
	} else
		snap_take_tracked(t);
	loop_trace_end(t0, "snapshot start: the first round");
}

/* ---- the disk reserve ([limits] disk_reserve) ---- */

/* How long a stop waits for each git it killed to be gone. */
#define SNAP_TAKE_KILL_WAIT_MS 2000

/* Why the snapshot stops: the disk of R's repository is short of inodes. */
static int
snap_take_no_files(const struct snap_repo *r, const struct statvfs *sv,
    char **why)
{
	char *q = quote_name(r->gitdir), *conf = path_config_file(), *cq;

	cq = quote_name(conf);
	*why = xprintf("the disk of %s has %llu free inodes, less than the "
	    "%lld (1%% of its inodes, at least 1000 or a tenth) that [limits] "
	    "disk_reserve keeps free: the snapshot is not written (the files "
	    "it was writing are removed); remove files you do not need there "
	    "(many small or empty files take the inodes) and take it again "
	    "(agentmux snapshot), or turn the reserve off with disk_reserve = "
	    "0 in %s", q, (unsigned long long)sv->f_favail,
	    (long long)util_inode_reserve(sv->f_files), cq);
	free(q);
	free(conf);
	free(cq);
	return -1;
}

/*
 * 0 if the own repository's disk has more free than the reserve; else -1
 * with *WHY (what, how much, what to do). A disk that cannot be read is
 * let be: git's own write then fails, saying so.
 */
static int
snap_take_room(struct snap_take *t, char **why)
{
	struct snap_repo *r = t->repo;
	struct statvfs sv;
	int64_t free_, total, reserve;
	char fb[32], rb[32], *q, *conf, *cq;

	if ((r->reserve == 0 && r->reserve_pct == 0) ||
	    statvfs(r->gitdir, &sv) == -1)
		return 0;
	if ((int64_t)sv.f_favail < util_inode_reserve(sv.f_files))
		return snap_take_no_files(r, &sv, why);
	free_ = (int64_t)sv.f_bavail * (int64_t)sv.f_frsize;
	total = (int64_t)sv.f_blocks * (int64_t)sv.f_frsize;
	reserve = r->reserve_pct > 0 ? total / 100 * r->reserve_pct :
	    r->reserve;
	if (free_ >= reserve)
		return 0;
	q = quote_name(r->gitdir);
	conf = path_config_file();
	cq = quote_name(conf);
	*why = xprintf("the disk of %s has %s free, less than the %s that "
	    "[limits] disk_reserve keeps free: the snapshot is not written "
	    "(the files it was writing are removed; objects it had finished "
	    "stay until the repository is pruned); free some space and take "
	    "it again (agentmux snapshot), or lower disk_reserve in %s (0 "
	    "turns it off)",
	    q, util_fmt_size(fb, sizeof fb, free_),
	    util_fmt_size(rb, sizeof rb, reserve), cq);
	free(q);
	free(conf);
	free(cq);
	return -1;
}

/*
 * Removes the temporary files in DIR (of the objects dir OBJ), whoever
 * left them: this job's git, killed, and any git of the repository that
 * died of a full disk before it (git leaves its tmp_obj_ behind then). A
 * git of another job writing here at this moment fails (its rename finds
 * nothing) and its snapshot with it; nothing finished is touched.
 */
static void
snap_take_scrub_dir(struct snap_take *t, int obj, const char *dir)
{
	struct dirent *de;
	struct stat sb;
	DIR *d;
	int fd;

	fd = openat(obj, dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1 || (d = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, "tmp_", 4) != 0 ||
		    strcmp(de->d_name, SNAP_KEEP_FANOUT) == 0 ||
		    fstatat(fd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) == -1 ||
		    !S_ISREG(sb.st_mode))
			continue;
		if (unlinkat(fd, de->d_name, 0) == -1)
			log_info("cannot remove %s/objects/%s/%s: %s",
			    t->repo->gitdir, dir, de->d_name, strerror(errno));
	}
	closedir(d);
}

/*
 * What git (killed) left half-written in the own repository: its
 * temporary packs and indexes (objects/pack/tmp_*) and loose objects
 * (objects/XX/tmp_obj_*). Whole loose objects stay, unreachable, for gc.
 */
static void
snap_take_scrub(struct snap_take *t)
{
	char *path = xprintf("%s/objects", t->repo->gitdir), sub[3];
	unsigned i;
	int obj;

	obj = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	free(path);
	if (obj == -1)
		return;
	snap_take_scrub_dir(t, obj, "pack");
	for (i = 0; i < 256; i++) {
		snprintf(sub, sizeof sub, "%02x", i);
		snap_take_scrub_dir(t, obj, sub);
	}
	close(obj);
}

/* The disk went below the reserve: every writer stops, its files go, the job fails with WHY. */
static void
snap_take_stop(struct snap_take *t, char *why)
{
	size_t i;

	snap_pack_job_free(t->packjob);
	t->packjob = NULL;
	/* Gone before the scrub: a git still in a write would leave a file after it. */
	for (i = 0; i < nitems(t->procs); i++) {
		proc_kill_wait(t->procs[i], SNAP_TAKE_KILL_WAIT_MS);
		proc_free(t->procs[i]);
		t->procs[i] = NULL;
	}
	snap_take_scrub(t);
	log_info("a snapshot stopped: %s", why);
	free(t->error);
	t->error = why;
	t->pending = 0;
	t->freezing = 0;
	t->borrowing = 0;
	t->borrow_due = false;
	snap_take_end(t, NULL);
}

static void
snap_take_watch_cb(evutil_socket_t fd, short what, void *arg)
{
	struct snap_take *t = arg;
	char *why = NULL;

	(void)fd;
	(void)what;
	/* Recorded, it is written: what follows is small. */
	if (t->recorded || snap_take_room(t, &why) == 0)
		return;
	snap_take_stop(t, why);
}

/* Watches the reserve while the job writes, if one is set. */
static void
snap_take_watch(struct snap_take *t)
{
	struct timeval tv = { 0, SNAP_TAKE_WATCH_MS * 1000 };

	if (t->repo->reserve == 0 && t->repo->reserve_pct == 0)
		return;
	t->watch = event_new(t->base, -1, EV_PERSIST, snap_take_watch_cb, t);
	if (t->watch == NULL || event_add(t->watch, &tv) == -1)
		fatalx("cannot watch the free space of %s", t->repo->gitdir);
}

/*
 * Whether a write through a shared mapping of a file in DIR can leave
 * its times as they were: a tmpfs (or ramfs) never writes its pages
 * back, and on one the write changes no time at all, not even the first.
 */
static bool
snap_take_timeless(const char *dir)
{
	struct statfs sf;

	return statfs(dir, &sf) == 0 && (sf.f_type == TMPFS_MAGIC ||
	    sf.f_type == RAMFS_MAGIC);
}

/* How far the kernel's coarse clock (file times) may lag the real one: a few ticks. */
#define SNAP_TAKE_CLOCK_LAG_MS 20

/*
 * A snapshot that the present is checked against (an end, undo's
 * present, a diff's while the session runs) trusts no stat data the
 * session could have made: a file written through a shared mapping after a turn
 * snapshot cached its stat data changes no time (its first write did,
 * once), and mtime can be set back. ctime cannot be set from user space,
 * so every entry changed at or after the second the session started is
 * hashed again; on a tmpfs, where a mapped write changes no time ever,
 * every entry is. A start has nothing to distrust, a turn's cache is
 * checked again by the end, and a manual one's by the next undo or diff.
 *
 * An end told when the command was let go (a worktree session: its tree
 * is new, and no other jail sees it) starts distrusting there instead,
 * less SNAP_TAKE_CLOCK_LAG_MS: file times come from the kernel's coarse
 * clock, which lags the one read here by up to a tick. Whole seconds
 * still, as git compares them: a write in the second an entry's ctime
 * was cached in would pass git's stat check. Such an end (the jail is
 * gone by then) first checks each entry against its file instead
 * (snap_index_verify): one whose ctime is still the one cached, to the
 * nanosecond, and earlier than the go was not written by the session,
 * so only the others are hashed again; it falls back to the seconds if
 * the check cannot be made.
 */
static bool
snap_take_verify(struct snap_take *t)
{
	int n;

	if (t->first_write_ms <= SNAP_TAKE_CLOCK_LAG_MS || t->kind == NULL ||
	    strcmp(t->kind, "end") != 0)
		return false;
	if ((n = snap_index_verify(t->repo->index, snap_take_oidlen(t),
	    t->repo->worktree, (t->first_write_ms - SNAP_TAKE_CLOCK_LAG_MS) *
	    1000000)) == -1) {
		/* No index: nothing is cached, nothing to distrust. */
		if (errno == ENOENT)
			return true;
		log_debug("cannot check the entries of %s against the work "
		    "tree: %s", t->repo->index, strerror(errno));
		return false;
	}
	log_debug("%s: %d entries changed or cached since the command was let "
	    "go, to be hashed again", t->repo->worktree, n);
	return true;
}

static void
snap_take_distrust(struct snap_take *t)
{
	struct store_session *s;
	uint32_t since;
	bool ended;

	if (t->st == NULL || t->session <= 0 || (t->kind != NULL &&
	    strcmp(t->kind, "end") != 0 && strcmp(t->kind, "undo") != 0) ||
	    (s = store_session_get(t->st, t->session)) == NULL)
		return;
	since = (uint32_t)(s->started_at / 1000);
	if (t->first_write_ms - SNAP_TAKE_CLOCK_LAG_MS > s->started_at)
		since = (uint32_t)((t->first_write_ms -
		    SNAP_TAKE_CLOCK_LAG_MS) / 1000);
	ended = s->ended_at != 0;
	store_session_free(s);
	/* A diff after the end: the end hashed them, and no jail is left to write through a mapping. */
	if (t->kind == NULL && ended)
		return;
	if (snap_take_timeless(t->repo->worktree))
		since = 0;
	else if (snap_take_verify(t))
		return;
	if (snap_index_smudge(t->repo->index, snap_take_oidlen(t), since) ==
	    -1 && errno != ENOENT)
		log_debug("cannot mark the entries of %s changed since the "
		    "session started: %s", t->repo->index, strerror(errno));
}

struct snap_take *
snap_take_start(struct event_base *base, struct store *st,
    struct snap_repo *repo, const struct snap_take_opts *o,
    void (*progress)(void *, int64_t), snap_done_cb done, void *arg,
    char **cause)
{
	struct snap_take *t = xcalloc(1, sizeof *t);
	bool fresh = !repo->seeded;
	int64_t t0;
	size_t i;

	t->base = base;
	t->st = st;
	t->repo = repo;
	t->kind = o->kind != NULL ? xstrdup(o->kind) : NULL;
	t->label = o->label != NULL ? xstrdup(o->label) : NULL;
	t->session = o->session;
	t->if_changed = o->if_changed;
	t->first_write_ms = o->first_write_ms;
	t->borrow_fd = t->borrow_lock = -1;
	buf_init(&t->borrowed);
	buf_init(&t->co_tracked);
	strv_init(&t->co_converted);
	if (o->checkout != NULL) {
		t->co_base = xstrdup(o->checkout->base);
		t->co_common = xstrdup(o->checkout->common);
		t->co_index = xstrdup(o->checkout->index);
		if (o->checkout->tree != NULL)
			t->co_tree = xstrdup(o->checkout->tree);
		if (o->checkout->converted != NULL) {
			t->co_attrs_known = true;
			for (i = 0; i < o->checkout->converted->n; i++)
				strv_add(&t->co_converted,
				    o->checkout->converted->v[i]);
		}
	}
	t->record_refs = o->record_refs && repo->projgit != NULL;
	t->refs_done = !t->record_refs;
	t->progress = progress;
	t->done = done;
	t->arg = arg;
	buf_init(&t->placeholders);
	buf_init(&t->adopted);
	buf_init(&t->untracked);
	strv_init(&t->warnings);
	strv_init(&t->unreadable);
	strv_init(&t->nonfiles);
	buf_init(&t->refs);
	buf_init(&t->ignores);
	strv_init(&t->ignore_dirs);
	snap_modes_init(&t->modes);
	t->entries = -1;
	t0 = loop_trace_begin();
	snap_take_chain(t);
	loop_trace_end(t0, "snapshot start: the chain read");
	t->freeze = t->kind != NULL && strcmp(t->kind, "start") == 0 &&
	    t->prev_tree == NULL;
	t->frozen = repo->ignore != NULL && !t->freeze;
	/* Below the reserve already: nothing is written. */
	t0 = loop_trace_begin();
	if (snap_take_room(t, cause) == -1 ||
	    (fresh && snap_repo_seed(repo, cause) == -1)) {
		snap_take_free(t);
		return NULL;
	}
	loop_trace_end(t0, "snapshot start: room and seed");
	t->bulk = fresh && access(repo->index, F_OK) != 0;
	t->native = t->bulk && snap_take_oidlen(t) == SNAP_PACK_OID &&
	    !snap_take_git_only;
	if (!t->bulk)
		snap_take_distrust(t);
	t->starting = true;
	snap_take_begin(t, fresh);
	t->starting = false;
	if (t->error != NULL && t->pending == 0) {
		*cause = t->error;
		t->error = NULL;
		snap_take_free(t);
		return NULL;
	}
	if (t->kind != NULL && t->prev_tree == NULL)
		snap_take_early_later(t);
	snap_take_watch(t);
	return t;
}

void
snap_take_when_saved(struct snap_take *t, void (*fn)(void *), void *arg)
{
	t->saved = fn;
	t->saved_arg = arg;
	if (t->recorded)
		snap_take_tell_saved(t);
}

void
snap_take_cancel(struct snap_take *t)
{
	if (t != NULL)
		snap_take_free(t);
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
	s->res->modes = res->modes != NULL ? xstrdup(res->modes) : NULL;
	s->res->warnings = res->nwarnings > 0 ? xcalloc(res->nwarnings,
	    sizeof *s->res->warnings) : NULL;
	for (i = 0; i < res->nwarnings; i++)
		s->res->warnings[i] = xstrdup(res->warnings[i]);
	s->res->unreadable = res->nunreadable > 0 ? xcalloc(res->nunreadable,
	    sizeof *s->res->unreadable) : NULL;
	for (i = 0; i < res->nunreadable; i++)
		s->res->unreadable[i] = xstrdup(res->unreadable[i]);
	s->res->nonfiles = res->nnonfiles > 0 ? xcalloc(res->nnonfiles,
	    sizeof *s->res->nonfiles) : NULL;
	for (i = 0; i < res->nnonfiles; i++)
		s->res->nonfiles[i] = xstrdup(res->nonfiles[i]);
}

/* Blocking, on the process's loop: for commands only (see proc_sync_run). */
int
snap_take_sync(struct store *st, struct snap_repo *repo,
    const struct snap_take_opts *o, struct snap_result *res, char **cause)
{
	struct event_base *base = proc_base();
	struct snap_take_sync s;
	struct snap_take *t;
	bool finished = false;

	memset(res, 0, sizeof *res);
	s.res = res;
	s.error = NULL;
	t = snap_take_start(base, st, repo, o, snap_take_sync_progress,
	    snap_take_sync_done, &s, cause);
	if (t != NULL) {
		/* The job frees itself when it ends: the flag lives outside it. */
		t->finished = &finished;
		proc_sync_run(base, &finished);
	}
	if (snap_sync_progress != NULL)
		snap_sync_progress(snap_sync_progress_arg, -1);
	if (t == NULL)
		return -1;
	if (s.error != NULL) {
		*cause = s.error;
		return -1;
	}
	return 0;
}
