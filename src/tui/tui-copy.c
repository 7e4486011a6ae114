/* A pane's copy mode, each client's own: moving through the scrollback, searching it, selecting with keys or the mouse, copying and pasting. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "tui.h"
#include "tui-int.h"

/* Copies past this are cut: the clipboard and a paste are for text, not dumps. */
#define TUI_COPY_MAX (1024 * 1024)

/* Lines are numbered by the grid's scroll counter, so they stay put as output scrolls them. */
static int64_t
tui_copy_line(struct pane_grid *gd, int y)
{
	return (int64_t)pane_grid_scrolled(gd) + y;
}

/* Row of LINE now, kept on the grid (the oldest history row at worst). */
static int
tui_copy_row(struct pane_grid *gd, int64_t line)
{
	int64_t y = line - (int64_t)pane_grid_scrolled(gd);

	if (y < -(int64_t)pane_grid_hsize(gd))
		y = -(int64_t)pane_grid_hsize(gd);
	if (y >= (int64_t)pane_grid_sy(gd))
		y = (int64_t)pane_grid_sy(gd) - 1;
	return (int)y;
}

static struct pane_grid *
tui_copy_grid(struct tui_pane *wp)
{
	return pane_grid(wp->pane);
}

/* Rows of the grid the pane shows. */
static unsigned
tui_copy_rows(struct tui_pane *wp)
{
	unsigned sy = pane_grid_sy(tui_copy_grid(wp));

	return wp->r.sy < sy ? wp->r.sy : sy;
}

/* Scrolls the view so that the cursor's row shows. */
static void
tui_copy_show(struct tui_pane *wp)
{
	struct pane_grid *gd = tui_copy_grid(wp);
	struct tui_pane_view *v = tui_pane_view(wp);
	int y = tui_copy_row(gd, v->copy->cline), rows = (int)tui_copy_rows(wp);
	int off = (int)v->offset;

	if (y < -off)
		off = -y;
	else if (y > rows - 1 - off)
		off = rows - 1 - y;
	if (off < 0)
		off = 0;
	if (off > (int)pane_grid_hsize(gd))
		off = (int)pane_grid_hsize(gd);
	v->offset = (unsigned)off;
	v->scrolled = pane_grid_scrolled(gd);
	wp->redraw = true;
	tui_redraw(wp->t);
}

void
tui_copy_free(struct tui_copy *cp)
{
	if (cp == NULL)
		return;
	buf_free(&cp->typed);
	free(cp->query);
	free(cp);
}

/* Enters copy mode in the current client's look at WP (only there). */
void
tui_copy_enter(struct tui_pane *wp)
{
	struct pane_grid *gd = tui_copy_grid(wp);
	struct tui_pane_view *v = tui_pane_view(wp);
	unsigned cx, cy;

	if (v->copy != NULL)
		return;
	v->copy = xcalloc(1, sizeof *v->copy);
	pane_cursor(wp->pane, &cx, &cy);
	v->copy->cline = tui_copy_line(gd, (int)cy);
	v->copy->cx = cx;
	v->scrolled = pane_grid_scrolled(gd);
	wp->redraw = true;
}

void
tui_copy_clamp(struct tui_pane *wp)
{
	struct pane_grid *gd = tui_copy_grid(wp);
	struct tui_pane_view *v = tui_pane_view(wp);
	int y, top = -(int)v->offset, bottom;

	if (v->copy == NULL)
		return;
	y = tui_copy_row(gd, v->copy->cline);
	bottom = top + (int)tui_copy_rows(wp) - 1;
	if (y < top)
		v->copy->cline = tui_copy_line(gd, top);
	else if (y > bottom)
		v->copy->cline = tui_copy_line(gd, bottom);
}

void
tui_copy_leave(struct tui_pane *wp)
{
	struct tui_pane_view *v = tui_pane_view(wp);

	tui_copy_free(v->copy);
	v->copy = NULL;
	v->offset = 0;
	wp->redraw = true;
	tui_redraw(wp->t);
}

