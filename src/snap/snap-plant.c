/*
 * The end-of-session look at what a jailed command left in the project for
 * the host to run later: git dirs the host's git would obey (snap-nested.c),
 * set-uid and set-gid files, and changes to the files the user's own tools
 * run (.envrc, .vscode/tasks.json, ...). One walk of the project, which
 * never follows a link.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <fts.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "snap/snap-int.h"

static void snap_plant_watch(const struct snap_plant_opts *,
    struct snap_plant_result *, int, const char *, const struct stat *);
static void snap_plant_watch_gone(const struct snap_plant_opts *,
    struct snap_plant_result *, int);

struct snap_plant_walk {
	const struct snap_plant_opts *o;
	struct snap_plant_result *res;
	struct snap_nested nc;
};

void
snap_plant_result_init(struct snap_plant_result *res)
{
	memset(res, 0, sizeof *res);
	strv_init(&res->alerts);
	strv_init(&res->watched);
}

void
snap_plant_result_free(struct snap_plant_result *res)
{
	strv_free(&res->alerts);
	strv_free(&res->watched);
}

/* True if a file named HEAD is in the dir REL: it is a git dir. */
static bool
snap_plant_is_gitdir(struct snap_plant_walk *w, const char *rel)
{
	char *head = xprintf("%s/HEAD", rel);
	int fd = path_open_beneath(w->nc.projfd, head, O_PATH, 0);

	free(head);
	if (fd == -1)
		return false;
	close(fd);
	return true;
}

/* The set-uid and set-gid bits of REL (changed in the session) come off. */
static void
snap_plant_setid(struct snap_plant_walk *w, const char *rel,
    const struct stat *st)
{
	struct stat now;
	char *q;
	int fd, rc = -1;

	if (!(st->st_mode & (S_ISUID | S_ISGID)) ||
	    !(S_ISREG(st->st_mode) || S_ISDIR(st->st_mode)) ||
	    !snap_nested_changed(st, w->o->since))
		return;
	fd = path_open_beneath(w->nc.projfd, rel, O_RDONLY | O_NONBLOCK |
	    (S_ISDIR(st->st_mode) ? O_DIRECTORY : 0), 0);
	if (fd != -1 && fstat(fd, &now) == 0 && now.st_ino == st->st_ino &&
	    now.st_dev == st->st_dev)
		rc = fchmod(fd, now.st_mode & 01777);
	if (fd != -1)
		close(fd);
	q = snap_nested_quote(rel);
	if (rc == 0)
		strv_addf(&w->res->alerts, "%s was made set-%s (owner uid %lu) "
		    "in the session; agentmux took that bit off", q,
		    (st->st_mode & S_ISUID) ? "uid" : "gid",
		    (unsigned long)st->st_uid);
	else
		strv_addf(&w->res->alerts, "%s was made set-%s (owner uid %lu) "
		    "in the session and agentmux could not take that bit off: "
		    "%s; remove it before anyone runs it", q,
		    (st->st_mode & S_ISUID) ? "uid" : "gid",
		    (unsigned long)st->st_uid, strerror(errno));
	w->res->setid++;
	free(q);
}

/* True if REL lies in a git dir: under a ".git" component. */
static bool
snap_plant_gitpath(const char *rel)
{
	return strncmp(rel, ".git/", 5) == 0 || strstr(rel, "/.git/") != NULL;
}

/*
 * A link, FIFO, socket or device made in a git dir: git on the host would
 * write its reflogs and refs through a link (into ~/.bashrc, say) and hang
 * on a FIFO. It goes to the quarantine.
 */
