/*
 * Config diffs: what an agent changed in its overlaid config dirs (the
 * overlay upper dirs of a session), shown against the host dirs with
 * secrets redacted, and applied (atomically per file) or discarded.
 */
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

#include <dirent.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "snap/snap-int.h"

/* Files bigger than this are summarised, not diffed. */
#define SNAP_CC_MAX_DIFF ((off_t)1 << 20)
/* Files listed under a deleted directory. */
#define SNAP_CC_MAX_LIST 50
/* What a dir's removal would lose: how many are named, and how deep it is checked. */
#define SNAP_CC_MAX_WHY 20
#define SNAP_CC_MAX_DEPTH 64
/* The tail of a temp name: ".agentmux-" and 12 hex digits. */
#define SNAP_CC_TEMP_LEN 22
/* A host dir or file being checked: ".NAME.agentmux-aside-" and 12 hex digits. */
#define SNAP_CC_ASIDE_LEN 28

struct snap_cc {
	char *host;           /* the host path */
	char *upper;          /* its copy in the upper dir (NULL for deletions) */
	char *root;           /* the overlaid host dir (or file) it is under */
	char *entry;          /* the session's overlay/<n> it came from */
	char change;          /* A(dded), M(odified), D(eleted) */
	char type;            /* f(ile), l(ink), d(ir) */
};

struct snap_ccs {
	struct snap_cc *v;
	size_t n;
};

/*
 * The mode a file the session made or changed gets on the host: the
 * session's, without set-uid, set-gid or sticky bits. A new file (HOST
 * 0) loses what the user's umask takes off: a jail's 0666 or 0777 is not
 * a mode the user would give. A changed file takes the session's owner
 * bits but never a group or other bit the host file (HOST, its mode) did
 * not have: a 0600 credentials file the agent made 0666 stays 0600, a
 * script it made executable is executable for the user only.
 */
static mode_t
snap_cc_mode(mode_t jail, mode_t host)
{
	if (host == 0)
		return jail & 0777 & ~util_user_umask();
	return (jail & 0700) | (jail & host & 0077);
}

