/* Terminal input: xterm-style keys, SGR mouse and bracketed paste parsed into events; the prefix key table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "tui.h"

/* A CSI longer than this is garbage: it is dropped. */
#define TUI_KEYS_CSI_MAX 64

struct tui_keys {
	struct buf pending;   /* bytes of an incomplete sequence */
	bool pasting;
	struct buf paste;
};

static const char tui_keys_paste_end[] = "\x1b[201~";

struct tui_keys *
tui_keys_create(void)
{
	struct tui_keys *tk = xcalloc(1, sizeof *tk);

	buf_init(&tk->pending);
	buf_init(&tk->paste);
	return tk;
}

void
tui_keys_free(struct tui_keys *tk)
{
	if (tk == NULL)
		return;
	buf_free(&tk->pending);
	buf_free(&tk->paste);
	free(tk);
}

static void
tui_keys_emit(tui_input_cb fn, void *arg, uint32_t code, int mods)
{
	struct tui_input in = { .type = TUI_INPUT_KEY };

	in.key.code = code;
	in.key.mods = mods;
	fn(arg, &in);
}

/* The modifier parameter of xterm keys: 1 + shift(1) + alt(2) + ctrl(4). */
static int
tui_keys_mods(long m)
{
	int mods = 0;

	if (m < 2)
		return 0;
	m--;
	if (m & 1)
		mods |= TUI_MOD_SHIFT;
	if (m & 2)
		mods |= TUI_MOD_ALT;
	if (m & 4)
		mods |= TUI_MOD_CTRL;
	return mods;
}

/* The key of "CSI N ~". */
static uint32_t
tui_keys_tilde(long n)
{
	switch (n) {
	case 1:
	case 7:
		return TUI_KEY_HOME;
	case 2:
		return TUI_KEY_INSERT;
	case 3:
		return TUI_KEY_DELETE;
	case 4:
	case 8:
		return TUI_KEY_END;
	case 5:
		return TUI_KEY_PAGEUP;
	case 6:
		return TUI_KEY_PAGEDOWN;
	}
	if (n >= 11 && n <= 15)
		return TUI_KEY_F1 + (uint32_t)(n - 11);
	if (n >= 17 && n <= 21)
		return TUI_KEY_F1 + 5 + (uint32_t)(n - 17);
	if (n >= 23 && n <= 24)
		return TUI_KEY_F1 + 10 + (uint32_t)(n - 23);
	return 0;
}

/* The key of a final letter (CSI or SS3): arrows, Home/End, F1-F4. */
static uint32_t
tui_keys_letter(char c)
{
	switch (c) {
	case 'A':
		return TUI_KEY_UP;
	case 'B':
		return TUI_KEY_DOWN;
	case 'C':
		return TUI_KEY_RIGHT;
	case 'D':
		return TUI_KEY_LEFT;
	case 'H':
		return TUI_KEY_HOME;
	case 'F':
		return TUI_KEY_END;
	case 'P':
	case 'Q':
	case 'R':
	case 'S':
		return TUI_KEY_F1 + (uint32_t)(c - 'P');
	case 'Z':
		return TUI_KEY_BACKTAB;
	case 'I':
		return TUI_KEY_FOCUS_IN;
	case 'O':
		return TUI_KEY_FOCUS_OUT;
	case 'M':
		return '\r';
	}
	return 0;
}

/* Splits "a;b;c" into up to N numbers (missing ones are 0); returns how many. */
static size_t
tui_keys_params(const char *s, size_t len, long *v, size_t n)
{
	size_t i = 0, k;

	memset(v, 0, n * sizeof *v);
	for (k = 0; k < len && i < n; k++) {
		if (s[k] == ';')
			i++;
		else if (s[k] >= '0' && s[k] <= '9')
			v[i] = v[i] * 10 + (s[k] - '0');
		else if (s[k] == ':')
			break;
	}
	return len == 0 ? 0 : i + 1;
}

