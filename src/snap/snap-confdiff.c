/*
 * Config diffs: what an agent changed in its overlaid config dirs (the
 * overlay upper dirs of a session), shown against the host dirs with
 * secrets redacted, and applied (atomically per file) or discarded.
 */
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "snap/snap-int.h"

/* Files bigger than this are summarised, not diffed. */
#define SNAP_CC_MAX_DIFF ((off_t)1 << 20)
/* Files listed under a deleted directory. */
#define SNAP_CC_MAX_LIST 50

struct snap_cc {
	char *host;           /* the host path */
	char *upper;          /* its copy in the upper dir (NULL for deletions) */
	char *root;           /* the overlaid host dir (or file) it is under */
	char change;          /* A(dded), M(odified), D(eleted) */
	char type;            /* f(ile), l(ink), d(ir) */
};

struct snap_ccs {
	struct snap_cc *v;
	size_t n;
};

static void
snap_ccs_free(struct snap_ccs *c)
{
	size_t i;

	for (i = 0; i < c->n; i++) {
		free(c->v[i].host);
		free(c->v[i].upper);
		free(c->v[i].root);
	}
	free(c->v);
	memset(c, 0, sizeof *c);
}

static void
snap_ccs_add(struct snap_ccs *c, const char *root, const char *host,
    const char *upper, char change, char type)
{
	struct snap_cc *cc;

	c->v = xreallocarray(c->v, c->n + 1, sizeof *c->v);
	cc = &c->v[c->n++];
	cc->root = xstrdup(root);
	cc->host = xstrdup(host);
	cc->upper = upper != NULL ? xstrdup(upper) : NULL;
	cc->change = change;
	cc->type = type;
}

static char
snap_cc_type(mode_t m)
{
	return S_ISDIR(m) ? 'd' : S_ISLNK(m) ? 'l' : 'f';
}

/* A whiteout: a 0/0 char device, or (newer kernels) a file marked as one. */
static bool
snap_cc_whiteout(const char *path, const struct stat *sb)
{
	if (S_ISCHR(sb->st_mode) && sb->st_rdev == makedev(0, 0))
		return true;
	return S_ISREG(sb->st_mode) && sb->st_size == 0 &&
	    (lgetxattr(path, "user.overlay.whiteout", NULL, 0) >= 0 ||
	    lgetxattr(path, "trusted.overlay.whiteout", NULL, 0) >= 0);
}

/* An opaque dir hides everything below it in the lower (host) dir. */
static bool
snap_cc_opaque(const char *path)
{
	char v[4];
	ssize_t n;

	n = lgetxattr(path, "user.overlay.opaque", v, sizeof v);
	if (n < 0)
		n = lgetxattr(path, "trusted.overlay.opaque", v, sizeof v);
	return n == 1 && v[0] == 'y';
}

static bool
snap_cc_same_file(const char *a, const char *b, const struct stat *sa,
    const struct stat *sb)
{
	if (sa->st_size != sb->st_size ||
	    (sa->st_mode & 07777) != (sb->st_mode & 07777))
		return false;
	return buf_same_file(a, b);
}

static bool
snap_cc_same_link(const char *a, const char *b)
{
	char x[4096], y[4096];
	ssize_t n, m;

	n = readlink(a, x, sizeof x);
	m = readlink(b, y, sizeof y);
	return n >= 0 && n == m && memcmp(x, y, (size_t)n) == 0;
}

