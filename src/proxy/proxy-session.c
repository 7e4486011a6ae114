/* One session's proxy: its listener, its connections, its policy and the questions it asks the user. */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <linux/netfilter_ipv4.h>
#include <netinet/in.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "proxy/proxy-int.h"

#define PROXY_ACCEPT_BATCH 64
#define PROXY_CAP_WARN_US (10 * 1000000LL)

static const char proxy_session_busy[] =
    "HTTP/1.1 503 Service Unavailable\r\n"
    "Content-Type: text/plain; charset=utf-8\r\n"
    "Content-Length: 67\r\n"
    "Connection: close\r\n"
    "\r\n"
    "agentmux: too many connections from this session; try again later\n";

/* Over the connection cap: a short 503, written without waiting. */
static void
proxy_session_refuse(struct proxy_session *ps, int fd)
{
	int64_t now = util_mono_us();
	ssize_t n;
	char *msg;

	n = write(fd, proxy_session_busy, sizeof proxy_session_busy - 1);
	(void)n;
	close(fd);
	if (now - ps->cap_warned_us < PROXY_CAP_WARN_US &&
	    ps->cap_warned_us != 0)
		return;
	ps->cap_warned_us = now;
	msg = xprintf("more than %d connections at once: new ones get 503",
	    ps->px->max_connections);
	log_warnx("%s: %s", ps->label, msg);
	if (ps->cbs.alert != NULL)
		ps->cbs.alert(ps->arg, "limit", msg);
	free(msg);
}

static void
proxy_session_resume_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proxy_session *ps = arg;

	if (ps->accepting && !ps->paused) {
		event_add(ps->listen_ev, NULL);
		if (ps->redirect_ev != NULL)
			event_add(ps->redirect_ev, NULL);
	}
}

/*
 * A connection the redirect brought: where the jail meant it to go
 * (SO_ORIGINAL_DST, from the redirect's conntrack entry) is a synthetic
 * address, and so a name its resolver gave out.
 */
static void
proxy_session_redirected(struct proxy_session *ps, int fd)
{
	struct sockaddr_in sin;
	socklen_t sl = sizeof sin;
	const char *name = NULL;
	uint32_t a;

	if (getsockopt(fd, SOL_IP, SO_ORIGINAL_DST, &sin, &sl) == 0 &&
	    sin.sin_family == AF_INET) {
		a = ntohl(sin.sin_addr.s_addr);
		name = proxy_dns_name_of(ps, a);
	}
	/* Port 0 reaches nothing (a CONNECT to it is refused as well). */
	if (name == NULL || sin.sin_port == 0) {
		/* Not an address the resolver gave out: nothing to judge. */
		log_debug("%s: a redirected connection to an address no name "
		    "stands for", ps->label);
		close(fd);
		return;
	}
	proxy_conn_accept_transparent(ps, fd, name, ntohs(sin.sin_port));
}

static void
proxy_session_accept_cb(evutil_socket_t lfd, short what, void *arg)
{
	struct proxy_session *ps = arg;
	struct timeval tv = { 1, 0 };
	bool redirect = lfd == ps->redirect_fd;
	int i, fd;

	for (i = 0; i < PROXY_ACCEPT_BATCH && ps->accepting; i++) {
		fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd == -1) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			/* Out of descriptors: stop for a second, not spin. */
			log_warn("%s: accept", ps->label);
			event_del(ps->listen_ev);
			if (ps->redirect_ev != NULL)
				event_del(ps->redirect_ev);
			evtimer_add(ps->resume_ev, &tv);
			return;
		}
		/* Idle and slow connections make room; busy ones do not. */
		if (ps->nconns >= ps->px->max_connections &&
		    !proxy_conn_evict(ps))
			proxy_session_refuse(ps, fd);
		else if (redirect)
			proxy_session_redirected(ps, fd);
		else
			proxy_conn_accept(ps, fd);
	}
}

static void
proxy_session_copy_secrets(struct proxy_session *ps,
    const struct proxy_secret *v, size_t n)
{
	struct proxy_secret *s;
	struct strv hosts;
	char *const *h;
	size_t i;

	ps->secrets = xcalloc(n + 1, sizeof *ps->secrets);
	ps->secret_values = xcalloc(n + 1, sizeof *ps->secret_values);
	for (i = 0; i < n; i++) {
		s = &ps->secrets[i];
		s->name = xstrdup(v[i].name);
		s->placeholder = xstrdup(v[i].placeholder);
		s->value = xstrdup(v[i].value);
		s->header = v[i].header != NULL ? xstrdup(v[i].header) : NULL;
		strv_init(&hosts);
		for (h = v[i].hosts; h != NULL && *h != NULL; h++)
			strv_add(&hosts, *h);
		if (hosts.v == NULL)
			strv_add(&hosts, "");   /* bound to nothing */
		s->hosts = hosts.v;
		ps->secret_values[i] = (char *)s->value;
	}
	ps->nsecrets = n;
	ps->patterns = proxy_scan_patterns(ps->secrets, n);
}