static void
snap_plant_special(struct snap_plant_walk *w, const char *rel,
    const struct stat *st)
{
	const char *slash = strrchr(rel, '/');
	char *dir, *to, *q;
	int fd;

	if (S_ISDIR(st->st_mode) || S_ISREG(st->st_mode) ||
	    !snap_nested_changed(st, w->o->since) || (S_ISSOCK(st->st_mode) &&
	    strcmp(slash + 1, "fsmonitor--daemon.ipc") == 0))
		return;
	dir = xstrndup(rel, (size_t)(slash - rel));
	fd = path_open_beneath(w->nc.projfd, dir, O_RDONLY | O_DIRECTORY, 0);
	to = fd != -1 ? snap_nested_keep(&w->nc, fd, slash + 1, true) : NULL;
	q = snap_nested_quote(rel);
	if (to != NULL)
		strv_addf(&w->res->alerts, "%s in a git dir was made a %s in the "
		    "session (git would write or read through it); it was moved "
		    "to %s", q, S_ISLNK(st->st_mode) ? "link" : "FIFO, socket "
		    "or device", to);
	else
		strv_addf(&w->res->alerts, "%s in a git dir was made a %s in the "
		    "session and agentmux could not move it: %s; remove it "
		    "before you run git there", q, S_ISLNK(st->st_mode) ?
		    "link" : "FIFO, socket or device", strerror(errno));
	if (fd != -1)
		close(fd);
	free(q);
	free(to);
	free(dir);
}

/* Inside a git dir: object stores skipped, module git dirs defused, links moved out. */
static void
snap_plant_in_gitdir(struct snap_plant_walk *w, FTS *fts, FTSENT *e,
    const char *rel)
{
	char *parent, *repo;

	if (e->fts_info != FTS_D) {
		snap_plant_special(w, rel, e->fts_statp);
		return;
	}
	parent = xstrndup(rel, (size_t)(strrchr(rel, '/') - rel));
	if (strcmp(e->fts_name, "objects") == 0 &&
	    snap_plant_is_gitdir(w, parent))
		fts_set(fts, e, FTS_SKIP);
	else if (strncmp(rel, ".git/modules/", 13) == 0 &&
	    snap_plant_is_gitdir(w, rel)) {
		/* However it got there: renamed, copied or made in the session. */
		repo = xprintf("%s (a submodule's git dir)", e->fts_path);
		snap_nested_gitdir(&w->nc, repo, rel);
		free(repo);
	}
	free(parent);
}

/* One entry of the walk. */
static void
snap_plant_entry(struct snap_plant_walk *w, FTS *fts, FTSENT *e)
{
	const char *rel = e->fts_path + strlen(w->o->project) + 1;
	bool own = e->fts_level == 1 && w->o->had_git;

	if (e->fts_info == FTS_DP || e->fts_info == FTS_DNR ||
	    e->fts_info == FTS_ERR || e->fts_info == FTS_NS)
		return;
	/* A repository of the session's making, nested or at the top. */
	if (strcmp(e->fts_name, ".git") == 0 && !own)
		snap_nested_dotgit(&w->nc, rel);
	if (snap_plant_gitpath(rel))
		snap_plant_in_gitdir(w, fts, e, rel);
	snap_plant_setid(w, rel, e->fts_statp);
	snap_plant_watch(w->o, w->res, w->nc.projfd, rel, e->fts_statp);
}

int
snap_plant_scan(const struct snap_plant_opts *o,
    struct snap_plant_result *res, char **cause)
{
	char *const roots[] = { (char *)o->project, NULL };
	struct snap_plant_walk w;
	FTSENT *e;
	FTS *fts;

