/* The jail's filesystem: a mount script the child plans and runs, pivoting into a fresh tmpfs root. */
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jail/jail-int.h"

/* Our own copy of struct mount_attr: <linux/mount.h> clashes with <sys/mount.h>. */
struct jail_mount_attr {
	uint64_t attr_set;
	uint64_t attr_clr;
	uint64_t propagation;
	uint64_t userns_fd;
};

#define JAIL_ATTR_RDONLY 0x01
#define JAIL_ATTR_NOSUID 0x02
#define JAIL_ATTR_NODEV  0x04
#define JAIL_ATTR_NOEXEC 0x08
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif

/* Host /etc entries that programs and language runtimes read; never secrets. */
static const char *const jail_etc_host[] = {
	"alternatives", "ld.so.cache", "localtime", "timezone", "os-release",
	"protocols", "services", "mime.types", "ssl/openssl.cnf", "inputrc",
	"bash.bashrc", "profile", "perl", "nodejs", "gai.conf", "magic",
	"manpath.config",
};
/* Prefixes of versioned runtime dirs in /etc (java-17-openjdk, python3.11). */
static const char *const jail_etc_prefixes[] = { "java-", "python3" };

/* Parts of a new /proc that would reach the host kernel if written (by a mapped root). */
static const char *const jail_proc_ro[] = {
	"sys", "sysrq-trigger", "irq", "bus", "fs",
};

static const char *const jail_dev_nodes[] = {
	"null", "zero", "full", "random", "urandom", "tty",
};

/* A mount of the user's own paths, sorted by target before it joins the script. */
struct jail_umount {
	enum jail_mop_kind kind;
	int flags;
	char *src;      /* host path, or NULL */
	char *dst;      /* jail path */
	char *data;
	size_t order;
};

struct jail_umounts {
	struct jail_umount *v;
	size_t n;
};

static struct jail_mop *
jail_mop_add(struct jail_plan *p, enum jail_mop_kind kind, int flags,
    const char *src, const char *dst, const char *data)
{
	struct jail_mop *m;

	if (p->nmops == p->mopcap) {
		p->mopcap = p->mopcap == 0 ? 64 : p->mopcap * 2;
		p->mops = xreallocarray(p->mops, p->mopcap, sizeof *p->mops);
	}
	m = &p->mops[p->nmops++];
	memset(m, 0, sizeof *m);
	m->kind = kind;
	m->flags = flags;
	m->mode = 0755;
	if (flags & JAIL_MOP_SELF)
		m->src = xprintf(JAIL_NEWROOT "%s", dst);
	else if (src != NULL)
		m->src = xprintf(JAIL_OLDROOT "%s", src);
	m->dst = xprintf(JAIL_NEWROOT "%s", strcmp(dst, "/") == 0 ? "" : dst);
	m->data = data != NULL ? xstrdup(data) : NULL;
	m->what = xstrdup(src != NULL ? src : dst);
	return m;
}

void
jail_mount_plan_free(struct jail_plan *p)
{
	size_t i;

	for (i = 0; i < p->nmops; i++) {
		free(p->mops[i].src);
		free(p->mops[i].dst);
		free(p->mops[i].data);
		free(p->mops[i].what);
	}
	free(p->mops);
	p->mops = NULL;
	p->nmops = p->mopcap = 0;
}

/* Host files larger than this are bound rather than copied into the jail's /etc. */
#define JAIL_COPY_MAX (256 * 1024)

/* A small host file's contents, or NULL if it cannot be read whole. */
static char *
jail_mount_slurp(const char *path, size_t *len)
{
	struct stat st;
	char *data;
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return NULL;
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    st.st_size > JAIL_COPY_MAX) {
		close(fd);
		return NULL;
	}
	data = xmalloc((size_t)st.st_size + 1);
	n = read(fd, data, (size_t)st.st_size);
	close(fd);
	if (n != st.st_size) {
		free(data);
		return NULL;
	}
	data[n] = '\0';
	*len = (size_t)n;
	return data;
}

/*
 * Shows a host path at the same place: symlinks are replicated, small
 * files copied (cheaper than a mount), directories and large files bound
 * read-only; what is missing is skipped.
 */
static void
jail_mount_host(struct jail_plan *p, const char *path)
{
	char link[PATH_MAX], *data;
	struct stat st;
	struct jail_mop *m;
	size_t len;
	ssize_t n;

	if (lstat(path, &st) == -1)
		return;
	if (S_ISLNK(st.st_mode)) {
		if ((n = readlink(path, link, sizeof link - 1)) <= 0)
			return;
		link[n] = '\0';
		jail_mop_add(p, JAIL_MOP_SYMLINK, 0, NULL, path, link);
		return;
	}
	if (S_ISREG(st.st_mode) && (data = jail_mount_slurp(path, &len)) !=
	    NULL) {
		m = jail_mop_add(p, JAIL_MOP_FILE, 0, NULL, path, NULL);
		m->data = data;
		m->len = len;
		m->mode = st.st_mode & 0755;
		return;
	}
	if (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode))
		jail_mop_add(p, JAIL_MOP_BIND, JAIL_MOP_RO |
		    (S_ISREG(st.st_mode) ? JAIL_MOP_ISFILE : 0), path, path,
		    NULL);
}

static void
jail_mount_system(struct jail_plan *p)
{
	static const char *const tops[] = {
		"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
	};
	size_t i;

	jail_mop_add(p, JAIL_MOP_BIND, JAIL_MOP_RO, "/usr", "/usr", NULL);
	for (i = 0; i < nitems(tops); i++)
		jail_mount_host(p, tops[i]);
}

static void
jail_mount_file(struct jail_plan *p, const char *dst, char *text)
{
	struct jail_mop *m = jail_mop_add(p, JAIL_MOP_FILE, 0, NULL, dst, NULL);

	m->data = text;
	m->len = strlen(text);
	m->mode = 0644;
}

/*
 * Our own passwd and group entries: from the local files when they are
 * there (cheap: no NSS modules, no nscd), else from NSS.
 */
static bool
jail_mount_pw(uid_t uid, struct passwd *out, char **buf)
{
	struct passwd *pw = NULL;
	FILE *fp;

	if ((fp = fopen("/etc/passwd", "re")) != NULL) {
		while ((pw = fgetpwent(fp)) != NULL && pw->pw_uid != uid)
			;
		fclose(fp);
	}
	if (pw == NULL)
		pw = getpwuid(uid);
	if (pw == NULL)
		return false;
	*buf = xprintf("%s%c%s%c%s", pw->pw_name, 0, pw->pw_gecos != NULL ?
	    pw->pw_gecos : "", 0, pw->pw_shell != NULL ? pw->pw_shell : "");
	out->pw_name = *buf;
	out->pw_gecos = *buf + strlen(*buf) + 1;
	out->pw_shell = out->pw_gecos + strlen(out->pw_gecos) + 1;
	return true;
}

