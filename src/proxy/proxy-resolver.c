/* The jail's resolver: DNS queries parsed strictly and answered from agentmux (synthetic addresses, NXDOMAIN for denied names), never sent upstream. */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "proxy/proxy-int.h"

#define PROXY_DNS_HDR 12
#define PROXY_DNS_TTL 5               /* seconds: the name stays, the decision comes at connect */
#define PROXY_DNS_TCP_MAX 8           /* resolver TCP connections at once */
#define PROXY_DNS_TCP_SECS 5
#define PROXY_DNS_STR1(x) #x
#define PROXY_DNS_STR(x) PROXY_DNS_STR1(x)

/* One DNS-over-TCP client: a length-prefixed query, one answer, then close. */
struct proxy_dns_tcp {
	TAILQ_ENTRY(proxy_dns_tcp) entry;
	struct proxy_session *ps;
	int fd;
	struct event *ev;
	unsigned char buf[2 + PROXY_DNS_MAX];
	size_t len;
};

static uint16_t
proxy_dns_u16(const unsigned char *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void
proxy_dns_put16(unsigned char *p, unsigned v)
{
	p[0] = (unsigned char)(v >> 8);
	p[1] = (unsigned char)v;
}

/*
 * The question's name, lower-cased and dotted, from its labels at MSG+OFF:
 * no compression (a query has nothing to point back to), labels of 1 to
 * 63 bytes, 253 characters at most. The offset after it, or 0.
 */
static size_t
proxy_dns_name(const unsigned char *msg, size_t len, size_t off, char *name)
{
	size_t n = 0, l;

	for (;;) {
		if (off >= len)
			return 0;
		l = msg[off++];
		if (l == 0)
			break;
		if (l > 63 || off + l > len ||
		    n + (n != 0) + l + 1 > PROXY_DNS_NAME_MAX)
			return 0;
		/* A byte that would cut or split the name as text. */
		if (memchr(msg + off, '\0', l) != NULL ||
		    memchr(msg + off, '.', l) != NULL)
			return 0;
		if (n != 0)
			name[n++] = '.';
		memcpy(name + n, msg + off, l);
		n += l;
		off += l;
	}
	name[n] = '\0';
	return n == 0 ? 0 : off;
}

int
proxy_dns_parse(const void *data, size_t len, struct proxy_dns_query *q)
{
	const unsigned char *msg = data;
	size_t off;

	memset(q, 0, sizeof *q);
	if (len < PROXY_DNS_HDR || len > PROXY_DNS_MAX)
		return -1;
	q->id = proxy_dns_u16(msg);
	q->flags = proxy_dns_u16(msg + 2);
	/* A query (QR 0), one question, nothing answered or delegated. */
	if ((q->flags & 0x8000) || proxy_dns_u16(msg + 4) != 1 ||
	    proxy_dns_u16(msg + 6) != 0 || proxy_dns_u16(msg + 8) != 0 ||
	    proxy_dns_u16(msg + 10) > 1)
		return -1;
	if ((off = proxy_dns_name(msg, len, PROXY_DNS_HDR, q->name)) == 0 ||
	    off + 4 > len)
		return -1;
	q->type = proxy_dns_u16(msg + off);
	q->class = proxy_dns_u16(msg + off + 2);
	q->qlen = off + 4 - PROXY_DNS_HDR;
	/* Only its own opcode: the answers copy the question, nothing else. */
	q->opcode = (q->flags >> 11) & 0xf;
	return 0;
}

size_t
proxy_dns_answer(const void *query, const struct proxy_dns_query *q,
    int rcode, uint32_t addr, unsigned char *out, size_t cap)
{
	size_t n = PROXY_DNS_HDR + q->qlen;

	if (cap < n + 16)
		return 0;
	memcpy(out + PROXY_DNS_HDR, (const unsigned char *)query +
	    PROXY_DNS_HDR, q->qlen);
	proxy_dns_put16(out, q->id);
	/* QR, the opcode asked, AA, RD as asked, RA, RCODE. */
	proxy_dns_put16(out + 2, 0x8000 | (q->flags & 0x7800) | 0x0400 |
	    (q->flags & 0x0100) | 0x0080 | (unsigned)(rcode & 0xf));
	proxy_dns_put16(out + 4, 1);
	proxy_dns_put16(out + 6, addr != 0 ? 1 : 0);
	proxy_dns_put16(out + 8, 0);
	proxy_dns_put16(out + 10, 0);
	if (addr == 0)
		return n;
	/* The name by pointer to the question, A, IN, TTL, 4 bytes. */
	proxy_dns_put16(out + n, 0xc000 | PROXY_DNS_HDR);
	proxy_dns_put16(out + n + 2, 1);
	proxy_dns_put16(out + n + 4, 1);
	proxy_dns_put16(out + n + 6, 0);
	proxy_dns_put16(out + n + 8, PROXY_DNS_TTL);
	proxy_dns_put16(out + n + 10, 4);
	addr = htonl(addr);
	memcpy(out + n + 12, &addr, 4);
	return n + 16;
}

/* ---- names and their synthetic addresses ---- */

/*
 * An open-addressing index of strings kept in a strv: slot holds I + 1 of
 * V[I], 0 when empty. Twice as many slots as entries at most, so a
 * lookup is a few probes, not a scan (a jail sends as many names as it
 * likes).
 */
struct proxy_dns_set {
	uint32_t *slot;
	size_t nslot;               /* a power of two */
};

static uint32_t
proxy_dns_hash(const char *s)
{
	uint32_t h = 2166136261U;   /* FNV-1a */

	for (; *s != '\0'; s++)
		h = (h ^ (unsigned char)*s) * 16777619U;
	return h;
}

static struct proxy_dns_set *
proxy_dns_set_new(size_t max)
{
	struct proxy_dns_set *set = xcalloc(1, sizeof *set);

	set->nslot = 16;
	while (set->nslot < max * 2)
		set->nslot *= 2;
	set->slot = xcalloc(set->nslot, sizeof *set->slot);
	return set;
}

static void
proxy_dns_set_free(struct proxy_dns_set *set)
{
	if (set == NULL)
		return;
	free(set->slot);
	free(set);
}

/* The slot that holds KEY, or the empty one where it would go. */
static size_t
proxy_dns_set_find(const struct proxy_dns_set *set, const struct strv *v,
    const char *key)
{
	size_t i = proxy_dns_hash(key) & (set->nslot - 1);

	while (set->slot[i] != 0 && strcmp(v->v[set->slot[i] - 1], key) != 0)
		i = (i + 1) & (set->nslot - 1);
	return i;
}

/* KEY's index in V, added (if fewer than MAX) when new; -1 when full. */
static long
proxy_dns_intern(struct proxy_dns_set **setp, struct strv *v, size_t max,
    const char *key, bool *added)
{
	size_t i;

	*added = false;
	if (*setp == NULL)
		*setp = proxy_dns_set_new(max);
	i = proxy_dns_set_find(*setp, v, key);
	if ((*setp)->slot[i] != 0)
		return (long)(*setp)->slot[i] - 1;
	if (v->n >= max)
		return -1;
	strv_add(v, key);
	(*setp)->slot[i] = (uint32_t)v->n;
	*added = true;
	return (long)v->n - 1;
}

uint32_t
proxy_dns_addr_of(struct proxy_session *ps, const char *name)
{
	bool added;
	long i;

	i = proxy_dns_intern(&ps->synth_index, &ps->synth, PROXY_SYNTH_MAX,
	    name, &added);
	return i == -1 ? 0 : PROXY_SYNTH_FIRST + (uint32_t)i;
}

const char *
proxy_dns_name_of(struct proxy_session *ps, uint32_t addr)
{
	if (addr < PROXY_SYNTH_FIRST || addr - PROXY_SYNTH_FIRST >= ps->synth.n)
		return NULL;
	return ps->synth.v[addr - PROXY_SYNTH_FIRST];
}

void
proxy_dns_free(struct proxy_session *ps)
{
	proxy_dns_set_free(ps->synth_index);
	proxy_dns_set_free(ps->dns_recorded);
	ps->synth_index = ps->dns_recorded = NULL;
	strv_free(&ps->synth);
	strv_free(&ps->dns_keys);
}

/* ---- answering ---- */

static const char *
proxy_dns_type_name(unsigned type)
{
	switch (type) {
	case 1:
		return "A";
	case 28:
		return "AAAA";
	case 5:
		return "CNAME";
	case 15:
		return "MX";
	case 16:
		return "TXT";
	case 33:
		return "SRV";
	case 65:
		return "HTTPS";
	default:
		return "OTHER";
	}
}

/* A name every port of which a rule denies gets no address at all. */
static bool
proxy_dns_denied(struct proxy_session *ps, const char *name,
    const char **rule)
{
	const char *r80 = NULL;

	if (proxy_policy_check(ps->policy, name, 443, NULL, NULL, rule) !=
	    PROXY_DENY)
		return false;
	return proxy_policy_check(ps->policy, name, 80, NULL, NULL, &r80) ==
	    PROXY_DENY;
}

/* Records the lookup, as a request of scheme "dns". */
static void
proxy_dns_record(struct proxy_session *ps, const struct proxy_dns_query *q,
    const char *decision, const char *rule, const char *error)
{
	struct request rec;
	char *key;
	bool added;

	if (ps->cbs.request == NULL)
		return;
	/*
	 * Once per name, type and outcome: a repeat is counted, not stored,
	 * so a jail's lookups cannot use up the session's record budget.
	 */
	key = xprintf("%s %s %s", proxy_dns_type_name(q->type), decision,
	    q->name);
	proxy_dns_intern(&ps->dns_recorded, &ps->dns_keys, PROXY_DNS_KEYS_MAX,
	    key, &added);
	free(key);
	if (!added) {
		ps->dns_repeats++;
		return;
	}
	request_init(&rec);
	rec.id = (int64_t)++ps->next_request;
	rec.session_id = ps->session_id;
	rec.done = true;
	rec.started_at = util_now_ms();
	request_set(&rec.method, proxy_dns_type_name(q->type));
	request_set(&rec.scheme, "dns");
	request_set(&rec.host, q->name);
	rec.port = 53;
	request_set(&rec.path, "");
	request_set(&rec.http_version, "");
	request_set(&rec.decision, decision);
	request_set(&rec.rule, rule);
	request_set(&rec.error, error);
	rec.ttfb_us = -1;
	ps->cbs.request(ps->arg, &rec);
	request_clear(&rec);
}

/*
 * The answer to query MSG (LEN bytes) in OUT, its length, or 0 to drop
 * it (not a query one can answer: a client gets no help probing us).
 */
/*
 * The secret whose placeholder NAME carries (in any case, across its dots,
 * or hex-encoded) and that may not go to NAME, or NULL: a name is asked of
 * the host's DNS when something connects to it, so it must not carry one
 * out, as a CONNECT target may not.
 */
static const struct proxy_secret *
proxy_dns_leak(struct proxy_session *ps, const char *name)
{
	const struct proxy_secret *s;
	char *flat, *p;
	const char *c;
	bool *want;
	size_t i;
	int found;

	if (ps->nsecrets == 0)
		return NULL;
	flat = p = xmalloc(strlen(name) + 1);
	for (c = name; *c != '\0'; c++) {
		if (*c != '.')
			*p++ = *c;
	}
	*p = '\0';
	want = xcalloc(ps->nsecrets, sizeof *want);
	for (s = NULL, i = 0; s == NULL && i < ps->nsecrets; i++) {
		want[i] = !proxy_secret_bound(&ps->secrets[i], name);
		if (want[i] && strcasestr(flat, ps->secrets[i].placeholder) != NULL)
			s = &ps->secrets[i];
	}
	if (s == NULL && (found = proxy_scan_once(
	    ps->patterns, want, flat, strlen(flat))) != -1)
		s = &ps->secrets[found];
	free(want);
	free(flat);
	return s;
}

size_t
proxy_dns_reply(struct proxy_session *ps, const unsigned char *msg,
    size_t len, unsigned char *out, size_t cap)
{
	struct proxy_dns_query q;
	const struct proxy_secret *leak;
	const char *rule = NULL;
	char *why;
	uint32_t addr = 0;
	int rcode = PROXY_DNS_NOERROR;
	size_t n;

	if (proxy_dns_parse(msg, len, &q) == -1)
		return 0;
	if (q.opcode != 0 || q.class != 1)
		return proxy_dns_answer(msg, &q, PROXY_DNS_NOTIMP, 0, out, cap);
	if (!proxy_host_valid(q.name) || proxy_host_is_addr(q.name)) {
		proxy_dns_record(ps, &q, "deny", NULL, "not a host name");
		return proxy_dns_answer(msg, &q, PROXY_DNS_NXDOMAIN, 0, out,
		    cap);
	}
	if ((leak = proxy_dns_leak(ps, q.name)) != NULL) {
		why = xprintf("the placeholder of secret %s was looked up in the "
		    "name %s; it may only go to its own hosts, over TLS, so the "
		    "name does not resolve", leak->name, q.name);
		if (ps->cbs.alert != NULL)
			ps->cbs.alert(ps->arg, "exfiltration", why);
		proxy_dns_record(ps, &q, "deny", NULL, why);
		free(why);
		return proxy_dns_answer(msg, &q, PROXY_DNS_NXDOMAIN, 0, out,
		    cap);
	}
	if (proxy_dns_denied(ps, q.name, &rule)) {
		why = xprintf("NXDOMAIN: denied by %s", rule);
		proxy_dns_record(ps, &q, "deny", rule, why);
		free(why);
		return proxy_dns_answer(msg, &q, PROXY_DNS_NXDOMAIN, 0, out,
		    cap);
	}
	/* A for a name; every other type: the name exists, with no records. */
	if (q.type == 1 && (addr = proxy_dns_addr_of(ps, q.name)) == 0)
		rcode = PROXY_DNS_SERVFAIL;
	n = proxy_dns_answer(msg, &q, rcode, addr, out, cap);
	if (rcode != PROXY_DNS_NOERROR) {
		/* Said once: every later new name fails the same way. */
		if (!ps->dns_full_told)
			proxy_dns_record(ps, &q, "error", NULL, "SERVFAIL: this "
			    "session looked up " PROXY_DNS_STR(PROXY_SYNTH_MAX)
			    " names, agentmux's limit for one session; names "
			    "not seen before now fail (start a new session)");
		ps->dns_full_told = true;
	} else if (q.type == 1 || q.type == 28)
		proxy_dns_record(ps, &q, "allow", NULL, NULL);
	return n;
}

static void
proxy_dns_udp_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proxy_session *ps = arg;
	unsigned char in[PROXY_DNS_MAX], out[PROXY_DNS_MAX + 16];
	struct sockaddr_storage ss;
	socklen_t sl;
	ssize_t n;
	size_t m;
	int i;

	for (i = 0; i < 32; i++) {
		sl = sizeof ss;
		if ((n = recvfrom(fd, in, sizeof in, MSG_DONTWAIT | MSG_TRUNC,
		    (struct sockaddr *)&ss, &sl)) == -1)
			return;
		if ((size_t)n > sizeof in)
			continue;
		if ((m = proxy_dns_reply(ps, in, (size_t)n, out, sizeof out)) !=
		    0)
			sendto(fd, out, m, MSG_DONTWAIT, (struct sockaddr *)&ss,
			    sl);
	}
}

