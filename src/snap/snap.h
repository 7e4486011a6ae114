/* Snapshots: git snapshots of a project, undo, config diffs, what a session planted, the user's history. */
#ifndef AGENTMUX_SNAP_H
#define AGENTMUX_SNAP_H

#include <sys/types.h>

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "core/core.h"
#include "store/store.h"

struct event_base;

/*
 * What a session left in the project for the host to run later, looked at
 * once its command has ended (snap-plant.c): git dirs the host's git would
 * obey (a nested repository, a submodule's git dir under .git/modules
 * however it got there, a .git made where the project had none, any dir
 * git takes for a repository whatever its name) keep only
 * config keys known to be inert and lose new hooks, both kept in
 * QUARANTINE; set-uid and set-gid bits come off what changed; changes to
 * files the user's own tools run are reported.
 */
/* A dir's identity (0: none). */
struct snap_dirid {
	dev_t dev;
	ino_t ino;
};

/* A git dir there at a session's start: it, its objects and its hooks dirs. */
struct snap_gitdirid {
	struct snap_dirid dir, objects, hooks;
};

struct snap_plant_opts {
	const char *project;      /* real path */
	int64_t since;            /* ms since the epoch: what changed from then on counts */
	const char *quarantine;   /* where what is taken out goes */
	bool had_git;             /* the project had its .git at the start */
	char *const *watch;       /* patterns of files the user's tools run (see snap_plant_match) */
	size_t nwatch;
	char *const *existed;     /* watched files there at the start (relative) */
	size_t nexisted;
	unsigned sequences;       /* snap_plant_sequences() at the start */
	char *const *execs;       /* snap_plant_seq_execs() at the start (exec lines, option files) */
	size_t nexecs;
	const char *hooks;        /* the user's core.hooksPath in the project (a pattern), or NULL */
	const char *gitdir;       /* a worktree's own git dir (agentmux's record, not its .git file), or NULL: PROJECT/.git */
	char *const *gitfiles;    /* snap_plant_git_files() at the start */
	size_t ngitfiles;
	/*
	 * The git dirs found at the start, if they were looked for
	 * (GITIDS_KNOWN): a git dir (it and its objects) changed since and not
	 * among them is new, and so is a hooks dir changed since that was not
	 * its git dir's at the start; everything in a new one counts as the
	 * session's, whatever its own ctime (one prepared in an earlier
	 * session and renamed into place keeps its files' old ctimes).
	 * Without the list, every one changed since counts as new.
	 */
	const struct snap_gitdirid *gitids;
	size_t ngitids;
	bool gitids_known;
	bool gitids_index;        /* the index of GITIDS' git dirs is checked by the history's end */
	int64_t max_entries;      /* entries looked at, at most ([jail] scan_limit; 0: the default) */
	const struct snap_dirmap *dirs; /* the project's dirs at the start, or NULL */
	bool gated;               /* on a helper thread: allocates inside the clone gate only */
};
/**
 * Which git sequences (rebase, am, cherry-pick, revert, merge, bisect) are
 * in progress in PROJECT's .git (GITDIR if set: a worktree's), as bits for snap_plant_opts.sequences:
 * one left in progress by a session is carried on by the user's git (a
 * rebase's todo runs its exec lines at `git rebase --continue`).
 */
unsigned snap_plant_sequences(const char *project, const char *gitdir);
/**
 * Adds to OUT the exec lines of the todo lists of the sequences in
 * progress in PROJECT, and their option files (strategy, strategy_opts,
 * gpg_sign_opt, apply-opt, sequencer/opts), for snap_plant_opts.execs: a
 * todo that gains an exec line, or an option file made or changed, during
 * a session is told at its end.
 */
void snap_plant_seq_execs(const char *project, const char *gitdir,
    struct strv *out);
/**
 * The time to give snap_plant_opts.since: the file systems' own clock. A
 * file's ctime is stamped from the kernel's coarse clock, which lags
 * CLOCK_REALTIME by up to a tick; from the fine clock, a change made
 * within that tick of the start was not seen as a change.
 */
int64_t snap_plant_clock(void);

/*
 * The project's dirs at the start (snap-dirmap.c): each relative path
 * with its device and inode, as the start's walk found them; COMPLETE
 * unless the walk was cut short. Counted references: the start keeps it,
 * the end's scan borrows it.
 */
struct snap_dirmap;
struct stat;
struct snap_dirmap *snap_dirmap_new(void);
void snap_dirmap_add(struct snap_dirmap *, const char *rel,
    const struct stat *);
/* Some dirs were not looked at: one not in it is not known to be new. */
void snap_dirmap_incomplete(struct snap_dirmap *);
/* Every dir added: it may be asked. */
void snap_dirmap_done(struct snap_dirmap *);
/*
 * 1 if REL was the dir ST at the start; 0 if it was another, or none (the
 * map complete); -1 if not known (no map, or a map cut short without it).
 */
int snap_dirmap_same(const struct snap_dirmap *, const char *rel,
    const struct stat *);
struct snap_dirmap *snap_dirmap_ref(struct snap_dirmap *);
void snap_dirmap_unref(struct snap_dirmap *);

