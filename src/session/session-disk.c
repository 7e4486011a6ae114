/*
 * A session's disk: a budget of bytes its processes may write ([limits]
 * disk_write) and free space kept on the project's and the data dir's
 * filesystems ([limits] disk_reserve). Reaching either freezes the jail
 * and asks the front end (continue, or stop); when nobody can be asked,
 * the session is stopped, saying why.
 *
 * Idle sessions must cost nothing: a tick reads the host's own count of
 * bytes sent toward storage (/proc/vmstat, shared by every session) and
 * the free space of each filesystem (fstatvfs), no more often than it
 * takes a fast disk to write half of what is left before a limit, and at
 * least every 5 s. Only when the host as a whole has written as much as a
 * session's budget has left, or every 30 s, is the jail's init asked to
 * count what the session's processes wrote.
 */
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "session-int.h"
#include "store/store.h"

/* The slowest tick, far from the limits (a wakeup costs ~0.2 ms of CPU on a VM). */
#define SESSION_DISK_TICK_MS 5000
/* The fastest, when the margin left would be gone in a few ticks. */
#define SESSION_DISK_MIN_MS 100
/* Files a fast loop may make in a second (empty ones take inodes, not bytes). */
#define SESSION_DISK_FAST_FILES 100000.0
/* What a fast disk (or the page cache in front of it) may take in a second. */
#define SESSION_DISK_FAST_RATE (2.0 * 1024 * 1024 * 1024)
/* While the jail's answer (a count, a freeze) is awaited. */
#define SESSION_DISK_POLL_MS 10
/* How early a look riding on the sessions' tick may be taken. */
#define SESSION_DISK_EARLY_US 20000
/* A count at least this often, whatever the host's figures say. */
#define SESSION_DISK_RECOUNT_MS 30000
/* How long freezing may take before the session is stopped instead. */
#define SESSION_DISK_FREEZE_MS 10000

enum session_disk_state {
	SESSION_DISK_WATCH,
	SESSION_DISK_FREEZING,
	SESSION_DISK_ASKING,          /* frozen, until session_disk_answer */
	SESSION_DISK_DONE,            /* stopped: the jail is being killed */
};

enum session_disk_reason {
	SESSION_DISK_BUDGET,
	SESSION_DISK_RESERVE,
	SESSION_DISK_UNCOUNTED,       /* processes whose writes cannot be counted */
	SESSION_DISK_INODES,          /* free inodes under their reserve: stopped */
};

/* One filesystem whose free space is kept. */
struct session_disk_fs {
	int fd;                       /* a directory on it (O_PATH) */
	const char *what;             /* "project" or "data dir" */
	char *path;
	int64_t reserve;              /* bytes to keep free here */
	int64_t free;                 /* at the last look */
	int64_t was;                  /* at the look before */
	int64_t files_reserve;        /* free inodes to keep; 0: not counted here */
	int64_t files;                /* free inodes at the last look */
	int64_t files_was;            /* at the look before */
};

struct session_disk {
	struct session *s;
	struct event *ev;
	enum session_disk_state state;
	enum session_disk_reason reason;
	int64_t budget;               /* bytes; 0: none */
	int64_t step;                 /* what continuing adds to it */
	struct session_disk_fs fs[2];
	size_t nfs;
	size_t hit;                   /* the one whose reserve was reached */
	uint64_t written;             /* as last counted */
	unsigned unread;              /* processes the last count could not read */
	unsigned unread_ok;           /* as many as the user let go on */
	bool counting;
	uint64_t base;                /* the host's figure when the last count was asked */
	uint64_t asked;               /* ... when the pending one was */
	int64_t counted_us;
	int64_t shared_us;            /* a look due then, at the sessions' tick; 0: none */
	int64_t tick_us;
	uint64_t tick_host;
	int64_t freeze_us;
	char *message;
	char *more;
};

/*
 * Bytes the whole host has sent toward storage: pages dirtied in the page
 * cache (nr_dirtied) and blocks written past it (pgpgout, KiB). Whatever a
 * jail writes to a disk raises one or the other first, at the moment it
 * is counted in the writer's write_bytes. UINT64_MAX if unknown.
 */
