/*
 * What a session did to blind the user's own git to its changes: index
 * entries it marked skip-worktree or assume-unchanged (git status and git
 * diff then pass over them) and replace refs it made (git log shows
 * another commit in the place of one). Both are looked at once when the
 * command starts and once when it ends; what is new is reported.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "snap/snap-int.h"

/* The most marks or replace refs told one by one; the rest are counted. */
#define SNAP_BLIND_TELL 10

void
snap_blind_init(struct snap_blind *b)
{
	strv_init(&b->marked);
	strv_init(&b->replace);
	b->had_git = false;
	buf_init(&b->untr);
	b->untr_read = 0;
}

void
snap_blind_free(struct snap_blind *b)
{
	strv_free(&b->marked);
	strv_free(&b->replace);
	buf_free(&b->untr);
}

/*
 * The index entries of GITDIR with a mark, as "S path" (skip-worktree) or
 * "h path" (assume-unchanged: git shows its tag in lower case). Git reads
 * the index alone, no work tree, with agentmux's settings: nothing runs.
 */
static void
snap_blind_marks(const char *gitdir, struct strv *out)
{
	static const char *const args[] = { "ls-files", "-v", "-z", NULL };
	struct buf b;
	char *cause = NULL;
	const char *p, *end;

	buf_init(&b);
	if (snap_git_plain_io(gitdir, args, NULL, &b, &cause) == -1) {
		log_warnx("cannot read the index of %s: %s", gitdir, cause);
		free(cause);
		buf_free(&b);
		return;
	}
	for (p = b.data, end = b.data + b.len; p != NULL && p < end;
	    p += strlen(p) + 1) {
		if (strlen(p) > 2 && (p[0] == 'S' || (p[0] >= 'a' &&
		    p[0] <= 'z')) && !strv_contains(out, p))
			strv_add(out, p);
	}
	buf_free(&b);
}

/* The refs under refs/replace/ of the git dir GITFD, as "ref\tvalue" (no link followed). */
static void
snap_blind_replace(int gitfd, struct strv *out)
{
	struct strv refs;
	size_t i;

	snap_hist_refs(gitfd, &refs);
	for (i = 0; i < refs.n; i++) {
		if (strncmp(refs.v[i], "refs/replace/", 13) == 0)
			strv_add(out, refs.v[i]);
	}
	strv_free(&refs);
}

/* The marks and replace refs of PROJECT's .git now into B (emptied first). */
static void
snap_blind_look(const char *project, struct snap_blind *b)
{
	char *gitdir = xprintf("%s/.git", project), *index;
	int gitfd;

	snap_blind_free(b);
	snap_blind_init(b);
	gitfd = open(gitdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (gitfd != -1) {
		b->had_git = true;
		snap_blind_replace(gitfd, &b->replace);
		close(gitfd);
		snap_blind_marks(gitdir, &b->marked);
		index = xprintf("%s/index", gitdir);
		b->untr_read = snap_index_untr(index, &b->untr);
		free(index);
	}
	free(gitdir);
}

void
snap_blind_begin(const char *project, struct snap_blind *start)
{
	snap_blind_look(project, start);
}

/* One line for a mark made in the session. */
static void
snap_blind_tell_mark(const char *entry, struct strv *out)
{
	bool skip = entry[0] == 'S';
	char *q = snap_nested_quote(entry + 2);

	strv_addf(out, "%s was marked %s in .git/index in the session: your "
	    "git status and git diff no longer show its changes; see them with "
	    "'agentmux diff', and unmark it with 'git update-index %s -- %s'",
	    q, skip ? "skip-worktree" : "assume-unchanged", skip ?
	    "--no-skip-worktree" : "--no-assume-unchanged", q);
	free(q);
}

/* One line for a replace ref made or moved in the session ("ref\tvalue"). */
static void
snap_blind_tell_replace(const char *entry, struct strv *out)
{
	char *ref = xstrndup(entry, strcspn(entry, "\t"));
	char *q = snap_nested_quote(ref);
	const char *value = entry + strlen(ref);

	value += *value == '\t' ? 1 : 0;
	strv_addf(out, "the session made the replace ref %s (to %.12s): your "
	    "git log and git show then show that commit in the place of "
	    "another; 'agentmux undo --refs' deletes it", q, value);
	free(q);
	free(ref);
}

/*
 * The untracked cache of .git/index changed in the session (NOW: at its
 * end). git status trusts it for every dir whose stat data it matches: a
 * forged one (a dir listed with no untracked files) hides new files from
 * it. agentmux cannot tell a forged one from git's own update, so the
 * changed one goes: git builds it again at the next git status.
 */
static void
snap_blind_untr(const char *project, const struct snap_blind *start,
    const struct snap_blind *now, struct strv *out)
{
	char *index;
	int rc;

	if (now->untr_read != 1 || (start->untr_read == 1 &&
	    start->untr.len == now->untr.len &&
	    memcmp(start->untr.data, now->untr.data, now->untr.len) == 0))
		return;
	index = xprintf("%s/.git/index", project);
	rc = snap_index_drop_untr(index);
	free(index);
	if (rc == 0)
		return;  /* gone meanwhile: git status scans again */
	if (rc == 1)
		strv_addf(out, "the untracked cache in .git/index (git's list of "
		    "untracked files per dir) was made or changed in the "
		    "session: a forged one makes your git status pass over new "
		    "files; agentmux dropped it (git builds it again at your "
		    "next git status); 'agentmux diff' shows what the session "
		    "added");
	else
		strv_addf(out, "the untracked cache in .git/index (git's list of "
		    "untracked files per dir) was made or changed in the "
		    "session: a forged one makes your git status pass over new "
		    "files, and agentmux could not drop it (%s); run 'git "
		    "update-index --no-untracked-cache' in the project before "
		    "you trust git status ('git update-index --untracked-cache' "
		    "turns it on again), and see what the session added with "
		    "'agentmux diff'", errno == EEXIST ?
		    "git holds .git/index.lock" : strerror(errno));
}

void
snap_blind_end(const char *project, const struct snap_blind *start,
    struct strv *out)
{
	struct snap_blind now;
	size_t i, told = 0, more = 0;

	if (!start->had_git)
		return;
	snap_blind_init(&now);
	snap_blind_look(project, &now);
	for (i = 0; i < now.marked.n; i++) {
		if (strv_contains(&start->marked, now.marked.v[i]))
			continue;
		if (told++ < SNAP_BLIND_TELL)
			snap_blind_tell_mark(now.marked.v[i], out);
		else
			more++;
	}
	if (more > 0)
		strv_addf(out, "%zu more entries of .git/index were marked "
		    "skip-worktree or assume-unchanged in the session ('git "
		    "ls-files -v' shows them with S or a lower-case tag)", more);
	for (i = 0, told = more = 0; i < now.replace.n; i++) {
		if (strv_contains(&start->replace, now.replace.v[i]))
			continue;
		if (told++ < SNAP_BLIND_TELL)
			snap_blind_tell_replace(now.replace.v[i], out);
		else
			more++;
	}
	if (more > 0)
		strv_addf(out, "%zu more replace refs were made in the session "
		    "('git replace --list' shows them)", more);
	snap_blind_untr(project, start, &now, out);
	snap_blind_free(&now);
}
