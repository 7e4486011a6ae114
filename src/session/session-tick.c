/*
 * One slow tick for what every session looks at on a clock: the host's
 * unix sockets (read once for all of them) and the disk watch of a session
 * far from its limits. An idle server wakes once a tick, not once per
 * session per look, and not at all once nothing needs the tick. While no
 * session shows any activity (pane output or input, a proxy request) the
 * tick slows down, 2 s, 4, 8, 16, up to 30 s; the first activity brings it
 * back to 2 s. A disk look due earlier than the slowed tick brings the
 * tick forward to when it is due, so it is never later than it was.
 */
#include <event2/event.h>

#include "session-int.h"

/* The tick's period with activity: how soon a host socket appearing in a project is told. */
#define SESSION_TICK_MS 2000
/* The longest it gets while every session is idle. */
#define SESSION_TICK_IDLE_MAX_MS 30000

/* Arms the tick to run MS from now, or sooner if already so armed. */
static void
session_tick_arm(struct session_ctx *ctx, int64_t ms)
{
	int64_t at;
	struct timeval tv;

	if (ms < 0)
		ms = 0;
	at = util_mono_us() + ms * 1000;
	if (evtimer_pending(ctx->tick_ev, NULL) && ctx->tick_at <= at)
		return;
	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	ctx->tick_at = at;
	evtimer_add(ctx->tick_ev, &tv);
}

/* The next period: longer after a tick that saw no activity, the first one else. */
static int64_t
session_tick_period(struct session_ctx *ctx)
{
	if (ctx->tick_active || ctx->tick_ms < SESSION_TICK_MS)
		ctx->tick_ms = SESSION_TICK_MS;
	else if (ctx->tick_ms < SESSION_TICK_IDLE_MAX_MS / 2)
		ctx->tick_ms *= 2;
	else
		ctx->tick_ms = SESSION_TICK_IDLE_MAX_MS;
	ctx->tick_active = false;
	return ctx->tick_ms;
}

static void
session_tick_cb(evutil_socket_t fd, short what, void *arg)
{
	struct session_ctx *ctx = arg;
	struct session *s, *next;
	struct strv paths, dirs;
	bool wanted = false;
	int64_t ms, now, due;

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
		return;
	ms = session_tick_period(ctx);
	now = util_mono_us();
	for (s = ctx->sessions; s != NULL; s = s->next) {
		if ((due = session_disk_shared_due(s)) != 0 &&
		    (due - now) / 1000 < ms)
			ms = (due - now + 999) / 1000;
	}
	session_tick_arm(ctx, ms);
}

static void
session_tick_new(struct session_ctx *ctx)
{
	if (ctx->tick_ev == NULL &&
	    (ctx->tick_ev = event_new(ctx->base, -1, 0, session_tick_cb,
	    ctx)) == NULL)
		fatalx("cannot create the sessions' tick");
}

/* Something of a session needs the tick: it runs (again) if it was stopped. */
void
session_tick_want(struct session_ctx *ctx)
{
	session_tick_new(ctx);
	ctx->tick_wanted = true;
	ctx->tick_ms = SESSION_TICK_MS;
	session_tick_arm(ctx, SESSION_TICK_MS);
}

/* A look is due at AT (monotonic us): the tick comes then at the latest. */
void
session_tick_due(struct session_ctx *ctx, int64_t at)
{
	session_tick_new(ctx);
	ctx->tick_wanted = true;
	session_tick_arm(ctx, (at - util_mono_us() + 999) / 1000);
}

/*
 * A session did something (output, input, a request): a slowed tick comes
 * back to its first period. Cheap, as it is called for every output.
 */
void
session_tick_activity(struct session_ctx *ctx)
{
	ctx->tick_active = true;
	if (ctx->tick_ev == NULL || ctx->tick_ms <= SESSION_TICK_MS ||
	    !evtimer_pending(ctx->tick_ev, NULL))
		return;
	ctx->tick_ms = SESSION_TICK_MS;
	session_tick_arm(ctx, SESSION_TICK_MS);
}

/* The tick's period at its fastest: a look due later than this rides on it. */
int64_t
session_tick_ms(void)
{
	return SESSION_TICK_MS;
}

/* The tick's period now (tests, and the log). */
int64_t
session_tick_period_ms(struct session_ctx *ctx)
{
	return ctx->tick_ev != NULL && evtimer_pending(ctx->tick_ev, NULL) ?
	    ctx->tick_ms : 0;
}

void
session_tick_free(struct session_ctx *ctx)
{
	if (ctx->tick_ev != NULL)
		event_free(ctx->tick_ev);
	ctx->tick_ev = NULL;
}
