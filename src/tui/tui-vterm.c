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
	struct tui_cell c = vt->pen;
	size_t n;

	c.cp = info->chars[0] & 0x1fffff;
	c.wide = info->width == 2;
	if (info->chars[0] == 0 || info->chars[1] == 0) {
		if (tui_grid_set_narrow(vt->cur, (unsigned)pos.col,
		    (unsigned)pos.row, &c))
			return 1;
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

	tui_grid_scroll(vt->cur, (unsigned)r.start_col, (unsigned)r.start_row,
	    (unsigned)r.end_col, (unsigned)r.end_row, down, right, vt->pen.bg);
	return 1;
}

static int
tui_vterm_moverect(VTermRect dst, VTermRect src, void *arg)
{
	struct tui_vterm *vt = arg;

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
	/* Double-width and double-height lines are drawn as ordinary ones. */
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

/* Advances the scanner over byte C; true when faint changes after C. */
static bool
tui_vterm_scan(struct tui_vterm *vt, char c)
{
	switch (vt->scan) {
	case TUI_SCAN_GROUND:
		if (c == 0x1b)
			vt->scan = TUI_SCAN_ESC;
		return false;
	case TUI_SCAN_ESC:
		vt->sgrlen = 0;
		vt->scan = c == '[' ? TUI_SCAN_CSI : c == 0x1b ? TUI_SCAN_ESC :
		    TUI_SCAN_GROUND;
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

void
tui_vterm_feed(struct tui_vterm *vt, const char *data, size_t len)
{
	const char *p = data, *end = data + len, *from = data;

	while (p < end) {
		if (vt->scan == TUI_SCAN_GROUND) {
			if ((p = memchr(p, 0x1b, (size_t)(end - p))) == NULL)
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

void
tui_vterm_resize(struct tui_vterm *vt, unsigned sx, unsigned sy)
{
	VTermPos pos;

	sx = sx < 1 ? 1 : sx;
	sy = sy < 1 ? 1 : sy;
	if (sx == tui_grid_sx(vt->cur) && sy == tui_grid_sy(vt->cur))
		return;
	vterm_set_size(vt->vt, (int)sy, (int)sx);
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
