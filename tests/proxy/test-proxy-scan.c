/*
 * The placeholder scanner: every form it promises (as is, hex in either
 * case, base64 in every alignment and both alphabets, percent-encoded),
 * in streams of any length cut anywhere, and WebSocket frames.
 */
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "lib/testlib.h"
#include "proxy/proxy-int.h"

struct scan_fixture {
	struct proxy_secret s[2];
	char *hosts[2];
	struct proxy_patterns *pp;
};

static int
scan_setup(void **state)
{
	struct scan_fixture *f = xcalloc(1, sizeof *f);

	f->hosts[0] = "api.example.com";
	f->s[0].name = "A";
	f->s[0].value = "sk-ant-api03-Real0Value1For2The3Scanner4Test5abc";
	f->s[0].placeholder = proxy_secret_placeholder(f->s[0].value);
	f->s[0].hosts = f->hosts;
	f->s[1].name = "B";
	/* Punctuation is kept: '/' and '+' reach base64 and escapes. */
	f->s[1].value = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLE+KEY";
	f->s[1].placeholder = proxy_secret_placeholder(f->s[1].value);
	f->s[1].hosts = f->hosts;
	f->pp = proxy_scan_patterns(f->s, 2);
	*state = f;
	return 0;
}

static int
scan_teardown(void **state)
{
	struct scan_fixture *f = *state;

	proxy_scan_patterns_free(f->pp);
	free((char *)f->s[0].placeholder);
	free((char *)f->s[1].placeholder);
	free(f);
	return 0;
}

/* Feeds DATA in pieces of STEP bytes (0: the sizes cycle 1, 2, 3, ...). */
static int
scan_pieces(const struct proxy_patterns *pp, const bool *want,
    const char *data, size_t len, size_t step)
{
	struct proxy_scan sc;
	size_t off = 0, n, k = 1;
	int found = -1;

	proxy_scan_init(&sc);
	proxy_scan_reset(&sc, pp, want);
	while (off < len) {
		n = step != 0 ? step : k++;
		if (n > len - off)
			n = len - off;
		found = proxy_scan_feed(&sc, data + off, n);
		off += n;
	}
	proxy_scan_free(&sc);
	return found;
}

/* DATA must show secret WHICH however it is cut. */
static void
scan_expect(struct scan_fixture *f, const char *data, int which)
{
	size_t len = strlen(data), step;

	if (proxy_scan_once(f->pp, NULL, data, len) != which)
		fail_msg("whole: %d, not %d, in '%s'", proxy_scan_once(f->pp,
		    NULL, data, len), which, data);
	for (step = 0; step <= 9; step++) {
		if (scan_pieces(f->pp, NULL, data, len, step) != which)
			fail_msg("in pieces of %zu: not %d in '%s'", step, which,
			    data);
	}
	/* Cut once anywhere. */
	for (step = 1; step < len; step++) {
		struct proxy_scan sc;
		int found;

		proxy_scan_init(&sc);
		proxy_scan_reset(&sc, f->pp, NULL);
		proxy_scan_feed(&sc, data, step);
		found = proxy_scan_feed(&sc, data + step, len - step);
		proxy_scan_free(&sc);
		if (found != which)
			fail_msg("cut at %zu: %d, not %d, in '%s'", step, found,
			    which, data);
	}
}

static char *
scan_hex(const char *s, bool upper)
{
	struct buf b;

	buf_init(&b);
	for (; *s != '\0'; s++)
		buf_printf(&b, upper ? "%02X" : "%02x", (unsigned char)*s);
	return buf_steal(&b);
}

/* PREFIX bytes, then S, then a byte, as standard (or URL-safe) base64 by OpenSSL. */
static char *
scan_b64(const char *prefix, const char *s, bool urlsafe)
{
	struct buf in;
	unsigned char *out;
	size_t i;
	int n;

	buf_init(&in);
	buf_adds(&in, prefix);
	buf_adds(&in, s);
	buf_addc(&in, 'Z');
	out = xmalloc(4 * in.len / 3 + 8);
	n = EVP_EncodeBlock(out, (unsigned char *)in.data, (int)in.len);
	for (i = 0; urlsafe && i < (size_t)n; i++)
		out[i] = out[i] == '+' ? '-' : out[i] == '/' ? '_' : out[i];
	buf_free(&in);
	return (char *)out;
}

