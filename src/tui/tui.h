/* The dashboard: layout, keys, views, and drawing the sessions' panes (pane/pane.h) with ncursesw. */
#ifndef AGENTMUX_TUI_H
#define AGENTMUX_TUI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pane/pane.h"

struct buf;
struct event_base;

/* ---- keys and terminal input (tui-keys.c) ---- */

/* Keys: a Unicode code point (control characters as themselves), or one of these (the pane's). */
enum {
	TUI_KEY_BASE = PANE_KEY_BASE,
	TUI_KEY_UP = PANE_KEY_UP,
	TUI_KEY_DOWN = PANE_KEY_DOWN,
	TUI_KEY_LEFT = PANE_KEY_LEFT,
	TUI_KEY_RIGHT = PANE_KEY_RIGHT,
	TUI_KEY_HOME = PANE_KEY_HOME,
	TUI_KEY_END = PANE_KEY_END,
	TUI_KEY_INSERT = PANE_KEY_INSERT,
	TUI_KEY_DELETE = PANE_KEY_DELETE,
	TUI_KEY_PAGEUP = PANE_KEY_PAGEUP,
	TUI_KEY_PAGEDOWN = PANE_KEY_PAGEDOWN,
	TUI_KEY_BACKTAB = PANE_KEY_BACKTAB,
	TUI_KEY_F1 = PANE_KEY_F1,  /* TUI_KEY_F1 + N - 1 is function key N */
	TUI_KEY_F12 = PANE_KEY_F12,
	TUI_KEY_FOCUS_IN = PANE_KEY_FOCUS_IN,
	TUI_KEY_FOCUS_OUT = PANE_KEY_FOCUS_OUT,
};

#define TUI_MOD_SHIFT PANE_MOD_SHIFT
#define TUI_MOD_ALT PANE_MOD_ALT
#define TUI_MOD_CTRL PANE_MOD_CTRL

struct tui_key {
	uint32_t code;
	int mods;             /* TUI_MOD_*; Ctrl+letter comes as its control code */
};