static uint64_t
session_disk_host(void)
{
	static uint64_t last;
	static int64_t at;
	int64_t now = util_mono_us();
	unsigned long long dirtied, out;
	char buf[8192], *d, *o;
	ssize_t n;
	int fd;

	if (at != 0 && now - at < 5000)
		return last;
	if ((fd = open("/proc/vmstat", O_RDONLY | O_CLOEXEC)) == -1)
		return UINT64_MAX;
	n = read(fd, buf + 1, sizeof buf - 2);
	close(fd);
	if (n <= 0)
		return UINT64_MAX;
	buf[0] = '\n';
	buf[n + 1] = '\0';
	if ((d = strstr(buf, "\nnr_dirtied ")) == NULL ||
	    (o = strstr(buf, "\npgpgout ")) == NULL ||
	    sscanf(d, "\nnr_dirtied %llu", &dirtied) != 1 ||
	    sscanf(o, "\npgpgout %llu", &out) != 1)
		return UINT64_MAX;
	last = (uint64_t)dirtied * (uint64_t)sysconf(_SC_PAGESIZE) +
	    (uint64_t)out * 1024;
	at = now;
	return last;
}

static char *
session_disk_size(int64_t bytes)
{
	char buf[32];

	return xstrdup(util_fmt_size(buf, sizeof buf, bytes));
}

/* What [limits] disk_reserve keeps free on a filesystem of TOTAL bytes. */
static int64_t
session_disk_reserve(const struct config *cf, int64_t total)
{
	if (cf->limits.disk_reserve_pct > 0)
		return total / 100 * cf->limits.disk_reserve_pct;
	return cf->limits.disk_reserve;
}

/* Free bytes and inodes of FS now; its size in bytes and inodes in TOTAL, FILES. */
static int
session_disk_statvfs(struct session_disk_fs *fs, int64_t *total,
    uint64_t *files)
{
	struct statvfs sv;

	if (fstatvfs(fs->fd, &sv) == -1)
		return -1;
	fs->free = (int64_t)sv.f_bavail * (int64_t)sv.f_frsize;
	fs->files = sv.f_favail > INT64_MAX ? INT64_MAX :
	    (int64_t)sv.f_favail;
	*total = (int64_t)sv.f_blocks * (int64_t)sv.f_frsize;
	*files = sv.f_files;
	return 0;
}

/* Opens PATH's filesystem for watching, unless it is one already watched. */
static int
session_disk_fs_open(struct session_disk *sd, const struct config *cf,
    const char *what, const char *path, char **cause)
{
	struct session_disk_fs *fs = &sd->fs[sd->nfs];
	struct stat st, other;
	uint64_t files;
	int64_t total;
	char *q;
	int fd;

	if ((fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC)) == -1 ||
	    fstat(fd, &st) == -1) {
		q = quote_name(path);
		*cause = xprintf("cannot watch the free space of the %s %s: %s",
		    what, q, strerror(errno));
		free(q);
		if (fd != -1)
			close(fd);
		return -1;
	}
	if (sd->nfs == 1 && fstat(sd->fs[0].fd, &other) == 0 &&
	    other.st_dev == st.st_dev) {
		close(fd);
		return 0;
	}
	fs->fd = fd;
	fs->what = what;
	fs->path = xstrdup(path);
	if (session_disk_statvfs(fs, &total, &files) == -1) {
		q = quote_name(path);
		*cause = xprintf("cannot read the free space of the %s %s: %s",
		    what, q, strerror(errno));
		free(q);
		close(fd);
		free(fs->path);
		return -1;
	}
	fs->was = fs->free;
	fs->files_was = fs->files;
	fs->reserve = session_disk_reserve(cf, total);
	fs->files_reserve = util_inode_reserve(files);
	sd->nfs++;
	return 0;
}

static void
session_disk_close(struct session_disk *sd)
{
	size_t i;

	for (i = 0; i < sd->nfs; i++) {
		close(sd->fs[i].fd);
		free(sd->fs[i].path);
	}
	sd->nfs = 0;
}

/* "lower disk_reserve in ~/.config/agentmux/config": where the user changes it, quoted. */
static char *
session_disk_where(void)
{
	char *path = path_config_file(), *q;

	q = quote_name(path);
	free(path);
	return q;
}

