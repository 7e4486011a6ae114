/* Worktree sessions from the command line: the options every command that starts a session shares. */
#include <sys/stat.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "cli.h"
#include "session/session.h"
#include "snap/snap.h"
#include "store/store.h"

/* NAME of a branch agentmux/ID/NAME: letters, digits, '.', '_', '-'. */
static bool
cmd_worktree_name_ok(const char *name)
{
	const char *p;

	if (*name == '\0' || *name == '.' || *name == '-' ||
	    strlen(name) > 100 || strstr(name, "..") != NULL ||
	    strstr(name, ".lock") != NULL)
		return false;
	for (p = name; *p != '\0'; p++) {
		if (!(*p >= 'a' && *p <= 'z') && !(*p >= 'A' && *p <= 'Z') &&
		    !(*p >= '0' && *p <= '9') && strchr("._-", *p) == NULL)
			return false;
	}
	return true;
}

int
cmd_worktree_opts(const char *cmd, struct cli_args *args,
    struct session_opts *o)
{
	o->worktree = cli_has(args, "worktree");
	o->shared = cli_has(args, "shared");
	o->base = cli_get(args, "base");
	o->branch = cli_get(args, "branch");
	if (!o->worktree && (o->base != NULL || o->branch != NULL)) {
		cli_usage_error(cmd, "--%s goes with --worktree", o->base !=
		    NULL ? "base" : "branch");
		return -1;
	}
	if (o->worktree && o->shared) {
		cli_usage_error(cmd, "--worktree and --shared exclude each "
		    "other: a worktree is a tree of its own");
		return -1;
	}
	if (o->branch != NULL && !cmd_worktree_name_ok(o->branch)) {
		cli_usage_error(cmd, "bad --branch '%s': give a name of "
		    "letters, digits, '.', '_' and '-' (the branch is "
		    "agentmux/ID/NAME)", o->branch);
		return -1;
	}
	return 0;
}

/* Opens the store, resolves SPEC and finds its worktree; 0, or the exit code. */
static int
cmd_worktree_open(const char *cmd, const char *spec, int64_t *id,
    bool *live, struct snap_worktree *wt, char **root)
{
	struct store_session *rec;
	struct store *st;
	char *data, *cause = NULL;
	int rc = 1;

	if ((st = cli_open_store()) == NULL)
		return 1;
	if (cli_resolve_session(st, spec, id) == -1)
		goto out;
	rec = store_session_get(st, *id);
	*live = rec != NULL && store_session_live(rec);
	store_session_free(rec);
	if ((data = path_data_dir(&cause)) == NULL ||
	    snap_worktree_find(data, *id, wt, root, &cause) == -1)
		cli_error("%s: %s", cmd, cause);
	else
		rc = 0;
	free(data);
	free(cause);
out:
	store_close(st);
	return rc;
}

int
cmd_merge(struct cli_args *args)
{
	enum snap_worktree_how how = SNAP_WORKTREE_MERGE;
	struct config *cf;
	struct snap_worktree wt;
	char *root = NULL, *done = NULL, *cause = NULL;
	int64_t id;
	bool live;
	int rc;

	if (cli_has(args, "squash") && cli_has(args, "apply"))
		return cli_usage_error("merge", "give --squash or --apply, not "
		    "both");
	if (cli_has(args, "squash"))
		how = SNAP_WORKTREE_SQUASH;
	else if (cli_has(args, "apply"))
		how = SNAP_WORKTREE_APPLY;
	if ((rc = cmd_worktree_open("merge", args->argv[0], &id, &live, &wt,
	    &root)) != 0)
		return rc;
	if (live)
		out_printf(stderr, "agentmux: session %lld still runs: what "
		    "it commits from now on is not in this merge\n",
		    (long long)id);
	if ((cf = cli_load_config()) == NULL) {
		free(root);
		snap_worktree_clear(&wt);
		return 1;
	}
	if (snap_worktree_merge(&wt, id, how, cli_get(args, "into"),
	    &cf->limits, &done, &cause) == -1) {
		cli_error("merge: %s", cause);
		rc = 1;
	} else
		out_printf(stdout, "%s\n", done);
	free(done);
	free(cause);
	free(root);
	snap_worktree_clear(&wt);
	config_free(cf);
	return rc;
}

