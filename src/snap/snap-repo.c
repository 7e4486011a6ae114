/*
 * Where snapshots are written: agentmux's own repository for the project,
 * in the data dir, whatever the project is; the project's own git dir is
 * only read, as hostile input.
 */
#include <sys/file.h>
#include <sys/sendfile.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "snap/snap-int.h"

extern char **environ;

/* The most agentmux reads of a file the project's git dir holds (info/exclude, HEAD, a ref). */
#define SNAP_REPO_READ_MAX (1024 * 1024)
/* How long git may take on the project's own git dir, which may hold anything. */
#define SNAP_REPO_PROJECT_TIMEOUT 60

/*
 * What every git agentmux runs may take of memory (RLIMIT_DATA: its heap
 * and private maps; the packs and files it maps to read are not counted).
 * What git reads may be the jail's, and small input can mean huge memory:
 * a 298-byte pack of deltas made index-pack build one 4 GiB object (4.4 GB
 * of memory), one more level makes 64 GiB; a ref a live session made a
 * link to /dev/zero has git for-each-ref read without end (7.6 GB in 5 s
 * here). Each would take the host's memory before its time runs out. A
 * real repository needs far less: git deltifies no blob over
 * core.bigFileThreshold (512 MiB) and streams bigger ones, and index-pack
 * holds a base and a result per thread (three at most) beside its 96 MiB
 * delta cache: about 3.2 GiB at the worst. snap_git_mem is the tests' hook.
 */
#define SNAP_GIT_MEM ((uint64_t)4 << 30)
uint64_t snap_git_mem = SNAP_GIT_MEM;

/*
 * Settings for every git command agentmux runs. They keep snapshots raw
 * (no line-ending conversion), keep the user's hooks, pager, signing key,
 * fsmonitor daemon and automatic gc out of it, and write loose objects
 * at zlib's fastest level (git's own default for them: the objects a
 * repack leaves loose, unreachable ones, may be a sparse file's); the
 * commands that hash the work tree store theirs (SNAP_GIT_STREAM). The
 * index is a stat cache that must see every change: ctime is trusted (a
 * forged mtime leaves it), and nothing may mark entries as unchanged or
 * out of the work tree. A repack keeps inside the memory every git is
 * given (SNAP_GIT_MEM): by default each of its threads (one a core) may
 * hold ten objects of up to 512 MiB to find deltas, where the window's
 * bound lets it hold one such (six 100 MiB files failed a 600 MiB bound
 * without it, and passed with 64m; twelve 400 MiB ones took 5.8 GB, and
 * 1.5 GB with 256m). Three threads, index-pack's own default where there
 * are three cores or more (a setting of the user's would lift it): a
 * repack then holds about 2.3 GiB at the worst, index-pack 3.2 GiB.
 */
static const char *const snap_git_config[][2] = {
	{ "core.hooksPath", "/dev/null" },
	{ "core.autocrlf", "false" },
	{ "core.safecrlf", "false" },
	{ "core.symlinks", "true" },
	{ "core.fileMode", "true" },
	{ "core.fsmonitor", "false" },
	{ "core.splitIndex", "false" },
	{ "core.untrackedCache", "false" },
	{ "core.trustctime", "true" },
	{ "core.checkStat", "default" },
	{ "core.ignoreStat", "false" },
	{ "core.sparseCheckout", "false" },
	{ "index.sparse", "false" },
	{ "feature.manyFiles", "false" },
	{ "core.logAllRefUpdates", "false" },
	{ "core.looseCompression", "1" },
	{ "core.quotePath", "false" },
	{ "core.pager", "cat" },
	{ "gc.auto", "0" },
	{ "maintenance.auto", "false" },
	{ "advice.addEmbeddedRepo", "false" },
	{ "advice.detachedHead", "false" },
	{ "commit.gpgSign", "false" },
	{ "submodule.recurse", "false" },
	{ "diff.external", "" },
	{ "pack.windowMemory", "256m" },
	{ "pack.threads", "3" },
};

/*
 * Attributes of the own repository, where info/attributes outranks every
 * .gitattributes in the tree: no text conversion, filter, ident or
 * encoding, so a snapshot holds the bytes on disk and undo writes them
 * back; and no diff driver or -diff, so an attribute in the project cannot
 * hide a change from `agentmux diff` or run a textconv program.
 */
const char snap_raw_attributes[] =
    "* -text -eol -crlf -filter -ident -working-tree-encoding !diff\n";

static const char *const snap_empty_trees[][2] = {
	{ "sha1", "4b825dc642cb6eb9a060e54bf8d69288fbee4904" },
	{ "sha256", "6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321" },
};

static const char *const snap_empty_blobs[][2] = {
	{ "sha1", "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391" },
	{ "sha256", "473a0f4c3be8a93681a267e3b1e9a7dcda1185436fe141f7749120a303721813" },
};

static const char *
snap_repo_format_id(const char *const (*v)[2], size_t n, const char *format)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (strcmp(format, v[i][0]) == 0)
			return v[i][1];
	}
	return v[0][1];
}

const char *
snap_repo_empty_tree(struct snap_repo *r)
{
	return snap_repo_format_id(snap_empty_trees, nitems(snap_empty_trees),
	    r->format);
}

const char *
snap_repo_empty_blob(struct snap_repo *r)
{
	return snap_repo_format_id(snap_empty_blobs, nitems(snap_empty_blobs),
	    r->format);
}

/* The caller's environment without GIT_* (a GIT_DIR there must not redirect us). */
static void
snap_env_clean(struct strv *env, bool keep_locale)
{
	char **e;

	strv_init(env);
	for (e = environ; *e != NULL; e++) {
		if (strncmp(*e, "GIT_", 4) == 0 ||
		    strncmp(*e, "GLIBC_TUNABLES=", 15) == 0)
			continue;
		if (!keep_locale && (strncmp(*e, "LC_ALL=", 7) == 0 ||
		    strncmp(*e, "LANGUAGE=", 9) == 0))
			continue;
		strv_add(env, *e);
	}
	if (!keep_locale)
		strv_add(env, "LC_ALL=C");
}

