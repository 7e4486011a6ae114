/* The command line: the table of commands and helpers every command uses. */
#ifndef AGENTMUX_CLI_H
#define AGENTMUX_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct store;
struct config;

struct cli_cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *usage;    /* after "agentmux NAME " */
	const char *summary;  /* one line for the command list */
	const char *help;     /* the options, one per line */
};

/** Finds a command by name; NULL if unknown. */
const struct cli_cmd *cli_find(const char *name);
/** Prints the top-level help to FP. */
void cli_print_usage(FILE *fp);
/** Prints a command's help to stdout; returns 0. */
int cli_help(const char *name);
/** Reports a bad option from getopt_long (C is what it returned); returns 2. */
int cli_bad_option(const char *cmd, char **argv, int c);
/** Reports a usage error for CMD; returns 2. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/** Prints "agentmux: MSG" to stderr; returns 1. */
int cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/** Opens the store, printing the error on failure; caller closes. */
struct store *cli_open_store(void);
/** Loads the config, printing its problems on failure; caller frees. */
struct config *cli_load_config(void);
/** Resolves SPEC ("last" or a number) to a session id, or prints why not. */
int cli_resolve_session(struct store *, const char *spec, int64_t *id);
/** Formats a millisecond time as ISO 8601 UTC with milliseconds. */
const char *cli_iso_time(char *buf, size_t len, int64_t ms);
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
int cmd_sessions(int, char **);
int cmd_show(int, char **);
int cmd_requests(int, char **);
int cmd_gc(int, char **);
int cmd_config(int, char **);
int cmd_dashboard(int, char **);
int cmd_agents(int, char **);
int cmd_doctor(int, char **);
int cmd_export(int, char **);
int cmd_policy(int, char **);
int cmd_probe(int, char **);
int cmd_proxy(int, char **);
int cmd_run(int, char **);
int cmd_snapshot(int, char **);
int cmd_snapshots(int, char **);
int cmd_diff(int, char **);
int cmd_undo(int, char **);
int cmd_confdiff(int, char **);

#endif
