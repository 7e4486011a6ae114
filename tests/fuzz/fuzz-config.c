/* Fuzzes the config parser: any file, however broken, gives problems with lines, never a crash. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "fuzz.h"
#include "proxy/proxy.h"

static char fuzz_path[64];

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	/* No built-in profiles: only the fuzzed file is parsed. */
	setenv("AGENTMUX_SHARE", "/nonexistent-agentmux-share", 1);
	setenv("HOME", "/nonexistent-agentmux-home", 1);
	snprintf(fuzz_path, sizeof fuzz_path, "/tmp/amx-fuzz-config.%ld",
	    (long)getpid());
	config_set_rule_validator(proxy_policy_validate);
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config_problems ps = { NULL, 0 };
	struct config *cf;
	FILE *fp;
	size_t i;

	if ((fp = fopen(fuzz_path, "w")) == NULL)
		return 0;
	fwrite(data, 1, size, fp);
	fclose(fp);
	cf = config_load(fuzz_path, &ps);
	/* Either a config or at least one problem, each with a message. */
	if (cf == NULL && ps.n == 0)
		abort();
	for (i = 0; i < ps.n; i++) {
		if (ps.v[i].message == NULL || ps.v[i].line < 0)
			abort();
	}
	config_free(cf);
	config_problems_free(&ps);
	unlink(fuzz_path);
	return 0;
}
