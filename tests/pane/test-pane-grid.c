/* The cell grid: writing, wide and combining characters, scrolling, history, dirty rows, resizing. */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "lib/testlib.h"
#include "pane/pane.h"

static void
put(struct pane_grid *gd, unsigned x, unsigned y, const char *s)
{
	struct pane_cell c = { 0 };

	for (; *s != '\0'; s++, x++) {
		c.cp = (unsigned char)*s;
		pane_grid_set(gd, x, y, &c, NULL, 0);
	}
}

/* Row Y's text; a static buffer, good until the next call. */
static const char *
text(struct pane_grid *gd, int y)
{
	static struct buf b;

	buf_reset(&b);
	buf_adds(&b, "");
	pane_grid_row_text(gd, y, &b);
	return b.data;
}

static void
test_write_and_read(void **state)
{
	struct pane_grid *gd = pane_grid_create(10, 3, 100);

	put(gd, 0, 0, "hello");
	put(gd, 3, 1, "x");
	assert_string_equal(text(gd, 0), "hello");
	assert_string_equal(text(gd, 1), "   x");
	assert_string_equal(text(gd, 2), "");
	assert_int_equal(pane_grid_cell(gd, 1, 0)->cp, 'e');
	assert_int_equal(pane_grid_cell(gd, 9, 2)->cp, 0);
	/* Writing past the edge is ignored. */
	put(gd, 8, 0, "abc");
	assert_string_equal(text(gd, 0), "hello   ab");
	pane_grid_free(gd);
}

static void
test_wide_and_combining(void **state)
{
	struct pane_grid *gd = pane_grid_create(10, 2, 0);
	struct pane_cell c = { .wide = 1, .cp = 0x4e2d };
	uint32_t comb[] = { 'e', 0x301 }, out[PANE_CELL_MAXCHARS];

	pane_grid_set(gd, 2, 0, &c, NULL, 0);
	assert_true(pane_grid_cell(gd, 2, 0)->wide);
	assert_true(pane_grid_cell(gd, 3, 0)->pad);
	assert_string_equal(text(gd, 0), "  \xe4\xb8\xad");
	/* Overwriting the right half blanks the left half. */
	put(gd, 3, 0, "r");
	assert_false(pane_grid_cell(gd, 2, 0)->wide);
	assert_string_equal(text(gd, 0), "   r");
	/* And overwriting the left half blanks the right half. */
	pane_grid_set(gd, 5, 0, &c, NULL, 0);
	put(gd, 5, 0, "l");
	assert_false(pane_grid_cell(gd, 6, 0)->pad);
	assert_string_equal(text(gd, 0), "   r l");
	/* A wide character cannot start in the last column. */
	pane_grid_set(gd, 9, 1, &c, NULL, 0);
	assert_false(pane_grid_cell(gd, 9, 1)->wide);
	/* A base character and a combining accent share a cell. */
	c.wide = 0;
	pane_grid_set(gd, 0, 1, &c, comb, 2);
	assert_int_equal(pane_grid_chars(gd, pane_grid_cell(gd, 0, 1), 1, out), 2);
	assert_int_equal(out[0], 'e');
	assert_int_equal(out[1], 0x301);
	assert_string_equal(text(gd, 1), "e\xcc\x81");
	pane_grid_free(gd);
}

static void
test_combining_reuse(void **state)
{
	struct pane_grid *gd = pane_grid_create(4, 1, 0);
	struct pane_cell c = { 0 };
	uint32_t seq[] = { 'a', 0x301, 0x302 };
	unsigned i;

	/* A spinner redrawing accented cells forever stays bounded and right. */
	for (i = 0; i < 10000; i++) {
		seq[0] = 'a' + i % 3;
		pane_grid_set(gd, i % 4, 0, &c, seq, 3);
		if (i % 7 == 0)
			put(gd, (i + 1) % 4, 0, "z");
	}
	assert_int_equal(strlen(text(gd, 0)) > 0, 1);
	for (i = 0; i < 4; i++) {
		uint32_t out[PANE_CELL_MAXCHARS];
		size_t n = pane_grid_chars(gd, pane_grid_cell(gd, i, 0), 0, out);

		assert_true(n == 1 || n == 3);
		if (n == 3)
			assert_int_equal(out[2], 0x302);
	}
	pane_grid_free(gd);
}

