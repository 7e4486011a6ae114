/* One client connection: request heads, policy per request, relaying both ways, CONNECT, interception, tunnels. */
#include <sys/socket.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "proxy/proxy-int.h"

#define PROXY_PRESCAN_MAX 65536       /* body bytes looked at before the head goes up */

enum proxy_conn_state {
	PROXY_CONN_HEAD,       /* reading a request head */
	PROXY_CONN_HELD,       /* waiting for the user's answer */
	PROXY_CONN_UPSTREAM,   /* waiting for an upstream connection */
	PROXY_CONN_RELAY,      /* request body up, response down */
	PROXY_CONN_CONNECTED,  /* "200 Connection established" on its way */
	PROXY_CONN_HANDSHAKE,  /* TLS with the client */
	PROXY_CONN_PIPE,       /* a tunnel or a WebSocket: bytes both ways */
	PROXY_CONN_CLOSING,    /* a last response on its way, then close */
	PROXY_CONN_SNIFF,      /* transparent: its first bytes say TLS or HTTP */
};

/*
 * What a connection does at the resume of its paused session: nothing
 * goes upstream while the session is paused, neither a new connection
 * nor a request over one that came (a connect under way at the pause).
 */
enum proxy_conn_go {
	PROXY_CONN_GO_NONE,
	PROXY_CONN_GO_GET,         /* ask for the upstream connection */
	PROXY_CONN_GO_READY,       /* it came: send the request, or the 200 */
};

/* The request under way: its record, and how far it has come. */
struct proxy_req {
	struct request rec;         /* what is recorded: id 0, none under way;
	                               path normalised (what policy judged and
	                               what goes up) */
	int64_t t0;
	char *match;                /* the path without the query: what rules match */
	char *slashed;              /* match with "%2F" read as '/', or NULL: judged too */
	struct buf out_head;        /* what went upstream, kept for one retry */
	const struct proxy_secret *leak;
	bool rechunk;               /* the body goes up re-encoded, chunk by chunk */
	bool no_body;
	bool head;                  /* HEAD: the response has no body */
	bool upgrade;
	bool keep_alive;
	bool req_done;
	bool resp_started;
	bool resp_done;
	bool retried;
	bool answered;              /* allowed by the user's answer */
	bool started;               /* the "started" record went out */
	bool req_head_kept;         /* the request's head is recorded */
	bool resp_head_kept;        /* the final response's head is recorded */
};

struct proxy_conn {
	TAILQ_ENTRY(proxy_conn) entry;
	struct proxy_hold hold;
	struct proxy_session *ps;
	struct proxy *px;
	struct proxy_side client;
	struct proxy_upstream *up;
	enum proxy_conn_state state;
	int busy;                   /* callbacks under way; freed after them */
	bool dead;
	bool tls;                   /* requests arrive decrypted, for DEST */
	bool transparent;           /* redirected: requests in origin form, for DEST */
	bool raw;                   /* transparent, and no HTTP: nothing to answer in */
	char *dest_host;
	int dest_port;
	struct proxy_msg rq;
	struct proxy_msg rs;
	size_t head_off;            /* request head bytes fed, still buffered */
	struct proxy_req r;
	int answer;                 /* 1 allow, -1 deny, 0 none (wake) */
	char *answer_rule;
	bool answer_timeout;
	struct event *timer;
	struct event *wake;
	bool client_eof;
	bool up_eof;
	char *up_error;
	bool *want;                 /* per secret: its placeholder may not go where the request goes */
	struct proxy_scan scan;     /* the request's body, or a WebSocket's frames */
	struct proxy_ws *ws;        /* a WebSocket whose frames are looked at */
	bool hello_seen;            /* a tunnel's TLS hello was checked */
	int64_t last_io;
	int64_t head_since;         /* when it began waiting for a request */
	int64_t held_since;         /* the session paused: when (0: it is not) */
	struct timeval timer_left;  /* held: what was left of TIMER (0: none) */
	enum proxy_conn_go held_go; /* what waits for the resume */
	bool held_pooled;           /* PROXY_CONN_GO_GET: a pooled one may do */
};

/*
 * Arms the connection's timer for TV from now; while the session is paused
 * it is kept as what is left, for resume (a client outside the jail may
 * still send bytes that restart it).
 */
static void
proxy_conn_arm(struct proxy_conn *pc, const struct timeval *tv)
{
	if (pc->held_since != 0) {
		evtimer_del(pc->timer);
		pc->timer_left = *tv;
		return;
	}
	evtimer_add(pc->timer, tv);
}

static void proxy_conn_pump(struct proxy_conn *);
static void proxy_conn_sniff(struct proxy_conn *);
static void proxy_conn_refuse_raw(struct proxy_conn *, const char *);
static void proxy_conn_forward(struct proxy_conn *);
static void proxy_conn_ready(struct proxy_conn *);
static int proxy_conn_relay_failed(struct proxy_conn *, bool);
static enum proxy_verdict proxy_conn_policy(struct proxy_conn *,
    const char *, const char **);

/* Sets STATE and the client's timeouts that go with it. */
static void
proxy_conn_set_state(struct proxy_conn *pc, enum proxy_conn_state state)
{
	struct timeval idle = { pc->px->idle_timeout, 0 };

	if (state == PROXY_CONN_HEAD && pc->state != PROXY_CONN_HEAD)
		pc->head_since = util_mono_us();
	pc->state = state;
	switch (state) {
	case PROXY_CONN_HEAD:
		/* Between requests: idle; a started head has the head timer. */
		proxy_side_read_timeout(&pc->client, &idle);
		break;
	case PROXY_CONN_PIPE:
		pc->last_io = util_mono_us();
		proxy_side_read_timeout(&pc->client, &idle);
		if (pc->up != NULL)
			proxy_side_read_timeout(&pc->up->side, &idle);
		break;
	case PROXY_CONN_HELD:
	case PROXY_CONN_UPSTREAM:
	case PROXY_CONN_RELAY:
	case PROXY_CONN_CONNECTED:
	case PROXY_CONN_HANDSHAKE:
	case PROXY_CONN_CLOSING:
	case PROXY_CONN_SNIFF:
		proxy_side_read_timeout(&pc->client, NULL);
		break;
	}
}

static int64_t
proxy_conn_now(void)
{
	return util_mono_us();
}

static struct evbuffer *
proxy_conn_cin(struct proxy_conn *pc)
{
	return pc->client.in;
}

static struct evbuffer *
proxy_conn_cout(struct proxy_conn *pc)
{
	return pc->client.out;
}

static struct evbuffer *
proxy_conn_uin(struct proxy_conn *pc)
{
	return pc->up->side.in;
}

static struct evbuffer *
proxy_conn_uout(struct proxy_conn *pc)
{
	return pc->up->side.out;
}

/* ---- records ---- */

static void
proxy_conn_req_clear(struct proxy_req *r)
{
	struct buf bufs[3];

	/* The buffers keep their memory for the next request. */
	buf_reset(&r->rec.req_body);
	buf_reset(&r->rec.resp_body);
	buf_reset(&r->out_head);
	bufs[0] = r->rec.req_body;
	bufs[1] = r->rec.resp_body;
	bufs[2] = r->out_head;
	buf_init(&r->rec.req_body);
	buf_init(&r->rec.resp_body);
	request_clear(&r->rec);
	free(r->match);
	free(r->slashed);
	memset(r, 0, sizeof *r);
	request_init(&r->rec);
	r->rec.req_body = bufs[0];
	r->rec.resp_body = bufs[1];
	r->out_head = bufs[2];
}

static void
proxy_conn_req_free(struct proxy_req *r)
{
	proxy_conn_req_clear(r);
	buf_free(&r->rec.req_body);
	buf_free(&r->rec.resp_body);
	buf_free(&r->out_head);
}

static void
proxy_conn_req_begin(struct proxy_conn *pc, const char *method,
    const char *scheme)
{
	struct proxy_req *r = &pc->r;

	proxy_conn_req_clear(r);
	r->rec.id = (int64_t)++pc->ps->next_request;
	r->rec.session_id = pc->ps->session_id;
	r->rec.started_at = util_now_ms();
	r->t0 = proxy_conn_now();
	request_set(&r->rec.method, method);
	request_set(&r->rec.scheme, scheme);
	r->rec.http_version = xprintf("HTTP/%u.%u", pc->rq.p.http_major,
	    pc->rq.p.http_minor);
}

static void
proxy_conn_set_error(struct proxy_conn *pc, const char *error)
{
	if (pc->r.rec.error == NULL && error != NULL)
		pc->r.rec.error = xstrdup(error);
}

/* What a finished record says where nothing more was learnt. */
static void
proxy_conn_report_done(struct proxy_req *r, const char *const *values)
{
	r->rec.done = true;
	r->rec.duration_us = proxy_conn_now() - r->t0;
	if (r->rec.decision == NULL)
		r->rec.decision = xstrdup("error");
	/* An upstream may echo a secret: never into a record. */
	proxy_redact_buf(&r->rec.req_body, values);
	proxy_redact_buf(&r->rec.resp_body, values);
}

/* Tells the session about the request: started, or done (then it is over). */
static void
proxy_conn_report(struct proxy_conn *pc, bool done)
{
	struct proxy_session *ps = pc->ps;
	struct proxy_req *r = &pc->r;
	const char *const *values = (const char *const *)ps->secret_values;

	if (r->rec.id == 0)
		return;
	/* Heads become text here, after what they came with went on its way. */
	if (r->req_head_kept && r->rec.req_headers == NULL)
		r->rec.req_headers = proxy_msg_headers_text(&pc->rq, values);
	if (r->resp_head_kept && r->rec.resp_headers == NULL &&
	    pc->rs.head_done)
		r->rec.resp_headers = proxy_msg_headers_text(&pc->rs, values);
	/* Every record names a place, if only an empty one. */
	if (r->rec.host == NULL)
		r->rec.host = xstrdup("");
	if (r->rec.path == NULL)
		r->rec.path = xstrdup("");
	if (done)
		proxy_conn_report_done(r, values);
	if (ps->cbs.request != NULL && (done || !r->started))
		ps->cbs.request(ps->arg, &r->rec);
	r->started = true;
	if (done)
		proxy_conn_req_clear(r);
}

/* ---- closing ---- */

/* Each entry from the loop: closing inside waits until the way out. */
static void
proxy_conn_enter(struct proxy_conn *pc)
{
	pc->busy++;
}

/* Writes what is queued and reads on where there is room again. */
static void
proxy_conn_flush(struct proxy_conn *pc)
{
	proxy_side_flush(&pc->client);
	proxy_side_update(&pc->client);
	if (pc->up != NULL && pc->up->state == PROXY_UP_READY) {
		proxy_side_flush(&pc->up->side);
		proxy_side_update(&pc->up->side);
	}
}

static void
proxy_conn_leave(struct proxy_conn *pc)
{
	if (pc->busy > 1) {
		pc->busy--;
		return;
	}
	/* Still busy while flushing: an end of stream may be told from there. */
	if (!pc->dead)
		proxy_conn_flush(pc);
	if (--pc->busy == 0 && pc->dead)
		free(pc);
}

