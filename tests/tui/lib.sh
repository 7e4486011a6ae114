# Shared by the dashboard's end-to-end scripts (sourced): agentmux in a detached tmux with isolated XDG dirs,
# driven with send-keys, read with capture-pane, polled with bounded loops.

: "${AGENTMUX:?run through meson test (AGENTMUX is not set)}"
command -v tmux >/dev/null 2>&1 || { echo "SKIP: tmux is not installed"; exit 77; }

SOCK=amx-dash-$$
# A second terminal, for tests with two clients (scr2, keys2, wait_for2, ...): another tmux server.
SOCK2=$SOCK-b
T=$(mktemp -d /tmp/amx-dash.XXXXXX) || exit 1
chmod 755 "$T"
export XDG_CONFIG_HOME="$T/config" XDG_DATA_HOME="$T/data" XDG_RUNTIME_DIR="$T/run" \
	XDG_STATE_HOME="$T/state"
mkdir -p "$XDG_CONFIG_HOME/agentmux" "$XDG_DATA_HOME" "$XDG_RUNTIME_DIR"
chmod 700 "$XDG_RUNTIME_DIR"
P="$T/proj"
mkdir -p "$P"
(cd "$P" && git init -q . && git config user.email t@x && git config user.name t &&
	echo hi >README && git add README && git commit -qm init) || exit 1
UPID=

# server_pid [NAME]: the pid of this test's agentmux server (NAME: default), or nothing.
server_pid() {
	cat "$XDG_RUNTIME_DIR/agentmux/${1:-default}.pid" 2>/dev/null
}

# stop_server [NAME]: ends this test's server (SIGTERM: its sessions close) and waits for it, so that the next dashboard starts one with the config as it is now.
stop_server() {
	_sp=$(server_pid "$@")
	[ -n "$_sp" ] || return 0
	kill -TERM "$_sp" 2>/dev/null
	_i=0
	while kill -0 "$_sp" 2>/dev/null && [ $_i -lt 200 ]; do
		sleep 0.05
		_i=$((_i + 1))
	done
	! kill -0 "$_sp" 2>/dev/null
}

# gone_wait PID N: waits until PID has exited, at most N twentieths of a second; whether it has.
gone_wait() {
	_i=0
	while kill -0 "$1" 2>/dev/null && [ $_i -lt "$2" ]; do
		sleep 0.05
		_i=$((_i + 1))
	done
	! kill -0 "$1" 2>/dev/null
}

# tmux_kill SOCK: ends that tmux server and waits (bounded) for it to be gone: kill-server returns
# before the server has exited, and a new-session on its socket meanwhile reached the dying server
# ("server exited unexpectedly": tui-sizes failed so under load).
tmux_kill() {
	_tp=$(tmux -L "$1" display-message -p '#{pid}' 2>/dev/null)
	tmux -L "$1" kill-server 2>/dev/null
	[ -z "$_tp" ] || gone_wait "$_tp" 200 || :
}

# kill_server_wait: agentmux kill-server, then waits (bounded) for the old server to be gone: it answers
# at once and stops listening, but ends its sessions before it exits, and until then they are live in
# their trees (a next dashboard there would ask about the tree in use).
kill_server_wait() {
	_kp=$(server_pid)
	timeout 20 "$AGENTMUX" kill-server >/dev/null 2>&1
	[ -n "$_kp" ] || return 0
	gone_wait "$_kp" 1200 || fail "the server (pid $_kp) still runs 60 s after kill-server"
}

