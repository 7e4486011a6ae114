/* agentmux completion: shell completion scripts written from the command table. */
#include <stdio.h>

#include "cli.h"

int
cmd_completion(struct cli_args *args)
{
	return 0;
}

int
cmd_completion_words(struct cli_args *args)
{
	return 0;
}
