/* One side of a proxied connection: its socket, TLS over it, what was read and what is to be written. */
#include <sys/socket.h>
#include <sys/uio.h>

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/err.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "proxy/proxy-int.h"

/*
 * A side reads and writes its socket itself, and speaks TLS with OpenSSL
 * directly through a BIO of its own: OpenSSL reads the socket straight
 * into its record buffer and writes its records into WIRE, which goes out
 * in one writev at the end of each callback. Measured against libevent's
 * bufferevent_openssl filter over a socket bufferevent (2,000 keep-alive
 * requests, callgrind), the filter's buffers, locks, deferred callbacks
 * and error-queue clearing cost more than the TLS itself did.
 *
 * The owner's callbacks run from the loop only, never from inside a call
 * the owner made, and each is the last thing a handler does: the owner may
 * close the side from it.
 */

#define PROXY_SIDE_READ (64 * 1024)     /* read from a plain socket at once, at most */
#define PROXY_SIDE_CHUNK (16 * 1024)    /* one read; one TLS record's plaintext */
#define PROXY_SIDE_IO 0x100             /* TELL: the owner's io callback */

static BIO_METHOD *proxy_side_bio_method;

static void proxy_side_read_cb(evutil_socket_t, short, void *);
static void proxy_side_write_cb(evutil_socket_t, short, void *);

/* Runs the owner's callbacks that were put off: one now, the rest after. */
static void
proxy_side_tell_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proxy_side *s = arg;
	short told = s->told;

	s->told = 0;
	if ((told & PROXY_SIDE_IO) && s->io != NULL) {
		if ((told &= ~PROXY_SIDE_IO) != 0) {
			s->told = told;
			event_active(s->tell, EV_TIMEOUT, 1);
		}
		s->io(s->arg);
		return;
	}
	told &= ~PROXY_SIDE_IO;
	if (told != 0 && s->event != NULL)
		s->event(s->arg, told);
}

static void
proxy_side_notify(struct proxy_side *s, short what)
{
	s->told |= what;
	event_active(s->tell, EV_TIMEOUT, 1);
}

/* ---- the BIO under TLS ---- */

static int
proxy_side_bio_write(BIO *bio, const char *data, size_t len, size_t *done)
{
	struct proxy_side *s = BIO_get_data(bio);

	BIO_clear_retry_flags(bio);
	if (evbuffer_add(s->wire, data, len) == -1)
		return 0;
	*done = len;
	return 1;
}

/* Bytes that came before TLS began are read first, then the socket. */
static int
proxy_side_bio_read(BIO *bio, char *data, size_t len, size_t *done)
{
	struct proxy_side *s = BIO_get_data(bio);
	ssize_t n;

	BIO_clear_retry_flags(bio);
	if (s->early != NULL && evbuffer_get_length(s->early) != 0) {
		n = evbuffer_remove(s->early, data, len);
		*done = n > 0 ? (size_t)n : 0;
		return n > 0;
	}
	n = read(s->fd, data, len);
	if (n > 0) {
		s->short_read = (size_t)n < len;
		*done = (size_t)n;
		return 1;
	}
	if (n == -1 && (errno == EAGAIN || errno == EINTR)) {
		s->short_read = true;
		BIO_set_retry_read(bio);
		return 0;
	}
	s->err = n == 0 ? 0 : errno;
	s->eof = n == 0;
	return 0;
}

static long
proxy_side_bio_ctrl(BIO *bio, int cmd, long num, void *ptr)
{
	struct proxy_side *s = BIO_get_data(bio);

	switch (cmd) {
	case BIO_CTRL_FLUSH:
		return 1;
	case BIO_CTRL_EOF:
		return s->eof;
	case BIO_CTRL_WPENDING:
		return (long)evbuffer_get_length(s->wire);
	case BIO_CTRL_PENDING:
		return s->early != NULL ? (long)evbuffer_get_length(s->early) :
		    0;
	default:
		return 0;
	}
}

static int
proxy_side_bio_create(BIO *bio)
{
	BIO_set_init(bio, 1);
	return 1;
}