static void
test_scroll_history(void **state)
{
	struct pane_grid *gd = pane_grid_create(8, 3, 5);
	char line[16];
	unsigned i;

	for (i = 0; i < 20; i++) {
		snprintf(line, sizeof line, "L%u", i);
		pane_grid_scroll(gd, 0, 0, 8, 3, 1, 0, PANE_COLOR_DEFAULT);
		put(gd, 0, 2, line);
	}
	/* L17..L19 on screen, five lines of history above, older ones gone. */
	assert_string_equal(text(gd, 0), "L17");
	assert_string_equal(text(gd, 2), "L19");
	assert_int_equal(pane_grid_hsize(gd), 5);
	assert_string_equal(text(gd, -1), "L16");
	assert_string_equal(text(gd, -5), "L12");
	assert_string_equal(text(gd, -6), "");
	assert_int_equal(pane_grid_scrolled(gd), 20);
	pane_grid_clear_history(gd);
	assert_int_equal(pane_grid_hsize(gd), 0);
	assert_string_equal(text(gd, 0), "L17");
	pane_grid_free(gd);
}

static void
test_scrollback_ten_thousand(void **state)
{
	struct pane_grid *gd = pane_grid_create(80, 24, 10000);
	char line[16];
	unsigned i;

	for (i = 0; i < 12000; i++) {
		snprintf(line, sizeof line, "%u", i);
		pane_grid_scroll(gd, 0, 0, 80, 24, 1, 0, PANE_COLOR_DEFAULT);
		put(gd, 0, 23, line);
	}
	assert_int_equal(pane_grid_hsize(gd), 10000);
	assert_string_equal(text(gd, 23), "11999");
	assert_string_equal(text(gd, 0), "11976");
	assert_string_equal(text(gd, -1), "11975");
	assert_string_equal(text(gd, -10000), "1976");
	pane_grid_free(gd);
}

static void
test_scroll_region(void **state)
{
	struct pane_grid *gd = pane_grid_create(6, 5, 10);
	unsigned y;

	for (y = 0; y < 5; y++)
		put(gd, 0, y, (const char *[]){ "a", "b", "c", "d", "e" }[y]);
	/* Rows 1..3 scroll up one: b leaves, a blank appears above e. */
	pane_grid_scroll(gd, 0, 1, 6, 4, 1, 0, PANE_COLOR_DEFAULT);
	assert_string_equal(text(gd, 0), "a");
	assert_string_equal(text(gd, 1), "c");
	assert_string_equal(text(gd, 2), "d");
	assert_string_equal(text(gd, 3), "");
	assert_string_equal(text(gd, 4), "e");
	assert_int_equal(pane_grid_hsize(gd), 0);
	/* And down two, with a coloured background for the new rows. */
	pane_grid_scroll(gd, 0, 1, 6, 4, -2, 0, PANE_COLOR_INDEX(4));
	assert_string_equal(text(gd, 1), "");
	assert_int_equal(pane_grid_cell(gd, 5, 2)->bg, PANE_COLOR_INDEX(4));
	assert_string_equal(text(gd, 3), "c");
	assert_string_equal(text(gd, 4), "e");
	/* The region scrolling with its top at row 0 still keeps no history. */
	pane_grid_scroll(gd, 0, 0, 6, 4, 1, 0, PANE_COLOR_DEFAULT);
	assert_int_equal(pane_grid_hsize(gd), 0);
	assert_string_equal(text(gd, 2), "c");
	pane_grid_free(gd);
}

