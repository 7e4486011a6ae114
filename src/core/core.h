/* Shared small things: errors, logging, allocation, buffers, paths, JSON, config. */
#ifndef AGENTMUX_CORE_H
#define AGENTMUX_CORE_H

#include <sys/types.h>

#include <pthread.h>
#include <regex.h>
#include <semaphore.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define nitems(a) (sizeof(a) / sizeof((a)[0]))

/* ---- logging and fatal errors (core-log.c) ---- */

enum log_level { LOG_LEVEL_ERROR, LOG_LEVEL_WARN, LOG_LEVEL_INFO, LOG_LEVEL_DEBUG };

/** Sends log lines to FP (NULL: stderr) at LEVEL and above; FP is borrowed. */
void log_init(FILE *fp, enum log_level level);
/** A hook that sees every warning (the dashboard shows them). */
void log_set_hook(void (*hook)(enum log_level, const char *, void *), void *arg);
void log_warn(const char *, ...) __attribute__((format(printf, 1, 2)));
void log_warnx(const char *, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *, ...) __attribute__((format(printf, 1, 2)));
/** Prints "agentmux: MSG: strerror(errno)" and exits 1. */
void fatal(const char *, ...) __attribute__((format(printf, 1, 2), noreturn));
/** Prints "agentmux: MSG" and exits 1. */
void fatalx(const char *, ...) __attribute__((format(printf, 1, 2), noreturn));
/**
 * In a child forked without exec from a process with threads: fatal and
 * fatalx write with write(2) and end with _exit (no stdio lock another
 * thread held, no exit handler of the parent's).
 */
void log_forked(void);

/* ---- allocation (core-xmalloc.c): never return NULL ---- */

void *xmalloc(size_t);
void *xcalloc(size_t, size_t);
void *xrealloc(void *, size_t);
void *xreallocarray(void *, size_t, size_t);
char *xstrdup(const char *);
char *xstrndup(const char *, size_t);
int xasprintf(char **, const char *, ...) __attribute__((format(printf, 2, 3)));
int xvasprintf(char **, const char *, va_list) __attribute__((format(printf, 2, 0)));
/** Returns a newly allocated formatted string. */
char *xprintf(const char *, ...) __attribute__((format(printf, 1, 2)));

/* ---- growable byte buffers (core-buf.c) ---- */

struct buf {
	char *data; /* always NUL-terminated when non-NULL */
	size_t len;
	size_t cap;
};

void buf_init(struct buf *);
void buf_free(struct buf *);
void buf_reset(struct buf *);
void buf_add(struct buf *, const void *, size_t);
void buf_adds(struct buf *, const char *);
void buf_addc(struct buf *, char);
void buf_printf(struct buf *, const char *, ...) __attribute__((format(printf, 2, 3)));
void buf_vprintf(struct buf *, const char *, va_list) __attribute__((format(printf, 2, 0)));
/** Hands the contents to the caller (who frees them) and resets B. */
char *buf_steal(struct buf *);
/** Reads all of FD into B; returns -1 with errno on error. */
int buf_read_fd(struct buf *, int fd);
/** Reads the whole file into B; returns -1 with errno on error. */
int buf_read_file(struct buf *, const char *path);
/**
 * Whether the regular files A and B hold the same bytes. Neither is
 * followed if it is a link, or read if it is not a regular file (a FIFO,
 * a device): then, or on any error, they are not the same.
 */
bool buf_same_file(const char *a, const char *b);

/* ---- string vectors (core-strv.c): NULL-terminated, owned ---- */

struct strv {
	char **v;
	size_t n;
	size_t cap;
	bool sorted;              /* its user sorted it (snap's ref lists); an add clears it */
};

void strv_init(struct strv *);
void strv_free(struct strv *);
void strv_add(struct strv *, const char *);     /* copies */
void strv_addf(struct strv *, const char *, ...) __attribute__((format(printf, 2, 3)));
void strv_take(struct strv *, char *);           /* takes ownership */
/* Sets NAME=VALUE in an environment list, replacing an earlier NAME. */
void strv_setenv(struct strv *, const char *name, const char *value);
bool strv_contains(const struct strv *, const char *);
/** Splits S on whitespace, honouring '...' and "..." quotes and backslashes. */
int strv_split_words(struct strv *, const char *s, char **cause);
/** Joins with spaces, quoting words a shell would split. */
char *strv_join_shell(char *const *v);
/**
 * A command for the user to paste: as strv_join_shell, but a word with a
 * character that is never printed raw (a control, invalid UTF-8, ...) is
 * written as bash's $'...' with octal escapes, which bash and zsh read
 * back to the same bytes.
 */
