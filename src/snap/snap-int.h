/* Internals of the snapshot module (src/snap), shared by its files: repositories, snapshot jobs. */
#ifndef AGENTMUX_SNAP_INT_H
#define AGENTMUX_SNAP_INT_H

#include <sys/stat.h>
#include <sys/types.h>

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/core.h"
#include "snap/snap.h"

struct event_base;

/* The id length of what agentmux's own pack writer writes (sha1). */
#define SNAP_PACK_OID 20
/* OID (SNAP_PACK_OID bytes) in hex, into HEX (2 * SNAP_PACK_OID + 1 bytes). */
void snap_pack_hex(const unsigned char *oid, char *hex);

/* ---- repositories (snap-repo.c) ---- */

enum snap_env {
	SNAP_ENV_TREE,    /* the work tree through the private index, raw bytes */
	SNAP_ENV_DB,      /* agentmux's own repository: refs and objects */
	SNAP_ENV_SHOW,    /* like DB, but in the user's language, for output */
	SNAP_ENV_PROJECT, /* the project's git dir (its refs), read as hostile */
};
#define SNAP_NENV 4

/*
 * A project and agentmux's own snapshot repository for it, in the data
 * dir, out of every jail's reach: snapshots are written there only, with
 * its own index as the stat cache. The project's git dir, if any, is
 * never written by snapshotting; it is read (as hostile input) for its
 * ignore rules, the user's tracked paths and, at a session's start, refs.
 */
struct snap_repo {
	char *worktree;       /* top level of the project (real path) */
	char *gitdir;         /* agentmux's own repository for the project */
	char *format;         /* its object format: sha1 */
	char *projgit;        /* the project's git dir, or NULL outside git */
	char *projcommon;     /* where the project's refs live */
	char *projindex;      /* the user's index file */
	char *private;        /* our own dir in the runtime dir */
	char *index;          /* the private index, in PRIVATE */
	char *seed;           /* the own repository's index: the stat cache */
	bool seeded;
	struct stat synced;   /* the private index when last copied from or to the seed */
	int umask;            /* for files git writes into the project */
	int timeout;          /* > 0: git run to the end is killed after so many seconds */
	int64_t reserve;      /* [limits] disk_reserve: free space a snapshot leaves on its disk */
	int reserve_pct;      /* or this share of it, if not 0 */
	char *live_excludes;  /* what git reads from the own repository's info/exclude */
	char *ignore;         /* the ignore rules frozen at the session's start, or NULL */
	char *start_tree;     /* the start snapshot's tree (frozen snapshots begin from it) */
	char *last_commit;    /* the last commit this process made for the chain */
	char *last_modes;     /* and the modes it recorded */
	struct strv env[SNAP_NENV]; /* per enum snap_env */
	bool worktree_gone;         /* WORKTREE is gone (a discarded worktree session): git runs in GITDIR */
};

/*
 * Finds the project of DIR (the nearest directory holding .git, else DIR
 * itself) and agentmux's own repository for it (made if need be); TAG
 * names the private dir (one per chain).
 */
struct snap_repo *snap_repo_open(const char *dir, const struct config *cf,
    const char *tag, char **cause);
/* Opens the own repository GITDIR recorded for a session of WORKTREE (USE: as a use, which gc sees). */
/* R's project dir is gone (a discarded worktree): git runs in its own repository, for what needs no work tree. */
void snap_repo_worktree_gone(struct snap_repo *);
struct snap_repo *snap_repo_reopen(const char *gitdir, const char *worktree,
    const struct config *cf, const char *tag, bool use, char **cause);
void snap_repo_free(struct snap_repo *);
/* The own repository's path for the project WORKTREE; caller frees; NULL with *CAUSE. */
char *snap_repo_path(const char *worktree, char **cause);
/*
 * Writes one loose object of TYPE (DATA, LEN bytes) into GITDIR, one of
 * agentmux's own repositories (nothing writes there but its own gits), as
 * git hash-object -w would: deflated at zlib's fastest level, under a
 * temporary name in its fan-out dir, linked to its id's name, read-only;
 * one there already has its time freshened (a prune spares it). HEX (41
 * bytes) gets its SHA-1 id. -1 with *CAUSE.
 */
int snap_repo_write_object(const char *gitdir, const char *type,
    const void *data, size_t len, char *hex, char **cause);
/*
 * Adds to CONVERTED each path git check-attr -z -a's OUT names with an
 * attribute that bears on what git's checkout writes (text, eol, crlf,
 * ident, filter, working-tree-encoding: set, a value or unset), once.
 */
void snap_attrs_converted(const struct buf *out, struct strv *converted);
/* Makes the private index a fresh copy of the seed (or empty). */
int snap_repo_seed(struct snap_repo *, char **cause);
/* Copies the private index back as the own repository's (the stat cache). */
void snap_repo_save_index(struct snap_repo *);
/*
 * Writes the excludes git reads from the own repository when a snapshot
 * takes the project's ignore rules as they are now: the project's
 * .git/info/exclude (read without following a link or waiting on a
 * FIFO), or [snapshots] exclude outside git. Their text goes to *TEXT
 * (caller frees).
 */
int snap_repo_live_excludes(struct snap_repo *, const struct config *,
    char **text, char **cause);
/* The empty tree's id in this repository's object format; borrowed. */
const char *snap_repo_empty_tree(struct snap_repo *);
/* The empty blob's id (always in the own repository); borrowed. */
const char *snap_repo_empty_blob(struct snap_repo *);
/* The commit the project's HEAD points to, or NULL (unborn, outside git); *SYMREF gets "refs/heads/X" or NULL. Caller frees. */
char *snap_repo_head(struct snap_repo *, char **symref);
/*
 * Runs git with ARGS (NULL-terminated) in ENV, to the end, with INDEX (NULL:
 * the private one) as its index, INPUT on stdin, stdout into OUT or onto
 * OUT_FD (>= 0). Returns the exit status; -1 with *CAUSE if it did not run.
 */
int snap_git_status(struct snap_repo *, enum snap_env, const char *index,
    const char *const *args, const struct buf *input, struct buf *out,
    struct buf *err, int out_fd, char **cause);
/* RLIMIT_DATA of every git agentmux runs (snap-repo.c says why; a test hook). */
extern uint64_t snap_git_mem;
/*
 * The blobs IDS (a hex id a line) that a worktree's start snapshot took
 * from git's checkout, to be copied from the project's git dir COMMON:
 * written down in R's own repository, locked while this process copies
 * them. The lock's fd (for snap_repo_borrow_end), -1 (logged).
 */
int snap_repo_borrow_begin(struct snap_repo *r, const char *common,
    const struct buf *ids);
/* They are copied, or their failure told: the list goes; FD -1 is a no-op. */
void snap_repo_borrow_end(struct snap_repo *r, int fd);
/*
 * Copies them in, blocking, if an agentmux that was copying them ended
 * first (killed): its list is there and nobody holds its lock. Else a
 * no-op. What fails is logged, and the list goes either way.
 */
void snap_repo_borrow_resume(struct snap_repo *r);
/*
 * An unnamed file in R's objects/pack for a pack on its way in
 * (O_TMPFILE, else made and unlinked at once): nothing is left behind
 * whatever happens. -1 with errno if it cannot be made.
 */
int snap_repo_pack_tmpfile(struct snap_repo *r);
/* How long git index-pack may take for a pack of SIZE bytes (snap-import.c). */
int snap_import_pack_secs(off_t size);
/* Runs git with ARGS (NULL-terminated) in ENV, to the end; -1 with *CAUSE unless it exits 0. */
int snap_git(struct snap_repo *, enum snap_env, const char *const *args,
    const struct buf *input, struct buf *out, char **cause);
/* The environment for git outside any repository (our settings, no GIT_*); caller frees. */
void snap_env_plain(struct strv *env);
/* Runs git (ARGV) in / with that environment, to the end; its exit status in *STATUS, -1 with *CAUSE if it could not run. */
int snap_git_outside(char *const *argv, struct buf *out, struct buf *err,
    int *status, char **cause);