enum tui_mouse_type {
	TUI_MOUSE_PRESS = PANE_MOUSE_PRESS,
	TUI_MOUSE_RELEASE = PANE_MOUSE_RELEASE,
	TUI_MOUSE_DRAG = PANE_MOUSE_DRAG,
	TUI_MOUSE_WHEEL_UP = PANE_MOUSE_WHEEL_UP,
	TUI_MOUSE_WHEEL_DOWN = PANE_MOUSE_WHEEL_DOWN,
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

/** M as the pane takes it (for pane_mouse). */
void tui_keys_mouse_event(const struct tui_mouse *m,
    struct pane_mouse_event *out);

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
	TUI_ACT_DETACH,
	TUI_ACT_SEND_PREFIX,
	TUI_ACT_REDRAW,
	TUI_ACT_NEXT_NEEDS,   /* the next session that needs you */
	TUI_ACT_PAUSE,        /* pause or resume the focused session */
	TUI_ACT_SESSIONS,     /* what each session costs */
	TUI_ACT_RELOAD,       /* the server re-reads the config file */
	TUI_ACT_COMMAND,      /* the command prompt */
	TUI_ACT_SUSPEND,      /* the client stops, as a job does (C-z) */
	TUI_ACT_PORT,         /* forward a port of the focused session */
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

/* ---- the dashboard (tui-dash.c and the rest) ---- */

struct session_ctx;

struct tui_opts {
	const char *agent;        /* NULL: [ui] default_agent, else shell */
	const char *dir;          /* NULL: the current dir */
	char *const *command;     /* NULL: the agent's */
	bool worktree;            /* a worktree of its own (else [ui] worktree) */
	const char *base;         /* with worktree: where its branch starts */
	const char *branch;       /* with worktree: NAME of agentmux/ID/NAME */
	bool refuse_shared;       /* refuse a tree another session runs in */
	bool ask_shared;          /* ask first if another session runs in it
	                             (plain agentmux: the dialog's question) */
	char *const *env;         /* the asking client's environment (kept for
	                             a restart); NULL: this process's own */
};

struct tui;
/* One attached terminal's view (its focus, zoom, panels, prompt focus). */
struct tui_client;

/**
 * The dashboard's sessions and one view of them, on BASE, with no
 * terminal yet; free with tui_free, which ends its sessions' panes.
 */
struct tui *tui_create(struct event_base *base, struct session_ctx *ctx);
void tui_free(struct tui *);
/** Starts a session with OPTS (focused if FOCUS): its number, or -1 with *CAUSE. */
int64_t tui_start(struct tui *, const struct tui_opts *opts, bool focus,
    char **cause);
/** Shows session ID in the focused place; -1 with *CAUSE if there is none. */
int tui_focus(struct tui *, int64_t id, char **cause);
/** Closes every session, then ends the loop (as the quit key does). */
void tui_end(struct tui *);
/**
 * Draws on the terminal INFD/OUTFD (owned from now on, closed on failure)
 * of type TERM, and reads its keys, beside any other terminal attached:
 * each client has its view (the one the last client to detach left, or
 * a new one), and the panes take the size of the one most recently
 * active. The view is the dashboard's (gone at tui_detach); NULL with
 * *CAUSE.
 */
struct tui_client *tui_attach(struct tui *, int infd, int outfd,
    const char *term, bool color, char **cause);
/** CF (borrowed, kept alive by the caller) is the config from now on (a reload). */
void tui_set_config(struct tui *, const struct config *cf);
/**
 * ENV (K=V, NULL-ended, copied) is the environment of client C: the
 * sessions started from its view take it.
 */
void tui_set_env(struct tui *, struct tui_client *c, char *const *env);
/**
 * Lets client C's terminal go (its modes restored); the sessions and
 * the other clients keep running. C is not to be used after.
 */
void tui_detach(struct tui *, struct tui_client *c);
/** Lets every client's terminal go. */
void tui_detach_all(struct tui *);
/** Whether any terminal is attached. */
bool tui_attached(const struct tui *);
/** How long client C's terminal has not read what waits for it (µs), 0 if it keeps up. */
int64_t tui_stuck_us(const struct tui *, const struct tui_client *c);
/**
 * CB(ARG, C, WHY) is called once the dashboard let client C's terminal
 * go by itself (the detach key, or the terminal went away).
 */
void tui_set_detach_cb(struct tui *,
    void (*cb)(void *, struct tui_client *, const char *), void *arg);
/* agentmux port: what to forward, or remove. */
struct tui_port_opts {
	int jail_port;
	int host_port;               /* 0: any free one */
	const char *host;            /* NULL: the session's own (session_port_default_host) */
	bool named;                  /* the user named HOST with --host */
	bool remove;
};
/* tui-cmds.c: what the server's commands do */
/** The sessions, a line each (or JSON): number, agent, project, state, age, requests, denials, prompts; caller frees. */
char *tui_list(struct tui *, bool json);
/** The server's port forward of session ID (see session_port_add); *TEXT says what was made. -1 with *CAUSE. */
int tui_port(struct tui *, int64_t id, const struct tui_port_opts *,
    char **text, char **cause);
/** Closes session ID (as the close key does); -1 with *CAUSE. */
int tui_kill(struct tui *, int64_t id, char **cause);
/** Types WORDS into session ID: tmux key names (Enter, C-c) unless LITERAL; -1 with *CAUSE. */
int tui_send(struct tui *, int64_t id, char *const *words, bool literal,
    char **cause);
/** Pauses (PAUSE) or resumes session ID (as prefix P does); -1 with *CAUSE. */
int tui_set_paused(struct tui *, int64_t id, bool pause, char **cause);
/**
 * Whether session ID is in state FOR ("needs-you", "prompt", "exit"):
 * 1 if it is, 0 if not yet, -1 with *CAUSE (no such live session, or FOR
 * is none of those).
 */
int tui_reached(struct tui *, int64_t id, const char *what, char **cause);
/**
 * CB(ARG, &TEXT, &CAUSE) re-reads the config for new sessions (prefix
 * R): 0 with *TEXT to show, or -1 with *CAUSE; both freed by the TUI.
 */
void tui_set_reload_cb(struct tui *, int (*cb)(void *, char **, char **),
    void *arg);
/**
 * CB(ARG, C, &CAUSE) suspends client C (prefix C-z): 0 once it did
 * (with tui_suspend), or -1 with *CAUSE (freed by the TUI).
 */
void tui_set_suspend_cb(struct tui *,
    int (*cb)(void *, struct tui_client *, char **), void *arg);
/**
 * Gives client C's terminal back as it was and neither reads nor draws
 * on it (its client stops as a job; the sessions go on) until
 * tui_resume, which takes it again and draws it afresh at its size.
 * False if C was suspended already or is not attached.
 */
bool tui_suspend(struct tui *, struct tui_client *c);
void tui_resume(struct tui *, struct tui_client *c);
/** CB(ARG) is called whenever a session's state changes or it ends. */
void tui_set_change_cb(struct tui *, void (*cb)(void *), void *arg);
/** CB(ARG) is called when an attached terminal starts to leave bytes unread (tui_stuck_us). */
void tui_set_stuck_cb(struct tui *, void (*cb)(void *), void *arg);
/** MSG in the status bar for a while (a warning logged, say). */
void tui_notice(struct tui *, bool alert, const char *msg);
/** MSG in client C's status bar only, for a while. */
void tui_notice_client(struct tui *, struct tui_client *c, bool alert,
    const char *msg);
/** Client C's terminal changed size (it is the most recently active now). */
void tui_resize(struct tui *, struct tui_client *c);
size_t tui_sessions_running(const struct tui *);
size_t tui_sessions(const struct tui *);
/** What the dashboard ends with, once the user quit (0, or 128 + a signal). */
int tui_exit_code(const struct tui *);
/** What sessions run here left to review, as lines to print; NULL if none. */
char *tui_left_to_review(struct tui *);

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
bool tui_render_hidden(const struct pane_cell *c);

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
	TUI_STYLE_NEEDS,       /* a session that needs you, or has a prompt */
	TUI_STYLE_COUNT
};