char *strv_join_paste(char *const *v);

/* ---- one request's record (core-request.c) ---- */

/**
 * One proxied request as it crosses the layers: the proxy fills it, the
 * session hands it on, the store writes it and reads it back, the TUI and
 * the commands show it. Whoever holds a struct request owns every string
 * and buffer in it; a const struct request * handed to a callback is
 * borrowed for that call (request_copy to keep it). Strings are as they came
 * from the jail or the network, with secrets already redacted from headers
 * and bodies: quote them when printing.
 */
struct request {
	int64_t id;           /* live: the request's number in its session;
	                         read from the store: its row */
	int64_t session_id;   /* the store's number for its session */
	bool done;            /* false: started, still under way (live view) */
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
	char *decision;       /* allow | deny | tunnel | error; NULL: not yet */
	char *rule;           /* the rule that decided, as text with origin */
	char *error;
	char *req_headers;    /* redacted, "Name: value\n" lines */
	char *resp_headers;
	struct buf req_body;  /* up to the recording cap; data NULL: none kept */
	struct buf resp_body;
	char *mime_type;
};

/** Empties R without freeing anything (ttfb_us unknown). */
void request_init(struct request *);
/** Frees what R holds and empties it; R itself is the caller's. */
void request_clear(struct request *);
/** A deep copy of R, its bodies too if BODIES; free with request_free. */
struct request *request_copy(const struct request *, bool bodies);
/** Frees R and what it holds; NULL is a no-op. */
void request_free(struct request *);
/** Replaces the string *FIELD with a copy of VALUE (NULL: none). */
void request_set(char **field, const char *value);

/* ---- small utilities (core-util.c) ---- */

/** Wall-clock time in milliseconds since the epoch. */
int64_t util_now_ms(void);
/** Monotonic time in microseconds. */
int64_t util_mono_us(void);
/** Parses "90", "90s", "15m", "12h", "30d", "2w" to seconds; -1 on error. */
int64_t util_parse_duration(const char *);
/** Parses "512", "64K", "512M", "4G" (binary units) to bytes; -1 on error. */
int64_t util_parse_size(const char *);
/**
 * Free inodes [limits] disk_reserve keeps on a filesystem of FILES inodes
 * (statvfs f_files): 1% of them, at least 1000 (a tenth on a smaller
 * one); 0 where the filesystem has no fixed count (btrfs says 0).
 */
int64_t util_inode_reserve(uint64_t files);
/** Formats a byte count as "1.5M" into BUF. */
const char *util_fmt_size(char *buf, size_t len, int64_t bytes);
/** Formats a millisecond timestamp as local "YYYY-MM-DD HH:MM:SS". */
const char *util_fmt_time(char *buf, size_t len, int64_t ms);
/** Formats a duration in milliseconds as "1h02m", "3.2s". */
const char *util_fmt_duration(char *buf, size_t len, int64_t ms);
/** Edit distance, for "did you mean" suggestions. */
size_t util_edit_distance(const char *, const char *);
/** Parses a decimal integer in [MIN, MAX]; -1 with *CAUSE on error. */
int util_parse_int(const char *, long long min, long long max, long long *out, char **cause);
/** The process start time (clock ticks since boot) of PID, 0 if unknown. */
uint64_t util_proc_start_time(pid_t);
/** True if PID is alive and (when START is non-zero) started at START. */
bool util_proc_alive(pid_t, uint64_t start);
/** Sets O_NONBLOCK / FD_CLOEXEC; return -1 on error. */
int util_set_nonblock(int fd);
int util_set_cloexec(int fd);
struct msghdr;
/**
 * Puts N descriptors (SCM_RIGHTS) into MSG's control part, in CONTROL of
 * SPACE bytes (at least CMSG_SPACE(N ints)); -1 (EMSGSIZE) if they do not fit.
 */
int util_cmsg_put(struct msghdr *msg, void *control, size_t space, const int *fds, size_t n);
/**
 * Takes the descriptors MSG carries: at most MAX into FDS, each made
 * close-on-exec; any beyond MAX are closed, never left open. Returns how
 * many went into FDS.
 */
size_t util_cmsg_take(struct msghdr *msg, int *fds, size_t max);

