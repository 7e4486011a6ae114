/*
 * Three-way config apply: how each config dir and file was when a session
 * started (kept in the session's own dir), and the merge of the session's
 * version into the host's version of now against it (key by key for JSON,
 * line by line for text through git merge-file).
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* jansson's json_null (unused here) would clash with core's JSON writer. */
#define json_null snap_cm_jansson_null
#include <jansson.h>
#undef json_null

#include "snap/snap-int.h"

/* A file bigger than this keeps no start copy (a merge takes an empty base). */
#define SNAP_CM_MAX_FILE ((off_t)4 << 20)
/* What one session start may copy in all, and how many files. */
#define SNAP_CM_MAX_TOTAL ((off_t)32 << 20)
#define SNAP_CM_MAX_FILES 4096
#define SNAP_CM_MAX_DEPTH 16
/* Conflict lines shown per file. */
#define SNAP_CM_MAX_SHOWN 40

struct snap_cm_budget {
	off_t bytes;
	int files;
};

/* Copies IN (any file: only a regular one is copied) to NAME in DFD, within budget. */
static void
snap_cm_copy_fd(int in, int dfd, const char *name, struct snap_cm_budget *bg)
{
	struct stat sb;
	int out;

	if (fstat(in, &sb) == -1 || !S_ISREG(sb.st_mode) ||
	    sb.st_size > SNAP_CM_MAX_FILE || sb.st_size > bg->bytes ||
	    bg->files <= 0)
		return;
	out = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, 0600);
	if (out == -1)
		return;
	bg->bytes -= sb.st_size;
	bg->files--;
	if (snap_copy_fd(in, out) == -1)
		(void)unlinkat(dfd, name, 0);
	close(out);
}

/* Copies NAME in SFD to DFD; never through a link, never a fifo's open. */
static void
snap_cm_copy(int sfd, int dfd, const char *name, struct snap_cm_budget *bg)
{
	int in;

	in = openat(sfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (in == -1)
		return;
	snap_cm_copy_fd(in, dfd, name, bg);
	close(in);
}

static void snap_cm_walk(int sfd, int dfd, int depth,
    struct snap_cm_budget *bg);

/* The subdirs of SFD, after its files: the top-level files fit first. */
static void
snap_cm_subdirs(int sfd, int dfd, const struct strv *dirs, int depth,
    struct snap_cm_budget *bg)
{
	int s, d;
	size_t i;

	for (i = 0; i < dirs->n && bg->files > 0; i++) {
		s = openat(sfd, dirs->v[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
		if (s == -1)
			continue;
		d = -1;
		if (mkdirat(dfd, dirs->v[i], 0700) == 0)
			d = openat(dfd, dirs->v[i], O_RDONLY | O_DIRECTORY |
			    O_NOFOLLOW | O_CLOEXEC);
		if (d != -1) {
			snap_cm_walk(s, d, depth + 1, bg);
			close(d);
		}
		close(s);
	}
}

static void
snap_cm_walk(int sfd, int dfd, int depth, struct snap_cm_budget *bg)
{
	struct strv dirs;
	struct dirent *de;
	struct stat sb;
	DIR *d;
	int fd;

	if (depth > SNAP_CM_MAX_DEPTH || (fd = dup(sfd)) == -1)
		return;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return;
	}
	strv_init(&dirs);
	while ((de = readdir(d)) != NULL && bg->files > 0) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
		    fstatat(sfd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) == -1)
			continue;
		if (S_ISDIR(sb.st_mode))
			strv_add(&dirs, de->d_name);
		else if (S_ISREG(sb.st_mode))
			snap_cm_copy(sfd, dfd, de->d_name, bg);
	}
	closedir(d);
	snap_cm_subdirs(sfd, dfd, &dirs, depth, bg);
	strv_free(&dirs);
}

/* The start copy of a config file entry: ENTRY/base-file. */
static void
snap_cm_base_file(const char *host, const char *entry,
    struct snap_cm_budget *bg)
{
	int in, dfd;

	in = open(host, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (in == -1)
		return; /* not on the host: an empty base */
	dfd = open(entry, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd != -1) {
		snap_cm_copy_fd(in, dfd, "base-file", bg);
		close(dfd);
	}
	close(in);
}

/* The start copy of a config dir entry: ENTRY/base, as far as the budget goes. */
static int
snap_cm_base_dir(const char *host, const char *entry,
    struct snap_cm_budget *bg, char **cause)
{
	char *base = xprintf("%s/base", entry);
	int sfd, dfd;

