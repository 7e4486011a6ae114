/* HTTP/1.1 framing with libhttp-parser: heads collected with limits, bodies delimited, strict checks. */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>

#include "proxy/proxy-int.h"

#define PROXY_MSG_NOURL SIZE_MAX
#define PROXY_RESP_FIELDS_MAX 256

enum {
	PROXY_LAST_NONE,
	PROXY_LAST_FIELD,
	PROXY_LAST_VALUE,
	PROXY_LAST_URL,
};

/* Ends the open name, value or URL; a name without a value gets "". */
static void
proxy_msg_close_segment(struct proxy_msg *m)
{
	if (m->last == PROXY_LAST_FIELD) {
		buf_addc(&m->text, '\0');
		m->h[m->nh - 1].value = m->text.len;
		m->last = PROXY_LAST_VALUE;
	}
	if (m->last != PROXY_LAST_NONE)
		buf_addc(&m->text, '\0');
	m->last = PROXY_LAST_NONE;
}

static int
proxy_msg_on_url(http_parser *p, const char *at, size_t len)
{
	struct proxy_msg *m = p->data;

	if (m->last != PROXY_LAST_URL) {
		proxy_msg_close_segment(m);
		m->url = m->text.len;
		m->last = PROXY_LAST_URL;
	}
	buf_add(&m->text, at, len);
	return 0;
}

static int
proxy_msg_on_field(http_parser *p, const char *at, size_t len)
{
	struct proxy_msg *m = p->data;
	size_t max = m->type == HTTP_REQUEST ? PROXY_FIELDS_MAX :
	    PROXY_RESP_FIELDS_MAX;

	if (m->last != PROXY_LAST_FIELD) {
		if (m->nh == max) {
			m->error = m->type == HTTP_REQUEST ?
			    "more than 100 header fields" :
			    "more than 256 header fields";
			return -1;
		}
		proxy_msg_close_segment(m);
		if (m->nh == m->caph) {
			m->caph = m->caph == 0 ? 16 : m->caph * 2;
			m->h = xreallocarray(m->h, m->caph, sizeof *m->h);
		}
		m->h[m->nh].name = m->text.len;
		m->h[m->nh].value = m->text.len;
		m->nh++;
		m->last = PROXY_LAST_FIELD;
	}
	buf_add(&m->text, at, len);
	return 0;
}

static int
proxy_msg_on_value(http_parser *p, const char *at, size_t len)
{
	struct proxy_msg *m = p->data;

	if (m->last != PROXY_LAST_VALUE) {
		buf_addc(&m->text, '\0');
		m->h[m->nh - 1].value = m->text.len;
		m->last = PROXY_LAST_VALUE;
	}
	buf_add(&m->text, at, len);
	return 0;
}

static int
proxy_msg_on_headers_complete(http_parser *p)
{
	struct proxy_msg *m = p->data;

	int status = p->status_code;

	proxy_msg_close_segment(m);
	m->head_done = true;
	if (m->pause_head)
		http_parser_pause(p, 1);
	/* 304 may carry the length of what it did not send (RFC 9110 8.6). */
	if (m->type == HTTP_RESPONSE && (m->skip_body || status / 100 == 1 ||
	    status == 204 || status == 304))
		return 1;
	return 0;
}

static int
proxy_msg_on_body(http_parser *p, const char *at, size_t len)
{
	struct proxy_msg *m = p->data;

	if (m->on_body != NULL)
		m->on_body(m->arg, at, len);
	return 0;
}

static int
proxy_msg_on_complete(http_parser *p)
{
	struct proxy_msg *m = p->data;

	m->done = true;
	http_parser_pause(p, 1);
	return 0;
}

static const http_parser_settings proxy_msg_settings = {
	.on_url = proxy_msg_on_url,
	.on_status = proxy_msg_on_url,
	.on_header_field = proxy_msg_on_field,
	.on_header_value = proxy_msg_on_value,
	.on_headers_complete = proxy_msg_on_headers_complete,
	.on_body = proxy_msg_on_body,
	.on_message_complete = proxy_msg_on_complete,
};

void
proxy_msg_init(struct proxy_msg *m, enum http_parser_type type,
    bool pause_head)
{
	memset(m, 0, sizeof *m);
	buf_init(&m->text);
	m->type = type;
	m->pause_head = pause_head;
	proxy_msg_reset(m);
}

