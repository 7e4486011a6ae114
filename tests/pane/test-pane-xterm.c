/*
 * The pane's emulation against what VT100 and xterm do (xterm's ctlseqs,
 * vttest): each test feeds the sequences of one finding through the pane's
 * terminal (scanner, libvterm, grid) and compares the whole screen cell by
 * cell: text, attributes, colours and the cursor.
 */
#include <locale.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "lib/testlib.h"
#include "pane/pane.h"

static struct buf replies;

static void
reply(void *arg, const char *data, size_t len)
{
	buf_add(&replies, data, len);
}

static struct pane *
term(unsigned sx, unsigned sy)
{
	buf_reset(&replies);
	buf_adds(&replies, "");
	return pane_create(sx, sy, 100, reply, NULL);
}

/* Feeds S whole, or one byte at a time with BYTES (sequences split across reads). */
static void
feed_as(struct pane *vt, const char *s, int bytes)
{
	size_t i, n = strlen(s);

	if (!bytes) {
		pane_feed(vt, s, n);
		return;
	}
	for (i = 0; i < n; i++)
		pane_feed(vt, s + i, 1);
}

static void
feed(struct pane *vt, const char *s)
{
	feed_as(vt, s, 0);
}

/* The attributes a letter of an attribute picture stands for. */
static unsigned
attr_of(char c)
{
	switch (c) {
	case 'b':
		return PANE_ATTR_BOLD;
	case 'c':
		return PANE_ATTR_CONCEAL;
	case 'r':
		return PANE_ATTR_REVERSE;
	}
	return 0;
}

/*
 * Compares the whole screen with ROWS (one string a row, NULL-terminated
 * short: blank rows after), cell by cell. ATTRS (NULL: all plain) gives
 * each cell's attributes by letter ('.' plain, 'b' bold, 'c' concealed,
 * 'r' reverse); every cell must have the default colours. Then the cursor.
 */
static void
screen_is(struct pane *vt, const char *const *rows,
    const char *const *attrs, unsigned cx, unsigned cy)
{
	struct pane_grid *gd = pane_grid(vt);
	uint32_t chars[PANE_CELL_MAXCHARS];
	const struct pane_cell *c;
	unsigned x, y, want, wattr;
	bool ended = false, aended = attrs == NULL;
	unsigned gx, gy;

	for (y = 0; y < pane_grid_sy(gd); y++) {
		const char *row = "", *arow = "";

		if (!ended && rows[y] != NULL)
			row = rows[y];
		else
			ended = true;
		if (attrs != NULL && !aended && attrs[y] != NULL)
			arow = attrs[y];
		else
			aended = true;
		for (x = 0; x < pane_grid_sx(gd); x++) {
			c = pane_grid_cell(gd, x, (int)y);
			want = x < strlen(row) ? (unsigned char)row[x] : ' ';
			wattr = x < strlen(arow) ? attr_of(arow[x]) : 0;
			if (pane_grid_chars(gd, c, (int)y, chars) == 0)
				chars[0] = ' ';
			if (chars[0] != want)
				fail_msg("cell %u,%u: '%c' (U+%04X), expected '%c'", x,
				    y, chars[0] < 128 ? (char)chars[0] : '?',
				    chars[0], (char)want);
			if (c->attr != wattr)
				fail_msg("cell %u,%u: attributes %#x, expected %#x",
				    x, y, c->attr, wattr);
			if (c->fg != PANE_COLOR_DEFAULT || c->bg != PANE_COLOR_DEFAULT)
				fail_msg("cell %u,%u: colours %#x/%#x, expected the "
				    "defaults", x, y, c->fg, c->bg);
		}
	}
	pane_cursor(vt, &gx, &gy);
	if (gx != cx || gy != cy)
		fail_msg("cursor at %u,%u, expected %u,%u", gx, gy, cx, cy);
}

#define ROWS(...) ((const char *const[]){ __VA_ARGS__, NULL })