static void
snap_env_common(struct strv *env)
{
	size_t i;

	strv_add(env, "GIT_TERMINAL_PROMPT=0");
	strv_add(env, "GIT_OPTIONAL_LOCKS=0");
	strv_add(env, "GIT_NO_REPLACE_OBJECTS=1");
	strv_add(env, "GIT_LITERAL_PATHSPECS=1");
	strv_add(env, "GIT_AUTHOR_NAME=agentmux");
	strv_add(env, "GIT_AUTHOR_EMAIL=agentmux@localhost");
	strv_add(env, "GIT_COMMITTER_NAME=agentmux");
	strv_add(env, "GIT_COMMITTER_EMAIL=agentmux@localhost");
	/*
	 * git allocates and frees a buffer per object it writes; glibc gives
	 * the top of the heap back each time (brk), which costs more than
	 * the hashing on a VM. Keeping it spares that.
	 */
	strv_add(env, "GLIBC_TUNABLES=glibc.malloc.trim_threshold=268435456:"
	    "glibc.malloc.top_pad=67108864");
	strv_addf(env, "GIT_CONFIG_COUNT=%zu", nitems(snap_git_config));
	for (i = 0; i < nitems(snap_git_config); i++) {
		strv_addf(env, "GIT_CONFIG_KEY_%zu=%s", i, snap_git_config[i][0]);
		strv_addf(env, "GIT_CONFIG_VALUE_%zu=%s", i,
		    snap_git_config[i][1]);
	}
}

static void
snap_repo_envs(struct snap_repo *r)
{
	struct strv *e;
	int i;

	for (i = 0; i < SNAP_NENV; i++) {
		e = &r->env[i];
		strv_free(e);
		snap_env_clean(e, i == SNAP_ENV_SHOW);
		snap_env_common(e);
		if (i == SNAP_ENV_PROJECT) {
			if (r->projgit != NULL)
				strv_addf(e, "GIT_DIR=%s", r->projgit);
			continue;
		}
		strv_addf(e, "GIT_DIR=%s", r->gitdir);
		strv_addf(e, "GIT_WORK_TREE=%s", r->worktree);
		strv_addf(e, "GIT_INDEX_FILE=%s", r->index);
	}
}

int
snap_copy_fd(int in, int out)
{
	ssize_t n;

	for (;;) {
		n = sendfile(out, in, NULL, 1 << 30);
		if (n == 0)
			return 0;
		if (n == -1 && errno != EINTR)
			return -1;
	}
}

/*
 * Copies keep the source's times: git trusts an index entry's stat data
 * only if the file is older than the index file itself ("racy git"), so
 * a copy of an index must look as old as the original, or a file changed
 * in the same second as the index was written would pass as unchanged.
 */
int
snap_copy_file(const char *src, const char *dst, char **cause)
{
	struct timespec times[2];
	struct stat sb;
	int in, out, rc = -1;

	if ((in = open(src, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) == -1 ||
	    fstat(in, &sb) == -1) {
		*cause = xprintf("cannot read %s: %s", src, strerror(errno));
		if (in != -1)
			close(in);
		return -1;
	}
	times[0] = sb.st_atim;
	times[1] = sb.st_mtim;
	out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
	    0600);
	if (out != -1 && snap_copy_fd(in, out) == 0 && futimens(out, times) == 0)
		rc = 0;
	else
		*cause = xprintf("cannot write %s: %s", dst, strerror(errno));
	close(in);
	if (out != -1)
		close(out);
	return rc;
}

/*
 * Writes PATH if its content is not TEXT already: a rename of a temporary
 * file, so git never reads half of it. No fsync: these are rewritten
 * before they are used.
 */
static int
snap_write_if_changed(const char *path, const char *text, char **cause)
{
	struct buf b;
	char *tmp;
	int same, fd, rc = -1;

	buf_init(&b);
	same = buf_read_file(&b, path) == 0 && strcmp(b.data != NULL ?
	    b.data : "", text) == 0;
	buf_free(&b);
	if (same)
		return 0;
	tmp = xprintf("%s.tmp.%ld", path, (long)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
	    0600);
	if (fd != -1 && util_write_all(fd, text, strlen(text)) == 0 &&
	    close(fd) == 0 && (fd = -1, rename(tmp, path) == 0))
		rc = 0;
	else {
		*cause = xprintf("cannot write %s: %s", path, strerror(errno));
		if (fd != -1)
			close(fd);
		unlink(tmp);
	}
	free(tmp);
	return rc;
}

/* The own repository's dir name: the project's base name and a hash of its path. */
char *
snap_repo_path(const char *worktree, char **cause)
{
	const char *base = strrchr(worktree, '/');
	uint64_t h = 1469598103934665603ULL;
	char name[40], *data, *path;
	size_t i;

	if ((data = path_data_dir(cause)) == NULL)
		return NULL;
	for (i = 0; worktree[i] != '\0'; i++)
		h = (h ^ (unsigned char)worktree[i]) * 1099511628211ULL;
	base = base != NULL && base[1] != '\0' ? base + 1 : "root";
	for (i = 0; i < sizeof name - 1 && base[i] != '\0'; i++) {
		unsigned char c = (unsigned char)base[i];

		name[i] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '_' ? (char)c : '_';
	}
	name[i < 24 ? i : 24] = '\0';
	path = xprintf("%s/shadow/%s-%016llx", data, name,
	    (unsigned long long)h);
	free(data);
	return path;
}

/* VALUE as a git config file holds it: quoted, its quotes, backslashes and controls escaped. */
static void
snap_repo_config_value(struct buf *b, const char *value)
{
	const char *v;

	buf_addc(b, '"');
	for (v = value; *v != '\0'; v++) {
		if (*v == '"' || *v == '\\') {
			buf_addc(b, '\\');
			buf_addc(b, *v);
		} else if (*v == '\n')
			buf_adds(b, "\\n");
		else if (*v == '\t')
			buf_adds(b, "\\t");
		else if (*v == '\b')
			buf_adds(b, "\\b");
		else
			buf_addc(b, *v);
	}
	buf_adds(b, "\"\n");
}

/*
 * What git init finds of the file system of DIR, for the config it
 * writes there: whether a file's executable bit can be changed, a
 * symbolic link made, and whether names differ by case only.
 */
