/* agentmux --version: the version and what this machine gives the jail, for a bug report. */
#include <sys/utsname.h>

#include <stdio.h>
#include <stdlib.h>

#include <event2/event.h>
#include <openssl/crypto.h>
#include <seccomp.h>
#include <sqlite3.h>

#include "cli.h"
#include "core/core.h"
#include "jail/jail.h"

static void
version_kernel(void)
{
	struct utsname u;
	char *cause = NULL;

	if (uname(&u) == 0)
		out_printf(stdout, "kernel:          %s %s %s\n", u.sysname,
		    u.release, u.machine);
	if (jail_probe_userns(&cause) == 0)
		out_printf(stdout, "user namespaces: yes\n");
	else {
		out_printf(stdout, "user namespaces: no: %s\n", cause);
		free(cause);
	}
}

static void
version_confinement(void)
{
	const struct scmp_version *sv = seccomp_version();
	char *cause = NULL, *limits;
	int abi, level;

	if ((abi = jail_probe_landlock()) > 0)
		out_printf(stdout, "Landlock:        ABI %d\n", abi);
	else
		out_printf(stdout, "Landlock:        not available\n");
	if ((level = jail_probe_seccomp(&cause)) >= 0)
		out_printf(stdout, "seccomp:         filters (libseccomp "
		    "%u.%u.%u, API level %d)\n", sv->major, sv->minor,
		    sv->micro, level);
	else {
		out_printf(stdout, "seccomp:         no: %s\n", cause);
		free(cause);
	}
	limits = jail_probe_limits();
	out_printf(stdout, "limits:          %s\n", limits);
	free(limits);
}

int
cmd_version(struct cli_args *args)
{
	struct strv q;
	char *agents;

	strv_init(&q);
	out_printf(stdout, "agentmux %s\n", AGENTMUX_VERSION);
	version_kernel();
	version_confinement();
	out_printf(stdout, "libvterm:        %s\n", AGENTMUX_VTERM_VERSION);
	out_printf(stdout, "libraries:       %s, libevent %s, SQLite %s\n",
	    OpenSSL_version(OPENSSL_VERSION), event_get_version(),
	    sqlite3_libversion());
	/* Found from where the binary is: a path, quoted as paths are. */
	agents = xprintf("%s/agents", config_share_dir());
	out_printf(stdout, "profiles:        %s\n", quote_keep(&q, agents));
	free(agents);
	strv_free(&q);
	return 0;
}
