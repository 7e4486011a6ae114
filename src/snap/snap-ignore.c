/*
 * The ignore rules a session's snapshots use: the project's as they were
 * when the session started, frozen into one file in agentmux's data dir,
 * so that a .gitignore or info/exclude the agent adds or changes cannot
 * hide its files from diff and undo.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "snap/snap-int.h"

/* The most of one ignore file that is read. */
#define SNAP_IGNORE_MAX (4 * 1024 * 1024)

char *
snap_ignore_path(int64_t session, char **cause)
{
	char *data, *path;

	if ((data = path_data_dir(cause)) == NULL)
		return NULL;
	path = xprintf("%s/sessions/%lld/ignore", data, (long long)session);
	free(data);
	return path;
}

struct snap_ignore_walk {
	struct buf *oids;
	struct strv *dirs;
	size_t oidlen;
};

static int
snap_ignore_oid_cb(void *arg, const struct snap_index_ent *e)
{
	static const char hex[] = "0123456789abcdef";
	struct snap_ignore_walk *w = arg;
	size_t i;

	/* git reads no .gitignore that is a link; neither does this. */
	if ((e->mode & 0170000) != 0100000)
		return 0;
	if (strcmp(e->name, ".gitignore") == 0)
		strv_add(w->dirs, "");
	else if (e->namelen > 11 && strcmp(e->name + e->namelen - 11,
	    "/.gitignore") == 0)
		strv_take(w->dirs, xstrndup(e->name, e->namelen - 11));
	else
		return 0;
	for (i = 0; i < w->oidlen; i++) {
		buf_addc(w->oids, hex[e->oid[i] >> 4]);
		buf_addc(w->oids, hex[e->oid[i] & 15]);
	}
	buf_addc(w->oids, '\n');
	return 0;
}

void
snap_ignore_oids(const char *index, size_t oidlen, struct buf *oids,
    struct strv *dirs)
{
	struct snap_ignore_walk w = { oids, dirs, oidlen };

	snap_index_each(index, oidlen, snap_ignore_oid_cb, &w);
}

/* DIR's name as the start of a pattern: glob characters escaped; false if it cannot be one. */
static bool
snap_ignore_dir(struct buf *b, const char *dir)
{
	const char *s;

	for (s = dir; *s != '\0'; s++) {
		if (*s == '\n' || *s == '\r')
			return false;
		if (strchr("*?[\\", *s) != NULL)
			buf_addc(b, '\\');
		buf_addc(b, *s);
	}
	return true;
}

/*
 * One pattern of DIR's .gitignore as a pattern of the top: one with a
 * slash before its end is relative to DIR; one without matches at any
 * depth below DIR. A "!" stays in front.
 */
static void
snap_ignore_line(struct buf *b, const char *dir, const char *line,
    size_t len)
{
	bool neg = false, anchored;
	const char *p = line, *end = line + len, *slash;

	if (len == 0 || *line == '#')
		return;
	if (*p == '!') {
		neg = true;
		p++;
	}
	if (p == end)
		return;
	slash = memchr(p, '/', (size_t)(end - p));
	anchored = slash != NULL && slash < end - 1;
	if (*dir == '\0') {
		buf_add(b, line, len);
		buf_addc(b, '\n');
		return;
	}
	if (neg)
		buf_addc(b, '!');
	buf_addc(b, '/');
	snap_ignore_dir(b, dir);
	buf_adds(b, anchored ? "/" : "/**/");
	if (*p == '/')
		p++;
	buf_add(b, p, (size_t)(end - p));
	buf_addc(b, '\n');
}

/* DIR's .gitignore (TEXT) as patterns of the top; nothing if DIR cannot be written as a pattern. */
static void
snap_ignore_flatten(struct buf *b, const char *dir, const char *text,
    size_t len)
{
	const char *p = text, *end = text + len, *nl;
	struct buf probe;

	buf_init(&probe);
	if (!snap_ignore_dir(&probe, dir)) {
		buf_free(&probe);
		return;
	}
	buf_free(&probe);
	/* A UTF-8 byte order mark is not part of the first pattern. */
	if (len >= 3 && memcmp(p, "\xef\xbb\xbf", 3) == 0)
		p += 3;
	buf_printf(b, "# from %s.gitignore\n", *dir == '\0' ? "" : "a dir's ");
	for (; p < end; p = nl + 1) {
		if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
			nl = end;
		snap_ignore_line(b, dir, p, (size_t)(nl - p));
	}
}

struct snap_ignore_file {
	char *dir;
	const char *text;
	size_t len;
};

static int
snap_ignore_cmp(const void *a, const void *b)
{
	const struct snap_ignore_file *x = a, *y = b;

	return strcmp(x->dir, y->dir);
}

/*
 * The .gitignore files from cat-file --batch output (one record per
 * entry of DIRS, in order), ancestors before descendants: in one file the
 * last matching pattern wins, as a deeper .gitignore wins over git.
 */
