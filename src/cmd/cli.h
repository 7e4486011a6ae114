/* The command layer (src/cmd, on top of every module): the table of commands and helpers every command uses. */
#ifndef AGENTMUX_CLI_H
#define AGENTMUX_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "core/core.h"

struct store;
struct config;

/*
 * What completes a value or an argument: the shells' completion asks for
 * these (agentmux completion words), the man page test reads them.
 */
enum cli_kind {
	CLI_TEXT,      /* free text: nothing to offer */
	CLI_CHOICE,    /* one of the words of its name ("bash|zsh|fish") */
	CLI_AGENT,     /* an agent profile's name */
	CLI_SESSION,   /* a session number, or last */
	CLI_SNAP,      /* a snapshot of the session named before it */
	CLI_SECTION,   /* a config section */
	CLI_DIR,
	CLI_FILE,      /* a file or a directory */
	CLI_COMMAND,   /* a command and its arguments, after -- */
};

/* One option: --NAME, and -S when it has a short form. */
struct cli_opt {
	const char *name;
	char short_name;       /* 0: none */
	const char *value;     /* the value's placeholder; NULL: a flag */
	enum cli_kind kind;    /* what its value is */
	const char *help;
};

#define CLI_OPTIONAL 0x1   /* the argument may be left out */
#define CLI_REPEAT 0x2     /* the last argument takes every one left */

/* One positional argument. */
struct cli_arg {
	const char *name;
	enum cli_kind kind;
	int flags;
	const char *help;
};

#define CLI_ORDERED 0x1    /* options end at the first argument (a command follows) */

struct cli_args;

/*
 * A command: a row of the one table that help, the parser, completion and
 * the man page test read. A command with subcommands (config check) runs
 * none of its own: its first argument names the row that runs.
 */
struct cli_cmd {
	const char *name;
	int (*fn)(struct cli_args *);
	const struct cli_opt *opts;    /* ends with a NULL name; may be NULL */
	const struct cli_arg *args;    /* ends with a NULL name; may be NULL */
	const struct cli_cmd *subs;    /* ends with a NULL name; may be NULL */
	int flags;
	const char *summary;           /* one line for the command list */
	const char *help;              /* after the arguments and options */
};

/* A parsed command line; positionals are borrowed from argv. */
struct cli_args {
	const struct cli_cmd *cmd;
	char *name;                    /* "config check", for messages */
	struct strv *values;           /* one per option of cmd, in its order */
	size_t *counts;
	int argc;
	char **argv;                   /* NULL-terminated */
	int dashdash;                  /* positionals before "--", or -1 */
	int given_argc;                /* the words as given, its name first */
	char **given_argv;
};

/** The dashboard's row: agentmux with no command. */
const struct cli_cmd *cli_top(void);
/** Every command, in the order help lists them; *N is set. */
const struct cli_cmd *cli_commands(size_t *n);
/** Finds a command (or a subcommand in CMD->subs, when CMD is given); NULL if unknown. */
const struct cli_cmd *cli_find(const struct cli_cmd *cmd, const char *name);
/**
 * Parses ARGV (argv[0] the command's name) against CMD and its
 * subcommands. Returns 0 with *ARGS filled (cli_args_free), 1 when it
 * printed the help asked for, or -1 when it printed a usage error (exit 2).
 */
int cli_parse(const struct cli_cmd *cmd, const char *name, int argc,
    char **argv, struct cli_args *args);
void cli_args_free(struct cli_args *);
/** True if option NAME (its long name) was given. */
bool cli_has(const struct cli_args *, const char *name);
/** How often option NAME was given. */
size_t cli_count(const struct cli_args *, const char *name);
/** The last value of option NAME, or NULL; borrowed. */
const char *cli_get(const struct cli_args *, const char *name);
/** Every value of option NAME, NULL-terminated; borrowed. */
char **cli_values(const struct cli_args *, const char *name);
/** Runs the command of a parsed command line; returns its exit code. */
int cli_run(struct cli_args *);
/** Prints the top-level help to FP. */
void cli_print_usage(FILE *fp);
/** Prints the help of CMD, called NAME ("config check"), to FP. */
void cli_print_help(FILE *fp, const struct cli_cmd *cmd, const char *name);
/** Writes CMD's usage line after "agentmux NAME " into B. */
void cli_usage_line(struct buf *b, const struct cli_cmd *cmd);
/** Reports a usage error for CMD; returns 2. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/** Prints "agentmux: MSG" to stderr; returns 1. */
int cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/** Opens the store, printing the error on failure; caller closes. */
struct store *cli_open_store(void);
/** Loads the config, printing its problems on failure; caller frees. */
struct config *cli_load_config(void);
/**
 * Resolves SPEC ("last" or a number) to a session id, or prints why not.
 * "last" is the last session of the project the current directory is in
 * (the last of all outside every project), and says on stderr which it is.
 */
