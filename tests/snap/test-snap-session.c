/*
 * Snapshots of a running session through the event loop: start (with refs
 * and index), turn boundaries (only when changed, rate-limited), progress,
 * finishing at free; then a session that commits, undo --refs, and gc.
 */
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include <arpa/inet.h>

#include <linux/magic.h>

#include <event2/event.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "lib/testlib.h"
#include "snap/snap-int.h"

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
	free(own);
	return test_proj_teardown(state);
}

struct waiter {
	int calls;
	char *error;
	int64_t seq;
	bool unchanged;
	int64_t progress;
};

static void
on_done(void *arg, const struct snap_result *res, const char *error)
{
	struct waiter *w = arg;

	w->calls++;
	if (error != NULL)
		w->error = xstrdup(error);
	else {
		w->seq = res->seq;
		w->unchanged = res->unchanged;
	}
}

static void
on_progress(void *arg, int64_t files)
{
	struct waiter *w = arg;

	w->progress = files;
}

static void
drain(struct event_base *base, struct snap_session *ss)
{
	while (snap_session_busy(ss))
		event_base_loop(base, EVLOOP_ONCE);
}

/* Lets go of SS, and runs the loop until what it was asked for is taken. */
static void
release(struct event_base *base, struct snap_session *ss)
{
	snap_session_free(ss);
	while (snap_session_orphans() > 0)
		event_base_loop(base, EVLOOP_ONCE);
}

static void
saved(void *arg)
{
	*(bool *)arg = true;
}

static size_t
count(struct store *st, int64_t id)
{
	struct store_snapshot **v;
	size_t n;

	v = store_snapshot_list(st, id, &n);
	store_snapshot_list_free(v, n);
	return n;
}

static int64_t
begin(struct store *st)
{
	struct store_session s;
	char *cause = NULL;
	int64_t id;

	memset(&s, 0, sizeof s);
	s.agent = (char *)"shell";
	s.project = test_proj;
	s.command = (char *)"[\"sh\"]";
	id = store_session_begin(st, &s, &cause);
	assert_true(id > 0);
	return id;
}

static void
test_session_snapshots(void **state)
{
	struct config *cf = config_default();
	struct event_base *base = event_base_new();
	struct snap_session *ss;
	struct waiter w;
	struct store *st;
	char *cause = NULL, **refs;
	size_t nrefs, i;
	int64_t id;
	bool head = false, master = false;

	cf->snapshots.interval = 1;
	test_sh_ok("git init -q -b master . && git config user.email t@x && "
	    "git config user.name t && echo a > a && git add a && "
	    "git commit -qm a && git branch side");
	test_sh_ok("mkdir many && for i in $(seq 600); do echo $i > many/f$i; done");
	st = store_open(NULL, &cause);
	assert_non_null(st);
	id = begin(st);
	ss = snap_session_create(base, st, cf, id, test_proj, &cause);
	assert_non_null(ss);
	memset(&w, 0, sizeof w);
	snap_session_set_progress(ss, on_progress, &w);
	assert_int_equal(snap_session_take(ss, "start", NULL, on_done, &w,
	    &cause), 0);
	assert_true(snap_session_busy(ss));
	drain(base, ss);
	assert_int_equal(w.calls, 1);
	assert_null(w.error);
	assert_int_equal(w.seq, 1);
	/* Every file was hashed: the 600 and the one git tracks. */
	assert_true(w.progress >= 600);
	refs = store_session_refs(st, id, &nrefs);
	for (i = 0; i < nrefs; i++) {
		head |= strcmp(refs[i], "HEAD ref: refs/heads/master") == 0;
		master |= strncmp(refs[i], "refs/heads/master ", 18) == 0;
		free(refs[i]);
	}
	free(refs);
	assert_true(head && master);
	assert_int_equal(snap_session_take(ss, "sideways", NULL, NULL, NULL,
	    &cause), -1);
	free(cause);
	cause = NULL;

	/* A turn that changed something is recorded; one that did not is not. */
	test_sh_ok("echo b > a");
	snap_session_turn(ss);
	drain(base, ss);
	assert_int_equal(count(st, id), 2);
	snap_session_turn(ss);          /* within the interval: deferred */
	assert_true(snap_session_busy(ss));
	drain(base, ss);
	assert_int_equal(count(st, id), 2);
	test_sh_ok("echo c > a");
	snap_session_turn(ss);
	snap_session_turn(ss);          /* coalesced with the one waiting */
	drain(base, ss);
	assert_int_equal(count(st, id), 3);

	/*
	 * Freeing does not wait, and what was asked for is still taken on the
	 * loop: the end snapshot is not lost (nobody is called back about it).
	 */
	memset(&w, 0, sizeof w);
	assert_int_equal(snap_session_take(ss, "end", "bye", on_done, &w,
	    &cause), 0);
	snap_session_free(ss);
	assert_int_equal(snap_session_orphans(), 1);
	assert_int_equal(count(st, id), 3);
	while (snap_session_orphans() > 0)
		event_base_loop(base, EVLOOP_ONCE);
	assert_int_equal(w.calls, 0);
	assert_int_equal(count(st, id), 4);
	store_close(st);
	event_base_free(base);
	config_free(cf);
}

