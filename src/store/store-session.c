/* Session records: begin, end, look up, list, resolve "last", garbage-collect. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/store-int.h"

#define STORE_SESSION_COLS \
	"s.id, s.kind, s.agent, s.project, s.command, s.started_at, " \
	"s.ended_at, s.state, s.exit_status, s.jail, s.unsafe, s.flags, " \
	"s.error, s.owner_pid, s.owner_start, " \
	"(SELECT count(*) FROM requests r WHERE r.session_id = s.id), " \
	"(SELECT count(*) FROM requests r WHERE r.session_id = s.id AND " \
	"  r.decision = 'deny'), " \
	"(SELECT count(*) FROM snapshots n WHERE n.session_id = s.id), " \
	"coalesce((SELECT n.files_changed FROM snapshots n WHERE " \
	"  n.session_id = s.id AND n.kind = 'end' ORDER BY n.id DESC " \
	"  LIMIT 1), -1), " \
	"s.unrecorded, s.unrecorded_denied, s.unrecorded_other, " \
	"(SELECT count(*) FROM requests r WHERE r.session_id = s.id AND " \
	"  r.decision IN ('allow', 'tunnel')), " \
	"(SELECT count(*) FROM requests r WHERE r.session_id = s.id AND " \
	"  r.decision = 'error'), " \
	"EXISTS (SELECT 1 FROM events e WHERE e.session_id = s.id AND " \
	"  e.kind = 'closed'), " \
	"s.live"

int64_t
store_session_begin(struct store *st, const struct store_session *s,
    char **cause)
{
	sqlite3_stmt *stmt;
	int64_t id = -1;

	stmt = store_prepare(st, "INSERT INTO sessions (kind, agent, project, "
	    "command, started_at, state, jail, unsafe, owner_pid, owner_start) "
	    "VALUES (?, ?, ?, ?, ?, 'running', ?, ?, ?, ?)");
	store_bind_text(stmt, 1, s->kind != NULL ? s->kind : "run");
	store_bind_text(stmt, 2, s->agent);
	store_bind_text(stmt, 3, s->project);
	store_bind_text(stmt, 4, s->command != NULL ? s->command : "[]");
	sqlite3_bind_int64(stmt, 5, s->started_at != 0 ? s->started_at :
	    util_now_ms());
	store_bind_text(stmt, 6, s->jail);
	store_bind_text(stmt, 7, s->unsafe);
	sqlite3_bind_int64(stmt, 8, getpid());
	sqlite3_bind_int64(stmt, 9, (int64_t)util_proc_start_time(getpid()));
	if (sqlite3_step(stmt) == SQLITE_DONE)
		id = sqlite3_last_insert_rowid(st->db);
	else
		*cause = xprintf("cannot record the session in %s: %s",
		    st->path, sqlite3_errmsg(st->db));
	sqlite3_finalize(stmt);
	return id;
}

/* Runs a one-statement update that binds ID as ?1 and TEXT as ?2. */
static int
store_session_update(struct store *st, const char *sql, int64_t id,
    const char *text)
{
	sqlite3_stmt *stmt = store_prepare(st, sql);
	int rc;

	sqlite3_bind_int64(stmt, 1, id);
	store_bind_text(stmt, 2, text);
	rc = sqlite3_step(stmt);
	sqlite3_finalize(stmt);
	if (rc != SQLITE_DONE) {
		store_note_failure(st, rc, "the session record");
		return -1;
	}
	return 0;
}

/* Session ID was closed by the user (not budgeted: it is how the session ended). */
static int
store_session_closed(struct store *st, int64_t id)
{
	sqlite3_stmt *stmt = store_prepare(st, "INSERT INTO events (session_id, "
	    "at, level, kind, message) VALUES (?, ?, 'info', 'closed', "
	    "'closed by the user')");
	int rc;

	sqlite3_bind_int64(stmt, 1, id);
	sqlite3_bind_int64(stmt, 2, util_now_ms());
	rc = sqlite3_step(stmt);
	sqlite3_finalize(stmt);
	if (rc != SQLITE_DONE) {
		store_note_failure(st, rc, "the session's end");
		return -1;
	}
	return 0;
}

