/* The man pages and the README against the command table, the config schema and the dashboard's keys. */
#include <stdlib.h>
#include <string.h>

#include "cmd/cli.h"
#include "core/core.h"
#include "lib/testlib.h"
#include "tui/tui.h"

static char *
docs_read(const char *rel)
{
	const char *src = getenv("AGENTMUX_SRC");
	char *path, *text;

	assert_non_null(src);
	path = xprintf("%s/%s", src, rel);
	if ((text = test_read_file(path)) == NULL)
		fail_msg("cannot read %s", path);
	free(path);
	return text;
}

/* The text from the line starting with START up to the next line starting with one of ENDS. */
static char *
docs_block(const char *text, const char *start, const char *const *ends)
{
	const char *p = text, *end, *q;
	size_t i, len = strlen(start);

	for (;;) {
		if (strncmp(p, start, len) == 0 && (p[len] == ' ' ||
		    p[len] == '\n'))
			break;
		if ((p = strchr(p, '\n')) == NULL)
			return NULL;
		p++;
	}
	end = p + strlen(p);
	for (q = strchr(p, '\n'); q != NULL; q = strchr(q + 1, '\n')) {
		for (i = 0; ends[i] != NULL; i++) {
			if (strncmp(q + 1, ends[i], strlen(ends[i])) == 0)
				break;
		}
		if (ends[i] != NULL) {
			end = q + 1;
			break;
		}
	}
	return xstrndup(p, (size_t)(end - p));
}

/* BLOCK, or a failure naming WHAT was not found (and an empty text). */
static char *
docs_need(char *block, const char *what)
{
	if (block != NULL)
		return block;
	fail_msg("%s: not found", what);
	return xstrdup("");
}

/* True if WORD is in TEXT with no letter, digit or '-' right after it. */
static bool
docs_has(const char *text, const char *word)
{
	const char *p = text;
	char c;

	while ((p = strstr(p, word)) != NULL) {
		c = p[strlen(word)];
		if (c != '-' && c != '_' && !(c >= 'a' && c <= 'z') &&
		    !(c >= 'A' && c <= 'Z') && !(c >= '0' && c <= '9'))
			return true;
		p++;
	}
	return false;
}

static void
docs_check_opts(const char *block, const struct cli_cmd *cmd,
    const char *name)
{
	const struct cli_opt *o;
	char *want;
	size_t i;

	for (i = 0; cmd->opts != NULL && cmd->opts[i].name != NULL; i++) {
		o = &cmd->opts[i];
		want = xprintf("Fl -%s", o->name);
		if (!docs_has(block, want))
			fail_msg("agentmux.1 does not document %s --%s", name,
			    o->name);
		free(want);
		if (o->short_name == 0)
			continue;
		want = xprintf("Fl %c", o->short_name);
		if (!docs_has(block, want))
			fail_msg("agentmux.1 does not document %s -%c", name,
			    o->short_name);
		free(want);
	}
}

static void
docs_check_cmd(const char *page, const struct cli_cmd *cmd, const char *name)
{
	static const char *const ends[] = { ".It Nm Cm ", ".Nm Cm ", ".Sh ",
		NULL };
	char *head, *block, *sub;
	size_t i;

	if (cmd->subs != NULL) {
		for (i = 0; cmd->subs[i].name != NULL; i++) {
			sub = xprintf("%s %s", name, cmd->subs[i].name);
			docs_check_cmd(page, &cmd->subs[i], sub);
			free(sub);
		}
		return;
	}
	head = xprintf(".Nm Cm %s", name);
	if ((block = docs_block(page, head, ends)) == NULL) {
		free(head);
		head = xprintf(".It Nm Cm %s", name);
		block = docs_block(page, head, ends);
	}
	block = docs_need(block, head);
	docs_check_opts(block, cmd, name);
	free(block);
	free(head);
}

/* Every command, subcommand and option of the table is in agentmux(1). */
static void
test_man_commands(void **state)
{
	static const char *const ends[] = { ".Sh COMMANDS", NULL };
	static const char *const sh[] = { ".Sh ", NULL };
	char *page = docs_read("share/man/agentmux.1"), *top, *cmds;
	const struct cli_cmd *v;
	size_t n, i;

	cmds = docs_need(docs_block(page, ".Sh COMMANDS", sh), "COMMANDS");
	v = cli_commands(&n);
	for (i = 0; i < n; i++)
		docs_check_cmd(cmds, &v[i], v[i].name);
	free(cmds);
	top = docs_need(docs_block(page, ".Sh DESCRIPTION", ends),
	    "DESCRIPTION");
	docs_check_opts(top, cli_top(), "agentmux");
	free(top);
	free(page);
}

