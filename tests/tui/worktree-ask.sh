#!/bin/sh
# The dashboard asks before its own starts share a tree (issue 18), as its new-session dialog does: the
# session plain agentmux starts, when another live session works in the current tree; and r on an ended
# pane, when another session has started in its tree since. Enter or w: a worktree of its own; s: share
# the tree; c or Esc: not now (the pane stays, did not start, and r asks again).
set -u
. "$(dirname "$0")/lib.sh"

WTS=$XDG_DATA_HOME/agentmux/worktrees

# outside: a session of agentmux run, outside the dashboard, in the project (its pid in UPID).
outside() {
	(cd "$P" && exec "$AGENTMUX" run -- sleep 600 </dev/null >"$T/outside.out" 2>&1) &
	UPID=$!
	_i=0
	until "$AGENTMUX" sessions --json 2>/dev/null | python3 -c 'import json,sys; sys.exit(not [s for s in json.load(sys.stdin) if s["command"] == ["sleep", "600"] and s["state"] == "running"])'; do
		[ $_i -lt 300 ] || fail "the outside session did not start: $(cat "$T/outside.out")"
		sleep 0.1
		_i=$((_i + 1))
	done
}

# outside_end: the outside session goes (its run is ended).
outside_end() {
	kill -TERM "$UPID" 2>/dev/null
	wait "$UPID" 2>/dev/null
	UPID=
}

# Plain agentmux in a tree another session works in: asked, nothing started before the answer.
outside
start_dashboard
wait_for 'Start \(pane 1\): the tree is in use' 30 || fail "plain agentmux did not ask about the tree in use"
scr | grep -q 'Session 1 works in that tree already' || fail "the question does not name session 1"
scr | grep -q 'is running on' && fail "the CLI's refusal shows instead of the question"
# c: not now; the pane says why it did not start, and r asks again.
keys c
wait_for 'did not start  --  r: restart' || fail "after c the pane does not say it did not start"
scr | grep -q 'r asks whether to start in a worktree' || fail "the pane does not say that r asks"
[ -d "$WTS" ] && [ -n "$(ls -A "$WTS")" ] && fail "c made a worktree"
keys r
wait_for 'Start \(pane 1\): the tree is in use' || fail "r did not ask again"
# Enter: a worktree of its own.
keys Enter
wait_for '2:shell\* (working|needs you)' 60 || fail "the worktree answer did not start the session"
wait_for '[#$] ?$' 30 || fail "no shell prompt in the worktree session"
keys 'echo x >made-by-2; echo done-2''02' Enter
wait_for 'done-202' 20 || fail "the shell did not write"
[ -e "$P/made-by-2" ] && fail "the worktree session's file landed in the project"
ls "$WTS"/wt-*/proj/made-by-2 >/dev/null 2>&1 || fail "the worktree session's file is not in its worktree"

# A pane started in the tree alone, ended; another session starts there; r asks before it restarts.
outside_end
prefix c
wait_for 'pick an agent' || fail "no agent picker"
keys s Enter
wait_for 'project directory' || fail "no project dir step"
keys C-u "$P" Enter
wait_for '3:shell\* (working|needs you)' 60 || fail "the dialog's session did not start alone in the tree"
wait_for '[#$] ?$' 30 || fail "no shell prompt in session 3"
keys 'exit' Enter
wait_for 'exited with status 0  --  r: restart' 30 || fail "session 3 did not end"
outside
oid=$("$AGENTMUX" sessions --json | python3 -c 'import json,sys; print([s["id"] for s in json.load(sys.stdin) if s["command"] == ["sleep", "600"] and s["state"] == "running"][0])')
keys r
wait_for 'Restart \(pane [0-9]+\): the tree is in use' 20 || fail "r did not ask about the tree in use"
scr | grep -q "Session $oid works in that tree already" || fail "the restart question does not name session $oid"
scr | grep -q 'is running on' && fail "the CLI's refusal shows instead of the question"
escape
wait_gone 'the tree is in use' || fail "Esc did not close the question"
keys r
wait_for 'Restart \(pane [0-9]+\): the tree is in use' 20 || fail "r did not ask again"
# s: shares the tree; its file lands in the project.
keys s
wait_for '[#$] ?$' 30 || fail "sharing did not restart the session"
keys 'echo x >made-by-restart; echo done-3''03' Enter
wait_for 'done-303' 20 || fail "the restarted shell did not write"
[ -f "$P/made-by-restart" ] || fail "the restarted shared session's file is not in the project"
outside_end
exit 0
