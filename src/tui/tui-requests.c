/* The requests panel: every request of this dashboard's sessions, live, filtered by typing, with details. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/core.h"
#include "tui-int.h"

/* Requests kept in memory; older ones are in the store (history). */
#define TUI_REQS_MAX 10000

static bool
tui_req_same(const char *a, const char *b)
{
	return (a == NULL && b == NULL) || (a != NULL && b != NULL &&
	    strcmp(a, b) == 0);
}

/*
 * The slot of the entry an event is about: by its id when the event has
 * one; else the newest request of that pane still in flight to the same
 * place, started at the same time. NULL if none.
 */
static struct request **
tui_req_find(struct tui *t, int64_t session, const struct request *sr)
{
	struct request *r;
	size_t i;

	for (i = t->nreqs; i > 0; i--) {
		r = t->reqs[i - 1];
		if (r->session_id != session)
			continue;
		if (sr->id != 0) {
			if (r->id == sr->id)
				return &t->reqs[i - 1];
			continue;
		}
		if (!r->done && r->started_at == sr->started_at &&
		    r->port == sr->port && tui_req_same(r->host, sr->host) &&
		    tui_req_same(r->path, sr->path) &&
		    tui_req_same(r->method, sr->method))
			return &t->reqs[i - 1];
	}
	return NULL;
}

/* A new slot at the end, dropping the oldest entry when the panel is full. */
static struct request **
tui_req_add(struct tui *t)
{
	size_t i;

	if (t->nreqs == TUI_REQS_MAX) {
		request_free(t->reqs[0]);
		memmove(t->reqs, t->reqs + 1, (t->nreqs - 1) * sizeof *t->reqs);
		t->nreqs--;
		/* Each client's selection stays on its entry. */
		for (i = 0; i < t->nclients; i++) {
			if (t->clients[i]->req_sel > 0)
				t->clients[i]->req_sel--;
		}
	}
	t->reqs = xreallocarray(t->reqs, t->nreqs + 1, sizeof *t->reqs);
	t->reqs[t->nreqs] = NULL;
	return &t->reqs[t->nreqs++];
}

/* Whether some client shows the requests panel. */
static bool
tui_requests_shown(const struct tui *t)
{
	const struct tui_client *c;
	size_t i;

	for (i = 0; i < t->nclients; i++) {
		c = t->clients[i];
		if (c->nviews > 0 &&
		    c->views[c->nviews - 1] == TUI_VIEW_REQUESTS)
			return true;
	}
	return false;
}

void
tui_requests_event(struct tui *t, struct tui_pane *wp,
    const struct request *sr)
{
	struct request **slot = NULL;
	bool was_done;

	if (wp->req_session != wp->id) {
		wp->req_session = wp->id;
		wp->req_max = 0;
	}
	/* One its proxy numbered after every one seen is new: no search. */
	if (sr->id <= wp->req_max)
		slot = tui_req_find(t, wp->id, sr);
	else
		wp->req_max = sr->id;
	was_done = slot != NULL && (*slot)->done;

	if (slot == NULL) {
		slot = tui_req_add(t);
		wp->requests++;
	}
	/* The panel keeps the record as it is now, without its bodies. */
	request_free(*slot);
	*slot = request_copy(sr, false);
	(*slot)->session_id = wp->id;
	if (sr->done && !was_done && sr->decision != NULL &&
	    strcmp(sr->decision, "deny") == 0) {
		t->denied++;
		wp->denials++;
		tui_redraw(t);
	}
	if (tui_requests_shown(t))
		tui_redraw(t);
}

void
tui_requests_free_all(struct tui *t)
{
	size_t i;

	for (i = 0; i < t->nreqs; i++)
		request_free(t->reqs[i]);
	free(t->reqs);
	t->reqs = NULL;
	t->nreqs = 0;
}

/* Case-insensitive: does S contain WORD (LEN bytes)? */
static bool
tui_req_contains(const char *s, const char *word, size_t len)
{
	if (s == NULL)
		return false;
	for (; *s != '\0'; s++) {
		if (strncasecmp(s, word, len) == 0)
			return true;
	}
	return false;
}