struct snap_plant_result {
	struct strv alerts;       /* one line per thing found and done */
	struct strv watched;      /* one line per watched file changed or deleted */
	struct strv notes;        /* what the user should know, no alert (a scan cut short) */
	int setid;                /* set-uid/set-gid files found */
	bool partial;             /* the walk stopped at max_entries */
	size_t moved;             /* watched files found in a dir the session moved (the first few told) */
	size_t unreadable;        /* dirs made unreadable, opened up (the first few told) */
};

void snap_plant_result_init(struct snap_plant_result *);
void snap_plant_result_free(struct snap_plant_result *);
/**
 * Walks O's project; fills RES. -1 with *CAUSE if the project cannot be
 * read. With O->gated, as the work of a helper thread (thread_job_start):
 * it holds the clone gate, let go every few entries so a clone waits for
 * a few lstat calls at most.
 */
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
/**
 * The dir PROJECT/.git/config (else the user's global or system config)
 * names in core.hooksPath, if it lies in the project: its real path
 * relative to it, as a pattern naming it alone (for snap_plant_match and
 * snap_plant_existing); NULL if none. Read with git's parser, no include
 * of .git/config followed, no link followed out of the project, nothing
 * run. Caller frees.
 */
char *snap_plant_hooks_path(const char *project);

/*
 * What the session start reads of git's config for PROJECT
 * (snap-gitconf.c): core.hooksPath and the includes of .git/config (git's
 * parser on the file's bytes: no include followed, nothing run), the
 * user's own core.hooksPath (global, else system).
 */
struct snap_gitconf;
/**
 * Starts the reads on BASE; DONE(ARG) runs once they are all over, unless
 * snap_gitconf_running() is false at once (nothing to wait for). The
 * caller frees it (snap_gitconf_free stops the reads still running).
 */
struct snap_gitconf *snap_gitconf_start(struct event_base *,
    const char *project, void (*done)(void *), void *arg);
/** The same, read to the end at once on a loop of its own (commands and tests only). */
struct snap_gitconf *snap_gitconf_read(const char *project);
bool snap_gitconf_running(const struct snap_gitconf *);
void snap_gitconf_free(struct snap_gitconf *);
/** snap_plant_hooks_path from what GC read. Caller frees. */
char *snap_plant_hooks_path_of(const char *project,
    const struct snap_gitconf *gc);
/** snap_plant_git_files from what GC read. */
void snap_plant_git_files_of(const char *project,
    const struct snap_gitconf *gc, struct strv *out);
/**
 * Adds to OUT the paths in PROJECT (relative, as patterns naming them
 * alone) that git runs through a link or an include: the targets of the
 * links in .git/hooks and in the core.hooksPath dir, the links on the way
 * to that dir, the files the include.path and includeIf.*.path of
 * .git/config name. Read with git's parser, no link followed out of the
 * project, nothing run.
 */
void snap_plant_git_files(const char *project, struct strv *out);
/*
 * The same for the git dirs GITDIRS (N, absolute: those the start found,
 * nested repositories' and submodules'; the project's own .git and any
 * outside the project are passed over): what their hooks dirs' links,
 * core.hooksPath and includes lead git to in the project.
 */
void snap_plant_nested_git_files(const char *project, char *const *gitdirs,
    size_t n, struct strv *out);

/**
 * Before a jail is made: each protected file of PROJECT (RELS, relative,
 * and the files directly in a protected dir; .git/config, shallow, and
 * the files of .git/hooks and .git/info) that has more than one hard
 * link gets a file of its own, so the jail cannot write it through
 * another name; NOTES gets a line for each (a warning), also where that
 * could not be done.
 */
void snap_hardlink_protect(const char *project, char *const *rels, size_t n,
    struct strv *notes);

/*
 * Ignored files the user runs (snap-run.c): the programs in a venv's bin
 * dir, node_modules/.bin and .tox/<env>/bin, and the start-up code of a
 * venv's site-packages (*.pth, sitecustomize.py), at any depth,
 * fingerprinted without following a link (a link's target, and the file
 * a link inside the project names, included).
 */
struct snap_run {
	struct strv dirs;         /* the run dirs there (relative) */
	struct strv files;        /* "fingerprint\trel", sorted by rel */
	bool capped;              /* more files than are looked at */
	bool cut;                 /* the search stopped at [jail] scan_limit */
	bool taken;               /* snap_run_look ran */
};
void snap_run_init(struct snap_run *);
void snap_run_free(struct snap_run *);
/**
 * Fingerprints PROJECT's run dirs, found breadth first among its first
 * LIMIT entries ([jail] scan_limit; 0: the default), and the NMORE dirs
 * MORE names ([jail] watch_ignored: relative, a glob per component), into
 * R (emptied first); nothing followed. With GATED, as the work of a
 * helper thread (thread_job_start): it holds the clone gate while it
 * allocates, letting go of it every 64 entries searched. STOP (may be
 * NULL) set: it goes no deeper, and what it found is not to be used.
 */
void snap_run_look(const char *project, char *const *more, size_t nmore,
    int64_t limit, bool gated, const atomic_bool *stop, struct snap_run *r);
/**
 * Into OUT, a line per file made, changed or removed in a run dir there
 * at START since (NOW), with what to do (up to 20, then counted); into
 * NOTES, that a cap cut the look short.
 */
void snap_run_compare(const struct snap_run *start,
    const struct snap_run *now, struct strv *out, struct strv *notes);

