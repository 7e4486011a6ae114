/* Internals shared inside the pane module: the grid's layout, for the hot path of writing glyphs, and the terminal's state. */
#ifndef AGENTMUX_PANE_INT_H
#define AGENTMUX_PANE_INT_H

#include <sys/types.h>

#include <vterm.h>

#include "core/core.h"
#include "pane.h"

/*
 * A row holds only the cells written so far (USED); everything to their
 * right is a blank with the default colours, so blank lines cost nothing and
 * clearing a row is O(1). Combining sequences live in the row (EXT) and go
 * away with it.
 */
struct pane_row {
	struct pane_cell *cells;
	unsigned used;
	unsigned cap;
	uint32_t (*ext)[PANE_CELL_MAXCHARS];
	unsigned next;
	unsigned extcap;
	uint8_t lsize;          /* enum pane_lsize */
	uint8_t wrapped;        /* the line goes on in the next row (autowrap) */
};

/*
 * ROWS is a ring of CAP rows; the logical rows start at FIRST: HSIZE lines
 * of history, then the SY screen rows; slots after them are spare. A scroll
 * of the whole screen just advances the window.
 */
struct pane_grid {
	struct pane_row *rows;
	unsigned cap;
	unsigned first;
	unsigned hsize;
	unsigned hlimit;
	unsigned sx;
	unsigned sy;
	unsigned *dlo;          /* dirty columns [dlo, dhi) of each screen row */
	unsigned *dhi;
	bool dirty;
	bool all_dirty;
	struct pane_row *scratch; /* SY rows for rotating a region */
	uint64_t scrolled;
};


static inline struct pane_row *
pane_grid_row(const struct pane_grid *gd, int y)
{
	unsigned i = gd->first + (unsigned)((int)gd->hsize + y);

	if (i >= gd->cap)
		i -= gd->cap;
	return &gd->rows[i];
}

/* Marks columns [X0, X1) of screen row Y as changed. */
static inline void
pane_grid_mark(struct pane_grid *gd, unsigned y, unsigned x0, unsigned x1)
{
	gd->dirty = true;
	if (gd->dhi[y] <= gd->dlo[y]) {
		gd->dlo[y] = x0;
		gd->dhi[y] = x1;
		return;
	}
	if (x0 < gd->dlo[y])
		gd->dlo[y] = x0;
	if (x1 > gd->dhi[y])
		gd->dhi[y] = x1;
}

/*
 * The common case, inlined where glyphs are written: narrow code point CP
 * in the attributes and colours of PEN (which is neither wide nor combined),
 * over a narrow cell or appended at the end of the row. False if it needs
 * pane_grid_set's full treatment.
 */
static inline bool
pane_grid_set_narrow(struct pane_grid *gd, unsigned x, unsigned y,
    const struct pane_cell *pen, uint32_t cp)
{
	struct pane_row *r;
	struct pane_cell *dst;

	if (x >= gd->sx || y >= gd->sy)
		return false;
	r = pane_grid_row(gd, (int)y);
	if (x == r->used && x < r->cap)
		r->used++;
	else if (x >= r->used)
		return false;
	else if (r->cells[x].wide || r->cells[x].pad || r->cells[x].ext)
		return false;
	dst = &r->cells[x];
	*dst = *pen;
	dst->cp = cp;
	if (!gd->all_dirty)
		pane_grid_mark(gd, y, x, x + 1);
	return true;
}

/* ---- a pane's terminal (pane-vterm.c, pane-vtseq.c) ---- */

/*
 * The scanner in front of libvterm (pane-vtseq.c). Sequences go to libvterm
 * as they came unless agentmux handles them itself; one it may handle is
 * held back until its final byte, across reads if it is split.
 */
enum pane_vtseq_state {
	PANE_VTSEQ_GROUND,
	PANE_VTSEQ_ESC,          /* after ESC, with any intermediate byte */
	PANE_VTSEQ_CSI,
	PANE_VTSEQ_STR,          /* an OSC or DCS string: read here (see pane-vtseq.c) */
	PANE_VTSEQ_STR_ESC,      /* ESC inside one: ST, or a new sequence */
};

