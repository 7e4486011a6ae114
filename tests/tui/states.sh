#!/bin/sh
# Session states in the dashboard: a shell at its prompt needs you, a command running is working; a session
# that starts needing you while another has the focus is counted in the bar and told through [ui] notify (a
# command, given the message as an argument), never for the focused one; prefix w goes to it; prefix P
# pauses a session (a loop in its jail stops) and resumes it; prefix s shows what each costs, read anew
# while open.
set -u
. "$(dirname "$0")/lib.sh"

cat >"$XDG_CONFIG_HOME/agentmux/config" <<CONF
[ui]
idle_after = 500
notify = command /bin/sh -c 'printf "%s\\\\n" "\$1" >>"\$0"' $T/notified
[agent shell]
resume = sh -c 'echo resumed-\$((40+2)); exec sh'
CONF

start_dashboard
wait_for '1:shell\* needs you' || fail "a shell at its prompt does not need you"
# Working while a command runs, even with no output for longer than idle_after.
keys 'sleep 4; echo slept' Enter
wait_for '1:shell\* working' || fail "typing a command does not make the session work"
sleep 1.5
scr | grep -Eq '1:shell\* working' || fail "a session in sleep is not working after idle_after"

# A second session takes the focus while the first still sleeps.
prefix c
wait_for 'pick an agent' || fail "no agent picker"
keys s
keys Enter
wait_for 'project directory' || fail "no project dir step"
keys Enter
share_tree
wait_for '2:shell\* needs you' || fail "the second session does not need you at its prompt"
[ -s "$T/notified" ] && fail "a notification came for the focused session: $(cat "$T/notified")"

# The first one's prompt comes back: it needs you, counted, and told once.
wait_for '1:shell needs you 2:shell\* needs you +needs you 2' 15 ||
	fail "the bar does not show session 1 needing you, with the count"
i=0
while [ $i -lt 50 ] && ! [ -s "$T/notified" ]; do sleep 0.1; i=$((i + 1)); done
grep -qx 'agentmux: session 1 (shell) needs you' "$T/notified" ||
	fail "no notification for session 1: $(cat "$T/notified" 2>/dev/null)"
[ "$(wc -l <"$T/notified")" = 1 ] || fail "more than one notification: $(cat "$T/notified")"

# prefix w: to the session that needs you.
prefix w
wait_for '1:shell\* needs you' || fail "prefix w did not go to session 1"
wait_for 'slept' || fail "session 1 is not shown after prefix w"

# The same state in the records, while it runs.
"$AGENTMUX" sessions | grep -Eq '^ *1 .*needs you' || fail "agentmux sessions does not say session 1 needs you: $("$AGENTMUX" sessions)"
"$AGENTMUX" show 1 | grep -q 'needs you' || fail "agentmux show 1 does not say it needs you"

# prefix P pauses it: a loop in its jail stops advancing; prefix P again resumes it.
keys 'while :; do i=$((${i:-0}+1)); echo $i >cnt.new; mv cnt.new cnt; sleep 0.05; done &' Enter
i=0
while [ $i -lt 50 ] && ! [ -s "$P/cnt" ]; do sleep 0.1; i=$((i + 1)); done
[ -s "$P/cnt" ] || fail "the counter loop did not start"
prefix P
wait_for '1:shell\* paused' || fail "prefix P did not pause the session"
sleep 0.3
c1=$(cat "$P/cnt")
sleep 1
[ "$(cat "$P/cnt")" = "$c1" ] || fail "the counter advanced while paused: $c1 -> $(cat "$P/cnt")"
"$AGENTMUX" sessions | grep -Eq '^ *1 .*paused' || fail "agentmux sessions does not say session 1 is paused"
prefix P
wait_for 'session 1 \(shell\) resumed' || fail "prefix P did not resume the session"
sleep 0.5
[ "$(cat "$P/cnt")" -gt "$c1" ] || fail "the counter did not go on after resume"
keys 'kill %1' Enter

# prefix s: the sessions view, with what each costs.
prefix s
wait_for 'ID +AGENT +STATE +CPU +SHARE +MEMORY +PROCS' || fail "prefix s did not show the sessions view"
wait_for '^ +1 +shell +(working|needs you) +[0-9.]+s +[0-9]+% +[0-9.]+[KMG]? +[1-9]' || fail "the sessions view has no costs for session 1"
# It stays live while open: a pause and a resume from the CLI show in it without reopening it.
"$AGENTMUX" pause 1 >/dev/null || fail "agentmux pause 1 failed"
wait_for '^ +1 +shell +paused +[0-9.]+s' || fail "the open sessions view did not show session 1 paused"
"$AGENTMUX" resume 1 >/dev/null || fail "agentmux resume 1 failed"
wait_for '^ +1 +shell +(working|needs you) +[0-9.]+s' || fail "the open sessions view did not show session 1 resumed"
scr | grep -Eq 'ID +AGENT +STATE' || fail "the sessions view closed while refreshing"
keys q
wait_gone 'ID +AGENT +STATE' || fail "q did not leave the sessions view"

# An exited session says how, and offers its profile's resume command.
keys 'exit 3' Enter
wait_for '1:shell\* exited 3' || fail "an exited session does not say exited 3"
wait_for 'r: restart  c: continue its conversation \(sh -c' || fail "the exited pane does not offer to continue"
keys c
# Session 2 works in that tree: the restart asks first, as a new session does.
share_tree
wait_for '3:shell\* (working|needs you)' || fail "c did not restart the session as session 3"
wait_for 'resumed-42' || fail "c did not run the profile's resume command"
prefix q
keys y
wait_for 'DASHBOARD-EXITED' 30 || fail "the dashboard did not quit"
echo "states: needs you, working, notify, prefix w, records, pause and resume, exited, resume command"
