/* Freezing a running jail and counting what it wrote: the cgroup freezer, else requests to its init. */
#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jail/jail-int.h"

void
jail_ctl_init(struct jail_ctl *ct)
{
	memset(ct, 0, sizeof *ct);
	ct->fd = -1;
	ct->how = "none";
}

void
jail_ctl_free(struct jail_ctl *ct)
{
	if (ct->fd != -1)
		close(ct->fd);
	ct->fd = -1;
	free(ct->freezer);
	ct->freezer = NULL;
	free(ct->error);
	ct->error = NULL;
}

static int
jail_ctl_cg_write(struct jail_ctl *ct, const char *file, const char *text,
    char **cause)
{
	char *path = xprintf("%s/%s", ct->freezer, file);
	size_t len = strlen(text);
	int fd, rc = -1;

	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) != -1) {
		if (write(fd, text, len) == (ssize_t)len)
			rc = 0;
		close(fd);
	}
	if (rc == -1 && cause != NULL)
		*cause = xprintf("cannot write %.*s to %s: %s",
		    (int)strcspn(text, "\n"), text, path, strerror(errno));
	free(path);
	return rc;
}

static char *
jail_ctl_cg_read(struct jail_ctl *ct, const char *file, char **cause)
{
	char *path = xprintf("%s/%s", ct->freezer, file);
	struct buf b;

	buf_init(&b);
	if (buf_read_file(&b, path) == -1) {
		*cause = xprintf("cannot read %s: %s", path, strerror(errno));
		buf_free(&b);
		free(path);
		return NULL;
	}
	buf_addc(&b, '\0');
	free(path);
	return buf_steal(&b);
}

/*
 * Whether every task of the cgroup is held: frozen (shown as D), or
 * asleep where it cannot run user code (D) and will freeze as it wakes,
 * or stopped, or dead. A task blocked in the kernel (a write throttled
 * behind a busy disk) keeps the freezer FREEZING as long as it sleeps.
 */
static bool
jail_ctl_cg_held(const char *tasks)
{
	char path[64], buf[512], *s;
	const char *t;
	long tid;
	int fd;
	ssize_t n;

	for (t = tasks; *t != '\0'; t = strchr(t, '\n') != NULL ?
	    strchr(t, '\n') + 1 : t + strlen(t)) {
		if ((tid = strtol(t, NULL, 10)) <= 0)
			continue;
		snprintf(path, sizeof path, "/proc/%ld/stat", tid);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
			continue;
		n = read(fd, buf, sizeof buf - 1);
		close(fd);
		if (n <= 0)
			continue;
		buf[n] = '\0';
		if ((s = strrchr(buf, ')')) == NULL || s[1] == '\0' ||
		    strchr("DTtZXx", s[2]) == NULL)
			return false;
	}
	return true;
}

/* Whether the cgroup's freezer holds every process in it. */
static int
jail_ctl_cg_frozen(struct jail_ctl *ct, bool *frozen, char **cause)
{
	char *text;

	if ((text = jail_ctl_cg_read(ct, ct->freezer_v2 ? "cgroup.events" :
	    "freezer.state", cause)) == NULL)
		return -1;
	if (ct->freezer_v2)
		*frozen = strstr(text, "frozen 1\n") != NULL;
	else
		*frozen = strncmp(text, "FROZEN", 6) == 0;
	free(text);
	if (*frozen)
		return 0;
	if ((text = jail_ctl_cg_read(ct, ct->freezer_v2 ? "cgroup.threads" :
	    "tasks", cause)) == NULL)
		return -1;
	*frozen = jail_ctl_cg_held(text);
	free(text);
	return 0;
}

static int
jail_ctl_send(struct jail_ctl *ct, char req, char **cause)
{
	if (ct->fd == -1) {
		*cause = xstrdup("the jail's init is gone");
		return -1;
	}
	if (send(ct->fd, &req, 1, MSG_NOSIGNAL | MSG_DONTWAIT) == 1)
		return 0;
	*cause = xprintf("cannot ask the jail's init: %s", strerror(errno));
	return -1;
}

