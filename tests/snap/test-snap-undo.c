/*
 * Snapshots and undo on real git repositories: every kind of file, exact
 * round trips, undo of undo, paths, the user's git state untouched, raw
 * bytes through filters, shadow repositories, refusal while running.
 */
#include <sys/stat.h>
#include <sys/wait.h>

#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "lib/testlib.h"
#include "snap/snap-int.h"

static char user[32];     /* a throwaway user, deleted in teardown */
static char *own;

static int
setup(void **state)
{
	char *cause = NULL;

	test_proj_setup(state);
	/* agentmux's own repository for the project: $OWN in shell lines. */
	own = snap_repo_path(test_proj, &cause);
	assert_non_null(own);
	setenv("OWN", own, 1);
	return 0;
}

static int
teardown(void **state)
{
	if (user[0] != '\0') {
		test_sh("chmod -R u+rwx %s; userdel %s", test_dir, user);
		user[0] = '\0';
	}
	free(own);
	return test_proj_teardown(state);
}

/* A shell line's output and exit status; takes CMD. */
static char *
sh_out_rc(char *cmd, int *rc)
{
	FILE *fp = popen(cmd, "r");
	struct buf b;
	char chunk[4096];
	size_t n;
	int st;

	assert_non_null(fp);
	buf_init(&b);
	while ((n = fread(chunk, 1, sizeof chunk, fp)) > 0)
		buf_add(&b, chunk, n);
	st = pclose(fp);
	*rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
	free(cmd);
	if (b.data == NULL)
		buf_adds(&b, "");
	return buf_steal(&b);
}

/* Runs agentmux with the NULL-terminated arguments; asserts the exit status; returns stdout and stderr (caller frees). */
static char *
amx(int want, ...)
{
	char *argv[16], *out;
	struct test_run r;
	va_list ap;
	int n = 0;

	argv[n++] = (char *)test_agentmux();
	va_start(ap, want);
	/* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized): started on the line above; the analyzer loses it in some orders of the file's functions */
	while (n < 15 && (argv[n] = va_arg(ap, char *)) != NULL)
		n++;
	va_end(ap);
	argv[n] = NULL;
	test_run(&r, NULL, 120, argv);
	if (r.status != want)
		fail_msg("agentmux %s %s %s exited %d, not %d: %s%s", argv[1],
		    n > 2 ? argv[2] : "", n > 3 ? argv[3] : "", r.status, want,
		    r.out, r.err);
	out = xprintf("%s%s", r.out, r.err);
	test_run_free(&r);
	return out;
}

/* The user's git state that agentmux must never touch, as one string. */
static char *
git_state(void)
{
	return test_sh_out("(cd .git && sha1sum index HEAD $(find refs/heads "
	    "refs/tags refs/stash logs -type f 2>/dev/null | sort) "
	    "$(ls packed-refs 2>/dev/null)); git for-each-ref refs/heads "
	    "refs/tags refs/stash; git stash list");
}

/* The tree of session SESSION's snapshot number SEQ (0: the latest); caller frees. */
static char *
snap_tree(int64_t session, size_t seq)
{
	struct store_snapshot **v;
	struct store *st;
	char *cause = NULL, *tree;
	size_t n;

	st = store_open(NULL, &cause);
	assert_non_null(st);
	v = store_snapshot_list(st, session, &n);
	assert_true(n > 0);
	if (seq == 0)
		seq = n;
	assert_true(seq <= n);
	tree = xstrdup(v[seq - 1]->tree);
	store_snapshot_list_free(v, n);
	store_close(st);
	return tree;
}

static size_t
snap_count(int64_t session)
{
	struct store_snapshot **v;
	struct store *st;
	char *cause = NULL;
	size_t n;

	st = store_open(NULL, &cause);
	assert_non_null(st);
	v = store_snapshot_list(st, session, &n);
	store_snapshot_list_free(v, n);
	store_close(st);
	return n;
}

/* Snapshots now and returns the new tree; the worktree as git sees it, raw. */
static char *
tree_now(void)
{
	free(amx(0, "snapshot", "-m", "check", NULL));
	return snap_tree(1, 0);
}

/*
 * Files older than the index: git then trusts their stat data instead of
 * hashing them again ("racily clean" files are always hashed), which is
 * the case a copied index must get right.
 */
static void
age_files(void)
{
	test_sh_ok("find . -path ./.git -prune -o -exec touch -h -d '1 hour ago' {} + "
	    "&& git update-index -q --refresh; true");
}

static void
make_repo(void)
{
	test_sh_ok("git init -q -b master . && git config user.email t@example.com && "
	    "git config user.name t && git config commit.gpgSign false");
	test_sh_ok("mkdir -p sub 'dir with space' deep/er && echo one > a.txt && "
	    "echo two > sub/b.txt && echo keep > 'dir with space/é.txt' && "
	    "echo f > deep/er/f");
	test_sh_ok("printf '\\000\\001\\002bin\\377' > bin.dat && "
	    "printf '#!/bin/sh\\necho hi\\n' > run.sh && chmod +x run.sh");
	test_sh_ok("ln -s a.txt link && ln -s sub dirlink");
	test_sh_ok("printf 'ignored/\\n*.log\\n' > .gitignore && mkdir ignored && "
	    "echo i > ignored/x && echo l > keep.log");
	test_sh_ok("printf '* text=auto\\n*.id ident\\n' > .gitattributes && "
	    "printf 'crlf\\r\\nline\\r\\n' > win.txt && printf '$Id$\\n' > f.id");
	test_sh_ok("printf x > \"$(printf 'new\\nline.txt')\"");
	test_sh_ok("git add -A && git commit -qm init && git branch side");
	test_sh_ok("echo stashed >> a.txt && git stash -q && echo untracked > u.txt && "
	    "echo staged > s.txt && git add s.txt");
	test_sh_ok("mkdir nested && cd nested && git init -q && echo n > n.txt && "
	    "git add n.txt && git -c user.name=a -c user.email=b commit -qm n");
	age_files();
}

/* What an agent might do: every kind of change. */
static void
agent_changes(void)
{
	test_sh_ok("echo changed > a.txt && rm sub/b.txt && echo new > c.txt && "
	    "chmod +x u.txt && chmod -x run.sh");
	test_sh_ok("rm link && ln -s sub/b.txt link2 && ln -sfn a.txt dirlink");
	test_sh_ok("mv 'dir with space/é.txt' 'dir with space/renamed é.txt'");
	test_sh_ok("printf 'lf\\n' > win.txt && echo j > ignored/y && echo more > keep.log");
	test_sh_ok("mkdir -p n/m && echo d > n/m/deep && rm -r deep && echo file > deep");
	test_sh_ok("echo nested-change > nested/n.txt && echo nn > nested/new.txt");
	test_sh_ok("printf y > \"$(printf 'new\\nline.txt')\" && "
	    "printf '\\000changed' > bin.dat");
}

static void
test_roundtrip(void **state)
{
	char *before, *after, *t1, *t2, *tchanged, *out;

	make_repo();
	before = git_state();
	out = amx(0, "snapshot", "-m", "start", NULL);
	assert_non_null(strstr(out, "snapshot 1 of session 1"));
	free(out);
	t1 = snap_tree(1, 1);
	/* Untracked, nested and raw CRLF content are in; ignored ones are not. */
	out = test_sh_out("GIT_DIR=$OWN git ls-tree -r --name-only refs/agentmux/sessions/1");
	assert_non_null(strstr(out, "u.txt\n"));
	assert_non_null(strstr(out, "nested/n.txt\n"));
	assert_null(strstr(out, "ignored/"));
	assert_null(strstr(out, "keep.log"));
	free(out);
	out = test_sh_out("GIT_DIR=$OWN git cat-file -p refs/agentmux/sessions/1:win.txt | od -c");
	assert_non_null(strstr(out, "\\r"));
	free(out);

	agent_changes();
	out = amx(0, "diff", "1", "--stat", NULL);
	assert_non_null(strstr(out, "a.txt"));
	assert_non_null(strstr(out, "c.txt"));
	free(out);
	out = amx(0, "undo", "1", "--dry-run", NULL);
	assert_non_null(strstr(out, "would remove  c.txt"));
	free(out);
	out = amx(0, "undo", "1", NULL);
	assert_non_null(strstr(out, "restore sub/b.txt"));
	free(out);
	/* Exactly the first snapshot's tree again; ignored files left alone. */
	t2 = tree_now();
	assert_string_equal(t1, t2);
	test_sh_ok("test -f ignored/y && grep -q more keep.log && test -f deep/er/f");
	test_sh_ok("test \"$(cat \"$(printf 'new\\nline.txt')\")\" = x && "
	    "! test -e nested/new.txt && grep -q '^n$' nested/n.txt && "
	    "test -d nested/.git && ! test -e c.txt && ! test -e n");
	test_sh_ok("test \"$(stat -c %%a run.sh)\" = 755 && test \"$(stat -c %%a "
	    "u.txt)\" = 644 && test \"$(readlink dirlink)\" = sub");
	after = git_state();
	assert_string_equal(before, after);

	/* Undo of the undo: the agent's version (snapshot 2) comes back. */
	tchanged = snap_tree(1, 2);
	assert_string_not_equal(t1, tchanged);
	free(amx(0, "undo", "1", "--to", "2", NULL));
	free(t2);
	t2 = tree_now();
	assert_string_equal(tchanged, t2);
	test_sh_ok("grep -q changed a.txt && test -f c.txt && test -f deep");
	free(after);
	after = git_state();
	assert_string_equal(before, after);
	free(before);
	free(after);
	free(t1);
	free(t2);
	free(tchanged);
}

