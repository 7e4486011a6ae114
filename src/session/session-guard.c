/*
 * Guards the project's git dir while a jailed command runs: the jail keeps
 * .git/hooks and .git/config read-only, but .git itself must stay writable
 * for git to work inside, and a .git/commondir planted there would send
 * every git run on the host (the user's, agentmux's snapshots) to config
 * and hooks of the agent's making. One that appears is moved out at once.
 */
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "session-int.h"
#include "store/store.h"

/*
 * Files in a git dir that git reads as config or as a pointer to it: a
 * commondir redirects everything, a config.worktree is read as config when
 * the (read-only) config enables worktreeConfig. Existing ones are bound
 * read-only by the jail; new ones are moved out.
 */
static const char *const session_guard_names[] = { "commondir",
    "config.worktree" };

static char *
session_guard_path(struct session *s, const char *name)
{
	return xprintf("%s/.git/%s", s->project, name);
}

/* Moves a planted NAME into the session's dir, tells the user, flags the session. */
static void
session_guard_quarantine(struct session *s, const char *name)
{
	char *path = session_guard_path(s, name), *dir, *to, *msg;
	struct stat st;

	if (lstat(path, &st) == -1) {
		free(path);
		return;
	}
	dir = xprintf("%s/sessions/%lld/quarantine", s->ctx->data_dir,
	    (long long)s->id);
	to = xprintf("%s/%s", dir, name);
	if (path_mkdir_p(dir, 0700) == -1 || rename(path, to) == -1) {
		/* Not movable (another filesystem): then it must go. */
		unlink(path);
		msg = xprintf("the jailed command planted %s (it would send "
		    "git to config and hooks of its own); it was removed",
		    path);
	} else
		msg = xprintf("the jailed command planted %s (it would send "
		    "git to config and hooks of its own); moved to %s", path,
		    to);
	store_session_flag(s->ctx->st, s->id, "tampering");
	store_event_add(s->ctx->st, s->id, "error", "tampering", "%s", msg);
	if (s->ev.notice != NULL)
		s->ev.notice(s->arg, s, "alert", msg);
	free(msg);
	free(to);
	free(dir);
	free(path);
}

/* An error event of KIND, the session flagged KIND, and the user told. */
static void
session_guard_alert(struct session *s, const char *kind, const char *msg)
{
	store_event_add(s->ctx->st, s->id, "error", kind, "%s", msg);
	store_session_flag(s->ctx->st, s->id, kind);
	if (s->ev.notice != NULL)
		s->ev.notice(s->arg, s, "alert", msg);
}

/*
 * Where a main-tree session's jail sees the project's .git: at its top,
 * with no writable dir above it, so that Landlock refuses links, sockets
 * and FIFOs in all of it (jail_conf sealed), as in a worktree session's
 * shared git dir. At PROJECT/.git, under the project's rule, which grants
 * links, the jail linked FETCH_HEAD to a file of the user's, and the
 * user's own git fetch, run there meanwhile, wrote through it.
 */
#define SESSION_GIT_AT "/.agentmux-git"

/*
 * A main-tree session's jail sees the project's .git (a dir) at
 * SESSION_GIT_AT, sealed, and at PROJECT/.git a dir of agentmux's whose
 * links lead there (snap_jailgit_make), its HEAD a copy brought back as
 * the jail moves it (session_guard_head). The history overlays move with
 * it. Nothing to do for a project without a .git dir.
 */
int
session_guard_jail(struct session *s, struct session_setup *sp,
    char **cause)
{
	char *git = xprintf("%s/.git", s->project), *path, *why = NULL;
	struct stat st;

	if (s->wt != NULL || lstat(git, &st) == -1 || !S_ISDIR(st.st_mode)) {
		free(git);
		return 0;
	}
	snap_jailgit_free(s->jailgit);
	path = xprintf("%s/gitdir", sp->dir);
	(void)path_mkdir_p(sp->dir, 0700);
	s->jailgit = snap_jailgit_make(git, path, SESSION_GIT_AT, &why);
	free(path);
	if (s->jailgit == NULL) {
		*cause = xprintf("cannot give the jail the project's git dir: "
		    "%s; repair it (git status there says how), or move .git "
		    "out of the project to jail it without git", why);
		free(why);
		free(git);
		return -1;
	}
	strv_add(&sp->at_path, git);
	strv_add(&sp->at_src, snap_jailgit_dir(s->jailgit));
	strv_add(&sp->at_rw, "rw");
	/* A submodule's stays at .git/modules, where the jail sees it. */
	session_setup_move_overlays(sp, git, SESSION_GIT_AT, "modules");
	free(sp->sealed);
	sp->sealed = xstrdup(SESSION_GIT_AT);
	sp->gitdir_at = SESSION_GIT_AT;
	free(git);
	return 0;
}

