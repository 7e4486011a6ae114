/*
 * Fuzzes the whole proxy connection state machine on a real event loop:
 * a session serving a loopback listener, clients whose bytes come from the
 * input (plain HTTP, CONNECT, then TLS through agentmux's interception),
 * and loopback upstreams (plain and TLS, mapped by connect_to) whose
 * answers come from the input too; questions are answered by the input.
 *
 * Beyond "no crash, no leak" it checks, for every input:
 * - records never hold the secret's real value in headers or bodies, nor
 *   anywhere else unless the input itself carried the value;
 * - the value reaches no upstream but its bound host over TLS (never in
 *   cleartext, not even to that host's TLS port), unless the input carried
 *   it;
 * - the placeholder reaches no upstream but the bound host over TLS and
 *   the tunnel (whose bytes are not looked at) in one piece: as it is, as
 *   hex or base64 (forms made here with OpenSSL's encoder), percent-
 *   encoded, or in a WebSocket's frames once unmasked (read here);
 * - what reaches the host whose rules allow only GET parses, with a parser
 *   of its own, as nothing but GET requests (no smuggling past the policy)
 *   unless an answer allowed more;
 * - the bound host never gets the placeholder in a header value (swapped).
 *
 * Input: a list of operations, each an opcode byte, then for those that
 * carry data a length byte and that many bytes (see fuzz_conn_op).
 */
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <net/if.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <http_parser.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>

#include "core/core.h"
#include "fuzz.h"
#include "fuzz-util.h"
#include "proxy/proxy.h"

#define FC_PLACEHOLDER "sk-fuzz-PLACEHOLDERplaceholder01"
#define FC_CLIENTS 6
#define FC_PEERS 16
#define FC_GOT_MAX (256 * 1024)

enum fc_up {
	FC_BOUND,          /* bound.test:80, gets the secret */
	FC_BOUND_TLS,      /* bound.test:443 */
	FC_OTHER,          /* other.test:80, GET only */
	FC_OTHER_TLS,      /* other.test:443 */
	FC_TUNNEL,         /* tunnel.test:443, passed through */
	FC_NUP,
};

/* A socket the harness holds: a client, or the far end of an upstream. */
struct fc_peer {
	int fd;
	SSL *ssl;
	bool handshaken;
	bool eof;
	bool cleartext;    /* a TLS listener's peer that spoke no TLS */
	bool first_seen;   /* its first byte was looked at */
	int up;            /* enum fc_up, or -1 for a client */
	struct buf got;    /* what arrived, decrypted */
};

/* What one input did. */
struct fc_run {
	struct proxy_session *ps;
	struct sockaddr_in sin;
	struct fc_peer clients[FC_CLIENTS];
	int nclients;
	int cur;
	struct fc_peer ups[FC_PEERS];
	int nups;
	uint64_t last_ask;
	bool allowed;      /* an answer allowed something */
	struct buf sent;   /* every byte the harness sent either way */
};

static struct {
	struct event_base *base;
	struct proxy *px;
	char dir[64];
	int lfd[FC_NUP];
	SSL_CTX *client_ctx;
	SSL_CTX *server_ctx;
} fc;

static struct fc_run *fc_cur;

static const char *const fc_values[] = { FUZZ_SECRET_VALUE, NULL };

/* The placeholder's forms no upstream but its own may get (fc_make_forms). */
static struct strv fc_forms;

/* ---- set-up, once per process ---- */

static int
fc_listen(struct sockaddr_in *sin)
{
	socklen_t len = sizeof *sin;
	int fd;

	memset(sin, 0, sizeof *sin);
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0)) == -1 || bind(fd, (struct sockaddr *)sin, sizeof *sin) == -1 ||
	    listen(fd, 64) == -1 || getsockname(fd, (struct sockaddr *)sin,
	    &len) == -1)
		fatal("fuzz-conn: listen");
	return fd;
}