static void
proxy_dns_tcp_free(struct proxy_dns_tcp *dt)
{
	TAILQ_REMOVE(&dt->ps->dns_tcp, dt, entry);
	event_free(dt->ev);
	close(dt->fd);
	dt->ps->ndns_tcp--;
	free(dt);
}

static void
proxy_dns_tcp_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proxy_dns_tcp *dt = arg;
	unsigned char out[2 + PROXY_DNS_MAX + 16];
	size_t want, m;
	ssize_t n;

	if (what & EV_TIMEOUT)
		goto done;
	n = recv(fd, dt->buf + dt->len, sizeof dt->buf - dt->len,
	    MSG_DONTWAIT);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0)
		goto done;
	dt->len += (size_t)n;
	if (dt->len < 2)
		return;
	want = proxy_dns_u16(dt->buf);
	if (want > PROXY_DNS_MAX)
		goto done;
	if (dt->len < 2 + want)
		return;
	/* One query per connection: enough for a stub resolver's retry. */
	if ((m = proxy_dns_reply(dt->ps, dt->buf + 2, want, out + 2,
	    sizeof out - 2)) != 0) {
		proxy_dns_put16(out, (unsigned)m);
		n = send(fd, out, m + 2, MSG_DONTWAIT | MSG_NOSIGNAL);
		(void)n;
	}
