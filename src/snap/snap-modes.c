/*
 * Real modes beside git's 644/755: a snapshot records the permissions of
 * every file and directory that differ from what the user's umask gives
 * (in its commit message), `agentmux diff` shows a change of mode alone,
 * and undo puts them back, never through a link.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "snap/snap-int.h"

/* The line that starts the modes in a snapshot's commit message. */
#define SNAP_MODES_HEAD "agentmux-modes umask="

void
snap_modes_init(struct snap_modes *m)
{
	memset(m, 0, sizeof *m);
}

void
snap_modes_free(struct snap_modes *m)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		free(m->v[i].path);
	free(m->v);
	for (i = 0; i < m->en; i++)
		free(m->e[i].path);
	free(m->e);
	strv_free(&m->toolong);
	memset(m, 0, sizeof *m);
}

/* What a file or dir gets from UMASK alone: 0666 or 0777 (executable, or a dir) without it. */
mode_t
snap_modes_canonical(mode_t umask_, bool dir_or_exec)
{
	return (dir_or_exec ? 0777 : 0666) & ~umask_ & 0777;
}

void
snap_modes_add(struct snap_modes *m, const char *path, size_t len,
    mode_t mode)
{
	if (m->n == m->cap) {
		m->cap = m->cap == 0 ? 16 : m->cap * 2;
		m->v = xreallocarray(m->v, m->cap, sizeof *m->v);
	}
	m->v[m->n].path = xstrndup(path, len);
	m->v[m->n].mode = mode;
	m->n++;
}

static int
snap_modes_cmp(const void *a, const void *b)
{
	const struct snap_mode *x = a, *y = b;

	return strcmp(x->path, y->path);
}

/* N entries of V in path order, for bsearch. */
void
snap_mode_sort(struct snap_mode *v, size_t n)
{
	if (n > 1)
		qsort(v, n, sizeof *v, snap_modes_cmp);
}

void
snap_modes_sort(struct snap_modes *m)
{
	snap_mode_sort(m->v, m->n);
}

/* The mode recorded for PATH, or -1 if it has what the umask gives. */
int
snap_modes_find(const struct snap_modes *m, const char *path)
{
	const struct snap_mode *found = snap_mode_search(m->v, m->n, path);

	return found != NULL ? (int)found->mode : -1;
}

const struct snap_mode *
snap_mode_search(const struct snap_mode *v, size_t n, const char *path)
{
	struct snap_mode key = { (char *)path, 0 };

	if (n == 0)
		return NULL;
	return bsearch(&key, v, n, sizeof *v, snap_modes_cmp);
}

/* What PATH (a file, executable or not, or a dir) has in M. */
mode_t
snap_modes_of(const struct snap_modes *m, const char *path, bool dir_or_exec)
{
	int mode = snap_modes_find(m, path);

	return mode != -1 ? (mode_t)mode : snap_modes_canonical(m->umask,
	    dir_or_exec);
}

/*
 * Reads find's "TYPE MODE PATH\0" records (TYPE f or d): each mode that
 * differs from what UMASK gives is kept. Set-id and sticky bits are not:
 * undo must never make a set-uid file.
 */
void
snap_modes_from_find(struct snap_modes *m, mode_t umask_, const char *out,
    size_t len)
{
	const char *p = out, *end = out + len, *rec, *path;
	unsigned long mode;
	char *e;
	bool exec;

	m->umask = umask_;
	m->known = true;
	for (; p < end; p = rec + 1) {
		if ((rec = memchr(p, '\0', (size_t)(end - p))) == NULL)
			break;
		if ((p[0] != 'f' && p[0] != 'd') || p[1] != ' ')
			continue;
		mode = strtoul(p + 2, &e, 8);
		if (e == p + 2 || *e != ' ')
			continue;
		path = e + 1;
		mode &= 0777;
		exec = p[0] == 'd' || (mode & 0100) != 0;
		if (mode != snap_modes_canonical(umask_, exec))
			snap_modes_add(m, path, (size_t)(rec - path), mode);
	}
	snap_modes_sort(m);
}

