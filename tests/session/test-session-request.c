/* The session layer's part in a request's journey: the proxy's record is stored and handed to the front end as it is, one record, no copy. */
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "core/core.h"
#include "lib/testlib.h"
#include "session/session-int.h"
#include "store/store.h"

struct seen {
	int n;
	const struct request *last;   /* the pointer the front end was given */
	bool done;
	char *host;
};

static void
seen_request(void *arg, struct session *s, const struct request *r)
{
	struct seen *v = arg;

	v->n++;
	v->last = r;
	v->done = r->done;
	free(v->host);
	v->host = xstrdup(r->host);
}

struct fix {
	struct event_base *base;
	struct config *cf;
	struct session_ctx *ctx;
	struct session *s;
	struct seen seen;
};

static int
fix_setup(void **state)
{
	struct fix *f = xcalloc(1, sizeof *f);
	struct store_session ss;
	char *cause = NULL;

	test_dir_setup(state);
	f->base = event_base_new();
	f->cf = config_default();
	f->ctx = session_ctx_create(f->base, f->cf, NULL, &cause);
	if (f->ctx == NULL)
		fail_msg("session_ctx_create: %s", cause);
	/* A session as far as its proxy callbacks look: a record, events. */
	f->s = xcalloc(1, sizeof *f->s);
	f->s->ctx = f->ctx;
	strv_init(&f->s->denied);
	memset(&ss, 0, sizeof ss);
	ss.agent = (char *)"sh";
	ss.project = test_dir;
	ss.command = (char *)"[\"sh\"]";
	f->s->id = store_session_begin(session_ctx_store(f->ctx), &ss, &cause);
	assert_true(f->s->id > 0);
	f->s->ev.request = seen_request;
	f->s->arg = &f->seen;
	*state = f;
	return 0;
}

static int
fix_teardown(void **state)
{
	struct fix *f = *state;
	size_t i;

	for (i = 0; i < f->s->ndenials; i++) {
		free(f->s->denials[i].dest);
		free(f->s->denials[i].why);
	}
	free(f->s->denials);
	strv_free(&f->s->denied);
	free(f->s);
	session_ctx_free(f->ctx);
	config_free(f->cf);
	event_base_free(f->base);
	free(f->seen.host);
	free(f);
	return test_dir_teardown(state);
}

/* A record as the proxy fills it, owned by the test (as by a connection). */
static void
fill(struct request *r, int64_t session, const char *host, const char *dec,
    bool done)
{
	request_init(r);
	r->id = 1;
	r->session_id = session;
	r->done = done;
	r->started_at = util_now_ms();
	r->method = xstrdup("GET");
	r->scheme = xstrdup("https");
	r->host = xstrdup(host);
	r->port = 443;
	r->path = xstrdup("/p");
	r->http_version = xstrdup("HTTP/1.1");
	if (done && dec != NULL) {
		r->decision = xstrdup(dec);
		r->status = strcmp(dec, "deny") == 0 ? 403 : 200;
		r->req_headers = xstrdup("Authorization: [redacted]\n");
		buf_add(&r->resp_body, "ok", 2);
	}
}

static struct request **
listed(struct fix *f, size_t *n)
{
	struct store_request_filter q = { .session_id = f->s->id,
	    .with_bodies = true };

	return store_request_list(session_ctx_store(f->ctx), &q, n);
}

static void
test_started_not_stored(void **state)
{
	struct fix *f = *state;
	struct request r, **v;
	size_t n;

	fill(&r, f->s->id, "one.test", NULL, false);
	session_proxy_request(f->s, &r);
	assert_int_equal(f->seen.n, 1);
	assert_ptr_equal(f->seen.last, &r);
	assert_false(f->seen.done);
	v = listed(f, &n);
	assert_int_equal(n, 0);
	store_request_list_free(v, n);
	request_clear(&r);
}

static void
test_done_stored_and_shown(void **state)
{
	struct fix *f = *state;
	struct request r, **v;
	size_t n;

	fill(&r, f->s->id, "two.test", "allow", true);
	session_proxy_request(f->s, &r);
	/* The front end sees the proxy's own record, not a copy of it. */
	assert_int_equal(f->seen.n, 1);
	assert_ptr_equal(f->seen.last, &r);
	assert_true(f->seen.done);
	/* The store kept its own: the proxy's may go at once. */
	request_clear(&r);
	v = listed(f, &n);
	assert_int_equal(n, 1);
	assert_int_equal(v[0]->session_id, f->s->id);
	assert_string_equal(v[0]->host, "two.test");
	assert_string_equal(v[0]->decision, "allow");
	assert_string_equal(v[0]->req_headers, "Authorization: [redacted]\n");
	assert_int_equal(v[0]->resp_body.len, 2);
	assert_null(session_denied_summary(f->s));
	store_request_list_free(v, n);
}

static void
test_denied_counted(void **state)
{
	struct fix *f = *state;
	struct request r;
	char *sum;
	int i;

	for (i = 0; i < 2; i++) {
		fill(&r, f->s->id, "evil.test", "deny", true);
		request_set(&r.error, "no rule allows evil.test; "
		    "`allow evil.test` would");
		session_proxy_request(f->s, &r);
		request_clear(&r);
	}
	sum = session_denied_summary(f->s);
	assert_non_null(sum);
	assert_non_null(strstr(sum, "denied evil.test:443 (2 requests)"));
	free(sum);
	assert_int_equal(f->seen.n, 2);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_started_not_stored,
		    fix_setup, fix_teardown),
		cmocka_unit_test_setup_teardown(test_done_stored_and_shown,
		    fix_setup, fix_teardown),
		cmocka_unit_test_setup_teardown(test_denied_counted,
		    fix_setup, fix_teardown),
	};

	return test_run_group(tests, NULL, NULL);
}
