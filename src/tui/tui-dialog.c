/* Dialogs over everything: confirmations, the new session picker, and the one-line editor they use. */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "session.h"
#include "tui-int.h"

void
tui_dialog_free(struct tui *t)
{
	free(t->confirm_text);
	t->confirm_text = NULL;
	buf_free(&t->new_dir.text);
	t->dialog = TUI_DIALOG_NONE;
}

void
tui_confirm(struct tui *t, const char *text, void (*cb)(struct tui *, void *),
    void *arg)
{
	free(t->confirm_text);
	t->confirm_text = xstrdup(text);
	t->confirm_cb = cb;
	t->confirm_arg = arg;
	t->dialog = TUI_DIALOG_CONFIRM;
	tui_redraw(t);
}

/* Appends code point CP to B as UTF-8. */
static void
tui_line_add(struct buf *b, uint32_t cp)
{
	char s[4];

	if (cp < 0x80)
		buf_addc(b, (char)cp);
	else if (cp < 0x800) {
		s[0] = (char)(0xc0 | cp >> 6);
		s[1] = (char)(0x80 | (cp & 0x3f));
		buf_add(b, s, 2);
	} else if (cp < 0x10000) {
		s[0] = (char)(0xe0 | cp >> 12);
		s[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		s[2] = (char)(0x80 | (cp & 0x3f));
		buf_add(b, s, 3);
	} else {
		s[0] = (char)(0xf0 | cp >> 18);
		s[1] = (char)(0x80 | (cp >> 12 & 0x3f));
		s[2] = (char)(0x80 | (cp >> 6 & 0x3f));
		s[3] = (char)(0x80 | (cp & 0x3f));
		buf_add(b, s, 4);
	}
}

bool
tui_line_key(struct tui_line *l, const struct tui_key *k)
{
	struct buf *b = &l->text;

	if (k->code == 0x7f || k->code == 0x08) {
		/* One character back, however many bytes it took. */
		while (b->len > 0 && ((unsigned char)b->data[b->len - 1] & 0xc0) ==
		    0x80)
			b->len--;
		if (b->len > 0)
			b->len--;
	} else if (k->code == 0x15)
		b->len = 0;
	else if (k->code == 0x17) {
		while (b->len > 0 && b->data[b->len - 1] == ' ')
			b->len--;
		while (b->len > 0 && b->data[b->len - 1] != ' ')
			b->len--;
	} else if (k->code >= 0x20 && k->code != 0x7f && k->code < TUI_KEY_BASE &&
	    (k->mods & ~TUI_MOD_SHIFT) == 0)
		tui_line_add(b, k->code);
	else
		return false;
	if (b->data != NULL)
		b->data[b->len] = '\0';
	return true;
}

void
tui_new_session(struct tui *t)
{
	struct tui_pane *focus = tui_focus_pane(t);

	t->dialog = TUI_DIALOG_NEW;
	t->new_sel = 0;
	t->new_dir_step = false;
	buf_reset(&t->new_dir.text);
	buf_adds(&t->new_dir.text, focus != NULL && focus->project != NULL ?
	    focus->project : "");
	tui_redraw(t);
}

/* Starts the picked agent in the picked dir and shows it where the focus is. */
static void
tui_new_start(struct tui *t)
{
	const struct config_agent *a = &t->cf->agents[t->new_sel];
	const char *dir = t->new_dir.text.len > 0 ? t->new_dir.text.data : NULL;
	struct tui_pane *wp;
	char *cause = NULL;

	t->dialog = TUI_DIALOG_NONE;
	if ((wp = tui_pane_start(t, a->name, dir, NULL, &cause)) == NULL) {
		tui_message(t, true, "%s", cause);
		free(cause);
		return;
	}
	if (t->layout == NULL)
		t->layout = tui_layout_create(wp->num);
	else
		tui_layout_replace(t->layout, tui_layout_focus(t->layout),
		    wp->num);
	tui_layout_set_focus(t->layout, wp->num);
	while (tui_view_top(t) != TUI_VIEW_PANES)
		tui_view_pop(t);
	t->relayout = true;
	tui_redraw(t);
}

/* Typing a letter picks the next agent whose name starts with it. */
static void
tui_new_jump(struct tui *t, uint32_t c)
{
	size_t i, at;

	for (i = 1; i <= t->cf->nagents; i++) {
		at = (t->new_sel + i) % t->cf->nagents;
		if ((uint32_t)(unsigned char)t->cf->agents[at].name[0] == c) {
			t->new_sel = at;
			return;
		}
	}
}

static void
tui_new_key(struct tui *t, const struct tui_key *k)
{
	if (k->code == 0x1b) {
		if (t->new_dir_step)
			t->new_dir_step = false;
		else
			t->dialog = TUI_DIALOG_NONE;
	} else if (k->code == '\r') {
		if (t->new_dir_step)
			tui_new_start(t);
		else if (t->cf->nagents > 0)
			t->new_dir_step = true;
	} else if (t->new_dir_step)
		tui_line_key(&t->new_dir, k);
	else if (!tui_list_key(k, t->cf->nagents, 5, &t->new_sel))
		tui_new_jump(t, k->code);
}

bool
tui_dialog_key(struct tui *t, const struct tui_key *k)
{
	void (*cb)(struct tui *, void *) = t->confirm_cb;
	size_t i;

	switch (t->dialog) {
	case TUI_DIALOG_NONE:
		return false;
	case TUI_DIALOG_CONFIRM:
		t->dialog = TUI_DIALOG_NONE;
		if (k->code == 'y' || k->code == 'Y')
			cb(t, t->confirm_arg);
		break;
	case TUI_DIALOG_NEW:
		tui_new_key(t, k);
		break;
	}
	/* The box covered panes that have not changed: they draw afresh. */
	for (i = 0; t->dialog == TUI_DIALOG_NONE && i < t->npanes; i++)
		t->panes[i]->redraw = true;
	tui_screen_invalidate(t->scr);
	tui_redraw(t);
	return true;
}

/* A box of W x H in the middle of the screen; returns its rectangle. */
static struct tui_rect
tui_dialog_box(struct tui *t, unsigned w, unsigned h)
{
	struct tui_rect r;

	r.sx = w + 4 < t->sx ? w + 4 : t->sx;
	r.sy = h + 2 < t->sy ? h + 2 : t->sy;
	r.x = (t->sx - r.sx) / 2;
	r.y = (t->sy - r.sy) / 2;
	tui_screen_fill(t->scr, &r, TUI_STYLE_BAR);
	return r;
}

static void
tui_dialog_new_draw(struct tui *t)
{
	size_t n = t->cf->nagents, i, first;
	unsigned rows = n < 10 ? (unsigned)n : 10, y;
	struct tui_rect r = tui_dialog_box(t, 70, rows + 4);
	const struct config_agent *a;
	unsigned used;

	tui_screen_print(t->scr, r.x + 2, r.y + 1, r.sx - 4, TUI_STYLE_BAR,
	    t->new_dir_step ? "New session: project directory (Enter starts, "
	    "Esc back)" : "New session: pick an agent (Enter, Esc cancels)");
	first = t->new_sel >= rows ? t->new_sel - rows + 1 : 0;
	for (i = first, y = r.y + 2; i < n && i < first + rows; i++, y++) {
		a = &t->cf->agents[i];
		tui_screen_printf(t->scr, r.x + 2, y, r.sx - 4, i == t->new_sel ?
		    TUI_STYLE_SELECTED : TUI_STYLE_BAR, "%-12s %s", a->name,
		    a->description != NULL ? a->description : "");
		if (i == t->new_sel) {
			t->dialog_cx = r.x + 2;
			t->dialog_cy = y;
		}
	}
	used = tui_screen_printf(t->scr, r.x + 2, r.y + r.sy - 2, r.sx - 4,
	    t->new_dir_step ? TUI_STYLE_SELECTED : TUI_STYLE_BAR, "dir: %s",
	    t->new_dir.text.len > 0 ? t->new_dir.text.data : "(the current "
	    "directory)");
	if (t->new_dir_step) {
		/* The cursor at the end of what is typed. */
		t->dialog_cx = r.x + 2 + (used < r.sx - 5 ? used : r.sx - 5);
		t->dialog_cy = r.y + r.sy - 2;
	}
}

/* Cuts TEXT into lines of at most W bytes, at spaces where it can: a question is wrapped, never cut. */
static void
tui_dialog_wrap(const char *text, size_t w, struct strv *out)
{
	size_t n, cut;

	while (*text != '\0') {
		n = strlen(text);
		if (n <= w) {
			strv_add(out, text);
			return;
		}
		for (cut = w; cut > 0 && text[cut] != ' '; cut--)
			;
		if (cut == 0)
			cut = w;
		strv_addf(out, "%.*s", (int)cut, text);
		text += cut;
		while (*text == ' ')
			text++;
	}
}

static void
tui_dialog_confirm_draw(struct tui *t)
{
	struct tui_rect r;
	struct strv lines;
	size_t w = t->sx > 8 ? t->sx - 8 : 1, i, widest = 20;

	if (w > 70)
		w = 70;
	strv_init(&lines);
	tui_dialog_wrap(t->confirm_text, w, &lines);
	for (i = 0; i < lines.n; i++)
		if (strlen(lines.v[i]) > widest)
			widest = strlen(lines.v[i]);
	r = tui_dialog_box(t, (unsigned)widest, (unsigned)lines.n + 1);
	for (i = 0; i < lines.n; i++)
		tui_screen_print(t->scr, r.x + 2, r.y + 1 + (unsigned)i, r.sx - 4,
		    TUI_STYLE_BAR, lines.v[i]);
	t->dialog_cy = r.y + 1 + (unsigned)lines.n;
	t->dialog_cx = r.x + 2 + tui_screen_print(t->scr, r.x + 2, t->dialog_cy,
	    r.sx - 4, TUI_STYLE_BAR, "y: yes   n, Esc: no ");
	strv_free(&lines);
}

void
tui_dialog_draw(struct tui *t)
{
	switch (t->dialog) {
	case TUI_DIALOG_NONE:
		return;
	case TUI_DIALOG_CONFIRM:
		tui_dialog_confirm_draw(t);
		break;
	case TUI_DIALOG_NEW:
		tui_dialog_new_draw(t);
		break;
	}
}
