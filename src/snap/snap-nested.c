/*
 * Git dirs a jailed command planted or changed, which the host's git would
 * obey: a nested repository's or a submodule's (a `git status` in the
 * project runs its core.fsmonitor, a commit in it its hooks), one under
 * .git/modules, a .git made where the project had none. Their config keeps
 * only keys known to be inert (everything else goes; the file as it was is
 * kept in the session's quarantine dir), and their hooks are moved there.
 * Everything is reached from the project's dir without following a link.
 */
#include <sys/sendfile.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "snap/snap-int.h"

/*
 * Config keys (git's lower-cased form, globs over subsections) known to be
 * inert: git never runs a command named by them, and they send it nowhere
 * on its own. Anything else in a planted config goes: a deny-list always
 * misses one (gpg.ssh.defaultKeyCommand, trailer.*.command, ...).
 */
static const char *const snap_nested_inert[] = {
	"core.repositoryformatversion", "core.filemode", "core.bare",
	"core.logallrefupdates", "core.ignorecase", "core.precomposeunicode",
	"core.symlinks", "core.autocrlf", "core.eol", "core.safecrlf",
	"core.quotepath", "core.abbrev", "core.compression",
	"core.loosecompression", "core.bigfilethreshold",
	"core.sparsecheckout", "core.sparsecheckoutcone", "core.commentchar",
	"core.whitespace",
	"extensions.objectformat", "extensions.worktreeconfig",
	"extensions.preciousobjects",
	"user.name", "user.email",
	"remote.*.url", "remote.*.pushurl", "remote.*.fetch", "remote.*.push",
	"remote.*.tagopt", "remote.*.mirror", "remote.*.prune",
	"branch.*.remote", "branch.*.merge", "branch.*.rebase",
	"branch.*.pushremote", "branch.*.description",
	"submodule.*.url", "submodule.*.active", "submodule.*.branch",
	"submodule.*.ignore", "submodule.*.fetchrecursesubmodules",
	"submodule.*.shallow", "submodule.active",
	"init.defaultbranch", "pull.rebase", "pull.ff", "push.default",
	"fetch.prune", "merge.conflictstyle", "rebase.autosquash",
	"rebase.autostash", "diff.renames", "status.showuntrackedfiles",
	"i18n.commitencoding", "i18n.logoutputencoding",
	"lfs.repositoryformatversion",
};

/* Keys whose value is a URL git would fetch from: no transport helper (ext::, fd::, x::). */
static const char *const snap_nested_urls[] = {
	"remote.*.url", "remote.*.pushurl", "submodule.*.url",
};

/* A config file larger than this is not read: it goes whole. */
#define SNAP_NESTED_MAX (1024 * 1024)

/* A path for a message: as it is if safe, else quoted as git quotes paths (core-quote.c). */
char *
snap_nested_quote(const char *s)
{
	return quote_name(s);
}

char *
snap_nested_quote_cut(const char *s, size_t max)
{
	char *cut, *q;

	if (strlen(s) <= max)
		return quote_name(s);
	/* The end: a path's last components and a target's tail say most. */
	cut = xprintf("...%s", s + strlen(s) - max);
	q = quote_name(cut);
	free(cut);
	return q;
}

char *
snap_quote_names(const struct strv *names, size_t most)
{
	struct buf b;
	size_t i;
	char *q;

	buf_init(&b);
	for (i = 0; i < names->n && i < most; i++) {
		q = snap_nested_quote_cut(names->v[i], 200);
		buf_printf(&b, "%s%s", i > 0 ? ", " : "", q);
		free(q);
	}
	if (names->n > most)
		buf_printf(&b, " and %zu more", names->n - most);
	buf_add(&b, "", 1);
	return b.data;
}

static bool
snap_nested_url_ok(const char *value)
{
	size_t n = strspn(value, "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-");

	/* "helper::address" runs git-remote-helper (ext:: runs a shell). */
	return n == 0 || strncmp(value + n, "::", 2) != 0;
}

char *
snap_nested_normal(const char *path)
{
	char *copy = xstrdup(path), *comp, *save = NULL, *slash;
	struct buf b;

	buf_init(&b);
	buf_adds(&b, "");
	for (comp = strtok_r(copy, "/", &save); comp != NULL;
	    comp = strtok_r(NULL, "/", &save)) {
		if (strcmp(comp, ".") == 0)
			continue;
		if (strcmp(comp, "..") == 0) {
			if ((slash = strrchr(b.data, '/')) != NULL) {
				*slash = '\0';
				b.len = (size_t)(slash - b.data);
			}
			continue;
		}
		buf_printf(&b, "/%s", comp);
	}
	free(copy);
	if (b.len == 0)
		buf_adds(&b, "/");
	return buf_steal(&b);
}

/*
 * A git dir's core.worktree (git writes one for every submodule) is inert
 * only while it names a dir in the project: elsewhere, `git clean` in that
 * repository would clean there.
 */
static bool
snap_nested_worktree_ok(struct snap_nested *nc, const char *value)
{
	char *abs, *norm;
	size_t n = strlen(nc->project);
	bool ok;

	if (value == NULL || nc->gitdir == NULL)
		return false;
	abs = value[0] == '/' ? xstrdup(value) : xprintf("%s/%s", nc->gitdir,
	    value);
	norm = snap_nested_normal(abs);
	ok = strncmp(norm, nc->project, n) == 0 && (norm[n] == '/' ||
	    norm[n] == '\0');
	free(norm);
	free(abs);
	return ok;
}

/* True if KEY = VALUE (VALUE NULL: a bare boolean) is known to be inert. */
static bool
snap_nested_allowed(struct snap_nested *nc, const char *key,
    const char *value)
{
	size_t i;
	bool ok = false;

	if (strcmp(key, "core.worktree") == 0)
		return snap_nested_worktree_ok(nc, value);
	/* checkout, rebase, merge or none; "!command" runs a command. */
	if (util_glob_match("submodule.*.update", key, false))
		return value != NULL && value[strspn(value, " \t")] != '!';

	for (i = 0; i < nitems(snap_nested_inert) && !ok; i++)
		ok = util_glob_match(snap_nested_inert[i], key, false);
	for (i = 0; i < nitems(snap_nested_urls) && ok; i++) {
		if (util_glob_match(snap_nested_urls[i], key, false))
			ok = value != NULL && snap_nested_url_ok(value);
	}
	return ok;
}

/* An entry's stat, found from the project's dir without following a link. */
static int
snap_nested_lstat(struct snap_nested *nc, const char *rel, struct stat *st)
{
	int fd, rc;

	if ((fd = path_open_beneath(nc->projfd, rel, O_PATH, 0)) == -1)
		return -1;
	rc = fstat(fd, st);
	close(fd);
	return rc;
}

