/* The session layer (src/session): one jailed command, its proxy listener, its pty, its records and snapshots. */
#ifndef AGENTMUX_SESSION_H
#define AGENTMUX_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The records front ends show are the store's own types (their fields);
 * everything done with them goes through the session_record* calls below.
 */
#include "store/store.h"

/*
 * Front ends (`agentmux run`, `agentmux proxy`, the dashboard) talk to
 * sessions only through this header: events come in through the callbacks
 * of struct session_events, commands go out through the session_* calls.
 * Nothing here exposes the jail or the proxy, so the dashboard could later
 * attach to a background server instead, like a tmux client.
 */

struct event_base;
struct config;
struct store;
struct request;
struct store_request_filter;
struct store_session;
struct store_event;
struct store_decision;
struct store_snapshot;
struct session;
struct session_ctx;
struct pane;

/**
 * What every session of one agentmux process shares: the loop, the config,
 * the store, the proxy (CA, TLS contexts, DNS) and the runtime dir.
 * Borrows BASE and CF (they must outlive it). NULL with *CAUSE on error.
 */
struct session_ctx *session_ctx_create(struct event_base *base,
    const struct config *cf, char *const *upstream_ca, char **cause);
void session_ctx_free(struct session_ctx *);
/**
 * The store all sessions record into; borrowed. Front ends read records
 * through session_record_* instead.
 */
struct store *session_ctx_store(struct session_ctx *);
/** The CA certificate clients of the proxy must trust (PEM path); borrowed. */
const char *session_ctx_ca_cert(struct session_ctx *);
const struct config *session_ctx_config(struct session_ctx *);
/**
 * CF (borrowed) is the config of the sessions started from now on; live
 * ones keep the one they started with, which the caller keeps alive
 * until they end.
 */
void session_ctx_set_config(struct session_ctx *, const struct config *cf);

struct session_opts {
	const char *kind;            /* "run", "dashboard" or "proxy" */
	const char *agent;           /* profile; NULL: [ui] default_agent, else shell */
	const char *dir;             /* project dir (-C); NULL: the current dir */
	char *const *command;        /* NULL: the profile's command */
	char *const *allow;          /* extra rules from the command line */
	char *const *deny;
	char *const *kept;           /* "allow RULE"/"deny RULE" answered for the
	                                session by a run this one restarts */
	int on_unknown;              /* -1: the config's; CONFIG_ASK or CONFIG_DENY */
	int64_t memory;              /* 0: the profile's, then [limits] */
	int64_t pids;
	bool pty;                    /* a pty (dashboard, run on a terminal), else pipes */
	bool pane;                   /* with pty: keep its terminal state (session_pane) */
	unsigned short rows;
	unsigned short cols;
	int listen_fd;               /* -1: jail the command; else serve this listener
	                                with no jail and no command (agentmux proxy) */
	bool worktree;               /* a linked worktree of the project of its own */
	const char *base;            /* with worktree: its branch starts here (NULL: HEAD) */
	const char *branch;          /* with worktree: NAME in agentmux/ID/NAME (NULL: the agent's) */
	bool shared;                 /* start in a tree another session runs in */
	char *const *env;            /* the asking client's environment, K=V,
	                                NULL-ended; NULL: this process's own */
};

/** A destination waiting for the user's decision. Strings borrowed. */
struct session_ask {
	uint64_t id;
	const char *host;
	int port;
	const char *method;          /* NULL when asked before decryption */
	const char *path;
	const char *scheme;
	int waiting;                 /* requests held on it */
	int64_t asked_at;            /* ms since the epoch */
	int64_t deadline_mono_us;    /* when it times out (util_mono_us clock) */
	bool paused;
};

enum session_answer {
	SESSION_ALLOW_ONCE,
	SESSION_ALLOW_SESSION,
	SESSION_ALLOW_ALWAYS,        /* also written to the config file */
	SESSION_DENY_ONCE,
	SESSION_DENY_SESSION,
	SESSION_DENY_ALWAYS,
};

