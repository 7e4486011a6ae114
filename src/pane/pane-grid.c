/* A pane's cells: a ring of rows (history above the screen), wide and combining characters, dirty rows. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "pane-int.h"

static const struct pane_cell pane_grid_blank;

static void
pane_grid_alloc_dirty(struct pane_grid *gd)
{
	gd->dlo = xreallocarray(gd->dlo, gd->sy, sizeof *gd->dlo);
	gd->dhi = xreallocarray(gd->dhi, gd->sy, sizeof *gd->dhi);
	gd->scratch = xreallocarray(gd->scratch, gd->sy, sizeof *gd->scratch);
	memset(gd->dlo, 0, gd->sy * sizeof *gd->dlo);
	memset(gd->dhi, 0, gd->sy * sizeof *gd->dhi);
	gd->dirty = gd->all_dirty = true;
}

struct pane_grid *
pane_grid_create(unsigned sx, unsigned sy, unsigned hlimit)
{
	struct pane_grid *gd = xcalloc(1, sizeof *gd);

	gd->sx = sx < 1 ? 1 : sx;
	gd->sy = sy < 1 ? 1 : sy;
	gd->hlimit = hlimit;
	gd->cap = gd->sy + (hlimit < 64 ? hlimit : 64);
	gd->rows = xcalloc(gd->cap, sizeof *gd->rows);
	pane_grid_alloc_dirty(gd);
	return gd;
}

void
pane_grid_free(struct pane_grid *gd)
{
	unsigned i;

	if (gd == NULL)
		return;
	for (i = 0; i < gd->cap; i++) {
		free(gd->rows[i].cells);
		free(gd->rows[i].ext);
	}
	free(gd->rows);
	free(gd->dlo);
	free(gd->dhi);
	free(gd->scratch);
	free(gd);
}

unsigned
pane_grid_sx(const struct pane_grid *gd)
{
	return gd->sx;
}

unsigned
pane_grid_sy(const struct pane_grid *gd)
{
	return gd->sy;
}

unsigned
pane_grid_hsize(const struct pane_grid *gd)
{
	return gd->hsize;
}

unsigned
pane_grid_hlimit(const struct pane_grid *gd)
{
	return gd->hlimit;
}

uint64_t
pane_grid_scrolled(const struct pane_grid *gd)
{
	return gd->scrolled;
}

bool
pane_grid_is_dirty(const struct pane_grid *gd)
{
	return gd->dirty;
}

bool
pane_grid_row_dirty(const struct pane_grid *gd, unsigned y, unsigned *x0,
    unsigned *x1)
{
	if (y >= gd->sy)
		return false;
	if (gd->all_dirty) {
		*x0 = 0;
		*x1 = gd->sx;
		return true;
	}
	if (gd->dhi[y] <= gd->dlo[y])
		return false;
	*x0 = gd->dlo[y];
	*x1 = gd->dhi[y] < gd->sx ? gd->dhi[y] : gd->sx;
	return true;
}

void
pane_grid_set_dirty(struct pane_grid *gd)
{
	gd->dirty = gd->all_dirty = true;
}

void
pane_grid_clean(struct pane_grid *gd)
{
	memset(gd->dhi, 0, gd->sy * sizeof *gd->dhi);
	gd->dirty = gd->all_dirty = false;
}

/* Empties row R; a non-default BG has to be written out to show. */
static void
pane_grid_row_clear(struct pane_grid *gd, struct pane_row *r, uint32_t bg)
{
	unsigned x;

	r->used = 0;
	r->next = 0;
	r->lsize = PANE_LSIZE_SINGLE;
	r->wrapped = 0;
	if (bg == PANE_COLOR_DEFAULT)
		return;
	if (r->cap < gd->sx) {
		r->cap = gd->sx;
		r->cells = xreallocarray(r->cells, r->cap, sizeof *r->cells);
	}
	for (x = 0; x < gd->sx; x++) {
		r->cells[x] = pane_grid_blank;
		r->cells[x].bg = bg;
	}
	r->used = gd->sx;
}

/* Makes cells [0, N) of R real, blank ones past what was used. */
static void
pane_grid_row_reserve(struct pane_grid *gd, struct pane_row *r, unsigned n)
{
	if (n <= r->used)
		return;
	if (n > r->cap) {
		r->cap = n < gd->sx ? gd->sx : n;
		r->cells = xreallocarray(r->cells, r->cap, sizeof *r->cells);
	}
	while (r->used < n)
		r->cells[r->used++] = pane_grid_blank;
}

