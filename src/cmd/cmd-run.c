/* agentmux run: one command jailed in this terminal (or fed through pipes), exiting with its status. */
#include <sys/ioctl.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include <event2/event.h>

#include "cli.h"
#include "core/core.h"
#include "session/session.h"

/* Input read at once, and how much may wait for the command before we stop reading. */
#define RUN_CHUNK (64 * 1024)
#define RUN_PENDING_MAX (1024 * 1024)

struct run {
	struct event_base *base;
	struct session *s;
	bool tty;                 /* relaying this terminal, in raw mode */
	bool pollable;            /* stdin can be watched by the loop */
	bool stdin_done;
	bool exited;
	bool done;          /* and its end is over (history, end snapshot) */
	int status;
	char *start_failed;       /* why the command did not start */
	struct event *in_ev;
	struct event *feed_ev;
	struct event *winch_ev;
	struct event *cont_ev;
	struct event *sig_ev[3];
};

/* The terminal as we found it, put back on every way out. */
static struct termios run_saved;
static bool run_saved_ok;

static void
run_restore(void)
{
	if (run_saved_ok)
		tcsetattr(STDIN_FILENO, TCSADRAIN, &run_saved);
}

static void
run_raw(void)
{
	struct termios t;

	if (!run_saved_ok) {
		if (tcgetattr(STDIN_FILENO, &run_saved) == -1)
			return;
		run_saved_ok = true;
		atexit(run_restore);
	}
	t = run_saved;
	cfmakeraw(&t);
	tcsetattr(STDIN_FILENO, TCSADRAIN, &t);
}

static void
run_output(void *arg, struct session *s, int stream, const char *data,
    size_t len)
{
	/*
	 * raw: the jailed command's own output, as ssh passes a remote
	 * one's. A reader that went away (EPIPE) must not stop the command.
	 */
	util_write_all(stream == 2 ? STDERR_FILENO : STDOUT_FILENO, data, len);
}

/*
 * What the user must hear while the command runs (an exfiltration attempt,
 * a planted git file, a limit reached): warnings and alerts on stderr, on
 * a line of their own even in raw mode.
 */
static void
run_notice(void *arg, struct session *s, const char *level,
    const char *message)
{
	struct run *r = arg;
	const char *nc = getenv("NO_COLOR");
	bool red = strcmp(level, "alert") == 0 && isatty(STDERR_FILENO) &&
	    (nc == NULL || *nc == '\0');

	if (strcmp(level, "info") == 0)
		return;
	/* Alerts (tampering, files the user's tools run) in red. */
	out_puts(stderr, r->tty ? "\r\n" : "");
	if (red)
		out_color(stderr, "1;31");
	out_printf(stderr, "agentmux: %s", message);
	if (red)
		out_color(stderr, "0");
	out_printf(stderr, "%s\n", r->tty ? "\r" : "");
}

static void
run_stop_input(struct run *r)
{
	r->stdin_done = true;
	if (r->in_ev != NULL)
		event_del(r->in_ev);
	if (r->feed_ev != NULL)
		event_del(r->feed_ev);
}

static void
run_started(void *arg, struct session *s, bool ok, const char *cause)
{
	struct run *r = arg;

	if (!ok)
		r->start_failed = xstrdup(cause);
}

/* A start that waits longer than this is told why. */
#define RUN_WAIT_TELL_MS 500

/* The start still waits: why, so the user does not take it for a hang. */
static void
run_wait_tell(evutil_socket_t fd, short what, void *arg)
{
	struct run *r = arg;
	const char *why;

	(void)fd;
	(void)what;
	if (session_starting(r->s) &&
	    (why = session_start_waiting(r->s)) != NULL)
		out_printf(stderr, "agentmux: %s\n", why);
}

/*
 * Runs the loop until the command runs (after the start snapshot saved
 * the tree); -1 with *CAUSE if it did not start.
 */
