/* The proxy in the session layer: one proxy per context, one proxy session per session, its events into the store. */

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libpsl.h>

#include "proxy/proxy.h"
#include "session-int.h"

_Static_assert(PROXY_SYNTH_NET == JAIL_SYNTH_NET &&
    PROXY_SYNTH_PREFIX == JAIL_SYNTH_PREFIX,
    "the jail redirects the range the proxy's resolver gives out");
#include "store/store.h"

/* Where the jail's bundle is shown (jail-mount.c binds it there). */
#define SESSION_JAIL_CA_BUNDLE "/etc/ssl/certs/ca-certificates.crt"
#define SESSION_SECRET_CMD_SECS 10
#define SESSION_SECRET_MAX (64 * 1024)

/* One brokered secret of a session: the jail's variable, its placeholder, the value. */
struct session_secret {
	char *name;
	char *env;
	char *placeholder;
	char *value;
	char *header;
	struct strv hosts;
};

/* ---- the context ---- */

int
session_proxy_ctx_init(struct session_ctx *ctx, char **cause)
{
	const struct config_proxy *cp = &ctx->cf->proxy;
	struct proxy_conf pc;
	struct strv cas;
	size_t i;

	strv_init(&cas);
	for (i = 0; i < cp->upstream_ca.n; i++)
		strv_add(&cas, cp->upstream_ca.v[i]);
	for (i = 0; i < ctx->upstream_ca.n; i++)
		strv_add(&cas, ctx->upstream_ca.v[i]);
	memset(&pc, 0, sizeof pc);
	pc.data_dir = ctx->data_dir;
	pc.upstream_ca = cas.v;
	pc.connect_to = cp->connect_to.v;
	pc.connect_timeout = (int)cp->connect_timeout;
	pc.idle_timeout = (int)cp->idle_timeout;
	pc.client_timeout = (int)cp->client_timeout;
	pc.max_connections = (int)cp->max_connections;
	pc.max_body_record = (size_t)cp->max_body_record;
	ctx->px = proxy_create(ctx->base, &pc, cause);
	strv_free(&cas);
	return ctx->px == NULL ? -1 : 0;
}

void
session_proxy_ctx_free(struct session_ctx *ctx)
{
	proxy_free(ctx->px);
	ctx->px = NULL;
}

const char *
session_proxy_ca_bundle(struct session_ctx *ctx)
{
	return ctx->px != NULL ? proxy_ca_bundle_path(ctx->px) : NULL;
}

const char *
session_ctx_ca_cert(struct session_ctx *ctx)
{
	return ctx->px != NULL ? proxy_ca_cert_path(ctx->px) : NULL;
}

/* ---- secrets ---- */

static void
session_proxy_trim(struct buf *b)
{
	while (b->len > 0 && (b->data[b->len - 1] == '\n' ||
	    b->data[b->len - 1] == '\r'))
		b->data[--b->len] = '\0';
}

/* Keeps a secret command's output up to SESSION_SECRET_MAX; more is an error. */
struct session_proxy_out {
	struct buf *out;
	bool over;
};

static void
session_proxy_chunk(void *arg, const char *data, size_t len)
{
	struct session_proxy_out *po = arg;

	if (po->out->len + len > SESSION_SECRET_MAX) {
		po->over = true;
		return;
	}
	buf_add(po->out, data, len);
}

/* A secret command running for a session's start. */
struct session_secret_job {
	struct session *s;
	const struct config_secret *cs;
	struct proc *p;
	struct buf out;
	struct session_proxy_out po;
	char *value;                 /* once in; NULL: none (said in a notice) */
};

