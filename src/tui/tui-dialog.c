/* Dialogs over everything: confirmations, the new session picker, the port forward, and the one-line editor they use. */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "session/session.h"
#include "tui-int.h"

void
tui_dialog_free(struct tui_client *c)
{
	free(c->confirm_text);
	c->confirm_text = NULL;
	buf_free(&c->new_dir.text);
	free(c->new_missing);
	c->new_missing = NULL;
	free(c->new_note);
	c->new_note = NULL;
	buf_free(&c->port_line.text);
	free(c->port_note);
	c->port_note = NULL;
	c->new_sharer = 0;
	c->dialog = TUI_DIALOG_NONE;
}

/* The line under the dir: an error (ALERT) or what Tab found; NULL clears it. */
static void
tui_new_note(struct tui *t, bool alert, const char *text)
{
	struct tui_client *c = t->c;

	free(c->new_note);
	c->new_note = text != NULL ? xstrdup(text) : NULL;
	c->new_note_alert = alert;
}

void
tui_confirm(struct tui *t, const char *text, void (*cb)(struct tui *, void *),
    void *arg)
{
	struct tui_client *c = t->c;

	free(c->confirm_text);
	c->confirm_text = xstrdup(text);
	c->confirm_session = 0;
	c->confirm_cb = cb;
	c->confirm_arg = arg;
	c->dialog = TUI_DIALOG_CONFIRM;
	tui_redraw(t);
}

void
tui_share_ask(struct tui *t, struct tui_pane *wp, int64_t sharer)
{
	struct tui_client *c = t->c;

	c->share_pane = (unsigned)wp->num;
	c->share_sharer = sharer;
	c->dialog = TUI_DIALOG_SHARE;
	tui_redraw(t);
}

/* The answer: Enter or w, a worktree; s, the tree shared; c or Esc, not now (r asks again). */
static void
tui_share_key(struct tui *t, const struct tui_key *k)
{
	struct tui_client *c = t->c;
	struct tui_pane *wp = tui_pane_by_num(t, (int)c->share_pane);
	bool own = k->code == '\r' || k->code == 'w' || k->code == 'W';
	bool share = k->code == 's' || k->code == 'S';

	if (!own && !share && k->code != 'c' && k->code != 'C' &&
	    k->code != 0x1b)
		return;
	c->dialog = TUI_DIALOG_NONE;
	if (wp == NULL || (!own && !share))
		return;
	wp->ask_sharer = 0;
	if (own)
		wp->worktree = true;
	else
		wp->refuse_shared = false;
	tui_pane_restart(wp);
}

/* Whether client C's dialog is about session ID: a question, or its port. */
static bool
tui_dialog_about(const struct tui_client *c, int64_t id)
{
	return (c->dialog == TUI_DIALOG_CONFIRM && c->confirm_session == id) ||
	    (c->dialog == TUI_DIALOG_PORT && c->port_id == id);
}

/*
 * Pane WP's session ended or the pane goes (WHY says which): a client's
 * dialog about it closes in every client, so that no answer reaches
 * another session, and nothing asks about one that is over (the
 * client says why).
 */
void
tui_dialog_drop_pane(struct tui *t, const struct tui_pane *wp,
    const char *why)
{
	struct tui_client *c;
	char *text;
	size_t i;

	for (i = 0; i < t->nclients; i++) {
		c = t->clients[i];
		if (c->dialog == TUI_DIALOG_SHARE && c->share_pane ==
		    (unsigned)wp->num) {
			c->dialog = TUI_DIALOG_NONE;
			tui_screen_invalidate(c->scr);
			continue;
		}
		if (wp->id <= 0 || !tui_dialog_about(c, wp->id))
			continue;
		c->dialog = TUI_DIALOG_NONE;
		text = xprintf("session %lld %s: its dialog is closed",
		    (long long)wp->id, why);
		tui_notice_client(t, c, false, text);
		free(text);
		tui_screen_invalidate(c->scr);
	}
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
	struct tui_client *c = t->c;
	struct tui_pane *focus = tui_focus_pane(t);

	char *cause;
	size_t i;

	c->dialog = TUI_DIALOG_NEW;
	c->new_sel = 0;
	c->new_dir_step = false;
	c->new_worktree = false;
	c->new_forced = NULL;
	c->new_sharer = 0;
	tui_new_note(t, false, NULL);
	/* Agents that are not installed are shown so, and not started. */
	free(c->new_missing);
	c->new_missing = xcalloc(t->cf->nagents + 1, sizeof *c->new_missing);
	for (i = 0; i < t->cf->nagents; i++) {
		cause = NULL;
		c->new_missing[i] = !session_agent_installed(t->cf,
		    t->cf->agents[i].name, &cause);
		free(cause);
	}
	buf_reset(&c->new_dir.text);
	buf_adds(&c->new_dir.text, focus != NULL && focus->project != NULL ?
	    focus->project : "");
	tui_redraw(t);
}

