/* Address classification (the SSRF guard), host name checks and connect_to entries. */
#include <sys/socket.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "proxy/proxy-int.h"

static const char *const proxy_addr_names[] = {
	[PROXY_ADDR_PUBLIC] = "public",
	[PROXY_ADDR_LOOPBACK] = "loopback",
	[PROXY_ADDR_PRIVATE] = "private",
	[PROXY_ADDR_LINKLOCAL] = "link-local",
	[PROXY_ADDR_CGNAT] = "shared (CGNAT)",
	[PROXY_ADDR_MULTICAST] = "multicast",
	[PROXY_ADDR_METADATA] = "cloud metadata",
	[PROXY_ADDR_UNSPECIFIED] = "unspecified or reserved",
};

const char *
proxy_addr_class_name(enum proxy_addr_class c)
{
	if ((size_t)c >= nitems(proxy_addr_names))
		return "unknown";
	return proxy_addr_names[c];
}

/* True if A (host order) is in NET/BITS. */
static bool
proxy_addr_in4(uint32_t a, uint32_t net, int bits)
{
	uint32_t mask = bits == 0 ? 0 : 0xffffffffU << (32 - bits);

	return (a & mask) == (net & mask);
}

static enum proxy_addr_class
proxy_addr_classify4(uint32_t a)
{
	static const struct {
		uint32_t net;
		int bits;
		enum proxy_addr_class c;
	} t[] = {
		/* Metadata services come before the ranges that hold them. */
		{ 0xa9fea9feU, 32, PROXY_ADDR_METADATA },   /* 169.254.169.254 */
		{ 0xa9feaa02U, 32, PROXY_ADDR_METADATA },   /* 169.254.170.2 (ECS) */
		{ 0x646464c8U, 32, PROXY_ADDR_METADATA },   /* 100.100.100.200 */
		{ 0x00000000U, 8, PROXY_ADDR_UNSPECIFIED }, /* 0/8 */
		{ 0x7f000000U, 8, PROXY_ADDR_LOOPBACK },
		{ 0x0a000000U, 8, PROXY_ADDR_PRIVATE },
		{ 0xac100000U, 12, PROXY_ADDR_PRIVATE },
		{ 0xc0a80000U, 16, PROXY_ADDR_PRIVATE },
		{ 0xa9fe0000U, 16, PROXY_ADDR_LINKLOCAL },
		{ 0x64400000U, 10, PROXY_ADDR_CGNAT },
		{ 0xe0000000U, 4, PROXY_ADDR_MULTICAST },
		{ 0xf0000000U, 4, PROXY_ADDR_UNSPECIFIED }, /* 240/4, broadcast */
		{ 0xc0000000U, 24, PROXY_ADDR_UNSPECIFIED }, /* 192.0.0/24 */
		{ 0xc0000200U, 24, PROXY_ADDR_UNSPECIFIED }, /* TEST-NET-1 */
		{ 0xc6120000U, 15, PROXY_ADDR_UNSPECIFIED }, /* 198.18/15 */
		{ 0xc6336400U, 24, PROXY_ADDR_UNSPECIFIED }, /* TEST-NET-2 */
		{ 0xcb007100U, 24, PROXY_ADDR_UNSPECIFIED }, /* TEST-NET-3 */
	};
	size_t i;

	for (i = 0; i < nitems(t); i++) {
		if (proxy_addr_in4(a, t[i].net, t[i].bits))
			return t[i].c;
	}
	return PROXY_ADDR_PUBLIC;
}

static uint32_t
proxy_addr_get4(const uint8_t *b)
{
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 |
	    (uint32_t)b[2] << 8 | b[3];
}

static bool
proxy_addr_prefix6(const uint8_t *b, const uint8_t *p, size_t nbytes)
{
	return memcmp(b, p, nbytes) == 0;
}

/* Addresses that carry an IPv4 address take that address's class. */
static bool
proxy_addr_embedded4(const uint8_t *b, enum proxy_addr_class *c)
{
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		0xff, 0xff };
	static const uint8_t nat64[12] = { 0, 0x64, 0xff, 0x9b };
	uint8_t teredo[4];
	size_t i;

	if (proxy_addr_prefix6(b, mapped, 12) ||
	    proxy_addr_prefix6(b, nat64, 12)) {
		*c = proxy_addr_classify4(proxy_addr_get4(b + 12));
		return true;
	}
	if (b[0] == 0x20 && b[1] == 0x02) {          /* 6to4 */
		*c = proxy_addr_classify4(proxy_addr_get4(b + 2));
		return *c != PROXY_ADDR_PUBLIC;
	}
	if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0) {
		for (i = 0; i < 4; i++)           /* Teredo: client inverted */
			teredo[i] = (uint8_t)~b[12 + i];
		*c = proxy_addr_classify4(proxy_addr_get4(teredo));
		return *c != PROXY_ADDR_PUBLIC;
	}
	return false;
}