/* Why a secret command that ended failed (-1, *CAUSE), or 0. */
static int
session_proxy_run_result(struct proc *p, const char *command, bool over,
    char **cause)
{
	struct buf *err = proc_err(p), why;
	int status = proc_status(p);

	/* Its first line of complaint, escaped, goes into the cause. */
	buf_init(&why);
	if (err->len > 0)
		quote_line_add(&why, err->data, strcspn(err->data, "\n"));
	if (over)
		*cause = xprintf("'%s' printed more than %d bytes; a secret is "
		    "one line", command, SESSION_SECRET_MAX);
	else if (status == 128 + SIGKILL)
		*cause = xprintf("'%s' took over %d s and was stopped", command,
		    SESSION_SECRET_CMD_SECS);
	else if (status != 0)
		*cause = xprintf("'%s' failed (exit status %d)%s%s", command,
		    status, why.len > 0 ? ": " : "", why.len > 0 ?
		    why.data : "");
	buf_free(&why);
	return over || status != 0 ? -1 : 0;
}

/* The trimmed value in B, or NULL with *CAUSE if it is empty; B is wiped. */
static char *
session_proxy_secret_take(const struct config_secret *cs, struct buf *b,
    int rc, char **cause)
{
	session_proxy_trim(b);
	if (rc == -1 || b->len == 0) {
		if (rc == 0)
			*cause = xprintf("[secret %s] is empty", cs->name);
		if (b->data != NULL)
			explicit_bzero(b->data, b->len);
		buf_free(b);
		return NULL;
	}
	return buf_steal(b);
}

/*
 * The value of secret CS from the caller's environment or a file; NULL
 * when its source is unset (then it is not passed), or with *CAUSE when
 * the source is there but fails. (A command's is read on the loop.)
 */
static char *
session_proxy_secret_value(const struct session *s,
    const struct config_secret *cs, char **cause)
{
	const char *v;
	char *path;
	struct buf b;
	int rc = 0;

	if (cs->from_env != NULL) {
		v = session_getenv(s, cs->from_env);
		return v != NULL && *v != '\0' ? xstrdup(v) : NULL;
	}
	buf_init(&b);
	if (cs->file != NULL) {
		path = path_expand_home(cs->file);
		if ((rc = buf_read_file(&b, path)) == -1)
			*cause = xprintf("[secret %s]: cannot read %s: %s",
			    cs->name, path, strerror(errno));
		free(path);
	}
	return session_proxy_secret_take(cs, &b, rc, cause);
}

static void
session_proxy_secret_free(struct session_secret *ss)
{
	free(ss->name);
	free(ss->env);
	free(ss->placeholder);
	if (ss->value != NULL)
		explicit_bzero(ss->value, strlen(ss->value));
	free(ss->value);
	free(ss->header);
	strv_free(&ss->hosts);
}

static void
session_proxy_notice(struct session *s, const char *level, const char *msg)
{
	store_event_add(s->ctx->st, s->id, strcmp(level, "alert") == 0 ?
	    "error" : level, "proxy", "%s", msg);
	if (s->ev.notice != NULL)
		s->ev.notice(s->arg, s, level, msg);
}

/* A secret command ended: its value is kept, or why not is said. */
static void
session_proxy_job_done(struct proc *p, void *arg)
{
	struct session_secret_job *j = arg;
	struct session *s = j->s;
	char *err = NULL;
	int rc;

	rc = session_proxy_run_result(p, j->cs->command, j->po.over, &err);
	j->value = session_proxy_secret_take(j->cs, &j->out, rc, &err);
	proc_free(p);
	j->p = NULL;
	if (err != NULL)
		session_proxy_notice(s, "warn", err);
	free(err);
	if (--s->secrets_pending == 0 && s->secrets_done != NULL)
		s->secrets_done(s);
}

/*
 * Runs CS's command with sh -c through the child-process runner on the
 * loop; it is killed past SESSION_SECRET_CMD_SECS and its output kept up
 * to SESSION_SECRET_MAX. Its stderr is not let onto the terminal (the
 * dashboard owns it): its first line is told when the command fails.
 */