/**
 * recvmsg(2) on a SOCK_SEQPACKET or datagram socket, past EINTR. A peer that
 * closed with messages of ours unread leaves ECONNRESET, which the kernel
 * reports before the messages that peer sent last (its error, its status):
 * reported once, it is passed over, so those come next, then 0.
 */
ssize_t util_recvmsg(int fd, struct msghdr *msg, int flags);

/** util_recvmsg for LEN bytes into BUF, without descriptors. */
ssize_t util_recv(int fd, void *buf, size_t len, int flags);
/** Writes all of BUF, retrying on EINTR; -1 on error. */
int util_write_all(int fd, const void *buf, size_t len);
/** Writes DATA to PATH atomically (temp file, fsync, rename) with MODE. */
int util_write_file_atomic(const char *path, const void *data, size_t len, mode_t mode, char **cause);
/** Constant-time-ish random bytes from getrandom(2); fatal on failure. */
void util_random(void *, size_t);
/** Remembers the umask agentmux was started with (main then sets its own). */
void util_set_user_umask(mode_t);
/** That umask, for files written into the user's project on their behalf. */
mode_t util_user_umask(void);
/** True if S matches the shell glob PATTERN (case-insensitive when ICASE). */
bool util_glob_match(const char *pattern, const char *s, bool icase);

/* ---- helper threads that coexist with the jail's clone (core-thread.c) ---- */

struct thread {
	pthread_t tid;
	sem_t release;
	void (*fn)(void *);
	void *arg;
	bool running;
};

/** Runs FN(ARG) in a thread with every signal blocked; 0, or an errno. */
int thread_spawn(struct thread *, void (*fn)(void *), void *arg);
/** Waits for FN to return and the thread to end; a no-op if none runs. */
void thread_join(struct thread *);
/** A helper thread holds the gate open (shared) around work that allocates. */
void clone_gate_enter(void);
void clone_gate_leave(void);
/** The main thread closes it (exclusive) around a clone whose child runs our code. */
void clone_gate_close(void);
void clone_gate_open(void);

/*
 * Work the loop must not wait for, on a helper thread (core-thread.c).
 * WORK may touch only what ARG gives it, and allocates only between
 * clone_gate_enter and clone_gate_leave.
 */
struct event_base;
struct thread_job;
/**
 * Runs WORK(WORK_ARG) on a helper thread, then DONE(ARG) on BASE's loop
 * once WORK returned; the job is freed (its thread joined) before DONE
 * runs. NULL with *CAUSE (caller frees) if it cannot start.
 */
struct thread_job *thread_job_start(struct event_base *,
    void (*work)(void *), void *work_arg, void (*done)(void *), void *arg,
    char **cause);
/** Waits for WORK to return and frees the job; DONE never runs. NULL: a no-op. */
void thread_job_free(struct thread_job *);

/* ---- the loop trace (core-trace.c), AGENTMUX_LOOP_TRACE=FILE ---- */

/** Starts the trace on BASE if AGENTMUX_LOOP_TRACE names a file (else a no-op). */
void loop_trace_init(struct event_base *);
/** Ends the trace: its ticker freed (before its base is), its file closed. */
void loop_trace_stop(void);
/** A span's start (0 when the trace is off). */
int64_t loop_trace_begin(void);
/** Logs the span begun at T0 with its name if it held the loop too long. */
void loop_trace_end(int64_t t0, const char *, ...)
    __attribute__((format(printf, 2, 3)));

/* ---- paths and directories (core-path.c) ---- */

/** $XDG_CONFIG_HOME/agentmux/config (or ~/.config/...); caller frees. */
char *path_config_file(void);
/** $XDG_DATA_HOME/agentmux, neither created nor checked; caller frees. */
char *path_data_dir_name(void);
/** $XDG_DATA_HOME/agentmux, created 0700 and checked; caller frees; NULL + *CAUSE on error. */
char *path_data_dir(char **cause);
/** The user's home directory (HOME, else the passwd entry); borrowed. */
const char *path_home(void);
/** Creates a fresh 0700 runtime dir for this process under $XDG_RUNTIME_DIR (else /tmp). */
char *path_runtime_dir_create(char **cause);
/** Removes the runtime dir made by path_runtime_dir_create (recursively). */
void path_runtime_dir_remove(void);
/** The runtime dir of this process, or NULL if none was made; borrowed. */
const char *path_runtime_dir(void);
/** The runtime dir of this process, made first if none was; borrowed, NULL with *cause. */
const char *path_runtime_dir_need(char **cause);
/**
 * Checks that DIR is a real directory (not a symlink), owned by UID, with
 * no permission bits outside MODE. Returns an fd opened O_DIRECTORY|O_NOFOLLOW,
 * or -1 with *CAUSE.
 */