/* Finding 2: every parameter of SM/RM and DECSET/DECRST applies. */
static void
test_modes_with_several_parameters(void **state)
{
	struct pane_mouse_event m = { .type = PANE_MOUSE_PRESS, .button = 1, .x = 2,
	    .y = 1 };
	int bytes;

	for (bytes = 0; bytes < 2; bytes++) {
		struct pane *vt = term(10, 3);

		/* IRM and LNM on together, then off together. */
		feed_as(vt, "abc\r\033[20;4hX\033[4;20l\n", bytes);
		screen_is(vt, ROWS("Xabc"), NULL, 1, 1);
		feed_as(vt, "\033[?5h\033[?6;5;3l", bytes);
		assert_false(pane_reverse(vt));
		/* DECCOLM (3) in the list: the screen is cleared. */
		screen_is(vt, ROWS(""), NULL, 0, 0);
		feed_as(vt, "\033[?1000;1006h", bytes);
		assert_int_equal(pane_mouse_mode(vt), PANE_MOUSE_CLICKS);
		buf_reset(&replies);
		assert_true(pane_mouse(vt, &m));
		assert_string_equal(replies.data, "\033[<0;3;2M");
		pane_free(vt);
	}
}

/* Finding 3: DECSC/DECRC keep the character sets and the shift state. */
static void
test_decsc_charsets(void **state)
{
	struct pane *vt = term(10, 3);
	uint32_t chars[PANE_CELL_MAXCHARS];
	struct pane_grid *gd;
	unsigned x;

	feed(vt, "\033(0qq\0337\033(B\0338qq\033(B\r\n");
	feed(vt, "\033)0\016qq\0337\017\0338qq\017x\r\n");
	gd = pane_grid(vt);
	for (x = 0; x < 4; x++) {
		assert_int_equal(pane_grid_chars(gd, pane_grid_cell(gd, x, 0), 0,
		    chars), 1);
		assert_int_equal(chars[0], 0x2500);
		assert_int_equal(pane_grid_chars(gd, pane_grid_cell(gd, x, 1), 1,
		    chars), 1);
		assert_int_equal(chars[0], 0x2500);
	}
	/* SI restored G0, and G0 is ASCII: x is itself. */
	pane_grid_chars(gd, pane_grid_cell(gd, 4, 1), 1, chars);
	assert_int_equal(chars[0], 'x');
	pane_free(vt);
}

/* Finding 4: DECRC restores origin mode, and the saved pen. */
static void
test_decsc_origin_mode(void **state)
{
	struct pane *vt = term(10, 12);

	feed(vt, "\033[2J\033[5;10r\033[?6h\0337\033[?6l\0338\033[1;1HX\033[r");
	screen_is(vt, ROWS("", "", "", "", "X"), NULL, 0, 0);
	/* The pen comes back with the cursor, faint and concealed too. */
	feed(vt, "\033[8m\0337\033[m\033[5;5H\0338Y\033[m");
	screen_is(vt, ROWS("Y", "", "", "", "X"), ROWS("c"), 1, 0);
	/* Nothing saved: DECRC goes home with the defaults. */
	pane_free(vt);
	vt = term(10, 3);
	feed(vt, "\033[1m\033[2;3H\0338Z");
	screen_is(vt, ROWS("Z"), NULL, 1, 0);
	pane_free(vt);
}

/* Saved cursors are per screen, as xterm keeps them (vttest 11.8.7). */
static void
test_decsc_per_screen(void **state)
{
	struct pane *vt = term(10, 5);
	unsigned x, y;

	feed(vt, "\033[2;3H\0337\033[?47h\033[4;5H\0337\033[?47l\0338");
	pane_cursor(vt, &x, &y);
	assert_int_equal(x, 2);
	assert_int_equal(y, 1);
	/* SCOSC and SCORC save and restore; libvterm alone homed on CSI s. */
	feed(vt, "\033[3;4H\033[s\033[H\033[u");
	pane_cursor(vt, &x, &y);
	assert_int_equal(x, 3);
	assert_int_equal(y, 2);
	pane_free(vt);
}