static void
session_proxy_job_start(struct session *s, struct session_secret_job *j)
{
	char *argv[] = { "sh", "-c", (char *)j->cs->command, NULL };
	struct proc_opts o;
	char *err = NULL;

	buf_init(&j->out);
	j->po.out = &j->out;
	memset(&o, 0, sizeof o);
	o.argv = argv;
	o.exe = "/bin/sh";
	o.out_fd = -1;
	o.umask = -1;
	o.chunk = session_proxy_chunk;
	o.chunk_arg = &j->po;
	o.timeout = SESSION_SECRET_CMD_SECS;
	o.err_max = 512;
	/* It may ask on the terminal (age -d, pass with a terminal pinentry). */
	o.keep_tty = true;
	if ((j->p = proc_start(s->ctx->base, &o, session_proxy_job_done, j,
	    &err)) != NULL) {
		s->secrets_pending++;
		return;
	}
	session_proxy_notice(s, "warn", err);
	free(err);
}

/*
 * Gets the profile's secrets: from the environment and files at once,
 * from commands on the loop (session_proxy_secrets_wait).
 */
static void
session_proxy_load_secrets(struct session *s, const struct config_agent *a)
{
	const struct config_secret *cs;
	struct session_secret_job *j;
	char *err = NULL;
	size_t i;

	if (a == NULL || a->secrets.n == 0)
		return;
	s->secret_jobs = xcalloc(a->secrets.n, sizeof *s->secret_jobs);
	for (i = 0; i < a->secrets.n; i++) {
		if ((cs = config_secret(s->cf, a->secrets.v[i])) == NULL)
			continue;
		j = &s->secret_jobs[s->nsecret_jobs++];
		j->s = s;
		j->cs = cs;
		if (cs->command != NULL && cs->from_env == NULL &&
		    cs->file == NULL) {
			session_proxy_job_start(s, j);
			continue;
		}
		if ((j->value = session_proxy_secret_value(s, cs, &err)) == NULL &&
		    err != NULL)
			session_proxy_notice(s, "warn", err);
		free(err);
		err = NULL;
	}
}

bool
session_proxy_secrets_wait(struct session *s,
    void (*done)(struct session *))
{
	s->secrets_done = done;
	return s->secrets_pending > 0;
}

/* Lets go of secret commands still running, and of values not taken. */
void
session_proxy_secrets_drop(struct session *s)
{
	struct session_secret_job *j;
	size_t i;

	for (i = 0; i < s->nsecret_jobs; i++) {
		j = &s->secret_jobs[i];
		proc_free(j->p);
		if (j->p != NULL && j->out.data != NULL)
			explicit_bzero(j->out.data, j->out.len);
		buf_free(&j->out);
		if (j->value != NULL) {
			explicit_bzero(j->value, strlen(j->value));
			free(j->value);
		}
	}
	free(s->secret_jobs);
	s->secret_jobs = NULL;
	s->nsecret_jobs = 0;
	s->secrets_pending = 0;
}

/*
 * Once every value is in, in the profile's order: each secret gets the
 * placeholder the jail will see, the same in every session of this user
 * (agents remember a key they were told to trust by its value). -1 and
 * CAUSE if the user's placeholder key cannot be used.
 */
int
session_proxy_secrets_finish(struct session *s, char **cause)
{
	struct session_secret_job *j;
	struct session_secret *ss;
	unsigned char key[PROXY_SECRET_KEY_LEN];
	char *err = NULL;
	bool have_key = false;
	size_t i;

	for (i = 0; i < s->nsecret_jobs; i++) {
		j = &s->secret_jobs[i];
		if (j->value == NULL)
			continue;
		if (!have_key && proxy_secret_key(s->ctx->data_dir, key,
		    &err) == -1) {
			*cause = xprintf("[secret %s]: %s", j->cs->name, err);
			free(err);
			session_proxy_secrets_drop(s);
			return -1;
		}
		have_key = true;
		s->secrets = xreallocarray(s->secrets, s->nsecrets + 1,
		    sizeof *s->secrets);
		ss = &s->secrets[s->nsecrets++];
		memset(ss, 0, sizeof *ss);
		ss->name = xstrdup(j->cs->name);
		ss->env = xstrdup(j->cs->env);
		ss->value = j->value;
		j->value = NULL;
		ss->placeholder = proxy_secret_placeholder_keyed(key,
		    j->cs->name, ss->value);
		ss->header = j->cs->header != NULL ? xstrdup(j->cs->header) :
		    NULL;
		strv_init(&ss->hosts);
		for (size_t k = 0; k < j->cs->hosts.n; k++)
			strv_add(&ss->hosts, j->cs->hosts.v[k]);
	}
	explicit_bzero(key, sizeof key);
	session_proxy_secrets_drop(s);
	return 0;
}

