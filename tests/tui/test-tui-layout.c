/* Pane layout: splits, geometry, borders, focus by direction, zoom, removal, small terminals. */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "lib/testlib.h"
#include "tui/tui.h"

static void
expect_rect(struct tui_layout *lay, int pane, unsigned x, unsigned y,
    unsigned sx, unsigned sy)
{
	struct tui_rect r;

	assert_true(tui_layout_rect(lay, pane, &r));
	assert_int_equal(r.x, x);
	assert_int_equal(r.y, y);
	assert_int_equal(r.sx, sx);
	assert_int_equal(r.sy, sy);
}

static void
test_single(void **state)
{
	struct tui_layout *lay = tui_layout_create(1);
	struct tui_rect b[4];
	int panes[4];

	assert_true(tui_layout_apply(lay, 0, 1, 80, 23));
	expect_rect(lay, 1, 0, 1, 80, 23);
	assert_int_equal(tui_layout_focus(lay), 1);
	assert_int_equal(tui_layout_panes(lay, panes, 4), 1);
	assert_int_equal(tui_layout_borders(lay, b, 4), 0);
	assert_false(tui_layout_remove(lay, 1));
	assert_false(tui_layout_focus_dir(lay, TUI_DIR_LEFT));
	tui_layout_set_zoom(lay, true);
	assert_false(tui_layout_zoomed(lay));
	tui_layout_free(lay);
}

static void
test_splits(void **state)
{
	struct tui_layout *lay = tui_layout_create(1);
	struct tui_rect b[4];
	int panes[4];

	tui_layout_apply(lay, 0, 0, 80, 24);
	assert_true(tui_layout_split(lay, 2, true));
	assert_int_equal(tui_layout_focus(lay), 2);
	expect_rect(lay, 1, 0, 0, 39, 24);
	expect_rect(lay, 2, 40, 0, 40, 24);
	assert_int_equal(tui_layout_borders(lay, b, 4), 1);
	assert_int_equal(b[0].x, 39);
	assert_int_equal(b[0].sx, 1);
	assert_int_equal(b[0].sy, 24);
	assert_true(tui_layout_split(lay, 3, false));
	expect_rect(lay, 2, 40, 0, 40, 11);
	expect_rect(lay, 3, 40, 12, 40, 12);
	assert_int_equal(tui_layout_panes(lay, panes, 4), 3);
	assert_int_equal(panes[0], 1);
	assert_int_equal(panes[1], 2);
	assert_int_equal(panes[2], 3);
	assert_int_equal(tui_layout_borders(lay, b, 4), 2);
	assert_int_equal(b[1].y, 11);
	assert_int_equal(b[1].x, 40);
	/* A pane already shown cannot be shown twice. */
	assert_false(tui_layout_split(lay, 2, true));
	/* The whole area is covered: panes, borders, nothing else. */
	assert_int_equal(tui_layout_pane_at(lay, 10, 20), 1);
	assert_int_equal(tui_layout_pane_at(lay, 45, 5), 2);
	assert_int_equal(tui_layout_pane_at(lay, 45, 15), 3);
	assert_int_equal(tui_layout_pane_at(lay, 39, 5), -1);
	assert_int_equal(tui_layout_pane_at(lay, 45, 11), -1);
	/* Resizing recomputes every rectangle. */
	tui_layout_apply(lay, 0, 0, 120, 40);
	expect_rect(lay, 1, 0, 0, 59, 40);
	expect_rect(lay, 3, 60, 20, 60, 20);
	tui_layout_free(lay);
}