	memset(&w, 0, sizeof w);
	w.o = o;
	w.res = res;
	w.nc.project = o->project;
	w.nc.since = o->since;
	w.nc.quarantine = o->quarantine;
	w.nc.messages = &res->alerts;
	w.nc.own_git = o->had_git;
	strv_init(&w.nc.done);
	w.nc.projfd = open(o->project, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (w.nc.projfd == -1 || (fts = fts_open(roots, FTS_PHYSICAL |
	    FTS_NOCHDIR | FTS_XDEV, NULL)) == NULL) {
		*cause = xprintf("cannot read %s: %s", o->project,
		    strerror(errno));
		if (w.nc.projfd != -1)
			close(w.nc.projfd);
		strv_free(&w.nc.done);
		return -1;
	}
	while ((e = fts_read(fts)) != NULL) {
		if (e->fts_level >= 1)
			snap_plant_entry(&w, fts, e);
	}
	fts_close(fts);
	snap_plant_watch_gone(o, res, w.nc.projfd);
	close(w.nc.projfd);
	strv_free(&w.nc.done);
	return 0;
}

/* ---- files the user's own tools run ---- */

/* What runs a watched file, for the message; NULL: a pattern of the user's. */
static const char *const snap_plant_tools[][2] = {
	{ "**/.envrc", "direnv runs it in your shell" },
	{ ".vscode/tasks.json", "VS Code runs its tasks" },
	{ ".vscode/launch.json", "VS Code runs its launch configurations" },
	{ ".vscode/settings.json", "VS Code obeys it (terminal, tool and "
	    "interpreter paths)" },
	{ ".mcp.json", "MCP clients start the servers it names" },
	{ ".claude/settings*.json", "Claude Code runs its hooks" },
	{ ".devcontainer", "Dev Containers build and run it" },
	{ ".idea/runConfigurations", "JetBrains IDEs run its configurations" },
	{ ".idea/workspace.xml", "JetBrains IDEs run its configurations" },
	{ "**/.gitattributes", "git runs the filter or driver it names" },
	{ ".git/info/attributes", "git runs the filter or driver it names" },
	{ ".githooks", "git runs its hooks where core.hooksPath names it" },
	{ ".husky", "git runs its hooks (husky sets core.hooksPath)" },
	{ ".pre-commit-config.yaml", "pre-commit runs its local hooks at "
	    "each commit" },
	{ ".tool-versions", "asdf and mise install and run what it names" },
	{ ".mise.toml", "mise runs its tasks and hooks" },
	{ "mise.toml", "mise runs its tasks and hooks" },
	{ "*.code-workspace", "VS Code runs its tasks and obeys its settings" },
};

/* Watched at any depth, whatever [jail] protect says. */
static const char *const snap_plant_always[] = {
	"**/.envrc", "**/.gitattributes", ".git/info/attributes",
};


/* PATTERN matches S, or a dir S lies in (".devcontainer" covers its files). */
static bool
snap_plant_match_here(const char *pattern, const char *s)
{
	char *copy;
	size_t i;
	bool m = false;

	if (fnmatch(pattern, s, FNM_PATHNAME) == 0)
		return true;
	copy = xstrdup(s);
	for (i = strlen(copy); i > 0 && !m; i--) {
		if (copy[i] != '/')
			continue;
		copy[i] = '\0';
		m = fnmatch(pattern, copy, FNM_PATHNAME) == 0;
	}
	free(copy);
	return m;
}

bool
snap_plant_match(const char *pattern, const char *rel)
{
	const char *s;

	if (strncmp(pattern, "**/", 3) != 0)
		return snap_plant_match_here(pattern, rel);
	for (s = rel; s != NULL; s = strchr(s, '/'), s = s != NULL ? s + 1 :
	    NULL) {
		if (snap_plant_match_here(pattern + 3, s))
			return true;
	}
	return false;
}

/* The first watched pattern REL falls under, or NULL. */
static const char *
snap_plant_watched(const struct snap_plant_opts *o, const char *rel)
{
	size_t i;

	for (i = 0; i < nitems(snap_plant_always); i++) {
		if (snap_plant_match(snap_plant_always[i], rel))
			return snap_plant_always[i];
	}
	for (i = 0; i < o->nwatch; i++) {
		if (snap_plant_match(o->watch[i], rel))
			return o->watch[i];
	}
	if (o->hooks != NULL && snap_plant_match(o->hooks, rel))
		return o->hooks;
	return NULL;
}

static const char *
snap_plant_tool(const struct snap_plant_opts *o, const char *rel)
{
	size_t i;

	if (o->hooks != NULL && snap_plant_match(o->hooks, rel))
		return "git runs its hooks: your core.hooksPath names it";
	for (i = 0; i < nitems(snap_plant_tools); i++) {
		if (snap_plant_match(snap_plant_tools[i][0], rel))
			return snap_plant_tools[i][1];
	}
	return "you marked it with [jail] protect";
}

/* True if attributes text REL names a driver: filter=, diff= or merge= with a value. */
static bool
snap_plant_names_driver(int projfd, const char *rel)
{
	static const char *const attrs[] = { "filter=", "diff=", "merge=" };
	struct buf b;
	struct stat st;
	const char *p;
	size_t i;
	bool named = false;
	int fd;

	if ((fd = path_open_beneath(projfd, rel, O_RDONLY | O_NONBLOCK,
	    0)) == -1)
		return false;
	buf_init(&b);
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    st.st_size <= 4 * 1024 * 1024 && buf_read_fd(&b, fd) == 0 &&
	    b.data != NULL) {
		for (i = 0; i < nitems(attrs) && !named; i++) {
			for (p = b.data; (p = strstr(p, attrs[i])) != NULL &&
			    !named; p++)
				named = p == b.data || p[-1] == ' ' ||
				    p[-1] == '\t';
		}
	}
	buf_free(&b);
	close(fd);
	return named;
}