void
session_proxy_env(struct session *s, struct strv *env)
{
	static const char *const ca_vars[] = { "SSL_CERT_FILE",
		"NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
		"GIT_SSL_CAINFO" };
	size_t i;

	for (i = 0; i < nitems(ca_vars); i++)
		strv_setenv(env, ca_vars[i], SESSION_JAIL_CA_BUNDLE);
	/* Nothing bypasses the proxy: there is nothing else to reach. */
	strv_setenv(env, "NO_PROXY", "");
	strv_setenv(env, "no_proxy", "");
	for (i = 0; i < s->nsecrets; i++)
		strv_setenv(env, s->secrets[i].env,
		    s->secrets[i].placeholder);
}

/* ---- the policy ---- */

static int
session_proxy_add(struct proxy_policy *pol, const char *verb,
    const char *text, const char *origin, char **cause)
{
	char *err = NULL;

	if (proxy_policy_add(pol, verb, text, origin, &err) == 0)
		return 0;
	*cause = xprintf("rule '%s %s' (%s): %s", verb, text, origin, err);
	free(err);
	return -1;
}

/* Built-in profile rules, [policy], the agent's rules, --allow/--deny. */
/* The answers given for the session by the run this one restarts. */
static int
session_proxy_add_kept(struct session *s, struct proxy_policy *pol,
    char **cause)
{
	const char *rule, *sp;
	char *verb;
	size_t i;
	int rc = 0;

	for (i = 0; i < s->kept.n && rc == 0; i++) {
		rule = s->kept.v[i];
		if ((sp = strchr(rule, ' ')) == NULL)
			continue;
		verb = xstrndup(rule, (size_t)(sp - rule));
		rc = session_proxy_add(pol, verb, sp + 1,
		    "answered for the session", cause);
		free(verb);
	}
	return rc;
}

static struct proxy_policy *
session_proxy_policy(struct session *s, const struct config_agent *a,
    char **cause)
{
	const struct config_rules *sets[2] = { &s->cf->rules,
		a != NULL ? &a->rules : NULL };
	struct proxy_policy *pol = proxy_policy_create();
	const struct config_rule *r;
	size_t i, j;

	for (i = 0; i < nitems(sets); i++) {
		for (j = 0; sets[i] != NULL && j < sets[i]->n; j++) {
			r = &sets[i]->v[j];
			if (session_proxy_add(pol, r->verb, r->text, r->origin,
			    cause) == -1)
				goto fail;
		}
	}
	for (i = 0; i < s->allow.n; i++) {
		if (session_proxy_add(pol, "allow", s->allow.v[i], "--allow",
		    cause) == -1)
			goto fail;
	}
	for (i = 0; i < s->deny.n; i++) {
		if (session_proxy_add(pol, "deny", s->deny.v[i], "--deny",
		    cause) == -1)
			goto fail;
	}
	if (session_proxy_add_kept(s, pol, cause) == -1)
		goto fail;
	return pol;
fail:
	proxy_policy_free(pol);
	return NULL;
}

int
session_proxy_check(const struct session_opts *o, char **cause)
{
	char *const *lists[2] = { o->allow, o->deny };
	const char *verbs[2] = { "allow", "deny" };
	char *err = NULL;
	size_t i, j;

	for (i = 0; i < 2; i++) {
		for (j = 0; lists[i] != NULL && lists[i][j] != NULL; j++) {
			if (proxy_policy_validate(verbs[i], lists[i][j],
			    &err) == 0)
				continue;
			*cause = xprintf("--%s '%s': %s", verbs[i],
			    lists[i][j], err);
			free(err);
			return -1;
		}
	}
	return 0;
}

