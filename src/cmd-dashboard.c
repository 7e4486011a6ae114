/* agentmux with no command: the dashboard. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/core.h"

int
cmd_dashboard(int argc, char **argv)
{
	int c;

	optind = 1;
	while ((c = getopt(argc, argv, "+:a:C:")) != -1) {
		switch (c) {
		case 'a':
		case 'C':
			break;
		default:
			return cli_bad_option("", argv, c);
		}
	}
	cli_print_usage(stdout);
	return 0;
}
