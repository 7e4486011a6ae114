/* The cell grid: writing, wide and combining characters, scrolling, history, dirty rows, resizing. */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "lib/testlib.h"
#include "tui/tui.h"

static void
put(struct tui_grid *gd, unsigned x, unsigned y, const char *s)
{
	struct tui_cell c = { 0 };

	for (; *s != '\0'; s++, x++) {
		c.cp = (unsigned char)*s;
		tui_grid_set(gd, x, y, &c, NULL, 0);
	}
}

/* Row Y's text; a static buffer, good until the next call. */
static const char *
text(struct tui_grid *gd, int y)
{
	static struct buf b;

	buf_reset(&b);
	buf_adds(&b, "");
	tui_grid_row_text(gd, y, &b);
	return b.data;
}

static void
test_write_and_read(void **state)
{
	struct tui_grid *gd = tui_grid_create(10, 3, 100);

	put(gd, 0, 0, "hello");
	put(gd, 3, 1, "x");
	assert_string_equal(text(gd, 0), "hello");
	assert_string_equal(text(gd, 1), "   x");
	assert_string_equal(text(gd, 2), "");
	assert_int_equal(tui_grid_cell(gd, 1, 0)->cp, 'e');
	assert_int_equal(tui_grid_cell(gd, 9, 2)->cp, 0);
	/* Writing past the edge is ignored. */
	put(gd, 8, 0, "abc");
	assert_string_equal(text(gd, 0), "hello   ab");
	tui_grid_free(gd);
}

static void
test_wide_and_combining(void **state)
{
	struct tui_grid *gd = tui_grid_create(10, 2, 0);
	struct tui_cell c = { .wide = 1, .cp = 0x4e2d };
	uint32_t comb[] = { 'e', 0x301 }, out[TUI_CELL_MAXCHARS];

	tui_grid_set(gd, 2, 0, &c, NULL, 0);
	assert_true(tui_grid_cell(gd, 2, 0)->wide);
	assert_true(tui_grid_cell(gd, 3, 0)->pad);
	assert_string_equal(text(gd, 0), "  \xe4\xb8\xad");
	/* Overwriting the right half blanks the left half. */
	put(gd, 3, 0, "r");
	assert_false(tui_grid_cell(gd, 2, 0)->wide);
	assert_string_equal(text(gd, 0), "   r");
	/* And overwriting the left half blanks the right half. */
	tui_grid_set(gd, 5, 0, &c, NULL, 0);
	put(gd, 5, 0, "l");
	assert_false(tui_grid_cell(gd, 6, 0)->pad);
	assert_string_equal(text(gd, 0), "   r l");
	/* A wide character cannot start in the last column. */
	tui_grid_set(gd, 9, 1, &c, NULL, 0);
	assert_false(tui_grid_cell(gd, 9, 1)->wide);
	/* A base character and a combining accent share a cell. */
	c.wide = 0;
	tui_grid_set(gd, 0, 1, &c, comb, 2);
	assert_int_equal(tui_grid_chars(gd, tui_grid_cell(gd, 0, 1), 1, out), 2);
	assert_int_equal(out[0], 'e');
	assert_int_equal(out[1], 0x301);
	assert_string_equal(text(gd, 1), "e\xcc\x81");
	tui_grid_free(gd);
}

static void
test_combining_reuse(void **state)
{
	struct tui_grid *gd = tui_grid_create(4, 1, 0);
	struct tui_cell c = { 0 };
	uint32_t seq[] = { 'a', 0x301, 0x302 };
	unsigned i;

	/* A spinner redrawing accented cells forever stays bounded and right. */
	for (i = 0; i < 10000; i++) {
		seq[0] = 'a' + i % 3;
		tui_grid_set(gd, i % 4, 0, &c, seq, 3);
		if (i % 7 == 0)
			put(gd, (i + 1) % 4, 0, "z");
	}
	assert_int_equal(strlen(text(gd, 0)) > 0, 1);
	for (i = 0; i < 4; i++) {
		uint32_t out[TUI_CELL_MAXCHARS];
		size_t n = tui_grid_chars(gd, tui_grid_cell(gd, i, 0), 0, out);

		assert_true(n == 1 || n == 3);
		if (n == 3)
			assert_int_equal(out[2], 0x302);
	}
	tui_grid_free(gd);
}

static void
test_scroll_history(void **state)
{
	struct tui_grid *gd = tui_grid_create(8, 3, 5);
	char line[16];
	unsigned i;

	for (i = 0; i < 20; i++) {
		snprintf(line, sizeof line, "L%u", i);
		tui_grid_scroll(gd, 0, 0, 8, 3, 1, 0, TUI_COLOR_DEFAULT);
		put(gd, 0, 2, line);
	}
	/* L17..L19 on screen, five lines of history above, older ones gone. */
	assert_string_equal(text(gd, 0), "L17");
	assert_string_equal(text(gd, 2), "L19");
	assert_int_equal(tui_grid_hsize(gd), 5);
	assert_string_equal(text(gd, -1), "L16");
	assert_string_equal(text(gd, -5), "L12");
	assert_string_equal(text(gd, -6), "");
	assert_int_equal(tui_grid_scrolled(gd), 20);
	tui_grid_clear_history(gd);
	assert_int_equal(tui_grid_hsize(gd), 0);
	assert_string_equal(text(gd, 0), "L17");
	tui_grid_free(gd);
}

