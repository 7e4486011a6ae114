/* agentmux doctor: checks the machine, then proves the jail's boundary with real jails and a local HTTPS server. */
#include <sys/socket.h>
#include <sys/stat.h>

#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "core/core.h"
#include "server/server.h"
#include "session/session.h"

/* A jailed probe that takes longer than this is stuck: it is killed and the check fails. */
#define DOCTOR_RUN_TIMEOUT 60

/* One line of the report. */
struct doctor_check {
	char *name;
	bool ok;
	char *detail;
	char *fix;        /* what to do, for a failed check */
};

struct doctor {
	struct doctor_check *v;
	size_t n;
	bool json;
	/* The boundary test bed. */
	char *tmp;        /* scratch dir, removed at the end */
	char *project;
	char *self;       /* this binary */
	char *ca;         /* the local server's CA certificate */
	char *secret;     /* the real value the server must see */
	int port;
	int lfd;          /* the server's listener, or -1 */
	SSL_CTX *tls;
	struct event *accept_ev;
	struct doctor_conn *conns;
	char *seen;       /* the X-Doctor-Key it saw last, or NULL */
};

static void
doctor_add(struct doctor *d, bool ok, const char *name, char *detail,
    char *fix)
{
	struct doctor_check *c;

	d->v = xreallocarray(d->v, d->n + 1, sizeof *d->v);
	c = &d->v[d->n++];
	c->name = xstrdup(name);
	c->ok = ok;
	c->detail = detail;
	c->fix = fix;
	if (d->json)
		return;
	out_printf(stdout, "%s %s: %s\n", ok ? "\u2713" : "\u2717", name,
	    detail);
	if (!ok && fix != NULL)
		out_printf(stdout, "    fix: %s\n", fix);
	fflush(stdout);
}

static void
doctor_userns(struct doctor *d, const struct session_host *h)
{
	if (h->userns_cause == NULL)
		doctor_add(d, true, "user namespaces", xstrdup("unprivileged "
		    "user namespaces work"), NULL);
	else
		doctor_add(d, false, "user namespaces",
		    xstrdup(h->userns_cause), xstrdup("enable them: sysctl "
		    "kernel.unprivileged_userns_clone=1 (Debian), or "
		    "kernel.apparmor_restrict_unprivileged_userns=0 (Ubuntu "
		    "24.04+), then rerun agentmux doctor"));
}

static void
doctor_kernel(struct doctor *d, const struct session_host *h)
{
	int abi = h->landlock_abi;

	if (h->seccomp_level >= 0)
		doctor_add(d, true, "seccomp", xprintf("filters available "
		    "(libseccomp API level %d)", h->seccomp_level), NULL);
	else
		doctor_add(d, false, "seccomp", xstrdup(h->seccomp_cause),
		    xstrdup("use a kernel with CONFIG_SECCOMP_FILTER"));
	if (abi >= 4)
		doctor_add(d, true, "Landlock", xprintf("ABI %d: file writes "
		    "and TCP connect are confined%s", abi, abi >= 6 ?
		    ", abstract sockets and signals scoped" : ""), NULL);
	else if (abi > 0)
		doctor_add(d, true, "Landlock", xprintf("ABI %d: file writes "
		    "confined; TCP connect needs ABI 4 (namespaces still "
		    "isolate the network)", abi), NULL);
	else
		doctor_add(d, true, "Landlock", xstrdup("not available; the "
		    "jail relies on namespaces, seccomp and mounts alone (boot "
		    "with lsm=...,landlock for a second layer)"), NULL);
	if (h->overlay_cause == NULL)
		doctor_add(d, true, "overlayfs", xstrdup("works in a user "
		    "namespace (agent config changes are captured for review)"),
		    NULL);
	else
		doctor_add(d, false, "overlayfs", xstrdup(h->overlay_cause),
		    xstrdup("use a kernel >= 5.11 with overlayfs"));
	doctor_add(d, true, "resource limits", xstrdup(h->limits), NULL);
}

static void
doctor_git(struct doctor *d)
{
	char *git = path_find_exec("git", getenv("PATH"));

	if (git != NULL)
		doctor_add(d, true, "git", xprintf("%s (snapshots and undo)",
		    git), NULL);
	else
		doctor_add(d, false, "git", xstrdup("not found on PATH"),
		    xstrdup("install git (apt-get install git): snapshots and "
		    "undo need it"));
	free(git);
}

