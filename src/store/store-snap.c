/* The store's side of snapshots (their SQL, so src/snap needs store.h only): where a session's snapshots live, standalone snapshot sessions, gc bookkeeping. */
#include <stdlib.h>
#include <string.h>

#include "store/store-int.h"

int
store_snap_repo_add(struct store *st, int64_t session, const char *gitdir,
    const char *worktree, char **cause)
{
	sqlite3_stmt *stmt;
	int rc;

	stmt = store_prepare(st, "INSERT OR IGNORE INTO snapshot_repos "
	    "(session_id, git_dir, work_tree, shadow) VALUES (?, ?, ?, ?)");
	sqlite3_bind_int64(stmt, 1, session);
	store_bind_text(stmt, 2, gitdir);
	store_bind_text(stmt, 3, worktree);
	/* 1: the own repository (all snapshots since there are own repositories). */
	sqlite3_bind_int(stmt, 4, 1);
	rc = sqlite3_step(stmt);
	sqlite3_finalize(stmt);
	if (rc != SQLITE_DONE) {
		*cause = xprintf("cannot record the snapshot repository in %s: "
		    "%s", store_path(st), sqlite3_errstr(rc));
		store_note_failure(st, rc, "snapshots");
		return -1;
	}
	return 0;
}

int
store_snap_repo_move(struct store *st, int64_t id, const char *gitdir,
    char **cause)
{
	sqlite3_stmt *stmt;
	int rc;

	stmt = store_prepare(st, "UPDATE snapshot_repos SET git_dir = ?, "
	    "shadow = 1 WHERE session_id = ?");
	store_bind_text(stmt, 1, gitdir);
	sqlite3_bind_int64(stmt, 2, id);
	rc = sqlite3_step(stmt);
	sqlite3_finalize(stmt);
	if (rc != SQLITE_DONE) {
		*cause = xprintf("cannot record the snapshot repository in %s: "
		    "%s", store_path(st), sqlite3_errstr(rc));
		return -1;
	}
	return 0;
}

int
store_snap_where(struct store *st, int64_t session, struct store_snap_where *w)
{
	sqlite3_stmt *stmt;
	int rc = -1;

	memset(w, 0, sizeof *w);
	stmt = store_prepare(st, "SELECT git_dir, work_tree, shadow FROM "
	    "snapshot_repos WHERE session_id = ?");
	sqlite3_bind_int64(stmt, 1, session);
	if (sqlite3_step(stmt) == SQLITE_ROW) {
		w->gitdir = store_col_text(stmt, 0);
		w->worktree = store_col_text(stmt, 1);
		w->shadow = sqlite3_column_int(stmt, 2) != 0;
		rc = 0;
	}
	sqlite3_finalize(stmt);
	return rc;
}

void
store_snap_where_free(struct store_snap_where *w)
{
	free(w->gitdir);
	free(w->worktree);
	memset(w, 0, sizeof *w);
}

int64_t
store_snap_project_session(struct store *st, const char *project, char **cause)
{
	struct store_session s;
	sqlite3_stmt *stmt;
	int64_t id = -1;

	stmt = store_prepare(st, "SELECT id FROM sessions WHERE kind = "
	    "'snapshot' AND project = ? ORDER BY id DESC LIMIT 1");
	store_bind_text(stmt, 1, project);
	if (sqlite3_step(stmt) == SQLITE_ROW)
		id = sqlite3_column_int64(stmt, 0);
	sqlite3_finalize(stmt);
	if (id > 0)
		return id;
	memset(&s, 0, sizeof s);
	s.kind = (char *)"snapshot";
	s.agent = (char *)"-";
	s.project = (char *)project;
	s.command = (char *)"[\"agentmux\",\"snapshot\"]";
	if ((id = store_session_begin(st, &s, cause)) == -1)
		return -1;
	/* Never "running": it has no process, only snapshots. */
	if (store_session_end(st, id, "exited", -1, NULL) == -1) {
		*cause = xprintf("cannot record the snapshot session in %s",
		    store_path(st));
		return -1;
	}
	return id;
}

