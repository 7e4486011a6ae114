/*
 * The pack writer of snap-pack.c, checked by git itself: ids as git
 * hash-object computes them, a pack and .idx that verify-pack and
 * fsck --strict accept, contents that cat-file gives back byte for byte,
 * each content stored once, and nothing left behind by a pack that is
 * not finished.
 */
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "lib/testlib.h"
#include "snap/snap-int.h"

static void
hex(const unsigned char *oid, char *out)
{
	int i;

	for (i = 0; i < SNAP_PACK_OID; i++)
		snprintf(out + 2 * i, 3, "%02x", oid[i]);
}

/* Adds FILE's content as a blob; checks its id against git hash-object's. */
static void
add_file(struct snap_pack *p, const char *file, unsigned char *oid)
{
	char *cause = NULL, *data, *want, got[2 * SNAP_PACK_OID + 1];
	size_t len;
	FILE *f = fopen(file, "rb");

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	len = (size_t)ftell(f);
	rewind(f);
	data = xmalloc(len + 1);
	assert_int_equal(fread(data, 1, len, f), len);
	fclose(f);
	if (snap_pack_add(p, SNAP_PACK_BLOB, data, len, oid, &cause) == -1)
		fail_msg("%s: %s", file, cause);
	hex(oid, got);
	want = test_sh_out("git hash-object --no-filters %s", file);
	want[strcspn(want, "\n")] = '\0';
	assert_string_equal(got, want);
	free(want);
	free(data);
}

static void
test_pack_git(void **state)
{
	const char *files[] = { "empty", "one", "block", "block1", "big",
	    "text" };
	unsigned char oids[6][SNAP_PACK_OID], tree[SNAP_PACK_OID],
	    commit[SNAP_PACK_OID];
	char *cause = NULL, name[64], h[2 * SNAP_PACK_OID + 1], *want;
	struct snap_pack *p;
	struct buf t;
	size_t i;

	/* Stored deflate blocks hold 65535 bytes: sizes around that and many. */
	test_sh_ok("git init -q --bare own.git && : > empty && printf x > one && "
	    "head -c 65535 /dev/urandom > block && head -c 65536 /dev/urandom "
	    "> block1 && head -c 300001 /dev/urandom > big && echo hello > text");
	p = snap_pack_begin("own.git", 8, &cause);
	if (p == NULL)
		fail_msg("%s", cause);
	for (i = 0; i < 6; i++)
		add_file(p, files[i], oids[i]);
	/* A tree of the text, named "a", and a commit of it. */
	buf_init(&t);
	buf_adds(&t, "100644 a");
	buf_add(&t, "", 1);
	buf_add(&t, oids[5], SNAP_PACK_OID);
	assert_int_equal(snap_pack_add(p, SNAP_PACK_TREE, t.data, t.len, tree,
	    &cause), 0);
	buf_free(&t);
	hex(tree, h);
	want = xprintf("tree %s\nauthor a <a@x> 1 +0000\ncommitter a <a@x> 1 "
	    "+0000\n\nm\n", h);
	assert_int_equal(snap_pack_add(p, SNAP_PACK_COMMIT, want,
	    strlen(want), commit, &cause), 0);
	free(want);
	/* Not in place before it is finished. */
	test_sh_ok("! ls own.git/objects/pack/*.idx 2>/dev/null");
	assert_int_equal(snap_pack_finish(p, name, sizeof name, &cause), 0);
	hex(commit, h);
	test_sh_ok("git --git-dir=own.git verify-pack own.git/objects/pack/"
	    "pack-%s.idx", name);
	test_sh_ok("git --git-dir=own.git update-ref refs/heads/m %s && "
	    "git --git-dir=own.git symbolic-ref HEAD refs/heads/m", h);
	test_sh_ok("git --git-dir=own.git fsck --strict --no-dangling 2>&1 | "
	    "{ ! grep .; }");
	test_sh_ok("git --git-dir=own.git ls-tree -r m | grep -q '	a$'");
	test_sh_ok("test \"$(git --git-dir=own.git show m:a)\" = hello");
	test_sh_ok("test \"$(ls own.git/objects/pack | grep -c tmp_)\" = 0");
	for (i = 0; i < 6; i++) {
		hex(oids[i], h);
		test_sh_ok("git --git-dir=own.git cat-file blob %s | cmp - %s",
		    h, files[i]);
	}
}

/*
 * The same content twice (copies of a file, empty files) is stored once:
 * git refuses a pack that holds an object twice ("bad" to verify-pack).
 * The header then counts what was stored, and the checksum is of that.
 */
static void
test_pack_twice(void **state)
{
	unsigned char a[SNAP_PACK_OID], b[SNAP_PACK_OID], c[SNAP_PACK_OID];
	char *cause = NULL, name[64];
	struct snap_pack *p;

	test_sh_ok("git init -q --bare own.git && head -c 200000 /dev/urandom "
	    "> big && cp big big2 && : > e1 && : > e2 && echo x > x");
	p = snap_pack_begin("own.git", 5, &cause);
	assert_non_null(p);
	add_file(p, "big", a);
	add_file(p, "e1", b);
	add_file(p, "big2", c);
	assert_memory_equal(a, c, SNAP_PACK_OID);
	add_file(p, "e2", c);
	assert_memory_equal(b, c, SNAP_PACK_OID);
	add_file(p, "x", c);
	assert_int_equal(snap_pack_finish(p, name, sizeof name, &cause), 0);
	test_sh_ok("git --git-dir=own.git verify-pack own.git/objects/pack/"
	    "pack-%s.idx", name);
	test_sh_ok("test \"$(git --git-dir=own.git count-objects -v | "
	    "grep in-pack)\" = 'in-pack: 3'");
	test_sh_ok("git --git-dir=own.git fsck --strict --no-dangling 2>&1 | "
	    "grep -v '^notice:' | { ! grep .; }");
	test_sh_ok("git --git-dir=own.git cat-file blob $(git hash-object big) "
	    "| cmp - big2");
}

/* More objects than announced, or an abort: no pack, no temporary file. */
static void
test_pack_unfinished(void **state)
{
	unsigned char oid[SNAP_PACK_OID];
	char *cause = NULL;
	struct snap_pack *p;

	test_sh_ok("git init -q --bare own.git");
	p = snap_pack_begin("own.git", 1, &cause);
	assert_non_null(p);
	assert_int_equal(snap_pack_add(p, SNAP_PACK_BLOB, "a", 1, oid, &cause),
	    0);
	assert_int_equal(snap_pack_add(p, SNAP_PACK_BLOB, "a", 1, oid, &cause),
	    0);
	assert_int_equal(snap_pack_add(p, SNAP_PACK_BLOB, "b", 1, oid, &cause),
	    -1);
	assert_non_null(strstr(cause, "more objects than the 1 announced"));
	free(cause);
	snap_pack_abort(p);
	test_sh_ok("test -z \"$(ls own.git/objects/pack)\"");
	/* No pack dir: a clear error. */
	test_sh_ok("rmdir own.git/objects/pack");
	cause = NULL;
	assert_null(snap_pack_begin("own.git", 1, &cause));
	assert_non_null(strstr(cause, "cannot create a pack in"));
	free(cause);
}

/* HEX (40 digits) as an id. */
static void
unhex(const char *hex, unsigned char *oid)
{
	unsigned v;
	int i;

	for (i = 0; i < SNAP_PACK_OID; i++) {
		assert_int_equal(sscanf(hex + 2 * i, "%2x", &v), 1);
		oid[i] = (unsigned char)v;
	}
}

/*
 * Trees as git writes them: the entries of git's own index (ls-files -s)
 * give the root id write-tree gives, over names that sort apart only as
 * git sorts them ("a-b", "a.b", "a/", "a0"), names with a space, a
 * newline and bytes that are not UTF-8, modes of every kind (executable,
 * symlink, a submodule's gitlink), deep and empty files.
 */