static void
test_scroll_sideways(void **state)
{
	struct pane_grid *gd = pane_grid_create(8, 2, 0);
	struct pane_cell w = { .wide = 1, .cp = 0x4e2d };

	put(gd, 0, 0, "abcdefgh");
	/* Delete two characters at column 2 (DCH), insert one at 1 (ICH). */
	pane_grid_scroll(gd, 2, 0, 8, 1, 0, 2, PANE_COLOR_DEFAULT);
	assert_string_equal(text(gd, 0), "abefgh");
	pane_grid_scroll(gd, 1, 0, 8, 1, 0, -1, PANE_COLOR_DEFAULT);
	assert_string_equal(text(gd, 0), "a befgh");
	/* A wide character pushed over the edge is not left as half. */
	put(gd, 0, 1, "xxxxxx");
	pane_grid_set(gd, 6, 1, &w, NULL, 0);
	pane_grid_scroll(gd, 0, 1, 8, 2, 0, -1, PANE_COLOR_DEFAULT);
	assert_false(pane_grid_cell(gd, 7, 1)->wide);
	assert_string_equal(text(gd, 1), " xxxxxx");
	/* Rectangles narrower than the screen move cells. */
	put(gd, 0, 0, "12345678");
	put(gd, 0, 1, "abcdefgh");
	pane_grid_scroll(gd, 2, 0, 5, 2, 1, 0, PANE_COLOR_DEFAULT);
	assert_string_equal(text(gd, 0), "12cde678");
	assert_string_equal(text(gd, 1), "ab   fgh");
	pane_grid_free(gd);
}

static void
test_dirty(void **state)
{
	struct pane_grid *gd = pane_grid_create(20, 4, 10);
	unsigned x0, x1, y;

	assert_true(pane_grid_is_dirty(gd));
	pane_grid_clean(gd);
	assert_false(pane_grid_is_dirty(gd));
	for (y = 0; y < 4; y++)
		assert_false(pane_grid_row_dirty(gd, y, &x0, &x1));
	put(gd, 5, 2, "abc");
	put(gd, 12, 2, "z");
	assert_true(pane_grid_is_dirty(gd));
	assert_false(pane_grid_row_dirty(gd, 1, &x0, &x1));
	assert_true(pane_grid_row_dirty(gd, 2, &x0, &x1));
	assert_int_equal(x0, 5);
	assert_int_equal(x1, 13);
	pane_grid_clean(gd);
	pane_grid_erase(gd, 0, 3, 4, 4, PANE_COLOR_DEFAULT);
	assert_true(pane_grid_row_dirty(gd, 3, &x0, &x1));
	assert_int_equal(x1, 4);
	pane_grid_clean(gd);
	/* A scroll of the whole screen changes every row. */
	pane_grid_scroll(gd, 0, 0, 20, 4, 1, 0, PANE_COLOR_DEFAULT);
	for (y = 0; y < 4; y++) {
		assert_true(pane_grid_row_dirty(gd, y, &x0, &x1));
		assert_int_equal(x1, 20);
	}
	pane_grid_clean(gd);
	/* A region scroll only its rows. */
	pane_grid_scroll(gd, 0, 1, 20, 3, 1, 0, PANE_COLOR_DEFAULT);
	assert_false(pane_grid_row_dirty(gd, 0, &x0, &x1));
	assert_true(pane_grid_row_dirty(gd, 1, &x0, &x1));
	assert_true(pane_grid_row_dirty(gd, 2, &x0, &x1));
	assert_false(pane_grid_row_dirty(gd, 3, &x0, &x1));
	pane_grid_free(gd);
}

static void
test_erase_colour(void **state)
{
	struct pane_grid *gd = pane_grid_create(6, 2, 0);

	put(gd, 0, 0, "abcdef");
	pane_grid_erase(gd, 2, 0, 4, 1, PANE_COLOR_MAKE_RGB(1, 2, 3));
	assert_string_equal(text(gd, 0), "ab  ef");
	assert_int_equal(pane_grid_cell(gd, 3, 0)->bg, PANE_COLOR_MAKE_RGB(1, 2, 3));
	assert_int_equal(pane_grid_cell(gd, 4, 0)->bg, PANE_COLOR_DEFAULT);
	pane_grid_erase(gd, 1, 0, 6, 1, PANE_COLOR_DEFAULT);
	assert_string_equal(text(gd, 0), "a");
	pane_grid_free(gd);
}

