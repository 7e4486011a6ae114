/* A pane's terminal: libvterm's state layer parses the program's output and drives agentmux's own grids. */
#include <stdlib.h>
#include <string.h>

#include <vterm.h>

#include "core/core.h"
#include "tui.h"
#include "tui-int.h"

/*
 * libvterm 0.1.4 ignores SGR 2 (faint), which agents use a lot for hints.
 * A small scanner over the output finds SGR sequences and tracks faint
 * itself; the output is fed to libvterm in pieces split at those sequences,
 * so each glyph gets the faintness in force where it was written.
 */
enum tui_vterm_scan {
	TUI_SCAN_GROUND,
	TUI_SCAN_ESC,
	TUI_SCAN_CSI,
	TUI_SCAN_CSI_OTHER,   /* a CSI that is not plain SGR */
	TUI_SCAN_DESIGNATE,   /* ESC ( and friends: a character set follows */
};

#define TUI_VTERM_SGR_MAX 128

struct tui_vterm {
	VTerm *vt;
	VTermState *state;
	struct tui_grid *main;
	struct tui_grid *alt;
	struct tui_grid *cur;
	tui_vterm_write_cb write;
	void *arg;

	struct tui_cell pen;
	bool dim;
	enum tui_vterm_scan scan;
	char sgr[TUI_VTERM_SGR_MAX];
	size_t sgrlen;

	unsigned cx;
	unsigned cy;
	bool cursor_visible;
	enum tui_cursor_shape cursor_shape;
	bool reverse;
	enum tui_mouse_mode mouse;
	char *title;
	unsigned bells;
	bool changed;

	/* For the streaming fast path (see tui_vterm_feed). */
	bool fast;
	unsigned gascii;      /* bit N: G(N) is US-ASCII, as far as the scanner saw */
	unsigned gl;          /* the set shifted in (SO, SI, LS2, LS3) */
	unsigned gset;        /* the set ESC ( ) * + is designating */
	bool lineinfo;        /* a double-width line was ever set */
	uint64_t ops;         /* scrolls, moves, erases, mode switches */
	uint64_t fullscrolls; /* of those, one-line scrolls of the whole screen */
	uint64_t fastlines;   /* lines done by the fast path */
};

static uint32_t
tui_vterm_color(const VTermColor *c, bool fg)
{
	if (fg && VTERM_COLOR_IS_DEFAULT_FG(c))
		return TUI_COLOR_DEFAULT;
	if (!fg && VTERM_COLOR_IS_DEFAULT_BG(c))
		return TUI_COLOR_DEFAULT;
	if (VTERM_COLOR_IS_INDEXED(c))
		return TUI_COLOR_INDEX(c->indexed.idx);
	return TUI_COLOR_MAKE_RGB(c->rgb.red, c->rgb.green, c->rgb.blue);
}

static int
tui_vterm_putglyph(VTermGlyphInfo *info, VTermPos pos, void *arg)
{
	struct tui_vterm *vt = arg;
	struct tui_cell c;
	size_t n;

	if (info->width == 1 && info->chars[1] == 0 &&
	    tui_grid_set_narrow(vt->cur, (unsigned)pos.col, (unsigned)pos.row,
	    &vt->pen, info->chars[0] & 0x1fffff))
		return 1;
	c = vt->pen;
	c.cp = info->chars[0] & 0x1fffff;
	c.wide = info->width == 2;
	if (info->chars[0] == 0 || info->chars[1] == 0) {
		tui_grid_set(vt->cur, (unsigned)pos.col, (unsigned)pos.row, &c,
		    NULL, 0);
		return 1;
	}
	for (n = 1; n < TUI_CELL_MAXCHARS && info->chars[n] != 0; n++)
		;
	tui_grid_set(vt->cur, (unsigned)pos.col, (unsigned)pos.row, &c,
	    info->chars, n);
	return 1;
}