/* The length of the plain character at S (N bytes), or 0 if it must be escaped (snap_quote_path). */
static size_t
snap_quote_len(const char *s, size_t n, uint32_t *c)
{
	size_t len;

	if (*s == '"' || *s == '\\')
		return 0;
	if ((len = quote_utf8_decode(s, n, c)) == 0 || quote_cp_unsafe(*c))
		return 0;
	return len;
}

/*
 * PREFIX and PATH as one token on a line, as git prints a name: as they
 * are, or quoted C-style when PATH holds a control character, a quote or
 * a backslash (so that a name from a jail never reaches a terminal raw).
 */
void
snap_quote_path(struct buf *b, const char *prefix, const char *path)
{
	size_t i, n = strlen(path), len, k;
	bool plain = true;
	uint32_t c;

	/*
	 * Escaped: C0 controls, DEL, '"', '\\', and every byte of a
	 * sequence that is not UTF-8 or is a code point a terminal must not
	 * be handed raw (C1 controls such as CSI, bidi overrides:
	 * quote_cp_unsafe), so an agent's file name prints as text.
	 */
	for (i = 0; i < n; i += len) {
		len = snap_quote_len(path + i, n - i, &c);
		if (len == 0) {
			plain = false;
			break;
		}
	}
	if (plain) {
		buf_printf(b, "%s%s", prefix, path);
		return;
	}
	buf_printf(b, "\"%s", prefix);
	for (i = 0; i < n; i += len) {
		if ((len = snap_quote_len(path + i, n - i, &c)) > 0) {
			buf_add(b, path + i, len);
			continue;
		}
		len = quote_utf8_decode(path + i, n - i, &c);
		if (len == 0)
			len = 1;
		for (k = 0; k < len; k++) {
			if (path[i + k] == '"' || path[i + k] == '\\')
				buf_printf(b, "\\%c", path[i + k]);
			else
				buf_printf(b, "\\%03o",
				    (unsigned)(unsigned char)path[i + k]);
		}
	}
	buf_addc(b, '"');
}

/* The byte git's C-style quoting writes as a backslash and C. */
static char
snap_unquote_char(char c)
{
	static const char from[] = "abtnvfr", to[] = "\a\b\t\n\v\f\r";
	const char *p;

	if (c != '\0' && (p = strchr(from, c)) != NULL)
		return to[p - from];
	return c;
}

