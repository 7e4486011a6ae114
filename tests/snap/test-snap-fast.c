/*
 * The snapshot's shortcuts give what git itself would: the tree read from
 * the index's cache, the commit written early, the counts known without
 * diff-tree, the project found without rev-parse; and the index agentmux
 * keeps notices a change made in the same second as it was read.
 */
#include <sys/stat.h>

#include <event2/event.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "lib/testlib.h"
#include "snap/snap-int.h"

static struct store *st;

static int
setup(void **state)
{
	char *cause = NULL;

	test_proj_setup(state);
	st = store_open(NULL, &cause);
	assert_non_null(st);
	return 0;
}

static int
teardown(void **state)
{
	store_close(st);
	return test_proj_teardown(state);
}

/*
 * Files older than any index written from now on: none is racily clean,
 * and none changed (ctime) in the second a snapshot reads it.
 */
static void
age(void)
{
	test_sh_ok("find . -path ./.git -prune -o -exec touch -h -d '1 minute ago' {} + "
	    "&& sleep 1.1");
}

/* The git commands the debug log says ran, from here to log_ran(). */
static FILE *log_file;

static void
log_start(void)
{
	log_file = tmpfile();
	assert_non_null(log_file);
	log_init(log_file, LOG_LEVEL_DEBUG);
}

static char *
log_ran(void)
{
	struct buf b;
	char chunk[4096];
	size_t n;

	log_init(stderr, LOG_LEVEL_WARN);
	rewind(log_file);
	buf_init(&b);
	while ((n = fread(chunk, 1, sizeof chunk, log_file)) > 0)
		buf_add(&b, chunk, n);
	fclose(log_file);
	if (b.data == NULL)
		buf_adds(&b, "");
	return buf_steal(&b);
}

static int64_t
begin(void)
{
	struct store_session s;
	char *cause = NULL;
	int64_t id;

	memset(&s, 0, sizeof s);
	s.agent = (char *)"shell";
	s.project = test_proj;
	s.command = (char *)"[\"true\"]";
	id = store_session_begin(st, &s, &cause);
	assert_true(id > 0);
	return id;
}

static void
take(struct snap_repo *r, int64_t session, const char *kind,
    struct snap_result *res)
{
	struct snap_take_opts o;
	char *cause = NULL;

	memset(&o, 0, sizeof o);
	o.kind = kind;
	o.session = session;
	o.record_refs = strcmp(kind, "start") == 0;
	if (snap_take_sync(st, r, &o, res, &cause) == -1)
		fail_msg("the %s snapshot failed: %s", kind, cause);
}

static struct snap_repo *
open_repo(const char *tag)
{
	char *cause = NULL;
	struct snap_repo *r = snap_repo_open(test_proj, NULL, tag, &cause);

	if (r == NULL)
		fail_msg("snap_repo_open: %s", cause);
	return r;
}

static void
git_repo(void)
{
	test_sh_ok("git init -q -b main . && git config user.email t@example.com && "
	    "git config user.name t");
}

/* The cache git keeps in an index: read as write-tree would print it, and only when valid. */
static void
test_index_tree(void **state)
{
	char *tree = NULL, *want;
	int64_t n = -1;

	git_repo();
	test_sh_ok("mkdir -p d/e && echo a > a && echo b > d/b && echo c > d/e/c && "
	    "git add -A");
	/* git add alone keeps no tree for what it added. */
	assert_int_equal(snap_index_tree(".git/index", 20, &tree, &n), 0);
	assert_null(tree);
	want = test_sh_out("git write-tree | tr -d '\\n'");
	assert_int_equal(snap_index_tree(".git/index", 20, &tree, &n), 1);
	assert_string_equal(tree, want);
	assert_int_equal(n, 3);
	free(tree);
	/* Version 4 names are read too. */
	test_sh_ok("git update-index --index-version 4 && git write-tree >/dev/null");
	assert_int_equal(snap_index_tree(".git/index", 20, &tree, &n), 1);
	assert_string_equal(tree, want);
	free(tree);
	/* A change to an entry invalidates it up to the root. */
	test_sh_ok("echo x > d/e/x && git add d/e/x");
	assert_int_equal(snap_index_tree(".git/index", 20, &tree, &n), 0);
	/* A split index's cache is not this file's alone: not used. */
	test_sh_ok("git write-tree >/dev/null && git update-index --split-index && "
	    "git write-tree >/dev/null");
	assert_int_equal(snap_index_tree(".git/index", 20, &tree, &n), 0);
	assert_int_equal(snap_index_tree("no-such-index", 20, &tree, &n), -1);
	free(want);
}

