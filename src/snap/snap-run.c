/*
 * Ignored files the user runs: a venv's bin dir (activate, python), its
 * site-packages' start-up code (*.pth, sitecustomize.py), node_modules/.bin,
 * a tox env's bin dir, at any depth (a monorepo's web/node_modules/.bin).
 * Ignored, so no snapshot holds them; a session could rewrite them with no
 * trace. A cheap fingerprint of each (lstat only: size, mtime, ctime,
 * inode, mode, a link's target, the file a link inside the project names,
 * reached without following a link) is taken at the start and compared
 * at the end.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "snap/snap-int.h"

/* The most files fingerprinted; past it the rest go unwatched, and that is said. */
#define SNAP_RUN_MAX 10000
/* The most changed files told one by one; the rest are counted. */
#define SNAP_RUN_TELL 20
/* Entries searched between two moments the clone gate is let go (a gated look), as the plant scan does. */
#define SNAP_RUN_GATE_EVERY 64

/*
 * The run dirs, relative to any dir of the project (a glob per
 * component); [jail] watch_ignored adds more, relative to the top.
 */
static const char *const snap_run_dirs[] = {
	".venv/bin", "venv/bin", "env/bin", ".tox/*/bin", "node_modules/.bin",
};

/* Where python runs the import lines of every *.pth at each start; only those files are watched there. */
static const char *const snap_run_sites[] = {
	".venv/lib/python3*/site-packages", "venv/lib/python3*/site-packages",
	"env/lib/python3*/site-packages", ".tox/*/lib/python3*/site-packages",
};

/* What python runs in a site-packages dir. */
static const char *const snap_run_site_code[] = {
	"*.pth", "sitecustomize.py", "usercustomize.py", NULL,
};

/*
 * Dirs the search for run dirs does not go into: git's, and the run dirs'
 * own trees (a dependency's node_modules/.bin is not on the user's PATH).
 */
static const char *const snap_run_skip[] = {
	".git", "node_modules", ".venv", "venv", ".tox",
};

void
snap_run_init(struct snap_run *r)
{
	strv_init(&r->dirs);
	strv_init(&r->files);
	r->capped = false;
	r->cut = false;
	r->taken = false;
}

/* Empty again without allocating (strv_add makes a freed list anew). */
void
snap_run_free(struct snap_run *r)
{
	strv_free(&r->dirs);
	strv_free(&r->files);
	r->capped = false;
	r->cut = false;
	r->taken = false;
}

/* FNV-1a of S: a link's target in a fingerprint, whatever bytes it holds. */
static unsigned long long
snap_run_hash(const char *s, size_t n)
{
	unsigned long long h = 14695981039346656037ULL;
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ULL;
	}
	return h;
}

/* Appends to B the fingerprint of ST: ctime too, which the jail cannot set back as it can mtime. */
static void
snap_run_stat(struct buf *b, const struct stat *st)
{
	buf_printf(b, "%lld.%lld.%lld.%lld.%lld.%llu.%o",
	    (long long)st->st_size, (long long)st->st_mtim.tv_sec,
	    (long long)st->st_mtim.tv_nsec, (long long)st->st_ctim.tv_sec,
	    (long long)st->st_ctim.tv_nsec, (unsigned long long)st->st_ino,
	    (unsigned)st->st_mode);
}

/*
 * DIR/TARGET made lexically into a path in the project (NULL if it climbs
 * out or is absolute): opened with path_open_beneath, a link on the way
 * fails the open, so the lexical reading is the only one that counts.
 */
static char *
snap_run_inside(const char *dir, const char *target)
{
	struct strv parts;
	struct buf b;
	char *copy, *p, *save = NULL;
	size_t i;

	if (target[0] == '/')
		return NULL;
	strv_init(&parts);
	copy = xprintf("%s/%s", dir, target);
	for (p = strtok_r(copy, "/", &save); p != NULL;
	    p = strtok_r(NULL, "/", &save)) {
		if (strcmp(p, ".") == 0)
			continue;
		if (strcmp(p, "..") != 0)
			strv_add(&parts, p);
		else if (parts.n > 0)
			free(parts.v[--parts.n]);
		else {
			strv_free(&parts);
			free(copy);
			return NULL;
		}
	}
	free(copy);
	buf_init(&b);
	for (i = 0; i < parts.n; i++)
		buf_printf(&b, "%s%s", i > 0 ? "/" : "", parts.v[i]);
	strv_free(&parts);
	return buf_steal(&b);
}

