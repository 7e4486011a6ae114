/* Worktree sessions from the command line: the options every command that starts a session shares. */
#include <stdbool.h>
#include <string.h>

#include "cli.h"
#include "session/session.h"

/* NAME of a branch agentmux/ID/NAME: letters, digits, '.', '_', '-'. */
static bool
cmd_worktree_name_ok(const char *name)
{
	const char *p;

	if (*name == '\0' || *name == '.' || *name == '-' ||
	    strlen(name) > 100 || strstr(name, "..") != NULL ||
	    strstr(name, ".lock") != NULL)
		return false;
	for (p = name; *p != '\0'; p++) {
		if (!(*p >= 'a' && *p <= 'z') && !(*p >= 'A' && *p <= 'Z') &&
		    !(*p >= '0' && *p <= '9') && strchr("._-", *p) == NULL)
			return false;
	}
	return true;
}

int
cmd_worktree_opts(const char *cmd, struct cli_args *args,
    struct session_opts *o)
{
	o->worktree = cli_has(args, "worktree");
	o->shared = cli_has(args, "shared");
	o->base = cli_get(args, "base");
	o->branch = cli_get(args, "branch");
	if (!o->worktree && (o->base != NULL || o->branch != NULL)) {
		cli_usage_error(cmd, "--%s goes with --worktree", o->base !=
		    NULL ? "base" : "branch");
		return -1;
	}
	if (o->worktree && o->shared) {
		cli_usage_error(cmd, "--worktree and --shared exclude each "
		    "other: a worktree is a tree of its own");
		return -1;
	}
	if (o->branch != NULL && !cmd_worktree_name_ok(o->branch)) {
		cli_usage_error(cmd, "bad --branch '%s': give a name of "
		    "letters, digits, '.', '_' and '-' (the branch is "
		    "agentmux/ID/NAME)", o->branch);
		return -1;
	}
	return 0;
}