/* The early writer's start calls it (snap-take.c). */
extern void (*snap_take_early_starting)(const char *which);

static int early_pass;           /* the passes of the loop run so far */
static int early_at;             /* the pass the writer started in */
static int early_calls;

static void
early_started(const char *which)
{
	assert_string_equal(which, "ref");
	early_at = early_pass;
	early_calls++;
}

/*
 * A chain's first snapshot starts its early writer (git update-ref,
 * held for its input) in a pass of the loop of its own, after the pass
 * that starts the snapshot: a child's start holds the loop (15-40 ms
 * under load), and keys and connections are served before it. The
 * commit is written by agentmux itself: git reads it back whole (fsck,
 * cat-file), the same object git hash-object makes of its text. The
 * snapshot is recorded as before.
 */
static void
test_early_writers_own_turns(void **state)
{
	struct config *cf = config_default();
	struct event_base *base = event_base_new();
	struct snap_session *ss;
	struct waiter w;
	struct store *st;
	char *cause = NULL, *cmd, *out;
	int64_t id;

	test_sh_ok("git init -q . && echo a > a");
	st = store_open(NULL, &cause);
	assert_non_null(st);
	id = begin(st);
	ss = snap_session_create(base, st, cf, id, test_proj, &cause);
	assert_non_null(ss);
	memset(&w, 0, sizeof w);
	early_pass = early_calls = 0;
	early_at = -1;
	snap_take_early_starting = early_started;
	assert_int_equal(snap_session_take(ss, "start", NULL, on_done, &w,
	    &cause), 0);
	assert_int_equal(early_calls, 0);
	while (snap_session_busy(ss)) {
		early_pass++;
		event_base_loop(base, EVLOOP_ONCE);
	}
	snap_take_early_starting = NULL;
	print_message("early writer: pass %d\n", early_at);
	assert_int_equal(early_calls, 1);
	assert_true(early_at > 0);
	assert_int_equal(w.calls, 1);
	assert_null(w.error);
	assert_int_equal(count(st, id), 1);
	/* The commit: whole to git, the id git gives its text, its ref set. */
	cmd = xprintf("c=$(git --git-dir=$OWN rev-parse "
	    "refs/agentmux/sessions/%lld) && git --git-dir=$OWN cat-file -t $c "
	    "&& git --git-dir=$OWN cat-file commit $c | git hash-object -t "
	    "commit --stdin | grep -qx $c && git --git-dir=$OWN cat-file -p $c "
	    "| grep -q '^agentmux snapshot: start' && { git --git-dir=$OWN "
	    "fsck --no-dangling 2>&1 || echo fsck failed; } | grep -v "
	    "'^notice:'; ls -a $OWN/objects/* | grep tmp_obj_ | grep -v "
	    "agentmux_keep || echo no-temporary", (long long)id);
	out = test_sh_out("%s", cmd);
	print_message("%s\n", out);
	assert_string_equal(out, "commit\nno-temporary\n");
	free(cmd);
	free(out);
	release(base, ss);
	store_close(st);
	event_base_free(base);
	config_free(cf);
}

