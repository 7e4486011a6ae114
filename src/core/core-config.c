/* The INI config file: read with libinih, every problem reported as FILE:LINE, never silently defaulted. */
#include <sys/stat.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <ini.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core.h"

/* The state of one file being parsed. */
struct config_parse {
	struct config *cf;
	struct config_problems *problems;
	const char *file;
	FILE *fp;
	int line;
	bool builtin;
	char *cur_section;      /* last section seen, as written */
	bool section_bad;       /* unknown section: its keys are not checked again */
	bool header_bad;        /* a broken header: skip keys until the next one */
	int section_line;       /* line of the last section header */
	char *line_buf;
	size_t line_cap;
};

static const char *const config_keys_policy[] = { "on_unknown",
	"prompt_timeout", "allow", "deny", "tunnel", NULL };
static const char *const config_keys_agent[] = { "description", "command",
	"env", "allow", "deny", "tunnel", "config_dir", "secret", "model_host",
	"wall_clock", "config_persist", "memory", "pids", "protect", "resume",
	"setup", "worktree", "needs_you_screen", "needs_you_file", NULL };
static const char *const config_keys_secret[] = { "env", "from_env", "file",
	"command", "host", "header", "scheme", NULL };
static const char *const config_keys_limits[] = { "memory", "pids",
	"file_size", "open_files", "tmp_size", "cpu", "disk_write",
	"disk_reserve", NULL };
static const char *const config_keys_ui[] = { "prefix", "default_agent",
	"color", "scrollback", "escape_time", "clipboard", "idle_after", "notify",
	"worktree", NULL };
static const char *const config_keys_proxy[] = { "upstream_ca", "connect_to",
	"connect_timeout", "idle_timeout", "client_timeout", "max_connections",
	"record_bodies", "record_headers", "record_budget", "transparent",
	NULL };
static const char *const config_keys_snapshots[] = { "interval", "exclude",
	"max_size", NULL };
static const char *const config_keys_jail[] = { "protect", "history",
	"scan_limit", "watch_ignored", NULL };

/*
 * Project files the user's own tools run (direnv, VS Code, MCP clients,
 * Claude Code's hooks, Dev Containers, JetBrains run configurations, git's
 * filters, hooks kept in the tree, pre-commit, lefthook, asdf and mise,
 * cargo and rustup, yarn, npm, Maven, Zed, Helix): read-only in the jail where they exist at the top,
 * and flagged at the end wherever they are new or changed.
 */
static const char *const config_default_protect[] = { ".envrc",
	".vscode/tasks.json", ".vscode/settings.json", ".vscode/launch.json",
	".mcp.json", ".claude/settings*.json", ".devcontainer",
	".idea/runConfigurations", ".idea/workspace.xml",
	".git/info/attributes", ".gitattributes", ".githooks", ".husky",
	".pre-commit-config.yaml", ".tool-versions", ".mise.toml", "mise.toml",
	"*.code-workspace", ".cargo/config.toml", ".cargo/config",
	".yarnrc.yml", ".yarnrc", ".npmrc", ".mvn/jvm.config",
	".mvn/maven.config", ".gemini/settings.json", ".qwen/settings.json",
	"opencode.json", ".opencode", ".crush.json", ".cursor/mcp.json",
	".vscode/mcp.json", ".claude/hooks", ".devcontainer.json", ".run",
	"lefthook.yml", ".lefthook.yml", "lefthook-local.yml", ".zed",
	".helix/languages.toml", ".codex/config.toml", ".cursor/hooks.json",
	".kiro/settings/mcp.json", ".roo/mcp.json", "rust-toolchain.toml",
	"rust-toolchain", NULL };

static const char *const config_default_excludes[] = { "node_modules/",
	".venv/", "venv/", "__pycache__/", "target/", "build/", "dist/",
	".cache/", ".gradle/", ".next/", ".tox/", "*.o", "*.pyc", NULL };

static int (*config_rule_validator)(const char *, const char *, char **);

static const char *const config_section_names[] = { "policy", "agent",
	"secret", "limits", "ui", "proxy", "snapshots", "jail", NULL };

const char *const *
config_sections(void)
{
	return config_section_names;
}

const char *const *
config_known_keys(const char *section)
{
	if (strcmp(section, "policy") == 0)
		return config_keys_policy;
	if (strcmp(section, "agent") == 0)
		return config_keys_agent;
	if (strcmp(section, "secret") == 0)
		return config_keys_secret;
	if (strcmp(section, "limits") == 0)
		return config_keys_limits;
	if (strcmp(section, "ui") == 0)
		return config_keys_ui;
	if (strcmp(section, "proxy") == 0)
		return config_keys_proxy;
	if (strcmp(section, "snapshots") == 0)
		return config_keys_snapshots;
	if (strcmp(section, "jail") == 0)
		return config_keys_jail;
	return NULL;
}

void
config_set_rule_validator(int (*fn)(const char *, const char *, char **))
{
	config_rule_validator = fn;
}

