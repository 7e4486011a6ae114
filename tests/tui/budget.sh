#!/bin/sh
# The dashboard says when a session's records reached their budget: a jailed client floods the proxy with
# denied requests carrying 60 KB headers; the status bar says so as it happens and marks the session
# BUDGET while it runs, the history marks it BUDGET and its view counts what was not stored.
set -u
. "$(dirname "$0")/lib.sh"
[ -x /usr/bin/python3 ] || { echo "SKIP: /usr/bin/python3 (for the jail) is missing"; exit 77; }

cat >"$XDG_CONFIG_HOME/agentmux/config" <<EOF
[policy]
on_unknown = deny

[proxy]
record_budget = 1M
EOF
cat >"$P/flood.py" <<'PY'
import os, socket
port = int(os.environ["HTTP_PROXY"].rstrip("/").rsplit(":", 1)[1])
pad = b"X-Pad: " + b"a" * 60000 + b"\r\n"
for i in range(300):
    s = socket.create_connection(("127.0.0.1", port), timeout=20)
    s.sendall(b"GET http://flood-%d.test/x HTTP/1.1\r\nHost: flood-%d.test\r\n" % (i, i)
              + pad + b"Connection: close\r\n\r\n")
    while s.recv(65536):
        pass
    s.close()
PY
start_dashboard
wait_for '[0-9][0-9]*:shell\* (working|needs you)' || fail "no status bar with the session"
wait_for '[#$] ?$' || fail "no shell prompt in the pane"
keys "/usr/bin/python3 flood.py; echo flood-\$((6*7))" Enter
# The status bar says it as it happens (a message that goes after a while).
wait_for 'record_budget' 120 || fail "the status bar does not say the budget was reached"
wait_for 'flood-42' 120 || fail "the flood did not finish"
wait_for '[0-9][0-9]*:shell\* (working|needs you) BUDGET' || fail "the status bar does not mark the session BUDGET"
prefix h
wait_for 'history: [0-9]+ sessions' || fail "no history"
wait_for '^ +1 shell .*BUDGET' || fail "the history does not mark the session BUDGET"
keys Enter
wait_for 'BUDGET: the session.s records reached \[proxy\] record_budget; [0-9]+ request' ||
	fail "the session view does not say what was not stored"
scr | grep -q 'requests 300 (allowed 0, denied 300, errors 0)' || fail "the session view does not count every request"
escape
escape
prefix q
wait_for 'Quit\?' || fail "quitting did not ask"
keys y
wait_for 'DASHBOARD-EXITED-0' || fail "the dashboard did not exit"
echo "budget: status bar, history and session view say the record budget was reached"