#define PANE_VTSEQ_MAX 128

struct pane_vtseq {
	enum pane_vtseq_state state;
	char leader;            /* CSI private marker ('?', '>', ...), or 0 */
	char inter;             /* the intermediate byte, or 0 */
	bool odd;               /* not one to handle: passed on as it is */
	bool drop;              /* the rest of it must not reach libvterm */
	bool rep;               /* a REP just after a character */
	bool c2;                /* a UTF-8 lead C2, kept (pane_vtseq_c1) */
	unsigned nsep;          /* parameter separators so far */
	unsigned ndigits;       /* digits of the parameter so far */
	char params[PANE_VTSEQ_MAX];
	size_t nparams;
	char held[PANE_VTSEQ_MAX + 8]; /* its bytes from earlier reads */
	size_t nheld;
	bool osc;               /* the string is an OSC (else a DCS) */
	char str[512];          /* the string so far */
	size_t nstr;            /* its length; sizeof str once it is too long */
};

/*
 * The state DECSC saves, as xterm saves it: the cursor, the pen, the
 * character sets and shift state, origin mode. libvterm 0.1.4 saves only
 * the cursor and pen, in one slot for both screens; agentmux keeps its
 * own, one per screen. NOW holds the parts libvterm does not report.
 */
struct pane_vtsave {
	char g[4];              /* the final byte designating G0..G3 */
	unsigned gl;            /* the set shifted in (SI, SO, LS2, LS3) */
	bool origin;
	bool dim;
	bool conceal;
	unsigned cx;
	unsigned cy;
	struct pane_cell pen;
};

struct pane {
	unsigned refs;
	VTerm *vt;
	VTermState *state;
	struct pane_grid *main;
	struct pane_grid *alt;
	struct pane_grid *cur;
	pane_write_cb write;
	void *arg;

	struct pane_cell pen;
	struct pane_vtseq seq;
	struct pane_vtsave now;
	struct pane_vtsave saved[2]; /* the normal screen's, the alternate's */
	bool graphic;           /* the last thing written was a character (REP) */
	bool esc_kept;          /* an ESC libvterm gets with the next byte */
	uint32_t last[PANE_CELL_MAXCHARS]; /* that character, as libvterm put it */
	size_t nlast;
	unsigned top;           /* the scroll region's first row */

	unsigned cx;
	unsigned cy;
	bool cursor_visible;
	enum pane_cursor_shape cursor_shape;
	bool reverse;
	enum pane_mouse_mode mouse;
	char *title;
	unsigned bells;
	bool changed;

	/* For the streaming fast path (see pane_feed). */
	bool fast;
	bool lineinfo;          /* a double-width line was ever set */
	uint64_t ops;           /* scrolls, moves, erases, mode switches */
	uint64_t fullscrolls;   /* of those, one-line scrolls of the whole screen */
	uint64_t fastlines;     /* lines done by the fast path */

	/* Where the last glyph ended, to see an autowrap (pane_putglyph). */
	bool flow;              /* nothing moved the cursor since */
	int flow_row;
	unsigned flow_col;      /* the glyph's column */
	unsigned flow_end;      /* the column after it */
};

/* pane-vterm.c */
void pane_input(struct pane *, const char *data, size_t len);
void pane_pen_flag(struct pane *, unsigned flag, bool on);
void pane_set_alt(struct pane *, bool on);
void pane_clear_alt(struct pane *);
void pane_reset_screens(struct pane *);

/* pane-vtseq.c */
void pane_vtseq_init(struct pane *);
/** Scans LEN bytes of output and gives them to libvterm, handling some sequences here. */
void pane_vtseq_parse(struct pane *, const char *data, size_t len);
/** True if plain ASCII now shows as itself: no sequence open, ASCII shifted in. */
bool pane_vtseq_plain(const struct pane *);

#endif
