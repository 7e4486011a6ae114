/* TLS on both sides: our leaf certificates towards the jail, verified connections towards upstreams. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "proxy/proxy-int.h"

static const unsigned char proxy_tls_alpn_h1[] = "\x08http/1.1";

const char *
proxy_ssl_error(void)
{
	static _Thread_local char buf[256];
	unsigned long e = ERR_get_error();

	if (e == 0)
		return "unknown OpenSSL error";
	ERR_error_string_n(e, buf, sizeof buf);
	ERR_clear_error();
	return buf;
}

/* Picks http/1.1 from what the client offers; anything else gets no ALPN. */
static int
proxy_tls_alpn_select(SSL *ssl, const unsigned char **out,
    unsigned char *outlen, const unsigned char *in, unsigned int inlen,
    void *arg)
{
	unsigned char *sel;

	if (SSL_select_next_proto(&sel, outlen, proxy_tls_alpn_h1,
	    sizeof proxy_tls_alpn_h1 - 1, in, inlen) != OPENSSL_NPN_NEGOTIATED)
		return SSL_TLSEXT_ERR_NOACK;
	*out = sel;
	return SSL_TLSEXT_ERR_OK;
}

/*
 * The client's SNI names the certificate it expects (a client may CONNECT
 * to an address and verify a name): mint one for that name, which also
 * names the CONNECT target. The policy and the upstream TLS stay on the
 * CONNECT target; SNI only shapes what the jail's client is shown.
 */
static int
proxy_tls_servername(SSL *ssl, int *alert, void *arg)
{
	struct proxy *px = arg;
	const char *sni = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
	const char *dest = SSL_get_app_data(ssl);
	char *name, *cause = NULL;
	X509 *leaf;

	if (sni == NULL || dest == NULL || strcasecmp(sni, dest) == 0)
		return SSL_TLSEXT_ERR_OK;
	name = xstrdup(sni);
	if (proxy_host_valid(name) && !proxy_host_is_addr(name) &&
	    (leaf = proxy_ca_leaf(px->ca, name, dest, &cause)) != NULL)
		SSL_use_certificate(ssl, leaf);
	free(cause);
	free(name);
	return SSL_TLSEXT_ERR_OK;
}

SSL_CTX *
proxy_tls_server_ctx(struct proxy *px, char **cause)
{
	static const unsigned char sid[] = "agentmux";
	SSL_CTX *ctx;

	if ((ctx = SSL_CTX_new(TLS_server_method())) == NULL) {
		*cause = xprintf("cannot make a TLS context: %s",
		    proxy_ssl_error());
		return NULL;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION |
	    SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_COMPRESSION);
	/* Idle connections give their read and write buffers back. */
	SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_session_id_context(ctx, sid, sizeof sid - 1);
	/* Resumption needs few: clients are the jail's, on one machine. */
	SSL_CTX_sess_set_cache_size(ctx, 256);
	SSL_CTX_set_alpn_select_cb(ctx, proxy_tls_alpn_select, NULL);
	SSL_CTX_set_tlsext_servername_callback(ctx, proxy_tls_servername);
	SSL_CTX_set_tlsext_servername_arg(ctx, px);
	return ctx;
}

SSL_CTX *
proxy_tls_client_ctx(char *const *upstream_ca, char **cause)
{
	const char *dir = getenv(X509_get_default_cert_dir_env());
	SSL_CTX *ctx;

	if ((ctx = SSL_CTX_new(TLS_client_method())) == NULL) {
		*cause = xprintf("cannot make a TLS context: %s",
		    proxy_ssl_error());
		return NULL;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
	SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
	/* Downloads: four records a read (proxy-side.c reads ahead), not half of one. */
	SSL_CTX_set_default_read_buffer_len(ctx, 64 * 1024);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	/* The hashed directory is read lazily: far less memory than the bundle. */
	if (dir == NULL || *dir == '\0')
		dir = X509_get_default_cert_dir();
	if (SSL_CTX_load_verify_dir(ctx, dir) != 1)
		log_warnx("cannot use the system CAs in %s: %s", dir,
		    proxy_ssl_error());
	for (; upstream_ca != NULL && *upstream_ca != NULL; upstream_ca++) {
		if (SSL_CTX_load_verify_file(ctx, *upstream_ca) != 1) {
			*cause = xprintf("cannot load the upstream CA %s: %s "
			    "(it must be PEM certificates)", *upstream_ca,
			    proxy_ssl_error());
			SSL_CTX_free(ctx);
			return NULL;
		}
	}
	return ctx;
}

SSL *
proxy_tls_accept_ssl(struct proxy *px, const char *host, char **cause)
{
	X509 *leaf;
	SSL *ssl;

	if ((leaf = proxy_ca_leaf(px->ca, host, NULL, cause)) == NULL)
		return NULL;
	if (px->server_ctx == NULL &&
	    (px->server_ctx = proxy_tls_server_ctx(px, cause)) == NULL)
		return NULL;
	if ((ssl = SSL_new(px->server_ctx)) == NULL ||
	    SSL_use_certificate(ssl, leaf) != 1 ||
	    SSL_use_PrivateKey(ssl, proxy_ca_leaf_key(px->ca)) != 1) {
		*cause = xprintf("cannot set up TLS for %s: %s", host,
		    proxy_ssl_error());
		SSL_free(ssl);
		return NULL;
	}
	SSL_set_app_data(ssl, (void *)host);
	return ssl;
}

SSL *
proxy_tls_connect_ssl(struct proxy *px, const char *host, char **cause)
{
	SSL *ssl;
	int ok;

	if (px->client_ctx == NULL && (px->client_ctx =
	    proxy_tls_client_ctx(px->upstream_ca.v, cause)) == NULL)
		return NULL;
	if ((ssl = SSL_new(px->client_ctx)) == NULL) {
		*cause = xprintf("cannot set up TLS: %s", proxy_ssl_error());
		return NULL;
	}
	if (proxy_host_is_addr(host))
		ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host);
	else
		ok = SSL_set_tlsext_host_name(ssl, host) == 1 &&
		    SSL_set1_host(ssl, host) == 1;
	if (!ok || SSL_set_alpn_protos(ssl, proxy_tls_alpn_h1,
	    sizeof proxy_tls_alpn_h1 - 1) != 0) {
		*cause = xprintf("cannot set up TLS for %s: %s", host,
		    proxy_ssl_error());
		SSL_free(ssl);
		return NULL;
	}
	return ssl;
}