static int
tui_vterm_movecursor(VTermPos pos, VTermPos oldpos, int visible, void *arg)
{
	struct tui_vterm *vt = arg;

	vt->cx = (unsigned)pos.col;
	vt->cy = (unsigned)pos.row;
	vt->changed = true;
	return 1;
}

static int
tui_vterm_scrollrect(VTermRect r, int down, int right, void *arg)
{
	struct tui_vterm *vt = arg;

	vt->ops++;
	if (down == 1 && right == 0 && r.start_row == 0 && r.start_col == 0 &&
	    (unsigned)r.end_row == tui_grid_sy(vt->cur) &&
	    (unsigned)r.end_col == tui_grid_sx(vt->cur))
		vt->fullscrolls++;
	tui_grid_scroll(vt->cur, (unsigned)r.start_col, (unsigned)r.start_row,
	    (unsigned)r.end_col, (unsigned)r.end_row, down, right, vt->pen.bg);
	return 1;
}

static int
tui_vterm_moverect(VTermRect dst, VTermRect src, void *arg)
{
	struct tui_vterm *vt = arg;

	vt->ops++;
	tui_grid_move(vt->cur, (unsigned)dst.start_col, (unsigned)dst.start_row,
	    (unsigned)src.start_col, (unsigned)src.start_row,
	    (unsigned)(src.end_col - src.start_col),
	    (unsigned)(src.end_row - src.start_row));
	return 1;
}

static int
tui_vterm_erase(VTermRect r, int selective, void *arg)
{
	struct tui_vterm *vt = arg;

	vt->ops++;
	tui_grid_erase(vt->cur, (unsigned)r.start_col, (unsigned)r.start_row,
	    (unsigned)r.end_col, (unsigned)r.end_row, vt->pen.bg);
	return 1;
}

static int
tui_vterm_initpen(void *arg)
{
	struct tui_vterm *vt = arg;

	memset(&vt->pen, 0, sizeof vt->pen);
	vt->dim = false;
	return 1;
}

static void
tui_vterm_pen_flag(struct tui_vterm *vt, unsigned flag, bool on)
{
	if (on)
		vt->pen.attr |= flag;
	else
		vt->pen.attr &= ~flag;
}

static int
tui_vterm_setpenattr(VTermAttr attr, VTermValue *val, void *arg)
{
	struct tui_vterm *vt = arg;

	switch (attr) {
	case VTERM_ATTR_BOLD:
		tui_vterm_pen_flag(vt, TUI_ATTR_BOLD, val->boolean);
		break;
	case VTERM_ATTR_UNDERLINE:
		tui_vterm_pen_flag(vt, TUI_ATTR_UNDERLINE, val->number != 0);
		break;
	case VTERM_ATTR_ITALIC:
		tui_vterm_pen_flag(vt, TUI_ATTR_ITALIC, val->boolean);
		break;
	case VTERM_ATTR_BLINK:
		tui_vterm_pen_flag(vt, TUI_ATTR_BLINK, val->boolean);
		break;
	case VTERM_ATTR_REVERSE:
		tui_vterm_pen_flag(vt, TUI_ATTR_REVERSE, val->boolean);
		break;
	case VTERM_ATTR_STRIKE:
		tui_vterm_pen_flag(vt, TUI_ATTR_STRIKE, val->boolean);
		break;
	case VTERM_ATTR_FOREGROUND:
		vt->pen.fg = tui_vterm_color(&val->color, true);
		break;
	case VTERM_ATTR_BACKGROUND:
		vt->pen.bg = tui_vterm_color(&val->color, false);
		break;
	case VTERM_ATTR_FONT:
	case VTERM_N_ATTRS:
		break;
	}
	return 1;
}

static void
tui_vterm_set_title(struct tui_vterm *vt, const char *s)
{
	free(vt->title);
	vt->title = xstrdup(s != NULL ? s : "");
}

/* Switches between the normal screen and the alternate one. */
static void
tui_vterm_set_alt(struct tui_vterm *vt, bool on)
{
	vt->cur = on ? vt->alt : vt->main;
	tui_grid_set_dirty(vt->cur);
}