/* The same with INPUT (LEN bytes) on its standard input. */
int snap_git_outside_input(char *const *argv, const char *input, size_t len,
    struct buf *out, struct buf *err, int *status, char **cause);
/*
 * KEY's value in the config text TEXT (LEN bytes) as git reads it (no
 * include followed, nothing run): its first line, or NULL if unset, not
 * read, or empty. Caller frees.
 */
char *snap_git_config_get(const char *text, size_t len, const char *key);
/*
 * Starts git (ARGV, argv[0] "git") on BASE, on the repository GITDIR
 * alone, or outside any if GITDIR is NULL; INPUT (may be NULL) on stdin.
 * See proc_start.
 */
struct proc *snap_git_plain_spawn(struct event_base *, const char *gitdir,
    char *const *argv, const struct buf *input, proc_cb done, void *arg,
    char **cause);
/* Runs git with ARGS on the repository GITDIR alone (no work tree); -1 with *CAUSE. */
int snap_git_plain(const char *gitdir, const char *const *args, char **cause);
/* The same with INPUT on stdin (may be NULL) and stdout into OUT (may be NULL). */
int snap_git_plain_io(const char *gitdir, const char *const *args,
    const struct buf *input, struct buf *out, char **cause);
/*
 * The same on BASE's loop: DONE(proc, ARG) once it has exited (stdout into
 * OUT_FD if >= 0, else kept for proc_out). NULL with *CAUSE.
 */
struct proc *snap_git_plain_start(struct event_base *, const char *gitdir,
    const char *const *args, const struct buf *input, int out_fd,
    proc_cb done, void *arg, char **cause);
/* Like snap_git, but the command's stdout goes to FD. */
/* Runs git on R's work tree, handing CHUNK its stdout as it comes: -1 with *CAUSE. */
int snap_git_chunks(struct snap_repo *, enum snap_env, const char *const *args,
    void (*chunk)(void *, const char *, size_t), void *arg, char **cause);
int snap_git_fd(struct snap_repo *, enum snap_env, const char *const *args,
    int fd, char **cause);
/* Starts git asynchronously; see proc_start. */
struct proc *snap_git_start(struct event_base *, struct snap_repo *,
    enum snap_env, const char *const *args, const struct buf *input,
    void (*line)(void *, const char *, size_t), proc_cb done,
    void *arg, char **cause);
/*
 * Starts git with its stdin held open: proc_input gives it its input
 * later, so its start-up overlaps with what decides that input.
 */
struct proc *snap_git_start_held(struct event_base *,
    struct snap_repo *, enum snap_env, const char *const *args,
    proc_cb done, void *arg, char **cause);
/* The first line of git's complaint (ERR) about CMD exiting ST, for a message; caller frees. */
char *snap_git_complaint(const char *cmd, const struct buf *err, int st);
/*
 * -1 with *CAUSE naming the other session and the files it changed, if a
 * session in the same tree (the store's project) ran while SESSION did and
 * its snapshots changed files (snap-overlap.c).
 */
int snap_overlap_check(struct store *, struct snap_repo *, int64_t session,
    char **cause);
/*
 * For diff: one line per file changed from tree FROM to tree TO (and
 * NAMED, given ARG) that another session sharing SESSION's tree changed
 * while it ran, "M  PATH  [also changed by session N]", into TEXT.
 */
int snap_overlap_marks(struct store *, struct snap_repo *, int64_t session,
    const char *from, const char *to, bool (*named)(const char *, void *),
    void *arg, struct buf *text);
/* Makes REL under DIRFD one component at a time, never through a link; its fd, or -1 with errno. */
int snap_worktree_mkdirs(int dirfd, const char *rel, mode_t mode);
/* git's error output as one line for a message; caller frees. */
char *snap_git_error(const char *what, struct proc *);
/* Copies what is left of IN to OUT; -1 with errno. */
int snap_copy_fd(int in, int out);
/* Copies SRC to DST (created 0600); -1 with *CAUSE. */
int snap_copy_file(const char *src, const char *dst, char **cause);
/*
 * Merges THEIRS (the session's version) into OURS (the host's now) against
 * BASE (how it was at the session's start; NULL or empty: none): key by
 * key if JSON and all parse, else line by line (git merge-file on copies
 * in TMPDIR). 0 with RESULT, 1 with what conflicts in CONF (keys, or the
 * conflicting hunks' lines), -1 with *CAUSE (snap-confmerge.c).
 */
int snap_confmerge(const struct buf *base, const struct buf *ours,
    const struct buf *theirs, bool json, const char *tmpdir,
    struct buf *result, struct strv *conf, char **cause);

/* ---- reading the index file (snap-index.c) ---- */

/*
 * The tree git keeps for the whole of the index file PATH (its cache-tree,
 * which git invalidates whenever an entry changes): 1 with *TREE (hex,
 * caller frees) and its count of *ENTRIES when it is valid, 0 when it is
 * not (or the index is split or sparse), -1 if the file is unreadable.
 */
int snap_index_tree(const char *path, size_t oidlen, char **tree,
    int64_t *entries);

/* One entry of an index file, for snap_index_each (borrowed for the call). */
struct snap_index_ent {
	const char *name;
	size_t namelen;
	uint32_t mode;
	const unsigned char *oid;     /* raw, OIDLEN bytes */
	uint32_t ctime;               /* seconds */
	uint16_t flags;
	uint16_t xflags;
};

/* Calls FN for each entry of the index file PATH; -1 if it is unreadable or FN says -1. */
int snap_index_each(const char *path, size_t oidlen,
    int (*fn)(void *, const struct snap_index_ent *), void *arg);
/* The same for an index file read into FILE (the user's, read safely). */
int snap_index_each_buf(const struct buf *file, size_t oidlen,
    int (*fn)(void *, const struct snap_index_ent *), void *arg);
/*
 * Calls FN for each entry of the user's index, "index" in the git dir
 * DIRFD (read without following a link, MAX bytes at most), as git reads
 * it: a split index (core.splitIndex) merged with its shared part
 * (sharedindex.ID beside it, whose checksum must be ID), the replaced
 * entries, the deleted ones gone, in git's order. -1 with *CAUSE (what
 * is wrong with it: "it is ...") if it cannot be read so, or FN says -1.
 */
int snap_index_user_each(int dirfd, size_t max, size_t oidlen,
    int (*fn)(void *, const struct snap_index_ent *), void *arg,
    char **cause);
/*
 * The entries of the index FILE (ids of OIDLEN bytes) that git's checkout
 * (git checkout -- ., git restore, git stash; git checkout -m from its
 * resolve-undo record) would write where git never adds one, into BAD as
 * they are: a path with a part ".git" (any case, NTFS's forms too:
 * .git/hooks/post-checkout, then run on the host), "..", "." or none, a
 * leading '/', a link named .gitmodules, one below another entry (a file
 * or a link). 1 if any, 0 if none, -1 if FILE cannot be read as git reads
 * it, the same way (cut short, an unknown version, a name whose length in
 * its flags is not where its NUL is, extended flags in version 2, a name
 * longer than PATH_MAX) or it holds entries elsewhere (split: in another
 * file; sparse: a dir for the entries below it; an offset table, IEOT,
 * which git's threaded reader follows: review 8).
 */
int snap_index_paths_check(const struct buf *file, size_t oidlen,
    struct strv *bad);
/*
 * The index of the git dir GITFD (SAID for a message; ids of OIDLEN
 * bytes), if written since SINCE (NULL: whenever), checked as the jail's
 * is (snap_index_paths_check): one it refuses or cannot read so is kept
 * as KEEPDIR's KEEP (agentmux's own dir) and taken away, told in red into
 * ALERTS (git reads none then: 'git reset' makes one from HEAD and keeps
 * the files); one it takes is left as it is. The end's, for each git dir
 * the session could write an index in.
 */
void snap_hist_index_refuse(int gitfd, const char *said, size_t oidlen,
    const struct timespec *since, const char *keepdir, const char *keep,
    struct strv *alerts);
