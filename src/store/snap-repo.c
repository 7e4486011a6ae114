/* Where snapshots are written: the project's git repository through a private git dir, or a shadow one. */
#include <sys/sendfile.h>
#include <sys/stat.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/snap-int.h"

extern char **environ;

/*
 * Settings for every git command agentmux runs. They keep snapshots raw
 * (no line-ending conversion), keep the user's hooks, pager, signing key,
 * fsmonitor daemon and automatic gc out of it, and write loose objects
 * uncompressed: hashing and writing is most of a snapshot's cost, and the
 * user's next `git gc` packs (and compresses) them anyway.
 */
static const char *const snap_git_config[][2] = {
	{ "core.hooksPath", "/dev/null" },
	{ "core.autocrlf", "false" },
	{ "core.safecrlf", "false" },
	{ "core.symlinks", "true" },
	{ "core.fileMode", "true" },
	{ "core.fsmonitor", "false" },
	{ "core.splitIndex", "false" },
	{ "core.looseCompression", "0" },
	{ "core.quotePath", "false" },
	{ "core.pager", "cat" },
	{ "gc.auto", "0" },
	{ "maintenance.auto", "false" },
	{ "advice.addEmbeddedRepo", "false" },
	{ "advice.detachedHead", "false" },
	{ "commit.gpgSign", "false" },
	{ "submodule.recurse", "false" },
	{ "diff.external", "" },
};

/*
 * Attributes for the private git dir, where info/attributes outranks every
 * .gitattributes in the tree: no text conversion, filter, ident or
 * encoding, so a snapshot holds the bytes on disk and undo writes them back.
 */
static const char snap_raw_attributes[] =
    "* -text -eol -crlf -filter -ident -working-tree-encoding\n";

static const char *const snap_empty_trees[][2] = {
	{ "sha1", "4b825dc642cb6eb9a060e54bf8d69288fbee4904" },
	{ "sha256", "6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321" },
};

const char *
snap_repo_empty_tree(struct snap_repo *r)
{
	size_t i;

	for (i = 0; i < nitems(snap_empty_trees); i++) {
		if (strcmp(r->format, snap_empty_trees[i][0]) == 0)
			return snap_empty_trees[i][1];
	}
	return snap_empty_trees[0][1];
}

/* The caller's environment without GIT_* (a GIT_DIR there must not redirect us). */
static void
snap_env_clean(struct strv *env, bool keep_locale)
{
	char **e;

	strv_init(env);
	for (e = environ; *e != NULL; e++) {
		if (strncmp(*e, "GIT_", 4) == 0)
			continue;
		if (!keep_locale && (strncmp(*e, "LC_ALL=", 7) == 0 ||
		    strncmp(*e, "LANGUAGE=", 9) == 0))
			continue;
		strv_add(env, *e);
	}
	if (!keep_locale)
		strv_add(env, "LC_ALL=C");
}

static void
snap_env_common(struct strv *env)
{
	size_t i;

	strv_add(env, "GIT_TERMINAL_PROMPT=0");
	strv_add(env, "GIT_OPTIONAL_LOCKS=0");
	strv_add(env, "GIT_NO_REPLACE_OBJECTS=1");
	strv_add(env, "GIT_LITERAL_PATHSPECS=1");
	strv_add(env, "GIT_AUTHOR_NAME=agentmux");
	strv_add(env, "GIT_AUTHOR_EMAIL=agentmux@localhost");
	strv_add(env, "GIT_COMMITTER_NAME=agentmux");
	strv_add(env, "GIT_COMMITTER_EMAIL=agentmux@localhost");
	strv_addf(env, "GIT_CONFIG_COUNT=%zu", nitems(snap_git_config));
	for (i = 0; i < nitems(snap_git_config); i++) {
		strv_addf(env, "GIT_CONFIG_KEY_%zu=%s", i, snap_git_config[i][0]);
		strv_addf(env, "GIT_CONFIG_VALUE_%zu=%s", i,
		    snap_git_config[i][1]);
	}
}

