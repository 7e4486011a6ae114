/* Terminal emulation: escape sequences from a program become the right cells, modes and replies. */
#include <locale.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include <vterm.h>

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
term(unsigned sx, unsigned sy, unsigned hlimit)
{
	buf_reset(&replies);
	buf_adds(&replies, "");
	return pane_create(sx, sy, hlimit, reply, NULL);
}

static void
feed(struct pane *vt, const char *s)
{
	pane_feed(vt, s, strlen(s));
}

static const char *
text(struct pane *vt, int y)
{
	static struct buf b;

	buf_reset(&b);
	buf_adds(&b, "");
	pane_grid_row_text(pane_grid(vt), y, &b);
	return b.data;
}

static const struct pane_cell *
cell(struct pane *vt, unsigned x, int y)
{
	return pane_grid_cell(pane_grid(vt), x, y);
}

static void
test_text_and_cursor(void **state)
{
	struct pane *vt = term(20, 5, 100);
	unsigned x, y;

	feed(vt, "hello\r\nworld");
	assert_string_equal(text(vt, 0), "hello");
	assert_string_equal(text(vt, 1), "world");
	pane_cursor(vt, &x, &y);
	assert_int_equal(x, 5);
	assert_int_equal(y, 1);
	feed(vt, "\x1b[3;4Hx\x1b[1;1H\x1b[K");
	assert_string_equal(text(vt, 0), "");
	assert_string_equal(text(vt, 2), "   x");
	/* Autowrap at the edge. */
	feed(vt, "\x1b[4;1H0123456789012345678901");
	assert_string_equal(text(vt, 3), "01234567890123456789");
	assert_string_equal(text(vt, 4), "01");
	pane_free(vt);
}

static void
test_colours_and_attributes(void **state)
{
	struct pane *vt = term(20, 3, 0);

	feed(vt, "\x1b[31mR\x1b[38;5;200mX\x1b[38;2;1;2;3mY\x1b[44mB\x1b[0mZ");
	assert_int_equal(cell(vt, 0, 0)->fg, PANE_COLOR_INDEX(1));
	assert_int_equal(cell(vt, 1, 0)->fg, PANE_COLOR_INDEX(200));
	assert_int_equal(cell(vt, 2, 0)->fg, PANE_COLOR_MAKE_RGB(1, 2, 3));
	assert_int_equal(cell(vt, 3, 0)->bg, PANE_COLOR_INDEX(4));
	assert_int_equal(cell(vt, 4, 0)->fg, PANE_COLOR_DEFAULT);
	assert_int_equal(cell(vt, 4, 0)->bg, PANE_COLOR_DEFAULT);
	feed(vt, "\r\n\x1b[1ma\x1b[4mb\x1b[0;3mc\x1b[7md\x1b[9me\x1b[5mf\x1b[m");
	assert_int_equal(cell(vt, 0, 1)->attr, PANE_ATTR_BOLD);
	assert_int_equal(cell(vt, 1, 1)->attr, PANE_ATTR_BOLD | PANE_ATTR_UNDERLINE);
	assert_int_equal(cell(vt, 2, 1)->attr, PANE_ATTR_ITALIC);
	assert_int_equal(cell(vt, 3, 1)->attr, PANE_ATTR_ITALIC | PANE_ATTR_REVERSE);
	assert_true(cell(vt, 4, 1)->attr & PANE_ATTR_STRIKE);
	assert_true(cell(vt, 5, 1)->attr & PANE_ATTR_BLINK);
	/* Faint, which libvterm itself ignores, and colour 2 that is not faint. */
	feed(vt, "\r\n\x1b[2mf\x1b[22mn\x1b[1;2mb\x1b[0m\x1b[38;2;2;2;2mc\x1b[m");
	assert_int_equal(cell(vt, 0, 2)->attr, PANE_ATTR_DIM);
	assert_int_equal(cell(vt, 1, 2)->attr, 0);
	assert_int_equal(cell(vt, 2, 2)->attr, PANE_ATTR_DIM | PANE_ATTR_BOLD);
	assert_int_equal(cell(vt, 3, 2)->attr, 0);
	assert_int_equal(cell(vt, 3, 2)->fg, PANE_COLOR_MAKE_RGB(2, 2, 2));
	/* A sequence split between two reads still counts. */
	feed(vt, "\x1b[H\x1b[");
	feed(vt, "2mX");
	assert_int_equal(cell(vt, 0, 0)->attr, PANE_ATTR_DIM);
	feed(vt, "\x1b[0m");
	/* Erasing uses the current background. */
	feed(vt, "\x1b[41m\x1b[2J\x1b[m");
	assert_int_equal(cell(vt, 7, 1)->bg, PANE_COLOR_INDEX(1));
	pane_free(vt);
}