static BIO *
proxy_side_bio_new(struct proxy_side *s)
{
	BIO *bio;

	if (proxy_side_bio_method == NULL) {
		proxy_side_bio_method = BIO_meth_new(BIO_get_new_index() |
		    BIO_TYPE_SOURCE_SINK, "agentmux side");
		if (proxy_side_bio_method == NULL)
			return NULL;
		BIO_meth_set_write_ex(proxy_side_bio_method,
		    proxy_side_bio_write);
		BIO_meth_set_read_ex(proxy_side_bio_method, proxy_side_bio_read);
		BIO_meth_set_ctrl(proxy_side_bio_method, proxy_side_bio_ctrl);
		BIO_meth_set_create(proxy_side_bio_method,
		    proxy_side_bio_create);
	}
	if ((bio = BIO_new(proxy_side_bio_method)) != NULL)
		BIO_set_data(bio, s);
	return bio;
}

/* ---- failures ---- */

/* Keeps OpenSSL's reason for a failure (the first real one) and empties its queue. */
static void
proxy_side_tls_failed(struct proxy_side *s, int ret)
{
	unsigned long e;
	int code = SSL_get_error(s->ssl, ret);

	while ((e = ERR_get_error()) != 0) {
		if (s->tls_err == 0 && ERR_GET_LIB(e) != 0)
			s->tls_err = e;
	}
	if (code == SSL_ERROR_SYSCALL && s->err == 0)
		s->err = errno != EAGAIN ? errno : 0;
}

/*
 * The stream ended (the peer's end: writing goes on) or broke (no more
 * reading or writing); the owner hears WHAT from the loop.
 */
static void
proxy_side_end(struct proxy_side *s, short what, bool broken)
{
	s->rdone = true;
	event_del(s->rev);
	if (broken) {
		s->broken = true;
		event_del(s->wev);
		s->writing = false;
	}
	proxy_side_notify(s, what);
}

char *
proxy_side_error(struct proxy_side *s)
{
	const char *reason;
	long v;

	if (s->ssl == NULL)
		return xstrdup(s->err != 0 ? strerror(s->err) :
		    "the connection closed");
	if ((v = SSL_get_verify_result(s->ssl)) != X509_V_OK)
		return xprintf("certificate verify failed: %s",
		    X509_verify_cert_error_string(v));
	/* OpenSSL 3 reports the other side's close as an error of its own. */
	if (s->tls_err != 0 && ERR_GET_REASON(s->tls_err) !=
	    SSL_R_UNEXPECTED_EOF_WHILE_READING &&
	    (reason = ERR_reason_error_string(s->tls_err)) != NULL)
		return xprintf("TLS error: %s", reason);
	if (s->err != 0)
		return xprintf("TLS error: %s", strerror(s->err));
	return xstrdup("the other side closed the connection during TLS");
}

bool
proxy_side_failed(struct proxy_side *s)
{
	return s->err != 0 || s->tls_err != 0;
}

/* ---- writing ---- */

/* Writes WIRE (TLS) or OUT (plain) as far as the socket takes it: -1 on a failure. */
static int
proxy_side_write_socket(struct proxy_side *s)
{
	struct evbuffer *b = s->ssl != NULL ? s->wire : s->out;

	while (evbuffer_get_length(b) != 0) {
		if (evbuffer_write(b, s->fd) != -1)
			continue;
		if (errno == EAGAIN || errno == EINTR)
			return 0;
		s->err = errno;
		return -1;
	}
	if (s->shut && evbuffer_get_length(s->out) == 0) {
		s->shut = false;
		shutdown(s->fd, SHUT_WR);
	}
	return 0;
}

/*
 * Encrypts what the owner queued into records, 16 KiB of plaintext at
 * most each, while fewer than PROXY_BUF_HIGH bytes wait to be written.
 * A chain long enough is encrypted where it is; short ones are joined
 * first, so that a head and a small body make one record.
 */
