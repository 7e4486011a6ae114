/* The session layer: starts a jailed command, relays its pty or pipes on the loop, records its life in the store. */
#include <sys/stat.h>

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "jail/jail.h"
#include "session-int.h"

extern char **environ;
#include "store/store.h"

static void session_finish(struct session *);
static void session_start_fail(struct session *, const char *);
static void session_start_stopped(struct session *);
static void session_run_look_stop(struct session *);
static int session_run_look_begin(struct session *, char **);
static void session_start_done(struct session *);
static void session_signal_then_kill(struct session *, int);
static void session_strv_copy(struct strv *, char *const *);

/*
 * A jail reaped while its start still waits: what its status channel holds
 * decides. A quick command may have run and ended before the loop read
 * "the command runs" (the SIGCHLD came first): that is a start and an exit.
 */
static void
session_reaped_starting(struct session *s)
{
	char *cause = NULL;
	int rc = -1;

	if (s->start_go)
		rc = jail_go_poll(s->jail, &cause);
	else
		(void)jail_setup_poll(s->jail, &cause);
	if (rc == 1) {
		session_add_ref(s);
		session_start_done(s);
		if (!s->freed)
			session_finish(s);
		session_remove_ref(s);
		return;
	}
	if (s->start_stopped)
		session_start_stopped(s);
	else
		session_start_fail(s, cause != NULL ? cause : "the jail's "
		    "setup ended before it started the command");
	free(cause);
}

/* SIGCHLD: whichever jails have ended are reaped. */
static void
session_ctx_sigchld(evutil_socket_t sig, short what, void *arg)
{
	struct session_ctx *ctx = arg;
	struct session *s, *next;

	for (s = ctx->sessions; s != NULL; s = next) {
		next = s->next;
		if (s->jail == NULL || s->reaped ||
		    jail_reap(s->jail, &s->status) != 1)
			continue;
		s->reaped = true;
		if (s->starting)
			session_reaped_starting(s);
		else
			session_finish(s);
	}
}

struct session_ctx *
session_ctx_create(struct event_base *base, const struct config *cf,
    char *const *upstream_ca, char **cause)
{
	struct session_ctx *ctx = xcalloc(1, sizeof *ctx);
	size_t i;

	ctx->base = base;
	ctx->cf = cf;
	strv_init(&ctx->upstream_ca);
	for (i = 0; upstream_ca != NULL && upstream_ca[i] != NULL; i++)
		strv_add(&ctx->upstream_ca, upstream_ca[i]);
	if ((ctx->data_dir = path_data_dir(cause)) == NULL)
		goto fail;
	if ((ctx->st = store_open(NULL, cause)) == NULL)
		goto fail;
	store_attach(ctx->st, base);
	store_set_limits(ctx->st, cf->proxy.record_budget,
	    (size_t)cf->proxy.record_headers);
	if (session_proxy_ctx_init(ctx, cause) == -1)
		goto fail;
	session_history_recover(ctx);
	ctx->sigchld = evsignal_new(base, SIGCHLD, session_ctx_sigchld, ctx);
	if (ctx->sigchld == NULL || evsignal_add(ctx->sigchld, NULL) == -1) {
		*cause = xstrdup("cannot watch for ended commands (SIGCHLD)");
		goto fail;
	}
	return ctx;
fail:
	session_ctx_free(ctx);
	return NULL;
}

void
session_ctx_free(struct session_ctx *ctx)
{
	if (ctx == NULL)
		return;
	while (ctx->sessions != NULL)
		session_free(ctx->sessions);
	/* The history ends, end snapshots and config runs of the sessions freed, and the recovery, are over before the store closes. */
	while ((session_history_endings() > 0 || snap_session_orphans() > 0 ||
	    session_guard_endings() > 0 ||
	    snap_history_recovering() > 0 || snap_confdiff_endings() > 0) &&
	    event_base_loop(ctx->base, EVLOOP_ONCE) == 0)
		;
	session_proxy_ctx_free(ctx);
	session_tick_free(ctx);
	if (ctx->sigchld != NULL)
		event_free(ctx->sigchld);
	store_close(ctx->st);
	strv_free(&ctx->upstream_ca);
	free(ctx->data_dir);
	free(ctx);
}

struct store *
session_ctx_store(struct session_ctx *ctx)
{
	return ctx->st;
}

const struct config *
session_ctx_config(struct session_ctx *ctx)
{
	return ctx->cf;
}

void
session_ctx_set_config(struct session_ctx *ctx, const struct config *cf)
{
	ctx->cf = cf;
}

/* ---- checking what was asked for ---- */

int
session_check(struct session_ctx *ctx, const struct session_opts *o,
    char **cause)
{
	char *project;

	if (session_setup_profile(ctx->cf, o->agent, cause) == NULL)
		return -1;
	if (session_proxy_check(o, cause) == -1)
		return -1;
	if (jail_project(o->dir != NULL ? o->dir : ".", &project, cause) == -1)
		return -1;
	free(project);
	return 0;
}

/* ---- output and input ---- */

static void
session_emit(struct session *s, int stream, struct evbuffer *eb)
{
	struct evbuffer_iovec v[8];
	bool fed = false;
	int n, i;

	while (evbuffer_get_length(eb) > 0) {
		n = evbuffer_peek(eb, -1, NULL, v, (int)nitems(v));
		if (n > (int)nitems(v))
			n = (int)nitems(v);
		for (i = 0; i < n; i++) {
			if (stream == 1)
				session_state_output(s, v[i].iov_base,
				    v[i].iov_len);
			if (stream == 1 && session_pane_feed(s, v[i].iov_base,
			    v[i].iov_len))
				fed = true;
			if (s->ev.output != NULL)
				s->ev.output(s->arg, s, stream, v[i].iov_base,
				    v[i].iov_len);
			evbuffer_drain(eb, v[i].iov_len);
		}
	}
	if (stream == 1)
		session_state_activity(s);
	if (fed)
		session_pane_changed(s);
}

static void
session_read_cb(struct bufferevent *bev, void *arg)
{
	struct session *s = arg;

	session_emit(s, bev == s->err ? 2 : 1, bufferevent_get_input(bev));
}

/* End of a stream (a pty reports EIO once every slave is closed). */
static void
session_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct session *s = arg;

	if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)))
		return;
	session_read_cb(bev, s);
	if (bev == s->in) {
		/* The command closed its stdin: drop what it will never read. */
		bufferevent_free(s->in);
		s->in = NULL;
		jail_close_stdin(s->jail);
		return;
	}
	if (bev == s->pty)
		s->pty = NULL;
	else if (bev == s->out)
		s->out = NULL;
	else if (bev == s->err)
		s->err = NULL;
	bufferevent_free(bev);
	session_finish(s);
}

static void
session_in_drained(struct bufferevent *bev, void *arg)
{
	struct session *s = arg;

	if (!s->in_closing || s->in == NULL ||
	    evbuffer_get_length(bufferevent_get_output(s->in)) > 0)
		return;
	bufferevent_free(s->in);
	s->in = NULL;
	jail_close_stdin(s->jail);
}

static struct bufferevent *
session_bev(struct session *s, int fd, short enable)
{
	struct bufferevent *bev;

	evutil_make_socket_nonblocking(fd);
	bev = bufferevent_socket_new(s->ctx->base, fd, 0);
	if (bev == NULL)
		fatalx("cannot create a bufferevent");
	bufferevent_setcb(bev, (enable & EV_READ) ? session_read_cb : NULL,
	    (enable & EV_WRITE) ? session_in_drained : NULL,
	    session_event_cb, s);
	if (enable & EV_READ)
		bufferevent_enable(bev, EV_READ);
	return bev;
}

static void
session_io_start(struct session *s)
{
	int fd;

	if ((fd = jail_pty_fd(s->jail)) != -1) {
		s->pty = session_bev(s, fd, EV_READ | EV_WRITE);
		return;
	}
	s->out = session_bev(s, jail_stdout_fd(s->jail), EV_READ);
	s->err = session_bev(s, jail_stderr_fd(s->jail), EV_READ);
	s->in = session_bev(s, jail_stdin_fd(s->jail), EV_WRITE);
}

/* How the record says it ended: closed by the user, or exited by itself. */
static const char *
session_end_state(const struct session *s)
{
	return s->closing ? "closed" : "exited";
}

/*
 * The session has ended once its jail is reaped and its output has been
 * read to the end: only then is the exit reported, after the last byte.
 */
static void session_finish_history(struct session *);
static void session_finish_guard(struct session *);
static void session_finish_told(struct session *);

/*
 * From the end's start to its walks' end the session's snapshots wait: a
 * turn's, due meanwhile, would record the project's refs half mended.
 */
