/* HTTP/1.1 framing: heads in pieces, limits, smuggling shapes, bodies, response special cases. */
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "lib/testlib.h"
#include "proxy/proxy-int.h"

struct body {
	struct buf b;
};

static void
on_body(void *arg, const char *p, size_t n)
{
	buf_add(&((struct body *)arg)->b, p, n);
}

/* Adds TEXT to SRC in pieces of STEP bytes (separate chains). */
static void
add_pieces(struct evbuffer *src, const char *text, size_t len, size_t step)
{
	size_t off, n;

	for (off = 0; off < len; off += n) {
		n = len - off < step ? len - off : step;
		evbuffer_add(src, text + off, n);
	}
}

/* Feeds a request head like the proxy does: skipping what was seen. */
static enum proxy_msg_state
feed_head(struct proxy_msg *m, struct evbuffer *src, size_t *seen)
{
	enum proxy_msg_state st;
	size_t used;

	do {
		st = proxy_msg_feed(m, src, *seen,
		    evbuffer_get_length(src) - *seen, &used);
		*seen += used;
	} while (st == PROXY_MSG_MORE && used != 0);
	return st;
}

static void
test_head_in_pieces(void **state)
{
	static const char req[] = "POST http://a.example/x?y=1 HTTP/1.1\r\n"
	    "Host: a.example\r\n"
	    "Content-Length: 5\r\n"
	    "X-Empty:\r\n"
	    "X-Long: abcdefghijklmnopqrstuvwxyz\r\n"
	    "\r\n"
	    "hello"
	    "GET http://a.example/next HTTP/1.1\r\nHost: a.example\r\n\r\n";
	size_t steps[] = { 1, 3, 7, sizeof req };
	struct evbuffer *src, *dst;
	struct proxy_msg m;
	struct body body;
	size_t i, seen, used;

	for (i = 0; i < nitems(steps); i++) {
		src = evbuffer_new();
		dst = evbuffer_new();
		buf_init(&body.b);
		proxy_msg_init(&m, HTTP_REQUEST, true);
		m.on_body = on_body;
		m.arg = &body;
		add_pieces(src, req, sizeof req - 1, steps[i]);
		seen = 0;
		assert_int_equal(feed_head(&m, src, &seen), PROXY_MSG_HEAD);
		assert_string_equal(proxy_msg_url(&m), "http://a.example/x?y=1");
		assert_int_equal(m.nh, 4);
		assert_string_equal(proxy_msg_get(&m, "x-long"),
		    "abcdefghijklmnopqrstuvwxyz");
		assert_string_equal(proxy_msg_get(&m, "X-EMPTY"), "");
		assert_string_equal(proxy_msg_name(&m, 1), "Content-Length");
		assert_null(proxy_msg_check_request(&m));
		assert_int_equal(proxy_msg_after_head(&m, src, seen),
		    PROXY_MSG_MORE);
		assert_int_equal(proxy_msg_feed(&m, src, 0,
		    evbuffer_get_length(src), &used), PROXY_MSG_DONE);
		assert_int_equal(used, 5);
		evbuffer_remove_buffer(src, dst, used);
		assert_string_equal(body.b.data, "hello");
		/* The pipelined request is left for later, untouched. */
		assert_int_equal(evbuffer_get_length(src),
		    strlen(strstr(req, "GET ")));
		proxy_msg_reset(&m);
		seen = 0;
		assert_int_equal(feed_head(&m, src, &seen), PROXY_MSG_HEAD);
		assert_string_equal(proxy_msg_url(&m), "http://a.example/next");
		assert_int_equal(proxy_msg_after_head(&m, src, seen),
		    PROXY_MSG_DONE);
		assert_int_equal(evbuffer_get_length(src), 0);
		proxy_msg_free(&m);
		buf_free(&body.b);
		evbuffer_free(src);
		evbuffer_free(dst);
	}
}

