/*
 * A profile's hints that its agent waits for you: once output settles, its
 * visible screen matches needs_you_screen, or it wrote its needs_you_file.
 */
#include <sys/inotify.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "pane/pane.h"
#include "session-int.h"

/*
 * How long output must pause before the screen is read: long enough for a
 * redraw to finish, well under idle_after, so a known question shows at once.
 */
#define SESSION_HINT_SETTLE_MS 250
/* A matching screen whose program is not reading yet: looked at again this often, so many times. */
#define SESSION_HINT_AGAIN_MS 500
#define SESSION_HINT_TRIES 20

static void session_hint_timer(struct session *, int64_t ms);

/* The session's compiled screen pattern, or NULL (no profile, no hint, no pane). */
static const regex_t *
session_hint_re(struct session *s)
{
	const struct config_agent *a;

	if (s->pane == NULL || s->agent == NULL ||
	    (a = config_agent(s->cf, s->agent)) == NULL)
		return NULL;
	return a->needs_you_re;
}

/*
 * Whether the visible screen matches RE. The text is the agent's output:
 * it is only matched, never printed, run or kept.
 */
static bool
session_hint_screen(struct session *s, const regex_t *re)
{
	struct pane_grid *gd = pane_grid(s->pane);
	struct buf b;
	unsigned y;
	bool match;

	buf_init(&b);
	for (y = 0; y < pane_grid_sy(gd); y++) {
		pane_grid_row_text(gd, (int)y, &b);
		buf_addc(&b, '\n');
	}
	buf_addc(&b, '\0');
	match = regexec(re, b.data, 0, NULL, 0) == 0;
	buf_free(&b);
	return match;
}

static void
session_hint_cb(evutil_socket_t fd, short what, void *arg)
{
	struct session *s = arg;
	const regex_t *re = session_hint_re(s);

	(void)fd;
	(void)what;
	if (s->ended || s->starting || s->st_paused || s->st_idle)
		return;
	if (!s->st_hint_file && (re == NULL || !session_hint_screen(s, re)))
		return;
	/*
	 * A hint only adds to the evidence: no turn in flight, and it
	 * reads. A program busy a moment longer after drawing its question
	 * (Claude Code is) is looked at again while the question stays.
	 */
	if (s->st_model_inflight > 0 || !session_state_reading(s)) {
		log_debug("session %lld: its screen asks, but %s",
		    (long long)s->id, s->st_model_inflight > 0 ?
		    "a model request is in flight" : "it is not reading");
		if (s->st_hint_tries++ < SESSION_HINT_TRIES)
			session_hint_timer(s, SESSION_HINT_AGAIN_MS);
		return;
	}
	s->st_idle = true;
	session_state_update(s);
}

static void
session_hint_timer(struct session *s, int64_t ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	if (s->st_hint_ev == NULL)
		s->st_hint_ev = evtimer_new(s->ctx->base, session_hint_cb, s);
	evtimer_add(s->st_hint_ev, &tv);
}

/* Output or input: the screen is looked at once it has been still a moment. */
void
session_hint_arm(struct session *s)
{
	int64_t ms = s->cf->ui.idle_after;

	/* The file, once written, counts until the user types. */
	if (session_hint_re(s) == NULL && !s->st_hint_file)
		return;
	if (ms > SESSION_HINT_SETTLE_MS)
		ms = SESSION_HINT_SETTLE_MS;
	s->st_hint_tries = 0;
	session_hint_timer(s, ms);
}

/* What the user types answers what the agent asked: its file no longer counts. */
void
session_hint_input(struct session *s)
{
	s->st_hint_file = false;
}

/* ---- needs_you_file ---- */

/* The file's path from the project or from the jail's HOME (*HOME), or NULL. */
static const char *
session_hint_file_rel(struct session *s, bool *home)
{
	const struct config_agent *a;
	const char *path;

	if (s->agent == NULL || (a = config_agent(s->cf, s->agent)) == NULL ||
	    (path = a->needs_you_file) == NULL)
		return NULL;
	*home = strncmp(path, "~/", 2) == 0;
	return *home ? path + 2 : path;
}