const struct pane_cell *
pane_grid_cell(const struct pane_grid *gd, unsigned x, int y)
{
	const struct pane_row *r;

	if (y < -(int)gd->hsize || y >= (int)gd->sy)
		return &pane_grid_blank;
	r = pane_grid_row(gd, y);
	if (x >= r->used)
		return &pane_grid_blank;
	return &r->cells[x];
}

size_t
pane_grid_chars(const struct pane_grid *gd, const struct pane_cell *c, int y,
    uint32_t *chars)
{
	const struct pane_row *r;
	size_t n;

	if (c->pad || (c->cp == 0 && !c->ext))
		return 0;
	if (!c->ext) {
		chars[0] = c->cp;
		return 1;
	}
	r = pane_grid_row(gd, y);
	for (n = 0; n < PANE_CELL_MAXCHARS && r->ext[c->cp][n] != 0; n++)
		chars[n] = r->ext[c->cp][n];
	return n;
}

/* Rebuilds R's combining sequences keeping only those cells still use. */
static void
pane_grid_ext_compact(struct pane_row *r)
{
	uint32_t (*old)[PANE_CELL_MAXCHARS] = r->ext;
	unsigned x;

	r->ext = xcalloc(r->extcap, sizeof *r->ext);
	r->next = 0;
	for (x = 0; x < r->used; x++) {
		if (!r->cells[x].ext)
			continue;
		memcpy(r->ext[r->next], old[r->cells[x].cp], sizeof *r->ext);
		r->cells[x].cp = r->next++;
	}
	free(old);
}

/* Stores a combining sequence for cell C of row R. */
static void
pane_grid_ext_set(struct pane_row *r, struct pane_cell *c, const uint32_t *chars,
    size_t n, int reuse)
{
	unsigned idx;

	if (n > PANE_CELL_MAXCHARS)
		n = PANE_CELL_MAXCHARS;
	if (reuse >= 0)
		idx = (unsigned)reuse;
	else {
		if (r->next == r->extcap && r->extcap >= 2 * r->used + 8)
			pane_grid_ext_compact(r);
		if (r->next == r->extcap) {
			r->extcap = r->extcap == 0 ? 8 : r->extcap * 2;
			r->ext = xreallocarray(r->ext, r->extcap, sizeof *r->ext);
		}
		idx = r->next++;
	}
	memset(r->ext[idx], 0, sizeof r->ext[idx]);
	memcpy(r->ext[idx], chars, n * sizeof *chars);
	c->ext = 1;
	c->cp = idx;
}

/* Blanks a wide character that the boundary before column X would cut in two. */
static void
pane_grid_cut(struct pane_row *r, unsigned x)
{
	if (x == 0 || x >= r->used || !r->cells[x].pad || !r->cells[x - 1].wide)
		return;
	r->cells[x - 1].wide = 0;
	r->cells[x - 1].cp = 0;
	r->cells[x - 1].ext = 0;
	r->cells[x].pad = 0;
	r->cells[x].cp = 0;
}

void
pane_grid_set(struct pane_grid *gd, unsigned x, unsigned y,
    const struct pane_cell *c, const uint32_t *chars, size_t nchars)
{
	struct pane_row *r;
	struct pane_cell *dst;
	unsigned w = c->wide ? 2 : 1;
	int oldext;

	if (x >= gd->sx || y >= gd->sy)
		return;
	r = pane_grid_row(gd, (int)y);
	if (w == 1 && chars == NULL && !c->ext && !c->pad &&
	    pane_grid_set_narrow(gd, x, y, c, c->cp))
		return;
	pane_grid_row_reserve(gd, r, x + w > gd->sx ? gd->sx : x + w);
	pane_grid_cut(r, x);
	pane_grid_cut(r, x + w > gd->sx ? gd->sx : x + w);
	dst = &r->cells[x];
	oldext = dst->ext ? (int)dst->cp : -1;
	*dst = *c;
	dst->pad = dst->ext = 0;
	if (x + w > gd->sx) {
		/* No room for both halves: a blank, as a terminal would show. */
		dst->cp = dst->wide = dst->ext = 0;
		w = 1;
	} else if (chars != NULL && nchars > 1)
		pane_grid_ext_set(r, dst, chars, nchars, oldext);
	else if (chars != NULL && nchars == 1)
		dst->cp = chars[0];
	if (w == 2) {
		r->cells[x + 1] = pane_grid_blank;
		r->cells[x + 1].pad = 1;
		r->cells[x + 1].bg = c->bg;
	}
	pane_grid_mark(gd, y, x, x + w);
}

