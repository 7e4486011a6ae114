/* The dashboard: pane grids fed by libvterm's state layer, layout, keys, drawing with ncursesw. */
#ifndef AGENTMUX_TUI_H
#define AGENTMUX_TUI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct buf;
struct event_base;

/* ---- the cell grid (tui-grid.c) ---- */

/*
 * A pane's cells: a ring of rows holding the scrollback above the visible
 * screen, so a full-screen scroll moves the ring's window instead of any
 * cells. Rows y = 0 .. sy-1 are the screen, y = -hsize .. -1 the history.
 */

#define TUI_ATTR_BOLD 0x01
#define TUI_ATTR_DIM 0x02
#define TUI_ATTR_ITALIC 0x04
#define TUI_ATTR_UNDERLINE 0x08
#define TUI_ATTR_BLINK 0x10
#define TUI_ATTR_REVERSE 0x20
#define TUI_ATTR_STRIKE 0x40
#define TUI_ATTR_CONCEAL 0x80   /* SGR 8: drawn as blanks */

/* Colours: the default, one of 256 indexed, or 24-bit RGB. */
#define TUI_COLOR_DEFAULT 0u
#define TUI_COLOR_INDEXED 0x01000000u
#define TUI_COLOR_RGB 0x02000000u
#define TUI_COLOR_TYPE(c) ((c) & 0xff000000u)
#define TUI_COLOR_INDEX(i) (TUI_COLOR_INDEXED | ((uint32_t)(i) & 0xff))
#define TUI_COLOR_MAKE_RGB(r, g, b) (TUI_COLOR_RGB | ((uint32_t)(r) << 16) | \
    ((uint32_t)(g) << 8) | (uint32_t)(b))

/* Code points one cell can hold: a base character and its combining marks. */
#define TUI_CELL_MAXCHARS 6

struct tui_cell {
	uint32_t cp : 21;     /* code point (0 is a blank), or an index with ext */
	uint32_t wide : 1;    /* the left half of a two-column character */
	uint32_t pad : 1;     /* the right half of one: nothing of its own */
	uint32_t ext : 1;     /* cp indexes the row's combining sequences */
	uint32_t attr : 8;    /* TUI_ATTR_* */
	uint32_t fg;          /* TUI_COLOR_* */
	uint32_t bg;
};

struct tui_grid;

/** A grid of SX x SY cells keeping up to HLIMIT lines of history; caller frees. */
struct tui_grid *tui_grid_create(unsigned sx, unsigned sy, unsigned hlimit);
void tui_grid_free(struct tui_grid *);
unsigned tui_grid_sx(const struct tui_grid *);
unsigned tui_grid_sy(const struct tui_grid *);
/** Lines of history currently kept above the screen. */
unsigned tui_grid_hsize(const struct tui_grid *);
unsigned tui_grid_hlimit(const struct tui_grid *);
/** Cell X of row Y (-hsize <= Y < sy); a blank beyond what was written. Borrowed. */
const struct tui_cell *tui_grid_cell(const struct tui_grid *, unsigned x, int y);
/**
 * Code points of cell C of row Y into CHARS (TUI_CELL_MAXCHARS); returns
 * how many (0 for a blank or the right half of a wide character).
 */
size_t tui_grid_chars(const struct tui_grid *, const struct tui_cell *c, int y,
    uint32_t *chars);
/**
 * Writes C at X, Y of the screen; CHARS (NULL, or NCHARS code points of a
 * combining sequence) override C->cp. A wide C also covers X+1.
 */
void tui_grid_set(struct tui_grid *, unsigned x, unsigned y,
    const struct tui_cell *c, const uint32_t *chars, size_t nchars);
/** Blanks the screen rectangle [X0,X1) x [Y0,Y1) with background BG. */
void tui_grid_erase(struct tui_grid *, unsigned x0, unsigned y0, unsigned x1,
    unsigned y1, uint32_t bg);
/**
 * Scrolls the rectangle [X0,X1) x [Y0,Y1) up by DOWN rows (down if
 * negative) and left by RIGHT columns (right if negative), blanking what is
 * uncovered with BG. A full-width scroll of the whole screen moves the top
 * rows into the history (when it keeps any) without copying cells.
 */
