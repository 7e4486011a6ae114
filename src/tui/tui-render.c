/* Drawing with ncursesw: changed grid rows only, colours mapped to what the terminal has, frames paced. */
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <langinfo.h>
#include <limits.h>
#include <locale.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>
#include <wchar.h>

#include <curses.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <term.h>

#include "core/core.h"
#include "tui.h"

/* xterm's first 16 colours, to approximate others with. */
static const uint8_t tui_render_ansi[16][3] = {
	{ 0x00, 0x00, 0x00 }, { 0xcd, 0x00, 0x00 }, { 0x00, 0xcd, 0x00 },
	{ 0xcd, 0xcd, 0x00 }, { 0x00, 0x00, 0xee }, { 0xcd, 0x00, 0xcd },
	{ 0x00, 0xcd, 0xcd }, { 0xe5, 0xe5, 0xe5 }, { 0x7f, 0x7f, 0x7f },
	{ 0xff, 0x00, 0x00 }, { 0x00, 0xff, 0x00 }, { 0xff, 0xff, 0x00 },
	{ 0x5c, 0x5c, 0xff }, { 0xff, 0x00, 0xff }, { 0x00, 0xff, 0xff },
	{ 0xff, 0xff, 0xff },
};

static const uint8_t tui_render_cube[6] = { 0, 95, 135, 175, 215, 255 };

/* The RGB value of entry IDX of the xterm 256-colour palette. */
static uint32_t
tui_render_palette(unsigned idx)
{
	unsigned g;

	if (idx < 16) {
		return (uint32_t)tui_render_ansi[idx][0] << 16 |
		    (uint32_t)tui_render_ansi[idx][1] << 8 | tui_render_ansi[idx][2];
	}
	if (idx < 232) {
		idx -= 16;
		return (uint32_t)tui_render_cube[idx / 36] << 16 |
		    (uint32_t)tui_render_cube[idx / 6 % 6] << 8 |
		    tui_render_cube[idx % 6];
	}
	g = 8 + (idx - 232) * 10;
	return g << 16 | g << 8 | g;
}

static unsigned
tui_render_dist(uint32_t a, int r, int g, int b)
{
	int dr = (int)(a >> 16 & 0xff) - r, dg = (int)(a >> 8 & 0xff) - g;
	int db = (int)(a & 0xff) - b;

	return (unsigned)(dr * dr + dg * dg + db * db);
}

/* The nearest of the first N palette entries to RGB. */
static int
tui_render_nearest(uint32_t rgb, int n)
{
	int r = rgb >> 16 & 0xff, g = rgb >> 8 & 0xff, b = rgb & 0xff, i, best = 0;
	unsigned d, bestd = ~0u;

	for (i = 0; i < n; i++) {
		if ((d = tui_render_dist(tui_render_palette((unsigned)i), r, g,
		    b)) < bestd) {
			bestd = d;
			best = i;
		}
	}
	return best;
}

/* The nearest entry of the 6x6x6 cube or the grey ramp to RGB (as tmux does). */
static int
tui_render_to256(uint32_t rgb)
{
	int r = rgb >> 16 & 0xff, g = rgb >> 8 & 0xff, b = rgb & 0xff;
	int qr, qg, qb, cube, grey, avg;

#define TUI_Q(v) ((v) < 48 ? 0 : (v) < 115 ? 1 : ((v) - 35) / 40)
	qr = TUI_Q(r);
	qg = TUI_Q(g);
	qb = TUI_Q(b);
#undef TUI_Q
	cube = 16 + 36 * qr + 6 * qg + qb;
	if (tui_render_cube[qr] == r && tui_render_cube[qg] == g &&
	    tui_render_cube[qb] == b)
		return cube;
	avg = (r + g + b) / 3;
	grey = avg > 238 ? 23 : avg < 8 ? 0 : (avg - 3) / 10;
	if (tui_render_dist(tui_render_palette((unsigned)(232 + grey)), r, g,
	    b) < tui_render_dist(tui_render_palette((unsigned)cube), r, g, b))
		return 232 + grey;
	return cube;
}

int
tui_render_color(uint32_t c, int ncolors)
{
	unsigned idx = c & 0xff;
	uint32_t rgb = c & 0xffffff;

	if (ncolors <= 0 || PANE_COLOR_TYPE(c) == PANE_COLOR_DEFAULT)
		return -1;
	if (ncolors >= 0x1000000) {
		if (PANE_COLOR_TYPE(c) == PANE_COLOR_INDEXED)
			return idx < 8 ? (int)idx : (int)tui_render_palette(idx);
		return rgb < 8 ? 8 : (int)rgb;
	}
	if (ncolors >= 256) {
		if (PANE_COLOR_TYPE(c) == PANE_COLOR_INDEXED)
			return (int)idx;
		return tui_render_to256(rgb);
	}
	if (PANE_COLOR_TYPE(c) == PANE_COLOR_INDEXED && idx < 16)
		return ncolors >= 16 ? (int)idx : (int)(idx & 7);
	if (PANE_COLOR_TYPE(c) == PANE_COLOR_INDEXED)
		rgb = tui_render_palette(idx);
	return tui_render_nearest(rgb, ncolors >= 16 ? 16 : 8);
}

/* RGB of colour C, false for the default colour (the terminal's own, unknown). */
static bool
tui_render_rgb(uint32_t c, uint32_t *rgb)
{
	if (PANE_COLOR_TYPE(c) == PANE_COLOR_INDEXED)
		*rgb = tui_render_palette(c & 0xff);
	else if (PANE_COLOR_TYPE(c) == PANE_COLOR_RGB)
		*rgb = c & 0xffffff;
	else
		return false;
	return true;
}

