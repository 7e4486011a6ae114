/* The client: finds the server (or has one started), hands it this terminal, forwards its size, waits to be let go. */
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"
#include "server-int.h"
#include "server.h"

extern char **environ;

/* How long a client waits for a server it started to answer. */
#define SERVER_START_TRIES 50
/* How often a client tries again a server that ended as it connected. */
#define SERVER_CLIENT_RETRIES 3

static volatile sig_atomic_t server_client_winch;
/* SIGHUP or SIGTERM, once one came: this client is to end. */
static volatile sig_atomic_t server_client_ending;

static void
server_client_sigwinch(int sig)
{
	server_client_winch = 1;
}

static void
server_client_sigend(int sig)
{
	server_client_ending = sig;
}

/*
 * What an attached client waits for: a resize, and its end. A hang-up
 * (the terminal or the ssh connection gone) or SIGTERM detaches it, as
 * tmux's client ends on them, even if it started with them ignored (as
 * under nohup): else it would wait on the socket for good. They are
 * blocked but in ppoll; *WAIT gets the mask ppoll takes. Set before the
 * hello goes: the server may draw on the terminal at once, and a hang-up
 * that came between the hello and these was lost (ignored) or killed
 * the client with the terminal raw.
 */
static void
server_client_signals(bool attached, sigset_t *wait)
{
	static const int sigs[] = { SIGWINCH, SIGHUP, SIGTERM };
	struct sigaction sa;
	sigset_t block;
	size_t i, n = attached ? nitems(sigs) : 1;

	sigemptyset(&block);
	for (i = 0; i < n; i++)
		sigaddset(&block, sigs[i]);
	sigprocmask(SIG_BLOCK, &block, wait);
	memset(&sa, 0, sizeof sa);
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < n; i++) {
		sa.sa_handler = sigs[i] == SIGWINCH ? server_client_sigwinch :
		    server_client_sigend;
		sigaction(sigs[i], &sa, NULL);
		sigdelset(wait, sigs[i]);
	}
}

/*
 * Asks the server to let this client go for the signal that came (it
 * gives the terminal back and sends its exit). Asked already, a second
 * signal ends the wait at once: a server that does not know the message.
 */
static int
server_client_leave(int fd, bool *asked, char **cause)
{
	int32_t sig = server_client_ending;

	server_client_ending = 0;
	if (*asked) {
		*cause = xprintf("the server did not let this client go at "
		    "%s; it left", strsignal(sig));
		return -1;
	}
	*asked = true;
	/* A server gone meanwhile: the next read says so. */
	(void)server_msg_send(fd, SERVER_MSG_DETACH, &sig, sizeof sig, NULL, 0);
	return 0;
}

/* Connects to server NAME, starting one with ST if none runs, its socket's inode in *INO; -1 with *CAUSE. */
static int
server_client_open(const char *name, const struct server_start *st,
    ino_t *ino, char **cause)
{
	struct sockaddr_un sun;
	struct stat sb;
	int dirfd, fd;

	if ((dirfd = server_sock_dir(name, &sun, cause)) == -1)
		return -1;
	name = server_sock_name(name, cause);
	if ((fd = server_sock_connect(&sun)) == -1) {
		if (errno != ENOENT && errno != ECONNREFUSED)
			*cause = xprintf("cannot connect to the server: %s",
			    strerror(errno));
		else if (st != NULL)
			fd = st->start(dirfd, &sun, st->cf, name, cause);
		else
			*cause = xprintf("no server is running (%s)", name);
	}
	*ino = 0;
	if (fd != -1 && name != NULL &&
	    fstatat(dirfd, name, &sb, AT_SYMLINK_NOFOLLOW) == 0)
		*ino = sb.st_ino;
	close(dirfd);
	return fd;
}

/*
 * Whether the server this client lost had ended in order (it removes its
 * socket first): a connection it had not yet taken when it ended. Then a
 * new one is started; a server that died leaves its socket, and is said.
 */
static bool
server_client_gone(const char *name, ino_t ino)
{
	struct sockaddr_un sun;
	struct stat st;
	char *cause = NULL;
	const char *sock;
	int dirfd;
	bool gone;

	if (ino == 0 || (dirfd = server_sock_dir(name, &sun, &cause)) == -1) {
		free(cause);
		return false;
	}
	sock = server_sock_name(name, &cause);
	gone = sock != NULL && (fstatat(dirfd, sock, &st,
	    AT_SYMLINK_NOFOLLOW) == -1 || st.st_ino != ino);
	free(cause);
	close(dirfd);
	return gone;
}

/* Room kept in a hello for its header and what a command adds (CMD=new). */
#define SERVER_CLIENT_ENV_SLACK 256

