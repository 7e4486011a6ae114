/* Diffs between snapshots, or a snapshot and the working tree as it is now. */
#include <stdlib.h>
#include <string.h>

#include "store/snap-int.h"

/* The tree SPEC names: a snapshot, or (worktree, now) the tree as it is. */
static char *
snap_diff_tree(struct store *st, struct snap_repo *r, int64_t session,
    const char *spec, char **cause)
{
	struct store_snapshot *s;
	struct snap_take_opts o;
	struct snap_result res;
	char *tree;

	if (strcmp(spec, "worktree") == 0 || strcmp(spec, "now") == 0) {
		memset(&o, 0, sizeof o);
		o.session = session;
		if (snap_take_sync(st, r, &o, &res, cause) == -1)
			return NULL;
		tree = res.tree;
		res.tree = NULL;
		snap_result_clear(&res);
		return tree;
	}
	if ((s = snap_resolve(st, session, spec, NULL, cause)) == NULL)
		return NULL;
	tree = xstrdup(s->tree);
	store_snapshot_free(s);
	return tree;
}

int
snap_diff(struct store *st, const struct config *cf, int64_t session,
    const struct snap_diff_opts *o, char **cause)
{
	struct snap_repo *r;
	struct strv args;
	char *from = NULL, *to = NULL, *rel, *const *p;
	int rc = -1;

	strv_init(&args);
	if ((r = snap_session_repo(st, cf, session, "diff", cause)) == NULL)
		return -1;
	strv_add(&args, "diff");
	strv_add(&args, "--no-ext-diff");
	strv_add(&args, "-M");
	strv_add(&args, o->color ? "--color=always" : "--color=never");
	if (o->stat)
		strv_add(&args, "--stat");
	if ((from = snap_diff_tree(st, r, session, o->from != NULL ? o->from :
	    "start", cause)) == NULL || (to = snap_diff_tree(st, r, session,
	    o->to != NULL ? o->to : "worktree", cause)) == NULL)
		goto out;
	strv_add(&args, from);
	strv_add(&args, to);
	strv_add(&args, "--");
	for (p = o->paths; p != NULL && *p != NULL; p++) {
		if ((rel = snap_relpath(r->worktree, *p, cause)) == NULL)
			goto out;
		if (*rel == '\0') {
			free(rel);
			rel = xstrdup(".");
		}
		strv_take(&args, rel);
	}
	rc = snap_git_fd(r, SNAP_ENV_SHOW, (const char *const *)args.v,
	    o->out_fd, cause);
out:
	free(from);
	free(to);
	strv_free(&args);
	snap_repo_free(r);
	return rc;
}
