/* A session's pane: fed from its pty on the session side, with no front end, it holds what a later reader draws. */
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "core/core.h"
#include "lib/testlib.h"
#include "pane/pane.h"
#include "session/session.h"

struct run {
	struct event_base *base;
	bool exited;
	int status;
};

static void
run_exited(void *arg, struct session *s, int status)
{
	struct run *r = arg;

	r->exited = true;
	r->status = status;
	event_base_loopbreak(r->base);
}

static void
run_timeout(evutil_socket_t fd, short what, void *arg)
{
	event_base_loopbreak(arg);
}

/* Row Y of the pane's normal screen (history rows negative) as text. */
static const char *
row(struct pane *p, int y)
{
	static struct buf b;

	buf_reset(&b);
	buf_adds(&b, "");
	pane_grid_row_text(pane_grid(p), y, &b);
	return b.data;
}

/*
 * The program sets a title, prints 12 lines, asks for the terminal's
 * device attributes and prints the first bytes of the reply it got (the
 * session answered it, not a front end), then turns on mouse reporting and
 * bracketed paste and leaves the cursor after "last".
 */
static const char script[] =
    "printf '\\033]2;hello title\\007'; "
    "i=1; while [ $i -le 12 ]; do echo \"line $i\"; i=$((i + 1)); done; "
    "stty -icanon -echo min 1; printf '\\033[c'; "
    "head -c 3 | od -An -tx1 | tr -d ' \\n'; echo; "
    "printf '\\033[?1000h\\033[?2004hlast'";

static void
test_pane_without_front_end(void **state)
{
	char *const command[] = { "sh", "-c", (char *)script, NULL };
	struct session_opts o = { .kind = "dashboard", .on_unknown = -1,
	    .pty = true, .pane = true, .rows = 5, .cols = 20, .listen_fd = -1,
	    .command = command, .dir = test_proj };
	struct session_events ev = { .exited = run_exited };
	struct timeval tv = { 60, 0 };
	struct config *cf = config_default();
	struct session_ctx *ctx;
	struct session *s;
	struct pane *p;
	struct event *timer;
	struct run r = { 0 };
	char *cause = NULL;
	unsigned x, y;
	int i;

	r.base = event_base_new();
	assert_non_null(r.base);
	ctx = session_ctx_create(r.base, cf, NULL, &cause);
	if (ctx == NULL)
		fail_msg("session_ctx_create: %s", cause);
	s = session_start(ctx, &o, &ev, &r, &cause);
	if (s == NULL)
		fail_msg("session_start: %s", cause);
	timer = evtimer_new(r.base, run_timeout, r.base);
	evtimer_add(timer, &tv);
	while (!r.exited && event_base_loop(r.base, EVLOOP_ONCE) == 0 &&
	    evtimer_pending(timer, NULL))
		;
	assert_true(r.exited);
	assert_int_equal(r.status, 0);

	/* Nothing drew it, yet the session's pane holds screen and scrollback. */
	p = pane_ref(session_pane(s));
	assert_string_equal(row(p, 0), "line 10");
	assert_string_equal(row(p, 2), "line 12");
	assert_string_equal(row(p, 3), "1b5b3f");
	assert_string_equal(row(p, 4), "last");
	assert_int_equal(pane_grid_hsize(pane_grid(p)), 9);
	for (i = 1; i <= 9; i++) {
		char want[16];

		snprintf(want, sizeof want, "line %d", i);
		assert_string_equal(row(p, i - 10), want);
	}
	pane_cursor(p, &x, &y);
	assert_int_equal(x, 4);
	assert_int_equal(y, 4);
	assert_string_equal(pane_title(p), "hello title");
	assert_int_equal(pane_mouse_mode(p), PANE_MOUSE_CLICKS);

	/* A resize of the session resizes its pane too. */
	session_resize(s, 6, 30);
	assert_int_equal(pane_grid_sx(pane_grid(p)), 30);
	assert_int_equal(pane_grid_sy(pane_grid(p)), 6);

	/* The reader keeps the last screen after the session is gone. */
	session_free(s);
	assert_string_equal(pane_title(p), "hello title");
	pane_key(p, 'x', 0);     /* goes nowhere now */
	pane_free(p);

	event_free(timer);
	session_ctx_free(ctx);
	event_base_free(r.base);
	config_free(cf);
	free(cause);
}

/* Without opts.pane (agentmux run), the session keeps no terminal state. */
static void
test_no_pane_unless_asked(void **state)
{
	char *const command[] = { "true", NULL };
	struct session_opts o = { .kind = "run", .on_unknown = -1,
	    .pty = true, .rows = 5, .cols = 20, .listen_fd = -1,
	    .command = command, .dir = test_proj };
	struct session_events ev = { .exited = run_exited };
	struct config *cf = config_default();
	struct session_ctx *ctx;
	struct session *s;
	struct run r = { 0 };
	char *cause = NULL;

	r.base = event_base_new();
	ctx = session_ctx_create(r.base, cf, NULL, &cause);
	if (ctx == NULL)
		fail_msg("session_ctx_create: %s", cause);
	s = session_start(ctx, &o, &ev, &r, &cause);
	if (s == NULL)
		fail_msg("session_start: %s", cause);
	assert_null(session_pane(s));
	session_free(s);
	session_ctx_free(ctx);
	event_base_free(r.base);
	config_free(cf);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_pane_without_front_end,
		    test_proj_setup, test_proj_teardown),
		cmocka_unit_test_setup_teardown(test_no_pane_unless_asked,
		    test_proj_setup, test_proj_teardown),
	};

	return test_run_group(tests, NULL, NULL);
}
