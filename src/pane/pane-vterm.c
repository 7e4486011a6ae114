/* A pane's terminal, kept by its session: libvterm's state layer parses the program's output and drives agentmux's own grids. */
#include <stdlib.h>
#include <string.h>

#include <vterm.h>

#include "core/core.h"
#include "pane-int.h"

static uint32_t
pane_color(const VTermColor *c, bool fg)
{
	if (fg && VTERM_COLOR_IS_DEFAULT_FG(c))
		return PANE_COLOR_DEFAULT;
	if (!fg && VTERM_COLOR_IS_DEFAULT_BG(c))
		return PANE_COLOR_DEFAULT;
	if (VTERM_COLOR_IS_INDEXED(c))
		return PANE_COLOR_INDEX(c->indexed.idx);
	return PANE_COLOR_MAKE_RGB(c->rgb.red, c->rgb.green, c->rgb.blue);
}

/*
 * libvterm 0.1.4 does not say which rows wrapped, and a reflow on resize
 * needs to know. A glyph at the start of the row below the one where the
 * last glyph ended, that would not have fitted after it, with no cursor
 * move reported in between (libvterm reports one at the end of a run of
 * text, not for its own wrap), came there by autowrap.
 */
static void
pane_flow(struct pane *vt, VTermPos pos, int width)
{
	unsigned sx = pane_grid_sx(vt->cur);

	if (vt->flow && pos.col == 0 && pos.row == vt->flow_row + 1 &&
	    vt->flow_end + (unsigned)width > sx)
		pane_grid_set_wrapped(vt->cur, vt->flow_row, true);
	vt->flow = true;
	vt->flow_row = pos.row;
	vt->flow_col = (unsigned)pos.col;
	vt->flow_end = (unsigned)(pos.col + width);
}

/* CP, or U+FFFD if no UTF-8 can hold it: libvterm lets surrogates and code points past U+10FFFF through. */
static uint32_t
pane_cp(uint32_t cp)
{
	if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0xfffd;
	return cp;
}

static int
pane_putglyph(VTermGlyphInfo *info, VTermPos pos, void *arg)
{
	struct pane *vt = arg;
	struct pane_cell c;
	size_t n;

	pane_flow(vt, pos, info->width);
	/* The last character, for REP (pane-vtseq.c). */
	for (n = 0; n < PANE_CELL_MAXCHARS && info->chars[n] != 0; n++)
		vt->last[n] = pane_cp(info->chars[n]);
	vt->nlast = n;
	if (info->width == 1 && info->chars[1] == 0 &&
	    pane_grid_set_narrow(vt->cur, (unsigned)pos.col, (unsigned)pos.row,
	    &vt->pen, pane_cp(info->chars[0])))
		return 1;
	c = vt->pen;
	c.cp = pane_cp(info->chars[0]);
	c.wide = info->width == 2;
	if (info->chars[0] == 0 || info->chars[1] == 0) {
		pane_grid_set(vt->cur, (unsigned)pos.col, (unsigned)pos.row, &c,
		    NULL, 0);
		return 1;
	}
	for (n = 1; n < PANE_CELL_MAXCHARS && info->chars[n] != 0; n++)
		;
	pane_grid_set(vt->cur, (unsigned)pos.col, (unsigned)pos.row, &c,
	    info->chars, n);
	return 1;
}

/*
 * Makes libvterm's line sizes those of the grid's rows. libvterm 0.1.4
 * keeps one set for both screens, and a row scrolled in keeps the size of
 * the row that was there; xterm's new rows are single-width. libvterm lays
 * text out by these sizes, and the renderer draws by the grid's, so they
 * must agree. vterm_state_get_lineinfo hands out libvterm's own array.
 */
static void
pane_lineinfo_sync(struct pane *vt)
{
	VTermLineInfo *li;
	enum pane_lsize ls;
	unsigned y;

	for (y = 0; y < pane_grid_sy(vt->cur); y++) {
		li = (VTermLineInfo *)vterm_state_get_lineinfo(vt->state, (int)y);
		ls = pane_grid_lsize(vt->cur, (int)y);
		/* Half of one column is none: libvterm would put the cursor at -1. */
		if (pane_grid_sx(vt->cur) < 2)
			ls = PANE_LSIZE_SINGLE;
		li->doublewidth = ls != PANE_LSIZE_SINGLE;
		li->doubleheight = ls == PANE_LSIZE_TOP ? 1 : ls == PANE_LSIZE_BOTTOM ?
		    2 : 0;
	}
}