static char *
jail_mount_grname(gid_t gid)
{
	struct group *gr = NULL;
	FILE *fp;

	if ((fp = fopen("/etc/group", "re")) != NULL) {
		while ((gr = fgetgrent(fp)) != NULL && gr->gr_gid != gid)
			;
		fclose(fp);
	}
	if (gr == NULL)
		gr = getgrgid(gid);
	return gr != NULL ? xstrdup(gr->gr_name) : NULL;
}

/* passwd and group with root, the user and nobody: enough for id, ls -l, ssh, git. */
static void
jail_mount_users(struct jail_plan *p)
{
	const struct jail_conf *c = p->conf;
	struct passwd pw;
	char *pwbuf = NULL, *gname = jail_mount_grname(p->gid);
	bool found = jail_mount_pw(p->uid, &pw, &pwbuf);
	const char *name = found ? pw.pw_name : "user";
	const char *shell = found && *pw.pw_shell == '/' ? pw.pw_shell :
	    "/bin/sh";
	struct buf b;

	buf_init(&b);
	if (p->uid != 0)
		buf_adds(&b, "root:x:0:0:root:/root:/usr/sbin/nologin\n");
	buf_printf(&b, "%s:x:%lu:%lu:%s:%s:%s\n", name, (unsigned long)p->uid,
	    (unsigned long)p->gid, found ? pw.pw_gecos : "", c->home, shell);
	buf_adds(&b, "nobody:x:65534:65534:nobody:/nonexistent:"
	    "/usr/sbin/nologin\n");
	jail_mount_file(p, "/etc/passwd", buf_steal(&b));
	if (p->gid != 0)
		buf_adds(&b, "root:x:0:\n");
	buf_printf(&b, "%s:x:%lu:\n", gname != NULL ? gname : name,
	    (unsigned long)p->gid);
	buf_adds(&b, "nogroup:x:65534:\n");
	jail_mount_file(p, "/etc/group", buf_steal(&b));
	free(pwbuf);
	free(gname);
}

static void
jail_mount_etc(struct jail_plan *p)
{
	const struct jail_conf *c = p->conf;
	const char *host = c->hostname != NULL ? c->hostname : "agentmux";
	char path[PATH_MAX];
	struct dirent *de;
	DIR *d;
	size_t i;

	jail_mop_add(p, JAIL_MOP_DIR, 0, NULL, "/etc", NULL);
	jail_mount_users(p);
	jail_mount_file(p, "/etc/hosts", xprintf("127.0.0.1\tlocalhost\n"
	    "::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\t%s\n", host));
	jail_mount_file(p, "/etc/hostname", xprintf("%s\n", host));
	/*
	 * Names come from files only, unless agentmux answers them: with
	 * transparent interception the jail's resolver is agentmux's own.
	 */
	jail_mount_file(p, "/etc/nsswitch.conf", xprintf("passwd: files\n"
	    "group: files\nshadow: files\nhosts: files%s\nnetworks: files\n"
	    "protocols: files\nservices: files\nethers: files\nrpc: files\n",
	    p->conf->transparent ? " dns" : ""));
	if (p->conf->transparent)
		jail_mount_file(p, "/etc/resolv.conf", xstrdup("# agentmux "
		    "answers every name itself; nothing goes upstream.\n"
		    "nameserver 127.0.0.53\n"));
	for (i = 0; i < nitems(jail_etc_host); i++) {
		snprintf(path, sizeof path, "/etc/%s", jail_etc_host[i]);
		jail_mount_host(p, path);
	}
	if ((d = opendir("/etc")) != NULL) {
		while ((de = readdir(d)) != NULL) {
			for (i = 0; i < nitems(jail_etc_prefixes); i++) {
				if (strncmp(de->d_name, jail_etc_prefixes[i],
				    strlen(jail_etc_prefixes[i])) != 0)
					continue;
				snprintf(path, sizeof path, "/etc/%s",
				    de->d_name);
				jail_mount_host(p, path);
			}
		}
		closedir(d);
	}
	jail_mop_add(p, JAIL_MOP_DIR, 0, NULL, "/etc/ssl/certs", NULL);
	if (c->ca_bundle != NULL) {
		char *real = realpath(c->ca_bundle, NULL);

		jail_mop_add(p, JAIL_MOP_BIND, JAIL_MOP_RO | JAIL_MOP_ISFILE,
		    real != NULL ? real : c->ca_bundle,
		    "/etc/ssl/certs/ca-certificates.crt", NULL);
		free(real);
		jail_mop_add(p, JAIL_MOP_SYMLINK, 0, NULL, "/etc/ssl/cert.pem",
		    "certs/ca-certificates.crt");
	}
}

static void
jail_mount_proc(struct jail_plan *p)
{
	char path[64];
	size_t i;

	jail_mop_add(p, JAIL_MOP_PROC, 0, NULL, "/proc", NULL);
	/*
	 * Read-only over themselves, or a caller mapped to root could write
	 * the host's kernel.core_pattern and get code run as host root.
	 */
	for (i = 0; i < nitems(jail_proc_ro); i++) {
		snprintf(path, sizeof path, "/proc/%s", jail_proc_ro[i]);
		/* The new proc has what the host's has here: all global. */
		if (access(path, F_OK) == 0)
			jail_mop_add(p, JAIL_MOP_BIND, JAIL_MOP_SELF |
			    JAIL_MOP_RO | JAIL_MOP_NOEXEC, NULL, path, NULL);
	}
}

static void
jail_mount_dev(struct jail_plan *p)
{
	const struct jail_conf *c = p->conf;
	char path[64], *opts;
	size_t i;

	jail_mop_add(p, JAIL_MOP_TMPFS, JAIL_MOP_NOEXEC, NULL, "/dev",
	    "mode=0755,size=64k,nr_inodes=64");
	for (i = 0; i < nitems(jail_dev_nodes); i++) {
		snprintf(path, sizeof path, "/dev/%s", jail_dev_nodes[i]);
		/* Read-only mounts: a mapped root must not chmod host nodes. */
		jail_mop_add(p, JAIL_MOP_BIND, JAIL_MOP_RO | JAIL_MOP_DEV |
		    JAIL_MOP_ISFILE | JAIL_MOP_NOEXEC, path, path, NULL);
		strv_add(&p->ll_rw_files, path);
	}
	jail_mop_add(p, JAIL_MOP_SYMLINK, 0, NULL, "/dev/ptmx", "pts/ptmx");
	jail_mop_add(p, JAIL_MOP_SYMLINK, 0, NULL, "/dev/fd", "/proc/self/fd");
	jail_mop_add(p, JAIL_MOP_SYMLINK, 0, NULL, "/dev/stdin",
	    "/proc/self/fd/0");
	jail_mop_add(p, JAIL_MOP_SYMLINK, 0, NULL, "/dev/stdout",
	    "/proc/self/fd/1");
	jail_mop_add(p, JAIL_MOP_SYMLINK, 0, NULL, "/dev/stderr",
	    "/proc/self/fd/2");
	jail_mop_add(p, JAIL_MOP_DEVPTS, 0, NULL, "/dev/pts",
	    "newinstance,ptmxmode=0666,mode=620");
	opts = xprintf("mode=1777,size=%lld", (long long)c->limits.tmp_size);
	jail_mop_add(p, JAIL_MOP_TMPFS, JAIL_MOP_NOEXEC, NULL, "/dev/shm",
	    opts);
	free(opts);
	jail_mop_add(p, JAIL_MOP_RDONLY, 0, NULL, "/dev", NULL);
	strv_add(&p->ll_rw_dirs, "/dev/pts");
	strv_add(&p->ll_rw_dirs, "/dev/shm");
}

