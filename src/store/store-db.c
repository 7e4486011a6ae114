/* Opening, migrating and batching writes to the SQLite database. */
#include <sys/stat.h>

#include <errno.h>
#include <event2/event.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/store-int.h"

/* Each entry upgrades the schema by one version; never edit a shipped one. */
static const char *const store_migrations[] = {
	/* 1: the first schema. */
	"CREATE TABLE sessions ("
	"  id INTEGER PRIMARY KEY,"
	"  kind TEXT NOT NULL DEFAULT 'run',"
	"  agent TEXT NOT NULL,"
	"  project TEXT NOT NULL,"
	"  command TEXT NOT NULL,"
	"  started_at INTEGER NOT NULL,"
	"  ended_at INTEGER,"
	"  state TEXT NOT NULL CHECK (state IN"
	"    ('running','exited','crashed','failed')),"
	"  exit_status INTEGER,"
	"  jail TEXT,"
	"  unsafe TEXT,"
	"  flags TEXT,"
	"  error TEXT,"
	"  owner_pid INTEGER NOT NULL,"
	"  owner_start INTEGER NOT NULL DEFAULT 0);"
	"CREATE INDEX sessions_state ON sessions(state);"
	"CREATE TABLE session_refs ("
	"  session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,"
	"  ref TEXT NOT NULL,"
	"  oid TEXT NOT NULL,"
	"  PRIMARY KEY (session_id, ref));"
	"CREATE TABLE requests ("
	"  id INTEGER PRIMARY KEY,"
	"  session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,"
	"  started_at INTEGER NOT NULL,"
	"  method TEXT, scheme TEXT, host TEXT, port INTEGER, path TEXT,"
	"  http_version TEXT,"
	"  status INTEGER, status_text TEXT,"
	"  bytes_up INTEGER NOT NULL DEFAULT 0,"
	"  bytes_down INTEGER NOT NULL DEFAULT 0,"
	"  ttfb_us INTEGER, duration_us INTEGER,"
	"  decision TEXT NOT NULL, rule TEXT, error TEXT,"
	"  req_headers TEXT, resp_headers TEXT,"
	"  req_body BLOB, resp_body BLOB, mime_type TEXT);"
	"CREATE INDEX requests_session ON requests(session_id, id);"
	"CREATE TABLE decisions ("
	"  id INTEGER PRIMARY KEY,"
	"  session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,"
	"  asked_at INTEGER NOT NULL, answered_at INTEGER,"
	"  host TEXT NOT NULL, port INTEGER, method TEXT, path TEXT,"
	"  answer TEXT NOT NULL, scope TEXT NOT NULL, by TEXT NOT NULL,"
	"  waiting INTEGER NOT NULL DEFAULT 1);"
	"CREATE INDEX decisions_session ON decisions(session_id);"
	"CREATE TABLE snapshots ("
	"  id INTEGER PRIMARY KEY,"
	"  session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,"
	"  created_at INTEGER NOT NULL,"
	"  label TEXT, kind TEXT NOT NULL,"
	"  commit_id TEXT NOT NULL, tree TEXT NOT NULL, parent TEXT,"
	"  ref TEXT, files_changed INTEGER NOT NULL DEFAULT 0);"
	"CREATE INDEX snapshots_session ON snapshots(session_id);"
	"CREATE TABLE config_changes ("
	"  id INTEGER PRIMARY KEY,"
	"  session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,"
	"  at INTEGER NOT NULL, path TEXT NOT NULL,"
	"  change TEXT NOT NULL, action TEXT NOT NULL);"
	"CREATE INDEX config_changes_session ON config_changes(session_id);"
	"CREATE TABLE events ("
	"  id INTEGER PRIMARY KEY,"
	"  session_id INTEGER REFERENCES sessions(id) ON DELETE CASCADE,"
	"  at INTEGER NOT NULL, level TEXT NOT NULL, kind TEXT NOT NULL,"
	"  message TEXT NOT NULL);"
	"CREATE INDEX events_session ON events(session_id);",
	/*
	 * 2: where each session's snapshots live. No foreign key: the row
	 * outlives its session so that gc can delete the session's snapshot
	 * ref (and an unused shadow repository) after the session is gone.
	 */
	"CREATE TABLE snapshot_repos ("
	"  session_id INTEGER PRIMARY KEY,"
	"  git_dir TEXT NOT NULL,"
	"  work_tree TEXT NOT NULL,"
	"  shadow INTEGER NOT NULL DEFAULT 0);"
	"CREATE INDEX sessions_project ON sessions(kind, project);",
	/*
	 * 3: what a session did past its record budget, counted instead of
	 * stored: requests (and how many of them were denied), and other
	 * records (events, decisions).
	 */
	"ALTER TABLE sessions ADD COLUMN unrecorded INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE sessions ADD COLUMN unrecorded_denied INTEGER NOT NULL "
	"  DEFAULT 0;"
	"ALTER TABLE sessions ADD COLUMN unrecorded_other INTEGER NOT NULL "
	"  DEFAULT 0;",
	/*
	 * 4: a turn snapshot dropped to keep its project's snapshots within
	 * [snapshots] max_size keeps its row (snapshot numbers stay), marked.
	 */
	"ALTER TABLE snapshots ADD COLUMN dropped_at INTEGER;",
	/*
	 * 5: what a running session is doing (starting, working, needs you,
	 * prompt, paused), for those who read the records while it runs.
	 */
	"ALTER TABLE sessions ADD COLUMN live TEXT;",
};