/*
 * Keeps the cursor libvterm reports on the grid: with double-width lines
 * and a resize it can report a column before the first or past the last
 * (the pane fuzzer found inputs that do), which drawing would index with.
 */
static void
pane_set_cursor(struct pane *vt, VTermPos pos)
{
	unsigned sx = pane_grid_sx(vt->cur), sy = pane_grid_sy(vt->cur);

	vt->cx = pos.col < 0 ? 0 : (unsigned)pos.col >= sx ? sx - 1 :
	    (unsigned)pos.col;
	vt->cy = pos.row < 0 ? 0 : (unsigned)pos.row >= sy ? sy - 1 :
	    (unsigned)pos.row;
}

static int
pane_movecursor(VTermPos pos, VTermPos oldpos, int visible, void *arg)
{
	struct pane *vt = arg;

	/* Where the text left it (at the last glyph, at the edge) or anywhere else. */
	if (pos.row != vt->flow_row || ((unsigned)pos.col != vt->flow_col &&
	    (unsigned)pos.col != vt->flow_end))
		vt->flow = false;
	pane_set_cursor(vt, pos);
	vt->changed = true;
	return 1;
}

/* The row the last glyph ended on moved with a scroll (the autowrap's own, at the bottom). */
static void
pane_flow_scroll(struct pane *vt, VTermRect r, int down, int right)
{
	if (!vt->flow)
		return;
	if (right != 0 || r.start_col != 0 ||
	    (unsigned)r.end_col != pane_grid_sx(vt->cur) ||
	    vt->flow_row < r.start_row || vt->flow_row >= r.end_row)
		vt->flow = false;
	else if (vt->flow_row - down < r.start_row && r.start_row != 0)
		vt->flow = false;
	else
		vt->flow_row -= down;
}

static int
pane_scrollrect(VTermRect r, int down, int right, void *arg)
{
	struct pane *vt = arg;

	vt->ops++;
	if (down == 1 && right == 0 && r.start_row == 0 && r.start_col == 0 &&
	    (unsigned)r.end_row == pane_grid_sy(vt->cur) &&
	    (unsigned)r.end_col == pane_grid_sx(vt->cur))
		vt->fullscrolls++;
	pane_grid_scroll(vt->cur, (unsigned)r.start_col, (unsigned)r.start_row,
	    (unsigned)r.end_col, (unsigned)r.end_row, down, right, vt->pen.bg);
	pane_flow_scroll(vt, r, down, right);
	if (vt->lineinfo && right == 0 && r.start_col == 0 &&
	    (unsigned)r.end_col == pane_grid_sx(vt->cur))
		pane_lineinfo_sync(vt);
	return 1;
}

static int
pane_moverect(VTermRect dst, VTermRect src, void *arg)
{
	struct pane *vt = arg;

	vt->ops++;
	pane_grid_move(vt->cur, (unsigned)dst.start_col, (unsigned)dst.start_row,
	    (unsigned)src.start_col, (unsigned)src.start_row,
	    (unsigned)(src.end_col - src.start_col),
	    (unsigned)(src.end_row - src.start_row));
	return 1;
}

static int
pane_erase(VTermRect r, int selective, void *arg)
{
	struct pane *vt = arg;

	vt->ops++;
	pane_grid_erase(vt->cur, (unsigned)r.start_col, (unsigned)r.start_row,
	    (unsigned)r.end_col, (unsigned)r.end_row, vt->pen.bg);
	return 1;
}

static int
pane_initpen(void *arg)
{
	struct pane *vt = arg;

	memset(&vt->pen, 0, sizeof vt->pen);
	vt->now.dim = vt->now.conceal = false;
	return 1;
}

void
pane_pen_flag(struct pane *vt, unsigned flag, bool on)
{
	if (on)
		vt->pen.attr |= flag;
	else
		vt->pen.attr &= ~flag;
}

