/* A session's forwarded ports: a host listener the server owns, relayed to a port on the jail's own loopback. */
#include <sys/socket.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "session-int.h"

/* What one side may have queued before the other stops being read. */
#define SESSION_PORT_HIGH (256 * 1024)
/* Connections one forward carries at once; a new one past it takes the place of the one quiet longest. */
#define SESSION_PORT_CONNS 128
/*
 * How long a connection's jail side may take to be made (the door's socket,
 * then the connect), and how long a connection may carry nothing either
 * way: a jail that never answers would otherwise hold its slots for good.
 */
AM_TESTABLE struct timeval session_port_connect_tv = { 10, 0 };
/* An hour: a dev server's live-reload socket may stay quiet for long. */
AM_TESTABLE struct timeval session_port_idle_tv = { 60 * 60, 0 };
/*
 * How long a connection must have been quiet to make room for a new one
 * in a full forward: a client (any local user can connect) cannot end
 * connections in use by opening new ones.
 */
AM_TESTABLE struct timeval session_port_evict_tv = { 10, 0 };
/* How long the helper that reaches into the jail has to end, once let go. */
#define SESSION_PORT_DOOR_GRACE_MS 1000
/*
 * A session's own loopback address, 127.A.B.1: A from this up, so that
 * 127.0.0.1 and Debian's 127.0.1.1 are never one; 179 x 256 sessions
 * before two share one.
 */
#define SESSION_PORT_NET_FIRST 77
#define SESSION_PORT_NETS ((256 - SESSION_PORT_NET_FIRST) * 256)

struct session_port;

/* One forwarded connection: the host's client and its way into the jail. */
struct session_port_conn {
	struct session_port *sp;
	struct bufferevent *host;
	struct bufferevent *jail;    /* NULL until the door made its socket */
	struct event *timer;         /* connect, then idle timeout */
	bool jail_up;                /* its jail side is connected */
	int64_t last_us;             /* when something last moved (util_mono_us) */
	struct timeval left;         /* paused: what was left of TIMER (0: none) */
	bool host_eof;
	bool jail_eof;
	struct session_port_conn *next;
};

/* One forward: HOST:HOST_PORT on the host to 127.0.0.1:JAIL_PORT in the jail. */
struct session_port {
	struct session *s;
	char host[INET6_ADDRSTRLEN];
	int host_port;
	int jail_port;
	struct evconnlistener *lev;
	struct session_port_conn *conns;
	size_t nconns;
	struct session_port *next;
};

/* Every forward of a session, and its one door into the jail's network. */
struct session_ports {
	struct session_port *list;
	int door;                    /* jail_door_open's, or -1 */
	int door_pidfd;
	struct event *door_ev;
	struct session_port_conn **wait;  /* asked the door, oldest first; NULL: gone */
	size_t nwait;
	int64_t held_since;          /* the session paused: when (0: it is not) */
};

static void session_port_conn_free(struct session_port_conn *, const char *);

static struct session_ports *
session_port_state(struct session *s)
{
	if (s->ports == NULL) {
		s->ports = xcalloc(1, sizeof *s->ports);
		s->ports->door = -1;
		s->ports->door_pidfd = -1;
		if (session_paused(s))
			s->ports->held_since = util_mono_us();
	}
	return s->ports;
}

/* The door goes: its helper ends, and what waited for it is closed. */
static void
session_port_door_close(struct session *s)
{
	struct session_ports *sps = s->ports;
	size_t i;

	if (sps == NULL || sps->door == -1)
		return;
	event_free(sps->door_ev);
	sps->door_ev = NULL;
	close(sps->door);
	sps->door = -1;
	proc_reap_pidfd(s->ctx->base, sps->door_pidfd,
	    SESSION_PORT_DOOR_GRACE_MS);
	sps->door_pidfd = -1;
	for (i = 0; i < sps->nwait; i++) {
		/* Each one freed takes itself out of the list. */
		if (sps->wait[i] != NULL)
			session_port_conn_free(sps->wait[i], "the door closed");
	}
	free(sps->wait);
	sps->wait = NULL;
	sps->nwait = 0;
}

