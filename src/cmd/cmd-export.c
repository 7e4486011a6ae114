/* agentmux export: a session as HAR 1.2 (for browsers' dev tools and mitmproxy) or as agentmux's own JSON. */
#include <openssl/evp.h>

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli.h"
#include "core/core.h"
#include "store/store.h"

/* Every record of one session, loaded once. */
struct cmd_export {
	struct store *st;
	struct store_session *s;
	struct request **req;
	size_t nreq;
};

static bool
cmd_export_utf8(const char *p, size_t n)
{
	const unsigned char *s = (const unsigned char *)p;
	size_t i = 0, k, len;

	while (i < n) {
		if (s[i] < 0x80) {
			if (s[i] == 0)
				return false;
			i++;
			continue;
		}
		if ((s[i] & 0xe0) == 0xc0 && s[i] >= 0xc2)
			len = 2;
		else if ((s[i] & 0xf0) == 0xe0)
			len = 3;
		else if ((s[i] & 0xf8) == 0xf0 && s[i] <= 0xf4)
			len = 4;
		else
			return false;
		if (i + len > n)
			return false;
		for (k = 1; k < len; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
		}
		i += len;
	}
	return true;
}

static char *
cmd_export_base64(const char *p, size_t n)
{
	char *out = xmalloc(4 * ((n + 2) / 3) + 1);

	EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)p, (int)n);
	return out;
}

/* Writes a body as {"text": ..., "encoding": "base64"?} fields. */
static void
cmd_export_body(struct json *j, const char *p, size_t n)
{
	char *b64;

	if (cmd_export_utf8(p, n)) {
		json_key(j, "text");
		json_strn(j, p, n);
		return;
	}
	b64 = cmd_export_base64(p, n);
	json_kstr(j, "text", b64);
	json_kstr(j, "encoding", "base64");
	free(b64);
}

/* Emits "Name: value\n" header lines as HAR [{name, value}]. */
static void
cmd_export_headers(struct json *j, const char *headers)
{
	const char *line, *colon, *end;

	json_arr_begin(j);
	for (line = headers; line != NULL && *line != '\0'; line = end) {
		end = line + strcspn(line, "\n");
		colon = memchr(line, ':', (size_t)(end - line));
		if (colon != NULL) {
			const char *v = colon + 1;
			const char *ve = end;

			while (v < ve && (*v == ' ' || *v == '\t'))
				v++;
			while (ve > v && (ve[-1] == '\r' || ve[-1] == ' '))
				ve--;
			json_obj_begin(j);
			json_key(j, "name");
			json_strn(j, line, (size_t)(colon - line));
			json_key(j, "value");
			json_strn(j, v, (size_t)(ve - v));
			json_obj_end(j);
		}
		if (*end == '\n')
			end++;
	}
	json_arr_end(j);
}

/* The value of header NAME in HEADERS, or NULL; caller frees. */
static char *
cmd_export_header(const char *headers, const char *name)
{
	size_t n = strlen(name);
	const char *line, *end, *v;

	for (line = headers; line != NULL && *line != '\0'; line = end) {
		end = line + strcspn(line, "\n");
		if ((size_t)(end - line) > n && strncasecmp(line, name, n) == 0 &&
		    line[n] == ':') {
			v = line + n + 1;
			while (*v == ' ')
				v++;
			return xstrndup(v, (size_t)(end - v) -
			    (end > v && end[-1] == '\r'));
		}
		if (*end == '\n')
			end++;
	}
	return NULL;
}

static int
cmd_export_hexval(int c)
{
	if (isdigit(c))
		return c - '0';
	return tolower(c) - 'a' + 10;
}

static void
cmd_export_decoded(struct json *j, const char *p, size_t n)
{
	struct buf b;
	size_t i;

	buf_init(&b);
	buf_adds(&b, "");
	for (i = 0; i < n; i++) {
		if (p[i] == '%' && i + 2 < n && isxdigit((unsigned char)p[i + 1]) &&
		    isxdigit((unsigned char)p[i + 2])) {
			buf_addc(&b, (char)(cmd_export_hexval(p[i + 1]) * 16 +
			    cmd_export_hexval(p[i + 2])));
			i += 2;
		} else
			buf_addc(&b, p[i] == '+' ? ' ' : p[i]);
	}
	json_strn(j, b.data, b.len);
	buf_free(&b);
}