int
session_proxy_prepare(struct session *s, const struct config_agent *a,
    char **cause)
{
	if ((s->policy = session_proxy_policy(s, a, cause)) == NULL)
		return -1;
	session_proxy_load_secrets(s, a);
	return 0;
}

/* ---- what the proxy reports ---- */

/* Says once that the session's records reached their budget (the store has recorded it). */
static void
session_proxy_budget(struct session *s)
{
	if (s->budget_told || !store_budget_hit(s->ctx->st, s->id))
		return;
	s->budget_told = true;
	if (s->ev.notice != NULL)
		s->ev.notice(s->arg, s, "warn", "this session's records reached "
		    "[proxy] record_budget: further requests are counted, not "
		    "stored");
}

AM_TESTABLE void
session_proxy_request(void *arg, const struct request *r)
{
	struct session *s = arg;

	session_state_request(s, r);
	if (r->done) {
		store_request_add(s->ctx->st, r);
		session_proxy_budget(s);
		if (strcmp(r->decision, "deny") == 0)
			session_proxy_note_denied(s, r->host, r->port,
			    r->error);
		else if (r->status > 0)
			session_snap_request_done(s, r->host);
	}
	if (s->ev.request != NULL)
		s->ev.request(s->arg, s, r);
}

static void
session_proxy_ask(void *arg, const struct proxy_ask *q)
{
	struct session *s = arg;
	struct session_ask a;

	memset(&a, 0, sizeof a);
	a.id = q->id;
	a.host = q->host;
	a.port = q->port;
	a.method = q->method;
	a.path = q->path;
	a.scheme = q->scheme;
	a.waiting = q->waiting;
	a.asked_at = q->asked_at;
	a.deadline_mono_us = q->deadline_mono_us;
	a.paused = q->paused;
	session_state_ask(s, q->id, true);
	if (s->ev.ask != NULL)
		s->ev.ask(s->arg, s, &a);
}

static bool
session_proxy_allows(enum proxy_answer a)
{
	return a == PROXY_ALLOW_ONCE || a == PROXY_ALLOW_SESSION ||
	    a == PROXY_ALLOW_ALWAYS;
}

static const char *
session_proxy_scope(enum proxy_answer a)
{
	switch (a) {
	case PROXY_ALLOW_ONCE:
	case PROXY_DENY_ONCE:
		return "once";
	case PROXY_ALLOW_SESSION:
	case PROXY_DENY_SESSION:
		return "session";
	case PROXY_ALLOW_ALWAYS:
	case PROXY_DENY_ALWAYS:
		return "always";
	}
	return "once";
}

/* An "always" answer becomes a rule in the config file, comments kept. */
static void
session_proxy_always(struct session *s, const struct proxy_ask *q, bool allow)
{
	char *path, *rule, *cause = NULL, *msg;
	bool v6 = strchr(q->host, ':') != NULL;
	bool tls = q->scheme != NULL && strcmp(q->scheme, "http") != 0 &&
	    strcmp(q->scheme, "ws") != 0;

	path = s->cf->path != NULL ? xstrdup(s->cf->path) :
	    path_config_file();
	if (q->rule != NULL)
		rule = xstrdup(q->rule);   /* the scope the user chose */
	else if (q->port == (tls ? 443 : 80))
		rule = xprintf(v6 ? "[%s]" : "%s", q->host);
	else
		rule = xprintf(v6 ? "[%s]:%d" : "%s:%d", q->host, q->port);
	if (config_append(path, "policy", allow ? "allow" : "deny", rule,
	    &cause) == -1) {
		msg = xprintf("cannot save `%s %s` to %s: %s", allow ? "allow" :
		    "deny", rule, path, cause);
		session_proxy_notice(s, "warn", msg);
		free(msg);
		free(cause);
	} else {
		msg = xprintf("saved `%s %s` to %s", allow ? "allow" : "deny",
		    rule, path);
		session_proxy_notice(s, "info", msg);
		free(msg);
	}
	free(rule);
	free(path);
}