/**
 * A disk limit the session reached ([limits] disk_write or disk_reserve):
 * it is frozen until session_disk_answer. Strings borrowed.
 */
struct session_disk_ask {
	const char *reason;          /* "budget", "reserve", or "uncounted" (writes it cannot count) */
	const char *message;         /* one line for the user: what was reached, and that it is frozen */
	const char *more;            /* what continuing does ("budget 40G", "down to 450M free") */
	int64_t written;             /* bytes its processes wrote, as last counted */
	int64_t budget;              /* its write budget; 0: none */
	int64_t free;                /* reserve: bytes free on the disk that reached it */
	int64_t reserve;             /* and what was to stay free there */
};

/**
 * A session's one state, the same everywhere it is shown. NEEDS_YOU is
 * inferred: its pane quiet for [ui] idle_after after output, no request
 * to a model host of its profile in flight, and the program in the
 * foreground of its terminal waiting to read it. PROMPT: a network
 * question is pending. EXITED/CRASHED once it ended (crashed: killed by
 * a signal of its own failure, such as SIGSEGV or SIGABRT).
 */
enum session_state {
	SESSION_STARTING,
	SESSION_WORKING,
	SESSION_NEEDS_YOU,
	SESSION_PROMPT,
	SESSION_PAUSED,
	SESSION_EXITED,
	SESSION_CRASHED,
};

/** Events from a session to its front end. Any callback may be NULL. */
struct session_events {
	/*
	 * Output of the command: STREAM 1 (pty or stdout) or 2 (stderr).
	 * With a pane, the pty's output is in it before this is called.
	 */
	void (*output)(void *arg, struct session *, int stream,
	    const char *data, size_t len);
	/*
	 * The session's pane (session_pane) took output: its screen, cursor,
	 * title, bells or modes may have changed and it wants drawing.
	 */
	void (*pane_changed)(void *arg, struct session *);
	/*
	 * The start is over (session_start returned before it was): OK, the
	 * command runs; else CAUSE (a sentence) says why it did not, the
	 * session is recorded as failed and no other event follows (free it).
	 * Not for a session that serves a listener (listen_fd).
	 */
	void (*started)(void *arg, struct session *, bool ok,
	    const char *cause);
	/* The command ended with STATUS (exit code, or 128+N for signal N). */
	void (*exited)(void *arg, struct session *, int status);
	/*
	 * A request started (R->done false) or finished (R->done true); R is
	 * borrowed for the call. Its id is the request's number within the
	 * session, the same at start and end (the store's row id exists only
	 * once it is written).
	 */
	void (*request)(void *arg, struct session *, const struct request *r);
	/* A question was raised or changed (more requests waiting). */
	void (*ask)(void *arg, struct session *, const struct session_ask *);
	/* A question was answered: ANSWER "allow"/"deny", BY "user"/"timeout". */
	void (*answered)(void *arg, struct session *, uint64_t id,
	    const char *answer, const char *by);
	/* Something the user should see: LEVEL "info", "warn" or "alert". */
	void (*notice)(void *arg, struct session *, const char *level,
	    const char *message);
	/*
	 * The session reached a disk limit and is frozen; it stays so until
	 * session_disk_answer. NULL: nobody can be asked, and a session that
	 * reaches one is stopped instead (a notice says why).
	 */
	void (*disk)(void *arg, struct session *,
	    const struct session_disk_ask *);
	/*
	 * After exited, once the end snapshot is taken (or failed): nothing
	 * of the session writes to the project any more, and its end is in
	 * the store's next flush.
	 */
	void (*done)(void *arg, struct session *);
	/* The session's state (session_state) changed to STATE. */
	void (*state)(void *arg, struct session *, enum session_state state);
	/*
	 * While it starts: what it waits for changed (session_start_waiting);
	 * WHY is the new reason, NULL when the wait is over and the start
	 * goes on. (A wait that begins in session_start is not told: the
	 * front end asks session_start_waiting when it returns.)
	 */
	void (*waiting)(void *arg, struct session *, const char *why);
};

