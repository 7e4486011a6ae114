#!/bin/sh
# Undo from the dashboard's history while the session still runs, at 80 columns: the question is wrapped,
# not cut, names the session it stops, and one "y" stops it, snapshots its end and puts the project back as
# it was at the start snapshot, which the history selects first (as `agentmux undo` does by default).
set -u
DASH_SX=80 DASH_SY=30
. "$(dirname "$0")/lib.sh"

start_dashboard
wait_for '1:shell\* (working|needs you)' || fail "no status bar with the first session"
wait_for '[#$] ?$' || fail "no shell prompt in the pane"
keys 'echo changed >README; echo new >added; echo done-$((6*7))' Enter
wait_for 'done-42' || fail "the pane did not run the edits"
[ "$(cat "$P/README")" = changed ] || fail "the edit did not reach the project"

prefix h
wait_for 'history: [0-9]+ sessions' || fail "no history"
keys Enter
wait_for 'snapshots: [1-9]' || fail "Enter in the history did not open the running session"
keys u
wait_for 'Undo: stop session 1 \(shell\)' || fail "the undo question does not say it stops the running session"
wait_for 'snapshotted first\.' || fail "the undo question is cut at 80 columns, not wrapped"
scr | grep -q '(start)' || fail "the undo question does not name the start snapshot"
keys y
# The session's exit, or the undo's output over it (its lines say revert, remove).
wait_for 'exited with status|exited [0-9]+|closed' 30 ||
	wait_for 'undo: session|revert|remove|restored|undone|put back' 30 ||
	fail "y did not stop the session"
i=0
while [ $i -lt 300 ] && [ "$(cat "$P/README" 2>/dev/null)" != hi ]; do sleep 0.1; i=$((i + 1)); done
[ "$(cat "$P/README")" = hi ] || fail "the undo did not put README back"
[ -e "$P/added" ] && fail "the undo did not remove the file the session added"
scr | grep -q 'still running' && fail "the undo still refused the session it stopped"
# The session's end was snapshotted before the undo: the undo can be undone.
"$AGENTMUX" snapshots 1 2>&1 | grep -q ' end ' || { "$AGENTMUX" snapshots 1; fail "no end snapshot before the undo"; }
[ "$(git -C "$P" show HEAD:README)" = hi ] || fail "the project's git history changed"
# Now it has start and end snapshots: the history still selects start, not the newest.
# Back from the undo's output to the session, the history, the panes.
wait_for 'undo' 30 || fail "no undo output"
escape
wait_for 'snapshots: ' 30 || fail "Esc did not go back from the undo's output"
escape
wait_for 'history: [0-9]+ sessions' 30 || fail "Esc did not go back to the history"
escape
wait_gone 'history: [0-9]+ sessions' 30 || fail "Esc did not leave the history"
prefix h
wait_for 'history: [0-9]+ sessions' 30 || fail "no history after the undo"
keys Enter
wait_for 'snapshots: [2-9]' 30 || fail "the ended session does not list its snapshots"
tmux -L "$SOCK" capture-pane -e -p -t 0 >"$T/styled"
grep ' start ' "$T/styled" | grep -q '\[46m' || { cat -v "$T/styled"; fail "the history does not select the start snapshot first"; }
grep ' end ' "$T/styled" | grep -q '\[46m' && fail "the history selects the end snapshot"
echo "undo: the dashboard stops the running session, snapshots its end and undoes to the start snapshot"
