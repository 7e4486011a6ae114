/* agentmux proxy: the jail's proxy without a jail, in the foreground, recorded as a session. */
#include <sys/socket.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "cli.h"
#include "core/core.h"
#include "session/session.h"
#include "store/store.h"

struct proxy_args {
	const char *listen;
	const char *agent;
	struct strv allow;
	struct strv deny;
	struct strv upstream_ca;
	bool verbose;
};

struct proxy_run {
	struct event_base *base;
	bool verbose;
	int signal;
};

/* Binds ADDR ("127.0.0.1:PORT", "[::1]:PORT", "localhost:PORT"): loopback only. */
static int
proxy_listen(const char *addr, char **cause)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
	const char *colon = strrchr(addr, ':');
	char host[64];
	long long port;
	char *err = NULL;
	int fd, one = 1;
	size_t n;

	if (colon == NULL || util_parse_int(colon + 1, 0, 65535, &port,
	    &err) == -1) {
		free(err);
		*cause = xprintf("--listen %s: write HOST:PORT, e.g. "
		    "127.0.0.1:8080", addr);
		return -1;
	}
	n = (size_t)(colon - addr);
	if (n >= 2 && addr[0] == '[' && addr[n - 1] == ']') {
		addr++;
		n -= 2;
	}
	snprintf(host, sizeof host, "%.*s", (int)(n < 63 ? n : 63), addr);
	memset(&ss, 0, sizeof ss);
	if (strcmp(host, "localhost") == 0 ||
	    inet_pton(AF_INET, host, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		if (strcmp(host, "localhost") == 0)
			sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		sin->sin_port = htons((uint16_t)port);
	} else if (inet_pton(AF_INET6, host, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)port);
	} else {
		*cause = xprintf("--listen %s: '%s' is not an address", addr,
		    host);
		return -1;
	}
	/* Anyone who can reach the proxy can use the user's secrets and rules. */
	if (ss.ss_family == AF_INET ? (ntohl(sin->sin_addr.s_addr) >> 24) != 127 :
	    !IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr)) {
		*cause = xprintf("--listen %s: agentmux proxy serves loopback "
		    "only (127.0.0.1 or [::1]); forward a port to it if others "
		    "must reach it", addr);
		return -1;
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd == -1 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one,
	    sizeof one) == -1 || bind(fd, (struct sockaddr *)&ss,
	    ss.ss_family == AF_INET ? sizeof *sin : sizeof *sin6) == -1 ||
	    listen(fd, SOMAXCONN) == -1) {
		*cause = xprintf("cannot listen on %s: %s", addr,
		    strerror(errno));
		if (fd != -1)
			close(fd);
		return -1;
	}
	return fd;
}

static int
proxy_bound_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof ss;

	memset(&ss, 0, sizeof ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &len) == -1)
		return 0;
	return ntohs(ss.ss_family == AF_INET ?
	    ((struct sockaddr_in *)&ss)->sin_port :
	    ((struct sockaddr_in6 *)&ss)->sin6_port);
}

static void
proxy_signal_cb(evutil_socket_t sig, short what, void *arg)
{
	struct proxy_run *pr = arg;

	pr->signal = (int)sig;
	event_base_loopbreak(pr->base);
}

static void
proxy_request_cb(void *arg, struct session *s, const struct request *r)
{
	struct proxy_run *pr = arg;
	struct strv q;
	char *url;

	if (!pr->verbose || !r->done)
		return;
	strv_init(&q);
	url = xprintf("%s://%s:%d%s", r->scheme != NULL ? r->scheme : "?",
	    r->host != NULL ? r->host : "", r->port, r->path != NULL ?
	    r->path : "");
	out_printf(stderr, "%s %s %s -> %d (%s%s%s)\n", r->decision,
	    r->method != NULL ? quote_keep(&q, r->method) : "-",
	    quote_keep(&q, url), r->status, r->rule != NULL ?
	    quote_keep_line(&q, r->rule) : "no rule", r->error != NULL ?
	    "; " : "", r->error != NULL ? quote_keep_line(&q, r->error) : "");
	free(url);
	strv_free(&q);
}

static void
proxy_notice_cb(void *arg, struct session *s, const char *level,
    const char *message)
{
	out_printf(stderr, "agentmux proxy: %s%s\n",
	    strcmp(level, "info") == 0 ? "" : strcmp(level, "alert") == 0 ?
	    "ALERT: " : "warning: ", message);
}

static int
proxy_upstream_cas(struct proxy_args *pa, char **files)
{
	for (; *files != NULL; files++) {
		if (access(*files, R_OK) == -1) {
			cli_usage_error("proxy", "cannot read --upstream-ca %s: "
			    "%s", *files, strerror(errno));
			return -1;
		}
		strv_add(&pa->upstream_ca, *files);
	}
	return 0;
}

