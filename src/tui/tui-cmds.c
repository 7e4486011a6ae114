/* What the server's commands do to the dashboard's sessions: list them, close one, type into one. */
#include <netinet/in.h>

#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "pane/pane.h"
#include "session/session.h"
#include "tui-int.h"

/* tmux's key names, as agentmux send takes them. */
static const struct {
	const char *name;
	uint32_t code;
} tui_cmds_keys[] = {
	{ "Enter", '\r' }, { "Escape", 0x1b }, { "Tab", '\t' },
	{ "BTab", PANE_KEY_BACKTAB }, { "Space", ' ' }, { "BSpace", 0x7f },
	{ "Up", PANE_KEY_UP }, { "Down", PANE_KEY_DOWN },
	{ "Left", PANE_KEY_LEFT }, { "Right", PANE_KEY_RIGHT },
	{ "Home", PANE_KEY_HOME }, { "End", PANE_KEY_END },
	{ "IC", PANE_KEY_INSERT }, { "DC", PANE_KEY_DELETE },
	{ "PPage", PANE_KEY_PAGEUP }, { "PgUp", PANE_KEY_PAGEUP },
	{ "NPage", PANE_KEY_PAGEDOWN }, { "PgDn", PANE_KEY_PAGEDOWN },
};

/* The pane of the session recorded as ID, or NULL. */
static struct tui_pane *
tui_cmds_pane(struct tui *t, int64_t id)
{
	size_t i;

	for (i = 0; i < t->npanes; i++) {
		if (t->panes[i]->id == id)
			return t->panes[i];
	}
	return NULL;
}

/* A worktree session's branch (agentmux/ID/NAME: checked by the session layer), or NULL. */
static const char *
tui_cmds_branch(const struct tui_pane *wp)
{
	return wp->s != NULL ? session_branch(wp->s) : NULL;
}

static size_t
tui_cmds_prompts(const struct tui *t, const struct tui_pane *wp)
{
	size_t i, n = 0;

	for (i = 0; i < t->nprompts; i++)
		n += t->prompts[i]->pane == wp;
	return n;
}

/* What a live session costs (issue: ls --json), as the sessions view shows it. */
static void
tui_cmds_json_costs(struct json *j, struct session *s)
{
	struct session_costs c;

	session_costs(s, &c);
	json_key(j, "costs");
	json_obj_begin(j);
	json_kint(j, "cpu_ms", (int64_t)(c.cpu_sec * 1000));
	json_kint(j, "cpu_share_pct", (int64_t)(c.cpu_share * 100));
	json_kint(j, "memory", c.memory);
	json_kint(j, "processes", c.procs);
	json_kint(j, "written", c.written);
	json_kint(j, "allowed", c.allowed);
	json_kint(j, "denied", c.denied);
	json_kint(j, "bytes_up", c.bytes_up);
	json_kint(j, "bytes_down", c.bytes_down);
	json_kint(j, "turns", c.turns);
	json_kint(j, "run_ms", c.run_ms);
	if (c.from != NULL)
		json_kstr(j, "from", c.from);
	json_obj_end(j);
	json_kbool(j, "paused", session_paused(s));
}

/* Forwards shown at most, per session. */
#define TUI_CMDS_PORTS_MAX 64

/* A session's forwarded ports (agentmux port), as ls --json shows them. */
static void
tui_cmds_json_ports(struct json *j, struct session *s)
{
	struct session_port_info pi[TUI_CMDS_PORTS_MAX];
	size_t n = session_ports(s, pi, nitems(pi)), i;

	json_key(j, "ports");
	json_arr_begin(j);
	for (i = 0; i < n && i < nitems(pi); i++) {
		json_obj_begin(j);
		json_kstr(j, "host", pi[i].host);
		json_kint(j, "host_port", pi[i].host_port);
		json_kint(j, "jail_port", pi[i].jail_port);
		json_kint(j, "connections", (int64_t)pi[i].conns);
		json_obj_end(j);
	}
	json_arr_end(j);
}

/* The same for ls: ", ports 127.77.1.1:8080->8000 ...". */
static void
tui_cmds_ports(struct buf *out, struct session *s)
{
	struct session_port_info pi[TUI_CMDS_PORTS_MAX];
	size_t n = s != NULL ? session_ports(s, pi, nitems(pi)) : 0, i;

	for (i = 0; i < n && i < nitems(pi); i++) {
		buf_printf(out, "%s%s%s%s:%d->%d", i == 0 ? ", ports " : " ",
		    strchr(pi[i].host, ':') != NULL ? "[" : "", pi[i].host,
		    strchr(pi[i].host, ':') != NULL ? "]" : "",
		    pi[i].host_port, pi[i].jail_port);
	}
}