static void
test_paths(void **state)
{
	char *out;

	make_repo();
	free(amx(0, "snapshot", NULL));
	agent_changes();
	out = amx(0, "undo", "1", "a.txt", "dir with space", NULL);
	assert_non_null(strstr(out, "revert  a.txt"));
	assert_null(strstr(out, "c.txt"));
	free(out);
	test_sh_ok("grep -q one a.txt && test -f 'dir with space/é.txt' && "
	    "! test -e 'dir with space/renamed é.txt' && test -f c.txt && "
	    "! test -e sub/b.txt");
	/* A path from a subdirectory is relative to it. */
	test_sh_ok("cd sub && %s undo 1 b.txt >/dev/null", test_agentmux());
	test_sh_ok("test -f sub/b.txt && test -f c.txt");
	out = amx(1, "undo", "1", "/etc/passwd", NULL);
	assert_non_null(strstr(out, "outside the project"));
	free(out);
}

static void
test_names_in_diff(void **state)
{
	char *out;

	make_repo();
	free(amx(0, "snapshot", NULL));
	agent_changes();
	out = amx(0, "diff", "1", "c.txt", NULL);
	assert_non_null(strstr(out, "+new"));
	assert_null(strstr(out, "a.txt"));
	free(out);
	out = amx(0, "diff", "1", "--from", "1", "--to", "worktree", NULL);
	/* To a pipe: git's patch, every byte of a name past ASCII quoted. */
	assert_non_null(strstr(out, "renamed \\303\\251.txt"));
	free(out);
	out = amx(1, "diff", "1", "--from", "9", NULL);
	assert_non_null(strstr(out, "snapshots 1 to"));
	free(out);
}

/* A registered submodule is content too: its files are saved and restored. */
static void
test_submodule(void **state)
{
	char *out;

	test_sh_ok("mkdir ../subsrc && cd ../subsrc && git init -q && echo s > s.txt && "
	    "git add s.txt && git -c user.name=a -c user.email=b commit -qm s");
	test_sh_ok("git init -q -b master . && git -c protocol.file.allow=always "
	    "submodule add -q ../subsrc sub && git -c user.name=a -c "
	    "user.email=b commit -qm sub");
	age_files();
	free(amx(0, "snapshot", NULL));
	out = test_sh_out("GIT_DIR=$OWN git ls-tree -r refs/agentmux/sessions/1 sub");
	assert_non_null(strstr(out, "blob"));
	assert_non_null(strstr(out, "sub/s.txt"));
	assert_null(strstr(out, "commit"));
	free(out);
	test_sh_ok("echo changed > sub/s.txt && echo n > sub/new");
	free(amx(0, "undo", "1", NULL));
	test_sh_ok("grep -q '^s$' sub/s.txt && ! test -e sub/new && test -e sub/.git && "
	    "test -z \"$(git -C sub status --porcelain)\"");
}

/* Filters and line-ending attributes must not change what is saved or written back. */
static void
test_raw_bytes(void **state)
{
	char *out, *t1, *t2;

	make_repo();
	test_sh_ok("git config filter.upper.clean 'tr a-z A-Z' && "
	    "git config filter.upper.smudge cat && "
	    "echo '*.up filter=upper' >> .gitattributes && "
	    "echo lower > x.up && git add -A && git commit -qm up");
	age_files();
	free(amx(0, "snapshot", NULL));
	out = test_sh_out("GIT_DIR=$OWN git cat-file -p refs/agentmux/sessions/1:x.up");
	assert_string_equal(out, "lower\n");
	free(out);
	t1 = snap_tree(1, 1);
	test_sh_ok("echo other > x.up && printf 'a\\r\\nb\\n' > win.txt");
	free(amx(0, "undo", "1", NULL));
	test_sh_ok("test \"$(cat x.up)\" = lower && printf 'crlf\\r\\nline\\r\\n' | "
	    "cmp - win.txt");
	t2 = tree_now();
	assert_string_equal(t1, t2);
	free(t1);
	free(t2);
}

/*
 * A name made of escape sequences (as a jailed command could make one):
 * undo and the diff's headers print it quoted C-style, never raw.
 */
static void
test_control_names(void **state)
{
	char *out;

	make_repo();
	age_files();
	free(amx(0, "snapshot", NULL));
	test_sh_ok("printf x > \"$(printf 'e\\033]0;owned\\007v\\033[2J.txt')\"");
	out = amx(0, "undo", "1", "--dry-run", NULL);
	assert_null(strchr(out, 0x1b));
	assert_null(strchr(out, 0x07));
	assert_non_null(strstr(out, "would remove  \"e\\033]0;owned\\av"
	    "\\033[2J.txt\""));
	free(out);
	out = amx(0, "diff", "1", NULL);
	assert_null(strchr(out, 0x1b));
	assert_non_null(strstr(out, "\\033]0;owned"));
	free(out);
	out = amx(0, "undo", "1", NULL);
	assert_null(strchr(out, 0x1b));
	assert_non_null(strstr(out, "remove  \"e\\033]0;owned"));
	free(out);
	test_sh_ok("test -z \"$(ls | grep owned)\"");
}

/*
 * A file changed in the same second as the user's index was written, with
 * the same size, is still seen: a copied index keeps the original's time,
 * so git's racy-entry check works as it would on the original.
 */
static void
test_same_second(void **state)
{
	char *out;

	test_sh_ok("git init -q . && git config core.trustctime false && echo one > a "
	    "&& touch -d '2020-01-01 00:00:00.1' a && git add a && "
	    "touch -d '2020-01-01 00:00:00.5' .git/index && echo two > a && "
	    "touch -d '2020-01-01 00:00:00.7' a");
	free(amx(0, "snapshot", NULL));
	out = test_sh_out("GIT_DIR=$OWN git cat-file -p refs/agentmux/sessions/1:a");
	assert_string_equal(out, "two\n");
	free(out);
}

/* core.autocrlf in the user's config normalises their blobs; snapshots keep CRLF. */
static void
test_autocrlf(void **state)
{
	char *out;

	test_sh_ok("git init -q . && git config core.autocrlf input && "
	    "printf 'a\\r\\nb\\r\\n' > dos.txt && git add dos.txt && "
	    "git -c user.name=a -c user.email=b commit -qm d");
	age_files();
	free(amx(0, "snapshot", NULL));
	out = test_sh_out("GIT_DIR=$OWN git cat-file -p refs/agentmux/sessions/1:dos.txt | od -c");
	assert_non_null(strstr(out, "\\r"));
	free(out);
}

/* A file the user marked assume-unchanged is still snapshotted as it is. */
static void
test_assume_unchanged(void **state)
{
	char *out;

	make_repo();
	test_sh_ok("git update-index --assume-unchanged a.txt && echo hidden > a.txt");
	age_files();
	free(amx(0, "snapshot", NULL));
	out = test_sh_out("GIT_DIR=$OWN git cat-file -p refs/agentmux/sessions/1:a.txt");
	assert_string_equal(out, "hidden\n");
	free(out);
	/* The user's flag is theirs: still set. */
	out = test_sh_out("git ls-files -v a.txt");
	assert_string_equal(out, "h a.txt\n");
	free(out);
}

static void
test_shadow(void **state)
{
	char *out, *t1, *t2;

	test_sh_ok("mkdir -p src node_modules/pkg && echo a > src/a.c && "
	    "echo dep > node_modules/pkg/i.js && echo 'x' > 'sp ace.txt'");
	out = amx(0, "snapshot", "-m", "first", NULL);
	free(out);
	test_sh_ok("! test -e .git && ls %s/data/agentmux/shadow/proj-* >/dev/null",
	    test_dir);
	t1 = snap_tree(1, 1);
	test_sh_ok("echo b > src/a.c && rm 'sp ace.txt' && echo n > new.c && "
	    "echo dep2 > node_modules/pkg/i.js");
	out = amx(0, "undo", "1", NULL);
	assert_non_null(strstr(out, "remove  new.c"));
	assert_null(strstr(out, "node_modules"));
	free(out);
	test_sh_ok("grep -q a src/a.c && test -f 'sp ace.txt' && ! test -e new.c && "
	    "grep -q dep2 node_modules/pkg/i.js");
	t2 = tree_now();
	assert_string_equal(t1, t2);
	free(t1);
	free(t2);
}