static void
config_problem(struct config_parse *cp, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
config_problem(struct config_parse *cp, const char *fmt, ...)
{
	struct config_problems *ps = cp->problems;
	struct config_problem *p;
	va_list ap;
	size_t i;

	for (i = 0; i < ps->n; i++) {
		if (ps->v[i].line == cp->line && cp->line != 0 &&
		    strcmp(ps->v[i].file, cp->file) == 0)
			return; /* one problem per line is enough */
	}
	ps->v = xreallocarray(ps->v, ps->n + 1, sizeof *ps->v);
	p = &ps->v[ps->n++];
	p->file = xstrdup(cp->file);
	p->line = cp->line;
	va_start(ap, fmt);
	xvasprintf(&p->message, fmt, ap);
	va_end(ap);
}

void
config_problems_free(struct config_problems *ps)
{
	size_t i;

	for (i = 0; i < ps->n; i++) {
		free(ps->v[i].file);
		free(ps->v[i].message);
	}
	free(ps->v);
	ps->v = NULL;
	ps->n = 0;
}

static void
config_rules_add(struct config_rules *rs, const char *verb, const char *text,
    const char *origin)
{
	struct config_rule *r;

	rs->v = xreallocarray(rs->v, rs->n + 1, sizeof *rs->v);
	r = &rs->v[rs->n++];
	r->verb = xstrdup(verb);
	r->text = xstrdup(text);
	r->origin = xstrdup(origin);
}

static void
config_rules_free(struct config_rules *rs)
{
	size_t i;

	for (i = 0; i < rs->n; i++) {
		free(rs->v[i].verb);
		free(rs->v[i].text);
		free(rs->v[i].origin);
	}
	free(rs->v);
	rs->v = NULL;
	rs->n = 0;
}

/* Suggests the nearest known key, or lists them all. */
static void
config_unknown_key(struct config_parse *cp, const char *section,
    const char *const *keys, const char *name)
{
	const char *best = NULL;
	size_t d, bestd = (size_t)-1, i;
	struct buf all;

	for (i = 0; keys[i] != NULL; i++) {
		d = util_edit_distance(name, keys[i]);
		if (d < bestd) {
			bestd = d;
			best = keys[i];
		}
	}
	if (best != NULL && bestd <= 3 && bestd < strlen(name)) {
		config_problem(cp, "unknown key '%s' in [%s]; did you mean '%s'?",
		    name, section, best);
		return;
	}
	buf_init(&all);
	for (i = 0; keys[i] != NULL; i++)
		buf_printf(&all, "%s%s", i == 0 ? "" : ", ", keys[i]);
	config_problem(cp, "unknown key '%s' in [%s]; known keys: %s", name,
	    section, all.data);
	buf_free(&all);
}

static bool
config_get_duration(struct config_parse *cp, const char *name,
    const char *value, int64_t *out)
{
	int64_t v = util_parse_duration(value);

	if (v < 0) {
		config_problem(cp, "%s: '%s' is not a duration (e.g. 30, 30s, "
		    "5m, 2h, 7d)", name, value);
		return false;
	}
	*out = v;
	return true;
}

static bool
config_get_size(struct config_parse *cp, const char *name, const char *value,
    int64_t *out)
{
	int64_t v = util_parse_size(value);

	if (v < 0) {
		config_problem(cp, "%s: '%s' is not a size (e.g. 512M, 4G)",
		    name, value);
		return false;
	}
	*out = v;
	return true;
}

/* A size (512M) or a share of the filesystem (5%). */
static void
config_get_reserve(struct config_parse *cp, const char *name,
    const char *value, struct config_limits *l)
{
	size_t n = strlen(value);
	long long pct;
	char *num, *cause = NULL;

	if (n == 0 || value[n - 1] != '%') {
		if (config_get_size(cp, name, value, &l->disk_reserve))
			l->disk_reserve_pct = 0;
		return;
	}
	num = xstrndup(value, n - 1);
	if (util_parse_int(num, 0, 99, &pct, &cause) == -1) {
		config_problem(cp, "%s: '%s' is not a share of the disk from 0%% "
		    "to 99%%, nor a size (e.g. 1G, 5%%)", name, value);
		free(cause);
	} else {
		l->disk_reserve_pct = (int)pct;
		l->disk_reserve = 0;
	}
	free(num);
}

static void
config_get_size_min(struct config_parse *cp, const char *name,
    const char *value, int64_t min, int64_t *out)
{
	char size[16];
	int64_t v;

	if (!config_get_size(cp, name, value, &v))
		return;
	if (v < min) {
		config_problem(cp, "%s: %s is too small; give at least %s", name,
		    value, util_fmt_size(size, sizeof size, min));
		return;
	}
	*out = v;
}

/* A yes/no value into *OUT; anything else is a problem of the file's. */
static void
config_get_yes_no(struct config_parse *cp, const char *name,
    const char *value, bool *out)
{
	if (strcmp(value, "yes") == 0 || strcmp(value, "no") == 0)
		*out = strcmp(value, "yes") == 0;
	else
		config_problem(cp, "%s must be yes or no, not '%s'", name, value);
}

static bool
config_get_count(struct config_parse *cp, const char *name, const char *value,
    long long min, long long max, int64_t *out)
{
	long long v;
	char *cause = NULL;

	if (util_parse_int(value, min, max, &v, &cause) == -1) {
		config_problem(cp, "%s: %s", name, cause);
		free(cause);
		return false;
	}
	*out = v;
	return true;
}

static char *
config_origin(struct config_parse *cp)
{
	return xprintf("%s:%d", cp->file, cp->line);
}

static void
config_add_rule(struct config_parse *cp, struct config_rules *rs,
    const char *verb, const char *value)
{
	char *cause = NULL, *origin;

	if (*value == '\0') {
		config_problem(cp, "%s: empty rule; write '%s = HOST[:PORT] "
		    "[METHOD] [PATH]'", verb, verb);
		return;
	}
	if (config_rule_validator != NULL &&
	    config_rule_validator(verb, value, &cause) == -1) {
		config_problem(cp, "%s = %s: %s", verb, value, cause);
		free(cause);
		return;
	}
	origin = config_origin(cp);
	config_rules_add(rs, verb, value, origin);
	free(origin);
}

static void
config_policy_key(struct config_parse *cp, const char *name, const char *value)
{
	struct config *cf = cp->cf;

	if (strcmp(name, "on_unknown") == 0) {
		if (strcmp(value, "ask") == 0)
			cf->on_unknown = CONFIG_ASK;
		else if (strcmp(value, "deny") == 0)
			cf->on_unknown = CONFIG_DENY;
		else {
			config_problem(cp, "on_unknown must be 'ask' or 'deny', "
			    "not '%s'", value);
			return;
		}
		cf->on_unknown_set = true;
	} else if (strcmp(name, "prompt_timeout") == 0)
		config_get_duration(cp, name, value, &cf->prompt_timeout);
	else if (strcmp(name, "allow") == 0 || strcmp(name, "deny") == 0 ||
	    strcmp(name, "tunnel") == 0)
		config_add_rule(cp, &cf->rules, name, value);
	else
		config_unknown_key(cp, "policy", config_keys_policy, name);
}

static struct config_agent *
config_find_agent(struct config *cf, const char *name)
{
	size_t i;

	for (i = 0; i < cf->nagents; i++) {
		if (strcmp(cf->agents[i].name, name) == 0)
			return &cf->agents[i];
	}
	return NULL;
}

static struct config_agent *
config_get_agent(struct config_parse *cp, const char *name)
{
	struct config *cf = cp->cf;
	struct config_agent *a;

	if ((a = config_find_agent(cf, name)) != NULL) {
		if (a->builtin && !cp->builtin) {
			/* A user section overrides a built-in profile. */
			a->builtin = false;
			free(a->origin);
			a->origin = xstrdup(cp->file);
		}
		return a;
	}
	cf->agents = xreallocarray(cf->agents, cf->nagents + 1, sizeof *a);
	a = &cf->agents[cf->nagents++];
	memset(a, 0, sizeof *a);
	a->name = xstrdup(name);
	strv_init(&a->env);
	strv_init(&a->config_dirs);
	strv_init(&a->secrets);
	strv_init(&a->model_hosts);
	strv_init(&a->protect);
	a->builtin = cp->builtin;
	a->origin = xstrdup(cp->file);
	a->line = cp->section_line;
	return a;
}

/* A protect or watch_ignored pattern (KEY): "none", or a path relative to the project without "..". */
static bool
config_path_ok(struct config_parse *cp, const char *key, const char *value)
{
	if (*value == '\0' || *value == '/' || strcmp(value, "..") == 0 ||
	    strncmp(value, "../", 3) == 0 || strstr(value, "/../") != NULL ||
	    (strlen(value) >= 3 && strcmp(value + strlen(value) - 3, "/..") ==
	    0)) {
		config_problem(cp, "%s: '%s' must be a path relative to the "
		    "project (e.g. %s), or none", key, value,
		    strcmp(key, "protect") == 0 ? ".envrc or .vscode/*.json" :
		    "target/debug or tools/*/bin");
		return false;
	}
	return true;
}

static void
config_agent_screen_free(struct config_agent *a)
{
	if (a->needs_you_re != NULL)
		regfree(a->needs_you_re);
	free(a->needs_you_re);
	a->needs_you_re = NULL;
	free(a->needs_you_screen);
	a->needs_you_screen = NULL;
}

/*
 * needs_you_screen: an extended regular expression, compiled once here so a
 * bad one is told with its line and never reaches a session.
 */
static void
config_agent_screen(struct config_parse *cp, struct config_agent *a,
    const char *value)
{
	regex_t *re;
	char why[128];
	int rc;

	if (*value == '\0') {
		config_problem(cp, "needs_you_screen: give a regular expression "
		    "the agent's screen matches while it waits for you");
		return;
	}
	re = xmalloc(sizeof *re);
	if ((rc = regcomp(re, value, REG_EXTENDED | REG_NOSUB)) != 0) {
		regerror(rc, re, why, sizeof why);
		free(re);
		config_problem(cp, "needs_you_screen: '%s' is not an extended "
		    "regular expression: %s", value, why);
		return;
	}
	config_agent_screen_free(a);
	a->needs_you_screen = xstrdup(value);
	a->needs_you_re = re;
}

/*
 * needs_you_file: "~/REL" in the jail's HOME or REL in the project, with no
 * "..", "." or empty part, so that it can only name a file inside them.
 */
static void
config_agent_file(struct config_parse *cp, struct config_agent *a,
    const char *value)
{
	const char *rel = value, *p, *e;
	size_t n;

	if (strncmp(rel, "~/", 2) == 0)
		rel += 2;
	for (p = rel; *rel != '\0' && *rel != '/'; p = e + 1) {
		e = strchr(p, '/');
		n = e != NULL ? (size_t)(e - p) : strlen(p);
		if (n == 0 || (n == 1 && p[0] == '.') ||
		    (n == 2 && p[0] == '.' && p[1] == '.'))
			break;
		if (e == NULL) {
			free(a->needs_you_file);
			a->needs_you_file = xstrdup(value);
			return;
		}
	}
	config_problem(cp, "needs_you_file: '%s' must name a file in the "
	    "jail's home (~/.agent/waiting) or in the project "
	    "(.agent/waiting), without '..' or '.' parts", value);
}

static void
config_agent_key(struct config_parse *cp, const char *aname, const char *name,
    const char *value)
{
	struct config_agent *a = config_get_agent(cp, aname);
	struct strv words;
	char *cause = NULL;

	if (strcmp(name, "description") == 0) {
		free(a->description);
		a->description = xstrdup(value);
	} else if (strcmp(name, "command") == 0) {
		strv_init(&words);
		if (strv_split_words(&words, value, &cause) == -1) {
			config_problem(cp, "command: %s", cause);
			free(cause);
		} else {
			free(a->command);
			a->command = xstrdup(value);
		}
		strv_free(&words);
	} else if (strcmp(name, "resume") == 0) {
		strv_init(&words);
		if (strv_split_words(&words, value, &cause) == -1) {
			config_problem(cp, "resume: %s", cause);
			free(cause);
		} else if (words.n == 0)
			config_problem(cp, "resume: give the command line that "
			    "continues the agent's last conversation (e.g. "
			    "claude --continue)");
		else {
			free(a->resume);
			a->resume = xstrdup(value);
		}
		strv_free(&words);
	} else if (strcmp(name, "env") == 0) {
		const char *eq = strchr(value, '=');

		if (eq == NULL || eq == value)
			config_problem(cp, "env: write 'env = NAME=VALUE', not "
			    "'%s'", value);
		else
			strv_add(&a->env, value);
	} else if (strcmp(name, "allow") == 0 || strcmp(name, "deny") == 0 ||
	    strcmp(name, "tunnel") == 0)
		config_add_rule(cp, &a->rules, name, value);
	else if (strcmp(name, "config_dir") == 0) {
		if (value[0] != '/' && !(value[0] == '~' && value[1] == '/'))
			config_problem(cp, "config_dir: '%s' must be absolute or "
			    "start with ~/", value);
		else
			strv_add(&a->config_dirs, value);
	} else if (strcmp(name, "secret") == 0)
		strv_add(&a->secrets, value);
	else if (strcmp(name, "model_host") == 0)
		strv_add(&a->model_hosts, value);
	else if (strcmp(name, "wall_clock") == 0)
		config_get_duration(cp, name, value, &a->wall_clock);
	else if (strcmp(name, "config_persist") == 0) {
		if (strcmp(value, "review") == 0)
			a->persist = CONFIG_PERSIST_REVIEW;
		else if (strcmp(value, "always") == 0)
			a->persist = CONFIG_PERSIST_ALWAYS;
		else if (strcmp(value, "never") == 0)
			a->persist = CONFIG_PERSIST_NEVER;
		else {
			config_problem(cp, "config_persist must be review, always "
			    "or never, not '%s'", value);
			return;
		}
		a->persist_set = true;
	} else if (strcmp(name, "memory") == 0)
		config_get_size(cp, name, value, &a->memory);
	else if (strcmp(name, "pids") == 0)
		config_get_count(cp, name, value, 8, 1000000, &a->pids);
	else if (strcmp(name, "protect") == 0) {
		if (config_path_ok(cp, "protect", value))
			strv_add(&a->protect, value);
	} else if (strcmp(name, "setup") == 0) {
		free(a->setup);
		a->setup = xstrdup(value);
	} else if (strcmp(name, "worktree") == 0)
		config_get_yes_no(cp, name, value, &a->worktree);
	else if (strcmp(name, "needs_you_screen") == 0)
		config_agent_screen(cp, a, value);
	else if (strcmp(name, "needs_you_file") == 0)
		config_agent_file(cp, a, value);
	else
		config_unknown_key(cp, "agent", config_keys_agent, name);
}

static struct config_secret *
config_get_secret(struct config_parse *cp, const char *name)
{
	struct config *cf = cp->cf;
	struct config_secret *s;
	size_t i;

	for (i = 0; i < cf->nsecrets; i++) {
		if (strcmp(cf->secrets[i].name, name) == 0)
			return &cf->secrets[i];
	}
	cf->secrets = xreallocarray(cf->secrets, cf->nsecrets + 1, sizeof *s);
	s = &cf->secrets[cf->nsecrets++];
	memset(s, 0, sizeof *s);
	s->name = xstrdup(name);
	strv_init(&s->hosts);
	s->origin = xstrdup(cp->file);
	s->line = cp->section_line;
	return s;
}

static bool
config_valid_env_name(const char *s)
{
	if (!isalpha((unsigned char)*s) && *s != '_')
		return false;
	for (; *s != '\0'; s++) {
		if (!isalnum((unsigned char)*s) && *s != '_')
			return false;
	}
	return true;
}

static void
config_set_str(char **field, const char *value)
{
	free(*field);
	*field = xstrdup(value);
}

static void
config_secret_key(struct config_parse *cp, const char *sname, const char *name,
    const char *value)
{
	struct config_secret *s = config_get_secret(cp, sname);
	struct strv words;
	char *cause = NULL;
	size_t i;

	if (strcmp(name, "env") == 0 || strcmp(name, "from_env") == 0) {
		if (!config_valid_env_name(value)) {
			config_problem(cp, "%s: '%s' is not a variable name",
			    name, value);
			return;
		}
		config_set_str(*name == 'e' ? &s->env : &s->from_env, value);
	} else if (strcmp(name, "file") == 0)
		config_set_str(&s->file, value);
	else if (strcmp(name, "command") == 0)
		config_set_str(&s->command, value);
	else if (strcmp(name, "host") == 0) {
		strv_init(&words);
		if (strv_split_words(&words, value, &cause) == -1) {
			config_problem(cp, "host: %s", cause);
			free(cause);
		}
		for (i = 0; i < words.n; i++)
			strv_add(&s->hosts, words.v[i]);
		strv_free(&words);
	} else if (strcmp(name, "header") == 0)
		config_set_str(&s->header, value);
	else if (strcmp(name, "scheme") == 0) {
		if (strcasecmp(value, "bearer") != 0 &&
		    strcasecmp(value, "raw") != 0) {
			config_problem(cp, "scheme must be 'bearer' or 'raw', "
			    "not '%s'", value);
			return;
		}
		config_set_str(&s->scheme, value);
	} else
		config_unknown_key(cp, "secret", config_keys_secret, name);
}

static void
config_limits_key(struct config_parse *cp, const char *name, const char *value)
{
	struct config_limits *l = &cp->cf->limits;

	if (strcmp(name, "memory") == 0)
		config_get_size(cp, name, value, &l->memory);
	else if (strcmp(name, "pids") == 0)
		config_get_count(cp, name, value, 8, 1000000, &l->pids);
	else if (strcmp(name, "file_size") == 0)
		config_get_size(cp, name, value, &l->file_size);
	else if (strcmp(name, "open_files") == 0)
		config_get_count(cp, name, value, 64, 1048576, &l->open_files);
	else if (strcmp(name, "tmp_size") == 0)
		config_get_size(cp, name, value, &l->tmp_size);
	else if (strcmp(name, "cpu") == 0)
		config_get_duration(cp, name, value, &l->cpu_seconds);
	else if (strcmp(name, "disk_write") == 0)
		config_get_size(cp, name, value, &l->disk_write);
	else if (strcmp(name, "disk_reserve") == 0)
		config_get_reserve(cp, name, value, l);
	else
		config_unknown_key(cp, "limits", config_keys_limits, name);
}

/* [ui] notify = bell | osc | command ARGV...: the command is words, never a shell line. */
static void
config_get_notify(struct config_parse *cp, const char *value,
    struct config_ui *ui)
{
	struct strv words;
	char *cause = NULL;
	size_t i;

	if (strcmp(value, "bell") == 0 || strcmp(value, "osc") == 0) {
		ui->notify = value[0] == 'b' ? CONFIG_NOTIFY_BELL :
		    CONFIG_NOTIFY_OSC;
		return;
	}
	strv_init(&words);
	if (strv_split_words(&words, value, &cause) == -1) {
		config_problem(cp, "notify: %s", cause);
		free(cause);
	} else if (words.n < 2 || strcmp(words.v[0], "command") != 0)
		config_problem(cp, "notify must be bell, osc or command "
		    "followed by a program and its arguments (e.g. command "
		    "notify-send agentmux), not '%s'", value);
	else {
		strv_free(&ui->notify_argv);
		strv_init(&ui->notify_argv);
		for (i = 1; i < words.n; i++)
			strv_add(&ui->notify_argv, words.v[i]);
		ui->notify = CONFIG_NOTIFY_COMMAND;
	}
	strv_free(&words);
}

static void
config_ui_key(struct config_parse *cp, const char *name, const char *value)
{
	struct config_ui *ui = &cp->cf->ui;
	int key;

	if (strcmp(name, "prefix") == 0) {
		if ((key = config_parse_key(value)) == -1) {
			config_problem(cp, "prefix: '%s' is not a key; write "
			    "C-a, C-b, ... C-z, C-] or C-\\", value);
			return;
		}
		config_set_str(&ui->prefix, value);
		ui->prefix_key = key;
	} else if (strcmp(name, "default_agent") == 0)
		config_set_str(&ui->default_agent, value);
	else if (strcmp(name, "color") == 0) {
		if (strcmp(value, "never") == 0)
			ui->color = false;
		else if (strcmp(value, "auto") != 0 &&
		    strcmp(value, "always") != 0)
			config_problem(cp, "color must be auto, always or never, "
			    "not '%s'", value);
	} else if (strcmp(name, "scrollback") == 0)
		config_get_count(cp, name, value, 100, 10000000, &ui->scrollback);
	else if (strcmp(name, "escape_time") == 0)
		config_get_count(cp, name, value, 0, 10000, &ui->escape_time);
	else if (strcmp(name, "idle_after") == 0)
		config_get_count(cp, name, value, 100, 600000, &ui->idle_after);
	else if (strcmp(name, "notify") == 0)
		config_get_notify(cp, value, ui);
	else if (strcmp(name, "clipboard") == 0) {
		if (strcmp(value, "yes") == 0 || strcmp(value, "no") == 0)
			ui->clipboard = strcmp(value, "yes") == 0;
		else
			config_problem(cp, "clipboard must be yes or no, not '%s'",
			    value);
	} else if (strcmp(name, "worktree") == 0)
		config_get_yes_no(cp, name, value, &ui->worktree);
	else
		config_unknown_key(cp, "ui", config_keys_ui, name);
}

/* Checks HOST:PORT:ADDR:PORT2, where HOST and ADDR may be [bracketed]. */
static bool
config_valid_connect_to(const char *v)
{
	int part;
	const char *p = v;

	for (part = 0; part < 4; part++) {
		const char *start = p;

		if (part % 2 == 0 && *p == '[') {
			if ((p = strchr(p, ']')) == NULL)
				return false;
			p++;
		} else if (part % 2 == 0) {
			p += strcspn(p, ":");
		} else {
			while (isdigit((unsigned char)*p))
				p++;
			/* strtol saturates where atoi would overflow. */
			if (p == start || strtol(start, NULL, 10) <= 0 ||
			    strtol(start, NULL, 10) > 65535)
				return false;
		}
		if (part < 3 && *p++ != ':')
			return false;
	}
	return *p == '\0';
}

static void
config_proxy_key(struct config_parse *cp, const char *name, const char *value)
{
	struct config_proxy *px = &cp->cf->proxy;
	char *path;

	if (strcmp(name, "upstream_ca") == 0) {
		path = path_expand_home(value);
		if (access(path, R_OK) == -1)
			config_problem(cp, "upstream_ca: cannot read %s: %s", path,
			    strerror(errno));
		else
			strv_add(&px->upstream_ca, path);
		free(path);
	} else if (strcmp(name, "connect_to") == 0) {
		if (!config_valid_connect_to(value))
			config_problem(cp, "connect_to: write HOST:PORT:ADDR:PORT "
			    "(e.g. api.example.com:443:127.0.0.1:8443), not '%s'",
			    value);
		else
			strv_add(&px->connect_to, value);
	} else if (strcmp(name, "connect_timeout") == 0)
		config_get_duration(cp, name, value, &px->connect_timeout);
	else if (strcmp(name, "idle_timeout") == 0)
		config_get_duration(cp, name, value, &px->idle_timeout);
	else if (strcmp(name, "client_timeout") == 0)
		config_get_duration(cp, name, value, &px->client_timeout);
	else if (strcmp(name, "max_connections") == 0)
		config_get_count(cp, name, value, 1, 100000, &px->max_connections);
	else if (strcmp(name, "record_bodies") == 0) {
		if (strcmp(value, "off") == 0 || strcmp(value, "no") == 0)
			px->max_body_record = 0;
		else
			config_get_size(cp, name, value, &px->max_body_record);
	} else if (strcmp(name, "record_headers") == 0)
		config_get_size_min(cp, name, value, 1024, &px->record_headers);
	else if (strcmp(name, "record_budget") == 0)
		config_get_size_min(cp, name, value, 1024 * 1024,
		    &px->record_budget);
	else if (strcmp(name, "transparent") == 0) {
		if (strcmp(value, "yes") == 0 || strcmp(value, "no") == 0)
			px->transparent = strcmp(value, "yes") == 0;
		else
			config_problem(cp, "transparent: write yes or no, not "
			    "'%s'", value);
	} else
		config_unknown_key(cp, "proxy", config_keys_proxy, name);
}

static void
config_snapshots_key(struct config_parse *cp, const char *name,
    const char *value)
{
	struct config_snapshots *sn = &cp->cf->snapshots;

	if (strcmp(name, "interval") == 0)
		config_get_duration(cp, name, value, &sn->interval);
	else if (strcmp(name, "exclude") == 0)
		strv_add(&sn->excludes, value);
	else if (strcmp(name, "max_size") == 0) {
		if (strcmp(value, "off") == 0 || strcmp(value, "none") == 0)
			sn->max_size = 0;
		else
			config_get_size(cp, name, value, &sn->max_size);
	} else
		config_unknown_key(cp, "snapshots", config_keys_snapshots, name);
}

/* [jail] watch_ignored: one more dir of programs to fingerprint; none: no more. */
static void
config_jail_watch(struct config_parse *cp, const char *value)
{
	struct config_jail *j = &cp->cf->jail;

	if (!config_path_ok(cp, "watch_ignored", value))
		return;
	if (strcmp(value, "none") == 0) {
		strv_free(&j->watch_ignored);
		strv_init(&j->watch_ignored);
	} else if (!strv_contains(&j->watch_ignored, value))
		strv_add(&j->watch_ignored, value);
}

static void
config_jail_key(struct config_parse *cp, const char *name, const char *value)
{
	struct config_jail *j = &cp->cf->jail;

	if (strcmp(name, "history") == 0) {
		if (strcmp(value, "on") == 0)
			j->history = true;
		else if (strcmp(value, "off") == 0)
			j->history = false;
		else
			config_problem(cp, "history must be on or off, not '%s'",
			    value);
		return;
	}
	if (strcmp(name, "scan_limit") == 0) {
		config_get_count(cp, name, value, 1, 1000000000,
		    &j->scan_limit);
		return;
	}
	if (strcmp(name, "watch_ignored") == 0) {
		config_jail_watch(cp, value);
		return;
	}
	if (strcmp(name, "protect") != 0) {
		config_unknown_key(cp, "jail", config_keys_jail, name);
		return;
	}
	if (!config_path_ok(cp, "protect", value))
		return;
	if (strcmp(value, "none") == 0) {
		strv_free(&j->protect);
		strv_init(&j->protect);
	} else if (!strv_contains(&j->protect, value))
		strv_add(&j->protect, value);
}

const char *const *
config_protect_defaults(void)
{
	return config_default_protect;
}

void
config_protect(const struct config *cf, const struct config_agent *a,
    struct strv *out)
{
	size_t i;

	strv_init(out);
	for (i = 0; i < cf->jail.protect.n; i++)
		strv_add(out, cf->jail.protect.v[i]);
	for (i = 0; a != NULL && i < a->protect.n; i++) {
		if (strcmp(a->protect.v[i], "none") == 0) {
			strv_free(out);
			strv_init(out);
		} else if (!strv_contains(out, a->protect.v[i]))
			strv_add(out, a->protect.v[i]);
	}
}

/* Splits "agent claude" into kind and name; returns false if malformed. */
static bool
config_split_section(const char *section, char *kind, size_t kindlen,
    const char **name)
{
	size_t n = strcspn(section, " \t");

	if (n >= kindlen)
		return false;
	memcpy(kind, section, n);
	kind[n] = '\0';
	*name = section + n + strspn(section + n, " \t");
	return true;
}

static bool
config_valid_name(const char *name)
{
	if (*name == '\0')
		return false;
	for (; *name != '\0'; name++) {
		if (!isalnum((unsigned char)*name) && strchr("-_.", *name) == NULL)
			return false;
	}
	return true;
}

static void
config_section_problem(struct config_parse *cp, const char *section)
{
	char kind[32];
	const char *name;

	cp->section_bad = true;
	if (config_split_section(section, kind, sizeof kind, &name) &&
	    (strcmp(kind, "agent") == 0 || strcmp(kind, "secret") == 0)) {
		config_problem(cp, "[%s] needs a name of letters, digits, '-', "
		    "'_' or '.' (e.g. [%s example])", section, kind);
		return;
	}
	config_problem(cp, "unknown section [%s]; known sections: [policy], "
	    "[agent NAME], [secret NAME], [limits], [ui], [proxy], [snapshots], "
	    "[jail]",
	    section);
}

static int
config_handler(void *arg, const char *section, const char *name,
    const char *value)
{
	struct config_parse *cp = arg;
	char kind[32];
	const char *sname;

	if (cp->cur_section == NULL || strcmp(cp->cur_section, section) != 0) {
		free(cp->cur_section);
		cp->cur_section = xstrdup(section);
		cp->section_bad = false;
	}
	if (cp->section_bad || cp->header_bad)
		return 1;
	if (*section == '\0') {
		config_problem(cp, "'%s' is outside any section; put it under "
		    "[policy], [agent NAME], ...", name);
		return 1;
	}
	if (!config_split_section(section, kind, sizeof kind, &sname)) {
		config_section_problem(cp, section);
		return 1;
	}
	if ((strcmp(kind, "agent") == 0 || strcmp(kind, "secret") == 0) &&
	    !config_valid_name(sname)) {
		config_section_problem(cp, section);
		return 1;
	}
	if (*sname != '\0' && strcmp(kind, "agent") != 0 &&
	    strcmp(kind, "secret") != 0) {
		config_section_problem(cp, section);
		return 1;
	}
	if (strcmp(kind, "policy") == 0)
		config_policy_key(cp, name, value);
	else if (strcmp(kind, "agent") == 0)
		config_agent_key(cp, sname, name, value);
	else if (strcmp(kind, "secret") == 0)
		config_secret_key(cp, sname, name, value);
	else if (strcmp(kind, "limits") == 0)
		config_limits_key(cp, name, value);
	else if (strcmp(kind, "ui") == 0)
		config_ui_key(cp, name, value);
	else if (strcmp(kind, "proxy") == 0)
		config_proxy_key(cp, name, value);
	else if (strcmp(kind, "snapshots") == 0)
		config_snapshots_key(cp, name, value);
	else if (strcmp(kind, "jail") == 0)
		config_jail_key(cp, name, value);
	else
		config_section_problem(cp, section);
	return 1;
}

/* Checks the shape of one raw line so that every syntax error is reported. */
static void
config_check_line(struct config_parse *cp, const char *line)
{
	const char *p = line;

	if (cp->line == 1 && strncmp(p, "\xEF\xBB\xBF", 3) == 0)
		p += 3;
	if (*p == ' ' || *p == '\t')
		return; /* a continuation line; inih judges it */
	if (*p == '\0' || *p == '\n' || *p == '\r' || *p == ';' || *p == '#')
		return;
	if (*p == '[') {
		cp->section_line = cp->line;
		cp->header_bad = strchr(p, ']') == NULL;
		if (cp->header_bad)
			config_problem(cp, "section header without ']'");
		return;
	}
	if (strchr(p, '=') == NULL && strchr(p, ':') == NULL)
		config_problem(cp, "expected 'key = value', '[section]' or a "
		    "comment");
}

/* The line reader inih calls: counts lines and checks their shape. */
static char *
config_reader(char *str, int num, void *arg)
{
	struct config_parse *cp = arg;
	ssize_t n;

	n = getline(&cp->line_buf, &cp->line_cap, cp->fp);
	if (n == -1)
		return NULL;
	cp->line++;
	if (n >= num - 1) {
		config_problem(cp, "line is too long (%zd characters; at most %d)",
		    n, num - 2);
		memcpy(str, "\n", 2);
		return str;
	}
	config_check_line(cp, cp->line_buf);
	memcpy(str, cp->line_buf, (size_t)n + 1);
	return str;
}

static int
config_parse_file(struct config *cf, const char *file, bool builtin,
    struct config_problems *problems)
{
	struct config_parse cp;
	int rc;

	memset(&cp, 0, sizeof cp);
	cp.cf = cf;
	cp.problems = problems;
	cp.file = file;
	cp.builtin = builtin;
	if ((cp.fp = fopen(file, "re")) == NULL)
		return -1;
	rc = ini_parse_stream(config_reader, &cp, config_handler, &cp);
	if (rc > 0) {
		cp.line = rc;
		config_problem(&cp, "syntax error");
	}
	fclose(cp.fp);
	free(cp.line_buf);
	free(cp.cur_section);
	return 0;
}

/* Has DIR/agents, or is DIR kept from us (EACCES): it is there, unread. */
static bool
config_share_has_agents(const char *dir, bool *denied)
{
	struct stat st;
	char *p = xprintf("%s/agents", dir);
	bool ok = stat(p, &st) == 0 && S_ISDIR(st.st_mode);

	*denied = !ok && errno == EACCES;
	free(p);
	return ok;
}

/*
 * An installed binary's share dir, found from where it is: PREFIX/bin's
 * binary reads PREFIX/share/agentmux, wherever PREFIX was moved (meson
 * install --destdir, a package unpacked elsewhere); NULL if not there.
 * One that cannot be reached is still the one, so that the error names it.
 */
static char *
config_share_beside(const char *exe)
{
	char *dir, *slash, *real = NULL;
	bool denied;

	if (*AGENTMUX_BIN_TO_SHARE == '\0' || (slash = strrchr(exe, '/')) ==
	    NULL)
		return NULL;
	dir = xprintf("%.*s/%s", (int)(slash - exe), exe, AGENTMUX_BIN_TO_SHARE);
	if (config_share_has_agents(dir, &denied))
		real = path_real(dir);
	else if (denied)
		real = xstrdup(dir);
	free(dir);
	return real;
}

const char *
config_share_dir(void)
{
	const char *env = getenv("AGENTMUX_SHARE");
	static char *dir;
	char exe[PATH_MAX];
	ssize_t n;

	if (dir != NULL)
		return dir;
	if (env != NULL && *env == '/') {
		dir = xstrdup(env);
		return dir;
	}
	if ((n = readlink("/proc/self/exe", exe, sizeof exe - 1)) <= 0)
		n = 0;
	exe[n] = '\0';
	/* Only the binary in its own build tree reads the source tree's profiles. */
	if (strcmp(exe, AGENTMUX_BUILD_EXE) == 0)
		dir = xstrdup(AGENTMUX_SRCSHAREDIR);
	else if ((dir = config_share_beside(exe)) == NULL)
		dir = xstrdup(AGENTMUX_SHAREDIR);
	return dir;
}

static int
config_cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Keeps the first reason a built-in profile was not read, and what to do. */
static void
config_builtin_error(struct config *cf, const char *what, const char *path,
    int error)
{
	if (cf->builtin_error != NULL)
		return;
	cf->builtin_error = xprintf("cannot read %s %s: %s (%s)", what, path,
	    strerror(error), error == ENOENT ? "reinstall agentmux" :
	    "make it readable by you, parent directories included");
}

/*
 * The built-in profiles, SHARE/agents/NAME.conf in name order. One that cannot
 * be read leaves the config usable; looking up an agent then says why it
 * is missing instead of listing no agents.
 */
static void
config_load_builtin(struct config *cf, struct config_problems *problems)
{
	char *dir, *pattern;
	glob_t g;
	DIR *d;
	size_t i;

	dir = xprintf("%s/agents", config_share_dir());
	if ((d = opendir(dir)) == NULL) {
		config_builtin_error(cf, "the agent profiles in", dir, errno);
		free(dir);
		return;
	}
	closedir(d);
	pattern = xprintf("%s/*.conf", dir);
	if (glob(pattern, 0, NULL, &g) == 0) {
		qsort(g.gl_pathv, g.gl_pathc, sizeof *g.gl_pathv,
		    config_cmp_str);
		for (i = 0; i < g.gl_pathc; i++) {
			if (config_parse_file(cf, g.gl_pathv[i], true,
			    problems) == -1)
				config_builtin_error(cf, "the agent profile",
				    g.gl_pathv[i], errno);
		}
		globfree(&g);
	}
	free(pattern);
	free(dir);
}

static void
config_set_defaults(struct config *cf)
{
	const char *const *e;

	cf->on_unknown = CONFIG_ASK;
	cf->prompt_timeout = 60;
	cf->limits.memory = 4LL << 30;
	cf->limits.pids = 4096;
	cf->limits.file_size = 8LL << 30;
	cf->limits.open_files = 8192;
	cf->limits.tmp_size = 1LL << 30;
	cf->limits.disk_write = 20LL << 30;
	cf->limits.disk_reserve = 1LL << 30;
	cf->ui.prefix = xstrdup("C-a");
	cf->ui.prefix_key = 1;
	/* NO_COLOR is each terminal's (the server's clients differ), not the file's. */
	cf->ui.color = true;
	cf->ui.scrollback = 10000;
	cf->ui.escape_time = 50;
	cf->ui.idle_after = 3000;
	strv_init(&cf->ui.notify_argv);
	cf->ui.clipboard = true;
	strv_init(&cf->proxy.upstream_ca);
	strv_init(&cf->proxy.connect_to);
	cf->proxy.connect_timeout = 10;
	cf->proxy.idle_timeout = 300;
	cf->proxy.client_timeout = 30;
	cf->proxy.max_connections = 256;
	cf->proxy.transparent = true;
	cf->proxy.record_headers = CONFIG_RECORD_HEADERS;
	cf->proxy.record_budget = CONFIG_RECORD_BUDGET;
	cf->snapshots.interval = 30;
	cf->snapshots.max_size = 2LL << 30;
	strv_init(&cf->snapshots.excludes);
	for (e = config_default_excludes; *e != NULL; e++)
		strv_add(&cf->snapshots.excludes, *e);
	cf->jail.history = true;
	cf->jail.scan_limit = CONFIG_SCAN_LIMIT;
	strv_init(&cf->jail.protect);
	strv_init(&cf->jail.watch_ignored);
	for (e = config_default_protect; *e != NULL; e++)
		strv_add(&cf->jail.protect, *e);
}

/* Cross-section checks once every file is read: references and sources. */
static void
config_check_refs(struct config *cf, struct config_problems *problems)
{
	struct config_parse cp;
	size_t i, j;

	memset(&cp, 0, sizeof cp);
	cp.cf = cf;
	cp.problems = problems;
	for (i = 0; i < cf->nsecrets; i++) {
		struct config_secret *s = &cf->secrets[i];
		int sources = (s->from_env != NULL) + (s->file != NULL) +
		    (s->command != NULL);

		cp.file = s->origin;
		cp.line = s->line;
		if (s->env == NULL)
			config_problem(&cp, "[secret %s] needs 'env = NAME', the "
			    "variable the jail sees a placeholder in", s->name);
		else if (sources > 1)
			config_problem(&cp, "[secret %s] has %d sources; keep one "
			    "of from_env, file, command", s->name, sources);
		else if (s->hosts.n == 0)
			config_problem(&cp, "[secret %s] needs 'host = NAME', the "
			    "hosts its value may be sent to", s->name);
	}
	for (i = 0; i < cf->nagents; i++) {
		struct config_agent *a = &cf->agents[i];

		cp.file = a->origin;
		cp.line = a->line;
		for (j = 0; j < a->secrets.n; j++) {
			if (config_secret(cf, a->secrets.v[j]) == NULL)
				config_problem(&cp, "[agent %s] names secret '%s' "
				    "but there is no [secret %s]", a->name,
				    a->secrets.v[j], a->secrets.v[j]);
		}
	}
	if (cf->ui.default_agent != NULL &&
	    config_agent(cf, cf->ui.default_agent) == NULL) {
		cp.file = cf->path;
		cp.line = 0;
		config_problem(&cp, "[ui] default_agent '%s' is not a known "
		    "agent profile", cf->ui.default_agent);
	}
}

struct config *
config_default(void)
{
	struct config *cf = xcalloc(1, sizeof *cf);
	struct config_problems ps = { NULL, 0 };

	config_set_defaults(cf);
	config_load_builtin(cf, &ps);
	config_problems_free(&ps);
	return cf;
}

struct config *
config_load(const char *path, struct config_problems *problems)
{
	struct config *cf = xcalloc(1, sizeof *cf);
	char *def = NULL;
	size_t before = problems->n;
	struct config_parse cp;

	config_set_defaults(cf);
	config_load_builtin(cf, problems);
	if (path == NULL)
		path = def = path_config_file();
	cf->path = xstrdup(path);
	if (config_parse_file(cf, path, false, problems) == -1) {
		if (errno != ENOENT || def == NULL) {
			memset(&cp, 0, sizeof cp);
			cp.problems = problems;
			cp.file = path;
			config_problem(&cp, "cannot read the config file: %s",
			    strerror(errno));
		} else {
			free(cf->path);
			cf->path = NULL;
		}
	}
	free(def);
	config_check_refs(cf, problems);
	if (problems->n != before) {
		config_free(cf);
		return NULL;
	}
	return cf;
}

struct config *
config_load_or_cause(const char *path, char **cause)
{
	struct config_problems ps = { NULL, 0 };
	struct config *cf;
	struct buf b;
	size_t i;

	if ((cf = config_load(path, &ps)) != NULL)
		return cf;
	buf_init(&b);
	buf_adds(&b, "the config file has problems (run 'agentmux config "
	    "check'):");
	for (i = 0; i < ps.n && i < 5; i++) {
		if (ps.v[i].line > 0)
			buf_printf(&b, "\n  %s:%d: %s", ps.v[i].file,
			    ps.v[i].line, ps.v[i].message);
		else
			buf_printf(&b, "\n  %s: %s", ps.v[i].file,
			    ps.v[i].message);
	}
	if (ps.n > 5)
		buf_printf(&b, "\n  ... and %zu more", ps.n - 5);
	*cause = buf_steal(&b);
	config_problems_free(&ps);
	return NULL;
}

static void
config_agent_free(struct config_agent *a)
{
	free(a->name);
	free(a->description);
	free(a->command);
	free(a->setup);
	free(a->resume);
	strv_free(&a->env);
	config_rules_free(&a->rules);
	strv_free(&a->config_dirs);
	strv_free(&a->secrets);
	strv_free(&a->model_hosts);
	strv_free(&a->protect);
	config_agent_screen_free(a);
	free(a->needs_you_file);
	free(a->origin);
}

static void
config_secret_free(struct config_secret *s)
{
	free(s->name);
	free(s->env);
	free(s->from_env);
	free(s->file);
	free(s->command);
	strv_free(&s->hosts);
	free(s->header);
	free(s->scheme);
	free(s->origin);
}

void
config_free(struct config *cf)
{
	size_t i;

	if (cf == NULL)
		return;
	free(cf->path);
	free(cf->builtin_error);
	config_rules_free(&cf->rules);
	for (i = 0; i < cf->nagents; i++)
		config_agent_free(&cf->agents[i]);
	free(cf->agents);
	for (i = 0; i < cf->nsecrets; i++)
		config_secret_free(&cf->secrets[i]);
	free(cf->secrets);
	free(cf->ui.prefix);
	free(cf->ui.default_agent);
	strv_free(&cf->proxy.upstream_ca);
	strv_free(&cf->ui.notify_argv);
	strv_free(&cf->proxy.connect_to);
	strv_free(&cf->snapshots.excludes);
	strv_free(&cf->jail.protect);
	strv_free(&cf->jail.watch_ignored);
	free(cf);
}

const struct config_agent *
config_agent(const struct config *cf, const char *name)
{
	return config_find_agent((struct config *)cf, name);
}

const struct config_secret *
config_secret(const struct config *cf, const char *name)
{
	size_t i;

	for (i = 0; i < cf->nsecrets; i++) {
		if (strcmp(cf->secrets[i].name, name) == 0)
			return &cf->secrets[i];
	}
	return NULL;
}

int
config_parse_key(const char *s)
{
	int c;

	if ((s[0] != 'C' && s[0] != 'c') || s[1] != '-' || s[2] == '\0' ||
	    s[3] != '\0')
		return -1;
	c = (unsigned char)s[2];
	if (isalpha(c))
		return tolower(c) - 'a' + 1;
	if (c == ']')
		return 0x1d;
	if (c == '\\')
		return 0x1c;
	if (c == '^')
		return 0x1e;
	if (c == '_')
		return 0x1f;
	return -1;
}

/* True if LINE is the header of SECTION (whitespace-insensitive). */
static bool
config_is_header(const char *line, const char *section)
{
	const char *p = line + strspn(line, " \t"), *s = section;

	if (*p++ != '[')
		return false;
	for (;;) {
		p += strspn(p, " \t");
		s += strspn(s, " \t");
		if (*p == ']' && *s == '\0')
			return true;
		if (*p != *s || *s == '\0')
			return false;
		while (*p == *s && *s != '\0' && *s != ' ' && *s != '\t') {
			p++;
			s++;
		}
		if ((*s == ' ' || *s == '\t') && *p != ' ' && *p != '\t')
			return false;
	}
}

char *
config_text_append(const char *text, const char *section, const char *key,
    const char *value)
{
	const char *line, *next, *insert_at = NULL;
	bool in_section = false;
	struct buf out;

	/* Find the end of the last non-blank line inside the section. */
	for (line = text; *line != '\0'; line = next) {
		next = line + strcspn(line, "\n");
		if (*next == '\n')
			next++;
		if (line[strspn(line, " \t")] == '[') {
			in_section = config_is_header(line, section);
			if (in_section)
				insert_at = next;
			continue;
		}
		if (in_section && line + strspn(line, " \t\r\n") < next)
			insert_at = next;
	}
	buf_init(&out);
	if (insert_at != NULL) {
		buf_add(&out, text, (size_t)(insert_at - text));
		if (out.len > 0 && out.data[out.len - 1] != '\n')
			buf_addc(&out, '\n');
		buf_printf(&out, "%s = %s\n", key, value);
		buf_adds(&out, insert_at);
	} else {
		buf_adds(&out, text);
		if (out.len > 0 && out.data[out.len - 1] != '\n')
			buf_addc(&out, '\n');
		if (out.len > 0)
			buf_addc(&out, '\n');
		buf_printf(&out, "[%s]\n%s = %s\n", section, key, value);
	}
	return buf_steal(&out);
}

int
config_read_text(const char *path, char **text, mode_t *mode, char **cause)
{
	struct buf in;
	struct stat st;

	buf_init(&in);
	*mode = 0600;
	if (buf_read_file(&in, path) == -1) {
		if (errno != ENOENT) {
			*cause = xprintf("cannot read %s: %s", path,
			    strerror(errno));
			buf_free(&in);
			return -1;
		}
	} else if (stat(path, &st) == 0)
		*mode = st.st_mode & 07777;
	buf_adds(&in, "");
	*text = buf_steal(&in);
	return 0;
}

int
config_write_text(const char *path, const char *text, mode_t mode,
    char **cause)
{
	char *dir, *slash;

	dir = xstrdup(path);
	if ((slash = strrchr(dir, '/')) != NULL && slash != dir) {
		*slash = '\0';
		path_mkdir_p(dir, 0700);
	}
	free(dir);
	return util_write_file_atomic(path, text, strlen(text), mode, cause);
}

int
config_append(const char *path, const char *section, const char *key,
    const char *value, char **cause)
{
	char *in, *out;
	mode_t mode;
	int rc;

	if (config_read_text(path, &in, &mode, cause) == -1)
		return -1;
	out = config_text_append(in, section, key, value);
	rc = config_write_text(path, out, mode, cause);
	free(in);
	free(out);
	return rc;
}