/* ALERTS (freed here) told as the session's, of kind "git". */
static void
session_guard_git_told(struct session *s, struct strv *alerts)
{
	size_t i;

	for (i = 0; i < alerts->n; i++)
		session_guard_alert(s, "git", alerts->v[i]);
	strv_free(alerts);
}

/*
 * The helper thread's bringing back of the jail's HEAD and index (a read
 * and a write of up to 64 MiB each) waited for, if it runs; what it found
 * told.
 */
static void
session_guard_sync_wait(struct session *s)
{
	if (s->guard_sync_job == NULL)
		return;
	thread_job_free(s->guard_sync_job);
	s->guard_sync_job = NULL;
	session_guard_git_told(s, &s->guard_sync_alerts);
}

/* A lock held (the user's git's or the jail's): the sync tried again a moment later. */
static void
session_guard_sync_retry(struct session *s)
{
	static const struct timeval retry = { 0, 250 * 1000 };

	if (s->jailgit != NULL && !s->guard_end_done &&
	    s->guard_sync_ev != NULL && snap_jailgit_waiting(s->jailgit) &&
	    !evtimer_pending(s->guard_sync_ev, NULL))
		evtimer_add(s->guard_sync_ev, &retry);
}

/* The jail's HEAD and index, if its git wrote them, brought back to the project's .git; what stops that told. */
static void
session_guard_head(struct session *s)
{
	struct strv alerts;

	if (s->jailgit == NULL || s->guard_end_done)
		return;
	session_guard_sync_wait(s);
	strv_init(&alerts);
	snap_jailgit_sync(s->jailgit, &alerts);
	session_guard_git_told(s, &alerts);
	session_guard_sync_retry(s);
}

/* On the helper thread: only the jail's git dir's copies are touched (the loop leaves them alone meanwhile). */
static void
session_guard_sync_work(void *arg)
{
	struct session *s = arg;

	/* After one that took long, below the user's own work: a jail can have it merge 60 MB again and again. */
	if (s->guard_sync_after != 0)
		(void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10);
	clone_gate_enter();
	snap_jailgit_sync(s->jailgit, &s->guard_sync_alerts);
	clone_gate_leave();
}

static void session_guard_sync_cb(evutil_socket_t, short, void *);

static void session_guard_jail_end_start(struct session *);

/* The helper thread is done: told; once more if the jail's git wrote again meanwhile. */
static void
session_guard_sync_done(void *arg)
{
	struct session *s = arg;
	int64_t took;

	s->guard_sync_job = NULL;
	if (s->guard_end_wanted) {
		/* The jail is gone: its end follows, and no sync after it. */
		session_guard_git_told(s, &s->guard_sync_alerts);
		s->guard_end_wanted = false;
		session_guard_jail_end_start(s);
		return;
	}
	/* What a jail makes the host's helper spend is at most a third of it (packed-refs renamed aside), 10 s at most apart. */
	took = util_mono_us() / 1000 - s->guard_sync_began;
	s->guard_sync_after = took > 50 ? util_mono_us() / 1000 +
	    2 * (took < 5000 ? took : 5000) : 0;
	session_guard_git_told(s, &s->guard_sync_alerts);
	if (s->guard_sync_again) {
		s->guard_sync_again = false;
		session_guard_sync_cb(-1, 0, s);
	} else
		session_guard_sync_retry(s);
}

/*
 * On the helper thread: the jail's git dir's last sync (the user's git
 * may hold index.lock or packed-refs.lock: waited for 2 s), the loop
 * leaving the jail's git dir alone meanwhile.
 */
static void
session_guard_jail_end_work(void *arg)
{
	struct session *s = arg;

	clone_gate_enter();
	snap_jailgit_end(s->jailgit, &s->guard_end_alerts, true);
	clone_gate_leave();
}

/* It is over (its job freed): told, the dir removed. */
static void
session_guard_jail_end_over(struct session *s)
{
	s->guard_end_job = NULL;
	s->guard_end_done = true;
	session_guard_git_told(s, &s->guard_end_alerts);
	snap_jailgit_remove(s->jailgit);
}

static void
session_guard_jail_ended(void *arg)
{
	struct session *s = arg;
	void (*then)(struct session *) = s->guard_end_then;

	s->guard_end_then = NULL;
	session_guard_jail_end_over(s);
	if (!s->freed && then != NULL)
		then(s);
	session_remove_ref(s);
}