static void
snap_repo_envs(struct snap_repo *r)
{
	struct strv *e;
	int i;

	for (i = 0; i < SNAP_NENV; i++) {
		e = &r->env[i];
		strv_free(e);
		snap_env_clean(e, i == SNAP_ENV_SHOW);
		snap_env_common(e);
		if (i == SNAP_ENV_NESTED)
			continue;
		strv_addf(e, "GIT_WORK_TREE=%s", r->worktree);
		strv_addf(e, "GIT_INDEX_FILE=%s", r->index);
		if (i != SNAP_ENV_TREE) {
			strv_addf(e, "GIT_DIR=%s", r->gitdir);
			continue;
		}
		strv_addf(e, "GIT_DIR=%s", r->shadow ? r->gitdir : r->private);
		if (!r->shadow)
			strv_addf(e, "GIT_OBJECT_DIRECTORY=%s/objects",
			    r->commondir);
	}
}

int
snap_copy_fd(int in, int out)
{
	ssize_t n;

	for (;;) {
		n = sendfile(out, in, NULL, 1 << 30);
		if (n == 0)
			return 0;
		if (n == -1 && errno != EINTR)
			return -1;
	}
}

/*
 * Copies keep the source's times: git trusts an index entry's stat data
 * only if the file is older than the index file itself ("racy git"), so
 * a copy of an index must look as old as the original, or a file changed
 * in the same second as the index was written would pass as unchanged.
 */
int
snap_copy_file(const char *src, const char *dst, char **cause)
{
	struct timespec times[2];
	struct stat sb;
	int in, out, rc = -1;

	if ((in = open(src, O_RDONLY | O_CLOEXEC)) == -1 || fstat(in, &sb) == -1) {
		*cause = xprintf("cannot read %s: %s", src, strerror(errno));
		if (in != -1)
			close(in);
		return -1;
	}
	times[0] = sb.st_atim;
	times[1] = sb.st_mtim;
	out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
	    0600);
	if (out != -1 && snap_copy_fd(in, out) == 0 && futimens(out, times) == 0)
		rc = 0;
	else
		*cause = xprintf("cannot write %s: %s", dst, strerror(errno));
	close(in);
	if (out != -1)
		close(out);
	return rc;
}

/*
 * Writes PATH if its content is not TEXT already: a rename of a temporary
 * file, so git never reads half of it. No fsync: these are rewritten on
 * every use (the private dir lives in the runtime dir anyway).
 */
static int
snap_write_if_changed(const char *path, const char *text, char **cause)
{
	struct buf b;
	char *tmp;
	int same, fd, rc = -1;

	buf_init(&b);
	same = buf_read_file(&b, path) == 0 && strcmp(b.data != NULL ?
	    b.data : "", text) == 0;
	buf_free(&b);
	if (same)
		return 0;
	tmp = xprintf("%s.tmp.%ld", path, (long)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
	    0600);
	if (fd != -1 && util_write_all(fd, text, strlen(text)) == 0 &&
	    close(fd) == 0 && (fd = -1, rename(tmp, path) == 0))
		rc = 0;
	else {
		*cause = xprintf("cannot write %s: %s", path, strerror(errno));
		if (fd != -1)
			close(fd);
		unlink(tmp);
	}
	free(tmp);
	return rc;
}

/* Makes PATH a symlink to TARGET unless it is one already. */
static int
snap_symlink_if_changed(const char *target, const char *path)
{
	char buf[PATH_MAX];
	ssize_t n;

	n = readlink(path, buf, sizeof buf);
	if (n >= 0 && (size_t)n == strlen(target) &&
	    memcmp(buf, target, (size_t)n) == 0)
		return 0;
	unlink(path);
	return symlink(target, path);
}

/*
 * The private git dir for a repository of the user's: its own config
 * (the repository's included, its object format kept), our attributes,
 * the repository's excludes, and a private index; objects go to the
 * repository's object dir through GIT_OBJECT_DIRECTORY.
 */