/* The server's socket directory: private, and (the escape tests prove) out of every jail's sight. */
static void
doctor_server_dir(struct doctor *d)
{
	char *cause = NULL, *sock;

	if ((sock = server_socket_path(NULL, &cause)) == NULL) {
		doctor_add(d, false, "server socket", cause, xstrdup("do as "
		    "it says, or set XDG_RUNTIME_DIR to a private directory of "
		    "yours (agentmux makes its own dir there 0700)"));
		return;
	}
	doctor_add(d, true, "server socket", xprintf("%s (its directory "
	    "0700 and yours; jails do not see it)", sock), NULL);
	free(sock);
}

static void
doctor_dirs(struct doctor *d)
{
	char *cause = NULL, *data, *ca, *key, *rt;
	struct stat st;

	if ((data = path_data_dir(&cause)) == NULL) {
		doctor_add(d, false, "data dir", cause, xstrdup("fix the "
		    "directory as the message says"));
		return;
	}
	doctor_add(d, true, "data dir", xprintf("%s (0700, yours)", data),
	    NULL);
	ca = xprintf("%s/ca.pem", data);
	key = xprintf("%s/ca.key", data);
	if (lstat(key, &st) == -1)
		doctor_add(d, true, "CA", xprintf("not made yet: %s is created "
		    "on first use", ca), NULL);
	else if (!S_ISREG(st.st_mode) || st.st_uid != getuid() ||
	    (st.st_mode & 077) != 0)
		doctor_add(d, false, "CA", xprintf("the CA key %s is not a "
		    "private file of yours (mode %04o)", key,
		    (unsigned)(st.st_mode & 07777)), xprintf("chmod 600 %s, or "
		    "remove %s and %s to make a new CA", key, key, ca));
	else
		doctor_add(d, true, "CA", xprintf("%s (key 0600)", ca), NULL);
	if ((rt = path_runtime_dir_create(&cause)) == NULL)
		doctor_add(d, false, "runtime dir", cause, xstrdup("make "
		    "XDG_RUNTIME_DIR (or /tmp) writable and yours"));
	else {
		doctor_add(d, true, "runtime dir", xprintf("%s (0700, removed "
		    "on exit)", rt), NULL);
		path_runtime_dir_remove();
		free(rt);
	}
	doctor_server_dir(d);
	free(ca);
	free(key);
	free(data);
}

static void
doctor_config(struct doctor *d)
{
	struct config_problems ps = { NULL, 0 };
	struct config *cf;
	char *path = path_config_file();

	if ((cf = config_load(NULL, &ps)) != NULL) {
		doctor_add(d, true, "config", cf->path != NULL ? xprintf("%s is "
		    "valid", cf->path) : xprintf("none at %s (defaults)", path),
		    NULL);
		config_free(cf);
	} else
		doctor_add(d, false, "config", xprintf("%zu problem%s, first: "
		    "%s:%d: %s", ps.n, ps.n == 1 ? "" : "s", ps.v[0].file,
		    ps.v[0].line, ps.v[0].message), xstrdup("run 'agentmux "
		    "config check' and fix what it lists"));
	config_problems_free(&ps);
	free(path);
}

/* ---- the local HTTPS server ---- */

static X509 *
doctor_cert(EVP_PKEY *key, EVP_PKEY *signer, X509 *issuer, const char *cn,
    bool ca)
{
	X509 *x = X509_new();
	X509_NAME *name = X509_NAME_new();
	X509V3_CTX ctx;
	X509_EXTENSION *ext;
	unsigned char serial[16];
	BIGNUM *bn;

	X509_set_version(x, 2);
	util_random(serial, sizeof serial);
	serial[0] &= 0x7f;
	bn = BN_bin2bn(serial, sizeof serial, NULL);
	BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x));
	BN_free(bn);
	X509_gmtime_adj(X509_getm_notBefore(x), -3600);
	X509_gmtime_adj(X509_getm_notAfter(x), 86400);
	X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
	    (const unsigned char *)cn, -1, -1, 0);
	X509_set_subject_name(x, name);
	X509_set_issuer_name(x, issuer != NULL ? X509_get_subject_name(issuer) :
	    name);
	X509_NAME_free(name);
	X509_set_pubkey(x, key);
	X509V3_set_ctx(&ctx, issuer != NULL ? issuer : x, x, NULL, NULL, 0);
	ext = X509V3_EXT_conf_nid(NULL, &ctx, NID_basic_constraints,
	    ca ? "critical,CA:TRUE" : "CA:FALSE");
	X509_add_ext(x, ext, -1);
	X509_EXTENSION_free(ext);
	if (ca)
		ext = X509V3_EXT_conf_nid(NULL, &ctx, NID_key_usage,
		    "critical,keyCertSign,cRLSign");
	else
		ext = X509V3_EXT_conf_nid(NULL, &ctx, NID_subject_alt_name,
		    "IP:127.0.0.1");
	X509_add_ext(x, ext, -1);
	X509_EXTENSION_free(ext);
	X509_sign(x, signer, EVP_sha256());
	return x;
}