void tui_grid_scroll(struct tui_grid *, unsigned x0, unsigned y0, unsigned x1,
    unsigned y1, int down, int right, uint32_t bg);
/** Copies the screen rectangle of SRC at (SX, SY) to (DX, DY), NX x NY cells. */
void tui_grid_move(struct tui_grid *, unsigned dx, unsigned dy, unsigned sx,
    unsigned sy, unsigned nx, unsigned ny);
/**
 * Resizes to SX x SY. Rows lost at the top go to the history, rows gained
 * come back from it; CURSOR_Y is kept on the screen. Returns how far the
 * cursor's row moved (negative: up).
 */
int tui_grid_resize(struct tui_grid *, unsigned sx, unsigned sy,
    unsigned cursor_y);
/**
 * Resizes to SX x SY rewrapping the lines, as tmux does: rows that wrapped
 * automatically are joined and split again at SX, lines ended by a newline
 * stay ended, the history too. *CX, *CY (the cursor, on the screen) follow
 * the character they were on. The alternate screen is resized with
 * tui_grid_resize instead, as in xterm.
 */
void tui_grid_reflow(struct tui_grid *, unsigned sx, unsigned sy,
    unsigned *cx, unsigned *cy);
/** The most cells a reflow joins into one line; a longer line is rewrapped in parts. */
#define TUI_GRID_REFLOW_MAX (1u << 16)
/** Marks row Y (history rows negative) as going on in the next row, or not. */
void tui_grid_set_wrapped(struct tui_grid *, int y, bool wrapped);
bool tui_grid_wrapped(const struct tui_grid *, int y);
/** Writes LEN printable ASCII bytes at the start of screen row Y in PEN's attributes. */
void tui_grid_put_ascii(struct tui_grid *, unsigned y, const char *s,
    size_t len, const struct tui_cell *pen);
/**
 * True if screen row Y holds exactly the LEN ASCII bytes S in PEN's
 * attributes, then blanks in PEN's background.
 */
bool tui_grid_row_is(const struct tui_grid *, unsigned y, const char *s,
    size_t len, const struct tui_cell *pen);
/** Drops the history. */
void tui_grid_clear_history(struct tui_grid *);

/* A row's line size (DECDWL, DECDHL): its cells are drawn two columns wide. */
enum tui_lsize {
	TUI_LSIZE_SINGLE,
	TUI_LSIZE_WIDE,        /* DECDWL */
	TUI_LSIZE_TOP,         /* DECDHL, top half */
	TUI_LSIZE_BOTTOM,      /* DECDHL, bottom half */
};

/** Sets the line size of screen row Y (a new row is single). */
void tui_grid_set_lsize(struct tui_grid *, unsigned y, enum tui_lsize);
enum tui_lsize tui_grid_lsize(const struct tui_grid *, int y);
/** True if anything on the screen changed since tui_grid_clean. */
bool tui_grid_is_dirty(const struct tui_grid *);
/** The changed columns [*X0, *X1) of screen row Y; false if none. */
bool tui_grid_row_dirty(const struct tui_grid *, unsigned y, unsigned *x0,
    unsigned *x1);
void tui_grid_set_dirty(struct tui_grid *);
void tui_grid_clean(struct tui_grid *);
/** Appends row Y as UTF-8 (trailing blanks dropped) to B. */
void tui_grid_row_text(const struct tui_grid *, int y, struct buf *b);
/** Lines ever moved into the history (a counter; wraps never in practice). */
uint64_t tui_grid_scrolled(const struct tui_grid *);

/* ---- keys and terminal input (tui-keys.c) ---- */