/* The selection's ends in order, as rows of the grid now and columns. */
static void
tui_copy_ends(struct tui_pane *wp, int *y0, unsigned *x0, int *y1,
    unsigned *x1)
{
	struct pane_grid *gd = tui_copy_grid(wp);
	struct tui_copy *cp = tui_pane_view(wp)->copy;
	int a = tui_copy_row(gd, cp->sline), b = tui_copy_row(gd, cp->cline);

	if (a < b || (a == b && cp->sx <= cp->cx)) {
		*y0 = a;
		*x0 = cp->sx;
		*y1 = b;
		*x1 = cp->cx;
	} else {
		*y0 = b;
		*x0 = cp->cx;
		*y1 = a;
		*x1 = cp->sx;
	}
	if (cp->lines) {
		*x0 = 0;
		*x1 = pane_grid_sx(gd) - 1;
	}
}

/* Columns [*X0, *X1) of row Y inside the selection; false if none. */
static bool
tui_copy_selected(struct tui_pane *wp, int y, unsigned *x0, unsigned *x1)
{
	unsigned sx = pane_grid_sx(tui_copy_grid(wp)), a, b;
	int y0, y1;

	if (!tui_pane_view(wp)->copy->selecting)
		return false;
	tui_copy_ends(wp, &y0, &a, &y1, &b);
	if (y < y0 || y > y1)
		return false;
	*x0 = y == y0 ? a : 0;
	*x1 = y == y1 ? b + 1 : sx;
	if (*x1 > sx)
		*x1 = sx;
	return *x0 < *x1;
}

/* Appends the cell at X of row Y as UTF-8, leaving out what must never be pasted or sent. */
static void
tui_copy_add_cell(struct pane_grid *gd, unsigned x, int y, struct buf *b)
{
	const struct pane_cell *c = pane_grid_cell(gd, x, y);
	uint32_t chars[PANE_CELL_MAXCHARS];
	size_t n, i;

	if (c->pad)
		return;
	n = pane_grid_chars(gd, c, y, chars);
	/* What the pane draws as blanks is copied as blanks: no hidden text in a paste. */
	if (n == 0 || tui_render_hidden(c)) {
		buf_add(b, "  ", c->wide ? 2 : 1);
		return;
	}
	for (i = 0; i < n; i++) {
		/* Controls, C1, bidi and invisible characters: left out. */
		if (!quote_cp_unsafe(chars[i]))
			pane_grid_add_utf8(b, chars[i]);
	}
}

/*
 * Appends columns [X0, X1) of row Y: trailing blanks are dropped, and a
 * newline ends the row unless the line wrapped there (LAST: no newline
 * after it unless NL).
 */
static void
tui_copy_add_row(struct pane_grid *gd, int y, unsigned x0, unsigned x1,
    bool last, bool nl, struct buf *b)
{
	bool wrapped = pane_grid_wrapped(gd, y) && x1 >= pane_grid_sx(gd);
	size_t start = b->len, keep = b->len;
	unsigned x;

	for (x = x0; x < x1; x++) {
		tui_copy_add_cell(gd, x, y, b);
		if (b->len > start && b->data[b->len - 1] != ' ')
			keep = b->len;
	}
	if (!wrapped || last)
		b->len = keep;
	if ((!last && !wrapped) || nl)
		buf_addc(b, '\n');
}

AM_TESTABLE void
tui_copy_text(struct pane_grid *gd, int y0, unsigned x0, int y1, unsigned x1,
    bool lines, struct buf *b)
{
	unsigned sx = pane_grid_sx(gd);
	int y;

	if (lines) {
		x0 = 0;
		x1 = sx - 1;
	}
	for (y = y0; y <= y1 && b->len < TUI_COPY_MAX; y++) {
		tui_copy_add_row(gd, y, y == y0 ? x0 : 0,
		    y == y1 ? (x1 + 1 < sx ? x1 + 1 : sx) : sx, y == y1, lines &&
		    y == y1, b);
	}
	if (b->len > TUI_COPY_MAX) {
		/* Cut before the character the limit falls in, never inside it. */
		b->len = TUI_COPY_MAX;
		while (b->len > 0 && ((unsigned char)b->data[b->len] & 0xc0) == 0x80)
			b->len--;
	}
	if (b->data != NULL)
		b->data[b->len] = '\0';
}