/* ---- the server name in a tunnel's first TLS record ---- */

/* A cursor over a ClientHello: reads fail once it runs past its end. */
struct proxy_hello {
	const unsigned char *p;
	size_t left;
	bool bad;
};

static const unsigned char *
proxy_hello_take(struct proxy_hello *h, size_t n)
{
	const unsigned char *at = h->p;

	if (h->bad || n > h->left) {
		h->bad = true;
		return NULL;
	}
	h->p += n;
	h->left -= n;
	return at;
}

static size_t
proxy_hello_num(struct proxy_hello *h, size_t bytes)
{
	const unsigned char *at = proxy_hello_take(h, bytes);
	size_t v = 0, i;

	for (i = 0; at != NULL && i < bytes; i++)
		v = v << 8 | at[i];
	return v;
}

/* Skips a vector with a LEN_BYTES length. */
static void
proxy_hello_skip(struct proxy_hello *h, size_t len_bytes)
{
	proxy_hello_take(h, proxy_hello_num(h, len_bytes));
}

/* The host_name in a server_name extension's data; -1 if malformed. */
static int
proxy_hello_server_name(struct proxy_hello ext, char **sni)
{
	struct proxy_hello list;
	const unsigned char *name;
	size_t type, n;

	list.left = proxy_hello_num(&ext, 2);
	list.p = proxy_hello_take(&ext, list.left);
	list.bad = ext.bad;
	while (!list.bad && list.left > 0) {
		type = proxy_hello_num(&list, 1);
		n = proxy_hello_num(&list, 2);
		if ((name = proxy_hello_take(&list, n)) == NULL)
			break;
		if (type != 0 || *sni != NULL)
			continue;
		if (n == 0 || memchr(name, '\0', n) != NULL)
			return -1;
		*sni = xstrndup((const char *)name, n);
	}
	return list.bad ? -1 : 0;
}

/* Reads the ClientHello in H (the handshake body) for its server name. */
static int
proxy_hello_body(struct proxy_hello *h, char **sni)
{
	struct proxy_hello ext;
	size_t type, n, total;

	proxy_hello_take(h, 2 + 32);       /* version, random */
	proxy_hello_skip(h, 1);            /* session id */
	proxy_hello_skip(h, 2);            /* cipher suites */
	proxy_hello_skip(h, 1);            /* compression methods */
	if (!h->bad && h->left == 0)
		return 1;                  /* no extensions */
	total = proxy_hello_num(h, 2);
	while (!h->bad && total >= 4) {
		type = proxy_hello_num(h, 2);
		n = proxy_hello_num(h, 2);
		ext.p = proxy_hello_take(h, n);
		ext.left = n;
		ext.bad = ext.p == NULL;
		total -= n + 4 > total ? total : n + 4;
		if (type == 0 && !ext.bad && proxy_hello_server_name(ext,
		    sni) == -1)
			return -1;
	}
	return h->bad || total != 0 ? -1 : 1;
}

int
proxy_tls_hello_sni(const void *data, size_t len, char **sni,
    const char **why)
{
	const unsigned char *d = data;
	struct proxy_hello h;
	size_t rec, hs;
	int rc;

	*sni = NULL;
	*why = NULL;
	if (len >= 1 && d[0] != 0x16) {
		*why = "it does not start with a TLS handshake";
		return -1;
	}
	if (len < 5 + 4)
		return 0;
	rec = (size_t)d[3] << 8 | d[4];
	hs = (size_t)d[6] << 16 | (size_t)d[7] << 8 | d[8];
	if (d[5] != 0x01 || rec < 4 || rec > 16384) {
		*why = "its first TLS record is not a ClientHello";
		return -1;
	}
	if (hs + 4 > rec) {
		*why = "its ClientHello does not fit in one TLS record";
		return -1;
	}
	if (len < 5 + rec)
		return 0;
	h.p = d + 9;
	h.left = hs;
	h.bad = false;
	if ((rc = proxy_hello_body(&h, sni)) == -1) {
		free(*sni);
		*sni = NULL;
		*why = "its ClientHello is malformed";
	}
	return rc;
}