/* Keys: a Unicode code point (control characters as themselves), or one of these. */
enum {
	TUI_KEY_BASE = 0x110000,
	TUI_KEY_UP = TUI_KEY_BASE,
	TUI_KEY_DOWN,
	TUI_KEY_LEFT,
	TUI_KEY_RIGHT,
	TUI_KEY_HOME,
	TUI_KEY_END,
	TUI_KEY_INSERT,
	TUI_KEY_DELETE,
	TUI_KEY_PAGEUP,
	TUI_KEY_PAGEDOWN,
	TUI_KEY_BACKTAB,
	TUI_KEY_F1,            /* TUI_KEY_F1 + N - 1 is function key N */
	TUI_KEY_F12 = TUI_KEY_F1 + 11,
	TUI_KEY_FOCUS_IN,
	TUI_KEY_FOCUS_OUT,
};

#define TUI_MOD_SHIFT 0x1
#define TUI_MOD_ALT 0x2
#define TUI_MOD_CTRL 0x4

struct tui_key {
	uint32_t code;
	int mods;             /* TUI_MOD_*; Ctrl+letter comes as its control code */
};

enum tui_mouse_type {
	TUI_MOUSE_PRESS,
	TUI_MOUSE_RELEASE,
	TUI_MOUSE_DRAG,
	TUI_MOUSE_WHEEL_UP,
	TUI_MOUSE_WHEEL_DOWN,
};

struct tui_mouse {
	enum tui_mouse_type type;
	int button;           /* 1-3 for press, release and drag */
	unsigned x;           /* 0-based terminal column */
	unsigned y;
	int mods;
};

enum tui_input_type {
	TUI_INPUT_KEY,
	TUI_INPUT_MOUSE,
	TUI_INPUT_PASTE,
};

/** One thing the user did at the terminal; PASTE is borrowed for the callback. */
struct tui_input {
	enum tui_input_type type;
	struct tui_key key;
	struct tui_mouse mouse;
	const char *paste;
	size_t pastelen;
};

typedef void (*tui_input_cb)(void *arg, const struct tui_input *);

struct tui_keys;

/** A parser of what the terminal sends (xterm-style keys, SGR mouse, bracketed paste). */
struct tui_keys *tui_keys_create(void);
void tui_keys_free(struct tui_keys *);
/**
 * Parses LEN bytes, calling FN for each complete input. Returns true when
 * the bytes end inside a sequence that may yet complete (a lone ESC): the
 * caller waits briefly, then calls tui_keys_flush.
 */
bool tui_keys_parse(struct tui_keys *, const char *data, size_t len,
    tui_input_cb fn, void *arg);
/** Delivers whatever is pending as keys (a lone ESC is the Escape key). */
void tui_keys_flush(struct tui_keys *, tui_input_cb fn, void *arg);
/** A key's name for help and messages ("C-a", "Up", "F5", "x"); static buffer. */
const char *tui_keys_name(const struct tui_key *);

/* What a key does after the prefix. */
enum tui_action {
	TUI_ACT_NEW,
	TUI_ACT_CLOSE,
	TUI_ACT_NEXT,
	TUI_ACT_PREV,
	TUI_ACT_SELECT,       /* arg: the session number */
	TUI_ACT_ZOOM,
	TUI_ACT_SPLIT_H,      /* side by side */
	TUI_ACT_SPLIT_V,      /* stacked */
	TUI_ACT_FOCUS,        /* arg: a TUI_DIR_* */
	TUI_ACT_REQUESTS,
	TUI_ACT_HISTORY,
	TUI_ACT_SNAPSHOTS,
	TUI_ACT_DIFF,
	TUI_ACT_CONFDIFF,
	TUI_ACT_PROMPTS,
	TUI_ACT_SCROLLBACK,
	TUI_ACT_PASTE,
	TUI_ACT_HELP,
	TUI_ACT_QUIT,
	TUI_ACT_SEND_PREFIX,
	TUI_ACT_REDRAW,
};

enum tui_dir {
	TUI_DIR_UP,
	TUI_DIR_DOWN,
	TUI_DIR_LEFT,
	TUI_DIR_RIGHT,
};

struct tui_binding {
	uint32_t key;         /* 0: the prefix key itself */
	enum tui_action action;
	int arg;
	const char *name;     /* how the help shows the key; NULL: not listed */
	const char *help;
};

/** Every binding, in the order the help lists them. */
const struct tui_binding *tui_keys_bindings(size_t *n);

