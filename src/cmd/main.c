/* agentmux: run AI coding agents in jails whose only door is an intercepting proxy. */
#include <sys/stat.h>

#include <locale.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "core/core.h"
#include "session/session.h"

static void
main_cleanup(void)
{
	path_runtime_dir_remove();
}

/* Parses the command line against the table and runs what it names. */
static int
main_dispatch(int argc, char **argv)
{
	const struct cli_cmd *c = cli_top();
	struct cli_args args;
	int rc;

	if (argc >= 2 && argv[1][0] != '-') {
		if ((c = cli_find(NULL, argv[1])) == NULL) {
			out_printf(stderr, "agentmux: unknown command '%s'; see "
			    "'agentmux --help' for the commands\n", argv[1]);
			return 2;
		}
		argc--;
		argv++;
	}
	if ((rc = cli_parse(c, c->name, argc, argv, &args)) != 0)
		return rc == 1 ? 0 : 2;
	rc = cli_run(&args);
	cli_args_free(&args);
	return rc;
}

int
main(int argc, char **argv)
{
	setlocale(LC_ALL, "");
	quote_init();
	/*
	 * The proxy's buffers come and go at the top of the heap, 100 KiB
	 * and more at a time; glibc gives such a top back to the kernel at
	 * 128 KiB, and every page taken again faults: 1 MiB downloads ran at
	 * a third of their speed. Peak memory is the same either way.
	 */
	mallopt(M_TRIM_THRESHOLD, 1024 * 1024);
	util_set_user_umask(umask(077));
	signal(SIGPIPE, SIG_IGN);
	proc_raise_nofile();
	atexit(main_cleanup);
	log_init(stderr, getenv("AGENTMUX_DEBUG") != NULL ? LOG_LEVEL_DEBUG :
	    LOG_LEVEL_WARN);
	config_set_rule_validator(session_rule_validate);
	return main_dispatch(argc, argv);
}
