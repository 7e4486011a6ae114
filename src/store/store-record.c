/* Decisions, events, snapshots and config changes: the smaller records of a session. */
#include <stdlib.h>
#include <string.h>

#include "store/store-int.h"

static char *
store_dup(const char *s)
{
	return s == NULL ? NULL : xstrdup(s);
}

void
store_decision_add(struct store *st, const struct store_decision *d)
{
	struct store_decision *c;
	struct store_op op;
	size_t n = 0;

	n += d->host != NULL ? strlen(d->host) : 0;
	n += d->path != NULL ? strlen(d->path) : 0;
	n += d->method != NULL ? strlen(d->method) : 0;
	if (!store_budget_take(st, d->session_id, n, STORE_BUDGET_RECORD,
	    false))
		return;
	c = xcalloc(1, sizeof *c);
	*c = *d;
	c->host = store_dup(d->host);
	c->method = store_dup(d->method);
	c->path = store_dup(d->path);
	c->answer = store_dup(d->answer);
	c->scope = store_dup(d->scope);
	c->by = store_dup(d->by);
	op.kind = STORE_OP_DECISION;
	op.u.dec = c;
	store_queue(st, op);
}

int
store_decision_write(struct store *st, const struct store_decision *d)
{
	sqlite3_stmt *stmt;
	int rc;

	stmt = store_prepare(st, "INSERT INTO decisions (session_id, asked_at, "
	    "answered_at, host, port, method, path, answer, scope, by, waiting) "
	    "VALUES (?,?,?,?,?,?,?,?,?,?,?)");
	sqlite3_bind_int64(stmt, 1, d->session_id);
	sqlite3_bind_int64(stmt, 2, d->asked_at);
	sqlite3_bind_int64(stmt, 3, d->answered_at);
	store_bind_text(stmt, 4, d->host);
	sqlite3_bind_int(stmt, 5, d->port);
	store_bind_text(stmt, 6, d->method);
	store_bind_text(stmt, 7, d->path);
	store_bind_text(stmt, 8, d->answer);
	store_bind_text(stmt, 9, d->scope);
	store_bind_text(stmt, 10, d->by);
	sqlite3_bind_int(stmt, 11, d->waiting);
	rc = sqlite3_step(stmt);
	sqlite3_finalize(stmt);
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

void
store_decision_free(struct store_decision *d)
{
	if (d == NULL)
		return;
	free(d->host);
	free(d->method);
	free(d->path);
	free(d->answer);
	free(d->scope);
	free(d->by);
	free(d);
}

struct store_decision **
store_decision_list(struct store *st, int64_t session, size_t *n)
{
	sqlite3_stmt *stmt;
	struct store_decision **v = NULL, *d;

	store_flush(st);
	stmt = store_prepare(st, "SELECT id, session_id, asked_at, answered_at, "
	    "host, port, method, path, answer, scope, by, waiting FROM "
	    "decisions WHERE session_id = ? ORDER BY id");
	sqlite3_bind_int64(stmt, 1, session);
	*n = 0;
	while (sqlite3_step(stmt) == SQLITE_ROW) {
		d = xcalloc(1, sizeof *d);
		d->id = sqlite3_column_int64(stmt, 0);
		d->session_id = sqlite3_column_int64(stmt, 1);
		d->asked_at = sqlite3_column_int64(stmt, 2);
		d->answered_at = sqlite3_column_int64(stmt, 3);
		d->host = store_col_text(stmt, 4);
		d->port = sqlite3_column_int(stmt, 5);
		d->method = store_col_text(stmt, 6);
		d->path = store_col_text(stmt, 7);
		d->answer = store_col_text(stmt, 8);
		d->scope = store_col_text(stmt, 9);
		d->by = store_col_text(stmt, 10);
		d->waiting = sqlite3_column_int(stmt, 11);
		v = xreallocarray(v, *n + 1, sizeof *v);
		v[(*n)++] = d;
	}
	sqlite3_finalize(stmt);
	return v;
}

void
store_decision_list_free(struct store_decision **v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		store_decision_free(v[i]);
	free(v);
}

void
store_event_add(struct store *st, int64_t session, const char *level,
    const char *kind, const char *fmt, ...)
{
	struct store_event *e = xcalloc(1, sizeof *e);
	struct store_op op;
	va_list ap;

	e->session_id = session;
	e->at = util_now_ms();
	e->level = xstrdup(level);
	e->kind = xstrdup(kind);
	va_start(ap, fmt);
	xvasprintf(&e->message, fmt, ap);
	va_end(ap);
	if (!store_budget_take(st, session, strlen(e->message) + strlen(kind),
	    strcmp(level, "error") == 0 ? STORE_BUDGET_ALERT :
	    STORE_BUDGET_RECORD, false)) {
		store_event_free(e);
		return;
	}
	op.kind = STORE_OP_EVENT;
	op.u.ev = e;
	store_queue(st, op);
}

int
store_event_write(struct store *st, const struct store_event *e)
{
	sqlite3_stmt *stmt;
	int rc;

	stmt = store_prepare(st, "INSERT INTO events (session_id, at, level, "
	    "kind, message) VALUES (?,?,?,?,?)");
	if (e->session_id > 0)
		sqlite3_bind_int64(stmt, 1, e->session_id);
	sqlite3_bind_int64(stmt, 2, e->at);
	store_bind_text(stmt, 3, e->level);
	store_bind_text(stmt, 4, e->kind);
	store_bind_text(stmt, 5, e->message);
	rc = sqlite3_step(stmt);
	sqlite3_finalize(stmt);
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

void
store_event_free(struct store_event *e)
{
	if (e == NULL)
		return;
	free(e->level);
	free(e->kind);
	free(e->message);
	free(e);
}

struct store_event **
store_event_list(struct store *st, int64_t session, size_t *n)
{
	sqlite3_stmt *stmt;
	struct store_event **v = NULL, *e;

	store_flush(st);
	stmt = store_prepare(st, "SELECT id, coalesce(session_id, 0), at, "
	    "level, kind, message FROM events WHERE (?1 = 0 OR session_id = ?1) "
	    "ORDER BY id");
	sqlite3_bind_int64(stmt, 1, session);
	*n = 0;
	while (sqlite3_step(stmt) == SQLITE_ROW) {
		e = xcalloc(1, sizeof *e);
		e->id = sqlite3_column_int64(stmt, 0);
		e->session_id = sqlite3_column_int64(stmt, 1);
		e->at = sqlite3_column_int64(stmt, 2);
		e->level = store_col_text(stmt, 3);
		e->kind = store_col_text(stmt, 4);
		e->message = store_col_text(stmt, 5);
		v = xreallocarray(v, *n + 1, sizeof *v);
		v[(*n)++] = e;
	}
	sqlite3_finalize(stmt);
	return v;
}

void
store_event_list_free(struct store_event **v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		store_event_free(v[i]);
	free(v);
}

int64_t
store_snapshot_add(struct store *st, const struct store_snapshot *s,
    char **cause)
{
	sqlite3_stmt *stmt;
	int64_t id = -1;
	int rc;

	stmt = store_prepare(st, "INSERT INTO snapshots (session_id, "
	    "created_at, label, kind, commit_id, tree, parent, ref, "
	    "files_changed) VALUES (?,?,?,?,?,?,?,?,?)");
	sqlite3_bind_int64(stmt, 1, s->session_id);
	sqlite3_bind_int64(stmt, 2, s->created_at != 0 ? s->created_at :
	    util_now_ms());
	store_bind_text(stmt, 3, s->label);
	store_bind_text(stmt, 4, s->kind);
	store_bind_text(stmt, 5, s->commit);
	store_bind_text(stmt, 6, s->tree);
	store_bind_text(stmt, 7, s->parent);
	store_bind_text(stmt, 8, s->ref);
	sqlite3_bind_int64(stmt, 9, s->files_changed);
	if ((rc = sqlite3_step(stmt)) == SQLITE_DONE)
		id = sqlite3_last_insert_rowid(st->db);
	else {
		*cause = xprintf("cannot record the snapshot in %s: %s",
		    st->path, sqlite3_errmsg(st->db));
		store_note_failure(st, rc, "snapshots");
	}
	sqlite3_finalize(stmt);
	return id;
}

struct store_snapshot **
store_snapshot_list(struct store *st, int64_t session, size_t *n)
{
	sqlite3_stmt *stmt;
	struct store_snapshot **v = NULL, *s;

	stmt = store_prepare(st, "SELECT id, session_id, created_at, label, "
	    "kind, commit_id, tree, parent, ref, files_changed, dropped_at FROM "
	    "snapshots WHERE session_id = ? ORDER BY id");
	sqlite3_bind_int64(stmt, 1, session);
	*n = 0;
	while (sqlite3_step(stmt) == SQLITE_ROW) {
		s = xcalloc(1, sizeof *s);
		s->id = sqlite3_column_int64(stmt, 0);
		s->session_id = sqlite3_column_int64(stmt, 1);
		s->created_at = sqlite3_column_int64(stmt, 2);
		s->label = store_col_text(stmt, 3);
		s->kind = store_col_text(stmt, 4);
		s->commit = store_col_text(stmt, 5);
		s->tree = store_col_text(stmt, 6);
		s->parent = store_col_text(stmt, 7);
		s->ref = store_col_text(stmt, 8);
		s->files_changed = sqlite3_column_int64(stmt, 9);
		s->dropped_at = sqlite3_column_int64(stmt, 10);
		v = xreallocarray(v, *n + 1, sizeof *v);
		v[(*n)++] = s;
	}
	sqlite3_finalize(stmt);
	return v;
}

void
store_snapshot_free(struct store_snapshot *s)
{
	if (s == NULL)
		return;
	free(s->label);
	free(s->kind);
	free(s->commit);
	free(s->tree);
	free(s->parent);
	free(s->ref);
	free(s);
}

void
store_snapshot_list_free(struct store_snapshot **v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		store_snapshot_free(v[i]);
	free(v);
}

int
store_confchange_add(struct store *st, const struct store_confchange *c,
    char **cause)
{
	sqlite3_stmt *stmt;
	int rc;

	stmt = store_prepare(st, "INSERT INTO config_changes (session_id, at, "
	    "path, change, action) VALUES (?,?,?,?,?)");
	sqlite3_bind_int64(stmt, 1, c->session_id);
	sqlite3_bind_int64(stmt, 2, c->at != 0 ? c->at : util_now_ms());
	store_bind_text(stmt, 3, c->path);
	store_bind_text(stmt, 4, c->change);
	store_bind_text(stmt, 5, c->action);
	rc = sqlite3_step(stmt);
	sqlite3_finalize(stmt);
	if (rc != SQLITE_DONE) {
		*cause = xprintf("cannot record the config change in %s: %s",
		    st->path, sqlite3_errstr(rc));
		return -1;
	}
	return 0;
}

struct store_confchange **
store_confchange_list(struct store *st, int64_t session, size_t *n)
{
	sqlite3_stmt *stmt;
	struct store_confchange **v = NULL, *c;

	stmt = store_prepare(st, "SELECT id, session_id, at, path, change, "
	    "action FROM config_changes WHERE session_id = ? ORDER BY id");
	sqlite3_bind_int64(stmt, 1, session);
	*n = 0;
	while (sqlite3_step(stmt) == SQLITE_ROW) {
		c = xcalloc(1, sizeof *c);
		c->id = sqlite3_column_int64(stmt, 0);
		c->session_id = sqlite3_column_int64(stmt, 1);
		c->at = sqlite3_column_int64(stmt, 2);
		c->path = store_col_text(stmt, 3);
		c->change = store_col_text(stmt, 4);
		c->action = store_col_text(stmt, 5);
		v = xreallocarray(v, *n + 1, sizeof *v);
		v[(*n)++] = c;
	}
	sqlite3_finalize(stmt);
	return v;
}

void
store_confchange_list_free(struct store_confchange **v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(v[i]->path);
		free(v[i]->change);
		free(v[i]->action);
		free(v[i]);
	}
	free(v);
}