int path_check_private_dir(const char *dir, uid_t uid, mode_t mode, char **cause);
/** mkdir -p with MODE for each created component; -1 with errno. */
int path_mkdir_p(const char *path, mode_t mode);
struct stat;
/**
 * Whether a file's stat data AFTER is what it was BEFORE: the same file
 * (a rename over it gives another inode), of the same size, and neither
 * written (mtime) nor changed in any way since (ctime: utimensat can set
 * mtime back, never ctime). The kernel's clocks tick coarsely, so a
 * change in the same tick as the one before can still pass, as it does
 * git's own stat check ("racy git").
 */
bool path_stat_unchanged(const struct stat *before, const struct stat *after);
/**
 * Opens REL (relative, no "..") under the directory DIRFD without
 * following any symlink, the last component's included (openat2 with
 * RESOLVE_BENEATH and RESOLVE_NO_SYMLINKS, else a walk with O_NOFOLLOW).
 * With O_PATH a final symlink itself is opened. -1 with errno (ELOOP: a
 * symlink was in the way).
 */
int path_open_beneath(int dirfd, const char *rel, int flags, mode_t mode);
/**
 * Reads the regular file REL under DIRFD into B (appended) the way
 * path_open_beneath opens it, without waiting on a FIFO or reading a
 * device: -1 with errno (EINVAL: not a regular file, EFBIG: over MAX
 * bytes, ELOOP: a symlink was in the way).
 */
int path_read_beneath(int dirfd, const char *rel, size_t max, struct buf *b);
/**
 * The dir NAME in PFD opened to be read and emptied: through no link,
 * opened up to its owner first (mode 0700: a dir of mode 0 or 0500 cannot
 * be read or emptied, such as the work dirs the kernel makes in an
 * overlay's work dir, or a tree a jail left), by the dir itself, never by
 * a path. The fd, or -1 with errno.
 */
int path_open_dir_opened(int pfd, const char *name);
/**
 * rm -rf that never follows symlinks and never crosses mount points, at
 * any depth, opening up to their owner the dirs it cannot read or empty;
 * -1 (ENOTEMPTY if some of it stays) unless all of it went.
 */
int path_remove_tree(const char *path);
/** Expands a leading "~/" against the home directory; caller frees. */
char *path_expand_home(const char *);
/** Canonical absolute path (realpath); caller frees; NULL with errno. */
char *path_real(const char *);
/** Finds an executable named NAME on PATH (or as given if it has a '/'); caller frees. */
char *path_find_exec(const char *name, const char *path_env);

/* ---- JSON output (core-json.c) ---- */

struct json {
	struct buf out;
	int depth;
	bool need_comma[64];
	bool pretty;
	bool after_key;
};

void json_init(struct json *, bool pretty);
void json_free(struct json *);
void json_obj_begin(struct json *);
void json_obj_end(struct json *);
void json_arr_begin(struct json *);
void json_arr_end(struct json *);
void json_key(struct json *, const char *);
void json_str(struct json *, const char *);     /* NULL writes null */
void json_strn(struct json *, const char *, size_t);
void json_int(struct json *, int64_t);
void json_bool(struct json *, bool);
void json_null(struct json *);
void json_double(struct json *, double);
/** Appends pre-encoded JSON text as a value. */
void json_raw(struct json *, const char *);
/* key + value shorthands */
void json_kstr(struct json *, const char *, const char *);
void json_kint(struct json *, const char *, int64_t);
void json_kbool(struct json *, const char *, bool);
void json_knull(struct json *, const char *);
/** Writes the document (plus a newline) to FP. */
void json_print(struct json *, FILE *);
/** Appends S as a JSON string literal (with quotes) to B. */
void json_escape(struct buf *, const char *, size_t);

/* ---- hostile strings made safe to print or draw (core-quote.c) ---- */