char *
tui_new_expand(const char *text)
{
	if (text[0] == '~' && (text[1] == '\0' || text[1] == '/'))
		return xprintf("%s%s", path_home(), text + 1);
	return xstrdup(text);
}

/*
 * Directories a project cannot be, said in the dialog's terms (the
 * jail's own check says it for the command line); NULL if DIR may be one.
 */
static char *
tui_new_refuse(const char *dir)
{
	char *real = realpath(dir, NULL), *home = realpath(path_home(), NULL);
	char *why = NULL;

	if (real != NULL && home != NULL && strcmp(real, home) == 0)
		why = xstrdup("that is your home directory, with all of your "
		    "files: pick a project directory inside it (~/NAME; Tab "
		    "completes)");
	else if (real != NULL && strcmp(real, "/") == 0)
		why = xstrdup("that is the whole filesystem: pick a project "
		    "directory (Tab completes)");
	free(real);
	free(home);
	return why;
}

/* The dir typed, ~ expanded, or NULL (the current dir); caller frees. */
static char *
tui_new_dir(struct tui *t)
{
	struct tui_client *c = t->c;

	return c->new_dir.text.len > 0 ? tui_new_expand(c->new_dir.text.data) :
	    NULL;
}

/*
 * Starts the picked agent in the picked dir (in a worktree if asked; in
 * a tree another session works in only if SHARED) and shows it where the
 * focus is; an error stays in the dialog, back at the dir.
 */
static void
tui_new_start(struct tui *t, bool shared)
{
	struct tui_client *c = t->c;
	const struct config_agent *a = &t->cf->agents[c->new_sel];
	char *dir = tui_new_dir(t);
	struct tui_pane *wp;
	char *cause = NULL;

	c->new_sharer = 0;
	/* The environment of the client whose terminal asks. */
	wp = tui_pane_start(t, &(struct tui_opts){ .agent = a->name,
	    .dir = dir, .worktree = c->new_worktree, .refuse_shared = !shared,
	    .env = c->has_env ? c->env.v : NULL }, &cause);
	free(dir);
	if (wp == NULL) {
		tui_new_note(t, true, cause);
		free(cause);
		return;
	}
	c->dialog = TUI_DIALOG_NONE;
	if (c->layout == NULL)
		c->layout = tui_layout_create(wp->num);
	else
		tui_layout_replace(c->layout, tui_layout_focus(c->layout),
		    wp->num);
	tui_layout_set_focus(c->layout, wp->num);
	while (tui_view_top(t) != TUI_VIEW_PANES)
		tui_view_pop(t);
	c->relayout = true;
	tui_redraw(t);
}

/*
 * Enter on the dir: a dir that cannot be a project is refused here; one
 * whose tree another live session works in is asked about first (the
 * rule agentmux new applies), unless this session gets a worktree.
 */
static void
tui_new_enter(struct tui *t)
{
	struct tui_client *c = t->c;
	char *dir = tui_new_dir(t), *cause;
	int64_t sharer;

	if (dir != NULL && (cause = tui_new_refuse(dir)) != NULL) {
		tui_new_note(t, true, cause);
		free(cause);
		free(dir);
		return;
	}
	sharer = c->new_worktree ? 0 : session_tree_sharer(t->ctx, dir);
	free(dir);
	if (sharer != 0) {
		tui_new_note(t, false, NULL);
		c->new_sharer = sharer;
		return;
	}
	tui_new_start(t, false);
}

