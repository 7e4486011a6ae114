/* Internals of the session layer, shared by its files (the proxy wiring joins them as session-proxy.c). */
#ifndef AGENTMUX_SESSION_INT_H
#define AGENTMUX_SESSION_INT_H

#include <sys/time.h>

#include "core/core.h"
#include "jail/jail.h"
#include "session.h"
#include "snap/snap.h"

struct bufferevent;
struct event;
struct jail;
struct pane;
struct snap_history;
struct proxy;
struct proxy_policy;
struct proxy_session;
struct session_disk;
struct session_ports;
struct session_secret;
struct session_secret_job;

/* Grace between SIGTERM and SIGKILL when a session is asked to stop. */
#define SESSION_TERM_GRACE_SEC 5

/* The port of the proxy listener inside every jail (its own network namespace). */
#define SESSION_PROXY_PORT 3128

/* Requests to one destination the proxy denied, and why (the first reason). */
struct session_denial {
	char *dest;                  /* HOST:PORT */
	char *why;
	int n;
};

struct session_ctx {
	struct event_base *base;
	const struct config *cf;
	struct store *st;
	char *data_dir;
	struct strv upstream_ca;     /* extra upstream CAs, for the proxy */
	struct proxy *px;            /* CA, TLS contexts, DNS: every session's */
	struct event *sigchld;
	struct session *sessions;    /* every live session */
	struct event *tick_ev;       /* the slow tick (session-tick.c), while wanted */
	bool tick_wanted;            /* wanted since the tick's walk began */
	bool tick_active;            /* a session did something since the last tick */
	int64_t tick_ms;             /* its period now: longer while all is idle */
	int64_t tick_at;             /* when it comes next (monotonic us), if armed */
};

/* Why a start that was terminated before its command started failed. */
#define SESSION_START_STOPPED "terminated before its command started"

struct session {
	int references;              /* the front end's, and callbacks running */
	bool freed;                  /* session_free ran: only the memory is left */
	struct session_ctx *ctx;
	const struct config *cf;     /* the ctx's when it started (a reload
	                                does not change a live session's) */
	struct session *next;
	struct session_events ev;
	void *arg;

	int64_t id;
	char *kind;
	char *agent;
	char *project;
	char *cwd;
	char *command;               /* as asked for, shell-quoted, for display */
	char *dir;                   /* $DATA/sessions/<id> */
	struct strv argv;            /* what runs (argv[0] as found on the host) */
	struct strv asked;           /* the command as asked for, for the record */
	struct strv env;
	struct strv caller_env;      /* the asking client's environment */
	bool has_caller_env;         /* else the process's own (run, tests) */
	struct strv allow;           /* --allow/--deny, for the proxy */
	struct strv deny;
	int on_unknown;

	struct jail *jail;
	int listen_fd;               /* the jail's proxy listener until served */
	struct proxy_session *ps;    /* serves the listener (session-proxy.c) */
	struct proxy_policy *policy; /* until the proxy session takes it */
	struct session_secret *secrets;
	size_t nsecrets;
	struct session_secret_job *secret_jobs; /* getting their values (start) */
	size_t nsecret_jobs;
	size_t secrets_pending;      /* commands still running */
	void (*secrets_done)(struct session *);
	struct strv denied;          /* rules that denied requests suggest */
	struct session_denial *denials; /* what was denied, per destination */
	size_t ndenials;

	struct bufferevent *pty;     /* pty mode: both directions */
	struct bufferevent *out;     /* pipe mode */
	struct bufferevent *err;
	struct bufferevent *in;
	bool in_closing;             /* close stdin once what is queued is written */
	struct pane *pane;           /* the pty's screen and scrollback, or NULL */

