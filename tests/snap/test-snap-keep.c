/*
 * Keeping snapshots bounded, with real git: loose objects are packed with
 * deltas in the background, and over [snapshots] max_size the oldest turn
 * snapshots are dropped (never a start, an end or a session's last), the
 * user is told, and a dropped one is refused by name.
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
#include "snap/snap-int.h"

static char *own;

static int
setup(void **state)
{
	char *cause = NULL;

	test_proj_setup(state);
	own = snap_repo_path(test_proj, &cause);
	assert_non_null(own);
	setenv("OWN", own, 1);
	test_sh_ok("git init -q -b master . && git config user.email t@x && "
	    "git config user.name t && echo a > a && git add a && "
	    "git commit -qm a");
	return 0;
}

static int
teardown(void **state)
{
	free(own);
	return test_proj_teardown(state);
}

static void
take(struct event_base *base, struct snap_session *ss, const char *kind)
{
	char *cause = NULL;

	if (snap_session_take(ss, kind, NULL, NULL, NULL, &cause) == -1)
		fail_msg("%s: %s", kind, cause);
	while (snap_session_busy(ss))
		event_base_loop(base, EVLOOP_ONCE);
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

/* A session: start, N turns each rewriting FILE (SIZE bytes, from CMD), end. */
static int64_t
session(struct store *st, struct config *cf, int n, const char *cmd)
{
	struct event_base *base = event_base_new();
	struct snap_session *ss;
	char *cause = NULL;
	int64_t id;
	int i;

	id = begin(st);
	ss = snap_session_create(base, st, cf, id, test_proj, &cause);
	assert_non_null(ss);
	test_sh_ok("%s", cmd);
	take(base, ss, "start");
	for (i = 0; i < n; i++) {
		test_sh_ok("%s", cmd);
		take(base, ss, "turn");
	}
	take(base, ss, "end");
	snap_session_free(ss);
	/*
	 * A keep job the free stopped is reaped on the loop, not waited for:
	 * run it until that is done, so that no git of it touches the
	 * repository after.
	 */
	event_base_dispatch(base);
	store_session_end(st, id, "exited", 0, NULL);
	event_base_free(base);
	return id;
}

/* Bytes the snapshots' reachable objects take, as git counts them. */
static long long
usage(void)
{
	char *out = test_sh_out("GIT_DIR=$OWN git rev-list --objects --all "
	    "--disk-usage");
	long long v = atoll(out);

	free(out);
	return v;
}

/* Bytes the repository's objects take on disk, loose and packed. */
static long long
on_disk(void)
{
	char *out = test_sh_out("GIT_DIR=$OWN git count-objects -v | awk "
	    "'$1 == \"size:\" || $1 == \"size-pack:\" { n += $2 } END { print n "
	    "* 1024 }'");
	long long v = atoll(out);

	free(out);
	return v;
}

/*
 * Over the budget, the oldest turn snapshots go until the rest fits:
 * starts, ends and each session's last stay; dropped ones keep their
 * numbers, are named as dropped, and refused; the user is told.
 */