/* Variables the jail takes (or finds its command with): sent first. */
static bool
server_client_env_first(const char *kv)
{
	static const char *first[] = { "PATH=", "SHELL=", "TERM=", "LANG=",
	    "TZ=", "COLORTERM=", "LC_" };
	size_t i;

	for (i = 0; i < nitems(first); i++) {
		if (strncmp(kv, first[i], strlen(first[i])) == 0)
			return true;
	}
	return false;
}

/*
 * This client's environment as ENV=s: a session takes its variables and
 * secrets (a [secret]'s from_env may name any variable) from the client
 * that asks for it, not from the server's, which is that of whichever
 * client started the server. All of it goes, as much as fits in the one
 * message: what the jail takes first, then the rest in order.
 */
static void
server_client_env(struct buf *b)
{
	char **e;
	int pass;

	for (pass = 0; pass < 2; pass++) {
		for (e = environ; *e != NULL; e++) {
			if (server_client_env_first(*e) != (pass == 0))
				continue;
			if (b->len + strlen(*e) + 5 > SERVER_MSG_MAX -
			    SERVER_CLIENT_ENV_SLACK)
				continue;
			buf_printf(b, "ENV=%s%c", *e, '\0');
		}
	}
}

/* The hello: what the server needs of this terminal and what to start; -1 with *CAUSE. */
static int
server_client_hello(const struct server_hello *h,
    const struct server_start *st, struct buf *b, char **cause)
{
	static const char *env[] = { "TERM", "LANG", "LC_ALL", "LC_CTYPE",
	    "NO_COLOR", "COLORTERM" };
	char *hash;
	const char *v;
	size_t i;

	for (i = 0; i < nitems(env); i++) {
		if ((v = getenv(env[i])) != NULL)
			buf_printf(b, "%s=%s%c", env[i], v, '\0');
	}
	if (h->new_session)
		buf_printf(b, "NEW=1%c", '\0');
	if (h->target != NULL)
		buf_printf(b, "ID=%s%c", h->target, '\0');
	if (h->agent != NULL)
		buf_printf(b, "AGENT=%s%c", h->agent, '\0');
	if (h->worktree)
		buf_printf(b, "WORKTREE=1%c", '\0');
	if (h->base != NULL)
		buf_printf(b, "BASE=%s%c", h->base, '\0');
	if (h->branch != NULL)
		buf_printf(b, "BRANCH=%s%c", h->branch, '\0');
	if (h->refuse_shared)
		buf_printf(b, "REFUSE_SHARED=1%c", '\0');
	if (h->ask_shared)
		buf_printf(b, "ASK_SHARED=1%c", '\0');
	/* A relative one is from our directory, which the server has as an fd. */
	if (h->dir != NULL)
		buf_printf(b, "DIR=%s%c", h->dir, '\0');
	for (i = 0; h->command != NULL && h->command[i] != NULL; i++)
		buf_printf(b, "ARG=%s%c", h->command[i], '\0');
	/* The config file as it is here: the server says if it runs another. */
	if ((st != NULL && st->cf != NULL) || h->config_file != NULL) {
		hash = server_config_hash(st != NULL && st->cf != NULL ?
		    st->cf->path : h->config_file);
		buf_printf(b, "HASH=%s%c", hash, '\0');
		free(hash);
	}
	server_client_env(b);
	return 0;
}

/*
 * The current directory, for the server to start sessions in: an O_PATH
 * descriptor passed beside the terminal's (CWDFD=1 says it is the last),
 * which the server reads as it sees it, never a path this process names.
 * Without one, CWD_ERROR says why, for the server to say when it needs
 * the directory. -1 for none.
 */
static int
server_client_cwd(struct buf *b)
{
	int fd;

	if ((fd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC)) == -1) {
		buf_printf(b, "CWD_ERROR=cannot open the current directory: "
		    "%s%c", strerror(errno), '\0');
		return -1;
	}
	buf_printf(b, "CWDFD=1%c", '\0');
	return fd;
}

/* What the server's exit message says; the exit code. */
static int
server_client_exit(const struct buf *b)
{
	struct buf q;
	int32_t code;

	if (b->len < sizeof code)
		return 1;
	memcpy(&code, b->data, sizeof code);
	if (b->len == sizeof code)
		return code;
	/* Its errors name paths from disk, which may hold any byte. */
	buf_init(&q);
	quote_text_add(&q, b->data + sizeof code, b->len - sizeof code);
	/* raw: quoted just above, newlines kept */
	fwrite(q.data, 1, q.len, code == 0 ? stdout : stderr);
	buf_free(&q);
	return code;
}

/*
 * The terminal's file flags as they were: the server makes it
 * non-blocking, and a shell left with that fails its reads (EAGAIN),
 * whether the server let go or died.
 */
