/*
 * Fuzzes the SSRF guard (proxy-addr.c): classification of any IPv4 or IPv6
 * address, in every form that embeds an IPv4 address, the refusal that
 * policy rules may lift, host name checks and connect_to entries. Beyond
 * "no crash" it checks the classes against an independent list of ranges
 * that must never count as public, and that an embedded address is never
 * classed more leniently than the address itself.
 *
 * Input: 16 bytes of address, one flags byte, then text: a host name on
 * the first line, policy rules ("allow 10.0.0.1") on the lines after.
 */
#include <sys/socket.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "fuzz.h"
#include "proxy/proxy-int.h"

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	return 0;
}

/* Written from the RFCs, not from proxy-addr.c: IPv4 ranges a jail must not reach by name. */
static bool
fuzz_addr_v4_forbidden(const uint8_t *b)
{
	return b[0] == 0 || b[0] == 10 || b[0] == 127 || b[0] >= 224 ||
	    (b[0] == 169 && b[1] == 254) ||
	    (b[0] == 172 && (b[1] & 0xf0) == 16) ||
	    (b[0] == 192 && b[1] == 168) ||
	    (b[0] == 100 && (b[1] & 0xc0) == 64);
}

static bool
fuzz_addr_v6_forbidden(const uint8_t *b)
{
	static const uint8_t zero[15];

	return (memcmp(b, zero, 15) == 0 && b[15] <= 1) ||  /* ::, ::1 */
	    b[0] == 0xff ||                                  /* multicast */
	    (b[0] & 0xfe) == 0xfc ||                         /* ULA */
	    (b[0] == 0xfe && (b[1] & 0x80) == 0x80);         /* link, site */
}

static enum proxy_addr_class
fuzz_addr_class4(const uint8_t *b)
{
	struct sockaddr_in sin;

	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	memcpy(&sin.sin_addr, b, 4);
	return proxy_addr_classify((struct sockaddr *)&sin);
}

static enum proxy_addr_class
fuzz_addr_class6(const uint8_t *b, struct sockaddr_in6 *out)
{
	struct sockaddr_in6 sin6;

	memset(&sin6, 0, sizeof sin6);
	sin6.sin6_family = AF_INET6;
	memcpy(&sin6.sin6_addr, b, 16);
	if (out != NULL)
		*out = sin6;
	return proxy_addr_classify((struct sockaddr *)&sin6);
}

/* V4 wrapped in the IPv6 forms that carry it: each must be as strict as V4 alone. */
static void
fuzz_addr_embeddings(const uint8_t *v4)
{
	enum proxy_addr_class c = fuzz_addr_class4(v4);
	uint8_t b[16];
	size_t i;

	/* ::ffff:a.b.c.d and 64:ff9b::a.b.c.d reach exactly a.b.c.d. */
	memset(b, 0, 16);
	b[10] = b[11] = 0xff;
	memcpy(b + 12, v4, 4);
	if (fuzz_addr_class6(b, NULL) != c)
		abort();
	memset(b, 0, 16);
	b[1] = 0x64, b[2] = 0xff, b[3] = 0x9b;
	memcpy(b + 12, v4, 4);
	if (fuzz_addr_class6(b, NULL) != c)
		abort();
	if (c == PROXY_ADDR_PUBLIC)
		return;
	/* 6to4, Teredo and IPv4-compatible forms of a non-public address. */
	memset(b, 0, 16);
	b[0] = 0x20, b[1] = 0x02;
	memcpy(b + 2, v4, 4);
	if (fuzz_addr_class6(b, NULL) == PROXY_ADDR_PUBLIC)
		abort();
	memset(b, 0, 16);
	b[0] = 0x20, b[1] = 0x01;
	for (i = 0; i < 4; i++)
		b[12 + i] = (uint8_t)~v4[i];
	if (fuzz_addr_class6(b, NULL) == PROXY_ADDR_PUBLIC)
		abort();
	memset(b, 0, 16);
	memcpy(b + 12, v4, 4);
	if (fuzz_addr_class6(b, NULL) == PROXY_ADDR_PUBLIC)
		abort();
}

