/* What a session's jail is made of: the agent profile, the command, its environment, its overlays and binds. */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "session-int.h"

/* The jail's PATH; the command's own directory goes first when it is elsewhere. */
#define SESSION_PATH "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:" \
    "/usr/sbin:/sbin"

/* Variables of the caller's environment that may pass into the jail. */
static const char *const session_env_allow[] = {
	"TERM", "LANG", "TZ", "COLORTERM",
};

const struct config_agent *
session_setup_profile(const struct config *cf, const char *name,
    char **cause)
{
	const struct config_agent *a;
	struct buf b;
	size_t i;

	if (name == NULL)
		name = cf->ui.default_agent != NULL ? cf->ui.default_agent :
		    "shell";
	if ((a = config_agent(cf, name)) != NULL)
		return a;
	buf_init(&b);
	for (i = 0; i < cf->nagents; i++)
		buf_printf(&b, "%s%s", i == 0 ? "" : ", ", cf->agents[i].name);
	if (cf->builtin_error != NULL)
		*cause = xprintf("unknown agent '%s': %s; the agents are: %s",
		    name, cf->builtin_error, b.len > 0 ? b.data : "(none)");
	else
		*cause = xprintf("unknown agent '%s'; the agents are: %s", name,
		    b.len > 0 ? b.data : "(none)");
	buf_free(&b);
	return NULL;
}

/*
 * The command and what the jail must show for it: an agent installed under
 * the hidden HOME or in /opt is bound read-only where it lives (agent.c
 * finds its package dir and a script's interpreter). A relative path with
 * a slash is the project's own script, run as it is from the jail's cwd.
 */
static bool
session_setup_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	return strncmp(path, dir, n) == 0 && (path[n] == '\0' ||
	    path[n] == '/');
}

int
session_setup_command(struct session_setup *ss, struct strv *argv,
    const struct config_agent *a, char *const *command, const char *project,
    const char *path_env, char **cause)
{
	struct agent_install in;
	size_t i;

	strv_init(argv);
	if (command != NULL && command[0] != NULL && *command[0] != '/' &&
	    strchr(command[0], '/') != NULL) {
		for (i = 0; command[i] != NULL; i++)
			strv_add(argv, command[i]);
		return 0;
	}
	if (agent_resolve(a, command, path_env, &in, cause) == -1)
		return -1;
	for (i = 0; i < in.argv.n; i++)
		strv_add(argv, in.argv.v[i]);
	/* The project is in the jail already, read-write: no bind over it. */
	for (i = 0; i < in.binds.n; i++) {
		if (!session_setup_under(in.binds.v[i], project))
			strv_add(&ss->binds, in.binds.v[i]);
	}
	for (i = 0; i < in.path.n; i++)
		strv_add(&ss->path, in.path.v[i]);
	agent_install_free(&in);
	return 0;
}

static bool
session_setup_allowed(const char *kv)
{
	size_t i, n;

	if (strncmp(kv, "LC_", 3) == 0)
		return true;
	for (i = 0; i < nitems(session_env_allow); i++) {
		n = strlen(session_env_allow[i]);
		if (strncmp(kv, session_env_allow[i], n) == 0 && kv[n] == '=')
			return true;
	}
	return false;
}

/* Only an allowlist of the caller's environment goes in; the rest is ours. */
void
session_setup_env(struct session_setup *ss, const struct session *s,
    const struct config_agent *a, bool pty, int port)
{
	struct passwd *pw = getpwuid(getuid());
	const char *user = pw != NULL ? pw->pw_name : "user";
	char *const *e;
	char *proxy;
	struct buf b;
	size_t i;

	for (e = session_environ(s); *e != NULL; e++) {
		if (session_setup_allowed(*e))
			strv_add(&ss->env, *e);
	}
	if (session_getenv(s, "TERM") == NULL)
		strv_setenv(&ss->env, "TERM", pty ? "xterm-256color" :
		    "dumb");
	for (i = 0; i < a->env.n; i++) {
		char *eq = strchr(a->env.v[i], '=');

		if (eq == NULL)
			continue;
		*eq = '\0';
		strv_setenv(&ss->env, a->env.v[i], eq + 1);
		*eq = '=';
	}
	strv_setenv(&ss->env, "HOME", ss->home);
	strv_setenv(&ss->env, "USER", user);
	strv_setenv(&ss->env, "LOGNAME", user);
	strv_setenv(&ss->env, "SHELL", ss->shell);
	buf_init(&b);
	for (i = 0; i < ss->path.n; i++)
		buf_printf(&b, "%s:", ss->path.v[i]);
	buf_adds(&b, SESSION_PATH);
	strv_setenv(&ss->env, "PATH", b.data);
	buf_free(&b);
	/* The only door out: every client that honours a proxy finds it. */
	proxy = xprintf("http://127.0.0.1:%d", port);
	strv_setenv(&ss->env, "HTTP_PROXY", proxy);
	strv_setenv(&ss->env, "HTTPS_PROXY", proxy);
	strv_setenv(&ss->env, "ALL_PROXY", proxy);
	strv_setenv(&ss->env, "http_proxy", proxy);
	strv_setenv(&ss->env, "https_proxy", proxy);
	strv_setenv(&ss->env, "all_proxy", proxy);
	free(proxy);
}