static void
cmd_export_query(struct json *j, const char *path)
{
	const char *q = path != NULL ? strchr(path, '?') : NULL, *end, *eq;

	json_arr_begin(j);
	for (q = q != NULL ? q + 1 : NULL; q != NULL && *q != '\0'; q = end) {
		end = q + strcspn(q, "&#");
		eq = memchr(q, '=', (size_t)(end - q));
		json_obj_begin(j);
		json_key(j, "name");
		cmd_export_decoded(j, q, (size_t)((eq != NULL ? eq : end) - q));
		json_key(j, "value");
		if (eq != NULL)
			cmd_export_decoded(j, eq + 1, (size_t)(end - eq - 1));
		else
			json_str(j, "");
		json_obj_end(j);
		if (*end != '&')
			break;
		end++;
	}
	json_arr_end(j);
}

static char *
cmd_export_url(const struct request *r)
{
	const char *scheme = r->scheme != NULL ? r->scheme : "http";
	bool dflt;
	char *host;

	if (strcmp(scheme, "tunnel") == 0)
		scheme = "https";
	dflt = (strcmp(scheme, "https") == 0 || strcmp(scheme, "wss") == 0) ?
	    r->port == 443 : r->port == 80;
	if (r->host != NULL && strchr(r->host, ':') != NULL)
		host = xprintf("[%s]", r->host);
	else
		host = xstrdup(r->host != NULL ? r->host : "unknown");
	char *url = dflt ? xprintf("%s://%s%s", scheme, host,
	    r->path != NULL ? r->path : "/") : xprintf("%s://%s:%d%s", scheme,
	    host, r->port, r->path != NULL ? r->path : "/");
	free(host);
	return url;
}

static void
cmd_export_har_request(struct json *j, const struct request *r)
{
	char *url = cmd_export_url(r), *ct;

	json_key(j, "request");
	json_obj_begin(j);
	json_kstr(j, "method", r->method != NULL ? r->method : "CONNECT");
	json_kstr(j, "url", url);
	json_kstr(j, "httpVersion", r->http_version != NULL ? r->http_version :
	    "HTTP/1.1");
	json_key(j, "cookies");
	json_arr_begin(j);
	json_arr_end(j);
	json_key(j, "headers");
	cmd_export_headers(j, r->req_headers);
	json_key(j, "queryString");
	cmd_export_query(j, r->path);
	if (r->req_body.data != NULL) {
		ct = cmd_export_header(r->req_headers, "Content-Type");
		json_key(j, "postData");
		json_obj_begin(j);
		json_kstr(j, "mimeType", ct != NULL ? ct : "");
		json_key(j, "params");
		json_arr_begin(j);
		json_arr_end(j);
		cmd_export_body(j, r->req_body.data, r->req_body.len);
		json_obj_end(j);
		free(ct);
	}
	json_kint(j, "headersSize", -1);
	json_kint(j, "bodySize", r->bytes_up);
	json_obj_end(j);
	free(url);
}

static const char *
cmd_export_status_text(const struct request *r)
{
	if (r->status_text != NULL)
		return r->status_text;
	if (strcmp(r->decision, "deny") == 0)
		return "Forbidden";
	return "";
}