/* Ctrl-T on the dir: a worktree of its own or not, unless a setting says it is one. */
static void
tui_new_toggle(struct tui *t)
{
	struct tui_client *c = t->c;
	char *why;

	if (c->new_forced == NULL) {
		c->new_worktree = !c->new_worktree;
		tui_new_note(t, false, NULL);
		return;
	}
	why = xprintf("it gets a worktree of its own whatever this says: %s",
	    c->new_forced);
	tui_new_note(t, true, why);
	free(why);
}

/* The ask: Enter or w, a worktree; s, the tree shared; c, nothing; Esc, back to the dir. */
static void
tui_new_ask_key(struct tui *t, const struct tui_key *k)
{
	if (k->code == '\r' || k->code == 'w' || k->code == 'W') {
		t->c->new_worktree = true;
		tui_new_start(t, false);
	} else if (k->code == 's' || k->code == 'S')
		tui_new_start(t, true);
	else if (k->code == 'c' || k->code == 'C')
		t->c->dialog = TUI_DIALOG_NONE;
	else if (k->code == 0x1b)
		t->c->new_sharer = 0;
}

/*
 * A project is the agent's to fill, and Tab is answered inside the event
 * loop: so much of a directory is read, and so many matches kept, at most.
 */
#define TUI_NEW_READ_MAX 10000
#define TUI_NEW_MATCH_MAX 200
/* The note lists names up to about what its four lines show. */
#define TUI_NEW_NOTE_MAX (4 * 70)

/* Whether entry DE of D is a directory (a symlink is not); stats only if readdir cannot say. */
static bool
tui_new_is_dir(DIR *d, const struct dirent *de)
{
	struct stat st;

	if (de->d_type != DT_UNKNOWN)
		return de->d_type == DT_DIR;
	return fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISDIR(st.st_mode);
}

/*
 * The subdirectories of DIR (itself no symlink) whose names start with
 * BASE, symlinks left out: names only are read; hidden ones if BASE asks.
 * Returns false if DIR was too big to read to the end: OUT is then a part.
 */
AM_TESTABLE bool
tui_new_matches(const char *dir, const char *base, struct strv *out)
{
	DIR *d;
	struct dirent *de;
	size_t len = strlen(base), nread = 0;
	bool whole = true;
	int fd;

	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) ==
	    -1)
		return true;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return true;
	}
	while ((de = readdir(d)) != NULL) {
		if (nread++ == TUI_NEW_READ_MAX || out->n == TUI_NEW_MATCH_MAX) {
			whole = false;
			break;
		}
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0 ||
		    (de->d_name[0] == '.' && base[0] != '.') ||
		    strncmp(de->d_name, base, len) != 0)
			continue;
		if (tui_new_is_dir(d, de))
			strv_add(out, de->d_name);
	}
	closedir(d);
	return whole;
}

/* How long a prefix all of V share. */
static size_t
tui_new_common(const struct strv *v)
{
	size_t n = strlen(v->v[0]), i, j;

	for (i = 1; i < v->n; i++) {
		for (j = 0; j < n && v->v[i][j] == v->v[0][j]; j++)
			;
		n = j;
	}
	return n;
}

static int
tui_new_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * The names found, quoted, as the note under the dir: as many as its lines
 * show, then "and more" (also if WHOLE is false: the dir was not all read).
 */
static void
tui_new_list(struct tui *t, const struct strv *m, bool whole)
{
	struct buf b;
	char *q;
	size_t i;

	buf_init(&b);
	if (!whole)
		buf_adds(&b, "too many entries to list all: ");
	for (i = 0; i < m->n && b.len < TUI_NEW_NOTE_MAX; i++) {
		q = quote_name(m->v[i]);
		buf_printf(&b, "%s%s/", i > 0 ? "  " : "", q);
		free(q);
	}
	if (i < m->n || !whole)
		buf_adds(&b, "  and more");
	tui_new_note(t, false, b.data);
	buf_free(&b);
}

