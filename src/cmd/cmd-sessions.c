/* Browsing the store: sessions, show, requests, gc. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "core/core.h"
#include "session/session.h"
#include "snap/snap.h"
#include "store/store.h"

static void
cmd_session_json(struct json *j, const struct store_session *s)
{
	char t[40], *wt;

	json_obj_begin(j);
	json_kint(j, "id", s->id);
	json_kstr(j, "kind", s->kind);
	json_kstr(j, "agent", s->agent);
	json_kstr(j, "project", s->project);
	wt = cmd_worktree_describe(s);
	json_kstr(j, "worktree", wt);
	free(wt);
	json_key(j, "command");
	json_raw(j, s->command != NULL ? s->command : "[]");
	json_kstr(j, "state", s->closed ? "closed" : s->state);
	/* What a running session does: "working", "needs you", ... */
	json_kstr(j, "activity", strcmp(s->state, "running") == 0 &&
	    store_session_live(s) ? s->live : NULL);
	json_kstr(j, "started_at", cli_iso_time(t, sizeof t, s->started_at));
	if (s->ended_at != 0)
		json_kstr(j, "ended_at", cli_iso_time(t, sizeof t, s->ended_at));
	else
		json_knull(j, "ended_at");
	if (s->ended_at != 0)
		json_kint(j, "duration_ms", s->ended_at - s->started_at);
	else
		json_knull(j, "duration_ms");
	if (s->has_exit)
		json_kint(j, "exit_status", s->exit_status);
	else
		json_knull(j, "exit_status");
	json_kstr(j, "error", s->error);
	json_kstr(j, "unsafe", s->unsafe);
	json_kstr(j, "flags", s->flags);
	json_kint(j, "requests", s->nrequests);
	json_kint(j, "denied", s->ndenied);
	json_kint(j, "allowed", s->nallowed);
	json_kint(j, "errors", s->nerrors);
	json_kint(j, "unrecorded", s->unrecorded);
	json_kint(j, "unrecorded_denied", s->unrecorded_denied);
	json_kint(j, "unrecorded_other", s->unrecorded_other);
	json_kint(j, "snapshots", s->nsnapshots);
	if (s->files_changed >= 0)
		json_kint(j, "files_changed", s->files_changed);
	else
		json_knull(j, "files_changed");
	json_kint(j, "owner_pid", s->owner_pid);
	json_key(j, "jail");
	json_raw(j, s->jail != NULL ? s->jail : "null");
	json_obj_end(j);
}

/* "exited 0", "closed", "running", "crashed" ...: the dashboard's words. */
static const char *
cmd_session_state(char *buf, size_t len, const struct store_session *s)
{
	return store_session_end_text(s, buf, len);
}

static void
cmd_sessions_table(struct store_session **v, size_t n)
{
	static const char *const hdr[] = { "ID", "STATE", "AGENT", "STARTED",
		"DURATION", "REQS", "DENIED", "PROJECT", "FLAGS" };
	struct cli_table t;
	char id[24], st[32], start[32], dur[32], reqs[24], den[24];
	const char *row[9];
	struct strv q;
	char *wt;
	size_t i;

	strv_init(&q);
	cli_table_init(&t, 9, hdr);
	cli_table_right(&t, 0);
	cli_table_right(&t, 5);
	cli_table_right(&t, 6);
	for (i = 0; i < n; i++) {
		snprintf(id, sizeof id, "%lld", (long long)v[i]->id);
		snprintf(reqs, sizeof reqs, "%lld", (long long)v[i]->nrequests);
		snprintf(den, sizeof den, "%lld", (long long)v[i]->ndenied);
		row[0] = id;
		row[1] = cmd_session_state(st, sizeof st, v[i]);
		row[2] = quote_keep(&q, v[i]->agent);
		row[3] = util_fmt_time(start, sizeof start, v[i]->started_at);
		row[4] = v[i]->ended_at == 0 ? "-" : util_fmt_duration(dur,
		    sizeof dur, v[i]->ended_at - v[i]->started_at);
		row[5] = reqs;
		row[6] = den;
		if ((wt = cmd_worktree_describe(v[i])) != NULL) {
			strv_addf(&q, "%s (%s)", v[i]->project, wt);
			free(wt);
			row[7] = quote_keep(&q, q.v[q.n - 1]);
		} else
			row[7] = quote_keep(&q, v[i]->project);
		row[8] = quote_keep_line(&q, v[i]->unsafe != NULL ?
		    v[i]->unsafe : v[i]->flags);
		cli_table_add(&t, row);
	}
	cli_table_print(&t, stdout);
	cli_table_free(&t);
	strv_free(&q);
}

