/* agentmux config check | path | keys: find every problem in the config file before it bites. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "core/core.h"
#include "server/server.h"

/*
 * Whether a running server has the file as it is now (it prints which);
 * with no server running, nothing: there is nothing to tell.
 */
static void
cmd_config_server(const struct config *cf)
{
	char *hash = server_config_hash(cf->path), *cause = NULL;
	struct strv kv;

	strv_init(&kv);
	strv_add(&kv, "CMD=config-status");
	strv_addf(&kv, "HASH=%s", hash);
	if (server_client_command(NULL, NULL, kv.v, &cause) == -1)
		free(cause);
	strv_free(&kv);
	free(hash);
}

int
cmd_config_check(struct cli_args *args)
{
	struct config_problems ps = { NULL, 0 };
	const char *file = cli_get(args, "file");
	struct config *cf;
	size_t i;

	cf = config_load(file, &ps);
	for (i = 0; i < ps.n; i++) {
		if (ps.v[i].line > 0)
			out_printf(stderr, "%s:%d: %s\n", ps.v[i].file,
			    ps.v[i].line, ps.v[i].message);
		else
			out_printf(stderr, "%s: %s\n", ps.v[i].file,
			    ps.v[i].message);
	}
	if (cf == NULL) {
		out_printf(stderr, "%zu problem%s found\n", ps.n,
		    ps.n == 1 ? "" : "s");
		config_problems_free(&ps);
		return 2;
	}
	if (cf->builtin_error != NULL)
		out_printf(stderr, "agentmux: %s\n", cf->builtin_error);
	if (cf->path == NULL)
		out_printf(stdout, "no config file (%s); using the defaults\n",
		    file != NULL ? file : "see 'agentmux config path'");
	else
		out_printf(stdout,
		    "%s: ok (%zu rules, %zu agent profiles, %zu secrets)\n",
		    cf->path, cf->rules.n, cf->nagents, cf->nsecrets);
	if (file == NULL)
		cmd_config_server(cf);
	config_free(cf);
	config_problems_free(&ps);
	return 0;
}

int
cmd_config_path(struct cli_args *args)
{
	const char *file = cli_get(args, "file");
	char *path;

	path = file != NULL ? xstrdup(file) : path_config_file();
	out_printf(stdout, "%s\n", path);
	free(path);
	return 0;
}

int
cmd_config_keys(struct cli_args *args)
{
	const char *const *sections = config_sections(), *const *k;
	const char *only = args->argc > 0 ? args->argv[0] : NULL;
	size_t i;

	if (only != NULL && config_known_keys(only) == NULL)
		return cli_usage_error("config keys", "there is no section "
		    "'%s'; 'agentmux config keys' lists them all", only);
	for (i = 0; sections[i] != NULL; i++) {
		if (only != NULL && strcmp(sections[i], only) != 0)
			continue;
		for (k = config_known_keys(sections[i]); *k != NULL; k++)
			out_printf(stdout, "%s %s\n", sections[i], *k);
	}
	return 0;
}