static void
session_finish_hold(struct session *s)
{
	if ((s->finish_snap = s->snap) != NULL)
		snap_session_hold(s->finish_snap);
}

static void
session_finish_release(struct session *s)
{
	struct snap_session *held = s->finish_snap;

	s->finish_snap = NULL;
	if (held != NULL)
		snap_session_release_hold(held);
}

static void
session_finish(struct session *s)
{
	if (s->ended || !s->reaped || s->starting || s->pty != NULL ||
	    s->out != NULL || s->err != NULL)
		return;
	s->ended = true;
	if (s->kill_ev != NULL)
		event_del(s->kill_ev);
	if (s->wall_ev != NULL)
		event_del(s->wall_ev);
	session_ports_end(s);
	session_disk_end(s);
	session_files_capture(s);
	store_session_end(s->ctx->st, s->id, session_end_state(s), s->status,
	    s->end_reason);
	if (s->st_idle_ev != NULL)
		event_del(s->st_idle_ev);
	session_finish_hold(s);
	/*
	 * The jail's last HEAD and index, before the history's end looks at
	 * the project's: off the loop (the user's git may hold index.lock).
	 */
	if (session_guard_jail_end_begin(s, session_finish_history))
		return;
	session_finish_history(s);
}

/*
 * The jail's git dir is over: the history's end (before the end snapshot
 * runs git on the project, and before the end's walks move what it
 * would tell: a reflog dir made a link), then the end's walks.
 */
static void
session_finish_history(struct session *s)
{
	if (session_history_stop_begin(s, session_finish_guard))
		return;
	session_finish_guard(s);
}

static void
session_finish_guard(struct session *s)
{
	/* The end's walks of the project run off the loop; the rest follows them. */
	if (session_guard_stop_begin(s, session_finish_told))
		return;
	session_guard_stop(s);
	session_finish_told(s);
}

/*
 * The guard's end is over (planted git dirs defused, what it found told):
 * the end snapshot, then the exit is reported.
 */
static void
session_finish_told(struct session *s)
{
	session_finish_release(s);
	session_hint_file_stop(s);
	session_snap_end(s);
	/* The front end may free it from the callback. */
	session_add_ref(s);
	session_state_update(s);
	if (s->ev.exited != NULL)
		s->ev.exited(s->arg, s, s->status);
	if (!s->freed)
		session_snap_done(s);
	session_remove_ref(s);
}

/* ---- starting ---- */

static char *
session_command_json(const struct strv *argv)
{
	struct json js;
	size_t i;

	json_init(&js, false);
	json_arr_begin(&js);
	for (i = 0; i < argv->n; i++)
		json_str(&js, argv->v[i]);
	json_arr_end(&js);
	return buf_steal(&js.out);
}

/* The command in the user's words: what they typed, or the profile's line. */
static void
session_asked(struct session *s, const struct config_agent *a,
    const struct session_opts *o)
{
	char *cause = NULL;
	size_t i;

	strv_init(&s->asked);
	if (o->command != NULL && o->command[0] != NULL) {
		for (i = 0; o->command[i] != NULL; i++)
			strv_add(&s->asked, o->command[i]);
		return;
	}
	if (a->command != NULL && strv_split_words(&s->asked, a->command,
	    &cause) == 0 && s->asked.n > 0)
		return;
	free(cause);
	strv_free(&s->asked);
	session_strv_copy(&s->asked, s->argv.v);
}

static int
session_record(struct session *s, char **cause)
{
	struct store_session rec;
	char *cmd = session_command_json(&s->asked);

	memset(&rec, 0, sizeof rec);
	rec.kind = s->kind;
	rec.agent = s->agent;
	rec.project = s->project;
	rec.command = cmd;
	s->id = store_session_begin(s->ctx->st, &rec, cause);
	free(cmd);
	return s->id == -1 ? -1 : 0;
}

/* Where the command starts: the -C dir if it lies in the project, else the project. */
static char *
session_cwd(const char *dir, const char *project)
{
	char *real = realpath(dir != NULL ? dir : ".", NULL);
	size_t n = strlen(project);

	if (real != NULL && strncmp(real, project, n) == 0 &&
	    (real[n] == '\0' || real[n] == '/'))
		return real;
	free(real);
	return xstrdup(project);
}

static void
session_limits(struct jail_limits *l, const struct config *cf,
    const struct config_agent *a, const struct session *o)
{
	memset(l, 0, sizeof *l);
	l->memory = o->memory > 0 ? o->memory : a->memory > 0 ? a->memory :
	    cf->limits.memory;
	l->pids = o->pids > 0 ? o->pids : a->pids > 0 ? a->pids :
	    cf->limits.pids;
	l->file_size = cf->limits.file_size;
	l->open_files = cf->limits.open_files;
	l->tmp_size = cf->limits.tmp_size;
	l->cpu_seconds = cf->limits.cpu_seconds;
}

/*
 * The files the user's tools run ([jail] protect): those there now are
 * read-only in the jail (PATHS gets them, absolute), and every one is
 * watched for the session's end.
 */
static void
session_protect(struct session *s, const struct config_agent *a,
    struct strv *paths)
{
	const char *const *d;
	struct strv watch;
	size_t i;

	strv_free(&s->protect);
	strv_free(&s->protected);
	config_protect(s->cf, a, &s->protect);
	/* Hooks kept in the tree: protected as the list's entries are. */
	free(s->hooks);
	s->hooks = snap_plant_hooks_path_of(s->project, s->start_gitconf);
	if (s->hooks != NULL && s->protect.n > 0 &&
	    !strv_contains(&s->protect, s->hooks))
		strv_add(&s->protect, s->hooks);
	strv_free(&s->gitfiles);
	strv_init(&s->gitfiles);
	snap_plant_git_files_of(s->project, s->start_gitconf, &s->gitfiles);
	snap_plant_nested_git_files(s->project, s->start_gitdirs.v,
	    s->start_gitdirs.n, &s->gitfiles);
	for (i = 0; i < s->gitfiles.n && s->protect.n > 0; i++) {
		if (!strv_contains(&s->protect, s->gitfiles.v[i]))
			strv_add(&s->protect, s->gitfiles.v[i]);
	}
	strv_init(&s->protected);
	snap_plant_existing(s->project, s->protect.v, s->protect.n,
	    &s->protected);
	for (i = 0; i < s->protected.n; i++)
		strv_addf(paths, "%s/%s", s->project, s->protected.v[i]);
	/* What is watched (the built-in list too): there now, for its deletion. */
	strv_init(&watch);
	for (d = config_protect_defaults(); *d != NULL; d++)
		strv_add(&watch, *d);
	if (s->hooks != NULL)
		strv_add(&watch, s->hooks);
	for (i = 0; i < s->gitfiles.n; i++)
		strv_add(&watch, s->gitfiles.v[i]);
	strv_free(&s->watched);
	strv_init(&s->watched);
	snap_plant_existing(s->project, watch.v, watch.n, &s->watched);
	for (i = 0; i < s->protected.n; i++) {
		if (!strv_contains(&s->watched, s->protected.v[i]))
			strv_add(&s->watched, s->protected.v[i]);
	}
	strv_free(&watch);
}

static void
session_strv_copy(struct strv *to, char *const *from)
{
	size_t i;

	strv_init(to);
	for (i = 0; from != NULL && from[i] != NULL; i++)
		strv_add(to, from[i]);
}

/* The client's environment may hold its secrets: wiped, not just freed. */
static void
session_env_free(struct session *s)
{
	size_t i;

	for (i = 0; i < s->caller_env.n; i++)
		explicit_bzero(s->caller_env.v[i], strlen(s->caller_env.v[i]));
	strv_free(&s->caller_env);
}

const char *
session_getenv(const struct session *s, const char *name)
{
	size_t i, n = strlen(name);
	const char *kv;

	if (!s->has_caller_env)
		return getenv(name);
	for (i = 0; i < s->caller_env.n; i++) {
		kv = s->caller_env.v[i];
		if (strncmp(kv, name, n) == 0 && kv[n] == '=')
			return kv + n + 1;
	}
	return NULL;
}

char *const *
session_environ(const struct session *s)
{
	return s->has_caller_env ? s->caller_env.v : environ;
}