static void
test_empty_repo(void **state)
{
	char *out;

	test_sh_ok("git init -q . && echo a > a && mkdir d && echo b > d/b");
	out = amx(0, "snapshot", NULL);
	assert_non_null(strstr(out, "2 files changed"));
	free(out);
	test_sh_ok("rm -r d && echo c > c");
	free(amx(0, "undo", "1", NULL));
	test_sh_ok("test -f d/b && ! test -e c && test -z \"$(git rev-parse -q "
	    "--verify HEAD)\"");
	assert_int_equal(snap_count(1), 2);
}

static void
test_refuse_running(void **state)
{
	struct store_session s;
	struct store *st;
	char *cause = NULL, *out;
	int64_t id;

	make_repo();
	st = store_open(NULL, &cause);
	assert_non_null(st);
	memset(&s, 0, sizeof s);
	s.agent = (char *)"shell";
	s.project = test_proj;
	s.command = (char *)"[\"sh\"]";
	id = store_session_begin(st, &s, &cause);
	assert_true(id > 0);
	store_close(st);
	/* Running, and its owner (this test) is alive. */
	out = amx(1, "undo", "last", NULL);
	assert_non_null(strstr(out, "still running"));
	free(out);
	out = amx(1, "undo", "last", "--to", "start", NULL);
	assert_non_null(strstr(out, "still running"));
	free(out);
}

static void
test_specs(void **state)
{
	char *out;

	make_repo();
	free(amx(0, "snapshot", "-m", "one", NULL));
	test_sh_ok("echo 2 > a.txt");
	free(amx(0, "snapshot", "-m", "two", NULL));
	test_sh_ok("echo 3 > a.txt");
	free(amx(0, "snapshot", "-m", "three", NULL));
	out = amx(0, "snapshots", "1", "--json", NULL);
	assert_non_null(strstr(out, "\"snap\": 3"));
	assert_non_null(strstr(out, "\"label\": \"two\""));
	free(out);
	out = amx(0, "diff", "1", "--from", "latest~2", "--to", "latest~1", NULL);
	assert_non_null(strstr(out, "+2"));
	free(out);
	out = amx(0, "diff", "1", "--from", "start", "--to", "2", NULL);
	assert_non_null(strstr(out, "+2"));
	free(out);
	out = amx(1, "diff", "1", "--from", "end", NULL);
	assert_non_null(strstr(out, "no end snapshot"));
	free(out);
	out = amx(1, "diff", "1", "--from", "latest~5", NULL);
	assert_non_null(strstr(out, "before the first"));
	free(out);
	out = test_sh_out("%s snapshots 1 --json | python3 -c 'import json, sys; "
	    "print(json.load(sys.stdin)[1][\"commit\"][:8])'", test_agentmux());
	out[strcspn(out, "\n")] = '\0';
	free(amx(0, "undo", "1", "--to", out, NULL));
	free(out);
	test_sh_ok("grep -q 2 a.txt");
}

/*
 * As an ordinary user: what the user's own files were made unreadable to
 * them (chmod 000, a dir of mode 0) is snapshotted and undone all the
 * same; a file of another owner it cannot read is reported, and undo
 * never overwrites what it could not save first.
 */
static void
test_unreadable(void **state)
{
	char *as, *out, *home, *stage, *amx_user;
	int rc;

	if (geteuid() != 0 || test_sh("command -v useradd setpriv >/dev/null") != 0)
		test_skip("needs root, useradd and setpriv to run as a throwaway user");
	snprintf(user, sizeof user, "amxsnap%ld", (long)getpid());
	if (test_sh("useradd -M -N -s /bin/sh %s", user) != 0)
		test_skip("useradd %s failed", user);
	home = xprintf("%s/uhome", test_dir);
	stage = xprintf("%s/stage", test_dir);
	amx_user = test_stage_agentmux(stage);
	as = xprintf("setpriv --reuid=%s --regid=$(id -g %s) --clear-groups "
	    "env HOME=%s XDG_CONFIG_HOME=%s/c XDG_DATA_HOME=%s/d "
	    "XDG_RUNTIME_DIR=%s/r", user, user, home, home, home, home);
	test_sh_ok("mkdir -p %s/r && chown -R %s %s . && chmod 700 %s/r", home, user,
	    home, home);
	test_sh_ok("%s sh -c 'git init -q -b master . && echo a > a && echo v1 > locked "
	    "&& echo m1 > mine && git add -A && git -c user.name=u -c user.email=u@x "
	    "commit -qm i && echo v0 > locked'", as);
	test_sh_ok("%s %s snapshot >/dev/null", as, amx_user);
	test_sh_ok("%s sh -c 'echo b > a && mkdir d && echo x > d/x && chmod 000 d && "
	    "echo m2 >> mine && chmod 000 mine'", as);
	/* Another owner's file: the user may remove it, never read it. */
	test_sh_ok("echo v2 > locked && chown 0:0 locked && chmod 000 locked");
	out = sh_out_rc(xprintf("%s %s diff 1 2>&1", as, amx_user), &rc);
	assert_int_equal(rc, 0);
	if (strstr(out, "agentmux cannot read 1 path") == NULL ||
	    strstr(out, "locked") == NULL || strstr(out, "+m2") == NULL ||
	    strstr(out, "b/d/x") == NULL)
		fail_msg("diff does not show the user's own locked files and say "
		    "which it cannot read: %s", out);
	free(out);
	out = sh_out_rc(xprintf("%s %s undo 1 2>&1", as, amx_user), &rc);
	assert_int_equal(rc, 0);
	if (strstr(out, "could not be read") == NULL)
		fail_msg("undo did not report the unreadable file: %s", out);
	if (strstr(out, "skip    locked") == NULL || strstr(out, "revert  a") ==
	    NULL || strstr(out, "remove  d/x") == NULL ||
	    strstr(out, "revert  mine") == NULL)
		fail_msg("undo did not restore the user's own files: %s", out);
	free(out);
	/* Restored the user's own files, modes too; the other owner's is untouched. */
	test_sh_ok("grep -q a a && test ! -e d && grep -q v2 locked && "
	    "test \"$(stat -c %%a locked)\" = 0 && test \"$(cat mine)\" = m1 && "
	    "test \"$(stat -c %%a mine)\" = 644");
	test_sh_ok("rm -f locked");
	free(as);
	free(home);
	free(stage);
	free(amx_user);
}

/* agentmux killed mid-session: the session is crashed, and undo still works. */
static void
test_crash_undo(void **state)
{
	struct test_run r;
	char *out;
	pid_t pid;
	int i, st;

	make_repo();
	test_amx(&r, "run", "--", "true", NULL);
	if (r.status != 0)
		test_skip("agentmux run cannot jail here: %s", r.err);
	test_run_free(&r);
	if ((pid = fork()) == 0) {
		setsid();
		execl(test_agentmux(), "agentmux", "run", "--", "sh", "-c",
		    "echo crashed > a.txt && echo new > c.txt && sleep 60",
		    (char *)NULL);
		_exit(127);
	}
	for (i = 0; i < 100 && test_sh("test -f c.txt") != 0; i++)
		usleep(100000);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	assert_int_equal(test_sh("test -f c.txt"), 0);
	out = amx(0, "sessions", NULL);
	assert_non_null(strstr(out, "crashed"));
	free(out);
	out = amx(0, "undo", "last", NULL);
	assert_non_null(strstr(out, "remove  c.txt"));
	free(out);
	test_sh_ok("grep -q one a.txt && ! test -e c.txt");
}

/* "last" is the last agent session, not a project's standalone snapshots. */
static void
test_last_is_agent(void **state)
{
	struct store_session s;
	struct store *st;
	char *cause = NULL, *out;

	make_repo();
	st = store_open(NULL, &cause);
	memset(&s, 0, sizeof s);
	s.agent = (char *)"shell";
	s.project = test_proj;
	s.command = (char *)"[\"sh\"]";
	assert_int_equal(store_session_begin(st, &s, &cause), 1);
	store_session_end(st, 1, "exited", 0, NULL);
	store_close(st);
	out = amx(0, "snapshot", NULL);
	assert_non_null(strstr(out, "of session 2"));
	free(out);
	out = amx(0, "snapshots", "last", NULL);
	assert_non_null(strstr(out, "session 1 has no snapshots"));
	free(out);
}

