/*
 * Nested repositories a jailed command planted or changed: git on the host
 * obeys their config (a `git status` in the project runs a submodule's
 * core.fsmonitor; a commit in it runs its hooks), so settings that run
 * commands are taken out, and hooks moved out, into the session's
 * quarantine dir.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fts.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "store/snap-int.h"

/* Config keys (git's lower-cased form, globs over subsections) whose values git runs or obeys as commands. */
static const char *const snap_nested_keys[] = {
	"core.fsmonitor", "core.hookspath", "core.sshcommand", "core.editor",
	"core.pager", "core.askpass", "core.gitproxy",
	"core.alternaterefscommand", "core.worktree", "sequence.editor",
	"diff.external", "diff.*.command", "diff.*.textconv", "merge.*.driver",
	"filter.*", "credential.helper", "credential.*.helper", "gpg.program",
	"gpg.*.program", "uploadpack.packobjectshook", "include.path",
	"includeif.*.path", "alias.*", "pager.*", "interactive.difffilter",
	"difftool.*.cmd", "mergetool.*.cmd", "man.*.cmd", "browser.*.cmd",
	"web.browser", "remote.*.uploadpack", "remote.*.receivepack",
	"remote.*.vcs", "protocol.allow", "protocol.*.allow", "url.*.insteadof",
	"url.*.pushinsteadof", "submodule.*.update", "receive.procreceiverefs",
	"sendemail.*",
};

struct snap_nested {
	int64_t since;            /* ms: changes from then on count */
	const char *quarantine;
	struct strv *messages;
	int n;                    /* files moved into the quarantine so far */
};

static bool
snap_nested_bool(const char *v)
{
	static const char *const words[] = { "true", "false", "yes", "no",
	    "on", "off", "1", "0", "" };
	size_t i;

	for (i = 0; i < nitems(words); i++) {
		if (strcasecmp(v, words[i]) == 0)
			return true;
	}
	return false;
}

/* True if KEY = VALUE makes git run something or look elsewhere. */
static bool
snap_nested_dangerous(const char *key, const char *value)
{
	size_t i;

	/* A boolean fsmonitor is git's own daemon; aliases and updates run only with '!'. */
	if (strcmp(key, "core.fsmonitor") == 0)
		return !snap_nested_bool(value);
	if (strncmp(key, "alias.", 6) == 0 || (strncmp(key, "submodule.", 10) ==
	    0 && strlen(key) > 7 && strcmp(key + strlen(key) - 7, ".update") ==
	    0))
		return value[strspn(value, " \t")] == '!';
	for (i = 0; i < nitems(snap_nested_keys); i++) {
		if (util_glob_match(snap_nested_keys[i], key, false))
			return true;
	}
	return false;
}

static bool
snap_nested_changed(const char *path, int64_t since)
{
	struct stat sb;

	/* ctime: a command can set a file's mtime back, never its ctime. */
	return lstat(path, &sb) == 0 && (int64_t)sb.st_ctim.tv_sec * 1000 +
	    sb.st_ctim.tv_nsec / 1000000 >= since;
}

/* Moves or copies PATH into the quarantine as "<n>-NAME"; the new path, or NULL. */
static char *
snap_nested_keep(struct snap_nested *nc, const char *path, bool move)
{
	const char *name = strrchr(path, '/') != NULL ? strrchr(path, '/') + 1 :
	    path;
	char *to = xprintf("%s/%d-%s", nc->quarantine, ++nc->n, name);
	char *cause = NULL;

	if (path_mkdir_p(nc->quarantine, 0700) == 0 && (move ?
	    rename(path, to) : snap_copy_file(path, to, &cause)) == 0)
		return to;
	free(cause);
	free(to);
	return NULL;
}

/* Lists CONFIG as NUL-separated "key\nvalue" entries, without following includes. */
static int
snap_nested_list(const char *config, struct buf *out)
{
	char *argv[] = { "git", "config", "--file", (char *)config, "--null",
	    "--list", NULL };
	char *cause = NULL;
	int st, rc;

	rc = snap_git_outside(argv, out, NULL, &st, &cause);
	free(cause);
	return rc == 0 && st == 0 ? 0 : -1;
}

static void
snap_nested_unset(const char *config, const char *key)
{
	char *argv[] = { "git", "config", "--file", (char *)config,
	    "--unset-all", (char *)key, NULL };
	char *cause = NULL;
	int st;

	if (snap_git_outside(argv, NULL, NULL, &st, &cause) == -1)
		free(cause);
}

/* Takes the settings that run commands out of CONFIG (a copy goes to the quarantine first). */
static void
snap_nested_config(struct snap_nested *nc, const char *repo,
    const char *config)
{
	struct buf b, list;
	struct strv keys, q;
	char *kept = NULL, *nl;
	size_t off, len, i;

	if (!snap_nested_changed(config, nc->since))
		return;
	buf_init(&b);
	strv_init(&keys);
	if (snap_nested_list(config, &b) == 0) {
		for (off = 0; off < b.len; off += len + 1) {
			len = strlen(b.data + off);
			if ((nl = strchr(b.data + off, '\n')) == NULL)
				continue;
			*nl = '\0';
			if (snap_nested_dangerous(b.data + off, nl + 1) &&
			    !strv_contains(&keys, b.data + off))
				strv_add(&keys, b.data + off);
			*nl = '\n';
		}
	}
	if (keys.n > 0 && (kept = snap_nested_keep(nc, config, false)) !=
	    NULL) {
		buf_init(&list);
		strv_init(&q);
		for (i = 0; i < keys.n; i++) {
			snap_nested_unset(config, keys.v[i]);
			buf_printf(&list, "%s%s", i == 0 ? "" : ", ",
			    quote_keep(&q, keys.v[i]));
		}
		strv_addf(nc->messages, "the nested repository %s had settings "
		    "that make git run commands (%s) in %s; they were removed "
		    "(the file as it was is %s)", quote_keep(&q, repo),
		    list.data, quote_keep(&q, config), quote_keep(&q, kept));
		strv_free(&q);
		buf_free(&list);
	}
	free(kept);
	strv_free(&keys);
	buf_free(&b);
}

