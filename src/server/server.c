/* The server's process: it owns the event loop, the sessions and the dashboard, and takes clients' terminals. */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "core/core.h"
#include "session/session.h"
#include "server-int.h"
#include "server.h"
#include "tui/tui.h"

extern char **environ;

/* A server with no session and no client ends; one just started waits this long for its first client. */
#define SERVER_GRACE_US (10 * 1000 * 1000)
#define SERVER_CLIENTS_MAX 64
/* How long an attached terminal may read nothing of what waits for it before it is detached. */
#define SERVER_STUCK_US (10 * 1000 * 1000)
/* How long a connection may take to send its hello. */
#define SERVER_HELLO_S 3

struct server;

/* One connection from a client. */
struct server_client {
	struct server *sv;
	int fd;
	struct event *ev;
	struct event *hello_ev;   /* drops it if no hello comes in time */
	pid_t pid;
	struct tui_client *tc; /* its view, while its terminal is attached */
	bool can_suspend;         /* its hello said SUSPEND=1 */

	/* agentmux wait: the session and state it waits for, until its timer */
	int64_t wait_id;          /* 0: not waiting */
	char *wait_for;
	struct event *wait_ev;
};

struct server {
	struct event_base *base;
	struct session_ctx *ctx;
	struct tui *t;
	int lfd;
	struct event *accept_ev;
	struct event *check_ev;
	struct server_client *clients[SERVER_CLIENTS_MAX];
	size_t nclients;
	int64_t started_us;
	struct config **cfs;          /* every config loaded, the newest last:
	                                 live sessions point into the older */
	size_t ncfs;
	char *cf_hash;                /* the newest's file (server_config_hash) */
	time_t cf_time;               /* when it was loaded */
	bool killed;                  /* by agentmux kill-server */
	int dirfd;                    /* the socket's directory */
	const char *name;             /* the socket's name there */
	struct stat sock_st;          /* the socket file this server made */
	bool sock_known;
};

static void server_check_arm(struct server *);
static void server_pid_write(int dirfd, const char *name, bool remove);

/*
 * Whether NAME in the socket's directory is still the socket this server
 * made: once it stopped listening, a client may start a new server there,
 * whose socket and pid file are not this one's to remove.
 */
static bool
server_sock_ours(const struct server *sv)
{
	struct stat st;

	return sv->sock_known && fstatat(sv->dirfd, sv->name, &st,
	    AT_SYMLINK_NOFOLLOW) == 0 && st.st_dev == sv->sock_st.st_dev &&
	    st.st_ino == sv->sock_st.st_ino;
}

/*
 * Ending (kill-server): new clients find no server from here on and start
 * one, instead of attaching to this one while it ends its sessions.
 */
static void
server_stop_listening(struct server *sv)
{
	if (sv->lfd == -1)
		return;
	event_del(sv->accept_ev);
	if (server_sock_ours(sv)) {
		if (unlinkat(sv->dirfd, sv->name, 0) == -1)
			log_warn("cannot remove the socket %s", sv->name);
		server_pid_write(sv->dirfd, sv->name, true);
	}
	sv->sock_known = false;
	close(sv->lfd);
	sv->lfd = -1;
}

static void
server_client_free(struct server_client *c)
{
	struct server *sv = c->sv;
	size_t i;

	for (i = 0; i < sv->nclients; i++) {
		if (sv->clients[i] == c) {
			sv->clients[i] = sv->clients[--sv->nclients];
			break;
		}
	}
	event_free(c->ev);
	event_free(c->hello_ev);
	if (c->wait_ev != NULL)
		event_free(c->wait_ev);
	free(c->wait_for);
	close(c->fd);
	free(c);
	/* The last one gone may leave nothing to do. */
	server_check_arm(sv);
}

/* Ends the server once nothing is left for it to do. */
static void
server_check(struct server *sv)
{
	if (sv->nclients > 0 || tui_sessions_running(sv->t) > 0)
		return;
	if (util_mono_us() - sv->started_us < SERVER_GRACE_US)
		return;
	log_info("no sessions and no clients: the server ends");
	event_base_loopexit(sv->base, NULL);
}

static void server_client_exit(struct server_client *, int, const char *);

/*
 * A terminal that has read nothing of what waits for it for so long (a
 * stopped ssh, a frozen terminal emulator) is let go: the sessions go on,
 * and the user reattaches from one that reads. Each client on its own.
 */
static void
server_stuck_one(struct server *sv, struct server_client *c)
{
	size_t n;
	char *text;

	if (c->tc == NULL || tui_stuck_us(sv->t, c->tc) < SERVER_STUCK_US)
		return;
	log_warnx("client %ld detached: its terminal has read nothing for "
	    "%d s", (long)c->pid, SERVER_STUCK_US / 1000000);
	tui_detach(sv->t, c->tc);
	c->tc = NULL;
	n = tui_sessions_running(sv->t);
	text = xprintf("[detached (from agentmux, %zu session%s running): "
	    "the terminal read nothing for %d s]\n", n, n == 1 ? "" : "s",
	    SERVER_STUCK_US / 1000000);
	server_client_exit(c, 0, text);
	free(text);
}