int
cmd_sessions(struct cli_args *args)
{
	struct store *st;
	struct store_session **v;
	struct json j;
	bool json = cli_has(args, "json"), all = cli_has(args, "all");
	size_t n, i;

	if ((st = cli_open_store()) == NULL)
		return 1;
	v = store_session_list(st, all, &n);
	if (json) {
		json_init(&j, true);
		json_arr_begin(&j);
		for (i = 0; i < n; i++)
			cmd_session_json(&j, v[i]);
		json_arr_end(&j);
		json_print(&j, stdout);
		json_free(&j);
	} else if (n == 0)
		out_printf(stdout,
		    "no sessions yet; start one with 'agentmux' or "
		    "'agentmux run'\n");
	else
		cmd_sessions_table(v, n);
	store_session_list_free(v, n);
	store_close(st);
	return 0;
}

/* "host:port", the host quoted if it must be; owned by Q. */
static const char *
cmd_request_dest(struct strv *q, const struct request *r)
{
	char *qh = quote_name(r->host != NULL ? r->host : "-");

	strv_addf(q, "%s:%d", qh, r->port);
	free(qh);
	return q->v[q->n - 1];
}

static void
cmd_requests_table(struct request **v, size_t n)
{
	static const char *const hdr[] = { "ID", "SESSION", "TIME", "DECISION",
		"METHOD", "HOST", "PATH", "STATUS", "SIZE", "TIME", "RULE/ERROR" };
	struct cli_table t;
	char id[24], sid[24], tm[32], status[16], size[16], dur[32];
	const char *row[11];
	struct strv q;
	size_t i;

	strv_init(&q);
	cli_table_init(&t, 11, hdr);
	cli_table_right(&t, 0);
	cli_table_right(&t, 1);
	cli_table_right(&t, 8);
	cli_table_right(&t, 9);
	for (i = 0; i < n; i++) {
		const struct request *r = v[i];

		snprintf(id, sizeof id, "%lld", (long long)r->id);
		snprintf(sid, sizeof sid, "%lld", (long long)r->session_id);
		snprintf(status, sizeof status, "%d", r->status);
		row[0] = id;
		row[1] = sid;
		row[2] = util_fmt_time(tm, sizeof tm, r->started_at) + 11;
		row[3] = quote_keep(&q, r->decision);
		row[4] = quote_keep(&q, r->method);
		row[5] = cmd_request_dest(&q, r);
		row[6] = quote_keep(&q, r->path);
		row[7] = r->status > 0 ? status : "-";
		row[8] = util_fmt_size(size, sizeof size, r->bytes_down);
		row[9] = util_fmt_duration(dur, sizeof dur, r->duration_us / 1000);
		row[10] = quote_keep_line(&q, r->error != NULL ? r->error :
		    r->rule);
		cli_table_add(&t, row);
	}
	cli_table_print(&t, stdout);
	cli_table_free(&t);
	strv_free(&q);
}

int
cmd_requests(struct cli_args *args)
{
	struct store_request_filter f;
	struct request **v;
	struct store *st;
	struct json j;
	bool json = cli_has(args, "json");
	size_t n, i;

	memset(&f, 0, sizeof f);
	f.denied_only = cli_has(args, "denied");
	f.host_glob = cli_get(args, "host");
	if ((st = cli_open_store()) == NULL)
		return 1;
	if (args->argc > 0 && cli_resolve_session(st, args->argv[0],
	    &f.session_id) == -1) {
		store_close(st);
		return 1;
	}
	v = store_request_list(st, &f, &n);
	if (json) {
		json_init(&j, true);
		json_arr_begin(&j);
		for (i = 0; i < n; i++) {
			json_obj_begin(&j);
			cli_request_json(&j, v[i]);
			json_obj_end(&j);
		}
		json_arr_end(&j);
		json_print(&j, stdout);
		json_free(&j);
	} else if (n == 0)
		out_printf(stdout, "no requests recorded%s\n",
		    f.session_id != 0 ? " in this session" : "");
	else
		cmd_requests_table(v, n);
	store_request_list_free(v, n);
	store_close(st);
	return 0;
}