/*
 * What would blind the user's own git to a session's changes
 * (snap-blind.c): index entries marked skip-worktree or assume-unchanged,
 * replace refs (refs/replace/...). Looked at when the command starts and
 * when it ends; git reads the index with agentmux's settings (nothing
 * runs), refs are read without following a link.
 */
struct snap_worktree;
struct snap_blind {
	struct strv marked;       /* "S path" or "h path" (lower case: assume-unchanged) */
	struct strv replace;      /* "refs/replace/X\tvalue" */
	bool had_git;             /* the project had a .git dir */
	struct buf untr;          /* .git/index's untracked cache (UNTR), empty if none */
	int untr_read;            /* snap_index_ext's answer for it */
	int untr_rc;              /* what the end's check of it found: 1 not checked, 0 HIDDEN, -1 CAUSE */
	struct strv untr_hidden;  /* untracked files the cache hides from git status */
	char *untr_cause;         /* why the check could not tell */
	struct strv nmarked;      /* nested repositories' marks (snap_index_marks) */
	struct strv nexts;        /* and their index extensions: "len:repo" SIG sha-256 (hex), or "odd" */
	bool nested_read;         /* nmarked and nexts were read (snap_blind_read_end) */
	struct strv nuntr;        /* their changed untracked caches checked: "len:repo" then R (done), E cause, or H hidden file */
	struct buf fsmn;          /* .git/index's fsmonitor data (FSMN), empty if none */
	int fsmn_read;            /* snap_index_ext's answer for it */
	struct buf tree;          /* .git/index's cache-tree (TREE), empty if none */
	int tree_read;            /* snap_index_ext's answer for it */
};

void snap_blind_init(struct snap_blind *);
void snap_blind_free(struct snap_blind *);
/** The marks and replace refs of PROJECT's .git now, into START. */
void snap_blind_begin(const char *project, struct snap_blind *start);
/**
 * The marks of the index of each nested repository in PROJECT (REPOS:
 * their dirs, relative), into B's nmarked, and a hash of its untracked
 * cache, fsmonitor data and cache-tree into B's nexts ("odd" for one laid
 * out so that git reads what agentmux cannot); read without git.
 */
void snap_blind_nested(const char *project, const struct strv *repos,
    struct snap_blind *b);
/**
 * The git dir of the repository at REL in PROJECT: its .git dir, or the
 * dir its .git file names if that lies in PROJECT's .git/modules (a
 * submodule's), reached without a link; NULL if neither. Caller frees.
 */
char *snap_nested_gitdir_of(const char *project, const char *rel);
/**
 * The work tree of the submodule git dir PROJECT/REL (in .git/modules, at
 * any depth: a submodule whose name is not its path, or one nested in
 * another), as git finds it: its config's core.worktree (read beneath the
 * project, no link followed, no include), taken only if it lies in
 * PROJECT and its .git names REL back (snap_nested_gitdir_of). Relative
 * to PROJECT; NULL if none. Caller frees.
 */
char *snap_nested_module_worktree(const char *project, const char *rel);
/** Adds to OUT one line for each mark and replace ref that is not in START. */
void snap_blind_end(const char *project, const struct snap_blind *start,
    struct strv *out);
/** The same, with NOW read already (snap_blind_read_start); WT: a worktree session's, named in the lines. */
void snap_blind_compare(const struct snap_blind *start,
    const struct snap_blind *now, const struct snap_worktree *wt,
    struct strv *out);
/**
 * The untracked cache or the fsmonitor data of PROJECT's .git/index (and
 * of its nested repositories' indexes, snap_blind_nested) made or changed
 * since START (NOW as read at the end): dropped from the index, and said
 * into OUT; an untracked cache of the project's own index is said in red
 * if it hides untracked files from git status (or that cannot be told,
 * or it was laid out so that git reads what agentmux cannot), else
 * plainly into NOTES. A nested repository's extension laid out so is
 * dropped and said in red whatever it was at the start, and its
 * cache-tree made or changed is checked as snap_blind_tree checks.
 */
void snap_blind_untr(const char *project, const struct snap_worktree *wt,
    const struct snap_blind *start, const struct snap_blind *now,
    struct strv *out, struct strv *notes);
/**
 * The index file the blind checks look at: a worktree session's own (WT's
 * admin dir, which agentmux made and recorded; its .git file is never
 * read), else PROJECT/.git/index. Caller frees.
 */
char *snap_blind_index(const char *project, const struct snap_worktree *wt);
/**
 * The cache-tree of the index file INDEX (git reuses its tree ids at the
 * next commit) made or changed since START (NOW: at the end) is dropped:
 * to ALERTS when a cached tree disagreed with the entries or git would
 * read it otherwise than agentmux can, else to NOTES.
 */
void snap_blind_tree(const char *index, const struct snap_blind *start,
    const struct snap_blind *now, struct strv *alerts, struct strv *notes);
/*
 * The look of snap_blind_begin on BASE: INTO (emptied) gets the refs at
 * once and the marks when git ls-files is over, then DONE(ARG) runs. For
 * a worktree session (WT not NULL) the index is the worktree's own, in
 * the admin dir agentmux made, and the refs the shared git dir's. NULL
 * if there is nothing to wait for (no .git dir, or git could not run: a
 * warning is logged); INTO is then complete. snap_blind_read_free stops it.
 */