static void
server_stuck(struct server *sv)
{
	struct server_client *v[SERVER_CLIENTS_MAX];
	size_t i, n = 0;

	/* Exiting a client may free it: walk a copy. */
	for (i = 0; i < sv->nclients; i++) {
		if (sv->clients[i]->tc != NULL)
			v[n++] = sv->clients[i];
	}
	for (i = 0; i < n; i++)
		server_stuck_one(sv, v[i]);
}

/* True while an attached terminal leaves bytes unread. */
static bool
server_any_stuck(struct server *sv)
{
	size_t i;

	for (i = 0; i < sv->nclients; i++) {
		if (sv->clients[i]->tc != NULL &&
		    tui_stuck_us(sv->t, sv->clients[i]->tc) > 0)
			return true;
	}
	return false;
}

/*
 * The check runs each second only while it has something to wait for:
 * the grace of a new server, a terminal leaving bytes unread, and once
 * after a client left (a session's end checks at once, from the change
 * callback). An idle server never wakes for it.
 */
static void
server_check_cb(evutil_socket_t fd, short what, void *arg)
{
	struct server *sv = arg;

	server_stuck(sv);
	server_check(sv);
	if (util_mono_us() - sv->started_us >= SERVER_GRACE_US &&
	    !server_any_stuck(sv))
		event_del(sv->check_ev);
}

static void
server_check_arm(struct server *sv)
{
	struct timeval tv = { 1, 0 };

	if (sv->check_ev != NULL && !evtimer_pending(sv->check_ev, NULL))
		event_add(sv->check_ev, &tv);
}

/* A terminal started to leave bytes unread: it is looked at each second. */
static void
server_stuck_cb(void *arg)
{
	server_check_arm(arg);
}

/* What a detached client prints. */
static char *
server_detached_text(struct server *sv)
{
	size_t n = tui_sessions_running(sv->t);

	return xprintf("[detached (from agentmux, %zu session%s running)]\n",
	    n, n == 1 ? "" : "s");
}

/* Tells client C to exit with CODE and TEXT, and lets it go. */
static void
server_client_exit(struct server_client *c, int code, const char *text)
{
	if (server_msg_exit(c->fd, code, text) == -1)
		log_warn("cannot tell client %ld to exit", (long)c->pid);
	server_client_free(c);
}

/* The client whose terminal view TC is, or NULL. */
static struct server_client *
server_attached(struct server *sv, const struct tui_client *tc)
{
	size_t i;

	for (i = 0; i < sv->nclients; i++) {
		if (sv->clients[i]->tc == tc)
			return sv->clients[i];
	}
	return NULL;
}

/* The dashboard let a client's terminal go (its detach key, or a hang-up): only that client exits. */
static void
server_detached_cb(void *arg, struct tui_client *tc, const char *why)
{
	struct server *sv = arg;
	struct server_client *c = server_attached(sv, tc);
	char *text;

	if (c == NULL)
		return;
	c->tc = NULL;
	if (why != NULL)
		log_info("client %ld detached: %s", (long)c->pid, why);
	text = server_detached_text(sv);
	server_client_exit(c, 0, text);
	free(text);
	server_check(sv);
}

/*
 * prefix C-z: the dashboard gives client TC's terminal back and the
 * client stops as a job; its SERVER_MSG_WAKEUP ('fg') takes it again.
 */
static int
server_suspend_cb(void *arg, struct tui_client *tc, char **cause)
{
	struct server *sv = arg;
	struct server_client *c = server_attached(sv, tc);

	if (c == NULL || !c->can_suspend) {
		*cause = xstrdup("this client cannot be suspended: it is older "
		    "than the server; detach (prefix d) and attach again with "
		    "this agentmux");
		return -1;
	}
	/* Already suspended (a second prefix C-z in one read): nothing to send. */
	if (!tui_suspend(sv->t, tc))
		return 0;
	if (server_msg_send(c->fd, SERVER_MSG_SUSPEND, NULL, 0, NULL, 0) ==
	    -1) {
		*cause = xprintf("cannot suspend the client: %s",
		    strerror(errno));
		tui_resume(sv->t, tc);
		return -1;
	}
	log_info("client %ld suspended", (long)c->pid);
	return 0;
}

/* The value of KEY in a hello's KEY=VALUE strings, or NULL. */
static const char *
server_hello_get(const struct strv *kv, const char *key)
{
	size_t i, n = strlen(key);

	for (i = 0; i < kv->n; i++) {
		if (strncmp(kv->v[i], key, n) == 0 && kv->v[i][n] == '=')
			return kv->v[i] + n + 1;
	}
	return NULL;
}

/* The ARG=s of a hello, in order. */
static void
server_hello_args(const struct strv *kv, struct strv *argv)
{
	size_t i;

	for (i = 0; i < kv->n; i++) {
		if (strncmp(kv->v[i], "ARG=", 4) == 0)
			strv_add(argv, kv->v[i] + 4);
	}
}

/*
 * The client's environment, its ENV=s: the session takes its variables
 * and secrets from the client that asks for it, never from the server,
 * whose environment is that of the client that happened to start it.
 */
static void
server_hello_env(const struct strv *kv, struct strv *env)
{
	size_t i;

	for (i = 0; i < kv->n; i++) {
		if (strncmp(kv->v[i], "ENV=", 4) == 0 &&
		    strchr(kv->v[i] + 4, '=') != NULL)
			strv_add(env, kv->v[i] + 4);
	}
}