static void
test_scrollback_ten_thousand(void **state)
{
	struct tui_grid *gd = tui_grid_create(80, 24, 10000);
	char line[16];
	unsigned i;

	for (i = 0; i < 12000; i++) {
		snprintf(line, sizeof line, "%u", i);
		tui_grid_scroll(gd, 0, 0, 80, 24, 1, 0, TUI_COLOR_DEFAULT);
		put(gd, 0, 23, line);
	}
	assert_int_equal(tui_grid_hsize(gd), 10000);
	assert_string_equal(text(gd, 23), "11999");
	assert_string_equal(text(gd, 0), "11976");
	assert_string_equal(text(gd, -1), "11975");
	assert_string_equal(text(gd, -10000), "1976");
	tui_grid_free(gd);
}

static void
test_scroll_region(void **state)
{
	struct tui_grid *gd = tui_grid_create(6, 5, 10);
	unsigned y;

	for (y = 0; y < 5; y++)
		put(gd, 0, y, (const char *[]){ "a", "b", "c", "d", "e" }[y]);
	/* Rows 1..3 scroll up one: b leaves, a blank appears above e. */
	tui_grid_scroll(gd, 0, 1, 6, 4, 1, 0, TUI_COLOR_DEFAULT);
	assert_string_equal(text(gd, 0), "a");
	assert_string_equal(text(gd, 1), "c");
	assert_string_equal(text(gd, 2), "d");
	assert_string_equal(text(gd, 3), "");
	assert_string_equal(text(gd, 4), "e");
	assert_int_equal(tui_grid_hsize(gd), 0);
	/* And down two, with a coloured background for the new rows. */
	tui_grid_scroll(gd, 0, 1, 6, 4, -2, 0, TUI_COLOR_INDEX(4));
	assert_string_equal(text(gd, 1), "");
	assert_int_equal(tui_grid_cell(gd, 5, 2)->bg, TUI_COLOR_INDEX(4));
	assert_string_equal(text(gd, 3), "c");
	assert_string_equal(text(gd, 4), "e");
	/* The region scrolling with its top at row 0 still keeps no history. */
	tui_grid_scroll(gd, 0, 0, 6, 4, 1, 0, TUI_COLOR_DEFAULT);
	assert_int_equal(tui_grid_hsize(gd), 0);
	assert_string_equal(text(gd, 2), "c");
	tui_grid_free(gd);
}

static void
test_scroll_sideways(void **state)
{
	struct tui_grid *gd = tui_grid_create(8, 2, 0);
	struct tui_cell w = { .wide = 1, .cp = 0x4e2d };

	put(gd, 0, 0, "abcdefgh");
	/* Delete two characters at column 2 (DCH), insert one at 1 (ICH). */
	tui_grid_scroll(gd, 2, 0, 8, 1, 0, 2, TUI_COLOR_DEFAULT);
	assert_string_equal(text(gd, 0), "abefgh");
	tui_grid_scroll(gd, 1, 0, 8, 1, 0, -1, TUI_COLOR_DEFAULT);
	assert_string_equal(text(gd, 0), "a befgh");
	/* A wide character pushed over the edge is not left as half. */
	put(gd, 0, 1, "xxxxxx");
	tui_grid_set(gd, 6, 1, &w, NULL, 0);
	tui_grid_scroll(gd, 0, 1, 8, 2, 0, -1, TUI_COLOR_DEFAULT);
	assert_false(tui_grid_cell(gd, 7, 1)->wide);
	assert_string_equal(text(gd, 1), " xxxxxx");
	/* Rectangles narrower than the screen move cells. */
	put(gd, 0, 0, "12345678");
	put(gd, 0, 1, "abcdefgh");
	tui_grid_scroll(gd, 2, 0, 5, 2, 1, 0, TUI_COLOR_DEFAULT);
	assert_string_equal(text(gd, 0), "12cde678");
	assert_string_equal(text(gd, 1), "ab   fgh");
	tui_grid_free(gd);
}