/* A session through `agentmux run`: start and end snapshots, then undo. */
static void
test_run_session(void **state)
{
	struct test_run r;
	char *out, *t1, *t2;

	make_repo();
	test_amx(&r, "run", "--", "true", NULL);
	if (r.status != 0)
		test_skip("agentmux run cannot jail here: %s", r.err);
	test_run_free(&r);
	test_amx(&r, "run", "--", "sh", "-c", "echo changed > a.txt && rm "
	    "sub/b.txt && echo new > c.txt && chmod +x u.txt && rm link && "
	    "git add c.txt && git -c user.name=a -c user.email=b commit -qm "
	    "agent", NULL);
	if (r.status != 0)
		fail_msg("agentmux run: %s%s", r.out, r.err);
	test_run_free(&r);
	out = amx(0, "snapshots", "last", NULL);
	assert_non_null(strstr(out, "start"));
	assert_non_null(strstr(out, "end"));
	free(out);
	out = amx(0, "diff", "last", "--from", "start", "--to", "end", "--stat",
	    NULL);
	assert_non_null(strstr(out, "c.txt"));
	free(out);
	t1 = snap_tree(2, 1);
	out = amx(0, "undo", "last", "--refs", NULL);
	assert_non_null(strstr(out, "remove  c.txt"));
	assert_non_null(strstr(out, "reset   master"));
	free(out);
	test_sh_ok("grep -q one a.txt && test -f sub/b.txt && ! test -e c.txt && "
	    "test -L link && git log -1 --format=%%s | grep -q init");
	free(amx(0, "snapshot", "2", NULL));
	t2 = snap_tree(2, 0);
	assert_string_equal(t1, t2);
	free(t1);
	free(t2);
}

/* A ref file's content as git reads it (refs/files-backend.c), or NULL where git takes it for a broken ref. */
/*
 * Refs read as git reads them, at scale: 300,000 packed refs (an agent
 * can write millions), a name on two packed lines with two values and
 * with one, a loose ref hiding its packed line, HEAD. Each ref was looked
 * up in the list read so far, one entry at a time: a session's end over
 * a million refs took hours. Now the list is sorted and halved.
 */
static void
test_refs_many(void **state)
{
	static const char a[] = "1111111111111111111111111111111111111111";
	static const char b[] = "2222222222222222222222222222222222222222";
	char *dir = test_tmpdir("refs-many"), *path, name[64];
	struct strv refs, plain;
	struct buf pk;
	size_t i, n = 300000;
	int fd;

	(void)state;
	buf_init(&pk);
	buf_adds(&pk, "# pack-refs with: peeled fully-peeled sorted \n");
	buf_printf(&pk, "%s refs/heads/main\n", a);
	buf_printf(&pk, "%s refs/tags/dup\n%s refs/tags/dup\n", a, b);
	buf_printf(&pk, "%s refs/tags/same\n%s refs/tags/same\n", a, a);
	for (i = 0; i < n; i++)
		buf_printf(&pk, "%s refs/tags/p%07zu\n", i % 2 ? a : b, n - i);
	path = xprintf("%s/packed-refs", dir);
	test_write_file(path, pk.data);
	free(path);
	test_sh_ok("mkdir -p '%s/refs/heads' && echo 'ref: refs/heads/main' "
	    ">'%s/HEAD' && echo %s >'%s/refs/heads/main' && echo %s "
	    ">'%s/refs/heads/only'", dir, dir, b, dir, a, dir);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd != -1);
	snap_hist_refs(fd, &refs);
	close(fd);
	assert_int_equal(refs.n, n + 5);
	for (i = 1; i < refs.n; i++)
		assert_true(strcmp(refs.v[i - 1], refs.v[i]) < 0);
	assert_string_equal(snap_hist_value(&refs, "HEAD"),
	    "ref: refs/heads/main");
	assert_string_equal(snap_hist_value(&refs, "refs/heads/main"), b);
	assert_string_equal(snap_hist_value(&refs, "refs/heads/only"), a);
	assert_string_equal(snap_hist_value(&refs, "refs/tags/dup"),
	    SNAP_HIST_UNREAD);
	assert_string_equal(snap_hist_value(&refs, "refs/tags/same"), a);
	for (i = 0; i < n; i += 997) {
		snprintf(name, sizeof name, "refs/tags/p%07zu", n - i);
		assert_string_equal(snap_hist_value(&refs, name), i % 2 ? a : b);
	}
	assert_null(snap_hist_value(&refs, "refs/tags/p"));
	assert_null(snap_hist_value(&refs, "refs/tags/p99999999"));
	assert_null(snap_hist_value(&refs, "refs/heads"));
	/* A list not sorted is still read right (one entry at a time). */
	strv_init(&plain);
	strv_addf(&plain, "refs/z\t%s", a);
	strv_addf(&plain, "refs/a\t%s", b);
	assert_false(plain.sorted);
	assert_string_equal(snap_hist_value(&plain, "refs/a"), b);
	snap_hist_sort(&plain);
	assert_string_equal(snap_hist_value(&plain, "refs/a"), b);
	assert_string_equal(snap_hist_value(&plain, "refs/z"), a);
	assert_null(snap_hist_value(&plain, "refs/m"));
	/* A line of a record with no tab (a damaged file) names nothing. */
	strv_add(&plain, "refs/m");
	snap_hist_sort(&plain);
	assert_null(snap_hist_value(&plain, "refs/m"));
	assert_string_equal(snap_hist_value(&plain, "refs/z"), a);
	strv_free(&plain);
	strv_free(&refs);
	buf_free(&pk);
	test_rmtree(dir);
	free(dir);
}

static void
test_ref_values(void **state)
{
	static const char id[] = "0123456789abcdef0123456789abcdef01234567";
	static const char up[] = "0123456789ABCDEF0123456789ABCDEF01234567";
	static const struct {
		const char *text, *want;
	} cases[] = {
		{ id, id },
		{ "0123456789abcdef0123456789abcdef01234567\n", id },
		{ up, id },
		{ "0123456789ABCDEF0123456789abcdef01234567 junk\n", id },
		{ "0123456789abcdef0123456789abcdef01234567\tjunk", id },
		{ "0123456789abcdef0123456789abcdef01234567junk", NULL },
		{ "0123456789abcdef0123456789abcdef0123456", NULL },
		{ "ref: refs/heads/main\n", "ref: refs/heads/main" },
		{ "ref:refs/heads/main", "ref: refs/heads/main" },
		{ "ref:\t refs/heads/main  \n", "ref: refs/heads/main" },
		{ "ref: ORIG_HEAD", "ref: ORIG_HEAD" },
		{ "ref: refs/heads/a b", NULL },
		{ "ref: refs/heads/../x", NULL },
		{ "ref: refs/heads/\033x", NULL },
		{ "garbage", NULL },
		{ "", NULL },
	};
	size_t i;
	char *v;

	(void)state;
	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		v = snap_hist_parse(cases[i].text);
		if (cases[i].want == NULL)
			assert_null(v);
		else {
			assert_non_null(v);
			assert_string_equal(v, cases[i].want);
			assert_true(snap_hist_value_ok(v));
		}
		free(v);
	}
	assert_false(snap_hist_value_ok(SNAP_HIST_UNREAD));
	assert_false(snap_hist_value_ok(up));
}

/*
 * A reflog's last line, read from its end: new value, lower case; a last
 * line over 16 MiB reads as nothing and is said to (unread), none as
 * nothing.
 */
static void
test_log_last(void **state)
{
	static const char a[] = "0123456789abcdef0123456789abcdef01234567";
	static const char b[] = "89ABCDEF0123456789abcdef0123456789abcdef";
	char *dir = test_tmpdir("loglast"), *path, *v, *line;
	struct buf big;
	size_t i;
	bool unread;
	int fd;

	(void)state;
	path = xprintf("%s/logs/refs/heads/x", dir);
	line = xprintf("%s %s A U Thor <a@x> 1 +0000\tcommit: one\n", a, a);
	buf_init(&big);
	/* 8 MiB of lines, the last one B, with newlines after it. */
	for (i = 0; big.len < (size_t)8 << 20; i++)
		buf_adds(&big, line);
	buf_printf(&big, "%s %s A U Thor <a@x> 2 +0000\tcommit: two\n\n\n", a, b);
	test_write_file(path, big.data);
	fd = open(dir, O_RDONLY | O_DIRECTORY);
	assert_true(fd != -1);
	v = snap_hist_log_last(fd, "refs/heads/x", &unread);
	assert_non_null(v);
	assert_string_equal(v, "89abcdef0123456789abcdef0123456789abcdef");
	free(v);
	/* One line alone, no newline at its end. */
	free(line);
	line = xprintf("%s %s A U Thor <a@x> 1 +0000\tx", b, a);
	test_write_file(path, line);
	v = snap_hist_log_last(fd, "refs/heads/x", &unread);
	assert_non_null(v);
	assert_string_equal(v, a);
	free(v);
	/* A last line of 100 KiB after others, and 100 KiB of newlines after it: read. */
	buf_reset(&big);
	buf_adds(&big, line);
	buf_adds(&big, "\n");
	buf_printf(&big, "%s %s A U Thor <a@x> 1 +0000\t", a, b);
	while (big.len < 100 * 1024)
		buf_adds(&big, "xxxxxxxxxxxxxxxx");
	for (i = 0; i < 100 * 1024; i++)
		buf_adds(&big, "\n");
	test_write_file(path, big.data);
	v = snap_hist_log_last(fd, "refs/heads/x", &unread);
	assert_non_null(v);
	assert_string_equal(v, "89abcdef0123456789abcdef0123456789abcdef");
	assert_false(unread);
	free(v);
	/* A last line over 16 MiB: not read, and said to be (a hostile one would hide a moved branch). */
	buf_reset(&big);
	buf_adds(&big, line);
	buf_adds(&big, "\n");
	buf_printf(&big, "%s %s A U Thor <a@x> 1 +0000\t", a, b);
	while (big.len < (size_t)17 << 20)
		buf_adds(&big, "xxxxxxxxxxxxxxxx");
	test_write_file(path, big.data);
	assert_null(snap_hist_log_last(fd, "refs/heads/x", &unread));
	assert_true(unread);
	/* A FIFO there is not waited on; a missing reflog or an empty one is nothing. */
	assert_int_equal(unlink(path), 0);
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_null(snap_hist_log_last(fd, "refs/heads/x", &unread));
	assert_int_equal(unlink(path), 0);
	assert_null(snap_hist_log_last(fd, "refs/heads/x", &unread));
	test_write_file(path, "");
	assert_null(snap_hist_log_last(fd, "refs/heads/x", &unread));
	assert_false(unread);
	test_write_file(path, "\n\n");
	assert_null(snap_hist_log_last(fd, "refs/heads/x", &unread));
	assert_false(unread);
	close(fd);
	buf_free(&big);
	free(line);
	free(path);
	test_rmtree(dir);
	free(dir);
}