/* Hooks written since the start are moved out: git would run them on the host. */
static void
snap_nested_hooks(struct snap_nested *nc, const char *repo,
    const char *gitdir)
{
	char *dir = xprintf("%s/hooks", gitdir), *path, *to;
	struct strv q;
	struct dirent *de;
	struct stat sb;
	DIR *d;

	if ((d = opendir(dir)) == NULL) {
		free(dir);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		path = xprintf("%s/%s", dir, de->d_name);
		if (de->d_name[0] != '.' && lstat(path, &sb) == 0 &&
		    !S_ISDIR(sb.st_mode) && snap_nested_changed(path, nc->since) &&
		    (strlen(de->d_name) < 7 || strcmp(de->d_name +
		    strlen(de->d_name) - 7, ".sample") != 0) &&
		    (to = snap_nested_keep(nc, path, true)) != NULL) {
			strv_init(&q);
			strv_addf(nc->messages, "the nested repository %s had a "
			    "new hook %s, which git would run; it was moved to "
			    "%s", quote_keep(&q, repo), quote_keep(&q, path),
			    quote_keep(&q, to));
			strv_free(&q);
			free(to);
		}
		free(path);
	}
	closedir(d);
	free(dir);
}

/* The git dir of the nested repository whose ".git" is DOTGIT. */
static char *
snap_nested_gitdir(const char *dotgit, bool isdir)
{
	char *dir, *rel, *real = NULL;
	struct buf b;

	if (isdir)
		return realpath(dotgit, NULL);
	buf_init(&b);
	if (buf_read_file(&b, dotgit) == 0 && b.data != NULL &&
	    strncmp(b.data, "gitdir: ", 8) == 0) {
		b.data[strcspn(b.data, "\r\n")] = '\0';
		dir = xstrndup(dotgit, (size_t)(strrchr(dotgit, '/') - dotgit));
		rel = b.data[8] == '/' ? xstrdup(b.data + 8) :
		    xprintf("%s/%s", dir, b.data + 8);
		real = realpath(rel, NULL);
		free(rel);
		free(dir);
	}
	buf_free(&b);
	return real;
}

static void
snap_nested_repo(struct snap_nested *nc, const char *dotgit, bool isdir)
{
	char *gitdir = snap_nested_gitdir(dotgit, isdir), *p, *common = NULL;
	char *repo = xstrndup(dotgit, strlen(dotgit) - strlen("/.git"));
	struct buf b;

	if (gitdir == NULL) {
		free(repo);
		return;
	}
	p = xprintf("%s/config", gitdir);
	snap_nested_config(nc, repo, p);
	free(p);
	p = xprintf("%s/config.worktree", gitdir);
	snap_nested_config(nc, repo, p);
	free(p);
	/* A commondir sends git to another dir's config. */
	buf_init(&b);
	p = xprintf("%s/commondir", gitdir);
	if (buf_read_file(&b, p) == 0 && b.data != NULL) {
		b.data[strcspn(b.data, "\r\n")] = '\0';
		common = b.data[0] == '/' ? xprintf("%s/config", b.data) :
		    xprintf("%s/%s/config", gitdir, b.data);
		snap_nested_config(nc, repo, common);
		free(common);
	}
	free(p);
	buf_free(&b);
	snap_nested_hooks(nc, repo, gitdir);
	free(gitdir);
	free(repo);
}

int
snap_nested_defuse(const char *project, int64_t since, const char *quarantine,
    struct strv *messages, char **cause)
{
	char *const roots[] = { (char *)project, NULL };
	struct snap_nested nc = { since, quarantine, messages, 0 };
	struct stat sb;
	FTSENT *e;
	FTS *fts;

	if ((fts = fts_open(roots, FTS_PHYSICAL | FTS_NOCHDIR, NULL)) == NULL) {
		*cause = xprintf("cannot read %s: %s", project, strerror(errno));
		return -1;
	}
	while ((e = fts_read(fts)) != NULL) {
		if (e->fts_level < 1 || strcmp(e->fts_name, ".git") != 0)
			continue;
		/* The project's own .git is the jail's to guard; nothing below a git dir is a work tree. */
		if (e->fts_info == FTS_D)
			fts_set(fts, e, FTS_SKIP);
		if (e->fts_level < 2)
			continue;
		if (e->fts_info == FTS_D || e->fts_info == FTS_F)
			snap_nested_repo(&nc, e->fts_path, e->fts_info == FTS_D);
		else if (e->fts_info == FTS_SL && stat(e->fts_path, &sb) == 0)
			snap_nested_repo(&nc, e->fts_path, S_ISDIR(sb.st_mode));
	}
	fts_close(fts);
	return 0;
}
