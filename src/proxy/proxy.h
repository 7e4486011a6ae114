/* The proxy: HTTP/1.1 + CONNECT, TLS interception, policy, secrets, recording. */
#ifndef AGENTMUX_PROXY_H
#define AGENTMUX_PROXY_H

#include <sys/socket.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;
struct request;           /* core.h: the record each request fills */

/* ---- policy (proxy-policy.c) ---- */

enum proxy_verdict {
	PROXY_UNKNOWN,   /* no rule covers it: ask, or deny */
	PROXY_ALLOW,
	PROXY_DENY,
	PROXY_TUNNEL,    /* pass through without decrypting */
};

struct proxy_policy;

/** An empty policy (everything unknown); caller frees. */
struct proxy_policy *proxy_policy_create(void);
void proxy_policy_free(struct proxy_policy *);
/**
 * Adds "VERB TEXT" (VERB allow|deny|tunnel; TEXT "HOST[:PORT] [METHOD]
 * [PATH]") from ORIGIN (e.g. "config:12", "--allow", "session"). -1 with
 * *CAUSE if the rule is malformed.
 */
int proxy_policy_add(struct proxy_policy *, const char *verb,
    const char *text, const char *origin, char **cause);
/** Checks a rule without keeping it (the config parser's validator). */
int proxy_policy_validate(const char *verb, const char *text, char **cause);
/**
 * The verdict for a request. METHOD and PATH are NULL at CONNECT time,
 * when only the destination is known: then ALLOW means "decrypt and decide
 * per request". *RULE (may be NULL) gets the deciding rule as text with its
 * origin, borrowed from the policy.
 */
enum proxy_verdict proxy_policy_check(const struct proxy_policy *,
    const char *host, int port, const char *method, const char *path,
    const char **rule);
/**
 * proxy_policy_check at connect time (no method or path), also telling
 * whether the deciding rule names the port: only a `tunnel HOST:PORT`
 * lets raw TCP through, a host-wide tunnel carries TLS for HOST only.
 */
enum proxy_verdict proxy_policy_check_dest(const struct proxy_policy *,
    const char *host, int port, const char **rule, bool *names_port);
/** True if some rule names HOST literally (an address or "localhost"), not by glob. */
bool proxy_policy_names_host(const struct proxy_policy *, const char *host);
/** Number of rules. */
size_t proxy_policy_count(const struct proxy_policy *);
/** Rule I as "verb text" and its origin; borrowed. */
const char *proxy_policy_rule(const struct proxy_policy *, size_t i,
    const char **origin);

/* ---- address classification, the SSRF guard (proxy-addr.c) ---- */

enum proxy_addr_class {
	PROXY_ADDR_PUBLIC,
	PROXY_ADDR_LOOPBACK,
	PROXY_ADDR_PRIVATE,     /* RFC 1918, unique-local fc00::/7 */
	PROXY_ADDR_LINKLOCAL,
	PROXY_ADDR_CGNAT,       /* 100.64/10 */
	PROXY_ADDR_MULTICAST,
	PROXY_ADDR_METADATA,    /* 169.254.169.254, fd00:ec2::254, ... */
	PROXY_ADDR_UNSPECIFIED, /* 0.0.0.0, ::, broadcast, reserved */
};

enum proxy_addr_class proxy_addr_classify(const struct sockaddr *);
const char *proxy_addr_class_name(enum proxy_addr_class);

/* ---- the proxy engine (proxy.c and friends) ---- */

struct proxy;
struct proxy_session;

/* Names the jail's resolver answers stand for addresses in 198.18.0.0/15. */
#define PROXY_SYNTH_NET 0xc6120000U
#define PROXY_SYNTH_PREFIX 15

struct proxy_conf {
	const char *data_dir;          /* the CA lives here (key 0600), and the
	                                  jail's CA bundle */
	char *const *upstream_ca;      /* extra CA files trusted upstream */
	char *const *connect_to;       /* "HOST:PORT:ADDR:PORT2" entries */
	int connect_timeout;           /* seconds */
	int idle_timeout;              /* seconds */
	int client_timeout;            /* seconds to send a request head */
	int max_connections;           /* per session */
	size_t max_body_record;        /* bytes of each body kept; 0 = none */
};

/** The process-wide proxy: CA, leaf cache, TLS contexts, DNS. NULL + *CAUSE. */
struct proxy *proxy_create(struct event_base *, const struct proxy_conf *,
    char **cause);
void proxy_free(struct proxy *);
/** The CA certificate (PEM) on the host; borrowed. */
const char *proxy_ca_cert_path(struct proxy *);
/** A bundle of the system CAs plus agentmux's CA, for the jail; borrowed. */
const char *proxy_ca_bundle_path(struct proxy *);

/** A secret the proxy brokers: the jail holds PLACEHOLDER, hosts get VALUE. */
struct proxy_secret {
	const char *name;
	const char *placeholder;
	const char *value;
	char *const *hosts;            /* NULL-terminated host globs */
	const char *header;            /* optional: the header it belongs in */
};

/** Makes a placeholder for VALUE that keeps its harmless prefix; caller frees. */
char *proxy_secret_placeholder(const char *value);

#define PROXY_SECRET_KEY_LEN 32        /* bytes in a placeholder key */

/**
 * The same, the same every time for one KEY, secret NAME and VALUE (its
 * random characters come from HMAC-SHA256 under KEY); caller frees.
 */