/* Nothing moved in time (the jail side not made, or then no byte either way). */
static void
session_port_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct session_port_conn *c = arg;

	(void)fd;
	(void)what;
	session_port_conn_free(c, c->jail_up ? "idle for too long" :
	    "the jail's side was not made in time");
}

/*
 * Arms C's timer for TV from now; while the session is paused it is kept
 * as what is left, for resume (a client on the host may still send bytes,
 * which start it again).
 */
static void
session_port_arm(struct session_port_conn *c, const struct timeval *tv)
{
	if (c->sp->s->ports->held_since != 0) {
		evtimer_del(c->timer);
		c->left = *tv;
		return;
	}
	event_add(c->timer, tv);
}

/* Something moved on C: its idle time starts again. */
static void
session_port_touch(struct session_port_conn *c)
{
	c->last_us = util_mono_us();
	if (c->jail_up)
		session_port_arm(c, &session_port_idle_tv);
}

/* Connection C's other side. */
static struct bufferevent *
session_port_other(struct session_port_conn *c, struct bufferevent *bev)
{
	return bev == c->host ? c->jail : c->host;
}

static void
session_port_conn_free(struct session_port_conn *c, const char *why)
{
	struct session_port *sp = c->sp;
	struct session_ports *sps = sp->s->ports;
	struct session_port_conn **pp;
	size_t i;

	log_debug("session %lld: port %d: connection closed: %s",
	    (long long)sp->s->id, sp->jail_port, why);
	for (i = 0; i < sps->nwait; i++) {
		if (sps->wait[i] == c)
			sps->wait[i] = NULL;
	}
	for (pp = &sp->conns; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	sp->nconns--;
	event_free(c->timer);
	bufferevent_free(c->host);
	if (c->jail != NULL)
		bufferevent_free(c->jail);
	free(c);
}

/* Both sides said all they had and it is delivered: the connection is done. */
static bool
session_port_done(struct session_port_conn *c)
{
	return c->host_eof && c->jail_eof &&
	    evbuffer_get_length(bufferevent_get_output(c->host)) == 0 &&
	    evbuffer_get_length(bufferevent_get_output(c->jail)) == 0;
}

/* Bytes in: on to the other side, whose queue bounds how much is read. */
static void
session_port_read_cb(struct bufferevent *bev, void *arg)
{
	struct session_port_conn *c = arg;
	struct bufferevent *other = session_port_other(c, bev);
	struct evbuffer *out;

	if (other == NULL)
		return;
	session_port_touch(c);
	out = bufferevent_get_output(other);
	evbuffer_add_buffer(out, bufferevent_get_input(bev));
	if (evbuffer_get_length(out) >= SESSION_PORT_HIGH)
		bufferevent_disable(bev, EV_READ);
}

/* BEV's queue is empty: its peer may be read again, or its end passed on. */
static void
session_port_write_cb(struct bufferevent *bev, void *arg)
{
	struct session_port_conn *c = arg;
	struct bufferevent *other = session_port_other(c, bev);
	bool other_eof = other == c->host ? c->host_eof : c->jail_eof;

	if (other == NULL)
		return;
	session_port_touch(c);
	if (session_port_done(c)) {
		session_port_conn_free(c, "both sides ended");
		return;
	}
	if (other_eof)
		shutdown(bufferevent_getfd(bev), SHUT_WR);
	else
		bufferevent_enable(other, EV_READ);
}

/* One side ended its half (EOF) or failed. */
static void
session_port_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct session_port_conn *c = arg;
	struct bufferevent *other = session_port_other(c, bev);

	if (what & BEV_EVENT_CONNECTED) {
		c->jail_up = true;
		session_port_touch(c);
		bufferevent_enable(c->host, EV_READ | EV_WRITE);
		bufferevent_enable(c->jail, EV_READ | EV_WRITE);
		/* What the client sent while the jail side was made. */
		session_port_read_cb(c->host, c);
		return;
	}
	if ((what & BEV_EVENT_ERROR) || other == NULL) {
		session_port_conn_free(c, bev == c->host ? "the client failed" :
		    "nothing answers that port in the jail");
		return;
	}
	if (!(what & BEV_EVENT_EOF))
		return;
	session_port_read_cb(bev, c);
	bufferevent_disable(bev, EV_READ);
	if (bev == c->host)
		c->host_eof = true;
	else
		c->jail_eof = true;
	if (session_port_done(c))
		session_port_conn_free(c, "both sides ended");
	else if (evbuffer_get_length(bufferevent_get_output(other)) == 0)
		shutdown(bufferevent_getfd(other), SHUT_WR);
}