/* A session that commits, moves branches and switches; undo --refs puts all back. */
static void
test_session_commits(void **state)
{
	struct config *cf = config_default();
	struct event_base *base = event_base_new();
	struct snap_session *ss;
	struct store *st;
	struct test_run r;
	char *cause = NULL, *master0, *side0, *idx0, *s;
	int64_t id;

	test_sh_ok("git init -q -b master . && git config user.email t@x && "
	    "git config user.name t && echo a > a && echo b > b && "
	    "git add a b && git commit -qm a && git branch side && "
	    "echo staged > s && git add s");
	master0 = test_sh_out("git rev-parse master");
	side0 = test_sh_out("git rev-parse side");
	idx0 = test_sh_out("sha1sum < .git/index");
	st = store_open(NULL, &cause);
	id = begin(st);
	ss = snap_session_create(base, st, cf, id, test_proj, &cause);
	assert_non_null(ss);
	snap_session_take(ss, "start", NULL, NULL, NULL, &cause);
	drain(base, ss);
	/* The agent: commits, a new branch, moves side, switches. */
	test_sh_ok("echo A > a && git commit -qam agent1 && git checkout -qb agent && "
	    "rm b && echo n > n && git add -A && git commit -qm agent2 && "
	    "git branch -f side HEAD");
	snap_session_take(ss, "end", NULL, NULL, NULL, &cause);
	release(base, ss);
	store_session_end(st, id, "exited", 0, NULL);
	store_close(st);

	test_amx(&r, "undo", "last", "--refs", "--dry-run", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "would reset   master"));
	test_run_free(&r);
	s = test_sh_out("git rev-parse master");
	assert_string_not_equal(s, master0);
	free(s);

	test_amx(&r, "undo", "last", "--refs", NULL);
	if (r.status != 0)
		fail_msg("undo --refs: %s%s", r.out, r.err);
	assert_non_null(strstr(r.out, "keep    agent"));
	test_run_free(&r);
	s = test_sh_out("git rev-parse master");
	assert_string_equal(s, master0);
	free(s);
	s = test_sh_out("git rev-parse side");
	assert_string_equal(s, side0);
	free(s);
	s = test_sh_out("git symbolic-ref HEAD");
	assert_string_equal(s, "refs/heads/master\n");
	free(s);
	s = test_sh_out("sha1sum < .git/index");
	assert_string_equal(s, idx0);
	free(s);
	/* The tree is as it was, the status as clean as at start. */
	test_sh_ok("test \"$(cat a)\" = a && test -f b && ! test -e n");
	s = test_sh_out("git status --porcelain");
	assert_string_equal(s, "A  s\n");
	free(s);
	/* The agent's work is still reachable: its branch and master's reflog. */
	test_sh_ok("git rev-parse -q --verify agent >/dev/null && "
	    "git log -g --format=%%s master | grep -q agent1");

	/* None of it in the project's repository. */
	test_sh_ok("test -z \"$(git for-each-ref refs/agentmux)\"");
	/* gc of the session deletes its snapshot refs: the chain and each one's. */
	test_sh_ok("GIT_DIR=$OWN git show-ref -q refs/agentmux/sessions/%lld",
	    (long long)id);
	test_sh_ok("test \"$(GIT_DIR=$OWN git for-each-ref refs/agentmux/snaps/%lld/ "
	    "| wc -l)\" -ge 2", (long long)id);
	test_amx(&r, "gc", "--older-than", "0s", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "removed 1 snapshot ref"));
	test_run_free(&r);
	assert_int_not_equal(test_sh("GIT_DIR=$OWN git show-ref -q "
	    "refs/agentmux/sessions/%lld", (long long)id), 0);
	test_sh_ok("test -z \"$(GIT_DIR=$OWN git for-each-ref "
	    "refs/agentmux/snaps/%lld/)\"", (long long)id);
	free(master0);
	free(side0);
	free(idx0);
	event_base_free(base);
	config_free(cf);
}

/*
 * The command may start once snap_session_when_saved says so: the own
 * repository is out of any jail's reach, so as soon as the tree and modes
 * are saved, with the commit and ref following on the loop. What changes
 * right after is not in the start snapshot, in a project outside git or
 * in one.
 */
