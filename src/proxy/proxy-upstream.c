/* Upstream connections: resolved at request time, checked by the SSRF guard, verified TLS, pooled when idle. */
#include <sys/socket.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/dns.h>
#include <event2/event.h>
#include <event2/util.h>

#include "proxy/proxy-int.h"

/* A lookup in flight; outlives its upstream if that gives up first. */
struct proxy_dns {
	struct proxy_upstream *up;
	struct evdns_getaddrinfo_request *req;
	int result;
	struct evutil_addrinfo *ai;
	bool answered;
};

static void proxy_upstream_try_next(struct proxy_upstream *);

static void
proxy_upstream_fail(struct proxy_upstream *up, int status, const char *reason)
{
	struct proxy_conn *pc = up->pc;

	/* The connection frees UP: nothing may touch it after this. */
	proxy_conn_upstream_failed(pc, status, reason);
}

/* Data from the upstream, or room towards it. */
static void
proxy_upstream_io_cb(void *arg)
{
	struct proxy_upstream *up = arg;

	if (up->pc != NULL)
		proxy_conn_upstream_io(up->pc);
}

static void
proxy_upstream_event_cb(void *arg, short what)
{
	struct proxy_upstream *up = arg;

	if (up->pc != NULL)
		proxy_conn_upstream_event(up->pc, what);
}

/* An idle pooled connection that speaks or closes is of no further use. */
static void
proxy_upstream_idle_io_cb(void *arg)
{
	struct proxy_upstream *up = arg;

	if (evbuffer_get_length(up->side.in) != 0)
		proxy_upstream_free(up);
}

static void
proxy_upstream_idle_event_cb(void *arg, short what)
{
	proxy_upstream_free(arg);
}

static void
proxy_upstream_use(struct proxy_upstream *up)
{
	struct proxy *px = up->ps->px;
	struct timeval tv = { px->idle_timeout, 0 };

	proxy_side_setcb(&up->side, proxy_upstream_io_cb,
	    proxy_upstream_event_cb, up);
	proxy_side_read_timeout(&up->side, &tv);
	proxy_side_enable(&up->side);
}

static void
proxy_upstream_ready(struct proxy_upstream *up)
{
	evtimer_del(up->timer);
	up->state = PROXY_UP_READY;
	proxy_upstream_use(up);
	proxy_conn_upstream_ready(up->pc);
}

static void
proxy_upstream_handshake_cb(void *arg, short what)
{
	struct proxy_upstream *up = arg;
	char *why, *msg;

	if (what & PROXY_SIDE_CONNECTED) {
		proxy_upstream_ready(up);
		return;
	}
	why = proxy_side_error(&up->side);
	msg = xprintf("TLS with %s:%d (%s) failed: %s%s", up->host, up->port,
	    up->addr, why, strstr(why, "verify") != NULL ? "; if the server's "
	    "certificate comes from a private CA, name it with [proxy] "
	    "upstream_ca in your config" : "");
	free(why);
	proxy_upstream_fail(up, 502, msg);
	free(msg);
}

static int
proxy_upstream_side(struct proxy_upstream *up, char **cause)
{
	struct proxy *px = up->ps->px;
	SSL *ssl;

	if (proxy_side_open(&up->side, px->base, up->fd) == -1) {
		*cause = xstrdup("out of memory");
		return -1;
	}
	up->fd = -1;   /* the side has it */
	if (!up->tls)
		return 0;
	if ((ssl = proxy_tls_connect_ssl(px, up->host, cause)) == NULL)
		return -1;
	if (proxy_side_tls(&up->side, ssl, false) == -1) {
		SSL_free(ssl);
		*cause = xstrdup("out of memory");
		return -1;
	}
	return 0;
}

static void
proxy_upstream_connected_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proxy_upstream *up = arg;
	int err = 0;
	socklen_t len = sizeof err;
	char *cause = NULL;

	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == -1)
		err = errno;
	if (err != 0) {
		free(up->lasterr);
		up->lasterr = xprintf("%s: %s", up->addr, strerror(err));
		close(up->fd);
		up->fd = -1;
		proxy_upstream_try_next(up);
		return;
	}
	if (proxy_upstream_side(up, &cause) == -1) {
		proxy_upstream_fail(up, 502, cause);
		free(cause);
		return;
	}
	if (!up->tls) {
		proxy_upstream_ready(up);
		return;
	}
	up->state = PROXY_UP_HANDSHAKE;
	proxy_side_setcb(&up->side, NULL, proxy_upstream_handshake_cb, up);
}

