/* A terminal's state: libvterm's state layer feeding a grid of cells with scrollback, owned by a session. */
#ifndef AGENTMUX_PANE_H
#define AGENTMUX_PANE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct buf;

/* ---- the cell grid (pane-grid.c) ---- */

/*
 * A pane's cells: a ring of rows holding the scrollback above the visible
 * screen, so a full-screen scroll moves the ring's window instead of any
 * cells. Rows y = 0 .. sy-1 are the screen, y = -hsize .. -1 the history.
 */

#define PANE_ATTR_BOLD 0x01
#define PANE_ATTR_DIM 0x02
#define PANE_ATTR_ITALIC 0x04
#define PANE_ATTR_UNDERLINE 0x08
#define PANE_ATTR_BLINK 0x10
#define PANE_ATTR_REVERSE 0x20
#define PANE_ATTR_STRIKE 0x40
#define PANE_ATTR_CONCEAL 0x80   /* SGR 8: drawn as blanks */

/* Colours: the default, one of 256 indexed, or 24-bit RGB. */
#define PANE_COLOR_DEFAULT 0u
#define PANE_COLOR_INDEXED 0x01000000u
#define PANE_COLOR_RGB 0x02000000u
#define PANE_COLOR_TYPE(c) ((c) & 0xff000000u)
#define PANE_COLOR_INDEX(i) (PANE_COLOR_INDEXED | ((uint32_t)(i) & 0xff))
#define PANE_COLOR_MAKE_RGB(r, g, b) (PANE_COLOR_RGB | ((uint32_t)(r) << 16) | \
    ((uint32_t)(g) << 8) | (uint32_t)(b))

/* Code points one cell can hold: a base character and its combining marks. */
#define PANE_CELL_MAXCHARS 6

struct pane_cell {
	uint32_t cp : 21;     /* code point (0 is a blank), or an index with ext */
	uint32_t wide : 1;    /* the left half of a two-column character */
	uint32_t pad : 1;     /* the right half of one: nothing of its own */
	uint32_t ext : 1;     /* cp indexes the row's combining sequences */
	uint32_t attr : 8;    /* PANE_ATTR_* */
	uint32_t fg;          /* PANE_COLOR_* */
	uint32_t bg;
};

struct pane_grid;

/** A grid of SX x SY cells keeping up to HLIMIT lines of history; caller frees. */
struct pane_grid *pane_grid_create(unsigned sx, unsigned sy, unsigned hlimit);
void pane_grid_free(struct pane_grid *);
unsigned pane_grid_sx(const struct pane_grid *);
unsigned pane_grid_sy(const struct pane_grid *);
/** Lines of history currently kept above the screen. */
unsigned pane_grid_hsize(const struct pane_grid *);
unsigned pane_grid_hlimit(const struct pane_grid *);
/** Cell X of row Y (-hsize <= Y < sy); a blank beyond what was written. Borrowed. */
const struct pane_cell *pane_grid_cell(const struct pane_grid *, unsigned x, int y);
/**
 * Code points of cell C of row Y into CHARS (PANE_CELL_MAXCHARS); returns
 * how many (0 for a blank or the right half of a wide character).
 */
size_t pane_grid_chars(const struct pane_grid *, const struct pane_cell *c, int y,
    uint32_t *chars);
/**
 * Writes C at X, Y of the screen; CHARS (NULL, or NCHARS code points of a
 * combining sequence) override C->cp. A wide C also covers X+1.
 */
void pane_grid_set(struct pane_grid *, unsigned x, unsigned y,
    const struct pane_cell *c, const uint32_t *chars, size_t nchars);
/** Blanks the screen rectangle [X0,X1) x [Y0,Y1) with background BG. */
void pane_grid_erase(struct pane_grid *, unsigned x0, unsigned y0, unsigned x1,
    unsigned y1, uint32_t bg);
/**
 * Scrolls the rectangle [X0,X1) x [Y0,Y1) up by DOWN rows (down if
 * negative) and left by RIGHT columns (right if negative), blanking what is
 * uncovered with BG. A full-width scroll of the whole screen moves the top
 * rows into the history (when it keeps any) without copying cells.
 */
void pane_grid_scroll(struct pane_grid *, unsigned x0, unsigned y0, unsigned x1,
    unsigned y1, int down, int right, uint32_t bg);
