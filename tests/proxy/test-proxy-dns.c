/* The jail resolver's parser and answers: what a query may be, and the bytes of each answer. */
#include <arpa/inet.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/testlib.h"
#include "proxy/proxy-int.h"

/* A query for NAME ("a.b") of TYPE, with FLAGS and ARCOUNT, in BUF; its length. */
static size_t
mkq(unsigned char *buf, const char *name, unsigned type, unsigned flags,
    unsigned ar)
{
	const char *p = name, *dot;
	size_t n = 12, l;

	memset(buf, 0, 12);
	buf[0] = 0xab;
	buf[1] = 0xcd;
	buf[2] = (unsigned char)(flags >> 8);
	buf[3] = (unsigned char)flags;
	buf[5] = 1;
	buf[11] = (unsigned char)ar;
	for (;;) {
		dot = strchr(p, '.');
		l = dot != NULL ? (size_t)(dot - p) : strlen(p);
		buf[n++] = (unsigned char)l;
		memcpy(buf + n, p, l);
		n += l;
		if (dot == NULL)
			break;
		p = dot + 1;
	}
	buf[n++] = 0;
	buf[n++] = (unsigned char)(type >> 8);
	buf[n++] = (unsigned char)type;
	buf[n++] = 0;
	buf[n++] = 1;
	return n;
}

static void
test_parse(void **state)
{
	unsigned char b[600];
	struct proxy_dns_query q;
	size_t n;

	n = mkq(b, "API.Example.com", 1, 0x0100, 0);
	assert_int_equal(proxy_dns_parse(b, n, &q), 0);
	assert_string_equal(q.name, "API.Example.com");
	assert_int_equal(q.id, 0xabcd);
	assert_int_equal(q.type, 1);
	assert_int_equal(q.class, 1);
	assert_int_equal(q.qlen, n - 12);
	static const unsigned char opt[] = { 0, 0, 0x29, 0x04, 0xd0, 0, 0, 0,
	    0, 0, 0 };
	/* An EDNS OPT record after the question is let be. */
	n = mkq(b, "x.test", 28, 0x0100, 1);
	memcpy(b + n, opt, sizeof opt);
	assert_int_equal(proxy_dns_parse(b, n + sizeof opt, &q), 0);
	assert_int_equal(q.type, 28);
}

static void
test_refused(void **state)
{
	unsigned char b[600];
	struct proxy_dns_query q;
	size_t n;

	n = mkq(b, "a.test", 1, 0x8100, 0);          /* a response */
	assert_int_equal(proxy_dns_parse(b, n, &q), -1);
	n = mkq(b, "a.test", 1, 0x0100, 0);
	b[5] = 2;                                     /* two questions */
	assert_int_equal(proxy_dns_parse(b, n, &q), -1);
	b[5] = 1;
	b[7] = 1;                                     /* an answer in a query */
	assert_int_equal(proxy_dns_parse(b, n, &q), -1);
	b[7] = 0;
	assert_int_equal(proxy_dns_parse(b, n - 1, &q), -1);   /* cut short */
	assert_int_equal(proxy_dns_parse(b, 11, &q), -1);
	/* A compression pointer in a query's name. */
	n = 12;
	memcpy(b + n, "\x01" "a\xc0\x0c\0\x01\0\x01", 8);
	assert_int_equal(proxy_dns_parse(b, n + 8, &q), -1);
	/* A 64-byte label; a label holding a dot or a NUL. */
	memset(b + 12, 'a', 70);
	b[12] = 64;
	b[77] = 0;
	memcpy(b + 78, "\0\x01\0\x01", 4);
	assert_int_equal(proxy_dns_parse(b, 82, &q), -1);
	memcpy(b + 12, "\x03" "a.b\0\0\x01\0\x01", 9);
	assert_int_equal(proxy_dns_parse(b, 21, &q), -1);
	memcpy(b + 12, "\x03" "a\0b\0\0\x01\0\x01", 9);
	assert_int_equal(proxy_dns_parse(b, 21, &q), -1);
	/* The root alone names nothing. */
	memcpy(b + 12, "\0\0\x01\0\x01", 5);
	assert_int_equal(proxy_dns_parse(b, 17, &q), -1);
	/*
	 * 254 characters (labels of 63, 63, 63 and 62): one past a name's
	 * longest; its NUL was written past the name's buffer. 253 parse.
	 */
	n = 12;
	memset(b + n, 'x', 260);
	b[n] = 63;
	b[n + 64] = 63;
	b[n + 128] = 63;
	b[n + 192] = 62;
	b[n + 255] = 0;
	memcpy(b + n + 256, "\0\x01\0\x01", 4);
	assert_int_equal(proxy_dns_parse(b, n + 260, &q), -1);
	b[n + 192] = 61;
	b[n + 254] = 0;
	memcpy(b + n + 255, "\0\x01\0\x01", 4);
	assert_int_equal(proxy_dns_parse(b, n + 259, &q), 0);
	assert_int_equal(strlen(q.name), 253);
	/* Longer than a datagram may be. */
	mkq(b, "a.test", 1, 0x0100, 0);
	assert_int_equal(proxy_dns_parse(b, PROXY_DNS_MAX + 1, &q), -1);
}