struct snap_blind_read;
/**
 * The same at the end of a session begun with START: if the untracked
 * cache changed, whether it hides files is found on BASE too (INTO's
 * untr_rc, untr_hidden, untr_cause) before DONE(ARG) runs; the nested
 * repositories NESTED (dirs relative to PROJECT; may be NULL) are read
 * as snap_blind_nested reads them, and each one's untracked cache that
 * changed is checked the same way, one after another (INTO's nuntr).
 */
struct snap_blind_read *snap_blind_read_end(struct event_base *,
    const char *project, const struct snap_worktree *wt,
    const struct strv *nested, const struct snap_blind *start,
    struct snap_blind *into, void (*done)(void *), void *arg);
/*
 * Index entries rewritten to hide a change (snap-stale.c): their stat
 * data matches the file, changed since SINCE (ms, snap_plant_clock), so
 * the user's git takes them as unchanged, but their object id is not the
 * content the end snapshot's TREE (in the own repository GITDIR) holds.
 * Both are read by git on BASE, the entries looked at on a helper
 * thread; DONE(ARG, ALERTS) gets one line for each
 * (ALERTS borrowed). The index of each nested repository in NESTED (dirs
 * relative to PROJECT; may be NULL) is looked at too, one after another,
 * against the files themselves (one the project ignores is not in the
 * snapshot). A repository whose check cannot run is said in ALERTS with
 * why, and the others are checked all the same. PROJGIT is the git dir
 * whose index is PROJECT's: a worktree session's admin dir (agentmux made
 * it; the .git file is not read), NULL for PROJECT/.git. NULL (nothing
 * to wait for) if there is no such git dir or git cannot run.
 * snap_stale_free stops it.
 */
struct snap_stale;
struct snap_stale *snap_stale_start(struct event_base *,
    const char *project, const char *projgit, int64_t since,
    const char *gitdir, const char *tree, const struct strv *nested,
    void (*done)(void *, struct strv *alerts), void *arg);
void snap_stale_free(struct snap_stale *);
/** The same on what git listed: INDEX (ls-files -s --debug -z) and TREE (ls-tree -r -z). */
void snap_stale_find(const char *project, int64_t since,
    const struct buf *index, const struct buf *tree, struct strv *out);
struct snap_session;
/** The own repository of a session's snapshots (borrowed), or NULL. */
const char *snap_session_gitdir(struct snap_session *);
struct snap_blind_read *snap_blind_read_start(struct event_base *,
    const char *project, const struct snap_worktree *wt,
    struct snap_blind *into, void (*done)(void *),
    void *arg);
void snap_blind_read_free(struct snap_blind_read *);

/*
 * The user's own history (snap-history.c): objects that existed when a
 * session started cannot be deleted or changed from inside the jail (each
 * git dir's objects are an overlay there, over the session's own upper
 * dir, whose new objects are checked and brought back); refs, HEAD and
 * reflogs as they were are kept in the session's dir, SESSDIR/history.
 */
struct snap_history;

/**
 * Keeps the refs and reflogs of PROJECT's git dir, its nested
 * repositories' and its submodules' (in .git/modules) and makes the
 * overlay dirs for their objects; ALERTS gets, to be said in red, how many
 * git dirs the bounds of the search left unprotected. NULL with *CAUSE
 * NULL if the project has no git dir (or none that can be protected:
 * NOTICES says why); NULL with *CAUSE on error.
 */
struct snap_history *snap_history_begin(const char *project,
    const char *sessdir, struct strv *notices, struct strv *alerts,
    char **cause);
/** The same for the git dir GITDIR (a worktree session's shared one). */
struct snap_history *snap_history_begin_gitdir(const char *gitdir,
    const char *sessdir, struct strv *notices, struct strv *alerts,
    char **cause);
/*
 * snap_history_begin (PROJECT NULL: snap_history_begin_gitdir's) as the
 * work of a helper thread (thread_job_start): it touches nothing but its
 * snap_history_start and allocates inside the clone gate only. STOP, set
 * from the loop, ends the walk for nested repositories at its next dir.
 */
struct snap_history_start {
	char *gitdir;
	char *project;            /* walked for nested repositories, or NULL */
	struct snap_dirmap *dirs; /* then: its dirs as the walk found them (take it) */
	char *sessdir;
	atomic_bool stop;
	bool find_only;           /* [jail] history = off: the git dirs are only found */
	struct strv found;        /* then: the git dirs the walk found (absolute) */
	struct snap_history *h;   /* as snap_history_begin returns it: take it */
	struct strv notices;
	struct strv alerts;
	char *cause;
};
/** For GITDIR, kept in SESSDIR (the arguments are copied). Caller frees. */
struct snap_history_start *snap_history_start_new(const char *gitdir,
    const char *project, const char *sessdir);
/** The work (ARG: a snap_history_start). */
void snap_history_start_run(void *arg);
/** Frees it, with its history unless taken (H set to NULL). NULL: a no-op. */
void snap_history_start_free(struct snap_history_start *);
/** The history kept in SESSDIR by an earlier snap_history_begin, or NULL. */
struct snap_history *snap_history_open(const char *sessdir);
/*
 * GITDIR is one whose top the jail sees read only (a main-tree session's
 * .git, a worktree session's shared git dir): no file there, and no dir
 * made there later, is the session's. Kept in the history's dir for an
 * end after a crash.
 */