/*
 * The local HTTPS server runs on doctor's loop (proc_base), beside the
 * jailed probes it answers: each connection is a TLS handshake, a request
 * read up to its blank line, one answer, then closed. It keeps the
 * X-Doctor-Key header it saw last (d->seen).
 */
enum doctor_conn_state { DOCTOR_HANDSHAKE, DOCTOR_READ, DOCTOR_WRITE };

struct doctor_conn {
	struct doctor *d;
	struct doctor_conn *next;
	int fd;
	SSL *ssl;
	struct event *ev;
	enum doctor_conn_state state;
	char req[8192];
	size_t len;
	char *resp;
	size_t off;
};

static void doctor_conn_cb(evutil_socket_t, short, void *);

static void
doctor_conn_free(struct doctor_conn *c)
{
	if (c->ev != NULL)
		event_free(c->ev);
	SSL_free(c->ssl);
	close(c->fd);
	free(c->resp);
	free(c);
}

/* C is over: out of the server's list, and freed. */
static void
doctor_conn_close(struct doctor_conn *c)
{
	struct doctor_conn **p;

	for (p = &c->d->conns; *p != NULL; p = &(*p)->next) {
		if (*p == c) {
			*p = c->next;
			break;
		}
	}
	doctor_conn_free(c);
}

/* Keeps the X-Doctor-Key of the request read, and makes the answer. */
static void
doctor_conn_answer(struct doctor_conn *c)
{
	const char *body = "agentmux doctor: hello from the local server\n";
	char *key, *end;

	c->req[c->len] = '\0';
	if ((key = strcasestr(c->req, "\nX-Doctor-Key:")) != NULL) {
		key += strlen("\nX-Doctor-Key:");
		key += strspn(key, " ");
		end = key + strcspn(key, "\r\n");
		free(c->d->seen);
		c->d->seen = xstrndup(key, (size_t)(end - key));
	}
	c->resp = xprintf("HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n"
	    "Connection: close\r\n\r\n%s", strlen(body), body);
	c->state = DOCTOR_WRITE;
}

/*
 * One step of the TLS call of C's state: 1 done, 0 it must wait (*WHAT
 * says for which), -1 the connection is over.
 */
static int
doctor_conn_io(struct doctor_conn *c, short *what)
{
	int n;

	switch (c->state) {
	case DOCTOR_HANDSHAKE:
		n = SSL_do_handshake(c->ssl);
		break;
	case DOCTOR_READ:
		n = SSL_read(c->ssl, c->req + c->len,
		    (int)(sizeof c->req - 1 - c->len));
		break;
	case DOCTOR_WRITE:
	default:
		n = SSL_write(c->ssl, c->resp + c->off,
		    (int)(strlen(c->resp) - c->off));
		break;
	}
	if (n > 0)
		return n;
	switch (SSL_get_error(c->ssl, n)) {
	case SSL_ERROR_WANT_READ:
		*what = EV_READ;
		return 0;
	case SSL_ERROR_WANT_WRITE:
		*what = EV_WRITE;
		return 0;
	default:
		return -1;
	}
}

