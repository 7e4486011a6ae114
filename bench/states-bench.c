/* Session states measured: CPU of an idle loop with 4 sessions, how soon "needs you" follows the last output, how long a pause of a 200-process jail takes. */
#include <sys/resource.h>

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "session/session.h"

#define BENCH_SESSIONS 4
#define BENCH_PAUSES 10

struct bench_obs {
	bool started;
	int64_t last_output_us;
	int64_t needs_us;            /* when it last became needs you */
};

static void
bench_started(void *arg, struct session *s, bool ok, const char *cause)
{
	struct bench_obs *o = arg;

	if (!ok)
		fatalx("start failed: %s", cause);
	o->started = true;
}

static void
bench_output(void *arg, struct session *s, int stream, const char *data,
    size_t len)
{
	struct bench_obs *o = arg;

	o->last_output_us = util_mono_us();
}

static void
bench_state(void *arg, struct session *s, enum session_state st)
{
	struct bench_obs *o = arg;

	if (st == SESSION_NEEDS_YOU)
		o->needs_us = util_mono_us();
}

static const struct session_events bench_events = {
	.started = bench_started,
	.output = bench_output,
	.state = bench_state,
};

static void
bench_loop_for(struct event_base *base, int ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	event_base_loopexit(base, &tv);
	event_base_dispatch(base);
}

static struct session *
bench_start(struct session_ctx *ctx, struct event_base *base,
    struct bench_obs *o, const char *script)
{
	char *argv[] = { (char *)"/bin/sh", (char *)"-c", (char *)script, NULL };
	char *plain[] = { (char *)"/bin/sh", NULL };
	struct session_opts so = { .kind = "run", .on_unknown = -1,
	    .pty = true, .rows = 24, .cols = 80, .listen_fd = -1,
	    .command = script != NULL ? argv : plain, .pids = 1024,
	    .shared = true };
	struct session *s;
	char *cause = NULL;

	if ((s = session_start(ctx, &so, &bench_events, o, &cause)) == NULL)
		fatalx("session_start: %s", cause);
	while (!o->started)
		bench_loop_for(base, 10);
	return s;
}

static double
bench_cpu_ms(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec * 1000 + ru.ru_utime.tv_usec / 1000.0 +
	    (double)ru.ru_stime.tv_sec * 1000 + ru.ru_stime.tv_usec / 1000.0;
}

static int
bench_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* The median (or the largest) of N sorted microsecond figures, in ms. */
static double
bench_ms(const int64_t *v, size_t n, bool max)
{
	size_t mid = n / 2;

	return (double)(max ? v[n - 1] : v[mid]) / 1000.0;
}

int
main(void)
{
	struct bench_obs o[BENCH_SESSIONS] = { 0 }, big = { 0 };
	struct session *s[BENCH_SESSIONS], *bs;
	struct session_costs c;
	struct event_base *base = event_base_new();
	struct session_ctx *ctx;
	struct config *cf;
	int64_t t0, lat[BENCH_SESSIONS], fr[BENCH_PAUSES], idle_after;
	char *cause = NULL;
	double cpu0, cpu1;
	int i;

	if ((cf = config_load_or_cause(NULL, &cause)) == NULL)
		fatalx("config: %s", cause);
	idle_after = cf->ui.idle_after;
	if ((ctx = session_ctx_create(base, cf, NULL, &cause)) == NULL)
		fatalx("session_ctx_create: %s", cause);
	for (i = 0; i < BENCH_SESSIONS; i++)
		s[i] = bench_start(ctx, base, &o[i], NULL);
	/* Every shell at its prompt, needing you. */
	t0 = util_mono_us();
	while (util_mono_us() - t0 < (idle_after + 3000) * 1000)
		bench_loop_for(base, 100);
	for (i = 0; i < BENCH_SESSIONS; i++) {
		if (session_state(s[i]) != SESSION_NEEDS_YOU)
			fatalx("session %d is %s", i,
			    session_state_name(session_state(s[i])));
		lat[i] = o[i].needs_us - o[i].last_output_us;
	}
	qsort(lat, BENCH_SESSIONS, sizeof *lat, bench_cmp);
	printf("RESULT needs_you_after_last_output_ms median %.1f max %.1f "
	    "(idle_after %lld ms)\n", bench_ms(lat, BENCH_SESSIONS, false),
	    bench_ms(lat, BENCH_SESSIONS, true), (long long)idle_after);
	/* Idle: 4 sessions at their prompts, the loop left alone for 10 s. */
	cpu0 = bench_cpu_ms();
	for (i = 0; i < 10; i++) {
		cpu1 = bench_cpu_ms();
		bench_loop_for(base, 1000);
		if (getenv("BENCH_SLICES") != NULL)
			printf("second %d: %.1f ms\n", i, bench_cpu_ms() - cpu1);
	}
	cpu1 = bench_cpu_ms();
	printf("RESULT idle_cpu_ms_per_10s %.1f (%d sessions)\n", cpu1 - cpu0,
	    BENCH_SESSIONS);
	/* A jail of 200 processes, paused and resumed. */
	bs = bench_start(ctx, base, &big, "for i in $(seq 198); do "
	    "sleep 1000 & done; echo ready; read x");
	t0 = util_mono_us();
	while (session_state(bs) != SESSION_NEEDS_YOU &&
	    util_mono_us() - t0 < 30000000)
		bench_loop_for(base, 50);
	session_costs(bs, &c);
	printf("jail of %d processes\n", c.procs);
	for (i = 0; i < BENCH_PAUSES; i++) {
		if (session_pause(bs, true, &cause) == -1)
			fatalx("pause: %s", cause);
		t0 = util_mono_us();
		while (session_paused(bs) && util_mono_us() - t0 < 5000000) {
			event_base_loop(base, EVLOOP_ONCE);
			if (session_pause_took_us(bs) > 0)
				break;
		}
		fr[i] = session_pause_took_us(bs);
		if (session_pause(bs, false, &cause) == -1)
			fatalx("resume: %s", cause);
		bench_loop_for(base, 50);
	}
	qsort(fr, BENCH_PAUSES, sizeof *fr, bench_cmp);
	printf("RESULT pause_200_procs_ms median %.1f max %.1f\n",
	    bench_ms(fr, BENCH_PAUSES, false), bench_ms(fr, BENCH_PAUSES, true));
	session_free(bs);
	for (i = 0; i < BENCH_SESSIONS; i++)
		session_free(s[i]);
	bench_loop_for(base, 500);
	session_ctx_free(ctx);
	event_base_free(base);
	config_free(cf);
	return 0;
}
