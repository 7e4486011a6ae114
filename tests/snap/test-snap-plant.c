/*
 * The end-of-session look at a project (snap_plant_scan) on real files and
 * real git: set-uid bits taken off what changed (and only that), a planted
 * config cut to inert keys with values that survive git's own parser, a
 * reflog link moved out, the patterns of the files the user's tools run.
 */
#include <sys/stat.h>
#include <sys/syscall.h>

#include <linux/capability.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "lib/testlib.h"
#include "snap/snap.h"
#include "snap/snap-int.h"
#include "store/store.h"

static char *dir;
static char *proj;

static int
setup(void **state)
{
	dir = test_tmpdir("plant");
	test_isolate(dir);
	proj = xprintf("%s/proj", dir);
	test_sh_ok("mkdir -p %s", proj);
	return 0;
}

static int
teardown(void **state)
{
	test_rmtree(dir);
	free(dir);
	free(proj);
	return 0;
}

/* Runs the scan with SINCE; RES is the caller's to free. */
static void
scan(int64_t since, bool had_git, struct snap_plant_result *res)
{
	struct snap_plant_opts o;
	char *q = xprintf("%s/quarantine", dir), *cause = NULL;

	memset(&o, 0, sizeof o);
	o.project = proj;
	o.since = since;
	o.quarantine = q;
	o.had_git = had_git;
	snap_plant_result_init(res);
	if (snap_plant_scan(&o, res, &cause) == -1)
		fail_msg("scan: %s", cause);
	free(q);
}

static mode_t
mode_of(const char *rel)
{
	char *p = xprintf("%s/%s", proj, rel);
	struct stat st;

	assert_int_equal(lstat(p, &st), 0);
	free(p);
	return st.st_mode & 07777;
}

/* The identity of the project's dir REL into *ID (zero if there is none). */
static void
id_of(const char *rel, struct snap_dirid *id)
{
	char *p = xprintf("%s/%s", proj, rel);
	struct stat st;

	memset(id, 0, sizeof *id);
	if (lstat(p, &st) == 0) {
		id->dev = st.st_dev;
		id->ino = st.st_ino;
	}
	free(p);
}

/* The project's git dir REL as the start records it, into IDS[*N]. */
static void
record_of(const char *rel, struct snap_gitdirid *ids, size_t *n)
{
	char *objects = xprintf("%s/objects", rel), *hooks = xprintf("%s/hooks",
	    rel);

	id_of(rel, &ids[*n].dir);
	id_of(objects, &ids[*n].objects);
	id_of(hooks, &ids[*n].hooks);
	(*n)++;
	free(hooks);
	free(objects);
}

/* The scan since SINCE with the start's git dirs IDS (N; KNOWN), HAD_GIT: its alerts, all in one (caller frees). */
static char *
scan_ids(int64_t since, const struct snap_gitdirid *ids, size_t n,
    bool known, bool had_git)
{
	struct snap_plant_result res;
	struct snap_plant_opts o;
	char *q = xprintf("%s/quarantine", dir), *cause = NULL;
	struct buf all;
	size_t i;

	memset(&o, 0, sizeof o);
	o.project = proj;
	o.since = since;
	o.quarantine = q;
	o.gitids = ids;
	o.ngitids = n;
	o.gitids_known = known;
	o.had_git = had_git;
	snap_plant_result_init(&res);
	if (snap_plant_scan(&o, &res, &cause) == -1)
		fail_msg("scan: %s", cause);
	buf_init(&all);
	for (i = 0; i < res.alerts.n; i++)
		buf_printf(&all, "%s\n", res.alerts.v[i]);
	snap_plant_result_free(&res);
	free(q);
	return all.data != NULL ? all.data : xstrdup("");
}

/*
 * Review 9 F3: a git dir, or a hooks dir, that is not one of the start's
 * is the session's whole, whatever its files' ctimes (parts made before,
 * renamed into place, keep theirs); one of the start's the session
 * touched keeps the per-file rule; a dir that took a start's inode
 * number is told by its objects dir. Review 11 F1: a hooks dir is the
 * start's only if it was its own git dir's (another repository's git dir
 * of the start, renamed in as lib's hooks, is new).
 */
static void
test_gitdir_ids(void **state)
{
	struct snap_gitdirid ids[8];
	size_t n = 0;
	int64_t since;
	char *a;

	test_sh_ok("cd %s && git init -q lib && git init -q lib2 && "
	    "printf '#!/bin/sh\\n' >lib/.git/hooks/post-commit && chmod +x "
	    "lib/.git/hooks/post-commit && cp lib/.git/hooks/post-commit "
	    "lib2/.git/post-checkout && git -C lib config alias.st status && "
	    "mkdir -p prep/hooks prep/objects prep/refs/heads prep2/hooks && "
	    "printf '#!/bin/sh\\n' >prep/hooks/post-checkout && chmod +x "
	    "prep/hooks/post-checkout && cp prep/hooks/post-checkout "
	    "prep2/hooks/pre-commit && git config --file prep/config "
	    "core.fsmonitor true", proj);
	record_of("lib/.git", ids, &n);
	record_of("lib2/.git", ids, &n);
	usleep(50000);
	since = snap_plant_clock();
	usleep(50000);
	/* One of the start's the session wrote in: the user's hook and key stay. */
	test_sh_ok("cd %s/lib && touch .git/ORIG_HEAD", proj);
	a = scan_ids(since, ids, n, true, false);
	assert_null(strstr(a, "lib"));
	free(a);
	test_sh_ok("test -x %s/lib/.git/hooks/post-commit && "
	    "test \"$(git -C %s/lib config alias.st)\" = status", proj, proj);
	/* Renamed into place, as a new repository and as lib's hooks. */
	test_sh_ok("cd %s && echo 'ref: refs/heads/main' >prep/HEAD && "
	    "mkdir x && mv prep x/.git && mv lib/.git/hooks lib-hooks-old && "
	    "mv prep2/hooks lib/.git/hooks", proj);
	/* x/.git as if it took a start's inode number: its objects are not. */
	ids[n] = ids[0];
	id_of("x/.git", &ids[n++].dir);
	a = scan_ids(since, ids, n, true, false);
	assert_non_null(strstr(a, "x had a new hook"));
	assert_non_null(strstr(a, "core.fsmonitor"));
	assert_non_null(strstr(a, "lib had a new hook"));
	free(a);
	test_sh_ok("test ! -e %s/x/.git/hooks/post-checkout && "
	    "test ! -e %s/lib/.git/hooks/pre-commit && "
	    "test -z \"$(git config --file %s/x/.git/config core.fsmonitor)\"",
	    proj, proj, proj);
	/* Another git dir of the start renamed in as lib's hooks (review 11 F1). */
	test_sh_ok("cd %s && rmdir lib/.git/hooks && mv lib2/.git "
	    "lib/.git/hooks", proj);
	a = scan_ids(since, ids, n, true, false);
	assert_non_null(strstr(a, "lib had a new hook"));
	free(a);
	test_sh_ok("test ! -e %s/lib/.git/hooks/post-checkout", proj);
	/* Nothing known of the start: a git dir changed since is new whole (the user's key goes too). */
	a = scan_ids(since, NULL, 0, false, false);
	assert_non_null(strstr(a, "alias.st"));
	free(a);
}