/* Every byte as %XX, in upper or lower case. */
static char *
scan_escape_all(const char *s, bool upper)
{
	struct buf b;

	buf_init(&b);
	for (; *s != '\0'; s++)
		buf_printf(&b, upper ? "%%%02X" : "%%%02x", (unsigned char)*s);
	return buf_steal(&b);
}

/* Every other byte as %XX, and the base64 alphabet's '+' '/' '=' always. */
static char *
scan_escape_some(const char *s)
{
	struct buf b;
	size_t i;

	buf_init(&b);
	for (i = 0; s[i] != '\0'; i++) {
		if (i % 2 == 0 || strchr("+/=", s[i]) != NULL)
			buf_printf(&b, "%%%02X", (unsigned char)s[i]);
		else
			buf_addc(&b, s[i]);
	}
	return buf_steal(&b);
}

static void
scan_expect_in(struct scan_fixture *f, const char *form, int which)
{
	char *text = xprintf("{\"note\":\"x%%zz%%4\",\"v\":\"%s\",\"t\":1}",
	    form);

	scan_expect(f, text, which);
	free(text);
}

static void
test_forms(void **state)
{
	static const char *const prefixes[] = { "", "a", "ab", "abc", "\x01\xff" };
	struct scan_fixture *f = *state;
	size_t i, k;
	char *form, *esc;

	for (i = 0; i < 2; i++) {
		const char *ph = f->s[i].placeholder;

		scan_expect_in(f, ph, (int)i);
		form = scan_hex(ph, false);
		scan_expect_in(f, form, (int)i);
		free(form);
		form = scan_hex(ph, true);
		scan_expect_in(f, form, (int)i);
		free(form);
		for (k = 0; k < nitems(prefixes); k++) {
			form = scan_b64(prefixes[k], ph, false);
			scan_expect_in(f, form, (int)i);
			esc = scan_escape_some(form);
			scan_expect_in(f, esc, (int)i);
			free(esc);
			free(form);
			form = scan_b64(prefixes[k], ph, true);
			scan_expect_in(f, form, (int)i);
			free(form);
		}
		form = scan_escape_all(ph, true);
		scan_expect_in(f, form, (int)i);
		free(form);
		form = scan_escape_all(ph, false);
		scan_expect_in(f, form, (int)i);
		free(form);
		form = scan_escape_some(ph);
		scan_expect_in(f, form, (int)i);
		free(form);
	}
}

static void
test_near_misses(void **state)
{
	struct scan_fixture *f = *state;
	const char *ph = f->s[0].placeholder;
	bool want[2] = { false, true };
	char *p = xstrdup(ph), *hex;
	size_t len = strlen(p);

	/* One character changed, or one missing: nothing. */
	p[len / 2] = p[len / 2] == 'x' ? 'y' : 'x';
	scan_expect_in(f, p, -1);
	memmove(p + len / 2, p + len / 2 + 1, len - len / 2);
	scan_expect_in(f, p, -1);
	/* An escape that decodes to '/' splits it; a double escape is not decoded twice. */
	free(p);
	p = xprintf("%.10s%%2F%s", ph, ph + 10);
	scan_expect_in(f, p, -1);
	free(p);
	hex = scan_escape_all(ph, true);
	p = scan_escape_all(hex, true);
	scan_expect_in(f, p, -1);
	free(hex);
	free(p);
	/* Only the secrets asked about. */
	assert_int_equal(proxy_scan_once(f->pp, want, ph, strlen(ph)), -1);
	assert_int_equal(proxy_scan_once(f->pp, want, f->s[1].placeholder,
	    strlen(f->s[1].placeholder)), 1);
	assert_true(proxy_scan_npatterns(f->pp) >= 2 * 6);
}

/* Writes S's characters (not its NUL) at DST, inside a bigger buffer. */
static void
scan_put(char *dst, const char *s)
{
	while (*s != '\0')
		*dst++ = *s++;
}

