/* The CA: made once with safe permissions, shared by racing processes, leaf certificates that verify. */
#include <sys/stat.h>
#include <sys/wait.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "lib/testlib.h"
#include "proxy/proxy-int.h"

static char *
fingerprint(X509 *x)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n, i;
	struct buf b;

	X509_digest(x, EVP_sha256(), md, &n);
	buf_init(&b);
	for (i = 0; i < n; i++)
		buf_printf(&b, "%02x", md[i]);
	return buf_steal(&b);
}

static void
test_create_and_reload(void **state)
{
	char *dir = test_tmpdir("ca"), *path, *a, *b, *cause = NULL;
	struct proxy_ca *ca;
	struct stat st;

	ca = proxy_ca_open(dir, &cause);
	assert_non_null(ca);
	a = fingerprint(proxy_ca_cert(ca));
	path = xprintf("%s/ca.key", dir);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	free(path);
	path = xprintf("%s/ca.pem", dir);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
	assert_string_equal(proxy_ca_path(ca), path);
	assert_int_equal(X509_check_ca(proxy_ca_cert(ca)), 1);
	proxy_ca_free(ca);
	ca = proxy_ca_open(dir, &cause);
	b = fingerprint(proxy_ca_cert(ca));
	assert_string_equal(a, b);
	proxy_ca_free(ca);
	free(a);
	free(b);
	/* A key others can read is refused, with the fix. */
	free(path);
	path = xprintf("%s/ca.key", dir);
	chmod(path, 0644);
	assert_null(proxy_ca_open(dir, &cause));
	assert_non_null(strstr(cause, "chmod 600"));
	free(cause);
	cause = NULL;
	/* A certificate without its key is not silently replaced. */
	unlink(path);
	assert_null(proxy_ca_open(dir, &cause));
	assert_non_null(strstr(cause, "missing"));
	free(cause);
	free(path);
	test_rmtree(dir);
	free(dir);
}

static void
test_race(void **state)
{
	char *dir = test_tmpdir("carace"), *cause = NULL, *first = NULL, *fp;
	char line[128];
	struct proxy_ca *ca;
	int fds[2], i, status;
	pid_t pid;
	FILE *f;

	assert_int_equal(pipe(fds), 0);
	for (i = 0; i < 4; i++) {
		if ((pid = fork()) == 0) {
			close(fds[0]);
			if ((ca = proxy_ca_open(dir, &cause)) == NULL)
				_exit(1);
			fp = fingerprint(proxy_ca_cert(ca));
			dprintf(fds[1], "%s\n", fp);
			_exit(0);
		}
		assert_true(pid > 0);
	}
	close(fds[1]);
	f = fdopen(fds[0], "r");
	for (i = 0; i < 4; i++) {
		assert_non_null(fgets(line, sizeof line, f));
		if (first == NULL)
			first = xstrdup(line);
		assert_string_equal(line, first);
	}
	fclose(f);
	for (i = 0; i < 4; i++) {
		assert_true(wait(&status) > 0);
		assert_int_equal(status, 0);
	}
	ca = proxy_ca_open(dir, &cause);
	fp = fingerprint(proxy_ca_cert(ca));
	first[strcspn(first, "\n")] = '\0';
	assert_string_equal(fp, first);
	free(fp);
	free(first);
	proxy_ca_free(ca);
	test_rmtree(dir);
	free(dir);
}

/* Verifies LEAF against the CA for HOST, as a client would. */
static int
verify(struct proxy_ca *ca, X509 *leaf, const char *host)
{
	X509_STORE *store = X509_STORE_new();
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	X509_VERIFY_PARAM *param;
	int ok;

	X509_STORE_add_cert(store, proxy_ca_cert(ca));
	X509_STORE_CTX_init(ctx, store, leaf, NULL);
	param = X509_STORE_CTX_get0_param(ctx);
	X509_VERIFY_PARAM_set_purpose(param, X509_PURPOSE_SSL_SERVER);
	if (proxy_host_is_addr(host))
		X509_VERIFY_PARAM_set1_ip_asc(param, host);
	else
		X509_VERIFY_PARAM_set1_host(param, host, 0);
	ok = X509_verify_cert(ctx);
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(store);
	return ok;
}

