/* The store: one SQLite database of sessions, requests, decisions, snapshots and events (SQLite only). */
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
	char *live;         /* while running: starting, working, needs you, prompt, paused */
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
/** Records what running session ID is doing (a session_state_name). */
int store_session_set_live(struct store *, int64_t id, const char *state);
/** Replaces the session's jail settings (JSON text). */
int store_session_set_jail(struct store *, int64_t id, const char *json);
/** One session, or NULL if there is none with that id; caller frees. */
struct store_session *store_session_get(struct store *, int64_t id);
/** Sessions newest first (all, or the last 50); caller frees with store_session_list_free. */
struct store_session **store_session_list(struct store *, bool all, size_t *n);
void store_session_free(struct store_session *);
/** True while S runs in an agentmux process that is still alive (not a crash left "running"). */
bool store_session_live(const struct store_session *s);
/**
 * How S ended, in the words every command and the dashboard use: "running"
 * (or, while its agentmux runs, what it does: "working", "needs you" ...),
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
 * Deletes sessions that ended before CUTOFF_MS (never running ones, nor
 * the NKEEP in KEEP) with all their records; their ids are returned in
 * *IDS (caller frees).
 */
int store_gc(struct store *, int64_t cutoff_ms, const int64_t *keep,
    size_t nkeep, int64_t **ids, size_t *n, char **cause);

/* ---- requests (store-request.c) ---- */

/**
 * Queues a copy of the finished request R (of session R->session_id) for the
 * next flush, its headers cut to the recording cap, unless the session's
 * record budget is spent.
 */
void store_request_add(struct store *, const struct request *r);

struct store_request_filter {
	int64_t session_id;   /* 0: every session */
	bool denied_only;
	const char *host_glob;
	int64_t limit;        /* 0: no limit */
	int64_t after_id;     /* only ids greater than this */
	bool with_bodies;
};

/**
 * Requests oldest first, done, ids their rows; caller frees with
 * store_request_list_free (each one with request_free).
 */
struct request **store_request_list(struct store *,
    const struct store_request_filter *, size_t *n);
void store_request_list_free(struct request **, size_t n);

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

/* ---- where snapshots live, and their bookkeeping (store-snap.c) ---- */

struct store_snap_where {
	char *gitdir;
	char *worktree;
	bool shadow;
};

/**
 * Records GITDIR (the own repository of WORKTREE) as where session
 * SESSION's snapshots live (once); -1 with *CAUSE.
 */
int store_snap_repo_add(struct store *, int64_t session, const char *gitdir,
    const char *worktree, char **cause);
/** Points session ID's record at the own repository GITDIR; -1 with *CAUSE. */
int store_snap_repo_move(struct store *, int64_t id, const char *gitdir,
    char **cause);
/* Where session ID's snapshots live; -1 if none were taken. */
int store_snap_where(struct store *, int64_t session, struct store_snap_where *);
void store_snap_where_free(struct store_snap_where *);
/* The "snapshot" session that holds standalone snapshots of PROJECT (made if need be). */
int64_t store_snap_project_session(struct store *, const char *project,
    char **cause);
/* Marks the standalone session as used now (for gc). */
void store_snap_project_touch(struct store *, int64_t session);
/* Repositories of sessions that are gone: (session, gitdir) pairs; caller frees. */
int store_snap_orphans(struct store *, int64_t **ids, char ***gitdirs, size_t *n);
void store_snap_orphan_forget(struct store *, int64_t session);
/* Whether any recorded session still uses GITDIR. */
bool store_snap_gitdir_used(struct store *, const char *gitdir);
/* Turn snapshots in GITDIR that may be dropped (not dropped yet, not a session's last), oldest first. */
struct store_snapshot **store_snap_keep_candidates(struct store *,
    const char *gitdir, size_t *n);
/* The commits of snapshots in GITDIR that stay (not dropped, not candidates). */
void store_snap_keep_kept(struct store *, const char *gitdir, struct strv *out);
/* Marks snapshot ID as dropped, now. */
void store_snap_keep_mark(struct store *, int64_t id);
/* The newest session whose snapshots are in GITDIR (0 if none). */
int64_t store_snap_keep_newest(struct store *, const char *gitdir);
/* The own repositories recorded sessions use, with their projects; caller frees. */
int store_snap_keep_repos(struct store *, char ***gitdirs, char ***worktrees,
    size_t *n);
/* The tree of the last snapshot kept in the own repository GITDIR, or NULL; caller frees. */
char *store_snap_last_tree(struct store *, const char *gitdir);
/* Sessions of WORKTREE whose snapshots are still in its .git (from before own repositories); caller frees. */
int store_snap_legacy_list(struct store *, const char *worktree, int64_t **ids,
    char ***gitdirs, size_t *n);

#endif