static void
fc_make_cert(void)
{
	char *cmd;

	cmd = xprintf("openssl req -x509 -newkey ec -pkeyopt "
	    "ec_paramgen_curve:P-256 -nodes -days 30 -subj /CN=bound.test "
	    "-addext subjectAltName=DNS:bound.test,DNS:other.test "
	    "-keyout %s/up.key -out %s/up.pem 2>/dev/null", fc.dir, fc.dir);
	if (system(cmd) != 0)
		fatalx("fuzz-conn: openssl req failed");
	free(cmd);
}

static void
fc_make_proxy(void)
{
	static const char *const names[FC_NUP] = { "bound.test:80",
		"bound.test:443", "other.test:80", "other.test:443",
		"tunnel.test:443" };
	char *connect_to[FC_NUP + 1] = { NULL }, *upca[2] = { NULL, NULL };
	struct proxy_conf conf;
	struct sockaddr_in sin;
	char *cause = NULL;
	int i;

	for (i = 0; i < FC_NUP; i++) {
		fc.lfd[i] = fc_listen(&sin);
		connect_to[i] = xprintf("%s:127.0.0.1:%d", names[i],
		    ntohs(sin.sin_port));
	}
	upca[0] = xprintf("%s/up.pem", fc.dir);
	memset(&conf, 0, sizeof conf);
	conf.data_dir = fc.dir;
	conf.upstream_ca = upca;
	conf.connect_to = connect_to;
	/* Nothing times out within an input: runs stay reproducible. */
	conf.connect_timeout = conf.idle_timeout = conf.client_timeout = 3600;
	conf.max_connections = 4;
	conf.max_body_record = 256;
	if ((fc.px = proxy_create(fc.base, &conf, &cause)) == NULL)
		fatalx("fuzz-conn: %s", cause);
	for (i = 0; i < FC_NUP; i++)
		free(connect_to[i]);
	free(upca[0]);
}

static void
fc_make_tls(void)
{
	char *cert = xprintf("%s/up.pem", fc.dir);
	char *key = xprintf("%s/up.key", fc.dir);

	fc.client_ctx = SSL_CTX_new(TLS_client_method());
	SSL_CTX_set_verify(fc.client_ctx, SSL_VERIFY_NONE, NULL);
	fc.server_ctx = SSL_CTX_new(TLS_server_method());
	if (SSL_CTX_use_certificate_file(fc.server_ctx, cert,
	    SSL_FILETYPE_PEM) != 1 || SSL_CTX_use_PrivateKey_file(fc.server_ctx,
	    key, SSL_FILETYPE_PEM) != 1)
		fatalx("fuzz-conn: cannot load the upstream certificate");
	free(cert);
	free(key);
}

static void
fc_quiet(int severity, const char *msg)
{
}

static void
fc_write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	if (fd == -1 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		fatal("fuzz-conn: %s", path);
	close(fd);
}

/*
 * A network namespace of our own with only loopback up: names the input
 * makes up are looked up (and fail) without a packet leaving the machine.
 */
static void
fc_isolate(void)
{
	uid_t uid = getuid();
	gid_t gid = getgid();
	struct ifreq ifr;
	char map[64];
	int fd;

	if (uid == 0) {
		if (unshare(CLONE_NEWNET) == -1)
			fatal("fuzz-conn: unshare(CLONE_NEWNET)");
	} else {
		if (unshare(CLONE_NEWUSER | CLONE_NEWNET) == -1)
			fatal("fuzz-conn: unshare (needs user namespaces)");
		fc_write_file("/proc/self/setgroups", "deny");
		snprintf(map, sizeof map, "%u %u 1", (unsigned)uid,
		    (unsigned)uid);
		fc_write_file("/proc/self/uid_map", map);
		snprintf(map, sizeof map, "%u %u 1", (unsigned)gid,
		    (unsigned)gid);
		fc_write_file("/proc/self/gid_map", map);
	}
	if ((fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1)
		fatal("fuzz-conn: socket");
	memset(&ifr, 0, sizeof ifr);
	snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "lo");
	ifr.ifr_flags = IFF_UP | IFF_LOOPBACK | IFF_RUNNING;
	if (ioctl(fd, SIOCSIFFLAGS, &ifr) == -1)
		fatal("fuzz-conn: bringing lo up");
	close(fd);
}