static void
test_budget(void **state)
{
	struct config *cf = config_default();
	struct store_snapshot **v;
	struct strv msgs;
	struct store *st;
	struct test_run r;
	char *cause = NULL;
	size_t n, i, dropped = 0;
	int64_t id;
	bool prefix = true;

	st = store_open(NULL, &cause);
	assert_non_null(st);
	/* Random bytes: no delta or zlib makes 300 KiB smaller. */
	id = session(st, cf, 6, "head -c 307200 /dev/urandom > big.bin");
	cf->snapshots.max_size = 1200 * 1024;
	assert_true(usage() > cf->snapshots.max_size);
	strv_init(&msgs);
	assert_int_equal(snap_keep_sync(st, cf, own, test_proj, false, &msgs,
	    &cause), 0);
	if (msgs.n == 0 || strstr(msgs.v[0], "dropped, the oldest first") == NULL)
		fail_msg("nothing said about the drop: %s", msgs.n > 0 ?
		    msgs.v[0] : "(nothing)");
	assert_true(usage() <= cf->snapshots.max_size);
	v = store_snapshot_list(st, id, &n);
	assert_int_equal(n, 8);
	for (i = 0; i < n; i++) {
		if (v[i]->dropped_at != 0) {
			assert_string_equal(v[i]->kind, "turn");
			assert_true(prefix);
			dropped++;
		} else if (strcmp(v[i]->kind, "turn") == 0)
			prefix = false;
	}
	assert_true(dropped >= 3);
	assert_int_equal(v[0]->dropped_at, 0);
	assert_int_equal(v[n - 1]->dropped_at, 0);
	/* Their refs went; the kept ones' are there. */
	test_sh_ok("! GIT_DIR=$OWN git rev-parse -q --verify "
	    "refs/agentmux/snaps/%lld/%s >/dev/null", (long long)id, v[1]->commit);
	test_sh_ok("GIT_DIR=$OWN git rev-parse -q --verify "
	    "refs/agentmux/snaps/%lld/%s >/dev/null", (long long)id, v[0]->commit);
	store_snapshot_list_free(v, n);
	/* The list says so, the session's events too, and a dropped one is refused. */
	test_amx(&r, "snapshots", "last", NULL);
	assert_non_null(strstr(r.out, "dropped"));
	test_run_free(&r);
	test_amx(&r, "show", "last", NULL);
	assert_non_null(strstr(r.out, "dropped, the oldest first"));
	test_run_free(&r);
	test_amx(&r, "undo", "last", "--to", "2", NULL);
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "was dropped"));
	test_run_free(&r);
	/* Once the grace is over (an hour: aged here), the disk holds no more. */
	test_sh_ok("find $OWN/objects -type f -exec touch -d '2 hours ago' {} +");
	assert_int_equal(snap_keep_sync(st, cf, own, test_proj, true, NULL, &cause), 0);
	assert_true(on_disk() <= cf->snapshots.max_size + 64 * 1024);
	/* What is kept is whole: undo to the start puts its big.bin back. */
	test_sh_ok("GIT_DIR=$OWN git fsck --no-dangling >/dev/null 2>&1");
	test_amx(&r, "undo", "last", NULL);
	assert_int_equal(r.status, 0);
	test_run_free(&r);
	strv_free(&msgs);
	store_close(st);
	config_free(cf);
}

/* Nothing droppable (no turns): said, and nothing is dropped. */
static void
test_budget_nothing(void **state)
{
	struct config *cf = config_default();
	struct strv msgs;
	struct store *st;
	char *cause = NULL;

	st = store_open(NULL, &cause);
	session(st, cf, 0, "head -c 307200 /dev/urandom > big.bin");
	cf->snapshots.max_size = 1024;
	strv_init(&msgs);
	assert_int_equal(snap_keep_sync(st, cf, own, test_proj, false, &msgs,
	    &cause), 0);
	if (msgs.n == 0 || strstr(msgs.v[0], "never dropped") == NULL)
		fail_msg("nothing said: %s", msgs.n > 0 ? msgs.v[0] : "(nothing)");
	strv_free(&msgs);
	store_close(st);
	config_free(cf);
}

/*
 * A large file changed a little every turn costs its full size per turn
 * while loose (written at zlib's fastest level); packed with deltas, in
 * the background once the session is over, almost nothing more than once.
 */
static void
test_pack(void **state)
{
	struct config *cf = config_default();
	struct store *st;
	char *cause = NULL;
	long long size = 0;
	int i;

	st = store_open(NULL, &cause);
	test_sh_ok("head -c 6000000 /dev/urandom | base64 > log.txt");
	session(st, cf, 8, "echo more >> log.txt");
	/* 10 snapshots of an 8 MB file: 80 MB loose. A process of its own packs them. */
	for (i = 0; i < 600; i++) {
		size = on_disk();
		if (size < 14LL * 1000 * 1000 && test_sh("test \"$(GIT_DIR=$OWN "
		    "git count-objects | cut -d' ' -f1)\" -lt 10") == 0)
			break;
		usleep(200000);
	}
	if (i == 600)
		fail_msg("the snapshots were not packed in 2 minutes: %lld bytes",
		    size);
	test_sh_ok("GIT_DIR=$OWN git fsck --no-dangling >/dev/null 2>&1");
	store_close(st);
	config_free(cf);
}

/*
 * Packing and pruning take turns: a keep waits while a repack that outlived
 * an earlier agentmux holds the repository's lock (the two at once left
 * loose objects a prune was deleting in a new pack, past the budget).
 */