/* packed-refs as git reads it: lines git cannot parse found, one line per ref kept. */
static void
test_packed_check(void **state)
{
	static const char a[] = "0123456789abcdef0123456789abcdef01234567";
	static const char b[] = "89abcdef0123456789abcdef0123456789abcdef";
	char *dir = test_tmpdir("packed"), *path, *text;
	struct strv bad, keep, outside;
	struct buf fixed;
	int fd;

	(void)state;
	path = xprintf("%s/packed-refs", dir);
	text = xprintf("# pack-refs with: peeled fully-peeled sorted \n"
	    "%s refs/heads/main\n"
	    "garbage\n"
	    "\n"
	    "%s  refs/tags/dangerous\n"
	    "%s refs/tags/ok-tab\n"
	    "%s refs/tags/twice\n^%s\n"
	    "%s refs/tags/twice\n^%s\n"
	    "%s\trefs/tags/tab\n"
	    "%s refs/a/../x\n"
	    "#late\n"
	    "%s refs/tags/cut", a, a, a, b, a, a, a, a, a, a);
	assert_int_equal(util_write_file_atomic(path, text, strlen(text), 0644,
	    NULL), 0);
	fd = open(dir, O_RDONLY | O_DIRECTORY);
	assert_true(fd != -1);
	strv_init(&bad);
	strv_init(&keep);
	strv_addf(&keep, "refs/tags/twice\t%s", a);
	assert_int_equal(snap_hist_packed_check(fd, &keep, NULL, &bad, NULL, NULL, &fixed), 1);
	assert_int_equal(bad.n, 6);
	assert_string_equal(bad.v[0], "garbage");
	assert_string_equal(bad.v[1], "");
	assert_true(strstr(bad.v[2], "  refs/tags/dangerous") != NULL);
	assert_true(strstr(bad.v[3], "refs/a/../x") != NULL);
	assert_string_equal(bad.v[4], "#late");
	assert_true(strstr(bad.v[5], "refs/tags/cut") != NULL);
	free(text);
	/* twice: the line of the start's value (the second), with its peeled id; tab after twice: not sorted. */
	text = xprintf("# pack-refs with: peeled fully-peeled \n"
	    "%s refs/heads/main\n"
	    "%s refs/tags/ok-tab\n"
	    "%s refs/tags/twice\n^%s\n"
	    "%s\trefs/tags/tab\n", a, a, a, a, a);
	assert_string_equal(fixed.data, text);
	free(text);
	buf_free(&fixed);
	strv_free(&bad);
	strv_init(&bad);
	/* Without a value to keep: the first, the one git reads. */
	assert_int_equal(snap_hist_packed_check(fd, NULL, NULL, &bad, NULL, NULL, &fixed), 1);
	assert_non_null(strstr(fixed.data, "refs/tags/twice\n"));
	text = xprintf("%s refs/tags/twice\n^%s\n", b, a);
	assert_non_null(strstr(fixed.data, text));
	free(text);
	buf_free(&fixed);
	strv_free(&bad);
	/* A file git reads whole is left as it is. */
	text = xprintf("# pack-refs with: peeled \n%s refs/heads/main\n^%s\n",
	    a, b);
	assert_int_equal(util_write_file_atomic(path, text, strlen(text), 0644,
	    NULL), 0);
	strv_init(&bad);
	assert_int_equal(snap_hist_packed_check(fd, NULL, NULL, &bad, NULL, NULL, &fixed), 0);
	assert_int_equal(bad.n, 0);
	assert_string_equal(fixed.data, text);
	buf_free(&fixed);
	free(text);
	strv_free(&bad);
	/* The repository's id length only, git's whitespace only (review 4 F2). */
	text = xprintf("# pack-refs with: peeled \n"
	    "%s refs/heads/main\n"
	    "%s%s refs/heads/long\n"
	    "%s\vrefs/heads/vt\n"
	    "%s\frefs/heads/ff\n"
	    "%s\rrefs/heads/cr\n"
	    "%s refs/tags/p\n^%s%s\n", a, a, "aaaaaaaaaaaaaaaaaaaaaaaa", a, a,
	    a, a, a, "aaaaaaaaaaaaaaaaaaaaaaaa");
	assert_int_equal(util_write_file_atomic(path, text, strlen(text), 0644,
	    NULL), 0);
	free(text);
	strv_init(&bad);
	assert_int_equal(snap_hist_packed_check(fd, NULL, NULL, &bad, NULL, NULL, &fixed), 1);
	assert_int_equal(bad.n, 4);
	assert_non_null(strstr(bad.v[0], "refs/heads/long"));
	assert_non_null(strstr(bad.v[1], "refs/heads/vt"));
	assert_non_null(strstr(bad.v[2], "refs/heads/ff"));
	assert_true(bad.v[3][0] == '^');
	text = xprintf("# pack-refs with: peeled \n%s refs/heads/main\n"
	    "%s\rrefs/heads/cr\n%s refs/tags/p\n", a, a, a);
	assert_string_equal(fixed.data, text);
	free(text);
	buf_free(&fixed);
	strv_free(&bad);
	/* A SHA-256 repository (its config says so, quoted too): a 40-digit id is bad there. */
	test_sh_ok("printf '[extensions]\\n\\tobjectFormat = \"sha256\"\\n' "
	    ">'%s/config'", dir);
	text = xprintf("# pack-refs with: peeled \n%s refs/heads/main\n", a);
	assert_int_equal(util_write_file_atomic(path, text, strlen(text), 0644,
	    NULL), 0);
	free(text);
	strv_init(&bad);
	assert_int_equal(snap_hist_packed_check(fd, NULL, NULL, &bad, NULL, NULL, &fixed), 1);
	assert_int_equal(bad.n, 1);
	buf_free(&fixed);
	strv_free(&bad);
	/* objectFormat outside [extensions] is not git's: still SHA-1 (review 5 F). */
	test_sh_ok("printf '[core]\\n\\tobjectformat = sha256\\n"
	    "[extensions \"x\"]\\n\\tobjectformat = sha256\\n' >'%s/config'", dir);
	strv_init(&bad);
	assert_int_equal(snap_hist_packed_check(fd, NULL, NULL, &bad, NULL, NULL, &fixed), 0);
	assert_int_equal(bad.n, 0);
	buf_free(&fixed);
	strv_free(&bad);
	/* Same line as its section, and the last value of several: git's. */
	test_sh_ok("printf '[extensions] objectFormat = sha256\\n"
	    "[extensions]\\n\\tobjectformat = sha1\\n' >'%s/config'", dir);
	strv_init(&bad);
	assert_int_equal(snap_hist_packed_check(fd, NULL, NULL, &bad, NULL, NULL, &fixed), 0);
	buf_free(&fixed);
	strv_free(&bad);
	test_sh_ok("printf '[extensions] objectFormat = sha256\\n' >'%s/config'",
	    dir);
	strv_init(&bad);
	assert_int_equal(snap_hist_packed_check(fd, NULL, NULL, &bad, NULL, NULL, &fixed), 1);
	buf_free(&fixed);
	strv_free(&bad);
	/* A value continued by a backslash takes the next line in (review 9 F1): git reads no objectFormat there. */
	test_sh_ok("printf '[core]\\n\\tname = x\\\\\\n[extensions] "
	    "objectformat = sha256\\n' >'%s/config' && test \"$(git config "
	    "--file '%s/config' core.name)\" = 'x[extensions] objectformat = "
	    "sha256'", dir, dir);
	strv_init(&bad);
	assert_int_equal(snap_hist_packed_check(fd, NULL, NULL, &bad, NULL, NULL, &fixed), 0);
	buf_free(&fixed);
	strv_free(&bad);
	/* Names outside refs/ not known at the start: out, with their peeled ids (review 7 F1). */
	test_sh_ok("rm -f '%s/config'", dir);
	text = xprintf("# pack-refs with: peeled \n%s main\n^%s\n%s refs/heads/main\n"
	    "%s v1\n", b, a, a, b);
	assert_int_equal(util_write_file_atomic(path, text, strlen(text), 0644,
	    NULL), 0);
	free(text);
	strv_init(&bad);
	strv_init(&outside);
	strv_free(&keep);
	strv_init(&keep);
	strv_addf(&keep, "refs/heads/main\t%s", a);
	strv_addf(&keep, "v1\t%s", b);
	assert_int_equal(snap_hist_packed_check(fd, NULL, &keep, &bad, &outside,
	    NULL, &fixed), 1);
	assert_int_equal(bad.n, 0);
	assert_int_equal(outside.n, 1);
	assert_non_null(strstr(outside.v[0], " main"));
	text = xprintf("# pack-refs with: peeled \n%s refs/heads/main\n%s v1\n",
	    a, b);
	assert_string_equal(fixed.data, text);
	free(text);
	buf_free(&fixed);
	strv_free(&outside);
	strv_free(&bad);
	unlink(path);
	assert_int_equal(snap_hist_packed_check(fd, NULL, NULL, &bad, NULL, NULL, NULL), -1);
	strv_free(&bad);
	strv_free(&keep);
	close(fd);
	test_sh("rm -rf %s", dir);
	free(path);
	free(dir);
}