/** Copies the screen rectangle of SRC at (SX, SY) to (DX, DY), NX x NY cells. */
void pane_grid_move(struct pane_grid *, unsigned dx, unsigned dy, unsigned sx,
    unsigned sy, unsigned nx, unsigned ny);
/**
 * Resizes to SX x SY. Rows lost at the top go to the history, rows gained
 * come back from it; CURSOR_Y is kept on the screen. Returns how far the
 * cursor's row moved (negative: up).
 */
int pane_grid_resize(struct pane_grid *, unsigned sx, unsigned sy,
    unsigned cursor_y);
/**
 * Resizes to SX x SY rewrapping the lines, as tmux does: rows that wrapped
 * automatically are joined and split again at SX, lines ended by a newline
 * stay ended, the history too. *CX, *CY (the cursor, on the screen) follow
 * the character they were on. The alternate screen is resized with
 * pane_grid_resize instead, as in xterm.
 */
void pane_grid_reflow(struct pane_grid *, unsigned sx, unsigned sy,
    unsigned *cx, unsigned *cy);
/** The most cells a reflow joins into one line; a longer line is rewrapped in parts. */
#define PANE_GRID_REFLOW_MAX (1u << 16)
/** Marks row Y (history rows negative) as going on in the next row, or not. */
void pane_grid_set_wrapped(struct pane_grid *, int y, bool wrapped);
bool pane_grid_wrapped(const struct pane_grid *, int y);
/** Writes LEN printable ASCII bytes at the start of screen row Y in PEN's attributes. */
void pane_grid_put_ascii(struct pane_grid *, unsigned y, const char *s,
    size_t len, const struct pane_cell *pen);
/**
 * True if screen row Y holds exactly the LEN ASCII bytes S in PEN's
 * attributes, then blanks in PEN's background.
 */
bool pane_grid_row_is(const struct pane_grid *, unsigned y, const char *s,
    size_t len, const struct pane_cell *pen);
/** Drops the history. */
void pane_grid_clear_history(struct pane_grid *);

/* A row's line size (DECDWL, DECDHL): its cells are drawn two columns wide. */
enum pane_lsize {
	PANE_LSIZE_SINGLE,
	PANE_LSIZE_WIDE,        /* DECDWL */
	PANE_LSIZE_TOP,         /* DECDHL, top half */
	PANE_LSIZE_BOTTOM,      /* DECDHL, bottom half */
};

/** Sets the line size of screen row Y (a new row is single). */
void pane_grid_set_lsize(struct pane_grid *, unsigned y, enum pane_lsize);
enum pane_lsize pane_grid_lsize(const struct pane_grid *, int y);
/** True if anything on the screen changed since pane_grid_clean. */
bool pane_grid_is_dirty(const struct pane_grid *);
/** The changed columns [*X0, *X1) of screen row Y; false if none. */
bool pane_grid_row_dirty(const struct pane_grid *, unsigned y, unsigned *x0,
    unsigned *x1);
void pane_grid_set_dirty(struct pane_grid *);
void pane_grid_clean(struct pane_grid *);
/** Appends row Y as UTF-8 (trailing blanks dropped) to B. */
void pane_grid_row_text(const struct pane_grid *, int y, struct buf *b);
/** Appends code point CP as UTF-8 to B. */
void pane_grid_add_utf8(struct buf *b, uint32_t cp);
/** Lines ever moved into the history (a counter; wraps never in practice). */
uint64_t pane_grid_scrolled(const struct pane_grid *);

/* ---- a pane's terminal (pane-vterm.c) ---- */

/*
 * libvterm's state layer parses what the program writes and keeps the
 * terminal's state; the cells are ours, in a pane_grid (one for the normal
 * screen with history, one for the alternate screen). A session owns the
 * pane of its pty and feeds it; front ends read it to draw (cells, dirty
 * rows, scroll counter, cursor, modes, title, bells) and send keys through
 * it. What a viewer does (scrolling back, copy mode, focus) is not here.
 */

/* The cursor's shape, numbered as DECSCUSR numbers them. */
enum pane_cursor_shape {
	PANE_CURSOR_DEFAULT,        /* whatever the user's terminal does */
	PANE_CURSOR_BLOCK_BLINK,
	PANE_CURSOR_BLOCK,
	PANE_CURSOR_UNDERLINE_BLINK,
	PANE_CURSOR_UNDERLINE,
	PANE_CURSOR_BAR_BLINK,
	PANE_CURSOR_BAR,
};

