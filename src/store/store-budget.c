/* What one session can make the store write: headers capped per request, records per session. */
#include <stdlib.h>
#include <string.h>

#include "store/store-int.h"

/* A record's own weight beyond its strings: the row, its index entry. */
#define STORE_BUDGET_ROW 64
/*
 * Alerts (exfiltration, tampering) still stored past the budget, so that a
 * flood first cannot hide what comes after it; beyond these they are
 * counted too (the session's flags are kept whatever happens).
 */
#define STORE_BUDGET_ALERTS 100

void
store_set_limits(struct store *st, int64_t budget, size_t headers_max)
{
	if (budget > 0)
		st->budget_max = budget;
	if (headers_max > 0)
		st->headers_max = headers_max;
}

/* The budget of SESSION, made on first use. */
static struct store_budget *
store_budget_get(struct store *st, int64_t session)
{
	size_t i;

	for (i = 0; i < st->nbudgets; i++) {
		if (st->budgets[i].session == session)
			return &st->budgets[i];
	}
	st->budgets = xreallocarray(st->budgets, st->nbudgets + 1,
	    sizeof *st->budgets);
	memset(&st->budgets[st->nbudgets], 0, sizeof *st->budgets);
	st->budgets[st->nbudgets].session = session;
	return &st->budgets[st->nbudgets++];
}

bool
store_budget_hit(struct store *st, int64_t session)
{
	size_t i;

	for (i = 0; i < st->nbudgets; i++) {
		if (st->budgets[i].session == session)
			return st->budgets[i].hit;
	}
	return false;
}

/* The first record past the budget: the session is flagged and told once, in a record that is kept. */
static void
store_budget_reached(struct store *st, struct store_budget *b)
{
	char size[16];
	struct store_op op;
	struct store_event *e = xcalloc(1, sizeof *e);

	b->hit = true;
	store_session_flag(st, b->session, "budget");
	e->session_id = b->session;
	e->at = util_now_ms();
	e->level = xstrdup("warn");
	e->kind = xstrdup("budget");
	e->message = xprintf("the session's records reached %s ([proxy] "
	    "record_budget): further requests are counted, not stored",
	    util_fmt_size(size, sizeof size, st->budget_max));
	op.kind = STORE_OP_EVENT;
	op.u.ev = e;
	store_queue(st, op);
}

bool
store_budget_take(struct store *st, int64_t session, size_t bytes,
    enum store_budget_kind kind, bool denied)
{
	struct store_budget *b;

	if (session <= 0)
		return true;
	b = store_budget_get(st, session);
	bytes += STORE_BUDGET_ROW;
	if (!b->hit && b->used + (int64_t)bytes <= st->budget_max) {
		b->used += (int64_t)bytes;
		return true;
	}
	if (!b->hit)
		store_budget_reached(st, b);
	if (kind == STORE_BUDGET_ALERT && b->alerts < STORE_BUDGET_ALERTS) {
		b->alerts++;
		return true;
	}
	if (kind == STORE_BUDGET_REQUEST) {
		b->requests++;
		if (denied)
			b->denied++;
	} else
		b->other++;
	st->budget_pending = true;
	store_schedule_flush(st);
	return false;
}

/* Adds what was counted since the last flush to the sessions' rows. */
int
store_budget_write(struct store *st)
{
	sqlite3_stmt *stmt;
	struct store_budget *b;
	size_t i;
	int rc = SQLITE_OK;

	if (!st->budget_pending)
		return SQLITE_OK;
	stmt = store_prepare(st, "UPDATE sessions SET unrecorded = unrecorded "
	    "+ ?2, unrecorded_denied = unrecorded_denied + ?3, "
	    "unrecorded_other = unrecorded_other + ?4 WHERE id = ?1");
	for (i = 0; rc == SQLITE_OK && i < st->nbudgets; i++) {
		b = &st->budgets[i];
		if (b->requests == 0 && b->other == 0)
			continue;
		sqlite3_bind_int64(stmt, 1, b->session);
		sqlite3_bind_int64(stmt, 2, b->requests);
		sqlite3_bind_int64(stmt, 3, b->denied);
		sqlite3_bind_int64(stmt, 4, b->other);
		rc = sqlite3_step(stmt) == SQLITE_DONE ? SQLITE_OK :
		    sqlite3_errcode(st->db);
		sqlite3_reset(stmt);
	}
	sqlite3_finalize(stmt);
	return rc;
}

/* The counts are in the database: start counting afresh. */
void
store_budget_written(struct store *st)
{
	size_t i;

	for (i = 0; i < st->nbudgets; i++) {
		st->budgets[i].requests = 0;
		st->budgets[i].denied = 0;
		st->budgets[i].other = 0;
	}
	st->budget_pending = false;
}

/*
 * HEADERS cut to the store's cap, with a line saying how much was left
 * out; a copy the caller frees, NULL for NULL. The cut is at the end of a
 * line when one ends in the second half of what is kept, else inside a
 * (long) line, but never inside a UTF-8 sequence.
 */
char *
store_budget_headers(struct store *st, const char *headers)
{
	size_t len, keep;
	const char *nl;
	char *out;

	if (headers == NULL)
		return NULL;
	if ((len = strlen(headers)) <= st->headers_max)
		return xstrdup(headers);
	keep = st->headers_max;
	nl = memrchr(headers, '\n', keep);
	if (nl != NULL && (size_t)(nl - headers) + 1 >= keep / 2)
		keep = (size_t)(nl - headers) + 1;
	else {
		while (keep > 0 && ((unsigned char)headers[keep] & 0xc0) == 0x80)
			keep--;
	}
	xasprintf(&out, "%.*s%s[agentmux: %zu more bytes of headers not "
	    "recorded ([proxy] record_headers)]\n", (int)keep, headers,
	    keep > 0 && headers[keep - 1] != '\n' ? "\n" : "", len - keep);
	return out;
}
