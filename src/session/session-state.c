/* A session's one state (starting, working, needs you, prompt, paused, exited, crashed), inferred from events, never polled. */
#include <sys/syscall.h>

#include <ctype.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "proxy/proxy.h"
#include "session-int.h"
#include "store/store.h"

static const char *const session_state_names[] = {
	[SESSION_STARTING] = "starting",
	[SESSION_WORKING] = "working",
	[SESSION_NEEDS_YOU] = "needs you",
	[SESSION_PROMPT] = "prompt",
	[SESSION_PAUSED] = "paused",
	[SESSION_EXITED] = "exited",
	[SESSION_CRASHED] = "crashed",
};

const char *
session_state_name(enum session_state st)
{
	if ((size_t)st >= nitems(session_state_names))
		return "unknown";
	return session_state_names[st];
}

/* A signal that is the program's own failure, not someone ending it. */
static bool
session_state_crash_signal(int sig)
{
	return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL ||
	    sig == SIGABRT || sig == SIGFPE || sig == SIGSYS ||
	    sig == SIGTRAP;
}

/* What the session is now, from what the session layer knows of it. */
static enum session_state
session_state_compute(const struct session *s)
{
	if (s->starting)
		return SESSION_STARTING;
	if (s->ended || s->reaped) {
		if (s->status > 128 && !s->closing &&
		    session_state_crash_signal(s->status - 128))
			return SESSION_CRASHED;
		return SESSION_EXITED;
	}
	if (s->st_paused)
		return SESSION_PAUSED;
	if (s->st_nasks > 0)
		return SESSION_PROMPT;
	if (!s->st_drawn)
		return SESSION_STARTING;
	if (s->st_idle)
		return SESSION_NEEDS_YOU;
	return SESSION_WORKING;
}

enum session_state
session_state(struct session *s)
{
	return session_state_compute(s);
}

const char *
session_state_text(struct session *s, char *buf, size_t len)
{
	enum session_state st = session_state_compute(s);

	if (st == SESSION_EXITED && s->closing)
		snprintf(buf, len, "closed");
	else if (st == SESSION_EXITED)
		snprintf(buf, len, "exited %d", s->status);
	else
		snprintf(buf, len, "%s", session_state_name(st));
	return buf;
}

/*
 * Recomputes the state; a change is recorded (the live state of a running
 * session: its end is recorded by store_session_end) and told.
 */
void
session_state_update(struct session *s)
{
	enum session_state st = session_state_compute(s);

	if (st == s->st_state || s->freed)
		return;
	s->st_state = st;
	if (st != SESSION_EXITED && st != SESSION_CRASHED && s->id != -1)
		store_session_set_live(s->ctx->st, s->id,
		    session_state_name(st));
	log_debug("session %lld: %s", (long long)s->id,
	    session_state_name(st));
	if (s->ev.state != NULL && !s->done_told)
		s->ev.state(s->arg, s, st);
}

/* ---- has the program shown anything yet? ---- */

/* Where output is: text, just after ESC, in a CSI, in a string (OSC, DCS, APC, PM, SOS), at an ESC in one. */
enum { SESSION_ESC_NONE, SESSION_ESC_ESC, SESSION_ESC_CSI, SESSION_ESC_STR,
	SESSION_ESC_STR_ESC };

/* The next state after byte C in state ESC; *SHOWN if C is a visible character. */
static uint8_t
session_state_esc_next(uint8_t esc, unsigned char c, bool *shown)
{
	switch (esc) {
	case SESSION_ESC_ESC:
		if (c == '[')
			return SESSION_ESC_CSI;
		if (c == ']' || c == 'P' || c == '_' || c == '^' || c == 'X')
			return SESSION_ESC_STR;
		/* Intermediates (ESC ( B) go on to a final byte. */
		return c >= 0x20 && c <= 0x2f ? SESSION_ESC_ESC :
		    SESSION_ESC_NONE;
	case SESSION_ESC_CSI:
		if (c == 0x1b)
			return SESSION_ESC_ESC;
		return c >= 0x40 && c <= 0x7e ? SESSION_ESC_NONE :
		    SESSION_ESC_CSI;
	case SESSION_ESC_STR:
		if (c == 0x07)
			return SESSION_ESC_NONE;
		return c == 0x1b ? SESSION_ESC_STR_ESC : SESSION_ESC_STR;
	case SESSION_ESC_STR_ESC:
		return c == '\\' ? SESSION_ESC_NONE : SESSION_ESC_STR;
	default:
		if (c == 0x1b)
			return SESSION_ESC_ESC;
		/* Spaces and controls show nothing; UTF-8 bytes do. */
		*shown = c > 0x20 && c != 0x7f;
		return SESSION_ESC_NONE;
	}
}