void
proxy_conn_close(struct proxy_conn *pc, const char *reason)
{
	struct proxy_session *ps = pc->ps;

	if (pc->dead)
		return;
	pc->dead = true;
	if (pc->r.rec.id != 0) {
		proxy_conn_set_error(pc, reason);
		proxy_conn_report(pc, true);
	}
	log_debug("%s: connection closed: %s", ps->label,
	    reason != NULL ? reason : "done");
	proxy_session_unhold(&pc->hold);
	proxy_upstream_free(pc->up);
	pc->up = NULL;
	proxy_side_close(&pc->client);
	event_free(pc->timer);
	event_free(pc->wake);
	proxy_msg_free(&pc->rq);
	proxy_msg_free(&pc->rs);
	proxy_conn_req_free(&pc->r);
	free(pc->dest_host);
	free(pc->answer_rule);
	free(pc->up_error);
	free(pc->want);
	proxy_scan_free(&pc->scan);
	if (pc->ws != NULL) {
		proxy_ws_free(pc->ws);
		free(pc->ws);
	}
	TAILQ_REMOVE(&ps->conns, pc, entry);
	ps->nconns--;
	if (pc->busy == 0)
		free(pc);
}

/* After the last response is written: send FIN, read what the client still sends, then close. */
static void
proxy_conn_linger(struct proxy_conn *pc)
{
	struct timeval tv = { PROXY_LINGER_SECS, 0 };

	proxy_side_shutdown(&pc->client);
	evbuffer_drain(proxy_conn_cin(pc), evbuffer_get_length(proxy_conn_cin(pc)));
	proxy_side_read_timeout(&pc->client, NULL);
	proxy_side_enable(&pc->client);
	proxy_conn_arm(pc, &tv);
}

/* Closes once what is queued for the client has been written. */
static void
proxy_conn_finish(struct proxy_conn *pc)
{
	struct timeval tv = { pc->px->client_timeout, 0 };

	proxy_conn_set_state(pc, PROXY_CONN_CLOSING);
	if (pc->r.rec.id != 0)
		proxy_conn_report(pc, true);
	proxy_upstream_free(pc->up);
	pc->up = NULL;
	evtimer_del(pc->timer);
	/* A client that never reads its answer is not waited for forever. */
	proxy_side_read_timeout(&pc->client, NULL);
	proxy_side_write_timeout(&pc->client, &tv);
	proxy_side_set_low(&pc->client, 0);
	proxy_side_flush(&pc->client);
	if (proxy_side_pending(&pc->client) == 0)
		proxy_conn_linger(pc);
}

/*
 * True once the client has bytes of the upstream's final response: only
 * complete interim ones (100 Continue) may come before one of our own.
 */
static bool
proxy_conn_answered_up(struct proxy_conn *pc)
{
	return pc->r.resp_started && (pc->r.rec.status != 0 ||
	    pc->rs.head_bytes != 0 || pc->rs.head_done);
}

/* A final response made here (403, 400, 502, ...), then close. */
static void
proxy_conn_respond(struct proxy_conn *pc, int status, const char *decision,
    const char *error, const char *body)
{
	struct proxy_req *r = &pc->r;

	if (proxy_conn_answered_up(pc) || pc->raw) {
		if (r->rec.id != 0 && decision != NULL)
			request_set(&r->rec.decision, decision);
		proxy_conn_close(pc, error);
		return;
	}
	proxy_http_respond(proxy_conn_cout(pc), status, body);
	if (r->rec.id != 0) {
		r->rec.status = status;
		request_set(&r->rec.status_text, proxy_http_reason(status));
		if (decision != NULL)
			request_set(&r->rec.decision, decision);
		proxy_conn_set_error(pc, error);
	}
	proxy_conn_finish(pc);
}

static void
proxy_conn_bad_request(struct proxy_conn *pc, const char *why)
{
	char *body = xprintf("agentmux: malformed request: %s", why);
	char *err = xprintf("malformed request: %s", why);

	if (pc->r.rec.id == 0) {
		proxy_conn_req_begin(pc, *proxy_msg_url(&pc->rq) == '\0' ? "-" :
		    http_method_str(pc->rq.p.method), pc->tls ? "https" : "http");
		if (pc->tls || pc->transparent) {
			pc->r.rec.host = xstrdup(pc->dest_host);
			pc->r.rec.port = pc->dest_port;
		}
		pc->r.rec.path = xstrdup(proxy_msg_url(&pc->rq));
	}
	proxy_conn_respond(pc, 400, "error", err, body);
	free(body);
	free(err);
}

/* ---- denials ---- */

static void
proxy_conn_deny(struct proxy_conn *pc, const char *why, const char *body)
{
	proxy_conn_respond(pc, 403, "deny", why, body);
}

/* No rule covers the request: say so, and what would allow it. */
static void
proxy_conn_deny_unknown(struct proxy_conn *pc, const char *how)
{
	struct proxy_req *r = &pc->r;
	char *hr = proxy_host_rule(r->rec.host, r->rec.port, r->rec.scheme);
	char *body, *why;
	enum proxy_verdict host_v;

	host_v = proxy_policy_check(pc->ps->policy, r->rec.host, r->rec.port,
	    NULL, NULL, NULL);
	if (host_v == PROXY_ALLOW && strcmp(r->rec.method, "CONNECT") != 0) {
		body = xprintf("agentmux: %s %s on %s is not allowed (%s); "
		    "approve it in the dashboard, or add `allow %s %s` under "
		    "[policy] in your agentmux config", r->rec.method,
		    r->rec.path, r->rec.host, how, hr, r->rec.method);
		why = xprintf("%s %s is not allowed (%s); add `allow %s %s`",
		    r->rec.method, hr, how, hr, r->rec.method);
	} else {
		body = xprintf("agentmux: %s is not allowed (%s); approve it in "
		    "the dashboard, or add `allow %s` under [policy] in your "
		    "agentmux config", hr, how, hr);
		why = xprintf("%s is not allowed (%s); add `allow %s`", hr, how,
		    hr);
	}
	proxy_conn_deny(pc, why, body);
	free(hr);
	free(body);
	free(why);
}

/* How to undo a deny rule, by where it came from (its description ends in its origin). */
static const char *
proxy_conn_rule_hint(const char *rule)
{
	if (strstr(rule, "(answered for the session)") != NULL)
		return "it was your answer in the dashboard for this session; "
		    "start a new session to be asked again";
	if (strstr(rule, "(answered always)") != NULL)
		return "it was your answer in the dashboard, saved under "
		    "[policy] in your agentmux config; remove that line to "
		    "allow it";
	if (strstr(rule, "(--deny)") != NULL)
		return "it came from --deny on the command line; run without it";
	return "change or remove that rule where it is written (its file and "
	    "line are in parentheses), or add a more specific allow rule";
}

static void
proxy_conn_deny_rule(struct proxy_conn *pc, const char *rule)
{
	char *hr = proxy_host_rule(pc->r.rec.host, pc->r.rec.port,
	    pc->r.rec.scheme);
	char *body, *why;

	/* A CONNECT has no path: say "CONNECT to HOST", not "CONNECT  on HOST". */
	if (pc->r.rec.path == NULL || *pc->r.rec.path == '\0')
		body = xprintf("agentmux: %s to %s is denied by the rule `%s`; "
		    "%s", pc->r.rec.method, hr, rule,
		    proxy_conn_rule_hint(rule));
	else
		body = xprintf("agentmux: %s %s on %s is denied by the rule "
		    "`%s`; %s", pc->r.rec.method, pc->r.rec.path, hr, rule,
		    proxy_conn_rule_hint(rule));
	why = xprintf("denied by %s", rule);
	free(pc->r.rec.rule);
	pc->r.rec.rule = xstrdup(rule);
	proxy_conn_deny(pc, why, body);
	free(hr);
	free(body);
	free(why);
}

/* ---- holding a request for the user's answer ---- */

static void proxy_conn_decide(struct proxy_conn *, enum proxy_verdict,
    const char *);

/* What a request the user (or the clock) denied is told: why, and how to get it allowed. */
static char *
proxy_conn_answer_body(struct proxy_conn *pc, const char *hr)
{
	const char *rule = pc->answer_rule != NULL ? pc->answer_rule : "";

	if (pc->answer_timeout)
		return xprintf("agentmux: nobody answered about %s within %d s "
		    "([proxy] prompt_timeout), so it was denied; retry and "
		    "approve it in the dashboard, or add `allow %s` under "
		    "[policy] in your agentmux config", hr,
		    pc->ps->prompt_timeout, hr);
	if (strstr(rule, "answered always") != NULL)
		return xprintf("agentmux: %s was denied in the dashboard, and "
		    "`deny %s` was saved under [policy] in your agentmux "
		    "config; remove that line (or answer differently in a new "
		    "session) to allow it", hr, hr);
	if (strstr(rule, "answered for the session") != NULL)
		return xprintf("agentmux: %s was denied in the dashboard for "
		    "the rest of this session; start a new session to be "
		    "asked again, or add `allow %s` under [policy] in your "
		    "agentmux config", hr, hr);
	return xprintf("agentmux: %s was denied once in the dashboard; retry "
	    "to be asked again, or add `allow %s` under [policy] in your "
	    "agentmux config", hr, hr);
}

static void
proxy_conn_wake(struct proxy_conn *pc)
{
	int answer = pc->answer;
	const char *rule = NULL;
	char *body, *hr;

	pc->answer = 0;
	if (pc->state != PROXY_CONN_HELD || answer == 0)
		return;
	if (answer == 2) {
		/* The answer's rule may not cover this one: asked anew if not. */
		proxy_conn_decide(pc, proxy_conn_policy(pc, pc->r.rec.host, &rule),
		    rule);
		return;
	}
	if (answer > 0) {
		request_set(&pc->r.rec.decision, "allow");
		pc->r.answered = true;
		free(pc->r.rec.rule);
		pc->r.rec.rule = pc->answer_rule;
		pc->answer_rule = NULL;
		proxy_conn_forward(pc);
		return;
	}
	hr = proxy_host_rule(pc->r.rec.host, pc->r.rec.port, pc->r.rec.scheme);
	body = proxy_conn_answer_body(pc, hr);
	free(pc->r.rec.rule);
	pc->r.rec.rule = pc->answer_rule;
	pc->answer_rule = NULL;
	proxy_conn_deny(pc, pc->answer_timeout ? "no answer in time" :
	    "denied by the user", body);
	free(hr);
	free(body);
}

static void
proxy_conn_wake_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proxy_conn *pc = arg;

	proxy_conn_enter(pc);
	proxy_conn_wake(pc);
	/* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): enter's count keeps PC */
	proxy_conn_leave(pc);
}

void
proxy_conn_rejudge(struct proxy_conn *pc)
{
	pc->answer = 2;
	pc->answer_timeout = false;
	event_active(pc->wake, EV_TIMEOUT, 1);
}

void
proxy_conn_answered(struct proxy_conn *pc, bool allow, const char *rule)
{
	/* Continue from the loop: the caller may be inside our callbacks. */
	pc->answer = allow ? 1 : -1;
	pc->answer_timeout = rule != NULL && strstr(rule, "timeout") != NULL;
	free(pc->answer_rule);
	pc->answer_rule = rule != NULL ? xstrdup(rule) : NULL;
	event_active(pc->wake, EV_TIMEOUT, 1);
}