bool
tui_render_hidden(const struct pane_cell *c)
{
	uint32_t fg, bg;

	if (c->attr & PANE_ATTR_CONCEAL)
		return true;
	if (!tui_render_rgb(c->fg, &fg) || !tui_render_rgb(c->bg, &bg))
		return false;
	/* Within 16 a channel, or the same once brought to 256 colours: unreadable. */
	return tui_render_dist(fg, (int)(bg >> 16), (int)(bg >> 8 & 0xff),
	    (int)(bg & 0xff)) < 3 * 16 * 16 ||
	    tui_render_to256(fg) == tui_render_to256(bg);
}

/*
 * Bytes queued for a terminal past which no frame is drawn: its reader
 * has stopped (a stopped ssh, a frozen terminal), and the loop must not
 * wait for it nor queue without bound.
 */
#define TUI_SCREEN_HIGH (1024 * 1024)
/* The most rows and columns of a terminal drawn on. */
#define TUI_SCREEN_MAX 1000
/* How long closing a screen waits for its terminal to take the last bytes. */
#define TUI_SCREEN_CLOSE_MS 200

struct tui_screen {
	SCREEN *sp;
	FILE *in;             /* the terminal's keys, owned */
	FILE *out;            /* curses writes here: a memory file, owned */
	off_t taken;          /* how much of it is in OBUF already */
	int ttyfd;            /* the terminal drawn on, owned */
	int rows, cols;       /* the size curses was given for it, 0 unknown */
	struct termios tio;   /* its modes before */
	bool tio_saved;
	struct evbuffer *obuf; /* what the terminal has not taken yet */
	struct event *wev;    /* writes OBUF when it can; NULL: no loop */
	bool held;            /* a frame waits for OBUF to drain */
	int64_t stuck_us;     /* since when OBUF waits and nothing is taken, or 0 */
	void (*stuck_cb)(void *); /* told when it starts to */
	void *stuck_arg;
	bool color;
	int ncolors;
	attr_t style_attr[TUI_STYLE_COUNT];
	int style_pair[TUI_STYLE_COUNT];
	cchar_t *line;        /* scratch for one row */
	size_t linecap;
	uint32_t last_fg;     /* the previous cell's colours and pair */
	uint32_t last_bg;
	int last_pair;
	int shape;            /* the cursor shape last sent, -1 none */
	char pending[32];     /* DECSCUSR to send after the frame */
	bool invalid;
	bool suspended;       /* the terminal is the shell's until resumed */
};

/* Curses attributes for a cell's PANE_ATTR_* bits (strike has no curses attribute). */
static attr_t
tui_screen_attrs(unsigned attr)
{
	attr_t a = A_NORMAL;

	if (attr & PANE_ATTR_BOLD)
		a |= A_BOLD;
	if (attr & PANE_ATTR_DIM)
		a |= A_DIM;
	if (attr & PANE_ATTR_ITALIC)
		a |= A_ITALIC;
	if (attr & PANE_ATTR_UNDERLINE)
		a |= A_UNDERLINE;
	if (attr & PANE_ATTR_BLINK)
		a |= A_BLINK;
	if (attr & PANE_ATTR_REVERSE)
		a |= A_REVERSE;
	return a;
}

static int
tui_screen_pair(struct tui_screen *scr, uint32_t fg, uint32_t bg)
{
	int pair;

	if (!scr->color)
		return 0;
	if (fg == scr->last_fg && bg == scr->last_bg)
		return scr->last_pair;
	pair = alloc_pair(tui_render_color(fg, scr->ncolors),
	    tui_render_color(bg, scr->ncolors));
	if (pair < 0)
		pair = 0;
	scr->last_fg = fg;
	scr->last_bg = bg;
	scr->last_pair = pair;
	return pair;
}

static void
tui_screen_styles(struct tui_screen *scr)
{
	static const struct {
		int fg, bg;
		attr_t attr;      /* with colour */
		attr_t mono;      /* without */
	} def[TUI_STYLE_COUNT] = {
		[TUI_STYLE_NORMAL] = { -1, -1, A_NORMAL, A_NORMAL },
		[TUI_STYLE_BAR] = { COLOR_BLACK, COLOR_GREEN, A_NORMAL, A_REVERSE },
		[TUI_STYLE_BAR_FOCUS] = { COLOR_WHITE, COLOR_BLUE, A_BOLD,
		    A_BOLD },
		[TUI_STYLE_ALERT] = { COLOR_WHITE, COLOR_RED, A_BOLD,
		    A_BOLD | A_REVERSE },
		[TUI_STYLE_WARN] = { COLOR_YELLOW, -1, A_BOLD, A_BOLD },
		[TUI_STYLE_OK] = { COLOR_GREEN, -1, A_NORMAL, A_NORMAL },
		[TUI_STYLE_DIM] = { -1, -1, A_DIM, A_DIM },
		[TUI_STYLE_BORDER] = { -1, -1, A_NORMAL, A_NORMAL },
		[TUI_STYLE_BORDER_FOCUS] = { COLOR_GREEN, -1, A_BOLD, A_BOLD },
		[TUI_STYLE_TITLE] = { -1, -1, A_REVERSE, A_REVERSE },
		[TUI_STYLE_SELECTED] = { COLOR_BLACK, COLOR_CYAN, A_NORMAL,
		    A_REVERSE },
		[TUI_STYLE_PROMPT] = { COLOR_BLACK, COLOR_YELLOW, A_NORMAL,
		    A_REVERSE },
		[TUI_STYLE_PROMPT_FOCUS] = { COLOR_WHITE, COLOR_MAGENTA, A_BOLD,
		    A_BOLD | A_REVERSE },
		[TUI_STYLE_KEY] = { COLOR_CYAN, -1, A_BOLD, A_BOLD },
		[TUI_STYLE_NEEDS] = { COLOR_WHITE, COLOR_MAGENTA, A_BOLD,
		    A_BOLD | A_UNDERLINE },
	};
	int i;

	for (i = 0; i < TUI_STYLE_COUNT; i++) {
		scr->style_attr[i] = scr->color ? def[i].attr : def[i].mono;
		scr->style_pair[i] = scr->color ? alloc_pair(def[i].fg,
		    def[i].bg) : 0;
		if (scr->style_pair[i] < 0)
			scr->style_pair[i] = 0;
	}
}