/* Asks on the terminal; false unless the answer is yes. */
static bool
cmd_worktree_confirm(const struct snap_worktree *wt, int merged)
{
	char line[16];

	out_printf(stderr, "discard the worktree %s and branch %s%s? "
	    "(its snapshots stay: 'restore' brings it back) [y/N] ", wt->path, wt->branch,
	    merged == 1 ? " (merged)" : ", NOT merged");
	if (fgets(line, sizeof line, stdin) == NULL)
		return false;
	return line[0] == 'y' || line[0] == 'Y';
}

int
cmd_discard(struct cli_args *args)
{
	struct config *cf = NULL;
	struct snap_worktree wt;
	char *root = NULL, *cause = NULL;
	int64_t id;
	bool live;
	int rc, merged;

	if ((rc = cmd_worktree_open("discard", args->argv[0], &id, &live,
	    &wt, &root)) != 0)
		return rc;
	merged = snap_worktree_merged(&wt, NULL);
	if (live) {
		cli_error("discard: session %lld still runs; end it first",
		    (long long)id);
		rc = 1;
	} else if (!cli_has(args, "yes") && !isatty(STDIN_FILENO)) {
		cli_error("discard: not on a terminal to confirm; pass --yes "
		    "to discard session %lld's worktree and branch %s%s",
		    (long long)id, wt.branch, merged == 1 ? "" :
		    " (not merged)");
		rc = 1;
	} else if (!cli_has(args, "yes") && !cmd_worktree_confirm(&wt,
	    merged)) {
		out_printf(stderr, "nothing discarded\n");
		rc = 1;
	} else if ((cf = cli_load_config()) == NULL)
		rc = 1;
	else if (snap_worktree_discard(&wt, root, cf->snapshots.max_size,
	    cli_has(args, "no-keep"), &cause) == -1) {
		cli_error("discard: %s", cause);
		rc = 1;
	} else
		out_printf(stdout, "discarded the worktree and branch %s of "
		    "session %lld; its snapshots stay: 'agentmux diff %lld' "
		    "shows them, and 'agentmux restore %lld' brings the "
		    "worktree and branch back\n", wt.branch, (long long)id,
		    (long long)id, (long long)id);
	config_free(cf);
	free(cause);
	free(root);
	snap_worktree_clear(&wt);
	return rc;
}

/*
 * A worktree session's whose worktree is not there: "BRANCH, discarded",
 * from the record discard kept, else why there is none.
 */
static char *
cmd_worktree_gone(const char *data, const struct store_session *s)
{
	struct snap_worktree kept;
	char *tip = NULL, *cause = NULL, *text;

	if (snap_worktree_kept(data, s->id, &kept, &tip, &cause) == -1) {
		free(cause);
		return xstrdup(snap_worktree_absent(s->ended_at == 0,
		    s->nsnapshots));
	}
	text = xprintf("%s, discarded", kept.branch);
	free(tip);
	snap_worktree_clear(&kept);
	return text;
}

/*
 * For a worktree session (its project under the data dir's worktrees/):
 * "BRANCH, merged" or "BRANCH, unmerged" (into the main tree's HEAD), or
 * "BRANCH, discarded" (without a record of its branch, "discarded", or
 * why it has none: snap_worktree_absent); NULL
 * for any other session. Caller frees (and quotes: BRANCH is as read).
 */
char *
cmd_worktree_describe(const struct store_session *s)
{
	struct snap_worktree wt;
	char *data, *under, *root = NULL, *cause = NULL, *text = NULL;
	int merged;

	if ((data = path_data_dir(&cause)) == NULL) {
		free(cause);
		return NULL;
	}
	under = xprintf("%s/worktrees/", data);
	if (s->project == NULL || strncmp(s->project, under,
	    strlen(under)) != 0)
		goto out;
	if (snap_worktree_find(data, s->id, &wt, &root, &cause) == -1) {
		text = cmd_worktree_gone(data, s);
		goto out;
	}
	merged = snap_worktree_merged(&wt, NULL);
	text = xprintf("%s, %s", wt.branch, merged == 1 ? "merged" :
	    merged == 0 ? "unmerged" : "merged?");
	snap_worktree_clear(&wt);
out:
	free(cause);
	free(root);
	free(under);
	free(data);
	return text;
}