static void
proxy_conn_hold(struct proxy_conn *pc)
{
	struct proxy_req *r = &pc->r;
	bool connect = strcmp(r->rec.method, "CONNECT") == 0;

	proxy_conn_set_state(pc, PROXY_CONN_HELD);
	if (proxy_session_hold(pc->ps, &pc->hold, r->rec.scheme, r->rec.host,
	    r->rec.port, connect ? NULL : r->rec.method,
	    connect ? NULL : r->rec.path) == -1)
		proxy_conn_deny_unknown(pc, "too many questions are open");
}

/* ---- requests ---- */

/* The path policy judges and the upstream gets: normalised (proxy-path.c). */
static const char *
proxy_conn_normalise(struct proxy_req *r)
{
	const char *why = NULL;
	size_t len;
	char *norm;

	/* The fragment never goes on the wire. */
	r->rec.path[strcspn(r->rec.path, "#")] = '\0';
	if ((norm = proxy_path_normalise(r->rec.path, &len, &why)) == NULL)
		return why;
	free(r->rec.path);
	r->rec.path = norm;
	r->match = xstrndup(norm, len);
	r->slashed = proxy_path_slash_reading(r->match);
	return NULL;
}

/*
 * The verdict on the request to HOST: its path as it is and, where it holds
 * "%2F", as a server that decodes that reads it; the stricter one.
 */
static enum proxy_verdict
proxy_conn_policy(struct proxy_conn *pc, const char *host, const char **rule)
{
	struct proxy_req *r = &pc->r;
	enum proxy_verdict v, v2;
	const char *rule2 = NULL;

	v = proxy_policy_check(pc->ps->policy, host, r->rec.port,
	    r->rec.method, r->match, rule);
	if (r->slashed == NULL || v == PROXY_DENY)
		return v;
	v2 = proxy_policy_check(pc->ps->policy, host, r->rec.port,
	    r->rec.method, r->slashed, &rule2);
	if (v2 == PROXY_DENY || (v2 == PROXY_UNKNOWN && v != PROXY_UNKNOWN)) {
		*rule = rule2;
		return v2;
	}
	return v;
}

/* Host, port and path of the request, from the URL or the tunnel. */
static const char *
proxy_conn_target(struct proxy_conn *pc)
{
	const char *url = proxy_msg_url(&pc->rq);
	struct http_parser_url u;
	struct proxy_req *r = &pc->r;
	char *host;

	if ((pc->tls || pc->transparent) && url[0] == '/') {
		r->rec.host = xstrdup(pc->dest_host);
		r->rec.port = pc->dest_port;
		r->rec.path = xstrdup(url);
		return proxy_conn_normalise(r);
	}
	if (pc->tls || pc->transparent)
		return "inside a tunnel, requests must name a path";
	if (url[0] == '/' || strcmp(url, "*") == 0)
		return "send requests to a proxy in absolute form "
		    "(http://host/path), or use CONNECT";
	http_parser_url_init(&u);
	if (http_parser_parse_url(url, strlen(url), 0, &u) != 0 ||
	    !(u.field_set & (1 << UF_SCHEMA)) || !(u.field_set & (1 << UF_HOST)))
		return "the URL is not absolute";
	if (u.field_data[UF_SCHEMA].len != 4 ||
	    strncasecmp(url + u.field_data[UF_SCHEMA].off, "http", 4) != 0)
		return "only http:// URLs go in the request line; use CONNECT "
		    "for https";
	if (u.field_set & (1 << UF_USERINFO))
		return "user names in URLs are not passed on";
	host = xstrndup(url + u.field_data[UF_HOST].off,
	    u.field_data[UF_HOST].len);
	if (!proxy_host_valid(host)) {
		free(host);
		return "the host name is not valid";
	}
	r->rec.host = host;
	r->rec.port = (u.field_set & (1 << UF_PORT)) ? u.port : 80;
	if (r->rec.port == 0)
		return "port 0 cannot be reached";
	if (u.field_set & (1 << UF_PATH))
		r->rec.path = xstrdup(url + u.field_data[UF_PATH].off);
	else
		r->rec.path = xprintf("/%s", (u.field_set & (1 << UF_QUERY)) ?
		    url + u.field_data[UF_QUERY].off - 1 : "");
	return proxy_conn_normalise(r);
}

/* True if NAME is "localhost" and ADDR a loopback address (127/8, ::1). */
static bool
proxy_conn_localhost(const char *name, const char *addr)
{
	static const unsigned char lo6[16] = { [15] = 1 };
	unsigned char x[16];

	if (strcasecmp(name, "localhost") != 0 &&
	    strcasecmp(name, "localhost.") != 0)
		return false;
	if (inet_pton(AF_INET, addr, x) == 1)
		return x[0] == 127;
	return inet_pton(AF_INET6, addr, x) == 1 && memcmp(x, lo6, 16) == 0;
}

/*
 * True if A and B name the same host: addresses compared as addresses.
 * "localhost" is the loopback address by definition (RFC 6761 6.3), so a
 * client that connects to 127.0.0.1 for localhost names no other host.
 */
static bool
proxy_conn_same_host(const char *a, const char *b)
{
	unsigned char x[16], y[16];

	if (proxy_conn_localhost(a, b) || proxy_conn_localhost(b, a))
		return true;
	if (inet_pton(AF_INET, a, x) == 1)
		return inet_pton(AF_INET, b, y) == 1 && memcmp(x, y, 4) == 0;
	if (inet_pton(AF_INET6, a, x) == 1)
		return inet_pton(AF_INET6, b, y) == 1 && memcmp(x, y, 16) == 0;
	return strcmp(a, b) == 0;
}

/* The port after a Host header's name, at P up to END: 0 if none, -1 if not a port. */
static int
proxy_conn_host_port(const char *p, const char *end)
{
	long v = 0;

	if (p == end)
		return 0;
	if (*p++ != ':')
		return -1;
	if (p == end)
		return 0;   /* "host:" names the default port */
	for (; p < end && *p >= '0' && *p <= '9' && v <= 65535; p++)
		v = v * 10 + (*p - '0');
	return p == end && v >= 1 && v <= 65535 ? (int)v : -1;
}

/* Reads a Host header's value: *NAME (lower case, caller frees) and *PORT (0: none). */
static int
proxy_conn_parse_host(const char *h, char **name, int *port)
{
	const char *end, *p;
	size_t n;

	while (*h == ' ' || *h == '\t')
		h++;
	for (n = strlen(h); n > 0 && (h[n - 1] == ' ' || h[n - 1] == '\t'); n--)
		;
	if (*h == '[') {
		if ((end = memchr(h, ']', n)) == NULL)
			return -1;
		*name = xstrndup(h + 1, (size_t)(end - h - 1));
		p = end + 1;
	} else {
		end = memchr(h, ':', n);
		p = end != NULL ? end : h + n;
		*name = xstrndup(h, (size_t)(p - h));
	}
	if ((*port = proxy_conn_host_port(p, h + n)) == -1 ||
	    !proxy_host_valid(*name) || (*h == '[') != (strchr(*name, ':') !=
	    NULL)) {
		free(*name);
		*name = NULL;
		return -1;
	}
	return 0;
}

/* NULL if the Host header is absent or names a host (and maybe a port), else why not. */
static const char *
proxy_conn_host_header(struct proxy_conn *pc)
{
	const char *h = proxy_msg_get(&pc->rq, "host");
	char *name;
	int port;

	if (h == NULL)
		return NULL;
	if (proxy_conn_parse_host(h, &name, &port) == -1)
		return "the Host header names no valid host[:port]";
	free(name);
	return NULL;
}

/* The name the client's TLS asked for (SNI), checked; NULL if none. */
static int
proxy_conn_sni(struct proxy_conn *pc, char **sni)
{
	const char *s = NULL;

	*sni = NULL;
	if (pc->tls && pc->client.ssl != NULL)
		s = SSL_get_servername(pc->client.ssl, TLSEXT_NAMETYPE_host_name);
	if (s == NULL)
		return 0;
	*sni = xstrdup(s);
	if (proxy_host_valid(*sni))
		return 0;
	free(*sni);
	*sni = NULL;
	return -1;
}

/*
 * The Host header and the TLS server name (SNI) must name where the request
 * goes: no fronting one virtual host behind another's allowed name. When it
 * goes to an address, they may name a host instead (as a client does that
 * connects to an address for a name), which then needs a rule of its own
 * (proxy_conn_check_vhost); *VHOST is that name. Why not, or NULL.
 */
static char *
proxy_conn_check_names(struct proxy_conn *pc, char **vhost)
{
	struct proxy_req *r = &pc->r;
	const char *h = proxy_msg_get(&pc->rq, "host"), *name, *what;
	char *host = NULL, *sni = NULL, *why = NULL;
	int port = 0;

	*vhost = NULL;
	if (h != NULL && proxy_conn_parse_host(h, &host, &port) == -1)
		return xstrdup("the Host header names no valid host");   /* checked before */
	if (proxy_conn_sni(pc, &sni) == -1)
		why = xstrdup("TLS asked for a server name (SNI) that is not "
		    "a valid host name");
	else if (port != 0 && port != r->rec.port)
		why = xprintf("the Host header names port %d, but the request "
		    "goes to port %d", port, r->rec.port);
	else if (host != NULL && sni != NULL && !proxy_conn_same_host(host,
	    sni))
		why = xprintf("the Host header names %s, but TLS asked for %s "
		    "(SNI)", host, sni);
	else if ((name = host != NULL ? host : sni) != NULL &&
	    !proxy_conn_same_host(name, r->rec.host)) {
		what = host != NULL ? "the Host header" : "TLS (SNI)";
		if (proxy_host_is_addr(r->rec.host) && !proxy_host_is_addr(name))
			*vhost = xstrdup(name);
		else
			why = xprintf("%s names %s, but the request goes to %s: "
			    "a request may name only the host it goes to", what,
			    name, r->rec.host);
	}
	free(host);
	free(sni);
	return why;
}

/* A request to an address that names host VHOST: a rule must allow that host too. */
static char *
proxy_conn_check_vhost(struct proxy_conn *pc, const char *vhost)
{
	struct proxy_req *r = &pc->r;
	const char *rule = NULL;
	enum proxy_verdict v;
	char *hr, *why;

	v = proxy_conn_policy(pc, vhost, &rule);
	if (v == PROXY_ALLOW || v == PROXY_TUNNEL)
		return NULL;
	if (v == PROXY_DENY)
		return xprintf("the request to %s names the host %s, which the "
		    "rule `%s` denies; %s", r->rec.host, vhost, rule,
		    proxy_conn_rule_hint(rule));
	hr = proxy_host_rule(vhost, r->rec.port, r->rec.scheme);
	why = xprintf("the request to %s names the host %s, which no rule "
	    "allows; a request to an address may name another host only if a "
	    "rule allows it: add `allow %s`", r->rec.host, vhost, hr);
	free(hr);
	return why;
}

/* Refuses a request whose Host or SNI names another destination. */
static void
proxy_conn_refuse_names(struct proxy_conn *pc, const char *why)
{
	char *body = xprintf("agentmux: refused: %s", why);

	free(pc->r.rec.rule);
	pc->r.rec.rule = xstrdup("Host and SNI check (a request names where it "
	    "goes)");
	proxy_conn_deny(pc, why, body);
	free(body);
}