static struct session *
session_new(struct session_ctx *ctx, const struct session_opts *o,
    const struct session_events *ev, void *arg)
{
	struct session *s = xcalloc(1, sizeof *s);

	s->references = 1;      /* the front end's, dropped by session_free */
	s->ctx = ctx;
	s->cf = ctx->cf;
	if (ev != NULL)
		s->ev = *ev;
	s->arg = arg;
	s->id = -1;
	s->listen_fd = -1;
	s->guard_fd = -1;
	s->guard_git_wd = -1;
	s->guard_priv_wd = -1;
	s->tree_lock = -1;
	s->home_fd = -1;
	s->st_hf_fd = -1;
	s->st_hf_wd = -1;
	s->status = -1;
	buf_init(&s->start_in);
	buf_init(&s->keys);
	s->rows = o->rows;
	s->cols = o->cols;
	s->want_pty = o->pty;
	s->memory = o->memory;
	s->pids = o->pids;
	strv_init(&s->hfiles);
	strv_init(&s->hcopies);
	strv_init(&s->protect);
	strv_init(&s->protected);
	snap_blind_init(&s->guard_blind);
	snap_blind_init(&s->guard_blind_now);
	strv_init(&s->guard_execs);
	strv_init(&s->guard_nested);
	strv_init(&s->start_gitdirs);
	strv_init(&s->watched);
	snap_run_init(&s->run_start);
	s->kind = xstrdup(o->kind != NULL ? o->kind : "run");
	s->on_unknown = o->on_unknown >= 0 ? o->on_unknown :
	    (int)ctx->cf->on_unknown;
	strv_init(&s->env);
	strv_init(&s->denied);
	session_strv_copy(&s->allow, o->allow);
	session_strv_copy(&s->deny, o->deny);
	session_strv_copy(&s->kept, o->kept);
	/* The server's own environment is its first client's: never used. */
	s->has_caller_env = o->env != NULL;
	session_strv_copy(&s->caller_env, o->env);
	return s;
}

static void
session_link(struct session *s)
{
	s->next = s->ctx->sessions;
	s->ctx->sessions = s;
}

static void
session_unlink(struct session *s)
{
	struct session **p;

	for (p = &s->ctx->sessions; *p != NULL; p = &(*p)->next) {
		if (*p == s) {
			*p = s->next;
			return;
		}
	}
}

/*
 * agentmux proxy has no dashboard to keep alive: its loop runs (it is not
 * running yet) until the secret commands are done.
 */
static int
session_listener_secrets(struct session *s, char **cause)
{
	while (s->secrets_pending > 0 &&
	    event_base_loop(s->ctx->base, EVLOOP_ONCE) == 0)
		;
	return session_proxy_secrets_finish(s, cause);
}

/*
 * A session with no jail and no command: the proxy serves O's listener
 * (agentmux proxy). Policy from the config, the profile if one is named,
 * and --allow/--deny; it ends when the front end frees it.
 */
static struct session *
session_start_listener(struct session_ctx *ctx, const struct session_opts *o,
    const struct session_events *ev, void *arg, char **cause)
{
	const struct config_agent *a = NULL;
	struct session *s;
	int fd = o->listen_fd;

	if (o->agent != NULL &&
	    (a = session_setup_profile(ctx->cf, o->agent, cause)) == NULL) {
		close(fd);
		return NULL;
	}
	s = session_new(ctx, o, ev, arg);
	s->agent = xstrdup(a != NULL ? a->name : "none");
	s->project = realpath(o->dir != NULL ? o->dir : ".", NULL);
	if (s->project == NULL)
		s->project = xstrdup(o->dir != NULL ? o->dir : ".");
	session_strv_copy(&s->asked, o->command);
	s->command = strv_join_shell(s->asked.v);
	s->reaped = true;   /* nothing runs: it ends when it is freed */
	if (session_record(s, cause) == -1 ||
	    session_proxy_prepare(s, a, cause) == -1 ||
	    session_listener_secrets(s, cause) == -1) {
		close(fd);
		fd = -1;
	}
	if (fd == -1 || session_proxy_serve(s, fd, cause) == -1) {
		if (s->id != -1) {
			store_session_end(ctx->st, s->id, "failed", -1, *cause);
			s->ended = true;
		}
		session_free(s);
		return NULL;
	}
	session_link(s);
	return s;
}

/* The profile's wall_clock is up: the agent is asked to stop, then killed. */
static void
session_wall_cb(evutil_socket_t fd, short what, void *arg)
{
	struct session *s = arg;
	const struct config_agent *a = config_agent(s->cf, s->agent);
	char *msg;

	if (s->ended || a == NULL)
		return;
	msg = xprintf("agent %s reached its wall_clock limit of %llds; "
	    "stopping it", s->agent, (long long)a->wall_clock);
	store_event_add(s->ctx->st, s->id, "warn", "limit", "%s", msg);
	if (s->ev.notice != NULL)
		s->ev.notice(s->arg, s, "warn", msg);
	free(msg);
	session_terminate(s);
}

/* Agents that retry forever without network can be bounded by their profile. */
static void
session_wall_start(struct session *s, const struct config_agent *a)
{
	struct timeval tv = { (time_t)a->wall_clock, 0 };

	if (a->wall_clock <= 0)
		return;
	s->wall_ev = evtimer_new(s->ctx->base, session_wall_cb, s);
	if (s->wall_ev == NULL)
		fatalx("cannot create a timer");
	s->wall_due_us = util_mono_us() + (int64_t)a->wall_clock * 1000000;
	evtimer_add(s->wall_ev, &tv);
}

/*
 * A paused session's wall clock stops (the time it was frozen was not the
 * agent's to use) and goes on at resume with what was left.
 */
void
session_wall_hold(struct session *s, bool hold)
{
	struct timeval tv;
	int64_t now = util_mono_us();

	if (s->wall_ev == NULL || s->ended)
		return;
	if (hold) {
		s->wall_left_us = s->wall_due_us > now ? s->wall_due_us - now : 0;
		evtimer_del(s->wall_ev);
		return;
	}
	s->wall_due_us = now + s->wall_left_us;
	tv.tv_sec = (time_t)(s->wall_left_us / 1000000);
	tv.tv_usec = (suseconds_t)(s->wall_left_us % 1000000);
	evtimer_add(s->wall_ev, &tv);
}

/* ---- starting, on the loop ---- */

/* The jail's set-up and its command each get so long, as jail_go gives them. */
#define SESSION_JAIL_TIMEOUT_SEC 20

static void session_start_step(struct session *);
static void session_start_reads_free(struct session *);

static void
session_start_wait_free(struct session *s)
{
	snap_history_wait_free(s->start_recovery);
	s->start_recovery = NULL;
	free(s->start_waiting);
	s->start_waiting = NULL;
}

static void
session_start_events_free(struct session *s)
{
	if (s->start_ev != NULL)
		event_free(s->start_ev);
	if (s->start_jail_ev != NULL)
		event_free(s->start_jail_ev);
	if (s->start_timer != NULL)
		event_free(s->start_timer);
	if (s->start_stop_ev != NULL)
		event_free(s->start_stop_ev);
	s->start_ev = s->start_jail_ev = s->start_timer = NULL;
	s->start_stop_ev = NULL;
}

/* The start failed with CAUSE, as it is: it is recorded, and the front end told. */
static void
session_start_failed(struct session *s, const char *cause)
{
	session_start_events_free(s);
	session_start_wait_free(s);
	session_start_reads_free(s);
	session_history_begin_stop(s);
	session_run_look_stop(s);
	/* The start snapshot runs on: it must not call back into this start. */
	if (s->snap != NULL)
		snap_session_when_saved(s->snap, NULL, NULL);
	session_proxy_secrets_drop(s);
	jail_free(s->jail);
	s->jail = NULL;
	/* Started once the tree was saved: nothing is left to watch. */
	session_history_stop(s);
	session_guard_stop(s);
	s->starting = false;
	s->reaped = true;
	s->ended = true;
	s->done_told = true;    /* no exited, no done: started says it all */
	store_session_end(s->ctx->st, s->id, "failed", -1, cause);
	log_debug("session %lld: start failed: %s", (long long)s->id, cause);
	if (s->ev.started != NULL)
		s->ev.started(s->arg, s, false, cause);
}

/*
 * The start failed with CAUSE (a closed session's says it was closed; one
 * stopped says so, as what its stop caused is no failure of its own: a
 * jail killed in its setup is often read to have ended before it reaps).
 */
static void
session_start_fail(struct session *s, const char *cause)
{
	if (s->start_stopped) {
		session_start_stopped(s);
		return;
	}
	if (s->closing || cause == NULL)
		cause = "closed before its command started";
	session_start_failed(s, cause);
}