static int
snap_private_init(struct snap_repo *r, char **cause)
{
	char *p, *text;
	int rc;

	p = xprintf("%s/refs", r->private);
	rc = path_mkdir_p(p, 0700);
	free(p);
	p = xprintf("%s/info", r->private);
	if (rc == -1 || path_mkdir_p(p, 0700) == -1) {
		*cause = xprintf("cannot create %s: %s", p, strerror(errno));
		free(p);
		return -1;
	}
	free(p);
	text = xprintf("[include]\n\tpath = %s/config\n[core]\n"
	    "\trepositoryformatversion = %d\n\tbare = false\n%s%s%s",
	    r->commondir, strcmp(r->format, "sha1") == 0 ? 0 : 1,
	    strcmp(r->format, "sha1") == 0 ? "" : "[extensions]\n"
	    "\tobjectformat = ", strcmp(r->format, "sha1") == 0 ? "" :
	    r->format, strcmp(r->format, "sha1") == 0 ? "" : "\n");
	p = xprintf("%s/config", r->private);
	rc = snap_write_if_changed(p, text, cause);
	free(p);
	free(text);
	if (rc == -1)
		return -1;
	p = xprintf("%s/HEAD", r->private);
	rc = snap_write_if_changed(p, "ref: refs/heads/agentmux-private\n",
	    cause);
	free(p);
	if (rc == -1)
		return -1;
	p = xprintf("%s/info/attributes", r->private);
	rc = snap_write_if_changed(p, snap_raw_attributes, cause);
	free(p);
	if (rc == -1)
		return -1;
	p = xprintf("%s/info/exclude", r->private);
	text = xprintf("%s/info/exclude", r->commondir);
	rc = snap_symlink_if_changed(text, p);
	free(text);
	free(p);
	return rc;
}

/* The shadow dir's name: the project's base name and a hash of its path. */
static char *
snap_shadow_path(const char *data, const char *project)
{
	const char *base = strrchr(project, '/');
	uint64_t h = 1469598103934665603ULL;
	char name[40];
	size_t i;

	for (i = 0; project[i] != '\0'; i++)
		h = (h ^ (unsigned char)project[i]) * 1099511628211ULL;
	base = base != NULL && base[1] != '\0' ? base + 1 : "root";
	for (i = 0; i < sizeof name - 1 && base[i] != '\0'; i++) {
		unsigned char c = (unsigned char)base[i];

		name[i] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '_' ? (char)c : '_';
	}
	name[i < 24 ? i : 24] = '\0';
	return xprintf("%s/shadow/%s-%016llx", data, name, (unsigned long long)h);
}

/* The shadow's excludes: the built-in and configured ones. */
static int
snap_shadow_excludes(struct snap_repo *r, const struct config *cf,
    char **cause)
{
	struct buf b;
	char *p;
	size_t i;
	int rc;

	buf_init(&b);
	buf_adds(&b, "# Written by agentmux from [snapshots] exclude.\n");
	for (i = 0; cf != NULL && i < cf->snapshots.excludes.n; i++)
		buf_printf(&b, "%s\n", cf->snapshots.excludes.v[i]);
	p = xprintf("%s/info/exclude", r->gitdir);
	rc = snap_write_if_changed(p, b.data, cause);
	free(p);
	buf_free(&b);
	return rc;
}

/* Makes (once) the shadow git dir for a project outside git. */
static int
snap_shadow_init(struct snap_repo *r, const struct config *cf, char **cause)
{
	struct snap_proc_opts o;
	struct strv env;
	struct buf err;
	char *p;
	int st, rc;
	char *argv[] = { "git", "init", "-q", "--template=",
	    "--object-format=sha1", NULL };

	p = xprintf("%s/agentmux-project", r->gitdir);
	if (access(p, F_OK) != 0) {
		snap_env_clean(&env, false);
		strv_addf(&env, "GIT_DIR=%s", r->gitdir);
		strv_addf(&env, "GIT_WORK_TREE=%s", r->worktree);
		memset(&o, 0, sizeof o);
		o.argv = argv;
		o.env = env.v;
		o.out_fd = -1;
		o.umask = 077;
		buf_init(&err);
		rc = snap_proc_run(&o, NULL, &err, &st, cause);
		strv_free(&env);
		if (rc == 0 && st != 0)
			*cause = xprintf("cannot create the shadow repository "
			    "%s: %s", r->gitdir, err.data);
		buf_free(&err);
		if (rc == -1 || st != 0 || util_write_file_atomic(p,
		    r->worktree, strlen(r->worktree), 0600, cause) == -1) {
			free(p);
			return -1;
		}
	}
	/* Its time says when it was last used (gc spares recent ones). */
	utimensat(AT_FDCWD, p, NULL, 0);
	free(p);
	p = xprintf("%s/info", r->gitdir);
	path_mkdir_p(p, 0700);
	free(p);
	p = xprintf("%s/info/attributes", r->gitdir);
	rc = snap_write_if_changed(p, snap_raw_attributes, cause);
	free(p);
	if (rc == -1)
		return -1;
	return snap_shadow_excludes(r, cf, cause);
}