static void
test_wide_and_combining(void **state)
{
	struct pane *vt = term(10, 2, 0);
	uint32_t chars[PANE_CELL_MAXCHARS];
	unsigned x, y;

	feed(vt, "\xe4\xb8\xad" "a" "e\xcc\x81" "b");
	assert_true(cell(vt, 0, 0)->wide);
	assert_true(cell(vt, 1, 0)->pad);
	assert_int_equal(cell(vt, 2, 0)->cp, 'a');
	assert_int_equal(pane_grid_chars(pane_grid(vt), cell(vt, 3, 0), 0,
	    chars), 2);
	assert_int_equal(chars[1], 0x301);
	assert_int_equal(cell(vt, 4, 0)->cp, 'b');
	pane_cursor(vt, &x, &y);
	assert_int_equal(x, 5);
	assert_string_equal(text(vt, 0), "\xe4\xb8\xad" "ae\xcc\x81" "b");
	pane_free(vt);
}

static void
test_alternate_screen(void **state)
{
	struct pane *vt = term(10, 3, 100);
	unsigned x, y;

	feed(vt, "main\r\nline");
	feed(vt, "\x1b[?1049h");
	assert_true(pane_altscreen(vt));
	assert_string_equal(text(vt, 0), "");
	feed(vt, "\x1b[Halt");
	assert_string_equal(text(vt, 0), "alt");
	/* Scrolling the alternate screen keeps no history. */
	feed(vt, "\r\n\n\n\n");
	assert_int_equal(pane_grid_hsize(pane_grid(vt)), 0);
	feed(vt, "\x1b[?1049l");
	assert_false(pane_altscreen(vt));
	assert_string_equal(text(vt, 0), "main");
	assert_string_equal(text(vt, 1), "line");
	pane_cursor(vt, &x, &y);
	assert_int_equal(x, 4);
	assert_int_equal(y, 1);
	pane_free(vt);
}

static void
test_scroll_region_and_history(void **state)
{
	struct pane *vt = term(10, 5, 1000);
	int i;

	feed(vt, "a\r\nb\r\nc\r\nd\r\ne");
	/* Region rows 2-4; a line feed at its bottom scrolls it only. */
	feed(vt, "\x1b[2;4r\x1b[4;1H\nX");
	assert_string_equal(text(vt, 0), "a");
	assert_string_equal(text(vt, 1), "c");
	assert_string_equal(text(vt, 2), "d");
	assert_string_equal(text(vt, 3), "X");
	assert_string_equal(text(vt, 4), "e");
	assert_int_equal(pane_grid_hsize(pane_grid(vt)), 0);
	/* Reverse index at the region's top scrolls it down. */
	feed(vt, "\x1b[2;1H\x1bM");
	assert_string_equal(text(vt, 1), "");
	assert_string_equal(text(vt, 2), "c");
	assert_string_equal(text(vt, 4), "e");
	/* Back to the full screen: lines scrolled off the top are kept. */
	feed(vt, "\x1b[r\x1b[5;1H");
	for (i = 0; i < 1500; i++)
		feed(vt, "\r\nline");
	assert_int_equal(pane_grid_hsize(pane_grid(vt)), 1000);
	assert_string_equal(text(vt, 4), "line");
	assert_string_equal(text(vt, -1000), "line");
	pane_free(vt);
}

