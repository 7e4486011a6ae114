#!/usr/bin/env bash
# What starting a session costs the sessions already running (issue 16's figure): the
# dashboard in a detached tmux runs session 1, a probe (python) that logs when each key
# typed into its pane arrives and keeps a keep-alive request loop going through its
# jail's proxy to a local upstream. Then session 2 is started from the new-session
# dialog on a 10,000-file repository (the snapshot anchor's shape: ~100 MiB, with 500
# tracked files changed and 200 new ones since its last snapshot, or no earlier
# snapshot at all with FIRST=1), and keys go to session 1 every 20 ms (C-a 1 first)
# until session 2 runs. Figures per run: the longest a key took to reach session 1's
# program, and the longest gap between two of its requests, before and while session 2
# starts. Goal (issue 16): both under 50 ms while it starts.
# Usage: bench/loop-wait.sh   (AMX=path/to/agentmux, RUNS=3, NFILES=10000, TOTAL_MIB=100,
#        FIRST=0; KEEP=1 keeps the work dir; TRACE=1 has the server log every loop turn
#        over 15 ms, named, to $work/loop-trace.RUN: AGENTMUX_LOOP_TRACE in agentmux(1))
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
amx=${AMX:-$src/build/src/agentmux}
runs=${RUNS:-3}
nfiles=${NFILES:-10000}
mib=${TOTAL_MIB:-100}
first=${FIRST:-0}
[[ -x $amx ]] || { echo "bench/loop-wait.sh: no agentmux at $amx; build first or set AMX" >&2; exit 1; }
# Absolute: the dashboard is started in session 1's project dir.
amx=$(realpath -- "$amx")
command -v tmux >/dev/null || { echo "bench/loop-wait.sh: needs tmux" >&2; exit 1; }
work=$(mktemp -d /tmp/amx-bench-loop.XXXXXX)
chmod 755 "$work"
sock=amx-bench-loop-$$
upid=
cleanup() {
	"$amx" kill-server >/dev/null 2>&1 || true
	tmux -L "$sock" kill-server 2>/dev/null || true
	[[ -n $upid ]] && kill "$upid" 2>/dev/null || true
	[[ ${KEEP:-0} == 1 ]] && echo "kept $work" >&2 || rm -rf "$work"
}
trap cleanup EXIT
export XDG_CONFIG_HOME=$work/config XDG_DATA_HOME=$work/data XDG_RUNTIME_DIR=$work/run
mkdir -p "$XDG_CONFIG_HOME/agentmux" "$XDG_DATA_HOME" "$XDG_RUNTIME_DIR"
chmod 700 "$XDG_RUNTIME_DIR"

# A keep-alive upstream on loopback: every answer has a length, the connection stays.
cat >"$work/upstream.py" <<'EOF'
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Its head and body are two writes: with Nagle's algorithm the body waits
    # for the proxy's delayed ACK (40 ms), which every gap would then measure.
    disable_nagle_algorithm = True
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")
    def log_message(self, *a):
        pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
EOF
python3 "$work/upstream.py" >"$work/up.port" 2>"$work/up.err" &
upid=$!
for _ in $(seq 100); do [[ -s $work/up.port ]] && break; sleep 0.1; done
port=$(cat "$work/up.port")
[[ -n $port ]] || { echo "bench/loop-wait.sh: the upstream did not start" >&2; exit 1; }
cat >"$XDG_CONFIG_HOME/agentmux/config" <<EOF
[policy]
allow = 127.0.0.1:$port GET
EOF

# Session 1's program: keys in raw mode, and requests through the proxy, each logged
# with the time it completed (the jail shares the host's clock).
a=$work/a
mkdir -p "$a"
cat >"$a/probe.py" <<'EOF'
import http.client, os, sys, threading, time, tty, urllib.parse
log = open(sys.argv[1], "a", buffering=1)
px = urllib.parse.urlsplit(os.environ.get("http_proxy") or os.environ["HTTP_PROXY"])
def loop():
    c = http.client.HTTPConnection(px.hostname, px.port, timeout=60)
    while True:
        c.request("GET", "http://127.0.0.1:%s/x" % sys.argv[2])
        r = c.getresponse()
        r.read()
        log.write("req %.6f %d\n" % (time.time(), r.status))
        time.sleep(0.005)
