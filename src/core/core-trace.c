/*
 * The loop trace (AGENTMUX_LOOP_TRACE=FILE, a debugging aid): which turns
 * of the main loop were long. Each named span (a start plan step, a child's
 * done callback, a helper thread's result) that held the loop longer than
 * AGENTMUX_LOOP_TRACE_MS (default 10) is appended to FILE with its length,
 * and a 5 ms ticker logs every gap between its turns over that bound, so a
 * long turn no span names still shows. Off (one branch per span) unless
 * the variable is set.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "core.h"

#define LOOP_TRACE_TICK_US 5000

static FILE *loop_trace_fp;
static int64_t loop_trace_min_us = 10000;
static int64_t loop_trace_last_us;
static int64_t loop_trace_t0_us;
static struct event *loop_trace_ev;

static void
loop_trace_tick(evutil_socket_t fd, short what, void *arg)
{
	int64_t now = util_mono_us(), gap = now - loop_trace_last_us;

	(void)fd;
	(void)what;
	(void)arg;
	if (gap - LOOP_TRACE_TICK_US > loop_trace_min_us)
		/* raw: the trace file, not a terminal; numbers only */
		fprintf(loop_trace_fp, "%10.3f gap %7.1f ms\n",
		    (double)(now - loop_trace_t0_us) / 1000,
		    (double)gap / 1000);
	loop_trace_last_us = now;
}

void
loop_trace_init(struct event_base *base)
{
	const char *path = getenv("AGENTMUX_LOOP_TRACE");
	const char *ms = getenv("AGENTMUX_LOOP_TRACE_MS");
	struct timeval tv = { 0, LOOP_TRACE_TICK_US };
	int fd;

	if (path == NULL || *path == '\0' || loop_trace_fp != NULL)
		return;
	if (ms != NULL && atoi(ms) > 0)
		loop_trace_min_us = (int64_t)atoi(ms) * 1000;
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW,
	    0600);
	if (fd == -1 || (loop_trace_fp = fdopen(fd, "a")) == NULL) {
		log_warn("AGENTMUX_LOOP_TRACE: cannot open %s; no loop trace",
		    path);
		if (fd != -1)
			close(fd);
		return;
	}
	setvbuf(loop_trace_fp, NULL, _IOLBF, 0);
	loop_trace_t0_us = loop_trace_last_us = util_mono_us();
	/* raw: the trace file, not a terminal; numbers only */
	fprintf(loop_trace_fp, "# pid %ld: loop turns over %lld ms\n",
	    (long)getpid(), (long long)(loop_trace_min_us / 1000));
	loop_trace_ev = event_new(base, -1, EV_PERSIST, loop_trace_tick, NULL);
	if (loop_trace_ev != NULL)
		event_add(loop_trace_ev, &tv);
}

int64_t
loop_trace_begin(void)
{
	return loop_trace_fp == NULL ? 0 : util_mono_us();
}

void
loop_trace_end(int64_t t0, const char *fmt, ...)
{
	int64_t now, d;
	struct buf line;
	va_list ap;
	char *name;

	if (loop_trace_fp == NULL || t0 == 0)
		return;
	now = util_mono_us();
	if ((d = now - t0) <= loop_trace_min_us)
		return;
	va_start(ap, fmt);
	xvasprintf(&name, fmt, ap);
	va_end(ap);
	/* A child's name may hold a project's path: one line, escaped. */
	buf_init(&line);
	quote_line_add(&line, name, strlen(name));
	buf_add(&line, "", 1);
	/* raw: the trace file, not a terminal; the name escaped just above */
	fprintf(loop_trace_fp, "%10.3f turn %7.1f ms %s\n",
	    (double)(now - loop_trace_t0_us) / 1000, (double)d / 1000,
	    line.data);
	buf_free(&line);
	free(name);
}

void
loop_trace_stop(void)
{
	if (loop_trace_ev != NULL) {
		event_free(loop_trace_ev);
		loop_trace_ev = NULL;
	}
	if (loop_trace_fp != NULL) {
		fclose(loop_trace_fp);
		loop_trace_fp = NULL;
	}
}