static void
test_pack_trees(void **state)
{
	struct snap_pack_entry e[64];
	unsigned char root[SNAP_PACK_OID];
	static char list[65536];
	char *cause = NULL, *out, *s, want[64], got[64], name[64], oidhex[41];
	struct snap_pack *p;
	size_t n = 0, len;
	unsigned mode;
	FILE *f;

	test_sh_ok("git init -q w && cd w && mkdir -p a/b/c 'sp ace' \"$(printf "
	    "'nl\\nx')\" && echo 1 > a-b && echo 2 > a.b && echo 3 > a0 && "
	    "echo 4 > a/b/c/deep && : > a/empty && echo 5 > 'sp ace/f g' && "
	    "echo 6 > \"$(printf 'nl\\nx')/f\" && echo 7 > \"$(printf "
	    "'\\377\\376')\" && echo 8 > x && chmod 755 x && ln -s "
	    "/etc/passwd abs && ln -s ../nowhere a/dangling && "
	    "git add -A && git update-index --add --cacheinfo "
	    "160000,$(git hash-object -t commit --stdin </dev/null "
	    "--literally),sub && git write-tree >../want");
	out = test_sh_out("cd w && git ls-files -s -z | tr '\\0' '\\n' | "
	    "grep -c .");
	assert_true(atoi(out) >= 12);
	free(out);
	/* Each "MODE OID STAGE\tPATH", NUL-terminated. */
	test_sh_ok("cd w && git ls-files -s -z > ../list");
	f = fopen("list", "rb");
	assert_non_null(f);
	len = fread(list, 1, sizeof list - 1, f);
	fclose(f);
	list[len] = '\0';
	for (s = list; s < list + len && n < 64; s += strlen(s) + 1) {
		assert_int_equal(sscanf(s, "%o %40s", &mode, oidhex), 2);
		e[n].mode = mode;
		unhex(oidhex, e[n].oid);
		e[n].path = strchr(s, '\t') + 1;
		n++;
	}
	test_sh_ok("git init -q --bare own.git");
	p = snap_pack_begin("own.git", 64, &cause);
	assert_non_null(p);
	if (snap_pack_trees(p, e, n, root, &cause) == -1)
		fail_msg("%s", cause);
	assert_int_equal(snap_pack_finish(p, name, sizeof name, &cause), 0);
	hex(root, got);
	out = test_sh_out("cat want");
	snprintf(want, sizeof want, "%.40s", out);
	free(out);
	assert_string_equal(got, want);
	/* The trees themselves, as git reads them from the pack. */
	test_sh_ok("git --git-dir=own.git cat-file -p %s:a/b >/dev/null && "
	    "test \"$(git --git-dir=own.git ls-tree -r -z %s | od -c)\" = "
	    "\"$(git -C w ls-tree -r -z %s | od -c)\"", got, got, got);
}

/*
 * The index written with each file's stat data is git's stat cache: git
 * diff-files (which compares stat data only, never content) finds every
 * file clean, and the file is byte for byte the one git add writes.
 * A change shows after, as it would with git's own.
 */
static void
test_pack_index(void **state)
{
	struct snap_pack_entry e[32];
	struct stat sb[32];
	static char list[65536];
	char *cause = NULL, *s, *at, oidhex[41];
	size_t n = 0, len;
	unsigned mode;
	FILE *f;

	/* Old mtimes: git smudges entries as new as the index ("racy"). */
	test_sh_ok("git init -q w && cd w && mkdir -p a/b 'sp ace' && echo 1 > "
	    "a-b && echo 2 > a/b/deep && : > a/empty && echo 3 > 'sp ace/f g' "
	    "&& echo 4 > x && chmod 755 x && ln -s /etc/passwd abs && "
	    "find . -path ./.git -prune -o -exec touch -h -d 2020-01-01 {} + && "
	    "GIT_INDEX_FILE=../git.idx git add -A && "
	    "GIT_INDEX_FILE=../git.idx git ls-files -s -z > ../list");
	f = fopen("list", "rb");
	assert_non_null(f);
	len = fread(list, 1, sizeof list - 1, f);
	fclose(f);
	list[len] = '\0';
	for (s = list; s < list + len && n < 32; s += strlen(s) + 1) {
		assert_int_equal(sscanf(s, "%o %40s", &mode, oidhex), 2);
		e[n].mode = mode;
		unhex(oidhex, e[n].oid);
		e[n].path = strchr(s, '\t') + 1;
		at = xprintf("w/%s", e[n].path);
		assert_int_equal(lstat(at, &sb[n]), 0);
		free(at);
		n++;
	}
	assert_int_equal(n, 6);
	if (snap_pack_index("ours.idx", e, sb, n, &cause) == -1)
		fail_msg("%s", cause);
	test_sh_ok("test ! -e ours.idx.lock && cd w && GIT_INDEX_FILE=../ours.idx "
	    "git diff-files --quiet && cmp ../git.idx ../ours.idx");
	test_sh_ok("cd w && echo more >> a/b/deep && test \"$(GIT_INDEX_FILE="
	    "../ours.idx git diff-files --name-only)\" = a/b/deep");
}

/*
 * A first snapshot's work, end to end: the files git lists (its ignore
 * rules applied), read and stored here, give the tree git add -A and
 * write-tree give, the index git add writes, and a repository fsck
 * --strict accepts. Executables, symlinks (absolute, dangling, out of the
 * tree: stored as links, never followed), empty and large files, names
 * with a space, a newline and non-UTF-8 bytes; ignored files left out.
 */
static void
test_pack_files(void **state)
{
	struct snap_pack_entry e[64];
	struct stat sb[64];
	unsigned char root[SNAP_PACK_OID];
	static char list[65536];
	char *cause = NULL, *paths[64], *out, *s, got[64], name[64];
	struct snap_pack *p;
	size_t n = 0, len;
	FILE *f;
	int wt;

	test_sh_ok("git init -q w && cd w && mkdir -p a/b 'sp ace' "
	    "\"$(printf 'nl\\nx')\" && echo 1 > a-b && echo 2 > a.b && "
	    "echo 3 > a/b/deep && : > a/empty && echo 4 > 'sp ace/f g' && "
	    "echo 5 > \"$(printf 'nl\\nx')/f\" && echo 6 > \"$(printf "
	    "'\\377')\" && echo 7 > x && chmod 755 x && ln -s /etc/passwd abs "
	    "&& ln -s ../../nowhere a/dangling && ln -s ../.. a/out && "
	    "head -c 3000000 /dev/urandom > big && echo '*.log' > .gitignore && "
	    "echo secret > skip.log && "
	    "find . -path ./.git -prune -o -exec touch -h -d 2020-01-01 {} + && "
	    "GIT_INDEX_FILE=../git.idx git add -A && cp ../git.idx ../added.idx "
	    "&& GIT_INDEX_FILE=../git.idx git write-tree > ../want && "
	    "GIT_INDEX_FILE=../none.idx git ls-files -o -z --exclude-standard "
	    "> ../list");
	f = fopen("list", "rb");
	assert_non_null(f);
	len = fread(list, 1, sizeof list - 1, f);
	fclose(f);
	list[len] = '\0';
	for (s = list; s < list + len && n < 64; s += strlen(s) + 1)
		paths[n++] = s;
	assert_int_equal(n, 13);
	test_sh_ok("git init -q --bare own.git");
	wt = open("w", O_RDONLY | O_DIRECTORY);
	assert_true(wt >= 0);
	p = snap_pack_begin("own.git", 64, &cause);
	assert_non_null(p);
	if (snap_pack_files(p, wt, paths, n, e, sb, &cause) != 0 ||
	    snap_pack_trees(p, e, n, root, &cause) == -1 ||
	    snap_pack_finish(p, name, sizeof name, &cause) == -1)
		fail_msg("%s", cause != NULL ? cause : "a file changed");
	close(wt);
	hex(root, got);
	out = test_sh_out("cat want");
	assert_true(strncmp(out, got, 40) == 0);
	free(out);
	if (snap_pack_index("ours.idx", e, sb, n, &cause) == -1)
		fail_msg("%s", cause);
	/* As git add wrote it (write-tree adds its cache of trees). */
	test_sh_ok("cmp added.idx ours.idx");
	test_sh_ok("export GIT_DIR=own.git GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@x "
	    "GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@x; git update-ref "
	    "refs/heads/m $(echo m | git commit-tree %s) && "
	    "git symbolic-ref HEAD refs/heads/m && "
	    "git fsck --strict --no-dangling 2>&1 | { ! grep .; } && "
	    "test \"$(git show m:a/out)\" = ../.. && ! git cat-file -e m:skip.log",
	    got);
}

