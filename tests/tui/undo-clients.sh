#!/bin/sh
# Two clients each confirm an undo that waits for the session it stops, each in its own project: an undo
# belongs to the client that asked, so the second neither replaces nor blocks the first; both run once
# their sessions ended, and each one's output opens in the client that asked for it. Two undos of one
# project: the later holds, and the client whose undo it replaced is told.
set -u
DASH_SX=220 DASH_SY=30
. "$(dirname "$0")/lib.sh"

Q="$T/proj2"
mkdir -p "$Q"
(cd "$Q" && git init -q . && git config user.email t@x && git config user.name t &&
	echo hq >README && git add README && git commit -qm init) || exit 1

# ---- client A: session S1 in P, whose shell ignores SIGTERM (its undo waits the grace period) ----
start_dashboard
wait_for '[0-9]+:shell\* (working|needs you)' 30 || fail "no dashboard in the first terminal"
wait_for '[#$] ?$' 20 || fail "no shell prompt"
s1=$("$AGENTMUX" ls | head -n 1 | cut -d: -f1)
[ -n "$s1" ] || fail "agentmux ls lists no session"
keys "trap '' TERM HUP; echo changed >README; echo done-\$((6*7))" Enter
wait_for 'done-42' || fail "the pane did not run the edits"
# A opens S1's snapshots now, while it is the newest session.
prefix h
wait_for 'history: [0-9]+ sessions' || fail "no history"
keys Enter
wait_for 'snapshots: [1-9]' || fail "Enter in the history did not open session $s1"

# ---- client B: session S2 in Q, the same ----
s2=$("$AGENTMUX" new -d -C "$Q") || fail "new -d failed: $s2"
tmux -L "$SOCK2" -u -f /dev/null new-session -d -x 100 -y 30 -c "$Q" \
	-e "XDG_CONFIG_HOME=$XDG_CONFIG_HOME" -e "XDG_DATA_HOME=$XDG_DATA_HOME" \
	-e "XDG_RUNTIME_DIR=$XDG_RUNTIME_DIR" -e "XDG_STATE_HOME=$XDG_STATE_HOME" \
	-e "TERM=xterm-256color" \
	"$AGENTMUX attach -t $s2; echo ATTACH-EXITED-\$?; sleep 60" ||
	fail "tmux could not start agentmux attach"
wait_status 2 "$s2:shell\\* " 20 || fail2 "the second client does not show session $s2"
wait_for2 '[#$] ?$' 20 || fail2 "no shell prompt in the second client"
keys2 "trap '' TERM HUP; echo changed >README; echo done-\$((7*7))" Enter
wait_for2 'done-49' || fail2 "the second client's pane did not run the edits"
keys2 C-a h
wait_for2 'history: [0-9]+ sessions' || fail2 "no history in the second client"
keys2 Enter
wait_for2 'snapshots: [1-9]' || fail2 "Enter in the history did not open session $s2"

# ---- A confirms its undo (it waits), then B confirms its own ----
keys u
wait_for 'Undo: stop session 1 \(shell\)' || fail "the first client's undo question does not name session $s1"
keys y
wait_for 'the undo runs once' || fail "the first client's undo does not wait for its session"
keys2 u
wait_for2 'Undo: stop session 2 \(shell\)' || fail2 "the second client's undo question does not name session $s2"
keys2 y

# ---- both run (after the grace period) ----
i=0
while [ $i -lt 300 ] && { [ "$(cat "$P/README")" != hi ] || [ "$(cat "$Q/README")" != hq ]; }; do
	sleep 0.1
	i=$((i + 1))
done
[ "$(cat "$Q/README")" = hq ] || fail2 "the second client's undo did not run"
[ "$(cat "$P/README")" = hi ] || fail "the first client's undo did not run: the second client's replaced it"
echo "undo-clients: two clients' waiting undos both run"

# ---- each one's output opens in its own client ----
wait_for "^undo: session $s1 to snapshot" 20 || fail "the first client's undo output did not open in it"
scr | grep -q "undo: session $s2" && fail "the second client's undo output opened in the first"
wait_for2 "^undo: session $s2 to snapshot" 20 || fail2 "the second client's undo output did not open in it"
scr2 | grep -q "undo: session $s1" && fail2 "the first client's undo output opened in the second"
echo "undo-clients: each one's output opens in its own client"

# ---- two clients' undos of one project: the later holds, the earlier's client is told ----
keys Escape; sleep 0.2; keys Escape; sleep 0.2; keys Escape; sleep 0.2
keys2 Escape; sleep 0.2; keys2 Escape; sleep 0.2; keys2 Escape; sleep 0.2
echo hi >"$P/README"
s3=$("$AGENTMUX" new -d --shared -C "$P") || fail "new -d failed: $s3"
"$AGENTMUX" send "$s3" "trap '' TERM HUP; echo three >README; echo done-\$((3*3))" Enter || fail "send to $s3 failed"
prefix h
wait_for 'history: [0-9]+ sessions' || fail "no history (second part)"
keys Enter
wait_for "^session $s3: " || fail "Enter in the history did not open session $s3"
s4=$("$AGENTMUX" new -d --shared -C "$P") || fail "new -d failed: $s4"
"$AGENTMUX" send "$s4" "trap '' TERM HUP; echo four >README; echo done-\$((4*4))" Enter || fail "send to $s4 failed"
keys2 C-a h
wait_for2 'history: [0-9]+ sessions' || fail2 "no history in the second client (second part)"
keys2 Enter
wait_for2 "^session $s4: " || fail2 "Enter in the history did not open session $s4"
i=0
while [ $i -lt 100 ] && [ "$(cat "$P/README")" != four ]; do sleep 0.1; i=$((i + 1)); done
# Both questions are up before either is answered, and the second is answered as soon as the first
# client says its undo waits: the sessions ignore SIGTERM, so the first undo runs when the grace
# period kills them, and a second answer later than that would find nothing left to replace.
# The view opened while session 3 may still have been taking its start snapshot: it reads the
# session again as it starts and changes state (it showed "snapshots: 0", with nothing to undo to).
wait_for '^snapshots: [1-9]' 30 || fail "the first client's view of session $s3 never showed its start snapshot"
keys u
wait_for 'Undo: stop sessions' || fail "the first client's undo question does not name the sessions it stops"
wait_for2 '^snapshots: [1-9]' 30 || fail2 "the second client's view of session $s4 never showed its start snapshot"
keys2 u
wait_for2 'Undo: stop sessions' || fail2 "the second client's undo question does not name the sessions it stops"
keys y
wait_for 'the undo runs once' || fail "the first client's undo does not wait for its sessions"
keys2 y
wait_status 1 "your undo of session $s3 is replaced by another client's undo of the same project" 10 ||
	fail "the first client was not told its undo was replaced"
# (It may refuse: the two sessions changed one tree at the same time. It ran, in its client.)
wait_for2 "undo: session $s4( |$)" 30 || fail2 "the second client's undo did not run"
sleep 0.5
scr | grep -Eq "undo: session $s3( |$)" && fail "the replaced undo ran too"
echo "undo-clients: of two undos of one project the later holds, and the other client is told"
echo "undo-clients: ok"