char *proxy_secret_placeholder_keyed(const unsigned char *key,
    const char *name, const char *value);

/**
 * Reads the user's placeholder key (PROXY_SECRET_KEY_LEN bytes) from
 * DATA_DIR/placeholder.key, making it at random on first use (0600, never
 * through a link). -1 and CAUSE naming the file and what to do if it is a
 * link, not a regular file, not the user's, open to others or damaged.
 */
int proxy_secret_key(const char *data_dir, unsigned char *key, char **cause);

/** A destination nobody has decided on, held until answered. */
struct proxy_ask {
	uint64_t id;
	const char *host;
	int port;
	const char *method;            /* NULL when asked at CONNECT */
	const char *path;
	const char *scheme;
	int waiting;                   /* requests held on this question */
	int64_t asked_at;              /* ms since the epoch */
	int64_t deadline_mono_us;      /* when it times out (util_mono_us) */
	bool paused;                   /* countdown paused */
	const char *rule;              /* in answered: the rule a SESSION or ALWAYS
	                                  answer added ("two.test:443"), or NULL */
};

enum proxy_answer {
	PROXY_ALLOW_ONCE,
	PROXY_ALLOW_SESSION,
	PROXY_ALLOW_ALWAYS,
	PROXY_DENY_ONCE,
	PROXY_DENY_SESSION,
	PROXY_DENY_ALWAYS,
};

struct proxy_session_cbs {
	/*
	 * A request started (done false) or finished (done true): the record is
	 * the connection's, borrowed for the call. Host and path are "" if
	 * never learnt; the decision is NULL until done, then "error" if
	 * nothing decided.
	 */
	void (*request)(void *arg, const struct request *);
	/* A new question, or one whose waiting count changed. */
	void (*ask)(void *arg, const struct proxy_ask *);
	/* A question was answered: BY is "user" or "timeout". */
	void (*answered)(void *arg, const struct proxy_ask *,
	    enum proxy_answer, const char *by);
	/* Something the user must hear about (kind: "exfiltration", ...). */
	void (*alert)(void *arg, const char *kind, const char *message);
};

struct proxy_session_conf {
	int listen_fd;                 /* a listening socket; the session owns it */
	struct proxy_policy *policy;   /* the session owns it */
	bool ask;                      /* on_unknown = ask (else deny at once) */
	int prompt_timeout;            /* seconds before an unanswered ask denies */
	const struct proxy_secret *secrets;
	size_t nsecrets;
	const char *label;             /* for log lines ("session 12") */
	int64_t session_id;            /* stamped on every request's record */
	/*
	 * Transparent interception: the jail's redirect listener and its
	 * resolver's UDP and TCP sockets (the session owns them), used only
	 * if TRANSPARENT.
	 */
	bool transparent;
	int redirect_fd;
	int dns_udp_fd;
	int dns_tcp_fd;
};

/** Serves a session's listening socket. NULL + *CAUSE on error. */
struct proxy_session *proxy_session_create(struct proxy *,
    const struct proxy_session_conf *, const struct proxy_session_cbs *,
    void *arg, char **cause);
/** Closes every connection and the listener; NULL is a no-op. */
void proxy_session_free(struct proxy_session *);
/**
 * Answers question ID. ONCE lets (or refuses) the held requests only;
 * SESSION and ALWAYS also add a rule to the session's policy (writing ALWAYS
 * to the config is the caller's job). Unknown ids are ignored.
 */
void proxy_session_answer(struct proxy_session *, uint64_t id,
    enum proxy_answer);
/**
 * As proxy_session_answer, with RULE ("HOST[:PORT] [METHOD] [PATH]") as
 * the rule a SESSION or ALWAYS answer adds instead of the question's host
 * and port. The held requests are judged again by the policy with it: those
 * it does not cover are asked about anew. -1 with *CAUSE if RULE is not a
 * rule, and the question stays open.
 */
int proxy_session_answer_rule(struct proxy_session *, uint64_t id,
    enum proxy_answer, const char *rule, char **cause);
/** Pauses or resumes the countdown of question ID. */
void proxy_session_ask_pause(struct proxy_session *, uint64_t id, bool pause);
/**
 * Holds the session (its jail is paused): new connections wait in the
 * listener's backlog, and every question's countdown stops; resuming
 * accepts them and lets the countdowns go on from where they were (those
 * the user paused stay paused).
 */
void proxy_session_pause(struct proxy_session *, bool pause);
/** HOST as a rule names it: "host", or "host:port" off the scheme's port (caller frees). */
char *proxy_host_rule(const char *host, int port, const char *scheme);
/** Adds a rule to the session's policy at run time. */
int proxy_session_add_rule(struct proxy_session *, const char *verb,
    const char *text, const char *origin, char **cause);
/** Open client connections. */
int proxy_session_connections(struct proxy_session *);
/** Stops accepting new connections (the session is ending). */
void proxy_session_stop_accepting(struct proxy_session *);

/* ---- header redaction (proxy-redact.c) ---- */

/**
 * Returns HEADERS ("Name: value\n" lines) with secret-bearing values
 * replaced by "[redacted]": Authorization, Proxy-Authorization, Cookie,
 * Set-Cookie, API-key headers, and any of the VALUES given. Caller frees.
 */
char *proxy_redact_headers(const char *headers, const char *const *values);

#endif
