/*
 * Diffs between snapshots, or a snapshot and the working tree as it is
 * now: git's diff of the trees, then the real modes that changed where
 * git, which keeps 644 and 755 only, sees nothing.
 */
#include <sys/stat.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "snap/snap-int.h"

/* One side of a diff: its tree and real modes. */
struct snap_diff_side {
	char *tree;
	struct snap_modes modes;
	struct strv unreadable;   /* the work tree's paths agentmux cannot read */
};

static void
snap_diff_side_free(struct snap_diff_side *d)
{
	free(d->tree);
	snap_modes_free(&d->modes);
	strv_free(&d->unreadable);
}

/* The modes recorded in COMMIT (unknown for a snapshot that predates them). */
static void
snap_diff_commit_modes(struct snap_repo *r, const char *commit,
    struct snap_modes *m)
{
	const char *args[] = { "cat-file", "commit", commit, NULL };
	struct buf out;
	char *cause = NULL;

	buf_init(&out);
	if (snap_git(r, SNAP_ENV_DB, args, NULL, &out, &cause) == 0)
		snap_modes_from_commit(m, out.data, out.len);
	else {
		log_debug("%s", cause);
		free(cause);
		snap_modes_init(m);
	}
	buf_free(&out);
}

/* The side SPEC names: a snapshot, or (worktree, now) the tree as it is. */
static int
snap_diff_side(struct store *st, struct snap_repo *r, int64_t session,
    const char *spec, struct snap_diff_side *d, char **cause)
{
	struct store_snapshot *s;
	struct snap_take_opts o;
	struct snap_result res;
	size_t i;

	snap_modes_init(&d->modes);
	strv_init(&d->unreadable);
	if ((strcmp(spec, "worktree") == 0 || strcmp(spec, "now") == 0) &&
	    r->worktree_gone) {
		*cause = xprintf("the project dir %s of session %lld is gone "
		    "(a discarded worktree): there is no '%s' to diff; name "
		    "snapshots ('agentmux snapshots %lld'), e.g. --to last",
		    r->worktree, (long long)session, spec, (long long)session);
		return -1;
	}
	if (strcmp(spec, "worktree") == 0 || strcmp(spec, "now") == 0) {
		memset(&o, 0, sizeof o);
		o.session = session;
		if (snap_take_sync(st, r, &o, &res, cause) == -1)
			return -1;
		d->tree = res.tree;
		res.tree = NULL;
		snap_modes_parse(&d->modes, res.modes, strlen(res.modes));
		for (i = 0; i < res.nunreadable; i++)
			strv_add(&d->unreadable, res.unreadable[i]);
		snap_result_clear(&res);
		return 0;
	}
	if ((s = snap_resolve(st, session, spec, NULL, cause)) == NULL)
		return -1;
	d->tree = xstrdup(s->tree);
	snap_diff_commit_modes(r, s->commit, &d->modes);
	store_snapshot_free(s);
	return 0;
}

/* A tree's entries: path and mode, sorted by path. */
struct snap_diff_entry {
	char *path;
	unsigned mode;
};

struct snap_diff_entries {
	struct snap_diff_entry *v;
	size_t n;
};

static int
snap_diff_entry_cmp(const void *a, const void *b)
{
	const struct snap_diff_entry *x = a, *y = b;

	return strcmp(x->path, y->path);
}

static void
snap_diff_entries_free(struct snap_diff_entries *e)
{
	size_t i;

	for (i = 0; i < e->n; i++)
		free(e->v[i].path);
	free(e->v);
	memset(e, 0, sizeof *e);
}

/* Entries of TREE: all of them, or those named in M's and N's lists. */
static int
snap_diff_entries(struct snap_repo *r, const char *tree, bool all,
    const struct snap_modes *m, const struct snap_modes *n,
    struct snap_diff_entries *e, char **cause)
{
	const char *p, *end, *tab;
	struct strv args;
	struct buf out;
	unsigned mode;
	size_t i;
	int rc;