/* Bad rules are usage errors, found before anything is recorded. */
static int
proxy_check_rules(struct proxy_args *pa)
{
	const struct strv *lists[2] = { &pa->allow, &pa->deny };
	const char *verbs[2] = { "allow", "deny" };
	char *cause = NULL;
	size_t i, j;

	for (i = 0; i < 2; i++) {
		for (j = 0; j < lists[i]->n; j++) {
			if (session_rule_validate(verbs[i], lists[i]->v[j],
			    &cause) == 0)
				continue;
			cli_usage_error("proxy", "--%s '%s': %s", verbs[i],
			    lists[i]->v[j], cause);
			free(cause);
			return -1;
		}
	}
	return 0;
}

static int
proxy_parse(struct proxy_args *pa, struct cli_args *args)
{
	char **v;

	memset(pa, 0, sizeof *pa);
	strv_init(&pa->allow);
	strv_init(&pa->deny);
	strv_init(&pa->upstream_ca);
	pa->agent = cli_get(args, "agent");
	pa->verbose = cli_has(args, "verbose");
	pa->listen = cli_get(args, "listen");
	for (v = cli_values(args, "allow"); *v != NULL; v++)
		strv_add(&pa->allow, *v);
	for (v = cli_values(args, "deny"); *v != NULL; v++)
		strv_add(&pa->deny, *v);
	if (proxy_upstream_cas(pa, cli_values(args, "upstream-ca")) == -1)
		return -1;
	if (pa->listen == NULL) {
		cli_usage_error("proxy", "--listen HOST:PORT is needed");
		return -1;
	}
	return proxy_check_rules(pa);
}

static void
proxy_args_free(struct proxy_args *pa)
{
	strv_free(&pa->allow);
	strv_free(&pa->deny);
	strv_free(&pa->upstream_ca);
}

/* Serves until SIGINT or SIGTERM. */
static void
proxy_serve(struct proxy_run *pr)
{
	struct event *sig[2];
	int i;

	sig[0] = evsignal_new(pr->base, SIGINT, proxy_signal_cb, pr);
	sig[1] = evsignal_new(pr->base, SIGTERM, proxy_signal_cb, pr);
	for (i = 0; i < 2; i++)
		evsignal_add(sig[i], NULL);
	event_base_dispatch(pr->base);
	for (i = 0; i < 2; i++)
		event_free(sig[i]);
}

int
cmd_proxy(struct cli_args *args)
{
	struct session_events ev = { .request = proxy_request_cb,
	    .notice = proxy_notice_cb };
	struct session_ctx *ctx = NULL;
	struct session_opts o;
	struct session *s = NULL;
	struct config *cf = NULL;
	struct proxy_args pa;
	struct proxy_run pr;
	struct strv cmd;
	char *cause = NULL;
	int rc = 1, fd, i, port;

	memset(&pr, 0, sizeof pr);
	if (proxy_parse(&pa, args) == -1) {
		proxy_args_free(&pa);
		return 2;
	}
	pr.verbose = pa.verbose;
	strv_init(&cmd);
	strv_add(&cmd, "agentmux");
	for (i = 0; i < args->given_argc; i++)
		strv_add(&cmd, args->given_argv[i]);
	if ((fd = proxy_listen(pa.listen, &cause)) == -1) {
		out_printf(stderr, "agentmux proxy: %s\n", cause);
		rc = 2;
		goto out;
	}
	if ((cf = cli_load_config()) == NULL) {
		close(fd);
		goto out;
	}
	pr.base = proc_base();
	if ((ctx = session_ctx_create(pr.base, cf, pa.upstream_ca.v,
	    &cause)) == NULL) {
		cli_error("%s", cause != NULL ? cause : "cannot create the "
		    "event loop");
		close(fd);
		goto out;
	}
	memset(&o, 0, sizeof o);
	o.kind = "proxy";
	o.agent = pa.agent;
	o.command = cmd.v;   /* for the record: nothing runs */
	o.allow = pa.allow.v;
	o.deny = pa.deny.v;
	o.on_unknown = CONFIG_DENY;
	o.listen_fd = fd;
	port = proxy_bound_port(fd);
	if ((s = session_start(ctx, &o, &ev, &pr, &cause)) == NULL) {
		cli_error("%s", cause);
		goto out;
	}
	out_printf(stdout,
	    "agentmux proxy: serving http://%.*s:%d as session %lld; "
	    "unknown destinations are denied\n"
	    "agentmux proxy: clients must trust the CA %s\n",
	    (int)(strrchr(pa.listen, ':') - pa.listen), pa.listen, port,
	    (long long)session_id(s), session_ctx_ca_cert(ctx));
	fflush(stdout);
	proxy_serve(&pr);
	rc = 0;
out:
	free(cause);
	session_free(s);
	session_ctx_free(ctx);
	proc_base_free();
	config_free(cf);
	proxy_args_free(&pa);
	strv_free(&cmd);
	return rc;
}