/* The door made FD in the jail: C connects it to the jail's port. */
static void
session_port_conn_attach(struct session_port_conn *c, int fd)
{
	struct sockaddr_in sin;
	struct event_base *base = c->sp->s->ctx->base;

	c->jail = bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (c->jail == NULL) {
		close(fd);
		session_port_conn_free(c, "cannot make a bufferevent");
		return;
	}
	bufferevent_setcb(c->jail, session_port_read_cb, session_port_write_cb,
	    session_port_event_cb, c);
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)c->sp->jail_port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bufferevent_socket_connect(c->jail, (struct sockaddr *)&sin,
	    sizeof sin) == -1)
		session_port_conn_free(c, "cannot connect in the jail");
}

/* The door answered: each socket goes to the oldest connection waiting. */
static void
session_port_door_cb(evutil_socket_t fd, short what, void *arg)
{
	struct session *s = arg;
	struct session_ports *sps = s->ports;
	struct session_port_conn *c;
	char *cause = NULL;
	int rc, sfd;

	while ((rc = jail_door_recv(sps->door, &sfd, &cause)) == 1) {
		if (sps->nwait == 0) {
			close(sfd);
			continue;
		}
		c = sps->wait[0];
		memmove(sps->wait, sps->wait + 1, --sps->nwait *
		    sizeof *sps->wait);
		if (c == NULL)
			close(sfd);
		else
			session_port_conn_attach(c, sfd);
	}
	if (rc == -1) {
		log_warnx("session %lld: cannot reach into its jail for its "
		    "forwarded ports: %s", (long long)s->id, cause);
		free(cause);
		session_port_door_close(s);
	}
}

/* The door into the jail, opened on first use; -1 with *CAUSE. */
static int
session_port_door(struct session *s, char **cause)
{
	struct session_ports *sps = session_port_state(s);

	if (sps->door != -1)
		return 0;
	if (s->jail == NULL || s->reaped || s->starting) {
		*cause = xprintf("session %lld has no running jail",
		    (long long)s->id);
		return -1;
	}
	if ((sps->door = jail_door_open(s->jail, &sps->door_pidfd,
	    cause)) == -1)
		return -1;
	sps->door_ev = event_new(s->ctx->base, sps->door, EV_READ | EV_PERSIST,
	    session_port_door_cb, s);
	if (sps->door_ev == NULL)
		fatalx("cannot create an event");
	event_add(sps->door_ev, NULL);
	return 0;
}

/*
 * The forward is full: the connection quiet longest, if it has been quiet
 * for session_port_evict_tv, may make room (a jail holding its
 * connections silent cannot keep new clients out); else NULL.
 */
static struct session_port_conn *
session_port_evictable(struct session_port *sp)
{
	struct session_port_conn *c, *oldest = sp->conns;
	int64_t quiet = (int64_t)session_port_evict_tv.tv_sec * 1000000 +
	    session_port_evict_tv.tv_usec;

	for (c = sp->conns; c != NULL; c = c->next) {
		/* Newest first: on a tie the older one goes. */
		if (c->last_us <= oldest->last_us)
			oldest = c;
	}
	if (oldest == NULL || util_mono_us() - oldest->last_us < quiet)
		return NULL;
	return oldest;
}

