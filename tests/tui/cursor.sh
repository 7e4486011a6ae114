#!/bin/sh
# The terminal's cursor through a real tmux: it sits where the focused pane's program has it (after `echo
# hello` in sh, and as it types), hides when the program hides it, takes the program's shape (DECSCUSR, seen
# in what agentmux writes to tmux), and goes into a dialog while the dialog has the keys.
set -u
. "$(dirname "$0")/lib.sh"

# The outer terminal's cursor as tmux has it: X,Y,VISIBLE.
cursor() {
	tmux -L "$SOCK" display -p -t 0 '#{cursor_x},#{cursor_y},#{cursor_flag}'
}

# wait_cursor X,Y,VISIBLE WHAT: polls (10 s) for the cursor to get there (a glob: *,*,0 is hidden).
wait_cursor() {
	i=0
	while [ $i -lt 100 ]; do
		# shellcheck disable=SC2254
		case $(cursor) in $1) return 0 ;; esac
		sleep 0.1
		i=$((i + 1))
	done
	fail "$2: the cursor is at $(cursor), expected $1"
}

# The row (from 0) of the last screen line matching PATTERN.
row_of() {
	scr | grep -n -- "$1" | tail -n 1 | cut -d: -f1 | awk '{ print $1 - 1 }'
}

start_dashboard
wait_for '[0-9][0-9]*:shell\* (working|needs you)' || fail "no status bar with the first session"
wait_for '[#$] ?$' || fail "no shell prompt in the pane"
tmux -L "$SOCK" pipe-pane -o -t 0 "cat >>'$T/out'" || fail "cannot watch what agentmux writes"

keys "PS1='P>'" Enter
wait_for '^P>$' || fail "the prompt did not change"
keys 'echo hello' Enter
wait_for '^hello$' || fail "echo hello did not run"
wait_for '^hello$' && y=$(( $(row_of '^hello$') + 1 ))
wait_cursor "2,$y,1" "after echo hello"

# It moves as the program moves it.
keys 'xyz'
wait_cursor "5,$y,1" "after typing three characters"
keys C-u
wait_cursor "2,$y,1" "after erasing the line"

# Hidden while the program hides it, back when it shows it again.
keys "printf '\\033[?25l'" Enter
y=$((y + 1))
wait_cursor "*,*,0" "after the program hid the cursor"
keys "printf '\\033[?25h'" Enter
y=$((y + 1))
wait_cursor "2,$y,1" "after the program showed the cursor again"

# The program's shape goes to the terminal.
keys "printf '\\033[4 q'" Enter
i=0
while [ $i -lt 100 ] && ! grep -q "$(printf '\033')\\[4 q" "$T/out" 2>/dev/null; do
	sleep 0.1
	i=$((i + 1))
done
grep -q "$(printf '\033')\\[4 q" "$T/out" || fail "the underline shape (DECSCUSR 4) did not reach the terminal"

# A dialog takes the cursor while it has the keys, and gives it back.
keys 'clear' Enter
wait_for '^P>$' || fail "no prompt after clear"
prefix q
wait_for 'y: yes   n, Esc: no' || fail "no quit dialog"
dy=$(row_of 'y: yes   n, Esc: no')
dx=$(scr | sed -n "$((dy + 1))p" | awk '{ print index($0, "y: yes   n, Esc: no") - 1 + length("y: yes   n, Esc: no ") }')
wait_cursor "$dx,$dy,1" "in the quit dialog"
keys n
wait_gone 'y: yes   n, Esc: no' || fail "the dialog did not close"
wait_cursor "2,0,1" "back in the pane after the dialog"

echo "cursor: on the pane's cursor, moving with it, hidden with it, its shape, in a dialog"
