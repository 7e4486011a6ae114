/* The quoting helper: what it quotes, how, that it decodes back, and the printing and JSON built on it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "lib/testlib.h"

/* Asserts that quoting IN gives WANT. */
static void
check_name(const char *in, const char *want)
{
	char *q = quote_name(in);

	assert_string_equal(q, want);
	free(q);
}

static void
check_text(const char *in, const char *want)
{
	char *q = quote_text(in);

	assert_string_equal(q, want);
	free(q);
}

static int
setup_utf8(void **state)
{
	quote_set_utf8(true);
	return 0;
}

/* Nothing to quote: left exactly as it is, as git leaves such a path. */
static void
test_plain(void **state)
{
	check_name("src/main.c", "src/main.c");
	check_name("a b", "a b");
	check_name("", "");
	check_name("caf\xc3\xa9/\xe6\x97\xa5\xe6\x9c\xac", "caf\xc3\xa9/"
	    "\xe6\x97\xa5\xe6\x9c\xac");
	check_name("emoji \xf0\x9f\x98\x80", "emoji \xf0\x9f\x98\x80");
	assert_null(quote_name(NULL));
	assert_false(quote_needed("api.github.com", 14));
}

/* The example: OSC 52 (clipboard) and OSC 2 (title) in a file name. */
static void
test_osc(void **state)
{
	check_name("f\033]52;c;cHduZWQ=\a\033]2;PWNED\a",
	    "\"f\\033]52;c;cHduZWQ=\\a\\033]2;PWNED\\a\"");
}

/* C escapes for the C0 controls git names, octal for the rest, and DEL. */
static void
test_c0(void **state)
{
	check_name("a\tb\nc\rd\be\vf\fg\ah", "\"a\\tb\\nc\\rd\\be\\vf\\fg\\ah\"");
	check_name("\x01\x1b\x1f\x7f", "\"\\001\\033\\037\\177\"");
	check_name("quote\"back\\slash", "\"quote\\\"back\\\\slash\"");
}

/* C1 controls (U+0080-U+009F) escaped byte by byte: U+009B is CSI. */
static void
test_c1(void **state)
{
	check_name("x\xc2\x9b" "31mred", "\"x\\302\\2333" "1mred\"");
	check_name("\xc2\x85", "\"\\302\\205\"");
	/* U+00A0 and U+00FF are printable. */
	check_name("\xc2\xa0\xc3\xbf", "\xc2\xa0\xc3\xbf");
}

/* Bidi overrides and isolates, zero-width and other invisible characters. */
static void
test_bidi(void **state)
{
	/* "txt.exe" written backwards behind U+202E reads as "exe.txt". */
	check_name("invoice\xe2\x80\xae" "txt.exe",
	    "\"invoice\\342\\200\\256txt.exe\"");
	check_name("a\xe2\x81\xa6" "b", "\"a\\342\\201\\246b\"");   /* LRI */
	check_name("a\xe2\x80\x8b" "b", "\"a\\342\\200\\213b\"");   /* ZWSP */
	check_name("a\xef\xbb\xbf" "b", "\"a\\357\\273\\277b\"");   /* BOM */
	check_name("a\xe2\x80\xa8" "b", "\"a\\342\\200\\250b\"");   /* LS */
	check_name("a\xf3\xa0\x80\x81" "b",
	    "\"a\\363\\240\\200\\201b\"");                        /* tag */
	assert_true(quote_cp_unsafe(0x202e));
	assert_true(quote_cp_unsafe(0x2066));
	assert_true(quote_cp_unsafe(0x9b));
	assert_false(quote_cp_unsafe(0xe9));
	assert_false(quote_cp_unsafe(0x4e00));
}

/* Bytes that are not UTF-8: stray continuations, overlongs, surrogates, cut sequences. */
static void
test_invalid(void **state)
{
	check_name("\xff", "\"\\377\"");
	check_name("a\x80z", "\"a\\200z\"");
	check_name("\xc0\xaf", "\"\\300\\257\"");              /* overlong '/' */
	check_name("\xed\xa0\x80", "\"\\355\\240\\200\"");     /* surrogate */
	check_name("\xf4\x90\x80\x80", "\"\\364\\220\\200\\200\""); /* > U+10FFFF */
	check_name("\xe6\x97", "\"\\346\\227\"");              /* cut short */
	/* An overlong ESC (C0 80 9B) is not UTF-8: no raw 0x9b escapes. */
	check_name("\xc1\x9b", "\"\\301\\233\"");
}

/* Outside a UTF-8 locale every byte above 0x7f is escaped, as git's core.quotePath does. */
static void
test_ascii_locale(void **state)
{
	quote_set_utf8(false);
	check_name("caf\xc3\xa9", "\"caf\\303\\251\"");
	check_text("caf\xc3\xa9", "caf\\303\\251");
	quote_set_utf8(true);
}

/* Free text: escapes, no quotes; newline, CR LF and tab stay, quotes and backslashes too. */
static void
test_text(void **state)
{
	check_text("line 1\n\tline \"2\" \\n", "line 1\n\tline \"2\" \\n");
	check_text("title \033]2;x\a cr\r", "title \\033]2;x\\a cr\\r");
	check_text("raw\r\nmode\r", "raw\r\nmode\\r");
	check_text("rlo \xe2\x80\xae!", "rlo \\342\\200\\256!");
	check_text("\xc2\x9b" "2J", "\\302\\2332J");
}