int
store_session_end(struct store *st, int64_t id, const char *state, int exit,
    const char *error)
{
	sqlite3_stmt *stmt;
	bool closed = strcmp(state, "closed") == 0;
	int rc;

	store_flush(st);
	/* The schema's states predate "closed": an exit, and an event saying who ended it. */
	if (closed && store_session_closed(st, id) == -1)
		return -1;
	stmt = store_prepare(st, "UPDATE sessions SET state = ?, ended_at = ?, "
	    "exit_status = ?, error = coalesce(?, error) WHERE id = ?");
	store_bind_text(stmt, 1, closed ? "exited" : state);
	sqlite3_bind_int64(stmt, 2, util_now_ms());
	if (exit >= 0)
		sqlite3_bind_int(stmt, 3, exit);
	else
		sqlite3_bind_null(stmt, 3);
	store_bind_text(stmt, 4, error);
	sqlite3_bind_int64(stmt, 5, id);
	rc = sqlite3_step(stmt);
	sqlite3_finalize(stmt);
	if (rc != SQLITE_DONE) {
		store_note_failure(st, rc, "the session's end");
		return -1;
	}
	return 0;
}

int
store_session_flag(struct store *st, int64_t id, const char *flag)
{
	return store_session_update(st, "UPDATE sessions SET flags = CASE "
	    "WHEN flags IS NULL THEN ?2 "
	    "WHEN instr(' ' || flags || ' ', ' ' || ?2 || ' ') > 0 THEN flags "
	    "ELSE flags || ' ' || ?2 END WHERE id = ?1", id, flag);
}

int
store_session_set_live(struct store *st, int64_t id, const char *state)
{
	return store_session_update(st, "UPDATE sessions SET live = ?2 WHERE "
	    "id = ?1", id, state);
}

int
store_session_set_jail(struct store *st, int64_t id, const char *json)
{
	return store_session_update(st, "UPDATE sessions SET jail = ?2 WHERE "
	    "id = ?1", id, json);
}

const char *
store_session_end_text(const struct store_session *s, char *buf, size_t len)
{
	if ((s->ended_at == 0 || strcmp(s->state, "running") == 0) &&
	    s->live != NULL && store_session_live(s))
		snprintf(buf, len, "%s", s->live);
	else if (s->ended_at == 0 || strcmp(s->state, "running") == 0)
		snprintf(buf, len, "running");
	else if (s->closed)
		snprintf(buf, len, "closed");
	else if (strcmp(s->state, "exited") == 0 && s->has_exit)
		snprintf(buf, len, "exited %d", s->exit_status);
	else
		snprintf(buf, len, "%s", s->state);
	return buf;
}

static struct store_session *
store_session_row(sqlite3_stmt *stmt)
{
	struct store_session *s = xcalloc(1, sizeof *s);

	s->id = sqlite3_column_int64(stmt, 0);
	s->kind = store_col_text(stmt, 1);
	s->agent = store_col_text(stmt, 2);
	s->project = store_col_text(stmt, 3);
	s->command = store_col_text(stmt, 4);
	s->started_at = sqlite3_column_int64(stmt, 5);
	s->ended_at = sqlite3_column_int64(stmt, 6);
	s->state = store_col_text(stmt, 7);
	s->has_exit = sqlite3_column_type(stmt, 8) != SQLITE_NULL;
	s->exit_status = sqlite3_column_int(stmt, 8);
	s->jail = store_col_text(stmt, 9);
	s->unsafe = store_col_text(stmt, 10);
	s->flags = store_col_text(stmt, 11);
	s->error = store_col_text(stmt, 12);
	s->owner_pid = (pid_t)sqlite3_column_int64(stmt, 13);
	s->owner_start = (uint64_t)sqlite3_column_int64(stmt, 14);
	s->nrequests = sqlite3_column_int64(stmt, 15);
	s->ndenied = sqlite3_column_int64(stmt, 16);
	s->nsnapshots = sqlite3_column_int64(stmt, 17);
	s->files_changed = sqlite3_column_int64(stmt, 18);
	s->unrecorded = sqlite3_column_int64(stmt, 19);
	s->unrecorded_denied = sqlite3_column_int64(stmt, 20);
	s->unrecorded_other = sqlite3_column_int64(stmt, 21);
	s->nallowed = sqlite3_column_int64(stmt, 22);
	s->nerrors = sqlite3_column_int64(stmt, 23);
	s->closed = sqlite3_column_int(stmt, 24) != 0;
	s->live = store_col_text(stmt, 25);
	/* Counted requests are requests too. */
	s->nrequests += s->unrecorded;
	s->ndenied += s->unrecorded_denied;
	return s;
}