static void
test_insert_delete(void **state)
{
	struct pane *vt = term(10, 3, 0);

	feed(vt, "abcdef\r\x1b[2P");
	assert_string_equal(text(vt, 0), "cdef");
	feed(vt, "\x1b[2@");
	assert_string_equal(text(vt, 0), "  cdef");
	feed(vt, "\r\n1\r\n2\x1b[1;1H\x1b[L");
	assert_string_equal(text(vt, 0), "");
	assert_string_equal(text(vt, 1), "  cdef");
	assert_string_equal(text(vt, 2), "1");
	feed(vt, "\x1b[M");
	assert_string_equal(text(vt, 0), "  cdef");
	pane_free(vt);
}

static void
test_replies_and_modes(void **state)
{
	struct pane *vt = term(20, 5, 0);

	feed(vt, "\x1b[c");
	assert_string_equal(replies.data, "\x1b[?1;2c");
	buf_reset(&replies);
	feed(vt, "\x1b[3;7H\x1b[6n");
	assert_string_equal(replies.data, "\x1b[3;7R");
	feed(vt, "\x1b]2;my title\x07");
	assert_string_equal(pane_title(vt), "my title");
	assert_true(pane_take_changed(vt));
	assert_false(pane_take_changed(vt));
	assert_true(pane_cursor_visible(vt));
	feed(vt, "\x1b[?25l\x1b[4 q");
	assert_false(pane_cursor_visible(vt));
	assert_int_equal(pane_cursor_shape(vt), PANE_CURSOR_UNDERLINE);
	feed(vt, "\x1b[6 q\x07");
	assert_int_equal(pane_cursor_shape(vt), PANE_CURSOR_BAR);
	assert_int_equal(pane_bells(vt), 1);
	feed(vt, "\x1b[?5h");
	assert_true(pane_reverse(vt));
	pane_free(vt);
}

static void
test_keys_for_the_program(void **state)
{
	struct pane *vt = term(20, 5, 0);
	struct {
		uint32_t code;
		int mods;
	} k = { .code = PANE_KEY_UP };

	buf_reset(&replies);
	pane_key(vt, k.code, k.mods);
	assert_string_equal(replies.data, "\x1b[A");
	buf_reset(&replies);
	feed(vt, "\x1b[?1h");
	pane_key(vt, k.code, k.mods);
	assert_string_equal(replies.data, "\x1bOA");
	buf_reset(&replies);
	k.code = 3;
	pane_key(vt, k.code, k.mods);
	k.code = PANE_KEY_F1 + 4;
	pane_key(vt, k.code, k.mods);
	k.code = 'x';
	k.mods = PANE_MOD_ALT;
	pane_key(vt, k.code, k.mods);
	k.code = 0xe9;
	k.mods = 0;
	pane_key(vt, k.code, k.mods);
	k.code = '\r';
	pane_key(vt, k.code, k.mods);
	k.code = PANE_KEY_BACKTAB;
	pane_key(vt, k.code, k.mods);
	assert_string_equal(replies.data, "\x03\x1b[15~\x1bx\xc3\xa9\r\x1b[Z");
	/* Pastes are bracketed only when the program asked. */
	buf_reset(&replies);
	pane_paste(vt, "p1", 2);
	feed(vt, "\x1b[?2004h");
	pane_paste(vt, "p2", 2);
	assert_string_equal(replies.data, "p1\x1b[200~p2\x1b[201~");
	pane_free(vt);
}

static void
test_mouse_reporting(void **state)
{
	struct pane *vt = term(20, 5, 0);
	struct pane_mouse_event m = { .type = PANE_MOUSE_PRESS, .button = 1, .x = 2,
	    .y = 1 };

	buf_reset(&replies);
	assert_false(pane_mouse(vt, &m));
	assert_int_equal(replies.len, 0);
	feed(vt, "\x1b[?1000h\x1b[?1006h");
	assert_int_equal(pane_mouse_mode(vt), PANE_MOUSE_CLICKS);
	assert_true(pane_mouse(vt, &m));
	m.type = PANE_MOUSE_RELEASE;
	assert_true(pane_mouse(vt, &m));
	assert_string_equal(replies.data, "\x1b[<0;3;2M\x1b[<0;3;2m");
	feed(vt, "\x1b[?1000l");
	assert_int_equal(pane_mouse_mode(vt), PANE_MOUSE_OFF);
	pane_free(vt);
}

