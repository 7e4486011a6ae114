/* The CA: made once per user in the data dir (key 0600), and leaf certificates minted per host and cached. */
#include <sys/file.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "proxy/proxy-int.h"

#define PROXY_CA_CACHE 256              /* leaf certificates kept */
#define PROXY_CA_DAYS 3650
#define PROXY_LEAF_DAYS 30
#define PROXY_SYSTEM_BUNDLE "/etc/ssl/certs/ca-certificates.crt"

struct proxy_leaf {
	TAILQ_ENTRY(proxy_leaf) entry;
	char *host;
	char *also;
	X509 *cert;
	time_t expires;
};

/*
 * Opening reads only the certificate's text (for the jail's bundle):
 * OpenSSL's start-up and key decoding cost milliseconds that a session
 * whose jail never makes a TLS connection should not pay. The keys are
 * loaded at the first interception.
 */
struct proxy_ca {
	char *cert_path;
	char *key_path;
	struct buf cert_pem;
	bool loaded;
	X509 *cert;
	EVP_PKEY *key;
	EVP_PKEY *leaf_key;
	TAILQ_HEAD(proxy_ca_leaves, proxy_leaf) leaves;  /* most recently used first */
	size_t nleaves;
	size_t maxleaves;
};

static int
proxy_ca_add_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509_EXTENSION *ext;
	int rc;

	X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
	if ((ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value)) == NULL)
		return -1;
	rc = X509_add_ext(x, ext, -1) == 1 ? 0 : -1;
	X509_EXTENSION_free(ext);
	return rc;
}

/* Version, a random positive serial, validity and the public key. */
static int
proxy_ca_cert_basics(X509 *x, EVP_PKEY *key, int days)
{
	BIGNUM *bn = BN_new();
	int rc = -1;

	if (bn == NULL || X509_set_version(x, X509_VERSION_3) != 1 ||
	    BN_rand(bn, 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) != 1 ||
	    BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) == NULL)
		goto out;
	/* An hour of slack for clocks that run behind. */
	if (X509_gmtime_adj(X509_getm_notBefore(x), -3600) == NULL ||
	    X509_time_adj_ex(X509_getm_notAfter(x), days, 0, NULL) == NULL ||
	    X509_set_pubkey(x, key) != 1)
		goto out;
	rc = 0;
out:
	BN_free(bn);
	return rc;
}

static X509 *
proxy_ca_make_cert(EVP_PKEY *key)
{
	X509 *x = X509_new();
	X509_NAME *name;
	char cn[128], host[64];

	if (x == NULL || proxy_ca_cert_basics(x, key, PROXY_CA_DAYS) == -1)
		goto fail;
	if (gethostname(host, sizeof host) == -1)
		snprintf(host, sizeof host, "localhost");
	host[sizeof host - 1] = '\0';
	snprintf(cn, sizeof cn, "agentmux CA (uid %ld on %s)", (long)getuid(),
	    host);
	name = X509_get_subject_name(x);
	if (X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8,
	    (const unsigned char *)"agentmux", -1, -1, 0) != 1 ||
	    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
	    (const unsigned char *)cn, -1, -1, 0) != 1 ||
	    X509_set_issuer_name(x, name) != 1)
		goto fail;
	if (proxy_ca_add_ext(x, x, NID_basic_constraints,
	    "critical,CA:TRUE,pathlen:0") == -1 ||
	    proxy_ca_add_ext(x, x, NID_key_usage,
	    "critical,keyCertSign,cRLSign") == -1 ||
	    proxy_ca_add_ext(x, x, NID_subject_key_identifier, "hash") == -1 ||
	    X509_sign(x, key, EVP_sha256()) == 0)
		goto fail;
	return x;
fail:
	X509_free(x);
	return NULL;
}

static char *
proxy_ca_pem(int (*write)(BIO *, void *), void *obj, size_t *len)
{
	BIO *bio = BIO_new(BIO_s_mem());
	char *data, *out = NULL;
	long n;

	if (bio != NULL && write(bio, obj) == 1 &&
	    (n = BIO_get_mem_data(bio, &data)) > 0) {
		out = xmalloc((size_t)n + 1);
		memcpy(out, data, (size_t)n);
		out[n] = '\0';
		*len = (size_t)n;
	}
	BIO_free(bio);
	return out;
}