/* Only over TLS verified for one of its hosts: never in cleartext, whatever the port. */
static bool
proxy_conn_deliverable(struct proxy_conn *pc, const struct proxy_secret *s)
{
	return pc->tls && proxy_secret_bound(s, pc->r.rec.host);
}

/*
 * Marks the secrets whose placeholders may not go where the request goes,
 * and starts the body's scan for them. True if there is any.
 */
static bool
proxy_conn_want(struct proxy_conn *pc, bool connect)
{
	struct proxy_session *ps = pc->ps;
	const struct proxy_secret *s;
	size_t i;

	for (i = 0; i < ps->nsecrets; i++) {
		s = &ps->secrets[i];
		pc->want[i] = connect ? !proxy_secret_bound(s, pc->r.rec.host) :
		    !proxy_conn_deliverable(pc, s);
	}
	proxy_scan_reset(&pc->scan, ps->patterns, pc->want);
	return proxy_scan_active(&pc->scan);
}

/* Looks for the wanted placeholders in S; true (and r.leak set) if one is there. */
static bool
proxy_conn_scan_text(struct proxy_conn *pc, const char *s, size_t len)
{
	int found;

	found = proxy_scan_once(pc->ps->patterns, pc->want, s, len);
	if (found != -1)
		pc->r.leak = &pc->ps->secrets[found];
	return found != -1;
}

/*
 * Where a placeholder headed where its secret does not belong is: NULL if
 * nowhere. The head is looked at as the client sent it (still buffered),
 * URL and every header in one pass, then the path as normalised.
 */
static const char *
proxy_conn_leak_where(struct proxy_conn *pc)
{
	struct evbuffer *in = proxy_conn_cin(pc);
	const char *url = proxy_msg_url(&pc->rq);
	unsigned char *head;

	if (!proxy_conn_want(pc, false))
		return NULL;
	/* The head is there: proxy_msg_after_head drains it later. */
	if ((head = evbuffer_pullup(in, (ev_ssize_t)pc->head_off)) == NULL)
		fatalx("proxy_conn_leak_where: the request head is gone");
	if (proxy_conn_scan_text(pc, (const char *)head, pc->head_off))
		return proxy_conn_scan_text(pc, url, strlen(url)) ? "the URL" :
		    "a header";
	if (proxy_conn_scan_text(pc, pc->r.rec.path, strlen(pc->r.rec.path)))
		return "the URL";
	return NULL;
}

static void
proxy_conn_block_leak(struct proxy_conn *pc, const char *where)
{
	struct proxy_session *ps = pc->ps;
	const struct proxy_secret *s = pc->r.leak;
	char *msg, *body;

	msg = xprintf("the placeholder of secret %s was sent to %s in %s; "
	    "it may only go to its own hosts, over TLS, so the request was "
	    "blocked", s->name, pc->r.rec.host, where);
	/*
	 * Only what happened: the jail relays this text, and advice on
	 * binding the secret to HOST would read as agentmux's own.
	 */
	body = xprintf("agentmux: blocked: this request to %s carries the "
	    "placeholder of secret %s, which only its own hosts may receive, "
	    "over TLS; the request was blocked and flagged to the user",
	    pc->r.rec.host, s->name);
	log_warnx("%s: %s", ps->label, msg);
	if (ps->cbs.alert != NULL)
		ps->cbs.alert(ps->arg, "exfiltration", msg);
	free(pc->r.rec.rule);
	pc->r.rec.rule = xprintf("secret %s", s->name);
	request_set(&pc->r.rec.decision, "deny");
	proxy_conn_deny(pc, "exfiltration: a secret's placeholder", body);
	free(msg);
	free(body);
}

static void
proxy_conn_decide(struct proxy_conn *pc, enum proxy_verdict v,
    const char *rule)
{
	switch (v) {
	case PROXY_ALLOW:
	case PROXY_TUNNEL:
		request_set(&pc->r.rec.decision, "allow");
		pc->r.rec.rule = rule != NULL ? xstrdup(rule) : NULL;
		proxy_conn_forward(pc);
		break;
	case PROXY_DENY:
		proxy_conn_deny_rule(pc, rule);
		break;
	case PROXY_UNKNOWN:
		if (pc->ps->ask && !pc->ps->dying)
			proxy_conn_hold(pc);
		else
			proxy_conn_deny_unknown(pc, "no rule covers it");
		break;
	}
}

static void
proxy_conn_on_req_body(void *arg, const char *data, size_t len)
{
	struct proxy_conn *pc = arg;
	struct proxy_req *r = &pc->r;
	size_t max = pc->px->max_body_record;
	int found;

	if (r->rec.req_body.len < max)
		buf_add(&r->rec.req_body, data,
		    len < max - r->rec.req_body.len ? len :
		    max - r->rec.req_body.len);
	/* Every byte, before it goes: proxy_conn_relay_request stops there. */
	if (r->leak == NULL && (found = proxy_scan_feed(&pc->scan, data,
	    len)) != -1)
		r->leak = &pc->ps->secrets[found];
	if (r->leak != NULL)
		return;
	if (r->rechunk && len != 0) {
		evbuffer_add_printf(proxy_conn_uout(pc), "%zx\r\n", len);
		evbuffer_add(proxy_conn_uout(pc), data, len);
		evbuffer_add(proxy_conn_uout(pc), "\r\n", 2);
	}
	r->rec.bytes_up += (int64_t)len;
}

static void
proxy_conn_on_resp_body(void *arg, const char *data, size_t len)
{
	struct proxy_conn *pc = arg;
	struct proxy_req *r = &pc->r;
	size_t max = pc->px->max_body_record;

	if (r->rec.resp_body.len < max)
		buf_add(&r->rec.resp_body, data,
		    len < max - r->rec.resp_body.len ? len :
		    max - r->rec.resp_body.len);
	r->rec.bytes_down += (int64_t)len;
}

/* The Host and SNI checks, then the policy for the request. */
static void
proxy_conn_judge(struct proxy_conn *pc)
{
	struct proxy_req *r = &pc->r;
	const char *rule = NULL;
	char *why, *vhost;
	enum proxy_verdict v;

	if ((why = proxy_conn_check_names(pc, &vhost)) == NULL &&
	    vhost != NULL)
		why = proxy_conn_check_vhost(pc, vhost);
	free(vhost);
	if (why != NULL) {
		proxy_conn_refuse_names(pc, why);
		free(why);
		return;
	}
	v = proxy_conn_policy(pc, r->rec.host, &rule);
	proxy_conn_decide(pc, v, rule);
}

static void
proxy_conn_request(struct proxy_conn *pc)
{
	struct proxy_req *r;
	const char *why;

	proxy_conn_req_begin(pc, http_method_str(pc->rq.p.method),
	    pc->tls ? "https" : "http");
	r = &pc->r;
	if ((why = proxy_msg_check_request(&pc->rq)) != NULL ||
	    (why = proxy_conn_target(pc)) != NULL ||
	    (why = proxy_conn_host_header(pc)) != NULL) {
		proxy_conn_bad_request(pc, why);
		return;
	}
	r->head = pc->rq.p.method == HTTP_HEAD;
	/* Only WebSocket is piped; h2c and the like would skip the policy. */
	r->upgrade = pc->rq.p.upgrade && proxy_msg_get(&pc->rq, "upgrade") &&
	    strncasecmp(proxy_msg_get(&pc->rq, "upgrade"), "websocket", 9) == 0;
	if (r->upgrade)
		request_set(&r->rec.scheme, pc->tls ? "wss" : "ws");
	r->keep_alive = http_should_keep_alive(&pc->rq.p);
	r->req_head_kept = true;
	if ((why = proxy_conn_leak_where(pc)) != NULL) {
		proxy_conn_block_leak(pc, why);
		return;
	}
	proxy_conn_judge(pc);
}

static void
proxy_conn_add3(struct buf *b, const char *x, const char *y, const char *z)
{
	buf_adds(b, x);
	buf_adds(b, y);
	buf_adds(b, z);
}

/* The head that goes upstream: origin-form, hop-by-hop headers dropped, secrets in. */
static void
proxy_conn_build_head(struct proxy_conn *pc)
{
	struct proxy_session *ps = pc->ps;
	struct proxy_req *r = &pc->r;
	struct buf *b = &r->out_head;
	const char *name, *value;
	char *swapped, *v;
	size_t i, j;
	bool host = false;

	buf_reset(b);
	proxy_conn_add3(b, r->rec.method, " ", r->rec.path);
	proxy_conn_add3(b, " ", r->rec.http_version, "\r\n");
	for (i = 0; i < pc->rq.nh; i++) {
		name = proxy_msg_name(&pc->rq, i);
		value = proxy_msg_value(&pc->rq, i);
		if (proxy_msg_hop_by_hop(&pc->rq, name))
			continue;
		/* Compressed frames would hide what they carry from the scan. */
		if (r->upgrade && proxy_scan_active(&pc->scan) &&
		    strcasecmp(name, "sec-websocket-extensions") == 0)
			continue;
		host = host || strcasecmp(name, "host") == 0;
		v = NULL;
		for (j = 0; j < ps->nsecrets; j++) {
			const struct proxy_secret *s = &ps->secrets[j];

			/* WANT is set for the request: what may not go there. */
			if (pc->want[j] || (s->header != NULL &&
			    strcasecmp(s->header, name) != 0))
				continue;
			if ((swapped = proxy_secret_swap(s, v != NULL ? v :
			    value)) != NULL) {
				free(v);
				v = swapped;
			}
		}
		proxy_conn_add3(b, name, ": ", v != NULL ? v : value);
		buf_add(b, "\r\n", 2);
		if (v != NULL) {
			explicit_bzero(v, strlen(v));
			free(v);
		}
	}
	if (!host)
		buf_printf(b, "Host: %s%s%s\r\n",
		    strchr(r->rec.host, ':') ? "[" : "", r->rec.host,
		    strchr(r->rec.host, ':') ? "]" : "");
	if (r->upgrade)
		buf_printf(b, "Connection: Upgrade\r\nUpgrade: %s\r\n",
		    proxy_msg_get(&pc->rq, "upgrade"));
	buf_add(b, "\r\n", 2);
}

/* Asks for an upstream connection for the request; a user's yes to a literal address names it. */
static void
proxy_conn_get_upstream(struct proxy_conn *pc, bool pooled)
{
	struct proxy_want w;

	memset(&w, 0, sizeof w);
	w.host = pc->r.rec.host;
	w.port = pc->r.rec.port;
	w.tls = pc->tls;
	w.pooled = pooled;
	w.named = pc->r.answered && proxy_host_is_addr(pc->r.rec.host);
	if (pc->held_since != 0) {
		pc->up = NULL;
		pc->held_go = PROXY_CONN_GO_GET;
		pc->held_pooled = pooled;
		return;
	}
	pc->up = proxy_upstream_get(pc->ps, pc, &w);
}