/* Fills R from `git rev-parse` run in DIR (with GITDIR as GIT_DIR if set). */
static int
snap_repo_discover(struct snap_repo *r, const char *dir, const char *gitdir,
    bool *outside, char **cause)
{
	struct snap_proc_opts o;
	struct strv env;
	struct buf out, err;
	char *line[4], *s, *save = NULL;
	int st, rc, i;
	char *argv[] = { "git", "rev-parse", "--path-format=absolute",
	    "--git-dir", "--git-common-dir", "--show-toplevel",
	    "--show-object-format", NULL };

	snap_env_clean(&env, false);
	if (gitdir != NULL)
		strv_addf(&env, "GIT_DIR=%s", gitdir);
	if (gitdir != NULL)
		strv_addf(&env, "GIT_WORK_TREE=%s", dir);
	memset(&o, 0, sizeof o);
	o.argv = argv;
	o.env = env.v;
	o.dir = dir;
	o.out_fd = -1;
	o.umask = -1;
	buf_init(&out);
	buf_init(&err);
	rc = snap_proc_run(&o, &out, &err, &st, cause);
	strv_free(&env);
	*outside = rc == 0 && st != 0 && err.data != NULL &&
	    strstr(err.data, "not a git repository") != NULL;
	if (rc == 0 && st != 0 && !*outside) {
		*cause = xprintf("git cannot use the repository of %s: %s", dir,
		    err.data != NULL ? err.data : "(no message)");
		s = strchr(*cause, '\n');
		if (s != NULL)
			*s = '\0';
		rc = -1;
	}
	if (rc == -1 || st != 0)
		goto out;
	for (i = 0, s = strtok_r(out.data, "\n", &save); i < 4 && s != NULL;
	    i++, s = strtok_r(NULL, "\n", &save))
		line[i] = s;
	if (i < 4) {
		*cause = xprintf("git rev-parse gave no top level for %s (a "
		    "bare repository, or inside .git?)", dir);
		rc = -1;
		goto out;
	}
	r->gitdir = xstrdup(line[0]);
	r->commondir = xstrdup(line[1]);
	r->worktree = xstrdup(line[2]);
	r->format = xstrdup(line[3]);
out:
	buf_free(&out);
	buf_free(&err);
	return rc;
}

/* Sets up the private dir and environments once the repository is known. */
static int
snap_repo_finish(struct snap_repo *r, const char *tag, char **cause)
{
	const char *rt;
	char *made;

	if (path_runtime_dir() == NULL) {
		if ((made = path_runtime_dir_create(cause)) == NULL)
			return -1;
		free(made);
	}
	rt = path_runtime_dir();
	r->private = xprintf("%s/snap-%s", rt, tag);
	r->index = xprintf("%s/index", r->private);
	if (path_mkdir_p(r->private, 0700) == -1) {
		*cause = xprintf("cannot create %s: %s", r->private,
		    strerror(errno));
		return -1;
	}
	if (!r->shadow && snap_private_init(r, cause) == -1)
		return -1;
	r->seed = xprintf("%s/index", r->gitdir);
	r->umask = (int)util_user_umask();
	snap_repo_envs(r);
	return 0;
}

static struct snap_repo *
snap_repo_new(void)
{
	struct snap_repo *r = xcalloc(1, sizeof *r);

	r->umask = -1;
	return r;
}

static int
snap_repo_shadow(struct snap_repo *r, const char *real,
    const struct config *cf, char **cause)
{
	char *data;

	if ((data = path_data_dir(cause)) == NULL)
		return -1;
	r->shadow = true;
	r->worktree = xstrdup(real);
	r->gitdir = snap_shadow_path(data, real);
	r->commondir = xstrdup(r->gitdir);
	r->format = xstrdup("sha1");
	free(data);
	if (path_mkdir_p(r->gitdir, 0700) == -1) {
		*cause = xprintf("cannot create %s: %s", r->gitdir,
		    strerror(errno));
		return -1;
	}
	return snap_shadow_init(r, cf, cause);
}

