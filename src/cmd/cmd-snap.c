/* Snapshot commands: snapshot, snapshots, diff, undo, confdiff. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "core/core.h"
#include "snap/snap.h"
#include "store/store.h"

/* Counting files on a terminal while a large tree is hashed. */
static void
cmd_snap_progress(void *arg, int64_t files)
{
	bool *shown = arg;

	if (files < 0) {
		if (*shown)
			out_erase_line(stderr);
		*shown = false;
		return;
	}
	out_erase_line(stderr);
	out_printf(stderr, "agentmux: snapshot: %lld files hashed",
	    (long long)files);
	*shown = true;
}

static void
cmd_snap_progress_on(bool *shown)
{
	*shown = false;
	if (isatty(STDERR_FILENO))
		snap_set_progress(cmd_snap_progress, shown);
}

static void
cmd_snap_progress_off(bool *shown)
{
	snap_set_progress(NULL, NULL);
	if (*shown)
		out_erase_line(stderr);
}

/* An alert on stderr, in red on a terminal (unless NO_COLOR). */
static void
cmd_snap_alert(const char *what, const char *message)
{
	const char *nc = getenv("NO_COLOR");
	bool red = isatty(STDERR_FILENO) && (nc == NULL || *nc == '\0');

	if (red)
		out_color(stderr, "1;31");
	out_printf(stderr, "agentmux: %s: %s", what, message);
	if (red)
		out_color(stderr, "0");
	out_puts(stderr, "\n");
}

static void
cmd_snap_warnings(const struct snap_result *res)
{
	size_t i;
	char *msg;

	if ((msg = snap_too_long_message(res->modes)) != NULL) {
		cmd_snap_alert("snapshot", msg);
		free(msg);
	}

	for (i = 0; i < res->nwarnings; i++)
		out_printf(stderr, "agentmux: snapshot: %s\n",
		    res->warnings[i]);
	if (res->nunreadable > 0)
		out_printf(stderr,
		    "agentmux: snapshot: %zu path%s could not be "
		    "read and are not in the snapshot (undo leaves them alone); "
		    "fix their permissions and snapshot again\n",
		    res->nunreadable, res->nunreadable == 1 ? "" : "s");
}

int
cmd_snapshot(struct cli_args *args)
{
	const char *label = cli_get(args, "message"), *dir = cli_get(args,
	    "dir");
	struct snap_result res;
	struct store *st = NULL;
	struct config *cf = NULL;
	char *cause = NULL;
	int64_t id = 0;
	bool shown;
	int rc;

	if (args->argc > 0 && dir != NULL)
		return cli_usage_error("snapshot", "give a SESSION or -C DIR, "
		    "not both");
	if ((cf = cli_load_config()) == NULL)
		return 1;
	if ((st = cli_open_store()) == NULL) {
		config_free(cf);
		return 1;
	}
	cmd_snap_progress_on(&shown);
	if (args->argc > 0) {
		if (cli_resolve_session(st, args->argv[0], &id) == -1)
			rc = -1;
		else if ((rc = snap_session_now(st, cf, id, label, &res,
		    &cause)) == -1)
			cli_error("%s", cause);
	} else if ((rc = snap_project(st, cf, dir != NULL ? dir : ".", label,
	    &res, &id, &cause)) == -1)
		cli_error("%s", cause);
	cmd_snap_progress_off(&shown);
	if (rc == 0) {
		cmd_snap_warnings(&res);
		out_printf(stdout,
		    "snapshot %lld of session %lld: %.12s, %lld file%s "
		    "changed since %s\n", (long long)res.seq, (long long)id,
		    res.commit, (long long)res.files_changed,
		    res.files_changed == 1 ? "" : "s", res.seq == 1 ?
		    "the project's last snapshot" : "its first snapshot");
		snap_result_clear(&res);
	}
	free(cause);
	store_close(st);
	config_free(cf);
	return rc == 0 ? 0 : 1;
}

static void
cmd_snapshots_json(struct store_snapshot **v, size_t n)
{
	struct json j;
	char t[40];
	size_t i;

	json_init(&j, true);
	json_arr_begin(&j);
	for (i = 0; i < n; i++) {
		json_obj_begin(&j);
		json_kint(&j, "snap", (int64_t)i + 1);
		json_kint(&j, "id", v[i]->id);
		json_kint(&j, "session", v[i]->session_id);
		json_kstr(&j, "time", cli_iso_time(t, sizeof t,
		    v[i]->created_at));
		json_kstr(&j, "kind", v[i]->kind);
		json_kstr(&j, "label", v[i]->label);
		json_kstr(&j, "commit", v[i]->commit);
		json_kstr(&j, "tree", v[i]->tree);
		json_kstr(&j, "parent", v[i]->parent);
		json_kstr(&j, "ref", v[i]->ref);
		json_kint(&j, "files_changed", v[i]->files_changed);
		json_kbool(&j, "dropped", v[i]->dropped_at != 0);
		json_obj_end(&j);
	}
	json_arr_end(&j);
	json_print(&j, stdout);
	json_free(&j);
}