static void
jail_umount_add(struct jail_umounts *u, enum jail_mop_kind kind, int flags,
    const char *src, const char *dst, char *data)
{
	struct jail_umount *m;

	u->v = xreallocarray(u->v, u->n + 1, sizeof *u->v);
	m = &u->v[u->n];
	m->kind = kind;
	m->flags = flags;
	m->src = src != NULL ? xstrdup(src) : NULL;
	m->dst = xstrdup(dst);
	m->data = data;
	m->order = u->n++;
}

static int
jail_umount_cmp(const void *a, const void *b)
{
	const struct jail_umount *x = a, *y = b;
	int r = strcmp(x->dst, y->dst);

	if (r != 0)
		return r;
	return x->order < y->order ? -1 : x->order > y->order;
}

static void
jail_umounts_free(struct jail_umounts *u)
{
	size_t i;

	for (i = 0; i < u->n; i++) {
		free(u->v[i].src);
		free(u->v[i].dst);
		free(u->v[i].data);
	}
	free(u->v);
}

/* True if A is B or lies under it. */
static bool
jail_path_under(const char *a, const char *b)
{
	size_t n = strlen(b);

	if (strcmp(b, "/") == 0)
		return true;
	return strncmp(a, b, n) == 0 && (a[n] == '\0' || a[n] == '/');
}

/*
 * A path the user asked to mount must be absolute, must not uncover the
 * hidden home directory, and must stay out of what the jail synthesises.
 */
static int
jail_mount_check_target(struct jail_plan *p, const char *what,
    const char *path, char **cause)
{
	static const char *const reserved[] = { "/proc", "/dev", "/etc",
	    "/sys" };
	size_t i;

	if (*path != '/') {
		*cause = xprintf("cannot mount %s %s in the jail: the path is "
		    "not absolute", what, path);
		return -1;
	}
	if (jail_path_under(p->conf->home, path)) {
		*cause = xprintf("cannot mount %s %s in the jail: it would "
		    "uncover the home directory %s", what, path, p->conf->home);
		return -1;
	}
	for (i = 0; i < nitems(reserved); i++) {
		if (jail_path_under(path, reserved[i])) {
			*cause = xprintf("cannot mount %s %s in the jail: %s "
			    "belongs to the jail itself", what, path,
			    reserved[i]);
			return -1;
		}
	}
	return 0;
}

/* Overlay options cannot carry these characters without escaping; refuse them. */
static int
jail_mount_check_chars(const char *path, char **cause)
{
	if (strpbrk(path, ",:\\\n") != NULL) {
		*cause = xprintf("cannot overlay %s: the path contains ',', "
		    "':' or '\\'; rename it", path);
		return -1;
	}
	return 0;
}

static int
jail_mount_overlays(struct jail_plan *p, struct jail_umounts *u,
    char **cause)
{
	const struct jail_conf *c = p->conf;
	char *lower = NULL, *upper = NULL, *work = NULL;
	size_t i;

	for (i = 0; i < c->noverlays; i++) {
		const struct jail_overlay *o = &c->overlays[i];

		if (jail_mount_check_target(p, "the overlay", o->path,
		    cause) == -1)
			return -1;
		lower = realpath(o->lower != NULL ? o->lower : o->path, NULL);
		upper = realpath(o->upper, NULL);
		work = realpath(o->work, NULL);
		if (lower == NULL || upper == NULL || work == NULL) {
			*cause = xprintf("cannot overlay %s: %s", o->path,
			    strerror(errno));
			goto fail;
		}
		if (jail_mount_check_chars(lower, cause) == -1 ||
		    jail_mount_check_chars(upper, cause) == -1 ||
		    jail_mount_check_chars(work, cause) == -1)
			goto fail;
		/*
		 * userxattr: the only overlay an unprivileged user namespace
		 * may mount. volatile last, for jail_mount_overlay to drop.
		 */
		jail_umount_add(u, JAIL_MOP_OVERLAY, 0, NULL, o->path,
		    xprintf("lowerdir=" JAIL_OLDROOT "%s,upperdir=" JAIL_OLDROOT
		    "%s,workdir=" JAIL_OLDROOT "%s,userxattr" JAIL_OVL_VOLATILE,
		    lower, upper, work));
		if (!jail_path_under(o->path, c->home))
			strv_add(&p->ll_rw_dirs, o->path);
		free(lower);
		free(upper);
		free(work);
	}
	return 0;
fail:
	free(lower);
	free(upper);
	free(work);
	return -1;
}

static int
jail_mount_binds(struct jail_plan *p, struct jail_umounts *u, char **cause)
{
	const struct jail_conf *c = p->conf;
	struct stat st;
	char *real;
	size_t i;

	for (i = 0; i < c->nbinds; i++) {
		const struct jail_bind *b = &c->binds[i];
		const char *src = b->src != NULL ? b->src : b->path;

		if (jail_mount_check_target(p, "the bind", b->path, cause) == -1)
			return -1;
		if ((real = realpath(src, NULL)) == NULL ||
		    stat(real, &st) == -1) {
			*cause = xprintf("cannot bind %s into the jail: %s",
			    src, strerror(errno));
			free(real);
			return -1;
		}
		jail_umount_add(u, JAIL_MOP_BIND, (b->rw ? 0 : JAIL_MOP_RO) |
		    (S_ISDIR(st.st_mode) ? 0 : JAIL_MOP_ISFILE), real, b->path,
		    NULL);
		if (b->rw && !jail_path_under(b->path, c->home))
			strv_add(S_ISDIR(st.st_mode) ? &p->ll_rw_dirs :
			    &p->ll_rw_files, b->path);
		free(real);
	}
	return 0;
}

