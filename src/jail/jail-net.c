/* The jail's network: loopback only, and the proxy listener made inside it and handed out. */
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>

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

/* Notes agentmux's own network namespace, for the jail to check it is elsewhere. */
void
jail_net_plan(struct jail_plan *p)
{
	struct stat st;

	p->host_netns_dev = 0;
	p->host_netns_ino = 0;
	if (stat("/proc/self/ns/net", &st) == 0) {
		p->host_netns_dev = st.st_dev;
		p->host_netns_ino = st.st_ino;
	}
}

/*
 * The jail's only way out must be the proxy: its network namespace has to
 * be a new one, not agentmux's, and hold nothing but lo (no interface moved
 * in, nothing inherited). Checked in the jail before the command can run.
 */
void
jail_net_check(struct jail_plan *p)
{
	struct if_nameindex *ifs, *i;
	struct stat st;

	if (stat("/proc/self/ns/net", &st) == -1)
		jail_child_fail(p, "cannot read the jail's network namespace");
	if (p->host_netns_ino != 0 && st.st_dev == p->host_netns_dev &&
	    st.st_ino == p->host_netns_ino)
		jail_child_failx(p, "the jail shares agentmux's network "
		    "namespace, so it would reach the network directly; "
		    "refusing to start");
	if ((ifs = if_nameindex()) == NULL)
		jail_child_fail(p, "cannot list the jail's network interfaces");
	for (i = ifs; i->if_index != 0; i++) {
		if (strcmp(i->if_name, "lo") != 0)
			jail_child_failx(p, "the jail's network namespace has "
			    "an interface besides lo (%s), a way out the proxy "
			    "would not see; refusing to start", i->if_name);
	}
	if_freenameindex(ifs);
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
	jail_net_check(p);
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