static void
test_resize(void **state)
{
	struct pane *vt = term(10, 5, 100);
	unsigned x, y;

	feed(vt, "1\r\n2\r\n3\r\n4\r\n5");
	pane_resize(vt, 8, 3);
	assert_int_equal(pane_grid_sy(pane_grid(vt)), 3);
	assert_int_equal(pane_grid_sx(pane_grid(vt)), 8);
	assert_string_equal(text(vt, 0), "3");
	assert_string_equal(text(vt, 2), "5");
	assert_string_equal(text(vt, -1), "2");
	pane_cursor(vt, &x, &y);
	assert_int_equal(y, 2);
	/* The program now writes in the new size. */
	feed(vt, "\x1b[1;1H123456789");
	assert_string_equal(text(vt, 0), "12345678");
	assert_string_equal(text(vt, 1), "9");
	pane_resize(vt, 8, 5);
	assert_string_equal(text(vt, 0), "1");
	assert_string_equal(text(vt, 2), "12345678");
	pane_free(vt);
}

static void
test_resize_reflows(void **state)
{
	struct pane *vt = term(10, 5, 100);
	unsigned x, y;

	/* A line that wraps, one that ends exactly at the edge, and a prompt. */
	feed(vt, "abcdefghijklmnopqrstuvwxy\r\n0123456789\r\n$ ab");
	assert_string_equal(text(vt, 2), "uvwxy");
	pane_resize(vt, 30, 5);
	assert_string_equal(text(vt, 0), "abcdefghijklmnopqrstuvwxy");
	assert_string_equal(text(vt, 1), "0123456789");
	assert_string_equal(text(vt, 2), "$ ab");
	pane_cursor(vt, &x, &y);
	assert_int_equal(x, 4);
	assert_int_equal(y, 2);
	/* The program writes on where the cursor is. */
	feed(vt, "c");
	assert_string_equal(text(vt, 2), "$ abc");
	pane_resize(vt, 7, 5);
	assert_string_equal(text(vt, -2), "abcdefg");
	assert_string_equal(text(vt, -1), "hijklmn");
	assert_string_equal(text(vt, 2), "0123456");
	assert_string_equal(text(vt, 3), "789");
	assert_string_equal(text(vt, 4), "$ abc");
	pane_cursor(vt, &x, &y);
	assert_int_equal(x, 5);
	assert_int_equal(y, 4);
	/* Lines ended by the program stay ended, wrapped ones rejoin. */
	pane_resize(vt, 40, 5);
	assert_string_equal(text(vt, 0), "abcdefghijklmnopqrstuvwxy");
	assert_string_equal(text(vt, 1), "0123456789");
	/* A line written past the edge in one write and another. */
	feed(vt, "\r\n");
	feed(vt, "0123456789012345678901234567890123456789");
	feed(vt, "XY\r\n");
	pane_resize(vt, 50, 5);
	assert_string_equal(text(vt, 3),
	    "0123456789012345678901234567890123456789XY");
	pane_free(vt);
}

static void
test_resize_alt_no_reflow(void **state)
{
	struct pane *vt = term(10, 4, 100);

	feed(vt, "abcdefghijklmno\r\n");
	feed(vt, "\x1b[?1049h\x1b[H" "ABCDEFGHIJKLMNO");
	pane_resize(vt, 20, 4);
	/* The alternate screen keeps its rows as they were... */
	assert_string_equal(text(vt, 0), "ABCDEFGHIJ");
	assert_string_equal(text(vt, 1), "KLMNO");
	/* ...the normal one below it rewraps. */
	feed(vt, "\x1b[?1049l");
	assert_string_equal(text(vt, 0), "abcdefghijklmno");
	pane_free(vt);
}

/*
 * libvterm's own screen layer, too slow for panes, is the reference: the
 * same output fed to both must give the same screen, whichever path
 * (libvterm's state layer or the streaming fast path) wrote each line.
 */
struct oracle {
	VTerm *vt;
	VTermScreen *screen;
	struct buf pushed;     /* lines it moved into its scrollback, \n-separated */
	size_t npushed;
};