static void
tui_cmds_json(struct tui *t, struct buf *out)
{
	struct json j;
	char state[32];
	size_t i;

	json_init(&j, false);
	json_arr_begin(&j);
	for (i = 0; i < t->npanes; i++) {
		struct tui_pane *wp = t->panes[i];

		json_obj_begin(&j);
		json_kint(&j, "id", wp->id);
		json_kstr(&j, "agent", wp->agent);
		json_kstr(&j, "project", wp->project);
		json_kstr(&j, "state", tui_pane_state(wp, state, sizeof state));
		json_kint(&j, "seconds", (util_mono_us() - wp->started_us) /
		    1000000);
		json_kint(&j, "requests", (int64_t)wp->requests);
		json_kint(&j, "denials", (int64_t)wp->denials);
		json_kint(&j, "prompts", (int64_t)tui_cmds_prompts(t, wp));
		if (wp->s != NULL)
			json_kstr(&j, "branch", session_branch(wp->s));
		if (wp->s != NULL && !wp->exited)
			tui_cmds_json_costs(&j, wp->s);
		if (wp->s != NULL)
			tui_cmds_json_ports(&j, wp->s);
		json_obj_end(&j);
	}
	json_arr_end(&j);
	buf_add(out, j.out.data, j.out.len);
	buf_addc(out, '\n');
	json_free(&j);
}

char *
tui_list(struct tui *t, bool json)
{
	struct buf out;
	char state[32], *q, *qb;
	size_t i;

	buf_init(&out);
	if (json)
		tui_cmds_json(t, &out);
	for (i = 0; !json && i < t->npanes; i++) {
		struct tui_pane *wp = t->panes[i];

		/* Names came from the user, a project's path from disk: quoted. */
		q = quote_name(wp->project != NULL ? wp->project : "");
		qb = tui_cmds_branch(wp) != NULL ?
		    quote_name(tui_cmds_branch(wp)) : NULL;
		buf_printf(&out, "%lld: %s %s%s%s, %s, %llds, %llu requests, "
		    "%llu denied, %zu prompts waiting", (long long)wp->id,
		    wp->agent != NULL ? wp->agent : "?", q,
		    qb != NULL ? " on " : "", qb != NULL ? qb : "",
		    tui_pane_state(wp, state, sizeof state),
		    (long long)((util_mono_us() - wp->started_us) / 1000000),
		    (unsigned long long)wp->requests,
		    (unsigned long long)wp->denials, tui_cmds_prompts(t, wp));
		if (!wp->exited)
			tui_cmds_ports(&out, wp->s);
		buf_addc(&out, '\n');
		free(q);
		free(qb);
	}
	buf_addc(&out, '\0');
	return out.data;
}

int
tui_kill(struct tui *t, int64_t id, char **cause)
{
	struct tui_pane *wp = tui_cmds_pane(t, id);

	if (wp == NULL || wp->s == NULL || wp->exited) {
		*cause = xprintf("no running session %lld here; 'agentmux ls' "
		    "lists them", (long long)id);
		return -1;
	}
	wp->closing = true;
	session_close(wp->s);
	tui_message(t, false, "closing session %lld", (long long)id);
	return 0;
}

/* Key name NAME (tmux's: Enter, C-c, M-x, F1...) as a code and mods; false if it is none. */
static bool
tui_cmds_key(const char *name, uint32_t *code, int *mods)
{
	size_t i;
	int n;

	*mods = 0;
	while (strlen(name) > 2 && name[1] == '-' &&
	    strchr("CMS", name[0]) != NULL) {
		*mods |= name[0] == 'C' ? PANE_MOD_CTRL : name[0] == 'M' ?
		    PANE_MOD_ALT : PANE_MOD_SHIFT;
		name += 2;
	}
	for (i = 0; i < nitems(tui_cmds_keys); i++) {
		if (strcmp(name, tui_cmds_keys[i].name) == 0) {
			*code = tui_cmds_keys[i].code;
			return true;
		}
	}
	if (name[0] == 'F' && (n = atoi(name + 1)) >= 1 && n <= 12) {
		*code = PANE_KEY_F1 + (uint32_t)n - 1;
		return true;
	}
	if (strlen(name) == 1 && (unsigned char)name[0] >= 0x20 &&
	    (unsigned char)name[0] < 0x7f) {
		*code = (uint32_t)name[0];
		if ((*mods & PANE_MOD_CTRL) != 0 && ((*code >= 'a' &&
		    *code <= 'z') || (*code >= '@' && *code <= '_'))) {
			*code &= 0x1f;  /* C-c is ETX, as a terminal sends it */
			*mods &= ~PANE_MOD_CTRL;
		}
		return true;
	}
	return false;
}

