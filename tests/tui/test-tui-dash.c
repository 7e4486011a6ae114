/* Dashboard pieces that need no terminal: the requests filter and details, the countdown, the line editor, Tab in the new session dialog. */
#include <sys/stat.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "lib/testlib.h"
#include "tui/tui-int.h"

/* A record as the panel keeps it: done once it has a decision. */
static struct request *
req(const char *method, const char *host, const char *path, const char *dec,
    int status)
{
	struct request *r = xmalloc(sizeof *r);

	request_init(r);
	r->session_id = 2;
	r->done = dec != NULL;
	r->method = xstrdup(method);
	r->scheme = xstrdup("https");
	r->host = xstrdup(host);
	r->port = 443;
	r->path = xstrdup(path);
	r->decision = dec != NULL ? xstrdup(dec) : NULL;
	r->status = status;
	r->req_headers = xstrdup("Authorization: [redacted]\n");
	return r;
}

static void
test_filter(void **state)
{
	struct request *a = req("GET", "api.github.com", "/repos/x", "allow", 200);
	struct request *d = req("POST", "evil.example", "/upload", "deny", 403);
	struct request *p = req("GET", "pypi.org", "/simple/", NULL, 0);

	assert_true(tui_req_matches(a, ""));
	assert_true(tui_req_matches(a, "github"));
	assert_true(tui_req_matches(a, "GITHUB repos"));
	assert_false(tui_req_matches(a, "github upload"));
	assert_true(tui_req_matches(d, "deny"));
	assert_false(tui_req_matches(a, "deny"));
	assert_true(tui_req_matches(d, "403"));
	assert_true(tui_req_matches(d, "post"));
	assert_true(tui_req_matches(p, "pending"));
	assert_false(tui_req_matches(p, "allow"));
	/* Allowed and on its way, not finished: still pending. */
	p->decision = xstrdup("allow");
	assert_true(tui_req_matches(p, "pending"));
	assert_false(tui_req_matches(p, "allow"));
	request_free(a);
	request_free(d);
	request_free(p);
}

static void
test_details(void **state)
{
	struct request *d = req("POST", "evil.example", "/upload", "deny", 403);
	char *text;

	d->rule = xstrdup("deny evil.example (config:3)");
	text = tui_req_details(d);
	assert_non_null(strstr(text, "POST https://evil.example:443/upload"));
	assert_non_null(strstr(text, "decision:  deny"));
	assert_non_null(strstr(text, "rule:      deny evil.example (config:3)"));
	assert_non_null(strstr(text, "Authorization: [redacted]"));
	free(text);
	request_free(d);
}

static void
test_countdown(void **state)
{
	struct tui_prompt p = { .deadline_us = 10000000 };

	assert_int_equal(tui_prompt_seconds_left(&p, 0), 10);
	assert_int_equal(tui_prompt_seconds_left(&p, 9500000), 1);
	assert_int_equal(tui_prompt_seconds_left(&p, 10000000), 0);
	assert_int_equal(tui_prompt_seconds_left(&p, 20000000), 0);
	/* Paused, it shows what was left when the user looked. */
	p.paused = true;
	p.left_us = 4200000;
	assert_int_equal(tui_prompt_seconds_left(&p, 99000000), 5);
}

static void
test_line_editor(void **state)
{
	struct tui_line l = { .active = true };
	struct tui_key k = { 0 };
	const char *typed = "ab c\xc3\xa9";

	buf_init(&l.text);
	for (k.code = 'a'; k.code <= 'c'; k.code++)
		assert_true(tui_line_key(&l, &k));
	assert_string_equal(l.text.data, "abc");
	k.code = 0x7f;
	tui_line_key(&l, &k);
	k.code = ' ';
	tui_line_key(&l, &k);
	k.code = 'c';
	tui_line_key(&l, &k);
	k.code = 0xe9;
	tui_line_key(&l, &k);
	assert_string_equal(l.text.data, typed);
	/* Backspace takes a whole character, C-w a word, C-u the line. */
	k.code = 0x7f;
	tui_line_key(&l, &k);
	assert_string_equal(l.text.data, "ab c");
	k.code = 0x17;
	tui_line_key(&l, &k);
	assert_string_equal(l.text.data, "ab ");
	k.code = 0x15;
	tui_line_key(&l, &k);
	assert_string_equal(l.text.data, "");
	/* Keys that are not text are left to the caller. */
	k.code = TUI_KEY_UP;
	assert_false(tui_line_key(&l, &k));
	k.code = 'x';
	k.mods = TUI_MOD_ALT;
	assert_false(tui_line_key(&l, &k));
	buf_free(&l.text);
}

/*
 * Tab on a directory the agent filled reads a bounded part of it, inside
 * the event loop, and says so: nothing is completed that the unread rest
 * might contradict, and the note stays a few lines.
 */