int cli_resolve_session(struct store *, const char *spec, int64_t *id);
/**
 * The last session of the project the current directory is in, 0 outside
 * every project, or -1 with *CAUSE (caller frees) when the logical and the
 * physical path are in different projects.
 */
int64_t cli_last_here(struct store *, char **cause);
/** Formats a millisecond time as ISO 8601 UTC with milliseconds. */
const char *cli_iso_time(char *buf, size_t len, int64_t ms);
struct json;
struct request;
/**
 * Writes a recorded request's fields (not its bodies) into the open JSON
 * object: the one shape of `requests --json` and `export --format json`.
 */
void cli_request_json(struct json *, const struct request *);
/** True when stdout is a terminal and colour is not disabled. */
bool cli_color(void);

/* An aligned table for people. */
struct cli_table {
	size_t ncols;
	char **cells;      /* row-major, header first */
	size_t nrows;
	bool *right;       /* right-align column */
};

void cli_table_init(struct cli_table *, size_t ncols, const char *const *headers);
/** Adds a row of NCOLS strings (copied; NULL prints "-"). */
void cli_table_add(struct cli_table *, const char *const *cells);
void cli_table_right(struct cli_table *, size_t col);
void cli_table_print(struct cli_table *, FILE *);
void cli_table_free(struct cli_table *);

/* The commands, each in src/cmd-*.c. */
struct session_opts;
/*
 * --worktree, --base, --branch and --shared (CLI_OPTS_WORKTREE) into O,
 * checked; -1 after a usage error for CMD. For every command that starts
 * a session.
 */
int cmd_worktree_opts(const char *cmd, struct cli_args *, struct session_opts *o);
struct store_session;
/** A worktree session's "BRANCH, merged|unmerged" (or "discarded"); NULL for others. Caller frees. */
char *cmd_worktree_describe(const struct store_session *);
/*
 * gc of the worktrees under the data dir: those of sessions that ended
 * before CUTOFF go with their branches if merged (or FORCE; DRY: only
 * said); the ids of the unmerged ones kept, whose records must stay
 * too, into *KEEP (caller frees); so are those whose commits (at most
 * PACK_MAX bytes packed) cannot be kept for restore. Says what it does
 * on stdout.
 */
int cmd_worktree_gc(struct store *, int64_t cutoff, bool force, bool dry,
    int64_t pack_max, int64_t **keep, size_t *nkeep);
int cmd_merge(struct cli_args *);
int cmd_discard(struct cli_args *);
int cmd_restore(struct cli_args *);
int cmd_sessions(struct cli_args *);
int cmd_show(struct cli_args *);
int cmd_requests(struct cli_args *);
int cmd_gc(struct cli_args *);
int cmd_config_check(struct cli_args *);
int cmd_config_path(struct cli_args *);
int cmd_config_keys(struct cli_args *);
int cmd_completion(struct cli_args *);
int cmd_completion_words(struct cli_args *);
int cmd_dashboard(struct cli_args *);
int cmd_attach(struct cli_args *);
int cmd_ls(struct cli_args *);
int cmd_new(struct cli_args *);
int cmd_kill(struct cli_args *);
int cmd_kill_server(struct cli_args *);
int cmd_reload(struct cli_args *);
int cmd_pause(struct cli_args *);
int cmd_resume(struct cli_args *);
int cmd_wait(struct cli_args *);
int cmd_send(struct cli_args *);
int cmd_port(struct cli_args *);
int cmd_agents(struct cli_args *);
int cmd_doctor(struct cli_args *);
int cmd_export(struct cli_args *);
int cmd_policy_suggest(struct cli_args *);
int cmd_probe_connect(struct cli_args *);
int cmd_probe_resolve(struct cli_args *);
int cmd_probe_write(struct cli_args *);
int cmd_probe_fetch(struct cli_args *);
int cmd_proxy(struct cli_args *);
int cmd_run(struct cli_args *);
int cmd_snapshot(struct cli_args *);
int cmd_snapshots(struct cli_args *);
int cmd_diff(struct cli_args *);
int cmd_undo(struct cli_args *);
int cmd_confdiff(struct cli_args *);
int cmd_version(struct cli_args *);

#endif