/*
 * Tab in the dir: completes as a shell does, directories only: one match
 * is completed (with a slash), several to what they share, and listed
 * if that adds nothing.
 */
AM_TESTABLE void
tui_new_complete(struct tui *t)
{
	struct tui_client *c = t->c;
	char *text = tui_new_expand(c->new_dir.text.data != NULL ?
	    c->new_dir.text.data : ""), *slash, *dir, *base;
	char *typed = xstrdup(c->new_dir.text.data != NULL ?
	    c->new_dir.text.data : "");
	struct strv m;
	size_t common, blen;
	bool whole;

	strv_init(&m);
	slash = strrchr(text, '/');
	dir = slash == NULL ? xstrdup(".") : slash == text ? xstrdup("/") :
	    xstrndup(text, (size_t)(slash - text));
	base = slash == NULL ? text : slash + 1;
	whole = tui_new_matches(dir, base, &m);
	blen = strlen(base);
	if (m.n == 0 && !whole)
		tui_new_note(t, true, "that directory is too big to look through: "
		    "type more of the name");
	else if (m.n == 0)
		tui_new_note(t, true, "no directory there starts with that");
	else if (!whole) {
		/* What was not read may share less: nothing is completed. */
		qsort(m.v, m.n, sizeof *m.v, tui_new_cmp);
		tui_new_list(t, &m, false);
	} else {
		qsort(m.v, m.n, sizeof *m.v, tui_new_cmp);
		common = tui_new_common(&m);
		/* The user's own words are kept (~ stays ~): only the rest is added. */
		buf_reset(&c->new_dir.text);
		buf_adds(&c->new_dir.text, typed);
		buf_add(&c->new_dir.text, m.v[0] + blen, common - blen);
		if (m.n == 1)
			buf_addc(&c->new_dir.text, '/');
		if (m.n == 1)
			tui_new_note(t, false, NULL);
		else if (common == blen)
			tui_new_list(t, &m, true);
		else
			tui_new_note(t, false, NULL);
	}
	strv_free(&m);
	free(dir);
	free(text);
	free(typed);
}

/* Typing a letter picks the next agent whose name starts with it. */
static void
tui_new_jump(struct tui *t, uint32_t c)
{
	size_t i, at;

	for (i = 1; i <= t->cf->nagents; i++) {
		at = (t->c->new_sel + i) % t->cf->nagents;
		if ((uint32_t)(unsigned char)t->cf->agents[at].name[0] == c) {
			t->c->new_sel = at;
			return;
		}
	}
}

/* Enter on an agent: on to its directory, unless it is not installed. */
static void
tui_new_pick(struct tui *t)
{
	struct tui_client *c = t->c;
	const struct config_agent *a;
	char *cause = NULL;

	if (t->cf->nagents == 0)
		return;
	if (!session_agent_installed(t->cf, t->cf->agents[c->new_sel].name,
	    &cause)) {
		tui_new_note(t, true, cause);
		free(cause);
		return;
	}
	a = &t->cf->agents[c->new_sel];
	c->new_forced = a->worktree ? "its profile says worktree = yes" :
	    t->cf->ui.worktree ? "[ui] says worktree = yes" : NULL;
	c->new_worktree = c->new_forced != NULL;
	c->new_dir_step = true;
}

static void
tui_new_key(struct tui *t, const struct tui_key *k)
{
	struct tui_client *c = t->c;

	if (c->new_sharer != 0)
		tui_new_ask_key(t, k);
	else if (k->code == 0x1b) {
		tui_new_note(t, false, NULL);
		if (c->new_dir_step)
			c->new_dir_step = false;
		else
			c->dialog = TUI_DIALOG_NONE;
	} else if (k->code == '\r') {
		if (c->new_dir_step)
			tui_new_enter(t);
		else
			tui_new_pick(t);
	} else if (c->new_dir_step && k->code == '\t')
		tui_new_complete(t);
	else if (c->new_dir_step && k->code == 0x14)
		tui_new_toggle(t);
	else if (c->new_dir_step) {
		if (tui_line_key(&c->new_dir, k))
			tui_new_note(t, false, NULL);
	} else {
		tui_new_note(t, false, NULL);
		if (!tui_list_key(k, t->cf->nagents, 5, &c->new_sel))
			tui_new_jump(t, k->code);
	}
}