static int
pane_setpenattr(VTermAttr attr, VTermValue *val, void *arg)
{
	struct pane *vt = arg;

	switch (attr) {
	case VTERM_ATTR_BOLD:
		pane_pen_flag(vt, PANE_ATTR_BOLD, val->boolean);
		break;
	case VTERM_ATTR_UNDERLINE:
		pane_pen_flag(vt, PANE_ATTR_UNDERLINE, val->number != 0);
		break;
	case VTERM_ATTR_ITALIC:
		pane_pen_flag(vt, PANE_ATTR_ITALIC, val->boolean);
		break;
	case VTERM_ATTR_BLINK:
		pane_pen_flag(vt, PANE_ATTR_BLINK, val->boolean);
		break;
	case VTERM_ATTR_REVERSE:
		pane_pen_flag(vt, PANE_ATTR_REVERSE, val->boolean);
		break;
	case VTERM_ATTR_STRIKE:
		pane_pen_flag(vt, PANE_ATTR_STRIKE, val->boolean);
		break;
	case VTERM_ATTR_FOREGROUND:
		vt->pen.fg = pane_color(&val->color, true);
		break;
	case VTERM_ATTR_BACKGROUND:
		vt->pen.bg = pane_color(&val->color, false);
		break;
	case VTERM_ATTR_FONT:
	case VTERM_N_ATTRS:
		break;
	}
	return 1;
}

static void
pane_set_title(struct pane *vt, const char *s)
{
	free(vt->title);
	vt->title = xstrdup(s != NULL ? s : "");
}

/*
 * Switches between the normal screen and the alternate one. The modes
 * that switch are handled in pane-vtseq.c (libvterm 0.1.4 clears the
 * alternate screen on every way in, which xterm does only for 1049).
 */
void
pane_set_alt(struct pane *vt, bool on)
{
	if (vt->cur == (on ? vt->alt : vt->main))
		return;
	vt->changed = true;
	vt->ops++;
	vt->cur = on ? vt->alt : vt->main;
	pane_grid_set_dirty(vt->cur);
	if (vt->lineinfo)
		pane_lineinfo_sync(vt);
}

/* Blanks the alternate screen, as xterm does entering it with 1049 (leaving it with 1047). */
void
pane_clear_alt(struct pane *vt)
{
	unsigned y;

	pane_grid_erase(vt->alt, 0, 0, pane_grid_sx(vt->alt), pane_grid_sy(vt->alt),
	    PANE_COLOR_DEFAULT);
	for (y = 0; y < pane_grid_sy(vt->alt); y++)
		pane_grid_set_lsize(vt->alt, y, PANE_LSIZE_SINGLE);
	if (vt->lineinfo && vt->cur == vt->alt)
		pane_lineinfo_sync(vt);
}

/* A full reset (RIS) blanks both screens; libvterm's state layer does not. */
void
pane_reset_screens(struct pane *vt)
{
	unsigned y;

	pane_grid_erase(vt->main, 0, 0, pane_grid_sx(vt->main),
	    pane_grid_sy(vt->main), PANE_COLOR_DEFAULT);
	for (y = 0; y < pane_grid_sy(vt->main); y++)
		pane_grid_set_lsize(vt->main, y, PANE_LSIZE_SINGLE);
	pane_clear_alt(vt);
}

static int
pane_settermprop(VTermProp prop, VTermValue *val, void *arg)
{
	struct pane *vt = arg;

	vt->changed = true;
	vt->ops++;
	switch (prop) {
	case VTERM_PROP_CURSORVISIBLE:
		vt->cursor_visible = val->boolean;
		return 1;
	case VTERM_PROP_CURSORBLINK:
	case VTERM_PROP_ICONNAME:
		return 1;
	case VTERM_PROP_ALTSCREEN:
		pane_set_alt(vt, val->boolean);
		return 1;
	case VTERM_PROP_TITLE:
		pane_set_title(vt, val->string);
		return 1;
	case VTERM_PROP_REVERSE:
		vt->reverse = val->boolean;
		pane_grid_set_dirty(vt->cur);
		return 1;
	case VTERM_PROP_CURSORSHAPE:
		/* Kept from DECSCUSR itself (pane-vtseq.c), blinking included. */
		return 1;
	case VTERM_PROP_MOUSE:
		vt->mouse = val->number == VTERM_PROP_MOUSE_CLICK ?
		    PANE_MOUSE_CLICKS : val->number == VTERM_PROP_MOUSE_DRAG ?
		    PANE_MOUSE_DRAGS : val->number == VTERM_PROP_MOUSE_MOVE ?
		    PANE_MOUSE_MOTION : PANE_MOUSE_OFF;
		return 1;
	case VTERM_N_PROPS:
		break;
	}
	return 0;
}

