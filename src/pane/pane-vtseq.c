/* The sequences a pane handles in front of libvterm: those libvterm 0.1.4 gets wrong or lacks, judged against xterm. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vterm.h>

#include "core/core.h"
#include "pane-int.h"

/*
 * A scanner follows the output as libvterm's parser does. At the final
 * byte of each sequence it decides: libvterm handles it alone, libvterm
 * handles it and something follows here (faint, concealed, DECSC), or it
 * is handled here instead (several modes at once, DECRC, DECALN, refused
 * scroll regions, REP after a control, window reports). Only a sequence
 * handled here costs a break in what libvterm is given.
 */
enum pane_vtseq_verdict {
	PANE_VTSEQ_PASS,
	PANE_VTSEQ_AFTER,
	PANE_VTSEQ_OWN,
};

/* Where a read stands: given to libvterm up to FROM; the open sequence began at START. */
struct pane_vtseq_buf {
	const char *from;
	const char *start;
	const char *p;
	const char *end;
};

static const struct pane_vtsave pane_vtseq_defaults = {
	.g = { 'B', 'B', 'B', 'B' },
};

void
pane_vtseq_init(struct pane *vt)
{
	memset(&vt->seq, 0, sizeof vt->seq);
	vt->now = vt->saved[0] = vt->saved[1] = pane_vtseq_defaults;
	vt->graphic = false;
	vt->cursor_shape = PANE_CURSOR_DEFAULT;
}

bool
pane_vtseq_plain(const struct pane *vt)
{
	return vt->seq.state == PANE_VTSEQ_GROUND && !vt->seq.c2 &&
	    vt->now.g[vt->now.gl] == 'B';
}

/* Gives libvterm what comes before the open sequence, then its held bytes, then the read up to UPTO. */
static void
pane_vtseq_flush(struct pane *vt, struct pane_vtseq_buf *b,
    const char *upto)
{
	const char *start = b->start != NULL ? b->start : upto;

	if (start > b->from)
		pane_input(vt, b->from, (size_t)(start - b->from));
	if (vt->seq.nheld > 0) {
		pane_input(vt, vt->seq.held, vt->seq.nheld);
		vt->seq.nheld = 0;
	}
	if (upto > start)
		pane_input(vt, start, (size_t)(upto - start));
	b->from = upto;
	b->start = NULL;
}

static void
pane_vtseq_begin(struct pane *vt, struct pane_vtseq_buf *b, const char *at,
    bool odd)
{
	struct pane_vtseq *sq = &vt->seq;

	sq->state = PANE_VTSEQ_ESC;
	sq->leader = sq->inter = 0;
	sq->nparams = sq->nsep = sq->ndigits = 0;
	sq->odd = odd;
	sq->drop = false;
	b->start = at;
}

/*
 * The parameters: up to MAX numbers, -1 for one left out, -2 for one with
 * sub-parameters (38:2:1:2:3). Returns how many there were.
 */
static size_t
pane_vtseq_args(const struct pane_vtseq *sq, int *args, size_t max)
{
	size_t n = 0, i;
	long v = -1;
	bool sub = false;

	for (i = 0; i <= sq->nparams; i++) {
		char c = i < sq->nparams ? sq->params[i] : ';';

		if (c == ';') {
			if (n < max)
				args[n++] = sub ? -2 : (int)v;
			v = -1;
			sub = false;
		} else if (c == ':')
			sub = true;
		else
			v = (v < 0 ? 0 : v > 99999 ? 99999 : v * 10) + (c - '0');
	}
	return n;
}

/* ---- SGR: faint and concealed, which libvterm 0.1.4 ignores ---- */

static enum pane_vtseq_verdict
pane_vtseq_sgr(struct pane *vt, struct pane_vtsave *to)
{
	int args[PANE_VTSEQ_MAX];
	size_t n = pane_vtseq_args(&vt->seq, args, nitems(args)), i;

	*to = vt->now;
	for (i = 0; i < n; i++) {
		switch (args[i]) {
		case -1:
		case 0:
			to->dim = to->conceal = false;
			break;
		case 2:
			to->dim = true;
			break;
		case 22:
			to->dim = false;
			break;
		case 8:
			to->conceal = true;
			break;
		case 28:
			to->conceal = false;
			break;
		case 38:
		case 48:
		case 58:
			/* 5;N or 2;R;G;B follow: colours, not attributes. */
			if (i + 1 < n)
				i += args[i + 1] == 5 ? 2 : args[i + 1] == 2 ? 4 : 1;
			break;
		}
	}
	if (to->dim == vt->now.dim && to->conceal == vt->now.conceal)
		return PANE_VTSEQ_PASS;
	return PANE_VTSEQ_AFTER;
}