/* The port dialog's note: why Enter was refused; NULL clears it. */
static void
tui_port_note(struct tui *t, const char *text)
{
	struct tui_client *c = t->c;

	free(c->port_note);
	c->port_note = text != NULL ? xstrdup(text) : NULL;
}

void
tui_port_dialog(struct tui *t)
{
	struct tui_client *c = t->c;
	struct tui_pane *wp = tui_focus_pane(t);

	if (wp == NULL || wp->s == NULL || wp->exited || wp->id <= 0) {
		tui_reply(t, false, "no running session to forward a port of");
		return;
	}
	c->dialog = TUI_DIALOG_PORT;
	c->port_id = wp->id;
	buf_reset(&c->port_line.text);
	tui_port_note(t, NULL);
	tui_redraw(t);
}

/* Word W as a port from MIN to 65535 into *OUT; -1 if it is none. */
static int
tui_port_num(const char *w, int min, int *out)
{
	char *end;
	long n;

	errno = 0;
	n = strtol(w, &end, 10);
	if (*w < '0' || *w > '9' || *end != '\0' || errno != 0 || n < min ||
	    n > 65535)
		return -1;
	*out = (int)n;
	return 0;
}

/*
 * What the port dialog's line asks: "JAIL_PORT [HOST_PORT]" forwards (on
 * the session's own address), "-d JAIL_PORT" removes; -1 with *CAUSE.
 */
AM_TESTABLE int
tui_port_parse(const char *text, struct tui_port_opts *o, char **cause)
{
	char *copy = xstrdup(text), *p = copy, *tok, *w[2];
	size_t n = 0;
	int rc = -1;

	memset(o, 0, sizeof *o);
	while ((tok = strsep(&p, " ")) != NULL) {
		if (*tok != '\0' && n++ < nitems(w))
			w[n - 1] = tok;
	}
	if (n == 2 && strcmp(w[0], "-d") == 0) {
		o->remove = true;
		rc = tui_port_num(w[1], 1, &o->jail_port);
	} else if (n == 1 || n == 2) {
		rc = tui_port_num(w[0], 1, &o->jail_port);
		o->host_port = o->jail_port;
		if (rc == 0 && n == 2)
			rc = tui_port_num(w[1], 0, &o->host_port);
	}
	if (rc == -1)
		*cause = xstrdup("type the jail's port, and the host's if it is "
		    "another (3000, or 3000 8080; 0: any free one), or -d PORT "
		    "to remove a forward");
	free(copy);
	return rc;
}

/* Enter: the forward is made (or removed) and the dialog closes; a refusal stays in it. */
static void
tui_port_enter(struct tui *t)
{
	struct tui_client *c = t->c;
	struct tui_port_opts o;
	char *cause = NULL, *text = NULL;

	if (tui_port_parse(c->port_line.text.data != NULL ?
	    c->port_line.text.data : "", &o, &cause) == -1 ||
	    tui_port(t, c->port_id, &o, &text, &cause) == -1) {
		tui_port_note(t, cause);
		free(cause);
		return;
	}
	free(text);
	if (o.remove)
		tui_message(t, false, "session %lld: its port %d is no longer "
		    "forwarded", (long long)c->port_id, o.jail_port);
	tui_port_note(t, NULL);
	c->dialog = TUI_DIALOG_NONE;
}

static void
tui_port_key(struct tui *t, const struct tui_key *k)
{
	struct tui_client *c = t->c;

	if (k->code == 0x1b)
		c->dialog = TUI_DIALOG_NONE;
	else if (k->code == '\r')
		tui_port_enter(t);
	else if (tui_line_key(&c->port_line, k))
		tui_port_note(t, NULL);
}

