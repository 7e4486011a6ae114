/*
 * What a session's start reads of git's config for a project before its
 * jail is made: core.hooksPath and the includes of .git/config (its bytes
 * handed to git's parser: no include followed, nothing run) and the
 * user's own core.hooksPath (global, else system). The three git runs go
 * side by side on the caller's loop; a command may read them to the end
 * at once (snap_gitconf_read).
 */
#include <stdlib.h>
#include <string.h>

#include "snap/snap-int.h"

enum snap_gitconf_run {
	SNAP_GITCONF_PROJECT,     /* .git/config's hooksPath and include paths */
	SNAP_GITCONF_GLOBAL,      /* the user's global core.hooksPath */
	SNAP_GITCONF_SYSTEM,      /* the machine's */
	SNAP_GITCONF_NRUNS
};

struct snap_gitconf {
	struct proc *p[SNAP_GITCONF_NRUNS];
	struct buf out[SNAP_GITCONF_NRUNS];
	int status[SNAP_GITCONF_NRUNS];  /* -1: not run, or could not run */
	struct buf config;        /* .git/config's bytes, its input */
	int pending;
	void (*done)(void *);
	void *arg;
};

/* The key .git/config is searched for (git's names are lower case in it). */
#define SNAP_GITCONF_KEYS "^(core\\.hookspath|include(if\\..*)?\\.path)$"

/* The command line of run R, into ARGV (borrowed strings). */
static void
snap_gitconf_argv(enum snap_gitconf_run r, char **argv)
{
	static char *const project[] = { "git", "config", "--file", "-",
	    "--no-includes", "--null", "--get-regexp", SNAP_GITCONF_KEYS,
	    NULL };
	static char *const user[] = { "git", "config", "--global",
	    "--includes", "--null", "--get", "core.hooksPath", NULL };
	size_t i;

	if (r == SNAP_GITCONF_PROJECT) {
		for (i = 0; i < nitems(project); i++)
			argv[i] = project[i];
		return;
	}
	for (i = 0; i < nitems(user); i++)
		argv[i] = user[i];
	argv[2] = r == SNAP_GITCONF_GLOBAL ? "--global" : "--system";
}

static struct snap_gitconf *
snap_gitconf_new(const char *project)
{
	struct snap_gitconf *gc = xcalloc(1, sizeof *gc);
	size_t i;

	for (i = 0; i < SNAP_GITCONF_NRUNS; i++) {
		buf_init(&gc->out[i]);
		gc->status[i] = -1;
	}
	buf_init(&gc->config);
	/* A .git/config that cannot be read: no hooks path, no includes. */
	if (snap_plant_read_config(project, &gc->config) == -1)
		gc->status[SNAP_GITCONF_PROJECT] = -2;
	return gc;
}

struct snap_gitconf *
snap_gitconf_read(const char *project)
{
	struct snap_gitconf *gc = snap_gitconf_new(project);
	char *argv[16], *cause = NULL;
	size_t i;

	for (i = 0; i < SNAP_GITCONF_NRUNS; i++) {
		if (gc->status[i] == -2)
			continue;
		snap_gitconf_argv(i, argv);
		if (snap_git_outside_input(argv, i == SNAP_GITCONF_PROJECT ?
		    gc->config.data : NULL, i == SNAP_GITCONF_PROJECT ?
		    gc->config.len : 0, &gc->out[i], NULL, &gc->status[i],
		    &cause) == -1) {
			gc->status[i] = -1;
			free(cause);
			cause = NULL;
		}
	}
	return gc;
}

static void
snap_gitconf_over(struct proc *p, void *arg)
{
	struct snap_gitconf *gc = arg;
	size_t i;

	for (i = 0; i < SNAP_GITCONF_NRUNS && gc->p[i] != p; i++)
		;
	if (i == SNAP_GITCONF_NRUNS)
		fatalx("a config read that is not this start's");
	gc->status[i] = proc_status(p);
	buf_add(&gc->out[i], proc_out(p)->data, proc_out(p)->len);
	proc_free(p);
	gc->p[i] = NULL;
	if (--gc->pending == 0)
		gc->done(gc->arg);
}

struct snap_gitconf *
snap_gitconf_start(struct event_base *base, const char *project,
    void (*done)(void *), void *arg)
{
	struct snap_gitconf *gc = snap_gitconf_new(project);
	char *argv[16], *cause = NULL;
	size_t i;

	gc->done = done;
	gc->arg = arg;
	for (i = 0; i < SNAP_GITCONF_NRUNS; i++) {
		if (gc->status[i] == -2)
			continue;
		snap_gitconf_argv(i, argv);
		gc->p[i] = snap_git_plain_spawn(base, NULL, argv,
		    i == SNAP_GITCONF_PROJECT ? &gc->config : NULL,
		    snap_gitconf_over, gc, &cause);
		if (gc->p[i] == NULL) {
			log_warnx("%s", cause);
			free(cause);
			cause = NULL;
		} else
			gc->pending++;
	}
	return gc;
}

bool
snap_gitconf_running(const struct snap_gitconf *gc)
{
	return gc != NULL && gc->pending > 0;
}

void
snap_gitconf_free(struct snap_gitconf *gc)
{
	size_t i;

	if (gc == NULL)
		return;
	for (i = 0; i < SNAP_GITCONF_NRUNS; i++) {
		proc_free(gc->p[i]);
		buf_free(&gc->out[i]);
	}
	buf_free(&gc->config);
	free(gc);
}

/* Run R's one value (git config --get), into OUT; -1 if none. */
static int
snap_gitconf_user(const struct snap_gitconf *gc, enum snap_gitconf_run r,
    struct buf *out)
{
	const struct buf *b = &gc->out[r];

	if (gc->status[r] != 0 || b->data == NULL ||
	    memchr(b->data, '\0', b->len) == NULL)
		return -1;
	buf_reset(out);
	buf_add(out, b->data, strlen(b->data) + 1);
	return 0;
}

int
snap_gitconf_hooks(const struct snap_gitconf *gc, struct buf *out)
{
	const struct buf *b = &gc->out[SNAP_GITCONF_PROJECT];
	const char *p, *v, *last = NULL;
	int st = gc->status[SNAP_GITCONF_PROJECT];

	/* 1: nothing matched; anything else but 0: a bad config. */
	if (st != 0 && st != 1)
		return -1;
	for (p = b->data; st == 0 && p != NULL && p < b->data + b->len;
	    p += strlen(p) + 1) {
		v = strchr(p, '\n');
		if (v != NULL && (size_t)(v - p) == strlen("core.hookspath") &&
		    strncmp(p, "core.hookspath", v - p) == 0)
			last = v + 1;
	}
	if (last != NULL) {
		/* git takes the last value given. */
		buf_reset(out);
		buf_add(out, last, strlen(last) + 1);
		return 0;
	}
	if (snap_gitconf_user(gc, SNAP_GITCONF_GLOBAL, out) == 0)
		return 0;
	return snap_gitconf_user(gc, SNAP_GITCONF_SYSTEM, out);
}

void
snap_gitconf_includes(const struct snap_gitconf *gc, struct strv *out)
{
	const struct buf *b = &gc->out[SNAP_GITCONF_PROJECT];
	const char *p, *v;

	if (gc->status[SNAP_GITCONF_PROJECT] != 0)
		return;
	for (p = b->data; p != NULL && p < b->data + b->len;
	    p += strlen(p) + 1) {
		if ((v = strchr(p, '\n')) != NULL && strncmp(p, "include", 7) ==
		    0)
			strv_add(out, v + 1);
	}
}
