/*
 * The user's own history against a hostile session. The jail sees each git
 * dir's objects through an overlay (the host's objects the read-only lower
 * layer, the session's own dir the upper one), so no object that existed
 * at the start can be deleted or changed from inside while git there works
 * as ever; the session's new objects are brought back as they appear
 * (snap-import.c). Refs, HEAD and reflogs as they were at the start are
 * kept in the session's dir, out of the jail's reach: reflog entries the
 * session removed are put back when it ends, and `undo --refs` puts every
 * branch, tag and HEAD back (snap-refs.c). Everything in a git dir is read
 * without following a link: the jail could have left one anywhere.
 */
#include <sys/stat.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <event2/event.h>

#include "snap/snap-int.h"

/* Submodule git dirs looked for under .git/modules: how deep, how many. */
#define SNAP_HIST_DEPTH 8
#define SNAP_HIST_MAX 256
/* Nested repositories looked for in the project: how deep, in how many dirs. */
#define SNAP_HIST_NEST_DEPTH 16
#define SNAP_HIST_NEST_MAX 200000
/* Ref files and HEAD are small; a reflog is read whole. */
#define SNAP_HIST_REF_MAX 4096
#define SNAP_HIST_LOG_MAX (256 * 1024 * 1024)
/* What is read of a reflog at a time for its last line, and that line's most. */
#define SNAP_HIST_LOG_TAIL (64 * 1024)
#define SNAP_HIST_LOG_LINE_MAX ((off_t)16 << 20)

/* ---- refs, read without git ---- */

/* DE's type, asked of the file system if readdir did not say (no link followed). */
static int
snap_hist_type(DIR *d, const struct dirent *de)
{
	struct stat st;

	if (de->d_type != DT_UNKNOWN)
		return de->d_type;
	if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == -1)
		return DT_UNKNOWN;
	if (S_ISDIR(st.st_mode))
		return DT_DIR;
	return S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
}

bool
snap_hist_refname_ok(const char *ref)
{
	const char *p;

	if (strncmp(ref, "refs/", 5) != 0 || strstr(ref, "..") != NULL ||
	    strstr(ref, "//") != NULL || strstr(ref, "/.") != NULL ||
	    strstr(ref, "@{") != NULL || ref[strlen(ref) - 1] == '/' ||
	    ref[strlen(ref) - 1] == '.' || (strlen(ref) > 5 &&
	    strcmp(ref + strlen(ref) - 5, ".lock") == 0))
		return false;
	for (p = ref; *p != '\0'; p++) {
		if ((unsigned char)*p <= 0x20 || *p == 0x7f ||
		    strchr("~^:?*[\\", *p) != NULL)
			return false;
	}
	return true;
}

/*
 * A symbolic ref's target git follows: a ref name, or a name of one level
 * (ORIG_HEAD, FETCH_HEAD: git's check_refname_format with
 * REFNAME_ALLOW_ONELEVEL).
 */
static bool
snap_hist_target_ok(const char *name)
{
	char *full;
	bool ok;

	if (strchr(name, '/') != NULL)
		return snap_hist_refname_ok(name);
	full = xprintf("refs/%s", name);
	ok = name[0] != '\0' && snap_hist_refname_ok(full);
	free(full);
	return ok;
}

size_t
snap_hist_hash_len(int gfd)
{
	struct buf b;
	size_t len = 40;

	/* As git reads it: a line of agentmux's own parsing took "name = x\\" and the next line apart (review 9 F1). */
	buf_init(&b);
	if (path_read_beneath(gfd, "config", 1024 * 1024, &b) == 0)
		len = 2 * snap_hist_oidlen_text(b.data != NULL ? b.data : "",
		    b.len);
	buf_free(&b);
	return len;
}

/* The length of the object id V begins with (40 or 64 hex digits of either case, then the end or a space), or 0. */
static size_t
snap_hist_oid_len(const char *v)
{
	size_t n = strspn(v, "0123456789abcdefABCDEF");

	if ((n != 40 && n != 64) || (v[n] != '\0' &&
	    !isspace((unsigned char)v[n])))
		return 0;
	return n;
}

char *
snap_hist_parse(const char *text)
{
	char *v = xstrdup(text), *out = NULL, *p;
	size_t n = strlen(v), i;

	/* Trailing whitespace first, as git's strbuf_rtrim. */
	while (n > 0 && isspace((unsigned char)v[n - 1]))
		v[--n] = '\0';
	if (strncmp(v, "ref:", 4) == 0) {
		for (p = v + 4; isspace((unsigned char)*p); p++)
			;
		if (snap_hist_target_ok(p))
			out = xprintf("ref: %s", p);
	} else if ((n = snap_hist_oid_len(v)) != 0) {
		out = xstrndup(v, n);
		for (i = 0; i < n; i++)
			out[i] = (char)tolower((unsigned char)out[i]);
	}
	free(v);
	return out;
}

bool
snap_hist_value_ok(const char *v)
{
	size_t n = strspn(v, "0123456789abcdef");

	if (strncmp(v, "ref: ", 5) == 0)
		return snap_hist_target_ok(v + 5);
	return (n == 40 || n == 64) && v[n] == '\0';
}

int
snap_hist_read(int dirfd, const char *rel, struct buf *b, size_t max)
{
	struct stat st;
	int fd, rc = -1;

	buf_reset(b);
	fd = path_open_beneath(dirfd, rel, O_RDONLY | O_NONBLOCK, 0);
	if (fd == -1)
		return -1;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    (size_t)st.st_size <= max && buf_read_fd(b, fd) == 0)
		rc = 0;
	else if (fstat(fd, &st) == 0)
		errno = EINVAL;         /* not a plain file, or too big */
	close(fd);
	if (rc == 0 && b->data == NULL)
		buf_adds(b, "");
	return rc;
}

/*
 * Ref lists are "name\tvalue" entries. Those read from a git dir or a
 * record are sorted by name and looked up by halving: a repository (or
 * an agent) may hold millions of refs, and a look-up of each in a list
 * read one entry at a time took hours at a session's end.
 */

/* NAME (LEN bytes) against the name of ENTRY, in strcmp's order. */
static int
snap_hist_name_cmp(const char *name, size_t len, const char *entry)
{
	size_t elen = strcspn(entry, "\t");
	int c = memcmp(name, entry, len < elen ? len : elen);

	if (c != 0)
		return c;
	return len < elen ? -1 : len > elen;
}

static int
snap_hist_entry_cmp(const void *a, const void *b)
{
	const char *x = *(char *const *)a, *y = *(char *const *)b;

	return snap_hist_name_cmp(x, strcspn(x, "\t"), y);
}

void
snap_hist_sort(struct strv *refs)
{
	if (refs->n > 1)
		qsort(refs->v, refs->n, sizeof *refs->v, snap_hist_entry_cmp);
	refs->sorted = true;
}

const char *
snap_hist_value(const struct strv *refs, const char *ref)
{
	size_t i, n = strlen(ref), lo = 0, hi = refs->n, mid;
	int c;

	if (!refs->sorted) {
		for (i = 0; i < refs->n; i++) {
			if (strncmp(refs->v[i], ref, n) == 0 &&
			    refs->v[i][n] == '\t')
				return refs->v[i] + n + 1;
		}
		return NULL;
	}
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		/* An entry with no value (no tab) names nothing. */
		if ((c = snap_hist_name_cmp(ref, n, refs->v[mid])) == 0)
			return refs->v[mid][n] == '\t' ? refs->v[mid] + n + 1 :
			    NULL;
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

size_t snap_hist_packed_max = SNAP_HIST_LOG_MAX;

bool
snap_hist_packed_unread(const struct strv *refs)
{
	return snap_hist_value(refs, SNAP_HIST_PACKED) != NULL;
}

char *
snap_hist_packed_why(int gitfd)
{
	char size[32], max[32];
	struct stat st;

	if (fstatat(gitfd, "packed-refs", &st, AT_SYMLINK_NOFOLLOW) == -1)
		return xprintf("cannot be looked at: %s", strerror(errno));
	if (S_ISLNK(st.st_mode))
		return xstrdup("a symbolic link (agentmux follows none)");
	if (!S_ISREG(st.st_mode))
		return xstrdup("not a plain file");
	if ((uint64_t)st.st_size > snap_hist_packed_max)
		return xprintf("%s, more than the %s agentmux reads",
		    util_fmt_size(size, sizeof size, st.st_size),
		    util_fmt_size(max, sizeof max,
		    (int64_t)snap_hist_packed_max));
	return xstrdup("unreadable");
}

int
snap_hist_packed_scan(int gitfd, const char *name, const struct strv *start,
    size_t *n, struct strv *heads, size_t max)
{
	char *line = NULL, *ref;
	size_t cap = 0, len;
	struct stat st;
	ssize_t got;
	FILE *f;
	int fd;

	*n = 0;
	if ((fd = openat(gitfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC)) == -1)
		return -1;
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    (f = fdopen(fd, "r")) == NULL) {
		close(fd);
		errno = EINVAL;
		return -1;
	}
	/* A line at a time: the file is one agentmux would not read whole. */
	while ((got = getline(&line, &cap, f)) > 0) {
		if (line[got - 1] == '\n')
			line[got - 1] = '\0';
		if ((len = snap_hist_oid_len(line)) == 0 || line[len] == '\0')
			continue;
		ref = line + len + 1;
		if (!snap_hist_refname_ok(ref) || strncmp(ref, "refs/replace/",
		    13) == 0 || snap_hist_value(start, ref) != NULL)
			continue;
		(*n)++;
		if (strncmp(ref, "refs/heads/", 11) == 0 && heads->n < max &&
		    !strv_contains(heads, ref))
			strv_add(heads, ref);
	}
	free(line);
	fclose(f);
	return 0;
}

/*
 * The entry for a packed-refs not read: SNAP_HIST_UNREAD, then what the
 * file is (device, inode, size, times), so that one changed between the
 * start and the end is told even though neither could be read.
 */
static void
snap_hist_packed_mark(int gitfd, struct strv *out)
{
	struct stat st;

	if (fstatat(gitfd, "packed-refs", &st, AT_SYMLINK_NOFOLLOW) == -1)
		memset(&st, 0, sizeof st);
	strv_addf(out, "%s\t%s %o %llx:%llu %lld %lld.%09ld %lld.%09ld",
	    SNAP_HIST_PACKED, SNAP_HIST_UNREAD, (unsigned)st.st_mode,
	    (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
	    (long long)st.st_size, (long long)st.st_mtim.tv_sec,
	    st.st_mtim.tv_nsec, (long long)st.st_ctim.tv_sec,
	    st.st_ctim.tv_nsec);
}

/*
 * Snapshot refs older versions wrote into the project (refs/agentmux/
 * sessions/N, refs/agentmux/snaps/N/...): agentmux's, not the user's.
 * Any other ref under refs/agentmux is a ref like any other (one named
 * refs/agentmux/ID/NAME is what git takes first for a worktree branch's
 * short name).
 */
static bool
snap_hist_legacy(const char *ref)
{
	return strncmp(ref, "refs/agentmux/snaps/", 20) == 0 ||
	    strncmp(ref, "refs/agentmux/sessions/", 23) == 0;
}

/*
 * packed-refs as git reads it (refs/packed-backend.c): "ID NAME" lines,
 * the id in hex of either case and any whitespace after it, '#' a header,
 * '^' a peeled tag. A line git cannot parse makes git fail at every ref
 * it reads ("unexpected line"); it names nothing here. Its refs go into
 * OUT as they come, a name twice if it is on two lines (snap_hist_fold).
 * -1 if it is there and cannot be read (too big, not a plain file): its
 * refs are not known, which is not the same as none.
 */
static int
snap_hist_packed(int gitfd, struct strv *out)
{
	char *line, *eol, *v;
	struct buf b;
	size_t n;
	bool gone;

	buf_init(&b);
	if (snap_hist_read(gitfd, "packed-refs", &b, snap_hist_packed_max) ==
	    -1) {
		gone = errno == ENOENT;
		buf_free(&b);
		return gone ? 0 : -1;
	}
	/*
	 * Line by line, each up to a NUL in it, as git lists them: git reads
	 * the lines past one (review: a reading that stopped at the first
	 * NUL missed every ref after it).
	 */
	for (line = b.data; line < b.data + b.len; line = eol + 1) {
		if ((eol = memchr(line, '\n', (size_t)(b.data + b.len -
		    line))) == NULL)
			eol = b.data + b.len;
		else
			*eol = '\0';
		if (*line == '\0' || *line == '#' || *line == '^' ||
		    (n = snap_hist_oid_len(line)) == 0 || line[n] == '\0')
			continue;
		line[n] = '\0';
		if (!snap_hist_refname_ok(line + n + 1) ||
		    snap_hist_legacy(line + n + 1))
			continue;
		v = snap_hist_parse(line);
		strv_addf(out, "%s\t%s", line + n + 1, v);
		free(v);
	}
	buf_free(&b);
	return 0;
}

/*
 * Whether NAME is one git's check_refname_format takes (one level
 * allowed), as no packed-refs line the session brings back may be
 * otherwise: one it only warns of there makes git gc fail ("bad object")
 * and its pack-refs write it with a zero id.
 */
static bool
snap_hist_refname_strict(const char *name)
{
	char *full;
	bool ok;

	if (name[0] == '\0' || strcmp(name, "@") == 0 || name[0] == '.' ||
	    name[0] == '/' || strstr(name, ".lock/") != NULL)
		return false;
	if (strncmp(name, "refs/", 5) == 0)
		return snap_hist_refname_ok(name);
	full = xprintf("refs/%s", name);
	ok = snap_hist_refname_ok(full);
	free(full);
	return ok;
}

/*
 * A ref name git takes from packed-refs without dying: one
 * check_refname_format takes (one level allowed), or else one its
 * refname_is_safe takes (git then ignores it with a warning).
 */
static bool
snap_hist_packed_name_ok(const char *name)
{
	const char *rest, *p, *c;
	size_t n;

	/* "@" alone: check_refname_format refuses it, and it is not safe (git dies). */
	if (strcmp(name, "@") == 0)
		return false;
	if (name[0] != '\0' && snap_hist_target_ok(name))
		return true;
	if (strncmp(name, "refs/", 5) == 0) {
		rest = name + 5;
		n = strlen(rest);
		if (n == 0 || rest[0] == '/' || rest[n - 1] == '/' ||
		    strstr(rest, "//") != NULL)
			return false;
		/* No "." or ".." part (git's normalize_path_copy would change it). */
		for (p = rest; *p != '\0'; p = *c == '/' ? c + 1 : c) {
			c = p + strcspn(p, "/");
			if ((c - p == 1 && p[0] == '.') || (c - p == 2 &&
			    p[0] == '.' && p[1] == '.'))
				return false;
		}
		return true;
	}
	for (p = name; *p != '\0'; p++) {
		if (!isupper((unsigned char)*p) && *p != '_')
			return false;
	}
	return name[0] != '\0';
}

/*
 * What a packed-refs line (without its newline) is to git
 * (refs/packed-backend.c), in a repository of ids of LEN hex digits:
 * the header (first line only), a peeled id ('^'), a ref ("ID NAME", one
 * whitespace between), or a line git cannot parse, which makes it fail
 * at every ref it reads.
 */
enum snap_hist_pline { SNAP_PL_HEADER, SNAP_PL_PEEL, SNAP_PL_REF,
    SNAP_PL_BAD };

/*
 * Whether LINE begins with an id as git reads one there (parse_oid_hex):
 * exactly LEN hex digits (the repository's), then the end or git's own
 * whitespace (space, tab, CR: not C's vertical tab or form feed).
 */
static bool
snap_hist_packed_oid(const char *line, size_t len)
{
	return strspn(line, "0123456789abcdefABCDEF") == len &&
	    (line[len] == '\0' || line[len] == ' ' || line[len] == '\t' ||
	    line[len] == '\r');
}

static enum snap_hist_pline
snap_hist_packed_kind(const char *line, bool first, size_t len)
{
	if (first && strncmp(line, "# pack-refs with:", 17) == 0)
		return SNAP_PL_HEADER;
	if (line[0] == '^')
		return snap_hist_packed_oid(line + 1, len) &&
		    line[1 + len] == '\0' ? SNAP_PL_PEEL : SNAP_PL_BAD;
	if (!snap_hist_packed_oid(line, len) || line[len] == '\0' ||
	    !snap_hist_packed_name_ok(line + len + 1))
		return SNAP_PL_BAD;
	return SNAP_PL_REF;
}

/* A ref line of packed-refs: its name, its place, whether it has the value to keep. */
struct snap_hist_pref {
	const char *name;
	size_t at;
	bool want;
};

static int
snap_hist_pref_cmp(const void *a, const void *b)
{
	const struct snap_hist_pref *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	if (c != 0)
		return c;
	if (x->want != y->want)
		return x->want ? -1 : 1;
	return x->at < y->at ? -1 : x->at > y->at;
}

/*
 * Which ref lines of LINES stay: one per ref, the first with KEEP's value
 * for it if one has it, else the first (the one git reads).
 */
static bool *
snap_hist_packed_pick(const struct strv *lines, const bool *is_ref,
    size_t len, const struct strv *keep)
{
	struct snap_hist_pref *v = xcalloc(lines->n + 1, sizeof *v);
	bool *stay = xcalloc(lines->n + 1, sizeof *stay);
	const char *want;
	size_t i, n = 0;

	for (i = 0; i < lines->n; i++) {
		if (!is_ref[i])
			continue;
		v[n].name = lines->v[i] + len + 1;
		v[n].at = i;
		want = keep != NULL ? snap_hist_value(keep, v[n].name) : NULL;
		v[n].want = want != NULL && strlen(want) == len &&
		    strncasecmp(lines->v[i], want, len) == 0;
		n++;
	}
	qsort(v, n, sizeof *v, snap_hist_pref_cmp);
	for (i = 0; i < n; i++)
		stay[v[i].at] = i == 0 || strcmp(v[i].name, v[i - 1].name) != 0;
	free(v);
	return stay;
}

/* TEXT cut into lines (without their newlines), each as git reads it, up to a NUL in it; the length of a last line without one into *CUT. */
static void
snap_hist_split(const struct buf *text, struct strv *lines, size_t *cut)
{
	size_t i, start = 0;

	for (i = 0; i < text->len; i++) {
		if (text->data[i] != '\n')
			continue;
		strv_addf(lines, "%.*s", (int)(i - start), text->data + start);
		start = i + 1;
	}
	*cut = text->len - start;
	if (*cut > 0)
		strv_addf(lines, "%.*s", (int)*cut, text->data + start);
}

/*
 * Whether the header LINE claims the ref lines sorted (git then looks a
 * ref up by halving the file, and misses one listed out of order); into
 * FIXED (if not NULL) without that claim (git then sorts them itself).
 */
static bool
snap_hist_packed_header(const char *line, bool drop_sorted, struct buf *fixed)
{
	char *traits = xstrdup(line + 17), *t, *save = NULL;
	bool sorted = false;

	if (fixed != NULL)
		buf_adds(fixed, "# pack-refs with:");
	for (t = strtok_r(traits, " ", &save); t != NULL;
	    t = strtok_r(NULL, " ", &save)) {
		if (strcmp(t, "sorted") == 0)
			sorted = true;
		if (fixed != NULL && (!drop_sorted || strcmp(t, "sorted") != 0))
			buf_printf(fixed, " %s", t);
	}
	if (fixed != NULL)
		buf_adds(fixed, " \n");
	free(traits);
	return sorted;
}

/*
 * The names of the ref lines of LINES that STAY but come after a greater
 * one (into UNSORTED, if not NULL), when the header claims them sorted:
 * git would not find them, or others, by its binary search. Whether any.
 */
static bool
snap_hist_packed_unsorted(const struct strv *lines, const bool *is_ref,
    const bool *stay, size_t len, struct strv *unsorted)
{
	const char *name, *max = NULL;
	size_t i;
	bool any = false;

	if (lines->n == 0 || snap_hist_packed_kind(lines->v[0], true, len) !=
	    SNAP_PL_HEADER || !snap_hist_packed_header(lines->v[0], false,
	    NULL))
		return false;
	for (i = 0; i < lines->n; i++) {
		if (!is_ref[i] || !stay[i])
			continue;
		name = lines->v[i] + len + 1;
		if (max != NULL && strcmp(name, max) <= 0) {
			any = true;
			if (unsorted != NULL)
				strv_add(unsorted, name);
		} else
			max = name;
	}
	return any;
}

/*
 * A ref of a packed-refs text: its name, its line, its peeled line (or
 * NULL). LINE NULL: the side's line for it was left out (git could not
 * read it, or it was listed twice): taken as unchanged.
 */
struct snap_hist_pentry {
	const char *name;
	const char *line;
	const char *peel;
};

static int
snap_hist_pentry_cmp(const void *a, const void *b)
{
	return strcmp(((const struct snap_hist_pentry *)a)->name,
	    ((const struct snap_hist_pentry *)b)->name);
}

/* The most lines left out that are kept to be told (the rest are "and more"), and of each its first bytes. */
#define SNAP_HIST_LEFT_MAX 17
#define SNAP_HIST_LEFT_LINE 200

/* LINE into LEFT (if not NULL) to be told, its first bytes, while LEFT has fewer than SNAP_HIST_LEFT_MAX. */
static void
snap_hist_left_add(struct strv *left, const char *line)
{
	if (left != NULL && left->n < SNAP_HIST_LEFT_MAX)
		strv_addf(left, "%.*s", SNAP_HIST_LEFT_LINE, line);
}

/*
 * Ref V[*K - 1] (of *K) left out: its line (and peel) into LEFT, and kept
 * as a name whose line was left out.
 */
static void
snap_hist_pentry_drop(struct snap_hist_pentry *v, size_t *k,
    struct strv *left)
{
	snap_hist_left_add(left, v[*k - 1].line);
	if (v[*k - 1].peel != NULL)
		snap_hist_left_add(left, v[*k - 1].peel);
	v[*k - 1].line = NULL;
	v[*k - 1].peel = NULL;
}

/* Every name of V (K sorted entries) listed twice made one entry whose line was left out, its lines into LEFT; how many stay. */
static size_t
snap_hist_pentries_once(struct snap_hist_pentry *v, size_t k,
    struct strv *left)
{
	size_t i, j, n = 0;

	for (i = 0; i < k; i = j) {
		for (j = i + 1; j < k && strcmp(v[j].name, v[i].name) == 0; j++)
			;
		v[n] = v[i];
		if (j - i > 1) {
			for (; i < j; i++) {
				if (v[i].line != NULL)
					snap_hist_left_add(left, v[i].line);
				if (v[i].peel != NULL)
					snap_hist_left_add(left, v[i].peel);
			}
			v[n].line = NULL;
			v[n].peel = NULL;
		}
		n++;
	}
	return n;
}

/*
 * LINES[I], a line git cannot read (or a peeled id where none may be),
 * left out into LEFT; a peeled id right after its ref (or that ref's
 * peeled id) takes the ref with it (V, *K of them). Whether the peeled
 * ids after it go with it.
 */
static bool
snap_hist_pentry_bad(char *const *lines, size_t i, bool after_bad,
    struct snap_hist_pentry *v, size_t *k, struct strv *left)
{
	struct snap_hist_pentry *last = *k > 0 ? &v[*k - 1] : NULL;

	if (lines[i][0] == '^' && !after_bad && last != NULL &&
	    last->line != NULL && i > 0 && (lines[i - 1] == last->line ||
	    lines[i - 1] == last->peel))
		snap_hist_pentry_drop(v, k, left);
	snap_hist_left_add(left, lines[i]);
	return true;
}

/*
 * LINES (a packed-refs text's) as its refs, sorted by name, into *OUT
 * (*N of them). -1 if git could not read a line of it, or a ref is
 * listed twice (what git takes of it is not clear); unless LENIENT: such
 * lines are then left out (the first of them into LEFT, if not NULL), a
 * bad line with the peeled ids after it, a bad peeled id with its ref,
 * a ref listed twice whole; a ref whose lines were left out stays as a
 * name whose line was (struct snap_hist_pentry).
 */
static int
snap_hist_pentries(char *const *lines, size_t nlines, size_t len,
    bool lenient, struct strv *left, struct snap_hist_pentry **out,
    size_t *n)
{
	struct snap_hist_pentry *v = xcalloc(nlines + 1, sizeof *v);
	size_t i, k = 0;
	bool sorted = true, after_bad = false, dup = false, bad;

	for (i = 0; i < nlines; i++) {
		bad = false;
		switch (snap_hist_packed_kind(lines[i], i == 0, len)) {
		case SNAP_PL_HEADER:
			after_bad = false;
			break;
		case SNAP_PL_PEEL:
			/* The peeled ids after a line left out go with it. */
			if (after_bad && lenient)
				snap_hist_left_add(left, lines[i]);
			else if (k == 0 || v[k - 1].line == NULL ||
			    v[k - 1].peel != NULL || lines[i - 1] !=
			    v[k - 1].line)
				bad = true;
			else
				v[k - 1].peel = lines[i];
			break;
		case SNAP_PL_REF:
			after_bad = false;
			v[k].line = lines[i];
			v[k].name = lines[i] + len + 1;
			if (k > 0 && strcmp(v[k - 1].name, v[k].name) >= 0)
				sorted = false;
			k++;
			break;
		case SNAP_PL_BAD:
			bad = true;
			break;
		}
		if (bad && !lenient) {
			free(v);
			return -1;
		}
		if (bad)
			after_bad = snap_hist_pentry_bad(lines, i, after_bad, v,
			    &k, left);
	}
	/* git's own files are sorted already: sorting them again was most of a large merge. */
	if (!sorted)
		qsort(v, k, sizeof *v, snap_hist_pentry_cmp);
	for (i = 1; i < k && !dup; i++)
		dup = strcmp(v[i].name, v[i - 1].name) == 0;
	if (dup && !lenient) {
		free(v);
		return -1;
	}
	if (dup)
		k = snap_hist_pentries_once(v, k, left);
	*out = v;
	*n = k;
	return 0;
}

/*
 * TEXT's lines (without their newlines) as pointers into *COPY, a copy of
 * it cut at each newline, into *LINES (*N of them); a NUL made a \001
 * there. Callers free both.
 */
static void
snap_hist_cut(const struct buf *text, char **copy, char ***lines, size_t *n)
{
	size_t i, k = 0, start = 0, count = 0;
	char *c;

	for (i = 0; i < text->len; i++)
		count += text->data[i] == '\n';
	c = xmalloc(text->len + 1);
	if (text->len > 0)
		memcpy(c, text->data, text->len);
	c[text->len] = '\0';
	*lines = xcalloc(count + 2, sizeof **lines);
	for (i = 0; i < text->len; i++) {
		if (c[i] == '\0')
			c[i] = '\001';
		if (c[i] != '\n')
			continue;
		c[i] = '\0';
		(*lines)[k++] = c + start;
		start = i + 1;
	}
	if (start < text->len)
		(*lines)[k++] = c + start;
	*copy = c;
	*n = k;
}

/* Whether A and B hold the same ref the same way (both absent too). */
static bool
snap_hist_pentry_same(const struct snap_hist_pentry *a,
    const struct snap_hist_pentry *b)
{
	if (a == NULL || b == NULL || a == b)
		return a == b;
	return strcmp(a->line, b->line) == 0 && (a->peel == NULL ?
	    b->peel == NULL : b->peel != NULL && strcmp(a->peel, b->peel) ==
	    0);
}

/* The least name of the entries at V[I] (of N), W[J] (of M), X[K] (of L) there are. */
static const char *
snap_hist_pentry_least(const struct snap_hist_pentry *v, size_t i, size_t n,
    const struct snap_hist_pentry *w, size_t j, size_t m,
    const struct snap_hist_pentry *x, size_t k, size_t l)
{
	const char *least = NULL;

	if (i < n)
		least = v[i].name;
	if (j < m && (least == NULL || strcmp(w[j].name, least) < 0))
		least = w[j].name;
	if (k < l && (least == NULL || strcmp(x[k].name, least) < 0))
		least = x[k].name;
	return least;
}

/* V[*I] if it is NAME's entry (and *I past it), else NULL. */
static const struct snap_hist_pentry *
snap_hist_pentry_take(const struct snap_hist_pentry *v, size_t *i, size_t n,
    const char *name)
{
	if (*i < n && strcmp(v[*i].name, name) == 0)
		return &v[(*i)++];
	return NULL;
}

/*
 * Whether a packed-refs line may add NAME: a name under refs/ that git's
 * check_refname_format takes whole (a name of one level, "main" or "v1",
 * is found before refs/heads/main and refs/tags/v1: the user's git took
 * the jail's id for their branch; review 7 F1).
 */
static bool
snap_hist_packed_new_ok(const char *name)
{
	return strncmp(name, "refs/", 5) == 0 && snap_hist_refname_strict(name);
}

/*
 * E's ref line into OUT as git writes one (its id in lower case, one
 * space, its name: a tab or an upper-case id, which git takes, broke
 * other readers of the file), and PEEL's peeled id after it if not NULL.
 */
static void
snap_hist_pentry_put(struct buf *out, const struct snap_hist_pentry *e,
    const char *peel, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf_addc(out, (char)tolower((unsigned char)e->line[i]));
	buf_printf(out, " %s\n", e->name);
	if (peel == NULL)
		return;
	buf_addc(out, '^');
	for (i = 1; i <= len; i++)
		buf_addc(out, (char)tolower((unsigned char)peel[i]));
	buf_addc(out, '\n');
}

int
snap_hist_packed_merge(const struct buf *base, const struct buf *ours,
    const struct buf *theirs, size_t len, struct buf *out, struct strv *lost,
    struct strv *left)
{
	const bool lenient[3] = { left != NULL, left != NULL, false };
	const struct buf *text[3] = { base, ours, theirs };
	struct snap_hist_pentry *v[3] = { NULL, NULL, NULL };
	const struct snap_hist_pentry *b, *o, *t, *r;
	char *copy[3] = { NULL, NULL, NULL }, **lines[3] = { NULL, NULL, NULL };
	size_t nl[3], n[3] = { 0, 0, 0 }, at[3] = { 0, 0, 0 }, i;
	const char *name, *peel;
	int rc = -1;

	for (i = 0; i < 3; i++) {
		/*
		 * A NUL: git reads the line otherwise than a C string does
		 * (snap_hist_cut makes it a byte no name may have).
		 */
		if (!lenient[i] && text[i]->len > 0 &&
		    memchr(text[i]->data, '\0', text[i]->len) != NULL)
			goto out;
		snap_hist_cut(text[i], &copy[i], &lines[i], &nl[i]);
		/* The base is the jail's file as last brought back: what was left out then is not told again. */
		if (snap_hist_pentries(lines[i], nl[i], len, lenient[i], i == 1 ?
		    left : NULL, &v[i], &n[i]) == -1)
			goto out;
	}
	/* No peeled claim: git peels what it needs (the three may differ). */
	buf_adds(out, "# pack-refs with: sorted \n");
	/* The three sorted by name, walked together: each name once. */
	while ((name = snap_hist_pentry_least(v[0], at[0], n[0], v[1], at[1],
	    n[1], v[2], at[2], n[2])) != NULL) {
		b = snap_hist_pentry_take(v[0], &at[0], n[0], name);
		o = snap_hist_pentry_take(v[1], &at[1], n[1], name);
		t = snap_hist_pentry_take(v[2], &at[2], n[2], name);
		/*
		 * A name of the base none may add, not the user's: one left
		 * out last time (review 7 F4: told as a change of both).
		 */
		if (b != NULL && t == NULL && !snap_hist_packed_new_ok(name))
			b = NULL;
		/* A line left out: the base's as the user's is now; the jail's as unchanged (review 7 F5). */
		if (b != NULL && b->line == NULL)
			b = t;
		if (o != NULL && o->line == NULL)
			o = b;
		if (snap_hist_pentry_same(o, b))
			r = t;
		else if (snap_hist_pentry_same(t, b) ||
		    snap_hist_pentry_same(t, o)) {
			r = o;
			/*
			 * A name the session's git made: only one git takes
			 * whole, under refs/ (one of the start's it may give
			 * another id, as git gives a zero one to a name it
			 * only warns of).
			 */
			if (o != NULL && b == NULL && t == NULL &&
			    !snap_hist_packed_new_ok(name)) {
				if (left == NULL)
					goto out;
				snap_hist_left_add(left, o->line);
				if (o->peel != NULL)
					snap_hist_left_add(left, o->peel);
				continue;
			}
		} else {
			/* Both changed it, each its own way: theirs stays. */
			r = t;
			if (lost != NULL)
				strv_add(lost, name);
		}
		if (r == NULL)
			continue;
		/* A peeled id only as the user's file has it: git trusts one (review 7 F3: the jail's named another commit for a tag). */
		peel = t != NULL && strncasecmp(t->line, r->line, len) == 0 ?
		    t->peel : NULL;
		snap_hist_pentry_put(out, r, peel, len);
	}
	rc = 0;
out:
	for (i = 0; i < 3; i++) {
		free(v[i]);
		free(lines[i]);
		free(copy[i]);
	}
	if (rc == -1)
		errno = EBADMSG;
	return rc;
}

int
snap_hist_packed_check(int gitfd, const struct strv *keep,
    const struct strv *known, struct strv *bad, struct strv *outside,
    struct strv *unsorted, struct buf *fixed)
{
	struct strv lines;
	struct buf b;
	size_t i, cut, len = snap_hist_hash_len(gitfd);
	bool *is_ref, *stay, ref_kept = false, misordered;
	int changed = 0;

	buf_init(&b);
	if (fixed != NULL)
		buf_init(fixed);
	if (snap_hist_read(gitfd, "packed-refs", &b, snap_hist_packed_max) == -1) {
		buf_free(&b);
		return -1;
	}
	strv_init(&lines);
	snap_hist_split(&b, &lines, &cut);
	is_ref = xcalloc(lines.n + 1, sizeof *is_ref);
	for (i = 0; i < lines.n; i++)
		is_ref[i] = snap_hist_packed_kind(lines.v[i], i == 0, len) ==
		    SNAP_PL_REF && (cut == 0 || i + 1 < lines.n);
	stay = snap_hist_packed_pick(&lines, is_ref, len, keep);
	/* A name outside refs/ not known: out, with its peeled id. */
	for (i = 0; outside != NULL && i < lines.n; i++) {
		if (is_ref[i] && stay[i] && strncmp(lines.v[i] + len + 1,
		    "refs/", 5) != 0 && (known == NULL ||
		    snap_hist_value(known, lines.v[i] + len + 1) == NULL)) {
			strv_add(outside, lines.v[i]);
			stay[i] = false;
		}
	}
	if ((misordered = snap_hist_packed_unsorted(&lines, is_ref, stay,
	    len, unsorted)))
		changed = 1;
	for (i = 0; i < lines.n; i++) {
		/* A last line without its newline: git says "unterminated line". */
		if ((cut > 0 && i + 1 == lines.n) ||
		    snap_hist_packed_kind(lines.v[i], i == 0, len) == SNAP_PL_BAD) {
			strv_add(bad, lines.v[i]);
			ref_kept = false;
		} else if (snap_hist_packed_kind(lines.v[i], i == 0, len) ==
		    SNAP_PL_HEADER) {
			if (misordered)
				(void)snap_hist_packed_header(lines.v[i], true,
				    fixed);
			else if (fixed != NULL)
				buf_printf(fixed, "%s\n", lines.v[i]);
			continue;
		} else if (is_ref[i])
			ref_kept = stay[i];
		/* A peeled id goes with the ref line before it. */
		if ((is_ref[i] || lines.v[i][0] == '^') && ref_kept) {
			if (fixed != NULL)
				buf_printf(fixed, "%s\n", lines.v[i]);
			continue;
		}
		changed = 1;
	}
	free(stay);
	free(is_ref);
	strv_free(&lines);
	buf_free(&b);
	return changed;
}

/* Up to MAX bytes of FD into V (NUL-ended); the number read, or -1. */
static ssize_t
snap_hist_read_head(int fd, char *v, size_t max)
{
	size_t got = 0;
	ssize_t n;

	while (got < max && (n = read(fd, v + got, max - got)) != 0) {
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			return -1;
		got += (size_t)n;
	}
	v[got] = '\0';
	return (ssize_t)got;
}

/*
 * The value of the loose ref (or HEAD) NAME in the dir DFD as git reads
 * it (refs/files-backend.c): a link to a ref name is a symbolic ref; the
 * content of a file as snap_hist_parse reads it (its first
 * SNAP_HIST_REF_MAX bytes: an id is all git takes from the front). Any
 * other link (git reads the file it points to; agentmux follows no link),
 * a special file, or content git takes for a broken ref is
 * SNAP_HIST_UNREAD: never what it was at the start, so told and put back.
 * NULL if there is none. Caller frees.
 */
static char *
snap_hist_loose_value(int dfd, const char *name)
{
	char v[SNAP_HIST_REF_MAX + 1], *parsed = NULL;
	struct stat st;
	ssize_t n;
	int fd;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == -1)
		return errno == ENOENT ? NULL : xstrdup(SNAP_HIST_UNREAD);
	if (S_ISLNK(st.st_mode)) {
		n = readlinkat(dfd, name, v, sizeof v - 1);
		if (n > 0 && (v[n] = '\0', strncmp(v, "refs/", 5) == 0) &&
		    snap_hist_refname_ok(v))
			return xprintf("ref: %s", v);
	} else if (S_ISREG(st.st_mode) && (fd = openat(dfd, name, O_RDONLY |
	    O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)) != -1) {
		n = snap_hist_read_head(fd, v, SNAP_HIST_REF_MAX);
		close(fd);
		parsed = n == -1 ? NULL : snap_hist_parse(v);
		/* A ref name cut short is another name. */
		if (parsed != NULL && n == SNAP_HIST_REF_MAX &&
		    strncmp(parsed, "ref: ", 5) == 0) {
			free(parsed);
			parsed = NULL;
		}
	}
	return parsed != NULL ? parsed : xstrdup(SNAP_HIST_UNREAD);
}