/* .git/index with the name STANDIN made REAL (the same length), its checksum written again. */
static void
index_rename(const char *standin, const char *real)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	struct buf b;
	char *at;
	size_t i;
	int fd;

	assert_int_equal(strlen(standin), strlen(real));
	buf_init(&b);
	assert_int_equal(buf_read_file(&b, ".git/index"), 0);
	at = memmem(b.data, b.len - 20, standin, strlen(standin));
	assert_non_null(at);
	for (i = 0; real[i] != '\0'; i++)
		at[i] = real[i];
	assert_int_equal(EVP_Digest(b.data, b.len - 20, md, &mdlen, EVP_sha1(),
	    NULL), 1);
	memcpy(b.data + b.len - 20, md, 20);
	fd = open(".git/index", O_WRONLY | O_TRUNC);
	assert_true(fd != -1);
	assert_int_equal(util_write_all(fd, b.data, b.len), 0);
	close(fd);
	buf_free(&b);
}

/* snap_index_paths_check of .git/index; its first bad entry into *FIRST (or NULL). */
static int
index_paths(char **first)
{
	struct strv bad;
	struct buf b;
	int rc;

	buf_init(&b);
	strv_init(&bad);
	assert_int_equal(buf_read_file(&b, ".git/index"), 0);
	rc = snap_index_paths_check(&b, 20, &bad);
	*first = bad.n > 0 ? xstrdup(bad.v[0]) : NULL;
	buf_free(&b);
	strv_free(&bad);
	return rc;
}

/*
 * An index git's checkout would write where git never adds an entry
 * (found 2026-12-06: 'git checkout -- .' wrote .git/hooks/post-checkout
 * and ../x from a crafted index): each kind found, in versions 2 and 4;
 * git's own indexes pass; one cut short or split cannot be checked.
 */
static void
test_index_paths(void **state)
{
	static const char *const pairs[][2] = {
		{ "Xgit/hooks/post-checkout", ".git/hooks/post-checkout" },
		{ "XX/escaped", "../escaped" },
		{ "a/XGIT/x", "a/.GIT/x" },
		{ "a/Xgit. /x", "a/.git. /x" },
		{ "gitX1/x", "git~1/x" },
		{ "aXb", "a/b" },      /* below the file a */
		{ "XX", "./" },        /* no name after the slash */
		{ "Xx", "/x" },
	};
	char *first, *blob;
	size_t i;

	git_repo();
	test_sh_ok("echo x >x && git add x && mkdir d && echo y >d/.gitmodules && "
	    "git add d/.gitmodules && git commit -qm x");
	blob = test_sh_out("git rev-parse HEAD:x | tr -d '\\n'");
	assert_int_equal(index_paths(&first), 0);
	assert_null(first);
	for (i = 0; i < nitems(pairs); i++) {
		test_sh_ok("git read-tree HEAD && git update-index --index-version 2 && "
		    "git update-index --add --cacheinfo '100644,%s,%s'%s", blob,
		    pairs[i][0], strcmp(pairs[i][1], "a/b") == 0 ?
		    " && git update-index --add --cacheinfo 100644,$(git rev-parse HEAD:x),a" : "");
		index_rename(pairs[i][0], pairs[i][1]);
		assert_int_equal(index_paths(&first), 1);
		assert_non_null(first);
		assert_string_equal(first, pairs[i][1]);
		free(first);
	}
	/* Version 4 (names cut against the one before). */
	test_sh_ok("git read-tree HEAD && git update-index --index-version 4 && "
	    "git update-index --add --cacheinfo 100644,%s,Xgit/hooks/pre-commit",
	    blob);
	index_rename("Xgit/hooks/pre-commit", ".git/hooks/pre-commit");
	assert_int_equal(index_paths(&first), 1);
	assert_string_equal(first, ".git/hooks/pre-commit");
	free(first);
	/* A link named .gitmodules (git reads it from the tree); a file so named passes (above). */
	test_sh_ok("git read-tree HEAD && git update-index --index-version 2 && "
	    "git update-index --add --cacheinfo 120000,%s,Xgitmodules", blob);
	index_rename("Xgitmodules", ".gitmodules");
	assert_int_equal(index_paths(&first), 1);
	free(first);
	/* Cut short, or split (its entries in another file): not checked. */
	test_sh_ok("git read-tree HEAD && truncate -s 40 .git/index");
	assert_int_equal(index_paths(&first), -1);
	test_sh_ok("git read-tree HEAD && git update-index --split-index");
	assert_int_equal(index_paths(&first), -1);
	test_sh_ok("git update-index --no-split-index");
	assert_int_equal(index_paths(&first), 0);
	/* Review 8: read otherwise than git would (a name's length past its NUL, extended flags in version 2): not checked. */
	test_sh_ok("/usr/bin/python3 \"$AGENTMUX_SRC/tests/jail/index-craft.py\" "
	    "desync .git/hooks/post-checkout >/dev/null");
	assert_int_equal(index_paths(&first), -1);
	test_sh_ok("/usr/bin/python3 \"$AGENTMUX_SRC/tests/jail/index-craft.py\" "
	    "v2ext .git/hooks/post-checkout >/dev/null");
	assert_int_equal(index_paths(&first), -1);
	free(blob);
}

