#!/bin/sh
# The new-session dialog's worktree (issue 18): Ctrl-T starts the session in a git worktree of its own, whose
# files land there and not in the project; a project another live session works in is asked about first:
# a worktree (Enter), the tree shared (s), or nothing (c); Esc goes back to the dir.
set -u
. "$(dirname "$0")/lib.sh"

WTS=$XDG_DATA_HOME/agentmux/worktrees

# new_dir: prefix c, the shell agent, the dir step, the project typed (the dir the dialog offers is the focused
# session's tree, which is a worktree's after session 2).
new_dir() {
	prefix c
	wait_for 'pick an agent' || fail "no agent picker"
	keys s Enter
	wait_for 'project directory' || fail "no project dir step"
	keys C-u "$P"
}

# write_file NAME N: the focused session's shell writes NAME and says done-N once it did.
write_file() {
	keys "echo from-\$((1+$2)) >$1; echo done-\$((100+$2))" Enter
	wait_for "done-$((100 + $2))" 20 || fail "the shell did not write $1"
}

# in_worktree NAME: NAME is in exactly one worktree under the data dir.
in_worktree() {
	_n=0
	for _f in "$WTS"/wt-*/proj/"$1"; do
		[ -e "$_f" ] && _n=$((_n + 1))
	done
	[ "$_n" -eq 1 ]
}

# worktrees: how many worktree dirs the data dir holds.
worktrees() {
	_n=0
	for _f in "$WTS"/wt-*; do
		[ -d "$_f" ] && _n=$((_n + 1))
	done
	echo "$_n"
}

# A profile that always gets a worktree: the dialog shows it on, and Ctrl-T cannot turn it off.
cat >"$XDG_CONFIG_HOME/agentmux/config" <<'CONF'
[agent wtalways]
description = a shell in a worktree of its own, always
command = sh
worktree = yes
CONF

start_dashboard
wait_for '1:shell\* (working|needs you)' 30 || fail "the first session did not start"
wait_for '[#$] ?$' 30 || fail "no shell prompt in the first session"
write_file made-by-1 1
[ -f "$P/made-by-1" ] || fail "session 1 (no worktree) did not write into the project"

# Ctrl-T: a worktree of its own, without asking though session 1 works in the tree.
new_dir
wait_for '\[ \] in a git worktree of its own \(Ctrl-T\)' || fail "the dir step shows no worktree choice"
keys C-t
wait_for '\[x\] in a git worktree of its own' || fail "Ctrl-T did not turn the worktree on"
keys C-t
wait_for '\[ \] in a git worktree of its own' || fail "Ctrl-T did not turn the worktree off again"
keys C-t
wait_for '\[x\] in a git worktree of its own' || fail "Ctrl-T did not turn the worktree on"
keys Enter
wait_for '2:shell\* (starting|working|needs you)' 30 || fail "the worktree session did not start"
scr | grep -q 'tree is in use' && fail "a worktree session was asked about the shared tree"
wait_for '2:shell\* (working|needs you)' 60 || fail "the worktree session did not get to its command"
wait_for '[#$] ?$' 30 || fail "no shell prompt in the worktree session"
write_file made-by-2 2
[ -e "$P/made-by-2" ] && fail "the worktree session's file landed in the project"
in_worktree made-by-2 || fail "the worktree session's file is not in its worktree: $(ls -R "$WTS" 2>&1 | head -20)"
git -C "$P" branch --list 'agentmux/2/*' | grep -q . || fail "no agentmux/2/ branch in the project"

# Without Ctrl-T, in the tree session 1 works in: asked first.
new_dir
keys Enter
wait_for 'tree is in use' || fail "no question about a tree another session works in"
scr | grep -q 'Session 1 works in that tree already' || fail "the question does not name session 1"
scr | grep -Eq 'Tab completes|pick an agent|not installed' && fail "the dir step's box shows around the question"
scr | grep -q '3:shell' && fail "a session started before the answer"
# Esc: back to the dir, nothing started.
escape
wait_for 'project directory' || fail "Esc did not go back to the dir"
scr | grep -q 'tree is in use' && fail "the question stayed after Esc"
# c: nothing starts, the dialog closes.
keys Enter
wait_for 'tree is in use' || fail "no question the second time"
keys c
wait_gone 'project directory' || fail "c did not close the dialog"
sleep 1
scr | grep -q '3:shell' && fail "a session started after c (cancel)"
[ "$(worktrees)" -eq 1 ] || fail "the question or its cancel made a worktree"

