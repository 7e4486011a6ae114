#!/bin/sh
# An undo confirmed in the dashboard waits for the sessions it stops; a session started in the project
# meanwhile cancels it, and says so: the undo never runs later against that session's work unasked.
set -u
DASH_SX=100 DASH_SY=30
. "$(dirname "$0")/lib.sh"

start_dashboard
wait_for '1:shell\* (working|needs you)' || fail "no status bar with the first session"
wait_for '[#$] ?$' || fail "no shell prompt in the pane"
# This shell ignores SIGTERM: the undo waits the grace period for it, time to start another session.
keys "trap '' TERM HUP; echo changed >README; echo done-\$((6*7))" Enter
wait_for 'done-42' || fail "the pane did not run the edits"

prefix h
wait_for 'history: [0-9]+ sessions' || fail "no history"
keys Enter
wait_for 'snapshots: [1-9]' || fail "Enter in the history did not open the running session"
keys u
wait_for 'Undo: stop session 1' || fail "no undo question"
keys y
escape
escape
escape
prefix c
wait_for 'pick an agent' || fail "no agent picker"
keys s
keys Enter
wait_for 'project directory' || fail "no project dir step"
keys Enter
# Session 1 is asked about while it still runs (if it ended already, the start goes on: SKIP below).
wait_for 'tree is in use|2:shell' 15 || fail "neither a question about the shared tree nor a second session"
scr | grep -q 'tree is in use' && keys s
# The message can be replaced at once by session 1's exit: the files below decide.
wait_for 'undo of session [0-9]+ is cancelled' 15 || echo "note: the cancel message was not caught on screen"
wait_for '2:shell' 30 || fail "the second session did not start"
[ "$(cat "$P/README")" = hi ] && { echo "SKIP: the first session ended before the second started (too slow for the grace period)"; exit 77; }
wait_for '[#$] ?$' 30 || fail "no prompt in the second session"
keys 'echo work >kept; exit' Enter
i=0
while [ $i -lt 150 ]; do sleep 0.1; i=$((i + 1)); done
[ -e "$P/kept" ] || fail "the cancelled undo ran when the new session ended and removed its work"
[ "$(cat "$P/README")" = changed ] || fail "the cancelled undo put README back"
echo "undo-cancel: a session started in the project cancels a waiting undo, which never runs later"