/*
 * Anything that came from a jail or the network (file names, paths, URLs,
 * hosts, headers, ref names, messages that carry them) is printed or drawn
 * only through these, as git quotes paths: as it is when every character
 * is safe, else in double quotes with C escapes (\a \b \t \n \v \f \r \"
 * \\) and \ooo (octal) for each byte of a control character (C0, DEL,
 * C1 U+0080-U+009F), of invalid UTF-8, or of an invisible or bidi
 * character (U+200B-U+200F, U+202A-U+202E, U+2066-U+2069, U+FEFF and the
 * other format characters); outside a UTF-8 locale every byte above 0x7f.
 * The result is printable text that decodes back to the exact bytes.
 */

/** Reads the locale's codeset: UTF-8 text is shown as it is only in a UTF-8 locale. */
void quote_init(void);
/** Says whether the terminal takes UTF-8 (tests, and the dashboard, which always does). */
void quote_set_utf8(bool);
/** Decodes one UTF-8 sequence at S into *CP; its length, or 0 if it is not valid UTF-8. */
size_t quote_utf8_decode(const char *s, size_t n, uint32_t *cp);
/** True for a code point that is never shown raw (controls, C1, bidi, invisible). */
bool quote_cp_unsafe(uint32_t cp);
/** True if S (N bytes) would be quoted. */
bool quote_needed(const char *s, size_t n);
/** Appends S (N bytes) to B, quoted if it needs to be. */
void quote_add(struct buf *, const char *s, size_t n);
/** Appends S with unsafe characters escaped but no quotes added; newline, CR LF and tab stay. */
void quote_text_add(struct buf *, const char *s, size_t n);
/** quote_text_add into DST (CAP bytes, at least 1, cut to fit), allocating nothing; its length. */
size_t quote_text_fixed(char *dst, size_t cap, const char *s);
/** Appends S with every unsafe character escaped, newlines too, no quotes added: one line of text. */
void quote_line_add(struct buf *, const char *s, size_t n);
/** S quoted (caller frees); NULL for NULL. */
char *quote_name(const char *s);
/** S with unsafe characters escaped, for free text (caller frees); NULL for NULL. */
char *quote_text(const char *s);
/** S quoted; the copy is owned by KEEP (freed with it); NULL for NULL. */
const char *quote_keep(struct strv *keep, const char *s);
/** S escaped as free text; owned by KEEP; NULL for NULL. */
const char *quote_keep_text(struct strv *keep, const char *s);
/** S escaped as one line of free text (quote_line_add); owned by KEEP; NULL for NULL. */
const char *quote_keep_line(struct strv *keep, const char *s);

/* ---- printing for people (core-out.c): the only way commands print ---- */

/** printf to FP through quote_text_add: no control character goes out raw. */
int out_printf(FILE *, const char *, ...) __attribute__((format(printf, 2, 3)));
int out_vprintf(FILE *, const char *, va_list) __attribute__((format(printf, 2, 0)));
/** fputs through quote_text_add. */
void out_puts(FILE *, const char *);
/** Sets colours: SGR is the parameters only ("32", "1;33", "" resets). */
void out_color(FILE *, const char *sgr);
/** Returns to the start of the line and erases it (progress lines). */
void out_erase_line(FILE *);

/* ---- the config file (core-config.c) ---- */

enum config_on_unknown { CONFIG_ASK, CONFIG_DENY };
enum config_persist { CONFIG_PERSIST_REVIEW, CONFIG_PERSIST_ALWAYS, CONFIG_PERSIST_NEVER };

/** A policy rule as written, with where it came from ("config:12"). */
struct config_rule {
	char *verb; /* allow | deny | tunnel */
	char *text; /* the rest: HOST[:PORT] [METHOD] [PATH] */
	char *origin;
};

struct config_rules {
	struct config_rule *v;
	size_t n;
};

struct config_secret {
	char *name;
	char *env;            /* variable the jail sees (placeholder) */
	char *from_env;       /* source: caller's variable */
	char *file;           /* source: a file */
	char *command;        /* source: a command's stdout */
	struct strv hosts;    /* hosts the value may go to */
	char *header;         /* header to put it in (optional) */
	char *scheme;         /* "bearer" or NULL (raw) */
	char *origin;         /* file it was defined in */
	int line;
};