static void
proxy_conn_forward(struct proxy_conn *pc)
{
	struct proxy_req *r = &pc->r;
	enum proxy_msg_state st;

	st = proxy_msg_after_head(&pc->rq, proxy_conn_cin(pc), pc->head_off);
	pc->head_off = 0;
	if (st == PROXY_MSG_ERROR) {
		proxy_conn_bad_request(pc, pc->rq.error);
		return;
	}
	r->req_done = r->no_body = st == PROXY_MSG_DONE;
	r->rechunk = !r->req_done && (pc->rq.p.flags & F_CHUNKED);
	proxy_conn_build_head(pc);
	/* The head as it goes: what its parts alone do not show. */
	if (proxy_scan_active(&pc->scan) && proxy_conn_scan_text(pc,
	    r->out_head.data, r->out_head.len)) {
		proxy_conn_block_leak(pc, "the request head");
		return;
	}
	proxy_conn_set_state(pc, PROXY_CONN_UPSTREAM);
	proxy_conn_get_upstream(pc, !r->upgrade);
	if (pc->up == NULL || pc->up->state != PROXY_UP_READY) {
		proxy_conn_report(pc, false);   /* shown while it connects (or waits) */
		return;
	}
	/* A pooled connection: the request goes out before it is recorded. */
	proxy_conn_ready(pc);
	proxy_conn_report(pc, false);
}

/* ---- upstream events ---- */

/*
 * Looks for placeholders in the body bytes already here, so that a small
 * body that carries one stops the request before anything goes upstream.
 */
static bool
proxy_conn_prescan(struct proxy_conn *pc)
{
	struct evbuffer *in = proxy_conn_cin(pc);
	size_t len = evbuffer_get_length(in);
	unsigned char *p;

	if (pc->r.no_body || len == 0 || !proxy_scan_active(&pc->scan))
		return false;
	if (len > PROXY_PRESCAN_MAX)
		len = PROXY_PRESCAN_MAX;
	if ((p = evbuffer_pullup(in, (ev_ssize_t)len)) == NULL)
		return false;
	return proxy_conn_scan_text(pc, (const char *)p, len);
}

void
proxy_conn_upstream_ready(struct proxy_conn *pc)
{
	/* Connected while the session is paused: the request waits for the resume. */
	if (pc->held_since != 0) {
		pc->held_go = PROXY_CONN_GO_READY;
		return;
	}
	proxy_conn_enter(pc);
	proxy_conn_ready(pc);
	proxy_conn_leave(pc);
}

static void
proxy_conn_ready(struct proxy_conn *pc)
{
	struct proxy_req *r = &pc->r;

	pc->up_eof = false;
	free(pc->up_error);
	pc->up_error = NULL;
	if (strcmp(r->rec.method, "CONNECT") == 0) {
		/* A tunnel: the client may talk once it hears 200 (if it asked). */
		if (!pc->transparent)
			evbuffer_add_printf(proxy_conn_cout(pc),
			    "HTTP/1.1 200 Connection established\r\n\r\n");
		r->rec.status = 200;
		r->resp_started = true;
		r->rec.ttfb_us = proxy_conn_now() - r->t0;
		proxy_conn_report(pc, false);
		proxy_conn_set_state(pc, PROXY_CONN_PIPE);
		proxy_conn_pump(pc);
		return;
	}
	if (proxy_conn_prescan(pc)) {
		proxy_conn_block_leak(pc, "the body");
		return;
	}
	proxy_msg_reset(&pc->rs);
	pc->rs.skip_body = r->head;
	evbuffer_add(proxy_conn_uout(pc), r->out_head.data, r->out_head.len);
	if (r->req_done)
		proxy_side_flush(&pc->up->side);   /* the request is all here */
	proxy_conn_set_state(pc, PROXY_CONN_RELAY);
	proxy_conn_pump(pc);
}

void
proxy_conn_upstream_failed(struct proxy_conn *pc, int status,
    const char *reason)
{
	char *why = xstrdup(reason), *body;   /* REASON may belong to pc->up */

	proxy_conn_enter(pc);
	proxy_upstream_free(pc->up);
	pc->up = NULL;
	if (status == 403)
		body = xprintf("agentmux: %s (under [policy] in your "
		    "agentmux config)", why);
	else
		body = xprintf("agentmux: %s", why);
	if (status == 403) {
		/* The SSRF guard: a policy decision, not an upstream failure. */
		free(pc->r.rec.rule);
		pc->r.rec.rule = xstrdup("address check (loopback, private and "
		    "metadata addresses need a rule naming them)");
		proxy_conn_deny(pc, why, body);
	} else
		proxy_conn_respond(pc, status, "error", why, body);
	free(body);
	free(why);
	proxy_conn_leave(pc);
}

/* A reused connection the server closed before answering: try once more on a new one. */
static bool
proxy_conn_retry(struct proxy_conn *pc)
{
	struct proxy_req *r = &pc->r;

	if (r->resp_started || r->retried || !pc->up->reused ||
	    !r->no_body || r->upgrade)
		return false;
	r->retried = true;
	proxy_upstream_free(pc->up);
	proxy_conn_set_state(pc, PROXY_CONN_UPSTREAM);
	proxy_conn_get_upstream(pc, false);
	return true;
}

void
proxy_conn_upstream_io(struct proxy_conn *pc)
{
	proxy_conn_enter(pc);
	proxy_conn_pump(pc);
	proxy_conn_leave(pc);
}

static void proxy_conn_up_event(struct proxy_conn *, short);

void
proxy_conn_upstream_event(struct proxy_conn *pc, short what)
{
	proxy_conn_enter(pc);
	proxy_conn_up_event(pc, what);
	proxy_conn_leave(pc);
}

static void
proxy_conn_up_event(struct proxy_conn *pc, short what)
{
	char *msg;

	if (what & PROXY_SIDE_TIMEOUT) {
		if (pc->state == PROXY_CONN_PIPE &&
		    proxy_conn_now() - pc->last_io <
		    (int64_t)pc->px->idle_timeout * 1000000) {
			proxy_side_enable(&pc->up->side);
			return;
		}
		msg = xprintf("no data from %s for %d s", pc->r.rec.host != NULL ?
		    pc->r.rec.host : "upstream", pc->px->idle_timeout);
		if (!pc->r.resp_started && pc->r.rec.id != 0)
			proxy_conn_respond(pc, 504, "error", msg, msg);
		else
			proxy_conn_close(pc, msg);
		free(msg);
		return;
	}
	if ((what & PROXY_SIDE_ERROR) && pc->up_error == NULL)
		pc->up_error = proxy_side_error(&pc->up->side);
	pc->up_eof = true;
	proxy_conn_pump(pc);
}

/* ---- relaying ---- */

static size_t
proxy_conn_room(struct evbuffer *dst)
{
	size_t len = evbuffer_get_length(dst);

	return len >= PROXY_BUF_HIGH ? 0 : PROXY_BUF_HIGH - len;
}

/* Request body, client to upstream. -1 if the connection is gone. */
static int
proxy_conn_relay_request(struct proxy_conn *pc)
{
	struct proxy_req *r = &pc->r;
	struct evbuffer *src = proxy_conn_cin(pc), *dst = proxy_conn_uout(pc);
	enum proxy_msg_state st;
	size_t used, room;

	while (!r->req_done && (room = proxy_conn_room(dst)) > 0) {
		st = proxy_msg_feed(&pc->rq, src, 0, room, &used);
		if (st == PROXY_MSG_ERROR) {
			proxy_conn_bad_request(pc, pc->rq.error);
			return -1;
		}
		if (r->leak != NULL) {
			proxy_conn_block_leak(pc, "the body");
			return -1;
		}
		/*
		 * Chunked bodies go up re-encoded (by the body callback): our
		 * lenient parser's reading of the framing is the only one.
		 */
		if (r->rechunk)
			evbuffer_drain(src, used);
		else
			evbuffer_remove_buffer(src, dst, used);
		r->req_done = st == PROXY_MSG_DONE;
		if (r->req_done && r->rechunk)
			evbuffer_add(dst, "0\r\n\r\n", 5);
		if (used == 0)
			break;
	}
	if (!r->req_done && pc->client_eof &&
	    evbuffer_get_length(src) == 0) {
		proxy_conn_close(pc, "the client closed in the middle of the "
		    "request body");
		return -1;
	}
	return 0;
}

static void
proxy_conn_response_head(struct proxy_conn *pc)
{
	struct proxy_req *r = &pc->r;
	const char *ct;

	r->rec.status = pc->rs.p.status_code;
	request_set(&r->rec.status_text, proxy_msg_url(&pc->rs));
	free(r->rec.resp_headers);
	r->rec.resp_headers = NULL;
	r->resp_head_kept = true;
	free(r->rec.mime_type);
	r->rec.mime_type = NULL;
	if ((ct = proxy_msg_get(&pc->rs, "content-type")) != NULL)
		r->rec.mime_type = xstrndup(ct, strcspn(ct, "; \t"));
}

/* A whole response arrived: interim ones (100, 103) are followed by another. */
static void
proxy_conn_response_done(struct proxy_conn *pc)
{
	struct proxy_req *r = &pc->r;
	int status = pc->rs.p.status_code;

	if (status == 101 && r->upgrade && pc->rs.p.upgrade) {
		r->resp_done = r->req_done = true;
		if (proxy_scan_active(&pc->scan) && pc->ws == NULL) {
			pc->ws = xmalloc(sizeof *pc->ws);
			proxy_ws_init(pc->ws, pc->ps->patterns, pc->want);
		}
		proxy_conn_set_state(pc, PROXY_CONN_PIPE);
		return;
	}
	if (status >= 100 && status < 200) {
		proxy_msg_reset(&pc->rs);
		pc->rs.skip_body = r->head;
		return;
	}
	r->resp_done = true;
}

/* Response, upstream to client. -1 if the connection is gone. */
static int
proxy_conn_relay_response(struct proxy_conn *pc)
{
	struct proxy_req *r = &pc->r;
	struct evbuffer *src = proxy_conn_uin(pc), *dst = proxy_conn_cout(pc);
	enum proxy_msg_state st = PROXY_MSG_MORE;
	size_t used, room;
	bool had_head;

	while (!r->resp_done && pc->state == PROXY_CONN_RELAY &&
	    (room = proxy_conn_room(dst)) > 0) {
		had_head = pc->rs.head_done;
		st = proxy_msg_feed(&pc->rs, src, 0, room, &used);
		if (st != PROXY_MSG_ERROR && !had_head && pc->rs.head_done &&
		    (pc->rs.error = proxy_msg_check_response(&pc->rs)) != NULL)
			st = PROXY_MSG_ERROR;
		if (st == PROXY_MSG_ERROR)
			break;
		if (used != 0 && !r->resp_started) {
			r->resp_started = true;
			r->rec.ttfb_us = proxy_conn_now() - r->t0;
		}
		evbuffer_remove_buffer(src, dst, used);
		if (!had_head && pc->rs.head_done &&
		    (pc->rs.p.status_code >= 200 || pc->rs.p.status_code == 101))
			proxy_conn_response_head(pc);
		if (st == PROXY_MSG_DONE)
			proxy_conn_response_done(pc);
		else if (used == 0)
			break;
	}
	if (st == PROXY_MSG_ERROR)
		return proxy_conn_relay_failed(pc, true);
	if (r->resp_done || pc->state != PROXY_CONN_RELAY || !pc->up_eof ||
	    evbuffer_get_length(src) != 0)
		return 0;
	/* The upstream closed: the end of a close-delimited body, or a break. */
	if (proxy_msg_eof(&pc->rs) == PROXY_MSG_DONE) {
		r->resp_done = true;
		return 0;
	}
	return proxy_conn_relay_failed(pc, false);
}

