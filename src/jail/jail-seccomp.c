/* Seccomp: a deny-list compiled once in the parent with libseccomp, installed last in the child. */
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <linux/netlink.h>
#include <linux/seccomp.h>

#include <errno.h>
#include <sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "jail/jail-int.h"

#ifndef CLONE_NEWCGROUP
#define CLONE_NEWCGROUP 0x02000000
#endif

/* Refused with EPERM: debugging other processes, mounts, namespaces, kernel state. */
static const char *const jail_seccomp_deny[] = {
	"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd",
	"mount", "umount", "umount2", "pivot_root", "move_mount", "open_tree",
	"fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
	"unshare", "setns",
	"keyctl", "add_key", "request_key",
	"bpf", "perf_event_open", "userfaultfd",
	"kexec_load", "kexec_file_load",
	"init_module", "finit_module", "delete_module", "create_module",
	"query_module", "get_kernel_syms",
	"iopl", "ioperm", "swapon", "swapoff", "reboot", "acct",
	"quotactl", "quotactl_fd", "open_by_handle_at", "name_to_handle_at",
	"syslog", "settimeofday", "clock_settime", "clock_adjtime", "stime",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	"lookup_dcookie", "vhangup", "nfsservctl", "uselib", "_sysctl",
};

/*
 * Calls that can give a file a mode, and which argument holds it. The
 * project is the host's: a set-uid or set-gid file made in it (a copy of a
 * shell, chmod 4755, as root in the jail) would still be one outside, where
 * nothing mounts the project nosuid. A mode with either bit is refused.
 */
static const struct {
	const char *name;
	unsigned arg;
} jail_seccomp_modes[] = {
	{ "chmod", 1 }, { "fchmod", 1 }, { "fchmodat", 2 }, { "creat", 1 },
	{ "open", 2 }, { "openat", 3 }, { "mknod", 1 }, { "mknodat", 2 },
};

/*
 * Calls whose mode or flags travel in memory, where a filter cannot look:
 * refused as unknown, so that libc falls back to the calls above.
 */
static const char *const jail_seccomp_nosys[] = {
	"clone3", "openat2", "fchmodat2",
};

/*
 * Setting or removing an extended attribute fails as it does on a file
 * system without them (ENOTSUP: cp -a, tar and rsync go on without). A
 * default ACL on a project dir (system.posix_acl_default) would give the
 * files the user makes there later modes that no diff or undo shows, and
 * a file capability (security.capability) is a set-uid bit by another
 * name. Reading them stays allowed. The kernel's own (overlayfs's) are
 * not calls of the command's, and this filter is the command's alone.
 */
static const char *const jail_seccomp_xattr[] = {
	"setxattr", "lsetxattr", "fsetxattr", "setxattrat",
	"removexattr", "lremovexattr", "fremovexattr", "removexattrat",
};

/*
 * Space claimed without a byte written: fallocate fails as it does on a
 * file system without it (EOPNOTSUPP). One call could otherwise take the
 * disk past disk_reserve between two checks, and the write budget
 * (disk_write) counts bytes written, which it never writes. glibc's
 * posix_fallocate then falls back to writing, which the budget counts.
 */
static const char *const jail_seccomp_noalloc[] = {
	"fallocate",
};

/*
 * No hard link: link and linkat fail as they do across file systems
 * (EXDEV), which tools that link already meet where a cache lies on
 * another file system, and copy instead (git's object writes, a local
 * clone without --local). Landlock grants a link
 * with the right to make a file, so a jail could give a second name to a
 * file it may not write, the moment the user's git renamed it into place:
 * linked to config.lock at the top of the project's git dir, it held the
 * user's new .git/config (read only in the jail) and wrote a
 * core.fsmonitor that the user's next git status ran; or give a file git
 * writes in place (COMMIT_EDITMSG) the name of one it must not (packed-refs).
 */
static const char *const jail_seccomp_nolink[] = {
	"link", "linkat",
};

static const uint64_t jail_seccomp_nsflags[] = {
	CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
	CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET,
};

