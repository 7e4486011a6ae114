/* The jail's network: loopback only, and the proxy listener made inside it and handed out. */
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "jail/jail-int.h"

/* Brings lo up, using any inet socket for the ioctls. */
static void
jail_net_lo_up(struct jail_plan *p, int fd)
{
	struct ifreq ifr;

	memset(&ifr, 0, sizeof ifr);
	strcpy(ifr.ifr_name, "lo");
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) == -1)
		jail_child_fail(p, "cannot read the flags of lo");
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	if (ioctl(fd, SIOCSIFFLAGS, &ifr) == -1)
		jail_child_fail(p, "cannot bring lo up");
}

/*
 * A socket keeps the network namespace it was made in: agentmux accepts on
 * this descriptor from outside, and it is the only way out of the jail.
 */
int
jail_net_listen(struct jail_plan *p)
{
	struct sockaddr_in sin;
	int fd, one = 1;

	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		jail_child_fail(p, "cannot create the proxy listener");
	jail_net_lo_up(p, fd);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)p->conf->proxy_port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&sin, sizeof sin) == -1)
		jail_child_fail(p, "cannot bind the proxy listener to "
		    "127.0.0.1:%d", p->conf->proxy_port);
	if (listen(fd, 128) == -1)
		jail_child_fail(p, "cannot listen on 127.0.0.1:%d",
		    p->conf->proxy_port);
	return fd;
}