static void
server_client_flags(const int fl[2])
{
	if (fl[0] != -1)
		fcntl(STDIN_FILENO, F_SETFL, fl[0]);
	if (fl[1] != -1)
		fcntl(STDOUT_FILENO, F_SETFL, fl[1]);
}

/*
 * The server died without giving the terminal back: its modes as they
 * were before, the main screen, the cursor, no mouse or bracketed paste.
 */
static void
server_client_restore(const struct termios *tio)
{
	/* Constant xterm mode sequences: what the dashboard turned on. */
	static const char reset[] = "\033[?2004l\033[?1006l\033[?1002l"
	    "\033[?1000l\033[?1049l\033[?25h\r\n";

	if (tio == NULL)
		return;
	tcsetattr(STDIN_FILENO, TCSAFLUSH, tio);
	/* raw: constant mode sequences */
	util_write_all(STDOUT_FILENO, reset, sizeof reset - 1);
}

/* A line the server has for the user: to stderr, quoted (it may name paths). */
static void
server_client_warn(const struct buf *b)
{
	struct buf q;

	buf_init(&q);
	quote_text_add(&q, b->data, b->len);
	/* raw: quoted just above, newlines kept */
	fwrite(q.data, 1, q.len, stderr);
	fflush(stderr);
	buf_free(&q);
}

/*
 * The server gave the terminal back (prefix C-z): this client stops as
 * a job does, and the shell takes the terminal. Continued in the
 * foreground ('fg'), it tells the server, which takes it again; in the
 * background ('bg') it stops again, as a job reading its terminal does.
 */
static void
server_client_suspend(int fd, const struct termios *tio, const int *fl)
{
	const struct timespec ts = { 0, 100 * 1000 * 1000 };
	pid_t pgrp;

	if (tio != NULL)
		tcsetattr(STDIN_FILENO, TCSADRAIN, tio);
	if (fl != NULL)
		server_client_flags(fl);
	signal(SIGTSTP, SIG_DFL);
	signal(SIGTTIN, SIG_DFL);
	/* The whole job, as the terminal's C-z would (a wrapper script too). */
	kill(0, SIGTSTP);
	/* (A terminal gone, tcgetpgrp fails: the server finds that out.) */
	while ((pgrp = tcgetpgrp(STDIN_FILENO)) != -1 && pgrp != getpgrp()) {
		kill(0, SIGTTIN);
		/* An orphaned job is not stopped: wait, never spin. */
		nanosleep(&ts, NULL);
	}
	/* A server gone meanwhile: the next read says so. */
	(void)server_msg_send(fd, SERVER_MSG_WAKEUP, NULL, 0, NULL, 0);
}

