/*
 * Snapshots agentmux took before it had repositories of its own live in
 * the project's .git, under refs/agentmux/. They are brought into the own
 * repository once, the first time agentmux touches their session or
 * project: git fetch checks every object it receives against its id, and
 * each snapshot's commit must be there with its recorded tree. The
 * project's .git is read only, never written; its old refs stay until
 * the user removes them.
 */
#include <stdlib.h>
#include <string.h>

#include "snap/snap-int.h"

/* Fetches session ID's snapshot refs from the project's GITDIR into R; -1 with *CAUSE. */
static int
snap_legacy_fetch(struct snap_repo *r, const char *gitdir, int64_t id,
    size_t nsnaps, char **cause)
{
	char depth[32], chain[96], snaps[96];
	const char *args[] = { "-c", "fetch.fsckObjects=true", "-c",
	    "transfer.fsckObjects=true", "-c", "protocol.allow=never", "-c",
	    "protocol.file.allow=always", "fetch", "--no-tags",
	    "--no-write-fetch-head", "--no-recurse-submodules", "-q", depth,
	    gitdir, chain, snaps, NULL };

	/*
	 * A chain's first commit has the user's HEAD as its parent: the
	 * depth keeps the user's history out (a session's chain is no longer
	 * than its snapshots).
	 */
	snprintf(depth, sizeof depth, "--depth=%zu", nsnaps + 1);
	snprintf(chain, sizeof chain, "+refs/agentmux/sessions/%lld:"
	    "refs/agentmux/sessions/%lld", (long long)id, (long long)id);
	snprintf(snaps, sizeof snaps, "+refs/agentmux/snaps/%lld/*:"
	    "refs/agentmux/snaps/%lld/*", (long long)id, (long long)id);
	if (snap_git(r, SNAP_ENV_DB, args, NULL, NULL, cause) == 0)
		return 0;
	return -1;
}

/* Whether every snapshot of V is in R with the tree its record names. */
static int
snap_legacy_check(struct snap_repo *r, struct store_snapshot **v, size_t n,
    char **cause)
{
	struct strv args;
	struct buf out;
	size_t i;
	int rc = -1;

	strv_init(&args);
	strv_add(&args, "log");
	strv_add(&args, "--no-walk=unsorted");
	strv_add(&args, "--format=%H %T");
	for (i = 0; i < n; i++)
		strv_add(&args, v[i]->commit);
	buf_init(&out);
	if (snap_git(r, SNAP_ENV_DB, (const char *const *)args.v, NULL, &out,
	    cause) == -1)
		goto out;
	for (i = 0; i < n; i++) {
		char *line = xprintf("%s %s\n", v[i]->commit, v[i]->tree);

		if (out.data == NULL || strstr(out.data, line) == NULL) {
			*cause = xprintf("snapshot %zu (%.12s) did not come over "
			    "with the tree it was recorded with", i + 1,
			    v[i]->commit);
			free(line);
			goto out;
		}
		free(line);
	}
	rc = 0;
out:
	buf_free(&out);
	strv_free(&args);
	return rc;
}

int
snap_legacy_migrate(struct store *st, const struct config *cf, int64_t id,
    const struct store_snap_where *w, char **cause)
{
	struct store_snapshot **v;
	struct snap_repo *r;
	char *err = NULL;
	size_t n;
	int rc = -1;

	if ((r = snap_repo_open(w->worktree, cf, "legacy", cause)) == NULL)
		return -1;
	/* git reads the project's .git, where anything may be planted. */
	r->timeout = 300;
	v = store_snapshot_list(st, id, &n);
	if (n > 0 && (snap_legacy_fetch(r, w->gitdir, id, n, &err) == -1 ||
	    snap_legacy_check(r, v, n, &err) == -1))
		*cause = xprintf("the snapshots of session %lld are in %s, from "
		    "before agentmux kept its own, and could not be brought "
		    "over: %s", (long long)id, w->gitdir, err);
	else if (store_snap_repo_move(st, id, r->gitdir, cause) == 0) {
		store_event_add(st, id, "info", "snapshot", "the session's %zu "
		    "snapshot(s) were brought from %s into %s", n, w->gitdir,
		    r->gitdir);
		rc = 0;
	}
	free(err);
	store_snapshot_list_free(v, n);
	snap_repo_free(r);
	return rc;
}

int
snap_legacy_project(struct store *st, const struct config *cf,
    const char *worktree)
{
	struct store_snap_where w;
	int64_t *ids;
	char **gitdirs, *cause = NULL;
	size_t n, i;
	int failed = 0;

	store_snap_legacy_list(st, worktree, &ids, &gitdirs, &n);
	for (i = 0; i < n; i++) {
		w.gitdir = gitdirs[i];
		w.worktree = (char *)worktree;
		w.shadow = false;
		if (snap_legacy_migrate(st, cf, ids[i], &w, &cause) == -1) {
			log_warnx("%s", cause);
			store_event_add(st, ids[i], "warn", "snapshot", "%s",
			    cause);
			free(cause);
			cause = NULL;
			failed++;
		}
		free(gitdirs[i]);
	}
	free(ids);
	free(gitdirs);
	return failed;
}