/* An SGR mouse report: P is "<b;x;y", FINAL 'M' (press) or 'm' (release). */
static void
tui_keys_mouse(const char *p, size_t len, char final, tui_input_cb fn,
    void *arg)
{
	struct tui_input in = { .type = TUI_INPUT_MOUSE };
	long v[3];
	long b;

	if (tui_keys_params(p + 1, len - 1, v, 3) != 3 || v[1] < 1 || v[2] < 1)
		return;
	b = v[0];
	in.mouse.x = (unsigned)(v[1] - 1);
	in.mouse.y = (unsigned)(v[2] - 1);
	in.mouse.mods = ((b & 4) ? TUI_MOD_SHIFT : 0) |
	    ((b & 8) ? TUI_MOD_ALT : 0) | ((b & 16) ? TUI_MOD_CTRL : 0);
	in.mouse.button = (int)(b & 3) + 1;
	if (b & 64)
		in.mouse.type = (b & 1) ? TUI_MOUSE_WHEEL_DOWN : TUI_MOUSE_WHEEL_UP;
	else if (b & 32)
		in.mouse.type = TUI_MOUSE_DRAG;
	else
		in.mouse.type = final == 'M' ? TUI_MOUSE_PRESS : TUI_MOUSE_RELEASE;
	fn(arg, &in);
}

/* A complete CSI: P..P+LEN are the bytes between "ESC [" and FINAL. */
static void
tui_keys_csi(struct tui_keys *tk, const char *p, size_t len, char final,
    tui_input_cb fn, void *arg)
{
	long v[2];
	size_t n;
	uint32_t code;

	if (len > 0 && p[0] == '<' && (final == 'M' || final == 'm')) {
		tui_keys_mouse(p, len, final, fn, arg);
		return;
	}
	if (len > 0 && (p[0] < '0' || p[0] > ';'))
		return;       /* private replies and the like: not keys */
	n = tui_keys_params(p, len, v, 2);
	if (final == '~') {
		if (v[0] == 200) {
			tk->pasting = true;
			buf_reset(&tk->paste);
			return;
		}
		if ((code = tui_keys_tilde(v[0])) != 0)
			tui_keys_emit(fn, arg, code, tui_keys_mods(v[1]));
		return;
	}
	if (final == 'u' && n >= 1) {
		tui_keys_emit(fn, arg, (uint32_t)v[0], tui_keys_mods(v[1]));
		return;
	}
	if ((code = tui_keys_letter(final)) != 0 && final != 'M')
		tui_keys_emit(fn, arg, code, n == 2 ? tui_keys_mods(v[1]) : 0);
}

/* Length of the UTF-8 sequence starting with byte C (1 for a stray byte). */
static size_t
tui_keys_utf8_len(unsigned char c)
{
	if (c >= 0xf0 && c < 0xf8)
		return 4;
	if (c >= 0xe0)
		return c < 0xf0 ? 3 : 1;
	if (c >= 0xc2)
		return 2;
	return 1;
}

static uint32_t
tui_keys_utf8_decode(const unsigned char *s, size_t n)
{
	uint32_t cp;
	size_t i;

	if (n == 1)
		return s[0] >= 0x80 ? 0xfffd : s[0];
	cp = s[0] & (0x7f >> n);
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0xfffd;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	return cp;
}

/*
 * Consumes a paste's bytes up to its end marker; returns how many bytes of
 * P were used. The marker may be split between reads, so a possible start
 * of it at the end stays pending.
 */
static size_t
tui_keys_paste(struct tui_keys *tk, const char *p, size_t len,
    tui_input_cb fn, void *arg)
{
	struct tui_input in = { .type = TUI_INPUT_PASTE };
	size_t i, m = sizeof tui_keys_paste_end - 1;

	for (i = 0; i < len; i++) {
		if (p[i] != 0x1b)
			continue;
		if (len - i < m) {
			if (memcmp(p + i, tui_keys_paste_end, len - i) == 0)
				break;
			continue;
		}
		if (memcmp(p + i, tui_keys_paste_end, m) == 0) {
			buf_add(&tk->paste, p, i);
			tk->pasting = false;
			in.paste = tk->paste.data != NULL ? tk->paste.data : "";
			in.pastelen = tk->paste.len;
			fn(arg, &in);
			buf_reset(&tk->paste);
			return i + m;
		}
	}
	buf_add(&tk->paste, p, i);
	return i;
}

