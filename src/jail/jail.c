/* Starting a jail from the parent: build the plan, clone, place it in its cgroup, collect its descriptors. */
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "jail/jail-int.h"

/* How long the child may take to set up and exec before we give up on it. */
#define JAIL_START_TIMEOUT_MS 20000

void
jail_child_fail(struct jail_plan *p, const char *fmt, ...)
{
	char msg[1024];
	int saved = errno, n;
	va_list ap;

	msg[0] = 'E';
	va_start(ap, fmt);
	n = vsnprintf(msg + 1, sizeof msg - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n + 1 < sizeof msg)
		snprintf(msg + 1 + n, sizeof msg - 1 - (size_t)n, ": %s",
		    strerror(saved));
	send(p->sock, msg, strlen(msg), MSG_NOSIGNAL);
	_exit(127);
}

void
jail_child_failx(struct jail_plan *p, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	msg[0] = 'E';
	va_start(ap, fmt);
	vsnprintf(msg + 1, sizeof msg - 1, fmt, ap);
	va_end(ap);
	send(p->sock, msg, strlen(msg), MSG_NOSIGNAL);
	_exit(127);
}

int
jail_send_fds(int sock, const char *tag, const int *fds, int nfds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * JAIL_MSG_FDS)];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = (void *)tag, .iov_len = strlen(tag) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (nfds < 1 || util_cmsg_put(&msg, u.buf, sizeof u.buf, fds,
	    (size_t)nfds) == -1)
		return -1;
	return sendmsg(sock, &msg, MSG_NOSIGNAL) == -1 ? -1 : 0;
}

static void jail_close(int *);

/* Puts FD into *SLOT if that is empty; else FD is closed (a repeat). */
static void
jail_take_one(int *slot, int fd)
{
	if (*slot == -1)
		*slot = fd;
	else
		close(fd);
}

/*
 * Takes the N descriptors of a status message by its tag: "F" the
 * listener, HOME, then the pty master if any; "N" the redirect's listener
 * and the resolver's; "U" the jail's user and network namespaces. Any
 * other message's descriptors, and any beyond those, are closed.
 */
static void
jail_take(struct jail *j, char tag, int *fds, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (tag == 'F' && i < 3)
			jail_take_one(i == 0 ? &j->listen_fd : i == 1 ?
			    &j->home_fd : &j->pty_fd, fds[i]);
		else if (tag == 'N' && i < 3) {
			jail_close(&j->net_fds[i]);
			j->net_fds[i] = fds[i];
		} else if (tag == 'U' && i < 2) {
			jail_close(&j->ns_fds[i]);
			j->ns_fds[i] = fds[i];
		} else
			close(fds[i]);
	}
}

/*
 * Reads what the status channel holds: 1 once the init says the command
 * runs ("R", after an error the command sent if its exec failed), or, with
 * UNTIL_FDS, once it handed out its descriptors ("F"), or once the channel
 * closes (the init is gone); 0 while there is nothing more to read; -1
 * with *CAUSE.
 */
static int
jail_read_status(struct jail *j, bool until_fds, char **cause)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * JAIL_MSG_FDS)];
		struct cmsghdr align;
	} u;
	int fds[JAIL_MSG_FDS];
	size_t nfds;
	char data[1024];
	struct iovec iov = { .iov_base = data, .iov_len = sizeof data - 1 };
	struct msghdr msg;
	ssize_t n;

	for (;;) {
		memset(&msg, 0, sizeof msg);
		msg.msg_iov = &iov;
		msg.msg_iovlen = 1;
		msg.msg_control = u.buf;
		msg.msg_controllen = sizeof u.buf;
		if ((n = util_recvmsg(j->sock, &msg, MSG_DONTWAIT |
		    MSG_CMSG_CLOEXEC)) == -1) {
			if (errno == EAGAIN)
				return 0;
			*cause = xprintf("cannot read the jail's status: %s",
			    strerror(errno));
			return -1;
		}
		if (n == 0 && j->listen_fd == -1) {
			/* Killed or crashed before it could say anything. */
			*cause = xstrdup("the jail's setup ended before it "
			    "started the command");
			return -1;
		}
		if (n == 0)
			return 1;
		data[n] = '\0';
		nfds = util_cmsg_take(&msg, fds, nitems(fds));
		jail_take(j, data[0], fds, nfds);
		if (data[0] == 'R')
			return 1;
		if (data[0] == 'F') {
			if (until_fds)
				return 1;
		} else if (data[0] == 'E') {
			*cause = xstrdup(data + 1);
			return -1;
		}
	}
}