/* "the disk of X has N free inodes, ...": FS's inodes under their reserve. */
static char *
session_disk_files(const struct session_disk_fs *fs)
{
	char *q = quote_name(fs->path), *msg;

	msg = xprintf("the disk of %s has %lld free inodes, less than the %lld "
	    "(1%% of its inodes, at least 1000 or a tenth) that [limits] "
	    "disk_reserve keeps free", q, (long long)fs->files,
	    (long long)fs->files_reserve);
	free(q);
	return msg;
}

/* Why a session cannot start in PROJECT: FS is short of inodes. */
static char *
session_disk_no_files(const char *project, const struct session_disk_fs *fs)
{
	char *conf = session_disk_where(), *q = quote_name(project), *what;
	char *msg;

	what = session_disk_files(fs);
	msg = xprintf("cannot start a session in %s: %s; remove files you do "
	    "not need there (many small or empty files take the inodes), or "
	    "turn the reserve off with disk_reserve = 0 in %s", q, what, conf);
	free(what);
	free(q);
	free(conf);
	return msg;
}

/* A session can start only with its filesystems above their reserve. */
int
session_disk_check(struct session_ctx *ctx, const char *project,
    char **cause)
{
	const struct config *cf = ctx->cf;
	struct session_disk sd;
	char *free_s, *res_s, *conf;
	struct strv q;
	size_t i;
	int rc = 0;

	if (cf->limits.disk_reserve == 0 && cf->limits.disk_reserve_pct == 0)
		return 0;
	memset(&sd, 0, sizeof sd);
	if (session_disk_fs_open(&sd, cf, "project", project, cause) == -1 ||
	    session_disk_fs_open(&sd, cf, "data dir", ctx->data_dir,
	    cause) == -1) {
		session_disk_close(&sd);
		return -1;
	}
	for (i = 0; i < sd.nfs && rc == 0; i++) {
		if (sd.fs[i].files < sd.fs[i].files_reserve) {
			*cause = session_disk_no_files(project, &sd.fs[i]);
			rc = -1;
			continue;
		}
		if (sd.fs[i].free >= sd.fs[i].reserve)
			continue;
		free_s = session_disk_size(sd.fs[i].free);
		res_s = session_disk_size(sd.fs[i].reserve);
		conf = session_disk_where();
		strv_init(&q);
		*cause = xprintf("cannot start a session in %s: the disk of %s "
		    "has %s free, less than the %s that [limits] disk_reserve "
		    "keeps free; free some space, or lower disk_reserve in %s "
		    "(0 turns it off)", quote_keep(&q, project),
		    quote_keep(&q, sd.fs[i].path), free_s, res_s,
		    conf);
		strv_free(&q);
		free(conf);
		free(res_s);
		free(free_s);
		rc = -1;
	}
	session_disk_close(&sd);
	return rc;
}

static void
session_disk_schedule(struct session_disk *sd, int ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
	int64_t tick = session_tick_ms();

	sd->shared_us = 0;
	if (ms > tick) {
		/* The tick comes when it is due at the latest, however slowed. */
		sd->shared_us = util_mono_us() + ms * 1000LL;
		session_tick_due(sd->s->ctx, sd->shared_us);
		return;
	}
	evtimer_add(sd->ev, &tv);
}

/* No look is due any more. */
static void
session_disk_cancel(struct session_disk *sd)
{
	evtimer_del(sd->ev);
	sd->shared_us = 0;
}

/* What was reached, for the front end and the record, and what continuing does. */
static void
session_disk_describe(struct session_disk *sd)
{
	const struct session_disk_fs *fs = &sd->fs[sd->hit];
	long long id = (long long)sd->s->id;
	char *a, *b, *q;

	free(sd->message);
	free(sd->more);
	switch (sd->reason) {
	case SESSION_DISK_BUDGET:
		a = session_disk_size((int64_t)sd->written);
		b = session_disk_size(sd->budget);
		sd->message = xprintf("session %lld is frozen: its processes "
		    "wrote %s, past its %s disk write budget ([limits] "
		    "disk_write)", id, a, b);
		free(b);
		b = session_disk_size(sd->budget + sd->step);
		sd->more = xprintf("budget %s", b);
		break;
	case SESSION_DISK_RESERVE:
		a = session_disk_size(fs->free);
		b = session_disk_size(fs->reserve);
		q = quote_name(fs->path);
		sd->message = xprintf("session %lld is frozen: the disk of %s "
		    "has %s free, less than the %s that [limits] disk_reserve "
		    "keeps free", id, q, a, b);
		free(q);
		free(b);
		b = session_disk_size(fs->free / 2);
		sd->more = xprintf("down to %s free", b);
		break;
	case SESSION_DISK_INODES:
		a = session_disk_files(fs);
		b = NULL;
		sd->message = xprintf("session %lld is frozen: %s", id, a);
		sd->more = xstrdup("");
		break;
	case SESSION_DISK_UNCOUNTED:
	default:
		a = xprintf("%u", sd->unread);
		b = NULL;
		sd->message = xprintf("session %lld is frozen: %s of its "
		    "processes keep what they write from the count (they made "
		    "themselves undumpable, or ended and are left unreaped), "
		    "so its disk write budget cannot see what they write", id,
		    a);
		sd->more = xstrdup("not counting them");
		break;
	}
	free(a);
	free(b);
}