static void
proxy_session_free_secrets(struct proxy_session *ps)
{
	struct proxy_secret *s;
	char **h;
	size_t i;

	for (i = 0; i < ps->nsecrets; i++) {
		s = &ps->secrets[i];
		free((char *)s->name);
		free((char *)s->placeholder);
		explicit_bzero((char *)s->value, strlen(s->value));
		free((char *)s->value);
		free((char *)s->header);
		for (h = (char **)s->hosts; *h != NULL; h++)
			free(*h);
		free((char **)s->hosts);
	}
	free(ps->secrets);
	free(ps->secret_values);
	proxy_scan_patterns_free(ps->patterns);
}

/* Serves the redirect's listener and the jail's resolver. */
static int
proxy_session_transparent(struct proxy_session *ps,
    const struct proxy_session_conf *conf, char **cause)
{
	if (conf->redirect_fd == -1 || conf->dns_udp_fd == -1 ||
	    conf->dns_tcp_fd == -1) {
		*cause = xstrdup("the jail handed out no sockets for "
		    "transparent interception");
		goto fail;
	}
	if (util_set_nonblock(conf->redirect_fd) == -1) {
		*cause = xprintf("cannot use the redirect's listener: %s",
		    strerror(errno));
		goto fail;
	}
	ps->redirect_fd = conf->redirect_fd;
	ps->redirect_ev = event_new(ps->px->base, ps->redirect_fd, EV_READ |
	    EV_PERSIST, proxy_session_accept_cb, ps);
	event_add(ps->redirect_ev, NULL);
	return proxy_dns_start(ps, conf->dns_udp_fd, conf->dns_tcp_fd, cause);
fail:
	if (conf->redirect_fd != -1)
		close(conf->redirect_fd);
	if (conf->dns_udp_fd != -1)
		close(conf->dns_udp_fd);
	if (conf->dns_tcp_fd != -1)
		close(conf->dns_tcp_fd);
	return -1;
}

struct proxy_session *
proxy_session_create(struct proxy *px, const struct proxy_session_conf *conf,
    const struct proxy_session_cbs *cbs, void *arg, char **cause)
{
	struct proxy_session *ps;

	if (util_set_nonblock(conf->listen_fd) == -1 ||
	    util_set_cloexec(conf->listen_fd) == -1) {
		*cause = xprintf("cannot use the proxy listener: %s",
		    strerror(errno));
		close(conf->listen_fd);
		proxy_policy_free(conf->policy);
		return NULL;
	}
	ps = xcalloc(1, sizeof *ps);
	ps->px = px;
	ps->policy = conf->policy;
	ps->ask = conf->ask;
	ps->prompt_timeout = conf->prompt_timeout > 0 ? conf->prompt_timeout :
	    60;
	ps->label = xstrdup(conf->label != NULL ? conf->label : "proxy");
	ps->session_id = conf->session_id;
	if (cbs != NULL)
		ps->cbs = *cbs;
	ps->arg = arg;
	proxy_session_copy_secrets(ps, conf->secrets, conf->nsecrets);
	TAILQ_INIT(&ps->conns);
	TAILQ_INIT(&ps->pool);
	TAILQ_INIT(&ps->questions);
	ps->listen_fd = conf->listen_fd;
	ps->listen_ev = event_new(px->base, ps->listen_fd, EV_READ | EV_PERSIST,
	    proxy_session_accept_cb, ps);
	ps->resume_ev = evtimer_new(px->base, proxy_session_resume_cb, ps);
	ps->accepting = true;
	event_add(ps->listen_ev, NULL);
	ps->redirect_fd = ps->dns_udp_fd = ps->dns_tcp_fd = -1;
	TAILQ_INIT(&ps->dns_tcp);
	strv_init(&ps->synth);
	strv_init(&ps->dns_keys);
	if (conf->transparent && proxy_session_transparent(ps, conf,
	    cause) == -1) {
		proxy_session_free(ps);
		return NULL;
	}
	return ps;
}

static void
proxy_session_question_free(struct proxy_question *q)
{
	event_free(q->timer);
	free(q->host);
	free(q->method);
	free(q->path);
	free(q->scheme);
	free(q);
}

