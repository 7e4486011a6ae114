/* export (HAR 1.2 and JSON) and policy suggest --write, through the real binary on a real store. */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "lib/testlib.h"
#include "store/store.h"

static char *dir;

static void
req(struct store *st, int64_t sid, const char *decision, const char *method,
    const char *host, int port, const char *path, int status)
{
	struct request r;

	memset(&r, 0, sizeof r);
	r.session_id = sid;
	r.started_at = 1700000000123;
	r.method = (char *)method;
	r.scheme = (char *)"https";
	r.host = (char *)host;
	r.port = port;
	r.path = (char *)path;
	r.http_version = (char *)"HTTP/1.1";
	r.status = status;
	r.bytes_up = 5;
	r.bytes_down = 11;
	r.ttfb_us = 1500;
	r.duration_us = 4000;
	r.decision = (char *)decision;
	r.rule = (char *)(strcmp(decision, "deny") == 0 ? NULL :
	    "allow api.example.com (config:3)");
	r.req_headers = (char *)"Host: api.example.com\nAuthorization: [redacted]\n"
	    "Content-Type: application/json\n";
	r.resp_headers = (char *)"Content-Type: text/plain\n";
	/* Borrowed: the store copies what it keeps. */
	r.req_body = (struct buf){ .data = (char *)"{\"a\":1}", .len = 7 };
	r.resp_body = (struct buf){ .data = (char *)"\x00\x01\x02", .len = 3 };
	store_request_add(st, &r);
}

static int
setup(void **state)
{
	struct store_session s;
	struct store *st;
	char *cause = NULL;
	int64_t sid;

	dir = test_tmpdir("export");
	test_isolate(dir);
	st = store_open(NULL, &cause);
	assert_non_null(st);
	memset(&s, 0, sizeof s);
	s.agent = (char *)"shell";
	s.project = (char *)"/work/p";
	s.command = (char *)"[\"curl\",\"x\"]";
	sid = store_session_begin(st, &s, &cause);
	req(st, sid, "allow", "POST", "api.example.com", 443, "/v1/x?q=a%20b&r",
	    200);
	req(st, sid, "deny", "GET", "evil.example.com", 443, "/steal", 403);
	store_event_add(st, sid, "warn", "test", "an event");
	store_session_end(st, sid, "exited", 0, NULL);
	store_close(st);
	return 0;
}

static int
teardown(void **state)
{
	test_rmtree(dir);
	free(dir);
	return 0;
}

static const char har_check[] =
    "import json, sys\n"
    "h = json.load(open(sys.argv[1]))['log']\n"
    "assert h['version'] == '1.2' and h['creator']['name'] == 'agentmux'\n"
    "es = h['entries']; assert len(es) == 2, len(es)\n"
    "for e in es:\n"
    "  for k in ('startedDateTime','time','request','response','cache','timings'): assert k in e, k\n"
    "  for k in ('method','url','httpVersion','cookies','headers','queryString','headersSize','bodySize'): assert k in e['request'], k\n"
    "  for k in ('status','statusText','httpVersion','cookies','headers','content','redirectURL','headersSize','bodySize'): assert k in e['response'], k\n"
    "  for k in ('size','mimeType'): assert k in e['response']['content'], k\n"
    "  for k in ('send','wait','receive'): assert e['timings'][k] >= 0, k\n"
    "  assert abs(e['time'] - (e['timings']['send'] + e['timings']['wait'] + e['timings']['receive'])) < 0.01\n"
    "a, d = es\n"
    "assert a['startedDateTime'] == '2023-11-14T22:13:20.123Z', a['startedDateTime']\n"
    "assert a['request']['url'] == 'https://api.example.com/v1/x?q=a%20b&r'\n"
    "assert a['request']['queryString'] == [{'name':'q','value':'a b'},{'name':'r','value':''}]\n"
    "assert a['request']['postData']['text'] == '{\"a\":1}'\n"
    "assert a['request']['postData']['mimeType'] == 'application/json'\n"
    "assert a['response']['content']['encoding'] == 'base64'\n"
    "assert a['response']['content']['text'] == 'AAEC'\n"
    "assert a['timings']['wait'] == 1.5 and a['timings']['receive'] == 2.5\n"
    "assert {'name':'Authorization','value':'[redacted]'} in a['request']['headers']\n"
    "assert d['response']['status'] == 403 and 'denied' in d['comment']\n";

