/* Internals shared inside the server module: the socket's messages and where the socket lives. */
#ifndef AGENTMUX_SERVER_INT_H
#define AGENTMUX_SERVER_INT_H

#include <stddef.h>
#include <stdint.h>

struct config;
struct buf;

/*
 * The protocol's version: a client and a server that differ refuse each
 * other with a message saying so. Every message starts with the version
 * and its type, a layout that never changes, so that both can tell.
 */
#define SERVER_PROTOCOL 2
/* A message is one SOCK_SEQPACKET datagram of at most this much. */
#define SERVER_MSG_MAX 65536
/*
 * Descriptors a message may carry: the terminal's input and output, and
 * the client's working directory (O_PATH; since protocol 2).
 */
#define SERVER_MSG_FDS 3

enum server_msg_type {
	SERVER_MSG_HELLO = 1,     /* client: KEY=VALUE strings, its tty fds */
	SERVER_MSG_RESIZE,        /* client: its terminal changed size */
	SERVER_MSG_EXIT,          /* server: int32 exit code, then text */
	/* Added within protocol 1: a peer that does not know them ignores them. */
	SERVER_MSG_SUSPEND,       /* server: the terminal is given back; stop */
	SERVER_MSG_WAKEUP,        /* client: continued in the foreground */
	SERVER_MSG_WARN,          /* server: a line for the client's stderr */
	SERVER_MSG_DETACH,        /* client: int32 signal; let me go (hang-up) */
};

struct server_msg_hdr {
	uint32_t version;
	uint32_t type;
};

/* server-sock.c */
/**
 * Opens (creating it) and checks the socket directory; *SUN gets the
 * socket's address through that descriptor (/proc/self/fd/N/NAME), so no
 * symlink swapped in later is followed. Returns the dir's fd, or -1 with
 * *CAUSE.
 */
struct sockaddr_un;
int server_sock_dir(const char *name, struct sockaddr_un *sun, char **cause);
/** NAME, or "default"; NULL with *CAUSE if it is not a plain name. */
const char *server_sock_name(const char *name, char **cause);
/** A connection to the server listening at SUN, or -1 (errno says why). */
int server_sock_connect(const struct sockaddr_un *sun);

/* server-msg.c */
/** Sends one message (with up to SERVER_MSG_FDS descriptors, or none); -1 with errno. */
int server_msg_send(int fd, enum server_msg_type type, const void *data,
    size_t len, const int *fds, int nfds);
/** Sends SERVER_MSG_EXIT with CODE and TEXT. */
int server_msg_exit(int fd, int code, const char *text);
/**
 * Receives one message into B (payload only): its type, 0 at EOF, or -1
 * with errno; a version other than ours sets *VERSION (else 0) and
 * passes the message on. Descriptors go to FDS (*NFDS of them).
 */
int server_msg_recv(int fd, struct buf *b, uint32_t *version, int *fds,
    int *nfds);

/* server.c */
/**
 * The server's life, in the process forked for it, on the listening
 * socket LFD named NAME in the directory DIRFD: never returns.
 */
void server_main(int lfd, int dirfd, struct config *cf, const char *name)
    __attribute__((noreturn));

#endif