/*
 * What gc does with the worktree of session ID (its record REC, or NULL
 * if gc forgot it already): nothing while it runs or if it ended since
 * CUTOFF; else it goes with its branch if merged (or FORCE), and is kept,
 * and said so, if not: 1 then (its record must stay too), else 0.
 */
static int
cmd_worktree_gc_one(int64_t id, const struct store_session *rec,
    int64_t cutoff, bool force, bool dry, int64_t pack_max, const char *data)
{
	struct snap_worktree wt;
	char *root = NULL, *cause = NULL;
	int merged, kept = 0;

	if (rec != NULL && (strcmp(rec->state, "running") == 0 ||
	    (rec->ended_at != 0 ? rec->ended_at : rec->started_at) >= cutoff))
		return 0;
	if (snap_worktree_find(data, id, &wt, &root, &cause) == -1) {
		out_printf(stdout, "kept the worktree of session %lld: %s\n",
		    (long long)id, cause);
		free(cause);
		return 1;
	}
	merged = snap_worktree_merged(&wt, NULL);
	if (merged != 1 && !force) {
		out_printf(stdout, "kept the worktree %s of session %lld: its "
		    "branch %s is %s; merge or discard it, or gc --force\n",
		    wt.path, (long long)id, wt.branch, merged == 0 ?
		    "not merged" : "perhaps not merged (git cannot tell)");
		kept = 1;
	} else if (dry)
		out_printf(stdout, "would remove the worktree %s and branch "
		    "%s of session %lld%s\n", wt.path, wt.branch,
		    (long long)id, merged == 1 ? " (merged)" : " (NOT merged)");
	else if (snap_worktree_discard(&wt, root, pack_max, false,
	    &cause) == -1) {
		out_printf(stdout, "kept the worktree %s of session %lld: %s\n",
		    wt.path, (long long)id, cause);
		free(cause);
		kept = 1;
	} else
		out_printf(stdout, "removed the worktree %s and branch %s of "
		    "session %lld%s\n", wt.path, wt.branch, (long long)id,
		    merged == 1 ? " (merged)" : " (NOT merged: --force)");
	free(root);
	snap_worktree_clear(&wt);
	return kept;
}

/* Whether a live session's project lies in DIR: its start may be about to record it. */
static bool
cmd_worktree_dir_live(struct store *st, const char *dir)
{
	struct store_session **v;
	size_t i, n, len = strlen(dir);
	bool live = false;

	v = store_session_list(st, true, &n);
	for (i = 0; i < n && !live; i++) {
		live = v[i]->project != NULL && strncmp(v[i]->project, dir,
		    len) == 0 && (v[i]->project[len] == '/' ||
		    v[i]->project[len] == '\0') && store_session_live(v[i]);
	}
	store_session_list_free(v, n);
	return live;
}

/*
 * A worktree dir of ours with no session record (its start failed before
 * writing it): said, and removed with FORCE (never through a link), once
 * it is older than CUTOFF and no live session is in it.
 */
static void
cmd_worktree_gc_orphan(struct store *st, const char *dir, int64_t cutoff,
    bool force, bool dry)
{
	struct stat sb;
	char *q;

	if (lstat(dir, &sb) == -1 || !S_ISDIR(sb.st_mode) ||
	    (int64_t)sb.st_mtim.tv_sec * 1000 >= cutoff ||
	    cmd_worktree_dir_live(st, dir))
		return;
	q = quote_name(dir);
	if (!force)
		out_printf(stdout, "kept the worktree dir %s: it has no session "
		    "record (its session's start failed); gc --force removes "
		    "it\n", q);
	else if (dry)
		out_printf(stdout, "would remove the worktree dir %s (no "
		    "session record)\n", q);
	else if (path_remove_tree(dir) == -1)
		out_printf(stdout, "kept the worktree dir %s: cannot remove "
		    "it: %s\n", q, strerror(errno));
	else
		out_printf(stdout, "removed the worktree dir %s (no session "
		    "record); git worktree prune in its project forgets it "
		    "there too\n", q);
	free(q);
}

