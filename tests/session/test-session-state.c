/* A session's state: a shell at its prompt needs you, a command running works, typing works, its end is exited N; told as events and recorded. */
#include <sys/syscall.h>

#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "core/core.h"
#include "lib/testlib.h"
#include "session/session-int.h"
#include "session/session.h"
#include "store/store.h"

struct obs {
	int started;
	bool ok;
	int done;
	int changes;
	enum session_state last;
	char trail[512];             /* every state told, in order */
};

static void
obs_started(void *arg, struct session *s, bool ok, const char *cause)
{
	struct obs *o = arg;

	o->started++;
	o->ok = ok;
	if (!ok)
		print_message("start failed: %s\n", cause);
}

static void
obs_done(void *arg, struct session *s)
{
	struct obs *o = arg;

	o->done++;
}

static void
obs_state(void *arg, struct session *s, enum session_state st)
{
	struct obs *o = arg;
	size_t len = strlen(o->trail);

	assert_int_equal(session_state(s), st);
	o->changes++;
	o->last = st;
	snprintf(o->trail + len, sizeof o->trail - len, "%s%s", len > 0 ?
	    "," : "", session_state_name(st));
}

static const struct session_events obs_events = {
	.started = obs_started,
	.done = obs_done,
	.state = obs_state,
};

struct fixture {
	struct config *cf;
	struct event_base *base;
	struct session_ctx *ctx;
};

/* Opens with the config file TEXT. */
static void
fixture_open_with(struct fixture *f, const char *text)
{
	char *cause = NULL;
	char *path = xprintf("%s/agentmux/config", getenv("XDG_CONFIG_HOME"));

	memset(f, 0, sizeof *f);
	test_write_file(path, text);
	free(path);
	f->cf = config_load_or_cause(NULL, &cause);
	if (f->cf == NULL) {
		fail_msg("config: %s", cause);
		return;
	}
	f->base = event_base_new();
	assert_non_null(f->base);
	f->ctx = session_ctx_create(f->base, f->cf, NULL, &cause);
	if (f->ctx == NULL)
		fail_msg("session_ctx_create: %s", cause);
}

static void
fixture_open(struct fixture *f)
{
	fixture_open_with(f, "[ui]\nidle_after = 300\n");
	assert_int_equal(f->cf->ui.idle_after, 300);
}

static void
fixture_close(struct fixture *f)
{
	session_ctx_free(f->ctx);
	event_base_free(f->base);
	config_free(f->cf);
}

/* Runs the loop for MS milliseconds. */
static void
loop_for(struct fixture *f, int ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	event_base_loopexit(f->base, &tv);
	assert_int_equal(event_base_dispatch(f->base), 0);
}

/* Runs the loop until S is in state ST, at most 10 seconds; how long it took (ms). */
static int64_t
loop_until_state(struct fixture *f, struct session *s, enum session_state st)
{
	int64_t t0 = util_mono_us();

	while (session_state(s) != st && util_mono_us() - t0 < 10000000)
		loop_for(f, 20);
	if (session_state(s) != st)
		fail_msg("state %s, not %s", session_state_name(session_state(s)),
		    session_state_name(st));
	return (util_mono_us() - t0) / 1000;
}

static char *
recorded(struct fixture *f, struct session *s)
{
	struct store_session *ss;
	char buf[64];

	session_records_flush(f->ctx);
	ss = session_record_get(f->ctx, session_id(s));
	assert_non_null(ss);
	store_session_end_text(ss, buf, sizeof buf);
	store_session_free(ss);
	return xstrdup(buf);
}

