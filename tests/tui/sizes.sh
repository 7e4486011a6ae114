#!/bin/sh
# Two clients whose terminals are neither both taller nor both wider (100x30 and 140x24), then resized
# (80x40, 160x20): every client keeps drawing and the server lives. ncurses 6.4 keeps one window list for
# all screens, so a resize of one screen resized the others' windows; the next refresh of the other read
# past its lines and the server crashed in doupdate.
set -u
. "$(dirname "$0")/lib.sh"

# alive WHAT: the server still runs (its pid answers) and lists the session.
alive() {
	_sp=$(server_pid)
	[ -n "$_sp" ] && kill -0 "$_sp" 2>/dev/null || fail "the server died $1"
	"$AGENTMUX" ls >/dev/null 2>&1 || fail "agentmux ls failed $1"
}

DASH_SX=100 DASH_SY=30 start_dashboard
wait_for '[0-9]+:shell\* (working|needs you)' 30 || fail "no dashboard in the first terminal"
wait_for '[#$] ?$' 20 || fail "no shell prompt"

tmux -L "$SOCK2" -u -f /dev/null new-session -d -x 140 -y 24 -c "$P" \
	-e "XDG_CONFIG_HOME=$XDG_CONFIG_HOME" -e "XDG_DATA_HOME=$XDG_DATA_HOME" \
	-e "XDG_RUNTIME_DIR=$XDG_RUNTIME_DIR" -e "XDG_STATE_HOME=$XDG_STATE_HOME" \
	-e "TERM=xterm-256color" \
	"$AGENTMUX attach; echo ATTACH-EXITED-\$?; sleep 60" ||
	fail "tmux could not start agentmux attach"
wait_for2 '[0-9]+:shell\* (working|needs you)' 30 || fail2 "no dashboard in the second terminal"

n=0
for size in "100 30 140 24" "80 40 140 24" "80 40 160 20" "120 24 90 44"; do
	set -- $size
	tmux -L "$SOCK" resize-window -t 0 -x "$1" -y "$2" 2>/dev/null
	tmux -L "$SOCK2" resize-window -t 0 -x "$3" -y "$4" 2>/dev/null
	n=$((n + 1))
	keys "echo one-$n-\$((6*7))" Enter
	wait_for "one-$n-42" 10 || fail "the first terminal ($1x$2) stopped drawing beside one of $3x$4"
	alive "after the first terminal typed at $1x$2 beside $3x$4"
	keys2 "echo two-$n-\$((6*8))" Enter
	wait_for2 "two-$n-48" 10 || fail2 "the second terminal ($3x$4) stopped drawing beside one of $1x$2"
	alive "after the second terminal typed at $3x$4 beside $1x$2"
	# Both show the pane as it is now: the first's is redrawn too.
	wait_for "two-$n-48" 10 || fail "the first terminal does not show what the second typed ($1x$2 beside $3x$4)"
done
scr | grep -q 'DASHBOARD-EXITED' && fail "the first client ended"
scr2 | grep -q 'ATTACH-EXITED' && fail2 "the second client ended"
echo "sizes: two clients of crossing sizes, resized four times, both drawing"

# ---- a client that attaches smaller than 20x5 is told so; resized back, it draws whole ----
tmux_kill "$SOCK2"
tmux -L "$SOCK" resize-window -t 0 -x 100 -y 30 2>/dev/null
tmux -L "$SOCK2" -u -f /dev/null new-session -d -x 15 -y 4 -c "$P" \
	-e "XDG_CONFIG_HOME=$XDG_CONFIG_HOME" -e "XDG_DATA_HOME=$XDG_DATA_HOME" \
	-e "XDG_RUNTIME_DIR=$XDG_RUNTIME_DIR" -e "XDG_STATE_HOME=$XDG_STATE_HOME" \
	-e "TERM=xterm-256color" \
	"$AGENTMUX attach; echo ATTACH-EXITED-\$?; sleep 60" ||
	fail "tmux could not start a 15x4 agentmux attach"
wait_for2 '^too small: 15x4' 30 || fail2 "a client attached at 15x4 does not say it is too small"
scr2 | grep -q '^need 20x5' || fail2 "a client attached at 15x4 does not say what it needs"
alive "after a client attached at 15x4"
keys "clear; echo small-beside-\$((6*7))" Enter
wait_for '^small-beside-42$' || fail "the first terminal stopped drawing beside a 15x4 client"
tmux -L "$SOCK2" resize-window -t 0 -x 3 -y 1 2>/dev/null
wait_for2 '^too$' || fail2 "a client at 3x1 does not show what fits of the message"
alive "after a client was resized to 3x1"
tmux -L "$SOCK2" resize-window -t 0 -x 80 -y 24 2>/dev/null
wait_for2 '^small-beside-42$' || fail2 "a client resized from 3x1 to 80x24 does not draw the pane"
wait_for2 'shell\* .*C-a \? help$' || fail2 "a client resized from 3x1 to 80x24 does not draw its status bar"
scr2 | grep -q 'too small' && fail2 "the too-small message stayed at 80x24"
keys2 "echo back-\$((6*8))" Enter
wait_for2 '^back-48$' || fail2 "a client resized back from 3x1 does not type into the pane"
wait_for '^back-48$' || fail "the first terminal does not show what the resized client typed"
echo "sizes: a client attached at 15x4 says it is too small and what it needs; resized back, it draws whole"
exit 0