/* Frees ENV, wiping it first: a client's environment holds its secrets. */
static void
server_strv_wipe(struct strv *env)
{
	size_t i;

	for (i = 0; i < env->n; i++)
		explicit_bzero(env->v[i], strlen(env->v[i]));
	strv_free(env);
}

/*
 * The path of directory FD as the server sees it (its /proc/self/fd
 * link), checked to lead to that directory; NULL with *CAUSE.
 */
static char *
server_cwd_path(int fd, char **cause)
{
	struct stat st, at;
	char link[64], path[PATH_MAX];
	ssize_t n;

	if (fstat(fd, &st) == -1 || !S_ISDIR(st.st_mode)) {
		*cause = xstrdup("the client's current directory is not a "
		    "directory");
		return NULL;
	}
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	if ((n = readlink(link, path, sizeof path - 1)) == -1) {
		*cause = xprintf("cannot read the client's current directory "
		    "through %s: %s (is /proc mounted?)", link,
		    strerror(errno));
		return NULL;
	}
	path[n] = '\0';
	/* Removed, or out of the server's reach: the path is not it. */
	if (path[0] != '/' || stat(path, &at) == -1 || at.st_dev != st.st_dev ||
	    at.st_ino != st.st_ino) {
		*cause = xstrdup("it was removed, or the server cannot reach "
		    "it by a path");
		return NULL;
	}
	return xstrdup(path);
}

/*
 * The client's current directory, passed as the last descriptor when
 * its hello says CWDFD: CWD becomes its path as the server sees it, or
 * CWD_ERROR why there is none (said only when a session needs it).
 */
static void
server_hello_cwd(struct strv *kv, int *fds, int *nfds)
{
	char *path, *cause = NULL, *q;

	/* Only the directory the descriptor is: never a path the client names. */
	strv_setenv(kv, "CWD", "");
	if (server_hello_get(kv, "CWDFD") == NULL)
		return;
	if (*nfds == 0) {
		strv_setenv(kv, "CWD_ERROR", "the client sent no directory");
		return;
	}
	if ((path = server_cwd_path(fds[*nfds - 1], &cause)) == NULL) {
		strv_setenv(kv, "CWD_ERROR", cause);
		free(cause);
	} else {
		q = quote_name(path);
		log_debug("the client's directory is %s", q);
		free(q);
		strv_setenv(kv, "CWD", path);
		free(path);
	}
	close(fds[--*nfds]);
}

/*
 * Where the session a hello asks for starts: DIR (a relative one from
 * the client's directory), else the client's directory; NULL with
 * *CAUSE if that is needed and the client could not give it. Caller
 * frees.
 */
static char *
server_hello_dir(const struct strv *kv, char **cause)
{
	const char *dir = server_hello_get(kv, "DIR");
	const char *cwd = server_hello_get(kv, "CWD");
	const char *why = server_hello_get(kv, "CWD_ERROR");

	if (dir != NULL && dir[0] == '/')
		return xstrdup(dir);
	if (cwd != NULL && *cwd != '\0')
		return dir != NULL ? xprintf("%s/%s", cwd, dir) : xstrdup(cwd);
	*cause = xprintf("cannot find the current directory (%s)%s: cd to a "
	    "project, or pass it with -C as an absolute path", why != NULL ?
	    why : "the client sent none", dir != NULL ? ", which -C is "
	    "relative to" : "");
	return NULL;
}

/* Starts the session a hello asks for: its number, or -1 with *CAUSE. */
static int64_t
server_hello_start(struct server *sv, const struct strv *kv, bool focus,
    char **cause)
{
	struct tui_opts o = { 0 };
	struct strv argv, env;
	char *dir;
	int64_t rc;

	if ((dir = server_hello_dir(kv, cause)) == NULL)
		return -1;
	strv_init(&argv);
	server_hello_args(kv, &argv);
	strv_init(&env);
	server_hello_env(kv, &env);
	o.env = env.v;
	o.agent = server_hello_get(kv, "AGENT");
	o.dir = dir;
	if (argv.n > 0)
		o.command = argv.v;
	o.worktree = server_hello_get(kv, "WORKTREE") != NULL;
	o.base = server_hello_get(kv, "BASE");
	o.branch = server_hello_get(kv, "BRANCH");
	o.refuse_shared = server_hello_get(kv, "REFUSE_SHARED") != NULL;
	o.ask_shared = server_hello_get(kv, "ASK_SHARED") != NULL;
	rc = tui_start(sv->t, &o, focus, cause);
	strv_free(&argv);
	server_strv_wipe(&env);
	free(dir);
	return rc;
}

/* Notes which file content CF was loaded from, and when. */
static void
server_config_loaded(struct server *sv, const struct config *cf)
{
	free(sv->cf_hash);
	sv->cf_hash = server_config_hash(cf->path);
	sv->cf_time = time(NULL);
}

/* When the config in use was loaded, as WHEN (of LEN bytes) says it. */
static void
server_config_when(const struct server *sv, char *when, size_t len)
{
	struct tm tm;

	if (localtime_r(&sv->cf_time, &tm) == NULL ||
	    strftime(when, len, "%Y-%m-%d %H:%M:%S", &tm) == 0)
		snprintf(when, len, "?");
}