struct config_agent {
	char *name;
	char *description;
	char *command;        /* command line (words) */
	char *resume;         /* command line continuing its last conversation, or NULL */
	struct strv env;      /* KEY=VALUE for the jail */
	struct config_rules rules;
	struct strv config_dirs; /* dirs/files to overlay, "~/" allowed */
	struct strv secrets;  /* names of [secret] sections */
	struct strv model_hosts; /* hosts whose responses mark a turn boundary */
	int64_t wall_clock;   /* seconds, 0 = none */
	enum config_persist persist;
	bool persist_set;
	int64_t memory;       /* 0 = default */
	int64_t pids;
	struct strv protect;  /* more [jail] protect patterns; "none" clears */
	char *setup;          /* shell command run in the jail before COMMAND, or NULL */
	bool worktree;        /* its sessions get a worktree of their own */
	char *needs_you_screen; /* a screen that waits for the user (ERE), or NULL */
	regex_t *needs_you_re;  /* it compiled (REG_NOSUB), or NULL */
	char *needs_you_file;   /* written by the agent while it waits ("~/" or
	                           project-relative), or NULL */
	bool builtin;
	char *origin;         /* file the profile came from */
	int line;
};

struct config_limits {
	int64_t memory;       /* bytes */
	int64_t pids;
	int64_t file_size;    /* bytes */
	int64_t open_files;
	int64_t tmp_size;     /* bytes */
	int64_t cpu_seconds;  /* 0 = none */
	int64_t disk_write;   /* bytes a session's processes may write; 0 = none */
	int64_t disk_reserve; /* bytes to keep free on the project's and data dir's disks */
	int disk_reserve_pct; /* or this share of each, if not 0 */
};

struct config_ui {
	char *prefix;         /* "C-a" */
	int prefix_key;       /* the byte it sends */
	char *default_agent;
	bool color;           /* false with color = never (NO_COLOR: per client) */
	int64_t scrollback;
	int64_t escape_time;  /* ms a lone ESC waits for the rest of a sequence */
	bool clipboard;       /* copies also go to the terminal's clipboard (OSC 52) */
	int64_t idle_after;   /* ms a pane is quiet after output before it may need the user */
	int notify;           /* CONFIG_NOTIFY_*: how a session needing the user is told */
	struct strv notify_argv; /* CONFIG_NOTIFY_COMMAND: run with the message added */
	bool worktree;        /* new sessions get a worktree of their own */
};

/* [ui] notify: a bell, OSC 9/777 desktop notifications, or a command. */
enum {
	CONFIG_NOTIFY_BELL,
	CONFIG_NOTIFY_OSC,
	CONFIG_NOTIFY_COMMAND,
};

struct config_proxy {
	struct strv upstream_ca;
	struct strv connect_to;   /* HOST:PORT:ADDR:PORT2 */
	int64_t connect_timeout;  /* seconds */
	int64_t idle_timeout;     /* seconds */
	int64_t client_timeout;   /* seconds for a client to send its headers */
	int64_t max_connections;  /* per session */
	int64_t max_body_record;  /* bytes of each body stored; 0 = none */
	int64_t record_headers;   /* bytes of each request's headers stored */
	int64_t record_budget;    /* bytes of records one session may store */
	bool transparent;         /* a resolver in the jail, its TCP redirected here */
};

/* Defaults of [proxy] record_headers and record_budget. */
#define CONFIG_RECORD_HEADERS (16 * 1024)
#define CONFIG_RECORD_BUDGET (256LL * 1024 * 1024)

struct config_snapshots {
	int64_t interval;         /* seconds between turn-boundary snapshots */
	struct strv excludes;     /* for projects outside git */
	int64_t max_size;         /* bytes a project's snapshots keep; 0: no limit */
};

/* Entries the end-of-session scan looks at by default ([jail] scan_limit). */
#define CONFIG_SCAN_LIMIT 1000000

struct config_jail {
	struct strv protect;      /* project files kept read-only in the jail */
	bool history;             /* the git history kept out of the jail's reach */
	int64_t scan_limit;       /* entries the end-of-session scan looks at */
	struct strv watch_ignored; /* more ignored dirs whose programs are fingerprinted */
};

struct config {
	char *path;               /* the file read, or NULL if none existed */
	enum config_on_unknown on_unknown;
	bool on_unknown_set;
	int64_t prompt_timeout;   /* seconds */
	struct config_rules rules;
	struct config_agent *agents;
	size_t nagents;
	struct config_secret *secrets;
	size_t nsecrets;
	struct config_limits limits;
	struct config_ui ui;
	struct config_proxy proxy;
	struct config_snapshots snapshots;
	char *builtin_error;      /* why built-in profiles were not read, or NULL */
	struct config_jail jail;
};

/** One problem found in a config file. */
struct config_problem {
	char *file;
	int line;
	char *message;
};

