/* Colour mapping: what each kind of terminal gets for default, indexed and RGB colours. */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "lib/testlib.h"
#include "tui/tui.h"

static void
test_default_and_no_colour(void **state)
{
	assert_int_equal(tui_render_color(PANE_COLOR_DEFAULT, 256), -1);
	assert_int_equal(tui_render_color(PANE_COLOR_DEFAULT, 0x1000000), -1);
	/* Without colour (NO_COLOR, color = never) nothing maps. */
	assert_int_equal(tui_render_color(PANE_COLOR_INDEX(1), 0), -1);
	assert_int_equal(tui_render_color(PANE_COLOR_MAKE_RGB(255, 0, 0), 0), -1);
}

static void
test_256(void **state)
{
	assert_int_equal(tui_render_color(PANE_COLOR_INDEX(1), 256), 1);
	assert_int_equal(tui_render_color(PANE_COLOR_INDEX(200), 256), 200);
	/* Exact cube colours map to themselves, greys to the ramp. */
	assert_int_equal(tui_render_color(PANE_COLOR_MAKE_RGB(255, 0, 0), 256),
	    196);
	assert_int_equal(tui_render_color(PANE_COLOR_MAKE_RGB(95, 135, 175),
	    256), 16 + 36 * 1 + 6 * 2 + 3);
	assert_int_equal(tui_render_color(PANE_COLOR_MAKE_RGB(128, 128, 128),
	    256), 244);
	assert_int_equal(tui_render_color(PANE_COLOR_MAKE_RGB(250, 10, 5), 256),
	    196);
}

static void
test_16_and_8(void **state)
{
	assert_int_equal(tui_render_color(PANE_COLOR_INDEX(9), 16), 9);
	assert_int_equal(tui_render_color(PANE_COLOR_INDEX(9), 8), 1);
	/* 256-colour and RGB values become the nearest of the 16. */
	assert_int_equal(tui_render_color(PANE_COLOR_INDEX(196), 16), 9);
	assert_int_equal(tui_render_color(PANE_COLOR_MAKE_RGB(0, 0, 230), 16), 4);
	assert_int_equal(tui_render_color(PANE_COLOR_MAKE_RGB(250, 250, 250),
	    16), 15);
	assert_int_equal(tui_render_color(PANE_COLOR_MAKE_RGB(250, 250, 250), 8),
	    7);
	assert_int_equal(tui_render_color(PANE_COLOR_INDEX(232), 8), 0);
}

static void
test_direct(void **state)
{
	assert_int_equal(tui_render_color(PANE_COLOR_MAKE_RGB(1, 2, 3),
	    0x1000000), 0x010203);
	assert_int_equal(tui_render_color(PANE_COLOR_INDEX(3), 0x1000000), 3);
	assert_int_equal(tui_render_color(PANE_COLOR_INDEX(196), 0x1000000),
	    0xff0000);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_and_no_colour),
		cmocka_unit_test(test_256),
		cmocka_unit_test(test_16_and_8),
		cmocka_unit_test(test_direct),
	};

	return test_run_group(tests, NULL, NULL);
}