/* Waits (blocking, JAIL_START_TIMEOUT_MS at most) for jail_read_status. */
static int
jail_wait_ready(struct jail *j, bool until_fds, char **cause)
{
	struct pollfd pfd = { .fd = j->sock, .events = POLLIN };
	int64_t deadline = util_mono_us() + JAIL_START_TIMEOUT_MS * 1000LL;
	int left, rc;

	while ((rc = jail_read_status(j, until_fds, cause)) == 0) {
		left = (int)((deadline - util_mono_us()) / 1000);
		if (left <= 0) {
			*cause = xstrdup("the jail did not start within 20 "
			    "seconds");
			return -1;
		}
		if (poll(&pfd, 1, left) == -1 && errno != EINTR) {
			*cause = xprintf("cannot read the jail's status: %s",
			    strerror(errno));
			return -1;
		}
	}
	return rc == 1 ? 0 : -1;
}

static char *
jail_summary_make(struct jail_plan *p)
{
	const struct jail_conf *c = p->conf;
	struct json js;
	size_t i;

	json_init(&js, false);
	json_obj_begin(&js);
	json_key(&js, "namespaces");
	json_arr_begin(&js);
	json_str(&js, "user");
	json_str(&js, "mount");
	json_str(&js, "pid");
	json_str(&js, "net");
	json_str(&js, "ipc");
	json_str(&js, "uts");
	json_str(&js, "cgroup");
	json_arr_end(&js);
	json_key(&js, "uid_map");
	json_strn(&js, p->uid_map, strcspn(p->uid_map, "\n"));
	json_kstr(&js, "project", c->project);
	json_kstr(&js, "home", "tmpfs");
	json_kint(&js, "proxy_port", c->proxy_port);
	json_kbool(&js, "transparent", c->transparent);
	json_kstr(&js, "network", "loopback only; the proxy listener");
	json_kbool(&js, "no_new_privs", true);
	json_kstr(&js, "capabilities", "none");
	json_kstr(&js, "seccomp", "deny-list (EPERM), non-native arches "
	    "killed");
	jail_landlock_json(p, &js);
	jail_limits_json(p, &js);
	json_key(&js, "overlays");
	json_arr_begin(&js);
	for (i = 0; i < c->noverlays; i++)
		json_str(&js, c->overlays[i].path);
	json_arr_end(&js);
	json_key(&js, "binds");
	json_arr_begin(&js);
	for (i = 0; i < c->nbinds; i++)
		json_str(&js, c->binds[i].path);
	json_arr_end(&js);
	json_kbool(&js, "pty", c->pty);
	json_obj_end(&js);
	return buf_steal(&js.out);
}

static void
jail_plan_free(struct jail_plan *p)
{
	free(p->freezer);
	free(p->cg_cpu);
	free(p->cg_memory);
	free(p->cg_procs);
	jail_mount_plan_free(p);
	strv_free(&p->ll_rw_dirs);
	strv_free(&p->ll_rw_files);
	free(p->exec_path_env);
	free(p->seccomp_buf);
}

/* The PATH of the command's environment, for looking the command up inside. */
static char *
jail_plan_path(const struct jail_conf *c)
{
	size_t i;

	for (i = 0; c->envp != NULL && c->envp[i] != NULL; i++) {
		if (strncmp(c->envp[i], "PATH=", 5) == 0)
			return xstrdup(c->envp[i] + 5);
	}
	return xstrdup("/usr/local/bin:/usr/bin:/bin");
}