/*
 * Whether output P (LEN bytes) shows a visible character outside escape
 * sequences (terminal queries, mode changes, a screen cleared or filled
 * with spaces show nothing); *ESC carries where it is between calls.
 */
AM_TESTABLE bool
session_state_visible(uint8_t *esc, const unsigned char *p, size_t len)
{
	bool shown = false;
	size_t i;

	for (i = 0; i < len && !shown; i++)
		*esc = session_state_esc_next(*esc, p[i], &shown);
	return shown;
}

/*
 * The program wrote to its terminal: until it shows something, it is
 * starting, never "needs you". A program that has drawn nothing waits for
 * no one the user can see: OpenCode sat blank for 5 to 20 s in its event
 * loop (reading its terminal, as it does at its prompt) while it loaded,
 * and was said to need the user.
 */
void
session_state_output(struct session *s, const void *p, size_t len)
{
	if (s->st_drawn || !session_state_visible(&s->st_esc, p, len))
		return;
	s->st_drawn = true;
	log_debug("session %lld: its command shows its first output",
	    (long long)s->id);
}

/* ---- is the program reading its terminal? ---- */

/* Reads /proc/PID/NAME into BUF (NUL-terminated); -1 if it cannot be read. */
static int
session_state_proc_read(pid_t pid, const char *name, char *buf, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, name);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) == -1)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return 0;
}

/* A syscall a program waits for its input in: a read of fd 0, or a poll of some set. */
AM_TESTABLE bool
session_state_syscall_reads(const char *text)
{
	long nr;
	unsigned long arg0;

	if (sscanf(text, "%ld 0x%lx", &nr, &arg0) != 2)
		return false;
	if (nr == SYS_read || nr == SYS_readv)
		return arg0 == 0;
	return nr == SYS_pselect6 || nr == SYS_ppoll ||
#ifdef SYS_select
	    nr == SYS_select ||
#endif
#ifdef SYS_poll
	    nr == SYS_poll ||
#endif
#ifdef SYS_epoll_wait
	    nr == SYS_epoll_wait ||
#endif
#ifdef SYS_epoll_pwait2
	    nr == SYS_epoll_pwait2 ||
#endif
	    nr == SYS_epoll_pwait;
}

/*
 * Whether process PID sleeps waiting for input: /proc/PID/syscall when it
 * may be read (a read of fd 0, or select/poll/epoll as event loops such as
 * node's wait on the terminal), else its wchan (n_tty_read, or a poll);
 * a process running, or asleep in anything else (nanosleep, wait4), is
 * working.
 */
AM_TESTABLE bool
session_state_proc_reads(const char *stat, const char *syscall,
    const char *wchan)
{
	const char *p;

	if (stat == NULL || (p = strrchr(stat, ')')) == NULL || p[1] != ' ' ||
	    p[2] != 'S')
		return false;
	if (syscall != NULL && isdigit((unsigned char)syscall[0]))
		return session_state_syscall_reads(syscall);
	if (wchan != NULL && strcmp(wchan, "0") != 0)
		return strstr(wchan, "tty_read") != NULL ||
		    strstr(wchan, "wait_woken") != NULL ||
		    strstr(wchan, "poll") != NULL ||
		    strstr(wchan, "select") != NULL;
	/*
	 * Asleep, but in what cannot be read here (ptrace access refused:
	 * Yama, a hardened kernel): `sleep 30` and a prompt look the same,
	 * and saying "needs you" of a program that is working would call
	 * the user for nothing. Without evidence it waits, it works.
	 */
	return false;
}

static bool
session_state_pid_reads(pid_t pid)
{
	char stat[256], sc[256], wchan[256];
	bool has_sc, has_wchan;

	if (session_state_proc_read(pid, "stat", stat, sizeof stat) == -1)
		return false;
	has_sc = session_state_proc_read(pid, "syscall", sc, sizeof sc) == 0;
	has_wchan = session_state_proc_read(pid, "wchan", wchan,
	    sizeof wchan) == 0;
	return session_state_proc_reads(stat, has_sc ? sc : NULL,
	    has_wchan ? wchan : NULL);
}

/* The foreground process group of the session's terminal is waiting for input. */
bool
session_state_reading(struct session *s)
{
	int fd = s->jail != NULL ? jail_pty_fd(s->jail) : -1;
	pid_t pgrp;

	/* With pipes there is no terminal to read: quiet is all there is. */
	if (fd == -1)
		return true;
	if ((pgrp = tcgetpgrp(fd)) <= 0)
		return false;
	return session_state_pid_reads(pgrp);
}

/* ---- the quiet timer ---- */

/* How much later a quiet session that was not reading is looked at again, at most. */
#define SESSION_STATE_RECHECK_MAX_MS 30000

static void session_state_timer(struct session *, int64_t ms);