static void
test_shell_states(void **state)
{
	char *const command[] = { "/bin/sh", NULL };
	struct session_opts so = { .kind = "run", .on_unknown = -1,
	    .pty = true, .rows = 24, .cols = 80, .listen_fd = -1,
	    .command = command };
	struct fixture f;
	struct obs o = { 0 };
	struct session *s;
	char *cause = NULL, *text, buf[64];
	int i;

	fixture_open(&f);
	s = session_start(f.ctx, &so, &obs_events, &o, &cause);
	if (s == NULL)
		fail_msg("session_start: %s", cause);
	assert_int_equal(session_state(s), SESSION_STARTING);
	while (o.started == 0)
		loop_for(&f, 20);
	assert_true(o.ok);

	/* At its prompt, reading its terminal: it needs you. */
	loop_until_state(&f, s, SESSION_NEEDS_YOU);
	assert_string_equal(session_state_text(s, buf, sizeof buf),
	    "needs you");
	text = recorded(&f, s);
	assert_string_equal(text, "needs you");
	free(text);

	/* Typing makes it work, and a command running stays working. */
	assert_int_equal(session_write(s, "sleep 2\n", 8), 0);
	assert_int_equal(session_state(s), SESSION_WORKING);
	for (i = 0; i < 6; i++) {
		loop_for(&f, 200);
		assert_int_equal(session_state(s), SESSION_WORKING);
	}
	text = recorded(&f, s);
	assert_string_equal(text, "working");
	free(text);

	/* Its prompt back, it needs you again, within idle_after + 1 s. */
	loop_until_state(&f, s, SESSION_NEEDS_YOU);

	assert_int_equal(session_write(s, "exit 4\n", 7), 0);
	while (o.done == 0)
		loop_for(&f, 20);
	assert_int_equal(session_state(s), SESSION_EXITED);
	assert_string_equal(session_state_text(s, buf, sizeof buf),
	    "exited 4");
	assert_int_equal(o.last, SESSION_EXITED);
	print_message("states: %s\n", o.trail);
	assert_non_null(strstr(o.trail, "working,needs you,working,needs you,"));
	text = recorded(&f, s);
	assert_string_equal(text, "exited 4");
	free(text);
	session_free(s);
	fixture_close(&f);
}

/* A program killed by a signal of its own failure crashed; one that exits does not. */
static void
test_crashed(void **state)
{
	char *const command[] = { "/bin/sh", "-c", "kill -SEGV $$", NULL };
	struct session_opts so = { .kind = "run", .on_unknown = -1,
	    .pty = true, .rows = 24, .cols = 80, .listen_fd = -1,
	    .command = command };
	struct fixture f;
	struct obs o = { 0 };
	struct session *s;
	char *cause = NULL, buf[64];

	fixture_open(&f);
	s = session_start(f.ctx, &so, &obs_events, &o, &cause);
	if (s == NULL)
		fail_msg("session_start: %s", cause);
	while (o.done == 0)
		loop_for(&f, 20);
	assert_int_equal(session_exit_status(s), 128 + 11);
	assert_int_equal(session_state(s), SESSION_CRASHED);
	assert_string_equal(session_state_text(s, buf, sizeof buf), "crashed");
	session_free(s);
	fixture_close(&f);
}

static long
counter(void)
{
	char *text = test_read_file("count");
	long v = text != NULL ? strtol(text, NULL, 10) : -1;

	free(text);
	return v;
}

/*
 * Paused, a loop writing a counter stops advancing (every process of the
 * jail frozen) and the state says so; resumed, it goes on from there; a
 * paused session closed by the user ends as a running one would.
 */