int64_t
snap_plant_clock(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME_COARSE, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

bool
snap_nested_changed(const struct stat *st, int64_t since)
{
	/* ctime: a command can set a file's mtime back, never its ctime. */
	return (int64_t)st->st_ctim.tv_sec * 1000 +
	    st->st_ctim.tv_nsec / 1000000 >= since;
}

/*
 * What the quarantine takes by copy (when it is on another file system
 * than what it keeps): bytes in all, per keep (a tree's whole), and, for
 * a tree, entries and levels. Past them, nothing more is copied and the
 * keep fails with E2BIG (EFBIG for a file): what is left stays where it
 * is, said by the caller.
 */
#define SNAP_NESTED_COPY_BYTES (256 * 1024 * 1024)
#define SNAP_NESTED_TREE_MAX 10000
#define SNAP_NESTED_TREE_DEPTH 64
/* The longest part of a name a quarantine name keeps (after "<n>-", before ".symlink"). */
#define SNAP_NESTED_NAME 200
/* Names tried for a keep before it gives up: earlier keeps may hold the first. */
#define SNAP_NESTED_TRIES 1000

bool snap_nested_tree_copy;
off_t snap_nested_copy_max = SNAP_NESTED_COPY_BYTES;

/* What one keep may still copy. */
struct snap_nested_budget {
	off_t bytes;
	int entries;
};

/*
 * Copies what FD (a file) holds into a new file TO in the quarantine, as
 * far as *BUDGET allows (counted as it goes: the file may grow meanwhile);
 * past it, TO is removed and errno is EFBIG.
 */
static int
snap_nested_copy_to(int fd, const char *to, struct snap_nested_budget *b)
{
	ssize_t n;
	int out, rc = 0, saved;

	out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	    0600);
	if (out == -1)
		return -1;
	for (;;) {
		if (b->bytes <= 0) {
			/* One byte more says whether it ends here. */
			n = sendfile(out, fd, NULL, 1);
			if (n > 0)
				errno = EFBIG;
			rc = n == 0 ? 0 : -1;
			break;
		}
		n = sendfile(out, fd, NULL, (size_t)(b->bytes < (1 << 30) ?
		    b->bytes : (1 << 30)));
		if (n == 0)
			break;
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			rc = -1;
			break;
		}
		b->bytes -= n;
	}
	saved = errno;
	if (close(out) == -1 && rc == 0) {
		rc = -1;
		saved = errno;
	}
	if (rc == -1)
		unlink(to);
	errno = saved;
	return rc;
}

/* Writes TEXT into a new file TO (never over one there). */
static int
snap_nested_write_new(const char *to, const char *text, size_t len)
{
	int fd, rc = 0, saved;

	fd = open(to, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	    0600);
	if (fd == -1)
		return -1;
	if (len > 0 && write(fd, text, len) != (ssize_t)len)
		rc = -1;
	saved = errno;
	if (close(fd) == -1)
		rc = -1;
	else
		errno = saved;
	if (rc == -1)
		unlink(to);
	return rc;
}

/*
 * A name in the quarantine Q for NAME that nothing holds yet: "<n>-NAME"
 * (its first SNAP_NESTED_NAME bytes) with SUFFIX, N the next of *COUNT
 * whose name is free. NULL (errno EEXIST) if none of SNAP_NESTED_TRIES is.
 */
static char *
snap_nested_free_name(const char *q, int *count, const char *name,
    const char *suffix)
{
	struct stat st;
	char *to;
	int i;

	for (i = 0; i < SNAP_NESTED_TRIES; i++) {
		to = xprintf("%s/%d-%.*s%s", q, ++*count, SNAP_NESTED_NAME, name,
		    suffix);
		if (lstat(to, &st) == -1 && errno == ENOENT)
			return to;
		free(to);
	}
	errno = EEXIST;
	return NULL;
}

/*
 * NAME in DIRFD (not a dir) into the quarantine Q, counting in *COUNT,
 * copies charged to B: a file renamed there if MOVE and on its file
 * system, else copied; a link's target written down; anything else kept
 * as an empty file. With MOVE, then taken out of DIRFD. The path, or NULL
 * with errno.
 */
static char *
snap_nested_keep_in(const char *q, int *count, int dirfd, const char *name,
    bool move, struct snap_nested_budget *b)
{
	char target[PATH_MAX], *to;
	struct stat st;
	ssize_t n;
	int fd, rc = -1, saved;

	if (path_mkdir_p(q, 0700) == -1 ||
	    fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == -1)
		return NULL;
	if ((to = snap_nested_free_name(q, count, name, S_ISLNK(st.st_mode) ?
	    ".symlink" : "")) == NULL)
		return NULL;
	if (S_ISREG(st.st_mode) && move && !snap_nested_tree_copy &&
	    renameat2(dirfd, name, AT_FDCWD, to, RENAME_NOREPLACE) == 0)
		return to;
	if (S_ISLNK(st.st_mode)) {
		if ((n = readlinkat(dirfd, name, target, sizeof target - 1)) >= 0)
			rc = snap_nested_write_new(to, target, (size_t)n);
	} else if (S_ISREG(st.st_mode) && (fd = openat(dirfd, name, O_RDONLY |
	    O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)) != -1) {
		rc = snap_nested_copy_to(fd, to, b);
		saved = errno;
		close(fd);
		errno = saved;
	} else if (!S_ISREG(st.st_mode))
		rc = snap_nested_write_new(to, "", 0);
	if (rc == 0 && move && unlinkat(dirfd, name, S_ISDIR(st.st_mode) ?
	    AT_REMOVEDIR : 0) == -1) {
		saved = errno;
		unlink(to);
		errno = saved;
		rc = -1;
	}
	if (rc == -1) {
		saved = errno;
		free(to);
		errno = saved;
		return NULL;
	}
	return to;
}

char *
snap_nested_keep(struct snap_nested *nc, int dirfd, const char *name,
    bool move)
{
	struct snap_nested_budget b = { snap_nested_copy_max, 1 };

	return snap_nested_keep_in(nc->quarantine, &nc->n, dirfd, name, move,
	    &b);
}

/*
 * The dir NAME in PFD copied to the new dir TO, LEVEL deep, each entry
 * kept as snap_nested_keep_in keeps it (numbered in TO) and removed, then
 * the dir; charged to B. 0, or -1 with errno: what could not be taken
 * stays where it was.
 */
static int
snap_nested_tree_move(int pfd, const char *name, const char *to, int level,
    struct snap_nested_budget *b)
{
	struct strv names;
	struct dirent *de;
	struct stat st;
	char *kept, *in;
	size_t i;
	int fd, rc = 0, count = 0, saved = 0;
	DIR *d;