/* Waits for the server to let this client go, telling it of every resize; -2 (with *CAUSE) if it is lost. */
static int
server_client_wait(int fd, const struct termios *tio, const int *fl,
    const sigset_t *wait, char **cause)
{
	struct pollfd pfd = { fd, POLLIN, 0 };
	struct buf b;
	uint32_t version;
	int fds[SERVER_MSG_FDS], nfds, type, i;
	bool asked = false;
	char *log;

	buf_init(&b);
	for (;;) {
		if (server_client_winch) {
			server_client_winch = 0;
			server_msg_send(fd, SERVER_MSG_RESIZE, NULL, 0, NULL, 0);
		}
		if (server_client_ending &&
		    server_client_leave(fd, &asked, cause) == -1) {
			server_client_restore(tio);
			break;
		}
		if (ppoll(&pfd, 1, NULL, wait) == -1 && errno == EINTR)
			continue;
		buf_reset(&b);
		type = server_msg_recv(fd, &b, &version, fds, &nfds);
		for (i = 0; i < nfds; i++)
			close(fds[i]);
		if (type == -1 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (version != 0) {
			*cause = xprintf("the running agentmux server speaks "
			    "protocol %u, this agentmux %d: end it with "
			    "'agentmux kill-server' (its sessions end too) or "
			    "start another with -L NAME", version,
			    SERVER_PROTOCOL);
			break;
		}
		if (type == SERVER_MSG_EXIT) {
			i = server_client_exit(&b);
			buf_free(&b);
			return i;
		}
		if (type == SERVER_MSG_SUSPEND)
			server_client_suspend(fd, tio, fl);
		else if (type == SERVER_MSG_WARN)
			server_client_warn(&b);
		if (type <= 0) {
			server_client_restore(tio);
			log = server_log_path();
			*cause = xprintf("lost the server; its log is %s", log);
			free(log);
			buf_free(&b);
			return -2;
		}
	}
	buf_free(&b);
	return -1;
}

static int server_client_command_fds(const char *,
    const struct server_start *, char *const *, int, char **);

/* new -d: the session starts in the server; this terminal stays as it is. */
static int
server_client_new(const struct server_start *st, const struct server_hello *h,
    char **cause)
{
	struct buf b;
	struct strv kv;
	size_t at = 0, n;
	int rc, cwd;

	buf_init(&b);
	if (server_client_hello(h, st, &b, cause) == -1) {
		buf_free(&b);
		return -1;
	}
	cwd = server_client_cwd(&b);
	strv_init(&kv);
	strv_add(&kv, "CMD=new");
	while (at < b.len) {
		n = strlen(b.data + at);
		strv_add(&kv, b.data + at);
		at += n + 1;
	}
	rc = server_client_command_fds(h->name, st, kv.v, cwd, cause);
	if (cwd != -1)
		close(cwd);
	strv_free(&kv);
	buf_free(&b);
	return rc;
}

/*
 * Sends hello B (with descriptors FDS) to server NAME and waits to be let
 * go; again, to a new server, if the one reached ended before it took the
 * connection. -1 with *CAUSE.
 */
static int
server_client_send(const char *name, const struct server_start *st,
    const struct buf *b, int *fds, int nfds, const struct termios *tio,
    const int *fl, char **cause)
{
	sigset_t wait;
	ino_t ino;
	int fd, rc = -1, tries;

	for (tries = 0; tries <= SERVER_CLIENT_RETRIES; tries++) {
		if ((fd = server_client_open(name, st, &ino, cause)) == -1)
			return -1;
		/* A command's client (no terminal modes of its own) keeps the defaults. */
		server_client_signals(fl != NULL, &wait);
		if (server_msg_send(fd, SERVER_MSG_HELLO, b->data, b->len, fds,
		    nfds) == -1) {
			*cause = xprintf("cannot talk to the server: %s",
			    strerror(errno));
			rc = -1;
		} else
			rc = server_client_wait(fd, tio, fl, &wait, cause);
		close(fd);
		if (rc != -2 || !server_client_gone(name, ino))
			break;
		free(*cause);
		*cause = NULL;
	}
	return rc == -2 ? -1 : rc;
}

int
server_client_attach_as(const struct server_start *st,
    const struct server_hello *h, char **cause)
{
	struct sockaddr_un sun;
	struct termios tio;
	struct buf b;
	int fd, fds[3] = { STDIN_FILENO, STDOUT_FILENO, -1 }, fl[2], rc;

	/* A directory that is not right is said first, terminal or not. */
	if ((fd = server_sock_dir(h->name, &sun, cause)) == -1)
		return -1;
	close(fd);
	if (h->detached)
		return server_client_new(st, h, cause);
	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
		*cause = xstrdup("the dashboard needs a terminal; run "
		    "'agentmux run' for a command without one");
		return -1;
	}
	/*
	 * The server reads the terminal for us: from a background job it
	 * would take the keys typed to the shell and send them into a jail.
	 */
	if (tcgetpgrp(STDIN_FILENO) != getpgrp()) {
		*cause = xstrdup("the terminal is not this job's: the dashboard "
		    "runs in the foreground only (not with '&'); run it again "
		    "without '&', or 'fg' it before it attaches");
		return -1;
	}
	buf_init(&b);
	if (server_client_hello(h, st, &b, cause) == -1) {
		buf_free(&b);
		return -1;
	}
	/* This client stops as a job when the server gives its terminal back. */
	buf_printf(&b, "SUSPEND=1%c", '\0');
	fds[2] = server_client_cwd(&b);
	if (tcgetattr(STDIN_FILENO, &tio) == -1)
		fatal("tcgetattr");
	fl[0] = fcntl(STDIN_FILENO, F_GETFL);
	fl[1] = fcntl(STDOUT_FILENO, F_GETFL);
	rc = server_client_send(h->name, st, &b, fds, fds[2] != -1 ? 3 : 2,
	    &tio, fl, cause);
	if (fds[2] != -1)
		close(fds[2]);
	server_client_flags(fl);
	buf_free(&b);
	return rc;
}

/* A command KV, with the current directory's descriptor CWD (-1: none). */
static int
server_client_command_fds(const char *name, const struct server_start *st,
    char *const *kv, int cwd, char **cause)
{
	struct termios tio;
	struct buf b;
	size_t i;
	int rc;

	buf_init(&b);
	for (i = 0; kv[i] != NULL; i++)
		buf_add(&b, kv[i], strlen(kv[i]) + 1);
	/* No terminal of ours is the server's to leave in a mode. */
	rc = server_client_send(name, st, &b, cwd != -1 ? &cwd : NULL,
	    cwd != -1 ? 1 : 0, tcgetattr(STDIN_FILENO, &tio) == 0 ? &tio : NULL,
	    NULL, cause);
	buf_free(&b);
	return rc;
}

int
server_client_command_as(const char *name, const struct server_start *st,
    char *const *kv, char **cause)
{
	return server_client_command_fds(name, st, kv, -1, cause);
}
