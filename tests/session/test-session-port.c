/* Each session's forwards on an address of its own, and their connections time out: a jail that never answers, or a port whose connect never completes, gives its slots back, and a full forward makes room for a new client; bytes moving keep a connection open. Real jails, real sockets on loopback. */
#include <sys/socket.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "core/core.h"
#include "lib/testlib.h"
#include "session/session-int.h"
#include "store/store.h"

/*
 * In the jail: port 8000 accepts and never reads or answers; 8001 echoes;
 * 8002 has a backlog of 0 and never accepts, so its second connect hangs.
 */
static const char port_server[] =
    "import socket, threading, time\n"
    "def listen(port, backlog):\n"
    "    s = socket.socket()\n"
    "    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
    "    s.bind(('127.0.0.1', port))\n"
    "    s.listen(backlog)\n"
    "    return s\n"
    "held = []\n"
    "def hold(s):\n"
    "    while True:\n"
    "        held.append(s.accept()[0])\n"
    "def echo_one(c):\n"
    "    while True:\n"
    "        d = c.recv(4096)\n"
    "        if not d:\n"
    "            break\n"
    "        c.sendall(d)\n"
    "    c.close()\n"
    "def echo(s):\n"
    "    while True:\n"
    "        c = s.accept()[0]\n"
    "        threading.Thread(target=echo_one, args=(c,), daemon=True).start()\n"
    "h, e, n = listen(8000, 16), listen(8001, 16), listen(8002, 0)\n"
    "threading.Thread(target=hold, args=(h,), daemon=True).start()\n"
    "threading.Thread(target=echo, args=(e,), daemon=True).start()\n"
    "open('ready', 'w').close()\n"
    "time.sleep(600)\n";

/* How long the loop may run for one step before the test gives up. */
#define PORT_TEST_LIMIT_US (60 * 1000000LL)

struct fixture {
	struct config *cf;
	struct event_base *base;
	struct session_ctx *ctx;
	struct session *s;
	int started;
	bool ok;
	struct timeval idle;
	struct timeval connect;
	struct timeval evict;
};

static void
fixture_started(void *arg, struct session *s, bool ok, const char *cause)
{
	struct fixture *f = arg;

	(void)s;
	f->started++;
	f->ok = ok;
	if (!ok)
		print_message("start failed: %s\n", cause);
}

static void
fixture_exited(void *arg, struct session *s, int status)
{
	(void)arg;
	(void)s;
	fail_msg("the server in the jail ended (status %d): %s", status,
	    test_read_file("srv.err"));
}

static const struct session_events fixture_events = {
	.started = fixture_started,
	.exited = fixture_exited,
};

/* Runs the loop until FN(ARG) holds; fails past PORT_TEST_LIMIT_US. */
#define loop_until(f, fn, arg) loop_until_(f, fn, arg, #fn)
static void
loop_until_(struct fixture *f, bool (*fn)(void *), void *arg,
    const char *what)
{
	int64_t t0 = util_mono_us();

	while (!fn(arg)) {
		if (util_mono_us() - t0 > PORT_TEST_LIMIT_US)
			fail_msg("the loop ran for a minute and not %s", what);
		assert_int_equal(event_base_loop(f->base, EVLOOP_NONBLOCK), 0);
		usleep(10000);
	}
}

static bool
ready(void *arg)
{
	(void)arg;
	return access("ready", F_OK) == 0;
}

static bool
started(void *arg)
{
	return ((struct fixture *)arg)->started > 0;
}

