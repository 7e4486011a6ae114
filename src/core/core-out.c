/* Printing for people: every line a command writes to a terminal passes the quoting helper on its way out. */
#include <stdlib.h>
#include <string.h>

#include "core.h"

/*
 * The formatted text is written through quote_text_add: a control
 * character, C1, bidi or invisible character in it, from whatever
 * argument it came, is shown as an escape, never sent raw. Fields from a
 * jail are quoted (quote_keep) by the caller as well, so that a name
 * reads unambiguously; this is the net under them.
 */
/* Writes N bytes of S to FP through quote_text_add; the bytes written. */
static int
out_write(FILE *fp, const char *s, size_t n)
{
	struct buf b;
	int len;

	if (n == 0)
		return 0;
	buf_init(&b);
	quote_text_add(&b, s, n);
	fwrite(b.data, 1, b.len, fp); /* raw: quoted just above */
	len = (int)b.len;
	buf_free(&b);
	return len;
}

int
out_vprintf(FILE *fp, const char *fmt, va_list ap)
{
	char *s;
	int n;

	if ((n = xvasprintf(&s, fmt, ap)) > 0)
		n = out_write(fp, s, (size_t)n);
	free(s);
	return n;
}

int
out_printf(FILE *fp, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = out_vprintf(fp, fmt, ap);
	va_end(ap);
	return n;
}

void
out_puts(FILE *fp, const char *s)
{
	out_write(fp, s, strlen(s));
}

void
out_color(FILE *fp, const char *sgr)
{
	/* Only parameters: whatever it is handed, it can only set colours. */
	if (strspn(sgr, "0123456789;") != strlen(sgr))
		return;
	fprintf(fp, "\033[%sm", sgr); /* raw: digits and ';' only */
}

void
out_erase_line(FILE *fp)
{
	fputs("\r\033[K", fp); /* raw: a constant */
}