static void
test_dirty(void **state)
{
	struct tui_grid *gd = tui_grid_create(20, 4, 10);
	unsigned x0, x1, y;

	assert_true(tui_grid_is_dirty(gd));
	tui_grid_clean(gd);
	assert_false(tui_grid_is_dirty(gd));
	for (y = 0; y < 4; y++)
		assert_false(tui_grid_row_dirty(gd, y, &x0, &x1));
	put(gd, 5, 2, "abc");
	put(gd, 12, 2, "z");
	assert_true(tui_grid_is_dirty(gd));
	assert_false(tui_grid_row_dirty(gd, 1, &x0, &x1));
	assert_true(tui_grid_row_dirty(gd, 2, &x0, &x1));
	assert_int_equal(x0, 5);
	assert_int_equal(x1, 13);
	tui_grid_clean(gd);
	tui_grid_erase(gd, 0, 3, 4, 4, TUI_COLOR_DEFAULT);
	assert_true(tui_grid_row_dirty(gd, 3, &x0, &x1));
	assert_int_equal(x1, 4);
	tui_grid_clean(gd);
	/* A scroll of the whole screen changes every row. */
	tui_grid_scroll(gd, 0, 0, 20, 4, 1, 0, TUI_COLOR_DEFAULT);
	for (y = 0; y < 4; y++) {
		assert_true(tui_grid_row_dirty(gd, y, &x0, &x1));
		assert_int_equal(x1, 20);
	}
	tui_grid_clean(gd);
	/* A region scroll only its rows. */
	tui_grid_scroll(gd, 0, 1, 20, 3, 1, 0, TUI_COLOR_DEFAULT);
	assert_false(tui_grid_row_dirty(gd, 0, &x0, &x1));
	assert_true(tui_grid_row_dirty(gd, 1, &x0, &x1));
	assert_true(tui_grid_row_dirty(gd, 2, &x0, &x1));
	assert_false(tui_grid_row_dirty(gd, 3, &x0, &x1));
	tui_grid_free(gd);
}

static void
test_erase_colour(void **state)
{
	struct tui_grid *gd = tui_grid_create(6, 2, 0);

	put(gd, 0, 0, "abcdef");
	tui_grid_erase(gd, 2, 0, 4, 1, TUI_COLOR_MAKE_RGB(1, 2, 3));
	assert_string_equal(text(gd, 0), "ab  ef");
	assert_int_equal(tui_grid_cell(gd, 3, 0)->bg, TUI_COLOR_MAKE_RGB(1, 2, 3));
	assert_int_equal(tui_grid_cell(gd, 4, 0)->bg, TUI_COLOR_DEFAULT);
	tui_grid_erase(gd, 1, 0, 6, 1, TUI_COLOR_DEFAULT);
	assert_string_equal(text(gd, 0), "a");
	tui_grid_free(gd);
}

static void
test_resize(void **state)
{
	struct tui_grid *gd = tui_grid_create(10, 6, 100);
	unsigned y;
	int delta;

	for (y = 0; y < 6; y++)
		put(gd, 0, y, (const char *[]){ "r0", "r1", "r2", "r3",
		    "r4wide-row", "" }[y]);
	/* Shrinking by three with the cursor on r4: the empty last row goes,
	 * then r0 and r1 move into the history. */
	delta = tui_grid_resize(gd, 10, 3, 4);
	assert_int_equal(delta, -2);
	assert_int_equal(tui_grid_sy(gd), 3);
	assert_int_equal(tui_grid_hsize(gd), 2);
	assert_string_equal(text(gd, 0), "r2");
	assert_string_equal(text(gd, 2), "r4wide-row");
	assert_string_equal(text(gd, -1), "r1");
	/* Narrower cuts the screen rows. */
	tui_grid_resize(gd, 4, 3, 2);
	assert_string_equal(text(gd, 2), "r4wi");
	/* Growing brings the history back. */
	delta = tui_grid_resize(gd, 12, 7, 2);
	assert_int_equal(delta, 2);
	assert_int_equal(tui_grid_hsize(gd), 0);
	assert_string_equal(text(gd, 0), "r0");
	assert_string_equal(text(gd, 4), "r4wi");
	assert_string_equal(text(gd, 6), "");
	put(gd, 0, 6, "bottom");
	assert_string_equal(text(gd, 6), "bottom");
	assert_true(tui_grid_is_dirty(gd));
	/* A grid without history drops what leaves the top. */
	tui_grid_free(gd);
	gd = tui_grid_create(5, 4, 0);
	put(gd, 0, 3, "last");
	assert_int_equal(tui_grid_resize(gd, 5, 2, 3), -2);
	assert_string_equal(text(gd, 1), "last");
	tui_grid_scroll(gd, 0, 0, 5, 2, 1, 0, TUI_COLOR_DEFAULT);
	assert_string_equal(text(gd, 0), "last");
	assert_string_equal(text(gd, 1), "");
	assert_int_equal(tui_grid_hsize(gd), 0);
	tui_grid_free(gd);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_and_read),
		cmocka_unit_test(test_wide_and_combining),
		cmocka_unit_test(test_combining_reuse),
		cmocka_unit_test(test_scroll_history),
		cmocka_unit_test(test_scrollback_ten_thousand),
		cmocka_unit_test(test_scroll_region),
		cmocka_unit_test(test_scroll_sideways),
		cmocka_unit_test(test_dirty),
		cmocka_unit_test(test_erase_colour),
		cmocka_unit_test(test_resize),
	};

	return test_run_group(tests, NULL, NULL);
}