	char *guard_gitdir;          /* the project's .git, watched (session-guard.c) */
	struct snap_jailgit *jailgit; /* the dir the jail sees as it (a main-tree session) */
	unsigned guard_had;          /* which redirecting files it had at the start */
	unsigned guard_seq;          /* git sequences in progress at the start (snap_plant_sequences) */
	struct strv guard_execs;     /* their todo lists' exec lines then (snap_plant_seq_execs) */
	int guard_fd;
	int guard_git_wd;            /* its watch of guard_gitdir, */
	int guard_priv_wd;           /* and of the jail's git dir */
	struct event *guard_ev;
	struct event *guard_sync_ev; /* the jail's HEAD and index brought back, a burst after, */
	struct thread_job *guard_sync_job; /* on a helper thread, */
	struct strv guard_sync_alerts; /* what it found, */
	bool guard_sync_again;       /* and whether the jail wrote more meanwhile; */
	int64_t guard_sync_began;    /* when it started (monotonic ms), */
	int64_t guard_sync_after;    /* and none before this, after one that took long, */
	bool guard_sync_packed;      /* but one for a packed-refs renamed into place */
	struct thread_job *guard_end_job; /* the jail's git dir's end, on a helper thread, */
	struct strv guard_end_alerts; /* what it found, */
	void (*guard_end_then)(struct session *); /* what follows it on the loop, */
	bool guard_end_wanted;       /* once the sync that runs is over; */
	bool guard_end_done;         /* over: no sync after it */
	int64_t guard_since;         /* when the command started (ms), 0 once checked */
	bool guard_had_git;          /* the project had a .git then */
	struct snap_gitdirid *guard_gitids; /* the git dirs found then, */
	size_t guard_ngitids;
	bool guard_gitids_known;     /* if they were looked for */
	struct snap_blind guard_blind; /* index marks and replace refs then */
	struct snap_blind guard_blind_now; /* and at the end */
	struct snap_blind_read *guard_blind_read; /* the end's read of them, on the loop */
	bool guard_blind_ending;     /* it runs: done waits for it */
	struct snap_gitconf *start_gitconf; /* git's config, read before the jail is made */
	struct snap_blind_read *start_blind; /* the index marks, read then too */
	int start_reads;             /* of those two, still running */
	bool start_read;             /* they were started */
	bool start_stopped;          /* terminated before its jail was made */
	struct event *start_stop_ev; /* what it waits on dropped, a turn later */
	int start_go_stop;           /* 1: terminated, 2: closed, after the go (done once it runs) */
	int64_t guard_started;       /* guard_since, kept past the end's scan */
	struct snap_stale *guard_stale; /* the end's look for rewritten index entries */
	struct strv guard_nested;    /* nested repositories' dirs at the start (relative) */
	struct strv protect;         /* [jail] protect patterns: watched, and read-only if there */
	struct strv protected;       /* what they matched at the start (relative) */
	struct strv watched;         /* what the watched ones (built-in too) matched */
	struct snap_run run_start;   /* the run dirs' fingerprints at the start (snap-run.c) */
	struct session_run_look *run_look; /* their look at the start, on RUN_LOOK_JOB's thread */
	struct thread_job *run_look_job;
	bool run_look_begun;         /* (with the history's walk) */
	bool run_look_waited;        /* the plan waits for it */
	char *hooks;                 /* the user's core.hooksPath in the project (a pattern), or NULL */
	struct strv gitfiles;        /* what git runs through a hook link or an include (patterns) */
	struct strv start_gitdirs;   /* the git dirs the start found (absolute): nested ones' hooks and includes */
	struct snap_dirmap *start_dirs; /* the project's dirs the start found: the end tells what moved in */
	struct strv guard_socks;     /* host sockets in the project, known */
	bool guard_sock_on;          /* looks for new ones at each tick */
	struct session_guard_scan *guard_scan; /* the end's walks of the project, on a helper thread */
	struct thread_job *guard_scan_job;
	void (*guard_scan_then)(struct session *); /* what follows them on the loop */

	int home_fd;                 /* the jail's HOME (session-files.c) */
	struct strv hfiles;          /* file entries there, relative to HOME */
	struct strv hcopies;         /* their overlay/<n> dirs */
	bool files_taken;