static int
oracle_pushline(int cols, const VTermScreenCell *cells, void *arg)
{
	struct oracle *o = arg;
	int x, last = -1;

	for (x = 0; x < cols; x++) {
		if (cells[x].chars[0] != 0 && cells[x].chars[0] != ' ')
			last = x;
	}
	for (x = 0; x <= last; x++) {
		uint32_t c = cells[x].chars[0];

		if (c == (uint32_t)-1)
			continue;
		buf_addc(&o->pushed, c == 0 ? ' ' : c < 0x80 ? (char)c : '?');
	}
	buf_addc(&o->pushed, '\n');
	o->npushed++;
	return 1;
}

static const VTermScreenCallbacks oracle_callbacks = {
	.sb_pushline = oracle_pushline,
};

static void
oracle_init(struct oracle *o, unsigned sx, unsigned sy)
{
	memset(o, 0, sizeof *o);
	buf_init(&o->pushed);
	o->vt = vterm_new((int)sy, (int)sx);
	vterm_set_utf8(o->vt, 1);
	o->screen = vterm_obtain_screen(o->vt);
	vterm_screen_set_callbacks(o->screen, &oracle_callbacks, o);
	vterm_screen_enable_altscreen(o->screen, 1);
	vterm_state_set_bold_highbright(vterm_obtain_state(o->vt), 0);
	vterm_screen_reset(o->screen, 1);
}

static uint32_t
oracle_color(const VTermColor *c, bool fg)
{
	if (fg ? VTERM_COLOR_IS_DEFAULT_FG(c) : VTERM_COLOR_IS_DEFAULT_BG(c))
		return PANE_COLOR_DEFAULT;
	if (VTERM_COLOR_IS_INDEXED(c))
		return PANE_COLOR_INDEX(c->indexed.idx);
	return PANE_COLOR_MAKE_RGB(c->rgb.red, c->rgb.green, c->rgb.blue);
}

/* With ORACLE_DEBUG set, prints both screens, to see what differs. */
static const char *text(struct pane *, int);

static void
oracle_dump(struct oracle *o, struct pane *vt, unsigned sx, unsigned sy)
{
	if (getenv("ORACLE_DEBUG") == NULL)
		return;
	{
				unsigned yy, xx;

				for (yy = 0; yy < sy; yy++) {
					fprintf(stderr, "ours %2u |%s|\n", yy,
					    text(vt, (int)yy));
					fprintf(stderr, "ref  %2u |", yy);
					for (xx = 0; xx < sx; xx++) {
						VTermScreenCell rc;

						vterm_screen_get_cell(o->screen,
						    (VTermPos){ .row = (int)yy,
						    .col = (int)xx }, &rc);
						fprintf(stderr, "%s", rc.chars[0] ==
						    (uint32_t)-1 ? "" :
						    rc.chars[0] == 0 ? " " :
						    rc.chars[0] > 127 ? "W" :
						    (char[2]){ (char)rc.chars[0], 0 });
					}
					fprintf(stderr, "|\n");
				}
			}
}

#define ORACLE_FAIL(...) do {					\
	oracle_dump(o, vt, sx, sy);					\
	fail_msg(__VA_ARGS__);						\
} while (0)

