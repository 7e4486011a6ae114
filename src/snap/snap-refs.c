/*
 * undo --refs: every branch, tag and other ref, HEAD, their reflogs and the
 * index back as they were at session start. The refs come from what the
 * session kept out of the jail's reach (snap-history.c), or for sessions
 * from before that, from the store. They are written as git writes loose
 * refs (a .lock file renamed over the ref), never through a link the jail
 * may have left in the git dir, and only to objects that exist.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "snap/snap-int.h"

struct snap_refs {
	struct store *st;
	struct snap_repo *r;
	int gitfd;
	int64_t session;
	bool dry;
	FILE *out;
	struct strv start;        /* "ref\tvalue" as at the start */
	struct strv now;          /* and as now */
	struct strv present;      /* object ids of the start that exist */
	const struct snap_hgit *kept; /* what the session kept, or NULL */
	int failed;               /* refs that could not be put back */
	int modes_failed;         /* git dir entries whose modes could not be */
	char *scope;              /* a worktree session's own refs (refs/heads/agentmux/ID/), or NULL: all */
	const char *gitdir;       /* a nested repository's git dir, or NULL: the project's */
};

/* Runs git on the git dir being put back (the project's, or a nested repository's). */
static int
snap_refs_git(struct snap_refs *sr, const char *const *args,
    const struct buf *in, struct buf *out, char **cause)
{
	if (sr->gitdir != NULL)
		return snap_git_plain_io(sr->gitdir, args, in, out, cause);
	return snap_git(sr->r, SNAP_ENV_PROJECT, args, in, out, cause);
}

/* How the user names REF: "main" for a branch, the full name otherwise. */
static const char *
snap_refs_short(const char *ref)
{
	return strncmp(ref, "refs/heads/", 11) == 0 ? ref + 11 : ref;
}

/* The refs kept for this git dir by the session, else those the store has. */
static void
snap_refs_start(struct snap_refs *sr, struct snap_history **h)
{
	char *data, *sess, *real, *cause = NULL;
	char **rec;
	size_t n, i;

	*h = NULL;
	if ((data = path_data_dir(&cause)) != NULL) {
		sess = xprintf("%s/sessions/%lld", data, (long long)sr->session);
		*h = snap_history_open(sess);
		free(sess);
		free(data);
	}
	free(cause);
	real = realpath(sr->r->projcommon, NULL);
	for (i = 0; *h != NULL && real != NULL && i < (*h)->n; i++) {
		if (strcmp((*h)->v[i].gitdir, real) != 0)
			continue;
		/* It initialises the list (empty if nothing was kept). */
		strv_free(&sr->start);
		if (snap_history_start_refs(&(*h)->v[i], &sr->start) == 0) {
			sr->kept = &(*h)->v[i];
			break;
		}
	}
	free(real);
	if (sr->kept != NULL)
		return;
	rec = store_session_refs(sr->st, sr->session, &n);
	for (i = 0; i < n; i++) {
		rec[i][strcspn(rec[i], " ")] = '\t';
		strv_add(&sr->start, rec[i]);
		free(rec[i]);
	}
	snap_hist_sort(&sr->start);
	free(rec);
}

/* Which of the start's object ids the repository still has (one git cat-file). */
static int
snap_refs_present(struct snap_refs *sr, char **cause)
{
	const char *args[] = { "cat-file", "--batch-check=%(objectname)",
	    NULL };
	char *line, *save = NULL, *tab;
	struct buf in, out;
	size_t i;
	int rc;

	buf_init(&in);
	buf_init(&out);
	for (i = 0; i < sr->start.n; i++) {
		tab = strchr(sr->start.v[i], '\t');
		if (tab != NULL && strncmp(tab + 1, "ref: ", 5) != 0 &&
		    snap_hist_value_ok(tab + 1))
			buf_printf(&in, "%s\n", tab + 1);
	}
	rc = in.len == 0 ? 0 : snap_refs_git(sr, args, &in, &out, cause);
	for (line = rc == 0 && out.data != NULL ? strtok_r(out.data, "\n",
	    &save) : NULL; line != NULL; line = strtok_r(NULL, "\n", &save)) {
		if (strchr(line, ' ') == NULL)
			strv_add(&sr->present, line);
	}
	buf_free(&in);
	buf_free(&out);
	return rc;
}

/* The modes of the git dir's entries the session opened to other users, put back if the end could not (snap-gitmodes.c). */
static void
snap_refs_modes(struct snap_refs *sr)
{
	struct strv told;
	size_t i;

	if (sr->kept == NULL)
		return;
	strv_init(&told);
	sr->modes_failed += snap_gitmodes_check(sr->kept, sr->gitfd, sr->dry,
	    &told);
	for (i = 0; i < told.n; i++)
		out_printf(sr->out, "  %s\n", told.v[i]);
	strv_free(&told);
}

/* Whether a start object id (not a symbolic ref) is missing from the repository. */
static bool
snap_refs_missing(const struct snap_refs *sr)
{
	const char *tab;
	size_t i;

	for (i = 0; i < sr->start.n; i++) {
		tab = strchr(sr->start.v[i], '\t');
		if (tab != NULL && strncmp(tab + 1, "ref: ", 5) != 0 &&
		    snap_hist_value_ok(tab + 1) &&
		    !strv_contains(&sr->present, tab + 1))
			return true;
	}
	return false;
}