AM_TESTABLE void
tui_copy_base64(const char *s, size_t n, struct buf *b)
{
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "abcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char *p = (const unsigned char *)s;
	uint32_t v;
	size_t i;

	for (i = 0; i + 2 < n; i += 3) {
		v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
		buf_addc(b, tab[v >> 18 & 63]);
		buf_addc(b, tab[v >> 12 & 63]);
		buf_addc(b, tab[v >> 6 & 63]);
		buf_addc(b, tab[v & 63]);
	}
	if (i < n) {
		v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0);
		buf_addc(b, tab[v >> 18 & 63]);
		buf_addc(b, tab[v >> 12 & 63]);
		buf_addc(b, i + 1 < n ? tab[v >> 6 & 63] : '=');
		buf_addc(b, '=');
	}
	if (b->data != NULL)
		b->data[b->len] = '\0';
}

/* Sends TEXT to the outer terminal's clipboard (OSC 52): base64, so no byte of it is a control. */
static void
tui_copy_clipboard(struct tui *t, const char *text, size_t len)
{
	struct buf b;

	buf_init(&b);
	buf_adds(&b, "\033]52;c;");
	tui_copy_base64(text, len, &b);
	buf_adds(&b, "\a");
	/* raw: OSC 52 around base64, which has no control byte */
	if (t->c->scr != NULL)
		tui_screen_write(t->c->scr, b.data, b.len);
	buf_free(&b);
}

/* Copies the selection into the paste buffer (and the clipboard), and leaves copy mode. */
static void
tui_copy_take(struct tui_pane *wp)
{
	struct tui *t = wp->t;
	int y0, y1;
	unsigned x0, x1;

	tui_copy_ends(wp, &y0, &x0, &y1, &x1);
	buf_reset(&t->paste);
	buf_adds(&t->paste, "");
	tui_copy_text(tui_copy_grid(wp), y0, x0, y1, x1,
	    tui_pane_view(wp)->copy->lines, &t->paste);
	if (t->cf->ui.clipboard && t->paste.len > 0)
		tui_copy_clipboard(t, t->paste.data, t->paste.len);
	tui_reply(t, false, "copied %zu bytes: %s ] pastes them", t->paste.len,
	    t->cf->ui.prefix);
	tui_copy_leave(wp);
}

void
tui_copy_paste(struct tui *t, struct tui_pane *wp)
{
	struct buf b;
	size_t i;

	if (t->paste.len == 0) {
		tui_reply(t, false, "nothing copied yet: select in the "
		    "scrollback (%s [) with Space, copy with Enter",
		    t->cf->ui.prefix);
		return;
	}
	if (wp == NULL || wp->s == NULL || wp->exited)
		return;
	/* As a terminal pastes: line ends as Enter keys. */
	buf_init(&b);
	for (i = 0; i < t->paste.len; i++)
		buf_addc(&b, t->paste.data[i] == '\n' ? '\r' : t->paste.data[i]);
	pane_paste(wp->pane, b.data, b.len);
	buf_free(&b);
}

/* ---- search ---- */

/* The code points of row Y and the column of each (combining ones left out). */
static size_t
tui_copy_row_cps(struct pane_grid *gd, int y, uint32_t *cps, unsigned *cols)
{
	uint32_t chars[PANE_CELL_MAXCHARS];
	unsigned x, sx = pane_grid_sx(gd);
	size_t n = 0;
	const struct pane_cell *c;

	for (x = 0; x < sx; x++) {
		c = pane_grid_cell(gd, x, y);
		if (c->pad)
			continue;
		cps[n] = pane_grid_chars(gd, c, y, chars) == 0 ? ' ' : chars[0];
		cols[n++] = x;
	}
	return n;
}

static uint32_t
tui_copy_fold(uint32_t c, bool fold)
{
	return fold && c >= 'A' && c <= 'Z' ? c + 0x20 : c;
}

/* True if Q (NQ code points) is at CPS[I]; all-lowercase queries ignore case. */
static bool
tui_copy_at(const uint32_t *cps, size_t n, size_t i, const uint32_t *q,
    size_t nq, bool fold)
{
	size_t j;

	if (i + nq > n)
		return false;
	for (j = 0; j < nq; j++) {
		if (tui_copy_fold(cps[i + j], fold) != q[j])
			return false;
	}
	return true;
}