/* Into a fixed array, as fatal does: the same escapes, cut to fit, NUL-terminated. */
static void
test_fixed(void **state)
{
	char out[16];

	assert_int_equal(quote_text_fixed(out, sizeof out, "a\033]2;x\a"),
	    strlen("a\\033]2;x\\a"));
	assert_string_equal(out, "a\\033]2;x\\a");
	assert_int_equal(quote_text_fixed(out, sizeof out,
	    "0123456789\033abcdef"), 15);
	assert_string_equal(out, "0123456789\\033a");
	assert_int_equal(quote_text_fixed(out, 1, "abc"), 0);
	assert_string_equal(out, "");
}

/* Unquoting git's way gives the exact bytes back. */
static char *
unquote(const char *q)
{
	struct buf b;
	const char *p = q;
	static const char names[] = "abtnvfr";
	const char *e;

	buf_init(&b);
	if (*p != '"')
		return xstrdup(q);
	for (p++; *p != '"'; p++) {
		if (*p != '\\') {
			buf_addc(&b, *p);
			continue;
		}
		p++;
		if ((e = strchr(names, *p)) != NULL && *p != '\0')
			buf_addc(&b, (char)('\a' + (e - names)));
		else if (*p >= '0' && *p <= '3') {
			buf_addc(&b, (char)((p[0] - '0') << 6 | (p[1] - '0') << 3 |
			    (p[2] - '0')));
			p += 2;
		} else
			buf_addc(&b, *p);
	}
	assert_int_equal(p[1], '\0');
	return b.data != NULL ? buf_steal(&b) : xstrdup("");
}

/* Every one-byte string and many random ones survive a round trip, and quoted output is printable. */
static void
test_round_trip(void **state)
{
	char in[64], *q, *back;
	unsigned i, k, n;
	const unsigned char *p;

	srandom(15);
	for (i = 0; i < 20000; i++) {
		n = i < 255 ? 1 : (unsigned)(random() % 40) + 1;
		for (k = 0; k < n; k++)
			in[k] = (char)(i < 255 ? i + 1 : random() % 255 + 1);
		in[n] = '\0';
		q = quote_name(in);
		for (p = (const unsigned char *)q; *p != '\0'; p++)
			assert_true(*p >= 0x20 && *p != 0x7f);
		assert_false(strstr(q, "\xc2\x9b") != NULL);
		back = unquote(q);
		assert_string_equal(back, in);
		free(back);
		free(q);
	}
}

/* The printing sink lets no control character out, whatever the arguments. */
static void
test_out(void **state)
{
	char *data = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&data, &len);

	assert_non_null(fp);
	out_printf(fp, "would remove %s\n", "f\033]2;PWNED\a\xc2\x9b");
	out_puts(fp, "tab\there\n");
	out_color(fp, "1;32");
	out_color(fp, "0m\033]2;x\a");   /* not parameters: nothing */
	out_color(fp, "");
	fclose(fp);
	assert_string_equal(data, "would remove f\\033]2;PWNED\\a\\302\\233\n"
	    "tab\there\n\033[1;32m\033[m");
	free(data);
}

/* JSON keeps its own escapes: controls, C1 and bidi as \u, bytes that are not UTF-8 as U+FFFD. */
static void
test_json(void **state)
{
	struct json j;

	json_init(&j, false);
	json_arr_begin(&j);
	json_str(&j, "f\033]2;x\a\xc2\x9b\xe2\x80\xae\xff\xf3\xa0\x80\x81"
	    "\xc3\xa9\"\\");
	json_arr_end(&j);
	assert_string_equal(j.out.data, "[\"f\\u001b]2;x\\u0007\\u009b\\u202e"
	    "\\ufffd\\udb40\\udc01\xc3\xa9\\\"\\\\\"]");
	json_free(&j);
}

/* A quoted copy kept alongside others lives until its keeper is freed. */
static void
test_keep(void **state)
{
	struct strv keep;
	const char *a, *b;

	strv_init(&keep);
	a = quote_keep(&keep, "a\nb");
	b = quote_keep_text(&keep, "c\ad");
	assert_string_equal(quote_keep_line(&keep, "l1\n\"l2\"\t\\"),
	    "l1\\n\"l2\"\\t\\");
	assert_null(quote_keep(&keep, NULL));
	assert_string_equal(a, "\"a\\nb\"");
	assert_string_equal(b, "c\\ad");
	strv_free(&keep);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain),
		cmocka_unit_test(test_osc),
		cmocka_unit_test(test_c0),
		cmocka_unit_test(test_c1),
		cmocka_unit_test(test_bidi),
		cmocka_unit_test(test_invalid),
		cmocka_unit_test(test_ascii_locale),
		cmocka_unit_test(test_text),
		cmocka_unit_test(test_fixed),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_out),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_keep),
	};

	return test_run_group(tests, setup_utf8, NULL);
}