static int
jail_plan_build(struct jail_plan *p, const struct jail_conf *c, char **cause)
{
	memset(p, 0, sizeof *p);
	p->conf = c;
	p->uid = getuid();
	p->gid = getgid();
	p->sock = -1;
	p->pipes[0] = p->pipes[1] = p->pipes[2] = -1;
	snprintf(p->uid_map, sizeof p->uid_map, "%lu %lu 1\n",
	    (unsigned long)p->uid, (unsigned long)p->uid);
	snprintf(p->gid_map, sizeof p->gid_map, "%lu %lu 1\n",
	    (unsigned long)p->gid, (unsigned long)p->gid);
	strv_init(&p->ll_rw_dirs);
	strv_init(&p->ll_rw_files);
	p->exec_path_env = jail_plan_path(c);
	p->cwd = c->cwd != NULL ? c->cwd : c->project;
	if (c->argv == NULL || c->argv[0] == NULL) {
		*cause = xstrdup("no command to run in the jail");
		return -1;
	}
	/* The mount script is planned by the child (jail-init.c), in parallel. */
	jail_landlock_plan(p);
	jail_net_plan(p);
	p->seccomp_buf = xcalloc(JAIL_SECCOMP_MAX, sizeof *p->seccomp_buf);
	return 0;
}

/* Pipe mode: the command's stdin, stdout and stderr; ours are close-on-exec. */
static int
jail_make_pipes(struct jail_plan *p, struct jail *j, char **cause)
{
	int in[2], out[2], err[2];

	if (pipe2(in, O_CLOEXEC) == -1)
		goto fail;
	if (pipe2(out, O_CLOEXEC) == -1) {
		close(in[0]);
		close(in[1]);
		goto fail;
	}
	if (pipe2(err, O_CLOEXEC) == -1) {
		close(in[0]);
		close(in[1]);
		close(out[0]);
		close(out[1]);
		goto fail;
	}
	p->pipes[0] = in[0];
	p->pipes[1] = out[1];
	p->pipes[2] = err[1];
	j->in_fd = in[1];
	j->out_fd = out[0];
	j->err_fd = err[0];
	return 0;
fail:
	*cause = xprintf("cannot create pipes for the jail: %s",
	    strerror(errno));
	return -1;
}

static void
jail_close_child_ends(struct jail_plan *p)
{
	int i;

	for (i = 0; i < 3; i++) {
		if (p->pipes[i] != -1)
			close(p->pipes[i]);
		p->pipes[i] = -1;
	}
	if (p->sock != -1)
		close(p->sock);
	p->sock = -1;
}

static struct jail *
jail_new(void)
{
	struct jail *j = xcalloc(1, sizeof *j);

	j->pid = -1;
	j->sock = -1;
	j->listen_fd = j->home_fd = j->pty_fd = j->in_fd = j->out_fd =
	    j->err_fd = -1;
	j->net_fds[0] = j->net_fds[1] = j->net_fds[2] = -1;
	j->ns_fds[0] = j->ns_fds[1] = -1;
	strv_init(&j->cg_dirs);
	jail_ctl_init(&j->ctl);
	return j;
}

/*
 * Runs while the child sets up its mounts: compiles the seccomp program
 * and moves the child into its cgroup. The go message carries the program
 * and is the child's signal to start the command.
 */
static int
jail_prepare_go(struct jail_plan *p, struct jail *j, char **cause)
{
	struct sock_fprog prog;
	size_t len;

	if (jail_seccomp_compile(&prog, cause) == -1)
		return -1;
	if (prog.len > JAIL_SECCOMP_MAX) {
		*cause = xstrdup("the seccomp program is too large");
		return -1;
	}
	if (p->cg != JAIL_CG_NONE && jail_limits_join(p, j->pid, &j->cg_dirs,
	    &j->cg_join, cause) == -1)
		return -1;
	j->ctl.freezer = p->freezer;
	j->ctl.freezer_v2 = p->freezer_v2;
	j->ctl.how = p->how_freeze;
	p->freezer = NULL;
	j->cg_costs.v2 = p->cg == JAIL_CG_V2;
	j->cg_costs.cpu = p->cg_cpu;
	j->cg_costs.memory = p->cg_memory;
	j->cg_costs.procs = p->cg_procs;
	p->cg_cpu = p->cg_memory = p->cg_procs = NULL;
	len = prog.len * sizeof *prog.filter;
	j->go = xmalloc(1 + len);
	j->go[0] = 'G';
	memcpy(j->go + 1, prog.filter, len);
	j->golen = 1 + len;
	return 0;
}

/* The status channel stays, once the command runs, as the way to the jail's init. */
static void
jail_keep_ctl(struct jail *j)
{
	j->ctl.fd = j->sock;
	j->sock = -1;
}

