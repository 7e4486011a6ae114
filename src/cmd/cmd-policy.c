/* agentmux policy suggest: learn the rules that allow exactly what sessions did, then lock them in. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "core/core.h"
#include "store/store.h"

/* True if SECTION of CF already has the rule VERB TEXT. */
static bool
cmd_policy_has_rule(const struct config *cf, const char *agent,
    const char *verb, const char *text)
{
	const struct config_rules *rs = &cf->rules;
	const struct config_agent *a;
	size_t i;

	if (agent != NULL) {
		if ((a = config_agent(cf, agent)) == NULL)
			return false;
		rs = &a->rules;
	}
	for (i = 0; i < rs->n; i++) {
		if (strcmp(rs->v[i].verb, verb) == 0 &&
		    strcmp(rs->v[i].text, text) == 0)
			return true;
	}
	return false;
}

static void
cmd_policy_print(const struct store_suggestion *sg, const char *section,
    const int64_t *ids, size_t nids)
{
	size_t i;

	out_printf(stdout, "; suggested by agentmux from session%s",
	    nids == 1 ? "" : "s");
	for (i = 0; i < nids; i++)
		out_printf(stdout, "%s %lld", i == 0 ? "" : ",",
		    (long long)ids[i]);
	out_printf(stdout, ": %zu allowed request%s\n", sg->nrequests,
	    sg->nrequests == 1 ? "" : "s");
	out_printf(stdout, "[%s]\n", section);
	for (i = 0; i < sg->nrules; i++)
		out_printf(stdout, "%s = %s\n", sg->rules[i].verb,
		    sg->rules[i].text);
	if (sg->nrules == 0)
		out_printf(stdout, "; nothing was allowed in these sessions\n");
	if (sg->denied.n > 0)
		out_printf(stdout,
		    "; denied, and not allowed by the rules above:\n");
	for (i = 0; i < sg->denied.n; i++)
		out_printf(stdout, ";   %s\n", sg->denied.v[i]);
}

/* Splits TEXT into lines (pointers into a copy the caller frees as *COPY). */
static char **
cmd_policy_lines(const char *text, size_t *n, char **copy)
{
	char **v = NULL, *p, *nl;

	*copy = xstrdup(text);
	*n = 0;
	for (p = *copy; *p != '\0'; p = nl + 1) {
		v = xreallocarray(v, *n + 1, sizeof *v);
		v[(*n)++] = p;
		if ((nl = strchr(p, '\n')) == NULL)
			break;
		*nl = '\0';
	}
	return v;
}

/* Prints the change from OLD to NEW (NEW only inserts lines) as a unified diff. */
static void
cmd_policy_diff(const char *path, const char *old, const char *new)
{
	char *oc, *nc, **o, **n;
	size_t no, nn, i = 0, j = 0, k, start;
	bool *added;

	o = cmd_policy_lines(old, &no, &oc);
	n = cmd_policy_lines(new, &nn, &nc);
	added = xcalloc(nn + 1, sizeof *added);
	for (j = 0; j < nn; j++) {
		if (i < no && strcmp(o[i], n[j]) == 0)
			i++;
		else
			added[j] = true;
	}
	out_printf(stdout, "--- %s\n+++ %s\n", path, path);
	for (j = 0; j < nn; j++) {
		if (!added[j])
			continue;
		start = j >= 3 ? j - 3 : 0;
		k = j;
		while (k < nn && (added[k] || (k + 1 < nn && added[k + 1]) ||
		    (k + 2 < nn && added[k + 2])))
			k++;
		k = k + 3 < nn ? k + 3 : nn;
		out_printf(stdout, "@@ -%zu +%zu @@\n", start + 1, start + 1);
		for (i = start; i < k; i++)
			out_printf(stdout, "%c%s\n", added[i] ? '+' : ' ',
			    n[i]);
		j = k;
	}
	free(added);
	free(o);
	free(n);
	free(oc);
	free(nc);
}

static int
cmd_policy_write(const struct config *cf, const struct store_suggestion *sg,
    const char *agent, const char *section)
{
	char *path = cf->path != NULL ? xstrdup(cf->path) : path_config_file();
	char *text = NULL, *next, *cause = NULL;
	size_t i, added = 0;
	mode_t mode;
	int rc = 1;

	if (config_read_text(path, &text, &mode, &cause) == -1)
		goto out;
	char *orig = xstrdup(text);
	for (i = 0; i < sg->nrules; i++) {
		if (cmd_policy_has_rule(cf, agent, sg->rules[i].verb,
		    sg->rules[i].text))
			continue;
		next = config_text_append(text, section, sg->rules[i].verb,
		    sg->rules[i].text);
		free(text);
		text = next;
		added++;
	}
	if (added == 0) {
		out_printf(stdout,
		    "nothing to add: %s already has every suggested rule\n",
		    path);
		free(orig);
		rc = 0;
		goto out;
	}
	cmd_policy_diff(path, orig, text);
	free(orig);
	if (config_write_text(path, text, mode, &cause) == -1)
		goto out;
	out_printf(stdout, "added %zu rule%s to [%s] in %s\n", added,
	    added == 1 ? "" : "s", section, path);
	rc = 0;
out:
	if (cause != NULL) {
		cli_error("%s", cause);
		free(cause);
	}
	free(text);
	free(path);
	return rc;
}

int
cmd_policy_suggest(struct cli_args *args)
{
	struct store_suggestion sg;
	const char *agent = cli_get(args, "agent");
	struct config *cf;
	struct store *st;
	int64_t *ids;
	bool write = cli_has(args, "write");
	char *section;
	size_t n, i;
	int rc = 1;

	if ((cf = cli_load_config()) == NULL)
		return 1;
	if (agent != NULL && config_agent(cf, agent) == NULL) {
		config_free(cf);
		return cli_usage_error("policy suggest", "there is no agent profile "
		    "'%s' (see 'agentmux agents')", agent);
	}
	if ((st = cli_open_store()) == NULL) {
		config_free(cf);
		return 1;
	}
	n = (size_t)args->argc;
	ids = xcalloc(n, sizeof *ids);
	for (i = 0; i < n; i++) {
		if (cli_resolve_session(st, args->argv[i], &ids[i]) == -1)
			goto out;
	}
	section = agent != NULL ? xprintf("agent %s", agent) : xstrdup("policy");
	store_suggest(st, ids, n, &sg);
	if (write)
		rc = cmd_policy_write(cf, &sg, agent, section);
	else {
		cmd_policy_print(&sg, section, ids, n);
		rc = 0;
	}
	store_suggestion_free(&sg);
	free(section);
out:
	free(ids);
	store_close(st);
	config_free(cf);
	return rc;
}