static int
proxy_side_encrypt(struct proxy_side *s)
{
	struct evbuffer_iovec v;
	size_t len, n, done;
	unsigned char *p;
	int ret;

	while ((len = evbuffer_get_length(s->out)) != 0 &&
	    evbuffer_get_length(s->wire) < PROXY_BUF_HIGH) {
		n = len < PROXY_SIDE_CHUNK ? len : PROXY_SIDE_CHUNK;
		if (evbuffer_peek(s->out, -1, NULL, &v, 1) >= 1 &&
		    v.iov_len >= 4096) {
			p = v.iov_base;
			if (v.iov_len < n)
				n = v.iov_len;
		} else if ((p = evbuffer_pullup(s->out, (ev_ssize_t)n)) ==
		    NULL)
			return -1;
		if ((ret = SSL_write_ex(s->ssl, p, n, &done)) <= 0) {
			proxy_side_tls_failed(s, ret);
			return -1;
		}
		evbuffer_drain(s->out, done);
	}
	return 0;
}

/* Whether the socket must tell us when it takes more: bytes wait for it. */
static void
proxy_side_want_write(struct proxy_side *s)
{
	const struct timeval *tv = s->wtv.tv_sec > 0 && !s->held ? &s->wtv :
	    NULL;
	bool want = !s->broken && evbuffer_get_length(s->ssl != NULL ?
	    s->wire : s->out) != 0;

	if (!want) {
		if (s->writing)
			event_del(s->wev);
		s->writing = false;
		return;
	}
	if (!s->writing)
		event_add(s->wev, tv);
	s->writing = true;
}

/*
 * Encrypts and writes until the socket takes no more or nothing is left;
 * -1 if the side broke (its end is on its way to the owner).
 */
static int
proxy_side_push(struct proxy_side *s)
{
	bool tls = s->ssl != NULL && !s->handshake;

	for (;;) {
		if (tls && proxy_side_encrypt(s) == -1)
			goto fail;
		if (proxy_side_write_socket(s) == -1)
			goto fail;
		/* Encryption stopped at PROXY_BUF_HIGH and the socket took it all. */
		if (!tls || evbuffer_get_length(s->out) == 0 ||
		    evbuffer_get_length(s->wire) != 0)
			break;
	}
	proxy_side_want_write(s);
	return 0;
fail:
	proxy_side_end(s, PROXY_SIDE_ERROR | PROXY_SIDE_WRITING, true);
	return -1;
}

void
proxy_side_flush(struct proxy_side *s)
{
	size_t before;

	if (!s->open || s->broken)
		return;
	if ((before = proxy_side_pending(s)) == 0)
		return;
	if (proxy_side_push(s) == -1)
		return;
	/* An owner that stopped for want of room hears there is some. */
	if (before > s->low && proxy_side_pending(s) <= s->low)
		proxy_side_notify(s, PROXY_SIDE_IO);
}

static void
proxy_side_write_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proxy_side *s = arg;
	size_t before = proxy_side_pending(s);

	if (what & EV_TIMEOUT) {
		event_del(s->wev);
		s->writing = false;
		if (s->event != NULL)
			s->event(s->arg, PROXY_SIDE_TIMEOUT | PROXY_SIDE_WRITING);
		return;
	}
	if (proxy_side_push(s) == -1)
		return;
	if (proxy_side_pending(s) <= s->low && proxy_side_pending(s) < before &&
	    s->io != NULL)
		s->io(s->arg);
}

size_t
proxy_side_pending(struct proxy_side *s)
{
	size_t n;

	if (s->out == NULL)
		return 0;
	n = evbuffer_get_length(s->out);
	if (s->wire != NULL)
		n += evbuffer_get_length(s->wire);
	return n;
}

/* ---- reading ---- */

/* One read of up to WANT bytes into IN: >0, 0 at the end, -1 (errno). */
static ssize_t
proxy_side_read_once(struct proxy_side *s, size_t want)
{
	struct evbuffer_iovec v[2];
	struct iovec iov[2];
	ssize_t n, left;
	int nv, i, err;

	nv = evbuffer_reserve_space(s->in, (ev_ssize_t)want, v, 2);
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
	evbuffer_commit_space(s->in, v, n > 0 ? nv : 0);
	errno = err;
	return n;
}

/*
 * A plain socket: reads while reads come back full, up to
 * PROXY_SIDE_READ at once. 0 while the stream goes on, else what ended it.
 */