/* Every key of the dashboard's prefix table is in agentmux(1)'s DASHBOARD. */
static void
test_man_keys(void **state)
{
	static const char *const ends[] = { ".Sh ", NULL };
	char *page = docs_read("share/man/agentmux.1"), *keys, *a, *b, *c;
	const struct tui_binding *v;
	size_t n, i;

	keys = docs_need(docs_block(page, ".Sh DASHBOARD", ends), "DASHBOARD");
	v = tui_keys_bindings(&n);
	for (i = 0; i < n; i++) {
		if (v[i].name == NULL)
			continue;
		a = xprintf(".It Ic %s\n", v[i].name);
		b = xprintf(".It Ic \\&%s\n", v[i].name);
		c = xprintf(".It Ic \\%s\n", v[i].name);
		if (strstr(keys, a) == NULL && strstr(keys, b) == NULL &&
		    strstr(keys, c) == NULL)
			fail_msg("agentmux.1's DASHBOARD does not list the key "
			    "'%s' (%s)", v[i].name, v[i].help);
		free(a);
		free(b);
		free(c);
	}
	free(keys);
	free(page);
}

/* Every section and key of the config schema is in agentmux.conf(5). */
static void
test_man_config(void **state)
{
	static const char *const ends[] = { ".Ss ", ".Sh ", NULL };
	char *page = docs_read("share/man/agentmux.conf.5"), *head, *block;
	const char *const *s, *const *k;
	char *want;

	for (s = config_sections(); *s != NULL; s++) {
		head = xprintf(".Ss Bq %s", *s);
		block = docs_need(docs_block(page, head, ends), head);
		for (k = config_known_keys(*s); *k != NULL; k++) {
			want = xprintf(".It Ic %s ", *k);
			if (strstr(block, want) == NULL)
				fail_msg("agentmux.conf.5 does not document "
				    "[%s] %s", *s, *k);
			free(want);
		}
		free(block);
		free(head);
	}
	free(page);
}

/* The line of LIST that starts with "    agentmux NAME"; caller frees. */
static char *
docs_readme_line(const char *list, const char *name)
{
	char *head = xprintf("    agentmux %s", name), *line;
	static const char *const ends[] = { "", NULL };

	line = docs_block(list, head, ends);
	free(head);
	return line;
}

/* True if WORD is in LINE after a space or '|' and before no letter. */
static bool
docs_has_word(const char *line, const char *word)
{
	const char *p = line;

	while ((p = strstr(p, word)) != NULL) {
		if (p > line && (p[-1] == ' ' || p[-1] == '|') &&
		    docs_has(p, word))
			return true;
		p++;
	}
	return false;
}

/* The README's command list names every command and subcommand, and only those. */
static void
test_readme_commands(void **state)
{
	static const char *const ends[] = { "## ", NULL };
	char *readme = docs_read("README.md"), *list, *line, *save = NULL, *w;
	const struct cli_cmd *v;
	size_t n, i, j;

	list = docs_need(docs_block(readme, "## Commands", ends),
	    "README.md's ## Commands");
	v = cli_commands(&n);
	for (i = 0; i < n; i++) {
		w = xprintf("README.md's line '    agentmux %s'", v[i].name);
		line = docs_need(docs_readme_line(list, v[i].name), w);
		free(w);
		for (j = 0; v[i].subs != NULL && v[i].subs[j].name != NULL;
		    j++) {
			if (!docs_has_word(line, v[i].subs[j].name))
				fail_msg("README.md's line for 'agentmux %s' "
				    "lacks '%s'", v[i].name, v[i].subs[j].name);
		}
		free(line);
	}
	for (line = strtok_r(list, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "    agentmux ", 13) != 0 || line[13] == '[' ||
		    line[13] == '-')
			continue;
		w = xstrndup(line + 13, strcspn(line + 13, " "));
		if (cli_find(NULL, w) == NULL)
			fail_msg("README.md lists 'agentmux %s', which is no "
			    "command", w);
		free(w);
	}
	free(list);
	free(readme);
}

static void
docs_check_help(const struct cli_cmd *cmd, const char *name)
{
	struct test_run r;
	char *words, *sp, *want;
	size_t i;

	for (i = 0; cmd->subs != NULL && cmd->subs[i].name != NULL; i++) {
		words = xprintf("%s %s", name, cmd->subs[i].name);
		docs_check_help(&cmd->subs[i], words);
		free(words);
	}
	words = xstrdup(name);
	if ((sp = strchr(words, ' ')) != NULL)
		*sp++ = '\0';
	test_amx(&r, words, sp != NULL ? sp : "--help", sp != NULL ? "--help" :
	    NULL, NULL);
	want = xprintf("usage: agentmux %s ", name);
	if (r.status != 0 || strstr(r.out, want) == NULL)
		fail_msg("'agentmux %s --help' exits %d with: %s%s", name,
		    r.status, r.out, r.err);
	free(want);
	free(words);
	test_run_free(&r);
}

/* Every command and subcommand answers --help with its usage. */
static void
test_help_everywhere(void **state)
{
	const struct cli_cmd *v;
	size_t n, i;

	v = cli_commands(&n);
	for (i = 0; i < n; i++)
		docs_check_help(&v[i], v[i].name);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_man_commands),
		cmocka_unit_test(test_man_keys),
		cmocka_unit_test(test_man_config),
		cmocka_unit_test(test_readme_commands),
		cmocka_unit_test(test_help_everywhere),
	};

	return test_run_group(tests, NULL, NULL);
}