static void
snap_repo_probe(const char *dir, bool *filemode, bool *symlinks,
    bool *icase)
{
	struct stat a, b;
	char *p;
	int fd;

	*filemode = *symlinks = false;
	p = xprintf("%s/agentmux-probe-XXXXXX", dir);
	if ((fd = mkostemp(p, O_CLOEXEC)) != -1) {
		*filemode = fstat(fd, &a) == 0 && fchmod(fd, a.st_mode ^
		    S_IXUSR) == 0 && fstat(fd, &b) == 0 && a.st_mode !=
		    b.st_mode;
		close(fd);
		unlink(p);
		*symlinks = symlink("testing", p) == 0 && lstat(p, &a) == 0 &&
		    S_ISLNK(a.st_mode);
		unlink(p);
	}
	free(p);
	p = xprintf("%s/HeAd", dir);
	*icase = access(p, F_OK) == 0;
	free(p);
}

/*
 * Makes R's own repository as git init --template= --object-format=sha1
 * would with R's worktree as GIT_WORK_TREE (no git need start): HEAD,
 * the config, the objects' and refs' dirs; then the empty blob (an entry
 * whose file cannot be read is recorded as it). Made again over a start
 * an earlier process left half done. -1 with *CAUSE.
 */
static int
snap_repo_create(struct snap_repo *r, char **cause)
{
	static const char *const dirs[] = { "objects", "objects/info",
	    "objects/pack", "refs", "refs/heads", "refs/tags" };
	bool filemode, symlinks, icase;
	char *p, hex[2 * SNAP_PACK_OID + 1];
	struct buf conf;
	size_t i;
	int rc;

	for (i = 0; i < nitems(dirs); i++) {
		p = xprintf("%s/%s", r->gitdir, dirs[i]);
		rc = mkdir(p, 0700);
		free(p);
		if (rc == -1 && errno != EEXIST) {
			*cause = xprintf("cannot create the snapshot repository "
			    "%s: %s/%s: %s", r->gitdir, r->gitdir, dirs[i],
			    strerror(errno));
			return -1;
		}
	}
	p = xprintf("%s/HEAD", r->gitdir);
	rc = snap_write_if_changed(p, "ref: refs/heads/master\n", cause);
	free(p);
	if (rc == -1)
		return -1;
	snap_repo_probe(r->gitdir, &filemode, &symlinks, &icase);
	buf_init(&conf);
	buf_printf(&conf, "[core]\n\trepositoryformatversion = 0\n"
	    "\tfilemode = %s\n\tbare = false\n\tworktree = ",
	    filemode ? "true" : "false");
	snap_repo_config_value(&conf, r->worktree);
	if (!symlinks)
		buf_adds(&conf, "\tsymlinks = false\n");
	if (icase)
		buf_adds(&conf, "\tignorecase = true\n");
	p = xprintf("%s/config", r->gitdir);
	rc = snap_write_if_changed(p, conf.data, cause);
	free(p);
	buf_free(&conf);
	if (rc == -1)
		return -1;
	return snap_repo_write_object(r->gitdir, "blob", "", 0, hex, cause);
}

/*
 * Makes (once) the own repository (snap_repo_create), our attributes,
 * and a marker naming the project, written last: without it, the next
 * open makes the repository again.
 */
static int
snap_repo_init(struct snap_repo *r, bool use, char **cause)
{
	char *p;
	int rc;

	if (path_mkdir_p(r->gitdir, 0700) == -1) {
		*cause = xprintf("cannot create %s: %s", r->gitdir,
		    strerror(errno));
		return -1;
	}
	p = xprintf("%s/agentmux-project", r->gitdir);
	/*
	 * Not synced, as git init syncs nothing: lost to a crash of the
	 * machine, the repository is made again over what is there.
	 */
	if (access(p, F_OK) != 0 && (snap_repo_create(r, cause) == -1 ||
	    snap_write_if_changed(p, r->worktree, cause) == -1)) {
		free(p);
		return -1;
	}
	/* Its time says when it was last used (gc spares recent ones). */
	if (use)
		utimensat(AT_FDCWD, p, NULL, 0);
	free(p);
	p = xprintf("%s/info", r->gitdir);
	path_mkdir_p(p, 0700);
	free(p);
	p = xprintf("%s/info/attributes", r->gitdir);
	rc = snap_write_if_changed(p, snap_raw_attributes, cause);
	free(p);
	return rc;
}

/* The git dir a ".git" file names ("gitdir: PATH", relative to DIR); caller frees. */
static char *
snap_repo_gitfile(int dirfd, const char *dir)
{
	struct buf b;
	char *path = NULL, *nl, *real;

	buf_init(&b);
	if (path_read_beneath(dirfd, ".git", 4096, &b) == -1 ||
	    b.data == NULL || strncmp(b.data, "gitdir: ", 8) != 0) {
		buf_free(&b);
		return NULL;
	}
	if ((nl = strchr(b.data, '\n')) != NULL)
		*nl = '\0';
	path = b.data[8] == '/' ? xstrdup(b.data + 8) : xprintf("%s/%s", dir,
	    b.data + 8);
	buf_free(&b);
	real = path_real(path);
	free(path);
	return real;
}

/* A linked worktree's git dir names where its refs live (commondir); else it is its own. */
static char *
snap_repo_commondir(const char *gitdir)
{
	struct buf b;
	char *path, *nl, *real;
	int fd;

	if ((fd = open(gitdir, O_PATH | O_DIRECTORY | O_CLOEXEC)) == -1)
		return xstrdup(gitdir);
	buf_init(&b);
	if (path_read_beneath(fd, "commondir", 4096, &b) == -1 ||
	    b.data == NULL) {
		close(fd);
		buf_free(&b);
		return xstrdup(gitdir);
	}
	close(fd);
	if ((nl = strchr(b.data, '\n')) != NULL)
		*nl = '\0';
	path = b.data[0] == '/' ? xstrdup(b.data) : xprintf("%s/%s", gitdir,
	    b.data);
	buf_free(&b);
	real = path_real(path);
	free(path);
	return real != NULL ? real : xstrdup(gitdir);
}

/*
 * The project of REAL: the nearest directory from it up that holds .git
 * (a dir, or a file naming the git dir), as git and the jail find it;
 * outside git, REAL itself. Nothing here runs git.
 */