	strv_init(&args);
	strv_add(&args, "ls-tree");
	strv_add(&args, "-z");
	strv_add(&args, "--full-tree");
	/* -t: a dir is listed even where git goes into it for a path below. */
	strv_add(&args, "-t");
	if (all)
		strv_add(&args, "-r");
	strv_add(&args, tree);
	if (!all) {
		strv_add(&args, "--");
		for (i = 0; i < m->n; i++)
			strv_add(&args, m->v[i].path);
		for (i = 0; i < n->n; i++)
			strv_add(&args, n->v[i].path);
		for (i = 0; i < m->en; i++)
			strv_add(&args, m->e[i].path);
		for (i = 0; i < n->en; i++)
			strv_add(&args, n->e[i].path);
	}
	buf_init(&out);
	rc = snap_git(r, SNAP_ENV_DB, (const char *const *)args.v, NULL, &out,
	    cause);
	for (p = out.data, end = p + out.len; rc == 0 && p != NULL && p < end;
	    p += strlen(p) + 1) {
		if ((tab = strchr(p, '\t')) == NULL || sscanf(p, "%o", &mode) != 1)
			continue;
		e->v = xreallocarray(e->v, e->n + 1, sizeof *e->v);
		e->v[e->n].path = xstrdup(tab + 1);
		e->v[e->n].mode = mode;
		e->n++;
	}
	if (e->n > 1)
		qsort(e->v, e->n, sizeof *e->v, snap_diff_entry_cmp);
	buf_free(&out);
	strv_free(&args);
	return rc;
}

/* Whether PATH is under one of the (relative) paths the command line named; all when none. */
static bool
snap_diff_named(const struct strv *rel, const char *path)
{
	size_t i, n;

	if (rel->n == 0 || rel->v == NULL)
		return true;
	for (i = 0; i < rel->n; i++) {
		n = strlen(rel->v[i]);
		if (strcmp(rel->v[i], ".") == 0 || (strncmp(path, rel->v[i],
		    n) == 0 && (path[n] == '\0' || path[n] == '/')))
			return true;
	}
	return false;
}

static bool
snap_diff_named_cb(const char *path, void *arg)
{
	return snap_diff_named(arg, path);
}

/*
 * Paths of the work tree agentmux could not read (another owner's): said
 * first, as the diff holds what they were when last read, not now.
 */
static int
snap_diff_unreadable(const struct snap_diff_side *b, int fd, char **cause)
{
	struct buf text;
	size_t i;
	char *q;
	int rc = 0;

	if (b->unreadable.n == 0)
		return 0;
	buf_init(&text);
	buf_printf(&text, "agentmux cannot read %zu path%s of the project (not "
	    "yours: ask their owner or run chown), so this diff does not show "
	    "what %s now:", b->unreadable.n, b->unreadable.n == 1 ? "" : "s",
	    b->unreadable.n == 1 ? "it holds" : "they hold");
	for (i = 0; i < b->unreadable.n && i < 5; i++) {
		q = quote_name(b->unreadable.v[i]);
		buf_printf(&text, " %s", q);
		free(q);
	}
	buf_printf(&text, "%s\n", b->unreadable.n > 5 ? " ..." : "");
	if (util_write_all(fd, text.data, text.len) == -1) {
		*cause = xstrdup("cannot write the diff");
		rc = -1;
	}
	buf_free(&text);
	return rc;
}

/*
 * Files of this diff that another session sharing the tree changed while
 * this one ran: said first, as the diff cannot tell whose a change is.
 */
static int
snap_diff_marks(struct store *st, struct snap_repo *r, int64_t session,
    const struct snap_diff_side *a, const struct snap_diff_side *b,
    struct strv *rel, int fd, char **cause)
{
	struct buf marks, text;
	int rc = 0;

	buf_init(&marks);
	buf_init(&text);
	snap_overlap_marks(st, r, session, a->tree, b->tree,
	    snap_diff_named_cb, rel, &marks);
	if (marks.len > 0) {
		buf_printf(&text, "Another session shared this tree while "
		    "session %lld ran; the diff holds its changes to these "
		    "files too:\n", (long long)session);
		buf_add(&text, marks.data, marks.len);
		buf_addc(&text, '\n');
		if (util_write_all(fd, text.data, text.len) == -1) {
			*cause = xstrdup("cannot write the diff");
			rc = -1;
		}
	}
	buf_free(&marks);
	buf_free(&text);
	return rc;
}