static size_t
snap_ignore_files(const struct buf *batch, const struct strv *dirs,
    struct snap_ignore_file *files)
{
	const char *p = batch->data, *end = p + batch->len, *nl, *sp;
	size_t i, n = 0, size;

	for (i = 0; p != NULL && p < end && i < dirs->n; i++) {
		if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
			break;
		sp = memchr(p, ' ', (size_t)(nl - p));
		if (sp == NULL || strncmp(sp, " blob ", 6) != 0) {
			p = nl + 1;         /* missing: nothing follows */
			continue;
		}
		size = (size_t)strtoull(sp + 6, NULL, 10);
		if (size > (size_t)(end - nl - 1))
			break;
		files[n].dir = dirs->v[i];
		files[n].text = nl + 1;
		files[n].len = size;
		n++;
		p = nl + 1 + size + 1;
	}
	qsort(files, n, sizeof *files, snap_ignore_cmp);
	return n;
}

/* Reads one of the user's own files (their excludes file) without waiting on a FIFO. */
static void
snap_ignore_read_user(const char *path, struct buf *b)
{
	char chunk[65536];
	struct stat sb;
	size_t got = 0;
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) == -1)
		return;
	if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode)) {
		while ((n = read(fd, chunk, sizeof chunk)) > 0 &&
		    (got += (size_t)n) <= SNAP_IGNORE_MAX)
			buf_add(b, chunk, (size_t)n);
	}
	close(fd);
}

/* The user's excludes file: core.excludesFile, else git's default. */
static void
snap_ignore_user(struct buf *b, const char *excludes_file)
{
	const char *xdg = getenv("XDG_CONFIG_HOME");
	char *path;

	if (excludes_file != NULL && *excludes_file != '\0')
		path = xstrdup(excludes_file);
	else if (xdg != NULL && *xdg == '/')
		path = xprintf("%s/git/ignore", xdg);
	else
		path = xprintf("%s/.config/git/ignore", path_home());
	buf_printf(b, "# the user's excludes (%s)\n", path);
	snap_ignore_read_user(path, b);
	if (b->len > 0 && b->data[b->len - 1] != '\n')
		buf_addc(b, '\n');
	free(path);
}

/* Whether PATH (absent, or naming neither WORD) cannot set core.excludesFile. */
static bool
snap_ignore_silent_file(const char *path)
{
	struct buf b;
	bool silent;

	buf_init(&b);
	snap_ignore_read_user(path, &b);
	silent = b.data == NULL || (strcasestr(b.data, "excludesfile") == NULL &&
	    strcasestr(b.data, "include") == NULL);
	buf_free(&b);
	return silent;
}

bool
snap_ignore_config_silent(void)
{
	const char *xdg = getenv("XDG_CONFIG_HOME");
	char *files[3];
	bool silent = true;
	size_t i;

	files[0] = xstrdup("/etc/gitconfig");
	files[1] = xdg != NULL && *xdg == '/' ? xprintf("%s/git/config", xdg) :
	    xprintf("%s/.config/git/config", path_home());
	files[2] = xprintf("%s/.gitconfig", path_home());
	for (i = 0; i < nitems(files); i++) {
		silent = silent && snap_ignore_silent_file(files[i]);
		free(files[i]);
	}
	return silent;
}

int
snap_ignore_write(struct snap_repo *r, int64_t session, const char *tree,
    const char *excludes_file, const struct buf *batch,
    const struct strv *dirs, char **cause)
{
	struct snap_ignore_file *files;
	struct buf b;
	char *path, *dir;
	size_t n, i;
	int rc;

	if ((path = snap_ignore_path(session, cause)) == NULL)
		return -1;
	buf_init(&b);
	buf_printf(&b, "# agentmux: the ignore rules of session %lld as they "
	    "were at its start (tree %s), in git's order\n", (long long)session,
	    tree);
	snap_ignore_user(&b, excludes_file);
	if (r->live_excludes != NULL)
		buf_adds(&b, r->live_excludes);
	files = xcalloc(dirs->n + 1, sizeof *files);
	n = snap_ignore_files(batch, dirs, files);
	for (i = 0; i < n; i++)
		snap_ignore_flatten(&b, files[i].dir, files[i].text, files[i].len);
	free(files);
	dir = xstrndup(path, (size_t)(strrchr(path, '/') - path));
	if (path_mkdir_p(dir, 0700) == -1) {
		*cause = xprintf("cannot create %s: %s", dir, strerror(errno));
		rc = -1;
	} else
		rc = util_write_file_atomic(path, b.data, b.len, 0600, cause);
	free(dir);
	buf_free(&b);
	if (rc == 0) {
		free(r->ignore);
		free(r->start_tree);
		r->ignore = path;
		r->start_tree = xstrdup(tree);
	} else
		free(path);
	return rc;
}
