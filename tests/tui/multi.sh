#!/bin/sh
# Two clients attached at once, from two tmux servers of different sizes
# (100x30 and 80x24): each keeps its own focus and zoom; a pane takes the
# size of the client that typed last (tmux's window-size latest); a
# prompt shows in both and, answered in one, leaves the other; one
# detaching leaves the other working.
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
on_unknown = ask
prompt_timeout = 120
EOF

# ---- client A (100x30) runs session S1; session S2 starts detached ----
# (Sessions are numbered by their records: the probe above took one.)
DASH_SX=100 DASH_SY=30 start_dashboard
wait_for '[0-9]+:shell\* (working|needs you)' 30 || fail "no dashboard in the first terminal"
wait_for '[#$] ?$' 20 || fail "no shell prompt"
s1=$("$AGENTMUX" ls | head -n 1 | cut -d: -f1)
s2=$("$AGENTMUX" new -d --shared -C "$P") || fail "new -d failed: $s2"
[ -n "$s1" ] && [ "$s2" -gt "$s1" ] || fail "no session numbers: '$s1' '$s2'"
wait_for "$s2:shell" 20 || fail "the first terminal does not list session $s2"

# ---- client B (80x24) attaches to session 2: A keeps session 1 ----
tmux -L "$SOCK2" -u -f /dev/null new-session -d -x 80 -y 24 -c "$P" \
	-e "XDG_CONFIG_HOME=$XDG_CONFIG_HOME" -e "XDG_DATA_HOME=$XDG_DATA_HOME" \
	-e "XDG_RUNTIME_DIR=$XDG_RUNTIME_DIR" -e "XDG_STATE_HOME=$XDG_STATE_HOME" \
	-e "TERM=xterm-256color" \
	"$AGENTMUX attach -t $s2; echo ATTACH-EXITED-\$?; sleep 60" ||
	fail "tmux could not start agentmux attach"
wait_status 2 "$s2:shell\\* " || fail2 "the second client does not focus session 2"
wait_for2 '[#$] ?$' 20 || fail2 "no shell prompt in session 2"
sleep 0.5
scr | grep -q 'DASHBOARD-EXITED' && fail "the second client's attach detached the first"
status1 | grep -Eq "$s1:shell\\* " || fail "the first client lost its focus on session 1"
status1 | grep -Eq "$s2:shell\\*" && fail "the first client took the second's focus"
echo "multi: two clients attached, each with its own focus"

# ---- the pane takes the size of the client that typed last ----
keys2 'clear; stty size' Enter
wait_for2 '^[0-9]+ 80$' || fail2 "session 2 is not 80 columns wide after typing in the 80-column client"
rows2=$(scr2 | grep -E '^[0-9]+ 80$' | head -n 1 | cut -d' ' -f1)
# A shows session 2 too, and types into it: it takes A's 100 columns.
prefix 2
wait_status 1 "$s2:shell\\* " || fail "prefix 2 did not focus session 2 in the first client"
status2 | grep -Eq "$s2:shell\\* " || fail2 "the second client's focus moved with the first's"
keys 'clear; stty size' Enter
wait_for '^[0-9]+ 100$' || fail "session 2 did not take the first client's 100 columns when it typed"
rows1=$(scr | grep -E '^[0-9]+ 100$' | head -n 1 | cut -d' ' -f1)
[ "$rows1" -gt "$rows2" ] || fail "the 30-row client's pane ($rows1 rows) is not taller than the 24-row one's ($rows2)"
# B still shows the pane, cut to its 80 columns, and typing takes it back.
keys2 'clear; stty size' Enter
wait_for2 "^$rows2 80\$" || fail2 "typing in the 80-column client did not take the pane back"
wait_for "^$rows2 80\$" || fail "the first client does not show the pane the second resized"
echo "multi: a pane takes the size of the client that typed last (${rows1}x100, ${rows2}x80)"

# ---- split and zoom in one client only ----
# A splits: session S1 joins S2 side by side, focused; B still shows S2 alone.
prefix '|'
wait_status 1 "$s1:shell\\* " || fail "prefix | did not show session $s1 beside $s2 in the first client"
wait_for "^ $s2: shell" || fail "the first client's split shows no pane titles"
sleep 0.3
scr2 | grep -q "^ $s1: shell" && fail2 "the first client's split showed in the second"
prefix z
wait_status 1 "$s1:shell\\*Z" || fail "prefix z did not zoom in the first client"
wait_gone "^ $s2: shell" || fail "the zoomed client still shows the other pane"
sleep 0.3
status2 | grep -q '\*Z' && fail2 "zooming in the first client zoomed the second"
keys 'clear; stty size' Enter
wait_for '^[0-9]+ 100$' || fail "the zoomed pane does not have the first client's width"
echo "multi: split and zoom are the client's own"

# ---- a prompt shows in both; answered in one, it leaves the other ----
keys 'clear; curl -sS -w " status=%{http_code}" https://127.0.0.1:9/multi; echo; echo curl-done-$((40+2))' Enter
wait_for "1/1 $s1:shell .*127\\.0\\.0\\.1:9" 20 || fail "no prompt in the first client"
wait_for2 "1/1 $s1:shell .*127\\.0\\.0\\.1:9" || fail2 "the prompt is not shown in the second client"
keys2 C-a a
wait_for2 '\[a\] allow once' || fail2 "prefix a did not focus the prompt in the second client"
scr | grep -q 'paused | prefix a to answer' || fail "the first client's bar does not show the prompt paused, unfocused, while the second answers"
keys2 d
wait_gone2 '127\.0\.0\.1:9' || fail2 "the answered prompt stayed in the client that answered"
wait_gone "1/1 $s1:shell" || fail "the prompt answered in the second client stayed in the first"
wait_for 'curl-done-42' || fail "curl did not finish after the answer"
scr | grep -q 'status=403' || fail "deny once in the second client did not deny the request"
echo "multi: a prompt shows in both clients; answered in one, it leaves the other"

# ---- one detaches: the other keeps working, at its size ----
keys2 C-a d
wait_for2 '^\[detached \(from agentmux, 2 sessions running\)\]$' ||
	fail2 "prefix d in the second client did not detach it with the message"
wait_for2 'ATTACH-EXITED-0' || fail2 "the detached client did not exit 0"
sleep 0.3
scr | grep -q 'DASHBOARD-EXITED' && fail "the first client detached with the second"
keys 'clear; echo alive-$((6*7)); stty size' Enter
wait_for '^alive-42$' || fail "the first client does not work after the second detached"
wait_for '^[0-9]+ 100$' || fail "session $s1 is not at the first client's size"
prefix 2
wait_status 1 "$s2:shell\\*" || fail "the first client cannot focus session $s2 after the second detached"
# (marked: the pane still shows the second client's "ROWS 80" until clear runs)
keys 'clear; echo size-$(stty size | tr " " x)' Enter
wait_for '^size-[0-9]+x[0-9]+$' || fail "session $s2 does not run in the first client"
scr | grep -q "^size-${rows2}x80\$" && fail "session $s2 kept the detached client's size"
echo "multi: one client detaching leaves the other working"

prefix q
wait_for 'Quit\?' || fail "quitting did not ask"
keys y
wait_for 'DASHBOARD-EXITED-0' 20 || fail "the dashboard did not exit"
echo "multi: ok"