static int
pane_bell(void *arg)
{
	struct pane *vt = arg;

	vt->bells++;
	vt->changed = true;
	return 1;
}

/* The normal screen rewraps on a new width (pane_grid_reflow); the alternate screen never does. */
static void
pane_reflow(struct pane_grid *gd, int cols, int rows, unsigned *x,
    unsigned *y)
{
	if ((unsigned)cols == pane_grid_sx(gd)) {
		*y = (unsigned)((int)*y + pane_grid_resize(gd, (unsigned)cols,
		    (unsigned)rows, *y));
		return;
	}
	pane_grid_reflow(gd, (unsigned)cols, (unsigned)rows, x, y);
}

static int
pane_resize_cb(int rows, int cols, VTermPos *delta, void *arg)
{
	struct pane *vt = arg;
	struct pane_grid *other = vt->cur == vt->main ? vt->alt : vt->main;

	unsigned x, y, ox = 0, oy = pane_grid_sy(other) - 1;
	VTermPos pos;

	/*
	 * Where libvterm has the cursor: the last one it reported may be
	 * stale (a line made double-width moves it unreported), and the move
	 * is added to its own.
	 */
	vterm_state_get_cursorpos(vt->state, &pos);
	x = pos.col < 0 ? 0 : (unsigned)pos.col;
	y = pos.row < 0 ? 0 : (unsigned)pos.row;
	vt->ops++;
	vt->flow = false;
	if (vt->cur == vt->alt) {
		delta->row = pane_grid_resize(vt->alt, (unsigned)cols,
		    (unsigned)rows, y);
		/* Nobody knows where its cursor will be: keep its bottom. */
		pane_reflow(vt->main, cols, rows, &ox, &oy);
		return 1;
	}
	pane_reflow(vt->main, cols, rows, &x, &y);
	delta->row = (int)y - pos.row;
	delta->col = (int)x - pos.col;
	pane_grid_resize(other, (unsigned)cols, (unsigned)rows, oy);
	return 1;
}

static enum pane_lsize
pane_vterm_lsize(const VTermLineInfo *li)
{
	if (li->doubleheight == 1)
		return PANE_LSIZE_TOP;
	if (li->doubleheight == 2)
		return PANE_LSIZE_BOTTOM;
	return li->doublewidth ? PANE_LSIZE_WIDE : PANE_LSIZE_SINGLE;
}

/* Double-width and double-height lines are drawn two columns a cell (tui-render.c). */
static int
pane_setlineinfo(int row, const VTermLineInfo *newinfo,
    const VTermLineInfo *oldinfo, void *arg)
{
	struct pane *vt = arg;
	enum pane_lsize ls = pane_vterm_lsize(newinfo);

	if (ls != PANE_LSIZE_SINGLE)
		vt->lineinfo = true;
	pane_grid_set_lsize(vt->cur, (unsigned)row, ls);
	return 1;
}

static const VTermStateCallbacks pane_callbacks = {
	.putglyph = pane_putglyph,
	.movecursor = pane_movecursor,
	.scrollrect = pane_scrollrect,
	.moverect = pane_moverect,
	.erase = pane_erase,
	.initpen = pane_initpen,
	.setpenattr = pane_setpenattr,
	.settermprop = pane_settermprop,
	.bell = pane_bell,
	.resize = pane_resize_cb,
	.setlineinfo = pane_setlineinfo,
};

static void
pane_output(const char *s, size_t len, void *arg)
{
	struct pane *vt = arg;

	if (vt->write != NULL)
		vt->write(vt->arg, s, len);
}

struct pane *
pane_create(unsigned sx, unsigned sy, unsigned hlimit,
    pane_write_cb write, void *arg)
{
	struct pane *vt = xcalloc(1, sizeof *vt);

	sx = sx < 1 ? 1 : sx;
	sy = sy < 1 ? 1 : sy;
	vt->refs = 1;
	vt->write = write;
	vt->arg = arg;
	vt->title = xstrdup("");
	vt->cursor_visible = true;
	pane_vtseq_init(vt);
	vt->main = pane_grid_create(sx, sy, hlimit);
	vt->alt = pane_grid_create(sx, sy, 0);
	vt->cur = vt->main;
	if ((vt->vt = vterm_new((int)sy, (int)sx)) == NULL)
		fatalx("libvterm could not create a %ux%u terminal", sx, sy);
	vterm_set_utf8(vt->vt, 1);
	vterm_output_set_callback(vt->vt, pane_output, vt);
	vt->state = vterm_obtain_state(vt->vt);
	vterm_state_set_callbacks(vt->state, &pane_callbacks, vt);
	vterm_state_set_bold_highbright(vt->state, 0);
	vterm_state_reset(vt->state, 1);
	return vt;
}