static void
test_answer(void **state)
{
	unsigned char b[600], out[600];
	struct proxy_dns_query q;
	uint32_t a;
	size_t n, m;

	n = mkq(b, "web.test", 1, 0x0100, 0);
	assert_int_equal(proxy_dns_parse(b, n, &q), 0);
	m = proxy_dns_answer(b, &q, PROXY_DNS_NOERROR, 0xc6120105U, out,
	    sizeof out);
	assert_int_equal(m, n + 16);
	assert_int_equal(out[0], 0xab);
	assert_int_equal(out[2] & 0x80, 0x80);     /* QR */
	assert_int_equal(out[2] & 0x01, 0x01);     /* RD as asked */
	assert_int_equal(out[3] & 0x0f, 0);        /* NOERROR */
	assert_int_equal(out[7], 1);               /* one answer */
	assert_memory_equal(out + 12, b + 12, n - 12);
	memcpy(&a, out + m - 4, 4);
	assert_int_equal(ntohl(a), 0xc6120105U);
	/* NXDOMAIN: the question and no record. */
	m = proxy_dns_answer(b, &q, PROXY_DNS_NXDOMAIN, 0, out, sizeof out);
	assert_int_equal(m, n);
	assert_int_equal(out[3] & 0x0f, 3);
	assert_int_equal(out[7], 0);
	/* Too little room: nothing. */
	assert_int_equal(proxy_dns_answer(b, &q, 0, 1, out, n + 15), 0);
}

static int nrecorded;

static void
count_request(void *arg, const struct request *r)
{
	(void)arg;
	(void)r;
	nrecorded++;
}

/* A session with an empty policy whose records are counted. */
static struct proxy_session *
mksession(void)
{
	struct proxy_session *ps = calloc(1, sizeof *ps);

	assert_non_null(ps);
	ps->policy = proxy_policy_create();
	ps->cbs.request = count_request;
	strv_init(&ps->synth);
	strv_init(&ps->dns_keys);
	nrecorded = 0;
	return ps;
}

static void
freesession(struct proxy_session *ps)
{
	proxy_dns_free(ps);
	proxy_policy_free(ps->policy);
	free(ps);
}

/* The rcode of the answer to an A query for NAME, and its address in *ADDR. */
static int
ask(struct proxy_session *ps, const char *name, uint32_t *addr)
{
	unsigned char b[600], out[700];
	size_t n = mkq(b, name, 1, 0x0100, 0), m;

	m = proxy_dns_reply(ps, b, n, out, sizeof out);
	assert_true(m >= n);
	*addr = 0;
	if (m == n + 16) {
		memcpy(addr, out + m - 4, 4);
		*addr = ntohl(*addr);
	}
	return out[3] & 0x0f;
}

