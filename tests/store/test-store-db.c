/* The store: migrations, crash marking, concurrent writers, killed writers, batching, gc. */
#include <sys/wait.h>

#include <event2/event.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "lib/testlib.h"
#include "store/store.h"

static char *
db_path(const char *name)
{
	return xprintf("%s/%s", test_dir, name);
}

static struct store *
open_or_fail(const char *path)
{
	char *cause = NULL;
	struct store *st = store_open(path, &cause);

	if (st == NULL)
		fail_msg("store_open: %s", cause);
	return st;
}

static int64_t
begin(struct store *st, const char *agent)
{
	struct store_session s;
	char *cause = NULL;
	int64_t id;

	memset(&s, 0, sizeof s);
	s.agent = (char *)agent;
	s.project = (char *)"/proj";
	s.command = (char *)"[\"sh\"]";
	id = store_session_begin(st, &s, &cause);
	assert_true(id > 0);
	return id;
}

static int64_t
sql_int(const char *path, const char *sql)
{
	sqlite3 *db;
	sqlite3_stmt *stmt;
	int64_t v = -1;

	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &stmt, NULL), SQLITE_OK);
	if (sqlite3_step(stmt) == SQLITE_ROW)
		v = sqlite3_column_int64(stmt, 0);
	sqlite3_finalize(stmt);
	sqlite3_close(db);
	return v;
}

static char *
sql_text(const char *path, const char *sql)
{
	sqlite3 *db;
	sqlite3_stmt *stmt;
	char *v = NULL;

	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &stmt, NULL), SQLITE_OK);
	if (sqlite3_step(stmt) == SQLITE_ROW)
		v = xstrdup((const char *)sqlite3_column_text(stmt, 0));
	sqlite3_finalize(stmt);
	sqlite3_close(db);
	return v;
}

static void
add_request(struct store *st, int64_t sid, const char *host,
    const char *decision)
{
	struct request r;

	memset(&r, 0, sizeof r);
	r.session_id = sid;
	r.method = (char *)"GET";
	r.scheme = (char *)"https";
	r.host = (char *)host;
	r.port = 443;
	r.path = (char *)"/x";
	r.status = 200;
	r.ttfb_us = -1;
	r.decision = (char *)decision;
	store_request_add(st, &r);
}

static void
test_migrate_from_empty(void **state)
{
	char *p = db_path("empty.db");
	struct store *st;

	test_write_file(p, "");
	st = open_or_fail(p);
	store_close(st);
	assert_int_equal(sql_int(p, "PRAGMA user_version"),
	    store_schema_version());
	assert_int_equal(sql_int(p, "SELECT count(*) FROM sqlite_master WHERE "
	    "type = 'table' AND name IN ('sessions', 'requests', 'decisions', "
	    "'snapshots', 'config_changes', 'events')"), 6);
	char *mode = sql_text(p, "PRAGMA journal_mode");
	assert_string_equal(mode, "wal");
	free(mode);
	/* Opening again is a no-op migration. */
	st = open_or_fail(p);
	store_close(st);
	free(p);
}

static void
test_newer_schema_refused(void **state)
{
	char *p = db_path("newer.db"), *cause = NULL;
	sqlite3 *db;

	sqlite3_open(p, &db);
	sqlite3_exec(db, "PRAGMA user_version = 999", NULL, NULL, NULL);
	sqlite3_close(db);
	assert_null(store_open(p, &cause));
	assert_non_null(strstr(cause, "newer agentmux"));
	free(cause);
	free(p);
}

static void
test_default_location(void **state)
{
	struct store *st = open_or_fail(NULL);
	char *expect = xprintf("%s/data/agentmux/agentmux.db", test_dir);

	assert_string_equal(store_path(st), expect);
	store_close(st);
	free(expect);
}

