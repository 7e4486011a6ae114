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

/* The files OTHER's snapshots changed from its first to its latest, into FILES. */
static void
snap_overlap_files(struct store *st, struct snap_repo *r, int64_t other,
    struct strv *files)
{
	struct store_snapshot *from, *to;
	char *cause = NULL, *p;
	struct buf out;

	from = snap_resolve(st, other, "start", NULL, &cause);
	free(cause);
	cause = NULL;
	to = snap_resolve(st, other, "latest", NULL, &cause);
	free(cause);
	cause = NULL;
	buf_init(&out);
	if (from != NULL && to != NULL && strcmp(from->commit, to->commit) !=
	    0) {
		const char *args[] = { "diff-tree", "-r", "-z", "--name-only",
		    "--no-renames", from->commit, to->commit, NULL };

		if (snap_git(r, SNAP_ENV_DB, args, NULL, &out, &cause) == 0) {
			buf_add(&out, "", 1);
			for (p = out.data; p < out.data + out.len - 1;
			    p += strlen(p) + 1) {
				if (*p != '\0')
					strv_add(files, p);
			}
		}
		free(cause);
	}
	buf_free(&out);
	store_snapshot_free(from);
	store_snapshot_free(to);
}

/* The refusal: the other session and (some of) its files, quoted. */
static char *
snap_overlap_refusal(int64_t session, int64_t other, const struct strv *files)
{
	struct buf b;
	char *q;
	size_t i;

	buf_init(&b);
	buf_printf(&b, "session %lld shared its tree with session %lld, which "
	    "ran at the same time and changed ", (long long)session,
	    (long long)other);
	for (i = 0; i < files->n && i < SNAP_OVERLAP_NAMES; i++) {
		q = quote_name(files->v[i]);
		buf_printf(&b, "%s%s", i > 0 ? ", " : "", q);
		free(q);
	}
	if (files->n > SNAP_OVERLAP_NAMES)
		buf_printf(&b, " and %zu more", files->n - SNAP_OVERLAP_NAMES);
	buf_printf(&b, "; undoing %lld would take those changes too: name the "
	    "paths to undo, or pass --force", (long long)session);
	return buf_steal(&b);
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
		/*
		 * The user's own snapshots (agentmux snapshot) are kept in a
		 * record of their own that spans every session they were
		 * taken around: no agent ran in it.
		 */
		if (v[i]->id == session || v[i]->project == NULL ||
		    (v[i]->kind != NULL && strcmp(v[i]->kind, "snapshot") ==
		    0) || strcmp(v[i]->project, me->project) != 0 ||
		    !snap_overlap_when(me, v[i]))
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