/* Appends to B what a link NAME in DIR (DIRFD) leads to: its target and the file it names in the project. */
static void
snap_run_link(struct buf *b, int projfd, int dirfd, const char *dir,
    const char *name)
{
	char target[PATH_MAX], *in;
	struct stat st;
	ssize_t n;
	int fd;

	if ((n = readlinkat(dirfd, name, target, sizeof target - 1)) < 0) {
		buf_printf(b, " ?");
		return;
	}
	target[n] = '\0';
	buf_printf(b, " %zd:%llx", n, snap_run_hash(target, (size_t)n));
	if ((in = snap_run_inside(dir, target)) == NULL || *in == '\0') {
		free(in);
		return;
	}
	fd = path_open_beneath(projfd, in, O_PATH, 0);
	free(in);
	buf_printf(b, " -> ");
	if (fd != -1 && fstat(fd, &st) == 0)
		snap_run_stat(b, &st);
	else
		buf_printf(b, "?");
	if (fd != -1)
		close(fd);
}

/* True if NAME is one NAMES (NULL: all; a NULL-ended list of globs) asks for. */
static bool
snap_run_wanted(const char *const *names, const char *name)
{
	if (names == NULL)
		return true;
	for (; *names != NULL; names++) {
		if (fnmatch(*names, name, FNM_PERIOD) == 0)
			return true;
	}
	return false;
}

/* Fingerprints what is in the run dir DIR (relative) that NAMES asks for into R. */
static void
snap_run_dir(int projfd, const char *dir, const char *const *names,
    struct snap_run *r)
{
	struct dirent *de;
	struct stat st;
	struct buf b;
	DIR *d;
	int fd;

	if ((fd = path_open_beneath(projfd, dir, O_RDONLY | O_DIRECTORY,
	    0)) == -1 || (d = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		return;
	}
	strv_add(&r->dirs, dir);
	while ((de = readdir(d)) != NULL && !r->capped) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name,
		    "..") == 0 || !snap_run_wanted(names, de->d_name) ||
		    fstatat(dirfd(d), de->d_name, &st,
		    AT_SYMLINK_NOFOLLOW) == -1)
			continue;
		if (r->files.n >= SNAP_RUN_MAX) {
			r->capped = true;
			break;
		}
		buf_init(&b);
		snap_run_stat(&b, &st);
		if (S_ISLNK(st.st_mode))
			snap_run_link(&b, projfd, dirfd(d), dir, de->d_name);
		buf_printf(&b, "\t%s/%s", dir, de->d_name);
		strv_take(&r->files, buf_steal(&b));
	}
	closedir(d);
}

/* True if NAME has a glob's special characters. */
static bool
snap_run_glob(const char *name)
{
	return strpbrk(name, "*?[") != NULL;
}

/*
 * The dirs under DIR ("" for the project) that the components of PATTERN
 * from P on match, each fingerprinted into R; nothing followed (a link
 * fails path_open_beneath), at most 256 names matched per component.
 */
static void
snap_run_expand(int projfd, const char *dir, const char *p,
    const char *const *want, struct snap_run *r)
{
	size_t len = strcspn(p, "/");
	char *comp = xstrndup(p, len), *sub;
	const char *rest = p[len] == '/' ? p + len + 1 : NULL;
	struct strv names;
	struct dirent *de;
	size_t i;
	DIR *d;
	int fd;

	strv_init(&names);
	if (!snap_run_glob(comp))
		strv_add(&names, comp);
	else if ((fd = path_open_beneath(projfd, *dir != '\0' ? dir : ".",
	    O_RDONLY | O_DIRECTORY, 0)) != -1) {
		if ((d = fdopendir(fd)) == NULL)
			close(fd);
		while (d != NULL && (de = readdir(d)) != NULL && names.n < 256) {
			if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name,
			    "..") != 0 && fnmatch(comp, de->d_name,
			    FNM_PERIOD) == 0)
				strv_add(&names, de->d_name);
		}
		if (d != NULL)
			closedir(d);
	}
	for (i = 0; i < names.n; i++) {
		sub = *dir != '\0' ? xprintf("%s/%s", dir, names.v[i]) :
		    xstrdup(names.v[i]);
		if (rest != NULL && *rest != '\0')
			snap_run_expand(projfd, sub, rest, want, r);
		else if (!strv_contains(&r->dirs, sub))
			snap_run_dir(projfd, sub, want, r);
		free(sub);
	}
	strv_free(&names);
	free(comp);
}