struct pane *
pane_ref(struct pane *vt)
{
	vt->refs++;
	return vt;
}

void
pane_set_write(struct pane *vt, pane_write_cb write, void *arg)
{
	vt->write = write;
	vt->arg = arg;
}

void
pane_free(struct pane *vt)
{
	if (vt == NULL || --vt->refs > 0)
		return;
	vterm_free(vt->vt);
	pane_grid_free(vt->main);
	pane_grid_free(vt->alt);
	free(vt->title);
	free(vt);
}

/* True if LINE (LEN bytes, then CR LF) is printable ASCII shorter than the screen. */
static bool
pane_plain(const struct pane *vt, const char *line, size_t len)
{
	size_t i;

	if (len >= pane_grid_sx(vt->cur))
		return false;
	for (i = 0; i < len; i++) {
		if ((unsigned char)line[i] < 0x20 || (unsigned char)line[i] > 0x7e)
			return false;
	}
	return true;
}

/*
 * Gives libvterm one line (through its CR LF, or whatever is left), then
 * decides whether the next plain lines may take the fast path: only if
 * libvterm itself just handled a plain line exactly as the fast path would
 * (written at the bottom-left from column 0 in the current pen, then one
 * scroll of the whole screen, cursor back at the bottom-left) is that so.
 */
static void
pane_slow_line(struct pane *vt, const char *p, size_t n)
{
	struct pane_grid *gd = vt->cur;
	unsigned sy = pane_grid_sy(gd);
	uint64_t ops = vt->ops, fullscrolls = vt->fullscrolls;
	bool plain;

	plain = n >= 2 && p[n - 2] == '\r' && p[n - 1] == '\n' &&
	    pane_plain(vt, p, n - 2) && pane_vtseq_plain(vt) &&
	    vt->cx == 0 && vt->cy == sy - 1 && sy >= 2 && !vt->lineinfo;
	pane_vtseq_parse(vt, p, n);
	vt->fast = plain && vt->cur == gd && vt->ops == ops + 1 &&
	    vt->fullscrolls == fullscrolls + 1 && vt->cx == 0 &&
	    vt->cy == sy - 1 && pane_vtseq_plain(vt) &&
	    pane_grid_row_is(gd, sy - 2, p, n - 2, &vt->pen);
}

/*
 * The fast path: plain lines streaming at the bottom of the screen are
 * written and scrolled here, leaving libvterm's state exactly as it would
 * have left it (cursor at the bottom-left, nothing pending). Returns the
 * bytes used; stops at the first line that is not plain.
 */
static size_t
pane_fast(struct pane *vt, const char *data, size_t len)
{
	struct pane_grid *gd = vt->cur;
	const char *p = data, *end = data + len, *cr;
	unsigned sx = pane_grid_sx(gd), sy = pane_grid_sy(gd);
	size_t max;

	while (p < end) {
		max = (size_t)(end - p) < sx ? (size_t)(end - p) : sx;
		if ((cr = memchr(p, '\r', max)) == NULL || cr + 1 >= end ||
		    cr[1] != '\n' || !pane_plain(vt, p, (size_t)(cr - p)))
			break;
		pane_grid_put_ascii(gd, sy - 1, p, (size_t)(cr - p), &vt->pen);
		pane_grid_scroll(gd, 0, 0, sx, sy, 1, 0, vt->pen.bg);
		vt->fastlines++;
		vt->flow = false;
		p = cr + 2;
	}
	if (p > data)
		vt->graphic = false;
	if (p < end)
		vt->fast = false;
	return (size_t)(p - data);
}

/*
 * libvterm costs some 200 instructions a character, so a pane streaming a
 * build log or a big file would be bound by it. Output is fed a line at a
 * time; once libvterm has shown that plain lines land at the bottom and
 * scroll the whole screen, the following plain lines are done here.
 */