/* Compares every screen cell of VT with the reference. */
static void
oracle_compare(struct oracle *o, struct pane *vt, unsigned sx,
    unsigned sy)
{
	VTermScreenCell oc;
	const struct pane_cell *c;
	uint32_t chars[PANE_CELL_MAXCHARS];
	unsigned x, y;
	size_t n;

	for (y = 0; y < sy; y++) {
		for (x = 0; x < sx; x++) {
			vterm_screen_get_cell(o->screen, (VTermPos){ .row = (int)y,
			    .col = (int)x }, &oc);
			c = cell(vt, x, (int)y);
			if (oc.chars[0] == (uint32_t)-1) {
				VTermScreenCell left;

				/* libvterm can leave a right half whose left
				 * half was overwritten; the grid blanks it. */
				vterm_screen_get_cell(o->screen, (VTermPos){
				    .row = (int)y, .col = (int)x - 1 }, &left);
				if (x > 0 && wcwidth((wchar_t)left.chars[0]) != 2 &&
				    !c->pad &&
				    c->cp == 0)
					continue;
				if (!c->pad)
					ORACLE_FAIL("cell %u,%u: expected a wide "
					    "character's right half", x, y);
				continue;
			}
			n = pane_grid_chars(pane_grid(vt), c, (int)y, chars);
			/*
			 * A wide character pushed half off the right edge:
			 * libvterm keeps the half that cannot be drawn, the
			 * grid blanks it as xterm does.
			 */
			if (x == sx - 1 && n == 0 && wcwidth((wchar_t)oc.chars[0]) == 2)
				continue;
			if ((oc.chars[0] == 0 || oc.chars[0] == ' ') &&
			    (n == 0 || chars[0] == ' ')) {
				if (oracle_color(&oc.bg, false) != c->bg)
					ORACLE_FAIL("cell %u,%u: blank background "
					    "%x, expected %x", x, y, c->bg,
					    oracle_color(&oc.bg, false));
				continue;
			}
			if (n == 0 || chars[0] != oc.chars[0])
				ORACLE_FAIL("cell %u,%u: U+%04X, expected U+%04X",
				    x, y, n == 0 ? 0 : chars[0], oc.chars[0]);
			/* libvterm reports a narrow character before an
			 * orphaned right half as wide. */
			if (c->wide != (oc.width == 2) &&
			    wcwidth((wchar_t)oc.chars[0]) == 2)
				ORACLE_FAIL("cell %u,%u: width", x, y);
			if (!!(c->attr & PANE_ATTR_BOLD) != oc.attrs.bold ||
			    !!(c->attr & PANE_ATTR_UNDERLINE) !=
			    !!oc.attrs.underline ||
			    !!(c->attr & PANE_ATTR_REVERSE) != oc.attrs.reverse ||
			    !!(c->attr & PANE_ATTR_ITALIC) != oc.attrs.italic)
				ORACLE_FAIL("cell %u,%u: attributes", x, y);
			if (c->fg != oracle_color(&oc.fg, true) ||
			    c->bg != oracle_color(&oc.bg, false))
				ORACLE_FAIL("cell %u,%u: colours %x/%x, expected "
				    "%x/%x", x, y, c->fg, c->bg,
				    oracle_color(&oc.fg, true),
				    oracle_color(&oc.bg, false));
		}
	}
}

/* A deterministic generator of terminal output, mostly streaming lines. */
static uint32_t rng_state = 12345;

static unsigned
rng(unsigned n)
{
	rng_state = rng_state * 1103515245 + 12345;
	return (rng_state >> 16) % n;
}

static void
gen_text(struct buf *b, unsigned len)
{
	unsigned i;

	for (i = 0; i < len; i++)
		buf_addc(b, (char)('!' + rng(94)));
}

/*
 * No alternate screen and no DECRC here: libvterm's screen layer neither
 * clears the alternate screen on 1049 as xterm and agentmux do, nor
 * restores origin mode with the cursor (test_xterm_* check those).
 */
static void
gen_chunk(struct buf *b, unsigned sx, unsigned sy, bool wild)
{
	static const char *seqs[] = { "\x1b[31m", "\x1b[0m", "\x1b[1;44m",
	    "\x1b[38;5;123m", "\x1b[48;2;10;20;30m", "\x1b[7m", "\x1b[m",
	    "\x1b[K", "\x1b[2J", "\x1b[H", "\x1b[5;3H", "\x1b[2;6r",
	    "\x1b[r", "\t", "\xe4\xb8\xad", "e\xcc\x81", "\x1b[4h",
	    "\x1b[4l", "\x1b(0", "\x1b(B", "\x1b[2S", "\x1b[1T",
	    "\x1b[3L", "\x1b[2M", "\x1b[1P", "\x1b[2@", "\x1bM", "\n",
	    "\x1b[?7l", "\x1b[?7h", "\x1b[?6h", "\x1b[?6l", "\x1b[4;1H" };
	unsigned k = rng(10);

	if (k < 6 || !wild) {
		/* Streaming lines, now and then longer than the screen. */
		gen_text(b, rng(8) == 0 ? rng(2 * sx) : rng(sx));
		buf_adds(b, "\r\n");
		return;
	}
	if (k < 9) {
		buf_adds(b, seqs[rng(nitems(seqs))]);
		gen_text(b, rng(sx / 2));
		return;
	}
	buf_printf(b, "\x1b[%u;%uH", 1 + rng(sy), 1 + rng(sx));
}