/**
 * Checks OPTS without starting anything (the agent profile exists, the
 * project may be jailed): -1 with *CAUSE when they are wrong, which is a
 * usage error of the front end.
 */
int session_check(struct session_ctx *, const struct session_opts *,
    char **cause);

/**
 * Starts a session: resolves the agent profile and project, records the
 * session and begins the jail and the start snapshot, then returns at once
 * with the session starting (session_starting). On the loop, once the
 * snapshot has saved the tree and the jail is set up, the command is
 * released and the proxy serves its listener; the started event says when
 * (or why not). Input written meanwhile is kept for the command. NULL with
 * *CAUSE (a sentence saying what to do) on an error found before it returns.
 */
struct session *session_start(struct session_ctx *,
    const struct session_opts *, const struct session_events *, void *arg,
    char **cause);
/**
 * Ends what still runs, records the end, frees; NULL is a no-op. The end
 * snapshot, if still to take, is taken on the loop afterwards (it does not
 * wait). Safe from the session's own callbacks: no event follows.
 */
void session_free(struct session *);
/*
 * Sessions are reference-counted (as tmux's): one the session layer is
 * calling back about stays in memory until the callback returns, even if
 * the front end frees it there. A front end that keeps the pointer past a
 * session_free (to compare it) holds a reference of its own.
 */
void session_add_ref(struct session *);
void session_remove_ref(struct session *);

int64_t session_id(struct session *);
const char *session_agent(struct session *);
const char *session_project(struct session *);
/** The command line, shell-quoted; borrowed. */
const char *session_command(struct session *);
bool session_running(struct session *);
/** True from session_start until the started event. */
bool session_starting(struct session *);
/**
 * While it starts and waits for something (the objects of crashed
 * sessions on its project being brought back), why, as a sentence for the
 * user; NULL otherwise. Borrowed.
 */
const char *session_start_waiting(struct session *);
/** True once the session's records reached [proxy] record_budget. */
bool session_budget_reached(struct session *);
/** The session's state now (see enum session_state). */
enum session_state session_state(struct session *);
/** "starting", "working", "needs you", ...; static. */
const char *session_state_name(enum session_state);
/**
 * The state as the user reads it, into BUF: "working", "needs you",
 * "exited 2", "closed", "crashed"; returns BUF.
 */
const char *session_state_text(struct session *, char *buf, size_t len);
/**
 * Pauses (PAUSE) or resumes the session: every process of its jail is
 * frozen without its knowing (the cgroup freezer, else SIGSTOP by the
 * jail's init), its proxy holds new connections and its prompts'
 * countdowns stop; resuming lets all of it go on where it was. -1 with
 * *CAUSE if it cannot be (not running, or frozen at a disk limit).
 */
int session_pause(struct session *, bool pause, char **cause);
/** What a session costs, as session_costs reads it. */
struct session_costs {
	double cpu_sec;              /* CPU time of its processes, live and ended */
	double cpu_share;            /* of one CPU, over its run so far (0.5: half) */
	int64_t memory;              /* bytes: charged to its memory cgroup, else resident */
	int procs;                   /* its live processes */
	const char *from;            /* "cgroup", "cgroup and /proc", "/proc"; NULL: not read */
	int64_t written;             /* bytes written to storage; -1: not counted */
	int64_t allowed;             /* requests through its proxy */
	int64_t denied;
	int64_t bytes_up;            /* request and response body bytes */
	int64_t bytes_down;
	int64_t turns;               /* model-API requests answered */
	int64_t run_ms;              /* how long its command has run */
};
/**
 * Reads what session S costs into C: CPU, memory and processes from its
 * jail's cgroups where it has them (cgroup v2, or v1's cpuacct, memory
 * and pids), else from /proc (those in its jail's pid namespace; cutime
 * counts those that ended), the proxy's counts from its requests. Cheap enough for a view opened by the user,
 * not for every frame.
 */