static void
test_crash_marking(void **state)
{
	char *p = db_path("crash.db");
	struct store *st;
	struct store_session *s;
	int64_t id;
	pid_t pid;
	int status;

	/* A child records a session and dies without ending it. */
	if ((pid = fork()) == 0) {
		char *cause = NULL;
		struct store *cst = store_open(p, &cause);

		begin(cst, "child");
		_exit(0);
	}
	waitpid(pid, &status, 0);
	st = open_or_fail(p);
	id = 1;
	s = store_session_get(st, id);
	assert_non_null(s);
	assert_string_equal(s->state, "crashed");
	assert_non_null(s->error);
	store_session_free(s);
	/* A session of a live owner (us) stays running. */
	id = begin(st, "me");
	assert_int_equal(store_mark_crashed(st), 0);
	s = store_session_get(st, id);
	assert_string_equal(s->state, "running");
	store_session_free(s);
	assert_int_equal(store_session_end(st, id, "exited", 3, NULL), 0);
	s = store_session_get(st, id);
	assert_string_equal(s->state, "exited");
	assert_true(s->has_exit);
	assert_int_equal(s->exit_status, 3);
	assert_true(s->ended_at >= s->started_at);
	store_session_free(s);
	store_close(st);
	free(p);
}

static void
test_two_writers(void **state)
{
	char *p = db_path("two.db");
	struct store *st = open_or_fail(p);
	int64_t sid = begin(st, "w");
	pid_t pids[2];
	int i, status;

	store_close(st);
	for (i = 0; i < 2; i++) {
		if ((pids[i] = fork()) == 0) {
			char *cause = NULL;
			struct store *cst = store_open(p, &cause);
			int k;

			if (cst == NULL)
				_exit(2);
			for (k = 0; k < 300; k++) {
				add_request(cst, sid, i ? "b.com" : "a.com",
				    "allow");
				if (store_flush(cst) == -1)
					_exit(3);
			}
			store_close(cst);
			_exit(0);
		}
	}
	for (i = 0; i < 2; i++) {
		waitpid(pids[i], &status, 0);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	assert_int_equal(sql_int(p, "SELECT count(*) FROM requests"), 600);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM requests WHERE "
	    "host = 'b.com'"), 300);
	free(p);
}

/*
 * Two processes opening one new database at once (two agentmux started
 * together on a fresh data dir): both open it. Making it WAL took a lock
 * SQLite does not wait for, and one of them failed with "database is
 * locked" (about one start in ten; a hundred rounds here).
 */
static void
test_two_first_opens(void **state)
{
	int round, i, status, go[2];
	pid_t pids[2];
	char *p;

	for (round = 0; round < 100; round++) {
		p = xprintf("%s/first-%d.db", test_dir, round);
		assert_int_equal(pipe(go), 0);
		for (i = 0; i < 2; i++) {
			if ((pids[i] = fork()) == 0) {
				char *cause = NULL, c;
				struct store *cst;

				close(go[1]);
				/* Both wait for the same moment. */
				if (read(go[0], &c, 1) != 0)
					_exit(4);
				if ((cst = store_open(p, &cause)) == NULL) {
					fprintf(stderr, "%s\n", cause);
					_exit(2);
				}
				store_close(cst);
				_exit(0);
			}
		}
		close(go[0]);
		close(go[1]);
		for (i = 0; i < 2; i++) {
			waitpid(pids[i], &status, 0);
			assert_true(WIFEXITED(status));
			assert_int_equal(WEXITSTATUS(status), 0);
		}
		free(p);
	}
}

static void
test_killed_writer(void **state)
{
	char *p = db_path("killed.db"), *ic;
	struct store *st = open_or_fail(p);
	int64_t sid = begin(st, "k");
	int rfd[2], status;
	char c;
	pid_t pid;

	store_close(st);
	pipe(rfd);
	if ((pid = fork()) == 0) {
		char *cause = NULL;
		struct store *cst = store_open(p, &cause);
		int k;

		for (k = 0;; k++) {
			add_request(cst, sid, "loop.com", "allow");
			store_flush(cst);
			if (k == 50)
				write(rfd[1], "x", 1);
		}
	}
	read(rfd[0], &c, 1);
	usleep(100000);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	st = open_or_fail(p);
	store_close(st);
	ic = sql_text(p, "PRAGMA integrity_check");
	assert_string_equal(ic, "ok");
	free(ic);
	assert_true(sql_int(p, "SELECT count(*) FROM requests") > 50);
	close(rfd[0]);
	close(rfd[1]);
	free(p);
}

static void
stop_loop(evutil_socket_t fd, short ev, void *arg)
{
	event_base_loopbreak(arg);
}

