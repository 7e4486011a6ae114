/* One side of a proxied connection: its socket's bufferevent, TLS over it, and writes made at once. */
#include <sys/socket.h>

#include <errno.h>
#include <string.h>

#include <openssl/err.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>

#include "proxy/proxy-int.h"

/*
 * libevent writes a bufferevent's output only once epoll says the socket
 * is writable: an epoll_ctl, a wakeup and another epoll_ctl per write. A
 * side in direct mode keeps EV_WRITE off on its socket and writes what is
 * queued at the end of each callback (proxy_side_flush); only what the
 * socket does not take at once is left to libevent.
 */

/*
 * What libevent writes for us (what the socket did not take at once)
 * drains out of sight of TLS's write callback: this tells the owner, so
 * that data held back by backpressure moves on and closes go ahead.
 */
static void
proxy_side_drain_cb(struct evbuffer *buf, const struct evbuffer_cb_info *info,
    void *arg)
{
	struct proxy_side *s = arg;

	if (info->n_deleted != 0 && s->writing &&
	    evbuffer_get_length(buf) <= PROXY_BUF_HIGH / 2)
		event_active(s->wake, EV_TIMEOUT, 1);
}

static void
proxy_side_wake_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proxy_side *s = arg;

	if (s->drained != NULL)
		s->drained(s->arg);
}

int
proxy_side_open(struct proxy_side *s, struct event_base *base, int fd,
    void (*drained)(void *), void *arg)
{
	memset(s, 0, sizeof *s);
	/*
	 * Not deferred: the socket's callbacks come only from the loop (ours
	 * are guarded, and under TLS they are the filter's own), and a
	 * deferral per read is measurable per request.
	 */
	s->raw = bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (s->raw == NULL)
		return -1;
	s->drained = drained;
	s->arg = arg;
	s->wake = event_new(base, -1, 0, proxy_side_wake_cb, s);
	s->cbent = evbuffer_add_cb(bufferevent_get_output(s->raw),
	    proxy_side_drain_cb, s);
	s->bev = s->raw;
	s->fd = fd;
	s->direct = true;
	bufferevent_set_max_single_read(s->raw, PROXY_BUF_HIGH);
	bufferevent_setwatermark(s->raw, EV_READ, 0, PROXY_BUF_HIGH);
	bufferevent_setwatermark(s->raw, EV_WRITE, PROXY_BUF_HIGH / 2,
	    PROXY_BUF_HIGH);
	bufferevent_disable(s->raw, EV_WRITE);
	bufferevent_enable(s->raw, EV_READ);
	return 0;
}

int
proxy_side_tls(struct proxy_side *s, struct event_base *base, SSL *ssl,
    bool server)
{
	struct bufferevent *bev;

	bev = bufferevent_openssl_filter_new(base, s->raw, ssl, server ?
	    BUFFEREVENT_SSL_ACCEPTING : BUFFEREVENT_SSL_CONNECTING,
	    BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
	if (bev == NULL)
		return -1;
	/* Peers that close without close_notify still end their bodies. */
	bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
	bufferevent_setwatermark(bev, EV_READ, 0, PROXY_BUF_HIGH);
	bufferevent_setwatermark(bev, EV_WRITE, PROXY_BUF_HIGH / 2, 0);
	/* The handshake is libevent's to write, until proxy_side_direct. */
	s->bev = bev;
	s->direct = false;
	s->writing = true;
	bufferevent_enable(s->raw, EV_WRITE);
	bufferevent_enable(bev, EV_READ | EV_WRITE);
	return 0;
}

void
proxy_side_enable(struct proxy_side *s)
{
	bufferevent_enable(s->bev, s->bev == s->raw ? EV_READ :
	    EV_READ | EV_WRITE);
}

void
proxy_side_direct(struct proxy_side *s)
{
	s->direct = true;
	proxy_side_flush(s);
}

size_t
proxy_side_pending(struct proxy_side *s)
{
	size_t n = evbuffer_get_length(bufferevent_get_output(s->bev));

	if (s->raw != s->bev)
		n += evbuffer_get_length(bufferevent_get_output(s->raw));
	return n;
}

/* Writes OUT to the socket; the bufferevent keeps its output's start frozen against others. */
static int
proxy_side_write(struct proxy_side *s, struct evbuffer *out)
{
	int n;

	evbuffer_unfreeze(out, 1);
	n = evbuffer_write(out, s->fd);
	evbuffer_freeze(out, 1);
	return n;
}

void
proxy_side_flush(struct proxy_side *s)
{
	struct evbuffer *out;
	bool want;

	if (s->bev == NULL || !s->direct)
		return;
	out = bufferevent_get_output(s->raw);
	for (;;) {
		if (evbuffer_get_length(out) != 0 &&
		    proxy_side_write(s, out) == -1 && errno != EAGAIN &&
		    errno != EINTR)
			break;   /* libevent will meet the error and report it */
		if (evbuffer_get_length(out) != 0 || s->bev == s->raw ||
		    evbuffer_get_length(bufferevent_get_output(s->bev)) == 0)
			break;
		/* More plaintext is waiting: have TLS encrypt it now. */
		bufferevent_enable(s->bev, EV_WRITE);
		if (evbuffer_get_length(out) == 0)
			break;
	}
	want = evbuffer_get_length(out) != 0;
	if (want == s->writing)
		return;
	s->writing = want;
	if (want)
		bufferevent_enable(s->raw, EV_WRITE);
	else
		bufferevent_disable(s->raw, EV_WRITE);
}

/* Ends TLS (close_notify) and half-closes the socket: the peer sees the end. */
void
proxy_side_shutdown(struct proxy_side *s)
{
	SSL *ssl;

	if (s->bev == NULL)
		return;
	if (s->bev != s->raw &&
	    (ssl = bufferevent_openssl_get_ssl(s->bev)) != NULL &&
	    SSL_is_init_finished(ssl)) {
		SSL_shutdown(ssl);
		ERR_clear_error();
	}
	proxy_side_flush(s);
	if (proxy_side_pending(s) == 0)
		shutdown(s->fd, SHUT_WR);
}

void
proxy_side_close(struct proxy_side *s)
{
	if (s->raw != NULL)
		evbuffer_remove_cb_entry(bufferevent_get_output(s->raw),
		    s->cbent);
	if (s->wake != NULL)
		event_free(s->wake);
	if (s->bev != NULL)
		bufferevent_free(s->bev);   /* and RAW under it, and the socket */
	memset(s, 0, sizeof *s);
	s->fd = -1;
}