struct config_problems {
	struct config_problem *v;
	size_t n;
};

/** A config with defaults only (no file, built-in profiles loaded). */
struct config *config_default(void);
/**
 * Loads PATH (NULL: the default location; a missing default file is fine)
 * over the defaults and the built-in agent profiles. Returns NULL if there
 * is any problem; every problem is added to PROBLEMS (caller frees with
 * config_problems_free).
 */
struct config *config_load(const char *path, struct config_problems *problems);
/** Like config_load, but formats the first problems into *CAUSE. */
struct config *config_load_or_cause(const char *path, char **cause);
void config_free(struct config *);
void config_problems_free(struct config_problems *);
/** Finds an agent profile by name; borrowed; NULL if none. */
const struct config_agent *config_agent(const struct config *, const char *name);
const struct config_secret *config_secret(const struct config *, const char *name);
/**
 * The protect patterns for a session of agent A (may be NULL): [jail]
 * protect, then the profile's ("none" there clears what came before).
 * OUT is initialised; caller frees.
 */
void config_protect(const struct config *, const struct config_agent *a,
    struct strv *out);
/** The built-in protect patterns (NULL-terminated): watched even when not protected. */
const char *const *config_protect_defaults(void);
/** Names of all known keys of SECTION ("policy", "agent", ...), for hints. */
const char *const *config_known_keys(const char *section);
/** Every section kind the config file takes ("agent" for [agent NAME]), NULL-terminated. */
const char *const *config_sections(void);
/** The directory holding the built-in agent profiles; borrowed. */
const char *config_share_dir(void);
/**
 * Adds "KEY = VALUE" to SECTION ("policy" or "agent NAME") of the config
 * file at PATH, keeping everything else (comments too) as it was; creates
 * the file or the section if needed. Atomic. -1 with *CAUSE on error.
 */
int config_append(const char *path, const char *section, const char *key,
    const char *value, char **cause);
/** Returns TEXT with "KEY = VALUE" added to SECTION as config_append would; caller frees. */
char *config_text_append(const char *text, const char *section,
    const char *key, const char *value);
/** Reads the config file's text ("" if it does not exist) and mode. */
int config_read_text(const char *path, char **text, mode_t *mode, char **cause);
/** Writes the config file's text atomically with MODE, creating its dir. */
int config_write_text(const char *path, const char *text, mode_t mode,
    char **cause);
/**
 * Installs the checker for policy rule text (the proxy's parser), so that
 * config_load reports bad rules with their line.
 */
void config_set_rule_validator(int (*)(const char *verb, const char *text,
    char **cause));
/** Parses a "C-a" style key into the byte it sends; -1 if invalid. */
int config_parse_key(const char *);

/* ---- child processes (core-proc.c): watched by the event loop ---- */

struct event_base;

struct proc;
typedef void (*proc_cb)(struct proc *, void *arg);

struct proc_opts {
	char *const *argv;        /* argv[0] is looked up on PATH (unless EXE) */
	char *const *env;         /* NULL: this process's environment */
	const char *dir;          /* working directory, or NULL */
	const void *input;        /* copied and written to stdin; NULL: /dev/null */
	size_t inputlen;
	bool input_later;         /* stdin stays open until proc_input */
	bool has_in_fd;           /* stdin is IN_FD (a file: the child reads it itself) */
	int in_fd;
	int out_fd;               /* >= 0: stdout goes there instead of being read */
	int umask;                /* >= 0: the child's umask */
	/* Called with each complete stdout line (without the newline). */
	void (*line)(void *arg, const char *line, size_t len);
	/* Called with stdout as it arrives, which is then not kept. */
	void (*chunk)(void *arg, const char *data, size_t len);
	void *chunk_arg;
	int timeout;              /* > 0: it is killed (SIGKILL) after so many seconds */
	bool err_to_out;          /* stderr goes where stdout goes, read as stdout */
	size_t err_max;           /* > 0: stderr kept up to so many bytes */
	const char *exe;          /* what to run, if not argv[0] looked up on PATH */
	bool keep_tty;            /* stays in our session, with our terminal (a secret command's prompt) */
	uint64_t data_max;        /* > 0: its RLIMIT_DATA (heap, private maps), in bytes */
};