static int
tui_vterm_settermprop(VTermProp prop, VTermValue *val, void *arg)
{
	struct tui_vterm *vt = arg;

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
		tui_vterm_set_alt(vt, val->boolean);
		return 1;
	case VTERM_PROP_TITLE:
		tui_vterm_set_title(vt, val->string);
		return 1;
	case VTERM_PROP_REVERSE:
		vt->reverse = val->boolean;
		tui_grid_set_dirty(vt->cur);
		return 1;
	case VTERM_PROP_CURSORSHAPE:
		vt->cursor_shape = val->number == VTERM_PROP_CURSORSHAPE_UNDERLINE ?
		    TUI_CURSOR_UNDERLINE : val->number ==
		    VTERM_PROP_CURSORSHAPE_BAR_LEFT ? TUI_CURSOR_BAR :
		    TUI_CURSOR_BLOCK;
		return 1;
	case VTERM_PROP_MOUSE:
		vt->mouse = val->number == VTERM_PROP_MOUSE_CLICK ?
		    TUI_MOUSE_CLICKS : val->number == VTERM_PROP_MOUSE_DRAG ?
		    TUI_MOUSE_DRAGS : val->number == VTERM_PROP_MOUSE_MOVE ?
		    TUI_MOUSE_MOTION : TUI_MOUSE_OFF;
		return 1;
	case VTERM_N_PROPS:
		break;
	}
	return 0;
}

static int
tui_vterm_bell(void *arg)
{
	struct tui_vterm *vt = arg;

	vt->bells++;
	vt->changed = true;
	return 1;
}

static int
tui_vterm_resize_cb(int rows, int cols, VTermPos *delta, void *arg)
{
	struct tui_vterm *vt = arg;
	struct tui_grid *other = vt->cur == vt->main ? vt->alt : vt->main;

	vt->ops++;
	delta->row = tui_grid_resize(vt->cur, (unsigned)cols, (unsigned)rows,
	    vt->cy);
	/* Nobody knows where the other screen's cursor will be: keep its bottom. */
	tui_grid_resize(other, (unsigned)cols, (unsigned)rows,
	    tui_grid_sy(other) - 1);
	return 1;
}

static int
tui_vterm_setlineinfo(int row, const VTermLineInfo *newinfo,
    const VTermLineInfo *oldinfo, void *arg)
{
	struct tui_vterm *vt = arg;

	/* Double-width and double-height lines are drawn as ordinary ones. */
	if (newinfo->doublewidth || newinfo->doubleheight)
		vt->lineinfo = true;
	return 1;
}

static const VTermStateCallbacks tui_vterm_callbacks = {
	.putglyph = tui_vterm_putglyph,
	.movecursor = tui_vterm_movecursor,
	.scrollrect = tui_vterm_scrollrect,
	.moverect = tui_vterm_moverect,
	.erase = tui_vterm_erase,
	.initpen = tui_vterm_initpen,
	.setpenattr = tui_vterm_setpenattr,
	.settermprop = tui_vterm_settermprop,
	.bell = tui_vterm_bell,
	.resize = tui_vterm_resize_cb,
	.setlineinfo = tui_vterm_setlineinfo,
};

static void
tui_vterm_output(const char *s, size_t len, void *arg)
{
	struct tui_vterm *vt = arg;

	if (vt->write != NULL)
		vt->write(vt->arg, s, len);
}

