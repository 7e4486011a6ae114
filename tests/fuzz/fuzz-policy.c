/* Fuzzes policy rules: lines "verb rule..." then a request "host port method path"; checks invariants. */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "fuzz.h"
#include "proxy/proxy.h"

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	return 0;
}

/* Checks one request against POL; a decided verdict always names its rule. */
static void
fuzz_policy_check(struct proxy_policy *pol, char *req)
{
	char *host, *port, *method, *path, *save = NULL;
	enum proxy_verdict v;
	const char *rule = NULL;

	host = strtok_r(req, " ", &save);
	port = strtok_r(NULL, " ", &save);
	method = strtok_r(NULL, " ", &save);
	path = strtok_r(NULL, " ", &save);
	if (host == NULL)
		return;
	v = proxy_policy_check(pol, host, port != NULL ? atoi(port) : 443,
	    method, path, &rule);
	if ((v == PROXY_UNKNOWN) != (rule == NULL))
		abort();
	/* The CONNECT-level verdict must not be narrower than any request's allow. */
	if (method != NULL && v == PROXY_ALLOW &&
	    proxy_policy_check(pol, host, port != NULL ? atoi(port) : 443,
	    NULL, NULL, NULL) == PROXY_DENY)
		abort();
	proxy_policy_names_host(pol, host);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proxy_policy *pol = proxy_policy_create();
	char *text = xstrndup((const char *)data, size), *line, *save = NULL;
	char *last = NULL, *cause, *sp;

	for (line = strtok_r(text, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		last = line;
		if ((sp = strchr(line, ' ')) == NULL)
			continue;
		*sp = '\0';
		cause = NULL;
		if (proxy_policy_add(pol, line, sp + 1, "fuzz", &cause) == -1) {
			if (cause == NULL)
				abort();
			free(cause);
		}
		*sp = ' ';
	}
	if (last != NULL) {
		char *req = xstrdup(last);

		fuzz_policy_check(pol, req);
		free(req);
	}
	proxy_policy_free(pol);
	free(text);
	return 0;
}
