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
#include "session/session.h"

static void
version_kernel(const struct session_host *h)
{
	struct utsname u;

	if (uname(&u) == 0)
		out_printf(stdout, "kernel:          %s %s %s\n", u.sysname,
		    u.release, u.machine);
	if (h->userns_cause == NULL)
		out_printf(stdout, "user namespaces: yes\n");
	else
		out_printf(stdout, "user namespaces: no: %s\n", h->userns_cause);
}

static void
version_confinement(const struct session_host *h)
{
	const struct scmp_version *sv = seccomp_version();

	if (h->landlock_abi > 0)
		out_printf(stdout, "Landlock:        ABI %d\n", h->landlock_abi);
	else
		out_printf(stdout, "Landlock:        not available\n");
	if (h->seccomp_level >= 0)
		out_printf(stdout, "seccomp:         filters (libseccomp "
		    "%u.%u.%u, API level %d)\n", sv->major, sv->minor,
		    sv->micro, h->seccomp_level);
	else
		out_printf(stdout, "seccomp:         no: %s\n", h->seccomp_cause);
	out_printf(stdout, "limits:          %s\n", h->limits);
}

int
cmd_version(struct cli_args *args)
{
	struct session_host h;
	struct strv q;
	char *agents;

	strv_init(&q);
	out_printf(stdout, "agentmux %s\n", AGENTMUX_VERSION);
	session_host_probe(&h, false);
	version_kernel(&h);
	version_confinement(&h);
	session_host_free(&h);
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