/*
 * git's own indexes pass, of every version and with their caches (a
 * skip-worktree entry, an untracked cache, version 4); one whose entries
 * git's threaded reader finds by an offset table (IEOT) cannot be checked
 * (review 8); what git checkout -m unresolves (REUC) is checked.
 */
static void
test_index_check_kinds(void **state)
{
	char *first;

	git_repo();
	test_sh_ok("mkdir -p d/e && echo a >a && echo b >d/b && ln -s a l && "
	    "echo c >d/e/c && chmod +x d/b && git add -A && git commit -qm x && "
	    "git update-index --skip-worktree d/b && git update-index "
	    "--untracked-cache && git status >/dev/null");
	assert_int_equal(index_paths(&first), 0);
	test_sh_ok("git update-index --no-skip-worktree d/b && "
	    "git update-index --index-version 4");
	assert_int_equal(index_paths(&first), 0);
	/* git's own, written with its offset table: not checked either. */
	test_sh_ok("git update-index --index-version 2 && git -c index.threads=2 "
	    "-c index.recordOffsetTable=true -c index.recordEndOfIndexEntries=true "
	    "update-index --force-write-index --refresh >/dev/null");
	assert_int_equal(index_paths(&first), -1);
	test_sh_ok("/usr/bin/python3 \"$AGENTMUX_SRC/tests/jail/index-craft.py\" "
	    "ieot .git/hooks/post-checkout >/dev/null");
	assert_int_equal(index_paths(&first), -1);
	/* The mark and table inside an extension walked past (review 10): git finds the mark by its place. */
	test_sh_ok("/usr/bin/python3 \"$AGENTMUX_SRC/tests/jail/index-craft.py\" "
	    "eoie .git/hooks/post-checkout >/dev/null && "
	    "git -c index.threads=3 ls-files | grep -q hooks");
	assert_int_equal(index_paths(&first), -1);
	/* A conflict resolved by removing the file: its record (REUC) names it; renamed .git there, refused. */
	test_sh_ok("git read-tree HEAD && git checkout -q -b side && echo s >Xgit && "
	    "git add Xgit && git commit -qm s && git checkout -q main && "
	    "echo m >Xgit && git add Xgit && git commit -qm m && "
	    "(git merge -q side >/dev/null 2>&1 || true) && git rm -q Xgit && "
	    "grep -q REUC .git/index");
	assert_int_equal(index_paths(&first), 0);
	index_rename("Xgit", ".git");
	assert_int_equal(index_paths(&first), 1);
	assert_string_equal(first, ".git");
	free(first);
}

/*
 * A tree as git sees it: every entry with its mode and object, as
 * ls-tree -r (of a tree) and ls-files -s (of an index) print them.
 */
static char *
tree_entries(struct snap_repo *r, const char *tree)
{
	return test_sh_out("GIT_DIR=%s git ls-tree -r --full-tree %s | "
	    "sed 's/ blob / /; s/ commit / /; s/\\t/ /'", r->gitdir, tree);
}

static char *
index_entries(struct snap_repo *r)
{
	return test_sh_out("GIT_DIR=%s GIT_INDEX_FILE=%s git ls-files -s | "
	    "awk '{ p = $0; sub(/^[^\\t]*\\t/, \"\", p); print $1, $2, p }'",
	    r->gitdir, r->index);
}

/*
 * A tricky tree: modes, symlinks, names with spaces and non-ASCII,
 * ignored files, a nested repository, CRLF under text=auto, an empty
 * dir. Taken again unchanged, the tree comes from the index's cache; it
 * must be the one write-tree made, and hold exactly the index's entries.
 */