/* PATHS of the NUL-separated list in FILE, into LIST: how many. */
static size_t
read_list(const char *file, char *list, size_t size, char **paths,
    size_t max)
{
	size_t n = 0, len;
	char *s;
	FILE *f = fopen(file, "rb");

	assert_non_null(f);
	len = fread(list, 1, size - 1, f);
	fclose(f);
	list[len] = '\0';
	for (s = list; s < list + len && n < max; s += strlen(s) + 1)
		paths[n++] = s;
	return n;
}

/*
 * An untracked nested repository is listed by git ls-files -o as "sub/"
 * (a directory, not a file): the writer leaves it to the git path (1),
 * which goes into it, rather than failing the snapshot.
 */
static void
test_pack_nested(void **state)
{
	struct snap_pack_entry e[8];
	struct stat sb[8];
	static char list[4096];
	char *cause = NULL, *paths[8] = { NULL };
	struct snap_pack *p;
	size_t n;
	int wt;

	test_sh_ok("git init -q w && cd w && echo 1 > a && git init -q sub && "
	    "echo 2 > sub/f && git -C sub add f && git -C sub -c user.name=t "
	    "-c user.email=t@x commit -q -m m && "
	    "GIT_INDEX_FILE=../none.idx git ls-files -o -z --exclude-standard "
	    "> ../list");
	n = read_list("list", list, sizeof list, paths, 8);
	assert_int_equal(n, 2);
	assert_string_equal(paths[1], "sub/");
	test_sh_ok("git init -q --bare own.git");
	wt = open("w", O_RDONLY | O_DIRECTORY);
	assert_true(wt >= 0);
	p = snap_pack_begin("own.git", 8, &cause);
	assert_non_null(p);
	if (snap_pack_files(p, wt, paths, n, e, sb, &cause) != 1)
		fail_msg("not left to git: %s", cause != NULL ? cause : "stored");
	assert_null(cause);
	close(wt);
	snap_pack_abort(p);
}

/*
 * The stat check after a read: a file rewritten in place with its size
 * and mtime set back (utimensat) still shows by its ctime, a file
 * replaced by another of the same size and mtime by its inode.
 */
static void
test_pack_unchanged(void **state)
{
	struct stat before, after;
	struct timespec ts[2];
	int fd;

	test_sh_ok("echo aaaa > f && echo bbbb > g && touch -d 2020-01-01 f g");
	assert_int_equal(stat("f", &before), 0);
	assert_int_equal(stat("f", &after), 0);
	assert_true(path_stat_unchanged(&before, &after));
	/* The clock that stamps ctime ticks coarsely. */
	usleep(50000);
	fd = open("f", O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, "cccc", 4, 0), 4);
	ts[0] = before.st_atim;
	ts[1] = before.st_mtim;
	assert_int_equal(futimens(fd, ts), 0);
	close(fd);
	assert_int_equal(stat("f", &after), 0);
	assert_int_equal(after.st_size, before.st_size);
	assert_int_equal(after.st_mtim.tv_sec, before.st_mtim.tv_sec);
	assert_int_equal(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
	assert_false(path_stat_unchanged(&before, &after));
	/* Another file put in its place, with its ctime copied too. */
	test_sh_ok("mv g f");
	assert_int_equal(stat("f", &after), 0);
	after.st_ctim = before.st_ctim;
	assert_int_equal(after.st_mtim.tv_sec, before.st_mtim.tv_sec);
	assert_false(path_stat_unchanged(&before, &after));
}

struct rewriter {
	volatile int stop;
	struct timespec times[2];
};

/* Rewrites "w/f" in place, again and again, setting its mtime back each time. */
static void *
rewrite(void *arg)
{
	struct rewriter *rw = arg;
	unsigned char c = 0;
	int fd = open("w/f", O_WRONLY);

	if (fd == -1)
		return NULL;
	while (!rw->stop) {
		c++;
		if (pwrite(fd, &c, 1, 0) != 1 || futimens(fd, rw->times) == -1)
			break;
		usleep(1000);
	}
	close(fd);
	return NULL;
}

/*
 * A file rewritten while it is read, its size and mtime set back each
 * time, is found changed (1: the git path), never stored torn.
 */
static void
test_pack_rewritten(void **state)
{
	struct snap_pack_entry e[1];
	struct stat sb[1];
	struct rewriter rw = { 0 };
	struct stat st;
	char *cause = NULL, *paths[1] = { "f" };
	struct snap_pack *p;
	pthread_t t;
	int wt, r;

	test_sh_ok("git init -q --bare own.git && mkdir w && head -c 64000000 "
	    "/dev/urandom > w/f");
	assert_int_equal(stat("w/f", &st), 0);
	rw.times[0] = st.st_atim;
	rw.times[1] = st.st_mtim;
	wt = open("w", O_RDONLY | O_DIRECTORY);
	assert_true(wt >= 0);
	p = snap_pack_begin("own.git", 1, &cause);
	assert_non_null(p);
	assert_int_equal(pthread_create(&t, NULL, rewrite, &rw), 0);
	usleep(20000);
	r = snap_pack_files(p, wt, paths, 1, e, sb, &cause);
	rw.stop = 1;
	pthread_join(t, NULL);
	close(wt);
	snap_pack_abort(p);
	if (r != 1)
		fail_msg("a rewritten file was stored: %s", cause != NULL ?
		    cause : "as unchanged");
	assert_null(cause);
}

/* Stores the files of "w" in a pack of own.git: 0, 1 or -1 as snap_pack_files, the pack's name and the entries. */
static int
pack_dir(char **paths, size_t n, struct snap_pack_entry *e, struct stat *sb,
    char *name, size_t namelen, char **cause)
{
	struct snap_pack *p;
	int wt, r;

	if ((wt = open("w", O_RDONLY | O_DIRECTORY)) == -1)
		return -1;
	if ((p = snap_pack_begin("own.git", (uint32_t)n, cause)) == NULL) {
		close(wt);
		return -1;
	}
	r = snap_pack_files(p, wt, paths, n, e, sb, cause);
	close(wt);
	if (r != 0) {
		snap_pack_abort(p);
		return r;
	}
	return snap_pack_finish(p, name, namelen, cause);
}

/* Limits the address space to what is mapped now plus MIB MiB. */
static int
limit_memory(unsigned long long mib)
{
	/* ASan maps terabytes of shadow: the limit is for other builds. */
#ifndef __SANITIZE_ADDRESS__
	struct rlimit rl;
	unsigned long long vm = 0;
	char line[256];
	FILE *f = fopen("/proc/self/status", "r");

	while (f != NULL && fgets(line, sizeof line, f) != NULL)
		if (sscanf(line, "VmSize: %llu kB", &vm) == 1)
			break;
	if (f != NULL)
		fclose(f);
	rl.rlim_cur = rl.rlim_max = (vm + mib * 1024) * 1024;
	if (vm == 0 || setrlimit(RLIMIT_AS, &rl) == -1)
		return -1;
#endif
	return 0;
}

