/* Internals shared by the proxy's files: the engine's structs and the helpers between them. */
#ifndef AGENTMUX_PROXY_INT_H
#define AGENTMUX_PROXY_INT_H

#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <http_parser.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "core/core.h"
#include "proxy/proxy.h"

struct evbuffer;
struct event;
struct evdns_base;
struct evutil_addrinfo;
struct evbuffer_cb_entry;

#define PROXY_HEAD_MAX (64 * 1024)     /* bytes of a request or response head */
#define PROXY_FIELDS_MAX 100           /* header fields in a head */
#define PROXY_BUF_HIGH (128 * 1024)    /* bytes queued towards a side before its peer pauses */
#define PROXY_ASKS_MAX 64              /* open questions per session */
#define PROXY_POOL_MAX 32              /* idle upstream connections per session */
#define PROXY_LINGER_SECS 2            /* reading what a client still sends after a final response */

/* ---- the certificate authority (proxy-ca.c) ---- */

struct proxy_ca;

/** Loads the CA from DATA_DIR, creating it on first use (locked, atomic). */
struct proxy_ca *proxy_ca_open(const char *data_dir, char **cause);
void proxy_ca_free(struct proxy_ca *);
/** The CA certificate's path; borrowed. */
const char *proxy_ca_path(struct proxy_ca *);
/** Parses the CA's key and certificate, once; -1 with *CAUSE. */
int proxy_ca_load(struct proxy_ca *, char **cause);
/** The CA certificate (loaded if need be; NULL if that fails); borrowed. */
X509 *proxy_ca_cert(struct proxy_ca *);
/**
 * A leaf certificate for HOST (a name or an address), also naming ALSO if
 * not NULL, cached; borrowed. NULL with *CAUSE if a name is not valid.
 */
X509 *proxy_ca_leaf(struct proxy_ca *, const char *host, const char *also,
    char **cause);
/** The key every leaf certificate carries (after a leaf); borrowed. */
EVP_PKEY *proxy_ca_leaf_key(struct proxy_ca *);
/**
 * The system CAs plus ours in DIR/jail-ca-bundle.crt, written again only
 * when either changed; *PATH is the caller's.
 */
int proxy_ca_write_bundle(struct proxy_ca *, const char *dir, char **path,
    char **cause);
/** Number of cached leaf certificates, and how many may be (tests). */
size_t proxy_ca_cached(struct proxy_ca *);
void proxy_ca_set_cache(struct proxy_ca *, size_t max);

/* ---- TLS contexts (proxy-tls.c) ---- */
/*
 * The oldest queued OpenSSL error as text, for causes (a buffer of this
 * thread's, good until the next call); empties the queue.
 */
const char *proxy_ssl_error(void);

/** The context that faces the jail: our leaf certificates, ALPN http/1.1. */
SSL_CTX *proxy_tls_server_ctx(struct proxy *, char **cause);
/** The context that faces upstreams: system CAs plus UPSTREAM_CA, verified. */
SSL_CTX *proxy_tls_client_ctx(char *const *upstream_ca, char **cause);
/**
 * A server-side SSL presenting a leaf for HOST (the CONNECT target), or
 * for the name the client asks for with SNI, plus HOST; HOST is borrowed
 * for the SSL's life. NULL with *CAUSE.
 */
SSL *proxy_tls_accept_ssl(struct proxy *, const char *host, char **cause);
/** A client-side SSL that verifies HOST (SNI, hostname or address check). */
SSL *proxy_tls_connect_ssl(struct proxy *, const char *host, char **cause);
/**
 * Reads the server name (SNI) from the first LEN bytes a TLS client sent:
 * 1 with *SNI (caller frees; NULL if it names none) once its first record
 * is complete, 0 while more must come, -1 with *WHY (static) if they are
 * not a ClientHello in one record.
 */
int proxy_tls_hello_sni(const void *data, size_t len, char **sni,
    const char **why);

/* ---- addresses (proxy-addr.c) ---- */

/** A connect_to entry: traffic for HOST:PORT goes to ADDR:PORT2. */
struct proxy_connect_to {
	char *host;
	int port;
	char *addr;
	int port2;
};

