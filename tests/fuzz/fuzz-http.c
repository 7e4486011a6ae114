/*
 * Fuzzes the proxy's HTTP/1.1 framing (proxy_msg_*) the way proxy-conn.c
 * drives it: request heads fed in pieces with the bytes already seen
 * skipped, the strict checks, the head that goes upstream, bodies, pipelined
 * requests; or a response stream. Beyond "no crash" it checks that the
 * framing the proxy reads agrees with what the forwarded headers tell the
 * upstream (no request smuggling), that nothing forwarded can inject a line,
 * and that recorded headers never hold a secret value.
 *
 * Input: byte 0 flags (bit 0 response, bit 1 response to HEAD), byte 1 the
 * size of the pieces the stream arrives in, then the stream.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>

#include "core/core.h"
#include "fuzz.h"
#include "fuzz-util.h"
#include "proxy/proxy-int.h"

static const char *const fuzz_http_values[] = { FUZZ_SECRET_VALUE, NULL };

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	return 0;
}

static void
fuzz_http_on_body(void *arg, const char *p, size_t n)
{
	size_t *total = arg;

	*total += n;
}

/* Adds LEN bytes to SRC in separate chains of STEP bytes. */
static void
fuzz_http_add(struct evbuffer *src, const uint8_t *p, size_t len, size_t step)
{
	size_t off, n;

	for (off = 0; off < len; off += n) {
		n = len - off < step ? len - off : step;
		evbuffer_add(src, p + off, n);
	}
}

/* Nothing forwarded upstream may end a line early (header injection). */
static void
fuzz_http_no_breaks(const char *s)
{
	if (strpbrk(s, "\r\n") != NULL)
		abort();
}

/* The decimal value of a Content-Length the checks let through. */
static uint64_t
fuzz_http_cl(const char *s)
{
	uint64_t v = 0;

	while (*s == ' ' || *s == '\t')
		s++;
	for (; *s >= '0' && *s <= '9'; s++)
		v = v * 10 + (uint64_t)(*s - '0');
	return v;
}

/*
 * A head the proxy would forward: its framing must be the framing the
 * forwarded headers announce, and no part of it may carry a line break.
 */
static void
fuzz_http_check_head(struct proxy_msg *m)
{
	const char *cl = proxy_msg_get(m, "content-length");
	const char *te = proxy_msg_get(m, "transfer-encoding");
	char *text;
	size_t i;

	fuzz_http_no_breaks(proxy_msg_url(m));
	for (i = 0; i < m->nh; i++) {
		fuzz_http_no_breaks(proxy_msg_name(m, i));
		fuzz_http_no_breaks(proxy_msg_value(m, i));
		/* Framing headers are never dropped as hop-by-hop. */
		if ((strcasecmp(proxy_msg_name(m, i), "content-length") == 0 ||
		    strcasecmp(proxy_msg_name(m, i), "transfer-encoding") == 0) &&
		    proxy_msg_hop_by_hop(m, proxy_msg_name(m, i)))
			abort();
	}
	if (te != NULL && !(m->p.flags & F_CHUNKED))
		abort();
	if (cl != NULL && ((m->p.flags & F_CHUNKED) ||
	    m->p.content_length != fuzz_http_cl(cl)))
		abort();
	if (m->nh > PROXY_FIELDS_MAX || m->head_bytes > PROXY_HEAD_MAX + 1)
		abort();
	text = proxy_msg_headers_text(m, fuzz_http_values);
	fuzz_check_redacted(text, strlen(text), fuzz_http_values);
	free(text);
	proxy_msg_connection_has(m, "close");
}

/* The body of a request, moved on like relay_request does; false on error. */
static bool
fuzz_http_body(struct proxy_msg *m, struct evbuffer *src)
{
	enum proxy_msg_state st;
	size_t used;

	for (;;) {
		st = proxy_msg_feed(m, src, 0, 128 * 1024, &used);
		if (st == PROXY_MSG_ERROR)
			return false;
		evbuffer_drain(src, used);
		if (st == PROXY_MSG_DONE)
			return true;
		if (used == 0)
			return false;
	}
}

static void
fuzz_http_requests(struct evbuffer *src)
{
	enum proxy_msg_state st;
	struct proxy_msg m;
	size_t seen, used, body = 0, n;
	bool framed;
	int count;

	proxy_msg_init(&m, HTTP_REQUEST, true);
	m.on_body = fuzz_http_on_body;
	m.arg = &body;
	for (count = 0; count < 64 && evbuffer_get_length(src) != 0; count++) {
		seen = 0;
		do {
			st = proxy_msg_feed(&m, src, seen,
			    evbuffer_get_length(src) - seen, &used);
			seen += used;
		} while (st == PROXY_MSG_MORE && used != 0);
		if (st != PROXY_MSG_HEAD || proxy_msg_check_request(&m) != NULL)
			break;
		fuzz_http_check_head(&m);
		framed = proxy_msg_get(&m, "content-length") != NULL ||
		    proxy_msg_get(&m, "transfer-encoding") != NULL;
		n = evbuffer_get_length(src);
		st = proxy_msg_after_head(&m, src, seen);
		if (st == PROXY_MSG_ERROR)
			break;
		/* No framing header: the upstream reads no body, nor may we. */
		if (!framed && m.p.method != HTTP_CONNECT && st != PROXY_MSG_DONE)
			abort();
		if (evbuffer_get_length(src) != n - seen - 1)
			abort();
		if (st != PROXY_MSG_DONE && !fuzz_http_body(&m, src))
			break;
		if (m.p.method == HTTP_CONNECT || m.p.upgrade)
			break;
		proxy_msg_reset(&m);
	}
	proxy_msg_free(&m);
}

static void
fuzz_http_responses(struct evbuffer *src, bool head)
{
	enum proxy_msg_state st = PROXY_MSG_MORE;
	struct proxy_msg m;
	size_t used, body = 0;
	char *text;
	int count;

	proxy_msg_init(&m, HTTP_RESPONSE, false);
	m.on_body = fuzz_http_on_body;
	m.arg = &body;
	m.skip_body = head;
	for (count = 0; count < 64; count++) {
		st = proxy_msg_feed(&m, src, 0, evbuffer_get_length(src), &used);
		if (st == PROXY_MSG_ERROR)
			break;
		evbuffer_drain(src, used);
		if (m.head_done) {
			/* The proxy gives up on a response it frames otherwise. */
			if (proxy_msg_check_response(&m) != NULL)
				break;
			text = proxy_msg_headers_text(&m, fuzz_http_values);
			fuzz_check_redacted(text, strlen(text),
			    fuzz_http_values);
			free(text);
		}
		if (st == PROXY_MSG_DONE) {
			proxy_msg_reset(&m);
			m.skip_body = head;
			continue;
		}
		if (used == 0) {
			proxy_msg_eof(&m);
			break;
		}
	}
	proxy_msg_free(&m);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct evbuffer *src;
	uint8_t flags;
	size_t step;

	if (size < 2)
		return 0;
	flags = data[0];
	step = (size_t)data[1] + 1;
	src = evbuffer_new();
	fuzz_http_add(src, data + 2, size - 2, step);
	if (flags & 1)
		fuzz_http_responses(src, (flags & 2) != 0);
	else
		fuzz_http_requests(src);
	evbuffer_free(src);
	return 0;
}