/* A packed-refs that claims its refs sorted and lists some out of order (git's binary search misses them) loses the claim. */
static void
test_packed_unsorted(void **state)
{
	static const char a[] = "0123456789abcdef0123456789abcdef01234567";
	char *dir = test_tmpdir("packed-unsorted"), *path, *text, *want;
	struct strv bad, unsorted;
	struct buf fixed;
	int fd;

	(void)state;
	path = xprintf("%s/packed-refs", dir);
	fd = open(dir, O_RDONLY | O_DIRECTORY);
	assert_true(fd != -1);
	text = xprintf("# pack-refs with: peeled fully-peeled sorted \n"
	    "%s refs/heads/zz\n%s refs/heads/main\n^%s\n%s refs/heads/aa\n",
	    a, a, a, a);
	assert_int_equal(util_write_file_atomic(path, text, strlen(text), 0644,
	    NULL), 0);
	strv_init(&bad);
	strv_init(&unsorted);
	assert_int_equal(snap_hist_packed_check(fd, NULL, NULL, &bad, NULL, &unsorted,
	    &fixed), 1);
	assert_int_equal(bad.n, 0);
	assert_int_equal(unsorted.n, 2);
	assert_string_equal(unsorted.v[0], "refs/heads/main");
	assert_string_equal(unsorted.v[1], "refs/heads/aa");
	want = xprintf("# pack-refs with: peeled fully-peeled \n%s",
	    strchr(text, '\n') + 1);
	assert_string_equal(fixed.data, want);
	free(want);
	buf_free(&fixed);
	strv_free(&unsorted);
	free(text);
	/* Sorted as claimed, or not claimed sorted (git sorts it): left as it is. */
	text = xprintf("# pack-refs with: peeled sorted \n%s refs/heads/aa\n"
	    "%s refs/heads/main\n%s refs/heads/zz\n", a, a, a);
	assert_int_equal(util_write_file_atomic(path, text, strlen(text), 0644,
	    NULL), 0);
	strv_init(&unsorted);
	assert_int_equal(snap_hist_packed_check(fd, NULL, NULL, &bad, NULL, &unsorted,
	    &fixed), 0);
	assert_int_equal(unsorted.n, 0);
	buf_free(&fixed);
	free(text);
	text = xprintf("# pack-refs with: peeled \n%s refs/heads/zz\n"
	    "%s refs/heads/aa\n", a, a);
	assert_int_equal(util_write_file_atomic(path, text, strlen(text), 0644,
	    NULL), 0);
	assert_int_equal(snap_hist_packed_check(fd, NULL, NULL, &bad, NULL, &unsorted,
	    &fixed), 0);
	assert_int_equal(unsorted.n, 0);
	buf_free(&fixed);
	free(text);
	strv_free(&unsorted);
	strv_free(&bad);
	close(fd);
	test_sh("rm -rf %s", dir);
	free(path);
	free(dir);
}

/* The merge of BASE, OURS and THEIRS (texts), with LEFT; its output, to free. */
static char *
merge3(const char *base, const char *ours, const char *theirs,
    struct strv *left, struct strv *lost)
{
	struct buf b, o, t, out;

	buf_init(&b);
	buf_init(&o);
	buf_init(&t);
	buf_init(&out);
	buf_adds(&b, base);
	buf_adds(&o, ours);
	buf_adds(&t, theirs);
	assert_int_equal(snap_hist_packed_merge(&b, &o, &t, 40, &out, lost,
	    left), 0);
	buf_add(&out, "", 1);
	buf_free(&b);
	buf_free(&o);
	buf_free(&t);
	return buf_steal(&out);
}

#define R7X "1111111111111111111111111111111111111111"
#define R7Y "2222222222222222222222222222222222222222"
#define R7H "# pack-refs with: peeled fully-peeled sorted \n"

/*
 * Review 7: a name of one level hides the user's branch (F1); a peeled id
 * of the jail's is git's answer for a tag (F3), one after a bad line too;
 * a left-out line of the base told as a change of both (F4); a ref listed
 * twice deleted the user's (F5); the jail's tab or upper-case id reached
 * the user's file (F6); what is left out is bounded (F2).
 */
static void
test_packed_merge_review7(void)
{
	struct strv left, lost;
	struct buf big;
	char *out;
	size_t i;

	strv_init(&left);
	strv_init(&lost);
	out = merge3(R7H R7X " refs/heads/main\n", R7H R7X " refs/heads/main\n"
	    R7Y " main\n" R7Y " v1\n", R7H R7X " refs/heads/main\n", &left,
	    &lost);
	assert_string_equal(out, "# pack-refs with: sorted \n" R7X
	    " refs/heads/main\n");
	assert_int_equal(left.n, 2);
	free(out);
	/* F3: the user's peel stays; the jail's is never written. */
	out = merge3(R7H R7Y " refs/tags/t1\n^" R7X "\n", R7H R7Y " refs/tags/t1\n^"
	    R7Y "\n" R7X " refs/tags/t2\n^" R7Y "\n", R7H R7Y " refs/tags/t1\n^" R7X
	    "\n", &left, &lost);
	assert_string_equal(out, "# pack-refs with: sorted \n" R7Y " refs/tags/t1\n^"
	    R7X "\n" R7X " refs/tags/t2\n");
	free(out);
	strv_free(&left);
	strv_init(&left);
	out = merge3(R7H R7X " refs/heads/other\n", R7H R7X " refs/heads/other\n"
	    "garbage\n^" R7Y "\n^" R7Y "\n", R7H R7X " refs/heads/other\n", &left,
	    &lost);
	assert_string_equal(out, "# pack-refs with: sorted \n" R7X
	    " refs/heads/other\n");
	assert_int_equal(left.n, 3);
	free(out);
	/* F4: a refused name of the base, changed by the jail: no conflict. */
	out = merge3(R7H R7X " refs/heads/a\\b\n", R7H R7Y " refs/heads/a\\b\n",
	    R7H, &left, &lost);
	assert_string_equal(out, "# pack-refs with: sorted \n");
	assert_int_equal(lost.n, 0);
	free(out);
	/* F5: a ref of the user's listed twice by the jail, or with a bad peel: kept as theirs. */
	out = merge3(R7H R7X " refs/heads/b\n" R7X " refs/heads/c\n", R7H R7Y
	    " refs/heads/b\n" R7Y " refs/heads/b\n" R7Y " refs/heads/c\n^zz\n",
	    R7H R7X " refs/heads/b\n" R7X " refs/heads/c\n", &left, &lost);
	assert_string_equal(out, "# pack-refs with: sorted \n" R7X
	    " refs/heads/b\n" R7X " refs/heads/c\n");
	free(out);
	/* F6: written as git writes a line. */
	out = merge3(R7H, R7H "ABCDEF0000000000000000000000000000000000\trefs/heads/tab\n",
	    R7H, &left, &lost);
	assert_string_equal(out, "# pack-refs with: sorted \n"
	    "abcdef0000000000000000000000000000000000 refs/heads/tab\n");
	free(out);
	/* F2: 100,000 bad lines, and as many of the base: 17 kept to tell. */
	strv_free(&left);
	strv_init(&left);
	buf_init(&big);
	for (i = 0; i < 100000; i++)
		buf_adds(&big, "x\n");
	buf_add(&big, "", 1);
	out = merge3(big.data, big.data, R7H, &left, &lost);
	assert_int_equal(left.n, 17);
	free(out);
	buf_free(&big);
	strv_free(&left);
	strv_free(&lost);
}

