/* What this machine lets a jail use, probed for agentmux doctor and version (front ends never reach the jail). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "jail/jail.h"
#include "session-int.h"

void
session_host_probe(struct session_host *h, bool overlay)
{
	memset(h, 0, sizeof *h);
	/* Each cause is set only when its probe fails. */
	jail_probe_userns(&h->userns_cause);
	h->seccomp_level = jail_probe_seccomp(&h->seccomp_cause);
	h->landlock_abi = jail_probe_landlock();
	h->overlay_probed = overlay;
	if (overlay)
		jail_probe_overlay(&h->overlay_cause);
	h->limits = jail_probe_limits();
}

void
session_host_free(struct session_host *h)
{
	free(h->userns_cause);
	free(h->seccomp_cause);
	free(h->overlay_cause);
	free(h->limits);
	memset(h, 0, sizeof *h);
}

bool
session_host_synthetic(const char *addr)
{
	struct in_addr a;

	return inet_pton(AF_INET, addr, &a) == 1 && (ntohl(a.s_addr) &
	    (~0U << (32 - JAIL_SYNTH_PREFIX))) == JAIL_SYNTH_NET;
}