done:
	proxy_dns_tcp_free(dt);
}

static void
proxy_dns_accept_cb(evutil_socket_t lfd, short what, void *arg)
{
	struct proxy_session *ps = arg;
	struct timeval tv = { PROXY_DNS_TCP_SECS, 0 };
	struct proxy_dns_tcp *dt;
	int fd;

	if ((fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) ==
	    -1)
		return;
	if (ps->ndns_tcp >= PROXY_DNS_TCP_MAX) {
		close(fd);
		return;
	}
	dt = xcalloc(1, sizeof *dt);
	dt->ps = ps;
	dt->fd = fd;
	dt->ev = event_new(ps->px->base, fd, EV_READ | EV_PERSIST,
	    proxy_dns_tcp_cb, dt);
	ps->ndns_tcp++;
	TAILQ_INSERT_TAIL(&ps->dns_tcp, dt, entry);
	event_add(dt->ev, &tv);
}

int
proxy_dns_start(struct proxy_session *ps, int udp_fd, int tcp_fd,
    char **cause)
{
	/* The session owns them from here: proxy_dns_stop closes them. */
	ps->dns_udp_fd = udp_fd;
	ps->dns_tcp_fd = tcp_fd;
	if (util_set_nonblock(udp_fd) == -1 || util_set_nonblock(tcp_fd) ==
	    -1) {
		*cause = xprintf("cannot use the jail's resolver sockets: %s",
		    strerror(errno));
		return -1;
	}
	ps->dns_udp_ev = event_new(ps->px->base, udp_fd, EV_READ | EV_PERSIST,
	    proxy_dns_udp_cb, ps);
	ps->dns_tcp_ev = event_new(ps->px->base, tcp_fd, EV_READ | EV_PERSIST,
	    proxy_dns_accept_cb, ps);
	event_add(ps->dns_udp_ev, NULL);
	event_add(ps->dns_tcp_ev, NULL);
	return 0;
}

void
proxy_dns_stop(struct proxy_session *ps)
{
	struct proxy_dns_tcp *dt;

	/* Each free takes DT off the list: the next first is another. */
	while ((dt = TAILQ_FIRST(&ps->dns_tcp)) != NULL)
		proxy_dns_tcp_free(dt); /* NOLINT(clang-analyzer-unix.Malloc) */
	if (ps->dns_udp_ev != NULL) {
		event_free(ps->dns_udp_ev);
		event_free(ps->dns_tcp_ev);
		ps->dns_udp_ev = ps->dns_tcp_ev = NULL;
	}
	if (ps->dns_udp_fd != -1)
		close(ps->dns_udp_fd);
	if (ps->dns_tcp_fd != -1)
		close(ps->dns_tcp_fd);
	ps->dns_udp_fd = ps->dns_tcp_fd = -1;
}