	struct snap_history *history; /* the user's git history (session-history.c) */
	struct snap_history_start *history_start; /* its beginning, on HISTORY_JOB's thread */
	struct thread_job *history_job;
	bool history_begun;          /* its beginning was started (the start's git step) */
	bool history_waited;         /* the plan waits for it */
	struct event *history_ev;    /* brings the session's objects back */
	struct event *history_watch_ev; /* the history's watch says they were written */
	bool history_ending;         /* its end runs on the loop (holds HISTORY_SNAP) */
	bool history_in_stop;        /* inside session_history_stop */
	void (*history_then)(struct session *); /* what follows its look at the git dirs, */
	bool history_looked;         /* which is over */
	bool wt_ended;               /* with no history: the worktree's end checks ran */
	struct snap_session *history_snap;
	struct snap_session *finish_snap; /* held from the end's start to its walks' end */

	struct snap_session *snap;   /* its snapshots (session-snap.c) */
	bool snap_ended;             /* the end snapshot is queued */
	bool snap_end_pending;       /* and has not finished yet */
	struct snap_confdiff_end *confdiff_end; /* config_persist's run at the end, not over */
	bool done_told;              /* the done event was sent */

	/* Starting: session_start returned, the command does not run yet. */
	bool starting;
	bool start_saved;            /* the start snapshot saved the tree */
	bool start_setup;            /* the jail handed out its descriptors */
	bool start_go;               /* the command was released */
	bool start_snapped;          /* the start snapshot was asked for */
	struct snap_history_wait *start_recovery; /* the project's crashed sessions come back first */
	char *start_waiting;         /* why it waits, if it does */
	struct event *start_ev;      /* the snapshot said it saved the tree */
	struct event *start_jail_ev; /* the jail's status channel */
	struct event *start_timer;   /* the jail's time to get ready */
	struct buf start_in;         /* what was written for the command meanwhile */
	struct buf keys;             /* written this turn of the loop, sent at its end */
	struct event *keys_ev;       /* sends KEYS: active while it holds any */
	unsigned short rows;         /* its pty's size, once it runs */
	unsigned short cols;
	bool want_pty;               /* session_opts's, for the jail made later */
	int64_t memory;
	int64_t pids;
	struct session_setup *setup; /* until the jail is made */

	bool reaped;
	bool ended;
	bool budget_told;            /* the record budget was reached and said */
	int status;
	struct event *kill_ev;
	struct event *wall_ev;       /* the profile's wall_clock limit */
	int64_t wall_due_us;         /* when it is up (monotonic) */
	int64_t wall_left_us;        /* paused: what was left of it */
	struct session_disk *disk;   /* its disk budget and reserve (session-disk.c) */
	char *end_reason;            /* why agentmux ended it, for the record */
	bool closing;                /* the user closed it: recorded "closed" */
	struct strv kept;            /* "allow RULE" answered for the session */

	/* Its state (session-state.c). */
	enum session_state st_state; /* as last told */
	bool st_idle;                /* quiet, no turn in flight, reading its terminal */
	bool st_drawn;               /* its command has shown something: no longer starting */
	uint8_t st_esc;              /* where its output is in an escape sequence, until drawn */
	bool st_paused;
	int st_model_inflight;       /* requests to model hosts not ended yet */
	uint64_t *st_asks;           /* questions pending */
	size_t st_nasks;
	struct event *st_idle_ev;    /* idle_after after the last output */
	int64_t st_recheck_ms;       /* quiet, not reading: next look this much later */
	struct event *st_freeze_ev;  /* looks whether the pause took */
	struct event *st_hint_ev;    /* the screen settled: its profile's hint is looked at */
	int st_hint_tries;           /* looks again at a matching screen since the last output */
	bool st_hint_file;           /* its profile's needs_you_file was written since the last input */
	int st_hf_fd;                /* inotify for it, or -1 */
	int st_hf_wd;                /* the dir watched, or -1 */
	bool st_hf_parent;           /* that dir is the file's own (else one on the way) */
	struct event *st_hf_ev;
	int64_t st_pause_us;         /* when it was asked */
	int64_t st_frozen_us;        /* how long freezing took (the last pause) */
	int64_t st_allowed;          /* requests through the proxy, ended */
	int64_t st_denied;
	int64_t st_up;               /* body bytes up and down */
	int64_t st_down;
	int64_t st_turns;            /* model-API requests answered */
	int64_t st_started_ms;       /* when the command began (for the CPU share) */