void snap_history_top_ro(struct snap_history *, const char *gitdir);
/*
 * A worktree session's end, in its worktree's own git dirs: its HEAD back
 * on its branch, submodule git dirs made there moved aside, links,
 * special files and files too big for a ref removed, each told into
 * ALERTS; with what the live watch of H did (NULL: none, history = off).
 * snap_history_end does it; a session without a history calls it itself.
 */
void snap_history_worktree_end(const struct snap_history *h,
    int64_t session, struct strv *alerts);
void snap_history_free(struct snap_history *);
/** How many git dirs are protected; the overlay of the Ith (borrowed paths). */
size_t snap_history_count(const struct snap_history *);
void snap_history_overlay(const struct snap_history *, size_t i,
    const char **path, const char **upper, const char **work);
/**
 * Brings the objects the session's git wrote so far back into the git
 * dirs (each checked: it is what its name is the hash of); a batch at a
 * time, packs indexed in the background on BASE. False if it
 * stopped to let the loop go on: call again soon.
 */
bool snap_history_import(struct snap_history *, struct event_base *base);
/**
 * Watches for objects the session's git writes (inotify, no link
 * followed): a descriptor (the history's own) to read with
 * snap_history_watch_read when it is readable; -1 if there can be none
 * (then import on a timer).
 */
int snap_history_watch(struct snap_history *);
/**
 * A worktree session's git dirs that its jail can write (WT's admin dir,
 * its branch's ref and reflog dirs, in the git dir the user's own git
 * reads), watched too, on the fd snap_history_watch gave: a link, FIFO,
 * socket or device made there (git makes none; the user's git would
 * follow a link to /dev/zero there, or wait on a FIFO) is removed as soon
 * as snap_history_watch_read hears of it, never followed, and told at the
 * end. The end's walk of the same dirs stays (events can be lost).
 */
void snap_history_watch_worktree(struct snap_history *,
    const struct snap_worktree *);
/** Reads what the watch saw: true if the session's git may have written objects. */
bool snap_history_watch_read(struct snap_history *);
/**
 * Whether an import should still be tried on a timer: there is no watch
 * (or a dir could not be watched), a pack is being indexed, or the host
 * refused a write.
 */
bool snap_history_busy(const struct snap_history *);
/**
 * Once the jail is gone: every object left is brought back (packs indexed
 * on BASE, one at a time), then reflog entries the session removed put
 * back, refs it deleted (and tags it moved) reported in WARNINGS; what was
 * refused is in ALERTS. DONE(ARG, ALERTS, WARNINGS) says it is over (the
 * lists are borrowed for the call); it may come before this returns, and
 * may free the history.
 */
typedef void (*snap_history_end_cb)(void *, struct strv *alerts,
    struct strv *warnings);
void snap_history_end(struct snap_history *, struct event_base *base,
    int64_t session, snap_history_end_cb done, void *arg);
/* Its git dirs' end, if on a helper thread, waited for; what follows it goes on on the loop. */
void snap_history_end_wait(struct snap_history *);
/*
 * At its end, LOOKED(ARG) is called once every git dir was looked at and
 * mended (refs, reflogs, index, shadows), before what to keep is kept:
 * on the loop, or inside snap_history_end if that ran there.
 */
void snap_history_end_looked(struct snap_history *, void (*looked)(void *),
    void *arg);
/** True if objects of the session may still need bringing back. */
bool snap_history_pending(const struct snap_history *);
/**
 * Sessions in DATA_DIR that ended without agentmux (a crash, SIGKILL) and
 * left objects unbrought: each is finished as snap_history_end would
 * (unless it still runs in a live agentmux), what was found recorded as
 * its events. Runs on BASE, one session after another, and returns at
 * once: snap_history_recovering says while it runs. Returns how many
 * sessions it looks at.
 */
int snap_history_recover(struct store *, struct event_base *base,
    const char *data_dir);
/** How many snap_history_recover runs are not over (the store must outlive them). */
int snap_history_recovering(void);
/**
 * A session's start on PROJECT while sessions of it are still brought
 * back (their objects imported into its .git) waits: NULL if none is;
 * otherwise *SESSION (may be NULL) gets one of them, and DONE(ARG) runs
 * from the loop once none is left (never from inside this call). The
 * wait is freed by then; snap_history_wait_free cancels it before.
 */
struct snap_history_wait;
struct snap_history_wait *snap_history_recover_wait(const char *project,
    int64_t *session, void (*done)(void *), void *arg);
/** Cancels a wait whose DONE has not run; NULL is a no-op. */
void snap_history_wait_free(struct snap_history_wait *);

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
	char **nonfiles;          /* saved files now a socket, FIFO or device: */
	size_t nnonfiles;         /* recorded as deleted */
};

void snap_result_clear(struct snap_result *);
/** What to tell of paths too long for git in the snapshot's MODES (its top dirs, quoted), or NULL; caller frees. */
char *snap_too_long_message(const char *modes);

/** Called with a snapshot's result, or ERROR (then RESULT is NULL). */
typedef void (*snap_done_cb)(void *arg, const struct snap_result *result,
    const char *error);