/*
 * Makes DIR as git would: 0755 whatever agentmux's own umask (077), or
 * with its parent's mode where that is set-gid, as git makes every dir of
 * a repository shared with core.sharedRepository. -1 if it cannot be
 * made; a mode that cannot be set leaves it 0700, still made.
 */
static int
jail_mount_mkdir(const char *dir)
{
	char *parent = xstrndup(dir, (size_t)(strrchr(dir, '/') - dir));
	mode_t mode = 0755;
	struct stat st;
	int fd;

	if (lstat(parent, &st) == 0 && S_ISDIR(st.st_mode) &&
	    (st.st_mode & S_ISGID))
		mode = st.st_mode & 07777;
	free(parent);
	if (mkdir(dir, 0700) == -1)
		return -1;
	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) != -1) {
		(void)fchmod(fd, mode);
		close(fd);
	}
	return 0;
}

/*
 * The host runs what is in .git/hooks and what .git/config names (hooks
 * path, fsmonitor, filters), so both are read-only; .git itself becomes a
 * mount point so that it cannot be renamed away and replaced. The git dirs
 * of linked worktrees (worktrees/, with their commondir and config) are
 * read-only too: git in those worktrees, outside the jail, obeys them. So
 * is info/: its exclude would hide new files from the user's git status,
 * grafts (like a replace ref) put another history in place of the real
 * one, attributes name filters, sparse-checkout hides files. So is a
 * shallow file: a commit written into it hides the history behind it from
 * the user's git, and the user's next git gc prunes that history (one
 * made during the session is taken out at its end, snap-history.c). So is
 * rr-cache/ where it exists: git's rerere replays the resolutions it
 * holds at the user's next merge. One made in the session (its mere
 * existence turns rerere on) is taken out at the end (snap_plant_scan).
 */
static int jail_mount_modules(struct jail_plan *, struct jail_umounts *,
    const char *, int, int, char **);

static int
jail_mount_gitdir(struct jail_plan *p, struct jail_umounts *u,
    const char *gitdir, int depth, char **cause)
{
	static const char *const ro[] = { "hooks", "config", "info",
	    "config.worktree", "worktrees", "shallow", "rr-cache" };
	char *path, *modules;
	struct stat st;
	size_t i;
	int rc;

	for (i = 0; i < nitems(ro); i++) {
		path = xprintf("%s/%s", gitdir, ro[i]);
		if (lstat(path, &st) == -1) {
			/*
			 * A missing hooks, info or worktrees dir could be
			 * created by the agent; worktrees/ is also where a
			 * worktree session started later gets its git dir,
			 * which this jail would then write.
			 */
			if ((i == 0 || i == 2 || i == 4) &&
			    jail_mount_mkdir(path) == 0 &&
			    lstat(path, &st) == 0)
				;
			else if (i == 1) {
				*cause = xprintf("cannot jail this project: %s "
				    "has no config file; run 'git init' in "
				    "the project to repair it", gitdir);
				free(path);
				return -1;
			} else {
				free(path);
				continue;
			}
		}
		if (S_ISLNK(st.st_mode)) {
			*cause = xprintf("cannot jail this project: %s is a "
			    "symlink, which an agent could swap for its own; "
			    "replace it with the file or directory it points "
			    "to", path);
			free(path);
			return -1;
		}
		jail_umount_add(u, JAIL_MOP_BIND, JAIL_MOP_SELF | JAIL_MOP_RO |
		    (S_ISDIR(st.st_mode) ? 0 : JAIL_MOP_ISFILE), NULL, path,
		    NULL);
		free(path);
	}
	/* Submodules keep their own hooks and config under modules/. */
	if (depth >= 4)
		return 0;
	modules = xprintf("%s/modules", gitdir);
	rc = jail_mount_modules(p, u, modules, depth, 0, cause);
	free(modules);
	return rc;
}

/*
 * The git dir GIT, seen at AT (a main-tree session's): its top read only,
 * its dirs writable (refs, logs, objects, what git-lfs or git-annex keep)
 * but those read only anyway (hooks, info, worktrees, rr-cache, modules),
 * the old remotes' (branches, remotes: fetch URLs, as config) and the
 * user's rebase or cherry-pick under way (its todo names commands). The
 * user's git renames its config.lock into place at the top: a jail that
 * could open it for writing held the user's new config, and wrote a
 * core.fsmonitor their next git status ran. Dirs made there later are
 * read only too.
 */
static void
jail_mount_gitdir_rw(struct jail_plan *p, const char *git, const char *at)
{
	static const char *const keep[] = { "hooks", "info", "worktrees",
	    "rr-cache", "modules", "branches", "remotes", "rebase-merge",
	    "rebase-apply", "sequencer" };
	struct dirent *de;
	struct stat st;
	size_t i;
	DIR *d;

	if ((d = opendir(git)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") ==
		    0 || fstatat(dirfd(d), de->d_name, &st,
		    AT_SYMLINK_NOFOLLOW) == -1 || !S_ISDIR(st.st_mode))
			continue;
		for (i = 0; i < nitems(keep) && strcmp(de->d_name, keep[i]) !=
		    0; i++)
			;
		if (i == nitems(keep))
			strv_addf(&p->ll_rw_dirs, "%s/%s", at, de->d_name);
	}
	closedir(d);
}

/* True if DIR holds a HEAD: it is a git dir. */
static bool
jail_mount_is_gitdir(const char *dir)
{
	char *head = xprintf("%s/HEAD", dir);
	struct stat st;
	bool is = lstat(head, &st) == 0;

	free(head);
	return is;
}

/*
 * Every dir under .git/modules becomes a mount point, so that none can be
 * renamed away with the read-only binds inside it and a fresh one made in
 * its place (`git submodule update` on the host would run its hooks); the
 * git dirs among them get the same treatment as the project's. A name
 * with a slash (libs/x) is a git dir below a plain dir.
 */