static void
test_leaves(void **state)
{
	char *dir = test_tmpdir("leaf"), *cause = NULL;
	struct proxy_ca *ca = proxy_ca_open(dir, &cause);
	X509 *a, *b;
	char host[32];
	int i;

	a = proxy_ca_leaf(ca, "api.example.com", NULL, &cause);
	assert_non_null(a);
	assert_int_equal(verify(ca, a, "api.example.com"), 1);
	assert_int_equal(verify(ca, a, "other.example.com"), 0);
	assert_int_equal(X509_check_private_key(a, proxy_ca_leaf_key(ca)), 1);
	b = proxy_ca_leaf(ca, "api.example.com", NULL, &cause);
	assert_ptr_equal(a, b);
	b = proxy_ca_leaf(ca, "127.0.0.1", NULL, &cause);
	assert_int_equal(verify(ca, b, "127.0.0.1"), 1);
	assert_int_equal(verify(ca, b, "127.0.0.2"), 0);
	b = proxy_ca_leaf(ca, "::1", NULL, &cause);
	assert_int_equal(verify(ca, b, "::1"), 1);
	assert_int_equal(proxy_ca_cached(ca), 3);
	/* SNI for a name, CONNECT to an address: the leaf names both. */
	b = proxy_ca_leaf(ca, "localhost", "127.0.0.1", &cause);
	assert_int_equal(verify(ca, b, "localhost"), 1);
	assert_int_equal(verify(ca, b, "127.0.0.1"), 1);
	assert_int_equal(verify(ca, b, "127.0.0.2"), 0);
	assert_ptr_not_equal(b, proxy_ca_leaf(ca, "localhost", NULL, &cause));
	assert_int_equal(proxy_ca_cached(ca), 5);
	/* No way to smuggle extra names into the certificate. */
	assert_null(proxy_ca_leaf(ca, "a.com,DNS:evil.com", NULL, &cause));
	free(cause);
	cause = NULL;
	assert_null(proxy_ca_leaf(ca, "A.COM", NULL, &cause));
	free(cause);
	cause = NULL;
	assert_null(proxy_ca_leaf(ca, "a.com", "b c", &cause));
	free(cause);
	cause = NULL;
	proxy_ca_set_cache(ca, 8);
	for (i = 0; i < 12; i++) {
		snprintf(host, sizeof host, "h%d.example", i);
		assert_non_null(proxy_ca_leaf(ca, host, NULL, &cause));
	}
	assert_int_equal(proxy_ca_cached(ca), 8);
	proxy_ca_free(ca);
	test_rmtree(dir);
	free(dir);
}

static void
test_bundle(void **state)
{
	char *dir = test_tmpdir("bundle"), *cause = NULL, *path = NULL;
	struct proxy_ca *ca = proxy_ca_open(dir, &cause);
	char *text, *ours;
	struct stat st, st2;
	BIO *bio;
	X509 *x;
	int n = 0;

	assert_int_equal(proxy_ca_write_bundle(ca, dir, &path, &cause), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
	/* Kept while its inputs do not change. */
	free(path);
	assert_int_equal(proxy_ca_write_bundle(ca, dir, &path, &cause), 0);
	assert_int_equal(stat(path, &st2), 0);
	assert_int_equal(st2.st_mtim.tv_nsec, st.st_mtim.tv_nsec);
	assert_int_equal(st2.st_ino, st.st_ino);
	text = test_read_file(path);
	ours = test_read_file(proxy_ca_path(ca));
	assert_non_null(strstr(text, ours));
	bio = BIO_new_mem_buf(text, -1);
	while ((x = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL) {
		X509_free(x);
		n++;
	}
	BIO_free(bio);
	if (access("/etc/ssl/certs/ca-certificates.crt", R_OK) == 0)
		assert_true(n > 10);
	else
		assert_int_equal(n, 1);
	/* The key never goes near the bundle. */
	assert_null(strstr(text, "PRIVATE KEY"));
	free(text);
	free(ours);
	free(path);
	proxy_ca_free(ca);
	test_rmtree(dir);
	free(dir);
}

/* The first flight of a real OpenSSL client asking for SNI (NULL: none). */
static void
hello_of(const char *sni, struct buf *out)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	SSL *ssl = SSL_new(ctx);
	BIO *rb = BIO_new(BIO_s_mem()), *wb = BIO_new(BIO_s_mem());
	char chunk[4096];
	int n;

	SSL_set_bio(ssl, rb, wb);
	if (sni != NULL)
		SSL_set_tlsext_host_name(ssl, sni);
	SSL_set_connect_state(ssl);
	assert_int_equal(SSL_do_handshake(ssl), -1);
	while ((n = BIO_read(wb, chunk, sizeof chunk)) > 0)
		buf_add(out, chunk, (size_t)n);
	ERR_clear_error();
	SSL_free(ssl);
	SSL_CTX_free(ctx);
}

/* A tunnel's server name, read from a client's first TLS record. */
static void
test_hello_sni(void **state)
{
	const char *why;
	char *sni;
	struct buf b;
	size_t i;

	buf_init(&b);
	hello_of("pinned.example.com", &b);
	assert_int_equal(proxy_tls_hello_sni(b.data, b.len, &sni, &why), 1);
	assert_string_equal(sni, "pinned.example.com");
	free(sni);
	/* Any prefix: more must come. */
	for (i = 0; i < b.len; i++)
		assert_int_equal(proxy_tls_hello_sni(b.data, i, &sni, &why), 0);
	/* A hello split over two records cannot be read. */
	b.data[3] = 0;
	b.data[4] = 40;
	assert_int_equal(proxy_tls_hello_sni(b.data, b.len, &sni, &why), -1);
	assert_non_null(strstr(why, "one TLS record"));
	buf_reset(&b);
	hello_of(NULL, &b);
	assert_int_equal(proxy_tls_hello_sni(b.data, b.len, &sni, &why), 1);
	assert_null(sni);
	/* Lengths that run past the record. */
	b.data[9 + 34] = 0xff;
	assert_int_equal(proxy_tls_hello_sni(b.data, b.len, &sni, &why), -1);
	assert_non_null(strstr(why, "malformed"));
	assert_int_equal(proxy_tls_hello_sni("GET / HTTP/1.1\r\n", 16, &sni,
	    &why), -1);
	assert_non_null(strstr(why, "TLS handshake"));
	buf_free(&b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_and_reload),
		cmocka_unit_test(test_race),
		cmocka_unit_test(test_leaves),
		cmocka_unit_test(test_bundle),
		cmocka_unit_test(test_hello_sni),
	};

	log_init(stderr, LOG_LEVEL_WARN);
	return test_run_group(tests, NULL, NULL);
}