/* A session running the server above, with timeouts of IDLE and CONNECT seconds. */
static void
fixture_open(struct fixture *f, int idle, int connect)
{
	char *argv[] = { (char *)"sh", (char *)"-c",
	    (char *)"python3 srv.py 2>srv.err", NULL };
	struct session_opts so = { .kind = "run", .command = argv,
	    .on_unknown = -1, .listen_fd = -1 };
	char *cause = NULL;

	if (access("/usr/bin/python3", X_OK) != 0)
		test_skip("python3 is missing: no server to run in the jail");
	memset(f, 0, sizeof *f);
	f->idle = session_port_idle_tv;
	f->connect = session_port_connect_tv;
	f->evict = session_port_evict_tv;
	session_port_idle_tv.tv_sec = idle;
	session_port_connect_tv.tv_sec = connect;
	test_sh_ok("git init -q .");
	test_write_file("srv.py", port_server);
	f->cf = config_load_or_cause(NULL, &cause);
	if (f->cf == NULL)
		fail_msg("config: %s", cause);
	f->base = event_base_new();
	assert_non_null(f->base);
	f->ctx = session_ctx_create(f->base, f->cf, NULL, &cause);
	if (f->ctx == NULL)
		fail_msg("session_ctx_create: %s", cause);
	f->s = session_start(f->ctx, &so, &fixture_events, f, &cause);
	if (f->s == NULL)
		fail_msg("session_start: %s", cause);
	loop_until(f, started, f);
	assert_true(f->ok);
	loop_until(f, ready, NULL);
}

static void
fixture_close(struct fixture *f)
{
	session_free(f->s);
	session_ctx_free(f->ctx);
	event_base_free(f->base);
	config_free(f->cf);
	session_port_idle_tv = f->idle;
	session_port_connect_tv = f->connect;
	session_port_evict_tv = f->evict;
}

/* Forwards the jail's PORT; returns the host port (on the session's own address). */
static int
forward(struct fixture *f, int port)
{
	char *cause = NULL;
	int bound;

	if (session_port_add(f->s, NULL, false, 0, port, &bound, &cause) == -1)
		fail_msg("session_port_add: %s", cause);
	return bound;
}

/* A client on the host, connected to the forward on HOST_PORT. */
static int
client(struct fixture *f, int host_port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	char host[INET_ADDRSTRLEN];
	int fd;

	session_port_default_host(session_id(f->s), host, sizeof host);
	assert_int_equal(inet_pton(AF_INET, host, &sin.sin_addr), 1);
	sin.sin_port = htons((uint16_t)host_port);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd != -1);
	assert_int_equal(connect(fd, (struct sockaddr *)&sin, sizeof sin), 0);
	return fd;
}

/* The connections the forward to JAIL_PORT carries now. */
static size_t
conns(struct fixture *f, int jail_port)
{
	struct session_port_info pi[8];
	size_t n = session_ports(f->s, pi, 8), i;

	for (i = 0; i < n && i < 8; i++) {
		if (pi[i].jail_port == jail_port)
			return pi[i].conns;
	}
	fail_msg("no forward to port %d", jail_port);
	return 0;
}

struct watch {
	struct fixture *f;
	int port;
	size_t want;
};

static bool
conns_are(void *arg)
{
	struct watch *w = arg;

	return conns(w->f, w->port) == w->want;
}

/* Whether the server closed FD: it reads end of file (or a reset), not "nothing yet". */
static bool
closed(int fd)
{
	char c;
	ssize_t n = recv(fd, &c, 1, MSG_DONTWAIT);

	return n == 0 || (n == -1 && errno != EAGAIN && errno != EWOULDBLOCK);
}

static bool
first_closed(void *arg)
{
	return closed(*(int *)arg);
}

/*
 * A client that sends nothing to a jail that answers nothing is closed:
 * without the idle timeout it held its slot for as long as the jail liked.
 */
static void
test_idle_closed(void **state)
{
	struct fixture f;
	struct watch w = { &f, 8000, 0 };
	int hp, fd;

	(void)state;
	/* A connect timeout longer than the loop waits: only idleness closes it. */
	fixture_open(&f, 2, 600);
	hp = forward(&f, 8000);
	fd = client(&f, hp);
	w.want = 1;
	loop_until(&f, conns_are, &w);
	assert_false(closed(fd));
	w.want = 0;
	loop_until(&f, conns_are, &w);
	assert_true(closed(fd));
	close(fd);
	fixture_close(&f);
}

struct talk {
	struct fixture *f;
	int fd;
	int sent;
	int got;
	struct event *ev;
};