static void
test_lock(void **state)
{
	struct config *cf = config_default();
	struct store *st;
	char *cause = NULL;
	int i;

	st = store_open(NULL, &cause);
	assert_non_null(st);
	session(st, cf, 2, "echo x >> f.txt");
	test_sh_ok("(flock \"$OWN/agentmux-keep.lock\" sh -c 'sleep 1; "
	    "touch released') </dev/null >/dev/null 2>&1 &");
	for (i = 0; i < 100 && test_sh("flock -n \"$OWN/agentmux-keep.lock\" "
	    "true") == 0; i++)
		usleep(20000);
	if (i == 100)
		fail_msg("the lock was never taken by the test's holder");
	assert_int_equal(snap_keep_sync(st, cf, own, test_proj, true, NULL,
	    &cause), 0);
	test_sh_ok("test -e released");
	test_sh_ok("GIT_DIR=$OWN git fsck --no-dangling >/dev/null 2>&1");
	store_close(st);
	config_free(cf);
}

/* 300 files of base64 text (zlib makes them a quarter smaller) in 3 dirs. */
static void
first_files(void)
{
	test_sh_ok("for d in 0 1 2; do mkdir -p src/$d; i=0; while [ $i -lt 100 ]; "
	    "do head -c 6000 /dev/urandom | base64 > src/$d/f$i.txt; "
	    "i=$((i + 1)); done; done");
}

/* The snapshot's files are the project's, byte for byte. */
static void
first_same(void)
{
	test_sh_ok("rm -rf ../check && mkdir ../check && GIT_DIR=$OWN git archive "
	    "\"$(GIT_DIR=$OWN git for-each-ref --format='%%(objectname)' "
	    "refs/agentmux/sessions/)\" | tar -x -C ../check && diff -r src "
	    "../check/src");
}

static int
first_loose(void)
{
	char *out = test_sh_out("find $OWN/objects -path "
	    "'*/objects/[0-9a-f][0-9a-f]/*' -type f ! -name 'tmp_obj_*' | wc -l");
	int n = atoi(out);

	free(out);
	return n;
}

/*
 * A project's first snapshot (no stat cache: every file hashed and
 * written) streams its objects into one pack, uncompressed, instead of a
 * file per object; the background pack compresses them afresh, so that
 * they take no more room than loose objects packed would.
 */
static void
test_first(void **state)
{
	struct config *cf = config_default();
	struct event_base *base = event_base_new();
	struct snap_session *ss;
	struct store *st;
	char *cause = NULL;
	long long before = 0, size = 0;
	int64_t id;
	int i;

	st = store_open(NULL, &cause);
	first_files();
	id = begin(st);
	ss = snap_session_create(base, st, cf, id, test_proj, &cause);
	assert_non_null(ss);
	take(base, ss, "start");
	first_same();
	assert_true(first_loose() < 20);
	test_sh_ok("ls $OWN/objects/pack/*.pack >/dev/null && test -f "
	    "$OWN/" SNAP_KEEP_MARK);
	before = on_disk();
	assert_true(before > 300 * 7000);
	test_sh_ok("echo more >> src/0/f1.txt");
	take(base, ss, "end");
	snap_session_free(ss);
	store_session_end(st, id, "exited", 0, NULL);
	/* A process of its own packs and compresses everything. */
	for (i = 0; i < 600; i++) {
		size = on_disk();
		if (size < before * 85 / 100 && test_sh("test -f $OWN/"
		    SNAP_KEEP_MARK) != 0)
			break;
		/* The packing process is watched on the loop: let it turn. */
		event_base_loop(base, EVLOOP_NONBLOCK);
		usleep(200000);
	}
	if (i == 600)
		fail_msg("the first snapshot was not compressed in 2 minutes: "
		    "%lld bytes of %lld", size, before);
	/* Its process is reaped on the loop before the loop goes. */
	for (i = 0; i < 600 && snap_session_orphans() > 0; i++) {
		event_base_loop(base, EVLOOP_NONBLOCK);
		usleep(100000);
	}
	assert_int_equal(snap_session_orphans(), 0);
	test_sh_ok("GIT_DIR=$OWN git fsck --no-dangling >/dev/null 2>&1");
	first_same();
	event_base_free(base);
	store_close(st);
	config_free(cf);
}