	/* A worktree session (session-worktree.c); PROJECT is the worktree. */
	struct snap_worktree *wt;    /* NULL: the session works in the tree itself */
	char *wt_root;               /* $DATA/worktrees/wt-XXXXXX, the worktree's parent */
	int tree_lock;               /* the tree's lock, from its check to its record, or -1 */
	char *wt_main;               /* the main working tree it was made from */
	char *wt_base;               /* --base, or NULL: HEAD */
	char *wt_name;               /* NAME of its branch agentmux/ID/NAME */
	struct snap_worktree_make *wt_make; /* the worktree being made */
	void (*wt_made)(struct session *, const char *error);

	struct session_ports *ports; /* its forwarded ports (session-port.c), or NULL */
};

/*
 * A session's start plan (session.c: session_start), filled step by step
 * until its jail starts; what session-setup.c works out for the jail. The
 * lists own the strings JC, the jail's configuration, borrows.
 */
struct session_setup {
	size_t step;                 /* the next step of the plan */
	const struct session_opts *o; /* the caller's, while session_start runs */
	const struct config_agent *agent; /* the profile, looked up again after each wait */
	struct jail_conf jc;
	char *dir;                   /* $DATA/sessions/<id> */
	const char *shell;
	const char *home;
	struct strv env;
	struct strv binds;           /* read-only, at the same path */
	struct strv at_path;         /* binds elsewhere than their source (worktree sessions): */
	struct strv at_src;          /* where the jail sees it, what is bound there, */
	struct strv at_rw;           /* and "rw" or "ro" */
	char *sealed;                /* the jail's dir that can hold no link (jail_conf) */
	const char *gitdir_at;       /* where it sees the project's .git (jail_conf) */
	struct strv path;            /* dirs to put first on the jail's PATH */
	struct strv ov_path;         /* overlays: where, lower, upper, work */
	struct strv ov_lower;
	struct strv ov_upper;
	struct strv ov_work;
	struct strv file_paths;      /* single files: where, and the session's copy */
	struct strv file_srcs;
	struct strv hf_rel;          /* file entries under HOME: path from HOME */
	struct strv hf_base;         /* and the session's overlay/<n> dir */
	struct strv notices;         /* things the user should hear about */
	struct strv alerts;          /* and those to be said in red */
	struct strv protect;         /* project files read-only in the jail (absolute) */
	struct jail_overlay *overlays;
	struct jail_bind *jbinds;
};

struct config_agent;
struct jail_conf;

void session_setup_init(struct session_setup *);
void session_setup_free(struct session_setup *);
const struct config_agent *session_setup_profile(const struct config *,
    const char *name, char **cause);
int session_setup_command(struct session_setup *, struct strv *argv,
    const struct config_agent *, char *const *command, const char *project,
    const char *path_env, char **cause);
void session_setup_env(struct session_setup *, const struct session *,
    const struct config_agent *, bool pty, int port);
/*
 * Variable NAME of the environment the session was asked from (its
 * client's, session_opts env), else of this process; NULL if unset.
 */
const char *session_getenv(const struct session *, const char *name);
/* That whole environment, NULL-ended. */
char *const *session_environ(const struct session *);
int session_setup_overlays(struct session_setup *,
    const struct config_agent *, char **cause);
/* The overlays at or below FROM seen below TO instead, but those below FROM/KEEP (NULL: none kept). */
void session_setup_move_overlays(struct session_setup *, const char *from,
    const char *to, const char *keep);
void session_setup_jail(struct session_setup *, struct jail_conf *);

/* The project's git dir while the command runs (session-guard.c). */
int session_guard_sockets(struct session *, char **cause);
void session_guard_start(struct session *);
void session_guard_check(struct session *);
int session_guard_jail(struct session *, struct session_setup *, char **);
bool session_guard_jail_end_begin(struct session *,
    void (*then)(struct session *));