static void
test_complete_big_dir(void **state)
{
	char *d = xprintf("%s/d", test_dir);
	struct tui *t = xcalloc(1, sizeof *t);
	struct strv m;
	char path[4096];
	int i;

	/* Mostly files: they count as entries read and are quick to remove. */
	assert_int_equal(mkdir(d, 0700), 0);
	for (i = 0; i < 20000; i++) {
		snprintf(path, sizeof path, "%s/%c%05d", d, i < 1000 ? 'd' : 'f',
		    i);
		if (i < 1000)
			assert_int_equal(mkdir(path, 0700), 0);
		else
			test_write_file(path, "");
	}
	strv_init(&m);
	assert_false(tui_new_matches(d, "", &m));
	assert_true(m.n <= 200);
	strv_free(&m);
	t->c = xcalloc(1, sizeof *t->c);
	buf_init(&t->c->new_dir.text);
	buf_printf(&t->c->new_dir.text, "%s/", d);
	tui_new_complete(t);
	snprintf(path, sizeof path, "%s/", d);
	assert_string_equal(t->c->new_dir.text.data, path);
	assert_non_null(t->c->new_note);
	assert_true(strlen(t->c->new_note) < 2048);
	assert_non_null(strstr(t->c->new_note, "and more"));
	/* Too big to search a name in: said so, not "no such directory". */
	buf_reset(&t->c->new_dir.text);
	buf_printf(&t->c->new_dir.text, "%s/x", d);
	tui_new_complete(t);
	assert_string_equal(t->c->new_note, "that directory is too big to look "
	    "through: type more of the name");
	free(t->c->new_note);
	buf_free(&t->c->new_dir.text);
	free(t->c);
	free(t);
	free(d);
}

/* A small directory is still read whole: one match completes, several share a prefix. */
static void
test_complete_small_dir(void **state)
{
	const char *tmp = test_dir;
	char *want;
	struct tui *t = xcalloc(1, sizeof *t);
	char path[4096];

	snprintf(path, sizeof path, "%s/alpha", tmp);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof path, "%s/alps", tmp);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof path, "%s/beta", tmp);
	assert_int_equal(mkdir(path, 0700), 0);
	t->c = xcalloc(1, sizeof *t->c);
	buf_init(&t->c->new_dir.text);
	buf_printf(&t->c->new_dir.text, "%s/a", tmp);
	tui_new_complete(t);
	want = xprintf("%s/alp", tmp);
	assert_string_equal(t->c->new_dir.text.data, want);
	free(want);
	tui_new_complete(t);
	assert_non_null(t->c->new_note);
	assert_null(strstr(t->c->new_note, "and more"));
	assert_non_null(strstr(t->c->new_note, "alpha/"));
	buf_reset(&t->c->new_dir.text);
	buf_printf(&t->c->new_dir.text, "%s/b", tmp);
	tui_new_complete(t);
	want = xprintf("%s/beta/", tmp);
	assert_string_equal(t->c->new_dir.text.data, want);
	free(want);
	free(t->c->new_note);
	buf_free(&t->c->new_dir.text);
	free(t->c);
	free(t);
}

/* The port dialog's line as it reads it; -1 if refused (its cause freed). */
static int
port_parse(const char *text, struct tui_port_opts *o)
{
	char *cause = NULL;
	int rc = tui_port_parse(text, o, &cause);

	assert_true((rc == -1) == (cause != NULL));
	free(cause);
	return rc;
}

/* The port dialog: "JAIL [HOST]" forwards, "-d JAIL" removes, anything else is refused. */
static void
test_port_parse(void **state)
{
	struct tui_port_opts o;

	(void)state;
	assert_int_equal(port_parse("3000", &o), 0);
	assert_int_equal(o.jail_port, 3000);
	assert_int_equal(o.host_port, 3000);
	assert_false(o.remove);
	assert_null(o.host);
	assert_int_equal(port_parse("  8000   8080 ", &o), 0);
	assert_int_equal(o.jail_port, 8000);
	assert_int_equal(o.host_port, 8080);
	assert_int_equal(port_parse("8000 0", &o), 0);
	assert_int_equal(o.host_port, 0);
	assert_int_equal(port_parse("-d 8000", &o), 0);
	assert_true(o.remove);
	assert_int_equal(o.jail_port, 8000);
	assert_int_equal(port_parse("", &o), -1);
	assert_int_equal(port_parse("0", &o), -1);
	assert_int_equal(port_parse("65536", &o), -1);
	assert_int_equal(port_parse("-1", &o), -1);
	assert_int_equal(port_parse("80x", &o), -1);
	assert_int_equal(port_parse("1 2 3", &o), -1);
	assert_int_equal(port_parse("-d", &o), -1);
	assert_int_equal(port_parse("-d 80 81", &o), -1);
	assert_int_equal(port_parse("127.0.0.1:80", &o), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_port_parse),
		cmocka_unit_test(test_filter),
		cmocka_unit_test(test_details),
		cmocka_unit_test(test_countdown),
		cmocka_unit_test(test_line_editor),
		cmocka_unit_test_setup_teardown(test_complete_big_dir,
		    test_dir_setup, test_dir_teardown),
		cmocka_unit_test_setup_teardown(test_complete_small_dir,
		    test_dir_setup, test_dir_teardown),
	};

	return test_run_group(tests, NULL, NULL);
}