/* The base64 characters that carry only the placeholder, K bytes into a group. */
static void
fc_add_b64(size_t k)
{
	size_t len = strlen(FC_PLACEHOLDER), n = k + len, i;
	unsigned char in[64] = { 0 }, out[96];
	char *piece;

	/* With its NUL: the byte after it is 0 either way. */
	memcpy(in + k, FC_PLACEHOLDER, len + 1);
	EVP_EncodeBlock(out, in, (int)n + 1);
	piece = xstrndup((char *)out + (8 * k + 5) / 6, 8 * n / 6 -
	    (8 * k + 5) / 6);
	strv_add(&fc_forms, piece);
	for (i = 0; piece[i] != '\0'; i++)
		piece[i] = piece[i] == '+' ? '-' : piece[i] == '/' ? '_' : piece[i];
	strv_add(&fc_forms, piece);
	free(piece);
}

static void
fc_make_forms(void)
{
	struct buf lo, up;
	const char *p;
	size_t k;

	strv_init(&fc_forms);
	strv_add(&fc_forms, FC_PLACEHOLDER);
	buf_init(&lo);
	buf_init(&up);
	for (p = FC_PLACEHOLDER; *p != '\0'; p++) {
		buf_printf(&lo, "%02x", (unsigned char)*p);
		buf_printf(&up, "%02X", (unsigned char)*p);
	}
	strv_add(&fc_forms, lo.data);
	strv_add(&fc_forms, up.data);
	buf_free(&lo);
	buf_free(&up);
	for (k = 0; k < 3; k++)
		fc_add_b64(k);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	/* As in agentmux's main(): a peer gone is an error, not a signal. */
	signal(SIGPIPE, SIG_IGN);
	log_init(stderr, LOG_LEVEL_ERROR);
	event_set_log_callback(fc_quiet);
	fc_isolate();
	snprintf(fc.dir, sizeof fc.dir, "/tmp/amx-fuzz-conn.XXXXXX");
	if (mkdtemp(fc.dir) == NULL)
		fatal("fuzz-conn: mkdtemp");
	fc.base = event_base_new();
	fc_make_cert();
	fc_make_proxy();
	fc_make_tls();
	fc_make_forms();
	return 0;
}

/* ---- the session's callbacks ---- */

static void
fc_check_field(const char *s, size_t len, bool always)
{
	const struct fc_run *r = fc_cur;

	if (s == NULL)
		return;
	if (!always && memmem(r->sent.data, r->sent.len, FUZZ_SECRET_VALUE,
	    strlen(FUZZ_SECRET_VALUE)) != NULL)
		return;
	fuzz_check_redacted(s, len, fc_values);
}

static void
fc_on_request(void *arg, const struct request *rec)
{
	if ((rec->done && rec->decision == NULL) || rec->method == NULL ||
	    rec->host == NULL || rec->path == NULL)
		abort();
	fc_check_field(rec->req_headers, rec->req_headers != NULL ?
	    strlen(rec->req_headers) : 0, true);
	fc_check_field(rec->resp_headers, rec->resp_headers != NULL ?
	    strlen(rec->resp_headers) : 0, true);
	fc_check_field(rec->req_body.data, rec->req_body.len, true);
	fc_check_field(rec->resp_body.data, rec->resp_body.len, true);
	fc_check_field(rec->path, strlen(rec->path), false);
	fc_check_field(rec->host, strlen(rec->host), false);
	if (rec->status_text != NULL)
		fc_check_field(rec->status_text, strlen(rec->status_text),
		    false);
	if (rec->error != NULL)
		fc_check_field(rec->error, strlen(rec->error), false);
}