static void
test_session_wait_ref(void **state)
{
	struct config *cf = config_default();
	struct event_base *base = event_base_new();
	struct snap_session *ss;
	struct waiter w;
	struct store *st;
	struct test_run r;
	char *cause = NULL, *s;
	int64_t id;
	int round;
	bool is_saved;

	st = store_open(NULL, &cause);
	for (round = 0; round < 2; round++) {
		if (round == 1) {
			test_sh_ok("rm -f a b && git init -q -b master . && "
			    "git config user.email t@x && git config user.name t");
		}
		test_sh_ok("echo before > a");
		memset(&w, 0, sizeof w);
		id = begin(st);
		ss = snap_session_create(base, st, cf, id, test_proj, &cause);
		assert_non_null(ss);
		assert_int_equal(snap_session_take(ss, "start", NULL, on_done,
		    &w, &cause), 0);
		is_saved = false;
		assert_int_equal(snap_session_when_saved(ss, saved, &is_saved),
		    1);
		while (!is_saved)
			event_base_loop(base, EVLOOP_ONCE);
		/* The tree is saved: the ref may follow on the loop. */
		/* The command runs: the tree changes at once. */
		test_sh_ok("echo after > a && echo new > b");
		drain(base, ss);
		assert_int_equal(w.calls, 1);
		assert_null(w.error);
		snap_session_take(ss, "end", NULL, NULL, NULL, &cause);
		release(base, ss);
		store_session_end(st, id, "exited", 0, NULL);

		test_amx(&r, "diff", "last", NULL);
		if (r.status != 0)
			fail_msg("diff: %s%s", r.out, r.err);
		assert_non_null(strstr(r.out, "-before\n+after\n"));
		assert_non_null(strstr(r.out, "+new\n"));
		test_run_free(&r);
		test_amx(&r, "undo", "last", NULL);
		if (r.status != 0)
			fail_msg("undo: %s%s", r.out, r.err);
		test_run_free(&r);
		s = test_sh_out("cat a; test -e b && echo b-left");
		assert_string_equal(s, "before\n");
		free(s);
	}
	store_close(st);
	event_base_free(base);
	config_free(cf);
}

/* gc removes a shadow repository once no session uses it. */
static void
test_gc_shadow(void **state)
{
	struct test_run r;

	test_sh_ok("echo x > f");
	test_amx(&r, "snapshot", NULL);
	assert_int_equal(r.status, 0);
	test_run_free(&r);
	test_sh_ok("touch -d '2 hours ago' %s/data/agentmux/shadow/proj-*/agentmux-project",
	    test_dir);
	test_amx(&r, "gc", "--older-than", "1d", NULL);
	assert_int_equal(r.status, 0);
	test_run_free(&r);
	/* Still used by the (recent) snapshot session. */
	test_sh_ok("ls -d %s/data/agentmux/shadow/proj-* >/dev/null", test_dir);
	test_amx(&r, "gc", "--older-than", "0s", NULL);
	assert_int_equal(r.status, 0);
	test_run_free(&r);
	assert_int_not_equal(test_sh("ls -d %s/data/agentmux/shadow/proj-* "
	    ">/dev/null 2>&1", test_dir), 0);
	test_sh_ok("test -f f");
}

/* The tree of session ID's last snapshot. */
static char *
last_tree(struct store *st, int64_t id)
{
	struct store_snapshot **v;
	char *tree;
	size_t n;

	v = store_snapshot_list(st, id, &n);
	assert_true(n > 0);
	tree = xstrdup(v[n - 1]->tree);
	store_snapshot_list_free(v, n);
	return tree;
}

/*
 * A file in DIR written through a shared mapping after a turn snapshot
 * cached its stat data: the write changes no time (none at all on a
 * tmpfs), yet the end snapshot has it.
 */