cleanup() {
	# The dashboard writes its sessions' ends as it goes: wait (bounded)
	# for the panes' processes and the server (which outlives its
	# clients), or they write into $T after it is removed.
	tmux -L "$SOCK2" kill-server 2>/dev/null
	_pids=$(tmux -L "$SOCK" list-panes -a -F '#{pane_pid}' 2>/dev/null)
	tmux -L "$SOCK" kill-server 2>/dev/null
	[ -n "$UPID" ] && kill "$UPID" 2>/dev/null
	# This test's servers: its own, and those of users it ran as ($T/*/run).
	for _f in "$XDG_RUNTIME_DIR"/agentmux/*.pid "$T"/*/run/agentmux/*.pid; do
		[ -f "$_f" ] || continue
		_s=$(cat "$_f")
		kill -TERM "$_s" 2>/dev/null && _pids="$_pids $_s"
	done
	for _p in $_pids; do
		_i=0
		while kill -0 "$_p" 2>/dev/null && [ $_i -lt 160 ]; do
			sleep 0.05
			_i=$((_i + 1))
		done
	done
	[ -n "${_s:-}" ] && kill -KILL "$_s" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*"
	echo "--- screen:"
	scr
	exit 1
}

scr() {
	tmux -L "$SOCK" capture-pane -p -t 0 2>/dev/null
}

keys() {
	tmux -L "$SOCK" send-keys -t 0 "$@"
}

# Escape, then a pause longer than the dashboard waits for the rest of an
# escape sequence, so that the next key is not read as Alt+key.
escape() {
	keys Escape
	sleep 0.2
}

# wait_for PATTERN [SECONDS]: polls the screen (grep -E) for up to SECONDS (10).
wait_for() {
	i=0
	n=$(( ${2:-10} * 10 ))
	while [ $i -lt $n ]; do
		scr | grep -Eq -- "$1" && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

# wait_gone PATTERN [SECONDS]: polls until the screen no longer shows PATTERN.
wait_gone() {
	i=0
	n=$(( ${2:-10} * 10 ))
	while [ $i -lt $n ]; do
		scr | grep -Eq -- "$1" || return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

# start_dashboard [ARGS...]: agentmux in a tmux window of DASH_SX x DASH_SY (160x45), in the project.
start_dashboard() {
	tmux -L "$SOCK" -u -f /dev/null new-session -d -x "${DASH_SX:-160}" \
		-y "${DASH_SY:-45}" -c "$P" \
		-e "XDG_CONFIG_HOME=$XDG_CONFIG_HOME" -e "XDG_DATA_HOME=$XDG_DATA_HOME" \
		-e "XDG_RUNTIME_DIR=$XDG_RUNTIME_DIR" -e "XDG_STATE_HOME=$XDG_STATE_HOME" \
		-e "TERM=xterm-256color" \
		"$AGENTMUX $*; echo DASHBOARD-EXITED-\$?; sleep 60" ||
		fail "tmux could not start agentmux"
}

# share_tree: the new-session dialog asks about a tree another live session works in; s shares it (as the
# dashboard's own starts did before they asked).
share_tree() {
	wait_for 'tree is in use' || fail "the dialog did not ask about a tree another session works in"
	keys s
}

# prefix KEY...: the prefix (C-a), then the keys.
prefix() {
	keys C-a
	keys "$@"
}

# https_upstream_make SANS: a CA and a server certificate for SANS (e.g. "DNS:localhost,IP:127.0.0.1") in
# $u ($T/up; the CA is $u/ca.pem), and $u/srv.py, an HTTPS server that answers "served PATH HOST" and
# appends the same line to $SEEN.
https_upstream_make() {
	u=$T/up
	SEEN=$u/seen.log
	mkdir -p "$u"
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=tui-test-ca -keyout "$u/ca.key" \
		-out "$u/ca.pem" -addext basicConstraints=critical,CA:TRUE \
		-addext keyUsage=critical,keyCertSign >/dev/null 2>&1 || fail "openssl could not make a CA"
	openssl req -newkey rsa:2048 -nodes -subj /CN=localhost -keyout "$u/srv.key" -out "$u/srv.csr" \
		>/dev/null 2>&1 || fail "openssl could not make a key"
	printf 'subjectAltName=%s\n' "$1" >"$u/ext"
	openssl x509 -req -in "$u/srv.csr" -CA "$u/ca.pem" -CAkey "$u/ca.key" -CAcreateserial -days 2 \
		-extfile "$u/ext" -out "$u/srv.pem" >/dev/null 2>&1 || fail "openssl could not sign"
	cat >"$u/srv.py" <<'PY'
import http.server, ssl, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        out = ("served %s %s\n" % (self.path, self.headers.get("Host"))).encode()
        with open(sys.argv[3], "ab") as f: f.write(out)
        self.send_response(200); self.send_header("Content-Length", str(len(out))); self.end_headers()
        self.wfile.write(out)
    def log_message(self, *a): pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); ctx.load_cert_chain(sys.argv[1] + "/srv.pem", sys.argv[1] + "/srv.key")
s.socket = ctx.wrap_socket(s.socket, server_side=True)
open(sys.argv[2], "w").write(str(s.server_address[1]))
s.serve_forever()
PY
}

# https_upstream_start NAME SECONDS: starts a server of https_upstream_make's for at most SECONDS; it
# writes its port to $u/NAME once it listens. Its pid is $! right after.
https_upstream_start() {
	timeout "$2" python3 "$u/srv.py" "$u" "$u/$1" "$SEEN" >/dev/null 2>&1 &
}

# https_upstream_port NAME: the port the server started as NAME listens on, waited for (bounded); empty if none.
https_upstream_port() {
	_i=0
	while [ $_i -lt 100 ] && [ ! -s "$u/$1" ]; do sleep 0.1; _i=$((_i + 1)); done
	cat "$u/$1" 2>/dev/null
}

# ---- the second terminal ($SOCK2), for tests with two clients ----
scr2() {
	tmux -L "$SOCK2" capture-pane -p -t 0 2>/dev/null
}
keys2() {
	tmux -L "$SOCK2" send-keys -t 0 "$@"
}
fail2() {
	echo "--- second terminal:"
	scr2
	fail "$@"
}
# wait_for2 PATTERN [SECONDS], wait_gone2 PATTERN [SECONDS]: wait_for and wait_gone on the second terminal.
wait_for2() {
	i=0
	while [ $i -lt $(( ${2:-10} * 10 )) ]; do
		scr2 | grep -Eq -- "$1" && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}
wait_gone2() {
	i=0
	while [ $i -lt $(( ${2:-10} * 10 )) ]; do
		scr2 | grep -Eq -- "$1" || return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}
# status1, status2: the status bar (the last row) of the first or second terminal.
status1() {
	scr | tail -n 1
}
status2() {
	scr2 | tail -n 1
}
# wait_status N PATTERN [SECONDS]: polls terminal N's status bar for PATTERN.
wait_status() {
	i=0
	while [ $i -lt $(( ${3:-10} * 10 )) ]; do
		status$1 | grep -Eq -- "$2" && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}