/** Parses "HOST:PORT:ADDR:PORT2"; -1 with *CAUSE. */
int proxy_connect_to_parse(const char *, struct proxy_connect_to *,
    char **cause);
void proxy_connect_to_clear(struct proxy_connect_to *);
/** The entry for HOST:PORT, or NULL. */
const struct proxy_connect_to *proxy_connect_to_find(
    const struct proxy_connect_to *, size_t n, const char *host, int port);
/** Formats SA's address (no port) into BUF. */
const char *proxy_addr_str(const struct sockaddr *, char *buf, size_t len);
/**
 * The SSRF guard: NULL if the jail may reach SA for HOST, else why not
 * (caller frees). NAMED is true when a connect_to entry names the address.
 */
char *proxy_addr_refuse(const struct proxy_policy *, const char *host,
    const struct sockaddr *sa, bool named);
/** Lower-cases HOST and checks it is a host name or address literal. */
bool proxy_host_valid(char *host);
/** True if HOST is an IPv4 or IPv6 literal. */
bool proxy_host_is_addr(const char *host);

/* ---- secrets (proxy-secret.c) ---- */

/**
 * True if HOST is one of SECRET's hosts. The value goes there only over
 * TLS verified for HOST (proxy-conn.c).
 */
bool proxy_secret_bound(const struct proxy_secret *, const char *host);
/**
 * Returns VALUE with SECRET's placeholder replaced by its value, or NULL
 * if the placeholder is not in VALUE. Caller frees.
 */
char *proxy_secret_swap(const struct proxy_secret *, const char *value);

/* ---- paths (proxy-path.c) ---- */

/** The value of hex digit C, or -1. */
int proxy_hexval(int c);
/**
 * TARGET ("/path?query") with its path normalised as policy judges it:
 * escapes of unreserved characters decoded (others in upper case), "." and
 * ".." segments removed, repeated slashes folded; the query as it was.
 * An encoded '/' stays "%2F" (part of a name), provided the path read with
 * it decoded has no empty or dot segment either. *PATHLEN is the length of
 * the path part. NULL with *WHY (static) when the path cannot be
 * normalised: an encoded '\' or NUL, a backslash, a '%' that starts no
 * escape, a double-encoded '.', '/' or '\', "..;" segments, a "%2F" that
 * decoded makes an empty or dot segment. Caller frees.
 */
char *proxy_path_normalise(const char *target, size_t *pathlen,
    const char **why);
/**
 * MATCH (a normalised path) as a server that decodes "%2F" reads it, or
 * NULL if it holds none: policy must allow both readings. Caller frees.
 */
char *proxy_path_slash_reading(const char *match);

/* ---- looking for placeholders (proxy-scan.c) ---- */

struct proxy_patterns;

/* One stream's search for placeholders, fed piece by piece. */
struct proxy_scan {
	const struct proxy_patterns *pp;
	bool *want;                   /* per secret: look for its placeholder */
	bool any;                     /* something to look for */
	int found;                    /* the secret found, or -1 */
	struct buf raw;               /* the stream's last bytes */
	struct buf dec;               /* the same, percent-decoded */
	struct buf out;               /* a piece, percent-decoded */
	struct buf scratch;           /* what straddles two pieces */
	char escbuf[3];               /* an escape split between pieces */
	int esc;
	bool dec_same;                /* DEC would hold what RAW holds */
	size_t since_esc;             /* decoded bytes since the last escape */
	size_t last_esc;
};

/**
 * What to look for in V's N placeholders: each as it is, as hex (lower and
 * upper case) and as base64 (three alignments, standard and URL-safe
 * alphabets). Caller frees.
 */
struct proxy_patterns *proxy_scan_patterns(const struct proxy_secret *v,
    size_t n);
void proxy_scan_patterns_free(struct proxy_patterns *);
/** The number of patterns, and pattern I with its secret's index (tests). */
size_t proxy_scan_npatterns(const struct proxy_patterns *);
const char *proxy_scan_pattern(const struct proxy_patterns *, size_t i,
    size_t *secret);
