/* The store: one SQLite database of sessions, requests, decisions, snapshots and events; git snapshots; config diffs. */
#ifndef AGENTMUX_STORE_H
#define AGENTMUX_STORE_H

#include <sys/types.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "core/core.h"

struct event_base;
struct store;

/* ---- the database (store-db.c) ---- */

/**
 * Opens (creating and migrating as needed) the database at PATH, or
 * agentmux.db in the data dir when PATH is NULL. Sessions left running by a
 * process that is gone are marked crashed. NULL with *CAUSE on error.
 */
struct store *store_open(const char *path, char **cause);
/** Flushes what is queued and closes; NULL is a no-op. */
void store_close(struct store *);
/** The database file; borrowed. */
const char *store_path(struct store *);
/** Batches queued writes into one transaction per pass of BASE's loop. */
void store_attach(struct store *, struct event_base *base);
/** Writes everything queued now; -1 if the disk refused (kept for later). */
int store_flush(struct store *);
/** Marks running sessions whose owner process is gone as crashed; returns how many. */
int store_mark_crashed(struct store *);
/** The schema version this build writes. */
int store_schema_version(void);
/** True once a write failed for lack of space (the user has been told). */
bool store_degraded(struct store *);

/* Until store_set_limits: the defaults of [proxy] record_headers and record_budget. */
#define STORE_HEADERS_MAX CONFIG_RECORD_HEADERS
#define STORE_BUDGET_MAX CONFIG_RECORD_BUDGET

/**
 * Bounds what one session can make the store write: each request's
 * headers (request and response, each) are cut at a line past
 * HEADERS_MAX bytes, and once a session's records add up to BUDGET bytes
 * further requests, events and decisions of it are counted (the
 * session's unrecorded columns), not stored, and the session is flagged
 * "budget" with one event that says so. 0 leaves a limit as it was.
 */
void store_set_limits(struct store *, int64_t budget, size_t headers_max);
/** True once session ID has reached its record budget in this process. */
bool store_budget_hit(struct store *, int64_t id);

/* ---- sessions (store-session.c) ---- */

struct store_session {
	int64_t id;
	char *kind;         /* run | proxy | dashboard */
	char *agent;
	char *project;
	char *command;      /* JSON array of words */
	int64_t started_at; /* ms since the epoch */
	int64_t ended_at;   /* 0 while running */
	char *state;        /* running | exited | closed | crashed | failed */
	bool has_exit;
	int exit_status;    /* 0-255, 128+N for signal N */
	char *jail;         /* JSON object of the jail settings */
	char *unsafe;       /* NULL, or the unsafe flags in force */
	char *flags;        /* NULL, or space-separated flags (exfiltration) */
	char *error;        /* why the session failed, if it did */
	pid_t owner_pid;
	uint64_t owner_start;
	/* Filled by store_session_get/list for display. */
	int64_t nrequests;
	int64_t ndenied;
	int64_t nallowed;   /* allowed or tunnelled (not the errors, not denied) */
	int64_t nerrors;    /* ended in an error */
	bool closed;        /* the user closed it (an exit, for the schema) */
	int64_t nsnapshots;
	int64_t files_changed;
	/* Past the record budget: counted (and in nrequests), not stored. */
	int64_t unrecorded;         /* requests */
	int64_t unrecorded_denied;  /* of which denied */
	int64_t unrecorded_other;   /* events and decisions */
};

/** Records a new running session from S (id ignored); returns its id or -1. */
int64_t store_session_begin(struct store *, const struct store_session *s,
    char **cause);
/**
 * Ends session ID with STATE ("exited", "closed" by the user, "failed"),
 * EXIT (-1: none) and ERROR.
 */
int store_session_end(struct store *, int64_t id, const char *state, int exit,
    const char *error);
/** Adds FLAG to the session's flags (once). */
int store_session_flag(struct store *, int64_t id, const char *flag);
/** Replaces the session's jail settings (JSON text). */
int store_session_set_jail(struct store *, int64_t id, const char *json);
/** One session, or NULL if there is none with that id; caller frees. */
struct store_session *store_session_get(struct store *, int64_t id);
/** Sessions newest first (all, or the last 50); caller frees with store_session_list_free. */
struct store_session **store_session_list(struct store *, bool all, size_t *n);
void store_session_free(struct store_session *);
/**
 * How S ended, in the words every command and the dashboard use: "running",
 * "closed" (by the user), "exited N", "failed", "crashed". Written to BUF.
 */
const char *store_session_end_text(const struct store_session *s, char *buf,
    size_t len);
