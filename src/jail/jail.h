/* The jail: user/mount/pid/net/ipc/uts/cgroup namespaces, seccomp, Landlock, limits, a pty, one door out. */
#ifndef AGENTMUX_JAIL_H
#define AGENTMUX_JAIL_H

#include <sys/types.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct jail;
struct strv;

/*
 * Transparent interception: names the jail's resolver answers stand for
 * addresses in 198.18.0.0/15 (reserved for benchmarking, never routed),
 * which the jail's nftables redirect sends to agentmux's listener.
 */
#define JAIL_SYNTH_NET 0xc6120000U      /* 198.18.0.0 */
#define JAIL_SYNTH_PREFIX 15
#define JAIL_RESOLVER_ADDR 0x7f000035U  /* 127.0.0.53, port 53 */

/** A host dir the jailed process sees, at the same path, as an overlay. */
struct jail_overlay {
	const char *path;     /* where the jail sees it */
	const char *lower;    /* read-only lower layer; NULL: PATH itself */
	const char *upper;    /* the session's upper dir (exists, empty at first) */
	const char *work;     /* overlayfs work dir, same filesystem as UPPER */
};

/** An extra bind mount (e.g. an agent's install dir), read-only unless RW. */
struct jail_bind {
	const char *path;     /* where the jail sees it */
	const char *src;      /* what is bound there; NULL: PATH itself */
	bool rw;
};

struct jail_limits {
	int64_t memory;       /* bytes: cgroup memory, else RLIMIT_AS; 0 = none */
	int64_t pids;         /* cgroup pids.max, else RLIMIT_NPROC; 0 = none */
	int64_t file_size;    /* RLIMIT_FSIZE bytes; 0 = none */
	int64_t open_files;   /* RLIMIT_NOFILE; 0 = none */
	int64_t tmp_size;     /* size of the private /tmp tmpfs */
	int64_t cpu_seconds;  /* RLIMIT_CPU; 0 = none */
};

struct jail_conf {
	const char *project;        /* absolute real path (see jail_project), bound rw */
	const char *cwd;            /* where the command starts; NULL: the project */
	char *const *argv;          /* the command; argv[0] is looked up on PATH in the jail */
	char *const *envp;          /* its whole environment (already filtered) */
	const char *home;           /* HOME: a private tmpfs mounted at this path */
	const char *ca_bundle;      /* host file shown as the jail's CA bundle, or NULL */
	const struct jail_overlay *overlays;
	size_t noverlays;
	const struct jail_bind *binds;
	size_t nbinds;
	struct jail_limits limits;
	bool pty;                   /* a pty for the command, else pipes */
	unsigned short rows;
	unsigned short cols;
	int proxy_port;             /* port of the listener made inside the jail */
	bool transparent;           /* a resolver and the redirect of the synthetic range */
	int transparent_port;       /* port of the redirect's listener (127.0.0.1) */
	bool hold;                  /* set up, but start the command at jail_go */
	const char *hostname;       /* the jail's UTS name; NULL: "agentmux" */
	/* Files and dirs in the project (absolute) kept read-only: what the host's tools run. */
	char *const *protect;
	size_t nprotect;
	/*
	 * A dir of the jail (absolute, not under HOME, /tmp or the project)
	 * beneath which only files and dirs can be made: no link, socket,
	 * FIFO or device. No writable rule may reach it from above (refused).
	 * NULL: none. A worktree session's shared git dir, which the host's
	 * git reads while the jail runs.
	 */
	const char *sealed;
	/*
	 * A main-tree project's .git dir is seen here instead (absolute, the
	 * sealed dir), writable, its hooks, config and the rest kept as they
	 * would be at PROJECT/.git; the caller binds a dir of its own at
	 * PROJECT/.git (whose links lead here). NULL: .git where it is.
	 */
	const char *gitdir_at;
};

/**
 * Starts CONF's command in a new jail. Returns NULL with *CAUSE (one line,
 * with errno, saying what to do) if anything in the setup fails, including
 * failures inside the child before exec.
 */
struct jail *jail_start(const struct jail_conf *, char **cause);
/**
 * With CONF->hold, jail_start returns as soon as the jail's init is cloned:
 * its set-up (namespaces, mounts, cgroups) goes on while the caller does
 * something else (a snapshot), and the command starts here, once all of it
 * is done. Waits until the command runs; -1 with *CAUSE like jail_start
 * (then jail_free it). The listener (jail_take_listen_fd) is there after.
 */