	if (level > SNAP_NESTED_TREE_DEPTH) {
		errno = E2BIG;
		return -1;
	}
	if ((fd = path_open_dir_opened(pfd, name)) == -1)
		return -1;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return -1;
	}
	if (mkdir(to, 0700) == -1 && errno != EEXIST) {
		closedir(d);
		return -1;
	}
	strv_init(&names);
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			strv_add(&names, de->d_name);
	}
	for (i = 0; i < names.n; i++) {
		/* Counted as it goes: it may grow meanwhile. */
		if (--b->entries < 0) {
			rc = -1;
			saved = E2BIG;
			break;
		}
		if (fstatat(dirfd(d), names.v[i], &st, AT_SYMLINK_NOFOLLOW) ==
		    -1)
			continue;
		if (S_ISDIR(st.st_mode)) {
			in = snap_nested_free_name(to, &count, names.v[i], ".d");
			if (in == NULL || snap_nested_tree_move(dirfd(d),
			    names.v[i], in, level + 1, b) == -1) {
				rc = -1;
				saved = errno;
			}
			free(in);
		} else if ((kept = snap_nested_keep_in(to, &count, dirfd(d),
		    names.v[i], true, b)) != NULL)
			free(kept);
		else {
			rc = -1;
			saved = errno;
		}
		if (rc == -1 && (saved == E2BIG || saved == EFBIG))
			break;
	}
	strv_free(&names);
	closedir(d);
	if (rc == 0 && unlinkat(pfd, name, AT_REMOVEDIR) == -1) {
		rc = -1;
		saved = errno;
	}
	if (saved == EFBIG)
		saved = E2BIG;
	errno = saved;
	return rc;
}

char *
snap_nested_keep_tree(struct snap_nested *nc, int dirfd, const char *name,
    char **part)
{
	struct snap_nested_budget b = { snap_nested_copy_max,
	    SNAP_NESTED_TREE_MAX };
	struct stat st;
	char *to;
	int saved;

	*part = NULL;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == -1)
		return NULL;
	if (!S_ISDIR(st.st_mode))
		return snap_nested_keep(nc, dirfd, name, true);
	if (path_mkdir_p(nc->quarantine, 0700) == -1 ||
	    (to = snap_nested_free_name(nc->quarantine, &nc->n, name, ".d")) ==
	    NULL)
		return NULL;
	/* Whole, as it is, if the quarantine is on its file system. */
	if (!snap_nested_tree_copy && renameat2(dirfd, name, AT_FDCWD, to,
	    RENAME_NOREPLACE) == 0)
		return to;
	if (snap_nested_tree_move(dirfd, name, to, 1, &b) == -1) {
		saved = errno;
		/* What was copied before the cut stays there, said by the caller. */
		if (rmdir(to) == -1 && errno != ENOENT)
			*part = to;
		else
			free(to);
		errno = saved;
		return NULL;
	}
	return to;
}

/* Reads NAME in DIRFD if it is a regular file no larger than the cap; -1 if not. */
static int
snap_nested_read(int dirfd, const char *name, struct buf *out, mode_t *mode)
{
	struct stat st;
	int fd, rc = -1;

	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd == -1)
		return -1;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    st.st_size <= SNAP_NESTED_MAX && buf_read_fd(out, fd) == 0) {
		*mode = st.st_mode & 0666;
		rc = 0;
	}
	close(fd);
	return rc;
}

/* Lists TEXT (a config file's contents) as NUL-separated "key[\nvalue]" entries, without includes. */
static int
snap_nested_list(const struct buf *text, struct buf *out)
{
	char *argv[] = { "git", "config", "--file", "-", "--null", "--list",
	    NULL };
	char *cause = NULL;
	int st, rc;

	rc = snap_git_outside_input(argv, text->data != NULL ? text->data : "",
	    text->len, out, NULL, &st, &cause);
	free(cause);
	return rc == 0 && st == 0 ? 0 : -1;
}

/* Appends S to B inside double quotes, escaped as git's config parser reads it. */
static void
snap_nested_quoted(struct buf *b, const char *s)
{
	buf_addc(b, '"');
	for (; *s != '\0'; s++) {
		switch (*s) {
		case '\\':
		case '"':
			buf_addc(b, '\\');
			buf_addc(b, *s);
			break;
		case '\n':
			buf_adds(b, "\\n");
			break;
		case '\t':
			buf_adds(b, "\\t");
			break;
		case '\b':
			buf_adds(b, "\\b");
			break;
		default:
			buf_addc(b, *s);
		}
	}
	buf_addc(b, '"');
}

/* Writes KEY (section[.subsection].name) = VALUE into B, opening its section if it is not the last one. */
static void
snap_nested_emit(struct buf *b, char **last, const char *key,
    const char *value)
{
	const char *dot = strchr(key, '.'), *rdot = strrchr(key, '.');
	char *section, *sub;

	if (dot == NULL)
		return;
	section = xstrndup(key, (size_t)(rdot - key));
	if (*last == NULL || strcmp(*last, section) != 0) {
		buf_printf(b, "[%.*s", (int)(dot - key), key);
		if (dot != rdot) {
			sub = xstrndup(dot + 1, (size_t)(rdot - dot - 1));
			buf_addc(b, ' ');
			snap_nested_quoted(b, sub);
			free(sub);
		}
		buf_adds(b, "]\n");
		free(*last);
		*last = section;
	} else
		free(section);
	buf_printf(b, "\t%s", rdot + 1);
	if (value != NULL) {
		buf_adds(b, " = ");
		snap_nested_quoted(b, value);
	}
	buf_addc(b, '\n');
}

/* Splits LIST (from snap_nested_list) into what stays, written as config text into KEEP, and the names of what goes. */
static void
snap_nested_filter(struct snap_nested *nc, struct buf *list, struct buf *keep,
    struct strv *gone)
{
	char *last = NULL, *key, *nl, *value;
	size_t off, len;

	for (off = 0; off < list->len; off += len + 1) {
		key = list->data + off;
		len = strlen(key);
		value = NULL;
		if ((nl = strchr(key, '\n')) != NULL) {
			*nl = '\0';
			value = nl + 1;
		}
		if (snap_nested_allowed(nc, key, value))
			snap_nested_emit(keep, &last, key, value);
		else if (!strv_contains(gone, key))
			strv_add(gone, key);
	}
	free(last);
}

/* Replaces NAME in DIRFD with TEXT, atomically (a temp file renamed over it). */
static int
snap_nested_replace(int dirfd, const char *name, const struct buf *text,
    mode_t mode)
{
	char tmp[64];

	snprintf(tmp, sizeof tmp, ".agentmux-config-%ld", (long)getpid());
	unlinkat(dirfd, tmp, 0);
	return snap_hist_write_as(dirfd, tmp, name, text, mode);
}

/* What is wrong with config file NAME in DIRFD, if anything, and the text it should have instead. */
static const char *
snap_nested_judge(struct snap_nested *nc, int dirfd, const char *name,
    struct buf *keep, struct strv *gone, mode_t *mode)
{
	struct buf text, list;
	const char *why = NULL;

	buf_init(&text);
	buf_init(&list);
	*mode = 0644;
	if (snap_nested_read(dirfd, name, &text, mode) == -1)
		why = "it is not a regular file of at most 1 MiB";
	else if (snap_nested_list(&text, &list) == -1)
		why = "git cannot read it";
	else
		snap_nested_filter(nc, &list, keep, gone);
	buf_free(&text);
	buf_free(&list);
	return why;
}

