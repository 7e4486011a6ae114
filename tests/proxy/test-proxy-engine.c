/*
 * The proxy engine end to end, in process: a real loop, a local HTTPS/HTTP
 * upstream with its own CA (upstream.py), and real clients (curl, python)
 * run as children while the loop serves them; the callbacks are checked
 * directly.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "lib/testlib.h"
#include "proxy/proxy.h"
#include "core/core.h"

#define ENG_MAX_RECS 256


struct eng {
	struct event_base *base;
	struct proxy *px;
	char *dir;
	char *updir;
	char *src;
	pid_t uppid;
	int uppipe;
	int hp, pp, bp;
	char *ca;
	char *upca;
	/* the session under test */
	struct proxy_session *ps;
	int port;
	struct request *recs[ENG_MAX_RECS];  /* finished records, copied */
	size_t nrecs;
	int nstarted;
	int nstarted_heads;         /* started records that carry the request's head */
	/* questions */
	int answer;                 /* -1: leave it; else answer with this */
	int answer_when_waiting;    /* answer once this many wait */
	bool pause_first;
	uint64_t last_ask;
	uint64_t answered_id;
	int max_waiting;
	int nasks;
	int nanswered;
	char answered_by[32];
	struct event *later;
	/* alerts */
	int nalerts;
	char alert_kind[32];
	char alert[512];
	/* the last client */
	char *out;
	size_t seen_mark;           /* seen.log's length when a watch began */
};

static void
eng_on_request(void *arg, const struct request *r)
{
	struct eng *e = arg;

	if (!r->done) {
		e->nstarted++;
		if (r->req_headers != NULL && strstr(r->req_headers, "Host: ") !=
		    NULL)
			e->nstarted_heads++;
		return;
	}
	assert_true(e->nrecs < ENG_MAX_RECS);
	e->recs[e->nrecs++] = request_copy(r, true);
}

static void
eng_answer_later(evutil_socket_t fd, short what, void *arg)
{
	struct eng *e = arg;

	proxy_session_answer(e->ps, e->last_ask, (enum proxy_answer)e->answer);
}

static void
eng_on_ask(void *arg, const struct proxy_ask *q)
{
	struct eng *e = arg;
	struct timeval tv = { 2, 0 };

	e->nasks++;
	if (q->waiting > e->max_waiting)
		e->max_waiting = q->waiting;
	if (q->id != e->last_ask) {
		e->last_ask = q->id;
		if (e->pause_first) {
			/* Paused past its timeout, then answered: no timeout. */
			proxy_session_ask_pause(e->ps, q->id, true);
			evtimer_add(e->later, &tv);
			return;
		}
	}
	/* Answered from inside the callback, once enough requests wait. */
	if (!e->pause_first && e->answer >= 0 &&
	    q->waiting >= e->answer_when_waiting && q->id != e->answered_id) {
		e->answered_id = q->id;
		proxy_session_answer(e->ps, q->id, (enum proxy_answer)e->answer);
	}
}

static void
eng_on_answered(void *arg, const struct proxy_ask *q, enum proxy_answer a,
    const char *by)
{
	struct eng *e = arg;

	e->nanswered++;
	snprintf(e->answered_by, sizeof e->answered_by, "%s", by);
}

static void
eng_on_alert(void *arg, const char *kind, const char *msg)
{
	struct eng *e = arg;

	e->nalerts++;
	snprintf(e->alert_kind, sizeof e->alert_kind, "%s", kind);
	snprintf(e->alert, sizeof e->alert, "%s", msg);
}

static void
eng_clear(struct eng *e)
{
	size_t i;

	for (i = 0; i < e->nrecs; i++)
		request_free(e->recs[i]);
	e->nrecs = 0;
	e->nstarted = e->nstarted_heads = e->nasks = e->nanswered = e->nalerts = 0;
	e->max_waiting = 0;
	e->last_ask = e->answered_id = 0;
	e->answer = -1;
	e->answer_when_waiting = 1;
	e->pause_first = false;
	e->answered_by[0] = e->alert[0] = e->alert_kind[0] = '\0';
}

static int
eng_listen(int *port)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof sin;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof sin), 0);
	assert_int_equal(listen(fd, 128), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
	*port = ntohs(sin.sin_port);
	return fd;
}

/* A session with RULES ("verb text", NULL-terminated) and optional secrets. */
static void
eng_session(struct eng *e, bool ask, int prompt_timeout,
    const struct proxy_secret *secrets, size_t nsecrets, const char *rule, ...)
{
	static const struct proxy_session_cbs cbs = { eng_on_request,
		eng_on_ask, eng_on_answered, eng_on_alert };
	struct proxy_session_conf sc;
	struct proxy_policy *pol = proxy_policy_create();
	char *cause = NULL, *text, *verb;
	va_list ap;

	va_start(ap, rule);
	for (; rule != NULL; rule = va_arg(ap, const char *)) {
		text = xstrdup(rule);
		verb = text;
		text[strcspn(text, " ")] = '\0';
		if (proxy_policy_add(pol, verb, text + strlen(verb) + 1, "test",
		    &cause) == -1)
			fail_msg("rule %s: %s", rule, cause);
		free(verb);
	}
	va_end(ap);
	memset(&sc, 0, sizeof sc);
	sc.listen_fd = eng_listen(&e->port);
	sc.policy = pol;
	sc.ask = ask;
	sc.prompt_timeout = prompt_timeout;
	sc.secrets = secrets;
	sc.nsecrets = nsecrets;
	sc.label = "test";
	eng_clear(e);
	e->ps = proxy_session_create(e->px, &sc, &cbs, e, &cause);
	if (e->ps == NULL)
		fail_msg("session: %s", cause);
}

static void
eng_end_session(struct eng *e)
{
	proxy_session_free(e->ps);
	e->ps = NULL;
}

struct eng_child {
	struct eng *e;
	pid_t pid;
	int status;
	bool done;
	int64_t deadline;
};

static void
eng_child_poll(evutil_socket_t fd, short what, void *arg)
{
	struct eng_child *c = arg;
	int status;

	if (waitpid(c->pid, &status, WNOHANG) == c->pid) {
		c->status = WIFEXITED(status) ? WEXITSTATUS(status) :
		    128 + WTERMSIG(status);
		c->done = true;
		event_base_loopbreak(c->e->base);
	} else if (util_mono_us() > c->deadline) {
		kill(-c->pid, SIGKILL);
	}
}