/* Runs C as far as it goes without waiting; false once it is over. */
static bool
doctor_conn_step(struct doctor_conn *c)
{
	short what = EV_READ;
	int n;

	for (;;) {
		if ((n = doctor_conn_io(c, &what)) == 0)
			break;
		if (n == -1 && c->state != DOCTOR_READ)
			return false;
		if (c->state == DOCTOR_HANDSHAKE)
			c->state = DOCTOR_READ;
		else if (c->state == DOCTOR_READ) {
			/* The request ends at its blank line (or its sender's end). */
			c->len += n > 0 ? (size_t)n : 0;
			c->req[c->len] = '\0';
			if (n == -1 || strstr(c->req, "\r\n\r\n") != NULL ||
			    c->len == sizeof c->req - 1)
				doctor_conn_answer(c);
		} else if ((c->off += (size_t)n) == strlen(c->resp)) {
			SSL_shutdown(c->ssl);
			return false;
		}
	}
	event_del(c->ev);
	event_assign(c->ev, proc_base(), c->fd, what, doctor_conn_cb, c);
	event_add(c->ev, NULL);
	return true;
}

static void
doctor_conn_cb(evutil_socket_t fd, short what, void *arg)
{
	struct doctor_conn *c = arg;

	if (!doctor_conn_step(c))
		doctor_conn_close(c);
}

static void
doctor_accept_cb(evutil_socket_t lfd, short what, void *arg)
{
	struct doctor *d = arg;
	struct doctor_conn *c;
	int fd;

	if ((fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) ==
	    -1)
		return;
	c = xcalloc(1, sizeof *c);
	c->d = d;
	c->fd = fd;
	c->ssl = SSL_new(d->tls);
	c->ev = event_new(proc_base(), fd, EV_READ, doctor_conn_cb, c);
	if (c->ssl == NULL || c->ev == NULL) {
		log_warnx("doctor: cannot serve a connection: out of memory");
		if (c->ev != NULL)
			event_free(c->ev);
		SSL_free(c->ssl);
		close(fd);
		free(c);
		return;
	}
	SSL_set_fd(c->ssl, fd);
	SSL_set_accept_state(c->ssl);
	c->next = d->conns;
	d->conns = c;
	if (!doctor_conn_step(c))
		doctor_conn_close(c);
}

static int
doctor_write_pem(const char *path, X509 *x)
{
	FILE *fp = fopen(path, "w");
	int ok;

	if (fp == NULL)
		return -1;
	ok = PEM_write_X509(fp, x);
	return fclose(fp) == 0 && ok ? 0 : -1;
}

/* Starts the HTTPS server on 127.0.0.1, on the loop; -1 with *CAUSE. */
static int
doctor_server_start(struct doctor *d, char **cause)
{
	EVP_PKEY *cakey = EVP_EC_gen("P-256"), *key = EVP_EC_gen("P-256");
	X509 *ca = doctor_cert(cakey, cakey, NULL, "agentmux doctor CA", true);
	X509 *leaf = doctor_cert(key, cakey, ca, "127.0.0.1", false);
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t slen = sizeof sin;
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	int lfd = -1, rc = -1;

	d->ca = xprintf("%s/ca.pem", d->tmp);
	if (doctor_write_pem(d->ca, ca) == -1) {
		*cause = xprintf("cannot write %s: %s", d->ca, strerror(errno));
		goto out;
	}
	SSL_CTX_use_certificate(ctx, leaf);
	SSL_CTX_use_PrivateKey(ctx, key);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC |
	    SOCK_NONBLOCK, 0)) == -1 ||
	    bind(lfd, (struct sockaddr *)&sin, sizeof sin) == -1 ||
	    listen(lfd, 16) == -1 ||
	    getsockname(lfd, (struct sockaddr *)&sin, &slen) == -1) {
		*cause = xprintf("cannot listen on 127.0.0.1: %s",
		    strerror(errno));
		goto out;
	}
	d->port = ntohs(sin.sin_port);
	d->accept_ev = event_new(proc_base(), lfd, EV_READ | EV_PERSIST,
	    doctor_accept_cb, d);
	if (d->accept_ev == NULL || event_add(d->accept_ev, NULL) == -1) {
		*cause = xstrdup("cannot watch the local server's socket: out "
		    "of memory");
		goto out;
	}
	d->lfd = lfd;
	d->tls = ctx;
	lfd = -1;
	ctx = NULL;
	rc = 0;
out:
	if (lfd != -1)
		close(lfd);
	SSL_CTX_free(ctx);
	X509_free(ca);
	X509_free(leaf);
	EVP_PKEY_free(cakey);
	EVP_PKEY_free(key);
	return rc;
}

/* ---- jailed runs ---- */

static void
doctor_run_over(struct proc *p, void *arg)
{
	bool *over = arg;

	*over = true;
}