int jail_go(struct jail *, char **cause);
/**
 * For a held jail: waits until its set-up has handed out its descriptors
 * (the listener and HOME, for jail_take_home_fd), without starting the
 * command. 0 at once if the jail is not held or already there; -1 with
 * *CAUSE like jail_go (then jail_free it).
 */
int jail_wait_setup(struct jail *, char **cause);
/*
 * The same two waits without blocking, for an event loop: watch
 * jail_status_fd for reading (-1 when there is nothing to wait for) and
 * call the poll on each wake-up. jail_setup_poll: 1 once the set-up
 * handed out its descriptors; then jail_go_send releases the command and
 * jail_go_poll says 1 once it runs. 0: not yet; -1 with *CAUSE like
 * jail_go (then jail_free it). The caller bounds the wait (jail_go allows
 * 20 seconds).
 */
int jail_status_fd(struct jail *);
int jail_setup_poll(struct jail *, char **cause);
int jail_go_send(struct jail *, char **cause);
int jail_go_poll(struct jail *, char **cause);
/**
 * Readies in the background what the first jail_start would wait for (as
 * root with cgroup v1: the kernel's cgroup attach lock); changes nothing.
 * For processes about to start a jail, as early as they know it.
 */
void jail_prewarm(void);
/** Kills whatever still runs and frees; NULL is a no-op. */
void jail_free(struct jail *);
/**
 * Opens a door into the jail's network: a helper process in the jail's
 * user and network namespaces (entered through the descriptors the
 * jail's init handed out at its start; not its mounts or pids: nothing in
 * the jail sees it) that makes one TCP socket there for each byte written to
 * the returned descriptor, a non-blocking SOCK_SEQPACKET socket the
 * caller owns. A socket keeps the namespace it was made in: connected
 * from the host, it reaches the jail's loopback, and the jail gains no
 * way out. The helper ends when the descriptor is closed, or this
 * process ends; *PIDFD (the caller's, -1 if none) says when, to reap it.
 * -1 with *CAUSE.
 */
int jail_door_open(struct jail *, int *pidfd, char **cause);
/**
 * One answer of a door: 1 with *FD a new non-blocking, close-on-exec TCP
 * socket in the jail's network namespace (the caller's); 0 if none has
 * come yet; -1 with *CAUSE if the helper failed or ended.
 */
int jail_door_recv(int door, int *fd, char **cause);
/** The host pid of the jail's init. */
pid_t jail_pid(struct jail *);
/** What the jail's cgroups count of it, init included; -1 in a figure none counts. */
struct jail_usage {
	int64_t cpu_ns;       /* CPU time of its processes, live and ended */
	int64_t memory;       /* bytes charged to it (page cache too), as its memory limit counts them */
	int64_t procs;        /* its live processes */
};
/**
 * Reads what the jail's cgroups count (cgroup v2, or v1's cpuacct, memory
 * and pids): 0 with *U, or -1 if the jail has no cgroup (or has ended).
 */
int jail_usage(struct jail *, struct jail_usage *u);
/**
 * The listening TCP socket made inside the jail's network namespace; the
 * caller takes ownership (a second call returns -1).
 */
int jail_take_listen_fd(struct jail *);
/**
 * With CONF->transparent: the redirect's listener (TCP), the resolver's
 * UDP socket and its TCP listener, all made inside the jail's network
 * namespace; the caller takes ownership (a second call gives -1s).
 */
void jail_take_net_fds(struct jail *, int *redirect, int *dns_udp,
    int *dns_tcp);
/**
 * A descriptor of the jail's HOME (its private tmpfs), opened before the
 * command starts; the caller takes ownership (a second call returns -1).
 * It keeps HOME readable after the jail has ended. Everything in it was
 * made by the jailed command: never follow a symlink found there.
 */
int jail_take_home_fd(struct jail *);
/** The pty master (pty mode), or -1; owned by the jail. */
int jail_pty_fd(struct jail *);
/** Pipe mode: the command's stdin (write end), stdout and stderr (read ends); owned by the jail. */
int jail_stdin_fd(struct jail *);
int jail_stdout_fd(struct jail *);
int jail_stderr_fd(struct jail *);
/** Closes the command's stdin (pipe mode): end of input. */
void jail_close_stdin(struct jail *);
/** Sets the pty's window size (TIOCSWINSZ); the command gets SIGWINCH. */
int jail_resize(struct jail *, unsigned short rows, unsigned short cols);
/** Sends SIG to the command (through the jail's init). */
void jail_signal(struct jail *, int sig);
/** SIGKILLs the whole jail (thawing it if it is frozen, for the kill to take effect). */
void jail_kill(struct jail *);
/**
 * Reaps the jail's init without blocking: returns 1 and sets *STATUS (exit
 * code, or 128+N for signal N) once it has exited, 0 while it runs.
 */