static void
test_cached_tree(void **state)
{
	struct snap_result r1, r2, r3;
	struct snap_repo *r;
	char *a, *b;
	int64_t id;

	git_repo();
	test_sh_ok("mkdir -p sub 'sp ace' empty && echo one > a.txt && "
	    "echo two > sub/b.txt && echo é > 'sp ace/é.txt' && "
	    "printf '#!/bin/sh\\n' > run.sh && chmod +x run.sh && "
	    "ln -s a.txt link && ln -s sub dirlink && "
	    "printf 'ignored/\\n' > .gitignore && mkdir ignored && "
	    "echo i > ignored/x && printf '* text=auto\\n' > .gitattributes && "
	    "printf 'crlf\\r\\n' > win.txt");
	test_sh_ok("git add -A && git commit -qm init && echo u > untracked.txt");
	test_sh_ok("mkdir nested && cd nested && git init -q && echo n > n.txt && "
	    "git add n.txt && git -c user.name=a -c user.email=b commit -qm n");
	age();
	id = begin();
	r = open_repo("fast");
	take(r, id, "start", &r1);
	log_start();
	take(r, id, "end", &r2);
	/* Unchanged: git add alone, the rest is known. */
	a = log_ran();
	assert_non_null(strstr(a, "add"));
	assert_null(strstr(a, "write-tree"));
	assert_null(strstr(a, "commit"));
	assert_null(strstr(a, "diff-tree"));
	free(a);
	assert_string_equal(r1.tree, r2.tree);
	assert_string_equal(r1.commit, r2.commit);
	assert_int_equal(snap_index_tree(r->index, 20, &a, &id), 1);
	assert_string_equal(a, r2.tree);
	free(a);
	a = tree_entries(r, r2.tree);
	b = index_entries(r);
	assert_string_equal(a, b);
	assert_non_null(strstr(a, "nested/n.txt"));
	assert_non_null(strstr(a, "120000"));
	assert_non_null(strstr(a, "100755"));
	assert_null(strstr(a, "ignored/"));
	free(a);
	free(b);
	/* The raw bytes, CR and all. */
	a = test_sh_out("GIT_DIR=%s git cat-file -p %s:win.txt | od -c",
	    r->gitdir, r2.tree);
	assert_non_null(strstr(a, "\\r"));
	free(a);
	/* A change: the cache is invalid, write-tree runs, and it is right. */
	test_sh_ok("echo changed > sub/b.txt && rm link && chmod -x run.sh");
	take(r, begin(), "start", &r3);
	assert_string_not_equal(r3.tree, r2.tree);
	a = tree_entries(r, r3.tree);
	b = index_entries(r);
	assert_string_equal(a, b);
	free(a);
	free(b);
	snap_result_clear(&r1);
	snap_result_clear(&r2);
	snap_result_clear(&r3);
	snap_repo_free(r);
}

/*
 * The first snapshot of a session writes its commit itself (no git runs
 * for it), the object git would make of its text: no parent, agentmux as author and committer, its kind and the real
 * modes in its message. Its refs are written in the own repository (none
 * in the project's), and the repository stays sound.
 */
static void
test_early_commit(void **state)
{
	struct snap_result res;
	struct snap_repo *r;
	char *text, *ref;
	int64_t id;

	git_repo();
	test_sh_ok("echo a > a && git add a && git commit -qm init && echo b > b "
	    "&& chmod 600 b");
	age();
	id = begin();
	r = open_repo("early");
	log_start();
	take(r, id, "start", &res);
	text = log_ran();
	assert_null(strstr(text, "hash-object"));
	assert_null(strstr(text, "commit-tree"));
	free(text);
	test_sh_ok("GIT_DIR=%s git cat-file commit %s | git hash-object -t "
	    "commit --stdin | grep -qx %s", r->gitdir, res.commit, res.commit);
	text = test_sh_out("GIT_DIR=%s git cat-file commit %s", r->gitdir,
	    res.commit);
	assert_null(strstr(text, "parent "));
	assert_non_null(strstr(text, "author agentmux <agentmux@localhost> "));
	if (strstr(text, "\n\nagentmux snapshot: start, session ") == NULL ||
	    strstr(text, "\n\nagentmux-modes umask=") == NULL ||
	    strstr(text, "\n600 b\n") == NULL)
		fail_msg("the commit does not hold its kind and modes: %s", text);
	free(text);
	ref = test_sh_out("GIT_DIR=%s git rev-parse refs/agentmux/sessions/%lld "
	    "refs/agentmux/snaps/%lld/%s | sort -u | tr -d '\\n'", r->gitdir,
	    (long long)id, (long long)id, res.commit);
	assert_string_equal(ref, res.commit);
	test_sh_ok("GIT_DIR=%s git fsck --no-dangling --no-progress 2>/dev/null",
	    r->gitdir);
	/* The project's repository has no object or ref of it. */
	test_sh_ok("! git cat-file -e %s 2>/dev/null && "
	    "test -z \"$(git for-each-ref refs/agentmux)\"", res.commit);
	free(ref);
	snap_result_clear(&res);
	snap_repo_free(r);
}

/*
 * The own repository is made without git (no git init, no hash-object),
 * as git init --template= would make it for the project as its work
 * tree: git finds it sound, reads the project's path back from its
 * config whatever the name holds (quotes, a backslash, a tab, '#', ';',
 * spaces at its ends), has the empty blob, and takes a snapshot there. A
 * making cut short (no marker written) is made again over what it left.
 */