/* The command may start once the jail is in its cgroups: then the limits bind all it forks. */
static int
jail_send_go(struct jail *j, char **cause)
{
	struct jail_cg_join *cj = j->cg_join;

	j->cg_join = NULL;
	if (jail_limits_join_wait(cj, cause) == -1)
		return -1;
	if (send(j->sock, j->go, j->golen, MSG_NOSIGNAL) == -1) {
		/*
		 * A setup that failed (its plan refused, a mount) said why
		 * before it closed its end: that is the cause, not the pipe.
		 */
		int error = errno;

		if ((error == EPIPE || error == ECONNRESET) &&
		    jail_read_status(j, false, cause) == -1)
			return -1;
		*cause = xprintf("cannot release the jail: %s",
		    strerror(error));
		return -1;
	}
	return 0;
}

void
jail_prewarm(void)
{
	jail_limits_prewarm();
}

int
jail_wait_setup(struct jail *j, char **cause)
{
	if (j->sock == -1 || j->listen_fd != -1)
		return 0;
	return jail_wait_ready(j, true, cause);
}

int
jail_go(struct jail *j, char **cause)
{
	if (j->sock == -1)
		return 0;
	if (jail_send_go(j, cause) == -1 ||
	    jail_wait_ready(j, false, cause) == -1)
		return -1;
	jail_keep_ctl(j);
	return 0;
}

int
jail_status_fd(struct jail *j)
{
	return j->sock;
}

int
jail_setup_poll(struct jail *j, char **cause)
{
	if (j->sock == -1 || j->listen_fd != -1)
		return 1;
	return jail_read_status(j, true, cause);
}

int
jail_go_send(struct jail *j, char **cause)
{
	if (j->sock == -1)
		return 0;
	return jail_send_go(j, cause);
}

int
jail_go_poll(struct jail *j, char **cause)
{
	int rc;

	if (j->sock == -1)
		return 1;
	if ((rc = jail_read_status(j, false, cause)) == 1)
		jail_keep_ctl(j);
	return rc;
}

struct jail *
jail_start(const struct jail_conf *c, char **cause)
{
	struct jail_plan p;
	struct jail *j = jail_new();
	int sv[2] = { -1, -1 };

	if (jail_plan_build(&p, c, cause) == -1)
		goto fail;
	if (jail_limits_prepare(&p, cause) == -1)
		goto fail;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == -1) {
		*cause = xprintf("cannot create the jail's status channel: %s",
		    strerror(errno));
		goto fail;
	}
	p.sock = sv[1];
	if (!c->pty && jail_make_pipes(&p, j, cause) == -1)
		goto fail;
	if ((j->pid = jail_ns_clone(&p, cause)) == -1)
		goto fail;
	jail_close_child_ends(&p);
	j->sock = sv[0];
	/* Held, it is set up while the caller works: jail_go waits for it. */
	if (jail_prepare_go(&p, j, cause) == -1 || (!c->hold &&
	    (jail_send_go(j, cause) == -1 ||
	    jail_wait_ready(j, false, cause) == -1)))
		goto fail;
	if (!c->hold)
		jail_keep_ctl(j);
	j->summary = jail_summary_make(&p);
	jail_plan_free(&p);
	return j;
fail:
	jail_close_child_ends(&p);
	if (j->sock == -1 && sv[0] != -1)
		close(sv[0]);
	jail_plan_free(&p);
	jail_free(j);
	return NULL;
}

static void
jail_close(int *fd)
{
	if (*fd != -1)
		close(*fd);
	*fd = -1;
}

void
jail_free(struct jail *j)
{
	if (j == NULL)
		return;
	if (j->pid > 0 && !j->reaped) {
		kill(j->pid, SIGKILL);
		jail_ctl_killed(&j->ctl);
		while (waitpid(j->pid, NULL, 0) == -1 && errno == EINTR)
			;
	}
	jail_limits_join_wait(j->cg_join, NULL);
	jail_close(&j->sock);
	free(j->go);
	jail_close(&j->listen_fd);
	jail_close(&j->home_fd);
	jail_close(&j->net_fds[0]);
	jail_close(&j->net_fds[1]);
	jail_close(&j->net_fds[2]);
	jail_close(&j->ns_fds[0]);
	jail_close(&j->ns_fds[1]);
	jail_close(&j->pty_fd);
	jail_close(&j->in_fd);
	jail_close(&j->out_fd);
	jail_close(&j->err_fd);
	jail_ctl_free(&j->ctl);
	jail_limits_remove(&j->cg_dirs);
	strv_free(&j->cg_dirs);
	free(j->cg_costs.cpu);
	free(j->cg_costs.memory);
	free(j->cg_costs.procs);
	free(j->summary);
	free(j);
}

