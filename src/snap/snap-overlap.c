/* Sessions that shared a tree: which files another session changed while this one ran (its snapshots say), so undo does not take them silently. */
#include <stdlib.h>
#include <string.h>

#include "snap-int.h"
#include "snap.h"

/* How many files of the other session a refusal names. */
#define SNAP_OVERLAP_NAMES 10

/* True if A and B ran at the same time at some point (an end of 0: still running). */
static bool
snap_overlap_when(const struct store_session *a, const struct store_session *b)
{
	int64_t now = util_now_ms();
	int64_t aend = a->ended_at != 0 ? a->ended_at : now;
	int64_t bend = b->ended_at != 0 ? b->ended_at : now;

	return a->started_at < bend && b->started_at < aend;
}

/* The commit of snapshot SPEC of session ID; NULL if it has none. */
static char *
snap_overlap_commit(struct store *st, int64_t id, const char *spec)
{
	struct store_snapshot *sn;
	char *cause = NULL, *c = NULL;

	if ((sn = snap_resolve(st, id, spec, NULL, &cause)) != NULL)
		c = xstrdup(sn->commit);
	free(cause);
	store_snapshot_free(sn);
	return c;
}

/* The files that differ between snapshot commits FROM and TO, into FILES. */
static void
snap_overlap_names(struct snap_repo *r, const char *from, const char *to,
    struct strv *files)
{
	const char *args[] = { "diff-tree", "-r", "-z", "--name-only",
	    "--no-renames", from, to, NULL };
	char *cause = NULL, *p;
	struct buf out;

	if (from == NULL || to == NULL || strcmp(from, to) == 0)
		return;
	buf_init(&out);
	if (snap_git(r, SNAP_ENV_DB, args, NULL, &out, &cause) == 0) {
		buf_add(&out, "", 1);
		for (p = out.data; p < out.data + out.len - 1; p += strlen(p) + 1) {
			if (*p != '\0')
				strv_add(files, p);
		}
	}
	free(cause);
	buf_free(&out);
}

/* The files OTHER's snapshots changed from its first to its latest, into FILES. */
static void
snap_overlap_files(struct store *st, struct snap_repo *r, int64_t other,
    struct strv *files)
{
	char *from = snap_overlap_commit(st, other, "start");
	char *to = snap_overlap_commit(st, other, "latest");

	snap_overlap_names(r, from, to, files);
	free(from);
	free(to);
}

/* The refusal: the other session and (some of) its files, quoted. */
static char *
snap_overlap_refusal(int64_t session, int64_t other, const struct strv *files)
{
	struct buf b;
	char *names = snap_quote_names(files, SNAP_OVERLAP_NAMES);

	buf_init(&b);
	buf_printf(&b, "session %lld shared its tree with session %lld, which "
	    "ran at the same time and changed %s", (long long)session,
	    (long long)other, names);
	free(names);
	buf_printf(&b, "; undoing %lld would take those changes too: name the "
	    "paths to undo, or pass --force", (long long)session);
	return buf_steal(&b);
}

/* Whether session OTHER is one that may have changed SESSION's tree while it ran. */
static bool
snap_overlap_other(const struct store_session *me,
    const struct store_session *o)
{
	/*
	 * The user's own snapshots (agentmux snapshot) are kept in a record
	 * of their own that spans every session they were taken around: no
	 * agent ran in it.
	 */
	return o->id != me->id && o->project != NULL && (o->kind == NULL ||
	    strcmp(o->kind, "snapshot") != 0) && strcmp(o->project,
	    me->project) == 0 && snap_overlap_when(me, o);
}

int
snap_overlap_check(struct store *st, struct snap_repo *r, int64_t session,
    char **cause)
{
	struct store_session *me, **v;
	struct strv files;
	size_t i, n;
	int rc = 0;

	if ((me = store_session_get(st, session)) == NULL ||
	    me->project == NULL) {
		store_session_free(me);
		return 0;
	}
	v = store_session_list(st, true, &n);
	strv_init(&files);
	for (i = 0; i < n && rc == 0; i++) {
		if (!snap_overlap_other(me, v[i]))
			continue;
		snap_overlap_files(st, r, v[i]->id, &files);
		if (files.n > 0) {
			*cause = snap_overlap_refusal(session, v[i]->id, &files);
			rc = -1;
		}
	}
	strv_free(&files);
	store_session_list_free(v, n);
	store_session_free(me);
	return rc;
}

/*
 * What another session O changed, as far as the snapshots of both tell:
 * ALONE what it changed while SESSION was not running (before SESSION's
 * start, after its end), ALL what changed from O's start to its end (with
 * both running, a change could be either's).
 */
struct snap_overlap_other {
	int64_t id;
	struct strv alone;
	struct strv all;
};