/* Every 200 ms a byte goes to the echo server, and what came back is read. */
static void
talk_cb(evutil_socket_t fd, short what, void *arg)
{
	struct talk *tk = arg;
	char buf[64];
	ssize_t n;

	(void)fd;
	(void)what;
	while ((n = recv(tk->fd, buf, sizeof buf, MSG_DONTWAIT)) > 0)
		tk->got += (int)n;
	if (tk->sent < 25) {
		assert_int_equal(send(tk->fd, "x", 1, MSG_NOSIGNAL), 1);
		tk->sent++;
	}
}

static bool
talked(void *arg)
{
	struct talk *tk = arg;

	return tk->sent == 25 && tk->got == 25;
}

/*
 * Bytes moving keep a connection: 5 s of a byte each 200 ms through an
 * idle timeout of 2 s; silent afterwards, it is closed.
 */
static void
test_active_kept(void **state)
{
	struct fixture f;
	struct talk tk = { 0 };
	struct watch w = { &f, 8001, 0 };
	struct timeval every = { 0, 200000 };
	int hp;

	(void)state;
	fixture_open(&f, 2, 10);
	hp = forward(&f, 8001);
	tk.f = &f;
	tk.fd = client(&f, hp);
	tk.ev = event_new(f.base, -1, EV_PERSIST, talk_cb, &tk);
	assert_non_null(tk.ev);
	assert_int_equal(event_add(tk.ev, &every), 0);
	loop_until(&f, talked, &tk);
	assert_false(closed(tk.fd));
	assert_int_equal(conns(&f, 8001), 1);
	event_free(tk.ev);
	loop_until(&f, conns_are, &w);
	assert_true(closed(tk.fd));
	close(tk.fd);
	fixture_close(&f);
}

/*
 * A connect in the jail that never completes (a full backlog) is given up
 * after the connect timeout, while the connection made before it, idle
 * for less than its own timeout, stays.
 */
static void
test_connect_given_up(void **state)
{
	struct fixture f;
	struct watch w = { &f, 8002, 1 };
	int hp, first, second;

	(void)state;
	fixture_open(&f, 600, 2);
	hp = forward(&f, 8002);
	first = client(&f, hp);
	loop_until(&f, conns_are, &w);
	second = client(&f, hp);
	w.want = 2;
	loop_until(&f, conns_are, &w);
	w.want = 1;
	loop_until(&f, conns_are, &w);
	assert_true(closed(second));
	assert_false(closed(first));
	close(first);
	close(second);
	fixture_close(&f);
}

/* Each session's own loopback address: 127.77.ID.1, then on through 127.255.255.1, never 127.0.x.x. */
static void
test_default_host(void **state)
{
	static const struct {
		int64_t id;
		const char *want;
	} v[] = {
		{ 1, "127.77.1.1" },
		{ 255, "127.77.255.1" },
		{ 256, "127.78.0.1" },
		{ 45823, "127.255.255.1" },
		{ 45824, "127.77.0.1" },
		{ 45825, "127.77.1.1" },
	};
	char host[INET_ADDRSTRLEN];
	size_t i;

	(void)state;
	for (i = 0; i < nitems(v); i++) {
		session_port_default_host(v[i].id, host, sizeof host);
		assert_string_equal(host, v[i].want);
	}
}

/* SESSION_PORT_CONNS in session-port.c. */
#define PORT_TEST_CONNS 128

/*
 * A forward full of connections the jail holds silent still takes a new
 * client: the one quiet longest makes room (it used to be refused).
 */