static void
mapped_write(const char *dir)
{
	struct config *cf = config_default();
	struct event_base *base = event_base_new();
	struct snap_session *ss;
	struct store *st;
	struct stat sb1, sb2;
	char *cause = NULL, *turn, *end, *path;
	static const char evil[] = "int main(void){evil();}";
	volatile unsigned char *m;
	unsigned char c;
	size_t i;
	int64_t id;
	int fd;

	test_sh_ok("cd '%s' && git init -q -b master . && git config "
	    "user.email t@x && git config user.name t && printf 'int main"
	    "(void) { return 0; }\\n' > main.c && git add main.c && "
	    "git commit -qm a", dir);
	st = store_open(NULL, &cause);
	assert_non_null(st);
	id = begin(st);
	ss = snap_session_create(base, st, cf, id, dir, &cause);
	assert_non_null(ss);
	snap_session_take(ss, "start", NULL, NULL, NULL, &cause);
	drain(base, ss);
	/* The agent maps main.c and dirties it once, same bytes, then waits out the racy second. */
	path = xprintf("%s/main.c", dir);
	assert_true((fd = open(path, O_RDWR)) != -1);
	m = mmap(NULL, 30, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(m != MAP_FAILED);
	c = m[0];
	m[0] = c;
	sleep(2);
	test_sh_ok("echo work > '%s/notes.txt'", dir);
	snap_session_take(ss, "turn", NULL, NULL, NULL, &cause);
	drain(base, ss);
	turn = last_tree(st, id);
	assert_int_equal(fstat(fd, &sb1), 0);
	for (i = 0; evil[i] != '\0'; i++)
		m[i] = (unsigned char)evil[i];
	assert_int_equal(fstat(fd, &sb2), 0);
	if (sb1.st_ctim.tv_sec != sb2.st_ctim.tv_sec ||
	    sb1.st_ctim.tv_nsec != sb2.st_ctim.tv_nsec)
		fprintf(stderr, "(%s: the mapped write changed ctime)\n", dir);
	snap_session_take(ss, "end", NULL, NULL, NULL, &cause);
	release(base, ss);
	end = last_tree(st, id);
	assert_string_not_equal(turn, end);
	munmap((void *)m, 30);
	close(fd);
	free(path);
	free(turn);
	free(end);
	store_close(st);
	event_base_free(base);
	config_free(cf);
}

static void
test_session_mapped(void **state)
{
	char shm[] = "/dev/shm/amx-test-mapped.XXXXXX";

	(void)state;
	mapped_write(test_proj);
	/* A tmpfs, as /tmp is on many systems. */
	if (mkdtemp(shm) == NULL) {
		fprintf(stderr, "no /dev/shm: the tmpfs case is not run\n");
		return;
	}
	mapped_write(shm);
	test_rmtree(shm);
}

/* Whether the inotify descriptor FD has an open of the watch WD queued. */
static bool
opened(int fd, int wd)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	const struct inotify_event *ev;
	static bool seen[2];
	ssize_t n;
	char *p;

	while ((n = read(fd, buf, sizeof buf)) > 0)
		for (p = buf; p < buf + n; p += sizeof *ev + ev->len) {
			ev = (const struct inotify_event *)p;
			if (ev->wd >= 1 && ev->wd <= 2)
				seen[ev->wd - 1] = true;
		}
	return seen[wd - 1];
}

/*
 * A worktree session's end distrusts the stat data cached from when its
 * command was let go (snap_session_set_first_write), not from the
 * session's start, which comes before the checkout: a file changed after
 * the start but seconds before the go is not read again by the end (it
 * hashed every file changed since the start), one changed after the go
 * is, though its stat data is unchanged since a turn cached it.
 */
static void
test_session_first_write(void **state)
{
	struct config *cf = config_default();
	struct event_base *base = event_base_new();
	struct snap_session *ss;
	struct store *st;
	struct statfs sf;
	char *cause = NULL;
	int64_t id;
	int fd;

	(void)state;
	if (statfs(test_proj, &sf) == 0 && (sf.f_type == TMPFS_MAGIC ||
	    sf.f_type == RAMFS_MAGIC))
		test_skip("the tests' dir is on a tmpfs, where the end hashes "
		    "every file again");
	test_sh_ok("git init -q -b master . && git config user.email t@x && "
	    "git config user.name t && echo 'int a(void);' > a.c && "
	    "echo 'int b(void);' > b.c && git add . && git commit -qm a");
	st = store_open(NULL, &cause);
	assert_non_null(st);
	id = begin(st);
	ss = snap_session_create(base, st, cf, id, test_proj, &cause);
	assert_non_null(ss);
	/* Changed after the start, as a worktree's checkout is, in a second before the go. */
	test_sh_ok("touch a.c b.c");
	sleep(2);
	snap_session_take(ss, "start", NULL, NULL, NULL, &cause);
	drain(base, ss);
	snap_session_set_first_write(ss, util_now_ms());
	test_sh_ok("touch b.c");
	sleep(2);
	test_sh_ok("echo work > notes.txt");
	snap_session_take(ss, "turn", NULL, NULL, NULL, &cause);
	drain(base, ss);
	assert_true((fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) != -1);
	assert_int_equal(inotify_add_watch(fd, "a.c", IN_OPEN), 1);
	assert_int_equal(inotify_add_watch(fd, "b.c", IN_OPEN), 2);
	snap_session_take(ss, "end", NULL, NULL, NULL, &cause);
	release(base, ss);
	assert_true(opened(fd, 2));
	assert_false(opened(fd, 1));
	close(fd);
	store_close(st);
	event_base_free(base);
	config_free(cf);
}