void session_costs(struct session *, struct session_costs *c);
/** Microseconds the last pause took until every process had stopped; 0 until then. */
int64_t session_pause_took_us(struct session *);
/** True while paused (from session_pause until it is resumed). */
bool session_paused(struct session *);
/** A worktree session's branch (agentmux/ID/NAME) once made, else NULL. */
const char *session_branch(struct session *);
/**
 * The live session working in the tree that a session started in DIR
 * (NULL: the current dir) would share: its id, the one session_start
 * refuses without shared or worktree; 0 if there is none, or if DIR
 * cannot be a project (session_start then says why).
 */
int64_t session_tree_sharer(struct session_ctx *, const char *dir);

/* The lock file of the tree PROJECT, taken from the shared-tree check to the session's record; caller frees. */
char *session_tree_lock_path(struct session_ctx *, const char *project);
/*
 * gc: removes (unless DRY) each tree lock file under DATA_DIR that is
 * ours, that nobody holds (flock, not waiting) and whose tree has no live
 * session; returns how many (a start that waited for one removed meanwhile
 * takes the lock of the new file).
 */
int session_tree_locks_gc(struct store *, const char *data_dir, bool dry);

/* Tests only: called with the project once its tree is found free, before the session is recorded. */
extern void (*session_tree_checked)(const char *project);

/** One forward of session_ports. */
struct session_port_info {
	const char *host;            /* the host address listened on; borrowed */
	int host_port;
	int jail_port;
	size_t conns;                /* connections it carries now */
};

/**
 * The loopback address session ID's forwards listen on unless told
 * otherwise, 127.77.ID.1 for IDs below 256 (session_port_add), into BUF.
 */
void session_port_default_host(int64_t id, char *buf, size_t len);
/**
 * Forwards HOST:HOST_PORT on the host (HOST NULL: the session's own
 * address, session_port_default_host; HOST_PORT 0:
 * any free port) to 127.0.0.1:JAIL_PORT inside the session's jail, its own
 * network namespace, until session_port_remove or the jail's end. The
 * host listens; each connection is made into the jail from outside, so
 * nothing in the jail gains a way out. An address that is not loopback
 * only if the user NAMED it (--host). *BOUND: the host port listened on.
 * -1 with *CAUSE (a port in use says by what).
 */
int session_port_add(struct session *, const char *host, bool named,
    int host_port, int jail_port, int *bound, char **cause);
/** Removes every forward to JAIL_PORT, closing its connections; -1 with *CAUSE if none. */
int session_port_remove(struct session *, int jail_port, char **cause);
/** The session's forwards: up to MAX in OUT (newest first); returns how many there are. */
size_t session_ports(struct session *, struct session_port_info *out,
    size_t max);
/** Exit status once ended, else -1. */
int session_exit_status(struct session *);

/** Sends input to the command (pty or stdin). */
int session_write(struct session *, const void *, size_t);
/** Bytes given to session_write that the command has not taken yet. */
size_t session_input_pending(struct session *);
/** Ends the command's input (pipe mode). */
void session_close_input(struct session *);
/**
 * The terminal state of the session's pty (screen, scrollback, cursor,
 * title, modes), fed on the session side so it can be drawn at any time;
 * NULL without opts.pane. Borrowed: pane_ref it to keep it past
 * session_free (it then keeps the last screen and sends nothing).
 */
struct pane *session_pane(struct session *);
/** Resizes the command's pty and the session's pane. */
void session_resize(struct session *, unsigned short rows,
    unsigned short cols);