/* Without a UTF-8 locale ncursesw cannot write wide characters. */
static void
tui_screen_locale(void)
{
	const char *cs = nl_langinfo(CODESET);

	/* ncursesw writes UTF-8 from here on: so may the quoting helper. */
	quote_set_utf8(true);
	if (strcmp(cs, "UTF-8") == 0 || strcmp(cs, "utf8") == 0)
		return;
	if (setlocale(LC_CTYPE, "C.UTF-8") == NULL)
		setlocale(LC_CTYPE, "C.utf8");
}

/* The memory file is emptied once this much of it has been taken. */
#define TUI_SCREEN_FILE_MAX (1024 * 1024)

/*
 * Moves what curses wrote into its memory file since the last take to the
 * end of OBUF: one read a frame (a short one is the end), the file emptied
 * only now and then rather than every frame.
 */
static void
tui_screen_take(struct tui_screen *scr)
{
	char buf[65536];
	ssize_t n;
	int fd = fileno(scr->out);

	fflush(scr->out);
	do {
		if ((n = pread(fd, buf, sizeof buf, scr->taken)) > 0) {
			evbuffer_add(scr->obuf, buf, (size_t)n);
			scr->taken += n;
		}
	} while (n == (ssize_t)sizeof buf);
	if (scr->taken >= TUI_SCREEN_FILE_MAX) {
		if (ftruncate(fd, 0) == -1 || lseek(fd, 0, SEEK_SET) == -1)
			fatal("cannot reset the dashboard's frame buffer");
		scr->taken = 0;
	}
}

static void tui_screen_writable(evutil_socket_t, short, void *);

/*
 * Writes what the terminal takes now, never waiting for it: the rest
 * goes when the loop sees it writable. A terminal that is gone loses
 * its bytes; its reader notices and detaches it.
 */
static void
tui_screen_push(struct tui_screen *scr)
{
	tui_screen_take(scr);
	while (evbuffer_get_length(scr->obuf) > 0) {
		if (evbuffer_write(scr->obuf, scr->ttyfd) > 0) {
			scr->stuck_us = 0;
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN && scr->wev != NULL) {
			event_add(scr->wev, NULL);
			if (scr->stuck_us == 0) {
				scr->stuck_us = util_mono_us();
				if (scr->stuck_cb != NULL)
					scr->stuck_cb(scr->stuck_arg);
			}
			return;
		}
		if (errno != EAGAIN)
			evbuffer_drain(scr->obuf, evbuffer_get_length(scr->obuf));
		else
			/* No loop (the test harness): wait, as a tty would. */
			poll(&(struct pollfd){ scr->ttyfd, POLLOUT, 0 }, 1, -1);
	}
}

/* Queues bytes of ours after what curses has written, and sends them. */
static void
tui_screen_add(struct tui_screen *scr, const void *data, size_t len)
{
	tui_screen_take(scr);
	evbuffer_add(scr->obuf, data, len);
	tui_screen_push(scr);
}

static void
tui_screen_writable(evutil_socket_t fd, short what, void *arg)
{
	struct tui_screen *scr = arg;

	tui_screen_push(scr);
	/* Drained: the frame held back is drawn now, as it is at this point. */
	if (scr->held && evbuffer_get_length(scr->obuf) == 0) {
		scr->held = false;
		tui_screen_flush(scr);
	}
}

/* The last bytes (the terminal's modes back): a little wait, then given up. */
static void
tui_screen_last(struct tui_screen *scr)
{
	struct pollfd pfd = { scr->ttyfd, POLLOUT, 0 };
	int waited = 0;

	tui_screen_take(scr);
	while (evbuffer_get_length(scr->obuf) > 0 &&
	    waited < TUI_SCREEN_CLOSE_MS) {
		if (evbuffer_write(scr->obuf, scr->ttyfd) > 0)
			continue;
		if (errno != EAGAIN && errno != EINTR)
			break;
		if (poll(&pfd, 1, 10) == 0)
			waited += 10;
	}
	evbuffer_drain(scr->obuf, evbuffer_get_length(scr->obuf));
}

/* Turns the terminal's mouse reporting and bracketed paste on or off. */
static void
tui_screen_modes(struct tui_screen *scr, bool on)
{
	static const char enable[] = "\033[?1000h\033[?1002h\033[?1006h"
	    "\033[?2004h";
	static const char disable[] = "\033[?2004l\033[?1006l\033[?1002l"
	    "\033[?1000l";

	if (on) /* raw: constant mode sequences */
		tui_screen_add(scr, enable, sizeof enable - 1);
	else /* raw: constant mode sequences */
		tui_screen_add(scr, disable, sizeof disable - 1);
}