static int
run_wait_started(struct run *r, char **cause)
{
	static const struct timeval after = { 0, RUN_WAIT_TELL_MS * 1000 };
	struct event *tell = NULL;

	/* A wait of a moment (a crashed session's end, on a helper thread) is not told. */
	if (session_start_waiting(r->s) != NULL &&
	    (tell = evtimer_new(r->base, run_wait_tell, r)) != NULL)
		evtimer_add(tell, &after);
	while (session_starting(r->s) &&
	    event_base_loop(r->base, EVLOOP_ONCE) == 0)
		;
	if (tell != NULL)
		event_free(tell);
	if (r->start_failed == NULL && !session_starting(r->s))
		return 0;
	*cause = r->start_failed != NULL ? r->start_failed :
	    xstrdup("the event loop ended before the command started");
	r->start_failed = NULL;
	return -1;
}

static void
run_exited(void *arg, struct session *s, int status)
{
	struct run *r = arg;

	r->exited = true;
	r->status = status;
	run_stop_input(r);
	event_base_loopbreak(r->base);
}

/* The session's end is over: what it found (refs the command deleted) has been told. */
static void
run_done(void *arg, struct session *s)
{
	struct run *r = arg;

	r->done = true;
	event_base_loopbreak(r->base);
}

/* Moves one chunk of stdin to the command; false at the end of input. */
static bool
run_pass_input(struct run *r)
{
	char buf[RUN_CHUNK];
	ssize_t n;

	n = read(STDIN_FILENO, buf, sizeof buf);
	if (n == -1 && (errno == EINTR || errno == EAGAIN))
		return true;
	if (n <= 0) {
		run_stop_input(r);
		/* A terminal's end of input is the user's business, not ours. */
		if (!r->tty)
			session_close_input(r->s);
		return false;
	}
	if (session_write(r->s, buf, (size_t)n) == -1)
		run_stop_input(r);
	return true;
}

static void
run_input_cb(evutil_socket_t fd, short what, void *arg)
{
	run_pass_input(arg);
}

/* Files and /dev/null cannot be polled: read them as the command takes them. */
static void
run_feed_cb(evutil_socket_t fd, short what, void *arg)
{
	struct run *r = arg;
	struct timeval now = { 0, 0 }, soon = { 0, 10000 };

	if (r->stdin_done || r->exited)
		return;
	if (session_input_pending(r->s) < RUN_PENDING_MAX &&
	    !run_pass_input(r))
		return;
	/* Wait a little while the command works through what it has. */
	evtimer_add(r->feed_ev, session_input_pending(r->s) < RUN_PENDING_MAX ?
	    &now : &soon);
}

static void
run_winsize(unsigned short *rows, unsigned short *cols)
{
	struct winsize ws;

	*rows = 24;
	*cols = 80;
	if (ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row != 0 &&
	    ws.ws_col != 0) {
		*rows = ws.ws_row;
		*cols = ws.ws_col;
	}
}

static void
run_winch_cb(evutil_socket_t sig, short what, void *arg)
{
	struct run *r = arg;
	unsigned short rows, cols;

	run_winsize(&rows, &cols);
	session_resize(r->s, rows, cols);
}

/* Back from a stop (kill -STOP, fg): the shell put the terminal back to cooked. */
static void
run_cont_cb(evutil_socket_t sig, short what, void *arg)
{
	run_raw();
	run_winch_cb(sig, what, arg);
}

/* SIGHUP: the user's terminal went away, so the session is closed as a hang-up; else it is asked to stop. */
static void
run_term_cb(evutil_socket_t sig, short what, void *arg)
{
	struct run *r = arg;

	if (r->s == NULL)
		return;
	if (sig == SIGHUP)
		session_close(r->s);
	else
		session_terminate(r->s);
}

static bool
run_stdin_pollable(void)
{
	struct stat st;

	if (fstat(STDIN_FILENO, &st) == -1)
		return false;
	return S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) ||
	    (S_ISCHR(st.st_mode) && isatty(STDIN_FILENO));
}

/*
 * SIGTERM and SIGINT terminate the session, SIGHUP closes it, from before
 * its start: a ^C while it starts (a worktree made, secret commands, the
 * start snapshot) stops it there, where the default action ended agentmux
 * and left its git children running and its session unended.
 */