static void
cmd_snapshots_table(struct store_snapshot **v, size_t n)
{
	static const char *const hdr[] = { "SNAP", "TIME", "KIND", "CHANGED",
		"COMMIT", "LABEL" };
	struct cli_table t;
	char seq[24], tm[32], files[24], commit[16];
	const char *row[6];
	struct strv q;
	size_t i;

	strv_init(&q);
	cli_table_init(&t, 6, hdr);
	cli_table_right(&t, 0);
	cli_table_right(&t, 3);
	for (i = 0; i < n; i++) {
		snprintf(seq, sizeof seq, "%zu", i + 1);
		snprintf(files, sizeof files, "%lld",
		    (long long)v[i]->files_changed);
		snprintf(commit, sizeof commit, "%.12s", v[i]->commit);
		row[0] = seq;
		row[1] = util_fmt_time(tm, sizeof tm, v[i]->created_at);
		row[2] = v[i]->dropped_at != 0 ? "dropped" : v[i]->kind;
		row[3] = files;
		row[4] = commit;
		row[5] = quote_keep(&q, v[i]->label);
		cli_table_add(&t, row);
	}
	cli_table_print(&t, stdout);
	cli_table_free(&t);
	strv_free(&q);
}

int
cmd_snapshots(struct cli_args *args)
{
	struct store_snapshot **v;
	struct store *st;
	bool json = cli_has(args, "json");
	int64_t id = -1;
	size_t n;

	if ((st = cli_open_store()) == NULL)
		return 1;
	if (cli_resolve_session(st, args->argv[0], &id) == -1) {
		store_close(st);
		return 1;
	}
	v = store_snapshot_list(st, id, &n);
	if (json)
		cmd_snapshots_json(v, n);
	else if (n == 0)
		out_printf(stdout, "session %lld has no snapshots\n",
		    (long long)id);
	else
		cmd_snapshots_table(v, n);
	store_snapshot_list_free(v, n);
	store_close(st);
	return 0;
}

/* Opens the config and store and resolves SPEC; 0, or the exit code. */
static int
cmd_snap_open(const char *spec, struct config **cf, struct store **st,
    int64_t *id)
{
	if ((*cf = cli_load_config()) == NULL)
		return 1;
	if ((*st = cli_open_store()) == NULL) {
		config_free(*cf);
		return 1;
	}
	if (cli_resolve_session(*st, spec, id) == -1) {
		store_close(*st);
		config_free(*cf);
		return 1;
	}
	return 0;
}

/* The colour of a diff line, by what starts it; NULL for none. */
static const char *
cmd_diff_color(const char *line, bool *header)
{
	if (strncmp(line, "diff ", 5) == 0)
		*header = true;
	else if (strncmp(line, "@@", 2) == 0)
		*header = false;
	if (*header)
		return "1";
	if (line[0] == '@')
		return "36";
	if (line[0] == '+')
		return "32";
	if (line[0] == '-')
		return "31";
	return NULL;
}

/*
 * Shows git's diff in FP on the terminal: the project's content is the
 * agent's, so it goes through out_printf (every control character
 * escaped) and agentmux colours the lines itself.
 */
static void
cmd_diff_show(FILE *fp, bool color)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	bool header = false;
	const char *c;

	rewind(fp);
	while ((n = getline(&line, &cap, fp)) > 0) {
		if (line[n - 1] == '\n')
			line[--n] = '\0';
		c = color ? cmd_diff_color(line, &header) : NULL;
		if (c != NULL)
			out_color(stdout, c);
		out_printf(stdout, "%s", line);
		if (c != NULL)
			out_color(stdout, "");
		out_puts(stdout, "\n");
	}
	free(line);
}

/*
 * Before a session's diff: the files the user's own tools run that it
 * changed (recorded at its end), in red on a terminal; on stderr when the
 * diff goes to a pipe, so that the patch stays a patch.
 */