/* The reverse of snap_quote_path (and of git's quoting) for the rest of a line; caller frees. */
char *
snap_modes_unquote(const char *s, size_t len)
{
	struct buf b;
	size_t i;
	int c;

	if (len < 2 || s[0] != '"' || s[len - 1] != '"')
		return xstrndup(s, len);
	buf_init(&b);
	for (i = 1; i + 1 < len; i++) {
		if (s[i] != '\\' || i + 2 >= len) {
			buf_addc(&b, s[i]);
			continue;
		}
		if (s[i + 1] >= '0' && s[i + 1] <= '7' && i + 4 < len) {
			c = (s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 +
			    (s[i + 3] - '0');
			buf_addc(&b, (char)c);
			i += 3;
		} else
			buf_addc(&b, snap_unquote_char(s[++i]));
	}
	if (b.data == NULL)
		buf_adds(&b, "");
	return buf_steal(&b);
}

void
snap_modes_format(const struct snap_modes *m, struct buf *b)
{
	size_t i;

	buf_printf(b, SNAP_MODES_HEAD "%03o\n", (unsigned)m->umask);
	for (i = 0; i < m->n; i++) {
		buf_printf(b, "%03o ", (unsigned)m->v[i].mode);
		snap_quote_path(b, "", m->v[i].path);
		buf_addc(b, '\n');
	}
	/* Unreadable to a parser from before (it stops at this line). */
	if (m->en > 0)
		buf_adds(b, SNAP_DIRS_HEAD "\n");
	for (i = 0; i < m->en; i++) {
		buf_printf(b, "%03o ", (unsigned)m->e[i].mode);
		snap_quote_path(b, "", m->e[i].path);
		buf_addc(b, '\n');
	}
	if (m->toolong.n > 0)
		buf_adds(b, SNAP_LONG_HEAD "\n");
	for (i = 0; i < m->toolong.n; i++) {
		buf_adds(b, "0 ");
		snap_quote_path(b, "", m->toolong.v[i]);
		buf_addc(b, '\n');
	}
}

bool
snap_modes_equal(const struct snap_modes *a, const struct snap_modes *b)
{
	size_t i;

	if (a->known != b->known || a->umask != b->umask || a->n != b->n ||
	    a->en != b->en || a->toolong.n != b->toolong.n)
		return false;
	for (i = 0; i < a->en; i++) {
		if (a->e[i].mode != b->e[i].mode ||
		    strcmp(a->e[i].path, b->e[i].path) != 0)
			return false;
	}
	for (i = 0; i < a->n; i++) {
		if (a->v[i].mode != b->v[i].mode ||
		    strcmp(a->v[i].path, b->v[i].path) != 0)
			return false;
	}
	return true;
}

/* Whether the line P..EOL starts the next part of the block (after PART); it into *NEXT. */
static bool
snap_modes_head(const char *p, const char *eol, int part, int *next)
{
	static const char *const heads[] = { SNAP_DIRS_HEAD, SNAP_LONG_HEAD };
	size_t i, len = (size_t)(eol - p);

	for (i = (size_t)part; i < 2; i++) {
		if (len == strlen(heads[i]) && memcmp(p, heads[i], len) == 0) {
			*next = (int)i + 1;
			return true;
		}
	}
	return false;
}

void
snap_modes_parse(struct snap_modes *m, const char *text, size_t len)
{
	const char *p = text, *end = text + len, *nl, *eol;
	unsigned long mode;
	char *e, *path;
	int part = 0;             /* 0 modes, 1 dirs, 2 too long */

	snap_modes_init(m);
	if (len < strlen(SNAP_MODES_HEAD) ||
	    strncmp(p, SNAP_MODES_HEAD, strlen(SNAP_MODES_HEAD)) != 0)
		return;
	m->umask = (mode_t)strtoul(p + strlen(SNAP_MODES_HEAD), &e, 8) & 0777;
	m->known = true;
	p = (nl = memchr(e, '\n', (size_t)(end - e))) != NULL ? nl + 1 : end;
	while (p < end && *p != '\n') {
		nl = memchr(p, '\n', (size_t)(end - p));
		eol = nl != NULL ? nl : end;
		if (snap_modes_head(p, eol, part, &part)) {
			if (nl == NULL)
				break;
			p = nl + 1;
			continue;
		}
		mode = strtoul(p, &e, 8);
		if (e == p || e >= eol || *e != ' ')
			break;
		path = snap_modes_unquote(e + 1, (size_t)(eol - e - 1));
		if (part == 2)
			strv_add(&m->toolong, path);
		else if (part == 1)
			snap_dirs_add(m, path, (mode_t)mode);
		else
			snap_modes_add(m, path, strlen(path),
			    (mode_t)mode & 0777);
		free(path);
		if (nl == NULL)
			break;
		p = nl + 1;
	}
	snap_modes_sort(m);
	snap_dirs_sort(m);
}

/*
 * Reads the modes from a commit object's text (headers, a blank line, the
 * message): the block right after the subject. A commit without one
 * (made before agentmux kept modes) leaves M unknown.
 */
void
snap_modes_from_commit(struct snap_modes *m, const char *text, size_t len)
{
	const char *p, *end = text + len, *nl;

	snap_modes_init(m);
	/* Past the headers, the subject line and the blank line after it. */
	if ((p = memmem(text, len, "\n\n", 2)) == NULL ||
	    (nl = memchr(p + 2, '\n', (size_t)(end - p - 2))) == NULL ||
	    nl + 1 >= end || nl[1] != '\n')
		return;
	p = nl + 2;
	snap_modes_parse(m, p, (size_t)(end - p));
}

int
snap_modes_fchmod(int fd, mode_t mode)
{
	char proc[64];

	/* fchmod() refuses an O_PATH descriptor; its /proc link is the file itself. */
	snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
	return fchmodat(AT_FDCWD, proc, mode, 0);
}

/*
 * Gives REL (a file or dir under the project DIRFD) the mode WANT,
 * without following any link: it is opened O_PATH beneath the project
 * and changed through its descriptor. 1 if it changed, 0 if it had it
 * already or is not a file or dir (now), -1 with errno.
 */
int
snap_modes_apply(int dirfd, const char *rel, mode_t want)
{
	char proc[64];
	struct stat sb;
	int fd, rc = 0;

	fd = *rel == '\0' || strcmp(rel, ".") == 0 ? fcntl(dirfd,
	    F_DUPFD_CLOEXEC, 0) : path_open_beneath(dirfd, rel, O_PATH, 0);
	if (fd == -1)
		return errno == ENOENT ? 0 : -1;
	if (fstat(fd, &sb) == -1)
		rc = -1;
	else if ((S_ISREG(sb.st_mode) || S_ISDIR(sb.st_mode)) &&
	    (sb.st_mode & 07777) != want) {
		snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
		rc = fchmodat(AT_FDCWD, proc, want, 0) == -1 ? -1 : 1;
	}
	close(fd);
	return rc;
}

struct snap_modes_walk {
	struct buf *out;
	struct buf prev;          /* the previous file's path */
};

/* Each file, and each dir the first time one of its files comes (git sorts by bytes: a dir's files are together). */
static int
snap_modes_walk_cb(void *arg, const struct snap_index_ent *e)
{
	struct snap_modes_walk *w = arg;
	const char *slash;
	size_t len;

	if ((e->mode & 0170000) != 0100000)
		return 0;
	for (slash = strchr(e->name, '/'); slash != NULL;
	    slash = strchr(slash + 1, '/')) {
		len = (size_t)(slash - e->name);
		if (w->prev.len > len && memcmp(w->prev.data, e->name, len) ==
		    0 && w->prev.data[len] == '/')
			continue;
		buf_add(w->out, e->name, len);
		buf_addc(w->out, '\0');
	}
	buf_add(w->out, e->name, e->namelen);
	buf_addc(w->out, '\0');
	buf_reset(&w->prev);
	buf_add(&w->prev, e->name, e->namelen);
	return 0;
}

size_t
snap_modes_paths(const char *index, size_t oidlen, struct buf *out)
{
	struct snap_modes_walk w;
	size_t i, n = 0;

	w.out = out;
	buf_init(&w.prev);
	buf_add(out, ".", 2);
	snap_index_each(index, oidlen, snap_modes_walk_cb, &w);
	buf_free(&w.prev);
	for (i = 0; i < out->len; i++)
		n += out->data[i] == '\0';
	return n;
}

void
snap_modes_stat(const char *worktree, const struct buf *paths,
    struct buf *out)
{
	const char *p, *end = paths->data + paths->len;
	struct stat sb;
	int root, fd;

	if ((root = open(worktree, O_PATH | O_DIRECTORY | O_CLOEXEC)) == -1)
		return;
	for (p = paths->data; p != NULL && p < end; p += strlen(p) + 1) {
		fd = strcmp(p, ".") == 0 ? fcntl(root, F_DUPFD_CLOEXEC, 0) :
		    path_open_beneath(root, p, O_PATH, 0);
		if (fd == -1)
			continue;
		if (fstat(fd, &sb) == 0 && (S_ISREG(sb.st_mode) ||
		    S_ISDIR(sb.st_mode))) {
			buf_printf(out, "%c %o %s", S_ISDIR(sb.st_mode) ? 'd' :
			    'f', (unsigned)(sb.st_mode & 07777), p);
			buf_addc(out, '\0');
		}
		close(fd);
	}
	close(root);
}