static void
fc_on_ask(void *arg, const struct proxy_ask *q)
{
	fc_cur->last_ask = q->id;
}

static void
fc_on_answered(void *arg, const struct proxy_ask *q, enum proxy_answer a,
    const char *by)
{
}

static void
fc_on_alert(void *arg, const char *kind, const char *message)
{
}

static const struct proxy_session_cbs fc_cbs = {
	.request = fc_on_request,
	.ask = fc_on_ask,
	.answered = fc_on_answered,
	.alert = fc_on_alert,
};

/* ---- the harness's own sockets ---- */

static void
fc_peer_init(struct fc_peer *p, int fd, int up)
{
	memset(p, 0, sizeof *p);
	p->fd = fd;
	p->up = up;
	buf_init(&p->got);
}

static void
fc_peer_close(struct fc_peer *p)
{
	if (p->ssl != NULL)
		SSL_free(p->ssl);
	p->ssl = NULL;
	if (p->fd != -1)
		close(p->fd);
	p->fd = -1;
	buf_free(&p->got);
}

static void
fc_peer_got(struct fc_peer *p, const char *data, size_t len)
{
	if (p->got.len + len <= FC_GOT_MAX)
		buf_add(&p->got, data, len);
}

/*
 * An upstream that was sent something other than a TLS record where it
 * expects TLS (plain HTTP to a TLS port) is read as it is: a proxy that
 * sent a secret there sent it in clear.
 */
static bool
fc_peer_cleartext(struct fc_peer *p)
{
	unsigned char c;

	if (p->first_seen || recv(p->fd, &c, 1, MSG_PEEK) != 1)
		return false;
	p->first_seen = true;
	if (c == 0x16)
		return false;
	SSL_free(p->ssl);
	p->ssl = NULL;
	p->cleartext = true;
	return true;
}

/* Reads what arrived (through TLS once there is TLS); notes the end. */
static void
fc_peer_read(struct fc_peer *p)
{
	char data[16384];
	ssize_t n;
	int rc;

	while (p->fd != -1 && !p->eof) {
		if (p->ssl != NULL && !p->handshaken && p->up != -1 &&
		    fc_peer_cleartext(p))
			continue;
		if (p->ssl != NULL) {
			if (!p->handshaken) {
				rc = SSL_do_handshake(p->ssl);
				if (rc == 1)
					p->handshaken = true;
				else if (SSL_get_error(p->ssl, rc) !=
				    SSL_ERROR_WANT_READ && SSL_get_error(p->ssl,
				    rc) != SSL_ERROR_WANT_WRITE)
					p->eof = true;
				ERR_clear_error();
				if (!p->handshaken)
					return;
			}
			n = SSL_read(p->ssl, data, sizeof data);
			if (n <= 0) {
				rc = SSL_get_error(p->ssl, (int)n);
				ERR_clear_error();
				if (rc != SSL_ERROR_WANT_READ &&
				    rc != SSL_ERROR_WANT_WRITE)
					p->eof = true;
				return;
			}
		} else if ((n = read(p->fd, data, sizeof data)) <= 0) {
			if (n == 0 || (errno != EAGAIN && errno != EINTR))
				p->eof = true;
			return;
		}
		fc_peer_got(p, data, (size_t)n);
	}
}

static void
fc_peer_write(struct fc_run *r, struct fc_peer *p, const uint8_t *data,
    size_t len)
{
	ssize_t n;

	if (p->fd == -1 || len == 0)
		return;
	buf_add(&r->sent, data, len);
	if (p->ssl != NULL) {
		if (p->handshaken)
			SSL_write(p->ssl, data, (int)len);
		ERR_clear_error();
		return;
	}
	n = write(p->fd, data, len);
	(void)n;
}