void
proxy_session_free(struct proxy_session *ps)
{
	struct proxy_conn *pc;
	struct proxy_question *q;

	if (ps == NULL)
		return;
	ps->dying = true;
	proxy_session_stop_accepting(ps);
	while ((pc = TAILQ_FIRST(&ps->conns)) != NULL)
		proxy_conn_close(pc, "the session ended");
	while ((q = TAILQ_FIRST(&ps->questions)) != NULL) {
		TAILQ_REMOVE(&ps->questions, q, entry);
		proxy_session_question_free(q);
	}
	proxy_upstream_drain_pool(ps);
	proxy_dns_stop(ps);
	proxy_dns_free(ps);
	event_free(ps->listen_ev);
	event_free(ps->resume_ev);
	proxy_policy_free(ps->policy);
	proxy_session_free_secrets(ps);
	free(ps->label);
	free(ps);
}

void
proxy_session_stop_accepting(struct proxy_session *ps)
{
	if (!ps->accepting)
		return;
	ps->accepting = false;
	event_del(ps->listen_ev);
	evtimer_del(ps->resume_ev);
	close(ps->listen_fd);
	ps->listen_fd = -1;
	if (ps->redirect_ev != NULL) {
		event_free(ps->redirect_ev);
		ps->redirect_ev = NULL;
		close(ps->redirect_fd);
		ps->redirect_fd = -1;
	}
}

int
proxy_session_connections(struct proxy_session *ps)
{
	return ps->nconns;
}

int
proxy_session_add_rule(struct proxy_session *ps, const char *verb,
    const char *text, const char *origin, char **cause)
{
	return proxy_policy_add(ps->policy, verb, text, origin, cause);
}

/* ---- questions ---- */

static struct proxy_question *
proxy_session_question(struct proxy_session *ps, uint64_t id)
{
	struct proxy_question *q;

	TAILQ_FOREACH(q, &ps->questions, entry) {
		if (q->ask.id == id)
			return q;
	}
	return NULL;
}

static void
proxy_session_notify(struct proxy_question *q)
{
	struct proxy_session *ps = q->ps;

	if (ps->cbs.ask != NULL && !ps->dying)
		ps->cbs.ask(ps->arg, &q->ask);
}

static const char *
proxy_session_scope(enum proxy_answer a)
{
	switch (a) {
	case PROXY_ALLOW_ONCE:
	case PROXY_DENY_ONCE:
		return "once";
	case PROXY_ALLOW_SESSION:
	case PROXY_DENY_SESSION:
		return "for the session";
	case PROXY_ALLOW_ALWAYS:
	case PROXY_DENY_ALWAYS:
		return "always";
	}
	return "once";
}

/*
 * Applies the answer: a rule for SESSION and ALWAYS (SCOPE, or the
 * question's host and port), then the held requests go on, or are judged
 * again when SCOPE may not cover them all.
 */
static void
proxy_session_settle(struct proxy_question *q, enum proxy_answer a,
    const char *by, const char *scope)
{
	struct proxy_session *ps = q->ps;
	bool allow = a == PROXY_ALLOW_ONCE || a == PROXY_ALLOW_SESSION ||
	    a == PROXY_ALLOW_ALWAYS;
	bool once = a == PROXY_ALLOW_ONCE || a == PROXY_DENY_ONCE;
	char *hr = scope != NULL && !once ? xstrdup(scope) :
	    proxy_host_rule(q->host, q->ask.port, q->scheme);
	char *rule, *cause = NULL, *origin;
	struct proxy_hold *h;

	if (!once) {
		origin = xprintf("answered %s", proxy_session_scope(a));
		if (proxy_policy_add(ps->policy, allow ? "allow" : "deny", hr,
		    origin, &cause) == -1) {
			log_warnx("%s: %s", ps->label, cause);
			free(cause);
		}
		free(origin);
	}
	rule = xprintf("%s %s (answered %s by %s)", allow ? "allow" : "deny",
	    hr, proxy_session_scope(a), by);
	TAILQ_REMOVE(&ps->questions, q, entry);
	ps->nquestions--;
	evtimer_del(q->timer);
	q->ask.rule = once ? NULL : hr;
	if (ps->cbs.answered != NULL)
		ps->cbs.answered(ps->arg, &q->ask, a, by);
	while ((h = TAILQ_FIRST(&q->held)) != NULL) {
		TAILQ_REMOVE(&q->held, h, entry);
		h->q = NULL;
		if (scope != NULL && !once)
			proxy_conn_rejudge(h->pc);
		else
			proxy_conn_answered(h->pc, allow, rule);
	}
	proxy_session_question_free(q);
	free(rule);
	free(hr);
}

static void
proxy_session_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proxy_question *q = arg;

	proxy_session_settle(q, PROXY_DENY_ONCE, "timeout", NULL);
}

