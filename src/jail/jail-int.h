/* Internals shared by the jail's files: the setup plan, shared by the parent and the child it clones. */
#ifndef AGENTMUX_JAIL_INT_H
#define AGENTMUX_JAIL_INT_H

#include <linux/filter.h>

#include "core/core.h"
#include "jail/jail.h"

/* Where the child builds the new root and sees the host's, before pivoting. */
#define JAIL_NEWROOT "/newroot"
#define JAIL_OLDROOT "/oldroot"

/* One step of the mount script (jail-mount.c). */
enum jail_mop_kind {
	JAIL_MOP_TMPFS,     /* tmpfs on DST with options DATA */
	JAIL_MOP_BIND,      /* bind SRC (host) on DST */
	JAIL_MOP_OVERLAY,   /* overlayfs on DST with options DATA */
	JAIL_MOP_PROC,      /* a new proc on DST */
	JAIL_MOP_DEVPTS,    /* a new devpts instance on DST */
	JAIL_MOP_DIR,       /* mkdir -p DST */
	JAIL_MOP_FILE,      /* DST with contents DATA */
	JAIL_MOP_SYMLINK,   /* DST -> DATA */
	JAIL_MOP_RDONLY,    /* make the mount at DST read-only (not recursive) */
};

#define JAIL_MOP_RO       0x01  /* read-only (recursively) */
#define JAIL_MOP_ISFILE   0x02  /* the target is a file, not a dir */
#define JAIL_MOP_DEV      0x04  /* keep device nodes usable */
#define JAIL_MOP_NOEXEC   0x08
#define JAIL_MOP_SELF     0x10  /* bind DST (jail path) over itself */

struct jail_mop {
	enum jail_mop_kind kind;
	int flags;
	mode_t mode;
	char *src;      /* full path as the child sees it (under JAIL_OLDROOT) */
	char *dst;      /* full path as the child sees it (under JAIL_NEWROOT) */
	char *data;
	size_t len;      /* of DATA, for files */
	char *what;     /* for error messages: the path the user knows */
};

#define JAIL_SECCOMP_MAX 1024

/* The overlays' last option (jail-mount.c: jail_mount_overlay). */
#define JAIL_OVL_VOLATILE ",volatile"

enum jail_cg_kind { JAIL_CG_NONE, JAIL_CG_V2, JAIL_CG_V1 };

/*
 * Everything the jail needs: the parent fills in ids, limits and Landlock,
 * the child (a copy) plans and runs the mount script.
 */
struct jail_plan {
	const struct jail_conf *conf;
	uid_t uid;
	gid_t gid;
	char uid_map[64];
	char gid_map[64];

	struct jail_mop *mops;
	size_t nmops, mopcap;

	/* Seccomp: compiled in the parent while the child mounts, sent over, installed last. */
	struct sock_fprog seccomp;
	struct sock_filter *seccomp_buf;  /* JAIL_SECCOMP_MAX instructions */

	/* Landlock (jail-landlock.c): ABI and what will be enforced. */
	int ll_abi;
	uint64_t ll_fs;         /* handled filesystem accesses */
	uint64_t ll_net;        /* handled network accesses */
	uint64_t ll_scoped;
	struct strv ll_rw_dirs;  /* jail paths where writes are allowed */
	struct strv ll_rw_files;

	/* Limits (jail-limits.c). */
	enum jail_cg_kind cg;
	bool nproc_rlimit;       /* RLIMIT_NPROC carries the pids limit */
	bool data_rlimit;        /* RLIMIT_DATA carries the memory limit */
	const char *how_pids;    /* how each limit is enforced, for the summary */
	const char *how_memory;
	const char *how_freeze;  /* how jail_freeze will work */
	char *freezer;           /* the jail's cgroup that can be frozen, or NULL */
	bool freezer_v2;         /* through cgroup.freeze, not freezer.state */
	char *cg_cpu;            /* its cgroups counting CPU time, memory, */
	char *cg_memory;         /* and listing its processes; NULL: none */
	char *cg_procs;

	char *exec_path_env;     /* the PATH of conf->envp, or a default */
	const char *cwd;

	dev_t host_netns_dev;    /* agentmux's own network namespace, */
	ino_t host_netns_ino;    /* which the jail's must not be (0: unknown) */

	int sock;                /* the child's end of the status channel */
	int pipes[3];            /* pipe mode: the command's stdin, stdout, stderr */
};

/* jail-mount.c */
int jail_mount_plan(struct jail_plan *, char **cause);
void jail_mount_plan_free(struct jail_plan *);
void jail_mount_setup(struct jail_plan *);

/* jail-project.c */
char *jail_userns_hint(void);

/* jail-ns.c */
pid_t jail_ns_clone(struct jail_plan *, char **cause);
void jail_ns_ids(struct jail_plan *);
void jail_ns_uts(struct jail_plan *);