/* A body of megabytes with the placeholder past the first one, cut across every read. */
static void
test_long_stream(void **state)
{
	struct scan_fixture *f = *state;
	const char *ph = f->s[1].placeholder;
	size_t len = 3 * 1024 * 1024 + 7, at = len - 1000, i;
	char *data = xmalloc(len), *esc;
	uint32_t r = 12345;

	for (i = 0; i < len; i++) {
		r = r * 1103515245 + 12345;
		data[i] = "abcdefghijklmnopqrstuvwxyz0123456789%+/=\n"[r % 41];
	}
	assert_int_equal(scan_pieces(f->pp, NULL, data, len, 16384), -1);
	scan_put(data + at, ph);
	assert_int_equal(scan_pieces(f->pp, NULL, data, len, 16384), 1);
	assert_int_equal(scan_pieces(f->pp, NULL, data, len, 4093), 1);
	/* Escaped, straddling a 64 KiB boundary. */
	esc = scan_escape_all(ph, false);
	scan_put(data + at, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
	scan_put(data + 65536 * 20 - 50, esc);
	assert_int_equal(scan_pieces(f->pp, NULL, data, len, 65536), 1);
	assert_int_equal(scan_pieces(f->pp, NULL, data, len, 1000), 1);
	free(esc);
	free(data);
}

/* A masked client frame: FIN and OPCODE, the payload, a 4-byte mask. */
static void
ws_frame(struct buf *b, int fin_op, const char *payload, size_t len,
    const unsigned char *mask)
{
	size_t i;

	buf_addc(b, (char)fin_op);
	if (len < 126)
		buf_addc(b, (char)(0x80 | len));
	else {
		buf_addc(b, (char)(0x80 | 126));
		buf_addc(b, (char)(len >> 8));
		buf_addc(b, (char)(len & 0xff));
	}
	buf_add(b, mask, 4);
	for (i = 0; i < len; i++)
		buf_addc(b, (char)(payload[i] ^ mask[i & 3]));
}

static int
ws_feed(struct scan_fixture *f, const struct buf *b, size_t step,
    const char **error)
{
	struct proxy_ws ws;
	size_t off = 0, n;
	int found = -1;

	proxy_ws_init(&ws, f->pp, NULL);
	while (off < b->len && found == -1) {
		n = b->len - off < step ? b->len - off : step;
		found = proxy_ws_feed(&ws, b->data + off, n);
		off += n;
	}
	if (error != NULL)
		*error = ws.error;
	proxy_ws_free(&ws);
	return found;
}

static void
test_websocket(void **state)
{
	static const unsigned char m1[4] = { 0x12, 0x34, 0x56, 0x78 };
	static const unsigned char m2[4] = { 0x9a, 0xbc, 0xde, 0xf0 };
	struct scan_fixture *f = *state;
	const char *ph = f->s[0].placeholder, *error;
	char big[300];
	struct buf b;
	size_t step;

	/* Split over a text frame and its continuation, a ping between. */
	buf_init(&b);
	ws_frame(&b, 0x01, "hello ", 6, m1);
	ws_frame(&b, 0x01, ph, 11, m2);
	ws_frame(&b, 0x89, "ping", 4, m1);
	ws_frame(&b, 0x80, ph + 11, strlen(ph) - 11, m1);
	for (step = 1; step <= 17; step++)
		assert_int_equal(ws_feed(f, &b, step, NULL), 0);
	/* Nothing there: nothing found. */
	buf_reset(&b);
	ws_frame(&b, 0x81, "just a message", 14, m1);
	memset(big, 'q', sizeof big);
	ws_frame(&b, 0x82, big, sizeof big, m2);
	ws_frame(&b, 0x88, "", 0, m1);
	assert_int_equal(ws_feed(f, &b, 7, NULL), -1);
	/* In a control frame. */
	buf_reset(&b);
	ws_frame(&b, 0x89, ph, strlen(ph), m2);
	assert_int_equal(ws_feed(f, &b, 5, NULL), 0);
	/* A compressed frame (RSV1) cannot be looked at. */
	buf_reset(&b);
	ws_frame(&b, 0xc1, "xx", 2, m1);
	assert_int_equal(ws_feed(f, &b, 3, &error), -2);
	assert_non_null(strstr(error, "RSV"));
	/* A control frame longer than 125 bytes is not a WebSocket frame. */
	buf_reset(&b);
	ws_frame(&b, 0x89, big, 200, m1);
	assert_int_equal(ws_feed(f, &b, 64, &error), -2);
	assert_non_null(strstr(error, "125"));
	/* Unmasked, with the frame's length byte as the placeholder's first character. */
	buf_reset(&b);
	buf_addc(&b, (char)0x81);
	buf_adds(&b, ph);
	assert_int_equal(ws_feed(f, &b, 4, NULL), 0);
	buf_free(&b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_forms),
		cmocka_unit_test(test_near_misses),
		cmocka_unit_test(test_long_stream),
		cmocka_unit_test(test_websocket),
	};

	return test_run_group(tests, scan_setup, scan_teardown);
}