/* The query's code points; FOLD when it has no capital. */
static size_t
tui_copy_query(const char *s, uint32_t *q, size_t max, bool *fold)
{
	size_t n = 0, len = strlen(s), k;
	uint32_t cp;

	*fold = true;
	while (len > 0 && n < max) {
		if ((k = quote_utf8_decode(s, len, &cp)) == 0) {
			cp = (unsigned char)*s;
			k = 1;
		}
		if (cp >= 'A' && cp <= 'Z')
			*fold = false;
		q[n++] = cp;
		s += k;
		len -= k;
	}
	return n;
}

/*
 * The matches of QUERY (Q, NQ code points) in row Y, at most MAX, left to
 * right, into M; their number. Matches in a row do not overlap.
 */
static size_t
tui_copy_row_matches(struct pane_grid *gd, int y, const uint32_t *q, size_t nq,
    bool fold, struct tui_copy_match *m, size_t max)
{
	unsigned sx = pane_grid_sx(gd), *cols;
	uint32_t *cps;
	size_t n, k, found = 0;

	if (nq == 0)
		return 0;
	cols = xreallocarray(NULL, sx + 1, sizeof *cols);
	cps = xreallocarray(NULL, sx + 1, sizeof *cps);
	n = tui_copy_row_cps(gd, y, cps, cols);
	for (k = 0; k + nq <= n && found < max; k++) {
		if (!tui_copy_at(cps, n, k, q, nq, fold))
			continue;
		m[found].y = y;
		m[found].x = cols[k];
		m[found++].w = (k + nq < n ? cols[k + nq] : sx) - cols[k];
		k += nq - 1;
	}
	free(cols);
	free(cps);
	return found;
}

/* In row Y's matches M (N of them), the first after column X (the last before it if BACKWARD). */
static const struct tui_copy_match *
tui_copy_pick(const struct tui_copy_match *m, size_t n, unsigned x,
    bool backward, bool any)
{
	size_t i;

	for (i = 0; i < n; i++) {
		const struct tui_copy_match *c = backward ? &m[n - 1 - i] : &m[i];

		if (any || (backward ? c->x < x : c->x > x))
			return c;
	}
	return NULL;
}

/*
 * Looks for QUERY from (X, Y) on, forward or BACKWARD, round the history
 * and screen of GD once. True with the match in *OUT; *WRAPPED if it came
 * round the end.
 */
AM_TESTABLE bool
tui_copy_find(struct pane_grid *gd, const char *query, int y, unsigned x,
    bool backward, struct tui_copy_match *out, bool *wrapped)
{
	unsigned nrows = pane_grid_hsize(gd) + pane_grid_sy(gd), i;
	struct tui_copy_match *m = xreallocarray(NULL, pane_grid_sx(gd) + 1,
	    sizeof *m);
	const struct tui_copy_match *c = NULL;
	uint32_t q[256];
	bool fold;
	size_t nq = tui_copy_query(query, q, nitems(q), &fold), n;
	int top = -(int)pane_grid_hsize(gd), row = y;

	*wrapped = false;
	for (i = 0; i <= nrows && c == NULL; i++) {
		n = tui_copy_row_matches(gd, row, q, nq, fold, m,
		    pane_grid_sx(gd) + 1);
		/* The cursor's row: after it first, all of it last. */
		c = tui_copy_pick(m, n, x, backward, i != 0);
		if (c != NULL)
			break;
		row += backward ? -1 : 1;
		if (row >= (int)pane_grid_sy(gd) || row < top) {
			row = backward ? (int)pane_grid_sy(gd) - 1 : top;
			*wrapped = true;
		}
	}
	if (c != NULL)
		*out = *c;
	else
		*wrapped = false;
	free(m);
	return c != NULL;
}