void
pane_feed(struct pane *vt, const char *data, size_t len)
{
	const char *p = data, *end = data + len, *nl;
	size_t n;

	while (p < end) {
		if (vt->fast) {
			p += pane_fast(vt, p, (size_t)(end - p));
			if (p == end)
				break;
		}
		nl = memchr(p, '\n', (size_t)(end - p));
		n = nl != NULL ? (size_t)(nl + 1 - p) : (size_t)(end - p);
		pane_slow_line(vt, p, n);
		p += n;
	}
}

/*
 * A new height resets the scroll region, as xterm does. libvterm 0.1.4
 * cuts only the region's bottom down to the new height: a top below it
 * left a region of negative height, which the next scroll moved with a
 * negative size (the pane fuzzer's find). DECSTBM homes the cursor, so
 * it is put back at POS after (written to libvterm directly: nothing the
 * program wrote may be read together with it).
 */
static void
pane_reset_margins(struct pane *vt, VTermPos pos)
{
	char buf[64];
	int n;

	n = snprintf(buf, sizeof buf, "\033[r\033[%d;%dH", pos.row + 1,
	    pos.col + 1);
	vterm_input_write(vt->vt, buf, (size_t)n);
	vt->top = 0;
}

void
pane_resize(struct pane *vt, unsigned sx, unsigned sy)
{
	VTermPos pos;
	bool rows;

	sx = sx < 1 ? 1 : sx;
	sy = sy < 1 ? 1 : sy;
	if (sx == pane_grid_sx(vt->cur) && sy == pane_grid_sy(vt->cur))
		return;
	rows = sy != pane_grid_sy(vt->cur);
	vterm_set_size(vt->vt, (int)sy, (int)sx);
	vt->fast = false;
	/* First: a double-width line one column wide puts the cursor at -1. */
	if (vt->lineinfo)
		pane_lineinfo_sync(vt);
	vterm_state_get_cursorpos(vt->state, &pos);
	if (rows)
		pane_reset_margins(vt, pos);
	pane_set_cursor(vt, pos);
	vt->changed = true;
}

struct pane_grid *
pane_grid(struct pane *vt)
{
	return vt->cur;
}

bool
pane_altscreen(const struct pane *vt)
{
	return vt->cur == vt->alt;
}

void
pane_cursor(const struct pane *vt, unsigned *x, unsigned *y)
{
	*x = vt->cx;
	*y = vt->cy;
}

unsigned
pane_cursor_column(struct pane *vt)
{
	unsigned sx = pane_grid_sx(vt->cur);

	if (pane_grid_lsize(vt->cur, (int)vt->cy) == PANE_LSIZE_SINGLE)
		return vt->cx;
	return 2 * vt->cx < sx ? 2 * vt->cx : sx - 1;
}

/*
 * libvterm 0.1.4 ends an OSC whose ESC came at the end of one write and
 * whose backslash starts the next with a length of -1, which it cuts
 * down to what is left of its string buffer and copies from past the end
 * of the second write (the pane fuzzer found it; any title split across
 * two reads of the pty could do it). So libvterm never gets an ESC as the
 * last byte of a write: it is kept here and given with the byte after it.
 */
void
pane_input(struct pane *vt, const char *data, size_t len)
{
	char pair[2];

	if (len > 0 && vt->esc_kept) {
		pair[0] = 0x1b;
		pair[1] = data[0];
		vterm_input_write(vt->vt, pair, sizeof pair);
		vt->esc_kept = false;
		data++;
		len--;
	}
	if (len > 0 && data[len - 1] == 0x1b) {
		vt->esc_kept = true;
		len--;
	}
	if (len > 0)
		vterm_input_write(vt->vt, data, len);
}

bool
pane_cursor_visible(const struct pane *vt)
{
	return vt->cursor_visible;
}

enum pane_cursor_shape
pane_cursor_shape(const struct pane *vt)
{
	return vt->cursor_shape;
}

bool
pane_reverse(const struct pane *vt)
{
	return vt->reverse;
}

enum pane_mouse_mode
pane_mouse_mode(const struct pane *vt)
{
	return vt->mouse;
}

const char *
pane_title(const struct pane *vt)
{
	return vt->title;
}

unsigned
pane_bells(const struct pane *vt)
{
	return vt->bells;
}

uint64_t
pane_fast_lines(const struct pane *vt)
{
	return vt->fastlines;
}

bool
pane_take_changed(struct pane *vt)
{
	bool changed = vt->changed;

	vt->changed = false;
	return changed;
}