static void
test_har(void **state)
{
	char *file = xprintf("%s/s.har", dir), *py = xprintf("%s/check.py", dir);
	struct test_run r;

	test_amx(&r, "export", "last", "--har", file, NULL);
	assert_int_equal(r.status, 0);
	test_run_free(&r);
	test_write_file(py, har_check);
	assert_int_equal(test_sh("python3 %s %s", py, file), 0);
	/* Without options: HAR on stdout. */
	test_amx(&r, "export", "1", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "\"version\": \"1.2\""));
	test_run_free(&r);
	free(file);
	free(py);
}

static void
test_json(void **state)
{
	char *file = xprintf("%s/s.json", dir);
	struct test_run r;

	test_amx(&r, "export", "last", "--json", file, NULL);
	assert_int_equal(r.status, 0);
	test_run_free(&r);
	assert_int_equal(test_sh("python3 -c \"import json,sys; d=json.load("
	    "open('%s')); assert d['session']['agent']=='shell'; "
	    "assert len(d['requests'])==2; assert d['events'][0]['message']=="
	    "'an event'; assert d['requests'][0]['request_body_base64']=="
	    "'eyJhIjoxfQ=='; assert 'snapshots' in d and 'decisions' in d and "
	    "'config_changes' in d\"", file), 0);
	free(file);
}

static void
test_export_errors(void **state)
{
	struct test_run r;

	test_amx(&r, "export", "99", NULL);
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "no session 99"));
	test_run_free(&r);
	test_amx(&r, "export", "last", "--har", "a", "--json", "b", NULL);
	assert_int_equal(r.status, 2);
	test_run_free(&r);
}

static void
test_policy_suggest_write(void **state)
{
	char *cfg = xprintf("%s/config/agentmux/config", dir), *text;
	struct test_run r;

	test_write_file(cfg, "; my config\n[policy]\n; keep this comment\n"
	    "on_unknown = deny\n\n[ui]\nprefix = C-b\n");
	test_amx(&r, "policy", "suggest", "last", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "[policy]\nallow = api.example.com:443 "
	    "POST /v1/x\n"));
	assert_non_null(strstr(r.out, "evil.example.com:443 (1 request"));
	test_run_free(&r);
	test_amx(&r, "policy", "suggest", "last", "--write", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "+allow = api.example.com:443 POST /v1/x"));
	assert_non_null(strstr(r.out, "added 1 rule"));
	test_run_free(&r);
	text = test_read_file(cfg);
	assert_string_equal(text, "; my config\n[policy]\n; keep this comment\n"
	    "on_unknown = deny\nallow = api.example.com:443 POST /v1/x\n\n"
	    "[ui]\nprefix = C-b\n");
	free(text);
	test_amx(&r, "policy", "suggest", "last", "--write", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "nothing to add"));
	test_run_free(&r);
	test_amx(&r, "policy", "suggest", "last", "--agent", "nosuch", NULL);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "no agent profile 'nosuch'"));
	test_run_free(&r);
	test_amx(&r, "policy", "suggest", "last", "--agent", "shell", "--write",
	    NULL);
	assert_int_equal(r.status, 0);
	test_run_free(&r);
	text = test_read_file(cfg);
	assert_non_null(strstr(text, "[agent shell]\nallow = api.example.com:443 "
	    "POST /v1/x\n"));
	free(text);
	free(cfg);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_har),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_export_errors),
		cmocka_unit_test(test_policy_suggest_write),
	};

	return test_run_group(tests, setup, teardown);
}