int
proxy_session_hold(struct proxy_session *ps, struct proxy_hold *h,
    const char *scheme, const char *host, int port, const char *method,
    const char *path)
{
	struct proxy_question *q;
	struct timeval tv = { ps->prompt_timeout, 0 };

	TAILQ_FOREACH(q, &ps->questions, entry) {
		if (q->ask.port == port && strcmp(q->host, host) == 0)
			goto join;
	}
	if (ps->nquestions >= PROXY_ASKS_MAX)
		return -1;
	q = xcalloc(1, sizeof *q);
	q->ps = ps;
	q->host = xstrdup(host);
	q->scheme = xstrdup(scheme);
	q->method = method != NULL ? xstrdup(method) : NULL;
	q->path = path != NULL ? xstrdup(path) : NULL;
	TAILQ_INIT(&q->held);
	q->ask.id = ++ps->next_ask;
	q->ask.host = q->host;
	q->ask.port = port;
	q->ask.method = q->method;
	q->ask.path = q->path;
	q->ask.scheme = q->scheme;
	q->ask.asked_at = util_now_ms();
	q->ask.deadline_mono_us = util_mono_us() +
	    (int64_t)ps->prompt_timeout * 1000000;
	q->timer = evtimer_new(ps->px->base, proxy_session_timeout_cb, q);
	evtimer_add(q->timer, &tv);
	TAILQ_INSERT_TAIL(&ps->questions, q, entry);
	ps->nquestions++;
join:
	TAILQ_INSERT_TAIL(&q->held, h, entry);
	h->q = q;
	q->ask.waiting++;
	proxy_session_notify(q);   /* may answer, and free Q */
	return 0;
}

void
proxy_session_unhold(struct proxy_hold *h)
{
	struct proxy_question *q = h->q;

	if (q == NULL)
		return;
	h->q = NULL;
	TAILQ_REMOVE(&q->held, h, entry);
	q->ask.waiting--;
	proxy_session_notify(q);
}

void
proxy_session_answer(struct proxy_session *ps, uint64_t id,
    enum proxy_answer a)
{
	struct proxy_question *q;

	if ((q = proxy_session_question(ps, id)) != NULL)
		proxy_session_settle(q, a, "user", NULL);
}

int
proxy_session_answer_rule(struct proxy_session *ps, uint64_t id,
    enum proxy_answer a, const char *rule, char **cause)
{
	struct proxy_question *q;
	const char *verb = a <= PROXY_ALLOW_ALWAYS ? "allow" : "deny";

	if (proxy_policy_validate(verb, rule, cause) == -1)
		return -1;
	if ((q = proxy_session_question(ps, id)) != NULL)
		proxy_session_settle(q, a, "user", rule);
	return 0;
}

void
proxy_session_ask_pause(struct proxy_session *ps, uint64_t id, bool pause)
{
	struct proxy_question *q;
	struct timeval tv;
	int64_t now = util_mono_us();

	if ((q = proxy_session_question(ps, id)) == NULL ||
	    q->ask.paused == pause)
		return;
	/* The user stops looking at it while the session is paused: it stays paused till resume. */
	if (!pause && ps->paused) {
		q->session_paused = true;
		return;
	}
	if (pause) {
		q->remaining_us = q->ask.deadline_mono_us - now;
		if (q->remaining_us < 0)
			q->remaining_us = 0;
		evtimer_del(q->timer);
	} else {
		q->ask.deadline_mono_us = now + q->remaining_us;
		tv.tv_sec = (time_t)(q->remaining_us / 1000000);
		tv.tv_usec = (suseconds_t)(q->remaining_us % 1000000);
		evtimer_add(q->timer, &tv);
	}
	q->ask.paused = pause;
	proxy_session_notify(q);
}

/* New connections wait (in the kernel's backlog) while the session is paused. */
static void
proxy_session_listen(struct proxy_session *ps, bool on)
{
	if (!ps->accepting)
		return;
	if (on) {
		event_add(ps->listen_ev, NULL);
		if (ps->redirect_ev != NULL)
			event_add(ps->redirect_ev, NULL);
		return;
	}
	event_del(ps->listen_ev);
	evtimer_del(ps->resume_ev);
	if (ps->redirect_ev != NULL)
		event_del(ps->redirect_ev);
}

void
proxy_session_pause(struct proxy_session *ps, bool pause)
{
	struct proxy_question *q, *next;

	if (ps->paused == pause)
		return;
	ps->paused = pause;
	proxy_session_listen(ps, !pause);
	/* A frozen jail is not an idle one: its connections wait too. */
	proxy_conn_pause(ps, pause);
	/* Resuming a countdown may not answer it, but go the safe way. */
	for (q = TAILQ_FIRST(&ps->questions); q != NULL; q = next) {
		next = TAILQ_NEXT(q, entry);
		if (pause && !q->ask.paused) {
			q->session_paused = true;
			proxy_session_ask_pause(ps, q->ask.id, true);
		} else if (!pause && q->session_paused) {
			q->session_paused = false;
			proxy_session_ask_pause(ps, q->ask.id, false);
		}
	}
}
