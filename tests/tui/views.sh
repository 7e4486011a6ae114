#!/bin/sh
# Two clients attached at once each have their own dialog and panels: the
# new-session dialog opened in one neither shows in the other nor takes
# its keys; each client's requests panel has its own filter and
# selection; each client's copy mode (its place in the history, its
# selection) is its own; a confirmation asked and answered in one never
# shows in the other; a client's dialog about a session closed in another,
# or that ended, closes with it.
set -u
. "$(dirname "$0")/lib.sh"
command -v curl >/dev/null 2>&1 || { echo "SKIP: curl is not installed"; exit 77; }

# Is the proxy serving jails here? A destination nobody decided on is denied.
probe=$("$AGENTMUX" run -C "$P" -- curl -sS https://127.0.0.1:9/probe 2>&1 </dev/null)
case $probe in
*"not allowed"*|*"were denied"*) ;;
*) echo "SKIP: the session layer does not serve the jail with the proxy (curl: $probe)"; exit 77 ;;
esac

cat >"$XDG_CONFIG_HOME/agentmux/config" <<EOF
[policy]
on_unknown = deny
EOF

# ---- client A (100x30) runs session S1 and makes two requests ----
DASH_SX=100 DASH_SY=30 start_dashboard
wait_for '[0-9]+:shell\* (working|needs you)' 30 || fail "no dashboard in the first terminal"
wait_for '[#$] ?$' 20 || fail "no shell prompt"
s1=$("$AGENTMUX" ls | head -n 1 | cut -d: -f1)
[ -n "$s1" ] || fail "agentmux ls lists no session"
# (Denied at CONNECT, a request's record has its host, not its path.)
keys 'clear; for h in 127.0.0.1 127.0.0.2; do curl -sS https://$h:9/; done; echo req-done-$((40+2))' Enter
wait_for '^req-done-42$' 30 || fail "the requests did not end"

# ---- client B (130x24: its status bar has room for notes) attaches to the same session ----
tmux -L "$SOCK2" -u -f /dev/null new-session -d -x 130 -y 24 -c "$P" \
	-e "XDG_CONFIG_HOME=$XDG_CONFIG_HOME" -e "XDG_DATA_HOME=$XDG_DATA_HOME" \
	-e "XDG_RUNTIME_DIR=$XDG_RUNTIME_DIR" -e "XDG_STATE_HOME=$XDG_STATE_HOME" \
	-e "TERM=xterm-256color" \
	"$AGENTMUX attach -t $s1; echo ATTACH-EXITED-\$?; sleep 60" ||
	fail "tmux could not start agentmux attach"
wait_status 2 "$s1:shell\\* " || fail2 "the second client does not show session $s1"
keys2 'clear' Enter
wait_for2 '^[^ ]*[#$] ?$' 20 || fail2 "no shell prompt in the second client"

# ---- the new-session dialog: A's own ----
prefix c
wait_for 'New session: pick an agent' || fail "prefix c did not open the new-session dialog"
sleep 0.3
scr2 | grep -q 'New session' && fail2 "the first client's new-session dialog shows in the second"
keys2 'echo b-$((20+1))' Enter
wait_for2 '^b-21$' || fail2 "the second client's keys did not reach its pane while the first has a dialog open"
scr | grep -q 'New session: pick an agent' || fail "the second client's keys closed the first client's dialog"
escape
wait_gone 'New session' || fail "Esc did not close the dialog"
echo "views: the new-session dialog is the client's own"