/*
 * The project's linked worktrees' git dirs (.git/worktrees/NAME), which
 * the user's git and other sessions write in while a session runs: never
 * taken for new, a rebase carried on there left alone.
 */
static void
test_gitdir_ids_worktree(void **state)
{
	int64_t since;
	char *a;

	test_sh_ok("cd %s && git init -q && git config user.email a@b && "
	    "git config user.name a && echo 1 >f && git add f && "
	    "git commit -qm 1 && echo 2 >f && git commit -qam 2 && "
	    "git worktree add -q %s/wt && git config "
	    "extensions.worktreeConfig true && git -C %s/wt config --worktree "
	    "alias.wt status", proj, dir, dir);
	usleep(50000);
	since = snap_plant_clock();
	usleep(50000);
	test_sh_ok("cd %s/wt && GIT_SEQUENCE_EDITOR='printf \"break\\n\" >' "
	    "git rebase -q -i HEAD~1 >/dev/null 2>&1", dir);
	a = scan_ids(since, NULL, 0, true, true);
	assert_null(strstr(a, "alias.wt"));
	assert_null(strstr(a, "rebase"));
	free(a);
	test_sh_ok("test -d %s/.git/worktrees/wt/rebase-merge", proj);
	/* A nested repository's linked worktree in the project: told, left in place (review 11 F5). */
	test_sh_ok("cd %s && git init -q lib && cd lib && git config "
	    "user.email a@b && git config user.name a && echo 1 >f && git add f "
	    "&& git commit -qm 1 && echo 2 >f && git commit -qam 2 && "
	    "git worktree add -q ../lwt", proj);
	usleep(50000);
	since = snap_plant_clock();
	usleep(50000);
	test_sh_ok("cd %s/lwt && GIT_SEQUENCE_EDITOR='printf \"break\\n\" >' "
	    "git rebase -q -i HEAD~1 >/dev/null 2>&1", proj);
	a = scan_ids(since, NULL, 0, true, true);
	assert_non_null(strstr(a, "a linked worktree's) made or changed while "
	    "the session ran: it was left in place"));
	free(a);
	test_sh_ok("test -d %s/lib/.git/worktrees/lwt/rebase-merge", proj);
}

/* What changed in the session loses its set-uid and set-gid bits; what did not keeps them. */
static void
test_setid(void **state)
{
	struct snap_plant_result res;
	int64_t since;

	test_sh_ok("cd %s && cp /bin/true old && chmod 4755 old && "
	    "mkdir -p .git shared && chmod 2775 .git shared", proj);
	sleep(1);
	since = util_now_ms();
	/*
	 * A set-gid dir added to keeps its bit (a shared repository's .git,
	 * a dir made in it, which the kernel makes set-gid): no jail can set
	 * it, seccomp refuses, and it runs nothing.
	 */
	test_sh_ok("cd %s && cp /bin/true new && chmod 6755 new && "
	    "touch .git/x && mkdir shared/in", proj);
	scan(since, false, &res);
	assert_int_equal(mode_of("new"), 0755);
	assert_int_equal(mode_of("old"), 04755);
	assert_int_equal(mode_of(".git"), 02775);
	assert_int_equal(mode_of("shared"), 02775);
	assert_int_equal(mode_of("shared/in") & 02000, 02000);
	assert_int_equal(res.setid, 1);
	assert_int_equal(res.alerts.n, 1);
	assert_non_null(strstr(res.alerts.v[0], "agentmux took that bit off"));
	snap_plant_result_free(&res);
}

/* Inert keys stay, with values git reads back the same; the rest goes, the file kept. */
static void
test_allow_list(void **state)
{
	struct snap_plant_result res;
	char *s;

	test_sh_ok("cd %s && git init -q nest && cd nest && "
	    "git config user.name 'a \"quoted\" \\ name' && "
	    "git config remote.'we\"ird.sub'.url https://example.com/x && "
	    "git config remote.bad.url 'ext::sh -c x' && "
	    "git config branch.main.merge refs/heads/main && "
	    "git config core.worktree ../../.. && "
	    "git config gpg.ssh.defaultKeyCommand 'touch x' && "
	    "git config alias.st status && git config foo.bar true", proj);
	scan(0, false, &res);
	s = test_sh_out("git config --file %s/nest/.git/config user.name", proj);
	assert_string_equal(s, "a \"quoted\" \\ name\n");
	free(s);
	s = test_sh_out("git config --file %s/nest/.git/config "
	    "remote.'we\"ird.sub'.url", proj);
	assert_string_equal(s, "https://example.com/x\n");
	free(s);
	s = test_sh_out("git config --file %s/nest/.git/config --get-regexp "
	    "'gpg|alias|foo|remote.bad|core.worktree'; true", proj);
	assert_string_equal(s, "");
	free(s);
	s = test_sh_out("git config --file %s/nest/.git/config "
	    "branch.main.merge", proj);
	assert_string_equal(s, "refs/heads/main\n");
	free(s);
	assert_true(res.alerts.n >= 1);
	assert_non_null(strstr(res.alerts.v[0], "gpg.ssh.defaultkeycommand"));
	test_sh_ok("grep -q defaultKeyCommand %s/quarantine/*-config", dir);
	/* What the scan wrote is inert: a second one finds nothing. */
	snap_plant_result_free(&res);
	scan(0, false, &res);
	assert_int_equal(res.alerts.n, 0);
	snap_plant_result_free(&res);
}

/* A config git cannot parse, or one that is a FIFO, goes whole (and nothing hangs). */
static void
test_bad_config(void **state)
{
	struct snap_plant_result res;

	test_sh_ok("cd %s && git init -q a && printf '[core\\n' >a/.git/config && "
	    "git init -q b && rm b/.git/config && mkfifo b/.git/config", proj);
	scan(0, false, &res);
	test_sh_ok("! test -e %s/a/.git/config && ! test -e %s/b/.git/config",
	    proj, proj);
	assert_int_equal(res.alerts.n, 2);
	snap_plant_result_free(&res);
}

/* A link in a git dir (a reflog the host's git would append through) goes. */
static void
test_gitdir_link(void **state)
{
	struct snap_plant_result res;

	test_sh_ok("cd %s && git init -q . && git -c user.name=t -c "
	    "user.email=t@x commit -q --allow-empty -m x "
	    "&& echo keep > %s/target && ln -sf %s/target .git/logs/HEAD && "
	    "mkfifo .git/refs/heads/fifo", proj, dir, dir);
	scan(0, true, &res);
	test_sh_ok("! test -L %s/.git/logs/HEAD && ! test -p "
	    "%s/.git/refs/heads/fifo && test \"$(cat %s/target)\" = keep", proj,
	    proj, dir);
	assert_int_equal(res.alerts.n, 2);
	snap_plant_result_free(&res);
}

/* A .git file pointing at the project's own git dir does not get the user's config cut. */
static void
test_own_gitdir(void **state)
{
	struct snap_plant_result res;
	char *s;

	test_sh_ok("cd %s && git init -q . && git config alias.st status && "
	    "mkdir sub && echo 'gitdir: ../.git' >sub/.git", proj);
	scan(0, true, &res);
	s = test_sh_out("git -C %s config alias.st", proj);
	assert_string_equal(s, "status\n");
	free(s);
	assert_int_equal(res.alerts.n, 0);
	snap_plant_result_free(&res);
}