void proxy_scan_init(struct proxy_scan *);
void proxy_scan_free(struct proxy_scan *);
/**
 * Starts a new stream looking for the placeholders of the secrets WANT
 * marks (NULL: all) among PP's; PP is borrowed.
 */
void proxy_scan_reset(struct proxy_scan *, const struct proxy_patterns *pp,
    const bool *want);
/** True if the stream is looked at (there is something to look for). */
bool proxy_scan_active(const struct proxy_scan *);
/**
 * Looks at the next LEN bytes of the stream, raw and percent-decoded, with
 * what straddles earlier pieces. The index of the secret whose placeholder
 * was found (from then on, always), or -1.
 */
int proxy_scan_feed(struct proxy_scan *, const void *data, size_t len);
/** One buffer as a whole stream: the secret found, or -1. */
int proxy_scan_once(const struct proxy_patterns *, const bool *want,
    const void *data, size_t len);

/* A WebSocket's frames from the client: unmasked, their payloads looked at. */
struct proxy_ws {
	const struct proxy_patterns *pp;
	const bool *want;             /* borrowed */
	struct proxy_scan wire;       /* the bytes as they go */
	struct proxy_scan data;       /* data frames' payloads, unmasked, in a row */
	struct buf ctl;               /* a control frame's payload */
	unsigned char hdr[14];        /* a frame's head so far */
	size_t nhdr;
	size_t need;                  /* the head's length, once known */
	uint64_t left;                /* payload bytes still to come */
	unsigned char mask[4];
	unsigned pos;                 /* the payload's offset, modulo 4 */
	bool control;                 /* the frame is a control frame */
	int found;                    /* the secret found, or -1 */
	const char *error;            /* a frame that cannot be looked at */
};

/** Starts on a WebSocket's client frames; PP and WANT are borrowed. */
void proxy_ws_init(struct proxy_ws *, const struct proxy_patterns *pp,
    const bool *want);
void proxy_ws_free(struct proxy_ws *);
/**
 * Looks at the next LEN bytes the client sends: the secret whose
 * placeholder they carry (raw, or in a frame once unmasked), -1 if none,
 * -2 if a frame cannot be looked at (ws->error says why).
 */
int proxy_ws_feed(struct proxy_ws *, const void *data, size_t len);

/* ---- redaction (proxy-redact.c) ---- */

/** True if a header called NAME carries credentials. */
bool proxy_redact_name(const char *name);
/** Redacts the "Name: value\n" lines of B like proxy_redact_headers. */
void proxy_redact_inplace(struct buf *, const char *const *values);
/** Replaces each of VALUES in B (in place) with "[redacted]". */
void proxy_redact_buf(struct buf *, const char *const *values);

/* ---- HTTP/1.1 messages (proxy-http.c) ---- */

enum proxy_msg_state {
	PROXY_MSG_MORE,     /* needs more bytes */
	PROXY_MSG_HEAD,     /* the head is complete (request parsers pause here) */
	PROXY_MSG_DONE,     /* the message is complete */
	PROXY_MSG_ERROR,
};

struct proxy_hdr {
	size_t name;           /* offsets into the message's text */
	size_t value;
};

/* One message being parsed: the parser, its head and limits. */
struct proxy_msg {
	http_parser p;
	enum http_parser_type type;
	struct buf text;         /* url or status, then names and values, NUL-separated */
	size_t url;              /* offset of the URL / status text */
	struct proxy_hdr *h;
	size_t nh;
	size_t caph;
	size_t head_bytes;       /* bytes of the head so far */
	int last;                /* last callback: 0 none, 1 field, 2 value, 3 url */
	bool head_done;
	bool done;
	bool skip_body;          /* a response to HEAD */
	bool pause_head;         /* stop after the head (requests) */
	bool folded;             /* a header line started with a blank */
	bool prev_lf;
	const char *error;
	/* Decoded body bytes, as they pass. */
	void (*on_body)(void *, const char *, size_t);
	void *arg;
};

void proxy_msg_init(struct proxy_msg *, enum http_parser_type, bool pause_head);
void proxy_msg_reset(struct proxy_msg *);
void proxy_msg_free(struct proxy_msg *);
/**
 * Parses up to MAX bytes of SRC after its first SKIP (bytes the parser has
 * seen already); *USED is how many more it took (the caller moves, drains
 * or skips them next time).
 */