static void
test_chunked_body(void **state)
{
	static const char req[] = "POST http://a/ HTTP/1.1\r\nHost: a\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n"
	    "5\r\nhello\r\n1;ext=1\r\n \r\n6\r\nworld!\r\n0\r\nX-T: 1\r\n\r\n";
	struct evbuffer *src = evbuffer_new();
	struct proxy_msg m;
	struct body body;
	size_t seen = 0, used;
	enum proxy_msg_state st;

	buf_init(&body.b);
	proxy_msg_init(&m, HTTP_REQUEST, true);
	m.on_body = on_body;
	m.arg = &body;
	add_pieces(src, req, sizeof req - 1, 4);
	assert_int_equal(feed_head(&m, src, &seen), PROXY_MSG_HEAD);
	assert_null(proxy_msg_check_request(&m));
	assert_int_equal(proxy_msg_after_head(&m, src, seen), PROXY_MSG_MORE);
	assert_true(m.p.flags & F_CHUNKED);
	do {
		st = proxy_msg_feed(&m, src, 0, 3, &used);
		evbuffer_drain(src, used);
	} while (st == PROXY_MSG_MORE && used != 0);
	assert_int_equal(st, PROXY_MSG_DONE);
	assert_string_equal(body.b.data, "hello world!");
	assert_int_equal(evbuffer_get_length(src), 0);
	proxy_msg_free(&m);
	buf_free(&body.b);
	evbuffer_free(src);
}

static const char *
check(const char *head)
{
	static char err[256];
	struct evbuffer *src = evbuffer_new();
	struct proxy_msg m;
	enum proxy_msg_state st;
	const char *why;
	size_t seen = 0;

	proxy_msg_init(&m, HTTP_REQUEST, true);
	evbuffer_add(src, head, strlen(head));
	st = feed_head(&m, src, &seen);
	if (st == PROXY_MSG_ERROR)
		why = m.error;
	else if (st != PROXY_MSG_HEAD)
		why = "incomplete";
	else
		why = proxy_msg_check_request(&m);
	snprintf(err, sizeof err, "%s", why != NULL ? why : "ok");
	proxy_msg_free(&m);
	evbuffer_free(src);
	return err;
}

static void
test_strict(void **state)
{
	static const struct {
		const char *head;
		const char *want;
	} t[] = {
		{ "GET http://a/ HTTP/1.1\r\nHost: a\r\n\r\n", "ok" },
		{ "POST http://a/ HTTP/1.1\r\nContent-Length: 1\r\n"
		  "Transfer-Encoding: chunked\r\n\r\n", "content-length" },
		{ "POST http://a/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
		  "Content-Length: 1\r\n\r\n", "" },
		{ "POST http://a/ HTTP/1.1\r\nContent-Length: 1\r\n"
		  "Content-Length: 1\r\n\r\n", "" },
		{ "POST http://a/ HTTP/1.1\r\nContent-Length: 1a\r\n\r\n",
		  "content-length" },
		{ "POST http://a/ HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n",
		  "other than chunked" },
		{ "POST http://a/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
		  "Transfer-Encoding: chunked\r\n\r\n", "" },
		{ "POST http://a/ HTTP/1.1\r\nTransfer-Encoding : chunked\r\n\r\n",
		  "" },
		/* The parser takes these names for framing; upstreams do not. */
		{ "POST http://a/ HTTP/1.1\r\nTransfer-Encodingx: chunked\r\n"
		  "\r\n", "framing" },
		{ "POST http://a/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
		  "Transfer-Encoding&: chunked\r\n\r\n", "framing" },
		{ "POST http://a/ HTTP/1.1\r\nContent-Length: 5\r\n"
		  "Content-Lengthx: 7\r\n\r\n", "ok" },
		{ "GET http://a/ HTTP/1.1\r\nX: a\r\n\tb\r\n\r\n", "folded" },
		{ "GET http://a/ HTTP/2.0\r\n\r\n", "HTTP/1.0 and HTTP/1.1" },
		{ "GET http://a/ HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
		  "more than one Host" },
		{ "BREW http://a/ HTTP/1.1\r\n\r\n", "method" },
		{ "GET http://a/\x01 HTTP/1.1\r\n\r\n", "URL" },
		{ "GET http://a/ HTTP/1.1\r\nX: a\x00" "b\r\n\r\n", "" },
	};
	const char *got;
	size_t i;

	for (i = 0; i < nitems(t); i++) {
		got = check(t[i].head);
		if (strcmp(t[i].want, "ok") == 0 ? strcmp(got, "ok") != 0 :
		    strcmp(got, "ok") == 0 || strstr(got, t[i].want) == NULL)
			fail_msg("case %zu: got '%s', want '%s'", i, got,
			    t[i].want);
	}
}

