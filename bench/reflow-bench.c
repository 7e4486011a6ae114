/* How long a pane's resize takes with a full history: 10,000 lines, a third of them wrapped, rewrapped at each width. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "pane/pane.h"

static int
reflow_bench_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* A pane of 200x50 with LINES lines through it: short ones, and every third 300 characters long. */
static struct pane *
reflow_bench_pane(unsigned lines)
{
	struct pane *vt = pane_create(200, 50, lines, NULL, NULL);
	char line[512];
	unsigned i;
	int n;

	for (i = 0; i < lines + 50; i++) {
		if (i % 3 == 0) {
			memset(line, 'a' + (int)(i % 26), 300);
			n = 300 + snprintf(line + 300, sizeof line - 300, "\r\n");
		} else
			n = snprintf(line, sizeof line, "line %u of the build log\r\n",
			    i);
		pane_feed(vt, line, (size_t)n);
	}
	return vt;
}

int
main(int argc, char **argv)
{
	static const unsigned widths[] = { 120, 200, 80, 200 };
	unsigned lines = argc > 1 ? (unsigned)atoi(argv[1]) : 10000;
	struct pane *vt = reflow_bench_pane(lines);
	int64_t t[5 * nitems(widths)] = { 0 }, worst = 0, t0, median;
	size_t i, n = 0;

	for (i = 0; i < nitems(t); i++) {
		t0 = util_mono_us();
		pane_resize(vt, widths[i % nitems(widths)], 50);
		t[n] = util_mono_us() - t0;
		if (getenv("REFLOW_BENCH_EACH") != NULL)
			printf("%u: %.2f ms\n", widths[i % nitems(widths)],
			    (double)t[n] / 1000.0);
		if (t[n] > worst)
			worst = t[n];
		n++;
	}
	qsort(t, n, sizeof *t, reflow_bench_cmp);
	median = t[n / 2];
	printf("RESULT pane.reflow.%ulines median_ms=%.2f worst_ms=%.2f "
	    "history=%u\n", lines, (double)median / 1000.0,
	    (double)worst / 1000.0, pane_grid_hsize(pane_grid(vt)));
	pane_free(vt);
	return 0;
}
