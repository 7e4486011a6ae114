/* What front ends need from below the session layer, passed on: the records they show, and checks before a session starts. */
#include "jail/jail.h"
#include "proxy/proxy.h"
#include "session-int.h"
#include "store/store.h"

void
session_prewarm(void)
{
	jail_prewarm();
}

int
session_rule_validate(const char *verb, const char *text, char **cause)
{
	return proxy_policy_validate(verb, text, cause);
}

void
session_records_flush(struct session_ctx *ctx)
{
	store_flush(session_ctx_store(ctx));
}

struct store_session **
session_records_list(struct session_ctx *ctx, bool all, size_t *n)
{
	return store_session_list(session_ctx_store(ctx), all, n);
}

struct store_session *
session_record_get(struct session_ctx *ctx, int64_t id)
{
	return store_session_get(session_ctx_store(ctx), id);
}

struct store_event **
session_record_events(struct session_ctx *ctx, int64_t id, size_t *n)
{
	return store_event_list(session_ctx_store(ctx), id, n);
}

struct store_decision **
session_record_decisions(struct session_ctx *ctx, int64_t id, size_t *n)
{
	return store_decision_list(session_ctx_store(ctx), id, n);
}

struct request **
session_record_requests(struct session_ctx *ctx,
    const struct store_request_filter *f, size_t *n)
{
	return store_request_list(session_ctx_store(ctx), f, n);
}

struct store_snapshot **
session_record_snapshots(struct session_ctx *ctx, int64_t id, size_t *n)
{
	return store_snapshot_list(session_ctx_store(ctx), id, n);
}

int
session_record_confdiff_pending(struct session_ctx *ctx, int64_t id)
{
	return snap_confdiff_pending(session_ctx_store(ctx), id);
}
