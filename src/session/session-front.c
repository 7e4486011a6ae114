/* What front ends need from below the session layer, passed on: the records they show, and checks before a session starts. */
#include <stdlib.h>
#include <string.h>

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

void
session_records_list_free(struct store_session **v, size_t n)
{
	store_session_list_free(v, n);
}

struct store_session *
session_record_get(struct session_ctx *ctx, int64_t id)
{
	return store_session_get(session_ctx_store(ctx), id);
}

void
session_record_free(struct store_session *ss)
{
	store_session_free(ss);
}

const char *
session_record_end_text(const struct store_session *ss, char *buf,
    size_t len)
{
	return store_session_end_text(ss, buf, len);
}

struct store_event **
session_record_events(struct session_ctx *ctx, int64_t id, size_t *n)
{
	return store_event_list(session_ctx_store(ctx), id, n);
}

void
session_record_events_free(struct store_event **v, size_t n)
{
	store_event_list_free(v, n);
}

struct store_decision **
session_record_decisions(struct session_ctx *ctx, int64_t id, size_t *n)
{
	return store_decision_list(session_ctx_store(ctx), id, n);
}

void
session_record_decisions_free(struct store_decision **v, size_t n)
{
	store_decision_list_free(v, n);
}

struct request **
session_record_requests(struct session_ctx *ctx,
    const struct store_request_filter *f, size_t *n)
{
	return store_request_list(session_ctx_store(ctx), f, n);
}

void
session_record_requests_free(struct request **v, size_t n)
{
	store_request_list_free(v, n);
}

struct store_snapshot **
session_record_snapshots(struct session_ctx *ctx, int64_t id, size_t *n)
{
	return store_snapshot_list(session_ctx_store(ctx), id, n);
}

void
session_record_snapshots_free(struct store_snapshot **v, size_t n)
{
	store_snapshot_list_free(v, n);
}

int
session_record_confdiff_pending(struct session_ctx *ctx, int64_t id)
{
	return snap_confdiff_pending(session_ctx_store(ctx), id);
}

/* A worktree session's line while its worktree is there: its branch, with merge and discard. */
static char *
session_record_worktree_there(const struct snap_worktree *wt, int64_t id)
{
	char *qb = quote_name(wt->branch), *qp = quote_name(wt->path), *line;

	line = xprintf("worktree: branch %s: 'agentmux merge %lld' brings it "
	    "into your branch, 'agentmux discard %lld' removes it (its "
	    "snapshots stay); at %s", qb, (long long)id, (long long)id, qp);
	free(qp);
	free(qb);
	return line;
}

/*
 * The line of a worktree session whose worktree is not there: restore if
 * discard kept its record; why there is none if it was never made; else
 * diff.
 */
static char *
session_record_worktree_gone(const char *data,
    const struct store_session *ss)
{
	struct snap_worktree kept;
	char *tip = NULL, *cause = NULL, *qb, *line;
	const char *why;
	int64_t id = ss->id;

	if (snap_worktree_kept(data, id, &kept, &tip, &cause) == -1) {
		free(cause);
		why = snap_worktree_absent(ss->ended_at == 0, ss->nsnapshots);
		if (strcmp(why, "discarded") != 0)
			return xprintf("worktree: %s", why);
		return xprintf("worktree: discarded, with no record to restore "
		    "it from (by an older agentmux): 'agentmux diff %lld' "
		    "shows its snapshots", (long long)id);
	}
	qb = quote_name(kept.branch);
	line = xprintf("worktree: discarded (branch %s): 'agentmux restore "
	    "%lld' brings it back, its branch and the files of its last "
	    "snapshot", qb, (long long)id);
	free(qb);
	free(tip);
	snap_worktree_clear(&kept);
	return line;
}

char *
session_record_branch(struct session_ctx *ctx, const struct store_session *ss)
{
	char *under = xprintf("%s/worktrees/", ctx->data_dir), *root = NULL;
	char *cause = NULL, *tip = NULL, *q, *mark = NULL;
	struct snap_worktree wt;

	if (ss->project != NULL && strncmp(ss->project, under,
	    strlen(under)) == 0) {
		if (snap_worktree_find(ctx->data_dir, ss->id, &wt, &root,
		    &cause) == 0) {
			mark = quote_name(wt.branch);
			snap_worktree_clear(&wt);
		} else if (snap_worktree_kept(ctx->data_dir, ss->id, &wt, &tip,
		    &cause) == 0) {
			q = quote_name(wt.branch);
			mark = xprintf("%s, discarded", q);
			free(q);
			snap_worktree_clear(&wt);
		} else
			mark = xstrdup(snap_worktree_absent(ss->ended_at == 0,
			    ss->nsnapshots));
	}
	free(tip);
	free(cause);
	free(root);
	free(under);
	return mark;
}

char *
session_record_worktree(struct session_ctx *ctx,
    const struct store_session *ss)
{
	char *under = xprintf("%s/worktrees/", ctx->data_dir), *root = NULL;
	char *cause = NULL, *line = NULL;
	struct snap_worktree wt;

	if (ss->project != NULL && strncmp(ss->project, under,
	    strlen(under)) == 0) {
		if (snap_worktree_find(ctx->data_dir, ss->id, &wt, &root,
		    &cause) == 0) {
			line = session_record_worktree_there(&wt, ss->id);
			snap_worktree_clear(&wt);
		} else
			line = session_record_worktree_gone(ctx->data_dir, ss);
	}
	free(cause);
	free(root);
	free(under);
	return line;
}