static void
pane_vtseq_set_extras(struct pane *vt, bool dim, bool conceal)
{
	vt->now.dim = dim;
	vt->now.conceal = conceal;
	pane_pen_flag(vt, PANE_ATTR_DIM, dim);
	pane_pen_flag(vt, PANE_ATTR_CONCEAL, conceal);
}

/* ---- DECSC and DECRC ---- */

static struct pane_vtsave *
pane_vtseq_slot(struct pane *vt)
{
	return &vt->saved[vt->cur == vt->alt];
}

static void
pane_vtseq_save(struct pane *vt)
{
	struct pane_vtsave *s = pane_vtseq_slot(vt);

	*s = vt->now;
	s->cx = vt->cx;
	s->cy = vt->cy;
	s->pen = vt->pen;
}

/* Appends ;38;5;N, ;38;2;R;G;B or nothing (the default) for colour C. */
static void
pane_vtseq_sgr_color(struct buf *b, uint32_t c, int base)
{
	switch (PANE_COLOR_TYPE(c)) {
	case PANE_COLOR_INDEXED:
		buf_printf(b, ";%d;5;%u", base, c & 0xff);
		break;
	case PANE_COLOR_RGB:
		buf_printf(b, ";%d;2;%u;%u;%u", base, c >> 16 & 0xff,
		    c >> 8 & 0xff, c & 0xff);
		break;
	}
}

/* The SGR sequence that sets libvterm's pen to PEN. */
static void
pane_vtseq_sgr_of(struct buf *b, const struct pane_cell *pen)
{
	static const struct {
		unsigned attr;
		const char *sgr;
	} map[] = {
		{ PANE_ATTR_BOLD, ";1" }, { PANE_ATTR_ITALIC, ";3" },
		{ PANE_ATTR_UNDERLINE, ";4" }, { PANE_ATTR_BLINK, ";5" },
		{ PANE_ATTR_REVERSE, ";7" }, { PANE_ATTR_STRIKE, ";9" },
	};
	size_t i;

	buf_adds(b, "\033[0");
	for (i = 0; i < nitems(map); i++) {
		if (pen->attr & map[i].attr)
			buf_adds(b, map[i].sgr);
	}
	pane_vtseq_sgr_color(b, pen->fg, 38);
	pane_vtseq_sgr_color(b, pen->bg, 48);
	buf_addc(b, 'm');
}

/*
 * DECRC: libvterm is given what puts the saved state back. Origin mode
 * first (setting it homes the cursor), then the character sets, shift
 * state and pen, then the cursor, relative to the margins in origin mode
 * as xterm restores it.
 */
static void
pane_vtseq_restore(struct pane *vt)
{
	static const char *const shifts[] = { "\017", "\016", "\033n",
	    "\033o" };
	struct pane_vtsave s = *pane_vtseq_slot(vt);
	unsigned row = s.cy;
	struct buf b;

	if (s.origin)
		row = s.cy >= vt->top ? s.cy - vt->top : 0;
	buf_init(&b);
	buf_printf(&b, "\033[?6%c\033(%c\033)%c\033*%c\033+%c%s",
	    s.origin ? 'h' : 'l', s.g[0], s.g[1], s.g[2], s.g[3],
	    shifts[s.gl & 3]);
	pane_vtseq_sgr_of(&b, &s.pen);
	buf_printf(&b, "\033[%u;%uH", row + 1, s.cx + 1);
	pane_input(vt, b.data, b.len);
	buf_free(&b);
	vt->now = s;
	pane_vtseq_set_extras(vt, (s.pen.attr & PANE_ATTR_DIM) != 0,
	    (s.pen.attr & PANE_ATTR_CONCEAL) != 0);
}

/* ---- modes ---- */

static void
pane_vtseq_input_mode(struct pane *vt, bool private, int mode, bool set)
{
	char buf[32];
	int n;

	n = snprintf(buf, sizeof buf, "\033[%s%d%c", private ? "?" : "", mode,
	    set ? 'h' : 'l');
	if (n > 0 && (size_t)n < sizeof buf)
		pane_input(vt, buf, (size_t)n);
}

/*
 * DECCOLM: a pane's width is the layout's, so like tmux the switch itself
 * is not made, but what goes with it is: margins reset, cursor home,
 * screen cleared.
 */
static void
pane_vtseq_deccolm(struct pane *vt)
{
	static const char seq[] = "\033[r\033[H\033[2J";

	vt->top = 0;
	pane_input(vt, seq, sizeof seq - 1);
}