struct tui_vterm *
tui_vterm_create(unsigned sx, unsigned sy, unsigned hlimit,
    tui_vterm_write_cb write, void *arg)
{
	struct tui_vterm *vt = xcalloc(1, sizeof *vt);

	sx = sx < 1 ? 1 : sx;
	sy = sy < 1 ? 1 : sy;
	vt->write = write;
	vt->arg = arg;
	vt->title = xstrdup("");
	vt->cursor_visible = true;
	vt->gascii = 0xf;
	vt->main = tui_grid_create(sx, sy, hlimit);
	vt->alt = tui_grid_create(sx, sy, 0);
	vt->cur = vt->main;
	if ((vt->vt = vterm_new((int)sy, (int)sx)) == NULL)
		fatalx("libvterm could not create a %ux%u terminal", sx, sy);
	vterm_set_utf8(vt->vt, 1);
	vterm_output_set_callback(vt->vt, tui_vterm_output, vt);
	vt->state = vterm_obtain_state(vt->vt);
	vterm_state_set_callbacks(vt->state, &tui_vterm_callbacks, vt);
	vterm_state_set_bold_highbright(vt->state, 0);
	vterm_state_reset(vt->state, 1);
	return vt;
}

void
tui_vterm_free(struct tui_vterm *vt)
{
	if (vt == NULL)
		return;
	vterm_free(vt->vt);
	tui_grid_free(vt->main);
	tui_grid_free(vt->alt);
	free(vt->title);
	free(vt);
}

/* Applies the SGR parameters collected in vt->sgr to the faint flag. */
static bool
tui_vterm_sgr_dim(const struct tui_vterm *vt)
{
	char params[TUI_VTERM_SGR_MAX + 1], *p, *next;
	bool dim = vt->dim, colour_type = false;
	long skip = 0, v;

	memcpy(params, vt->sgr, vt->sgrlen);
	params[vt->sgrlen] = '\0';
	for (p = params; p != NULL; p = next) {
		if ((next = strchr(p, ';')) != NULL)
			*next++ = '\0';
		v = *p == '\0' ? 0 : strtol(p, NULL, 10);
		if (colour_type) {
			/* 38/48/58 then 5;N or 2;R;G;B: not attributes. */
			colour_type = false;
			skip = v == 5 ? 1 : v == 2 ? 3 : 0;
			continue;
		}
		if (skip > 0) {
			skip--;
			continue;
		}
		if (strchr(p, ':') != NULL)
			continue;
		if (v == 0 || v == 22)
			dim = false;
		else if (v == 2)
			dim = true;
		else if (v == 38 || v == 48 || v == 58)
			colour_type = true;
	}
	return dim;
}

/* Called with the final byte of a CSI: a completed SGR that changes faint? */
static bool
tui_vterm_scan_final(struct tui_vterm *vt, char c)
{
	bool dim;

	if (c != 'm' || vt->scan != TUI_SCAN_CSI)
		return false;
	dim = tui_vterm_sgr_dim(vt);
	if (dim == vt->dim)
		return false;
	vt->dim = dim;
	return true;
}

/*
 * The byte after ESC. Besides CSI, the scanner follows the character set
 * designations and shifts, so that the fast path knows when the set in use
 * is not plain ASCII (line drawing turns "q" into a line).
 */
static void
tui_vterm_scan_escape(struct tui_vterm *vt, char c)
{
	vt->sgrlen = 0;
	vt->scan = TUI_SCAN_GROUND;
	switch (c) {
	case '[':
		vt->scan = TUI_SCAN_CSI;
		break;
	case 0x1b:
		vt->scan = TUI_SCAN_ESC;
		break;
	case '(':
	case ')':
	case '*':
	case '+':
		vt->gset = (unsigned)(c - '(');
		vt->scan = TUI_SCAN_DESIGNATE;
		break;
	case 'c':
		vt->gascii = 0xf;
		vt->gl = 0;
		break;
	case 'n':
	case 'o':
		vt->gl = c == 'n' ? 2 : 3;
		break;
	}
}

