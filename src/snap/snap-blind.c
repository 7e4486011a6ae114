/*
 * What a session did to blind the user's own git to its changes: index
 * entries it marked skip-worktree or assume-unchanged (git status and git
 * diff then pass over them) and replace refs it made (git log shows
 * another commit in the place of one). Both are looked at once when the
 * command starts and once when it ends; what is new is reported.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "snap/snap-int.h"

/* The most marks or replace refs told one by one; the rest are counted. */
#define SNAP_BLIND_TELL 10

/* What git reads and agentmux cannot, for a message (snap_index_ext's 2). */
#define SNAP_BLIND_ODD "; it was laid out so that git reads another copy " \
	"than agentmux checks (two of them, or bytes after the last " \
	"extension), as only a forger lays it out"

/* A nested repository's extension laid out so (in the place of its hash). */
#define SNAP_BLIND_NESTED_ODD "odd"

static void snap_blind_tree_at(const char *, struct strv *, struct strv *);

/* The session's index for a message: ".git/index", or a worktree's own (in its admin dir), quoted. Caller frees. */
static char *
snap_blind_index_said(const struct snap_worktree *wt)
{
	char *index, *q;

	if (wt == NULL)
		return xstrdup(".git/index");
	index = xprintf("%s/index", wt->admin);
	q = snap_nested_quote(index);
	free(index);
	return q;
}

/* Where the user runs git on that index, for a message: the project, or the session's worktree. Caller frees. */
static char *
snap_blind_where(const struct snap_worktree *wt)
{
	char *q, *where;

	if (wt == NULL)
		return xstrdup("the project");
	q = snap_nested_quote(wt->path);
	where = xprintf("the session's worktree %s", q);
	free(q);
	return where;
}

void
snap_blind_init(struct snap_blind *b)
{
	strv_init(&b->marked);
	strv_init(&b->replace);
	strv_init(&b->nmarked);
	strv_init(&b->nexts);
	strv_init(&b->nuntr);
	b->nested_read = false;
	b->had_git = false;
	buf_init(&b->untr);
	b->untr_read = 0;
	buf_init(&b->fsmn);
	b->fsmn_read = 0;
	buf_init(&b->tree);
	b->tree_read = 0;
	b->untr_rc = 1;
	strv_init(&b->untr_hidden);
	b->untr_cause = NULL;
}

void
snap_blind_free(struct snap_blind *b)
{
	strv_free(&b->marked);
	strv_free(&b->replace);
	strv_free(&b->nmarked);
	strv_free(&b->nexts);
	strv_free(&b->nuntr);
	buf_free(&b->untr);
	buf_free(&b->fsmn);
	buf_free(&b->tree);
	strv_free(&b->untr_hidden);
	free(b->untr_cause);
	b->untr_cause = NULL;
}

/*
 * The index entries with a mark in B (git ls-files -v -z), into OUT as
 * "S path" (skip-worktree) or "h path" (assume-unchanged: git shows its
 * tag in lower case).
 */
static void
snap_blind_marks_of(const struct buf *b, struct strv *out)
{
	const char *p, *end;

	for (p = b->data, end = b->data + b->len; p != NULL && p < end;
	    p += strlen(p) + 1) {
		if (strlen(p) > 2 && (p[0] == 'S' || (p[0] >= 'a' &&
		    p[0] <= 'z')) && !strv_contains(out, p))
			strv_add(out, p);
	}
}

/*
 * The index entries of GITDIR with a mark (see snap_blind_marks_of). Git
 * reads the index alone, no work tree, with agentmux's settings: nothing
 * runs.
 */
static void
snap_blind_marks(const char *gitdir, struct strv *out)
{
	static const char *const args[] = { "ls-files", "-v", "-z", NULL };
	struct buf b;
	char *cause = NULL;

	buf_init(&b);
	if (snap_git_plain_io(gitdir, args, NULL, &b, &cause) == -1) {
		log_warnx("cannot read the index of %s: %s", gitdir, cause);
		free(cause);
	} else
		snap_blind_marks_of(&b, out);
	buf_free(&b);
}

/* The refs under refs/replace/ of the git dir GITFD, as "ref\tvalue" (no link followed). */
static void
snap_blind_replace(int gitfd, struct strv *out)
{
	struct strv refs;
	size_t i;

	snap_hist_refs(gitfd, &refs);
	for (i = 0; i < refs.n; i++) {
		/* (A packed-refs not read is said too: snap_blind_unread.) */
		if (strncmp(refs.v[i], "refs/replace/", 13) == 0 ||
		    strncmp(refs.v[i], SNAP_HIST_PACKED "\t",
		    sizeof SNAP_HIST_PACKED) == 0)
			strv_add(out, refs.v[i]);
	}
	strv_free(&refs);
}

/* Whether REPLACE (snap_blind_replace) came from a packed-refs not read. */
static bool
snap_blind_unread(const struct strv *replace)
{
	size_t i;

	for (i = 0; i < replace->n; i++) {
		if (strncmp(replace->v[i], SNAP_HIST_PACKED "\t",
		    sizeof SNAP_HIST_PACKED) == 0)
			return true;
	}
	return false;
}

/* The extensions a look keeps, in the order of snap_blind_exts_into. */
static const char *const snap_blind_ext_sigs[] = { "UNTR", "FSMN", "TREE" };
#define SNAP_BLIND_NEXTS nitems(snap_blind_ext_sigs)

/* Test hook: called with the index before its extensions are read (on a helper thread at a start or end). */
AM_TESTABLE void (*snap_blind_exts_reading)(const char *index);