/* The upstream broke the response: retry, answer 502, or cut the client off. */
static int
proxy_conn_relay_failed(struct proxy_conn *pc, bool malformed)
{
	char *msg;

	if (malformed)
		msg = xprintf("%s sent a malformed response: %s",
		    pc->r.rec.host, pc->rs.error);
	else if (!pc->r.resp_started && proxy_conn_retry(pc))
		return -1;
	else
		msg = xprintf("%s closed the connection %s%s%s", pc->r.rec.host,
		    pc->r.resp_started ? "in the middle of the response" :
		    "before answering", pc->up_error != NULL ? ": " : "",
		    pc->up_error != NULL ? pc->up_error : "");
	if (pc->r.resp_started)
		proxy_conn_close(pc, msg);
	else
		proxy_conn_respond(pc, 502, "error", msg, msg);
	free(msg);
	return -1;
}

static void
proxy_conn_request_done(struct proxy_conn *pc)
{
	struct proxy_req *r = &pc->r;
	bool reuse, keep;

	reuse = http_should_keep_alive(&pc->rs.p) && !pc->up_eof;
	keep = r->keep_alive && http_should_keep_alive(&pc->rs.p) &&
	    !pc->client_eof;
	/* The client has its answer before the request is recorded. */
	proxy_side_flush(&pc->client);
	proxy_conn_report(pc, true);
	proxy_upstream_release(pc->up, reuse);
	pc->up = NULL;
	if (!keep) {
		proxy_conn_finish(pc);
		return;
	}
	proxy_msg_reset(&pc->rq);
	pc->head_off = 0;
	proxy_conn_set_state(pc, PROXY_CONN_HEAD);
	proxy_conn_pump(pc);
}

static void
proxy_conn_relay(struct proxy_conn *pc)
{
	struct proxy_req *r = &pc->r;

	if (!r->req_done && proxy_conn_relay_request(pc) == -1)
		return;
	if (!r->resp_done && proxy_conn_relay_response(pc) == -1)
		return;
	if (pc->state == PROXY_CONN_PIPE) {
		proxy_conn_pump(pc);
		return;
	}
	if (r->resp_done && !r->req_done) {
		/* Answered before the body ended: the client must reconnect. */
		r->keep_alive = false;
		pc->up_eof = true;
		r->req_done = true;
	}
	if (r->req_done && r->resp_done)
		proxy_conn_request_done(pc);
}

/* ---- tunnels and WebSockets ---- */

static size_t
proxy_conn_move(struct evbuffer *src, struct evbuffer *dst)
{
	size_t n = evbuffer_get_length(src), room = proxy_conn_room(dst);

	if (n > room)
		n = room;
	if (n != 0)
		evbuffer_remove_buffer(src, dst, n);
	return n;
}

static int
proxy_conn_feed_ws(struct proxy_conn *pc, const void *data, size_t len)
{
	return proxy_ws_feed(pc->ws, data, len);
}

static int
proxy_conn_feed_scan(struct proxy_conn *pc, const void *data, size_t len)
{
	return proxy_scan_feed(&pc->scan, data, len);
}

/*
 * Hands what the client sent, as much as fits upstream, to FEED a piece at
 * a time while it answers -1 (go on); *DONE: the bytes it took whole.
 * Returns FEED's last answer.
 */
static int
proxy_conn_feed_up(struct proxy_conn *pc,
    int (*feed)(struct proxy_conn *, const void *, size_t), size_t *done)
{
	struct evbuffer *src = proxy_conn_cin(pc);
	size_t n = evbuffer_get_length(src);
	size_t room = proxy_conn_room(proxy_conn_uout(pc)), len;
	struct evbuffer_iovec v;
	struct evbuffer_ptr pos;
	int found = -1;

	*done = 0;
	if (n > room)
		n = room;
	while (*done < n && found == -1) {
		if (evbuffer_ptr_set(src, &pos, *done, EVBUFFER_PTR_SET) == -1 ||
		    evbuffer_peek(src, (ev_ssize_t)(n - *done), &pos, &v, 1) < 1)
			break;
		len = v.iov_len < n - *done ? v.iov_len : n - *done;
		if ((found = feed(pc, v.iov_base, len)) == -1)
			*done += len;
	}
	return found;
}

/*
 * What a WebSocket's client sends, frames looked at before they go: the
 * bytes moved, or -1 if the connection is closed for what they carry.
 */
static ssize_t
proxy_conn_ws_up(struct proxy_conn *pc)
{
	size_t done;
	char *why;
	int found;

	found = proxy_conn_feed_up(pc, proxy_conn_feed_ws, &done);
	if (found == -2) {
		why = xprintf("closed: %s", pc->ws->error);
		request_set(&pc->r.rec.decision, "deny");
		proxy_conn_close(pc, why);
		free(why);
		return -1;
	}
	if (found >= 0) {
		pc->r.leak = &pc->ps->secrets[found];
		proxy_conn_block_leak(pc, "a WebSocket frame");
		return -1;
	}
	if (done != 0)
		evbuffer_remove_buffer(proxy_conn_cin(pc), proxy_conn_uout(pc),
		    done);
	return (ssize_t)done;
}

/*
 * What a raw tunnel's client sends, looked at for every placeholder
 * before it goes (nothing is swapped in there, and it may be cleartext):
 * the bytes moved, or -1 if the connection is closed for what they carry.
 */
static ssize_t
proxy_conn_raw_up(struct proxy_conn *pc)
{
	size_t done;
	int found;

	found = proxy_conn_feed_up(pc, proxy_conn_feed_scan, &done);
	if (found >= 0) {
		pc->r.leak = &pc->ps->secrets[found];
		proxy_conn_block_leak(pc, "a raw TCP tunnel");
		return -1;
	}
	if (done != 0)
		evbuffer_remove_buffer(proxy_conn_cin(pc), proxy_conn_uout(pc),
		    done);
	return (ssize_t)done;
}

/* Why a tunnel's TLS may not ask for server name SNI, or NULL. */
static char *
proxy_conn_tunnel_sni(struct proxy_conn *pc, char *sni)
{
	struct proxy_req *r = &pc->r;
	const char *rule = NULL;
	char *hr, *why;

	if (!proxy_host_valid(sni))
		return xstrdup("the tunnel's TLS asks for a server name (SNI) "
		    "that is not a valid host name");
	if (proxy_conn_same_host(sni, r->rec.host))
		return NULL;
	if (!proxy_host_is_addr(r->rec.host) || proxy_host_is_addr(sni))
		return xprintf("the tunnel's TLS asks for %s (SNI), but the "
		    "tunnel goes to %s", sni, r->rec.host);
	if (proxy_policy_check(pc->ps->policy, sni, r->rec.port, NULL, NULL,
	    &rule) == PROXY_TUNNEL)
		return NULL;
	hr = proxy_host_rule(sni, r->rec.port, "tunnel");
	why = xprintf("the tunnel to %s asks for %s (SNI), which no tunnel "
	    "rule names; add `tunnel %s`", r->rec.host, sni, hr);
	free(hr);
	return why;
}

/* Why a tunnel that is not TLS is closed; a redirected one is told the rule for raw TCP. */
static char *
proxy_conn_not_hello(const struct proxy_conn *pc, const char *bad)
{
	char *hr, *why;

	if (!pc->transparent)
		return xprintf("closed: a tunnel carries TLS, and what the "
		    "client sent is not a TLS hello agentmux can read: %s",
		    bad != NULL ? bad : "it ended first");
	hr = proxy_host_rule(pc->dest_host, pc->dest_port, "tunnel");
	why = xprintf("closed: a tunnel rule without a port carries TLS for "
	    "its host only, and what the client sent is not a TLS hello "
	    "agentmux can read (%s); add `tunnel %s` to let raw TCP through",
	    bad != NULL ? bad : "it ended first", hr);
	free(hr);
	return why;
}

/*
 * A tunnel is not decrypted, but its first TLS record says which server
 * it is for: that must be the tunnel's host. 1 once checked, 0 while the
 * record is still coming, -1 if the connection was closed for it.
 */
static int
proxy_conn_tunnel_hello(struct proxy_conn *pc)
{
	struct evbuffer *in = proxy_conn_cin(pc);
	size_t len = evbuffer_get_length(in);
	const char *bad = NULL;
	char *sni = NULL, *why = NULL;
	unsigned char *p;
	int rc;

	if (len > 5 + 16384)
		len = 5 + 16384;
	if (len == 0 || (p = evbuffer_pullup(in, (ev_ssize_t)len)) == NULL)
		rc = 0;
	else
		rc = proxy_tls_hello_sni(p, len, &sni, &bad);
	if (rc == 0 && !pc->client_eof)
		return 0;
	if (rc == 0 && len == 0) {
		pc->hello_seen = true;   /* it left without a word */
		return 1;
	}
	if (rc != 1)
		why = proxy_conn_not_hello(pc, bad);
	else if (sni != NULL && (why = proxy_conn_tunnel_sni(pc, sni)) != NULL)
		request_set(&pc->r.rec.decision, "deny");
	free(sni);
	if (why != NULL) {
		free(pc->r.rec.rule);
		pc->r.rec.rule = xstrdup("SNI check (a tunnel's TLS names its "
		    "host)");
		proxy_conn_close(pc, why);
		free(why);
		return -1;
	}
	pc->hello_seen = true;
	return 1;
}

static void
proxy_conn_pipe(struct proxy_conn *pc)
{
	struct proxy_req *r = &pc->r;
	size_t down;
	ssize_t up;

	if (!r->upgrade && !pc->hello_seen && proxy_conn_tunnel_hello(pc) != 1) {
		if (!pc->dead && pc->up_eof)
			proxy_conn_close(pc, "the upstream closed before the "
			    "client's TLS hello");
		return;
	}
	if (pc->ws != NULL) {
		if ((up = proxy_conn_ws_up(pc)) == -1)
			return;
	} else if (pc->raw && proxy_scan_active(&pc->scan)) {
		if ((up = proxy_conn_raw_up(pc)) == -1)
			return;
	} else
		up = (ssize_t)proxy_conn_move(proxy_conn_cin(pc),
		    proxy_conn_uout(pc));
	down = proxy_conn_move(proxy_conn_uin(pc), proxy_conn_cout(pc));
	r->rec.bytes_up += (int64_t)up;
	r->rec.bytes_down += (int64_t)down;
	if (up != 0 || down != 0)
		pc->last_io = proxy_conn_now();
	proxy_conn_flush(pc);
	if (pc->client_eof && evbuffer_get_length(proxy_conn_cin(pc)) == 0) {
		if (proxy_side_pending(&pc->up->side) == 0)
			proxy_conn_close(pc, NULL);
		return;
	}
	if (pc->up_eof && evbuffer_get_length(proxy_conn_uin(pc)) == 0)
		proxy_conn_finish(pc);
}

/* ---- CONNECT ---- */