struct store_session *
store_session_get(struct store *st, int64_t id)
{
	sqlite3_stmt *stmt;
	struct store_session *s = NULL;

	store_flush(st);
	stmt = store_prepare(st, "SELECT " STORE_SESSION_COLS
	    " FROM sessions s WHERE s.id = ?");
	sqlite3_bind_int64(stmt, 1, id);
	if (sqlite3_step(stmt) == SQLITE_ROW)
		s = store_session_row(stmt);
	sqlite3_finalize(stmt);
	return s;
}

struct store_session **
store_session_list(struct store *st, bool all, size_t *n)
{
	sqlite3_stmt *stmt;
	struct store_session **v = NULL;

	store_flush(st);
	stmt = store_prepare(st, "SELECT " STORE_SESSION_COLS
	    " FROM sessions s ORDER BY s.id DESC LIMIT ?");
	sqlite3_bind_int64(stmt, 1, all ? -1 : 50);
	*n = 0;
	while (sqlite3_step(stmt) == SQLITE_ROW) {
		v = xreallocarray(v, *n + 1, sizeof *v);
		v[(*n)++] = store_session_row(stmt);
	}
	sqlite3_finalize(stmt);
	return v;
}

bool
store_session_live(const struct store_session *s)
{
	return strcmp(s->state, "running") == 0 &&
	    util_proc_alive(s->owner_pid, s->owner_start);
}

void
store_session_free(struct store_session *s)
{
	if (s == NULL)
		return;
	free(s->kind);
	free(s->agent);
	free(s->project);
	free(s->command);
	free(s->state);
	free(s->live);
	free(s->jail);
	free(s->unsafe);
	free(s->flags);
	free(s->error);
	free(s);
}

void
store_session_list_free(struct store_session **v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		store_session_free(v[i]);
	free(v);
}

int
store_session_resolve(struct store *st, const char *spec, int64_t *id,
    char **cause)
{
	sqlite3_stmt *stmt;
	long long v;
	char *err = NULL;
	int found;

	if (strcmp(spec, "last") == 0) {
		/* An agent's session, before a project's standalone snapshots. */
		stmt = store_prepare(st, "SELECT coalesce((SELECT max(id) FROM "
		    "sessions WHERE kind != 'snapshot'), (SELECT max(id) FROM "
		    "sessions))");
		v = 0;
		if (sqlite3_step(stmt) == SQLITE_ROW)
			v = sqlite3_column_int64(stmt, 0);
		sqlite3_finalize(stmt);
		if (v == 0) {
			*cause = xstrdup("there are no sessions yet; start one "
			    "with 'agentmux run' or 'agentmux'");
			return -1;
		}
		*id = v;
		return 0;
	}
	if (util_parse_int(spec, 1, INT64_MAX, &v, &err) == -1) {
		*cause = xprintf("'%s' is not a session; give a session number "
		    "or 'last' (see 'agentmux sessions')", spec);
		free(err);
		return -1;
	}
	stmt = store_prepare(st, "SELECT 1 FROM sessions WHERE id = ?");
	sqlite3_bind_int64(stmt, 1, v);
	found = sqlite3_step(stmt) == SQLITE_ROW;
	sqlite3_finalize(stmt);
	if (!found) {
		*cause = xprintf("there is no session %lld (see 'agentmux "
		    "sessions --all')", v);
		return -1;
	}
	*id = v;
	return 0;
}