/* The end done on the loop, at once (the user's index.lock not waited for). */
static void
session_guard_jail_end_here(struct session *s)
{
	strv_init(&s->guard_end_alerts);
	snap_jailgit_end(s->jailgit, &s->guard_end_alerts, false);
}

/* The end's job started; on the loop if it cannot be (then told at once). */
static void
session_guard_jail_end_start(struct session *s)
{
	char *cause = NULL;

	strv_init(&s->guard_end_alerts);
	s->guard_end_job = thread_job_start(s->ctx->base,
	    session_guard_jail_end_work, s, session_guard_jail_ended, s,
	    &cause);
	if (s->guard_end_job != NULL)
		return;
	log_warnx("the jail's git dir's end runs on the loop: %s", cause);
	free(cause);
	strv_free(&s->guard_end_alerts);
	session_guard_jail_end_here(s);
	session_guard_jail_ended(s);
}

/*
 * The jail is gone: its git dir's last HEAD and index brought back, what
 * it left under way told, the dir removed, on a helper thread after the
 * sync that may run; THEN(S) follows on the loop (not if S is freed
 * meanwhile: its free waits for it). False if there is nothing to do
 * (THEN is not called).
 */
bool
session_guard_jail_end_begin(struct session *s,
    void (*then)(struct session *))
{
	if (s->jailgit == NULL)
		return false;
	s->guard_end_then = then;
	session_add_ref(s);
	if (s->guard_sync_job != NULL)
		s->guard_end_wanted = true;
	else
		session_guard_jail_end_start(s);
	return true;
}

/* Freed while the jail's git dir's end runs or waits: done here, on the loop, nothing after it. */
void
session_guard_jail_end_wait(struct session *s)
{
	if (s->guard_end_wanted) {
		s->guard_end_wanted = false;
		session_guard_sync_wait(s);
		s->guard_end_then = NULL;
		session_guard_jail_end_here(s);
		session_guard_jail_end_over(s);
		session_remove_ref(s);
		return;
	}
	if (s->guard_end_job == NULL)
		return;
	thread_job_free(s->guard_end_job);
	s->guard_end_then = NULL;
	session_guard_jail_end_over(s);
	session_remove_ref(s);
}

/* What redirects git (not there when the session started) goes. */
static void
session_guard_look(struct session *s)
{
	size_t i;

	if (s->guard_gitdir == NULL)
		return;
	for (i = 0; i < nitems(session_guard_names); i++) {
		if (!(s->guard_had & (1U << i)))
			session_guard_quarantine(s, session_guard_names[i]);
	}
}

/* Anything redirecting git that was not there when the session started goes; the jail's HEAD and index are brought back. */
void
session_guard_check(struct session *s)
{
	session_guard_head(s);
	session_guard_look(s);
}

/*
 * The jail's git wrote its HEAD or index a moment ago: brought back now,
 * once for a burst of writes, on a helper thread (the loop does not wait
 * for the copy); on the loop if none can start.
 */
static void
session_guard_sync_cb(evutil_socket_t fd, short what, void *arg)
{
	struct session *s = arg;
	struct timeval wait;
	char *cause = NULL;
	int64_t now;

	if (s->jailgit == NULL || s->guard_end_job != NULL ||
	    s->guard_end_wanted || s->guard_end_done)
		return;
	if (s->guard_sync_job != NULL) {
		s->guard_sync_again = true;
		return;
	}
	/*
	 * A sync that took long (a jail's packed-refs of 60 MB to merge) is
	 * not run again at once; but for a packed-refs renamed into place
	 * (its git deletes the loose refs it packed right after: the other
	 * side reads them missing or old till it is brought over).
	 */
	now = util_mono_us() / 1000;
	if (now < s->guard_sync_after && !s->guard_sync_packed) {
		wait.tv_sec = (s->guard_sync_after - now) / 1000;
		wait.tv_usec = (s->guard_sync_after - now) % 1000 * 1000;
		if (!evtimer_pending(s->guard_sync_ev, NULL))
			evtimer_add(s->guard_sync_ev, &wait);
		return;
	}
	s->guard_sync_began = now;
	s->guard_sync_packed = false;
	strv_init(&s->guard_sync_alerts);
	s->guard_sync_job = thread_job_start(s->ctx->base,
	    session_guard_sync_work, s, session_guard_sync_done, s, &cause);
	if (s->guard_sync_job == NULL) {
		log_debug("the jail's git dir is synced on the loop: %s", cause);
		free(cause);
		strv_free(&s->guard_sync_alerts);
		session_guard_head(s);
	}
}