static bool
snap_plant_attributes(const char *rel)
{
	const char *base = strrchr(rel, '/') != NULL ? strrchr(rel, '/') + 1 :
	    rel;

	return strcmp(base, ".gitattributes") == 0 ||
	    strcmp(rel, ".git/info/attributes") == 0;
}

static void
snap_plant_watch(const struct snap_plant_opts *o,
    struct snap_plant_result *res, int projfd, const char *rel,
    const struct stat *st)
{
	char *q;

	if (S_ISDIR(st->st_mode) || !snap_nested_changed(st, o->since) ||
	    snap_plant_watched(o, rel) == NULL)
		return;
	if (snap_plant_attributes(rel) && !snap_plant_names_driver(projfd, rel))
		return;
	q = snap_nested_quote(rel);
	strv_addf(&res->watched, "%s changed in the session (%s); read it "
	    "before you use it", q, snap_plant_tool(o, rel));
	free(q);
}

/* Watched files that were there at the start and are gone. */
static void
snap_plant_watch_gone(const struct snap_plant_opts *o,
    struct snap_plant_result *res, int projfd)
{
	size_t i;
	char *q;
	int fd;

	for (i = 0; i < o->nexisted; i++) {
		if ((fd = path_open_beneath(projfd, o->existed[i], O_PATH,
		    0)) != -1) {
			close(fd);
			continue;
		}
		if (errno != ENOENT)
			continue;
		q = snap_nested_quote(o->existed[i]);
		strv_addf(&res->watched, "%s was deleted in the session (%s)",
		    q, snap_plant_tool(o, o->existed[i]));
		free(q);
	}
}

/* Adds to OUT each path DIR/REST matches under the project (no link followed). */
static void
snap_plant_expand(int projfd, const char *dir, const char *rest,
    struct strv *out)
{
	const char *slash = strchr(rest, '/');
	char *comp = slash != NULL ? xstrndup(rest, (size_t)(slash - rest)) :
	    xstrdup(rest), *path;
	struct dirent *de;
	DIR *d;
	int fd;

	fd = dir[0] != '\0' ? path_open_beneath(projfd, dir, O_RDONLY |
	    O_DIRECTORY, 0) : openat(projfd, ".", O_RDONLY |
	    O_DIRECTORY | O_CLOEXEC);
	if (fd == -1 || (d = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		free(comp);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") ==
		    0 || fnmatch(comp, de->d_name, FNM_PERIOD) != 0)
			continue;
		path = dir[0] != '\0' ? xprintf("%s/%s", dir, de->d_name) :
		    xstrdup(de->d_name);
		if (slash != NULL)
			snap_plant_expand(projfd, path, slash + 1, out);
		else if (!strv_contains(out, path))
			strv_add(out, path);
		free(path);
	}
	closedir(d);
	free(comp);
}

/* True if REL under PROJFD is a regular file or a dir, reached without a link. */
static bool
snap_plant_plain(int projfd, const char *rel)
{
	struct stat st;
	int fd;
	bool plain;

	if ((fd = path_open_beneath(projfd, rel, O_PATH, 0)) == -1)
		return false;
	plain = fstat(fd, &st) == 0 && (S_ISREG(st.st_mode) ||
	    S_ISDIR(st.st_mode));
	close(fd);
	return plain;
}