# s: shares the tree knowingly; its file lands in the project.
new_dir
keys Enter
wait_for 'tree is in use' || fail "no question about the shared tree"
keys s
wait_for '3:shell\* (working|needs you)' 30 || fail "sharing the tree did not start the session"
wait_for '[#$] ?$' 30 || fail "no shell prompt in the shared session"
write_file made-by-3 3
[ -f "$P/made-by-3" ] || fail "the shared session's file is not in the project"
in_worktree made-by-3 && fail "the shared session's file landed in a worktree"

# Enter on the question: a worktree of its own (the default answer).
new_dir
keys Enter
wait_for 'tree is in use' || fail "no question about the shared tree"
keys Enter
wait_for '4:shell\* (working|needs you)' 60 || fail "the worktree answer did not start the session"
wait_for '[#$] ?$' 30 || fail "no shell prompt in the second worktree session"
write_file made-by-4 4
[ -e "$P/made-by-4" ] && fail "the second worktree session's file landed in the project"
in_worktree made-by-4 || fail "the second worktree session's file is not in a worktree"
[ "$(worktrees)" -eq 2 ] || fail "not two worktrees: $(ls "$WTS")"
in_worktree made-by-2 || fail "the two worktree sessions share a worktree"

# The profile's worktree = yes: on, and kept on; no question though sessions 1 and 3 work in the project.
prefix c
wait_for 'pick an agent' || fail "no agent picker"
# The agents from the config come last.
keys End Enter
wait_for 'project directory' || fail "no project dir step"
keys C-u "$P"
wait_for '\[x\] in a git worktree of its own \(its profile says worktree = yes\)' ||
	fail "the profile's worktree = yes is not shown on"
keys C-t
wait_for 'whatever this says' || fail "Ctrl-T against the profile's worktree = yes says nothing"
scr | grep -q '\[ \] in a git worktree' && fail "Ctrl-T turned off the profile's worktree"
keys Enter
wait_for '5:wtalways\* (working|needs you)' 60 || fail "the profile's worktree session did not start"
scr | grep -q 'tree is in use' && fail "the profile's worktree session was asked about the shared tree"
wait_for '[#$] ?$' 30 || fail "no prompt in the profile's worktree session"
write_file made-by-5 5
[ -e "$P/made-by-5" ] && fail "the profile's worktree session's file landed in the project"
in_worktree made-by-5 || fail "the profile's worktree session's file is not in a worktree"

# The history's session view of a worktree session names merge and discard while its worktree is there, and
# restore once it is discarded (issue 18).
wtsid() { "$AGENTMUX" sessions --json | python3 -c 'import json,sys; print(max(s["id"] for s in json.load(sys.stdin)))'; }
(cd "$P" && "$AGENTMUX" run --worktree -- true </dev/null >"$T/wtd.out" 2>&1) || fail "a CLI worktree session failed: $(cat "$T/wtd.out")"
idd=$(wtsid)
(cd "$P" && "$AGENTMUX" run --worktree -- true </dev/null >"$T/wtk.out" 2>&1) || fail "a CLI worktree session failed: $(cat "$T/wtk.out")"
idk=$(wtsid)
"$AGENTMUX" discard "$idd" --yes >"$T/disc.out" 2>&1 || fail "discard $idd failed: $(cat "$T/disc.out")"
prefix h
wait_for 'history: [0-9]+ sessions' || fail "no history"
# Its rows mark the worktree sessions with their branch, and a discarded one as such.
scr | grep -Eq "^ *$idk .* wt agentmux/$idk/[a-z]+ *$" || fail "the history row of worktree session $idk does not show its branch"
scr | grep -Eq "^ *$idd .* wt agentmux/$idd/[a-z]+, discarded *$" || fail "the history row of discarded session $idd does not say so"
scr | grep -Eq "^ *1 .* wt " && fail "the history marks session 1 (no worktree) as a worktree session"
keys Enter
wait_for "session $idk: " || fail "Enter did not open session $idk (the newest)"
wait_for "worktree: branch agentmux/$idk/[a-z]+: 'agentmux merge $idk' brings it into your branch, 'agentmux discard $idk'" ||
	fail "the session view of a worktree session does not name merge and discard"
escape
wait_for 'history: [0-9]+ sessions' || fail "Esc did not go back to the history"
keys Down Enter
wait_for "session $idd: " || fail "Enter did not open session $idd"
wait_for "worktree: discarded \\(branch agentmux/$idd/[a-z]+\\): 'agentmux restore $idd' brings it back" ||
	fail "the session view of a discarded worktree session does not name restore"
escape
escape
exit 0
