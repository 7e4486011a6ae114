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
#include "proxy/proxy.h"

static void
main_cleanup(void)
{
	path_runtime_dir_remove();
}

int
main(int argc, char **argv)
{
	const struct cli_cmd *c;
	int i;

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
	atexit(main_cleanup);
	log_init(stderr, getenv("AGENTMUX_DEBUG") != NULL ? LOG_LEVEL_DEBUG :
	    LOG_LEVEL_WARN);
	config_set_rule_validator(proxy_policy_validate);

	if (argc < 2 || argv[1][0] == '-') {
		for (i = 1; i < argc; i++) {
			if (strcmp(argv[i], "--version") == 0 ||
			    strcmp(argv[i], "-V") == 0) {
				out_printf(stdout, "agentmux %s\n",
				    AGENTMUX_VERSION);
				return 0;
			}
			if (strcmp(argv[i], "--help") == 0 ||
			    strcmp(argv[i], "-h") == 0) {
				cli_print_usage(stdout);
				return 0;
			}
		}
		return cmd_dashboard(argc, argv);
	}
	if ((c = cli_find(argv[1])) == NULL) {
		out_printf(stderr,
		    "agentmux: unknown command '%s'; see 'agentmux "
		    "--help' for the commands\n", argv[1]);
		return 2;
	}
	for (i = 2; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
			return cli_help(c->name);
	}
	optind = 1;
	return c->fn(argc - 1, argv + 1);
}