void store_session_list_free(struct store_session **, size_t n);
/** Resolves "last" or a number to an existing session id; -1 with *CAUSE. */
int store_session_resolve(struct store *, const char *spec, int64_t *id,
    char **cause);
/**
 * The newest session of the project DIR is in (its project is DIR or a
 * directory holding it, the innermost first; an agent's session before a
 * standalone snapshot), or 0 when DIR is in none. DIR is a real path.
 */
int64_t store_session_last_in(struct store *, const char *dir);
/** Records a ref's value at session start (branch tips, HEAD). */
int store_session_ref_add(struct store *, int64_t id, const char *ref,
    const char *oid);
/** Refs recorded at the start of session ID as "ref oid" lines; caller frees. */
char **store_session_refs(struct store *, int64_t id, size_t *n);
/**
 * Deletes sessions that ended before CUTOFF_MS (never running ones) with
 * all their records; their ids are returned in *IDS (caller frees).
 */
int store_gc(struct store *, int64_t cutoff_ms, int64_t **ids, size_t *n,
    char **cause);

/* ---- requests (store-request.c) ---- */

struct store_request {
	int64_t id;
	int64_t session_id;
	int64_t started_at;   /* ms since the epoch */
	char *method;
	char *scheme;         /* http | https | tunnel | ws | wss */
	char *host;
	int port;
	char *path;
	char *http_version;   /* "HTTP/1.1" */
	int status;           /* 0 if none */
	char *status_text;
	int64_t bytes_up;     /* request body bytes */
	int64_t bytes_down;   /* response body bytes */
	int64_t ttfb_us;      /* -1 if unknown */
	int64_t duration_us;
	char *decision;       /* allow | deny | tunnel | error */
	char *rule;           /* the rule that decided, as text with origin */
	char *error;
	char *req_headers;    /* redacted, "Name: value\n" lines */
	char *resp_headers;
	char *req_body;       /* up to the recording cap, or NULL */
	size_t req_body_len;
	char *resp_body;
	size_t resp_body_len;
	char *mime_type;
};

/** Queues a copy of R for the next flush. */
void store_request_add(struct store *, const struct store_request *r);

struct store_request_filter {
	int64_t session_id;   /* 0: every session */
	bool denied_only;
	const char *host_glob;
	int64_t limit;        /* 0: no limit */
	int64_t after_id;     /* only ids greater than this */
	bool with_bodies;
};

/** Requests oldest first; caller frees with store_request_list_free. */
struct store_request **store_request_list(struct store *,
    const struct store_request_filter *, size_t *n);
void store_request_free(struct store_request *);
void store_request_list_free(struct store_request **, size_t n);

/* ---- decisions, events, config changes, snapshots (store-record.c) ---- */

struct store_decision {
	int64_t id;
	int64_t session_id;
	int64_t asked_at;
	int64_t answered_at;
	char *host;
	int port;
	char *method;
	char *path;
	char *answer;   /* allow | deny */
	char *scope;    /* once | session | always */
	char *by;       /* user | timeout | policy */
	int waiting;    /* requests that waited on it */
};

void store_decision_add(struct store *, const struct store_decision *);
struct store_decision **store_decision_list(struct store *, int64_t session,
    size_t *n);
void store_decision_list_free(struct store_decision **, size_t n);

struct store_event {
	int64_t id;
	int64_t session_id;  /* 0: not tied to a session */
	int64_t at;
	char *level;         /* info | warn | error */
	char *kind;          /* start, exit, exfiltration, store, ... */
	char *message;
};