/* Feeds the same bytes to both in random slices and compares. */
static void
oracle_run(unsigned sx, unsigned sy, unsigned chunks, bool wild)
{
	struct oracle o;
	struct pane *vt = term(sx, sy, 100000);
	struct buf b;
	size_t off, n;
	unsigned i;

	oracle_init(&o, sx, sy);
	buf_init(&b);
	buf_adds(&b, "");
	for (i = 0; i < chunks; i++)
		gen_chunk(&b, sx, sy, wild);
	for (off = 0; off < b.len; off += n) {
		n = 1 + rng(rng(4) == 0 ? 3000 : 200);
		if (n > b.len - off)
			n = b.len - off;
		pane_feed(vt, b.data + off, n);
		vterm_input_write(o.vt, b.data + off, n);
		if (getenv("ORACLE_DEBUG") != NULL) {
			(void)rng(50);
			size_t k, from = off > 300 ? off - 300 : 0;

			fprintf(stderr, "--- fed:");
			for (k = from; k < off + n; k++) {
				if (k == off)
					fprintf(stderr, "|||");
				fprintf(stderr, (unsigned char)b.data[k] < 32 ||
				    (unsigned char)b.data[k] > 126 ? "\\x%02x" :
				    "%c", (unsigned char)b.data[k]);
			}
			fprintf(stderr, "\n");
			oracle_compare(&o, vt, sx, sy);
		} else if (rng(50) == 0)
			oracle_compare(&o, vt, sx, sy);
	}
	oracle_compare(&o, vt, sx, sy);
	if (!wild) {
		/* Only full-screen scrolls happened: the histories agree. */
		struct buf h;
		int y;

		buf_init(&h);
		buf_adds(&h, "");
		assert_int_equal(pane_grid_hsize(pane_grid(vt)), o.npushed);
		for (y = -(int)o.npushed; y < 0; y++) {
			struct buf line;

			buf_init(&line);
			buf_adds(&line, "");
			pane_grid_row_text(pane_grid(vt), y, &line);
			buf_adds(&h, line.data);
			buf_addc(&h, '\n');
			buf_free(&line);
		}
		assert_string_equal(h.data, o.pushed.data);
		buf_free(&h);
		assert_true(pane_fast_lines(vt) > chunks / 2);
	}
	buf_free(&b);
	buf_free(&o.pushed);
	vterm_free(o.vt);
	pane_free(vt);
}

static void
test_streaming_matches_libvterm(void **state)
{
	oracle_run(80, 24, 5000, false);
	oracle_run(13, 4, 3000, false);
}

static void
test_mixed_output_matches_libvterm(void **state)
{
	unsigned i;

	for (i = 0; i < 20; i++) {
		oracle_run(40, 12, 600, true);
		oracle_run(80, 24, 600, true);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_text_and_cursor),
		cmocka_unit_test(test_colours_and_attributes),
		cmocka_unit_test(test_wide_and_combining),
		cmocka_unit_test(test_alternate_screen),
		cmocka_unit_test(test_scroll_region_and_history),
		cmocka_unit_test(test_insert_delete),
		cmocka_unit_test(test_replies_and_modes),
		cmocka_unit_test(test_keys_for_the_program),
		cmocka_unit_test(test_mouse_reporting),
		cmocka_unit_test(test_resize),
		cmocka_unit_test(test_resize_reflows),
		cmocka_unit_test(test_resize_alt_no_reflow),
		cmocka_unit_test(test_streaming_matches_libvterm),
		cmocka_unit_test(test_mixed_output_matches_libvterm),
	};

	setlocale(LC_CTYPE, "C.UTF-8");

	return test_run_group(tests, NULL, NULL);
}