static int
snap_run_cmp(const void *a, const void *b)
{
	const char *x = strchr(*(char *const *)a, '\t');
	const char *y = strchr(*(char *const *)b, '\t');

	return strcmp(x, y);
}

/* True if the search for run dirs goes into the dir NAME. */
static bool
snap_run_enter(const char *name)
{
	size_t i;

	for (i = 0; i < nitems(snap_run_skip); i++) {
		if (strcmp(name, snap_run_skip[i]) == 0)
			return false;
	}
	return true;
}

/* The N run dirs of PATTERNS whose first component names the dir E, expanded beside it. */
static void
snap_run_here(int projfd, const struct snap_walk_ent *e,
    const char *const *patterns, size_t n, const char *const *want,
    struct snap_run *r)
{
	const char *slash = strrchr(e->rel, '/');
	char *comp, *dir;
	size_t i;

	dir = slash != NULL ? xstrndup(e->rel, (size_t)(slash - e->rel)) :
	    xstrdup("");
	for (i = 0; i < n; i++) {
		comp = xstrndup(patterns[i], strcspn(patterns[i], "/"));
		if (fnmatch(comp, e->name, FNM_PERIOD) == 0)
			snap_run_expand(projfd, dir, patterns[i], want, r);
		free(comp);
	}
	free(dir);
}

struct snap_run_search {
	int projfd;
	struct snap_run *r;
	bool gated;               /* the clone gate held: let go now and then */
	size_t entries;           /* looked at so far */
	const atomic_bool *stop;  /* set: no deeper */
};

/* Tests only: called with each entry the search looks at (relative), before it is looked at. */
AM_TESTABLE void (*snap_run_entry_walked)(const char *rel);

/* With the clone gate held: let go now and then, so a clone on the loop waits little. */
static void
snap_run_gate_breathe(struct snap_run_search *rs)
{
	if (rs->gated && ++rs->entries % SNAP_RUN_GATE_EVERY == 0) {
		clone_gate_leave();
		clone_gate_enter();
	}
}

/* One entry of the search: a dir that may begin a run dir. */
static void
snap_run_entry(void *arg, struct snap_walk_ent *e)
{
	struct snap_run_search *rs = arg;

	if (snap_run_entry_walked != NULL)
		snap_run_entry_walked(e->rel);
	snap_run_gate_breathe(rs);
	if (e->info != SNAP_WALK_D)
		return;
	if (rs->stop != NULL && atomic_load(rs->stop)) {
		e->skip = true;
		return;
	}
	snap_run_here(rs->projfd, e, snap_run_dirs, nitems(snap_run_dirs),
	    NULL, rs->r);
	snap_run_here(rs->projfd, e, snap_run_sites, nitems(snap_run_sites),
	    snap_run_site_code, rs->r);
	e->skip = !snap_run_enter(e->name);
}

/*
 * The run dirs at any depth, breadth first (snap-walk.c: the shallow ones
 * first), nothing followed; past LIMIT entries ([jail] scan_limit) the
 * search stops and R says it was cut.
 */
static void
snap_run_search(const char *project, int projfd, int64_t limit, bool gated,
    const atomic_bool *stop, struct snap_run *r)
{
	struct snap_run_search rs = { projfd, r, gated, 0, stop };

	if (snap_walk(project, projfd, (size_t)limit, NULL, snap_run_entry,
	    &rs) == 1)
		r->cut = true;
}

