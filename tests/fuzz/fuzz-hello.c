/*
 * Fuzzes the reading of a tunnel client's first TLS record for its server
 * name: what it says about a prefix never contradicts what it says about
 * the whole (more to come, or the same answer), a name it gives holds no
 * NUL and came from the input, and a refusal always says why.
 */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "fuzz.h"
#include "proxy/proxy-int.h"

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	return 0;
}

static int
fh_read(const uint8_t *data, size_t len, char **sni)
{
	const char *why = NULL;
	int rc = proxy_tls_hello_sni(data, len, sni, &why);

	if (rc < -1 || rc > 1 || (rc == -1) != (why != NULL) ||
	    (rc != 1 && *sni != NULL))
		abort();
	if (*sni != NULL && (**sni == '\0' || memmem(data, len, *sni,
	    strlen(*sni)) == NULL))
		abort();
	return rc;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *whole = NULL, *part = NULL;
	int rc, rc2;
	size_t cut;

	rc = fh_read(data, size, &whole);
	cut = size > 0 ? data[size - 1] % (size + 1) : 0;
	rc2 = fh_read(data, cut, &part);
	/* A prefix either needs more or gives the whole's answer. */
	if (rc2 != 0 && (rc2 != rc || (whole == NULL) != (part == NULL) ||
	    (whole != NULL && strcmp(whole, part) != 0)))
		abort();
	free(whole);
	free(part);
	return 0;
}