# ---- the requests panel: each client's filter and selection ----
prefix r
wait_for 'requests: [0-9]+ of [0-9]+' || fail "prefix r did not open the requests panel"
keys /
keys 127.0.0.2
keys Enter
wait_for 'requests: 1 of [0-9]+ +filter: 127\.0\.0\.2' || fail "the filter did not leave one request in the first client"
scr | grep -q '127\.0\.0\.1:9' && fail "the filter 127.0.0.2 shows 127.0.0.1"
keys2 C-a r
wait_for2 'requests: ([0-9]+) of \1 +/ filters' || fail2 "the second client's panel took the first client's filter"
scr2 | grep -q '127\.0\.0\.1:9' || fail2 "the second client's panel does not list 127.0.0.1"
scr2 | grep -q '127\.0\.0\.2:9' || fail2 "the second client's panel does not list 127.0.0.2"
# B moves its selection up; A's filter stays as it was.
keys2 Up
sleep 0.3
scr | grep -Eq 'requests: 1 of [0-9]+ +filter: 127\.0\.0\.2' || fail "the second client's keys changed the first client's panel"
keys2 /
keys2 127.0.0.1
keys2 Enter
wait_for2 'requests: 1 of [0-9]+ +filter: 127\.0\.0\.1' || fail2 "the second client's filter did not apply"
scr | grep -Eq 'filter: 127\.0\.0\.2' || fail "the second client's filter replaced the first client's"
scr | grep -q '127\.0\.0\.2:9' || fail "the first client's panel lost its request to the second's filter"
escape
wait_gone 'requests: ' || fail "Esc did not close the first client's panel"
keys2 Escape
sleep 0.2
wait_gone2 'requests: ' || fail2 "Esc did not close the second client's panel"
echo "views: each client's requests panel has its own filter and selection"

# ---- a confirmation asked in A, answered in A, never shows in B ----
prefix x
wait_for "Close session $s1 \\(shell\\)\\?" || fail "prefix x did not ask to close the session"
sleep 0.3
scr2 | grep -q 'Close session' && fail2 "the first client's question shows in the second"
keys2 'echo c-$((30+1))' Enter
wait_for2 '^c-31$' || fail2 "the second client's keys did not reach its pane while the first asks"
scr | grep -q 'Close session' || fail "the second client's keys answered the first client's question"
keys n
wait_gone 'Close session' || fail "n did not close the question"
status1 | grep -Eq "$s1:shell" || fail "answering n closed the session"
echo "views: a confirmation is the client's own"

# ---- copy mode: each client's own place in the history, selection and keys ----
keys 'clear; seq 1 200 | sed s/^/cm-/' Enter
wait_for '^cm-200$' 20 || fail "seq did not run"
prefix '['
wait_for 'q: back' || fail "prefix [ did not enter copy mode in the first client"
keys g
wait_for '\[[1-9][0-9]*/[0-9]+\] / \? n N Space' || fail "g did not go up the history in the first client"
sleep 0.3
scr2 | grep -q 'q: back' && fail2 "the first client's copy mode shows in the second"
keys2 'echo e-$((60+1))' Enter
wait_for2 '^e-61$' || fail2 "the second client's keys went to the first client's copy mode"
scr | grep -Eq '\[[1-9][0-9]*/[0-9]+\] / \? n N Space' || fail "the second client's keys moved or left the first client's copy mode"
# B's own copy mode starts half a screen up from where its view is (the bottom), not at A's place.
offa=$(scr | sed -n 's/.*\[\([0-9]*\)\/[0-9]*\] \/ ? n N Space.*/\1/p')
keys2 C-a '['
wait_for2 '\[[0-9]+/[0-9]+\] / \? n N Space' || fail2 "prefix [ did not enter copy mode in the second client"
offb=$(scr2 | sed -n 's/.*\[\([0-9]*\)\/[0-9]*\] \/ ? n N Space.*/\1/p')
[ -n "$offa" ] && [ -n "$offb" ] && [ "$offb" -lt 24 ] && [ "$offb" -lt "$offa" ] ||
	fail2 "the second client's copy mode did not start at its own place (first client at ${offa:-?} lines up, second at ${offb:-?})"
keys2 k
keys2 Space
wait_for2 'Enter: copy' || fail2 "Space did not start a selection in the second client"
sleep 0.3
scr | grep -q 'Enter: copy' && fail "the second client's selection shows in the first"
keys2 Enter
wait_for2 'copied [0-9]+ bytes' || fail2 "Enter did not copy the second client's selection"
wait_gone2 'q: back' || fail2 "copying did not leave the second client's copy mode"
scr | grep -Eq '\[[1-9][0-9]*/[0-9]+\] / \? n N Space' || fail "the second client's copy left the first client's copy mode"
keys q
wait_gone 'q: back' || fail "q did not leave the first client's copy mode"
keys 'clear' Enter
echo "views: copy mode is the client's own"

