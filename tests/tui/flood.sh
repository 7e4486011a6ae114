#!/bin/sh
# A client attaches while a pane floods output (seq through sed, as fast
# as the jail can write): the attach draws the dashboard and the pane, the client
# takes keys at once (the help opens and closes, C-c reaches the pane and
# ends the flood), and the client already attached stays responsive too.
set -u
. "$(dirname "$0")/lib.sh"

# ---- client A starts the session and floods its pane ----
DASH_SX=100 DASH_SY=30 start_dashboard
wait_for '[0-9]+:shell\* (working|needs you)' 30 || fail "no dashboard in the first terminal"
wait_for '[#$] ?$' 20 || fail "no shell prompt"
s1=$("$AGENTMUX" ls | head -n 1 | cut -d: -f1)
[ -n "$s1" ] || fail "agentmux ls lists no session"
# (seq and sed through a pipe: blocks of output as fast as the jail writes them.)
keys 'clear; seq 1 100000000 | sed "s/^/flood-line-/; s/$/ ......................................../"' Enter
wait_for '^flood-line-[0-9]+ \.+' 20 || fail "the pane does not flood"

# ---- client B attaches during the flood: it draws ----
tmux -L "$SOCK2" -u -f /dev/null new-session -d -x 130 -y 24 -c "$P" \
	-e "XDG_CONFIG_HOME=$XDG_CONFIG_HOME" -e "XDG_DATA_HOME=$XDG_DATA_HOME" \
	-e "XDG_RUNTIME_DIR=$XDG_RUNTIME_DIR" -e "XDG_STATE_HOME=$XDG_STATE_HOME" \
	-e "TERM=xterm-256color" \
	"$AGENTMUX attach -t $s1; echo ATTACH-EXITED-\$?; sleep 60" ||
	fail "tmux could not start agentmux attach"
wait_status 2 "$s1:shell\\* " 20 || fail2 "the attach during a flood drew no status bar"
wait_for2 '^flood-line-[0-9]+ \.+' 20 || fail2 "the attach during a flood did not draw the pane"
# The flood goes on in B: the numbers it shows move.
n1=$(scr2 | sed -n 's/^flood-line-\([0-9]*\) .*/\1/p' | tail -n 1)
i=0
while [ $i -lt 100 ]; do
	n2=$(scr2 | sed -n 's/^flood-line-\([0-9]*\) .*/\1/p' | tail -n 1)
	[ -n "$n2" ] && [ -n "$n1" ] && [ "$n2" -gt "$n1" ] && break
	sleep 0.1
	i=$((i + 1))
done
[ -n "$n2" ] && [ -n "$n1" ] && [ "$n2" -gt "$n1" ] || fail2 "the second client's pane stopped at line ${n1:-?} during the flood"
echo "flood: an attach during a flood draws the dashboard and the pane"

# ---- B takes keys during the flood ----
keys2 C-a '?'
wait_for2 'agentmux keys\. The prefix is' 20 || fail2 "prefix ? opened no help in the second client during the flood"
keys2 Escape
wait_gone2 'agentmux keys\. The prefix is' 20 || fail2 "Esc did not close the help during the flood"
# A's keys are taken too.
prefix r
wait_for 'requests: [0-9]+' 20 || fail "the first client did not open its requests panel during the flood"
escape
wait_gone 'requests: [0-9]+' 20 || fail "Esc did not close the first client's panel during the flood"
keys2 C-c
wait_for2 '[#$] ?$' 20 || fail2 "C-c from the second client did not end the flood"
keys2 'clear; echo calm-$((2+3))' Enter
wait_for2 '^calm-5$' 20 || fail2 "the pane does not take keys after the flood"
wait_for '^calm-5$' 20 || fail "the first client does not show the pane after the flood"
scr2 | grep -q 'ATTACH-EXITED' && fail2 "the second client exited"
scr | grep -q 'DASHBOARD-EXITED' && fail "the first client exited"
echo "flood: both clients take keys during the flood, and C-c ends it"