void
pane_grid_put_ascii(struct pane_grid *gd, unsigned y, const char *s, size_t len,
    const struct pane_cell *pen)
{
	struct pane_row *r;
	struct pane_cell *c;
	size_t x;

	if (y >= gd->sy || len > gd->sx)
		return;
	r = pane_grid_row(gd, (int)y);
	if (r->used != 0) {
		/* Over older cells: each one needs the careful treatment. */
		for (x = 0; x < len; x++) {
			if (!pane_grid_set_narrow(gd, (unsigned)x, y, pen,
			    (unsigned char)s[x]))
				pane_grid_set(gd, (unsigned)x, y, &(struct pane_cell){
				    .cp = (unsigned char)s[x], .attr = pen->attr,
				    .fg = pen->fg, .bg = pen->bg }, NULL, 0);
		}
		return;
	}
	pane_grid_row_reserve(gd, r, (unsigned)len);
	for (x = 0, c = r->cells; x < len; x++, c++) {
		*c = *pen;
		c->cp = (unsigned char)s[x];
	}
	pane_grid_mark(gd, y, 0, (unsigned)len);
}

bool
pane_grid_row_is(const struct pane_grid *gd, unsigned y, const char *s,
    size_t len, const struct pane_cell *pen)
{
	const struct pane_row *r;
	const struct pane_cell *c;
	unsigned x;

	if (y >= gd->sy)
		return false;
	r = pane_grid_row(gd, (int)y);
	if (r->used < len)
		return false;
	for (x = 0; x < r->used; x++) {
		c = &r->cells[x];
		if (c->wide || c->pad || c->ext || c->bg != pen->bg)
			return false;
		if (x >= len && c->cp == 0)
			continue;
		if (x >= len || c->cp != (unsigned char)s[x] ||
		    c->attr != pen->attr || c->fg != pen->fg)
			return false;
	}
	return true;
}

/* Blanks cells [X0, X1) of screen row Y. */
static void
pane_grid_erase_row(struct pane_grid *gd, unsigned y, unsigned x0, unsigned x1,
    uint32_t bg)
{
	struct pane_row *r = pane_grid_row(gd, (int)y);
	unsigned x;

	pane_grid_cut(r, x0);
	pane_grid_cut(r, x1);
	pane_grid_mark(gd, y, x0, x1);
	/* Its end is blank now: nothing there goes on in the next row. */
	if (x1 >= gd->sx)
		r->wrapped = 0;
	if (bg == PANE_COLOR_DEFAULT && x1 >= r->used) {
		if (x0 < r->used)
			r->used = x0;
		return;
	}
	pane_grid_row_reserve(gd, r, x1);
	for (x = x0; x < x1; x++) {
		r->cells[x] = pane_grid_blank;
		r->cells[x].bg = bg;
	}
}

void
pane_grid_erase(struct pane_grid *gd, unsigned x0, unsigned y0, unsigned x1,
    unsigned y1, uint32_t bg)
{
	unsigned y;

	if (x1 > gd->sx)
		x1 = gd->sx;
	if (y1 > gd->sy)
		y1 = gd->sy;
	if (x0 >= x1)
		return;
	for (y = y0; y < y1; y++)
		pane_grid_erase_row(gd, y, x0, x1, bg);
}

/* Grows the ring, keeping the logical order (and every row's buffers). */
static void
pane_grid_grow(struct pane_grid *gd, unsigned want)
{
	struct pane_row *rows;
	unsigned cap = gd->cap, i;

	if (want > cap)
		cap = want;
	rows = xcalloc(cap, sizeof *rows);
	for (i = 0; i < gd->cap; i++)
		rows[i] = gd->rows[(gd->first + i) % gd->cap];
	free(gd->rows);
	gd->rows = rows;
	gd->cap = cap;
	gd->first = 0;
}

/*
 * Starts fetching the cells of the row the next scroll will recycle: with
 * a long history it was last touched thousands of lines ago and is out of
 * the cache, and a flood of output writes it as soon as it appears.
 */
static void
pane_grid_prefetch(struct pane_grid *gd)
{
	const struct pane_row *r;
	unsigned i = gd->first + gd->hsize + gd->sy, n, off;

	if (gd->hsize < gd->hlimit && gd->hsize + gd->sy == gd->cap)
		return;
	r = &gd->rows[i >= gd->cap ? i - gd->cap : i];
	n = (r->cap < gd->sx ? r->cap : gd->sx) * (unsigned)sizeof *r->cells;
	for (off = 0; off < n; off += 64)
		__builtin_prefetch((const char *)r->cells + off, 1, 3);
}

/*
 * Scrolls the whole screen up one line: the top row becomes the newest
 * history line (or, once the history is full, the oldest one is recycled)
 * and a blank row appears at the bottom. No cell moves.
 */