/* A restart of the session keeps what was answered for the session. */
static void
session_proxy_keep(struct session *s, const struct proxy_ask *q,
    const char *verb)
{
	char *rule = proxy_host_rule(q->host, q->port, q->scheme);

	strv_addf(&s->kept, "%s %s", verb, rule);
	free(rule);
}

static void
session_proxy_answered(void *arg, const struct proxy_ask *q,
    enum proxy_answer a, const char *by)
{
	struct session *s = arg;
	struct store_decision d;
	bool allow = session_proxy_allows(a);

	memset(&d, 0, sizeof d);
	d.session_id = s->id;
	d.asked_at = q->asked_at;
	d.answered_at = util_now_ms();
	d.host = (char *)q->host;
	d.port = q->port;
	d.method = (char *)q->method;
	d.path = (char *)q->path;
	d.answer = allow ? "allow" : "deny";
	d.scope = (char *)session_proxy_scope(a);
	d.by = (char *)by;
	d.waiting = q->waiting;
	store_decision_add(s->ctx->st, &d);
	if (a == PROXY_ALLOW_SESSION || a == PROXY_DENY_SESSION)
		session_proxy_keep(s, q, d.answer);
	if (a == PROXY_ALLOW_ALWAYS || a == PROXY_DENY_ALWAYS)
		session_proxy_always(s, q, allow);
	session_state_ask(s, q->id, false);
	if (s->ev.answered != NULL)
		s->ev.answered(s->arg, s, q->id, d.answer, by);
}

static void
session_proxy_alert(void *arg, const char *kind, const char *message)
{
	struct session *s = arg;

	if (strcmp(kind, "exfiltration") == 0)
		store_session_flag(s->ctx->st, s->id, kind);
	store_event_add(s->ctx->st, s->id, strcmp(kind, "exfiltration") == 0 ?
	    "error" : "warn", kind, "%s", message);
	if (s->ev.notice != NULL)
		s->ev.notice(s->arg, s, strcmp(kind, "exfiltration") == 0 ?
		    "alert" : "warn", message);
}

/* ---- serving ---- */

int
session_proxy_serve(struct session *s, int fd, char **cause)
{
	static const struct proxy_session_cbs cbs = {
		.request = session_proxy_request,
		.ask = session_proxy_ask,
		.answered = session_proxy_answered,
		.alert = session_proxy_alert,
	};
	struct proxy_session_conf sc;
	struct proxy_secret *ps;
	char *label;
	size_t i;

	if (fd == -1) {
		*cause = xstrdup("the jail handed out no proxy listener");
		return -1;
	}
	ps = xcalloc(s->nsecrets + 1, sizeof *ps);
	for (i = 0; i < s->nsecrets; i++) {
		ps[i].name = s->secrets[i].name;
		ps[i].placeholder = s->secrets[i].placeholder;
		ps[i].value = s->secrets[i].value;
		ps[i].hosts = s->secrets[i].hosts.v;
		ps[i].header = s->secrets[i].header;
	}
	label = xprintf("session %lld", (long long)s->id);
	memset(&sc, 0, sizeof sc);
	sc.listen_fd = fd;
	sc.session_id = s->id;
	sc.policy = s->policy;
	sc.ask = s->on_unknown == CONFIG_ASK && s->ev.ask != NULL;
	sc.prompt_timeout = (int)s->cf->prompt_timeout;
	sc.secrets = ps;
	sc.nsecrets = s->nsecrets;
	sc.label = label;
	sc.redirect_fd = sc.dns_udp_fd = sc.dns_tcp_fd = -1;
	if (s->jail != NULL && s->cf->proxy.transparent) {
		sc.transparent = true;
		jail_take_net_fds(s->jail, &sc.redirect_fd, &sc.dns_udp_fd,
		    &sc.dns_tcp_fd);
	}
	s->policy = NULL;   /* the proxy session owns it, even on failure */
	s->ps = proxy_session_create(s->ctx->px, &sc, &cbs, s, cause);
	free(ps);
	free(label);
	return s->ps == NULL ? -1 : 0;
}