/*
 * A file far larger than the memory agentmux may use (sparse: 1 GiB that
 * takes no disk) is streamed: it packs under an address-space limit of
 * what the process maps already plus 64 MiB, with the id git gives it.
 */
static void
test_pack_large(void **state)
{
	struct snap_pack_entry e[1];
	struct stat sb[1];
	char *cause = NULL, *paths[1] = { "sparse" }, name[64], got[64], *want;
	FILE *f;
	pid_t pid;
	int status;

	test_sh_ok("git init -q --bare own.git && mkdir w && printf head > "
	    "w/sparse && truncate -s 1G w/sparse && printf tail >> w/sparse");
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (limit_memory(64) == -1)
			_exit(3);
		if (pack_dir(paths, 1, e, sb, name, sizeof name, &cause) != 0)
			_exit(4);
		hex(e[0].oid, got);
		f = fopen("id", "w");
		if (f == NULL || fprintf(f, "%s\n", got) < 0 || fclose(f) != 0)
			_exit(5);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("packing a 1 GiB file under a memory limit failed "
		    "(status %#x)", status);
	want = test_sh_out("git hash-object --no-filters w/sparse");
	f = fopen("id", "r");
	assert_non_null(f);
	assert_non_null(fgets(got, sizeof got, f));
	fclose(f);
	assert_string_equal(got, want);
	free(want);
	test_sh_ok("test \"$(git --git-dir=own.git cat-file -s $(cat id))\" = "
	    "$(stat -c %%s w/sparse)");
}

/*
 * Files of one content, streamed, are stored once (the copy written,
 * then taken back, also past what was flushed): git accepts the pack,
 * and files read after a copy are stored right.
 */
static void
test_pack_files_twice(void **state)
{
	struct snap_pack_entry e[8];
	struct stat sb[8];
	char *cause = NULL, *paths[5] = { "a", "b", "c", "d", "e" }, name[64];
	char h[2 * SNAP_PACK_OID + 1];
	size_t i;

	test_sh_ok("git init -q --bare own.git && mkdir w && cd w && head -c "
	    "1000000 /dev/urandom > a && cp a b && echo x > c && cp c d && "
	    "head -c 70000 /dev/urandom > e");
	if (pack_dir(paths, 5, e, sb, name, sizeof name, &cause) != 0)
		fail_msg("%s", cause != NULL ? cause : "a file changed");
	test_sh_ok("git --git-dir=own.git verify-pack own.git/objects/pack/"
	    "pack-%s.idx && test \"$(git --git-dir=own.git count-objects -v | "
	    "grep in-pack)\" = 'in-pack: 3'", name);
	for (i = 0; i < 5; i++) {
		hex(e[i].oid, h);
		test_sh_ok("git --git-dir=own.git cat-file blob %s | cmp - w/%s",
		    h, paths[i]);
	}
}

/*
 * Sparse files are deflated, not stored: 300 MiB of holes take a few
 * hundred KiB of pack, git reads their bytes back exactly, a dense copy
 * of one of them is found to be the same content (laid out apart), and
 * the files stay sparse (they are read, not mapped).
 */
static void
test_pack_sparse(void **state)
{
	struct snap_pack_entry e[8];
	struct stat sb[8];
	char *cause = NULL, *paths[4] = { "a", "b", "c", "d" }, name[64];
	char h[2 * SNAP_PACK_OID + 1];
	size_t i;

	test_sh_ok("git init -q --bare own.git && mkdir w && cd w && "
	    "printf head > a && truncate -s 100M a && printf tail >> a && "
	    "cp --sparse=never a b && echo c > c && truncate -s 100M c && "
	    "head -c 100000 /dev/urandom > d && truncate -s 100M d");
	if (pack_dir(paths, 4, e, sb, name, sizeof name, &cause) != 0)
		fail_msg("%s", cause != NULL ? cause : "a file changed");
	test_sh_ok("git --git-dir=own.git verify-pack own.git/objects/pack/"
	    "pack-%s.idx && test \"$(git --git-dir=own.git count-objects -v | "
	    "grep in-pack)\" = 'in-pack: 3'", name);
	/* b is stored whole (it is dense): 100 MiB, the rest next to nothing. */
	test_sh_ok("test $(stat -c %%s own.git/objects/pack/pack-%s.pack) -lt "
	    "$((100 * 1024 * 1024 + 2 * 1024 * 1024))", name);
	for (i = 0; i < 4; i++) {
		hex(e[i].oid, h);
		test_sh_ok("git --git-dir=own.git cat-file blob %s | cmp - w/%s",
		    h, paths[i]);
	}
	test_sh_ok("test $(stat -c %%b w/a) -lt 64 && test $(stat -c %%b w/c) "
	    "-lt 64 && test $(stat -c %%b w/d) -lt 1024");
}

/* ---- a project's first snapshot, through the writer and through git ---- */

/* A session on DIR in ST (a start snapshot needs one to be recorded). */
static int64_t
first_session(struct store *st, const char *dir)
{
	struct store_session s;
	char *cause = NULL;
	int64_t id;

	memset(&s, 0, sizeof s);
	s.agent = (char *)"shell";
	s.project = (char *)dir;
	s.command = (char *)"[\"true\"]";
	id = store_session_begin(st, &s, &cause);
	if (id <= 0)
		fail_msg("%s", cause);
	return id;
}

/* Takes a KIND snapshot of DIR for SESSION; GIT: through git alone. Returns the debug log. */
static char *
first_take(struct store *st, const char *dir, int64_t session,
    const char *kind, bool git, struct snap_result *res)
{
	struct snap_take_opts o;
	struct snap_repo *r;
	char *cause = NULL, *logtext;
	FILE *lf = tmpfile();

	assert_non_null(lf);
	log_init(lf, LOG_LEVEL_DEBUG);
	if ((r = snap_repo_open(dir, NULL, "first", &cause)) == NULL)
		fail_msg("snap_repo_open: %s", cause);
	memset(&o, 0, sizeof o);
	o.kind = kind;
	o.session = session;
	snap_take_git_only = git;
	if (snap_take_sync(st, r, &o, res, &cause) == -1)
		fail_msg("the %s snapshot of %s failed: %s", kind, dir, cause);
	snap_take_git_only = false;
	snap_repo_free(r);
	log_init(stderr, LOG_LEVEL_WARN);
	logtext = xmalloc(65536);
	rewind(lf);
	logtext[fread(logtext, 1, 65535, lf)] = '\0';
	fclose(lf);
	return logtext;
}

/* Runs the diff (from the start to the work tree) or the undo of SESSION into FILE. */
static void
first_review(struct store *st, int64_t session, bool undo, const char *file)
{
	struct snap_diff_opts d;
	struct snap_undo_opts u;
	char *cause = NULL;
	FILE *f = fopen(file, "w");
	int r;

	assert_non_null(f);
	memset(&d, 0, sizeof d);
	memset(&u, 0, sizeof u);
	d.out_fd = fileno(f);
	u.out = f;
	r = undo ? snap_undo(st, NULL, session, &u, &cause) :
	    snap_diff(st, NULL, session, &d, &cause);
	if (r == -1)
		fail_msg("%s: %s", undo ? "undo" : "diff", cause);
	fclose(f);
}

/*
 * A project's first snapshot taken by agentmux's own writer is the one
 * git's path takes of the same project: the same tree (names git sorts
 * its own way, modes 0600/0755, symlinks never followed, ignored files
 * and empty dirs left out, a tracked file that is ignored kept, one
 * deleted since it was committed left out) and real modes; and every
 * later step over the index the writer wrote gives what git's gives: the
 * next snapshot, the diff and the undo.
 */