/*
 * Spawns OPTS's command; its output is read and its exit noticed through
 * BASE, and DONE(proc, ARG) runs once it has exited and its output is in.
 * It runs in a session of its own, with no controlling terminal (unless
 * KEEP_TTY): git over a repository a jail wrote may be sent to open
 * /dev/tty by a link there, and waited there stopped (SIGTTIN) with a
 * lock held.
 * The child is reaped by pid (a pidfd), never by waiting for any child.
 * NULL with *CAUSE if it cannot be started. The loop does not wait for
 * the child's exec: one that fails later (its directory gone, a program
 * that cannot be executed) ends with status 127, "cannot run X: why" in
 * its stderr (stdout with err_to_out) and from proc_cause.
 */
struct proc *proc_start(struct event_base *base,
    const struct proc_opts *, proc_cb done, void *arg,
    char **cause);
/*
 * Gives a command started with input_later the rest of its input; its
 * stdin is closed once that is written. (Its start-up can overlap with
 * work that decides what it is told.)
 */
void proc_input(struct proc *, const void *data, size_t len);
/* Exit code, or 128+N for signal N; -1 while running. */
int proc_status(struct proc *);
/* "cannot run X: why" if its exec failed (status 127), else NULL; borrowed. */
const char *proc_cause(struct proc *);
/* Test hook: a started child sleeps so many ms before its exec. */
extern int proc_test_exec_delay_ms;
/* Test hook: how many children were started sharing this process's memory (a big one, with a limit). */
extern unsigned proc_test_vforked;
/* Bench hook: every child is cloned (copy-on-write), whatever this process's size. */
extern bool proc_test_clone_always;
/* Test hook: clone3 is taken to be refused (a limited child is vforked, others spawned). */
extern bool proc_test_no_clone3;
/* What the command wrote; borrowed, NUL-terminated. */
struct buf *proc_out(struct proc *);
struct buf *proc_err(struct proc *);
/*
 * Kills (SIGKILL) the command if it still runs and frees, without waiting:
 * the loop reaps it when its pidfd says it ended. NULL is a no-op.
 */
void proc_free(struct proc *);
/* The same, but it gets SIGTERM and most of a second to clean up first. */
void proc_term(struct proc *);
/*
 * Kills (SIGKILL) the command and waits up to MS for it to be gone (not
 * reaped: proc_free does that), so that nothing it was writing appears
 * after this returns. Blocks: for a stop that must clean up behind it.
 */
void proc_kill_wait(struct proc *, int ms);
/*
 * Reaps, through BASE, the child of PIDFD (a process this one forked
 * itself, asked to end), without waiting; GRACE_MS (0: none) later it is
 * killed. PIDFD becomes the loop's; -1 is a no-op.
 */
void proc_reap_pidfd(struct event_base *base, int pidfd, int grace_ms);
/* Moves a running command's watchers to BASE (to finish it elsewhere). */
void proc_move(struct proc *, struct event_base *base);
/*
 * The process's one event loop (libevent's base), made on first use: the
 * server's, agentmux run's and proxy's, and a command's. Nothing makes
 * another; a child forked after it was made gets its own here.
 */
struct event_base *proc_base(void);
/* Frees it at the end of the process's main function. */
void proc_base_free(void);
/*
 * Raises this process's soft RLIMIT_NOFILE to its hard limit (65,536 at
 * most): a server holds a jail's proxy connections, watches and pipes for
 * every session, and a login's 1,024 is little for that. Children get
 * the limit back as it was, except those posix_spawn starts (a program
 * not on PATH, a child without a memory limit of a process over 32 MiB,
 * or where clone3 and clone are refused), which keep the raised one.
 */
void proc_raise_nofile(void);
/*
 * Runs BASE (the process's one loop, not already running: a command
 * between its steps) until *DONE; for a blocking wrapper around work that
 * runs on a loop (snap_take_sync, snap_keep_sync: agentmux undo, snapshot,
 * diff, gc). Called from inside the loop's own callbacks it stops the
 * process with a bug report: work there runs on the loop and reports back
 * by callback.
 */
void proc_sync_run(struct event_base *, const bool *done);
/*
 * Runs OPTS's command to the end, blocking, with no event loop: its pipes
 * and pidfd are polled by the runner's own readers and writer. OUT and ERR
 * (either may be NULL) get its output. One that outlives its timeout is
 * killed: *STATUS is then 128+9. Blocks whatever loop it is called from:
 * for commands, and for a short git query a session's start still makes.
 */
int proc_run(const struct proc_opts *, struct buf *out,
    struct buf *err, int *status, char **cause);

#endif