/*
 * The project's own .git file (a linked worktree's: gitdir: gd/real),
 * there before and unchanged, whose way the session swapped: gd made a
 * link to a git dir outside. The link goes to the quarantine, the .git
 * stays; a link there before the session on such a way is followed.
 */
static void
test_own_dotgit_swap(void **state)
{
	struct snap_plant_result res;
	int64_t since;

	test_sh_ok("mkdir -p %s/out/real %s/gd && cd %s && "
	    "git init -q --separate-git-dir=gd/real . && "
	    "echo 'gitdir: gd/real' >.git && git init -q --bare %s/out/real && "
	    "mkdir %s/had && ln -s ../gd %s/had/gd && mkdir sub && "
	    "echo 'gitdir: ../had/gd/real' >sub/.git", dir, proj, proj, dir,
	    proj, proj);
	usleep(20000);
	since = snap_plant_clock();
	usleep(20000);
	test_sh_ok("cd %s && mv gd gd.old && ln -s %s/out gd", proj, dir);
	scan(since, true, &res);
	test_sh_ok("test ! -e %s/gd && test ! -L %s/gd && test -f %s/.git && "
	    "test -L %s/had/gd", proj, proj, proj, proj);
	assert_int_equal(res.alerts.n, 1);
	assert_non_null(strstr(res.alerts.v[0], ".git, there before the "
	    "session, names the git dir gd/real, and the way there goes "
	    "through gd, a link made or changed in the session"));
	snap_plant_result_free(&res);
}

static void
test_match(void **state)
{
	assert_true(snap_plant_match(".envrc", ".envrc"));
	assert_false(snap_plant_match(".envrc", "sub/.envrc"));
	assert_true(snap_plant_match("**/.envrc", "sub/deep/.envrc"));
	assert_true(snap_plant_match("**/.envrc", ".envrc"));
	assert_true(snap_plant_match(".devcontainer", ".devcontainer/x/y"));
	assert_false(snap_plant_match(".devcontainer", ".devcontainer2"));
	assert_true(snap_plant_match(".claude/settings*.json",
	    ".claude/settings.local.json"));
	assert_false(snap_plant_match(".claude/settings*.json",
	    ".claude/x/settings.json"));
}

/* Watched files: changed ones flagged, a .gitattributes only when it names a driver. */
static void
test_watch(void **state)
{
	char *const watch[] = { (char *)".envrc", (char *)".mcp.json" };
	char *const existed[] = { (char *)".mcp.json" };
	struct snap_plant_result res;
	struct snap_plant_opts o;
	char *cause = NULL;

	test_sh_ok("cd %s && echo x >.envrc && mkdir -p a b && "
	    "echo '*.c filter=x' >a/.gitattributes && "
	    "echo '*.c -diff' >b/.gitattributes", proj);
	memset(&o, 0, sizeof o);
	o.project = proj;
	o.quarantine = dir;
	o.watch = watch;
	o.nwatch = 2;
	o.existed = existed;
	o.nexisted = 1;
	snap_plant_result_init(&res);
	assert_int_equal(snap_plant_scan(&o, &res, &cause), 0);
	assert_int_equal(res.watched.n, 3);
	assert_true(strstr(res.watched.v[0], ".envrc") != NULL ||
	    strstr(res.watched.v[1], ".envrc") != NULL);
	assert_non_null(strstr(res.watched.v[2], ".mcp.json was deleted"));
	snap_plant_result_free(&res);
}

/*
 * A watched file changed at once after the start: its ctime comes from the
 * kernel's coarse clock, up to a tick behind the fine one, so a start
 * taken from the fine clock missed it (an agent that wrote .envrc first
 * thing went unflagged; jail-plant saw it under load).
 */
static void
test_watch_at_once(void **state)
{
	char *const watch[] = { (char *)".envrc" };
	struct snap_plant_result res;
	struct snap_plant_opts o;
	char *cause = NULL, *path;
	int i, missed = 0, fd;

	memset(&o, 0, sizeof o);
	o.project = proj;
	o.quarantine = dir;
	o.watch = watch;
	o.nwatch = 1;
	path = xprintf("%s/.envrc", proj);
	for (i = 0; i < 50; i++) {
		unlink(path);
		o.since = snap_plant_clock();
		if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644)) == -1)
			fail_msg("open %s: %s", path, strerror(errno));
		close(fd);
		snap_plant_result_init(&res);
		assert_int_equal(snap_plant_scan(&o, &res, &cause), 0);
		missed += res.watched.n == 0;
		snap_plant_result_free(&res);
	}
	free(path);
	assert_int_equal(missed, 0);
}

/*
 * A dir git takes for a repository whatever its name (HEAD, and objects/
 * and refs/ or a commondir) is defused as a nested .git is; a dir whose
 * HEAD is no ref, and a link to a git dir outside, are left alone.
 */
static void
test_other_names(void **state)
{
	struct snap_plant_result res;
	char *s;

	test_sh_ok("mkdir -p %s/out && cd %s/out && git init -q --bare g && "
	    "git -C g config core.fsmonitor 'touch x'", dir, dir);
	test_sh_ok("cd %s && mkdir -p src/objects src/refs wt notgit/objects "
	    "notgit/refs && echo 'ref: refs/heads/main' >src/HEAD && "
	    "git config --file src/config core.fsmonitor 'touch x' && "
	    "git config --file src/config user.name kept && "
	    "printf '%%040d\n' 0 >wt/HEAD && echo ../src >wt/commondir && "
	    "git config --file wt/config.worktree core.pager 'touch x' && "
	    "echo 'not a ref' >notgit/HEAD && "
	    "git config --file notgit/config core.fsmonitor 'touch x' && "
	    "ln -s %s/out/g linked", proj, dir);
	scan(0, false, &res);
	s = test_sh_out("cd %s && git config --file src/config --list && "
	    "git config --file wt/config.worktree --list; "
	    "git config --file notgit/config --list && "
	    "git config --file %s/out/g/config core.fsmonitor", proj, dir);
	assert_string_equal(s, "user.name=kept\ncore.fsmonitor=touch x\n"
	    "touch x\n");
	free(s);
	/*
	 * In the order the dirs are read: any may come first. The link is
	 * left alone, and told as any link out of the project made in the
	 * session is (since 0: everything is the session's).
	 */
	assert_int_equal(res.alerts.n, 3);
	s = xprintf("%s\n%s\n%s", res.alerts.v[0], res.alerts.v[1],
	    res.alerts.v[2]);
	assert_non_null(strstr(s, "a git dir named src"));
	assert_non_null(strstr(s, "a git dir named wt"));
	assert_non_null(strstr(s, "linked is a link made or changed in the "
	    "session that leads out of the project"));
	free(s);
	snap_plant_result_free(&res);
}

/*
 * A link out of the project in the objects/ of a git dir the session
 * made (any file as its HEAD, so that it passes for one) is told, as it
 * is anywhere: the walk skips no objects/ dir, and the link is moved out.
 */