/* Queued ops beyond this are dropped (and counted) while the disk refuses writes. */
#define STORE_MAX_QUEUE 100000
/* How long opening waits for another agentmux opening the same new database. */
#define STORE_OPEN_WAIT_MS 10000
#define STORE_OPEN_RETRY_US 10000

int
store_schema_version(void)
{
	return (int)nitems(store_migrations);
}

sqlite3_stmt *
store_prepare(struct store *st, const char *sql)
{
	sqlite3_stmt *stmt;
	int rc;

	rc = sqlite3_prepare_v2(st->db, sql, -1, &stmt, NULL);
	if (rc == SQLITE_OK)
		return stmt;
	/*
	 * Not fatal: dying here would take every jail with it (PDEATHSIG).
	 * SQLite takes a NULL statement everywhere the store passes one
	 * (bind and step say SQLITE_MISUSE, columns read NULL, finalize
	 * and reset do nothing), so a write fails and stays queued, a read
	 * finds nothing, and the store says so once.
	 */
	if (!st->degraded)
		log_warnx("the database %s cannot run a query (%.48s): %s; "
		    "records are kept in memory and reads find nothing until "
		    "it can; check it with 'agentmux doctor'", st->path, sql,
		    sqlite3_errmsg(st->db));
	st->degraded = true;
	return NULL;
}

void
store_bind_text(sqlite3_stmt *stmt, int i, const char *s)
{
	if (s == NULL)
		sqlite3_bind_null(stmt, i);
	else
		sqlite3_bind_text(stmt, i, s, -1, SQLITE_TRANSIENT);
}

char *
store_col_text(sqlite3_stmt *stmt, int i)
{
	const unsigned char *s = sqlite3_column_text(stmt, i);

	return s == NULL ? NULL : xstrdup((const char *)s);
}

int
store_exec(struct store *st, const char *sql, char **cause)
{
	char *err = NULL;

	if (sqlite3_exec(st->db, sql, NULL, NULL, &err) != SQLITE_OK) {
		if (cause != NULL)
			*cause = xprintf("%s: %s", st->path,
			    err != NULL ? err : sqlite3_errmsg(st->db));
		sqlite3_free(err);
		return -1;
	}
	return 0;
}

/*
 * store_exec, asked again while the database is busy, for up to
 * STORE_OPEN_WAIT_MS: making a new database WAL takes a lock SQLite's
 * busy handler does not wait for, so of two agentmux started at once on a
 * fresh data dir one got "database is locked".
 */
static int
store_exec_busy(struct store *st, const char *sql, char **cause)
{
	int64_t until = util_mono_us() + STORE_OPEN_WAIT_MS * 1000LL;
	int rc;

	while (((rc = sqlite3_exec(st->db, sql, NULL, NULL, NULL)) & 0xff) ==
	    SQLITE_BUSY && util_mono_us() < until)
		usleep(STORE_OPEN_RETRY_US);
	if (rc == SQLITE_OK)
		return 0;
	if (cause != NULL)
		*cause = xprintf("%s: %s", st->path, sqlite3_errmsg(st->db));
	return -1;
}

static int
store_user_version(struct store *st)
{
	sqlite3_stmt *stmt = store_prepare(st, "PRAGMA user_version");
	int v = 0;

	if (sqlite3_step(stmt) == SQLITE_ROW)
		v = sqlite3_column_int(stmt, 0);
	sqlite3_finalize(stmt);
	return v;
}