void
proxy_msg_reset(struct proxy_msg *m)
{
	http_parser_init(&m->p, m->type);
	m->p.data = m;
	buf_reset(&m->text);
	m->url = PROXY_MSG_NOURL;
	m->nh = 0;
	m->head_bytes = 0;
	m->last = PROXY_LAST_NONE;
	m->head_done = m->done = m->skip_body = m->folded = m->prev_lf = false;
	m->error = NULL;
}

void
proxy_msg_free(struct proxy_msg *m)
{
	buf_free(&m->text);
	free(m->h);
	m->h = NULL;
	m->nh = m->caph = 0;
}

/* Obsolete line folding (a line that starts with a space) is refused: see RFC 9112 5.2. */
static void
proxy_msg_scan_fold(struct proxy_msg *m, const char *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		if (m->prev_lf && (p[i] == ' ' || p[i] == '\t'))
			m->folded = true;
		m->prev_lf = p[i] == '\n';
	}
}

/* Runs the parser over LEN bytes at P; returns how many it took. */
static size_t
proxy_msg_execute(struct proxy_msg *m, const char *p, size_t len)
{
	bool in_head = !m->head_done;
	size_t got;

	if (in_head && len > PROXY_HEAD_MAX + 1 - m->head_bytes)
		len = PROXY_HEAD_MAX + 1 - m->head_bytes;
	got = http_parser_execute(&m->p, &proxy_msg_settings, p, len);
	if (in_head) {
		if (m->type == HTTP_REQUEST)
			proxy_msg_scan_fold(m, p, got);
		if (!m->head_done)
			m->head_bytes += got;
	}
	return got;
}

enum proxy_msg_state
proxy_msg_feed(struct proxy_msg *m, struct evbuffer *src, size_t skip,
    size_t max, size_t *used)
{
	struct evbuffer_iovec v[8];
	struct evbuffer_ptr pos;
	size_t total = 0, off = 0, len, got;
	enum http_errno err;
	int n, i = 0;

	*used = 0;
	if (m->done)
		return PROXY_MSG_DONE;
	if (skip != 0 && evbuffer_ptr_set(src, &pos, skip,
	    EVBUFFER_PTR_SET) == -1)
		return PROXY_MSG_MORE;
	n = evbuffer_peek(src, (ev_ssize_t)max, skip != 0 ? &pos : NULL, v,
	    (int)nitems(v));
	if (n > (int)nitems(v))
		n = (int)nitems(v);
	while (i < n && total < max) {
		len = v[i].iov_len - off;
		if (len == 0) {          /* an empty chain; 0 bytes would mean EOF */
			i++;
			off = 0;
			continue;
		}
		if (len > max - total)
			len = max - total;
		got = proxy_msg_execute(m, (const char *)v[i].iov_base + off,
		    len);
		total += got;
		off += got;
		if (off == v[i].iov_len) {
			i++;
			off = 0;
		}
		err = HTTP_PARSER_ERRNO(&m->p);
		if (err == HPE_PAUSED)
			break;
		if (err != HPE_OK) {
			if (m->error == NULL)
				m->error = http_errno_description(err);
			return PROXY_MSG_ERROR;
		}
		if (!m->head_done && m->head_bytes > PROXY_HEAD_MAX) {
			m->error = "the header block is over 64 KiB";
			return PROXY_MSG_ERROR;
		}
		if (got == 0)
			break;
	}
	*used = total;
	if (m->done)
		return PROXY_MSG_DONE;
	if (m->head_done && m->pause_head &&
	    HTTP_PARSER_ERRNO(&m->p) == HPE_PAUSED)
		return PROXY_MSG_HEAD;
	return PROXY_MSG_MORE;
}

enum proxy_msg_state
proxy_msg_eof(struct proxy_msg *m)
{
	if (m->done)
		return PROXY_MSG_DONE;
	http_parser_execute(&m->p, &proxy_msg_settings, NULL, 0);
	if (m->done)
		return PROXY_MSG_DONE;
	m->error = "the connection closed before the message ended";
	return PROXY_MSG_ERROR;
}