static void
proxy_conn_tls_ready(struct proxy_conn *pc)
{
	struct timeval tv = { pc->px->client_timeout, 0 };

	proxy_conn_set_state(pc, PROXY_CONN_HEAD);
	proxy_msg_reset(&pc->rq);
	proxy_conn_arm(pc, &tv);
	proxy_conn_pump(pc);
}

static void proxy_conn_client_io_cb(void *);
static void proxy_conn_client_event_cb(void *, short);

static void
proxy_conn_client_setup(struct proxy_conn *pc)
{
	proxy_side_setcb(&pc->client, proxy_conn_client_io_cb,
	    proxy_conn_client_event_cb, pc);
	proxy_side_enable(&pc->client);
}

/*
 * Why the tunnel rule RULE does not cover HOST:PORT, or NULL: a rule that
 * names no port passes TLS to port 443 only. Anywhere else the client's
 * first record (a hello naming the host, checked) could carry any bytes
 * to whatever listens there: a line protocol would read them as commands.
 */
static char *
proxy_conn_tunnel_port(const char *rule, bool names_port, const char *host,
    int port)
{
	if (names_port || port == 443)
		return NULL;
	return xprintf("the rule `%s` names no port, so it passes TLS to port "
	    "443 only; add `tunnel %s:%d` to tunnel port %d", rule, host, port,
	    port);
}

/* The 200 went out: from here the client speaks TLS to our leaf certificate. */
static void
proxy_conn_start_tls(struct proxy_conn *pc)
{
	struct proxy *px = pc->px;
	struct timeval tv = { px->client_timeout, 0 };
	char *cause = NULL;
	SSL *ssl;

	if ((ssl = proxy_tls_accept_ssl(px, pc->dest_host, &cause)) == NULL) {
		proxy_conn_close(pc, cause);
		free(cause);
		return;
	}
	/* Whatever the client sent early is read by TLS first. */
	if (proxy_side_tls(&pc->client, ssl, true) == -1) {
		SSL_free(ssl);
		proxy_conn_close(pc, "out of memory");
		return;
	}
	pc->tls = true;
	proxy_conn_client_setup(pc);
	proxy_conn_set_state(pc, PROXY_CONN_HANDSHAKE);
	proxy_conn_arm(pc, &tv);
}

static void
proxy_conn_intercept(struct proxy_conn *pc)
{
	enum proxy_msg_state st;

	st = proxy_msg_after_head(&pc->rq, proxy_conn_cin(pc), pc->head_off);
	pc->head_off = 0;
	if (st == PROXY_MSG_ERROR) {
		proxy_conn_bad_request(pc, pc->rq.error);
		return;
	}
	pc->dest_host = xstrdup(pc->r.rec.host);
	pc->dest_port = pc->r.rec.port;
	/* Requests inside are recorded one by one; the CONNECT itself is not. */
	if ((uint64_t)pc->r.rec.id == pc->ps->next_request)
		pc->ps->next_request--;   /* its number goes to the next request */
	proxy_conn_req_clear(&pc->r);
	evbuffer_add_printf(proxy_conn_cout(pc),
	    "HTTP/1.1 200 Connection established\r\n\r\n");
	proxy_side_set_low(&pc->client, 0);
	proxy_conn_set_state(pc, PROXY_CONN_CONNECTED);
	proxy_side_flush(&pc->client);
	if (proxy_side_pending(&pc->client) == 0)
		proxy_conn_start_tls(pc);
}

static void
proxy_conn_tunnel(struct proxy_conn *pc, const char *rule)
{
	enum proxy_msg_state st;

	st = proxy_msg_after_head(&pc->rq, proxy_conn_cin(pc), pc->head_off);
	pc->head_off = 0;
	if (st == PROXY_MSG_ERROR) {
		proxy_conn_bad_request(pc, pc->rq.error);
		return;
	}
	request_set(&pc->r.rec.scheme, "tunnel");
	request_set(&pc->r.rec.decision, "tunnel");
	pc->r.rec.rule = rule != NULL ? xstrdup(rule) : NULL;
	pc->r.req_done = true;
	proxy_conn_set_state(pc, PROXY_CONN_UPSTREAM);
	proxy_conn_get_upstream(pc, false);
}

static void
proxy_conn_connect(struct proxy_conn *pc)
{
	const char *url = proxy_msg_url(&pc->rq), *why, *rule = NULL;
	struct http_parser_url u;
	struct proxy_req *r;
	enum proxy_verdict v;
	bool names_port;
	char *wide, *body;

	proxy_conn_req_begin(pc, "CONNECT", "https");
	r = &pc->r;
	http_parser_url_init(&u);
	if ((why = proxy_msg_check_request(&pc->rq)) == NULL &&
	    (http_parser_parse_url(url, strlen(url), 1, &u) != 0 ||
	    !(u.field_set & (1 << UF_PORT)) || u.port == 0))
		why = "CONNECT needs HOST:PORT";
	if (why == NULL) {
		r->rec.host = xstrndup(url + u.field_data[UF_HOST].off,
		    u.field_data[UF_HOST].len);
		r->rec.port = u.port;
		r->rec.path = xstrdup("");
		if (!proxy_host_valid(r->rec.host))
			why = "the host name is not valid";
	}
	if (why != NULL || pc->tls || pc->transparent) {
		proxy_conn_bad_request(pc, why != NULL ? why :
		    "CONNECT inside a tunnel");
		return;
	}
	/* The name goes to DNS and to the upstream's TLS. */
	if (proxy_conn_want(pc, true) && proxy_conn_scan_text(pc, url,
	    strlen(url))) {
		proxy_conn_block_leak(pc, "the CONNECT target");
		return;
	}
	v = proxy_policy_check_dest(pc->ps->policy, r->rec.host, r->rec.port,
	    &rule, &names_port);
	if (v == PROXY_TUNNEL && (wide = proxy_conn_tunnel_port(rule,
	    names_port, r->rec.host, r->rec.port)) != NULL) {
		body = xprintf("agentmux: refused: %s", wide);
		pc->r.rec.rule = xstrdup(rule);
		request_set(&pc->r.rec.decision, "deny");
		proxy_conn_deny(pc, wide, body);
		free(body);
		free(wide);
	} else if (v == PROXY_TUNNEL)
		proxy_conn_tunnel(pc, rule);
	else if (v == PROXY_ALLOW || (v == PROXY_UNKNOWN && pc->ps->ask &&
	    !pc->ps->dying))
		proxy_conn_intercept(pc);   /* decided per request inside */
	else if (v == PROXY_DENY)
		proxy_conn_deny_rule(pc, rule);
	else
		proxy_conn_deny_unknown(pc, "no rule covers it");
}

/* ---- reading heads ---- */

static void
proxy_conn_read_head(struct proxy_conn *pc)
{
	struct evbuffer *in = proxy_conn_cin(pc);
	struct timeval tv = { pc->px->client_timeout, 0 };
	enum proxy_msg_state st;
	size_t used, len = evbuffer_get_length(in);

	if (len > pc->head_off && !evtimer_pending(pc->timer, NULL))
		proxy_conn_arm(pc, &tv);
	if (len <= pc->head_off)
		goto eof;
	/* Feed only what the parser has not seen yet. */
	st = proxy_msg_feed(&pc->rq, in, pc->head_off, len - pc->head_off,
	    &used);
	pc->head_off += used;
	if (st == PROXY_MSG_ERROR) {
		proxy_conn_bad_request(pc, pc->rq.error);
		return;
	}
	if (st != PROXY_MSG_HEAD)
		goto eof;
	evtimer_del(pc->timer);
	if (pc->rq.p.method == HTTP_CONNECT)
		proxy_conn_connect(pc);
	else
		proxy_conn_request(pc);
	return;
eof:
	if (pc->client_eof)
		proxy_conn_close(pc, pc->head_off == 0 ? NULL :
		    "the client closed in the middle of a request head");
}

/* ---- the client side ---- */

static void
proxy_conn_pump(struct proxy_conn *pc)
{
	switch (pc->state) {
	case PROXY_CONN_HEAD:
		proxy_conn_read_head(pc);
		break;
	case PROXY_CONN_RELAY:
		proxy_conn_relay(pc);
		break;
	case PROXY_CONN_PIPE:
		proxy_conn_pipe(pc);
		break;
	case PROXY_CONN_CONNECTED:
		proxy_side_flush(&pc->client);
		if (proxy_side_pending(&pc->client) == 0)
			proxy_conn_start_tls(pc);
		break;
	case PROXY_CONN_CLOSING:
		if (evbuffer_get_length(proxy_conn_cin(pc)) != 0)
			evbuffer_drain(proxy_conn_cin(pc),
			    evbuffer_get_length(proxy_conn_cin(pc)));
		proxy_side_flush(&pc->client);
		if (proxy_side_pending(&pc->client) == 0 &&
		    !evtimer_pending(pc->timer, NULL))
			proxy_conn_linger(pc);
		if (pc->client_eof && proxy_side_pending(&pc->client) == 0)
			proxy_conn_close(pc, NULL);
		break;
	case PROXY_CONN_SNIFF:
		proxy_conn_sniff(pc);
		break;
	case PROXY_CONN_HELD:
	case PROXY_CONN_UPSTREAM:
	case PROXY_CONN_HANDSHAKE:
		if (pc->client_eof)
			proxy_conn_close(pc, "the client went away");
		break;
	}
}

static void
proxy_conn_client_io_cb(void *arg)
{
	struct proxy_conn *pc = arg;

	proxy_conn_enter(pc);
	proxy_conn_pump(pc);
	proxy_conn_leave(pc);
}

static void
proxy_conn_client_event(struct proxy_conn *pc, short what)
{
	char *why;

	if (what & PROXY_SIDE_CONNECTED) {
		evtimer_del(pc->timer);
		proxy_conn_tls_ready(pc);
		return;
	}
	if (what & PROXY_SIDE_TIMEOUT) {
		if (pc->state == PROXY_CONN_PIPE && proxy_conn_now() -
		    pc->last_io < (int64_t)pc->px->idle_timeout * 1000000) {
			proxy_side_enable(&pc->client);
			return;
		}
		proxy_conn_close(pc, pc->state == PROXY_CONN_HEAD ? NULL :
		    "the client was idle too long");
		return;
	}
	if (pc->state == PROXY_CONN_HANDSHAKE) {
		why = proxy_side_error(&pc->client);
		proxy_conn_req_begin(pc, "CONNECT", "https");
		pc->r.rec.host = xstrdup(pc->dest_host);
		pc->r.rec.port = pc->dest_port;
		pc->r.rec.path = xstrdup("");
		pc->r.rec.error = xprintf("TLS with the client failed (does it "
		    "trust the agentmux CA?): %s", why);
		free(why);
		proxy_conn_close(pc, NULL);
		return;
	}
	/* In a tunnel or WebSocket, however the client leaves, it is the end. */
	if ((what & PROXY_SIDE_ERROR) && pc->state != PROXY_CONN_PIPE &&
	    proxy_side_failed(&pc->client)) {
		/* A reset: nothing more can be written to this client. */
		why = proxy_side_is_tls(&pc->client) ?
		    proxy_side_error(&pc->client) :
		    xprintf("the client connection failed: %s",
		    strerror(pc->client.err));
		proxy_conn_close(pc, pc->state == PROXY_CONN_HEAD &&
		    pc->head_off == 0 ? NULL : why);
		free(why);
		return;
	}
	pc->client_eof = true;
	proxy_conn_pump(pc);
}

