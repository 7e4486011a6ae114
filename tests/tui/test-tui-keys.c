/* Terminal input parsing and the prefix key dispatch. */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "lib/testlib.h"
#include "tui/tui.h"

#define MAXIN 16

static struct tui_input got[MAXIN];
static char pasted[256];
static size_t ngot;

static void
collect(void *arg, const struct tui_input *in)
{
	assert_true(ngot < MAXIN);
	got[ngot] = *in;
	if (in->type == TUI_INPUT_PASTE) {
		assert_true(in->pastelen < sizeof pasted);
		memcpy(pasted, in->paste, in->pastelen);
		pasted[in->pastelen] = '\0';
	}
	ngot++;
}

/* Parses S in one go; returns whether a sequence is left pending. */
static bool
parse(struct tui_keys *tk, const char *s)
{
	ngot = 0;
	return tui_keys_parse(tk, s, strlen(s), collect, NULL);
}

static void
expect_key(size_t i, uint32_t code, int mods)
{
	assert_true(i < ngot);
	assert_int_equal(got[i].type, TUI_INPUT_KEY);
	assert_int_equal(got[i].key.code, code);
	assert_int_equal(got[i].key.mods, mods);
}

static void
test_plain_keys(void **state)
{
	struct tui_keys *tk = tui_keys_create();

	assert_false(parse(tk, "a\x01\r\x7f"));
	assert_int_equal(ngot, 4);
	expect_key(0, 'a', 0);
	expect_key(1, 1, 0);
	expect_key(2, '\r', 0);
	expect_key(3, 0x7f, 0);
	/* UTF-8 split between reads. */
	assert_true(parse(tk, "\xc3"));
	assert_int_equal(ngot, 0);
	assert_false(parse(tk, "\xa9"));
	expect_key(0, 0xe9, 0);
	assert_false(parse(tk, "\xe4\xb8\xad"));
	expect_key(0, 0x4e2d, 0);
	tui_keys_free(tk);
}

static void
test_special_keys(void **state)
{
	struct tui_keys *tk = tui_keys_create();

	assert_false(parse(tk, "\x1b[A\x1b[1;5A\x1bOP\x1b[15~\x1b[3;2~\x1b[Z"
	    "\x1b[H\x1bOF\x1b[5~\x1b[24~\x1b[1;3D"));
	assert_int_equal(ngot, 11);
	expect_key(0, TUI_KEY_UP, 0);
	expect_key(1, TUI_KEY_UP, TUI_MOD_CTRL);
	expect_key(2, TUI_KEY_F1, 0);
	expect_key(3, TUI_KEY_F1 + 4, 0);
	expect_key(4, TUI_KEY_DELETE, TUI_MOD_SHIFT);
	expect_key(5, TUI_KEY_BACKTAB, 0);
	expect_key(6, TUI_KEY_HOME, 0);
	expect_key(7, TUI_KEY_END, 0);
	expect_key(8, TUI_KEY_PAGEUP, 0);
	expect_key(9, TUI_KEY_F12, 0);
	expect_key(10, TUI_KEY_LEFT, TUI_MOD_ALT);
	/* Alt+x, and a sequence split between reads. */
	assert_false(parse(tk, "\x1bx"));
	expect_key(0, 'x', TUI_MOD_ALT);
	assert_true(parse(tk, "\x1b[1;"));
	assert_false(parse(tk, "2B"));
	expect_key(0, TUI_KEY_DOWN, TUI_MOD_SHIFT);
	tui_keys_free(tk);
}

static void
test_lone_escape(void **state)
{
	struct tui_keys *tk = tui_keys_create();

	assert_true(parse(tk, "\x1b"));
	assert_int_equal(ngot, 0);
	tui_keys_flush(tk, collect, NULL);
	expect_key(0, 0x1b, 0);
	/* An unfinished CSI flushed: Escape, then what followed as keys. */
	assert_true(parse(tk, "\x1b[1"));
	tui_keys_flush(tk, collect, NULL);
	assert_int_equal(ngot, 3);
	expect_key(0, 0x1b, 0);
	expect_key(1, '[', 0);
	expect_key(2, '1', 0);
	assert_false(parse(tk, "q"));
	expect_key(0, 'q', 0);
	tui_keys_free(tk);
}

static void
test_mouse(void **state)
{
	struct tui_keys *tk = tui_keys_create();

	assert_false(parse(tk, "\x1b[<0;10;5M\x1b[<0;10;5m\x1b[<64;1;1M"
	    "\x1b[<65;2;2M\x1b[<32;4;4M\x1b[<18;3;3M"));
	assert_int_equal(ngot, 6);
	assert_int_equal(got[0].type, TUI_INPUT_MOUSE);
	assert_int_equal(got[0].mouse.type, TUI_MOUSE_PRESS);
	assert_int_equal(got[0].mouse.button, 1);
	assert_int_equal(got[0].mouse.x, 9);
	assert_int_equal(got[0].mouse.y, 4);
	assert_int_equal(got[1].mouse.type, TUI_MOUSE_RELEASE);
	assert_int_equal(got[2].mouse.type, TUI_MOUSE_WHEEL_UP);
	assert_int_equal(got[3].mouse.type, TUI_MOUSE_WHEEL_DOWN);
	assert_int_equal(got[4].mouse.type, TUI_MOUSE_DRAG);
	assert_int_equal(got[5].mouse.button, 3);
	assert_int_equal(got[5].mouse.mods, TUI_MOD_CTRL);
	/* Old-style X10 reports are consumed, not typed. */
	assert_false(parse(tk, "\x1b[M !!z"));
	assert_int_equal(ngot, 1);
	expect_key(0, 'z', 0);
	tui_keys_free(tk);
}