/* "i BYTES PROCS UNREAD": nothing else is taken. */
static void
jail_ctl_counted(struct jail_ctl *ct, const char *msg)
{
	unsigned long long bytes;
	unsigned procs, unread;
	int end = 0;

	if (sscanf(msg, "i %llu %u %u%n", &bytes, &procs, &unread, &end) != 3 ||
	    msg[end] != '\0')
		return;
	ct->written.bytes = bytes;
	ct->written.procs = procs;
	ct->written.unread = unread;
	ct->count_asked = false;
	ct->count_new = true;
}

static void
jail_ctl_message(struct jail_ctl *ct, const char *msg)
{
	switch (msg[0]) {
	case 'i':
		jail_ctl_counted(ct, msg);
		break;
	case 's':
		if (ct->state == JAIL_FREEZING)
			ct->state = JAIL_FROZEN;
		break;
	case 'f':
	case 'x':
		free(ct->error);
		ct->error = xstrdup(msg[1] == ' ' ? msg + 2 : "the jail's "
		    "init could not hold it frozen");
		break;
	default:
		break;
	}
}

/* Takes whatever the init has said, without waiting. */
static void
jail_ctl_read(struct jail_ctl *ct)
{
	char msg[512];
	ssize_t n;

	while (ct->fd != -1) {
		n = util_recv(ct->fd, msg, sizeof msg - 1, MSG_DONTWAIT);
		if (n == -1 && errno == EAGAIN)
			return;
		if (n <= 0) {
			/* The init has ended (and the jail with it). */
			close(ct->fd);
			ct->fd = -1;
			return;
		}
		msg[n] = '\0';
		jail_ctl_message(ct, msg);
	}
}

void
jail_ctl_killed(struct jail_ctl *ct)
{
	if (ct->freezer != NULL && ct->state != JAIL_THAWED)
		jail_ctl_cg_write(ct, ct->freezer_v2 ? "cgroup.freeze" :
		    "freezer.state", ct->freezer_v2 ? "0\n" : "THAWED\n", NULL);
	ct->state = JAIL_THAWED;
}

int
jail_ctl_freeze(struct jail_ctl *ct, char **cause)
{
	int rc;

	if (ct->state != JAIL_THAWED)
		return 0;
	if (ct->freezer != NULL)
		rc = jail_ctl_cg_write(ct, ct->freezer_v2 ? "cgroup.freeze" :
		    "freezer.state", ct->freezer_v2 ? "1\n" : "FROZEN\n", cause);
	else
		rc = jail_ctl_send(ct, JAIL_CTL_STOP, cause);
	if (rc == 0)
		ct->state = JAIL_FREEZING;
	return rc;
}

int
jail_ctl_freeze_poll(struct jail_ctl *ct, enum jail_freeze *state,
    char **cause)
{
	bool frozen;

	jail_ctl_read(ct);
	if (ct->error != NULL) {
		*cause = ct->error;
		ct->error = NULL;
		return -1;
	}
	if (ct->state == JAIL_FREEZING && ct->freezer != NULL) {
		if (jail_ctl_cg_frozen(ct, &frozen, cause) == -1)
			return -1;
		if (frozen)
			ct->state = JAIL_FROZEN;
	}
	*state = ct->state;
	return 0;
}

int
jail_ctl_thaw(struct jail_ctl *ct, char **cause)
{
	int rc;

	if (ct->state == JAIL_THAWED)
		return 0;
	if (ct->freezer != NULL)
		rc = jail_ctl_cg_write(ct, ct->freezer_v2 ? "cgroup.freeze" :
		    "freezer.state", ct->freezer_v2 ? "0\n" : "THAWED\n", cause);
	else
		rc = jail_ctl_send(ct, JAIL_CTL_CONTINUE, cause);
	if (rc == 0)
		ct->state = JAIL_THAWED;
	return rc;
}

int
jail_ctl_count(struct jail_ctl *ct, char **cause)
{
	if (ct->count_asked)
		return 0;
	if (jail_ctl_send(ct, JAIL_CTL_COUNT, cause) == -1)
		return -1;
	ct->count_asked = true;
	return 0;
}

int
jail_ctl_count_poll(struct jail_ctl *ct, struct jail_written *w)
{
	jail_ctl_read(ct);
	if (!ct->count_new)
		return 0;
	ct->count_new = false;
	*w = ct->written;
	return 1;
}