static enum proxy_addr_class
proxy_addr_classify6(const uint8_t *b)
{
	static const uint8_t zero[16];
	static const uint8_t aws[16] = { 0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0, 0,
		0, 0, 0, 0, 0, 0, 0x02, 0x54 };
	static const uint8_t doc[4] = { 0x20, 0x01, 0x0d, 0xb8 };
	static const uint8_t discard[8] = { 0x01, 0x00 };
	static const uint8_t nat64local[6] = { 0, 0x64, 0xff, 0x9b, 0, 1 };
	enum proxy_addr_class c;

	if (memcmp(b, zero, 15) == 0)
		return b[15] == 1 ? PROXY_ADDR_LOOPBACK : PROXY_ADDR_UNSPECIFIED;
	if (memcmp(b, aws, 16) == 0)
		return PROXY_ADDR_METADATA;
	if (proxy_addr_embedded4(b, &c))
		return c;
	if (memcmp(b, zero, 12) == 0)                 /* IPv4-compatible */
		return PROXY_ADDR_UNSPECIFIED;
	if (b[0] == 0xff)
		return PROXY_ADDR_MULTICAST;
	if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80)
		return PROXY_ADDR_LINKLOCAL;
	if ((b[0] & 0xfe) == 0xfc || (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0))
		return PROXY_ADDR_PRIVATE;           /* ULA, old site-local */
	if (proxy_addr_prefix6(b, nat64local, 6))
		return PROXY_ADDR_PRIVATE;
	if (proxy_addr_prefix6(b, doc, 4) || proxy_addr_prefix6(b, discard, 8))
		return PROXY_ADDR_UNSPECIFIED;
	return PROXY_ADDR_PUBLIC;
}

enum proxy_addr_class
proxy_addr_classify(const struct sockaddr *sa)
{
	const struct sockaddr_in *sin;
	const struct sockaddr_in6 *sin6;

	switch (sa->sa_family) {
	case AF_INET:
		sin = (const struct sockaddr_in *)sa;
		return proxy_addr_classify4(ntohl(sin->sin_addr.s_addr));
	case AF_INET6:
		sin6 = (const struct sockaddr_in6 *)sa;
		return proxy_addr_classify6(sin6->sin6_addr.s6_addr);
	default:
		return PROXY_ADDR_UNSPECIFIED;
	}
}

const char *
proxy_addr_str(const struct sockaddr *sa, char *buf, size_t len)
{
	const void *a;

	if (sa->sa_family == AF_INET)
		a = &((const struct sockaddr_in *)sa)->sin_addr;
	else if (sa->sa_family == AF_INET6)
		a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
	else {
		snprintf(buf, len, "?");
		return buf;
	}
	if (inet_ntop(sa->sa_family, a, buf, (socklen_t)len) == NULL)
		snprintf(buf, len, "?");
	return buf;
}

/* The IPv4 form of an IPv4-mapped IPv6 address, for rules that name it. */
static bool
proxy_addr_unmapped(const struct sockaddr *sa, char *buf, size_t len)
{
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		0xff, 0xff };
	const uint8_t *b;

	if (sa->sa_family != AF_INET6)
		return false;
	b = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
	if (memcmp(b, mapped, 12) != 0)
		return false;
	return inet_ntop(AF_INET, b + 12, buf, (socklen_t)len) != NULL;
}

