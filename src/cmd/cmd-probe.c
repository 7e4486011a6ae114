/* agentmux probe: small checks run inside a jail (by doctor, or by hand) to prove what the jail allows. */
#include <sys/socket.h>
#include <sys/stat.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli.h"
#include "core/core.h"

/* Seconds any probe waits for the network before giving up. */
#define PROBE_TIMEOUT 10

/* Connects to HOST:PORT (numeric or a name); -1 with *CAUSE. */
static int
probe_connect(const char *host, const char *port, char **cause)
{
	struct addrinfo hints, *res, *ai;
	struct pollfd pfd;
	socklen_t len;
	int fd = -1, rc, err = 0;

	memset(&hints, 0, sizeof hints);
	hints.ai_socktype = SOCK_STREAM;
	if ((rc = getaddrinfo(host, port, &hints, &res)) != 0) {
		*cause = xprintf("cannot resolve %s: %s", host, gai_strerror(rc));
		return -1;
	}
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK |
		    SOCK_CLOEXEC, ai->ai_protocol);
		if (fd == -1) {
			err = errno;
			continue;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 ||
		    errno == EINPROGRESS) {
			pfd.fd = fd;
			pfd.events = POLLOUT;
			len = sizeof err;
			if (poll(&pfd, 1, PROBE_TIMEOUT * 1000) == 1 &&
			    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 &&
			    err == 0)
				break;
			if (err == 0)
				err = ETIMEDOUT;
		} else
			err = errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd == -1) {
		*cause = xprintf("cannot connect to %s port %s: %s", host, port,
		    strerror(err));
		return -1;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return fd;
}

int
cmd_probe_connect(struct cli_args *args)
{
	char *cause = NULL;
	int fd;

	if ((fd = probe_connect(args->argv[0], args->argv[1], &cause)) == -1) {
		out_printf(stdout, "blocked: %s\n", cause);
		free(cause);
		return 1;
	}
	out_printf(stdout, "connected to %s port %s\n", args->argv[0],
	    args->argv[1]);
	close(fd);
	return 0;
}

int
cmd_probe_resolve(struct cli_args *args)
{
	struct addrinfo *res;
	char buf[INET6_ADDRSTRLEN];
	int rc;

	if ((rc = getaddrinfo(args->argv[0], NULL, NULL, &res)) != 0) {
		out_printf(stdout, "blocked: cannot resolve %s: %s\n",
		    args->argv[0], gai_strerror(rc));
		return 1;
	}
	if (res->ai_family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *)res->ai_addr)->sin_addr,
		    buf, sizeof buf);
	else
		inet_ntop(AF_INET6,
		    &((struct sockaddr_in6 *)res->ai_addr)->sin6_addr, buf,
		    sizeof buf);
	out_printf(stdout, "%s resolves to %s\n", args->argv[0], buf);
	freeaddrinfo(res);
	return 0;
}

int
cmd_probe_write(struct cli_args *args)
{
	const char *path = args->argv[0];
	int fd;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd == -1) {
		out_printf(stdout, "blocked: cannot write %s: %s\n", path,
		    strerror(errno));
		return 1;
	}
	if (write(fd, "probe\n", 6) != 6) {
		out_printf(stdout, "blocked: cannot write %s: %s\n", path,
		    strerror(errno));
		close(fd);
		return 1;
	}
	close(fd);
	out_printf(stdout, "wrote %s\n", path);
	return 0;
}

/* A parsed http:// or https:// URL. */
struct probe_url {
	bool tls;
	char host[256];
	char port[8];
	const char *path;
};

static int
probe_parse_url(const char *url, struct probe_url *u, char **cause)
{
	const char *p, *end, *colon;
	size_t n;

	memset(u, 0, sizeof *u);
	if (strncmp(url, "https://", 8) == 0) {
		u->tls = true;
		p = url + 8;
	} else if (strncmp(url, "http://", 7) == 0)
		p = url + 7;
	else {
		*cause = xprintf("'%s' is not an http:// or https:// URL", url);
		return -1;
	}
	end = p + strcspn(p, "/");
	colon = memchr(p, ':', (size_t)(end - p));
	n = (size_t)((colon != NULL ? colon : end) - p);
	if (n == 0 || n >= sizeof u->host) {
		*cause = xprintf("'%s' has no usable host", url);
		return -1;
	}
	memcpy(u->host, p, n);
	if (colon != NULL && (size_t)(end - colon - 1) < sizeof u->port)
		memcpy(u->port, colon + 1, (size_t)(end - colon - 1));
	else
		strcpy(u->port, u->tls ? "443" : "80");
	u->path = *end == '/' ? end : "/";
	return 0;
}

/* The proxy from the environment, as curl reads it; NULL for none. */
static const char *
probe_proxy_env(bool tls)
{
	const char *names_tls[] = { "https_proxy", "HTTPS_PROXY", "all_proxy",
		"ALL_PROXY" };
	const char *names[] = { "http_proxy", "HTTP_PROXY", "all_proxy",
		"ALL_PROXY" };
	const char *v;
	size_t i;

	for (i = 0; i < 4; i++) {
		v = getenv(tls ? names_tls[i] : names[i]);
		if (v != NULL && *v != '\0')
			return v;
	}
	return NULL;
}

