/* Secrets: placeholders the jail holds, swapped for the real value only on the way to a bound host. */
#include <sys/stat.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "proxy/proxy-int.h"

#define PROXY_SECRET_RANDOM_MIN 16   /* random characters in a placeholder, at least */
#define PROXY_SECRET_KEY_FILE "placeholder.key"

/*
 * Where a placeholder's characters come from: the system's random source,
 * or (KEY set) HMAC-SHA256(KEY, NAME NUL VALUE NUL COUNTER), so that one
 * user's placeholder for one secret stays the same from session to
 * session while telling nothing of VALUE without KEY.
 */
struct proxy_secret_rng {
	const unsigned char *key;      /* PROXY_SECRET_KEY_LEN bytes, or NULL */
	const char *name;
	const char *value;
	uint32_t counter;
	unsigned char block[32];
	size_t used;
};

/* The next block of the keyed stream: HMAC(KEY, NAME NUL VALUE NUL COUNTER). */
static void
proxy_secret_rng_block(struct proxy_secret_rng *g)
{
	unsigned char ctr[4];
	unsigned int len = sizeof g->block;
	struct buf m;

	ctr[0] = (unsigned char)(g->counter >> 24);
	ctr[1] = (unsigned char)(g->counter >> 16);
	ctr[2] = (unsigned char)(g->counter >> 8);
	ctr[3] = (unsigned char)g->counter;
	g->counter++;
	buf_init(&m);
	buf_adds(&m, g->name);
	buf_addc(&m, '\0');
	buf_adds(&m, g->value);
	buf_addc(&m, '\0');
	buf_add(&m, ctr, sizeof ctr);
	if (HMAC(EVP_sha256(), g->key, PROXY_SECRET_KEY_LEN,
	    (const unsigned char *)m.data, m.len, g->block, &len) == NULL ||
	    len != sizeof g->block)
		fatalx("proxy_secret_rng_block: HMAC-SHA256 failed");
	explicit_bzero(m.data, m.len);
	buf_free(&m);
	g->used = 0;
}

static uint32_t
proxy_secret_rng_next(struct proxy_secret_rng *g)
{
	uint32_t r;

	if (g->key == NULL) {
		util_random(&r, sizeof r);
		return r;
	}
	if (g->counter == 0 || g->used + sizeof r > sizeof g->block)
		proxy_secret_rng_block(g);
	memcpy(&r, g->block + g->used, sizeof r);
	g->used += sizeof r;
	return r;
}

/*
 * How much of VALUE a placeholder may keep: a prefix that ends at a '-' or
 * '_' in the first 16 characters ("sk-ant-api03-", "ghp_") and leaves at
 * least 16 characters after it. Clients check such prefixes; they carry
 * no secret.
 */
static size_t
proxy_secret_prefix_len(const char *value)
{
	size_t len = strlen(value), i, best = 0;

	for (i = 0; i < len && i < 16; i++) {
		if (!isalnum((unsigned char)value[i]) && value[i] != '-' &&
		    value[i] != '_')
			break;
		if ((value[i] == '-' || value[i] == '_') &&
		    len - (i + 1) >= PROXY_SECRET_RANDOM_MIN)
			best = i + 1;
	}
	return best;
}