/* Whether the client's config file (its HASH=) is the one the server runs. */
static char *
server_config_status(struct server *sv, const struct strv *kv)
{
	const char *hash = server_hello_get(kv, "HASH");
	char when[64];

	server_config_when(sv, when, sizeof when);
	if (hash != NULL && strcmp(hash, sv->cf_hash) == 0)
		return xprintf("the server runs this file as it is now (loaded "
		    "%s)\n", when);
	return xprintf("the server runs the config of %s; 'agentmux "
	    "reload' to use the file as it is now\n", when);
}

/*
 * What a client that attaches (TC) or starts a session is told when its
 * config file (its HASH=) is not the one the server runs, as config
 * check says: a line in its status bar, or on its stderr. Nothing waits.
 */
static void
server_config_warn(struct server *sv, struct server_client *c,
    const struct strv *kv)
{
	const char *hash = server_hello_get(kv, "HASH");
	char when[64], *text;

	if (hash == NULL || strcmp(hash, sv->cf_hash) == 0)
		return;
	server_config_when(sv, when, sizeof when);
	/* The status bar is short: there the load time is left out. */
	if (c->tc != NULL) {
		text = xstrdup("config changed since the server read it: "
		    "prefix R reloads");
		tui_notice_client(sv->t, c->tc, true, text);
	} else {
		text = xprintf("agentmux: the config file changed since the "
		    "server loaded it (%s), and new sessions still use that "
		    "one: 'agentmux reload' reads the file\n", when);
		if (server_msg_send(c->fd, SERVER_MSG_WARN, text, strlen(text),
		    NULL, 0) == -1)
			log_warn("cannot warn client %ld", (long)c->pid);
	}
	free(text);
}

/*
 * Reads the config file again for the sessions started from now on; a
 * file with problems is refused (its FILE:LINE errors) and the one in use
 * kept. Older configs stay alive until the server ends: live sessions
 * and their proxies point into them.
 */
static int server_reload(struct server *, char **, char **);

/* prefix R in the dashboard. */
static int
server_reload_cb(void *arg, char **text, char **cause)
{
	return server_reload(arg, text, cause);
}

static int
server_reload(struct server *sv, char **text, char **cause)
{
	struct config *cf;
	char *err = NULL;

	if ((cf = config_load_or_cause(NULL, &err)) == NULL) {
		*cause = xprintf("%s\nthe server keeps the config it has; fix "
		    "the file and run 'agentmux reload' again", err);
		free(err);
		return -1;
	}
	sv->cfs = xreallocarray(sv->cfs, sv->ncfs + 1, sizeof *sv->cfs);
	sv->cfs[sv->ncfs++] = cf;
	session_ctx_set_config(sv->ctx, cf);
	tui_set_config(sv->t, cf);
	server_config_loaded(sv, cf);
	log_info("config reloaded");
	*text = xstrdup("the config is reloaded: sessions started from now "
	    "on use it; running ones keep theirs\n");
	return 0;
}

/* Session number ID= of a command; -1 with *CAUSE. */
static int64_t
server_command_id(const struct strv *kv, char **cause)
{
	const char *v = server_hello_get(kv, "ID");
	long long id;
	char *end;

	errno = 0;
	if (v == NULL || (id = strtoll(v, &end, 10)) <= 0 || *end != '\0' ||
	    errno == ERANGE) {
		*cause = xprintf("'%s' is not a session number; 'agentmux ls' "
		    "lists them", v != NULL ? v : "");
		return -1;
	}
	return id;
}

/* A port number VALUE of a command; -1 with *CAUSE if it is none. */
static int
server_command_port_num(const char *value, const char *what, char **cause)
{
	long long n;
	char *end;

	errno = 0;
	if (value == NULL || (n = strtoll(value, &end, 10)) < 0 || n > 65535 ||
	    *end != '\0' || end == value || errno == ERANGE) {
		*cause = xprintf("'%s' is not a %s (a number from 1 to 65535)",
		    value != NULL ? value : "", what);
		return -1;
	}
	return (int)n;
}

/* agentmux port: JPORT=, HPORT=, HOST=, NAMED=, DELETE=. */
static int
server_command_port(struct server *sv, int64_t id, const struct strv *kv,
    char **text, char **cause)
{
	struct tui_port_opts o = { 0 };
	const char *hport = server_hello_get(kv, "HPORT");

	if ((o.jail_port = server_command_port_num(server_hello_get(kv,
	    "JPORT"), "port", cause)) == -1)
		return -1;
	o.host_port = o.jail_port;
	if (hport != NULL && (o.host_port = server_command_port_num(hport,
	    "host port", cause)) == -1)
		return -1;
	o.host = server_hello_get(kv, "HOST");
	o.named = server_hello_get(kv, "NAMED") != NULL;
	o.remove = server_hello_get(kv, "DELETE") != NULL;
	return tui_port(sv->t, id, &o, text, cause);
}