static void
test_pause_resume(void **state)
{
	char *const command[] = { "/bin/sh", "-c", "i=0; while :; do "
	    "i=$((i+1)); echo $i > count.new; mv count.new count; sleep 0.02; "
	    "done", NULL };
	struct session_opts so = { .kind = "run", .on_unknown = -1,
	    .pty = true, .rows = 24, .cols = 80, .listen_fd = -1,
	    .command = command };
	struct fixture f;
	struct obs o = { 0 };
	struct session *s;
	char *cause = NULL, buf[64], *text;
	long c1, c2;
	int64_t t0;

	fixture_open(&f);
	s = session_start(f.ctx, &so, &obs_events, &o, &cause);
	if (s == NULL)
		fail_msg("session_start: %s", cause);
	assert_int_equal(session_pause(s, true, &cause), -1);
	assert_non_null(strstr(cause, "not running"));
	free(cause);
	cause = NULL;
	while (o.started == 0)
		loop_for(&f, 20);
	t0 = util_mono_us();
	while (counter() < 5 && util_mono_us() - t0 < 10000000)
		loop_for(&f, 20);
	assert_true(counter() >= 5);

	if (session_pause(s, true, &cause) == -1)
		fail_msg("session_pause: %s", cause);
	assert_true(session_paused(s));
	assert_int_equal(session_state(s), SESSION_PAUSED);
	assert_int_equal(o.last, SESSION_PAUSED);
	assert_string_equal(session_state_text(s, buf, sizeof buf), "paused");
	while (session_pause_took_us(s) == 0 && util_mono_us() - t0 < 20000000)
		loop_for(&f, 1);
	print_message("frozen in %lld us\n",
	    (long long)session_pause_took_us(s));
	assert_true(session_pause_took_us(s) > 0);
	assert_true(session_pause_took_us(s) < 1000000);
	c1 = counter();
	loop_for(&f, 600);
	c2 = counter();
	assert_int_equal(c1, c2);
	text = recorded(&f, s);
	assert_string_equal(text, "paused");
	free(text);

	if (session_pause(s, false, &cause) == -1)
		fail_msg("session_pause: %s", cause);
	assert_false(session_paused(s));
	assert_int_not_equal(session_state(s), SESSION_PAUSED);
	t0 = util_mono_us();
	while (counter() <= c2 + 3 && util_mono_us() - t0 < 5000000)
		loop_for(&f, 20);
	assert_true(counter() > c2 + 3);

	/* Closed while paused: it is resumed to get its hang-up, and ends. */
	assert_int_equal(session_pause(s, true, &cause), 0);
	session_close(s);
	while (o.done == 0)
		loop_for(&f, 20);
	assert_int_equal(session_state(s), SESSION_EXITED);
	assert_string_equal(session_state_text(s, buf, sizeof buf), "closed");
	session_free(s);
	fixture_close(&f);
}

/* The wall_clock limit stops while the session is paused and goes on with what was left. */
static void
test_pause_wall_clock(void **state)
{
	char *const command[] = { "/bin/sh", "-c", "echo up; read x", NULL };
	struct session_opts so = { .kind = "run", .on_unknown = -1,
	    .pty = true, .rows = 24, .cols = 80, .listen_fd = -1,
	    .command = command, .agent = "walled" };
	char *path = xprintf("%s/agentmux/config", getenv("XDG_CONFIG_HOME"));
	struct fixture f;
	struct obs o = { 0 };
	struct session *s;
	char *cause = NULL;
	int64_t t0, ran, after;

	fixture_open(&f);
	config_free(f.cf);
	session_ctx_free(f.ctx);
	test_write_file(path, "[ui]\nidle_after = 300\n[agent walled]\n"
	    "command = sh\nwall_clock = 4\n");
	free(path);
	if ((f.cf = config_load_or_cause(NULL, &cause)) == NULL ||
	    (f.ctx = session_ctx_create(f.base, f.cf, NULL, &cause)) == NULL)
		fail_msg("config: %s", cause);
	t0 = util_mono_us();
	s = session_start(f.ctx, &so, &obs_events, &o, &cause);
	if (s == NULL)
		fail_msg("session_start: %s", cause);
	loop_until_state(&f, s, SESSION_NEEDS_YOU);
	ran = util_mono_us() - t0;
	if (session_pause(s, true, &cause) == -1)
		fail_msg("session_pause: %s", cause);
	/* Paused for longer than the whole limit: nothing ends it. */
	loop_for(&f, 4500);
	assert_int_equal(o.done, 0);
	assert_int_equal(session_state(s), SESSION_PAUSED);
	if (session_pause(s, false, &cause) == -1)
		fail_msg("session_pause: %s", cause);
	t0 = util_mono_us();
	while (o.done == 0 && util_mono_us() - t0 < 10000000)
		loop_for(&f, 20);
	after = util_mono_us() - t0;
	print_message("ran %lld ms before the pause, ended %lld ms after "
	    "the resume\n", (long long)ran / 1000, (long long)after / 1000);
	assert_int_equal(o.done, 1);
	/* What was left of the 4 s, no less (and the kill's grace at most). */
	assert_true(ran < 4000000);
	assert_true(after >= 4000000 - ran - 100000);
	assert_true(after < 4000000 - ran + 4000000);
	session_free(s);
	fixture_close(&f);
}