/* One DEC private mode, set or reset. */
static void
pane_vtseq_dec_mode(struct pane *vt, int mode, bool set)
{
	switch (mode) {
	case 3:
		pane_vtseq_deccolm(vt);
		return;
	case 6:
		vt->now.origin = set;
		break;
	case 47:
		pane_set_alt(vt, set);
		return;
	case 1047:
		/* Cleared on the way out, as xterm does. */
		if (!set && vt->cur == vt->alt)
			pane_clear_alt(vt);
		pane_set_alt(vt, set);
		return;
	case 1048:
		if (set)
			pane_vtseq_save(vt);
		else
			pane_vtseq_restore(vt);
		return;
	case 1049:
		/* DECSC on the normal screen, then the alternate one, cleared. */
		if (set && vt->cur == vt->main)
			pane_vtseq_save(vt);
		pane_set_alt(vt, set);
		if (set)
			pane_clear_alt(vt);
		else
			pane_vtseq_restore(vt);
		return;
	}
	pane_vtseq_input_mode(vt, true, mode, set);
}

/* SM, RM, DECSET, DECRST: every parameter, one at a time (libvterm applies only the first). */
static void
pane_vtseq_modes(struct pane *vt, bool set)
{
	int args[PANE_VTSEQ_MAX];
	size_t n = pane_vtseq_args(&vt->seq, args, nitems(args)), i;
	bool private = vt->seq.leader == '?';

	for (i = 0; i < n; i++) {
		if (args[i] < 0)
			continue;
		if (private)
			pane_vtseq_dec_mode(vt, args[i], set);
		else
			pane_vtseq_input_mode(vt, false, args[i], set);
	}
}

/* ---- the rest ---- */

/*
 * DECSTBM as xterm reads it: a bottom left out, 0 or past the screen is
 * the last line, and a region of fewer than two lines is ignored (libvterm
 * takes 0 as "invalid" and accepts a single line).
 */
static void
pane_vtseq_decstbm(struct pane *vt)
{
	int args[2] = { -1, -1 }, rows = (int)pane_grid_sy(vt->cur);
	int top, bot, n;
	char buf[32];

	pane_vtseq_args(&vt->seq, args, nitems(args));
	top = args[0] < 1 ? 1 : args[0];
	bot = args[1] < 1 || args[1] > rows ? rows : args[1];
	if (bot <= top)
		return;
	vt->top = (unsigned)top - 1;
	n = snprintf(buf, sizeof buf, "\033[%d;%dr", top, bot);
	if (n > 0 && (size_t)n < sizeof buf)
		pane_input(vt, buf, (size_t)n);
}

/*
 * Window reports (CSI Ps t). The text area's size is answered; nothing
 * moves or resizes the pane, and the title is never reported back (a
 * title set by whatever was printed would become the program's input).
 */
static void
pane_vtseq_winops(struct pane *vt)
{
	int args[1] = { -1 };
	char buf[64];
	int n = 0;

	pane_vtseq_args(&vt->seq, args, nitems(args));
	switch (args[0]) {
	case 11:
		n = snprintf(buf, sizeof buf, "\033[1t");
		break;
	case 13:
		n = snprintf(buf, sizeof buf, "\033[3;0;0t");
		break;
	case 18:
	case 19:
		n = snprintf(buf, sizeof buf, "\033[%d;%u;%ut", args[0] - 10,
		    pane_grid_sy(vt->cur), pane_grid_sx(vt->cur));
		break;
	}
	if (n > 0 && (size_t)n < sizeof buf)
		pane_write(vt, buf, (size_t)n);
}

/*
 * Reports libvterm 0.1.4 lacks or gets wrong, answered as xterm answers:
 * the cursor position relative to the margins in origin mode (CPR),
 * DECREQTPARM, and the tertiary device attributes (a unit ID of zeros).
 */
static void
pane_vtseq_report(struct pane *vt, char final)
{
	int args[1] = { -1 };
	char buf[64];
	int n = 0;

	pane_vtseq_args(&vt->seq, args, nitems(args));
	if (final == 'n' && args[0] == 6) {
		n = snprintf(buf, sizeof buf, "\033[%s%u;%uR",
		    vt->seq.leader == '?' ? "?" : "",
		    vt->cy >= vt->top ? vt->cy - vt->top + 1 : 1, vt->cx + 1);
	} else if (final == 'x' && args[0] <= 1)
		n = snprintf(buf, sizeof buf, "\033[%d;1;1;128;128;1;0x",
		    args[0] == 1 ? 3 : 2);
	else if (final == 'c' && args[0] <= 0)
		n = snprintf(buf, sizeof buf, "\033P!|00000000\033\\");
	if (n > 0 && (size_t)n < sizeof buf)
		pane_write(vt, buf, (size_t)n);
}

