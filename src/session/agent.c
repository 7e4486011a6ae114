/* Agent profiles at run time: finding an agent's real install so the jail can show it. */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "session.h"

/* Install hints for the well-known agents, for the not-found message. */
static const struct {
	const char *command;
	const char *how;
} agent_hints[] = {
	{ "claude", "npm install -g @anthropic-ai/claude-code" },
	{ "codex", "npm install -g @openai/codex" },
	{ "opencode", "npm install -g opencode-ai" },
	{ "gemini", "npm install -g @google/gemini-cli" },
	{ "aider", "python3 -m pip install aider-chat" },
};

const char *
agent_user_shell(const char *sh)
{
	struct passwd *pw;

	if (sh != NULL && *sh == '/' && access(sh, X_OK) == 0)
		return sh;
	if ((pw = getpwuid(getuid())) != NULL && pw->pw_shell != NULL &&
	    *pw->pw_shell == '/' && access(pw->pw_shell, X_OK) == 0)
		return pw->pw_shell;
	return "/bin/sh";
}

/* True for what every jail shows already: /usr and the merged-/usr links. */
static bool
agent_under_usr(const char *p)
{
	char *r;
	bool usr;

	if (strncmp(p, "/usr/", 5) == 0)
		return true;
	if ((r = path_real(p)) == NULL)
		return false;
	usr = strncmp(r, "/usr/", 5) == 0;
	free(r);
	return usr;
}

/* Adds P to LIST unless it is already visible in every jail or listed. */
static void
agent_add(struct strv *list, const char *p)
{
	if (p == NULL || agent_under_usr(p) || strv_contains(list, p))
		return;
	strv_add(list, p);
}

static char *
agent_dirname(const char *p)
{
	char *copy = xstrdup(p), *d = xstrdup(dirname(copy));

	free(copy);
	return d;
}

/* The top package dir of a file inside node_modules, or NULL. */
static char *
agent_node_package(const char *real)
{
	const char *nm = strstr(real, "/node_modules/"), *next;
	const char *start, *end;

	if (nm == NULL)
		return NULL;
	/* The outermost package: prefix/lib/node_modules/[@scope/]name. */
	start = nm + strlen("/node_modules/");
	if ((end = strchr(start, '/')) == NULL)
		return NULL;
	if (*start == '@' && (next = strchr(end + 1, '/')) != NULL)
		end = next;
	return xstrndup(real, (size_t)(end - real));
}

/* Generic bin dirs whose other contents the jail should not see. */
static bool
agent_generic_bin(const char *dir)
{
	const char *base = strrchr(dir, '/');

	return base != NULL && strcmp(base, "/bin") == 0;
}

/* Reads a "#!" line; returns the interpreter's resolved path or NULL. */
static char *
agent_interpreter(const char *real, const char *path_env)
{
	char line[512], *p, *word, *found, *res;
	ssize_t n;
	int fd;

	if ((fd = open(real, O_RDONLY | O_CLOEXEC)) == -1)
		return NULL;
	n = read(fd, line, sizeof line - 1);
	close(fd);
	if (n < 3 || line[0] != '#' || line[1] != '!')
		return NULL;
	line[n] = '\0';
	line[strcspn(line, "\n")] = '\0';
	p = line + 2 + strspn(line + 2, " \t");
	word = xstrndup(p, strcspn(p, " \t"));
	if (strcmp(word, "/usr/bin/env") == 0 || strcmp(word, "/bin/env") == 0) {
		p += strlen(word);
		p += strspn(p, " \t");
		if (strncmp(p, "-S", 2) == 0)
			p += 2 + strspn(p + 2, " \t");
		free(word);
		word = xstrndup(p, strcspn(p, " \t"));
	}
	found = path_find_exec(word, path_env);
	free(word);
	if (found == NULL)
		return NULL;
	res = path_real(found);
	free(found);
	return res;
}

static void
agent_not_found(const char *name, char **cause)
{
	size_t i;

	for (i = 0; i < nitems(agent_hints); i++) {
		if (strcmp(agent_hints[i].command, name) == 0) {
			*cause = xprintf("'%s' is not on your PATH; install it "
			    "(%s) or put its directory on PATH", name,
			    agent_hints[i].how);
			return;
		}
	}
	*cause = xprintf("'%s' is not on your PATH; install it or give its "
	    "full path", name);
}

/* Binds for the interpreter: a runtime outside /usr is shown from its root. */
static void
agent_add_interpreter(struct agent_install *out)
{
	char *dir, *root;

	if (out->interpreter == NULL || agent_under_usr(out->interpreter))
		return;
	dir = agent_dirname(out->interpreter);
	agent_add(&out->path, dir);
	root = agent_dirname(dir);
	/* nvm, pyenv and the like: .../vX/bin/node needs .../vX/lib too. */
	if (agent_generic_bin(dir) && strcmp(root, "/") != 0 &&
	    strcmp(root, path_home()) != 0)
		agent_add(&out->binds, root);
	else
		agent_add(&out->binds, out->interpreter);
	free(root);
	free(dir);
}

int
agent_resolve(const struct config_agent *a, char *const *command,
    const char *path_env, struct agent_install *out, char **cause)
{
	struct strv words;
	char *pkg, *dir;
	size_t i;

	memset(out, 0, sizeof *out);
	strv_init(&out->argv);
	strv_init(&out->binds);
	strv_init(&out->path);
	strv_init(&words);
	if (command != NULL && command[0] != NULL) {
		for (i = 0; command[i] != NULL; i++)
			strv_add(&words, command[i]);
	} else if (a != NULL && a->command != NULL &&
	    strv_split_words(&words, a->command, cause) == -1)
		goto fail;
	if (words.n == 0)
		strv_add(&words, agent_user_shell(getenv("SHELL")));
	if ((out->found = path_find_exec(words.v[0], path_env)) == NULL) {
		agent_not_found(words.v[0], cause);
		goto fail;
	}
	if ((out->real = path_real(out->found)) == NULL) {
		*cause = xprintf("cannot resolve %s: %s", out->found,
		    strerror(errno));
		goto fail;
	}
	/*
	 * A symlink in a shared bin dir (npm's prefix/bin/claude) is run by
	 * its target: binding the link's path would show the target there and
	 * break a script's relative requires; the bin dir's other contents
	 * stay hidden.
	 */
	dir = agent_dirname(out->found);
	if (strcmp(out->real, out->found) != 0 && agent_generic_bin(dir) &&
	    !agent_under_usr(out->real))
		strv_add(&out->argv, out->real);
	else {
		strv_add(&out->argv, out->found);
		agent_add(&out->binds, agent_generic_bin(dir) ? out->found : dir);
		agent_add(&out->path, dir);
	}
	free(dir);
	for (i = 1; i < words.n; i++)
		strv_add(&out->argv, words.v[i]);
	if ((pkg = agent_node_package(out->real)) != NULL) {
		agent_add(&out->binds, pkg);
		free(pkg);
	} else if (strcmp(out->real, out->found) != 0) {
		dir = agent_dirname(out->real);
		agent_add(&out->binds, agent_generic_bin(dir) ? out->real : dir);
		free(dir);
	}
	out->interpreter = agent_interpreter(out->real, path_env);
	agent_add_interpreter(out);
	strv_free(&words);
	return 0;
fail:
	strv_free(&words);
	agent_install_free(out);
	return -1;
}

void
agent_install_free(struct agent_install *in)
{
	strv_free(&in->argv);
	free(in->found);
	free(in->real);
	free(in->interpreter);
	strv_free(&in->binds);
	strv_free(&in->path);
	memset(in, 0, sizeof *in);
}
