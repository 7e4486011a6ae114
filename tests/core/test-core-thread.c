/* Helper threads and the clone gate: a thread ends only in thread_join, and a clone never inherits a held allocator lock. */
#include <sys/syscall.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "core/core.h"
#include "lib/testlib.h"

static int
task_count(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d)) != NULL)
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

static void
sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

static atomic_int parked_done;

static void
parked_fn(void *arg)
{
	atomic_store((atomic_int *)arg, 1);
	atomic_store(&parked_done, 1);
}

/* The thread outlives its function until thread_join. */
static void
test_parks_until_join(void **state)
{
	struct thread t;
	atomic_int ran = 0;
	int before = task_count(), i;

	assert_int_equal(thread_spawn(&t, parked_fn, &ran), 0);
	for (i = 0; i < 500 && !atomic_load(&parked_done); i++)
		sleep_ms(2);
	assert_true(atomic_load(&ran));
	sleep_ms(20);
	assert_int_equal(task_count(), before + 1);
	thread_join(&t);
	assert_int_equal(task_count(), before);
	/* Joining twice, or a thread never started, is a no-op. */
	thread_join(&t);
}

static atomic_int gate_in, gate_out;

static void
gate_fn(void *arg)
{
	(void)arg;
	clone_gate_enter();
	atomic_store(&gate_in, 1);
	sleep_ms(50);
	atomic_store(&gate_out, 1);
	clone_gate_leave();
}

/* Closing the gate waits for a thread inside it. */
static void
test_gate_waits(void **state)
{
	struct thread t;
	int i;

	assert_int_equal(thread_spawn(&t, gate_fn, NULL), 0);
	for (i = 0; i < 500 && !atomic_load(&gate_in); i++)
		sleep_ms(1);
	assert_true(atomic_load(&gate_in));
	clone_gate_close();
	assert_true(atomic_load(&gate_out));
	clone_gate_open();
	thread_join(&t);
}

#define POOL 4096
#define CLONES 200

static char *pool[POOL];
static atomic_int churn_stop;

/* Frees the main thread's blocks and allocates its own: malloc's locks, taken over and over. */
static void
churn_fn(void *arg)
{
	size_t i = 0;
	void *p;

	(void)arg;
	while (!atomic_load(&churn_stop)) {
		clone_gate_enter();
		free(pool[i % POOL]);
		pool[i % POOL] = NULL;
		p = malloc(2048 + i % 512);
		free(p);
		clone_gate_leave();
		i++;
		if (i % POOL == 0) {
			clone_gate_enter();
			for (size_t k = 0; k < POOL; k++)
				pool[k] = malloc(2048);
			clone_gate_leave();
		}
	}
}

/* What a jail's init does before it execs: allocate. */
static int
child_allocates(void)
{
	void *v[64];
	int i;

	for (i = 0; i < 64; i++)
		v[i] = malloc(2048 + (size_t)i * 64);
	for (i = 0; i < 64; i++)
		free(v[i]);
	return 0;
}

