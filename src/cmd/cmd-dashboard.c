/* agentmux with no command, and agentmux attach: this terminal attached to the server's dashboard. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "core/core.h"
#include "server/server.h"

/* Attaches with H, the config read here (the server's, if this starts it). */
static int
cmd_dashboard_attach(const struct server_hello *h)
{
	struct config *cf;
	char *cause = NULL;
	int rc;

	if ((cf = cli_load_config()) == NULL)
		return 1;
	if ((rc = server_client_attach(cf, h, &cause)) == -1) {
		cli_error("%s", cause);
		rc = 1;
	}
	free(cause);
	config_free(cf);
	return rc;
}

int
cmd_dashboard(struct cli_args *args)
{
	struct server_hello h = { 0 };

	if (cli_has(args, "version"))
		return cmd_version(args);
	h.name = cli_get(args, "socket-name");
	h.agent = cli_get(args, "agent");
	h.dir = cli_get(args, "dir");
	if (args->argc > 0) {
		if (args->dashdash != 0)
			return cli_usage_error("agentmux", "a command goes after "
			    "--, not '%s'", args->argv[0]);
		h.command = args->argv;
	}
	h.new_session = h.agent != NULL || h.dir != NULL || h.command != NULL;
	/* A tree another session works in: the dashboard asks, as its dialog does. */
	h.ask_shared = true;
	return cmd_dashboard_attach(&h);
}

int
cmd_attach(struct cli_args *args)
{
	struct server_hello h = { 0 };

	h.name = cli_get(args, "socket-name");
	h.target = cli_get(args, "target");
	h.ask_shared = true;
	return cmd_dashboard_attach(&h);
}