static void
test_resize(void **state)
{
	struct pane_grid *gd = pane_grid_create(10, 6, 100);
	unsigned y;
	int delta;

	for (y = 0; y < 6; y++)
		put(gd, 0, y, (const char *[]){ "r0", "r1", "r2", "r3",
		    "r4wide-row", "" }[y]);
	/* Shrinking by three with the cursor on r4: the empty last row goes,
	 * then r0 and r1 move into the history. */
	delta = pane_grid_resize(gd, 10, 3, 4);
	assert_int_equal(delta, -2);
	assert_int_equal(pane_grid_sy(gd), 3);
	assert_int_equal(pane_grid_hsize(gd), 2);
	assert_string_equal(text(gd, 0), "r2");
	assert_string_equal(text(gd, 2), "r4wide-row");
	assert_string_equal(text(gd, -1), "r1");
	/* Narrower cuts the screen rows. */
	pane_grid_resize(gd, 4, 3, 2);
	assert_string_equal(text(gd, 2), "r4wi");
	/* Growing brings the history back. */
	delta = pane_grid_resize(gd, 12, 7, 2);
	assert_int_equal(delta, 2);
	assert_int_equal(pane_grid_hsize(gd), 0);
	assert_string_equal(text(gd, 0), "r0");
	assert_string_equal(text(gd, 4), "r4wi");
	assert_string_equal(text(gd, 6), "");
	put(gd, 0, 6, "bottom");
	assert_string_equal(text(gd, 6), "bottom");
	assert_true(pane_grid_is_dirty(gd));
	/* A grid without history drops what leaves the top. */
	pane_grid_free(gd);
	gd = pane_grid_create(5, 4, 0);
	put(gd, 0, 3, "last");
	assert_int_equal(pane_grid_resize(gd, 5, 2, 3), -2);
	assert_string_equal(text(gd, 1), "last");
	pane_grid_scroll(gd, 0, 0, 5, 2, 1, 0, PANE_COLOR_DEFAULT);
	assert_string_equal(text(gd, 0), "last");
	assert_string_equal(text(gd, 1), "");
	assert_int_equal(pane_grid_hsize(gd), 0);
	pane_grid_free(gd);
}

/* Writes S from column 0 of row Y on, wrapping at the width as a terminal would. */
static unsigned
put_wrapped(struct pane_grid *gd, unsigned y, const char *s)
{
	unsigned sx = pane_grid_sx(gd), n = (unsigned)strlen(s), i;

	for (i = 0; i * sx < n || i == 0; i++) {
		char row[256];
		unsigned len = n - i * sx < sx ? n - i * sx : sx;

		memcpy(row, s + i * sx, len);
		row[len] = '\0';
		put(gd, 0, y + i, row);
		if ((i + 1) * sx < n)
			pane_grid_set_wrapped(gd, (int)(y + i), true);
	}
	return y + i;
}

static void
test_reflow_long_line(void **state)
{
	struct pane_grid *gd = pane_grid_create(100, 800, 10);
	unsigned n = PANE_GRID_REFLOW_MAX + 4000, y, x, cx = 0, cy = 799;
	unsigned first = PANE_GRID_REFLOW_MAX / 100 * 100;
	char row[101];

	/* One line of N cells wrapped over many rows. */
	for (y = 0; y * 100 < n; y++) {
		for (x = 0; x < 100; x++)
			row[x] = (char)('a' + (y * 100 + x) % 26);
		row[100] = '\0';
		put(gd, 0, y, row);
		pane_grid_set_wrapped(gd, (int)y, (y + 1) * 100 < n);
	}
	/* A line past the limit is rewrapped in parts, each joining at most the limit's cells. */
	pane_grid_reflow(gd, 200, 800, &cx, &cy);
	y = first / 200;
	assert_int_equal(strlen(text(gd, (int)y)), first % 200);
	assert_true(pane_grid_wrapped(gd, (int)y));
	assert_int_equal(text(gd, (int)y + 1)[0], 'a' + first % 26);
	assert_int_equal(strlen(text(gd, (int)y + 1)), 200);
	pane_grid_free(gd);
}