/* Whether a repository config says nothing a quick look could get wrong. */
static bool
snap_repo_plain_config(char *text)
{
	char *line, *save = NULL, *p, *q;

	for (line = strtok_r(text, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		for (p = q = line; *p != '\0'; p++) {
			if (*p != ' ' && *p != '\t')
				*q++ = (char)tolower((unsigned char)*p);
		}
		*q = '\0';
		if (strstr(line, "worktree") != NULL ||
		    strncmp(line, "[extensions", 11) == 0 ||
		    strncmp(line, "[include", 8) == 0 ||
		    (strncmp(line, "bare=", 5) == 0 &&
		    strcmp(line, "bare=false") != 0))
			return false;
	}
	return true;
}

/*
 * The common case without running git (a session's project is its
 * top level already): DIR/.git is a directory of ours whose config sets
 * no work tree, extension or include. Anything else asks git.
 */
static bool
snap_repo_quick(struct snap_repo *r, const char *real)
{
	struct stat sd, sg;
	struct buf b;
	char *g, *p;
	bool ok;

	g = xprintf("%s/.git", real);
	p = xprintf("%s/HEAD", g);
	ok = lstat(real, &sd) == 0 && lstat(g, &sg) == 0 &&
	    S_ISDIR(sg.st_mode) && sd.st_uid == getuid() &&
	    sg.st_uid == getuid() && access(p, R_OK) == 0;
	free(p);
	buf_init(&b);
	p = xprintf("%s/config", g);
	ok = ok && buf_read_file(&b, p) == 0 && b.data != NULL &&
	    snap_repo_plain_config(b.data);
	free(p);
	buf_free(&b);
	if (!ok) {
		free(g);
		return false;
	}
	r->gitdir = g;
	r->commondir = xstrdup(g);
	r->worktree = xstrdup(real);
	r->format = xstrdup("sha1");
	return true;
}

/*
 * Whether REAL is certainly outside any repository, without running git:
 * nothing named .git in it or above it, and nothing that could be a bare
 * repository (a HEAD file) either. Anything else is for git to decide.
 */
static bool
snap_repo_outside(const char *real)
{
	char *cur = xstrdup(real), *p, *slash;
	bool outside = true;

	for (;;) {
		p = xprintf("%s/.git", cur);
		outside = access(p, F_OK) != 0 && errno == ENOENT;
		free(p);
		p = xprintf("%s/HEAD", cur);
		outside = outside && access(p, F_OK) != 0 && errno == ENOENT;
		free(p);
		if (!outside || *cur == '\0')
			break;
		slash = strrchr(cur, '/');
		*slash = '\0';   /* "/x" becomes "", which stands for / */
	}
	free(cur);
	return outside;
}

struct snap_repo *
snap_repo_open(const char *dir, const struct config *cf, const char *tag,
    char **cause)
{
	struct snap_repo *r = snap_repo_new();
	char *real;
	bool outside = false;

	if ((real = path_real(dir)) == NULL) {
		*cause = xprintf("cannot use %s: %s", dir, strerror(errno));
		goto fail;
	}
	if (strchr(real, '\n') != NULL) {
		*cause = xprintf("cannot snapshot %s: its path has a newline",
		    real);
		goto fail;
	}
	if (!snap_repo_quick(r, real) && !(outside = snap_repo_outside(real)) &&
	    snap_repo_discover(r, real, NULL, &outside, cause) == -1)
		goto fail;
	if (outside && snap_repo_shadow(r, real, cf, cause) == -1)
		goto fail;
	if (snap_repo_finish(r, tag, cause) == -1)
		goto fail;
	free(real);
	return r;
fail:
	free(real);
	snap_repo_free(r);
	return NULL;
}

struct snap_repo *
snap_repo_reopen(const char *gitdir, const char *worktree, bool shadow,
    const char *tag, char **cause)
{
	struct snap_repo *r = snap_repo_new();
	bool outside = false;

	if (access(gitdir, F_OK) != 0) {
		*cause = xprintf("the snapshot repository %s is gone: %s", gitdir,
		    strerror(errno));
		goto fail;
	}
	if (shadow) {
		r->shadow = true;
		r->worktree = xstrdup(worktree);
		r->gitdir = xstrdup(gitdir);
		r->commondir = xstrdup(gitdir);
		r->format = xstrdup("sha1");
	} else if (snap_repo_discover(r, worktree, gitdir, &outside,
	    cause) == -1 || outside) {
		if (outside)
			*cause = xprintf("%s is no longer a git repository",
			    gitdir);
		goto fail;
	}
	if (snap_repo_finish(r, tag, cause) == -1)
		goto fail;
	return r;
fail:
	snap_repo_free(r);
	return NULL;
}

void
snap_repo_free(struct snap_repo *r)
{
	int i;

	if (r == NULL)
		return;
	free(r->worktree);
	free(r->gitdir);
	free(r->commondir);
	free(r->format);
	free(r->private);
	free(r->index);
	free(r->seed);
	for (i = 0; i < SNAP_NENV; i++)
		strv_free(&r->env[i]);
	free(r);
}

/* A split index names its shared part, which git looks for in GIT_DIR. */
static void
snap_repo_link_shared(struct snap_repo *r)
{
	struct dirent *de;
	char *src, *dst;
	DIR *d;

	if (r->shadow || (d = opendir(r->gitdir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, "sharedindex.", 12) != 0)
			continue;
		src = xprintf("%s/%s", r->gitdir, de->d_name);
		dst = xprintf("%s/%s", r->private, de->d_name);
		unlink(dst);
		if (symlink(src, dst) == -1)
			log_debug("cannot link %s: %s", dst, strerror(errno));
		free(src);
		free(dst);
	}
	closedir(d);
}

/* Notes the private index as it is now (git replaces the file whenever it writes it). */
static void
snap_repo_note_index(struct snap_repo *r)
{
	if (stat(r->index, &r->synced) == -1)
		memset(&r->synced, 0, sizeof r->synced);
}

int
snap_repo_seed(struct snap_repo *r, char **cause)
{
	char *err = NULL;

	unlink(r->index);
	r->seeded = true;
	if (access(r->seed, R_OK) != 0)
		return 0;
	snap_repo_link_shared(r);
	if (snap_copy_file(r->seed, r->index, &err) == -1) {
		/* Only costs time: everything is hashed afresh. */
		log_debug("%s", err);
		free(err);
		unlink(r->index);
	}
	snap_repo_note_index(r);
	return 0;
}

void
snap_repo_save_index(struct snap_repo *r)
{
	char *tmp, *err = NULL;
	struct stat sb;

	if (!r->shadow)
		return;
	/* Unchanged since it was copied: nothing to save. */
	if (stat(r->index, &sb) == 0 && sb.st_ino == r->synced.st_ino &&
	    sb.st_dev == r->synced.st_dev && sb.st_size == r->synced.st_size &&
	    sb.st_mtim.tv_sec == r->synced.st_mtim.tv_sec &&
	    sb.st_mtim.tv_nsec == r->synced.st_mtim.tv_nsec)
		return;
	tmp = xprintf("%s.agentmux-%ld", r->seed, (long)getpid());
	if (snap_copy_file(r->index, tmp, &err) == 0 &&
	    rename(tmp, r->seed) == 0) {
		free(tmp);
		snap_repo_note_index(r);
		return;
	}
	log_debug("cannot save the shadow index: %s", err != NULL ? err :
	    strerror(errno));
	free(err);
	unlink(tmp);
	free(tmp);
}

/* Reads the first line of PATH; caller frees; NULL if unreadable. */
static char *
snap_read_line(const char *path)
{
	struct buf b;
	char *nl;

	buf_init(&b);
	if (buf_read_file(&b, path) == -1 || b.data == NULL) {
		buf_free(&b);
		return NULL;
	}
	if ((nl = strchr(b.data, '\n')) != NULL)
		*nl = '\0';
	return buf_steal(&b);
}

/* Looks NAME up in packed-refs; caller frees. */
static char *
snap_packed_ref(struct snap_repo *r, const char *name)
{
	struct buf b;
	char *p, *line, *save = NULL, *sp, *oid = NULL;

	buf_init(&b);
	p = xprintf("%s/packed-refs", r->commondir);
	if (buf_read_file(&b, p) == 0 && b.data != NULL) {
		for (line = strtok_r(b.data, "\n", &save); line != NULL;
		    line = strtok_r(NULL, "\n", &save)) {
			if (*line == '#' || *line == '^' ||
			    (sp = strchr(line, ' ')) == NULL)
				continue;
			if (strcmp(sp + 1, name) == 0) {
				oid = xstrndup(line, (size_t)(sp - line));
				break;
			}
		}
	}
	free(p);
	buf_free(&b);
	return oid;
}

char *
snap_repo_head(struct snap_repo *r, char **symref)
{
	char *p, *v, *name = NULL;
	int depth;

	*symref = NULL;
	p = xprintf("%s/HEAD", r->gitdir);
	v = snap_read_line(p);
	free(p);
	for (depth = 0; v != NULL && strncmp(v, "ref: ", 5) == 0 && depth < 5;
	    depth++) {
		free(name);
		name = xstrdup(v + 5);
		if (*symref == NULL)
			*symref = xstrdup(name);
		free(v);
		p = xprintf("%s/%s", r->commondir, name);
		v = snap_read_line(p);
		free(p);
		if (v == NULL)
			v = snap_packed_ref(r, name);
	}
	free(name);
	if (v != NULL && (strlen(v) < 40 || strspn(v, "0123456789abcdef") !=
	    strlen(v))) {
		free(v);
		v = NULL;
	}
	return v;
}

/* A copy of R's environment WHICH with INDEX as GIT_INDEX_FILE. */
static void
snap_env_with_index(struct snap_repo *r, enum snap_env which,
    const char *index, struct strv *env)
{
	size_t i;

	strv_init(env);
	for (i = 0; i < r->env[which].n; i++) {
		if (strncmp(r->env[which].v[i], "GIT_INDEX_FILE=", 15) == 0)
			strv_addf(env, "GIT_INDEX_FILE=%s", index);
		else
			strv_add(env, r->env[which].v[i]);
	}
}

static void
snap_git_argv(struct strv *argv, const char *const *args)
{
	strv_init(argv);
	strv_add(argv, "git");
	strv_add(argv, "--no-pager");
	for (; *args != NULL; args++)
		strv_add(argv, *args);
}

int
snap_git_status(struct snap_repo *r, enum snap_env which, const char *index,
    const char *const *args, const struct buf *input, struct buf *out,
    struct buf *err, int out_fd, char **cause)
{
	struct snap_proc_opts o;
	struct strv argv, env;
	int st, rc;

	snap_git_argv(&argv, args);
	memset(&o, 0, sizeof o);
	o.argv = argv.v;
	if (index != NULL) {
		snap_env_with_index(r, which, index, &env);
		o.env = env.v;
	} else
		o.env = r->env[which].v;
	o.dir = r->worktree;
	o.out_fd = out_fd;
	o.umask = which == SNAP_ENV_TREE ? r->umask : -1;
	if (input != NULL) {
		o.input = input->data != NULL ? input->data : "";
		o.inputlen = input->len;
	}
	rc = snap_proc_run(&o, out, err, &st, cause);
	strv_free(&argv);
	if (index != NULL)
		strv_free(&env);
	return rc == -1 ? -1 : st;
}

/* The first line of git's complaint, for a message. */
static char *
snap_git_complaint(const char *cmd, const struct buf *err, int st)
{
	const char *s = err->data != NULL ? err->data : "";
	const char *line = s, *nl;

	/* Skip hints and warnings to the first fatal or error line. */
	for (; *s != '\0'; s = nl + 1) {
		if (strncmp(s, "fatal: ", 7) == 0 || strncmp(s, "error: ", 7) == 0) {
			line = s;
			break;
		}
		if ((nl = strchr(s, '\n')) == NULL)
			break;
	}
	nl = strchr(line, '\n');
	if (*line == '\0')
		return xprintf("git %s failed (exit %d)", cmd, st);
	return xprintf("git %s failed: %.*s", cmd, nl != NULL ?
	    (int)(nl - line) : (int)strlen(line), line);
}

int
snap_git(struct snap_repo *r, enum snap_env which, const char *const *args,
    const struct buf *input, struct buf *out, char **cause)
{
	struct buf err;
	int st;

	buf_init(&err);
	st = snap_git_status(r, which, NULL, args, input, out, &err, -1, cause);
	if (st > 0)
		*cause = snap_git_complaint(args[0], &err, st);
	buf_free(&err);
	return st == 0 ? 0 : -1;
}

int
snap_git_fd(struct snap_repo *r, enum snap_env which, const char *const *args,
    int fd, char **cause)
{
	struct buf err;
	int st;

	buf_init(&err);
	st = snap_git_status(r, which, NULL, args, NULL, NULL, &err, fd, cause);
	if (st > 0)
		*cause = snap_git_complaint(args[0], &err, st);
	buf_free(&err);
	return st == 0 ? 0 : -1;
}

static struct snap_proc *
snap_git_spawn(struct event_base *base, struct snap_repo *r,
    enum snap_env which, const char *const *args, const struct buf *input,
    bool input_later, void (*line)(void *, const char *, size_t),
    snap_proc_cb done, void *arg, char **cause)
{
	struct snap_proc_opts o;
	struct snap_proc *p;
	struct strv argv;

	snap_git_argv(&argv, args);
	memset(&o, 0, sizeof o);
	o.argv = argv.v;
	o.env = r->env[which].v;
	o.dir = r->worktree;
	o.out_fd = -1;
	o.umask = which == SNAP_ENV_TREE ? r->umask : -1;
	o.line = line;
	o.input_later = input_later;
	if (input != NULL) {
		o.input = input->data != NULL ? input->data : "";
		o.inputlen = input->len;
	}
	p = snap_proc_start(base, &o, done, arg, cause);
	strv_free(&argv);
	return p;
}

struct snap_proc *
snap_git_start(struct event_base *base, struct snap_repo *r,
    enum snap_env which, const char *const *args, const struct buf *input,
    void (*line)(void *, const char *, size_t), snap_proc_cb done,
    void *arg, char **cause)
{
	return snap_git_spawn(base, r, which, args, input, false, line, done,
	    arg, cause);
}

struct snap_proc *
snap_git_start_held(struct event_base *base, struct snap_repo *r,
    enum snap_env which, const char *const *args, snap_proc_cb done,
    void *arg, char **cause)
{
	return snap_git_spawn(base, r, which, args, NULL, true, NULL, done, arg,
	    cause);
}

char *
snap_git_error(const char *what, struct snap_proc *p)
{
	return snap_git_complaint(what, snap_proc_err(p), snap_proc_status(p));
}

int
snap_git_plain(const char *gitdir, const char *const *args, char **cause)
{
	return snap_git_plain_io(gitdir, args, NULL, NULL, cause);
}

int
snap_git_plain_io(const char *gitdir, const char *const *args,
    const struct buf *input, struct buf *out, char **cause)
{
	struct snap_proc_opts o;
	struct strv env, argv;
	struct buf err;
	int st, rc;

	snap_env_clean(&env, false);
	snap_env_common(&env);
	strv_addf(&env, "GIT_DIR=%s", gitdir);
	snap_git_argv(&argv, args);
	memset(&o, 0, sizeof o);
	o.argv = argv.v;
	o.env = env.v;
	o.dir = gitdir;
	o.out_fd = -1;
	o.umask = -1;
	if (input != NULL) {
		o.input = input->data;
		o.inputlen = input->len;
	}
	buf_init(&err);
	rc = snap_proc_run(&o, out, &err, &st, cause);
	if (rc == 0 && st != 0) {
		*cause = snap_git_complaint(args[0], &err, st);
		rc = -1;
	}
	buf_free(&err);
	strv_free(&env);
	strv_free(&argv);
	return rc;
}

void
snap_env_plain(struct strv *env)
{
	snap_env_clean(env, false);
	snap_env_common(env);
}

int
snap_git_outside(char *const *argv, struct buf *out, struct buf *err,
    int *status, char **cause)
{
	struct snap_proc_opts o;
	struct strv env;
	int rc;

	snap_env_plain(&env);
	memset(&o, 0, sizeof o);
	o.argv = argv;
	o.env = env.v;
	o.dir = "/";
	o.out_fd = -1;
	o.umask = -1;
	rc = snap_proc_run(&o, out, err, status, cause);
	strv_free(&env);
	return rc;
}
