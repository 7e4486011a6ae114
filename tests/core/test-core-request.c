/* The request record: empty, copied deep (bodies only when asked), freed, its strings replaced. */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "lib/testlib.h"

/* A finished record with every string and both bodies (the response's empty). */
static struct request *
full(void)
{
	struct request *r = xmalloc(sizeof *r);

	request_init(r);
	r->id = 7;
	r->session_id = 3;
	r->done = true;
	r->started_at = 1700000000123;
	r->method = xstrdup("POST");
	r->scheme = xstrdup("https");
	r->host = xstrdup("api.example.com");
	r->port = 443;
	r->path = xstrdup("/v1/x?q=1");
	r->http_version = xstrdup("HTTP/1.1");
	r->status = 201;
	r->status_text = xstrdup("Created");
	r->bytes_up = 4;
	r->bytes_down = 0;
	r->ttfb_us = 1500;
	r->duration_us = 4000;
	r->decision = xstrdup("allow");
	r->rule = xstrdup("allow api.example.com (config:3)");
	r->error = xstrdup("upstream closed");
	r->req_headers = xstrdup("Authorization: [redacted]\n");
	r->resp_headers = xstrdup("Server: x\n");
	buf_add(&r->req_body, "a\0b\x01", 4);
	buf_add(&r->resp_body, "", 0);
	r->mime_type = xstrdup("text/plain");
	return r;
}

static void
test_init(void **state)
{
	struct request r;

	memset(&r, 0xa5, sizeof r);
	request_init(&r);
	assert_int_equal(r.id, 0);
	assert_false(r.done);
	assert_int_equal(r.ttfb_us, -1);
	assert_null(r.host);
	assert_null(r.decision);
	assert_null(r.req_body.data);
	assert_null(r.resp_body.data);
	/* Clearing an empty record frees nothing and leaves it empty. */
	request_clear(&r);
	assert_int_equal(r.ttfb_us, -1);
	assert_null(r.method);
	request_free(NULL);
}

/* Every string of C is its own, equal to R's. */
static void
check_strings(const struct request *r, const struct request *c)
{
	const char *const a[] = { r->method, r->scheme, r->host, r->path,
		r->http_version, r->status_text, r->decision, r->rule, r->error,
		r->req_headers, r->resp_headers, r->mime_type };
	const char *const b[] = { c->method, c->scheme, c->host, c->path,
		c->http_version, c->status_text, c->decision, c->rule, c->error,
		c->req_headers, c->resp_headers, c->mime_type };
	size_t i;

	for (i = 0; i < nitems(a); i++) {
		assert_non_null(b[i]);
		assert_ptr_not_equal(a[i], b[i]);
		assert_string_equal(a[i], b[i]);
	}
}

static void
test_copy_bodies(void **state)
{
	struct request *r = full(), *c = request_copy(r, true);

	check_strings(r, c);
	assert_int_equal(c->id, 7);
	assert_int_equal(c->session_id, 3);
	assert_true(c->done);
	assert_int_equal(c->port, 443);
	assert_int_equal(c->status, 201);
	assert_int_equal(c->ttfb_us, 1500);
	assert_int_equal(c->duration_us, 4000);
	assert_ptr_not_equal(c->req_body.data, r->req_body.data);
	assert_int_equal(c->req_body.len, 4);
	assert_memory_equal(c->req_body.data, "a\0b\x01", 4);
	assert_int_equal(c->req_body.data[4], '\0');
	/* An empty body stays a body, not "none". */
	assert_non_null(c->resp_body.data);
	assert_int_equal(c->resp_body.len, 0);
	/* The copy outlives the original, and grows on its own. */
	request_free(r);
	buf_add(&c->req_body, "more", 4);
	assert_int_equal(c->req_body.len, 8);
	request_free(c);
}

static void
test_copy_no_bodies(void **state)
{
	struct request *r = full(), *c = request_copy(r, false), *n;

	check_strings(r, c);
	assert_null(c->req_body.data);
	assert_int_equal(c->req_body.len, 0);
	assert_null(c->resp_body.data);
	/* A body never kept is not made up by a copy. */
	buf_free(&r->resp_body);
	n = request_copy(r, true);
	assert_null(n->resp_body.data);
	request_free(n);
	request_free(c);
	request_free(r);
}

static void
test_copy_empty(void **state)
{
	struct request r, *c;

	request_init(&r);
	c = request_copy(&r, true);
	assert_null(c->host);
	assert_null(c->decision);
	assert_null(c->req_body.data);
	assert_int_equal(c->ttfb_us, -1);
	request_free(c);
}

static void
test_set(void **state)
{
	struct request *r = full();

	request_set(&r->decision, "deny");
	assert_string_equal(r->decision, "deny");
	/* Its own string as the new value: copied before the old is freed. */
	request_set(&r->host, r->host);
	assert_string_equal(r->host, "api.example.com");
	request_set(&r->error, NULL);
	assert_null(r->error);
	request_clear(r);
	assert_null(r->decision);
	assert_null(r->req_body.data);
	assert_int_equal(r->ttfb_us, -1);
	free(r);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init),
		cmocka_unit_test(test_copy_bodies),
		cmocka_unit_test(test_copy_no_bodies),
		cmocka_unit_test(test_copy_empty),
		cmocka_unit_test(test_set),
	};

	return test_run_group(tests, NULL, NULL);
}
