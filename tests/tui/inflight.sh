#!/bin/sh
# A model request in flight is a turn: a session whose program waits (silent, in poll) on a slow request to a
# model host of its profile stays "working" past idle_after, and needs you only once the request is over and
# it reads its terminal; the same wait on a host that is not a model host needs you (the check is what tells).
set -u
. "$(dirname "$0")/lib.sh"
command -v curl >/dev/null || { echo "SKIP: curl is not installed"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed"; exit 77; }

# A slow upstream: every answer after 4 seconds.
python3 -c '
import http.server, socketserver, sys, time
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        time.sleep(4)
        self.send_response(200); self.send_header("Content-Length", "3"); self.end_headers()
        self.wfile.write(b"ok\n")
    def log_message(self, *a): pass
class S(socketserver.ThreadingMixIn, http.server.HTTPServer): daemon_threads = True
s = S(("127.0.0.1", 0), H)
open(sys.argv[1], "w").write(str(s.server_address[1]))
s.serve_forever()' "$T/port" &
UPID=$!
for _ in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.05; done
PORT=$(cat "$T/port")
cat >"$XDG_CONFIG_HOME/agentmux/config" <<CONF
[ui]
idle_after = 500
[proxy]
connect_to = model.test:$PORT:127.0.0.1:$PORT
connect_to = other.test:$PORT:127.0.0.1:$PORT
[agent slow]
command = sh
model_host = model.test
allow = model.test:$PORT
allow = other.test:$PORT
CONF

activity() {
	"$AGENTMUX" sessions --json | python3 -c '
import json, sys
v = json.load(sys.stdin)
print(v[0]["activity"] if v else "")'
}

start_dashboard run -a slow
wait_for '[#$] ?$' || fail "no shell prompt"
i=0
while [ $i -lt 50 ] && [ "$(activity)" != "needs you" ]; do sleep 0.1; i=$((i + 1)); done
[ "$(activity)" = "needs you" ] || fail "the shell at its prompt is '$(activity)'"

# curl waits in poll, silent, for 4 s: a model request in flight keeps it working.
keys "curl -s http://model.test:$PORT/v1/messages; echo done-model" Enter
sleep 2.5
[ "$(activity)" = working ] || fail "a silent wait on a model request is '$(activity)', not working"
wait_for 'done-model' 10 || fail "the model request did not end"
i=0
while [ $i -lt 30 ] && [ "$(activity)" != "needs you" ]; do sleep 0.1; i=$((i + 1)); done
[ "$(activity)" = "needs you" ] || fail "after the model request, at its prompt, it is '$(activity)'"

# The same wait on a host that is not a model host: nothing says a turn runs.
keys "curl -s http://other.test:$PORT/; echo done-other" Enter
sleep 2.5
[ "$(activity)" = "needs you" ] || fail "a wait in poll on another host is '$(activity)' (the model check is not what kept it working)"
wait_for 'done-other' 10 || fail "the other request did not end"
echo "inflight: a model request keeps the session working; another host's does not"