/* The command runs: the proxy serves its listener, its output is read. */
static void
session_start_done(struct session *s)
{
	const struct config_agent *a = config_agent(s->cf, s->agent);
	char *cause = NULL;
	bool closing;

	session_start_events_free(s);
	if (session_proxy_serve(s, jail_take_listen_fd(s->jail),
	    &cause) == -1) {
		session_start_fail(s, cause);
		free(cause);
		return;
	}
	store_session_set_jail(s->ctx->st, s->id, jail_summary(s->jail));
	s->starting = false;
	session_io_start(s);
	closing = s->in_closing;
	s->in_closing = false;
	if (s->start_in.len > 0)
		session_write(s, s->start_in.data, s->start_in.len);
	buf_free(&s->start_in);
	if (closing)
		session_close_input(s);
	if (s->rows != 0 && s->cols != 0)
		jail_resize(s->jail, s->rows, s->cols);
	if (a != NULL)
		session_wall_start(s, a);
	session_disk_start(s);
	session_hint_file_start(s);
	s->st_started_ms = util_now_ms();
	/* With pipes there is no screen: what it shows cannot be told. */
	if (jail_pty_fd(s->jail) == -1)
		s->st_drawn = true;
	session_state_activity(s);
	if (s->start_go_stop == 2)
		session_close(s);
	else if (s->start_go_stop == 1)
		session_terminate(s);
	s->start_go_stop = 0;
	if (s->ev.started != NULL)
		s->ev.started(s->arg, s, true, NULL);
}

static void
session_start_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	session_start_fail(arg, "the jail did not start within 20 seconds");
}

static void
session_start_arm_timer(struct session *s)
{
	struct timeval tv = { SESSION_JAIL_TIMEOUT_SEC, 0 };

	evtimer_add(s->start_timer, &tv);
}

/* The jail's status channel has something: its set-up, or its command's start. */
static void
session_start_jail_cb(evutil_socket_t fd, short what, void *arg)
{
	struct session *s = arg;
	char *cause = NULL;
	int rc;

	if (!s->start_setup) {
		if ((rc = jail_setup_poll(s->jail, &cause)) == 1) {
			s->start_setup = true;
			/* Nothing more comes until it is released. */
			event_del(s->start_jail_ev);
			session_start_step(s);
		}
	} else if ((rc = jail_go_poll(s->jail, &cause)) == 1)
		session_start_done(s);
	if (rc == -1) {
		session_start_fail(s, cause);
		free(cause);
	}
}

/* The snapshot saved the tree (called from inside its job: the rest waits for the loop). */
static void
session_start_saved(void *arg)
{
	struct session *s = arg;

	/* Only a start still waiting for it (one that failed has let go). */
	if (s->starting && s->start_ev != NULL)
		event_active(s->start_ev, EV_TIMEOUT, 0);
}

static void
session_start_saved_cb(evutil_socket_t fd, short what, void *arg)
{
	struct session *s = arg;

	s->start_saved = true;
	session_guard_start(s);
	session_history_watch(s);
	session_start_arm_timer(s);
	session_start_step(s);
}

/*
 * Once the tree is saved and the jail set up: the config file entries go
 * into its HOME, then the command is released.
 */
static void
session_start_step(struct session *s)
{
	char *cause = NULL;

	if (!s->start_saved || !s->start_setup || s->start_go)
		return;
	s->start_go = true;
	/*
	 * A worktree session's tree is new and seen by this jail only:
	 * nothing could write it before now, so the end's distrust of stat
	 * data starts here, not at the session's start (before the checkout).
	 */
	if (s->wt != NULL && s->snap != NULL)
		snap_session_set_first_write(s->snap, util_now_ms());
	s->home_fd = jail_take_home_fd(s->jail);
	if (session_files_place(s, &cause) == -1 ||
	    jail_go_send(s->jail, &cause) == -1) {
		session_start_fail(s, cause);
		free(cause);
		return;
	}
	if (jail_status_fd(s->jail) == -1) {
		session_start_done(s);
		return;
	}
	session_start_arm_timer(s);
	event_add(s->start_jail_ev, NULL);
}

/* Watches what the start waits for: the snapshot and the jail. */
static void
session_start_watch(struct session *s)
{
	struct event_base *base = s->ctx->base;
	int fd = jail_status_fd(s->jail);

	s->starting = true;
	s->start_ev = event_new(base, -1, 0, session_start_saved_cb, s);
	s->start_timer = evtimer_new(base, session_start_timer_cb, s);
	s->start_jail_ev = event_new(base, fd, EV_READ | EV_PERSIST,
	    session_start_jail_cb, s);
	if (s->start_ev == NULL || s->start_timer == NULL ||
	    s->start_jail_ev == NULL)
		fatalx("cannot create the events a session starts on");
	if (fd == -1)
		s->start_setup = true;
	else
		event_add(s->start_jail_ev, NULL);
	/* No snapshot (it could not be taken): the tree need not wait. */
	if (!session_snap_when_saved(s, session_start_saved))
		event_active(s->start_ev, EV_TIMEOUT, 0);
}

/* The start snapshot is asked for, once. */
static void
session_start_snapshot(struct session *s)
{
	int64_t t0;

	if (s->start_snapped)
		return;
	s->start_snapped = true;
	t0 = loop_trace_begin();
	session_snap_start(s);
	loop_trace_end(t0, "start step git: the start snapshot's start");
}

/* ---- the start plan: each step fills S->setup or S ---- */

enum session_plan_rc {
	SESSION_PLAN_NEXT,      /* done: the next step follows */
	SESSION_PLAN_WAIT,      /* runs on the loop: session_plan_resume follows */
	SESSION_PLAN_FAIL       /* *CAUSE says why */
};

typedef enum session_plan_rc (*session_plan_fn)(struct session *,
    struct session_setup *, char **cause);

static void session_plan_resume(struct session *, const char *error);

static void
session_start_reads_free(struct session *s)
{
	snap_gitconf_free(s->start_gitconf);
	s->start_gitconf = NULL;
	snap_blind_read_free(s->start_blind);
	s->start_blind = NULL;
	s->start_reads = 0;
}

/* One of the start's reads of the project's git is over: the plan goes on once both are. */
static void
session_start_read_cb(void *arg)
{
	struct session *s = arg;

	if (--s->start_reads > 0)
		return;
	if (s->start_stopped) {
		session_start_stopped(s);
		return;
	}
	session_plan_resume(s, NULL);
}

/*
 * What the jail and the end's checks need of the project's git, read on
 * the loop before the jail's files are chosen: core.hooksPath and the
 * includes (what the jail keeps read-only) and the index marks (before the
 * command can make any). True if the start waits for them.
 */
static bool
session_start_read(struct session *s)
{
	int64_t t0;

	if (s->start_read)
		return false;
	s->start_read = true;
	t0 = loop_trace_begin();
	s->start_gitconf = snap_gitconf_start(s->ctx->base, s->project,
	    session_start_read_cb, s);
	loop_trace_end(t0, "start step git: the git config read");
	if (snap_gitconf_running(s->start_gitconf))
		s->start_reads++;
	t0 = loop_trace_begin();
	s->start_blind = snap_blind_read_start(s->ctx->base, s->project,
	    s->wt, &s->guard_blind, session_start_read_cb, s);
	loop_trace_end(t0, "start step git: the index marks' read");
	if (s->start_blind != NULL)
		s->start_reads++;
	return s->start_reads > 0;
}

/* The profile: its name is the session's. */
static enum session_plan_rc
session_plan_profile(struct session *s, struct session_setup *sp,
    char **cause)
{
	sp->agent = session_setup_profile(s->cf, sp->o->agent, cause);
	if (sp->agent == NULL)
		return SESSION_PLAN_FAIL;
	s->agent = xstrdup(sp->agent->name);
	session_pane_start(s, sp->o);
	return SESSION_PLAN_NEXT;
}

/* The project: the dir asked for, as the jail will see it. */
static enum session_plan_rc
session_plan_project(struct session *s, struct session_setup *sp,
    char **cause)
{
	const char *dir = sp->o->dir != NULL ? sp->o->dir : ".";

	if (jail_project(dir, &s->project, cause) == -1)
		return SESSION_PLAN_FAIL;
	s->cwd = session_cwd(sp->o->dir, s->project);
	return SESSION_PLAN_NEXT;
}

/*
 * The command: the one asked for, else the profile's, else the shell of
 * the client that asks (not the server's).
 */
static enum session_plan_rc
session_plan_command(struct session *s, struct session_setup *sp,
    char **cause)
{
	const struct config_agent *a = sp->agent;
	char *shell[2] = { NULL, NULL }, *const *command = sp->o->command;

	if ((command == NULL || command[0] == NULL) &&
	    (a->command == NULL || a->command[strspn(a->command, " \t")] ==
	    '\0')) {
		shell[0] = (char *)agent_user_shell(session_getenv(s, "SHELL"));
		command = shell;
	}
	if (session_setup_command(sp, &s->argv, a, command, s->project,
	    session_getenv(s, "PATH"), cause) == -1)
		return SESSION_PLAN_FAIL;
	session_asked(s, a, sp->o);
	return SESSION_PLAN_NEXT;
}

