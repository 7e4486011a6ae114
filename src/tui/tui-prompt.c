/* The prompt bar: destinations waiting for the user's answer, one per question, with a countdown. */
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "core/core.h"
#include "session/session.h"
#include "tui-int.h"

static const struct {
	enum session_answer answer;
	const char *label;
	uint32_t key;
} tui_prompt_choices[6] = {
	{ SESSION_ALLOW_ONCE, "allow once", 'a' },
	{ SESSION_ALLOW_SESSION, "allow session", 's' },
	{ SESSION_ALLOW_ALWAYS, "allow always", 'A' },
	{ SESSION_DENY_ONCE, "deny once", 'd' },
	{ SESSION_DENY_SESSION, "deny session", 'e' },
	{ SESSION_DENY_ALWAYS, "deny always", 'D' },
};

static void tui_prompt_scope_close(struct tui_client *);

/* Whether some client has the prompt bar's keys: the countdowns wait for it. */
static bool
tui_prompt_any_focus(const struct tui *t)
{
	size_t i;

	for (i = 0; i < t->nclients; i++) {
		if (t->clients[i]->prompt_focus)
			return true;
	}
	return false;
}

int
tui_prompt_seconds_left(const struct tui_prompt *p, int64_t now_us)
{
	int64_t left = p->paused ? p->left_us : p->deadline_us - now_us;

	if (left <= 0)
		return 0;
	return (int)((left + 999999) / 1000000);
}

static void
tui_prompt_free(struct tui_prompt *p)
{
	free(p->host);
	free(p->method);
	free(p->path);
	free(p->scheme);
	free(p);
}

static struct tui_prompt *
tui_prompt_find(struct tui *t, struct tui_pane *wp, uint64_t id, size_t *at)
{
	size_t i;

	for (i = 0; i < t->nprompts; i++) {
		if (t->prompts[i]->pane == wp && t->prompts[i]->id == id) {
			if (at != NULL)
				*at = i;
			return t->prompts[i];
		}
	}
	return NULL;
}

static void
tui_prompt_tick(evutil_socket_t fd, short what, void *arg)
{
	tui_redraw(arg);
}

/* The countdown needs a frame a second, but only while one is running. */
static void
tui_prompt_timer(struct tui *t)
{
	struct timeval tv = { 1, 0 };
	bool want = t->nprompts > 0 && !tui_prompt_any_focus(t);

	if (t->tick_ev == NULL)
		t->tick_ev = event_new(t->base, -1, EV_PERSIST, tui_prompt_tick, t);
	if (want && !evtimer_pending(t->tick_ev, NULL))
		evtimer_add(t->tick_ev, &tv);
	else if (!want)
		evtimer_del(t->tick_ev);
}

static void
tui_prompt_set(struct tui_prompt *p, const struct session_ask *a)
{
	free(p->host);
	free(p->method);
	free(p->path);
	free(p->scheme);
	p->host = xstrdup(a->host != NULL ? a->host : "?");
	p->port = a->port;
	p->method = a->method != NULL ? xstrdup(a->method) : NULL;
	p->path = a->path != NULL ? xstrdup(a->path) : NULL;
	p->scheme = a->scheme != NULL ? xstrdup(a->scheme) : NULL;
	p->waiting = a->waiting;
	p->deadline_us = a->deadline_mono_us;
	if (!p->paused)
		p->left_us = p->deadline_us - util_mono_us();
}

void
tui_prompt_ask(struct tui *t, struct tui_pane *wp, const struct session_ask *a)
{
	struct tui_prompt *p = tui_prompt_find(t, wp, a->id, NULL);

	if (p == NULL) {
		p = xcalloc(1, sizeof *p);
		p->pane = wp;
		p->id = a->id;
		t->prompts = xreallocarray(t->prompts, t->nprompts + 1,
		    sizeof *t->prompts);
		t->prompts[t->nprompts++] = p;
		if (t->nprompts == 1)
			tui_relayout_all(t);
		if (tui_prompt_any_focus(t) && wp->s != NULL) {
			/* The user is answering: this one waits too. */
			session_ask_pause(wp->s, a->id, true);
			p->paused = true;
		}
	}
	tui_prompt_set(p, a);
	if (p->paused)
		p->left_us = p->deadline_us - util_mono_us();
	tui_prompt_timer(t);
	tui_redraw(t);
}

