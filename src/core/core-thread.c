/*
 * Helper threads that may run while the main thread clones a jail.
 *
 * A jail's init is made with a raw clone(2) and runs agentmux's own code,
 * malloc included, until it execs the command (jail-init.c). The child
 * has only the cloning thread: a lock another thread held at that moment
 * (malloc's, or a sanitizer allocator's) is held in the child for good,
 * and its first malloc waits forever. So the threads agentmux starts keep
 * to three rules:
 *
 *  - a clone waits until every thread spawned runs its function: the
 *    runtime's own set-up of a new thread (which allocates) is over;
 *  - a thread ends only inside thread_join, while the main thread (the
 *    only one that clones) waits for it: a thread's exit frees memory;
 *  - work that allocates is done between clone_gate_enter and
 *    clone_gate_leave; the clone is made between clone_gate_close and
 *    clone_gate_open, so the two never overlap.
 *
 * Threads that only make system calls (open, write, mkdir) need no gate.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "core.h"

static pthread_rwlock_t clone_gate = PTHREAD_RWLOCK_INITIALIZER;
/* Threads spawned that do not yet run their function. */
static pthread_mutex_t thread_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t thread_cv = PTHREAD_COND_INITIALIZER;
static int thread_starting;

static void
thread_starting_add(int n)
{
	pthread_mutex_lock(&thread_mu);
	thread_starting += n;
	pthread_cond_broadcast(&thread_cv);
	pthread_mutex_unlock(&thread_mu);
}

static void *
thread_main(void *arg)
{
	struct thread *t = arg;

	thread_starting_add(-1);
	t->fn(t->arg);
	/* Parked: the exit waits until the main thread is in thread_join. */
	while (sem_wait(&t->release) == -1 && errno == EINTR)
		;
	return NULL;
}

int
thread_spawn(struct thread *t, void (*fn)(void *), void *arg)
{
	sigset_t all, old;
	int rc;

	memset(t, 0, sizeof *t);
	t->fn = fn;
	t->arg = arg;
	sem_init(&t->release, 0, 0);
	thread_starting_add(1);
	/* Signals stay with the main thread. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&t->tid, NULL, thread_main, t);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		thread_starting_add(-1);
		sem_destroy(&t->release);
		return rc;
	}
	t->running = true;
	return 0;
}

void
thread_join(struct thread *t)
{
	if (!t->running)
		return;
	sem_post(&t->release);
	pthread_join(t->tid, NULL);
	sem_destroy(&t->release);
	t->running = false;
}

void
clone_gate_enter(void)
{
	pthread_rwlock_rdlock(&clone_gate);
}

void
clone_gate_leave(void)
{
	pthread_rwlock_unlock(&clone_gate);
}

void
clone_gate_close(void)
{
	pthread_mutex_lock(&thread_mu);
	while (thread_starting > 0)
		pthread_cond_wait(&thread_cv, &thread_mu);
	pthread_mutex_unlock(&thread_mu);
	pthread_rwlock_wrlock(&clone_gate);
}

void
clone_gate_open(void)
{
	pthread_rwlock_unlock(&clone_gate);
}

/* ---- work the loop must not wait for ---- */

struct thread_job {
	struct thread thread;
	struct event *ev;
	int pipe[2];              /* the thread writes a byte when WORK returned */
	void (*work)(void *);
	void *work_arg;
	void (*done)(void *);
	void *arg;
};

static void
thread_job_main(void *arg)
{
	struct thread_job *j = arg;
	char c = 0;

	j->work(j->work_arg);
	/* A system call, no allocation: outside the gate. */
	while (write(j->pipe[1], &c, 1) == -1 && errno == EINTR)
		;
}

/* On the loop: WORK returned; the job goes, then DONE is told. */
static void
thread_job_ready(evutil_socket_t fd, short what, void *arg)
{
	struct thread_job *j = arg;
	void (*done)(void *) = j->done;
	void *done_arg = j->arg;
	int64_t t0 = loop_trace_begin();

	(void)fd;
	(void)what;
	thread_job_free(j);
	done(done_arg);
	loop_trace_end(t0, "helper thread done");
}

/*
 * Test hook: how many more helper jobs may start (-1: any); once none
 * may, each start fails as one refused a thread would (EAGAIN).
 */
AM_TESTABLE int thread_job_test_allow = -1;

struct thread_job *
thread_job_start(struct event_base *base, void (*work)(void *),
    void *work_arg, void (*done)(void *), void *arg, char **cause)
{
	struct thread_job *j;
	int rc;

	if (thread_job_test_allow == 0) {
		*cause = xprintf("cannot start a helper thread: %s",
		    strerror(EAGAIN));
		return NULL;
	}
	if (thread_job_test_allow > 0)
		thread_job_test_allow--;
	j = xcalloc(1, sizeof *j);
	j->pipe[0] = j->pipe[1] = -1;
	j->work = work;
	j->work_arg = work_arg;
	j->done = done;
	j->arg = arg;
	if (pipe2(j->pipe, O_CLOEXEC | O_NONBLOCK) == -1) {
		*cause = xprintf("cannot make a pipe for a helper thread: %s",
		    strerror(errno));
		goto fail;
	}
	j->ev = event_new(base, j->pipe[0], EV_READ, thread_job_ready, j);
	if (j->ev == NULL || event_add(j->ev, NULL) == -1) {
		*cause = xstrdup("cannot watch a helper thread on the loop");
		goto fail;
	}
	if ((rc = thread_spawn(&j->thread, thread_job_main, j)) != 0) {
		*cause = xprintf("cannot start a helper thread: %s",
		    strerror(rc));
		goto fail;
	}
	return j;
fail:
	thread_job_free(j);
	return NULL;
}

void
thread_job_free(struct thread_job *j)
{
	if (j == NULL)
		return;
	thread_join(&j->thread);
	if (j->ev != NULL)
		event_free(j->ev);
	if (j->pipe[0] != -1)
		close(j->pipe[0]);
	if (j->pipe[1] != -1)
		close(j->pipe[1]);
	free(j);
}