static void
test_objects_link(void **state)
{
	struct snap_plant_result res;
	char *all;
	size_t i;

	test_sh_ok("cd %s && mkdir -p x/.git/objects/ab && echo junk "
	    ">x/.git/HEAD && ln -s /etc/passwd x/.git/objects/ab/cd && "
	    "mkdir -p .git/objects/ef && echo 'ref: refs/heads/main' "
	    ">.git/HEAD && ln -s /etc x/.git/objects/ef2", proj);
	scan(0, false, &res);
	all = xstrdup("");
	for (i = 0; i < res.alerts.n; i++) {
		char *next = xprintf("%s%s\n", all, res.alerts.v[i]);

		free(all);
		all = next;
	}
	if (strstr(all, "x/.git/objects/ab/cd") == NULL ||
	    strstr(all, "x/.git/objects/ef2") == NULL)
		fail_msg("a link out of the project in objects/ was not told: "
		    "%s", all);
	free(all);
	snap_plant_result_free(&res);
}

/*
 * A protected file that is a link: its target in the project is
 * protected in its place; a target outside the project, or a link that
 * loops, adds nothing.
 */
static void
test_existing_link(void **state)
{
	char *const patterns[] = { ".envrc", ".vscode/tasks.json", ".npmrc",
	    ".mcp.json" };
	struct strv out;

	test_sh_ok("cd %s && mkdir -p scripts config .vscode && : "
	    ">scripts/envrc && : >config/tasks.json && ln -s scripts/envrc "
	    ".envrc && ln -s ../config/tasks.json .vscode/tasks.json && "
	    "ln -s /etc/passwd .npmrc && ln -s .mcp.json .mcp.json", proj);
	strv_init(&out);
	snap_plant_existing(proj, patterns, nitems(patterns), &out);
	assert_int_equal(out.n, 2);
	assert_true(strv_contains(&out, "scripts/envrc"));
	assert_true(strv_contains(&out, "config/tasks.json"));
	strv_free(&out);
}

/*
 * A rebase left in progress (a break, then exec lines, one with an escape
 * in it) is told with its exec lines quoted; one in progress at the start
 * is not.
 */
static void
test_sequence_left(void **state)
{
	struct snap_plant_result res;
	struct snap_plant_opts o;
	struct strv execs;
	char *q = xprintf("%s/quarantine", dir), *cause = NULL, *s;
	unsigned before;

	test_sh_ok("cd %s && git init -q && git config user.email a@b && "
	    "git config user.name a && echo 1 >f && git add f && "
	    "git commit -qm 1 && echo 2 >f && git commit -qam 2", proj);
	before = snap_plant_sequences(proj, NULL);
	assert_int_equal(before, 0);
	test_sh_ok("cd %s && GIT_SEQUENCE_EDITOR='printf \"break\\nexec touch "
	    "x\\n\" >' git rebase -q -i HEAD~1 >/dev/null 2>&1 && "
	    "printf 'x echo \\033[31mred\\n' >>.git/rebase-merge/git-rebase-todo",
	    proj);
	memset(&o, 0, sizeof o);
	o.project = proj;
	o.quarantine = q;
	o.had_git = true;
	o.since = util_now_ms();
	o.sequences = before;
	snap_plant_result_init(&res);
	if (snap_plant_scan(&o, &res, &cause) == -1)
		fail_msg("scan: %s", cause);
	assert_int_equal(res.watched.n, 1);
	s = res.watched.v[0];
	assert_non_null(strstr(s, "a rebase was left in progress"));
	assert_non_null(strstr(s, "git rebase --continue: exec touch x; "
	    "exec \"echo \\033[31mred\""));
	assert_null(strchr(s, '\033'));
	snap_plant_result_free(&res);
	/* In progress when the session started: not the session's doing. */
	o.sequences = snap_plant_sequences(proj, NULL);
	assert_int_not_equal(o.sequences, 0);
	strv_init(&execs);
	snap_plant_seq_execs(proj, NULL, &execs);
	assert_int_equal(execs.n, 2);
	o.execs = execs.v;
	o.nexecs = execs.n;
	snap_plant_result_init(&res);
	if (snap_plant_scan(&o, &res, &cause) == -1)
		fail_msg("scan: %s", cause);
	assert_int_equal(res.watched.n, 0);
	snap_plant_result_free(&res);
	strv_free(&execs);
	free(q);
}

/* The scan of a rebase in progress since EXECS were its exec lines; RES is the caller's. */
static void
scan_grown(struct strv *execs, struct snap_plant_result *res)
{
	struct snap_plant_opts o;
	char *q = xprintf("%s/quarantine", dir), *cause = NULL;

	memset(&o, 0, sizeof o);
	o.project = proj;
	o.quarantine = q;
	o.had_git = true;
	o.since = util_now_ms();
	o.sequences = snap_plant_sequences(proj, NULL);
	o.execs = execs->v;
	o.nexecs = execs->n;
	snap_plant_result_init(res);
	if (snap_plant_scan(&o, res, &cause) == -1)
		fail_msg("scan: %s", cause);
	free(q);
}

/*
 * A rebase in progress at the start: carried on (its exec line still to
 * come) and a conflict resolved is not told; an exec line added to its
 * todo, or one changed, is, quoted.
 */
static void
test_sequence_grew(void **state)
{
	struct snap_plant_result res;
	struct strv execs;
	char *s;

	test_sh_ok("cd %s && git init -q && git config user.email a@b && "
	    "git config user.name a && echo 1 >f && git add f && "
	    "git commit -qm 1 && echo 2 >f && git commit -qam 2 && "
	    "echo 3 >f && git commit -qam 3 && A=$(git rev-parse HEAD~1) && "
	    "B=$(git rev-parse HEAD) && GIT_SEQUENCE_EDITOR=\"printf 'break\\n"
	    "pick $A\\nbreak\\npick $B\\nexec true\\n' >\" git rebase -q -i "
	    "HEAD~2 >/dev/null 2>&1", proj);
	strv_init(&execs);
	snap_plant_seq_execs(proj, NULL, &execs);
	assert_int_equal(execs.n, 1);
	/* The agent carries it on to the next break and edits a file. */
	test_sh_ok("cd %s && git rebase --continue >/dev/null 2>&1 && "
	    "echo fixed >g && git add g", proj);
	scan_grown(&execs, &res);
	assert_int_equal(res.watched.n, 0);
	snap_plant_result_free(&res);
	/* Then adds an exec line. */
	test_sh_ok("cd %s && printf 'exec touch x\\n' "
	    ">>.git/rebase-merge/git-rebase-todo", proj);
	scan_grown(&execs, &res);
	assert_int_equal(res.watched.n, 1);
	s = res.watched.v[0];
	assert_non_null(strstr(s, "a rebase in progress since before the "
	    "session (.git/rebase-merge) had exec lines added"));
	assert_non_null(strstr(s, "git rebase --continue: exec touch x; run"));
	snap_plant_result_free(&res);
	/* Or changes the one there was (the same line twice is one more). */
	test_sh_ok("cd %s && sed -i -e '/touch x/d' -e 's/^exec true/exec "
	    "true; touch y/' .git/rebase-merge/git-rebase-todo", proj);
	scan_grown(&execs, &res);
	assert_int_equal(res.watched.n, 1);
	assert_non_null(strstr(res.watched.v[0], "exec true; touch y; run"));
	snap_plant_result_free(&res);
	test_sh_ok("cd %s && sed -i 's/^exec true.*/exec true\\nx true/' "
	    ".git/rebase-merge/git-rebase-todo", proj);
	scan_grown(&execs, &res);
	assert_int_equal(res.watched.n, 1);
	assert_non_null(strstr(res.watched.v[0], ": exec true; run"));
	snap_plant_result_free(&res);
	strv_free(&execs);
}