/* The first MOST of NAMES quoted (quote_name, each cut to its last 200 bytes), a comma between, "and N more" after them; caller frees. */
char *snap_quote_names(const struct strv *names, size_t most);
/*
 * Makes git hash again the entries of the index file PATH whose ctime is
 * SINCE (seconds) or later: the count, 0 if none, -1 with errno.
 */
int snap_index_smudge(const char *path, size_t oidlen, uint32_t since);
/*
 * Makes git hash again every entry of the index file PATH, and keeps
 * snap_index_verify from trusting any (their ctime is zeroed as well): the
 * count, -1 with errno.
 */
int snap_index_forget(const char *path, size_t oidlen);
/*
 * For a tree nothing but the session can have written since BEFORE (ns
 * realtime), the session now ended: entries of the index file PATH whose
 * file under WORKTREE is the one cached (inode, size, ctime to the
 * nanosecond) with a ctime before BEFORE are trusted, the others smudged,
 * and the index's mtime set to now. The count smudged, -1 with errno.
 */
int snap_index_verify(const char *path, size_t oidlen, const char *worktree,
    int64_t before);
/*
 * The extension SIG ("UNTR", "FSMN", "TREE"; its header too) of the
 * user's index file PATH, read without following a link, into OUT: the
 * copy git uses.
 * 1; 0 if it has none (or there is no index); 2 if it is there and git
 * would read it otherwise than agentmux can check (SIG twice, padding
 * before the checksum, an extension running into it, a forged EOIE); -1
 * if PATH cannot be read as an index.
 */
int snap_index_ext(const char *path, const char *sig, struct buf *out);
/*
 * The N extensions SIGS of the index file PATH, read (and its checksum
 * checked) once: each into OUTS[i] with snap_index_ext's answer in RCS[i].
 */
void snap_index_exts(const char *path, const char *const *sigs, size_t n,
    struct buf *outs, int *rcs);
/* The same, with the whole file in FILE and its id length in *OIDLEN. */
int snap_index_load(const char *path, const char *sig, struct buf *file,
    size_t *oidlen, struct buf *out);
/*
 * The dirs (into BAD) whose tree the cache-tree TREE (an extension, its
 * header too) of the index FILE names otherwise than FILE's entries give,
 * hashed here: 0, -1 if TREE cannot be read (the root is then in BAD).
 */
int snap_cachetree_check(const struct buf *file, size_t oidlen,
    const struct buf *tree, struct strv *bad);
/*
 * The id of the tree that the entries of the index FILE make, hashed here
 * as write-tree would into OID: -1 if FILE cannot be read, has no entry,
 * or has an unmerged or intent-to-add one.
 */
int snap_cachetree_root(const struct buf *file, size_t oidlen,
    unsigned char *oid);

/*
 * What git's own checkout of a fresh worktree hashed already
 * (snap-index.c): a first snapshot of that worktree takes a file's blob
 * id from it, without reading the file, when the file is the very one
 * git wrote.
 */
struct snap_seed;
/*
 * Reads INDEX, the index that git worktree add (run by agentmux, before
 * anything else could write WORKTREE) wrote, never through a link, and
 * checks that its entries make exactly TREE (SNAP_PACK_OID bytes, the
 * commit's tree the worktree was made from): the index is in a git dir
 * that a session in the main tree can write, so nothing of it but what
 * TREE proves is believed. NULL with *CAUSE if it cannot be read, is
 * larger or has more entries than an index of the NFILES files listed in
 * the worktree can, does not make TREE, or git may have converted what
 * it wrote (the tree has a .gitattributes). Allocates: in the clone gate
 * on a helper thread.
 */
struct snap_seed *snap_seed_load(const char *index, const unsigned char *tree,
    const char *worktree, size_t nfiles, char **cause);
/*
 * snap_seed_load in two: the read (all of it but what needs TREE and the
 * list: an index larger than one of its own entries can be, a checksum
 * that is wrong, a .gitattributes named, fail here), which may start as
 * soon as git worktree add is over, and the checks against TREE and the
 * NFILES files listed (-1 with *CAUSE), once those are known.
 */
struct snap_seed *snap_seed_read(const char *index, const char *worktree,
    char **cause);
/*
 * A worktree's first snapshot reads INDEX once (never through a link, at
 * most SNAP_INDEX_MAX bytes) for two things, so that both are of the same
 * bytes: the names of its files (not its gitlinks, not a sparse index's
 * dirs), NUL-separated, in its order, into NAMES; and, if TREE (the
 * commit's tree, SNAP_PACK_OID bytes; NULL: not known) is what its
 * entries make, its seed, read as snap_seed_read does, in *SEED (else
 * NULL, *SEED_CAUSE says why). -1 with *CAUSE if the names cannot be had:
 * unreadable, no good SHA-1 checksum, a split index, cut short.
 */
int snap_seed_read_names(const char *index, const char *worktree,
    const unsigned char *tree, struct buf *names, struct snap_seed **seed,
    char **cause, char **seed_cause);
int snap_seed_believe(const struct snap_seed *, const char *index,
    const unsigned char *tree, size_t nfiles, char **cause);
/*
 * Looks at every entry's file now, as snap_seed_take would later (in
 * index order: each dir opened once), so that the takes that follow
 * only look up what was found: on a helper thread, beside the git
 * commands that list the worktree. Nothing may write the worktree
 * between the two (the jail is held until the start snapshot is saved).
 * Takes the clone gate itself. STOP (may be NULL) set: it gives up, and
 * the seed is then looked at by each take, as if never looked at.
 */
void snap_seed_look_all(struct snap_seed *, const atomic_bool *stop);
/*
 * Whether PATH's file under the worktree is one git's checkout wrote and
 * cached: a regular file, looked at without following a link, with the
 * inode, size, mode and times (ctime to the nanosecond, which cannot be
 * set from user space) of its entry, cached before the index was written
 * (less the coarse clock's lag), neither skip-worktree nor
 * assume-unchanged. Then its blob's id is OID, its mode *MODE, and SB its
 * lstat data. Allocates: in the clone gate on a helper thread.
 */
bool snap_seed_take(struct snap_seed *, const char *path,
    unsigned char oid[SNAP_PACK_OID], unsigned *mode, struct stat *sb);
void snap_seed_free(struct snap_seed *);
/*
 * Writes the user's index file PATH again without its SIG extensions and
 * without what snap_index_ext calls 2, under git's own lock (PATH.lock,
 * never through a link; its times kept): 1, 0 if there was nothing to
 * drop, -1 with errno (EEXIST: git holds the lock).
 */
int snap_index_drop_ext(const char *path, const char *sig);
/*
 * The entries of the user's index file PATH (a nested repository's, at
 * REPO in the project) marked skip-worktree or assume-unchanged, into OUT
 * as "<len of REPO>:<REPO><tag> <path>" (tag as git ls-files -v: S, s, h);
 * read without git, no link followed: 0, -1 if it is no index.
 */
int snap_index_marks(const char *path, const char *repo, struct strv *out);
/*
 * The untracked files a changed untracked cache in the index of GITDIR
 * (COMMON: its config and info/exclude; a worktree's shared git dir, else
 * GITDIR) hides from git status in the work tree PROJECT, into HIDDEN
 * (see snap-untr.c): 0, -1 with *CAUSE if it cannot be told. GITDIR and
 * COMMON are paths agentmux found or made (never read from a .git file);
 * both NULL: PROJECT/.git. Nothing the project names runs.
 */
int snap_untr_hidden(const char *project, const char *gitdir,
    const char *common, struct strv *hidden, char **cause);
/*
 * The same on BASE: *RC is 1 while the first git status runs, 2 while the
 * second does, then 0 (HIDDEN filled) or -1 (*CAUSE, which the caller
 * frees), and DONE(ARG) runs. NULL if it could not start (*RC -1, *CAUSE
 * set). snap_untr_free stops it and removes its scratch dir.
 */
struct snap_untr;
struct snap_untr *snap_untr_start(struct event_base *, const char *project,
    const char *gitdir, const char *common, struct strv *hidden, int *rc,
    char **cause, void (*done)(void *), void *arg);
void snap_untr_free(struct snap_untr *);
/* The attributes that turn off every filter, conversion and diff driver. */
extern const char snap_raw_attributes[];

