/* One side of a proxied connection: its socket's bufferevent, TLS over it, and the socket read and written at once. */
#include <sys/socket.h>
#include <sys/uio.h>

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
 *
 * libevent 2.1 also reads at most 4 KiB per wakeup, after an
 * ioctl(FIONREAD) each time: a 16 KiB TLS record takes four trips round
 * the loop. So the side reads the socket itself (EV_READ stays off on the
 * socket's bufferevent), up to 64 KiB at once, into that bufferevent's
 * input, and triggers its read callback: TLS's, or the owner's.
 */

#define PROXY_SIDE_READ (64 * 1024)     /* read at once, at most */
#define PROXY_SIDE_CHUNK (16 * 1024)

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

static void proxy_side_read_cb(evutil_socket_t, short, void *);

static void
proxy_side_wake_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proxy_side *s = arg;

	if (s->drained != NULL)
		s->drained(s->arg);
}

/* Bytes read but not yet taken: the socket's buffer, and above it TLS's. */
static size_t
proxy_side_unread(struct proxy_side *s)
{
	size_t n = evbuffer_get_length(bufferevent_get_input(s->raw));

	if (s->bev != s->raw)
		n += evbuffer_get_length(bufferevent_get_input(s->bev));
	return n;
}

/* One read of up to WANT bytes into IN: >0, 0 at the end, -1 (errno). */
static ssize_t
proxy_side_read_once(struct proxy_side *s, struct evbuffer *in, size_t want)
{
	struct evbuffer_iovec v[2];
	struct iovec iov[2];
	ssize_t n, left;
	int nv, i, err;

	nv = evbuffer_reserve_space(in, (ev_ssize_t)want, v, 2);
	for (i = 0; i < nv; i++) {
		iov[i].iov_base = v[i].iov_base;
		iov[i].iov_len = v[i].iov_len;
	}
	n = nv > 0 ? readv(s->fd, iov, nv) : -1;
	err = errno;
	for (i = 0, left = n > 0 ? n : 0; i < nv; i++) {
		if ((size_t)left < v[i].iov_len)
			v[i].iov_len = (size_t)left;
		left -= (ssize_t)v[i].iov_len;
	}
	evbuffer_commit_space(in, v, n > 0 ? nv : 0);
	errno = err;
	return n;
}

/*
 * Reads what the socket holds into the bufferevent's input, a record's
 * worth at a time (chains of 16 KiB stay below malloc's trim threshold)
 * while reads come back full: >0, 0 at the end, -1 (errno).
 */
static ssize_t
proxy_side_read(struct proxy_side *s)
{
	struct evbuffer *in = bufferevent_get_input(s->raw);
	ssize_t n, total = 0;

	evbuffer_unfreeze(in, 0);   /* libevent freezes it against others */
	do {
		n = proxy_side_read_once(s, in, PROXY_SIDE_CHUNK);
		if (n > 0)
			total += n;
	} while (n == PROXY_SIDE_CHUNK && total < PROXY_SIDE_READ);
	evbuffer_freeze(in, 0);
	return total > 0 ? total : n;
}

/*
 * The socket is readable (or its read timed out). The triggered callback
 * may free the side (the owner's, for a socket without TLS): it is the
 * last thing done here.
 */
static void
proxy_side_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proxy_side *s = arg;
	ssize_t n;
	int err;

	if (what & EV_TIMEOUT) {
		event_del(s->rev);
		bufferevent_trigger_event(s->raw, BEV_EVENT_READING |
		    BEV_EVENT_TIMEOUT, 0);
		return;
	}
	if ((n = proxy_side_read(s)) > 0) {
		if (proxy_side_unread(s) >= PROXY_BUF_HIGH)
			event_del(s->rev);   /* until the owner takes some */
		bufferevent_trigger(s->raw, EV_READ, 0);
		return;
	}
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	err = errno;
	event_del(s->rev);
	s->ended = true;
	s->end = n == 0 ? BEV_EVENT_EOF : BEV_EVENT_ERROR;
	s->err = n == 0 ? 0 : err;
	proxy_side_update(s);
}

void
proxy_side_update(struct proxy_side *s)
{
	const struct timeval *tv;

	if (s->bev == NULL)
		return;
	if (s->ended) {
		/* Under TLS, the end waits until what came before it is read. */
		if (s->end_told || (s->bev != s->raw && evbuffer_get_length(
		    bufferevent_get_input(s->raw)) != 0))
			return;
		s->end_told = true;
		errno = s->err;
		bufferevent_trigger_event(s->raw, BEV_EVENT_READING | s->end,
		    0);
		return;
	}
	if (!s->reading || proxy_side_unread(s) >= PROXY_BUF_HIGH) {
		event_del(s->rev);
		return;
	}
	if (event_pending(s->rev, EV_READ, NULL))
		return;
	tv = s->bev == s->raw && s->rtv.tv_sec > 0 ? &s->rtv : NULL;
	event_add(s->rev, tv);
}

void
proxy_side_read_timeout(struct proxy_side *s, const struct timeval *tv)
{
	if (s->bev == NULL)
		return;
	if (s->bev != s->raw) {
		bufferevent_set_timeouts(s->bev, tv, NULL);
		return;
	}
	s->rtv.tv_sec = tv != NULL ? tv->tv_sec : 0;
	s->rtv.tv_usec = 0;
	event_del(s->rev);   /* added again with the new timeout */
	proxy_side_update(s);
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
	s->rev = event_new(base, fd, EV_READ | EV_PERSIST, proxy_side_read_cb,
	    s);
	bufferevent_setwatermark(s->raw, EV_WRITE, PROXY_BUF_HIGH / 2,
	    PROXY_BUF_HIGH);
	bufferevent_disable(s->raw, EV_READ | EV_WRITE);
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
	/* The filter turned the socket's reading on: the reads stay ours. */
	bufferevent_disable(s->raw, EV_READ);
	s->reading = true;
	event_del(s->rev);   /* a read timeout is TLS's own from now on */
	proxy_side_update(s);
	/* What the client sent early is already in the socket's buffer. */
	if (evbuffer_get_length(bufferevent_get_input(s->raw)) != 0)
		bufferevent_trigger(s->raw, EV_READ, 0);
	return 0;
}

void
proxy_side_enable(struct proxy_side *s)
{
	if (s->bev != s->raw)
		bufferevent_enable(s->bev, EV_READ | EV_WRITE);
	s->reading = true;
	proxy_side_update(s);
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
	if (s->rev != NULL)
		event_free(s->rev);
	if (s->bev != NULL)
		bufferevent_free(s->bev);   /* and RAW under it, and the socket */
	memset(s, 0, sizeof *s);
	s->fd = -1;
}