char *
proxy_addr_refuse(const struct proxy_policy *pol, const char *host,
    const struct sockaddr *sa, bool named)
{
	enum proxy_addr_class c = proxy_addr_classify(sa);
	char a[INET6_ADDRSTRLEN], v4[INET_ADDRSTRLEN];
	bool brackets;

	if (c == PROXY_ADDR_PUBLIC || named)
		return NULL;
	proxy_addr_str(sa, a, sizeof a);
	if (proxy_policy_names_host(pol, a))
		return NULL;
	if (proxy_addr_unmapped(sa, v4, sizeof v4) &&
	    proxy_policy_names_host(pol, v4))
		return NULL;
	if (c == PROXY_ADDR_LOOPBACK && strcasecmp(host, "localhost") == 0 &&
	    proxy_policy_names_host(pol, "localhost"))
		return NULL;
	brackets = strchr(a, ':') != NULL;
	if (strcmp(host, a) == 0)
		return xprintf("%s is a %s address, which no rule names; add "
		    "`allow %s%s%s` to reach it", a, proxy_addr_class_name(c),
		    brackets ? "[" : "", a, brackets ? "]" : "");
	return xprintf("%s resolves to %s, a %s address, which no rule "
	    "names; add `allow %s%s%s` to reach it", host, a,
	    proxy_addr_class_name(c), brackets ? "[" : "", a,
	    brackets ? "]" : "");
}

bool
proxy_host_is_addr(const char *host)
{
	struct in6_addr a6;
	struct in_addr a4;

	return inet_pton(AF_INET, host, &a4) == 1 ||
	    inet_pton(AF_INET6, host, &a6) == 1;
}

bool
proxy_host_valid(char *host)
{
	size_t len = strlen(host);
	char *p;

	/* "example.com." is example.com: rules must not miss it. */
	if (len > 1 && host[len - 1] == '.' && host[len - 2] != '.')
		host[--len] = '\0';
	if (len == 0 || len > 253 || host[0] == '.')
		return false;
	if (strchr(host, ':') != NULL)
		return proxy_host_is_addr(host);
	for (p = host; *p != '\0'; p++) {
		if (!isalnum((unsigned char)*p) && strchr("-._", *p) == NULL)
			return false;
		*p = (char)tolower((unsigned char)*p);
	}
	return strstr(host, "..") == NULL;
}

/* Reads one "[v6]" or "name" part of a connect_to entry up to ':'. */
static const char *
proxy_connect_to_part(const char *p, char **out)
{
	const char *end;

	if (*p == '[') {
		if ((end = strchr(p, ']')) == NULL || end[1] != ':')
			return NULL;
		*out = xstrndup(p + 1, (size_t)(end - p - 1));
		return end + 2;
	}
	if ((end = strchr(p, ':')) == NULL || end == p)
		return NULL;
	*out = xstrndup(p, (size_t)(end - p));
	return end + 1;
}

static const char *
proxy_connect_to_port(const char *p, int *port, char end)
{
	long v = 0;

	if (!isdigit((unsigned char)*p))
		return NULL;
	while (isdigit((unsigned char)*p) && v <= 65535)
		v = v * 10 + (*p++ - '0');
	if (v < 1 || v > 65535 || *p != end)
		return NULL;
	*port = (int)v;
	return end == '\0' ? p : p + 1;
}

int
proxy_connect_to_parse(const char *s, struct proxy_connect_to *ct,
    char **cause)
{
	const char *p;

	memset(ct, 0, sizeof *ct);
	if ((p = proxy_connect_to_part(s, &ct->host)) == NULL ||
	    (p = proxy_connect_to_port(p, &ct->port, ':')) == NULL ||
	    (p = proxy_connect_to_part(p, &ct->addr)) == NULL ||
	    proxy_connect_to_port(p, &ct->port2, '\0') == NULL ||
	    !proxy_host_valid(ct->host) || !proxy_host_valid(ct->addr)) {
		*cause = xprintf("connect_to '%s': write HOST:PORT:ADDR:PORT "
		    "(e.g. api.example.com:443:127.0.0.1:8443)", s);
		proxy_connect_to_clear(ct);
		return -1;
	}
	return 0;
}

void
proxy_connect_to_clear(struct proxy_connect_to *ct)
{
	free(ct->host);
	free(ct->addr);
	memset(ct, 0, sizeof *ct);
}

const struct proxy_connect_to *
proxy_connect_to_find(const struct proxy_connect_to *v, size_t n,
    const char *host, int port)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (v[i].port == port && strcasecmp(v[i].host, host) == 0)
			return &v[i];
	}
	return NULL;
}

char *
proxy_host_rule(const char *host, int port, const char *scheme)
{
	bool v6 = strchr(host, ':') != NULL;
	bool tls = scheme != NULL && (strcmp(scheme, "https") == 0 ||
	    strcmp(scheme, "wss") == 0 || strcmp(scheme, "tunnel") == 0);

	if ((tls && port == 443) || (!tls && port == 80))
		return xprintf(v6 ? "[%s]" : "%s", host);
	return xprintf(v6 ? "[%s]:%d" : "%s:%d", host, port);
}