/* Where the walk to the file starts: the jail's HOME (its tmpfs) or the project. */
static int
session_hint_file_root(struct session *s, bool home)
{
	if (home)
		return s->home_fd == -1 ? -1 :
		    fcntl(s->home_fd, F_DUPFD_CLOEXEC, 0);
	return open(s->project, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/*
 * The deepest dir on the way to the file that exists now, opened one
 * component at a time and never through a symlink (the jailed command
 * makes them); *PARENT if it is the file's own dir, with *BASE its name.
 */
static int
session_hint_file_dir(struct session *s, bool *parent, const char **base,
    int *depth)
{
	const char *rel, *p, *e;
	char *comp;
	bool home;
	int fd, next;

	*parent = false;
	*depth = 0;
	if ((rel = session_hint_file_rel(s, &home)) == NULL ||
	    (fd = session_hint_file_root(s, home)) == -1)
		return -1;
	for (p = rel; (e = strchr(p, '/')) != NULL; p = e + 1) {
		comp = xstrndup(p, (size_t)(e - p));
		next = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
		free(comp);
		if (next == -1)
			return fd;
		close(fd);
		fd = next;
		(*depth)++;
	}
	*parent = true;
	*base = p;
	return fd;
}

/*
 * Watches the deepest dir there is on the way to the file, by the
 * descriptor just opened (its /proc/self/fd link is ours, not the jail's):
 * in the file's own dir, its being written; on the way, a dir appearing.
 * Returns whether the file's own dir is watched, with *EXISTS whether the
 * file is in it now.
 */
static bool
session_hint_file_watch(struct session *s, bool *exists)
{
	struct stat st;
	uint32_t mask = IN_ONLYDIR | IN_CREATE | IN_MOVED_TO |
	    IN_DELETE_SELF | IN_MOVE_SELF;
	const char *base;
	char link[64];
	bool parent;
	int fd, wd, depth, now, tries = 0;

again:
	if (s->st_hf_wd != -1)
		inotify_rm_watch(s->st_hf_fd, s->st_hf_wd);
	s->st_hf_wd = -1;
	s->st_hf_parent = false;
	if ((fd = session_hint_file_dir(s, &parent, &base, &depth)) == -1)
		return false;
	if (parent)
		mask |= IN_CLOSE_WRITE | IN_ATTRIB;
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	wd = inotify_add_watch(s->st_hf_fd, link, mask);
	/*
	 * Looked for once watched: a file made and closed between a look
	 * and the watch would tell no one (mkdir then ": >file" in the jail
	 * did that under load).
	 */
	*exists = wd != -1 && parent &&
	    fstatat(fd, base, &st, AT_SYMLINK_NOFOLLOW) == 0;
	close(fd);
	if (wd == -1) {
		log_debug("session %lld: cannot watch for its needs_you_file: "
		    "%s", (long long)s->id, strerror(errno));
		return false;
	}
	s->st_hf_wd = wd;
	s->st_hf_parent = parent;
	/*
	 * A dir made on the way between the look and the watch told no one:
	 * looked for again once watched, and watched deeper if it is there.
	 */
	if (!parent && tries++ < 64 && (fd = session_hint_file_dir(s, &parent,
	    &base, &now)) != -1) {
		close(fd);
		if (now > depth)
			goto again;
	}
	return s->st_hf_parent;
}

/* The agent wrote the file: once it reads its terminal, it needs you. */
static void
session_hint_file_seen(struct session *s)
{
	log_debug("session %lld: its needs_you_file was written",
	    (long long)s->id);
	s->st_hint_file = true;
	/* Its word that it waits: past starting, drawn or not. */
	s->st_drawn = true;
	s->st_hint_tries = 0;
	session_hint_timer(s, 0);
}

/* Whether event EV says the file was written (*SEEN) or the dirs changed (*AGAIN). */
static void
session_hint_file_event(struct session *s, const struct inotify_event *ev,
    bool *seen, bool *again)
{
	const char *base, *rel;
	bool home;

	if (ev->wd != s->st_hf_wd)
		return;
	if (ev->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF |
	    IN_Q_OVERFLOW)) {
		*again = true;
		return;
	}
	if (!s->st_hf_parent) {
		*again = true;
		return;
	}
	rel = session_hint_file_rel(s, &home);
	base = rel != NULL ? strrchr(rel, '/') : NULL;
	base = base != NULL ? base + 1 : rel;
	if (base != NULL && ev->len > 0 && strcmp(ev->name, base) == 0)
		*seen = true;
}

static void
session_hint_file_cb(evutil_socket_t fd, short what, void *arg)
{
	struct session *s = arg;
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	const struct inotify_event *ev;
	bool seen = false, again = false, was, exists;
	ssize_t n, off;
	int turns;

	(void)what;
	/* A few buffers a turn: a jail writing in a loop cannot hold the loop. */
	for (turns = 0; turns < 8 && (n = read(fd, buf, sizeof buf)) > 0;
	    turns++) {
		for (off = 0; off < n; off += (ssize_t)sizeof *ev + ev->len) {
			ev = (const struct inotify_event *)(buf + off);
			session_hint_file_event(s, ev, &seen, &again);
		}
	}
	if (again) {
		was = s->st_hf_parent;
		/* A dir on the way appeared: the file may have come with it. */
		if (session_hint_file_watch(s, &exists) && !was && exists)
			seen = true;
	}
	if (seen)
		session_hint_file_seen(s);
}

/* Once the command runs: its profile's needs_you_file, if any, is watched. */
void
session_hint_file_start(struct session *s)
{
	bool home, exists;

	s->st_hf_wd = -1;
	if (session_hint_file_rel(s, &home) == NULL)
		return;
	if ((s->st_hf_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) == -1) {
		log_warn("session %lld: cannot watch for its needs_you_file",
		    (long long)s->id);
		return;
	}
	s->st_hf_ev = event_new(s->ctx->base, s->st_hf_fd,
	    EV_READ | EV_PERSIST, session_hint_file_cb, s);
	if (s->st_hf_ev == NULL)
		fatalx("cannot create the needs_you_file watch");
	event_add(s->st_hf_ev, NULL);
	/* One left from an earlier run does not count: only a write from now. */
	session_hint_file_watch(s, &exists);
}

/* The command ended: the watch goes. */
void
session_hint_file_stop(struct session *s)
{
	if (s->st_hf_ev != NULL)
		event_free(s->st_hf_ev);
	s->st_hf_ev = NULL;
	if (s->st_hf_fd != -1)
		close(s->st_hf_fd);
	s->st_hf_fd = -1;
	s->st_hf_wd = -1;
}

void
session_hint_free(struct session *s)
{
	if (s->st_hint_ev != NULL)
		event_free(s->st_hint_ev);
	s->st_hint_ev = NULL;
	session_hint_file_stop(s);
}