/* jail-net.c */
void jail_net_plan(struct jail_plan *);
void jail_net_check(struct jail_plan *);
int jail_net_listen(struct jail_plan *);
/* jail-redirect.c: with conf->transparent, inside the netns before caps drop. */
void jail_redirect_setup(struct jail_plan *, int fds[3]);

/* jail-seccomp.c */
int jail_seccomp_compile(struct sock_fprog *, char **cause);
void jail_seccomp_install(struct jail_plan *);

/* jail-landlock.c */
int jail_landlock_abi(void);
void jail_landlock_plan(struct jail_plan *);
void jail_landlock_apply(struct jail_plan *);
void jail_landlock_json(struct jail_plan *, struct json *);

/* jail-limits.c */
void jail_limits_prewarm(void);
int jail_limits_prepare(struct jail_plan *, char **cause);
struct jail_cg_join;
int jail_limits_join(struct jail_plan *, pid_t pid, struct strv *dirs,
    struct jail_cg_join **, char **cause);
int jail_limits_join_wait(struct jail_cg_join *, char **cause);
void jail_limits_rlimits(struct jail_plan *);
void jail_limits_remove(struct strv *dirs);
void jail_limits_json(struct jail_plan *, struct json *);
/* A jail's cgroups that count what it costs (owned; NULL where there is none). */
struct jail_cg_paths {
	bool v2;
	char *cpu;
	char *memory;
	char *procs;
};
/* Reads them into U (-1 in what none counts); -1 if none could be read. */
int jail_limits_usage(const struct jail_cg_paths *, struct jail_usage *u);
char *jail_limits_describe(void);

/*
 * A running jail's control channel to its init (the status socket, kept
 * once the command runs) and its freezing (jail-freeze.c). The init
 * answers requests of one byte with one message each (jail-initctl.c).
 */
#define JAIL_CTL_COUNT    'I'   /* count what the processes wrote: "i BYTES PROCS UNREAD" */
#define JAIL_CTL_STOP     'S'   /* stop every other process: "s", or "f REASON" */
#define JAIL_CTL_CONTINUE 'C'   /* continue them: "c" */
/* Unasked, from an init holding the jail stopped: "x REASON", then it ends the jail. */

struct jail_ctl {
	int fd;                      /* -1 once closed */
	char *freezer;               /* the cgroup frozen through its files, or NULL */
	bool freezer_v2;
	const char *how;             /* for jail_freeze_how */
	enum jail_freeze state;
	bool count_asked;            /* a count is on its way */
	bool count_new;              /* one arrived that jail_count_poll did not take */
	struct jail_written written;
	char *error;                 /* what the init reported failing, once */
};

void jail_ctl_init(struct jail_ctl *);
void jail_ctl_free(struct jail_ctl *);
/* SIGKILLed: a frozen cgroup must thaw for the kill to take effect. */
void jail_ctl_killed(struct jail_ctl *);
int jail_ctl_freeze(struct jail_ctl *, char **cause);
int jail_ctl_freeze_poll(struct jail_ctl *, enum jail_freeze *, char **cause);
int jail_ctl_thaw(struct jail_ctl *, char **cause);
int jail_ctl_count(struct jail_ctl *, char **cause);
int jail_ctl_count_poll(struct jail_ctl *, struct jail_written *);

/* A jail, as jail.c keeps it. */
struct jail {
	pid_t pid;
	bool reaped;
	int status;
	int listen_fd;
	int home_fd;
	int net_fds[3];    /* redirect listener, resolver UDP and TCP */
	int ns_fds[2];     /* the jail's user and network namespaces (jail-door.c) */
	int pty_fd;
	int in_fd;
	int out_fd;
	int err_fd;
	char *summary;
	struct strv cg_dirs;
	struct jail_cg_join *cg_join;  /* the move into cg_dirs, until done */
	struct jail_cg_paths cg_costs; /* those of cg_dirs that count its costs */
	int sock;          /* the status channel, while the jail is held */
	char *go;          /* the go message (the seccomp program) */
	size_t golen;
	struct jail_ctl ctl;           /* the channel, once the command runs */
};

/* jail-initctl.c: the init's side. */
void jail_initctl_prepare(struct jail_plan *);
void jail_initctl_caps(struct jail_plan *);
void jail_initctl_loop(struct jail_plan *, pid_t cmd) __attribute__((noreturn));

/* jail-spawn.c */
int jail_spawn_pty(struct jail_plan *, int *slave);
void jail_spawn_exec(struct jail_plan *, int slave) __attribute__((noreturn));
void jail_spawn_capset_zero(struct jail_plan *);

/* jail-init.c */
void jail_init_main(struct jail_plan *) __attribute__((noreturn));

/* jail.c: the child's error path and the status channel. */
void jail_child_fail(struct jail_plan *, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));
void jail_child_failx(struct jail_plan *, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));
/* The most descriptors one status message carries. */
#define JAIL_MSG_FDS 4
int jail_send_fds(int sock, const char *tag, const int *fds, int nfds);

#endif
