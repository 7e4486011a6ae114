/* The server (src/server, above session and tui, below cmd): one per user owns every session; clients hand it their terminals over a unix socket. */
#ifndef AGENTMUX_SERVER_H
#define AGENTMUX_SERVER_H

#include <stdbool.h>

struct config;

/* What a client asks of the server. */
struct server_hello {
	const char *name;         /* -L NAME; NULL: "default" */
	bool new_session;         /* start a session even if some run */
	bool detached;            /* -d: start it, do not attach */
	const char *agent;        /* NULL: [ui] default_agent, else shell */
	const char *dir;          /* NULL: the client's current dir */
	char *const *command;     /* NULL: the agent's */
	const char *target;       /* attach -t: the session to show, or NULL */
	bool worktree;            /* new --worktree: a worktree of its own */
	const char *base;         /* --base REF */
	const char *branch;       /* --branch NAME */
	bool refuse_shared;       /* new without --shared: refuse a shared tree */
	bool ask_shared;          /* plain agentmux, attach: ask in the dashboard */
	const char *config_file;  /* whose digest goes with it when no config is given */
};

struct sockaddr_un;

/*
 * How a client has a server started when none answers on the socket in
 * the directory DIRFD (its address SUN, its name NAME): START returns a
 * connection to it, or -1 with *CAUSE. The whole program forks one
 * (server-start.c); the small front (cmd/front.c) hands over to the
 * whole program instead.
 */
struct server_start {
	struct config *cf;
	int (*start)(int dirfd, const struct sockaddr_un *sun,
	    struct config *cf, const char *name, char **cause);
};

/**
 * The socket of server NAME (NULL: "default"):
 * $XDG_RUNTIME_DIR/agentmux/NAME, else /tmp/agentmux-UID/NAME. Its
 * directory is created 0700 and checked (owner, mode, no symlink).
 * Caller frees; NULL with *CAUSE.
 */
char *server_socket_path(const char *name, char **cause);
/** $XDG_STATE_HOME/agentmux/server.log (else ~/.local/state/...); caller frees. */
char *server_log_path(void);
/**
 * A digest of the config file PATH's content (FNV-1a, 16 hex digits:
 * tells an edited file from the one a server loaded, not a security
 * hash); "none" when PATH is NULL or cannot be read. Free it.
 */
char *server_config_hash(const char *path);

/**
 * The client: connects to the server (starting it with CF, which the
 * server then owns, if none runs), hands it this terminal and waits
 * until it detaches or quits. Returns the exit code to exit with; on -1,
 * *CAUSE says why nothing happened (CF is still the caller's).
 */
int server_client_attach(struct config *cf, const struct server_hello *h,
    char **cause);

/** server_client_attach with ST (NULL: no server is started). */
int server_client_attach_as(const struct server_start *st,
    const struct server_hello *h, char **cause);

/**
 * Runs a command in server NAME: KV is its NULL-ended KEY=VALUE strings
 * (CMD=ls|new|kill|kill-server|send, ID=, ARG=..., JSON=1, LITERAL=1,
 * and for new AGENT=, DIR=, CWD=). With CF a server is started if none
 * runs. What the server answers is printed; returns the exit code, or -1
 * with *CAUSE.
 */
int server_client_command(const char *name, struct config *cf,
    char *const *kv, char **cause);

/** server_client_command with ST (NULL: no server is started). */
int server_client_command_as(const char *name, const struct server_start *st,
    char *const *kv, char **cause);

#endif
