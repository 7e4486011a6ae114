/*
 * amx-jail-bench: the jail alone, for the start-up benchmark. Runs
 * COMMAND through jail_start exactly as a session configures it (project =
 * the current dir's, private HOME, the default limits and CA bundle, pipes)
 * but without config, store or event loop, and exits with its status.
 * Not installed; bench/jail.sh uses it for the "jail only" figure.
 */
#include <errno.h>
#include <signal.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "jail/jail.h"

int
main(int argc, char **argv)
{
	char *env[] = { "PATH=/usr/local/bin:/usr/bin:/bin", "TERM=dumb",
	    "HTTPS_PROXY=http://127.0.0.1:3128", NULL };
	struct config *cf = config_default();
	struct jail_conf c;
	struct jail *j;
	char *project, *cause = NULL, buf[4096];
	sigset_t chld;
	ssize_t n;
	int st;

	if (argc < 2 || (strcmp(argv[1], "--") == 0 && argc < 3)) {
		fprintf(stderr, "usage: amx-jail-bench [--] COMMAND [ARG...]\n");
		return 2;
	}
	if (jail_project(".", &project, &cause) == -1) {
		fprintf(stderr, "amx-jail-bench: %s\n", cause);
		return 2;
	}
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	memset(&c, 0, sizeof c);
	c.project = project;
	c.argv = argv + (strcmp(argv[1], "--") == 0 ? 2 : 1);
	c.envp = env;
	c.home = path_home();
	c.ca_bundle = "/etc/ssl/certs/ca-certificates.crt";
	c.limits.memory = cf->limits.memory;
	c.limits.pids = cf->limits.pids;
	c.limits.file_size = cf->limits.file_size;
	c.limits.open_files = cf->limits.open_files;
	c.limits.tmp_size = cf->limits.tmp_size;
	c.proxy_port = 3128;
	if ((j = jail_start(&c, &cause)) == NULL) {
		fprintf(stderr, "amx-jail-bench: %s\n", cause);
		return 1;
	}
	jail_close_stdin(j);
	while ((n = read(jail_stdout_fd(j), buf, sizeof buf)) > 0)
		fwrite(buf, 1, (size_t)n, stdout);
	/* Sleep until the jail's pid 1 has gone, without polling. */
	while (jail_reap(j, &st) == 0)
		sigtimedwait(&chld, NULL, &(struct timespec){ 0, 10000000 });
	jail_free(j);
	config_free(cf);
	free(project);
	return st;
}