/* Starts connecting to A; -1 (with up->lasterr) if that failed at once. */
static int
proxy_upstream_connect(struct proxy_upstream *up, struct evutil_addrinfo *a)
{
	struct proxy *px = up->ps->px;
	int one = 1;

	proxy_addr_str(a->ai_addr, up->addr, sizeof up->addr);
	up->fd = socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0);
	if (up->fd == -1)
		goto fail;
	setsockopt(up->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	if (connect(up->fd, a->ai_addr, a->ai_addrlen) == -1 &&
	    errno != EINPROGRESS)
		goto fail;
	if (up->conn_ev != NULL)
		event_free(up->conn_ev);
	up->conn_ev = event_new(px->base, up->fd, EV_WRITE,
	    proxy_upstream_connected_cb, up);
	event_add(up->conn_ev, NULL);
	up->state = PROXY_UP_CONNECTING;
	return 0;
fail:
	free(up->lasterr);
	up->lasterr = xprintf("%s: %s", up->addr, strerror(errno));
	if (up->fd != -1)
		close(up->fd);
	up->fd = -1;
	return -1;
}

static void
proxy_upstream_try_next(struct proxy_upstream *up)
{
	struct evutil_addrinfo *a;
	char *why, *msg;

	while ((a = up->next) != NULL) {
		up->next = a->ai_next;
		why = proxy_addr_refuse(up->ps->policy, up->host, a->ai_addr,
		    up->named || up->named_once);
		if (why != NULL) {
			if (up->refused == NULL)
				up->refused = why;
			else
				free(why);
			continue;
		}
		if (proxy_upstream_connect(up, a) == 0) {
			memcpy(&up->sa, a->ai_addr, a->ai_addrlen);
			return;
		}
	}
	if (up->lasterr != NULL) {
		msg = xprintf("cannot connect to %s:%d (%s); check that the "
		    "server is up and listens on that port", up->host, up->port,
		    up->lasterr);
		proxy_upstream_fail(up, 502, msg);
		free(msg);
	} else if (up->refused != NULL)
		proxy_upstream_fail(up, 403, up->refused);
	else {
		msg = xprintf("%s has no address to connect to", up->host);
		proxy_upstream_fail(up, 502, msg);
		free(msg);
	}
}

/* Why a name did not resolve, in words, and which resolver was asked. */
static char *
proxy_upstream_unresolved(struct proxy_upstream *up, int result)
{
	const char *why;
	int n = evdns_base_count_nameservers(up->ps->px->dns);

	switch (result) {
	case EVUTIL_EAI_NONAME:
		why = "no such host (the name does not exist, or has no address)";
		break;
	case EVUTIL_EAI_AGAIN:
		why = "the DNS servers did not answer in time";
		break;
	case EVUTIL_EAI_FAIL:
		why = "the DNS servers failed to answer";
		break;
	default:
		why = evutil_gai_strerror(result);
		break;
	}
	if (n == 0)
		return xprintf("cannot resolve %s: %s (asked /etc/hosts only: "
		    "/etc/resolv.conf names no usable nameserver); check the "
		    "name, or the host's DNS set-up", up->host, why);
	return xprintf("cannot resolve %s: %s (asked the %d nameserver%s in "
	    "/etc/resolv.conf and /etc/hosts); check the name, or the host's "
	    "DNS", up->host, why, n, n == 1 ? "" : "s");
}

static void
proxy_upstream_resolved(struct proxy_upstream *up, int result,
    struct evutil_addrinfo *ai)
{
	char *msg;

	if (result != 0) {
		msg = proxy_upstream_unresolved(up, result);
		proxy_upstream_fail(up, 502, msg);
		free(msg);
		return;
	}
	up->ai = up->next = ai;
	proxy_upstream_try_next(up);
}

static void
proxy_upstream_dns_cb(int result, struct evutil_addrinfo *ai, void *arg)
{
	struct proxy_dns *d = arg;
	struct proxy_upstream *up = d->up;

	if (up == NULL) {                 /* the upstream went away */
		if (ai != NULL)
			evutil_freeaddrinfo(ai);
		free(d);
		return;
	}
	if (d->req == NULL && !d->answered) {
		/* Answered inside evdns_getaddrinfo: finish from the loop. */
		d->answered = true;
		d->result = result;
		d->ai = ai;
		event_active(up->defer, EV_TIMEOUT, 1);
		return;
	}
	up->dns = NULL;
	free(d);
	proxy_upstream_resolved(up, result, ai);
}

static void
proxy_upstream_defer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proxy_upstream *up = arg;
	struct proxy_dns *d = up->dns;
	struct evutil_addrinfo *ai = d->ai;
	int result = d->result;

	up->dns = NULL;
	free(d);
	proxy_upstream_resolved(up, result, ai);
}

static void
proxy_upstream_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proxy_upstream *up = arg;
	char *msg;

	msg = xprintf("connecting to %s:%d timed out after %d s", up->host,
	    up->port, up->ps->px->connect_timeout);
	proxy_upstream_fail(up, 504, msg);
	free(msg);
}