int
cmd_worktree_gc(struct store *st, int64_t cutoff, bool force, bool dry,
    int64_t pack_max, int64_t **keep, size_t *nkeep)
{
	struct store_session *rec;
	struct strv orphans;
	char *data, *cause = NULL;
	int64_t *ids;
	size_t n, i;

	*keep = NULL;
	*nkeep = 0;
	if ((data = path_data_dir(&cause)) == NULL) {
		cli_error("gc: %s", cause);
		free(cause);
		return -1;
	}
	snap_worktree_sessions(data, &ids, &n);
	for (i = 0; i < n; i++) {
		rec = store_session_get(st, ids[i]);
		if (rec != NULL && store_session_live(rec)) {
			store_session_free(rec);
			continue;
		}
		if (cmd_worktree_gc_one(ids[i], rec, cutoff, force, dry,
		    pack_max, data) == 1) {
			*keep = xreallocarray(*keep, *nkeep + 1, sizeof **keep);
			(*keep)[(*nkeep)++] = ids[i];
		}
		store_session_free(rec);
	}
	free(ids);
	strv_init(&orphans);
	snap_worktree_orphans(data, &orphans);
	for (i = 0; i < orphans.n; i++)
		cmd_worktree_gc_orphan(st, orphans.v[i], cutoff, force, dry);
	strv_free(&orphans);
	free(data);
	return 0;
}

/* A worktree being remade for restore, on the command's own loop. */
struct cmd_restore {
	struct event_base *base;
	bool done;
	bool added;
	char *error;
};

static void
cmd_restore_made(void *arg, const struct snap_worktree_made *m,
    const char *error)
{
	struct cmd_restore *r = arg;

	r->done = true;
	r->added = m->added;
	if (error != NULL)
		r->error = xstrdup(error);
	event_base_loopbreak(r->base);
}

/* Session ID's worktree record beside it, as a session's start writes it. */
static int
cmd_restore_note(const char *root, int64_t id, const struct snap_worktree *wt,
    char **cause)
{
	char *path = xprintf("%s/session", root);
	char *text = xprintf("session=%lld\nproject=%s\nworktree=%s\n"
	    "branch=%s\nbase=%s\ncommon=%s\nadmin=%s\n", (long long)id,
	    wt->project, wt->path, wt->branch, wt->base, wt->common,
	    wt->admin);
	int rc;

	rc = util_write_file_atomic(path, text, strlen(text), 0600, cause);
	free(path);
	free(text);
	return rc;
}

/* Whether PROJECT still has its own .git directory (not a link). */
static bool
cmd_restore_project_ok(const char *project)
{
	char *git = xprintf("%s/.git", project);
	struct stat sb;
	bool ok;

	ok = lstat(git, &sb) == 0 && S_ISDIR(sb.st_mode);
	free(git);
	return ok;
}

/*
 * The checks before a restore: REC is a worktree session (its project
 * under DATA's worktrees/), ended, and its worktree discarded; its kept
 * record into *KEPT and *TIP. 0, or -1 said.
 */
static int
cmd_restore_check(const struct store_session *rec, const char *data,
    struct snap_worktree *kept, char **tip)
{
	char *under = xprintf("%s/worktrees/", data), *root = NULL;
	char *cause = NULL;
	struct snap_worktree wt;
	int rc = -1;