static void
snap_run_look_in(const char *project, char *const *more, size_t nmore,
    int64_t limit, bool gated, const atomic_bool *stop, struct snap_run *r)
{
	size_t i;
	int projfd;

	snap_run_free(r);
	r->taken = true;
	if ((projfd = open(project, O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) == -1) {
		log_warnx("cannot read %s: %s", project, strerror(errno));
		return;
	}
	snap_run_search(project, projfd, limit > 0 ? limit : CONFIG_SCAN_LIMIT,
	    gated, stop, r);
	for (i = 0; i < nmore && (stop == NULL || !atomic_load(stop)); i++)
		snap_run_expand(projfd, "", more[i], NULL, r);
	close(projfd);
	if (r->files.n > 0)
		qsort(r->files.v, r->files.n, sizeof *r->files.v,
		    snap_run_cmp);
}

void
snap_run_look(const char *project, char *const *more, size_t nmore,
    int64_t limit, bool gated, const atomic_bool *stop, struct snap_run *r)
{
	if (gated)
		clone_gate_enter();
	snap_run_look_in(project, more, nmore, limit, gated, stop, r);
	if (gated)
		clone_gate_leave();
}

/* True if REL has a component NAME followed by more. */
static bool
snap_run_has(const char *rel, const char *name)
{
	size_t n = strlen(name);
	const char *p;

	for (p = rel; p != NULL; p = strchr(p, '/'), p = p != NULL ? p + 1 :
	    NULL) {
		if (strncmp(p, name, n) == 0 && p[n] == '/')
			return true;
	}
	return false;
}

/* What to do about a file changed in the run dir of REL. */
static const char *
snap_run_advice(const char *rel)
{
	if (snap_run_has(rel, "node_modules"))
		return "reinstall them with npm ci (or your package manager's "
		    "clean install) before you run npm, npx or a script";
	if (snap_run_has(rel, ".tox"))
		return "recreate the env with tox -r before you run it";
	if (snap_run_has(rel, "site-packages"))
		return "python runs it at every start in that venv: make the "
		    "venv again (python3 -m venv --clear, then pip install) "
		    "before you run python there";
	if (!snap_run_has(rel, ".venv") && !snap_run_has(rel, "venv") &&
	    !snap_run_has(rel, "env"))
		return "build or install it again before you run it";
	return "make the venv again (python3 -m venv --clear, then pip "
	    "install) before you activate it or run its programs";
}

/* One line for the file of LINE ("fingerprint\trel"), made, changed or removed (HOW). */
static void
snap_run_tell(const char *line, const char *how, struct strv *out)
{
	const char *rel = strchr(line, '\t') + 1;
	char *q = snap_nested_quote(rel);

	strv_addf(out, "%s was %s in the session: it is ignored, so no "
	    "snapshot holds it, and your shell or tools run it; %s", q, how,
	    snap_run_advice(rel));
	free(q);
}

/* True if LINE's file lies in a run dir of R (one R found). */
static bool
snap_run_watched(const struct snap_run *r, const char *line)
{
	const char *rel = strchr(line, '\t') + 1;
	size_t i, n;

	for (i = 0; i < r->dirs.n; i++) {
		n = strlen(r->dirs.v[i]);
		if (strncmp(rel, r->dirs.v[i], n) == 0 && rel[n] == '/')
			return true;
	}
	return false;
}

/* Tells LINE (HOW) into OUT, or counts it past SNAP_RUN_TELL. */
static void
snap_run_found(const char *line, const char *how, size_t *told,
    struct strv *out)
{
	if ((*told)++ < SNAP_RUN_TELL)
		snap_run_tell(line, how, out);
}

void
snap_run_compare(const struct snap_run *start, const struct snap_run *now,
    struct strv *out, struct strv *notes)
{
	size_t i = 0, j = 0, told = 0;
	int c;

	if (!start->taken || !now->taken)
		return;
	while (i < start->files.n || j < now->files.n) {
		if (i == start->files.n)
			c = 1;
		else if (j == now->files.n)
			c = -1;
		else
			c = snap_run_cmp(&start->files.v[i], &now->files.v[j]);
		/* Past a cap, a file unseen on one side may be there. */
		if (c < 0) {
			/* A run dir the cut search did not reach is not gone. */
			if (!now->capped && (!now->cut || snap_run_watched(now,
			    start->files.v[i])))
				snap_run_found(start->files.v[i], "removed",
				    &told, out);
			i++;
		} else if (c > 0) {
			if (snap_run_watched(start, now->files.v[j]) &&
			    !start->capped && !now->capped)
				snap_run_found(now->files.v[j], "made", &told,
				    out);
			j++;
		} else if (strcmp(start->files.v[i++], now->files.v[j++]) != 0)
			snap_run_found(now->files.v[j - 1], "changed", &told, out);
	}
	if (told > SNAP_RUN_TELL)
		strv_addf(out, "and %zu more files in the ignored dirs whose "
		    "programs you run (a venv's bin, node_modules/.bin) were "
		    "made, changed or removed in the session", told -
		    SNAP_RUN_TELL);
	if (start->cut || now->cut)
		strv_addf(notes, "the search for the ignored dirs whose "
		    "programs you run (a venv's bin, node_modules/.bin) stopped "
		    "at [jail] scan_limit: run dirs deeper than it reached are "
		    "not watched");
	if (start->capped || now->capped)
		strv_addf(notes, "only the first %d files of the ignored dirs "
		    "whose programs you run (a venv's bin, node_modules/.bin) "
		    "were looked at; files made or removed past them are not told",
		    SNAP_RUN_MAX);
}