/* A missing entry is a file if its name has an extension (".claude.json"). */
static bool
session_setup_looks_file(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base != NULL ? base + 1 : path;
	if (*base == '.')
		base++;
	return strchr(base, '.') != NULL;
}

static int
session_setup_copy(const char *from, const char *to, mode_t mode,
    char **cause)
{
	struct buf b;
	int rc;

	buf_init(&b);
	if (buf_read_file(&b, from) == -1) {
		*cause = xprintf("cannot read %s: %s", from, strerror(errno));
		buf_free(&b);
		return -1;
	}
	rc = util_write_file_atomic(to, b.data != NULL ? b.data : "", b.len,
	    mode & 0777, cause);
	buf_free(&b);
	return rc;
}

static int
session_setup_mkdir(const char *path, char **cause)
{
	if (path_mkdir_p(path, 0700) == -1) {
		*cause = xprintf("cannot create %s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* True if PATH lies strictly under DIR. */
static bool
session_setup_below(const char *path, const char *dir)
{
	return strcmp(path, dir) != 0 && session_setup_under(path, dir);
}

/*
 * A file entry under HOME: the session's copy (if the host has the file)
 * is put into the jail's HOME as a plain file once the jail is made, and
 * taken back when it ends (session-files.c); missing files count too.
 */
static int
session_setup_home_file(struct session_setup *ss, const char *base,
    const char *path, bool exists, const struct stat *st, char **cause)
{
	char *copy;

	if (session_setup_mkdir(base, cause) == -1)
		return -1;
	if (exists) {
		copy = xprintf("%s/file", base);
		if (session_setup_copy(path, copy, st->st_mode, cause) == -1) {
			free(copy);
			return -1;
		}
		free(copy);
	}
	strv_add(&ss->hf_rel, path + strlen(ss->home) + 1);
	strv_add(&ss->hf_base, base);
	return 0;
}

/* A file entry elsewhere: the session's copy is bound over it, read-write. */
static int
session_setup_bound_file(struct session_setup *ss, const char *base,
    const char *path, const struct stat *st, char **cause)
{
	if (session_setup_mkdir(base, cause) == -1)
		return -1;
	strv_addf(&ss->file_srcs, "%s/file", base);
	if (session_setup_copy(path, ss->file_srcs.v[ss->file_srcs.n - 1],
	    st->st_mode, cause) == -1)
		return -1;
	strv_add(&ss->file_paths, path);
	return 0;
}

/* One config_dir entry: an overlay for a directory, a private copy for a file. */
static int
session_setup_overlay(struct session_setup *ss, size_t n, const char *path,
    bool file, struct buf *manifest, char **cause)
{
	char *base = xprintf("%s/overlay/%zu", ss->dir, n);
	struct stat st;
	bool exists = stat(path, &st) == 0;
	int rc = -1;

	if (exists && st.st_uid != getuid()) {
		/* Copy-up of files we cannot map fails (EOVERFLOW): leave it out. */
		strv_addf(&ss->notices, "%s is not yours (uid %lu); it is not "
		    "shown in the jail", path, (unsigned long)st.st_uid);
		rc = 0;
		goto out;
	}
	if (file && exists && !S_ISREG(st.st_mode)) {
		strv_addf(&ss->notices, "%s is not a regular file; it is not "
		    "shown in the jail", path);
		rc = 0;
		goto out;
	}
	if (file) {
		if (session_setup_below(path, ss->home))
			rc = session_setup_home_file(ss, base, path, exists,
			    &st, cause);
		else if (exists)
			rc = session_setup_bound_file(ss, base, path, &st,
			    cause);
		else {
			strv_addf(&ss->notices, "%s does not exist and is "
			    "outside your home directory; it is not shown in "
			    "the jail", path);
			rc = 0;
			goto out;
		}
		if (rc == 0)
			rc = snap_confdiff_base(path, base, true, cause);
		if (rc == 0)
			buf_printf(manifest, "%zu\tfile\t%s\n", n, path);
		goto out;
	}
	if (exists && !S_ISDIR(st.st_mode)) {
		rc = 0;
		goto out;
	}
	strv_addf(&ss->ov_upper, "%s/upper", base);
	strv_addf(&ss->ov_work, "%s/work", base);
	strv_add(&ss->ov_path, path);
	/* A dir the host does not have yet: the lower layer is an empty one. */
	if (!exists)
		strv_addf(&ss->ov_lower, "%s/lower", base);
	else
		strv_add(&ss->ov_lower, path);
	if (session_setup_mkdir(ss->ov_upper.v[ss->ov_upper.n - 1],
	    cause) == -1 || session_setup_mkdir(ss->ov_work.v[ss->ov_work.n -
	    1], cause) == -1 || (!exists && session_setup_mkdir(
	    ss->ov_lower.v[ss->ov_lower.n - 1], cause) == -1) ||
	    snap_confdiff_base(path, base, false, cause) == -1)
		goto out;
	buf_printf(manifest, "%zu\tdir\t%s\n", n, path);
	rc = 0;
out:
	free(base);
	return rc;
}

/* Whether entry PATH is a file: what it is on the host, else its name says. */
static bool
session_setup_is_file(const char *path)
{
	struct stat st;

	if (stat(path, &st) == 0)
		return !S_ISDIR(st.st_mode);
	return session_setup_looks_file(path);
}

/* The profile's config_dir entries, expanded; -1 with *CAUSE for a relative one. */
static int
session_setup_entries(const struct config_agent *a, struct strv *paths,
    char **cause)
{
	char *path;
	size_t i, len;

	for (i = 0; i < a->config_dirs.n; i++) {
		path = path_expand_home(a->config_dirs.v[i]);
		len = strlen(path);
		while (len > 1 && path[len - 1] == '/')
			path[--len] = '\0';
		if (*path != '/') {
			*cause = xprintf("config_dir %s of agent %s is not an "
			    "absolute path or ~/...", a->config_dirs.v[i],
			    a->name);
			free(path);
			return -1;
		}
		strv_add(paths, path);
		free(path);
	}
	return 0;
}

/* A file entry inside a dir entry is already captured by that dir's overlay. */
static bool
session_setup_covered(const struct strv *paths, const bool *file, size_t i)
{
	size_t j;

	for (j = 0; j < paths->n; j++) {
		if (j != i && !file[j] && session_setup_below(paths->v[i],
		    paths->v[j]))
			return true;
	}
	return false;
}

/* The profile's config dirs, and the manifest the config-diff review reads. */
int
session_setup_overlays(struct session_setup *ss, const struct config_agent *a,
    char **cause)
{
	struct strv paths;
	struct buf manifest;
	char *mpath;
	bool *file = NULL;
	size_t i;
	int rc = -1;

	if (a->config_dirs.n == 0)
		return 0;
	buf_init(&manifest);
	strv_init(&paths);
	if (session_setup_entries(a, &paths, cause) == -1)
		goto out;
	file = xcalloc(paths.n, sizeof *file);
	for (i = 0; i < paths.n; i++)
		file[i] = session_setup_is_file(paths.v[i]);
	for (i = 0; i < paths.n; i++) {
		if (file[i] && session_setup_covered(&paths, file, i))
			continue;
		if (session_setup_overlay(ss, i, paths.v[i], file[i],
		    &manifest, cause) == -1)
			goto out;
	}
	mpath = xprintf("%s/overlays", ss->dir);
	rc = util_write_file_atomic(mpath, manifest.data != NULL ?
	    manifest.data : "", manifest.len, 0600, cause);
	free(mpath);
out:
	free(file);
	strv_free(&paths);
	buf_free(&manifest);
	return rc;
}

void
session_setup_init(struct session_setup *ss)
{
	memset(ss, 0, sizeof *ss);
	strv_init(&ss->env);
	strv_init(&ss->binds);
	strv_init(&ss->at_path);
	strv_init(&ss->at_src);
	strv_init(&ss->at_rw);
	strv_init(&ss->path);
	strv_init(&ss->ov_path);
	strv_init(&ss->ov_lower);
	strv_init(&ss->ov_upper);
	strv_init(&ss->ov_work);
	strv_init(&ss->file_paths);
	strv_init(&ss->file_srcs);
	strv_init(&ss->hf_rel);
	strv_init(&ss->hf_base);
	strv_init(&ss->notices);
	strv_init(&ss->alerts);
	strv_init(&ss->protect);
}

void
session_setup_free(struct session_setup *ss)
{
	strv_free(&ss->env);
	strv_free(&ss->binds);
	strv_free(&ss->at_path);
	strv_free(&ss->at_src);
	strv_free(&ss->at_rw);
	free(ss->sealed);
	strv_free(&ss->path);
	strv_free(&ss->ov_path);
	strv_free(&ss->ov_lower);
	strv_free(&ss->ov_upper);
	strv_free(&ss->ov_work);
	strv_free(&ss->file_paths);
	strv_free(&ss->file_srcs);
	strv_free(&ss->hf_rel);
	strv_free(&ss->hf_base);
	strv_free(&ss->notices);
	strv_free(&ss->alerts);
	strv_free(&ss->protect);
	free(ss->overlays);
	free(ss->jbinds);
	free(ss->dir);
}

void
session_setup_move_overlays(struct session_setup *sp, const char *from,
    const char *to, const char *keep)
{
	size_t i, n = strlen(from), k = keep != NULL ? strlen(keep) : 0;
	const char *ov;

	for (i = 0; i < sp->ov_path.n; i++) {
		ov = sp->ov_path.v[i];
		if (strncmp(ov, from, n) != 0 || (ov[n] != '/' && ov[n] !=
		    '\0') || (keep != NULL && ov[n] == '/' && strncmp(ov +
		    n + 1, keep, k) == 0 && ov[n + 1 + k] == '/'))
			continue;
		ov = xprintf("%s%s", to, ov + n);
		free(sp->ov_path.v[i]);
		sp->ov_path.v[i] = (char *)ov;
	}
}

/* Fills the jail's overlay and bind arrays from the lists (which must outlive them). */
void
session_setup_jail(struct session_setup *ss, struct jail_conf *jc)
{
	size_t i, n;

	ss->overlays = xcalloc(ss->ov_path.n + 1, sizeof *ss->overlays);
	for (i = 0; i < ss->ov_path.n; i++) {
		ss->overlays[i].path = ss->ov_path.v[i];
		ss->overlays[i].lower = ss->ov_lower.v[i];
		ss->overlays[i].upper = ss->ov_upper.v[i];
		ss->overlays[i].work = ss->ov_work.v[i];
	}
	jc->overlays = ss->overlays;
	jc->noverlays = ss->ov_path.n;
	n = ss->binds.n + ss->file_paths.n + ss->at_path.n;
	ss->jbinds = xcalloc(n + 1, sizeof *ss->jbinds);
	for (i = 0; i < ss->binds.n; i++)
		ss->jbinds[i].path = ss->binds.v[i];
	for (i = 0; i < ss->file_paths.n; i++) {
		ss->jbinds[ss->binds.n + i].path = ss->file_paths.v[i];
		ss->jbinds[ss->binds.n + i].src = ss->file_srcs.v[i];
		ss->jbinds[ss->binds.n + i].rw = true;
	}
	for (i = 0; i < ss->at_path.n; i++) {
		ss->jbinds[n - ss->at_path.n + i].path = ss->at_path.v[i];
		ss->jbinds[n - ss->at_path.n + i].src = ss->at_src.v[i];
		ss->jbinds[n - ss->at_path.n + i].rw =
		    strcmp(ss->at_rw.v[i], "rw") == 0;
	}
	jc->binds = ss->jbinds;
	jc->nbinds = n;
	jc->sealed = ss->sealed;
	jc->gitdir_at = ss->gitdir_at;
}