static void
cmd_export_har_response(struct json *j, const struct request *r)
{
	bool denied = strcmp(r->decision, "deny") == 0;
	char *ct = cmd_export_header(r->resp_headers, "Content-Type");
	char *loc = cmd_export_header(r->resp_headers, "Location");

	json_key(j, "response");
	json_obj_begin(j);
	json_kint(j, "status", r->status > 0 ? r->status : denied ? 403 : 0);
	json_kstr(j, "statusText", cmd_export_status_text(r));
	json_kstr(j, "httpVersion", r->http_version != NULL ? r->http_version :
	    "HTTP/1.1");
	json_key(j, "cookies");
	json_arr_begin(j);
	json_arr_end(j);
	json_key(j, "headers");
	cmd_export_headers(j, r->resp_headers);
	json_key(j, "content");
	json_obj_begin(j);
	json_kint(j, "size", r->bytes_down);
	json_kstr(j, "mimeType", r->mime_type != NULL ? r->mime_type :
	    ct != NULL ? ct : "");
	if (r->resp_body.data != NULL)
		cmd_export_body(j, r->resp_body.data, r->resp_body.len);
	json_obj_end(j);
	json_kstr(j, "redirectURL", loc != NULL ? loc : "");
	json_kint(j, "headersSize", -1);
	json_kint(j, "bodySize", r->bytes_down);
	if (r->error != NULL)
		json_kstr(j, "_error", r->error);
	json_obj_end(j);
	free(ct);
	free(loc);
}

static void
cmd_export_har_entry(struct json *j, const struct request *r)
{
	double wait = r->ttfb_us >= 0 ? (double)r->ttfb_us / 1000 : 0;
	double total = (double)r->duration_us / 1000, receive;
	char t[40], *comment;

	receive = total > wait ? total - wait : 0;
	json_obj_begin(j);
	json_kstr(j, "startedDateTime", cli_iso_time(t, sizeof t,
	    r->started_at));
	json_key(j, "time");
	json_double(j, wait + receive);
	cmd_export_har_request(j, r);
	cmd_export_har_response(j, r);
	json_key(j, "cache");
	json_obj_begin(j);
	json_obj_end(j);
	json_key(j, "timings");
	json_obj_begin(j);
	json_kint(j, "blocked", -1);
	json_kint(j, "dns", -1);
	json_kint(j, "connect", -1);
	json_kint(j, "ssl", -1);
	json_kint(j, "send", 0);
	json_key(j, "wait");
	json_double(j, wait);
	json_key(j, "receive");
	json_double(j, receive);
	json_obj_end(j);
	if (strcmp(r->decision, "deny") == 0)
		comment = xprintf("denied by agentmux: %s", r->rule != NULL ?
		    r->rule : r->error != NULL ? r->error :
		    "no rule allows it (on_unknown deny)");
	else
		comment = xprintf("%s by agentmux%s%s", r->decision,
		    r->rule != NULL ? ": " : "", r->rule != NULL ? r->rule : "");
	json_kstr(j, "comment", comment);
	free(comment);
	json_key(j, "_agentmux");
	json_obj_begin(j);
	json_kint(j, "request", r->id);
	json_kint(j, "session", r->session_id);
	json_kstr(j, "decision", r->decision);
	json_kstr(j, "rule", r->rule);
	json_kstr(j, "scheme", r->scheme);
	json_obj_end(j);
	json_obj_end(j);
}

static void
cmd_export_har(struct json *j, struct cmd_export *x)
{
	char t[40], *title;
	size_t i;

	json_obj_begin(j);
	json_key(j, "log");
	json_obj_begin(j);
	json_kstr(j, "version", "1.2");
	json_key(j, "creator");
	json_obj_begin(j);
	json_kstr(j, "name", "agentmux");
	json_kstr(j, "version", AGENTMUX_VERSION);
	json_obj_end(j);
	json_key(j, "pages");
	json_arr_begin(j);
	json_obj_begin(j);
	json_kstr(j, "startedDateTime", cli_iso_time(t, sizeof t,
	    x->s->started_at));
	json_kstr(j, "id", "session");
	title = xprintf("agentmux session %lld: %s in %s", (long long)x->s->id,
	    x->s->agent, x->s->project);
	json_kstr(j, "title", title);
	free(title);
	json_key(j, "pageTimings");
	json_obj_begin(j);
	json_obj_end(j);
	json_obj_end(j);
	json_arr_end(j);
	json_key(j, "entries");
	json_arr_begin(j);
	for (i = 0; i < x->nreq; i++)
		cmd_export_har_entry(j, x->req[i]);
	json_arr_end(j);
	json_obj_end(j);
	json_obj_end(j);
}