pid_t
jail_pid(struct jail *j)
{
	return j->pid;
}

int
jail_usage(struct jail *j, struct jail_usage *u)
{
	u->cpu_ns = u->memory = u->procs = -1;
	if (j->reaped || j->cg_join != NULL)
		return -1;
	return jail_limits_usage(&j->cg_costs, u);
}

int
jail_take_listen_fd(struct jail *j)
{
	int fd = j->listen_fd;

	j->listen_fd = -1;
	return fd;
}

void
jail_take_net_fds(struct jail *j, int *redirect, int *dns_udp, int *dns_tcp)
{
	*redirect = j->net_fds[0];
	*dns_udp = j->net_fds[1];
	*dns_tcp = j->net_fds[2];
	j->net_fds[0] = j->net_fds[1] = j->net_fds[2] = -1;
}

int
jail_take_home_fd(struct jail *j)
{
	int fd = j->home_fd;

	j->home_fd = -1;
	return fd;
}

int
jail_pty_fd(struct jail *j)
{
	return j->pty_fd;
}

int
jail_stdin_fd(struct jail *j)
{
	return j->in_fd;
}

int
jail_stdout_fd(struct jail *j)
{
	return j->out_fd;
}

int
jail_stderr_fd(struct jail *j)
{
	return j->err_fd;
}

void
jail_close_stdin(struct jail *j)
{
	jail_close(&j->in_fd);
}

int
jail_resize(struct jail *j, unsigned short rows, unsigned short cols)
{
	struct winsize ws = { .ws_row = rows, .ws_col = cols };

	if (j->pty_fd == -1) {
		errno = ENOTTY;
		return -1;
	}
	return ioctl(j->pty_fd, TIOCSWINSZ, &ws);
}

void
jail_signal(struct jail *j, int sig)
{
	if (j->pid > 0 && !j->reaped)
		kill(j->pid, sig);
}

void
jail_kill(struct jail *j)
{
	if (j->pid <= 0 || j->reaped)
		return;
	kill(j->pid, SIGKILL);
	jail_ctl_killed(&j->ctl);
}

int
jail_freeze(struct jail *j, char **cause)
{
	if (j->reaped) {
		*cause = xstrdup("the jail has ended");
		return -1;
	}
	return jail_ctl_freeze(&j->ctl, cause);
}

int
jail_freeze_poll(struct jail *j, enum jail_freeze *state, char **cause)
{
	return jail_ctl_freeze_poll(&j->ctl, state, cause);
}

int
jail_thaw(struct jail *j, char **cause)
{
	if (j->reaped)
		return 0;
	return jail_ctl_thaw(&j->ctl, cause);
}

const char *
jail_freeze_how(struct jail *j)
{
	return j->ctl.how;
}

int
jail_count(struct jail *j, char **cause)
{
	return jail_ctl_count(&j->ctl, cause);
}

int
jail_count_poll(struct jail *j, struct jail_written *w)
{
	return jail_ctl_count_poll(&j->ctl, w);
}

int
jail_reap(struct jail *j, int *status)
{
	int st;
	pid_t r;

	if (j->reaped) {
		*status = j->status;
		return 1;
	}
	while ((r = waitpid(j->pid, &st, WNOHANG)) == -1 && errno == EINTR)
		;
	if (r != j->pid)
		return 0;
	j->reaped = true;
	if (WIFEXITED(st))
		j->status = WEXITSTATUS(st);
	else if (WIFSIGNALED(st))
		j->status = 128 + WTERMSIG(st);
	else
		j->status = 255;
	/* The jail's cgroups are empty now that its pid namespace is gone. */
	jail_limits_remove(&j->cg_dirs);
	*status = j->status;
	return 1;
}

const char *
jail_summary(struct jail *j)
{
	return j->summary;
}