/* What was reached, without "session N is frozen: ". */
static const char *
session_disk_what(const struct session_disk *sd)
{
	const char *colon = strchr(sd->message, ':');

	return colon != NULL ? colon + 2 : sd->message;
}

/* Why the session was stopped, when there was nobody to ask: what to change. */
static char *
session_disk_stopped(struct session_disk *sd)
{
	char *conf = session_disk_where(), *msg, *what;

	what = xstrdup(session_disk_what(sd));
	switch (sd->reason) {
	case SESSION_DISK_BUDGET:
		msg = xprintf("stopped session %lld: %s; to let it write more, "
		    "raise disk_write in %s (0: no budget)",
		    (long long)sd->s->id, what, conf);
		break;
	case SESSION_DISK_RESERVE:
		msg = xprintf("stopped session %lld: %s; free some space, or "
		    "lower disk_reserve in %s (0 turns it off)",
		    (long long)sd->s->id, what, conf);
		break;
	case SESSION_DISK_INODES:
		msg = xprintf("stopped session %lld: %s; remove the files it "
		    "made that you do not need (many small or empty files take "
		    "the inodes), or turn the reserve off with disk_reserve = 0 "
		    "in %s", (long long)sd->s->id, what, conf);
		break;
	case SESSION_DISK_UNCOUNTED:
	default:
		msg = xprintf("stopped session %lld: %s; run it with no budget "
		    "(disk_write = 0 in %s), or as root, whose jails are "
		    "counted whole", (long long)sd->s->id, what, conf);
		break;
	}
	free(what);
	free(conf);
	return msg;
}

/* Ends the session: its jail is killed, the end is recorded with WHY. */
static void
session_disk_stop(struct session_disk *sd, const char *why)
{
	struct session *s = sd->s;

	sd->state = SESSION_DISK_DONE;
	session_disk_cancel(sd);
	free(s->end_reason);
	s->end_reason = xstrdup(why);
	store_event_add(s->ctx->st, s->id, "warn", "disk", "%s", why);
	if (s->ev.notice != NULL)
		s->ev.notice(s->arg, s, "alert", why);
	if (s->jail != NULL && !s->reaped)
		jail_kill(s->jail);
}

static void
session_disk_reach(struct session_disk *sd, enum session_disk_reason why)
{
	struct session *s = sd->s;
	char *cause = NULL, *msg;

	sd->reason = why;
	session_disk_describe(sd);
	/* Out of inodes, nothing the user could allow would help: stopped. */
	if (s->ev.disk == NULL || why == SESSION_DISK_INODES) {
		msg = session_disk_stopped(sd);
		session_disk_stop(sd, msg);
		free(msg);
		return;
	}
	if (jail_freeze(s->jail, &cause) == -1) {
		msg = xprintf("stopped session %lld: %s, and it cannot be "
		    "frozen: %s", (long long)s->id, session_disk_what(sd),
		    cause);
		session_disk_stop(sd, msg);
		free(msg);
		free(cause);
		return;
	}
	sd->state = SESSION_DISK_FREEZING;
	sd->freeze_us = util_mono_us();
	session_disk_schedule(sd, SESSION_DISK_POLL_MS);
}

/*
 * True (the one in sd->hit, what in WHY) if a filesystem is below its
 * reserve of bytes or of inodes.
 */
static bool
session_disk_reserve_hit(struct session_disk *sd,
    enum session_disk_reason *why)
{
	struct session_disk_fs *fs;
	uint64_t files;
	int64_t total;
	size_t i;