/*
 * Quiet, but its program was not waiting for input at that moment (a
 * collector, a worker finishing, a command still running): looked at again
 * 1 s later, then less often each time (up to 30 s), since nothing it does
 * without output would tell. Seen with OpenCode: its prompt drawn, its main
 * thread busy a moment longer, and it stayed "working" at its prompt.
 */
static void
session_state_recheck(struct session *s)
{
	if (s->st_recheck_ms == 0)
		s->st_recheck_ms = 1000;
	else if (s->st_recheck_ms < SESSION_STATE_RECHECK_MAX_MS / 2)
		s->st_recheck_ms *= 2;
	else
		s->st_recheck_ms = SESSION_STATE_RECHECK_MAX_MS;
	session_state_timer(s, s->st_recheck_ms);
}

static void
session_state_idle_cb(evutil_socket_t fd, short what, void *arg)
{
	struct session *s = arg;

	(void)fd;
	(void)what;
	if (s->ended || s->starting || s->st_paused)
		return;
	/* A turn in flight ends with a request's end, which looks again. */
	if (s->st_model_inflight > 0)
		return;
	if (!session_state_reading(s)) {
		session_state_recheck(s);
		return;
	}
	s->st_idle = true;
	session_state_update(s);
}

/* (Re)arms the quiet timer: idle_after from now, needs-you is looked at again. */
static void
session_state_timer(struct session *s, int64_t ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	if (s->st_idle_ev == NULL)
		s->st_idle_ev = evtimer_new(s->ctx->base, session_state_idle_cb,
		    s);
	evtimer_add(s->st_idle_ev, &tv);
}

static void
session_state_arm(struct session *s)
{
	s->st_recheck_ms = 0;
	session_state_timer(s, s->cf->ui.idle_after);
}

/* The program wrote to its terminal, or was written to: it is working again. */
void
session_state_activity(struct session *s)
{
	if (s->ended || s->starting)
		return;
	s->st_idle = false;
	session_tick_activity(s->ctx);
	session_state_arm(s);
	session_hint_arm(s);
	session_state_update(s);
}

/* Whether HOST is one of the session's profile's model hosts. */
static bool
session_state_model_host(struct session *s, const char *host)
{
	const struct config_agent *a;
	size_t i;

	if (host == NULL || s->agent == NULL ||
	    (a = config_agent(s->cf, s->agent)) == NULL)
		return false;
	for (i = 0; i < a->model_hosts.n; i++) {
		if (util_glob_match(a->model_hosts.v[i], host, true))
			return true;
	}
	return false;
}

/*
 * A request started or ended: model-API requests in flight are a turn
 * (working); the last one's end looks again after idle_after.
 */
void
session_state_request(struct session *s, const struct request *r)
{
	bool model = session_state_model_host(s, r->host);

	session_tick_activity(s->ctx);
	if (r->done) {
		if (r->decision != NULL && strcmp(r->decision, "deny") == 0)
			s->st_denied++;
		else if (r->decision != NULL && strcmp(r->decision, "error") != 0)
			s->st_allowed++;
		s->st_up += r->bytes_up;
		s->st_down += r->bytes_down;
		if (model && r->status > 0)
			s->st_turns++;
	}
	if (!model)
		return;
	if (!r->done) {
		s->st_model_inflight++;
		s->st_idle = false;
		session_state_update(s);
		return;
	}
	if (s->st_model_inflight > 0)
		s->st_model_inflight--;
	if (s->st_model_inflight == 0 && !s->ended)
		session_state_arm(s);
}

/* Question ID was raised (ASKED) or answered. */
void
session_state_ask(struct session *s, uint64_t id, bool asked)
{
	size_t i;

	for (i = 0; i < s->st_nasks; i++) {
		if (s->st_asks[i] == id)
			break;
	}
	if (asked && i == s->st_nasks) {
		s->st_asks = xreallocarray(s->st_asks, s->st_nasks + 1,
		    sizeof *s->st_asks);
		s->st_asks[s->st_nasks++] = id;
	} else if (!asked && i < s->st_nasks)
		s->st_asks[i] = s->st_asks[--s->st_nasks];
	session_state_update(s);
}

void
session_state_free(struct session *s)
{
	if (s->st_idle_ev != NULL)
		event_free(s->st_idle_ev);
	s->st_idle_ev = NULL;
	if (s->st_freeze_ev != NULL)
		event_free(s->st_freeze_ev);
	s->st_freeze_ev = NULL;
	session_hint_free(s);
	free(s->st_asks);
	s->st_asks = NULL;
	s->st_nasks = 0;
}

/* ---- pause and resume ---- */

/* How often a pause looks whether every process has stopped, and for how long. */
#define SESSION_STATE_FREEZE_POLL_US 2000
#define SESSION_STATE_FREEZE_MAX_US (5 * 1000000LL)