/* Rewrites FILE in place with TEXT (same size), its mtime set back to what it was: only ctime tells. */
static void
forge(const char *file, const char *text)
{
	struct timespec times[2];
	struct stat sb;
	int fd;

	assert_int_equal(stat(file, &sb), 0);
	assert_int_equal((off_t)strlen(text), sb.st_size);
	assert_true((fd = open(file, O_WRONLY)) != -1);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	times[0] = sb.st_atim;
	times[1] = sb.st_mtim;
	assert_int_equal(futimens(fd, times), 0);
	close(fd);
}

/* Sets the cached ctime of NAME in the (version 2, SHA-1) index PATH. */
static void
set_cached_ctime(const char *path, const char *name, uint32_t sec,
    uint32_t nsec)
{
	struct buf file;
	unsigned char *p;
	uint32_t n, i, v;
	size_t len;

	buf_init(&file);
	assert_int_equal(buf_read_file(&file, path), 0);
	p = (unsigned char *)file.data + 12;
	memcpy(&v, file.data + 8, 4);
	n = ntohl(v);
	for (i = 0; i < n; i++) {
		len = strlen((char *)p + 62);
		if (strcmp((char *)p + 62, name) == 0) {
			v = htonl(sec);
			memcpy(p, &v, 4);
			v = htonl(nsec);
			memcpy(p + 4, &v, 4);
			break;
		}
		p += (62 + len + 8) & ~(size_t)7;
	}
	assert_true(i < n);
	assert_int_equal(util_write_file_atomic(path, file.data, file.len,
	    0600, NULL), 0);
	buf_free(&file);
}

/*
 * snap_index_verify: an entry whose file was changed in the very second
 * its ctime was cached, its size kept and its mtime set back, is hashed
 * again (the ctime differs in nanoseconds only); an untouched one keeps
 * its stat data (a smudge undone); one cached at or after BEFORE is
 * hashed again though untouched.
 */
static void
test_index_verify(void **state)
{
	struct stat sb;
	int64_t later = (util_now_ms() + 60000) * 1000000;

	(void)state;
	test_sh_ok("git init -q -b master . && printf 'int a(void);\\n' > a.c "
	    "&& printf 'int b(void);\\n' > b.c && git add a.c b.c");
	assert_int_equal(snap_index_smudge(".git/index", 20, 0), 2);
	forge("b.c", "int c(void);\n");
	assert_int_equal(stat("b.c", &sb), 0);
	set_cached_ctime(".git/index", "b.c", (uint32_t)sb.st_ctim.tv_sec,
	    (uint32_t)sb.st_ctim.tv_nsec ^ 1);
	assert_int_equal(snap_index_verify(".git/index", 20, test_proj, later),
	    1);
	test_sh_ok("git ls-files --debug b.c | grep -q 'mtime: 0:0'");
	test_sh_ok("! git ls-files --debug a.c | grep -q 'mtime: 0:0'");
	test_sh_ok("test \"$(git diff --name-only)\" = b.c");
	/* Cached at or after the go: hashed again, unchanged or not. */
	test_sh_ok("git add a.c b.c");
	assert_int_equal(snap_index_verify(".git/index", 20, test_proj, 0), 2);
	/* A link on the way is not followed: the entry is hashed again. */
	test_sh_ok("mkdir d && echo x > d/f && git add d/f && mv d e && "
	    "ln -s e d");
	assert_int_equal(snap_index_verify(".git/index", 20, test_proj, later),
	    1);
	test_sh_ok("git ls-files --debug d/f | grep -q 'mtime: 0:0'");
}

/*
 * snap_index_verify on a file system whose times are whole seconds (ext4
 * with 128-byte inodes; a loop mount, root only): a file changed in the
 * second its ctime was cached, after the go, keeps the very ctime
 * cached (no nanoseconds to tell), so it is hashed again; one cached two
 * seconds before the go's second is trusted.
 */