/* The prefix state machine: keys go to the pane until the prefix comes. */
enum tui_dispatch {
	TUI_DISPATCH_PANE,    /* send the key to the focused pane */
	TUI_DISPATCH_PREFIX,  /* the prefix: wait for the command key */
	TUI_DISPATCH_ACTION,  /* *BINDING says what to do */
	TUI_DISPATCH_UNBOUND, /* prefix then a key that does nothing */
};

struct tui_keymap {
	int prefix_key;       /* the code the prefix sends (C-a: 1) */
	bool prefixed;
};

enum tui_dispatch tui_keys_dispatch(struct tui_keymap *, const struct tui_key *,
    const struct tui_binding **binding);

/* ---- pane layout (tui-layout.c) ---- */

/*
 * Which panes are visible where: a tree of side-by-side and stacked splits
 * whose leaves are panes (identified by the caller's numbers), one of them
 * focused, optionally zoomed to fill the area.
 */

struct tui_rect {
	unsigned x;
	unsigned y;
	unsigned sx;
	unsigned sy;
};

/* A pane smaller than this is not usable. */
#define TUI_PANE_MIN_SX 10
#define TUI_PANE_MIN_SY 3

struct tui_layout;

/** A layout showing PANE alone; caller frees. */
struct tui_layout *tui_layout_create(int pane);
void tui_layout_free(struct tui_layout *);
/**
 * Splits the focused pane, side by side (SIDE) or stacked, showing PANE
 * in the new half, which gets the focus. False (nothing changed) if either
 * half would be too small.
 */
bool tui_layout_split(struct tui_layout *, int pane, bool side);
/** Takes PANE out; its sibling gets its space. False if it was the last. */
bool tui_layout_remove(struct tui_layout *, int pane);
/** Shows NEWPANE where OLDPANE is. */
void tui_layout_replace(struct tui_layout *, int oldpane, int newpane);
bool tui_layout_contains(const struct tui_layout *, int pane);
/** The focused pane. */
int tui_layout_focus(const struct tui_layout *);
/** Focuses PANE if it is in the layout; false otherwise. */
bool tui_layout_set_focus(struct tui_layout *, int pane);
/** Moves the focus to the nearest pane in direction DIR; false if none. */
bool tui_layout_focus_dir(struct tui_layout *, enum tui_dir dir);
void tui_layout_set_zoom(struct tui_layout *, bool);
bool tui_layout_zoomed(const struct tui_layout *);
/**
 * Computes every pane's rectangle for an area of SX x SY at (X, Y). When
 * the split does not fit, only the focused pane is shown. Returns false if
 * not even one pane fits.
 */
bool tui_layout_apply(struct tui_layout *, unsigned x, unsigned y,
    unsigned sx, unsigned sy);
/** PANE's rectangle after tui_layout_apply; false if it is not shown. */
bool tui_layout_rect(const struct tui_layout *, int pane, struct tui_rect *);
/** The pane shown at (X, Y), or -1 (a border or nothing). */
int tui_layout_pane_at(const struct tui_layout *, unsigned x, unsigned y);
/** The panes shown (up to MAX) into PANES; returns how many are shown. */
size_t tui_layout_panes(const struct tui_layout *, int *panes, size_t max);
/** The borders between shown panes (up to MAX) into R; returns how many. */
size_t tui_layout_borders(const struct tui_layout *, struct tui_rect *r,
    size_t max);

/* ---- a pane's terminal (tui-vterm.c) ---- */

/*
 * libvterm's state layer parses what the program writes and keeps the
 * terminal's state; the cells are ours, in a tui_grid (one for the normal
 * screen with history, one for the alternate screen).
 */

/* The cursor's shape, numbered as DECSCUSR numbers them. */
enum tui_cursor_shape {
	TUI_CURSOR_DEFAULT,        /* whatever the user's terminal does */
	TUI_CURSOR_BLOCK_BLINK,
	TUI_CURSOR_BLOCK,
	TUI_CURSOR_UNDERLINE_BLINK,
	TUI_CURSOR_UNDERLINE,
	TUI_CURSOR_BAR_BLINK,
	TUI_CURSOR_BAR,
};

