/*
 * Fuzzes a pane's terminal (pane-vtseq.c in front of libvterm 0.1.4, and
 * the grid): everything a jailed program prints is parsed on the host.
 * Beyond "no crash" it checks that the cursor stays on the screen and,
 * after each resize (which rewraps the lines, pane_grid_reflow), that no
 * wide character of the history or the screen was cut in two.
 *
 * Input: one byte for the width, one for the height, then output, cut
 * into reads at every 0xff byte; a read that starts with 0xfe resizes.
 */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "fuzz.h"
#include "pane/pane.h"

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	return 0;
}

static void
fuzz_vterm_reply(void *arg, const char *data, size_t len)
{
}

static void
fuzz_vterm_check(struct pane *vt)
{
	struct pane_grid *gd = pane_grid(vt);
	unsigned x, y;

	pane_cursor(vt, &x, &y);
	if (x >= pane_grid_sx(gd) || y >= pane_grid_sy(gd))
		abort();
	if (pane_cursor_column(vt) >= pane_grid_sx(gd))
		abort();
}

/* Every wide character has its right half beside it, and every right half its left. */
static void
fuzz_vterm_check_rows(struct pane *vt)
{
	struct pane_grid *gd = pane_grid(vt);
	const struct pane_cell *c;
	unsigned x, sx = pane_grid_sx(gd);
	int y;

	for (y = -(int)pane_grid_hsize(gd); y < (int)pane_grid_sy(gd); y++) {
		if (pane_grid_lsize(gd, y) != PANE_LSIZE_SINGLE)
			continue;
		for (x = 0; x < sx; x++) {
			c = pane_grid_cell(gd, x, y);
			if (c->wide && (x + 1 >= sx ||
			    !pane_grid_cell(gd, x + 1, y)->pad))
				abort();
			if (c->pad && (x == 0 || !pane_grid_cell(gd, x - 1, y)->wide))
				abort();
		}
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pane *vt;
	const uint8_t *p, *end = data + size, *cut;

	if (size < 2)
		return 0;
	vt = pane_create(1 + data[0] % 100, 1 + data[1] % 40, 50,
	    fuzz_vterm_reply, NULL);
	for (p = data + 2; p < end; p = cut + 1) {
		if ((cut = memchr(p, 0xff, (size_t)(end - p))) == NULL)
			cut = end;
		if (cut - p >= 3 && p[0] == 0xfe) {
			pane_resize(vt, 1 + p[1] % 100, 1 + p[2] % 40);
			fuzz_vterm_check_rows(vt);
		} else
			pane_feed(vt, (const char *)p, (size_t)(cut - p));
		fuzz_vterm_check(vt);
		if (cut == end)
			break;
	}
	pane_free(vt);
	return 0;
}