static int
store_migrate(struct store *st, char **cause)
{
	int v;
	char *sql;

	/* Up to date (every open but the first): no need for the write lock. */
	if (store_user_version(st) == (int)nitems(store_migrations))
		return 0;
	if (store_exec(st, "BEGIN IMMEDIATE", cause) == -1)
		return -1;
	v = store_user_version(st);
	if (v > (int)nitems(store_migrations)) {
		store_exec(st, "ROLLBACK", NULL);
		*cause = xprintf("%s was written by a newer agentmux (schema %d, "
		    "this one knows %zu); upgrade agentmux", st->path, v,
		    nitems(store_migrations));
		return -1;
	}
	for (; v < (int)nitems(store_migrations); v++) {
		if (store_exec(st, store_migrations[v], cause) == -1)
			goto fail;
		sql = xprintf("PRAGMA user_version = %d", v + 1);
		if (store_exec(st, sql, cause) == -1) {
			free(sql);
			goto fail;
		}
		free(sql);
	}
	return store_exec(st, "COMMIT", cause);
fail:
	store_exec(st, "ROLLBACK", NULL);
	return -1;
}


#define STORE_CKPT_PAGES 1000   /* SQLite's own threshold */

/*
 * The checkpointer's SQLite calls allocate: each is made inside the clone
 * gate, so that a jail cloned meanwhile inherits no held malloc lock.
 */
static void
store_ckpt_main(void *arg)
{
	struct store *st = arg;
	sqlite3 *db = NULL;
	int rc;

	clone_gate_enter();
	if ((rc = sqlite3_open_v2(st->path, &db, SQLITE_OPEN_READWRITE |
	    SQLITE_OPEN_NOMUTEX, NULL)) == SQLITE_OK) {
		sqlite3_busy_timeout(db, 1000);
		/* A connection that has read nothing does not know it is in WAL mode. */
		sqlite3_exec(db, "SELECT count(*) FROM sqlite_master", NULL,
		    NULL, NULL);
	}
	clone_gate_leave();
	pthread_mutex_lock(&st->ckpt_mu);
	if (rc != SQLITE_OK)
		st->ckpt_failed = true;
	while (rc == SQLITE_OK && !st->ckpt_stop) {
		if (!st->ckpt_want) {
			pthread_cond_wait(&st->ckpt_cv, &st->ckpt_mu);
			continue;
		}
		st->ckpt_want = false;
		pthread_mutex_unlock(&st->ckpt_mu);
		/* PASSIVE: never waits for, nor blocks, the writer. */
		clone_gate_enter();
		sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_PASSIVE,
		    NULL, NULL);
		clone_gate_leave();
		pthread_mutex_lock(&st->ckpt_mu);
	}
	pthread_mutex_unlock(&st->ckpt_mu);
	clone_gate_enter();
	sqlite3_close(db);
	clone_gate_leave();
}

/* Asks the checkpointer (started at first need) to run; false if it cannot. */
static bool
store_ckpt_kick(struct store *st)
{
	bool ok;

	pthread_mutex_lock(&st->ckpt_mu);
	if (!st->ckpt_started && !st->ckpt_failed) {
		if (thread_spawn(&st->ckpt_thread, store_ckpt_main, st) == 0)
			st->ckpt_started = true;
		else
			st->ckpt_failed = true;
	}
	st->ckpt_want = true;
	pthread_cond_signal(&st->ckpt_cv);
	ok = !st->ckpt_failed;
	pthread_mutex_unlock(&st->ckpt_mu);
	return ok;
}

static int
store_wal_hook(void *arg, sqlite3 *db, const char *name, int pages)
{
	struct store *st = arg;

	if (pages >= STORE_CKPT_PAGES && !store_ckpt_kick(st))
		sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE,
		    NULL, NULL);   /* no thread: the old way, in the commit */
	return SQLITE_OK;
}

static void
store_ckpt_stop(struct store *st)
{
	pthread_mutex_lock(&st->ckpt_mu);
	st->ckpt_stop = true;
	pthread_cond_signal(&st->ckpt_cv);
	pthread_mutex_unlock(&st->ckpt_mu);
	thread_join(&st->ckpt_thread);
	pthread_mutex_destroy(&st->ckpt_mu);
	pthread_cond_destroy(&st->ckpt_cv);
}