/* What must hold before anything is made: its sockets, the disk's room. */
static enum session_plan_rc
session_plan_guards(struct session *s, struct session_setup *sp,
    char **cause)
{
	if (session_guard_sockets(s, cause) == -1 ||
	    session_disk_check(s->ctx, s->project, cause) == -1)
		return SESSION_PLAN_FAIL;
	return SESSION_PLAN_NEXT;
}

/* A worktree of its own, if asked for (made later), else the shared tree's checks. */
static enum session_plan_rc
session_plan_worktree(struct session *s, struct session_setup *sp,
    char **cause)
{
	if (session_worktree_inside_check(s, cause) == -1)
		return SESSION_PLAN_FAIL;
	if (session_worktree_wanted(sp->o, sp->agent) ?
	    session_worktree_plan(s, sp->o, cause) == -1 :
	    session_worktree_shared_check(s, sp->o, cause) == -1)
		return SESSION_PLAN_FAIL;
	session_worktree_setup(s, sp->agent);
	s->command = strv_join_shell(s->asked.v);
	return SESSION_PLAN_NEXT;
}

/*
 * The session's dir, if an earlier session of its id left one: ids are
 * given again once gc removed the newest records, and a dir gc could not
 * remove whole (before 2026-12-05, an overlay's work dir of mode 000, as
 * an ordinary user) made every overlay mount there fail, and its stale
 * upper dirs would have read as this session's config changes.
 */
static int
session_dir_fresh(struct session *s, char **cause)
{
	char *dir = xprintf("%s/sessions/%lld", s->ctx->data_dir,
	    (long long)s->id);
	struct stat st;
	int rc = 0;

	if (lstat(dir, &st) == 0) {
		log_warnx("session %lld: removing %s, left by an earlier "
		    "session of that id", (long long)s->id, dir);
		if (path_remove_tree(dir) == -1 || lstat(dir, &st) == 0) {
			*cause = xprintf("cannot remove %s, left by an earlier "
			    "session %lld: %s; remove it by hand", dir,
			    (long long)s->id, strerror(errno));
			rc = -1;
		}
	}
	free(dir);
	return rc;
}

/* Its record: from here on it is a session the front ends see, starting. */
static enum session_plan_rc
session_plan_record(struct session *s, struct session_setup *sp,
    char **cause)
{
	if (session_record(s, cause) == -1 || session_dir_fresh(s,
	    cause) == -1)
		return SESSION_PLAN_FAIL;
	/* Recorded: another start on the tree now sees it. */
	session_tree_unlock(s);
	session_link(s);
	s->starting = true;
	store_session_set_live(s->ctx->st, s->id,
	    session_state_name(SESSION_STARTING));
	return SESSION_PLAN_NEXT;
}

/* The crashed sessions of its project are back: the plan goes on. */
static void
session_start_recovered(void *arg)
{
	struct session *s = arg;

	s->start_recovery = NULL;
	session_start_wait_free(s);
	/* The front end's starting line says the wait is over, and may let go. */
	session_add_ref(s);
	if (s->ev.waiting != NULL && !s->closing)
		s->ev.waiting(s->arg, s, NULL);
	if (!s->freed)
		session_plan_resume(s, NULL);
	session_remove_ref(s);
}

/*
 * A session of the same project that ended without agentmux is still
 * being brought back (the objects its git wrote go into the project's
 * .git): the start waits, on the loop, so that its snapshot and its jail
 * see the project as it will be.
 */
static enum session_plan_rc
session_plan_recovery(struct session *s, struct session_setup *sp,
    char **cause)
{
	int64_t crashed = -1;

	s->start_recovery = snap_history_recover_wait(s->project, &crashed,
	    session_start_recovered, s);
	if (s->start_recovery == NULL)
		return SESSION_PLAN_NEXT;
	s->start_waiting = xprintf("waiting for session %lld, which ended "
	    "without agentmux, to be brought back: the objects its git wrote "
	    "are going into the project's .git", (long long)crashed);
	store_event_add(s->ctx->st, s->id, "info", "start", "%s",
	    s->start_waiting);
	/* (Not told as a notice: the front end does not have it yet.) */
	log_debug("session %lld: %s", (long long)s->id, s->start_waiting);
	return SESSION_PLAN_WAIT;
}

/* The worktree is made (ERROR: NULL), on the loop. */
static void
session_start_made(struct session *s, const char *error)
{
	session_plan_resume(s, error);
}

static enum session_plan_rc
session_plan_worktree_make(struct session *s, struct session_setup *sp,
    char **cause)
{
	if (s->wt == NULL)
		return SESSION_PLAN_NEXT;
	if (session_worktree_make(s, session_start_made, cause) == -1)
		return SESSION_PLAN_FAIL;
	return SESSION_PLAN_WAIT;
}

/* Its proxy: policy, CA, secrets asked for (commands start on the loop). */
static enum session_plan_rc
session_plan_proxy(struct session *s, struct session_setup *sp,
    char **cause)
{
	if (session_proxy_prepare(s, sp->agent, cause) == -1)
		return SESSION_PLAN_FAIL;
	return SESSION_PLAN_NEXT;
}

/* The secret commands are done (on the loop). */
static void
session_start_secrets(struct session *s)
{
	session_plan_resume(s, NULL);
}

/*
 * The jail's environment holds the secrets' placeholders, so the jail
 * waits for their commands; the start snapshot does not: the tree is
 * saved while they run.
 */
static enum session_plan_rc
session_plan_secrets(struct session *s, struct session_setup *sp,
    char **cause)
{
	if (!session_proxy_secrets_wait(s, session_start_secrets))
		return SESSION_PLAN_NEXT;
	session_start_snapshot(s);
	return SESSION_PLAN_WAIT;
}

static void session_start_history_cb(void *);

/* The session's dir: $DATA/sessions/ID. */
static void
session_start_dir(struct session *s, struct session_setup *sp)
{
	if (sp->dir == NULL)
		sp->dir = xprintf("%s/sessions/%lld", s->ctx->data_dir,
		    (long long)s->id);
}

/*
 * The walks of the project's git dirs (its history kept) and of its run
 * dirs, each on a helper thread, begun once: as soon as the tree is
 * there (they need nothing the git reads or the environment give), so
 * that they run beside those, not after them. -1 with *CAUSE.
 */
static int
session_start_history_begin(struct session *s, struct session_setup *sp,
    char **cause)
{
	if (session_run_look_begin(s, cause) == -1)
		return -1;
	if (s->history_begun)
		return 0;
	s->history_begun = true;
	session_start_dir(s, sp);
	return session_history_begin(s, sp, session_start_history_cb,
	    cause) == -1 ? -1 : 0;
}

/*
 * The project's git config and index marks, read on the loop; the tree
 * is saved meanwhile, and the walks of the git dirs and run dirs begin.
 */
static enum session_plan_rc
session_plan_git(struct session *s, struct session_setup *sp, char **cause)
{
	if (session_start_history_begin(s, sp, cause) == -1)
		return SESSION_PLAN_FAIL;
	if (!session_start_read(s))
		return SESSION_PLAN_NEXT;
	session_start_snapshot(s);
	return SESSION_PLAN_WAIT;
}

/* The jail's environment: HOME, the shell, the proxy's, the secrets'. */
static enum session_plan_rc
session_plan_environment(struct session *s, struct session_setup *sp,
    char **cause)
{
	if (session_proxy_secrets_finish(s, cause) == -1)
		return SESSION_PLAN_FAIL;
	sp->home = path_home();
	sp->shell = agent_user_shell(session_getenv(s, "SHELL"));
	session_start_dir(s, sp);
	session_setup_env(sp, s, sp->agent, s->want_pty, SESSION_PROXY_PORT);
	session_proxy_env(s, &sp->env);
	return SESSION_PLAN_NEXT;
}

/* The history's git dirs are found and kept (on a helper thread): the plan goes on. */
static void
session_start_history_cb(void *arg)
{
	struct session *s = arg;

	s->history_job = NULL;
	/* Begun early: the plan has not come to it yet, and goes on by itself. */
	if (!s->history_waited)
		return;
	s->history_waited = false;
	if (s->start_stopped) {
		session_start_stopped(s);
		return;
	}
	session_plan_resume(s, NULL);
}

/*
 * The project's git history kept out of the jail's reach: the walk for
 * nested repositories (the whole project) and the keeping of refs and
 * reflogs run on a helper thread; the loop goes on meanwhile. The look
 * at the run dirs (another walk of the whole project) begins beside it.
 */