static void
snap_repo_locate(struct snap_repo *r, const char *real)
{
	char *cur = xstrdup(real), *slash;
	struct stat st;
	int fd;

	for (;;) {
		fd = open(*cur == '\0' ? "/" : cur, O_PATH | O_DIRECTORY |
		    O_CLOEXEC);
		if (fd != -1 && fstatat(fd, ".git", &st, AT_SYMLINK_NOFOLLOW) ==
		    0)
			break;
		if (fd != -1)
			close(fd);
		fd = -1;
		if (*cur == '\0')
			break;
		slash = strrchr(cur, '/');
		*slash = '\0';   /* "/x" becomes "", which stands for / */
	}
	if (fd == -1) {
		r->worktree = xstrdup(real);
		free(cur);
		return;
	}
	r->worktree = *cur == '\0' ? xstrdup("/") : xstrdup(cur);
	if (S_ISDIR(st.st_mode))
		r->projgit = xprintf("%s/.git", *cur == '\0' ? "" : cur);
	else if (S_ISREG(st.st_mode))
		r->projgit = snap_repo_gitfile(fd, r->worktree);
	close(fd);
	free(cur);
	if (r->projgit != NULL) {
		r->projcommon = snap_repo_commondir(r->projgit);
		r->projindex = xprintf("%s/index", r->projgit);
	}
}

int
snap_repo_live_excludes(struct snap_repo *r, const struct config *cf,
    char **text, char **cause)
{
	struct buf b, ex;
	char *p;
	size_t i;
	int fd, rc;

	/* Without a config (a job that adds nothing), what is there stays. */
	if (r->projgit == NULL && cf == NULL)
		return 0;
	buf_init(&b);
	if (r->projgit == NULL) {
		buf_adds(&b, "# Written by agentmux from [snapshots] exclude.\n");
		for (i = 0; cf != NULL && i < cf->snapshots.excludes.n; i++)
			buf_printf(&b, "%s\n", cf->snapshots.excludes.v[i]);
	} else {
		buf_adds(&b, "# The project's info/exclude, read by agentmux.\n");
		buf_init(&ex);
		fd = open(r->projcommon, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fd != -1 && path_read_beneath(fd, "info/exclude",
		    SNAP_REPO_READ_MAX, &ex) == -1 && errno != ENOENT)
			log_debug("not using %s/info/exclude: %s", r->projcommon,
			    strerror(errno));
		else if (ex.data != NULL) {
			buf_add(&b, ex.data, strlen(ex.data));
			if (b.data[b.len - 1] != '\n')
				buf_addc(&b, '\n');
		}
		if (fd != -1)
			close(fd);
		buf_free(&ex);
	}
	p = xprintf("%s/info/exclude", r->gitdir);
	rc = snap_write_if_changed(p, b.data, cause);
	free(p);
	if (rc == 0 && text != NULL)
		*text = buf_steal(&b);
	buf_free(&b);
	return rc;
}

/* Sets up the private dir and environments once the repository is known. */
static int
snap_repo_finish(struct snap_repo *r, const char *tag, char **cause)
{
	const char *rt;

	if ((rt = path_runtime_dir_need(cause)) == NULL)
		return -1;
	r->private = xprintf("%s/snap-%s", rt, tag);
	r->index = xprintf("%s/index", r->private);
	if (path_mkdir_p(r->private, 0700) == -1) {
		*cause = xprintf("cannot create %s: %s", r->private,
		    strerror(errno));
		return -1;
	}
	r->seed = xprintf("%s/index", r->gitdir);
	r->format = xstrdup("sha1");
	r->umask = (int)util_user_umask();
	snap_repo_envs(r);
	return 0;
}

static struct snap_repo *
snap_repo_new(void)
{
	struct snap_repo *r = xcalloc(1, sizeof *r);

	r->umask = -1;
	return r;
}

/* The temporary file of a loose object in DIR (made if a prune took it); -1 with errno. */
static int
snap_repo_object_tmp(const char *dir, char **tmp)
{
	int fd, tries;

	for (tries = 0; tries < 2; tries++) {
		if (mkdir(dir, 0700) == -1 && errno != EEXIST)
			return -1;
		*tmp = xprintf("%s/tmp_obj_XXXXXX", dir);
		if ((fd = mkostemp(*tmp, O_CLOEXEC)) != -1)
			return fd;
		free(*tmp);
		*tmp = NULL;
		/* A prune's rmdir between the two: once more. */
		if (errno != ENOENT)
			return -1;
	}
	return -1;
}

int
snap_repo_write_object(const char *gitdir, const char *type,
    const void *data, size_t len, char *hex, char **cause)
{
	unsigned char md[EVP_MAX_MD_SIZE], *raw, *z;
	unsigned int mdlen = 0;
	uLongf zlen;
	char *dir, *path, *tmp = NULL;
	int hl, fd = -1, rc = -1, error;
	size_t rawlen;

	hl = snprintf(NULL, 0, "%s %zu", type, len) + 1;
	rawlen = (size_t)hl + len;
	raw = xmalloc(rawlen);
	snprintf((char *)raw, (size_t)hl, "%s %zu", type, len);
	if (len > 0)
		memcpy(raw + hl, data, len);
	zlen = compressBound((uLong)rawlen);
	z = xmalloc(zlen);
	if (EVP_Digest(raw, rawlen, md, &mdlen, EVP_sha1(), NULL) != 1 ||
	    mdlen != SNAP_PACK_OID || compress2(z, &zlen, raw, (uLong)rawlen, Z_BEST_SPEED) != Z_OK) {
		*cause = xprintf("cannot write a %s into %s: hashing or "
		    "compressing it failed", type, gitdir);
		free(raw);
		free(z);
		return -1;
	}
	free(raw);
	snap_pack_hex(md, hex);
	dir = xprintf("%s/objects/%.2s", gitdir, hex);
	path = xprintf("%s/%s", dir, hex + 2);
	if ((fd = snap_repo_object_tmp(dir, &tmp)) == -1 ||
	    util_write_all(fd, z, zlen) == -1 || fchmod(fd, 0400) == -1) {
		error = errno;
		goto fail;
	}
	rc = close(fd);
	fd = -1;
	if (rc == -1) {
		error = errno;
		goto fail;
	}
	/* There already (the same bytes, by its id): its time freshened, as git does. */
	if (link(tmp, path) == -1 && (errno != EEXIST ||
	    utimensat(AT_FDCWD, path, NULL, AT_SYMLINK_NOFOLLOW) == -1)) {
		error = errno;
		goto fail;
	}
	goto out;
fail:
	rc = -1;
	*cause = xprintf("cannot write a %s into %s: %s", type, dir,
	    strerror(error));
out:
	if (fd != -1)
		close(fd);
	if (tmp != NULL)
		unlink(tmp);
	free(tmp);
	free(path);
	free(dir);
	free(z);
	return rc;
}