void
store_snap_project_touch(struct store *st, int64_t session)
{
	sqlite3_stmt *stmt;

	stmt = store_prepare(st, "UPDATE sessions SET ended_at = ? WHERE id = ? "
	    "AND kind = 'snapshot'");
	sqlite3_bind_int64(stmt, 1, util_now_ms());
	sqlite3_bind_int64(stmt, 2, session);
	sqlite3_step(stmt);
	sqlite3_finalize(stmt);
}

int
store_snap_orphans(struct store *st, int64_t **ids, char ***gitdirs, size_t *n)
{
	sqlite3_stmt *stmt;

	*ids = NULL;
	*gitdirs = NULL;
	*n = 0;
	stmt = store_prepare(st, "SELECT r.session_id, r.git_dir FROM "
	    "snapshot_repos r WHERE NOT EXISTS (SELECT 1 FROM sessions s "
	    "WHERE s.id = r.session_id) ORDER BY r.session_id");
	while (sqlite3_step(stmt) == SQLITE_ROW) {
		*ids = xreallocarray(*ids, *n + 1, sizeof **ids);
		*gitdirs = xreallocarray(*gitdirs, *n + 1, sizeof **gitdirs);
		(*ids)[*n] = sqlite3_column_int64(stmt, 0);
		(*gitdirs)[*n] = store_col_text(stmt, 1);
		(*n)++;
	}
	sqlite3_finalize(stmt);
	return 0;
}

void
store_snap_orphan_forget(struct store *st, int64_t session)
{
	sqlite3_stmt *stmt;

	stmt = store_prepare(st, "DELETE FROM snapshot_repos WHERE "
	    "session_id = ?");
	sqlite3_bind_int64(stmt, 1, session);
	sqlite3_step(stmt);
	sqlite3_finalize(stmt);
}

bool
store_snap_gitdir_used(struct store *st, const char *gitdir)
{
	sqlite3_stmt *stmt;
	bool used;

	stmt = store_prepare(st, "SELECT 1 FROM snapshot_repos r JOIN sessions "
	    "s ON s.id = r.session_id WHERE r.git_dir = ? LIMIT 1");
	store_bind_text(stmt, 1, gitdir);
	used = sqlite3_step(stmt) == SQLITE_ROW;
	sqlite3_finalize(stmt);
	return used;
}

char *
store_snap_last_tree(struct store *st, const char *gitdir)
{
	sqlite3_stmt *stmt;
	char *tree = NULL;

	stmt = store_prepare(st, "SELECT s.tree FROM snapshots s JOIN "
	    "snapshot_repos r ON r.session_id = s.session_id WHERE "
	    "r.git_dir = ? ORDER BY s.id DESC LIMIT 1");
	store_bind_text(stmt, 1, gitdir);
	if (sqlite3_step(stmt) == SQLITE_ROW)
		tree = store_col_text(stmt, 0);
	sqlite3_finalize(stmt);
	return tree;
}

int
store_snap_legacy_list(struct store *st, const char *worktree, int64_t **ids,
    char ***gitdirs, size_t *n)
{
	sqlite3_stmt *stmt;

	*ids = NULL;
	*gitdirs = NULL;
	*n = 0;
	stmt = store_prepare(st, "SELECT r.session_id, r.git_dir FROM "
	    "snapshot_repos r JOIN sessions s ON s.id = r.session_id WHERE "
	    "r.shadow = 0 AND r.work_tree = ? ORDER BY r.session_id");
	store_bind_text(stmt, 1, worktree);
	while (sqlite3_step(stmt) == SQLITE_ROW) {
		*ids = xreallocarray(*ids, *n + 1, sizeof **ids);
		*gitdirs = xreallocarray(*gitdirs, *n + 1, sizeof **gitdirs);
		(*ids)[*n] = sqlite3_column_int64(stmt, 0);
		(*gitdirs)[*n] = store_col_text(stmt, 1);
		(*n)++;
	}
	sqlite3_finalize(stmt);
	return 0;
}