static void
cmd_export_json_requests(struct json *j, struct cmd_export *x)
{
	const struct request *r;
	char *b64;
	size_t i;

	json_key(j, "requests");
	json_arr_begin(j);
	for (i = 0; i < x->nreq; i++) {
		r = x->req[i];
		json_obj_begin(j);
		cli_request_json(j, r);
		b64 = r->req_body.data != NULL ?
		    cmd_export_base64(r->req_body.data, r->req_body.len) : NULL;
		json_kstr(j, "request_body_base64", b64);
		free(b64);
		b64 = r->resp_body.data != NULL ?
		    cmd_export_base64(r->resp_body.data, r->resp_body.len) :
		    NULL;
		json_kstr(j, "response_body_base64", b64);
		free(b64);
		json_obj_end(j);
	}
	json_arr_end(j);
}

static void
cmd_export_json_session(struct json *j, const struct store_session *s)
{
	char t[40];

	json_key(j, "session");
	json_obj_begin(j);
	json_kint(j, "id", s->id);
	json_kstr(j, "kind", s->kind);
	json_kstr(j, "agent", s->agent);
	json_kstr(j, "project", s->project);
	json_key(j, "command");
	json_raw(j, s->command != NULL ? s->command : "[]");
	json_kstr(j, "state", s->state);
	json_kstr(j, "started_at", cli_iso_time(t, sizeof t, s->started_at));
	if (s->ended_at != 0)
		json_kstr(j, "ended_at", cli_iso_time(t, sizeof t, s->ended_at));
	else
		json_knull(j, "ended_at");
	if (s->has_exit)
		json_kint(j, "exit_status", s->exit_status);
	else
		json_knull(j, "exit_status");
	json_kstr(j, "error", s->error);
	json_kstr(j, "unsafe", s->unsafe);
	json_kstr(j, "flags", s->flags);
	json_kint(j, "owner_pid", s->owner_pid);
	json_key(j, "jail");
	json_raw(j, s->jail != NULL ? s->jail : "null");
	json_obj_end(j);
}

static void
cmd_export_json_decisions(struct json *j, struct cmd_export *x)
{
	struct store_decision **d;
	size_t n, i;
	char t[40];

	d = store_decision_list(x->st, x->s->id, &n);
	json_key(j, "decisions");
	json_arr_begin(j);
	for (i = 0; i < n; i++) {
		json_obj_begin(j);
		json_kstr(j, "asked_at", cli_iso_time(t, sizeof t, d[i]->asked_at));
		json_kstr(j, "answered_at", cli_iso_time(t, sizeof t,
		    d[i]->answered_at));
		json_kstr(j, "host", d[i]->host);
		json_kint(j, "port", d[i]->port);
		json_kstr(j, "method", d[i]->method);
		json_kstr(j, "path", d[i]->path);
		json_kstr(j, "answer", d[i]->answer);
		json_kstr(j, "scope", d[i]->scope);
		json_kstr(j, "by", d[i]->by);
		json_kint(j, "waiting", d[i]->waiting);
		json_obj_end(j);
	}
	json_arr_end(j);
	store_decision_list_free(d, n);
}

static void
cmd_export_json_snapshots(struct json *j, struct cmd_export *x)
{
	struct store_snapshot **sn;
	size_t n, i;
	char t[40];

	sn = store_snapshot_list(x->st, x->s->id, &n);
	json_key(j, "snapshots");
	json_arr_begin(j);
	for (i = 0; i < n; i++) {
		json_obj_begin(j);
		json_kint(j, "id", sn[i]->id);
		json_kstr(j, "time", cli_iso_time(t, sizeof t, sn[i]->created_at));
		json_kstr(j, "kind", sn[i]->kind);
		json_kstr(j, "label", sn[i]->label);
		json_kstr(j, "commit", sn[i]->commit);
		json_kstr(j, "tree", sn[i]->tree);
		json_kstr(j, "parent", sn[i]->parent);
		json_kstr(j, "ref", sn[i]->ref);
		json_kint(j, "files_changed", sn[i]->files_changed);
		json_obj_end(j);
	}
	json_arr_end(j);
	store_snapshot_list_free(sn, n);
}