/* What a session costs: its processes' CPU, memory and number, from its jail's cgroups (root here), else /proc (an ordinary user). */
static void
test_costs(void **state)
{
	char *const command[] = { "/bin/sh", "-c", "i=0; while [ $i -lt "
	    "300000 ]; do i=$((i+1)); done; sleep 30 & sleep 30 & echo spun; "
	    "read x", NULL };
	struct session_opts so = { .kind = "run", .on_unknown = -1,
	    .pty = true, .rows = 24, .cols = 80, .listen_fd = -1,
	    .command = command };
	struct session_costs c, p;
	struct fixture f;
	struct obs o = { 0 };
	struct session *s;
	char *cause = NULL, *how = jail_probe_limits();

	fixture_open(&f);
	s = session_start(f.ctx, &so, &obs_events, &o, &cause);
	if (s == NULL)
		fail_msg("session_start: %s", cause);
	/* Spun, and waiting at its read with two sleeps beside it. */
	loop_until_state(&f, s, SESSION_NEEDS_YOU);
	session_costs(s, &c);
	print_message("cpu %.2f s (share %.2f), memory %lld, %d processes, "
	    "from %s (limits: %s)\n", c.cpu_sec, c.cpu_share,
	    (long long)c.memory, c.procs, c.from, how);
	/* From the jail's cgroups wherever it has them, else from /proc. */
	assert_non_null(c.from);
	if (strncmp(how, "cgroup", 6) == 0)
		assert_true(strncmp(c.from, "cgroup", 6) == 0);
	else
		assert_string_equal(c.from, "/proc");
	free(how);
	/* Its init, the shell and the two sleeps. */
	assert_true(c.procs >= 4);
	assert_true(c.cpu_sec >= 0.05);
	assert_true(c.cpu_share > 0.0);
	assert_true(c.memory > 100 * 1024);
	assert_true(c.run_ms > 0);
	assert_int_equal(c.allowed + c.denied, 0);
	/* /proc finds the same processes as the cgroup (or itself). */
	memset(&p, 0, sizeof p);
	session_cost_procs(s, &p);
	print_message("/proc: cpu %.2f s, memory %lld, %d processes\n",
	    p.cpu_sec, (long long)p.memory, p.procs);
	assert_int_equal(p.procs, c.procs);
	assert_true(p.cpu_sec >= 0.05);
	session_close(s);
	while (o.done == 0)
		loop_for(&f, 20);
	session_free(s);
	fixture_close(&f);
}

/*
 * The sessions' tick slows down while nothing happens (2 s, 4, 8, ...),
 * is never later than a disk look riding on it, and comes back to 2 s at
 * the first output.
 */
static void
test_tick_backoff(void **state)
{
	char *const command[] = { "/bin/sh", NULL };
	struct session_opts so = { .kind = "run", .on_unknown = -1,
	    .pty = true, .rows = 24, .cols = 80, .listen_fd = -1,
	    .command = command };
	struct fixture f;
	struct obs o = { 0 };
	struct session *s;
	char *cause = NULL;
	int64_t t0, due;

	fixture_open(&f);
	/* The default disk budget (20 GiB) has its look ride on the tick. */
	assert_true(f.cf->limits.disk_write > 0);
	s = session_start(f.ctx, &so, &obs_events, &o, &cause);
	if (s == NULL)
		fail_msg("session_start: %s", cause);
	loop_until_state(&f, s, SESSION_NEEDS_YOU);
	assert_int_equal(session_tick_period_ms(f.ctx), 2000);
	t0 = util_mono_us();
	while (session_tick_period_ms(f.ctx) < 8000 &&
	    util_mono_us() - t0 < 40000000) {
		loop_for(&f, 50);
		due = session_disk_shared_due(s);
		/* Rounded to the loop's milliseconds: 20 ms early is on time. */
		if (due != 0 && f.ctx->tick_at > due + 20000)
			fail_msg("the tick comes %lld ms after the disk look "
			    "is due", (long long)(f.ctx->tick_at - due) / 1000);
	}
	print_message("idle: the tick's period %lld ms\n",
	    (long long)session_tick_period_ms(f.ctx));
	assert_true(session_tick_period_ms(f.ctx) >= 8000);
	assert_int_equal(session_state(s), SESSION_NEEDS_YOU);

	/* Output (the shell's prompt again): back to 2 s at once. */
	assert_int_equal(session_write(s, "\n", 1), 0);
	loop_until_state(&f, s, SESSION_NEEDS_YOU);
	assert_int_equal(session_tick_period_ms(f.ctx), 2000);
	assert_true(f.ctx->tick_at - util_mono_us() <= 2000000);

	session_close(s);
	while (o.done == 0)
		loop_for(&f, 20);
	session_free(s);
	fixture_close(&f);
}