static int
jail_mount_modules(struct jail_plan *p, struct jail_umounts *u,
    const char *dir, int depth, int level, char **cause)
{
	struct dirent *de;
	struct stat st;
	char *sub;
	DIR *d;
	int rc = 0;

	if (level >= 8 || lstat(dir, &st) == -1 || !S_ISDIR(st.st_mode) ||
	    (d = opendir(dir)) == NULL)
		return 0;
	jail_umount_add(u, JAIL_MOP_BIND, JAIL_MOP_SELF, NULL, dir, NULL);
	while (rc == 0 && (de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		sub = xprintf("%s/%s", dir, de->d_name);
		if (lstat(sub, &st) == 0 && S_ISDIR(st.st_mode)) {
			if (jail_mount_is_gitdir(sub)) {
				jail_umount_add(u, JAIL_MOP_BIND, JAIL_MOP_SELF,
				    NULL, sub, NULL);
				rc = jail_mount_gitdir(p, u, sub, depth + 1, cause);
			} else
				rc = jail_mount_modules(p, u, sub, depth,
				    level + 1, cause);
		}
		free(sub);
	}
	closedir(d);
	return rc;
}

/*
 * Snapshots live in agentmux's own repository, out of the jail's reach;
 * a project may still hold refs/agentmux from before, until agentmux
 * brings them over: if it does, it stays read-only inside (and refs a
 * mount point, so that it cannot be renamed away from under them).
 * Nothing is created in the project's .git for it.
 */
static int
jail_mount_snaprefs(struct jail_umounts *u, const char *gitdir, char **cause)
{
	char *refs = xprintf("%s/refs", gitdir);
	char *am = xprintf("%s/refs/agentmux", gitdir);
	struct stat st;
	int rc = 0;

	if (lstat(refs, &st) == 0 && S_ISDIR(st.st_mode) && lstat(am, &st) == 0) {
		if (!S_ISDIR(st.st_mode)) {
			*cause = xprintf("cannot jail this project: %s is not a "
			    "directory; remove it", am);
			rc = -1;
		} else {
			jail_umount_add(u, JAIL_MOP_BIND, JAIL_MOP_SELF, NULL,
			    refs, NULL);
			jail_umount_add(u, JAIL_MOP_BIND, JAIL_MOP_SELF |
			    JAIL_MOP_RO, NULL, am, NULL);
		}
	}
	free(refs);
	free(am);
	return rc;
}

/* True if the user's mounts already have one at DST. */
static bool
jail_umount_has(struct jail_umounts *u, const char *dst)
{
	size_t i;

	for (i = 0; i < u->n; i++) {
		if (strcmp(u->v[i].dst, dst) == 0)
			return true;
	}
	return false;
}

/*
 * True if GITDIR's packed-refs lists refs/heads/agentmux: a branch of the
 * user's own by that name. Read without following a link or waiting on a
 * FIFO; in a file that says it is sorted (as git writes it), only as far
 * as that name would be.
 */
static bool
jail_mount_packed_branch(const char *gitdir)
{
	static const char name[] = "refs/heads/agentmux";
	char *path = xprintf("%s/packed-refs", gitdir), *line = NULL, *ref;
	bool found = false, sorted = false;
	struct stat st;
	size_t cap = 0;
	ssize_t n;
	FILE *fp;
	int fd;

	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	free(path);
	if (fd == -1)
		return false;
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    (fp = fdopen(fd, "r")) == NULL) {
		close(fd);
		return false;
	}
	while (!found && (n = getline(&line, &cap, fp)) > 0) {
		if (line[n - 1] == '\n')
			line[n - 1] = '\0';
		if (line[0] == '#')
			sorted = strstr(line, " sorted") != NULL;
		if (line[0] == '#' || line[0] == '^' ||
		    (ref = strchr(line, ' ')) == NULL)
			continue;
		found = strcmp(ref + 1, name) == 0;
		if (sorted && strcmp(ref + 1, name) > 0)
			break;
	}
	free(line);
	fclose(fp);
	return found;
}

/*
 * A file in DIR so that git never removes it as empty: deleting the last
 * worktree session's branch on the host (discard) removed the dir under a
 * running main-tree jail, whose mount went with it, and the jail could
 * make it again (a link where the next worktree session's ref dir would
 * be). Git reads no ref or reflog from a name starting with a dot.
 */
static void
jail_mount_keep(const char *dir)
{
	char *keep = xprintf("%s/.agentmux-keep", dir);
	int fd;

	fd = open(keep, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	    0644);
	if (fd != -1) {
		(void)fchmod(fd, 0644);
		close(fd);
	}
	free(keep);
}

/*
 * CHAIN (N dirs of GITDIR, each below the one before): each a mount
 * point, so that none can be renamed away and a copy put in its place,
 * the last read-only; made where missing. Where the last is the user's
 * (THEIRS: their branch agentmux is there, or a file, its reflog) nothing
 * is made or bound, and neither where a dir cannot be made (the jail, the
 * same user, cannot make it either). -1 and *CAUSE for a link, or for
 * something else than a dir, on the way.
 */
static int
jail_mount_branch_dirs(struct jail_umounts *u, const char *gitdir,
    const char *const *chain, size_t n, bool theirs, char **cause)
{
	char *path[8];
	struct stat st;
	size_t i, k;
	int rc = 0;

	for (i = 0; i < n; i++)
		path[i] = xprintf("%s/%s", gitdir, chain[i]);
	for (i = 0; rc == 0 && i < n; i++) {
		if (lstat(path[i], &st) == -1) {
			if (errno != ENOENT || theirs ||
			    jail_mount_mkdir(path[i]) == -1)
				break;
		} else if (S_ISLNK(st.st_mode)) {
			*cause = xprintf("cannot jail this project: %s is a "
			    "symlink, which an agent could swap for its own; "
			    "replace it with the directory it points to",
			    path[i]);
			rc = -1;
		} else if (i == n - 1 && (theirs || S_ISREG(st.st_mode)))
			break;
		else if (!S_ISDIR(st.st_mode)) {
			*cause = xprintf("cannot jail this project: %s is not "
			    "a directory, as git makes it; move it away",
			    path[i]);
			rc = -1;
		}
	}
	/*
	 * The dirs of the chain that are there are mount points even where
	 * its last is the user's, a file, or could not be made: none can be
	 * renamed away and a copy put in its place.
	 */
	if (rc == 0) {
		if (i == n)
			jail_mount_keep(path[n - 1]);
		for (k = 0; k < i && k + 1 < n; k++) {
			if (!jail_umount_has(u, path[k]))
				jail_umount_add(u, JAIL_MOP_BIND, JAIL_MOP_SELF,
				    NULL, path[k], NULL);
		}
		if (i == n)
			jail_umount_add(u, JAIL_MOP_BIND, JAIL_MOP_SELF |
			    JAIL_MOP_RO, NULL, path[n - 1], NULL);
	}
	for (i = 0; i < n; i++)
		free(path[i]);
	return rc;
}

/*
 * Worktree sessions keep their branches and reflogs in the shared git dir
 * (refs/heads/agentmux/ID, logs/refs/heads/agentmux/ID), which the user's
 * git writes after the session, outside any jail. A session in the main
 * tree, before or beside one, must not write them: a reflog made a link
 * to a host file took the user's next commit in the worktree, a branch
 * moved hands the user's merge another history. Both agentmux dirs are
 * read-only here, unless the user has a branch of that name (loose, or
 * packed only), where git keeps it: then no worktree session can have a
 * branch (git refuses one below another).
 */
