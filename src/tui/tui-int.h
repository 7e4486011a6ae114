/* Internals shared inside the tui module: the grid's layout, for the hot path of writing glyphs. */
#ifndef AGENTMUX_TUI_INT_H
#define AGENTMUX_TUI_INT_H

#include "tui.h"

/*
 * A row holds only the cells written so far (USED); everything to their
 * right is a blank with the default colours, so blank lines cost nothing and
 * clearing a row is O(1). Combining sequences live in the row (EXT) and go
 * away with it.
 */
struct tui_row {
	struct tui_cell *cells;
	unsigned used;
	unsigned cap;
	uint32_t (*ext)[TUI_CELL_MAXCHARS];
	unsigned next;
	unsigned extcap;
};

/*
 * ROWS is a ring of CAP rows; the logical rows start at FIRST: HSIZE lines
 * of history, then the SY screen rows; slots after them are spare. A scroll
 * of the whole screen just advances the window.
 */
struct tui_grid {
	struct tui_row *rows;
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
	struct tui_row *scratch; /* SY rows for rotating a region */
	uint64_t scrolled;
};

static inline struct tui_row *
tui_grid_row(const struct tui_grid *gd, int y)
{
	unsigned i = gd->first + (unsigned)((int)gd->hsize + y);

	if (i >= gd->cap)
		i -= gd->cap;
	return &gd->rows[i];
}

/* Marks columns [X0, X1) of screen row Y as changed. */
static inline void
tui_grid_mark(struct tui_grid *gd, unsigned y, unsigned x0, unsigned x1)
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
 * tui_grid_set's full treatment.
 */
static inline bool
tui_grid_set_narrow(struct tui_grid *gd, unsigned x, unsigned y,
    const struct tui_cell *pen, uint32_t cp)
{
	struct tui_row *r;
	struct tui_cell *dst;

	if (x >= gd->sx || y >= gd->sy)
		return false;
	r = tui_grid_row(gd, (int)y);
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
		tui_grid_mark(gd, y, x, x + 1);
	return true;
}

#endif