static void
test_reflow_widen_narrow(void **state)
{
	struct pane_grid *gd = pane_grid_create(10, 6, 100);
	unsigned cx = 0, cy;

	/* A 25-character line that wrapped, then a hard line of 12 cut by nothing. */
	cy = put_wrapped(gd, 0, "abcdefghijklmnopqrstuvwxy");
	put(gd, 0, cy, "0123456789");
	put(gd, 0, cy + 1, "$");
	cx = 1;
	cy += 1;
	pane_grid_reflow(gd, 30, 6, &cx, &cy);
	assert_string_equal(text(gd, 0), "abcdefghijklmnopqrstuvwxy");
	assert_false(pane_grid_wrapped(gd, 0));
	assert_string_equal(text(gd, 1), "0123456789");
	assert_string_equal(text(gd, 2), "$");
	assert_int_equal(cy, 2);
	assert_int_equal(cx, 1);
	/* Narrower than both: each splits on its own, the hard end kept. */
	pane_grid_reflow(gd, 8, 6, &cx, &cy);
	/* Six rows of text and the cursor's: the first goes to the history. */
	assert_int_equal(pane_grid_hsize(gd), 1);
	assert_string_equal(text(gd, -1), "abcdefgh");
	assert_true(pane_grid_wrapped(gd, -1));
	assert_string_equal(text(gd, 0), "ijklmnop");
	assert_string_equal(text(gd, 2), "y");
	assert_false(pane_grid_wrapped(gd, 2));
	assert_string_equal(text(gd, 3), "01234567");
	assert_true(pane_grid_wrapped(gd, 3));
	assert_string_equal(text(gd, 4), "89");
	assert_false(pane_grid_wrapped(gd, 4));
	assert_int_equal(cy, 5);
	assert_int_equal(cx, 1);
	assert_string_equal(text(gd, cy), "$");
	/* Back to the first width: as it was. */
	pane_grid_reflow(gd, 10, 6, &cx, &cy);
	assert_int_equal(pane_grid_hsize(gd), 0);
	assert_string_equal(text(gd, 0), "abcdefghij");
	assert_string_equal(text(gd, 2), "uvwxy");
	assert_string_equal(text(gd, 3), "0123456789");
	assert_string_equal(text(gd, 4), "$");
	assert_int_equal(cy, 4);
	pane_grid_free(gd);
}

static void
test_reflow_cursor_in_line(void **state)
{
	struct pane_grid *gd = pane_grid_create(10, 4, 100);
	unsigned cx = 3, cy = 1;

	/* The cursor on the 'n' of a wrapped line (offset 13). */
	put_wrapped(gd, 0, "abcdefghijklmnopq");
	pane_grid_reflow(gd, 4, 10, &cx, &cy);
	assert_string_equal(text(gd, cy), "mnop");
	assert_int_equal(cx, 1);
	pane_grid_reflow(gd, 20, 4, &cx, &cy);
	assert_int_equal(cy, 0);
	assert_int_equal(cx, 13);
	assert_int_equal(pane_grid_cell(gd, cx, (int)cy)->cp, 'n');
	/* Past the end of the line, it stays as far past it. */
	cx = 19;
	pane_grid_reflow(gd, 10, 4, &cx, &cy);
	assert_int_equal(cy, 1);
	assert_int_equal(cx, 9);
	pane_grid_free(gd);
}

static void
test_reflow_wide_at_cut(void **state)
{
	struct pane_grid *gd = pane_grid_create(6, 4, 100);
	struct pane_cell w = { .wide = 1, .cp = 0x4e2d };
	unsigned cx = 0, cy = 2, x;

	/* "abc" then three wide characters: the second does not fit row 0. */
	put(gd, 0, 0, "abc");
	pane_grid_set(gd, 3, 0, &w, NULL, 0);
	pane_grid_set_wrapped(gd, 0, true);
	pane_grid_set(gd, 0, 1, &w, NULL, 0);
	pane_grid_set(gd, 2, 1, &w, NULL, 0);
	/* Narrowed to 4, a wide character lands one column short of the edge. */
	pane_grid_reflow(gd, 4, 4, &cx, &cy);
	assert_string_equal(text(gd, 0), "abc");
	assert_true(pane_grid_wrapped(gd, 0));
	assert_true(pane_grid_cell(gd, 0, 1)->wide);
	assert_true(pane_grid_cell(gd, 1, 1)->pad);
	assert_true(pane_grid_cell(gd, 2, 1)->wide);
	assert_true(pane_grid_cell(gd, 0, 2)->wide);
	assert_false(pane_grid_wrapped(gd, 2));
	assert_int_equal(cy, 3);
	/* Widened: one row again, no character lost or cut in half. */
	pane_grid_reflow(gd, 20, 4, &cx, &cy);
	assert_string_equal(text(gd, 0),
	    "abc\xe4\xb8\xad\xe4\xb8\xad\xe4\xb8\xad");
	for (x = 3; x < 9; x += 2) {
		assert_true(pane_grid_cell(gd, x, 0)->wide);
		assert_true(pane_grid_cell(gd, x + 1, 0)->pad);
	}
	assert_int_equal(cy, 1);
	/* One column: a wide character cannot show there, a blank stays. */
	pane_grid_reflow(gd, 1, 4, &cx, &cy);
	assert_string_equal(text(gd, -3), "a");
	assert_string_equal(text(gd, -1), "c");
	assert_false(pane_grid_cell(gd, 0, 0)->wide);
	pane_grid_free(gd);
}