struct tui_screen;

/**
 * Takes over the terminal (ncursesw, mouse reporting and bracketed paste
 * on); COLOR false draws without colours. NULL with *CAUSE if the
 * terminal cannot be used.
 */
struct tui_screen *tui_screen_open(bool color, char **cause);
/**
 * The same on the terminal INFD (keys) and OUTFD (drawing) of type TERM,
 * which it owns from now on (closed on failure too). With BASE, output
 * is written as OUTFD takes it and frames wait while it does not (OUTFD
 * becomes non-blocking); without, each frame is written out in full.
 */
struct tui_screen *tui_screen_open_fds(struct event_base *base, int infd,
    int outfd, const char *term, bool color, char **cause);
/** The descriptor keys come from (borrowed). */
int tui_screen_infd(const struct tui_screen *);
/** Writes raw bytes to the terminal, after what curses has queued. */
void tui_screen_write(struct tui_screen *, const void *data, size_t len);
/** Gives the terminal back as it was; NULL is a no-op. */
void tui_screen_close(struct tui_screen *);
/**
 * Gives the terminal back as it was (its modes, the main screen) and
 * writes nothing more to it until tui_screen_resume, which takes it
 * again and draws everything afresh: a client suspended as a job.
 */
void tui_screen_suspend(struct tui_screen *);
void tui_screen_resume(struct tui_screen *);
/**
 * Curses draws on this screen from now on (the drawing calls below work
 * on the screen in use): with several terminals attached, each frame
 * starts with its own.
 */
void tui_screen_use(struct tui_screen *);
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
void tui_screen_draw_grid(struct tui_screen *, struct pane_grid *gd,
    const struct tui_rect *r, unsigned offset, bool reverse, bool all);
/**
 * Draws cells [X0, X1) of grid row GY again at row VY of R, inverted when
 * REVERSE (a selection, a match).
 */
void tui_screen_draw_cells(struct tui_screen *, struct pane_grid *gd,
    const struct tui_rect *r, unsigned vy, int gy, unsigned x0, unsigned x1,
    bool reverse);
/** Where the terminal's cursor shows (hidden when VISIBLE is false). */
void tui_screen_cursor(struct tui_screen *, bool visible, unsigned x,
    unsigned y, enum pane_cursor_shape);
/** Sends the frame to the terminal. */
void tui_screen_flush(struct tui_screen *);
/** How long the terminal has taken none of the bytes waiting for it (µs), 0 if none wait. */
int64_t tui_screen_stuck_us(const struct tui_screen *);
/** CB(ARG) is called when bytes start to wait for the terminal (tui_screen_stuck_us turns non-zero). */
void tui_screen_set_stuck_cb(struct tui_screen *, void (*cb)(void *),
    void *arg);
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
