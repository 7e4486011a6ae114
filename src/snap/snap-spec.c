/* What users type: snapshot names (1, start, end, latest, latest~1, a commit prefix) and paths. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "snap/snap-int.h"

/* Digit strings shorter than this are snapshot numbers, longer ones commit prefixes. */
#define SNAP_SPEC_MIN_COMMIT 7

static bool
snap_spec_digits(const char *s)
{
	return *s != '\0' && strspn(s, "0123456789") == strlen(s);
}

static bool
snap_spec_hex(const char *s)
{
	size_t n = strlen(s);

	return n >= 4 && n <= 64 && strspn(s, "0123456789abcdef") == n;
}

/* The index of the snapshot named BASE in V, or -1 with *CAUSE. */
static long
snap_spec_base(struct store_snapshot **v, size_t n, const char *base,
    int64_t session, char **cause)
{
	long i, found = -1;

	if (strcmp(base, "start") == 0 || strcmp(base, "first") == 0) {
		for (i = 0; i < (long)n; i++) {
			if (strcmp(v[i]->kind, "start") == 0)
				return i;
		}
		return 0;
	}
	if (strcmp(base, "latest") == 0 || strcmp(base, "last") == 0)
		return (long)n - 1;
	if (strcmp(base, "end") == 0) {
		for (i = (long)n - 1; i >= 0; i--) {
			if (strcmp(v[i]->kind, "end") == 0)
				return i;
		}
		*cause = xprintf("session %lld has no end snapshot (it is "
		    "running, or it crashed); use 'latest'", (long long)session);
		return -1;
	}
	if (base[0] == '#')
		base++;
	if (snap_spec_digits(base) && strlen(base) < SNAP_SPEC_MIN_COMMIT) {
		i = strtol(base, NULL, 10);
		if (i >= 1 && i <= (long)n)
			return i - 1;
		*cause = xprintf("session %lld has snapshots 1 to %zu, not %s",
		    (long long)session, n, base);
		return -1;
	}
	if (snap_spec_hex(base)) {
		for (i = 0; i < (long)n; i++) {
			if (strncmp(v[i]->commit, base, strlen(base)) != 0)
				continue;
			if (found != -1) {
				*cause = xprintf("'%s' names more than one "
				    "snapshot of session %lld; give more digits",
				    base, (long long)session);
				return -1;
			}
			found = i;
		}
		if (found != -1)
			return found;
	}
	*cause = xprintf("session %lld has no snapshot '%s'; give a number "
	    "from 'agentmux snapshots %lld', start, end, latest, NAME~N or a "
	    "commit id", (long long)session, base, (long long)session);
	return -1;
}

struct store_snapshot *
snap_resolve(struct store *st, int64_t session, const char *spec,
    int64_t *seq, char **cause)
{
	struct store_snapshot **v, *s = NULL;
	char *base, *tilde;
	long i, back = 0;
	size_t n;

	v = store_snapshot_list(st, session, &n);
	if (n == 0) {
		*cause = xprintf("session %lld has no snapshots",
		    (long long)session);
		return NULL;
	}
	base = xstrdup(spec);
	if ((tilde = strrchr(base, '~')) != NULL) {
		*tilde = '\0';
		if (tilde[1] == '\0')
			back = 1;
		else if (snap_spec_digits(tilde + 1))
			back = strtol(tilde + 1, NULL, 10);
		else
			back = -1;
		if (*base == '\0')
			strcpy(base, "latest");
	}
	if (back < 0)
		*cause = xprintf("'%s' is not a snapshot: after '~' comes a "
		    "count, as in latest~1", spec);
	else if ((i = snap_spec_base(v, n, base, session, cause)) != -1) {
		if (i - back < 0)
			*cause = xprintf("'%s' goes back before the first "
			    "snapshot of session %lld", spec, (long long)session);
		else if (v[i - back]->dropped_at != 0) {
			char when[32];

			*cause = xprintf("snapshot %ld of session %lld was dropped "
			    "on %s to keep the project's snapshots within "
			    "[snapshots] max_size; pick another from 'agentmux "
			    "snapshots %lld'", i - back + 1, (long long)session,
			    util_fmt_time(when, sizeof when,
			    v[i - back]->dropped_at), (long long)session);
		} else {
			s = v[i - back];
			v[i - back] = NULL;
			if (seq != NULL)
				*seq = i - back + 1;
		}
	}
	free(base);
	store_snapshot_list_free(v, n);
	return s;
}

/* Resolves "." and ".." in an absolute path, in place. */
static void
snap_path_clean(char *p)
{
	char *out = p, *s = p, *seg;
	size_t len;

	while (*s != '\0') {
		while (*s == '/')
			s++;
		seg = s;
		while (*s != '/' && *s != '\0')
			s++;
		len = (size_t)(s - seg);
		if (len == 0 || (len == 1 && seg[0] == '.'))
			continue;
		if (len == 2 && seg[0] == '.' && seg[1] == '.') {
			while (out > p && *--out != '/')
				;
			continue;
		}
		*out++ = '/';
		memmove(out, seg, len);
		out += len;
	}
	if (out == p)
		*out++ = '/';
	*out = '\0';
}

char *
snap_relpath(const char *worktree, const char *path, char **cause)
{
	char cwd[4096], *abs;
	size_t n = strlen(worktree);

	if (path[0] == '/')
		abs = xstrdup(path);
	else if (getcwd(cwd, sizeof cwd) == NULL) {
		*cause = xprintf("cannot find the current directory: %s",
		    strerror(errno));
		return NULL;
	} else
		abs = xprintf("%s/%s", cwd, path);
	snap_path_clean(abs);
	if (strcmp(abs, worktree) == 0) {
		free(abs);
		return xstrdup("");
	}
	if (strncmp(abs, worktree, n) != 0 || abs[n] != '/') {
		*cause = xprintf("%s is outside the project %s", path, worktree);
		free(abs);
		return NULL;
	}
	memmove(abs, abs + n + 1, strlen(abs + n + 1) + 1);
	return abs;
}