/* Goes to the next match of the query (the other way with REVERSE). */
static void
tui_copy_next(struct tui_pane *wp, bool reverse)
{
	struct tui_copy *cp = tui_pane_view(wp)->copy;
	struct pane_grid *gd = tui_copy_grid(wp);
	struct tui_copy_match m;
	bool back = cp->back != reverse, wrapped;
	char *q;

	if (cp->query == NULL) {
		tui_reply(wp->t, false, "no search yet: / searches down, ? up");
		return;
	}
	if (!tui_copy_find(gd, cp->query, tui_copy_row(gd, cp->cline), cp->cx,
	    back, &m, &wrapped)) {
		q = quote_name(cp->query);
		tui_reply(wp->t, false, "not found: %s", q);
		free(q);
		return;
	}
	if (wrapped)
		tui_reply(wp->t, false, "search wrapped round to the %s",
		    back ? "bottom" : "top");
	cp->cline = tui_copy_line(gd, m.y);
	cp->cx = m.x;
	tui_copy_show(wp);
}

/* A key while the search is typed. */
static void
tui_copy_type(struct tui_pane *wp, const struct tui_key *k)
{
	struct tui_copy *cp = tui_pane_view(wp)->copy;
	struct tui_line l = { .text = cp->typed };

	if (k->code == 0x1b || (k->code == 0x7f && cp->typed.len == 0)) {
		cp->typing = false;
	} else if (k->code == '\r') {
		cp->typing = false;
		if (cp->typed.len > 0) {
			free(cp->query);
			cp->query = xstrdup(cp->typed.data);
			cp->back = cp->typing_back;
			tui_copy_next(wp, false);
		}
	} else {
		tui_line_key(&l, k);
		cp->typed = l.text;
	}
	wp->redraw = true;
	tui_redraw(wp->t);
}

/* ---- keys ---- */

/* Moves the cursor DY rows and DX columns (or to column X when X >= 0). */
static void
tui_copy_move(struct tui_pane *wp, int dy, int dx, int x)
{
	struct tui_copy *cp = tui_pane_view(wp)->copy;
	struct pane_grid *gd = tui_copy_grid(wp);
	int y = tui_copy_row(gd, cp->cline) + dy, nx = (int)cp->cx + dx;

	if (y < -(int)pane_grid_hsize(gd))
		y = -(int)pane_grid_hsize(gd);
	if (y >= (int)pane_grid_sy(gd))
		y = (int)pane_grid_sy(gd) - 1;
	if (x >= 0)
		nx = x;
	if (nx < 0)
		nx = 0;
	if (nx >= (int)pane_grid_sx(gd))
		nx = (int)pane_grid_sx(gd) - 1;
	cp->cline = tui_copy_line(gd, y);
	cp->cx = (unsigned)nx;
	tui_copy_show(wp);
}

/* The column after the last character of the cursor's row. */
static int
tui_copy_eol(struct tui_pane *wp)
{
	struct pane_grid *gd = tui_copy_grid(wp);
	int y = tui_copy_row(gd, tui_pane_view(wp)->copy->cline), x;

	for (x = (int)pane_grid_sx(gd) - 1; x > 0; x--) {
		const struct pane_cell *c = pane_grid_cell(gd, (unsigned)x, y);

		if (c->pad || c->ext || (c->cp != 0 && c->cp != ' '))
			break;
	}
	return x;
}

/* Space starts a selection, v makes it whole lines, Enter copies it. */
static bool
tui_copy_select_key(struct tui_pane *wp, const struct tui_key *k)
{
	struct tui_copy *cp = tui_pane_view(wp)->copy;

	switch (k->code) {
	case ' ':
	case 'v':
		cp->selecting = true;
		cp->lines = k->code == 'v';
		cp->sline = cp->cline;
		cp->sx = cp->cx;
		break;
	case '\r':
	case 'y':
		if (cp->selecting)
			tui_copy_take(wp);
		else
			tui_reply(wp->t, false, "nothing selected: Space "
			    "starts a selection");
		return true;
	default:
		return false;
	}
	wp->redraw = true;
	tui_redraw(wp->t);
	return true;
}