static int
jail_mount_branches(struct jail_umounts *u, const char *gitdir,
    char **cause)
{
	static const char *const refs[] = { "refs", "refs/heads",
	    "refs/heads/agentmux" };
	static const char *const logs[] = { "logs", "logs/refs",
	    "logs/refs/heads", "logs/refs/heads/agentmux" };
	char *loose = xprintf("%s/refs/heads/agentmux", gitdir), *table;
	struct stat st;
	bool theirs;

	/*
	 * A reftable repository (git 2.45 and later) keeps its refs in
	 * reftable/, with refs/heads a file git makes so that older gits
	 * stop: there are no ref dirs to bind (nor, then, any kept from the
	 * jail), and refusing the project would be a regression.
	 */
	table = xprintf("%s/reftable", gitdir);
	if (lstat(table, &st) == 0 && S_ISDIR(st.st_mode)) {
		free(table);
		free(loose);
		return 0;
	}
	free(table);

	if (lstat(loose, &st) == 0)
		theirs = S_ISREG(st.st_mode);
	else
		theirs = errno == ENOENT && jail_mount_packed_branch(gitdir);
	free(loose);
	if (jail_mount_branch_dirs(u, gitdir, refs, nitems(refs), theirs,
	    cause) == -1)
		return -1;
	return jail_mount_branch_dirs(u, gitdir, logs, nitems(logs), theirs,
	    cause);
}

/*
 * A project file the user's own tools run (conf->protect): read-only over
 * itself, and every dir between it and the project a mount point, so that
 * none can be renamed away and replaced. A link is left alone (a bind
 * would land on what it points to); it is only reported if it changes.
 */
static void
jail_mount_protect(struct jail_umounts *u, const char *proj, const char *path)
{
	size_t n = strlen(proj);
	struct stat st;
	char *dir, *s;

	if (!jail_path_under(path, proj) || strcmp(path, proj) == 0 ||
	    lstat(path, &st) == -1 || !(S_ISREG(st.st_mode) ||
	    S_ISDIR(st.st_mode)) || jail_umount_has(u, path))
		return;
	dir = xstrdup(path);
	for (s = dir + n + 1; (s = strchr(s, '/')) != NULL; s++) {
		*s = '\0';
		if (!jail_umount_has(u, dir))
			jail_umount_add(u, JAIL_MOP_BIND, JAIL_MOP_SELF, NULL,
			    dir, NULL);
		*s = '/';
	}
	free(dir);
	jail_umount_add(u, JAIL_MOP_BIND, JAIL_MOP_SELF | JAIL_MOP_RO |
	    (S_ISDIR(st.st_mode) ? 0 : JAIL_MOP_ISFILE), NULL, path, NULL);
}

/* Whether one of the caller's binds is at PATH. */
static bool
jail_mount_bound(const struct jail_conf *c, const char *path)
{
	size_t i;

	for (i = 0; i < c->nbinds; i++)
		if (strcmp(c->binds[i].path, path) == 0)
			return true;
	return false;
}

/*
 * The mounts from FIRST on that were planned at GIT (the project's .git)
 * or below it are made at AT instead, where the jail sees it: SELF binds
 * there bind what the bind of GIT at AT shows, as they would have at GIT.
 */
static int
jail_mount_gitdir_move(struct jail_plan *p, struct jail_umounts *u,
    size_t first, const char *git, const char *at, char **cause)
{
	char *dst, *modules = xprintf("%s/modules", git), *empty = NULL;
	size_t i, n = strlen(git);

	for (i = first; i < u->n; i++) {
		if (!jail_path_under(u->v[i].dst, git) || (u->v[i].src !=
		    NULL && strcmp(u->v[i].src, git) == 0))
			continue;
		/*
		 * Submodules' git dirs stay at .git/modules, bound from the
		 * host's: git writes paths to them relative to where it
		 * finds them (core.worktree, a new submodule's .git file),
		 * which must hold on the host too.
		 */
		if (strcmp(u->v[i].dst, modules) == 0) {
			u->v[i].flags &= ~JAIL_MOP_SELF;
			u->v[i].src = xstrdup(modules);
			continue;
		}
		if (jail_path_under(u->v[i].dst, modules))
			continue;
		dst = xprintf("%s%s", at, u->v[i].dst + n);
		free(u->v[i].dst);
		u->v[i].dst = dst;
	}
	/* ...and are not reached past their binds there: an empty dir of the caller's over them. */
	for (i = 0; empty == NULL && i < p->conf->nbinds; i++) {
		if (strcmp(p->conf->binds[i].path, git) != 0 ||
		    p->conf->binds[i].src == NULL)
			continue;
		dst = xprintf("%s/modules", p->conf->binds[i].src);
		empty = realpath(dst, NULL);
		free(dst);
	}
	if (empty == NULL) {
		*cause = xprintf("cannot jail this project: no empty modules "
		    "dir is bound at %s to cover %s/modules", git, at);
		free(modules);
		return -1;
	}
	dst = xprintf("%s/modules", at);
	jail_umount_add(u, JAIL_MOP_BIND, JAIL_MOP_RO, empty, dst, NULL);
	free(dst);
	free(empty);
	free(modules);
	return 0;
}

static int
jail_mount_project(struct jail_plan *p, struct jail_umounts *u,
    char **cause)
{
	const char *proj = p->conf->project;
	char *git;
	struct stat st;
	size_t i, first;
	int rc = 0;

	jail_umount_add(u, JAIL_MOP_BIND, 0, proj, proj, NULL);
	strv_add(&p->ll_rw_dirs, proj);
	git = xprintf("%s/.git", proj);
	first = u->n;
	if (lstat(git, &st) == 0 && S_ISDIR(st.st_mode)) {
		if (p->conf->gitdir_at != NULL) {
			jail_umount_add(u, JAIL_MOP_BIND, 0, git,
			    p->conf->gitdir_at, NULL);
			jail_mount_gitdir_rw(p, git, p->conf->gitdir_at);
		} else
			jail_umount_add(u, JAIL_MOP_BIND, JAIL_MOP_SELF, NULL,
			    git, NULL);
		rc = jail_mount_gitdir(p, u, git, 0, cause);
		if (rc == 0)
			rc = jail_mount_snaprefs(u, git, cause);
		if (rc == 0)
			rc = jail_mount_branches(u, git, cause);
	} else if (lstat(git, &st) == 0 && S_ISREG(st.st_mode) &&
	    !jail_mount_bound(p->conf, git)) {
		/*
		 * "gitdir: ...": rewritten, it would send the host's git
		 * anywhere. (A bind of the caller's may show another there.)
		 */
		jail_umount_add(u, JAIL_MOP_BIND, JAIL_MOP_SELF | JAIL_MOP_RO |
		    JAIL_MOP_ISFILE, NULL, git, NULL);
	}
	for (i = 0; rc == 0 && i < p->conf->nprotect; i++)
		jail_mount_protect(u, proj, p->conf->protect[i]);
	if (rc == 0 && p->conf->gitdir_at != NULL && lstat(git, &st) == 0 &&
	    S_ISDIR(st.st_mode))
		rc = jail_mount_gitdir_move(p, u, first, git,
		    p->conf->gitdir_at, cause);
	free(git);
	return rc;
}