enum pane_mouse_mode {
	PANE_MOUSE_OFF,
	PANE_MOUSE_CLICKS,
	PANE_MOUSE_DRAGS,
	PANE_MOUSE_MOTION,
};

/* Keys for pane_key: a Unicode code point (control characters as themselves), or one of these. */
enum {
	PANE_KEY_BASE = 0x110000,
	PANE_KEY_UP = PANE_KEY_BASE,
	PANE_KEY_DOWN,
	PANE_KEY_LEFT,
	PANE_KEY_RIGHT,
	PANE_KEY_HOME,
	PANE_KEY_END,
	PANE_KEY_INSERT,
	PANE_KEY_DELETE,
	PANE_KEY_PAGEUP,
	PANE_KEY_PAGEDOWN,
	PANE_KEY_BACKTAB,
	PANE_KEY_F1,           /* PANE_KEY_F1 + N - 1 is function key N */
	PANE_KEY_F12 = PANE_KEY_F1 + 11,
	PANE_KEY_FOCUS_IN,
	PANE_KEY_FOCUS_OUT,
};

#define PANE_MOD_SHIFT 0x1
#define PANE_MOD_ALT 0x2
#define PANE_MOD_CTRL 0x4

enum pane_mouse_type {
	PANE_MOUSE_PRESS,
	PANE_MOUSE_RELEASE,
	PANE_MOUSE_DRAG,
	PANE_MOUSE_WHEEL_UP,
	PANE_MOUSE_WHEEL_DOWN,
};

/* A mouse event for the program, at a cell of the pane. */
struct pane_mouse_event {
	enum pane_mouse_type type;
	int button;           /* 1-3 for press, release and drag */
	unsigned x;
	unsigned y;
	int mods;             /* PANE_MOD_* */
};

/** Where replies (and encoded keys) for the program go. */
typedef void (*pane_write_cb)(void *arg, const char *data, size_t len);

struct pane;

/**
 * A SX x SY terminal with HLIMIT lines of history; WRITE (may be NULL)
 * gets its replies and encoded keys. The caller owns its one reference.
 */
struct pane *pane_create(unsigned sx, unsigned sy, unsigned hlimit,
    pane_write_cb write, void *arg);
/** Another reference, for the caller (dropped with pane_free); returns its argument. */
struct pane *pane_ref(struct pane *);
/** Drops a reference; the last one frees it. NULL is a no-op. */
void pane_free(struct pane *);
/** Sends replies and encoded keys to WRITE from now on (NULL: nowhere). */
void pane_set_write(struct pane *, pane_write_cb write, void *arg);
/** Feeds the program's output. */
void pane_feed(struct pane *, const char *data, size_t len);
void pane_resize(struct pane *, unsigned sx, unsigned sy);
/** The screen being shown (alternate or normal); borrowed. */
struct pane_grid *pane_grid(struct pane *);
bool pane_altscreen(const struct pane *);
void pane_cursor(const struct pane *, unsigned *x, unsigned *y);
/** The screen column the cursor shows in: twice its cell on a double-width line. */
unsigned pane_cursor_column(struct pane *);
bool pane_cursor_visible(const struct pane *);
enum pane_cursor_shape pane_cursor_shape(const struct pane *);
/** Reverse video of the whole screen (DECSCNM). */
bool pane_reverse(const struct pane *);
enum pane_mouse_mode pane_mouse_mode(const struct pane *);
/** The window title the program set; "" if none. Borrowed. */
const char *pane_title(const struct pane *);
/** Bells rung so far. */
unsigned pane_bells(const struct pane *);
/** Lines that took the streaming fast path (for tests and benchmarks). */
uint64_t pane_fast_lines(const struct pane *);
/** True (once) when the cursor, title or modes changed since the last call. */
bool pane_take_changed(struct pane *);
/** Encodes key CODE with MODS for the program (cursor and keypad modes honoured). */
void pane_key(struct pane *, uint32_t code, int mods);
/** Sends pasted text, bracketed if the program asked for that. */
void pane_paste(struct pane *, const char *data, size_t len);
/**
 * Encodes a mouse event at pane cell (M->x, M->y) in the protocol the
 * program asked for; false (nothing sent) if it did not ask for the mouse.
 */
bool pane_mouse(struct pane *, const struct pane_mouse_event *m);
/** Writes raw bytes to the program. */
void pane_write(struct pane *, const char *data, size_t len);

#endif
