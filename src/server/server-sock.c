/* Where a server's socket lives (a private directory, checked before every use, and a name in it), how a client reaches it, and the digest a client sends of its config file. */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "server-int.h"
#include "server.h"

#define SERVER_NAME_MAX 64

const char *
server_sock_name(const char *name, char **cause)
{
	size_t i;

	if (name == NULL)
		return "default";
	if (name[0] == '\0' || name[0] == '.' ||
	    strlen(name) > SERVER_NAME_MAX)
		goto bad;
	for (i = 0; name[i] != '\0'; i++) {
		if (name[i] == '/' || (unsigned char)name[i] < 0x21 ||
		    (unsigned char)name[i] == 0x7f)
			goto bad;
	}
	return name;
bad:
	*cause = xstrdup("a server's name (-L) is up to 64 printable "
	    "characters, with no '/' and no leading '.'");
	return NULL;
}

/* $XDG_RUNTIME_DIR if it is set to an absolute path (borrowed), else NULL. */
static const char *
server_sock_runtime(void)
{
	const char *rt = getenv("XDG_RUNTIME_DIR");

	return rt != NULL && rt[0] == '/' ? rt : NULL;
}

/* $XDG_RUNTIME_DIR/agentmux, else /tmp/agentmux-UID; caller frees. */
static char *
server_sock_dir_path(void)
{
	const char *rt = server_sock_runtime();

	if (rt != NULL)
		return xprintf("%s/agentmux", rt);
	return xprintf("/tmp/agentmux-%ld", (long)getuid());
}

/* "uid N (NAME)" for a message; caller frees. */
static char *
server_sock_who(uid_t uid)
{
	struct passwd *pw = getpwuid(uid);
	char *name, *who;

	if (pw == NULL)
		return xprintf("uid %ld", (long)uid);
	name = quote_name(pw->pw_name);
	who = xprintf("uid %ld (%s)", (long)uid, name);
	free(name);
	return who;
}

/*
 * What the socket directory is made in must be the user's alone: in
 * $XDG_RUNTIME_DIR another user must not be able to swap it, and in /tmp
 * another user can make /tmp/agentmux-UID first to lock the user out.
 */
static int
server_sock_parent(const char *rt, const char *dir, char **cause)
{
	struct stat st;
	char *who;

	if (rt != NULL) {
		if (lstat(rt, &st) == -1 || !S_ISDIR(st.st_mode)) {
			*cause = xprintf("refusing the server's socket "
			    "directory under XDG_RUNTIME_DIR %s: it is not a "
			    "directory; point XDG_RUNTIME_DIR at a directory of "
			    "your own, mode 0700, or unset it", rt);
			return -1;
		}
		if (st.st_uid == getuid() && (st.st_mode & 022) == 0)
			return 0;
		if (st.st_uid == getuid()) {
			*cause = xprintf("refusing the server's socket "
			    "directory under XDG_RUNTIME_DIR %s: it has mode "
			    "%04o, which lets others replace it; run 'chmod 700 "
			    "%s'", rt, (unsigned)(st.st_mode & 07777), rt);
			return -1;
		}
		who = server_sock_who(st.st_uid);
		*cause = xprintf("refusing the server's socket directory "
		    "under XDG_RUNTIME_DIR %s: it is owned by %s, not by you; "
		    "point XDG_RUNTIME_DIR at a directory of your own, mode "
		    "0700, or unset it", rt, who);
		free(who);
		return -1;
	}
	if (lstat(dir, &st) == -1 || st.st_uid == getuid())
		return 0;
	who = server_sock_who(st.st_uid);
	*cause = xprintf("refusing the server's socket directory: %s is owned "
	    "by uid %ld, not by you (uid %ld): %s made it, which keeps "
	    "agentmux from using it; set XDG_RUNTIME_DIR to a directory of "
	    "your own (mode 0700), or have it removed", dir,
	    (long)st.st_uid, (long)getuid(), who);
	free(who);
	return -1;
}

int
server_sock_dir(const char *name, struct sockaddr_un *sun, char **cause)
{
	char *dir = server_sock_dir_path();
	int fd;

	if ((name = server_sock_name(name, cause)) == NULL) {
		free(dir);
		return -1;
	}
	if (server_sock_parent(server_sock_runtime(), dir, cause) == -1) {
		free(dir);
		return -1;
	}
	/* Made here if missing; whatever is there is checked, never trusted. */
	if (mkdir(dir, 0700) == -1 && errno != EEXIST) {
		*cause = xprintf("cannot create the server's socket directory "
		    "%s: %s", dir, strerror(errno));
		free(dir);
		return -1;
	}
	if ((fd = path_check_private_dir(dir, getuid(), 0700, cause)) == -1) {
		char *c = xprintf("refusing the server's socket directory: %s",
		    *cause);

		free(*cause);
		*cause = c;
		free(dir);
		return -1;
	}
	free(dir);
	memset(sun, 0, sizeof *sun);
	sun->sun_family = AF_UNIX;
	snprintf(sun->sun_path, sizeof sun->sun_path, "/proc/self/fd/%d/%s",
	    fd, name);
	return fd;
}

char *
server_socket_path(const char *name, char **cause)
{
	struct sockaddr_un sun;
	char *dir, *path;
	int fd;

	if ((fd = server_sock_dir(name, &sun, cause)) == -1)
		return NULL;
	close(fd);
	dir = server_sock_dir_path();
	path = xprintf("%s/%s", dir, server_sock_name(name, cause));
	free(dir);
	return path;
}

char *
server_log_path(void)
{
	const char *st = getenv("XDG_STATE_HOME");

	if (st != NULL && st[0] == '/')
		return xprintf("%s/agentmux/server.log", st);
	return xprintf("%s/.local/state/agentmux/server.log", path_home());
}

int
server_sock_connect(const struct sockaddr_un *sun)
{
	int fd;

	if ((fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0)) == -1)
		fatal("socket");
	if (connect(fd, (const struct sockaddr *)sun, sizeof *sun) == 0)
		return fd;
	close(fd);
	return -1;
}

char *
server_config_hash(const char *path)
{
	uint64_t h = 14695981039346656037ULL;
	struct buf b;
	size_t i;

	buf_init(&b);
	if (path == NULL || buf_read_file(&b, path) == -1) {
		buf_free(&b);
		return xstrdup("none");
	}
	for (i = 0; i < b.len; i++) {
		h ^= (unsigned char)b.data[i];
		h *= 1099511628211ULL;
	}
	buf_free(&b);
	return xprintf("%016llx", (unsigned long long)h);
}