enum proxy_msg_state proxy_msg_feed(struct proxy_msg *, struct evbuffer *src,
    size_t skip, size_t max, size_t *used);
/** Tells the parser the stream ended (close-delimited bodies). */
enum proxy_msg_state proxy_msg_eof(struct proxy_msg *);
/**
 * After PROXY_MSG_HEAD: consumes the head's last byte, so that the body
 * follows; returns PROXY_MSG_DONE if there is none.
 */
enum proxy_msg_state proxy_msg_after_head(struct proxy_msg *,
    struct evbuffer *src, size_t used);
const char *proxy_msg_url(struct proxy_msg *);
const char *proxy_msg_name(struct proxy_msg *, size_t i);
const char *proxy_msg_value(struct proxy_msg *, size_t i);
/** The value of header NAME (case-insensitive), first one; NULL if absent. */
const char *proxy_msg_get(struct proxy_msg *, const char *name);
/** How many headers are called NAME. */
size_t proxy_msg_count(struct proxy_msg *, const char *name);
/** Checks what the parser leaves to us (smuggling shapes); NULL if fine. */
const char *proxy_msg_check_request(struct proxy_msg *);
/** The same for a response head: framing the parser and a client agree on. */
const char *proxy_msg_check_response(struct proxy_msg *);
/** True if the Connection header lists TOKEN. */
bool proxy_msg_connection_has(struct proxy_msg *, const char *token);
/** True for headers a proxy must not forward (hop-by-hop ones). */
bool proxy_msg_hop_by_hop(struct proxy_msg *, const char *name);
/** The headers as "Name: value\n" lines, redacted; caller frees. */
char *proxy_msg_headers_text(struct proxy_msg *, const char *const *values);
/** Writes a complete response with a text body and Connection: close. */
void proxy_http_respond(struct evbuffer *, int status, const char *body);
/** The reason phrase of STATUS. */
const char *proxy_http_reason(int status);

/* ---- the engine ---- */

/* What a side tells its owner's event callback (the values of libevent's BEV_EVENT_*). */
#define PROXY_SIDE_READING 0x01
#define PROXY_SIDE_WRITING 0x02
#define PROXY_SIDE_EOF 0x10
#define PROXY_SIDE_ERROR 0x20
#define PROXY_SIDE_TIMEOUT 0x40
#define PROXY_SIDE_CONNECTED 0x80

/* One side of a proxied connection: its socket, TLS over it, and its buffers. */
struct proxy_side {
	int fd;
	SSL *ssl;                     /* TLS over the socket; NULL: none */
	struct evbuffer *in;          /* read (decrypted), for the owner to take */
	struct evbuffer *out;         /* the owner's, to be sent (encrypted) */
	struct evbuffer *wire;        /* TLS records not yet written */
	struct evbuffer *early;       /* read before TLS began: TLS reads it first */
	struct event *rev;            /* the socket is readable, or idle too long */
	struct event *wev;            /* the socket takes more, or stalls too long */
	struct event *tell;           /* runs the owner's callbacks from the loop */
	struct timeval rtv;           /* idle timeout while reading; 0: none */
	struct timeval wtv;           /* timeout while bytes wait; 0: none */
	bool held;                    /* the session is paused: no timeout runs */
	struct timeval rleft;         /* held: what was left of each timeout (0: none) */
	struct timeval wleft;
	void (*io)(void *);           /* more was read, or there is room again */
	void (*event)(void *, short); /* PROXY_SIDE_* */
	void *arg;
	size_t low;                   /* io once what is queued falls to this */
	short told;                   /* what TELL has to say */
	bool open;
	bool reading;                 /* the owner reads */
	bool writing;                 /* WEV is added */
	bool handshake;               /* TLS handshake under way */
	bool more;                    /* OpenSSL may hold records not yet read */
	bool short_read;              /* the socket gave less than was asked */
	bool eof;                     /* the socket said end of stream */
	bool rdone;                   /* no more reading: the end was told */
	bool broken;                  /* no more writing either */
	bool shut;                    /* FIN once everything is written */
	int err;                      /* errno of a failure */
	unsigned long tls_err;        /* OpenSSL's reason for a failure */
};