void session_guard_jail_end_wait(struct session *);
void session_guard_stop(struct session *);
bool session_guard_stop_begin(struct session *,
    void (*then)(struct session *));
/* End-of-session reads of the index still running, of sessions freed or not. */
int session_guard_endings(void);
bool session_guard_stale(struct session *, const char *tree);
bool session_guard_tick(struct session *, const struct strv *paths,
    const struct strv *dirs);

/* The sessions' slow tick (session-tick.c). */
void session_tick_want(struct session_ctx *);
void session_tick_due(struct session_ctx *, int64_t at_us);
void session_tick_activity(struct session_ctx *);
int64_t session_tick_ms(void);
int64_t session_tick_period_ms(struct session_ctx *);
void session_tick_free(struct session_ctx *);

/* The disk write budget and reserve (session-disk.c). */
int session_disk_check(struct session_ctx *, const char *project,
    char **cause);
void session_disk_start(struct session *);
bool session_disk_tick_shared(struct session *);
/** When its look riding on the tick is due (monotonic us); 0: none. */
int64_t session_disk_shared_due(struct session *);
bool session_disk_frozen(struct session *);
/** Bytes its processes wrote as last counted; -1 if nothing counts them. */
int64_t session_disk_written(struct session *);
void session_disk_end(struct session *);
void session_disk_free(struct session *);

/* Adds CPU, memory and processes of the jail's processes, from /proc, to C (session-cost.c). */
void session_cost_procs(struct session *, struct session_costs *c);

/* The session's state (session-state.c). */
void session_state_update(struct session *);
void session_state_activity(struct session *);
void session_state_request(struct session *, const struct request *r);
void session_state_ask(struct session *, uint64_t id, bool asked);
void session_state_free(struct session *);
/* A pause stops the profile's wall_clock countdown; resume goes on with what was left (session.c). */
void session_wall_hold(struct session *, bool hold);
bool session_state_syscall_reads(const char *text);
/** The foreground process of its terminal waits for input (or there is no terminal). */
bool session_state_reading(struct session *);
void session_state_output(struct session *, const void *, size_t);
AM_TESTABLE bool session_state_visible(uint8_t *esc, const unsigned char *,
    size_t);

/* A profile's screen hint (session-hint.c). */
void session_hint_arm(struct session *);
void session_hint_free(struct session *);
void session_hint_input(struct session *);
void session_hint_file_start(struct session *);
void session_hint_file_stop(struct session *);
/* Whether a process waits for input, from its /proc stat, syscall and wchan (NULL: unreadable). */
bool session_state_proc_reads(const char *stat, const char *syscall,
    const char *wchan);

/* The pty's terminal state (session-pane.c). */
void session_pane_start(struct session *, const struct session_opts *);
/** Feeds pty output to the pane; false if the session keeps none. */
bool session_pane_feed(struct session *, const char *data, size_t len);
void session_pane_changed(struct session *);
void session_pane_resize(struct session *, unsigned short rows,
    unsigned short cols);
void session_pane_free(struct session *);

/* Forwarded ports (session-port.c): all of them end with the jail. */
void session_ports_end(struct session *);
/*
 * The session is paused (HOLD) or resumed: its forwarded connections'
 * connect and idle timers stop, and go on with what was left.
 */
void session_ports_pause(struct session *, bool hold);

/* The user's git history (session-history.c). */
/* session-worktree.c */
bool session_worktree_wanted(const struct session_opts *,
    const struct config_agent *);
/*
 * Refuses a session whose project is in a worktree session's worktree
 * (under the data dir's worktrees/): its jail would not reach that
 * worktree's git. -1 with *CAUSE saying what to do instead.
 */
int session_worktree_inside_check(struct session *, char **cause);
int session_worktree_shared_check(struct session *,
    const struct session_opts *, char **cause);
void session_tree_unlock(struct session *);
int session_worktree_plan(struct session *, const struct session_opts *,
    char **cause);
int session_worktree_make(struct session *,
    void (*done)(struct session *, const char *error), char **cause);