/*
 * A rebase in progress at the start (with a strategy option): carried on
 * is not told; its strategy, strategy options or signing key made or
 * changed by the session are, quoted (an escape too), as is a rebase
 * left by the session with a strategy of its choosing.
 */
static void
test_sequence_opts(void **state)
{
	struct snap_plant_result res;
	struct strv execs;
	size_t i;

	test_sh_ok("cd %s && git init -q && git config user.email a@b && "
	    "git config user.name a && echo 1 >f && git add f && "
	    "git commit -qm 1 && echo 2 >f && git commit -qam 2 && "
	    "echo 3 >f && git commit -qam 3 && A=$(git rev-parse HEAD~1) && "
	    "B=$(git rev-parse HEAD) && GIT_SEQUENCE_EDITOR=\"printf 'break\\n"
	    "pick $A\\nbreak\\npick $B\\n' >\" git rebase -q -i -X ours "
	    "HEAD~2 >/dev/null 2>&1 && test -s .git/rebase-merge/strategy_opts",
	    proj);
	strv_init(&execs);
	snap_plant_seq_execs(proj, NULL, &execs);
	/* The agent carries it on to the next break. */
	test_sh_ok("cd %s && git rebase --continue >/dev/null 2>&1", proj);
	scan_grown(&execs, &res);
	assert_int_equal(res.watched.n, 0);
	snap_plant_result_free(&res);
	/* Then names a strategy, changes its options, sets a signing key. */
	test_sh_ok("cd %s/.git/rebase-merge && echo evil >strategy && "
	    "echo \"'--theirs'\" >strategy_opts && "
	    "printf '%%s\\033[31m' -Skey >gpg_sign_opt", proj);
	scan_grown(&execs, &res);
	assert_int_equal(res.watched.n, 3);
	for (i = 0; i < res.watched.n; i++)
		print_message("%s\n", res.watched.v[i]);
	assert_non_null(strstr(res.watched.v[0], "a rebase in "
	    ".git/rebase-merge had .git/rebase-merge/strategy made or "
	    "changed in the session"));
	assert_non_null(strstr(res.watched.v[0], "git rebase --continue"));
	assert_non_null(strstr(res.watched.v[0], "): \"evil\\n\"; run it"));
	assert_non_null(strstr(res.watched.v[1], "rebase-merge/strategy_opts"));
	assert_non_null(strstr(res.watched.v[2], "-Skey\\033[31m"));
	assert_null(strchr(res.watched.v[2], '\033'));
	snap_plant_result_free(&res);
	/* A rebase the session started: its strategy is told too. */
	test_sh_ok("cd %s/.git/rebase-merge && rm strategy_opts gpg_sign_opt",
	    proj);
	strv_free(&execs);
	strv_init(&execs);
	scan(util_now_ms(), true, &res);
	assert_int_equal(res.watched.n, 2);
	assert_non_null(strstr(res.watched.v[0], "was left in progress"));
	assert_non_null(strstr(res.watched.v[1], ".git/rebase-merge/strategy "
	    "made or changed"));
	snap_plant_result_free(&res);
	strv_free(&execs);
}

/* core.hooksPath VALUE in PROJ's .git/config; what snap_plant_hooks_path makes of it. */
static char *
hooks_of(const char *value)
{
	test_sh_ok("git config --file %s/.git/config core.hooksPath '%s'",
	    proj, value);
	return snap_plant_hooks_path(proj);
}

/* The user's hooks dir: inside the project, as a pattern; outside, or none, NULL. */
static void
test_hooks_path(void **state)
{
	char *p, *abs;

	assert_null(snap_plant_hooks_path(proj));
	test_sh_ok("cd %s && git init -q . && mkdir -p .githooks 'h[1]*'", proj);
	assert_null(snap_plant_hooks_path(proj));
	p = hooks_of("./.githooks/");
	assert_string_equal(p, ".githooks");
	assert_true(snap_plant_match(p, ".githooks/pre-commit"));
	free(p);
	abs = xprintf("%s/tools/hooks", proj);
	p = hooks_of(abs);
	assert_string_equal(p, "tools/hooks");
	free(p);
	free(abs);
	p = hooks_of("h[1]*");
	assert_true(snap_plant_match(p, "h[1]*/pre-commit"));
	assert_false(snap_plant_match(p, "h1x/pre-commit"));
	free(p);
	assert_null(hooks_of("../elsewhere"));
	assert_null(hooks_of("a/../../elsewhere"));
	assert_null(hooks_of("/usr/share/hooks"));
	assert_null(hooks_of("~/hooks"));
	assert_null(hooks_of("."));
	/* Reached through links in the tree: the real dir, none followed out. */
	test_sh_ok("cd %s && mkdir -p tools/git-hooks && ln -s tools/git-hooks "
	    "hooks && ln -s %s/tools abs && ln -s ../.. up && ln -s /usr out && "
	    "ln -s loop loop && ln -s . here", proj, proj);
	p = hooks_of("hooks");
	assert_string_equal(p, "tools/git-hooks");
	assert_true(snap_plant_match(p, "tools/git-hooks/pre-commit"));
	free(p);
	p = hooks_of("./here/abs/git-hooks/");
	assert_string_equal(p, "tools/git-hooks");
	free(p);
	abs = xprintf("%s/hooks", proj);
	p = hooks_of(abs);
	assert_string_equal(p, "tools/git-hooks");
	free(p);
	free(abs);
	assert_null(hooks_of("up/x"));
	assert_null(hooks_of("out/share"));
	assert_null(hooks_of("loop"));
	/* A relative include in the config does not hide the value. */
	test_sh_ok("git config --file %s/.git/config include.path ../inc", proj);
	p = hooks_of("hooks");
	assert_non_null(p);
	assert_string_equal(p, "tools/git-hooks");
	free(p);
	test_sh_ok("git config --file %s/.git/config --unset include.path",
	    proj);
	/* A link where the config was: not read. */
	test_sh_ok("cd %s && git config core.hooksPath .githooks && "
	    "mv .git/config .git/real && ln -s real .git/config", proj);
	assert_null(snap_plant_hooks_path(proj));
}

/* Root's CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH off (ON: back on), so that a 0111 dir is unreadable. */
static void
dac(bool on)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];
	uint32_t mask = (1U << CAP_DAC_OVERRIDE) | (1U << CAP_DAC_READ_SEARCH);

	if (geteuid() != 0)
		return;
	if (syscall(SYS_capget, &h, d) == -1)
		fail_msg("capget: %s", strerror(errno));
	d[0].effective = on ? d[0].effective | (d[0].permitted & mask) :
	    d[0].effective & ~mask;
	if (syscall(SYS_capset, &h, d) == -1)
		fail_msg("capset: %s", strerror(errno));
}

/* Between the check and the chmod, the unreadable git dir becomes a link out of the project. */
static void
swap_for_link(const char *rel)
{
	char *from = xprintf("%s/%s", proj, rel), *to = xprintf("%s-old", from);
	char *out = xprintf("%s/outside", dir);

	if (rename(from, to) == -1 || symlink(out, from) == -1)
		fail_msg("swap %s: %s", from, strerror(errno));
	free(out);
	free(to);
	free(from);
}

