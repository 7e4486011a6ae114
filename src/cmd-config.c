/* agentmux config check | path: find every problem in the config file before it bites. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "core/core.h"

static int
cmd_config_check(const char *file)
{
	struct config_problems ps = { NULL, 0 };
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
	if (cf->path == NULL)
		out_printf(stdout, "no config file (%s); using the defaults\n",
		    file != NULL ? file : "see 'agentmux config path'");
	else
		out_printf(stdout,
		    "%s: ok (%zu rules, %zu agent profiles, %zu secrets)\n",
		    cf->path, cf->rules.n, cf->nagents, cf->nsecrets);
	config_free(cf);
	config_problems_free(&ps);
	return 0;
}

int
cmd_config(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "file", required_argument, NULL, 'f' },
		{ NULL, 0, NULL, 0 }
	};
	const char *file = NULL;
	char *path;
	int c;

	while ((c = getopt_long(argc, argv, ":f:", opts, NULL)) != -1) {
		if (c != 'f')
			return cli_bad_option("config", argv, c);
		file = optarg;
	}
	if (optind >= argc)
		return cli_usage_error("config", "say 'check' or 'path'");
	if (argc - optind > 1)
		return cli_usage_error("config", "unexpected '%s'",
		    argv[optind + 1]);
	if (strcmp(argv[optind], "check") == 0)
		return cmd_config_check(file);
	if (strcmp(argv[optind], "path") == 0) {
		path = file != NULL ? xstrdup(file) : path_config_file();
		out_printf(stdout, "%s\n", path);
		free(path);
		return 0;
	}
	return cli_usage_error("config", "unknown subcommand '%s'",
	    argv[optind]);
}