int64_t
store_session_last_in(struct store *st, const char *dir)
{
	sqlite3_stmt *stmt;
	int64_t id = 0;

	/* A prefix compared as text, never as a LIKE pattern: '%' and '_' are name characters. */
	stmt = store_prepare(st, "SELECT id FROM sessions WHERE project = ?1 OR "
	    "(project != '/' AND substr(?1, 1, length(project) + 1) = "
	    "project || '/') OR project = '/' ORDER BY length(project) DESC, "
	    "kind != 'snapshot' DESC, id DESC LIMIT 1");
	sqlite3_bind_text(stmt, 1, dir, -1, SQLITE_TRANSIENT);
	if (sqlite3_step(stmt) == SQLITE_ROW)
		id = sqlite3_column_int64(stmt, 0);
	sqlite3_finalize(stmt);
	return id;
}

int
store_session_ref_add(struct store *st, int64_t id, const char *ref,
    const char *oid)
{
	sqlite3_stmt *stmt;
	int rc;

	stmt = store_prepare(st, "INSERT OR REPLACE INTO session_refs "
	    "(session_id, ref, oid) VALUES (?, ?, ?)");
	sqlite3_bind_int64(stmt, 1, id);
	store_bind_text(stmt, 2, ref);
	store_bind_text(stmt, 3, oid);
	rc = sqlite3_step(stmt);
	sqlite3_finalize(stmt);
	return rc == SQLITE_DONE ? 0 : -1;
}

char **
store_session_refs(struct store *st, int64_t id, size_t *n)
{
	sqlite3_stmt *stmt;
	char **v = NULL;

	stmt = store_prepare(st, "SELECT ref, oid FROM session_refs WHERE "
	    "session_id = ? ORDER BY ref");
	sqlite3_bind_int64(stmt, 1, id);
	*n = 0;
	while (sqlite3_step(stmt) == SQLITE_ROW) {
		v = xreallocarray(v, *n + 1, sizeof *v);
		v[(*n)++] = xprintf("%s %s", sqlite3_column_text(stmt, 0),
		    sqlite3_column_text(stmt, 1));
	}
	sqlite3_finalize(stmt);
	return v;
}

/* Whether ID is one of the N in KEEP. */
static bool
store_gc_kept(int64_t id, const int64_t *keep, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (keep[i] == id)
			return true;
	}
	return false;
}

int
store_gc(struct store *st, int64_t cutoff_ms, const int64_t *keep,
    size_t nkeep, int64_t **ids, size_t *n, char **cause)
{
	sqlite3_stmt *sel, *del;
	int rc = SQLITE_OK;

	*ids = NULL;
	*n = 0;
	store_flush(st);
	if (store_exec(st, "BEGIN IMMEDIATE", cause) == -1)
		return -1;
	sel = store_prepare(st, "SELECT id FROM sessions WHERE state != "
	    "'running' AND coalesce(ended_at, started_at) < ? ORDER BY id");
	del = store_prepare(st, "DELETE FROM sessions WHERE id = ?");
	sqlite3_bind_int64(sel, 1, cutoff_ms);
	while (sqlite3_step(sel) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(sel, 0);

		if (store_gc_kept(id, keep, nkeep))
			continue;
		sqlite3_bind_int64(del, 1, id);
		if ((rc = sqlite3_step(del)) != SQLITE_DONE)
			break;
		rc = SQLITE_OK;
		sqlite3_reset(del);
		*ids = xreallocarray(*ids, *n + 1, sizeof **ids);
		(*ids)[(*n)++] = id;
	}
	sqlite3_finalize(sel);
	sqlite3_finalize(del);
	if (rc != SQLITE_OK || store_exec(st, "COMMIT", cause) == -1) {
		if (rc != SQLITE_OK)
			*cause = xprintf("cannot delete from %s: %s", st->path,
			    sqlite3_errstr(rc));
		store_exec(st, "ROLLBACK", NULL);
		free(*ids);
		*ids = NULL;
		*n = 0;
		return -1;
	}
	return 0;
}