/* Question AT went: client C keeps its place on the one it looked at, if that stays. */
static void
tui_prompt_removed(struct tui_client *c, size_t at, size_t n)
{
	/* A scope being chosen belongs to the selected question: never to another. */
	if (c->prompt_sel == at)
		tui_prompt_scope_close(c);
	if (c->prompt_sel > at)
		c->prompt_sel--;
	if (c->prompt_sel >= n)
		c->prompt_sel = n > 0 ? n - 1 : 0;
	if (n == 0) {
		c->prompt_focus = false;
		c->relayout = true;
	}
}

/* An answer from any client, or the timeout: it goes from every client's bar. */
static void
tui_prompt_remove(struct tui *t, size_t at)
{
	size_t i;

	tui_prompt_free(t->prompts[at]);
	memmove(t->prompts + at, t->prompts + at + 1,
	    (t->nprompts - at - 1) * sizeof *t->prompts);
	t->nprompts--;
	for (i = 0; i < t->nclients; i++)
		tui_prompt_removed(t->clients[i], at, t->nprompts);
	tui_prompt_timer(t);
	tui_redraw(t);
}

void
tui_prompt_answered(struct tui *t, struct tui_pane *wp, uint64_t id,
    const char *answer, const char *by)
{
	size_t at;
	struct tui_prompt *p = tui_prompt_find(t, wp, id, &at);

	if (p == NULL)
		return;
	if (strcmp(by, "timeout") == 0)
		tui_message(t, true, "%s:%d %s: nobody answered in time",
		    p->host, p->port, strcmp(answer, "allow") == 0 ?
		    "allowed" : "denied");
	tui_prompt_remove(t, at);
}

void
tui_prompt_drop_pane(struct tui *t, struct tui_pane *wp)
{
	size_t i = 0;

	while (i < t->nprompts) {
		if (t->prompts[i]->pane == wp)
			tui_prompt_remove(t, i);
		else
			i++;
	}
}

void
tui_prompt_free_all(struct tui *t)
{
	size_t i;

	for (i = 0; i < t->nclients; i++)
		tui_prompt_scope_close(t->clients[i]);
	for (i = 0; i < t->nprompts; i++)
		tui_prompt_free(t->prompts[i]);
	free(t->prompts);
	t->prompts = NULL;
	t->nprompts = 0;
	if (t->tick_ev != NULL)
		event_free(t->tick_ev);
	t->tick_ev = NULL;
}

void
tui_prompt_focus(struct tui *t, bool on)
{
	struct tui_prompt *p;
	int64_t now = util_mono_us();
	size_t i;

	if (on && t->nprompts == 0)
		return;
	if (!on)
		tui_prompt_scope_close(t->c);
	t->c->prompt_focus = on;
	/* While a user reads them (in any client), no countdown runs out. */
	on = tui_prompt_any_focus(t);
	for (i = 0; i < t->nprompts; i++) {
		p = t->prompts[i];
		if (p->paused == on)
			continue;
		if (on)
			p->left_us = p->deadline_us - now;
		else
			p->deadline_us = now + p->left_us;
		p->paused = on;
		if (p->pane->s != NULL)
			session_ask_pause(p->pane->s, p->id, on);
	}
	tui_prompt_timer(t);
	tui_redraw(t);
}

void
tui_prompt_unfocus(struct tui *t, struct tui_client *c)
{
	struct tui_client *cur = t->c;

	t->c = c;
	tui_prompt_focus(t, false);
	t->c = cur;
}

/* Leaves the choice of a rule's scope. */
static void
tui_prompt_scope_close(struct tui_client *c)
{
	session_scopes_free(c->scopes, c->nscopes);
	c->nscopes = 0;
	c->scope_sel = 0;
	c->scope_choice = -1;
}

/* "Always": the rules it can save, shown one by one, the narrowest first. */
static bool
tui_prompt_scope_open(struct tui *t, struct tui_prompt *p, int choice)
{
	struct session_ask a;

	memset(&a, 0, sizeof a);
	a.id = p->id;
	a.host = p->host;
	a.port = p->port;
	a.method = p->method;
	a.path = p->path;
	a.scheme = p->scheme;
	tui_prompt_scope_close(t->c);
	if ((t->c->nscopes = session_ask_scopes(&a, t->c->scopes)) == 0)
		return false;
	t->c->scope_choice = choice;
	return true;
}