/* Upstream connections the proxy made: TLS ones are answered with TLS. */
static void
fc_accept(struct fc_run *r)
{
	struct fc_peer *p;
	int i, fd;

	for (i = 0; i < FC_NUP; i++) {
		while (r->nups < FC_PEERS && (fd = accept4(fc.lfd[i], NULL,
		    NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) != -1) {
			p = &r->ups[r->nups++];
			fc_peer_init(p, fd, i);
			if (i == FC_BOUND_TLS || i == FC_OTHER_TLS) {
				p->ssl = SSL_new(fc.server_ctx);
				SSL_set_fd(p->ssl, fd);
				SSL_set_accept_state(p->ssl);
			}
		}
	}
}

/* Runs the loop and the harness's side in turn. */
static void
fc_pump(struct fc_run *r, int passes)
{
	int i, j;

	for (i = 0; i < passes; i++) {
		event_base_loop(fc.base, EVLOOP_NONBLOCK);
		fc_accept(r);
		for (j = 0; j < r->nclients; j++)
			fc_peer_read(&r->clients[j]);
		for (j = 0; j < r->nups; j++)
			fc_peer_read(&r->ups[j]);
	}
}

static void
fc_client_open(struct fc_run *r)
{
	int fd;

	if (r->nclients == FC_CLIENTS)
		return;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1)
		fatal("fuzz-conn: socket");
	if (connect(fd, (struct sockaddr *)&r->sin, sizeof r->sin) == -1 &&
	    errno != EINPROGRESS)
		fatal("fuzz-conn: connect");
	fc_peer_init(&r->clients[r->nclients], fd, -1);
	r->cur = r->nclients++;
}

/* TLS from the current client through the tunnel, as a CONNECT's client would. */
static void
fc_client_tls(struct fc_run *r, uint8_t which)
{
	static const char *const sni[] = { "bound.test", "other.test",
		"unknown.test", NULL };
	struct fc_peer *p = &r->clients[r->cur];

	if (p->ssl != NULL || p->fd == -1)
		return;
	p->ssl = SSL_new(fc.client_ctx);
	SSL_set_fd(p->ssl, p->fd);
	if (sni[which % 4] != NULL)
		SSL_set_tlsext_host_name(p->ssl, sni[which % 4]);
	SSL_set_connect_state(p->ssl);
	p->handshaken = false;
	fc_peer_read(p);
}

static struct fc_peer *
fc_upstream(struct fc_run *r, uint8_t which)
{
	if (r->nups == 0)
		return NULL;
	/* 0 is the latest connection, the one a request most likely uses. */
	return &r->ups[which == 0 ? r->nups - 1 : which % r->nups];
}

/* ---- operations ---- */

enum fc_opcode {
	FC_OP_CLIENT_WRITE,    /* len, bytes */
	FC_OP_UP_WRITE,        /* which, len, bytes */
	FC_OP_CLIENT_SHUT,     /* the client sends FIN */
	FC_OP_CLIENT_CLOSE,
	FC_OP_UP_CLOSE,        /* which */
	FC_OP_PUMP,            /* passes */
	FC_OP_ANSWER,          /* answer */
	FC_OP_PAUSE,           /* pause or resume the last question */
	FC_OP_CLIENT_TLS,      /* which name to send as SNI */
	FC_OP_CLIENT_NEW,
	FC_OP_CLIENT_SWITCH,   /* which */
	FC_OP_COUNT,
};

/* Takes one length-prefixed chunk; NULL when the input ran out. */
static const uint8_t *
fc_take(const uint8_t **p, const uint8_t *end, size_t *len)
{
	const uint8_t *at;

	if (*p >= end)
		return NULL;
	*len = **p;
	(*p)++;
	if (*len > (size_t)(end - *p))
		*len = (size_t)(end - *p);
	at = *p;
	*p += *len;
	return at;
}

static void
fc_answer(struct fc_run *r, uint8_t a)
{
	enum proxy_answer ans = (enum proxy_answer)(a % 6);

	if (ans == PROXY_ALLOW_ONCE || ans == PROXY_ALLOW_SESSION ||
	    ans == PROXY_ALLOW_ALWAYS)
		r->allowed = true;
	proxy_session_answer(r->ps, r->last_ask, ans);
}