	if (mkdir(base, 0700) == -1 && errno != EEXIST) {
		*cause = xprintf("cannot create %s: %s", base, strerror(errno));
		free(base);
		return -1;
	}
	dfd = open(base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	free(base);
	sfd = open(host, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	/* No dir on the host yet: an empty base. */
	if (sfd != -1 && dfd != -1)
		snap_cm_walk(sfd, dfd, 0, bg);
	if (sfd != -1)
		close(sfd);
	if (dfd != -1)
		close(dfd);
	return 0;
}

/* The time mark comes first: a host file changed after it is merged. */
int
snap_confdiff_base(const char *host, const char *entry, bool file,
    char **cause)
{
	struct snap_cm_budget bg = { SNAP_CM_MAX_TOTAL, SNAP_CM_MAX_FILES };
	char *mark = xprintf("%s/base-time", entry);
	int rc;

	rc = util_write_file_atomic(mark, "", 0, 0600, cause);
	free(mark);
	if (rc == -1)
		return -1;
	if (file) {
		snap_cm_base_file(host, entry, &bg);
		return 0;
	}
	return snap_cm_base_dir(host, entry, &bg, cause);
}

/* ---- JSON, key by key ---- */

static bool
snap_cm_eq(json_t *a, json_t *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return json_equal(a, b) != 0;
}

static json_t *snap_cm_value(json_t *b, json_t *o, json_t *t,
    const char *path, struct strv *conf);

static json_t *
snap_cm_key(json_t *b, json_t *o, json_t *t, const char *path,
    const char *key, struct strv *conf)
{
	char *sub = *path != '\0' ? xprintf("%s.%s", path, key) : xstrdup(key);
	json_t *v;

	v = snap_cm_value(b != NULL ? json_object_get(b, key) : NULL,
	    json_object_get(o, key), json_object_get(t, key), sub, conf);
	free(sub);
	return v;
}

/* Both sides are objects: each key merges on its own, the host's order first. */
static json_t *
snap_cm_object(json_t *b, json_t *o, json_t *t, const char *path,
    struct strv *conf)
{
	json_t *r = json_object(), *x, *v;
	const char *k;

	json_object_foreach(o, k, x) {
		if ((v = snap_cm_key(b, o, t, path, k, conf)) != NULL)
			json_object_set_new(r, k, v);
	}
	json_object_foreach(t, k, x) {
		if (json_object_get(o, k) != NULL)
			continue;
		if ((v = snap_cm_key(b, o, t, path, k, conf)) != NULL)
			json_object_set_new(r, k, v);
	}
	return r;
}

/*
 * One value (NULL: absent) from the start (B), the host now (O) and the
 * session (T): a side that did not change it takes the other's; objects
 * changed on both sides merge key by key; anything else changed on both
 * sides differently is a conflict, and the host's value stays.
 */
static json_t *
snap_cm_value(json_t *b, json_t *o, json_t *t, const char *path,
    struct strv *conf)
{
	json_t *keep;

	if (snap_cm_eq(o, t) || snap_cm_eq(b, t))
		keep = o;
	else if (snap_cm_eq(b, o))
		keep = t;
	else if (json_is_object(o) && json_is_object(t) && (b == NULL ||
	    json_is_object(b)))
		return snap_cm_object(b, o, t, path, conf);
	else {
		strv_add(conf, *path != '\0' ? path : "(the whole document)");
		keep = o;
	}
	return keep != NULL ? json_incref(keep) : NULL;
}

/* The host file's layout: compact on one line, or indented by N spaces. */
static size_t
snap_cm_json_flags(const struct buf *ours)
{
	const char *nl = memchr(ours->data, '\n', ours->len);
	size_t n = 0;

	if (nl == NULL || (size_t)(nl - ours->data) + 1 >= ours->len)
		return JSON_COMPACT;
	while (nl + 1 + n < ours->data + ours->len && nl[1 + n] == ' ')
		n++;
	return JSON_INDENT(n == 0 ? 2 : n > 8 ? 8 : n);
}

static json_t *
snap_cm_load(const struct buf *b)
{
	json_error_t err;

	if (b == NULL || b->len == 0)
		return NULL;
	return json_loadb(b->data, b->len, JSON_REJECT_DUPLICATES, &err);
}

/* 0 merged into RESULT, 1 conflicting keys in CONF, -1 not all JSON. */
static int
snap_cm_json(const struct buf *base, const struct buf *ours,
    const struct buf *theirs, struct buf *result, struct strv *conf)
{
	json_t *b = snap_cm_load(base), *o = snap_cm_load(ours);
	json_t *t = snap_cm_load(theirs), *r = NULL;
	char *text;
	int rc = -1;

	if (o == NULL || t == NULL || (b == NULL && base != NULL &&
	    base->len > 0))
		goto out;
	r = snap_cm_value(b, o, t, "", conf);
	rc = conf->n > 0 ? 1 : 0;
	if (rc == 0 && r != NULL && (text = json_dumps(r,
	    snap_cm_json_flags(ours) | JSON_ENCODE_ANY)) != NULL) {
		buf_adds(result, text);
		if (ours->data[ours->len - 1] == '\n')
			buf_addc(result, '\n');
		free(text);
	} else if (rc == 0)
		rc = -1;
out:
	json_decref(b);
	json_decref(o);
	json_decref(t);
	json_decref(r);
	return rc;
}

/* ---- text, line by line ---- */

static int
snap_cm_write(const char *dir, const char *name, const struct buf *b,
    char **path, char **cause)
{
	*path = xprintf("%s/%s", dir, name);
	return util_write_file_atomic(*path, b != NULL && b->data != NULL ?
	    b->data : "", b != NULL ? b->len : 0, 0600, cause);
}

/* The conflicting hunks of git merge-file's output, marker lines too. */
static void
snap_cm_hunks(const struct buf *out, struct strv *conf)
{
	char *p, *nl;
	bool in = false;

	for (p = out->data; p != NULL && *p != '\0' && conf->n <
	    SNAP_CM_MAX_SHOWN; p = nl + 1) {
		if ((nl = strchr(p, '\n')) == NULL)
			nl = p + strlen(p) - 1;
		if (strncmp(p, "<<<<<<< ", 8) == 0)
			in = true;
		if (in)
			strv_take(conf, xstrndup(p, (size_t)(nl - p) +
			    (*nl == '\n' ? 0 : 1)));
		if (strncmp(p, ">>>>>>> ", 8) == 0)
			in = false;
	}
}

/* git merge-file on copies in DIR (agentmux's own): 0, 1 (conflict), -1. */
static int
snap_cm_git(const struct buf *base, const struct buf *ours,
    const struct buf *theirs, const char *dir, struct buf *result,
    struct strv *conf, char **cause)
{
	char *pb = NULL, *po = NULL, *pt = NULL;
	char *argv[] = { "git", "merge-file", "-p", "-L", "host now", "-L",
	    "session start", "-L", "session", NULL, NULL, NULL, NULL };
	struct buf err;
	int st, rc = -1;

	buf_init(&err);
	if (snap_cm_write(dir, "host", ours, &po, cause) == -1 ||
	    snap_cm_write(dir, "start", base, &pb, cause) == -1 ||
	    snap_cm_write(dir, "session", theirs, &pt, cause) == -1)
		goto out;
	argv[9] = po;
	argv[10] = pb;
	argv[11] = pt;
	if (snap_git_outside(argv, result, &err, &st, cause) == -1)
		goto out;
	if (st == 0)
		rc = 0;
	else if (st > 0 && st < 128) {
		snap_cm_hunks(result, conf);
		rc = 1;
	} else
		*cause = xprintf("git merge-file failed: %s", err.data !=
		    NULL ? err.data : "no message");
out:
	buf_free(&err);
	if (pb != NULL)
		unlink(pb);
	if (po != NULL)
		unlink(po);
	if (pt != NULL)
		unlink(pt);
	free(pb);
	free(po);
	free(pt);
	return rc;
}

static bool
snap_cm_prefix(const struct buf *base, const struct buf *b)
{
	return b->len >= base->len && memcmp(b->data, base->data,
	    base->len) == 0;
}

static bool
snap_cm_has_nul(const struct buf *b)
{
	return b != NULL && b->len > 0 && memchr(b->data, '\0', b->len) != NULL;
}

int
snap_confmerge(const struct buf *base, const struct buf *ours,
    const struct buf *theirs, bool json, const char *tmpdir,
    struct buf *result, struct strv *conf, char **cause)
{
	int rc;

	if (ours->len == 0 || theirs->len == 0)
		json = false;
	if (json && (rc = snap_cm_json(base, ours, theirs, result, conf)) != -1)
		return rc;
	if (snap_cm_has_nul(base) || snap_cm_has_nul(ours) ||
	    snap_cm_has_nul(theirs)) {
		strv_add(conf, "(a binary file: it cannot be merged)");
		return 1;
	}
	/* Both only appended (a log such as history.jsonl): both appends stay. */
	if (base != NULL && base->len > 0 && base->data[base->len - 1] ==
	    '\n' && snap_cm_prefix(base, ours) && snap_cm_prefix(base, theirs)) {
		buf_add(result, ours->data, ours->len);
		buf_add(result, theirs->data + base->len, theirs->len - base->len);
		return 0;
	}
	return snap_cm_git(base, ours, theirs, tmpdir, result, conf, cause);
}