/* Runs command CMD=; *TEXT gets what the client prints. 0, or -1 with *CAUSE. */
static int
server_command_run(struct server *sv, const struct strv *kv, char **text,
    char **cause)
{
	const char *cmd = server_hello_get(kv, "CMD");
	struct strv argv;
	int64_t id;
	int rc;

	if (strcmp(cmd, "ls") == 0) {
		*text = tui_list(sv->t, server_hello_get(kv, "JSON") != NULL);
		return 0;
	}
	if (strcmp(cmd, "reload") == 0)
		return server_reload(sv, text, cause);
	if (strcmp(cmd, "config-status") == 0) {
		*text = server_config_status(sv, kv);
		return 0;
	}
	if (strcmp(cmd, "kill-server") == 0) {
		sv->killed = true;
		server_stop_listening(sv);
		tui_end(sv->t);
		return 0;
	}
	if (strcmp(cmd, "new") == 0) {
		if ((id = server_hello_start(sv, kv, false, cause)) == -1)
			return -1;
		*text = xprintf("%lld\n", (long long)id);
		return 0;
	}
	if ((id = server_command_id(kv, cause)) == -1)
		return -1;
	if (strcmp(cmd, "kill") == 0)
		return tui_kill(sv->t, id, cause);
	if (strcmp(cmd, "pause") == 0 || strcmp(cmd, "resume") == 0)
		return tui_set_paused(sv->t, id, strcmp(cmd, "pause") == 0,
		    cause);
	if (strcmp(cmd, "port") == 0)
		return server_command_port(sv, id, kv, text, cause);
	if (strcmp(cmd, "send") == 0) {
		strv_init(&argv);
		server_hello_args(kv, &argv);
		rc = tui_send(sv->t, id, argv.v != NULL ? argv.v :
		    (char *[]){ NULL }, server_hello_get(kv, "LITERAL") != NULL,
		    cause);
		strv_free(&argv);
		return rc;
	}
	*cause = xprintf("this server knows no command '%s'; it may be older "
	    "than this agentmux ('agentmux kill-server' ends it)", cmd);
	return -1;
}

/* Answers client C's wait if its session reached the state: true if it did (C is gone). */
static bool
server_wait_check(struct server_client *c)
{
	char *cause = NULL, *msg;
	int rc;

	if ((rc = tui_reached(c->sv->t, c->wait_id, c->wait_for, &cause)) == 0)
		return false;
	if (rc == 1)
		server_client_exit(c, 0, "");
	else {
		msg = xprintf("%s\n", cause);
		server_client_exit(c, 1, msg);
		free(msg);
	}
	free(cause);
	return true;
}

/* A session changed: every waiting client whose state came is answered. */
static void
server_changed_cb(void *arg)
{
	struct server *sv = arg;
	size_t i = 0;

	while (i < sv->nclients) {
		/* An answered client leaves the array: look at slot I again. */
		if (sv->clients[i]->wait_id == 0 ||
		    !server_wait_check(sv->clients[i]))
			i++;
	}
	/* A session that ended may have been the last. */
	server_check(sv);
}

static void
server_wait_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct server_client *c = arg;
	char *msg;

	msg = xprintf("session %lld did not reach '%s' in time\n",
	    (long long)c->wait_id, c->wait_for);
	server_client_exit(c, 1, msg);
	free(msg);
}

/* agentmux wait: answered now, or when the state comes (or its timeout). */
static int
server_wait(struct server_client *c, const struct strv *kv, int64_t id,
    char **cause)
{
	const char *what = server_hello_get(kv, "FOR");
	const char *timeout = server_hello_get(kv, "TIMEOUT");
	struct timeval tv;
	long long secs = 0;
	char *end;
	int rc;

	if (what == NULL)
		what = "exit";
	if (timeout != NULL && ((secs = strtoll(timeout, &end, 10)) < 0 ||
	    *end != '\0' || secs > 365LL * 86400)) {
		*cause = xprintf("'%s' is not a timeout in seconds", timeout);
		return -1;
	}
	if ((rc = tui_reached(c->sv->t, id, what, cause)) == -1)
		return -1;
	if (rc == 1)
		return 1;
	c->wait_id = id;
	c->wait_for = xstrdup(what);
	if (timeout != NULL) {
		c->wait_ev = evtimer_new(c->sv->base, server_wait_timeout_cb, c);
		tv.tv_sec = (time_t)secs;
		tv.tv_usec = 0;
		evtimer_add(c->wait_ev, &tv);
	}
	return 0;
}

/* A command from a client that is not attaching: its answer is its exit. */
static void
server_command(struct server_client *c, const struct strv *kv)
{
	char *text = NULL, *cause = NULL, *msg;
	int64_t id;
	int rc;

	if (strcmp(server_hello_get(kv, "CMD"), "wait") == 0) {
		if ((id = server_command_id(kv, &cause)) == -1 ||
		    (rc = server_wait(c, kv, id, &cause)) == -1) {
			msg = xprintf("%s\n", cause);
			server_client_exit(c, 1, msg);
			free(msg);
		} else if (rc == 1)
			server_client_exit(c, 0, "");
		free(cause);
		return;
	}

	if (strcmp(server_hello_get(kv, "CMD"), "new") == 0)
		server_config_warn(c->sv, c, kv);
	if (server_command_run(c->sv, kv, &text, &cause) == -1) {
		msg = xprintf("%s\n", cause);
		server_client_exit(c, 1, msg);
		free(msg);
	} else
		server_client_exit(c, 0, text);
	free(text);
	free(cause);
}