static void
pane_grid_push_line(struct pane_grid *gd, uint32_t bg)
{
	if (gd->hsize < gd->hlimit) {
		if (gd->hsize + gd->sy == gd->cap) {
			pane_grid_grow(gd, gd->hlimit + gd->sy < 2 * gd->cap ?
			    gd->hlimit + gd->sy : 2 * gd->cap);
		}
		gd->hsize++;
		gd->scrolled++;
	} else {
		if (++gd->first == gd->cap)
			gd->first = 0;
		if (gd->hlimit != 0)
			gd->scrolled++;
	}
	pane_grid_row_clear(gd, pane_grid_row(gd, (int)gd->sy - 1), bg);
	pane_grid_prefetch(gd);
}

/* Rotates full-width rows [Y0, Y1) up by N (down if negative), blanking the new ones. */
static void
pane_grid_rotate(struct pane_grid *gd, unsigned y0, unsigned y1, int n,
    uint32_t bg)
{
	unsigned h = y1 - y0, k = (unsigned)(n < 0 ? -n : n), i;

	for (i = 0; i < h; i++)
		gd->scratch[i] = *pane_grid_row(gd, (int)(y0 + i));
	for (i = 0; i < h; i++) {
		/* Row i of the region takes what was at i+n, wrapping around. */
		unsigned from = n > 0 ? (i + k) % h : (i + h - k) % h;

		*pane_grid_row(gd, (int)(y0 + i)) = gd->scratch[from];
	}
	for (i = 0; i < k; i++) {
		unsigned y = n > 0 ? y1 - 1 - i : y0 + i;

		pane_grid_row_clear(gd, pane_grid_row(gd, (int)y), bg);
	}
}

/*
 * After cells [X0, X1) of R were overwritten: a wide character just left
 * of them lost its right half, or a right half just after them its left.
 */
static void
pane_grid_mend(struct pane_row *r, unsigned x0, unsigned x1)
{
	if (x0 > 0 && x0 < r->used && r->cells[x0 - 1].wide &&
	    !r->cells[x0].pad) {
		r->cells[x0 - 1].wide = 0;
		r->cells[x0 - 1].cp = 0;
		r->cells[x0 - 1].ext = 0;
	}
	if (x1 > 0 && x1 < r->used && r->cells[x1].pad &&
	    !r->cells[x1 - 1].wide) {
		r->cells[x1].pad = 0;
		r->cells[x1].cp = 0;
	}
}

/* Copies cell SX of row S to DX of row D, moving a combining sequence along. */
static void
pane_grid_copy_cell(struct pane_row *d, unsigned dx, const struct pane_row *s,
    unsigned sx)
{
	const struct pane_cell *c = sx < s->used ? &s->cells[sx] : &pane_grid_blank;

	d->cells[dx] = *c;
	if (c->ext && d != s) {
		/* After the copy, so that a compaction sees the new cell. */
		d->cells[dx].ext = 0;
		pane_grid_ext_set(d, &d->cells[dx], s->ext[c->cp],
		    PANE_CELL_MAXCHARS, -1);
	}
}

void
pane_grid_move(struct pane_grid *gd, unsigned dx, unsigned dy, unsigned sx,
    unsigned sy, unsigned nx, unsigned ny)
{
	unsigned i, j, row, col;
	bool up = dy <= sy, left = dx <= sx;

	if (dx + nx > gd->sx || sx + nx > gd->sx || dy + ny > gd->sy ||
	    sy + ny > gd->sy)
		return;
	for (i = 0; i < ny; i++) {
		struct pane_row *d, *s;

		row = up ? i : ny - 1 - i;
		d = pane_grid_row(gd, (int)(dy + row));
		s = pane_grid_row(gd, (int)(sy + row));
		/* The block moves whole: no wide character crosses its edges. */
		pane_grid_cut(s, sx);
		pane_grid_cut(s, sx + nx);
		pane_grid_row_reserve(gd, d, dx + nx);
		for (j = 0; j < nx; j++) {
			col = left ? j : nx - 1 - j;
			pane_grid_copy_cell(d, dx + col, s, sx + col);
		}
		pane_grid_mend(d, dx, dx + nx);
		pane_grid_mark(gd, dy + row, dx, dx + nx);
	}
}