static void
run_signals(struct run *r)
{
	static const int sigs[] = { SIGTERM, SIGHUP, SIGINT };
	size_t i;

	for (i = 0; i < nitems(sigs); i++) {
		r->sig_ev[i] = evsignal_new(r->base, sigs[i], run_term_cb, r);
		evsignal_add(r->sig_ev[i], NULL);
	}
}

static void
run_signals_free(struct run *r)
{
	size_t i;

	for (i = 0; i < nitems(r->sig_ev); i++) {
		if (r->sig_ev[i] != NULL)
			event_free(r->sig_ev[i]);
		r->sig_ev[i] = NULL;
	}
}

static void
run_events(struct run *r)
{
	if (r->tty) {
		r->winch_ev = evsignal_new(r->base, SIGWINCH, run_winch_cb, r);
		evsignal_add(r->winch_ev, NULL);
		r->cont_ev = evsignal_new(r->base, SIGCONT, run_cont_cb, r);
		evsignal_add(r->cont_ev, NULL);
	}
	if (r->pollable) {
		evutil_make_socket_nonblocking(STDIN_FILENO);
		r->in_ev = event_new(r->base, STDIN_FILENO, EV_READ | EV_PERSIST,
		    run_input_cb, r);
		event_add(r->in_ev, NULL);
	} else {
		struct timeval now = { 0, 0 };

		r->feed_ev = evtimer_new(r->base, run_feed_cb, r);
		evtimer_add(r->feed_ev, &now);
	}
}

static void
run_events_free(struct run *r)
{
	if (r->winch_ev != NULL)
		event_free(r->winch_ev);
	if (r->cont_ev != NULL)
		event_free(r->cont_ev);
	if (r->in_ev != NULL)
		event_free(r->in_ev);
	if (r->feed_ev != NULL)
		event_free(r->feed_ev);
	/* Nonblocking stdin would surprise whoever shares it after us. */
	if (r->pollable)
		fcntl(STDIN_FILENO, F_SETFL, fcntl(STDIN_FILENO, F_GETFL) &
		    ~O_NONBLOCK);
}

struct run_args {
	struct session_opts o;
	struct strv allow;
	struct strv deny;
	struct strv upstream_ca;
};

static int
run_rule(const char *verb, const char *text, struct strv *into)
{
	char *cause = NULL;

	if (session_rule_validate(verb, text, &cause) == -1) {
		cli_usage_error("run", "bad --%s rule '%s': %s", verb, text,
		    cause);
		free(cause);
		return -1;
	}
	strv_add(into, text);
	return 0;
}

/* One value of option NAME, checked. */
static int
run_option(struct run_args *ra, const char *name, const char *value)
{
	long long n;
	char *cause = NULL;

	if (strcmp(name, "allow") == 0 || strcmp(name, "deny") == 0)
		return run_rule(name, value, *name == 'a' ? &ra->allow :
		    &ra->deny);
	if (strcmp(name, "on-unknown") == 0) {
		if (strcmp(value, "deny") == 0) {
			ra->o.on_unknown = CONFIG_DENY;
			return 0;
		}
		if (strcmp(value, "ask") == 0)
			cli_usage_error("run", "--on-unknown ask needs the "
			    "dashboard to answer; use --on-unknown deny, or run "
			    "'agentmux' to be asked");
		else
			cli_usage_error("run", "--on-unknown takes ask or deny, "
			    "not '%s'", value);
		return -1;
	}
	if (strcmp(name, "memory") == 0) {
		if ((ra->o.memory = util_parse_size(value)) > 0)
			return 0;
		cli_usage_error("run", "bad --memory '%s': give a size such as "
		    "512M or 4G", value);
		return -1;
	}
	if (strcmp(name, "pids") == 0) {
		if (util_parse_int(value, 1, 1 << 22, &n, &cause) == 0) {
			ra->o.pids = n;
			return 0;
		}
		cli_usage_error("run", "bad --pids '%s': %s", value, cause);
		free(cause);
		return -1;
	}
	if (access(value, R_OK) == 0) {
		strv_add(&ra->upstream_ca, value);
		return 0;
	}
	cli_usage_error("run", "cannot read --upstream-ca %s: %s", value,
	    strerror(errno));
	return -1;
}