/*
 * Runs "agentmux run ARGS..." with the test bed's config, through core's
 * runner on doctor's loop, which serves the local HTTPS server meanwhile
 * (stdin /dev/null, stderr with stdout, killed after DOCTOR_RUN_TIMEOUT
 * seconds); OUT gets what it printed. Its exit code, 128+N for signal N,
 * -1 if it could not be started (OUT says why).
 */
static int
doctor_run(struct doctor *d, struct buf *out, char *const *args)
{
	extern char **environ;
	struct strv argv, env;
	struct proc_opts o = { .out_fd = -1, .umask = -1, .err_to_out = true,
	    .timeout = DOCTOR_RUN_TIMEOUT };
	char *cfg = xprintf("%s/config", d->tmp);
	char *data = xprintf("%s/data", d->tmp);
	char *cause = NULL;
	struct proc *p;
	bool over = false;
	int st = -1;
	size_t i;

	strv_init(&argv);
	strv_add(&argv, d->self);
	strv_add(&argv, "run");
	strv_add(&argv, "--on-unknown");
	strv_add(&argv, "deny");
	strv_add(&argv, "--upstream-ca");
	strv_add(&argv, d->ca);
	strv_add(&argv, "-a");
	strv_add(&argv, "doctor");
	strv_add(&argv, "-C");
	strv_add(&argv, d->project);
	for (i = 0; args[i] != NULL; i++)
		strv_add(&argv, args[i]);
	strv_init(&env);
	for (i = 0; environ[i] != NULL; i++)
		strv_add(&env, environ[i]);
	strv_setenv(&env, "XDG_CONFIG_HOME", cfg);
	strv_setenv(&env, "XDG_DATA_HOME", data);
	strv_setenv(&env, "AGENTMUX_DOCTOR_REAL", d->secret);
	o.argv = argv.v;
	o.env = env.v;
	o.exe = d->self;
	buf_init(out);
	buf_adds(out, "");
	if ((p = proc_start(proc_base(), &o, doctor_run_over, &over,
	    &cause)) == NULL) {
		buf_adds(out, cause);
		free(cause);
	} else {
		proc_sync_run(proc_base(), &over);
		st = proc_status(p);
		buf_add(out, proc_out(p)->data, proc_out(p)->len);
		if (proc_cause(p) != NULL)
			buf_adds(out, proc_cause(p));
		proc_free(p);
	}
	strv_free(&env);
	strv_free(&argv);
	free(data);
	free(cfg);
	return st;
}

/* The first line of OUT, for a report. */
static char *
doctor_first_line(const struct buf *out)
{
	return xstrndup(out->data, strcspn(out->data, "\n"));
}

/*
 * True if the probe's OUT says the name resolved only to one of agentmux's
 * synthetic addresses (its resolver in the jail), never a real one.
 */
static bool
doctor_synthetic(const struct buf *out)
{
	const char *p = out->data != NULL ? strstr(out->data, " resolves to ") :
	    NULL;
	char *s;
	bool yes;

	if (p == NULL)
		return false;
	s = xstrndup(p + 13, strcspn(p + 13, "\n"));
	yes = session_host_synthetic(s);
	free(s);
	return yes;
}