	if (rec->project == NULL || strncmp(rec->project, under,
	    strlen(under)) != 0)
		cli_error("restore: session %lld is not a worktree session "
		    "(it ran in %s itself); restore brings back the worktree "
		    "a 'discard' removed; 'agentmux undo %lld' puts files "
		    "back", (long long)rec->id, rec->project != NULL ?
		    rec->project : "?", (long long)rec->id);
	else if (store_session_live(rec))
		cli_error("restore: session %lld still runs; its worktree is "
		    "there", (long long)rec->id);
	else if (snap_worktree_find(data, rec->id, &wt, &root, &cause) == 0) {
		cli_error("restore: session %lld's worktree %s is there (not "
		    "discarded): nothing to restore; 'agentmux undo %lld "
		    "--to SNAP' puts its files back to a snapshot",
		    (long long)rec->id, wt.path, (long long)rec->id);
		snap_worktree_clear(&wt);
	} else if (snap_worktree_kept(data, rec->id, kept, tip, &cause) == -1)
		cli_error("restore: %s", cause);
	else if (strcmp(kept->path, rec->project) != 0) {
		cli_error("restore: the worktree record of session %lld names "
		    "%s, not its project %s; it is damaged", (long long)rec->id,
		    kept->path, rec->project);
		snap_worktree_clear(kept);
		free(*tip);
		*tip = NULL;
	} else if (!cmd_restore_project_ok(kept->project)) {
		cli_error("restore: the project repository %s of session %lld "
		    "is gone or moved (no .git directory there); put it back "
		    "where it was, then restore again; 'agentmux diff %lld' "
		    "shows the snapshots meanwhile", kept->project,
		    (long long)rec->id, (long long)rec->id);
		snap_worktree_clear(kept);
		free(*tip);
		*tip = NULL;
	} else
		rc = 0;
	free(cause);
	free(root);
	free(under);
	return rc;
}

/* The branch restore makes: --branch NAME, else the one discarded; NULL if bad (said). */
static char *
cmd_restore_branch(struct cli_args *args, int64_t id,
    const struct snap_worktree *kept)
{
	const char *name = cli_get(args, "branch");

	if (name == NULL)
		return xstrdup(kept->branch);
	if (!cmd_worktree_name_ok(name)) {
		cli_usage_error("restore", "bad --branch '%s': give a name of "
		    "letters, digits, '.', '_' and '-' (the branch is "
		    "agentmux/ID/NAME)", name);
		return NULL;
	}
	return xprintf("agentmux/%lld/%s", (long long)id, name);
}

/* Remakes KEPT's worktree on BRANCH at REF through the same code a session's start uses; 0, or -1 said. */
static int
cmd_restore_make(int64_t id, const struct snap_worktree *kept,
    const char *branch, const char *ref, const char *root,
    struct snap_worktree *wt)
{
	struct cmd_restore r;
	struct snap_worktree_make *m;
	char *cause = NULL;

	memset(&r, 0, sizeof r);
	if ((r.base = event_base_new()) == NULL) {
		cli_error("restore: cannot make an event loop");
		return -1;
	}
	m = snap_worktree_make_start(r.base, kept->project, kept->path, branch,
	    ref, root, wt, cmd_restore_made, &r, &cause);
	if (m == NULL) {
		r.done = true;
		r.error = cause;
		cause = NULL;
	}
	while (!r.done && event_base_loop(r.base, EVLOOP_ONCE) == 0)
		;
	event_base_free(r.base);
	if (r.error == NULL && r.done)
		return 0;
	cli_error("restore: cannot remake session %lld's worktree %s on %s "
	    "at %s: %s%s", (long long)id, kept->path, branch, ref,
	    r.error != NULL ? r.error : "interrupted", strstr(r.error != NULL ?
	    r.error : "", "already exists") != NULL ? "; the branch name is "
	    "taken: delete that branch, or pass --branch NAME" : "");
	free(r.error);
	return -1;
}

/* snap_worktree_restore_check for KEPT at TIP, into the data dir DATA; said if not. */
static int
cmd_restore_size_ok(const struct snap_worktree *kept, const char *tip,
    const char *data)
{
	struct config *cf;
	char *cause = NULL;
	int rc;

	if ((cf = cli_load_config()) == NULL)
		return -1;
	if ((rc = snap_worktree_restore_check(kept, tip, data, &cf->limits,
	    &cause)) == -1)
		cli_error("restore: %s", cause);
	free(cause);
	config_free(cf);
	return rc;
}