static void
cmd_export_json_rest(struct json *j, struct cmd_export *x)
{
	struct store_confchange **c;
	struct store_event **e;
	char **refs;
	size_t n, i;
	char t[40];

	c = store_confchange_list(x->st, x->s->id, &n);
	json_key(j, "config_changes");
	json_arr_begin(j);
	for (i = 0; i < n; i++) {
		json_obj_begin(j);
		json_kstr(j, "time", cli_iso_time(t, sizeof t, c[i]->at));
		json_kstr(j, "path", c[i]->path);
		json_kstr(j, "change", c[i]->change);
		json_kstr(j, "action", c[i]->action);
		json_obj_end(j);
	}
	json_arr_end(j);
	store_confchange_list_free(c, n);
	e = store_event_list(x->st, x->s->id, &n);
	json_key(j, "events");
	json_arr_begin(j);
	for (i = 0; i < n; i++) {
		json_obj_begin(j);
		json_kstr(j, "time", cli_iso_time(t, sizeof t, e[i]->at));
		json_kstr(j, "level", e[i]->level);
		json_kstr(j, "kind", e[i]->kind);
		json_kstr(j, "message", e[i]->message);
		json_obj_end(j);
	}
	json_arr_end(j);
	store_event_list_free(e, n);
	refs = store_session_refs(x->st, x->s->id, &n);
	json_key(j, "refs_at_start");
	json_obj_begin(j);
	for (i = 0; i < n; i++) {
		char *sp = strchr(refs[i], ' ');

		*sp = '\0';
		json_kstr(j, refs[i], sp + 1);
		free(refs[i]);
	}
	free(refs);
	json_obj_end(j);
}

static void
cmd_export_json(struct json *j, struct cmd_export *x)
{
	json_obj_begin(j);
	json_kstr(j, "format", "agentmux-session");
	json_kint(j, "format_version", 1);
	json_kstr(j, "agentmux_version", AGENTMUX_VERSION);
	cmd_export_json_session(j, x->s);
	cmd_export_json_requests(j, x);
	cmd_export_json_decisions(j, x);
	cmd_export_json_snapshots(j, x);
	cmd_export_json_rest(j, x);
	json_obj_end(j);
}

/* Writes J to FILE ("-" or NULL: stdout) atomically, private to the user. */
static int
cmd_export_write(struct json *j, const char *file)
{
	char *cause = NULL;

	if (file == NULL || strcmp(file, "-") == 0) {
		json_print(j, stdout);
		return fflush(stdout) == 0 ? 0 : cli_error("cannot write the "
		    "export to stdout");
	}
	buf_addc(&j->out, '\n');
	if (util_write_file_atomic(file, j->out.data, j->out.len, 0600,
	    &cause) == -1) {
		cli_error("%s", cause);
		free(cause);
		return 1;
	}
	return 0;
}

int
cmd_export(struct cli_args *args)
{
	struct store_request_filter f;
	struct cmd_export x;
	bool as_json = cli_has(args, "json");
	const char *file = cli_get(args, as_json ? "json" : "har");
	struct json j;
	int64_t id;
	int rc;

	if (cli_count(args, "har") + cli_count(args, "json") > 1)
		return cli_usage_error("export", "give one of --har FILE or "
		    "--json FILE");
	memset(&x, 0, sizeof x);
	if ((x.st = cli_open_store()) == NULL)
		return 1;
	if (cli_resolve_session(x.st, args->argv[0], &id) == -1 ||
	    (x.s = store_session_get(x.st, id)) == NULL) {
		store_close(x.st);
		return 1;
	}
	memset(&f, 0, sizeof f);
	f.session_id = id;
	f.with_bodies = true;
	x.req = store_request_list(x.st, &f, &x.nreq);
	json_init(&j, true);
	if (as_json)
		cmd_export_json(&j, &x);
	else
		cmd_export_har(&j, &x);
	rc = cmd_export_write(&j, file);
	json_free(&j);
	store_request_list_free(x.req, x.nreq);
	store_session_free(x.s);
	store_close(x.st);
	return rc;
}