enum proxy_msg_state
proxy_msg_after_head(struct proxy_msg *m, struct evbuffer *src, size_t used)
{
	struct evbuffer_ptr pos;
	enum http_errno err;
	char c;

	http_parser_pause(&m->p, 0);
	if (evbuffer_ptr_set(src, &pos, used, EVBUFFER_PTR_SET) == -1 ||
	    evbuffer_copyout_from(src, &pos, &c, 1) != 1) {
		m->error = "the head ended unexpectedly";
		return PROXY_MSG_ERROR;
	}
	http_parser_execute(&m->p, &proxy_msg_settings, &c, 1);
	evbuffer_drain(src, used + 1);
	err = HTTP_PARSER_ERRNO(&m->p);
	if (err == HPE_PAUSED && m->done)
		return PROXY_MSG_DONE;
	if (err != HPE_OK) {
		m->error = http_errno_description(err);
		return PROXY_MSG_ERROR;
	}
	return PROXY_MSG_MORE;
}

const char *
proxy_msg_url(struct proxy_msg *m)
{
	if (m->url == PROXY_MSG_NOURL || m->text.data == NULL)
		return "";
	return m->text.data + m->url;
}

const char *
proxy_msg_name(struct proxy_msg *m, size_t i)
{
	return m->text.data + m->h[i].name;
}

const char *
proxy_msg_value(struct proxy_msg *m, size_t i)
{
	return m->text.data + m->h[i].value;
}

const char *
proxy_msg_get(struct proxy_msg *m, const char *name)
{
	size_t i;

	for (i = 0; i < m->nh; i++) {
		if (strcasecmp(proxy_msg_name(m, i), name) == 0)
			return proxy_msg_value(m, i);
	}
	return NULL;
}

size_t
proxy_msg_count(struct proxy_msg *m, const char *name)
{
	size_t i, n = 0;

	for (i = 0; i < m->nh; i++) {
		if (strcasecmp(proxy_msg_name(m, i), name) == 0)
			n++;
	}
	return n;
}

/* True if the comma-separated LIST holds TOKEN (case-insensitive). */
static bool
proxy_http_list_has(const char *list, const char *token)
{
	size_t tlen = strlen(token), n;
	const char *p = list;

	while (*p != '\0') {
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		n = strcspn(p, ", \t");
		if (n == tlen && strncasecmp(p, token, n) == 0)
			return true;
		p += n;
		while (*p != '\0' && *p != ',')
			p++;
	}
	return false;
}

/* VALUE without surrounding blanks equals WORD, ignoring case. */
static bool
proxy_http_is(const char *value, const char *word)
{
	size_t n;

	while (*value == ' ' || *value == '\t')
		value++;
	n = strlen(word);
	if (strncasecmp(value, word, n) != 0)
		return false;
	for (value += n; *value == ' ' || *value == '\t'; value++)
		;
	return *value == '\0';
}

static bool
proxy_http_digits(const char *s)
{
	size_t n = 0;

	while (*s == ' ' || *s == '\t')
		s++;
	for (; isdigit((unsigned char)*s); s++)
		n++;
	while (*s == ' ' || *s == '\t')
		s++;
	return n > 0 && n <= 18 && *s == '\0';
}

/* RFC 9110 token characters: Debian's parser is built lenient and lets spaces into names. */
static bool
proxy_http_token(const char *s)
{
	if (*s == '\0')
		return false;
	for (; *s != '\0'; s++) {
		if (!isalnum((unsigned char)*s) &&
		    strchr("!#$%&'*+-.^_`|~", *s) == NULL)
			return false;
	}
	return true;
}

/*
 * The parser must read the framing as the headers we forward announce it:
 * it takes names that merely start like a framing header
 * ("Transfer-Encodingx") for one, and the upstream would not.
 */
static const char *
proxy_msg_check_framing(struct proxy_msg *m, const char *cl, const char *te)
{
	bool chunked = (m->p.flags & F_CHUNKED) != 0;
	bool has_cl = (m->p.flags & F_CONTENTLENGTH) != 0;

	if ((te != NULL) != chunked || (te != NULL) !=
	    (m->p.uses_transfer_encoding != 0) || (cl != NULL) != has_cl)
		return "a header name that looks like a framing header";
	if (cl != NULL && m->p.content_length != strtoull(cl, NULL, 10))
		return "an invalid Content-Length";
	return NULL;
}