/* Whether the events in BUF (N bytes) name a packed-refs written anew (renamed into place): the user's, in S's .git, or the jail's. */
static bool
session_guard_packed_moved(const struct session *s, const char *buf,
    size_t n)
{
	const struct inotify_event *ev;
	size_t at;
	bool moved = false;

	for (at = 0; at + sizeof *ev <= n; at += sizeof *ev + ev->len) {
		ev = (const struct inotify_event *)(const void *)(buf + at);
		if ((ev->wd == s->guard_git_wd || ev->wd == s->guard_priv_wd) &&
		    (ev->mask & IN_MOVED_TO) &&
		    ev->len > 0 && at + sizeof *ev + ev->len <= n &&
		    strcmp(ev->name, "packed-refs") == 0)
			moved = true;
	}
	return moved;
}

static void
session_guard_cb(evutil_socket_t fd, short what, void *arg)
{
	/* A git command writes its index and HEAD a few times over: each brought back once. */
	static const struct timeval later = { 0, 200 * 1000 };
	static const struct timeval now = { 0, 0 };
	struct session *s = arg;
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	bool packed = false;
	ssize_t n;

	/* Drain the events; which file appeared matters only for packed-refs. */
	while ((n = read(fd, buf, sizeof buf)) > 0)
		packed |= session_guard_packed_moved(s, buf, (size_t)n);
	session_guard_look(s);
	if (s->guard_sync_ev == NULL)
		return;
	/*
	 * A git packed refs: the other side's copy given at once (git
	 * deletes the loose refs it packed right after, and the other side's
	 * git would read the old values meanwhile, or none).
	 */
	if (packed) {
		s->guard_sync_packed = true;
		evtimer_add(s->guard_sync_ev, &now);
	}
	else if (!evtimer_pending(s->guard_sync_ev, NULL))
		evtimer_add(s->guard_sync_ev, &later);
}

/* git's own fsmonitor daemon: it only answers which paths changed. */
static bool
session_guard_socket_harmless(struct session *s, const char *path)
{
	char *fsmonitor = xprintf("%s/.git/fsmonitor--daemon.ipc", s->project);
	bool harmless = strcmp(path, fsmonitor) == 0;

	free(fsmonitor);
	return harmless;
}

/*
 * Host programs listening on unix sockets in the project could be talked
 * to from the jail past the proxy (socket files ignore network namespaces,
 * and neither a mount nor Landlock can cover them): such a project is not
 * jailed. Called before the session is recorded.
 */
int
session_guard_sockets(struct session *s, char **cause)
{
	struct strv q;
	size_t i;

	strv_init(&s->guard_socks);
	jail_project_sockets(s->project, &s->guard_socks);
	for (i = 0; i < s->guard_socks.n; i++) {
		if (session_guard_socket_harmless(s, s->guard_socks.v[i]))
			continue;
		strv_init(&q);
		*cause = xprintf("cannot jail %s: a program on the host listens "
		    "on the unix socket %s, which the jailed command could "
		    "connect to past the proxy; stop that program or move its "
		    "socket out of the project", quote_keep(&q, s->project),
		    quote_keep(&q, s->guard_socks.v[i]));
		strv_free(&q);
		return -1;
	}
	return 0;
}

/* A socket that appeared after the start: it cannot be hidden any more, so the user hears of it. */
static void
session_guard_sock_new(struct session *s, const char *path)
{
	char *msg, *q;

	strv_add(&s->guard_socks, path);
	q = quote_name(path);
	msg = xprintf("a program on the host now listens on the unix socket "
	    "%s in the project: the jailed command can connect to it past "
	    "the proxy; stop it, or end this session", q);
	free(q);
	store_event_add(s->ctx->st, s->id, "error", "socket", "%s", msg);
	if (s->ev.notice != NULL)
		s->ev.notice(s->arg, s, "alert", msg);
	free(msg);
}

/*
 * The sessions' tick, with the host's sockets read once for all of them
 * (jail_host_sockets): new ones in this project are told. True while the
 * session wants the tick. (The kernel tells of no new unix socket.)
 */
bool
session_guard_tick(struct session *s, const struct strv *paths,
    const struct strv *dirs)
{
	size_t i;

	if (!s->guard_sock_on)
		return false;
	for (i = 0; i < paths->n; i++) {
		if (!jail_project_holds(s->project, dirs->v[i]) ||
		    strv_contains(&s->guard_socks, paths->v[i]) ||
		    session_guard_socket_harmless(s, paths->v[i]))
			continue;
		session_guard_sock_new(s, paths->v[i]);
	}
	return true;
}