/*
 * git's diff, as it comes, with the real modes where git names its own
 * 100644 or 100755 (new file mode, deleted file mode, old mode, new
 * mode, the index line): a file made 0666 shows as 100666.
 */
struct snap_diff_filter {
	const struct snap_diff_side *a;
	const struct snap_diff_side *b;
	int fd;
	bool failed;              /* writing to FD failed */
	struct buf carry;         /* a line not yet whole */
	char *path;               /* the block's file (if a and b name one) */
};

/* The one path of "a/P b/P" (each quoted or not, as git quotes it); NULL if they differ. */
static char *
snap_diff_header_path(const char *rest, size_t len)
{
	size_t half = (len - 1) / 2;
	bool q = rest[0] == '"';
	char *a, *b;
	bool same;

	if (len < 7 || len % 2 == 0 || rest[half] != ' ' ||
	    (q && rest[half + 1] != '"'))
		return NULL;
	if (strncmp(rest + q, "a/", 2) != 0 ||
	    strncmp(rest + half + 1 + q, "b/", 2) != 0)
		return NULL;
	same = memcmp(rest + q + 2, rest + half + 1 + q + 2, half - q - 2) == 0;
	if (!same)
		return NULL;
	if (!q)
		return xstrndup(rest + 2, half - 2);
	/* "\"a/P\"": P quoted as snap_modes_unquote reads it. */
	a = xprintf("\"%.*s", (int)(half - 3), rest + 3);
	b = snap_modes_unquote(a, strlen(a));
	free(a);
	return b;
}

/* Writes the real mode of the file of the block on SIDE over git's digits at D. */
static void
snap_diff_real_mode(struct snap_diff_filter *f,
    const struct snap_diff_side *side, char *d)
{
	unsigned git;
	mode_t real;
	char six[16];

	if (f->path == NULL || !side->modes.known ||
	    sscanf(d, "%6o", &git) != 1 || (git != 0100644 && git != 0100755))
		return;
	real = snap_modes_of(&side->modes, f->path, (git & 0111) != 0);
	snprintf(six, sizeof six, "%06o", 0100000 | (unsigned)real);
	memcpy(d, six, 6);
}

/* The text of a line without the colour git wraps it in. */
static char *
snap_diff_uncolored(char *line, size_t *len)
{
	char *m;

	if (*len > 2 && line[0] == '\033' && line[1] == '[' &&
	    (m = memchr(line, 'm', *len)) != NULL) {
		*len -= (size_t)(m + 1 - line);
		line = m + 1;
	}
	if (*len >= 3 && memcmp(line + *len - 3, "\033[m", 3) == 0)
		*len -= 3;
	return line;
}

static void
snap_diff_filter_line(struct snap_diff_filter *f, char *line, size_t len)
{
	size_t n = len;
	char *t = snap_diff_uncolored(line, &n);

	if (n > 11 && strncmp(t, "diff --git ", 11) == 0) {
		free(f->path);
		f->path = snap_diff_header_path(t + 11, n - 11);
	} else if (n == 20 && strncmp(t, "new file mode ", 14) == 0)
		snap_diff_real_mode(f, f->b, t + 14);
	else if (n == 24 && strncmp(t, "deleted file mode ", 18) == 0)
		snap_diff_real_mode(f, f->a, t + 18);
	else if (n == 15 && strncmp(t, "old mode ", 9) == 0)
		snap_diff_real_mode(f, f->a, t + 9);
	else if (n == 15 && strncmp(t, "new mode ", 9) == 0)
		snap_diff_real_mode(f, f->b, t + 9);
	else if (n > 13 && strncmp(t, "index ", 6) == 0 && t[n - 7] == ' ')
		snap_diff_real_mode(f, f->b, t + n - 6);
	if (!f->failed && util_write_all(f->fd, line, len + 1) == -1)
		f->failed = true;
}