/* The screen in use, so that an exit from anywhere gives the terminal back. */
static struct tui_screen *tui_screen_current;

/*
 * Screens open, and curses screens let go of while others were open.
 * ncurses 6.4 (as Debian builds it, not reentrant) keeps one list of
 * windows for all screens, and delscreen frees every window on it: the
 * other screens' stdscr, curscr and newscr go too (stdscr is NULL after
 * set_term to one of them) and they draw nothing ever after; there is no
 * call to make them again. So a screen closed beside others cannot be
 * freed: its three windows are shrunk to one cell (their rows of cells
 * are most of what it holds, and a resize of another screen leaves a
 * 1x1 window as it is), and the SCREEN itself, a few kilobytes, is kept
 * until the last one closes, then all go.
 */
static size_t tui_screen_nopen;
static void tui_screen_mend(struct tui_screen *);
/* The screens open, each at the size of its own terminal (tui_screen_mend). */
static struct tui_screen **tui_screens;
static size_t tui_nscreens;
static SCREEN **tui_screen_dead;
static size_t tui_screen_ndead;

/* A screen kept beside others: its windows' cells go (see above). */
static void
tui_screen_shrink(SCREEN *sp)
{
	set_term(sp);
	wresize(stdscr, 1, 1);
	wresize(curscr, 1, 1);
	wresize(newscr, 1, 1);
}

static void
tui_screen_delete(SCREEN *sp)
{
	size_t i;

	tui_screen_dead = xreallocarray(tui_screen_dead, tui_screen_ndead + 1,
	    sizeof *tui_screen_dead);
	tui_screen_dead[tui_screen_ndead++] = sp;
	if (tui_screen_nopen > 0 && --tui_screen_nopen > 0) {
		tui_screen_shrink(sp);
		return;
	}
	for (i = 0; i < tui_screen_ndead; i++)
		delscreen(tui_screen_dead[i]);
	free(tui_screen_dead);
	tui_screen_dead = NULL;
	tui_screen_ndead = 0;
}

static unsigned tui_screen_walk(const char *, unsigned, bool);

/* Curses lets the terminal go, and the terminal gets its own modes back. */
static void
tui_screen_end(struct tui_screen *scr)
{
	int flags;

	/* Suspended, the terminal is the shell's: it was given back then. */
	if (scr->suspended)
		return;
	set_term(scr->sp);
	endwin();
	tui_screen_modes(scr, false);
	tui_screen_last(scr);
	if (scr->tio_saved)
		tcsetattr(scr->ttyfd, TCSADRAIN, &scr->tio);
	if ((flags = fcntl(scr->ttyfd, F_GETFL)) != -1)
		fcntl(scr->ttyfd, F_SETFL, flags & ~O_NONBLOCK);
}

static void
tui_screen_atexit(void)
{
	if (tui_screen_current != NULL)
		tui_screen_end(tui_screen_current);
}

struct tui_screen *
tui_screen_open(bool color, char **cause)
{
	int in, out;

	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
		*cause = xstrdup("the dashboard needs a terminal; run "
		    "'agentmux run' for a command without one");
		return NULL;
	}
	if ((in = dup(STDIN_FILENO)) == -1 || (out = dup(STDOUT_FILENO)) == -1)
		fatal("dup");
	return tui_screen_open_fds(NULL, in, out, getenv("TERM"), color,
	    cause);
}

/* Curses' modes for the dashboard, on the screen just made. */
static void
tui_screen_setup(struct tui_screen *scr, bool color)
{
	raw();
	noecho();
	nonl();
	intrflush(stdscr, FALSE);
	leaveok(stdscr, FALSE);
	idlok(stdscr, FALSE);
	/* Never stop a frame halfway to look at input: it flushed every line. */
	typeahead(-1);
	scr->shape = -1;
	scr->last_fg = scr->last_bg = ~0u;
	if (color && has_colors() && start_color() == OK) {
		use_default_colors();
		scr->color = true;
		scr->ncolors = COLORS;
	}
	tui_screen_styles(scr);
	curs_set(0);
	/*
	 * ncurses 6.4 flushes after every cursor movement until the screen
	 * has been through endwin once (it takes the screen for one not yet
	 * initialised): one write per line drawn. A suspend and resume now
	 * makes it buffer whole frames.
	 */
	refresh();
	endwin();
	refresh();
}

/* The terminal's modes as saved, made raw (again, after a suspend). */
static void
tui_screen_raw_again(struct tui_screen *scr)
{
	struct termios tio;

	if (!scr->tio_saved)
		return;
	tio = scr->tio;
	cfmakeraw(&tio);
	tio.c_cc[VMIN] = 1;
	tio.c_cc[VTIME] = 0;
	tcsetattr(scr->ttyfd, TCSADRAIN, &tio);
}

/*
 * The terminal in raw mode, as curses would set it: curses writes to a
 * memory file, so it cannot set the terminal's modes itself.
 */
static void
tui_screen_raw(struct tui_screen *scr)
{
	if (tcgetattr(scr->ttyfd, &scr->tio) == -1)
		return;
	scr->tio_saved = true;
	tui_screen_raw_again(scr);
}