/* Keys that move: vi's and the arrows. */
static bool
tui_copy_move_key(struct tui_pane *wp, const struct tui_key *k)
{
	int page = (int)(tui_copy_rows(wp) > 1 ? tui_copy_rows(wp) - 1 : 1);
	struct pane_grid *gd = tui_copy_grid(wp);

	switch (k->code) {
	case TUI_KEY_UP:
	case 'k':
		tui_copy_move(wp, -1, 0, -1);
		return true;
	case TUI_KEY_DOWN:
	case 'j':
		tui_copy_move(wp, 1, 0, -1);
		return true;
	case TUI_KEY_LEFT:
	case 'h':
		tui_copy_move(wp, 0, -1, -1);
		return true;
	case TUI_KEY_RIGHT:
	case 'l':
		tui_copy_move(wp, 0, 1, -1);
		return true;
	case '0':
	case TUI_KEY_HOME:
		tui_copy_move(wp, 0, 0, 0);
		return true;
	case '$':
	case TUI_KEY_END:
		tui_copy_move(wp, 0, 0, tui_copy_eol(wp));
		return true;
	case TUI_KEY_PAGEUP:
	case 'b':
	case 0x02:
		tui_copy_move(wp, -page, 0, -1);
		return true;
	case TUI_KEY_PAGEDOWN:
	case 0x06:
		tui_copy_move(wp, page, 0, -1);
		return true;
	case 'g':
		tui_copy_move(wp, -(int)(pane_grid_hsize(gd) + pane_grid_sy(gd)), 0,
		    0);
		return true;
	case 'G':
		tui_copy_move(wp, (int)(pane_grid_hsize(gd) + pane_grid_sy(gd)), 0,
		    0);
		return true;
	}
	return false;
}

bool
tui_copy_key(struct tui_pane *wp, const struct tui_key *k)
{
	struct tui_copy *cp = tui_pane_view(wp)->copy;

	if (cp == NULL)
		return false;
	if (cp->typing) {
		tui_copy_type(wp, k);
		return true;
	}
	if (tui_copy_move_key(wp, k) || tui_copy_select_key(wp, k))
		return true;
	switch (k->code) {
	case '/':
	case '?':
		cp->typing = true;
		cp->typing_back = k->code == '?';
		buf_reset(&cp->typed);
		buf_adds(&cp->typed, "");
		break;
	case 'n':
	case 'N':
		tui_copy_next(wp, k->code == 'N');
		break;
	case 0x1b:
		if (cp->selecting) {
			cp->selecting = false;
			break;
		}
		tui_copy_leave(wp);
		return true;
	case 'q':
		tui_copy_leave(wp);
		return true;
	default:
		return true;
	}
	wp->redraw = true;
	tui_redraw(wp->t);
	return true;
}

/* ---- the mouse ---- */

/* Puts the cursor at the pane's cell (X, Y) of the view, scrolling at its edges. */
static void
tui_copy_point(struct tui_pane *wp, int x, int y)
{
	struct pane_grid *gd = tui_copy_grid(wp);
	struct tui_pane_view *v = tui_pane_view(wp);
	int rows = (int)tui_copy_rows(wp);

	if (y < 0 && v->offset < pane_grid_hsize(gd))
		v->offset++;
	else if (y >= rows && v->offset > 0)
		v->offset--;
	y = y < 0 ? 0 : y >= rows ? rows - 1 : y;
	x = x < 0 ? 0 : x >= (int)pane_grid_sx(gd) ? (int)pane_grid_sx(gd) - 1 : x;
	v->copy->cline = tui_copy_line(gd, y - (int)v->offset);
	v->copy->cx = (unsigned)x;
	tui_copy_show(wp);
}

bool
tui_copy_mouse(struct tui_pane *wp, const struct tui_mouse *m, int x, int y)
{
	struct tui_copy *cp;

	switch (m->type) {
	case TUI_MOUSE_PRESS:
		if (m->button != 1)
			return false;
		tui_copy_enter(wp);
		cp = tui_pane_view(wp)->copy;
		tui_copy_point(wp, x, y);
		cp->dragging = true;
		cp->selecting = true;
		cp->lines = false;
		cp->sline = cp->cline;
		cp->sx = cp->cx;
		cp->moved = false;
		return true;
	case TUI_MOUSE_DRAG:
		if ((cp = tui_pane_view(wp)->copy) == NULL || !cp->dragging)
			return false;
		tui_copy_point(wp, x, y);
		cp->moved = true;
		return true;
	case TUI_MOUSE_RELEASE:
		if ((cp = tui_pane_view(wp)->copy) == NULL || !cp->dragging)
			return false;
		cp->dragging = false;
		if (cp->moved)
			tui_copy_take(wp);
		else if (tui_pane_view(wp)->offset == 0)
			tui_copy_leave(wp);
		else
			cp->selecting = false;
		return true;
	case TUI_MOUSE_WHEEL_UP:
	case TUI_MOUSE_WHEEL_DOWN:
		break;
	}
	return false;
}