static void
cmd_diff_protected(struct store *st, int64_t id)
{
	struct store_event **e;
	bool tty = isatty(STDOUT_FILENO), color = cli_color();
	FILE *fp = tty ? stdout : stderr;
	size_t ne, i;

	e = store_event_list(st, id, &ne);
	for (i = 0; i < ne; i++) {
		if (strcmp(e[i]->kind, "protected") != 0)
			continue;
		if (color)
			out_color(fp, "31");
		out_printf(fp, "! %s", e[i]->message);
		if (color)
			out_color(fp, "0");
		out_puts(fp, "\n");
	}
	store_event_list_free(e, ne);
	fflush(fp);
}

int
cmd_diff(struct cli_args *args)
{
	struct snap_diff_opts o;
	struct store *st = NULL;
	struct config *cf = NULL;
	FILE *tmp = NULL;
	char *cause = NULL, *alert = NULL;
	int64_t id = -1;
	bool gone = false;
	int rc;

	memset(&o, 0, sizeof o);
	o.alert = &alert;
	o.gone = &gone;
	o.from = cli_get(args, "from");
	o.to = cli_get(args, "to");
	o.stat = cli_has(args, "stat");
	if ((rc = cmd_snap_open(args->argv[0], &cf, &st, &id)) != 0)
		return rc;
	o.paths = args->argv + 1;
	o.out_fd = STDOUT_FILENO;
	cmd_diff_protected(st, id);
	/* A pipe or a file gets git's own bytes (names quoted): a patch that applies. */
	if (isatty(STDOUT_FILENO) && (tmp = tmpfile()) != NULL)
		o.out_fd = fileno(tmp);
	else {
		o.color = cli_color();
		o.quote_names = true;
	}
	fflush(stdout);
	if ((rc = snap_diff(st, cf, id, &o, &cause)) == -1)
		cli_error("%s", cause);
	if (gone)
		out_printf(stderr, "agentmux: diff: session %lld's worktree "
		    "was discarded: this diff ends at its last snapshot\n",
		    (long long)id);
	if (rc == 0 && tmp != NULL)
		cmd_diff_show(tmp, cli_color());
	if (tmp != NULL)
		fclose(tmp);
	if (alert != NULL) {
		fflush(stdout);
		cmd_snap_alert("diff", alert);
		free(alert);
	}
	free(cause);
	store_close(st);
	config_free(cf);
	return rc == 0 ? 0 : 1;
}

int
cmd_undo(struct cli_args *args)
{
	struct snap_undo_opts o;
	struct store *st = NULL;
	struct config *cf = NULL;
	char *cause = NULL;
	int64_t id = -1;
	bool shown;
	int rc;

	memset(&o, 0, sizeof o);
	o.to = cli_get(args, "to");
	o.dry_run = cli_has(args, "dry-run");
	o.refs = cli_has(args, "refs");
	o.force = cli_has(args, "force");
	if ((rc = cmd_snap_open(args->argv[0], &cf, &st, &id)) != 0)
		return rc;
	o.paths = args->argv + 1;
	o.out = stdout;
	cmd_snap_progress_on(&shown);
	rc = snap_undo(st, cf, id, &o, &cause);
	cmd_snap_progress_off(&shown);
	if (rc == -1)
		cli_error("undo: %s", cause);
	free(cause);
	store_close(st);
	config_free(cf);
	return rc == 0 ? 0 : 1;
}

int
cmd_confdiff(struct cli_args *args)
{
	struct snap_confdiff_opts o;
	struct store *st = NULL;
	struct config *cf = NULL;
	char *cause = NULL;
	int64_t id = -1;
	bool apply = cli_has(args, "apply"), discard = cli_has(args, "discard");
	int rc;

	if (apply && discard)
		return cli_usage_error("confdiff", "give --apply or --discard, "
		    "not both");
	if ((rc = cmd_snap_open(args->argv[0], &cf, &st, &id)) != 0)
		return rc;
	memset(&o, 0, sizeof o);
	o.paths = args->argv + 1;
	o.color = cli_color();
	o.force = cli_has(args, "force");
	o.out = stdout;
	o.cf = cf;
	if (!apply && !discard)
		rc = snap_confdiff_show(st, id, &o, &cause);
	else if ((rc = snap_confdiff_apply(st, id, &o, apply,
	    &cause)) == 0)
		out_printf(stdout, "no pending config changes%s\n",
		    o.paths[0] != NULL ? " under those paths" : "");
	if (rc == -1)
		cli_error("confdiff: %s", cause);
	free(cause);
	store_close(st);
	config_free(cf);
	return rc == -1 ? 1 : 0;
}