static void
cmd_show_json(struct store *st, const struct store_session *s)
{
	struct store_snapshot **sn;
	struct store_decision **d;
	struct store_event **e;
	size_t nsn, nd, ne, i;
	struct json j;
	char t[40];

	sn = store_snapshot_list(st, s->id, &nsn);
	d = store_decision_list(st, s->id, &nd);
	e = store_event_list(st, s->id, &ne);
	json_init(&j, true);
	json_obj_begin(&j);
	json_key(&j, "session");
	cmd_session_json(&j, s);
	json_key(&j, "snapshots");
	json_arr_begin(&j);
	for (i = 0; i < nsn; i++) {
		json_obj_begin(&j);
		json_kint(&j, "snap", (int64_t)i + 1);
		json_kint(&j, "id", sn[i]->id);
		json_kstr(&j, "time", cli_iso_time(t, sizeof t,
		    sn[i]->created_at));
		json_kstr(&j, "kind", sn[i]->kind);
		json_kstr(&j, "label", sn[i]->label);
		json_kstr(&j, "commit", sn[i]->commit);
		json_kint(&j, "files_changed", sn[i]->files_changed);
		json_obj_end(&j);
	}
	json_arr_end(&j);
	json_key(&j, "decisions");
	json_arr_begin(&j);
	for (i = 0; i < nd; i++) {
		json_obj_begin(&j);
		json_kstr(&j, "time", cli_iso_time(t, sizeof t, d[i]->asked_at));
		json_kstr(&j, "host", d[i]->host);
		json_kint(&j, "port", d[i]->port);
		json_kstr(&j, "method", d[i]->method);
		json_kstr(&j, "path", d[i]->path);
		json_kstr(&j, "answer", d[i]->answer);
		json_kstr(&j, "scope", d[i]->scope);
		json_kstr(&j, "by", d[i]->by);
		json_obj_end(&j);
	}
	json_arr_end(&j);
	json_key(&j, "events");
	json_arr_begin(&j);
	for (i = 0; i < ne; i++) {
		json_obj_begin(&j);
		json_kstr(&j, "time", cli_iso_time(t, sizeof t, e[i]->at));
		json_kstr(&j, "level", e[i]->level);
		json_kstr(&j, "kind", e[i]->kind);
		json_kstr(&j, "message", e[i]->message);
		json_obj_end(&j);
	}
	json_arr_end(&j);
	json_obj_end(&j);
	json_print(&j, stdout);
	json_free(&j);
	store_snapshot_list_free(sn, nsn);
	store_decision_list_free(d, nd);
	store_event_list_free(e, ne);
}

/* The session's own lines: who, where, what, how it ended. */
static void
cmd_show_session(const struct store_session *s, struct strv *q)
{
	char t[40], st_s[32], dur[32], *wt;

	out_printf(stdout, "session %lld (%s)\n", (long long)s->id, s->kind);
	out_printf(stdout, "  state     %s\n", cmd_session_state(st_s,
	    sizeof st_s, s));
	out_printf(stdout, "  agent     %s\n", quote_keep(q, s->agent));
	out_printf(stdout, "  project   %s\n", quote_keep(q, s->project));
	if ((wt = cmd_worktree_describe(s)) != NULL) {
		out_printf(stdout, "  worktree  %s\n", quote_keep(q, wt));
		free(wt);
	}
	out_printf(stdout, "  command   %s\n", quote_keep_line(q, s->command));
	out_printf(stdout, "  started   %s\n", util_fmt_time(t, sizeof t,
	    s->started_at));
	if (s->ended_at != 0)
		out_printf(stdout, "  ended     %s (%s)\n", util_fmt_time(t,
		    sizeof t, s->ended_at), util_fmt_duration(dur, sizeof dur,
		    s->ended_at - s->started_at));
	out_printf(stdout, "  requests  %lld (%lld denied)\n",
	    (long long)s->nrequests, (long long)s->ndenied);
	if (s->unrecorded > 0)
		out_printf(stdout, "  BUDGET    the session reached its record "
		    "budget: %lld request%s (%lld denied) and %lld other "
		    "record%s were counted, not stored ([proxy] record_budget)\n",
		    (long long)s->unrecorded, s->unrecorded == 1 ? "" : "s",
		    (long long)s->unrecorded_denied,
		    (long long)s->unrecorded_other,
		    s->unrecorded_other == 1 ? "" : "s");
	if (s->error != NULL)
		out_printf(stdout, "  error     %s\n", quote_keep_line(q,
		    s->error));
	if (s->unsafe != NULL)
		out_printf(stdout, "  UNSAFE    %s\n", quote_keep_line(q,
		    s->unsafe));
	if (s->flags != NULL) {
		/* Planted files, files the user's tools run: in red. */
		out_puts(stdout, "  flags     ");
		if (cli_color())
			out_color(stdout, "31");
		out_puts(stdout, quote_keep_line(q, s->flags));
		if (cli_color())
			out_color(stdout, "0");
		out_puts(stdout, "\n");
	}
	if (s->jail != NULL)
		out_printf(stdout, "  jail      %s\n", quote_keep_line(q,
		    s->jail));
}