	for (i = 0; i < sd->nfs; i++) {
		fs = &sd->fs[i];
		fs->was = fs->free;
		fs->files_was = fs->files;
		if (session_disk_statvfs(fs, &total, &files) == -1)
			continue;
		sd->hit = i;
		*why = SESSION_DISK_INODES;
		if (fs->files < fs->files_reserve)
			return true;
		*why = SESSION_DISK_RESERVE;
		if (fs->reserve > 0 && fs->free < fs->reserve)
			return true;
	}
	return false;
}

/*
 * Half the time MARGIN bytes take to go at RATE bytes a second, or at the
 * pace of a fast disk, whichever is quicker.
 */
static int64_t
session_disk_ms(int64_t margin, double rate)
{
	if (rate < SESSION_DISK_FAST_RATE)
		rate = SESSION_DISK_FAST_RATE;
	if (margin <= 0)
		return 0;
	return (int64_t)((double)margin / rate * 500.0);
}

/* Half the time MARGIN inodes take to go at RATE a second, or a fast loop's. */
static int64_t
session_disk_files_ms(int64_t margin, double rate)
{
	if (rate < SESSION_DISK_FAST_FILES)
		rate = SESSION_DISK_FAST_FILES;
	if (margin <= 0)
		return 0;
	return (int64_t)((double)margin / rate * 500.0);
}

/*
 * The next tick: when a margin (the budget left, the space above a
 * reserve) would be half gone, at the pace of the last tick or of a fast
 * disk (2 GiB/s), whichever is quicker; every 5 s at most (an idle session
 * far from its limits: more than 20 GiB left), ten times a second at
 * least (near them).
 */
static int
session_disk_interval(struct session_disk *sd, uint64_t host, int64_t now)
{
	double dt = (double)(now - sd->tick_us) / 1e6, rate;
	int64_t ms = SESSION_DISK_TICK_MS, t, margin;
	const struct session_disk_fs *fs;
	bool known = host != UINT64_MAX;
	size_t i;

	/*
	 * With no earlier figure to make a pace from (the first tick, the
	 * first after a thaw), the pace is a fast disk's.
	 */
	if (sd->budget > 0) {
		margin = sd->budget - (int64_t)sd->written;
		if (known && host >= sd->base)
			margin -= (int64_t)(host - sd->base);
		rate = 0;
		if (known && dt > 0 && sd->tick_host != 0 &&
		    host >= sd->tick_host)
			rate = (double)(host - sd->tick_host) / dt;
		t = session_disk_ms(margin, rate);
		ms = t < ms ? t : ms;
	}
	for (i = 0; i < sd->nfs; i++) {
		fs = &sd->fs[i];
		if (fs->reserve <= 0)
			continue;
		rate = dt > 0 ? (double)(fs->was - fs->free) / dt : 0;
		t = session_disk_ms(fs->free - fs->reserve, rate);
		ms = t < ms ? t : ms;
	}
	for (i = 0; i < sd->nfs; i++) {
		fs = &sd->fs[i];
		if (fs->files_reserve <= 0)
			continue;
		rate = dt > 0 ? (double)(fs->files_was - fs->files) / dt : 0;
		t = session_disk_files_ms(fs->files - fs->files_reserve, rate);
		ms = t < ms ? t : ms;
	}
	sd->tick_us = now;
	sd->tick_host = known ? host : 0;
	return ms < SESSION_DISK_MIN_MS ? SESSION_DISK_MIN_MS : (int)ms;
}

/* A count has come: is the session within its budget, and is all of it counted? */
static bool
session_disk_counted(struct session_disk *sd, const struct jail_written *w)
{
	sd->counting = false;
	sd->written = w->bytes;
	sd->unread = w->unread;
	sd->base = sd->asked;
	if (sd->budget > 0 && sd->written >= (uint64_t)sd->budget) {
		session_disk_reach(sd, SESSION_DISK_BUDGET);
		return false;
	}
	if (sd->unread > sd->unread_ok) {
		session_disk_reach(sd, SESSION_DISK_UNCOUNTED);
		return false;
	}
	return true;
}

/* Whether the jail may have written its budget since the last count. */
static bool
session_disk_due(struct session_disk *sd, uint64_t host, int64_t now)
{
	if (sd->budget <= 0 || sd->counting)
		return false;
	if (host == UINT64_MAX || now - sd->counted_us >=
	    SESSION_DISK_RECOUNT_MS * 1000LL || host < sd->base)
		return true;
	return host - sd->base >= (uint64_t)sd->budget - sd->written;
}