static int
run_parse(struct run_args *ra, struct cli_args *args)
{
	static const char *const checked[] = { "allow", "deny", "on-unknown",
		"memory", "pids", "upstream-ca" };
	char **v;
	size_t i;

	memset(ra, 0, sizeof *ra);
	ra->o.kind = "run";
	ra->o.on_unknown = CONFIG_DENY;
	ra->o.listen_fd = -1;
	strv_init(&ra->allow);
	strv_init(&ra->deny);
	strv_init(&ra->upstream_ca);
	ra->o.agent = cli_get(args, "agent");
	ra->o.dir = cli_get(args, "dir");
	for (i = 0; i < nitems(checked); i++) {
		for (v = cli_values(args, checked[i]); *v != NULL; v++) {
			if (run_option(ra, checked[i], *v) == -1)
				return -1;
		}
	}
	if (cmd_worktree_opts("run", args, &ra->o) == -1)
		return -1;
	ra->o.command = args->argc > 0 ? args->argv : NULL;
	ra->o.allow = ra->allow.v;
	ra->o.deny = ra->deny.v;
	return 0;
}

static void
run_args_free(struct run_args *ra)
{
	strv_free(&ra->allow);
	strv_free(&ra->deny);
	strv_free(&ra->upstream_ca);
}

/* Runs the loop until the command has ended; returns its status. */
static int
run_session(struct run *r)
{
	run_events(r);
	if (r->tty)
		run_raw();
	/* Then its end, whose warnings are the command's too. */
	while ((!r->exited || !r->done) &&
	    event_base_loop(r->base, EVLOOP_ONCE) == 0)
		;
	run_restore();
	run_events_free(r);
	return r->exited ? r->status : 1;
}

/* What the policy refused, and the --allow options that would let it through. */
static void
run_denied(struct session *s)
{
	char *sum = session_denied_summary(s), *line, *save = NULL;

	if (sum == NULL)
		return;
	for (line = strtok_r(sum, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save))
		out_printf(stderr, "agentmux: %s\n", line);
	free(sum);
}

int
cmd_run(struct cli_args *args)
{
	struct session_events ev = { .output = run_output,
	    .started = run_started, .exited = run_exited,
	    .done = run_done, .notice = run_notice };
	struct session_ctx *ctx = NULL;
	struct config *cf = NULL;
	struct run_args ra;
	struct run r;
	char *cause = NULL;
	int rc = 1;

	memset(&r, 0, sizeof r);
	if (run_parse(&ra, args) == -1) {
		run_args_free(&ra);
		return 2;
	}
	/* The jail's cgroups are got ready while the rest is set up. */
	session_prewarm();
	if ((cf = cli_load_config()) == NULL)
		goto out;
	r.base = proc_base();
	loop_trace_init(r.base);
	if ((ctx = session_ctx_create(r.base, cf, ra.upstream_ca.v,
	    &cause)) == NULL) {
		cli_error("%s", cause != NULL ? cause : "cannot create the "
		    "event loop");
		goto out;
	}
	if (session_check(ctx, &ra.o, &cause) == -1) {
		out_printf(stderr, "agentmux run: %s\n", cause);
		rc = 2;
		goto out;
	}
	r.tty = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
	r.pollable = run_stdin_pollable();
	ra.o.pty = r.tty;
	if (r.tty)
		run_winsize(&ra.o.rows, &ra.o.cols);
	run_signals(&r);
	if ((r.s = session_start(ctx, &ra.o, &ev, &r, &cause)) == NULL ||
	    run_wait_started(&r, &cause) == -1) {
		cli_error("%s", cause);
		goto out;
	}
	rc = run_session(&r);
	run_denied(r.s);
out:
	free(cause);
	/*
	 * The signals stay caught (and do nothing: no session) while what the
	 * start left running ends: a second ^C there took the default action,
	 * in the middle of a snapshot or a recovery.
	 */
	session_free(r.s);
	r.s = NULL;
	session_ctx_free(ctx);
	run_signals_free(&r);
	proc_base_free();
	config_free(cf);
	run_args_free(&ra);
	return rc;
}
