/* The helpers commands share: usage errors, the store and config, times, aligned tables. */
#include <sys/stat.h>

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "core/core.h"
#include "store/store.h"

int
cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	bool top = strcmp(cmd, "agentmux") == 0;

	/* The dashboard is the command line with no command name. */
	out_printf(stderr, "agentmux%s%s: ", top ? "" : " ", top ? "" : cmd);
	va_start(ap, fmt);
	out_vprintf(stderr, fmt, ap);
	va_end(ap);
	out_printf(stderr, "; see 'agentmux%s%s --help'\n", top ? "" : " ",
	    top ? "" : cmd);
	return 2;
}

int
cli_error(const char *fmt, ...)
{
	va_list ap;

	out_puts(stderr, "agentmux: ");
	va_start(ap, fmt);
	out_vprintf(stderr, fmt, ap);
	va_end(ap);
	out_puts(stderr, "\n");
	return 1;
}

struct store *
cli_open_store(void)
{
	struct store *st;
	char *cause = NULL;

	if ((st = store_open(NULL, &cause)) == NULL) {
		cli_error("%s", cause);
		free(cause);
	}
	return st;
}

struct config *
cli_load_config(void)
{
	struct config *cf;
	char *cause = NULL;

	if ((cf = config_load_or_cause(NULL, &cause)) == NULL) {
		cli_error("%s", cause);
		free(cause);
	}
	return cf;
}

/*
 * "last" from the physical directory, checked against the logical $PWD when
 * it names the same directory: a symlink that an agent made in one project
 * to another must not let "last" take the other's session unnoticed.
 */
int64_t
cli_last_here(struct store *st, char **cause)
{
	struct store_session *ls, *ps;
	struct stat sb, pb;
	struct strv q;
	const char *pwd = getenv("PWD");
	char *cwd;
	int64_t id, lid = 0;

	if ((cwd = realpath(".", NULL)) == NULL)
		return 0;
	id = store_session_last_in(st, cwd);
	if (pwd != NULL && *pwd == '/' && strcmp(pwd, cwd) != 0 &&
	    stat(".", &sb) == 0 && stat(pwd, &pb) == 0 &&
	    sb.st_dev == pb.st_dev && sb.st_ino == pb.st_ino)
		lid = store_session_last_in(st, pwd);
	free(cwd);
	if (id == 0 || lid == 0 || lid == id)
		return id;
	ls = store_session_get(st, lid);
	ps = store_session_get(st, id);
	strv_init(&q);
	*cause = xprintf("\"last\" is ambiguous here: this directory is in "
	    "project %s by the path you came through and in project %s by "
	    "where it really is (a symlink); name the session by its id "
	    "(`agentmux sessions` lists them)", quote_keep(&q, ls != NULL ?
	    ls->project : "?"), quote_keep(&q, ps != NULL ? ps->project : "?"));
	strv_free(&q);
	store_session_free(ls);
	store_session_free(ps);
	return -1;
}

/* Says on stderr which session "last" chose, before the command acts on it. */
static void
cli_say_last(struct store *st, int64_t id, bool here)
{
	struct store_session *ss;
	struct strv q;
	char when[32];

	if ((ss = store_session_get(st, id)) == NULL)
		return;
	strv_init(&q);
	util_fmt_time(when, sizeof when, ss->started_at);
	out_printf(stderr, "agentmux: last is session %lld (%s in %s, started "
	    "%s), %s\n", (long long)id, quote_keep(&q, ss->agent),
	    quote_keep(&q, ss->project), when, here ? "the last in the project "
	    "you are in" : "the last of all: you are in no session's project");
	strv_free(&q);
	store_session_free(ss);
}

int
cli_resolve_session(struct store *st, const char *spec, int64_t *id)
{
	char *cause = NULL;
	int64_t here = 0;

	if (strcmp(spec, "last") == 0 &&
	    (here = cli_last_here(st, &cause)) == -1) {
		cli_error("%s", cause);
		free(cause);
		return -1;
	}
	if (here != 0)
		*id = here;
	else if (store_session_resolve(st, spec, id, &cause) == -1) {
		cli_error("%s", cause);
		free(cause);
		return -1;
	}
	if (strcmp(spec, "last") == 0)
		cli_say_last(st, *id, here != 0);
	return 0;
}