/* Appends code point CP as UTF-8. */
static void
pane_vtseq_utf8(struct buf *b, uint32_t cp)
{
	char s[4];

	if (cp < 0x80) {
		buf_addc(b, (char)cp);
		return;
	}
	if (cp < 0x800) {
		s[0] = (char)(0xc0 | cp >> 6);
		s[1] = (char)(0x80 | (cp & 0x3f));
		buf_add(b, s, 2);
		return;
	}
	if (cp < 0x10000) {
		s[0] = (char)(0xe0 | cp >> 12);
		s[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		s[2] = (char)(0x80 | (cp & 0x3f));
		buf_add(b, s, 3);
		return;
	}
	s[0] = (char)(0xf0 | cp >> 18);
	s[1] = (char)(0x80 | (cp >> 12 & 0x3f));
	s[2] = (char)(0x80 | (cp >> 6 & 0x3f));
	s[3] = (char)(0x80 | (cp & 0x3f));
	buf_add(b, s, 4);
}

/*
 * REP: the character just written, again, as xterm prints it (wrapping
 * like any text, at most a screenful); nothing after anything but a
 * character. libvterm's own REP loops for ever on a character of no
 * width, so it never sees one.
 */
static void
pane_vtseq_rep(struct pane *vt)
{
	int args[1] = { -1 };
	unsigned n, max = pane_grid_sx(vt->cur) * pane_grid_sy(vt->cur), i;
	size_t k;
	struct buf b;

	if (!vt->seq.rep || vt->nlast == 0)
		return;
	pane_vtseq_args(&vt->seq, args, nitems(args));
	n = args[0] < 1 ? 1 : (unsigned)args[0];
	if (n > max)
		n = max;
	buf_init(&b);
	for (i = 0; i < n; i++) {
		for (k = 0; k < vt->nlast; k++)
			pane_vtseq_utf8(&b, vt->last[k]);
	}
	pane_input(vt, b.data, b.len);
	buf_free(&b);
}

/* DECALN: the screen full of E in the default colours, margins reset, cursor home. */
static void
pane_vtseq_decaln(struct pane *vt)
{
	static const char seq[] = "\033#8\033[r";
	struct pane_cell pen = vt->pen;

	memset(&vt->pen, 0, sizeof vt->pen);
	pane_input(vt, seq, sizeof seq - 1);
	vt->pen = pen;
	vt->top = 0;
}

/* A full or soft reset: what is tracked here goes back to its start. */
static void
pane_vtseq_reset(struct pane *vt, bool hard)
{
	vt->now = vt->saved[0] = vt->saved[1] = pane_vtseq_defaults;
	vt->top = 0;
	pane_vtseq_set_extras(vt, false, false);
	if (!hard)
		return;
	vt->cursor_shape = PANE_CURSOR_DEFAULT;
	pane_reset_screens(vt);
}

static enum pane_vtseq_verdict
pane_vtseq_judge_csi(struct pane *vt, char final, struct pane_vtsave *to)
{
	const struct pane_vtseq *sq = &vt->seq;

	if (sq->inter == ' ' && final == 'q' && sq->leader == 0)
		return PANE_VTSEQ_AFTER;                 /* DECSCUSR */
	if (sq->inter == '!' && final == 'p' && sq->leader == 0)
		return PANE_VTSEQ_AFTER;                 /* DECSTR */
	if (sq->inter != 0)
		return PANE_VTSEQ_PASS;
	if ((final == 'h' || final == 'l') &&
	    (sq->leader == 0 || sq->leader == '?'))
		return PANE_VTSEQ_OWN;
	if (final == 'n' && (sq->leader == 0 || sq->leader == '?') &&
	    vt->now.origin && sq->nparams == 1 && sq->params[0] == '6')
		return PANE_VTSEQ_OWN;
	if (final == 'c' && sq->leader == '=')
		return PANE_VTSEQ_OWN;
	if (sq->leader != 0)
		return PANE_VTSEQ_PASS;
	switch (final) {
	case 'm':
		return pane_vtseq_sgr(vt, to);
	case 'r':
	case 't':
	case 'x':
		return PANE_VTSEQ_OWN;
	case 'b':
		vt->seq.rep = vt->graphic;
		return PANE_VTSEQ_OWN;
	case 's':
	case 'u':
		/* SCOSC, SCORC (libvterm reads CSI s as DECSLRM and homes). */
		return sq->nparams == 0 ? PANE_VTSEQ_OWN : PANE_VTSEQ_PASS;
	}
	return PANE_VTSEQ_PASS;
}

static enum pane_vtseq_verdict
pane_vtseq_judge_esc(struct pane *vt, char final)
{
	const struct pane_vtseq *sq = &vt->seq;

	switch (sq->inter) {
	case 0:
		break;
	case '(':
	case ')':
	case '*':
	case '+':
		vt->now.g[sq->inter - '('] = final;
		return PANE_VTSEQ_PASS;
	case '#':
		/*
		 * A double-width line one column wide would be none at all:
		 * libvterm then puts the cursor in column -1.
		 */
		if ((final == '3' || final == '4' || final == '6') &&
		    pane_grid_sx(vt->cur) < 2)
			return PANE_VTSEQ_OWN;
		return final == '8' ? PANE_VTSEQ_OWN : PANE_VTSEQ_PASS;
	default:
		return PANE_VTSEQ_PASS;
	}
	switch (final) {
	case 'c':
		return PANE_VTSEQ_AFTER;
	case '7':
	case '8':
		return PANE_VTSEQ_OWN;
	case 'n':
	case 'o':
		vt->now.gl = final == 'n' ? 2 : 3;
		break;
	}
	return PANE_VTSEQ_PASS;
}

/* Does what the sequence ending in FINAL asks of this layer. */
static void
pane_vtseq_act(struct pane *vt, char final, const struct pane_vtsave *to)
{
	const struct pane_vtseq *sq = &vt->seq;
	int args[1] = { -1 };

	if (sq->state == PANE_VTSEQ_ESC) {
		if (sq->inter == '#' && final == '8')
			pane_vtseq_decaln(vt);
		else if (sq->inter == '#')
			return;
		else if (final == '7')
			pane_vtseq_save(vt);
		else if (final == '8')
			pane_vtseq_restore(vt);
		else
			pane_vtseq_reset(vt, true);
		return;
	}
	switch (final) {
	case 'q':
		pane_vtseq_args(sq, args, nitems(args));
		if (args[0] >= -1 && args[0] <= 6)
			vt->cursor_shape = (enum pane_cursor_shape)(args[0] < 0 ? 0 :
			    args[0]);
		break;
	case 'p':
		pane_vtseq_reset(vt, false);
		break;
	case 'h':
	case 'l':
		pane_vtseq_modes(vt, final == 'h');
		break;
	case 'm':
		pane_vtseq_set_extras(vt, to->dim, to->conceal);
		break;
	case 't':
		pane_vtseq_winops(vt);
		break;
	case 'r':
		pane_vtseq_decstbm(vt);
		break;
	case 'n':
	case 'x':
	case 'c':
		pane_vtseq_report(vt, final);
		break;
	case 'b':
		pane_vtseq_rep(vt);
		break;
	case 's':
		pane_vtseq_save(vt);
		break;
	case 'u':
		pane_vtseq_restore(vt);
		break;
	}
}

/*
 * A sequence libvterm is not given may follow the start of one it was
 * given and that this one broke off (ESC [ ESC [ 1 b): libvterm must not
 * read what follows as the rest of that. CAN ends it there (and is
 * nothing in the ground state). Left in a CSI, libvterm took the next
 * "b" for a REP of a character it never had, and looped for ever.
 */
static void
pane_vtseq_cancel(struct pane *vt)
{
	pane_input(vt, "\030", 1);
}

/* The final byte of a sequence: B->p is just past it. */
static void
pane_vtseq_finish(struct pane *vt, struct pane_vtseq_buf *b, char final)
{
	struct pane_vtseq *sq = &vt->seq;
	enum pane_vtseq_verdict v = PANE_VTSEQ_PASS;
	struct pane_vtsave to = vt->now;

	if (!sq->odd) {
		v = sq->state == PANE_VTSEQ_CSI ?
		    pane_vtseq_judge_csi(vt, final, &to) :
		    pane_vtseq_judge_esc(vt, final);
	} else if (sq->state == PANE_VTSEQ_CSI && final == 'b' &&
	    sq->leader == 0 && sq->inter == 0) {
		/* However odd, libvterm would take it for REP: dropped. */
		sq->rep = false;
		v = PANE_VTSEQ_OWN;
	}
	vt->graphic = false;
	switch (v) {
	case PANE_VTSEQ_PASS:
		if (sq->nheld > 0)
			pane_vtseq_flush(vt, b, b->start);
		b->start = NULL;
		break;
	case PANE_VTSEQ_AFTER:
		pane_vtseq_flush(vt, b, b->p);
		pane_vtseq_act(vt, final, &to);
		break;
	case PANE_VTSEQ_OWN:
		/* (No start: what came of it was given already, as it grew.) */
		sq->nheld = 0;
		if (b->start != NULL)
			pane_vtseq_flush(vt, b, b->start);
		b->from = b->p;
		pane_vtseq_cancel(vt);
		pane_vtseq_act(vt, final, &to);
		break;
	}
	sq->state = PANE_VTSEQ_GROUND;
}

static void
pane_vtseq_esc_byte(struct pane *vt, struct pane_vtseq_buf *b, char c)
{
	struct pane_vtseq *sq = &vt->seq;

	/*
	 * libvterm reads [, ] and P as CSI, OSC and DCS even after an
	 * intermediate byte (which it then forgets): so does this.
	 */
	if (c >= 0x20 && c <= 0x2f) {
		sq->odd |= sq->inter != 0;
		sq->inter = c;
	} else if (c == '[') {
		sq->inter = 0;
		sq->state = PANE_VTSEQ_CSI;
	} else if (c == ']' || c == 'P') {
		/* OSC and DCS: read here to their end (pane_vtseq_str). */
		sq->nheld = 0;
		pane_vtseq_flush(vt, b, b->start);
		b->from = b->p;
		pane_vtseq_cancel(vt);
		sq->state = PANE_VTSEQ_STR;
		sq->osc = c == ']';
		sq->nstr = 0;
	} else if (c >= 0x30 && c <= 0x7e)
		pane_vtseq_finish(vt, b, c);
	/* libvterm ignores a byte from 0x80 up after an ESC, and so does this. */
}

/*
 * libvterm 0.1.4 keeps 16 parameters and writes a 17th past the end of its
 * array (a heap overflow any program in a pane could cause), and adds up
 * digits in a long without a limit. So libvterm never sees a 16th
 * separator: what came before goes to it, CAN ends the sequence there,
 * and the rest of the sequence is dropped. Digits past five significant
 * ones in a parameter are dropped too (xterm caps parameters as well).
 */
#define PANE_VTSEQ_ARGS 16
#define PANE_VTSEQ_DIGITS 5

static bool
pane_vtseq_guard(struct pane *vt, struct pane_vtseq_buf *b, char c)
{
	struct pane_vtseq *sq = &vt->seq;

	if (c == ';' || c == ':') {
		sq->ndigits = 0;
		if (++sq->nsep < PANE_VTSEQ_ARGS)
			return true;
		pane_vtseq_flush(vt, b, b->p - 1);
		pane_input(vt, "\030", 1);
		b->from = b->p;
		sq->drop = true;
		return false;
	}
	/* Leading zeros change nothing (vttest sends eleven digits of them). */
	if ((c == '0' && sq->ndigits == 0) || ++sq->ndigits <= PANE_VTSEQ_DIGITS)
		return true;
	pane_vtseq_flush(vt, b, b->p - 1);
	b->from = b->p;
	sq->odd = true;
	return false;
}

/*
 * One byte of a CSI, read as libvterm reads it: private markers before
 * the parameters, intermediates after them, then the final byte; anything
 * else ends the sequence there, unused (libvterm's "invalid CSI").
 */
static void
pane_vtseq_csi_byte(struct pane *vt, struct pane_vtseq_buf *b, char c)
{
	struct pane_vtseq *sq = &vt->seq;
	bool param = (c >= '0' && c <= '9') || c == ';' || c == ':';

	if (c >= 0x3c && c <= 0x3f && sq->nparams == 0 && sq->inter == 0) {
		sq->odd |= sq->leader != 0;
		sq->leader = c;
	} else if (param && sq->inter == 0) {
		if (!pane_vtseq_guard(vt, b, c))
			return;
		if (sq->nparams < sizeof sq->params)
			sq->params[sq->nparams++] = c;
		else
			sq->odd = true;
	} else if (c >= 0x20 && c <= 0x2f) {
		sq->odd |= sq->inter != 0;
		sq->inter = c;
	} else if (c >= 0x40 && c <= 0x7e)
		pane_vtseq_finish(vt, b, c);
	else {
		sq->odd = true;
		pane_vtseq_finish(vt, b, c);
	}
}

/*
 * libvterm runs a control that comes inside a sequence and goes on with
 * the sequence: so it is given the control at Q now, and the sequence is
 * kept without it, to be judged as if it had not been there.
 */
static void
pane_vtseq_control(struct pane *vt, struct pane_vtseq_buf *b, const char *q)
{
	struct pane_vtseq *sq = &vt->seq;
	size_t n;

	vt->graphic = false;
	if (*q == 0x0e || *q == 0x0f)
		vt->now.gl = *q == 0x0e ? 1 : 0;
	if (b->start == NULL)
		return;         /* what came of the sequence went to libvterm */
	n = (size_t)(q - b->start);
	if (sq->nheld + n > sizeof sq->held) {
		sq->odd = true;
		return;
	}
	if (b->start > b->from)
		pane_input(vt, b->from, (size_t)(b->start - b->from));
	memcpy(sq->held + sq->nheld, b->start, n);
	sq->nheld += n;
	pane_input(vt, q, 1);
	b->from = b->start = q + 1;
}

/* One byte of an open ESC or CSI sequence. */
static void
pane_vtseq_byte(struct pane *vt, struct pane_vtseq_buf *b)
{
	struct pane_vtseq *sq = &vt->seq;
	char c = *b->p++;

	if (sq->drop && c != 0x1b) {
		b->from = b->p;
		if (c == 0x18 || c == 0x1a || (c >= 0x40 && c <= 0x7e))
			sq->state = PANE_VTSEQ_GROUND;
		return;
	}
	if (c == 0x18 || c == 0x1a) {
		/* CAN and SUB abandon it. */
		sq->odd = true;
		pane_vtseq_finish(vt, b, c);
		return;
	}
	if (c == 0x1b) {
		if (sq->nheld > 0)
			pane_vtseq_flush(vt, b, b->start);
		pane_vtseq_begin(vt, b, b->p - 1, false);
		return;
	}
	if (c == 0x00 || c == 0x7f)
		return;         /* libvterm ignores NUL and DEL in a sequence */
	if ((unsigned char)c < 0x20) {
		pane_vtseq_control(vt, b, b->p - 1);
		return;
	}
	if (sq->state == PANE_VTSEQ_ESC)
		pane_vtseq_esc_byte(vt, b, c);
	else
		pane_vtseq_csi_byte(vt, b, c);
}

/*
 * C1 controls written in UTF-8 (C2 80 to C2 9F): libvterm 0.1.4 gives them
 * a width of -1 and moves the cursor back a column, to -1 from the first
 * (the pane fuzzer's find), where the next character is put. Its decoder
 * keeps a lead byte across controls, escape sequences, reads and ASCII
 * text, so libvterm is never left holding a C2: the C2 is kept here until
 * the next byte of text but DEL. A C1 and its C2 are dropped (xterm does
 * not print them); A0 to BF go on with their C2, as the one character
 * they make; before anything else the C2 is the U+FFFD libvterm would
 * have made of it. Returns true if Q was used, with *SHOWN true if
 * something was printed.
 */
static bool
pane_vtseq_c1(struct pane *vt, struct pane_vtseq_buf *b, const char *q,
    bool *shown)
{
	static const char fffd[] = "\xef\xbf\xbd";
	struct pane_vtseq *sq = &vt->seq;
	unsigned char c = (unsigned char)*q;
	char pair[2];

	if (sq->c2) {
		if (c == 0x7f)
			return false;
		pane_vtseq_flush(vt, b, q);
		sq->c2 = false;
		if (c >= 0x80 && c <= 0xbf) {
			pair[0] = (char)0xc2;
			pair[1] = (char)c;
			if ((*shown = c >= 0xa0))
				pane_input(vt, pair, sizeof pair);
			b->from = q + 1;
			return true;
		}
		pane_input(vt, fffd, sizeof fffd - 1);
	}
	if (c != 0xc2)
		return false;
	pane_vtseq_flush(vt, b, q);
	b->from = q + 1;
	sq->c2 = true;
	*shown = false;
	return true;
}

/* Text and controls, up to the next ESC. */
static void
pane_vtseq_ground(struct pane *vt, struct pane_vtseq_buf *b)
{
	const char *q = b->p;
	bool shown = true;
	char c;

	while (q < b->end && (unsigned char)*q >= 0x20) {
		shown = true;
		if ((unsigned char)*q == 0xc2 || vt->seq.c2)
			pane_vtseq_c1(vt, b, q, &shown);
		q++;
	}
	if (q > b->p)
		vt->graphic = shown && q[-1] != 0x7f;
	b->p = q;
	if (q == b->end)
		return;
	c = *b->p++;
	switch (c) {
	case 0x1b:
		pane_vtseq_begin(vt, b, b->p - 1, false);
		return;
	case 0x0e:
	case 0x0f:
		vt->now.gl = c == 0x0e ? 1 : 0;
		break;
	case 0x00:
		return;
	}
	vt->graphic = false;
}

/*
 * DCS strings. libvterm 0.1.4 answers a DECRQSS for a setting it does not
 * know with snprintf("%.s", len, string), passing the length where a
 * pointer is read: undefined behaviour that glibc survives and ASan does
 * not (the pane fuzzer found it with ESC P $ q i ESC \). So no DCS
 * reaches libvterm but a DECRQSS for what it does know (m, r, s, " q",
 * '"q'); any other DECRQSS gets xterm's "not valid" here, and every other
 * DCS is dropped, as libvterm ignored them.
 */
static void
pane_vtseq_dcs_end(struct pane *vt)
{
	static const char *const known[] = { "m", "r", "s", " q", "\"q" };
	static const char invalid[] = "\033P0$r\033\\";
	struct pane_vtseq *sq = &vt->seq;
	size_t i, n;
	char buf[sizeof sq->str + 8];

	if (sq->nstr < 2 || sq->nstr >= sizeof sq->str ||
	    memcmp(sq->str, "$q", 2) != 0)
		return;
	for (i = 0; i < nitems(known); i++) {
		n = strlen(known[i]);
		if (sq->nstr - 2 == n && memcmp(sq->str + 2, known[i], n) == 0) {
			n = (size_t)snprintf(buf, sizeof buf, "\033P%.*s\033\\",
			    (int)sq->nstr, sq->str);
			pane_input(vt, buf, n);
			return;
		}
	}
	pane_write(vt, invalid, sizeof invalid - 1);
}

/*
 * OSC strings (the title). libvterm 0.1.4 keeps no more of a string that
 * a read cuts than what came before a NUL in it, and ends one whose ESC
 * ended a read and whose backslash began the next with a length of -1,
 * copying from past the end of the read. So it gets each OSC here, whole,
 * in one write; controls inside are dropped (xterm ignores them, libvterm
 * ran them) and one longer than the buffer is dropped whole.
 */
static void
pane_vtseq_osc_end(struct pane *vt)
{
	struct pane_vtseq *sq = &vt->seq;
	char buf[sizeof sq->str + 3];

	if (sq->nstr >= sizeof sq->str)
		return;
	buf[0] = 0x1b;
	buf[1] = ']';
	memcpy(buf + 2, sq->str, sq->nstr);
	buf[2 + sq->nstr] = 0x07;
	pane_input(vt, buf, sq->nstr + 3);
}

static void
pane_vtseq_str_end(struct pane *vt)
{
	struct pane_vtseq *sq = &vt->seq;

	sq->state = PANE_VTSEQ_GROUND;
	if (sq->osc)
		pane_vtseq_osc_end(vt);
	else
		pane_vtseq_dcs_end(vt);
}

/* A byte of an OSC or DCS string, which libvterm does not see as it comes. */
static void
pane_vtseq_str(struct pane *vt, struct pane_vtseq_buf *b)
{
	struct pane_vtseq *sq = &vt->seq;
	char c = *b->p++;

	b->from = b->p;
	if (c == 0x18 || c == 0x1a) {
		sq->state = PANE_VTSEQ_GROUND;
		return;
	}
	if (sq->state == PANE_VTSEQ_STR_ESC) {
		if (c == '\\') {
			pane_vtseq_str_end(vt);
			return;
		}
		/* As libvterm would: the string is dropped, ESC starts a sequence. */
		pane_vtseq_begin(vt, b, b->p - 1, false);
		sq->held[0] = 0x1b;
		sq->nheld = 1;
		b->p--;
		b->from = b->p;
		return;
	}
	if (c == 0x1b)
		sq->state = PANE_VTSEQ_STR_ESC;
	else if (c == 0x07)
		pane_vtseq_str_end(vt);
	else if (sq->osc && ((unsigned char)c < 0x20 || c == 0x7f))
		return;
	else if (sq->nstr < sizeof sq->str)
		sq->str[sq->nstr++] = c;
	else
		sq->nstr = sizeof sq->str;
}

/* The read ends: an open sequence that may be handled here waits for the rest. */
static void
pane_vtseq_end(struct pane *vt, struct pane_vtseq_buf *b)
{
	struct pane_vtseq *sq = &vt->seq;
	size_t n;

	if ((sq->state != PANE_VTSEQ_ESC && sq->state != PANE_VTSEQ_CSI) ||
	    sq->odd || b->start == NULL) {
		pane_vtseq_flush(vt, b, b->end);
		return;
	}
	n = (size_t)(b->end - b->start);
	if (sq->nheld + n > sizeof sq->held) {
		sq->odd = true;
		pane_vtseq_flush(vt, b, b->end);
		return;
	}
	if (b->start > b->from)
		pane_input(vt, b->from, (size_t)(b->start - b->from));
	memcpy(sq->held + sq->nheld, b->start, n);
	sq->nheld += n;
}

void
pane_vtseq_parse(struct pane *vt, const char *data, size_t len)
{
	struct pane_vtseq_buf b = { data, NULL, data, data + len };

	if (vt->seq.state == PANE_VTSEQ_ESC || vt->seq.state == PANE_VTSEQ_CSI)
		b.start = data;
	while (b.p < b.end) {
		switch (vt->seq.state) {
		case PANE_VTSEQ_GROUND:
			pane_vtseq_ground(vt, &b);
			break;
		case PANE_VTSEQ_ESC:
		case PANE_VTSEQ_CSI:
			pane_vtseq_byte(vt, &b);
			break;
		case PANE_VTSEQ_STR:
		case PANE_VTSEQ_STR_ESC:
			pane_vtseq_str(vt, &b);
			break;
		}
	}
	pane_vtseq_end(vt, &b);
}