/* Finding 5: DECCOLM clears the screen, homes the cursor, resets the margins. */
static void
test_deccolm(void **state)
{
	struct pane *vt = term(10, 4);

	feed(vt, "one\r\ntwo\033[2;3r\033[3;3H\033[?3h");
	screen_is(vt, ROWS(""), NULL, 0, 0);
	/* The margins are gone: a line feed at the bottom scrolls it all. */
	feed(vt, "a\r\nb\r\nc\r\nd\r\ne");
	screen_is(vt, ROWS("b", "c", "d", "e"), NULL, 1, 3);
	feed(vt, "\033[?3l");
	screen_is(vt, ROWS(""), NULL, 0, 0);
	pane_free(vt);
}

/* Finding 6: mode 47 switches screens (without the clearing 1047 and 1049 do). */
static void
test_mode_47(void **state)
{
	struct pane *vt = term(10, 3);

	feed(vt, "main\033[?47h\033[2J\033[Halt\033[?47l");
	assert_false(pane_altscreen(vt));
	screen_is(vt, ROWS("main"), NULL, 3, 0);
	feed(vt, "\033[?47h");
	assert_true(pane_altscreen(vt));
	screen_is(vt, ROWS("alt"), NULL, 3, 0);
	/* 1049 clears the alternate screen on the way in, 1047 on the way out. */
	feed(vt, "\033[?47l\033[?1049h");
	screen_is(vt, ROWS(""), NULL, 3, 0);
	feed(vt, "ALT\033[?1049l\033[?1047h");
	screen_is(vt, ROWS("   ALT"), NULL, 3, 0);
	feed(vt, "\033[?1047l\033[?47h");
	screen_is(vt, ROWS(""), NULL, 3, 0);
	pane_free(vt);
}

/* Finding 7 (and vttest's funny scroll regions): regions under two lines are refused. */
static void
test_one_line_scroll_region(void **state)
{
	struct pane *vt = term(10, 4);

	/* Refused outright: the cursor does not even go home. */
	feed(vt, "\033[3;3H\033[0;1r");
	screen_is(vt, ROWS(""), NULL, 2, 2);
	feed(vt, "\033[20;10r\033[2;2r\033[4;1Ha\r\nb\r\nc\r\nd");
	screen_is(vt, ROWS("a", "b", "c", "d"), NULL, 1, 3);
	assert_int_equal(pane_grid_hsize(pane_grid(vt)), 3);
	/* A bottom of 0 is the last line, as in xterm: rows 2 to 4 scroll. */
	feed(vt, "\033[2;0r\033[4;1H\r\ne");
	screen_is(vt, ROWS("a", "c", "d", "e"), NULL, 1, 3);
	pane_free(vt);
}

/* Finding 8: REP repeats only a character just written. */
static void
test_rep_after_control(void **state)
{
	struct pane *vt = term(12, 4);

	feed(vt, "+\033[1b\033[10b|\r\n");
	screen_is(vt, ROWS("++|"), NULL, 0, 1);
	feed(vt, "x\r\033[3b-\033[2b");
	screen_is(vt, ROWS("++|", "---"), NULL, 3, 1);
	/* After DEL, or a broken-off sequence, nothing is repeated. */
	feed(vt, "\177\033[2b\033[\033[1b\033[4b");
	screen_is(vt, ROWS("++|", "---"), NULL, 3, 1);
	/* It wraps as printed text does (libvterm's own stopped at the edge). */
	feed(vt, "\033[3;9H=\033[5b");
	screen_is(vt, ROWS("++|", "---", "        ====", "=="), NULL, 2, 3);
	pane_free(vt);
	/*
	 * A combining character with nothing to combine with, then REP:
	 * libvterm's own REP looped for ever on a character of no width.
	 */
	vt = term(12, 3);
	feed(vt, "\314\201\033[5bok");
	pane_free(vt);
}