/* Many names: each its own address, found again and mapped back; then the cap. */
static void
test_many_names(void **state)
{
	struct proxy_session *ps = mksession();
	char name[64];
	uint32_t a;
	int i;

	(void)state;
	for (i = 0; i < 20000; i++) {
		snprintf(name, sizeof name, "n%d.many.test", i);
		a = proxy_dns_addr_of(ps, name);
		if (i < PROXY_SYNTH_MAX) {
			assert_int_equal(a, PROXY_SYNTH_FIRST + (uint32_t)i);
			assert_string_equal(proxy_dns_name_of(ps, a), name);
		} else
			assert_int_equal(a, 0);
	}
	for (i = PROXY_SYNTH_MAX - 1; i >= 0; i -= 7) {
		snprintf(name, sizeof name, "n%d.many.test", i);
		assert_int_equal(proxy_dns_addr_of(ps, name),
		    PROXY_SYNTH_FIRST + (uint32_t)i);
	}
	assert_null(proxy_dns_name_of(ps, PROXY_SYNTH_FIRST + PROXY_SYNTH_MAX));
	/* Full: a known name still answers, a new one gets SERVFAIL, said once. */
	assert_int_equal(ask(ps, "n5.many.test", &a), 0);
	assert_int_equal(a, PROXY_SYNTH_FIRST + 5);
	nrecorded = 0;
	assert_int_equal(ask(ps, "new1.many.test", &a), PROXY_DNS_SERVFAIL);
	assert_int_equal(ask(ps, "new2.many.test", &a), PROXY_DNS_SERVFAIL);
	assert_int_equal(nrecorded, 1);
	freesession(ps);
}

/* A lookup is recorded once per name and type; repeats are counted. */
static void
test_recorded_once(void **state)
{
	struct proxy_session *ps = mksession();
	uint32_t a, b;
	int i;

	(void)state;
	for (i = 0; i < 50; i++)
		assert_int_equal(ask(ps, "web.test", &a), 0);
	assert_int_equal(nrecorded, 1);
	assert_int_equal(ps->dns_repeats, 49);
	assert_int_equal(ask(ps, "api.test", &b), 0);
	assert_int_not_equal(a, b);
	assert_int_equal(nrecorded, 2);
	freesession(ps);
}

static int nalerts;

static void
count_alert(void *arg, const char *kind, const char *message)
{
	(void)arg;
	assert_string_equal(kind, "exfiltration");
	assert_non_null(strstr(message, "secret k"));
	nalerts++;
}

/*
 * A name carrying a secret's placeholder (any case, split by dots, or in
 * hex) is not resolved and is flagged: connecting to it would send the
 * placeholder to the host's DNS. Its own host may carry it (nothing to
 * swap there, but nothing leaks either).
 */
static void
test_placeholder_name(void **state)
{
	struct proxy_session *ps = mksession();
	char *const hosts[] = { "web.test", NULL };
	struct proxy_secret sec = { "k", "sk-tp-Gxds1SikF", "sk-real", hosts,
	    NULL };
	uint32_t a;

	(void)state;
	ps->secrets = &sec;
	ps->nsecrets = 1;
	ps->patterns = proxy_scan_patterns(&sec, 1);
	ps->cbs.alert = count_alert;
	nalerts = 0;
	assert_int_equal(ask(ps, "sk-tp-gxds1sikf.leak.test", &a),
	    PROXY_DNS_NXDOMAIN);
	assert_int_equal(ask(ps, "sk-tp-gx.ds1sikf.leak.test", &a),
	    PROXY_DNS_NXDOMAIN);
	/* "sk-tp-Gxds1SikF" in hex. */
	assert_int_equal(ask(ps, "736b2d74702d47786473315369.6b46.leak.test",
	    &a), PROXY_DNS_NXDOMAIN);
	assert_int_equal(nalerts, 3);
	assert_int_equal(ask(ps, "other.leak.test", &a), 0);
	assert_int_equal(nalerts, 3);
	proxy_scan_patterns_free(ps->patterns);
	freesession(ps);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_answer),
		cmocka_unit_test(test_many_names),
		cmocka_unit_test(test_recorded_once),
		cmocka_unit_test(test_placeholder_name),
	};

	return test_run_group(tests, NULL, NULL);
}