static void
snap_diff_filter_chunk(void *arg, const char *data, size_t len)
{
	struct snap_diff_filter *f = arg;
	char *nl, *p;
	size_t off = 0;

	buf_add(&f->carry, data, len);
	for (p = f->carry.data; (nl = memchr(p, '\n', f->carry.len - off)) !=
	    NULL; p = nl + 1) {
		snap_diff_filter_line(f, p, (size_t)(nl - p));
		off = (size_t)(nl + 1 - f->carry.data);
	}
	memmove(f->carry.data, f->carry.data + off, f->carry.len - off);
	f->carry.len -= off;
	f->carry.data[f->carry.len] = '\0';
}

/* git's diff ARGS to FD through the filter. */
static int
snap_diff_git(struct snap_repo *r, const struct snap_diff_side *a,
    const struct snap_diff_side *b, const char *const *args, int fd,
    char **cause)
{
	struct snap_diff_filter f;
	int rc;

	memset(&f, 0, sizeof f);
	f.a = a;
	f.b = b;
	f.fd = fd;
	buf_init(&f.carry);
	rc = snap_git_chunks(r, SNAP_ENV_SHOW, args, snap_diff_filter_chunk, &f,
	    cause);
	/* Output that does not end in a newline: as it is. */
	if (!f.failed && f.carry.len > 0 && util_write_all(fd, f.carry.data,
	    f.carry.len) == -1)
		f.failed = true;
	if (rc == 0 && f.failed) {
		*cause = xstrdup("cannot write the diff");
		rc = -1;
	}
	free(f.path);
	buf_free(&f.carry);
	return rc;
}

/*
 * PATH's real mode, MA on one side and MB on the other (FMT its type
 * bits): git's own way of saying it, or a --stat line. A dir only one
 * side has (NEW) says the mode it was made with.
 */
static void
snap_diff_mode_line(struct buf *text, const char *path, unsigned fmt,
    mode_t ma, mode_t mb, bool new, bool stat)
{
	if (new && fmt == 0) {
		/* A dir with no file beneath, gone (git shows no dir). */
		if (stat) {
			snap_quote_path(text, " ", path);
			buf_printf(text, " | dir removed, mode %03o\n",
			    (unsigned)ma);
			return;
		}
		buf_adds(text, "diff --git ");
		snap_quote_path(text, "a/", path);
		buf_addc(text, ' ');
		snap_quote_path(text, "b/", path);
		buf_printf(text, "\ndeleted dir mode %06o\n", 040000 |
		    (unsigned)ma);
		return;
	}
	if (stat) {
		snap_quote_path(text, " ", path);
		if (new)
			buf_printf(text, " | new, mode %03o\n", (unsigned)mb);
		else
			buf_printf(text, " | mode %03o => %03o\n", (unsigned)ma,
			    (unsigned)mb);
		return;
	}
	buf_adds(text, "diff --git ");
	snap_quote_path(text, "a/", path);
	buf_addc(text, ' ');
	snap_quote_path(text, "b/", path);
	if (new)
		buf_printf(text, "\nnew dir mode %06o\n", fmt | (unsigned)mb);
	else
		buf_printf(text, "\nold mode %06o\nnew mode %06o\n",
		    fmt | (unsigned)ma, fmt | (unsigned)mb);
}

/* Whether PATH is a dir in the tree listed by E. */
static bool
snap_diff_tree_dir(const struct snap_diff_entries *e, const char *path)
{
	struct snap_diff_entry key, *found;

	if (e->n == 0)
		return false;
	memset(&key, 0, sizeof key);
	key.path = (char *)path;
	found = bsearch(&key, e->v, e->n, sizeof *e->v, snap_diff_entry_cmp);
	return found != NULL && S_ISDIR(found->mode);
}

/*
 * The dirs with no file beneath (which no tree holds): made (any mode),
 * removed, or with a new mode.
 */