/* What CF's [limits] disk_reserve keeps free of the disk snapshots are written to. */
static void
snap_repo_limits(struct snap_repo *r, const struct config *cf)
{
	if (cf == NULL)
		return;
	r->reserve = cf->limits.disk_reserve;
	r->reserve_pct = cf->limits.disk_reserve_pct;
}

struct snap_repo *
snap_repo_open(const char *dir, const struct config *cf, const char *tag,
    char **cause)
{
	struct snap_repo *r = snap_repo_new();
	char *real;

	if ((real = path_real(dir)) == NULL) {
		*cause = xprintf("cannot use %s: %s", dir, strerror(errno));
		goto fail;
	}
	if (strchr(real, '\n') != NULL) {
		*cause = xprintf("cannot snapshot %s: its path has a newline",
		    real);
		goto fail;
	}
	snap_repo_locate(r, real);
	if ((r->gitdir = snap_repo_path(r->worktree, cause)) == NULL ||
	    snap_repo_init(r, true, cause) == -1 ||
	    snap_repo_live_excludes(r, cf, &r->live_excludes, cause) == -1 ||
	    snap_repo_finish(r, tag, cause) == -1)
		goto fail;
	snap_repo_limits(r, cf);
	free(real);
	return r;
fail:
	free(real);
	snap_repo_free(r);
	return NULL;
}

struct snap_repo *
snap_repo_reopen(const char *gitdir, const char *worktree,
    const struct config *cf, const char *tag, bool use, char **cause)
{
	struct snap_repo *r = snap_repo_new();
	char *p;

	p = xprintf("%s/agentmux-project", gitdir);
	if (access(p, F_OK) != 0) {
		*cause = xprintf("the snapshot repository %s is gone: %s", gitdir,
		    strerror(errno));
		free(p);
		goto fail;
	}
	free(p);
	snap_repo_locate(r, worktree);
	if (strcmp(r->worktree, worktree) != 0) {
		/* The project lost its .git: its own dir is still the project. */
		free(r->worktree);
		free(r->projgit);
		free(r->projcommon);
		free(r->projindex);
		r->projgit = r->projcommon = r->projindex = NULL;
		r->worktree = xstrdup(worktree);
	}
	r->gitdir = xstrdup(gitdir);
	if (snap_repo_init(r, use, cause) == -1 ||
	    snap_repo_live_excludes(r, cf, &r->live_excludes, cause) == -1 ||
	    snap_repo_finish(r, tag, cause) == -1)
		goto fail;
	snap_repo_limits(r, cf);
	snap_repo_borrow_resume(r);
	return r;
fail:
	snap_repo_free(r);
	return NULL;
}

void
snap_repo_worktree_gone(struct snap_repo *r)
{
	size_t n = strlen("GIT_WORK_TREE=");
	char **e;
	int i;

	r->worktree_gone = true;
	/* git refuses a work tree whose parent is gone, even to diff two trees. */
	for (i = 0; i < SNAP_NENV; i++) {
		for (e = r->env[i].v; e != NULL && *e != NULL; e++) {
			if (strncmp(*e, "GIT_WORK_TREE=", n) != 0)
				continue;
			free(*e);
			*e = xprintf("GIT_WORK_TREE=%s", r->gitdir);
		}
	}
}

int
snap_repo_record(struct store *st, int64_t session, struct snap_repo *r,
    char **cause)
{
	return store_snap_repo_add(st, session, r->gitdir, r->worktree, cause);
}

void
snap_repo_free(struct snap_repo *r)
{
	int i;

	if (r == NULL)
		return;
	free(r->worktree);
	free(r->gitdir);
	free(r->format);
	free(r->projgit);
	free(r->projcommon);
	free(r->projindex);
	free(r->private);
	free(r->index);
	free(r->seed);
	free(r->live_excludes);
	free(r->ignore);
	free(r->start_tree);
	free(r->last_commit);
	free(r->last_modes);
	for (i = 0; i < SNAP_NENV; i++)
		strv_free(&r->env[i]);
	free(r);
}

/* Notes the private index as it is now (git replaces the file whenever it writes it). */
static void
snap_repo_note_index(struct snap_repo *r)
{
	if (stat(r->index, &r->synced) == -1)
		memset(&r->synced, 0, sizeof r->synced);
}

int
snap_repo_seed(struct snap_repo *r, char **cause)
{
	char *err = NULL;

	unlink(r->index);
	r->seeded = true;
	if (access(r->seed, R_OK) != 0)
		return 0;
	if (snap_copy_file(r->seed, r->index, &err) == -1) {
		/* Only costs time: everything is hashed afresh. */
		log_debug("%s", err);
		free(err);
		unlink(r->index);
	}
	snap_repo_note_index(r);
	return 0;
}

void
snap_repo_save_index(struct snap_repo *r)
{
	char *tmp, *err = NULL;
	struct stat sb;

	/* Unchanged since it was copied: nothing to save. */
	if (stat(r->index, &sb) == 0 && sb.st_ino == r->synced.st_ino &&
	    sb.st_dev == r->synced.st_dev && sb.st_size == r->synced.st_size &&
	    sb.st_mtim.tv_sec == r->synced.st_mtim.tv_sec &&
	    sb.st_mtim.tv_nsec == r->synced.st_mtim.tv_nsec)
		return;
	tmp = xprintf("%s.agentmux-%ld", r->seed, (long)getpid());
	if (snap_copy_file(r->index, tmp, &err) == 0 &&
	    rename(tmp, r->seed) == 0) {
		free(tmp);
		snap_repo_note_index(r);
		return;
	}
	log_debug("cannot save the index of %s: %s", r->gitdir, err != NULL ?
	    err : strerror(errno));
	free(err);
	unlink(tmp);
	free(tmp);
}

