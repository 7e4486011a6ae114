#!/bin/sh
# The dashboard through a real tmux: a jailed shell pane runs a command; a second session opens and switching
# works; splits; resizing the tmux window reaches every pane; an exited session offers restart and shows in
# the history; quitting leaves no jailed process.
set -u
. "$(dirname "$0")/lib.sh"

start_dashboard
wait_for '1:shell\* (working|needs you)' || fail "no status bar with the first session"
wait_for '[#$] ?$' || fail "no shell prompt in the pane"

# A command typed in the pane runs in the jail and shows its output.
keys 'echo marker-$((6*7)); echo inside-$(cat /proc/1/comm)' Enter
wait_for 'marker-42' || fail "the pane did not run a typed command"
scr | grep -q 'inside-systemd$' && fail "the shell sees the host's pid 1: not in a jail"

# A second session: the prefix, c, the shell agent, the default dir.
prefix c
wait_for 'pick an agent' || fail "no agent picker"
keys s
keys Enter
wait_for 'project directory' || fail "no project dir step"
keys Enter
share_tree
wait_for '2:shell\* (working|needs you)' || fail "the second session did not start"
wait_for '[#$] ?$' || fail "no prompt in the second session"
keys 'echo second-$((7*7))' Enter
wait_for 'second-49' || fail "the second session did not run a command"

# A process in a jail, found by its host PID, must be gone after quitting.
keys 'sleep 987654 &' Enter
# (A pipeline's status is its last command's: head's, so test what it printed.)
i=0 JPID=
while [ $i -lt 50 ] && [ -z "$JPID" ]; do
	JPID=$(pgrep -f 'sleep 987654' | head -n 1)
	[ -n "$JPID" ] || sleep 0.1
	i=$((i + 1))
done
[ -n "${JPID:-}" ] || { ps -ef | grep -v grep | grep sleep; fail "cannot find the jailed sleep on the host"; }
scr | grep -q 'marker-42' && fail "the first session still shows after switching"

# Switching by number, and with n/p.
prefix 1
wait_for '1:shell\* (working|needs you)' || fail "prefix 1 did not focus session 1"
wait_for 'marker-42' || fail "session 1 is not shown after prefix 1"
prefix n
wait_for '2:shell\* (working|needs you)' || fail "prefix n did not go to session 2"
wait_for 'second-49' || fail "session 2 is not shown after prefix n"

# Side by side: both are shown, each knows its own width.
prefix '|'
wait_for 'marker-42' || fail "the split does not show session 1"
wait_for 'second-49' || fail "the split does not show session 2"
keys 'clear; stty size' Enter
wait_for '│43 80$' || fail "the right pane did not get 43x80 (160 wide less a border, 44 high less its title)"

# Resizing the tmux window reaches the panes.
tmux -L "$SOCK" resize-window -t 0 -x 120 -y 35
wait_for '^.{59}│' || fail "the split was not laid out again for 120 columns"
keys 'clear; stty size' Enter
wait_for '│33 60$' || fail "the pane did not get the new size after the window shrank"

# Zoom shows the focused pane alone, and back.
prefix z
wait_gone '│' || fail "zoom still shows the split"
prefix z
wait_for '│' || fail "unzooming did not bring the split back"

# The project diff shows what the session changed.
keys 'echo changed >new-file.txt' Enter
prefix D
wait_for 'project diff' || fail "prefix D did not open the project diff"
wait_for 'new-file.txt' || fail "the project diff does not show the new file"
escape
wait_gone 'project diff' || fail "the diff view did not close"

# A pane flooding output does not make the dashboard unresponsive.
keys 'yes flood-$((1+1))' Enter
wait_for '│flood-2$' || fail "the flood did not start"
prefix Left
keys 'echo still-$((5*5))' Enter
wait_for 'still-25' || fail "the other pane did not answer while one floods"
prefix Right
keys C-c
keys 'clear' Enter
wait_gone '│flood-2$' || fail "the flood did not stop"

# A terminal too small for anything shows a message, and recovers.
tmux -L "$SOCK" resize-window -t 0 -x 15 -y 4
wait_for 'too small' || fail "no message on a terminal that is too small"
tmux -L "$SOCK" resize-window -t 0 -x 120 -y 35
wait_for 'still-25' || fail "the panes did not come back at a usable size"

# Help lists the keys.
prefix '?'
wait_for 'new session' || fail "no help"
scr | grep -q 'requests panel' || fail "the help does not list the requests panel"
escape
wait_gone 'requests panel' || fail "the help did not close"

# An exited session shows its status and offers restart; history lists it,
# in red with what it was flagged for: a file the user's tools run changed.
keys 'mkdir -p s && echo evil >s/.envrc' Enter
keys 'exit 3' Enter
wait_for 'exited with status 3' || fail "the exit status is not shown in the pane"
wait_for 'r: restart' || fail "no restart offered"
prefix h
wait_for 'history: [0-9]+ sessions' || fail "no history"
scr | grep -Eq '^ +[0-9]+ shell .* 3 ' || fail "history does not list the session that exited with 3"
tmux -L "$SOCK" capture-pane -e -p -t 0 | grep ' 3 ' | grep '! protected' |
    grep -q '41' || fail "history does not flag the session in red"
keys Enter
wait_for 'snapshots: [1-9]' || fail "Enter in the history did not open a session with its snapshots"
scr | grep -q 'decisions: ' || fail "the session view does not list decisions"
escape
wait_for 'history: [0-9]+ sessions' || fail "Esc did not go back to the history"
# The session that exited (the second row, newest first) says why it is flagged.
keys Down Enter
wait_for 'session 1: ' || fail "Down Enter did not open the session that exited"
scr | grep -q '! s/.envrc changed in the session' ||
    fail "the session view does not say which file the user's tools run changed"
escape
wait_for 'history: [0-9]+ sessions' || fail "Esc did not go back to the history"
escape

# r restarts the session in the same pane.
keys r
# Session 2 works in that tree: the restart asks first, as a new session does.
share_tree
# The restart is a new record (session 3) that keeps the first run's answers for the session.
wait_for '3:shell\* (working|needs you)' || fail "r did not restart the session as session 3"
keys 'echo again-$((3*3))' Enter
wait_for 'again-9' || fail "the restarted session does not run commands"

# Quit: it asks, then every jail goes away.
prefix q
wait_for 'Quit\?' || fail "quitting did not ask while a session runs"
keys y
wait_for 'DASHBOARD-EXITED-0' || fail "the dashboard did not exit"
i=0
while [ $i -lt 50 ] && kill -0 "$JPID" 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
kill -0 "$JPID" 2>/dev/null && fail "jailed process $JPID survived quitting"
echo "dashboard: panes, sessions, switching, split, resize, exit, history, quit"