/** Asks the command to stop: SIGTERM, then SIGKILL after a grace period. */
void session_terminate(struct session *);
/**
 * The user closes the session: SIGHUP (as a terminal hang-up), SIGTERM,
 * then SIGKILL after the grace period; its end is recorded as "closed".
 */
void session_close(struct session *);
/**
 * Whether profile AGENT's command is installed on the host PATH; if not,
 * false with *CAUSE naming it and how to install it.
 */
bool session_agent_installed(const struct config *, const char *agent,
    char **cause);
/** True once session_close was called. */
bool session_closing(struct session *);
/**
 * True while its start runs git worktree add, which a stop lets finish
 * (git killed halfway leaves a worktree and branch no record names).
 */
bool session_making_worktree(const struct session *);
/**
 * The "allow RULE"/"deny RULE" answers given for the session (and those it
 * kept from the run it restarts), for session_opts.kept. Borrowed.
 */
char *const *session_kept_rules(struct session *);
/** Answers question ID. */
void session_answer(struct session *, uint64_t id, enum session_answer);

/** A rule an "always" (or "session") answer can save, and what it covers. */
struct session_scope {
	char *rule;                  /* after allow/deny: "two.test:8443 GET /v1/" */
	const char *what;            /* "this host and port", ... */
};
#define SESSION_SCOPES_MAX 4
/**
 * The rules an answer to ASK can save, narrowest first, into V (at most
 * SESSION_SCOPES_MAX): this host and port; any port; this method and path
 * prefix (when both are known and plain); any subdomain of the registrable
 * domain (only with Debian's public suffix list, and never wider than one
 * registrable domain). Returns how many; free with session_scopes_free.
 */
size_t session_ask_scopes(const struct session_ask *, struct session_scope *v);
void session_scopes_free(struct session_scope *, size_t n);
/**
 * Answers question ID saving RULE (one of session_ask_scopes's) for a
 * SESSION or ALWAYS answer; requests it does not cover are asked anew.
 * -1 with *CAUSE if RULE is not a rule.
 */
int session_answer_rule(struct session *, uint64_t id, enum session_answer,
    const char *rule, char **cause);
/** Pauses or resumes question ID's countdown (the user is looking at it). */
void session_ask_pause(struct session *, uint64_t id, bool pause);
/**
 * Answers the disk question of a frozen session: GO_ON lets it continue
 * (a budget larger by [limits] disk_write, a reserve down to half the
 * free space left, or its uncounted processes let be), else it is stopped.
 */
void session_disk_answer(struct session *, bool go_on);
/** Takes a snapshot now, without blocking; LABEL may be NULL. */
int session_snapshot(struct session *, const char *label, char **cause);
/**
 * What the proxy denied so far, or NULL: one line per destination
 * ("denied HOST:PORT (N requests): why"), then, if some had no rule, one
 * line ending in the --allow options that would let them through.
 * Caller frees.
 */
char *session_denied_summary(struct session *);

/* ---- for front ends: records and checks (session-front.c) ---- */

/**
 * Gets the jail's cgroups ready while the rest is set up; changes nothing.
 * For front ends about to start a session, as early as they know it.
 */
void session_prewarm(void);
/** Checks the rule TEXT for an "allow" or "deny" (VERB) option; -1 with *CAUSE. */
int session_rule_validate(const char *verb, const char *text, char **cause);
/** Writes the records still queued, so that what follows reads them. */
void session_records_flush(struct session_ctx *);
/**
 * The recorded sessions newest first (all, or the last 50); caller frees
 * with session_records_list_free.
 */
struct store_session **session_records_list(struct session_ctx *, bool all,
    size_t *n);
void session_records_list_free(struct store_session **, size_t n);
/** Session record ID, or NULL; caller frees with session_record_free. */
struct store_session *session_record_get(struct session_ctx *, int64_t id);
void session_record_free(struct store_session *);
/** How record S ended ("exited 2", "crashed", ...), into BUF; returns BUF. */
const char *session_record_end_text(const struct store_session *, char *buf,
    size_t len);