static void
snap_diff_dir_lines(const struct snap_diff_side *a,
    const struct snap_diff_side *b, const struct snap_diff_entries *ea,
    const struct snap_diff_entries *eb, const struct strv *rel, bool stat,
    struct buf *text)
{
	const struct snap_mode *d;
	mode_t ma, mb;
	size_t i;

	for (i = 0; i < b->modes.en; i++) {
		d = &b->modes.e[i];
		if (!snap_diff_named(rel, d->path))
			continue;
		mb = d->mode;
		if (!snap_dirs_has(&a->modes, d->path) &&
		    !snap_diff_tree_dir(ea, d->path)) {
			snap_diff_mode_line(text, d->path, 040000, 0, mb, true,
			    stat);
			continue;
		}
		ma = snap_modes_of(&a->modes, d->path, true);
		if (ma != mb)
			snap_diff_mode_line(text, d->path, 040000, ma, mb,
			    false, stat);
	}
	for (i = 0; i < a->modes.en; i++) {
		d = &a->modes.e[i];
		if (!snap_diff_named(rel, d->path) ||
		    snap_dirs_has(&b->modes, d->path) ||
		    snap_diff_tree_dir(eb, d->path))
			continue;
		snap_diff_mode_line(text, d->path, 0, d->mode, 0, true, stat);
	}
}

/*
 * A change of real mode alone, for every file and dir on both sides and
 * the project's own dir; a new dir whose mode is not the umask's (git
 * shows no dir): git's own way of saying it, or a --stat line.
 */
static void
snap_diff_mode_lines(const struct snap_diff_side *a,
    const struct snap_diff_side *b, const struct snap_diff_entries *ea,
    const struct snap_diff_entries *eb, const struct strv *rel, bool stat,
    struct buf *text)
{
	const struct snap_diff_entry *x, *y;
	size_t i;
	mode_t ma, mb;
	bool exec;

	ma = snap_modes_of(&a->modes, ".", true);
	mb = snap_modes_of(&b->modes, ".", true);
	if (ma != mb && snap_diff_named(rel, "."))
		snap_diff_mode_line(text, ".", 040000, ma, mb, false, stat);
	for (i = 0; i < eb->n; i++) {
		y = &eb->v[i];
		x = ea->n == 0 ? NULL : bsearch(y, ea->v, ea->n, sizeof *ea->v,
		    snap_diff_entry_cmp);
		if (!snap_diff_named(rel, y->path))
			continue;
		mb = snap_modes_of(&b->modes, y->path, true);
		if (x == NULL && S_ISDIR(y->mode) &&
		    mb != snap_modes_canonical(b->modes.umask, true)) {
			snap_diff_mode_line(text, y->path, 040000, 0, mb, true,
			    stat);
			continue;
		}
		if (x == NULL || x->mode != y->mode ||
		    (!S_ISREG(x->mode) && !S_ISDIR(x->mode)))
			continue;
		exec = S_ISDIR(x->mode) || (x->mode & 0111) != 0;
		ma = snap_modes_of(&a->modes, x->path, exec);
		mb = snap_modes_of(&b->modes, x->path, exec);
		if (ma != mb)
			snap_diff_mode_line(text, x->path, x->mode & 0170000, ma,
			    mb, false, stat);
	}
	snap_diff_dir_lines(a, b, ea, eb, rel, stat, text);
}

/* What git's diff cannot show: modes changed while content and x bit stayed. */
static int
snap_diff_modes(struct snap_repo *r, const struct snap_diff_side *a,
    const struct snap_diff_side *b, const struct strv *rel, bool stat,
    int fd, char **cause)
{
	struct snap_diff_entries ea, eb;
	struct buf text;
	bool all;
	int rc = -1;

	if (!a->modes.known || !b->modes.known)
		return 0;
	all = a->modes.umask != b->modes.umask;
	if (!all && a->modes.n == 0 && b->modes.n == 0 &&
	    a->modes.en == 0 && b->modes.en == 0)
		return 0;
	memset(&ea, 0, sizeof ea);
	memset(&eb, 0, sizeof eb);
	buf_init(&text);
	if (snap_diff_entries(r, a->tree, all, &a->modes, &b->modes, &ea,
	    cause) == 0 && snap_diff_entries(r, b->tree, all, &a->modes,
	    &b->modes, &eb, cause) == 0) {
		snap_diff_mode_lines(a, b, &ea, &eb, rel, stat, &text);
		rc = text.len == 0 || util_write_all(fd, text.data, text.len) ==
		    0 ? 0 : -1;
		if (rc == -1)
			*cause = xstrdup("cannot write the diff");
	}
	buf_free(&text);
	snap_diff_entries_free(&ea);
	snap_diff_entries_free(&eb);
	return rc;
}