/* Asserts S stays in state ST for MS milliseconds. */
static void
stays(struct fixture *f, struct session *s, enum session_state st, int ms)
{
	int i;

	for (i = 0; i < ms / 100; i++) {
		loop_for(f, 100);
		if (session_state(s) != st)
			fail_msg("after %d ms: %s, not %s", i * 100,
			    session_state_name(session_state(s)),
			    session_state_name(st));
	}
}

/*
 * Runs SCRIPT (it prints a plain line, reads, prints a question, reads
 * again, then sleeps) as agent AGENT, with idle_after far off: reading under
 * the plain screen it works; under the question, reading, it needs you as
 * soon as its output settles; answered, and asleep under the same screen, it
 * works (the screen alone marks nothing).
 */
static void
screen_hint_run(const char *conf, const char *agent, const char *script)
{
	char *const command[] = { "/bin/sh", "-c", (char *)script, NULL };
	struct session_opts so = { .kind = "run", .on_unknown = -1,
	    .pty = true, .pane = true, .rows = 24, .cols = 80,
	    .listen_fd = -1, .agent = agent, .command = command };
	struct fixture f;
	struct obs o = { 0 };
	struct session *s;
	char *cause = NULL;
	int64_t ms;

	fixture_open_with(&f, conf);
	s = session_start(f.ctx, &so, &obs_events, &o, &cause);
	if (s == NULL)
		fail_msg("session_start: %s", cause);
	while (o.started == 0)
		loop_for(&f, 20);
	assert_true(o.ok);

	/* Reading under a plain screen: idle_after (30 s) is still to come. */
	stays(&f, s, SESSION_WORKING, 1500);
	/* The question on its screen, reading: needs you at once. */
	assert_int_equal(session_write(s, "\n", 1), 0);
	ms = loop_until_state(&f, s, SESSION_NEEDS_YOU);
	print_message("%s: needs you %lld ms after the question\n", agent,
	    (long long)ms);
	assert_true(ms < 2000);
	/* Answered: working, and asleep under the same screen it stays so. */
	assert_int_equal(session_write(s, "y\n", 2), 0);
	assert_int_equal(session_state(s), SESSION_WORKING);
	stays(&f, s, SESSION_WORKING, 1500);
	assert_non_null(strstr(o.trail, "needs you,working"));

	session_close(s);
	while (o.done == 0)
		loop_for(&f, 20);
	session_free(s);
	fixture_close(&f);
}

/* A profile's needs_you_screen, given in the user's config. */
static void
test_screen_hint(void **state)
{
	(void)state;
	screen_hint_run("[ui]\nidle_after = 30000\n[agent hinted]\n"
	    "command = sh\nneeds_you_screen = Do you want to .*\\?.*1\\. Yes\n",
	    "hinted", "echo plain; read a; "
	    "printf 'Run ls?\\n Do you want to proceed?\\n > 1. Yes\\n"
	    "   2. No\\n'; read b; sleep 30");
}

/*
 * Codex's approval question (a screen of codex 0.171.0, recorded through
 * tmux; a run of blank rows left out), matched by the shipped codex profile.
 */