/* Advances the scanner over byte C; true when faint changes after C. */
static bool
tui_vterm_scan(struct tui_vterm *vt, char c)
{
	switch (vt->scan) {
	case TUI_SCAN_GROUND:
		if (c == 0x1b)
			vt->scan = TUI_SCAN_ESC;
		else if (c == 0x0e || c == 0x0f)
			vt->gl = c == 0x0e ? 1 : 0;
		return false;
	case TUI_SCAN_ESC:
		tui_vterm_scan_escape(vt, c);
		return false;
	case TUI_SCAN_DESIGNATE:
		if (c == 'B')
			vt->gascii |= 1u << vt->gset;
		else
			vt->gascii &= ~(1u << vt->gset);
		vt->scan = TUI_SCAN_GROUND;
		return false;
	case TUI_SCAN_CSI:
	case TUI_SCAN_CSI_OTHER:
		break;
	}
	if ((c >= '0' && c <= '9') || c == ';' || c == ':') {
		if (vt->sgrlen < TUI_VTERM_SGR_MAX)
			vt->sgr[vt->sgrlen++] = c;
		else
			vt->scan = TUI_SCAN_CSI_OTHER;
		return false;
	}
	if ((c >= 0x3c && c <= 0x3f) || (c >= 0x20 && c <= 0x2f)) {
		vt->scan = TUI_SCAN_CSI_OTHER;
		return false;
	}
	if (c >= 0x40 && c <= 0x7e) {
		bool changed = tui_vterm_scan_final(vt, c);

		vt->scan = TUI_SCAN_GROUND;
		return changed;
	}
	if (c == 0x1b)
		vt->scan = TUI_SCAN_ESC;
	else if ((unsigned char)c >= 0x20)
		vt->scan = TUI_SCAN_GROUND;
	return false;
}

/* Feeds bytes to libvterm, split where faint changes (see tui_vterm_scan). */
static void
tui_vterm_parse(struct tui_vterm *vt, const char *data, size_t len)
{
	const char *p = data, *end = data + len, *from = data;

	while (p < end) {
		if (vt->scan == TUI_SCAN_GROUND) {
			while (p < end && *p != 0x1b && *p != 0x0e && *p != 0x0f)
				p++;
			if (p == end)
				break;
		}
		if (!tui_vterm_scan(vt, *p++))
			continue;
		vterm_input_write(vt->vt, from, (size_t)(p - from));
		from = p;
		tui_vterm_pen_flag(vt, TUI_ATTR_DIM, vt->dim);
	}
	if (from < end)
		vterm_input_write(vt->vt, from, (size_t)(end - from));
}