/* Finding 9: concealed text is kept but marked, and drawn as blanks (tui-render.c). */
static void
test_concealed(void **state)
{
	struct pane *vt = term(12, 3);

	feed(vt, "a\033[8msecret\033[28mb\r\n");
	screen_is(vt, ROWS("asecretb"), ROWS(".cccccc."), 0, 1);
	feed(vt, "\033[8mx\033[0my");
	screen_is(vt, ROWS("asecretb", "xy"), ROWS(".cccccc.", "c."), 2, 1);
	pane_free(vt);
}

/* Finding 10: DECALN fills with E in the default rendition, resets the margins, homes. */
static void
test_decaln_default_colours(void **state)
{
	struct pane *vt = term(4, 3);

	feed(vt, "\033[2;3r\033[41;1;7m\033#8");
	screen_is(vt, ROWS("EEEE", "EEEE", "EEEE"), NULL, 0, 0);
	/* The pen itself is kept. */
	feed(vt, "x");
	assert_int_equal(pane_grid_cell(pane_grid(vt), 0, 0)->bg,
	    PANE_COLOR_INDEX(1));
	pane_free(vt);
}

/* Finding 11: window reports answer the text area's size; nothing else moves or leaks. */
static void
test_window_reports(void **state)
{
	struct pane *vt = term(30, 7);
	int bytes;

	for (bytes = 0; bytes < 2; bytes++) {
		buf_reset(&replies);
		feed_as(vt, "\033[18t", bytes);
		assert_string_equal(replies.data, "\033[8;7;30t");
	}
	buf_reset(&replies);
	feed(vt, "\033[19t\033[11t\033[13t");
	assert_string_equal(replies.data, "\033[9;7;30t\033[1t\033[3;0;0t");
	/* No title (it would become input), no pixels, no resizing. */
	buf_reset(&replies);
	feed(vt, "\033]2;rm -rf x\007\033[21t\033[20t\033[14t\033[8;50;100t\033[4;1;1t");
	assert_int_equal(replies.len, 0);
	assert_int_equal(pane_grid_sx(pane_grid(vt)), 30);
	assert_int_equal(pane_grid_sy(pane_grid(vt)), 7);
	pane_free(vt);
}

/* Reports vttest's menu 6 reads as xterm answers them. */
static void
test_reports(void **state)
{
	struct pane *vt = term(10, 10);

	feed(vt, "\033[4;8r\033[?6h\033[2;3H\033[6n\033[?6n");
	assert_string_equal(replies.data, "\033[2;3R\033[?2;3R");
	buf_reset(&replies);
	feed(vt, "\033[?6l\033[r\033[x\033[1x\033[=c");
	assert_string_equal(replies.data, "\033[2;1;1;128;128;1;0x"
	    "\033[3;1;1;128;128;1;0x\033P!|00000000\033\\");
	pane_free(vt);
}

/*
 * DECRQSS for a setting libvterm 0.1.4 does not know crashed agentmux
 * (libvterm read its length as a pointer); xterm answers "not valid".
 */
static void
test_decrqss(void **state)
{
	struct pane *vt = term(10, 5);
	int bytes;

	for (bytes = 0; bytes < 2; bytes++) {
		buf_reset(&replies);
		feed_as(vt, "\033P$qi\033\\\033P$q\007\033P$qzzz\033\\ok", bytes);
		assert_string_equal(replies.data, "\033P0$r\033\\\033P0$r\033\\"
		    "\033P0$r\033\\");
		buf_reset(&replies);
		feed_as(vt, "\033[2;4r\033P$qr\033\\\033P$q\"q\033\\\033[r", bytes);
		assert_string_equal(replies.data, "\033P1$r2;4r\033\\"
		    "\033P1$r2\"q\033\\");
		/* Other DCS strings are dropped whole; an ESC in one starts a sequence. */
		feed_as(vt, "\033[H\033Pq#0;2;0;0;0#0~~\033\\A\033P1x\033[2GB", bytes);
		screen_is(vt, ROWS("AB"), NULL, 2, 0);
		feed(vt, "\033[2J\033[H");
	}
	pane_free(vt);
}