static const char test_codex_screen[] =
    "\n"
    "  >_ OpenAI Codex (v0.171.0)\n"
    "     /tmp/amx-states.ctzYfj/codex\n"
    "\n"
    "\n"
    "\xe2\x80\xba agentmux-run: touch amx-tool-ran\n"
    "\n"
    "\n"
    "\xe2\x80\xa2 Running touch amx-tool-ran\n"
    "\n"
    "\n"
    "  Would you like to run the following command?\n"
    "\n"
    "  Environment: local\n"
    "\n"
    "  Reason: agentmux test: run the command asked for\n"
    "\n"
    "  $ touch amx-tool-ran\n"
    "\n"
    "\n"
    "\xe2\x80\xba 1. Yes, proceed (y)\n"
    "  2. Yes, and don't ask again for commands that start with "
    "`touch amx-tool-ran` (p)\n"
    "  3. No, and tell Codex what to do differently (esc)\n"
    "\n"
    "  Press enter to confirm or esc to cancel\n";

static void
test_screen_hint_codex(void **state)
{
	char *path = xprintf("%s/codex-screen", test_proj);

	(void)state;
	test_write_file(path, test_codex_screen);
	free(path);
	screen_hint_run("[ui]\nidle_after = 30000\n", "codex",
	    "echo plain; read a; cat codex-screen; read b; sleep 30");
}

/*
 * Runs SCRIPT (it reads a line, writes what it writes, reads again, then
 * sleeps) as an agent whose needs_you_file is FILE, with idle_after far
 * off: before the first line it works; after it, it needs you at once if
 * WANT, else it stays working; answered, it works again while it sleeps.
 */
static void
file_hint_run(const char *file, const char *script, bool want)
{
	char *const command[] = { "/bin/sh", "-c", (char *)script, NULL };
	struct session_opts so = { .kind = "run", .on_unknown = -1,
	    .pty = true, .pane = true, .rows = 24, .cols = 80,
	    .listen_fd = -1, .agent = "filed", .command = command };
	struct fixture f;
	struct obs o = { 0 };
	struct session *s;
	char *cause = NULL, *conf;
	int64_t ms;

	conf = xprintf("[ui]\nidle_after = 30000\n[agent filed]\n"
	    "command = sh\nneeds_you_file = %s\n", file);
	fixture_open_with(&f, conf);
	free(conf);
	s = session_start(f.ctx, &so, &obs_events, &o, &cause);
	if (s == NULL)
		fail_msg("session_start: %s", cause);
	while (o.started == 0)
		loop_for(&f, 20);
	assert_true(o.ok);

	/* Reading, nothing shown, nothing written: starting. */
	stays(&f, s, SESSION_STARTING, 1500);
	assert_int_equal(session_write(s, "\n", 1), 0);
	if (!want)
		stays(&f, s, SESSION_STARTING, 2000);
	else {
		ms = loop_until_state(&f, s, SESSION_NEEDS_YOU);
		print_message("needs you %lld ms after %s\n", (long long)ms,
		    file);
		assert_true(ms < 2000);
		/* Answered: working, and it stays so while it sleeps. */
		assert_int_equal(session_write(s, "y\n", 2), 0);
		assert_int_equal(session_state(s), SESSION_WORKING);
		stays(&f, s, SESSION_WORKING, 1500);
		assert_non_null(strstr(o.trail, "needs you,working"));
	}
	session_close(s);
	while (o.done == 0)
		loop_for(&f, 20);
	session_free(s);
	fixture_close(&f);
}

/*
 * A profile's needs_you_file: written in a dir the agent makes after the
 * start (in the project, then in the jail's HOME), the session needs you
 * at once; one written through a symlink the agent made (to another dir
 * of the project) is never seen, since the host does not follow it.
 */
static void
test_file_hint(void **state)
{
	file_hint_run(".amx/state/waiting", "read a; mkdir -p .amx/state; "
	    "echo waiting >.amx/state/waiting; read b; sleep 30", true);
	file_hint_run("~/.agent/waiting", "read a; mkdir -p ~/.agent; "
	    ": >~/.agent/waiting; read b; sleep 30", true);
	file_hint_run(".lnk/waiting", "read a; mkdir -p real; "
	    "ln -s \"$PWD/real\" .lnk; : >.lnk/waiting; read b; sleep 30",
	    false);
}

/*
 * Quiet while it works (no output), then reading without a word: the look
 * at idle_after found it busy, a later one finds it waiting (OpenCode's
 * prompt stayed "working" when nothing looked again).
 */