/*
 * Parses one input at P; returns the bytes used, or 0 if P holds only the
 * start of a sequence that needs more bytes.
 */
static size_t
tui_keys_one(struct tui_keys *tk, const char *p, size_t len, tui_input_cb fn,
    void *arg)
{
	const unsigned char *u = (const unsigned char *)p;
	size_t n, i;

	if (tk->pasting)
		return tui_keys_paste(tk, p, len, fn, arg);
	if (u[0] != 0x1b) {
		n = tui_keys_utf8_len(u[0]);
		if (n > len)
			return 0;
		tui_keys_emit(fn, arg, tui_keys_utf8_decode(u, n), 0);
		return n;
	}
	if (len < 2)
		return 0;
	if (p[1] == '[') {
		for (i = 2; i < len && i < TUI_KEYS_CSI_MAX; i++) {
			if (u[i] >= 0x40 && u[i] <= 0x7e)
				break;
		}
		if (i == TUI_KEYS_CSI_MAX)
			return i;
		if (i == len)
			return 0;
		/* X10 mouse: three raw bytes follow "CSI M". */
		if (i == 2 && p[2] == 'M')
			return len < 6 ? 0 : 6;
		tui_keys_csi(tk, p + 2, i - 2, p[i], fn, arg);
		return i + 1;
	}
	if (p[1] == 'O') {
		if (len < 3)
			return 0;
		if (tui_keys_letter(p[2]) != 0)
			tui_keys_emit(fn, arg, tui_keys_letter(p[2]), 0);
		return 3;
	}
	/* ESC then a key: that key with Alt. */
	n = tui_keys_utf8_len(u[1]);
	if (n + 1 > len)
		return 0;
	tui_keys_emit(fn, arg, tui_keys_utf8_decode(u + 1, n), TUI_MOD_ALT);
	return n + 1;
}

bool
tui_keys_parse(struct tui_keys *tk, const char *data, size_t len,
    tui_input_cb fn, void *arg)
{
	size_t off = 0, used;

	buf_add(&tk->pending, data, len);
	while (off < tk->pending.len) {
		used = tui_keys_one(tk, tk->pending.data + off,
		    tk->pending.len - off, fn, arg);
		if (used == 0)
			break;
		off += used;
	}
	memmove(tk->pending.data, tk->pending.data + off, tk->pending.len - off);
	tk->pending.len -= off;
	tk->pending.data[tk->pending.len] = '\0';
	return tk->pending.len != 0 && !tk->pasting;
}

void
tui_keys_flush(struct tui_keys *tk, tui_input_cb fn, void *arg)
{
	struct buf rest;

	if (tk->pending.len == 0 || tk->pasting)
		return;
	if (tk->pending.data[0] != 0x1b) {
		/* A truncated UTF-8 sequence: nothing anyone typed. */
		buf_reset(&tk->pending);
		return;
	}
	/* A lone ESC, or ESC that began something never finished. */
	buf_init(&rest);
	buf_add(&rest, tk->pending.data + 1, tk->pending.len - 1);
	buf_reset(&tk->pending);
	tui_keys_emit(fn, arg, 0x1b, 0);
	if (rest.len > 0 && tui_keys_parse(tk, rest.data, rest.len, fn, arg))
		tui_keys_flush(tk, fn, arg);
	buf_free(&rest);
}

