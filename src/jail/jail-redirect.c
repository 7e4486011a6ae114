/* Transparent interception: the synthetic range on lo, an nftables redirect of it to agentmux's listener, the jail's resolver sockets. */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>

#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libmnl/libmnl.h>
#include <libnftnl/chain.h>
#include <libnftnl/expr.h>
#include <libnftnl/rule.h>
#include <libnftnl/table.h>

#include "jail/jail-int.h"

#define JAIL_NFT_TABLE "agentmux"
#define JAIL_NFT_CHAIN "intercept"

/* Adds a netlink message of the batch and moves on. */
static void
jail_redirect_next(struct mnl_nlmsg_batch *b)
{
	if (!mnl_nlmsg_batch_next(b))
		fatalx("the nftables batch is too small");
}

/* -1 with errno if a message in BUF is an error, else 0. */
static int
jail_redirect_acks(const char *buf, ssize_t n)
{
	const struct nlmsghdr *nlh = (const struct nlmsghdr *)buf;
	const struct nlmsgerr *e;
	int len = (int)n;

	for (; mnl_nlmsg_ok(nlh, len); nlh = mnl_nlmsg_next(nlh, &len)) {
		if (nlh->nlmsg_type != NLMSG_ERROR)
			continue;
		e = mnl_nlmsg_get_payload(nlh);
		if (e->error != 0) {
			errno = -e->error;
			return -1;
		}
	}
	return 0;
}

/*
 * Sends a request and checks every ack. The kernel handles a netlink
 * request in the sender's send, so every ack is queued once it returns.
 */
static int
jail_redirect_talk(int proto, const void *msg, size_t len)
{
	char buf[8192];
	struct mnl_socket *nl;
	ssize_t n;
	int rc = 0, err;

	if ((nl = mnl_socket_open(proto)) == NULL)
		return -1;
	if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) == -1 ||
	    mnl_socket_sendto(nl, msg, len) == -1)
		rc = -1;
	while (rc == 0 && (n = recv(mnl_socket_get_fd(nl), buf, sizeof buf,
	    MSG_DONTWAIT)) > 0)
		rc = jail_redirect_acks(buf, n);
	err = errno;
	mnl_socket_close(nl);
	errno = err;
	return rc;
}

/* 198.18.0.1/15 on lo: the whole synthetic range becomes local, so connects reach the redirect. */
static void
jail_redirect_addr(struct jail_plan *p)
{
	char buf[8192];
	struct nlmsghdr *nlh;
	struct ifaddrmsg *ifa;
	uint32_t a = htonl(JAIL_SYNTH_NET | 1);

	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_NEWADDR;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_EXCL |
	    NLM_F_ACK;
	nlh->nlmsg_seq = (uint32_t)time(NULL);
	ifa = mnl_nlmsg_put_extra_header(nlh, sizeof *ifa);
	ifa->ifa_family = AF_INET;
	ifa->ifa_prefixlen = JAIL_SYNTH_PREFIX;
	ifa->ifa_scope = RT_SCOPE_HOST;
	ifa->ifa_index = if_nametoindex("lo");
	mnl_attr_put_u32(nlh, IFA_LOCAL, a);
	mnl_attr_put_u32(nlh, IFA_ADDRESS, a);
	if (jail_redirect_talk(NETLINK_ROUTE, nlh, nlh->nlmsg_len) == -1)
		jail_child_fail(p, "cannot put the synthetic range "
		    "198.18.0.0/15 on the jail's lo");
}

static void
jail_redirect_expr(struct nftnl_rule *r, struct nftnl_expr *e)
{
	if (e == NULL)
		fatalx("out of memory for an nftables expression");
	nftnl_rule_add_expr(r, e);
}