static void
test_quiet_then_reading(void **state)
{
	char *const command[] = { "/bin/sh", "-c", "echo busy; sleep 1; "
	    "read x", NULL };
	struct session_opts so = { .kind = "run", .on_unknown = -1,
	    .pty = true, .rows = 24, .cols = 80, .listen_fd = -1,
	    .command = command };
	struct fixture f;
	struct obs o = { 0 };
	struct session *s;
	char *cause = NULL;
	int64_t ms;

	fixture_open(&f);
	s = session_start(f.ctx, &so, &obs_events, &o, &cause);
	if (s == NULL)
		fail_msg("session_start: %s", cause);
	while (o.started == 0)
		loop_for(&f, 20);
	ms = loop_until_state(&f, s, SESSION_NEEDS_YOU);
	print_message("needs you %lld ms after the start\n", (long long)ms);
	assert_true(ms >= 900);
	session_close(s);
	while (o.done == 0)
		loop_for(&f, 20);
	session_free(s);
	fixture_close(&f);
}

/*
 * SCRIPT sets up its terminal (alternate screen, cleared, a title: nothing
 * visible), waits a while without a word, then draws a prompt and reads:
 * it is starting, not needing you, until the prompt shows, even quiet past
 * idle_after and asleep in a read of its terminal (OpenCode sat blank in
 * its event loop, and was said to need you); then it needs you.
 */
static void
starting_run(const char *script)
{
	char *const command[] = { "/bin/sh", "-c", (char *)script, NULL };
	struct session_opts so = { .kind = "run", .on_unknown = -1,
	    .pty = true, .rows = 24, .cols = 80, .listen_fd = -1,
	    .command = command };
	struct fixture f;
	struct obs o = { 0 };
	struct session *s;
	char *cause = NULL, *text;

	fixture_open(&f);
	s = session_start(f.ctx, &so, &obs_events, &o, &cause);
	if (s == NULL)
		fail_msg("session_start: %s", cause);
	while (o.started == 0)
		loop_for(&f, 20);
	assert_true(o.ok);
	/* idle_after is 300 ms: five times that, blank, it still starts. */
	stays(&f, s, SESSION_STARTING, 1500);
	text = recorded(&f, s);
	assert_string_equal(text, "starting");
	free(text);
	/* Typed at (an Enter echoes nothing visible): it draws its prompt. */
	assert_int_equal(session_write(s, "\n", 1), 0);
	loop_until_state(&f, s, SESSION_NEEDS_YOU);
	print_message("states: %s\n", o.trail);
	assert_string_equal(o.trail, "working,needs you");
	session_close(s);
	while (o.done == 0)
		loop_for(&f, 20);
	session_free(s);
	fixture_close(&f);
}

static void
test_starting_blank(void **state)
{
	(void)state;
	starting_run("printf '\\033[?1049h\\033[H\\033[2J\\033]0;agent\\007"
	    "   \\r\\n'; read a; printf 'ready> '; read b; sleep 30");
}

/* What shows: text outside escape sequences, in chunks cut anywhere. */
static void
test_visible(void **state)
{
	static const struct {
		const char *out;
		bool shown;
	} t[] = {
		{ "", false },
		{ "\r\n \t\b", false },
		{ "\033[?1049h\033[2J\033[H\033[38;5;12m", false },
		{ "\033]0;title here\007\033]11;?\033\\", false },
		{ "\033P+q544e\033\\\033_Gi=1;AAAA\033\\", false },
		{ "\033(B\0337\0338", false },
		{ "\033[2Jx", true },
		{ "\342\226\204", true },
		{ "\033]0;t\007>", true },
	};
	const char *split = "\033]0;a title\007\033[1";
	uint8_t esc;
	size_t i;

	(void)state;
	for (i = 0; i < nitems(t); i++) {
		esc = 0;
		if (session_state_visible(&esc, (const unsigned char *)t[i].out,
		    strlen(t[i].out)) != t[i].shown)
			fail_msg("case %zu: shown should be %d", i,
			    (int)t[i].shown);
	}
	/* Cut inside a title and inside a CSI: the rest is still inside. */
	esc = 0;
	for (i = 0; split[i] != '\0'; i++)
		assert_false(session_state_visible(&esc,
		    (const unsigned char *)split + i, 1));
	assert_false(session_state_visible(&esc,
	    (const unsigned char *)"0;5H", 4));
	assert_true(session_state_visible(&esc, (const unsigned char *)"$",
	    1));
}

