/* The process-wide proxy: the CA, the TLS contexts, the resolver and the settings every session shares. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event2/dns.h>
#include <event2/event.h>

#include "proxy/proxy-int.h"

static struct evdns_base *
proxy_dns_create(struct event_base *base)
{
	struct evdns_base *dns;

	dns = evdns_base_new(base, EVDNS_BASE_INITIALIZE_NAMESERVERS |
	    EVDNS_BASE_DISABLE_WHEN_INACTIVE);
	if (dns == NULL) {
		/* No usable resolv.conf: /etc/hosts still answers. */
		if ((dns = evdns_base_new(base,
		    EVDNS_BASE_DISABLE_WHEN_INACTIVE)) == NULL)
			return NULL;
		evdns_base_load_hosts(dns, NULL);
	}
	evdns_base_set_option(dns, "timeout:", "3");
	evdns_base_set_option(dns, "attempts:", "2");
	return dns;
}

/* An upstream CA file must hold PEM certificates (loaded at the first TLS upstream). */
static int
proxy_conf_check_ca(const char *path, char **cause)
{
	struct buf b;
	int rc = 0;

	buf_init(&b);
	if (buf_read_file(&b, path) == -1) {
		*cause = xprintf("cannot read the upstream CA %s: %s", path,
		    strerror(errno));
		rc = -1;
	} else if (b.data == NULL ||
	    strstr(b.data, "-----BEGIN CERTIFICATE-----") == NULL) {
		*cause = xprintf("the upstream CA %s holds no PEM certificate",
		    path);
		rc = -1;
	}
	buf_free(&b);
	return rc;
}

static int
proxy_conf_copy(struct proxy *px, const struct proxy_conf *conf, char **cause)
{
	char *const *ct;

	px->connect_timeout = conf->connect_timeout > 0 ?
	    conf->connect_timeout : 10;
	px->idle_timeout = conf->idle_timeout > 0 ? conf->idle_timeout : 300;
	px->client_timeout = conf->client_timeout > 0 ?
	    conf->client_timeout : 30;
	px->max_connections = conf->max_connections > 0 ?
	    conf->max_connections : 256;
	px->max_body_record = conf->max_body_record;
	for (ct = conf->upstream_ca; ct != NULL && *ct != NULL; ct++) {
		if (proxy_conf_check_ca(*ct, cause) == -1)
			return -1;
		strv_add(&px->upstream_ca, *ct);
	}
	for (ct = conf->connect_to; ct != NULL && *ct != NULL; ct++) {
		px->connect_to = xreallocarray(px->connect_to,
		    px->nconnect_to + 1, sizeof *px->connect_to);
		if (proxy_connect_to_parse(*ct,
		    &px->connect_to[px->nconnect_to], cause) == -1)
			return -1;
		px->nconnect_to++;
	}
	return 0;
}

struct proxy *
proxy_create(struct event_base *base, const struct proxy_conf *conf,
    char **cause)
{
	struct proxy *px = xcalloc(1, sizeof *px);

	px->base = base;
	strv_init(&px->upstream_ca);
	if (proxy_conf_copy(px, conf, cause) == -1 ||
	    (px->ca = proxy_ca_open(conf->data_dir, cause)) == NULL)
		goto fail;
	if (proxy_ca_write_bundle(px->ca, conf->data_dir, &px->bundle_path,
	    cause) == -1)
		goto fail;
	if ((px->dns = proxy_dns_create(base)) == NULL) {
		*cause = xstrdup("cannot start the DNS resolver");
		goto fail;
	}
	return px;
fail:
	proxy_free(px);
	return NULL;
}

void
proxy_free(struct proxy *px)
{
	size_t i;

	if (px == NULL)
		return;
	if (px->dns != NULL)
		evdns_base_free(px->dns, 1);
	SSL_CTX_free(px->server_ctx);
	SSL_CTX_free(px->client_ctx);
	strv_free(&px->upstream_ca);
	proxy_ca_free(px->ca);
	for (i = 0; i < px->nconnect_to; i++)
		proxy_connect_to_clear(&px->connect_to[i]);
	free(px->connect_to);
	free(px->bundle_path);
	free(px);
}

const char *
proxy_ca_cert_path(struct proxy *px)
{
	return proxy_ca_path(px->ca);
}

const char *
proxy_ca_bundle_path(struct proxy *px)
{
	return px->bundle_path;
}
