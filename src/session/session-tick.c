/*
 * One slow tick for what every session looks at on a clock: the host's
 * unix sockets (read once for all of them) and the disk watch of a session
 * far from its limits. An idle server wakes once a tick, not once per
 * session per look, and not at all once nothing needs the tick.
 */
#include <event2/event.h>

#include "session-int.h"

/* The tick's period: how soon a host socket appearing in a project is told. */
#define SESSION_TICK_MS 2000

static void
session_tick_cb(evutil_socket_t fd, short what, void *arg)
{
	struct session_ctx *ctx = arg;
	struct session *s, *next;
	struct strv paths, dirs;
	bool wanted = false;

	(void)fd;
	(void)what;
	ctx->tick_wanted = false;
	strv_init(&paths);
	strv_init(&dirs);
	for (s = ctx->sessions; s != NULL; s = s->next) {
		if (s->guard_sock_on) {
			jail_host_sockets(&paths, &dirs);
			break;
		}
	}
	/* A look may end its session (a disk limit with nobody to ask): walk with NEXT. */
	for (s = ctx->sessions; s != NULL; s = next) {
		next = s->next;
		if (session_guard_tick(s, &paths, &dirs))
			wanted = true;
		if (session_disk_tick_shared(s))
			wanted = true;
	}
	strv_free(&dirs);
	strv_free(&paths);
	/* Wanted meanwhile (a session started by a look's notice): it goes on. */
	if (!wanted && !ctx->tick_wanted)
		event_del(ctx->tick_ev);
}

/* Something of a session needs the tick: it runs (again) if it was stopped. */
void
session_tick_want(struct session_ctx *ctx)
{
	struct timeval tv = { SESSION_TICK_MS / 1000,
	    (SESSION_TICK_MS % 1000) * 1000 };

	if (ctx->tick_ev == NULL &&
	    (ctx->tick_ev = event_new(ctx->base, -1, EV_PERSIST,
	    session_tick_cb, ctx)) == NULL)
		fatalx("cannot create the sessions' tick");
	ctx->tick_wanted = true;
	if (!evtimer_pending(ctx->tick_ev, NULL))
		evtimer_add(ctx->tick_ev, &tv);
}

/* The longest a look riding on the tick is late. */
int64_t
session_tick_ms(void)
{
	return SESSION_TICK_MS;
}

void
session_tick_free(struct session_ctx *ctx)
{
	if (ctx->tick_ev != NULL)
		event_free(ctx->tick_ev);
	ctx->tick_ev = NULL;
}