enum tui_mouse_mode {
	TUI_MOUSE_OFF,
	TUI_MOUSE_CLICKS,
	TUI_MOUSE_DRAGS,
	TUI_MOUSE_MOTION,
};

/** Where replies (and encoded keys) for the program go. */
typedef void (*tui_vterm_write_cb)(void *arg, const char *data, size_t len);

struct tui_vterm;

/** A SX x SY terminal with HLIMIT lines of history; WRITE gets its replies. */
struct tui_vterm *tui_vterm_create(unsigned sx, unsigned sy, unsigned hlimit,
    tui_vterm_write_cb write, void *arg);
void tui_vterm_free(struct tui_vterm *);
/** Feeds the program's output. */
void tui_vterm_feed(struct tui_vterm *, const char *data, size_t len);
void tui_vterm_resize(struct tui_vterm *, unsigned sx, unsigned sy);
/** The screen being shown (alternate or normal); borrowed. */
struct tui_grid *tui_vterm_grid(struct tui_vterm *);
bool tui_vterm_altscreen(const struct tui_vterm *);
void tui_vterm_cursor(const struct tui_vterm *, unsigned *x, unsigned *y);
/** The screen column the cursor shows in: twice its cell on a double-width line. */
unsigned tui_vterm_cursor_column(struct tui_vterm *);
bool tui_vterm_cursor_visible(const struct tui_vterm *);
enum tui_cursor_shape tui_vterm_cursor_shape(const struct tui_vterm *);
/** Reverse video of the whole screen (DECSCNM). */
bool tui_vterm_reverse(const struct tui_vterm *);
enum tui_mouse_mode tui_vterm_mouse_mode(const struct tui_vterm *);
/** The window title the program set; "" if none. Borrowed. */
const char *tui_vterm_title(const struct tui_vterm *);
/** Bells rung so far. */
unsigned tui_vterm_bells(const struct tui_vterm *);
/** Lines that took the streaming fast path (for tests and benchmarks). */
uint64_t tui_vterm_fast_lines(const struct tui_vterm *);
/** True (once) when the cursor, title or modes changed since the last call. */
bool tui_vterm_take_changed(struct tui_vterm *);
/** Encodes a key for the program (cursor and keypad modes honoured). */
void tui_vterm_key(struct tui_vterm *, const struct tui_key *);
/** Sends pasted text, bracketed if the program asked for that. */
void tui_vterm_paste(struct tui_vterm *, const char *data, size_t len);
/**
 * Encodes a mouse event at pane cell (M->x, M->y) in the protocol the
 * program asked for; false (nothing sent) if it did not ask for the mouse.
 */
bool tui_vterm_mouse(struct tui_vterm *, const struct tui_mouse *m);
/** Writes raw bytes to the program. */
void tui_vterm_write(struct tui_vterm *, const char *data, size_t len);

/* ---- the dashboard (tui-dash.c and the rest) ---- */

struct session_ctx;

struct tui_opts {
	const char *agent;        /* NULL: [ui] default_agent, else shell */
	const char *dir;          /* NULL: the current dir */
	char *const *command;     /* NULL: the agent's */
};

/**
 * Runs the dashboard on BASE until the user quits: takes over the
 * terminal and starts the first session with OPTS. Every session has
 * ended when it returns. Returns the exit code, or -1 with *CAUSE if it
 * could not start at all.
 */
int tui_dashboard(struct event_base *base, struct session_ctx *ctx,
    const struct tui_opts *opts, char **cause);

/* ---- drawing (tui-render.c) ---- */

/**
 * The curses colour number for C on a terminal with NCOLORS colours (8,
 * 16, 88, 256, or 1 << 24 for direct colour), approximating what it cannot
 * show; -1 for the default colour.
 */
int tui_render_color(uint32_t c, int ncolors);
/**
 * True if cell C shows no text: concealed (SGR 8), or its foreground
 * cannot be told from its background (the same colour, or as good as,
 * once indexed colours are resolved with xterm's palette).
 */