/* Saves the scope chosen for the "always" answer. */
static void
tui_prompt_scope_answer(struct tui *t)
{
	struct tui_prompt *p = t->prompts[t->c->prompt_sel];
	enum session_answer a = tui_prompt_choices[t->c->scope_choice].answer;
	struct session *s = p->pane->s;
	uint64_t id = p->id;
	char *rule = xstrdup(t->c->scopes[t->c->scope_sel].rule), *cause = NULL;

	tui_message(t, false, "%s always: `%s %s` (%s)",
	    a == SESSION_ALLOW_ALWAYS ? "allowing" : "denying",
	    a == SESSION_ALLOW_ALWAYS ? "allow" : "deny", rule,
	    t->c->scopes[t->c->scope_sel].what);
	/* Answering removes the prompt (and the scopes) on the way. */
	tui_prompt_scope_close(t->c);
	t->c->prompt_choice = 0;
	if (s != NULL && session_answer_rule(s, id, a, rule, &cause) == -1) {
		tui_reply(t, true, "cannot save that rule: %s", cause);
		free(cause);
	}
	free(rule);
}

static bool
tui_prompt_scope_key(struct tui *t, const struct tui_key *k)
{
	size_t n = t->c->nscopes;

	if (k->code >= '1' && k->code < '1' + n) {
		t->c->scope_sel = k->code - '1';
		tui_prompt_scope_answer(t);
	} else if (k->code == TUI_KEY_LEFT || k->code == TUI_KEY_UP)
		t->c->scope_sel = (t->c->scope_sel + n - 1) % n;
	else if (k->code == TUI_KEY_RIGHT || k->code == TUI_KEY_DOWN ||
	    k->code == '\t')
		t->c->scope_sel = (t->c->scope_sel + 1) % n;
	else if (k->code == '\r')
		tui_prompt_scope_answer(t);
	else if (k->code == 0x1b || k->code == 'q')
		tui_prompt_scope_close(t->c);
	tui_redraw(t);
	return true;
}

static void
tui_prompt_answer(struct tui *t, int choice)
{
	struct tui_prompt *p;

	if (t->nprompts == 0 || choice < 0 || choice >= 6)
		return;
	p = t->prompts[t->c->prompt_sel];
	if ((tui_prompt_choices[choice].answer == SESSION_ALLOW_ALWAYS ||
	    tui_prompt_choices[choice].answer == SESSION_DENY_ALWAYS) &&
	    tui_prompt_scope_open(t, p, choice))
		return;
	tui_message(t, false, "%s %s:%d (%s)", tui_prompt_choices[choice].answer <=
	    SESSION_ALLOW_ALWAYS ? "allowing" : "denying", p->host, p->port,
	    tui_prompt_choices[choice].label);
	if (p->pane->s != NULL)
		session_answer(p->pane->s, p->id,
		    tui_prompt_choices[choice].answer);
	t->c->prompt_choice = 0;
}

bool
tui_prompt_key(struct tui *t, const struct tui_key *k)
{
	int i;

	if (k->code == (uint32_t)t->c->km.prefix_key && k->mods == 0)
		return false;
	if (t->c->scope_choice >= 0)
		return tui_prompt_scope_key(t, k);
	for (i = 0; i < 6; i++) {
		if (k->code == tui_prompt_choices[i].key ||
		    k->code == (uint32_t)('1' + i)) {
			tui_prompt_answer(t, i);
			return true;
		}
	}
	switch (k->code) {
	case TUI_KEY_LEFT:
		t->c->prompt_choice = (t->c->prompt_choice + 5) % 6;
		break;
	case TUI_KEY_RIGHT:
	case '\t':
		t->c->prompt_choice = (t->c->prompt_choice + 1) % 6;
		break;
	case TUI_KEY_UP:
		t->c->prompt_sel = (t->c->prompt_sel + t->nprompts - 1) %
		    t->nprompts;
		break;
	case TUI_KEY_DOWN:
		t->c->prompt_sel = (t->c->prompt_sel + 1) % t->nprompts;
		break;
	case '\r':
		tui_prompt_answer(t, t->c->prompt_choice);
		break;
	case 0x1b:
	case 'q':
		tui_prompt_focus(t, false);
		break;
	}
	tui_redraw(t);
	return true;
}