/* proxy-side.c */
/** Wraps non-blocking socket FD, which the side owns from then on; -1 if out of memory. */
int proxy_side_open(struct proxy_side *, struct event_base *, int fd);
/**
 * IO(ARG) runs when more was read or queued bytes fell to the low mark;
 * EVENT(ARG, PROXY_SIDE_*) on the end of the stream, a failure, a timeout
 * or the end of the TLS handshake. Both from the loop only.
 */
void proxy_side_setcb(struct proxy_side *, void (*io)(void *),
    void (*event)(void *, short), void *arg);
/** Puts TLS (SSL, then owned) over the side, as server or client; -1 if out of memory. */
int proxy_side_tls(struct proxy_side *, SSL *, bool server);
/** Reads from now on. */
void proxy_side_enable(struct proxy_side *);
/** Reads on while what was read is taken; call after taking some. */
void proxy_side_update(struct proxy_side *);
/** An idle read timeout (NULL: none); it comes as PROXY_SIDE_TIMEOUT and stops reading. */
void proxy_side_read_timeout(struct proxy_side *, const struct timeval *);
/* Stops its timeouts (the session is paused) or lets them go on with what was left. */
void proxy_side_hold(struct proxy_side *, bool hold);
/* What is left of EV's timeout into LEFT; false if it has none. */
bool proxy_timer_left(struct event *ev, struct timeval *left);
/** How long queued bytes may wait for the socket (NULL: for ever). */
void proxy_side_write_timeout(struct proxy_side *, const struct timeval *);
/** IO runs when what is queued falls to LOW (default half of PROXY_BUF_HIGH). */
void proxy_side_set_low(struct proxy_side *, size_t low);
/** Encrypts and writes what is queued, as far as the socket takes it. */
void proxy_side_flush(struct proxy_side *);
/** Bytes queued towards the socket, plaintext and records. */
size_t proxy_side_pending(struct proxy_side *);
/** Sends close_notify (TLS) and FIN once everything queued is written. */
void proxy_side_shutdown(struct proxy_side *);
/** Frees TLS, the buffers and the socket; no-op on a side never opened. */
void proxy_side_close(struct proxy_side *);
/** Why the side failed, as text; caller frees. */
char *proxy_side_error(struct proxy_side *);
/** True if the side failed (a socket or TLS error), not just ended. */
bool proxy_side_failed(struct proxy_side *);
bool proxy_side_is_tls(struct proxy_side *);

struct proxy {
	struct event_base *base;
	struct evdns_base *dns;
	struct proxy_ca *ca;
	SSL_CTX *server_ctx;          /* made at first use */
	SSL_CTX *client_ctx;
	struct strv upstream_ca;
	char *bundle_path;
	struct proxy_connect_to *connect_to;
	size_t nconnect_to;
	int connect_timeout;
	int idle_timeout;
	int client_timeout;
	int max_connections;
	size_t max_body_record;
};

struct proxy_conn;
struct proxy_upstream;
struct proxy_dns_tcp;
struct proxy_dns_set;

/* A connection's place in the line of requests waiting on one question. */
struct proxy_hold {
	TAILQ_ENTRY(proxy_hold) entry;
	struct proxy_conn *pc;
	struct proxy_question *q;     /* NULL once answered */
};

/* A question to the user about one destination, and the requests held on it. */
struct proxy_question {
	TAILQ_ENTRY(proxy_question) entry;
	struct proxy_session *ps;
	struct proxy_ask ask;         /* what the callbacks see */
	char *host;
	char *method;
	char *path;
	char *scheme;
	TAILQ_HEAD(, proxy_hold) held;
	struct event *timer;
	int64_t remaining_us;         /* while paused */
	bool session_paused;          /* paused by proxy_session_pause, not the user */
};