/* The refs of git dir DIR as git reads them (snap_hist_refs); false if it cannot be opened. */
static bool
snap_repo_refs(const char *dir, struct strv *out)
{
	int fd;

	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1) {
		strv_init(out);
		return false;
	}
	snap_hist_refs(fd, out);
	close(fd);
	return true;
}

char *
snap_repo_head(struct snap_repo *r, char **symref)
{
	struct strv head, common;
	const char *v;
	char *oid = NULL;
	size_t i;
	int depth;

	*symref = NULL;
	if (r->projgit == NULL || !snap_repo_refs(r->projgit, &head))
		return NULL;
	/* A linked worktree's HEAD is its own, its refs the common dir's. */
	if (strcmp(r->projgit, r->projcommon) == 0 ||
	    !snap_repo_refs(r->projcommon, &common)) {
		strv_init(&common);
		for (i = 0; i < head.n; i++)
			strv_add(&common, head.v[i]);
	}
	v = snap_hist_value(&head, "HEAD");
	for (depth = 0; v != NULL && strncmp(v, "ref: ", 5) == 0 && depth < 5;
	    depth++) {
		if (*symref == NULL)
			*symref = xstrdup(v + 5);
		v = snap_hist_value(&common, v + 5);
	}
	if (v != NULL && snap_hist_value_ok(v) && strncmp(v, "ref: ", 5) != 0)
		oid = xstrdup(v);
	strv_free(&common);
	strv_free(&head);
	return oid;
}

/* A copy of R's environment WHICH with INDEX as GIT_INDEX_FILE. */
static void
snap_env_with_index(struct snap_repo *r, enum snap_env which,
    const char *index, struct strv *env)
{
	size_t i;

	strv_init(env);
	for (i = 0; i < r->env[which].n; i++) {
		if (strncmp(r->env[which].v[i], "GIT_INDEX_FILE=", 15) == 0)
			strv_addf(env, "GIT_INDEX_FILE=%s", index);
		else
			strv_add(env, r->env[which].v[i]);
	}
}

static void
snap_git_argv(struct strv *argv, const char *const *args)
{
	strv_init(argv);
	strv_add(argv, "git");
	strv_add(argv, "--no-pager");
	for (; *args != NULL; args++)
		strv_add(argv, *args);
}

int
snap_git_status(struct snap_repo *r, enum snap_env which, const char *index,
    const char *const *args, const struct buf *input, struct buf *out,
    struct buf *err, int out_fd, char **cause)
{
	struct proc_opts o;
	struct strv argv, env;
	int st, rc;

	snap_git_argv(&argv, args);
	memset(&o, 0, sizeof o);
	o.data_max = snap_git_mem;
	o.argv = argv.v;
	if (index != NULL) {
		snap_env_with_index(r, which, index, &env);
		o.env = env.v;
	} else
		o.env = r->env[which].v;
	o.dir = r->worktree_gone ? r->gitdir : r->worktree;
	o.out_fd = out_fd;
	o.umask = which == SNAP_ENV_TREE ? r->umask : -1;
	o.timeout = which == SNAP_ENV_PROJECT ? SNAP_REPO_PROJECT_TIMEOUT :
	    r->timeout;
	if (input != NULL) {
		o.input = input->data != NULL ? input->data : "";
		o.inputlen = input->len;
	}
	rc = proc_run(&o, out, err, &st, cause);
	strv_free(&argv);
	if (index != NULL)
		strv_free(&env);
	return rc == -1 ? -1 : st;
}

/* The first line of git's complaint, for a message. */
char *
snap_git_complaint(const char *cmd, const struct buf *err, int st)
{
	const char *s = err->data != NULL ? err->data : "";
	const char *line = s, *nl;

	/* Skip hints and warnings to the first fatal or error line. */
	for (; *s != '\0'; s = nl + 1) {
		if (strncmp(s, "fatal: ", 7) == 0 || strncmp(s, "error: ", 7) == 0) {
			line = s;
			break;
		}
		if ((nl = strchr(s, '\n')) == NULL)
			break;
	}
	nl = strchr(line, '\n');
	if (*line == '\0')
		return xprintf("git %s failed (exit %d)", cmd, st);
	return xprintf("git %s failed: %.*s", cmd, nl != NULL ?
	    (int)(nl - line) : (int)strlen(line), line);
}

int
snap_git(struct snap_repo *r, enum snap_env which, const char *const *args,
    const struct buf *input, struct buf *out, char **cause)
{
	struct buf err;
	int st;

	buf_init(&err);
	st = snap_git_status(r, which, NULL, args, input, out, &err, -1, cause);
	if (st > 0)
		*cause = snap_git_complaint(args[0], &err, st);
	buf_free(&err);
	return st == 0 ? 0 : -1;
}

int
snap_git_fd(struct snap_repo *r, enum snap_env which, const char *const *args,
    int fd, char **cause)
{
	struct buf err;
	int st;

	buf_init(&err);
	st = snap_git_status(r, which, NULL, args, NULL, NULL, &err, fd, cause);
	if (st > 0)
		*cause = snap_git_complaint(args[0], &err, st);
	buf_free(&err);
	return st == 0 ? 0 : -1;
}

int
snap_git_chunks(struct snap_repo *r, enum snap_env which,
    const char *const *args, void (*chunk)(void *, const char *, size_t),
    void *arg, char **cause)
{
	struct proc_opts o;
	struct strv argv;
	struct buf err;
	int st, rc;

	snap_git_argv(&argv, args);
	memset(&o, 0, sizeof o);
	o.data_max = snap_git_mem;
	o.argv = argv.v;
	o.env = r->env[which].v;
	o.dir = r->worktree_gone ? r->gitdir : r->worktree;
	o.out_fd = -1;
	o.umask = -1;
	o.timeout = r->timeout;
	o.chunk = chunk;
	o.chunk_arg = arg;
	buf_init(&err);
	if ((rc = proc_run(&o, NULL, &err, &st, cause)) == 0 && st != 0) {
		*cause = snap_git_complaint(args[0], &err, st);
		rc = -1;
	}
	strv_free(&argv);
	buf_free(&err);
	return rc;
}