static void
cmd_show_snapshots(struct store *st, const struct store_session *s,
    struct strv *q)
{
	struct store_snapshot **sn;
	size_t nsn, i;
	char t[40];

	sn = store_snapshot_list(st, s->id, &nsn);
	if (nsn > 0)
		out_printf(stdout, "snapshots\n");
	for (i = 0; i < nsn; i++)
		out_printf(stdout, "  %zu  %s  %-6s %.12s  %lld files  %s\n",
		    i + 1, util_fmt_time(t, sizeof t, sn[i]->created_at),
		    sn[i]->kind, sn[i]->commit, (long long)sn[i]->files_changed,
		    sn[i]->label != NULL ? quote_keep(q, sn[i]->label) : "");
	store_snapshot_list_free(sn, nsn);
}

static void
cmd_show_decisions(struct store *st, const struct store_session *s,
    struct strv *q)
{
	struct store_decision **d;
	size_t nd, i;
	char t[40];

	d = store_decision_list(st, s->id, &nd);
	if (nd > 0)
		out_printf(stdout, "decisions\n");
	for (i = 0; i < nd; i++)
		out_printf(stdout, "  %s  %s %s:%d %s%s%s  (%s, by %s)\n",
		    util_fmt_time(t, sizeof t, d[i]->asked_at), d[i]->answer,
		    quote_keep(q, d[i]->host), d[i]->port,
		    d[i]->method != NULL ? quote_keep(q, d[i]->method) : "",
		    d[i]->method != NULL && d[i]->path != NULL ? " " : "",
		    d[i]->path != NULL ? quote_keep(q, d[i]->path) : "",
		    d[i]->scope, d[i]->by);
	store_decision_list_free(d, nd);
}

static void
cmd_show_events(struct store *st, const struct store_session *s,
    struct strv *q)
{
	struct store_event **e;
	size_t ne, i;
	char t[40];
	bool red;

	e = store_event_list(st, s->id, &ne);
	if (ne > 0)
		out_printf(stdout, "events\n");
	for (i = 0; i < ne; i++) {
		red = cli_color() && strcmp(e[i]->level, "error") == 0;
		out_printf(stdout, "  %s  ", util_fmt_time(t, sizeof t,
		    e[i]->at));
		if (red)
			out_color(stdout, "31");
		out_printf(stdout, "%-5s %-12s %s", e[i]->level, quote_keep(q,
		    e[i]->kind), quote_keep_line(q, e[i]->message));
		if (red)
			out_color(stdout, "0");
		out_puts(stdout, "\n");
	}
	store_event_list_free(e, ne);
}

/*
 * What came from the jail is quoted field by field (hosts, paths, file
 * names); event messages quoted the names they carry when they were
 * made, and are shown as one line each.
 */
static void
cmd_show_text(struct store *st, const struct store_session *s)
{
	struct strv q;

	strv_init(&q);
	cmd_show_session(s, &q);
	cmd_show_snapshots(st, s, &q);
	cmd_show_decisions(st, s, &q);
	cmd_show_events(st, s, &q);
	strv_free(&q);
}

int
cmd_show(struct cli_args *args)
{
	struct store_session *s;
	struct store *st;
	bool json = cli_has(args, "json");
	int64_t id;

	if ((st = cli_open_store()) == NULL)
		return 1;
	if (cli_resolve_session(st, args->argv[0], &id) == -1 ||
	    (s = store_session_get(st, id)) == NULL) {
		store_close(st);
		return 1;
	}
	if (json)
		cmd_show_json(st, s);
	else
		cmd_show_text(st, s);
	store_session_free(s);
	store_close(st);
	return 0;
}