/* ---- real modes beside git's (snap-modes.c) ---- */

struct snap_mode {
	char *path;
	mode_t mode;
};

/* The modes that differ from what the umask gives, sorted by path. */
struct snap_modes {
	struct snap_mode *v;
	size_t n;
	size_t cap;
	mode_t umask;
	bool known;               /* false: a snapshot made before modes were kept */
	struct snap_mode *e;      /* the dirs with no file beneath (snap-dirs.c), sorted */
	size_t en;
	size_t ecap;
	struct strv toolong;      /* top dirs holding a path too long for git (snap-dirs.c) */
};

/* The line before the dirs with no file beneath, in a snapshot's modes. */
#define SNAP_DIRS_HEAD "agentmux-empty-dirs"
/* The line before the top dirs holding a path too long for git. */
#define SNAP_LONG_HEAD "agentmux-too-long"

void snap_modes_add(struct snap_modes *, const char *path, size_t len,
    mode_t mode);
void snap_modes_sort(struct snap_modes *);
/* N entries of V sorted by path. */
void snap_mode_sort(struct snap_mode *v, size_t n);
/* PATH's entry among the N of V (sorted), or NULL. */
const struct snap_mode *snap_mode_search(const struct snap_mode *v, size_t n,
    const char *path);
/* Every dir of WORKTREE with no file of INDEX beneath it, into M (modes read). */
void snap_dirs_read(struct snap_modes *, const char *worktree,
    const char *index, size_t oidlen);
/*
 * snap_dirs_read in two: the dirs with no file beneath (and the top dirs
 * of paths too long) found into M's dirs alone (a helper thread may do
 * it, into a snap_modes of its own); then kept in M, FOUND's taken first
 * (NULL: M's own): a dir whose mode is not the umask's joins its modes.
 */
void snap_dirs_find(struct snap_modes *, const char *worktree,
    const char *index, size_t oidlen);
void snap_dirs_keep(struct snap_modes *, struct snap_modes *found);
void snap_dirs_add(struct snap_modes *, const char *path, mode_t mode);
void snap_dirs_sort(struct snap_modes *);
bool snap_dirs_has(const struct snap_modes *, const char *path);
char *snap_dirs_too_long_text(const struct snap_modes *);

void snap_modes_init(struct snap_modes *);
void snap_modes_free(struct snap_modes *);
/* What a file or dir gets from UMASK alone. */
mode_t snap_modes_canonical(mode_t umask_, bool dir_or_exec);
/* The mode recorded for PATH, or -1. */
int snap_modes_find(const struct snap_modes *, const char *path);
/* PATH's mode in M (recorded, else what M's umask gives). */
mode_t snap_modes_of(const struct snap_modes *, const char *path,
    bool dir_or_exec);
/* Keeps from find's "TYPE MODE PATH\0" records those that differ from UMASK's. */
void snap_modes_from_find(struct snap_modes *, mode_t umask_, const char *out,
    size_t len);
/* A name as snap_quote_path prints it (quoted or not), as it is; caller frees. */
char *snap_modes_unquote(const char *s, size_t len);
/* PREFIX and PATH as git prints a name: quoted C-style if PATH needs it. */
void snap_quote_path(struct buf *, const char *prefix, const char *path);
/* The block a snapshot's commit message holds (after its subject). */
void snap_modes_format(const struct snap_modes *, struct buf *);
bool snap_modes_equal(const struct snap_modes *, const struct snap_modes *);
/* Reads the block (as snap_modes_format writes it) from TEXT; M stays unknown without one. */
void snap_modes_parse(struct snap_modes *, const char *text, size_t len);
/* Reads the block from a commit object's text; M stays unknown without one. */
void snap_modes_from_commit(struct snap_modes *, const char *text, size_t len);
/* Gives REL under DIRFD the mode WANT through no link: 1 changed, 0 not, -1 with errno. */
int snap_modes_apply(int dirfd, const char *rel, mode_t want);
/* Gives the file or dir open as FD (O_PATH is fine) the mode MODE: 0, or -1 with errno. */
int snap_modes_fchmod(int fd, mode_t mode);
/* What find is asked about: ".", the index's dirs and files (not links), NUL-separated; how many. */
size_t snap_modes_paths(const char *index, size_t oidlen, struct buf *out);
/* Paths up to this many are looked at here (snap_modes_stat), more by find. */
#define SNAP_MODES_HERE 1000
/* find's records for PATHS under WORKTREE, each opened beneath it, never through a link. */
void snap_modes_stat(const char *worktree, const struct buf *paths,
    struct buf *out);

/* ---- what the owner made unreadable, opened up for a moment (snap-unlock.c) ---- */

struct snap_unlocked {
	char *path;               /* "." for the work tree itself */
	dev_t dev;
	ino_t ino;
	mode_t mode;              /* its own mode, put back */
};

struct snap_unlock {
	struct snap_unlocked *v;
	size_t n;
	size_t cap;
};

void snap_unlock_init(struct snap_unlock *);
/*
 * Gives every dir of WORKTREE this uid owns read and search (WRITE: and
 * write) and every file read, where it lacks them, never through a link
 * and never in a .git; notes each mode. -1 with errno if WORKTREE
 * cannot be opened.
 */
int snap_unlock_tree(struct snap_unlock *, const char *worktree, bool write);
/* Puts the noted modes back (on the same inodes only) and empties U. */
void snap_unlock_restore(struct snap_unlock *, const char *worktree);
void snap_unlock_free(struct snap_unlock *);

/* ---- frozen ignore rules (snap-ignore.c) ---- */

/* Whether no config file git reads for the user could name core.excludesFile (git need not be asked). */
bool snap_ignore_config_silent(void);
/* Where session SESSION's frozen rules are kept; caller frees. */
char *snap_ignore_path(int64_t session, char **cause);
/* The .gitignore files of the index: "<oid>\n" lines into OIDS, their dirs into DIRS. */
void snap_ignore_oids(const char *index, size_t oidlen, struct buf *oids,
    struct strv *dirs);
/*
 * Writes SESSION's frozen rules (the user's excludes file, R's live
 * excludes, the .gitignore files in BATCH, cat-file --batch output for
 * DIRS) and makes R use them: R's ignore and start_tree (TREE) are set.
 */
int snap_ignore_write(struct snap_repo *r, int64_t session, const char *tree,
    const char *excludes_file, const struct buf *batch,
    const struct strv *dirs, char **cause);

/* ---- checking objects before undo writes them (snap-verify.c) ---- */

struct snap_verify_obj {
	const char *oid;          /* hex */
	const char *type;         /* blob, tree, commit; NULL: any */
	const char *what;         /* what it is for (a path), for the message */
};

/*
 * Reads V's objects from R's own repository and checks that each hashes
 * to its id; KEEP (may be NULL) gets the first one's content. -1 with
 * *CAUSE naming the first that is missing, damaged or of another type.
 */
int snap_verify_objects(struct snap_repo *, const struct snap_verify_obj *v,
    size_t n, struct buf *keep, char **cause);

/* ---- keeping the own repository bounded (snap-keep.c) ---- */

struct snap_keep;

/*
 * Packs the own repository GITDIR (of WORKTREE) through BASE and keeps its
 * snapshots within CF's [snapshots] max_size, dropping the oldest turn
 * snapshots; DONE runs at the end (what was said: snap_keep_messages).
 */
struct snap_keep *snap_keep_start(struct event_base *, struct store *,
    const struct config *cf, const char *gitdir, const char *worktree,
    void (*done)(void *, const struct snap_keep *), void *arg, char **cause);
/* Stops it (a running git command gets SIGTERM); NULL is a no-op. */
void snap_keep_free(struct snap_keep *);
/* What it told the user; borrowed. */
const char *const *snap_keep_messages(const struct snap_keep *, size_t *n);
/*
 * Runs it to the end on the process's loop (proc_base; commands only)
 * (THOROUGH: a full pack and a prune in any case); MESSAGES (may be NULL) gets what it said.
 */
int snap_keep_sync(struct store *, const struct config *cf,
    const char *gitdir, const char *worktree, bool thorough,
    struct strv *messages, char **cause);