bool
tui_req_matches(const struct request *r, const char *filter)
{
	char line[64];
	const char *w = filter;
	size_t len;

	snprintf(line, sizeof line, "%lld %d %s", (long long)r->session_id,
	    r->status, r->done && r->decision != NULL ? r->decision :
	    "pending");
	while (*w != '\0') {
		while (isspace((unsigned char)*w))
			w++;
		if ((len = strcspn(w, " \t")) == 0)
			break;
		if (!tui_req_contains(r->host, w, len) &&
		    !tui_req_contains(r->path, w, len) &&
		    !tui_req_contains(r->method, w, len) &&
		    !tui_req_contains(r->scheme, w, len) &&
		    !tui_req_contains(line, w, len))
			return false;
		w += len;
	}
	return true;
}

/* The requests the filter lets through, as indices; caller frees. */
static size_t *
tui_requests_visible(struct tui *t, size_t *n)
{
	struct tui_client *c = t->c;
	const char *f = c->req_filter.text.data != NULL ?
	    c->req_filter.text.data : "";
	size_t *v = xreallocarray(NULL, t->nreqs + 1, sizeof *v), i;

	*n = 0;
	for (i = 0; i < t->nreqs; i++) {
		if (tui_req_matches(t->reqs[i], f))
			v[(*n)++] = i;
	}
	return v;
}

static const char *
tui_req_mark(const struct request *r, enum tui_style *style)
{
	*style = TUI_STYLE_NORMAL;
	if (!r->done || r->decision == NULL)
		return "\xe2\x80\xa6";
	if (strcmp(r->decision, "deny") == 0) {
		*style = TUI_STYLE_ALERT;
		return "\xe2\x9c\x97";
	}
	if (strcmp(r->decision, "error") == 0) {
		*style = TUI_STYLE_WARN;
		return "!";
	}
	*style = TUI_STYLE_OK;
	return strcmp(r->decision, "tunnel") == 0 ? "~" : "\xe2\x9c\x93";
}

char *
tui_req_url(const char *scheme, const char *host, int port, const char *path)
{
	char *url, *q;

	url = xprintf("%s://%s:%d%s", scheme != NULL ? scheme : "?",
	    host != NULL ? host : "?", port, path != NULL ? path : "");
	q = quote_name(url);
	free(url);
	return q;
}

static void
tui_requests_row(struct tui *t, const struct request *r, unsigned y,
    unsigned sx, bool selected)
{
	struct tui_client *c = t->c;
	char when[32], size[16], dur[16], status[8], *line, *url, *m1;
	enum tui_style mark, style = selected ? TUI_STYLE_SELECTED :
	    TUI_STYLE_NORMAL;
	const char *m = tui_req_mark(r, &mark);
	unsigned x;

	util_fmt_time(when, sizeof when, r->started_at);
	snprintf(status, sizeof status, "%d", r->status);
	if (r->done) {
		util_fmt_size(size, sizeof size, r->bytes_down);
		util_fmt_duration(dur, sizeof dur, r->duration_us / 1000);
	} else
		size[0] = dur[0] = '\0';
	tui_screen_fill(c->scr, &(struct tui_rect){ 0, y, sx, 1 }, style);
	x = tui_screen_printf(c->scr, 0, y, sx, style, "%s %2lld ",
	    strlen(when) > 11 ? when + 11 : when, (long long)r->session_id);
	x += tui_screen_print(c->scr, x, y, sx - x, selected ? style : mark,
	    m);
	url = tui_req_url(r->scheme, r->host, r->port, r->path);
	m1 = quote_name(r->method != NULL ? r->method : "-");
	line = xprintf(" %-7s %s", m1, url);
	free(m1);
	free(url);
	if (sx > x + 22)
		tui_screen_print(c->scr, x, y, sx - x - 22, style, line);
	if (sx > 22)
		tui_screen_printf(c->scr, sx - 21, y, 21, style,
		    "%4s %7s %7s", r->status != 0 ? status : "-", size, dur);
	free(line);
}