/* Removes what a deleted session kept on disk (overlay uppers, ...). */
static void
cmd_gc_files(int64_t id)
{
	char *cause = NULL, *dir, *sdir;

	if ((dir = path_data_dir(&cause)) == NULL) {
		free(cause);
		return;
	}
	sdir = xprintf("%s/sessions/%lld", dir, (long long)id);
	if (path_remove_tree(sdir) == -1)
		log_warn("cannot remove %s", sdir);
	free(sdir);
	free(dir);
}

/* The sessions gc would delete (--dry-run), but for those in KEEP. */
static void
cmd_gc_dry(struct store *st, int64_t cutoff, const int64_t *keep,
    size_t nkeep)
{
	struct store_session **v;
	size_t n, i, k;

	v = store_session_list(st, true, &n);
	for (i = 0; i < n; i++) {
		int64_t end = v[i]->ended_at != 0 ? v[i]->ended_at :
		    v[i]->started_at;

		for (k = 0; k < nkeep && keep[k] != v[i]->id; k++)
			;
		if (strcmp(v[i]->state, "running") != 0 && end < cutoff &&
		    k == nkeep)
			out_printf(stdout, "would remove session %lld\n",
			    (long long)v[i]->id);
	}
	store_session_list_free(v, n);
}

/* The tree lock files nobody holds and no live session's tree has (one is left per project otherwise). */
static void
cmd_gc_locks(struct store *st, bool dry)
{
	char *data, *cause = NULL;
	int n;

	if ((data = path_data_dir(&cause)) == NULL) {
		cli_error("gc: %s", cause);
		free(cause);
		return;
	}
	if ((n = session_tree_locks_gc(st, data, dry)) > 0)
		out_printf(stdout, "%s %d tree lock file%s (%s/trees)\n",
		    dry ? "would remove" : "removed", n, n == 1 ? "" : "s",
		    data);
	free(data);
}

int
cmd_gc(struct cli_args *args)
{
	const char *older = cli_get(args, "older-than");
	struct config *cf;
	struct store *st;
	struct strv msgs;
	char *cause = NULL;
	int64_t age, *ids, cutoff, *keep = NULL;
	size_t n, i, nkeep = 0;
	bool dry = cli_has(args, "dry-run");
	int c, rc = 1;

	if (older == NULL)
		return cli_usage_error("gc", "say how old with --older-than "
		    "DURATION (e.g. 30d)");
	if ((age = util_parse_duration(older)) < 0)
		return cli_usage_error("gc", "'%s' is not a duration (e.g. 30d, "
		    "12h, 2w)", older);
	if ((cf = cli_load_config()) == NULL)
		return 1;
	if ((st = cli_open_store()) == NULL) {
		config_free(cf);
		return 1;
	}
	cutoff = util_now_ms() - age * 1000;
	if (cmd_worktree_gc(st, cutoff, cli_has(args, "force"), dry,
	    cf->snapshots.max_size, &keep, &nkeep) == -1)
		goto out;
	if (dry) {
		cmd_gc_dry(st, cutoff, keep, nkeep);
		cmd_gc_locks(st, true);
		rc = 0;
		goto out;
	}
	if (store_gc(st, cutoff, keep, nkeep, &ids, &n, &cause) == -1) {
		cli_error("%s", cause);
		free(cause);
		goto out;
	}
	for (i = 0; i < n; i++)
		cmd_gc_files(ids[i]);
	out_printf(stdout, "removed %zu session%s\n", n, n == 1 ? "" : "s");
	cmd_gc_locks(st, false);
	strv_init(&msgs);
	if ((c = snap_gc(st, cf, &msgs, &cause)) > 0)
		out_printf(stdout,
		    "removed %d snapshot ref%s (refs/agentmux/sessions/)\n",
		    c, c == 1 ? "" : "s");
	for (i = 0; i < msgs.n; i++)
		out_printf(stdout, "%s\n", msgs.v[i]);
	strv_free(&msgs);
	free(ids);
	rc = 0;
out:
	free(keep);
	store_close(st);
	config_free(cf);
	return rc;
}
