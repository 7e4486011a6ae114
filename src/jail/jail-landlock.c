/* Landlock: a second wall behind the mounts (writes only where the jail may write, TCP only to the proxy). */
#include <sys/prctl.h>
#include <sys/syscall.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jail/jail-int.h"

/*
 * Our own definitions: the installed <linux/landlock.h> may predate the
 * network rules (ABI 4) and scoping (ABI 6) that the running kernel has.
 */
struct jail_ll_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net;
	uint64_t scoped;
};

struct jail_ll_path_beneath {
	uint64_t allowed_access;
	int32_t parent_fd;
} __attribute__((packed));

struct jail_ll_net_port {
	uint64_t allowed_access;
	uint64_t port;
};

#define JAIL_LL_CREATE_RULESET_VERSION (1U << 0)
#define JAIL_LL_RULE_PATH_BENEATH 1
#define JAIL_LL_RULE_NET_PORT 2

#define JAIL_LL_FS_WRITE_FILE   (1ULL << 1)
#define JAIL_LL_FS_REMOVE_DIR   (1ULL << 4)
#define JAIL_LL_FS_REMOVE_FILE  (1ULL << 5)
#define JAIL_LL_FS_MAKE_CHAR    (1ULL << 6)
#define JAIL_LL_FS_MAKE_DIR     (1ULL << 7)
#define JAIL_LL_FS_MAKE_REG     (1ULL << 8)
#define JAIL_LL_FS_MAKE_SOCK    (1ULL << 9)
#define JAIL_LL_FS_MAKE_FIFO    (1ULL << 10)
#define JAIL_LL_FS_MAKE_BLOCK   (1ULL << 11)
#define JAIL_LL_FS_MAKE_SYM     (1ULL << 12)
#define JAIL_LL_FS_REFER        (1ULL << 13)  /* ABI 2 */
#define JAIL_LL_FS_TRUNCATE     (1ULL << 14)  /* ABI 3 */
#define JAIL_LL_FS_IOCTL_DEV    (1ULL << 15)  /* ABI 5 */
#define JAIL_LL_NET_BIND_TCP    (1ULL << 0)   /* ABI 4 */
#define JAIL_LL_NET_CONNECT_TCP (1ULL << 1)
#define JAIL_LL_SCOPE_ABSTRACT_UNIX (1ULL << 0) /* ABI 6 */
#define JAIL_LL_SCOPE_SIGNAL    (1ULL << 1)

/* Rights on the files of a writable place (a file rule may only hold these). */
#define JAIL_LL_FILE_RIGHTS (JAIL_LL_FS_WRITE_FILE | JAIL_LL_FS_TRUNCATE | \
    JAIL_LL_FS_IOCTL_DEV)

int
jail_landlock_abi(void)
{
	long abi;

	abi = syscall(SYS_landlock_create_ruleset, NULL, 0,
	    JAIL_LL_CREATE_RULESET_VERSION);
	return abi < 0 ? 0 : (int)abi;
}

void
jail_landlock_plan(struct jail_plan *p)
{
	static int abi = -1;

	if (abi == -1)
		abi = jail_landlock_abi();
	p->ll_abi = abi;
	if (abi < 1)
		return;
	/* Reading and executing are left to the mounts; writing is handled here. */
	p->ll_fs = JAIL_LL_FS_WRITE_FILE | JAIL_LL_FS_REMOVE_DIR |
	    JAIL_LL_FS_REMOVE_FILE | JAIL_LL_FS_MAKE_CHAR |
	    JAIL_LL_FS_MAKE_DIR | JAIL_LL_FS_MAKE_REG | JAIL_LL_FS_MAKE_SOCK |
	    JAIL_LL_FS_MAKE_FIFO | JAIL_LL_FS_MAKE_BLOCK | JAIL_LL_FS_MAKE_SYM;
	if (abi >= 2)
		p->ll_fs |= JAIL_LL_FS_REFER;
	if (abi >= 3)
		p->ll_fs |= JAIL_LL_FS_TRUNCATE;
	if (abi >= 5)
		p->ll_fs |= JAIL_LL_FS_IOCTL_DEV;
	/*
	 * Landlock rules name ports, not addresses: with transparent
	 * interception a connect to any port must reach the redirect, so
	 * the network namespace (lo only, the redirect fixed before the
	 * capabilities go) is the wall, and TCP is not restricted here.
	 */
	if (abi >= 4 && !p->conf->transparent)
		p->ll_net = JAIL_LL_NET_CONNECT_TCP;
	if (abi >= 6)
		p->ll_scoped = JAIL_LL_SCOPE_ABSTRACT_UNIX |
		    JAIL_LL_SCOPE_SIGNAL;
}