int jail_reap(struct jail *, int *status);
/** How far jail_freeze has got. */
enum jail_freeze {
	JAIL_THAWED,
	JAIL_FREEZING,        /* asked; a process may still run */
	JAIL_FROZEN,          /* no process of the jail runs until jail_thaw */
};

/**
 * Freezes every process of the jail, for as long as it takes, without
 * their knowing: with the cgroup freezer where the jail has a cgroup;
 * else its init stops every other process with SIGSTOP (a fork racing it
 * is stopped too, and processes still exiting are waited for) and keeps
 * looking: a process that runs again (something sent it SIGCONT) gets
 * the whole jail killed. Returns at once; jail_freeze_poll says when
 * every process has stopped. -1 with *CAUSE if it cannot be asked.
 */
int jail_freeze(struct jail *, char **cause);
/**
 * Where the freeze is, in *STATE. -1 with *CAUSE if it failed: a
 * process could not be stopped, or ran again; the jail should be killed
 * (the init kills it itself in the second case).
 */
int jail_freeze_poll(struct jail *, enum jail_freeze *state, char **cause);
/** Lets a frozen (or freezing) jail run again; -1 with *CAUSE. */
int jail_thaw(struct jail *, char **cause);
/** How this jail is frozen ("cgroup v1 freezer", ...); borrowed. */
const char *jail_freeze_how(struct jail *);

/** What the jail's processes have written to storage (write_bytes of /proc/PID/io). */
struct jail_written {
	uint64_t bytes;       /* the live processes', and those of every one that ended */
	unsigned procs;       /* processes counted */
	unsigned unread;      /* processes whose counters could not be read */
};

/**
 * Asks the jail's init to count what every process of the jail has
 * written so far (it reads them children first, so that one ending
 * meanwhile is counted in its parent). The answer comes through
 * jail_count_poll; a frozen cgroup answers once thawed. -1 with *CAUSE.
 */
int jail_count(struct jail *, char **cause);
/** 1 with *W once the answer to jail_count has come, 0 while it has not. */
int jail_count_poll(struct jail *, struct jail_written *w);

/** What applied, as a JSON object (namespaces, seccomp, landlock ABI, limits and how). Borrowed. */
const char *jail_summary(struct jail *);

/**
 * Resolves the project for DIR: its git top-level, else DIR itself. Refuses
 * "/", the home directory itself and directories not owned by the user,
 * each with a *CAUSE saying why and what to do. *REAL is the caller's.
 */
int jail_project(const char *dir, char **real, char **cause);
/**
 * Adds to OUT the unix sockets that programs in the host's network
 * namespace have bound under PROJECT (from /proc/net/unix). A jail cannot
 * stop a connect to a socket file it can see: network namespaces do not
 * cover them and Landlock cannot scope them.
 */
void jail_project_sockets(const char *project, struct strv *out);
/**
 * Adds to PATHS every socket file that programs in the host's network
 * namespace have bound (from /proc/net/unix, one read), and to DIRS, at
 * the same index, the real path of the dir each is in: what
 * jail_project_holds matches, for any number of projects at once.
 */
void jail_host_sockets(struct strv *paths, struct strv *dirs);
/** True if DIR (a real path, from jail_host_sockets) is PROJECT or under it. */
bool jail_project_holds(const char *project, const char *dir);
/** Checks that unprivileged user namespaces work here; -1 with *CAUSE saying how to enable them. */
int jail_probe_userns(char **cause);
/** The Landlock ABI version the kernel offers, 0 if none. */
int jail_probe_landlock(void);
/** The libseccomp API level if seccomp filters work, else -1 with *CAUSE. */
int jail_probe_seccomp(char **cause);
/** Checks overlayfs with userxattr in a user namespace; -1 with *CAUSE. */
int jail_probe_overlay(char **cause);
/** How limits will be enforced here (cgroup v2, v1 or rlimits); caller frees. */
char *jail_probe_limits(void);

#endif