/* Waits up to 10 s for PID; a child stuck on an inherited lock fails the test. */
static bool
reaped_in_time(pid_t pid)
{
	int st, i;

	for (i = 0; i < 10000; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return WIFEXITED(st) && WEXITSTATUS(st) == 0;
		sleep_ms(1);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return false;
}

static void
test_clone_while_allocating(void **state)
{
	struct thread t;
	pid_t pid;
	size_t k;
	int i;

	for (k = 0; k < POOL; k++)
		pool[k] = malloc(2048);
	atomic_store(&churn_stop, 0);
	assert_int_equal(thread_spawn(&t, churn_fn, NULL), 0);
	for (i = 0; i < CLONES; i++) {
		clone_gate_close();
		pid = (pid_t)syscall(SYS_clone, SIGCHLD, NULL, NULL, NULL,
		    NULL);
		if (pid == 0)
			_exit(child_allocates());
		clone_gate_open();
		assert_true(pid > 0);
		if (!reaped_in_time(pid))
			fail_msg("clone %d hung: it inherited a held lock", i);
	}
	atomic_store(&churn_stop, 1);
	thread_join(&t);
	for (k = 0; k < POOL; k++)
		free(pool[k]);
}

struct job_obs {
	atomic_int worked;        /* WORK ran (on its thread) */
	int done;                 /* DONE ran (on the loop), after WORK */
	int done_early;           /* ... before WORK was over */
};

static void
job_work(void *arg)
{
	struct job_obs *o = arg;

	sleep_ms(200);
	atomic_store(&o->worked, 1);
}

static void
job_done(void *arg)
{
	struct job_obs *o = arg;

	if (atomic_load(&o->worked))
		o->done++;
	else
		o->done_early++;
}

/*
 * A job's WORK runs on its thread while the loop goes on, DONE on the loop
 * once WORK returned, with the thread gone; a job freed first never tells.
 */
static void
test_job_tells_the_loop(void **state)
{
	struct event_base *base = event_base_new();
	struct job_obs o = { 0 }, gone = { 0 };
	struct thread_job *j;
	char *cause = NULL;
	int before = task_count(), turns = 0;

	assert_non_null(base);
	j = thread_job_start(base, job_work, &o, job_done, &o, &cause);
	assert_non_null(j);
	/* start returned before WORK did: DONE comes through the loop. */
	assert_false(atomic_load(&o.worked));
	while (o.done == 0 && turns < 100000) {
		assert_int_equal(event_base_loop(base, EVLOOP_ONCE), 0);
		turns++;
	}
	assert_int_equal(o.done, 1);
	assert_int_equal(o.done_early, 0);
	assert_int_equal(task_count(), before);
	j = thread_job_start(base, job_work, &gone, job_done, &gone, &cause);
	assert_non_null(j);
	thread_job_free(j);
	assert_true(atomic_load(&gone.worked));
	/* (1: nothing is left on the loop.) */
	assert_int_equal(event_base_loop(base, EVLOOP_NONBLOCK), 1);
	assert_int_equal(gone.done + gone.done_early, 0);
	assert_int_equal(task_count(), before);
	thread_job_free(NULL);
	event_base_free(base);
}

static void
slow_done(void *arg)
{
	sleep_ms(60);
	(*(int *)arg)++;
}

static void
quick_done(void *arg)
{
	(*(int *)arg)++;
}

static void
nothing(void *arg)
{
	(void)arg;
}

/*
 * AGENTMUX_LOOP_TRACE=FILE: a helper thread's result that held the loop
 * over AGENTMUX_LOOP_TRACE_MS is logged, named, with the ticker's gap it
 * made; a short one is not.
 */
static void
test_loop_trace(void **state)
{
	struct event_base *base = event_base_new();
	char *dir = test_tmpdir("trace"), *path = NULL, *cause = NULL;
	struct thread_job *j;
	struct buf b;
	int quick = 0, slow = 0, turns;

	assert_non_null(base);
	path = xprintf("%s/trace", dir);
	assert_int_equal(setenv("AGENTMUX_LOOP_TRACE", path, 1), 0);
	assert_int_equal(setenv("AGENTMUX_LOOP_TRACE_MS", "30", 1), 0);
	loop_trace_init(base);
	j = thread_job_start(base, nothing, NULL, quick_done, &quick, &cause);
	assert_non_null(j);
	for (turns = 0; quick == 0 && turns < 100000; turns++)
		assert_int_equal(event_base_loop(base, EVLOOP_ONCE), 0);
	j = thread_job_start(base, nothing, NULL, slow_done, &slow, &cause);
	assert_non_null(j);
	for (turns = 0; slow == 0 && turns < 100000; turns++)
		assert_int_equal(event_base_loop(base, EVLOOP_ONCE), 0);
	/* The ticker's next turn, after the long one. */
	for (turns = 0; turns < 5; turns++)
		assert_int_equal(event_base_loop(base, EVLOOP_ONCE), 0);
	assert_int_equal(quick + slow, 2);
	buf_init(&b);
	assert_int_equal(buf_read_file(&b, path), 0);
	buf_add(&b, "", 1);
	assert_non_null(strstr(b.data, "loop turns over 30 ms"));
	assert_non_null(strstr(b.data, " ms helper thread done\n"));
	/* The quick result is not logged: one line only, the slow one's. */
	assert_null(strstr(strstr(b.data, "helper thread done\n") + 1,
	    "helper thread done"));
	assert_non_null(strstr(b.data, " gap "));
	buf_free(&b);
	loop_trace_stop();
	test_rmtree(dir);
	free(path);
	free(dir);
	event_base_free(base);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parks_until_join),
		cmocka_unit_test(test_gate_waits),
		cmocka_unit_test(test_clone_while_allocating),
		cmocka_unit_test(test_job_tells_the_loop),
		cmocka_unit_test(test_loop_trace),
	};

	return test_run_group(tests, NULL, NULL);
}