const char *
proxy_msg_check_request(struct proxy_msg *m)
{
	const char *cl = proxy_msg_get(m, "content-length");
	const char *te = proxy_msg_get(m, "transfer-encoding");
	size_t i;

	if (m->p.http_major != 1 || m->p.http_minor > 1)
		return "only HTTP/1.0 and HTTP/1.1 are spoken here";
	if (m->folded)
		return "a header line is folded (obsolete line folding)";
	for (i = 0; i < m->nh; i++) {
		if (!proxy_http_token(proxy_msg_name(m, i)))
			return "a header name that is not a token";
	}
	if (proxy_msg_count(m, "content-length") > 1)
		return "more than one Content-Length";
	if (proxy_msg_count(m, "transfer-encoding") > 1)
		return "more than one Transfer-Encoding";
	if (cl != NULL && te != NULL)
		return "both Content-Length and Transfer-Encoding";
	if (te != NULL && !proxy_http_is(te, "chunked"))
		return "a Transfer-Encoding other than chunked";
	if (cl != NULL && !proxy_http_digits(cl))
		return "an invalid Content-Length";
	if (proxy_msg_count(m, "host") > 1)
		return "more than one Host";
	return proxy_msg_check_framing(m, cl, te);
}

/* True if the last coding of the last Transfer-Encoding is chunked, as clients read it. */
static bool
proxy_msg_ends_chunked(struct proxy_msg *m)
{
	const char *v = NULL, *last;
	size_t i, n;

	for (i = 0; i < m->nh; i++) {
		if (strcasecmp(proxy_msg_name(m, i), "transfer-encoding") == 0)
			v = proxy_msg_value(m, i);
	}
	if (v == NULL)
		return false;
	last = strrchr(v, ',') != NULL ? strrchr(v, ',') + 1 : v;
	while (*last == ' ' || *last == '\t')
		last++;
	n = strcspn(last, " \t;");
	return n == 7 && strncasecmp(last, "chunked", 7) == 0;
}

const char *
proxy_msg_check_response(struct proxy_msg *m)
{
	bool te = proxy_msg_count(m, "transfer-encoding") != 0;
	bool cl = proxy_msg_count(m, "content-length") != 0;

	/* A client would frame the body otherwise than the parser does. */
	if (te != (m->p.uses_transfer_encoding != 0) ||
	    cl != ((m->p.flags & F_CONTENTLENGTH) != 0) ||
	    proxy_msg_ends_chunked(m) != ((m->p.flags & F_CHUNKED) != 0))
		return "a header name that looks like a framing header";
	return NULL;
}

bool
proxy_msg_connection_has(struct proxy_msg *m, const char *token)
{
	size_t i;

	for (i = 0; i < m->nh; i++) {
		if (strcasecmp(proxy_msg_name(m, i), "connection") == 0 &&
		    proxy_http_list_has(proxy_msg_value(m, i), token))
			return true;
	}
	return false;
}

bool
proxy_msg_hop_by_hop(struct proxy_msg *m, const char *name)
{
	static const char *const hop[] = { "connection", "proxy-connection",
		"keep-alive", "proxy-authorization", "proxy-authenticate", "te",
		"trailer", "upgrade" };
	size_t i;

	for (i = 0; i < nitems(hop); i++) {
		if (strcasecmp(name, hop[i]) == 0)
			return true;
	}
	/* Whatever Connection names is for this hop only, except framing. */
	if (strcasecmp(name, "transfer-encoding") == 0 ||
	    strcasecmp(name, "content-length") == 0 ||
	    strcasecmp(name, "host") == 0)
		return false;
	return proxy_msg_connection_has(m, name);
}

char *
proxy_msg_headers_text(struct proxy_msg *m, const char *const *values)
{
	struct buf b;
	size_t i;

	buf_init(&b);
	buf_add(&b, "", 0);
	for (i = 0; i < m->nh; i++) {
		buf_adds(&b, proxy_msg_name(m, i));
		buf_add(&b, ": ", 2);
		buf_adds(&b, proxy_msg_value(m, i));
		buf_addc(&b, '\n');
	}
	proxy_redact_inplace(&b, values);
	return buf_steal(&b);
}

const char *
proxy_http_reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 408: return "Request Timeout";
	case 413: return "Content Too Large";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	default: return "Error";
	}
}

void
proxy_http_respond(struct evbuffer *out, int status, const char *body)
{
	size_t len = strlen(body);
	bool nl = len == 0 || body[len - 1] != '\n';

	evbuffer_add_printf(out, "HTTP/1.1 %d %s\r\n"
	    "Content-Type: text/plain; charset=utf-8\r\n"
	    "Content-Length: %zu\r\n"
	    "Cache-Control: no-store\r\n"
	    "Connection: close\r\n"
	    "\r\n%s%s", status, proxy_http_reason(status), len + (nl ? 1 : 0),
	    body, nl ? "\n" : "");
}