/* Marks a first snapshot's uncompressed pack in GITDIR: the next pack compresses it. */
#define SNAP_KEEP_MARK "agentmux-recompress"
void snap_keep_mark_packed(const char *gitdir);
/* Whether GITDIR has loose objects enough to pack, or a first snapshot's pack. */
bool snap_keep_due(const char *gitdir);
/*
 * Keeps each of GITDIR's 256 objects/XX directories from being removed by
 * a pack (a snapshot writing into one at that moment failed); before any.
 */
void snap_keep_fanout(const char *gitdir);
/* Packs GITDIR's loose objects in a process of its own that outlives agentmux (if due). */
/*
 * Packs GITDIR's loose objects in a process that outlives this one, if
 * enough are there: its shell runs on BASE, or, with BASE NULL (a command
 * that is its process's only loop), to its end before this returns.
 */
void snap_keep_detached(struct event_base *base, const char *gitdir);
/* Shells of snap_keep_detached still to be reaped on their loop. */
int snap_keep_detaching(void);

/* ---- writing a pack without git (snap-pack.c) ---- */

/* The pack entry types (gitformat-pack(5)). */
enum snap_pack_type {
	SNAP_PACK_COMMIT = 1,
	SNAP_PACK_TREE = 2,
	SNAP_PACK_BLOB = 3,
};
struct snap_pack;

/* Starts a pack of at most COUNT objects in GITDIR's objects/pack; NULL, *CAUSE. */
struct snap_pack *snap_pack_begin(const char *gitdir, uint32_t count,
    char **cause);
/*
 * Adds an object (stored, uncompressed; content already there is not
 * stored again); its SHA-1 id in OID. -1 with *CAUSE, e.g. on a collision.
 */
int snap_pack_add(struct snap_pack *, enum snap_pack_type, const void *data,
    size_t len, unsigned char oid[SNAP_PACK_OID], char **cause);
/*
 * Ends the pack, writes its .idx and puts both in place (NAME, if not NULL,
 * gets its hex checksum); frees it. -1 with *CAUSE, nothing left behind.
 */
int snap_pack_finish(struct snap_pack *, char *name, size_t namelen,
    char **cause);
/* A file of a tree: its path (from the top, '/'-separated), git mode and id. */
struct snap_pack_entry {
	const char *path;
	unsigned mode;            /* 0100644, 0100755, 0120000 or 0160000 */
	unsigned char oid[SNAP_PACK_OID];
};
/*
 * Adds the trees of E[0..N) (sorted by path, bytewise, as in an index) to
 * P; the top one's id in ROOT. -1 with *CAUSE.
 */
int snap_pack_trees(struct snap_pack *, const struct snap_pack_entry *e,
    size_t n, unsigned char root[SNAP_PACK_OID], char **cause);
/*
 * Writes PATH, an index (DIRC v2) of E[0..N) (sorted by path) with the
 * stat data SB[i] of each: git's stat cache, so that the next add -u
 * hashes only what changed. Through PATH.lock, as git does. -1, *CAUSE.
 */
int snap_pack_index(const char *path, const struct snap_pack_entry *e,
    const struct stat *sb, size_t n, char **cause);
/*
 * Stores the files PATHS[0..N) of the work tree WT (a directory fd; the
 * paths are sorted here, bytewise) in P as git add would: a regular
 * file's bytes, a symlink's target (never followed, nor any directory on
 * the way); E[i] and SB[i] (lstat data) for each, in order. 1 if a file
 * changed while read or is neither (take the git path), -1 with *CAUSE.
 */
int snap_pack_files(struct snap_pack *, int wt, char **paths, size_t n,
    struct snap_pack_entry *e, struct stat *sb, char **cause);
/*
 * The directory holding PATH under the work tree WT, opened one name at
 * a time without following a link (WT itself if PATH has no '/': not to
 * be closed); PATH's last name in *NAME. -1 (errno) if a component is not
 * a directory, or is empty, "." or "..".
 */
int snap_pack_parent(int wt, const char *path, const char **name);
/* Drops an unfinished pack and its temporary file; NULL is a no-op. */
void snap_pack_abort(struct snap_pack *);

/*
 * A first snapshot's work tree written without git, on a helper thread:
 * RESULT 0 with the top TREE's id (the pack and the private index are in
 * place) and MODES, the real modes of the top, of each regular file and
 * of each directory above one, in find -printf '%y %m %p\\0' records (for
 * snap_modes_from_find); 1 if git's path must take it (CAUSE says why: a
 * nested repository, a file that changed while read, one of another
 * kind), -1 on an error (CAUSE; nothing of it counts). FILES: how many
 * were stored. BORROWED: the ids of the blobs the tree names that the
 * pack does not hold (the seed's, below), a hex id a line. TREE, MODES
 * and BORROWED are NULL unless RESULT is 0; all borrowed.
 */
typedef void (*snap_pack_job_cb)(void *arg, int result, const char *tree,
    const struct buf *modes, const struct buf *borrowed, int64_t files,
    const char *cause);
struct snap_pack_job;
/*
 * A fresh worktree's files as git's checkout wrote them (snap_seed_load):
 * INDEX, the index it wrote, and TREE, the tree it was made from. A file
 * that is still the one git wrote is not read: its blob's id comes from
 * INDEX, and the id goes into BORROWED (a hex id a line) instead of its
 * blob into the pack; the caller brings those blobs in from the project's
 * repository. A seed that cannot be believed is not used (logged).
 */
struct snap_pack_seed {
	const char *index;
	struct snap_seed *read;       /* INDEX read already (snap_seed_read), or NULL: the job's own */
	unsigned char tree[SNAP_PACK_OID];
	const struct strv *converted; /* files read all the same (git may have converted them) */
};
/*
 * Threads that read and hash a job's files ahead of the one writing its
 * pack (0: that one reads them too; at most 2); the pack, its index and
 * the tree are the same whatever the count. Tests set it.
 */
extern unsigned snap_pack_job_readers;
/*
 * Stores the files of LIST (NUL-separated paths relative to WORKTREE, as
 * git ls-files -z gives them; copied) into one pack of GITDIR, writes
 * INDEX with their stat data and hands the result to DONE on BASE, which
 * frees the job after DONE returns; PROGRESS (may be NULL) gets the
 * count now and then. NULL with *CAUSE if it cannot start.
 */
struct snap_pack_job *snap_pack_job_start(struct event_base *base,
    const char *gitdir, const char *index, const char *worktree,
    struct buf *list, const struct snap_pack_seed *seed,
    snap_pack_job_cb done, void (*progress)(void *, int64_t), void *arg,
    char **cause);
/* Moves the job's watcher to BASE; NULL is a no-op. */
void snap_pack_job_move(struct snap_pack_job *, struct event_base *base);
/* Stops the job (waiting for the block at hand) and frees it; DONE is not called; NULL is a no-op. */
void snap_pack_job_free(struct snap_pack_job *);

/*
 * Leading arguments of a git command that reads the work tree's files
 * (add, update-index): git streams a file from 32 KiB on into a pack,
 * read() a block at a time and deflated, instead of mapping it (reading a
 * hole through a mapping allocates it on tmpfs: the snapshot would fill
 * the project) and writing it whole as a loose object. Smaller files,
 * most source files, are loose objects written stored (zlib level 0):
 * hashing and writing them is most of a snapshot's cost, and the
 * background repack compresses them. A sparse file costs at most the
 * threshold. (Overrides the level snap_git_config sets for every git.)
 */
#define SNAP_GIT_STREAM "-c", "core.bigFileThreshold=32k", "-c", \
	"core.looseCompression=0"

/* The file in each objects/XX that keeps it (snap-keep.c): no snapshot's temporary file. */
#define SNAP_KEEP_FANOUT "tmp_obj_agentmux_keep"

/* ---- snapshot jobs (snap-take.c) ---- */

/* Tests: first snapshots are taken by git alone, to compare with the writer's. */
extern bool snap_take_git_only;

struct snap_take;