/* The guard: lifted only when named, by a rule naming the address, or for localhost. */
static void
fuzz_addr_refuse(const struct proxy_policy *pol, const char *host,
    const struct sockaddr *sa)
{
	enum proxy_addr_class c = proxy_addr_classify(sa);
	char a[INET6_ADDRSTRLEN], *why;

	if (proxy_addr_refuse(pol, host, sa, true) != NULL)
		abort();
	why = proxy_addr_refuse(pol, host, sa, false);
	if (c == PROXY_ADDR_PUBLIC && why != NULL)
		abort();
	proxy_addr_str(sa, a, sizeof a);
	if (why != NULL && strstr(why, a) == NULL)
		abort();
	if (why == NULL && c != PROXY_ADDR_PUBLIC &&
	    !proxy_policy_names_host(pol, a) &&
	    !proxy_policy_names_host(pol, "localhost") &&
	    !(sa->sa_family == AF_INET6 && strchr(a, '.') != NULL))
		abort();
	free(why);
}

/* A host string: checked, lower-cased once and for all, and classed like its bytes. */
static void
fuzz_addr_host(const struct proxy_policy *pol, const char *host)
{
	char *h = xstrdup(host), *again, *rule;
	struct sockaddr_in6 sin6;
	uint8_t b[16];

	if (proxy_host_valid(h)) {
		again = xstrdup(h);
		if (!proxy_host_valid(again) || strcmp(again, h) != 0 ||
		    strlen(h) > 253 || strstr(h, "..") != NULL)
			abort();
		free(again);
		rule = proxy_host_rule(h, 443, "https");
		free(rule);
		if (inet_pton(AF_INET, h, b) == 1) {
			if (fuzz_addr_v4_forbidden(b) &&
			    fuzz_addr_class4(b) == PROXY_ADDR_PUBLIC)
				abort();
		} else if (inet_pton(AF_INET6, h, b) == 1) {
			fuzz_addr_class6(b, &sin6);
			fuzz_addr_refuse(pol, h, (struct sockaddr *)&sin6);
		}
	}
	free(h);
}

static void
fuzz_addr_connect_to(const char *s)
{
	struct proxy_connect_to ct;
	char *cause = NULL;

	if (proxy_connect_to_parse(s, &ct, &cause) == -1) {
		if (cause == NULL)
			abort();
		free(cause);
		return;
	}
	if (ct.port < 1 || ct.port > 65535 || ct.port2 < 1 ||
	    ct.port2 > 65535 || proxy_connect_to_find(&ct, 1, ct.host,
	    ct.port) != &ct)
		abort();
	proxy_connect_to_clear(&ct);
}

static struct proxy_policy *
fuzz_addr_policy(char *rules)
{
	struct proxy_policy *pol = proxy_policy_create();
	char *line, *save = NULL, *sp, *cause;

	for (line = strtok_r(rules, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		if ((sp = strchr(line, ' ')) == NULL)
			continue;
		*sp = '\0';
		cause = NULL;
		if (proxy_policy_add(pol, line, sp + 1, "fuzz", &cause) == -1)
			free(cause);
	}
	return pol;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proxy_policy *pol;
	struct sockaddr_in sin;
	struct sockaddr_in6 sin6;
	uint8_t b[17] = { 0 };
	char *text, *nl, *host;

	memcpy(b, data, size < sizeof b ? size : sizeof b);
	text = size > sizeof b ? xstrndup((const char *)data + sizeof b,
	    size - sizeof b) : xstrdup("");
	host = text;
	if ((nl = strchr(text, '\n')) != NULL)
		*nl = '\0';
	pol = fuzz_addr_policy(nl != NULL ? nl + 1 : text + strlen(text));

	if (fuzz_addr_v4_forbidden(b) && fuzz_addr_class4(b) ==
	    PROXY_ADDR_PUBLIC)
		abort();
	if (fuzz_addr_v6_forbidden(b) && fuzz_addr_class6(b, NULL) ==
	    PROXY_ADDR_PUBLIC)
		abort();
	fuzz_addr_embeddings(b);
	fuzz_addr_embeddings(b + 12);

	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	memcpy(&sin.sin_addr, b, 4);
	fuzz_addr_class6(b, &sin6);
	fuzz_addr_refuse(pol, host, (b[16] & 1) ? (struct sockaddr *)&sin6 :
	    (struct sockaddr *)&sin);
	fuzz_addr_host(pol, host);
	fuzz_addr_connect_to(host);

	proxy_policy_free(pol);
	free(text);
	return 0;
}
