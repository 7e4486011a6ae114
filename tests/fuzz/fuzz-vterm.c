/*
 * Fuzzes a pane's terminal (tui-vtseq.c in front of libvterm 0.1.4, and
 * the grid): everything a jailed program prints is parsed on the host.
 * Beyond "no crash" it checks that the cursor stays on the screen and,
 * after each resize (which rewraps the lines, tui_grid_reflow), that no
 * wide character of the history or the screen was cut in two.
 *
 * Input: one byte for the width, one for the height, then output, cut
 * into reads at every 0xff byte; a read that starts with 0xfe resizes.
 */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "fuzz.h"
#include "tui/tui.h"

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
fuzz_vterm_check(struct tui_vterm *vt)
{
	struct tui_grid *gd = tui_vterm_grid(vt);
	unsigned x, y;

	tui_vterm_cursor(vt, &x, &y);
	if (x >= tui_grid_sx(gd) || y >= tui_grid_sy(gd))
		abort();
	if (tui_vterm_cursor_column(vt) >= tui_grid_sx(gd))
		abort();
}

/* Every wide character has its right half beside it, and every right half its left. */
static void
fuzz_vterm_check_rows(struct tui_vterm *vt)
{
	struct tui_grid *gd = tui_vterm_grid(vt);
	const struct tui_cell *c;
	unsigned x, sx = tui_grid_sx(gd);
	int y;

	for (y = -(int)tui_grid_hsize(gd); y < (int)tui_grid_sy(gd); y++) {
		if (tui_grid_lsize(gd, y) != TUI_LSIZE_SINGLE)
			continue;
		for (x = 0; x < sx; x++) {
			c = tui_grid_cell(gd, x, y);
			if (c->wide && (x + 1 >= sx ||
			    !tui_grid_cell(gd, x + 1, y)->pad))
				abort();
			if (c->pad && (x == 0 || !tui_grid_cell(gd, x - 1, y)->wide))
				abort();
		}
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tui_vterm *vt;
	const uint8_t *p, *end = data + size, *cut;

	if (size < 2)
		return 0;
	vt = tui_vterm_create(1 + data[0] % 100, 1 + data[1] % 40, 50,
	    fuzz_vterm_reply, NULL);
	for (p = data + 2; p < end; p = cut + 1) {
		if ((cut = memchr(p, 0xff, (size_t)(end - p))) == NULL)
			cut = end;
		if (cut - p >= 3 && p[0] == 0xfe) {
			tui_vterm_resize(vt, 1 + p[1] % 100, 1 + p[2] % 40);
			fuzz_vterm_check_rows(vt);
		} else
			tui_vterm_feed(vt, (const char *)p, (size_t)(cut - p));
		fuzz_vterm_check(vt);
		if (cut == end)
			break;
	}
	tui_vterm_free(vt);
	return 0;
}
