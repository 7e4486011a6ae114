#!/bin/sh
# The dashboard's prompts through a real tmux: curl in a jailed pane to a local HTTPS server (its own CA)
# raises a prompt that holds the request; allow once lets it through; deny once returns the proxy's 403; a
# prompt nobody answers is denied when its countdown runs out; the requests panel lists them.
set -u
. "$(dirname "$0")/lib.sh"
command -v curl >/dev/null 2>&1 || { echo "SKIP: curl is not installed"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 is not installed"; exit 77; }
command -v openssl >/dev/null 2>&1 || { echo "SKIP: openssl is not installed"; exit 77; }

# A local HTTPS server with its own CA; it writes what it served to $SEEN.
https_upstream_make DNS:localhost,IP:127.0.0.1
https_upstream_start port 300
UPID=$!
PORT=$(https_upstream_port port)
[ -n "$PORT" ] || fail "the local HTTPS server did not start"
URL=https://127.0.0.1:$PORT

# Is the proxy serving jails here? A denied request gets its 403.
cat >"$XDG_CONFIG_HOME/agentmux/config" <<EOF
[proxy]
upstream_ca = $u/ca.pem
EOF
probe=$("$AGENTMUX" run -C "$P" -- curl -sS "$URL/probe" 2>&1 </dev/null)
case $probe in
*"not allowed"*|*"were denied"*) ;;
*) echo "SKIP: the session layer does not serve the jail with the proxy yet (curl: $probe)"; exit 77 ;;
esac

cat >"$XDG_CONFIG_HOME/agentmux/config" <<EOF
[proxy]
upstream_ca = $u/ca.pem

[policy]
on_unknown = ask
prompt_timeout = 8
EOF
start_dashboard
wait_for '[0-9][0-9]*:shell\* (working|needs you)' || fail "no first session"
wait_for '[#$] ?$' || fail "no shell prompt"

# Allow once: the request waits for the answer, then goes through.
keys "curl -s $URL/one; echo; echo curl-done-\$((0+1))" Enter
wait_for "1/1 [0-9][0-9]*:shell .*127\\.0\\.0\\.1:$PORT" || fail "no prompt naming the destination"
wait_for 'prompts 1' || fail "the status bar does not count the prompt"
grep -q '/one' "$SEEN" 2>/dev/null && fail "the request reached the server before anyone answered"
prefix a
wait_for 'allow once' || fail "the prompt queue did not take the focus"
wait_for 'paused' || fail "the countdown did not pause while the prompt has the focus"
keys a
wait_for 'served /one' || fail "allow once did not let the request through"
wait_for 'curl-done-1' || fail "curl did not finish"
wait_gone 'prefix a to answer' || fail "the prompt bar stayed after the answer"

# Deny once: the client gets the proxy's 403 (on its CONNECT, for HTTPS).
keys "curl -sS -w ' status=%{http_code}' $URL/two; echo; echo curl-done-\$((1+1))" Enter
wait_for "1/1 [0-9][0-9]*:shell .*127\\.0\\.0\\.1:$PORT" || fail "no prompt for the second request"
# A click on the prompt bar (row 44 of 45) focuses it, as the prefix and a do.
keys -l "$(printf '\033[<0;10;44M\033[<0;10;44m')"
wait_for 'deny once' || fail "a click on the prompt bar did not focus it"
keys d
wait_for 'curl-done-2' || fail "curl did not finish after deny once"
scr | grep -q 'status=403' || fail "deny once did not answer 403"
scr | grep -q 'was denied' || fail "the 403 does not say why"
grep -q '/two' "$SEEN" && fail "a denied request reached the server"

# Nobody answers: the countdown runs out and the request is denied.
keys "clear; curl -sS -w ' status=%{http_code}' $URL/three; echo; echo curl-done-\$((1+2))" Enter
wait_for "1/1 [0-9][0-9]*:shell .*127\\.0\\.0\\.1:$PORT.* [0-9]+s " || fail "no countdown on the prompt bar"
wait_for 'curl-done-3' 20 || fail "the unanswered prompt was not denied when its countdown ran out"
scr | grep -q 'status=403' || fail "the timed-out request did not get a 403"
grep -q '/three' "$SEEN" && fail "a timed-out request reached the server"
wait_for 'denied [0-9]' || fail "the status bar does not count denied requests"

# The requests panel lists them, and filters by typing.
prefix r
wait_for 'requests: [0-9]+ of [0-9]+' || fail "no requests panel"
wait_for '/one' || fail "the requests panel does not list the allowed request"
scr | grep -q '/two' || fail "the requests panel does not list the denied request"
keys / t w o Enter
wait_gone '/one' || fail "the filter did not hide /one"
scr | grep -q '/two' || fail "the filter hid /two"
keys Enter
wait_for 'decision: +deny' || fail "Enter did not show the request's details"
escape
escape

# The history offers policy suggest on a session: shown, then written to the profile.
prefix h
wait_for 'history: [0-9]+ sessions' || fail "no history"
keys Enter
wait_for 'snapshots: ' || fail "Enter in the history did not open the session"
keys p
wait_for "allow = 127\\.0\\.0\\.1:$PORT GET /one" || fail "p did not show the suggested rule"
scr | grep -q "127.0.0.1:$PORT (2 requests" || fail "the suggestion does not list the denied requests"
escape
keys w
wait_for 'Add the rules' || fail "w did not ask before writing the policy"
keys y
wait_for 'added 1 rule' || fail "w did not write the rule"
grep -q "^allow = 127.0.0.1:$PORT GET /one" "$XDG_CONFIG_HOME/agentmux/config" ||
	fail "the rule is not in the config file"
escape
escape
escape

# Detached: a prompt raised meanwhile waits (agentmux ls shows it, its
# countdown running) and is answered after reattaching.
keys "clear; sleep 2; curl -s $URL/four; echo; echo curl-done-\$((2+2))" Enter
prefix d
wait_for 'DASHBOARD-EXITED-0' || fail "prefix d did not detach"
i=0
until "$AGENTMUX" ls | grep -q ", prompt, .*, 1 prompts waiting$"; do
	[ $i -lt 50 ] || fail "ls does not show the prompt raised while detached: $("$AGENTMUX" ls)"
	sleep 0.1
	i=$((i + 1))
done
grep -q '/four' "$SEEN" && fail "the request reached the server while nobody was attached"
tmux -L "$SOCK" respawn-pane -k -t 0 -c "$P" \
	"$AGENTMUX attach; echo DASHBOARD-EXITED-\$?; sleep 60" || fail "tmux could not reattach"
wait_for "1/1 [0-9][0-9]*:shell .*127\\.0\\.0\\.1:$PORT" || fail "the prompt is not shown after reattaching"
prefix a
wait_for 'allow once' || fail "the reattached prompt did not take the focus"
keys a
wait_for 'curl-done-4' || fail "curl did not finish after the answer"
grep -q 'served /four' "$SEEN" || fail "allow once after reattaching did not let the request through"

prefix q
wait_for 'Quit\?' || fail "quitting did not ask"
keys y
wait_for 'DASHBOARD-EXITED-0' || fail "the dashboard did not exit"
echo "prompts: allow once, deny once, timeout, requests panel, answered after reattaching"
