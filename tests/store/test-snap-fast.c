/*
 * The snapshot's shortcuts give what git itself would: the tree read from
 * the index's cache, the commit written early, the counts known without
 * diff-tree, the config read without git config, the shadow repository
 * found without rev-parse.
 */
#include <sys/stat.h>

#include <event2/event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "lib/testlib.h"
#include "store/snap-int.h"

static char *dir;
static char *proj;
static char *orig_cwd;
static struct store *st;

static int
setup(void **state)
{
	char cwd[4096], *cause = NULL;

	dir = test_tmpdir("snapfast");
	test_isolate(dir);
	proj = xprintf("%s/proj", dir);
	mkdir(proj, 0755);
	orig_cwd = xstrdup(getcwd(cwd, sizeof cwd));
	assert_int_equal(chdir(proj), 0);
	st = store_open(NULL, &cause);
	assert_non_null(st);
	return 0;
}

static int
teardown(void **state)
{
	store_close(st);
	assert_int_equal(chdir(orig_cwd), 0);
	test_rmtree(dir);
	free(dir);
	free(proj);
	free(orig_cwd);
	return 0;
}

/* Files older than any index written from now on: none is racily clean. */
static void
age(void)
{
	test_sh_ok("find . -path ./.git -prune -o -exec touch -h -d '1 minute ago' {} +");
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
	s.project = proj;
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
	struct snap_repo *r = snap_repo_open(proj, NULL, tag, &cause);

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

/*
 * A tree as git sees it: every entry with its mode and object, as
 * ls-tree -r (of a tree) and ls-files -s (of an index) print them.
 */
static char *
tree_entries(const char *tree)
{
	return test_sh_out("git ls-tree -r --full-tree %s | sed 's/ blob / /; "
	    "s/ commit / /; s/\\t/ /'", tree);
}

static char *
index_entries(struct snap_repo *r)
{
	return test_sh_out("GIT_INDEX_FILE=%s git ls-files -s | "
	    "awk '{ p = $0; sub(/^[^\\t]*\\t/, \"\", p); print $1, $2, p }'",
	    r->index);
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
	a = tree_entries(r2.tree);
	b = index_entries(r);
	assert_string_equal(a, b);
	assert_non_null(strstr(a, "nested/n.txt"));
	assert_non_null(strstr(a, "120000"));
	assert_non_null(strstr(a, "100755"));
	assert_null(strstr(a, "ignored/"));
	free(a);
	free(b);
	/* The raw bytes, CR and all. */
	a = test_sh_out("git cat-file -p %s:win.txt | od -c", r2.tree);
	assert_non_null(strstr(a, "\\r"));
	free(a);
	/* A change: the cache is invalid, write-tree runs, and it is right. */
	test_sh_ok("echo changed > sub/b.txt && rm link && chmod -x run.sh");
	take(r, begin(), "start", &r3);
	assert_string_not_equal(r3.tree, r2.tree);
	a = tree_entries(r3.tree);
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
 * The first snapshot of a session writes its commit through hash-object:
 * commit-tree, given the same author, committer and dates, makes the very
 * same object. Its refs are written, and the repository stays sound.
 */
static void
test_early_commit(void **state)
{
	struct snap_result res;
	struct snap_repo *r;
	char *text, *when, *want, *ref, *head;
	int64_t id;

	git_repo();
	test_sh_ok("echo a > a && git add a && git commit -qm init && echo b > b");
	age();
	id = begin();
	r = open_repo("early");
	log_start();
	take(r, id, "start", &res);
	text = log_ran();
	assert_non_null(strstr(text, "hash-object"));
	assert_null(strstr(text, "commit-tree"));
	free(text);
	head = test_sh_out("git rev-parse HEAD | tr -d '\\n'");
	text = test_sh_out("git cat-file commit %s", res.commit);
	assert_non_null(strstr(text, head));
	when = test_sh_out("git cat-file commit %s | sed -n 's/^committer "
	    "agentmux <agentmux@localhost> //p' | tr -d '\\n'", res.commit);
	want = test_sh_out("GIT_AUTHOR_NAME=agentmux "
	    "GIT_AUTHOR_EMAIL=agentmux@localhost GIT_COMMITTER_NAME=agentmux "
	    "GIT_COMMITTER_EMAIL=agentmux@localhost GIT_AUTHOR_DATE='%s' "
	    "GIT_COMMITTER_DATE='%s' git -c commit.gpgSign=false commit-tree "
	    "-p %s -m 'agentmux snapshot: start, session %lld' %s | "
	    "tr -d '\\n'", when, when, head, (long long)id, res.tree);
	assert_string_equal(res.commit, want);
	ref = test_sh_out("git rev-parse refs/agentmux/sessions/%lld "
	    "refs/agentmux/snaps/%lld/%s | sort -u | tr -d '\\n'",
	    (long long)id, (long long)id, res.commit);
	assert_string_equal(ref, res.commit);
	test_sh_ok("git fsck --no-dangling --no-progress 2>/dev/null");
	free(text);
	free(when);
	free(want);
	free(ref);
	free(head);
	snap_result_clear(&res);
	snap_repo_free(r);
}

/* Counts git would give (diff-tree), found without it where they are known. */
static void
test_counts(void **state)
{
	struct snap_result res;
	struct snap_repo *r;
	char *n;
	int64_t id;

	/* Outside git: from the empty tree, every file. */
	test_sh_ok("mkdir -p d && echo a > a && echo b > d/b && echo c > d/c");
	age();
	log_start();
	r = open_repo("counts");
	assert_true(r->shadow);
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
	test_rmtree(proj);
	mkdir(proj, 0755);
	assert_int_equal(chdir(proj), 0);

	/* A clean checkout: the tree is HEAD's. */
	git_repo();
	test_sh_ok("mkdir -p d && echo a > a && echo b > d/b && git add -A && "
	    "git commit -qm init");
	age();
	r = open_repo("counts2");
	log_start();
	take(r, begin(), "start", &res);
	assert_int_equal(res.files_changed, 0);
	n = log_ran();
	assert_null(strstr(n, "diff-tree"));
	/* No config file names autocrlf: git config is not asked. */
	assert_null(strstr(n, "config"));
	free(n);
	snap_result_clear(&res);
	/* Changed, removed and new files: as diff-tree counts them. */
	test_sh_ok("echo x > a && rm d/b && echo n > n && echo m > d/m");
	take(r, begin(), "start", &res);
	n = test_sh_out("git diff-tree -r --name-only HEAD %s | wc -l | tr -d ' \\n'",
	    res.tree);
	assert_int_equal(res.files_changed, atoi(n));
	assert_int_equal(res.files_changed, 4);
	free(n);
	snap_result_clear(&res);
	snap_repo_free(r);
}

/*
 * Line-ending conversion set anywhere git reads config (globally, or in a
 * file the repository's config includes) is found without git config
 * when no file names it, and with it when one does: the snapshot keeps
 * the bytes on disk either way.
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
	/* The blob the user's git made has LF; the file on disk has CRLF. */
	out = test_sh_out("git cat-file -p HEAD:win.txt | od -c");
	assert_null(strstr(out, "\\r"));
	free(out);
	age();
	gdir = xprintf("%s/git", getenv("XDG_CONFIG_HOME"));
	mkdir(gdir, 0700);
	test_sh_ok("printf '[core]\\n\\tautocrlf = true\\n' > %s/config", gdir);
	r = open_repo("global");
	log_start();
	take(r, begin(), "start", &res);
	out = log_ran();
	assert_non_null(strstr(out, "config"));
	free(out);
	out = test_sh_out("git cat-file -p %s:win.txt | od -c", res.tree);
	assert_non_null(strstr(out, "\\r"));
	free(out);
	snap_result_clear(&res);
	snap_repo_free(r);
	/* Through an include in the repository's config. */
	test_sh_ok("rm %s/config && printf '[core]\\n\\tautocrlf = true\\n' > "
	    "%s/inc && git config include.path %s/inc", gdir, dir, dir);
	r = open_repo("include");
	take(r, begin(), "start", &res);
	out = test_sh_out("git cat-file -p %s:win.txt | od -c", res.tree);
	assert_non_null(strstr(out, "\\r"));
	free(out);
	snap_result_clear(&res);
	snap_repo_free(r);
	free(gdir);
}

/* Outside any repository the shadow is used without asking git; inside one, git says where. */
static void
test_outside(void **state)
{
	struct snap_repo *r;
	char *sub, *cause = NULL;

	r = open_repo("out");
	assert_true(r->shadow);
	assert_string_equal(r->worktree, proj);
	snap_repo_free(r);
	/* Something above that could be a repository: git decides (it is not one). */
	test_sh_ok("echo 'ref: refs/heads/x' > ../HEAD");
	r = open_repo("out2");
	assert_true(r->shadow);
	snap_repo_free(r);
	test_sh_ok("rm ../HEAD");
	/* A subdirectory of a repository snapshots the repository. */
	git_repo();
	test_sh_ok("mkdir -p s/t");
	sub = xprintf("%s/s/t", proj);
	r = snap_repo_open(sub, NULL, "sub", &cause);
	assert_non_null(r);
	assert_false(r->shadow);
	assert_string_equal(r->worktree, proj);
	snap_repo_free(r);
	free(sub);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_index_tree, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cached_tree, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_early_commit, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_counts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_config_files, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_outside, setup, teardown),
	};

	log_init(stderr, LOG_LEVEL_WARN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
