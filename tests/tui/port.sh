#!/bin/sh
# The dashboard's port forward (prefix f, issue 18) through a real tmux: the help lists the key; the
# dialog refuses what is no port and says what to type; a forward made in it reaches a python
# http.server in the session's jail with curl on the host, on the session's own loopback address,
# whose URL the status line shows and the dialog lists; "-d PORT" in it removes the forward; Esc
# leaves it without a change.
set -u
. "$(dirname "$0")/lib.sh"
for t in python3 curl; do
	command -v "$t" >/dev/null || { echo "SKIP: $t is missing"; exit 77; }
done

freeport() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
JP=$(freeport)
HP=$(freeport)
[ "$JP" = "$HP" ] && HP=$(freeport)

# start_dashboard joins its words into a shell line: the server's command goes in a file.
echo "exec python3 -u -m http.server $JP --bind 127.0.0.1 >server.log 2>&1" >"$P/serve.sh"
start_dashboard -- sh serve.sh
wait_for '1:shell\*' 30 || fail "no status bar with the server's session"
i=0
while ! grep -q "Serving HTTP" "$P/server.log" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.2; i=$((i + 1)); done
grep -q "Serving HTTP" "$P/server.log" || fail "the http.server in the jail did not start: $(cat "$P/server.log" 2>&1)"
id=$("$AGENTMUX" ls --json | python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["id"])') ||
	fail "ls --json lists no session"
A=127.$((77 + id / 256)).$((id % 256)).1

prefix '?'
wait_for 'f +forward a port of the focused session' || fail "the help does not list prefix f"
escape
wait_gone 'forward a port of the focused' || fail "the help did not close"

# What is no port stays in the dialog, with what to type.
prefix f
wait_for "Forward a port of session $id's jail" || fail "prefix f opened no dialog"
wait_for 'nothing forwarded yet' || fail "the dialog does not say nothing is forwarded"
wait_for "browser with this host's network" || fail "the dialog does not say where its pages run"
keys -l 'x80'
keys Enter
wait_for "type the jail's port" || fail "'x80' was not refused with what to type"
wait_for "Forward a port of session $id's jail" || fail "the dialog closed on a refusal"

# A forward: the status line shows its URL, and curl on the host reaches the jail's server.
keys C-u
keys -l "$JP $HP"
keys Enter
wait_gone "Forward a port of session" || fail "the dialog stayed open after '$JP $HP'"
wait_for "port $JP forwarded to http://$A:$HP/" || fail "the status line does not show http://$A:$HP/"
out=$(curl -s -m 10 "http://$A:$HP/README")
[ "$out" = "hi" ] || fail "curl through the dashboard's forward got '$out'"
"$AGENTMUX" ls | grep -q "ports $A:$HP->$JP" || fail "ls does not list the forward: $("$AGENTMUX" ls)"

# The dialog lists it; Esc changes nothing.
prefix f
wait_for "http://$A:$HP/ -> its port $JP" || fail "the dialog does not list the forward"
escape
wait_gone "Forward a port of session" || fail "Esc did not close the dialog"
[ "$(curl -s -m 10 "http://$A:$HP/README")" = "hi" ] || fail "the forward went with Esc"

# -d removes it.
prefix f
wait_for "Forward a port of session" || fail "prefix f did not open the dialog again"
keys -l -- "-d $JP"
keys Enter
wait_for "its port $JP is no longer forwarded" || fail "the status line does not say the forward went"
curl -s -m 5 "http://$A:$HP/README" >/dev/null
[ $? = 7 ] || fail "the host port still answers after -d in the dialog"
echo "ok: prefix f forwards, lists and removes a port, refusing what is no port"

# The prompt's port takes -t SESSION (or last), which Tab completes.
keys C-a
keys :
keys -l 'port -t '
keys Tab
wait_for "^:port -t +$id  last *\$" || fail "Tab after port -t did not list the sessions"
keys Escape
sleep 0.3
keys C-a
keys :
keys -l "port -t 99999 $JP"
keys Enter
wait_for 'port: no running session 99999' || fail ":port -t of no session was not refused"
keys C-a
keys :
keys -l "port -t last $JP $HP"
keys Enter
wait_for "session $id: http://$A:$HP/ -> session $id's port $JP" || fail ":port -t last did not forward"
[ "$(curl -s -m 10 "http://$A:$HP/README")" = "hi" ] || fail "curl through :port -t last's forward failed"
keys C-a
keys :
keys -l "port -d -t $id $JP"
keys Enter
wait_for "its port $JP is no longer forwarded" || fail ":port -d -t $id did not remove the forward"
echo "ok: the prompt's port forwards for -t SESSION and last, and removes with -d"