static int
snap_overlap_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorts V for snap_overlap_has (a diff marks its files by lookup, not by scan). */
static void
snap_overlap_sort(struct strv *v)
{
	if (v->n > 1)
		qsort(v->v, v->n, sizeof *v->v, snap_overlap_cmp);
}

static void
snap_overlap_other_files(struct store *st, struct snap_repo *r,
    const struct store_session *me, const struct store_session *o,
    struct snap_overlap_other *x)
{
	char *a, *b;

	x->id = o->id;
	strv_init(&x->alone);
	strv_init(&x->all);
	snap_overlap_files(st, r, o->id, &x->all);
	if (o->started_at < me->started_at) {
		a = snap_overlap_commit(st, o->id, "start");
		b = snap_overlap_commit(st, me->id, "start");
		snap_overlap_names(r, a, b, &x->alone);
		free(a);
		free(b);
	}
	if (me->ended_at != 0 && (o->ended_at == 0 || o->ended_at >
	    me->ended_at)) {
		a = snap_overlap_commit(st, me->id, "latest");
		b = snap_overlap_commit(st, o->id, "latest");
		snap_overlap_names(r, a, b, &x->alone);
		free(a);
		free(b);
	}
	snap_overlap_sort(&x->alone);
	snap_overlap_sort(&x->all);
}

static bool
snap_overlap_has(const struct strv *v, const char *path)
{
	return v->n > 0 && bsearch(&path, v->v, v->n, sizeof *v->v,
	    snap_overlap_cmp) != NULL;
}

/* The mark of PATH, or nothing: the sessions that changed it alone, else while both ran. */
static void
snap_overlap_mark(const struct snap_overlap_other *v, size_t n,
    const char *path, struct buf *mark)
{
	struct buf alone, both;
	size_t i;

	buf_init(&alone);
	buf_init(&both);
	for (i = 0; i < n; i++) {
		if (snap_overlap_has(&v[i].alone, path))
			buf_printf(&alone, "%s%lld", alone.len > 0 ? ", " : "",
			    (long long)v[i].id);
		else if (snap_overlap_has(&v[i].all, path))
			buf_printf(&both, "%s%lld", both.len > 0 ? ", " : "",
			    (long long)v[i].id);
	}
	buf_reset(mark);
	if (alone.len > 0)
		buf_printf(mark, "also changed by session%s %.*s", strchr(
		    alone.data, ',') != NULL ? "s" : "", (int)alone.len,
		    alone.data);
	else if (both.len > 0)
		buf_printf(mark, "changed while session%s %.*s ran too",
		    strchr(both.data, ',') != NULL ? "s" : "", (int)both.len,
		    both.data);
	buf_free(&alone);
	buf_free(&both);
}

/* One "S  PATH  [mark]" line per file of the diff (STATUS) the others changed. */
static void
snap_overlap_lines(const struct buf *status, const struct snap_overlap_other *v,
    size_t n, bool (*named)(const char *, void *), void *arg, struct buf *text)
{
	const char *p, *end = status->data + status->len, *path;
	struct buf mark;

	buf_init(&mark);
	for (p = status->data; p != NULL && p < end; p = path + strlen(path) +
	    1) {
		path = p + strlen(p) + 1;
		if (path >= end)
			break;
		if (!named(path, arg))
			continue;
		snap_overlap_mark(v, n, path, &mark);
		if (mark.len == 0)
			continue;
		buf_printf(text, "%c  ", *p);
		snap_quote_path(text, "", path);
		buf_printf(text, "  [%.*s]\n", (int)mark.len, mark.data);
	}
	buf_free(&mark);
}

int
snap_overlap_marks(struct store *st, struct snap_repo *r, int64_t session,
    const char *from, const char *to, bool (*named)(const char *, void *),
    void *arg, struct buf *text)
{
	const char *args[] = { "diff-tree", "-r", "-z", "--name-status",
	    "--no-renames", from, to, NULL };
	struct snap_overlap_other *x = NULL;
	struct store_session *me, **v;
	struct buf status;
	char *cause = NULL;
	size_t i, n, nx = 0;

	if ((me = store_session_get(st, session)) == NULL ||
	    me->project == NULL) {
		store_session_free(me);
		return 0;
	}
	v = store_session_list(st, true, &n);
	for (i = 0; i < n; i++) {
		if (!snap_overlap_other(me, v[i]))
			continue;
		x = xreallocarray(x, nx + 1, sizeof *x);
		snap_overlap_other_files(st, r, me, v[i], &x[nx++]);
	}
	buf_init(&status);
	if (nx > 0 && snap_git(r, SNAP_ENV_DB, args, NULL, &status,
	    &cause) == 0)
		snap_overlap_lines(&status, x, nx, named, arg, text);
	free(cause);
	buf_free(&status);
	for (i = 0; i < nx; i++) {
		strv_free(&x[i].alone);
		strv_free(&x[i].all);
	}
	free(x);
	store_session_list_free(v, n);
	store_session_free(me);
	return 0;
}