static enum session_plan_rc
session_plan_history(struct session *s, struct session_setup *sp,
    char **cause)
{
	if (session_start_history_begin(s, sp, cause) == -1)
		return SESSION_PLAN_FAIL;
	if (s->history_job == NULL)
		return SESSION_PLAN_NEXT;
	s->history_waited = true;
	return SESSION_PLAN_WAIT;
}

/* What the jail mounts: the profile's files, the history, the worktree. */
static enum session_plan_rc
session_plan_files(struct session *s, struct session_setup *sp,
    char **cause)
{
	char *git;

	if (session_setup_overlays(sp, sp->agent, cause) == -1 ||
	    session_history_start(s, sp, cause) == -1)
		return SESSION_PLAN_FAIL;
	if (s->wt != NULL && session_worktree_jail(s, sp, cause) == -1)
		return SESSION_PLAN_FAIL;
	if (session_guard_jail(s, sp, cause) == -1)
		return SESSION_PLAN_FAIL;
	/* Its project's (or shared) git dir's top is read only in the jail: nothing the end finds made there is the session's. */
	if (s->wt != NULL)
		snap_history_top_ro(s->history, s->wt->common);
	else if (s->jailgit != NULL) {
		git = xprintf("%s/.git", s->project);
		snap_history_top_ro(s->history, git);
		free(git);
	}
	/* The files the user's tools run: read-only in the jail. */
	session_protect(s, sp->agent, &sp->protect);
	/* ...and reached by no other name. */
	snap_hardlink_protect(s->project, s->protected.v, s->protected.n,
	    &sp->notices);
	return SESSION_PLAN_NEXT;
}

/* The start's look at the run dirs: copies of what it needs, and what it finds. */
struct session_run_look {
	char *project;
	struct strv more;            /* [jail] watch_ignored */
	int64_t limit;               /* [jail] scan_limit */
	atomic_bool stop;            /* the start stopped: no deeper */
	struct snap_run r;
};

static void
session_run_look_free(struct session_run_look *rl)
{
	if (rl == NULL)
		return;
	free(rl->project);
	strv_free(&rl->more);
	snap_run_free(&rl->r);
	free(rl);
}

/* The look itself, on a helper thread: the whole project searched. */
static void
session_run_look_work(void *arg)
{
	struct session_run_look *rl = arg;

	snap_run_look(rl->project, rl->more.v, rl->more.n, rl->limit, true,
	    &rl->stop, &rl->r);
}

/* The start's look at the run dirs is over (its job freed): kept, and the plan goes on. */
static void
session_run_look_cb(void *arg)
{
	struct session *s = arg;
	struct session_run_look *rl = s->run_look;

	s->run_look_job = NULL;
	s->run_look = NULL;
	snap_run_free(&s->run_start);
	s->run_start = rl->r;
	snap_run_init(&rl->r);
	session_run_look_free(rl);
	/* Begun early: the plan has not come to it yet, and goes on by itself. */
	if (!s->run_look_waited)
		return;
	s->run_look_waited = false;
	if (s->start_stopped) {
		session_start_stopped(s);
		return;
	}
	session_plan_resume(s, NULL);
}

/* The start stops: its look at the run dirs is waited for, and what it found dropped. */
static void
session_run_look_stop(struct session *s)
{
	if (s->run_look_job == NULL)
		return;
	/* Begun beside the history's walk: a stop there need not wait for all of it. */
	atomic_store(&s->run_look->stop, true);
	thread_job_free(s->run_look_job);
	s->run_look_job = NULL;
	session_run_look_free(s->run_look);
	s->run_look = NULL;
}

/*
 * The ignored programs the user runs (a venv's bin, node_modules/.bin):
 * fingerprinted before the jail is made, compared at the end. The search
 * for them walks the whole project: on a helper thread, on copies of what
 * it needs, while the loop goes on. It begins with the history's walk
 * (the two walks side by side), so before the files step breaks the
 * hard links of the files the user's tools run: a protected file that
 * is also in a run dir (neither list has such a file by default) would
 * read as changed at the end. -1 with *CAUSE if it cannot.
 */
static int
session_run_look_begin(struct session *s, char **cause)
{
	struct session_run_look *rl;
	char *err = NULL;
	size_t i;

	if (s->run_look_begun)
		return 0;
	s->run_look_begun = true;
	rl = xcalloc(1, sizeof *rl);
	rl->project = xstrdup(s->project);
	strv_init(&rl->more);
	for (i = 0; i < s->cf->jail.watch_ignored.n; i++)
		strv_add(&rl->more, s->cf->jail.watch_ignored.v[i]);
	rl->limit = s->cf->jail.scan_limit;
	atomic_init(&rl->stop, false);
	snap_run_init(&rl->r);
	s->run_look = rl;
	s->run_look_job = thread_job_start(s->ctx->base,
	    session_run_look_work, rl, session_run_look_cb, s, &err);
	if (s->run_look_job == NULL) {
		*cause = xprintf("cannot look at the project's ignored dirs "
		    "whose programs you run: %s", err);
		free(err);
		session_run_look_free(rl);
		s->run_look = NULL;
		return -1;
	}
	return 0;
}

/* The look at the run dirs is over, or waited for. */
static enum session_plan_rc
session_plan_runfiles(struct session *s, struct session_setup *sp,
    char **cause)
{
	(void)sp;
	if (session_run_look_begin(s, cause) == -1)
		return SESSION_PLAN_FAIL;
	if (s->run_look_job == NULL)
		return SESSION_PLAN_NEXT;
	s->run_look_waited = true;
	return SESSION_PLAN_WAIT;
}

/* Its limits: the session's, else the profile's, else the config's. */
static enum session_plan_rc
session_plan_limits(struct session *s, struct session_setup *sp,
    char **cause)
{
	session_limits(&sp->jc.limits, s->cf, sp->agent, s);
	return SESSION_PLAN_NEXT;
}

/* The jail's configuration, all of it here, from what the plan holds. */
static enum session_plan_rc
session_plan_jail_conf(struct session *s, struct session_setup *sp,
    char **cause)
{
	struct jail_conf *jc = &sp->jc;

	jc->project = s->project;
	jc->cwd = s->cwd;
	jc->argv = s->argv.v;
	jc->envp = sp->env.v;
	jc->home = sp->home;
	jc->ca_bundle = session_proxy_ca_bundle(s->ctx);
	session_setup_jail(sp, jc);
	jc->pty = s->want_pty;
	jc->rows = s->rows;
	jc->cols = s->cols;
	jc->proxy_port = SESSION_PROXY_PORT;
	jc->transparent = s->cf->proxy.transparent;
	jc->transparent_port = SESSION_PROXY_PORT + 1;
	jc->hold = true;
	jc->protect = sp->protect.v;
	jc->nprotect = sp->protect.n;
	return SESSION_PLAN_NEXT;
}

/*
 * The jail is made (and moved into its cgroups), held until the tree is
 * saved; the session keeps what it needs of the plan.
 */
static enum session_plan_rc
session_plan_jail(struct session *s, struct session_setup *sp, char **cause)
{
	size_t i;

	if ((s->jail = jail_start(&sp->jc, cause)) == NULL) {
		session_history_hint(s, cause);
		return SESSION_PLAN_FAIL;
	}
	strv_free(&s->hfiles);
	strv_free(&s->hcopies);
	s->hfiles = sp->hf_rel;
	s->hcopies = sp->hf_base;
	strv_init(&sp->hf_rel);
	strv_init(&sp->hf_base);
	for (i = 0; i < sp->notices.n; i++) {
		store_event_add(s->ctx->st, s->id, "warn", "overlay", "%s",
		    sp->notices.v[i]);
		if (s->ev.notice != NULL)
			s->ev.notice(s->arg, s, "warn", sp->notices.v[i]);
	}
	for (i = 0; i < sp->alerts.n; i++) {
		store_event_add(s->ctx->st, s->id, "error", "history", "%s",
		    sp->alerts.v[i]);
		if (s->ev.notice != NULL)
			s->ev.notice(s->arg, s, "alert", sp->alerts.v[i]);
	}
	strv_free(&s->env);
	s->env = sp->env;
	strv_init(&sp->env);
	return SESSION_PLAN_NEXT;
}

/* The start snapshot (if the secrets did not start it); the command waits for it and the jail, on the loop. */
static enum session_plan_rc
session_plan_start(struct session *s, struct session_setup *sp,
    char **cause)
{
	session_start_reads_free(s);
	session_start_snapshot(s);
	session_start_watch(s);
	return SESSION_PLAN_NEXT;
}

