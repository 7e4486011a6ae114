/* A small streaming JSON writer for the stable --json output of every listing command. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

void
json_init(struct json *j, bool pretty)
{
	memset(j, 0, sizeof *j);
	buf_init(&j->out);
	buf_adds(&j->out, "");
	j->pretty = pretty;
}

void
json_free(struct json *j)
{
	buf_free(&j->out);
}

static void
json_indent(struct json *j)
{
	int i;

	if (!j->pretty)
		return;
	buf_addc(&j->out, '\n');
	for (i = 0; i < j->depth; i++)
		buf_adds(&j->out, "  ");
}

/* Emits the separator that goes before any value or key at this depth. */
static void
json_sep(struct json *j)
{
	if (j->after_key) {
		j->after_key = false;
		return;
	}
	if (j->depth > 0 && j->need_comma[j->depth])
		buf_addc(&j->out, ',');
	if (j->depth > 0)
		json_indent(j);
	j->need_comma[j->depth] = true;
}

static void
json_open(struct json *j, char c)
{
	json_sep(j);
	buf_addc(&j->out, c);
	if (j->depth + 1 >= (int)nitems(j->need_comma))
		fatalx("json: nesting too deep");
	j->depth++;
	j->need_comma[j->depth] = false;
}

static void
json_close(struct json *j, char c)
{
	bool had = j->need_comma[j->depth];

	j->depth--;
	if (had)
		json_indent(j);
	buf_addc(&j->out, c);
}

void
json_obj_begin(struct json *j)
{
	json_open(j, '{');
}

void
json_obj_end(struct json *j)
{
	json_close(j, '}');
}

void
json_arr_begin(struct json *j)
{
	json_open(j, '[');
}

void
json_arr_end(struct json *j)
{
	json_close(j, ']');
}

/* A code point as \uXXXX, as a surrogate pair beyond the BMP. */
static void
json_escape_cp(struct buf *b, uint32_t c)
{
	if (c >= 0x10000) {
		c -= 0x10000;
		buf_printf(b, "\\u%04x\\u%04x", 0xd800 + (c >> 10),
		    0xdc00 + (c & 0x3ff));
	} else
		buf_printf(b, "\\u%04x", c);
}

/*
 * JSON's own escaping, with the quoting helper's idea of what is unsafe:
 * controls, C1, bidi and invisible characters become \u escapes, so the
 * text is both valid JSON and safe on a terminal. A byte that is not
 * UTF-8 becomes U+FFFD: JSON has no way to say it.
 */
void
json_escape(struct buf *b, const char *s, size_t n)
{
	size_t i = 0, len;
	uint32_t c;

	buf_addc(b, '"');
	while (i < n) {
		for (len = 0; i + len < n && s[i + len] >= 0x20 &&
		    s[i + len] <= 0x7e && s[i + len] != '"' && s[i + len] != '\\';
		    len++)
			;
		if (len > 0) {
			buf_add(b, s + i, len);
			i += len;
			continue;
		}
		if ((len = quote_utf8_decode(s + i, n - i, &c)) == 0) {
			buf_adds(b, "\\ufffd");
			i++;
			continue;
		}
		if (c == '"' || c == '\\')
			buf_addc(b, '\\');
		if (c == '\n')
			buf_adds(b, "\\n");
		else if (c == '\r')
			buf_adds(b, "\\r");
		else if (c == '\t')
			buf_adds(b, "\\t");
		else if (quote_cp_unsafe(c))
			json_escape_cp(b, c);
		else
			buf_add(b, s + i, len);
		i += len;
	}
	buf_addc(b, '"');
}

void
json_key(struct json *j, const char *k)
{
	json_sep(j);
	json_escape(&j->out, k, strlen(k));
	buf_adds(&j->out, j->pretty ? ": " : ":");
	j->after_key = true;
}

void
json_strn(struct json *j, const char *s, size_t n)
{
	json_sep(j);
	json_escape(&j->out, s, n);
}

void
json_str(struct json *j, const char *s)
{
	if (s == NULL)
		json_null(j);
	else
		json_strn(j, s, strlen(s));
}

void
json_int(struct json *j, int64_t v)
{
	json_sep(j);
	buf_printf(&j->out, "%lld", (long long)v);
}

void
json_double(struct json *j, double v)
{
	json_sep(j);
	if (isfinite(v))
		buf_printf(&j->out, "%.17g", v);
	else
		buf_adds(&j->out, "null");
}

void
json_bool(struct json *j, bool v)
{
	json_sep(j);
	buf_adds(&j->out, v ? "true" : "false");
}

void
json_null(struct json *j)
{
	json_sep(j);
	buf_adds(&j->out, "null");
}

void
json_raw(struct json *j, const char *text)
{
	json_sep(j);
	buf_adds(&j->out, text);
}

void
json_kstr(struct json *j, const char *k, const char *v)
{
	json_key(j, k);
	json_str(j, v);
}

void
json_kint(struct json *j, const char *k, int64_t v)
{
	json_key(j, k);
	json_int(j, v);
}

void
json_kbool(struct json *j, const char *k, bool v)
{
	json_key(j, k);
	json_bool(j, v);
}

void
json_knull(struct json *j, const char *k)
{
	json_key(j, k);
	json_null(j);
}

void
json_print(struct json *j, FILE *fp)
{
	/* Every string in it went through json_escape. */
	fputs(j->out.data, fp); /* raw: escaped */
	fputc('\n', fp); /* raw: a newline */
}