void
snap_plant_existing(const char *project, char *const *patterns, size_t n,
    struct strv *out)
{
	struct strv found;
	size_t i, j;
	int projfd;

	if ((projfd = open(project, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return;
	for (i = 0; i < n; i++) {
		if (strncmp(patterns[i], "**/", 3) == 0 ||
		    patterns[i][0] == '/' || strstr(patterns[i], "..") != NULL)
			continue;
		strv_init(&found);
		snap_plant_expand(projfd, "", patterns[i], &found);
		/* Regular files and dirs only: a link could be swapped. */
		for (j = 0; j < found.n; j++) {
			if (snap_plant_plain(projfd, found.v[j]) &&
			    !strv_contains(out, found.v[j]))
				strv_add(out, found.v[j]);
		}
		strv_free(&found);
	}
	close(projfd);
}

/* ---- the user's own hooks dir (core.hooksPath) ---- */

/* The project's .git/config, a regular file no larger than 1 MiB, into OUT; -1 if not. */
static int
snap_plant_read_config(const char *project, struct buf *out)
{
	struct stat st;
	int projfd, fd, rc = -1;

	if ((projfd = open(project, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return -1;
	fd = path_open_beneath(projfd, ".git/config", O_RDONLY | O_NONBLOCK,
	    0);
	close(projfd);
	if (fd == -1)
		return -1;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    st.st_size <= 1024 * 1024 && buf_read_fd(out, fd) == 0)
		rc = 0;
	close(fd);
	return rc;
}

/* VALUE made relative to PROJECT, "./" and trailing "/" gone; NULL if it leads outside. */
static char *
snap_plant_hooks_rel(const char *project, const char *value)
{
	size_t n = strlen(project);
	char *rel, *c, *save = NULL;
	bool ok = true;

	if (value[0] == '/') {
		if (strncmp(value, project, n) != 0 || value[n] != '/')
			return NULL;
		value += n + 1;
	} else if (value[0] == '~')
		return NULL;
	rel = xstrdup(value);
	for (c = strtok_r(rel, "/", &save); c != NULL && ok;
	    c = strtok_r(NULL, "/", &save))
		ok = strcmp(c, "..") != 0;
	free(rel);
	if (!ok)
		return NULL;
	while (value[0] == '.' && value[1] == '/')
		for (value += 2; *value == '/'; value++)
			;
	rel = xstrdup(value);
	for (n = strlen(rel); n > 0 && rel[n - 1] == '/'; n--)
		rel[n - 1] = '\0';
	if (rel[0] == '\0' || strcmp(rel, ".") == 0) {
		free(rel);
		return NULL;
	}
	return rel;
}

/* REL with fnmatch's special characters escaped: a pattern naming it alone. */
static char *
snap_plant_escape(const char *rel)
{
	struct buf b;

	buf_init(&b);
	for (; *rel != '\0'; rel++) {
		if (strchr("*?[]\\", *rel) != NULL)
			buf_addc(&b, '\\');
		buf_addc(&b, *rel);
	}
	return b.data;
}

char *
snap_plant_hooks_path(const char *project)
{
	char *argv[] = { "git", "config", "--file", "-", "--null", "--get",
	    "core.hooksPath", NULL };
	struct buf text, out;
	char *cause = NULL, *rel = NULL, *pattern = NULL;
	int st;

	buf_init(&text);
	buf_init(&out);
	/* No include is followed (--file without --includes), nothing runs. */
	if (snap_plant_read_config(project, &text) == 0 &&
	    snap_git_outside_input(argv, text.data != NULL ? text.data : "",
	    text.len, &out, NULL, &st, &cause) == 0 && st == 0 &&
	    out.data != NULL && memchr(out.data, '\0', out.len) != NULL)
		rel = snap_plant_hooks_rel(project, out.data);
	free(cause);
	buf_free(&text);
	buf_free(&out);
	if (rel != NULL)
		pattern = snap_plant_escape(rel);
	free(rel);
	return pattern;
}