/* DECSCUSR: the pane's shape as it asked, blinking or not, or the terminal's own. */
static void
test_cursor_shape(void **state)
{
	struct pane *vt = term(10, 3);

	assert_int_equal(pane_cursor_shape(vt), PANE_CURSOR_DEFAULT);
	feed(vt, "\033[5 q");
	assert_int_equal(pane_cursor_shape(vt), PANE_CURSOR_BAR_BLINK);
	feed(vt, "\033[2 q");
	assert_int_equal(pane_cursor_shape(vt), PANE_CURSOR_BLOCK);
	feed(vt, "\033[9 q");
	assert_int_equal(pane_cursor_shape(vt), PANE_CURSOR_BLOCK);
	feed(vt, "\033[ q");
	assert_int_equal(pane_cursor_shape(vt), PANE_CURSOR_DEFAULT);
	feed(vt, "\033[3 q\033c");
	assert_int_equal(pane_cursor_shape(vt), PANE_CURSOR_DEFAULT);
	pane_free(vt);
}

/* Also seen: double-width lines are laid out at half the width, and drawn two columns a cell. */
static void
test_double_width_lines(void **state)
{
	struct pane *vt = term(10, 4);
	struct pane_grid *gd = pane_grid(vt);

	feed(vt, "\033#6abcdefg\r\nplain");
	screen_is(vt, ROWS("abcde", "fg", "plain"), NULL, 5, 2);
	assert_int_equal(pane_grid_lsize(gd, 0), PANE_LSIZE_WIDE);
	assert_int_equal(pane_grid_lsize(gd, 1), PANE_LSIZE_SINGLE);
	feed(vt, "\033[1;3H");
	assert_int_equal(pane_cursor_column(vt), 4);
	/* A line scrolled in is single-width, for libvterm too. */
	feed(vt, "\033[4;1H\033#6\n\nx");
	gd = pane_grid(vt);
	assert_int_equal(pane_grid_lsize(gd, 3), PANE_LSIZE_SINGLE);
	assert_int_equal(pane_grid_lsize(gd, 1), PANE_LSIZE_WIDE);
	feed(vt, "\r0123456789");
	screen_is(vt, ROWS("plain", "", "", "0123456789"), NULL, 9, 3);
	/* Erasing the display makes every line single again. */
	feed(vt, "\033#3\033[2J");
	assert_int_equal(pane_grid_lsize(gd, 3), PANE_LSIZE_SINGLE);
	pane_free(vt);
}

/*
 * Shrinking a full screen with the cursor near the top keeps the cursor
 * on it (the fuzzer found it at row -7 after a resize: libvterm then
 * indexes its own arrays with that row).
 */
static void
test_shrink_keeps_cursor(void **state)
{
	struct pane *vt = term(4, 6);
	unsigned x, y;

	feed(vt, "\033#8\033[2;3H");
	pane_resize(vt, 4, 3);
	pane_cursor(vt, &x, &y);
	assert_int_equal(x, 2);
	assert_int_equal(y, 0);
	screen_is(vt, ROWS("EEEE", "EEEE", "EEEE"), NULL, 2, 0);
	feed(vt, "\033#6x");
	assert_int_equal(pane_grid_lsize(pane_grid(vt), 0), PANE_LSIZE_WIDE);
	pane_free(vt);
}