int
tui_send(struct tui *t, int64_t id, char *const *words, bool literal,
    char **cause)
{
	struct tui_pane *wp = tui_cmds_pane(t, id);
	uint32_t code;
	int mods;
	size_t i;

	if (wp == NULL || wp->s == NULL || wp->exited) {
		*cause = xprintf("no running session %lld here; 'agentmux ls' "
		    "lists them", (long long)id);
		return -1;
	}
	for (i = 0; words[i] != NULL; i++) {
		if (!literal && tui_cmds_key(words[i], &code, &mods))
			pane_key(wp->pane, code, mods);
		else
			pane_write(wp->pane, words[i], strlen(words[i]));
	}
	return 0;
}

/* Session WP ended: it will never reach WHAT. */
static int
tui_reached_never(const struct tui_pane *wp, const char *what, char **cause)
{
	*cause = xprintf("session %lld ended before it reached '%s'",
	    (long long)wp->id, what);
	return -1;
}

int
tui_set_paused(struct tui *t, int64_t id, bool pause, char **cause)
{
	struct tui_pane *wp = tui_cmds_pane(t, id);

	if (wp == NULL || wp->s == NULL || wp->exited) {
		*cause = xprintf("no running session %lld here; 'agentmux ls' "
		    "lists them", (long long)id);
		return -1;
	}
	if (session_paused(wp->s) == pause)
		return 0;
	if (session_pause(wp->s, pause, cause) == -1)
		return -1;
	tui_message(t, false, "session %lld (%s) %s", (long long)id,
	    wp->agent, pause ? "paused (agentmux resume)" : "resumed");
	return 0;
}

int
tui_reached(struct tui *t, int64_t id, const char *what, char **cause)
{
	struct tui_pane *wp = tui_cmds_pane(t, id);
	enum session_state st;

	if (strcmp(what, "exit") != 0 && strcmp(what, "needs-you") != 0 &&
	    strcmp(what, "prompt") != 0) {
		*cause = xprintf("cannot wait for '%s': say needs-you, prompt "
		    "or exit", what);
		return -1;
	}
	if (wp == NULL) {
		*cause = xprintf("no session %lld here; 'agentmux ls' lists "
		    "them", (long long)id);
		return -1;
	}
	if (wp->exited || wp->s == NULL || wp->start_failed != NULL)
		return strcmp(what, "exit") == 0 ? 1 : tui_reached_never(wp,
		    what, cause);
	if (strcmp(what, "exit") == 0)
		return 0;
	st = session_state(wp->s);
	if (strcmp(what, "prompt") == 0)
		return st == SESSION_PROMPT;
	return st == SESSION_NEEDS_YOU;
}

int
tui_port(struct tui *t, int64_t id, const struct tui_port_opts *o,
    char **text, char **cause)
{
	struct tui_pane *wp = tui_cmds_pane(t, id);
	char own[INET6_ADDRSTRLEN];
	const char *host = o->host;
	bool v6;
	int bound;

	if (wp == NULL || wp->s == NULL || wp->exited) {
		*cause = xprintf("no running session %lld here; 'agentmux ls' "
		    "lists them", (long long)id);
		return -1;
	}
	if (o->remove) {
		if (session_port_remove(wp->s, o->jail_port, cause) == -1)
			return -1;
		*text = xprintf("session %lld: its port %d is no longer "
		    "forwarded\n", (long long)id, o->jail_port);
		return 0;
	}
	if (host == NULL) {
		session_port_default_host(id, own, sizeof own);
		host = own;
	}
	if (session_port_add(wp->s, host, o->named, o->host_port,
	    o->jail_port, &bound, cause) == -1)
		return -1;
	v6 = strchr(host, ':') != NULL;
	*text = xprintf("http://%s%s%s:%d/ -> session %lld's port %d (until "
	    "'agentmux port -d %lld %d' or the session's end)\n"
	    "Pages it serves run in your browser with this host's network, "
	    "outside the jail and its proxy; any local user can connect "
	    "to it.\n", v6 ? "[" : "", host, v6 ? "]" : "", bound,
	    (long long)id, o->jail_port, (long long)id, o->jail_port);
	tui_message(t, false, "session %lld: port %d forwarded to "
	    "http://%s%s%s:%d/ (its pages run with this host's network)",
	    (long long)id, o->jail_port, v6 ? "[" : "", host, v6 ? "]" : "",
	    bound);
	return 0;
}