/*
 * /var/tmp is a link to the private /tmp, unless something the user asked
 * for lives under it (a project, an npm prefix in /var/tmp): a link cannot
 * hold mount points, so it gets a private tmpfs of its own.
 */
static void
jail_mount_var_tmp(struct jail_plan *p, struct jail_umounts *u)
{
	size_t i;

	for (i = 0; i < u->n; i++) {
		if (jail_path_under(u->v[i].dst, "/var/tmp"))
			break;
	}
	if (i == u->n) {
		jail_mop_add(p, JAIL_MOP_SYMLINK, 0, NULL, "/var/tmp", "/tmp");
		return;
	}
	jail_umount_add(u, JAIL_MOP_TMPFS, 0, NULL, "/var/tmp",
	    xprintf("mode=1777,size=%lld",
	    (long long)p->conf->limits.tmp_size));
	strv_add(&p->ll_rw_dirs, "/var/tmp");
}

/*
 * Landlock grants a dir's rights to everything below it, mounts included:
 * the sealed dir can refuse links only if no writable dir lies above it
 * (HOME, /tmp, the project, a bind).
 */
static int
jail_mount_check_sealed(struct jail_plan *p, char **cause)
{
	const char *sealed = p->conf->sealed, *d;
	size_t i;

	if (sealed == NULL)
		return 0;
	if (jail_mount_check_target(p, "the sealed dir", sealed, cause) == -1)
		return -1;
	for (i = 0; i < p->ll_rw_dirs.n; i++) {
		d = p->ll_rw_dirs.v[i];
		if (jail_path_under(sealed, d) && !jail_path_under(d, sealed)) {
			*cause = xprintf("cannot keep links out of %s in the "
			    "jail: %s above it is writable there", sealed, d);
			return -1;
		}
	}
	return 0;
}

/* The user's side: /tmp, HOME, the project, overlays and binds, parents before children. */
static int
jail_mount_user(struct jail_plan *p, char **cause)
{
	const struct jail_conf *c = p->conf;
	struct jail_umounts u = { NULL, 0 };
	size_t i;
	int rc = -1;

	if (c->home == NULL || *c->home != '/' || strcmp(c->home, "/") == 0) {
		*cause = xprintf("cannot use '%s' as the jail's HOME; set HOME "
		    "to your home directory", c->home != NULL ? c->home : "");
		return -1;
	}
	jail_umount_add(&u, JAIL_MOP_TMPFS, 0, NULL, "/tmp",
	    xprintf("mode=1777,size=%lld", (long long)c->limits.tmp_size));
	jail_umount_add(&u, JAIL_MOP_TMPFS, 0, NULL, c->home,
	    xprintf("mode=0700,size=%lld", (long long)c->limits.tmp_size));
	strv_add(&p->ll_rw_dirs, "/tmp");
	strv_add(&p->ll_rw_dirs, c->home);
	if (jail_mount_project(p, &u, cause) == -1 ||
	    jail_mount_overlays(p, &u, cause) == -1 ||
	    jail_mount_binds(p, &u, cause) == -1)
		goto out;
	jail_mount_var_tmp(p, &u);
	if (jail_mount_check_sealed(p, cause) == -1)
		goto out;
	qsort(u.v, u.n, sizeof *u.v, jail_umount_cmp);
	for (i = 0; i < u.n; i++) {
		jail_mop_add(p, u.v[i].kind, u.v[i].flags, u.v[i].src,
		    u.v[i].dst, u.v[i].data);
	}
	rc = 0;
out:
	jail_umounts_free(&u);
	return rc;
}

int
jail_mount_plan(struct jail_plan *p, char **cause)
{
	jail_mount_system(p);
	jail_mount_etc(p);
	jail_mount_proc(p);
	jail_mount_dev(p);
	jail_mop_add(p, JAIL_MOP_DIR, 0, NULL, "/var", NULL);
	return jail_mount_user(p, cause);
}

/* ---- the child's side ---- */

static int
jail_mount_setattr(const char *path, uint64_t set, bool recursive)
{
	struct jail_mount_attr attr = { .attr_set = set };

	return (int)syscall(SYS_mount_setattr, AT_FDCWD, path,
	    recursive ? AT_RECURSIVE : 0, &attr, sizeof attr);
}

/* mkdir -p inside the new root (whose own root exists). */
static void
jail_mount_mkdirs(struct jail_plan *p, const char *path, bool last)
{
	char buf[PATH_MAX], *s;

	/* Usually only the last component is missing: try that first. */
	if (last && (mkdir(path, 0755) == 0 || errno == EEXIST))
		return;
	if (strlen(path) >= sizeof buf)
		jail_child_failx(p, "path too long: %s", path);
	strcpy(buf, path);
	for (s = buf + strlen(JAIL_NEWROOT) + 1; *s != '\0'; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(buf, 0755) == -1 && errno != EEXIST)
			jail_child_fail(p, "cannot create %s in the jail",
			    buf + strlen(JAIL_NEWROOT));
		*s = '/';
	}
	if (last && mkdir(buf, 0755) == -1 && errno != EEXIST)
		jail_child_fail(p, "cannot create %s in the jail",
		    buf + strlen(JAIL_NEWROOT));
}

static void
jail_mount_target(struct jail_plan *p, struct jail_mop *m)
{
	int fd;

	if (!(m->flags & JAIL_MOP_ISFILE)) {
		jail_mount_mkdirs(p, m->dst, true);
		return;
	}
	/* A file to mount on: it may exist already (a bind inside a bind). */
	fd = open(m->dst, O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd == -1 && errno == ENOENT) {
		jail_mount_mkdirs(p, m->dst, false);
		fd = open(m->dst, O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
		    0644);
	}
	if (fd == -1)
		jail_child_fail(p, "cannot create %s in the jail",
		    m->dst + strlen(JAIL_NEWROOT));
	close(fd);
}