static short
proxy_side_read_plain(struct proxy_side *s, size_t *got)
{
	ssize_t n;

	do {
		n = proxy_side_read_once(s, PROXY_SIDE_CHUNK);
		if (n > 0)
			*got += (size_t)n;
	} while (n == PROXY_SIDE_CHUNK && *got < PROXY_SIDE_READ &&
	    evbuffer_get_length(s->in) < PROXY_BUF_HIGH);
	if (n > 0 || (n == -1 && (errno == EAGAIN || errno == EINTR)))
		return 0;
	s->err = n == 0 ? 0 : errno;
	return n == 0 ? PROXY_SIDE_EOF : PROXY_SIDE_ERROR;
}

/*
 * One TLS read into IN: the first of a wakeup goes through a scratch
 * buffer, so that a read that finds nothing (a ticket, a timeout's end,
 * the read after a handshake) leaves no empty 16 KiB chain behind on an
 * idle connection; later ones decrypt into IN in place. The scratch is
 * static: proxies run on the loop's thread only. 1, or <= 0 for
 * SSL_get_error.
 */
static int
proxy_side_read_record(struct proxy_side *s, bool first, size_t *done)
{
	static unsigned char scratch[PROXY_SIDE_CHUNK];
	struct evbuffer_iovec v;
	int ret;

	if (first) {
		ret = SSL_read_ex(s->ssl, scratch, sizeof scratch, done);
		if (ret > 0 && evbuffer_add(s->in, scratch, *done) == -1)
			return -1;
		return ret;
	}
	if (evbuffer_reserve_space(s->in, PROXY_SIDE_CHUNK, &v, 1) < 1)
		return -1;
	ret = SSL_read_ex(s->ssl, v.iov_base, v.iov_len, done);
	v.iov_len = ret > 0 ? *done : 0;
	evbuffer_commit_space(s->in, &v, 1);
	return ret;
}

/*
 * TLS: decrypts record after record into IN until the socket has no more
 * (a short read with nothing left in OpenSSL's buffer spares the read
 * that would only say EAGAIN) or IN is full. A peer that closes without
 * close_notify still ends its stream: bodies delimited by the close need
 * it, and framing is checked above.
 */
static short
proxy_side_read_tls(struct proxy_side *s, size_t *got)
{
	size_t done;
	int ret, code;

	s->more = false;
	s->short_read = false;
	for (;;) {
		if (evbuffer_get_length(s->in) >= PROXY_BUF_HIGH) {
			s->more = true;
			return 0;
		}
		if (*got != 0 && s->short_read && !SSL_has_pending(s->ssl))
			return 0;
		if ((ret = proxy_side_read_record(s, *got == 0, &done)) == -1)
			return PROXY_SIDE_ERROR;
		if (ret > 0) {
			*got += done;
			continue;
		}
		code = SSL_get_error(s->ssl, ret);
		if (code == SSL_ERROR_WANT_READ || code == SSL_ERROR_WANT_WRITE)
			return 0;
		/* OpenSSL 3 calls a close without close_notify an error. */
		if (code == SSL_ERROR_ZERO_RETURN || (s->eof && s->err == 0 &&
		    (code == SSL_ERROR_SYSCALL || ERR_GET_REASON(
		    ERR_peek_error()) == SSL_R_UNEXPECTED_EOF_WHILE_READING))) {
			ERR_clear_error();
			return PROXY_SIDE_EOF;
		}
		proxy_side_tls_failed(s, ret);
		return PROXY_SIDE_ERROR;
	}
}

/* The TLS handshake goes on; the owner hears when it is over. */
static void
proxy_side_handshake(struct proxy_side *s)
{
	int ret, code;

	ret = SSL_do_handshake(s->ssl);
	if (ret == 1) {
		s->handshake = false;
		s->more = true;   /* data may have come with the last message */
		if (proxy_side_push(s) == -1)
			return;
		proxy_side_update(s);
		proxy_side_notify(s, PROXY_SIDE_CONNECTED);
		return;
	}
	code = SSL_get_error(s->ssl, ret);
	if (code != SSL_ERROR_WANT_READ && code != SSL_ERROR_WANT_WRITE) {
		proxy_side_tls_failed(s, ret);
		/* What was written (an alert) still goes out if it can. */
		proxy_side_write_socket(s);
		proxy_side_end(s, PROXY_SIDE_ERROR | PROXY_SIDE_READING, true);
		return;
	}
	proxy_side_push(s);
}

