/* gc: the snapshot refs of deleted sessions, and own repositories nobody uses any more. */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "snap/snap-int.h"

/* A shadow used more recently than this may belong to a snapshot being recorded now. */
#define SNAP_GC_SHADOW_GRACE ((int64_t)3600 * 1000)

/*
 * An own repository's config names the project's path (core.worktree, as
 * git init writes it), and git refuses every command in a repository whose
 * core.worktree is gone ("Invalid path"): a discarded worktree session's,
 * a moved or deleted project's. Every git agentmux runs there with a
 * work tree is told it (GIT_WORK_TREE), so the name goes; failing that,
 * the git that follows says what is wrong.
 */
static void
snap_gc_unpin(const char *gitdir)
{
	char *config = xprintf("%s/config", gitdir), *cause = NULL;
	const char *args[] = { "config", "--file", config, "--unset-all",
	    "core.worktree", NULL };

	/* Outside any repository: this one's own config would stop it. */
	if (snap_git_plain_io(NULL, args, NULL, NULL, &cause) == -1)
		free(cause); /* Exit 5: it had none. */
	free(config);
}

/* Deletes session ID's chain ref and the refs of each of its snapshots, in one go. */
static int
snap_gc_session_refs(const char *gitdir, int64_t id, char **cause)
{
	const char *update[] = { "update-ref", "--stdin", NULL };
	char prefix[64];
	const char *list[] = { "for-each-ref", "--format=delete %(refname)",
	    prefix, NULL };
	struct buf in;
	int rc;

	snprintf(prefix, sizeof prefix, "refs/agentmux/snaps/%lld/",
	    (long long)id);
	snap_gc_unpin(gitdir);
	buf_init(&in);
	buf_printf(&in, "delete refs/agentmux/sessions/%lld\n", (long long)id);
	rc = snap_git_plain_io(gitdir, list, NULL, &in, cause);
	if (rc == 0)
		rc = snap_git_plain_io(gitdir, update, &in, NULL, cause);
	buf_free(&in);
	return rc;
}

/* Whether GITDIR is one of agentmux's own repositories (not a project's .git). */
static bool
snap_gc_own(const char *gitdir)
{
	char *p = xprintf("%s/agentmux-project", gitdir);
	bool own = access(p, F_OK) == 0;

	free(p);
	return own;
}

static int
snap_gc_refs(struct store *st)
{
	int64_t *ids;
	char **gitdirs, *cause = NULL;
	size_t n, i;
	int done = 0;

	store_snap_orphans(st, &ids, &gitdirs, &n);
	for (i = 0; i < n; i++) {
		if (access(gitdirs[i], F_OK) != 0 || !snap_gc_own(gitdirs[i]))
			; /* Gone; or a project's own .git, never written. */
		else if (snap_gc_session_refs(gitdirs[i], ids[i], &cause) == 0)
			done++;
		else {
			log_warnx("cannot delete the snapshot refs of session "
			    "%lld in %s: %s", (long long)ids[i], gitdirs[i],
			    cause);
			free(cause);
			cause = NULL;
			free(gitdirs[i]);
			continue;
		}
		store_snap_orphan_forget(st, ids[i]);
		free(gitdirs[i]);
	}
	free(ids);
	free(gitdirs);
	return done;
}

static void
snap_gc_shadows(struct store *st)
{
	char *data, *dir, *p, *m, *cause = NULL;
	struct dirent *de;
	struct stat sb;
	DIR *d;

	if ((data = path_data_dir(&cause)) == NULL) {
		free(cause);
		return;
	}
	dir = xprintf("%s/shadow", data);
	if ((d = opendir(dir)) != NULL) {
		while ((de = readdir(d)) != NULL) {
			if (de->d_name[0] == '.')
				continue;
			p = xprintf("%s/%s", dir, de->d_name);
			m = xprintf("%s/agentmux-project", p);
			if ((lstat(m, &sb) == -1 || (int64_t)sb.st_mtime * 1000 <
			    util_now_ms() - SNAP_GC_SHADOW_GRACE) &&
			    !store_snap_gitdir_used(st, p) && path_remove_tree(p) == -1)
				log_warn("cannot remove %s", p);
			free(m);
			free(p);
		}
		closedir(d);
	}
	free(dir);
	free(data);
}

/* Every own repository still in use: packed, pruned, within its budget. */
static void
snap_gc_keep(struct store *st, const struct config *cf, struct strv *messages)
{
	char **gitdirs, **worktrees, *cause = NULL;
	size_t n, i;

	store_snap_keep_repos(st, &gitdirs, &worktrees, &n);
	for (i = 0; i < n; i++) {
		if (snap_gc_own(gitdirs[i]))
			snap_gc_unpin(gitdirs[i]);
		if (snap_keep_sync(st, cf, gitdirs[i], worktrees[i], true,
		    messages, &cause) == -1) {
			strv_take(messages, xprintf("cannot pack %s: %s",
			    gitdirs[i], cause));
			free(cause);
			cause = NULL;
		}
		free(gitdirs[i]);
		free(worktrees[i]);
	}
	free(gitdirs);
	free(worktrees);
}

int
snap_gc(struct store *st, const struct config *cf, struct strv *messages,
    char **cause)
{
	int n;

	n = snap_gc_refs(st);
	snap_gc_shadows(st);
	snap_gc_keep(st, cf, messages);
	return n;
}