static void
test_pack_first_snapshot(void **state)
{
	struct snap_result ra, rb, ea, eb;
	struct store *st;
	char *cause = NULL, *a, *b, *la, *lb;
	int64_t sa, sb;

	test_sh_ok("mkdir a && cd a && git init -q -b main && "
	    "git config user.email t@x && git config user.name t && "
	    "mkdir -p a/b foo build empty/sub conf && echo 1 > a-b && "
	    "echo 2 > a.b && echo 3 > a/b/deep && echo 4 > a0 && echo 5 > ab "
	    "&& echo 6 > foo.txt && echo 7 > foo/x && echo 8 > foo- && "
	    "printf 'build/\\n*.log\\n' > .gitignore && echo kept > kept.log && "
	    "echo gone > gone && git add -A && git add -f kept.log && "
	    "git commit -q -m base && rm gone && "
	    "echo s > conf/.env && chmod 600 conf/.env && chmod 700 conf && "
	    "printf '#!/bin/sh\\n' > run.sh && chmod 755 run.sh && "
	    "ln -s /etc/passwd abs && ln -s ../../nowhere a/dangling && "
	    "ln -s ../.. a/out && echo x > build/out.o && echo l > new.log && "
	    "head -c 300000 /dev/urandom > big && cd .. && cp -a a b");
	a = xprintf("%s/a", test_proj);
	b = xprintf("%s/b", test_proj);
	st = store_open(NULL, &cause);
	assert_non_null(st);
	sa = first_session(st, a);
	sb = first_session(st, b);
	la = first_take(st, a, sa, "start", false, &ra);
	lb = first_take(st, b, sb, "start", true, &rb);
	/* The writer took the first, git the second. */
	if (strstr(la, "checkout hashed them), tree ") == NULL ||
	    strstr(la, "taken by git"))
		fail_msg("not written by agentmux's writer: %s", la);
	assert_null(strstr(lb, "checkout hashed them), tree "));
	assert_string_equal(ra.tree, rb.tree);
	assert_string_equal(ra.modes, rb.modes);
	assert_non_null(strstr(ra.modes, "600 conf/.env"));
	/* The same changes, then the next snapshot over each one's index. */
	test_sh_ok("for d in a b; do (cd $d && echo changed > foo/x && "
	    "chmod 640 conf/.env && rm a0 && echo n > newfile && "
	    "echo i > more.log && chmod 644 run.sh); done");
	free(first_take(st, a, sa, "end", false, &ea));
	free(first_take(st, b, sb, "end", false, &eb));
	assert_string_equal(ea.tree, eb.tree);
	assert_string_equal(ea.modes, eb.modes);
	assert_int_equal(ea.files_changed, eb.files_changed);
	assert_int_equal(ea.files_changed, 4);
	store_session_end(st, sa, "exited", 0, NULL);
	store_session_end(st, sb, "exited", 0, NULL);
	first_review(st, sa, false, "diff.a");
	first_review(st, sb, false, "diff.b");
	test_sh_ok("cmp diff.a diff.b && grep -q changed diff.a");
	first_review(st, sa, true, "undo.a");
	first_review(st, sb, true, "undo.b");
	/* The same lines but for the session's number and start time. */
	test_sh_ok("for f in undo.a undo.b; do sed -E '1d; s/(session|undo) "
	    "[0-9]+/\\1 N/g' $f > $f.n; done && cmp undo.a.n undo.b.n && "
	    "grep -q 'chmod   conf/.env (600, now 640)' undo.a && "
	    "diff -r --no-dereference -x .git a b "
	    "&& (cd a && find . -path ./.git -prune -o -printf '%%m %%y %%p\\n' "
	    "| sort) > m.a && (cd b && find . -path ./.git -prune -o -printf "
	    "'%%m %%y %%p\\n' | sort) > m.b && cmp m.a m.b && "
	    "grep -qx '600 f ./conf/.env' m.a && test \"$(cat a/foo/x)\" = 7 "
	    "&& test -e a/a0 && ! test -e a/newfile");
	snap_result_clear(&ra);
	snap_result_clear(&rb);
	snap_result_clear(&ea);
	snap_result_clear(&eb);
	free(la);
	free(lb);
	free(a);
	free(b);
	store_close(st);
}

/*
 * Names git refuses (".GIT" in any case, NTFS's "git~1" and trailing
 * dots, a link named .gitmodules) are left to git's path: stored by the
 * writer, they would make a tree read-tree cannot read back, and undo to
 * the first snapshot would fail.
 */
static void
test_pack_git_names(void **state)
{
	static const char *lists[] = {
		".GIT/config", "a/.Git/x", "git~1/y", ".git. /z", "b/.git",
		"dir\\name", "c:d",
	};
	struct snap_pack_entry e[2];
	struct stat sb[2];
	char *cause = NULL, *paths[2];
	const char *name;
	struct snap_pack *p;
	size_t i;
	int wt;

	test_sh_ok("mkdir -p w/.GIT w/a/.Git w/git~1 'w/.git. ' w/b && "
	    "echo 1 > w/.GIT/config && echo 1 > w/a/.Git/x && "
	    "echo 1 > w/git~1/y && echo 1 > 'w/.git. /z' && echo 1 > w/b/.git"
	    " && echo 1 > 'w/dir\\name' && echo 1 > w/c:d && echo 1 > w/plain"
	    " && ln -s plain w/.gitmodules && git init -q --bare own.git");
	wt = open("w", O_RDONLY | O_DIRECTORY);
	assert_true(wt >= 0);
	for (i = 0; i < sizeof lists / sizeof *lists + 1; i++) {
		p = snap_pack_begin("own.git", 2, &cause);
		assert_non_null(p);
		paths[0] = (char *)"plain";
		name = i < sizeof lists / sizeof *lists ? lists[i] :
		    ".gitmodules";
		paths[1] = (char *)name;
		if (snap_pack_files(p, wt, paths, 2, e, sb, &cause) != 1)
			fail_msg("%s was not left to git: %s", name,
			    cause != NULL ? cause : "stored");
		assert_null(cause);
		snap_pack_abort(p);
	}
	close(wt);
}

/*
 * A nested repository: the writer leaves the first snapshot to git's
 * path, which goes into it, and the log says so; the tree is git's.
 */
static void
test_pack_first_nested(void **state)
{
	struct snap_result ra, rb;
	struct store *st;
	char *cause = NULL, *a, *b, *la, *lb, *own;
	int64_t sa, sb;

	test_sh_ok("mkdir a && cd a && git init -q && echo 1 > f && "
	    "git init -q sub && echo 2 > sub/g && cd .. && cp -a a b");
	a = xprintf("%s/a", test_proj);
	b = xprintf("%s/b", test_proj);
	st = store_open(NULL, &cause);
	assert_non_null(st);
	sa = first_session(st, a);
	sb = first_session(st, b);
	la = first_take(st, a, sa, "start", false, &ra);
	lb = first_take(st, b, sb, "start", true, &rb);
	if (strstr(la, "taken by git") == NULL)
		fail_msg("the writer did not leave it to git: %s", la);
	assert_string_equal(ra.tree, rb.tree);
	own = snap_repo_path(a, &cause);
	assert_non_null(own);
	test_sh_ok("test \"$(git --git-dir=%s show %s:sub/g)\" = 2", own,
	    ra.tree);
	free(own);
	snap_result_clear(&ra);
	snap_result_clear(&rb);
	free(la);
	free(lb);
	free(a);
	free(b);
	store_close(st);
}