/* Keeps only the inert keys of config NAME in DIRFD (the git dir of REPO), if it changed. */
static void
snap_nested_config(struct snap_nested *nc, const char *repo, int dirfd,
    const char *gitdir, const char *name)
{
	struct buf keep, list;
	struct strv gone;
	struct stat st;
	const char *why;
	char *kept, *qrepo, *qpath;
	mode_t mode;
	size_t i;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == -1 ||
	    !snap_nested_changed(&st, nc->since))
		return;
	buf_init(&keep);
	strv_init(&gone);
	nc->gitdir = gitdir;
	why = snap_nested_judge(nc, dirfd, name, &keep, &gone, &mode);
	nc->gitdir = NULL;
	qrepo = snap_nested_quote(repo);
	qpath = snap_nested_quote(gitdir);
	if (why != NULL) {
		/* Nothing of it can be trusted: it goes whole. */
		if ((kept = snap_nested_keep(nc, dirfd, name, true)) != NULL)
			strv_addf(nc->messages, "the repository %s had a config "
			    "agentmux cannot check (%s/%s: %s); it was moved to "
			    "%s", qrepo, qpath, name, why, kept);
		free(kept);
	} else if (gone.n > 0 &&
	    (kept = snap_nested_keep(nc, dirfd, name, false)) != NULL) {
		buf_init(&list);
		for (i = 0; i < gone.n; i++)
			buf_printf(&list, "%s%s", i == 0 ? "" : ", ", gone.v[i]);
		if (snap_nested_replace(dirfd, name, &keep, mode) == 0)
			strv_addf(nc->messages, "the repository %s had "
			    "settings git could run commands from (%s) in "
			    "%s/%s; only settings known to be harmless were "
			    "kept (the file as it was is %s)", qrepo, list.data,
			    qpath, name, kept);
		else
			strv_addf(nc->messages, "the repository %s has "
			    "settings git could run commands from (%s) in "
			    "%s/%s, and agentmux could not rewrite it: %s; do "
			    "not run git there before you look at it", qrepo,
			    list.data, qpath, name, strerror(errno));
		buf_free(&list);
		free(kept);
	}
	free(qrepo);
	free(qpath);
	strv_free(&gone);
	buf_free(&keep);
}

/* Whether ST is the dir ID. */
static bool
snap_nested_same(const struct snap_dirid *id, const struct stat *st)
{
	return id->ino != 0 && id->dev == st->st_dev && id->ino == st->st_ino;
}

/*
 * The start's record of the git dir FD, or NULL: it and its objects dir
 * both, as the history's end tells one (snap_gitdir_open), so that a dir
 * that took a deleted one's inode number is not taken for it.
 */
static const struct snap_gitdirid *
snap_nested_record(const struct snap_nested *nc, int fd)
{
	struct stat st, ost;
	size_t i;

	if (!nc->ids_known || fstat(fd, &st) == -1 || fstatat(fd, "objects",
	    &ost, AT_SYMLINK_NOFOLLOW) == -1)
		return NULL;
	for (i = 0; i < nc->nids; i++) {
		if (snap_nested_same(&nc->ids[i].dir, &st) &&
		    snap_nested_same(&nc->ids[i].objects, &ost))
			return &nc->ids[i];
	}
	return NULL;
}

/*
 * True if the dir FD is new: changed since the start and not the one of
 * the start (KNOWN; NULL: none). Everything in it is then the session's,
 * whatever its own ctime: a dir renamed into place keeps its files'
 * ctimes, from an earlier session that made them where no check looked
 * (review 9 F3).
 */
static bool
snap_nested_new_dir(const struct snap_nested *nc, int fd,
    const struct snap_dirid *known)
{
	struct stat st;

	if (fstat(fd, &st) == -1)
		return true;
	return snap_nested_changed(&st, nc->since) && (known == NULL ||
	    !snap_nested_same(known, &st));
}

/*
 * A hooks dir the session changed that agentmux cannot list (chmod 0111:
 * git still runs a hook in it by name): moved to the quarantine whole.
 */
static void
snap_nested_hooks_shut(struct snap_nested *nc, const char *qrepo,
    const char *qpath, int gitfd)
{
	char *to, *part = NULL, *qp;
	int err;

	if ((to = snap_nested_keep_tree(nc, gitfd, "hooks", &part)) != NULL)
		strv_addf(nc->messages, "the repository %s had %s/hooks made "
		    "unreadable in the session (git still runs a hook in it by "
		    "name); it was moved to %s", qrepo, qpath, to);
	else {
		err = errno;
		qp = part != NULL ? snap_nested_quote(part) : NULL;
		strv_addf(nc->messages, "the repository %s has %s/hooks made "
		    "unreadable in the session (git still runs a hook in it by "
		    "name), and agentmux could not move it (%s)%s%s: remove it "
		    "before you run git there", qrepo, qpath, strerror(err),
		    qp != NULL ? "; what was copied is in " : "", qp != NULL ?
		    qp : "");
		free(qp);
	}
	free(part);
	free(to);
}