static int
snap_cc_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names in DIR (so output is stable); caller frees with strv_free. */
static void
snap_cc_names(const char *dir, struct strv *names)
{
	struct dirent *de;
	DIR *d;

	strv_init(names);
	if ((d = opendir(dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			strv_add(names, de->d_name);
	}
	closedir(d);
	qsort(names->v, names->n, sizeof *names->v, snap_cc_cmp);
}

static void snap_cc_scan(struct snap_ccs *, const char *root,
    const char *upper, const char *host);

/* Everything under host dir HOST not in UPPER was hidden by an opaque dir. */
static void
snap_cc_hidden(struct snap_ccs *c, const char *root, const char *upper,
    const char *host)
{
	struct strv names;
	struct stat sb;
	char *u, *h;
	size_t i;

	snap_cc_names(host, &names);
	for (i = 0; i < names.n; i++) {
		u = xprintf("%s/%s", upper, names.v[i]);
		h = xprintf("%s/%s", host, names.v[i]);
		if (lstat(u, &sb) == -1 && lstat(h, &sb) == 0)
			snap_ccs_add(c, root, h, NULL, 'D', snap_cc_type(sb.st_mode));
		free(u);
		free(h);
	}
	strv_free(&names);
}

/* One entry of the upper dir against its host counterpart. */
static void
snap_cc_entry(struct snap_ccs *c, const char *root, const char *u,
    const char *h)
{
	struct stat su, sh;
	bool host = lstat(h, &sh) == 0;

	if (lstat(u, &su) == -1)
		return;
	if (snap_cc_whiteout(u, &su)) {
		if (host)
			snap_ccs_add(c, root, h, NULL, 'D', snap_cc_type(sh.st_mode));
		return;
	}
	if (S_ISDIR(su.st_mode)) {
		if (host && !S_ISDIR(sh.st_mode))
			snap_ccs_add(c, root, h, NULL, 'D', snap_cc_type(sh.st_mode));
		else if (host && snap_cc_opaque(u))
			snap_cc_hidden(c, root, u, h);
		snap_cc_scan(c, root, u, h);
		return;
	}
	if (!S_ISREG(su.st_mode) && !S_ISLNK(su.st_mode))
		return; /* fifos, sockets, devices: not config */
	if (!host)
		snap_ccs_add(c, root, h, u, 'A', snap_cc_type(su.st_mode));
	else if ((su.st_mode & S_IFMT) != (sh.st_mode & S_IFMT) ||
	    (S_ISREG(su.st_mode) && !snap_cc_same_file(u, h, &su, &sh)) ||
	    (S_ISLNK(su.st_mode) && !snap_cc_same_link(u, h)))
		snap_ccs_add(c, root, h, u, 'M', snap_cc_type(su.st_mode));
}

static void
snap_cc_scan(struct snap_ccs *c, const char *root, const char *upper,
    const char *host)
{
	struct strv names;
	char *u, *h;
	size_t i;

	snap_cc_names(upper, &names);
	for (i = 0; i < names.n; i++) {
		u = xprintf("%s/%s", upper, names.v[i]);
		h = xprintf("%s/%s", host, names.v[i]);
		snap_cc_entry(c, root, u, h);
		free(u);
		free(h);
	}
	strv_free(&names);
}

static void
snap_cc_file_entry(struct snap_ccs *c, const char *copy, const char *mark,
    const char *host)
{
	struct stat sc, sh;

	if (lstat(copy, &sc) == -1) {
		if (access(mark, F_OK) == 0 && lstat(host, &sh) == 0)
			snap_ccs_add(c, host, host, NULL, 'D',
			    snap_cc_type(sh.st_mode));
		return;
	}
	if (lstat(host, &sh) == -1)
		snap_ccs_add(c, host, host, copy, 'A', snap_cc_type(sc.st_mode));
	else if ((sc.st_mode & S_IFMT) != (sh.st_mode & S_IFMT) ||
	    (S_ISREG(sc.st_mode) && !snap_cc_same_file(copy, host, &sc, &sh)) ||
	    (S_ISLNK(sc.st_mode) && !snap_cc_same_link(copy, host)))
		snap_ccs_add(c, host, host, copy, 'M', snap_cc_type(sc.st_mode));
}

/*
 * A file entry: the session's copy (overlay/<n>/file) against the host
 * file. No copy is no change, unless overlay/<n>/deleted says the agent
 * removed the file.
 */
static void
snap_cc_file(struct snap_ccs *c, const char *entry, const char *host)
{
	char *copy = xprintf("%s/file", entry);
	char *mark = xprintf("%s/deleted", entry);

	snap_cc_file_entry(c, copy, mark, host);
	free(copy);
	free(mark);
}

/* Reads the manifest ("N\tdir|file\tHOST" lines) and scans each entry. */
static int
snap_cc_read(int64_t session, struct snap_ccs *c, char **cause)
{
	char *data, *sdir, *p, *line, *save = NULL, *kind, *host, *tab;
	struct buf b;

	memset(c, 0, sizeof *c);
	if ((data = path_data_dir(cause)) == NULL)
		return -1;
	sdir = xprintf("%s/sessions/%lld", data, (long long)session);
	free(data);
	p = xprintf("%s/overlays", sdir);
	buf_init(&b);
	if (buf_read_file(&b, p) == -1 || b.data == NULL) {
		free(p);
		free(sdir);
		buf_free(&b);
		return 0; /* no overlays: no config changes */
	}
	free(p);
	for (line = strtok_r(b.data, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		if ((tab = strchr(line, '\t')) == NULL)
			continue;
		*tab = '\0';
		kind = tab + 1;
		if ((tab = strchr(kind, '\t')) == NULL)
			continue;
		*tab = '\0';
		host = tab + 1;
		if (strcmp(kind, "dir") == 0) {
			p = xprintf("%s/overlay/%s/upper", sdir, line);
			snap_cc_scan(c, host, p, host);
		} else {
			p = xprintf("%s/overlay/%s", sdir, line);
			snap_cc_file(c, p, host);
		}
		free(p);
	}
	buf_free(&b);
	free(sdir);
	return 0;
}

/* Host paths the user named: absolute, ~/..., or relative to the current dir. */
static bool
snap_cc_wanted(const struct snap_cc *cc, char *const *paths)
{
	char *p, cwd[4096];
	size_t n;
	bool yes = false;

	if (paths == NULL || *paths == NULL)
		return true;
	for (; !yes && *paths != NULL; paths++) {
		if ((*paths)[0] == '~')
			p = path_expand_home(*paths);
		else if ((*paths)[0] != '/' && getcwd(cwd, sizeof cwd) != NULL)
			p = xprintf("%s/%s", cwd, *paths);
		else
			p = xstrdup(*paths);
		n = strlen(p);
		while (n > 1 && p[n - 1] == '/')
			p[--n] = '\0';
		yes = strncmp(cc->host, p, n) == 0 && (cc->host[n] == '\0' ||
		    cc->host[n] == '/');
		free(p);
	}
	return yes;
}

/* The changes not yet applied or discarded (and among PATHS, if given). */
static int
snap_cc_pending(struct store *st, int64_t session, char *const *paths,
    struct snap_ccs *c, char **cause)
{
	struct store_confchange **done;
	size_t ndone, i, j, k;
	bool keep;

	if (snap_cc_read(session, c, cause) == -1)
		return -1;
	done = store_confchange_list(st, session, &ndone);
	for (i = k = 0; i < c->n; i++) {
		keep = snap_cc_wanted(&c->v[i], paths);
		for (j = 0; keep && j < ndone; j++)
			keep = strcmp(done[j]->path, c->v[i].host) != 0;
		if (keep) {
			c->v[k++] = c->v[i];
			continue;
		}
		free(c->v[i].host);
		free(c->v[i].upper);
		free(c->v[i].root);
	}
	c->n = k;
	store_confchange_list_free(done, ndone);
	return 0;
}

int
snap_confdiff_pending(struct store *st, int64_t session)
{
	struct snap_ccs c;
	char *cause = NULL;
	int n;

	if (snap_cc_pending(st, session, NULL, &c, &cause) == -1) {
		free(cause);
		return -1;
	}
	n = (int)c.n;
	snap_ccs_free(&c);
	return n;
}

static const char *
snap_cc_word(char change)
{
	return change == 'A' ? "added" : change == 'M' ? "modified" : "deleted";
}

struct snap_cc_out {
	FILE *out;
	bool color;
	char **secrets;
	size_t nsecrets;
};

static void
snap_cc_line(struct snap_cc_out *o, const char *line, size_t len)
{
	const char *color = NULL;
	char *copy = xstrndup(line, len), *red, *body;

	/* The diff's own first column is not content (a '+' would join a run). */
	if (len > 0 && strchr("+- ", line[0]) != NULL) {
		body = snap_redact_line(copy + 1, o->secrets, o->nsecrets);
		red = xprintf("%c%s", line[0], body);
		free(body);
	} else
		red = snap_redact_line(copy, o->secrets, o->nsecrets);
	if (o->color && len > 0) {
		if (line[0] == '+')
			color = "32";
		else if (line[0] == '-')
			color = "31";
		else if (line[0] == '@')
			color = "36";
	}
	/* The content is the agent's: out_printf shows its controls escaped. */
	if (color != NULL)
		out_color(o->out, color);
	out_printf(o->out, "%s", red);
	if (color != NULL)
		out_color(o->out, "");
	out_puts(o->out, "\n");
	free(red);
	free(copy);
}

/* Unified diff of A and B (either may be /dev/null) by git, headers dropped. */
static void
snap_cc_unified(struct snap_cc_out *o, const char *a, const char *b)
{
	char *argv[] = { "git", "diff", "--no-index", "--no-color",
	    "--no-ext-diff", "--no-textconv", "--", (char *)a, (char *)b, NULL };
	struct buf out, err;
	char *cause = NULL, *p, *nl;
	bool body = false;
	int st;

	buf_init(&out);
	buf_init(&err);
	if (snap_git_outside(argv, &out, &err, &st, &cause) == -1 || st > 1) {
		out_printf(o->out, "(cannot diff: %s)\n", cause != NULL ?
		    cause : err.data != NULL ? err.data : "git diff failed");
		free(cause);
	}
	for (p = out.data; p != NULL && *p != '\0'; p = nl + 1) {
		nl = strchr(p, '\n');
		if (nl == NULL)
			nl = p + strlen(p) - 1;
		if (strncmp(p, "@@", 2) == 0)
			body = true;
		if (strncmp(p, "Binary files", 12) == 0)
			break;
		if (body)
			snap_cc_line(o, p, (size_t)(nl - p) + (*nl == '\n' ? 0 : 1));
	}
	buf_free(&out);
	buf_free(&err);
}

/* Binary as git sees it: a NUL in the first 8000 bytes. */
static bool
snap_cc_binary(const char *path)
{
	struct buf b;
	bool bin;

	buf_init(&b);
	bin = buf_read_file(&b, path) == 0 && b.len > 0 &&
	    memchr(b.data, '\0', b.len < 8000 ? b.len : 8000) != NULL;
	buf_free(&b);
	return bin;
}

static void
snap_cc_show_file(struct snap_cc_out *o, const struct snap_cc *cc)
{
	const char *a = cc->change == 'A' ? "/dev/null" : cc->host;
	const char *b = cc->change == 'D' ? "/dev/null" : cc->upper;
	struct stat sa, sb;
	off_t za = 0, zb = 0;

	if (strcmp(a, "/dev/null") != 0 && lstat(a, &sa) == 0)
		za = sa.st_size;
	if (strcmp(b, "/dev/null") != 0 && lstat(b, &sb) == 0)
		zb = sb.st_size;
	if (za > SNAP_CC_MAX_DIFF || zb > SNAP_CC_MAX_DIFF)
		out_printf(o->out, "large file: %lld -> %lld bytes\n",
		    (long long)za, (long long)zb);
	else if ((za > 0 && snap_cc_binary(a)) ||
	    (zb > 0 && snap_cc_binary(b)))
		out_printf(o->out, "binary file: %lld -> %lld bytes\n",
		    (long long)za, (long long)zb);
	else {
		if (cc->change == 'M' && za == zb && lstat(a, &sa) == 0 &&
		    lstat(b, &sb) == 0 && (sa.st_mode & 07777) !=
		    (sb.st_mode & 07777))
			out_printf(o->out, "mode %04o -> %04o\n",
			    (unsigned)(sa.st_mode & 07777),
			    (unsigned)(sb.st_mode & 07777));
		snap_cc_unified(o, a, b);
	}
}

static void
snap_cc_show_link(struct snap_cc_out *o, const struct snap_cc *cc)
{
	char t[4096], *line, *q;
	ssize_t n;

	if (cc->change != 'A' && (n = readlink(cc->host, t, sizeof t - 1)) >= 0) {
		t[n] = '\0';
		q = quote_name(t);
		line = xprintf("-symlink -> %s", q);
		snap_cc_line(o, line, strlen(line));
		free(line);
		free(q);
	}
	if (cc->upper != NULL && (n = readlink(cc->upper, t, sizeof t - 1)) >= 0) {
		t[n] = '\0';
		q = quote_name(t);
		line = xprintf("+symlink -> %s", q);
		snap_cc_line(o, line, strlen(line));
		free(line);
		free(q);
	}
}

static void
snap_cc_list_dir(struct snap_cc_out *o, const char *dir, size_t *n)
{
	struct strv names;
	struct stat sb;
	char *p, *q;
	size_t i;

	snap_cc_names(dir, &names);
	for (i = 0; i < names.n; i++) {
		p = xprintf("%s/%s", dir, names.v[i]);
		if (lstat(p, &sb) == 0 && S_ISDIR(sb.st_mode))
			snap_cc_list_dir(o, p, n);
		else if ((*n)++ < SNAP_CC_MAX_LIST) {
			q = quote_name(p);
			out_printf(o->out, "-%s\n", q);
			free(q);
		}
		free(p);
	}
	strv_free(&names);
}

static void
snap_cc_show_one(struct snap_cc_out *o, const struct snap_cc *cc)
{
	size_t n = 0;
	char *a, *b, *qa, *qb;

	/* As git names them: "a/PATH", the whole name quoted if it must be. */
	a = xprintf("a%s", cc->host);
	b = xprintf("b%s", cc->host);
	qa = quote_name(cc->change == 'A' ? "/dev/null" : a);
	qb = quote_name(cc->change == 'D' ? "/dev/null" : b);
	if (o->color)
		out_color(o->out, "1");
	out_printf(o->out, "--- %s\n+++ %s", qa, qb);
	if (o->color)
		out_color(o->out, "");
	out_puts(o->out, "\n");
	free(qb);
	free(qa);
	free(b);
	free(a);
	if (cc->type == 'd') {
		snap_cc_list_dir(o, cc->host, &n);
		out_printf(o->out, "deleted directory: %zu file%s%s\n", n,
		    n == 1 ? "" : "s", n > SNAP_CC_MAX_LIST ? " (not all listed)" :
		    "");
	} else if (cc->type == 'l')
		snap_cc_show_link(o, cc);
	else
		snap_cc_show_file(o, cc);
}

static void
snap_cc_secrets_free(char **v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

int
snap_confdiff_show(struct store *st, int64_t session,
    const struct snap_confdiff_opts *opts, char **cause)
{
	struct snap_cc_out o;
	struct snap_ccs c;
	char *q;
	size_t i;

	if (snap_cc_pending(st, session, opts->paths, &c, cause) == -1)
		return -1;
	memset(&o, 0, sizeof o);
	o.out = opts->out;
	o.color = opts->color;
	o.secrets = snap_redact_secrets(opts->cf, &o.nsecrets);
	if (c.n == 0)
		out_printf(o.out,
		    "session %lld has no pending config changes\n",
		    (long long)session);
	for (i = 0; i < c.n; i++) {
		q = quote_name(c.v[i].host);
		if (o.color)
			out_color(o.out, "1;33");
		out_printf(o.out, "%s %s", snap_cc_word(c.v[i].change), q);
		if (o.color)
			out_color(o.out, "");
		out_puts(o.out, "\n");
		free(q);
		snap_cc_show_one(&o, &c.v[i]);
	}
	if (c.n > 0)
		out_printf(o.out,
		    "%zu pending change%s: 'agentmux confdiff %lld "
		    "--apply [PATH...]' keeps them, --discard drops them\n",
		    c.n, c.n == 1 ? "" : "s", (long long)session);
	snap_cc_secrets_free(o.secrets, o.nsecrets);
	snap_ccs_free(&c);
	return 0;
}

/*
 * The overlay's root (~/.claude, say) is not on the host (the session
 * made it): it is made now, in its parent, which must be a real dir,
 * with the mode the jail gave it (never set-id). Its fd, or -1 with errno.
 */
static int
snap_cc_make_root(const struct snap_cc *cc, const char *rel)
{
	const char *name = strrchr(cc->root, '/');
	char *parent, *up;
	struct stat sb;
	mode_t mode;
	int pfd, fd = -1;
	bool made;

	if (name == NULL || cc->upper == NULL ||
	    strlen(cc->upper) < strlen(rel) + 1) {
		errno = ENOENT;
		return -1;
	}
	parent = name == cc->root ? xstrdup("/") : xstrndup(cc->root,
	    (size_t)(name - cc->root));
	up = xstrndup(cc->upper, strlen(cc->upper) - strlen(rel) - 1);
	mode = stat(up, &sb) == 0 ? sb.st_mode & 0777 : 0700;
	if ((pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) != -1) {
		made = mkdirat(pfd, name + 1, mode) == 0;
		if (made || errno == EEXIST)
			fd = openat(pfd, name + 1, O_RDONLY | O_DIRECTORY |
			    O_NOFOLLOW | O_CLOEXEC);
		/* The mode the jail gave it, not what agentmux's umask leaves. */
		if (made && fd != -1)
			(void)fchmod(fd, mode);
		close(pfd);
	}
	free(parent);
	free(up);
	return fd;
}

/*
 * Opens the host dir CC's path is in, walking down from its overlay's
 * root without following symlinks (an agent cannot make us write through
 * one), creating missing dirs with the modes they have in the upper dir.
 * *BASE points into CC->host. -1 with *CAUSE.
 */
static int
snap_cc_parent(const struct snap_cc *cc, const char **base, char **cause)
{
	const char *rel, *s, *e;
	char *root, *comp, *up;
	struct stat sb;
	int fd, next;
	mode_t mode;

	*base = strrchr(cc->host, '/') + 1;
	/* clang's analyzer loses track of the entries snap_cc_pending compacts. */
	if (strcmp(cc->host, cc->root) == 0) { /* NOLINT(clang-analyzer-unix.Malloc) */
		root = xstrndup(cc->host, (size_t)(*base - cc->host));
		fd = open(*root != '\0' ? root : "/", O_RDONLY | O_DIRECTORY |
		    O_CLOEXEC);
		free(root);
		rel = NULL;
	} else {
		fd = open(cc->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		rel = cc->host + strlen(cc->root) + 1;
		if (fd == -1 && errno == ENOENT)
			fd = snap_cc_make_root(cc, rel);
	}
	if (fd == -1) {
		*cause = xprintf("cannot open %s: %s", cc->root, strerror(errno));
		return -1;
	}
	for (s = rel; s != NULL && (e = strchr(s, '/')) != NULL; s = e + 1) {
		comp = xstrndup(s, (size_t)(e - s));
		next = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
		if (next == -1 && errno == ENOENT && cc->upper != NULL) {
			up = xstrndup(cc->upper, strlen(cc->upper) -
			    strlen(e));
			/* Never a set-gid dir of the jail's making. */
			mode = stat(up, &sb) == 0 ? sb.st_mode & 01777 : 0700;
			free(up);
			if (mkdirat(fd, comp, mode) == 0 || errno == EEXIST)
				next = openat(fd, comp, O_RDONLY | O_DIRECTORY |
				    O_NOFOLLOW | O_CLOEXEC);
		}
		if (next == -1) {
			*cause = xprintf("cannot open %.*s: %s%s", (int)(e -
			    cc->host), cc->host, strerror(errno), errno ==
			    ELOOP || errno == ENOTDIR ? " (a symlink or file "
			    "on the host; not followed)" : "");
			free(comp);
			close(fd);
			return -1;
		}
		free(comp);
		close(fd);
		fd = next;
	}
	return fd;
}

/*
 * Copies the upper file or symlink to a temporary name in DIRFD. Its mode
 * comes along without the set-uid and set-gid bits (*SETID says if it had
 * one): a jail's root could have made a root shell there.
 */
static int
snap_cc_copy_in(int dirfd, const struct snap_cc *cc, const char *tmp,
    bool *setid, char **cause)
{
	char target[4096];
	struct stat sb;
	ssize_t n;
	int in, out, rc = -1;

	if (cc->type == 'l') {
		if ((n = readlink(cc->upper, target, sizeof target - 1)) == -1 ||
		    (target[n] = '\0', symlinkat(target, dirfd, tmp)) == -1) {
			*cause = xprintf("cannot copy the symlink %s: %s",
			    cc->upper, strerror(errno));
			return -1;
		}
		return 0;
	}
	if ((in = open(cc->upper, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) == -1 ||
	    fstat(in, &sb) == -1) {
		*cause = xprintf("cannot read %s: %s", cc->upper, strerror(errno));
		if (in != -1)
			close(in);
		return -1;
	}
	out = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, 0600);
	*setid = (sb.st_mode & (S_ISUID | S_ISGID)) != 0;
	if (out != -1 && snap_copy_fd(in, out) == 0 &&
	    fchmod(out, sb.st_mode & 01777) == 0 && fsync(out) == 0)
		rc = 0;
	else
		*cause = xprintf("cannot write %s: %s", cc->host, strerror(errno));
	if (out != -1)
		close(out);
	close(in);
	return rc;
}

/* Removes what is at BASE in DIRFD (a whole dir if it is one). */
static int
snap_cc_remove(int dirfd, const char *base, const char *full, char **cause)
{
	struct stat sb;

	if (fstatat(dirfd, base, &sb, AT_SYMLINK_NOFOLLOW) == -1)
		return errno == ENOENT ? 0 : -1;
	if (S_ISDIR(sb.st_mode) ? path_remove_tree(full) == -1 :
	    unlinkat(dirfd, base, 0) == -1) {
		*cause = xprintf("cannot remove %s: %s", full, strerror(errno));
		return -1;
	}
	return 0;
}

/* Removes BASE only if it is a directory (a file replaces it). */
static int
snap_cc_remove_dir(int dirfd, const char *base, const char *full, char **cause)
{
	struct stat sb;

	if (fstatat(dirfd, base, &sb, AT_SYMLINK_NOFOLLOW) == -1 ||
	    !S_ISDIR(sb.st_mode))
		return 0;
	return snap_cc_remove(dirfd, base, full, cause);
}

/* Puts one change into the host dir: a new file is renamed over the old one. */
static int
snap_cc_apply_one(const struct snap_cc *cc, bool *setid, char **cause)
{
	const char *base;
	unsigned char rnd[6];
	char *tmp = NULL;
	int fd, rc = -1;

	if ((fd = snap_cc_parent(cc, &base, cause)) == -1)
		return -1;
	if (cc->change == 'D') {
		rc = snap_cc_remove(fd, base, cc->host, cause);
		close(fd);
		return rc;
	}
	util_random(rnd, sizeof rnd);
	tmp = xprintf(".%s.agentmux-%02x%02x%02x%02x%02x%02x", base, rnd[0],
	    rnd[1], rnd[2], rnd[3], rnd[4], rnd[5]);
	if (snap_cc_copy_in(fd, cc, tmp, setid, cause) == -1)
		goto out;
	/* A dir cannot be renamed over: a file replacing one removes it first. */
	if (cc->change == 'M' && snap_cc_remove_dir(fd, base, cc->host,
	    cause) == -1)
		goto out;
	if (renameat(fd, tmp, fd, base) == -1) {
		*cause = xprintf("cannot replace %s: %s", cc->host,
		    strerror(errno));
		goto out;
	}
	fsync(fd);
	rc = 0;
out:
	if (rc == -1)
		unlinkat(fd, tmp, 0);
	free(tmp);
	close(fd);
	return rc;
}

/* An applied file had a set-uid or set-gid bit, which did not come along. */
static void
snap_cc_setid(struct store *st, int64_t session, const char *path, FILE *out)
{
	char *q = snap_nested_quote(path);

	if (out != NULL)
		out_puts(out, "          (its set-uid/set-gid bit was not "
		    "applied)\n");
	store_event_add(st, session, "error", "tampering", "%s was set-uid or "
	    "set-gid in the session's config overlay; it was applied without "
	    "that bit", q);
	store_session_flag(st, session, "tampering");
	free(q);
}

static int
snap_cc_do(struct store *st, int64_t session, char *const *paths, bool apply,
    FILE *out, char **cause)
{
	struct store_confchange rec;
	struct snap_ccs c;
	char *err = NULL, *q;
	size_t i;
	int n = 0, failed = 0;
	bool setid;

	if (snap_cc_pending(st, session, paths, &c, cause) == -1)
		return -1;
	for (i = 0; i < c.n; i++) {
		setid = false;
		if (apply && snap_cc_apply_one(&c.v[i], &setid, &err) == -1) {
			if (out != NULL)
				out_printf(out, "not applied: %s\n", err);
			q = quote_name(c.v[i].host);
			store_event_add(st, session, "warn", "confdiff",
			    "cannot apply %s: %s", q, err);
			free(q);
			free(err);
			err = NULL;
			failed++;
			continue;
		}
		memset(&rec, 0, sizeof rec);
		rec.session_id = session;
		rec.path = c.v[i].host;
		rec.change = (char *)snap_cc_word(c.v[i].change);
		rec.action = (char *)(apply ? "applied" : "discarded");
		if (store_confchange_add(st, &rec, cause) == -1) {
			snap_ccs_free(&c);
			return -1;
		}
		if (out != NULL) {
			q = quote_name(rec.path);
			out_printf(out, "%-9s %-8s %s\n", rec.action,
			    rec.change, q);
			free(q);
		}
		if (setid)
			snap_cc_setid(st, session, rec.path, out);
		n++;
	}
	snap_ccs_free(&c);
	if (failed > 0) {
		*cause = xprintf("%d change%s could not be applied (see above); "
		    "they stay pending", failed, failed == 1 ? "" : "s");
		return -1;
	}
	return n;
}

int
snap_confdiff_apply(struct store *st, int64_t session,
    const struct snap_confdiff_opts *opts, bool apply, char **cause)
{
	if (snap_check_ended(st, session, NULL, "its config overlays are in "
	    "use, so apply or discard once it ends", cause) == -1)
		return -1;
	return snap_cc_do(st, session, opts->paths, apply, opts->out, cause);
}

int
snap_confdiff_session_end(struct store *st, const struct config *cf,
    int64_t session, int persist, char **cause)
{
	int n;

	switch (persist) {
	case CONFIG_PERSIST_ALWAYS:
		n = snap_cc_do(st, session, NULL, true, NULL, cause);
		break;
	case CONFIG_PERSIST_NEVER:
		n = snap_cc_do(st, session, NULL, false, NULL, cause);
		break;
	default:
		return 0;
	}
	if (n > 0)
		store_event_add(st, session, "info", "confdiff", "%d config "
		    "change%s %s at session end (config_persist = %s)", n,
		    n == 1 ? "" : "s", persist == CONFIG_PERSIST_ALWAYS ?
		    "applied" : "discarded", persist == CONFIG_PERSIST_ALWAYS ?
		    "always" : "never");
	return n;
}