/* A client on the host: it waits, not read, until the door gives it a socket in the jail. */
static void
session_port_accept_cb(struct evconnlistener *lev, evutil_socket_t fd,
    struct sockaddr *sa, int salen, void *arg)
{
	struct session_port *sp = arg;
	struct session_ports *sps = sp->s->ports;
	struct session_port_conn *c, *room = NULL;
	char *cause = NULL;

	if (sp->nconns >= SESSION_PORT_CONNS &&
	    (room = session_port_evictable(sp)) == NULL) {
		log_warnx("session %lld: port %d: %d connections, all in use: "
		    "a new one is refused", (long long)sp->s->id,
		    sp->jail_port, SESSION_PORT_CONNS);
		close(fd);
		return;
	}
	if (session_port_door(sp->s, &cause) == -1 ||
	    send(sps->door, "s", 1, MSG_NOSIGNAL | MSG_DONTWAIT) != 1) {
		if (cause != NULL)
			log_warnx("session %lld: port %d: %s",
			    (long long)sp->s->id, sp->jail_port, cause);
		free(cause);
		close(fd);
		return;
	}
	/* Only once the new one is on its way does the quiet one go. */
	if (room != NULL)
		session_port_conn_free(room, "the forward was full, and it "
		    "was quiet longest");
	c = xcalloc(1, sizeof *c);
	c->sp = sp;
	c->last_us = util_mono_us();
	c->host = bufferevent_socket_new(sp->s->ctx->base, fd,
	    BEV_OPT_CLOSE_ON_FREE);
	if (c->host == NULL)
		fatalx("cannot create a bufferevent");
	bufferevent_setcb(c->host, session_port_read_cb, session_port_write_cb,
	    session_port_event_cb, c);
	c->timer = evtimer_new(sp->s->ctx->base, session_port_timeout_cb, c);
	if (c->timer == NULL)
		fatalx("cannot create a timer");
	session_port_arm(c, &session_port_connect_tv);
	c->next = sp->conns;
	sp->conns = c;
	sp->nconns++;
	sps->wait = xreallocarray(sps->wait, sps->nwait + 1,
	    sizeof *sps->wait);
	sps->wait[sps->nwait++] = c;
}

/* What is left of C's timer, kept in C->LEFT, and the timer stopped. */
static void
session_port_hold_one(struct session_port_conn *c)
{
	struct timeval due, now;

	evutil_timerclear(&c->left);
	if (!event_pending(c->timer, EV_TIMEOUT, &due))
		return;
	evtimer_del(c->timer);
	evutil_gettimeofday(&now, NULL);
	evutil_timersub(&due, &now, &c->left);
	/* Due already: at once, but still a timeout (0 would mean none). */
	if (c->left.tv_sec < 0 || (c->left.tv_sec == 0 &&
	    c->left.tv_usec <= 0)) {
		c->left.tv_sec = 0;
		c->left.tv_usec = 1;
	}
}

/* C goes on after a pause of PAUSED us: its timer with what was left. */
static void
session_port_resume_one(struct session_port_conn *c, int64_t paused)
{
	c->last_us += paused;
	if (evutil_timerisset(&c->left))
		event_add(c->timer, &c->left);
	evutil_timerclear(&c->left);
}

void
session_ports_pause(struct session *s, bool hold)
{
	struct session_ports *sps = s->ports;
	struct session_port_conn *c;
	struct session_port *sp;
	int64_t paused;

	if (sps == NULL || (sps->held_since != 0) == hold)
		return;
	paused = hold ? 0 : util_mono_us() - sps->held_since;
	sps->held_since = hold ? util_mono_us() : 0;
	for (sp = sps->list; sp != NULL; sp = sp->next) {
		for (c = sp->conns; c != NULL; c = c->next) {
			if (hold)
				session_port_hold_one(c);
			else
				session_port_resume_one(c, paused);
		}
	}
}

/* Whether HOST (numeric) is a loopback address; false if it is no address. */
static bool
session_port_loopback(const char *host, int *family)
{
	struct in6_addr a6;
	struct in_addr a4;

	if (inet_pton(AF_INET, host, &a4) == 1) {
		*family = AF_INET;
		return (ntohl(a4.s_addr) >> 24) == 127;
	}
	if (inet_pton(AF_INET6, host, &a6) == 1) {
		*family = AF_INET6;
		return IN6_IS_ADDR_LOOPBACK(&a6);
	}
	*family = AF_UNSPEC;
	return false;
}