/* A last look at the end, so one that came since the last tick is told too. */
static void
session_guard_sock_last(struct session *s)
{
	struct strv paths, dirs;

	if (!s->guard_sock_on)
		return;
	strv_init(&paths);
	strv_init(&dirs);
	jail_host_sockets(&paths, &dirs);
	session_guard_tick(s, &paths, &dirs);
	strv_free(&dirs);
	strv_free(&paths);
	s->guard_sock_on = false;
}

/* Before the command runs: note what exists and watch the git dir. */
void
session_guard_start(struct session *s)
{
	struct stat st;
	char *path, *to;
	size_t i;
	int fd;

	for (i = 0; i < s->guard_socks.n; i++) {
		to = quote_name(s->guard_socks.v[i]);
		path = xprintf("the host's git fsmonitor daemon listens on %s; "
		    "the jailed command can ask it which files changed", to);
		free(to);
		store_event_add(s->ctx->st, s->id, "warn", "socket", "%s", path);
		free(path);
	}
	s->guard_sock_on = true;
	session_tick_want(s->ctx);
	s->guard_since = s->guard_started = snap_plant_clock();
	s->guard_seq = snap_plant_sequences(s->project, s->wt != NULL ?
	    s->wt->admin : NULL);
	strv_free(&s->guard_execs);
	strv_init(&s->guard_execs);
	snap_plant_seq_execs(s->project, s->wt != NULL ? s->wt->admin : NULL,
	    &s->guard_execs);

	path = xprintf("%s/.git", s->project);
	s->guard_had_git = lstat(path, &st) == 0;
	if (!s->guard_had_git || !S_ISDIR(st.st_mode)) {
		free(path);
		return;
	}
	/* (Its index marks and replace refs were read before the jail was made.) */
	s->guard_gitdir = path;
	for (i = 0; i < nitems(session_guard_names); i++) {
		path = session_guard_path(s, session_guard_names[i]);
		if (lstat(path, &st) == 0)
			s->guard_had |= 1U << i;
		free(path);
	}
	if ((fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) == -1)
		return;
	if ((s->guard_git_wd = inotify_add_watch(fd, s->guard_gitdir,
	    IN_CREATE | IN_MOVED_TO)) == -1) {
		close(fd);
		return;
	}
	/* The jail's HEAD: git renames a new one over it. */
	if (s->jailgit != NULL)
		s->guard_priv_wd = inotify_add_watch(fd,
		    snap_jailgit_dir(s->jailgit), IN_MOVED_TO | IN_CLOSE_WRITE |
		    IN_ONLYDIR | IN_DONT_FOLLOW);
	s->guard_fd = fd;
	if (s->jailgit != NULL)
		s->guard_sync_ev = evtimer_new(s->ctx->base,
		    session_guard_sync_cb, s);
	s->guard_ev = event_new(s->ctx->base, fd, EV_READ | EV_PERSIST,
	    session_guard_cb, s);
	event_add(s->guard_ev, NULL);
}

/* An alert that comes on the loop after the end: a session freed meanwhile has no front end to tell. */
static void
session_guard_alert_late(struct session *s, const char *kind, const char *msg)
{
	if (!s->freed) {
		session_guard_alert(s, kind, msg);
		return;
	}
	store_event_add(s->ctx->st, s->id, "error", kind, "%s", msg);
	store_session_flag(s->ctx->st, s->id, kind);
}

/*
 * Said, not flagged, as an event of KIND ("index": the end's look at the
 * index, "scan": the plant scan's): shown if the session still has a
 * front end.
 */
static void
session_guard_note(struct session *s, const char *kind, const char *msg)
{
	store_event_add(s->ctx->st, s->id, "warn", kind, "%s", msg);
	if (!s->freed && s->ev.notice != NULL)
		s->ev.notice(s->arg, s, "warn", msg);
}

/* End-of-session reads of the index still running. */
static int session_guard_nending;

int
session_guard_endings(void)
{
	return session_guard_nending;
}