/* A dry run does not write the kept pack: its objects are taken as there. */
static void
snap_refs_assume(struct snap_refs *sr)
{
	const char *tab;
	size_t i;

	for (i = 0; i < sr->start.n; i++) {
		tab = strchr(sr->start.v[i], '\t');
		if (tab != NULL && strncmp(tab + 1, "ref: ", 5) != 0 &&
		    snap_hist_value_ok(tab + 1) &&
		    !strv_contains(&sr->present, tab + 1))
			strv_add(&sr->present, tab + 1);
	}
}

/*
 * Objects of the start a git gc pruned since: the pack the session's end
 * kept of what it took refs from (snap-history.c) goes back into the
 * repository, as git fetch would write it, then what is there is asked
 * again.
 */
static int
snap_refs_unkeep(struct snap_refs *sr, char **cause)
{
	const char *args[] = { "index-pack", "--stdin", NULL };
	char *path;
	struct buf pack;
	int rc = 0;

	if (sr->kept == NULL || !snap_refs_missing(sr))
		return 0;
	path = xprintf("%s/kept.pack", sr->kept->base);
	buf_init(&pack);
	if (buf_read_file(&pack, path) == 0 && pack.len > 0) {
		out_printf(sr->out, "  %sput back the objects kept of what the "
		    "session took refs from\n", sr->dry ? "would " : "");
		if (sr->dry)
			snap_refs_assume(sr);
		else if ((rc = snap_refs_git(sr, args, &pack, NULL,
		    cause)) == 0) {
			strv_free(&sr->present);
			strv_init(&sr->present);
			rc = snap_refs_present(sr, cause);
		}
	}
	buf_free(&pack);
	free(path);
	return rc;
}