/* A snapshot row's columns, in the order the queries below select them. */
static struct store_snapshot *
store_snap_row(sqlite3_stmt *stmt)
{
	struct store_snapshot *s = xcalloc(1, sizeof *s);

	s->id = sqlite3_column_int64(stmt, 0);
	s->session_id = sqlite3_column_int64(stmt, 1);
	s->kind = store_col_text(stmt, 2);
	s->commit = store_col_text(stmt, 3);
	s->tree = store_col_text(stmt, 4);
	s->created_at = sqlite3_column_int64(stmt, 5);
	return s;
}

/* Not dropped, a turn, and not the last of its session. */
#define SNAP_STORE_DROPPABLE \
	"s.kind = 'turn' AND s.dropped_at IS NULL AND s.id < (SELECT " \
	"MAX(l.id) FROM snapshots l WHERE l.session_id = s.session_id)"

struct store_snapshot **
store_snap_keep_candidates(struct store *st, const char *gitdir, size_t *n)
{
	struct store_snapshot **v = NULL;
	sqlite3_stmt *stmt;

	*n = 0;
	stmt = store_prepare(st, "SELECT s.id, s.session_id, s.kind, "
	    "s.commit_id, s.tree, s.created_at FROM snapshots s JOIN "
	    "snapshot_repos r ON r.session_id = s.session_id WHERE "
	    "r.git_dir = ? AND " SNAP_STORE_DROPPABLE " ORDER BY s.id");
	store_bind_text(stmt, 1, gitdir);
	while (sqlite3_step(stmt) == SQLITE_ROW) {
		v = xreallocarray(v, *n + 1, sizeof *v);
		v[(*n)++] = store_snap_row(stmt);
	}
	sqlite3_finalize(stmt);
	return v;
}

void
store_snap_keep_kept(struct store *st, const char *gitdir, struct strv *out)
{
	sqlite3_stmt *stmt;
	char *c;

	stmt = store_prepare(st, "SELECT DISTINCT s.commit_id FROM snapshots s "
	    "JOIN snapshot_repos r ON r.session_id = s.session_id WHERE "
	    "r.git_dir = ? AND s.dropped_at IS NULL AND NOT ("
	    SNAP_STORE_DROPPABLE ")");
	store_bind_text(stmt, 1, gitdir);
	while (sqlite3_step(stmt) == SQLITE_ROW) {
		c = store_col_text(stmt, 0);
		strv_take(out, c);
	}
	sqlite3_finalize(stmt);
}

void
store_snap_keep_mark(struct store *st, int64_t id)
{
	sqlite3_stmt *stmt;

	stmt = store_prepare(st, "UPDATE snapshots SET dropped_at = ? WHERE "
	    "id = ?");
	sqlite3_bind_int64(stmt, 1, util_now_ms());
	sqlite3_bind_int64(stmt, 2, id);
	sqlite3_step(stmt);
	sqlite3_finalize(stmt);
}

int64_t
store_snap_keep_newest(struct store *st, const char *gitdir)
{
	sqlite3_stmt *stmt;
	int64_t id = 0;

	stmt = store_prepare(st, "SELECT MAX(session_id) FROM snapshot_repos "
	    "WHERE git_dir = ?");
	store_bind_text(stmt, 1, gitdir);
	if (sqlite3_step(stmt) == SQLITE_ROW)
		id = sqlite3_column_int64(stmt, 0);
	sqlite3_finalize(stmt);
	return id;
}

int
store_snap_keep_repos(struct store *st, char ***gitdirs, char ***worktrees,
    size_t *n)
{
	sqlite3_stmt *stmt;

	*gitdirs = NULL;
	*worktrees = NULL;
	*n = 0;
	stmt = store_prepare(st, "SELECT git_dir, MAX(work_tree) FROM "
	    "snapshot_repos r JOIN sessions s ON s.id = r.session_id WHERE "
	    "r.shadow = 1 GROUP BY git_dir ORDER BY git_dir");
	while (sqlite3_step(stmt) == SQLITE_ROW) {
		*gitdirs = xreallocarray(*gitdirs, *n + 1, sizeof **gitdirs);
		*worktrees = xreallocarray(*worktrees, *n + 1,
		    sizeof **worktrees);
		(*gitdirs)[*n] = store_col_text(stmt, 0);
		(*worktrees)[*n] = store_col_text(stmt, 1);
		(*n)++;
	}
	sqlite3_finalize(stmt);
	return 0;
}