/*
 * When git cannot write that pack (here its dir is a file; a file that
 * shrank while git read it is another way), the first snapshot is taken
 * with loose objects, the usual way, and is whole.
 */
static void
test_first_fallback(void **state)
{
	struct config *cf = config_default();
	struct event_base *base = event_base_new();
	struct snap_session *ss;
	struct store *st;
	char *cause = NULL;
	int64_t id;

	st = store_open(NULL, &cause);
	first_files();
	id = begin(st);
	ss = snap_session_create(base, st, cf, id, test_proj, &cause);
	assert_non_null(ss);
	/* The repository is made on the loop. */
	while (test_sh("test -f $OWN/agentmux-project") != 0)
		assert_int_equal(event_base_loop(base, EVLOOP_ONCE), 0);
	test_sh_ok("rmdir $OWN/objects/pack && touch $OWN/objects/pack");
	take(base, ss, "start");
	test_sh_ok("rm $OWN/objects/pack && mkdir $OWN/objects/pack");
	first_same();
	assert_true(first_loose() >= 300);
	test_sh_ok("test ! -f $OWN/" SNAP_KEEP_MARK);
	test_sh_ok("GIT_DIR=$OWN git fsck --no-dangling >/dev/null 2>&1");
	snap_session_free(ss);
	store_session_end(st, id, "exited", 0, NULL);
	event_base_free(base);
	store_close(st);
	config_free(cf);
}

/*
 * Snapshots go on while a repack runs (they never wait for one). The
 * repack's prune-packed removed every objects/XX directory it emptied, one
 * a snapshot's git had just made among them, and the snapshot failed with
 * "unable to create temporary file". Each turn writes 40 new objects where
 * the last were packed away; the looping repack holds the keep lock, as
 * the detached one does.
 */
static void
test_race(void **state)
{
	struct config *cf = config_default();
	struct snap_take_opts o;
	struct snap_result res;
	struct snap_repo *r;
	struct store *st;
	char *cause = NULL, *failed = NULL;
	int64_t id;
	int i;

	st = store_open(NULL, &cause);
	assert_non_null(st);
	id = session(st, cf, 0, "true");
	assert_int_equal(snap_keep_sync(st, cf, own, test_proj, true, NULL,
	    &cause), 0);
	test_sh_ok("rm -f ../race-stop ../race-done; (flock \"$OWN/"
	    "agentmux-keep.lock\" sh -c 'export GIT_DIR=\"$OWN\"; while [ ! -e "
	    "../race-stop ]; do git repack -A -d -q; git prune-packed; "
	    "git prune-packed; git prune-packed; done'; touch ../race-done) "
	    "</dev/null >/dev/null 2>&1 &");
	r = snap_repo_open(test_proj, cf, "race", &cause);
	assert_non_null(r);
	memset(&o, 0, sizeof o);
	o.kind = "turn";
	o.session = id;
	for (i = 0; i < 40 && failed == NULL; i++) {
		test_sh_ok("j=0; while [ $j -lt 40 ]; do echo %d.$j > r$j.txt; "
		    "j=$((j + 1)); done", i);
		memset(&res, 0, sizeof res);
		if (snap_take_sync(st, r, &o, &res, &cause) == -1)
			failed = xprintf("turn %d: %s", i, cause);
		snap_result_clear(&res);
		free(cause);
		cause = NULL;
	}
	test_sh_ok("touch ../race-stop");
	for (i = 0; i < 600 && test_sh("test -e ../race-done") != 0; i++)
		usleep(100000);
	if (failed != NULL)
		fail_msg("a snapshot beside a repack failed: %s", failed);
	test_sh_ok("GIT_DIR=$OWN git fsck --strict --no-dangling 2>&1 | "
	    "{ ! grep -v '^notice: HEAD points to an unborn'; }");
	snap_repo_free(r);
	store_close(st);
	config_free(cf);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_budget, setup, teardown),
		cmocka_unit_test_setup_teardown(test_budget_nothing, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_pack, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lock, setup, teardown),
		cmocka_unit_test_setup_teardown(test_first, setup, teardown),
		cmocka_unit_test_setup_teardown(test_first_fallback, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_race, setup, teardown),
	};

	return test_run_group(tests, NULL, NULL);
}