void
pane_grid_scroll(struct pane_grid *gd, unsigned x0, unsigned y0, unsigned x1,
    unsigned y1, int down, int right, uint32_t bg)
{
	unsigned w, h, ad, ar;
	int i;

	if (x1 > gd->sx)
		x1 = gd->sx;
	if (y1 > gd->sy)
		y1 = gd->sy;
	if (x0 >= x1 || y0 >= y1)
		return;
	w = x1 - x0;
	h = y1 - y0;
	ad = (unsigned)(down < 0 ? -down : down);
	ar = (unsigned)(right < 0 ? -right : right);
	if (ad >= h || ar >= w) {
		pane_grid_erase(gd, x0, y0, x1, y1, bg);
		return;
	}
	if (right == 0 && x0 == 0 && x1 == gd->sx) {
		if (down > 0 && y0 == 0 && y1 == gd->sy) {
			for (i = 0; i < down; i++)
				pane_grid_push_line(gd, bg);
		} else if (down != 0)
			pane_grid_rotate(gd, y0, y1, down, bg);
		if (y0 == 0 && y1 == gd->sy)
			gd->dirty = gd->all_dirty = true;
		else {
			for (i = (int)y0; i < (int)y1; i++)
				pane_grid_mark(gd, (unsigned)i, 0, gd->sx);
		}
		return;
	}
	pane_grid_move(gd, x0 + (right < 0 ? ar : 0), y0 + (down < 0 ? ad : 0),
	    x0 + (right > 0 ? ar : 0), y0 + (down > 0 ? ad : 0), w - ar, h - ad);
	if (down > 0)
		pane_grid_erase(gd, x0, y1 - ad, x1, y1, bg);
	else if (down < 0)
		pane_grid_erase(gd, x0, y0, x1, y0 + ad, bg);
	if (right > 0)
		pane_grid_erase(gd, x1 - ar, y0, x1, y1, bg);
	else if (right < 0)
		pane_grid_erase(gd, x0, y0, x0 + ar, y1, bg);
}

/* Cuts screen rows back to the width, blanking a wide character cut in two. */
static void
pane_grid_fit_width(struct pane_grid *gd)
{
	unsigned y;

	for (y = 0; y < gd->sy; y++) {
		struct pane_row *r = pane_grid_row(gd, (int)y);

		if (r->used <= gd->sx)
			continue;
		r->used = gd->sx;
		if (r->cells[gd->sx - 1].wide) {
			r->cells[gd->sx - 1].wide = 0;
			r->cells[gd->sx - 1].cp = 0;
			r->cells[gd->sx - 1].ext = 0;
		}
	}
}

/*
 * Takes K rows off the screen's height, keeping CURSOR_Y on it: blank rows
 * below the cursor first, then rows above it into the history, then (the
 * cursor at the top) rows below it, as tmux does. Returns the cursor's
 * move, never more than its row: libvterm takes it as it is, and a
 * negative row would have it write outside its own arrays.
 */
static int
pane_grid_shrink(struct pane_grid *gd, unsigned k, unsigned cursor_y)
{
	int delta = 0;

	while (k > 0 && gd->sy - 1 > cursor_y &&
	    pane_grid_row(gd, (int)gd->sy - 1)->used == 0) {
		gd->sy--;
		k--;
	}
	for (; k > 0 && cursor_y > 0; k--, cursor_y--) {
		if (gd->hsize < gd->hlimit)
			gd->hsize++;
		else if (++gd->first == gd->cap)
			gd->first = 0;
		gd->sy--;
		delta--;
	}
	gd->sy -= k;
	return delta;
}

/* Adds K rows to the screen's height, first from the history; returns the cursor's move. */
static int
pane_grid_enlarge(struct pane_grid *gd, unsigned k)
{
	unsigned j = k < gd->hsize ? k : gd->hsize;

	gd->hsize -= j;
	gd->sy += j;
	k -= j;
	if (gd->hsize + gd->sy + k > gd->cap)
		pane_grid_grow(gd, gd->hsize + gd->sy + k);
	for (; k > 0; k--) {
		gd->sy++;
		pane_grid_row_clear(gd, pane_grid_row(gd, (int)gd->sy - 1),
		    PANE_COLOR_DEFAULT);
	}
	return (int)j;
}

int
pane_grid_resize(struct pane_grid *gd, unsigned sx, unsigned sy,
    unsigned cursor_y)
{
	int delta = 0;

	if (sx < 1)
		sx = 1;
	if (sy < 1)
		sy = 1;
	if (cursor_y >= gd->sy)
		cursor_y = gd->sy - 1;
	if (sy < gd->sy)
		delta = pane_grid_shrink(gd, gd->sy - sy, cursor_y);
	else if (sy > gd->sy)
		delta = pane_grid_enlarge(gd, sy - gd->sy);
	gd->sx = sx;
	pane_grid_fit_width(gd);
	pane_grid_alloc_dirty(gd);
	return delta;
}