static void
proxy_conn_client_event_cb(void *arg, short what)
{
	struct proxy_conn *pc = arg;

	proxy_conn_enter(pc);
	proxy_conn_client_event(pc, what);
	proxy_conn_leave(pc);
}

static void
proxy_conn_timer(struct proxy_conn *pc)
{
	char *msg;

	if (pc->state == PROXY_CONN_HEAD) {
		msg = xprintf("no complete request head within %d s",
		    pc->px->client_timeout);
		proxy_conn_close(pc, pc->head_off == 0 &&
		    evbuffer_get_length(proxy_conn_cin(pc)) == 0 ? NULL : msg);
		free(msg);
	} else if (pc->state == PROXY_CONN_HANDSHAKE)
		proxy_conn_close(pc, "the TLS handshake with the client timed "
		    "out");
	else if (pc->state == PROXY_CONN_SNIFF)
		proxy_conn_refuse_raw(pc, "it sent nothing");
	else
		proxy_conn_close(pc, NULL);   /* the linger is over */
}

static void
proxy_conn_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proxy_conn *pc = arg;

	proxy_conn_enter(pc);
	proxy_conn_timer(pc);
	proxy_conn_leave(pc);
}

bool
proxy_conn_evict(struct proxy_session *ps)
{
	struct proxy_conn *pc, *oldest = NULL;

	TAILQ_FOREACH(pc, &ps->conns, entry) {
		if (pc->state == PROXY_CONN_HEAD && !pc->dead &&
		    (oldest == NULL || pc->head_since < oldest->head_since))
			oldest = pc;
	}
	if (oldest == NULL)
		return false;
	proxy_conn_close(oldest, oldest->head_off == 0 ? NULL : "closed to "
	    "make room for a new connection: no complete request head yet");
	return true;
}

/*
 * The session is paused (its jail frozen) or resumed: the connection's
 * timeouts stop, and go on with what was left; the idle time it counts
 * does not include the pause.
 */
static void
proxy_conn_pause_one(struct proxy_conn *pc, bool hold)
{
	int64_t paused;

	if (pc->dead || (pc->held_since != 0) == hold)
		return;
	proxy_side_hold(&pc->client, hold);
	if (pc->up != NULL)
		proxy_side_hold(&pc->up->side, hold);
	if (hold) {
		pc->held_since = util_mono_us();
		if (proxy_timer_left(pc->timer, &pc->timer_left))
			evtimer_del(pc->timer);
		return;
	}
	paused = util_mono_us() - pc->held_since;
	pc->held_since = 0;
	pc->last_io += paused;
	pc->head_since += paused;
	if (evutil_timerisset(&pc->timer_left))
		evtimer_add(pc->timer, &pc->timer_left);
	evutil_timerclear(&pc->timer_left);
}

/* Resumed: what waited for it goes on (and may close the connection). */
static void
proxy_conn_go(struct proxy_conn *pc)
{
	enum proxy_conn_go go = pc->held_go;

	pc->held_go = PROXY_CONN_GO_NONE;
	proxy_conn_enter(pc);
	if (go == PROXY_CONN_GO_GET) {
		proxy_conn_get_upstream(pc, pc->held_pooled);
		if (!pc->dead && pc->up != NULL &&
		    pc->up->state == PROXY_UP_READY)
			proxy_conn_ready(pc);
	} else if (go == PROXY_CONN_GO_READY && pc->up != NULL)
		proxy_conn_ready(pc);
	proxy_conn_leave(pc);
}

/* The first connection of PS that waits to go on, or NULL. */
static struct proxy_conn *
proxy_conn_held(struct proxy_session *ps)
{
	struct proxy_conn *pc;

	TAILQ_FOREACH(pc, &ps->conns, entry) {
		/* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): a closed one left the list before it was freed (proxy_conn_close) */
		if (!pc->dead && pc->held_go != PROXY_CONN_GO_NONE)
			return pc;
	}
	return NULL;
}

void
proxy_conn_pause(struct proxy_session *ps, bool hold)
{
	struct proxy_conn *pc;

	/* Nothing is closed here: the list stays as it is. */
	TAILQ_FOREACH(pc, &ps->conns, entry)
		proxy_conn_pause_one(pc, hold);
	/*
	 * One going on may close (and leave the list): the next is looked for
	 * from the start each time, never through one that went on.
	 */
	while (!hold && (pc = proxy_conn_held(ps)) != NULL)
		proxy_conn_go(pc);
}

/* A new client connection on FD, waiting for its first bytes. */
static struct proxy_conn *
proxy_conn_new(struct proxy_session *ps, int fd)
{
	struct proxy *px = ps->px;
	struct proxy_conn *pc = xcalloc(1, sizeof *pc);
	struct timeval tv = { px->client_timeout, 0 };
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	pc->ps = ps;
	pc->px = px;
	pc->hold.pc = pc;
	if (proxy_side_open(&pc->client, px->base, fd) == -1)
		fatalx("out of memory for a connection");
	pc->timer = evtimer_new(px->base, proxy_conn_timer_cb, pc);
	pc->wake = event_new(px->base, -1, 0, proxy_conn_wake_cb, pc);
	proxy_msg_init(&pc->rq, HTTP_REQUEST, true);
	proxy_msg_init(&pc->rs, HTTP_RESPONSE, false);
	pc->rq.on_body = proxy_conn_on_req_body;
	pc->rq.arg = pc;
	pc->rs.on_body = proxy_conn_on_resp_body;
	pc->rs.arg = pc;
	pc->want = xcalloc(ps->nsecrets + 1, sizeof *pc->want);
	proxy_scan_init(&pc->scan);
	TAILQ_INSERT_TAIL(&ps->conns, pc, entry);
	ps->nconns++;
	proxy_conn_client_setup(pc);
	pc->head_since = util_mono_us();
	proxy_conn_arm(pc, &tv);
	return pc;
}

void
proxy_conn_accept(struct proxy_session *ps, int fd)
{
	struct proxy_conn *pc = proxy_conn_new(ps, fd);

	proxy_conn_set_state(pc, PROXY_CONN_HEAD);
	proxy_side_read_timeout(&pc->client, NULL);
}

/* ---- transparent interception ---- */

/* The record of a redirected connection as a whole (a tunnel, a refusal). */
static void
proxy_conn_raw_begin(struct proxy_conn *pc, const char *scheme)
{
	struct proxy_req *r = &pc->r;

	if (r->rec.id != 0)
		return;
	proxy_conn_req_begin(pc, "CONNECT", scheme);
	r->rec.host = xstrdup(pc->dest_host);
	r->rec.port = pc->dest_port;
	r->rec.path = xstrdup("");
	pc->raw = true;
}

/* Not HTTP, not TLS, and no tunnel rule: refused, with the rule that would let it through. */
static void
proxy_conn_refuse_raw(struct proxy_conn *pc, const char *what)
{
	char *hr = proxy_host_rule(pc->dest_host, pc->dest_port, "tunnel");
	char *why;

	why = xprintf("%s that agentmux can judge (HTTP or TLS), and no "
	    "tunnel rule names %s; add `tunnel %s` to let raw TCP through",
	    what, hr, hr);
	proxy_conn_raw_begin(pc, "tcp");
	request_set(&pc->r.rec.decision, "deny");
	proxy_conn_close(pc, why);
	free(why);
	free(hr);
}

/* What a redirected client sends first says what it speaks. */
static void
proxy_conn_sniff(struct proxy_conn *pc)
{
	struct timeval tv = { pc->px->client_timeout, 0 };
	unsigned char c;

	if (evbuffer_copyout(proxy_conn_cin(pc), &c, 1) != 1) {
		if (pc->client_eof)
			proxy_conn_close(pc, NULL);
		return;
	}
	evtimer_del(pc->timer);
	if (c == 0x16) {            /* a TLS handshake record */
		proxy_conn_start_tls(pc);
		return;
	}
	if (c < 'A' || c > 'Z') {
		proxy_conn_refuse_raw(pc, "it speaks something other than "
		    "HTTP or TLS");
		return;
	}
	proxy_conn_set_state(pc, PROXY_CONN_HEAD);
	proxy_conn_arm(pc, &tv);
	proxy_conn_read_head(pc);
}

/* A tunnel rule names the destination: raw bytes both ways, recorded as a whole. */
static void
proxy_conn_raw_tunnel(struct proxy_conn *pc, const char *rule, bool raw_ok)
{
	proxy_conn_raw_begin(pc, "tunnel");
	request_set(&pc->r.rec.decision, "tunnel");
	pc->r.rec.rule = rule != NULL ? xstrdup(rule) : NULL;
	pc->r.req_done = true;
	/*
	 * Raw TCP (ssh speaks first from the server) only where the rule
	 * names the port (`tunnel HOST:PORT`); a host-wide tunnel is for
	 * clients that pin certificates: TLS whose server name must be the
	 * host's, on every port, as in a CONNECT.
	 */
	pc->hello_seen = raw_ok;
	proxy_scan_reset(&pc->scan, pc->ps->patterns, NULL);
	evtimer_del(pc->timer);
	proxy_conn_set_state(pc, PROXY_CONN_UPSTREAM);
	proxy_conn_get_upstream(pc, false);
}

void
proxy_conn_accept_transparent(struct proxy_session *ps, int fd,
    const char *name, int port)
{
	struct proxy_conn *pc = proxy_conn_new(ps, fd);
	const char *rule = NULL;
	enum proxy_verdict v;
	bool names_port;
	char *why;

	pc->transparent = true;
	pc->dest_host = xstrdup(name);
	pc->dest_port = port;
	proxy_conn_set_state(pc, PROXY_CONN_SNIFF);
	v = proxy_policy_check_dest(ps->policy, name, port, &rule, &names_port);
	if (v == PROXY_TUNNEL && (why = proxy_conn_tunnel_port(rule,
	    names_port, name, port)) != NULL) {
		proxy_conn_raw_begin(pc, "tcp");
		request_set(&pc->r.rec.decision, "deny");
		pc->r.rec.rule = xstrdup(rule);
		proxy_conn_close(pc, why);
		free(why);
	} else if (v == PROXY_TUNNEL)
		proxy_conn_raw_tunnel(pc, rule, names_port);
	else if (v == PROXY_DENY) {
		proxy_conn_raw_begin(pc, "tcp");
		request_set(&pc->r.rec.decision, "deny");
		pc->r.rec.rule = xstrdup(rule);
		why = xprintf("denied by %s", rule);
		proxy_conn_close(pc, why);
		free(why);
	} else if (v == PROXY_UNKNOWN && (!ps->ask || ps->dying)) {
		proxy_conn_raw_begin(pc, "tcp");
		request_set(&pc->r.rec.decision, "deny");
		why = proxy_host_rule(name, port, "tunnel");
		pc->r.rec.error = xprintf("no rule covers it; add `allow %s`, or "
		    "`tunnel %s` for what is not HTTP", why, why);
		proxy_conn_close(pc, NULL);
		free(why);
	}
	/* Else it is decided per request, as inside a CONNECT. */
}