static int
proxy_ca_write_key(BIO *bio, void *key)
{
	return PEM_write_bio_PrivateKey(bio, key, NULL, NULL, 0, NULL, NULL);
}

static int
proxy_ca_write_x509(BIO *bio, void *x)
{
	return PEM_write_bio_X509(bio, x);
}

/* Makes a new CA and writes the key (0600), then the certificate (0644). */
static int
proxy_ca_create(struct proxy_ca *ca, char **cause)
{
	char *pem;
	size_t len;
	int rc;

	if ((ca->key = EVP_EC_gen("P-256")) == NULL ||
	    (ca->cert = proxy_ca_make_cert(ca->key)) == NULL) {
		*cause = xprintf("cannot make the agentmux CA: %s",
		    proxy_ssl_error());
		return -1;
	}
	if ((pem = proxy_ca_pem(proxy_ca_write_key, ca->key, &len)) == NULL) {
		*cause = xprintf("cannot encode the CA key: %s",
		    proxy_ssl_error());
		return -1;
	}
	rc = util_write_file_atomic(ca->key_path, pem, len, 0600, cause);
	OPENSSL_cleanse(pem, len);
	free(pem);
	if (rc == -1)
		return -1;
	if ((pem = proxy_ca_pem(proxy_ca_write_x509, ca->cert, &len)) == NULL) {
		*cause = xprintf("cannot encode the CA certificate: %s",
		    proxy_ssl_error());
		return -1;
	}
	rc = util_write_file_atomic(ca->cert_path, pem, len, 0644, cause);
	buf_reset(&ca->cert_pem);
	buf_add(&ca->cert_pem, pem, len);
	free(pem);
	if (rc == 0)
		log_info("created the agentmux CA: %s", ca->cert_path);
	return rc;
}

/* Opens PATH for reading if it is a regular file we own; KEY: no group/other bits. */
static FILE *
proxy_ca_open_file(const char *path, bool key, char **cause)
{
	struct stat st;
	FILE *f;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) == -1) {
		*cause = xprintf("cannot open %s: %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    st.st_uid != geteuid()) {
		*cause = xprintf("%s is not a regular file owned by you; "
		    "remove it so agentmux can make a new CA", path);
		close(fd);
		return NULL;
	}
	if (key && (st.st_mode & 077) != 0) {
		*cause = xprintf("the CA key %s is readable by others; run "
		    "'chmod 600 %s'", path, path);
		close(fd);
		return NULL;
	}
	if ((f = fdopen(fd, "r")) == NULL) {
		*cause = xprintf("cannot read %s: %s", path, strerror(errno));
		close(fd);
	}
	return f;
}

/* Parses the CA's key and certificate (perms checked again). */
static int
proxy_ca_parse(struct proxy_ca *ca, char **cause)
{
	FILE *f;

	if ((f = proxy_ca_open_file(ca->key_path, true, cause)) == NULL)
		return -1;
	ca->key = PEM_read_PrivateKey(f, NULL, NULL, NULL);
	fclose(f);
	if ((f = proxy_ca_open_file(ca->cert_path, false, cause)) == NULL)
		return -1;
	ca->cert = PEM_read_X509(f, NULL, NULL, NULL);
	fclose(f);
	if (ca->key == NULL || ca->cert == NULL ||
	    X509_check_private_key(ca->cert, ca->key) != 1) {
		*cause = xprintf("the agentmux CA (%s, %s) is damaged: %s; "
		    "remove both files to make a new one", ca->cert_path,
		    ca->key_path, proxy_ssl_error());
		return -1;
	}
	return 0;
}

/* Checks the CA's files and reads the certificate's text; parsing waits. */
static int
proxy_ca_peek(struct proxy_ca *ca, char **cause)
{
	FILE *f;
	char chunk[4096];
	size_t n;

	if ((f = proxy_ca_open_file(ca->key_path, true, cause)) == NULL)
		return -1;
	fclose(f);
	if ((f = proxy_ca_open_file(ca->cert_path, false, cause)) == NULL)
		return -1;
	buf_reset(&ca->cert_pem);
	while ((n = fread(chunk, 1, sizeof chunk, f)) > 0 &&
	    ca->cert_pem.len < 65536)
		buf_add(&ca->cert_pem, chunk, n);
	fclose(f);
	if (ca->cert_pem.data == NULL ||
	    strstr(ca->cert_pem.data, "-----BEGIN CERTIFICATE-----") == NULL) {
		*cause = xprintf("the agentmux CA %s is damaged: no "
		    "certificate in it; remove it and %s to make a new one",
		    ca->cert_path, ca->key_path);
		return -1;
	}
	return 0;
}