static void
test_limits(void **state)
{
	struct buf b;
	int i;

	buf_init(&b);
	buf_adds(&b, "GET http://a/ HTTP/1.1\r\n");
	for (i = 0; i < 100; i++)
		buf_printf(&b, "X-%d: y\r\n", i);
	buf_adds(&b, "\r\n");
	assert_string_equal(check(b.data), "ok");
	buf_reset(&b);
	buf_adds(&b, "GET http://a/ HTTP/1.1\r\n");
	for (i = 0; i < 101; i++)
		buf_printf(&b, "X-%d: y\r\n", i);
	buf_adds(&b, "\r\n");
	assert_string_equal(check(b.data), "more than 100 header fields");
	buf_reset(&b);
	buf_adds(&b, "GET http://a/ HTTP/1.1\r\nX: ");
	for (i = 0; i < 65000; i++)
		buf_addc(&b, 'y');
	buf_adds(&b, "\r\n\r\n");
	assert_string_equal(check(b.data), "ok");
	buf_reset(&b);
	buf_adds(&b, "GET http://a/ HTTP/1.1\r\nX: ");
	for (i = 0; i < 66000; i++)
		buf_addc(&b, 'y');
	buf_adds(&b, "\r\n\r\n");
	assert_string_equal(check(b.data), "the header block is over 64 KiB");
	buf_free(&b);
}

/* Feeds a whole response; returns the state and how many bytes it took. */
static enum proxy_msg_state
response(struct proxy_msg *m, const char *text, bool head, size_t *took)
{
	struct evbuffer *src = evbuffer_new();
	enum proxy_msg_state st;
	size_t used;

	proxy_msg_reset(m);
	m->skip_body = head;
	evbuffer_add(src, text, strlen(text));
	*took = 0;
	do {
		st = proxy_msg_feed(m, src, 0, evbuffer_get_length(src), &used);
		evbuffer_drain(src, used);
		*took += used;
	} while (st == PROXY_MSG_MORE && used != 0);
	evbuffer_free(src);
	return st;
}

static void
test_responses(void **state)
{
	struct proxy_msg m;
	size_t took;

	proxy_msg_init(&m, HTTP_RESPONSE, false);
	/* HEAD: the length describes a body that is not there. */
	assert_int_equal(response(&m, "HTTP/1.1 200 OK\r\nContent-Length: 10"
	    "\r\n\r\nNEXT", true, &took), PROXY_MSG_DONE);
	assert_int_equal(took, strlen("HTTP/1.1 200 OK\r\nContent-Length: "
	    "10\r\n\r\n"));
	assert_string_equal(proxy_msg_url(&m), "OK");
	assert_int_equal(response(&m, "HTTP/1.1 204 No Content\r\n\r\n", false,
	    &took), PROXY_MSG_DONE);
	assert_int_equal(response(&m, "HTTP/1.1 304 Not Modified\r\n"
	    "Content-Length: 5\r\n\r\n", false, &took), PROXY_MSG_DONE);
	assert_int_equal(response(&m, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 "
	    "200 OK\r\n", false, &took), PROXY_MSG_DONE);
	assert_int_equal(m.p.status_code, 100);
	assert_int_equal(took, strlen("HTTP/1.1 100 Continue\r\n\r\n"));
	assert_int_equal(response(&m, "HTTP/1.1 101 Switching Protocols\r\n"
	    "Upgrade: websocket\r\nConnection: Upgrade\r\n\r\n\x81\x02hi", false,
	    &took), PROXY_MSG_DONE);
	assert_true(m.p.upgrade);
	assert_int_equal(took, strlen("HTTP/1.1 101 Switching Protocols\r\n"
	    "Upgrade: websocket\r\nConnection: Upgrade\r\n\r\n"));
	/* Close-delimited: only the end of the stream ends it. */
	assert_int_equal(response(&m, "HTTP/1.1 200 OK\r\n\r\nabc", false,
	    &took), PROXY_MSG_MORE);
	assert_int_equal(proxy_msg_eof(&m), PROXY_MSG_DONE);
	assert_false(http_should_keep_alive(&m.p));
	assert_int_equal(response(&m, "HTTP/1.1 200 OK\r\nContent-Length: 9"
	    "\r\n\r\nabc", false, &took), PROXY_MSG_MORE);
	assert_int_equal(proxy_msg_eof(&m), PROXY_MSG_ERROR);
	/* The parser reads "Transfer-Encodingx" as framing; a client would not. */
	assert_int_equal(response(&m, "HTTP/1.1 200 OK\r\nTransfer-Encoding: "
	    "chunked\r\nTransfer-Encodingx: y\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
	    false, &took), PROXY_MSG_MORE);
	assert_non_null(proxy_msg_check_response(&m));
	assert_int_equal(response(&m, "HTTP/1.1 200 OK\r\nTransfer-Encoding-"
	    "Not: chunked\r\n\r\nabc", false, &took), PROXY_MSG_MORE);
	assert_non_null(proxy_msg_check_response(&m));
	assert_int_equal(response(&m, "HTTP/1.1 200 OK\r\nContent-Length: 3"
	    "\r\n\r\nabc", false, &took), PROXY_MSG_DONE);
	assert_null(proxy_msg_check_response(&m));
	assert_int_equal(response(&m, "HTTP/1.1 200 OK\r\nTransfer-Encoding: "
	    "gzip, Chunked\r\n\r\n0\r\n\r\n", false, &took), PROXY_MSG_DONE);
	assert_null(proxy_msg_check_response(&m));
	assert_int_equal(response(&m, "HTTP/1.1 200 OK\r\nTransfer-Encoding: "
	    "gzip\r\n\r\nabc", false, &took), PROXY_MSG_MORE);
	assert_null(proxy_msg_check_response(&m));
	proxy_msg_free(&m);
}