void
pane_grid_set_lsize(struct pane_grid *gd, unsigned y, enum pane_lsize ls)
{
	struct pane_row *r;

	if (y >= gd->sy)
		return;
	r = pane_grid_row(gd, (int)y);
	if (r->lsize == ls)
		return;
	r->lsize = (uint8_t)ls;
	pane_grid_mark(gd, y, 0, gd->sx);
}

enum pane_lsize
pane_grid_lsize(const struct pane_grid *gd, int y)
{
	if (y < -(int)gd->hsize || y >= (int)gd->sy)
		return PANE_LSIZE_SINGLE;
	return (enum pane_lsize)pane_grid_row(gd, y)->lsize;
}

void
pane_grid_clear_history(struct pane_grid *gd)
{
	gd->first = (gd->first + gd->hsize) % gd->cap;
	gd->hsize = 0;
}

void
pane_grid_add_utf8(struct buf *b, uint32_t cp)
{
	char s[4];
	size_t n;

	/* Surrogates and what lies past U+10FFFF have no UTF-8: left out. */
	if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return;
	if (cp < 0x80) {
		s[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		s[0] = (char)(0xc0 | cp >> 6);
		s[1] = (char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		s[0] = (char)(0xe0 | cp >> 12);
		s[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		s[2] = (char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		s[0] = (char)(0xf0 | cp >> 18);
		s[1] = (char)(0x80 | (cp >> 12 & 0x3f));
		s[2] = (char)(0x80 | (cp >> 6 & 0x3f));
		s[3] = (char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	buf_add(b, s, n);
}

void
pane_grid_row_text(const struct pane_grid *gd, int y, struct buf *b)
{
	const struct pane_row *r;
	uint32_t chars[PANE_CELL_MAXCHARS];
	size_t start = b->len, n, i, keep = b->len;
	unsigned x;

	if (y < -(int)gd->hsize || y >= (int)gd->sy)
		return;
	r = pane_grid_row(gd, y);
	for (x = 0; x < r->used && x < gd->sx; x++) {
		if (r->cells[x].pad)
			continue;
		n = pane_grid_chars(gd, &r->cells[x], y, chars);
		if (n == 0)
			buf_addc(b, ' ');
		for (i = 0; i < n; i++)
			pane_grid_add_utf8(b, chars[i]);
		if (n != 0 && chars[0] != ' ')
			keep = b->len;
	}
	b->len = keep > start ? keep : start;
	if (b->data != NULL)
		b->data[b->len] = '\0';
}

void
pane_grid_set_wrapped(struct pane_grid *gd, int y, bool wrapped)
{
	if (y < -(int)gd->hsize || y >= (int)gd->sy)
		return;
	pane_grid_row(gd, y)->wrapped = wrapped;
}

bool
pane_grid_wrapped(const struct pane_grid *gd, int y)
{
	if (y < -(int)gd->hsize || y >= (int)gd->sy)
		return false;
	return pane_grid_row(gd, y)->wrapped;
}

/*
 * The rows a reflow makes, in order, and where the cursor lands. Rows that
 * need no change are moved in whole (their cells stay where they are), so
 * a long history of short lines costs a copy of its row structs; the rows
 * of a line that is split again give their buffers to the new ones.
 */
struct pane_grid_flow {
	struct pane_grid *gd;
	unsigned sx;
	struct pane_row *rows;
	unsigned n;
	unsigned cap;
	unsigned crow;          /* the cursor's old row, from the oldest */
	unsigned ccol;
	bool found;
	unsigned nrow;          /* and its new place */
	unsigned ncol;

	struct pane_cell *line;  /* the line being split, its cells in a row */
	uint32_t (*lext)[PANE_CELL_MAXCHARS]; /* the combining ones' characters */
	unsigned linecap;
	struct pane_row *pool;   /* old rows whose buffers the new ones take */
	unsigned npool;
	unsigned poolcap;
};

/* Appends a row, with room for a whole line of the new width. */
static struct pane_row *
pane_grid_flow_add(struct pane_grid_flow *fl)
{
	struct pane_row *r;

	if (fl->n == fl->cap) {
		fl->cap = fl->cap * 2 + 16;
		fl->rows = xreallocarray(fl->rows, fl->cap, sizeof *fl->rows);
	}
	r = &fl->rows[fl->n++];
	if (fl->npool > 0)
		*r = fl->pool[--fl->npool];
	else
		memset(r, 0, sizeof *r);
	r->used = r->next = 0;
	r->wrapped = 0;
	r->lsize = PANE_LSIZE_SINGLE;
	if (r->cap < fl->sx) {
		r->cap = fl->sx;
		r->cells = xreallocarray(r->cells, r->cap, sizeof *r->cells);
	}
	return r;
}

/* Moves old row R over unchanged (cut to the width if it is a double-width one). */
static void
pane_grid_flow_move(struct pane_grid_flow *fl, struct pane_row *r, unsigned i)
{
	struct pane_row *d;

	if (fl->n == fl->cap) {
		fl->cap = fl->cap * 2 + 16;
		fl->rows = xreallocarray(fl->rows, fl->cap, sizeof *fl->rows);
	}
	d = &fl->rows[fl->n++];
	*d = *r;
	memset(r, 0, sizeof *r);
	if (d->used > fl->sx) {
		d->used = fl->sx;
		if (d->cells[fl->sx - 1].wide)
			d->cells[fl->sx - 1] = pane_grid_blank;
	}
	if (i == fl->crow) {
		fl->found = true;
		fl->nrow = fl->n - 1;
		fl->ncol = fl->ccol < fl->sx ? fl->ccol : fl->sx - 1;
	}
}

/* Puts cell OFF of the line into the new rows; TARGET is the cursor's offset. */
static void
pane_grid_flow_cell(struct pane_grid_flow *fl, unsigned off, unsigned target)
{
	struct pane_row *d = &fl->rows[fl->n - 1];
	const struct pane_cell *c = &fl->line[off];
	struct pane_cell *dst;
	unsigned w = c->wide ? 2 : 1;

	if (d->used + w > fl->sx && d->used > 0) {
		d->wrapped = 1;
		d = pane_grid_flow_add(fl);
	}
	dst = &d->cells[d->used];
	*dst = *c;
	if (w > fl->sx) {
		/* One column: a wide character cannot show, as in pane_grid_set. */
		dst->wide = dst->ext = 0;
		dst->cp = 0;
		w = 1;
	} else if (c->ext) {
		dst->ext = 0;
		pane_grid_ext_set(d, dst, fl->lext[off], PANE_CELL_MAXCHARS, -1);
	}
	if (target >= off && target < off + w && !fl->found) {
		fl->found = true;
		fl->nrow = fl->n - 1;
		fl->ncol = d->used + (target - off);
	}
	if (w == 2) {
		d->cells[d->used + 1] = pane_grid_blank;
		d->cells[d->used + 1].pad = 1;
		d->cells[d->used + 1].bg = c->bg;
	}
	d->used += w;
}

/* Copies old row S's cells to the end of the line (N cells so far), and gives S to the pool. */
static unsigned
pane_grid_flow_gather(struct pane_grid_flow *fl, struct pane_row *s, unsigned n)
{
	size_t need = (size_t)n + s->used;
	unsigned x;

	if (need > fl->linecap) {
		/* pane_grid_flow_joins keeps a line under PANE_GRID_REFLOW_MAX cells. */
		if (need > UINT_MAX / 2)
			fatalx("reflow: line of %zu cells", need);
		fl->linecap = (unsigned)need * 2;
		fl->line = xreallocarray(fl->line, fl->linecap, sizeof *fl->line);
		fl->lext = xreallocarray(fl->lext, fl->linecap, sizeof *fl->lext);
	}
	if (s->used > 0)
		memcpy(fl->line + n, s->cells, s->used * sizeof *s->cells);
	for (x = 0; x < s->used; x++) {
		if (s->cells[x].ext)
			memcpy(fl->lext[n + x], s->ext[s->cells[x].cp],
			    sizeof *fl->lext);
	}
	if (fl->npool == fl->poolcap) {
		fl->poolcap = fl->poolcap * 2 + 16;
		fl->pool = xreallocarray(fl->pool, fl->poolcap, sizeof *fl->pool);
	}
	fl->pool[fl->npool++] = *s;
	n += s->used;
	memset(s, 0, sizeof *s);
	return n;
}

/* Joins old rows [I, J] (one line, wrapped automatically) and splits it at the new width. */
static void
pane_grid_flow_line(struct pane_grid_flow *fl, unsigned i, unsigned j)
{
	struct pane_row *d;
	unsigned k, n = 0, off, target = UINT_MAX;
	bool here = false, wrapped = false;

	for (k = i; k <= j; k++) {
		struct pane_row *s = pane_grid_row(fl->gd, (int)k - (int)fl->gd->hsize);

		if (k == fl->crow) {
			target = n + fl->ccol;
			here = true;
		}
		wrapped = s->wrapped;
		n = pane_grid_flow_gather(fl, s, n);
	}
	pane_grid_flow_add(fl);
	for (off = 0; off < n; off++) {
		if (!fl->line[off].pad)
			pane_grid_flow_cell(fl, off, target);
	}
	d = &fl->rows[fl->n - 1];
	d->wrapped = wrapped;
	if (here && !fl->found) {
		/* Past the end of the line: as far past the end of its last row. */
		fl->found = true;
		fl->nrow = fl->n - 1;
		fl->ncol = d->used + (target - n);
		if (fl->ncol >= fl->sx)
			fl->ncol = fl->sx - 1;
	}
}

/*
 * True if old row K goes on in row K+1 and both may be joined to a line of
 * *CELLS cells so far, which then counts row K+1's too. A line would pass
 * PANE_GRID_REFLOW_MAX: no, so its next part is rewrapped on its own.
 */
static bool
pane_grid_flow_joins(const struct pane_grid *gd, unsigned k, unsigned end,
    size_t *cells)
{
	const struct pane_row *r = pane_grid_row(gd, (int)k - (int)gd->hsize);

	if (k + 1 >= end || !r->wrapped || r->lsize != PANE_LSIZE_SINGLE)
		return false;
	r = pane_grid_row(gd, (int)k + 1 - (int)gd->hsize);
	if (r->lsize != PANE_LSIZE_SINGLE ||
	    *cells + r->used > PANE_GRID_REFLOW_MAX)
		return false;
	*cells += r->used;
	return true;
}

/* Reflows old rows [0, END) into FL. */
static void
pane_grid_flow_all(struct pane_grid_flow *fl, unsigned end)
{
	struct pane_grid *gd = fl->gd;
	struct pane_row *r;
	unsigned i = 0, j;
	size_t cells;

	while (i < end) {
		r = pane_grid_row(gd, (int)i - (int)gd->hsize);
		cells = r->used;
		for (j = i; pane_grid_flow_joins(gd, j, end, &cells); j++)
			;
		if (i == j && (r->used <= fl->sx || r->lsize != PANE_LSIZE_SINGLE))
			pane_grid_flow_move(fl, r, i);
		else
			pane_grid_flow_line(fl, i, j);
		i = j + 1;
	}
}

/* Frees the buffers of rows [I, J) of ROWS. */
static void
pane_grid_flow_free(struct pane_row *rows, unsigned i, unsigned j)
{
	for (; i < j; i++) {
		free(rows[i].cells);
		free(rows[i].ext);
	}
}

/*
 * Makes the reflowed rows the grid: the screen is the last SY of them
 * (blank rows added below if there are fewer), keeping the cursor's row
 * on it; the oldest rows past the history limit are dropped.
 */
static void
pane_grid_flow_place(struct pane_grid_flow *fl, unsigned sy)
{
	struct pane_grid *gd = fl->gd;
	unsigned n = fl->n, lo = 0, hsize, cap, i;

	if (n > fl->nrow + sy) {
		pane_grid_flow_free(fl->rows, fl->nrow + sy, n);
		n = fl->nrow + sy;
	}
	hsize = n > sy ? n - sy : 0;
	if (hsize > gd->hlimit) {
		lo = hsize - gd->hlimit;
		pane_grid_flow_free(fl->rows, 0, lo);
		hsize = gd->hlimit;
	}
	pane_grid_flow_free(gd->rows, 0, gd->cap);
	free(gd->rows);
	cap = hsize + sy + (gd->hlimit - hsize < 64 ? gd->hlimit - hsize : 64);
	gd->rows = xcalloc(cap, sizeof *gd->rows);
	for (i = lo; i < n; i++)
		gd->rows[i - lo] = fl->rows[i];
	gd->cap = cap;
	gd->first = 0;
	gd->hsize = hsize;
	gd->sy = sy;
	fl->nrow -= lo + hsize;
}

void
pane_grid_reflow(struct pane_grid *gd, unsigned sx, unsigned sy, unsigned *cx,
    unsigned *cy)
{
	struct pane_grid_flow fl = { .gd = gd, .sx = sx < 1 ? 1 : sx };
	unsigned end = gd->hsize + gd->sy;

	sy = sy < 1 ? 1 : sy;
	fl.crow = gd->hsize + (*cy < gd->sy ? *cy : gd->sy - 1);
	fl.ccol = *cx;
	/* Blank rows below the cursor are the screen's, not the text's. */
	while (end > fl.crow + 1 &&
	    pane_grid_row(gd, (int)end - 1 - (int)gd->hsize)->used == 0)
		end--;
	pane_grid_flow_all(&fl, end);
	pane_grid_flow_place(&fl, sy);
	pane_grid_flow_free(fl.pool, 0, fl.npool);
	free(fl.pool);
	free(fl.line);
	free(fl.lext);
	free(fl.rows);
	gd->sx = fl.sx;
	/* Rows of the screen past the reflowed ones start blank. */
	pane_grid_alloc_dirty(gd);
	*cx = fl.ncol;
	*cy = fl.nrow;
}