static void session_state_freeze_cb(evutil_socket_t, short, void *);

static void
session_state_freeze_schedule(struct session *s)
{
	struct timeval tv = { 0, SESSION_STATE_FREEZE_POLL_US };

	if (s->st_freeze_ev == NULL)
		s->st_freeze_ev = evtimer_new(s->ctx->base,
		    session_state_freeze_cb, s);
	evtimer_add(s->st_freeze_ev, &tv);
}

static void
session_state_notice(struct session *s, const char *level, const char *msg)
{
	store_event_add(s->ctx->st, s->id, strcmp(level, "alert") == 0 ?
	    "error" : level, "pause", "%s", msg);
	if (s->ev.notice != NULL)
		s->ev.notice(s->arg, s, level, msg);
}

/* The freeze did not take: the session runs on (or its jail is gone), and the user is told. */
static void
session_state_freeze_failed(struct session *s, const char *why)
{
	char *cause = NULL, *msg;

	if (jail_thaw(s->jail, &cause) == -1)
		free(cause);
	if (s->ps != NULL)
		proxy_session_pause(s->ps, false);
	session_ports_pause(s, false);
	session_wall_hold(s, false);
	s->st_paused = false;
	msg = xprintf("session %lld could not be paused: %s", (long long)s->id,
	    why);
	session_state_notice(s, "warn", msg);
	free(msg);
	session_state_update(s);
}

static void
session_state_freeze_cb(evutil_socket_t fd, short what, void *arg)
{
	struct session *s = arg;
	enum jail_freeze st;
	char *cause = NULL, *msg;

	(void)fd;
	(void)what;
	if (!s->st_paused || s->ended)
		return;
	if (jail_freeze_poll(s->jail, &st, &cause) == -1) {
		session_state_freeze_failed(s, cause);
		free(cause);
		return;
	}
	if (st == JAIL_FROZEN) {
		s->st_frozen_us = util_mono_us() - s->st_pause_us;
		log_debug("session %lld: frozen in %lld us (%s)",
		    (long long)s->id, (long long)s->st_frozen_us,
		    jail_freeze_how(s->jail));
		return;
	}
	if (util_mono_us() - s->st_pause_us > SESSION_STATE_FREEZE_MAX_US) {
		msg = xprintf("its processes did not all stop within 5 "
		    "seconds (%s)", jail_freeze_how(s->jail));
		session_state_freeze_failed(s, msg);
		free(msg);
		return;
	}
	session_state_freeze_schedule(s);
}

static int
session_state_pause(struct session *s, char **cause)
{
	if (jail_freeze(s->jail, cause) == -1)
		return -1;
	s->st_paused = true;
	s->st_pause_us = util_mono_us();
	s->st_frozen_us = 0;
	if (s->ps != NULL)
		proxy_session_pause(s->ps, true);
	session_ports_pause(s, true);
	session_wall_hold(s, true);
	if (s->st_idle_ev != NULL)
		evtimer_del(s->st_idle_ev);
	store_event_add(s->ctx->st, s->id, "info", "pause", "paused (%s)",
	    jail_freeze_how(s->jail));
	session_state_freeze_schedule(s);
	return 0;
}

static int
session_state_resume(struct session *s, char **cause)
{
	if (jail_thaw(s->jail, cause) == -1)
		return -1;
	s->st_paused = false;
	if (s->st_freeze_ev != NULL)
		evtimer_del(s->st_freeze_ev);
	if (s->ps != NULL)
		proxy_session_pause(s->ps, false);
	session_ports_pause(s, false);
	session_wall_hold(s, false);
	/* Quiet as it was: what it was waiting for is looked at again. */
	if (!s->st_idle)
		session_state_arm(s);
	store_event_add(s->ctx->st, s->id, "info", "pause", "resumed");
	return 0;
}

int
session_pause(struct session *s, bool pause, char **cause)
{
	int rc;

	if (s->ended || s->reaped || s->jail == NULL || s->starting) {
		*cause = xprintf("session %lld is not running: only a running "
		    "session can be %s", (long long)s->id, pause ? "paused" :
		    "resumed");
		return -1;
	}
	if (session_disk_frozen(s)) {
		*cause = xprintf("session %lld is frozen at a disk limit: answer "
		    "its disk question first", (long long)s->id);
		return -1;
	}
	if (s->st_paused == pause)
		return 0;
	rc = pause ? session_state_pause(s, cause) :
	    session_state_resume(s, cause);
	if (rc == 0)
		session_state_update(s);
	return rc;
}

bool
session_paused(struct session *s)
{
	return s->st_paused;
}

int64_t
session_pause_took_us(struct session *s)
{
	return s->st_frozen_us;
}