/* The files of snapshot TO (NULL: the last) put into the remade worktree by undo's code. */
static int
cmd_restore_files(struct store *st, int64_t id, const char *to)
{
	struct snap_undo_opts o;
	struct config *cf;
	char *cause = NULL;
	int rc;

	if ((cf = cli_load_config()) == NULL)
		return -1;
	memset(&o, 0, sizeof o);
	o.to = to != NULL ? to : "latest";
	o.force = true;
	o.out = stdout;
	if ((rc = snap_undo(st, cf, id, &o, &cause)) == -1)
		cli_error("restore: the worktree is back, but its files are not "
		    "those of snapshot %s: %s; try 'agentmux undo %lld --to "
		    "%s'", o.to, cause, (long long)id, o.to);
	free(cause);
	config_free(cf);
	return rc;
}

int
cmd_restore(struct cli_args *args)
{
	struct store_session *rec = NULL;
	struct snap_worktree kept, wt;
	struct store_snapshot *snap;
	struct store *st;
	char *data = NULL, *tip = NULL, *branch = NULL, *root = NULL;
	char *cause = NULL, *slash;
	int64_t id;
	int rc = 1;

	memset(&kept, 0, sizeof kept);
	memset(&wt, 0, sizeof wt);
	if ((st = cli_open_store()) == NULL)
		return 1;
	if (cli_resolve_session(st, args->argv[0], &id) == -1)
		goto out;
	if ((rec = store_session_get(st, id)) == NULL) {
		cli_error("restore: no session %lld", (long long)id);
		goto out;
	}
	if ((data = path_data_dir(&cause)) == NULL) {
		cli_error("restore: %s", cause);
		goto out;
	}
	if (cmd_restore_check(rec, data, &kept, &tip) == -1 ||
	    (branch = cmd_restore_branch(args, id, &kept)) == NULL)
		goto out;
	/* The snapshot must be there before anything is made. */
	if ((snap = snap_resolve(st, id, cli_get(args, "to") != NULL ?
	    cli_get(args, "to") : "latest", NULL, &cause)) == NULL) {
		cli_error("restore: %s", cause);
		goto out;
	}
	store_snapshot_free(snap);
	/* The branch's commits, from agentmux's own copy if the project's gc pruned them. */
	if (tip != NULL && snap_worktree_bring_back(data, id, &kept, tip,
	    &cause) == -1) {
		cli_error("restore: %s", cause);
		goto out;
	}
	/* git checks the branch out: no file the session never wrote past the limits. */
	if (tip != NULL && cmd_restore_size_ok(&kept, tip, data) == -1)
		goto out;
	root = xstrdup(kept.path);
	if ((slash = strrchr(root, '/')) != NULL)
		*slash = '\0';
	if (mkdir(root, 0700) == -1) {
		cli_error("restore: cannot make %s: %s; %s", root,
		    strerror(errno), errno == EEXIST ? "something is there "
		    "already: move it aside and restore again" : "check the "
		    "data dir");
		goto out;
	}
	if (cmd_restore_make(id, &kept, branch, tip != NULL ? tip : kept.base,
	    root, &wt) == -1) {
		path_remove_tree(root);
		goto out;
	}
	if (cmd_restore_note(root, id, &wt, &cause) == -1) {
		cli_error("restore: %s", cause);
		goto out;
	}
	if (cmd_restore_files(st, id, cli_get(args, "to")) == -1)
		goto out;
	out_printf(stdout, "restored session %lld's worktree %s on branch %s "
	    "(at %.12s%s); 'agentmux merge %lld' or 'agentmux discard %lld' "
	    "as before\n", (long long)id, wt.path, wt.branch, tip != NULL ?
	    tip : kept.base, tip != NULL ? ", its tip when discarded" :
	    ", its base", (long long)id, (long long)id);
	rc = 0;
out:
	snap_worktree_clear(&kept);
	snap_worktree_clear(&wt);
	store_session_free(rec);
	free(cause);
	free(tip);
	free(branch);
	free(root);
	free(data);
	store_close(st);
	return rc;
}