const char *
tui_keys_name(const struct tui_key *k)
{
	static const char *special[] = { "Up", "Down", "Left", "Right", "Home",
	    "End", "Insert", "Delete", "PageUp", "PageDown", "BTab" };
	static char name[32];
	char key[16];

	if (k->code >= TUI_KEY_F1 && k->code <= TUI_KEY_F12)
		snprintf(key, sizeof key, "F%u", k->code - TUI_KEY_F1 + 1);
	else if (k->code >= TUI_KEY_BASE && k->code < TUI_KEY_F1)
		snprintf(key, sizeof key, "%s", special[k->code - TUI_KEY_BASE]);
	else if (k->code == '\r')
		snprintf(key, sizeof key, "Enter");
	else if (k->code == '\t')
		snprintf(key, sizeof key, "Tab");
	else if (k->code == 0x1b)
		snprintf(key, sizeof key, "Escape");
	else if (k->code == ' ')
		snprintf(key, sizeof key, "Space");
	else if (k->code == 0x7f)
		snprintf(key, sizeof key, "BSpace");
	else if (k->code == 0)
		snprintf(key, sizeof key, "C-Space");
	else if (k->code < 0x20)
		snprintf(key, sizeof key, "C-%c", (char)(k->code <= 26 ?
		    k->code + 0x60 : k->code + 0x40));
	else if (k->code < 0x80)
		snprintf(key, sizeof key, "%c", (char)k->code);
	else
		snprintf(key, sizeof key, "U+%04X", k->code);
	snprintf(name, sizeof name, "%s%s%s%s", k->mods & TUI_MOD_CTRL ? "C-" :
	    "", k->mods & TUI_MOD_ALT ? "M-" : "", k->mods & TUI_MOD_SHIFT ?
	    "S-" : "", key);
	return name;
}

static const struct tui_binding tui_keys_table[] = {
	{ .key = 'c', .action = TUI_ACT_NEW, .name = "c",
	  .help = "new session (pick an agent, optionally another "
	  "project; Ctrl-T there: in a worktree of its own)" },
	{ .key = 'x', .action = TUI_ACT_CLOSE, .name = "x",
	  .help = "close the focused session (asks first; a hang-up, then its jail is stopped)" },
	{ .key = 'n', .action = TUI_ACT_NEXT, .name = "n",
	  .help = "next session" },
	{ .key = 'p', .action = TUI_ACT_PREV, .name = "p",
	  .help = "previous session" },
	{ .key = 'w', .action = TUI_ACT_NEXT_NEEDS, .name = "w",
	  .help = "the next session that needs you (or has a prompt)" },
	{ .key = 's', .action = TUI_ACT_SESSIONS, .name = "s",
	  .help = "sessions: the state and cost of each (CPU, memory, "
	  "processes, disk, requests, model turns)" },
	{ .key = 'R', .action = TUI_ACT_RELOAD, .name = "R",
	  .help = "re-read the config file for sessions started from now "
	  "(agentmux reload)" },
	{ .key = 'f', .action = TUI_ACT_PORT, .name = "f",
	  .help = "forward a port of the focused session's jail to the host "
	  "(its dev server; agentmux port)" },
	{ .key = 'P', .action = TUI_ACT_PAUSE, .name = "P",
	  .help = "pause the focused session (its jail frozen, its requests "
	  "and prompts held) / resume it" },
	{ .key = '0', .action = TUI_ACT_SELECT, .arg = 0, .name = "0-9",
	  .help = "the Nth session in the status bar" },
	{ .key = '1', .action = TUI_ACT_SELECT, .arg = 1 },
	{ .key = '2', .action = TUI_ACT_SELECT, .arg = 2 },
	{ .key = '3', .action = TUI_ACT_SELECT, .arg = 3 },
	{ .key = '4', .action = TUI_ACT_SELECT, .arg = 4 },
	{ .key = '5', .action = TUI_ACT_SELECT, .arg = 5 },
	{ .key = '6', .action = TUI_ACT_SELECT, .arg = 6 },
	{ .key = '7', .action = TUI_ACT_SELECT, .arg = 7 },
	{ .key = '8', .action = TUI_ACT_SELECT, .arg = 8 },
	{ .key = '9', .action = TUI_ACT_SELECT, .arg = 9 },
	{ .key = 'z', .action = TUI_ACT_ZOOM, .name = "z",
	  .help = "zoom the focused pane / show the split again" },
	{ .key = '|', .action = TUI_ACT_SPLIT_H, .name = "|",
	  .help = "split side by side with another session" },
	{ .key = '-', .action = TUI_ACT_SPLIT_V, .name = "-",
	  .help = "split stacked with another session" },
	{ .key = TUI_KEY_UP, .action = TUI_ACT_FOCUS, .arg = TUI_DIR_UP,
	  .name = "arrows", .help = "focus the pane in that direction" },
	{ .key = TUI_KEY_DOWN, .action = TUI_ACT_FOCUS, .arg = TUI_DIR_DOWN },
	{ .key = TUI_KEY_LEFT, .action = TUI_ACT_FOCUS, .arg = TUI_DIR_LEFT },
	{ .key = TUI_KEY_RIGHT, .action = TUI_ACT_FOCUS, .arg = TUI_DIR_RIGHT },
	{ .key = '[', .action = TUI_ACT_SCROLLBACK, .name = "[",
	  .help = "browse the pane's scrollback (also PageUp after the prefix)" },
	{ .key = TUI_KEY_PAGEUP, .action = TUI_ACT_SCROLLBACK },
	{ .key = ']', .action = TUI_ACT_PASTE, .name = "]",
	  .help = "paste the last copy into the focused pane" },
	{ .key = 'r', .action = TUI_ACT_REQUESTS, .name = "r",
	  .help = "requests panel" },
	{ .key = 'a', .action = TUI_ACT_PROMPTS, .name = "a",
	  .help = "answer a frozen session's disk question, else pending "
	  "prompts (pauses their countdown)" },
	{ .key = 'h', .action = TUI_ACT_HISTORY, .name = "h",
	  .help = "history of past sessions" },
	{ .key = 'u', .action = TUI_ACT_SNAPSHOTS, .name = "u",
	  .help = "snapshots of the focused session, and undo" },
	{ .key = 'D', .action = TUI_ACT_DIFF, .name = "D",
	  .help = "what the focused session changed in the project" },
	{ .key = 'g', .action = TUI_ACT_CONFDIFF, .name = "g",
	  .help = "what the focused session changed in its agent config" },
	{ .key = '?', .action = TUI_ACT_HELP, .name = "?",
	  .help = "this help" },
	{ .key = 'q', .action = TUI_ACT_QUIT, .name = "q",
	  .help = "quit (asks first while sessions run)" },
	{ .key = 'd', .action = TUI_ACT_DETACH, .name = "d",
	  .help = "detach: the sessions keep running ('agentmux attach' "
	  "comes back)" },
	{ .key = ':', .action = TUI_ACT_COMMAND, .name = ":",
	  .help = "command prompt: new, kill, send, pause, resume, port, "
	  "attach, ls, reload, detach (Tab completes, Esc leaves)" },
	{ .key = 0x1a, .action = TUI_ACT_SUSPEND, .name = "C-z",
	  .help = "suspend this client as a shell job ('fg' comes back); C-z "
	  "without the prefix goes to the pane" },
	{ .key = 0x0c, .action = TUI_ACT_REDRAW, .name = "C-l",
	  .help = "redraw the screen" },
	{ .key = 0, .action = TUI_ACT_SEND_PREFIX, .name = "prefix",
	  .help = "send the prefix key itself to the pane" },
};