/*
 * Curses never writes to the terminal: it draws into a memory file that
 * tui_screen_push empties into OBUF, and the loop writes that as the
 * terminal takes it. A terminal that stops reading costs its own
 * frames, never the loop's time.
 */
static bool
tui_screen_curses(struct tui_screen *scr, struct event_base *base,
    const char *term)
{
	int mfd;

	if ((mfd = memfd_create("agentmux-frame", MFD_CLOEXEC)) == -1 ||
	    (scr->out = fdopen(mfd, "w")) == NULL)
		fatal("cannot make the dashboard's frame buffer");
	scr->obuf = evbuffer_new();
	if (base != NULL)
		scr->wev = event_new(base, scr->ttyfd, EV_WRITE,
		    tui_screen_writable, scr);
	if (scr->obuf == NULL || (base != NULL && scr->wev == NULL))
		fatalx("cannot create the dashboard's output buffer");
	if (base != NULL)
		util_set_nonblock(scr->ttyfd);
	return (scr->sp = newterm(term, scr->out, scr->in)) != NULL;
}

static void
tui_screen_free(struct tui_screen *scr)
{
	if (scr->wev != NULL)
		event_free(scr->wev);
	if (scr->obuf != NULL)
		evbuffer_free(scr->obuf);
	fclose(scr->in);
	fclose(scr->out);
	close(scr->ttyfd);
	free(scr->line);
	free(scr);
	/* Curses draws on the screen in use again, not on one just freed. */
	if (tui_screen_current != NULL)
		set_term(tui_screen_current->sp);
}

struct tui_screen *
tui_screen_open_fds(struct event_base *base, int infd, int outfd,
    const char *term, bool color, char **cause)
{
	static bool registered;
	struct tui_screen *scr;

	if (!isatty(infd) || !isatty(outfd)) {
		*cause = xstrdup("the dashboard needs a terminal; run "
		    "'agentmux run' for a command without one");
		close(infd);
		close(outfd);
		return NULL;
	}
	tui_screen_locale();
	scr = xcalloc(1, sizeof *scr);
	scr->ttyfd = outfd;
	if ((scr->in = fdopen(infd, "r")) == NULL)
		fatal("fdopen");
	if (!tui_screen_curses(scr, base, term)) {
		*cause = xprintf("cannot use terminal type '%s'; set TERM to "
		    "one this system knows (e.g. xterm-256color)",
		    term != NULL ? term : "");
		tui_screen_free(scr);
		return NULL;
	}
	set_term(scr->sp);
	tui_screens = xreallocarray(tui_screens, tui_nscreens + 1,
	    sizeof *tui_screens);
	tui_screens[tui_nscreens++] = scr;
	/* Made at terminfo's size, it changed the others' windows to it. */
	tui_screen_mend(scr);
	tui_screen_raw(scr);
	tui_screen_resize(scr);
	if (scr->rows == 0)
		getmaxyx(stdscr, scr->rows, scr->cols);
	tui_screen_setup(scr, color);
	tui_screen_modes(scr, true);
	tui_screen_current = scr;
	tui_screen_nopen++;
	if (!registered) {
		atexit(tui_screen_atexit);
		registered = true;
	}
	return scr;
}

int
tui_screen_infd(const struct tui_screen *scr)
{
	return fileno(scr->in);
}

void
tui_screen_write(struct tui_screen *scr, const void *data, size_t len)
{
	if (scr->suspended)
		return;     /* the shell's terminal now */
	tui_screen_add(scr, data, len);
}

/* The terminal back as it was: the cursor's shape, curses' modes, its own. */
static void
tui_screen_give(struct tui_screen *scr)
{
	const char *se;

	if (scr->suspended)
		return;
	set_term(scr->sp);
	curs_set(1);
	se = tigetstr("Ss");
	if (scr->shape > 0 && se != NULL && se != (char *)-1 &&
	    (se = tiparm(se, 0)) != NULL)
		/* raw: terminfo's Ss with 0, no text of a pane's */
		tui_screen_add(scr, se, strlen(se));
	tui_screen_end(scr);
}

void
tui_screen_close(struct tui_screen *scr)
{
	size_t i;

	if (scr == NULL)
		return;
	if (tui_screen_current == scr)
		tui_screen_current = NULL;
	for (i = 0; i < tui_nscreens; i++) {
		if (tui_screens[i] == scr) {
			tui_screens[i] = tui_screens[--tui_nscreens];
			break;
		}
	}
	tui_screen_give(scr);
	tui_screen_delete(scr->sp);
	tui_screen_free(scr);
}

void
tui_screen_suspend(struct tui_screen *scr)
{
	if (scr->suspended)
		return;
	tui_screen_give(scr);
	scr->suspended = true;
	scr->held = false;
	scr->stuck_us = 0;
	if (scr->wev != NULL)
		event_del(scr->wev);
}

void
tui_screen_resume(struct tui_screen *scr)
{
	if (!scr->suspended)
		return;
	scr->suspended = false;
	if (scr->wev != NULL)
		util_set_nonblock(scr->ttyfd);
	tui_screen_raw_again(scr);
	tui_screen_resize(scr);
	set_term(scr->sp);
	/* After endwin, curses takes the terminal again at its next refresh. */
	scr->shape = -1;
	scr->invalid = true;
	tui_screen_modes(scr, true);
}

void
tui_screen_use(struct tui_screen *scr)
{
	set_term(scr->sp);
	tui_screen_current = scr;
}