/* Runs the operation at *P; false when the input is used up. */
static bool
fc_op(struct fc_run *r, const uint8_t **p, const uint8_t *end)
{
	const uint8_t *data;
	struct fc_peer *up;
	size_t len;
	uint8_t op, arg;

	if (*p >= end)
		return false;
	op = *(*p)++ % FC_OP_COUNT;
	arg = *p < end ? **p : 0;
	switch ((enum fc_opcode)op) {
	case FC_OP_CLIENT_WRITE:
		if ((data = fc_take(p, end, &len)) == NULL)
			return false;
		fc_peer_write(r, &r->clients[r->cur], data, len);
		break;
	case FC_OP_UP_WRITE:
		(*p)++;
		if ((data = fc_take(p, end, &len)) == NULL)
			return false;
		if ((up = fc_upstream(r, arg)) != NULL)
			fc_peer_write(r, up, data, len);
		break;
	case FC_OP_CLIENT_SHUT:
		if (r->clients[r->cur].fd != -1)
			shutdown(r->clients[r->cur].fd, SHUT_WR);
		break;
	case FC_OP_CLIENT_CLOSE:
		fc_peer_close(&r->clients[r->cur]);
		break;
	case FC_OP_UP_CLOSE:
		(*p)++;
		if ((up = fc_upstream(r, arg)) != NULL && up->fd != -1) {
			/* Keep what it got for the checks; only the socket goes. */
			if (up->ssl != NULL)
				SSL_free(up->ssl);
			up->ssl = NULL;
			close(up->fd);
			up->fd = -1;
		}
		break;
	case FC_OP_PUMP:
		(*p)++;
		fc_pump(r, 1 + arg % 16);
		break;
	case FC_OP_ANSWER:
		(*p)++;
		fc_answer(r, arg);
		break;
	case FC_OP_PAUSE:
		(*p)++;
		proxy_session_ask_pause(r->ps, r->last_ask, arg & 1);
		break;
	case FC_OP_CLIENT_TLS:
		(*p)++;
		fc_client_tls(r, arg);
		break;
	case FC_OP_CLIENT_NEW:
		fc_client_open(r);
		break;
	case FC_OP_CLIENT_SWITCH:
		(*p)++;
		r->cur = arg % r->nclients;
		break;
	case FC_OP_COUNT:
		break;
	}
	fc_pump(r, 4);
	return true;
}

/* ---- checks on what the upstreams received ---- */

struct fc_parse {
	bool allowed;
	bool bound;
	int last;          /* 1 in a header value */
	struct buf value;
};

static int
fc_parse_value(http_parser *hp, const char *at, size_t len)
{
	struct fc_parse *fp = hp->data;

	buf_add(&fp->value, at, len);
	return 0;
}

static int
fc_parse_field(http_parser *hp, const char *at, size_t len)
{
	struct fc_parse *fp = hp->data;

	/* The value before this name is complete. */
	if (fp->bound && fp->value.len != 0 && memmem(fp->value.data,
	    fp->value.len, FC_PLACEHOLDER, strlen(FC_PLACEHOLDER)) != NULL)
		abort();
	buf_reset(&fp->value);
	return 0;
}

static int
fc_parse_headers_done(http_parser *hp)
{
	struct fc_parse *fp = hp->data;

	fc_parse_field(hp, NULL, 0);
	/* The other host's rules allow GET and nothing else. */
	if (!fp->bound && !fp->allowed && hp->method != HTTP_GET)
		abort();
	return 0;
}

