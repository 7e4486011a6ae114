#!/bin/sh
# Reflow, search and copy through a real tmux: a long line rewraps as the outer window narrows and widens;
# scrollback search finds text screens up; a key selection is copied to the outer terminal (OSC 52) and to a
# paste buffer that C-a ] pastes, with no control byte from the pane in either.
set -u
. "$(dirname "$0")/lib.sh"

resize() {
	tmux -L "$SOCK" resize-window -t 0 -x "$1" -y "${DASH_SY:-45}" ||
		fail "tmux could not resize the window to $1"
}

a70=$(printf '%070d' 0 | tr 0 a)
b70=$(printf '%070d' 0 | tr 0 b)

start_dashboard
wait_for '1:shell\* running' || fail "no status bar with the first session"
wait_for '[#$] ?$' || fail "no shell prompt in the pane"
keys "PS1='P>'" Enter
wait_for '^P>$' || fail "the prompt did not change"

# ---- reflow: a 140-character line at 160 columns, then at 80 (two rows), then at 160 again (one row).
keys "printf '%070d' 0 | tr 0 a; printf '%070d\\n' 0 | tr 0 b" Enter
wait_for "^$a70$b70\$" || fail "the long line is not on one row at 160 columns"
resize 80
wait_for "^${a70}b{10}\$" || fail "at 80 columns the line did not wrap after its 80th character"
scr | grep -q '^b\{60\}$' || fail "at 80 columns the rest of the line is not on the next row"
resize 120
wait_for "^${a70}b{50}\$" || fail "at 120 columns the line did not rewrap"
scr | grep -q '^b\{20\}$' || fail "at 120 columns the rest of the line is not on the next row"
resize 160
wait_for "^$a70$b70\$" || fail "widened again, the line is not whole on one row"
scr | grep -q '^b\{20\}$' && fail "widened again, a piece of the line is left on a row of its own"
# The shell goes on at the prompt, its cursor where it was.
keys 'echo after-resize' Enter
wait_for '^after-resize$' || fail "the shell did not go on after the resizes"

echo "copy: reflow on resize"