static struct proc *
snap_git_spawn(struct event_base *base, struct snap_repo *r,
    enum snap_env which, const char *const *args, const struct buf *input,
    bool input_later, void (*line)(void *, const char *, size_t),
    proc_cb done, void *arg, char **cause)
{
	struct proc_opts o;
	struct proc *p;
	struct strv argv;

	snap_git_argv(&argv, args);
	memset(&o, 0, sizeof o);
	o.data_max = snap_git_mem;
	o.argv = argv.v;
	o.env = r->env[which].v;
	o.dir = r->worktree_gone ? r->gitdir : r->worktree;
	o.out_fd = -1;
	o.umask = which == SNAP_ENV_TREE ? r->umask : -1;
	o.timeout = which == SNAP_ENV_PROJECT ? SNAP_REPO_PROJECT_TIMEOUT :
	    r->timeout;
	o.line = line;
	o.input_later = input_later;
	if (input != NULL) {
		o.input = input->data != NULL ? input->data : "";
		o.inputlen = input->len;
	}
	p = proc_start(base, &o, done, arg, cause);
	strv_free(&argv);
	return p;
}

struct proc *
snap_git_start(struct event_base *base, struct snap_repo *r,
    enum snap_env which, const char *const *args, const struct buf *input,
    void (*line)(void *, const char *, size_t), proc_cb done,
    void *arg, char **cause)
{
	return snap_git_spawn(base, r, which, args, input, false, line, done,
	    arg, cause);
}

struct proc *
snap_git_start_held(struct event_base *base, struct snap_repo *r,
    enum snap_env which, const char *const *args, proc_cb done,
    void *arg, char **cause)
{
	return snap_git_spawn(base, r, which, args, NULL, true, NULL, done, arg,
	    cause);
}

char *
snap_git_error(const char *what, struct proc *p)
{
	return snap_git_complaint(what, proc_err(p), proc_status(p));
}

int
snap_git_plain(const char *gitdir, const char *const *args, char **cause)
{
	return snap_git_plain_io(gitdir, args, NULL, NULL, cause);
}

/* What a git run on GITDIR alone (NULL: outside any, in /) is given: its environment and options. */
static void
snap_git_plain_opts(struct proc_opts *o, struct strv *env, const char *gitdir,
    const struct buf *input)
{
	snap_env_clean(env, false);
	snap_env_common(env);
	if (gitdir != NULL)
		strv_addf(env, "GIT_DIR=%s", gitdir);
	memset(o, 0, sizeof *o);
	o->data_max = snap_git_mem;
	o->env = env->v;
	o->dir = gitdir != NULL ? gitdir : "/";
	o->out_fd = -1;
	o->umask = -1;
	o->timeout = SNAP_REPO_PROJECT_TIMEOUT;
	o->err_max = 64 * 1024;
	if (input != NULL) {
		o->input = input->data != NULL ? input->data : "";
		o->inputlen = input->len;
	}
}

int
snap_git_plain_io(const char *gitdir, const char *const *args,
    const struct buf *input, struct buf *out, char **cause)
{
	struct proc_opts o;
	struct strv env, argv;
	struct buf err;
	int st, rc;

	snap_git_plain_opts(&o, &env, gitdir, input);
	snap_git_argv(&argv, args);
	o.argv = argv.v;
	buf_init(&err);
	rc = proc_run(&o, out, &err, &st, cause);
	if (rc == 0 && st != 0) {
		*cause = snap_git_complaint(args[0], &err, st);
		rc = -1;
	}
	buf_free(&err);
	strv_free(&env);
	strv_free(&argv);
	return rc;
}

/*
 * Starts git with ARGV (argv[0] "git") on BASE, in the repository GITDIR
 * alone (no work tree) or, GITDIR NULL, outside any (in /), with
 * agentmux's settings; INPUT (may be NULL) on its stdin. The loop's
 * version of snap_git_plain_io and snap_git_outside_input.
 */
static struct proc *
snap_git_plain_proc(struct event_base *base, const char *gitdir,
    char *const *argv, const struct buf *input, int out_fd, proc_cb done,
    void *arg, char **cause)
{
	struct proc_opts o;
	struct strv env;
	struct proc *p;

	snap_git_plain_opts(&o, &env, gitdir, input);
	o.argv = argv;
	o.out_fd = out_fd;
	p = proc_start(base, &o, done, arg, cause);
	strv_free(&env);
	return p;
}

struct proc *
snap_git_plain_spawn(struct event_base *base, const char *gitdir,
    char *const *argv, const struct buf *input, proc_cb done, void *arg,
    char **cause)
{
	return snap_git_plain_proc(base, gitdir, argv, input, -1, done, arg,
	    cause);
}

struct proc *
snap_git_plain_start(struct event_base *base, const char *gitdir,
    const char *const *args, const struct buf *input, int out_fd,
    proc_cb done, void *arg, char **cause)
{
	struct strv argv;
	struct proc *p;

	snap_git_argv(&argv, args);
	p = snap_git_plain_proc(base, gitdir, argv.v, input, out_fd, done,
	    arg, cause);
	strv_free(&argv);
	return p;
}

void
snap_env_plain(struct strv *env)
{
	snap_env_clean(env, false);
	snap_env_common(env);
}

int
snap_git_outside(char *const *argv, struct buf *out, struct buf *err,
    int *status, char **cause)
{
	return snap_git_outside_input(argv, NULL, 0, out, err, status, cause);
}

int
snap_git_outside_input(char *const *argv, const char *input, size_t len,
    struct buf *out, struct buf *err, int *status, char **cause)
{
	struct proc_opts o;
	struct strv env;
	int rc;

	snap_env_plain(&env);
	memset(&o, 0, sizeof o);
	o.data_max = snap_git_mem;
	o.argv = argv;
	o.env = env.v;
	o.dir = "/";
	o.out_fd = -1;
	o.umask = -1;
	o.input = input;
	o.inputlen = len;
	rc = proc_run(&o, out, err, status, cause);
	strv_free(&env);
	return rc;
}

char *
snap_git_config_get(const char *text, size_t len, const char *key)
{
	char *argv[] = { "git", "config", "--file", "-", "--no-includes",
	    "--get", (char *)key, NULL };
	char *cause = NULL, *value = NULL;
	struct buf out;
	int status;

	buf_init(&out);
	if (snap_git_outside_input(argv, text != NULL ? text : "", len, &out,
	    NULL, &status, &cause) == 0 && status == 0 && out.data != NULL) {
		out.data[strcspn(out.data, "\n")] = '\0';
		if (out.data[0] != '\0')
			value = xstrdup(out.data);
	}
	free(cause);
	buf_free(&out);
	return value;
}