/**
 * Snapshots of one running session of PROJECT, on BASE: opens the
 * repository, or makes it on BASE (snapshots asked for meanwhile wait for
 * it; if it cannot be made, they fail with why). Borrows everything.
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
 * How many freed ones still take their snapshots (or have a repack's shell
 * to reap): a process runs its loop until none is left before it closes
 * the store.
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
 * For a session whose tree nothing can write before its command runs (a
 * worktree session's new worktree, which no other jail sees): MS
 * (realtime, ms) is when the command was let go. The end snapshot then
 * distrusts the stat data cached from then on (less the kernel's coarse
 * clock's lag), not from the session's start: in a worktree session the
 * checkout comes after the start, and the end would hash every file again.
 * Within that, an entry whose file's ctime is still the cached one, to the
 * nanosecond, and earlier than MS is trusted (snap_index_verify).
 */
void snap_session_set_first_write(struct snap_session *, int64_t ms);
/** A worktree that agentmux's own git worktree add just checked out (borrowed strings). */
struct snap_checkout {
	const char *base;     /* the commit it was checked out from (hex) */
	const char *common;   /* the project's git dir, which holds its objects */
	const char *index;    /* the index git's checkout wrote (in its admin dir) */
	/* Learnt while git worktree add ran (struct snap_worktree's); NULL, false: not. */
	const char *tree;
	const struct strv *converted;   /* NULL: git check-attr was not asked */
};
/**
 * The start snapshot of such a worktree takes the ids of the files git
 * wrote from the index git wrote (checked against the commit's tree, and
 * each file against what the index cached), instead of reading and
 * hashing them again: the command is let go once the tree is saved, and
 * those files' contents are brought into agentmux's own repository from
 * the project's, each checked by its id, before the snapshot is done.
 * Copied; before the start snapshot is asked for.
 */
void snap_session_set_checkout(struct snap_session *,
    const struct snap_checkout *);
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
/**
 * Holds the snapshots queued from now on (and keeps a freed one) until as
 * many releases: what they record must wait for work outside (the end
 * of the session's git history).
 */
void snap_session_hold(struct snap_session *);
void snap_session_release_hold(struct snap_session *);

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
	const char *to;           /* SNAP or "worktree"; NULL: worktree (the last snapshot if it is gone) */
	bool stat;
	bool color;
	bool quote_names;         /* git quotes every byte of a name past ASCII (a patch for a pipe) */
	char *const *paths;       /* NULL-terminated, as typed; may be NULL */
	int out_fd;
	char **alert;             /* if not NULL: set to what to tell in red (paths too long for git), or NULL; caller frees */
	bool *gone;               /* if not NULL: set when the project dir is gone (a discarded worktree) and TO defaulted to the last snapshot */
};

/** Writes the diff to OUT_FD. -1 with *CAUSE. */
int snap_diff(struct store *, const struct config *, int64_t session,
    const struct snap_diff_opts *, char **cause);

