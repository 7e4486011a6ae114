/*
 * The floor for an intercepting proxy on this machine: the least any
 * proxy that decrypts TLS with OpenSSL can do per request. A thread per
 * connection and blocking I/O (no event loop, no policy, no records, no
 * parsing beyond finding a head's end and its Content-Length): CONNECT,
 * "200", TLS with the client on a given certificate, TLS to the upstream
 * verified against a given CA, then heads and Content-Length bodies moved
 * as they are. bench/proxy.sh runs it through the same anchor script as
 * agentmux proxy, so that what agentmux adds can be told from what the
 * kernel and OpenSSL cost here. Not a proxy for anything else: it reaches
 * one upstream only and trusts its clients.
 *
 * Usage: floor-proxy LISTEN_PORT UPSTREAM_HOST:PORT CERT KEY UPSTREAM_CA SNI
 */
#include <sys/socket.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#define FLOOR_BUF (64 * 1024)

struct floor {
	SSL_CTX *server;
	SSL_CTX *client;
	struct sockaddr_in upstream;
	const char *sni;
};

struct floor_conn {
	struct floor *f;
	int fd;
};

static void
floor_die(const char *what)
{
	fprintf(stderr, "floor-proxy: %s\n", what);
	ERR_print_errors_fp(stderr);
	exit(1);
}

/* Reads from SSL into B (holding *HAVE bytes) until a head ends; its length, or -1. */
static int
floor_head(SSL *ssl, char *b, int *have)
{
	char *end;
	int n;

	for (;;) {
		if ((end = memmem(b, (size_t)*have, "\r\n\r\n", 4)) != NULL)
			return (int)(end - b) + 4;
		if (*have == FLOOR_BUF)
			return -1;
		if ((n = SSL_read(ssl, b + *have, FLOOR_BUF - *have)) <= 0)
			return -1;
		*have += n;
	}
}

static long
floor_length(const char *head, int len)
{
	char *copy = strndup(head, (size_t)len), *cl;
	long n;

	cl = strcasestr(copy, "\ncontent-length:");
	n = cl != NULL ? atol(cl + 16) : 0;
	free(copy);
	return n;
}

/* Moves one message (head, then its body) from FROM to TO; -1 at the end. */
static int
floor_message(SSL *from, SSL *to, char *b, int *have)
{
	long left;
	int h, n;

	if ((h = floor_head(from, b, have)) == -1)
		return -1;
	left = floor_length(b, h) - (*have - h);
	if (SSL_write(to, b, *have) <= 0)
		return -1;
	*have = 0;
	while (left > 0) {
		n = SSL_read(from, b, left < FLOOR_BUF ? (int)left : FLOOR_BUF);
		if (n <= 0 || SSL_write(to, b, n) <= 0)
			return -1;
		left -= n;
	}
	return 0;
}

static SSL *
floor_upstream(struct floor *f)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	SSL *ssl;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	if (connect(fd, (struct sockaddr *)&f->upstream,
	    sizeof f->upstream) == -1) {
		close(fd);
		return NULL;
	}
	ssl = SSL_new(f->client);
	SSL_set_tlsext_host_name(ssl, f->sni);
	SSL_set1_host(ssl, f->sni);
	SSL_set_fd(ssl, fd);
	if (SSL_connect(ssl) != 1) {
		SSL_free(ssl);
		close(fd);
		return NULL;
	}
	return ssl;
}

static void *
floor_serve(void *arg)
{
	struct floor_conn *c = arg;
	static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
	char *b = malloc(FLOOR_BUF), head[4096];
	SSL *down = NULL, *up = NULL;
	int n, have = 0, got = 0;

	while (got < (int)sizeof head - 1 &&
	    (n = (int)read(c->fd, head + got, sizeof head - 1 - got)) > 0) {
		got += n;
		if (memmem(head, (size_t)got, "\r\n\r\n", 4) != NULL)
			break;
	}
	if (write(c->fd, ok, sizeof ok - 1) != sizeof ok - 1)
		goto out;
	down = SSL_new(c->f->server);
	SSL_set_fd(down, c->fd);
	if (SSL_accept(down) != 1 || (up = floor_upstream(c->f)) == NULL)
		goto out;
	while (floor_message(down, up, b, &have) == 0) {
		have = 0;
		if (floor_message(up, down, b, &have) == -1)
			break;
		have = 0;
	}
out:
	if (up != NULL) {
		close(SSL_get_fd(up));
		SSL_free(up);
	}
	SSL_free(down);
	close(c->fd);
	free(b);
	free(c);
	return NULL;
}

static void
floor_setup(struct floor *f, char **argv)
{
	char host[64];
	const char *colon = strrchr(argv[2], ':');

	if (colon == NULL || (size_t)(colon - argv[2]) >= sizeof host)
		floor_die("the upstream is HOST:PORT");
	snprintf(host, sizeof host, "%.*s", (int)(colon - argv[2]), argv[2]);
	memset(&f->upstream, 0, sizeof f->upstream);
	f->upstream.sin_family = AF_INET;
	f->upstream.sin_port = htons((uint16_t)atoi(colon + 1));
	if (inet_pton(AF_INET, host, &f->upstream.sin_addr) != 1)
		floor_die("the upstream host must be an IPv4 address");
	f->sni = argv[6];
	f->server = SSL_CTX_new(TLS_server_method());
	f->client = SSL_CTX_new(TLS_client_method());
	if (f->server == NULL || f->client == NULL ||
	    SSL_CTX_use_certificate_chain_file(f->server, argv[3]) != 1 ||
	    SSL_CTX_use_PrivateKey_file(f->server, argv[4],
	    SSL_FILETYPE_PEM) != 1 ||
	    SSL_CTX_load_verify_locations(f->client, argv[5], NULL) != 1)
		floor_die("cannot load the certificates");
	/* As agentmux: buffers only while a record is under way. */
	SSL_CTX_set_mode(f->server, SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_mode(f->client, SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_verify(f->client, SSL_VERIFY_PEER, NULL);
}

int
main(int argc, char **argv)
{
	struct sockaddr_in a;
	struct floor f;
	struct floor_conn *c;
	pthread_attr_t attr;
	pthread_t t;
	int l, fd, one = 1;

	if (argc != 7)
		floor_die("usage: floor-proxy LISTEN_PORT UPSTREAM_HOST:PORT "
		    "CERT KEY UPSTREAM_CA SNI");
	signal(SIGPIPE, SIG_IGN);
	floor_setup(&f, argv);
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)atoi(argv[1]));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(l, (struct sockaddr *)&a, sizeof a) == -1 ||
	    listen(l, 128) == -1)
		floor_die("cannot listen");
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	for (;;) {
		if ((fd = accept(l, NULL, NULL)) == -1)
			continue;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		c = malloc(sizeof *c);
		c->f = &f;
		c->fd = fd;
		if (pthread_create(&t, &attr, floor_serve, c) != 0) {
			close(fd);
			free(c);
		}
	}
}
