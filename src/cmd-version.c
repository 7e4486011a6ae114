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
		printf("kernel:          %s %s %s\n", u.sysname, u.release,
		    u.machine);
	if (jail_probe_userns(&cause) == 0)
		printf("user namespaces: yes\n");
	else {
		printf("user namespaces: no: %s\n", cause);
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
		printf("Landlock:        ABI %d\n", abi);
	else
		printf("Landlock:        not available\n");
	if ((level = jail_probe_seccomp(&cause)) >= 0)
		printf("seccomp:         filters (libseccomp %u.%u.%u, API level "
		    "%d)\n", sv->major, sv->minor, sv->micro, level);
	else {
		printf("seccomp:         no: %s\n", cause);
		free(cause);
	}
	limits = jail_probe_limits();
	printf("limits:          %s\n", limits);
	free(limits);
}

int
cmd_version(struct cli_args *args)
{
	printf("agentmux %s\n", AGENTMUX_VERSION);
	version_kernel();
	version_confinement();
	printf("libvterm:        %s\n", AGENTMUX_VTERM_VERSION);
	printf("libraries:       %s, libevent %s, SQLite %s\n",
	    OpenSSL_version(OPENSSL_VERSION), event_get_version(),
	    sqlite3_libversion());
	printf("profiles:        %s/agents\n", config_share_dir());
	return 0;
}