/* The untracked cache, fsmonitor data and cache-tree read (OUTS, RCS) into B. */
static void
snap_blind_exts_into(struct snap_blind *b, struct buf *outs, const int *rcs)
{
	struct buf *into[] = { &b->untr, &b->fsmn, &b->tree };
	int *read[] = { &b->untr_read, &b->fsmn_read, &b->tree_read };
	size_t i;

	for (i = 0; i < SNAP_BLIND_NEXTS; i++) {
		buf_free(into[i]);
		*into[i] = outs[i];
		buf_init(&outs[i]);
		*read[i] = rcs[i];
	}
}

/* The untracked cache, fsmonitor data and cache-tree of GITDIR's index (one read of it), into B. */
static void
snap_blind_exts(const char *gitdir, struct snap_blind *b)
{
	char *index = xprintf("%s/index", gitdir);
	struct buf outs[SNAP_BLIND_NEXTS];
	int rcs[SNAP_BLIND_NEXTS];
	size_t i;

	for (i = 0; i < SNAP_BLIND_NEXTS; i++)
		buf_init(&outs[i]);
	snap_index_exts(index, snap_blind_ext_sigs, SNAP_BLIND_NEXTS, outs,
	    rcs);
	snap_blind_exts_into(b, outs, rcs);
	free(index);
}

/* The read of an index's extensions on a helper thread: its own copies only. */
struct snap_blind_exts_job {
	char *index;
	struct buf outs[SNAP_BLIND_NEXTS];
	int rcs[SNAP_BLIND_NEXTS];
};

/*
 * On the helper thread: the read (a whole index, its checksum: tens of ms
 * on a 10,000-file project), inside the clone gate (it allocates).
 */
static void
snap_blind_exts_work(void *arg)
{
	struct snap_blind_exts_job *x = arg;

	if (snap_blind_exts_reading != NULL)
		snap_blind_exts_reading(x->index);
	clone_gate_enter();
	snap_index_exts(x->index, snap_blind_ext_sigs, SNAP_BLIND_NEXTS,
	    x->outs, x->rcs);
	clone_gate_leave();
}

static void
snap_blind_exts_job_free(struct snap_blind_exts_job *x)
{
	size_t i;

	if (x == NULL)
		return;
	for (i = 0; i < SNAP_BLIND_NEXTS; i++)
		buf_free(&x->outs[i]);
	free(x->index);
	free(x);
}