static void
doctor_boundary_network(struct doctor *d)
{
	char port[16], *outside, *home;
	struct buf out;
	bool ok, synthetic;
	int rc;

	snprintf(port, sizeof port, "%d", d->port);
	rc = doctor_run(d, &out, (char *const[]){ "--", d->self, "probe",
	    "connect", "127.0.0.1", port, NULL });
	doctor_add(d, rc == 1 && strstr(out.data, "blocked") != NULL,
	    "no direct network", rc == 1 ? xprintf("a direct connection to "
	    "a listener on host loopback (127.0.0.1:%d) fails in the jail",
	    d->port) : xprintf("the jail reached 127.0.0.1:%d directly: %s",
	    d->port, out.data), xstrdup("report this: the jail's network "
	    "namespace is not isolated"));
	buf_free(&out);
	rc = doctor_run(d, &out, (char *const[]){ "--", d->self, "probe",
	    "resolve", "example.com", NULL });
	synthetic = rc == 0 && doctor_synthetic(&out);
	doctor_add(d, rc == 1 || synthetic, "no real DNS", rc == 1 ?
	    xstrdup("names do not resolve in the jail (the proxy resolves "
	    "them on the host)") : synthetic ? xstrdup("names resolve only "
	    "to agentmux's synthetic addresses (198.18.0.0/15), whose "
	    "connections its proxy judges; the proxy resolves them on the "
	    "host") : doctor_first_line(&out), xstrdup("report this: real "
	    "DNS works inside the jail"));
	buf_free(&out);
	outside = xprintf("%s/outside", d->tmp);
	home = xprintf("%s/.agentmux-doctor-%ld", path_home(), (long)getpid());
	doctor_run(d, &out, (char *const[]){ "--", d->self, "probe", "write",
	    outside, NULL });
	buf_free(&out);
	doctor_run(d, &out, (char *const[]){ "--", d->self, "probe", "write",
	    home, NULL });
	ok = access(outside, F_OK) == -1 && access(home, F_OK) == -1;
	doctor_add(d, ok, "no writes outside the project", ok ? xprintf("files "
	    "written next to the project and in HOME stay in the jail's "
	    "private dirs; none reached the host") : xprintf("a file the jail "
	    "wrote reached the host (%s)", access(outside, F_OK) == 0 ? outside :
	    home), xstrdup("report this: the jail's mounts let it write "
	    "outside the project"));
	unlink(home);
	free(home);
	buf_free(&out);
	free(outside);
}

/*
 * Takes the key the server last saw (it answered before the probe ended,
 * on the same loop), or NULL.
 */
static char *
doctor_seen(struct doctor *d)
{
	char *seen = d->seen;

	d->seen = NULL;
	return seen;
}

static void
doctor_boundary_proxy(struct doctor *d)
{
	char *url = xprintf("https://127.0.0.1:%d/doctor", d->port);
	char *rule = xprintf("127.0.0.1:%d", d->port), *seen, *sent;
	struct buf out;
	bool ok;
	int rc;

	rc = doctor_run(d, &out, (char *const[]){ "--allow", rule, "--",
	    d->self, "probe", "fetch", url, NULL });
	ok = rc == 0 && strstr(out.data, "200 OK") != NULL;
	doctor_add(d, ok, "proxy allows by rule", ok ? xprintf("a request "
	    "to %s through the proxy is allowed by 'allow %s'", url, rule) :
	    xprintf("the allowed request failed: %s", out.data),
	    xstrdup("run with AGENTMUX_DEBUG=1 and report the output"));
	buf_free(&out);
	/* Its status says nothing here: the 403 in its output does. */
	doctor_run(d, &out, (char *const[]){ "--", d->self, "probe",
	    "fetch", url, NULL });
	ok = strstr(out.data, "403") != NULL && strstr(out.data, "200 OK") ==
	    NULL;
	doctor_add(d, ok, "proxy refuses without a rule", ok ? xstrdup("the "
	    "same request without the rule gets 403") : xprintf("without a "
	    "rule the request was not refused: %s", out.data),
	    xstrdup("report this: default deny did not hold"));
	buf_free(&out);
	while ((seen = doctor_seen(d)) != NULL)
		free(seen);
	rc = doctor_run(d, &out, (char *const[]){ "--allow", rule, "--",
	    d->self, "probe", "fetch", url,
	    "X-Doctor-Key: ${AGENTMUX_DOCTOR_TOKEN}", NULL });
	seen = doctor_seen(d);
	sent = strstr(out.data, "> X-Doctor-Key: ");
	ok = rc == 0 && seen != NULL && strcmp(seen, d->secret) == 0 &&
	    strstr(out.data, d->secret) == NULL && sent != NULL &&
	    sent[16] != '\n';
	doctor_add(d, ok, "secrets stay outside", ok ? xstrdup("the jail "
	    "holds only a placeholder; the proxy put the real value in the "
	    "request to the bound host") : xprintf("the server saw %s; the "
	    "jail printed: %s", seen == NULL ? "no key" : strcmp(seen,
	    d->secret) == 0 ? "the real key" : "a wrong key", out.data),
	    xstrdup("report this: secret brokering failed"));
	free(seen);
	buf_free(&out);
	free(url);
	free(rule);
}

