/* Request records: queued by the proxy, written in batches, listed with filters. */
#include <stdlib.h>
#include <string.h>

#include "store/store-int.h"

/* The bytes R would add to the database with its headers cut to REQ_H and RESP_H. */
static size_t
store_request_size(const struct request *r, const char *req_h,
    const char *resp_h)
{
	const char *const s[] = { r->method, r->scheme, r->host, r->path,
		r->http_version, r->status_text, r->decision, r->rule, r->error,
		req_h, resp_h, r->mime_type };
	size_t n = r->req_body.len + r->resp_body.len, i;

	for (i = 0; i < nitems(s); i++)
		n += s[i] != NULL ? strlen(s[i]) : 0;
	return n;
}

void
store_request_add(struct store *st, const struct request *r)
{
	struct request bare, *c;
	struct store_op op;
	char *req_h, *resp_h;

	/* Headers first: what is cut is not charged to the budget. */
	req_h = store_budget_headers(st, r->req_headers);
	resp_h = store_budget_headers(st, r->resp_headers);
	if (!store_budget_take(st, r->session_id, store_request_size(r, req_h,
	    resp_h), STORE_BUDGET_REQUEST, r->decision != NULL &&
	    strcmp(r->decision, "deny") == 0)) {
		free(req_h);
		free(resp_h);
		return;
	}
	/* The copy takes the cut headers instead of copying the whole ones. */
	bare = *r;
	bare.req_headers = bare.resp_headers = NULL;
	c = request_copy(&bare, true);
	c->req_headers = req_h;
	c->resp_headers = resp_h;
	if (c->decision == NULL)
		c->decision = xstrdup("error");
	c->done = true;
	if (c->started_at == 0)
		c->started_at = util_now_ms();
	op.kind = STORE_OP_REQUEST;
	op.u.req = c;
	store_queue(st, op);
}

/*
 * The request's strings live until the statement is reset, so SQLite may
 * read them in place (SQLITE_STATIC) instead of copying each one: this
 * runs for every request a proxy records.
 */
static void
store_bind_str(sqlite3_stmt *stmt, int i, const char *s)
{
	if (s == NULL)
		sqlite3_bind_null(stmt, i);
	else
		sqlite3_bind_text(stmt, i, s, -1, SQLITE_STATIC);
}

static void
store_bind_blob(sqlite3_stmt *stmt, int i, const char *p, size_t n)
{
	if (p == NULL)
		sqlite3_bind_null(stmt, i);
	else
		sqlite3_bind_blob64(stmt, i, p, n, SQLITE_STATIC);
}