static void
session_disk_watch(struct session_disk *sd)
{
	struct session *s = sd->s;
	struct jail_written w;
	enum session_disk_reason why;
	int64_t now = util_mono_us();
	char *cause = NULL;
	uint64_t host;

	if (sd->counting && jail_count_poll(s->jail, &w) == 1 &&
	    !session_disk_counted(sd, &w))
		return;
	if (session_disk_reserve_hit(sd, &why)) {
		session_disk_reach(sd, why);
		return;
	}
	host = session_disk_host();
	if (session_disk_due(sd, host, now)) {
		if (jail_count(s->jail, &cause) == 0) {
			sd->counting = true;
			sd->asked = host == UINT64_MAX ? 0 : host;
			sd->counted_us = now;
		} else {
			log_debug("session %lld: %s", (long long)s->id, cause);
			free(cause);
		}
	}
	session_disk_schedule(sd, sd->counting ? SESSION_DISK_POLL_MS :
	    session_disk_interval(sd, host, now));
}

static void
session_disk_ask(struct session_disk *sd)
{
	struct session *s = sd->s;
	struct session_disk_ask a;

	memset(&a, 0, sizeof a);
	a.reason = sd->reason == SESSION_DISK_BUDGET ? "budget" :
	    sd->reason == SESSION_DISK_RESERVE ? "reserve" : "uncounted";
	a.message = sd->message;
	a.more = sd->more;
	a.written = (int64_t)sd->written;
	a.budget = sd->budget;
	if (sd->reason == SESSION_DISK_RESERVE) {
		a.free = sd->fs[sd->hit].free;
		a.reserve = sd->fs[sd->hit].reserve;
	}
	sd->state = SESSION_DISK_ASKING;
	store_event_add(s->ctx->st, s->id, "warn", "disk", "%s", sd->message);
	s->ev.disk(s->arg, s, &a);
}

static void
session_disk_freezing(struct session_disk *sd)
{
	struct session *s = sd->s;
	enum jail_freeze st;
	char *cause = NULL, *msg;

	if (jail_freeze_poll(s->jail, &st, &cause) == -1) {
		msg = xprintf("stopped session %lld: %s", (long long)s->id,
		    cause);
		session_disk_stop(sd, msg);
		free(msg);
		free(cause);
		return;
	}
	if (st == JAIL_FROZEN) {
		session_disk_ask(sd);
		return;
	}
	if (util_mono_us() - sd->freeze_us > SESSION_DISK_FREEZE_MS * 1000LL) {
		msg = xprintf("stopped session %lld: %s, and it could not be "
		    "frozen within %d seconds (%s)", (long long)s->id,
		    session_disk_what(sd), SESSION_DISK_FREEZE_MS / 1000,
		    jail_freeze_how(s->jail));
		session_disk_stop(sd, msg);
		free(msg);
		return;
	}
	session_disk_schedule(sd, SESSION_DISK_POLL_MS);
}

static void
session_disk_tick(evutil_socket_t fd, short what, void *arg)
{
	struct session_disk *sd = arg;

	if (sd->s->reaped)
		return;
	switch (sd->state) {
	case SESSION_DISK_WATCH:
		session_disk_watch(sd);
		break;
	case SESSION_DISK_FREEZING:
		session_disk_freezing(sd);
		break;
	case SESSION_DISK_ASKING:
	case SESSION_DISK_DONE:
		break;
	}
}

/* The sessions' tick: a look riding on it is taken once due. True while one waits. */
bool
session_disk_tick_shared(struct session *s)
{
	struct session_disk *sd = s->disk;

	if (sd == NULL || sd->shared_us == 0)
		return false;
	/* The loop's clock may be coarser than ours: a tick a little early is on time. */
	if (util_mono_us() + SESSION_DISK_EARLY_US < sd->shared_us)
		return true;
	sd->shared_us = 0;
	session_disk_tick(-1, EV_TIMEOUT, sd);
	return sd->shared_us != 0;
}

int64_t
session_disk_shared_due(struct session *s)
{
	return s->disk != NULL ? s->disk->shared_us : 0;
}