/*
 * The jail's lines git cannot read, or new names git refuses, left out
 * into LEFT (review 6 F2: one such line made every merge fail, and the
 * jail's copy was never given again), the rest merged.
 */
static void
test_packed_merge_left(void)
{
	static const char hdr[] = "# pack-refs with: peeled fully-peeled sorted \n";
	static const char a[] = "1111111111111111111111111111111111111111";
	struct buf base, ours, theirs, out;
	struct strv left;

	buf_init(&base);
	buf_init(&ours);
	buf_init(&theirs);
	buf_init(&out);
	strv_init(&left);
	buf_printf(&base, "%s%s refs/heads/a\n%s refs/heads/b\n%s refs/heads/c\n",
	    hdr, a, a, a);
	/* b deleted, d added, among: a bad line with its peel, a bad peel (its ref goes), "@", a name twice, a NUL, a peel after a peel. */
	buf_printf(&ours, "%s%s refs/heads/a\n"
	    "%s\vrefs/heads/vt\n^%s\n"
	    "%s refs/heads/c\n"
	    "%s refs/heads/d\n"
	    "%s refs/heads/pl\n^%saa\n"
	    "%s @\n"
	    "%s refs/heads/tw\n%s refs/heads/tw\n"
	    "%s refs/tags/pp\n^%s\n^%s\n",
	    hdr, a, a, a, a, a, a, a, a, a, a, a, a, a);
	buf_add(&ours, a, 40);
	buf_add(&ours, " refs/heads/n\0x\n", 16);
	buf_add(&theirs, base.data, base.len);
	assert_int_equal(snap_hist_packed_merge(&base, &ours, &theirs, 40,
	    &out, NULL, &left), 0);
	buf_add(&out, "", 1);
	assert_string_equal(out.data, "# pack-refs with: sorted \n"
	    "1111111111111111111111111111111111111111 refs/heads/a\n"
	    "1111111111111111111111111111111111111111 refs/heads/c\n"
	    "1111111111111111111111111111111111111111 refs/heads/d\n");
	/* vt and its peel, pl and its peel, @, tw twice, pp and its two peels, n. */
	assert_int_equal(left.n, 11);
	assert_string_equal(left.v[0], "1111111111111111111111111111111111111111\vrefs/heads/vt");
	assert_string_equal(left.v[2], "1111111111111111111111111111111111111111 refs/heads/pl");
	assert_string_equal(left.v[5], "1111111111111111111111111111111111111111 refs/tags/pp");
	assert_string_equal(left.v[10], "1111111111111111111111111111111111111111 refs/heads/n\001x");
	/* The jail's file as brought back is the next base: what was left out then stays out. */
	strv_free(&left);
	strv_init(&left);
	buf_free(&out);
	buf_init(&out);
	assert_int_equal(snap_hist_packed_merge(&ours, &ours, &theirs, 40,
	    &out, NULL, &left), 0);
	buf_add(&out, "", 1);
	assert_string_equal(out.data, "# pack-refs with: sorted \n"
	    "1111111111111111111111111111111111111111 refs/heads/a\n"
	    "1111111111111111111111111111111111111111 refs/heads/b\n"
	    "1111111111111111111111111111111111111111 refs/heads/c\n");
	/* The user's file git cannot read: no merge. */
	buf_adds(&theirs, "junk\n");
	assert_int_equal(snap_hist_packed_merge(&base, &ours, &theirs, 40,
	    &out, NULL, &left), -1);
	strv_free(&left);
	test_packed_merge_review7();
	buf_free(&base);
	buf_free(&ours);
	buf_free(&theirs);
	buf_free(&out);
}

/* The jail's packed-refs and the user's made one: each ref as the side that changed it has it. */
static void
test_packed_merge(void **state)
{
	static const char hdr[] = "# pack-refs with: peeled fully-peeled sorted \n";
	struct buf base, ours, theirs, out;
	struct strv lost;

	(void)state;
	buf_init(&base);
	buf_init(&ours);
	buf_init(&theirs);
	buf_init(&out);
	strv_init(&lost);
	buf_printf(&base, "%s"
	    "1111111111111111111111111111111111111111 refs/heads/a\n"
	    "2222222222222222222222222222222222222222 refs/heads/b\n"
	    "3333333333333333333333333333333333333333 refs/heads/c\n"
	    "4444444444444444444444444444444444444444 refs/tags/t\n"
	    "^5555555555555555555555555555555555555555\n", hdr);
	/* The jail: a moved, b deleted, d added, t as it was. */
	buf_printf(&ours, "%s"
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa refs/heads/a\n"
	    "3333333333333333333333333333333333333333 refs/heads/c\n"
	    "dddddddddddddddddddddddddddddddddddddddd refs/heads/d\n"
	    "4444444444444444444444444444444444444444 refs/tags/t\n"
	    "^5555555555555555555555555555555555555555\n", hdr);
	/* The user meanwhile: c moved, e added, t deleted. */
	buf_printf(&theirs, "%s"
	    "1111111111111111111111111111111111111111 refs/heads/a\n"
	    "2222222222222222222222222222222222222222 refs/heads/b\n"
	    "cccccccccccccccccccccccccccccccccccccccc refs/heads/c\n"
	    "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee refs/heads/e\n", hdr);
	assert_int_equal(snap_hist_packed_merge(&base, &ours, &theirs, 40, &out,
	    &lost, NULL), 0);
	buf_add(&out, "", 1);
	assert_string_equal(out.data, "# pack-refs with: sorted \n"
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa refs/heads/a\n"
	    "cccccccccccccccccccccccccccccccccccccccc refs/heads/c\n"
	    "dddddddddddddddddddddddddddddddddddddddd refs/heads/d\n"
	    "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee refs/heads/e\n");
	assert_int_equal(lost.n, 0);
	/* Both moved a, each elsewhere: the user's stays, told. */
	buf_free(&theirs);
	buf_init(&theirs);
	buf_printf(&theirs, "%s"
	    "ffffffffffffffffffffffffffffffffffffffff refs/heads/a\n", hdr);
	buf_free(&out);
	buf_init(&out);
	assert_int_equal(snap_hist_packed_merge(&base, &ours, &theirs, 40, &out,
	    &lost, NULL), 0);
	buf_add(&out, "", 1);
	assert_non_null(strstr(out.data, "ffffffffffffffffffffffffffffffffffffffff refs/heads/a\n"));
	assert_int_equal(lost.n, 1);
	assert_string_equal(lost.v[0], "refs/heads/a");
	/* A line git cannot read, or a ref listed twice: no merge. */
	buf_adds(&ours, "junk\n");
	buf_free(&out);
	buf_init(&out);
	assert_int_equal(snap_hist_packed_merge(&base, &ours, &theirs, 40, &out,
	    NULL, NULL), -1);
	buf_free(&ours);
	buf_init(&ours);
	buf_printf(&ours, "%s"
	    "1111111111111111111111111111111111111111 refs/heads/a\n"
	    "2222222222222222222222222222222222222222 refs/heads/a\n", hdr);
	assert_int_equal(snap_hist_packed_merge(&base, &ours, &theirs, 40, &out,
	    NULL, NULL), -1);
	/* None at all on a side (no packed-refs): its refs as absent. */
	buf_free(&base);
	buf_init(&base);
	buf_free(&out);
	buf_init(&out);
	assert_int_equal(snap_hist_packed_merge(&base, &base, &theirs, 40, &out,
	    NULL, NULL), 0);
	buf_add(&out, "", 1);
	assert_string_equal(out.data, "# pack-refs with: sorted \n"
	    "ffffffffffffffffffffffffffffffffffffffff refs/heads/a\n");
	/* An id of the other length, or C's vertical tab for a separator: git cannot read the line (review 4 F2). */
	buf_free(&ours);
	buf_init(&ours);
	buf_printf(&ours, "%s"
	    "1111111111111111111111111111111111111111aaaaaaaaaaaaaaaaaaaaaaaa refs/heads/long\n",
	    hdr);
	assert_int_equal(snap_hist_packed_merge(&base, &ours, &theirs, 40,
	    &out, NULL, NULL), -1);
	buf_free(&ours);
	buf_init(&ours);
	buf_printf(&ours, "%s"
	    "1111111111111111111111111111111111111111\vrefs/heads/vt\n", hdr);
	assert_int_equal(snap_hist_packed_merge(&base, &ours, &theirs, 40,
	    &out, NULL, NULL), -1);
	/* In a SHA-256 repository a 40-digit id is the line git cannot read. */
	assert_int_equal(snap_hist_packed_merge(&base, &base, &theirs, 64,
	    &out, NULL, NULL), -1);
	/* A name the session made that git refuses ("@"; one it only warns of): no merge (review 5). */
	buf_free(&ours);
	buf_init(&ours);
	buf_printf(&ours, "%s1111111111111111111111111111111111111111 @\n", hdr);
	assert_int_equal(snap_hist_packed_merge(&base, &ours, &theirs, 40,
	    &out, NULL, NULL), -1);
	buf_free(&ours);
	buf_init(&ours);
	buf_printf(&ours, "%s1111111111111111111111111111111111111111 "
	    "refs/heads/a\\b\n", hdr);
	assert_int_equal(snap_hist_packed_merge(&base, &ours, &theirs, 40,
	    &out, NULL, NULL), -1);
	/* Out of order in a side: merged sorted; a NUL in a side: no merge. */
	buf_free(&ours);
	buf_init(&ours);
	buf_printf(&ours, "%s"
	    "2222222222222222222222222222222222222222 refs/heads/z\n"
	    "1111111111111111111111111111111111111111 refs/heads/b\n", hdr);
	buf_free(&out);
	buf_init(&out);
	assert_int_equal(snap_hist_packed_merge(&ours, &ours, &ours, 40,
	    &out, NULL, NULL), 0);
	buf_add(&out, "", 1);
	assert_string_equal(out.data, "# pack-refs with: sorted \n"
	    "1111111111111111111111111111111111111111 refs/heads/b\n"
	    "2222222222222222222222222222222222222222 refs/heads/z\n");
	buf_add(&ours, "1111111111111111111111111111111111111111 refs/heads/n\0x\n",
	    56);
	assert_int_equal(snap_hist_packed_merge(&base, &ours, &theirs, 40,
	    &out, NULL, NULL), -1);
	/* One of the start's given another id (git zeroes a name it warns of): merged. */
	buf_free(&base);
	buf_init(&base);
	buf_printf(&base, "%s1111111111111111111111111111111111111111 "
	    "refs/heads/a\\b\n", hdr);
	buf_free(&ours);
	buf_init(&ours);
	buf_printf(&ours, "%s0000000000000000000000000000000000000000 "
	    "refs/heads/a\\b\n", hdr);
	buf_free(&out);
	buf_init(&out);
	assert_int_equal(snap_hist_packed_merge(&base, &ours, &base, 40,
	    &out, NULL, NULL), 0);
	test_packed_merge_left();
	strv_free(&lost);
	buf_free(&base);
	buf_free(&ours);
	buf_free(&theirs);
	buf_free(&out);
}