/* Loose refs under DIR (a ref prefix, "refs"); agentmux's own are not the user's. */
static void
snap_hist_loose(int gitfd, const char *dir, int depth, struct strv *out)
{
	struct dirent *de;
	char *rel, *v;
	DIR *d;
	int fd;

	if (depth > 32 || strcmp(dir, "refs/agentmux/snaps") == 0 ||
	    strcmp(dir, "refs/agentmux/sessions") == 0 ||
	    (fd = path_open_beneath(gitfd, dir, O_RDONLY | O_DIRECTORY,
	    0)) == -1)
		return;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		rel = xprintf("%s/%s", dir, de->d_name);
		if (snap_hist_type(d, de) == DT_DIR)
			snap_hist_loose(gitfd, rel, depth + 1, out);
		else if (snap_hist_refname_ok(rel) &&
		    (v = snap_hist_loose_value(dirfd(d), de->d_name)) != NULL) {
			strv_addf(out, "%s\t%s", rel, v);
			free(v);
		}
		free(rel);
	}
	closedir(d);
}

/* A ref of a group of lines naming it: one value, or SNAP_HIST_UNREAD if they differ. */
static const char *
snap_hist_fold_value(char *const *v, size_t n, size_t len)
{
	size_t i;

	for (i = 1; i < n; i++) {
		if (strcmp(v[i] + len + 1, v[0] + len + 1) != 0)
			return SNAP_HIST_UNREAD;
	}
	return v[0] + len + 1;
}

/*
 * The refs of PACKED (packed-refs' lines, as they came) and LOOSE (files,
 * which git reads first) into OUT, sorted: a ref on two packed lines with
 * two values is SNAP_HIST_UNREAD (git's binary search may take either),
 * a loose one hides a packed one of its name.
 */
static void
snap_hist_fold(struct strv *packed, struct strv *loose, struct strv *out)
{
	size_t i = 0, j = 0, k, len;
	int c;

	snap_hist_sort(packed);
	snap_hist_sort(loose);
	while (i < packed->n || j < loose->n) {
		if (i == packed->n)
			c = 1;
		else if (j == loose->n)
			c = -1;
		else
			c = snap_hist_entry_cmp(&packed->v[i], &loose->v[j]);
		if (c > 0) {
			strv_add(out, loose->v[j++]);
			continue;
		}
		len = strcspn(packed->v[i], "\t");
		for (k = i + 1; k < packed->n &&
		    snap_hist_name_cmp(packed->v[i], len, packed->v[k]) == 0; k++)
			;
		if (c < 0)
			strv_addf(out, "%.*s\t%s", (int)len, packed->v[i],
			    snap_hist_fold_value(packed->v + i, k - i, len));
		else
			strv_add(out, loose->v[j++]);
		i = k;
	}
	out->sorted = true;
}

void
snap_hist_refs(int gitfd, struct strv *out)
{
	struct strv packed, loose;
	char *v;

	strv_init(out);
	strv_init(&packed);
	strv_init(&loose);
	if ((v = snap_hist_loose_value(gitfd, "HEAD")) != NULL)
		strv_addf(&loose, "HEAD\t%s", v);
	free(v);
	if (snap_hist_packed(gitfd, &packed) == -1)
		snap_hist_packed_mark(gitfd, &loose);
	snap_hist_loose(gitfd, "refs", 0, &loose);
	snap_hist_fold(&packed, &loose, out);
	strv_free(&packed);
	strv_free(&loose);
}

/* ---- reflogs ---- */

/* Copies the regular files under REL of FROMFD (a git dir) into TO, keeping the layout. */
static void
snap_hist_copy_logs(int fromfd, const char *rel, const char *to, int depth)
{
	struct dirent *de;
	char *sub, *dst;
	DIR *d;
	int fd, in, out;

	if (depth > 32 || strcmp(rel, "logs/refs/agentmux/snaps") == 0 ||
	    strcmp(rel, "logs/refs/agentmux/sessions") == 0 ||
	    (fd = path_open_beneath(fromfd, rel, O_RDONLY | O_DIRECTORY,
	    0)) == -1)
		return;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return;
	}
	path_mkdir_p(to, 0700);
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		sub = xprintf("%s/%s", rel, de->d_name);
		dst = xprintf("%s/%s", to, de->d_name);
		if (snap_hist_type(d, de) == DT_DIR)
			snap_hist_copy_logs(fromfd, sub, dst, depth + 1);
		else if (snap_hist_type(d, de) == DT_REG && (in = openat(dirfd(d),
		    de->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
		    O_CLOEXEC)) != -1) {
			out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
			    O_CLOEXEC, 0600);
			if (out != -1) {
				snap_copy_fd(in, out);
				close(out);
			}
			close(in);
		}
		free(dst);
		free(sub);
	}
	closedir(d);
}

/*
 * A reflog line ("old new ident time zone\tmessage") without its old id:
 * git reflog delete --rewrite (git stash drop) changes the old id of the
 * entry after the one it deletes, which is still the same entry.
 */
static const char *
snap_hist_entry(const char *line)
{
	const char *sp = strchr(line, ' ');

	return sp != NULL ? sp + 1 : line;
}

/* Orders reflog lines by their entries (new id and the rest of the line). */
static int
snap_hist_cmp(const void *a, const void *b)
{
	return strcmp(snap_hist_entry(*(char *const *)a),
	    snap_hist_entry(*(char *const *)b));
}

/*
 * A reflog's lines, in order and sorted by entry. Cut at each newline by
 * length, so that a NUL byte the session wrote into one line cuts that
 * line short, never the lines after it (nor, in a merge, the entries of
 * the start after it); empty lines go.
 */
struct snap_hist_log {
	char **v;
	char **sorted;
	size_t n;
};

static void
snap_hist_log_open(struct snap_hist_log *l, const struct buf *text)
{
	const char *p = text->data, *end = p != NULL ? p + text->len : NULL;
	const char *nl;

	memset(l, 0, sizeof *l);
	for (; p != NULL && p < end; p = nl + 1) {
		if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
			nl = end;
		if (nl > p) {
			l->v = xreallocarray(l->v, l->n + 1, sizeof *l->v);
			l->v[l->n++] = xstrndup(p, (size_t)(nl - p));
		}
		if (nl == end)
			break;
	}
	l->sorted = xcalloc(l->n + 1, sizeof *l->sorted);
	if (l->n > 0) {
		memcpy(l->sorted, l->v, l->n * sizeof *l->v);
		qsort(l->sorted, l->n, sizeof *l->sorted, snap_hist_cmp);
	}
}

static void
snap_hist_log_close(struct snap_hist_log *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	free(l->sorted);
}

/* Whether L holds the entry of LINE (its old id aside). */
static bool
snap_hist_log_has(const struct snap_hist_log *l, const char *line)
{
	return bsearch(&line, l->sorted, l->n, sizeof *l->sorted,
	    snap_hist_cmp) != NULL;
}

/*
 * What a reflog must hold: SAVED (as at the start) and then each entry of
 * NOW that SAVED does not have (an entry the same but for its old id is
 * had), each line ended by a newline. The number of entries put back, 0
 * if NOW still begins with SAVED.
 */
int
snap_hist_merge_log(const struct buf *saved, const struct buf *now,
    struct buf *out)
{
	struct snap_hist_log s, c;
	size_t i;
	int missing = 0;

	buf_init(out);
	if (saved->len == 0 || (saved->len <= now->len && now->data != NULL &&
	    saved->data != NULL && memcmp(saved->data, now->data,
	    saved->len) == 0))
		return 0;
	snap_hist_log_open(&s, saved);
	snap_hist_log_open(&c, now);
	for (i = 0; i < s.n; i++) {
		buf_printf(out, "%s\n", s.v[i]);
		if (!snap_hist_log_has(&c, s.v[i]))
			missing++;
	}
	for (i = 0; i < c.n; i++) {
		if (!snap_hist_log_has(&s, c.v[i]))
			buf_printf(out, "%s\n", c.v[i]);
	}
	snap_hist_log_close(&s);
	snap_hist_log_close(&c);
	/* Reordered but whole counts as put back too: the file is rewritten. */
	return missing > 0 ? missing : 1;
}

void
snap_hist_log_added(const struct buf *saved, const struct buf *now,
    struct strv *out)
{
	struct snap_hist_log s, c;
	size_t i;

	snap_hist_log_open(&s, saved);
	snap_hist_log_open(&c, now);
	for (i = c.n; i-- > 0; ) {
		if (!snap_hist_log_has(&s, c.v[i]))
			strv_add(out, c.v[i]);
	}
	snap_hist_log_close(&s);
	snap_hist_log_close(&c);
}

int
snap_hist_write_as(int dfd, const char *tmp, const char *base,
    const struct buf *text, mode_t mode)
{
	int fd, rc = -1;

	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, mode);
	if (fd == -1)
		return -1;
	/*
	 * agentmux's own umask (077) is not the user's: a ref or packed-refs
	 * of 0600 in a repository shared with a group was unreadable to it.
	 */
	if (fchmod(fd, mode & ~util_user_umask()) == 0 &&
	    util_write_all(fd, text->data != NULL ? text->data : "",
	    text->len) == 0 && fsync(fd) == 0)
		rc = 0;
	if (close(fd) == -1)
		rc = -1;
	if (rc == 0 && renameat(dfd, tmp, dfd, base) == -1)
		rc = -1;
	if (rc == -1)
		unlinkat(dfd, tmp, 0);
	return rc;
}

int
snap_hist_write(int gitfd, const char *rel, const struct buf *text,
    mode_t mode)
{
	char *dir, *base, *tmp;
	unsigned char rnd[6];
	int dfd, rc;

	dir = strrchr(rel, '/') != NULL ? xstrndup(rel, (size_t)(strrchr(rel,
	    '/') - rel)) : xstrdup(".");
	base = strrchr(rel, '/') != NULL ? strrchr(rel, '/') + 1 : (char *)rel;
	if (snap_hist_mkdirs(gitfd, dir) == -1 ||
	    (dfd = path_open_beneath(gitfd, dir, O_RDONLY | O_DIRECTORY,
	    0)) == -1) {
		free(dir);
		return -1;
	}
	util_random(rnd, sizeof rnd);
	tmp = xprintf("%s.agentmux-%02x%02x%02x%02x%02x%02x", base, rnd[0],
	    rnd[1], rnd[2], rnd[3], rnd[4], rnd[5]);
	rc = snap_hist_write_as(dfd, tmp, base, text, mode);
	close(dfd);
	free(tmp);
	free(dir);
	return rc;
}

int
snap_hist_write_text(int gitfd, const char *ref, const struct buf *text)
{
	char *dir, *lock;
	const char *base;
	int dfd, rc;

	base = strrchr(ref, '/') != NULL ? strrchr(ref, '/') + 1 : ref;
	dir = base != ref ? xstrndup(ref, (size_t)(base - ref - 1)) :
	    xstrdup(".");
	if (snap_hist_mkdirs(gitfd, dir) == -1 || (dfd = strcmp(dir,
	    ".") == 0 ? openat(gitfd, ".", O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC) : path_open_beneath(gitfd, dir, O_RDONLY |
	    O_DIRECTORY, 0)) == -1) {
		free(dir);
		return -1;
	}
	lock = xprintf("%s.lock", base);
	rc = snap_hist_write_as(dfd, lock, base, text, 0644);
	close(dfd);
	free(lock);
	free(dir);
	return rc;
}

int
snap_hist_mkdirs(int gitfd, const char *rel)
{
	char *copy, *s;
	int fd;

	if (strcmp(rel, ".") == 0)
		return 0;
	copy = xstrdup(rel);
	for (s = copy; ; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char c = *s;

		*s = '\0';
		fd = path_open_beneath(gitfd, copy, O_PATH | O_DIRECTORY, 0);
		if (fd == -1 && errno == ENOENT) {
			/* The parent was found link-free just before. */
			char *slash = strrchr(copy, '/');
			int pfd = slash == NULL ? dup(gitfd) :
			    (*slash = '\0', path_open_beneath(gitfd, copy,
			    O_PATH | O_DIRECTORY, 0));

			if (slash != NULL)
				*slash = '/';
			if (pfd != -1 && mkdirat(pfd, slash != NULL ? slash + 1 :
			    copy, 0755) == 0)
				fd = path_open_beneath(gitfd, copy, O_PATH |
				    O_DIRECTORY, 0);
			if (pfd != -1)
				close(pfd);
		}
		if (fd == -1) {
			free(copy);
			return -1;
		}
		close(fd);
		if (c == '\0')
			break;
		*s = c;
	}
	free(copy);
	return 0;
}

/* The saved reflog REL (under the saved logs dir LOGS) put back into GITFD if the session removed entries. */
static int
snap_hist_repair_one(int gitfd, int logsfd, const char *rel,
    const struct strv *now)
{
	struct buf saved, cur, merged;
	char *path = xprintf("logs/%s", rel);
	bool replace = false;
	int put = 0;

	buf_init(&saved);
	buf_init(&cur);
	buf_init(&merged);
	if (snap_hist_read(logsfd, rel, &saved, SNAP_HIST_LOG_MAX) == -1)
		goto out;
	if (snap_hist_read(gitfd, path, &cur, SNAP_HIST_LOG_MAX) == -1) {
		/*
		 * Gone with its ref: undo --refs brings both back. A link or
		 * FIFO in its place (git would append through it) is replaced.
		 */
		if (errno == ENOENT && snap_hist_value(now, rel) == NULL &&
		    !snap_hist_packed_unread(now))
			goto out;
		if (errno != ENOENT && errno != ELOOP && errno != EINVAL)
			goto out;
		replace = errno != ENOENT;
		buf_reset(&cur);
	}
	if ((put = snap_hist_merge_log(&saved, &cur, &merged)) == 0 && replace) {
		buf_add(&merged, saved.data != NULL ? saved.data : "",
		    saved.len);
		put = 1;
	}
	/* A last line without its newline: git would glue its next entry to it. */
	if (put == 0 && !replace && cur.len > 0 &&
	    cur.data[cur.len - 1] != '\n') {
		buf_addc(&cur, '\n');
		if (snap_hist_write(gitfd, path, &cur, 0644) == -1)
			log_debug("cannot end %s with a newline: %s", path,
			    strerror(errno));
	}
	if (put > 0 && snap_hist_write(gitfd, path, &merged, 0644) == -1)
		put = -1;
out:
	buf_free(&merged);
	buf_free(&cur);
	buf_free(&saved);
	free(path);
	return put;
}

/*
 * Every saved reflog under REL of LOGSFD: REPAIRED gets "ref (n entries)"
 * for each put back, FAILED "ref could not be put back (why)" for each not.
 */