struct proxy_session {
	struct proxy *px;
	struct proxy_policy *policy;
	bool ask;
	int prompt_timeout;
	struct proxy_secret *secrets;
	size_t nsecrets;
	char **secret_values;         /* NULL-terminated, for redaction */
	struct proxy_patterns *patterns;  /* the placeholders, in every form looked for */
	char *label;
	int64_t session_id;           /* stamped on every record */
	struct proxy_session_cbs cbs;
	void *arg;
	int listen_fd;
	struct event *listen_ev;
	struct event *resume_ev;      /* accepting again after running out of fds */
	bool accepting;
	bool paused;                  /* proxy_session_pause: new connections wait */
	bool dying;
	uint64_t next_request;
	uint64_t next_ask;
	int nconns;
	int64_t cap_warned_us;
	TAILQ_HEAD(, proxy_conn) conns;
	TAILQ_HEAD(proxy_pool, proxy_upstream) pool;
	int npool;
	TAILQ_HEAD(, proxy_question) questions;
	int nquestions;
	/* Transparent interception (proxy-resolver.c, proxy-session.c). */
	int redirect_fd;              /* the redirect's listener, or -1 */
	struct event *redirect_ev;
	struct strv synth;            /* name I stands for PROXY_SYNTH_FIRST + I */
	struct proxy_dns_set *synth_index;  /* name -> I, for synth */
	struct proxy_dns_set *dns_recorded; /* "TYPE name" lookups recorded once */
	struct strv dns_keys;         /* the keys dns_recorded indexes */
	uint64_t dns_repeats;         /* lookups counted, not recorded again */
	bool dns_full_told;           /* the name cap was recorded once */
	int dns_udp_fd;
	int dns_tcp_fd;
	struct event *dns_udp_ev;
	struct event *dns_tcp_ev;
	TAILQ_HEAD(, proxy_dns_tcp) dns_tcp;
	int ndns_tcp;
};

/* ---- the jail's resolver (proxy-resolver.c) ---- */

#define PROXY_DNS_MAX 512             /* bytes of a query (no EDNS buffer offered) */
#define PROXY_DNS_NAME_MAX 254        /* a dotted name and its NUL */
#define PROXY_DNS_NOERROR 0
#define PROXY_DNS_SERVFAIL 2
#define PROXY_DNS_NXDOMAIN 3
#define PROXY_DNS_NOTIMP 4
#define PROXY_SYNTH_FIRST 0xc6120100U  /* 198.18.1.0: the first given out */
#define PROXY_SYNTH_MAX 4096           /* names per session: a bound on memory and work */
#define PROXY_DNS_KEYS_MAX 16384      /* distinct lookups recorded per session */

/* A query, as parsed. */
struct proxy_dns_query {
	unsigned id;
	unsigned flags;
	unsigned opcode;
	unsigned type;
	unsigned class;
	size_t qlen;                  /* bytes of the question section */
	char name[PROXY_DNS_NAME_MAX];
};

/**
 * Parses a DNS query strictly (one question, no answers, no compression
 * in the name, at most one additional record, which is ignored); -1 if it
 * is not one. Hostile input: every length is checked.
 */
int proxy_dns_parse(const void *data, size_t len, struct proxy_dns_query *q);
/**
 * The answer to QUERY (parsed as Q) with RCODE and, if ADDR is not 0, one
 * A record for it, in OUT; its length, or 0 if CAP is too small.
 */
size_t proxy_dns_answer(const void *query, const struct proxy_dns_query *q,
    int rcode, uint32_t addr, unsigned char *out, size_t cap);
/** The synthetic address (host order) that stands for NAME, made if new; 0 if the session has too many. */
uint32_t proxy_dns_addr_of(struct proxy_session *, const char *name);
/** The name synthetic address ADDR (host order) stands for, or NULL; borrowed. */
const char *proxy_dns_name_of(struct proxy_session *, uint32_t addr);
/** Serves the jail's resolver sockets, which the session owns from then on. */
int proxy_dns_start(struct proxy_session *, int udp_fd, int tcp_fd,
    char **cause);
void proxy_dns_stop(struct proxy_session *);
/**
 * The answer to query MSG (LEN bytes) in OUT (CAP bytes), recording the
 * lookup (once per name and type); its length, or 0 to drop it.
 */
size_t proxy_dns_reply(struct proxy_session *, const unsigned char *msg,
    size_t len, unsigned char *out, size_t cap);
/** Frees the session's name tables. */
void proxy_dns_free(struct proxy_session *);