static void
test_repo_made_natively(void **state)
{
	static const char *const names[] = { "plain", " we\"ird\\ x#;\ty ",
	    "ünï" };
	struct snap_result res;
	struct snap_repo *r;
	char *dir, *out, *want, *cause = NULL;
	size_t i;

	for (i = 0; i < nitems(names); i++) {
		dir = xprintf("%s/%s", test_proj, names[i]);
		assert_int_equal(mkdir(dir, 0755), 0);
		setenv("D", dir, 1);
		test_sh_ok("cd \"$D\" && git init -q && echo a > a && git add a && "
		    "git -c user.name=t -c user.email=t@x commit -qm a");
		log_start();
		r = snap_repo_open(dir, NULL, "made", &cause);
		assert_non_null(r);
		out = log_ran();
		assert_null(strstr(out, "git init"));
		assert_null(strstr(out, "hash-object"));
		free(out);
		setenv("G", r->gitdir, 1);
		out = test_sh_out("git --git-dir=\"$G\" config core.worktree");
		want = xprintf("%s\n", dir);
		assert_string_equal(out, want);
		free(want);
		free(out);
		test_sh_ok("g=\"$G\"; test \"$(git --git-dir=\"$g\" config "
		    "core.repositoryformatversion)\" = 0 && test \"$(git "
		    "--git-dir=\"$g\" config core.bare)\" = false && test "
		    "\"$(git --git-dir=\"$g\" symbolic-ref HEAD)\" = "
		    "refs/heads/master && git --git-dir=\"$g\" cat-file -e "
		    "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391 && git "
		    "--git-dir=\"$g\" fsck --no-dangling 2>/dev/null && ! ls "
		    "\"$g\" | grep -q probe");
		take(r, begin(), "start", &res);
		out = test_sh_out("git --git-dir=\"$G\" cat-file -p %s:a",
		    res.tree);
		assert_string_equal(out, "a\n");
		free(out);
		snap_result_clear(&res);
		/* Cut short: its marker gone, HEAD and config too; made again. */
		test_sh_ok("rm \"$G/agentmux-project\" \"$G/HEAD\" \"$G/config\"");
		snap_repo_free(r);
		r = snap_repo_open(dir, NULL, "made", &cause);
		assert_non_null(r);
		test_sh_ok("git --git-dir=\"$G\" fsck --no-dangling 2>/dev/null && "
		    "test -f \"$G/agentmux-project\"");
		snap_repo_free(r);
		free(dir);
	}
}

/* Counts git would give (diff-tree), found without it where they are known. */
static void
test_counts(void **state)
{
	struct snap_result res;
	struct snap_repo *r;
	char *n;
	int64_t id;

	/* The project's first snapshot: from the empty tree, every file. */
	git_repo();
	test_sh_ok("mkdir -p d && echo a > a && echo b > d/b && echo c > d/c");
	age();
	log_start();
	r = open_repo("counts");
	id = begin();
	take(r, id, "start", &res);
	assert_int_equal(res.files_changed, 3);
	n = log_ran();
	assert_null(strstr(n, "rev-parse"));
	assert_null(strstr(n, "diff-tree"));
	free(n);
	snap_result_clear(&res);
	/* Nothing changed since the start: nothing, not the start's count. */
	take(r, id, "end", &res);
	assert_int_equal(res.files_changed, 0);
	snap_result_clear(&res);
	snap_repo_free(r);
	/* A later session counts from the project's last snapshot. */
	test_sh_ok("echo x > a && rm d/b && echo n > n && echo m > d/m");
	r = open_repo("counts2");
	take(r, begin(), "start", &res);
	assert_int_equal(res.files_changed, 4);
	snap_result_clear(&res);
	snap_repo_free(r);
}

/*
 * Line-ending conversion in the user's git config changes nothing: the
 * snapshot keeps the bytes on disk, CR and all.
 */
static void
test_config_files(void **state)
{
	struct snap_result res;
	struct snap_repo *r;
	char *out, *gdir;

	git_repo();
	test_sh_ok("printf 'crlf\\r\\n' > win.txt && git -c core.autocrlf=true add "
	    "win.txt && git commit -qm init");
	age();
	gdir = xprintf("%s/git", getenv("XDG_CONFIG_HOME"));
	mkdir(gdir, 0700);
	test_sh_ok("printf '[core]\\n\\tautocrlf = true\\n' > %s/config", gdir);
	r = open_repo("global");
	take(r, begin(), "start", &res);
	out = test_sh_out("GIT_DIR=%s git cat-file -p %s:win.txt | od -c",
	    r->gitdir, res.tree);
	assert_non_null(strstr(out, "\\r"));
	free(out);
	snap_result_clear(&res);
	snap_repo_free(r);
	free(gdir);
}

