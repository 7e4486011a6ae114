/* The disk bar: sessions frozen at a disk limit, each asking to continue or to stop. */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "session/session.h"
#include "tui-int.h"

static void
tui_disk_free(struct tui_disk *d)
{
	free(d->what);
	free(d->more);
	free(d);
}

static struct tui_disk *
tui_disk_find(struct tui *t, const struct tui_pane *wp, size_t *at)
{
	size_t i;

	for (i = 0; i < t->ndisks; i++) {
		if (t->disks[i]->pane == wp) {
			if (at != NULL)
				*at = i;
			return t->disks[i];
		}
	}
	return NULL;
}

bool
tui_disk_frozen(const struct tui_pane *wp)
{
	return tui_disk_find(wp->t, wp, NULL) != NULL;
}

/* The session's question, without its "session N is" (the bar names the pane). */
void
tui_disk_ask(struct tui *t, struct tui_pane *wp,
    const struct session_disk_ask *a)
{
	struct tui_disk *d = tui_disk_find(t, wp, NULL);
	const char *what = strstr(a->message, "frozen: ");

	if (d == NULL) {
		d = xcalloc(1, sizeof *d);
		d->pane = wp;
		t->disks = xreallocarray(t->disks, t->ndisks + 1,
		    sizeof *t->disks);
		t->disks[t->ndisks++] = d;
		if (t->ndisks == 1)
			tui_relayout_all(t);
	}
	free(d->what);
	free(d->more);
	d->what = xstrdup(what != NULL ? what : a->message);
	d->more = xstrdup(a->more);
	wp->redraw = true;
	tui_message(t, true, "%lld: %s", (long long)wp->id, a->message);
}

static void
tui_disk_remove(struct tui *t, size_t at)
{
	struct tui_client *c;
	size_t i;

	t->disks[at]->pane->redraw = true;
	tui_disk_free(t->disks[at]);
	memmove(t->disks + at, t->disks + at + 1,
	    (t->ndisks - at - 1) * sizeof *t->disks);
	t->ndisks--;
	for (i = 0; i < t->nclients; i++) {
		c = t->clients[i];
		if (c->disk_sel > at)
			c->disk_sel--;
		if (c->disk_sel >= t->ndisks)
			c->disk_sel = t->ndisks > 0 ? t->ndisks - 1 : 0;
		if (t->ndisks == 0) {
			c->disk_focus = false;
			c->relayout = true;
		}
	}
	tui_redraw(t);
}

/* The pane's session ended or went: its question with it. */
void
tui_disk_drop_pane(struct tui *t, struct tui_pane *wp)
{
	size_t at;

	if (tui_disk_find(t, wp, &at) != NULL)
		tui_disk_remove(t, at);
}

void
tui_disk_free_all(struct tui *t)
{
	size_t i;

	for (i = 0; i < t->ndisks; i++)
		tui_disk_free(t->disks[i]);
	free(t->disks);
	t->disks = NULL;
	t->ndisks = 0;
}

void
tui_disk_focus(struct tui *t, bool on)
{
	t->c->disk_focus = on && t->ndisks > 0;
	t->c->disk_choice = 0;
	tui_redraw(t);
}

static void
tui_disk_answer(struct tui *t, bool go_on)
{
	struct tui_disk *d = t->disks[t->c->disk_sel];
	struct tui_pane *wp = d->pane;

	tui_message(t, false, "%s session %lld", go_on ? "continuing" :
	    "stopping", (long long)wp->id);
	tui_disk_remove(t, t->c->disk_sel);
	if (wp->s != NULL)
		session_disk_answer(wp->s, go_on);
}

bool
tui_disk_key(struct tui *t, const struct tui_key *k)
{
	if (k->code == (uint32_t)t->c->km.prefix_key && k->mods == 0)
		return false;
	switch (k->code) {
	case 'c':
	case '1':
		tui_disk_answer(t, true);
		return true;
	case 's':
	case '2':
		tui_disk_answer(t, false);
		return true;
	case '\r':
		tui_disk_answer(t, t->c->disk_choice == 0);
		return true;
	case TUI_KEY_LEFT:
	case TUI_KEY_RIGHT:
	case '\t':
		t->c->disk_choice = !t->c->disk_choice;
		break;
	case TUI_KEY_UP:
		t->c->disk_sel = (t->c->disk_sel + t->ndisks - 1) % t->ndisks;
		break;
	case TUI_KEY_DOWN:
		t->c->disk_sel = (t->c->disk_sel + 1) % t->ndisks;
		break;
	case 0x1b:
	case 'q':
		tui_disk_focus(t, false);
		break;
	}
	tui_redraw(t);
	return true;
}

bool
tui_disk_click(struct tui *t, unsigned x)
{
	int i;

	if (!t->c->disk_focus) {
		tui_disk_focus(t, true);
		return true;
	}
	for (i = 0; i < 2; i++) {
		if (x >= t->c->disk_x[i][0] && x < t->c->disk_x[i][1]) {
			tui_disk_answer(t, i == 0);
			return true;
		}
	}
	return false;
}

void
tui_disk_draw(struct tui *t, unsigned y)
{
	struct tui_disk *d = t->disks[t->c->disk_sel];
	struct tui_rect r = { 0, y, t->c->sx, 1 };
	enum tui_style style = t->c->disk_focus ? TUI_STYLE_PROMPT_FOCUS :
	                                          TUI_STYLE_ALERT;
	unsigned x;

	tui_screen_fill(t->c->scr, &r, style);
	x = tui_screen_printf(t->c->scr, 0, y, t->c->sx, style,
	    " %zu/%zu %lld:%s %s ", t->c->disk_sel + 1, t->ndisks,
	    (long long)d->pane->id, d->pane->agent, d->what);
	if (!t->c->disk_focus) {
		tui_screen_print(t->c->scr, x, y, t->c->sx - x, style,
		    "| prefix a to answer");
		return;
	}
	t->c->disk_x[0][0] = x;
	x += tui_screen_printf(t->c->scr, x, y, t->c->sx - x,
	    t->c->disk_choice == 0 ? TUI_STYLE_SELECTED : style,
	    "[c] continue (%s)", d->more);
	t->c->disk_x[0][1] = x;
	x += tui_screen_print(t->c->scr, x, y, t->c->sx - x, style, " ");
	t->c->disk_x[1][0] = x;
	x += tui_screen_print(t->c->scr, x, y, t->c->sx - x,
	    t->c->disk_choice == 1 ? TUI_STYLE_SELECTED : style, "[s] stop");
	t->c->disk_x[1][1] = x;
}