/* Hooks written since the start are moved out: git would run them on the host. */
static void
snap_nested_hooks(struct snap_nested *nc, const char *repo, int gitfd,
    const char *gitdir)
{
	struct dirent *de;
	struct stat st;
	char *to, *qrepo, *qpath, *qname;
	int64_t since;
	DIR *d;
	int fd;

	if (fstatat(gitfd, "hooks", &st, AT_SYMLINK_NOFOLLOW) == -1)
		return;
	qrepo = snap_nested_quote(repo);
	qpath = snap_nested_quote(gitdir);
	if (!S_ISDIR(st.st_mode)) {
		/* A hooks symlink sends git to a dir of the agent's choosing. */
		if ((to = snap_nested_keep(nc, gitfd, "hooks", true)) != NULL)
			strv_addf(nc->messages, "the repository %s had "
			    "%s/hooks as a link elsewhere; it was moved to %s",
			    qrepo, qpath, to);
		free(to);
		goto out;
	}
	fd = openat(gitfd, "hooks", O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (fd == -1 && errno == EACCES && snap_nested_changed(&st,
	    nc->since)) {
		snap_nested_hooks_shut(nc, qrepo, qpath, gitfd);
		goto out;
	}
	if (fd == -1 || (d = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		goto out;
	}
	/* A hooks dir not its git dir's at the start (renamed in): every hook in it is new (review 11 F1). */
	since = snap_nested_new_dir(nc, fd, nc->rec != NULL ? &nc->rec->hooks :
	    NULL) ? INT64_MIN : nc->since;
	while ((de = readdir(d)) != NULL) {
		/* git runs hooks/NAME only: a .sample, a dir, a dot file never. */
		if (de->d_name[0] == '.' || fstatat(fd, de->d_name, &st,
		    AT_SYMLINK_NOFOLLOW) == -1 || S_ISDIR(st.st_mode) ||
		    !snap_nested_changed(&st, since) ||
		    (strlen(de->d_name) > 7 && strcmp(de->d_name +
		    strlen(de->d_name) - 7, ".sample") == 0))
			continue;
		if ((to = snap_nested_keep(nc, fd, de->d_name, true)) == NULL)
			continue;
		qname = snap_nested_quote(de->d_name);
		strv_addf(nc->messages, "the repository %s had a new "
		    "hook %s/hooks/%s, which git would run; it was moved to %s",
		    qrepo, qpath, qname, to);
		free(qname);
		free(to);
	}
	closedir(d);
out:
	free(qrepo);
	free(qpath);
}

/* Sequence dirs git carries on, running what they name (a todo's exec lines, a strategy). */
static const char *const snap_nested_seqs[] = {
	"rebase-merge", "rebase-apply", "sequencer",
};

/*
 * True if NAME in GITFD (ST) or anything directly in it (where git keeps
 * a sequence's files) changed since the start. One past the quarantine's
 * entry limit, or unreadable, counts as changed.
 */
static bool
snap_nested_seq_changed(const struct snap_nested *nc, int gitfd,
    const char *name, const struct stat *st)
{
	struct dirent *de;
	struct stat est;
	bool changed = false;
	DIR *d;
	int fd, n = 0;

	if (snap_nested_changed(st, nc->since) || !S_ISDIR(st->st_mode))
		return snap_nested_changed(st, nc->since);
	fd = openat(gitfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (fd == -1 || (d = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		return true;
	}
	while (!changed && (de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		changed = ++n > SNAP_NESTED_TREE_MAX || fstatat(fd, de->d_name,
		    &est, AT_SYMLINK_NOFOLLOW) == -1 ||
		    snap_nested_changed(&est, nc->since);
	}
	closedir(d);
	return changed;
}

/* The sequence dir NAME of GITDIR (GITFD) renamed to ASIDE there, could not be kept (errno ERR): told. */
static void
snap_nested_seq_stuck(struct snap_nested *nc, const char *qrepo,
    const char *qpath, const char *name, const char *aside, int err,
    const char *part)
{
	char *qp = part != NULL ? snap_nested_quote(part) : NULL;

	strv_addf(nc->messages, "the repository %s had %s/%s, a sequence git "
	    "carries on, made or changed while the session ran; it was "
	    "renamed to %s/%s, where git no longer takes it, but could not be "
	    "moved into the session's quarantine (%s)%s%s: look at it there, "
	    "then remove it", qrepo, qpath, name, qpath, aside, err == E2BIG ? "it is "
	    "larger than agentmux copies: 256 MiB, 10,000 entries or 64 "
	    "levels" : strerror(err), qp != NULL ? "; what was copied before "
	    "it stopped is in " : "", qp != NULL ? qp : "");
	free(qp);
}

/*
 * The sequence NAME (WHAT, carried on by CONT) of a linked worktree's git
 * dir GITDIR of REPO, made or changed while the session ran: left in
 * place (the user's git carries rebases on in their worktrees meanwhile),
 * told in red.
 */
static void
snap_nested_seq_told(struct snap_nested *nc, const char *repo,
    const char *gitdir, const char *name, const char *what, const char *cont)
{
	char *qrepo = snap_nested_quote(repo), *qpath = snap_nested_quote(gitdir);

	strv_addf(nc->messages, "the repository %s has %s in progress (%s/%s, a "
	    "linked worktree's) made or changed while the session ran: it was "
	    "left in place, for it may be yours; '%s' there runs the commands "
	    "its todo list or options name, so read them first", qrepo, what,
	    qpath, name, cont);
	free(qpath);
	free(qrepo);
}

/*
 * A rebase, am, cherry-pick or revert left in progress in the git dir
 * GITFD of REPO and made or changed while the session ran (review 8 F4):
 * the user's 'git rebase --continue' there would run the exec lines the
 * jail wrote into its todo, or the strategy it named. It is renamed out
 * of git's way, then moved to the quarantine (with MOVE; else left in
 * place), told.
 */
static void
snap_nested_sequences(struct snap_nested *nc, const char *repo, int gitfd,
    const char *gitdir, bool move)
{
	const char *what, *cont;
	char aside[96], *to, *part, *qrepo, *qpath;
	struct stat st;
	uint32_t r[2];
	size_t i;

	for (i = 0; i < nitems(snap_nested_seqs); i++) {
		if (fstatat(gitfd, snap_nested_seqs[i], &st,
		    AT_SYMLINK_NOFOLLOW) == -1 || !snap_nested_seq_changed(nc,
		    gitfd, snap_nested_seqs[i], &st))
			continue;
		if (!snap_plant_seq_named(snap_nested_seqs[i], &what, &cont))
			what = cont = "?";
		if (!move) {
			snap_nested_seq_told(nc, repo, gitdir, snap_nested_seqs[i],
			    what, cont);
			continue;
		}
		util_random(r, sizeof r);
		snprintf(aside, sizeof aside, "%s.agentmux-%08x%08x",
		    snap_nested_seqs[i], r[0], r[1]);
		if (renameat2(gitfd, snap_nested_seqs[i], gitfd, aside,
		    RENAME_NOREPLACE) == -1)
			continue;
		qrepo = snap_nested_quote(repo);
		qpath = snap_nested_quote(gitdir);
		if ((to = snap_nested_keep_tree(nc, gitfd, aside, &part)) !=
		    NULL)
			strv_addf(nc->messages, "the repository %s had %s in "
			    "progress (%s/%s) made or changed while the session "
			    "ran: '%s' there would carry it on and run the "
			    "commands its todo list or options name; it was moved "
			    "to %s (if it was yours, read it, then move it back)",
			    qrepo, what, qpath, snap_nested_seqs[i], cont, to);
		else
			snap_nested_seq_stuck(nc, qrepo, qpath,
			    snap_nested_seqs[i], aside, errno, part);
		free(part);
		free(to);
		free(qpath);
		free(qrepo);
	}
}

/*
 * The index of the git dir FD (PATH), if it is new (FRESH) or written
 * since the start, checked as git's checkout reads it
 * (snap_hist_index_refuse: a refused one goes to the quarantine). One of
 * a git dir of the start is left to the history's end, which checks it
 * with the start's config, when there is one.
 */
static void
snap_nested_index(struct snap_nested *nc, int fd, const char *path,
    bool fresh)
{
	struct stat st;
	struct buf config;
	size_t oidlen = 20;
	char *keep, *q, *qq;

	if (fstatat(fd, "index", &st, AT_SYMLINK_NOFOLLOW) == -1 ||
	    !S_ISREG(st.st_mode) || (!fresh && !snap_nested_changed(&st,
	    nc->since)) || (!fresh && nc->ids_index && nc->rec != NULL))
		return;
	/* Its id length as the user's git will read it: the config is defused by now. */
	buf_init(&config);
	if (path_read_beneath(fd, "config", SNAP_NESTED_MAX, &config) == 0 &&
	    config.data != NULL)
		oidlen = snap_hist_oidlen_text(config.data, config.len);
	buf_free(&config);
	if (path_mkdir_p(nc->quarantine, 0700) == -1 ||
	    (keep = snap_nested_free_name(nc->quarantine, &nc->n, "index",
	    "")) == NULL) {
		q = snap_nested_quote(path);
		qq = snap_nested_quote(nc->quarantine);
		strv_addf(nc->messages, "the index of %s could not be checked: "
		    "the session's quarantine %s cannot hold it (%s); do not "
		    "run 'git checkout' there before 'git reset'", q, qq,
		    strerror(errno));
		free(qq);
		free(q);
		return;
	}
	snap_hist_index_refuse(fd, path, oidlen, NULL, nc->quarantine, keep +
	    strlen(nc->quarantine) + 1, nc->messages);
	free(keep);
}

/* Hooks of a core.hooksPath dir told by name, at most. */
#define SNAP_NESTED_HOOKS_TOLD 16

/*
 * The dir a nested repository's config (in GITFD) names by core.hooksPath,
 * relative to the project, if it lies in it (relative paths from the
 * repository's work tree WT, "" for the project's top); NULL if none.
 */
static char *
snap_nested_hooks_path_rel(struct snap_nested *nc, int gitfd, const char *wt)
{
	char *value = NULL, *abs = NULL, *norm, *rel = NULL;
	struct buf config;
	size_t n = strlen(nc->project);

	buf_init(&config);
	if (path_read_beneath(gitfd, "config", SNAP_NESTED_MAX, &config) == 0)
		value = snap_git_config_get(config.data, config.len,
		    "core.hookspath");
	if (value != NULL) {
		if (value[0] == '/')
			abs = xstrdup(value);
		else if (strncmp(value, "~/", 2) == 0)
			abs = xprintf("%s/%s", path_home(), value + 2);
		else
			abs = xprintf("%s%s%s/%s", nc->project, wt[0] != '\0' ?
			    "/" : "", wt, value);
	}
	if (abs != NULL) {
		norm = snap_nested_normal(abs);
		if (strncmp(norm, nc->project, n) == 0 && norm[n] == '/')
			rel = xstrdup(norm + n + 1);
		free(norm);
	}
	free(abs);
	free(value);
	buf_free(&config);
	return rel;
}

/*
 * Hooks made or changed while the session ran in the dir a nested
 * repository's core.hooksPath names in the project (review 11 F9: the
 * user's next commit there ran the one the session rewrote): told in red,
 * by name. They are files of the project, which a diff shows and undo
 * takes back, so they are not moved.
 */
static void
snap_nested_hooks_path(struct snap_nested *nc, const char *repo, int gitfd,
    const char *rel)
{
	struct strv changed;
	struct dirent *de;
	struct stat st;
	char *wt, *dir, *names, *qrepo, *qdir, *more;
	size_t uncounted = 0;
	int64_t since;
	DIR *d;
	int fd;

	if (strcmp(rel, ".git") != 0 && (strlen(rel) < 5 || strcmp(rel +
	    strlen(rel) - 5, "/.git") != 0))
		return;
	wt = xstrndup(rel, strlen(rel) - (strcmp(rel, ".git") == 0 ? 4 : 5));
	dir = snap_nested_hooks_path_rel(nc, gitfd, wt);
	free(wt);
	if (dir == NULL || (fd = path_open_beneath(nc->projfd, dir, O_RDONLY |
	    O_DIRECTORY, 0)) == -1 || (d = fdopendir(fd)) == NULL) {
		free(dir);
		return;
	}
	/* The dir itself changed (renamed in, a hook added): every hook in it is told. */
	since = fstat(fd, &st) == 0 && snap_nested_changed(&st, nc->since) ?
	    INT64_MIN : nc->since;
	strv_init(&changed);
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.' || fstatat(fd, de->d_name, &st,
		    AT_SYMLINK_NOFOLLOW) == -1 || S_ISDIR(st.st_mode) ||
		    !snap_nested_changed(&st, since) || (strlen(de->d_name) >
		    7 && strcmp(de->d_name + strlen(de->d_name) - 7,
		    ".sample") == 0))
			continue;
		/* Named up to the bound, counted past it: a dir of a million files is not held. */
		if (changed.n < SNAP_NESTED_HOOKS_TOLD)
			strv_add(&changed, de->d_name);
		else
			uncounted++;
	}
	closedir(d);
	if (changed.n > 0) {
		names = snap_quote_names(&changed, SNAP_NESTED_HOOKS_TOLD);
		more = uncounted > 0 ? xprintf(" and %zu more", uncounted) :
		    xstrdup("");
		qrepo = snap_nested_quote(repo);
		qdir = snap_nested_quote(dir);
		strv_addf(nc->messages, "the repository %s runs its hooks from "
		    "%s (its core.hooksPath), where the session made or changed "
		    "%s%s: git runs them at your next commit, checkout or merge "
		    "there; read them first", qrepo, qdir, names, more);
		free(more);
		free(qdir);
		free(qrepo);
		free(names);
	}
	strv_free(&changed);
	free(dir);
}

/*
 * The path in B (a gitdir or commondir file's text) as git takes it: only
 * trailing newlines and returns go (read_gitfile_gently), so a dir named
 * "x\n" in a path is a dir of that name, not where the path ends.
 */
static void
snap_nested_chomp(struct buf *b)
{
	size_t n = b->len;

	while (n > 0 && (b->data[n - 1] == '\n' || b->data[n - 1] == '\r'))
		n--;
	b->data[n] = '\0';
}

/*
 * A commondir made or changed in the session naming a dir outside the
 * project: git reads the config and hooks of the git dir there, which
 * agentmux cannot defuse. It goes to the quarantine.
 */
static void
snap_nested_common_out(struct snap_nested *nc, const char *repo, int fd,
    const char *gitdir, const char *where)
{
	char *to, *qrepo, *qpath, *qwhere;
	struct stat st;

	if (fstatat(fd, "commondir", &st, AT_SYMLINK_NOFOLLOW) == -1 ||
	    !snap_nested_changed(&st, nc->since))
		return;
	qrepo = snap_nested_quote(repo);
	qpath = snap_nested_quote(gitdir);
	qwhere = snap_nested_quote(where);
	if ((to = snap_nested_keep(nc, fd, "commondir", true)) != NULL)
		strv_addf(nc->messages, "the repository %s had %s/commondir "
		    "naming %s, which is not in the project (git would obey "
		    "the config and hooks there); it was moved to %s", qrepo,
		    qpath, qwhere, to);
	else
		strv_addf(nc->messages, "the repository %s has %s/commondir "
		    "naming %s, which is not in the project, and agentmux "
		    "could not move it: %s; do not run git there before you "
		    "look at it", qrepo, qpath, qwhere, strerror(errno));
	free(to);
	free(qwhere);
	free(qpath);
	free(qrepo);
}

/* Defuses the git dir REL (relative to the project) of repository REPO, once. */
static void
snap_nested_gitdir_at(struct snap_nested *nc, const char *repo,
    const char *rel, bool common)
{
	char *path = xprintf("%s/%s", nc->project, rel), *crel;
	struct buf b;
	int64_t since;
	mode_t mode;
	bool fresh, wt;
	int fd;

	/*
	 * The project's own git dir is the user's: the jail kept its config
	 * and hooks read-only, and a .git file pointing there is no reason to
	 * touch what the user changed there meanwhile.
	 */
	if ((nc->own_git && strcmp(rel, ".git") == 0) ||
	    strv_contains(&nc->done, rel) ||
	    (fd = path_open_beneath(nc->projfd, rel, O_RDONLY | O_DIRECTORY,
	    0)) == -1) {
		free(path);
		return;
	}
	strv_add(&nc->done, rel);
	/*
	 * A git dir not of the start: everything in it is the session's. Not
	 * the project's linked worktrees' (.git/worktrees/NAME): the user's
	 * git and other sessions make them and carry their rebases on while
	 * this one runs.
	 */
	wt = nc->own_git && strncmp(rel, ".git/worktrees/", 15) == 0;
	since = nc->since;
	nc->rec = snap_nested_record(nc, fd);
	if ((fresh = !wt && snap_nested_new_dir(nc, fd, nc->rec != NULL ?
	    &nc->rec->dir : NULL)))
		nc->since = INT64_MIN;
	snap_nested_config(nc, repo, fd, path, "config");
	snap_nested_config(nc, repo, fd, path, "config.worktree");
	snap_nested_hooks(nc, repo, fd, path);
	if (!nc->own_git || strcmp(rel, ".git") != 0)
		snap_nested_hooks_path(nc, repo, fd, rel);
	/* A linked worktree's git dir (a commondir): the user's own rebase may be going on there (review 11 F5). */
	if (!wt)
		snap_nested_sequences(nc, repo, fd, path, faccessat(fd,
		    "commondir", F_OK, AT_SYMLINK_NOFOLLOW) == -1);
	snap_nested_index(nc, fd, path, fresh);
	nc->since = since;
	nc->rec = NULL;
	/* A commondir sends git to another git dir's config and hooks. */
	buf_init(&b);
	if (!common && snap_nested_read(fd, "commondir", &b, &mode) == 0 &&
	    b.data != NULL) {
		snap_nested_chomp(&b);
		crel = snap_nested_inside(nc, path, b.data);
		if (crel != NULL)
			snap_nested_gitdir_at(nc, repo, crel, true);
		else
			snap_nested_common_out(nc, repo, fd, path, b.data);
		free(crel);
	}
	buf_free(&b);
	close(fd);
	free(path);
}

char *
snap_nested_inside(struct snap_nested *nc, const char *base,
    const char *where)
{
	char *abs, *real;
	size_t n = strlen(nc->project);

	abs = where[0] == '/' ? xstrdup(where) : xprintf("%s/%s", base, where);
	real = realpath(abs, NULL);
	free(abs);
	/* Outside the project (or nowhere): NULL; the caller decides. */
	if (real == NULL || strncmp(real, nc->project, n) != 0 ||
	    real[n] != '/') {
		free(real);
		return NULL;
	}
	abs = xstrdup(real + n + 1);
	free(real);
	return abs;
}

void
snap_nested_gitdir(struct snap_nested *nc, const char *repo, const char *rel)
{
	snap_nested_gitdir_at(nc, repo, rel, false);
}

/* The dir DIR ("": the project's own) opened, or -1. */
static int
snap_nested_opendir(struct snap_nested *nc, const char *dir)
{
	if (dir[0] == '\0')
		return openat(nc->projfd, ".", O_RDONLY | O_DIRECTORY |
		    O_CLOEXEC);
	return path_open_beneath(nc->projfd, dir, O_RDONLY | O_DIRECTORY, 0);
}

/* Where the .git (a file or a link) in DFD sends git, as written; NULL: nowhere. */
static char *
snap_nested_dotgit_to(int dfd, const struct stat *st)
{
	char target[PATH_MAX], *to = NULL;
	struct buf b;
	mode_t mode;
	ssize_t n;

	if (S_ISLNK(st->st_mode)) {
		n = readlinkat(dfd, ".git", target, sizeof target - 1);
		if (n <= 0)
			return NULL;
		target[n] = '\0';
		return xstrdup(target);
	}
	buf_init(&b);
	if (snap_nested_read(dfd, ".git", &b, &mode) == 0 && b.data != NULL) {
		snap_nested_chomp(&b);
		if (strncmp(b.data, "gitdir: ", 8) == 0 && b.data[8] != '\0')
			to = xstrdup(b.data + 8);
	}
	buf_free(&b);
	return to;
}

/*
 * A .git made or changed in the session naming a git dir outside the
 * project (the session's overlay copy of a config dir, whose host path
 * the jail reads in /proc/self/mountinfo), or one not there yet: the
 * host's git would obey that dir's config and hooks, which agentmux can
 * neither see nor defuse. The .git goes to the quarantine, unfollowed.
 */
static void
snap_nested_dotgit_out(struct snap_nested *nc, const char *rel, int dfd,
    const struct stat *st, const char *where)
{
	char *to, *q, *qwhere;

	q = snap_nested_quote(rel);
	qwhere = snap_nested_quote(where);
	if ((to = snap_nested_keep(nc, dfd, ".git", true)) != NULL)
		strv_addf(nc->messages, "%s was made or changed in the session "
		    "as a %s naming the git dir %s, which is not in the "
		    "project (git would obey its config and hooks); it was "
		    "moved to %s", q, S_ISLNK(st->st_mode) ? "link" : "file",
		    qwhere, to);
	else
		strv_addf(nc->messages, "%s was made or changed in the session "
		    "as a %s naming the git dir %s, which is not in the "
		    "project, and agentmux could not move it: %s; remove it "
		    "before you run git there", q, S_ISLNK(st->st_mode) ?
		    "link" : "file", qwhere, strerror(errno));
	free(to);
	free(qwhere);
	free(q);
}

/* Tells of the link LINK on the way from the .git REL to WHERE: moved to TO (NULL: it could not be). */
static void
snap_nested_swapped_told(struct snap_nested *nc, const char *rel,
    const char *where, const char *link, const char *to)
{
	char *q = snap_nested_quote(rel), *qw = snap_nested_quote(where);
	char *ql = snap_nested_quote(link);

	if (to != NULL)
		strv_addf(nc->messages, "%s, there before the session, names the "
		    "git dir %s, and the way there goes through %s, a link made "
		    "or changed in the session that leads out of the project "
		    "(git would obey the config and hooks there); the link was "
		    "moved to %s", q, qw, ql, to);
	else
		strv_addf(nc->messages, "%s, there before the session, names the "
		    "git dir %s, and the way there goes through %s, a link made "
		    "or changed in the session that leads out of the project, "
		    "and agentmux could not move it: %s; remove it before you "
		    "run git there", q, qw, ql, strerror(errno));
	free(ql);
	free(qw);
	free(q);
}

/*
 * A .git there before the session, unchanged, naming a git dir the way to
 * which goes through a link the session made or changed (`gitdir:
 * sub/real`, and `sub` swapped for a link out of the project): git would
 * follow it to a config and hooks agentmux cannot defuse. The way is read
 * component by component, that link never followed (snap_plant_where);
 * if it leads out of the project, or nowhere, the link goes to the
 * quarantine and it is told. True if so.
 */
static bool
snap_nested_swapped(struct snap_nested *nc, const char *rel, const char *dir,
    const char *repo, const char *where)
{
	char *path, *link = NULL, *real = NULL, *to = NULL, *name, *parent;
	enum snap_plant_where w;
	int fd, saved;

	path = where[0] == '/' || dir[0] == '\0' ? xstrdup(where) :
	    xprintf("%s/%s", dir, where);
	w = snap_plant_where(nc->project, nc->projfd, path, nc->since, &link);
	free(path);
	/* A link of the session's leading back into the project: defused there. */
	if (w != SNAP_PLANT_NEW_LINK ||
	    (real = snap_nested_inside(nc, repo, where)) != NULL) {
		free(real);
		free(link);
		return false;
	}
	name = strrchr(link, '/') != NULL ? strrchr(link, '/') + 1 : link;
	parent = name == link ? xstrdup("") : xstrndup(link,
	    (size_t)(name - link - 1));
	if ((fd = snap_nested_opendir(nc, parent)) != -1) {
		to = snap_nested_keep(nc, fd, name, true);
		saved = errno;
		close(fd);
		errno = saved;
	}
	snap_nested_swapped_told(nc, rel, where, link, to);
	free(to);
	free(parent);
	free(link);
	return true;
}

void
snap_nested_own_dotgit(struct snap_nested *nc, const char *rel)
{
	struct stat st;
	char *where;
	int dfd;

	if (snap_nested_lstat(nc, rel, &st) == -1 || S_ISDIR(st.st_mode) ||
	    snap_nested_changed(&st, nc->since) ||
	    (dfd = snap_nested_opendir(nc, "")) == -1)
		return;
	if ((where = snap_nested_dotgit_to(dfd, &st)) != NULL)
		snap_nested_swapped(nc, rel, "", nc->project, where);
	free(where);
	close(dfd);
}

void
snap_nested_dotgit(struct snap_nested *nc, const char *rel)
{
	char *repo, *dir, *gitdir = NULL, *where;
	struct stat st;
	int dfd;

	if (snap_nested_lstat(nc, rel, &st) == -1)
		return;
	dir = strrchr(rel, '/') != NULL ? xstrndup(rel, (size_t)(strrchr(rel,
	    '/') - rel)) : xstrdup("");
	repo = dir[0] != '\0' ? xprintf("%s/%s", nc->project, dir) :
	    xstrdup(nc->project);
	if (S_ISDIR(st.st_mode))
		gitdir = xstrdup(rel);
	else if ((dfd = snap_nested_opendir(nc, dir)) != -1) {
		/* "gitdir: PATH" or a link, relative to the dir the .git is in. */
		if ((where = snap_nested_dotgit_to(dfd, &st)) != NULL &&
		    (snap_nested_changed(&st, nc->since) ||
		    !snap_nested_swapped(nc, rel, dir, repo, where)) &&
		    (gitdir = snap_nested_inside(nc, repo, where)) == NULL &&
		    snap_nested_changed(&st, nc->since))
			snap_nested_dotgit_out(nc, rel, dfd, &st, where);
		free(where);
		close(dfd);
	}
	if (gitdir != NULL)
		snap_nested_gitdir(nc, repo, gitdir);
	free(gitdir);
	free(repo);
	free(dir);
}

char *
snap_nested_gitfile(const char *dir, struct buf *b)
{
	char *abs, *norm;

	/* A NUL ends the path, as it does for git. */
	if (b->data == NULL || b->len < 8 || strncmp(b->data, "gitdir: ",
	    8) != 0)
		return NULL;
	/* As git reads it: only trailing newlines and returns go. */
	while (b->len > 8 && (b->data[b->len - 1] == '\n' ||
	    b->data[b->len - 1] == '\r'))
		b->data[--b->len] = '\0';
	abs = b->data[8] == '/' ? xstrdup(b->data + 8) : xprintf("%s/%s", dir,
	    b->data + 8);
	norm = snap_nested_normal(abs);
	free(abs);
	return norm;
}

/* A submodule's git dir GITDIR: in PROJECT's .git/modules, a dir reached from PROJFD without a link. */
static bool
snap_nested_module_dir(int projfd, const char *project, const char *gitdir)
{
	char *mods = xprintf("%s/.git/modules/", project);
	size_t n = strlen(mods);
	bool ok;
	int fd;

	ok = strncmp(gitdir, mods, n) == 0 && gitdir[n] != '\0';
	free(mods);
	if (!ok || (fd = path_open_beneath(projfd, gitdir + strlen(project) +
	    1, O_RDONLY | O_DIRECTORY, 0)) == -1)
		return false;
	close(fd);
	return true;
}

char *
snap_nested_gitdir_of(const char *project, const char *rel)
{
	char *dotgit = xprintf("%s/.git", rel), *dir, *gitdir = NULL;
	struct stat st;
	struct buf b;
	int projfd, fd = -1;

	buf_init(&b);
	if ((projfd = open(project, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) != -1)
		fd = path_open_beneath(projfd, dotgit, O_PATH | O_NOFOLLOW, 0);
	if (fd != -1 && fstat(fd, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			gitdir = xprintf("%s/%s", project, dotgit);
		else if (S_ISREG(st.st_mode) &&
		    snap_hist_read(projfd, dotgit, &b, 4096) == 0) {
			dir = xprintf("%s/%s", project, rel);
			gitdir = snap_nested_gitfile(dir, &b);
			free(dir);
			if (gitdir != NULL && !snap_nested_module_dir(projfd,
			    project, gitdir)) {
				free(gitdir);
				gitdir = NULL;
			}
		}
	}
	if (fd != -1)
		close(fd);
	if (projfd != -1)
		close(projfd);
	buf_free(&b);
	free(dotgit);
	return gitdir;
}

/*
 * The core.worktree the config text B sets (git's last; no include
 * followed: one could name a FIFO), or NULL. Caller frees.
 */
static char *
snap_nested_core_worktree(const struct buf *b)
{
	return snap_git_config_get(b->data, b->len, "core.worktree");
}

char *
snap_nested_module_worktree(const char *project, const char *rel)
{
	char *cfg = xprintf("%s/config", rel), *gitdir, *v = NULL, *abs;
	char *norm = NULL, *back, *wt = NULL;
	size_t n = strlen(project);
	struct buf b;
	int projfd;

	buf_init(&b);
	/* Its config read as a regular file beneath the project, no link followed. */
	if ((projfd = open(project, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) !=
	    -1 && snap_hist_read(projfd, cfg, &b, 64 * 1024) == 0)
		v = snap_nested_core_worktree(&b);
	if (projfd != -1)
		close(projfd);
	gitdir = xprintf("%s/%s", project, rel);
	if (v != NULL) {
		abs = v[0] == '/' ? xstrdup(v) : xprintf("%s/%s", gitdir, v);
		norm = snap_nested_normal(abs);
		free(abs);
	}
	/* Only a work tree in the project whose .git names this dir back. */
	if (norm != NULL && strncmp(norm, project, n) == 0 && norm[n] == '/' &&
	    norm[n + 1] != '\0') {
		back = snap_nested_gitdir_of(project, norm + n + 1);
		if (back != NULL && strcmp(back, gitdir) == 0)
			wt = xstrdup(norm + n + 1);
		free(back);
	}
	free(norm);
	free(gitdir);
	free(v);
	free(cfg);
	buf_free(&b);
	return wt;
}
