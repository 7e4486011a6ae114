/* Agent profiles at run time (part of the session layer): finding an agent's real install so the jail can show it. */
#ifndef AGENTMUX_AGENT_H
#define AGENTMUX_AGENT_H

#include "core/core.h"

/** Where a profile's command lives on the host. */
struct agent_install {
	struct strv argv;     /* the command to run, argv[0] an absolute host path */
	char *found;          /* argv[0] as found on PATH (may be a symlink) */
	char *real;           /* its resolved path */
	char *interpreter;    /* a script's interpreter (resolved), or NULL */
	struct strv binds;    /* host dirs/files the jail must show read-only */
	struct strv path;     /* dirs to put first on the jail's PATH */
};

/**
 * Resolves the command of profile A (COMMAND overrides it when non-NULL)
 * on the host PATH: the binary, its package dir, a script's interpreter.
 * Paths under /usr are already in every jail and are not listed in binds.
 * -1 with *CAUSE (naming the command and how to install it) if not found.
 */
int agent_resolve(const struct config_agent *a, char *const *command,
    const char *path_env, struct agent_install *out, char **cause);
void agent_install_free(struct agent_install *);
/**
 * The user's shell: SH (a SHELL value, may be NULL), else the passwd
 * entry, else /bin/sh; borrowed (SH itself when it is taken).
 */
const char *agent_user_shell(const char *sh);

#endif