static void
test_paste(void **state)
{
	struct tui_keys *tk = tui_keys_create();

	assert_false(parse(tk, "\x1b[200~hello\x01world\x1b[201~k"));
	assert_int_equal(ngot, 2);
	assert_int_equal(got[0].type, TUI_INPUT_PASTE);
	assert_string_equal(pasted, "hello\x01world");
	expect_key(1, 'k', 0);
	/* Split anywhere, the end marker too; the text is not keys. */
	assert_false(parse(tk, "\x1b[200~ab\x1b"));
	assert_int_equal(ngot, 0);
	assert_false(parse(tk, "[20"));
	assert_false(parse(tk, "1~"));
	assert_int_equal(ngot, 1);
	assert_string_equal(pasted, "ab");
	/* An escape inside a paste that is not the end stays in it. */
	assert_false(parse(tk, "\x1b[200~a\x1b[Ab\x1b[201~"));
	assert_string_equal(pasted, "a\x1b[Ab");
	tui_keys_free(tk);
}

static void
test_dispatch(void **state)
{
	struct tui_keymap km = { .prefix_key = 1 };
	const struct tui_binding *b;
	struct tui_key k = { .code = 'x' };

	assert_int_equal(tui_keys_dispatch(&km, &k, &b), TUI_DISPATCH_PANE);
	k.code = 1;
	assert_int_equal(tui_keys_dispatch(&km, &k, &b), TUI_DISPATCH_PREFIX);
	k.code = 'c';
	assert_int_equal(tui_keys_dispatch(&km, &k, &b), TUI_DISPATCH_ACTION);
	assert_int_equal(b->action, TUI_ACT_NEW);
	/* Back to the pane after one command. */
	assert_int_equal(tui_keys_dispatch(&km, &k, &b), TUI_DISPATCH_PANE);
	/* The prefix twice sends it. */
	k.code = 1;
	tui_keys_dispatch(&km, &k, &b);
	assert_int_equal(tui_keys_dispatch(&km, &k, &b), TUI_DISPATCH_ACTION);
	assert_int_equal(b->action, TUI_ACT_SEND_PREFIX);
	tui_keys_dispatch(&km, &k, &b);
	k.code = '7';
	tui_keys_dispatch(&km, &k, &b);
	assert_int_equal(b->action, TUI_ACT_SELECT);
	assert_int_equal(b->arg, 7);
	k.code = 1;
	tui_keys_dispatch(&km, &k, &b);
	k.code = TUI_KEY_LEFT;
	tui_keys_dispatch(&km, &k, &b);
	assert_int_equal(b->action, TUI_ACT_FOCUS);
	assert_int_equal(b->arg, TUI_DIR_LEFT);
	k.code = 1;
	tui_keys_dispatch(&km, &k, &b);
	k.code = 'y';
	assert_int_equal(tui_keys_dispatch(&km, &k, &b), TUI_DISPATCH_UNBOUND);
	assert_int_equal(tui_keys_dispatch(&km, &k, &b), TUI_DISPATCH_PANE);
	/* Another prefix key. */
	km.prefix_key = 2;
	k.code = 1;
	assert_int_equal(tui_keys_dispatch(&km, &k, &b), TUI_DISPATCH_PANE);
}

static void
test_every_key_has_help(void **state)
{
	const struct tui_binding *t;
	const int wanted[] = { TUI_ACT_NEW, TUI_ACT_CLOSE, TUI_ACT_NEXT,
	    TUI_ACT_PREV, TUI_ACT_SELECT, TUI_ACT_ZOOM, TUI_ACT_SPLIT_H,
	    TUI_ACT_SPLIT_V, TUI_ACT_FOCUS, TUI_ACT_REQUESTS, TUI_ACT_HISTORY,
	    TUI_ACT_SNAPSHOTS, TUI_ACT_DIFF, TUI_ACT_CONFDIFF, TUI_ACT_PROMPTS,
	    TUI_ACT_SCROLLBACK, TUI_ACT_HELP, TUI_ACT_QUIT,
	    TUI_ACT_SEND_PREFIX, TUI_ACT_REDRAW };
	size_t n, i, j;
	bool listed;

	t = tui_keys_bindings(&n);
	for (i = 0; i < nitems(wanted); i++) {
		listed = false;
		for (j = 0; j < n; j++) {
			if ((int)t[j].action == wanted[i] && t[j].name != NULL &&
			    t[j].help != NULL)
				listed = true;
		}
		assert_true(listed);
	}
	assert_string_equal(tui_keys_name(&(struct tui_key){ .code = 1 }),
	    "C-a");
	assert_string_equal(tui_keys_name(&(struct tui_key){ .code = 0x1d }),
	    "C-]");
	assert_string_equal(tui_keys_name(&(struct tui_key){
	    .code = TUI_KEY_UP, .mods = TUI_MOD_CTRL }), "C-Up");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain_keys),
		cmocka_unit_test(test_special_keys),
		cmocka_unit_test(test_lone_escape),
		cmocka_unit_test(test_mouse),
		cmocka_unit_test(test_paste),
		cmocka_unit_test(test_dispatch),
		cmocka_unit_test(test_every_key_has_help),
	};

	return test_run_group(tests, NULL, NULL);
}