/* The project is found without git: outside any repository, the dir itself; inside one, its top. */
static void
test_outside(void **state)
{
	struct snap_repo *r;
	char *sub, *cause = NULL, *top;

	r = open_repo("out");
	assert_null(r->projgit);
	assert_string_equal(r->worktree, test_proj);
	top = xprintf("%s/data/agentmux/shadow/", test_dir);
	assert_true(strncmp(r->gitdir, top, strlen(top)) == 0);
	snap_repo_free(r);
	/* A subdirectory of a repository snapshots the repository. */
	git_repo();
	test_sh_ok("mkdir -p s/t");
	sub = xprintf("%s/s/t", test_proj);
	r = snap_repo_open(sub, NULL, "sub", &cause);
	assert_non_null(r);
	assert_non_null(r->projgit);
	assert_string_equal(r->worktree, test_proj);
	assert_true(strncmp(r->gitdir, top, strlen(top)) == 0);
	snap_repo_free(r);
	free(sub);
	free(top);
}

/*
 * git compares whole seconds: a file changed again in the second the
 * snapshot read it, its size kept and its mtime set back, looks unchanged
 * to the stat data. agentmux's own index makes git hash such a file
 * again, so the change is in the next snapshot. (Tried until the change
 * falls in the same second as the first read, as an agent would.)
 */
static void
test_same_second_ctime(void **state)
{
	struct snap_result r1, r2;
	struct snap_repo *r;
	char *out, *ctime1, *ctime2;
	int64_t id;
	int i;

	git_repo();
	test_sh_ok("echo aaaa > f && touch -d '2020-01-01 00:00:00' f");
	for (i = 0; i < 50; i++) {
		id = begin();
		r = open_repo("ctime");
		test_sh_ok("echo aaaa > f && touch -d '2020-01-01 00:00:00' f");
		ctime1 = test_sh_out("stat -c %%Z f");
		take(r, id, "start", &r1);
		test_sh_ok("echo bbbb > f && touch -d '2020-01-01 00:00:00' f");
		ctime2 = test_sh_out("stat -c %%Z f");
		if (strcmp(ctime1, ctime2) == 0)
			break;
		free(ctime1);
		free(ctime2);
		snap_result_clear(&r1);
		snap_repo_free(r);
	}
	if (i == 50)
		test_skip("never changed the file within one second of reading it");
	take(r, id, "end", &r2);
	out = test_sh_out("GIT_DIR=%s git cat-file -p %s:f", r->gitdir, r2.tree);
	assert_string_equal(out, "bbbb\n");
	free(out);
	free(ctime1);
	free(ctime2);
	snap_result_clear(&r1);
	snap_result_clear(&r2);
	snap_repo_free(r);
}

/* snap_index_user_each's entries, as 'git ls-files -s' prints them. */
static int
user_ent_cb(void *arg, const struct snap_index_ent *e)
{
	struct buf *b = arg;
	char hex[2 * SNAP_PACK_OID + 1];

	snap_pack_hex(e->oid, hex);
	buf_printf(b, "%06o %s %u\t%.*s\n", e->mode, hex,
	    (unsigned)((e->flags >> 12) & 3), (int)e->namelen, e->name);
	return 0;
}

/* The user's index of the project here as agentmux reads it, NULL (and *CAUSE) if refused. */
static char *
user_entries(char **cause)
{
	struct buf b;
	int fd, rc;

	*cause = NULL;
	buf_init(&b);
	fd = open(".git", O_PATH | O_DIRECTORY);
	assert_true(fd != -1);
	rc = snap_index_user_each(fd, (size_t)1 << 30, SNAP_PACK_OID,
	    user_ent_cb, &b, cause);
	close(fd);
	if (rc == -1) {
		assert_non_null(*cause);
		buf_free(&b);
		return NULL;
	}
	buf_adds(&b, "");
	return buf_steal(&b);
}

/* The user's index read as git reads it; SPLIT: it must be a split one. */
static void
user_entries_are_gits(bool split)
{
	char *got, *want, *cause;

	if (split)
		test_sh_ok("grep -q link .git/index && ls .git/sharedindex.* "
		    ">/dev/null");
	got = user_entries(&cause);
	if (got == NULL)
		fail_msg("the index is refused: %s", cause);
	want = test_sh_out("git ls-files -s");
	assert_string_equal(got, want);
	free(got);
	free(want);
}

/* The shared part .git/index names: "sharedindex.ID" (the others are old ones). */
static char *
shared_name(void)
{
	char hex[2 * SNAP_PACK_OID + 1], *path;
	const char *at;
	struct buf b;
	size_t off = 0;

	buf_init(&b);
	assert_int_equal(buf_read_file(&b, ".git/index"), 0);
	while ((at = memmem(b.data + off, b.len - off, "link", 4)) != NULL &&
	    (size_t)(at - b.data) + 28 <= b.len) {
		snap_pack_hex((const unsigned char *)at + 8, hex);
		path = xprintf(".git/sharedindex.%s", hex);
		if (access(path, F_OK) == 0) {
			buf_free(&b);
			return path;
		}
		free(path);
		off = (size_t)(at - b.data) + 1;
	}
	fail_msg("no shared part named in .git/index");
	return NULL;
}