threading.Thread(target=loop, daemon=True).start()
tty.setraw(0)
print("probe-ready", flush=True)
while True:
    b = os.read(0, 64)
    t = time.time()
    for ch in b:
        log.write("key %.6f %s\n" % (t, chr(ch)))
EOF
(cd "$a" && git init -q . && echo '*.log' >.gitignore && git add -A &&
	git -c user.email=b@x -c user.name=b commit -qm a)

# Session 2's project: the snapshot anchor's shape.
b=$work/b
mkdir -p "$b"
cat >"$work/gen.py" <<'EOF'
import base64, os, random, sys
repo, n, total = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]) * 1048576
rnd = random.Random(1234)
mean = total // n
ndirs = max(1, n // 100)
for i in range(n):
    d = os.path.join(repo, "src", "d%03d" % (i % ndirs))
    os.makedirs(d, exist_ok=True)
    size = max(64, int(mean * rnd.uniform(0.2, 1.8)))
    with open(os.path.join(d, "f%05d.txt" % i), "wb") as f:
        f.write(base64.encodebytes(rnd.randbytes(size * 3 // 4))[:size])
EOF
cat >"$work/mutate.py" <<'EOF'
import os, sys
repo, n = sys.argv[1], int(sys.argv[2])
ndirs = max(1, n // 100)
tag = os.urandom(8).hex()
for k in range(500):
    i = (k * max(1, n // 500)) % n
    p = os.path.join(repo, "src", "d%03d" % (i % ndirs), "f%05d.txt" % i)
    with open(p, "r+b") as f:
        f.write(("%s\n" % tag).encode())
os.makedirs(os.path.join(repo, "untracked"), exist_ok=True)
for k in range(200):
    with open(os.path.join(repo, "untracked", "n%03d.txt" % k), "wb") as f:
        f.write((tag * 640).encode())
EOF
echo "generating $nfiles files (~$mib MiB) ..." >&2
python3 "$work/gen.py" "$b" "$nfiles" "$mib"
(cd "$b" && git init -q . && git add -A && git -c user.email=b@x -c user.name=b commit -qm b)

scr() { tmux -L "$sock" capture-pane -p -t 0 2>/dev/null; }
keys() { tmux -L "$sock" send-keys -t 0 "$@"; }
wait_for() {
	local i
	for ((i = 0; i < ${2:-30} * 10; i++)); do
		scr | grep -Eq -- "$1" && return 0
		sleep 0.1
	done
	echo "bench/loop-wait.sh: timed out waiting for '$1'; screen:" >&2
	scr >&2
	return 1
}
now() { date +%s.%N; }

# send_keys PHASE N: N keys to session 1, 20 ms apart, each logged as sent.
send_keys() {
	local i c
	for ((i = 0; i < $2; i++)); do
		c=$(printf "\\$(printf %o $((97 + i % 26)))")
		echo "sent $(now) $c $1" >>"$work/sent.log"
		keys -l "$c"
		sleep 0.02
	done
}

for ((run = 1; run <= runs; run++)); do
	rm -f "$a/probe.log" "$work/sent.log"
	if [[ $first == 1 ]]; then
		rm -rf "$XDG_DATA_HOME/agentmux"
	else
		"$amx" snapshot -C "$b" >/dev/null
		python3 "$work/mutate.py" "$b" "$nfiles"
	fi
	trace=()
	[[ ${TRACE:-0} == 1 ]] &&
		trace=(-e "AGENTMUX_LOOP_TRACE=$work/loop-trace.$run" -e AGENTMUX_LOOP_TRACE_MS=15)
	tmux -L "$sock" -u -f /dev/null new-session -d -x 160 -y 45 -c "$a" "${trace[@]}" \
		-e "XDG_CONFIG_HOME=$XDG_CONFIG_HOME" -e "XDG_DATA_HOME=$XDG_DATA_HOME" \
		-e "XDG_RUNTIME_DIR=$XDG_RUNTIME_DIR" -e "TERM=xterm-256color" \
		"echo \$\$ >$work/amx.pid; exec $amx -C $a -- /usr/bin/python3 probe.py probe.log $port"
	tmux -L "$sock" set-option -g remain-on-exit on
	wait_for 'probe-ready'
	for ((i = 0; i < 100; i++)); do grep -q '^req ' "$a/probe.log" 2>/dev/null && break; sleep 0.1; done
	grep -q '^req ' "$a/probe.log" ||
		{ echo "bench/loop-wait.sh: no request went through the proxy" >&2; scr >&2; exit 1; }
	echo "mark $(now) before" >>"$work/sent.log"
	send_keys before 25
	# Session 2: the prefix, c, the shell agent, its directory.
	keys C-a c
	wait_for 'pick an agent'
	keys s Enter
	wait_for 'project directory'
	keys C-u
	keys -l "$b"
	echo "mark $(now) start" >>"$work/sent.log"
	[[ ${TRACE:-0} == 1 ]] && echo "# session 2 starts" >>"$work/loop-trace.$run"
	keys Enter
	keys C-a 1
	# Keys until session 2 runs (both tabs name a running state: they show record ids,
	# which go on from run to run), at most 120 s.
	for ((i = 0; i < 6000; i++)); do
		send_keys during 5
		scr | grep -Eq ':shell\*? (running|working|needs you) .*:shell\*? (running|working|needs you)' && break
	done
	echo "mark $(now) started" >>"$work/sent.log"
	[[ ${TRACE:-0} == 1 ]] && echo "# session 2 runs" >>"$work/loop-trace.$run"
	sleep 0.5
	# The sessions live in agentmux's server, which outlives the terminal:
	# ended with it, or the next run would share it (and its probe's load,
	# and this run's environment: its loop trace's file).
	spid=$(cat "$XDG_RUNTIME_DIR/agentmux/default.pid" 2>/dev/null || true)
	"$amx" kill-server >/dev/null 2>&1 || true
	tmux -L "$sock" kill-server 2>/dev/null || true
	# The hang-up ends both sessions; wait for their end snapshots, and for
	# the server, which answers kill-server at once but ends its sessions
	# before it exits.
	for ((i = 0; i < 600; i++)); do kill -0 "$(cat "$work/amx.pid")" 2>/dev/null || break; sleep 0.1; done
	for ((i = 0; i < 600; i++)); do [[ -n $spid ]] && kill -0 "$spid" 2>/dev/null || break; sleep 0.1; done
	python3 - "$work/sent.log" "$a/probe.log" "$run" <<'EOF'
import sys
sent = [l.split() for l in open(sys.argv[1])]
probe = [l.split() for l in open(sys.argv[2])]
marks = {s[2]: float(s[1]) for s in sent if s[0] == "mark"}
keys = [(float(s[1]), s[2], s[3]) for s in sent if s[0] == "sent"]
got = [(float(p[1]), p[2]) for p in probe if p[0] == "key"]
reqs = [float(p[1]) for p in probe if p[0] == "req"]
# Match keys in order: each sent key is the next arrival of that letter.
lat = {"before": [], "during": []}
lost = {"before": 0, "during": 0}
j = 0
for t, c, phase in keys:
    k = j
    while k < len(got) and got[k][1] != c:
        k += 1
    if k == len(got):
        lost[phase] += 1
        continue
    lat[phase].append(got[k][0] - t)
    j = k + 1
def gap(lo, hi):
    r = [t for t in reqs if lo <= t <= hi]
    return max((b - a for a, b in zip(r, r[1:])), default=float("nan")), len(r)
gb, nb = gap(marks["before"], marks["start"])
gd, nd = gap(marks["start"], marks["started"])
def mx(v):
    return max(v) * 1000 if v else float("nan")
print("RESULT run=%s start_s=%.2f key_before_ms=%.1f key_during_ms=%.1f "
      "keys_lost_during=%d req_gap_before_ms=%.1f req_gap_during_ms=%.1f "
      "requests_during=%d" % (sys.argv[3], marks["started"] - marks["start"],
      mx(lat["before"]), mx(lat["during"]), lost["during"], gb * 1000,
      gd * 1000, nd))
EOF
	if [[ ${TRACE:-0} == 1 ]]; then
		sed -n '/session 2 starts/,/session 2 runs/p' "$work/loop-trace.$run"
	fi
done