/* The reflog of REF as kept at the start, with what was written since after it. */
static void
snap_refs_reflog(struct snap_refs *sr, const char *ref, const char *old,
    const char *new)
{
	struct buf saved, cur, text;
	char *path = xprintf("logs/%s", ref), *kept;
	int logsfd = -1;

	buf_init(&saved);
	buf_init(&cur);
	buf_init(&text);
	if (sr->kept != NULL) {
		kept = xprintf("%s/logs", sr->kept->base);
		logsfd = open(kept, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
		free(kept);
	}
	if (logsfd != -1)
		snap_hist_read(logsfd, ref, &saved, 256 * 1024 * 1024);
	if (snap_hist_read(sr->gitfd, path, &cur, 256 * 1024 * 1024) == -1)
		buf_reset(&cur);
	if (snap_hist_merge_log(&saved, &cur, &text) == 0)
		buf_add(&text, cur.data != NULL ? cur.data : "", cur.len);
	/* The stash's reflog is its list: an entry there would be a stash. */
	if (strcmp(ref, "refs/stash") != 0)
		buf_printf(&text, "%s %s agentmux <agentmux@localhost> %lld "
		    "+0000\tagentmux: undo --refs of session %lld\n", old, new,
		    (long long)time(NULL), (long long)sr->session);
	if (snap_hist_write(sr->gitfd, path, &text, 0644) == -1)
		log_debug("cannot write %s: %s", path, strerror(errno));
	if (logsfd != -1)
		close(logsfd);
	buf_free(&text);
	buf_free(&cur);
	buf_free(&saved);
	free(path);
}

/* Writes TEXT into REF (HEAD, packed-refs) as git does: REF.lock, then renamed over REF. */
static int
snap_refs_write_text(struct snap_refs *sr, const char *ref,
    const struct buf *text)
{
	return snap_hist_write_text(sr->gitfd, ref, text);
}

/* Writes VALUE into REF (or HEAD) as git does. */
static int
snap_refs_write(struct snap_refs *sr, const char *ref, const char *value)
{
	struct buf text;
	int rc;

	buf_init(&text);
	buf_printf(&text, "%s\n", value);
	rc = snap_refs_write_text(sr, ref, &text);
	buf_free(&text);
	return rc;
}

/* A zero id of the width of VALUE's (or SHA-1's), for reflog lines. */
static const char *
snap_refs_zero(const char *value)
{
	static const char zeros[] = "000000000000000000000000000000000000000000"
	    "0000000000000000000000";

	return zeros + (sizeof zeros - 1) - (value != NULL &&
	    strlen(value) == 64 ? 64 : 40);
}

/* Puts REF back to WANT (an object id or "ref: X"); CUR is what it is now (NULL: gone). */
static void
snap_refs_one(struct snap_refs *sr, const char *ref, const char *want,
    const char *cur)
{
	bool sym = strncmp(want, "ref: ", 5) == 0;
	const char *was;

	if (!sym && !strv_contains(&sr->present, want)) {
		out_printf(sr->out, "  cannot  put %s back: the object it named "
		    "(%.12s) is gone from the repository and was not kept\n",
		    snap_refs_short(ref), want);
		sr->failed++;
		return;
	}
	/* Said once it is done (or would be), never before a failure. */
	if (!sr->dry && snap_refs_write(sr, ref, want) == -1) {
		out_printf(sr->out, "  cannot  put %s back: %s%s\n",
		    snap_refs_short(ref), strerror(errno), errno == EEXIST ?
		    " (a .lock file is there: is git running?)" : errno ==
		    EISDIR || errno == ENOTDIR ? " (a ref of the session's is "
		    "in the way: delete it)" : "");
		sr->failed++;
		return;
	}
	/* A symbolic ref whole: its name cut short would say nothing. */
	was = cur != NULL ? cur : snap_hist_packed_unread(&sr->now) ?
	    "not known: packed-refs was not read" : "deleted";
	out_printf(sr->out, "  %sreset   %s to %.*s (it was %.*s)\n", sr->dry ?
	    "would " : "", snap_refs_short(ref), sym ? (int)strlen(want) : 12,
	    sym ? want + 5 : want, cur == NULL || strncmp(cur, "ref: ", 5) ==
	    0 ? (int)strlen(was) : 12, was);
	if (sr->dry)
		return;
	if (!sym)
		snap_refs_reflog(sr, ref, cur != NULL && snap_hist_value_ok(cur) &&
		    strncmp(cur, "ref: ", 5) != 0 ? cur : snap_refs_zero(want),
		    want);
}

/* A ref made during the session stays; how to delete it, quoted for a shell. */
static void
snap_refs_keep(FILE *out, const char *ref)
{
	char *argv[5] = { "git", NULL, NULL, NULL, NULL };
	char *q = quote_name(snap_refs_short(ref)), *cmd;

	if (strncmp(ref, "refs/heads/", 11) == 0) {
		argv[1] = "branch";
		argv[2] = "-D";
		argv[3] = (char *)ref + 11;
	} else if (strncmp(ref, "refs/tags/", 10) == 0) {
		argv[1] = "tag";
		argv[2] = "-d";
		argv[3] = (char *)ref + 10;
	} else {
		argv[1] = "update-ref";
		argv[2] = "-d";
		argv[3] = (char *)ref;
	}
	cmd = strv_join_paste(argv);
	out_printf(out, "  keep    %s: made during the session; delete it "
	    "with: %s\n", q, cmd);
	free(cmd);
	free(q);
}

/*
 * A replace ref made during the session is not the user's: git log and
 * git show would show its commit in the place of another; nor is one
 * under refs/agentmux/ or refs/tags/agentmux/, which git takes before a
 * worktree session's branch named short. It goes, as git deletes a ref
 * (loose or packed, with agentmux's settings: no hook); WHAT says which.
 */
static void
snap_refs_drop(struct snap_refs *sr, const char *ref, const char *what)
{
	const char *args[] = { "update-ref", "--no-deref", "-d", ref, NULL };
	char *q = quote_name(ref), *cause = NULL;

	out_printf(sr->out, "  %sdelete  %s: %s made during the session\n",
	    sr->dry ? "would " : "", q, what);
	if (!sr->dry && snap_refs_git(sr, args, NULL, NULL, &cause) == -1) {
		out_printf(sr->out, "  cannot  delete %s: %s\n", q, cause);
		sr->failed++;
	}
	free(cause);
	free(q);
}

/* Every ref of the start that is not as it was; refs made since are kept (and named), replace refs deleted. */
/*
 * A worktree session moved its own branch alone (the kernel refused it
 * the rest): only refs under its own dir are put back, never the user's
 * main, tags or another session's branch, which may have moved since.
 */
static bool
snap_refs_in_scope(const struct snap_refs *sr, const char *ref)
{
	return sr->scope == NULL || strncmp(ref, sr->scope,
	    strlen(sr->scope)) == 0;
}

/* The ref dir of SESSION's worktree (refs/heads/agentmux/ID/), or NULL if it is not a worktree session. */
static char *
snap_refs_scope(int64_t session)
{
	struct snap_worktree wt;
	char *data, *root = NULL, *cause = NULL, *scope = NULL;
	const char *slash;

	if ((data = path_data_dir(&cause)) == NULL) {
		free(cause);
		return NULL;
	}
	if (snap_worktree_find(data, session, &wt, &root, &cause) == 0) {
		if ((slash = strrchr(wt.branch, '/')) != NULL)
			scope = xprintf("refs/heads/%.*s/",
			    (int)(slash - wt.branch), wt.branch);
		snap_worktree_clear(&wt);
	}
	free(cause);
	free(root);
	free(data);
	return scope;
}

static void
snap_refs_all(struct snap_refs *sr)
{
	const char *cur, *want;
	char *ref;
	size_t i;

	for (i = 0; i < sr->start.n; i++) {
		ref = xstrndup(sr->start.v[i], strcspn(sr->start.v[i], "\t"));
		want = sr->start.v[i] + strlen(ref) + 1;
		cur = snap_hist_value(&sr->now, ref);
		/* A ref broken at the start too: nothing to put back. */
		if (snap_refs_in_scope(sr, ref) && snap_hist_refname_ok(ref) &&
		    snap_hist_value_ok(want) && (cur == NULL ||
		    strcmp(cur, want) != 0))
			snap_refs_one(sr, ref, want, cur);
		free(ref);
	}
	/* Refs made since cannot be told from packed ones the start did not read. */
	if (snap_hist_packed_unread(&sr->start)) {
		out_printf(sr->out, "  leave   refs that are not in the start's "
		    "record as they are: its packed-refs could not be read\n");
		return;
	}
	for (i = 0; i < sr->now.n; i++) {
		ref = xstrndup(sr->now.v[i], strcspn(sr->now.v[i], "\t"));
		if (strncmp(ref, "refs/", 5) != 0 ||
		    !snap_refs_in_scope(sr, ref) ||
		    snap_hist_value(&sr->start, ref) != NULL)
			;
		else if (strncmp(ref, "refs/replace/", 13) == 0 &&
		    snap_hist_refname_ok(ref))
			snap_refs_drop(sr, ref, "a replace ref");
		else if ((strncmp(ref, "refs/agentmux/", 14) == 0 ||
		    strncmp(ref, "refs/tags/agentmux/", 19) == 0) &&
		    snap_hist_refname_ok(ref))
			snap_refs_drop(sr, ref, "a ref git takes before a "
			    "worktree session's branch named short,");
		else
			snap_refs_keep(sr->out, ref);
		free(ref);
	}
}

/* A stash entry the session pushed, taken out; how to store it again. */
static void
snap_refs_stash_drop(struct snap_refs *sr, const char *line)
{
	const char *new = strchr(line, ' '), *tab = strchr(line, '\t');
	char *raw = xstrndup(new != NULL ? new + 1 : "", new != NULL ?
	    strcspn(new + 1, " \t") : 0);
	char *id = quote_name(raw), *msg = quote_name(tab != NULL ? tab + 1 :
	    "");

	out_printf(sr->out, "  %sdrop    the stash entry %s (%s): pushed "
	    "during the session; 'git stash store -m MESSAGE %s' stores it "
	    "again\n", sr->dry ? "would " : "", id, msg, id);
	free(msg);
	free(id);
	free(raw);
}

/*
 * The stash as it was at the start, exactly: its reflog (logs/refs/stash)
 * is the list git stash pops from, so an entry the session pushed is
 * taken out (and named), one it dropped put back.
 */
static void
snap_refs_stash(struct snap_refs *sr)
{
	struct buf saved, cur;
	struct strv added;
	char *path;
	size_t i;

	if (sr->kept == NULL || !snap_refs_in_scope(sr, "refs/stash") ||
	    snap_hist_value(&sr->start, "refs/stash") == NULL)
		return;
	buf_init(&saved);
	buf_init(&cur);
	strv_init(&added);
	path = xprintf("%s/logs/refs/stash", sr->kept->base);
	if (buf_read_file(&saved, path) == -1)
		goto out;
	if (snap_hist_read(sr->gitfd, "logs/refs/stash", &cur,
	    256 * 1024 * 1024) == -1)
		buf_reset(&cur);
	if (cur.len == saved.len && (cur.len == 0 || memcmp(cur.data,
	    saved.data, cur.len) == 0))
		goto out;
	snap_hist_log_added(&saved, &cur, &added);
	for (i = 0; i < added.n; i++)
		snap_refs_stash_drop(sr, added.v[i]);
	if (!sr->dry && snap_hist_write(sr->gitfd, "logs/refs/stash", &saved,
	    0644) == -1) {
		out_printf(sr->out, "  cannot  put the stash list back: %s (it "
		    "is kept in %s)\n", strerror(errno), path);
		sr->failed++;
	} else
		out_printf(sr->out, "  %srestore the stash list as it was at "
		    "the start\n", sr->dry ? "would " : "");
out:
	strv_free(&added);
	free(path);
	buf_free(&cur);
	buf_free(&saved);
}

/* A worktree session's: its worktree's own HEAD on its branch (snap_worktree_head_fix). */
static void
snap_refs_wt_head(struct snap_refs *sr)
{
	struct snap_worktree wt;
	char *data, *root = NULL, *was = NULL, *cause = NULL;

	if ((data = path_data_dir(&cause)) == NULL ||
	    snap_worktree_find(data, sr->session, &wt, &root, &cause) == -1) {
		free(cause);
		free(data);
		return;
	}
	if (snap_worktree_head_fix(&wt, sr->dry, &was, &cause) == -1) {
		out_printf(sr->out, "  cannot  put the worktree's HEAD back on "
		    "%s: %s\n", wt.branch, cause);
		sr->failed++;
	} else if (was != NULL)
		out_printf(sr->out, "  %sswitch  the worktree's HEAD back to %s "
		    "(the session %s)\n", sr->dry ? "would " : "", wt.branch,
		    was);
	snap_worktree_clear(&wt);
	free(was);
	free(cause);
	free(root);
	free(data);
}

/* HEAD: on the branch it was on, or detached where it was. */
static void
snap_refs_head(struct snap_refs *sr)
{
	const char *want = snap_hist_value(&sr->start, "HEAD");
	const char *cur = snap_hist_value(&sr->now, "HEAD");

	/* The shared HEAD is the main tree's, not a worktree session's. */
	if (sr->scope != NULL) {
		snap_refs_wt_head(sr);
		return;
	}
	if (want == NULL || !snap_hist_value_ok(want) ||
	    (cur != NULL && strcmp(cur, want) == 0))
		return;
	if (strncmp(want, "ref: ", 5) == 0)
		out_printf(sr->out, "  %sswitch  HEAD to %s\n", sr->dry ? "would " :
		    "", want + 5);
	else if (!strv_contains(&sr->present, want)) {
		out_printf(sr->out, "  cannot  put HEAD back: the object it named "
		    "(%.12s) is gone from the repository and was not kept\n",
		    want);
		sr->failed++;
		return;
	} else
		out_printf(sr->out, "  %sdetach  HEAD at %.12s\n", sr->dry ?
		    "would " : "", want);
	if (!sr->dry && snap_refs_write(sr, "HEAD", want) == -1) {
		out_printf(sr->out, "  cannot  put HEAD back: %s\n",
		    strerror(errno));
		sr->failed++;
	}
}

/* The line for the index put back: .git/index, or a linked worktree's own (in its admin dir). */
static void
snap_refs_index_said(const struct snap_repo *r, bool dry, FILE *out)
{
	char *q;

	if (r->projgit == NULL || r->projcommon == NULL ||
	    strcmp(r->projgit, r->projcommon) == 0) {
		out_printf(out, "  %srestore the index (.git/index) as it was "
		    "at start\n", dry ? "would " : "");
		return;
	}
	q = snap_nested_quote(r->projindex);
	out_printf(out, "  %srestore the worktree's index (%s) as it was at "
	    "start\n", dry ? "would " : "", q);
	free(q);
}

/* The index as it was at start, through git's own lock protocol. */
static int
snap_refs_index(struct snap_repo *r, int64_t session, bool dry, FILE *out,
    char **cause)
{
	char *data, *saved = NULL, *lock = NULL;
	struct stat sb;
	mode_t mode;
	int rc = -1, fd;

	if ((data = path_data_dir(cause)) == NULL)
		return -1;
	saved = xprintf("%s/sessions/%lld/git-index", data, (long long)session);
	free(data);
	if (access(saved, R_OK) != 0 || buf_same_file(saved,
	    r->projindex)) {
		free(saved);
		return 0;
	}
	snap_refs_index_said(r, dry, out);
	if (dry) {
		free(saved);
		return 0;
	}
	lock = xprintf("%s.lock", r->projindex);
	/* The index's mode kept (else as git makes it), whatever agentmux's own umask (077). */
	mode = lstat(r->projindex, &sb) == 0 && S_ISREG(sb.st_mode) ?
	    sb.st_mode & 0666 : 0666 & ~util_user_umask();
	if ((fd = open(lock, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC |
	    O_NOFOLLOW, 0600)) == -1)
		*cause = xprintf("cannot lock %s: %s (is git running?)", lock,
		    strerror(errno));
	else if (fchmod(fd, mode) == 0 && close(fd) == 0 &&
	    snap_copy_file(saved, lock, cause) == 0 &&
	    rename(lock, r->projindex) == 0)
		rc = 0;
	else {
		if (*cause == NULL)
			*cause = xprintf("cannot replace %s: %s", r->projindex,
			    strerror(errno));
		unlink(lock);
	}
	free(lock);
	free(saved);
	return rc;
}

/*
 * A HEAD git does not take (deleted, a link, garbage), whoever broke it
 * since the start (the session, or something after it: the end puts back
 * one the session broke): put back as the end does, before git runs.
 */
static void
snap_refs_head_broken(struct snap_refs *sr)
{
	struct strv told;
	size_t i;

	if (sr->kept == NULL || sr->scope != NULL)
		return;
	strv_init(&told);
	snap_hist_head_repair(sr->kept, sr->gitfd, "the session or something "
	    "after it", sr->dry, &told);
	for (i = 0; i < told.n; i++)
		out_printf(sr->out, "  %s\n", told.v[i]);
	strv_free(&told);
}

/*
 * packed-refs as git can read it: a line git cannot parse (git fails at
 * every ref command) taken out, each ref on one line (the start's value
 * kept where it is listed twice; for a worktree session, the first, which
 * git reads). A ref whose line goes is put back as a
 * loose ref by snap_refs_all, as a deleted one: none is lost.
 */
static void
snap_refs_packed(struct snap_refs *sr)
{
	struct strv bad, outside, unsorted;
	struct buf fixed;
	size_t i;
	char *q;

	strv_init(&bad);
	strv_init(&outside);
	strv_init(&unsorted);
	/* A worktree session's start values are not for the user's other refs. */
	if (snap_hist_packed_check(sr->gitfd, sr->scope == NULL ? &sr->start :
	    NULL, &sr->start, &bad, &outside, &unsorted, &fixed) > 0) {
		for (i = 0; i < bad.n; i++) {
			q = quote_name(bad.v[i]);
			out_printf(sr->out, "  %stake   %s out of packed-refs: "
			    "git cannot parse it\n", sr->dry ? "would " : "", q);
			free(q);
		}
		for (i = 0; i < outside.n; i++) {
			q = quote_name(outside.v[i]);
			out_printf(sr->out, "  %stake   %s out of packed-refs: a "
			    "ref outside refs/ not there at the start (git finds "
			    "one named \"main\" before your branch main)\n",
			    sr->dry ? "would " : "", q);
			free(q);
		}
		if (unsorted.n > 0) {
			q = quote_name(unsorted.v[0]);
			out_printf(sr->out, "  %stake   the claim that its refs "
			    "are sorted out of packed-refs: %zu are not, as %s, "
			    "and git does not find refs out of order\n",
			    sr->dry ? "would " : "", unsorted.n, q);
			free(q);
		}
		out_printf(sr->out, "  %sput    packed-refs back to one line "
		    "per ref git can read\n", sr->dry ? "would " : "");
		if (!sr->dry && snap_refs_write_text(sr, "packed-refs",
		    &fixed) == -1) {
			out_printf(sr->out, "  cannot  put packed-refs back: %s%s\n",
			    strerror(errno), errno == EEXIST ? " (a .lock file "
			    "is there: is git running?)" : "");
			sr->failed++;
		}
	}
	buf_free(&fixed);
	strv_free(&bad);
	strv_free(&outside);
	strv_free(&unsorted);
}

/*
 * The name packed-refs is kept aside as in the git dir, its own (a name
 * the jail could have taken first is not waited on): a hard link to it
 * (a link not followed), or the entry itself moved (a dir, a file with
 * too many links).
 */
static int
snap_refs_aside_name(struct snap_refs *sr, char **name)
{
	int i, e;

	for (i = 0; i < 16; i++) {
		*name = xprintf("packed-refs-as-left-%lld-%08x",
		    (long long)sr->session, arc4random());
		if (linkat(sr->gitfd, "packed-refs", sr->gitfd, *name, 0) == 0)
			return 0;
		/* A dir, or a file with too many links (the jail's doing). */
		if (errno != EEXIST && renameat2(sr->gitfd, "packed-refs",
		    sr->gitfd, *name, RENAME_NOREPLACE) == 0)
			return 0;
		e = errno;
		free(*name);
		*name = NULL;
		if ((errno = e) != EEXIST)
			return -1;
	}
	return -1;
}

/* The start's refs whose objects are there, as a packed-refs git reads; *N: how many. */
static void
snap_refs_packed_text(struct snap_refs *sr, struct buf *text, size_t *n)
{
	const char *tab;
	size_t i;

	*n = 0;
	buf_init(text);
	/* Sorted by name (strcmp's order): the start's list is. */
	buf_adds(text, "# pack-refs with: sorted \n");
	for (i = 0; i < sr->start.n; i++) {
		tab = strchr(sr->start.v[i], '\t');
		if (tab == NULL || strncmp(sr->start.v[i], "refs/", 5) != 0 ||
		    !snap_hist_value_ok(tab + 1) || strncmp(tab + 1, "ref: ",
		    5) == 0 || !strv_contains(&sr->present, tab + 1))
			continue;
		buf_printf(text, "%s %.*s\n", tab + 1, (int)(tab -
		    sr->start.v[i]), sr->start.v[i]);
		(*n)++;
	}
}

/* The most branches of the file kept aside named one by one. */
#define SNAP_REFS_ASIDE_TOLD 8

/*
 * What the file kept aside as NAME (Q: quoted) holds that the start did
 * not: the session's refs, and any the user made since the session and
 * packed there (git pack-refs, git gc). Counted, and the first branches
 * named with how to bring one back: none is written back, since which
 * are the user's cannot be told.
 */
static void
snap_refs_aside_tell(struct snap_refs *sr, const char *name, const char *q)
{
	struct strv heads;
	size_t n, i;
	char *r;

	strv_init(&heads);
	if (snap_hist_packed_scan(sr->gitfd, name, &sr->start, &n, &heads,
	    SNAP_REFS_ASIDE_TOLD) == 0 && n > 0) {
		out_printf(sr->out, "  note    %s names %zu ref%s that %s not "
		    "there at the start (replace refs left out): the "
		    "session's, and any branch or tag you made since and "
		    "packed (git pack-refs, git gc); bring one back with "
		    "'git update-ref REF ID' (its line there)\n", q, n,
		    n == 1 ? "" : "s", n == 1 ? "was" : "were");
		for (i = 0; i < heads.n; i++) {
			r = quote_name(heads.v[i]);
			out_printf(sr->out, "          as the branch %s\n", r);
			free(r);
		}
	}
	strv_free(&heads);
}

/*
 * A packed-refs agentmux cannot read (more than it reads, a link, not a
 * plain file) that it could read at the start: the refs the session
 * wrote there are not known. It is kept aside in the git dir, under a
 * name of its own (nothing lost), and the start's refs are written as a
 * packed-refs in its place; snap_refs_all then puts back the loose ones.
 * One the start could not read either is the user's: left as it is.
 * Whether packed-refs is (or would be) the start's now.
 */
static bool
snap_refs_packed_aside(struct snap_refs *sr)
{
	struct buf text;
	char *why, *name = NULL, *q;
	size_t n;
	bool done = false;

	/* A worktree session could write its own branch alone. */
	if (sr->scope != NULL)
		return false;
	if (snap_hist_packed_unread(&sr->start)) {
		if (snap_hist_packed_unread(&sr->now)) {
			why = snap_hist_packed_why(sr->gitfd);
			out_printf(sr->out, "  leave   packed-refs as it is: it "
			    "is %s, as it was at the start, so its refs then "
			    "were not kept (loose refs and HEAD are put back)\n",
			    why);
			free(why);
		}
		return false;
	}
	if (!snap_hist_packed_unread(&sr->now))
		return false;
	why = snap_hist_packed_why(sr->gitfd);
	/* Else the file would go aside and the new one not be written. */
	if (faccessat(sr->gitfd, "packed-refs.lock", F_OK,
	    AT_SYMLINK_NOFOLLOW) == 0) {
		out_printf(sr->out, "  cannot  put packed-refs back: it is %s, "
		    "and a packed-refs.lock is there (the session may have "
		    "left it); if no git is running, delete it and run undo "
		    "--refs again\n", why);
		free(why);
		sr->failed++;
		return false;
	}
	snap_refs_packed_text(sr, &text, &n);
	if (sr->dry) {
		out_printf(sr->out, "  would keep packed-refs aside (it is %s, "
		    "so the refs the session wrote there are not known) and "
		    "write the start's %zu packed refs in its place\n", why, n);
		done = true;
	} else if (snap_refs_aside_name(sr, &name) == -1) {
		out_printf(sr->out, "  cannot  keep packed-refs aside: %s; it "
		    "is %s, so the refs the session wrote there stay\n",
		    strerror(errno), why);
		sr->failed++;
	} else if (snap_refs_write_text(sr, "packed-refs", &text) == -1) {
		q = quote_name(name);
		out_printf(sr->out, "  cannot  write the start's packed refs: "
		    "%s%s; packed-refs is kept as %s in the git dir\n",
		    strerror(errno), errno == EEXIST ? " (a .lock file is "
		    "there: is git running?)" : "", q);
		free(q);
		sr->failed++;
	} else {
		q = quote_name(name);
		out_printf(sr->out, "  keep    packed-refs aside as %s in the "
		    "git dir: it is %s, so the refs the session wrote there "
		    "are not known (delete it once you have looked)\n"
		    "  put     the start's %zu packed refs back into "
		    "packed-refs\n", q, why, n);
		snap_refs_aside_tell(sr, name, q);
		free(q);
		done = true;
	}
	buf_free(&text);
	free(name);
	free(why);
	return done;
}

/* A dry run's refs as they would be once packed-refs is the start's: its refs under the loose ones. */
static void
snap_refs_as_if_packed(struct snap_refs *sr)
{
	struct strv add;
	const char *tab;
	char *ref;
	size_t i;

	strv_init(&add);
	for (i = 0; i < sr->start.n; i++) {
		tab = strchr(sr->start.v[i], '\t');
		if (tab == NULL || strncmp(sr->start.v[i], "refs/", 5) != 0 ||
		    !strv_contains(&sr->present, tab + 1))
			continue;
		ref = xstrndup(sr->start.v[i], (size_t)(tab - sr->start.v[i]));
		if (snap_hist_value(&sr->now, ref) == NULL)
			strv_add(&add, sr->start.v[i]);
		free(ref);
	}
	for (i = 0; i < add.n; i++)
		strv_add(&sr->now, add.v[i]);
	snap_hist_sort(&sr->now);
	strv_free(&add);
}

/*
 * The refs as they are now, read after packed-refs is mended: one not
 * read (snap_hist_packed_unread) is put aside first, then read again.
 */
static void
snap_refs_now(struct snap_refs *sr)
{
	strv_free(&sr->now);
	snap_hist_refs(sr->gitfd, &sr->now);
	if (!snap_refs_packed_aside(sr))
		return;
	if (sr->dry) {
		snap_refs_as_if_packed(sr);
		return;
	}
	strv_free(&sr->now);
	snap_hist_refs(sr->gitfd, &sr->now);
}

static int
snap_undo_refs_project(struct store *st, struct snap_repo *r, int64_t session,
    bool dry, FILE *out, char **cause)
{
	struct snap_history *h = NULL;
	struct snap_refs sr;
	int rc = -1;

	memset(&sr, 0, sizeof sr);
	sr.st = st;
	sr.r = r;
	sr.session = session;
	sr.dry = dry;
	sr.out = out;
	strv_init(&sr.start);
	strv_init(&sr.present);
	strv_init(&sr.now);
	sr.gitfd = -1;
	if ((sr.scope = snap_refs_scope(session)) != NULL)
		out_printf(out, "  --refs: a worktree session: its own branch "
		    "alone (%s*)\n", sr.scope);
	if (r->projgit != NULL)
		snap_refs_start(&sr, &h);
	if (sr.start.n == 0) {
		out_printf(out, "  --refs: no refs were recorded at the start of "
		    "session %lld; nothing to reset\n", (long long)session);
		rc = 0;
		goto out;
	}
	if ((sr.gitfd = open(r->projcommon, O_RDONLY | O_DIRECTORY |
	    O_NOFOLLOW | O_CLOEXEC)) == -1) {
		*cause = xprintf("cannot open %s: %s", r->projcommon,
		    strerror(errno));
		goto out;
	}
	snap_refs_head_broken(&sr);
	snap_refs_packed(&sr);
	if (snap_refs_present(&sr, cause) == 0 &&
	    snap_refs_unkeep(&sr, cause) == 0) {
		snap_refs_now(&sr);
		snap_refs_all(&sr);
		snap_refs_stash(&sr);
		snap_refs_head(&sr);
		snap_refs_modes(&sr);
		if (snap_refs_index(r, session, dry, out, cause) == 0)
			rc = 0;
	}
	close(sr.gitfd);
	if (rc == 0 && sr.modes_failed > 0) {
		*cause = xprintf("%d entr%s of %s could not be given %s mode "
		    "back (see above)", sr.modes_failed, sr.modes_failed == 1 ?
		    "y" : "ies", r->projcommon, sr.modes_failed == 1 ? "its" :
		    "their");
		rc = -1;
	}
	if (rc == 0 && sr.failed > 0) {
		*cause = xprintf("%d ref%s could not be put back (see above)",
		    sr.failed, sr.failed == 1 ? "" : "s");
		rc = -1;
	}
out:
	strv_free(&sr.start);
	strv_free(&sr.now);
	strv_free(&sr.present);
	free(sr.scope);
	snap_history_free(h);
	return rc;
}

/*
 * A nested repository's git dir as it was at the start, if the session
 * deleted its HEAD or config (rm -rf lib/.git: its objects stay, the
 * jail's overlay held them): both are written back first, since git does
 * not take a dir without a HEAD for a repository.
 */
static void
snap_refs_nested_base(struct snap_refs *sr)
{
	const char *head = snap_hist_value(&sr->start, "HEAD");
	char *path = xprintf("%s/config", sr->kept->base);
	struct buf b;
	struct stat st;

	buf_init(&b);
	if (fstatat(sr->gitfd, "config", &st, AT_SYMLINK_NOFOLLOW) == -1 &&
	    errno == ENOENT && buf_read_file(&b, path) == 0) {
		out_printf(sr->out, "  %srestore %s/config as it was at start\n",
		    sr->dry ? "would " : "", sr->gitdir);
		if (!sr->dry && snap_hist_write(sr->gitfd, "config", &b,
		    0644) == -1) {
			out_printf(sr->out, "  cannot  put %s/config back: %s\n",
			    sr->gitdir, strerror(errno));
			sr->failed++;
		}
	}
	if (fstatat(sr->gitfd, "HEAD", &st, AT_SYMLINK_NOFOLLOW) == -1 &&
	    errno == ENOENT && head != NULL && !sr->dry) {
		/* Git needs refs/ too to take the dir for a repository. */
		(void)snap_hist_mkdirs(sr->gitfd, "refs/heads");
		(void)snap_hist_mkdirs(sr->gitfd, "refs/tags");
		out_printf(sr->out, "  restore %s/HEAD (%s)\n", sr->gitdir,
		    head);
		if (snap_refs_write(sr, "HEAD", head) == -1) {
			out_printf(sr->out, "  cannot  put %s/HEAD back: %s\n",
			    sr->gitdir, strerror(errno));
			sr->failed++;
		}
	}
	buf_free(&b);
	free(path);
}

/* G's git dir is not the one of the start (CAUSE): left alone, said in red. */
static void
snap_refs_not_start(struct snap_refs *sr, const struct snap_hgit *g,
    const char *cause)
{
	char *q = snap_nested_quote(g->gitdir);

	out_color(sr->out, "1;31");
	out_printf(sr->out, "  cannot  put %s back: %s; nothing was written "
	    "there. Its refs, HEAD, reflogs and config as at the start are "
	    "kept in %s: put the repository back at that path (not a link), "
	    "then undo --refs again", q, cause, g->base);
	out_color(sr->out, "");
	out_puts(sr->out, "\n");
	free(q);
}

/* The refs, HEAD and config of the nested repository G put back as at the start. */
static int
snap_refs_nested_one(struct snap_refs *sr, const struct snap_hgit *g)
{
	char *cause = NULL;

	sr->kept = g;
	sr->gitdir = g->gitdir;
	if (snap_history_start_refs(g, &sr->start) == -1 || sr->start.n == 0)
		return 0;
	out_printf(sr->out, "  --refs: the nested repository %s\n", g->gitdir);
	if ((sr->gitfd = snap_gitdir_open(g->gitdir, &g->id, NULL,
	    &cause)) == -2) {
		snap_refs_not_start(sr, g, cause);
		free(cause);
		sr->gitfd = -1;
		return -1;
	}
	if (sr->gitfd == -1) {
		out_printf(sr->out, "  cannot  put %s back: %s (make it a dir "
		    "again, then undo --refs)\n", g->gitdir, strerror(errno));
		return -1;
	}
	snap_refs_nested_base(sr);
	snap_refs_head_broken(sr);
	snap_refs_packed(sr);
	if (snap_refs_present(sr, &cause) == 0 && snap_refs_unkeep(sr,
	    &cause) == 0) {
		snap_refs_now(sr);
		snap_refs_all(sr);
		snap_refs_stash(sr);
		snap_refs_head(sr);
		snap_refs_modes(sr);
	} else {
		out_printf(sr->out, "  cannot  put %s back: %s\n", g->gitdir,
		    cause);
		sr->failed++;
	}
	free(cause);
	close(sr->gitfd);
	sr->gitfd = -1;
	return 0;
}

/*
 * Whether GITDIR is the project's own (REAL, its real path), put back
 * first. A submodule's under its modules/ is put back as a nested one (it
 * was not put back at all, though the end said undo --refs would).
 */
static bool
snap_refs_own(const char *gitdir, const char *real)
{
	return real != NULL && strcmp(gitdir, real) == 0;
}

/* Every nested repository (a git dir in the project that is not its own: a clone, a submodule's) whose history the session kept. */
static int
snap_refs_nested(struct snap_repo *r, int64_t session, bool dry, FILE *out)
{
	struct snap_history *h = NULL;
	struct snap_refs sr;
	char *data, *sess, *cause = NULL, *real;
	size_t i, len;
	int failed = 0;

	if ((data = path_data_dir(&cause)) != NULL) {
		sess = xprintf("%s/sessions/%lld", data, (long long)session);
		h = snap_history_open(sess);
		free(sess);
		free(data);
	}
	free(cause);
	real = r->projcommon != NULL ? realpath(r->projcommon, NULL) : NULL;
	len = strlen(r->worktree);
	for (i = 0; h != NULL && i < h->n; i++) {
		if (strncmp(h->v[i].gitdir, r->worktree, len) != 0 ||
		    h->v[i].gitdir[len] != '/' ||
		    snap_refs_own(h->v[i].gitdir, real))
			continue;
		memset(&sr, 0, sizeof sr);
		sr.r = r;
		sr.session = session;
		sr.dry = dry;
		sr.out = out;
		sr.gitfd = -1;
		strv_init(&sr.present);
		/* sr.now is made by snap_hist_refs (zeroed: freeing it is a no-op). */
		if (snap_refs_nested_one(&sr, &h->v[i]) == -1)
			failed++;
		failed += sr.failed + sr.modes_failed;
		strv_free(&sr.start);
		strv_free(&sr.now);
		strv_free(&sr.present);
	}
	free(real);
	snap_history_free(h);
	return failed;
}

int
snap_undo_refs(struct store *st, struct snap_repo *r, int64_t session,
    bool dry, FILE *out, char **cause)
{
	char *scope;
	int rc, failed;

	rc = snap_undo_refs_project(st, r, session, dry, out, cause);
	/* A worktree session's jail held its own branch alone. */
	if ((scope = snap_refs_scope(session)) != NULL) {
		free(scope);
		return rc;
	}
	failed = snap_refs_nested(r, session, dry, out);
	if (rc == 0 && failed > 0) {
		*cause = xprintf("%d ref%s (or modes of git dir entries) of "
		    "nested repositories could not be put back (see above)",
		    failed, failed == 1 ? "" : "s");
		rc = -1;
	}
	return rc;
}
