/* The server's commands: ls, new, kill, kill-server, reload, send, pause, resume, wait, port, each one message to the running server. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/core.h"
#include "server/server.h"
#include "session/session.h"

/* Sends KV to the server (started with the config if START); prints its answer. */
static int
cmd_server_send(struct cli_args *args, struct strv *kv, bool start)
{
	struct config *cf = NULL;
	char *cause = NULL;
	int rc;

	if (start && (cf = cli_load_config()) == NULL)
		return 1;
	if ((rc = server_client_command(cli_get(args, "socket-name"), cf,
	    kv->v, &cause)) == -1) {
		cli_error("%s", cause);
		rc = 1;
	}
	free(cause);
	config_free(cf);
	strv_free(kv);
	return rc;
}

int
cmd_ls(struct cli_args *args)
{
	struct strv kv;

	strv_init(&kv);
	strv_add(&kv, "CMD=ls");
	if (cli_has(args, "json"))
		strv_add(&kv, "JSON=1");
	return cmd_server_send(args, &kv, false);
}

int
cmd_kill_server(struct cli_args *args)
{
	struct strv kv;

	strv_init(&kv);
	strv_add(&kv, "CMD=kill-server");
	return cmd_server_send(args, &kv, false);
}

int
cmd_reload(struct cli_args *args)
{
	struct strv kv;

	strv_init(&kv);
	strv_add(&kv, "CMD=reload");
	return cmd_server_send(args, &kv, false);
}

int
cmd_kill(struct cli_args *args)
{
	struct strv kv;

	strv_init(&kv);
	strv_add(&kv, "CMD=kill");
	strv_addf(&kv, "ID=%s", args->argv[0]);
	return cmd_server_send(args, &kv, false);
}

/* pause and resume: one message naming the session. */
static int
cmd_server_session(struct cli_args *args, const char *cmd)
{
	struct strv kv;

	strv_init(&kv);
	strv_addf(&kv, "CMD=%s", cmd);
	strv_addf(&kv, "ID=%s", args->argv[0]);
	return cmd_server_send(args, &kv, false);
}

int
cmd_pause(struct cli_args *args)
{
	return cmd_server_session(args, "pause");
}

int
cmd_resume(struct cli_args *args)
{
	return cmd_server_session(args, "resume");
}

int
cmd_wait(struct cli_args *args)
{
	const char *what = cli_get(args, "for");
	struct strv kv;

	if (what != NULL && strcmp(what, "needs-you") != 0 &&
	    strcmp(what, "prompt") != 0 && strcmp(what, "exit") != 0)
		return cli_usage_error("wait", "--for takes needs-you, prompt "
		    "or exit, not '%s'", what);
	strv_init(&kv);
	strv_add(&kv, "CMD=wait");
	strv_addf(&kv, "ID=%s", args->argv[0]);
	strv_addf(&kv, "FOR=%s", what != NULL ? what : "exit");
	if (cli_get(args, "timeout") != NULL)
		strv_addf(&kv, "TIMEOUT=%s", cli_get(args, "timeout"));
	return cmd_server_send(args, &kv, false);
}

int
cmd_send(struct cli_args *args)
{
	struct strv kv;
	int i;

	strv_init(&kv);
	strv_add(&kv, "CMD=send");
	strv_addf(&kv, "ID=%s", args->argv[0]);
	if (cli_has(args, "literal"))
		strv_add(&kv, "LITERAL=1");
	for (i = 1; i < args->argc; i++)
		strv_addf(&kv, "ARG=%s", args->argv[i]);
	return cmd_server_send(args, &kv, false);
}

/*
 * HOST_PORT as [ADDR:]PORT ([ADDR]:PORT for IPv6) into KV's HOST= and
 * HPORT=; an address given so is not NAMED: the server refuses one that
 * is not loopback. -1 if it is malformed.
 */
static int
cmd_port_host(const char *arg, struct strv *kv)
{
	const char *colon, *close;

	if (arg[0] == '[') {
		if ((close = strchr(arg, ']')) == NULL || close[1] != ':')
			return -1;
		strv_addf(kv, "HOST=%.*s", (int)(close - arg - 1), arg + 1);
		strv_addf(kv, "HPORT=%s", close + 2);
		return 0;
	}
	if ((colon = strrchr(arg, ':')) == NULL) {
		strv_addf(kv, "HPORT=%s", arg);
		return 0;
	}
	if (strchr(arg, ':') != colon)
		return -1;      /* IPv6 without brackets: which colon is it? */
	strv_addf(kv, "HOST=%.*s", (int)(colon - arg), arg);
	strv_addf(kv, "HPORT=%s", colon + 1);
	return 0;
}

int
cmd_port(struct cli_args *args)
{
	const char *host = cli_get(args, "host");
	bool del = cli_has(args, "delete");
	struct strv kv;

	if (del && (args->argc > 2 || host != NULL))
		return cli_usage_error("port", "-d takes SESSION JAIL_PORT "
		    "only");
	strv_init(&kv);
	strv_add(&kv, "CMD=port");
	strv_addf(&kv, "ID=%s", args->argv[0]);
	strv_addf(&kv, "JPORT=%s", args->argv[1]);
	if (del)
		strv_add(&kv, "DELETE=1");
	if (args->argc > 2 && cmd_port_host(args->argv[2], &kv) == -1) {
		strv_free(&kv);
		return cli_usage_error("port", "HOST_PORT is [ADDR:]PORT, or "
		    "[ADDR]:PORT for IPv6; not '%s'", args->argv[2]);
	}
	if (host != NULL) {
		if (args->argc > 2 && strchr(args->argv[2], ':') != NULL) {
			strv_free(&kv);
			return cli_usage_error("port", "give the address once: "
			    "with --host, or in HOST_PORT");
		}
		strv_addf(&kv, "HOST=%s", host);
		strv_add(&kv, "NAMED=1");
	}
	return cmd_server_send(args, &kv, false);
}

int
cmd_new(struct cli_args *args)
{
	struct server_hello h = { 0 };
	struct session_opts wo = { 0 };
	struct config *cf;
	char *cause = NULL;
	int rc;

	h.name = cli_get(args, "socket-name");
	h.agent = cli_get(args, "agent");
	h.dir = cli_get(args, "dir");
	h.detached = cli_has(args, "detached");
	h.new_session = true;
	if (cmd_worktree_opts("new", args, &wo) == -1)
		return 2;
	h.worktree = wo.worktree;
	h.base = wo.base;
	h.branch = wo.branch;
	h.refuse_shared = !wo.shared && !wo.worktree;
	if (args->argc > 0)
		h.command = args->argv;
	if ((cf = cli_load_config()) == NULL)
		return 1;
	if ((rc = server_client_attach(cf, &h, &cause)) == -1) {
		cli_error("%s", cause);
		rc = 1;
	}
	free(cause);
	config_free(cf);
	return rc;
}