struct tui_pane *
tui_copy_dragging(struct tui *t)
{
	struct tui_pane_view *v;
	size_t i;

	/* The current client's drag: another's button is its own. */
	for (i = 0; i < t->c->npviews; i++) {
		v = t->c->pviews[i];
		if (v->copy != NULL && v->copy->dragging)
			return v->wp;
	}
	return NULL;
}

/* ---- drawing ---- */

/* Shows every match of the query on view row VY (grid row Y). */
static void
tui_copy_draw_matches(struct tui_pane *wp, unsigned vy, int y)
{
	struct pane_grid *gd = tui_copy_grid(wp);
	struct tui_copy_match *m;
	uint32_t q[256];
	bool fold;
	size_t nq = tui_copy_query(tui_pane_view(wp)->copy->query, q, nitems(q),
	    &fold), n, i;

	m = xreallocarray(NULL, pane_grid_sx(gd) + 1, sizeof *m);
	n = tui_copy_row_matches(gd, y, q, nq, fold, m, pane_grid_sx(gd) + 1);
	for (i = 0; i < n; i++) {
		tui_screen_draw_cells(wp->t->c->scr, gd, &wp->r, vy, y, m[i].x,
		    m[i].x + m[i].w, !pane_reverse(wp->pane));
	}
	free(m);
}

/* What copy mode shows over the pane: the selection, the matches, where it is. */
void
tui_copy_draw(struct tui_pane *wp)
{
	struct pane_grid *gd = tui_copy_grid(wp);
	struct tui_pane_view *v = tui_pane_view(wp);
	struct tui_copy *cp = v->copy;
	unsigned vy, x0, x1, w = wp->r.sx < 40 ? wp->r.sx : 40;
	int y;

	if (cp == NULL)
		return;
	for (vy = 0; vy < tui_copy_rows(wp); vy++) {
		y = (int)vy - (int)v->offset;
		if (cp->query != NULL)
			tui_copy_draw_matches(wp, vy, y);
		if (tui_copy_selected(wp, y, &x0, &x1))
			tui_screen_draw_cells(wp->t->c->scr, gd, &wp->r, vy, y,
			    x0, x1, !pane_reverse(wp->pane));
	}
	if (cp->typing) {
		tui_screen_printf(wp->t->c->scr, wp->r.x + wp->r.sx - w,
		    wp->r.y, w, TUI_STYLE_SELECTED, "search %s: %s",
		    cp->typing_back ? "up" : "down",
		    cp->typed.data != NULL ? cp->typed.data : "");
		return;
	}
	tui_screen_printf(wp->t->c->scr, wp->r.x + wp->r.sx - w, wp->r.y, w,
	    TUI_STYLE_SELECTED, "[%u/%u] %s q: back", v->offset,
	    pane_grid_hsize(gd),
	    cp->selecting ? "Enter: copy" : "/ ? n N Space");
}

bool
tui_copy_cursor(struct tui_pane *wp, unsigned *x, unsigned *y)
{
	struct pane_grid *gd = tui_copy_grid(wp);
	struct tui_pane_view *v = tui_pane_view(wp);
	int vy;

	if (v->copy == NULL)
		return false;
	if (v->copy->typing) {
		/* In the search being typed, after its last character. */
		*y = 0;
		*x = wp->r.sx - 1;
		return false;
	}
	vy = tui_copy_row(gd, v->copy->cline) + (int)v->offset;
	if (vy < 0 || vy >= (int)tui_copy_rows(wp) || v->copy->cx >= wp->r.sx)
		return false;
	*x = v->copy->cx;
	*y = (unsigned)vy;
	return true;
}
