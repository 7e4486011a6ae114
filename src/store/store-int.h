/* Internals shared by the store's files. */
#ifndef AGENTMUX_STORE_INT_H
#define AGENTMUX_STORE_INT_H

#include <pthread.h>
#include <sqlite3.h>

#include "core/core.h"
#include "store/store.h"

enum store_op_kind { STORE_OP_REQUEST, STORE_OP_DECISION, STORE_OP_EVENT };

/* What a record is to the budget. */
enum store_budget_kind {
	STORE_BUDGET_REQUEST,
	STORE_BUDGET_RECORD,  /* an event or a decision */
	STORE_BUDGET_ALERT,   /* an event of level error */
};

/* What one session has made the store write (store-budget.c). */
struct store_budget {
	int64_t session;
	int64_t used;        /* bytes of records taken */
	bool hit;            /* past the budget: flagged and told */
	int64_t requests;    /* counted, not stored, since the last flush */
	int64_t denied;
	int64_t other;
	int alerts;          /* stored past the budget */
};

/* One write waiting for the next flush. */
struct store_op {
	enum store_op_kind kind;
	union {
		struct request *req;
		struct store_decision *dec;
		struct store_event *ev;
	} u;
};

struct store {
	sqlite3 *db;
	char *path;
	struct event *flush_ev;
	int64_t last_flush_us;      /* when records were last written */
	struct store_op *ops;
	size_t nops;
	size_t capops;
	size_t dropped;
	bool degraded;
	sqlite3_stmt *req_insert;  /* cached: requests are the hot path */
	struct store_budget *budgets;
	size_t nbudgets;
	bool budget_pending;       /* counts to add at the next flush */
	int64_t budget_max;        /* bytes of records per session */
	size_t headers_max;        /* bytes of each request's headers kept */
	/* The checkpointer (store-db.c): its own connection, off the loop. */
	struct thread ckpt_thread;
	pthread_mutex_t ckpt_mu;
	pthread_cond_t ckpt_cv;
	bool ckpt_started;
	bool ckpt_failed;
	bool ckpt_want;
	bool ckpt_stop;
};

/*
 * Prepares SQL; NULL when it cannot (a damaged or changed database):
 * the store is marked degraded and says so once. Every sqlite3 call the
 * store makes on a statement takes NULL.
 */
sqlite3_stmt *store_prepare(struct store *, const char *sql);
/* Binds a string or NULL. */
void store_bind_text(sqlite3_stmt *, int, const char *);
/* Copies column I as a string, NULL for SQL NULL. */
char *store_col_text(sqlite3_stmt *, int);
/* Runs SQL with no result; -1 with *CAUSE on error. */
int store_exec(struct store *, const char *sql, char **cause);
/* Queues an op and schedules a flush. */
void store_queue(struct store *, struct store_op);
/* Schedules a flush (or flushes now without a loop). */
void store_schedule_flush(struct store *);
/*
 * Takes BYTES of SESSION's budget for a record of KIND (alerts: a few are
 * kept past the budget); false
 * when the budget is spent: the record is counted (denied: a denied
 * request), and must not be stored.
 */
bool store_budget_take(struct store *, int64_t session, size_t bytes,
    enum store_budget_kind kind, bool denied);
/* Adds the counts to the sessions' rows inside the flush transaction. */
int store_budget_write(struct store *);
/* The flush committed: the counts are written. */
void store_budget_written(struct store *);
/* Headers cut to the store's cap; caller frees; NULL for NULL. */
char *store_budget_headers(struct store *, const char *headers);
/* Writes one queued op inside the flush transaction. */
int store_request_write(struct store *, const struct request *);
int store_decision_write(struct store *, const struct store_decision *);
int store_event_write(struct store *, const struct store_event *);
void store_decision_free(struct store_decision *);
void store_event_free(struct store_event *);
/* Tells the user once that the disk refused a write. */
void store_note_failure(struct store *, int rc, const char *what);

#endif
