/* The status bar: project, sessions and their states, prompts waiting, requests denied, unsafe flags in red. */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "session.h"
#include "tui-int.h"

static const char *
tui_status_project(const struct tui *t)
{
	struct tui_pane *wp = t->npanes > 0 ? t->panes[0] : NULL;
	const char *p, *slash;

	if (wp == NULL || wp->project == NULL)
		return "agentmux";
	p = wp->project;
	slash = strrchr(p, '/');
	return slash != NULL && slash[1] != '\0' ? slash + 1 : p;
}

/* One session's entry: "2:claude running", the focused one marked. */
static unsigned
tui_status_pane(struct tui *t, struct tui_pane *wp, bool focused, unsigned x,
    unsigned y)
{
	char state[32];
	enum tui_style style = focused ? TUI_STYLE_BAR_FOCUS : TUI_STYLE_BAR;

	if (wp->unsafe != NULL || wp->alert || (wp->exited && wp->status != 0))
		style = TUI_STYLE_ALERT;
	if (x >= t->sx)
		return x;
	x += tui_screen_printf(t->scr, x, y, t->sx - x, style, "%d:%s%s %s%s",
	    wp->num, wp->agent, focused ? "*" : "", tui_pane_state(wp, state,
	    sizeof state), wp->bells > 0 && !focused ? " !" : "");
	if (wp->unsafe != NULL && x < t->sx)
		x += tui_screen_printf(t->scr, x, y, t->sx - x, TUI_STYLE_ALERT,
		    " UNSAFE:%s", wp->unsafe);
	/* What it does is no longer all recorded: said for as long as it runs. */
	if (wp->s != NULL && session_budget_reached(wp->s) && x < t->sx)
		x += tui_screen_print(t->scr, x, y, t->sx - x, TUI_STYLE_WARN,
		    " BUDGET");
	if (x < t->sx)
		x += tui_screen_print(t->scr, x, y, t->sx - x, TUI_STYLE_BAR, " ");
	return x;
}

void
tui_status_draw(struct tui *t, unsigned y)
{
	struct tui_rect r = { 0, y, t->sx, 1 };
	struct tui_pane *focus = tui_focus_pane(t);
	unsigned x;
	size_t i;

	tui_screen_fill(t->scr, &r, TUI_STYLE_BAR);
	x = tui_screen_printf(t->scr, 0, y, t->sx, TUI_STYLE_BAR, "[%s] ",
	    tui_status_project(t));
	for (i = 0; i < t->npanes; i++)
		x = tui_status_pane(t, t->panes[i], t->panes[i] == focus, x, y);
	if (t->nprompts > 0 && x < t->sx)
		x += tui_screen_printf(t->scr, x, y, t->sx - x, TUI_STYLE_WARN,
		    " prompts %zu ", t->nprompts);
	if (t->denied > 0 && x < t->sx)
		x += tui_screen_printf(t->scr, x, y, t->sx - x, TUI_STYLE_ALERT,
		    " denied %lld ", (long long)t->denied);
	if (t->message != NULL && x + 2 < t->sx)
		tui_screen_printf(t->scr, x + 1, y, t->sx - x - 1,
		    t->message_alert ? TUI_STYLE_ALERT : TUI_STYLE_BAR, " %s ",
		    t->message);
	else if (x + 12 < t->sx)
		tui_screen_printf(t->scr, t->sx - 11, y, 11, TUI_STYLE_BAR,
		    "%s ? help", t->cf->ui.prefix);
}