static void
test_index_verify_coarse(void **state)
{
	struct stat sb;
	int64_t go;

	(void)state;
	if (geteuid() != 0 || system("command -v mkfs.ext4 >/dev/null && "
	    "truncate -s 32M ../coarse.img && mkfs.ext4 -q -I 128 -F "
	    "../coarse.img >/dev/null 2>&1 && mkdir -p coarse && "
	    "mount -o loop ../coarse.img coarse 2>/dev/null") != 0) {
		print_message("skipped: no loop-mounted ext4 with 128-byte "
		    "inodes here (it needs root)\n");
		skip();
	}
	assert_int_equal(chdir("coarse"), 0);
	test_sh_ok("git init -q -b master . && printf 'int a(void);\\n' > "
	    "a.c && printf 'int b(void);\\n' > b.c && git add a.c b.c");
	assert_int_equal(stat("a.c", &sb), 0);
	assert_int_equal(sb.st_ctim.tv_nsec, 0);
	sleep(3);
	forge("b.c", "int c(void);\n");
	assert_int_equal(stat("b.c", &sb), 0);
	/* Cached in the very second it was written in, the go half way through it. */
	set_cached_ctime(".git/index", "b.c", (uint32_t)sb.st_ctim.tv_sec, 0);
	go = (int64_t)sb.st_ctim.tv_sec * 1000000000 + 500000000;
	assert_int_equal(snap_index_verify(".git/index", 20, ".", go), 1);
	test_sh_ok("git ls-files --debug b.c | grep -q 'mtime: 0:0'");
	test_sh_ok("! git ls-files --debug a.c | grep -q 'mtime: 0:0'");
	test_sh_ok("test \"$(git diff --name-only)\" = b.c");
}

/* The loop mount goes whatever failed. */
static int
teardown_coarse(void **state)
{
	if (chdir(test_proj) == 0 && system("umount -l coarse 2>/dev/null; "
	    "rm -f ../coarse.img") != 0)
		print_message("cannot unmount %s/coarse\n", test_proj);
	return teardown(state);
}

/*
 * The same through a worktree session's end: checkout, start, go and a
 * change (size kept, mtime set back) within moments of each other; the
 * end records the new bytes.
 */
static void
test_session_first_write_forged(void **state)
{
	struct config *cf = config_default();
	struct event_base *base = event_base_new();
	struct snap_session *ss;
	struct store *st;
	char *cause = NULL, *start, *end, *text;
	int64_t id;

	(void)state;
	test_sh_ok("git init -q -b master . && git config user.email t@x && "
	    "git config user.name t && printf 'int a(void);\\n' > a.c && "
	    "printf 'int b(void);\\n' > b.c && git add . && git commit -qm a");
	st = store_open(NULL, &cause);
	assert_non_null(st);
	id = begin(st);
	ss = snap_session_create(base, st, cf, id, test_proj, &cause);
	assert_non_null(ss);
	test_sh_ok("touch a.c b.c");
	snap_session_take(ss, "start", NULL, NULL, NULL, &cause);
	drain(base, ss);
	start = last_tree(st, id);
	usleep(50 * 1000);
	snap_session_set_first_write(ss, util_now_ms());
	forge("b.c", "int c(void);\n");
	snap_session_take(ss, "end", NULL, NULL, NULL, &cause);
	release(base, ss);
	end = last_tree(st, id);
	assert_string_not_equal(start, end);
	text = test_sh_out("git --git-dir=\"$OWN\" show %s:b.c", end);
	assert_string_equal(text, "int c(void);\n");
	free(text);
	free(start);
	free(end);
	store_close(st);
	event_base_free(base);
	config_free(cf);
}

extern int thread_job_test_allow;

/*
 * One worktree NAME of p, fresh, with an untracked extra.txt; its start
 * snapshot taken as a worktree session's (from git's checkout) with
 * ALLOW helper jobs allowed to start (-1: any). True if it was saved;
 * the tree's names into *NAMES, the error into *ERROR.
 */