void store_event_add(struct store *, int64_t session, const char *level,
    const char *kind, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
struct store_event **store_event_list(struct store *, int64_t session,
    size_t *n);
void store_event_list_free(struct store_event **, size_t n);

struct store_snapshot {
	int64_t id;
	int64_t session_id;
	int64_t created_at;
	char *label;
	char *kind;          /* start | end | manual | turn | undo */
	char *commit;
	char *tree;
	char *parent;        /* previous snapshot's commit or NULL */
	char *ref;
	int64_t files_changed;
	int64_t dropped_at;  /* ms: dropped to keep [snapshots] max_size; 0 kept */
};

/** Writes the snapshot at once; returns its id or -1. */
int64_t store_snapshot_add(struct store *, const struct store_snapshot *,
    char **cause);
struct store_snapshot **store_snapshot_list(struct store *, int64_t session,
    size_t *n);
void store_snapshot_free(struct store_snapshot *);
void store_snapshot_list_free(struct store_snapshot **, size_t n);

struct store_confchange {
	int64_t id;
	int64_t session_id;
	int64_t at;
	char *path;          /* the host path */
	char *change;        /* added | modified | deleted */
	char *action;        /* applied | discarded */
};

int store_confchange_add(struct store *, const struct store_confchange *,
    char **cause);
struct store_confchange **store_confchange_list(struct store *,
    int64_t session, size_t *n);
void store_confchange_list_free(struct store_confchange **, size_t n);

/* ---- learning a policy from sessions (store-suggest.c) ---- */

struct store_suggest_rule {
	char *verb;          /* allow | tunnel */
	char *text;          /* HOST:PORT [METHODS] [PATH] */
	size_t requests;     /* how many recorded requests it covers */
};

struct store_suggestion {
	struct store_suggest_rule *rules;
	size_t nrules;
	struct strv denied;  /* "host:port (N requests, e.g. GET /x)" */
	size_t nrequests;    /* allowed requests considered */
};

/**
 * The smallest rule set that allows exactly what was allowed in SESSIONS:
 * hosts with ports, methods and path prefixes where the traffic shows a
 * pattern, subdomains folded into a glob only when several were seen and
 * never beyond the registrable domain. Free with store_suggestion_free.
 */
void store_suggest(struct store *, const int64_t *sessions, size_t n,
    struct store_suggestion *out);
void store_suggestion_free(struct store_suggestion *);

/* ---- git snapshots, undo and config diffs (snap-*.c) ---- */

/*
 * What a session left in the project for the host to run later, looked at
 * once its command has ended (snap-plant.c): git dirs the host's git would
 * obey (a nested repository, a submodule's git dir under .git/modules
 * however it got there, a .git made where the project had none) keep only
 * config keys known to be inert and lose new hooks, both kept in
 * QUARANTINE; set-uid and set-gid bits come off what changed; changes to
 * files the user's own tools run are reported.
 */
struct snap_plant_opts {
	const char *project;      /* real path */
	int64_t since;            /* ms since the epoch: what changed from then on counts */
	const char *quarantine;   /* where what is taken out goes */
	bool had_git;             /* the project had its .git at the start */
	char *const *watch;       /* patterns of files the user's tools run (see snap_plant_match) */
	size_t nwatch;
	char *const *existed;     /* watched files there at the start (relative) */
	size_t nexisted;
};
/**
 * The time to give snap_plant_opts.since: the file systems' own clock. A
 * file's ctime is stamped from the kernel's coarse clock, which lags
 * CLOCK_REALTIME by up to a tick; from the fine clock, a change made
 * within that tick of the start was not seen as a change.
 */
int64_t snap_plant_clock(void);

struct snap_plant_result {
	struct strv alerts;       /* one line per thing found and done */
	struct strv watched;      /* one line per watched file changed or deleted */
	int setid;                /* set-uid/set-gid files found */
};

void snap_plant_result_init(struct snap_plant_result *);
void snap_plant_result_free(struct snap_plant_result *);
/** Walks O's project; fills RES. -1 with *CAUSE if the project cannot be read. */
int snap_plant_scan(const struct snap_plant_opts *o,
    struct snap_plant_result *res, char **cause);
/**
 * True if REL (relative to the project) falls under PATTERN: a path
 * relative to the project, '*', '?' and [...] within a component; a
 * pattern naming a dir covers what is in it; a leading "**" + "/" matches
 * at any depth.
 */
bool snap_plant_match(const char *pattern, const char *rel);
/** Adds to OUT the regular files and dirs under PROJECT that PATTERNS name (none through a link). */
void snap_plant_existing(const char *project, char *const *patterns,
    size_t n, struct strv *out);

/*
 * The user's own history (snap-history.c): objects that existed when a
 * session started cannot be deleted or changed from inside the jail (each
 * git dir's objects are an overlay there, over the session's own upper
 * dir, whose new objects are checked and brought back); refs, HEAD and
 * reflogs as they were are kept in the session's dir, SESSDIR/history.
 */
struct snap_history;

/**
 * Keeps the refs and reflogs of PROJECT's git dir and its submodules' (in
 * .git/modules) and makes the overlay dirs for their objects. NULL with
 * *CAUSE NULL if the project has no git dir (or none that can be
 * protected: NOTICES says why); NULL with *CAUSE on error.
 */
struct snap_history *snap_history_begin(const char *project,
    const char *sessdir, struct strv *notices, char **cause);
/** The history kept in SESSDIR by an earlier snap_history_begin, or NULL. */
struct snap_history *snap_history_open(const char *sessdir);
void snap_history_free(struct snap_history *);
/** How many git dirs are protected; the overlay of the Ith (borrowed paths). */
size_t snap_history_count(const struct snap_history *);
void snap_history_overlay(const struct snap_history *, size_t i,
    const char **path, const char **upper, const char **work);
/**
 * Brings the objects the session's git wrote so far back into the git
 * dirs (each checked: it is what its name is the hash of); a batch at a
 * time, packs indexed in the background on BASE (NULL: now).
 */
void snap_history_import(struct snap_history *, struct event_base *base);
/**
 * Once the jail is gone: every object left is brought back (blocking),
 * reflog entries the session removed put back, refs it deleted (and tags
 * it moved) reported in WARNINGS; what was refused is in ALERTS.
 */
void snap_history_end(struct snap_history *, int64_t session,
    struct strv *alerts, struct strv *warnings);
/** True if objects of the session may still need bringing back. */
bool snap_history_pending(const struct snap_history *);
/**
 * Sessions in DATA_DIR that ended without agentmux (a crash, SIGKILL) and
 * left objects unbrought: each is finished as snap_history_end would
 * (unless it still runs in a live agentmux), what was found recorded as
 * its events. Returns how many.
 */
int snap_history_recover(struct store *, const char *data_dir);

/*
 * A snapshot is a git commit of the whole working tree (tracked files and
 * untracked ones that are not ignored, with modes and symlinks, as raw
 * bytes: no filters, no line-ending conversion), written through a private
 * index in the runtime dir. Each session's snapshots chain under
 * refs/agentmux/sessions/<id>, and each has a ref of its own,
 * refs/agentmux/snaps/<id>/<commit>, so that gc keeps every one of them
 * whatever the chain's history looks like (the jail keeps refs/agentmux
 * read-only). A project outside git gets a shadow git dir
 * in the data dir. Files inside nested repositories and submodules are
 * snapshotted as ordinary content (their .git dirs are not).
 *
 * Snapshots of a session are numbered 1, 2, ... in the order they were
 * taken; SNAP arguments accept that number, "start", "end", "latest"
 * (or "last"), NAME~K (K before NAME), or a commit id prefix.
 */

struct config;
struct snap_session;

struct snap_result {
	int64_t id;               /* the record; 0 when not recorded (unchanged) */
	int64_t seq;              /* its number in the session */
	int64_t session;
	char *commit;             /* NULL when only a tree was written */
	char *tree;
	char *modes;              /* the real modes recorded beside the tree */
	int64_t files_changed;    /* paths differing from the session's start
	                             (the first: from the project's last snapshot) */
	bool unchanged;           /* if_changed and the tree was the last one */
	char **warnings;          /* files git could not read, ... */
	size_t nwarnings;
	char **unreadable;        /* paths that could not be saved */
	size_t nunreadable;
};

void snap_result_clear(struct snap_result *);

/** Called with a snapshot's result, or ERROR (then RESULT is NULL). */
typedef void (*snap_done_cb)(void *arg, const struct snap_result *result,
    const char *error);

/**
 * Snapshots of one running session of PROJECT, on BASE: opens (or makes)
 * the repository; runs git once, synchronously. Borrows everything.
 * NULL with *CAUSE.
 */
struct snap_session *snap_session_create(struct event_base *base,
    struct store *, const struct config *, int64_t session,
    const char *project, char **cause);
/**
 * Lets go of it; NULL is a no-op. Snapshots asked for and not yet taken
 * are still taken, on the loop (no callback of theirs runs), and it frees
 * itself after; may be called from its own callbacks.
 */
void snap_session_free(struct snap_session *);
/**
 * How many freed ones still take their snapshots: a process runs its loop
 * until none is left before it closes the store.
 */
int snap_session_orphans(void);
/**
 * Queues a snapshot of KIND (start | end | manual | turn | undo) with
 * LABEL (may be NULL); DONE (may be NULL) runs when it is recorded. A
 * start snapshot also records HEAD, the branch tips and the index.
 */
int snap_session_take(struct snap_session *, const char *kind,
    const char *label, snap_done_cb done, void *arg, char **cause);
/**
 * An agent turn ended (a request to a model host completed): snapshots
 * if the tree changed, at most once per [snapshots] interval (a later
 * turn within the interval is taken when it runs out).
 */
void snap_session_turn(struct snap_session *);
/**
 * FN(ARG) runs on the loop once the first queued snapshot has saved the
 * tree and its ref points at it (the files are safe, and out of reach of a
 * prune in the jail; its record follows), or has failed (its done callback
 * says which). Returns 1, or 0 when no snapshot
 * is queued (FN does not run). FN NULL: whoever waited no longer does.
 */
int snap_session_when_saved(struct snap_session *, void (*fn)(void *arg),
    void *arg);
/** Progress of a large snapshot: FILES hashed so far. */
void snap_session_set_progress(struct snap_session *,
    void (*)(void *arg, int64_t files), void *arg);
/** Where what keeping the snapshots within [snapshots] max_size did is said (one line each). */
void snap_session_set_notice(struct snap_session *,
    void (*)(void *arg, const char *message), void *arg);
/** True while a snapshot runs or waits. */
bool snap_session_busy(struct snap_session *);

/** Progress of the blocking snapshots below (the command line): FILES hashed so far, -1 when done. */
void snap_set_progress(void (*)(void *arg, int64_t files), void *arg);
/**
 * Snapshots the project of DIR on its own (kind manual), recorded in the
 * project's "snapshot" session (one per project, made on first use);
 * *SESSION gets its id. Blocks.
 */
int snap_project(struct store *, const struct config *, const char *dir,
    const char *label, struct snap_result *, int64_t *session,
    char **cause);
/** Snapshots session ID's project into its chain now (kind manual). Blocks. */
int snap_session_now(struct store *, const struct config *, int64_t session,
    const char *label, struct snap_result *, char **cause);
/**
 * Finds snapshot SPEC of SESSION; *SEQ gets its number. NULL with *CAUSE
 * saying what exists. Caller frees.
 */
struct store_snapshot *snap_resolve(struct store *, int64_t session,
    const char *spec, int64_t *seq, char **cause);

struct snap_diff_opts {
	const char *from;         /* SNAP; NULL: start */
	const char *to;           /* SNAP or "worktree"; NULL: worktree */
	bool stat;
	bool color;
	char *const *paths;       /* NULL-terminated, as typed; may be NULL */
	int out_fd;
};

/** Writes the diff to OUT_FD. -1 with *CAUSE. */
int snap_diff(struct store *, const struct config *, int64_t session,
    const struct snap_diff_opts *, char **cause);

struct snap_undo_opts {
	const char *to;           /* SNAP; NULL: start */
	bool dry_run;
	bool refs;                /* also reset branch tips, HEAD and the index */
	char *const *paths;       /* NULL-terminated, as typed; may be NULL */
	FILE *out;                /* what changed, one line each */
};

/**
 * Puts session SESSION's project back as it was at a snapshot, first
 * snapshotting the present (kind undo). Refuses while the session runs.
 * Blocks. -1 with *CAUSE.
 */
int snap_undo(struct store *, const struct config *, int64_t session,
    const struct snap_undo_opts *, char **cause);
/**
 * Deletes the snapshot refs of sessions no longer in the store and the
 * own repositories no session uses, then packs and prunes every one still
 * used and keeps it within [snapshots] max_size (MESSAGES gets a line per
 * thing to tell); returns how many refs went.
 */
int snap_gc(struct store *, const struct config *, struct strv *messages,
    char **cause);

/* Config diffs: the changes in a session's config overlays (snap-confdiff.c). */

struct snap_confdiff_opts {
	char *const *paths;       /* host paths (or under them); NULL: all */
	bool color;
	FILE *out;
	const struct config *cf;  /* secret values to redact */
};

/** Prints pending changes as unified diffs, secrets redacted. -1 with *CAUSE. */
int snap_confdiff_show(struct store *, int64_t session,
    const struct snap_confdiff_opts *, char **cause);
/**
 * Applies (copies into the host dirs, atomically per file, modes kept;
 * deletions too) or discards pending changes, recording each. Refuses
 * while the session runs. Returns how many, -1 with *CAUSE.
 */
int snap_confdiff_apply(struct store *, int64_t session,
    const struct snap_confdiff_opts *, bool apply, char **cause);
/** Pending config changes of SESSION (scans its overlays); -1 on error. */
int snap_confdiff_pending(struct store *, int64_t session);
/**
 * At session end: PERSIST (enum config_persist) always applies everything, never discards
 * everything, review leaves it for the user. Returns how many changed.
 */
int snap_confdiff_session_end(struct store *, const struct config *,
    int64_t session, int persist, char **cause);

/* Line-level redaction of secrets (snap-redact.c). */

/** Values that must never be shown: [secret] values from env and files; caller frees. */
char **snap_redact_secrets(const struct config *, size_t *n);
/** LINE with secret-looking values replaced; caller frees. */
char *snap_redact_line(const char *line, char *const *secrets, size_t nsecrets);

#endif