/**
 * For a worktree session's record SS: where its worktree is and what
 * merges or discards it, or, once discarded, what brings it back
 * (restore); NULL for any other session. Reads files only, runs no git.
 * Caller frees.
 */
/*
 * A worktree session's mark for a list row: its branch (quoted, as names
 * are hostile), ", discarded" once it is; NULL for any other session.
 * Reads files only, runs no git. Caller frees.
 */
char *session_record_branch(struct session_ctx *,
    const struct store_session *);
char *session_record_worktree(struct session_ctx *,
    const struct store_session *ss);
/** Events of session ID; caller frees with session_record_events_free. */
struct store_event **session_record_events(struct session_ctx *, int64_t id,
    size_t *n);
void session_record_events_free(struct store_event **, size_t n);
/** Decisions of session ID; caller frees with session_record_decisions_free. */
struct store_decision **session_record_decisions(struct session_ctx *,
    int64_t id, size_t *n);
void session_record_decisions_free(struct store_decision **, size_t n);
/** Requests oldest first; caller frees with session_record_requests_free. */
struct request **session_record_requests(struct session_ctx *,
    const struct store_request_filter *, size_t *n);
void session_record_requests_free(struct request **, size_t n);
/** Snapshots of session ID; caller frees with session_record_snapshots_free. */
struct store_snapshot **session_record_snapshots(struct session_ctx *,
    int64_t id, size_t *n);
void session_record_snapshots_free(struct store_snapshot **, size_t n);
/** Config changes of session ID waiting for a review; -1 on error. */
int session_record_confdiff_pending(struct session_ctx *, int64_t id);

/* ---- what this machine lets a jail use (session-host.c) ---- */

/** For agentmux doctor and version: each probe's answer, or why it failed. */
struct session_host {
	char *userns_cause;      /* NULL: unprivileged user namespaces work */
	int seccomp_level;       /* libseccomp's API level; -1: see seccomp_cause */
	char *seccomp_cause;
	int landlock_abi;        /* 0: no Landlock */
	bool overlay_probed;
	char *overlay_cause;     /* probed, NULL: overlayfs works in a user namespace */
	char *limits;            /* how limits are enforced here */
};

/**
 * Probes the kernel as a jail would use it (forking and waiting: for
 * commands only, never on a loop that serves sessions); OVERLAY: overlayfs
 * too. Free with session_host_free.
 */
void session_host_probe(struct session_host *, bool overlay);
void session_host_free(struct session_host *);
/** True if ADDR (IPv4, as text) is one the jail's resolver makes up, never a real one. */
bool session_host_synthetic(const char *addr);

/* ---- agent profiles at run time: an agent's real install, for the jail ---- */

/** Where a profile's command lives on the host. */
struct agent_install {
	struct strv argv;     /* the command to run, argv[0] an absolute host path */
	char *found;          /* argv[0] as found on PATH (may be a symlink) */
	char *real;           /* its resolved path */
	char *interpreter;    /* a script's interpreter (resolved), or NULL */
	struct strv binds;    /* host dirs/files the jail must show read-only */
	struct strv path;     /* dirs to put first on the jail's PATH */
};

/**
 * Resolves the command of profile A (COMMAND overrides it when non-NULL)
 * on the host PATH: the binary, its package dir, a script's interpreter.
 * Paths under /usr are already in every jail and are not listed in binds.
 * -1 with *CAUSE (naming the command and how to install it) if not found.
 */
int agent_resolve(const struct config_agent *a, char *const *command,
    const char *path_env, struct agent_install *out, char **cause);
void agent_install_free(struct agent_install *);
/**
 * The user's shell: SH (a SHELL value, may be NULL), else the passwd
 * entry, else /bin/sh; borrowed (SH itself when it is taken).
 */
const char *agent_user_shell(const char *sh);

#endif