/* What the end's look found that hides a change from the user's git: told. */
static void
session_guard_blind_tell(struct session *s)
{
	struct strv found, notes;
	char *index;
	size_t i;

	strv_init(&found);
	strv_init(&notes);
	if (s->project != NULL && !s->guard_blind_now.nested_read)
		snap_blind_nested(s->project, &s->guard_nested,
		    &s->guard_blind_now);
	snap_blind_compare(&s->guard_blind, &s->guard_blind_now, s->wt,
	    &found);
	/* A session freed meanwhile has no project path left to rewrite in. */
	if (s->guard_blind_now.had_git && s->project != NULL) {
		snap_blind_untr(s->project, s->wt, &s->guard_blind,
		    &s->guard_blind_now, &found, &notes);
		index = snap_blind_index(s->project, s->wt);
		snap_blind_tree(index, &s->guard_blind, &s->guard_blind_now,
		    &found, &notes);
		free(index);
	}
	for (i = 0; i < found.n; i++)
		session_guard_alert_late(s, "protected", found.v[i]);
	for (i = 0; i < notes.n; i++)
		session_guard_note(s, "index", notes.v[i]);
	strv_free(&found);
	strv_free(&notes);
	snap_blind_free(&s->guard_blind);
	snap_blind_free(&s->guard_blind_now);
	/* A session freed meanwhile left them to this read (session_free). */
	if (!s->freed) {
		snap_blind_init(&s->guard_blind);
		snap_blind_init(&s->guard_blind_now);
	}
}

/* The end's git ls-files is over: told, and done may come. */
static void
session_guard_blind_read(void *arg)
{
	struct session *s = arg;

	snap_blind_read_free(s->guard_blind_read);
	s->guard_blind_read = NULL;
	session_guard_blind_tell(s);
	s->guard_blind_ending = false;
	session_guard_nending--;
	if (!s->freed)
		session_snap_done(s);
	session_remove_ref(s);
}

/*
 * Index marks and replace refs that hide a change from the user's git:
 * the index is read by git on the loop; the session's done waits for it.
 */
static void
session_guard_blind(struct session *s)
{
	if (!s->guard_blind.had_git || s->guard_blind_ending)
		return;
	s->guard_blind_read = snap_blind_read_end(s->ctx->base, s->project,
	    s->wt, &s->guard_nested, &s->guard_blind, &s->guard_blind_now, session_guard_blind_read, s);
	if (s->guard_blind_read == NULL) {
		session_guard_blind_tell(s);
		return;
	}
	s->guard_blind_ending = true;
	session_guard_nending++;
	session_add_ref(s);
}

/* The end's look for rewritten index entries is over: told, and done may come. */
static void
session_guard_stale_done(void *arg, struct strv *alerts)
{
	struct session *s = arg;
	size_t i;

	/* Its caller touches it no more once this is called. */
	snap_stale_free(s->guard_stale);
	s->guard_stale = NULL;
	for (i = 0; i < alerts->n; i++)
		session_guard_alert_late(s, "protected", alerts->v[i]);
	session_guard_nending--;
	s->snap_end_pending = false;
	if (!s->freed)
		session_snap_done(s);
	session_remove_ref(s);
}

/*
 * Once the end snapshot recorded TREE: index entries the session rewrote
 * to hide a change (snap_stale_start): read by git on the loop, the
 * entries looked at on a helper thread. True if the end waits for it
 * (done comes after its alerts).
 */
bool
session_guard_stale(struct session *s, const char *tree)
{
	const char *gitdir;

	if (s->freed || s->guard_started == 0 || s->snap == NULL ||
	    (gitdir = snap_session_gitdir(s->snap)) == NULL)
		return false;
	s->guard_stale = snap_stale_start(s->ctx->base, s->project,
	    s->wt != NULL ? s->wt->admin : NULL, s->guard_started, gitdir, tree, &s->guard_nested,
	    session_guard_stale_done, s);
	if (s->guard_stale == NULL)
		return false;
	session_guard_nending++;
	session_add_ref(s);
	return true;
}

/*
 * The end's walks of the project (the plant scan, the run dirs' look):
 * made on a helper thread, with what they need copied out of the session,
 * so the loop goes on meanwhile (a 10,000-file project is 10,000 lstat
 * calls, most of a second under load).
 */
struct session_guard_scan {
	struct snap_plant_opts o;
	struct snap_plant_result res;
	int rc;
	char *cause;
	struct strv watch;
	char *dir;
	char *project;
	char *hooks;
	char *gitdir;             /* a worktree's admin dir, or NULL */
	struct strv existed;
	struct strv execs;
	struct strv gitfiles;
	struct snap_gitdirid *gitids;
	struct snap_dirmap *dirs; /* the project's dirs at the start (a reference) */
	struct strv run_dirs;     /* [jail] watch_ignored */
	bool run_look;            /* the run dirs were fingerprinted at the start */
	struct snap_run run_now;
};

static void
session_guard_scan_copy(struct strv *to, const struct strv *from)
{
	size_t i;

	strv_init(to);
	for (i = 0; i < from->n; i++)
		strv_add(to, from->v[i]);
}