static struct nftnl_expr *
jail_redirect_cmp(uint32_t reg, const void *data, uint32_t len)
{
	struct nftnl_expr *e = nftnl_expr_alloc("cmp");

	if (e == NULL)
		return NULL;
	nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_SREG, reg);
	nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_OP, NFT_CMP_EQ);
	nftnl_expr_set(e, NFTNL_EXPR_CMP_DATA, data, len);
	return e;
}

/*
 * ip daddr & 255.254.0.0 == 198.18.0.0 meta l4proto tcp redirect to :PORT
 * (the redirect goes to 127.0.0.1, where agentmux's listener is).
 */
static struct nftnl_rule *
jail_redirect_rule(uint16_t port)
{
	struct nftnl_rule *r = nftnl_rule_alloc();
	struct nftnl_expr *e;
	uint32_t net = htonl(JAIL_SYNTH_NET), zero = 0,
	    mask = htonl(~0U << (32 - JAIL_SYNTH_PREFIX));
	uint16_t nport = htons(port);
	uint8_t tcp = IPPROTO_TCP;

	if (r == NULL)
		fatalx("out of memory for an nftables rule");
	nftnl_rule_set_str(r, NFTNL_RULE_TABLE, JAIL_NFT_TABLE);
	nftnl_rule_set_str(r, NFTNL_RULE_CHAIN, JAIL_NFT_CHAIN);
	nftnl_rule_set_u32(r, NFTNL_RULE_FAMILY, NFPROTO_IPV4);
	if ((e = nftnl_expr_alloc("payload")) != NULL) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_BASE,
		    NFT_PAYLOAD_NETWORK_HEADER);
		nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_OFFSET, 16);
		nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_LEN, 4);
		nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_DREG, NFT_REG_1);
	}
	jail_redirect_expr(r, e);
	if ((e = nftnl_expr_alloc("bitwise")) != NULL) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_SREG, NFT_REG_1);
		nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_DREG, NFT_REG_1);
		nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_LEN, 4);
		nftnl_expr_set(e, NFTNL_EXPR_BITWISE_MASK, &mask, 4);
		nftnl_expr_set(e, NFTNL_EXPR_BITWISE_XOR, &zero, 4);
	}
	jail_redirect_expr(r, e);
	jail_redirect_expr(r, jail_redirect_cmp(NFT_REG_1, &net, 4));
	if ((e = nftnl_expr_alloc("meta")) != NULL) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_META_KEY, NFT_META_L4PROTO);
		nftnl_expr_set_u32(e, NFTNL_EXPR_META_DREG, NFT_REG_1);
	}
	jail_redirect_expr(r, e);
	jail_redirect_expr(r, jail_redirect_cmp(NFT_REG_1, &tcp, 1));
	if ((e = nftnl_expr_alloc("immediate")) != NULL) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DREG, NFT_REG_1);
		nftnl_expr_set(e, NFTNL_EXPR_IMM_DATA, &nport, 2);
	}
	jail_redirect_expr(r, e);
	if ((e = nftnl_expr_alloc("redir")) != NULL)
		nftnl_expr_set_u32(e, NFTNL_EXPR_REDIR_REG_PROTO_MIN,
		    NFT_REG_1);
	jail_redirect_expr(r, e);
	return r;
}