static int
fc_hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Aborts if D holds a form of the placeholder, as it is or percent-decoded. */
static void
fc_check_forms(const char *d, size_t len)
{
	struct buf dec;
	size_t i;

	if (len == 0)
		return;
	buf_init(&dec);
	buf_add(&dec, "", 0);
	for (i = 0; i < len; i++) {
		if (d[i] == '%' && i + 2 < len && fc_hexval((unsigned char)d[i + 1])
		    != -1 && fc_hexval((unsigned char)d[i + 2]) != -1) {
			buf_addc(&dec, (char)(fc_hexval((unsigned char)d[i + 1]) *
			    16 + fc_hexval((unsigned char)d[i + 2])));
			i += 2;
		} else
			buf_addc(&dec, d[i]);
	}
	for (i = 0; i < fc_forms.n; i++) {
		if (memmem(d, len, fc_forms.v[i], strlen(fc_forms.v[i])) != NULL ||
		    memmem(dec.data, dec.len, fc_forms.v[i],
		    strlen(fc_forms.v[i])) != NULL)
			abort();
	}
	buf_free(&dec);
}

/*
 * An upgraded connection's frames, after the head of the request that
 * upgraded it: data frames' payloads unmasked and taken together, each
 * control frame's on its own.
 */
static void
fc_check_frames(const char *d, size_t len)
{
	const unsigned char *f = (const unsigned char *)d, *mask;
	size_t off = 0, hl, ext, i, k;
	uint64_t n;
	struct buf data, ctl;

	buf_init(&data);
	while (off + 2 <= len) {
		n = f[off + 1] & 0x7f;
		ext = n == 126 ? 2 : n == 127 ? 8 : 0;
		hl = 2 + ext + ((f[off + 1] & 0x80) ? 4 : 0);
		if (off + hl > len)
			break;
		for (k = 0, n = ext != 0 ? 0 : n; k < ext; k++)
			n = n << 8 | f[off + 2 + k];
		mask = (f[off + 1] & 0x80) ? f + off + hl - 4 : NULL;
		buf_init(&ctl);
		for (i = 0; i < n && off + hl + i < len; i++)
			buf_addc((f[off] & 0x08) ? &ctl : &data,
			    (char)(f[off + hl + i] ^ (mask != NULL ? mask[i & 3] : 0)));
		fc_check_forms(ctl.data, ctl.len);
		buf_free(&ctl);
		if (i < n)
			break;
		off += hl + (size_t)n;
	}
	fc_check_forms(data.data, data.len);
	buf_free(&data);
}

/* Parses what an upstream got as the requests it would read. */
static void
fc_check_upstream(struct fc_run *r, struct fc_peer *p)
{
	http_parser_settings s;
	struct fc_parse fp;
	http_parser hp;
	bool value = memmem(r->sent.data, r->sent.len, FUZZ_SECRET_VALUE,
	    strlen(FUZZ_SECRET_VALUE)) != NULL;
	bool verified = p->up == FC_BOUND_TLS && !p->cleartext;
	const char *end;

	if (!verified && !value && p->got.len != 0)
		fuzz_check_redacted(p->got.data, p->got.len, fc_values);
	if (!verified && p->up != FC_TUNNEL && p->got.len != 0) {
		fc_check_forms(p->got.data, p->got.len);
		if (memmem(p->got.data, p->got.len, "Upgrade: websocket", 18) &&
		    (end = memmem(p->got.data, p->got.len, "\r\n\r\n", 4)))
			fc_check_frames(end + 4, p->got.len - (size_t)(end + 4 -
			    p->got.data));
	}
	if (p->up == FC_TUNNEL || p->got.len == 0)
		return;
	memset(&s, 0, sizeof s);
	s.on_header_field = fc_parse_field;
	s.on_header_value = fc_parse_value;
	s.on_headers_complete = fc_parse_headers_done;
	memset(&fp, 0, sizeof fp);
	buf_init(&fp.value);
	fp.allowed = r->allowed;
	fp.bound = p->up == FC_BOUND || p->up == FC_BOUND_TLS;
	http_parser_init(&hp, HTTP_REQUEST);
	hp.data = &fp;
	http_parser_execute(&hp, &s, p->got.data, p->got.len);
	/* The proxy writes every head itself: an upstream must read it. */
	if (HTTP_PARSER_ERRNO(&hp) != HPE_OK && !hp.upgrade)
		abort();
	buf_free(&fp.value);
}