static void
proxy_side_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proxy_side *s = arg;
	size_t got = 0;
	short end;

	if (what & EV_TIMEOUT) {
		/* As with a bufferevent, a timeout stops reading until enabled. */
		s->reading = false;
		event_del(s->rev);
		if (s->event != NULL)
			s->event(s->arg, PROXY_SIDE_TIMEOUT | PROXY_SIDE_READING);
		return;
	}
	if (s->handshake) {
		proxy_side_handshake(s);
		return;
	}
	end = s->ssl != NULL ? proxy_side_read_tls(s, &got) :
	    proxy_side_read_plain(s, &got);
	if (s->ssl != NULL && evbuffer_get_length(s->wire) != 0 &&
	    proxy_side_push(s) == -1)
		return;
	if (end != 0) {
		/* A plain EOF only ends reading; TLS or socket errors break the side. */
		proxy_side_end(s, end | PROXY_SIDE_READING,
		    end == PROXY_SIDE_ERROR);
		if (got == 0)
			return;   /* the end reaches the owner from the loop */
	} else
		proxy_side_update(s);
	if (got != 0 && s->io != NULL)
		s->io(s->arg);
}

void
proxy_side_update(struct proxy_side *s)
{
	const struct timeval *tv;
	bool want;

	if (!s->open || s->rdone)
		return;
	want = s->handshake || (s->reading &&
	    evbuffer_get_length(s->in) < PROXY_BUF_HIGH);
	if (!want) {
		event_del(s->rev);
		return;
	}
	/* Records OpenSSL holds already: the socket will not say so. */
	if (s->more && !s->handshake)
		event_active(s->rev, EV_READ, 1);
	if (event_pending(s->rev, EV_READ, NULL))
		return;
	tv = !s->handshake && !s->held && s->rtv.tv_sec > 0 ? &s->rtv : NULL;
	event_add(s->rev, tv);
}

/*
 * Connections change their idle timeout with every request: the timer
 * changes, the socket stays registered (an epoll_ctl pair otherwise).
 */
void
proxy_side_read_timeout(struct proxy_side *s, const struct timeval *tv)
{
	if (!s->open)
		return;
	s->rtv.tv_sec = tv != NULL ? tv->tv_sec : 0;
	s->rtv.tv_usec = 0;
	if (s->handshake || !event_pending(s->rev, EV_READ, NULL)) {
		proxy_side_update(s);
		return;
	}
	if (s->rtv.tv_sec > 0 && !s->held)
		event_add(s->rev, &s->rtv);
	else
		event_remove_timer(s->rev);
}

bool
proxy_timer_left(struct event *ev, struct timeval *left)
{
	struct timeval due, now;

	evutil_timerclear(left);
	if (!event_pending(ev, EV_TIMEOUT, &due))
		return false;
	evutil_gettimeofday(&now, NULL);
	evutil_timersub(&due, &now, left);
	/* Due already: at once, but still a timeout (0 would mean none). */
	if (left->tv_sec < 0 || (left->tv_sec == 0 && left->tv_usec <= 0)) {
		left->tv_sec = 0;
		left->tv_usec = 1;
	}
	return true;
}

/* EV (pending with WHAT) again, with the timeout LEFT if there was one, else FULL's. */
static void
proxy_side_rearm(struct event *ev, short what, const struct timeval *left,
    const struct timeval *full)
{
	if (!event_pending(ev, what, NULL))
		return;
	if (evutil_timerisset(left))
		event_add(ev, left);
	else if (full->tv_sec > 0)
		event_add(ev, full);
}

/*
 * A paused session's jail reads and writes nothing: the time it is frozen
 * is not a client's idleness, so no timeout runs, and each goes on at
 * resume with what was left of it.
 */
void
proxy_side_hold(struct proxy_side *s, bool hold)
{
	if (!s->open || s->held == hold)
		return;
	s->held = hold;
	if (hold) {
		if (proxy_timer_left(s->rev, &s->rleft))
			event_remove_timer(s->rev);
		if (proxy_timer_left(s->wev, &s->wleft))
			event_remove_timer(s->wev);
		return;
	}
	if (!s->handshake)
		proxy_side_rearm(s->rev, EV_READ, &s->rleft, &s->rtv);
	proxy_side_rearm(s->wev, EV_WRITE, &s->wleft, &s->wtv);
	evutil_timerclear(&s->rleft);
	evutil_timerclear(&s->wleft);
}