void
session_proxy_end(struct session *s)
{
	size_t i;

	proxy_session_free(s->ps);
	s->ps = NULL;
	proxy_policy_free(s->policy);
	s->policy = NULL;
	for (i = 0; i < s->nsecrets; i++)
		session_proxy_secret_free(&s->secrets[i]);
	free(s->secrets);
	s->secrets = NULL;
	s->nsecrets = 0;
	strv_free(&s->denied);
	for (i = 0; i < s->ndenials; i++) {
		free(s->denials[i].dest);
		free(s->denials[i].why);
	}
	free(s->denials);
	s->denials = NULL;
	s->ndenials = 0;
}

void
session_proxy_stop_accepting(struct session *s)
{
	if (s->ps != NULL)
		proxy_session_stop_accepting(s->ps);
}

/* ---- what front ends ask ---- */

/* Debian's public suffix list (package publicsuffix): without it, no scope spans a domain. */
#define SESSION_PSL_FILE "/usr/share/publicsuffix/public_suffix_list.dat"


static enum proxy_answer
session_proxy_answer_of(enum session_answer a)
{
	switch (a) {
	case SESSION_ALLOW_ONCE:
		return PROXY_ALLOW_ONCE;
	case SESSION_ALLOW_SESSION:
		return PROXY_ALLOW_SESSION;
	case SESSION_ALLOW_ALWAYS:
		return PROXY_ALLOW_ALWAYS;
	case SESSION_DENY_ONCE:
		return PROXY_DENY_ONCE;
	case SESSION_DENY_SESSION:
		return PROXY_DENY_SESSION;
	case SESSION_DENY_ALWAYS:
		return PROXY_DENY_ALWAYS;
	}
	return PROXY_DENY_ONCE;
}

void
session_answer(struct session *s, uint64_t id, enum session_answer a)
{
	if (s->ps != NULL)
		proxy_session_answer(s->ps, id, session_proxy_answer_of(a));
}

int
session_answer_rule(struct session *s, uint64_t id, enum session_answer a,
    const char *rule, char **cause)
{
	if (s->ps == NULL)
		return 0;
	return proxy_session_answer_rule(s->ps, id, session_proxy_answer_of(a),
	    rule, cause);
}

/* Only characters that mean the same in a rule and in the config file: no glob, comment, space or quote. */
static bool
session_proxy_plain(const char *s, const char *extra)
{
	for (; *s != '\0'; s++) {
		if (!isalnum((unsigned char)*s) && strchr(extra, *s) == NULL)
			return false;
	}
	return true;
}

/* The path prefix a scope names: the request's path up to its last '/', no query. */
static char *
session_proxy_path_prefix(const char *path)
{
	size_t n = strcspn(path, "?#");

	while (n > 0 && path[n - 1] != '/')
		n--;
	return n > 0 ? xstrndup(path, n) : NULL;
}

/* Any subdomain of HOST's registrable domain, from Debian's public suffix list; NULL if none or no list. */
static char *
session_proxy_regdomain(const char *host)
{
	static psl_ctx_t *psl;
	static bool tried;
	const char *reg;

	if (!tried) {
		tried = true;
		if (access(SESSION_PSL_FILE, R_OK) == 0)
			psl = psl_load_file(SESSION_PSL_FILE);
	}
	if (psl == NULL || strchr(host, ':') != NULL ||
	    strspn(host, "0123456789.") == strlen(host) ||
	    (reg = psl_registrable_domain(psl, host)) == NULL ||
	    strcasecmp(reg, host) == 0)
		return NULL;
	return xprintf("*.%s", reg);
}