struct snap_undo_opts {
	const char *to;           /* SNAP; NULL: start */
	bool dry_run;
	bool refs;                /* also reset branch tips, HEAD and the index */
	bool force;               /* even if another session changed the same tree meanwhile */
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
	bool force;               /* a conflict takes the session's version */
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
/**
 * At session start, before the jail: how config dir or file HOST is now,
 * kept under ENTRY (the session's overlay/<n>) so that applying merges
 * three ways: a time mark, then copies of its small regular files (never
 * through a link; bounded in size and count). -1 with *CAUSE.
 */
int snap_confdiff_base(const char *host, const char *entry, bool file,
    char **cause);
/** Pending config changes of SESSION (scans its overlays); -1 on error. */
int snap_confdiff_pending(struct store *, int64_t session);
/**
 * At session end: PERSIST (enum config_persist) always applies everything, never discards
 * everything, review leaves it for the user. Returns how many changed.
 */
int snap_confdiff_session_end(struct store *, const struct config *,
    int64_t session, int persist, char **cause);
/*
 * The same, off the loop (what it reads and merges is the jail's): a
 * child process applies or discards, the server records each result in
 * ST as it comes, and DONE(ARG, N, CAUSE) runs on BASE's loop once over
 * (N as above; -1 with CAUSE, borrowed, if not all went in or it took
 * too long). The child is killed after a timeout. PERSIST must be always
 * or never. NULL with *CAUSE if it cannot start. ST must stay open until
 * snap_confdiff_endings() is 0.
 */
struct snap_confdiff_end;
typedef void (*snap_confdiff_end_cb)(void *arg, int n, const char *cause);
struct snap_confdiff_end *snap_confdiff_end_start(struct event_base *,
    struct store *st, int64_t session, int persist,
    snap_confdiff_end_cb done, void *arg, char **cause);
/** DONE is not called any more (its ARG is going); the run goes on to its end. */
void snap_confdiff_end_detach(struct snap_confdiff_end *);
/** How many session-end runs are not over yet. */
int snap_confdiff_endings(void);

/* Line-level redaction of secrets (snap-redact.c). */

/** Values that must never be shown: [secret] values from env and files; caller frees. */
char **snap_redact_secrets(const struct config *, size_t *n);
/** LINE with secret-looking values replaced; caller frees. */
char *snap_redact_line(const char *line, char *const *secrets, size_t nsecrets);

/* ---- a main-tree session's .git in its jail (snap-jailgit.c) ---- */

struct snap_jailgit;

/**
 * Makes PRIV anew as the dir a main-tree session's jail sees at
 * PROJECT/.git, for GITDIR (that .git) seen at AT in the jail: HEAD and
 * the index copies of GITDIR's, modules an empty dir (the jail binds
 * GITDIR's over it), every other name at its top (and packed-refs,
 * FETCH_HEAD, shallow) a link to AT/NAME; logs, modules, hooks, info and
 * worktrees are made in GITDIR if missing. NULL with *CAUSE (also when GITDIR's HEAD is none git reads).
 */
struct snap_jailgit *snap_jailgit_make(const char *gitdir, const char *priv,
    const char *at, char **cause);
/**
 * The jail's HEAD, index and packed-refs brought back to GITDIR where its
 * git wrote them: not if GITDIR's changed meanwhile (the user's git), nor
 * a HEAD git cannot read, nor an index past 64 MiB or with holes; each
 * told in ALERTS, once for the same. An index that only got new times is
 * not written again; packed-refs is merged with GITDIR's. The jail's
 * packed-refs given again where GITDIR's changed.
 */
void snap_jailgit_sync(struct snap_jailgit *, struct strv *alerts);
/**
 * Whether a sync has to be tried again a moment later: a lock held (the
 * user's git's packed-refs.lock or index.lock, or the jail's), which no event may tell
 * the end of (a lock git rolls back is deleted, not renamed).
 */
bool snap_jailgit_waiting(const struct snap_jailgit *);
/**
 * The last sync once the jail is gone, and what it left under way there
 * (a merge, rebase, cherry-pick, revert or bisect, not carried over) told.
 * A lock the user's git holds is waited for 2 s: on a helper thread,
 * GATED if inside clone_gate_enter (the gate is let go while it waits).
 */
void snap_jailgit_end(struct snap_jailgit *, struct strv *alerts,
    bool gated);
/** PRIV. */
const char *snap_jailgit_dir(const struct snap_jailgit *);
/** PRIV removed, once its jail is gone (what it held was brought back). */
void snap_jailgit_remove(struct snap_jailgit *);
void snap_jailgit_free(struct snap_jailgit *);

/* ---- worktree sessions (snap-worktree.c) ---- */

/** A session's linked worktree of a project; the strings are owned. */
struct snap_worktree {
	char *path;           /* the linked worktree, under the data dir */
	char *project;        /* the main working tree it was made from */
	char *common;         /* the project's git dir, shared: PROJECT/.git */
	char *admin;          /* the worktree's own git dir: COMMON/worktrees/NAME */
	char *branch;         /* agentmux/ID/NAME: its own ref dir */
	char *base;           /* the commit it started from (hex) */
	/*
	 * What its start snapshot needs of BASE, learnt while git worktree
	 * add ran: its tree (hex; NULL: not learnt), and, if ATTRS_KNOWN,
	 * which of its files an attribute has git's checkout convert (git
	 * check-attr as snap_take asks it).
	 */
	char *tree;
	bool attrs_known;
	struct strv converted;
};

/** What making a worktree copied by .worktreeinclude (borrowed in the callback). */
struct snap_worktree_made {
	bool added;           /* the worktree exists (else WT was cleared) */
	size_t copied;
	struct strv skipped;  /* not regular files, behind a link, or unreadable */
	struct strv over;     /* past the 1 GiB of data it may copy in all */
};
/** ERROR is NULL if the worktree was made; both are borrowed. */
typedef void (*snap_worktree_cb)(void *arg,
    const struct snap_worktree_made *, const char *error);
struct snap_worktree_make;
/**
 * Makes PATH (which must not exist) a linked worktree of PROJECT's
 * repository on the new BRANCH (agentmux/ID/NAME, so that the dir
 * refs/heads/agentmux/ID holds its refs alone), from REF (NULL: HEAD),
 * then copies into it the untracked files of the project that the
 * project's .worktreeinclude (gitignore syntax) names: regular files only,
 * never through a link on either side, no more than 1 GiB of data in all
 * (holes of sparse files are kept, and cost nothing). git runs without
 * hooks, fsmonitor, filter drivers or the caller's GIT_*. All of it runs
 * on BASE (git through core's runner, the copies a slice a loop turn);
 * DONE(ARG, ...) is told once, and the job then frees itself. *WT is
 * filled (snap_worktree_clear frees it) and must outlive the job. SCRATCH
 * is a private dir for a temporary file. NULL with *CAUSE if it cannot
 * start (DONE is then never told).
 */
struct snap_worktree_make *snap_worktree_make_start(struct event_base *base,
    const char *project, const char *path, const char *branch,
    const char *ref, const char *scratch, struct snap_worktree *wt,
    snap_worktree_cb done, void *arg, char **cause);
/** Stops a job that has not told DONE yet (its git killed); NULL is a no-op. */
void snap_worktree_make_free(struct snap_worktree_make *);
/** What DONE is told of a job stopped by snap_worktree_make_stop. */
#define SNAP_WORKTREE_STOPPED "stopped before its worktree was ready"
/**
 * Asks a job to stop where it safely can: DONE is told, with
 * SNAP_WORKTREE_STOPPED, in this call if it waits for the worktrees' lock
 * or runs a git that only reads (killed), else once its git worktree add
 * or its current copy slice is done. True if it waits for git worktree
 * add (which may take a while: worth saying); NULL is a no-op.
 */
bool snap_worktree_make_stop(struct snap_worktree_make *);
void snap_worktree_clear(struct snap_worktree *);
/**
 * The worktree of SESSION, from its record beside it under DATA_DIR's
 * worktrees/: fills *WT and *ROOT (its parent dir); -1 with *CAUSE if the
 * session has none.
 */
int snap_worktree_find(const char *data_dir, int64_t session,
    struct snap_worktree *wt, char **root, char **cause);
/** The sessions with a worktree under DATA_DIR's worktrees/ (a record beside it), into *IDS (caller frees). */
void snap_worktree_sessions(const char *data_dir, int64_t **ids, size_t *n);
/**
 * The worktree dirs under DATA_DIR's worktrees/ that are ours (real dirs
 * owned by us) but have no session record beside them (their start
 * failed before it was written, or is writing it now), added to DIRS as
 * full paths.
 */
void snap_worktree_orphans(const char *data_dir, struct strv *dirs);
/**
 * WT's own HEAD (in the admin dir agentmux made, COMMON/worktrees/NAME,
 * which the jail can write) put back on the session's branch if it names
 * anything else (the user's main: 'git switch main' in the main tree is
 * refused), is detached, broken or a link. *WAS says what the session
 * made of it (NULL: it was right, or the worktree is gone). DRY: only
 * told. -1 with *CAUSE (and *WAS) if it could not be put back.
 */
int snap_worktree_head_fix(const struct snap_worktree *, bool dry, char **was,
    char **cause);
/**
 * The git dirs of WT's submodules (ADMIN/modules, in the admin dir the
 * jail can write, made without one by git worktree add: all of it is the
 * session's) moved aside, unfollowed, under a name git never reads: a
 * 'git submodule update' in the worktree would take one up again, running
 * its hooks and obeying its config. *MOVED: where to (NULL: none was
 * there). -1 with *CAUSE if it could not be moved.
 */
int snap_worktree_modules_fix(const struct snap_worktree *, char **moved,
    char **cause);
/**
 * Links, FIFOs, sockets and devices in WT's admin dir, its branch's
 * reflog dir and its branch's ref dir (which the jail can write; git makes
 * none there) removed, never followed: the user's git in the worktree
 * appends its reflog line through a logs/HEAD link, and blocks on a FIFO
 * or reads /dev/zero through a link (git branch in the main tree too). *TOLD: what was there (quoted, with a link's target),
 * or NULL. -1 if one could not be removed (*TOLD says which).
 */
int snap_worktree_odd_fix(const struct snap_worktree *, char **told);
/** 1 if WT's branch is merged into INTO (NULL: the main tree's HEAD), 0 if not, -1 if git cannot tell. */
int snap_worktree_merged(const struct snap_worktree *, const char *into);

enum snap_worktree_how {
	SNAP_WORKTREE_MERGE,      /* a merge commit */
	SNAP_WORKTREE_SQUASH,     /* one commit of all its changes */
	SNAP_WORKTREE_APPLY,      /* its changes staged, not committed */
};

/**
 * Brings WT's branch into the main tree's branch (which must be INTO if
 * given), with the user's git but no hooks. Refuses a main tree with
 * uncommitted changes, and (LIMITS given) a file larger than its
 * file_size or files more than the disk has free above its disk_reserve;
 * a conflict is left as git leaves it, and *CAUSE names the files and
 * how to go back. *DONE says what was done.
 */
int snap_worktree_merge(const struct snap_worktree *, int64_t session,
    enum snap_worktree_how how, const char *into,
    const struct config_limits *limits, char **done, char **cause);
/**
 * Whether restoring KEPT's branch at TIP into a worktree under WHERE may
 * write what its commits hold: -1 with *CAUSE, naming them, if a file
 * the branch made or changed since its base is larger than LIMITS's
 * file_size or they take more than WHERE's disk has free above its
 * disk_reserve (a session commits files it never wrote).
 */
int snap_worktree_restore_check(const struct snap_worktree *kept,
    const char *tip, const char *where, const struct config_limits *limits,
    char **cause);
/**
 * The record of SESSION's discarded worktree (discard keeps it under
 * DATA_DIR's sessions/ID/) into *WT: the main project, the worktree's
 * path, its branch and base, and *TIP the commit its branch was at
 * (NULL if unknown; caller frees). -1 with *CAUSE if there is none.
 */
int snap_worktree_kept(const char *data_dir, int64_t session,
    struct snap_worktree *, char **tip, char **cause);
/**
 * Why a worktree session whose worktree is not there has no record of a
 * discard either, in a few words: its start is still making it (RUNNING),
 * its start ended before it was made (no snapshot: the start's first one
 * is taken once the worktree is there), else "discarded" (by an older
 * agentmux, which kept no record).
 */
const char *snap_worktree_absent(bool running, int64_t nsnapshots);
/**
 * Makes sure the commit TIP of SESSION's discarded worktree (KEPT, from
 * snap_worktree_kept) is in its project's repository: if a git gc there
 * pruned it, the commits discard packed beside the record are read back
 * in by git index-pack. -1 with *CAUSE naming what is gone.
 */
int snap_worktree_bring_back(const char *data_dir, int64_t session,
    const struct snap_worktree *kept, const char *tip, char **cause);
/**
 * Removes WT's worktree, every ref of its branch's dir and ROOT; snapshots
 * stay. First its record and its branch's commits (packed, at most
 * PACK_MAX bytes, 0: any) are kept for restore: if they cannot be, -1
 * with *CAUSE and nothing is removed; NO_KEEP keeps no commits (and
 * does not refuse).
 */
int snap_worktree_discard(const struct snap_worktree *, const char *root,
    int64_t pack_max, bool no_keep, char **cause);

#endif