/*
 * A packed-refs that cannot be read (past the cap, lowered here; a link;
 * a dir) is said in the list, never read as no refs; loose refs and HEAD
 * are still read, and one that is absent or empty is no refs.
 */
static void
test_packed_unread(void **state)
{
	static const char a[] = "1111111111111111111111111111111111111111";
	char *dir = test_tmpdir("packed-unread"), *why;
	size_t max = snap_hist_packed_max;
	struct strv refs;
	struct stat st;
	int fd;

	(void)state;
	test_sh_ok("cd '%s' && mkdir -p refs/heads && echo 'ref: refs/heads/"
	    "main' >HEAD && echo %s >refs/heads/loose && printf '%s "
	    "refs/heads/main\\n%s refs/tags/v1\\n' >packed-refs", dir, a,
	    a, a);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd != -1);
	snap_hist_refs(fd, &refs);
	assert_false(snap_hist_packed_unread(&refs));
	assert_string_equal(snap_hist_value(&refs, "refs/tags/v1"), a);
	strv_free(&refs);
	/* One byte past the cap. */
	assert_int_equal(fstatat(fd, "packed-refs", &st, 0), 0);
	snap_hist_packed_max = (size_t)st.st_size - 1;
	snap_hist_refs(fd, &refs);
	assert_true(snap_hist_packed_unread(&refs));
	assert_null(snap_hist_value(&refs, "refs/tags/v1"));
	assert_string_equal(snap_hist_value(&refs, "refs/heads/loose"), a);
	assert_string_equal(snap_hist_value(&refs, "HEAD"),
	    "ref: refs/heads/main");
	why = snap_hist_packed_why(fd);
	assert_non_null(strstr(why, "more than the"));
	free(why);
	strv_free(&refs);
	snap_hist_packed_max = max;
	/* A link (to a file git would read) and a dir. */
	test_sh_ok("cd '%s' && mv packed-refs pr && ln -s pr packed-refs", dir);
	snap_hist_refs(fd, &refs);
	assert_true(snap_hist_packed_unread(&refs));
	strv_free(&refs);
	why = snap_hist_packed_why(fd);
	assert_non_null(strstr(why, "symbolic link"));
	free(why);
	test_sh_ok("cd '%s' && rm packed-refs && mkdir packed-refs", dir);
	snap_hist_refs(fd, &refs);
	assert_true(snap_hist_packed_unread(&refs));
	strv_free(&refs);
	/* None, or empty: no packed refs, known. */
	test_sh_ok("cd '%s' && rmdir packed-refs", dir);
	snap_hist_refs(fd, &refs);
	assert_false(snap_hist_packed_unread(&refs));
	assert_int_equal(refs.n, 2);
	strv_free(&refs);
	test_sh_ok("cd '%s' && : >packed-refs", dir);
	snap_hist_refs(fd, &refs);
	assert_false(snap_hist_packed_unread(&refs));
	strv_free(&refs);
	close(fd);
	test_sh("rm -rf %s", dir);
	free(dir);
}

/* Reflog merging: a NUL byte or a missing last newline in the session's log loses no entry and leaves whole lines. */
static void
test_merge_log(void **state)
{
	static const char e1[] = "0000000000000000000000000000000000000000 "
	    "0123456789abcdef0123456789abcdef01234567 u <u@x> 1 +0000\tone";
	static const char e2[] = "0123456789abcdef0123456789abcdef01234567 "
	    "89abcdef0123456789abcdef0123456789abcdef u <u@x> 2 +0000\ttwo";
	static const char e3[] = "89abcdef0123456789abcdef0123456789abcdef "
	    "fedcba9876543210fedcba9876543210fedcba98 a <a@x> 3 +0000\tthree";
	struct buf saved, now, out;
	struct strv added;
	char *want;

	(void)state;
	buf_init(&saved);
	buf_init(&now);
	buf_printf(&saved, "%s\n%s\n", e1, e2);
	/* The session took e1 out, wrote a line with a NUL, then e2 and e3 without a last newline. */
	buf_add(&now, "junk", 4);
	buf_addc(&now, '\0');
	buf_printf(&now, "more\n%s\n%s", e2, e3);
	assert_int_equal(snap_hist_merge_log(&saved, &now, &out), 1);
	want = xprintf("%s\n%s\njunk\n%s\n", e1, e2, e3);
	assert_int_equal(out.len, strlen(want));
	assert_memory_equal(out.data, want, out.len);
	free(want);
	buf_free(&out);
	strv_init(&added);
	snap_hist_log_added(&saved, &now, &added);
	assert_int_equal(added.n, 2);
	assert_string_equal(added.v[0], e3);
	assert_string_equal(added.v[1], "junk");
	strv_free(&added);
	/* Only appended to: nothing to put back. */
	buf_reset(&now);
	buf_printf(&now, "%s\n%s\n%s\n", e1, e2, e3);
	assert_int_equal(snap_hist_merge_log(&saved, &now, &out), 0);
	buf_free(&out);
	buf_free(&now);
	buf_free(&saved);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ref_values),
		cmocka_unit_test(test_refs_many),
		cmocka_unit_test(test_packed_check),
		cmocka_unit_test(test_log_last),
		cmocka_unit_test(test_packed_unsorted),
		cmocka_unit_test(test_packed_unread),
		cmocka_unit_test(test_packed_merge),
		cmocka_unit_test(test_merge_log),
		cmocka_unit_test_setup_teardown(test_roundtrip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_paths, setup, teardown),
		cmocka_unit_test_setup_teardown(test_names_in_diff, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_submodule, setup, teardown),
		cmocka_unit_test_setup_teardown(test_raw_bytes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_control_names, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_same_second, setup, teardown),
		cmocka_unit_test_setup_teardown(test_autocrlf, setup, teardown),
		cmocka_unit_test_setup_teardown(test_assume_unchanged, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_shadow, setup, teardown),
		cmocka_unit_test_setup_teardown(test_empty_repo, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refuse_running, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_specs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_crash_undo, setup, teardown),
		cmocka_unit_test_setup_teardown(test_last_is_agent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_session, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unreadable, setup, teardown),
	};

	return test_run_group(tests, NULL, NULL);
}