/* ---- blobs a worktree's start snapshot borrowed, not yet copied ---- */

#define SNAP_REPO_BORROW "agentmux-borrow"
/* Its list is read up to this much (a hex id and a newline per file). */
#define SNAP_REPO_BORROW_MAX (256ULL << 20)

int
snap_repo_borrow_begin(struct snap_repo *r, const char *common,
    const struct buf *ids)
{
	char *path = xprintf("%s/%s", r->gitdir, SNAP_REPO_BORROW);
	struct buf b;
	int fd;

	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
	    0600);
	if (fd == -1 || flock(fd, LOCK_EX) == -1) {
		log_warn("cannot write %s", path);
		if (fd != -1)
			close(fd);
		free(path);
		return -1;
	}
	buf_init(&b);
	buf_printf(&b, "%s\n", common);
	buf_add(&b, ids->data, ids->len);
	if (write(fd, b.data, b.len) != (ssize_t)b.len)
		log_warn("cannot write %s", path);
	buf_free(&b);
	free(path);
	return fd;
}

void
snap_repo_borrow_end(struct snap_repo *r, int fd)
{
	char *path;

	if (fd == -1)
		return;
	path = xprintf("%s/%s", r->gitdir, SNAP_REPO_BORROW);
	/* Unlinked while locked: one that waited for the lock finds it gone. */
	unlink(path);
	free(path);
	close(fd);
}

/* Runs git ARGV (WHAT, for a message) on GITDIR alone, stdin from IN_FD or INPUT, stdout onto OUT_FD; 0, -1 with *CAUSE. */
static int
snap_repo_borrow_git(const char *gitdir, const char *what, char *const *argv,
    int in_fd, const char *input, size_t inlen, int out_fd, char **cause)
{
	struct proc_opts o;
	struct strv env;
	struct buf err;
	int st = -1;

	snap_env_plain(&env);
	strv_addf(&env, "GIT_DIR=%s", gitdir);
	memset(&o, 0, sizeof o);
	o.argv = argv;
	o.env = env.v;
	o.dir = gitdir;
	o.out_fd = out_fd;
	o.umask = -1;
	o.data_max = snap_git_mem;
	o.timeout = SNAP_REPO_PROJECT_TIMEOUT * 15;
	o.err_max = 64 * 1024;
	if (in_fd != -1) {
		o.has_in_fd = true;
		o.in_fd = in_fd;
	} else {
		o.input = input;
		o.inputlen = inlen;
	}
	buf_init(&err);
	if (proc_run(&o, NULL, &err, &st, cause) == 0 && st != 0)
		*cause = snap_git_complaint(what, &err, st);
	buf_free(&err);
	strv_free(&env);
	return *cause != NULL ? -1 : st;
}

int
snap_repo_pack_tmpfile(struct snap_repo *r)
{
	char *dir = xprintf("%s/objects/pack", r->gitdir), *tmp;
	int fd, error;

	fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	/* A file system without O_TMPFILE: EOPNOTSUPP, or EISDIR before 3.11. */
	if (fd == -1 && errno != ENOENT && errno != EACCES) {
		tmp = xprintf("%s/tmp_borrow_XXXXXX", dir);
		if ((fd = mkostemp(tmp, O_CLOEXEC)) != -1)
			unlink(tmp);
		free(tmp);
	}
	error = errno;
	free(dir);
	errno = error;
	return fd;
}

/* Copies the blobs of LIST ("COMMON\nID\nID...") from COMMON into R; -1 with *CAUSE. */
static int
snap_repo_borrow_copy(struct snap_repo *r, const struct buf *list,
    char **cause)
{
	static char *pack[] = { "git", "-c", "pack.compression=0",
	    "pack-objects", "--window=0", "--depth=0", "--stdout", "--quiet",
	    NULL };
	static char *index[] = { "git", "index-pack", "--stdin", NULL };
	char *common, *dir, *nl;
	int fd, rc = -1;

	if ((nl = memchr(list->data, '\n', list->len)) == NULL) {
		*cause = xstrdup("its list is cut short");
		return -1;
	}
	common = xstrndup(list->data, (size_t)(nl - list->data));
	dir = xprintf("%s/objects/pack", r->gitdir);
	if ((fd = snap_repo_pack_tmpfile(r)) == -1)
		*cause = xprintf("cannot make a file in %s: %s", dir,
		    strerror(errno));
	else if (snap_repo_borrow_git(common, "pack-objects", pack, -1, nl + 1,
	    list->len - (size_t)(nl + 1 - list->data), fd, cause) == 0 &&
	    lseek(fd, 0, SEEK_SET) == 0 &&
	    snap_repo_borrow_git(r->gitdir, "index-pack", index, fd, NULL, 0,
	    -1, cause) == 0)
		rc = 0;
	if (fd != -1)
		close(fd);
	free(dir);
	free(common);
	return rc;
}

void
snap_repo_borrow_resume(struct snap_repo *r)
{
	char *path = xprintf("%s/%s", r->gitdir, SNAP_REPO_BORROW);
	char *cause = NULL;
	struct stat sb;
	struct buf list;
	int fd;

	buf_init(&list);
	fd = open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	/* Absent, or its agentmux still copies (it holds the lock). */
	if (fd == -1 || flock(fd, LOCK_EX | LOCK_NB) == -1 ||
	    fstat(fd, &sb) == -1 || sb.st_nlink == 0)
		goto out;
	if (!S_ISREG(sb.st_mode) || (uint64_t)sb.st_size >
	    SNAP_REPO_BORROW_MAX || buf_read_fd(&list, fd) == -1 ||
	    list.len == 0)
		cause = xstrdup("it cannot be read");
	else if (snap_repo_borrow_copy(r, &list, &cause) == 0)
		log_info("%s: the blobs a start snapshot took from git's "
		    "checkout are copied in (the agentmux copying them ended "
		    "first)", r->gitdir);
	if (cause != NULL)
		log_warnx("%s: the blobs a start snapshot took from git's "
		    "checkout cannot be copied in, so undo to it cannot restore "
		    "those files: %s", r->gitdir, cause);
	unlink(path);
out:
	if (fd != -1)
		close(fd);
	buf_free(&list);
	free(path);
	free(cause);
}