/*
 * The start, top to bottom (as bubblewrap's setup reads): profile,
 * project, command, guards, worktree, record; then what waits on the loop
 * (a crash recovery, the worktree made, the secret commands, the git
 * reads); then the jail's environment, its git history kept (on a helper
 * thread), files and limits, its configuration, and its start.
 */
static const struct {
	const char *what;
	session_plan_fn fn;
} session_plan[] = {
	{ "profile", session_plan_profile },
	{ "project", session_plan_project },
	{ "command", session_plan_command },
	{ "guards", session_plan_guards },
	{ "worktree", session_plan_worktree },
	{ "record", session_plan_record },
	{ "recovery", session_plan_recovery },
	{ "worktree made", session_plan_worktree_make },
	{ "proxy", session_plan_proxy },
	{ "secrets", session_plan_secrets },
	{ "git", session_plan_git },
	{ "environment", session_plan_environment },
	{ "history", session_plan_history },
	{ "files", session_plan_files },
	{ "run files", session_plan_runfiles },
	{ "limits", session_plan_limits },
	{ "jail configuration", session_plan_jail_conf },
	{ "jail", session_plan_jail },
	{ "start", session_plan_start },
};

/*
 * Runs the plan from its next step until a step waits on the loop (0),
 * fails (-1 with *CAUSE) or the plan is done (0: the plan is freed).
 */
static int
session_plan_run(struct session *s, char **cause)
{
	struct session_setup *sp = s->setup;
	enum session_plan_rc rc;
	const char *what;
	int64_t t0;

	while (sp->step < nitems(session_plan)) {
		what = session_plan[sp->step].what;
		log_debug("session %lld: start: %s", (long long)s->id, what);
		t0 = loop_trace_begin();
		/* Past it first: a wait may end at once, resuming the plan. */
		rc = session_plan[sp->step++].fn(s, sp, cause);
		loop_trace_end(t0, "start step %s", what);
		if (rc == SESSION_PLAN_FAIL)
			return -1;
		if (rc == SESSION_PLAN_WAIT)
			return 0;   /* SP may be gone: the plan went on without us */
	}
	session_setup_free(sp);
	free(sp);
	s->setup = NULL;
	return 0;
}

/*
 * Terminated or closed while it started: it fails, saying what of it
 * stays, and what failed meanwhile (ERROR, if not NULL: the step it
 * waited for, such as git worktree add, which may have failed on its own).
 */
static void
session_start_stopped_error(struct session *s, const char *error)
{
	const char *why = s->closing ? "closed before its command started" :
	    SESSION_START_STOPPED;
	struct buf b;

	buf_init(&b);
	buf_adds(&b, why);
	if (error != NULL && strcmp(error, SNAP_WORKTREE_STOPPED) != 0)
		buf_printf(&b, "; meanwhile, %s", error);
	if (s->wt != NULL && s->wt->admin != NULL)
		buf_printf(&b, "; its worktree %s stays, on branch %s (agentmux "
		    "discard %lld removes both)", s->wt->path, s->wt->branch,
		    (long long)s->id);
	session_start_failed(s, b.data);
	buf_free(&b);
}

/* Terminated or closed while it started: it fails, saying what of it stays. */
static void
session_start_stopped(struct session *s)
{
	session_start_stopped_error(s, NULL);
}

/*
 * A step that ran on the loop is over (ERROR: why it failed): the plan
 * goes on, with the profile as the config has it now.
 */
static void
session_plan_resume(struct session *s, const char *error)
{
	char *cause = NULL;

	if (s->start_stopped) {
		session_start_stopped_error(s, error);
		return;
	}
	if (s->closing || error != NULL) {
		session_start_fail(s, error);
		return;
	}
	if ((s->setup->agent = config_agent(s->cf, s->agent)) == NULL)
		cause = xprintf("agent %s is no longer configured", s->agent);
	if (cause != NULL || session_plan_run(s, &cause) == -1) {
		session_start_fail(s, cause);
		free(cause);
	}
}

struct session *
session_start(struct session_ctx *ctx, const struct session_opts *o,
    const struct session_events *ev, void *arg, char **cause)
{
	struct session *s;

	if (o->listen_fd != -1)
		return session_start_listener(ctx, o, ev, arg, cause);
	s = session_new(ctx, o, ev, arg);
	s->setup = xcalloc(1, sizeof *s->setup);
	session_setup_init(s->setup);
	s->setup->o = o;
	if (session_plan_run(s, cause) == 0) {
		if (s->setup != NULL)
			s->setup->o = NULL;
		return s;
	}
	if (s->id != -1) {
		store_session_end(ctx->st, s->id, "failed", -1, *cause);
		s->ended = true;
	}
	session_free(s);
	return NULL;
}

bool
session_starting(struct session *s)
{
	return s->starting;
}

const char *
session_start_waiting(struct session *s)
{
	return s->starting ? s->start_waiting : NULL;
}

void
session_add_ref(struct session *s)
{
	s->references++;
}

void
session_remove_ref(struct session *s)
{
	if (--s->references > 0)
		return;
	free(s);
}

void
session_free(struct session *s)
{
	bool ran;

	if (s == NULL || s->freed)
		return;
	s->freed = true;
	ran = s->jail != NULL;
	session_tree_unlock(s);
	/* The front end lets go of it: no event reaches it from here on. */
	s->done_told = true;
	session_unlink(s);
	session_start_events_free(s);
	session_start_wait_free(s);
	session_start_reads_free(s);
	session_history_begin_stop(s);
	session_run_look_stop(s);
	buf_free(&s->start_in);
	session_proxy_secrets_drop(s);
	if (s->setup != NULL) {
		session_setup_free(s->setup);
		free(s->setup);
	}
	session_proxy_end(s);
	session_ports_end(s);
	if (s->kill_ev != NULL)
		event_free(s->kill_ev);
	if (s->wall_ev != NULL)
		event_free(s->wall_ev);
	if (s->keys_ev != NULL)
		event_free(s->keys_ev);
	buf_free(&s->keys);
	session_disk_free(s);
	session_state_free(s);
	session_pane_free(s);
	if (s->pty != NULL)
		bufferevent_free(s->pty);
	if (s->out != NULL)
		bufferevent_free(s->out);
	if (s->err != NULL)
		bufferevent_free(s->err);
	if (s->in != NULL)
		bufferevent_free(s->in);
	if (s->jail != NULL && !s->reaped) {
		/* Whatever still runs goes now; its end is recorded as such. */
		jail_kill(s->jail);
		jail_free(s->jail);
		s->jail = NULL;
		if (!s->ended && s->id != -1)
			store_session_end(s->ctx->st, s->id,
			    session_end_state(s), 128 + SIGKILL, s->closing ?
			    NULL : "ended by agentmux");
	} else if (!s->ended && s->id != -1)
		store_session_end(s->ctx->st, s->id, session_end_state(s),
		    s->status, NULL);
	/* The jail's git dir's end, if it runs, before the history's. */
	session_guard_jail_end_wait(s);
	session_history_stop(s);
	session_history_wait(s);
	session_guard_stop(s);
	session_finish_release(s);
	/* Before the end snapshot carries out config_persist. */
	session_files_capture(s);
	session_snap_free(s, ran);
	session_files_free(s);
	jail_free(s->jail);
	if (s->listen_fd != -1)
		close(s->listen_fd);
	strv_free(&s->argv);
	strv_free(&s->asked);
	strv_free(&s->env);
	session_env_free(s);
	strv_free(&s->allow);
	strv_free(&s->deny);
	strv_free(&s->kept);
	strv_free(&s->protect);
	strv_free(&s->protected);
	free(s->hooks);
	snap_jailgit_free(s->jailgit);
	strv_free(&s->gitfiles);
	strv_free(&s->start_gitdirs);
	snap_dirmap_unref(s->start_dirs);
	free(s->guard_gitids);
	strv_free(&s->watched);
	snap_run_free(&s->run_start);
	strv_free(&s->guard_execs);
	strv_free(&s->guard_nested);
	/* An end's read still running compares with it, and frees it. */
	if (!s->guard_blind_ending) {
		snap_blind_free(&s->guard_blind);
		snap_blind_free(&s->guard_blind_now);
	}
	free(s->kind);
	free(s->agent);
	free(s->project);
	session_worktree_free(s);
	free(s->cwd);
	free(s->command);
	free(s->end_reason);
	s->agent = s->project = s->command = NULL;
	session_remove_ref(s);
}

/* ---- what front ends ask ---- */

int64_t
session_id(struct session *s)
{
	return s->id;
}

const char *
session_agent(struct session *s)
{
	return s->agent;
}