/*
 * The "to" side: as asked, else the tree as it is now; a project dir
 * that is gone (discard removed the worktree) has no now: git runs in the
 * own repository and the default is the last snapshot (said in O->GONE).
 */
static const char *
snap_diff_to(struct snap_repo *r, const struct snap_diff_opts *o)
{
	struct stat sb;

	if (lstat(r->worktree, &sb) == -1 && errno == ENOENT)
		snap_repo_worktree_gone(r);
	if (o->to != NULL)
		return o->to;
	if (!r->worktree_gone)
		return "worktree";
	if (o->gone != NULL)
		*o->gone = true;
	return "last";
}

int
snap_diff(struct store *st, const struct config *cf, int64_t session,
    const struct snap_diff_opts *o, char **cause)
{
	struct snap_diff_side from, to;
	struct snap_repo *r;
	struct strv args, rel;
	char *path, *const *p;
	const char *to_spec;
	int rc = -1;

	memset(&from, 0, sizeof from);
	memset(&to, 0, sizeof to);
	strv_init(&args);
	strv_init(&rel);
	if ((r = snap_session_repo(st, cf, session, "diff", cause)) == NULL)
		return -1;
	to_spec = snap_diff_to(r, o);
	for (p = o->paths; p != NULL && *p != NULL; p++) {
		if ((path = snap_relpath(r->worktree, *p, cause)) == NULL)
			goto out;
		strv_take(&rel, *path == '\0' ? (free(path), xstrdup(".")) :
		    path);
	}
	if (snap_diff_side(st, r, session, o->from != NULL ? o->from :
	    "start", &from, cause) == -1 || snap_diff_side(st, r, session,
	    to_spec, &to, cause) == -1)
		goto out;
	if (o->alert != NULL)
		*o->alert = snap_dirs_too_long_text(&to.modes);
	/*
	 * The own repository keeps names as they are (quotePath off) for the
	 * terminal's view, which quotes them itself; a patch for a pipe has
	 * git quote every byte past ASCII, so that a C1 control in a name
	 * (raw 0x9b, or U+009B) reaches no terminal the pipe ends in.
	 */
	if (o->quote_names) {
		strv_add(&args, "-c");
		strv_add(&args, "core.quotePath=true");
	}
	strv_add(&args, "diff");
	strv_add(&args, "--no-ext-diff");
	strv_add(&args, "--no-textconv");
	strv_add(&args, "-M");
	strv_add(&args, o->color ? "--color=always" : "--color=never");
	if (o->stat)
		strv_add(&args, "--stat");
	strv_add(&args, from.tree);
	strv_add(&args, to.tree);
	strv_add(&args, "--");
	for (p = rel.v; p != NULL && *p != NULL; p++)
		strv_add(&args, *p);
	if (snap_diff_unreadable(&to, o->out_fd, cause) == 0 &&
	    snap_diff_marks(st, r, session, &from, &to, &rel, o->out_fd,
	    cause) == 0 && snap_diff_git(r, &from, &to,
	    (const char *const *)args.v, o->out_fd, cause) == 0)
		rc = snap_diff_modes(r, &from, &to, &rel, o->stat, o->out_fd,
		    cause);
out:
	snap_diff_side_free(&from);
	snap_diff_side_free(&to);
	strv_free(&args);
	strv_free(&rel);
	snap_repo_free(r);
	return rc;
}
