/* The one option parser: every command's options and arguments, as declared in its row of the table. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/core.h"

/* The state of one parse: what is being read, and where the words go. */
struct cli_parse {
	const struct cli_cmd *cmd;
	struct cli_args *args;
	int argc;
	char **argv;
	int i;
	bool help;
};

static size_t
cli_nopts(const struct cli_cmd *cmd)
{
	size_t n = 0;

	while (cmd->opts != NULL && cmd->opts[n].name != NULL)
		n++;
	return n;
}

static int cli_parse_error(struct cli_parse *, const char *, ...)
    __attribute__((format(printf, 2, 3)));

static int
cli_parse_error(struct cli_parse *p, const char *fmt, ...)
{
	va_list ap;
	char *msg;

	va_start(ap, fmt);
	xvasprintf(&msg, fmt, ap);
	va_end(ap);
	cli_usage_error(p->args->name, "%s", msg);
	free(msg);
	return -1;
}

static const struct cli_opt *
cli_opt_long(const struct cli_cmd *cmd, const char *name, size_t len)
{
	size_t i;

	for (i = 0; cmd->opts != NULL && cmd->opts[i].name != NULL; i++) {
		if (strlen(cmd->opts[i].name) == len &&
		    strncmp(cmd->opts[i].name, name, len) == 0)
			return &cmd->opts[i];
	}
	return NULL;
}

static const struct cli_opt *
cli_opt_short(const struct cli_cmd *cmd, char c)
{
	size_t i;

	for (i = 0; cmd->opts != NULL && cmd->opts[i].name != NULL; i++) {
		if (cmd->opts[i].short_name == c)
			return &cmd->opts[i];
	}
	return NULL;
}

static void
cli_parse_set(struct cli_parse *p, const struct cli_opt *o, const char *value)
{
	size_t k = (size_t)(o - p->cmd->opts);

	p->args->counts[k]++;
	if (value != NULL)
		strv_add(&p->args->values[k], value);
}

/* The value of O: INLINE (after '=' or the short letter), else the next word. */
static int
cli_parse_value(struct cli_parse *p, const struct cli_opt *o,
    const char *inline_value, const char *as_given)
{
	if (inline_value != NULL && *inline_value != '\0') {
		cli_parse_set(p, o, inline_value);
		return 0;
	}
	if (inline_value != NULL && as_given[1] == '-') {
		cli_parse_set(p, o, inline_value);   /* --host= is empty */
		return 0;
	}
	if (p->i + 1 >= p->argc)
		return cli_parse_error(p, "option '%s' needs a value",
		    as_given);
	cli_parse_set(p, o, p->argv[++p->i]);
	return 0;
}

static int
cli_parse_long(struct cli_parse *p, const char *word)
{
	const char *name = word + 2, *eq = strchr(name, '=');
	size_t len = eq != NULL ? (size_t)(eq - name) : strlen(name);
	const struct cli_opt *o;
	char *given;
	int rc;

	if (len == 4 && strncmp(name, "help", 4) == 0) {
		p->help = true;
		return 0;
	}
	if ((o = cli_opt_long(p->cmd, name, len)) == NULL) {
		given = xstrndup(word, len + 2);
		rc = cli_parse_error(p, "unknown option '%s'", given);
		free(given);
		return rc;
	}
	if (o->value == NULL) {
		if (eq != NULL)
			return cli_parse_error(p, "option '--%s' takes no "
			    "value", o->name);
		cli_parse_set(p, o, NULL);
		return 0;
	}
	given = xstrndup(word, len + 2);
	rc = cli_parse_value(p, o, eq != NULL ? eq + 1 : NULL, given);
	free(given);
	return rc;
}

/* A cluster of short options (-nr), the last of which may take a value (-Cdir). */
static int
cli_parse_short(struct cli_parse *p, const char *word)
{
	const struct cli_opt *o;
	char given[3] = { '-', 0, 0 };
	size_t k;

	for (k = 1; word[k] != '\0'; k++) {
		given[1] = word[k];
		if (word[k] == 'h') {
			p->help = true;
			continue;
		}
		if ((o = cli_opt_short(p->cmd, word[k])) == NULL)
			return cli_parse_error(p, "unknown option '%s'", given);
		if (o->value != NULL)
			return cli_parse_value(p, o, word[k + 1] != '\0' ?
			    word + k + 1 : NULL, given);
		cli_parse_set(p, o, NULL);
	}
	return 0;
}

static void
cli_parse_positional(struct cli_parse *p, char *word)
{
	p->args->argv[p->args->argc++] = word;
	p->args->argv[p->args->argc] = NULL;
}

/* Options anywhere (GNU style) unless the command is CLI_ORDERED; "--" ends them. */
static int
cli_parse_words(struct cli_parse *p)
{
	bool options = true;
	char *w;

	for (p->i = 1; p->i < p->argc; p->i++) {
		w = p->argv[p->i];
		if (!options || w[0] != '-' || w[1] == '\0') {
			cli_parse_positional(p, w);
			if (p->cmd->flags & CLI_ORDERED)
				options = false;
			continue;
		}
		if (strcmp(w, "--") == 0) {
			options = false;
			p->args->dashdash = p->args->argc;
			continue;
		}
		if ((w[1] == '-' ? cli_parse_long(p, w) :
		    cli_parse_short(p, w)) == -1)
			return -1;
	}
	return 0;
}