/* The forward of another live session on HOST:PORT, if any. */
static struct session_port *
session_port_find_host(struct session_ctx *ctx, const char *host, int port)
{
	struct session_port *sp;
	struct session *s;

	for (s = ctx->sessions; s != NULL; s = s->next) {
		for (sp = s->ports != NULL ? s->ports->list : NULL; sp != NULL;
		    sp = sp->next) {
			if (sp->host_port == port && strcmp(sp->host, host) == 0)
				return sp;
		}
	}
	return NULL;
}

/* Why binding HOST:PORT failed (ERR), for the user. */
static char *
session_port_bind_cause(struct session *s, const char *host, int port,
    int err)
{
	struct session_port *sp = session_port_find_host(s->ctx, host, port);

	if (sp != NULL)
		return xprintf("%s port %d is already forwarded to session "
		    "%lld's port %d; pick another HOST_PORT or remove that "
		    "one (agentmux port -d %lld %d)", host, port,
		    (long long)sp->s->id, sp->jail_port, (long long)sp->s->id,
		    sp->jail_port);
	if (err == EADDRINUSE)
		return xprintf("%s port %d is in use on this host; pick "
		    "another HOST_PORT (0: any free one)", host, port);
	if (err == EACCES)
		return xprintf("cannot listen on %s port %d: %s; ports below "
		    "1024 need privileges: pick another HOST_PORT", host,
		    port, strerror(err));
	return xprintf("cannot listen on %s port %d: %s", host, port,
	    strerror(err));
}

/* A listening socket on HOST:PORT (the port actually bound in *BOUND); -1 with *CAUSE. */
static int
session_port_listen(struct session *s, const char *host, int family,
    int port, int *bound, char **cause)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
	socklen_t len;
	int fd, one = 1, err;

	memset(&ss, 0, sizeof ss);
	ss.ss_family = (sa_family_t)family;
	if (family == AF_INET) {
		inet_pton(AF_INET, host, &sin->sin_addr);
		sin->sin_port = htons((uint16_t)port);
		len = sizeof *sin;
	} else {
		inet_pton(AF_INET6, host, &sin6->sin6_addr);
		sin6->sin6_port = htons((uint16_t)port);
		len = sizeof *sin6;
	}
	if ((fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0)) == -1) {
		*cause = xprintf("cannot create a socket: %s", strerror(errno));
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(fd, (struct sockaddr *)&ss, len) == -1 ||
	    listen(fd, 64) == -1 ||
	    getsockname(fd, (struct sockaddr *)&ss, &len) == -1) {
		err = errno;
		close(fd);
		*cause = session_port_bind_cause(s, host, port, err);
		return -1;
	}
	*bound = ntohs(family == AF_INET ? sin->sin_port : sin6->sin6_port);
	return fd;
}

/* Checks a forward's numbers and address before anything is made. */
static int
session_port_check(struct session *s, const char *host, bool named,
    int host_port, int jail_port, int *family, char **cause)
{
	char *q;

	if (jail_port < 1 || jail_port > 65535 || host_port < 0 ||
	    host_port > 65535) {
		*cause = xstrdup("a port is a number from 1 to 65535 (a "
		    "HOST_PORT of 0: any free one)");
		return -1;
	}
	/* Through them the host's programs would use the session's proxy, its secrets too. */
	if (jail_port == SESSION_PROXY_PORT ||
	    jail_port == SESSION_PROXY_PORT + 1) {
		*cause = xprintf("port %d in the jail is agentmux's own proxy "
		    "listener, not the session's; it is not forwarded",
		    jail_port);
		return -1;
	}
	if (!session_port_loopback(host, family) && *family == AF_UNSPEC) {
		q = quote_name(host);
		*cause = xprintf("%s is not a numeric IPv4 or IPv6 address", q);
		free(q);
		return -1;
	}
	if (!session_port_loopback(host, family) && !named) {
		*cause = xprintf("%s is not a loopback address: other machines "
		    "could reach session %lld's port %d through it; if that "
		    "is what you want, name it with --host %s", host,
		    (long long)s->id, jail_port, host);
		return -1;
	}
	if (s->jail == NULL || s->reaped || s->starting || s->ended) {
		*cause = xprintf("session %lld has no running jail to forward "
		    "to", (long long)s->id);
		return -1;
	}
	return 0;
}