/* A hostile stream of half sequences never leaves the scanner holding more than it may. */
static void
test_held_sequences_bounded(void **state)
{
	struct pane *vt = term(20, 3);
	struct buf b;
	int i;

	buf_init(&b);
	buf_adds(&b, "\033[?");
	for (i = 0; i < 5000; i++)
		buf_adds(&b, "1;");
	buf_adds(&b, "25lok");
	pane_feed(vt, b.data, b.len);
	/* Too long to be one of ours: libvterm had it whole, and text goes on. */
	screen_is(vt, ROWS("ok"), NULL, 2, 0);
	buf_reset(&b);
	buf_adds(&b, "\033[");
	pane_feed(vt, b.data, b.len);
	for (i = 0; i < 300; i++)
		pane_feed(vt, "0", 1);
	feed(vt, "m!");
	screen_is(vt, ROWS("ok!"), NULL, 3, 0);
	/* Leading zeros are no digits; more than five real ones are cut. */
	feed(vt, "\033[00000000001;00000000003H#\033[1;12345678H$");
	screen_is(vt, ROWS("ok#                $"), NULL, 19, 0);
	feed(vt, "\033[2J\033[H");
	screen_is(vt, ROWS(""), NULL, 0, 0);
	feed(vt, "ok!");
	/* CAN abandons a sequence; an OSC string passes whole. */
	feed(vt, "\033[2\030Z\033]0;[?6h title\033\\Q");
	screen_is(vt, ROWS("ok!ZQ"), NULL, 5, 0);
	buf_free(&b);
	pane_free(vt);
}

/*
 * An OSC whose ESC ends one read and whose backslash starts the next:
 * libvterm 0.1.4 copied from past the end of the second read (the pane
 * fuzzer's find), so the title got what lay there.
 */
static void
test_string_end_split(void **state)
{
	struct pane *vt = term(20, 3);
	static const char first[] = "\033]0;ab\0cd\033";

	pane_feed(vt, first, sizeof first - 1);
	pane_feed(vt, "\\X", 2);
	assert_string_equal(pane_title(vt), "abcd");
	screen_is(vt, ROWS("X"), NULL, 1, 0);
	/* Each byte in a read of its own, and an ESC ending every read. */
	feed_as(vt, "\033]2;one two\033\\Y", 1);
	assert_string_equal(pane_title(vt), "one two");
	feed(vt, "\033]2;x\033");
	feed(vt, "\033]2;three\033");
	feed(vt, "\\Z");
	assert_string_equal(pane_title(vt), "three");
	screen_is(vt, ROWS("XYZ"), NULL, 3, 0);
	pane_free(vt);
}

/* The first character in the cell at X, Y. */
static void
cell_is(struct pane *vt, unsigned x, unsigned y, uint32_t want)
{
	struct pane_grid *gd = pane_grid(vt);
	uint32_t chars[PANE_CELL_MAXCHARS + 1];

	if (pane_grid_chars(gd, pane_grid_cell(gd, x, (int)y), (int)y, chars) == 0)
		chars[0] = ' ';
	if (chars[0] != want)
		fail_msg("cell %u,%u: U+%04X, expected U+%04X", x, y, chars[0],
		    want);
}

/*
 * C1 controls in UTF-8 (C2 80..C2 9F): libvterm gave them a width of -1,
 * which took the cursor off the screen to the left (the pane fuzzer's
 * find). They print nothing, whatever comes between their two bytes.
 */
static void
test_c1_in_utf8(void **state)
{
	struct pane *vt = term(10, 3);
	unsigned x, y;

	feed(vt, "\xc2\x80");
	pane_cursor(vt, &x, &y);
	assert_int_equal(x, 0);
	feed(vt, "A\xc2\x9b\xc2\x85" "B");
	screen_is(vt, ROWS("AB"), NULL, 2, 0);
	/* The lead and the C1 in reads of their own, a control between. */
	feed_as(vt, "\xc2\x80" "C", 1);
	feed(vt, "\xc2");
	feed(vt, "\r\n\x7f");
	feed(vt, "\x90" "D");
	screen_is(vt, ROWS("ABC", "D"), NULL, 1, 1);
	/* A lead with no C1 after it is what it was: U+FFFD, then the rest. */
	feed(vt, "\xc2");
	feed(vt, "E\xc2");
	feed(vt, "\xa9\xc2\xc2");
	feed(vt, "\x81");
	cell_is(vt, 1, 1, 0xfffd);
	cell_is(vt, 2, 1, 'E');
	cell_is(vt, 3, 1, 0xa9);
	cell_is(vt, 4, 1, 0xfffd);
	cell_is(vt, 5, 1, ' ');
	pane_cursor(vt, &x, &y);
	assert_int_equal(x, 5);
	pane_free(vt);
}

