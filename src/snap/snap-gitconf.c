/*
 * What a session's start reads of git's config for a project before its
 * jail is made: core.hooksPath and the includes of .git/config (its bytes
 * handed to git's parser: no include followed, nothing run), and the
 * same of the user's and the system's config files (includes followed:
 * the user's own core.hooksPath, global else system, and every file they
 * include). The two git runs go side by side on the caller's loop; a
 * command may read them to the end at once (snap_gitconf_read).
 */
#include <stdlib.h>
#include <string.h>

#include "snap/snap-int.h"

enum snap_gitconf_run {
	SNAP_GITCONF_PROJECT,     /* .git/config's hooksPath and include paths */
	SNAP_GITCONF_USER,        /* the user's and the machine's, includes followed */
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
	/*
	 * Run where there is no repository: the system's file and both of
	 * the user's (~/.gitconfig and git/config under XDG_CONFIG_HOME:
	 * --global reads only one of them), what they include (an includeIf
	 * whose condition fails is not followed, but is listed), each value
	 * with its scope and file: "SCOPE\0file:PATH\0KEY\nVALUE\0".
	 */
	static char *const user[] = { "git", "config", "--includes",
	    "--show-origin", "--show-scope", "--null", "--get-regexp",
	    SNAP_GITCONF_KEYS, NULL };
	char *const *v = r == SNAP_GITCONF_PROJECT ? project : user;
	size_t i;

	for (i = 0; v[i] != NULL; i++)
		argv[i] = v[i];
	argv[i] = NULL;
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

/*
 * Calls FN(ARG, file, key, value) for each value of the user's run (each
 * "SCOPE\0file:PATH\0KEY\nVALUE\0"), in git's order: the system's file
 * first, then the user's, each include where it is read.
 */
static void
snap_gitconf_user_each(const struct snap_gitconf *gc,
    void (*fn)(void *, const char *, const char *, size_t, const char *),
    void *arg)
{
	const struct buf *b = &gc->out[SNAP_GITCONF_USER];
	const char *p, *end, *origin, *v;

	if (gc->status[SNAP_GITCONF_USER] != 0 || b->data == NULL)
		return;
	end = b->data + b->len;
	for (p = b->data; p < end; p += strlen(p) + 1) {
		/* Its scope, then its file, then the key and value. */
		if (memchr(p, '\0', (size_t)(end - p)) == NULL)
			break;
		p += strlen(p) + 1;
		if (p >= end || memchr(p, '\0', (size_t)(end - p)) == NULL)
			break;
		origin = p;
		p += strlen(p) + 1;
		if (p >= end || memchr(p, '\0', (size_t)(end - p)) == NULL)
			break;
		if (strncmp(origin, "file:/", 6) != 0 ||
		    (v = strchr(p, '\n')) == NULL)
			continue;
		fn(arg, origin + 5, p, (size_t)(v - p), v + 1);
	}
}

static void
snap_gitconf_user_hooks(void *arg, const char *file, const char *key,
    size_t keylen, const char *value)
{
	const char **last = arg;

	(void)file;
	if (keylen == strlen("core.hookspath") && strncmp(key,
	    "core.hookspath", keylen) == 0)
		*last = value;
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
	/* The user's, else the system's: the last git reads. */
	snap_gitconf_user_each(gc, snap_gitconf_user_hooks, &last);
	if (last == NULL)
		return -1;
	buf_reset(out);
	buf_add(out, last, strlen(last) + 1);
	return 0;
}

static void
snap_gitconf_user_inc(void *arg, const char *file, const char *key,
    size_t keylen, const char *value)
{
	struct strv *out = arg;
	const char *slash;
	char *dir;

	if (keylen < 8 || strncmp(key, "include", 7) != 0 || *value == '\0')
		return;
	if (value[0] == '/')
		strv_add(out, value);
	else if (value[0] == '~' && value[1] == '/')
		strv_addf(out, "%s/%s", path_home(), value + 2);
	else if (value[0] != '~' && value[0] != '%' &&
	    (slash = strrchr(file, '/')) != NULL) {
		/* Relative: to the dir of the file that names it. */
		dir = xstrndup(file, (size_t)(slash - file));
		strv_addf(out, "%s/%s", dir, value);
		free(dir);
	}
}

void
snap_gitconf_user_includes(const struct snap_gitconf *gc, struct strv *out)
{
	snap_gitconf_user_each(gc, snap_gitconf_user_inc, out);
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