size_t
session_ask_scopes(const struct session_ask *a, struct session_scope *v)
{
	bool v6 = strchr(a->host, ':') != NULL;
	char *prefix;
	size_t n = 0;

	if (!session_proxy_plain(a->host, ".-:"))
		return 0;
	v[n].rule = xprintf(v6 ? "[%s]:%d" : "%s:%d", a->host, a->port);
	v[n++].what = "this host and port";
	v[n].rule = xprintf(v6 ? "[%s]" : "%s", a->host);
	v[n++].what = "this host, any port";
	v[n].rule = NULL;
	if (a->method != NULL && a->path != NULL &&
	    session_proxy_plain(a->method, "") &&
	    (prefix = session_proxy_path_prefix(a->path)) != NULL) {
		if (session_proxy_plain(prefix, "/._~-"))
			v[n].rule = xprintf(v6 ? "[%s]:%d %s %s" : "%s:%d %s %s",
			    a->host, a->port, a->method, prefix);
		free(prefix);
		if (v[n].rule != NULL)
			v[n++].what = "this host and port, method and path prefix";
	}
	if ((v[n].rule = session_proxy_regdomain(a->host)) != NULL)
		v[n++].what = "any subdomain of the registrable domain";
	return n;
}

void
session_scopes_free(struct session_scope *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(v[i].rule);
}

void
session_ask_pause(struct session *s, uint64_t id, bool pause)
{
	if (s->ps != NULL)
		proxy_session_ask_pause(s->ps, id, pause);
}

/* Keeps the rule a denial suggests ("... add `allow X`"), once each. */
static void
session_proxy_note_rule(struct session *s, const char *error)
{
	const char *p, *end;
	char *rule;

	if (error == NULL || (p = strstr(error, "`allow ")) == NULL ||
	    (end = strchr(p + 7, '`')) == NULL)
		return;
	rule = xstrndup(p + 7, (size_t)(end - p - 7));
	if (strv_contains(&s->denied, rule) || s->denied.n >= 100)
		free(rule);
	else
		strv_take(&s->denied, rule);
}

/* Counts a denial of HOST:PORT; the first reason given is kept. */
void
session_proxy_note_denied(struct session *s, const char *host, int port,
    const char *error)
{
	struct session_denial *d;
	char *dest;
	size_t i;

	session_proxy_note_rule(s, error);
	dest = xprintf("%s:%d", host != NULL ? host : "?", port);
	for (i = 0; i < s->ndenials; i++) {
		if (strcmp(s->denials[i].dest, dest) == 0) {
			s->denials[i].n++;
			free(dest);
			return;
		}
	}
	if (s->ndenials >= 100) {
		free(dest);
		return;
	}
	s->denials = xreallocarray(s->denials, s->ndenials + 1,
	    sizeof *s->denials);
	d = &s->denials[s->ndenials++];
	d->dest = dest;
	d->why = xstrdup(error != NULL ? error : "denied");
	d->n = 1;
}

/*
 * Every destination denied, whatever denied it (a deny rule, no rule, the
 * address guard, a secret on its way out): agents report a refusal as
 * something else ("Failed to authenticate. API Error: 403"), so the user
 * is told what agentmux refused, and how to allow what no rule covered.
 */
char *
session_denied_summary(struct session *s)
{
	struct buf b;
	struct strv q;
	size_t i;
	char *word;

	if (s->ndenials == 0)
		return NULL;
	buf_init(&b);
	strv_init(&q);
	for (i = 0; i < s->ndenials; i++)
		buf_printf(&b, "denied %s (%d request%s): %s\n",
		    quote_keep(&q, s->denials[i].dest), s->denials[i].n,
		    s->denials[i].n == 1 ? "" : "s",
		    quote_keep_line(&q, s->denials[i].why));
	if (s->denied.n > 0)
		buf_adds(&b, "to allow what no rule covered, run again with:");
	for (i = 0; i < s->denied.n; i++) {
		/* A word for the shell, whatever the host is called. */
		word = strv_join_paste((char *[]){ s->denied.v[i], NULL });
		buf_printf(&b, " --allow %s", word);
		free(word);
	}
	if (s->denied.n > 0)
		buf_addc(&b, '\n');
	strv_free(&q);
	return buf_steal(&b);
}
