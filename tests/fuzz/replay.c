/* Replays a fuzzer's corpus through its entry point: every seed and every fixed crash, in every build. */
#include <sys/stat.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

static int
replay_file(const char *path)
{
	FILE *fp = fopen(path, "rb");
	uint8_t *data = NULL, *more;
	size_t len = 0, n;
	uint8_t chunk[65536];

	if (fp == NULL) {
		perror(path);
		return -1;
	}
	while ((n = fread(chunk, 1, sizeof chunk, fp)) > 0) {
		if ((more = realloc(data, len + n)) == NULL)
			abort();
		data = more;
		memcpy(data + len, chunk, n);
		len += n;
	}
	fclose(fp);
	LLVMFuzzerTestOneInput(data != NULL ? data : (const uint8_t *)"", len);
	free(data);
	return 0;
}

int
main(int argc, char **argv)
{
	struct dirent *de;
	struct stat st;
	char path[4096];
	int i, count = 0;
	DIR *d;

	LLVMFuzzerInitialize(&argc, &argv);
	for (i = 1; i < argc; i++) {
		if ((d = opendir(argv[i])) == NULL) {
			perror(argv[i]);
			return 1;
		}
		while ((de = readdir(d)) != NULL) {
			snprintf(path, sizeof path, "%s/%s", argv[i], de->d_name);
			if (stat(path, &st) == -1 || !S_ISREG(st.st_mode))
				continue;
			if (replay_file(path) == -1)
				return 1;
			count++;
		}
		closedir(d);
	}
	printf("replayed %d inputs\n", count);
	return count > 0 ? 0 : 1;
}