int session_worktree_jail(struct session *, struct session_setup *,
    char **cause);
void session_worktree_setup(struct session *, const struct config_agent *);
void session_worktree_free(struct session *);

/*
 * The project's git dirs found and their refs and reflogs kept (found
 * only with [jail] history = off: the end checks their indexes), on a
 * helper thread: 1 if the start waits for it (DONE(S) on the loop then),
 * 0 if there is nothing to wait for, -1 with *CAUSE.
 */
int session_history_begin(struct session *, struct session_setup *,
    void (*done)(void *), char **cause);
/** The start is over before it was: the thread is stopped, what it kept is the session's to end. */
void session_history_begin_stop(struct session *);
/** What it found goes to the jail's overlays and the plan's notices and alerts. */
int session_history_start(struct session *, struct session_setup *,
    char **cause);
void session_history_watch(struct session *);
void session_history_hint(struct session *, char **cause);
void session_history_stop(struct session *);
/*
 * The same; THEN(S) follows on the loop once its git dirs are looked at
 * and mended (what to keep may follow), not if S is freed meanwhile.
 * False if that is over at once (THEN is not called).
 */
bool session_history_stop_begin(struct session *,
    void (*then)(struct session *));
/* Its git dirs' end, if on a helper thread, waited for (a free: nothing may race it). */
void session_history_wait(struct session *);
/* How many sessions' history ends still run: the process's loop runs on until none. */
int session_history_endings(void);
void session_history_recover(struct session_ctx *);

/* File entries under HOME (session-files.c). */
int session_files_place(struct session *, char **cause);
void session_files_capture(struct session *);
void session_files_free(struct session *);

/* Snapshots (session-snap.c). */
void session_snap_start(struct session *);
bool session_snap_when_saved(struct session *, void (*fn)(void *));
void session_snap_end(struct session *);
void session_snap_done(struct session *);
void session_snap_free(struct session *, bool ran);
/*
 * The proxy's report of request R of session ARG: a finished one is stored
 * and its denial counted; either way R itself, borrowed, goes on to the
 * front end (session-proxy.c).
 */
void session_proxy_request(void *arg, const struct request *r);
/* session-port.c: a forwarded connection's timeouts (tests shorten them) */
extern struct timeval session_port_connect_tv;
extern struct timeval session_port_idle_tv;
extern struct timeval session_port_evict_tv;
/* A request to HOST completed: a model host's marks an agent turn. */
void session_snap_request_done(struct session *, const char *host);

/* session-proxy.c: the proxy's side of sessions. */
int session_proxy_ctx_init(struct session_ctx *, char **cause);
void session_proxy_ctx_free(struct session_ctx *);
/** The bundle the jail trusts (system CAs plus ours); borrowed. */
const char *session_proxy_ca_bundle(struct session_ctx *);
/** Checks O's --allow/--deny rules; -1 with *CAUSE naming the bad one. */
int session_proxy_check(const struct session_opts *, char **cause);
/**
 * Builds the session's policy and begins getting its profile's secrets
 * (A may be NULL): secret commands run on the loop.
 */
int session_proxy_prepare(struct session *, const struct config_agent *a,
    char **cause);
/** True if secret commands still run: DONE(S) is called once they ended. */
bool session_proxy_secrets_wait(struct session *,
    void (*done)(struct session *));
/** Every value in: the secrets and their placeholders; -1 with *CAUSE. */
int session_proxy_secrets_finish(struct session *, char **cause);
/** Lets go of what getting the secrets left (commands still running are killed). */
void session_proxy_secrets_drop(struct session *);
/** Adds the CA variables, NO_PROXY and the secrets' placeholders to ENV. */
void session_proxy_env(struct session *, struct strv *env);
/** Serves listener FD (which it takes, even on failure). */
int session_proxy_serve(struct session *, int fd, char **cause);
void session_proxy_stop_accepting(struct session *);
/** Closes the proxy session and forgets the secrets. */
void session_proxy_end(struct session *);
void session_proxy_note_denied(struct session *, const char *host, int port,
    const char *error);

#endif