const char *
cli_iso_time(char *buf, size_t len, int64_t ms)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	char tmp[32];

	gmtime_r(&t, &tm);
	strftime(tmp, sizeof tmp, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%03dZ", tmp, (int)(ms % 1000));
	return buf;
}

void
cli_request_json(struct json *j, const struct request *r)
{
	char t[40];

	json_kint(j, "id", r->id);
	json_kint(j, "session", r->session_id);
	json_kstr(j, "time", cli_iso_time(t, sizeof t, r->started_at));
	json_kstr(j, "decision", r->decision);
	json_kstr(j, "rule", r->rule);
	json_kstr(j, "method", r->method);
	json_kstr(j, "scheme", r->scheme);
	json_kstr(j, "host", r->host);
	json_kint(j, "port", r->port);
	json_kstr(j, "path", r->path);
	json_kstr(j, "http_version", r->http_version);
	if (r->status > 0)
		json_kint(j, "status", r->status);
	else
		json_knull(j, "status");
	json_kstr(j, "status_text", r->status_text);
	json_kint(j, "bytes_up", r->bytes_up);
	json_kint(j, "bytes_down", r->bytes_down);
	if (r->ttfb_us >= 0)
		json_kint(j, "ttfb_us", r->ttfb_us);
	else
		json_knull(j, "ttfb_us");
	json_kint(j, "duration_us", r->duration_us);
	json_kstr(j, "error", r->error);
	json_kstr(j, "request_headers", r->req_headers);
	json_kstr(j, "response_headers", r->resp_headers);
	json_kstr(j, "mime_type", r->mime_type);
}

bool
cli_color(void)
{
	const char *nc = getenv("NO_COLOR");

	return isatty(STDOUT_FILENO) && (nc == NULL || *nc == '\0');
}

void
cli_table_init(struct cli_table *t, size_t ncols, const char *const *headers)
{
	memset(t, 0, sizeof *t);
	t->ncols = ncols;
	t->right = xcalloc(ncols, sizeof *t->right);
	cli_table_add(t, headers);
}

void
cli_table_add(struct cli_table *t, const char *const *cells)
{
	size_t i;

	t->cells = xreallocarray(t->cells, (t->nrows + 1) * t->ncols,
	    sizeof *t->cells);
	for (i = 0; i < t->ncols; i++) {
		t->cells[t->nrows * t->ncols + i] = xstrdup(cells[i] != NULL &&
		    *cells[i] != '\0' ? cells[i] : "-");
	}
	t->nrows++;
}

void
cli_table_right(struct cli_table *t, size_t col)
{
	t->right[col] = true;
}

/* Display width of UTF-8 text, counting code points. */
static size_t
cli_width(const char *s)
{
	size_t w = 0;

	for (; *s != '\0'; s++) {
		if (((unsigned char)*s & 0xc0) != 0x80)
			w++;
	}
	return w;
}

void
cli_table_print(struct cli_table *t, FILE *fp)
{
	size_t *w = xcalloc(t->ncols, sizeof *w), r, c, cw, pad;
	const char *cell;
	struct buf line;

	for (r = 0; r < t->nrows; r++) {
		for (c = 0; c < t->ncols; c++) {
			cw = cli_width(t->cells[r * t->ncols + c]);
			if (cw > w[c])
				w[c] = cw;
		}
	}
	/* A row at a time through the quoting helper. */
	buf_init(&line);
	for (r = 0; r < t->nrows; r++) {
		buf_reset(&line);
		for (c = 0; c < t->ncols; c++) {
			cell = t->cells[r * t->ncols + c];
			pad = w[c] - cli_width(cell);
			if (t->right[c])
				buf_printf(&line, "%*s%s", (int)pad, "", cell);
			else if (c + 1 < t->ncols)
				buf_printf(&line, "%s%*s", cell, (int)pad, "");
			else
				buf_adds(&line, cell);
			buf_adds(&line, c + 1 < t->ncols ? "  " : "\n");
		}
		out_puts(fp, line.data);
	}
	buf_free(&line);
	free(w);
}

void
cli_table_free(struct cli_table *t)
{
	size_t i;

	for (i = 0; i < t->nrows * t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	free(t->right);
}