static void
test_hop_by_hop(void **state)
{
	static const char req[] = "GET http://a/ HTTP/1.1\r\nHost: a\r\n"
	    "Connection: keep-alive, X-Private\r\nX-Private: 1\r\n"
	    "Proxy-Authorization: Basic x\r\nX-Other: 2\r\n"
	    "Authorization: Bearer tok\r\n\r\n";
	struct evbuffer *src = evbuffer_new();
	struct proxy_msg m;
	size_t seen = 0;
	char *text;

	proxy_msg_init(&m, HTTP_REQUEST, true);
	evbuffer_add(src, req, sizeof req - 1);
	assert_int_equal(feed_head(&m, src, &seen), PROXY_MSG_HEAD);
	assert_true(proxy_msg_connection_has(&m, "x-private"));
	assert_true(proxy_msg_connection_has(&m, "KEEP-ALIVE"));
	assert_false(proxy_msg_connection_has(&m, "close"));
	assert_true(proxy_msg_hop_by_hop(&m, "X-Private"));
	assert_true(proxy_msg_hop_by_hop(&m, "proxy-authorization"));
	assert_true(proxy_msg_hop_by_hop(&m, "Connection"));
	assert_false(proxy_msg_hop_by_hop(&m, "X-Other"));
	assert_false(proxy_msg_hop_by_hop(&m, "Host"));
	text = proxy_msg_headers_text(&m, NULL);
	assert_string_equal(text, "Host: a\nConnection: keep-alive, X-Private\n"
	    "X-Private: 1\nProxy-Authorization: [redacted]\nX-Other: 2\n"
	    "Authorization: [redacted]\n");
	free(text);
	proxy_msg_free(&m);
	evbuffer_free(src);
}

static void
test_respond(void **state)
{
	struct evbuffer *out = evbuffer_new();
	char *s;
	size_t len;

	proxy_http_respond(out, 403, "agentmux: no");
	len = evbuffer_get_length(out);
	s = xmalloc(len + 1);
	evbuffer_remove(out, s, len);
	s[len] = '\0';
	assert_non_null(strstr(s, "HTTP/1.1 403 Forbidden\r\n"));
	assert_non_null(strstr(s, "Content-Length: 13\r\n"));
	assert_non_null(strstr(s, "Connection: close\r\n"));
	assert_non_null(strstr(s, "\r\n\r\nagentmux: no\n"));
	free(s);
	evbuffer_free(out);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_head_in_pieces),
		cmocka_unit_test(test_chunked_body),
		cmocka_unit_test(test_strict),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_responses),
		cmocka_unit_test(test_hop_by_hop),
		cmocka_unit_test(test_respond),
	};

	return test_run_group(tests, NULL, NULL);
}