/*
 * libvterm runs a control inside a sequence and ignores a high byte after
 * an ESC: such a sequence is still the one it was, for every guard (a
 * double-width line one column wide took the cursor off the screen).
 */
static void
test_sequence_with_controls(void **state)
{
	struct pane *vt = term(1, 3);
	unsigned x, y;

	feed(vt, "\033\x8c#3");
	feed(vt, "\033#\r6\033\x8c\x90#\n4");
	pane_cursor(vt, &x, &y);
	assert_int_equal(x, 0);
	assert_int_equal(y, 1);
	assert_int_equal(pane_cursor_column(vt), 0);
	pane_free(vt);

	/* The control runs where it came; the sequence is kept whole. */
	vt = term(10, 3);
	feed(vt, "ab\033[\r2\nC");
	screen_is(vt, ROWS("ab", "  "), NULL, 2, 1);
	feed(vt, "\033(\b0q\033(B");
	feed_as(vt, "\033(\n0q\033(B", 1);
	cell_is(vt, 1, 1, 0x2500);
	cell_is(vt, 2, 2, 0x2500);
	feed(vt, "q");
	cell_is(vt, 3, 2, 'q');
	pane_free(vt);
}

/*
 * A scroll region whose top is below a new, smaller height: libvterm
 * scrolled a region of negative height (the pane fuzzer's find). A new
 * height resets the region, as in xterm; the cursor stays where it was.
 */
static void
test_resize_resets_region(void **state)
{
	struct pane *vt = term(5, 28);
	unsigned x, y;

	feed(vt, "\033[21r\033[3;2H+");
	pane_resize(vt, 41, 17);
	pane_cursor(vt, &x, &y);
	assert_int_equal(x, 2);
	assert_int_equal(y, 2);
	feed(vt, "\033[4000b");
	pane_cursor(vt, &x, &y);
	assert_int_equal(y, 16);
	/* The whole screen scrolls now: the first row went up and away. */
	feed(vt, "\033[2J\033[Hfirst\033[2;1Hsecond\033[17;1H\n");
	screen_is(vt, ROWS("second"), NULL, 0, 16);
	pane_free(vt);

	/* A double-height line, then one column and a new height. */
	vt = term(56, 16);
	feed(vt, "\033#3");
	pane_resize(vt, 1, 23);
	pane_resize(vt, 1, 13);
	pane_cursor(vt, &x, &y);
	assert_int_equal(x, 0);
	assert_int_equal(y, 0);
	pane_free(vt);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_modes_with_several_parameters),
		cmocka_unit_test(test_decsc_charsets),
		cmocka_unit_test(test_decsc_origin_mode),
		cmocka_unit_test(test_decsc_per_screen),
		cmocka_unit_test(test_deccolm),
		cmocka_unit_test(test_mode_47),
		cmocka_unit_test(test_one_line_scroll_region),
		cmocka_unit_test(test_rep_after_control),
		cmocka_unit_test(test_concealed),
		cmocka_unit_test(test_decaln_default_colours),
		cmocka_unit_test(test_window_reports),
		cmocka_unit_test(test_reports),
		cmocka_unit_test(test_decrqss),
		cmocka_unit_test(test_cursor_shape),
		cmocka_unit_test(test_double_width_lines),
		cmocka_unit_test(test_shrink_keeps_cursor),
		cmocka_unit_test(test_held_sequences_bounded),
		cmocka_unit_test(test_string_end_split),
		cmocka_unit_test(test_c1_in_utf8),
		cmocka_unit_test(test_sequence_with_controls),
		cmocka_unit_test(test_resize_resets_region),
	};

	setlocale(LC_CTYPE, "C.UTF-8");
	buf_init(&replies);
	return test_run_group(tests, NULL, NULL);
}