static void
test_batched_per_loop_pass(void **state)
{
	char *p = db_path("batch.db");
	struct store *st = open_or_fail(p);
	struct event_base *base = event_base_new();
	struct timeval tv = { 0, 10000 };
	int64_t sid = begin(st, "b");
	int i;

	store_attach(st, base);
	for (i = 0; i < 100; i++)
		add_request(st, sid, "batch.com", i % 2 ? "allow" : "deny");
	store_event_add(st, sid, "info", "test", "hello %d", 42);
	/* Nothing is written until the loop runs a pass. */
	assert_int_equal(sql_int(p, "SELECT count(*) FROM requests"), 0);
	event_base_once(base, -1, EV_TIMEOUT, stop_loop, base, &tv);
	event_base_dispatch(base);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM requests"), 100);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM events"), 1);
	store_close(st);
	event_base_free(base);
	free(p);
}

/* Checkpoints run on the store's own thread: the database file fills while the writer only appends. */
static void
test_checkpoints_off_the_loop(void **state)
{
	char *p = db_path("ckpt.db");
	struct store *st = open_or_fail(p);
	struct event_base *base = event_base_new();
	int64_t sid = begin(st, "c");
	struct request r;
	struct stat sb;
	char big[2048];
	int i, j;

	memset(big, 'h', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	store_attach(st, base);
	memset(&r, 0, sizeof r);
	r.session_id = sid;
	r.method = (char *)"GET";
	r.scheme = (char *)"https";
	r.host = (char *)"ckpt.com";
	r.path = (char *)"/x";
	r.decision = (char *)"allow";
	r.req_headers = big;
	r.resp_headers = big;
	for (i = 0; i < 40; i++) {
		for (j = 0; j < 100; j++)
			store_request_add(st, &r);
		assert_int_equal(store_flush(st), 0);
	}
	/* ~16 MB went through the WAL: the checkpointer copies it back. */
	for (i = 0; i < 200; i++) {
		assert_int_equal(stat(p, &sb), 0);
		if (sb.st_size > 4 * 1024 * 1024)
			break;
		usleep(50000);
	}
	assert_true(sb.st_size > 4 * 1024 * 1024);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM requests"), 4000);
	store_close(st);
	event_base_free(base);
	free(p);
}

static void
test_lists_and_resolve(void **state)
{
	char *p = db_path("list.db"), *cause = NULL;
	struct store *st = open_or_fail(p);
	struct store_request_filter f;
	struct request **rv;
	struct store_session **sv;
	int64_t a, b, id;
	size_t n;

	assert_int_equal(store_session_resolve(st, "last", &id, &cause), -1);
	assert_non_null(strstr(cause, "no sessions"));
	free(cause);
	a = begin(st, "a");
	b = begin(st, "b");
	assert_int_equal(store_session_resolve(st, "last", &id, &cause), 0);
	assert_int_equal(id, b);
	assert_int_equal(store_session_resolve(st, "1", &id, &cause), 0);
	assert_int_equal(id, a);
	assert_int_equal(store_session_resolve(st, "99", &id, &cause), -1);
	free(cause);
	assert_int_equal(store_session_resolve(st, "x", &id, &cause), -1);
	free(cause);
	add_request(st, a, "api.github.com", "allow");
	add_request(st, a, "evil.com", "deny");
	add_request(st, b, "raw.github.com", "allow");
	memset(&f, 0, sizeof f);
	rv = store_request_list(st, &f, &n);
	assert_int_equal(n, 3);
	store_request_list_free(rv, n);
	f.session_id = a;
	f.denied_only = true;
	rv = store_request_list(st, &f, &n);
	assert_int_equal(n, 1);
	assert_string_equal(rv[0]->host, "evil.com");
	store_request_list_free(rv, n);
	memset(&f, 0, sizeof f);
	f.host_glob = "*.github.com";
	rv = store_request_list(st, &f, &n);
	assert_int_equal(n, 2);
	store_request_list_free(rv, n);
	sv = store_session_list(st, false, &n);
	assert_int_equal(n, 2);
	assert_int_equal(sv[0]->id, b);
	assert_int_equal(sv[1]->nrequests, 2);
	assert_int_equal(sv[1]->ndenied, 1);
	store_session_list_free(sv, n);
	store_close(st);
	free(p);
}

/* One word for how a session ended, and requests counted by what became of them (issue 23). */
static void
test_end_words_and_counts(void **state)
{
	char *p = db_path("end.db"), buf[32];
	struct store *st = open_or_fail(p);
	struct store_session *s;
	int64_t a, b, c;

	a = begin(st, "a");
	b = begin(st, "b");
	c = begin(st, "c");
	add_request(st, a, "ok.test", "allow");
	add_request(st, a, "tun.test", "tunnel");
	add_request(st, a, "no.test", "deny");
	add_request(st, a, "down.test", "error");
	store_flush(st);
	assert_int_equal(store_session_end(st, a, "exited", 137, NULL), 0);
	assert_int_equal(store_session_end(st, b, "closed", 129, NULL), 0);
	s = store_session_get(st, a);
	assert_string_equal(store_session_end_text(s, buf, sizeof buf),
	    "exited 137");
	assert_int_equal(s->nrequests, 4);
	assert_int_equal(s->nallowed, 2);
	assert_int_equal(s->ndenied, 1);
	assert_int_equal(s->nerrors, 1);
	assert_int_equal(s->files_changed, -1);
	store_session_free(s);
	s = store_session_get(st, b);
	assert_true(s->closed);
	assert_int_equal(s->exit_status, 129);
	assert_string_equal(store_session_end_text(s, buf, sizeof buf),
	    "closed");
	store_session_free(s);
	s = store_session_get(st, c);
	assert_string_equal(store_session_end_text(s, buf, sizeof buf),
	    "running");
	store_session_free(s);
	store_close(st);
	free(p);
}

static void
test_flags_and_gc(void **state)
{
	char *p = db_path("gc.db"), *cause = NULL;
	struct store *st = open_or_fail(p);
	struct store_session *s;
	int64_t a, b, *ids;
	size_t n;

	a = begin(st, "old");
	b = begin(st, "running");
	add_request(st, a, "x.com", "allow");
	store_session_flag(st, a, "exfiltration");
	store_session_flag(st, a, "exfiltration");
	store_session_flag(st, a, "other");
	s = store_session_get(st, a);
	assert_string_equal(s->flags, "exfiltration other");
	store_session_free(s);
	store_session_end(st, a, "exited", 0, NULL);
	assert_int_equal(store_gc(st, util_now_ms() + 1000, NULL, 0, &ids, &n, &cause), 0);
	assert_int_equal(n, 1);
	assert_int_equal(ids[0], a);
	free(ids);
	assert_null(store_session_get(st, a));
	s = store_session_get(st, b);
	assert_non_null(s);
	store_session_free(s);
	store_close(st);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM requests"), 0);
	free(p);
}

static void
sql_run(const char *path, const char *sql)
{
	sqlite3 *db;

	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

/*
 * A query that cannot be prepared (here: its table renamed under the
 * store) degrades the store instead of ending the process (and with it
 * every jail): writes stay queued, reads find nothing, and once the
 * database is whole again the queued records are written.
 */
static void
test_prepare_fails_degrades(void **state)
{
	char *p = db_path("prepare.db");
	struct store *st = open_or_fail(p);
	struct store_request_filter f;
	struct request **v;
	int64_t sid;
	size_t n;

	sid = begin(st, "prepare");
	store_close(st);
	sql_run(p, "ALTER TABLE requests RENAME TO requests_away");
	/* Opening marks crashed sessions with a query over requests. */
	st = open_or_fail(p);
	assert_true(store_degraded(st));
	add_request(st, sid, "one.test", "allow");
	assert_int_equal(store_flush(st), -1);
	assert_true(store_degraded(st));
	memset(&f, 0, sizeof f);
	f.session_id = sid;
	v = store_request_list(st, &f, &n);
	assert_int_equal(n, 0);
	store_request_list_free(v, n);
	/* Whole again: the record kept in memory is written. */
	sql_run(p, "ALTER TABLE requests_away RENAME TO requests");
	assert_int_equal(store_flush(st), 0);
	assert_false(store_degraded(st));
	v = store_request_list(st, &f, &n);
	assert_int_equal(n, 1);
	assert_string_equal(v[0]->host, "one.test");
	store_request_list_free(v, n);
	store_close(st);
	free(p);
}

/*
 * A record goes in as the proxy hands it over (then freed at once: the store
 * keeps its own copy) and comes back the same: bodies with NUL bytes, an
 * empty body apart from none, a missing decision as "error".
 */
static void
test_request_round_trip(void **state)
{
	char *p = db_path("round.db");
	struct store *st = open_or_fail(p);
	struct store_request_filter f;
	struct request *r = xmalloc(sizeof *r), **v;
	int64_t sid = begin(st, "round");
	size_t n;

	request_init(r);
	r->id = 9;
	r->session_id = sid;
	r->done = true;
	r->started_at = 1700000000123;
	r->method = xstrdup("PUT");
	r->scheme = xstrdup("https");
	r->host = xstrdup("api.example.com");
	r->port = 8443;
	r->path = xstrdup("/up");
	r->http_version = xstrdup("HTTP/1.1");
	r->status = 204;
	r->status_text = xstrdup("No Content");
	r->bytes_up = 3;
	r->duration_us = 42;
	r->rule = xstrdup("allow api.example.com (config:1)");
	r->req_headers = xstrdup("Content-Type: x\n");
	buf_add(&r->req_body, "a\0b", 3);
	buf_add(&r->resp_body, "", 0);
	r->mime_type = xstrdup("x");
	store_request_add(st, r);
	request_free(r);
	memset(&f, 0, sizeof f);
	f.session_id = sid;
	f.with_bodies = true;
	v = store_request_list(st, &f, &n);
	assert_int_equal(n, 1);
	assert_true(v[0]->done);
	assert_true(v[0]->id > 0);
	assert_int_equal(v[0]->session_id, sid);
	assert_int_equal(v[0]->started_at, 1700000000123);
	assert_string_equal(v[0]->method, "PUT");
	assert_string_equal(v[0]->host, "api.example.com");
	assert_int_equal(v[0]->port, 8443);
	assert_string_equal(v[0]->status_text, "No Content");
	assert_string_equal(v[0]->decision, "error");
	assert_string_equal(v[0]->rule, "allow api.example.com (config:1)");
	assert_null(v[0]->error);
	assert_null(v[0]->resp_headers);
	assert_int_equal(v[0]->ttfb_us, -1);
	assert_int_equal(v[0]->duration_us, 42);
	assert_int_equal(v[0]->req_body.len, 3);
	assert_memory_equal(v[0]->req_body.data, "a\0b", 3);
	assert_non_null(v[0]->resp_body.data);
	assert_int_equal(v[0]->resp_body.len, 0);
	store_request_list_free(v, n);
	/* Without bodies asked for, none come. */
	f.with_bodies = false;
	v = store_request_list(st, &f, &n);
	assert_int_equal(n, 1);
	assert_null(v[0]->req_body.data);
	assert_null(v[0]->resp_body.data);
	store_request_list_free(v, n);
	store_close(st);
	free(p);
}

/* Headers are cut at a line past the cap, with a line that says so. */
static void
test_headers_capped(void **state)
{
	char *p = db_path("headers.db");
	struct store *st = open_or_fail(p);
	struct store_request_filter f;
	struct request r, **v;
	struct buf h;
	size_t n;
	int64_t sid;
	int i;

	store_set_limits(st, 0, 1024);
	sid = begin(st, "headers");
	buf_init(&h);
	for (i = 0; i < 100; i++)
		buf_printf(&h, "X-Flood-%02d: %s\n", i,
		    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
	memset(&r, 0, sizeof r);
	r.session_id = sid;
	r.method = (char *)"GET";
	r.host = (char *)"h";
	r.decision = (char *)"deny";
	r.ttfb_us = -1;
	r.req_headers = h.data;
	r.resp_headers = (char *)"Server: small\n";
	store_request_add(st, &r);
	memset(&f, 0, sizeof f);
	f.session_id = sid;
	v = store_request_list(st, &f, &n);
	assert_int_equal(n, 1);
	assert_true(strlen(v[0]->req_headers) < 1024 + 100);
	assert_non_null(strstr(v[0]->req_headers, "X-Flood-00: a"));
	assert_null(strstr(v[0]->req_headers, "X-Flood-99"));
	assert_non_null(strstr(v[0]->req_headers, "bytes of headers not "
	    "recorded ([proxy] record_headers)]\n"));
	/* Cut at a line: each line before the note is whole. */
	assert_non_null(strstr(v[0]->req_headers, "aaaa\n[agentmux: "));
	assert_string_equal(v[0]->resp_headers, "Server: small\n");
	store_request_list_free(v, n);
	/* One long line is cut inside, not dropped whole. */
	buf_reset(&h);
	buf_adds(&h, "Host: h\nX-Pad: ");
	for (i = 0; i < 3000; i++)
		buf_adds(&h, "\xc3\xa9");
	buf_adds(&h, "\n");
	r.req_headers = h.data;
	store_request_add(st, &r);
	f.after_id = 1;
	v = store_request_list(st, &f, &n);
	assert_int_equal(n, 1);
	assert_true(strlen(v[0]->req_headers) > 1000);
	assert_true(strlen(v[0]->req_headers) < 1024 + 100);
	assert_non_null(strstr(v[0]->req_headers, "X-Pad: \xc3\xa9\xc3\xa9"));
	assert_non_null(strstr(v[0]->req_headers, "\xc3\xa9\n[agentmux: "));
	store_request_list_free(v, n);
	buf_free(&h);
	store_close(st);
	free(p);
}

/*
 * Past its budget a session's requests, events and decisions are counted,
 * not stored: the count stays right, the session is flagged once with an
 * event, and another session is not affected.
 */
static void
test_budget(void **state)
{
	char *p = db_path("budget.db"), *big = xmalloc(4096);
	struct store *st = open_or_fail(p);
	struct store_session *s;
	struct store_decision d;
	struct store_event **e;
	int64_t a, b;
	size_t ne, i;
	int k;

	memset(big, 'h', 4095);
	big[4095] = '\0';
	store_set_limits(st, 1024 * 1024, 0);
	a = begin(st, "flood");
	b = begin(st, "quiet");
	for (k = 0; k < 1000; k++)
		add_request(st, a, big, k % 2 == 0 ? "deny" : "allow");
	add_request(st, b, "x.com", "allow");
	store_event_add(st, a, "info", "test", "after the budget");
	/* An alert after a flood is still kept. */
	store_event_add(st, a, "error", "exfiltration", "after the flood");
	memset(&d, 0, sizeof d);
	d.session_id = a;
	d.host = (char *)"h";
	d.answer = (char *)"deny";
	d.scope = (char *)"once";
	d.by = (char *)"user";
	store_decision_add(st, &d);
	assert_true(store_budget_hit(st, a));
	assert_false(store_budget_hit(st, b));
	store_close(st);

	/* Bounded: about 1 MiB of the 4 MiB sent. */
	assert_true(sql_int(p, "SELECT sum(length(host)) FROM requests WHERE "
	    "session_id = 1") <= 1024 * 1024);
	st = open_or_fail(p);
	s = store_session_get(st, a);
	assert_int_equal(s->nrequests, 1000);
	assert_int_equal(s->ndenied, 500);
	assert_true(s->unrecorded > 700 && s->unrecorded < 1000);
	assert_true(s->unrecorded_denied > 300 && s->unrecorded_denied < 500);
	assert_int_equal(s->unrecorded_other, 2);
	assert_string_equal(s->flags, "budget");
	store_session_free(s);
	e = store_event_list(st, a, &ne);
	for (i = 0, k = 0; i < ne; i++)
		k += strcmp(e[i]->kind, "budget") == 0;
	assert_int_equal(k, 1);
	for (i = 0, k = 0; i < ne; i++)
		k += strcmp(e[i]->kind, "exfiltration") == 0;
	assert_int_equal(k, 1);
	store_event_list_free(e, ne);
	s = store_session_get(st, b);
	assert_int_equal(s->nrequests, 1);
	assert_int_equal(s->unrecorded, 0);
	assert_null(s->flags);
	store_session_free(s);
	store_close(st);
	free(big);
	free(p);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_migrate_from_empty),
		cmocka_unit_test(test_newer_schema_refused),
		cmocka_unit_test(test_default_location),
		cmocka_unit_test(test_two_first_opens),
		cmocka_unit_test(test_crash_marking),
		cmocka_unit_test(test_two_writers),
		cmocka_unit_test(test_killed_writer),
		cmocka_unit_test(test_batched_per_loop_pass),
		cmocka_unit_test(test_checkpoints_off_the_loop),
		cmocka_unit_test(test_lists_and_resolve),
		cmocka_unit_test(test_end_words_and_counts),
		cmocka_unit_test(test_flags_and_gc),
		cmocka_unit_test(test_request_round_trip),
		cmocka_unit_test(test_headers_capped),
		cmocka_unit_test(test_prepare_fails_degrades),
		cmocka_unit_test(test_budget),
	};

	return test_run_group(tests, test_dir_setup, test_dir_teardown);
}