/*
 * The link extension of the split index .git/index made DATA (hex: the
 * bitmaps after the shared part's id), its checksum written again.
 */
static void
link_forge(const char *data)
{
	char *shared = shared_name();

	test_sh_ok("python3 -c '\n"
	    "import hashlib, struct\n"
	    "oid = bytes.fromhex(\"%s\"[-40:])\n"
	    "d = open(\".git/index\", \"rb\").read()[:-20]\n"
	    "at = d.index(b\"link\")\n"
	    "while d[at + 8:at + 28] != oid: at = d.index(b\"link\", at + 1)\n"
	    "n = struct.unpack(\">I\", d[at + 4:at + 8])[0]\n"
	    "new = oid + bytes.fromhex(\"%s\")\n"
	    "d = d[:at] + b\"link\" + struct.pack(\">I\", len(new)) + new + "
	    "d[at + 8 + n:]\n"
	    "open(\".git/index\", \"wb\").write(d + hashlib.sha1(d).digest())'",
	    shared, data);
	free(shared);
}

/*
 * A split index (core.splitIndex) is read with its shared part, as git
 * reads it (found 2026-12-07: only the split part's names were read, so
 * a tracked file the ignore rules name was in no snapshot): entries
 * replaced, deleted and added, in versions 2, 3 and 4, a conflict's
 * stages; a shared part gone, replaced, a link, a FIFO, or bitmaps that
 * name what is not there: refused, never half read.
 */
static void
test_split_index(void **state)
{
	struct snap_result res;
	struct snap_repo *r;
	char *cause, *names, *shared;
	int64_t id;

	(void)state;
	git_repo();
	test_sh_ok("for i in $(seq 1 80); do mkdir -p d$((i %% 7)) && "
	    "echo $i > d$((i %% 7))/f$i.c; done && printf '*.o\\n' > "
	    ".gitignore && echo kept > keep.o && git add . && git add -f "
	    "keep.o && git commit -qm a");
	user_entries_are_gits(false);
	/* Split: everything in the shared part. */
	test_sh_ok("git update-index --split-index");
	user_entries_are_gits(true);
	/* Replaced, deleted, added; skip-worktree (extended flags, version 3). */
	test_sh_ok("echo x >> d1/f1.c && echo y >> d2/f2.c && git add d1/f1.c "
	    "d2/f2.c && git rm -q d3/f3.c && echo n > d3/new.c && echo m > "
	    "a0.c && git add d3/new.c a0.c && git update-index "
	    "--skip-worktree d4/f4.c");
	user_entries_are_gits(true);
	test_sh_ok("test \"$(git ls-files | grep -c .)\" = 83");
	/* A file deleted then added again: the split part's entry, once. */
	test_sh_ok("git rm -q --cached d5/f5.c && git add d5/f5.c && "
	    "git update-index --no-skip-worktree d4/f4.c");
	user_entries_are_gits(true);
	/* Version 4 (names prefix-compressed), split again. */
	test_sh_ok("git update-index --index-version 4 && git update-index "
	    "--split-index && echo z >> d6/f6.c && git add d6/f6.c && "
	    "git rm -q d0/f7.c");
	user_entries_are_gits(true);
	/* A conflict: three stages of one name in the split part. */
	test_sh_ok("git commit -qm b && git checkout -qb side && echo s > "
	    "d1/f8.c && git commit -qam s && git checkout -q main && echo m > "
	    "d1/f8.c && git commit -qam m && ! git merge -q side >/dev/null "
	    "2>&1 && test \"$(git ls-files -u | grep -c .)\" = 3");
	user_entries_are_gits(true);
	test_sh_ok("git checkout -q -f main && git update-index "
	    "--index-version 2 && git update-index --split-index && echo w "
	    ">> d2/f9.c && git add d2/f9.c && git rm -q d3/f10.c");
	user_entries_are_gits(true);

	/* The snapshot holds the tracked file the rules name. */
	age();
	r = open_repo(NULL);
	id = begin();
	take(r, id, "start", &res);
	names = test_sh_out("git --git-dir=%s ls-tree -r --name-only %s | "
	    "grep -c .", r->gitdir, res.commit);
	assert_string_equal(names, "81\n");
	free(names);
	snap_result_clear(&res);
	test_sh_ok("echo edited > keep.o");
	take(r, id, "turn", &res);
	names = test_sh_out("git --git-dir=%s show %s:keep.o", r->gitdir,
	    res.commit);
	assert_string_equal(names, "edited\n");
	free(names);
	snap_result_clear(&res);

	/* Refused: the shared part's bytes not the ones named. */
	shared = shared_name();
	test_sh_ok("cp %s ../shared.keep && printf 'DIRC' >> %s", shared,
	    shared);
	assert_null(user_entries(&cause));
	assert_non_null(strstr(cause, "is not the one it names"));
	free(cause);
	/* A link to a good copy, a FIFO, none: not read, nothing waits. */
	test_sh_ok("rm %s && ln -s \"$PWD/../shared.keep\" %s", shared,
	    shared);
	assert_null(user_entries(&cause));
	assert_non_null(strstr(cause, "cannot be read"));
	free(cause);
	test_sh_ok("rm %s && mkfifo %s", shared, shared);
	assert_null(user_entries(&cause));
	free(cause);
	test_sh_ok("rm %s", shared);
	assert_null(user_entries(&cause));
	assert_non_null(strstr(cause, "No such file"));
	free(cause);
	/* The next session's start snapshot says so, and keeps the names it had. */
	snap_repo_free(r);
	r = open_repo(NULL);
	take(r, begin(), "start", &res);
	assert_int_equal(res.nwarnings, 1);
	assert_non_null(strstr(res.warnings[0], "are not known"));
	names = test_sh_out("git --git-dir=%s show %s:keep.o", r->gitdir,
	    res.commit);
	assert_string_equal(names, "edited\n");
	free(names);
	snap_result_clear(&res);

	/*
	 * Bitmaps that name entries the shared part lacks (a run of ones
	 * of 64,000), a literal word past their end, garbage after them,
	 * a replacement with no entry left for it: refused.
	 */
	test_sh_ok("cp ../shared.keep %s", shared);
	free(shared);
	link_forge("00000000" "00000001" "00000000000007d1" "00000000"
	    "00000000" "00000000" "00000000");
	assert_null(user_entries(&cause));
	assert_non_null(strstr(cause, "does not have"));
	free(cause);
	link_forge("00000000" "00000001" "0000000200000000" "00000000"
	    "00000000" "00000000" "00000000");
	assert_null(user_entries(&cause));
	free(cause);
	/* A run of 2^38 zeros, then ones: still past the shared part's end. */
	link_forge("00000000" "00000002" "00000001fffffffe" "0000000000000003"
	    "00000001" "00000000" "00000000" "00000000");
	assert_null(user_entries(&cause));
	assert_non_null(strstr(cause, "does not have"));
	free(cause);
	link_forge("00000000" "00000000" "00000000" "00000000" "00000000"
	    "00000000" "ff");
	assert_null(user_entries(&cause));
	assert_non_null(strstr(cause, "garbage"));
	free(cause);
	/* No bitmaps at all: every entry here is an addition, and some have no name. */
	link_forge("");
	assert_null(user_entries(&cause));
	assert_non_null(strstr(cause, "no name"));
	free(cause);
	/* git refuses each of them too. */
	test_sh_ok("! git ls-files -s >/dev/null 2>&1");
	snap_repo_free(r);
}