/*
 * The walk to a file's directory refuses a component that is empty, "."
 * or "..": git never lists such a path, but one that did would otherwise
 * reach a file outside the work tree (here "secret", beside it).
 */
static void
test_pack_parent_dots(void **state)
{
	static const char *refused[] = {
		"../secret", "a/../../secret", "a/b/../../../secret", "./a/f",
		"a/./f", "a/..", "a/.", "..", ".", "a//f", "/secret", "a/",
	};
	const char *name;
	struct stat sb;
	size_t i;
	int wt, fd;

	(void)state;
	test_sh_ok("mkdir -p w/a/b && echo 1 > w/a/f && echo 2 > w/top && "
	    "echo hostile > secret");
	wt = open("w", O_RDONLY | O_DIRECTORY);
	assert_true(wt >= 0);
	for (i = 0; i < sizeof refused / sizeof *refused; i++) {
		errno = 0;
		fd = snap_pack_parent(wt, refused[i], &name);
		if (fd != -1)
			fail_msg("%s was walked (to %s)", refused[i], name);
		assert_true(errno == EINVAL || errno == ENOENT);
	}
	fd = snap_pack_parent(wt, "a/f", &name);
	assert_true(fd >= 0 && fd != wt);
	assert_string_equal(name, "f");
	assert_int_equal(fstatat(fd, name, &sb, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISREG(sb.st_mode) && sb.st_size == 2);
	close(fd);
	assert_int_equal(snap_pack_parent(wt, "top", &name), wt);
	assert_string_equal(name, "top");
	close(wt);
}

/* The size of the writer's unfinished pack in own.git; -1 if there is none. */
static off_t
pack_tmp_size(void)
{
	char *out = test_sh_out("for f in own.git/objects/pack/tmp_pack_*; do "
	    "test -f \"$f\" && stat -c %%s \"$f\"; done; true");
	off_t size = *out != '\0' ? (off_t)strtoll(out, NULL, 10) : -1;

	free(out);
	return size;
}

static void
job_never_done(void *arg, int result, const char *tree,
    const struct buf *modes, const struct buf *borrowed, int64_t files,
    const char *cause)
{
	(void)arg;
	(void)borrowed;
	(void)tree;
	(void)modes;
	(void)files;
	fail_msg("the job ended (%d) instead of being stopped: %s", result,
	    cause != NULL ? cause : "");
}

/*
 * The writer's thread holds the clone gate only where it allocates: a
 * jail's clone (which closes the gate) gets in while a 2 GiB file is
 * being stored, not after it; and a stop is seen between its blocks,
 * leaving no pack behind. Before, the gate was held for a whole file.
 */
static void
test_pack_job_gate(void **state)
{
	struct event_base *base = event_base_new();
	struct snap_pack_job *j;
	struct buf list;
	char *cause = NULL;
	off_t at_close, big = 2048LL << 20;
	int i;

	(void)state;
	assert_non_null(base);
	test_sh_ok("git init -q --bare own.git && mkdir w && truncate -s 2G "
	    "w/big");
	buf_init(&list);
	buf_add(&list, "big", 4);
	j = snap_pack_job_start(base, "own.git", "own.idx", "w", &list, NULL,
	    job_never_done, NULL, NULL, &cause);
	buf_free(&list);
	if (j == NULL)
		fail_msg("%s", cause);
	/* Into the big file: a MiB of it is in the pack. */
	for (i = 0; i < 6000 && pack_tmp_size() < (1 << 20); i++)
		usleep(10000);
	assert_true(pack_tmp_size() >= (1 << 20));
	clone_gate_close();
	at_close = pack_tmp_size();
	clone_gate_open();
	if (at_close >= big)
		fail_msg("the gate was had only once the file was stored "
		    "(%lld bytes)", (long long)at_close);
	snap_pack_job_free(j);
	assert_int_equal(pack_tmp_size(), -1);
	test_sh_ok("test ! -e own.idx && test -z \"$(ls own.git/objects/pack)\"");
	event_base_free(base);
}

struct job_out {
	bool over;
	int result;
	char tree[2 * SNAP_PACK_OID + 1];
	struct buf modes;
	struct buf borrowed;
	char *cause;
};

static void
job_over(void *arg, int result, const char *tree, const struct buf *modes,
    const struct buf *borrowed, int64_t files, const char *cause)
{
	struct job_out *o = arg;

	(void)files;
	if (borrowed != NULL)
		buf_add(&o->borrowed, borrowed->data, borrowed->len);
	o->over = true;
	o->result = result;
	if (tree != NULL)
		snprintf(o->tree, sizeof o->tree, "%s", tree);
	if (modes != NULL)
		buf_add(&o->modes, modes->data, modes->len);
	o->cause = cause != NULL ? xstrdup(cause) : NULL;
}

/* The files of w (ls-files' list in LIST) by a job with READERS reading threads into GITDIR. */
static void
job_run_seed(unsigned readers, const char *gitdir, const char *index,
    struct buf *list, const struct snap_pack_seed *seed, struct job_out *o)
{
	struct event_base *base = event_base_new();
	struct snap_pack_job *j;
	char *cause = NULL;

	assert_non_null(base);
	memset(o, 0, sizeof *o);
	buf_init(&o->modes);
	buf_init(&o->borrowed);
	snap_pack_job_readers = readers;
	j = snap_pack_job_start(base, gitdir, index, "w", list, seed, job_over,
	    NULL, o, &cause);
	if (j == NULL)
		fail_msg("%s", cause);
	while (!o->over)
		event_base_loop(base, EVLOOP_ONCE);
	snap_pack_job_readers = 1;
	event_base_free(base);
}

static void
job_run(unsigned readers, const char *gitdir, const char *index,
    struct buf *list, struct job_out *o)
{
	job_run_seed(readers, gitdir, index, list, NULL, o);
}

/*
 * The job's files read and hashed ahead by one or two reading threads
 * give the pack, index, tree and modes the writer alone gives, byte for
 * byte: small files, one content in many files (stored once), empty and
 * executable files, links (never followed), a file too large to be read
 * ahead and a sparse one (both streamed by the writer), a dense copy of
 * the sparse one after it, 1,500 files in 30 directories (the slots go
 * round many times); git accepts the pack and the index.
 */
static void
test_pack_job_readers(void **state)
{
	struct job_out o[3];
	struct buf list;
	char *out, *s, *save, gitdir[32], index[32];
	unsigned k;

	(void)state;
	test_sh_ok("mkdir w && cd w && for d in $(seq 0 29); do mkdir d$d; "
	    "for f in $(seq 0 49); do head -c $(( (d * 50 + f) * 37 %% 20000 "
	    ")) /dev/urandom > d$d/f$f; done; done && echo same > d3/same && "
	    "cp d3/same d7/same && cp d3/same top && : > empty && "
	    "printf '#!/bin/sh\n' > run && chmod 755 run && "
	    "ln -s /etc/passwd abs && ln -s d3/same rel && "
	    "head -c 300000 /dev/urandom > big && cp big big2 && "
	    "truncate -s 200000 a-sparse && head -c 200000 /dev/zero > "
	    "z-dense && for k in 0 1 2; do git init -q --bare ../own$k.git; "
	    "done");
	out = test_sh_out("cd w && find . -type f -o -type l | wc -l");
	assert_int_equal(atoi(out), 1500 + 11);
	free(out);
	buf_init(&list);
	out = test_sh_out("cd w && find . -type f -o -type l | sed 's|^./||'");
	for (s = strtok_r(out, "\n", &save); s != NULL;
	    s = strtok_r(NULL, "\n", &save))
		buf_add(&list, s, strlen(s) + 1);
	free(out);
	for (k = 0; k < 3; k++) {
		snprintf(gitdir, sizeof gitdir, "own%u.git", k);
		snprintf(index, sizeof index, "own%u.idx", k);
		job_run(k, gitdir, index, &list, &o[k]);
		if (o[k].result != 0)
			fail_msg("%u readers: %d, %s", k, o[k].result,
			    o[k].cause != NULL ? o[k].cause : "");
	}
	for (k = 1; k < 3; k++) {
		assert_string_equal(o[k].tree, o[0].tree);
		assert_int_equal(o[k].modes.len, o[0].modes.len);
		assert_memory_equal(o[k].modes.data, o[0].modes.data,
		    o[0].modes.len);
		test_sh_ok("cmp own0.idx own%u.idx && test \"$(ls "
		    "own0.git/objects/pack)\" = \"$(ls own%u.git/objects/pack)\" "
		    "&& for f in own0.git/objects/pack/*; do cmp $f "
		    "own%u.git/objects/pack/${f##*/} || exit 1; done", k, k, k);
	}
	test_sh_ok("git --git-dir=own1.git fsck --strict --no-progress && "
	    "git --git-dir=own1.git cat-file blob %s:z-dense | cmp - w/z-dense "
	    "&& git --git-dir=own1.git cat-file blob %s:d3/same | cmp - w/top "
	    "&& test \"$(git --git-dir=own1.git cat-file -p %s | grep -c "
	    "'^120000')\" = 2 && GIT_INDEX_FILE=$PWD/own2.idx git --git-dir=own2.git "
	    "--work-tree=w diff-files --quiet",
	    o[1].tree, o[1].tree, o[1].tree);
	for (k = 0; k < 3; k++) {
		buf_free(&o[k].modes);
		buf_free(&o[k].borrowed);
		free(o[k].cause);
	}
	buf_free(&list);
}

/* Sets the id of NAME's entry in the index file PATH (v2 or v3) to HEX, its checksum made good again. */
static const char forge_py[] =
    "import hashlib, struct, sys\n"
    "path, name, new = sys.argv[1], sys.argv[2].encode(), sys.argv[3]\n"
    "d = bytearray(open(path, 'rb').read())\n"
    "n = struct.unpack('>I', d[8:12])[0]\n"
    "p = 12\n"
    "for i in range(n):\n"
    "    flags = struct.unpack('>H', d[p + 60:p + 62])[0]\n"
    "    q = p + 62 + (2 if flags & 0x4000 else 0)\n"
    "    e = d.index(b'\\0', q)\n"
    "    if bytes(d[q:e]) == name:\n"
    "        d[p + 40:p + 60] = bytes.fromhex(new)\n"
    "    p += (e + 1 - p + 7) // 8 * 8\n"
    "d[-20:] = hashlib.sha1(bytes(d[:-20])).digest()\n"
    "open(path, 'wb').write(d)\n";

/* The files of w, as git ls-files -c -o would list them, into LIST. */
static void
seed_list(struct buf *list)
{
	char *out, *s, *save;

	buf_init(list);
	out = test_sh_out("cd w && find . \\( -type f -o -type l \\) ! -name .git "
	    "| sed 's|^./||'");
	for (s = strtok_r(out, "\n", &save); s != NULL;
	    s = strtok_r(NULL, "\n", &save))
		buf_add(list, s, strlen(s) + 1);
	free(out);
}

/* Runs a job over w with SEED (NULL: none) into a new own repository K; the tree it gives. */
static char *
seed_job(unsigned k, const struct snap_pack_seed *seed, struct job_out *o)
{
	char gitdir[32], index[32];
	struct buf list;

	snprintf(gitdir, sizeof gitdir, "own%u.git", k);
	snprintf(index, sizeof index, "own%u.idx", k);
	test_sh_ok("git init -q --bare %s", gitdir);
	seed_list(&list);
	job_run_seed(k % 3, gitdir, index, &list, seed, o);
	buf_free(&list);
	if (o->result != 0)
		fail_msg("job %u: %d, %s", k, o->result,
		    o->cause != NULL ? o->cause : "");
	return o->tree;
}

static size_t
seed_lines(const struct buf *b)
{
	size_t i, n = 0;

	for (i = 0; i < b->len; i++)
		n += b->data[i] == '\n';
	return n;
}

static void
seed_out_free(struct job_out *o)
{
	buf_free(&o->modes);
	buf_free(&o->borrowed);
	free(o->cause);
}

/* INDEX read, its files under w looked at, before any job (the job takes it). */
static struct snap_seed *
seed_read_early(const char *index)
{
	struct snap_seed *sd;
	char *cause = NULL;

	sd = snap_seed_read(index, "w", &cause);
	if (sd == NULL)
		fail_msg("snap_seed_read: %s", cause);
	snap_seed_look_all(sd, NULL);
	return sd;
}

/*
 * A new worktree's first snapshot takes the ids of the files git's
 * checkout wrote from the index it wrote, and reads no such file: the
 * same tree as reading them all, the blobs left out of the pack (their
 * ids borrowed), the stat cache good. What it does not believe: an index
 * whose entries do not make the tree (one id changed, checksum made good:
 * nothing is taken), a file changed since (same size, mtime put back:
 * read), entries cached as late as the index was written (git's racy
 * ones: read), files an attribute may have made git convert (read), a
 * link (read), a .gitattributes in the tree (nothing taken).
 */
static void
test_pack_job_seed(void **state)
{
	struct snap_pack_seed seed;
	struct job_out o[11];
	struct strv conv;
	char *tree, *want, *s, *oid;
	unsigned i;
	FILE *f;

	(void)state;
	memset(o, 0, sizeof o);
	memset(&seed, 0, sizeof seed);
	strv_init(&conv);
	test_sh_ok("git init -q -b main src && cd src && git config user.email "
	    "t@x && git config user.name t && mkdir d0 d1 && for f in $(seq 0 "
	    "299); do echo file $f > d$((f %% 2))/f$f; done && printf "
	    "'#!/bin/sh\\n' > run && chmod 755 run && ln -s d0/f0 lnk && "
	    "git add . && git commit -qm c && git worktree add -q ../w && "
	    "echo extra > ../w/extra && sleep 0.1 && touch .git/worktrees/w/index");
	want = test_sh_out("git -C src rev-parse HEAD^{tree}");
	want[strcspn(want, "\n")] = '\0';
	for (i = 0; i < SNAP_PACK_OID; i++)
		sscanf(want + 2 * i, "%2hhx", &seed.tree[i]);
	seed.index = "src/.git/worktrees/w/index";
	seed.converted = NULL;

	/* Every file read: the tree to compare with. */
	tree = xstrdup(seed_job(0, NULL, &o[0]));
	assert_int_equal(o[0].borrowed.len, 0);
	/* The seed: 300 files and run taken; lnk and extra read. */
	assert_string_equal(seed_job(1, &seed, &o[1]), tree);
	assert_int_equal(seed_lines(&o[1].borrowed), 301);
	oid = test_sh_out("git -C src rev-parse HEAD:d0/f0");
	assert_non_null(strstr(o[1].borrowed.data, oid));
	free(oid);
	test_sh_ok("! git --git-dir=own1.git cat-file -e $(git -C src rev-parse "
	    "HEAD:d0/f0) && git --git-dir=own1.git cat-file -e $(git -C w "
	    "hash-object extra) && git --git-dir=own1.git cat-file -e "
	    "$(git -C src rev-parse HEAD:lnk) && GIT_INDEX_FILE=$PWD/own1.idx "
	    "git --git-dir=own1.git --work-tree=w diff-files --quiet");
	/* The same with the seed read and its files looked at beforehand. */
	seed.read = seed_read_early(seed.index);
	assert_string_equal(seed_job(8, &seed, &o[8]), tree);
	seed.read = NULL;
	assert_int_equal(seed_lines(&o[8].borrowed), 301);
	assert_string_equal(o[8].borrowed.data, o[1].borrowed.data);

	/* Converted files are read. */
	strv_add(&conv, "d0/f4");
	strv_add(&conv, "run");
	seed.converted = &conv;
	assert_string_equal(seed_job(2, &seed, &o[2]), tree);
	assert_int_equal(seed_lines(&o[2].borrowed), 299);
	seed.converted = NULL;

	/* A file changed since, its size and mtime as they were: read. */
	test_sh_ok("cd w && touch -r d0/f6 ../ref && printf 'file X\\n' > d0/f6 && "
	    "touch -r ../ref d0/f6");
	s = seed_job(3, &seed, &o[3]);
	assert_string_not_equal(s, tree);
	assert_int_equal(seed_lines(&o[3].borrowed), 300);
	oid = test_sh_out("git -C src rev-parse HEAD:d0/f6");
	assert_null(strstr(o[3].borrowed.data, oid));
	seed.read = seed_read_early(seed.index);
	assert_string_equal(seed_job(9, &seed, &o[9]), s);
	seed.read = NULL;
	assert_int_equal(seed_lines(&o[9].borrowed), 300);
	assert_null(strstr(o[9].borrowed.data, oid));
	free(oid);
	free(tree);
	tree = xstrdup(seed_job(4, NULL, &o[4]));
	assert_string_equal(s, tree);

	/* Cached as late as the index was written: git's racy entries, read. */
	test_sh_ok("touch -d '-1 minute' src/.git/worktrees/w/index");
	assert_string_equal(seed_job(5, &seed, &o[5]), tree);
	assert_int_equal(o[5].borrowed.len, 0);
	test_sh_ok("touch src/.git/worktrees/w/index");

	/* One entry's id changed (checksum good): the index is not believed. */
	f = fopen("forge.py", "w");
	assert_non_null(f);
	fputs(forge_py, f);
	fclose(f);
	test_sh_ok("python3 forge.py src/.git/worktrees/w/index d1/f1 "
	    "$(git -C src rev-parse HEAD:d1/f3) && touch "
	    "src/.git/worktrees/w/index && test \"$(git -C w ls-files -s d1/f1 "
	    "| cut -d' ' -f2)\" = \"$(git -C src rev-parse HEAD:d1/f3)\"");
	assert_string_equal(seed_job(6, &seed, &o[6]), tree);
	assert_int_equal(o[6].borrowed.len, 0);
	/* Read beforehand: read, not believed all the same. */
	seed.read = seed_read_early(seed.index);
	assert_string_equal(seed_job(10, &seed, &o[10]), tree);
	seed.read = NULL;
	assert_int_equal(o[10].borrowed.len, 0);

	/* A .gitattributes in the tree: git may have converted; nothing taken. */
	test_sh_ok("cd src && echo '*.x text' > .gitattributes && git add "
	    ".gitattributes && git commit -qm a && git worktree remove --force "
	    "../w && git worktree add -q ../w && sleep 0.1 && touch "
	    ".git/worktrees/w/index");
	free(want);
	want = test_sh_out("git -C src rev-parse HEAD^{tree}");
	for (i = 0; i < SNAP_PACK_OID; i++)
		sscanf(want + 2 * i, "%2hhx", &seed.tree[i]);
	seed_job(7, &seed, &o[7]);
	assert_int_equal(o[7].borrowed.len, 0);
	for (i = 0; i < nitems(o); i++)
		seed_out_free(&o[i]);
	strv_free(&conv);
	free(want);
	free(tree);
}

/*
 * A jail's clone (the clone gate closed, again and again) gets in while
 * the reading thread and the writer are at work, and the job still
 * ends with the tree one thread gives.
 */
static void
test_pack_job_readers_gate(void **state)
{
	struct event_base *base = event_base_new();
	struct job_out o[2];
	struct buf list;
	char name[32];
	unsigned k, closed = 0;
	int i;

	(void)state;
	assert_non_null(base);
	test_sh_ok("mkdir w && for i in $(seq 0 799); do head -c $((i * 97 %% "
	    "30000)) /dev/urandom > w/f$i; done && git init -q --bare "
	    "own0.git && git init -q --bare own1.git");
	buf_init(&list);
	for (i = 0; i < 800; i++) {
		snprintf(name, sizeof name, "f%d", i);
		buf_add(&list, name, strlen(name) + 1);
	}
	job_run(0, "own0.git", "own0.idx", &list, &o[0]);
	memset(&o[1], 0, sizeof o[1]);
	buf_init(&o[1].modes);
	buf_init(&o[1].borrowed);
	snap_pack_job_readers = 1;
	assert_non_null(snap_pack_job_start(base, "own1.git", "own1.idx", "w",
	    &list, NULL, job_over, NULL, &o[1], &o[1].cause));
	while (!o[1].over) {
		clone_gate_close();
		closed++;
		usleep(500);
		clone_gate_open();
		event_base_loop(base, EVLOOP_NONBLOCK);
	}
	assert_true(closed > 0);
	assert_int_equal(o[1].result, 0);
	assert_string_equal(o[1].tree, o[0].tree);
	test_sh_ok("cmp own0.idx own1.idx");
	for (k = 0; k < 2; k++) {
		buf_free(&o[k].modes);
		buf_free(&o[k].borrowed);
		free(o[k].cause);
	}
	buf_free(&list);
	event_base_free(base);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_pack_git, test_proj_setup,
		    test_proj_teardown),
		cmocka_unit_test_setup_teardown(test_pack_trees,
		    test_proj_setup, test_proj_teardown),
		cmocka_unit_test_setup_teardown(test_pack_index,
		    test_proj_setup, test_proj_teardown),
		cmocka_unit_test_setup_teardown(test_pack_files,
		    test_proj_setup, test_proj_teardown),
		cmocka_unit_test_setup_teardown(test_pack_twice,
		    test_proj_setup, test_proj_teardown),
		cmocka_unit_test_setup_teardown(test_pack_unfinished,
		    test_proj_setup, test_proj_teardown),
		cmocka_unit_test_setup_teardown(test_pack_nested,
		    test_proj_setup, test_proj_teardown),
		cmocka_unit_test_setup_teardown(test_pack_unchanged,
		    test_proj_setup, test_proj_teardown),
		cmocka_unit_test_setup_teardown(test_pack_rewritten,
		    test_proj_setup, test_proj_teardown),
		cmocka_unit_test_setup_teardown(test_pack_large,
		    test_proj_setup, test_proj_teardown),
		cmocka_unit_test_setup_teardown(test_pack_sparse,
		    test_proj_setup, test_proj_teardown),
		cmocka_unit_test_setup_teardown(test_pack_files_twice,
		    test_proj_setup, test_proj_teardown),
		cmocka_unit_test_setup_teardown(test_pack_first_snapshot,
		    test_proj_setup, test_proj_teardown),
		cmocka_unit_test_setup_teardown(test_pack_git_names,
		    test_proj_setup, test_proj_teardown),
		cmocka_unit_test_setup_teardown(test_pack_first_nested,
		    test_proj_setup, test_proj_teardown),
		cmocka_unit_test_setup_teardown(test_pack_parent_dots,
		    test_proj_setup, test_proj_teardown),
		cmocka_unit_test_setup_teardown(test_pack_job_gate,
		    test_proj_setup, test_proj_teardown),
		cmocka_unit_test_setup_teardown(test_pack_job_readers,
		    test_proj_setup, test_proj_teardown),
		cmocka_unit_test_setup_teardown(test_pack_job_readers_gate,
		    test_proj_setup, test_proj_teardown),
		cmocka_unit_test_setup_teardown(test_pack_job_seed,
		    test_proj_setup, test_proj_teardown),
	};

	return test_run_group(tests, NULL, NULL);
}