void
proxy_side_write_timeout(struct proxy_side *s, const struct timeval *tv)
{
	if (!s->open)
		return;
	s->wtv.tv_sec = tv != NULL ? tv->tv_sec : 0;
	s->wtv.tv_usec = 0;
	if (s->writing) {
		event_del(s->wev);
		s->writing = false;
	}
	proxy_side_want_write(s);
}

void
proxy_side_set_low(struct proxy_side *s, size_t low)
{
	s->low = low;
}

/* ---- life ---- */

int
proxy_side_open(struct proxy_side *s, struct event_base *base, int fd)
{
	memset(s, 0, sizeof *s);
	s->fd = fd;
	s->low = PROXY_BUF_HIGH / 2;
	s->in = evbuffer_new();
	s->out = evbuffer_new();
	s->rev = event_new(base, fd, EV_READ | EV_PERSIST, proxy_side_read_cb,
	    s);
	s->wev = event_new(base, fd, EV_WRITE | EV_PERSIST,
	    proxy_side_write_cb, s);
	s->tell = event_new(base, -1, 0, proxy_side_tell_cb, s);
	if (s->in == NULL || s->out == NULL || s->rev == NULL ||
	    s->wev == NULL || s->tell == NULL) {
		s->fd = -1;   /* still the caller's */
		proxy_side_close(s);
		return -1;
	}
	s->open = true;
	return 0;
}

void
proxy_side_setcb(struct proxy_side *s, void (*io)(void *),
    void (*event)(void *, short), void *arg)
{
	s->io = io;
	s->event = event;
	s->arg = arg;
}

int
proxy_side_tls(struct proxy_side *s, SSL *ssl, bool server)
{
	BIO *bio;

	if ((s->wire = evbuffer_new()) == NULL ||
	    (s->early = evbuffer_new()) == NULL ||
	    (bio = proxy_side_bio_new(s)) == NULL)
		return -1;
	/* What the client sent early (its hello) is TLS's to read first. */
	evbuffer_add_buffer(s->early, s->in);
	SSL_set_bio(ssl, bio, bio);
	SSL_set_read_ahead(ssl, 1);
	if (server)
		SSL_set_accept_state(ssl);
	else
		SSL_set_connect_state(ssl);
	s->ssl = ssl;
	s->handshake = true;
	s->reading = true;
	s->low = PROXY_BUF_HIGH / 2;
	/* The first step runs from the loop, like every later one. */
	event_del(s->rev);
	event_add(s->rev, NULL);
	event_active(s->rev, EV_READ, 1);
	return 0;
}

void
proxy_side_enable(struct proxy_side *s)
{
	s->reading = true;
	proxy_side_update(s);
}

bool
proxy_side_is_tls(struct proxy_side *s)
{
	return s->ssl != NULL;
}

/* Ends TLS (close_notify) and half-closes the socket once everything queued is written. */
void
proxy_side_shutdown(struct proxy_side *s)
{
	if (!s->open || s->broken)
		return;
	if (s->ssl != NULL && !s->handshake) {
		proxy_side_encrypt(s);
		SSL_shutdown(s->ssl);
		ERR_clear_error();
	}
	s->shut = true;
	proxy_side_push(s);
}

void
proxy_side_close(struct proxy_side *s)
{
	if (s->rev != NULL)
		event_free(s->rev);
	if (s->wev != NULL)
		event_free(s->wev);
	if (s->tell != NULL)
		event_free(s->tell);
	if (s->ssl != NULL)
		SSL_free(s->ssl);   /* and its BIO */
	if (s->in != NULL)
		evbuffer_free(s->in);
	if (s->out != NULL)
		evbuffer_free(s->out);
	if (s->wire != NULL)
		evbuffer_free(s->wire);
	if (s->early != NULL)
		evbuffer_free(s->early);
	if (s->open && s->fd != -1)
		close(s->fd);
	memset(s, 0, sizeof *s);
	s->fd = -1;
}