/* proxy-conn.c */
void proxy_conn_accept(struct proxy_session *, int fd);
/**
 * A connection the jail made to NAME:PORT (a synthetic address): judged
 * by the policy like a CONNECT, then TLS (intercepted), plain HTTP, or a
 * raw tunnel if a tunnel rule names it.
 */
void proxy_conn_accept_transparent(struct proxy_session *, int fd,
    const char *name, int port);
/** A held request's question was answered with a narrower rule: the policy judges it again. */
void proxy_conn_rejudge(struct proxy_conn *);
/**
 * At the connection cap: closes the connection that has waited longest
 * for a request head (idle or slow), to let a new one in. False if every
 * connection is busy with a request.
 */
bool proxy_conn_evict(struct proxy_session *);
void proxy_conn_close(struct proxy_conn *, const char *reason);
/* Stops the timeouts of the session's connections (it is paused) or lets them go on. */
void proxy_conn_pause(struct proxy_session *, bool hold);
/** The upstream for the held request is ready (or failed: STATUS, REASON). */
void proxy_conn_upstream_ready(struct proxy_conn *);
void proxy_conn_upstream_failed(struct proxy_conn *, int status,
    const char *reason);
/** The upstream in use saw data, room to write, or an event. */
void proxy_conn_upstream_io(struct proxy_conn *);
void proxy_conn_upstream_event(struct proxy_conn *, short what);
/** The answer to the question the connection waits on. */
void proxy_conn_answered(struct proxy_conn *, bool allow, const char *rule);

/* proxy-session.c */
/**
 * Holds H on the question about HOST:PORT (asking it if new); -1 if too
 * many questions are open. The answer may come at once, from inside the
 * ask callback: it reaches the connection through proxy_conn_answered.
 */
int proxy_session_hold(struct proxy_session *, struct proxy_hold *,
    const char *scheme, const char *host, int port, const char *method,
    const char *path);
/** H no longer waits (its connection closed); no-op if answered. */
void proxy_session_unhold(struct proxy_hold *);

/* proxy-upstream.c */
enum proxy_up_state {
	PROXY_UP_RESOLVING,
	PROXY_UP_CONNECTING,
	PROXY_UP_HANDSHAKE,
	PROXY_UP_READY,
};

struct proxy_dns;

struct proxy_upstream {
	TAILQ_ENTRY(proxy_upstream) entry;    /* the session's idle pool */
	struct proxy_session *ps;
	struct proxy_side side;
	struct proxy_conn *pc;                /* the user; NULL while idle */
	enum proxy_up_state state;
	char *host;
	int port;
	bool tls;
	bool reused;
	bool pooled;                          /* in the session's idle pool */
	int fd;
	struct proxy_dns *dns;
	struct evutil_addrinfo *ai;           /* resolved addresses */
	struct evutil_addrinfo *next;         /* the next to try */
	bool named;                           /* connect_to names them */
	bool named_once;                      /* an answer named the address */
	struct sockaddr_storage sa;           /* where it is connected */
	int port2;
	char *refused;                        /* why addresses were refused */
	char *lasterr;
	struct event *conn_ev;                /* waits for connect() */
	struct event *timer;                  /* connect timeout */
	struct event *defer;                  /* runs a synchronous DNS answer later */
	char addr[64];
};

/** How a connection is wanted. */
struct proxy_want {
	const char *host;
	int port;
	bool tls;
	bool pooled;        /* an idle connection from the pool will do */
	bool named;         /* the user named this address (an answer) */
};

/**
 * An upstream for W for PC: an idle one from the pool (READY at once), or
 * a new one that reports to PC later, never from within this call. PC
 * owns it until it releases or frees it.
 */
struct proxy_upstream *proxy_upstream_get(struct proxy_session *,
    struct proxy_conn *, const struct proxy_want *w);
/** Returns UP to the pool if REUSE, else closes it. */
void proxy_upstream_release(struct proxy_upstream *, bool reuse);
void proxy_upstream_free(struct proxy_upstream *);
/** Closes every idle upstream of the session. */
void proxy_upstream_drain_pool(struct proxy_session *);

#endif