/* What the end's walks need, copied out of S (NULL: there is nothing to walk). */
static struct session_guard_scan *
session_guard_scan_new(struct session *s)
{
	struct session_guard_scan *sc;
	const char *const *d;
	size_t i;

	if (s->guard_since == 0)
		return NULL;
	sc = xcalloc(1, sizeof *sc);
	/* The built-in ones are watched even where protect = none lets them change. */
	strv_init(&sc->watch);
	for (d = config_protect_defaults(); *d != NULL; d++)
		strv_add(&sc->watch, *d);
	for (i = 0; i < s->protect.n; i++) {
		if (!strv_contains(&sc->watch, s->protect.v[i]))
			strv_add(&sc->watch, s->protect.v[i]);
	}
	sc->dir = xprintf("%s/sessions/%lld/quarantine", s->ctx->data_dir,
	    (long long)s->id);
	sc->project = xstrdup(s->project);
	sc->hooks = s->hooks != NULL ? xstrdup(s->hooks) : NULL;
	sc->gitdir = s->wt != NULL ? xstrdup(s->wt->admin) : NULL;
	session_guard_scan_copy(&sc->existed, &s->watched);
	session_guard_scan_copy(&sc->execs, &s->guard_execs);
	session_guard_scan_copy(&sc->gitfiles, &s->gitfiles);
	session_guard_scan_copy(&sc->run_dirs, &s->cf->jail.watch_ignored);
	sc->run_look = s->run_start.taken;
	snap_run_init(&sc->run_now);
	sc->o.project = sc->project;
	sc->o.since = s->guard_since;
	sc->o.quarantine = sc->dir;
	sc->o.had_git = s->guard_had_git;
	sc->o.watch = sc->watch.v;
	sc->o.nwatch = sc->watch.n;
	sc->o.existed = sc->existed.v;
	sc->o.nexisted = sc->existed.n;
	sc->o.sequences = s->guard_seq;
	sc->o.execs = sc->execs.v;
	sc->o.nexecs = sc->execs.n;
	sc->o.hooks = sc->hooks;
	sc->o.gitdir = sc->gitdir;
	sc->o.gitfiles = sc->gitfiles.v;
	sc->o.ngitfiles = sc->gitfiles.n;
	if (s->guard_ngitids > 0) {
		sc->gitids = xreallocarray(NULL, s->guard_ngitids,
		    sizeof *sc->gitids);
		memcpy(sc->gitids, s->guard_gitids, s->guard_ngitids *
		    sizeof *sc->gitids);
	}
	sc->o.gitids = sc->gitids;
	sc->o.ngitids = s->guard_ngitids;
	sc->o.gitids_known = s->guard_gitids_known;
	sc->o.gitids_index = s->history != NULL;
	sc->o.max_entries = s->cf->jail.scan_limit;
	/* Read only on the helper thread; its references taken and let go on the loop. */
	sc->dirs = snap_dirmap_ref(s->start_dirs);
	sc->o.dirs = sc->dirs;
	snap_plant_result_init(&sc->res);
	return sc;
}

static void
session_guard_scan_free(struct session_guard_scan *sc)
{
	if (sc == NULL)
		return;
	snap_plant_result_free(&sc->res);
	free(sc->cause);
	strv_free(&sc->watch);
	free(sc->dir);
	free(sc->project);
	free(sc->hooks);
	free(sc->gitdir);
	strv_free(&sc->existed);
	strv_free(&sc->execs);
	strv_free(&sc->gitfiles);
	free(sc->gitids);
	snap_dirmap_unref(sc->dirs);
	strv_free(&sc->run_dirs);
	snap_run_free(&sc->run_now);
	free(sc);
}

/* The walks themselves: on a helper thread (gated) or on the loop. */
static void
session_guard_scan_run(void *arg)
{
	struct session_guard_scan *sc = arg;

	sc->rc = snap_plant_scan(&sc->o, &sc->res, &sc->cause);
	if (!sc->run_look)
		return;
	snap_run_look(sc->project, sc->run_dirs.v, sc->run_dirs.n,
	    sc->o.max_entries, sc->o.gated, NULL, &sc->run_now);
}

/* The ignored programs the user runs, made, changed or removed: each an alert. */
static void
session_guard_run(struct session *s, struct session_guard_scan *sc)
{
	struct strv out, notes;
	size_t i;

	if (!s->run_start.taken || !sc->run_look)
		return;
	strv_init(&out);
	strv_init(&notes);
	snap_run_compare(&s->run_start, &sc->run_now, &out, &notes);
	for (i = 0; i < out.n; i++)
		session_guard_alert(s, "protected", out.v[i]);
	for (i = 0; i < notes.n; i++)
		session_guard_note(s, "scan", notes.v[i]);
	strv_free(&notes);
	strv_free(&out);
	snap_run_free(&s->run_start);
}

