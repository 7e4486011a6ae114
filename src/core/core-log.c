/* Log lines and fatal errors, the only way agentmux reports trouble on stderr. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core.h"

static FILE *log_fp;
static enum log_level log_threshold = LOG_LEVEL_WARN;
static void (*log_hook)(enum log_level, const char *, void *);
static void *log_hook_arg;
/* The thread that set the hook, the only one it is called on (it touches the loop's state). */
static pthread_t log_hook_thread;

void
log_init(FILE *fp, enum log_level level)
{
	log_fp = fp;
	log_threshold = level;
}

void
log_set_hook(void (*hook)(enum log_level, const char *, void *), void *arg)
{
	log_hook = hook;
	log_hook_arg = arg;
	log_hook_thread = pthread_self();
}

static void
log_vwrite(enum log_level level, int errnum, const char *fmt, va_list ap)
{
	char *msg, *line;
	bool hooked;

	xvasprintf(&msg, fmt, ap);
	if (errnum != 0)
		xasprintf(&line, "%s: %s", msg, strerror(errnum));
	else
		line = xstrdup(msg);
	free(msg);
	hooked = log_hook != NULL && level <= LOG_LEVEL_INFO;
	/* A helper thread's line goes to the log file alone (the server's stderr is it). */
	if (hooked && pthread_equal(pthread_self(), log_hook_thread))
		log_hook(level, line, log_hook_arg);
	else if (hooked || level <= log_threshold)
		out_printf(log_fp != NULL ? log_fp : stderr, "agentmux: %s\n",
		    line);
	free(line);
}

void
log_warn(const char *fmt, ...)
{
	va_list ap;
	int saved = errno;

	va_start(ap, fmt);
	log_vwrite(LOG_LEVEL_WARN, saved, fmt, ap);
	va_end(ap);
	errno = saved;
}

void
log_warnx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vwrite(LOG_LEVEL_WARN, 0, fmt, ap);
	va_end(ap);
}

void
log_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vwrite(LOG_LEVEL_INFO, 0, fmt, ap);
	va_end(ap);
}

void
log_debug(const char *fmt, ...)
{
	va_list ap;

	if (log_threshold < LOG_LEVEL_DEBUG)
		return;
	va_start(ap, fmt);
	log_vwrite(LOG_LEVEL_DEBUG, 0, fmt, ap);
	va_end(ap);
}

/*
 * Prints "agentmux: MSG[: ERR]" through the quoting helper without
 * allocating: fatal is what an allocation failure calls.
 */
static bool log_is_forked;

void
log_forked(void)
{
	log_is_forked = true;
}

static void
log_fatal_write(const char *msg, const char *err)
{
	char out[8192], line[8400];
	int n;

	quote_text_fixed(out, sizeof out, msg);
	if (log_is_forked) {
		n = snprintf(line, sizeof line, "agentmux: %s%s%s\n", out,
		    err != NULL ? ": " : "", err != NULL ? err : "");
		if (n > 0)
			/* raw: MSG quoted above */
			(void)util_write_all(STDERR_FILENO, line, /* raw: quoted */
			    (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
		_exit(1);
	}
	fprintf(stderr, "agentmux: %s%s%s\n", out, /* raw: quoted above */
	    err != NULL ? ": " : "", err != NULL ? err : "");
}

void
fatal(const char *fmt, ...)
{
	va_list ap;
	char msg[2048];
	int saved = errno;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	log_fatal_write(msg, strerror(saved));
	exit(1);
}

void
fatalx(const char *fmt, ...)
{
	va_list ap;
	char msg[2048];

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	log_fatal_write(msg, NULL);
	exit(1);
}