/* True if LINE (LEN bytes, then CR LF) is printable ASCII shorter than the screen. */
static bool
tui_vterm_plain(const struct tui_vterm *vt, const char *line, size_t len)
{
	size_t i;

	if (len >= tui_grid_sx(vt->cur))
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
tui_vterm_slow_line(struct tui_vterm *vt, const char *p, size_t n)
{
	struct tui_grid *gd = vt->cur;
	unsigned sy = tui_grid_sy(gd);
	uint64_t ops = vt->ops, fullscrolls = vt->fullscrolls;
	bool plain;

	plain = n >= 2 && p[n - 2] == '\r' && p[n - 1] == '\n' &&
	    tui_vterm_plain(vt, p, n - 2) && vt->scan == TUI_SCAN_GROUND &&
	    vt->cx == 0 && vt->cy == sy - 1 && sy >= 2 && !vt->lineinfo &&
	    ((vt->gascii >> vt->gl) & 1);
	tui_vterm_parse(vt, p, n);
	vt->fast = plain && vt->cur == gd && vt->ops == ops + 1 &&
	    vt->fullscrolls == fullscrolls + 1 && vt->cx == 0 &&
	    vt->cy == sy - 1 && vt->scan == TUI_SCAN_GROUND &&
	    tui_grid_row_is(gd, sy - 2, p, n - 2, &vt->pen);
}

/*
 * The fast path: plain lines streaming at the bottom of the screen are
 * written and scrolled here, leaving libvterm's state exactly as it would
 * have left it (cursor at the bottom-left, nothing pending). Returns the
 * bytes used; stops at the first line that is not plain.
 */
static size_t
tui_vterm_fast(struct tui_vterm *vt, const char *data, size_t len)
{
	struct tui_grid *gd = vt->cur;
	const char *p = data, *end = data + len, *cr;
	unsigned sx = tui_grid_sx(gd), sy = tui_grid_sy(gd);
	size_t max;

	while (p < end) {
		max = (size_t)(end - p) < sx ? (size_t)(end - p) : sx;
		if ((cr = memchr(p, '\r', max)) == NULL || cr + 1 >= end ||
		    cr[1] != '\n' || !tui_vterm_plain(vt, p, (size_t)(cr - p)))
			break;
		tui_grid_put_ascii(gd, sy - 1, p, (size_t)(cr - p), &vt->pen);
		tui_grid_scroll(gd, 0, 0, sx, sy, 1, 0, vt->pen.bg);
		vt->fastlines++;
		p = cr + 2;
	}
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
tui_vterm_feed(struct tui_vterm *vt, const char *data, size_t len)
{
	const char *p = data, *end = data + len, *nl;
	size_t n;

	while (p < end) {
		if (vt->fast) {
			p += tui_vterm_fast(vt, p, (size_t)(end - p));
			if (p == end)
				break;
		}
		nl = memchr(p, '\n', (size_t)(end - p));
		n = nl != NULL ? (size_t)(nl + 1 - p) : (size_t)(end - p);
		tui_vterm_slow_line(vt, p, n);
		p += n;
	}
}

void
tui_vterm_resize(struct tui_vterm *vt, unsigned sx, unsigned sy)
{
	VTermPos pos;

	sx = sx < 1 ? 1 : sx;
	sy = sy < 1 ? 1 : sy;
	if (sx == tui_grid_sx(vt->cur) && sy == tui_grid_sy(vt->cur))
		return;
	vterm_set_size(vt->vt, (int)sy, (int)sx);
	vt->fast = false;
	vterm_state_get_cursorpos(vt->state, &pos);
	vt->cx = (unsigned)pos.col;
	vt->cy = (unsigned)pos.row;
	vt->changed = true;
}

struct tui_grid *
tui_vterm_grid(struct tui_vterm *vt)
{
	return vt->cur;
}

bool
tui_vterm_altscreen(const struct tui_vterm *vt)
{
	return vt->cur == vt->alt;
}

void
tui_vterm_cursor(const struct tui_vterm *vt, unsigned *x, unsigned *y)
{
	*x = vt->cx;
	*y = vt->cy;
}

bool
tui_vterm_cursor_visible(const struct tui_vterm *vt)
{
	return vt->cursor_visible;
}

enum tui_cursor_shape
tui_vterm_cursor_shape(const struct tui_vterm *vt)
{
	return vt->cursor_shape;
}

bool
tui_vterm_reverse(const struct tui_vterm *vt)
{
	return vt->reverse;
}

enum tui_mouse_mode
tui_vterm_mouse_mode(const struct tui_vterm *vt)
{
	return vt->mouse;
}

const char *
tui_vterm_title(const struct tui_vterm *vt)
{
	return vt->title;
}

unsigned
tui_vterm_bells(const struct tui_vterm *vt)
{
	return vt->bells;
}

uint64_t
tui_vterm_fast_lines(const struct tui_vterm *vt)
{
	return vt->fastlines;
}

bool
tui_vterm_take_changed(struct tui_vterm *vt)
{
	bool changed = vt->changed;

	vt->changed = false;
	return changed;
}

static VTermModifier
tui_vterm_mods(int mods)
{
	int m = VTERM_MOD_NONE;

	if (mods & TUI_MOD_SHIFT)
		m |= VTERM_MOD_SHIFT;
	if (mods & TUI_MOD_ALT)
		m |= VTERM_MOD_ALT;
	if (mods & TUI_MOD_CTRL)
		m |= VTERM_MOD_CTRL;
	return (VTermModifier)m;
}

/* The libvterm key for a special key, or VTERM_KEY_NONE. */
static VTermKey
tui_vterm_special(uint32_t code)
{
	static const struct {
		uint32_t code;
		VTermKey key;
	} map[] = {
		{ TUI_KEY_UP, VTERM_KEY_UP },
		{ TUI_KEY_DOWN, VTERM_KEY_DOWN },
		{ TUI_KEY_LEFT, VTERM_KEY_LEFT },
		{ TUI_KEY_RIGHT, VTERM_KEY_RIGHT },
		{ TUI_KEY_HOME, VTERM_KEY_HOME },
		{ TUI_KEY_END, VTERM_KEY_END },
		{ TUI_KEY_INSERT, VTERM_KEY_INS },
		{ TUI_KEY_DELETE, VTERM_KEY_DEL },
		{ TUI_KEY_PAGEUP, VTERM_KEY_PAGEUP },
		{ TUI_KEY_PAGEDOWN, VTERM_KEY_PAGEDOWN },
		{ '\r', VTERM_KEY_ENTER },
		{ '\t', VTERM_KEY_TAB },
		{ 0x7f, VTERM_KEY_BACKSPACE },
		{ 0x1b, VTERM_KEY_ESCAPE },
	};
	size_t i;

	if (code >= TUI_KEY_F1 && code <= TUI_KEY_F12)
		return (VTermKey)VTERM_KEY_FUNCTION(code - TUI_KEY_F1 + 1);
	for (i = 0; i < nitems(map); i++) {
		if (map[i].code == code)
			return map[i].key;
	}
	return VTERM_KEY_NONE;
}

void
tui_vterm_key(struct tui_vterm *vt, const struct tui_key *k)
{
	VTermModifier mod = tui_vterm_mods(k->mods);
	VTermKey key;
	char c;

	if (k->code == TUI_KEY_BACKTAB) {
		vterm_keyboard_key(vt->vt, VTERM_KEY_TAB,
		    (VTermModifier)(mod | VTERM_MOD_SHIFT));
		return;
	}
	if (k->code == TUI_KEY_FOCUS_IN || k->code == TUI_KEY_FOCUS_OUT)
		return;
	key = tui_vterm_special(k->code);
	/* Plain control characters go as they came; libvterm would CSI-u them. */
	if (k->code < 0x20 && k->mods == 0 && k->code != '\r' &&
	    k->code != '\t' && k->code != 0x1b) {
		c = (char)k->code;
		tui_vterm_output(&c, 1, vt);
		return;
	}
	if (key != VTERM_KEY_NONE)
		vterm_keyboard_key(vt->vt, key, mod);
	else if (k->code < TUI_KEY_BASE)
		vterm_keyboard_unichar(vt->vt, k->code, mod);
}

void
tui_vterm_paste(struct tui_vterm *vt, const char *data, size_t len)
{
	vterm_keyboard_start_paste(vt->vt);
	tui_vterm_output(data, len, vt);
	vterm_keyboard_end_paste(vt->vt);
}

bool
tui_vterm_mouse(struct tui_vterm *vt, const struct tui_mouse *m)
{
	VTermModifier mod = tui_vterm_mods(m->mods);

	if (vt->mouse == TUI_MOUSE_OFF)
		return false;
	vterm_mouse_move(vt->vt, (int)m->y, (int)m->x, mod);
	switch (m->type) {
	case TUI_MOUSE_PRESS:
		vterm_mouse_button(vt->vt, m->button, true, mod);
		break;
	case TUI_MOUSE_RELEASE:
		vterm_mouse_button(vt->vt, m->button, false, mod);
		break;
	case TUI_MOUSE_WHEEL_UP:
		vterm_mouse_button(vt->vt, 4, true, mod);
		break;
	case TUI_MOUSE_WHEEL_DOWN:
		vterm_mouse_button(vt->vt, 5, true, mod);
		break;
	case TUI_MOUSE_DRAG:
		break;
	}
	return true;
}

void
tui_vterm_write(struct tui_vterm *vt, const char *data, size_t len)
{
	tui_vterm_output(data, len, vt);
}
