/* The command prompt (prefix :): one line in a client's status bar that runs a dashboard command by name. */
#include <string.h>

#include "core/core.h"
#include "tui-int.h"

/* What the prompt takes, as key bindings do: the action each runs. */
static const struct tui_binding tui_cmdline_table[] = {
	{ .action = TUI_ACT_RELOAD, .name = "reload",
	  .help = "re-read the config file for new sessions (as prefix R)" },
	{ .action = TUI_ACT_DETACH, .name = "detach",
	  .help = "detach this terminal (as prefix d)" },
};

const struct tui_binding *
tui_cmdline_commands(size_t *n)
{
	*n = nitems(tui_cmdline_table);
	return tui_cmdline_table;
}

/* The names the prompt takes, for an error: "reload, detach". */
static void
tui_cmdline_names(struct buf *b)
{
	size_t i;

	for (i = 0; i < nitems(tui_cmdline_table); i++)
		buf_printf(b, "%s%s", i > 0 ? ", " : "",
		    tui_cmdline_table[i].name);
}

void
tui_cmdline_open(struct tui *t)
{
	buf_reset(&t->c->cmdline.text);
	t->c->cmdline.active = true;
	tui_redraw(t);
}

/* The command typed, without the blanks around it: borrowed from LINE. */
static const char *
tui_cmdline_word(struct tui_line *line, size_t *len)
{
	const char *s = line->text.len > 0 ? line->text.data : "";
	size_t n = line->text.len;

	while (n > 0 && s[0] == ' ') {
		s++;
		n--;
	}
	while (n > 0 && s[n - 1] == ' ')
		n--;
	*len = n;
	return s;
}

/* The command typed: its row, NULL for none (said in the bar), or an empty line. */
static const struct tui_binding *
tui_cmdline_lookup(struct tui *t)
{
	const char *word;
	struct buf names;
	size_t n, i;

	word = tui_cmdline_word(&t->c->cmdline, &n);
	if (n == 0)
		return NULL;
	for (i = 0; i < nitems(tui_cmdline_table); i++) {
		if (strlen(tui_cmdline_table[i].name) == n &&
		    strncmp(tui_cmdline_table[i].name, word, n) == 0)
			return &tui_cmdline_table[i];
	}
	buf_init(&names);
	tui_cmdline_names(&names);
	tui_reply(t, true, "%.*s: no such command; the prompt takes %s "
	    "(prefix ? lists them)", (int)n, word, names.data);
	buf_free(&names);
	return NULL;
}

bool
tui_cmdline_key(struct tui *t, const struct tui_key *k,
    const struct tui_binding **run)
{
	struct tui_line *line = &t->c->cmdline;

	*run = NULL;
	if (!line->active)
		return false;
	if (k->code == '\r' || k->code == '\n') {
		line->active = false;
		*run = tui_cmdline_lookup(t);
	} else if (k->code == 0x1b || k->code == 0x03 || k->code == 0x07 ||
	    ((k->code == 0x7f || k->code == 0x08) && line->text.len == 0))
		line->active = false;
	else
		tui_line_key(line, k);
	tui_redraw(t);
	return true;
}

void
tui_cmdline_draw(struct tui *t, unsigned y)
{
	struct tui_rect r = { 0, y, t->c->sx, 1 };
	const char *text = t->c->cmdline.text.len > 0 ?
	    t->c->cmdline.text.data : "";

	tui_screen_fill(t->c->scr, &r, TUI_STYLE_NORMAL);
	/* The user's own keys; drawn as every typed line is, controls shown safe. */
	t->c->cmdline_cx = tui_screen_printf(t->c->scr, 0, y, t->c->sx,
	    TUI_STYLE_NORMAL, ":%s", text);
}