/* The table, its NAT output chain and the rule, in one transaction. */
static void
jail_redirect_nft(struct jail_plan *p, uint16_t port)
{
	static char buf[16384];
	struct mnl_nlmsg_batch *b;
	struct nftnl_table *t = nftnl_table_alloc();
	struct nftnl_chain *c = nftnl_chain_alloc();
	struct nftnl_rule *r = jail_redirect_rule(port);
	struct nlmsghdr *nlh;
	uint32_t seq = (uint32_t)time(NULL);

	if (t == NULL || c == NULL)
		fatalx("out of memory for nftables");
	b = mnl_nlmsg_batch_start(buf, sizeof buf);
	nftnl_batch_begin(mnl_nlmsg_batch_current(b), seq++);
	jail_redirect_next(b);
	nftnl_table_set_str(t, NFTNL_TABLE_NAME, JAIL_NFT_TABLE);
	nlh = nftnl_table_nlmsg_build_hdr(mnl_nlmsg_batch_current(b),
	    NFT_MSG_NEWTABLE, NFPROTO_IPV4, NLM_F_CREATE | NLM_F_ACK, seq++);
	nftnl_table_nlmsg_build_payload(nlh, t);
	jail_redirect_next(b);
	nftnl_chain_set_str(c, NFTNL_CHAIN_TABLE, JAIL_NFT_TABLE);
	nftnl_chain_set_str(c, NFTNL_CHAIN_NAME, JAIL_NFT_CHAIN);
	nftnl_chain_set_str(c, NFTNL_CHAIN_TYPE, "nat");
	nftnl_chain_set_u32(c, NFTNL_CHAIN_HOOKNUM, NF_INET_LOCAL_OUT);
	nftnl_chain_set_s32(c, NFTNL_CHAIN_PRIO, -100);
	nftnl_chain_set_u32(c, NFTNL_CHAIN_POLICY, NF_ACCEPT);
	nlh = nftnl_chain_nlmsg_build_hdr(mnl_nlmsg_batch_current(b),
	    NFT_MSG_NEWCHAIN, NFPROTO_IPV4, NLM_F_CREATE | NLM_F_ACK, seq++);
	nftnl_chain_nlmsg_build_payload(nlh, c);
	jail_redirect_next(b);
	nlh = nftnl_rule_nlmsg_build_hdr(mnl_nlmsg_batch_current(b),
	    NFT_MSG_NEWRULE, NFPROTO_IPV4, NLM_F_APPEND | NLM_F_CREATE |
	    NLM_F_ACK, seq++);
	nftnl_rule_nlmsg_build_payload(nlh, r);
	jail_redirect_next(b);
	nftnl_batch_end(mnl_nlmsg_batch_current(b), seq++);
	jail_redirect_next(b);
	if (jail_redirect_talk(NETLINK_NETFILTER, mnl_nlmsg_batch_head(b),
	    mnl_nlmsg_batch_size(b)) == -1)
		jail_child_fail(p, "cannot install the jail's nftables "
		    "redirect (transparent interception); set `transparent = "
		    "no` in [proxy] if this kernel has no nf_tables");
	mnl_nlmsg_batch_stop(b);
	nftnl_rule_free(r);
	nftnl_chain_free(c);
	nftnl_table_free(t);
}

/* A socket of TYPE bound to ADDR:PORT inside the jail (listening if a stream). */
static int
jail_redirect_socket(struct jail_plan *p, int type, uint32_t addr,
    uint16_t port)
{
	struct sockaddr_in sin;
	int fd, one = 1;

	if ((fd = socket(AF_INET, type | SOCK_CLOEXEC, 0)) == -1)
		jail_child_fail(p, "cannot create a socket for the jail's "
		    "resolver or interception");
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	sin.sin_addr.s_addr = htonl(addr);
	if (bind(fd, (struct sockaddr *)&sin, sizeof sin) == -1)
		jail_child_fail(p, "cannot bind a socket in the jail to port "
		    "%u", port);
	if (type == SOCK_STREAM && listen(fd, 128) == -1)
		jail_child_fail(p, "cannot listen on port %u in the jail",
		    port);
	return fd;
}

void
jail_redirect_setup(struct jail_plan *p, int fds[3])
{
	uint16_t port = (uint16_t)p->conf->transparent_port;

	jail_redirect_addr(p);
	fds[0] = jail_redirect_socket(p, SOCK_STREAM, INADDR_LOOPBACK, port);
	jail_redirect_nft(p, port);
	fds[1] = jail_redirect_socket(p, SOCK_DGRAM, JAIL_RESOLVER_ADDR, 53);
	fds[2] = jail_redirect_socket(p, SOCK_STREAM, JAIL_RESOLVER_ADDR, 53);
}
