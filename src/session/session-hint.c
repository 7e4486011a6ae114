/* A profile's hint that its agent waits for you: once output settles, its visible screen matches needs_you_screen. */
#include <event2/event.h>
#include <regex.h>
#include <stdlib.h>

#include "pane/pane.h"
#include "session-int.h"

/*
 * How long output must pause before the screen is read: long enough for a
 * redraw to finish, well under idle_after, so a known question shows at once.
 */
#define SESSION_HINT_SETTLE_MS 250
/* A matching screen whose program is not reading yet: looked at again this often, so many times. */
#define SESSION_HINT_AGAIN_MS 500
#define SESSION_HINT_TRIES 20

static void session_hint_timer(struct session *, int64_t ms);

/* The session's compiled screen pattern, or NULL (no profile, no hint, no pane). */
static const regex_t *
session_hint_re(struct session *s)
{
	const struct config_agent *a;

	if (s->pane == NULL || s->agent == NULL ||
	    (a = config_agent(s->cf, s->agent)) == NULL)
		return NULL;
	return a->needs_you_re;
}

/*
 * Whether the visible screen matches RE. The text is the agent's output:
 * it is only matched, never printed, run or kept.
 */
static bool
session_hint_screen(struct session *s, const regex_t *re)
{
	struct pane_grid *gd = pane_grid(s->pane);
	struct buf b;
	unsigned y;
	bool match;

	buf_init(&b);
	for (y = 0; y < pane_grid_sy(gd); y++) {
		pane_grid_row_text(gd, (int)y, &b);
		buf_addc(&b, '\n');
	}
	buf_addc(&b, '\0');
	match = regexec(re, b.data, 0, NULL, 0) == 0;
	buf_free(&b);
	return match;
}

static void
session_hint_cb(evutil_socket_t fd, short what, void *arg)
{
	struct session *s = arg;
	const regex_t *re = session_hint_re(s);

	(void)fd;
	(void)what;
	if (re == NULL || s->ended || s->starting || s->st_paused ||
	    s->st_idle || !session_hint_screen(s, re))
		return;
	/*
	 * The screen only adds to the evidence: no turn in flight, and it
	 * reads. A program busy a moment longer after drawing its question
	 * (Claude Code is) is looked at again while the question stays.
	 */
	if (s->st_model_inflight > 0 || !session_state_reading(s)) {
		log_debug("session %lld: its screen asks, but %s",
		    (long long)s->id, s->st_model_inflight > 0 ?
		    "a model request is in flight" : "it is not reading");
		if (s->st_hint_tries++ < SESSION_HINT_TRIES)
			session_hint_timer(s, SESSION_HINT_AGAIN_MS);
		return;
	}
	s->st_idle = true;
	session_state_update(s);
}

static void
session_hint_timer(struct session *s, int64_t ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	if (s->st_hint_ev == NULL)
		s->st_hint_ev = evtimer_new(s->ctx->base, session_hint_cb, s);
	evtimer_add(s->st_hint_ev, &tv);
}

/* Output or input: the screen is looked at once it has been still a moment. */
void
session_hint_arm(struct session *s)
{
	int64_t ms = s->cf->ui.idle_after;

	if (session_hint_re(s) == NULL)
		return;
	if (ms > SESSION_HINT_SETTLE_MS)
		ms = SESSION_HINT_SETTLE_MS;
	s->st_hint_tries = 0;
	session_hint_timer(s, ms);
}

void
session_hint_free(struct session *s)
{
	if (s->st_hint_ev != NULL)
		event_free(s->st_hint_ev);
	s->st_hint_ev = NULL;
}
