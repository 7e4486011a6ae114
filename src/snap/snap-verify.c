/*
 * Checking objects before undo writes them: git cat-file streams each one
 * out of the own repository and it is hashed here, so that content that
 * is not what its id says (a damaged or replaced object file) or an
 * object that is gone is refused with the path it was for, before any
 * file is touched.
 */
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "snap/snap-int.h"

struct snap_verify {
	const struct snap_verify_obj *v;
	size_t n;
	size_t i;                 /* the object being read */
	struct buf head;          /* its header line so far */
	uint64_t left;            /* its bytes still to come; then its newline */
	bool in_body;
	EVP_MD_CTX *md;
	struct buf *keep;         /* the first object's content, if asked for */
	char *error;
};

static void
snap_verify_fail(struct snap_verify *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
snap_verify_fail(struct snap_verify *s, const char *fmt, ...)
{
	va_list ap;

	if (s->error != NULL)
		return;
	va_start(ap, fmt);
	xvasprintf(&s->error, fmt, ap);
	va_end(ap);
}

/* A header line: "<oid> <type> <size>", or "<oid> missing". */
/* What O is for, fit to print (a path from the project may hold anything). */
static char *
snap_verify_what(const struct snap_verify_obj *o)
{
	struct buf b;

	buf_init(&b);
	snap_quote_path(&b, "", o->what);
	if (b.data == NULL)
		return xstrdup("");
	return buf_steal(&b);
}

static void
snap_verify_header(struct snap_verify *s)
{
	const struct snap_verify_obj *o = &s->v[s->i];
	char type[16], hdr[64], *what;
	unsigned long long size;
	int n;

	if (s->i >= s->n) {
		snap_verify_fail(s, "git cat-file gave more than was asked for");
		return;
	}
	if (strstr(s->head.data, " missing") != NULL) {
		what = snap_verify_what(o);
		snap_verify_fail(s, "%s (%s) is missing", o->oid, what);
		free(what);
		s->i++;
		return;
	}
	if (sscanf(s->head.data, "%*s %15s %llu", type, &size) != 2) {
		snap_verify_fail(s, "git cat-file said '%s'", s->head.data);
		return;
	}
	if (o->type != NULL && strcmp(type, o->type) != 0) {
		what = snap_verify_what(o);
		snap_verify_fail(s, "%s (%s) is a %s, not a %s", o->oid, what,
		    type, o->type);
		free(what);
	}
	n = snprintf(hdr, sizeof hdr, "%s %llu", type, size);
	EVP_DigestInit_ex(s->md, EVP_sha1(), NULL);
	EVP_DigestUpdate(s->md, hdr, (size_t)n + 1);
	s->left = size + 1;
	s->in_body = true;
}

/* The object's content is in: its hash must be its id. */
static void
snap_verify_check(struct snap_verify *s)
{
	static const char hex[] = "0123456789abcdef";
	const struct snap_verify_obj *o = &s->v[s->i];
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int len = 0, k;
	char got[2 * EVP_MAX_MD_SIZE + 1], *what;

	EVP_DigestFinal_ex(s->md, md, &len);
	for (k = 0; k < len; k++) {
		got[2 * k] = hex[md[k] >> 4];
		got[2 * k + 1] = hex[md[k] & 15];
	}
	got[2 * len] = '\0';
	if (strcmp(got, o->oid) != 0) {
		what = snap_verify_what(o);
		snap_verify_fail(s, "%s (%s) is damaged: its content hashes to "
		    "%s", o->oid, what, got);
		free(what);
	}
	s->in_body = false;
	s->i++;
}

static void
snap_verify_chunk(void *arg, const char *data, size_t len)
{
	struct snap_verify *s = arg;
	const char *nl;
	size_t take;

	while (len > 0) {
		if (s->in_body) {
			take = s->left < len ? (size_t)s->left : len;
			/* The last byte is cat-file's newline, not content. */
			if (take == s->left)
				take--;
			EVP_DigestUpdate(s->md, data, take);
			if (s->keep != NULL && s->i == 0)
				buf_add(s->keep, data, take);
			s->left -= take;
			data += take;
			len -= take;
			if (s->left == 1 && len > 0) {
				data++;
				len--;
				s->left = 0;
				snap_verify_check(s);
			}
			continue;
		}
		if ((nl = memchr(data, '\n', len)) == NULL) {
			buf_add(&s->head, data, len);
			return;
		}
		buf_add(&s->head, data, (size_t)(nl - data));
		len -= (size_t)(nl - data) + 1;
		data = nl + 1;
		if (s->head.data != NULL)
			snap_verify_header(s);
		buf_reset(&s->head);
	}
}

int
snap_verify_objects(struct snap_repo *r, const struct snap_verify_obj *v,
    size_t n, struct buf *keep, char **cause)
{
	struct proc_opts o;
	struct snap_verify s;
	struct strv argv;
	struct buf in;
	size_t i;
	int st, rc;

	if (n == 0)
		return 0;
	memset(&s, 0, sizeof s);
	s.v = v;
	s.n = n;
	s.keep = keep;
	s.md = EVP_MD_CTX_new();
	buf_init(&s.head);
	buf_init(&in);
	for (i = 0; i < n; i++)
		buf_printf(&in, "%s\n", v[i].oid);
	strv_init(&argv);
	strv_add(&argv, "git");
	strv_add(&argv, "cat-file");
	strv_add(&argv, "--batch");
	memset(&o, 0, sizeof o);
	o.data_max = snap_git_mem;
	o.argv = argv.v;
	o.env = r->env[SNAP_ENV_DB].v;
	o.dir = r->gitdir;
	o.input = in.data;
	o.inputlen = in.len;
	o.out_fd = -1;
	o.umask = -1;
	o.chunk = snap_verify_chunk;
	o.chunk_arg = &s;
	rc = proc_run(&o, NULL, NULL, &st, cause);
	if (rc == 0 && s.error == NULL && (st != 0 || s.i != n))
		snap_verify_fail(&s, "git cat-file read %zu of %zu objects "
		    "(exit %d)", s.i, n, st);
	if (rc == 0 && s.error != NULL) {
		*cause = s.error;
		s.error = NULL;
		rc = -1;
	}
	free(s.error);
	EVP_MD_CTX_free(s.md);
	buf_free(&s.head);
	buf_free(&in);
	strv_free(&argv);
	return rc;
}