/* A client's hello: start what it asks, then draw on its terminal. */
static void
server_hello(struct server_client *c, const struct strv *kv, int *fds,
    int *nfds)
{
	struct server *sv = c->sv;
	const char *term = server_hello_get(kv, "TERM");
	const char *nc = server_hello_get(kv, "NO_COLOR");
	char *cause = NULL, *text;
	struct strv env;
	int64_t id;

	if (server_hello_get(kv, "CMD") != NULL) {
		server_command(c, kv);
		return;
	}
	if (*nfds != 2) {
		cause = xstrdup("the client sent no terminal");
		goto fail;
	}
	/*
	 * The terminal first: one the server cannot draw on starts nothing.
	 * It gets a view of its own beside the clients attached already.
	 */
	*nfds = 0;
	if ((c->tc = tui_attach(sv->t, fds[0], fds[1], term,
	         nc == NULL || *nc == '\0', &cause)) == NULL)
		goto fail;
	c->can_suspend = server_hello_get(kv, "SUSPEND") != NULL;
	strv_init(&env);
	server_hello_env(kv, &env);
	tui_set_env(sv->t, c->tc, env.v);
	server_strv_wipe(&env);
	if ((server_hello_get(kv, "NEW") != NULL ||
	    tui_sessions(sv->t) == 0) &&
	    server_hello_start(sv, kv, true, &cause) == -1)
		goto fail;
	if (server_hello_get(kv, "ID") != NULL &&
	    ((id = server_command_id(kv, &cause)) == -1 ||
	    tui_focus(sv->t, id, &cause) == -1))
		goto fail;
	log_info("client %ld attached", (long)c->pid);
	server_config_warn(sv, c, kv);
	return;
fail:
	if (c->tc != NULL)
		tui_detach(sv->t, c->tc);
	c->tc = NULL;
	log_warnx("client %ld: %s", (long)c->pid, cause);
	text = xprintf("%s\n", cause);
	server_client_exit(c, 1, text);
	free(text);
	free(cause);
}

/*
 * Client C got a hang-up or SIGTERM (its int32 in B) and asks to go: it
 * detaches as with the detach key (its terminal given back, the
 * sessions kept) and is told to exit.
 */
static void
server_client_leaves(struct server_client *c, const struct buf *b)
{
	struct server *sv = c->sv;
	struct tui_client *tc = c->tc;
	int32_t sig = 0;
	char *why;

	if (b->len == sizeof sig)
		memcpy(&sig, b->data, sizeof sig);
	why = xprintf("it got %s", sig == SIGHUP ? "SIGHUP (its terminal "
	    "hung up)" : sig == SIGTERM ? "SIGTERM" : "a signal to end");
	if (tc != NULL) {
		tui_detach(sv->t, tc);
		server_detached_cb(sv, tc, why);
	} else {
		log_info("client %ld left: %s", (long)c->pid, why);
		server_client_exit(c, 0, NULL);
		server_check(sv);
	}
	free(why);
}

/* Splits a hello's payload into its NUL-ended strings. */
static void
server_hello_parse(const struct buf *b, struct strv *kv)
{
	size_t at = 0, n;

	while (at < b->len) {
		n = strnlen(b->data + at, b->len - at);
		if (at + n == b->len)
			break;    /* not NUL-ended: left out */
		strv_add(kv, b->data + at);
		at += n + 1;
	}
}

static void
server_client_cb(evutil_socket_t fd, short what, void *arg)
{
	struct server_client *c = arg;
	struct server *sv = c->sv;
	struct strv kv;
	struct buf b;
	uint32_t version;
	int fds[SERVER_MSG_FDS], nfds = 0, type, i;
	char *text;

	buf_init(&b);
	type = server_msg_recv(fd, &b, &version, fds, &nfds);
	if (type == -1 && (errno == EAGAIN || errno == EINTR))
		goto out;
	if (type <= 0) {
		/* Gone (even killed): its view goes, the sessions stay. */
		if (c->tc != NULL)
			tui_detach(sv->t, c->tc);
		server_client_free(c);
		server_check(sv);
		goto out;
	}
	if (version != 0) {
		text = xprintf("this agentmux server speaks protocol %d, the "
		    "client %u: end the server with 'agentmux kill-server' "
		    "(its sessions end too) or start another with -L NAME\n",
		    SERVER_PROTOCOL, version);
		server_client_exit(c, 1, text);
		free(text);
		goto out;
	}
	switch ((enum server_msg_type)type) {
	case SERVER_MSG_HELLO:
		evtimer_del(c->hello_ev);
		strv_init(&kv);
		server_hello_parse(&b, &kv);
		server_hello_cwd(&kv, fds, &nfds);
		server_hello(c, &kv, fds, &nfds);
		/* It holds the client's environment, secrets and all. */
		server_strv_wipe(&kv);
		break;
	case SERVER_MSG_RESIZE:
		if (c->tc != NULL)
			tui_resize(sv->t, c->tc);
		break;
	case SERVER_MSG_WAKEUP:
		if (c->tc != NULL) {
			log_info("client %ld is back", (long)c->pid);
			tui_resume(sv->t, c->tc);
		}
		break;
	case SERVER_MSG_DETACH:
		server_client_leaves(c, &b);
		break;
	case SERVER_MSG_EXIT:
	case SERVER_MSG_SUSPEND:
	case SERVER_MSG_WARN:
		break;      /* the server's own: not for a client to send */
	}
out:
	for (i = 0; i < nfds; i++)
		close(fds[i]);
	if (b.data != NULL)
		explicit_bzero(b.data, b.len);
	buf_free(&b);
}