/* Reads from FD (or SSL) until the peer closes; prints everything. */
static int
probe_read_all(int fd, SSL *ssl)
{
	char buf[16384];
	int n;

	for (;;) {
		n = ssl != NULL ? SSL_read(ssl, buf, sizeof buf) :
		    (int)read(fd, buf, sizeof buf);
		if (n <= 0)
			break;
		/* raw: the response, as curl prints it; probe runs jailed */
		fwrite(buf, 1, (size_t)n, stdout);
	}
	fflush(stdout);
	return 0;
}

/* Sends CONNECT HOST:PORT on FD and reads the proxy's answer head. */
static int
probe_tunnel(int fd, const struct probe_url *u, char **cause)
{
	char head[4096];
	size_t len = 0;
	int status;

	/* raw: to the proxy's socket */
	dprintf(fd, "CONNECT %s:%s HTTP/1.1\r\nHost: %s:%s\r\n\r\n", u->host,
	    u->port, u->host, u->port);
	while (len < sizeof head - 1) {
		if (read(fd, head + len, 1) <= 0)
			break;
		len++;
		head[len] = '\0';
		if (len >= 4 && strcmp(head + len - 4, "\r\n\r\n") == 0)
			break;
	}
	head[len] = '\0';
	if (sscanf(head, "HTTP/1.%*d %d", &status) != 1) {
		*cause = xstrdup("the proxy did not answer CONNECT");
		return -1;
	}
	if (status != 200) {
		/* Show the proxy's refusal as the response. */
		out_puts(stdout, head);
		probe_read_all(fd, NULL);
		*cause = xprintf("the proxy refused CONNECT with %d", status);
		return -1;
	}
	return 0;
}

static SSL *
probe_tls(int fd, const char *host, char **cause)
{
	const char *bundle = getenv("SSL_CERT_FILE");
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	SSL *ssl;

	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	if (bundle != NULL)
		SSL_CTX_load_verify_locations(ctx, bundle, NULL);
	else
		SSL_CTX_set_default_verify_paths(ctx);
	ssl = SSL_new(ctx);
	SSL_CTX_free(ctx);
	SSL_set_fd(ssl, fd);
	SSL_set_tlsext_host_name(ssl, host);
	SSL_set1_host(ssl, host);
	if (SSL_connect(ssl) != 1) {
		*cause = xprintf("TLS with %s failed: %s", host,
		    ERR_reason_error_string(ERR_get_error()));
		SSL_free(ssl);
		return NULL;
	}
	return ssl;
}

/* Expands ${NAME} from the environment (the jail's), so headers can carry placeholders. */
static char *
probe_expand(const char *s)
{
	const char *end, *v;
	struct buf b;
	char *name;

	buf_init(&b);
	buf_adds(&b, "");
	while (*s != '\0') {
		if (s[0] == '$' && s[1] == '{' && (end = strchr(s, '}')) != NULL) {
			name = xstrndup(s + 2, (size_t)(end - s - 2));
			if ((v = getenv(name)) != NULL)
				buf_adds(&b, v);
			free(name);
			s = end + 1;
		} else
			buf_addc(&b, *s++);
	}
	return buf_steal(&b);
}

int
cmd_probe_fetch(struct cli_args *args)
{
	struct probe_url u, pu;
	const char *proxy;
	char *cause = NULL, *req;
	struct buf hdr;
	SSL *ssl = NULL;
	int fd, i, rc = 1;

	buf_init(&hdr);
	buf_adds(&hdr, "");
	if (probe_parse_url(args->argv[0], &u, &cause) == -1)
		goto out;
	for (i = 1; i < args->argc; i++) {
		char *h = probe_expand(args->argv[i]);

		/* Shown like curl -v: what left the jail, placeholders and all. */
		out_printf(stderr, "> %s\n", h);
		buf_printf(&hdr, "%s\r\n", h);
		free(h);
	}
	proxy = probe_proxy_env(u.tls);
	if (proxy != NULL && probe_parse_url(proxy, &pu, &cause) == -1)
		goto out;
	fd = probe_connect(proxy != NULL ? pu.host : u.host, proxy != NULL ?
	    pu.port : u.port, &cause);
	if (fd == -1)
		goto out;
	if (u.tls && proxy != NULL && probe_tunnel(fd, &u, &cause) == -1)
		goto close;
	if (u.tls && (ssl = probe_tls(fd, u.host, &cause)) == NULL)
		goto close;
	req = xprintf("GET %s HTTP/1.1\r\nHost: %s\r\n%sConnection: close\r\n"
	    "\r\n", !u.tls && proxy != NULL ? args->argv[0] : u.path, u.host,
	    hdr.data);
	if (ssl != NULL)
		SSL_write(ssl, req, (int)strlen(req));
	else
		util_write_all(fd, req, strlen(req));
	free(req);
	probe_read_all(fd, ssl);
	rc = 0;
close:
	if (ssl != NULL)
		SSL_free(ssl);
	close(fd);
out:
	buf_free(&hdr);
	if (cause != NULL) {
		out_printf(stdout, "blocked: %s\n", cause);
		free(cause);
	}
	return rc;
}