static void
jail_mount_bind(struct jail_plan *p, struct jail_mop *m)
{
	uint64_t attr = JAIL_ATTR_NOSUID;

	if (!(m->flags & JAIL_MOP_SELF))
		jail_mount_target(p, m);
	if (mount(m->src, m->dst, NULL, MS_BIND | MS_REC, NULL) == -1)
		jail_child_fail(p, "cannot bind %s into the jail", m->what);
	if (m->flags & JAIL_MOP_RO)
		attr |= JAIL_ATTR_RDONLY;
	if (!(m->flags & JAIL_MOP_DEV))
		attr |= JAIL_ATTR_NODEV;
	if (m->flags & JAIL_MOP_NOEXEC)
		attr |= JAIL_ATTR_NOEXEC;
	if (jail_mount_setattr(m->dst, attr, true) == -1)
		jail_child_fail(p, "cannot make %s %sin the jail", m->what,
		    (m->flags & JAIL_MOP_RO) ? "read-only " : "nosuid ");
}

static void
jail_mount_fs(struct jail_plan *p, struct jail_mop *m, const char *type,
    unsigned long flags)
{
	jail_mount_target(p, m);
	if (mount(type, m->dst, type, flags, m->data) == -1)
		jail_child_fail(p, "cannot mount %s on %s in the jail", type,
		    m->what);
}

/*
 * An overlay is mounted volatile: its unmount, when the jail's last
 * process exits, then does not sync the whole file system its upper dir
 * is on (overlayfs's sync_fs at shutdown). That sync held every session's
 * end until all the file system's dirty data was on disk: 0.5 s here after
 * a worktree's 100 MiB checkout, any length on a busy disk. The price:
 * fsync in an overlay does nothing while the jail runs, and what the
 * session wrote there reaches the disk as any written file does, by the
 * kernel's writeback (agentmux reads it from the page cache after the
 * jail; the objects it imports from it, it syncs itself). A kernel before
 * 5.10 refuses the option: the overlay is mounted without it. (A work dir
 * a volatile mount used keeps work/incompat/volatile, which refuses any
 * later mount of it: each session's dirs are its own, and one left by an
 * earlier session of the same id is removed first, session.c.) No
 * allocation here (the cloned child of a threaded process): the option is
 * cut off in place.
 */
static void
jail_mount_overlay(struct jail_plan *p, struct jail_mop *m,
    unsigned long flags)
{
	size_t n = strlen(m->data), k = strlen(JAIL_OVL_VOLATILE);

	jail_mount_target(p, m);
	if (mount("overlay", m->dst, "overlay", flags, m->data) == 0)
		return;
	if (n > k && strcmp(m->data + n - k, JAIL_OVL_VOLATILE) == 0) {
		m->data[n - k] = '\0';
		if (mount("overlay", m->dst, "overlay", flags, m->data) == 0)
			return;
	}
	jail_child_fail(p, "cannot mount overlay on %s in the jail", m->what);
}

static void
jail_mount_write(struct jail_plan *p, struct jail_mop *m)
{
	int fd;

	fd = open(m->dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, m->mode);
	if (fd == -1 && errno == ENOENT) {
		jail_mount_mkdirs(p, m->dst, false);
		fd = open(m->dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
		    m->mode);
	}
	if (fd == -1 || write(fd, m->data, m->len) != (ssize_t)m->len)
		jail_child_fail(p, "cannot write %s in the jail", m->what);
	close(fd);
}

static void
jail_mop_run(struct jail_plan *p, struct jail_mop *m)
{
	unsigned long base = MS_NOSUID | MS_NODEV;

	switch (m->kind) {
	case JAIL_MOP_TMPFS:
		jail_mount_fs(p, m, "tmpfs", base |
		    ((m->flags & JAIL_MOP_NOEXEC) ? MS_NOEXEC : 0));
		break;
	case JAIL_MOP_BIND:
		jail_mount_bind(p, m);
		break;
	case JAIL_MOP_OVERLAY:
		jail_mount_overlay(p, m, base);
		break;
	case JAIL_MOP_PROC:
		jail_mount_fs(p, m, "proc", base | MS_NOEXEC);
		break;
	case JAIL_MOP_DEVPTS:
		jail_mount_fs(p, m, "devpts", MS_NOSUID | MS_NOEXEC);
		break;
	case JAIL_MOP_DIR:
		jail_mount_mkdirs(p, m->dst, true);
		break;
	case JAIL_MOP_FILE:
		jail_mount_write(p, m);
		break;
	case JAIL_MOP_SYMLINK:
		if (symlink(m->data, m->dst) == 0 || errno == EEXIST)
			break;
		jail_mount_mkdirs(p, m->dst, false);
		if (symlink(m->data, m->dst) == -1)
			jail_child_fail(p, "cannot create %s in the jail",
			    m->what);
		break;
	case JAIL_MOP_RDONLY:
		if (jail_mount_setattr(m->dst, JAIL_ATTR_RDONLY, false) == -1)
			jail_child_fail(p, "cannot make %s read-only", m->what);
		break;
	}
}

/* A tmpfs to stand on, with the new root and the host's old root side by side. */
static void
jail_mount_base(struct jail_plan *p)
{
	if (mount(NULL, "/", NULL, MS_SLAVE | MS_REC, NULL) == -1)
		jail_child_fail(p, "cannot make the jail's mounts private");
	if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV,
	    "mode=0755,size=16k,nr_inodes=16") == -1)
		jail_child_fail(p, "cannot mount the jail's base tmpfs");
	if (chdir("/tmp") == -1 || mkdir("newroot", 0755) == -1 ||
	    mkdir("oldroot", 0755) == -1)
		jail_child_fail(p, "cannot prepare the jail's base");
	if (mount("tmpfs", "newroot", "tmpfs", MS_NOSUID | MS_NODEV,
	    "mode=0755,size=1m,nr_inodes=4096") == -1)
		jail_child_fail(p, "cannot mount the jail's root tmpfs");
	if (syscall(SYS_pivot_root, ".", "oldroot") == -1)
		jail_child_fail(p, "cannot pivot into the jail's base");
	if (chdir("/") == -1)
		jail_child_fail(p, "cannot enter the jail's base");
}

/* Drops the host's root for good and makes the new root the only one. */
static void
jail_mount_finish(struct jail_plan *p)
{
	if (umount2(JAIL_OLDROOT, MNT_DETACH) == -1)
		jail_child_fail(p, "cannot detach the host's root");
	if (chdir(JAIL_NEWROOT) == -1 ||
	    syscall(SYS_pivot_root, ".", ".") == -1 ||
	    umount2(".", MNT_DETACH) == -1 || chdir("/") == -1)
		jail_child_fail(p, "cannot pivot into the jail's root");
	if (jail_mount_setattr("/", JAIL_ATTR_RDONLY, false) == -1)
		jail_child_fail(p, "cannot make the jail's root read-only");
}

void
jail_mount_setup(struct jail_plan *p)
{
	size_t i;

	jail_mount_base(p);
	for (i = 0; i < p->nmops; i++)
		jail_mop_run(p, &p->mops[i]);
	jail_mount_finish(p);
}