static VTermModifier
pane_mods(int mods)
{
	int m = VTERM_MOD_NONE;

	if (mods & PANE_MOD_SHIFT)
		m |= VTERM_MOD_SHIFT;
	if (mods & PANE_MOD_ALT)
		m |= VTERM_MOD_ALT;
	if (mods & PANE_MOD_CTRL)
		m |= VTERM_MOD_CTRL;
	return (VTermModifier)m;
}

/* The libvterm key for a special key, or VTERM_KEY_NONE. */
static VTermKey
pane_special(uint32_t code)
{
	static const struct {
		uint32_t code;
		VTermKey key;
	} map[] = {
		{ PANE_KEY_UP, VTERM_KEY_UP },
		{ PANE_KEY_DOWN, VTERM_KEY_DOWN },
		{ PANE_KEY_LEFT, VTERM_KEY_LEFT },
		{ PANE_KEY_RIGHT, VTERM_KEY_RIGHT },
		{ PANE_KEY_HOME, VTERM_KEY_HOME },
		{ PANE_KEY_END, VTERM_KEY_END },
		{ PANE_KEY_INSERT, VTERM_KEY_INS },
		{ PANE_KEY_DELETE, VTERM_KEY_DEL },
		{ PANE_KEY_PAGEUP, VTERM_KEY_PAGEUP },
		{ PANE_KEY_PAGEDOWN, VTERM_KEY_PAGEDOWN },
		{ '\r', VTERM_KEY_ENTER },
		{ '\t', VTERM_KEY_TAB },
		{ 0x7f, VTERM_KEY_BACKSPACE },
		{ 0x1b, VTERM_KEY_ESCAPE },
	};
	size_t i;

	if (code >= PANE_KEY_F1 && code <= PANE_KEY_F12)
		return (VTermKey)VTERM_KEY_FUNCTION(code - PANE_KEY_F1 + 1);
	for (i = 0; i < nitems(map); i++) {
		if (map[i].code == code)
			return map[i].key;
	}
	return VTERM_KEY_NONE;
}

void
pane_key(struct pane *vt, uint32_t code, int mods)
{
	VTermModifier mod = pane_mods(mods);
	VTermKey key;
	char c;

	if (code == PANE_KEY_BACKTAB) {
		vterm_keyboard_key(vt->vt, VTERM_KEY_TAB,
		    (VTermModifier)(mod | VTERM_MOD_SHIFT));
		return;
	}
	if (code == PANE_KEY_FOCUS_IN || code == PANE_KEY_FOCUS_OUT)
		return;
	key = pane_special(code);
	/* Plain control characters go as they came; libvterm would CSI-u them. */
	if (code < 0x20 && mods == 0 && code != '\r' &&
	    code != '\t' && code != 0x1b) {
		c = (char)code;
		pane_output(&c, 1, vt);
		return;
	}
	if (key != VTERM_KEY_NONE)
		vterm_keyboard_key(vt->vt, key, mod);
	else if (code < PANE_KEY_BASE)
		vterm_keyboard_unichar(vt->vt, code, mod);
}

void
pane_paste(struct pane *vt, const char *data, size_t len)
{
	vterm_keyboard_start_paste(vt->vt);
	pane_output(data, len, vt);
	vterm_keyboard_end_paste(vt->vt);
}

bool
pane_mouse(struct pane *vt, const struct pane_mouse_event *m)
{
	VTermModifier mod = pane_mods(m->mods);

	if (vt->mouse == PANE_MOUSE_OFF)
		return false;
	vterm_mouse_move(vt->vt, (int)m->y, (int)m->x, mod);
	switch (m->type) {
	case PANE_MOUSE_PRESS:
		vterm_mouse_button(vt->vt, m->button, true, mod);
		break;
	case PANE_MOUSE_RELEASE:
		vterm_mouse_button(vt->vt, m->button, false, mod);
		break;
	case PANE_MOUSE_WHEEL_UP:
		vterm_mouse_button(vt->vt, 4, true, mod);
		break;
	case PANE_MOUSE_WHEEL_DOWN:
		vterm_mouse_button(vt->vt, 5, true, mod);
		break;
	case PANE_MOUSE_DRAG:
		break;
	}
	return true;
}

void
pane_write(struct pane *vt, const char *data, size_t len)
{
	pane_output(data, len, vt);
}