/* Loads or creates the CA while holding the lock, so racing processes agree. */
static int
proxy_ca_load_or_create(struct proxy_ca *ca, const char *dir, char **cause)
{
	char *lock = xprintf("%s/ca.lock", dir);
	int fd, rc = -1;

	fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd == -1 || flock(fd, LOCK_EX) == -1) {
		*cause = xprintf("cannot lock %s: %s", lock, strerror(errno));
		goto out;
	}
	if (access(ca->cert_path, F_OK) == 0 && access(ca->key_path, F_OK) != 0)
		*cause = xprintf("the CA key %s is missing; remove %s to make "
		    "a new CA", ca->key_path, ca->cert_path);
	else if (access(ca->cert_path, F_OK) == 0)
		rc = proxy_ca_peek(ca, cause);
	else if ((rc = proxy_ca_create(ca, cause)) == 0)
		rc = proxy_ca_load(ca, cause);   /* a lone key was never trusted */
out:
	if (fd != -1)
		close(fd);
	free(lock);
	return rc;
}

struct proxy_ca *
proxy_ca_open(const char *data_dir, char **cause)
{
	struct proxy_ca *ca = xcalloc(1, sizeof *ca);

	TAILQ_INIT(&ca->leaves);
	ca->maxleaves = PROXY_CA_CACHE;
	buf_init(&ca->cert_pem);
	ca->cert_path = xprintf("%s/ca.pem", data_dir);
	ca->key_path = xprintf("%s/ca.key", data_dir);
	/* Fast path: the files exist (no lock needed to read them). */
	if (access(ca->cert_path, F_OK) == 0 && access(ca->key_path, F_OK) == 0) {
		if (proxy_ca_peek(ca, cause) == -1)
			goto fail;
		return ca;
	}
	if (proxy_ca_load_or_create(ca, data_dir, cause) == -1)
		goto fail;
	return ca;
fail:
	proxy_ca_free(ca);
	return NULL;
}

static void
proxy_ca_leaf_free(struct proxy_leaf *l)
{
	free(l->host);
	free(l->also);
	X509_free(l->cert);
	free(l);
}

void
proxy_ca_free(struct proxy_ca *ca)
{
	struct proxy_leaf *l;

	if (ca == NULL)
		return;
	while ((l = TAILQ_FIRST(&ca->leaves)) != NULL) {
		TAILQ_REMOVE(&ca->leaves, l, entry);
		proxy_ca_leaf_free(l);
	}
	X509_free(ca->cert);
	EVP_PKEY_free(ca->key);
	EVP_PKEY_free(ca->leaf_key);
	buf_free(&ca->cert_pem);
	free(ca->cert_path);
	free(ca->key_path);
	free(ca);
}

const char *
proxy_ca_path(struct proxy_ca *ca)
{
	return ca->cert_path;
}

int
proxy_ca_load(struct proxy_ca *ca, char **cause)
{
	if (ca->loaded)
		return 0;
	if (ca->cert == NULL && proxy_ca_parse(ca, cause) == -1)
		return -1;
	if ((ca->leaf_key = EVP_EC_gen("P-256")) == NULL) {
		*cause = xprintf("cannot make a key: %s", proxy_ssl_error());
		return -1;
	}
	ca->loaded = true;
	return 0;
}

X509 *
proxy_ca_cert(struct proxy_ca *ca)
{
	char *cause = NULL;

	if (proxy_ca_load(ca, &cause) == -1) {
		log_warnx("%s", cause);
		free(cause);
		return NULL;
	}
	return ca->cert;
}

EVP_PKEY *
proxy_ca_leaf_key(struct proxy_ca *ca)
{
	return ca->leaf_key;
}