static int
doctor_testbed(struct doctor *d, char **cause)
{
	char tmpl[] = "/tmp/agentmux-doctor.XXXXXX", *cfg, *text, hex[33];
	unsigned char rnd[16];
	size_t i;

	if (mkdtemp(tmpl) == NULL) {
		*cause = xprintf("cannot make a scratch dir: %s", strerror(errno));
		return -1;
	}
	d->tmp = xstrdup(tmpl);
	d->project = xprintf("%s/project", d->tmp);
	mkdir(d->project, 0700);
	util_random(rnd, sizeof rnd);
	for (i = 0; i < sizeof rnd; i++)
		snprintf(hex + 2 * i, 3, "%02x", rnd[i]);
	d->secret = xprintf("amx-doctor-secret-%s", hex);
	cfg = xprintf("%s/config/agentmux", d->tmp);
	path_mkdir_p(cfg, 0700);
	free(cfg);
	cfg = xprintf("%s/config/agentmux/config", d->tmp);
	text = xprintf("[secret doctor]\nenv = AGENTMUX_DOCTOR_TOKEN\n"
	    "from_env = AGENTMUX_DOCTOR_REAL\nhost = 127.0.0.1\n"
	    "header = X-Doctor-Key\n\n[agent doctor]\ndescription = agentmux "
	    "doctor's probe\ncommand = %s probe\nsecret = doctor\n", d->self);
	if (util_write_file_atomic(cfg, text, strlen(text), 0600, cause) == -1) {
		free(cfg);
		free(text);
		return -1;
	}
	free(cfg);
	free(text);
	return doctor_server_start(d, cause);
}

static void
doctor_boundary(struct doctor *d)
{
	char *cause = NULL;

	if ((d->self = path_real("/proc/self/exe")) == NULL ||
	    doctor_testbed(d, &cause) == -1) {
		doctor_add(d, false, "boundary test", cause != NULL ? cause :
		    xstrdup("cannot find this binary"), xstrdup("fix the "
		    "problem named and rerun agentmux doctor"));
		return;
	}
	doctor_boundary_network(d);
	doctor_boundary_proxy(d);
}

static void
doctor_cleanup(struct doctor *d)
{
	struct doctor_conn *c, *next;
	size_t i;

	for (c = d->conns; c != NULL; c = next) {
		next = c->next;
		doctor_conn_free(c);
	}
	d->conns = NULL;
	if (d->accept_ev != NULL)
		event_free(d->accept_ev);
	if (d->lfd != -1)
		close(d->lfd);
	SSL_CTX_free(d->tls);
	free(d->seen);
	if (d->tmp != NULL)
		path_remove_tree(d->tmp);
	for (i = 0; i < d->n; i++) {
		free(d->v[i].name);
		free(d->v[i].detail);
		free(d->v[i].fix);
	}
	free(d->v);
	free(d->tmp);
	free(d->project);
	free(d->self);
	free(d->ca);
	free(d->secret);
}

static void
doctor_print_json(struct doctor *d, bool ok)
{
	struct json j;
	size_t i;

	json_init(&j, true);
	json_obj_begin(&j);
	json_kbool(&j, "ok", ok);
	json_key(&j, "checks");
	json_arr_begin(&j);
	for (i = 0; i < d->n; i++) {
		json_obj_begin(&j);
		json_kstr(&j, "name", d->v[i].name);
		json_kbool(&j, "ok", d->v[i].ok);
		json_kstr(&j, "detail", d->v[i].detail);
		json_kstr(&j, "fix", d->v[i].ok ? NULL : d->v[i].fix);
		json_obj_end(&j);
	}
	json_arr_end(&j);
	json_obj_end(&j);
	json_print(&j, stdout);
	json_free(&j);
}

int
cmd_doctor(struct cli_args *args)
{
	struct session_host h;
	struct doctor d;
	bool ok = true, userns;
	size_t i;

	memset(&d, 0, sizeof d);
	d.lfd = -1;
	d.json = cli_has(args, "json");
	session_host_probe(&h, true);
	doctor_userns(&d, &h);
	userns = d.v[0].ok;
	doctor_kernel(&d, &h);
	session_host_free(&h);
	doctor_git(&d);
	doctor_dirs(&d);
	doctor_config(&d);
	if (userns)
		doctor_boundary(&d);
	for (i = 0; i < d.n; i++)
		ok = ok && d.v[i].ok;
	if (d.json)
		doctor_print_json(&d, ok);
	else
		out_printf(stdout, "%s\n",
		    ok ? "everything holds" : "some checks failed; "
		    "see the fixes above");
	doctor_cleanup(&d);
	proc_base_free();
	return ok ? 0 : 1;
}
