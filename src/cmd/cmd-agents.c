/* agentmux agents: the agent profiles, where each agent is installed, what it may reach. */
#include <stdlib.h>
#include <string.h>

#include "session/session.h"
#include "cli.h"
#include "core/core.h"

static int
cmd_agents_cmp(const void *a, const void *b)
{
	const struct config_agent *const *x = a, *const *y = b;

	return strcmp((*x)->name, (*y)->name);
}

/* "api.anthropic.com:443, *.github.com GET" from a profile's rules. */
static char *
cmd_agents_rules(const struct config_agent *a)
{
	struct buf b;
	size_t i;

	buf_init(&b);
	buf_adds(&b, "");
	for (i = 0; i < a->rules.n; i++) {
		bool allow = strcmp(a->rules.v[i].verb, "allow") == 0;

		buf_printf(&b, "%s%s%s%s", i == 0 ? "" : ", ", allow ? "" :
		    a->rules.v[i].verb, allow ? "" : " ", a->rules.v[i].text);
	}
	return buf_steal(&b);
}

static char *
cmd_agents_join(const struct strv *sv)
{
	struct buf b;
	size_t i;

	buf_init(&b);
	buf_adds(&b, "");
	for (i = 0; i < sv->n; i++)
		buf_printf(&b, "%s%s", i == 0 ? "" : ", ", sv->v[i]);
	return buf_steal(&b);
}

static void
cmd_agents_json_one(struct json *j, const struct config *cf,
    const struct config_agent *a)
{
	struct agent_install in;
	char *cause = NULL;
	size_t i, k;
	bool found;

	found = agent_resolve(a, NULL, getenv("PATH"), &in, &cause) == 0;
	json_obj_begin(j);
	json_kstr(j, "name", a->name);
	json_kstr(j, "description", a->description);
	json_kstr(j, "command", a->command != NULL && *a->command != '\0' ?
	    a->command : agent_user_shell(getenv("SHELL")));
	json_kbool(j, "found", found);
	json_kstr(j, "path", found ? in.real : NULL);
	json_kstr(j, "problem", found ? NULL : cause);
	json_key(j, "rules");
	json_arr_begin(j);
	for (i = 0; i < a->rules.n; i++) {
		char *r = xprintf("%s %s", a->rules.v[i].verb, a->rules.v[i].text);

		json_str(j, r);
		free(r);
	}
	json_arr_end(j);
	json_key(j, "secrets");
	json_arr_begin(j);
	for (i = 0; i < a->secrets.n; i++) {
		const struct config_secret *s = config_secret(cf, a->secrets.v[i]);

		json_obj_begin(j);
		json_kstr(j, "name", a->secrets.v[i]);
		json_kstr(j, "env", s != NULL ? s->env : NULL);
		json_key(j, "hosts");
		json_arr_begin(j);
		for (k = 0; s != NULL && k < s->hosts.n; k++)
			json_str(j, s->hosts.v[k]);
		json_arr_end(j);
		json_kbool(j, "available", s != NULL && s->from_env != NULL ?
		    getenv(s->from_env) != NULL : s != NULL);
		json_obj_end(j);
	}
	json_arr_end(j);
	json_key(j, "config_dirs");
	json_arr_begin(j);
	for (i = 0; i < a->config_dirs.n; i++)
		json_str(j, a->config_dirs.v[i]);
	json_arr_end(j);
	json_key(j, "model_hosts");
	json_arr_begin(j);
	for (i = 0; i < a->model_hosts.n; i++)
		json_str(j, a->model_hosts.v[i]);
	json_arr_end(j);
	json_kint(j, "wall_clock", a->wall_clock);
	json_kbool(j, "builtin", a->builtin);
	json_kstr(j, "origin", a->origin);
	json_obj_end(j);
	free(cause);
	if (found)
		agent_install_free(&in);
}

static void
cmd_agents_table(const struct config *cf, const struct config_agent **v,
    size_t n)
{
	static const char *const hdr[] = { "NAME", "COMMAND", "INSTALLED",
		"ALLOWS", "SECRETS", "CONFIG DIRS" };
	struct agent_install in;
	struct cli_table t;
	const char *row[6];
	char *rules, *dirs, *cause, *secrets;
	struct strv sv;
	size_t i, k;

	cli_table_init(&t, 6, hdr);
	for (i = 0; i < n; i++) {
		cause = NULL;
		strv_init(&sv);
		for (k = 0; k < v[i]->secrets.n; k++) {
			const struct config_secret *s = config_secret(cf,
			    v[i]->secrets.v[k]);

			if (s != NULL)
				strv_addf(&sv, "%s%s", s->env, s->from_env !=
				    NULL && getenv(s->from_env) != NULL ?
				    " (set)" : "");
		}
		rules = cmd_agents_rules(v[i]);
		dirs = cmd_agents_join(&v[i]->config_dirs);
		secrets = cmd_agents_join(&sv);
		row[0] = v[i]->name;
		row[1] = v[i]->command != NULL && *v[i]->command != '\0' ?
		    v[i]->command : agent_user_shell(getenv("SHELL"));
		row[3] = rules;
		row[4] = secrets;
		row[5] = dirs;
		if (agent_resolve(v[i], NULL, getenv("PATH"), &in, &cause) == 0) {
			row[2] = in.real;
			cli_table_add(&t, row);
			agent_install_free(&in);
		} else {
			row[2] = "not found";
			cli_table_add(&t, row);
			free(cause);
		}
		free(rules);
		free(dirs);
		free(secrets);
		strv_free(&sv);
	}
	cli_table_print(&t, stdout);
	cli_table_free(&t);
}

int
cmd_agents(struct cli_args *args)
{
	const struct config_agent **v;
	struct config *cf;
	struct json j;
	bool json = cli_has(args, "json");
	size_t i;

	if ((cf = cli_load_config()) == NULL)
		return 1;
	if (cf->builtin_error != NULL)
		cli_error("%s", cf->builtin_error);
	v = xcalloc(cf->nagents, sizeof *v);
	for (i = 0; i < cf->nagents; i++)
		v[i] = &cf->agents[i];
	qsort(v, cf->nagents, sizeof *v, cmd_agents_cmp);
	if (json) {
		json_init(&j, true);
		json_arr_begin(&j);
		for (i = 0; i < cf->nagents; i++)
			cmd_agents_json_one(&j, cf, v[i]);
		json_arr_end(&j);
		json_print(&j, stdout);
		json_free(&j);
	} else
		cmd_agents_table(cf, v, cf->nagents);
	free(v);
	config_free(cf);
	return 0;
}