/*
 * Calls newer than some libseccomp, with the number they have on every
 * architecture (fchmodat2: Linux 6.6; the *xattrat calls: 6.13).
 */
static const struct {
	const char *name;
	int nr;
} jail_seccomp_new[] = {
	{ "fchmodat2", 452 }, { "setxattrat", 463 }, { "removexattrat", 466 },
};

/* A syscall by name, or -1 if neither this libseccomp nor the table above knows it. */
static int
jail_seccomp_nr(const char *name)
{
	int nr = seccomp_syscall_resolve_name(name);
	size_t i;

	if (nr != __NR_SCMP_ERROR && nr >= 0)
		return nr;
	for (i = 0; i < nitems(jail_seccomp_new); i++) {
		if (strcmp(name, jail_seccomp_new[i].name) == 0)
			return jail_seccomp_new[i].nr;
	}
	return -1;
}

/* No set-uid or set-gid bit from any call that sets a mode. */
static int
jail_seccomp_setid(scmp_filter_ctx ctx)
{
	static const uint64_t bits[] = { S_ISUID, S_ISGID };
	const uint32_t eperm = SCMP_ACT_ERRNO(EPERM);
	struct scmp_arg_cmp cmp;
	size_t i, j;
	int nr, rc = 0;

	for (i = 0; i < nitems(jail_seccomp_nosys); i++) {
		if ((nr = jail_seccomp_nr(jail_seccomp_nosys[i])) != -1)
			rc |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), nr,
			    0);
	}
	for (i = 0; i < nitems(jail_seccomp_modes); i++) {
		if ((nr = jail_seccomp_nr(jail_seccomp_modes[i].name)) == -1)
			continue;
		for (j = 0; j < nitems(bits); j++) {
			memset(&cmp, 0, sizeof cmp);
			cmp.arg = jail_seccomp_modes[i].arg;
			cmp.op = SCMP_CMP_MASKED_EQ;
			cmp.datum_a = bits[j];
			cmp.datum_b = bits[j];
			rc |= seccomp_rule_add_array(ctx, eperm, nr, 1, &cmp);
		}
	}
	return rc;
}

/*
 * Each of the N calls NAMES fails with ERR, as it would where the file
 * system or kernel lacks what it asks (see the lists above).
 */
static int
jail_seccomp_errno(scmp_filter_ctx ctx, const char *const *names, size_t n,
    int err)
{
	size_t i;
	int nr, rc = 0;

	for (i = 0; i < n; i++) {
		if ((nr = jail_seccomp_nr(names[i])) != -1)
			rc |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(err), nr, 0);
	}
	return rc;
}