static void
test_full_evicts(void **state)
{
	struct fixture f;
	struct watch w = { &f, 8000, PORT_TEST_CONNS };
	int fds[PORT_TEST_CONNS], hp, late, i;

	(void)state;
	fixture_open(&f, 600, 600);
	session_port_evict_tv.tv_sec = 0;
	hp = forward(&f, 8000);
	for (i = 0; i < PORT_TEST_CONNS; i++) {
		fds[i] = client(&f, hp);
		/* Each accepted in turn: the first is the one quiet longest. */
		w.want = (size_t)i + 1;
		loop_until(&f, conns_are, &w);
	}
	late = client(&f, hp);
	loop_until(&f, first_closed, &fds[0]);
	assert_int_equal(conns(&f, 8000), PORT_TEST_CONNS);
	assert_false(closed(late));
	for (i = 1; i < PORT_TEST_CONNS; i++)
		assert_false(closed(fds[i]));
	for (i = 0; i < PORT_TEST_CONNS; i++)
		close(fds[i]);
	close(late);
	fixture_close(&f);
}

/*
 * A full forward whose connections were all busy a moment ago refuses a
 * new client instead: opening connections does not end those in use.
 */
static void
test_full_refuses_busy(void **state)
{
	struct fixture f;
	struct watch w = { &f, 8000, PORT_TEST_CONNS };
	int fds[PORT_TEST_CONNS], hp, late, i;

	(void)state;
	fixture_open(&f, 600, 600);
	hp = forward(&f, 8000);
	for (i = 0; i < PORT_TEST_CONNS; i++) {
		fds[i] = client(&f, hp);
		w.want = (size_t)i + 1;
		loop_until(&f, conns_are, &w);
	}
	late = client(&f, hp);
	loop_until(&f, first_closed, &late);
	assert_int_equal(conns(&f, 8000), PORT_TEST_CONNS);
	for (i = 0; i < PORT_TEST_CONNS; i++)
		assert_false(closed(fds[i]));
	for (i = 0; i < PORT_TEST_CONNS; i++)
		close(fds[i]);
	close(late);
	fixture_close(&f);
}

static void
marker_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	*(bool *)arg = true;
}

static bool
flag_set(void *arg)
{
	return *(bool *)arg;
}

/*
 * A paused session's forwarded connections do not age: paused past its
 * idle timeout (a timer due after that timeout fires first), a silent
 * connection is still open; resumed, it is closed once the rest of its
 * idle time has passed. Its timer counted on through the pause before.
 */
static void
test_paused_kept(void **state)
{
	struct fixture f;
	struct watch w = { &f, 8000, 1 };
	struct timeval later = { 2, 0 };
	struct event *marker;
	char *cause = NULL;
	bool fired = false;
	int hp, fd;

	(void)state;
	fixture_open(&f, 1, 600);
	hp = forward(&f, 8000);
	fd = client(&f, hp);
	loop_until(&f, conns_are, &w);
	if (session_pause(f.s, true, &cause) == -1)
		fail_msg("pause: %s", cause);
	/* Due after the connection's idle timer, which was armed before. */
	marker = evtimer_new(f.base, marker_cb, &fired);
	assert_non_null(marker);
	assert_int_equal(evtimer_add(marker, &later), 0);
	loop_until(&f, flag_set, &fired);
	assert_int_equal(conns(&f, 8000), 1);
	assert_false(closed(fd));
	if (session_pause(f.s, false, &cause) == -1)
		fail_msg("resume: %s", cause);
	w.want = 0;
	loop_until(&f, conns_are, &w);
	assert_true(closed(fd));
	event_free(marker);
	close(fd);
	fixture_close(&f);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_host),
		cmocka_unit_test_setup_teardown(test_idle_closed,
		    test_proj_setup, test_proj_teardown),
		cmocka_unit_test_setup_teardown(test_active_kept,
		    test_proj_setup, test_proj_teardown),
		cmocka_unit_test_setup_teardown(test_connect_given_up,
		    test_proj_setup, test_proj_teardown),
		cmocka_unit_test_setup_teardown(test_full_refuses_busy,
		    test_proj_setup, test_proj_teardown),
		cmocka_unit_test_setup_teardown(test_full_evicts,
		    test_proj_setup, test_proj_teardown),
		cmocka_unit_test_setup_teardown(test_paused_kept,
		    test_proj_setup, test_proj_teardown),
	};

	return test_run_group(tests, NULL, NULL);
}