/* "say 'check', 'path' or 'keys'" for a command whose subcommand is missing. */
static char *
cli_parse_choices(const struct cli_cmd *cmd)
{
	struct buf b;
	size_t i, n = 0;

	while (cmd->subs[n].name != NULL)
		n++;
	buf_init(&b);
	for (i = 0; i < n; i++)
		buf_printf(&b, "%s'%s'", i == 0 ? "" : i + 1 == n ? " or " :
		    ", ", cmd->subs[i].name);
	return buf_steal(&b);
}

static int
cli_parse_sub(const struct cli_cmd *cmd, const char *name, int argc,
    char **argv, struct cli_args *args)
{
	const struct cli_cmd *sub;
	char *choices, *full;
	int rc;

	if (argc >= 2 && (sub = cli_find(cmd, argv[1])) != NULL) {
		full = xprintf("%s %s", name, sub->name);
		rc = cli_parse(sub, full, argc - 1, argv + 1, args);
		free(full);
		return rc;
	}
	if (argc >= 2 && (strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "-h") == 0)) {
		cli_print_help(stdout, cmd, name);
		return 1;
	}
	choices = cli_parse_choices(cmd);
	if (argc < 2)
		cli_usage_error(name, "say %s", choices);
	else
		cli_usage_error(name, "unknown subcommand '%s'; say %s",
		    argv[1], choices);
	free(choices);
	return -1;
}

/* Enough arguments, and not too many. */
static int
cli_parse_check(struct cli_parse *p)
{
	const struct cli_arg *a = p->cmd->args;
	int n = 0, need = 0;
	bool more = false;

	for (; a != NULL && a[n].name != NULL; n++) {
		if (!(a[n].flags & CLI_OPTIONAL))
			need = n + 1;
		more = (a[n].flags & CLI_REPEAT) != 0;
	}
	if (p->args->argc < need && a != NULL) {
		a += p->args->argc;
		if (a->kind == CLI_SESSION && (a->flags & CLI_REPEAT))
			return cli_parse_error(p, "which sessions? give "
			    "numbers or 'last'");
		if (a->kind == CLI_SESSION)
			return cli_parse_error(p, "which session? give a "
			    "number or 'last'");
		if (a->kind == CLI_CHOICE)
			return cli_parse_error(p, "say %s", a->name);
		return cli_parse_error(p, "%s is missing", a->name);
	}
	if (p->args->argc > n && !more)
		return cli_parse_error(p, "unexpected '%s'",
		    p->args->argv[n]);
	return 0;
}

int
cli_parse(const struct cli_cmd *cmd, const char *name, int argc, char **argv,
    struct cli_args *args)
{
	struct cli_parse p;
	size_t n, k;
	int rc;

	if (cmd->subs != NULL)
		return cli_parse_sub(cmd, name, argc, argv, args);
	memset(args, 0, sizeof *args);
	args->cmd = cmd;
	args->name = xstrdup(name);
	args->dashdash = -1;
	args->given_argc = argc;
	args->given_argv = argv;
	n = cli_nopts(cmd);
	args->values = xcalloc(n + 1, sizeof *args->values);
	args->counts = xcalloc(n + 1, sizeof *args->counts);
	for (k = 0; k < n; k++)
		strv_init(&args->values[k]);
	args->argv = xcalloc((size_t)argc + 1, sizeof *args->argv);
	memset(&p, 0, sizeof p);
	p.cmd = cmd;
	p.args = args;
	p.argc = argc;
	p.argv = argv;
	if ((rc = cli_parse_words(&p)) == 0 && p.help) {
		cli_print_help(stdout, cmd, name);
		cli_args_free(args);
		return 1;
	}
	if (rc == -1 || cli_parse_check(&p) == -1) {
		cli_args_free(args);
		return -1;
	}
	return 0;
}

void
cli_args_free(struct cli_args *args)
{
	size_t k, n;

	if (args->cmd == NULL)
		return;
	n = cli_nopts(args->cmd);
	for (k = 0; k < n; k++)
		strv_free(&args->values[k]);
	free(args->values);
	free(args->counts);
	free(args->argv);
	free(args->name);
	memset(args, 0, sizeof *args);
}

/* The index of option NAME; asking for an undeclared one is a bug. */
static size_t
cli_opt_index(const struct cli_args *args, const char *name)
{
	const struct cli_opt *o;

	if ((o = cli_opt_long(args->cmd, name, strlen(name))) == NULL)
		fatalx("%s has no option --%s", args->name, name);
	return (size_t)(o - args->cmd->opts);
}

bool
cli_has(const struct cli_args *args, const char *name)
{
	return args->counts[cli_opt_index(args, name)] > 0;
}

size_t
cli_count(const struct cli_args *args, const char *name)
{
	return args->counts[cli_opt_index(args, name)];
}

const char *
cli_get(const struct cli_args *args, const char *name)
{
	const struct strv *sv = &args->values[cli_opt_index(args, name)];

	return sv->n > 0 ? sv->v[sv->n - 1] : NULL;
}

char **
cli_values(const struct cli_args *args, const char *name)
{
	static char *none[] = { NULL };
	const struct strv *sv = &args->values[cli_opt_index(args, name)];

	return sv->v != NULL ? sv->v : none;
}

int
cli_run(struct cli_args *args)
{
	return args->cmd->fn(args);
}
