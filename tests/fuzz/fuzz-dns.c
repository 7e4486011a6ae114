/*
 * Fuzzes the jail resolver's query parser and its answers: a query it
 * accepts has a name of valid labels that came from the input, its
 * question fits in the input, and the answer made for it is well formed
 * (the question copied, one A record or none) and parses back as the
 * same question once its QR bit is cleared.
 */
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

static void
fd_check_answer(const uint8_t *data, const struct proxy_dns_query *q,
    uint32_t addr)
{
	unsigned char out[PROXY_DNS_MAX + 16];
	struct proxy_dns_query back;
	size_t n;

	n = proxy_dns_answer(data, q, PROXY_DNS_NOERROR, addr, out, sizeof out);
	if (n != 12 + q->qlen + (addr != 0 ? 16 : 0))
		abort();
	if (memcmp(out + 12, data + 12, q->qlen) != 0 || !(out[2] & 0x80))
		abort();
	/* The answer's head with QR cleared and no answer is the query again. */
	out[2] &= 0x7f;
	out[6] = out[7] = 0;
	if (proxy_dns_parse(out, 12 + q->qlen, &back) != 0 ||
	    strcmp(back.name, q->name) != 0 || back.type != q->type ||
	    back.id != q->id)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proxy_dns_query q;
	size_t n;

	if (proxy_dns_parse(data, size, &q) != 0)
		return 0;
	n = strlen(q.name);
	if (n == 0 || n >= PROXY_DNS_NAME_MAX || 12 + q.qlen > size ||
	    q.qlen != n + 2 + 4 || strstr(q.name, "..") != NULL ||
	    q.name[0] == '.' || q.name[n - 1] == '.')
		abort();
	fd_check_answer(data, &q, 0);
	fd_check_answer(data, &q, PROXY_SYNTH_FIRST);
	return 0;
}