struct snap_take_opts {
	const char *kind;           /* start | end | manual | turn | undo; NULL: tree only */
	const char *label;
	int64_t session;
	bool if_changed;            /* skip (not recorded) when the tree did not change */
	bool record_refs;           /* record HEAD, branch tips and the index */
	int64_t first_write_ms;     /* an end: nothing wrote the tree before (0: the session's start) */
	const struct snap_checkout *checkout; /* a start of a worktree just checked out, or NULL */
};

/*
 * Snapshots REPO's working tree through BASE; DONE runs once with the
 * result or an error. The store is written when it is done.
 */
struct snap_take *snap_take_start(struct event_base *base, struct store *,
    struct snap_repo *, const struct snap_take_opts *,
    void (*progress)(void *, int64_t), void (*done)(void *,
    const struct snap_result *, const char *error), void *arg,
    char **cause);
/* Abandons a job (its git command is killed); DONE does not run. */
void snap_take_cancel(struct snap_take *);
/*
 * FN(ARG) runs once the job is recorded (the work tree may
 * change then) or over, whichever comes first; at once if it is recorded already.
 */
void snap_take_when_saved(struct snap_take *, void (*fn)(void *), void *arg);
/* Runs a snapshot to the end on the process's loop (commands only). */
int snap_take_sync(struct store *, struct snap_repo *,
    const struct snap_take_opts *, struct snap_result *, char **cause);
/* Records the repository a session's snapshots live in (once). */
int snap_repo_record(struct store *, int64_t session, struct snap_repo *,
    char **cause);

/* The repository session SESSION's snapshots live in (else its project's). */
struct snap_repo *snap_session_repo(struct store *, const struct config *,
    int64_t session, const char *tag, char **cause);

/*
 * Refuses, -1 with *CAUSE, while session SESSION runs in a live agentmux
 * (WHY: what to do then), or with WORKTREE any other session of that
 * project does (the files they write are the ones about to change), or
 * when there is no session SESSION.
 */
int snap_check_ended(struct store *, int64_t session, const char *worktree,
    const char *why, char **cause);

/* undo --refs: branch tips, HEAD and the index as at session start (snap-refs.c). */
int snap_undo_refs(struct store *, struct snap_repo *, int64_t session,
    bool dry_run, FILE *out, char **cause);

/* ---- snapshots from before own repositories (snap-legacy.c) ---- */

/* Brings session ID's snapshots from the project's git dir (W) into the own repository; -1 with *CAUSE. */
int snap_legacy_migrate(struct store *, const struct config *, int64_t id,
    const struct store_snap_where *w, char **cause);
/* The same for every session of WORKTREE that needs it; how many failed (each is logged). */
int snap_legacy_project(struct store *, const struct config *,
    const char *worktree);
/*
 * The same through BASE, one git after another on the loop (a session's
 * start): false if WORKTREE has nothing to bring over; otherwise DONE(ARG)
 * runs once all is done (at once if each failed before git ran). A start
 * on a project already being brought over waits for that one.
 */
bool snap_legacy_project_start(struct event_base *, struct store *,
    const struct config *, const char *worktree, void (*done)(void *),
    void *arg);

/* ---- git dirs the host's git would obey (snap-nested.c) ---- */

struct snap_nested {
	const char *project;      /* real path */
	int projfd;               /* the project's dir */
	int64_t since;            /* ms: what changed from then on counts */
	const char *quarantine;   /* where what is taken out goes */
	struct strv *messages;    /* one line per change made */
	struct strv done;         /* git dirs seen (relative) */
	const char *gitdir;       /* the git dir being looked at */
	bool own_git;             /* the project's .git is its own: the jail kept it read-only */
	int n;                    /* files kept in the quarantine so far */
	size_t told;              /* of those, told one by one (snap_hist_shadow_out) */
	size_t more;              /* and kept past that, counted, */
	struct buf more_names;    /* each "NAME\tKEPT\n", quoted, listed in the quarantine */
	const struct snap_gitdirid *ids; /* snap_plant_opts.gitids */
	size_t nids;
	bool ids_known;
	bool ids_index;
	const struct snap_gitdirid *rec; /* the start's record of the git dir looked at, or NULL */
};

/*
 * True if the dir DIRFD, seen together with DIRFD2 (-1: none; an overlay's
 * host dir under its upper dir), is one git would take for a repository
 * whatever its name (git's is_git_directory()): a HEAD that is a ref or
 * an object name, and objects/ and refs/ or a commondir.
 */
bool snap_plant_repo_at(int dirfd, int dirfd2);
/* The project's .git/config, a regular file no larger than 1 MiB, into OUT; -1 if not. */
int snap_plant_read_config(const char *project, struct buf *out);
/* core.hooksPath as the user's git sees it in the project (.git/config's, else the user's own), into OUT; -1 if none. */
int snap_gitconf_hooks(const struct snap_gitconf *, struct buf *out);
/* The values of .git/config's include.path and includeIf.*.path, added to OUT. */
void snap_gitconf_includes(const struct snap_gitconf *, struct strv *out);
/* The files the includes of the user's and system's config files name, as absolute paths (not resolved). */
void snap_gitconf_user_includes(const struct snap_gitconf *,
    struct strv *out);

/* A ".git" (dir, file or link) at REL: its git dir is defused if it lies in the project. */
void snap_nested_dotgit(struct snap_nested *, const char *rel);
/*
 * The project's own ".git" at REL when it is a file or a link there
 * before and unchanged (a linked worktree): a link the session made on the
 * way to the git dir it names, leading out of the project, is moved out.
 */
void snap_nested_own_dotgit(struct snap_nested *, const char *rel);
/* The git dir REL (relative to the project) of repository REPO: config keeps inert keys only, new hooks go. */
void snap_nested_gitdir(struct snap_nested *, const char *repo,
    const char *rel);
/* PATH with "." and ".." components worked out by name (no link is looked at); caller frees. */
char *snap_nested_normal(const char *path);
/*
 * The git dir a .git file read into B names ("gitdir: WHERE", as git
 * reads it: trailing newlines go), from the dir DIR, worked out by name
 * (snap_nested_normal); NULL if B is no such file. Caller frees.
 */
char *snap_nested_gitfile(const char *dir, struct buf *b);
/* WHERE (absolute, or relative to BASE) as a path relative to the project if it lies inside; caller frees. */
char *snap_nested_inside(struct snap_nested *, const char *base,
    const char *where);
/* S quoted for a message (quote_name), cut to its last MAX bytes (marked "...") if longer; caller frees. */
char *snap_nested_quote_cut(const char *s, size_t max);
/*
 * Keeps NAME in DIRFD (not a dir) in the quarantine, as "<n>-NAME" (never
 * over a name there), and with MOVE takes it away: a file renamed there
 * if on its file system, else copied (256 MiB at most: past it, EFBIG and
 * nothing taken); a link's target written down; anything else kept as an
 * empty file. The quarantine path (caller frees), or NULL with errno.
 */
char *snap_nested_keep(struct snap_nested *, int dirfd, const char *name,
    bool move);
/*
 * NAME in DIRFD, of any kind, kept in the quarantine as "<n>-NAME" (a dir
 * as "<n>-NAME.d"; names are never reused) and taken away: a dir is
 * renamed there whole if the quarantine is on its file system, else its
 * tree is copied there as snap_nested_keep keeps files (its dirs made
 * writable first, by descriptor; nothing followed), then removed. At most
 * 256 MiB, 10,000 entries and 64 levels are copied, counted as they are:
 * past them, E2BIG. The quarantine path (caller frees), or NULL with
 * errno, what could not be taken left where it was and *PART the dir
 * holding what was copied before the cut (NULL if none; caller frees).
 */
char *snap_nested_keep_tree(struct snap_nested *, int dirfd,
    const char *name, char **part);
/* The tests' hooks: copy as if the quarantine were on another file system; the bytes copied at most. */
extern bool snap_nested_tree_copy;
extern off_t snap_nested_copy_max;
/* True if ST changed (ctime) at SINCE (ms) or later. */
bool snap_nested_changed(const struct stat *, int64_t since);
/** What git's sequence dir NAME in a git dir (rebase-merge, ...) is, and what carries it on, for messages; false if NAME is none. */
bool snap_plant_seq_named(const char *name, const char **what,
    const char **cont);
