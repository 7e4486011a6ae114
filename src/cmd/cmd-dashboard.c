/* agentmux with no command: the dashboard for the project, starting one session of an agent or a command. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "cli.h"
#include "core/core.h"
#include "session/session.h"
#include "tui/tui.h"

int
cmd_dashboard(struct cli_args *args)
{
	struct tui_opts o = { 0 };
	struct config *cf = NULL;
	struct event_base *base = NULL;
	struct session_ctx *ctx = NULL;
	char *cause = NULL;
	int rc = 1;

	if (cli_has(args, "version"))
		return cmd_version(args);
	o.agent = cli_get(args, "agent");
	o.dir = cli_get(args, "dir");
	if (args->argc > 0) {
		if (args->dashdash != 0)
			return cli_usage_error("agentmux", "a command goes after "
			    "--, not '%s'", args->argv[0]);
		o.command = args->argv;
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