/* tests/snap/index-forge.py CASE over the project's .git. */
static void
forge(const char *what)
{
	test_sh_ok("python3 %s/tests/snap/index-forge.py .git %s",
	    getenv("AGENTMUX_SRC"), what);
}

/*
 * Split indexes git never writes, read as git reads them or refused
 * (review 15): a merged entry added over a conflict of the shared part
 * (git keeps it alone), one added twice (git keeps the last); a version
 * 4 shared part whose names, each a prefix of the last, come to 160 MB
 * in 2.6 MB (agentmux died asking 8 GB of a 4 MB one); a name whose
 * length in its flags is not where its NUL is (git may read either);
 * two link extensions.
 */
static void
test_split_forged(void **state)
{
	char *got, *want, *cause;

	(void)state;
	git_repo();
	forge("merged");
	got = user_entries(&cause);
	if (got == NULL)
		fail_msg("the forged index is refused: %s", cause);
	want = test_sh_out("git ls-files -s");
	assert_string_equal(got, want);
	assert_true(got != NULL && strstr(got, "100755") != NULL);
	free(got);
	free(want);
	forge("names");
	assert_null(user_entries(&cause));
	assert_non_null(strstr(cause, "name more than"));
	free(cause);
	forge("flags");
	assert_null(user_entries(&cause));
	free(cause);
	forge("twolinks");
	assert_null(user_entries(&cause));
	assert_non_null(strstr(cause, "two link"));
	free(cause);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_index_tree, setup, teardown),
		cmocka_unit_test_setup_teardown(test_split_index, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_split_forged, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_index_paths, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_index_check_kinds, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_cached_tree, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_repo_made_natively, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_early_commit, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_counts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_config_files, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_outside, setup, teardown),
		cmocka_unit_test_setup_teardown(test_same_second_ctime, setup,
		    teardown),
	};

	log_init(stderr, LOG_LEVEL_WARN);
	return test_run_group(tests, NULL, NULL);
}