bool
tui_prompt_click(struct tui *t, unsigned x)
{
	int i;

	if (!t->c->prompt_focus) {
		tui_prompt_focus(t, true);
		return true;
	}
	for (i = 0; i < 6; i++) {
		if (x >= t->c->choice_x[i][0] && x < t->c->choice_x[i][1]) {
			tui_prompt_answer(t, i);
			return true;
		}
	}
	return false;
}

/* "GET https://host:port/path" as far as it is known. */
static char *
tui_prompt_what(const struct tui_prompt *p)
{
	char *url, *m, *s;

	/* What the user decides on: a name that cannot pass for another. */
	url = tui_req_url(p->scheme != NULL ? p->scheme : "https", p->host,
	    p->port, p->path);
	m = quote_name(p->method != NULL ? p->method : "");
	s = xprintf("%s%s%s", m, p->method != NULL ? " " : "", url);
	free(m);
	free(url);
	return s;
}

/* The rule the "always" answer would save, exactly as it goes into the config, and which of how many. */
static void
tui_prompt_scope_draw(struct tui *t, unsigned x, unsigned y,
    enum tui_style style)
{
	const struct session_scope *sc = &t->c->scopes[t->c->scope_sel];
	bool allow = tui_prompt_choices[t->c->scope_choice].answer ==
	    SESSION_ALLOW_ALWAYS;

	x += tui_screen_print(t->c->scr, x, y, t->c->sx - x, style, "| save ");
	x += tui_screen_printf(t->c->scr, x, y, t->c->sx - x,
	    TUI_STYLE_SELECTED, "%s %s", allow ? "allow" : "deny", sc->rule);
	tui_screen_printf(t->c->scr, x, y, t->c->sx - x, style,
	    " [%zu/%zu %s]  "
	    "Left/Right: scope  Enter: save  Esc: back",
	    t->c->scope_sel + 1, t->c->nscopes, sc->what);
}

void
tui_prompt_draw(struct tui *t, unsigned y)
{
	struct tui_prompt *p = t->prompts[t->c->prompt_sel];
	struct tui_rect r = { 0, y, t->c->sx, 1 };
	enum tui_style style = t->c->prompt_focus ? TUI_STYLE_PROMPT_FOCUS :
	                                            TUI_STYLE_PROMPT;
	char *what = tui_prompt_what(p), *head, waiting[32] = "";
	unsigned x;
	int i;

	tui_screen_fill(t->c->scr, &r, style);
	if (p->waiting > 1)
		snprintf(waiting, sizeof waiting, " (%d waiting)", p->waiting);
	head = xprintf(" %zu/%zu %lld:%s %s%s %ds%s ", t->c->prompt_sel + 1,
	    t->nprompts, (long long)p->pane->id, p->pane->agent, what, waiting,
	    tui_prompt_seconds_left(p, util_mono_us()),
	    p->paused ? " paused" : "");
	x = tui_screen_print(t->c->scr, 0, y, t->c->sx, style, head);
	if (t->c->prompt_focus && t->c->scope_choice >= 0) {
		tui_prompt_scope_draw(t, x, y, style);
		goto out;
	}
	if (!t->c->prompt_focus) {
		tui_screen_print(t->c->scr, x, y, t->c->sx - x, style,
		    "| prefix a to answer");
		goto out;
	}
	for (i = 0; i < 6 && x < t->c->sx; i++) {
		t->c->choice_x[i][0] = x;
		x += tui_screen_printf(t->c->scr, x, y, t->c->sx - x,
		    i == t->c->prompt_choice ? TUI_STYLE_SELECTED : style,
		    "[%c] %s", (char)tui_prompt_choices[i].key,
		    tui_prompt_choices[i].label);
		t->c->choice_x[i][1] = x;
		x += tui_screen_print(t->c->scr, x, y, t->c->sx - x, style,
		    " ");
	}
out:
	free(what);
	free(head);
}