int
store_request_write(struct store *st, const struct request *r)
{
	sqlite3_stmt *stmt;
	int rc;

	if (st->req_insert == NULL)
		st->req_insert = store_prepare(st, "INSERT INTO requests "
		    "(session_id, started_at, "
	    "method, scheme, host, port, path, http_version, status, "
	    "status_text, bytes_up, bytes_down, ttfb_us, duration_us, decision, "
	    "rule, error, req_headers, resp_headers, req_body, resp_body, "
	    "mime_type) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
	stmt = st->req_insert;
	/* Every parameter is bound each time: nothing is left from the last. */
	sqlite3_bind_int64(stmt, 1, r->session_id);
	sqlite3_bind_int64(stmt, 2, r->started_at);
	store_bind_str(stmt, 3, r->method);
	store_bind_str(stmt, 4, r->scheme);
	store_bind_str(stmt, 5, r->host);
	sqlite3_bind_int(stmt, 6, r->port);
	store_bind_str(stmt, 7, r->path);
	store_bind_str(stmt, 8, r->http_version);
	if (r->status > 0)
		sqlite3_bind_int(stmt, 9, r->status);
	else
		sqlite3_bind_null(stmt, 9);
	store_bind_str(stmt, 10, r->status_text);
	sqlite3_bind_int64(stmt, 11, r->bytes_up);
	sqlite3_bind_int64(stmt, 12, r->bytes_down);
	if (r->ttfb_us >= 0)
		sqlite3_bind_int64(stmt, 13, r->ttfb_us);
	else
		sqlite3_bind_null(stmt, 13);
	sqlite3_bind_int64(stmt, 14, r->duration_us);
	store_bind_str(stmt, 15, r->decision);
	store_bind_str(stmt, 16, r->rule);
	store_bind_str(stmt, 17, r->error);
	store_bind_str(stmt, 18, r->req_headers);
	store_bind_str(stmt, 19, r->resp_headers);
	store_bind_blob(stmt, 20, r->req_body.data, r->req_body.len);
	store_bind_blob(stmt, 21, r->resp_body.data, r->resp_body.len);
	store_bind_str(stmt, 22, r->mime_type);
	rc = sqlite3_step(stmt);
	sqlite3_reset(stmt);
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* A blob column into B: data NULL for SQL NULL, so "none" stays apart from "empty". */
static void
store_col_blob(sqlite3_stmt *stmt, int i, struct buf *b)
{
	const void *p = sqlite3_column_blob(stmt, i);
	int n = sqlite3_column_bytes(stmt, i);

	buf_init(b);
	if (sqlite3_column_type(stmt, i) == SQLITE_NULL)
		return;
	/* An empty blob is still a body: a NUL of its own, no bytes. */
	buf_add(b, "", 1);
	buf_reset(b);
	if (n > 0)
		buf_add(b, p, (size_t)n);
}

static struct request *
store_request_row(sqlite3_stmt *stmt, bool bodies)
{
	struct request *r = xmalloc(sizeof *r);

	request_init(r);
	r->done = true;
	r->id = sqlite3_column_int64(stmt, 0);
	r->session_id = sqlite3_column_int64(stmt, 1);
	r->started_at = sqlite3_column_int64(stmt, 2);
	r->method = store_col_text(stmt, 3);
	r->scheme = store_col_text(stmt, 4);
	r->host = store_col_text(stmt, 5);
	r->port = sqlite3_column_int(stmt, 6);
	r->path = store_col_text(stmt, 7);
	r->http_version = store_col_text(stmt, 8);
	r->status = sqlite3_column_int(stmt, 9);
	r->status_text = store_col_text(stmt, 10);
	r->bytes_up = sqlite3_column_int64(stmt, 11);
	r->bytes_down = sqlite3_column_int64(stmt, 12);
	r->ttfb_us = sqlite3_column_type(stmt, 13) == SQLITE_NULL ? -1 :
	    sqlite3_column_int64(stmt, 13);
	r->duration_us = sqlite3_column_int64(stmt, 14);
	r->decision = store_col_text(stmt, 15);
	r->rule = store_col_text(stmt, 16);
	r->error = store_col_text(stmt, 17);
	r->req_headers = store_col_text(stmt, 18);
	r->resp_headers = store_col_text(stmt, 19);
	if (bodies) {
		store_col_blob(stmt, 20, &r->req_body);
		store_col_blob(stmt, 21, &r->resp_body);
	}
	r->mime_type = store_col_text(stmt, 22);
	return r;
}

struct request **
store_request_list(struct store *st, const struct store_request_filter *f,
    size_t *n)
{
	sqlite3_stmt *stmt;
	struct request **v = NULL;
	struct request *r;

	store_flush(st);
	stmt = store_prepare(st, "SELECT id, session_id, started_at, method, "
	    "scheme, host, port, path, http_version, status, status_text, "
	    "bytes_up, bytes_down, ttfb_us, duration_us, decision, rule, error, "
	    "req_headers, resp_headers, req_body, resp_body, mime_type "
	    "FROM requests WHERE (?1 = 0 OR session_id = ?1) AND "
	    "(?2 = 0 OR decision = 'deny') AND id > ?3 ORDER BY id");
	sqlite3_bind_int64(stmt, 1, f->session_id);
	sqlite3_bind_int(stmt, 2, f->denied_only);
	sqlite3_bind_int64(stmt, 3, f->after_id);
	*n = 0;
	while (sqlite3_step(stmt) == SQLITE_ROW) {
		r = store_request_row(stmt, f->with_bodies);
		if (f->host_glob != NULL && (r->host == NULL ||
		    !util_glob_match(f->host_glob, r->host, true))) {
			request_free(r);
			continue;
		}
		v = xreallocarray(v, *n + 1, sizeof *v);
		v[(*n)++] = r;
	}
	sqlite3_finalize(stmt);
	/* LIMIT keeps the newest, still shown oldest first. */
	if (f->limit > 0 && *n > (size_t)f->limit) {
		size_t drop = *n - (size_t)f->limit, i;

		for (i = 0; i < drop; i++)
			request_free(v[i]);
		memmove(v, v + drop, (size_t)f->limit * sizeof *v);
		*n = (size_t)f->limit;
	}
	return v;
}

void
store_request_list_free(struct request **v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		request_free(v[i]);
	free(v);
}