bool
tui_dialog_key(struct tui *t, const struct tui_key *k)
{
	struct tui_client *c = t->c;
	void (*cb)(struct tui *, void *) = c->confirm_cb;
	bool asking = c->new_sharer != 0;
	size_t i;

	switch (c->dialog) {
	case TUI_DIALOG_NONE:
		return false;
	case TUI_DIALOG_CONFIRM:
		c->dialog = TUI_DIALOG_NONE;
		if (k->code == 'y' || k->code == 'Y')
			cb(t, c->confirm_arg);
		break;
	case TUI_DIALOG_NEW:
		tui_new_key(t, k);
		break;
	case TUI_DIALOG_PORT:
		tui_port_key(t, k);
		break;
	case TUI_DIALOG_SHARE:
		tui_share_key(t, k);
		break;
	}
	/*
	 * The box covered panes that have not changed: they draw afresh when
	 * it goes, or when the question takes the place of a bigger box.
	 */
	if (c->dialog == TUI_DIALOG_NONE)
		c->new_sharer = 0;
	for (i = 0; (c->dialog == TUI_DIALOG_NONE || asking !=
	    (c->new_sharer != 0)) && i < t->npanes; i++)
		t->panes[i]->redraw = true;
	tui_screen_invalidate(c->scr);
	tui_redraw(t);
	return true;
}

/* A box of W x H in the middle of the screen; returns its rectangle. */
static struct tui_rect
tui_dialog_box(struct tui *t, unsigned w, unsigned h)
{
	struct tui_client *c = t->c;
	struct tui_rect r;

	r.sx = w + 4 < c->sx ? w + 4 : c->sx;
	r.sy = h + 2 < c->sy ? h + 2 : c->sy;
	r.x = (c->sx - r.sx) / 2;
	r.y = (c->sy - r.sy) / 2;
	tui_screen_fill(c->scr, &r, TUI_STYLE_BAR);
	return r;
}

/*
 * Cuts TEXT into lines of at most W bytes, at spaces where it can, and at
 * most MAX lines: a question is wrapped, never cut.
 */