/**
 * The length of the object ids of a repository whose config is TEXT (LEN
 * bytes), as git reads its extensions.objectFormat (by git config itself,
 * no include followed): 32 for sha256, else 20.
 */
size_t snap_hist_oidlen_text(const char *text, size_t len);

/* Where a path leads (snap_plant_where). */
enum snap_plant_where {
	SNAP_PLANT_IN,            /* into the project (or nowhere yet, in it) */
	SNAP_PLANT_OUT,           /* out of it (or through a loop of links) */
	SNAP_PLANT_NEW_LINK,      /* through a link the session made or changed */
};
/*
 * Where PATH leads (relative to PROJECT, open as PROJFD, or absolute),
 * read component by component: links there before SINCE are resolved (read,
 * never opened), one made or changed from SINCE on (ctime) is not
 * followed; SNAP_PLANT_NEW_LINK sets *LINK to it, relative (caller frees).
 */
enum snap_plant_where snap_plant_where(const char *project, int projfd,
    const char *path, int64_t since, char **link);
/* S for a message, control characters escaped; caller frees. */
char *snap_nested_quote(const char *s);

/* ---- the user's history (snap-history.c, snap-import.c, snap-refs.c) ---- */

struct snap_import;

/* What a kept git dir was at the start: its dir and its objects dir (HISTORY/<n>/id). */
struct snap_gitid {
	bool known;               /* false: kept before agentmux recorded it */
	dev_t dev, odev;
	ino_t ino, oino;
};

int snap_gitdir_open(const char *gitdir, const struct snap_gitid *id,
    int *objfd, char **cause);

struct snap_hgit {
	char *gitdir;             /* the host's git dir */
	struct snap_gitid id;     /* what it was at the start */
	char *base;               /* what is kept of it: HISTORY/<n> */
	char *objects;            /* GITDIR/objects, where the jail's overlay goes */
	char *upper;              /* the overlay's upper and work dirs, in BASE */
	char *work;
	struct snap_import *imp;
	int wd;                   /* the inotify watch of UPPER (snap-watch.c) */
};

struct snap_history {
	char *dir;                /* $DATA/sessions/<id>/history */
	struct snap_hgit *v;
	size_t n;
	size_t ending;            /* at the end: imports still finishing */
	int64_t end_session;
	snap_history_end_cb end_done;
	void *end_arg;
	struct event_base *end_base;
	struct thread_job *end_job; /* each git dir's end, on a helper thread, */
	void (*end_looked)(void *); /* told when it is over */
	void *end_looked_arg;
	struct strv end_alerts;   /* told at the end */
	struct strv end_warnings;
	struct snap_hkeep *keeps; /* the objects to keep, one by one (snap-history.c) */
	size_t nkeeps;
	size_t keep_at;
	struct proc *keep_proc;
	int keep_fd;              /* the pack being written, or -1 */
	int wfd;                  /* inotify on the upper dirs, or -1 (snap-watch.c) */
	bool wlost;               /* a dir could not be watched: look on a timer */
	char *ro_top;             /* the git dir whose top the jail saw read only (snap_history_top_ro), or NULL */
	size_t nwatch;            /* watches added: capped, since the jail names the dirs */
	/* A worktree session's writable git dirs, on WFD too (snap_history_watch_worktree). */
	struct snap_wtdir *wt;
	size_t nwt;
	struct strv wt_told;      /* what was removed from them as it came, "PATH (what)" */
	size_t wt_removed;
	size_t wt_ops;            /* entries looked at in this read of the events */
	bool wt_nowatch;          /* they could not be watched */
};

/*
 * A loose ref is one line, which git reads whole: a file over this in a
 * worktree session's ref dir (a sparse 7 GB one costs the jail nothing)
 * took the user's git branch out of memory. snap_ref_cut deals with it.
 */
#define SNAP_REF_MAX 4096
/*
 * NAME in the ref dir DFD, a regular file (stat ST) over SNAP_REF_MAX:
 * made its first line alone where that line could be a ref's value (a
 * new file renamed over it), else removed; never through a link. *WHAT
 * says which. 1 if it was dealt with, 0 if NAME is another file by now
 * (its own look comes), -1 with errno.
 */
int snap_ref_cut(int dfd, const char *name, const struct stat *st,
    const char **what);

/* Lets go of what snap_history_watch_worktree holds (snap-watch.c). */
void snap_history_watch_worktree_free(struct snap_history *);
/* A valid ref name under refs/ that is safe as a path. */
bool snap_hist_refname_ok(const char *ref);
/*
 * The hex digits of the ids of the git dir GITFD: 64 where its config
 * says extensions.objectFormat = sha256 as git config reads it (no
 * include followed), else 40.
 */
size_t snap_hist_hash_len(int gitfd);
/*
 * Every ref of the git dir GITFD, HEAD too, as "ref\tvalue" (agentmux's
 * own left out), read as git reads them; the value is "ref: NAME", an id
 * in lower-case hex, or SNAP_HIST_UNREAD.
 */
void snap_hist_refs(int gitfd, struct strv *out);
/* A loose ref (or HEAD) git may read otherwise than agentmux can: a link, a special file, a broken ref. */
#define SNAP_HIST_UNREAD "(unreadable)"
/*
 * The entry (valued SNAP_HIST_UNREAD; no ref is named so) a list of
 * snap_hist_refs holds when its packed-refs is there and could not be
 * read: more than snap_hist_packed_max, not a plain file, failing. Its
 * packed refs are then not known: none is taken for deleted.
 */
#define SNAP_HIST_PACKED "packed-refs"
/* The most of packed-refs read (256 MiB; tests lower it). */
extern size_t snap_hist_packed_max;
/* Whether REFS (snap_hist_refs) could not read their packed-refs. */
bool snap_hist_packed_unread(const struct strv *refs);
/*
 * The value the last line of REF's reflog in GITFD gives it (lower-case
 * hex), or NULL (none, unreadable; *UNREAD if that line is over 16 MiB,
 * so what it says cannot be known); caller frees.
 */
char *snap_hist_log_last(int gitfd, const char *ref, bool *unread);
/*
 * The mode git gives what it makes with MODE in the dir DIRFD of the
 * user's repository: MODE less the user's umask (not agentmux's own,
 * 077), with the group's read bits in a dir shared with
 * core.sharedRepository (set-gid, as git makes every dir of such a
 * repository); for a dir (MODE with x bits), that parent's mode whole.
 */
mode_t snap_git_mode(int dirfd, mode_t mode);
/* Why GITFD's packed-refs cannot be read ("300 MiB, more than ..."); caller frees. */
char *snap_hist_packed_why(int gitfd);
/*
 * The refs of NAME (a packed-refs, read a line at a time, no link
 * followed) that START (sorted) does not have, replace refs left out:
 * how many into *N, the first MAX branches into HEADS. -1 if it cannot
 * be read.
 */
int snap_hist_packed_scan(int gitfd, const char *name,
    const struct strv *start, size_t *n, struct strv *heads, size_t max);
/* TEXT (a ref file's content) as git reads it, "ref: NAME" or a lower-case id; NULL if broken to git. Caller frees. */
char *snap_hist_parse(const char *text);
/*
 * A packed-refs text the jail's git wrote (OURS, from BASE, the one it
 * was given) and the user's (THEIRS, as it now is), of ids of LEN hex
 * digits, made one into OUT: each ref as the side that changed it since
 * BASE has it (none: deleted); one both changed, each its own way, as
 * THEIRS has it, its name into LOST (if not NULL). Sorted, with no peeled
 * claim (git peels what it needs). -1 if git could not read one of the
 * three (an id of another length too), or one lists a ref twice, or OURS
 * adds a name git refuses; unless LEFT is not NULL: such lines of OURS
 * (and BASE) are then left out, OURS's into LEFT as they are (a peeled id
 * with its ref, a ref listed twice whole), and only THEIRS must be whole.
 */
int snap_hist_packed_merge(const struct buf *base, const struct buf *ours,
    const struct buf *theirs, size_t len, struct buf *out, struct strv *lost,
    struct strv *left);
