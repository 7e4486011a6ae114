/* agentmux with no command: the dashboard for the project, starting one session of an agent or a command. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "cli.h"
#include "core/core.h"
#include "session.h"
#include "tui/tui.h"

/* A usage error of the dashboard (which has no command name to show). */
static int
dashboard_usage(const char *problem, const char *what)
{
	out_printf(stderr, "agentmux: %s '%s'; the dashboard takes -a AGENT, "
	    "-C DIR and -- COMMAND (see agentmux --help)\n", problem, what);
	return 2;
}

int
cmd_dashboard(int argc, char **argv)
{
	struct tui_opts o = { 0 };
	struct config *cf = NULL;
	struct event_base *base = NULL;
	struct session_ctx *ctx = NULL;
	char *cause = NULL;
	int c, rc = 1;

	optind = 1;
	while ((c = getopt(argc, argv, "+:a:C:")) != -1) {
		switch (c) {
		case 'a':
			o.agent = optarg;
			break;
		case 'C':
			o.dir = optarg;
			break;
		case ':':
			return dashboard_usage("a value is missing after",
			    argv[optind - 1]);
		default:
			return dashboard_usage("unknown option",
			    argv[optind - 1]);
		}
	}
	if (optind < argc) {
		if (strcmp(argv[optind - 1], "--") != 0)
			return dashboard_usage("a command goes after --, not",
			    argv[optind]);
		o.command = argv + optind;
	}
	if ((cf = cli_load_config()) == NULL)
		return 1;
	if ((base = event_base_new()) == NULL) {
		cli_error("cannot create the event loop");
		goto out;
	}
	if ((ctx = session_ctx_create(base, cf, NULL, &cause)) == NULL) {
		cli_error("%s", cause);
		goto out;
	}
	if ((rc = tui_dashboard(base, ctx, &o, &cause)) == -1) {
		cli_error("%s", cause);
		rc = 1;
	}
out:
	free(cause);
	session_ctx_free(ctx);
	if (base != NULL)
		event_base_free(base);
	config_free(cf);
	return rc;
}