static void
snap_ccs_free(struct snap_ccs *c)
{
	size_t i;

	for (i = 0; i < c->n; i++) {
		free(c->v[i].host);
		free(c->v[i].upper);
		free(c->v[i].root);
		free(c->v[i].entry);
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
	cc->entry = NULL;
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

static void snap_cc_dir_names(DIR *, struct strv *);

/* Sorted names in DIR (so output is stable); caller frees with strv_free. */
static void
snap_cc_names(const char *dir, struct strv *names)
{
	DIR *d;

	strv_init(names);
	if ((d = opendir(dir)) != NULL)
		snap_cc_dir_names(d, names);
}

/* The sorted names in D, which is closed. */
static void
snap_cc_dir_names(DIR *d, struct strv *names)
{
	struct dirent *de;

	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			strv_add(names, de->d_name);
	}
	closedir(d);
	qsort(names->v, names->n, sizeof *names->v, snap_cc_cmp);
}

/* The sorted names in the dir open as DFD (which stays open); -1 if it cannot be read. */
static int
snap_cc_names_at(int dfd, struct strv *names)
{
	DIR *d;
	int fd;

	if ((fd = dup(dfd)) == -1)
		return -1;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return -1;
	}
	strv_init(names);
	snap_cc_dir_names(d, names);
	return 0;
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

/* True if the dir at UPPER (the session's copy) or HOST is one git takes for a repository. */
static bool
snap_cc_repo(const char *upper, const char *host)
{
	int ufd, hfd;
	bool is;

	/* O_PATH: git finds HEAD by name in a dir it can only search. */
	ufd = open(upper, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	hfd = open(host, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	is = snap_plant_repo_at(ufd, hfd);
	if (ufd != -1)
		close(ufd);
	if (hfd != -1)
		close(hfd);
	return is;
}

/*
 * The host path of the git dir CC would put something in, or be: a
 * ".git" (dir, file or link) on its path, or a dir git takes for a
 * repository whatever its name, in the session's copy or on the host.
 * git obeys what its config and hooks name, so none is ever installed.
 * NULL if none; caller frees.
 */
static char *
snap_cc_gitdir(const struct snap_cc *cc)
{
	const char *rel, *slash;
	char *h, *u;
	size_t n, p, uroot;
	bool is;

	if (cc->upper == NULL)
		return NULL;  /* a deletion installs nothing */
	if (strcmp(cc->host, cc->root) == 0)
		return strcmp(strrchr(cc->host, '/') + 1, ".git") == 0 ?
		    xstrdup(cc->host) : NULL;
	rel = cc->host + strlen(cc->root);    /* "/a/b/name" */
	n = strlen(rel);
	if (strlen(cc->upper) < n)
		return NULL;
	uroot = strlen(cc->upper) - n;
	for (p = 0; p <= n; p++) {
		if (p < n && rel[p] != '/')
			continue;
		/* rel[0..p) is a dir on the way (p < n) or the entry itself. */
		for (slash = rel + p; slash > rel && slash[-1] != '/'; slash--)
			;
		is = p > 0 && (size_t)(rel + p - slash) == 4 &&
		    strncmp(slash, ".git", 4) == 0;
		h = xprintf("%s%.*s", cc->root, (int)p, rel);
		if (!is && p < n) {
			u = xstrndup(cc->upper, uroot + p);
			is = snap_cc_repo(u, h);
			free(u);
		}
		if (is)
			return h;
		free(h);
	}
	return NULL;
}

/* Reads the manifest ("N\tdir|file\tHOST" lines) and scans each entry. */
static int
snap_cc_read(int64_t session, struct snap_ccs *c, char **cause)
{
	char *data, *sdir, *p, *line, *save = NULL, *kind, *host, *tab;
	struct buf b;
	size_t first;

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
		first = c->n;
		if (strcmp(kind, "dir") == 0) {
			p = xprintf("%s/overlay/%s/upper", sdir, line);
			snap_cc_scan(c, host, p, host);
		} else {
			p = xprintf("%s/overlay/%s", sdir, line);
			snap_cc_file(c, p, host);
		}
		free(p);
		for (; first < c->n; first++)
			c->v[first].entry = xprintf("%s/overlay/%s", sdir, line);
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

/* The host paths of SESSION's changes applied or discarded already, sorted. */
static void
snap_cc_done_paths(struct store *st, int64_t session, struct strv *done)
{
	struct store_confchange **v;
	size_t n, i;

	strv_init(done);
	v = store_confchange_list(st, session, &n);
	for (i = 0; i < n; i++)
		strv_add(done, v[i]->path);
	store_confchange_list_free(v, n);
	if (done->n > 1)
		qsort(done->v, done->n, sizeof *done->v, snap_cc_cmp);
}

/* The changes not in DONE (sorted) and among PATHS, if given. */
static int
snap_cc_pending_of(int64_t session, char *const *paths,
    const struct strv *done, struct snap_ccs *c, char **cause)
{
	struct snap_ccs all;
	const char *host;
	size_t i;

	memset(c, 0, sizeof *c);
	if (snap_cc_read(session, &all, cause) == -1)
		return -1;
	/* Kept entries move to C (their slot in ALL emptied); the rest is freed. */
	for (i = 0; i < all.n; i++) {
		host = all.v[i].host;
		if (!snap_cc_wanted(&all.v[i], paths) || (done->n > 0 &&
		    bsearch(&host, done->v, done->n, sizeof *done->v,
		    snap_cc_cmp) != NULL))
			continue;
		c->v = xreallocarray(c->v, c->n + 1, sizeof *c->v);
		c->v[c->n++] = all.v[i];
		memset(&all.v[i], 0, sizeof all.v[i]);
	}
	snap_ccs_free(&all);
	return 0;
}

/* The changes not yet applied or discarded (and among PATHS, if given). */
static int
snap_cc_pending(struct store *st, int64_t session, char *const *paths,
    struct snap_ccs *c, char **cause)
{
	struct strv done;
	int rc;

	snap_cc_done_paths(st, session, &done);
	rc = snap_cc_pending_of(session, paths, &done, c, cause);
	strv_free(&done);
	return rc;
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

/* The mode the session gave a new file, and what --apply gives it if that differs. */
static void
snap_cc_show_new_mode(struct snap_cc_out *o, mode_t jail)
{
	mode_t to = snap_cc_mode(jail, 0);

	out_printf(o->out, "new file mode %04o", (unsigned)(jail & 07777));
	if (to != (jail & 07777))
		out_printf(o->out, " (applied as %04o: your umask, never "
		    "set-uid or set-gid)", (unsigned)to);
	out_puts(o->out, "\n");
}

/*
 * A changed file's mode, whatever its size or content (HOST and UPPER,
 * its two versions), and what --apply gives it if that differs: no group
 * or other bit the host file did not have.
 */
static void
snap_cc_show_mode(struct snap_cc_out *o, const char *host, const char *upper)
{
	struct stat sa, sb;
	mode_t from, jail, to;

	if (lstat(host, &sa) == -1 || lstat(upper, &sb) == -1 ||
	    !S_ISREG(sa.st_mode) || !S_ISREG(sb.st_mode))
		return;
	from = sa.st_mode & 07777;
	jail = sb.st_mode & 07777;
	if (from == jail)
		return;
	to = snap_cc_mode(jail, from);
	out_printf(o->out, "mode %04o -> %04o", (unsigned)from, (unsigned)jail);
	if (to != jail)
		out_printf(o->out, " (applied as %04o: no group or other bit "
		    "your file did not have)", (unsigned)to);
	out_puts(o->out, "\n");
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
	if (cc->change == 'A' && strcmp(b, "/dev/null") != 0 &&
	    lstat(b, &sb) == 0)
		snap_cc_show_new_mode(o, sb.st_mode);
	if (cc->change == 'M')
		snap_cc_show_mode(o, a, b);
	if (za > SNAP_CC_MAX_DIFF || zb > SNAP_CC_MAX_DIFF)
		out_printf(o->out, "large file: %lld -> %lld bytes\n",
		    (long long)za, (long long)zb);
	else if ((za > 0 && snap_cc_binary(a)) ||
	    (zb > 0 && snap_cc_binary(b)))
		out_printf(o->out, "binary file: %lld -> %lld bytes\n",
		    (long long)za, (long long)zb);
	else
		snap_cc_unified(o, a, b);
}

/*
 * Whether REL (under the config dir) is a link as applying would leave
 * it: the session's (under UPPER, its upper dir's root) where it has
 * one, else the host's (under ROOT). Every dir before REL was looked at
 * first and is none, so nothing is followed on the way.
 */
static bool
snap_cc_is_link(const char *upper, const char *root, const char *rel)
{
	struct stat st;
	char *p;
	int rc;

	if (upper != NULL) {
		p = xprintf("%s/%s", upper, rel);
		rc = lstat(p, &st);
		free(p);
		/* A char device 0/0 is the overlay's mark of a deletion. */
		if (rc == 0 && !(S_ISCHR(st.st_mode) && st.st_rdev == 0))
			return S_ISLNK(st.st_mode);
	}
	p = xprintf("%s/%s", root, rel);
	rc = lstat(p, &st);
	free(p);
	return rc == 0 && S_ISLNK(st.st_mode);
}

/*
 * True if the link the session made at CC (its target TARGET) points out
 * of the config dir it lies in: an absolute target, a relative one whose
 * ".." climb above CC's root, or one that goes through another link on
 * the way (`b -> .` makes "b/b/../.." climb further than it reads; each
 * dir of the way is looked at as applying would leave it). Installed, it
 * would let what it points to (a host file, a file in the project a
 * later session can write) stand in for a config file.
 */
static bool
snap_cc_link_leaves(const struct snap_cc *cc, const char *target)
{
	const char *rel, *s, *e;
	char *upper = NULL, *way, *slash;
	bool leaves = false;

	if (target[0] == '/' || target[0] == '\0' ||
	    strncmp(cc->host, cc->root, strlen(cc->root)) != 0 ||
	    cc->host[strlen(cc->root)] != '/')
		return true;
	rel = cc->host + strlen(cc->root) + 1;
	if (cc->upper != NULL && strlen(cc->upper) > strlen(rel) + 1 &&
	    strcmp(cc->upper + strlen(cc->upper) - strlen(rel), rel) == 0)
		upper = xstrndup(cc->upper, strlen(cc->upper) - strlen(rel) - 1);
	/* The way so far, from the root: the link's own dir to start. */
	way = xstrdup(rel);
	if ((slash = strrchr(way, '/')) != NULL)
		*slash = '\0';
	else
		way[0] = '\0';
	for (s = target; *s != '\0' && !leaves; s = *e == '\0' ? e : e + 1) {
		e = s + strcspn(s, "/");
		if (e - s == 0 || (e - s == 1 && *s == '.'))
			continue;
		if (e - s == 2 && strncmp(s, "..", 2) == 0) {
			if (way[0] == '\0')
				leaves = true;
			else if ((slash = strrchr(way, '/')) != NULL)
				*slash = '\0';
			else
				way[0] = '\0';
			continue;
		}
		slash = way[0] == '\0' ? xprintf("%.*s", (int)(e - s), s) :
		    xprintf("%s/%.*s", way, (int)(e - s), s);
		free(way);
		way = slash;
		/* The last part may be a link: it is shown, and checked, itself. */
		if (*e != '\0' && snap_cc_is_link(upper, cc->root, way))
			leaves = true;
	}
	free(way);
	free(upper);
	return leaves;
}

/* The link the session made at CC if it points out of its config dir (caller frees), or NULL. */
static char *
snap_cc_link_out(const struct snap_cc *cc)
{
	char t[4096];
	ssize_t n;

	if (cc->upper == NULL ||
	    (n = readlink(cc->upper, t, sizeof t - 1)) < 0)
		return NULL;
	t[n] = '\0';
	return snap_cc_link_leaves(cc, t) ? xstrdup(t) : NULL;
}

static void
snap_cc_show_link(struct snap_cc_out *o, const struct snap_cc *cc)
{
	char t[4096], *line, *q, *out;
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
	if ((out = snap_cc_link_out(cc)) != NULL) {
		q = quote_name(cc->root);
		if (o->color)
			out_color(o->out, "1;31");
		out_printf(o->out, "this link points out of the config dir %s: "
		    "--apply leaves it pending (only --apply --force with its "
		    "path installs it)", q);
		if (o->color)
			out_color(o->out, "");
		out_puts(o->out, "\n");
		free(q);
		free(out);
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

/* A change in a git dir is marked: --apply refuses it. */
static void
snap_cc_show_gitdir(struct snap_cc_out *o, const struct snap_cc *cc)
{
	char *g = snap_cc_gitdir(cc), *q;

	if (g == NULL)
		return;
	q = quote_name(g);
	if (o->color)
		out_color(o->out, "1;31");
	out_printf(o->out, "in a git dir (%s): --apply will not install it; "
	    "git would run the commands its config and hooks name", q);
	if (o->color)
		out_color(o->out, "");
	out_puts(o->out, "\n");
	free(q);
	free(g);
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
		snap_cc_show_gitdir(&o, &c.v[i]);
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
		/* The jail's mode under the user's umask, not agentmux's own. */
		if (made && fd != -1)
			(void)fchmod(fd, mode & ~util_user_umask());
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
	if (strcmp(cc->host, cc->root) == 0) {
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
			mode = stat(up, &sb) == 0 ? sb.st_mode & 0777 &
			    ~util_user_umask() : 0700;
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
 * Copies the upper file or symlink (or SRC, a merge of it, if not NULL) to
 * a temporary name in DIRFD. Its mode comes along as snap_cc_mode says:
 * without the set-uid and set-gid bits (*SETID says if it had one; a
 * jail's root could have made a root shell there), with the user's umask
 * for a new file, no group or other bit the host file lacked for a
 * changed one.
 */
static int
snap_cc_copy_in(int dirfd, const struct snap_cc *cc, const char *src,
    const char *tmp, bool *setid, char **cause)
{
	char target[4096];
	struct stat sb, sh, su;
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
	if (src == NULL)
		src = cc->upper;
	if ((in = open(src, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) == -1 ||
	    fstat(in, &sb) == -1) {
		*cause = xprintf("cannot read %s: %s", src, strerror(errno));
		if (in != -1)
			close(in);
		return -1;
	}
	out = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, 0600);
	/* A merge (SRC) is a file of ours: the mode is the session's. */
	if (src != cc->upper && lstat(cc->upper, &su) == 0 &&
	    S_ISREG(su.st_mode))
		sb.st_mode = su.st_mode;
	*setid = (sb.st_mode & (S_ISUID | S_ISGID)) != 0;
	if (fstatat(dirfd, strrchr(cc->host, '/') + 1, &sh,
	    AT_SYMLINK_NOFOLLOW) == -1 || !S_ISREG(sh.st_mode))
		sh.st_mode = 0;
	if (out != -1 && snap_copy_fd(in, out) == 0 &&
	    fchmod(out, snap_cc_mode(sb.st_mode, sh.st_mode)) == 0 &&
	    fsync(out) == 0)
		rc = 0;
	else
		*cause = xprintf("cannot write %s: %s", cc->host, strerror(errno));
	if (out != -1)
		close(out);
	close(in);
	return rc;
}

/*
 * Puts one change (or SRC, its merge with the host's version, if not NULL)
 * into the host dir: a new file is renamed over the old one. A deletion
 * goes through snap_cc_put_gone or snap_cc_put_dir, checked as it goes.
 */
static int
snap_cc_apply_one(const struct snap_cc *cc, const char *src, bool *setid,
    char **cause)
{
	const char *base;
	unsigned char rnd[6];
	char *tmp = NULL;
	int fd, rc = -1;

	if ((fd = snap_cc_parent(cc, &base, cause)) == -1)
		return -1;
	util_random(rnd, sizeof rnd);
	tmp = xprintf(".%s.agentmux-%02x%02x%02x%02x%02x%02x", base, rnd[0],
	    rnd[1], rnd[2], rnd[3], rnd[4], rnd[5]);
	if (snap_cc_copy_in(fd, cc, src, tmp, setid, cause) == -1)
		goto out;
	/* A dir is never renamed over: snap_cc_put_dir moved it aside. */
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

/* What one apply or discard run is given and counts. */
struct snap_cc_run {
	char *const *paths;
	bool apply;
	bool force;
	bool color;
	FILE *out;
	struct strv gitdirs;      /* refused git dirs, said once each */
	char **secrets;
	size_t nsecrets;
	int done;
	int failed;
	int conflicts;
	int report;               /* >= 0: the session end's child tells the server */
};

/*
 * In the session end's child: one result for the server to record (the
 * store is the server's), as "KIND\0PATH\0ARG\0". R: recorded (ARG: the
 * change's letter, then 's' if a set-id bit was dropped), C: a conflict,
 * F: failed (ARG: why), G: in a git dir, not installed (ARG: the git
 * dir), N: under a name of ours, not installed (ARG: that path), L: a
 * link out of its config dir, not installed (ARG: the path), E: the
 * run failed (ARG: why).
 */
static void
snap_cc_report(struct snap_cc_run *r, char kind, const char *path,
    const char *arg)
{
	struct buf b;

	buf_init(&b);
	buf_addc(&b, kind);
	buf_add(&b, "", 1);
	buf_add(&b, path, strlen(path) + 1);
	buf_add(&b, arg, strlen(arg) + 1);
	(void)util_write_all(r->report, b.data, b.len);
	buf_free(&b);
}

/* Where CC's copy from the session's start is: base/REL, or base-file. */
static char *
snap_cc_orig(const struct snap_cc *cc)
{
	if (strcmp(cc->host, cc->root) == 0)
		return xprintf("%s/base-file", cc->entry);
	return xprintf("%s/base%s", cc->entry, cc->host + strlen(cc->root));
}

/* A regular file, read whole without following a link; -1 if not one or too big. */
static int
snap_cc_slurp(int dirfd, const char *path, struct buf *b)
{
	struct stat sb;
	int fd, rc = -1;

	fd = openat(dirfd, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd == -1)
		return -1;
	if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) &&
	    sb.st_size <= 16 * SNAP_CC_MAX_DIFF)
		rc = buf_read_fd(b, fd);
	close(fd);
	return rc;
}

AM_TESTABLE void (*snap_cc_dir_checked)(const char *);
AM_TESTABLE void (*snap_cc_file_resolved)(const char *);
AM_TESTABLE void (*snap_cc_file_checked)(const char *);

enum snap_cc_how { SNAP_CC_PLAIN, SNAP_CC_MERGED, SNAP_CC_CONFLICT,
    SNAP_CC_ERROR, SNAP_CC_DIR };

static bool
snap_cc_after(const struct stat *sh, const struct stat *mark)
{
	return sh->st_ctim.tv_sec > mark->st_ctim.tv_sec ||
	    (sh->st_ctim.tv_sec == mark->st_ctim.tv_sec &&
	    sh->st_ctim.tv_nsec >= mark->st_ctim.tv_nsec);
}

/* The host changed CC's file since the start too: merge it, three ways. */
static enum snap_cc_how
snap_cc_merge(const struct snap_cc *cc, int pfd, const char *base,
    struct buf *merged, struct strv *conf, char **cause)
{
	struct buf start, ours, theirs;
	char *orig = snap_cc_orig(cc);
	size_t n = strlen(cc->host);
	bool had;
	int rc = SNAP_CC_ERROR;

	buf_init(&start);
	buf_init(&ours);
	buf_init(&theirs);
	had = snap_cc_slurp(AT_FDCWD, orig, &start) == 0;
	if (snap_cc_slurp(pfd, base, &ours) == -1) {
		strv_add(conf, "(it is no longer a regular file on the host)");
		rc = SNAP_CC_CONFLICT;
	} else if (cc->change == 'D') {
		if (!had || start.len != ours.len || (ours.len > 0 &&
		    memcmp(start.data, ours.data, ours.len) != 0))
			strv_add(conf, "(the session deleted it; the host "
			    "changed it)");
		rc = conf->n > 0 ? SNAP_CC_CONFLICT : SNAP_CC_PLAIN;
	} else if (cc->type != 'f' || snap_cc_slurp(AT_FDCWD, cc->upper,
	    &theirs) == -1) {
		strv_add(conf, "(not a regular file in the session)");
		rc = SNAP_CC_CONFLICT;
	} else
		switch (snap_confmerge(had ? &start : NULL, &ours, &theirs,
		    n > 5 && strcmp(cc->host + n - 5, ".json") == 0, cc->entry,
		    merged, conf, cause)) {
		case 0:
			rc = SNAP_CC_MERGED;
			break;
		case 1:
			rc = SNAP_CC_CONFLICT;
			break;
		default:
			break;
		}
	free(orig);
	buf_free(&start);
	buf_free(&ours);
	buf_free(&theirs);
	return rc;
}

/* One reason a dir's removal would lose the host's work, unless enough are listed. */
static void
snap_cc_tree_why(struct strv *conf, const char *rel, const char *why)
{
	char *q;

	if (conf->n > SNAP_CC_MAX_WHY)
		return;
	if (conf->n == SNAP_CC_MAX_WHY) {
		strv_add(conf, "(and more)");
		return;
	}
	q = quote_name(rel);
	strv_addf(conf, "%s: %s", q, why);
	free(q);
}

static void snap_cc_tree(int dfd, int bfd, const char *rel,
    const struct stat *mark, int depth, struct strv *conf);

/* Subdir NAME of DFD (and of the start copy BFD, -1: none) is checked in turn. */
static void
snap_cc_tree_dir(int dfd, int bfd, const char *name, const char *rel,
    const struct stat *mark, int depth, struct strv *conf)
{
	int sub, bsub = -1;

	if (depth >= SNAP_CC_MAX_DEPTH) {
		snap_cc_tree_why(conf, rel, "too deep to check");
		return;
	}
	sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sub == -1) {
		snap_cc_tree_why(conf, rel, "cannot be read to check it");
		return;
	}
	if (bfd != -1)
		bsub = openat(bfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
	snap_cc_tree(sub, bsub, rel, mark, depth + 1, conf);
	if (bsub != -1)
		close(bsub);
	close(sub);
}

/* Entry NAME of DFD, not a dir: unchanged since MARK and in the start copy BFD? */
static void
snap_cc_tree_file(int dfd, int bfd, const char *name, const char *rel,
    const struct stat *sh, const struct stat *mark, struct strv *conf)
{
	struct stat sb;

	if (snap_cc_after(sh, mark))
		snap_cc_tree_why(conf, rel, "changed on the host since the "
		    "session started");
	else if (bfd == -1 || fstatat(bfd, name, &sb,
	    AT_SYMLINK_NOFOLLOW) == -1 || !S_ISREG(sb.st_mode) ||
	    !S_ISREG(sh->st_mode) || sb.st_size != sh->st_size)
		snap_cc_tree_why(conf, rel, "not in the session's start copy, "
		    "so it may be the host's since");
}

/*
 * What under host dir DFD (REL, for the list) removing it would lose:
 * anything changed since MARK or not in the start copy BFD (-1: none),
 * never through a link, into CONF.
 */
static void
snap_cc_tree(int dfd, int bfd, const char *rel, const struct stat *mark,
    int depth, struct strv *conf)
{
	struct strv names;
	struct stat sb;
	char *sub;
	size_t i;
	int fd;
	DIR *d;

	strv_init(&names);
	if ((fd = dup(dfd)) == -1 || (d = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		snap_cc_tree_why(conf, rel, "cannot be read to check it");
		return;
	}
	snap_cc_dir_names(d, &names);
	for (i = 0; i < names.n && conf->n <= SNAP_CC_MAX_WHY; i++) {
		sub = xprintf("%s/%s", rel, names.v[i]);
		if (fstatat(dfd, names.v[i], &sb, AT_SYMLINK_NOFOLLOW) == -1)
			snap_cc_tree_why(conf, sub, "cannot be read to check it");
		else if (S_ISDIR(sb.st_mode))
			snap_cc_tree_dir(dfd, bfd, names.v[i], sub, mark, depth,
			    conf);
		else
			snap_cc_tree_file(dfd, bfd, names.v[i], sub, &sb, mark,
			    conf);
		free(sub);
	}
	strv_free(&names);
}

/*
 * The host dir CC names, moved aside to NAME in PFD, goes (deleted, or a
 * file replaces it) only if nothing under it is the host's since the
 * session's start mark: what would be lost goes in CONF, listed under
 * its own name, BASE. Sessions from before marks were kept: no check.
 */
static void
snap_cc_check_dir(const struct snap_cc *cc, int pfd, const char *name,
    const char *base, struct strv *conf)
{
	struct stat mark;
	char *m, *orig;
	int dfd, bfd, rc;

	if (cc->entry == NULL)
		return;
	m = xprintf("%s/base-time", cc->entry);
	rc = lstat(m, &mark);
	free(m);
	if (rc == -1)
		return;
	orig = snap_cc_orig(cc);
	bfd = open(orig, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	free(orig);
	dfd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (dfd == -1)
		snap_cc_tree_why(conf, base, "cannot be read to check it");
	else
		snap_cc_tree(dfd, bfd, base, &mark, 0, conf);
	if (dfd != -1)
		close(dfd);
	if (bfd != -1)
		close(bfd);
}

/*
 * How CC goes onto the host as it is now: as it is, when the host's file
 * has not changed since the session's start mark (sessions from before
 * marks were kept: always); else merged with the host's changes, or not
 * at all (a conflict, what conflicts in CONF). A host dir it removes
 * or replaces is SNAP_CC_DIR: snap_cc_put_dir checks it as it goes.
 */
static enum snap_cc_how
snap_cc_resolve(const struct snap_cc *cc, struct buf *merged,
    struct strv *conf, char **cause)
{
	struct stat mark, sh;
	const char *base;
	char *m, *orig;
	bool marked = false;
	int pfd, rc;

	if ((pfd = snap_cc_parent(cc, &base, cause)) == -1)
		return SNAP_CC_ERROR;
	if (cc->entry != NULL) {
		m = xprintf("%s/base-time", cc->entry);
		marked = lstat(m, &mark) == 0;
		free(m);
	}
	if (fstatat(pfd, base, &sh, AT_SYMLINK_NOFOLLOW) == -1) {
		/* Gone from the host: was it there at the start? */
		orig = marked ? snap_cc_orig(cc) : NULL;
		rc = orig != NULL && access(orig, F_OK) == 0 ?
		    SNAP_CC_CONFLICT : SNAP_CC_PLAIN;
		if (rc == SNAP_CC_CONFLICT)
			strv_add(conf, "(deleted on the host since the session "
			    "started)");
		free(orig);
	} else if (S_ISDIR(sh.st_mode) && cc->change != 'A')
		rc = SNAP_CC_DIR;
	else if (!marked || !snap_cc_after(&sh, &mark))
		rc = SNAP_CC_PLAIN;
	else
		rc = snap_cc_merge(cc, pfd, base, merged, conf, cause);
	close(pfd);
	return rc;
}

/* Writes MERGED beside the session's copy (its mode) for snap_cc_apply_one. */
static char *
snap_cc_merged_file(const struct snap_cc *cc, const struct buf *merged,
    char **cause)
{
	char *path = xprintf("%s/merged", cc->entry);
	struct stat sb;
	mode_t mode = 0600;

	if (cc->upper != NULL && lstat(cc->upper, &sb) == 0)
		mode = sb.st_mode & 0777;
	if (util_write_file_atomic(path, merged->data != NULL ? merged->data :
	    "", merged->len, mode, cause) == -1) {
		free(path);
		return NULL;
	}
	return path;
}

/* Tells what conflicts in CC's file; nothing is written to it. */
static void
snap_cc_conflict(struct snap_cc_run *r, struct store *st, int64_t session,
    const struct snap_cc *cc, const struct strv *conf)
{
	char *q, *line;
	size_t i;

	if (r->report >= 0) {
		r->conflicts++;
		snap_cc_report(r, 'C', cc->host, "");
		return;
	}
	q = quote_name(cc->host);
	store_event_add(st, session, "warn", "confdiff", "not applied: %s "
	    "changed on the host too, in the same places", q);
	r->conflicts++;
	if (r->out == NULL) {
		free(q);
		return;
	}
	out_printf(r->out, "%-9s %-8s %s: the host changed it too, since the "
	    "session started, in the same places:\n", "conflict",
	    snap_cc_word(cc->change), q);
	for (i = 0; i < conf->n; i++) {
		line = snap_redact_line(conf->v[i], r->secrets, r->nsecrets);
		out_printf(r->out, "          %s\n", line);
		free(line);
	}
	free(q);
}

/* ".BASE.agentmux-aside-" and 12 hex digits: a host dir being checked. */
static char *
snap_cc_aside_name(const char *base)
{
	unsigned char rnd[6];

	util_random(rnd, sizeof rnd);
	return xprintf(".%s.agentmux-aside-%02x%02x%02x%02x%02x%02x", base,
	    rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5]);
}

/*
 * SESSION's journal of the host dirs and files its runs moved aside, one name a
 * line: the sweep puts back only those (a dir of such a name that is not
 * in it may be one the agent made, applied from its config copy).
 */
static char *
snap_cc_asides_path(int64_t session, char **cause)
{
	char *data, *p;

	if ((data = path_data_dir(cause)) == NULL)
		return NULL;
	p = xprintf("%s/sessions/%lld/asides", data, (long long)session);
	free(data);
	return p;
}

/* Adds NAME to SESSION's journal of asides: before the rename, so a run killed after it is undone. */
static int
snap_cc_aside_journal(int64_t session, const char *name, char **cause)
{
	char *p, *line;
	ssize_t n = -1;
	int fd, rc = 0;

	if ((p = snap_cc_asides_path(session, cause)) == NULL)
		return -1;
	line = xprintf("%s\n", name);
	fd = open(p, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
	    0600);
	if (fd != -1)
		n = write(fd, line, strlen(line));
	if (n != (ssize_t)strlen(line)) {
		*cause = xprintf("cannot write %s: %s", p, n == -1 ?
		    strerror(errno) : "short write");
		rc = -1;
	}
	if (fd != -1)
		close(fd);
	free(line);
	free(p);
	return rc;
}

/* Removes dir NAME in PFD and all under it, never through a link. */
static int
snap_cc_rmtree(int pfd, const char *name, int depth)
{
	struct strv names;
	struct stat sb;
	size_t i;
	int fd, dfd, rc = 0;
	DIR *d;

	if (depth > SNAP_CC_MAX_DEPTH) {
		errno = ELOOP;
		return -1;
	}
	fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1 || (dfd = dup(fd)) == -1 || (d = fdopendir(dfd)) == NULL) {
		if (fd != -1)
			close(fd);
		return -1;
	}
	strv_init(&names);
	snap_cc_dir_names(d, &names);
	for (i = 0; rc == 0 && i < names.n; i++) {
		if (fstatat(fd, names.v[i], &sb, AT_SYMLINK_NOFOLLOW) == -1)
			rc = errno == ENOENT ? 0 : -1;
		else if (S_ISDIR(sb.st_mode))
			rc = snap_cc_rmtree(fd, names.v[i], depth + 1);
		else
			rc = unlinkat(fd, names.v[i], 0);
	}
	strv_free(&names);
	close(fd);
	return rc == 0 ? unlinkat(pfd, name, AT_REMOVEDIR) : -1;
}

/* Puts the dir at NAME in PFD back at BASE; where it stays, if it cannot. */
static char *
snap_cc_put_back(int pfd, const char *name, const char *base,
    const struct snap_cc *cc)
{
	char *dirn, *where;

	if (renameat2(pfd, name, pfd, base, RENAME_NOREPLACE) == 0)
		return NULL;
	dirn = xstrndup(cc->host, strlen(cc->host) - strlen(base));
	where = xprintf("%s%s", dirn, name);
	free(dirn);
	return where;
}

/*
 * What was moved aside (NAME, in the dir PFD, from BASE) is a conflict
 * (CONF): it goes back, or CONF says where it stays, and is recorded.
 */
static void
snap_cc_back_conflict(struct snap_cc_run *r, struct store *st,
    int64_t session, const struct snap_cc *cc, int pfd, const char *name,
    const char *base, struct strv *conf)
{
	char *left;

	if ((left = snap_cc_put_back(pfd, name, base, cc)) != NULL)
		strv_addf(conf, "(it was made again on the host meanwhile; the "
		    "old one is kept at %s)", left);
	free(left);
	snap_cc_conflict(r, st, session, cc, conf);
}

/*
 * The host dir CC names goes (deleted, or a file replaces it). It is
 * first renamed aside, to a name of ours in the same dir (no replacing),
 * so that what is checked is what is removed: a host write to its path
 * after that makes a new one, which stays. If anything under it is the
 * host's since the start (and no --force), it goes back: a conflict.
 * 1 on a conflict, -1 with *CAUSE.
 */
static int
snap_cc_put_dir(struct snap_cc_run *r, struct store *st, int64_t session,
    const struct snap_cc *cc, bool *setid, char **cause)
{
	const char *base;
	char *name, *left = NULL, *m;
	struct strv conf;
	int pfd, rc = -1;

	if ((pfd = snap_cc_parent(cc, &base, cause)) == -1)
		return -1;
	name = snap_cc_aside_name(base);
	strv_init(&conf);
	if (snap_cc_aside_journal(session, name, cause) == -1)
		goto out;
	if (renameat2(pfd, base, pfd, name, RENAME_NOREPLACE) == -1) {
		*cause = xprintf("cannot move %s aside to check it: %s",
		    cc->host, strerror(errno));
		goto out;
	}
	if (!r->force)
		snap_cc_check_dir(cc, pfd, name, base, &conf);
	if (conf.n > 0) {
		snap_cc_back_conflict(r, st, session, cc, pfd, name, base,
		    &conf);
		rc = 1;
		goto out;
	}
	if (snap_cc_dir_checked != NULL)
		snap_cc_dir_checked(cc->host);
	if (cc->change == 'M' && snap_cc_apply_one(cc, NULL, setid,
	    cause) == -1) {
		left = snap_cc_put_back(pfd, name, base, cc);
		goto out;
	}
	if ((rc = snap_cc_rmtree(pfd, name, 0)) == -1) {
		*cause = xprintf("cannot remove all of %s: %s", cc->host,
		    strerror(errno));
		left = snap_cc_put_back(pfd, name, base, cc);
	}
out:
	if (left != NULL && rc == -1) {
		m = xprintf("%s; what is left of the host's dir is at %s",
		    *cause, left);
		free(*cause);
		*cause = m;
	}
	fsync(pfd);
	close(pfd);
	free(left);
	free(name);
	strv_free(&conf);
	return rc;
}

/*
 * Whether the host file NAME in PFD, which CC deleted, may go: unchanged
 * since the session's start mark, or the same as the start copy. Its
 * mtime is what tells: it has been renamed aside, which changed its ctime.
 * Sessions from before marks were kept: no check. Why not, into CONF.
 */
static void
snap_cc_check_file(const struct snap_cc *cc, int pfd, const char *name,
    struct strv *conf)
{
	struct stat mark, sh;
	struct buf start, ours;
	char *m, *orig;
	int rc;

	if (fstatat(pfd, name, &sh, AT_SYMLINK_NOFOLLOW) == -1) {
		strv_addf(conf, "(cannot be read to check it: %s)",
		    strerror(errno));
		return;
	}
	if (S_ISDIR(sh.st_mode)) {
		strv_add(conf, "(a directory made on the host since)");
		return;
	}
	if (cc->entry == NULL)
		return;
	m = xprintf("%s/base-time", cc->entry);
	rc = lstat(m, &mark);
	free(m);
	if (rc == -1 || sh.st_mtim.tv_sec < mark.st_ctim.tv_sec ||
	    (sh.st_mtim.tv_sec == mark.st_ctim.tv_sec &&
	    sh.st_mtim.tv_nsec < mark.st_ctim.tv_nsec))
		return;
	buf_init(&start);
	buf_init(&ours);
	orig = snap_cc_orig(cc);
	if (snap_cc_slurp(AT_FDCWD, orig, &start) == -1 ||
	    snap_cc_slurp(pfd, name, &ours) == -1 || start.len != ours.len ||
	    (ours.len > 0 && memcmp(start.data, ours.data, ours.len) != 0))
		strv_add(conf, "(the session deleted it; the host changed it)");
	free(orig);
	buf_free(&start);
	buf_free(&ours);
}

/*
 * The host file or link CC names goes (the session deleted it). As a dir
 * is (snap_cc_put_dir), it is first renamed aside in its own dir (no
 * replacing), so that what is checked is what is removed: a host write
 * to its path after that makes a new file, which stays; one before it is
 * seen by the check. On a conflict (and no --force) it goes back.
 * 1 on a conflict, -1 with *CAUSE.
 */
static int
snap_cc_put_gone(struct snap_cc_run *r, struct store *st, int64_t session,
    const struct snap_cc *cc, char **cause)
{
	const char *base;
	char *name, *left = NULL;
	struct strv conf;
	int pfd, err, rc = -1;

	if ((pfd = snap_cc_parent(cc, &base, cause)) == -1)
		return -1;
	if (snap_cc_file_resolved != NULL)
		snap_cc_file_resolved(cc->host);
	name = snap_cc_aside_name(base);
	strv_init(&conf);
	if (snap_cc_aside_journal(session, name, cause) == -1)
		goto out;
	if (renameat2(pfd, base, pfd, name, RENAME_NOREPLACE) == -1) {
		if ((rc = errno == ENOENT ? 0 : -1) == -1)
			*cause = xprintf("cannot move %s aside to check it: "
			    "%s", cc->host, strerror(errno));
		goto out;
	}
	if (!r->force)
		snap_cc_check_file(cc, pfd, name, &conf);
	if (conf.n > 0) {
		snap_cc_back_conflict(r, st, session, cc, pfd, name, base,
		    &conf);
		rc = 1;
		goto out;
	}
	if (snap_cc_file_checked != NULL)
		snap_cc_file_checked(cc->host);
	if (unlinkat(pfd, name, 0) == -1) {
		err = errno;
		left = snap_cc_put_back(pfd, name, base, cc);
		*cause = xprintf("cannot remove %s: %s%s%s", cc->host,
		    strerror(err), left != NULL ? "; it is at " : "",
		    left != NULL ? left : "");
		goto out;
	}
	rc = 0;
out:
	fsync(pfd);
	close(pfd);
	free(left);
	free(name);
	strv_free(&conf);
	return rc;
}

/* Applies CC (merged with the host's changes if need be); 1 on a conflict. */
static int
snap_cc_put(struct snap_cc_run *r, struct store *st, int64_t session,
    const struct snap_cc *cc, bool *setid, char **cause)
{
	struct strv conf;
	struct buf merged;
	char *src = NULL;
	int how, rc = -1;

	strv_init(&conf);
	buf_init(&merged);
	how = snap_cc_resolve(cc, &merged, &conf, cause);
	if (how == SNAP_CC_CONFLICT && r->force)
		how = SNAP_CC_PLAIN;
	if (how == SNAP_CC_CONFLICT) {
		snap_cc_conflict(r, st, session, cc, &conf);
		rc = 1;
	} else if (how == SNAP_CC_MERGED)
		src = snap_cc_merged_file(cc, &merged, cause);
	if (how == SNAP_CC_DIR)
		rc = snap_cc_put_dir(r, st, session, cc, setid, cause);
	if (how == SNAP_CC_PLAIN && cc->change == 'D')
		rc = snap_cc_put_gone(r, st, session, cc, cause);
	else if ((how == SNAP_CC_MERGED && src != NULL) ||
	    how == SNAP_CC_PLAIN)
		rc = snap_cc_apply_one(cc, src, setid, cause);
	if (src != NULL)
		unlink(src);
	free(src);
	buf_free(&merged);
	strv_free(&conf);
	return rc;
}

static void
snap_cc_failed(struct snap_cc_run *r, struct store *st, int64_t session,
    const struct snap_cc *cc, char *err)
{
	char *q;

	if (r->report >= 0) {
		snap_cc_report(r, 'F', cc->host, err);
		free(err);
		r->failed++;
		return;
	}
	if (r->out != NULL)
		out_printf(r->out, "not applied: %s\n", err);
	q = quote_name(cc->host);
	store_event_add(st, session, "warn", "confdiff", "cannot apply %s: %s",
	    q, err);
	free(q);
	free(err);
	r->failed++;
}

/* Records CC as applied or discarded, and says so. */
static int
snap_cc_record(struct snap_cc_run *r, struct store *st, int64_t session,
    const struct snap_cc *cc, bool setid, char **cause)
{
	struct store_confchange rec;
	char *q, arg[3] = { cc->change, setid ? 's' : '\0', '\0' };

	if (r->report >= 0) {
		snap_cc_report(r, 'R', cc->host, arg);
		r->done++;
		return 0;
	}
	memset(&rec, 0, sizeof rec);
	rec.session_id = session;
	rec.path = cc->host;
	rec.change = (char *)snap_cc_word(cc->change);
	rec.action = (char *)(r->apply ? "applied" : "discarded");
	if (store_confchange_add(st, &rec, cause) == -1)
		return -1;
	if (r->out != NULL) {
		q = quote_name(rec.path);
		out_printf(r->out, "%-9s %-8s %s\n", rec.action, rec.change, q);
		free(q);
	}
	if (setid)
		snap_cc_setid(st, session, rec.path, r->out);
	r->done++;
	return 0;
}

/*
 * Temp names of ours in a host dir: ".NAME.agentmux-" and 12 lowercase
 * hex digits (snap_cc_apply_one's), nothing else.
 */
static bool
snap_cc_temp_name(const char *name)
{
	size_t n = strlen(name), i;
	const char *p;

	if (name[0] != '.' || n < 2 + SNAP_CC_TEMP_LEN)
		return false;
	p = name + n - SNAP_CC_TEMP_LEN;
	if (strncmp(p, ".agentmux-", 10) != 0)
		return false;
	for (i = 10; i < SNAP_CC_TEMP_LEN; i++) {
		if (p[i] == '\0' || strchr("0123456789abcdef", p[i]) == NULL)
			return false;
	}
	return true;
}

/* NAME if ASIDE is ".NAME.agentmux-aside-" and 12 hex digits, else NULL. */
static char *
snap_cc_aside_of(const char *aside)
{
	size_t n = strlen(aside);
	char *t;

	if (n < 2 + SNAP_CC_ASIDE_LEN || aside[0] != '.' ||
	    strncmp(aside + n - SNAP_CC_ASIDE_LEN, ".agentmux-aside-", 16) != 0)
		return NULL;
	/* The same 12 digits as a temp name's, behind ".agentmux-". */
	t = xprintf(".x.agentmux-%s", aside + n - 12);
	if (!snap_cc_temp_name(t)) {
		free(t);
		return NULL;
	}
	free(t);
	return xstrndup(aside + 1, n - 1 - SNAP_CC_ASIDE_LEN);
}

static bool
snap_cc_before(const struct stat *sb, const struct timespec *t)
{
	return sb->st_ctim.tv_sec < t->tv_sec || (sb->st_ctim.tv_sec ==
	    t->tv_sec && sb->st_ctim.tv_nsec < t->tv_nsec);
}

/*
 * Removes the temps a killed run left in host dir DFD (a SIGKILL at the
 * session end's timeout, or of the server, lands between a temp's making
 * and its rename). Safe because only what a run of ours can have made
 * goes: our exact temp name, a regular file or a symlink (unlinkat never
 * follows one: the link goes, never what it names), owned by us, and
 * changed before this run began (START). A run of another session on the
 * same dir renames its temp within the moment it makes it; one removed
 * under it fails that file's apply, which stays pending, and loses
 * nothing of the user's. A host dir or file a killed run had moved aside
 * to check (.NAME.agentmux-aside-<hex>, see snap_cc_put_dir and
 * snap_cc_put_gone) is the user's: it goes back to NAME if that is free,
 * and is never removed here; but only one whose name the session's
 * journal (ASIDES) has: one so named that a run did not make is left
 * where it is.
 */
static void
snap_cc_sweep(int dfd, const struct timespec *start,
    const struct strv *asides)
{
	struct strv names;
	struct stat sb;
	char *orig;
	size_t i;

	if (snap_cc_names_at(dfd, &names) == -1)
		return;
	for (i = 0; i < names.n; i++) {
		if (!snap_cc_temp_name(names.v[i]) || fstatat(dfd, names.v[i],
		    &sb, AT_SYMLINK_NOFOLLOW) == -1)
			continue;
		if ((S_ISREG(sb.st_mode) || S_ISLNK(sb.st_mode)) &&
		    sb.st_uid == geteuid() && snap_cc_before(&sb, start))
			(void)unlinkat(dfd, names.v[i], 0);
	}
	for (i = 0; i < names.n; i++) {
		if (!strv_contains(asides, names.v[i]) ||
		    (orig = snap_cc_aside_of(names.v[i])) == NULL)
			continue;
		if (fstatat(dfd, names.v[i], &sb, AT_SYMLINK_NOFOLLOW) == 0 &&
		    (S_ISDIR(sb.st_mode) || S_ISREG(sb.st_mode) ||
		    S_ISLNK(sb.st_mode)) && sb.st_uid == geteuid() &&
		    snap_cc_before(&sb, start))
			(void)renameat2(dfd, names.v[i], dfd, orig,
			    RENAME_NOREPLACE);
		free(orig);
	}
	strv_free(&names);
}

/* Sweeps host dir HFD and, under it, each dir the upper dir UFD has too. */
static void
snap_cc_sweep_tree(int hfd, int ufd, const struct timespec *start,
    const struct strv *asides, int depth)
{
	struct strv names;
	struct stat sb;
	size_t i;
	int h, u;

	snap_cc_sweep(hfd, start, asides);
	if (depth >= SNAP_CC_MAX_DEPTH || snap_cc_names_at(ufd, &names) == -1)
		return;
	for (i = 0; i < names.n; i++) {
		if (fstatat(ufd, names.v[i], &sb, AT_SYMLINK_NOFOLLOW) == -1 ||
		    !S_ISDIR(sb.st_mode))
			continue;
		u = openat(ufd, names.v[i], O_RDONLY | O_DIRECTORY |
		    O_NOFOLLOW | O_CLOEXEC);
		h = openat(hfd, names.v[i], O_RDONLY | O_DIRECTORY |
		    O_NOFOLLOW | O_CLOEXEC);
		if (u != -1 && h != -1)
			snap_cc_sweep_tree(h, u, start, asides, depth + 1);
		if (u != -1)
			close(u);
		if (h != -1)
			close(h);
	}
	strv_free(&names);
}

/* Adds to OUT the names in SESSION's journal of asides (none if it has none). */
static void
snap_cc_asides(int64_t session, struct strv *out)
{
	char *p, *line, *save = NULL, *cause = NULL;
	struct buf b;

	if ((p = snap_cc_asides_path(session, &cause)) == NULL) {
		free(cause);
		return;
	}
	buf_init(&b);
	if (buf_read_file(&b, p) == 0 && b.data != NULL) {
		for (line = strtok_r(b.data, "\n", &save); line != NULL;
		    line = strtok_r(NULL, "\n", &save))
			strv_add(out, line);
	}
	buf_free(&b);
	free(p);
}

/*
 * Before a run applies or discards: every host dir a dir entry's changes
 * can be in (those its upper dir has) is swept, so that a dir a killed
 * run left aside is back before the changes are looked for (else its
 * deletion would look done, and the user's dir stay hidden).
 */
static void
snap_cc_sweep_all(int64_t session)
{
	char *data, *sdir, *p, *line, *save = NULL, *tab, *host, *cause = NULL;
	struct timespec start;
	struct strv asides;
	struct buf b;
	int hfd, ufd;

	if ((data = path_data_dir(&cause)) == NULL) {
		free(cause);
		return;
	}
	clock_gettime(CLOCK_REALTIME, &start);
	strv_init(&asides);
	snap_cc_asides(session, &asides);
	sdir = xprintf("%s/sessions/%lld", data, (long long)session);
	free(data);
	p = xprintf("%s/overlays", sdir);
	buf_init(&b);
	if (buf_read_file(&b, p) == 0 && b.data != NULL) {
		for (line = strtok_r(b.data, "\n", &save); line != NULL;
		    line = strtok_r(NULL, "\n", &save)) {
			if ((tab = strchr(line, '\t')) == NULL ||
			    strncmp(tab + 1, "dir\t", 4) != 0)
				continue;
			*tab = '\0';
			host = tab + 5;
			free(p);
			p = xprintf("%s/overlay/%s/upper", sdir, line);
			/* The configured dir, opened as snap_cc_parent does. */
			hfd = open(host, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			ufd = open(p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
			    O_CLOEXEC);
			if (hfd != -1 && ufd != -1)
				snap_cc_sweep_tree(hfd, ufd, &start, &asides,
				    0);
			if (hfd != -1)
				close(hfd);
			if (ufd != -1)
				close(ufd);
		}
	}
	buf_free(&b);
	strv_free(&asides);
	free(p);
	free(sdir);
}

/* The host dirs a run has swept, each once. */
struct snap_cc_swept {
	struct timespec start;
	struct strv asides;       /* the session's journal of asides */
	dev_t *dev;
	ino_t *ino;
	size_t n;
};

/* Sweeps the host dir CC is in, if it is there (nothing is made for it). */
static void
snap_cc_sweep_for(struct snap_cc_swept *sw, const struct snap_cc *cc)
{
	struct snap_cc find = *cc;
	const char *base;
	char *cause = NULL;
	struct stat sb;
	size_t i;
	int fd;

	find.upper = NULL;
	if ((fd = snap_cc_parent(&find, &base, &cause)) == -1) {
		free(cause);
		return;
	}
	for (i = 0; fstat(fd, &sb) == 0 && i < sw->n; i++) {
		if (sw->dev[i] == sb.st_dev && sw->ino[i] == sb.st_ino)
			break;
	}
	if (i == sw->n && fstat(fd, &sb) == 0) {
		sw->dev = xreallocarray(sw->dev, sw->n + 1, sizeof *sw->dev);
		sw->ino = xreallocarray(sw->ino, sw->n + 1, sizeof *sw->ino);
		sw->dev[sw->n] = sb.st_dev;
		sw->ino[sw->n++] = sb.st_ino;
		snap_cc_sweep(fd, &sw->start, &sw->asides);
	}
	close(fd);
}

/*
 * The host path of the first dir on CC's way, or CC itself, whose name is
 * one agentmux keeps for its own temps and asides (snap_cc_temp_name,
 * snap_cc_aside_of), or NULL. Caller frees.
 */
static char *
snap_cc_reserved(const struct snap_cc *cc)
{
	const char *rel, *s, *e;
	char *comp, *orig;
	bool ours;

	if (cc->upper == NULL || strcmp(cc->host, cc->root) == 0)
		return NULL;  /* a deletion installs nothing; the root is the user's */
	rel = cc->host + strlen(cc->root);
	for (s = rel + 1; *s != '\0'; s = *e == '\0' ? e : e + 1) {
		e = s + strcspn(s, "/");
		comp = xstrndup(s, (size_t)(e - s));
		orig = snap_cc_aside_of(comp);
		ours = snap_cc_temp_name(comp) || orig != NULL;
		free(orig);
		free(comp);
		if (ours)
			return xstrndup(cc->host, (size_t)(e - cc->host));
	}
	return NULL;
}

/*
 * CC lies in G, a git dir (snap_cc_gitdir; KIND 'G') or a name of ours
 * (snap_cc_reserved; 'N'), or is G, a link out of its config dir
 * (snap_cc_link_out; 'L', unless --force): not installed, said in red
 * once per G, pending.
 */
static void
snap_cc_refuse(struct snap_cc_run *r, struct store *st, int64_t session,
    const struct snap_cc *cc, char kind, const char *g)
{
	char *qg = quote_name(g), *msg;

	r->failed++;
	if (kind == 'L')
		msg = xprintf("%s is a link the session made that points out "
		    "of its config dir: installed, what it points to (a host "
		    "file, or one in a project a later session can write) "
		    "would stand in for a config file, so agentmux leaves it "
		    "pending; 'agentmux confdiff %lld --discard %s' drops it, "
		    "'agentmux confdiff %lld --apply --force %s' installs it "
		    "if you trust where it points", qg, (long long)session, qg,
		    (long long)session, qg);
	else if (kind == 'N')
		msg = xprintf("%s has a name agentmux gives its own temps and "
		    "the host dirs it sets aside while applying, so it "
		    "installs nothing there (a later run could take it for "
		    "one of its own and move it into place); 'agentmux "
		    "confdiff %lld --discard %s' drops it", qg,
		    (long long)session, qg);
	else
		msg = xprintf("%s is a git dir the session made or changed in "
		    "a config dir: git would run the commands its config and "
		    "hooks name, so agentmux installs nothing in it; "
		    "'agentmux confdiff %lld --discard %s' drops it", qg,
		    (long long)session, qg);
	if (r->report >= 0)
		snap_cc_report(r, kind, cc->host, g);
	else if (!strv_contains(&r->gitdirs, g)) {
		strv_add(&r->gitdirs, g);
		store_event_add(st, session, "error", "tampering", "%s", msg);
		store_session_flag(st, session, "tampering");
		if (r->out != NULL && r->color)
			out_color(r->out, "1;31");
		if (r->out != NULL)
			out_printf(r->out, "not applied: %s", msg);
		if (r->out != NULL && r->color)
			out_color(r->out, "");
		if (r->out != NULL)
			out_puts(r->out, "\n");
	}
	free(msg);
	free(qg);
}

/* Applies or discards the changes C (the store is ST, or the server's: R reports). */
static int
snap_cc_do_list(struct store *st, int64_t session, struct snap_cc_run *r,
    struct snap_ccs *c, char **cause)
{
	char *err = NULL, *g;
	struct snap_cc_swept sw;
	size_t i;
	int rc = 0;
	bool setid;

	memset(&sw, 0, sizeof sw);
	clock_gettime(CLOCK_REALTIME, &sw.start);
	strv_init(&sw.asides);
	snap_cc_asides(session, &sw.asides);
	for (i = 0; rc == 0 && i < c->n; i++) {
		setid = false;
		snap_cc_sweep_for(&sw, &c->v[i]);
		if (r->apply && (g = snap_cc_reserved(&c->v[i])) != NULL) {
			snap_cc_refuse(r, st, session, &c->v[i], 'N', g);
			free(g);
			continue;
		}
		if (r->apply && (g = snap_cc_gitdir(&c->v[i])) != NULL) {
			snap_cc_refuse(r, st, session, &c->v[i], 'G', g);
			free(g);
			continue;
		}
		/* Forced only where the command names paths: never a blanket --force. */
		if (r->apply && !(r->force && r->paths != NULL &&
		    r->paths[0] != NULL) &&
		    (g = snap_cc_link_out(&c->v[i])) != NULL) {
			free(g);
			snap_cc_refuse(r, st, session, &c->v[i], 'L',
			    c->v[i].host);
			continue;
		}
		if (r->apply && (rc = snap_cc_put(r, st, session, &c->v[i],
		    &setid, &err)) != 0) {
			if (rc == -1)
				snap_cc_failed(r, st, session, &c->v[i], err);
			err = NULL;
			rc = 0;
			continue;
		}
		rc = snap_cc_record(r, st, session, &c->v[i], setid, cause);
	}
	free(sw.dev);
	free(sw.ino);
	strv_free(&sw.asides);
	return rc;
}

static int
snap_cc_do(struct store *st, int64_t session, struct snap_cc_run *r,
    char **cause)
{
	struct snap_ccs c;
	int rc;

	snap_cc_sweep_all(session);
	if (snap_cc_pending(st, session, r->paths, &c, cause) == -1)
		return -1;
	rc = snap_cc_do_list(st, session, r, &c, cause);
	snap_ccs_free(&c);
	return rc;
}

/* "N applied, M conflicts" when not all went in; -1 with *CAUSE then. */
static int
snap_cc_summary(struct snap_cc_run *r, int64_t session, char **cause)
{
	if (r->conflicts == 0 && r->failed == 0)
		return r->done;
	if (r->out != NULL)
		out_printf(r->out, "%d applied, %d conflict%s%s\n", r->done,
		    r->conflicts, r->conflicts == 1 ? "" : "s", r->failed > 0 ?
		    ", some failed" : "");
	if (r->failed > 0)
		*cause = xprintf("%d change%s could not be applied (see above); "
		    "they stay pending", r->failed, r->failed == 1 ? "" : "s");
	else
		*cause = xprintf("%d change%s conflict%s with the host and "
		    "stay%s pending: edit the host file and then 'agentmux "
		    "confdiff %lld --discard PATH', or take the session's "
		    "version with --apply --force PATH", r->conflicts,
		    r->conflicts == 1 ? "" : "s", r->conflicts == 1 ? "s" : "",
		    r->conflicts == 1 ? "s" : "", (long long)session);
	return -1;
}

/*
 * Takes the session's config lock (its dir's confdiff.lock, never a
 * link), without waiting: one applier at a time, the session's end or a
 * command. The descriptor holds it; -1 with *CAUSE if another has it.
 */
static int
snap_cc_lock(int64_t session, char **cause)
{
	char *data, *path;
	int fd;

	if ((data = path_data_dir(cause)) == NULL)
		return -1;
	path = xprintf("%s/sessions/%lld/confdiff.lock", data,
	    (long long)session);
	free(data);
	fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd == -1 && errno == ENOENT) {
		free(path);
		return -2;  /* no session dir: nothing was kept to apply */
	}
	if (fd == -1) {
		*cause = xprintf("cannot open %s: %s", path, strerror(errno));
		free(path);
		return -1;
	}
	free(path);
	if (flock(fd, LOCK_EX | LOCK_NB) == -1) {
		*cause = xprintf("session %lld's config changes are being "
		    "applied already (at its end, as config_persist says, or "
		    "by another command); look again in a moment with "
		    "'agentmux confdiff %lld'", (long long)session,
		    (long long)session);
		close(fd);
		return -1;
	}
	return fd;
}

int
snap_confdiff_apply(struct store *st, int64_t session,
    const struct snap_confdiff_opts *opts, bool apply, char **cause)
{
	struct snap_cc_run r;
	int rc, lock;

	if (snap_check_ended(st, session, NULL, "its config overlays are in "
	    "use, so apply or discard once it ends", cause) == -1)
		return -1;
	if ((lock = snap_cc_lock(session, cause)) == -1)
		return -1;
	memset(&r, 0, sizeof r);
	r.report = -1;
	r.paths = opts->paths;
	r.apply = apply;
	r.force = opts->force;
	r.out = opts->out;
	r.color = opts->color;
	r.secrets = snap_redact_secrets(opts->cf, &r.nsecrets);
	rc = snap_cc_do(st, session, &r, cause);
	if (rc == 0)
		rc = snap_cc_summary(&r, session, cause);
	snap_cc_secrets_free(r.secrets, r.nsecrets);
	strv_free(&r.gitdirs);
	if (lock >= 0)
		close(lock);
	return rc;
}

/* What a session end's run did, recorded and summed up. */
static int
snap_cc_ended(struct store *st, int64_t session, int persist,
    struct snap_cc_run *r, char **cause)
{
	int n;

	if ((n = r->done) > 0)
		store_event_add(st, session, "info", "confdiff", "%d config "
		    "change%s %s at session end (config_persist = %s)", n,
		    n == 1 ? "" : "s", persist == CONFIG_PERSIST_ALWAYS ?
		    "applied" : "discarded", persist == CONFIG_PERSIST_ALWAYS ?
		    "always" : "never");
	return snap_cc_summary(r, session, cause);
}

int
snap_confdiff_session_end(struct store *st, const struct config *cf,
    int64_t session, int persist, char **cause)
{
	struct snap_cc_run r;
	int rc;

	memset(&r, 0, sizeof r);
	r.report = -1;
	switch (persist) {
	case CONFIG_PERSIST_ALWAYS:
		r.apply = true;
		break;
	case CONFIG_PERSIST_NEVER:
		break;
	default:
		return 0;
	}
	if (snap_cc_do(st, session, &r, cause) == -1) {
		strv_free(&r.gitdirs);
		return -1;
	}
	rc = snap_cc_ended(st, session, persist, &r, cause);
	strv_free(&r.gitdirs);
	return rc;
}

/*
 * The session end's run, off the server's loop: a child process reads
 * the jail-written copies, merges (jansson, git merge-file) and writes
 * the host files, and reports each result through a pipe; the server
 * records them in its store as they come. The child gets no store of its
 * own: an SQLite connection must not cross a fork.
 */

/* How long the child may take; what it has not reported by then stays pending. */
#define SNAP_CC_END_TIMEOUT 120

struct snap_confdiff_end {
	struct event_base *base;
	struct store *st;
	int64_t session;
	int persist;
	int fd;                     /* the child's reports */
	int pidfd;
	pid_t pid;                  /* not reaped before the pipe closes */
	struct event *ev;
	struct event *timer;
	bool timed_out;
	bool finished;              /* the child said it was through ('Z') */
	int lock;                   /* the session's config lock, held meanwhile */
	struct buf in;              /* what came and is not replayed yet */
	struct snap_cc_run r;
	char *error;                /* the child's run failed: why */
	snap_confdiff_end_cb done;
	void *arg;
};

static int snap_cc_nends;

int
snap_confdiff_endings(void)
{
	return snap_cc_nends;
}

/* Closes every fd from 3 up but A and B (A <= B). */
static void
snap_cc_close_but(int a, int b)
{
	if (a > 3)
		syscall(SYS_close_range, 3U, (unsigned)a - 1, 0U);
	if (b > a + 1)
		syscall(SYS_close_range, (unsigned)a + 1, (unsigned)b - 1, 0U);
	syscall(SYS_close_range, (unsigned)b + 1, ~0U, 0U);
}

/*
 * The child, after fork: no fd of the server's stays open in it (a pty
 * or pipe it held would hide an end from the server) but its report pipe
 * FD and the session's config lock LOCK, which it holds as long as it
 * writes (a server killed meanwhile lets go of its own copy only); no
 * handler of the server's runs in it, and it ends with _exit.
 */
static void __attribute__((noreturn))
snap_cc_end_child(int64_t session, const struct strv *done, bool apply,
    int fd, int lock)
{
	struct snap_cc_run r;
	struct snap_ccs c;
	char *cause = NULL;
	int sig;

	clone_gate_open();
	log_forked();
	for (sig = 1; sig < NSIG; sig++) {
		if (sig != SIGKILL && sig != SIGSTOP)
			signal(sig, sig == SIGPIPE ? SIG_IGN : SIG_DFL);
	}
	if (lock < 0)  /* no session dir, so no lock (-2) */
		snap_cc_close_but(fd, fd);
	else
		snap_cc_close_but(fd < lock ? fd : lock, fd < lock ? lock : fd);
	memset(&r, 0, sizeof r);
	r.apply = apply;
	r.report = fd;
	snap_cc_sweep_all(session);
	if (snap_cc_pending_of(session, NULL, done, &c, &cause) == -1 ||
	    snap_cc_do_list(NULL, session, &r, &c, &cause) == -1)
		snap_cc_report(&r, 'E', "", cause != NULL ? cause : "failed");
	/* Through: an end of the pipe without this is a child that died. */
	snap_cc_report(&r, 'Z', "", "");
	_exit(0);
}

/* Records one result of the child's (KIND, PATH, ARG) in the server's store. */
static void
snap_cc_end_replay(struct snap_confdiff_end *e, char kind, const char *path,
    const char *arg)
{
	struct snap_cc cc;
	struct strv none;
	char *cause = NULL;

	memset(&cc, 0, sizeof cc);
	cc.host = (char *)path;
	cc.change = arg[0] != '\0' ? arg[0] : 'M';
	switch (kind) {
	case 'R':
		if (snap_cc_record(&e->r, e->st, e->session, &cc, arg[0] !=
		    '\0' && arg[1] == 's', &cause) == -1) {
			log_warnx("confdiff: %s", cause);
			free(cause);
		}
		break;
	case 'C':
		strv_init(&none);
		snap_cc_conflict(&e->r, e->st, e->session, &cc, &none);
		strv_free(&none);
		break;
	case 'F':
		snap_cc_failed(&e->r, e->st, e->session, &cc, xstrdup(arg));
		break;
	case 'G':
	case 'L':
	case 'N':
		snap_cc_refuse(&e->r, e->st, e->session, &cc, kind, arg);
		break;
	case 'Z':
		e->finished = true;
		break;
	default:
		free(e->error);
		e->error = xstrdup(arg);
		break;
	}
}

/* Replays the complete reports in E->in; a partial one waits for the rest. */
static void
snap_cc_end_parse(struct snap_confdiff_end *e)
{
	const char *p = e->in.data, *end = p + e->in.len, *path, *arg;
	size_t used = 0;

	while (p < end) {
		if ((path = memchr(p, '\0', (size_t)(end - p))) == NULL ||
		    ++path >= end || (arg = memchr(path, '\0',
		    (size_t)(end - path))) == NULL || ++arg >= end ||
		    memchr(arg, '\0', (size_t)(end - arg)) == NULL)
			break;
		snap_cc_end_replay(e, *p, path, arg);
		p = arg + strlen(arg) + 1;
		used = (size_t)(p - e->in.data);
	}
	if (used > 0) {
		memmove(e->in.data, e->in.data + used, e->in.len - used);
		e->in.len -= used;
	}
}

static void
snap_cc_end_free(struct snap_confdiff_end *e)
{
	if (e->ev != NULL)
		event_free(e->ev);
	if (e->timer != NULL)
		event_free(e->timer);
	if (e->fd != -1)
		close(e->fd);
	if (e->pidfd != -1)
		proc_reap_pidfd(e->base, e->pidfd, 0);
	else if (e->pid > 0 && waitpid(e->pid, NULL, WNOHANG) == 0) {
		/* No pidfd to wait on: killed, and reaped now (it has no more to do). */
		kill(e->pid, SIGKILL);
		waitpid(e->pid, NULL, 0);
	}
	if (e->lock >= 0)
		close(e->lock);
	buf_free(&e->in);
	strv_free(&e->r.gitdirs);
	free(e->error);
	free(e);
	snap_cc_nends--;
}

/* The child is over (its pipe closed): the summary, and DONE is told. */
static void
snap_cc_end_over(struct snap_confdiff_end *e)
{
	char *cause = NULL;
	int n;

	if (e->timed_out) {
		cause = xprintf("applying took over %d s and was stopped; what "
		    "was not applied stays pending: 'agentmux confdiff %lld' "
		    "shows it", SNAP_CC_END_TIMEOUT, (long long)e->session);
		n = -1;
	} else if (e->error != NULL) {
		cause = xstrdup(e->error);
		n = -1;
	} else if (!e->finished) {
		cause = xprintf("the process applying them ended before it was "
		    "through; what it did not apply stays pending: 'agentmux "
		    "confdiff %lld' shows it", (long long)e->session);
		n = -1;
	} else
		n = snap_cc_ended(e->st, e->session, e->persist, &e->r, &cause);
	if (e->done != NULL)
		e->done(e->arg, n, cause);
	free(cause);
	snap_cc_end_free(e);
}

static void
snap_cc_end_read(evutil_socket_t fd, short what, void *arg)
{
	struct snap_confdiff_end *e = arg;
	char data[8192];
	ssize_t n;

	while ((n = read(fd, data, sizeof data)) > 0) {
		buf_add(&e->in, data, (size_t)n);
		snap_cc_end_parse(e);
	}
	if (n == 0 || (errno != EAGAIN && errno != EINTR))
		snap_cc_end_over(e);
}

static void
snap_cc_end_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct snap_confdiff_end *e = arg;

	e->timed_out = true;
	if (e->pidfd == -1 ||
	    syscall(SYS_pidfd_send_signal, e->pidfd, SIGKILL, NULL, 0) == -1)
		kill(e->pid, SIGKILL);
}

/* Forks the child, between the clone gate's close and open (see core-thread.c). */
static int
snap_cc_end_fork(struct snap_confdiff_end *e, const struct strv *done,
    char **cause)
{
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) == -1) {
		*cause = xprintf("cannot create a pipe to apply them: %s; they "
		    "stay pending: 'agentmux confdiff %lld' shows them",
		    strerror(errno), (long long)e->session);
		return -1;
	}
	clone_gate_close();
	if ((pid = fork()) == 0) {
		close(p[0]);
		snap_cc_end_child(e->session, done, e->r.apply, p[1], e->lock);
	}
	clone_gate_open();
	close(p[1]);
	if (pid == -1) {
		*cause = xprintf("cannot fork to apply them: %s; they stay "
		    "pending: 'agentmux confdiff %lld' shows them",
		    strerror(errno), (long long)e->session);
		close(p[0]);
		return -1;
	}
	e->fd = p[0];
	e->pid = pid;
	e->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (e->pidfd != -1)
		util_set_cloexec(e->pidfd);
	util_set_nonblock(e->fd);
	return 0;
}

struct snap_confdiff_end *
snap_confdiff_end_start(struct event_base *base, struct store *st,
    int64_t session, int persist, snap_confdiff_end_cb done, void *arg,
    char **cause)
{
	struct timeval tv = { SNAP_CC_END_TIMEOUT, 0 };
	struct snap_confdiff_end *e = xcalloc(1, sizeof *e);
	struct strv paths;
	int rc;

	e->base = base;
	e->st = st;
	e->session = session;
	e->persist = persist;
	e->fd = e->pidfd = e->lock = -1;
	e->done = done;
	e->arg = arg;
	e->r.apply = persist == CONFIG_PERSIST_ALWAYS;
	e->r.report = -1;
	buf_init(&e->in);
	snap_cc_nends++;
	if ((e->lock = snap_cc_lock(session, cause)) == -1) {
		e->done = NULL;
		snap_cc_end_free(e);
		return NULL;
	}
	snap_cc_done_paths(st, session, &paths);
	rc = snap_cc_end_fork(e, &paths, cause);
	strv_free(&paths);
	if (rc == -1) {
		e->done = NULL;
		snap_cc_end_free(e);
		return NULL;
	}
	e->ev = event_new(base, e->fd, EV_READ | EV_PERSIST, snap_cc_end_read, e);
	e->timer = evtimer_new(base, snap_cc_end_timeout, e);
	if (e->ev == NULL || e->timer == NULL || event_add(e->ev, NULL) == -1 ||
	    evtimer_add(e->timer, &tv) == -1)
		fatalx("cannot watch the config apply's child");
	return e;
}

void
snap_confdiff_end_detach(struct snap_confdiff_end *e)
{
	if (e != NULL)
		e->done = NULL;
}