static void
jail_landlock_path(struct jail_plan *p, int rs, const char *path,
    uint64_t rights)
{
	struct jail_ll_path_beneath pb;
	int fd;

	if ((fd = open(path, O_PATH | O_CLOEXEC)) == -1)
		jail_child_fail(p, "cannot open %s for Landlock", path);
	pb.allowed_access = rights & p->ll_fs;
	pb.parent_fd = fd;
	if (syscall(SYS_landlock_add_rule, rs, JAIL_LL_RULE_PATH_BENEATH, &pb,
	    0) == -1)
		jail_child_fail(p, "cannot add a Landlock rule for %s", path);
	close(fd);
}

/* Whether DIR is PATH or a dir above it (whose rule reaches it). */
static bool
jail_landlock_reaches(const char *dir, const char *path)
{
	size_t n = strlen(dir);

	return strncmp(path, dir, n) == 0 && (path[n] == '\0' ||
	    path[n] == '/' || strcmp(dir, "/") == 0);
}

/*
 * What may be made under a writable dir: no device nodes anywhere, and no
 * FIFO in the project or in a writable bind (a worktree session's git
 * dirs: its admin dir, its branch's ref and reflog dirs), nor in a dir
 * above one, whose rule would reach it, nor below one (the objects
 * overlay in the project's .git has a rule of its own): agentmux and git
 * on the host open files there (the user's git branch lists every
 * branch's ref file), and opening a FIFO for reading waits for a writer.
 * Beneath the sealed dir, no link or socket either: git follows a link
 * where it reads a ref (to /dev/zero: without end).
 */
static uint64_t
jail_landlock_dir_rights(struct jail_plan *p, const char *dir)
{
	uint64_t rights = p->ll_fs & ~(JAIL_LL_FS_MAKE_CHAR |
	    JAIL_LL_FS_MAKE_BLOCK);
	const struct jail_conf *c = p->conf;
	size_t i;

	if (c->project != NULL && (jail_landlock_reaches(dir, c->project) ||
	    jail_landlock_reaches(c->project, dir)))
		rights &= ~JAIL_LL_FS_MAKE_FIFO;
	for (i = 0; i < c->nbinds; i++)
		if (c->binds[i].rw && (jail_landlock_reaches(dir,
		    c->binds[i].path) || jail_landlock_reaches(c->binds[i].path,
		    dir)))
			rights &= ~JAIL_LL_FS_MAKE_FIFO;
	/* Nothing above it is writable (jail_mount_check_sealed). */
	if (c->sealed != NULL && jail_landlock_reaches(c->sealed, dir))
		rights &= ~(JAIL_LL_FS_MAKE_SYM | JAIL_LL_FS_MAKE_SOCK |
		    JAIL_LL_FS_MAKE_FIFO);
	return rights;
}

void
jail_landlock_apply(struct jail_plan *p)
{
	struct jail_ll_ruleset_attr attr = {
		.handled_access_fs = p->ll_fs,
		.handled_access_net = p->ll_net,
		.scoped = p->ll_scoped,
	};
	struct jail_ll_net_port np;
	size_t i, size = sizeof attr;
	int rs;

	if (p->ll_abi < 1)
		return;
	/* Older kernels reject a struct larger than they know, even zeroed. */
	if (p->ll_abi < 4)
		size = sizeof attr.handled_access_fs;
	else if (p->ll_abi < 6)
		size = 2 * sizeof attr.handled_access_fs;
	if ((rs = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0)) ==
	    -1)
		jail_child_fail(p, "cannot create the Landlock ruleset");
	for (i = 0; i < p->ll_rw_dirs.n; i++)
		jail_landlock_path(p, rs, p->ll_rw_dirs.v[i],
		    jail_landlock_dir_rights(p, p->ll_rw_dirs.v[i]));
	for (i = 0; i < p->ll_rw_files.n; i++)
		jail_landlock_path(p, rs, p->ll_rw_files.v[i],
		    JAIL_LL_FILE_RIGHTS);
	if (p->ll_net != 0) {
		np.allowed_access = JAIL_LL_NET_CONNECT_TCP;
		np.port = (uint64_t)p->conf->proxy_port;
		if (syscall(SYS_landlock_add_rule, rs, JAIL_LL_RULE_NET_PORT,
		    &np, 0) == -1)
			jail_child_fail(p, "cannot add the Landlock port rule");
	}
	if (syscall(SYS_landlock_restrict_self, rs, 0) == -1)
		jail_child_fail(p, "cannot enforce the Landlock ruleset");
	close(rs);
}

void
jail_landlock_json(struct jail_plan *p, struct json *js)
{
	json_key(js, "landlock");
	json_obj_begin(js);
	json_kint(js, "abi", p->ll_abi);
	json_kbool(js, "filesystem", p->ll_fs != 0);
	json_kbool(js, "network", p->ll_net != 0);
	json_kbool(js, "scoped", p->ll_scoped != 0);
	json_obj_end(js);
}