size_t
proxy_ca_cached(struct proxy_ca *ca)
{
	return ca->nleaves;
}

void
proxy_ca_set_cache(struct proxy_ca *ca, size_t max)
{
	ca->maxleaves = max > 0 ? max : 1;
}

static int
proxy_ca_san_push(GENERAL_NAMES *names, const char *host)
{
	GENERAL_NAME *gn = GENERAL_NAME_new();
	ASN1_OCTET_STRING *ip;
	ASN1_IA5STRING *dns;

	if (gn == NULL)
		return -1;
	if (proxy_host_is_addr(host)) {
		if ((ip = a2i_IPADDRESS(host)) == NULL)
			goto fail;
		GENERAL_NAME_set0_value(gn, GEN_IPADD, ip);
	} else {
		if ((dns = ASN1_IA5STRING_new()) == NULL)
			goto fail;
		if (ASN1_STRING_set(dns, host, -1) != 1) {
			ASN1_IA5STRING_free(dns);
			goto fail;
		}
		GENERAL_NAME_set0_value(gn, GEN_DNS, dns);
	}
	if (sk_GENERAL_NAME_push(names, gn) == 0)
		goto fail;
	return 0;
fail:
	GENERAL_NAME_free(gn);
	return -1;
}

/* subjectAltName: HOST, and ALSO if given (each a DNS name or an IP address), built without a config string. */
static int
proxy_ca_add_san(X509 *x, const char *host, const char *also)
{
	GENERAL_NAMES *names = sk_GENERAL_NAME_new_null();
	int rc = -1;

	if (names == NULL || proxy_ca_san_push(names, host) == -1 ||
	    (also != NULL && proxy_ca_san_push(names, also) == -1))
		goto out;
	rc = X509_add1_ext_i2d(x, NID_subject_alt_name, names, 0, 0) == 1 ?
	    0 : -1;
out:
	GENERAL_NAMES_free(names);
	return rc;
}

static X509 *
proxy_ca_mint(struct proxy_ca *ca, const char *host, const char *also)
{
	X509 *x = X509_new();
	X509_NAME *name;

	if (x == NULL || proxy_ca_cert_basics(x, ca->leaf_key,
	    PROXY_LEAF_DAYS) == -1 ||
	    X509_set_issuer_name(x, X509_get_subject_name(ca->cert)) != 1)
		goto fail;
	name = X509_get_subject_name(x);
	if (strlen(host) <= 64 && X509_NAME_add_entry_by_txt(name, "CN",
	    MBSTRING_UTF8, (const unsigned char *)host, -1, -1, 0) != 1)
		goto fail;
	if (proxy_ca_add_ext(x, ca->cert, NID_basic_constraints,
	    "critical,CA:FALSE") == -1 ||
	    proxy_ca_add_ext(x, ca->cert, NID_key_usage,
	    "critical,digitalSignature") == -1 ||
	    proxy_ca_add_ext(x, ca->cert, NID_ext_key_usage,
	    "serverAuth") == -1 ||
	    proxy_ca_add_ext(x, ca->cert, NID_authority_key_identifier,
	    "keyid:always") == -1 ||
	    proxy_ca_add_san(x, host, also) == -1 ||
	    X509_sign(x, ca->key, EVP_sha256()) == 0)
		goto fail;
	return x;
fail:
	X509_free(x);
	return NULL;
}

/* A copy of HOST if it is a lower-case host name or address, else NULL. */
static char *
proxy_ca_check_host(const char *host, char **cause)
{
	char *copy = xstrdup(host);

	if (!proxy_host_valid(copy) || strcmp(copy, host) != 0) {
		*cause = xprintf("'%s' is not a host name", host);
		free(copy);
		return NULL;
	}
	return copy;
}