void
tui_requests_draw(struct tui *t, const struct tui_rect *area)
{
	struct tui_client *c = t->c;
	size_t n, *v = tui_requests_visible(t, &n), i, rows;
	unsigned y;

	tui_screen_fill(c->scr, area, TUI_STYLE_NORMAL);
	tui_screen_printf(c->scr, 0, area->y, area->sx, TUI_STYLE_TITLE,
	    " requests: %zu of %zu  %s%s%s", n, t->nreqs,
	    c->req_filter.active || c->req_filter.text.len > 0 ? "filter: " :
	                                                         "/ filters",
	    c->req_filter.text.data != NULL ? c->req_filter.text.data : "",
	    c->req_filter.active ? "_" : "");
	tui_screen_printf(c->scr, 0, area->y + 1, area->sx, TUI_STYLE_DIM,
	    "time      s   method  url%*s",
	    (int)(area->sx > 40 ? area->sx - 40 : 0), "status    size    time");
	rows = area->sy > 3 ? area->sy - 3 : 1;
	if (c->req_follow || c->req_sel >= n)
		c->req_sel = n > 0 ? n - 1 : 0;
	if (c->req_sel < c->req_top)
		c->req_top = c->req_sel;
	if (c->req_sel >= c->req_top + rows)
		c->req_top = c->req_sel - rows + 1;
	for (i = c->req_top, y = area->y + 2; i < n && y < area->y + 2 + rows;
	    i++, y++)
		tui_requests_row(t, t->reqs[v[i]], y, area->sx,
		    i == c->req_sel);
	tui_screen_print(c->scr, 0, area->y + area->sy - 1, area->sx,
	    TUI_STYLE_DIM,
	    " up/down move  Enter details  / filter  "
	    "Esc back");
	free(v);
}

bool
tui_list_key(const struct tui_key *k, size_t n, size_t page, size_t *sel)
{
	if (n == 0)
		return false;
	switch (k->code) {
	case TUI_KEY_UP:
	case 'k':
		*sel = *sel > 0 ? *sel - 1 : 0;
		return true;
	case TUI_KEY_DOWN:
	case 'j':
		*sel = *sel + 1 < n ? *sel + 1 : n - 1;
		return true;
	case TUI_KEY_PAGEUP:
		*sel = *sel > page ? *sel - page : 0;
		return true;
	case TUI_KEY_PAGEDOWN:
		*sel = *sel + page < n ? *sel + page : n - 1;
		return true;
	case TUI_KEY_HOME:
	case 'g':
		*sel = 0;
		return true;
	case TUI_KEY_END:
	case 'G':
		*sel = n - 1;
		return true;
	}
	return false;
}

char *
tui_req_details(const struct request *r)
{
	struct buf b;
	struct strv q;
	char when[32], size[16], dur[16], *url;

	buf_init(&b);
	strv_init(&q);
	util_fmt_time(when, sizeof when, r->started_at);
	util_fmt_size(size, sizeof size, r->bytes_down);
	util_fmt_duration(dur, sizeof dur, r->duration_us / 1000);
	url = tui_req_url(r->scheme, r->host, r->port, r->path);
	buf_printf(&b, "%s %s\n\n", quote_keep(&q, r->method != NULL ?
	    r->method : "-"), url);
	free(url);
	buf_printf(&b, "session:   %lld\nstarted:   %s\ndecision:  %s\n",
	    (long long)r->session_id, when, r->done && r->decision != NULL ?
	    r->decision : "(in flight)");
	if (r->rule != NULL)
		buf_printf(&b, "rule:      %s\n", quote_keep_line(&q, r->rule));
	buf_printf(&b, "status:    %d\nreceived:  %s\nduration:  %s\n", r->status,
	    size, dur);
	if (r->error != NULL)
		buf_printf(&b, "error:     %s\n", quote_keep_line(&q, r->error));
	/* Header lines stay lines; what is in them is escaped. */
	buf_printf(&b, "\nrequest headers (secrets redacted):\n%s\n",
	    r->req_headers != NULL ? quote_keep_text(&q, r->req_headers) :
	    "(none)\n");
	buf_printf(&b, "response headers:\n%s", r->resp_headers != NULL ?
	    quote_keep_text(&q, r->resp_headers) : "(none)\n");
	strv_free(&q);
	return buf_steal(&b);
}

bool
tui_requests_key(struct tui *t, const struct tui_key *k)
{
	struct tui_client *c = t->c;
	size_t n, *v = tui_requests_visible(t, &n);
	char *text;

	if (c->req_filter.active) {
		if (k->code == '\r' || k->code == 0x1b)
			c->req_filter.active = false;
		else
			tui_line_key(&c->req_filter, k);
		c->req_follow = true;
	} else if (k->code == '/') {
		c->req_filter.active = true;
	} else if (k->code == 0x1b || k->code == 'q') {
		tui_view_pop(t);
	} else if (k->code == '\r' && n > 0 && c->req_sel < n) {
		text = tui_req_details(t->reqs[v[c->req_sel]]);
		tui_text_show(t, "request", text, false);
		free(text);
	} else if (tui_list_key(k, n, 10, &c->req_sel))
		c->req_follow = c->req_sel + 1 == n;
	else {
		free(v);
		return false;
	}
	free(v);
	tui_redraw(t);
	return true;
}