/*
 * What the command left for the host to run later (see snap_plant_scan),
 * as the walks found it: planted git dirs were defused, set-uid bits taken
 * off, changes to files the user's tools run are reported. Each finding
 * is an alert. Then the look at the index's marks starts.
 */
static void
session_guard_plant_tell(struct session *s, struct session_guard_scan *sc)
{
	size_t i;

	if (sc->rc == -1)
		log_warnx("%s", sc->cause);
	for (i = 0; i < sc->res.alerts.n; i++)
		session_guard_alert(s, "tampering", sc->res.alerts.v[i]);
	for (i = 0; i < sc->res.watched.n; i++)
		session_guard_alert(s, "protected", sc->res.watched.v[i]);
	/* Said, not flagged: a big tree is no tampering. */
	for (i = 0; i < sc->res.notes.n; i++)
		session_guard_note(s, "scan", sc->res.notes.v[i]);
	session_guard_run(s, sc);
	/* After the scan: links and FIFOs planted in .git are out of the way. */
	session_guard_blind(s);
	s->guard_since = 0;
}

/* The end's walks, on the loop (a session freed, or no helper thread). */
static void
session_guard_plant(struct session *s)
{
	struct session_guard_scan *sc = session_guard_scan_new(s);

	if (sc == NULL)
		return;
	session_guard_scan_run(sc);
	session_guard_plant_tell(s, sc);
	session_guard_scan_free(sc);
}

/* The watch goes: the last look for host sockets, then its event and fd. */
static void
session_guard_unwatch(struct session *s)
{
	session_guard_sock_last(s);
	strv_free(&s->guard_socks);
	if (s->guard_ev != NULL)
		event_free(s->guard_ev);
	s->guard_ev = NULL;
	if (s->guard_sync_ev != NULL)
		event_free(s->guard_sync_ev);
	s->guard_sync_ev = NULL;
	session_guard_sync_wait(s);
	if (s->guard_fd != -1)
		close(s->guard_fd);
	s->guard_fd = -1;
	free(s->guard_gitdir);
	s->guard_gitdir = NULL;
}

/* The end's walks on the helper thread are over (its job freed): told, and the watch goes. */
static void
session_guard_scan_over(struct session *s)
{
	struct session_guard_scan *sc = s->guard_scan;

	s->guard_scan_job = NULL;
	s->guard_scan = NULL;
	s->guard_scan_then = NULL;
	session_guard_nending--;
	session_guard_plant_tell(s, sc);
	session_guard_scan_free(sc);
	session_guard_unwatch(s);
}

/* The end's walks are over, on the helper thread: told, then the end goes on. */
static void
session_guard_scanned(void *arg)
{
	struct session *s = arg;
	void (*then)(struct session *) = s->guard_scan_then;

	session_guard_scan_over(s);
	if (!s->freed && then != NULL)
		then(s);
	session_remove_ref(s);
}

/*
 * The command has ended: a last check, then the end's walks of the
 * project on a helper thread, and the watch goes once they are over;
 * THEN(S) follows on the loop (not if S is freed meanwhile: its free
 * waits for them). False if nothing runs (THEN is not called): the caller
 * goes on with session_guard_stop.
 */
bool
session_guard_stop_begin(struct session *s, void (*then)(struct session *))
{
	struct session_guard_scan *sc;
	char *cause = NULL;

	session_guard_check(s);
	if ((sc = session_guard_scan_new(s)) == NULL)
		return false;
	sc->o.gated = true;
	s->guard_scan_job = thread_job_start(s->ctx->base,
	    session_guard_scan_run, sc, session_guard_scanned, s, &cause);
	if (s->guard_scan_job == NULL) {
		log_warnx("the end's look at the project runs on the loop: %s",
		    cause);
		free(cause);
		session_guard_scan_free(sc);
		return false;
	}
	s->guard_scan = sc;
	s->guard_scan_then = then;
	session_guard_nending++;
	session_add_ref(s);
	return true;
}

/* The command has ended: a last check, then the watch goes (the end's walks on the loop, or waited for). */
void
session_guard_stop(struct session *s)
{
	if (s->guard_scan != NULL) {
		/* Freed while they run: waited for here, told, and the watch goes. */
		thread_job_free(s->guard_scan_job);
		session_guard_scan_over(s);
		session_remove_ref(s);
		return;
	}
	session_guard_check(s);
	session_guard_plant(s);
	session_guard_unwatch(s);
}