/*
 * A connection that says nothing holds one of the few client slots:
 * a client sends its hello at once, so one that has not is dropped.
 */
static void
server_hello_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct server_client *c = arg;
	struct server *sv = c->sv;

	log_warnx("dropped a connection (pid %ld) that sent no hello in %d s",
	    (long)c->pid, SERVER_HELLO_S);
	server_client_free(c);
	server_check(sv);
}

/* Only this user's processes may talk to the server. */
static bool
server_peer_ok(int fd, pid_t *pid)
{
	struct ucred cr;
	socklen_t len = sizeof cr;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) == -1) {
		log_warn("SO_PEERCRED");
		return false;
	}
	*pid = cr.pid;
	if (cr.uid != getuid()) {
		log_warnx("refused a connection from uid %ld (pid %ld): not "
		    "this server's user", (long)cr.uid, (long)cr.pid);
		return false;
	}
	return true;
}

static void
server_accept_cb(evutil_socket_t lfd, short what, void *arg)
{
	struct server *sv = arg;
	struct server_client *c;
	struct timeval tv = { SERVER_HELLO_S, 0 };
	pid_t pid;
	int fd;

	if ((fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) ==
	    -1) {
		if (errno != EAGAIN && errno != EINTR)
			log_warn("accept");
		return;
	}
	if (!server_peer_ok(fd, &pid) || sv->nclients == SERVER_CLIENTS_MAX) {
		close(fd);
		return;
	}
	c = xcalloc(1, sizeof *c);
	c->sv = sv;
	c->fd = fd;
	c->pid = pid;
	c->ev = event_new(sv->base, fd, EV_READ | EV_PERSIST, server_client_cb,
	    c);
	c->hello_ev = evtimer_new(sv->base, server_hello_timeout_cb, c);
	if (c->ev == NULL || c->hello_ev == NULL)
		fatalx("cannot create a client's event");
	event_add(c->ev, NULL);
	evtimer_add(c->hello_ev, &tv);
	sv->clients[sv->nclients++] = c;
}

/* Everything logged goes to the log file, with the time; warnings to the status bar too. */
static void
server_log_hook(enum log_level level, const char *msg, void *arg)
{
	struct server *sv = arg;
	char when[32];
	time_t now = time(NULL);
	struct tm tm;

	strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S",
	    localtime_r(&now, &tm));
	out_printf(stderr, "%s [%ld] %s\n", when, (long)getpid(), msg);
	if (level <= LOG_LEVEL_WARN && sv->t != NULL)
		tui_notice(sv->t, level == LOG_LEVEL_ERROR, msg);
}

/* Stdout and stderr go to the log; nothing reads stdin. */
static void
server_log_open(void)
{
	char *path = server_log_path(), *dir = xstrdup(path);
	int fd;

	*strrchr(dir, '/') = '\0';
	if (path_mkdir_p(dir, 0700) == -1 ||
	    (fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW |
	    O_CLOEXEC, 0600)) == -1)
		fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (fd != -1) {
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
		if (fd > STDERR_FILENO)
			close(fd);
	}
	if ((fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) != -1) {
		dup2(fd, STDIN_FILENO);
		if (fd > STDIN_FILENO)
			close(fd);
	}
	setvbuf(stderr, NULL, _IOLBF, 0);
	free(dir);
	free(path);
}

/* NAME.pid beside the socket: what scripts (and tests) end the server by. */
static void
server_pid_write(int dirfd, const char *name, bool remove)
{
	char *file = xprintf("%s.pid", name), *pid;
	int fd;

	if (remove) {
		unlinkat(dirfd, file, 0);
		free(file);
		return;
	}
	fd = openat(dirfd, file, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
	    O_CLOEXEC, 0600);
	if (fd != -1) {
		pid = xprintf("%ld\n", (long)getpid());
		if (util_write_all(fd, pid, strlen(pid)) == -1)
			log_warn("cannot write %s", file);
		free(pid);
		close(fd);
	}
	free(file);
}

/* The end: every client is told, with what the sessions left to review. */
static int
server_finish(struct server *sv)
{
	struct server_client *v[SERVER_CLIENTS_MAX];
	char *review = tui_left_to_review(sv->t), *text = review;
	int code = tui_exit_code(sv->t);
	size_t n = sv->nclients, i;

	/* A client suspended meanwhile reads it only at 'fg': it says why it ends. */
	if (sv->killed)
		text = xprintf("[server exited (agentmux kill-server)]\n%s",
		    review != NULL ? review : "");
	if (text != review)
		free(review);

	tui_detach_all(sv->t);
	/* Each one freed takes itself out of the list: a copy is walked. */
	memcpy(v, sv->clients, n * sizeof *v);
	for (i = 0; i < n; i++)
		server_client_exit(v[i], code, text);
	free(text);
	return code;
}