/* What /proc/PID/syscall says of a process waiting for input. */
static void
test_syscall_reads(void **state)
{
	char text[128];

	snprintf(text, sizeof text, "%d 0x0 0x7ffd1 0x1 0x0 0x0 0x0 0x7ff "
	    "0x7f", SYS_read);
	assert_true(session_state_syscall_reads(text));
	snprintf(text, sizeof text, "%d 0x3 0x7ffd1 0x1 0x0 0x0 0x0 0x7ff "
	    "0x7f", SYS_read);
	assert_false(session_state_syscall_reads(text));
	snprintf(text, sizeof text, "%d 0x4 0x7ffd1 0x1 0x0 0x0 0x0 0x7ff "
	    "0x7f", SYS_epoll_pwait);
	assert_true(session_state_syscall_reads(text));
	snprintf(text, sizeof text, "%d 0x0 0x0 0x7ffd1 0x0 0x0 0x0 0x7ff "
	    "0x7f", SYS_clock_nanosleep);
	assert_false(session_state_syscall_reads(text));
	assert_false(session_state_syscall_reads("running"));
	assert_false(session_state_syscall_reads("-1 0x7ff 0x7f"));
}

/* Asleep in what cannot be read (/proc/PID/syscall and wchan refused): working, not needs you. */
static void
test_proc_unreadable(void **state)
{
	const char *sleeping = "42 (sh) S 1 42 42 34816 42 4194560";
	char sc[128];

	snprintf(sc, sizeof sc, "%d 0x0 0x7ffd1 0x1 0x0 0x0 0x0 0x7ff 0x7f",
	    SYS_read);
	assert_true(session_state_proc_reads(sleeping, sc, NULL));
	assert_true(session_state_proc_reads(sleeping, NULL, "n_tty_read"));
	assert_false(session_state_proc_reads(sleeping, NULL,
	    "hrtimer_nanosleep"));
	assert_false(session_state_proc_reads("42 (sh) R 1 42", sc, NULL));
	assert_false(session_state_proc_reads(NULL, sc, "n_tty_read"));
	/* Neither readable, or wchan hidden as "0": no evidence it waits. */
	assert_false(session_state_proc_reads(sleeping, NULL, NULL));
	assert_false(session_state_proc_reads(sleeping, NULL, "0"));
	assert_false(session_state_proc_reads(sleeping, "running", NULL));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_syscall_reads),
		cmocka_unit_test(test_proc_unreadable),
		cmocka_unit_test(test_visible),
		cmocka_unit_test_setup_teardown(test_starting_blank,
		    test_proj_setup, test_proj_teardown),
		cmocka_unit_test_setup_teardown(test_shell_states,
		    test_proj_setup, test_proj_teardown),
		cmocka_unit_test_setup_teardown(test_crashed,
		    test_proj_setup, test_proj_teardown),
		cmocka_unit_test_setup_teardown(test_pause_resume,
		    test_proj_setup, test_proj_teardown),
		cmocka_unit_test_setup_teardown(test_quiet_then_reading,
		    test_proj_setup, test_proj_teardown),
		cmocka_unit_test_setup_teardown(test_screen_hint,
		    test_proj_setup, test_proj_teardown),
		cmocka_unit_test_setup_teardown(test_screen_hint_codex,
		    test_proj_setup, test_proj_teardown),
		cmocka_unit_test_setup_teardown(test_file_hint,
		    test_proj_setup, test_proj_teardown),
		cmocka_unit_test_setup_teardown(test_pause_wall_clock,
		    test_proj_setup, test_proj_teardown),
		cmocka_unit_test_setup_teardown(test_costs,
		    test_proj_setup, test_proj_teardown),
		cmocka_unit_test_setup_teardown(test_tick_backoff,
		    test_proj_setup, test_proj_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