/* Runs a shell command line as a child while the loop serves it; its output lands in e->out. */
static int
eng_run(struct eng *e, const char *fmt, ...)
{
	struct timeval tv = { 0, 10000 };
	struct eng_child c;
	struct event *ev;
	char *cmd, *outpath, env[64];
	va_list ap;
	int fd;

	va_start(ap, fmt);
	if (vasprintf(&cmd, fmt, ap) == -1)
		abort();
	va_end(ap);
	outpath = xprintf("%s/client.out", e->dir);
	memset(&c, 0, sizeof c);
	c.e = e;
	c.deadline = util_mono_us() + 30 * 1000000LL;
	if ((c.pid = fork()) == 0) {
		setpgid(0, 0);
		fd = open(outpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		dup2(fd, 1);
		dup2(fd, 2);
		snprintf(env, sizeof env, "127.0.0.1:%d", e->port);
		setenv("PROXY", env, 1);
		snprintf(env, sizeof env, "http://127.0.0.1:%d", e->port);
		setenv("PURL", env, 1);
		setenv("CA", e->ca, 1);
		setenv("UPCA", e->upca, 1);
		setenv("UPDIR", e->updir, 1);
		setenv("CLIENTS", xprintf("%s/tests/proxy/clients.py", e->src), 1);
		setenv("HP", xprintf("%d", e->hp), 1);
		setenv("PP", xprintf("%d", e->pp), 1);
		setenv("BP", xprintf("%d", e->bp), 1);
		unsetenv("http_proxy");
		unsetenv("https_proxy");
		unsetenv("HTTPS_PROXY");
		unsetenv("ALL_PROXY");
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	ev = event_new(e->base, -1, EV_PERSIST, eng_child_poll, &c);
	event_add(ev, &tv);
	while (!c.done)
		event_base_loop(e->base, EVLOOP_ONCE);
	event_free(ev);
	free(e->out);
	e->out = test_read_file(outpath);
	free(outpath);
	free(cmd);
	return c.status;
}

static void
eng_tick(evutil_socket_t fd, short what, void *arg)
{
}

/* Runs the loop until N records are in (a tunnel's comes when it closes), at most 10 s. */
static void
eng_wait_records(struct eng *e, size_t n)
{
	struct timeval tv = { 0, 20000 };
	struct event *ev = event_new(e->base, -1, EV_PERSIST, eng_tick, NULL);
	int64_t end = util_mono_us() + 10 * 1000000LL;

	event_add(ev, &tv);
	while (e->nrecs < n && util_mono_us() < end)
		event_base_loop(e->base, EVLOOP_ONCE);
	event_free(ev);
}

static const char *
eng_seen(struct eng *e)
{
	static char *seen;
	char *path = xprintf("%s/seen.log", e->updir);

	free(seen);
	seen = test_read_file(path);
	free(path);
	return seen != NULL ? seen : "";
}

static void
eng_expect_out(struct eng *e, const char *needle)
{
	if (e->out == NULL || strstr(e->out, needle) == NULL)
		fail_msg("client output lacks '%s':\n%s", needle,
		    e->out != NULL ? e->out : "(none)");
}

static struct request *
eng_find(struct eng *e, const char *path)
{
	size_t i;

	for (i = 0; i < e->nrecs; i++) {
		if (strcmp(e->recs[i]->path, path) == 0)
			return e->recs[i];
	}
	fail_msg("no record of %s (%zu records)", path, e->nrecs);
	return NULL;
}

/* ---- setup: the upstream and the proxy ---- */

static int
eng_setup(void **state)
{
	struct eng *e = xcalloc(1, sizeof *e);
	struct proxy_conf conf;
	char *cause = NULL, *ports, *path, *upca[2], *cto[3];
	int fds[2], i;
	const char *src = getenv("AGENTMUX_SRC");

	if (src == NULL || access("/usr/bin/curl", X_OK) != 0) {
		print_message("SKIP: needs AGENTMUX_SRC and curl\n");
		return -1;
	}
	signal(SIGPIPE, SIG_IGN);
	log_init(stderr, LOG_LEVEL_WARN);
	e->src = xstrdup(src);
	e->dir = test_tmpdir("engine");
	e->updir = xprintf("%s/up", e->dir);
	mkdir(e->updir, 0755);
	assert_int_equal(pipe(fds), 0);
	if ((e->uppid = fork()) == 0) {
		dup2(fds[0], 0);
		close(fds[1]);
		execlp("python3", "python3", xprintf("%s/tests/proxy/upstream.py",
		    src), e->updir, (char *)NULL);
		_exit(127);
	}
	close(fds[0]);
	e->uppipe = fds[1];
	ports = xprintf("%s/ports", e->updir);
	for (i = 0; i < 300 && access(ports, R_OK) != 0; i++)
		usleep(50000);
	free(ports);
	ports = xprintf("%s/ports", e->updir);
	path = ports;
	ports = test_read_file(path);
	free(path);
	if (ports == NULL || sscanf(ports, "%d %d %d", &e->hp, &e->pp,
	    &e->bp) != 3)
		fail_msg("the test upstream did not start");
	free(ports);
	e->upca = xprintf("%s/ca.pem", e->updir);
	e->base = event_base_new();
	upca[0] = e->upca;
	upca[1] = NULL;
	cto[0] = xprintf("localhost:9:127.0.0.1:%d", e->hp);
	/* Plain HTTP to port 443 of a name, as in issue 15's first finding. */
	cto[1] = xprintf("localhost:443:127.0.0.1:%d", e->pp);
	cto[2] = NULL;
	memset(&conf, 0, sizeof conf);
	conf.data_dir = e->dir;
	conf.upstream_ca = upca;
	conf.connect_to = cto;
	conf.connect_timeout = 5;
	conf.idle_timeout = 30;
	conf.client_timeout = 2;
	conf.max_connections = 16;
	conf.max_body_record = 1024;
	if ((e->px = proxy_create(e->base, &conf, &cause)) == NULL)
		fail_msg("proxy_create: %s", cause);
	free(cto[0]);
	free(cto[1]);
	e->ca = xstrdup(proxy_ca_cert_path(e->px));
	e->later = evtimer_new(e->base, eng_answer_later, e);
	*state = e;
	return 0;
}

static int
eng_teardown(void **state)
{
	struct eng *e = *state;

	if (e == NULL)
		return 0;
	eng_clear(e);
	event_free(e->later);
	proxy_free(e->px);
	event_base_free(e->base);
	close(e->uppipe);
	kill(e->uppid, SIGTERM);
	waitpid(e->uppid, NULL, 0);
	test_rmtree(e->dir);
	free(e->dir);
	free(e->updir);
	free(e->src);
	free(e->ca);
	free(e->upca);
	free(e->out);
	free(e);
	return 0;
}

/* ---- the tests ---- */

#define CURL "curl -sS --max-time 30 --cacert \"$CA\" -x \"$PURL\" "

static void
test_allow_deny_unknown(void **state)
{
	struct eng *e = *state;
	char *r1 = xprintf("allow 127.0.0.1:%d GET,HEAD /ok", e->hp);
	char *r2 = xprintf("deny 127.0.0.1:%d * /ok/secret", e->hp);
	struct request *r;

	eng_session(e, false, 60, NULL, 0, r1, r2, NULL);
	assert_int_equal(eng_run(e, CURL "https://127.0.0.1:$HP/ok/1 "
	    "-w ' [%%{http_code}]'"), 0);
	eng_expect_out(e, "\"path\": \"/ok/1\"");
	eng_expect_out(e, "[200]");
	eng_run(e, CURL "-X POST -d x https://127.0.0.1:$HP/ok/2 "
	    "-w ' [%%{http_code}]'");
	eng_expect_out(e, "[403]");
	eng_expect_out(e, "agentmux: POST /ok/2 on 127.0.0.1 is not allowed (no "
	    "rule covers it); approve it in the dashboard, or add `allow "
	    "127.0.0.1:");
	eng_expect_out(e, " POST` under [policy] in your agentmux config");
	eng_run(e, CURL "https://127.0.0.1:$HP/ok/secret -w ' [%%{http_code}]'");
	eng_expect_out(e, "[403]");
	eng_expect_out(e, "is denied by the rule `deny 127.0.0.1:");
	eng_expect_out(e, "change or remove that rule where it is written");
	/* No rule for the host at all: refused at CONNECT. */
	eng_run(e, CURL "https://localhost:$HP/x -w ' [%%{http_connect}]'");
	eng_expect_out(e, "[403]");
	eng_run(e, CURL "http://localhost:$PP/y -w ' [%%{http_code}]'");
	eng_expect_out(e, "agentmux: localhost:");
	eng_expect_out(e, "is not allowed (no rule covers it); approve it in the "
	    "dashboard, or add `allow localhost:");
	assert_null(strstr(eng_seen(e), "/ok/2"));
	assert_null(strstr(eng_seen(e), "/ok/secret"));
	r = eng_find(e, "/ok/1");
	assert_string_equal(r->decision, "allow");
	assert_string_equal(r->scheme, "https");
	assert_int_equal(r->status, 200);
	assert_non_null(strstr(r->rule, "allow 127.0.0.1:"));
	/* Both heads are recorded, and the live record had the request's. */
	assert_non_null(strstr(r->req_headers, "User-Agent: curl/"));
	assert_non_null(strstr(r->resp_headers, "Content-Type: "));
	assert_int_equal(e->nstarted, 1);
	assert_int_equal(e->nstarted_heads, 1);
	r = eng_find(e, "/ok/2");
	assert_string_equal(r->decision, "deny");
	assert_int_equal(r->status, 403);
	assert_non_null(strstr(r->req_headers, "User-Agent: curl/"));
	r = eng_find(e, "/ok/secret");
	assert_string_equal(r->decision, "deny");
	assert_non_null(strstr(r->rule, "deny 127.0.0.1"));
	r = eng_find(e, "");
	assert_string_equal(r->method, "CONNECT");
	assert_string_equal(r->decision, "deny");
	eng_end_session(e);
	free(r1);
	free(r2);
}

/* What the pause test's timers saw, and do. */
struct eng_pause {
	struct eng *e;
	int started_at_resume;      /* requests the proxy had begun by then */
	int answered_at_resume;     /* questions answered by then */
	char *flag;                 /* pause once the client made this file */
	struct event *when;
	struct event *resume;
};

static void
eng_pause_cb(evutil_socket_t fd, short what, void *arg)
{
	struct eng_pause *p = arg;

	proxy_session_pause(p->e->ps, true);
}

/* Pauses once the client says its connection is open, and resumes 2 s later. */
static void
eng_pause_when_cb(evutil_socket_t fd, short what, void *arg)
{
	struct eng_pause *p = arg;
	struct timeval poll = { 0, 10000 }, two = { 2, 0 };

	if (access(p->flag, F_OK) == -1) {
		evtimer_add(p->when, &poll);
		return;
	}
	proxy_session_pause(p->e->ps, true);
	evtimer_add(p->resume, &two);
}

static void
eng_resume_cb(evutil_socket_t fd, short what, void *arg)
{
	struct eng_pause *p = arg;

	p->started_at_resume = p->e->nstarted;
	p->answered_at_resume = p->e->nanswered;
	proxy_session_pause(p->e->ps, false);
}

/*
 * A paused session's proxy holds a request made meanwhile (its connection
 * waits to be accepted) and it completes once resumed; a prompt's
 * countdown stops while paused and goes on from where it was.
 */
static void
test_session_pause(void **state)
{
	struct eng *e = *state;
	char *r1 = xprintf("allow 127.0.0.1:%d", e->hp);
	struct eng_pause p = { .e = e };
	struct timeval at_resume = { 0, 800000 }, at_pause = { 0, 300000 };
	struct event *resume = evtimer_new(e->base, eng_resume_cb, &p);
	struct event *pause = evtimer_new(e->base, eng_pause_cb, &p);
	int64_t t0;

	eng_session(e, true, 1, NULL, 0, r1, NULL);
	proxy_session_pause(e->ps, true);
	evtimer_add(resume, &at_resume);
	t0 = util_mono_us();
	assert_int_equal(eng_run(e, CURL "https://127.0.0.1:$HP/ok/held "
	    "-w ' [%%{http_code}]'"), 0);
	eng_expect_out(e, "[200]");
	assert_int_equal(p.started_at_resume, 0);
	assert_true(util_mono_us() - t0 >= 750000);
	assert_non_null(eng_find(e, "/ok/held"));

	/* A 1 s countdown, paused from 0.3 s to 1.8 s: it times out at ~2.5 s. */
	e->answer = -1;
	at_resume.tv_sec = 1;
	evtimer_add(pause, &at_pause);
	evtimer_add(resume, &at_resume);
	t0 = util_mono_us();
	eng_run(e, CURL "http://localhost:$PP/asked -w ' [%%{http_code}]'");
	eng_expect_out(e, "[403]");
	assert_int_equal(p.answered_at_resume, 0);
	assert_int_equal(e->nanswered, 1);
	assert_string_equal(e->answered_by, "timeout");
	assert_true(util_mono_us() - t0 >= 2200000);

	/*
	 * A request head begun and left unfinished, client_timeout 2 s,
	 * paused for 2 s just after: the connection's timer stops with the
	 * jail and closes it at ~4 s, not at 2 s.
	 */
	p.flag = xprintf("%s/sent", e->dir);
	p.when = evtimer_new(e->base, eng_pause_when_cb, &p);
	p.resume = resume;
	evtimer_add(p.when, &at_pause);
	assert_int_equal(eng_run(e, "python3 -c 'import os, socket, time\n"
	    "h, p = os.environ[\"PROXY\"].split(\":\")\n"
	    "c = socket.create_connection((h, int(p)))\n"
	    "t = time.monotonic()\n"
	    "c.sendall(b\"GET http://localhost/x HTTP/1.1\\r\\n\")\n"
	    "open(\"%s\", \"w\").close()\n"
	    "while c.recv(4096): pass\n"
	    "print(\"closed after %%d ms\" %% ((time.monotonic() - t) * 1000))'",
	    p.flag), 0);
	print_message("unfinished head: %s", e->out);
	eng_expect_out(e, "closed after ");
	assert_true(atoi(strstr(e->out, "after ") + 6) >= 3700);
	event_free(p.when);
	free(p.flag);
	event_free(resume);
	event_free(pause);
	eng_end_session(e);
	free(r1);
}

/* The upstream test's pause: what the upstream and the client had seen when the session was resumed. */
struct eng_hold {
	struct eng *e;
	const char *path;           /* the request's, in seen.log */
	char *flag;                 /* the client's head is half sent */
	char *paused;               /* made once the session is paused */
	char *got;                  /* the client got an answer */
	struct event *when;
	struct event *resume;
	bool seen_at_resume;
	bool got_at_resume;
};

static void
eng_hold_resume_cb(evutil_socket_t fd, short what, void *arg)
{
	struct eng_hold *h = arg;

	h->seen_at_resume = strstr(eng_seen(h->e), h->path) != NULL;
	h->got_at_resume = access(h->got, F_OK) == 0;
	proxy_session_pause(h->e->ps, false);
}

/* Pauses once the client's half head is sent and its connection taken, tells it so, and resumes 1 s later. */
static void
eng_hold_when_cb(evutil_socket_t fd, short what, void *arg)
{
	struct eng_hold *h = arg;
	struct timeval poll = { 0, 10000 }, one = { 1, 0 };

	/* Its connection taken: the rest of the head comes while paused. */
	if (access(h->flag, F_OK) == -1 ||
	    proxy_session_connections(h->e->ps) == 0) {
		evtimer_add(h->when, &poll);
		return;
	}
	proxy_session_pause(h->e->ps, true);
	test_write_file(h->paused, "");
	evtimer_add(h->resume, &one);
}

/*
 * Sends HEAD (a request head without its last empty line), pauses the
 * session, then sends the end of it: nothing goes upstream and the client
 * hears nothing until the resume; then the request completes.
 */
static void
eng_hold_one(struct eng *e, const char *head, const char *path,
    const char *expect)
{
	struct eng_hold h = { .e = e, .path = path };
	struct timeval at = { 0, 10000 };

	h.flag = xprintf("%s/half", e->dir);
	h.paused = xprintf("%s/paused", e->dir);
	h.got = xprintf("%s/got", e->dir);
	unlink(h.flag);
	unlink(h.paused);
	unlink(h.got);
	h.when = evtimer_new(e->base, eng_hold_when_cb, &h);
	h.resume = evtimer_new(e->base, eng_hold_resume_cb, &h);
	evtimer_add(h.when, &at);
	assert_int_equal(eng_run(e, "python3 -c 'import os, socket, time\n"
	    "h, p = os.environ[\"PROXY\"].split(\":\")\n"
	    "c = socket.create_connection((h, int(p)))\n"
	    "c.sendall(os.path.expandvars(\"%s\").encode())\n"
	    "open(\"%s\", \"w\").close()\n"
	    "while not os.path.exists(\"%s\"): time.sleep(0.01)\n"
	    "c.sendall(b\"\\r\\n\")\n"
	    "data = b\"\"\n"
	    "while b\"\\r\\n\\r\\n\" not in data:\n"
	    "    d = c.recv(4096)\n"
	    "    if not d: break\n"
	    "    data += d\n"
	    "    open(\"%s\", \"w\").close()\n"
	    "print(\"answer:\", data.split(b\"\\r\\n\")[0].decode())'",
	    head, h.flag, h.paused, h.got), 0);
	print_message("%sat the resume: upstream saw it: %d, the client had "
	    "an answer: %d\n", e->out, h.seen_at_resume, h.got_at_resume);
	eng_expect_out(e, expect);
	assert_false(h.seen_at_resume);
	assert_false(h.got_at_resume);
	event_free(h.when);
	event_free(h.resume);
	free(h.flag);
	free(h.paused);
	free(h.got);
}

/*
 * A request whose head completes while its session is paused (bytes the
 * jail wrote just before the freeze) takes no upstream connection until
 * the resume: neither a plain request nor a CONNECT to a tunnelled host.
 */
static void
test_session_pause_upstream(void **state)
{
	struct eng *e = *state;
	char *tunnel = xprintf("tunnel localhost:%d", e->hp);

	eng_session(e, false, 60, NULL, 0, "allow 127.0.0.1", tunnel, NULL);
	eng_hold_one(e, "GET http://127.0.0.1:$PP/paused/plain HTTP/1.1\\r\\n"
	    "Host: 127.0.0.1:$PP\\r\\nConnection: close\\r\\n",
	    "/paused/plain", "answer: HTTP/1.1 200");
	eng_wait_records(e, 1);
	assert_non_null(strstr(eng_seen(e), "/paused/plain"));
	eng_hold_one(e, "CONNECT localhost:$HP HTTP/1.1\\r\\n"
	    "Host: localhost:$HP\\r\\n", "no such path",
	    "answer: HTTP/1.1 200 Connection established");
	eng_end_session(e);
	free(tunnel);
}

static void
test_plain_keepalive_head(void **state)
{
	struct eng *e = *state;

	eng_session(e, false, 60, NULL, 0, "allow 127.0.0.1",
	    "allow localhost", NULL);
	assert_int_equal(eng_run(e, CURL "-w '%%{http_code} %%{num_connects}\\n' "
	    "http://127.0.0.1:$PP/p1 -o /dev/null http://127.0.0.1:$PP/p2 "
	    "-o /dev/null https://127.0.0.1:$HP/p3 -o /dev/null "
	    "https://127.0.0.1:$HP/p4 -o /dev/null"), 0);
	eng_expect_out(e, "200 1\n200 0\n200 1\n200 0\n");
	assert_int_equal(eng_run(e, CURL "-I https://127.0.0.1:$HP/h "
	    "-w '[%%{http_code}]'"), 0);
	eng_expect_out(e, "[200]");
	eng_run(e, CURL "https://127.0.0.1:$HP/status/204 -w '[%%{http_code}]' "
	    CURL "https://127.0.0.1:$HP/status/304 -w '[%%{http_code}]'");
	eng_expect_out(e, "[204]");
	eng_expect_out(e, "[304]");
	/*
	 * CONNECT to an address, SNI and Host for a name (as hbench does):
	 * a rule allows the name too.
	 */
	assert_int_equal(eng_run(e, "python3 $CLIENTS sni "
	    "https://127.0.0.1:$HP/sni localhost"), 0);
	eng_expect_out(e, "HTTP/1.1 200 OK");
	eng_expect_out(e, "\"Host\": \"localhost\"");
	/* A TLS hello sent along with the CONNECT, before the 200 came. */
	assert_int_equal(eng_run(e, "python3 $CLIENTS early "
	    "https://127.0.0.1:$HP/early"), 0);
	eng_expect_out(e, "HTTP/1.1 200 OK");
	eng_expect_out(e, "\"path\": \"/early\"");
	/* A client that shuts its sending side after the request still gets the answer. */
	assert_int_equal(eng_run(e, "python3 $CLIENTS halfclose "
	    "http://127.0.0.1:$PP/half"), 0);
	eng_expect_out(e, "HTTP/1.1 200 OK");
	eng_expect_out(e, "\"path\": \"/half\"");
	/* A body that only the end of the connection ends. */
	assert_int_equal(eng_run(e, CURL "https://127.0.0.1:$HP/close"), 0);
	eng_expect_out(e, "until close");
	assert_int_equal(eng_run(e, "head -c 3000000 /dev/urandom > "
	    "$UPDIR/up.bin && " CURL "-X POST --data-binary @$UPDIR/up.bin "
	    "https://127.0.0.1:$HP/echo && " CURL "-H 'Transfer-Encoding: "
	    "chunked' --data-binary @$UPDIR/up.bin http://127.0.0.1:$PP/echo && "
	    CURL "https://127.0.0.1:$HP/big?size=5000000 -o /dev/null "
	    "-w '[%%{size_download}]'"), 0);
	eng_expect_out(e, "\"len\": 3000000");
	eng_expect_out(e, "\"Transfer-Encoding\": \"chunked\"");
	eng_expect_out(e, "[5000000]");
	assert_int_equal(eng_find(e, "/big?size=5000000")->bytes_down, 5000000);
	assert_int_equal(eng_find(e, "/p1")->status, 200);
	eng_end_session(e);
}

static void
test_tunnel(void **state)
{
	struct eng *e = *state;
	char *rule = xprintf("tunnel localhost:%d", e->hp);
	struct request *r;

	eng_session(e, false, 60, NULL, 0, rule, NULL);
	/* The upstream's own certificate reaches the client: no interception. */
	assert_int_equal(eng_run(e, "curl -sS --max-time 30 --cacert \"$UPCA\" "
	    "-x \"$PURL\" https://localhost:$HP/tun"), 0);
	eng_expect_out(e, "\"path\": \"/tun\"");
	eng_wait_records(e, 1);
	r = eng_find(e, "");
	assert_string_equal(r->scheme, "tunnel");
	assert_string_equal(r->decision, "tunnel");
	assert_true(r->bytes_up > 0 && r->bytes_down > 0);
	eng_end_session(e);
	free(rule);
	/*
	 * A tunnel rule naming no port passes TLS to port 443 only: elsewhere
	 * a hello naming the host could carry a line protocol's commands.
	 */
	eng_session(e, false, 60, NULL, 0, "tunnel localhost", NULL);
	eng_run(e, "curl -sS --max-time 30 --cacert \"$UPCA\" -x \"$PURL\" "
	    "https://localhost:$HP/tun2");
	eng_wait_records(e, 1);
	r = eng_find(e, "");
	assert_string_equal(r->decision, "deny");
	assert_non_null(r->error);
	assert_non_null(strstr(r->error, "passes TLS to port 443 only; add "
	    "`tunnel localhost:"));
	assert_null(strstr(eng_seen(e), "/tun2"));
	eng_end_session(e);
}

static void
test_ssrf(void **state)
{
	struct eng *e = *state;

	eng_session(e, false, 60, NULL, 0, "allow *", NULL);
	eng_run(e, CURL "https://127.0.0.1:$HP/w1 -w ' [%%{http_code}]'");
	eng_expect_out(e, "[403]");
	eng_expect_out(e, "127.0.0.1 is a loopback address, which no rule "
	    "names; add `allow 127.0.0.1` to reach it");
	eng_run(e, CURL "http://localhost:$PP/w2 -w ' [%%{http_code}]'");
	eng_expect_out(e, "[403]");
	eng_expect_out(e, "localhost resolves to");
	eng_run(e, CURL "http://169.254.169.254/latest/meta-data/ "
	    "-w ' [%%{http_code}]'");
	eng_expect_out(e, "cloud metadata");
	eng_run(e, CURL "http://[::1]:$PP/w3 -w ' [%%{http_code}]'");
	eng_expect_out(e, "[403]");
	/* connect_to names its address: localhost:9 goes to the upstream. */
	assert_int_equal(eng_run(e, CURL "https://localhost:9/w4"), 0);
	eng_expect_out(e, "\"path\": \"/w4\"");
	assert_null(strstr(eng_seen(e), "/w1"));
	assert_null(strstr(eng_seen(e), "/w2"));
	assert_null(strstr(eng_seen(e), "/w3"));
	assert_string_equal(eng_find(e, "/w1")->decision, "deny");
	assert_non_null(strstr(eng_find(e, "/w1")->rule, "address check"));
	eng_end_session(e);
	/* Naming the address or localhost lets it through. */
	eng_session(e, false, 60, NULL, 0, "allow *", "allow localhost", NULL);
	assert_int_equal(eng_run(e, CURL "http://localhost:$PP/w5"), 0);
	eng_expect_out(e, "\"path\": \"/w5\"");
	eng_end_session(e);
}

static void
test_secrets(void **state)
{
	struct eng *e = *state;
	char *hosts[] = { "127.0.0.1", NULL };
	struct proxy_secret s;
	char *ph;

	memset(&s, 0, sizeof s);
	s.name = "TESTKEY";
	s.value = "sk-test-Real0Secret1Value2Never3In4The5Jail";
	s.hosts = hosts;
	s.header = "x-api-key";
	ph = proxy_secret_placeholder(s.value);
	s.placeholder = ph;
	setenv("PH", ph, 1);
	eng_session(e, false, 60, &s, 1, "allow 127.0.0.1", "allow localhost",
	    NULL);
	assert_int_equal(eng_run(e, CURL "-H \"x-api-key: $PH\" "
	    "-H \"Authorization: Bearer $PH\" https://127.0.0.1:$HP/s1"), 0);
	/* The bound header got the value; another header kept the placeholder. */
	assert_non_null(strstr(eng_seen(e), "GET /s1 key=sk-test-Real0Secret1"
	    "Value2Never3In4The5Jail auth=Bearer sk-test-"));
	assert_non_null(strstr(eng_seen(e), ph));
	assert_null(strstr(eng_find(e, "/s1")->req_headers, s.value));
	assert_null(strstr(eng_find(e, "/s1")->resp_body.data, s.value));
	assert_non_null(strstr(eng_find(e, "/s1")->resp_body.data, "[redacted]"));
	/* Anywhere else: blocked and reported. */
	eng_run(e, CURL "-H \"x-api-key: $PH\" https://localhost:$HP/s2 "
	    "-w ' [%%{http_code}]'");
	eng_expect_out(e, "[403]");
	eng_expect_out(e, "placeholder of secret TESTKEY");
	assert_int_equal(e->nalerts, 1);
	assert_string_equal(e->alert_kind, "exfiltration");
	assert_non_null(strstr(e->alert, "in a header"));
	eng_run(e, CURL "\"http://localhost:$PP/s3?k=$PH\" -w ' [%%{http_code}]'");
	eng_expect_out(e, "[403]");
	assert_non_null(strstr(e->alert, "in the URL"));
	eng_run(e, CURL "-d \"{\\\"k\\\":\\\"$PH\\\"}\" https://localhost:$HP/s4 "
	    "-w ' [%%{http_code}]'");
	eng_expect_out(e, "[403]");
	assert_non_null(strstr(e->alert, "in the body"));
	assert_int_equal(e->nalerts, 3);
	assert_null(strstr(eng_seen(e), "/s2"));
	assert_null(strstr(eng_seen(e), "/s3"));
	assert_null(strstr(eng_seen(e), "/s4"));
	assert_string_equal(eng_find(e, "/s2")->decision, "deny");
	assert_string_equal(eng_find(e, "/s2")->error,
	    "exfiltration: a secret's placeholder");
	eng_end_session(e);
	free(ph);
}

static char *eng_hex(const char *, int);

/* Marks TEXT as what the upstream must never receive (upstream.py logs "saw-watch"). */
static void
eng_watch(struct eng *e, const char *text)
{
	char *path = xprintf("%s/watch", e->updir);
	FILE *f = fopen(path, "a");

	assert_non_null(f);
	e->seen_mark = strlen(eng_seen(e));
	fprintf(f, "%s\n", text);
	fclose(f);
	free(path);
}

/* Nothing eng_watch marked reached the upstream. */
static void
eng_expect_unseen(struct eng *e)
{
	const char *seen = eng_seen(e), *at;

	if (strlen(seen) >= e->seen_mark &&
	    (at = strstr(seen + e->seen_mark, "saw-watch")) != NULL)
		fail_msg("the upstream got what it must not: %.*s", (int)strcspn(at,
		    "\n"), at);
}

static void
eng_unwatch(struct eng *e)
{
	char *path = xprintf("%s/watch", e->updir);

	unlink(path);
	free(path);
}

/* A secret with a fresh placeholder (also in $PH), bound to HOSTS. */
static char *
eng_secret(struct proxy_secret *s, const char *name, const char *value,
    char **hosts)
{
	memset(s, 0, sizeof *s);
	s->name = name;
	s->value = value;
	s->hosts = hosts;
	s->placeholder = proxy_secret_placeholder(value);
	setenv("PH", s->placeholder, 1);
	return (char *)s->placeholder;
}

/*
 * Issue 15, finding 1: a secret's value goes out only over TLS verified
 * for its host. Plain HTTP to the bound host, even to port 443 of its name
 * in absolute form, or a plain WebSocket to it, carries the placeholder:
 * blocked and flagged, and the upstream sees neither the value nor the
 * placeholder.
 */
static void
test_secret_cleartext(void **state)
{
	struct eng *e = *state;
	char *hosts[] = { "localhost", "127.0.0.1", NULL };
	struct proxy_secret s;
	char *ph = eng_secret(&s, "CLEARKEY", "sk-clear-Real0Value1Never2In3"
	    "Cleartext4", hosts);

	eng_session(e, false, 60, &s, 1, "allow 127.0.0.1", "allow localhost",
	    NULL);
	eng_watch(e, s.value);
	eng_watch(e, ph);
	eng_run(e, CURL "-H \"x-api-key: $PH\" http://localhost:443/c1 "
	    "-w ' [%%{http_code}]'");
	eng_expect_out(e, "[403]");
	eng_expect_out(e, "placeholder of secret CLEARKEY, which only its own "
	    "hosts may receive, over TLS");
	/* The jail relays this text: no advice to bind the secret to HOST. */
	eng_expect_out(e, "blocked and flagged");
	assert_null(strstr(e->out, "host ="));
	assert_null(strstr(e->out, "[secret"));
	assert_null(strstr(e->out, "config"));
	eng_run(e, CURL "-H \"Authorization: Bearer $PH\" "
	    "http://127.0.0.1:$PP/c2 -w ' [%%{http_code}]'");
	eng_expect_out(e, "[403]");
	eng_run(e, "python3 $CLIENTS wsmsg ws://127.0.0.1:$PP/ws \"$PH\"");
	eng_expect_out(e, "HTTP/1.1 101");
	assert_null(strstr(e->out, ph + strlen(ph) / 2));
	assert_int_equal(e->nalerts, 3);
	assert_string_equal(e->alert_kind, "exfiltration");
	assert_non_null(strstr(e->alert, "in a WebSocket frame"));
	assert_null(strstr(eng_seen(e), "/c1"));
	assert_null(strstr(eng_seen(e), "/c2"));
	eng_expect_unseen(e);
	assert_string_equal(eng_find(e, "/c1")->decision, "deny");
	assert_string_equal(eng_find(e, "/c2")->rule, "secret CLEARKEY");
	/* Over TLS verified for the host, the value goes in. */
	eng_unwatch(e);
	assert_int_equal(eng_run(e, CURL "-H \"x-api-key: $PH\" "
	    "https://127.0.0.1:$HP/c3"), 0);
	assert_non_null(strstr(eng_seen(e), "GET /c3 key=sk-clear-Real0"));
	eng_end_session(e);
	free(ph);
}

/*
 * Issue 15, finding 2: every byte that goes to a host that may not have
 * the secret is looked at, however long the body, however it is framed,
 * and in the forms a placeholder is commonly sent in.
 */
static void
test_secret_streams(void **state)
{
	static const char *const forms[] = {
		/* past the first MiB of a body, as it is */
		"python3 -c 'import os; print(os.urandom(1500000).hex() + "
		    "os.environ[\"PH\"])' > $UPDIR/b.txt && " CURL
		    "--data-binary @$UPDIR/b.txt https://localhost:$HP/b1",
		/* the same in a chunked stream, over plain HTTP */
		CURL "-H 'Transfer-Encoding: chunked' --data-binary "
		    "@$UPDIR/b.txt http://localhost:$PP/b2",
		/* base64, in each of the three alignments, both alphabets */
		CURL "-d \"k=$(python3 $CLIENTS encode b64-0 \"$PH\")\" "
		    "https://localhost:$HP/b3",
		CURL "-d \"k=$(python3 $CLIENTS encode b64-1 \"$PH\")\" "
		    "https://localhost:$HP/b4",
		CURL "-d \"k=$(python3 $CLIENTS encode b64url-2 \"$PH\")\" "
		    "https://localhost:$HP/b5",
		/* hex, in either case */
		CURL "-d \"$(python3 $CLIENTS encode HEX \"$PH\")\" "
		    "https://localhost:$HP/b6",
		CURL "-H \"X-Trace: $(python3 $CLIENTS encode hex \"$PH\")\" "
		    "https://localhost:$HP/b7",
		/* URL-encoded, in the query and in a form */
		CURL "\"https://localhost:$HP/b8?k=$(python3 $CLIENTS encode pct "
		    "\"$PH\")\"",
		CURL "--data-urlencode \"k=$(python3 $CLIENTS encode b64-2 "
		    "\"$PH\")\" https://localhost:$HP/b9",
	};

	struct eng *e = *state;
	char *hosts[] = { "127.0.0.1", NULL };
	struct proxy_secret s;
	char *ph = eng_secret(&s, "STREAMKEY", "ghp_Stream0Value1For2The3Scan"
	    "4ner5", hosts);
	size_t i;
	int n;

	eng_session(e, false, 60, &s, 1, "allow 127.0.0.1", "allow localhost",
	    NULL);
	eng_watch(e, ph);
	for (i = 0; i < nitems(forms); i++) {
		n = e->nalerts;
		eng_run(e, "%s -w ' [%%{http_code}]'", forms[i]);
		if (strstr(e->out, "[403]") == NULL || e->nalerts != n + 1)
			fail_msg("form %zu was not blocked:\n%s", i, e->out);
	}
	assert_non_null(strstr(e->alert, "in the body"));
	eng_run(e, "python3 $CLIENTS wsmsg wss://localhost:$HP/ws \"$PH\"");
	eng_expect_out(e, "HTTP/1.1 101");
	assert_non_null(strstr(e->alert, "in a WebSocket frame"));
	eng_expect_unseen(e);
	/* What does not carry it goes through, long or short. */
	assert_int_equal(eng_run(e, "head -c 2500000 /dev/zero | tr '\\0' a > "
	    "$UPDIR/a.txt && " CURL "--data-binary @$UPDIR/a.txt "
	    "https://localhost:$HP/b10 && python3 $CLIENTS wsmsg "
	    "wss://localhost:$HP/ws nothing-secret-here"), 0);
	eng_expect_out(e, "\"len\": 2500000");
	eng_expect_out(e, "message: nothing-s");
	eng_expect_out(e, "ecret-here");
	assert_non_null(strstr(eng_seen(e), "POST /b10 "));
	eng_unwatch(e);
	eng_end_session(e);
	free(ph);
}

/*
 * Issue 15, finding 3: path rules match the normalised path, and that is
 * the path that goes upstream; what cannot be normalised is refused.
 */
static void
test_paths(void **state)
{
	struct eng *e = *state;
	char *r1 = xprintf("allow 127.0.0.1:%d GET /pub/", e->pp);
	char *r2 = xprintf("allow 127.0.0.1:%d", e->hp);
	char *r3 = xprintf("deny 127.0.0.1:%d * /secret/", e->hp);

	eng_session(e, false, 60, NULL, 0, r1, r2, r3, NULL);
#define PCURL CURL "--path-as-is -w ' [%%{http_code}]' "
	eng_run(e, PCURL "http://127.0.0.1:$PP/pub/../secret/p1");
	eng_expect_out(e, "[403]");
	eng_expect_out(e, "GET /secret/p1 on 127.0.0.1 is not allowed");
	eng_run(e, PCURL "http://127.0.0.1:$PP/pub/%%2e%%2E/secret/p2");
	eng_expect_out(e, "[403]");
	eng_run(e, PCURL "https://127.0.0.1:$HP//secret/p3");
	eng_expect_out(e, "[403]");
	eng_expect_out(e, "is denied by the rule `deny 127.0.0.1:");
	eng_run(e, PCURL "https://127.0.0.1:$HP/%%73ecret/p4");
	eng_expect_out(e, "[403]");
	eng_run(e, PCURL "http://127.0.0.1:$PP/pub/..%%2fsecret/p5");
	eng_expect_out(e, "[400]");
	eng_expect_out(e, "malformed request: an encoded '/' (%2F) that a "
	    "server decoding it would read as an empty, '.' or '..' segment");
	eng_run(e, PCURL "https://127.0.0.1:$HP/pub/%%00/p6");
	eng_expect_out(e, "[400]");
	eng_run(e, PCURL "\"https://127.0.0.1:$HP/pub/..;/secret/p7\"");
	eng_expect_out(e, "[400]");
	/* The normalised path goes up; the query as it was. */
	assert_int_equal(eng_run(e, PCURL "http://127.0.0.1:$PP/pub/./a//p8 "
	    PCURL "\"https://127.0.0.1:$HP/pub/%%7e%%41/p9?q=%%2e%%2e/../x\""), 0);
	eng_expect_out(e, "\"path\": \"/pub/a/p8\"");
	eng_expect_out(e, "\"path\": \"/pub/~A/p9?q=%2e%2e/../x\"");
	/*
	 * An encoded '/' is part of a name (npm's "@scope%2Fname") and goes up
	 * as it came, if policy allows the path read both ways.
	 */
	assert_int_equal(eng_run(e, PCURL "http://127.0.0.1:$PP/pub/@s%%2fp10"),
	    0);
	eng_expect_out(e, "\"path\": \"/pub/@s%2Fp10\"");
	eng_run(e, PCURL "https://127.0.0.1:$HP/secret%%2Fp11");
	eng_expect_out(e, "[403]");
	eng_expect_out(e, "is denied by the rule `deny 127.0.0.1:");
	eng_run(e, PCURL "http://127.0.0.1:$PP/pub%%2Fp12");
	eng_expect_out(e, "[403]");
#undef PCURL
	assert_null(strstr(eng_seen(e), "secret"));
	assert_string_equal(eng_find(e, "/pub/a/p8")->decision, "allow");
	assert_string_equal(eng_find(e, "/secret/p3")->decision, "deny");
	eng_end_session(e);
	free(r1);
	free(r2);
	free(r3);
}

/*
 * Issue 15, finding 4: a rule naming a path (or a method) is more specific
 * than one naming only a port: a user's path deny is not lost to a
 * profile's port allow.
 */
static void
test_specificity(void **state)
{
	struct eng *e = *state;
	char *r1 = xprintf("allow 127.0.0.1:%d", e->hp);

	eng_session(e, false, 60, NULL, 0, r1, "deny 127.0.0.1 * /secret/",
	    "deny 127.0.0.1 DELETE", NULL);
	eng_run(e, CURL "https://127.0.0.1:$HP/secret/s1 -w ' [%%{http_code}]'");
	eng_expect_out(e, "[403]");
	eng_expect_out(e, "is denied by the rule `deny 127.0.0.1 * /secret/ "
	    "(test)`");
	eng_run(e, CURL "-X DELETE https://127.0.0.1:$HP/s2 "
	    "-w ' [%%{http_code}]'");
	eng_expect_out(e, "[403]");
	assert_int_equal(eng_run(e, CURL "https://127.0.0.1:$HP/s3"), 0);
	eng_expect_out(e, "\"path\": \"/s3\"");
	assert_null(strstr(eng_seen(e), "/secret/s1"));
	assert_null(strstr(eng_seen(e), "/s2"));
	eng_end_session(e);
	free(r1);
}

/*
 * Issue 15, finding 5: the Host header and the TLS server name name where
 * the request goes. At an allowed address, another name needs a rule of
 * its own; for a name, no other name will do.
 */
static void
test_names(void **state)
{
	static const char *const raw[] = {
		"GET http://@/f1 HTTP/1.1\r\nHost: evil.example\r\n\r\n",
		"GET http://@/f2 HTTP/1.1\r\nHost: 127.0.0.2\r\n\r\n",
		"GET http://@/f3 HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n",
	};
	struct eng *e = *state;
	char *hex;
	size_t i;

	eng_session(e, false, 60, NULL, 0, "allow 127.0.0.1", NULL);
	for (i = 0; i < nitems(raw); i++) {
		hex = eng_hex(raw[i], e->pp);
		eng_run(e, "python3 $CLIENTS raw %s", hex);
		if (strstr(e->out, "HTTP/1.1 403 Forbidden") == NULL)
			fail_msg("case %zu not refused: %s", i, e->out);
		free(hex);
	}
	eng_expect_out(e, "names port 1, but the request goes to port");
	eng_run(e, "python3 $CLIENTS sni https://127.0.0.1:$HP/f4 "
	    "evil.example");
	eng_expect_out(e, "HTTP/1.1 403 Forbidden");
	eng_expect_out(e, "names the host evil.example, which no rule allows");
	/* localhost is the loopback address itself (RFC 6761): no other host. */
	assert_int_equal(eng_run(e, "python3 $CLIENTS sni "
	    "https://127.0.0.1:$HP/f5 localhost"), 0);
	eng_expect_out(e, "HTTP/1.1 200 OK");
	assert_string_equal(eng_find(e, "/f5")->decision, "allow");
	eng_run(e, "python3 $CLIENTS sni https://127.0.0.1:$HP/f9 "
	    "localhost.evil.example");
	eng_expect_out(e, "add `allow localhost.evil.example:");
	eng_end_session(e);
	/* Names: the Host header and SNI must agree with the CONNECT. */
	eng_session(e, false, 60, NULL, 0, "allow 127.0.0.1", "allow localhost",
	    "allow evil.example", NULL);
	eng_run(e, "python3 $CLIENTS sni https://localhost:9/f6 evil.example "
	    "localhost:9");
	eng_expect_out(e, "HTTP/1.1 403 Forbidden");
	eng_expect_out(e, "the Host header names localhost, but TLS asked for "
	    "evil.example (SNI)");
	eng_run(e, "python3 $CLIENTS sni https://localhost:9/f7 evil.example");
	eng_expect_out(e, "the Host header names evil.example, but the request "
	    "goes to localhost");
	assert_int_equal(eng_run(e, "python3 $CLIENTS sni "
	    "https://localhost:9/f8 localhost localhost:9"), 0);
	eng_expect_out(e, "HTTP/1.1 200 OK");
	assert_null(strstr(eng_seen(e), "/f1"));
	assert_null(strstr(eng_seen(e), "/f2"));
	assert_null(strstr(eng_seen(e), "/f3"));
	assert_null(strstr(eng_seen(e), "/f4"));
	assert_non_null(strstr(eng_seen(e), "/f5"));
	assert_null(strstr(eng_seen(e), "/f9"));
	assert_null(strstr(eng_seen(e), "/f6"));
	assert_null(strstr(eng_seen(e), "/f7"));
	eng_end_session(e);
}

/*
 * Issue 15, finding 5, for tunnels: not decrypted, but the server name
 * the client's TLS asks for must be the tunnel's host (or, for a tunnel
 * to an address, a host a tunnel rule names); a tunnel carries TLS only.
 */
static void
test_tunnel_sni(void **state)
{
	struct eng *e = *state;
	char *r1 = xprintf("tunnel localhost:%d", e->hp);
	char *r2 = xprintf("tunnel 127.0.0.1:%d", e->hp);
	char *hex;

	eng_session(e, false, 60, NULL, 0, r1, r2, NULL);
	eng_run(e, "CA=$UPCA python3 $CLIENTS sni https://localhost:$HP/t1 "
	    "evil.example");
	eng_wait_records(e, 1);
	assert_string_equal(e->recs[0]->decision, "deny");
	assert_non_null(strstr(e->recs[0]->error, "the tunnel's TLS asks for "
	    "evil.example (SNI), but the tunnel goes to localhost"));
	eng_run(e, "CA=$UPCA python3 $CLIENTS sni https://127.0.0.1:$HP/t2 "
	    "other.example");
	eng_wait_records(e, 2);
	assert_non_null(strstr(e->recs[1]->error, "which no tunnel rule names; "
	    "add `tunnel other.example:"));
	/* Plain HTTP through a tunnel: not TLS, so not passed. */
	hex = eng_hex("GET /t3 HTTP/1.1\r\nHost: localhost\r\n\r\n", e->hp);
	eng_run(e, "python3 -c 'import socket,sys; s=socket.create_connection"
	    "((\"127.0.0.1\", %d)); s.sendall(b\"CONNECT localhost:\" + sys.argv[1]"
	    ".encode() + b\" HTTP/1.1\\r\\n\\r\\n\"); print(s.recv(100)); "
	    "s.sendall(bytes.fromhex(sys.argv[2])); print(s.recv(100))' $HP %s",
	    e->port, hex);
	eng_expect_out(e, "200 Connection established");
	eng_wait_records(e, 3);
	assert_non_null(strstr(e->recs[2]->error, "a tunnel carries TLS"));
	/* Its own name, or a name a tunnel rule names: through. */
	assert_int_equal(eng_run(e, "CA=$UPCA python3 $CLIENTS sni "
	    "https://127.0.0.1:$HP/t4 localhost"), 0);
	eng_expect_out(e, "\"path\": \"/t4\"");
	assert_null(strstr(eng_seen(e), "/t1"));
	assert_null(strstr(eng_seen(e), "/t2"));
	assert_null(strstr(eng_seen(e), "/t3"));
	eng_end_session(e);
	free(hex);
	free(r1);
	free(r2);
}

static void
test_streaming(void **state)
{
	struct eng *e = *state;

	eng_session(e, false, 60, NULL, 0, "allow 127.0.0.1", NULL);
	/* Each chunk must reach the client before the next is sent. */
	assert_int_equal(eng_run(e, "python3 $CLIENTS gated "
	    "'https://127.0.0.1:'$HP'/chunked?n=4' $UPDIR c1 4 && "
	    "python3 $CLIENTS gated 'https://127.0.0.1:'$HP'/sse?n=3' "
	    "$UPDIR s1 3 && python3 $CLIENTS gated "
	    "'http://127.0.0.1:'$PP'/sse?n=3' $UPDIR s2 3"), 0);
	eng_expect_out(e, "chunk 0\nchunk 1\nchunk 2\nchunk 3\nreceived 4");
	eng_expect_out(e, "data: event 2\n\nreceived 3");
	assert_null(strstr(eng_seen(e), "gate timeout"));
	eng_end_session(e);
}

static void
test_websocket(void **state)
{
	struct eng *e = *state;

	eng_session(e, false, 60, NULL, 0, "allow 127.0.0.1", NULL);
	assert_int_equal(eng_run(e, "python3 $CLIENTS ws wss://127.0.0.1:$HP/ws "
	    "&& python3 $CLIENTS ws ws://127.0.0.1:$PP/ws"), 0);
	eng_expect_out(e, "HTTP/1.1 101 Switching Protocols\necho 5 hello\n"
	    "echo 500 world\nHTTP/1.1 101");
	eng_wait_records(e, 2);
	assert_string_equal(e->recs[0]->scheme, "wss");
	assert_int_equal(e->recs[0]->status, 101);
	assert_string_equal(e->recs[1]->scheme, "ws");
	eng_end_session(e);
}

static void
test_upstream_errors(void **state)
{
	struct eng *e = *state;

	eng_session(e, false, 60, NULL, 0, "allow 127.0.0.1", "allow "
	    "nonexistent.invalid", NULL);
	eng_run(e, CURL "https://127.0.0.1:$BP/bad -w ' [%%{http_code}]'");
	eng_expect_out(e, "[502]");
	eng_expect_out(e, "certificate verify failed");
	eng_run(e, CURL "http://127.0.0.1:1/refused -w ' [%%{http_code}]'");
	eng_expect_out(e, "[502]");
	eng_expect_out(e, "Connection refused");
	eng_run(e, CURL "http://nonexistent.invalid/x -w ' [%%{http_code}]'");
	eng_expect_out(e, "cannot resolve nonexistent.invalid: ");
	eng_expect_out(e, "/etc/hosts");
	eng_expect_out(e, "check the name");
	assert_null(strstr(e->out, "nodename nor servname"));
	assert_string_equal(eng_find(e, "/bad")->decision, "error");
	assert_int_equal(eng_find(e, "/bad")->status, 502);
	eng_end_session(e);
}

/*
 * A client that does not trust the agentmux CA, and one that hangs up in
 * the middle of its hello: each is one record of a failed CONNECT that says
 * why, and the proxy goes on serving.
 */
static void
test_client_tls_errors(void **state)
{
	struct eng *e = *state;
	struct request *r;

	eng_session(e, false, 60, NULL, 0, "allow 127.0.0.1", NULL);
	eng_run(e, "curl -sS --max-time 30 -x \"$PURL\" "
	    "https://127.0.0.1:$HP/untrusted -w ' [%%{http_code}]'");
	eng_expect_out(e, "[000]");
	eng_wait_records(e, 1);
	r = eng_find(e, "");
	assert_string_equal(r->method, "CONNECT");
	assert_non_null(strstr(r->error, "TLS with the client failed (does it "
	    "trust the agentmux CA?): TLS error: "));
	/* CONNECT, then half a TLS record, then the end. */
	eng_run(e, "python3 $CLIENTS halfhello https://127.0.0.1:$HP/");
	eng_expect_out(e, "HTTP/1.1 200 Connection established");
	eng_wait_records(e, 2);
	assert_non_null(strstr(e->recs[1]->error, "TLS with the client failed "
	    "(does it trust the agentmux CA?): the other side closed the "
	    "connection during TLS"));
	assert_int_equal(eng_run(e, CURL "https://127.0.0.1:$HP/after "
	    "-w ' [%%{http_code}]'"), 0);
	eng_expect_out(e, "[200]");
	eng_end_session(e);
}

/* TEXT with every "@" replaced by 127.0.0.1:PORT, as hex for clients.py raw. */
static char *
eng_hex(const char *text, int port)
{
	struct buf b;
	char hp[32];
	size_t i, j;

	snprintf(hp, sizeof hp, "127.0.0.1:%d", port);
	buf_init(&b);
	for (i = 0; text[i] != '\0'; i++) {
		if (text[i] != '@') {
			buf_printf(&b, "%02x", (unsigned char)text[i]);
			continue;
		}
		for (j = 0; hp[j] != '\0'; j++)
			buf_printf(&b, "%02x", (unsigned char)hp[j]);
	}
	return buf_steal(&b);
}

static void
test_malformed(void **state)
{
	static const char *const bad[] = {
		"POST http://@/m1 HTTP/1.1\r\nHost: @\r\nContent-Length: 4\r\n"
		"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"POST http://@/m2 HTTP/1.1\r\nHost: @\r\nContent-Length: 3\r\n"
		"Content-Length: 4\r\n\r\nabcd",
		"POST http://@/m3 HTTP/1.1\r\nHost: @\r\n"
		"Transfer-Encoding : chunked\r\n\r\n0\r\n\r\n",
		"POST http://@/m4 HTTP/1.1\r\nHost: @\r\n"
		"Transfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n",
		"GET http://@/m5 HTTP/1.1\r\nHost: @\r\nX: a\r\n b\r\n\r\n",
		"GET http://@/m6 HTTP/1.1\r\nHost: [evil.example]\r\n\r\n",
		"POST http://@/m7 HTTP/1.1\r\nHost: @\r\nContent-Length: -5\r\n"
		"\r\n",
		"GET /m8 HTTP/1.1\r\nHost: @\r\n\r\n",
		"POST http://@/m9 HTTP/1.1\r\nHost: @\r\nTransfer-Encoding: "
		"chunked\r\n\r\n5;\r\nabcde\r\nZZ\r\n\r\n",
		"\x16\x03\x01 not http\r\n\r\n",
	};
	struct eng *e = *state;
	char *hex;
	size_t i;

	eng_session(e, false, 60, NULL, 0, "allow 127.0.0.1", NULL);
	for (i = 0; i < nitems(bad); i++) {
		hex = eng_hex(bad[i], e->pp);
		eng_run(e, "python3 $CLIENTS raw %s", hex);
		if (strstr(e->out, "HTTP/1.1 400 Bad Request") == NULL)
			fail_msg("case %zu not refused: %s", i, e->out);
		eng_expect_out(e, "agentmux: malformed request: ");
		free(hex);
	}
	/* m9's head was fine: it went up, and was cut off at the bad chunk. */
	assert_null(strstr(eng_seen(e), "/m1 "));
	assert_null(strstr(eng_seen(e), "/m8"));
	assert_null(strstr(eng_seen(e), "/m5"));
	assert_int_equal(e->nrecs, nitems(bad));
	assert_string_equal(e->recs[0]->decision, "error");
	assert_int_equal(e->recs[0]->status, 400);
	eng_end_session(e);
}

static void
test_ask(void **state)
{
	struct eng *e = *state;

	/* Allowed once from the callback itself. */
	eng_session(e, true, 30, NULL, 0, NULL);
	e->answer = 0;   /* PROXY_ALLOW_ONCE */
	assert_int_equal(eng_run(e, CURL "https://127.0.0.1:$HP/a1"), 0);
	eng_expect_out(e, "\"path\": \"/a1\"");
	assert_int_equal(e->nanswered, 1);
	assert_string_equal(e->answered_by, "user");
	assert_non_null(strstr(eng_find(e, "/a1")->rule, "answered once by user"));
	eng_end_session(e);

	/* Nobody answers: the timeout denies. */
	eng_session(e, true, 1, NULL, 0, NULL);
	eng_run(e, CURL "https://127.0.0.1:$HP/a2 -w ' [%%{http_code}]'");
	eng_expect_out(e, "[403]");
	eng_expect_out(e, "nobody answered about 127.0.0.1:");
	eng_expect_out(e, "retry and approve it in the dashboard, or add "
	    "`allow 127.0.0.1:");
	assert_string_equal(e->answered_by, "timeout");
	assert_null(strstr(eng_seen(e), "/a2"));
	eng_end_session(e);

	/* Three requests, one question; allowed for the session. */
	eng_session(e, true, 30, NULL, 0, NULL);
	e->answer = 1;   /* PROXY_ALLOW_SESSION */
	e->answer_when_waiting = 3;
	assert_int_equal(eng_run(e, "for i in 1 2 3; do " CURL
	    "https://127.0.0.1:$HP/c$i -o /dev/null -w '%%{http_code}\\n' & "
	    "done; wait"), 0);
	eng_expect_out(e, "200\n200\n200\n");
	assert_int_equal(e->max_waiting, 3);
	assert_int_equal(e->nanswered, 1);
	e->answer = -1;
	assert_int_equal(eng_run(e, CURL "https://127.0.0.1:$HP/c4"), 0);
	eng_expect_out(e, "\"path\": \"/c4\"");
	assert_int_equal(e->nanswered, 1);   /* the session rule answered */
	eng_end_session(e);

	/* A paused countdown does not run out. */
	eng_session(e, true, 1, NULL, 0, NULL);
	e->pause_first = true;
	e->answer = 0;
	assert_int_equal(eng_run(e, CURL "https://127.0.0.1:$HP/p1"), 0);
	eng_expect_out(e, "\"path\": \"/p1\"");
	assert_string_equal(e->answered_by, "user");
	eng_end_session(e);

	/* Denied for the session: the next CONNECT is refused at once. */
	eng_session(e, true, 30, NULL, 0, NULL);
	e->answer = 4;   /* PROXY_DENY_SESSION */
	eng_run(e, CURL "https://127.0.0.1:$HP/d1 -w ' [%%{http_code}]'");
	eng_expect_out(e, "was denied in the dashboard for the rest of this "
	    "session; start a new session to be asked again, or add `allow "
	    "127.0.0.1:");
	eng_run(e, CURL "https://127.0.0.1:$HP/d2 -w ' [%%{http_connect}]'");
	eng_expect_out(e, "[403]");
	assert_int_equal(e->nanswered, 1);
	eng_end_session(e);

	/* Denied once: a retry asks again, and the body says so. */
	eng_session(e, true, 30, NULL, 0, NULL);
	e->answer = 3;   /* PROXY_DENY_ONCE */
	eng_run(e, CURL "http://127.0.0.1:$PP/o1");
	eng_expect_out(e, "was denied once in the dashboard; retry to be asked "
	    "again, or add `allow 127.0.0.1:");
	eng_end_session(e);

	/* Denied always: the body names the rule saved and where. */
	eng_session(e, true, 30, NULL, 0, NULL);
	e->answer = 5;   /* PROXY_DENY_ALWAYS */
	eng_run(e, CURL "http://127.0.0.1:$PP/o2");
	eng_expect_out(e, "was denied in the dashboard, and `deny 127.0.0.1:");
	eng_expect_out(e, "` was saved under [policy] in your agentmux config; "
	    "remove that line");
	eng_run(e, CURL "http://127.0.0.1:$PP/o3");
	eng_expect_out(e, "it was your answer in the dashboard, saved under "
	    "[policy] in your agentmux config; remove that line");
	eng_end_session(e);
}

static void
test_slow_clients(void **state)
{
	struct eng *e = *state;

	eng_session(e, false, 60, NULL, 0, "allow 127.0.0.1", NULL);
	/* One client never reads a 50 MB body; another one stalls its head. */
	assert_int_equal(eng_run(e, "python3 $CLIENTS nonreader "
	    "'https://127.0.0.1:'$HP'/big?size=50000000' > $UPDIR/nr.out & "
	    "NR=$!; python3 $CLIENTS stall > $UPDIR/stall.out & ST=$!; "
	    "i=0; while ! grep -q waiting $UPDIR/nr.out && [ $i -lt 200 ]; do "
	    "sleep 0.05; i=$((i+1)); done; " CURL "https://127.0.0.1:$HP/fast "
	    "-w ' [%%{http_code}]'; kill $NR; wait $ST; cat $UPDIR/stall.out"),
	    0);
	eng_expect_out(e, "\"path\": \"/fast\"");
	eng_expect_out(e, "[200]");
	/* The stalled head was cut off by client_timeout. */
	eng_expect_out(e, "closed after head timeout");
	eng_end_session(e);
}

static void
test_connection_cap(void **state)
{
	struct eng *e = *state;

	/* Sixteen requests under way: the seventeenth connection gets a 503. */
	eng_session(e, false, 60, NULL, 0, "allow 127.0.0.1", NULL);
	eng_run(e, "python3 $CLIENTS cap 16 http://127.0.0.1:$PP/cap "
	    "'http://127.0.0.1:'$PP'/slow?delay=3'");
	eng_expect_out(e, "HTTP/1.1 503 Service Unavailable");
	eng_expect_out(e, "closed 0 of the held connections");
	assert_int_equal(e->nalerts, 1);
	assert_string_equal(e->alert_kind, "limit");
	eng_end_session(e);
	/* Sixteen idle ones: the one idle longest makes room for it. */
	eng_session(e, false, 60, NULL, 0, "allow 127.0.0.1", NULL);
	eng_run(e, "python3 $CLIENTS cap 16 http://127.0.0.1:$PP/cap");
	eng_expect_out(e, "HTTP/1.1 200 OK");
	eng_expect_out(e, "closed 1 of the held connections");
	assert_int_equal(e->nalerts, 0);
	eng_end_session(e);
}

/*
 * 500 idle and slowloris connections in one session: requests in it and in
 * another session on the same loop are served all the same, and the 500
 * are closed (made room for, or timed out). The times are reported, not
 * checked.
 */
static void
test_flood(void **state)
{
	struct eng *e = *state;
	struct proxy_session_conf sc;
	struct proxy_session *other;
	char *cause = NULL, *line;
	int port2;

	eng_session(e, false, 60, NULL, 0, "allow 127.0.0.1", NULL);
	memset(&sc, 0, sizeof sc);
	sc.listen_fd = eng_listen(&port2);
	sc.policy = proxy_policy_create();
	assert_int_equal(proxy_policy_add(sc.policy, "allow", "127.0.0.1",
	    "test", &cause), 0);
	sc.label = "other";
	if ((other = proxy_session_create(e->px, &sc, NULL, NULL,
	    &cause)) == NULL)
		fail_msg("session: %s", cause);
	assert_int_equal(eng_run(e, "python3 $CLIENTS flood 500 "
	    "http://127.0.0.1:$PP/flood 127.0.0.1:%d 20", port2), 0);
	eng_expect_out(e, "A ok 20/20");
	eng_expect_out(e, "B ok 20/20");
	eng_expect_out(e, "closed 500 of 500 flood connections");
	if ((line = strstr(e->out, "served in")) != NULL)
		print_message("flood: %.*s\n", (int)strcspn(strchr(line, '\n') +
		    1, "\n") + (int)(strchr(line, '\n') - line) + 1, line);
	assert_true(proxy_session_connections(e->ps) <= 16);
	proxy_session_free(other);
	eng_end_session(e);
}

static void
test_node_client(void **state)
{
	struct eng *e = *state;

	if (access("/usr/bin/node", X_OK) != 0)
		test_skip("SKIP: no node here (/usr/bin/node)");
	eng_session(e, false, 60, NULL, 0, "allow 127.0.0.1", NULL);
	assert_int_equal(eng_run(e, "node %s/tests/proxy/client.js "
	    "https://127.0.0.1:$HP/node", e->src), 0);
	eng_expect_out(e, "200 ");
	eng_expect_out(e, "\"path\": \"/node\"");
	eng_end_session(e);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_allow_deny_unknown),
		cmocka_unit_test(test_session_pause),
		cmocka_unit_test(test_session_pause_upstream),
		cmocka_unit_test(test_plain_keepalive_head),
		cmocka_unit_test(test_tunnel),
		cmocka_unit_test(test_ssrf),
		cmocka_unit_test(test_flood),
		cmocka_unit_test(test_secrets),
		cmocka_unit_test(test_secret_cleartext),
		cmocka_unit_test(test_secret_streams),
		cmocka_unit_test(test_paths),
		cmocka_unit_test(test_specificity),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_tunnel_sni),
		cmocka_unit_test(test_streaming),
		cmocka_unit_test(test_websocket),
		cmocka_unit_test(test_upstream_errors),
		cmocka_unit_test(test_client_tls_errors),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_ask),
		cmocka_unit_test(test_slow_clients),
		cmocka_unit_test(test_connection_cap),
		cmocka_unit_test(test_node_client),
	};

	return test_run_group(tests, eng_setup, eng_teardown);
}