X509 *
proxy_ca_leaf(struct proxy_ca *ca, const char *host, const char *also,
    char **cause)
{
	struct proxy_leaf *l;
	time_t now = time(NULL);
	char *h, *a = NULL;

	if (proxy_ca_load(ca, cause) == -1)
		return NULL;
	if (also != NULL && strcmp(also, host) == 0)
		also = NULL;
	TAILQ_FOREACH(l, &ca->leaves, entry) {
		if (strcmp(l->host, host) == 0 && (also == NULL ?
		    l->also == NULL : l->also != NULL &&
		    strcmp(l->also, also) == 0) && l->expires > now + 86400) {
			TAILQ_REMOVE(&ca->leaves, l, entry);
			TAILQ_INSERT_HEAD(&ca->leaves, l, entry);
			return l->cert;
		}
	}
	if ((h = proxy_ca_check_host(host, cause)) == NULL ||
	    (also != NULL && (a = proxy_ca_check_host(also, cause)) == NULL)) {
		free(h);
		return NULL;
	}
	l = xcalloc(1, sizeof *l);
	l->host = h;
	l->also = a;
	l->expires = now + (time_t)PROXY_LEAF_DAYS * 86400;
	if ((l->cert = proxy_ca_mint(ca, host, also)) == NULL) {
		*cause = xprintf("cannot make a certificate for %s: %s", host,
		    proxy_ssl_error());
		proxy_ca_leaf_free(l);
		return NULL;
	}
	TAILQ_INSERT_HEAD(&ca->leaves, l, entry);
	if (++ca->nleaves > ca->maxleaves) {
		l = TAILQ_LAST(&ca->leaves, proxy_ca_leaves);
		TAILQ_REMOVE(&ca->leaves, l, entry);
		proxy_ca_leaf_free(l);   /* SSLs using it hold their own reference */
		ca->nleaves--;
	}
	return TAILQ_FIRST(&ca->leaves)->cert;
}

/* Writes DATA to PATH through a temporary file and rename: no fsync, the runtime dir does not outlive us. */
static int
proxy_ca_write_quick(const char *path, const char *data, size_t len,
    char **cause)
{
	char *tmp = xprintf("%s.tmp.%ld", path, (long)getpid());
	int fd, rc = -1;

	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
	    0644);
	if (fd == -1 || fchmod(fd, 0644) == -1 ||
	    util_write_all(fd, data, len) == -1) {
		*cause = xprintf("cannot write %s: %s", tmp, strerror(errno));
		goto out;
	}
	if (close(fd) == -1 || rename(tmp, path) == -1) {
		fd = -1;
		*cause = xprintf("cannot write %s: %s", path, strerror(errno));
		goto out;
	}
	fd = -1;
	rc = 0;
out:
	if (fd != -1)
		close(fd);
	if (rc == -1)
		unlink(tmp);
	free(tmp);
	return rc;
}

/* True if PATH exists and is newer than every file in NEWER. */
static bool
proxy_ca_fresh(const char *path, const char *const *newer, size_t n)
{
	struct stat st, o;
	size_t i;

	if (stat(path, &st) == -1)
		return false;
	for (i = 0; i < n; i++) {
		if (stat(newer[i], &o) == 0 && (o.st_mtim.tv_sec >
		    st.st_mtim.tv_sec || (o.st_mtim.tv_sec == st.st_mtim.tv_sec &&
		    o.st_mtim.tv_nsec > st.st_mtim.tv_nsec)))
			return false;
	}
	return true;
}

int
proxy_ca_write_bundle(struct proxy_ca *ca, const char *dir, char **path,
    char **cause)
{
	const char *inputs[2] = { PROXY_SYSTEM_BUNDLE, ca->cert_path };
	struct buf b;
	int rc;

	/* Kept while neither the system's CAs nor ours change. */
	*path = xprintf("%s/jail-ca-bundle.crt", dir);
	if (proxy_ca_fresh(*path, inputs, nitems(inputs)))
		return 0;
	buf_init(&b);
	if (buf_read_file(&b, PROXY_SYSTEM_BUNDLE) == -1)
		log_warnx("cannot read %s (%s): the jail will trust only the "
		    "agentmux CA", PROXY_SYSTEM_BUNDLE, strerror(errno));
	if (b.len != 0 && b.data[b.len - 1] != '\n')
		buf_addc(&b, '\n');
	buf_adds(&b, "# agentmux CA\n");
	buf_add(&b, ca->cert_pem.data, ca->cert_pem.len);
	rc = proxy_ca_write_quick(*path, b.data, b.len, cause);
	buf_free(&b);
	if (rc == -1) {
		free(*path);
		*path = NULL;
	}
	return rc;
}