/*
 * True for a variable the server keeps for itself (server_env_reduce).
 * Never a [secret]'s from_env variable: each session has its own
 * client's, and the dashboard's confdiff gets that session's.
 */
static bool
server_env_kept(const char *kv)
{
	static const char *keep[] = { "HOME=", "PATH=", "LANG=", "LC_",
	    "XDG_", "TMPDIR=", "USER=", "LOGNAME=", "SHELL=", "AGENTMUX_",
	    "SSL_CERT_DIR=", "SSL_CERT_FILE=" };
	size_t i;

	for (i = 0; i < nitems(keep); i++) {
		if (strncmp(kv, keep[i], strlen(keep[i])) == 0)
			return true;
	}
	return false;
}

/*
 * The server was forked from the client that started it and has its
 * environment, secrets and all. Sessions take their own client's (the
 * hello's ENV=s), so the server keeps only what it needs itself (its
 * dirs, PATH, locale) and wipes the rest where /proc/PID/environ shows
 * it: clearing environ alone would leave the strings there.
 */
static void
server_env_reduce(void)
{
	struct strv kept;
	char **e, *eq;
	size_t i;

	strv_init(&kept);
	for (e = environ; *e != NULL; e++) {
		if (server_env_kept(*e))
			strv_add(&kept, *e);
	}
	for (e = environ; *e != NULL; e++)
		explicit_bzero(*e, strlen(*e));
	if (clearenv() != 0)
		fatalx("cannot clear the server's environment");
	for (i = 0; i < kept.n; i++) {
		if ((eq = strchr(kept.v[i], '=')) == NULL)
			continue;
		*eq = '\0';
		if (setenv(kept.v[i], eq + 1, 1) == -1)
			fatal("setenv %s", kept.v[i]);
	}
	strv_free(&kept);
}

void
server_main(int lfd, int dirfd, struct config *cf, const char *name)
{
	struct server sv = { 0 };
	struct timeval tv = { 1, 0 };
	char *cause = NULL;
	size_t i;
	int rc = 1;

	server_env_reduce();
	server_log_open();
	log_set_hook(server_log_hook, &sv);
	signal(SIGHUP, SIG_IGN);
	/*
	 * No job control for a server: curses, finding SIGTSTP taken, leaves
	 * it alone instead of setting it around every frame it draws. Its
	 * commands and jails start from the defaults.
	 */
	signal(SIGTSTP, SIG_IGN);
	signal(SIGTTIN, SIG_IGN);
	signal(SIGTTOU, SIG_IGN);
	log_info("server %s starts (pid %ld)", name, (long)getpid());
	server_pid_write(dirfd, name, false);
	if (chdir("/") == -1)
		fatal("chdir /");
	sv.lfd = lfd;
	sv.dirfd = dirfd;
	sv.name = name;
	/* Bound by the client that started it, under the directory's lock. */
	sv.sock_known = fstatat(dirfd, name, &sv.sock_st,
	    AT_SYMLINK_NOFOLLOW) == 0 && S_ISSOCK(sv.sock_st.st_mode);
	sv.started_us = util_mono_us();
	server_config_loaded(&sv, cf);
	sv.base = proc_base();
	if ((sv.ctx = session_ctx_create(sv.base, cf, NULL, &cause)) == NULL) {
		log_warnx("%s", cause);
		exit(1);
	}
	sv.t = tui_create(sv.base, sv.ctx);
	log_set_hook(server_log_hook, &sv);
	tui_set_detach_cb(sv.t, server_detached_cb, &sv);
	tui_set_change_cb(sv.t, server_changed_cb, &sv);
	tui_set_stuck_cb(sv.t, server_stuck_cb, &sv);
	tui_set_reload_cb(sv.t, server_reload_cb, &sv);
	tui_set_suspend_cb(sv.t, server_suspend_cb, &sv);
	util_set_nonblock(lfd);
	sv.accept_ev = event_new(sv.base, lfd, EV_READ | EV_PERSIST,
	    server_accept_cb, &sv);
	sv.check_ev = event_new(sv.base, -1, EV_PERSIST, server_check_cb, &sv);
	if (sv.accept_ev == NULL || sv.check_ev == NULL)
		fatalx("cannot create the server's events");
	event_add(sv.accept_ev, NULL);
	event_add(sv.check_ev, &tv);
	loop_trace_init(sv.base);
	event_base_dispatch(sv.base);
	/* New clients find no server (and start one) from here on. */
	if (server_sock_ours(&sv)) {
		if (unlinkat(dirfd, name, 0) == -1)
			log_warn("cannot remove the socket %s", name);
		server_pid_write(dirfd, name, true);
	}
	close(dirfd);
	rc = server_finish(&sv);
	event_free(sv.accept_ev);
	event_free(sv.check_ev);
	/* Clients let go from here on do not arm it. */
	sv.check_ev = NULL;
	if (sv.lfd != -1)
		close(sv.lfd);
	tui_free(sv.t);
	sv.t = NULL;
	log_set_hook(server_log_hook, &sv);
	session_ctx_free(sv.ctx);
	loop_trace_stop();
	proc_base_free();
	config_free(cf);
	for (i = 0; i < sv.ncfs; i++)
		config_free(sv.cfs[i]);
	free(sv.cfs);
	free(sv.cf_hash);
	log_info("server %s ends", name);
	exit(rc);
}