void
tui_screen_size(const struct tui_screen *scr, unsigned *sx, unsigned *sy)
{
	int y, x;

	/*
	 * The screen's own window: set_term leaves LINES and COLS those of
	 * the screen made or resized last, another client's.
	 */
	set_term(scr->sp);
	getmaxyx(stdscr, y, x);
	*sx = x > 0 ? (unsigned)x : 1;
	*sy = y > 0 ? (unsigned)y : 1;
}

/*
 * Puts the other screens' windows back at their own sizes after a
 * resizeterm. ncurses 6.4 keeps one list of windows for all screens, and
 * resizeterm on one screen resizes every screen's stdscr, curscr and
 * newscr: the next refresh of another screen then read its lines past
 * their ends (a heap overflow, then a crash in doupdate, with one
 * terminal taller and another wider). A screen mended is drawn whole.
 */
static void
tui_screen_mend(struct tui_screen *except)
{
	struct tui_screen *o;
	WINDOW *w[3];
	bool changed;
	size_t i, k;
	int y, x;

	for (i = 0; i < tui_nscreens; i++) {
		if ((o = tui_screens[i]) == except || o->rows <= 0 ||
		    o->cols <= 0)
			continue;
		set_term(o->sp);
		w[0] = stdscr;
		w[1] = curscr;
		w[2] = newscr;
		changed = false;
		for (k = 0; k < nitems(w); k++) {
			getmaxyx(w[k], y, x);
			if (y != o->rows || x != o->cols) {
				wresize(w[k], o->rows, o->cols);
				changed = true;
			}
		}
		if (changed) {
			clearok(curscr, TRUE);
			o->invalid = true;
		}
	}
	set_term(except->sp);
}

void
tui_screen_resize(struct tui_screen *scr)
{
	struct winsize ws;

	if (ioctl(scr->ttyfd, TIOCGWINSZ, &ws) == -1 || ws.ws_row == 0 ||
	    ws.ws_col == 0)
		return;
	/*
	 * A terminal says what size it is: a huge one (65535x65535 set on a
	 * pty) would have curses allocate billions of cells for each window.
	 * It is drawn on as TUI_SCREEN_MAX at most.
	 */
	if (ws.ws_row > TUI_SCREEN_MAX)
		ws.ws_row = TUI_SCREEN_MAX;
	if (ws.ws_col > TUI_SCREEN_MAX)
		ws.ws_col = TUI_SCREEN_MAX;
	set_term(scr->sp);
	if (resizeterm(ws.ws_row, ws.ws_col) != OK)
		return;
	scr->rows = ws.ws_row;
	scr->cols = ws.ws_col;
	scr->invalid = true;
	tui_screen_mend(scr);
}

void
tui_screen_invalidate(struct tui_screen *scr)
{
	if (scr != NULL)
		scr->invalid = true;
}

int
tui_screen_colors(const struct tui_screen *scr)
{
	return scr->color ? scr->ncolors : 0;
}

static void
tui_screen_set_style(struct tui_screen *scr, enum tui_style style)
{
	attr_set(scr->style_attr[style], 0, &scr->style_pair[style]);
}

void
tui_screen_fill(struct tui_screen *scr, const struct tui_rect *r,
    enum tui_style style)
{
	unsigned y;

	tui_screen_set_style(scr, style);
	for (y = r->y; y < r->y + r->sy; y++)
		mvhline((int)y, (int)r->x, ' ', (int)r->sx);
	attr_set(A_NORMAL, 0, NULL);
}

/*
 * Every piece of text the dashboard draws comes here, and goes through
 * the quoting helper first: a control, C1, bidi or invisible character or
 * a byte that is not UTF-8, from a jail or anywhere else, is drawn as its
 * escape (\033, \302\233, \342\200\256), never handed to the terminal.
 * Names from a jail are quoted by the callers too, so they read as names.
 */
unsigned
tui_screen_print(struct tui_screen *scr, unsigned x, unsigned y,
    unsigned width, enum tui_style style, const char *text)
{
	unsigned used;

	tui_screen_set_style(scr, style);
	move((int)y, (int)x);
	used = tui_screen_walk(text, width, true);
	attr_set(A_NORMAL, 0, NULL);
	return used;
}

unsigned
tui_screen_width(const char *text)
{
	return tui_screen_walk(text, UINT_MAX, false);
}

/* TEXT made safe, drawn at the cursor (if DRAW) up to WIDTH columns; returns the columns. */
static unsigned
tui_screen_walk(const char *text, unsigned width, bool draw)
{
	mbstate_t ps;
	wchar_t wc;
	struct buf safe;
	const char *p;
	size_t n, left;
	unsigned used = 0;
	int w;

	buf_init(&safe);
	quote_text_add(&safe, text, strlen(text));
	p = safe.data != NULL ? safe.data : "";
	left = safe.len;
	memset(&ps, 0, sizeof ps);
	while (left > 0 && used < width) {
		n = mbrtowc(&wc, p, left, &ps);
		if (n == (size_t)-1 || n == (size_t)-2) {
			wc = L'?';
			n = 1;
			memset(&ps, 0, sizeof ps);
		} else if (n == 0)
			break;
		if (wc < 0x20) /* the tabs and line ends quote_text_add keeps */
			wc = L' ';
		if ((w = wcwidth(wc)) < 0)
			w = 1;
		if (used + (unsigned)w > width)
			break;
		if (draw)
			addnwstr(&wc, 1);
		used += (unsigned)w;
		p += n;
		left -= n;
	}
	buf_free(&safe);
	return used;
}