/* A random character of the same class as C, or C itself for punctuation. */
static char
proxy_secret_random_like(struct proxy_secret_rng *g, char c)
{
	static const char lower[] = "abcdefghijklmnopqrstuvwxyz";
	static const char upper[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
	static const char digit[] = "0123456789";
	uint32_t r = proxy_secret_rng_next(g);

	if (islower((unsigned char)c))
		return lower[r % 26];
	if (isupper((unsigned char)c))
		return upper[r % 26];
	if (isdigit((unsigned char)c))
		return digit[r % 10];
	return c;
}

/* A placeholder for VALUE, its characters from G. */
static char *
proxy_secret_make(struct proxy_secret_rng *g, const char *value)
{
	size_t keep = proxy_secret_prefix_len(value), len = strlen(value);
	size_t i, nrand = 0;
	struct buf b;
	char c;

	buf_init(&b);
	buf_add(&b, value, keep);
	for (i = keep; i < len; i++) {
		c = proxy_secret_random_like(g, value[i]);
		if (c != value[i] || isalnum((unsigned char)c))
			nrand++;
		buf_addc(&b, c);
	}
	/* Short values get longer placeholders: they must never collide. */
	while (nrand++ < PROXY_SECRET_RANDOM_MIN)
		buf_addc(&b, proxy_secret_random_like(g, 'a'));
	if (strcmp(b.data, value) == 0)
		fatalx("proxy_secret_make: placeholder equals the value");
	explicit_bzero(g->block, sizeof g->block);
	return buf_steal(&b);
}

char *
proxy_secret_placeholder(const char *value)
{
	struct proxy_secret_rng g;

	memset(&g, 0, sizeof g);
	return proxy_secret_make(&g, value);
}

char *
proxy_secret_placeholder_keyed(const unsigned char *key, const char *name,
    const char *value)
{
	struct proxy_secret_rng g;

	memset(&g, 0, sizeof g);
	g.key = key;
	g.name = name;
	g.value = value;
	return proxy_secret_make(&g, value);
}

/* ---- the placeholder key: PROXY_SECRET_KEY_FILE in the data dir ---- */

/* Parses 64 hex digits and an optional newline from TEXT into KEY. */
static int
proxy_secret_key_parse(const char *text, size_t len, unsigned char *key)
{
	int hi, lo;
	size_t i;

	if (len == PROXY_SECRET_KEY_LEN * 2 + 1 && text[len - 1] == '\n')
		len--;
	if (len != PROXY_SECRET_KEY_LEN * 2)
		return -1;
	for (i = 0; i < PROXY_SECRET_KEY_LEN; i++) {
		if ((hi = proxy_hexval((unsigned char)text[2 * i])) == -1 ||
		    (lo = proxy_hexval((unsigned char)text[2 * i + 1])) == -1)
			return -1;
		key[i] = (unsigned char)(hi << 4 | lo);
	}
	return 0;
}

/* What is wrong with the key file open at FD, or NULL if it may be used. */
static char *
proxy_secret_key_check(int fd, const char *path)
{
	struct stat st;

	if (fstat(fd, &st) == -1)
		return xprintf("cannot stat %s: %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return xprintf("%s is not a regular file; remove it and "
		    "agentmux makes a new one (agents that remember their "
		    "key's placeholder then ask about it once more)", path);
	if (st.st_uid != geteuid())
		return xprintf("%s is owned by uid %ld, not by you (uid %ld); "
		    "remove it and agentmux makes a new one", path,
		    (long)st.st_uid, (long)geteuid());
	if ((st.st_mode & 077) != 0)
		return xprintf("%s has mode %04o, which lets others read the "
		    "key of your secrets' placeholders; run 'chmod 600 %s' if "
		    "only you could have written it, else remove it", path,
		    (unsigned)(st.st_mode & 07777), path);
	return NULL;
}

/* Reads the key file at PATH into KEY; -1 and CAUSE if it is missing (errno ENOENT) or unfit. */
static int
proxy_secret_key_read(const char *path, unsigned char *key, char **cause)
{
	char text[PROXY_SECRET_KEY_LEN * 2 + 2];
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd == -1) {
		if (errno == ELOOP)
			*cause = xprintf("%s is a symbolic link, which agentmux "
			    "does not follow; remove it and agentmux makes a "
			    "new one", path);
		else if (errno != ENOENT)
			*cause = xprintf("cannot open %s: %s", path,
			    strerror(errno));
		return -1;
	}
	if ((*cause = proxy_secret_key_check(fd, path)) != NULL) {
		close(fd);
		errno = EPERM;
		return -1;
	}
	n = read(fd, text, sizeof text);
	close(fd);
	if (n < 0 || proxy_secret_key_parse(text, (size_t)n, key) == -1) {
		*cause = xprintf("%s is damaged (not 64 hex digits); remove it "
		    "and agentmux makes a new one", path);
		explicit_bzero(text, sizeof text);
		errno = EINVAL;
		return -1;
	}
	explicit_bzero(text, sizeof text);
	return 0;
}

/* Makes a new key file at PATH; EEXIST if another process made one first. */
static int
proxy_secret_key_create(const char *path, char **cause)
{
	unsigned char key[PROXY_SECRET_KEY_LEN];
	char text[PROXY_SECRET_KEY_LEN * 2 + 2], *tmp;
	size_t i;
	int fd, rc = -1, saved;

	util_random(key, sizeof key);
	for (i = 0; i < sizeof key; i++)
		snprintf(text + 2 * i, 3, "%02x", key[i]);
	text[2 * sizeof key] = '\n';
	tmp = xprintf("%s.tmp.%ld", path, (long)getpid());
	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	    0600);
	if (fd == -1 || fchmod(fd, 0600) == -1 ||
	    util_write_all(fd, text, 2 * sizeof key + 1) == -1 ||
	    fsync(fd) == -1) {
		*cause = xprintf("cannot write %s: %s", tmp, strerror(errno));
		goto out;
	}
	/* link, not rename: a key another process made first is kept. */
	if (link(tmp, path) == -1) {
		saved = errno;
		if (saved != EEXIST)
			*cause = xprintf("cannot create %s: %s", path,
			    strerror(saved));
		errno = saved;
		goto out;
	}
	rc = 0;
out:
	saved = errno;
	if (fd != -1) {
		close(fd);
		unlink(tmp);
	}
	explicit_bzero(key, sizeof key);
	explicit_bzero(text, sizeof text);
	free(tmp);
	errno = saved;
	return rc;
}

int
proxy_secret_key(const char *data_dir, unsigned char *key, char **cause)
{
	char *path = xprintf("%s/%s", data_dir, PROXY_SECRET_KEY_FILE);
	int rc, tries;

	*cause = NULL;
	for (tries = 0; tries < 2; tries++) {
		if ((rc = proxy_secret_key_read(path, key, cause)) == 0 ||
		    *cause != NULL)
			break;
		if (proxy_secret_key_create(path, cause) == -1 &&
		    *cause != NULL)
			break;
	}
	if (rc == -1 && *cause == NULL)
		*cause = xprintf("cannot read or create %s", path);
	free(path);
	return rc;
}

bool
proxy_secret_bound(const struct proxy_secret *s, const char *host)
{
	char *const *h;

	for (h = s->hosts; h != NULL && *h != NULL; h++) {
		if (util_glob_match(*h, host, true))
			return true;
	}
	return false;
}

char *
proxy_secret_swap(const struct proxy_secret *s, const char *value)
{
	size_t plen = strlen(s->placeholder);
	const char *p, *at;
	struct buf b;

	if (plen == 0 || strstr(value, s->placeholder) == NULL)
		return NULL;
	buf_init(&b);
	for (p = value; (at = strstr(p, s->placeholder)) != NULL; p = at + plen) {
		buf_add(&b, p, (size_t)(at - p));
		buf_adds(&b, s->value);
	}
	buf_adds(&b, p);
	return buf_steal(&b);
}