static bool
wt_start(const char *name, int allow, char **names, char **error)
{
	struct config *cf = config_default();
	struct event_base *base = event_base_new();
	struct snap_session *ss;
	struct snap_checkout co;
	struct waiter w;
	struct store *st;
	char *cause = NULL, *wt, *common, *index, *commit, *own_wt, *tree;
	int64_t id, t0;
	bool busy;

	test_sh_ok("cd p && git worktree add -q ../%s -b %s && echo extra > "
	    "../%s/extra.txt", name, name, name);
	wt = xprintf("%s/%s", test_proj, name);
	common = xprintf("%s/p/.git", test_proj);
	index = xprintf("%s/p/.git/worktrees/%s/index", test_proj, name);
	commit = test_sh_out("git -C p rev-parse HEAD");
	commit[strcspn(commit, "\n")] = '\0';
	own_wt = snap_repo_path(wt, &cause);
	assert_non_null(own_wt);
	st = store_open(NULL, &cause);
	assert_non_null(st);
	id = begin(st);
	ss = snap_session_create(base, st, cf, id, wt, &cause);
	assert_non_null(ss);
	memset(&co, 0, sizeof co);
	co.base = commit;
	co.common = common;
	co.index = index;
	snap_session_set_checkout(ss, &co);
	memset(&w, 0, sizeof w);
	thread_job_test_allow = allow;
	assert_int_equal(snap_session_take(ss, "start", NULL, on_done, &w,
	    &cause), 0);
	/* Bounded: a start that never ends is what is looked for. */
	for (t0 = util_mono_us(); snap_session_busy(ss) &&
	    util_mono_us() - t0 < 60 * 1000000;) {
		struct timeval tv = { 0, 100000 };

		event_base_loopexit(base, &tv);
		event_base_loop(base, EVLOOP_ONCE);
	}
	thread_job_test_allow = -1;
	busy = snap_session_busy(ss);
	assert_false(busy);
	*error = w.error;
	*names = NULL;
	if (w.calls == 1 && w.error == NULL) {
		tree = last_tree(st, id);
		*names = test_sh_out("git --git-dir='%s' ls-tree -r --name-only "
		    "%s | tr '\\n' ' '", own_wt, tree);
		free(tree);
	}
	release(base, ss);
	store_close(st);
	event_base_free(base);
	config_free(cf);
	free(wt);
	free(common);
	free(index);
	free(commit);
	free(own_wt);
	return *names != NULL;
}

/*
 * A worktree's start snapshot whatever fails on the way: git's listing
 * (then git add's path), the helper threads (none: the start ends with
 * its error, never waits for ever; the seed's look alone: every file
 * read). Each time the tree holds the tracked file the ignore rules
 * name (keep.o) and the untracked one (extra.txt).
 */
static void
test_worktree_start_fails(void **state)
{
	char *names, *error, *bin, *git, *text, *path, *newpath, name[8];
	const char want[] = ".gitignore a.c extra.txt keep.o ";
	unsigned i;

	(void)state;
	test_sh_ok("git init -q -b main p && cd p && git config user.email t@x "
	    "&& git config user.name t && printf 'int a;\\n' > a.c && printf "
	    "'*.o\\n' > .gitignore && printf 'kept\\n' > keep.o && git add . && "
	    "git add -f keep.o && git commit -qm a");
	assert_true(wt_start("w1", -1, &names, &error));
	assert_string_equal(names, want);
	free(names);

	/* git ls-files fails. */
	bin = xprintf("%s/bin/git", test_proj);
	git = test_sh_out("command -v git");
	git[strcspn(git, "\n")] = '\0';
	text = xprintf("#!/bin/sh\ncase \" $* \" in\n*\" ls-files -z -c -o \"*) "
	    "echo 'fatal: made to fail' >&2; exit 128 ;;\nesac\nexec %s \"$@\"\n",
	    git);
	test_write_file(bin, text);
	assert_int_equal(chmod(bin, 0755), 0);
	path = xstrdup(getenv("PATH"));
	newpath = xprintf("%s/bin:%s", test_proj, path);
	setenv("PATH", newpath, 1);
	assert_true(wt_start("w2", -1, &names, &error));
	setenv("PATH", path, 1);
	assert_string_equal(names, want);
	free(names);
	free(text);
	free(git);
	free(path);
	free(newpath);

	/*
	 * Helper threads refused from the Nth on (the names' read, the
	 * seed's look, git add's names, ...): each start ends, with the
	 * whole tree or with its error, never half a tree, never waiting.
	 */
	for (i = 0; i < 5; i++) {
		snprintf(name, sizeof name, "t%u", i);
		if (wt_start(name, (int)i, &names, &error)) {
			assert_string_equal(names, want);
			free(names);
		} else {
			if (error == NULL || strstr(error, "helper thread") ==
			    NULL)
				fail_msg("%s: %s", name, error != NULL ? error :
				    "no tree, no error");
			free(error);
		}
	}
	free(bin);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_session_snapshots, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_early_writers_own_turns,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_session_commits, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_session_wait_ref, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_gc_shadow, setup, teardown),
		cmocka_unit_test_setup_teardown(test_session_mapped, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_session_first_write, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_index_verify, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_session_first_write_forged,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_index_verify_coarse,
		    setup, teardown_coarse),
		cmocka_unit_test_setup_teardown(test_worktree_start_fails,
		    setup, teardown),
	};

	return test_run_group(tests, NULL, NULL);
}