unsigned
tui_screen_printf(struct tui_screen *scr, unsigned x, unsigned y,
    unsigned width, enum tui_style style, const char *fmt, ...)
{
	va_list ap;
	char *s;
	unsigned used;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) == -1)
		fatalx("out of memory");
	va_end(ap);
	used = tui_screen_print(scr, x, y, width, style, s);
	free(s);
	return used;
}

void
tui_screen_border(struct tui_screen *scr, const struct tui_rect *r,
    enum tui_style style)
{
	tui_screen_set_style(scr, style);
	if (r->sx == 1)
		mvvline_set((int)r->y, (int)r->x, WACS_VLINE, (int)r->sy);
	else
		mvhline_set((int)r->y, (int)r->x, WACS_HLINE, (int)r->sx);
	attr_set(A_NORMAL, 0, NULL);
}

/* Fills one curses cell from grid cell C of row Y. */
static void
tui_screen_cell(struct tui_screen *scr, struct pane_grid *gd,
    const struct pane_cell *c, int y, bool reverse, cchar_t *cc)
{
	uint32_t chars[PANE_CELL_MAXCHARS];
	wchar_t w[PANE_CELL_MAXCHARS + 1];
	size_t n, i;
	attr_t attr = tui_screen_attrs(c->attr);
	int pair = tui_screen_pair(scr, c->fg, c->bg);

	n = pane_grid_chars(gd, c, y, chars);
	if (c->attr & PANE_ATTR_CONCEAL) {
		/* Concealed text shows as blanks, as xterm shows it. */
		n = 0;
		attr &= ~(attr_t)A_UNDERLINE;
	}
	for (i = 0; i < n; i++) {
		w[i] = (wchar_t)chars[i];
		if (chars[i] < 0x20 || (chars[i] >= 0x7f && chars[i] < 0xa0))
			w[i] = L' ';
	}
	if (n == 0)
		w[n++] = L' ';
	w[n] = L'\0';
	if (reverse)
		attr ^= A_REVERSE;
	if (setcchar(cc, w, attr, 0, &pair) == ERR) {
		w[0] = L'?';
		w[1] = L'\0';
		setcchar(cc, w, attr, 0, &pair);
	}
}

/* Makes room in the scratch line for N cells. */
static void
tui_screen_line_reserve(struct tui_screen *scr, size_t n)
{
	if (scr->linecap >= n)
		return;
	scr->linecap = n;
	scr->line = xreallocarray(scr->line, scr->linecap, sizeof *scr->line);
}

/* A blank in the attributes and colours of curses cell CC. */
static void
tui_screen_blank_like(const cchar_t *cc, cchar_t *blank)
{
	wchar_t w[CCHARW_MAX + 1];
	attr_t attr;
	short pair;
	int pair_ext;
	static const wchar_t sp[] = L" ";

	if (getcchar(cc, w, &attr, &pair, &pair_ext) == ERR)
		pair_ext = 0;
	setcchar(blank, sp, attr & ~(attr_t)A_UNDERLINE, 0, &pair_ext);
}

/*
 * Draws double-width (or double-height) grid row GY in W columns at
 * screen row RY, column RX: each cell, then a blank beside it, so the row
 * is as wide on the screen as libvterm laid it out (half the cells).
 */
static void
tui_screen_row_wide(struct tui_screen *scr, struct pane_grid *gd, int gy,
    unsigned rx, unsigned ry, unsigned w, bool reverse)
{
	const struct pane_cell *c;
	unsigned x, col = 0;
	size_t n = 0;

	tui_screen_line_reserve(scr, w + 1);
	for (x = 0; col < w; x++) {
		c = pane_grid_cell(gd, x, gy);
		tui_screen_cell(scr, gd, c, gy, reverse, &scr->line[n]);
		if (c->wide && col + 4 <= w) {
			/* Its right half's cell adds the other two columns. */
			n++;
			col += 2;
			continue;
		}
		if (c->wide || c->pad)
			tui_screen_blank_like(&scr->line[n], &scr->line[n]);
		n++;
		if (++col < w) {
			tui_screen_blank_like(&scr->line[n - 1], &scr->line[n]);
			n++;
			col++;
		}
	}
	mvadd_wchnstr((int)ry, (int)rx, scr->line, (int)n);
}

/* Draws columns [X0, X1) of grid row GY at screen row RY, column RX. */
static void
tui_screen_row(struct tui_screen *scr, struct pane_grid *gd, int gy,
    unsigned rx, unsigned ry, unsigned x0, unsigned x1, bool reverse)
{
	const struct pane_cell *c;
	unsigned x;
	size_t n = 0;

	if (x0 > 0 && pane_grid_cell(gd, x0, gy)->pad)
		x0--;
	tui_screen_line_reserve(scr, x1 - x0);
	for (x = x0; x < x1; x++) {
		c = pane_grid_cell(gd, x, gy);
		if (c->pad)
			continue;
		tui_screen_cell(scr, gd, c, gy, reverse, &scr->line[n++]);
	}
	mvadd_wchnstr((int)ry, (int)(rx + x0), scr->line, (int)n);
}