static void
proxy_upstream_resolve(struct proxy_upstream *up, const char *name, int port)
{
	struct evutil_addrinfo hints;
	struct evdns_getaddrinfo_request *req;
	struct proxy_dns *d = xcalloc(1, sizeof *d);
	char service[16];

	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_protocol = IPPROTO_TCP;
	snprintf(service, sizeof service, "%d", port);
	d->up = up;
	up->dns = d;
	up->state = PROXY_UP_RESOLVING;
	req = evdns_getaddrinfo(up->ps->px->dns, name, service, &hints,
	    proxy_upstream_dns_cb, d);
	if (req != NULL && !d->answered)
		d->req = req;
}

/* An idle connection to the same place that the SSRF guard still allows now. */
static struct proxy_upstream *
proxy_upstream_from_pool(struct proxy_session *ps, const struct proxy_want *w)
{
	struct proxy_upstream *up;
	char *why;

	TAILQ_FOREACH(up, &ps->pool, entry) {
		if (up->tls != w->tls || up->port != w->port ||
		    strcmp(up->host, w->host) != 0)
			continue;
		why = proxy_addr_refuse(ps->policy, up->host,
		    (struct sockaddr *)&up->sa, up->named || w->named);
		if (why != NULL) {
			free(why);
			return NULL;
		}
		TAILQ_REMOVE(&ps->pool, up, entry);
		ps->npool--;
		up->pooled = false;
		up->reused = true;
		return up;
	}
	return NULL;
}

struct proxy_upstream *
proxy_upstream_get(struct proxy_session *ps, struct proxy_conn *pc,
    const struct proxy_want *w)
{
	struct proxy *px = ps->px;
	const struct proxy_connect_to *ct;
	struct proxy_upstream *up;
	struct timeval tv = { px->connect_timeout, 0 };
	const char *host = w->host;
	int port = w->port;

	if (w->pooled && (up = proxy_upstream_from_pool(ps, w)) != NULL) {
		up->pc = pc;
		proxy_upstream_use(up);
		return up;
	}
	up = xcalloc(1, sizeof *up);
	up->ps = ps;
	up->pc = pc;
	up->host = xstrdup(host);
	up->port = port;
	up->tls = w->tls;
	up->fd = -1;
	up->timer = evtimer_new(px->base, proxy_upstream_timeout_cb, up);
	up->defer = event_new(px->base, -1, 0, proxy_upstream_defer_cb, up);
	evtimer_add(up->timer, &tv);
	ct = proxy_connect_to_find(px->connect_to, px->nconnect_to, host, port);
	up->named = ct != NULL;
	up->named_once = w->named;
	proxy_upstream_resolve(up, ct != NULL ? ct->addr : host,
	    ct != NULL ? ct->port2 : port);
	return up;
}

void
proxy_upstream_release(struct proxy_upstream *up, bool reuse)
{
	struct proxy_session *ps = up->ps;
	struct timeval tv = { ps->px->idle_timeout, 0 };
	struct proxy_upstream *old;

	/* Allowed once by an answer: not for whoever comes next. */
	if (!reuse || ps->dying || up->state != PROXY_UP_READY || up->named_once ||
	    evbuffer_get_length(up->side.in) != 0 ||
	    proxy_side_pending(&up->side) != 0) {
		proxy_upstream_free(up);
		return;
	}
	up->pc = NULL;
	proxy_side_setcb(&up->side, proxy_upstream_idle_io_cb,
	    proxy_upstream_idle_event_cb, up);
	proxy_side_read_timeout(&up->side, &tv);
	proxy_side_enable(&up->side);
	if (ps->npool >= PROXY_POOL_MAX) {
		old = TAILQ_LAST(&ps->pool, proxy_pool);
		proxy_upstream_free(old);
	}
	TAILQ_INSERT_HEAD(&ps->pool, up, entry);
	up->pooled = true;
	ps->npool++;
}

void
proxy_upstream_free(struct proxy_upstream *up)
{
	if (up == NULL)
		return;
	if (up->pooled) {
		TAILQ_REMOVE(&up->ps->pool, up, entry);
		up->ps->npool--;
	}
	if (up->dns != NULL) {
		up->dns->up = NULL;
		if (up->dns->answered) {
			if (up->dns->ai != NULL)
				evutil_freeaddrinfo(up->dns->ai);
			free(up->dns);
		} else if (up->dns->req != NULL)
			evdns_getaddrinfo_cancel(up->dns->req);
	}
	proxy_side_close(&up->side);
	if (up->fd != -1)
		close(up->fd);
	if (up->conn_ev != NULL)
		event_free(up->conn_ev);
	event_free(up->timer);
	event_free(up->defer);
	if (up->ai != NULL)
		evutil_freeaddrinfo(up->ai);
	free(up->host);
	free(up->refused);
	free(up->lasterr);
	free(up);
}

void
proxy_upstream_drain_pool(struct proxy_session *ps)
{
	struct proxy_upstream *up;

	/* Everything in the pool is marked pooled: freeing unlinks it. */
	while ((up = TAILQ_FIRST(&ps->pool)) != NULL)
		proxy_upstream_free(up); /* NOLINT(clang-analyzer-unix.Malloc) */
}