/* The same, swapped for another unreadable dir. */
static void
swap_for_dir(const char *rel)
{
	char *from = xprintf("%s/%s", proj, rel), *to = xprintf("%s-old", from);

	if (rename(from, to) == -1 || mkdir(from, 0111) == -1)
		fail_msg("swap %s: %s", from, strerror(errno));
	free(to);
	free(from);
}

/* An unreadable git dir swapped (for a link, for another dir) before it is opened up: nothing else is chmod'ed. */
static void
test_open_up_race(void **state)
{
	struct snap_plant_result res;
	struct stat st;
	char *out = xprintf("%s/outside", dir), *gd = xprintf("%s/gd", proj);

	test_sh_ok("cd %s && mkdir -p gd/objects gd/refs && echo 'ref: "
	    "refs/heads/main' >gd/HEAD && chmod 0111 gd && echo x >%s && "
	    "chmod 0600 %s", proj, out, out);
	dac(false);
	snap_plant_dir_checked = swap_for_link;
	scan(0, false, &res);
	snap_plant_dir_checked = NULL;
	dac(true);
	snap_plant_result_free(&res);
	assert_int_equal(stat(out, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);

	test_sh_ok("cd %s && rm -f gd && chmod 0700 gd-old && rm -rf gd-old && "
	    "mkdir -p gd/objects gd/refs && echo 'ref: refs/heads/main' "
	    ">gd/HEAD && chmod 0111 gd", proj);
	dac(false);
	snap_plant_dir_checked = swap_for_dir;
	scan(0, false, &res);
	snap_plant_dir_checked = NULL;
	dac(true);
	snap_plant_result_free(&res);
	assert_int_equal(lstat(gd, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0111);
	/* Not swapped: it is opened up, and said. */
	test_sh_ok("cd %s && rmdir gd && mv gd-old gd", proj);
	dac(false);
	scan(0, false, &res);
	dac(true);
	assert_int_equal(lstat(gd, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0711);
	assert_true(res.alerts.n > 0);
	assert_non_null(strstr(res.alerts.v[0], "was made unreadable"));
	snap_plant_result_free(&res);
	free(gd);
	free(out);
}

/* core.hooksPath from the user's own config (and its includes); .git/config's first. */
static void
test_hooks_user(void **state)
{
	char *home = xstrdup(getenv("HOME")), *p;

	setenv("HOME", dir, 1);
	test_sh_ok("cd %s && git init -q . && mkdir -p %s/config/git && "
	    "printf '[core]\\n\\thooksPath = tools/ghooks\\n' >%s/.gitinc && "
	    "printf '[include]\\n\\tpath = ~/.gitinc\\n' >%s/.gitconfig",
	    proj, dir, dir, dir);
	p = snap_plant_hooks_path(proj);
	assert_non_null(p);
	assert_string_equal(p, "tools/ghooks");
	free(p);
	test_sh_ok("printf '[core]\\n\\thooksPath = %s/xdg-hooks\\n' "
	    ">%s/config/git/config && rm %s/.gitconfig", proj, dir, dir);
	p = snap_plant_hooks_path(proj);
	assert_non_null(p);
	assert_string_equal(p, "xdg-hooks");
	free(p);
	p = hooks_of(".githooks");
	assert_string_equal(p, ".githooks");
	free(p);
	/* "~/" as git expands it: the project lies in the home dir here. */
	p = hooks_of("~/proj/h2");
	assert_non_null(p);
	assert_string_equal(p, "h2");
	free(p);
	setenv("HOME", home, 1);
	free(home);
}

/* Hook links and includes of .git/config: what they reach in the project, nothing outside. */
static void
test_git_files(void **state)
{
	struct strv out;

	test_sh_ok("cd %s && git init -q . && mkdir -p scripts tools/git-hooks "
	    "&& echo x >scripts/pre-commit && echo x >tools/git-hooks/real && "
	    "ln -s ../../scripts/pre-commit .git/hooks/pre-commit && "
	    "ln -s /etc/passwd .git/hooks/post-commit && "
	    "ln -s ../../../x .git/hooks/pre-push && "
	    "ln -s tools/git-hooks hooks && git config core.hooksPath hooks && "
	    "ln -s real tools/git-hooks/pre-rebase && "
	    "git config include.path ../.gitconfig && "
	    "git config includeIf.gitdir:/x/.path %s/inc/cfg && "
	    "git config --add include.path /etc/gitconfig && "
	    "git config --add include.path ../../outside", proj, proj);
	strv_init(&out);
	snap_plant_git_files(proj, &out);
	assert_true(strv_contains(&out, "scripts/pre-commit"));
	assert_true(strv_contains(&out, "hooks"));
	assert_true(strv_contains(&out, "tools/git-hooks/real"));
	assert_true(strv_contains(&out, ".gitconfig"));
	assert_true(strv_contains(&out, "inc/cfg"));
	assert_int_equal(out.n, 5);
	strv_free(&out);
	/* .git/hooks itself a link into the tree: the real dir, its links followed. */
	test_sh_ok("cd %s && git config --unset core.hooksPath && "
	    "mv .git/hooks scripts/hooks && ln -s ../scripts/hooks .git/hooks",
	    proj);
	strv_init(&out);
	snap_plant_git_files(proj, &out);
	assert_true(strv_contains(&out, "scripts/hooks"));
	assert_true(strv_contains(&out, ".git/hooks"));
	assert_true(strv_contains(&out, "scripts/pre-commit"));
	strv_free(&out);
}

/*
 * The user's own git config reaching into the project (review 14: a
 * dotfiles repository as the project): ~/.gitconfig a link to a file of
 * it, an include of the XDG config naming one (relative to that file's
 * dir, through a link of the project's), an includeIf whose condition
 * fails, one from a file included in turn; what lies outside is not
 * listed.
 */
static void
test_git_files_user(void **state)
{
	char *home = xstrdup(getenv("HOME")), *xdg = getenv("XDG_CONFIG_HOME");
	char *xdgcopy = xdg != NULL ? xstrdup(xdg) : NULL;
	struct strv out;

	(void)state;
	setenv("HOME", dir, 1);
	unsetenv("XDG_CONFIG_HOME");
	test_sh_ok("cd %s && git init -q . && mkdir -p git conf %s/.config/git && "
	    "printf '[user]\n\tname = t\n' >git/gitconfig && "
	    "ln -s %s/git/gitconfig %s/.gitconfig && "
	    "ln -s %s/conf %s/.config/git/conf && "
	    "printf '[include]\n\tpath = conf/shared\n"
	    "[includeIf \"gitdir:/nowhere/\"]\n\tpath = %s/git/cond\n"
	    "[include]\n\tpath = %s/outside.inc\n' >%s/.config/git/config && "
	    "printf '[include]\n\tpath = %s/git/deeper\n' >conf/shared && "
	    ": >git/cond && : >git/deeper && : >%s/outside.inc",
	    proj, dir, proj, dir, proj, dir, proj, dir, dir, proj, dir);
	strv_init(&out);
	snap_plant_git_files(proj, &out);
	assert_true(strv_contains(&out, "git/gitconfig"));
	assert_true(strv_contains(&out, "conf/shared"));
	assert_true(strv_contains(&out, "git/cond"));
	assert_true(strv_contains(&out, "git/deeper"));
	assert_int_equal(out.n, 4);
	strv_free(&out);
	setenv("HOME", home, 1);
	if (xdgcopy != NULL)
		setenv("XDG_CONFIG_HOME", xdgcopy, 1);
	free(xdgcopy);
	free(home);
}

/* The cache-tree of the index at PATH checked: the dirs that disagree, into BAD. */
static int
cachetree_check(const char *path, struct strv *bad)
{
	struct buf file, tree;
	size_t oidlen;
	int rc;

	buf_init(&file);
	buf_init(&tree);
	rc = snap_index_load(path, "TREE", &file, &oidlen, &tree);
	if (rc == 1)
		rc = snap_cachetree_check(&file, oidlen, &tree, bad);
	buf_free(&file);
	buf_free(&tree);
	return rc;
}

/*
 * The trees hashed from the entries are git's own, whatever they hold
 * (nested dirs, a name sorting between a dir and its files, modes, a link,
 * an intent-to-add file, a dir of only such files): git's cache-tree
 * agrees; one dir's id forged is named, and the others not.
 */
static void
test_cachetree(void **state)
{
	char *index = xprintf("%s/.git/index", proj);
	struct strv bad;

	test_sh_ok("cd %s && git init -q . && mkdir -p a/b/c a-b d && "
	    "echo 1 >a.c && echo 2 >a/x && echo 3 >a/b/c/y && echo 4 >a-b/z && "
	    "echo 5 >e && chmod +x e && ln -s a/x l && echo 6 >d/new && "
	    "echo 7 >n && git add a.c a a-b e l && git add -N n d/new && "
	    "git write-tree >/dev/null", proj);
	strv_init(&bad);
	assert_int_equal(cachetree_check(index, &bad), 0);
	assert_int_equal(bad.n, 0);
	/* The id of a/b/ (a 40-hex-digit id follows "b\0<n> <m>\n") forged. */
	test_sh_ok("cd %s && python3 -c 'import hashlib, re\n"
	    "d = open(\".git/index\", \"rb\").read()[:-20]\n"
	    "m = re.search(rb\"b\\x00[0-9]+ [0-9]+\\n\", d)\n"
	    "d = d[:m.end()] + bytes(20) + d[m.end() + 20:]\n"
	    "open(\".git/index\", \"wb\").write(d + hashlib.sha1(d).digest())'",
	    proj);
	assert_int_equal(cachetree_check(index, &bad), 0);
	assert_int_equal(bad.n, 1);
	assert_string_equal(bad.v[0], "a/b/");
	strv_free(&bad);
	free(index);
}

/*
 * An index laid out so that git reads another copy of an extension than
 * the first (a second one after it), or padded before its checksum (git
 * stops when fewer than 8 bytes are left), is told as such; dropping the
 * extension leaves one git reads, without it and without the padding.
 */
static void
test_index_ext_forged(void **state)
{
	static const char *const how[] = { "dup", "pad" };
	char *index = xprintf("%s/.git/index", proj);
	struct buf ext;
	size_t i;

	test_sh_ok("cd %s && git init -q . && echo 1 >a && git add a && "
	    "git write-tree >/dev/null", proj);
	buf_init(&ext);
	assert_int_equal(snap_index_ext(index, "TREE", &ext), 1);
	test_sh_ok("cp %s %s.orig", index, index);
	for (i = 0; i < nitems(how); i++) {
		test_sh_ok("cp %s.orig %s && cd %s && python3 -c 'import "
		    "hashlib, sys\nd = open(\".git/index\", \"rb\").read()[:-20]\n"
		    "t = d.index(b\"TREE\")\n"
		    "d += d[t:] if sys.argv[1] == \"dup\" else bytes(4)\n"
		    "open(\".git/index\", \"wb\").write(d + hashlib.sha1(d)."
		    "digest())' %s && git ls-files >/dev/null", index, index,
		    proj, how[i]);
		assert_int_equal(snap_index_ext(index, "TREE", &ext), 2);
		assert_int_equal(snap_index_drop_ext(index, "TREE"), 1);
		assert_int_equal(snap_index_ext(index, "TREE", &ext), 0);
		assert_int_equal(snap_index_ext(index, "UNTR", &ext), 0);
		test_sh_ok("cd %s && git ls-files --error-unmatch a >/dev/null",
		    proj);
	}
	/*
	 * An EOIE (as git finds it, hidden in an unknown extension) putting
	 * the extensions at the entries: git reading with threads takes
	 * them from there. Every optional extension goes.
	 */
	test_sh_ok("cp %s.orig %s && cd %s && python3 -c 'import hashlib, "
	    "struct\nd = open(\".git/index\", \"rb\").read()[:-20]\n"
	    "e = b\"EOIE\" + struct.pack(\">II\", 24, 12) + bytes(20)\n"
	    "d += b\"ZZZZ\" + struct.pack(\">I\", len(e)) + e\n"
	    "open(\".git/index\", \"wb\").write(d + hashlib.sha1(d)."
	    "digest())' && git ls-files --error-unmatch a >/dev/null", index,
	    index, proj);
	assert_int_equal(snap_index_ext(index, "TREE", &ext), 2);
	assert_int_equal(snap_index_drop_ext(index, "TREE"), 1);
	assert_int_equal(snap_index_ext(index, "TREE", &ext), 0);
	test_sh_ok("cd %s && ! grep -q ZZZZ .git/index && git ls-files "
	    "--error-unmatch a >/dev/null", proj);
		/* An untracked cache running into the checksum: git reads on, past it. */
	test_sh_ok("cp %s.orig %s && cd %s && python3 -c 'import hashlib, "
	    "struct\nd = open(\".git/index\", \"rb\").read()[:-20]\n"
	    "d += b\"UNTR\" + struct.pack(\">I\", 4096) + bytes(8)\n"
	    "open(\".git/index\", \"wb\").write(d + hashlib.sha1(d)."
	    "digest())'", index, index, proj);
	assert_int_equal(snap_index_ext(index, "UNTR", &ext), 2);
	assert_int_equal(snap_index_drop_ext(index, "UNTR"), 1);
	assert_int_equal(snap_index_ext(index, "UNTR", &ext), 0);
	assert_int_equal(snap_index_ext(index, "TREE", &ext), 1);
	test_sh_ok("cd %s && git ls-files --error-unmatch a >/dev/null", proj);
		/* Padding with no such extension hides nothing of it: none said. */
	test_sh_ok("cp %s.orig %s && cd %s && python3 -c 'import hashlib\n"
	    "d = open(\".git/index\", \"rb\").read()[:-20] + bytes(4)\n"
	    "open(\".git/index\", \"wb\").write(d + hashlib.sha1(d).digest())'",
	    index, index, proj);
	assert_int_equal(snap_index_ext(index, "UNTR", &ext), 0);
	buf_free(&ext);
	free(index);
}

/*
 * The git dir whose index the end checks, for a nested repository: its
 * .git dir, or a submodule's in the project's .git/modules named by its
 * .git file; none where the .git file names a dir elsewhere (outside, or
 * out of .git/modules by "..") or the way to it is a link, nor where
 * .git is itself a link.
 */
static void
test_nested_gitdir_of(void **state)
{
	static const char *const refused[] = { "out", "up", "abs", "viamod",
	    "dotlink", "bare" };
	char *got, *want;
	size_t i;

	test_sh_ok("cd %s && mkdir -p lib/.git .git/modules/sub outside "
	    "sub out up abs viamod dotlink bare && "
	    "printf 'gitdir: ../.git/modules/sub\\n' >sub/.git && "
	    "printf 'gitdir: ../outside\\n' >out/.git && "
	    "printf 'gitdir: ../.git/modules/../../outside\\n' >up/.git && "
	    "printf 'gitdir: /etc\\n' >abs/.git && "
	    "ln -s ../../outside .git/modules/evil && "
	    "printf 'gitdir: ../.git/modules/evil\\n' >viamod/.git && "
	    "ln -s ../lib/.git dotlink/.git && "
	    "printf 'gitdir: ../.git/modules/\\n' >bare/.git", proj);
	got = snap_nested_gitdir_of(proj, "lib");
	want = xprintf("%s/lib/.git", proj);
	assert_non_null(got);
	assert_string_equal(got, want);
	free(got);
	free(want);
	got = snap_nested_gitdir_of(proj, "sub");
	want = xprintf("%s/.git/modules/sub", proj);
	assert_non_null(got);
	assert_string_equal(got, want);
	free(got);
	free(want);
	for (i = 0; i < nitems(refused); i++) {
		got = snap_nested_gitdir_of(proj, refused[i]);
		if (got != NULL)
			fail_msg("%s: %s taken", refused[i], got);
	}
	assert_null(snap_nested_gitdir_of(proj, "none"));
}

/*
 * NAME in FD, copied as if to another file system, is past a bound: E2BIG
 * (EFBIG for a file), what is left where it was; what was copied before
 * the cut is in a dir of the quarantine *PART says (NULL if none).
 */
static void
keep_tree_refused(struct snap_nested *nc, int fd, const char *name,
    int err, char **part)
{
	char *kept, *p = NULL;

	snap_nested_tree_copy = true;
	errno = 0;
	kept = snap_nested_keep_tree(nc, fd, name, &p);
	snap_nested_tree_copy = false;
	assert_null(kept);
	assert_int_equal(errno, err);
	if (part != NULL)
		*part = p;
	else
		free(p);
}

/*
 * A planted tree (snap_nested_keep_tree, as the end moves .git/agentmux):
 * renamed into the quarantine whole; copied there when that is another
 * file system (the hook), links written down and never followed, a FIFO
 * kept as an empty file, a dir of mode 0500 and one of 0 taken too, then
 * removed; past a bound, counted as it copies, what is left stays; names
 * in the quarantine never reused, long ones cut.
 */
static void
test_keep_tree(void **state)
{
	struct snap_nested nc;
	char *q = xprintf("%s/quarantine", dir), *kept, *part;
	char long_name[NAME_MAX + 1];
	int fd;

	memset(&nc, 0, sizeof nc);
	nc.quarantine = q;
	test_sh_ok("cd %s && mkdir -p outside t/a/b && echo keep >outside/f && "
	    "echo one >t/a/b/ref && ln -s ../../outside t/a/out && "
	    "ln -s /dev/zero t/zero && mkfifo t/a/fifo && cp -r t u && "
	    "mkdir u/ro u/none && echo r >u/ro/f && chmod 500 u/ro && "
	    "chmod 0 u/none", dir);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd != -1);
	kept = snap_nested_keep_tree(&nc, fd, "t", &part);
	assert_non_null(kept);
	assert_null(part);
	test_sh_ok("! test -e %s/t && test -L %s/a/out && test \"$(cat "
	    "%s/a/b/ref)\" = one && test -p %s/a/fifo", dir, kept, kept, kept);
	free(kept);
	snap_nested_tree_copy = true;
	kept = snap_nested_keep_tree(&nc, fd, "u", &part);
	snap_nested_tree_copy = false;
	assert_non_null(kept);
	/* Copied: the links' targets as text, the FIFO empty, nothing outside touched. */
	test_sh_ok("! test -e %s/u && test \"$(cat %s/*-a.d/*-b.d/*-ref)\" = "
	    "one && test \"$(cat %s/*-a.d/*-out.symlink)\" = ../../outside && "
	    "test \"$(cat %s/*-zero.symlink)\" = /dev/zero && test -f "
	    "%s/*-a.d/*-fifo && ! test -s %s/*-a.d/*-fifo && test \"$(cat "
	    "%s/*-ro.d/*-f)\" = r && test -d %s/*-none.d && test \"$(cat "
	    "%s/outside/f)\" = keep", dir, kept, kept, kept, kept, kept, kept,
	    kept, dir);
	free(kept);
	/* Past 10,000 entries: cut, the rest left. */
	test_sh_ok("cd %s && mkdir big && cd big && seq 10001 | xargs touch",
	    dir);
	keep_tree_refused(&nc, fd, "big", E2BIG, &part);
	assert_non_null(part);
	test_sh_ok("test \"$(ls %s/big | wc -l)\" = 1 && test \"$(ls %s | wc "
	    "-l)\" = 10000", dir, part);
	free(part);
	/* Past the bytes (1 MiB here), counted as copied: the second file stays. */
	snap_nested_copy_max = 1024 * 1024;
	test_sh_ok("cd %s && mkdir huge && head -c 700000 /dev/zero >huge/a && "
	    "head -c 700000 /dev/zero >huge/b && head -c 2000000 /dev/zero "
	    ">one", dir);
	keep_tree_refused(&nc, fd, "huge", E2BIG, NULL);
	test_sh_ok("test \"$(ls %s/huge | wc -l)\" = 1", dir);
	/* A file past it: EFBIG, left, no copy. */
	keep_tree_refused(&nc, fd, "one", EFBIG, NULL);
	snap_nested_copy_max = 256 * 1024 * 1024;
	test_sh_ok("test -s %s/one && ! ls %s | grep -q -- -one", dir, q);
	/* An earlier keep's name is never taken; a name too long for the quarantine is cut. */
	test_sh_ok("mkdir %s/1-taken.d && mkdir %s/taken", q, dir);
	/* The longest name a dir can have: 255 bytes. */
	memset(long_name, 'x', NAME_MAX);
	long_name[NAME_MAX] = '\0';
	assert_int_equal(mkdirat(fd, long_name, 0700), 0);
	nc.n = 0;
	kept = snap_nested_keep_tree(&nc, fd, "taken", &part);
	assert_non_null(kept);
	assert_non_null(strstr(kept, "/2-taken.d"));
	free(kept);
	kept = snap_nested_keep_tree(&nc, fd, long_name, &part);
	assert_non_null(kept);
	assert_int_equal(strlen(strrchr(kept, '/') + 1), strlen("3-") + 200 +
	    strlen(".d"));
	free(kept);
	close(fd);
	free(q);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_setid, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nested_gitdir_of, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_keep_tree, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_allow_list, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_bad_config, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_gitdir_link, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_own_gitdir, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_own_dotgit_swap, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_other_names, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_objects_link, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_existing_link, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_sequence_left, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_sequence_opts, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_sequence_grew, setup,
		    teardown),
		cmocka_unit_test(test_match),
		cmocka_unit_test_setup_teardown(test_watch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_watch_at_once, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_open_up_race, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_hooks_path, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_git_files_user, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_git_files, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_cachetree, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_index_ext_forged, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_hooks_user, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_gitdir_ids, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_gitdir_ids_worktree, setup,
		    teardown),
	};

	return test_run_group(tests, NULL, NULL);
}
