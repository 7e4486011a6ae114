/*
 * agentmux, the small front: `agentmux` and `agentmux attach [-t TARGET]`
 * attach this terminal to a server that runs, without loading the
 * libraries the whole program needs (TLS, SQLite, curses, libvterm, ...:
 * they cost more than the rest of an attach). Everything else, and an
 * attach that finds no server, is the whole program's: it is executed in
 * this process's place with the same arguments.
 */
#include <errno.h>
#include <limits.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/core.h"
#include "server/server.h"

static char **front_argv;

/*
 * The whole program: beside this one (the build tree), else where it is
 * from here as installed (a tree moved by --destdir or a package too),
 * else where it was installed.
 */
static char *
front_full(void)
{
	const char *way[] = { "agentmux-full", AGENTMUX_BIN_TO_FULL };
	char exe[PATH_MAX], *slash, *p;
	ssize_t n;
	size_t i;

	if ((n = readlink("/proc/self/exe", exe, sizeof exe - 1)) <= 0 ||
	    (exe[n] = '\0', slash = strrchr(exe, '/')) == NULL)
		return xstrdup(AGENTMUX_FULL);
	for (i = 0; i < nitems(way); i++) {
		if (way[i][0] == '\0')
			continue;
		p = xprintf("%.*s/%s", (int)(slash - exe), exe, way[i]);
		if (access(p, X_OK) == 0)
			return p;
		free(p);
	}
	return xstrdup(AGENTMUX_FULL);
}

/* Runs the whole program in this process's place, with our arguments. */
static void __attribute__((noreturn))
front_exec(void)
{
	char *full = front_full();

	execv(full, front_argv);
	out_printf(stderr, "agentmux: cannot run %s: %s (reinstall agentmux)\n",
	    full, strerror(errno));
	exit(127);
}

/* No server answered: the whole program starts one, and attaches. */
static int
front_start(int dirfd, const struct sockaddr_un *sun, struct config *cf,
    const char *name, char **cause)
{
	front_exec();
}

/* Whether ARGV is an attach this front does itself; H says what to ask. */
static bool
front_attach_args(int argc, char **argv, struct server_hello *h)
{
	if (argc == 1)
		return true;
	if (strcmp(argv[1], "attach") != 0)
		return false;
	if (argc == 2)
		return true;
	if (argc == 4 && strcmp(argv[2], "-t") == 0 && argv[3][0] != '-' &&
	    argv[3][0] != '\0') {
		h->target = argv[3];
		return true;
	}
	return false;
}

int
main(int argc, char **argv)
{
	struct server_start st = { NULL, front_start };
	struct server_hello h = { 0 };
	char *cause = NULL;
	int rc;

	front_argv = argv;
	if (!front_attach_args(argc, argv, &h))
		front_exec();
	setlocale(LC_ALL, "");
	quote_init();
	util_set_user_umask(umask(077));
	signal(SIGPIPE, SIG_IGN);
	log_init(stderr, getenv("AGENTMUX_DEBUG") != NULL ? LOG_LEVEL_DEBUG :
	    LOG_LEVEL_WARN);
	/* As the whole program's: a tree another session works in is asked about. */
	h.ask_shared = true;
	h.config_file = path_config_file();
	if ((rc = server_client_attach_as(&st, &h, &cause)) == -1) {
		out_printf(stderr, "agentmux: %s\n", cause);
		free(cause);
		rc = 1;
	}
	free((char *)h.config_file);
	return rc;
}