static int
jail_seccomp_rules(scmp_filter_ctx ctx)
{
	const uint32_t eperm = SCMP_ACT_ERRNO(EPERM);
	size_t i;
	int nr, rc = 0;

	for (i = 0; i < nitems(jail_seccomp_deny); i++) {
		nr = seccomp_syscall_resolve_name(jail_seccomp_deny[i]);
		if (nr != __NR_SCMP_ERROR && nr >= 0)
			rc |= seccomp_rule_add(ctx, eperm, nr, 0);
	}
	rc |= jail_seccomp_setid(ctx);
	/* No extended attribute set or removed: ENOTSUP, as if there were none. */
	rc |= jail_seccomp_errno(ctx, jail_seccomp_xattr,
	    nitems(jail_seccomp_xattr), ENOTSUP);
	/* No space reserved without writing it: EOPNOTSUPP, as if the call were not there. */
	rc |= jail_seccomp_errno(ctx, jail_seccomp_noalloc,
	    nitems(jail_seccomp_noalloc), EOPNOTSUPP);
	/* No hard link: EXDEV, as across file systems. */
	rc |= jail_seccomp_errno(ctx, jail_seccomp_nolink,
	    nitems(jail_seccomp_nolink), EXDEV);
	for (i = 0; i < nitems(jail_seccomp_nsflags); i++) {
		rc |= seccomp_rule_add(ctx, eperm, SCMP_SYS(clone), 1,
		    SCMP_A0(SCMP_CMP_MASKED_EQ, jail_seccomp_nsflags[i],
		    jail_seccomp_nsflags[i]));
	}
	/* The kernel reads the ioctl number as 32 bits: compare only those. */
	rc |= seccomp_rule_add(ctx, eperm, SCMP_SYS(ioctl), 1,
	    SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCSTI));
	rc |= seccomp_rule_add(ctx, eperm, SCMP_SYS(ioctl), 1,
	    SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCLINUX));
	rc |= seccomp_rule_add(ctx, eperm, SCMP_SYS(socket), 2,
	    SCMP_A0(SCMP_CMP_EQ, AF_NETLINK),
	    SCMP_A2(SCMP_CMP_NE, NETLINK_ROUTE));
	rc |= seccomp_rule_add(ctx, eperm, SCMP_SYS(socket), 1,
	    SCMP_A0(SCMP_CMP_EQ, AF_PACKET));
	/*
	 * No whiteout: renameat2's RENAME_WHITEOUT leaves a 0:0 character
	 * device at the old name, which Landlock's MAKE_CHAR does not see
	 * (a device in a worktree session's ref dir, where only files and
	 * dirs may be made). Only overlayfs needs one, in the kernel.
	 */
	rc |= seccomp_rule_add(ctx, eperm, SCMP_SYS(renameat2), 1,
	    SCMP_A4(SCMP_CMP_MASKED_EQ, RENAME_WHITEOUT, RENAME_WHITEOUT));
	/* Only the plain Linux personality: no ASLR switch-off, no READ_IMPLIES_EXEC. */
	rc |= seccomp_rule_add(ctx, eperm, SCMP_SYS(personality), 1,
	    SCMP_A0(SCMP_CMP_NE, 0));
	return rc;
}

/* Reads the exported BPF program back into memory the child can use as is. */
static int
jail_seccomp_export(scmp_filter_ctx ctx, struct sock_fprog *out)
{
	struct sock_filter *prog = NULL;
	off_t len;
	int fd;

	if ((fd = memfd_create("agentmux-seccomp", MFD_CLOEXEC)) == -1)
		return -1;
	if (seccomp_export_bpf(ctx, fd) != 0 ||
	    (len = lseek(fd, 0, SEEK_END)) <= 0 ||
	    len % (off_t)sizeof *prog != 0)
		goto fail;
	prog = xmalloc((size_t)len);
	if (pread(fd, prog, (size_t)len, 0) != len)
		goto fail;
	close(fd);
	out->filter = prog;
	out->len = (unsigned short)(len / (off_t)sizeof *prog);
	return 0;
fail:
	free(prog);
	close(fd);
	return -1;
}

int
jail_seccomp_compile(struct sock_fprog *out, char **cause)
{
	static struct sock_fprog cached;
	scmp_filter_ctx ctx;
	int rc = -1;

	/* The same program serves every jail of this process. */
	if (cached.filter != NULL) {
		*out = cached;
		return 0;
	}
	if ((ctx = seccomp_init(SCMP_ACT_ALLOW)) == NULL) {
		*cause = xstrdup("cannot create the seccomp filter");
		return -1;
	}
	/* Foreign syscall ABIs (i386, x32) would slip past a native-only list. */
	if (seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH,
	    SCMP_ACT_KILL_PROCESS) != 0 || jail_seccomp_rules(ctx) != 0) {
		*cause = xstrdup("cannot build the seccomp filter");
		goto out;
	}
	if (jail_seccomp_export(ctx, &cached) == -1) {
		*cause = xprintf("cannot compile the seccomp filter: %s",
		    strerror(errno));
		goto out;
	}
	*out = cached;
	rc = 0;
out:
	seccomp_release(ctx);
	return rc;
}

void
jail_seccomp_install(struct jail_plan *p)
{
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &p->seccomp) == -1)
		jail_child_fail(p, "cannot install the seccomp filter");
}