static void
snap_hist_repair(int gitfd, int logsfd, const char *rel, int depth,
    const struct strv *now, struct strv *repaired, struct strv *failed)
{
	struct dirent *de;
	char *sub;
	DIR *d;
	int fd, n;

	if (depth > 32)
		return;
	fd = rel[0] == '\0' ? openat(logsfd, ".", O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC) : path_open_beneath(logsfd, rel, O_RDONLY |
	    O_DIRECTORY, 0);
	if (fd == -1 || (d = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		sub = rel[0] == '\0' ? xstrdup(de->d_name) : xprintf("%s/%s",
		    rel, de->d_name);
		if (snap_hist_type(d, de) == DT_DIR)
			snap_hist_repair(gitfd, logsfd, sub, depth + 1, now,
			    repaired, failed);
		else if ((n = snap_hist_repair_one(gitfd, logsfd, sub,
		    now)) > 0)
			strv_addf(repaired, "%s (%d entr%s)", sub, n, n == 1 ?
			    "y" : "ies");
		else if (n == -1)
			strv_addf(failed, "%s could not be put back (%s)", sub,
			    strerror(errno));
		free(sub);
	}
	closedir(d);
}

/* ---- objects the session took refs from, kept ---- */

/* Whether V is an object id (40 or 64 hex digits, not all zeros). */
static bool
snap_hist_oid(const char *v, size_t len)
{
	size_t i;
	bool zero = true;

	if (len != 40 && len != 64)
		return false;
	for (i = 0; i < len; i++) {
		if (strchr("0123456789abcdef", v[i]) == NULL || v[i] == '\0')
			return false;
		if (v[i] != '0')
			zero = false;
	}
	return !zero;
}

/* The old and new ids of every entry of the reflog REF kept at the start, into IDS. */
static void
snap_hist_log_ids(int logsfd, const char *ref, struct strv *ids)
{
	char *line, *save = NULL;
	struct buf b;

	buf_init(&b);
	if (logsfd != -1 && snap_hist_read(logsfd, ref, &b,
	    SNAP_HIST_LOG_MAX) == 0 && b.data != NULL) {
		for (line = strtok_r(b.data, "\n", &save); line != NULL;
		    line = strtok_r(NULL, "\n", &save)) {
			if (snap_hist_oid(line, strcspn(line, " ")))
				strv_addf(ids, "%.*s", (int)strcspn(line, " "),
				    line);
			line += strcspn(line, " ");
			if (*line == ' ' && snap_hist_oid(line + 1,
			    strcspn(line + 1, " ")))
				strv_addf(ids, "%.*s", (int)strcspn(line + 1,
				    " "), line + 1);
		}
	}
	buf_free(&b);
}

/*
 * What the session took away: the start's value of every ref it deleted
 * or moved, and the ids of that ref's reflog as kept (a stash's older
 * entries, a commit only a reflog named) into WANT; the refs it left alone
 * into HAVE (the user's still: their history is not copied).
 */
static void
snap_hist_taken(const struct snap_hgit *g, const struct strv *start,
    const struct strv *now, struct strv *want, struct strv *have)
{
	const char *was, *v;
	char *ref, *logs = xprintf("%s/logs", g->base);
	int logsfd;
	size_t i;

	logsfd = open(logs, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	free(logs);
	for (i = 0; i < start->n; i++) {
		ref = xstrndup(start->v[i], strcspn(start->v[i], "\t"));
		was = start->v[i] + strlen(ref) + 1;
		v = snap_hist_value(now, ref);
		if (!snap_hist_oid(was, strlen(was)))
			;
		else if (v != NULL && strcmp(v, was) == 0)
			strv_add(have, was);
		else {
			strv_add(want, was);
			if (snap_hist_refname_ok(ref))
				snap_hist_log_ids(logsfd, ref, want);
		}
		free(ref);
	}
	if (logsfd != -1)
		close(logsfd);
}

/*
 * Keeping the objects of refs the session deleted or moved, packed into
 * BASE/kept.pack: the host's repository no longer names them, so the
 * user's next git gc would prune them, and undo --refs could not put the
 * refs back. The pack holds what those refs reached that the refs the
 * session left alone do not (tag objects, stashes, side commits); the jail
 * could not delete any of it (the objects overlay), so it is all there
 * when the session ends. Two gits per repository, one after another on
 * the loop: which of the ids the repository has, then the pack.
 */
struct snap_hkeep {
	char *gitdir;
	char *base;
	struct strv want;         /* the start's values of refs taken away */
	struct strv have;         /* the values of refs left alone */
};

static void snap_hist_keep_next(struct snap_history *);
static void snap_history_end_told(struct snap_history *);

static void
snap_hist_keep_warn(struct snap_history *h, const struct snap_hkeep *k,
    const char *cause)
{
	strv_addf(&h->end_warnings, "the objects of refs the session deleted "
	    "or moved in %s could not be kept (%s): a git gc there may prune "
	    "them before 'agentmux undo --refs' puts the refs back",
	    k->gitdir, cause);
}

/* Queues G's keeping if the session took anything away. */
static void
snap_hist_keep_add(struct snap_history *h, const struct snap_hgit *g,
    const struct strv *start, const struct strv *now)
{
	struct snap_hkeep *k;

	h->keeps = xreallocarray(h->keeps, h->nkeeps + 1, sizeof *h->keeps);
	k = &h->keeps[h->nkeeps];
	strv_init(&k->want);
	strv_init(&k->have);
	snap_hist_taken(g, start, now, &k->want, &k->have);
	if (k->want.n == 0) {
		strv_free(&k->want);
		strv_free(&k->have);
		return;
	}
	k->gitdir = xstrdup(g->gitdir);
	k->base = xstrdup(g->base);
	h->nkeeps++;
}

static void
snap_hist_keep_free(struct snap_history *h)
{
	size_t i;

	proc_free(h->keep_proc);
	h->keep_proc = NULL;
	if (h->keep_fd != -1)
		close(h->keep_fd);
	h->keep_fd = -1;
	for (i = 0; i < h->nkeeps; i++) {
		free(h->keeps[i].gitdir);
		free(h->keeps[i].base);
		strv_free(&h->keeps[i].want);
		strv_free(&h->keeps[i].have);
	}
	free(h->keeps);
	h->keeps = NULL;
	h->nkeeps = h->keep_at = 0;
}

static void
snap_hist_keep_packed(struct proc *p, void *arg)
{
	struct snap_history *h = arg;
	struct snap_hkeep *k = &h->keeps[h->keep_at];
	char *tmp, *path, *cause = NULL;

	tmp = xprintf("%s/kept.pack.tmp", k->base);
	path = xprintf("%s/kept.pack", k->base);
	if (proc_status(p) != 0)
		cause = snap_git_error("pack-objects", p);
	else if (fsync(h->keep_fd) == -1 || rename(tmp, path) == -1)
		cause = xprintf("cannot write %s: %s", path, strerror(errno));
	if (cause != NULL) {
		unlink(tmp);
		snap_hist_keep_warn(h, k, cause);
	}
	close(h->keep_fd);
	h->keep_fd = -1;
	free(cause);
	free(tmp);
	free(path);
	proc_free(p);
	h->keep_proc = NULL;
	h->keep_at++;
	snap_hist_keep_next(h);
}

/*
 * The ids that are present, in the order asked (the wanted ones first):
 * "ID\n" for a wanted one, "^ID\n" for one to leave out; then the pack.
 */
static void
snap_hist_checked(struct proc *p, void *arg)
{
	const char *args[] = { "pack-objects", "--revs", "--stdout", "-q",
	    NULL };
	struct snap_history *h = arg;
	struct snap_hkeep *k = &h->keeps[h->keep_at];
	struct buf in, *out = proc_out(p);
	char *line, *save = NULL, *tmp, *cause = NULL;
	size_t i = 0;
	bool any = false;

	buf_init(&in);
	if (proc_status(p) != 0)
		cause = snap_git_error("cat-file", p);
	for (line = cause == NULL && out->data != NULL ? strtok_r(out->data,
	    "\n", &save) : NULL; line != NULL; line = strtok_r(NULL, "\n",
	    &save), i++) {
		if (strchr(line, ' ') != NULL)
			continue;
		buf_printf(&in, "%s%s\n", i < k->want.n ? "" : "^", line);
		any = any || i < k->want.n;
	}
	proc_free(p);
	h->keep_proc = NULL;
	if (cause == NULL && any) {
		tmp = xprintf("%s/kept.pack.tmp", k->base);
		if ((h->keep_fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC |
		    O_NOFOLLOW | O_CLOEXEC, 0600)) == -1)
			cause = xprintf("cannot create %s: %s", tmp,
			    strerror(errno));
		else
			h->keep_proc = snap_git_plain_start(h->end_base,
			    k->gitdir, args, &in, h->keep_fd, snap_hist_keep_packed,
			    h, &cause);
		free(tmp);
	}
	buf_free(&in);
	if (cause != NULL)
		snap_hist_keep_warn(h, k, cause);
	free(cause);
	if (h->keep_proc == NULL) {
		if (h->keep_fd != -1)
			close(h->keep_fd);
		h->keep_fd = -1;
		h->keep_at++;
		snap_hist_keep_next(h);
	}
}

/* The next repository's keeping, or the end told once all are through. */
static void
snap_hist_keep_next(struct snap_history *h)
{
	const char *args[] = { "cat-file", "--batch-check=%(objectname)",
	    NULL };
	struct snap_hkeep *k;
	struct buf q;
	char *cause = NULL;
	size_t i;

	while (h->keep_at < h->nkeeps) {
		k = &h->keeps[h->keep_at];
		buf_init(&q);
		for (i = 0; i < k->want.n; i++)
			buf_printf(&q, "%s\n", k->want.v[i]);
		for (i = 0; i < k->have.n; i++)
			buf_printf(&q, "%s\n", k->have.v[i]);
		h->keep_proc = snap_git_plain_start(h->end_base, k->gitdir,
		    args, &q, -1, snap_hist_checked, h, &cause);
		buf_free(&q);
		if (h->keep_proc != NULL)
			return;
		snap_hist_keep_warn(h, k, cause);
		free(cause);
		cause = NULL;
		h->keep_at++;
	}
	snap_history_end_told(h);
}

/* ---- the history of a session ---- */

void
snap_history_free(struct snap_history *h)
{
	size_t i;

	if (h == NULL)
		return;
	/* Its end's work is waited for; what follows it is not done. */
	thread_job_free(h->end_job);
	for (i = 0; i < h->n; i++) {
		snap_import_free(h->v[i].imp);
		free(h->v[i].gitdir);
		free(h->v[i].base);
		free(h->v[i].objects);
		free(h->v[i].upper);
		free(h->v[i].work);
	}
	free(h->v);
	free(h->dir);
	free(h->ro_top);
	snap_history_watch_worktree_free(h);
	if (h->wfd != -1)
		close(h->wfd);
	snap_hist_keep_free(h);
	strv_free(&h->end_alerts);
	strv_free(&h->end_warnings);
	free(h);
}

/*
 * For a git dir kept before its identity was recorded: whether FD's path
 * is GITDIR itself (no link on the way to it now). What can be compared.
 */
static bool
snap_gitdir_same_path(int fd, const char *gitdir)
{
	char proc[64], real[PATH_MAX];
	ssize_t n;

	(void)snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
	if ((n = readlink(proc, real, sizeof real - 1)) == -1)
		return false;
	real[n] = '\0';
	return strcmp(real, gitdir) == 0;
}

/*
 * Opens the kept git dir GITDIR (no link followed at its end) and checks it
 * is the dir of the start (ID): one moved, replaced, or reached through a
 * link now (lib swapped for a link to another repository) is not. With
 * OBJFD, its objects dir too. The fd, -1 if it cannot be opened (errno),
 * -2 if it is not the one of the start (*CAUSE says why; caller frees).
 */
int
snap_gitdir_open(const char *gitdir, const struct snap_gitid *id, int *objfd,
    char **cause)
{
	struct stat st, ost;
	int fd, ofd = -1;
	bool same;

	*cause = NULL;
	if ((fd = open(gitdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1)
		return -1;
	if (objfd != NULL && (ofd = openat(fd, "objects", O_RDONLY |
	    O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1) {
		close(fd);
		return -1;
	}
	if (!id->known)
		same = snap_gitdir_same_path(fd, gitdir);
	else
		same = fstat(fd, &st) == 0 && st.st_dev == id->dev &&
		    st.st_ino == id->ino && (ofd == -1 || (fstat(ofd,
		    &ost) == 0 && ost.st_dev == id->odev &&
		    ost.st_ino == id->oino));
	if (!same) {
		*cause = xstrdup(id->known ? "it is not the dir it was at the "
		    "start: moved, replaced, or reached through a link now" :
		    "it is reached through a link now, or moved (this "
		    "session's history is older than agentmux's record of "
		    "which dir it was)");
		if (ofd != -1)
			close(ofd);
		close(fd);
		return -2;
	}
	if (objfd != NULL)
		*objfd = ofd;
	return fd;
}

/* Reads what G's git dir was at the start from BASE/id (none: not known). */
static void
snap_gitid_load(struct snap_hgit *g)
{
	unsigned long long v[4];
	struct buf b;
	char *path = xprintf("%s/id", g->base);

	buf_init(&b);
	if (buf_read_file(&b, path) == 0 && b.data != NULL &&
	    sscanf(b.data, "%llu %llu %llu %llu", &v[0], &v[1], &v[2],
	    &v[3]) == 4) {
		g->id.known = true;
		g->id.dev = (dev_t)v[0];
		g->id.ino = (ino_t)v[1];
		g->id.odev = (dev_t)v[2];
		g->id.oino = (ino_t)v[3];
	}
	buf_free(&b);
	free(path);
}

/* Records what G's git dir (open as GITFD) is at the start, in BASE/id. */
static int
snap_gitid_save(struct snap_hgit *g, int gitfd, char **cause)
{
	struct stat st, ost;
	char *path, *text;
	int rc;

	if (fstat(gitfd, &st) == -1 || fstatat(gitfd, "objects", &ost,
	    AT_SYMLINK_NOFOLLOW) == -1 || !S_ISDIR(ost.st_mode)) {
		*cause = xprintf("cannot read what %s/objects is: %s",
		    g->gitdir, strerror(errno != 0 ? errno : ENOTDIR));
		return -1;
	}
	g->id.known = true;
	g->id.dev = st.st_dev;
	g->id.ino = st.st_ino;
	g->id.odev = ost.st_dev;
	g->id.oino = ost.st_ino;
	snap_import_set_id(g->imp, &g->id);
	path = xprintf("%s/id", g->base);
	text = xprintf("%llu %llu %llu %llu\n", (unsigned long long)st.st_dev,
	    (unsigned long long)st.st_ino, (unsigned long long)ost.st_dev,
	    (unsigned long long)ost.st_ino);
	rc = util_write_file_atomic(path, text, strlen(text), 0600, cause);
	free(text);
	free(path);
	return rc;
}

static struct snap_hgit *
snap_history_add(struct snap_history *h, const char *gitdir)
{
	struct snap_hgit *g;

	h->v = xreallocarray(h->v, h->n + 1, sizeof *h->v);
	g = &h->v[h->n];
	memset(g, 0, sizeof *g);
	g->gitdir = xstrdup(gitdir);
	g->base = xprintf("%s/%zu", h->dir, h->n);
	g->objects = xprintf("%s/objects", gitdir);
	g->upper = xprintf("%s/upper", g->base);
	g->work = xprintf("%s/work", g->base);
	g->imp = snap_import_create(gitdir, g->upper);
	snap_gitid_load(g);
	snap_import_set_id(g->imp, &g->id);
	h->n++;
	return g;
}

/*
 * The walks for git dirs to protect: what they found (OUT), how many dirs
 * they looked in, and what the bounds kept from being protected.
 */
struct snap_hist_walk {
	struct strv *out;
	const char *project;  /* the nested walk's top, or NULL */
	int projfd;           /* its dir */
	size_t seen;          /* dirs looked in */
	size_t left;          /* git dirs found past SNAP_HIST_MAX */
	size_t deep;          /* dirs too deep to be looked in */
	bool full;            /* stopped at SNAP_HIST_NEST_MAX dirs */
	struct snap_dirmap *dirs; /* each dir looked in (relative to PROJECT), or NULL */
	const atomic_bool *stop; /* set: the walk ends at its next dir (NULL: never) */
};

/* Tests only: called with each dir the walk for nested repositories looks in, before it is read. */
AM_TESTABLE void (*snap_history_dir_walked)(const char *path);

/* Whether A lies in B's objects dir (their overlays would be mounted one in the other). */
static bool
snap_hist_in_objects(const char *a, const char *b)
{
	size_t n = strlen(b);

	return strncmp(a, b, n) == 0 && strncmp(a + n, "/objects/", 9) == 0;
}

/*
 * GITDIR found by a walk: protected, or counted as left out past the cap.
 * One found twice (a .git file naming a dir the walk finds too) once; one
 * inside another's objects (a .git file may name any dir) not at all.
 */
static void
snap_hist_found(struct snap_hist_walk *w, const char *gitdir)
{
	size_t i;

	for (i = 0; i < w->out->n; i++) {
		if (strcmp(w->out->v[i], gitdir) == 0 ||
		    snap_hist_in_objects(gitdir, w->out->v[i]) ||
		    snap_hist_in_objects(w->out->v[i], gitdir))
			return;
	}
	if (w->out->n < SNAP_HIST_MAX)
		strv_add(w->out, gitdir);
	else
		w->left++;
}

/* Whether the walk may look in one more dir (SNAP_HIST_NEST_MAX in all). */
static bool
snap_hist_more(struct snap_hist_walk *w)
{
	if (w->seen >= SNAP_HIST_NEST_MAX) {
		w->full = true;
		return false;
	}
	w->seen++;
	return true;
}

/* Submodule git dirs (a HEAD in them) under DIR, SNAP_HIST_DEPTH plain dirs deep. */
static void
snap_history_modules(const char *dir, int level, struct snap_hist_walk *w)
{
	struct dirent *de;
	struct stat st;
	char *sub, *head;
	DIR *d;

	if (lstat(dir, &st) == -1 || !S_ISDIR(st.st_mode))
		return;
	if (level > SNAP_HIST_DEPTH) {
		w->deep++;
		return;
	}
	if ((d = opendir(dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		sub = xprintf("%s/%s", dir, de->d_name);
		head = xprintf("%s/HEAD", sub);
		if (lstat(sub, &st) == 0 && S_ISDIR(st.st_mode) &&
		    snap_hist_more(w)) {
			if (lstat(head, &st) == 0) {
				snap_hist_found(w, sub);
				free(head);
				head = xprintf("%s/modules", sub);
				snap_history_modules(head, level + 1, w);
			} else
				snap_history_modules(sub, level + 1, w);
		}
		free(head);
		free(sub);
		if (w->full)
			break;
	}
	closedir(d);
}

/* Whether GITDIR's objects can be overlaid; if not, NOTICES says why. */
static bool
snap_history_usable(const char *gitdir, struct strv *notices)
{
	char *objects = xprintf("%s/objects", gitdir);
	struct stat st;
	bool ok = false;

	if (strpbrk(gitdir, ",:\\\n") != NULL)
		strv_addf(notices, "the history in %s cannot be kept from the "
		    "jailed command: its path has ',', ':' or '\\' in it, which "
		    "an overlay cannot take; rename it to protect it",
		    gitdir);
	else if (lstat(objects, &st) == -1 || !S_ISDIR(st.st_mode))
		strv_addf(notices, "the history in %s cannot be kept from the "
		    "jailed command: its objects dir is %s", gitdir,
		    lstat(objects, &st) == -1 ? "missing" : "a link or a file");
	else
		ok = true;
	free(objects);
	return ok;
}

/* G's file NAME (shallow, config) as it is at the start, kept as BASE/NAME (none: none). */
static int
snap_hist_save_file(const struct snap_hgit *g, int gitfd, const char *name,
    char **cause)
{
	char *path = xprintf("%s/%s", g->base, name);
	struct buf b;
	int rc = 0;

	buf_init(&b);
	if (snap_hist_read(gitfd, name, &b, SNAP_HIST_LOG_MAX) == 0)
		rc = util_write_file_atomic(path, b.data != NULL ? b.data : "",
		    b.len, 0600, cause);
	buf_free(&b);
	free(path);
	return rc;
}

/* Keeps G's refs and reflogs as they are now, and makes its overlay dirs. */
static int
snap_history_save(struct snap_hgit *g, char **cause)
{
	struct strv refs;
	struct buf b;
	char *logs, *path;
	size_t i;
	int gitfd, rc = -1;

	if (path_mkdir_p(g->upper, 0700) == -1 ||
	    path_mkdir_p(g->work, 0700) == -1) {
		*cause = xprintf("cannot create %s: %s", g->base,
		    strerror(errno));
		return -1;
	}
	if ((gitfd = open(g->gitdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1) {
		*cause = xprintf("cannot open %s: %s", g->gitdir,
		    strerror(errno));
		return -1;
	}
	if (snap_gitid_save(g, gitfd, cause) == -1) {
		close(gitfd);
		return -1;
	}
	snap_hist_refs(gitfd, &refs);
	buf_init(&b);
	for (i = 0; i < refs.n; i++)
		buf_printf(&b, "%s\n", refs.v[i]);
	path = xprintf("%s/refs", g->base);
	logs = xprintf("%s/logs", g->base);
	if (util_write_file_atomic(path, b.data != NULL ? b.data : "", b.len,
	    0600, cause) == 0) {
		snap_hist_copy_logs(gitfd, "logs", logs, 0);
		rc = snap_hist_save_file(g, gitfd, "shallow", cause);
		if (rc == 0)
			rc = snap_hist_save_file(g, gitfd, "config", cause);
		if (rc == 0)
			rc = snap_gitmodes_save(g, gitfd, cause);
	}
	free(logs);
	free(path);
	buf_free(&b);
	strv_free(&refs);
	close(gitfd);
	return rc;
}

/*
 * $DATA/history-pending/<id> while session ID's objects may still need
 * bringing back: the next start looks there, not through every session.
 * SESSDIR is $DATA/sessions/<id>; caller frees.
 */
static char *
snap_history_marker(const char *sessdir)
{
	const char *id = strrchr(sessdir, '/') + 1;
	char *data = xstrndup(sessdir, (size_t)(id - 1 - sessdir)), *m;

	*strrchr(data, '/') = '\0';
	m = xprintf("%s/history-pending/%s", data, id);
	free(data);
	return m;
}

static int
snap_history_manifest(struct snap_history *h, char **cause)
{
	struct buf b;
	char *path;
	size_t i;
	int rc;

	buf_init(&b);
	for (i = 0; i < h->n; i++)
		buf_printf(&b, "%zu\t%s\n", i, h->v[i].gitdir);
	path = xprintf("%s/gitdirs", h->dir);
	rc = util_write_file_atomic(path, b.data != NULL ? b.data : "", b.len,
	    0600, cause);
	free(path);
	buf_free(&b);
	return rc;
}

static int
snap_history_mark(const char *sessdir, char **cause)
{
	char *m = snap_history_marker(sessdir), *dir;
	int rc;

	dir = xstrndup(m, (size_t)(strrchr(m, '/') - m));
	if (path_mkdir_p(dir, 0700) == -1) {
		*cause = xprintf("cannot create %s: %s", dir, strerror(errno));
		rc = -1;
	} else
		rc = util_write_file_atomic(m, "", 0, 0600, cause);
	free(dir);
	free(m);
	return rc;
}

/* What a walk saw in a dir: its subdirs, and what makes it a git dir. */
struct snap_hist_dir {
	struct strv subdirs;
	bool head;            /* a HEAD, not a dir */
	bool objects;         /* an objects dir */
	bool refs;            /* a refs dir */
	bool dotgit;          /* a .git file */
};

/* Reads D's entries into SD (no link followed: a link is neither a dir nor a file here). */
static void
snap_hist_dir_read(DIR *d, struct snap_hist_dir *sd)
{
	struct dirent *de;
	int type;

	memset(sd, 0, sizeof *sd);
	strv_init(&sd->subdirs);
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		type = snap_hist_type(d, de);
		if (strcmp(de->d_name, "HEAD") == 0)
			sd->head = type != DT_DIR;
		else if (strcmp(de->d_name, "objects") == 0)
			sd->objects = type == DT_DIR;
		else if (strcmp(de->d_name, "refs") == 0)
			sd->refs = type == DT_DIR;
		else if (strcmp(de->d_name, ".git") == 0 && type == DT_REG)
			sd->dotgit = true;
		if (type == DT_DIR)
			strv_add(&sd->subdirs, de->d_name);
	}
}

/*
 * The git dir the .git file in DFD (the dir PATH of the walk) names with
 * "gitdir: WHERE", if WHERE lies in the project and is a git dir (HEAD,
 * objects/ and refs/): worked out by name, and opened from the project's
 * dir without following a link (a way through one is not taken).
 */
static void
snap_hist_dotgit(struct snap_hist_walk *w, int dfd, const char *path)
{
	struct stat st;
	struct buf b;
	char *norm;
	size_t n = strlen(w->project);
	int fd;

	buf_init(&b);
	if (snap_hist_read(dfd, ".git", &b, SNAP_HIST_REF_MAX) == -1 ||
	    (norm = snap_nested_gitfile(path, &b)) == NULL) {
		buf_free(&b);
		return;
	}
	if (strncmp(norm, w->project, n) == 0 && norm[n] == '/' &&
	    (fd = path_open_beneath(w->projfd, norm + n + 1, O_RDONLY |
	    O_DIRECTORY, 0)) != -1) {
		if (fstatat(fd, "HEAD", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    !S_ISDIR(st.st_mode) && fstatat(fd, "objects", &st,
		    AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) &&
		    fstatat(fd, "refs", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISDIR(st.st_mode))
			snap_hist_found(w, norm);
		close(fd);
	}
	free(norm);
	buf_free(&b);
}

/*
 * Nested repositories, found by a walk that follows no link, into W: a
 * dir named .git with a HEAD (a clone inside the project), any other dir
 * git takes for a git dir by what it holds (HEAD, objects/ and refs/: a
 * bare clone, the target of a --separate-git-dir) whatever its name, and
 * the git dir a .git file names if it lies in the project (below the
 * bounds, or in the project's own .git), anywhere in the project but in
 * its own .git. A git dir is not looked into. Bounded in depth and in
 * dirs; what the bounds left out is counted in W. It may run on a
 * helper thread: what allocates is inside the clone gate, each dir's walk
 * below outside it, so a clone waits for one dir's reading at most.
 */
static void
snap_history_nested(int dfd, const char *path, int depth,
    struct snap_hist_walk *w)
{
	struct snap_hist_dir sd;
	struct stat st;
	const char *name;
	char *sub;
	size_t i;
	DIR *d;
	int fd;

	if ((w->stop != NULL && atomic_load(w->stop)) ||
	    depth > SNAP_HIST_NEST_DEPTH) {
		if (depth > SNAP_HIST_NEST_DEPTH)
			w->deep++;
		/* Not looked in: a dir of it is not known to be new at the end. */
		if (w->dirs != NULL) {
			clone_gate_enter();
			snap_dirmap_incomplete(w->dirs);
			clone_gate_leave();
		}
		close(dfd);
		return;
	}
	if (snap_history_dir_walked != NULL)
		snap_history_dir_walked(path);
	clone_gate_enter();
	if ((d = fdopendir(dfd)) == NULL) {
		close(dfd);
		if (w->dirs != NULL)
			snap_dirmap_incomplete(w->dirs);
		clone_gate_leave();
		return;
	}
	/* Its identity, for the end's look at dirs moved in (snap-dirmap.c). */
	if (w->dirs != NULL && w->project != NULL && fstat(dirfd(d), &st) == 0)
		snap_dirmap_add(w->dirs, path[strlen(w->project)] == '/' ?
		    path + strlen(w->project) + 1 : "", &st);
	snap_hist_dir_read(d, &sd);
	if (depth > 0 && sd.head && sd.objects && sd.refs) {
		snap_hist_found(w, path);
		goto out;
	}
	if (sd.dotgit)
		snap_hist_dotgit(w, dirfd(d), path);
	for (i = 0; i < sd.subdirs.n && snap_hist_more(w); i++) {
		name = sd.subdirs.v[i];
		sub = xprintf("%s/%s", path, name);
		if (strcmp(name, ".git") == 0) {
			if (depth > 0 && fstatat(dirfd(d), ".git/HEAD", &st,
			    AT_SYMLINK_NOFOLLOW) == 0)
				snap_hist_found(w, sub);
		} else if ((fd = openat(dirfd(d), name, O_RDONLY |
		    O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) != -1) {
			clone_gate_leave();
			snap_history_nested(fd, sub, depth + 1, w);
			clone_gate_enter();
		} else if (w->dirs != NULL)
			snap_dirmap_incomplete(w->dirs);
		free(sub);
	}
	/* Some dirs not looked in: past the count, or stopped. */
	if (w->dirs != NULL && i < sd.subdirs.n)
		snap_dirmap_incomplete(w->dirs);
out:
	strv_free(&sd.subdirs);
	closedir(d);
	clone_gate_leave();
}

/* What the bounds of the walk W kept from being protected, said in red in ALERTS. */
static void
snap_hist_walk_told(const struct snap_hist_walk *w, struct strv *alerts)
{
	if (w->left > 0)
		strv_addf(alerts, "%zu git dir%s in the project (nested "
		    "repositories or under .git/modules) %s not protected "
		    "from the jailed command: only the first %d found are; "
		    "their history can be deleted in the session", w->left,
		    w->left == 1 ? "" : "s", w->left == 1 ? "is" : "are",
		    SNAP_HIST_MAX);
	if (w->deep > 0)
		strv_addf(alerts, "%zu dir%s in the project %s too deep (over "
		    "%d dirs down, %d under .git/modules) to be searched for "
		    "nested repositories: the history of one there is not "
		    "protected from the jailed command", w->deep, w->deep == 1 ?
		    "" : "s", w->deep == 1 ? "is" : "are", SNAP_HIST_NEST_DEPTH,
		    SNAP_HIST_DEPTH);
	if (w->full)
		strv_addf(alerts, "nested repositories were looked for in the "
		    "first %d dirs of the project only: the history of one "
		    "further down is not protected from the jailed command",
		    SNAP_HIST_NEST_MAX);
}

/*
 * The history of each of DIRS (freed here) kept in SESSDIR/history, one
 * git dir at a time inside the clone gate (a clone waits for one git
 * dir's saving at most).
 */
static struct snap_history *
snap_history_keep_dirs(struct strv *dirs, const char *sessdir,
    struct strv *notices, char **cause)
{
	struct snap_history *h = NULL;
	size_t i;
	int rc = 0;

	clone_gate_enter();
	if (dirs->n > 0) {
		h = xcalloc(1, sizeof *h);
		h->wfd = -1;
		h->keep_fd = -1;
		strv_init(&h->wt_told);
		strv_init(&h->end_alerts);
		strv_init(&h->end_warnings);
		h->dir = xprintf("%s/history", sessdir);
	}
	clone_gate_leave();
	for (i = 0; h != NULL && i < dirs->n && rc == 0; i++) {
		clone_gate_enter();
		if (snap_history_usable(dirs->v[i], notices))
			rc = snap_history_save(snap_history_add(h, dirs->v[i]),
			    cause);
		clone_gate_leave();
	}
	clone_gate_enter();
	if (h != NULL && (*cause != NULL || h->n == 0 ||
	    snap_history_mark(sessdir, cause) == -1 ||
	    snap_history_manifest(h, cause) == -1)) {
		snap_history_free(h);
		h = NULL;
	}
	strv_free(dirs);
	clone_gate_leave();
	return h;
}

/*
 * The git dirs whose history is kept: GITDIR and its submodules', and
 * PROJECT's nested ones (the walk ends early once STOP is set). May run on
 * a helper thread: it allocates inside the clone gate only.
 */
static struct snap_history *
snap_history_begin_at(const char *gitdir, const char *project,
    const char *sessdir, struct strv *notices, struct strv *alerts,
    const atomic_bool *stop, struct strv *found, struct snap_dirmap *dirmap,
    char **cause)
{
	struct snap_hist_walk w;
	struct strv dirs;
	struct stat st;
	char *modules;
	bool isdir;
	int fd;

	*cause = NULL;
	isdir = lstat(gitdir, &st) == 0 && S_ISDIR(st.st_mode);
	clone_gate_enter();
	strv_init(&dirs);
	memset(&w, 0, sizeof w);
	w.out = &dirs;
	w.stop = stop;
	w.dirs = dirmap;
	/* Real nested repositories before what may be dummies in .git/modules. */
	if (isdir)
		strv_add(&dirs, gitdir);
	clone_gate_leave();
	if (project != NULL && (fd = open(project, O_RDONLY | O_DIRECTORY |
	    O_NOFOLLOW | O_CLOEXEC)) != -1) {
		w.project = project;
		w.projfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
		snap_history_nested(fd, project, 0, &w);
		if (w.projfd != -1)
			close(w.projfd);
	} else if (dirmap != NULL) {
		clone_gate_enter();
		snap_dirmap_incomplete(dirmap);
		clone_gate_leave();
	}
	clone_gate_enter();
	if (dirmap != NULL) {
		if (w.full)
			snap_dirmap_incomplete(dirmap);
		snap_dirmap_done(dirmap);
	}
	if (lstat(gitdir, &st) == 0 && S_ISDIR(st.st_mode)) {
		modules = xprintf("%s/modules", gitdir);
		snap_history_modules(modules, 0, &w);
		free(modules);
	}
	snap_hist_walk_told(&w, alerts);
	/* Found only (history = off): nothing is kept. */
	if (found != NULL) {
		strv_free(found);
		*found = dirs;
		clone_gate_leave();
		return NULL;
	}
	clone_gate_leave();
	return snap_history_keep_dirs(&dirs, sessdir, notices, cause);
}

struct snap_history *
snap_history_begin(const char *project, const char *sessdir,
    struct strv *notices, struct strv *alerts, char **cause)
{
	char *git = xprintf("%s/.git", project);
	struct snap_history *h;

	h = snap_history_begin_at(git, project, sessdir, notices, alerts,
	    NULL, NULL, NULL, cause);
	free(git);
	return h;
}

struct snap_history *
snap_history_begin_gitdir(const char *gitdir, const char *sessdir,
    struct strv *notices, struct strv *alerts, char **cause)
{
	return snap_history_begin_at(gitdir, NULL, sessdir, notices,
	    alerts, NULL, NULL, NULL, cause);
}

struct snap_history_start *
snap_history_start_new(const char *gitdir, const char *project,
    const char *sessdir)
{
	struct snap_history_start *hs = xcalloc(1, sizeof *hs);

	hs->gitdir = xstrdup(gitdir);
	hs->project = project != NULL ? xstrdup(project) : NULL;
	hs->dirs = project != NULL ? snap_dirmap_new() : NULL;
	hs->sessdir = xstrdup(sessdir);
	atomic_init(&hs->stop, false);
	strv_init(&hs->notices);
	strv_init(&hs->alerts);
	strv_init(&hs->found);
	return hs;
}

void
snap_history_start_run(void *arg)
{
	struct snap_history_start *hs = arg;

	hs->h = snap_history_begin_at(hs->gitdir, hs->project, hs->sessdir,
	    &hs->notices, &hs->alerts, &hs->stop, hs->find_only ? &hs->found :
	    NULL, hs->dirs, &hs->cause);
}

void
snap_history_start_free(struct snap_history_start *hs)
{
	if (hs == NULL)
		return;
	snap_history_free(hs->h);
	snap_dirmap_unref(hs->dirs);
	strv_free(&hs->notices);
	strv_free(&hs->alerts);
	strv_free(&hs->found);
	free(hs->cause);
	free(hs->gitdir);
	free(hs->project);
	free(hs->sessdir);
	free(hs);
}

struct snap_history *
snap_history_open(const char *sessdir)
{
	struct snap_history *h;
	char *path, *line, *save = NULL, *tab;
	struct buf b;

	path = xprintf("%s/history/gitdirs", sessdir);
	buf_init(&b);
	if (buf_read_file(&b, path) == -1 || b.data == NULL) {
		buf_free(&b);
		free(path);
		return NULL;
	}
	free(path);
	h = xcalloc(1, sizeof *h);
	h->wfd = -1;
	h->keep_fd = -1;
	strv_init(&h->wt_told);
	strv_init(&h->end_alerts);
	strv_init(&h->end_warnings);
	h->dir = xprintf("%s/history", sessdir);
	for (line = strtok_r(b.data, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		if ((tab = strchr(line, '\t')) != NULL && tab[1] == '/' &&
		    (size_t)strtoul(line, NULL, 10) == h->n)
			snap_history_add(h, tab + 1);
	}
	buf_free(&b);
	if (h->n == 0) {
		snap_history_free(h);
		return NULL;
	}
	path = xprintf("%s/ro-top", h->dir);
	buf_init(&b);
	if (buf_read_file(&b, path) == 0 && b.data != NULL && b.len > 0 &&
	    b.data[0] == '/')
		h->ro_top = xstrndup(b.data, strcspn(b.data, "\n"));
	buf_free(&b);
	free(path);
	return h;
}

void
snap_history_top_ro(struct snap_history *h, const char *gitdir)
{
	char *path, *text;

	if (h == NULL)
		return;
	free(h->ro_top);
	h->ro_top = xstrdup(gitdir);
	path = xprintf("%s/ro-top", h->dir);
	text = xprintf("%s\n", gitdir);
	if (util_write_file_atomic(path, text, strlen(text), 0600, NULL) == -1)
		log_warn("cannot write %s", path);
	free(text);
	free(path);
}

size_t
snap_history_count(const struct snap_history *h)
{
	return h != NULL ? h->n : 0;
}

void
snap_history_overlay(const struct snap_history *h, size_t i,
    const char **path, const char **upper, const char **work)
{
	*path = h->v[i].objects;
	*upper = h->v[i].upper;
	*work = h->v[i].work;
}

bool
snap_history_import(struct snap_history *h, struct event_base *base)
{
	size_t i;
	bool whole = true;

	for (i = 0; h != NULL && i < h->n; i++) {
		if (!snap_import_run(h->v[i].imp, base, false))
			whole = false;
	}
	return whole;
}

/* "the branch main", "the tag v1", "refs/stash": a ref as the user knows it; caller frees. */
static char *
snap_history_refname(const char *ref)
{
	if (strncmp(ref, "refs/heads/", 11) == 0)
		return xprintf("the branch %s", ref + 11);
	if (strncmp(ref, "refs/tags/", 10) == 0)
		return xprintf("the tag %s", ref + 10);
	if (strncmp(ref, "refs/remotes/", 13) == 0)
		return xprintf("the remote-tracking branch %s", ref + 13);
	return xstrdup(ref);
}

/*
 * The remote-tracking branch REF the session moved from WAS (NULL: made it)
 * to V, in red: no fetch reaches a remote from the jail unless the proxy
 * let it, so it may name a commit the session forged, which the user's
 * next merge or pull of it would take in.
 */
static void
snap_history_remote(const char *ref, const char *was, const char *v,
    int64_t session, const char *gitdir, struct strv *alerts)
{
	char *name = snap_nested_quote(ref + 13), *qref = snap_nested_quote(ref);
	char *qg = quote_name(gitdir), *r;
	size_t n = strlen(ref);

	/* No fetch moves R/HEAD back (git takes it for R): review 5 F2. */
	if (was != NULL && n > 18 && strcmp(ref + n - 5, "/HEAD") == 0) {
		r = xstrndup(ref + 13, n - 13 - 5);
		free(qref);
		qref = snap_nested_quote(r);
		free(r);
		strv_addf(alerts, "the session moved %s in %s from %s to %s: git "
		    "takes it for %s, so 'git merge %s' would take in what it "
		    "names now, and no fetch puts it back; 'agentmux undo %lld "
		    "--refs' does, or 'git remote set-head' there", name, qg,
		    was, v, qref, qref, (long long)session);
	} else if (was != NULL)
		strv_addf(alerts, "the session moved the remote-tracking branch "
		    "%s in %s from %s to %s: no fetch reaches a remote from the "
		    "jail unless the proxy let it, so it may name a commit the "
		    "session forged, which your next 'git merge %s' or 'git "
		    "pull' would take in; 'agentmux undo %lld --refs' puts it "
		    "back, or run 'git fetch' again before you use it", name,
		    qg, was, v, name, (long long)session);
	else
		strv_addf(alerts, "the session made the remote-tracking branch "
		    "%s in %s (at %s): no fetch reaches a remote from the jail "
		    "unless the proxy let it, so it may name a commit the "
		    "session forged, which a 'git merge %s' would take in; "
		    "delete it ('git update-ref -d %s') or run 'git fetch' "
		    "again before you use it", name, qg, v, name, qref);
	free(qg);
	free(qref);
	free(name);
}

/* Reads LEN bytes at AT of FD into BUF, all of them: -1 if not. */
static int
snap_hist_pread_all(int fd, char *buf, size_t len, off_t at)
{
	ssize_t got;

	while ((got = pread(fd, buf, len, at)) == -1 && errno == EINTR)
		;
	return got == (ssize_t)len ? 0 : -1;
}

/*
 * Where the last line of the reflog FD (SIZE bytes; newlines at its end
 * are no line) starts, read from its end a chunk at a time: 0 with *AT,
 * 1 if it has none (empty), -1 if it cannot be read, -2 if the last line
 * (with the newlines after it) is longer than SNAP_HIST_LOG_LINE_MAX: a
 * reflog may be as big as the disk, and one line of it too.
 */
static int
snap_hist_log_start(int fd, off_t size, off_t *at)
{
	char *chunk = xmalloc(SNAP_HIST_LOG_TAIL);
	const char *nl;
	off_t pos = size, from, end = -1;
	size_t n;
	int rc = 1;

	while (pos > 0) {
		if (size - pos >= SNAP_HIST_LOG_LINE_MAX) {
			rc = -2;
			break;
		}
		from = pos > SNAP_HIST_LOG_TAIL ? pos - SNAP_HIST_LOG_TAIL : 0;
		n = (size_t)(pos - from);
		if (snap_hist_pread_all(fd, chunk, n, from) == -1) {
			rc = -1;
			break;
		}
		if (end == -1) {
			while (n > 0 && chunk[n - 1] == '\n')
				n--;
			if (n > 0)
				end = from + (off_t)n;
		}
		if (end != -1 && (nl = memrchr(chunk, '\n', n)) != NULL) {
			*at = from + (nl - chunk) + 1;
			rc = 0;
			break;
		}
		if (end != -1 && from == 0) {
			*at = 0;
			rc = 0;
			break;
		}
		pos = from;
	}
	free(chunk);
	return rc;
}

char *
snap_hist_log_last(int gitfd, const char *ref, bool *unread)
{
	char *path = xprintf("logs/%s", ref), *last = NULL;
	char head[2 * 64 + 8];    /* OLD NEW and a space: two sha256 ids */
	struct stat st;
	off_t at = 0;
	size_t n, m, i, len;
	int fd, rc = -1;

	*unread = false;
	fd = path_open_beneath(gitfd, path, O_RDONLY | O_NONBLOCK, 0);
	free(path);
	if (fd == -1)
		return NULL;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    (rc = snap_hist_log_start(fd, st.st_size, &at)) == 0) {
		len = st.st_size - at < (off_t)sizeof head - 1 ?
		    (size_t)(st.st_size - at) : sizeof head - 1;
		if (snap_hist_pread_all(fd, head, len, at) == -1)
			rc = -1;
		head[rc == 0 ? len : 0] = '\0';
	}
	close(fd);
	*unread = rc == -2;
	if (rc != 0)
		return NULL;
	/* "OLD NEW NAME <EMAIL> TIME ZONE\tMESSAGE" */
	if ((n = snap_hist_oid_len(head)) != 0 && head[n] == ' ' &&
	    (m = snap_hist_oid_len(head + n + 1)) != 0) {
		last = xstrndup(head + n + 1, m);
		for (i = 0; i < m; i++)
			last[i] = (char)tolower((unsigned char)last[i]);
	}
	return last;
}

/*
 * Worktree sessions' branches (refs/heads/agentmux/...): their dirs are
 * read-only to a session in the main tree, but packed-refs is not (a
 * branch the user's git gc packed has no loose file), nor is HEAD or any
 * other ref. A branch not where its reflog's last line says (only that
 * session and the user's git write it), or HEAD or a ref made a link to
 * such a branch (the user's next commit there would move it), is told in
 * red, with how to put it back.
 */
static void
snap_history_agentmux(int gitfd, const struct strv *start,
    const struct strv *now, int64_t session, const char *gitdir,
    struct strv *alerts)
{
	const char *v, *was;
	char *ref, *last, *q, *t;
	struct stat st;
	size_t i;
	bool unread;

	/*
	 * agentmux makes nothing at .git/agentmux, and git takes a file
	 * there (agentmux/ID/NAME) first for a worktree branch's short name:
	 * still there if snap_hist_agentmux_dir could not move it.
	 */
	if (fstatat(gitfd, "agentmux", &st, AT_SYMLINK_NOFOLLOW) == 0) {
		q = quote_name(gitdir);
		strv_addf(alerts, "%s/agentmux is there (made by this session or "
		    "an earlier one) and could not be moved aside: git takes a "
		    "file under it, such as agentmux/ID/NAME, before a worktree "
		    "session's branch named short (git log or git merge "
		    "agentmux/ID/NAME would take what it names); agentmux makes "
		    "nothing there: remove it ('rm -r %s/agentmux')", q, q);
		free(q);
	}
	for (i = 0; i < now->n; i++) {
		ref = xstrndup(now->v[i], strcspn(now->v[i], "\t"));
		v = now->v[i] + strlen(ref) + 1;
		was = snap_hist_value(start, ref);
		q = quote_name(ref);
		if (strncmp(v, "ref: refs/heads/agentmux/", 25) == 0 &&
		    (was == NULL || strcmp(was, v) != 0)) {
			t = quote_name(v + 5);
			strv_addf(alerts, "the session made %s in %s a link to "
			    "%s, a worktree session's branch: your next commit "
			    "there would move that session's branch; 'agentmux "
			    "undo %lld --refs' puts it back", q, gitdir, t,
			    (long long)session);
			free(t);
		} else if ((strncmp(ref, "refs/agentmux/", 14) == 0 ||
		    strncmp(ref, "refs/tags/agentmux/", 19) == 0) &&
		    (was == NULL || strcmp(was, v) != 0)) {
			t = quote_name(ref + (ref[5] == 't' ? 10 : 5));
			strv_addf(alerts, "the session %s %s in %s: git takes it "
			    "before a worktree session's branch when that is "
			    "named short (git log or git merge %s would take "
			    "the session's commit); 'agentmux undo %lld --refs' "
			    "%s", was == NULL ? "made" : "moved", q, gitdir, t,
			    (long long)session, was == NULL ? "deletes it" :
			    "puts it back");
			free(t);
		} else if (strncmp(ref, "refs/heads/agentmux/", 20) == 0 &&
		    snap_hist_value_ok(v) && strncmp(v, "ref: ", 5) != 0) {
			last = snap_hist_log_last(gitfd, ref, &unread);
			if (last != NULL && strcmp(last, v) != 0)
				strv_addf(alerts, "%s in %s, a worktree session's "
				    "branch, is at %.12s, and its reflog (which "
				    "only that session and your own git write) "
				    "says %s: this session moved it (without a "
				    "reflog line: through packed-refs, or written as "
				    "a file); put it back with 'git update-ref "
				    "%s %s'", q, gitdir, v, last, q, last);
			else if (unread)
				strv_addf(alerts, "%s in %s, a worktree session's "
				    "branch, is at %.12s, and the last line of its "
				    "reflog is over 16 MiB long (no git writes "
				    "such a line): whether this session moved the "
				    "branch cannot be told; look with 'git log -1 "
				    "%s' before you merge it", q, gitdir, v, q);
			free(last);
		}
		free(q);
		free(ref);
	}
}

static const struct timespec *snap_history_since(const struct snap_history *,
    struct timespec *);
static char *snap_hist_quarantine(const struct snap_hgit *, size_t);

/* How git finds a ref by its short name, in order (refs.c's ref_rev_parse_rules). */
static const char *const snap_hist_rules[][2] = {
	{ "", "" }, { "refs/", "" }, { "refs/tags/", "" }, { "refs/heads/", "" },
	{ "refs/remotes/", "" }, { "refs/remotes/", "/HEAD" },
};

/*
 * Whether the short name X is a ref's in NOW by a rule after RULE (of
 * snap_hist_rules): one by RULE shadows it, git taking it for X first.
 */
static bool
snap_hist_shadowed(const struct strv *now, const char *x, size_t rule)
{
	char *ref;
	bool is = false;
	size_t r;

	for (r = rule + 1; r < nitems(snap_hist_rules) && !is; r++) {
		ref = xprintf("%s%s%s", snap_hist_rules[r][0], x,
		    snap_hist_rules[r][1]);
		is = snap_hist_value(now, ref) != NULL;
		free(ref);
	}
	return is;
}

/*
 * The rule of snap_hist_rules by which git finds REF (under refs/) by its
 * short name, into *RULE, and that name (to free); NULL for a
 * remote-tracking branch (it shadows none that matters), but for
 * refs/remotes/X/HEAD: git takes it for X (git merge up3), and writes
 * one only at a clone or 'git remote set-head' (review 4 F5).
 */
static char *
snap_hist_short(const char *ref, size_t *rule)
{
	size_t n = strlen(ref);

	if (strncmp(ref, "refs/tags/", 10) == 0) {
		*rule = 2;
		return xstrdup(ref + 10);
	}
	if (strncmp(ref, "refs/heads/", 11) == 0) {
		*rule = 3;
		return xstrdup(ref + 11);
	}
	if (strncmp(ref, "refs/remotes/", 13) == 0) {
		if (n <= 13 + 5 || strcmp(ref + n - 5, "/HEAD") != 0)
			return NULL;
		*rule = 5;
		return xstrndup(ref + 13, n - 13 - 5);
	}
	*rule = 1;
	return xstrdup(ref + 5);
}

/*
 * Whether NAME is a file git keeps in a git dir itself, as git's own
 * (shallow holds an id: review 11 F8), or its lock (no ref's name ends
 * in .lock), or a split index's shared part (sharedindex. and an id).
 * Not config.x or sharedindex.foo: a branch may have that name, and a
 * file there would shadow it (reviews F7, 4 F8).
 */
static bool
snap_hist_git_own_file(const char *name)
{
	static const char *const own[] = { "shallow", "packed-refs", "config",
	    "config.worktree", "description", "index", "commondir", "gitdir",
	    "gc.pid", "gc.log", "gitk.cache" };
	size_t i, n = strlen(name);

	if (n > 5 && strcmp(name + n - 5, ".lock") == 0)
		return true;
	if (strncmp(name, "sharedindex.", 12) == 0 && (n == 52 || n == 76) &&
	    name[12 + strspn(name + 12, "0123456789abcdef")] == '\0')
		return true;
	for (i = 0; i < nitems(own); i++) {
		if (strcmp(name, own[i]) == 0)
			return true;
	}
	return false;
}

/* Whether NAME is a dir git keeps in a git dir itself (a file of that name is not git's: review 5 F3). */
static bool
snap_hist_git_own_dir(const char *name)
{
	static const char *const own[] = { "hooks", "info", "objects", "refs",
	    "logs", "modules", "worktrees", "branches", "remotes", "rr-cache",
	    "svn", "lfs", "agentmux", "reftable" };
	size_t i;

	for (i = 0; i < nitems(own); i++) {
		if (strcmp(name, own[i]) == 0)
			return true;
	}
	return false;
}

/* Whether NAME is a pseudo-ref git itself writes in a git dir with an id in it (HEAD, ORIG_HEAD, FETCH_HEAD...): git's own, not a shadow. */
static bool
snap_hist_pseudo(const char *name)
{
	static const char *const own[] = { "HEAD", "ORIG_HEAD", "FETCH_HEAD",
	    "MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "BISECT_HEAD",
	    "REBASE_HEAD", "AUTO_MERGE", "BISECT_EXPECTED_REV",
	    "NOTES_MERGE_PARTIAL", "NOTES_MERGE_REF", "MERGE_AUTOSTASH" };
	size_t i;

	for (i = 0; i < nitems(own); i++) {
		if (strcmp(name, own[i]) == 0)
			return true;
	}
	return false;
}

/* What is said of the shadowing WHAT ("ref" or "link") NAME in GITDIR, found first for the short name X (to free). */
static char *
snap_hist_shadow_said(const char *what, const char *name, const char *gitdir,
    const char *x)
{
	char *q = snap_nested_quote(name), *qx = snap_nested_quote(x), *said;
	char *qg = quote_name(gitdir);

	said = xprintf("the session made the %s %s in %s, which git finds "
	    "before a ref of yours of the short name %s (a branch, tag or "
	    "remote-tracking branch, or one your next fetch makes) when it is "
	    "named so ('git merge %s' or 'git reset --hard %s' take its "
	    "commit, git saying only that the name is ambiguous)", what, q,
	    qg, qx, qx, qx);
	free(qg);
	free(qx);
	free(q);
	return said;
}

/* Shadows told one by one in a git dir; those past it are moved, counted and listed, */
#define SNAP_HIST_SHADOWS_TOLD 32
/* the list up to so many bytes. */
#define SNAP_HIST_MORE_MAX (4U << 20)

/*
 * The shadows NC counted past the bound, each its name and where it went,
 * written to a new file in its quarantine (another name if an end run
 * again after a crash wrote one): that file's path (quoted, to free), or
 * NULL.
 */
static char *
snap_hist_more_list(struct snap_nested *nc)
{
	char *path = NULL, *q = NULL;
	int fd = -1, i;

	for (i = 1; i <= 16 && fd == -1; i++) {
		free(path);
		path = i == 1 ? xprintf("%s/more-shadows.txt", nc->quarantine) :
		    xprintf("%s/more-shadows-%d.txt", nc->quarantine, i);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
		    O_CLOEXEC, 0600);
		if (fd == -1 && errno != EEXIST)
			break;
	}
	if (fd != -1 && util_write_all(fd, nc->more_names.data,
	    nc->more_names.len) == 0)
		q = quote_name(path);
	else if (fd != -1)
		(void)unlink(path);
	if (fd != -1)
		close(fd);
	free(path);
	return q;
}

/* The shadowing ref NAME of G (DFD: the dir it is in, REL its name there), found first for the short name X, moved to the quarantine NC, told in red. */
static void
snap_hist_shadow_out(const struct snap_hgit *g, struct snap_nested *nc,
    int dfd, const char *rel, const char *name, const char *x,
    struct strv *alerts)
{
	struct stat st;
	const char *what = fstatat(dfd, rel, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISLNK(st.st_mode) ? "link" : "ref";
	char *kept, *said, *q;
	int saved;

	kept = snap_nested_keep(nc, dfd, rel, true);
	saved = errno;
	/* Told one by one up to a bound, then counted and listed (a jail may make thousands: review 5 F5). */
	if (kept != NULL && nc->told >= SNAP_HIST_SHADOWS_TOLD) {
		nc->more++;
		if (nc->more_names.len < SNAP_HIST_MORE_MAX) {
			q = snap_nested_quote(name);
			said = quote_name(kept);
			buf_printf(&nc->more_names, "%s\t%s\n", q, said);
			free(said);
			free(q);
		}
		free(kept);
		return;
	}
	nc->told++;
	said = snap_hist_shadow_said(what, name, g->gitdir, x);
	if (kept != NULL)
		strv_addf(alerts, "%s; it was moved to %s", said, kept);
	else {
		q = snap_nested_quote(name);
		kept = quote_name(g->gitdir);
		strv_addf(alerts, "%s, and agentmux could not move it (%s): "
		    "remove %s in %s yourself", said, strerror(saved), q, kept);
		free(q);
	}
	free(said);
	free(kept);
}

/* Whether ST was changed at SINCE or after (by the session). */
static bool
snap_hist_changed_since(const struct stat *st, const struct timespec *since)
{
	return st->st_ctim.tv_sec > since->tv_sec ||
	    (st->st_ctim.tv_sec == since->tv_sec &&
	    st->st_ctim.tv_nsec >= since->tv_nsec);
}

/*
 * The file REL in DFD, as the session left it (changed since SINCE; NULL:
 * in a dir the session made or moved there), moved out: git reads it
 * first for the short name X (its name NAME in G's git dir), a file as a
 * ref or symbolic ref (whatever agentmux makes of it: git takes "ref:
 * evil/x" and a name padded with 4 KiB of blanks), a link by following
 * it (git makes no link in a git dir). The callers leave out git's own
 * files (shallow, config).
 */
static void
snap_hist_shadow_file(const struct snap_hgit *g, struct snap_nested *nc,
    int dfd, const char *rel, const char *name, const char *x,
    const struct timespec *since, struct strv *alerts)
{
	struct stat st;

	if (fstatat(dfd, rel, &st, AT_SYMLINK_NOFOLLOW) == -1 ||
	    (since != NULL && !snap_hist_changed_since(&st, since)))
		return;
	if (S_ISLNK(st.st_mode) || S_ISREG(st.st_mode))
		snap_hist_shadow_out(g, nc, dfd, rel, name, x, alerts);
}

/*
 * $GIT_DIR/X (X a short name with a '/') through G's git dir GITFD, one
 * dir at a time through no link: the file at its end, or a link the
 * session left on the way (git follows it), moved out (snap_hist_shadow_file).
 * A dir on the way that the session changed may have been moved there
 * (a rename changes the dir's ctime, not what it holds): what is under
 * it counts as the session's, whenever it was written.
 */
static void
snap_hist_shadow_path(const struct snap_hgit *g, struct snap_nested *nc,
    int gitfd, const char *x, const struct timespec *since,
    struct strv *alerts)
{
	char *name = xstrdup(x), *part, *slash;
	struct stat st;
	int dfd, next;

	slash = NULL;
	dfd = openat(gitfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	part = name;
	while (dfd != -1 && (slash = strchr(part, '/')) != NULL) {
		*slash = '\0';
		if (fstatat(dfd, part, &st, AT_SYMLINK_NOFOLLOW) == -1 ||
		    (!S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode)))
			break;
		if (S_ISLNK(st.st_mode)) {
			/* Named by its path in the git dir. */
			snap_hist_shadow_file(g, nc, dfd, part, name, x, since,
			    alerts);
			break;
		}
		if (since != NULL && snap_hist_changed_since(&st, since))
			since = NULL;
		next = openat(dfd, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
		close(dfd);
		dfd = next;
		*slash = '/';
		part = slash + 1;
	}
	if (dfd != -1 && slash == NULL)
		snap_hist_shadow_file(g, nc, dfd, part, x, x, since, alerts);
	if (dfd != -1)
		close(dfd);
	free(name);
}

/* REF's short name by rule R of snap_hist_rules (refs/heads/a/b: a/b by rule 3), or NULL if R does not find it. */
static char *
snap_hist_rule_name(const char *ref, size_t r)
{
	const char *pre = snap_hist_rules[r][0], *suf = snap_hist_rules[r][1];
	size_t n = strlen(ref), np = strlen(pre), ns = strlen(suf);

	if (n <= np + ns || strncmp(ref, pre, np) != 0 ||
	    strcmp(ref + n - ns, suf) != 0)
		return NULL;
	return xstrndup(ref + np, n - np - ns);
}

static int
snap_hist_str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Whether the sorted DIRS holds NAME. */
static bool
snap_hist_dirs_have(const struct strv *dirs, const char *name)
{
	return dirs->n > 0 && bsearch(&name, dirs->v, dirs->n, sizeof *dirs->v,
	    snap_hist_str_cmp) != NULL;
}

/*
 * DIRS sorted, each once: parents first (a dir's name sorts before the
 * names under it). Before, each was looked for among all the others as
 * it came, refs x dirs name compares (review F6).
 */
static void
snap_hist_ref_dirs_sort(struct strv *dirs)
{
	size_t i, n = 0;

	if (dirs->n == 0)
		return;
	qsort(dirs->v, dirs->n, sizeof *dirs->v, snap_hist_str_cmp);
	for (i = 1; i < dirs->n; i++) {
		if (strcmp(dirs->v[i], dirs->v[n]) == 0)
			free(dirs->v[i]);
		else
			dirs->v[++n] = dirs->v[i];
	}
	dirs->n = n + 1;
	dirs->v[dirs->n] = NULL;
}

/*
 * Whether NAME is a dir git keeps the state of a command under way in at
 * a git dir's top (a rebase, a sequence, a notes merge), never looked
 * into for shadows whatever refs name it: a ref
 * refs/remotes/rebase-merge/x or refs/tags/rebase-merge/onto a session
 * left made agentmux move the user's own rebase's files (review 4 F3).
 * Tools' dirs are looked into (a remote is often named fork: review 6
 * F1); there only links and files git takes for a ref are moved, and
 * never in a git dir whose top the jail saw read only.
 */
static bool
snap_hist_state_dir(const char *name)
{
	static const char *const own[] = { "rebase-merge", "rebase-apply",
	    "sequencer", "NOTES_MERGE_WORKTREE", "fsmonitor--daemon",
	    "lost-found" };
	size_t i;

	for (i = 0; i < nitems(own); i++) {
		if (strcmp(name, own[i]) == 0)
			return true;
	}
	return false;
}

/*
 * Files the session left deeper in G's git dir (GITFD) that git reads
 * first for a short name with a '/' in it: $GIT_DIR/origin/main for
 * origin/main, $GIT_DIR/feature/x for the branch feature/x. Looked for
 * only under DIRS (sorted), the git dir's dirs (git's own too: git reads
 * $GIT_DIR/svn/trunk for svn/trunk): each candidate is the short name of
 * a ref of the start's, START (the user's, never one the session made:
 * its refs/heads/rebase-merge/onto would name the user's own rebase's
 * file), opened through no link.
 */
static void
snap_hist_shadows_deep(const struct snap_hgit *g, int gitfd,
    struct snap_nested *nc, const struct strv *start,
    const struct timespec *since, const struct strv *dirs,
    struct strv *alerts)
{
	char *ref, *x, *first;
	size_t i, r;

	for (i = 0; i < start->n; i++) {
		ref = xstrndup(start->v[i], strcspn(start->v[i], "\t"));
		for (r = 1; r < nitems(snap_hist_rules); r++) {
			if ((x = snap_hist_rule_name(ref, r)) == NULL)
				continue;
			if (strchr(x, '/') != NULL) {
				first = xstrndup(x, strcspn(x, "/"));
				if (snap_hist_dirs_have(dirs, first) &&
				    !snap_hist_state_dir(first))
					snap_hist_shadow_path(g, nc, gitfd, x,
					    since, alerts);
				free(first);
			}
			free(x);
		}
		free(ref);
	}
}

/* Adds to REMOTES the first part of each refs/remotes/R/... of the ref list or fetch destinations in TEXT (one a line, "ref\t..." or "key value"). */
static void
snap_hist_remotes_add(struct strv *remotes, const char *r)
{
	size_t n;

	if (strncmp(r, "refs/remotes/", 13) != 0)
		return;
	r += 13;
	n = strcspn(r, "/\t\n");
	if (r[n] == '/' && n > 0)
		strv_take(remotes, xstrndup(r, n));
}

/*
 * The remotes of G's kept config of the start into REMOTES: each
 * remote.R.* section's R, and the first part under refs/remotes/ of
 * each fetch refspec's destination (a remote configured but never
 * fetched has no ref yet: review 4 F4). Read by git itself, without
 * includes, only if the config names a remote at all.
 */
static void
snap_hist_remotes_config(const struct snap_hgit *g, struct strv *remotes)
{
	char *argv[] = { "git", "config", "--file", "-", "--no-includes", "-z",
	    "--get-regexp", "^remote\\.", NULL };
	char *path = xprintf("%s/config", g->base), *cause = NULL;
	char *rec, *end, *key, *value, *dot;
	struct buf in, out;
	int status;

	buf_init(&in);
	buf_init(&out);
	if (buf_read_file(&in, path) == 0 && in.data != NULL &&
	    strcasestr(in.data, "remote") != NULL &&
	    snap_git_outside_input(argv, in.data, in.len, &out, NULL, &status,
	    &cause) == 0 && status == 0 && out.data != NULL) {
		/* -z: each "remote.NAME.key\nvalue" ends in a NUL; NAME may hold dots, key not. */
		end = out.data + out.len;
		for (rec = out.data; rec < end; rec += strlen(rec) + 1) {
			if (strncmp(rec, "remote.", 7) != 0)
				continue;
			key = xstrndup(rec + 7, strcspn(rec + 7, "\n"));
			value = strchr(rec, '\n');
			if ((dot = strrchr(key, '.')) != NULL && dot > key) {
				*dot = '\0';
				strv_take(remotes, xstrndup(key, strcspn(key,
				    "/")));
				if (strcasecmp(dot + 1, "fetch") == 0 &&
				    value != NULL &&
				    (value = strchr(value, ':')) != NULL)
					snap_hist_remotes_add(remotes, value + 1);
			}
			free(key);
		}
	}
	free(cause);
	free(path);
	buf_free(&in);
	buf_free(&out);
}

/*
 * The user's remotes: the first part of each refs/remotes/R/... of START
 * (the refs at the start) and of the kept config's remotes, sorted, each
 * once. A name git keeps state under is among them if so named; only
 * the walk passes those over (snap_hist_state_dir).
 */
static void
snap_hist_remotes_of(const struct snap_hgit *g, const struct strv *start,
    struct strv *remotes)
{
	size_t i;

	strv_init(remotes);
	for (i = 0; i < start->n; i++)
		snap_hist_remotes_add(remotes, start->v[i]);
	snap_hist_remotes_config(g, remotes);
	snap_hist_ref_dirs_sort(remotes);
}

/*
 * Whether the short name X is R/... or R for a remote R of REMOTES: a
 * ref the user's next fetch may make (refs/remotes/R/fix, or R/HEAD that
 * git remote set-head makes), which one the session made by that name
 * would shadow then, though it does not exist yet (review 2 (c): a tag
 * origin/fix, or $GIT_DIR/origin/fix).
 */
static bool
snap_hist_remote_name(const struct strv *remotes, const char *x)
{
	char *r = xstrndup(x, strcspn(x, "/"));
	bool is;

	is = snap_hist_dirs_have(remotes, r);
	free(r);
	return is;
}

/* Entries under one remote's dir in a git dir looked at, at most. */
#define SNAP_HIST_REMOTE_WALK_MAX 4096

/*
 * Whether the regular file NAME in DFD begins as git takes a loose ref
 * (refs/files-backend.c): "ref:", or an id of 40 or 64 hex digits then
 * the end or a blank. What does not is no ref to git, which looks on to
 * the next rule: a file of a tool of the user's under a dir that a
 * remote's name was planted for is never moved (review 5).
 */
static bool
snap_hist_ref_like(int dfd, const char *name)
{
	char v[72];
	size_t n;
	int fd;

	if ((fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC)) == -1)
		return false;
	n = snap_hist_read_head(fd, v, sizeof v - 1) == -1 ? 0 : strlen(v);
	close(fd);
	if (strncmp(v, "ref:", 4) == 0 && n >= 4)
		return true;
	n = strspn(v, "0123456789abcdefABCDEF");
	return (n == 40 || n == 64) && (v[n] == '\0' ||
	    isspace((unsigned char)v[n]));
}

/*
 * Every file or link the session left under REL (a dir of G's git dir,
 * opened as DFD, named as a remote of the user's), moved out: git reads
 * $GIT_DIR/origin/fix first for origin/fix, which the user's next fetch
 * may make. SINCE NULL: in a dir the session made or moved there. *LEFT
 * counts down the entries looked at; *CUT set if there were more, or
 * deeper than 32.
 */
static void
snap_hist_shadows_remote(const struct snap_hgit *g, struct snap_nested *nc,
    int dfd, const char *rel, const struct timespec *since, int depth,
    size_t *left, bool *cut, struct strv *alerts)
{
	struct dirent *de;
	struct stat st;
	char *sub;
	DIR *d;
	int fd;

	if (depth > 32) {
		*cut = true;
		return;
	}
	if ((fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return;
	}
	while (!*cut && (de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.' && (de->d_name[1] == '\0' ||
		    (de->d_name[1] == '.' && de->d_name[2] == '\0')))
			continue;
		if (*left == 0) {
			*cut = true;
			break;
		}
		(*left)--;
		if (de->d_name[0] == '.' || fstatat(dirfd(d), de->d_name, &st,
		    AT_SYMLINK_NOFOLLOW) == -1)
			continue;
		sub = xprintf("%s/%s", rel, de->d_name);
		if (S_ISDIR(st.st_mode) && (fd = openat(dirfd(d), de->d_name,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) != -1) {
			snap_hist_shadows_remote(g, nc, fd, sub, since == NULL ||
			    snap_hist_changed_since(&st, since) ? NULL : since,
			    depth + 1, left, cut, alerts);
			close(fd);
		} else if (S_ISLNK(st.st_mode) || (S_ISREG(st.st_mode) &&
		    snap_hist_ref_like(dirfd(d), de->d_name)))
			snap_hist_shadow_file(g, nc, dirfd(d), de->d_name, sub,
			    sub, since, alerts);
		free(sub);
	}
	closedir(d);
}

/*
 * The dir R of G's git dir (GITFD), named as a remote of the user's,
 * whose walk was cut: moved whole to the quarantine NC (git keeps
 * nothing there), told in red.
 */
static void
snap_hist_shadows_remote_cut(const struct snap_hgit *g, int gitfd,
    struct snap_nested *nc, const char *r, struct strv *alerts)
{
	char *q = snap_nested_quote(r), *qg = quote_name(g->gitdir), *kept;
	char *part, *said, *qp;
	int saved;

	said = xprintf("the session left more under %s/%s than agentmux looks "
	    "through (%d entries, 32 dirs deep), where git finds a file first "
	    "for a remote-tracking branch of yours, or one your next fetch "
	    "makes, of the name %s/...", qg, q, SNAP_HIST_REMOTE_WALK_MAX, q);
	kept = snap_nested_keep_tree(nc, gitfd, r, &part);
	saved = errno;
	if (kept != NULL)
		strv_addf(alerts, "%s; git keeps nothing there, and it was "
		    "moved whole to %s", said, kept);
	else if (part != NULL) {
		qp = quote_name(part);
		strv_addf(alerts, "%s, and it could not all be moved (%s): what "
		    "was taken is in %s; remove the rest yourself before you use "
		    "%s/... in git", said, strerror(saved), qp, q);
		free(qp);
	} else
		strv_addf(alerts, "%s, and it could not be moved (%s): remove "
		    "it yourself before you use %s/... in git", said,
		    strerror(saved), q);
	free(part);
	free(kept);
	free(said);
	free(qg);
	free(q);
}

/*
 * Under each dir of the git dir (DIRS, sorted) named as one of REMOTES,
 * but for git's and the user's tools' own (snap_hist_state_dir):
 * snap_hist_shadows_remote.
 */
static void
snap_hist_shadows_remotes(const struct snap_hgit *g, int gitfd,
    struct snap_nested *nc, const struct strv *remotes,
    const struct timespec *since, const struct strv *dirs,
    struct strv *alerts)
{
	size_t i, left;
	struct stat st;
	bool cut;
	int fd;

	for (i = 0; i < remotes->n; i++) {
		if (snap_hist_git_own_dir(remotes->v[i]) ||
		    snap_hist_git_own_file(remotes->v[i]) ||
		    snap_hist_state_dir(remotes->v[i]) ||
		    !snap_hist_dirs_have(dirs, remotes->v[i]) ||
		    fstatat(gitfd, remotes->v[i], &st, AT_SYMLINK_NOFOLLOW) == -1)
			continue;
		/* A link there is followed by git as a dir: moved itself. */
		if (S_ISLNK(st.st_mode)) {
			snap_hist_shadow_file(g, nc, gitfd, remotes->v[i],
			    remotes->v[i], remotes->v[i], since, alerts);
			continue;
		}
		if ((fd = openat(gitfd, remotes->v[i], O_RDONLY | O_DIRECTORY |
		    O_NOFOLLOW | O_CLOEXEC)) == -1)
			continue;
		left = SNAP_HIST_REMOTE_WALK_MAX;
		cut = false;
		snap_hist_shadows_remote(g, nc, fd, remotes->v[i],
		    snap_hist_changed_since(&st, since) ? NULL : since, 0,
		    &left, &cut, alerts);
		close(fd);
		if (cut)
			snap_hist_shadows_remote_cut(g, gitfd, nc, remotes->v[i],
			    alerts);
	}
}

/* Whether NAME has the form of a per-worktree pseudo-ref (git's is_pseudoref_syntax: capitals, '-' and '_'), which git in a linked worktree reads from its own git dir. */
static bool
snap_hist_caps(const char *name)
{
	return name[0] != '\0' &&
	    name[strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZ-_")] == '\0';
}

/*
 * Whether NAME (stat ST) at the top of a git dir (GITFD) shadows a ref
 * of the user's: one of START's of that short name (whatever the file
 * holds: git takes "ref: evil/x"), or one a fetch may bring later (a tag
 * v9 the next release gets: review 6 F2), if it is a link or a file git
 * takes for a ref. Names of a pseudo-ref's form (capitals: BISECT_START
 * of a bisect under way) are left to the first.
 */
static bool
snap_hist_top_shadow(int gitfd, const char *name, const struct stat *st,
    const struct strv *start)
{
	if (snap_hist_shadowed(start, name, 0))
		return true;
	return !snap_hist_caps(name) && (S_ISLNK(st->st_mode) ||
	    (S_ISREG(st->st_mode) && snap_hist_ref_like(gitfd, name)));
}

/* Linked worktrees' git dirs looked into for shadows, at most. */
#define SNAP_HIST_WORKTREES_MAX 1024

/*
 * Files the session left in G's linked worktrees' git dirs
 * ($GIT_DIR/worktrees/W) named as one of START's refs of capitals only
 * (a branch DEV): git run in that worktree reads worktrees/W/DEV for DEV
 * first, as it reads every name of a pseudo-ref's form there.
 */
static void
snap_hist_shadows_worktrees(const struct snap_hgit *g, int gitfd,
    struct snap_nested *nc, const struct strv *start,
    const struct timespec *since, struct strv *alerts)
{
	struct dirent *de, *e;
	char *name;
	DIR *d, *w;
	int fd, wfd;
	size_t n = 0;

	if ((fd = path_open_beneath(gitfd, "worktrees", O_RDONLY | O_DIRECTORY,
	    0)) == -1)
		return;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL && n < SNAP_HIST_WORKTREES_MAX) {
		if (de->d_name[0] == '.' || (wfd = openat(dirfd(d), de->d_name,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1)
			continue;
		n++;
		if ((w = fdopendir(wfd)) == NULL) {
			close(wfd);
			continue;
		}
		while ((e = readdir(w)) != NULL) {
			if (!snap_hist_caps(e->d_name) ||
			    snap_hist_pseudo(e->d_name) ||
			    !snap_hist_shadowed(start, e->d_name, 0))
				continue;
			name = xprintf("worktrees/%s/%s", de->d_name,
			    e->d_name);
			snap_hist_shadow_file(g, nc, dirfd(w), e->d_name, name,
			    e->d_name, since, alerts);
			free(name);
		}
		closedir(w);
	}
	closedir(d);
}

/*
 * Files the session made in G's git dir itself (GITFD) that git reads as
 * refs by their short name before refs/ (refs.c's first rule, "%s"): one
 * named as a branch or tag of START's (the user's refs at the start),
 * holding a ref, changed since SINCE; then those deeper.
 */
static void
snap_hist_shadows_top(const struct snap_hgit *g, int gitfd,
    struct snap_nested *nc, const struct strv *start,
    const struct strv *remotes, const struct timespec *since, bool ro,
    struct strv *alerts)
{
	struct strv dirs;
	struct dirent *de;
	struct stat st;
	DIR *d;
	int fd;

	if ((fd = openat(gitfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) ==
	    -1 || (d = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		return;
	}
	strv_init(&dirs);
	while ((de = readdir(d)) != NULL) {
		/* No ref's name has a part that starts with a dot. */
		if (de->d_name[0] == '.' ||
		    fstatat(gitfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == -1)
			continue;
		/* A dir, or a link git would go through as one. */
		if (S_ISDIR(st.st_mode) || S_ISLNK(st.st_mode))
			strv_add(&dirs, de->d_name);
		/*
		 * git's own files (shallow holds an id: review 11 F8) are not
		 * looked at; a file named as one of git's dirs (lfs, modules)
		 * is (review 5 F3). A top the jail saw read only holds none of
		 * the session's (the user's git and tools wrote them).
		 */
		if (!ro && !S_ISDIR(st.st_mode) &&
		    !snap_hist_git_own_file(de->d_name) &&
		    !snap_hist_pseudo(de->d_name) &&
		    snap_hist_top_shadow(gitfd, de->d_name, &st, start))
			snap_hist_shadow_file(g, nc, gitfd, de->d_name,
			    de->d_name, de->d_name, since, alerts);
	}
	closedir(d);
	if (dirs.n > 0) {
		qsort(dirs.v, dirs.n, sizeof *dirs.v, snap_hist_str_cmp);
		/* Read only: no dir made there since the start is the session's, nor what a tool of the user's wrote in one from before (review 5 F1). */
		if (!ro)
			snap_hist_shadows_remotes(g, gitfd, nc, remotes, since,
			    &dirs, alerts);
		snap_hist_shadows_deep(g, gitfd, nc, start, since, &dirs,
		    alerts);
	}
	strv_free(&dirs);
	snap_hist_shadows_worktrees(g, gitfd, nc, start, since, alerts);
}

/*
 * Whether V, the value of a refs/remotes/X/HEAD the session made, is what
 * git remote set-head writes: a symbolic ref to a remote-tracking branch
 * of X's in NOW (review 5 F4). Anything else is moved out.
 */
static bool
snap_hist_remote_head_ok(const struct strv *now, const char *x,
    const char *v)
{
	size_t n = strlen(x);

	return strncmp(v, "ref: refs/remotes/", 18) == 0 &&
	    strncmp(v + 18, x, n) == 0 && v[18 + n] == '/' &&
	    v[19 + n] != '\0' && strcmp(v + 19 + n, "HEAD") != 0 &&
	    snap_hist_value(now, v + 5) != NULL;
}

/* The dir of refs/X or refs/tags/X (X under BASE), opened through no link, and X's last part into *LEAF; -1 if none. */
static int
snap_hist_shadow_dir(int base, const char *x, const char **leaf)
{
	const char *slash = strrchr(x, '/');
	char *dir;
	int fd;

	*leaf = slash != NULL ? slash + 1 : x;
	if (base == -1)
		return -1;
	dir = slash != NULL ? xstrndup(x, (size_t)(slash - x)) : xstrdup(".");
	fd = path_open_beneath(base, dir, O_RDONLY | O_DIRECTORY, 0);
	free(dir);
	return fd;
}

/*
 * Refs the session made that git finds before a branch or tag of the same
 * short name (refs.c's ref_rev_parse_rules: X in the git dir, refs/X,
 * refs/tags/X, refs/heads/X): 'git reset --hard main' or 'git merge main'
 * took the session's commit for the user's branch, git saying only that
 * the name is ambiguous. One loose in refs/ or refs/tags/, or X in the
 * git dir, goes to the quarantine, told in red (refs/stash is git's own);
 * a packed one, or a branch, is told with how to delete it.
 */
static void
snap_hist_shadows(struct snap_history *h, const struct snap_hgit *g,
    int gitfd, size_t idx, const struct strv *start, const struct strv *now,
    struct strv *alerts)
{
	struct snap_nested nc;
	struct timespec since;
	struct stat st;
	const char *leaf;
	struct strv packed, remotes;
	char *ref, *q, *said, *x, *at;
	int refsfd, tagsfd, remotesfd, dfd;
	size_t i, len, rule;
	bool read_packed;

	/* packed-refs read (up to 64 MiB) and sorted once, when a shadow is first found. */
	strv_init(&packed);
	read_packed = false;
	snap_hist_remotes_of(g, start, &remotes);
	memset(&nc, 0, sizeof nc);
	nc.quarantine = snap_hist_quarantine(g, idx);
	refsfd = path_open_beneath(gitfd, "refs", O_RDONLY | O_DIRECTORY, 0);
	tagsfd = path_open_beneath(gitfd, "refs/tags", O_RDONLY | O_DIRECTORY,
	    0);
	remotesfd = path_open_beneath(gitfd, "refs/remotes", O_RDONLY |
	    O_DIRECTORY, 0);
	/* With the start's packed refs unread, which refs the session made cannot be told; the files in the git dir still can. */
	for (i = 0; !snap_hist_packed_unread(start) && i < now->n; i++) {
		len = strcspn(now->v[i], "\t");
		ref = xstrndup(now->v[i], len);
		x = NULL;
		if (strncmp(ref, "refs/", 5) != 0 ||
		    strcmp(ref, "refs/stash") == 0 ||
		    snap_hist_value(start, ref) != NULL ||
		    (x = snap_hist_short(ref, &rule)) == NULL ||
		    (rule == 5 && snap_hist_remote_head_ok(now, x,
		    now->v[i] + len + 1)) ||
		    (rule != 5 && !snap_hist_shadowed(now, x, rule) &&
		    !snap_hist_shadowed(start, x, rule) &&
		    !snap_hist_remote_name(&remotes, x) &&
		    (rule != 1 || strchr(x, '/') != NULL))) {
			free(x);
			free(ref);
			continue;
		}
		/*
		 * Moved if loose in refs/ or refs/tags/ (each dir on the way
		 * opened through no link), and not also packed; a branch
		 * (shadowing a remote-tracking one) is told: it holds the
		 * session's work.
		 */
		if (!read_packed) {
			(void)snap_hist_packed(gitfd, &packed);
			snap_hist_sort(&packed);
			read_packed = true;
		}
		/* Where the loose ref is under its rule's dir (X/HEAD under refs/remotes). */
		at = rule == 5 ? xprintf("%s/HEAD", x) : xstrdup(x);
		dfd = snap_hist_shadow_dir(rule == 2 ? tagsfd : rule == 1 ?
		    refsfd : rule == 5 ? remotesfd : -1, at, &leaf);
		if (dfd != -1 && fstatat(dfd, leaf, &st,
		    AT_SYMLINK_NOFOLLOW) == 0 && (S_ISREG(st.st_mode) ||
		    S_ISLNK(st.st_mode)) &&
		    snap_hist_value(&packed, ref) == NULL)
			snap_hist_shadow_out(g, &nc, dfd, leaf, ref, x, alerts);
		else {
			said = snap_hist_shadow_said("ref", ref, g->gitdir, x);
			q = snap_nested_quote(ref);
			strv_addf(alerts, "%s: delete it with 'git update-ref "
			    "--no-deref -d %s'", said, q);
			free(q);
			free(said);
		}
		if (dfd != -1)
			close(dfd);
		free(at);
		free(x);
		free(ref);
	}
	if (refsfd != -1)
		close(refsfd);
	if (tagsfd != -1)
		close(tagsfd);
	if (remotesfd != -1)
		close(remotesfd);
	if (snap_history_since(h, &since) != NULL)
		snap_hist_shadows_top(g, gitfd, &nc, start, &remotes, &since,
		    h->ro_top != NULL && strcmp(h->ro_top, g->gitdir) == 0,
		    alerts);
	if (nc.more > 0) {
		q = quote_name(g->gitdir);
		said = snap_hist_more_list(&nc);
		strv_addf(alerts, "and %zu more refs the session made in %s "
		    "that git finds before one of yours were moved to %s%s%s%s",
		    nc.more, q, nc.quarantine, said != NULL ? " (" : "",
		    said != NULL ? said : "", said != NULL ? " lists each "
		    "name and where it went)" : "");
		free(said);
		free(q);
	}
	buf_free(&nc.more_names);
	strv_free(&remotes);
	strv_free(&packed);
	free((char *)nc.quarantine);
}

/* Links under refs/ told one by one; those past it are moved and counted. */
#define SNAP_HIST_LINKS_TOLD 16

/* The link NAME (REL under G's git dir) in DFD, moved to the quarantine NC, told in red (the first SNAP_HIST_LINKS_TOLD; *MORE counts the rest). */
static void
snap_hist_ref_link_out(const struct snap_hgit *g, struct snap_nested *nc,
    int dfd, const char *name, const char *rel, size_t *more,
    struct strv *alerts)
{
	char target[PATH_MAX], *q, *qt, *qg, *kept;
	ssize_t n;
	int saved;

	if (nc->n >= SNAP_HIST_LINKS_TOLD) {
		free(snap_nested_keep(nc, dfd, name, true));
		(*more)++;
		return;
	}
	q = snap_nested_quote(rel);
	n = readlinkat(dfd, name, target, sizeof target - 1);
	target[n > 0 ? n : 0] = '\0';
	qt = snap_nested_quote(target);
	kept = snap_nested_keep(nc, dfd, name, true);
	saved = errno;
	qg = quote_name(g->gitdir);
	if (kept != NULL)
		strv_addf(alerts, "the session made %s/%s a link (to %s): "
		    "git goes through a link there as a dir, to refs nothing "
		    "lists, or reads what it names as a ref, so a name of yours "
		    "could take a commit of the session's; git makes no such "
		    "link; it was moved to %s", qg, q, qt, kept);
	else
		strv_addf(alerts, "the session made %s/%s a link (to %s): "
		    "git goes through a link there as a dir, to refs nothing "
		    "lists, or reads what it names as a ref, and agentmux could "
		    "not move it (%s): remove it yourself", qg, q, qt,
		    strerror(saved));
	free(qg);
	free(kept);
	free(qt);
	free(q);
}

/*
 * Links the session left under REL (in G's git dir, opened as DFD, DEPTH
 * down from refs/), moved out (snap_hist_ref_link_out). SINCE NULL: REL
 * is a dir the session changed, which may have been moved there with a
 * link in it made earlier (a rename changes only the dir's ctime).
 */
static void
snap_hist_refs_links_in(const struct snap_hgit *g, struct snap_nested *nc,
    int dfd, const char *rel, const struct timespec *since, int depth,
    size_t *more, struct strv *alerts)
{
	struct dirent *de;
	struct stat st;
	char *sub;
	DIR *d;
	int fd;

	if (depth > 32 || strcmp(rel, "refs/agentmux/snaps") == 0 ||
	    strcmp(rel, "refs/agentmux/sessions") == 0 ||
	    (fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.' || de->d_type == DT_REG ||
		    fstatat(dirfd(d), de->d_name, &st,
		    AT_SYMLINK_NOFOLLOW) == -1)
			continue;
		sub = xprintf("%s/%s", rel, de->d_name);
		if (S_ISLNK(st.st_mode) && (since == NULL ||
		    snap_hist_changed_since(&st, since)))
			snap_hist_ref_link_out(g, nc, dirfd(d), de->d_name, sub,
			    more, alerts);
		else if (S_ISDIR(st.st_mode) && (fd = openat(dirfd(d),
		    de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC)) != -1) {
			snap_hist_refs_links_in(g, nc, fd, sub, since == NULL ||
			    snap_hist_changed_since(&st, since) ? NULL : since,
			    depth + 1, more, alerts);
			close(fd);
		}
		free(sub);
	}
	closedir(d);
}

/* Links the session left under G's refs/ (GITFD), moved to the quarantine before the refs are read. */
static void
snap_hist_refs_links(struct snap_history *h, const struct snap_hgit *g,
    int gitfd, size_t idx, struct strv *alerts)
{
	struct snap_nested nc;
	struct timespec since;
	size_t more = 0;
	int fd;

	if (snap_history_since(h, &since) == NULL ||
	    (fd = path_open_beneath(gitfd, "refs", O_RDONLY | O_DIRECTORY,
	    0)) == -1)
		return;
	memset(&nc, 0, sizeof nc);
	nc.quarantine = snap_hist_quarantine(g, idx);
	snap_hist_refs_links_in(g, &nc, fd, "refs", &since, 0, &more, alerts);
	if (more > 0)
		strv_addf(alerts, "and %zu more links the session made under "
		    "refs/ in %s were moved to %s", more, g->gitdir,
		    nc.quarantine);
	close(fd);
	free((char *)nc.quarantine);
}

/* Remote-tracking branches the session made or moved (compared with those of the start), in red. */
static void
snap_history_remotes(const struct strv *start, const struct strv *now,
    int64_t session, const char *gitdir, struct strv *alerts)
{
	const char *was, *v;
	char *ref;
	size_t i;

	/* The start's not known (its packed-refs not read): the end says so. */
	if (snap_hist_packed_unread(start))
		return;
	for (i = 0; i < now->n; i++) {
		if (strncmp(now->v[i], "refs/remotes/", 13) != 0)
			continue;
		ref = xstrndup(now->v[i], strcspn(now->v[i], "\t"));
		v = now->v[i] + strlen(ref) + 1;
		was = snap_hist_value(start, ref);
		/* A made refs/remotes/X/HEAD: moved out by snap_hist_shadows (no fetch replaces it). */
		if (was == NULL && strlen(ref) > 18 &&
		    strcmp(ref + strlen(ref) - 5, "/HEAD") == 0)
			;
		else if (was == NULL || strcmp(was, v) != 0)
			snap_history_remote(ref, was, v, session, gitdir, alerts);
		free(ref);
	}
}

/* Refs that existed at the start and are gone, or tags that moved: what undo --refs would put back. */
static void
snap_history_report(const struct strv *start, const struct strv *now,
    int64_t session, const char *gitdir, struct strv *warnings)
{
	const char *v, *was;
	char *ref, *name;
	size_t i;
	/* A ref not read now may be in a packed-refs that was not read. */
	bool unread = snap_hist_packed_unread(now);

	for (i = 0; i < start->n; i++) {
		if (strncmp(start->v[i], "refs/", 5) != 0)
			continue;
		ref = xstrndup(start->v[i], strcspn(start->v[i], "\t"));
		was = start->v[i] + strlen(ref) + 1;
		v = snap_hist_value(now, ref);
		name = snap_history_refname(ref);
		if (v == NULL && unread)
			;
		else if (v == NULL)
			strv_addf(warnings, "the session deleted %s in %s (it was "
			    "%.12s); 'agentmux undo %lld --refs' puts it back",
			    name, gitdir, was, (long long)session);
		else if (strncmp(ref, "refs/tags/", 10) == 0 &&
		    strcmp(v, was) != 0)
			strv_addf(warnings, "the session moved %s in %s (from "
			    "%.12s to %.12s); 'agentmux undo %lld --refs' puts it "
			    "back", name, gitdir, was, v, (long long)session);
		free(name);
		free(ref);
	}
}

/*
 * G's packed-refs not read at the start or now (more than agentmux reads,
 * a link, not a plain file): what that leaves untold, in red if the
 * session is what made it so, else as a warning (the user's own file).
 */
static void
snap_history_packed_tell(const struct snap_hgit *g, int gitfd,
    const struct strv *start, const struct strv *now, int64_t session,
    struct strv *alerts, struct strv *warnings)
{
	bool was = start != NULL && snap_hist_packed_unread(start);
	struct stat st;
	char *why;

	if (!snap_hist_packed_unread(now)) {
		if (was)
			strv_addf(warnings, "%s/packed-refs could not be read "
			    "when the session started: its refs then were not "
			    "kept, so what the session did to them cannot be "
			    "told or undone (loose refs and HEAD can)",
			    g->gitdir);
		return;
	}
	why = snap_hist_packed_why(gitfd);
	if (was && strcmp(snap_hist_value(start, SNAP_HIST_PACKED),
	    snap_hist_value(now, SNAP_HIST_PACKED)) != 0)
		strv_addf(alerts, "%s/packed-refs, which agentmux could not "
		    "read when the session started, was changed or replaced "
		    "in the session and is now %s: what the session wrote or "
		    "deleted there (branches, tags, replace refs) cannot be "
		    "told or undone; compare it with your own copy or a "
		    "clone ('git for-each-ref', 'git replace --list')",
		    g->gitdir, why);
	else if (was)
		strv_addf(warnings, "%s/packed-refs is %s, as it was when the "
		    "session started: its refs were not kept, so what the "
		    "session did to them cannot be told or undone (loose "
		    "refs and HEAD can)", g->gitdir, why);
	else if (fstatat(gitfd, "packed-refs", &st, AT_SYMLINK_NOFOLLOW) ==
	    0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
		strv_addf(alerts, "%s/packed-refs is now %s: the refs the "
		    "session wrote or deleted there cannot be told, and the "
		    "end moves such a file to the session's quarantine, so "
		    "git now sees no packed refs there: your "
		    "packed branches and tags look deleted until 'agentmux "
		    "undo %lld --refs' puts back the refs of the start",
		    g->gitdir, why, (long long)session);
	else
		strv_addf(alerts, "%s/packed-refs is now %s: the refs the "
		    "session wrote or deleted there (branches, tags, replace "
		    "refs, which git reads) cannot be told, and none of "
		    "yours is told as deleted; 'agentmux undo %lld --refs' "
		    "puts back the refs of the start and keeps the file "
		    "aside", g->gitdir, why, (long long)session);
	free(why);
}

/* Reads the refs kept for G at the start. */
int
snap_history_start_refs(const struct snap_hgit *g, struct strv *refs)
{
	char *path = xprintf("%s/refs", g->base), *line, *save = NULL;
	struct buf b;

	strv_init(refs);
	buf_init(&b);
	if (buf_read_file(&b, path) == -1) {
		buf_free(&b);
		free(path);
		return -1;
	}
	for (line = strtok_r(b.data, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save))
		strv_add(refs, line);
	snap_hist_sort(refs);
	buf_free(&b);
	free(path);
	return 0;
}

/*
 * rm -rf of NAME in DFD, what the jail left: dirs are made ours to read
 * first (the kernel leaves an overlay's work/work mode 000, and the jail
 * may have done the same to any), links are removed, never followed.
 */
static void
snap_history_rm_at(int dfd, const char *name, int depth)
{
	struct dirent *de;
	struct stat st;
	DIR *d;
	int fd;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == -1)
		return;
	if (!S_ISDIR(st.st_mode) || depth > 64) {
		unlinkat(dfd, name, 0);
		return;
	}
	/* Through a descriptor of the dir: one swapped for a link is not followed. */
	if ((fd = openat(dfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) != -1) {
		(void)snap_modes_fchmod(fd, 0700);
		close(fd);
	}
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd != -1 && (d = fdopendir(fd)) != NULL) {
		while ((de = readdir(d)) != NULL) {
			if (strcmp(de->d_name, ".") != 0 &&
			    strcmp(de->d_name, "..") != 0)
				snap_history_rm_at(dirfd(d), de->d_name,
				    depth + 1);
		}
		closedir(d);
	} else if (fd != -1)
		close(fd);
	unlinkat(dfd, name, AT_REMOVEDIR);
}

static void
snap_history_remove(const char *path)
{
	char *dir = xstrndup(path, (size_t)(strrchr(path, '/') - path));
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd != -1) {
		snap_history_rm_at(fd, strrchr(path, '/') + 1, 0);
		close(fd);
	}
	free(dir);
}

/* Where what is taken out of git dir I (kept in G) goes: the session's quarantine, history-I. */
static char *
snap_hist_quarantine(const struct snap_hgit *g, size_t i)
{
	/* BASE is $DATA/sessions/<id>/history/<i>. */
	char *sess = xstrndup(g->base, (size_t)(strrchr(g->base, '/') -
	    g->base)), *q;

	*strrchr(sess, '/') = '\0';
	q = xprintf("%s/quarantine/history-%zu", sess, i);
	free(sess);
	return q;
}

/* What ST is (not a dir), in words. */
static const char *
snap_hist_what(const struct stat *st)
{
	if (S_ISLNK(st->st_mode))
		return "a link";
	return S_ISREG(st->st_mode) ? "a file" : "a special file";
}

/* PATH (NAME in PFD) of G, not a dir, moved aside into NC's quarantine; told in red. */
static void
snap_hist_log_aside(const struct snap_hgit *g, int pfd, const char *name,
    const char *path, const struct stat *st, struct snap_nested *nc,
    struct strv *alerts)
{
	char *kept;

	if ((kept = snap_nested_keep(nc, pfd, name, true)) != NULL)
		strv_addf(alerts, "the session replaced the reflogs of %s "
		    "(%s/%s) with %s: it was moved to %s, and the reflogs "
		    "kept at the start are put back", g->gitdir, g->gitdir,
		    path, snap_hist_what(st), kept);
	else
		strv_addf(alerts, "the session replaced the reflogs of %s "
		    "(%s/%s) with %s, which could not be moved aside (%s): "
		    "your reflogs are kept in %s/logs; move %s/%s away and "
		    "copy them back", g->gitdir, g->gitdir, path,
		    snap_hist_what(st), strerror(errno), g->base, g->gitdir,
		    path);
	free(kept);
}

/*
 * The dir REL of the reflogs kept at the start (under SAVEDFD, "" their
 * top) as the session left it in G's logs: if something else than a dir
 * is there (a file: git writes no reflog below again; a link: the mending
 * would go through it), it is moved aside; else each of its dirs in turn.
 * Nothing is followed: each dir is opened link-free from the git dir.
 */
static void
snap_hist_logs_dir(const struct snap_hgit *g, int gitfd, int savedfd,
    const char *rel, int depth, struct snap_nested *nc, struct strv *alerts)
{
	char *path = rel[0] == '\0' ? xstrdup("logs") : xprintf("logs/%s", rel);
	char *slash = strrchr(path, '/'), *name = path, *sub;
	struct dirent *de;
	struct stat st;
	int pfd, fd;
	DIR *d;

	if (slash == NULL)
		pfd = fcntl(gitfd, F_DUPFD_CLOEXEC, 0);
	else {
		*slash = '\0';
		pfd = path_open_beneath(gitfd, path, O_PATH | O_DIRECTORY, 0);
		*slash = '/';
		name = slash + 1;
	}
	if (depth > 32 || pfd == -1 ||
	    fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == -1)
		goto out;
	if (!S_ISDIR(st.st_mode)) {
		snap_hist_log_aside(g, pfd, name, path, &st, nc, alerts);
		goto out;
	}
	fd = rel[0] == '\0' ? openat(savedfd, ".", O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC) : path_open_beneath(savedfd, rel, O_RDONLY |
	    O_DIRECTORY, 0);
	if (fd == -1 || (d = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		goto out;
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.' || snap_hist_type(d, de) != DT_DIR)
			continue;
		sub = rel[0] == '\0' ? xstrdup(de->d_name) : xprintf("%s/%s",
		    rel, de->d_name);
		snap_hist_logs_dir(g, gitfd, savedfd, sub, depth + 1, nc,
		    alerts);
		free(sub);
	}
	closedir(d);
out:
	if (pfd != -1)
		close(pfd);
	free(path);
}

/*
 * G's logs and every dir below them that the session replaced with
 * something else than a dir, moved unfollowed into the session's
 * quarantine (QUARANTINE/history-I), so that the reflogs kept at the
 * start can be put back; told in red.
 */
static void
snap_hist_logs_aside(const struct snap_hgit *g, int gitfd, size_t i,
    struct strv *alerts)
{
	struct snap_nested nc;
	char *saved = xprintf("%s/logs", g->base);
	int savedfd;

	memset(&nc, 0, sizeof nc);
	nc.quarantine = snap_hist_quarantine(g, i);
	savedfd = open(saved, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	snap_hist_logs_dir(g, gitfd, savedfd, "", 0, &nc, alerts);
	if (savedfd != -1)
		close(savedfd);
	free((char *)nc.quarantine);
	free(saved);
}

/* Adds to DIRS each dir leading to REF ("refs/heads/x": refs, refs/heads), once or more (snap_hist_ref_dirs_sort). */
static void
snap_hist_ref_dirs(struct strv *dirs, const char *ref)
{
	const char *s;

	for (s = strchr(ref, '/'); s != NULL; s = strchr(s + 1, '/'))
		strv_take(dirs, xstrndup(ref, (size_t)(s - ref)));
}

/* Dir REL of G's refs made a dir again: what is there moved aside (told in red), then an empty one made. */
static void
snap_hist_ref_dir(const struct snap_hgit *g, int gitfd, const char *rel,
    struct snap_nested *nc, struct strv *alerts)
{
	const char *slash = strrchr(rel, '/'), *name = slash != NULL ?
	    slash + 1 : rel;
	char *parent, *kept;
	struct stat st;
	int pfd;

	parent = slash != NULL ? xstrndup(rel, (size_t)(slash - rel)) : NULL;
	pfd = parent == NULL ? fcntl(gitfd, F_DUPFD_CLOEXEC, 0) :
	    path_open_beneath(gitfd, parent, O_PATH | O_DIRECTORY, 0);
	free(parent);
	if (pfd == -1)
		return;
	if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    !S_ISDIR(st.st_mode)) {
		if ((kept = snap_nested_keep(nc, pfd, name, true)) != NULL)
			strv_addf(alerts, "the session replaced %s/%s with %s, "
			    "which hides the refs below it from your git: it "
			    "was moved to %s, and the refs it held are "
			    "reported below ('agentmux undo --refs' puts them "
			    "back)", g->gitdir, rel, snap_hist_what(&st), kept);
		else
			strv_addf(alerts, "the session replaced %s/%s with "
			    "%s, which hides the refs below it from your git, "
			    "and it could not be moved aside (%s): delete it, "
			    "then run 'agentmux undo --refs'", g->gitdir, rel,
			    snap_hist_what(&st), strerror(errno));
		free(kept);
	}
	/* Gone (or just moved aside): git needs refs, and undo the rest. */
	if (mkdirat(pfd, name, 0755) == -1 && errno != EEXIST)
		log_debug("%s/%s: %s", g->gitdir, rel, strerror(errno));
	close(pfd);
}

/*
 * The dirs of G's refs as git needs them: refs, refs/heads, refs/tags
 * and each dir of a ref there at the start. One the session replaced
 * with a file or link (a file at refs/heads hides every branch: the
 * user's git says "No commits yet", and a gc then prunes their
 * history) is moved unfollowed to the session's quarantine and made
 * again, empty, so that the refs it held count as deleted: reported,
 * kept, and put back by 'agentmux undo --refs'. Nothing is followed.
 */
static void
snap_hist_refs_dirs(const struct snap_hgit *g, int gitfd, size_t i,
    const struct strv *start, struct strv *alerts)
{
	struct snap_nested nc;
	struct strv dirs;
	size_t k;

	strv_init(&dirs);
	snap_hist_ref_dirs(&dirs, "refs/heads/");
	snap_hist_ref_dirs(&dirs, "refs/tags/");
	for (k = 0; k < start->n; k++) {
		if (strncmp(start->v[k], "refs/", 5) == 0)
			snap_hist_ref_dirs(&dirs, start->v[k]);
	}
	snap_hist_ref_dirs_sort(&dirs);
	memset(&nc, 0, sizeof nc);
	nc.quarantine = snap_hist_quarantine(g, i);
	/* Apart from what the logs and shallow file keep there. */
	nc.n = 200;
	for (k = 0; k < dirs.n; k++)
		snap_hist_ref_dir(g, gitfd, dirs.v[k], &nc, alerts);
	free((char *)nc.quarantine);
	strv_free(&dirs);
}

/*
 * G's shallow file, if the session made one or changed it: the commits it
 * names hide the history behind them from the user's git, whose next gc
 * prunes that history. It is moved unfollowed to the session's quarantine
 * and the one of the start (if any) put back; told in red.
 */
static void
snap_hist_shallow(const struct snap_hgit *g, int gitfd, size_t i,
    struct strv *alerts)
{
	struct snap_nested nc;
	struct buf was, now;
	struct stat st;
	char *path = xprintf("%s/shallow", g->base), *kept;
	bool had;

	buf_init(&was);
	buf_init(&now);
	had = buf_read_file(&was, path) == 0;
	if (fstatat(gitfd, "shallow", &st, AT_SYMLINK_NOFOLLOW) == -1 ||
	    (had && snap_hist_read(gitfd, "shallow", &now,
	    SNAP_HIST_LOG_MAX) == 0 && now.len == was.len && (now.len == 0 ||
	    memcmp(now.data, was.data, now.len) == 0)))
		goto out;
	memset(&nc, 0, sizeof nc);
	nc.quarantine = snap_hist_quarantine(g, i);
	/* Apart from what snap_hist_logs_aside keeps there. */
	nc.n = 100;
	if ((kept = snap_nested_keep(&nc, gitfd, "shallow", true)) == NULL)
		strv_addf(alerts, "the session %s %s/shallow, which hides the "
		    "history behind the commits it names from your git (and "
		    "your next git gc prunes it), and it could not be moved "
		    "aside (%s): delete it%s", had ? "changed" : "made",
		    g->gitdir, strerror(errno), had ? " and copy back the one "
		    "kept at the start" : "");
	else if (had && snap_hist_write(gitfd, "shallow", &was, 0644) == -1)
		strv_addf(alerts, "the session changed %s/shallow, which hides "
		    "the history behind the commits it names; it was moved to "
		    "%s, but the one of the start could not be put back (%s): "
		    "copy it from %s", g->gitdir, kept, strerror(errno), path);
	else
		strv_addf(alerts, "the session %s %s/shallow, which hides the "
		    "history behind the commits it names from your git (and "
		    "your next git gc prunes it): it was moved to %s%s",
		    had ? "changed" : "made", g->gitdir, kept, had ? ", and the "
		    "one of the start put back" : "");
	free(kept);
	free((char *)nc.quarantine);
out:
	buf_free(&now);
	buf_free(&was);
	free(path);
}

/*
 * G's .git/agentmux (agentmux makes nothing there), whatever it is: git
 * takes a file under it (agentmux/ID/NAME) before a worktree session's
 * branch named short, so git log or git merge agentmux/ID/NAME would take
 * what it names. First renamed to a name of agentmux's beside it (in the
 * same dir, so whatever its mode or size: git no longer takes it), then
 * moved into the quarantine; told in red either way. One that cannot be
 * renamed is told by snap_history_agentmux, with how to remove it.
 */
static void
snap_hist_agentmux_dir(const struct snap_hgit *g, int gitfd, size_t i,
    struct strv *alerts)
{
	struct snap_nested nc;
	struct stat st;
	uint32_t r[2];
	char aside[64], *kept, *part = NULL, *q, *qp;
	int err;

	if (fstatat(gitfd, "agentmux", &st, AT_SYMLINK_NOFOLLOW) == -1)
		return;
	util_random(r, sizeof r);
	snprintf(aside, sizeof aside, "agentmux-quarantine.%08x%08x", r[0],
	    r[1]);
	if (renameat2(gitfd, "agentmux", gitfd, aside, RENAME_NOREPLACE) == -1)
		return;
	memset(&nc, 0, sizeof nc);
	nc.quarantine = snap_hist_quarantine(g, i);
	q = quote_name(g->gitdir);
	kept = snap_nested_keep_tree(&nc, gitfd, aside, &part);
	err = errno;
	if (kept != NULL)
		strv_addf(alerts, "%s/agentmux was there (made by this session "
		    "or an earlier one): git takes a file under it, such as "
		    "agentmux/ID/NAME, before a worktree session's branch named "
		    "short (git log or git merge agentmux/ID/NAME would take "
		    "what it names); agentmux makes nothing there: it was moved "
		    "to %s", q, kept);
	else {
		qp = part != NULL ? quote_name(part) : NULL;
		strv_addf(alerts, "%s/agentmux was there (made by this session "
		    "or an earlier one): git takes a file under it, such as "
		    "agentmux/ID/NAME, before a worktree session's branch named "
		    "short; agentmux makes nothing there. It was renamed to %s/%s, "
		    "where git no longer takes it, but could not be moved into "
		    "the session's quarantine (%s)%s%s: look at it there, then "
		    "remove it ('rm -rf %s/%s')", q, q, aside, err == E2BIG ?
		    "it is larger than agentmux copies: 256 MiB, 10,000 entries "
		    "or 64 levels" : strerror(err), qp != NULL ? "; what was "
		    "copied before it stopped is in " : "", qp != NULL ? qp : "",
		    q, aside);
		free(qp);
	}
	free(q);
	free(part);
	free(kept);
	free((char *)nc.quarantine);
}

/* The most stash entries told one by one; the rest are counted. */
#define SNAP_HIST_STASH_TOLD 8

/* A stash entry (a reflog line, "old new ident time zone\tmessage") told in red. */
static void
snap_hist_stash_tell(const struct snap_hgit *g, const char *line,
    int64_t session, struct strv *alerts)
{
	const char *new = snap_hist_entry(line), *tab = strchr(line, '\t');
	char *raw = xstrndup(new, strcspn(new, " \t")), *id = quote_name(raw);
	char *msg = quote_name(tab != NULL ? tab + 1 : "");

	strv_addf(alerts, "the session pushed a stash entry in %s: %s (%s); "
	    "your next 'git stash pop' or 'git stash apply' would apply its "
	    "changes; 'agentmux undo %lld --refs' takes it out of the stash",
	    g->gitdir, id, msg, (long long)session);
	free(msg);
	free(id);
	free(raw);
}

/*
 * The stash entries in G's stash now that it did not hold at the start
 * (its reflog, logs/refs/stash, is the list git stash pops from), each
 * told in red with its id and message.
 */
static void
snap_hist_stash(const struct snap_hgit *g, int gitfd, int64_t session,
    struct strv *alerts)
{
	struct buf saved, cur;
	struct strv added;
	char *path = xprintf("%s/logs/refs/stash", g->base);
	size_t i;

	buf_init(&saved);
	buf_init(&cur);
	strv_init(&added);
	if (buf_read_file(&saved, path) == -1)
		buf_reset(&saved);
	if (snap_hist_read(gitfd, "logs/refs/stash", &cur,
	    SNAP_HIST_LOG_MAX) == 0)
		snap_hist_log_added(&saved, &cur, &added);
	for (i = 0; i < added.n && i < SNAP_HIST_STASH_TOLD; i++)
		snap_hist_stash_tell(g, added.v[i], session, alerts);
	if (added.n > SNAP_HIST_STASH_TOLD)
		strv_addf(alerts, "the session pushed %zu more stash entries "
		    "in %s ('git stash list' shows them)", added.n -
		    SNAP_HIST_STASH_TOLD, g->gitdir);
	strv_free(&added);
	free(path);
	buf_free(&cur);
	buf_free(&saved);
}

/* The most lines of packed-refs git cannot parse told one by one. */
#define SNAP_HIST_PACKED_TOLD 4

/*
 * G's packed-refs as the session left it kept in G's history dir (as
 * packed-refs-as-left), then FIXED written in its place as git does; -1
 * with *CAUSE if either cannot be done (the file is then left as it is).
 */
static int
snap_hist_packed_mend_write(const struct snap_hgit *g, int gitfd,
    const struct buf *fixed, char **kept, char **cause)
{
	struct buf left;
	int rc;

	buf_init(&left);
	*kept = xprintf("%s/packed-refs-as-left", g->base);
	if (snap_hist_read(gitfd, "packed-refs", &left,
	    snap_hist_packed_max) == -1) {
		*cause = xprintf("cannot read it again: %s", strerror(errno));
		buf_free(&left);
		return -1;
	}
	rc = util_write_file_atomic(*kept, left.data != NULL ? left.data : "",
	    left.len, 0600, cause);
	buf_free(&left);
	if (rc == 0 && snap_hist_write_text(gitfd, "packed-refs", fixed) ==
	    -1) {
		*cause = xprintf("cannot write it: %s%s", strerror(errno),
		    errno == EEXIST ? " (a .lock file is there: is git "
		    "running?)" : "");
		rc = -1;
	}
	return rc;
}

/*
 * G's packed-refs claimed its refs sorted when UNSORTED were out of order
 * (git looks a ref up by halving the file: it did not find some of them,
 * and took a branch it could not find for none): told in red, with KEPT
 * (quoted) where the file as left is if the claim was taken out, else
 * CAUSE.
 */
static void
snap_hist_packed_tell_unsorted(const struct snap_hgit *g,
    const struct strv *unsorted, const char *kept, const char *cause,
    int64_t session, struct strv *alerts)
{
	char *q = quote_name(unsorted->v[0]);

	if (kept != NULL)
		strv_addf(alerts, "%s/packed-refs said its refs were sorted, "
		    "and %zu were not, as %s (git looks a ref up there by "
		    "halving the file, so it did not find refs listed out of "
		    "order: a branch, a tag, your HEAD's branch looked gone); "
		    "agentmux took that claim out of its first line, so git "
		    "sorts them itself; the file as the session left it is "
		    "kept in %s", g->gitdir, unsorted->n, q, kept);
	else
		strv_addf(alerts, "%s/packed-refs says its refs are sorted, "
		    "and %zu are not, as %s: git looks a ref up there by "
		    "halving the file, so it does not find refs listed out of "
		    "order, and agentmux could not take that claim out (%s); "
		    "'agentmux undo %lld --refs' takes it out", g->gitdir,
		    unsorted->n, q, cause, (long long)session);
	free(q);
}

/*
 * Refs named outside refs/ in G's packed-refs that the start had not
 * (OUTSIDE, their lines): taken out (KEPT, the file as left, quoted) or
 * not (CAUSE); told in red.
 */
static void
snap_hist_packed_tell_outside(const struct snap_hgit *g,
    const struct strv *outside, const char *kept, const char *cause,
    int64_t session, struct strv *alerts)
{
	char *names = snap_quote_names(outside, 16);

	if (kept != NULL)
		strv_addf(alerts, "%s/packed-refs held refs of one level, "
		    "outside refs/, that the session added (%s): git finds one "
		    "named \"main\" before your branch refs/heads/main, and "
		    "took its id for yours; agentmux took them out (the file as "
		    "the session left it is kept in %s)", g->gitdir, names,
		    kept);
	else
		strv_addf(alerts, "%s/packed-refs holds refs of one level, "
		    "outside refs/, that the session added (%s): git finds one "
		    "named \"main\" before your branch refs/heads/main, and "
		    "takes its id for yours; agentmux could not take them out "
		    "(%s): 'agentmux undo %lld --refs' does", g->gitdir, names,
		    cause, (long long)session);
	free(names);
}

/*
 * Lines of G's packed-refs git cannot parse (it then fails at every ref
 * command there, and the end's keeping of the objects of moved refs with
 * it): taken out as 'undo --refs' does (snap_hist_packed_check; where a
 * ref is listed twice, the line git reads stays: the end changes nothing
 * git reads, and a worktree session's start is not the user's), the file
 * as the session left it kept in G's history dir first; told in red,
 * quoted. A ref whose line goes is then told as deleted, and 'undo
 * --refs' puts it back.
 */
static void
snap_hist_packed_mend(const struct snap_hgit *g, int gitfd, int64_t session,
    struct strv *alerts)
{
	struct strv bad, outside, unsorted, start;
	struct buf fixed;
	size_t i;
	char *q, *kept = NULL, *cause = NULL, *qk;
	int rc;

	strv_init(&bad);
	strv_init(&outside);
	strv_init(&unsorted);
	/* A name outside refs/ of the start's is the user's own (none kept: all of them stay). */
	if (snap_history_start_refs(g, &start) == -1)
		rc = snap_hist_packed_check(gitfd, NULL, NULL, &bad, NULL,
		    &unsorted, &fixed);
	else
		rc = snap_hist_packed_check(gitfd, NULL, &start, &bad, &outside,
		    &unsorted, &fixed);
	strv_free(&start);
	if (rc <= 0 || (bad.n == 0 && outside.n == 0 && unsorted.n == 0)) {
		buf_free(&fixed);
		strv_free(&bad);
		strv_free(&outside);
		strv_free(&unsorted);
		return;
	}
	rc = snap_hist_packed_mend_write(g, gitfd, &fixed, &kept, &cause);
	qk = quote_name(kept);
	if (unsorted.n > 0)
		snap_hist_packed_tell_unsorted(g, &unsorted, rc == 0 ? qk :
		    NULL, cause, session, alerts);
	for (i = 0; i < bad.n && i < SNAP_HIST_PACKED_TOLD; i++) {
		q = quote_name(bad.v[i]);
		if (rc == 0)
			strv_addf(alerts, "%s/packed-refs held a line git "
			    "cannot parse, %s (git fails at every ref command "
			    "with it): agentmux took it out, as 'agentmux undo "
			    "%lld --refs' does; the file as the session left it "
			    "is kept in %s, and a ref the line named is told as "
			    "deleted ('agentmux undo %lld --refs' puts it back)",
			    g->gitdir, q, (long long)session, qk,
			    (long long)session);
		else
			strv_addf(alerts, "%s/packed-refs holds a line git "
			    "cannot parse, %s: git fails at every ref command "
			    "there until it is taken out, and agentmux could "
			    "not take it out (%s); 'agentmux undo %lld --refs' "
			    "takes it out (no ref of yours is lost)", g->gitdir,
			    q, cause, (long long)session);
		free(q);
	}
	if (bad.n > SNAP_HIST_PACKED_TOLD)
		strv_addf(alerts, "%s/packed-refs %s %zu more lines git cannot "
		    "parse", g->gitdir, rc == 0 ? "held" : "holds", bad.n -
		    SNAP_HIST_PACKED_TOLD);
	if (outside.n > 0)
		snap_hist_packed_tell_outside(g, &outside, rc == 0 ? qk : NULL,
		    cause, session, alerts);
	free(qk);
	free(kept);
	free(cause);
	buf_free(&fixed);
	strv_free(&bad);
	strv_free(&outside);
	strv_free(&unsorted);
}

/*
 * G's git dir is not the one of the start (CAUSE): nothing is done in it,
 * told in red with what is kept and what to do.
 */
static void
snap_hist_not_start(const struct snap_hgit *g, const char *cause,
    int64_t session, struct strv *alerts)
{
	char *q = snap_nested_quote(g->gitdir);

	strv_addf(alerts, "the git dir %s was left as it is: %s. Its refs, "
	    "HEAD, reflogs and config as at the start, and the objects the "
	    "session wrote, are kept in %s; put the repository back at that "
	    "path (not a link), then run 'agentmux undo %lld --refs'", q,
	    cause, g->base, (long long)session);
	free(q);
}

/* After the session: the last objects, reflog entries put back, ref changes reported. */
/*
 * When H's session started, into *SINCE (its list of git dirs was written
 * then), less 20 ms for the coarse clock file times come from; NULL if it
 * is not known (every index is then checked).
 */
static const struct timespec *
snap_history_since(const struct snap_history *h, struct timespec *since)
{
	char *path = xprintf("%s/gitdirs", h->dir);
	struct stat st;
	int rc = lstat(path, &st);

	free(path);
	if (rc == -1)
		return NULL;
	*since = st.st_mtim;
	if (since->tv_nsec >= 20000000)
		since->tv_nsec -= 20000000;
	else {
		since->tv_sec--;
		since->tv_nsec += 1000000000 - 20000000;
	}
	return since;
}

/*
 * The length in bytes of the object ids of a repository whose config is
 * the file CONFIG (agentmux's copy, or one the jail cannot write), as git
 * reads its extensions.objectFormat: by git config itself, no include
 * followed (review 9: "name = x\\" then a line "[extensions]" is one
 * value to git, and agentmux's own reading took the next line for a key).
 */
static size_t
snap_hist_oidlen_git(const char *config)
{
	struct buf in;
	size_t len = 20;

	buf_init(&in);
	if (buf_read_file(&in, config) == 0)
		len = snap_hist_oidlen_text(in.data != NULL ? in.data : "",
		    in.len);
	buf_free(&in);
	return len;
}

size_t
snap_hist_oidlen_text(const char *text, size_t tlen)
{
	char *value = snap_git_config_get(text, tlen,
	    "extensions.objectformat");
	size_t len = value != NULL && strcasecmp(value, "sha256") == 0 ? 32 : 20;

	free(value);
	return len;
}

/* G's index checked as its git's checkout would write it (snap_hist_index_refuse), kept in G's history dir if refused. */
static void
snap_hist_index_end(const struct snap_history *h, const struct snap_hgit *g,
    int gitfd, struct strv *alerts)
{
	struct timespec since;
	char *config = xprintf("%s/config", g->base);

	/* The id length of the start's config, as git reads it (review 9 F1: the jail writes a nested one in place). */
	snap_hist_index_refuse(gitfd, g->gitdir, snap_hist_oidlen_git(config),
	    snap_history_since(h, &since), g->base, "index-as-left", alerts);
	free(config);
}

static void
snap_history_end_one(struct snap_history *h, struct snap_hgit *g, size_t idx,
    int64_t session, struct strv *alerts, struct strv *warnings)
{
	struct strv start, now, repaired, failed;
	const struct strv *problems;
	char *logs, *cause;
	int64_t n, refused, too_big;
	int gitfd, logsfd;
	bool had_start;
	size_t i;

	n = snap_import_count(g->imp, &refused, &too_big);
	problems = snap_import_problems(g->imp);
	for (i = 0; i < problems->n; i++)
		strv_add(warnings, problems->v[i]);
	if (refused > 0)
		strv_addf(alerts, "%lld file%s in the session's objects of %s "
		    "were not what their names said and were not brought "
		    "back", (long long)refused, refused == 1 ? "" : "s",
		    g->gitdir);
	if (too_big > 0)
		strv_addf(alerts, "%lld object%s the session wrote into %s %s "
		    "too big to check (over 4 GiB each, or 32 GiB in all) and "
		    "%s not brought back", (long long)too_big, too_big == 1 ?
		    "" : "s", g->gitdir, too_big == 1 ? "was" : "were",
		    too_big == 1 ? "was" : "were");
	log_debug("%s: %lld new objects brought back", g->gitdir,
	    (long long)n);
	if ((gitfd = snap_gitdir_open(g->gitdir, &g->id, NULL, &cause)) == -2) {
		snap_hist_not_start(g, cause, session, alerts);
		free(cause);
		return;
	}
	if (gitfd == -1 || faccessat(gitfd, "HEAD", F_OK,
	    AT_SYMLINK_NOFOLLOW) == -1)
		strv_addf(alerts, "the session deleted the git repository %s "
		    "(its HEAD%s): its objects, and its refs, HEAD, reflogs "
		    "and config as they were at the start, are kept; 'agentmux "
		    "undo %lld --refs' puts them back", g->gitdir, gitfd == -1 ?
		    " and the rest" : ", refs or config", (long long)session);
	if (gitfd == -1)
		return;
	had_start = snap_history_start_refs(g, &start) == 0;
	(void)snap_gitmodes_check(g, gitfd, false, alerts);
	snap_hist_refs_dirs(g, gitfd, idx, &start, alerts);
	/* Before the refs are read: git keeps the objects of moved refs after. */
	snap_hist_packed_mend(g, gitfd, session, alerts);
	snap_hist_refs_links(h, g, gitfd, idx, alerts);
	snap_hist_refs(gitfd, &now);
	snap_history_packed_tell(g, gitfd, had_start ? &start : NULL, &now,
	    session, alerts, warnings);
	strv_init(&repaired);
	strv_init(&failed);
	snap_hist_logs_aside(g, gitfd, idx, alerts);
	snap_hist_shallow(g, gitfd, idx, alerts);
	snap_hist_agentmux_dir(g, gitfd, idx, alerts);
	snap_hist_index_end(h, g, gitfd, alerts);
	logs = xprintf("%s/logs", g->base);
	if ((logsfd = open(logs, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) != -1) {
		snap_hist_repair(gitfd, logsfd, "", 0, &now, &repaired,
		    &failed);
		close(logsfd);
	}
	for (i = 0; i < repaired.n; i++)
		strv_addf(warnings, "reflog entries the session took out of "
		    "%s/logs/%s were put back", g->gitdir, repaired.v[i]);
	for (i = 0; i < failed.n; i++)
		strv_addf(alerts, "reflog entries the session took out of "
		    "%s/logs/%s; they are kept in %s/logs", g->gitdir,
		    failed.v[i], g->base);
	snap_hist_stash(g, gitfd, session, alerts);
	if (had_start) {
		snap_history_report(&start, &now, session, g->gitdir, warnings);
		snap_history_remotes(&start, &now, session, g->gitdir, alerts);
		snap_hist_shadows(h, g, gitfd, idx, &start, &now, alerts);
		snap_history_agentmux(gitfd, &start, &now, session, g->gitdir,
		    alerts);
		snap_hist_keep_add(h, g, &start, &now);
	}
	strv_free(&start);
	strv_free(&repaired);
	strv_free(&failed);
	strv_free(&now);
	free(logs);
	close(gitfd);
	if (!snap_import_failed(g->imp)) {
		/* Done, even if what is left cannot all be removed. */
		logs = xprintf("%s/done", g->base);
		util_write_file_atomic(logs, "", 0, 0600, NULL);
		free(logs);
		snap_history_remove(g->upper);
		snap_history_remove(g->work);
	}
}

/* Every repository's objects kept: the caller is told (and may free H). */
static void
snap_history_end_told(struct snap_history *h)
{
	struct strv alerts, warnings;
	char *sess, *m;

	if (!snap_history_pending(h)) {
		sess = xstrndup(h->dir, (size_t)(strrchr(h->dir, '/') -
		    h->dir));
		m = snap_history_marker(sess);
		unlink(m);
		free(m);
		free(sess);
	}
	alerts = h->end_alerts;
	warnings = h->end_warnings;
	strv_init(&h->end_alerts);
	strv_init(&h->end_warnings);
	snap_hist_keep_free(h);
	/* Last: the caller may free H. */
	h->end_done(h->end_arg, &alerts, &warnings);
	strv_free(&alerts);
	strv_free(&warnings);
}

/*
 * Each git dir's refs, reflogs, index and shadows looked at and mended:
 * up to 256 MiB read and a git run per git dir, so on a helper thread
 * (the loop leaves H alone meanwhile). The clone gate is let go between
 * git dirs, so a jail's start waits for one at most.
 */
static void
snap_history_end_work(void *arg)
{
	struct snap_history *h = arg;
	size_t i;

	/* A worktree session's own git dir first: its index is read too. */
	clone_gate_enter();
	snap_history_worktree_end(h, h->end_session, &h->end_alerts);
	clone_gate_leave();
	for (i = 0; i < h->n; i++) {
		clone_gate_enter();
		snap_history_end_one(h, &h->v[i], i, h->end_session,
		    &h->end_alerts, &h->end_warnings);
		clone_gate_leave();
	}
}

/* Back on the loop: what to keep, one after another. */
static void
snap_history_end_worked(void *arg)
{
	struct snap_history *h = arg;
	void (*looked)(void *) = h->end_looked;

	h->end_job = NULL;
	h->end_looked = NULL;
	if (looked != NULL)
		looked(h->end_looked_arg);
	h->keep_at = 0;
	snap_hist_keep_next(h);
}

void
snap_history_end_looked(struct snap_history *h, void (*looked)(void *),
    void *arg)
{
	h->end_looked = looked;
	h->end_looked_arg = arg;
}

void
snap_history_end_wait(struct snap_history *h)
{
	if (h->end_job == NULL)
		return;
	thread_job_free(h->end_job);
	snap_history_end_worked(h);
}

/* Every import is finished: the refs and reflogs, then what to keep. */
static void
snap_history_end_last(struct snap_history *h)
{
	char *cause = NULL;
	size_t i;

	h->end_job = thread_job_start(h->end_base, snap_history_end_work, h,
	    snap_history_end_worked, h, &cause);
	if (h->end_job != NULL)
		return;
	log_warnx("the history's end runs on the loop: %s", cause);
	free(cause);
	snap_history_worktree_end(h, h->end_session, &h->end_alerts);
	for (i = 0; i < h->n; i++)
		snap_history_end_one(h, &h->v[i], i, h->end_session,
		    &h->end_alerts, &h->end_warnings);
	snap_history_end_worked(h);
}

static void
snap_history_import_done(void *arg)
{
	struct snap_history *h = arg;

	if (--h->ending == 0)
		snap_history_end_last(h);
}

/*
 * What G's HEAD is if git cannot take it for one, in words (a link
 * agentmux would not follow counts: the scan for planted links takes it
 * away), or NULL if it is a HEAD git takes. Caller frees.
 */
static char *
snap_hist_head_bad(int gitfd)
{
	char target[PATH_MAX], *v, *q, *what = NULL;
	struct stat st;
	ssize_t n;

	if (fstatat(gitfd, "HEAD", &st, AT_SYMLINK_NOFOLLOW) == -1)
		return errno == ENOENT ? xstrdup("deleted") :
		    xprintf("made unreadable (%s)", strerror(errno));
	if (S_ISLNK(st.st_mode)) {
		n = readlinkat(gitfd, "HEAD", target, sizeof target - 1);
		target[n > 0 ? n : 0] = '\0';
		q = quote_name(target);
		what = xprintf("made a link (to %s)", q);
		free(q);
		return what;
	}
	if (!S_ISREG(st.st_mode))
		return xstrdup(S_ISDIR(st.st_mode) ? "made a dir" :
		    "made a FIFO, socket or device");
	v = snap_hist_loose_value(gitfd, "HEAD");
	/* git takes a dir for a repository if HEAD names a ref under refs/ or an id. */
	if (v == NULL || !snap_hist_value_ok(v) || (strncmp(v, "ref: ", 5) ==
	    0 && strncmp(v + 5, "refs/", 5) != 0))
		what = xstrdup("filled with what git does not take for a HEAD");
	free(v);
	return what;
}

/* The largest index the end reads to check (git's own, of a million files, is about 100 MiB; what the check costs is bounded with it). */
#define SNAP_HIST_INDEX_MAX (256LL * 1024 * 1024)

/*
 * GITFD's index, refused (REASON: its bad entries quoted, or why it
 * cannot be checked), kept as KEEPDIR's KEEP and taken away if it is
 * still the file ST that was read; told in red.
 */
static void
snap_hist_index_away(int gitfd, const char *said, const struct stat *st,
    const struct buf *b, const char *keepdir, const char *keep,
    const char *reason, struct strv *alerts)
{
	struct stat now;
	char *q = quote_name(said), *kept = xprintf("%s/%s", keepdir, keep);
	char *kq = quote_name(kept), *why = NULL;
	int keepfd;

	if ((keepfd = open(keepdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1 || snap_hist_write(keepfd, keep, b, 0600) == -1)
		why = xprintf("it could not be kept in %s: %s", kq,
		    strerror(errno));
	if (keepfd != -1)
		close(keepfd);
	/* Only the file that was read (the user's git may have written one since). */
	if (why == NULL && (fstatat(gitfd, "index", &now,
	    AT_SYMLINK_NOFOLLOW) == -1 || !path_stat_unchanged(st, &now)))
		why = xstrdup("it changed while it was checked");
	if (why == NULL && unlinkat(gitfd, "index", 0) == -1)
		why = xstrdup(strerror(errno));
	if (why == NULL)
		strv_addf(alerts, "the session left an index in %s that git's "
		    "checkout could use against you (%s): a 'git checkout -- "
		    ".' there would write into a git dir (a hook your next git "
		    "command runs) or outside the project; it was moved to %s, "
		    "and git reads no index there now: 'git reset' makes one "
		    "from HEAD, keeping your files", q, reason, kq);
	else
		strv_addf(alerts, "the session left an index in %s that git's "
		    "checkout could use against you (%s): a 'git checkout -- "
		    ".' there would write into a git dir (a hook your next git "
		    "command runs) or outside the project, and it could not be "
		    "taken away (%s): remove %s/index, then 'git reset' there "
		    "makes one from HEAD, keeping your files", q, reason, why,
		    q);
	free(q);
	free(kept);
	free(kq);
	free(why);
}

/* GITFD's index, too large to check, renamed aside there (git reads it no more), told in red. */
static void
snap_hist_index_large(int gitfd, const char *said, struct strv *alerts)
{
	char *q = quote_name(said);

	if (renameat2(gitfd, "index", gitfd, "index.agentmux-too-large",
	    RENAME_NOREPLACE) == 0)
		strv_addf(alerts, "the session left an index in %s larger than "
		    "agentmux checks (256 MiB), which git's checkout could use "
		    "against you: it was renamed index.agentmux-too-large there, "
		    "and git reads no index there now: 'git reset' makes one "
		    "from HEAD, keeping your files", q);
	else
		strv_addf(alerts, "the session left an index in %s larger than "
		    "agentmux checks (256 MiB), which git's checkout could use "
		    "against you, and it could not be moved aside (%s): remove "
		    "%s/index, then 'git reset' there makes one from HEAD", q,
		    strerror(errno), q);
	free(q);
}

void
snap_hist_index_refuse(int gitfd, const char *said, size_t oidlen,
    const struct timespec *since, const char *keepdir, const char *keep,
    struct strv *alerts)
{
	struct stat st;
	struct strv bad;
	struct buf b;
	char *names, *reason;
	int rc;

	if (fstatat(gitfd, "index", &st, AT_SYMLINK_NOFOLLOW) == -1 ||
	    !S_ISREG(st.st_mode))
		return;
	/* Not written since the start: the user's own. */
	if (since != NULL && (st.st_ctim.tv_sec < since->tv_sec ||
	    (st.st_ctim.tv_sec == since->tv_sec && st.st_ctim.tv_nsec <
	    since->tv_nsec)))
		return;
	buf_init(&b);
	strv_init(&bad);
	if (path_read_beneath(gitfd, "index", SNAP_HIST_INDEX_MAX, &b) == -1) {
		/* Too large to check: out of git's way all the same. */
		if (errno == EFBIG)
			snap_hist_index_large(gitfd, said, alerts);
		buf_free(&b);
		return;
	}
	if ((rc = snap_index_paths_check(&b, oidlen, &bad)) != 0) {
		names = snap_quote_names(&bad, 16);
		reason = rc == 1 ? xprintf("entries %s", names) : xstrdup("its "
		    "entries cannot be read as git would read them, or some "
		    "are elsewhere: a split or sparse index, an offset table");
		snap_hist_index_away(gitfd, said, &st, &b, keepdir, keep,
		    reason, alerts);
		free(reason);
		free(names);
	}
	buf_free(&b);
	strv_free(&bad);
}

void
snap_hist_head_repair(const struct snap_hgit *g, int gitfd, const char *who,
    bool dry, struct strv *alerts)
{
	struct strv start;
	struct buf text;
	const char *want;
	char *what = snap_hist_head_bad(gitfd);

	/* The whole git dir deleted (rm -rf lib/.git) is told as such, and undo --refs puts it all back. */
	if (what != NULL && strcmp(what, "deleted") == 0 &&
	    faccessat(gitfd, "config", F_OK, AT_SYMLINK_NOFOLLOW) == -1 &&
	    faccessat(gitfd, "refs", F_OK, AT_SYMLINK_NOFOLLOW) == -1) {
		free(what);
		what = NULL;
	}
	if (what == NULL || snap_history_start_refs(g, &start) == -1) {
		free(what);
		return;
	}
	want = snap_hist_value(&start, "HEAD");
	buf_init(&text);
	if (want != NULL && snap_hist_value_ok(want))
		buf_printf(&text, "%s\n", want);
	if (text.len == 0)
		strv_addf(alerts, "%s %s %s/HEAD, and none was kept at the "
		    "start: git says \"not a git repository\" there until you "
		    "write one ('ref: refs/heads/BRANCH')", who, what, g->gitdir);
	else if (dry)
		strv_addf(alerts, "%s %s %s/HEAD (git says \"not a git "
		    "repository\" there); it would be put back as it was at the "
		    "start (%s)", who, what, g->gitdir, want);
	else if (snap_hist_write(gitfd, "HEAD", &text, 0644) == -1)
		strv_addf(alerts, "%s %s %s/HEAD, and it could not be put back "
		    "(%s): git says \"not a git repository\" there until you "
		    "remove it and write '%s' into %s/HEAD", who, what,
		    g->gitdir, strerror(errno), want, g->gitdir);
	else
		strv_addf(alerts, "%s %s %s/HEAD (git said \"not a git "
		    "repository\" there); it was put back as it was at the "
		    "start (%s)", who, what, g->gitdir, want);
	buf_free(&text);
	strv_free(&start);
	free(what);
}

/*
 * Each git dir's HEAD put back as it was at the start if the session left
 * one git does not take (deleted, garbage, a link): without it git says
 * "not a git repository" there, undo --refs and agentmux's own checks of
 * the index fail. Told in red. Before anything else of the end runs git.
 */
static void
snap_history_heads(struct snap_history *h)
{
	char *cause;
	size_t i;
	int gitfd;

	for (i = 0; i < h->n; i++) {
		/* One not of the start is told by snap_history_end_one. */
		if ((gitfd = snap_gitdir_open(h->v[i].gitdir, &h->v[i].id,
		    NULL, &cause)) < 0) {
			free(cause);
			continue;
		}
		snap_hist_head_repair(&h->v[i], gitfd, "the session", false,
		    &h->end_alerts);
		close(gitfd);
	}
}

/* The worktree's index (in its admin dir) checked as the project's is (snap_hist_index_refuse), kept in the session's history dir if refused. */
static void
snap_history_wt_index(const struct snap_history *h, struct strv *alerts,
    const struct snap_worktree *wt)
{
	char *config;
	size_t oidlen;
	int adminfd;

	/* The id length from the project's config (read only in the jail), never from the admin dir's (the jail's; review 8 F3). */
	config = xprintf("%s/config", wt->common);
	oidlen = snap_hist_oidlen_git(config);
	free(config);
	if ((adminfd = open(wt->admin, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1)
		return;
	/* With no history kept, the refused index stays in the admin dir, where git reads it not. */
	snap_hist_index_refuse(adminfd, wt->admin, oidlen, NULL, h != NULL ?
	    h->dir : wt->admin, h != NULL ? "worktree-index-as-left" :
	    "index.agentmux-refused", alerts);
	close(adminfd);
}

/* Submodule git dirs the session made in its worktree's admin dir, moved aside (snap_worktree_modules_fix), told in red. */
static void
snap_history_wt_modules(struct strv *alerts, const struct snap_worktree *wt)
{
	char *moved = NULL, *cause = NULL;

	if (snap_worktree_modules_fix(wt, &moved, &cause) == -1)
		strv_addf(alerts, "the session made submodule git "
		    "dirs in its worktree's git dir (%s/modules): a 'git "
		    "submodule update' in the worktree would run their hooks; "
		    "%s", wt->admin, cause);
	else if (moved != NULL)
		strv_addf(alerts, "the session made submodule git "
		    "dirs in its worktree's git dir (%s/modules): a 'git "
		    "submodule update' in the worktree would take them up and "
		    "run their hooks and config; they were moved to %s (look "
		    "at them there; 'git submodule update --init' makes fresh "
		    "ones)", wt->admin, moved);
	free(moved);
	free(cause);
}

/*
 * Links and special files the session left in its worktree's admin dir,
 * removed (snap_worktree_odd_fix), told in red into ALERTS, with what the
 * live watch of H (NULL: there was none) did.
 */
static void
snap_history_wt_odd(const struct snap_history *h, struct strv *alerts,
    const struct snap_worktree *wt)
{
	char *told = NULL;
	int rc = snap_worktree_odd_fix(wt, &told);
	struct buf b;
	size_t i;

	if (h != NULL && h->wt_nowatch)
		strv_addf(alerts, "the git dirs of the session's "
		    "worktree (its own git dir, its branch's ref and reflog "
		    "dirs) could not be watched while it ran (no inotify "
		    "instance or watch was left: fs.inotify.max_user_instances "
		    "and max_user_watches are the user's, which a jail can use "
		    "up): a link it made there, which your git would follow, "
		    "stayed until its end");
	if (h != NULL && h->wt_removed > 0) {
		buf_init(&b);
		for (i = 0; i < h->wt_told.n; i++)
			buf_printf(&b, "%s%s", i > 0 ? ", " : "",
			    h->wt_told.v[i]);
		if (h->wt_removed > h->wt_told.n)
			buf_printf(&b, " and %zu more", h->wt_removed -
			    h->wt_told.n);
		strv_addf(alerts, "while it ran, the session made links "
		    "or special files in its worktree's git dir, its branch's "
		    "reflog dir or its branch's ref dir, or files there too big "
		    "for a ref, which your git would follow, block on or read "
		    "whole (a link to /dev/zero, or a sparse 7 GB file, where "
		    "git lists branches takes its memory): each was dealt with "
		    "as soon as agentmux saw it: %s", b.data != NULL ? b.data :
		    "");
		buf_free(&b);
	}

	if (told != NULL)
		strv_addf(alerts, "the session left links or special "
		    "files in its worktree's git dir, its branch's reflog dir "
		    "or its branch's ref dir, or files there too big for a ref, "
		    "which your git would write through (a commit in the "
		    "worktree appends its reflog lines through a logs/HEAD "
		    "link, or its branch's), block on (a FIFO where git lists "
		    "branches) or read whole (a sparse 7 GB file there takes "
		    "its memory): %s%s", told, rc == -1 ? "; remove those not "
		    "removed before you run git in the worktree" : "; they were "
		    "dealt with as said");
	free(told);
}

/* Whether V is an object id in lower-case hex, as git writes one. */
static bool
snap_hist_hex_id(const char *v)
{
	size_t n = strspn(v, "0123456789abcdef");

	return (n == 40 || n == 64) && v[n] == '\0';
}

/*
 * The session made its own branch a symbolic ref (ref: refs/heads/main):
 * the user's next commit in the worktree would move the ref it names.
 * Put back on the commit its reflog last names (which only the session's
 * git and the user's write), and told in red; with no such commit, told
 * with what to do.
 */
static void
snap_history_wt_symref(struct strv *alerts, const struct snap_worktree *wt)
{
	char *ref = xprintf("refs/heads/%s", wt->branch), *v = NULL;
	char *last = NULL, *q;
	bool unread = false;
	struct buf text;
	int fd;

	if ((fd = open(wt->common, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1 || (v = snap_hist_loose_value(fd, ref)) ==
	    NULL || strncmp(v, "ref: ", 5) != 0)
		goto out;
	last = snap_hist_log_last(fd, ref, &unread);
	q = quote_name(v + 5);
	if (last != NULL && snap_hist_hex_id(last)) {
		buf_init(&text);
		buf_printf(&text, "%s\n", last);
		if (snap_hist_write_text(fd, ref, &text) == 0)
			strv_addf(alerts, "the session made its branch %s a "
			    "symbolic ref to %s: a commit in its worktree would "
			    "have moved %s; it was put back on %.12s, the commit "
			    "its reflog last names", wt->branch, q, q, last);
		else
			strv_addf(alerts, "the session made its branch %s a "
			    "symbolic ref to %s: a commit in its worktree would "
			    "move %s, and it could not be put back (%s); run "
			    "'git update-ref --no-deref %s %s' in %s",
			    wt->branch, q, q, strerror(errno), ref, last,
			    wt->project);
		buf_free(&text);
	} else
		strv_addf(alerts, "the session made its branch %s a symbolic "
		    "ref to %s: a commit in its worktree would move %s; its "
		    "reflog names no commit to put it back on: look with 'git "
		    "log -g %s' and set it with 'git update-ref --no-deref %s "
		    "COMMIT' in %s", wt->branch, q, q, ref, ref, wt->project);
	free(q);
out:
	if (fd != -1)
		close(fd);
	free(last);
	free(v);
	free(ref);
}

/* What snap_history_wt_refdir finds: symbolic refs removed, git locks left. */
struct snap_history_wt_left {
	struct buf symrefs;
	struct buf locks;
	size_t entries;
};

#define SNAP_HISTORY_WT_LEFT_MAX 4096

/* LOCK (a path) told, quoted. */
static void
snap_history_wt_lock(struct snap_history_wt_left *l, const char *path)
{
	char *q = quote_name(path);

	buf_printf(&l->locks, "%s%s", l->locks.len > 0 ? ", " : "", q);
	free(q);
}

/*
 * The files of DFD (the ref REF's dir in the session's ref dir, which
 * its jail can write), DEPTH dirs down: symbolic refs other than the
 * branch (agentmux/ID/y -> refs/heads/keep: git branch lists them, and a
 * commit on one checked out moves the ref it names) removed, git locks
 * (X.lock, which make the user's git there fail) noted.
 */
static void
snap_history_wt_refdir_in(struct snap_history_wt_left *l, int dfd,
    const char *dir, const char *common, const char *branch, int depth)
{
	struct dirent *de;
	struct stat st;
	char *ref, *v, *q, *path;
	size_t n;
	DIR *d;
	int fd, cfd;

	if ((fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL && l->entries++ <
	    SNAP_HISTORY_WT_LEFT_MAX) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") ==
		    0 || fstatat(dirfd(d), de->d_name, &st,
		    AT_SYMLINK_NOFOLLOW) == -1)
			continue;
		ref = xprintf("%s/%s", dir, de->d_name);
		n = strlen(de->d_name);
		if (S_ISDIR(st.st_mode) && depth > 0 && (cfd =
		    path_open_beneath(dirfd(d), de->d_name, O_RDONLY |
		    O_DIRECTORY, 0)) != -1) {
			snap_history_wt_refdir_in(l, cfd, ref, common, branch,
			    depth - 1);
			close(cfd);
		} else if (S_ISREG(st.st_mode) && n > 5 &&
		    strcmp(de->d_name + n - 5, ".lock") == 0) {
			path = xprintf("%s/%s", common, ref);
			snap_history_wt_lock(l, path);
			free(path);
		} else if (S_ISREG(st.st_mode) && strcmp(ref + 11, branch) !=
		    0 && (v = snap_hist_loose_value(dirfd(d), de->d_name)) !=
		    NULL) {
			if (strncmp(v, "ref: ", 5) == 0 &&
			    unlinkat(dirfd(d), de->d_name, 0) == 0) {
				q = quote_name(ref + 11);
				buf_printf(&l->symrefs, "%s%s -> ",
				    l->symrefs.len > 0 ? ", " : "", q);
				free(q);
				q = quote_name(v + 5);
				buf_add(&l->symrefs, q, strlen(q));
				free(q);
			}
			free(v);
		}
		free(ref);
	}
	closedir(d);
}

/*
 * What the session left in its branch's ref dir and its worktree's git
 * dir for the user's git to trip on: symbolic refs beside its branch
 * (removed), and git's locks (index.lock, HEAD.lock, a ref's: the user's
 * git in the worktree fails while one is there), told.
 */
static void
snap_history_wt_refdir(struct strv *alerts, const struct snap_worktree *wt)
{
	static const char *const admin_locks[] = { "index.lock", "HEAD.lock",
	    "ORIG_HEAD.lock", "config.worktree.lock" };
	struct snap_history_wt_left l;
	const char *slash = strrchr(wt->branch, '/');
	char *dir, *path, *q = NULL;
	struct stat st;
	size_t i;
	int cfd, dfd, afd;

	if (slash == NULL)
		return;
	memset(&l, 0, sizeof l);
	buf_init(&l.symrefs);
	buf_init(&l.locks);
	dir = xprintf("refs/heads/%.*s", (int)(slash - wt->branch),
	    wt->branch);
	if ((cfd = open(wt->common, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) != -1) {
		if ((dfd = path_open_beneath(cfd, dir, O_RDONLY | O_DIRECTORY,
		    0)) != -1) {
			snap_history_wt_refdir_in(&l, dfd, dir, wt->common,
			    wt->branch, 8);
			close(dfd);
		}
		close(cfd);
	}
	if ((afd = open(wt->admin, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) != -1) {
		for (i = 0; i < nitems(admin_locks); i++) {
			if (fstatat(afd, admin_locks[i], &st,
			    AT_SYMLINK_NOFOLLOW) == 0) {
				path = xprintf("%s/%s", wt->admin,
				    admin_locks[i]);
				snap_history_wt_lock(&l, path);
				free(path);
			}
		}
		close(afd);
	}
	if (l.symrefs.len > 0)
		strv_addf(alerts, "the session made symbolic refs beside its "
		    "branch %s (git branch lists them as branches, and a commit "
		    "on one checked out would move the ref it names): %.*s; "
		    "they were removed", wt->branch, (int)l.symrefs.len,
		    l.symrefs.data);
	if (l.locks.len > 0)
		strv_addf(alerts, "the session left git's locks in its "
		    "worktree's git dir or its branch's ref dir: %.*s; your git "
		    "in the worktree fails while one is there ('File exists'): "
		    "remove them once no git of yours runs there", (int)l.locks.len,
		    l.locks.data);
	if (l.entries > SNAP_HISTORY_WT_LEFT_MAX)
		strv_addf(alerts, "the session's ref dir (%s in %s) holds more "
		    "than %d entries: the ones past them were not looked at for "
		    "symbolic refs or locks", dir, (q = quote_name(wt->common)),
		    SNAP_HISTORY_WT_LEFT_MAX);
	free(q);
	buf_free(&l.symrefs);
	buf_free(&l.locks);
	free(dir);
}

void
snap_history_worktree_end(const struct snap_history *h, int64_t session,
    struct strv *alerts)
{
	struct snap_worktree wt;
	char *data, *root = NULL, *was = NULL, *cause = NULL;

	if ((data = path_data_dir(&cause)) != NULL &&
	    snap_worktree_find(data, session, &wt, &root, &cause) == 0) {
		free(cause);
		cause = NULL;
		if (snap_worktree_head_fix(&wt, false, &was, &cause) == -1)
			strv_addf(alerts, "the HEAD of the session's "
			    "worktree (%s/HEAD): the session %s, and it could "
			    "not be put back on its branch %s (%s)", wt.admin,
			    was != NULL ? was : "changed it", wt.branch, cause);
		else if (was != NULL)
			strv_addf(alerts, "the HEAD of the session's "
			    "worktree (%s/HEAD): the session %s; it was put "
			    "back on its branch %s", wt.admin, was, wt.branch);
		snap_history_wt_modules(alerts, &wt);
		snap_history_wt_index(h, alerts, &wt);
		snap_history_wt_odd(h, alerts, &wt);
		snap_history_wt_symref(alerts, &wt);
		snap_history_wt_refdir(alerts, &wt);
		snap_worktree_clear(&wt);
	}
	free(was);
	free(cause);
	free(root);
	free(data);
}

void
snap_history_end(struct snap_history *h, struct event_base *base,
    int64_t session, snap_history_end_cb done, void *arg)
{
	size_t i;

	h->end_session = session;
	h->end_base = base;
	h->end_done = done;
	h->end_arg = arg;
	snap_history_heads(h);
	/* One more than there are: none ends it before all have started. */
	h->ending = h->n + 1;
	for (i = 0; i < h->n; i++)
		snap_import_finish(h->v[i].imp, base, snap_history_import_done,
		    h);
	snap_history_import_done(h);
}

bool
snap_history_pending(const struct snap_history *h)
{
	struct stat st;
	char *done;
	size_t i;
	bool pending = false;

	for (i = 0; h != NULL && i < h->n && !pending; i++) {
		done = xprintf("%s/done", h->v[i].base);
		pending = lstat(h->v[i].upper, &st) == 0 && lstat(done,
		    &st) == -1;
		free(done);
	}
	return pending;
}

/* Whether session ID still runs in a live agentmux (its objects are its own to bring back). */
static bool
snap_history_running(struct store *st, int64_t id)
{
	struct store_session *ss = store_session_get(st, id);
	bool running;

	if (ss == NULL)
		return false;
	running = store_session_live(ss);
	store_session_free(ss);
	return running;
}

/*
 * Bringing back the histories of sessions that ended without agentmux,
 * one after another on the loop (a pack being indexed is a child of
 * core's runner): what each found goes to its session's events.
 */
struct snap_history_recovery {
	struct store *st;
	struct event_base *base;
	char *data_dir;
	struct strv ids;          /* the sessions to look at */
	struct strv projects;     /* each one's project ("" if unknown) */
	size_t next;
	size_t at;                /* ids from here on are not over */
	struct snap_history *h;   /* the one being brought back */
	int64_t id;
	struct snap_history_recovery *link;   /* in snap_history_recoveries */
};

/* A start waiting for the sessions of its project to be brought back. */
struct snap_history_wait {
	char *project;
	void (*done)(void *);
	void *arg;
	struct snap_history_wait *link;
};

static int snap_history_nrecovering;
static struct snap_history_recovery *snap_history_recoveries;
static struct snap_history_wait *snap_history_waits;

static void snap_history_recover_next(struct snap_history_recovery *);

/* A session of PROJECT not yet brought back (its id into *ID), or false. */
static bool
snap_history_project_pending(const char *project, int64_t *id)
{
	struct snap_history_recovery *r;
	size_t i;

	for (r = snap_history_recoveries; r != NULL; r = r->link) {
		for (i = r->at; i < r->ids.n; i++) {
			if (strcmp(r->projects.v[i], project) != 0)
				continue;
			if (id != NULL)
				*id = strtoll(r->ids.v[i], NULL, 10);
			return true;
		}
	}
	return false;
}

/* Starts whose projects are no longer being brought back go on, one at a time. */
static void
snap_history_wake(void)
{
	struct snap_history_wait **wp, *w;

	for (wp = &snap_history_waits; (w = *wp) != NULL; wp = &w->link) {
		if (snap_history_project_pending(w->project, NULL))
			continue;
		*wp = w->link;
		w->done(w->arg);
		free(w->project);
		free(w);
		/* The call may have added or ended waits: start again. */
		snap_history_wake();
		return;
	}
}

struct snap_history_wait *
snap_history_recover_wait(const char *project, int64_t *session,
    void (*done)(void *), void *arg)
{
	struct snap_history_wait *w;

	if (!snap_history_project_pending(project, session))
		return NULL;
	w = xcalloc(1, sizeof *w);
	w->project = xstrdup(project);
	w->done = done;
	w->arg = arg;
	w->link = snap_history_waits;
	snap_history_waits = w;
	return w;
}

void
snap_history_wait_free(struct snap_history_wait *w)
{
	struct snap_history_wait **wp;

	if (w == NULL)
		return;
	for (wp = &snap_history_waits; *wp != NULL; wp = &(*wp)->link) {
		if (*wp == w) {
			*wp = w->link;
			break;
		}
	}
	free(w->project);
	free(w);
}

/* R is over: it goes, and the starts that waited for it go on. */
static void
snap_history_recover_end(struct snap_history_recovery *r)
{
	struct snap_history_recovery **rp;

	for (rp = &snap_history_recoveries; *rp != NULL; rp = &(*rp)->link) {
		if (*rp == r) {
			*rp = r->link;
			break;
		}
	}
	snap_history_nrecovering--;
	strv_free(&r->ids);
	strv_free(&r->projects);
	free(r->data_dir);
	free(r);
	snap_history_wake();
}

static void
snap_history_recovered(void *arg, struct strv *alerts, struct strv *warnings)
{
	struct snap_history_recovery *r = arg;
	size_t i;

	for (i = 0; i < alerts->n; i++) {
		store_event_add(r->st, r->id, "error", "tampering", "%s",
		    alerts->v[i]);
		store_session_flag(r->st, r->id, "tampering");
	}
	for (i = 0; i < warnings->n; i++)
		store_event_add(r->st, r->id, "warn", "history", "%s",
		    warnings->v[i]);
	/* Told last by snap_history_end: its history may go. */
	snap_history_free(r->h);
	r->h = NULL;
	r->at = r->next;
	snap_history_wake();
	snap_history_recover_next(r);
}

/* Starts bringing back the next session of R that needs it, or ends R. */
static void
snap_history_recover_next(struct snap_history_recovery *r)
{
	struct snap_history *h;
	char *sess, *m;
	int64_t id;

	while (r->next < r->ids.n) {
		r->at = r->next;
		id = strtoll(r->ids.v[r->next++], NULL, 10);
		sess = xprintf("%s/sessions/%lld", r->data_dir, (long long)id);
		h = snap_history_open(sess);
		free(sess);
		if (h != NULL && snap_history_pending(h)) {
			store_event_add(r->st, id, "warn", "history", "the "
			    "session ended without agentmux; the objects its "
			    "git wrote were brought into the repository at the "
			    "next start");
			r->h = h;
			r->id = id;
			snap_history_end(h, r->base, id, snap_history_recovered,
			    r);
			return;
		}
		/* Done, or gone with its session (gc). */
		m = xprintf("%s/history-pending/%lld", r->data_dir,
		    (long long)id);
		unlink(m);
		free(m);
		snap_history_free(h);
	}
	snap_history_recover_end(r);
}

/* The project session ID ran in, into PROJECTS ("" if it is not known). */
static void
snap_history_add_project(struct store *st, int64_t id, struct strv *projects)
{
	struct store_session *ss = store_session_get(st, id);

	strv_add(projects, ss != NULL && ss->project != NULL ? ss->project : "");
	store_session_free(ss);
}

int
snap_history_recover(struct store *st, struct event_base *base,
    const char *data_dir)
{
	char *dir = xprintf("%s/history-pending", data_dir), *end;
	struct snap_history_recovery *r;
	struct dirent *de;
	long long id;
	DIR *d;
	int n;

	if ((d = opendir(dir)) == NULL) {
		free(dir);
		return 0;
	}
	r = xcalloc(1, sizeof *r);
	strv_init(&r->ids);
	strv_init(&r->projects);
	while ((de = readdir(d)) != NULL) {
		id = strtoll(de->d_name, &end, 10);
		if (id > 0 && *end == '\0' && !snap_history_running(st, id)) {
			strv_addf(&r->ids, "%lld", id);
			snap_history_add_project(st, id, &r->projects);
		}
	}
	closedir(d);
	free(dir);
	n = (int)r->ids.n;
	r->st = st;
	r->base = base;
	r->data_dir = xstrdup(data_dir);
	snap_history_nrecovering++;
	r->link = snap_history_recoveries;
	snap_history_recoveries = r;
	snap_history_recover_next(r);
	return n;
}

int
snap_history_recovering(void)
{
	return snap_history_nrecovering;
}