void
tui_screen_draw_grid(struct tui_screen *scr, struct pane_grid *gd,
    const struct tui_rect *r, unsigned offset, bool reverse, bool all)
{
	unsigned sx = pane_grid_sx(gd), y, x0, x1, w;
	int gy;

	w = sx < r->sx ? sx : r->sx;
	if (offset > pane_grid_hsize(gd))
		offset = pane_grid_hsize(gd);
	if (offset != 0)
		all = true;
	for (y = 0; y < r->sy; y++) {
		gy = (int)y - (int)offset;
		if (y >= pane_grid_sy(gd) && gy >= 0) {
			if (all)
				mvhline((int)(r->y + y), (int)r->x, ' ', (int)r->sx);
			continue;
		}
		if (all) {
			x0 = 0;
			x1 = w;
		} else if (!pane_grid_row_dirty(gd, (unsigned)gy, &x0, &x1))
			continue;
		if (pane_grid_lsize(gd, gy) != PANE_LSIZE_SINGLE) {
			tui_screen_row_wide(scr, gd, gy, r->x, r->y + y, w,
			    reverse);
			x0 = x1 = w;
		}
		if (x1 > w)
			x1 = w;
		if (x0 < x1)
			tui_screen_row(scr, gd, gy, r->x, r->y + y, x0, x1, reverse);
		if (all && w < r->sx)
			mvhline((int)(r->y + y), (int)(r->x + w), ' ',
			    (int)(r->sx - w));
	}
	pane_grid_clean(gd);
}

void
tui_screen_draw_cells(struct tui_screen *scr, struct pane_grid *gd,
    const struct tui_rect *r, unsigned vy, int gy, unsigned x0, unsigned x1,
    bool reverse)
{
	unsigned w = pane_grid_sx(gd) < r->sx ? pane_grid_sx(gd) : r->sx;

	if (x1 > w)
		x1 = w;
	if (vy >= r->sy || x0 >= x1 ||
	    pane_grid_lsize(gd, gy) != PANE_LSIZE_SINGLE)
		return;
	tui_screen_row(scr, gd, gy, r->x, r->y + vy, x0, x1, reverse);
}

/*
 * The shape goes to the terminal as DECSCUSR (terminfo's Ss) with the
 * pane's own number; 0, the terminal's default, is sent only to undo a
 * shape sent before. It is written after the frame: what putp queues
 * between a move and the refresh never reached the terminal.
 */
void
tui_screen_cursor(struct tui_screen *scr, bool visible, unsigned x,
    unsigned y, enum pane_cursor_shape shape)
{
	const char *ss, *seq;

	curs_set(visible ? 1 : 0);
	if (!visible)
		return;
	move((int)y, (int)x);
	if (scr->shape == (int)shape ||
	    (scr->shape == -1 && shape == PANE_CURSOR_DEFAULT))
		return;
	ss = tigetstr("Ss");
	if (ss == NULL || ss == (char *)-1)
		return;
	scr->shape = (int)shape;
	if ((seq = tiparm(ss, scr->shape)) != NULL &&
	    strlen(seq) < sizeof scr->pending)
		memcpy(scr->pending, seq, strlen(seq) + 1);
}

void
tui_screen_flush(struct tui_screen *scr)
{
	if (scr->suspended)
		return;     /* drawn whole when resumed */
	/* The terminal is not reading: the frame waits in curses' windows. */
	if (evbuffer_get_length(scr->obuf) > TUI_SCREEN_HIGH) {
		scr->held = true;
		return;
	}
	set_term(scr->sp);
	if (scr->invalid) {
		clearok(curscr, TRUE);
		scr->invalid = false;
	}
	refresh();
	tui_screen_take(scr);
	if (scr->pending[0] != '\0') {
		/* raw: terminfo's Ss with a shape of 0-6 (pane_vtseq) */
		evbuffer_add(scr->obuf, scr->pending, strlen(scr->pending));
		scr->pending[0] = '\0';
	}
	tui_screen_push(scr);
}

/* ---- frame pacing ---- */

#define TUI_FRAME_US 16667

struct tui_frames {
	struct event *ev;
	void (*draw)(void *);
	void *arg;
	int64_t last_us;
	uint64_t count;
};

static void
tui_frames_fire(evutil_socket_t fd, short what, void *arg)
{
	struct tui_frames *fr = arg;

	fr->last_us = util_mono_us();
	fr->count++;
	fr->draw(fr->arg);
}

struct tui_frames *
tui_frames_create(struct event_base *base, void (*draw)(void *), void *arg)
{
	struct tui_frames *fr = xcalloc(1, sizeof *fr);

	fr->draw = draw;
	fr->arg = arg;
	fr->ev = evtimer_new(base, tui_frames_fire, fr);
	if (fr->ev == NULL)
		fatalx("cannot create a timer event");
	return fr;
}

void
tui_frames_free(struct tui_frames *fr)
{
	if (fr == NULL)
		return;
	event_free(fr->ev);
	free(fr);
}

void
tui_screen_set_stuck_cb(struct tui_screen *scr, void (*cb)(void *), void *arg)
{
	scr->stuck_cb = cb;
	scr->stuck_arg = arg;
}

int64_t
tui_screen_stuck_us(const struct tui_screen *scr)
{
	return scr->stuck_us == 0 ? 0 : util_mono_us() - scr->stuck_us;
}

void
tui_frames_schedule(struct tui_frames *fr)
{
	struct timeval tv = { 0, 0 };
	int64_t wait;

	if (evtimer_pending(fr->ev, NULL))
		return;
	wait = fr->last_us + TUI_FRAME_US - util_mono_us();
	if (wait > 0)
		tv.tv_usec = (suseconds_t)wait;
	evtimer_add(fr->ev, &tv);
}

uint64_t
tui_frames_count(const struct tui_frames *fr)
{
	return fr->count;
}
