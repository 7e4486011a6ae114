/* undo --refs: branch tips, HEAD and the index back as they were at session start. */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/snap-int.h"

/* One "oid refname" line per branch, from for-each-ref. */
static int
snap_refs_now(struct snap_repo *r, struct strv *now, char **cause)
{
	struct buf out;
	char *line, *save = NULL;
	const char *args[] = { "for-each-ref", "--format=%(refname) "
	    "%(objectname)", "refs/heads/", NULL };

	strv_init(now);
	buf_init(&out);
	if (snap_git(r, SNAP_ENV_PROJECT, args, NULL, &out, cause) == -1) {
		buf_free(&out);
		return -1;
	}
	for (line = strtok_r(out.data, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save))
		strv_add(now, line);
	buf_free(&out);
	return 0;
}

/* The value of REF in "ref value" lines, or NULL; borrowed. */
static const char *
snap_refs_find(char *const *v, size_t n, const char *ref)
{
	size_t i, len = strlen(ref);

	for (i = 0; i < n; i++) {
		if (strncmp(v[i], ref, len) == 0 && v[i][len] == ' ')
			return v[i] + len + 1;
	}
	return NULL;
}

static int
snap_refs_set(struct snap_repo *r, const char *ref, const char *oid,
    const char *old, const char *msg, char **cause)
{
	const char *args[] = { "update-ref", "-m", msg, ref, oid, old, NULL };

	return snap_git(r, SNAP_ENV_PROJECT, args, NULL, NULL, cause);
}

/* Branches recorded at start: back to their tips (the reflog keeps the agent's). */
static int
snap_refs_branches(struct snap_repo *r, char **rec, size_t nrec,
    struct strv *now, const char *msg, bool dry, FILE *out, char **cause)
{
	const char *cur;
	char *ref;
	size_t i;

	for (i = 0; i < nrec; i++) {
		if (strncmp(rec[i], "refs/heads/", 11) != 0)
			continue;
		ref = xstrndup(rec[i], strcspn(rec[i], " "));
		cur = snap_refs_find(now->v, now->n, ref);
		const char *want = rec[i] + strlen(ref) + 1;
		if (cur != NULL && strcmp(cur, want) == 0) {
			free(ref);
			continue;
		}
		fprintf(out, "  %sreset   %s to %.12s (it was %.12s)\n",
		    dry ? "would " : "", ref + 11, want, cur != NULL ? cur :
		    "deleted");
		if (!dry && snap_refs_set(r, ref, want, cur != NULL ? cur : "",
		    msg, cause) == -1) {
			free(ref);
			return -1;
		}
		free(ref);
	}
	for (i = 0; i < now->n; i++) {
		ref = xstrndup(now->v[i], strcspn(now->v[i], " "));
		if (snap_refs_find(rec, nrec, ref) == NULL)
			fprintf(out, "  keep    %s: made during the session; "
			    "delete it with 'git branch -D %s'\n", ref + 11,
			    ref + 11);
		free(ref);
	}
	return 0;
}

static int
snap_refs_head(struct snap_repo *r, const char *rec, const char *msg,
    bool dry, FILE *out, char **cause)
{
	char *oid, *sym = NULL;
	int rc = 0;

	oid = snap_repo_head(r, &sym);
	if (strncmp(rec, "ref: ", 5) == 0) {
		if (sym == NULL || strcmp(sym, rec + 5) != 0) {
			const char *args[] = { "symbolic-ref", "-m", msg, "HEAD",
			    rec + 5, NULL };

			fprintf(out, "  %sswitch  HEAD to %s\n", dry ? "would " :
			    "", rec + 5);
			if (!dry)
				rc = snap_git(r, SNAP_ENV_PROJECT, args, NULL, NULL,
				    cause);
		}
	} else if (sym != NULL || oid == NULL || strcmp(oid, rec) != 0) {
		const char *args[] = { "update-ref", "--no-deref", "-m", msg,
		    "HEAD", rec, NULL };

		fprintf(out, "  %sdetach  HEAD at %.12s\n", dry ? "would " : "",
		    rec);
		if (!dry)
			rc = snap_git(r, SNAP_ENV_PROJECT, args, NULL, NULL, cause);
	}
	free(oid);
	free(sym);
	return rc;
}

static bool
snap_refs_same_file(const char *a, const char *b)
{
	struct buf x, y;
	bool same;

	buf_init(&x);
	buf_init(&y);
	same = buf_read_file(&x, a) == 0 && buf_read_file(&y, b) == 0 &&
	    x.len == y.len && (x.len == 0 || memcmp(x.data, y.data, x.len) == 0);
	buf_free(&x);
	buf_free(&y);
	return same;
}

/* The index as it was at start, through git's own lock protocol. */
static int
snap_refs_index(struct snap_repo *r, int64_t session, bool dry, FILE *out,
    char **cause)
{
	char *data, *saved = NULL, *lock = NULL;
	int rc = -1, fd;

	if ((data = path_data_dir(cause)) == NULL)
		return -1;
	saved = xprintf("%s/sessions/%lld/git-index", data, (long long)session);
	free(data);
	if (access(saved, R_OK) != 0 || snap_refs_same_file(saved, r->projindex)) {
		free(saved);
		return 0;
	}
	fprintf(out, "  %srestore the index (.git/index) as it was at start\n",
	    dry ? "would " : "");
	if (dry) {
		free(saved);
		return 0;
	}
	lock = xprintf("%s.lock", r->projindex);
	if ((fd = open(lock, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
	    0600)) == -1)
		*cause = xprintf("cannot lock %s: %s (is git running?)", lock,
		    strerror(errno));
	else if (close(fd) == 0 && snap_copy_file(saved, lock, cause) == 0 &&
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

int
snap_undo_refs(struct store *st, struct snap_repo *r, int64_t session,
    bool dry, FILE *out, char **cause)
{
	struct strv now;
	const char *head;
	char **rec, *msg;
	size_t nrec, i;
	int rc = -1;

	rec = store_session_refs(st, session, &nrec);
	if (r->projgit == NULL || nrec == 0) {
		fprintf(out, "  --refs: no refs were recorded at the start of "
		    "session %lld; nothing to reset\n", (long long)session);
		rc = 0;
		goto out;
	}
	msg = xprintf("agentmux: undo --refs of session %lld",
	    (long long)session);
	if (snap_refs_now(r, &now, cause) == 0 &&
	    snap_refs_branches(r, rec, nrec, &now, msg, dry, out, cause) == 0 &&
	    ((head = snap_refs_find(rec, nrec, "HEAD")) == NULL ||
	    snap_refs_head(r, head, msg, dry, out, cause) == 0) &&
	    snap_refs_index(r, session, dry, out, cause) == 0)
		rc = 0;
	strv_free(&now);
	free(msg);
out:
	for (i = 0; i < nrec; i++)
		free(rec[i]);
	free(rec);
	return rc;
}