# ---- a client's dialog about a session that goes closes with it ----
s2=$("$AGENTMUX" new -d --shared -C "$P") || fail "new -d failed: $s2"
s3=$("$AGENTMUX" new -d --shared -C "$P") || fail "new -d failed: $s3"
wait_status 2 "$s3:shell" 20 || fail2 "the second client does not list sessions $s2 and $s3"
# B forwards a port of S2 while A closes S2.
keys2 C-a 2
wait_status 2 "$s2:shell\\* " || fail2 "prefix 2 did not focus session $s2 in the second client"
keys2 C-a f
wait_for2 "Forward a port of session $s2" || fail2 "prefix f did not open the port dialog"
prefix 2
wait_status 1 "$s2:shell\\* " || fail "prefix 2 did not focus session $s2 in the first client"
prefix x
wait_for "Close session $s2 \\(shell\\)\\?" || fail "prefix x did not ask to close session $s2"
keys y
wait_gone2 "Forward a port of session $s2" 20 || fail2 "the port dialog stayed after its session was closed"
wait_for2 "session $s2 is gone: its dialog is closed" || fail2 "the second client was not told why its dialog closed"
# B asks to close S3 while A closes it: B's question goes, unanswered.
keys2 C-a 2
wait_status 2 "$s3:shell\\* " || fail2 "prefix 2 did not focus session $s3 in the second client"
keys2 C-a x
wait_for2 "Close session $s3 \\(shell\\)\\?" || fail2 "prefix x did not ask the second client to close session $s3"
prefix 2
wait_status 1 "$s3:shell\\* " || fail "prefix 2 did not focus session $s3 in the first client"
prefix x
wait_for "Close session $s3 \\(shell\\)\\?" || fail "prefix x did not ask to close session $s3"
keys y
wait_gone2 "Close session $s3" 20 || fail2 "the question about session $s3 stayed after it was closed"
wait_for2 "session $s3 is gone: its dialog is closed" || fail2 "the second client was not told why its question went"
keys2 'echo d-$((50+1))' Enter
wait_for2 '^d-51$' || fail2 "the second client's keys do not reach its pane after its question went"
echo "views: a dialog about a session that goes closes with it"

# ---- a client's dialog about a session that ended (its pane still there) closes in it ----
s4=$("$AGENTMUX" new -d --shared -C "$P") || fail "new -d failed: $s4"
s5=$("$AGENTMUX" new -d --shared -C "$P") || fail "new -d failed: $s5"
wait_status 2 "$s5:shell" 20 || fail2 "the second client does not list sessions $s4 and $s5"
keys2 C-a 2
wait_status 2 "$s4:shell\\* " || fail2 "prefix 2 did not focus session $s4 in the second client"
keys2 C-a x
wait_for2 "Close session $s4 \\(shell\\)\\?" || fail2 "prefix x did not ask the second client to close session $s4"
"$AGENTMUX" send "$s4" exit Enter || fail "agentmux send could not type into session $s4"
wait_gone2 "Close session $s4" 20 || fail2 "the question about session $s4 stayed after it ended"
wait_for2 "session $s4 ended: its dialog is closed" || fail2 "the second client was not told why its question went"
wait_status 2 "$s4:shell\\* exited" || fail2 "session $s4's pane is not kept, exited"
keys2 C-a 3
wait_status 2 "$s5:shell\\* " || fail2 "prefix 3 did not focus session $s5 in the second client"
keys2 C-a f
wait_for2 "Forward a port of session $s5" || fail2 "prefix f did not open the port dialog"
"$AGENTMUX" send "$s5" exit Enter || fail "agentmux send could not type into session $s5"
wait_gone2 "Forward a port of session $s5" 20 || fail2 "the port dialog stayed after its session ended"
wait_for2 "session $s5 ended: its dialog is closed" || fail2 "the second client was not told why its port dialog went"
echo "views: a dialog about a session that ended closes in every client"

prefix q
wait_for 'Quit\?' || fail "quitting did not ask"
sleep 0.3
scr2 | grep -q 'Quit?' && fail2 "the first client's quit question shows in the second"
keys y
wait_for 'DASHBOARD-EXITED-0' 20 || fail "the dashboard did not exit"
echo "views: ok"
