/* Where a server's socket lives: a private directory, checked before every use, and a name in it. */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
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

/* $XDG_RUNTIME_DIR/agentmux, else /tmp/agentmux-UID; caller frees. */
static char *
server_sock_dir_path(void)
{
	const char *rt = getenv("XDG_RUNTIME_DIR");

	if (rt != NULL && rt[0] == '/')
		return xprintf("%s/agentmux", rt);
	return xprintf("/tmp/agentmux-%ld", (long)getuid());
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