void
session_port_default_host(int64_t id, char *buf, size_t len)
{
	uint64_t n = (uint64_t)id % SESSION_PORT_NETS;

	snprintf(buf, len, "127.%d.%d.1",
	    SESSION_PORT_NET_FIRST + (int)(n / 256), (int)(n % 256));
}

int
session_port_add(struct session *s, const char *host, bool named,
    int host_port, int jail_port, int *bound, char **cause)
{
	struct session_ports *sps;
	struct session_port *sp;
	char own[INET_ADDRSTRLEN];
	int family, fd;

	/* Its own address: the browser keeps its cookies and storage apart from 127.0.0.1's and other sessions'. */
	if (host == NULL) {
		session_port_default_host(s->id, own, sizeof own);
		host = own;
	}
	if (session_port_check(s, host, named, host_port, jail_port, &family,
	    cause) == -1 || session_port_door(s, cause) == -1)
		return -1;
	if ((fd = session_port_listen(s, host, family, host_port, bound,
	    cause)) == -1)
		return -1;
	sps = session_port_state(s);
	sp = xcalloc(1, sizeof *sp);
	sp->s = s;
	snprintf(sp->host, sizeof sp->host, "%s", host);
	sp->host_port = *bound;
	sp->jail_port = jail_port;
	sp->lev = evconnlistener_new(s->ctx->base, session_port_accept_cb, sp,
	    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 0, fd);
	if (sp->lev == NULL)
		fatalx("cannot create a listener");
	sp->next = sps->list;
	sps->list = sp;
	log_info("session %lld: %s port %d forwarded to its port %d",
	    (long long)s->id, host, *bound, jail_port);
	return 0;
}

static void
session_port_free(struct session_port *sp)
{
	struct session_port_conn *c;

	/* Each taken off the list first: conn_free finds it gone. */
	while ((c = sp->conns) != NULL) {
		sp->conns = c->next;
		session_port_conn_free(c, "the forward was removed");
	}
	evconnlistener_free(sp->lev);
	free(sp);
}

int
session_port_remove(struct session *s, int jail_port, char **cause)
{
	struct session_ports *sps = session_port_state(s);
	struct session_port **pp, *sp;
	int n = 0;

	for (pp = &sps->list; (sp = *pp) != NULL;) {
		if (sp->jail_port != jail_port) {
			pp = &sp->next;
			continue;
		}
		*pp = sp->next;
		session_port_free(sp);
		n++;
	}
	if (n == 0) {
		*cause = xprintf("session %lld forwards nothing to its port %d; "
		    "'agentmux ls' lists its forwards", (long long)s->id,
		    jail_port);
		return -1;
	}
	if (sps->list == NULL)
		session_port_door_close(s);
	return 0;
}

size_t
session_ports(struct session *s, struct session_port_info *out, size_t max)
{
	struct session_port *sp;
	size_t n = 0;

	for (sp = s->ports != NULL ? s->ports->list : NULL; sp != NULL;
	    sp = sp->next) {
		if (n < max) {
			out[n].host = sp->host;
			out[n].host_port = sp->host_port;
			out[n].jail_port = sp->jail_port;
			out[n].conns = sp->nconns;
		}
		n++;
	}
	return n;
}

void
session_ports_end(struct session *s)
{
	struct session_port *sp;

	if (s->ports == NULL)
		return;
	while ((sp = s->ports->list) != NULL) {
		s->ports->list = sp->next;
		session_port_free(sp);
	}
	session_port_door_close(s);
	free(s->ports);
	s->ports = NULL;
}