bool tui_render_hidden(const struct tui_cell *c);

/* The dashboard's own colours and attributes (attributes only without colour). */
enum tui_style {
	TUI_STYLE_NORMAL,
	TUI_STYLE_BAR,         /* status bar */
	TUI_STYLE_BAR_FOCUS,   /* the focused session in it */
	TUI_STYLE_ALERT,       /* red: unsafe flags, denials */
	TUI_STYLE_WARN,        /* yellow: prompts, waiting */
	TUI_STYLE_OK,          /* green: allowed */
	TUI_STYLE_DIM,
	TUI_STYLE_BORDER,
	TUI_STYLE_BORDER_FOCUS,
	TUI_STYLE_TITLE,
	TUI_STYLE_SELECTED,
	TUI_STYLE_PROMPT,      /* the prompt bar */
	TUI_STYLE_PROMPT_FOCUS,
	TUI_STYLE_KEY,         /* a key name in help text */
	TUI_STYLE_COUNT
};

struct tui_screen;

/**
 * Takes over the terminal (ncursesw, mouse reporting and bracketed paste
 * on); COLOR false draws without colours. NULL with *CAUSE if the
 * terminal cannot be used.
 */
struct tui_screen *tui_screen_open(bool color, char **cause);
/** Gives the terminal back as it was; NULL is a no-op. */
void tui_screen_close(struct tui_screen *);
void tui_screen_size(const struct tui_screen *, unsigned *sx, unsigned *sy);
/** Picks up the terminal's new size (after SIGWINCH). */
void tui_screen_resize(struct tui_screen *);
/** Redraws everything at the next flush (C-l, or after a size change). */
void tui_screen_invalidate(struct tui_screen *);
/** Fills R with blanks in STYLE. */
void tui_screen_fill(struct tui_screen *, const struct tui_rect *r,
    enum tui_style);
/**
 * Writes UTF-8 TEXT at (X, Y) in STYLE, cut to WIDTH columns; returns the
 * columns used.
 */
unsigned tui_screen_print(struct tui_screen *, unsigned x, unsigned y,
    unsigned width, enum tui_style, const char *text);
unsigned tui_screen_printf(struct tui_screen *, unsigned x, unsigned y,
    unsigned width, enum tui_style, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
/** The columns tui_screen_print would use for TEXT, uncut. */
unsigned tui_screen_width(const char *text);
/** Draws a border line along R (one column or one row wide). */
void tui_screen_border(struct tui_screen *, const struct tui_rect *r,
    enum tui_style);
/**
 * Draws the rows of GD that changed (all of them with ALL) into R, OFFSET
 * lines back in its history; REVERSE inverts every cell. Marks GD clean.
 */
void tui_screen_draw_grid(struct tui_screen *, struct tui_grid *gd,
    const struct tui_rect *r, unsigned offset, bool reverse, bool all);
/**
 * Draws cells [X0, X1) of grid row GY again at row VY of R, inverted when
 * REVERSE (a selection, a match).
 */
void tui_screen_draw_cells(struct tui_screen *, struct tui_grid *gd,
    const struct tui_rect *r, unsigned vy, int gy, unsigned x0, unsigned x1,
    bool reverse);
/** Where the terminal's cursor shows (hidden when VISIBLE is false). */
void tui_screen_cursor(struct tui_screen *, bool visible, unsigned x,
    unsigned y, enum tui_cursor_shape);
/** Sends the frame to the terminal. */
void tui_screen_flush(struct tui_screen *);
/** Colours the terminal has (0 when drawing without colour). */
int tui_screen_colors(const struct tui_screen *);

/* Frame pacing: at most ~60 frames a second, and none while nothing changes. */
struct tui_frames;

struct tui_frames *tui_frames_create(struct event_base *,
    void (*draw)(void *), void *arg);
void tui_frames_free(struct tui_frames *);
/** Asks for a frame: soon, but not sooner than 1/60 s after the last one. */
void tui_frames_schedule(struct tui_frames *);
/** Frames drawn so far. */
uint64_t tui_frames_count(const struct tui_frames *);

#endif