const char *
session_project(struct session *s)
{
	return s->project;
}

const char *
session_command(struct session *s)
{
	return s->command;
}

bool
session_running(struct session *s)
{
	return !s->ended;
}

bool
session_budget_reached(struct session *s)
{
	return s->budget_told;
}

int
session_exit_status(struct session *s)
{
	return s->ended ? s->status : -1;
}

/*
 * Sends what was written to the jail this turn of the loop (the keys of
 * one read of the terminal, a terminal's reply): at once what the jail
 * takes when nothing is queued before it, one write for them all rather
 * than a round of the loop to find the pty writable; the rest, or an
 * error to report, goes through the bufferevent.
 */
static void
session_keys_flush(struct session *s)
{
	struct bufferevent *bev = s->pty != NULL ? s->pty : s->in;
	const char *data = s->keys.data;
	size_t len = s->keys.len;
	ssize_t n;

	if (bev != NULL && len > 0) {
		if (evbuffer_get_length(bufferevent_get_output(bev)) == 0) {
			while ((n = write(bufferevent_getfd(bev), data,
			    len)) == -1 && errno == EINTR)
				;
			if (n > 0) {
				data += n;
				len -= (size_t)n;
			}
		}
		if (len > 0)
			(void)bufferevent_write(bev, data, len);
	}
	/* Kept for the next keys; a paste's room is let go. */
	if (s->keys.len > 65536) {
		buf_free(&s->keys);
		buf_init(&s->keys);
	} else
		buf_reset(&s->keys);
}

static void
session_keys_cb(evutil_socket_t fd, short what, void *arg)
{
	session_keys_flush(arg);
}

int
session_write(struct session *s, const void *data, size_t len)
{
	struct bufferevent *bev = s->pty != NULL ? s->pty : s->in;

	if (s->starting && !s->in_closing) {
		/* Kept until the command runs (keys typed while it starts). */
		buf_add(&s->start_in, data, len);
		return 0;
	}
	if (bev == NULL || s->in_closing) {
		errno = EPIPE;
		return -1;
	}
	session_hint_input(s);
	session_state_activity(s);
	if (len == 0)
		return 0;
	if (s->keys_ev == NULL &&
	    (s->keys_ev = event_new(s->ctx->base, -1, 0, session_keys_cb,
	    s)) == NULL)
		fatalx("cannot create an event");
	if (s->keys.len == 0)
		event_active(s->keys_ev, EV_TIMEOUT, 0);
	buf_add(&s->keys, data, len);
	return 0;
}

size_t
session_input_pending(struct session *s)
{
	struct bufferevent *bev = s->pty != NULL ? s->pty : s->in;

	if (s->starting)
		return s->start_in.len;
	return bev != NULL ? s->keys.len +
	    evbuffer_get_length(bufferevent_get_output(bev)) : 0;
}

void
session_close_input(struct session *s)
{
	if (s->starting) {
		s->in_closing = true;   /* once what was written meanwhile is */
		return;
	}
	if (s->in == NULL)
		return;
	session_keys_flush(s);
	s->in_closing = true;
	session_in_drained(s->in, s);
}

void
session_resize(struct session *s, unsigned short rows, unsigned short cols)
{
	session_pane_resize(s, rows, cols);
	s->rows = rows;
	s->cols = cols;
	if (s->jail != NULL && !s->reaped && !s->starting)
		jail_resize(s->jail, rows, cols);
}

static void
session_kill_cb(evutil_socket_t fd, short what, void *arg)
{
	struct session *s = arg;

	if (s->jail != NULL && !s->reaped)
		jail_kill(s->jail);
}

/* A paused session is resumed to be ended: it acts on its signals as it would. */
static void
session_unpause(struct session *s)
{
	char *cause = NULL;

	if (session_paused(s) && session_pause(s, false, &cause) == -1) {
		log_warnx("session %lld: %s", (long long)s->id, cause);
		free(cause);
		jail_kill(s->jail);
	}
}

/*
 * Terminated or closed before its jail is made, a turn later (the caller
 * may be a front end's walk over its panes, which the start's failure
 * would change under it): what the start waits on that can be dropped is
 * (another session's recovery, the secret commands, the worktrees' lock),
 * and it fails now; else it fails where it would go on, once the git or
 * helper thread it waits for is done (the worktree's git worktree add is
 * not cut short).
 */
static void
session_start_stop_cb(evutil_socket_t fd, short what, void *arg)
{
	struct session *s = arg;

	event_free(s->start_stop_ev);
	s->start_stop_ev = NULL;
	if (!s->starting || s->jail != NULL)
		return;
	if (s->wt_make != NULL) {
		/*
		 * Its git runs on: said, or a ^C would seem to do nothing (a
		 * copy of .worktreeinclude's files stops at its next slice,
		 * unsaid). A stop told at once fails the start: held.
		 */
		session_add_ref(s);
		if (snap_worktree_make_stop(s->wt_make) && !s->freed &&
		    s->ev.notice != NULL)
			s->ev.notice(s->arg, s, "warn", "stopping once its "
			    "worktree's git is done (git worktree add is not "
			    "cut short)");
		session_remove_ref(s);
	} else if (s->start_recovery != NULL || s->secrets_pending > 0)
		session_start_stopped(s);
}

/* Its jail is not made yet: the start stops (see session_start_stop_cb). */
static void
session_start_stop(struct session *s)
{
	struct timeval now = { 0, 0 };

	s->start_stopped = true;
	if (s->start_stop_ev != NULL)
		return;
	s->start_stop_ev = evtimer_new(s->ctx->base, session_start_stop_cb, s);
	if (s->start_stop_ev == NULL)
		fatalx("cannot make a timer");
	evtimer_add(s->start_stop_ev, &now);
}

/*
 * The go is sent, so the command may run already: a stop waits for the
 * jail to say it runs, then goes as for a running command (SIGTERM, its
 * grace). Killing the jail there ended a command that had run, with no
 * word, as "exited 137". A jail that never says so fails its start.
 */
static bool
session_start_go_stop(struct session *s, int how)
{
	if (!s->starting || !s->start_go || s->jail == NULL || s->reaped)
		return false;
	if (how > s->start_go_stop)
		s->start_go_stop = how;
	return true;
}

void
session_terminate(struct session *s)
{
	if (s->starting && s->jail == NULL) {
		session_start_stop(s);
		return;
	}
	if (session_start_go_stop(s, 1))
		return;
	if (s->jail == NULL || s->reaped)
		return;
	/* Nothing of it runs yet that could act on a signal. */
	if (s->starting) {
		s->start_stopped = true;
		jail_kill(s->jail);
		return;
	}
	/* A frozen command cannot act on SIGTERM: it goes at once. */
	if (session_disk_frozen(s)) {
		jail_kill(s->jail);
		return;
	}
	session_unpause(s);
	session_signal_then_kill(s, SIGTERM);
}

void
session_close(struct session *s)
{
	s->closing = true;
	if (s->starting && s->jail == NULL) {
		session_start_stop(s);
		return;
	}
	if (session_start_go_stop(s, 2))
		return;
	if (s->jail == NULL || s->reaped)
		return;
	if (s->starting || session_disk_frozen(s)) {
		s->start_stopped = s->starting;
		jail_kill(s->jail);
		return;
	}
	session_unpause(s);
	/* What a terminal's hang-up sends: shells end on it, not on SIGTERM. */
	jail_signal(s->jail, SIGHUP);
	session_signal_then_kill(s, SIGTERM);
}

bool
session_agent_installed(const struct config *cf, const char *agent,
    char **cause)
{
	const struct config_agent *a = config_agent(cf, agent);
	struct agent_install in;

	if (a == NULL) {
		*cause = xprintf("unknown agent %s", agent);
		return false;
	}
	if (agent_resolve(a, NULL, getenv("PATH"), &in, cause) == -1)
		return false;
	agent_install_free(&in);
	return true;
}

bool
session_closing(struct session *s)
{
	return s->closing;
}

bool
session_making_worktree(const struct session *s)
{
	return s->starting && s->wt_make != NULL;
}

char *const *
session_kept_rules(struct session *s)
{
	return s->kept.v;
}

/* Sends SIG, and SIGKILL once the grace period is over. */
static void
session_signal_then_kill(struct session *s, int sig)
{
	struct timeval tv = { SESSION_TERM_GRACE_SEC, 0 };

	jail_signal(s->jail, sig);
	if (s->kill_ev == NULL)
		s->kill_ev = evtimer_new(s->ctx->base, session_kill_cb, s);
	if (!evtimer_pending(s->kill_ev, NULL))
		evtimer_add(s->kill_ev, &tv);
}