/* The marks and replace refs of PROJECT's .git now into B (emptied first). */
static void
snap_blind_look(const char *project, struct snap_blind *b)
{
	char *gitdir = xprintf("%s/.git", project);
	int gitfd;

	snap_blind_free(b);
	snap_blind_init(b);
	gitfd = open(gitdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (gitfd != -1) {
		b->had_git = true;
		snap_blind_replace(gitfd, &b->replace);
		close(gitfd);
		snap_blind_marks(gitdir, &b->marked);
		snap_blind_exts(gitdir, b);
	}
	free(gitdir);
}

void
snap_blind_begin(const char *project, struct snap_blind *start)
{
	snap_blind_look(project, start);
}

/* A look at a project's .git on the loop: its refs at once, its index by git ls-files. */
struct snap_blind_read {
	struct proc *p;
	struct snap_blind *into;
	char *gitdir;             /* whose index: PROJECT/.git, or a worktree's own */
	char *common;             /* its refs, config, info/exclude: NULL if GITDIR */
	void (*done)(void *);
	void *arg;
	struct event_base *base;
	char *project;
	const struct snap_blind *start; /* at the end: the start's look, for the untracked cache */
	struct snap_untr *u;
	struct strv nested;       /* at the end: the nested repositories (relative) */
	size_t nat;               /* the next of into->nexts whose untracked cache is checked */
	char *nrepo;              /* the one being checked */
	struct strv nhidden;      /* what it found */
	int nrc;
	char *ncause;
	struct thread_job *job;   /* the index's extensions read on a helper thread */
	struct snap_blind_exts_job *exts;
};

static void snap_blind_read_nested(struct snap_blind_read *);

/* True if the extension read at the end (NOW, READ) is new or changed since START. */
static bool
snap_blind_ext_changed(const struct buf *start, int start_read,
    const struct buf *now, int now_read)
{
	return now_read == 1 && (start_read != 1 || start->len != now->len ||
	    memcmp(start->data, now->data, now->len) != 0);
}

/* True if NOW's untracked cache is not START's. */
static bool
snap_blind_untr_changed(const struct snap_blind *start,
    const struct snap_blind *now)
{
	return snap_blind_ext_changed(&start->untr, start->untr_read,
	    &now->untr, now->untr_read);
}

/* The end's check of the untracked cache is over. */
static void
snap_blind_read_untr(void *arg)
{
	struct snap_blind_read *r = arg;

	snap_untr_free(r->u);
	r->u = NULL;
	snap_blind_read_nested(r);
}

/* The entry of a nested repository's extension (snap_blind_nested_ext): its repository (caller frees) and signature, NULL if it is none. */
static char *
snap_blind_nested_entry(const char *entry, const char **sig)
{
	char *end;
	size_t len = strtoul(entry, &end, 10);

	if (*end != ':' || strnlen(end + 1, len + 4) < len + 4)
		return NULL;
	*sig = end + 1 + len;
	return xstrndup(end + 1, len);
}

/* The nested repository REPO's untracked cache was checked: its answer into INTO's nuntr. */
static void
snap_blind_nested_record(struct snap_blind *into, const char *repo, int rc,
    const char *cause, const struct strv *hidden)
{
	size_t i, len = strlen(repo);

	if (rc == -1) {
		strv_addf(&into->nuntr, "%zu:%sE%s", len, repo, cause != NULL ?
		    cause : "git status failed");
		return;
	}
	strv_addf(&into->nuntr, "%zu:%sR", len, repo);
	for (i = 0; i < hidden->n; i++)
		strv_addf(&into->nuntr, "%zu:%sH%s", len, repo, hidden->v[i]);
}

/* A nested repository's check of its untracked cache is over: the next. */
static void
snap_blind_read_nested_done(void *arg)
{
	struct snap_blind_read *r = arg;

	snap_blind_nested_record(r->into, r->nrepo, r->nrc, r->ncause,
	    &r->nhidden);
	snap_untr_free(r->u);
	r->u = NULL;
	r->nat++;
	snap_blind_read_nested(r);
}

/*
 * The check of a nested repository's untracked cache made or changed in
 * the session (as the project's, snap_untr_start) starts for the next one
 * from r->nat: true if it runs.
 */
static bool
snap_blind_read_nested_start(struct snap_blind_read *r)
{
	const char *entry = r->into->nexts.v[r->nat], *sig;
	char *repo, *gitdir, *dir;

	if (strv_contains(&r->start->nexts, entry) ||
	    (repo = snap_blind_nested_entry(entry, &sig)) == NULL)
		return false;
	if (strncmp(sig, "UNTR", 4) != 0 || strcmp(sig + 4,
	    SNAP_BLIND_NESTED_ODD) == 0 || (gitdir =
	    snap_nested_gitdir_of(r->project, repo)) == NULL) {
		free(repo);
		return false;
	}
	free(r->nrepo);
	r->nrepo = repo;
	strv_free(&r->nhidden);
	strv_init(&r->nhidden);
	free(r->ncause);
	r->ncause = NULL;
	dir = xprintf("%s/%s", r->project, repo);
	r->u = snap_untr_start(r->base, dir, gitdir, gitdir, &r->nhidden,
	    &r->nrc, &r->ncause, snap_blind_read_nested_done, r);
	free(dir);
	free(gitdir);
	if (r->u == NULL)
		snap_blind_nested_record(r->into, repo, -1, r->ncause, NULL);
	return r->u != NULL;
}

/* The nested repositories' untracked caches checked on the loop one after another, then DONE. */
static void
snap_blind_read_nested(struct snap_blind_read *r)
{
	for (; r->start != NULL && r->nat < r->into->nexts.n; r->nat++) {
		if (snap_blind_read_nested_start(r))
			return;
	}
	r->done(r->arg);
}

/* Both the marks (git ls-files) and the extensions (the helper thread) are in: the rest. */
static void
snap_blind_read_both(struct snap_blind_read *r)
{
	struct snap_blind *into = r->into;

	if (r->p != NULL || r->job != NULL)
		return;
	if (r->start != NULL && r->nested.n > 0) {
		snap_blind_nested(r->project, &r->nested, into);
		into->nested_read = true;
	}
	if (r->start != NULL && snap_blind_untr_changed(r->start, into) &&
	    (r->u = snap_untr_start(r->base, r->project, r->common != NULL ?
	    r->gitdir : NULL, r->common, &into->untr_hidden,
	    &into->untr_rc, &into->untr_cause, snap_blind_read_untr,
	    r)) != NULL)
		return;
	snap_blind_read_nested(r);
}

static void
snap_blind_read_over(struct proc *p, void *arg)
{
	struct snap_blind_read *r = arg;
	char *cause;

	if (proc_status(p) != 0) {
		cause = snap_git_error("ls-files", p);
		log_warnx("cannot read the index of %s: %s", r->gitdir, cause);
		free(cause);
	} else
		snap_blind_marks_of(proc_out(p), &r->into->marked);
	proc_free(p);
	r->p = NULL;
	snap_blind_read_both(r);
}

/* On the loop: the helper thread read the index's extensions (its job freed). */
static void
snap_blind_read_exts_done(void *arg)
{
	struct snap_blind_read *r = arg;

	r->job = NULL;
	snap_blind_exts_into(r->into, r->exts->outs, r->exts->rcs);
	snap_blind_exts_job_free(r->exts);
	r->exts = NULL;
	snap_blind_read_both(r);
}

/* The extensions of R's index read on a helper thread (else here, if it cannot start). */
static void
snap_blind_read_exts(struct snap_blind_read *r)
{
	struct snap_blind_exts_job *x = xcalloc(1, sizeof *x);
	char *cause = NULL;
	size_t i;

	x->index = xprintf("%s/index", r->gitdir);
	for (i = 0; i < SNAP_BLIND_NEXTS; i++)
		buf_init(&x->outs[i]);
	r->exts = x;
	r->job = thread_job_start(r->base, snap_blind_exts_work, x,
	    snap_blind_read_exts_done, r, &cause);
	if (r->job != NULL)
		return;
	log_debug("%s: its index is read on the loop", cause);
	free(cause);
	snap_blind_exts_job_free(x);
	r->exts = NULL;
	snap_blind_exts(r->gitdir, r->into);
}

struct snap_blind_read *
snap_blind_read_start(struct event_base *base, const char *project,
    const struct snap_worktree *wt, struct snap_blind *into,
    void (*done)(void *), void *arg)
{
	char *argv[] = { "git", "--no-pager", "ls-files", "-v", "-z", NULL };
	struct snap_blind_read *r;
	char *cause = NULL;
	int gitfd;

	snap_blind_free(into);
	snap_blind_init(into);
	r = xcalloc(1, sizeof *r);
	r->base = base;
	r->project = xstrdup(project);
	r->into = into;
	strv_init(&r->nested);
	strv_init(&r->nhidden);
	/* A worktree's: the dirs agentmux made, never what its .git file says. */
	r->gitdir = wt != NULL ? xstrdup(wt->admin) : xprintf("%s/.git",
	    project);
	r->common = wt != NULL ? xstrdup(wt->common) : NULL;
	r->done = done;
	r->arg = arg;
	gitfd = open(r->common != NULL ? r->common : r->gitdir, O_RDONLY |
	    O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (gitfd != -1) {
		snap_blind_replace(gitfd, &into->replace);
		close(gitfd);
	}
	if (gitfd != -1 && (gitfd = open(r->gitdir, O_RDONLY | O_DIRECTORY |
	    O_NOFOLLOW | O_CLOEXEC)) != -1) {
		close(gitfd);
		into->had_git = true;
		r->p = snap_git_plain_spawn(base, r->gitdir, argv, NULL,
		    snap_blind_read_over, r, &cause);
		if (r->p == NULL) {
			log_warnx("cannot read the index of %s: %s", r->gitdir,
			    cause);
			free(cause);
			/* As before: the caller's look still has them. */
			snap_blind_exts(r->gitdir, into);
		} else
			snap_blind_read_exts(r);
	}
	if (r->p == NULL) {
		snap_blind_read_free(r);
		return NULL;
	}
	return r;
}

void
snap_blind_read_free(struct snap_blind_read *r)
{
	if (r == NULL)
		return;
	/* Waits for the helper thread, if it still reads. */
	thread_job_free(r->job);
	snap_blind_exts_job_free(r->exts);
	proc_free(r->p);
	snap_untr_free(r->u);
	strv_free(&r->nested);
	strv_free(&r->nhidden);
	free(r->nrepo);
	free(r->ncause);
	free(r->gitdir);
	free(r->common);
	free(r->project);
	free(r);
}

struct snap_blind_read *
snap_blind_read_end(struct event_base *base, const char *project,
    const struct snap_worktree *wt, const struct strv *nested,
    const struct snap_blind *start, struct snap_blind *into,
    void (*done)(void *), void *arg)
{
	struct snap_blind_read *r;
	size_t i;

	r = snap_blind_read_start(base, project, wt, into, done, arg);
	if (r == NULL)
		return NULL;
	r->start = start;
	for (i = 0; nested != NULL && i < nested->n; i++)
		strv_add(&r->nested, nested->v[i]);
	return r;
}

/* How many more marks were made in the session (in WT's own index if a worktree session). */
static void
snap_blind_more_marks(const struct snap_worktree *wt, size_t more,
    struct strv *out)
{
	char *index = snap_blind_index_said(wt), *where = snap_blind_where(wt);

	strv_addf(out, "%zu more entries of %s were marked skip-worktree or "
	    "assume-unchanged in the session ('git ls-files -v' in %s shows "
	    "them with S or a lower-case tag)", more, index, where);
	free(where);
	free(index);
}

/* One line for a mark made in the session (in WT's own index if a worktree session). */
static void
snap_blind_tell_mark(const char *entry, const struct snap_worktree *wt,
    struct strv *out)
{
	bool skip = entry[0] == 'S';
	char *q = snap_nested_quote(entry + 2);
	char *index = snap_blind_index_said(wt), *where = snap_blind_where(wt);

	strv_addf(out, "%s was marked %s in %s in the session: your "
	    "git status and git diff no longer show its changes; see them with "
	    "'agentmux diff', and unmark it with 'git update-index %s -- %s' "
	    "in %s", q, skip ? "skip-worktree" : "assume-unchanged", index,
	    skip ? "--no-skip-worktree" : "--no-assume-unchanged", q, where);
	free(where);
	free(index);
	free(q);
}

/*
 * The extension SIG of the index INDEX (of the nested repository REPO),
 * hashed, into OUT as "len:repo" SIG hex; "odd" in the place of the hash
 * if it is laid out so that git reads another copy (snap_index_ext's 2).
 */
static void
snap_blind_nested_ext(const char *index, const char *repo, const char *sig,
    struct strv *out)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	char hex[2 * EVP_MAX_MD_SIZE + 1];
	unsigned int mdlen, i;
	struct buf ext;
	int rc;

	buf_init(&ext);
	rc = snap_index_ext(index, sig, &ext);
	if (rc == 2)
		strv_addf(out, "%zu:%s%s%s", strlen(repo), repo, sig,
		    SNAP_BLIND_NESTED_ODD);
	else if (rc == 1 && EVP_Digest(ext.data, ext.len, md, &mdlen,
	    EVP_sha256(), NULL) == 1) {
		for (i = 0; i < mdlen; i++)
			snprintf(hex + 2 * i, 3, "%02x", md[i]);
		strv_addf(out, "%zu:%s%s%s", strlen(repo), repo, sig, hex);
	}
	buf_free(&ext);
}

void
snap_blind_nested(const char *project, const struct strv *repos,
    struct snap_blind *b)
{
	static const char *const sigs[] = { "UNTR", "FSMN", "TREE" };
	char *gitdir, *index;
	size_t i, j;

	for (i = 0; i < repos->n; i++) {
		if ((gitdir = snap_nested_gitdir_of(project, repos->v[i])) ==
		    NULL)
			continue;
		index = xprintf("%s/index", gitdir);
		free(gitdir);
		if (snap_index_marks(index, repos->v[i], &b->nmarked) == -1)
			log_warnx("cannot read the index of %s: %s", index,
			    strerror(errno));
		for (j = 0; j < nitems(sigs); j++)
			snap_blind_nested_ext(index, repos->v[i], sigs[j],
			    &b->nexts);
		free(index);
	}
}

/*
 * A nested repository's untracked cache or fsmonitor data made or changed
 * in the session, or laid out oddly (ODD): dropped as the project's is,
 * and said naming the repository.
 */
static void
snap_blind_nested_cache(const char *index, const char *repo, bool untr,
    bool odd, struct strv *out)
{
	int rc = snap_index_drop_ext(index, untr ? "UNTR" : "FSMN");
	char *q = snap_nested_quote(repo);
	const char *how = odd ? SNAP_BLIND_ODD : "";

	if (rc == 1)
		strv_addf(out, "the %s in the index of the nested repository %s "
		    "was made or changed in the session%s: a forged one makes "
		    "git status there pass over %s; agentmux dropped it (git "
		    "builds it again); 'agentmux diff' shows what the session "
		    "did", untr ? "untracked cache" : "fsmonitor data", q, how,
		    untr ? "new files" : "edits (where core.fsmonitor is on)");
	else if (rc == -1)
		strv_addf(out, "the %s in the index of the nested repository %s "
		    "was made or changed in the session%s: a forged one makes "
		    "git status there pass over %s, and agentmux could not "
		    "drop it (%s); run 'git -C %s update-index %s' before you "
		    "trust git status there", untr ? "untracked cache" :
		    "fsmonitor data", q, how, untr ? "new files" : "edits",
		    errno == EEXIST ? "git holds its index.lock" :
		    strerror(errno), q, untr ? "--no-untracked-cache" :
		    "--no-fsmonitor");
	free(q);
}

/*
 * What the check on the loop found of REPO's untracked cache (NOW's
 * nuntr: 1 found, HIDDEN with the hidden files, *CAUSE if it could not
 * tell), else 0.
 */
static int
snap_blind_nested_found(const struct snap_blind *now, const char *repo,
    struct strv *hidden, char **cause)
{
	char *head = xprintf("%zu:%s", strlen(repo), repo);
	size_t i, hlen = strlen(head);
	int found = 0;

	for (i = 0; i < now->nuntr.n; i++) {
		const char *e = now->nuntr.v[i];

		if (strncmp(e, head, hlen) != 0)
			continue;
		found = 1;
		if (e[hlen] == 'E' && *cause == NULL)
			*cause = xstrdup(e + hlen + 1);
		else if (e[hlen] == 'H')
			strv_add(hidden, e + hlen + 1);
	}
	free(head);
	return found;
}

/* The red line for a nested repository REPO's cache that hides files (HIDDEN, relative to it) or may (WHY). */
static void
snap_blind_nested_untr_red(const char *repo, const struct strv *hidden,
    const char *why, int dropped, int err, struct strv *out)
{
	char *q = snap_nested_quote(repo), *names, *what;
	struct strv full;
	size_t i;

	strv_init(&full);
	for (i = 0; i < hidden->n; i++)
		strv_addf(&full, "%s/%s", repo, hidden->v[i]);
	names = snap_quote_names(&full, SNAP_BLIND_TELL);
	what = why != NULL ? xprintf("agentmux could not tell whether it hides "
	    "new files (%s)", why) : xprintf("it hid %zu untracked files from "
	    "git status there: %s", hidden->n, names);
	if (dropped == 1)
		strv_addf(out, "the untracked cache in the index of the nested "
		    "repository %s was made or changed in the session, and %s; "
		    "agentmux dropped it (git builds it again at the next git "
		    "status there); 'agentmux diff' shows what the session "
		    "added", q, what);
	else
		strv_addf(out, "the untracked cache in the index of the nested "
		    "repository %s was made or changed in the session, and %s; "
		    "agentmux could not drop it (%s): run 'git -C %s "
		    "update-index --no-untracked-cache' before you trust git "
		    "status there, and see what the session added with "
		    "'agentmux diff'", q, what, err == EEXIST ? "git holds its "
		    "index.lock" : strerror(err), q);
	free(what);
	free(names);
	strv_free(&full);
	free(q);
}

/*
 * A nested repository's untracked cache made or changed in the session,
 * as the project's (snap_blind_untr_check): whether it hides untracked
 * files there (found on the loop, NOW's nuntr, or now), then dropped; a
 * forged one red, git's own update said into NOTES.
 */
static void
snap_blind_nested_untr(const char *project, const char *repo,
    const char *gitdir, const char *index, const struct snap_blind *now,
    struct strv *out, struct strv *notes)
{
	struct strv hidden;
	char *cause = NULL, *dir, *q;
	int rc, dropped, err;

	strv_init(&hidden);
	if (snap_blind_nested_found(now, repo, &hidden, &cause))
		rc = cause != NULL ? -1 : 0;
	else {
		dir = xprintf("%s/%s", project, repo);
		rc = snap_untr_hidden(dir, gitdir, gitdir, &hidden, &cause);
		free(dir);
	}
	dropped = snap_index_drop_ext(index, "UNTR");
	err = errno;
	q = snap_nested_quote(repo);
	if (dropped == 0)
		;  /* gone meanwhile: git status scans again */
	else if (rc == 0 && hidden.n == 0)
		strv_addf(notes, "the untracked cache in the index of the "
		    "nested repository %s was updated in the session, as git "
		    "status does; it hides no untracked file (git status with "
		    "it and without it agree), and agentmux %s it all the "
		    "same", q, dropped == 1 ? "dropped" : "could not drop");
	else
		snap_blind_nested_untr_red(repo, &hidden, rc == -1 ? (cause !=
		    NULL ? cause : "git status failed") : NULL, dropped, err,
		    out);
	free(q);
	free(cause);
	strv_free(&hidden);
}

/*
 * A nested repository's index extension made or changed in the session,
 * or laid out oddly (ENTRY as snap_blind_nested_ext made it): checked and
 * dropped as the project's is (snap_blind_tree_at for its cache-tree).
 */
static void
snap_blind_nested_drop(const char *project, const char *entry,
    const struct snap_blind *now, struct strv *out, struct strv *notes)
{
	char *repo, *gitdir, *index;
	const char *sig;
	bool odd;

	if ((repo = snap_blind_nested_entry(entry, &sig)) == NULL)
		return;
	odd = strcmp(sig + 4, SNAP_BLIND_NESTED_ODD) == 0;
	if ((gitdir = snap_nested_gitdir_of(project, repo)) == NULL) {
		free(repo);
		return;  /* gone meanwhile: nothing is left to read it */
	}
	index = xprintf("%s/index", gitdir);
	if (strncmp(sig, "TREE", 4) == 0)
		snap_blind_tree_at(index, out, notes);
	else if (strncmp(sig, "UNTR", 4) == 0 && !odd)
		snap_blind_nested_untr(project, repo, gitdir, index, now, out,
		    notes);
	else
		snap_blind_nested_cache(index, repo, strncmp(sig, "UNTR", 4) ==
		    0, odd, out);
	free(gitdir);
	free(index);
	free(repo);
}

/* One line for a mark made in the session in a nested repository ("len:repo" then as ls-files -v). */
static void
snap_blind_tell_nested(const char *entry, struct strv *out)
{
	char *end, *repo, *full, *qr, *qp, *qf;
	size_t len = strtoul(entry, &end, 10);
	const char *tagp;
	bool skip;

	if (*end != ':' || strnlen(end + 1, len + 3) < len + 3)
		return;
	repo = xstrndup(end + 1, len);
	tagp = end + 1 + len;
	skip = tagp[0] == 'S' || tagp[0] == 's';
	full = xprintf("%s/%s", repo, tagp + 2);
	qr = snap_nested_quote(repo);
	qp = snap_nested_quote(tagp + 2);
	qf = snap_nested_quote(full);
	strv_addf(out, "%s was marked %s in the index of the nested repository "
	    "%s in the session: git status and git diff there no longer show "
	    "its changes; see them with 'agentmux diff', and unmark it with "
	    "'git -C %s update-index %s -- %s'", qf, skip ? "skip-worktree" :
	    "assume-unchanged", qr, qr, skip ? "--no-skip-worktree" :
	    "--no-assume-unchanged", qp);
	free(qf);
	free(qp);
	free(qr);
	free(full);
	free(repo);
}

/* One line for a replace ref made or moved in the session ("ref\tvalue"). */
static void
snap_blind_tell_replace(const char *entry, struct strv *out)
{
	char *ref = xstrndup(entry, strcspn(entry, "\t"));
	char *q = snap_nested_quote(ref);
	const char *value = entry + strlen(ref);

	value += *value == '\t' ? 1 : 0;
	strv_addf(out, "the session made the replace ref %s (to %.12s): your "
	    "git log and git show then show that commit in the place of "
	    "another; 'agentmux undo --refs' deletes it", q, value);
	free(q);
	free(ref);
}

/* The red line for a cache that hides files (HIDDEN) or may (WHY: why it cannot be told). */
static void
snap_blind_untr_red(const struct snap_worktree *wt, const struct strv *hidden,
    const char *why, int dropped, int err, struct strv *out)
{
	char *what = why != NULL ? xprintf("agentmux could not tell whether "
	    "it hides new files (%s)", why) : NULL, *names;
	char *index = snap_blind_index_said(wt), *where = snap_blind_where(wt);

	if (what == NULL) {
		names = snap_quote_names(hidden, SNAP_BLIND_TELL);
		what = xprintf("it hid %zu untracked files from your git "
		    "status: %s", hidden->n, names);
		free(names);
	}
	if (dropped == 1)
		strv_addf(out, "the untracked cache in %s (git's list of "
		    "untracked files per dir) was made or changed in the "
		    "session, and %s; agentmux dropped it (git builds it again "
		    "at your next git status); 'agentmux diff' shows what the "
		    "session added", index, what);
	else
		strv_addf(out, "the untracked cache in %s (git's list of "
		    "untracked files per dir) was made or changed in the "
		    "session, and %s; agentmux could not drop it (%s): run 'git "
		    "update-index --no-untracked-cache' in %s before "
		    "you trust git status ('git update-index --untracked-cache' "
		    "turns it on again), and see what the session added with "
		    "'agentmux diff'", index, what, err == EEXIST ?
		    "git holds the index's lock" : strerror(err), where);
	free(where);
	free(index);
	free(what);
}

/*
 * The untracked cache of .git/index changed in the session (NOW: at its
 * end). git status trusts it for every dir whose stat data it matches: a
 * forged one (a dir listed with no untracked files) hides new files from
 * it. One laid out so that git reads what agentmux cannot is forged
 * whatever it holds: it goes, said in red.
 */
static void
snap_blind_untr_drop(const char *index, const struct snap_worktree *wt,
    const char *odd, struct strv *out)
{
	int rc = snap_index_drop_ext(index, "UNTR"), err = errno;
	char *said, *where;

	if (rc == 0)
		return;  /* gone meanwhile: git status scans again */
	said = snap_blind_index_said(wt);
	where = snap_blind_where(wt);
	if (rc == 1)
		strv_addf(out, "the untracked cache in %s (git's list of "
		    "untracked files per dir) was made or changed in the "
		    "session%s: a forged one makes your git status pass over "
		    "new files; agentmux dropped it (git builds it again at "
		    "your next git status); 'agentmux diff' shows what the "
		    "session added", said, odd);
	else
		strv_addf(out, "the untracked cache in %s (git's list of "
		    "untracked files per dir) was made or changed in the "
		    "session%s: a forged one makes your git status pass over "
		    "new files, and agentmux could not drop it (%s); run 'git "
		    "update-index --no-untracked-cache' in %s before "
		    "you trust git status ('git update-index --untracked-cache' "
		    "turns it on again), and see what the session added with "
		    "'agentmux diff'", said, odd, err == EEXIST ?
		    "git holds the index's lock" : strerror(err), where);
	free(where);
	free(said);
}

/*
 * A changed untracked cache is told apart from git's own update: git
 * status run with it and without it (snap_untr_hidden) tells a forged
 * one (red, into OUT) from git's own update (said, into NOTES); either
 * way the changed one goes: git builds it again at the next git status.
 */
static void
snap_blind_untr_check(const char *project, const struct snap_worktree *wt,
    const struct snap_blind *start, const struct snap_blind *now,
    struct strv *out, struct strv *notes)
{
	struct strv hidden;
	char *index, *cause = NULL;
	size_t i;
	int rc, dropped, err;

	if (!snap_blind_untr_changed(start, now))
		return;
	strv_init(&hidden);
	/* Before the drop: the check needs the cache (done on the loop already, or now). */
	if (now->untr_rc == 1)
		rc = snap_untr_hidden(project, wt != NULL ? wt->admin : NULL,
		    wt != NULL ? wt->common : NULL, &hidden, &cause);
	else {
		rc = now->untr_rc;
		for (i = 0; i < now->untr_hidden.n; i++)
			strv_add(&hidden, now->untr_hidden.v[i]);
		cause = now->untr_cause != NULL ? xstrdup(now->untr_cause) :
		    NULL;
	}
	index = snap_blind_index(project, wt);
	dropped = snap_index_drop_ext(index, "UNTR");
	err = errno;
	free(index);
	index = NULL;
	if (dropped == 0)
		;  /* gone meanwhile: git status scans again */
	else if (rc == 0 && hidden.n == 0) {
		index = snap_blind_index_said(wt);
		strv_addf(notes, "the untracked cache in %s was updated "
		    "in the session, as git status does; it hides no untracked "
		    "file (git status with it and without it agree), and "
		    "agentmux %s it all the same", index, dropped == 1 ?
		    "dropped" : "could not drop");
		free(index);
	} else
		snap_blind_untr_red(wt, &hidden, rc == -1 ? (cause != NULL ? cause :
		    "git status failed") : NULL, dropped, err, out);
	free(cause);
	strv_free(&hidden);
}

/*
 * The fsmonitor data of .git/index (its token and the bitmap of entries
 * to look at again) changed in the session. Where core.fsmonitor is on,
 * git takes every entry outside the bitmap as unchanged unless the
 * monitor, asked about changes since the token, names it: a forged token
 * or bitmap hides edits from git status. Without core.fsmonitor git
 * ignores it (and drops it at its next index write), and the jail cannot
 * turn core.fsmonitor on for the host (.git/config is read-only there).
 * Dropped either way: git then looks at every file once.
 */
static void
snap_blind_fsmn_drop(const char *index, const struct snap_worktree *wt,
    struct strv *out)
{
	int rc = snap_index_drop_ext(index, "FSMN"), err = errno;
	char *said, *where;

	if (rc == 0)
		return;
	said = snap_blind_index_said(wt);
	where = snap_blind_where(wt);
	if (rc == 1)
		strv_addf(out, "the fsmonitor data in %s (the token and "
		    "list of files git's core.fsmonitor trusts as unchanged) "
		    "was made or changed in the session: a forged one makes "
		    "your git status pass over edits where core.fsmonitor is "
		    "on; agentmux dropped it (git looks at every file once "
		    "again); 'agentmux diff' shows what the session changed",
		    said);
	else
		strv_addf(out, "the fsmonitor data in %s (the token and "
		    "list of files git's core.fsmonitor trusts as unchanged) "
		    "was made or changed in the session: a forged one makes "
		    "your git status pass over edits where core.fsmonitor is "
		    "on, and agentmux could not drop it (%s); run 'git -c "
		    "core.fsmonitor=false update-index --no-fsmonitor' in %s "
		    "before you trust git status, and see what the "
		    "session changed with 'agentmux diff'", said, err == EEXIST ?
		    "git holds the index's lock" : strerror(err), where);
	free(where);
	free(said);
}

/* True if the nested repository's extension ENTRY was laid out oddly. */
static bool
snap_blind_nested_odd(const char *entry)
{
	size_t len = strlen(entry), olen = strlen(SNAP_BLIND_NESTED_ODD);

	return len > olen && strcmp(entry + len - olen,
	    SNAP_BLIND_NESTED_ODD) == 0;
}

char *
snap_blind_index(const char *project, const struct snap_worktree *wt)
{
	return wt != NULL ? xprintf("%s/index", wt->admin) :
	    xprintf("%s/.git/index", project);
}

void
snap_blind_untr(const char *project, const struct snap_worktree *wt,
    const struct snap_blind *start, const struct snap_blind *now,
    struct strv *out, struct strv *notes)
{
	char *index = snap_blind_index(project, wt);
	size_t i;

	if (now->untr_read == 2)
		snap_blind_untr_drop(index, wt, SNAP_BLIND_ODD, out);
	else
		snap_blind_untr_check(project, wt, start, now, out, notes);
	if (snap_blind_ext_changed(&start->fsmn, start->fsmn_read, &now->fsmn,
	    now->fsmn_read))
		snap_blind_fsmn_drop(index, wt, out);
	free(index);
	/* An odd one is forged whatever it was at the start. */
	for (i = 0; i < now->nexts.n; i++) {
		if (!strv_contains(&start->nexts, now->nexts.v[i]) ||
		    snap_blind_nested_odd(now->nexts.v[i]))
			snap_blind_nested_drop(project, now->nexts.v[i], now,
			    out, notes);
	}
}

/* Whether INDEX holds part of the entries only (split or sparse): its cache-tree cannot be checked. */
static bool
snap_blind_tree_partial(const char *index)
{
	struct buf ext;
	bool partial;

	buf_init(&ext);
	partial = snap_index_ext(index, "link", &ext) > 0 ||
	    snap_index_ext(index, "sdir", &ext) > 0;
	buf_free(&ext);
	return partial;
}

/* The cache-tree of INDEX checked against its entries: the disagreeing dirs into BAD. */
static void
snap_blind_tree_check(const char *index, struct strv *bad, bool *odd)
{
	struct buf file, tree;
	size_t oidlen;
	int rc;

	buf_init(&file);
	buf_init(&tree);
	rc = snap_index_load(index, "TREE", &file, &oidlen, &tree);
	*odd = rc == 2;
	if (rc == 1 && !snap_blind_tree_partial(index))
		snap_cachetree_check(&file, oidlen, &tree, bad);
	buf_free(&file);
	buf_free(&tree);
}

/*
 * The cache-tree of the index file INDEX, made or changed in the session
 * or laid out oddly: checked against the entries and dropped, said in
 * red (ALERTS) if forged, else plainly (NOTES).
 */
static void
snap_blind_tree_at(const char *index, struct strv *alerts, struct strv *notes)
{
	struct strv bad;
	char *dirs, *q, *why;
	bool odd;
	int rc, err;

	strv_init(&bad);
	snap_blind_tree_check(index, &bad, &odd);
	rc = snap_index_drop_ext(index, "TREE");
	err = errno;
	dirs = snap_quote_names(&bad, SNAP_BLIND_TELL);
	q = snap_nested_quote(index);
	why = xprintf("%s%s%s", odd ? SNAP_BLIND_ODD : "", bad.n > 0 ?
	    "; it disagreed with the index entries for " : "", dirs);
	if (rc == 1 && *why != '\0')
		strv_addf(alerts, "the cache-tree in %s (the tree ids git "
		    "reuses at your next commit) was forged in the session%s: "
		    "that commit would have taken the session's trees, not "
		    "your files; agentmux dropped it (git builds it again)", q,
		    why);
	else if (rc == 1)
		strv_addf(notes, "the cache-tree in %s (the tree ids git "
		    "reuses at your next commit) changed in the session and "
		    "agreed with the index entries; agentmux dropped it all "
		    "the same (git builds it again)", q);
	else if (rc == -1)
		strv_addf(*why != '\0' ? alerts : notes, "the cache-tree in %s "
		    "(the tree ids git reuses at your next commit) changed in "
		    "the session%s, and agentmux could not drop it (%s): run "
		    "'git read-tree HEAD' there only if you have nothing "
		    "staged, else check 'git diff --cached' before you commit",
		    q, why, err == EEXIST ? "git holds the index's lock" :
		    strerror(err));
	free(why);
	free(q);
	free(dirs);
	strv_free(&bad);
}

void
snap_blind_tree(const char *index, const struct snap_blind *start,
    const struct snap_blind *now, struct strv *alerts, struct strv *notes)
{
	if (now->tree_read == 2 || snap_blind_ext_changed(&start->tree,
	    start->tree_read, &now->tree, now->tree_read))
		snap_blind_tree_at(index, alerts, notes);
}

void
snap_blind_end(const char *project, const struct snap_blind *start,
    struct strv *out)
{
	struct snap_blind now;
	char *index;

	if (!start->had_git)
		return;
	snap_blind_init(&now);
	snap_blind_look(project, &now);
	snap_blind_compare(start, &now, NULL, out);
	snap_blind_untr(project, NULL, start, &now, out, out);
	index = xprintf("%s/.git/index", project);
	snap_blind_tree(index, start, &now, out, out);
	free(index);
	snap_blind_free(&now);
}

void
snap_blind_compare(const struct snap_blind *start,
    const struct snap_blind *now, const struct snap_worktree *wt,
    struct strv *out)
{
	size_t i, told = 0, more = 0;

	if (!start->had_git)
		return;
	for (i = 0; i < now->marked.n; i++) {
		if (strv_contains(&start->marked, now->marked.v[i]))
			continue;
		if (told++ < SNAP_BLIND_TELL)
			snap_blind_tell_mark(now->marked.v[i], wt, out);
		else
			more++;
	}
	if (more > 0)
		snap_blind_more_marks(wt, more, out);
	/*
	 * The start's replace refs not known (its packed-refs not read): the
	 * user's own would be told as the session's (the history's end says
	 * what could not be told). One not read now is not a replace ref.
	 */
	for (i = 0, told = more = 0; !snap_blind_unread(&start->replace) &&
	    i < now->replace.n; i++) {
		if (strv_contains(&start->replace, now->replace.v[i]) ||
		    strncmp(now->replace.v[i], "refs/replace/", 13) != 0)
			continue;
		if (told++ < SNAP_BLIND_TELL)
			snap_blind_tell_replace(now->replace.v[i], out);
		else
			more++;
	}
	if (more > 0)
		strv_addf(out, "%zu more replace refs were made in the session "
		    "('git replace --list' shows them)", more);
	for (i = 0, told = more = 0; i < now->nmarked.n; i++) {
		if (strv_contains(&start->nmarked, now->nmarked.v[i]))
			continue;
		if (told++ < SNAP_BLIND_TELL)
			snap_blind_tell_nested(now->nmarked.v[i], out);
		else
			more++;
	}
	if (more > 0)
		strv_addf(out, "%zu more entries in the indexes of nested "
		    "repositories were marked skip-worktree or assume-unchanged "
		    "in the session ('git ls-files -v' there shows them with S "
		    "or a lower-case tag)", more);
}