static void
tui_dialog_wrap(const char *text, size_t w, size_t max, struct strv *out)
{
	size_t n, cut;

	while (*text != '\0' && out->n < max) {
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

/*
 * The ask: another session, SHARER, works in the tree this one would
 * share; TITLE says what starts, LAST the keys that do not start it.
 */
static void
tui_dialog_ask_draw(struct tui *t, const char *title, int64_t sharer,
    const char *last)
{
	struct tui_client *c = t->c;
	char *text;
	struct strv lines;
	struct tui_rect r;
	size_t i;

	text = xprintf("Session %lld works in that tree already: two sessions "
	    "in one tree see and undo each other's changes.", (long long)
	    sharer);
	strv_init(&lines);
	tui_dialog_wrap(text, 70, 4, &lines);
	free(text);
	r = tui_dialog_box(t, 70, (unsigned)lines.n + 6);
	tui_screen_print(c->scr, r.x + 2, r.y + 1, r.sx - 4, TUI_STYLE_BAR,
	    title);
	for (i = 0; i < lines.n; i++)
		tui_screen_print(c->scr, r.x + 2, r.y + 3 + (unsigned)i,
		    r.sx - 4, TUI_STYLE_BAR, lines.v[i]);
	tui_screen_print(c->scr, r.x + 2, r.y + 4 + (unsigned)lines.n,
	    r.sx - 4, TUI_STYLE_BAR, "Enter, w: start it in a worktree of its "
	    "own (the default)");
	c->dialog_cy = r.y + 5 + (unsigned)lines.n;
	c->dialog_cx = r.x + 2 + tui_screen_print(c->scr, r.x + 2,
	    c->dialog_cy, r.sx - 4, TUI_STYLE_BAR, last);
	strv_free(&lines);
}

/* The ask for a pane that would start (or restart) in a tree in use. */
static void
tui_dialog_share_draw(struct tui *t)
{
	struct tui_client *c = t->c;
	struct tui_pane *wp = tui_pane_by_num(t, (int)c->share_pane);
	char *title;

	title = xprintf("%s (pane %u): the tree is in use", wp != NULL &&
	    wp->id > 0 ? "Restart" : "Start", c->share_pane);
	tui_dialog_ask_draw(t, title, c->share_sharer, "s: share the tree "
	    "anyway   c, Esc: not now (r asks again) ");
	free(title);
}

/* Under the agents, on the dir step: whether it gets a worktree of its own. */
static void
tui_dialog_new_worktree(struct tui *t, const struct tui_rect *r, unsigned y)
{
	if (!t->c->new_dir_step)
		return;
	tui_screen_printf(t->c->scr, r->x + 2, y, r->sx - 4, TUI_STYLE_BAR,
	    "[%c] in a git worktree of its own (%s)", t->c->new_worktree ? 'x' :
	    ' ', t->c->new_forced != NULL ? t->c->new_forced : "Ctrl-T");
}

static void
tui_dialog_new_draw(struct tui *t)
{
	struct tui_client *c = t->c;
	size_t n = t->cf->nagents, i, first;
	unsigned rows = n < 10 ? (unsigned)n : 10, y;
	struct strv note;
	struct tui_rect r;

	if (c->new_sharer != 0) {
		tui_dialog_ask_draw(t, "New session: the tree is in use",
		    c->new_sharer, "s: share the tree anyway   c: cancel   "
		    "Esc: back ");
		return;
	}
	strv_init(&note);
	if (c->new_note != NULL)
		tui_dialog_wrap(c->new_note, 70, 4, &note);
	r = tui_dialog_box(t, 70, rows + 4 + (unsigned)note.n);
	const struct config_agent *a;
	unsigned used;
	bool missing;

	tui_screen_print(c->scr, r.x + 2, r.y + 1, r.sx - 4, TUI_STYLE_BAR,
	    c->new_dir_step ? "New session: project directory (Tab completes, "
	    "Enter starts, "
	    "Esc back)" : "New session: pick an agent (Enter, Esc cancels)");
	first = c->new_sel >= rows ? c->new_sel - rows + 1 : 0;
	for (i = first, y = r.y + 2; i < n && i < first + rows; i++, y++) {
		a = &t->cf->agents[i];
		missing = c->new_missing != NULL && c->new_missing[i];
		tui_screen_printf(c->scr, r.x + 2, y, r.sx - 4, i == c->new_sel ?
		    TUI_STYLE_SELECTED : missing ? TUI_STYLE_DIM : TUI_STYLE_BAR,
		    "%-12s %s%s", a->name, missing ? "(not installed) " : "",
		    a->description != NULL ? a->description : "");
		if (i == c->new_sel) {
			c->dialog_cx = r.x + 2;
			c->dialog_cy = y;
		}
	}
	for (i = 0; i < note.n; i++)
		tui_screen_print(c->scr, r.x + 2, r.y + r.sy - 1 - (unsigned)note.n +
		    (unsigned)i, r.sx - 4, c->new_note_alert ? TUI_STYLE_ALERT :
		    TUI_STYLE_DIM, note.v[i]);
	tui_dialog_new_worktree(t, &r, r.y + r.sy - 3 - (unsigned)note.n);
	used = tui_screen_printf(c->scr, r.x + 2, r.y + r.sy - 2 -
	    (unsigned)note.n, r.sx - 4,
	    c->new_dir_step ? TUI_STYLE_SELECTED : TUI_STYLE_BAR, "dir: %s",
	    c->new_dir.text.len > 0 ? c->new_dir.text.data : "(the current "
	    "directory)");
	if (c->new_dir_step) {
		/* The cursor at the end of what is typed. */
		c->dialog_cx = r.x + 2 + (used < r.sx - 5 ? used : r.sx - 5);
		c->dialog_cy = r.y + r.sy - 2 - (unsigned)note.n;
	}
	strv_free(&note);
}

static void
tui_dialog_confirm_draw(struct tui *t)
{
	struct tui_client *c = t->c;
	struct tui_rect r;
	struct strv lines;
	size_t w = c->sx > 8 ? c->sx - 8 : 1, i, widest = 20;

	if (w > 70)
		w = 70;
	strv_init(&lines);
	tui_dialog_wrap(c->confirm_text, w, SIZE_MAX, &lines);
	for (i = 0; i < lines.n; i++)
		if (strlen(lines.v[i]) > widest)
			widest = strlen(lines.v[i]);
	r = tui_dialog_box(t, (unsigned)widest, (unsigned)lines.n + 1);
	for (i = 0; i < lines.n; i++)
		tui_screen_print(c->scr, r.x + 2, r.y + 1 + (unsigned)i, r.sx - 4,
		    TUI_STYLE_BAR, lines.v[i]);
	c->dialog_cy = r.y + 1 + (unsigned)lines.n;
	c->dialog_cx = r.x + 2 + tui_screen_print(c->scr, r.x + 2, c->dialog_cy,
	    r.sx - 4, TUI_STYLE_BAR, "y: yes   n, Esc: no ");
	strv_free(&lines);
}

/* Forwards listed in the port dialog at most. */
#define TUI_PORT_SHOWN 6

/* The session's forwards, as URLs, a line each, into OUT. */
static void
tui_dialog_port_list(struct tui *t, struct strv *out)
{
	struct tui_pane *wp = tui_pane_by_id(t, t->c->port_id);
	struct session_port_info pi[TUI_PORT_SHOWN];
	size_t n = wp != NULL && wp->s != NULL ? session_ports(wp->s, pi,
	    nitems(pi)) : 0, i;
	bool v6;

	if (n == 0)
		strv_add(out, "nothing forwarded yet");
	for (i = 0; i < n && i < nitems(pi); i++) {
		v6 = strchr(pi[i].host, ':') != NULL;
		strv_addf(out, "http://%s%s%s:%d/ -> its port %d (%zu "
		    "connections)", v6 ? "[" : "", pi[i].host, v6 ? "]" : "",
		    pi[i].host_port, pi[i].jail_port, pi[i].conns);
	}
	if (n > nitems(pi))
		strv_addf(out, "and %zu more (agentmux ls)", n - nitems(pi));
}

static void
tui_dialog_port_draw(struct tui *t)
{
	struct tui_client *c = t->c;
	struct strv list, note;
	struct tui_rect r;
	unsigned y, used;
	size_t i;

	strv_init(&list);
	strv_init(&note);
	tui_dialog_port_list(t, &list);
	if (c->port_note != NULL)
		tui_dialog_wrap(c->port_note, 70, 4, &note);
	r = tui_dialog_box(t, 70, 5 + (unsigned)(list.n + note.n));
	tui_screen_printf(c->scr, r.x + 2, r.y + 1, r.sx - 4, TUI_STYLE_BAR,
	    "Forward a port of session %lld's jail (Enter; Esc cancels)",
	    (long long)c->port_id);
	tui_screen_print(c->scr, r.x + 2, r.y + 2, r.sx - 4, TUI_STYLE_DIM,
	    "Its pages run in your browser with this host's network.");
	for (i = 0, y = r.y + 3; i < list.n; i++, y++)
		tui_screen_print(c->scr, r.x + 2, y, r.sx - 4, TUI_STYLE_BAR,
		    list.v[i]);
	for (i = 0, y++; i < note.n; i++, y++)
		tui_screen_print(c->scr, r.x + 2, y, r.sx - 4,
		    TUI_STYLE_ALERT, note.v[i]);
	y = r.y + r.sy - 2;
	used = tui_screen_printf(c->scr, r.x + 2, y, r.sx - 4,
	    TUI_STYLE_SELECTED, "port (JAIL [HOST], or -d JAIL): %s",
	    c->port_line.text.len > 0 ? c->port_line.text.data : "");
	c->dialog_cx = r.x + 2 + (used < r.sx - 5 ? used : r.sx - 5);
	c->dialog_cy = y;
	strv_free(&list);
	strv_free(&note);
}

void
tui_dialog_draw(struct tui *t)
{
	switch (t->c->dialog) {
	case TUI_DIALOG_NONE:
		return;
	case TUI_DIALOG_CONFIRM:
		tui_dialog_confirm_draw(t);
		break;
	case TUI_DIALOG_NEW:
		tui_dialog_new_draw(t);
		break;
	case TUI_DIALOG_PORT:
		tui_dialog_port_draw(t);
		break;
	case TUI_DIALOG_SHARE:
		tui_dialog_share_draw(t);
		break;
	}
}