/* ---- one input ---- */

/* What every socket got, for reading seeds (FUZZ_CONN_DEBUG=1). */
static void
fc_dump(struct fc_run *r)
{
	int i;

	for (i = 0; i < r->nclients; i++)
		fprintf(stderr, "client %d got %zu: %.*s\n", i,
		    r->clients[i].got.len, (int)r->clients[i].got.len,
		    r->clients[i].got.data);
	for (i = 0; i < r->nups; i++)
		fprintf(stderr, "upstream %d (%d) got %zu: %.*s\n", i,
		    r->ups[i].up, r->ups[i].got.len, (int)r->ups[i].got.len,
		    r->ups[i].got.data);
}

/* Connections the proxy made that nobody took: none may reach the next input. */
static void
fc_drain_listeners(void)
{
	int i, fd;

	for (i = 0; i < FC_NUP; i++) {
		while ((fd = accept4(fc.lfd[i], NULL, NULL, SOCK_CLOEXEC)) != -1)
			close(fd);
	}
}

static struct proxy_policy *
fc_policy(void)
{
	static const char *const rules[][2] = {
		{ "allow", "bound.test" },
		{ "allow", "bound.test:80" },
		{ "allow", "other.test GET" },
		{ "allow", "other.test:80 GET" },
		{ "tunnel", "tunnel.test" },
	};
	struct proxy_policy *pol = proxy_policy_create();
	char *cause = NULL;
	size_t i;

	for (i = 0; i < nitems(rules); i++) {
		if (proxy_policy_add(pol, rules[i][0], rules[i][1], "fuzz",
		    &cause) == -1)
			fatalx("fuzz-conn: %s", cause);
	}
	return pol;
}

static void
fc_session(struct fc_run *r, bool ask)
{
	static char *const hosts[] = { "bound.test", NULL };
	static const struct proxy_secret secret = {
		.name = "FUZZ_KEY",
		.placeholder = FC_PLACEHOLDER,
		.value = FUZZ_SECRET_VALUE,
		.hosts = hosts,
	};
	struct proxy_session_conf conf;
	char *cause = NULL;

	memset(&conf, 0, sizeof conf);
	conf.listen_fd = fc_listen(&r->sin);
	conf.policy = fc_policy();
	conf.ask = ask;
	conf.prompt_timeout = 3600;
	conf.secrets = &secret;
	conf.nsecrets = 1;
	conf.label = "fuzz";
	if ((r->ps = proxy_session_create(fc.px, &conf, &fc_cbs, r,
	    &cause)) == NULL)
		fatalx("fuzz-conn: %s", cause);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *p = data, *end = data + size;
	struct fc_run r;
	int i, ops = 0;

	if (size < 1)
		return 0;
	memset(&r, 0, sizeof r);
	buf_init(&r.sent);
	fc_cur = &r;
	fc_session(&r, (*p++ & 1) != 0);
	fc_client_open(&r);
	while (ops++ < 64 && fc_op(&r, &p, end))
		;
	fc_pump(&r, 8);
	if (getenv("FUZZ_CONN_DEBUG") != NULL)
		fc_dump(&r);
	for (i = 0; i < r.nups; i++)
		fc_check_upstream(&r, &r.ups[i]);
	if (proxy_session_connections(r.ps) > 4)
		abort();
	proxy_session_free(r.ps);
	for (i = 0; i < r.nclients; i++)
		fc_peer_close(&r.clients[i]);
	for (i = 0; i < r.nups; i++)
		fc_peer_close(&r.ups[i]);
	fc_drain_listeners();
	event_base_loop(fc.base, EVLOOP_NONBLOCK);
	buf_free(&r.sent);
	fc_cur = NULL;
	return 0;
}