const struct tui_binding *
tui_keys_bindings(size_t *n)
{
	*n = nitems(tui_keys_table);
	return tui_keys_table;
}

static const struct tui_binding *
tui_keys_lookup(uint32_t code)
{
	size_t i;

	for (i = 0; i < nitems(tui_keys_table); i++) {
		if (tui_keys_table[i].key == code && code != 0)
			return &tui_keys_table[i];
	}
	return NULL;
}

enum tui_dispatch
tui_keys_dispatch(struct tui_keymap *km, const struct tui_key *k,
    const struct tui_binding **binding)
{
	bool is_prefix = k->code == (uint32_t)km->prefix_key && k->mods == 0;

	*binding = NULL;
	if (!km->prefixed) {
		if (!is_prefix)
			return TUI_DISPATCH_PANE;
		km->prefixed = true;
		return TUI_DISPATCH_PREFIX;
	}
	km->prefixed = false;
	if (is_prefix)
		*binding = &tui_keys_table[nitems(tui_keys_table) - 1];
	else if ((k->mods & ~TUI_MOD_SHIFT) == 0)
		*binding = tui_keys_lookup(k->code);
	return *binding != NULL ? TUI_DISPATCH_ACTION : TUI_DISPATCH_UNBOUND;
}

void
tui_keys_mouse_event(const struct tui_mouse *m, struct pane_mouse_event *out)
{
	out->type = (enum pane_mouse_type)m->type;
	out->button = m->button;
	out->x = m->x;
	out->y = m->y;
	out->mods = m->mods;
}