static int
store_configure(struct store *st, char **cause)
{
	sqlite3_busy_timeout(st->db, 10000);
	sqlite3_extended_result_codes(st->db, 1);
	/*
	 * Checkpointing (and so deleting the WAL) on every close made each
	 * short-lived agentmux (run, sessions) pay four fsyncs: two to make a
	 * new WAL, two to checkpoint it. The WAL stays; automatic checkpoints
	 * still bound its size, and WAL mode keeps the database consistent.
	 */
	sqlite3_db_config(st->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
	/*
	 * Checkpoints (copying the WAL back, with an fsync) cost 5-20 ms here:
	 * they run on a thread of their own instead of in whatever commit
	 * crosses the threshold, which would stall the loop (the proxy, the
	 * panes) that long.
	 */
	sqlite3_wal_hook(st->db, store_wal_hook, st);
	/*
	 * Records are appended, rarely read back: a 512 KiB page cache (not
	 * SQLite's 2 MiB) keeps agentmux, which also runs the proxy, small.
	 */
	if (store_exec_busy(st, "PRAGMA journal_mode = WAL", cause) == -1 ||
	    store_exec(st, "PRAGMA synchronous = NORMAL", cause) == -1 ||
	    store_exec(st, "PRAGMA foreign_keys = ON", cause) == -1 ||
	    store_exec(st, "PRAGMA cache_size = -512", cause) == -1)
		return -1;
	return 0;
}

struct store *
store_open(const char *path, char **cause)
{
	struct store *st;
	char *dir = NULL;
	int rc;

	if (path == NULL) {
		if ((dir = path_data_dir(cause)) == NULL)
			return NULL;
	}
	st = xcalloc(1, sizeof *st);
	st->budget_max = STORE_BUDGET_MAX;
	st->headers_max = STORE_HEADERS_MAX;
	pthread_mutex_init(&st->ckpt_mu, NULL);
	pthread_cond_init(&st->ckpt_cv, NULL);
	st->path = path != NULL ? xstrdup(path) : xprintf("%s/agentmux.db", dir);
	free(dir);
	rc = sqlite3_open_v2(st->path, &st->db, SQLITE_OPEN_READWRITE |
	    SQLITE_OPEN_CREATE | SQLITE_OPEN_NOFOLLOW, NULL);
	if (rc != SQLITE_OK) {
		*cause = xprintf("cannot open the database %s: %s", st->path,
		    st->db != NULL ? sqlite3_errmsg(st->db) : sqlite3_errstr(rc));
		goto fail;
	}
	chmod(st->path, 0600);
	if (store_configure(st, cause) == -1 || store_migrate(st, cause) == -1)
		goto fail;
	store_mark_crashed(st);
	return st;
fail:
	sqlite3_close(st->db);
	pthread_mutex_destroy(&st->ckpt_mu);
	pthread_cond_destroy(&st->ckpt_cv);
	free(st->path);
	free(st);
	return NULL;
}

const char *
store_path(struct store *st)
{
	return st->path;
}

bool
store_degraded(struct store *st)
{
	return st->degraded;
}

#define STORE_FLUSH_GAP_US 10000

static void
store_flush_cb(evutil_socket_t fd, short events, void *arg)
{
	store_flush(arg);
}

void
store_attach(struct store *st, struct event_base *base)
{
	if (st->flush_ev != NULL)
		event_free(st->flush_ev);
	st->flush_ev = event_new(base, -1, 0, store_flush_cb, st);
}

/*
 * Records are written at the end of the loop pass that queued them; under
 * load (the proxy passes the loop once or twice per request) a pass within
 * STORE_FLUSH_GAP_US of the last write waits for the gap to end, so that
 * one transaction carries many records instead of one each.
 */
static void
store_schedule(struct store *st)
{
	int64_t since = util_mono_us() - st->last_flush_us;
	struct timeval tv;

	if (since >= STORE_FLUSH_GAP_US || since < 0) {
		event_active(st->flush_ev, EV_TIMEOUT, 0);
		return;
	}
	tv.tv_sec = 0;
	tv.tv_usec = (suseconds_t)(STORE_FLUSH_GAP_US - since);
	event_add(st->flush_ev, &tv);
}

void
store_queue(struct store *st, struct store_op op)
{
	if (st->nops >= STORE_MAX_QUEUE) {
		st->dropped++;
		switch (op.kind) {
		case STORE_OP_REQUEST:
			request_free(op.u.req);
			break;
		case STORE_OP_DECISION:
			store_decision_free(op.u.dec);
			break;
		case STORE_OP_EVENT:
			store_event_free(op.u.ev);
			break;
		}
		return;
	}
	if (st->nops == st->capops) {
		st->capops = st->capops * 2 + 16;
		st->ops = xreallocarray(st->ops, st->capops, sizeof *st->ops);
	}
	st->ops[st->nops++] = op;
	store_schedule_flush(st);
}

void
store_schedule_flush(struct store *st)
{
	if (st->flush_ev == NULL)
		store_flush(st);
	else if (!event_pending(st->flush_ev, EV_TIMEOUT, NULL))
		store_schedule(st);
}

void
store_note_failure(struct store *st, int rc, const char *what)
{
	if (st->degraded)
		return;
	st->degraded = true;
	if ((rc & 0xff) == SQLITE_FULL)
		log_warnx("the disk holding %s is full: %s are kept in memory "
		    "until there is space; free some space", st->path, what);
	else
		log_warnx("cannot write %s to %s: %s", what, st->path,
		    sqlite3_errstr(rc));
}

static int
store_write_op(struct store *st, struct store_op *op)
{
	switch (op->kind) {
	case STORE_OP_REQUEST:
		return store_request_write(st, op->u.req);
	case STORE_OP_DECISION:
		return store_decision_write(st, op->u.dec);
	case STORE_OP_EVENT:
		return store_event_write(st, op->u.ev);
	}
	return SQLITE_MISUSE;
}

static void
store_free_op(struct store_op *op)
{
	switch (op->kind) {
	case STORE_OP_REQUEST:
		request_free(op->u.req);
		break;
	case STORE_OP_DECISION:
		store_decision_free(op->u.dec);
		break;
	case STORE_OP_EVENT:
		store_event_free(op->u.ev);
		break;
	}
}

int
store_flush(struct store *st)
{
	size_t i;
	int rc;

	if (st->nops == 0 && !st->budget_pending)
		return 0;
	rc = sqlite3_exec(st->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
	for (i = 0; rc == SQLITE_OK && i < st->nops; i++)
		rc = store_write_op(st, &st->ops[i]);
	if (rc == SQLITE_OK)
		rc = store_budget_write(st);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(st->db, "COMMIT", NULL, NULL, NULL);
	if (rc != SQLITE_OK) {
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
		store_note_failure(st, rc, "records");
		return -1;
	}
	for (i = 0; i < st->nops; i++)
		store_free_op(&st->ops[i]);
	st->nops = 0;
	store_budget_written(st);
	st->last_flush_us = util_mono_us();
	if (st->degraded) {
		st->degraded = false;
		log_warnx("the database %s is writable again", st->path);
	}
	return 0;
}

void
store_close(struct store *st)
{
	size_t i;

	if (st == NULL)
		return;
	store_flush(st);
	for (i = 0; i < st->nops; i++)
		store_free_op(&st->ops[i]);
	if (st->nops + st->dropped > 0)
		log_warnx("%zu records could not be written to %s",
		    st->nops + st->dropped, st->path);
	free(st->ops);
	free(st->budgets);
	sqlite3_finalize(st->req_insert);
	if (st->flush_ev != NULL)
		event_free(st->flush_ev);
	store_ckpt_stop(st);
	sqlite3_close(st->db);
	free(st->path);
	free(st);
}

int
store_mark_crashed(struct store *st)
{
	sqlite3_stmt *sel, *upd;
	int n = 0;

	sel = store_prepare(st, "SELECT id, owner_pid, owner_start FROM "
	    "sessions WHERE state = 'running'");
	upd = store_prepare(st, "UPDATE sessions SET state = 'crashed', "
	    "ended_at = max(started_at, coalesce((SELECT max(started_at) FROM "
	    "requests WHERE session_id = ?1), 0), coalesce((SELECT max(at) FROM "
	    "events WHERE session_id = ?1), 0)), error = 'agentmux (pid ' || "
	    "owner_pid || ') ended without closing the session' WHERE id = ?1 "
	    "AND state = 'running'");
	while (sqlite3_step(sel) == SQLITE_ROW) {
		pid_t pid = (pid_t)sqlite3_column_int64(sel, 1);
		uint64_t start = (uint64_t)sqlite3_column_int64(sel, 2);

		if (util_proc_alive(pid, start))
			continue;
		sqlite3_bind_int64(upd, 1, sqlite3_column_int64(sel, 0));
		if (sqlite3_step(upd) == SQLITE_DONE)
			n++;
		sqlite3_reset(upd);
	}
	sqlite3_finalize(sel);
	sqlite3_finalize(upd);
	return n;
}
