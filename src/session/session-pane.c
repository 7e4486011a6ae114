/* A session's terminal: its pty output kept in a pane (screen, scrollback, modes) for whoever draws it. */
#include "core/core.h"
#include "pane/pane.h"
#include "session/session-int.h"

/*
 * Replies the terminal makes (device attributes, cursor reports) and encoded
 * keys go to the program; while it starts, session_write keeps them for it.
 */
static void
session_pane_write(void *arg, const char *data, size_t len)
{
	struct session *s = arg;

	(void)session_write(s, data, len);
}

void
session_pane_start(struct session *s, const struct session_opts *o)
{
	const struct config_agent *a = config_agent(s->cf, s->agent);
	int64_t hlimit = s->cf->ui.scrollback;

	if (!o->pty)
		return;
	/*
	 * Nobody draws it (agentmux run), but its profile's needs_you_screen
	 * reads the screen: the screen only, answering nothing (the terminal
	 * it runs in answers).
	 */
	if (!o->pane) {
		if (a != NULL && a->needs_you_re != NULL && o->rows > 0 &&
		    o->cols > 0)
			s->pane = pane_create(o->cols, o->rows, 0, NULL, NULL);
		return;
	}
	if (hlimit < 0)
		hlimit = 0;
	s->pane = pane_create(o->cols, o->rows, (unsigned)hlimit,
	    session_pane_write, s);
}

bool
session_pane_feed(struct session *s, const char *data, size_t len)
{
	if (s->pane == NULL)
		return false;
	pane_feed(s->pane, data, len);
	return true;
}

void
session_pane_changed(struct session *s)
{
	if (s->pane != NULL && s->ev.pane_changed != NULL)
		s->ev.pane_changed(s->arg, s);
}

void
session_pane_resize(struct session *s, unsigned short rows,
    unsigned short cols)
{
	if (s->pane != NULL)
		pane_resize(s->pane, cols, rows);
}

void
session_pane_free(struct session *s)
{
	if (s->pane == NULL)
		return;
	/* Whoever still holds it keeps the last screen, with nobody to reply to. */
	pane_set_write(s->pane, NULL, NULL);
	pane_free(s->pane);
	s->pane = NULL;
}

struct pane *
session_pane(struct session *s)
{
	return s->pane;
}