static void
test_focus_directions(void **state)
{
	struct tui_layout *lay = tui_layout_create(1);

	tui_layout_apply(lay, 0, 0, 80, 24);
	tui_layout_split(lay, 2, true);
	tui_layout_split(lay, 3, false);
	assert_true(tui_layout_focus_dir(lay, TUI_DIR_UP));
	assert_int_equal(tui_layout_focus(lay), 2);
	assert_false(tui_layout_focus_dir(lay, TUI_DIR_UP));
	assert_false(tui_layout_focus_dir(lay, TUI_DIR_RIGHT));
	assert_true(tui_layout_focus_dir(lay, TUI_DIR_DOWN));
	assert_int_equal(tui_layout_focus(lay), 3);
	assert_true(tui_layout_focus_dir(lay, TUI_DIR_LEFT));
	assert_int_equal(tui_layout_focus(lay), 1);
	assert_true(tui_layout_focus_dir(lay, TUI_DIR_RIGHT));
	assert_int_not_equal(tui_layout_focus(lay), 1);
	assert_true(tui_layout_set_focus(lay, 3));
	assert_false(tui_layout_set_focus(lay, 9));
	assert_int_equal(tui_layout_focus(lay), 3);
	tui_layout_free(lay);
}

static void
test_zoom_and_remove(void **state)
{
	struct tui_layout *lay = tui_layout_create(1);
	int panes[4];

	tui_layout_apply(lay, 0, 0, 80, 24);
	tui_layout_split(lay, 2, true);
	tui_layout_split(lay, 3, false);
	tui_layout_set_zoom(lay, true);
	assert_true(tui_layout_zoomed(lay));
	tui_layout_apply(lay, 0, 0, 80, 24);
	assert_int_equal(tui_layout_panes(lay, panes, 4), 1);
	assert_int_equal(panes[0], 3);
	expect_rect(lay, 3, 0, 0, 80, 24);
	assert_false(tui_layout_rect(lay, 1, &(struct tui_rect){ 0 }));
	/* No splitting while zoomed. */
	assert_false(tui_layout_split(lay, 4, true));
	tui_layout_set_zoom(lay, false);
	tui_layout_apply(lay, 0, 0, 80, 24);
	assert_int_equal(tui_layout_panes(lay, panes, 4), 3);
	/* Removing 2: its sibling 3 takes the right half. */
	assert_true(tui_layout_remove(lay, 2));
	tui_layout_apply(lay, 0, 0, 80, 24);
	expect_rect(lay, 3, 40, 0, 40, 24);
	assert_int_equal(tui_layout_focus(lay), 3);
	/* Another session shown in 3's place. */
	tui_layout_replace(lay, 3, 7);
	assert_false(tui_layout_contains(lay, 3));
	assert_true(tui_layout_contains(lay, 7));
	expect_rect(lay, 7, 40, 0, 40, 24);
	assert_true(tui_layout_remove(lay, 7));
	tui_layout_apply(lay, 0, 0, 80, 24);
	expect_rect(lay, 1, 0, 0, 80, 24);
	assert_int_equal(tui_layout_focus(lay), 1);
	tui_layout_free(lay);
}

static void
test_small_terminal(void **state)
{
	struct tui_layout *lay = tui_layout_create(1);
	int panes[4];

	tui_layout_apply(lay, 0, 0, 20, 24);
	/* 20 columns cannot hold two panes of 10 and a border. */
	assert_false(tui_layout_split(lay, 2, true));
	assert_true(tui_layout_split(lay, 2, false));
	/* Squeezed below two usable panes: only the focused one shows. */
	assert_true(tui_layout_apply(lay, 0, 0, 20, 6));
	assert_int_equal(tui_layout_panes(lay, panes, 4), 1);
	assert_int_equal(panes[0], 2);
	expect_rect(lay, 2, 0, 0, 20, 6);
	/* Below one usable pane: nothing fits. */
	assert_false(tui_layout_apply(lay, 0, 0, 8, 2));
	/* Big enough again: both come back. */
	assert_true(tui_layout_apply(lay, 0, 0, 20, 24));
	assert_int_equal(tui_layout_panes(lay, panes, 4), 2);
	tui_layout_free(lay);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_single),
		cmocka_unit_test(test_splits),
		cmocka_unit_test(test_focus_directions),
		cmocka_unit_test(test_zoom_and_remove),
		cmocka_unit_test(test_small_terminal),
	};

	return test_run_group(tests, NULL, NULL);
}
