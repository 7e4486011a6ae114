/* NULL-terminated string vectors for argv, envp and lists read from the config. */
#include <stdlib.h>
#include <string.h>

#include "core.h"

void
strv_init(struct strv *sv)
{
	sv->v = xcalloc(1, sizeof *sv->v);
	sv->n = 0;
	sv->cap = 1;
	sv->sorted = false;
}

void
strv_free(struct strv *sv)
{
	size_t i;

	if (sv->v == NULL)
		return;
	for (i = 0; i < sv->n; i++)
		free(sv->v[i]);
	free(sv->v);
	sv->v = NULL;
	sv->n = sv->cap = 0;
	sv->sorted = false;
}

void
strv_take(struct strv *sv, char *s)
{
	if (sv->v == NULL)
		strv_init(sv);
	if (sv->n + 2 > sv->cap) {
		sv->cap = sv->cap * 2 + 2;
		sv->v = xreallocarray(sv->v, sv->cap, sizeof *sv->v);
	}
	sv->v[sv->n++] = s;
	sv->v[sv->n] = NULL;
	sv->sorted = false;
}

void
strv_add(struct strv *sv, const char *s)
{
	strv_take(sv, xstrdup(s));
}

void
strv_addf(struct strv *sv, const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	xvasprintf(&s, fmt, ap);
	va_end(ap);
	strv_take(sv, s);
}

void
strv_setenv(struct strv *env, const char *name, const char *value)
{
	size_t i, n = strlen(name);

	for (i = 0; i < env->n; i++) {
		if (strncmp(env->v[i], name, n) == 0 && env->v[i][n] == '=') {
			free(env->v[i]);
			env->v[i] = xprintf("%s=%s", name, value);
			return;
		}
	}
	strv_addf(env, "%s=%s", name, value);
}

bool
strv_contains(const struct strv *sv, const char *s)
{
	size_t i;

	for (i = 0; i < sv->n; i++) {
		if (strcmp(sv->v[i], s) == 0)
			return true;
	}
	return false;
}

int
strv_split_words(struct strv *sv, const char *s, char **cause)
{
	struct buf w;
	char quote = 0;
	bool inword = false;

	buf_init(&w);
	if (sv->v == NULL)
		strv_init(sv);
	for (; *s != '\0'; s++) {
		if (quote != 0) {
			if (*s == quote)
				quote = 0;
			else if (*s == '\\' && quote == '"' && s[1] != '\0')
				buf_addc(&w, *++s);
			else
				buf_addc(&w, *s);
			continue;
		}
		if (*s == ' ' || *s == '\t' || *s == '\n') {
			if (inword)
				strv_take(sv, buf_steal(&w));
			inword = false;
			continue;
		}
		inword = true;
		if (*s == '\'' || *s == '"')
			quote = *s;
		else if (*s == '\\' && s[1] != '\0')
			buf_addc(&w, *++s);
		else
			buf_addc(&w, *s);
	}
	if (quote != 0) {
		buf_free(&w);
		*cause = xprintf("unterminated %c quote", quote);
		return -1;
	}
	if (inword)
		strv_take(sv, buf_steal(&w));
	buf_free(&w);
	return 0;
}

static bool
strv_needs_quote(const char *s)
{
	if (*s == '\0')
		return true;
	for (; *s != '\0'; s++) {
		if (strchr(" \t\n'\"\\$`!*?[]{}()<>|&;#~", *s) != NULL)
			return true;
	}
	return false;
}

/* S as one word for a shell: as it is if nothing in it splits, else in '...'. */
static void
strv_add_word(struct buf *b, const char *s)
{
	const char *p;

	if (!strv_needs_quote(s)) {
		buf_adds(b, s);
		return;
	}
	buf_addc(b, '\'');
	for (p = s; *p != '\0'; p++) {
		if (*p == '\'')
			buf_adds(b, "'\\''");
		else
			buf_addc(b, *p);
	}
	buf_addc(b, '\'');
}

/* S as bash's $'...': printable ASCII as it is, every other byte as \ooo. */
static void
strv_add_ansi_c(struct buf *b, const char *s)
{
	const unsigned char *p;

	buf_adds(b, "$'");
	for (p = (const unsigned char *)s; *p != '\0'; p++) {
		if (*p == '\'' || *p == '\\')
			buf_printf(b, "\\%c", *p);
		else if (*p >= 0x20 && *p < 0x7f)
			buf_addc(b, (char)*p);
		else
			buf_printf(b, "\\%03o", *p);
	}
	buf_addc(b, '\'');
}

/* S as strv_add_word has it, or as $'...' if it holds what is never printed raw. */
static void
strv_add_paste(struct buf *b, const char *s)
{
	if (quote_needed(s, strlen(s)))
		strv_add_ansi_c(b, s);
	else
		strv_add_word(b, s);
}

/* The words of V joined with spaces, each added by ADD. */
static char *
strv_join(char *const *v, void (*add)(struct buf *, const char *))
{
	struct buf b;
	size_t i;

	buf_init(&b);
	buf_adds(&b, "");
	for (i = 0; v != NULL && v[i] != NULL; i++) {
		if (i != 0)
			buf_addc(&b, ' ');
		add(&b, v[i]);
	}
	return buf_steal(&b);
}

char *
strv_join_shell(char *const *v)
{
	return strv_join(v, strv_add_word);
}

char *
strv_join_paste(char *const *v)
{
	return strv_join(v, strv_add_paste);
}