static void
test_reflow_history(void **state)
{
	struct pane_grid *gd = pane_grid_create(10, 3, 1000);
	unsigned cx = 0, cy = 2, i;
	char line[32];

	/* 100 lines of 15, each wrapped in two rows, most of them in the history. */
	for (i = 0; i < 100; i++) {
		snprintf(line, sizeof line, "line %03u %6s", i, "tail");
		put_wrapped(gd, 1, line);
		pane_grid_scroll(gd, 0, 0, 10, 3, 2, 0, PANE_COLOR_DEFAULT);
	}
	assert_int_equal(pane_grid_hsize(gd), 200);
	pane_grid_reflow(gd, 20, 3, &cx, &cy);
	/* Each line whole in one row; the blank rows at the bottom stay. */
	assert_int_equal(pane_grid_hsize(gd), 100);
	assert_string_equal(text(gd, -100), "");
	assert_string_equal(text(gd, -99), "line 000   tail");
	assert_string_equal(text(gd, 0), "line 099   tail");
	assert_int_equal(cy, 2);
	/* Narrower than the first width, against a smaller limit. */
	pane_grid_free(gd);
	gd = pane_grid_create(10, 3, 50);
	for (i = 0; i < 40; i++) {
		snprintf(line, sizeof line, "%08u", i);
		put(gd, 0, 2, line);
		pane_grid_scroll(gd, 0, 0, 10, 3, 1, 0, PANE_COLOR_DEFAULT);
	}
	cx = 0;
	cy = 2;
	pane_grid_reflow(gd, 4, 3, &cx, &cy);
	assert_int_equal(pane_grid_hsize(gd), 50);
	assert_string_equal(text(gd, 0), "0000");
	assert_string_equal(text(gd, 1), "0039");
	assert_string_equal(text(gd, -1), "0038");
	assert_string_equal(text(gd, -2), "0000");
	assert_string_equal(text(gd, -50), "0000");
	assert_string_equal(text(gd, -49), "0014");
	assert_true(pane_grid_wrapped(gd, -2));
	assert_int_equal(cy, 2);
	/* The grid goes on working: a scroll recycles the oldest row. */
	put(gd, 0, 2, "new");
	pane_grid_scroll(gd, 0, 0, 4, 3, 1, 0, PANE_COLOR_DEFAULT);
	assert_string_equal(text(gd, 0), "0039");
	assert_string_equal(text(gd, 1), "new");
	assert_int_equal(pane_grid_hsize(gd), 50);
	pane_grid_free(gd);
}

static void
test_reflow_erase_ends_wrap(void **state)
{
	struct pane_grid *gd = pane_grid_create(5, 3, 10);
	unsigned cx = 0, cy = 2;

	put_wrapped(gd, 0, "abcdefg");
	/* A clear: the rows are written again with hard ends. */
	pane_grid_erase(gd, 0, 0, 5, 3, PANE_COLOR_DEFAULT);
	put(gd, 0, 0, "abcde");
	put(gd, 0, 1, "fg");
	pane_grid_reflow(gd, 10, 3, &cx, &cy);
	assert_string_equal(text(gd, 0), "abcde");
	assert_string_equal(text(gd, 1), "fg");
	pane_grid_free(gd);
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
		cmocka_unit_test(test_reflow_widen_narrow),
		cmocka_unit_test(test_reflow_long_line),
		cmocka_unit_test(test_reflow_cursor_in_line),
		cmocka_unit_test(test_reflow_wide_at_cut),
		cmocka_unit_test(test_reflow_history),
		cmocka_unit_test(test_reflow_erase_ends_wrap),
	};

	return test_run_group(tests, NULL, NULL);
}