/* Once the command runs: the watch starts (nothing at all if both limits are off). */
void
session_disk_start(struct session *s)
{
	const struct config *cf = s->cf;
	struct session_disk *sd;
	char *cause = NULL;

	if (s->jail == NULL || (cf->limits.disk_write == 0 &&
	    cf->limits.disk_reserve == 0 && cf->limits.disk_reserve_pct == 0))
		return;
	sd = xcalloc(1, sizeof *sd);
	sd->s = s;
	sd->budget = sd->step = cf->limits.disk_write;
	if ((cf->limits.disk_reserve > 0 || cf->limits.disk_reserve_pct > 0) &&
	    (session_disk_fs_open(sd, cf, "project", s->project, &cause) == -1 ||
	    session_disk_fs_open(sd, cf, "data dir", s->ctx->data_dir,
	    &cause) == -1)) {
		log_warnx("session %lld: %s", (long long)s->id, cause);
		free(cause);
	}
	if ((sd->ev = evtimer_new(s->ctx->base, session_disk_tick, sd)) ==
	    NULL)
		fatalx("cannot create a timer");
	sd->tick_us = util_mono_us();
	s->disk = sd;
	session_disk_schedule(sd, 0);
}

int64_t
session_disk_written(struct session *s)
{
	return s->disk != NULL ? (int64_t)s->disk->written : -1;
}

bool
session_disk_frozen(struct session *s)
{
	return s->disk != NULL && (s->disk->state == SESSION_DISK_FREEZING ||
	    s->disk->state == SESSION_DISK_ASKING);
}

/*
 * The jail has ended: a frozen one may have been ended by its init (a
 * process ran while frozen, or would not stop), which says why.
 */
void
session_disk_end(struct session *s)
{
	struct session_disk *sd = s->disk;
	enum jail_freeze st;
	char *cause = NULL, *msg;

	if (sd == NULL)
		return;
	session_disk_cancel(sd);
	if (!session_disk_frozen(s))
		return;
	sd->state = SESSION_DISK_DONE;
	if (jail_freeze_poll(s->jail, &st, &cause) == 0)
		return;
	msg = xprintf("session %lld was stopped: %s", (long long)s->id, cause);
	free(s->end_reason);
	s->end_reason = msg;
	store_event_add(s->ctx->st, s->id, "error", "disk", "%s", msg);
	if (s->ev.notice != NULL)
		s->ev.notice(s->arg, s, "alert", msg);
	free(cause);
}

void
session_disk_answer(struct session *s, bool go_on)
{
	struct session_disk *sd = s->disk;
	enum session_disk_reason why;
	char *cause = NULL, *msg;

	if (sd == NULL || sd->state != SESSION_DISK_ASKING)
		return;
	if (!go_on) {
		msg = xprintf("stopped session %lld at the user's word: %s",
		    (long long)s->id, session_disk_what(sd));
		session_disk_stop(sd, msg);
		free(msg);
		return;
	}
	if (sd->reason == SESSION_DISK_BUDGET)
		sd->budget += sd->step;
	else if (sd->reason == SESSION_DISK_RESERVE) {
		/* Unless space was freed meanwhile, half of what is left may go. */
		if (!session_disk_reserve_hit(sd, &why))
			sd->hit = 0;
		else if (why == SESSION_DISK_RESERVE)
			sd->fs[sd->hit].reserve = sd->fs[sd->hit].free / 2;
	} else
		sd->unread_ok = sd->unread;
	/* Paused by the user meanwhile: it stays frozen until resumed. */
	if (!session_paused(s) && jail_thaw(s->jail, &cause) == -1) {
		msg = xprintf("stopped session %lld: it cannot be thawed: %s",
		    (long long)s->id, cause);
		session_disk_stop(sd, msg);
		free(msg);
		free(cause);
		return;
	}
	store_event_add(s->ctx->st, s->id, "info", "disk", "continued by the "
	    "user, %s", sd->more);
	sd->state = SESSION_DISK_WATCH;
	sd->tick_us = util_mono_us();
	sd->tick_host = 0;
	session_disk_schedule(sd, 0);
}

void
session_disk_free(struct session *s)
{
	struct session_disk *sd = s->disk;

	if (sd == NULL)
		return;
	if (sd->ev != NULL)
		event_free(sd->ev);
	session_disk_close(sd);
	free(sd->message);
	free(sd->more);
	free(sd);
	s->disk = NULL;
}