/*
 * GITFD's packed-refs as git can read it: each line git cannot parse (git
 * then fails at every ref; an id of another length than the repository's
 * ids, or another separator than git's whitespace, too) into BAD as it
 * is; FIXED (if not NULL) gets the file without them, one line per ref
 * (KEEP's value where a ref is listed twice and one line has it, else the
 * first), peeled ids with their ref; a header that claims the refs sorted
 * when they are not (git looks a ref up by halving the file, and misses
 * one out of order) loses that claim, and the refs out of order go into
 * UNSORTED (if not NULL); if OUTSIDE is not NULL, a ref named outside
 * refs/ that KNOWN (a list of refs, NULL: none) has not goes into it and
 * out of FIXED (git finds "main" before refs/heads/main). 1 if FIXED
 * differs from the file, 0 if not, -1 if there is none.
 */
int snap_hist_packed_check(int gitfd, const struct strv *keep,
    const struct strv *known, struct strv *bad, struct strv *outside,
    struct strv *unsorted, struct buf *fixed);
/*
 * G's HEAD (in its git dir GITFD) put back as it was at the start (DRY:
 * only said) if it is one git does not take (deleted, a link, a dir,
 * garbage: git says "not a git repository"); told in ALERTS as what WHO
 * ("the session") did to it.
 */
void snap_hist_head_repair(const struct snap_hgit *g, int gitfd,
    const char *who, bool dry, struct strv *alerts);
/* Whether V is a value snap_hist_parse gives (not SNAP_HIST_UNREAD). */
bool snap_hist_value_ok(const char *v);
/* REF's value in such a list, or NULL; borrowed. */
const char *snap_hist_value(const struct strv *refs, const char *ref);
/* Sorts REFS ("name\tvalue" entries) by name: snap_hist_value then halves it. */
void snap_hist_sort(struct strv *refs);
/* The refs kept for G at the session's start; -1 if none were. */
int snap_history_start_refs(const struct snap_hgit *g, struct strv *refs);
/* Keeps the mode and owner of each dir and file of G's git dir (GITFD) as at the start (snap-gitmodes.c). */
int snap_gitmodes_save(const struct snap_hgit *g, int gitfd, char **cause);
/*
 * Puts back (DRY: only says) each entry of G's git dir the session opened
 * to other users (group or world write, set-id, sticky gone, owner),
 * told in TOLD; how many could not be.
 */
int snap_gitmodes_check(const struct snap_hgit *g, int gitfd, bool dry,
    struct strv *told);
/* Reads REL under DIRFD (a regular file of at most MAX bytes, no link followed) into B. */
int snap_hist_read(int dirfd, const char *rel, struct buf *b, size_t max);
/* TEXT written into TMP (made new, MODE, no link followed) under DFD, then renamed over BASE; -1 with errno (TMP gone). */
int snap_hist_write_as(int dfd, const char *tmp, const char *base,
    const struct buf *text, mode_t mode);
/* Writes TEXT into REF (HEAD, packed-refs) under GITFD as git does: REF.lock, then renamed over REF. */
int snap_hist_write_text(int gitfd, const char *ref, const struct buf *text);
/* Writes TEXT as REL under GITFD atomically (dirs made as needed, no link followed). */
int snap_hist_write(int gitfd, const char *rel, const struct buf *text,
    mode_t mode);
/* mkdir -p of REL under GITFD, never through a link. */
int snap_hist_mkdirs(int gitfd, const char *rel);
/* A reflog as it must be: SAVED, then NOW's other entries; entries put back (0: none). */
int snap_hist_merge_log(const struct buf *saved, const struct buf *now,
    struct buf *out);
/* The entries of the reflog NOW that SAVED does not have (but for their old id), newest first, into OUT. */
void snap_hist_log_added(const struct buf *saved, const struct buf *now,
    struct strv *out);

struct snap_import *snap_import_create(const char *gitdir, const char *upper);
/* The seconds each index-pack of a session's pack has before its one a MiB (a test hook). */
extern int snap_import_pack_secs_base;
void snap_import_free(struct snap_import *);
/*
 * Brings verified new objects back (a batch of loose ones; ALL: every one)
 * for a slice of time; packs indexed on BASE, one at a time. False if loose
 * ones are left for the next call, which goes on where this one stopped.
 */
void snap_import_set_id(struct snap_import *, const struct snap_gitid *);
bool snap_import_run(struct snap_import *, struct event_base *base, bool all);
/*
 * Brings back everything left: the loose objects now, the packs one at a
 * time on BASE (after one being indexed already); then DONE(ARG), which
 * may be called before this returns and may free the import.
 */
void snap_import_finish(struct snap_import *, struct event_base *base,
    void (*done)(void *), void *arg);
/* Objects brought back; *REFUSED those that were not what they claimed, *TOO_BIG those over the caps. */
int64_t snap_import_count(const struct snap_import *, int64_t *refused,
    int64_t *too_big);
/* Whether the host refused a write (the upper dir is kept to try again). */
bool snap_import_failed(const struct snap_import *);
/* Whether it has work no new file will announce: a pack being indexed, a write the host refused. */
bool snap_import_busy(const struct snap_import *);
const struct strv *snap_import_problems(const struct snap_import *);

/* ---- paths given on the command line (snap-spec.c) ---- */

/* PATH (absolute, or relative to the current dir) relative to WORKTREE; caller frees. */
char *snap_relpath(const char *worktree, const char *path, char **cause);

/*
 * Tests only: called with the host path of a dir a run removes (or
 * replaces), once it is checked and before it goes (snap-confdiff.c).
 */
extern void (*snap_cc_dir_checked)(const char *host);

/*
 * Tests only: called with the host path of a file a run deletes, once it
 * is found unchanged (resolved) and before it is moved aside; and once
 * the moved file is checked, before it goes (checked).
 */
extern void (*snap_cc_file_resolved)(const char *host);
extern void (*snap_cc_file_checked)(const char *host);

/*
 * Tests only: called with REL, a git dir the end scan found unreadable,
 * once it is checked and before it is opened up (snap-plant.c).
 */
extern void (*snap_plant_dir_checked)(const char *rel);
/*
 * Tests only: called with each dir the walk for nested repositories looks
 * in, before it reads it (snap-history.c; on the start's helper thread).
 */
extern void (*snap_history_dir_walked)(const char *path);

/* ---- the end-of-session walk's order (snap-walk.c) ---- */

enum snap_walk_info {
	SNAP_WALK_D,      /* a dir, gone into unless skipped */
	SNAP_WALK_DNR,    /* a dir that cannot be read */
	SNAP_WALK_F,      /* a regular file */
	SNAP_WALK_SL,     /* a link, never followed */
	SNAP_WALK_OTHER,  /* a FIFO, socket or device */
};

/* One entry, as the walk hands it to its callback. */
struct snap_walk_ent {
	const char *path;         /* ROOT/REL */
	const char *rel;          /* relative to the root */
	const char *name;
	int level;                /* 1 for the root's own entries */
	enum snap_walk_info info;
	struct stat st;           /* lstat */
	bool skip;                /* the callback: do not go into this dir */
	char *carry;              /* the callback: xstrdup'd, handed back as this dir is read */
};

/*
 * The dir REL beneath ROOTFD opened to be read (no link followed), -1
 * with errno EACCES if it cannot be listed or searched.
 */
int snap_walk_open_dir(int rootfd, const char *rel);

typedef void snap_walk_dir_cb(void *arg, const char *carry);
typedef void snap_walk_ent_cb(void *arg, struct snap_walk_ent *);

/*
 * Walks ROOT (ROOTFD) breadth first: every entry of one depth before any
 * of the next, a dir's non-dirs before its dirs, each by name; no link
 * followed, no other file system gone into. DIR_CB (if not NULL) is
 * called with the carry of each dir as it is read; ENT_CB with each entry. 1 if it
 * stopped after LIMIT entries, else 0.
 */
int snap_walk(const char *root, int rootfd, size_t limit,
    snap_walk_dir_cb *dir_cb, snap_walk_ent_cb *ent_cb, void *arg);

#endif
