/* One request's record, the same struct from the proxy through the session to the store and the screen. */
#include <stdlib.h>
#include <string.h>

#include "core.h"

void
request_init(struct request *r)
{
	memset(r, 0, sizeof *r);
	buf_init(&r->req_body);
	buf_init(&r->resp_body);
	r->ttfb_us = -1;
}

void
request_clear(struct request *r)
{
	char *const s[] = { r->method, r->scheme, r->host, r->path,
		r->http_version, r->status_text, r->decision, r->rule, r->error,
		r->req_headers, r->resp_headers, r->mime_type };
	size_t i;

	for (i = 0; i < nitems(s); i++)
		free(s[i]);
	buf_free(&r->req_body);
	buf_free(&r->resp_body);
	request_init(r);
}

void
request_free(struct request *r)
{
	if (r == NULL)
		return;
	request_clear(r);
	free(r);
}

void
request_set(char **field, const char *value)
{
	char *old = *field;

	/* VALUE may be the old string itself. */
	*field = value != NULL ? xstrdup(value) : NULL;
	free(old);
}

static char *
request_dup(const char *s)
{
	return s != NULL ? xstrdup(s) : NULL;
}

/* Copies a body, keeping "none" (data NULL) apart from "empty". */
static void
request_copy_body(struct buf *to, const struct buf *from)
{
	buf_init(to);
	if (from->data == NULL)
		return;
	to->data = xmalloc(from->len + 1);
	memcpy(to->data, from->data, from->len);
	to->data[from->len] = '\0';
	to->len = from->len;
	to->cap = from->len + 1;
}

struct request *
request_copy(const struct request *r, bool bodies)
{
	struct request *c = xmalloc(sizeof *c);

	*c = *r;
	c->method = request_dup(r->method);
	c->scheme = request_dup(r->scheme);
	c->host = request_dup(r->host);
	c->path = request_dup(r->path);
	c->http_version = request_dup(r->http_version);
	c->status_text = request_dup(r->status_text);
	c->decision = request_dup(r->decision);
	c->rule = request_dup(r->rule);
	c->error = request_dup(r->error);
	c->req_headers = request_dup(r->req_headers);
	c->resp_headers = request_dup(r->resp_headers);
	c->mime_type = request_dup(r->mime_type);
	buf_init(&c->req_body);
	buf_init(&c->resp_body);
	if (bodies) {
		request_copy_body(&c->req_body, &r->req_body);
		request_copy_body(&c->resp_body, &r->resp_body);
	}
	return c;
}
