#!/usr/bin/env bash
# The agentmux server against a tmux server, in one run (issue 17):
#  (a) attach to a server with 4 running shell sessions until the screen is
#      drawn, against `tmux attach` to a tmux server with 4 windows: timed
#      on the client's own pty by bench/attach-time.py, from its fork until
#      the status line's bytes arrive (the goal's figure); and, as before,
#      with both clients in a pane of a detached outer tmux (160x45), until
#      the outer pane shows every session's mark and the status line
#      (polled with capture-pane, whose few ms per poll blur a 10 ms run);
#  (b) a key typed into a pane until it comes back on the client's terminal,
#      through client and server, against the same through tmux: the client
#      runs on a pty of bench/key-echo.py, which times each key on the read
#      (polling capture-pane costs more than the echo itself);
#  (c) pane throughput with a client attached against tmux attached
#      (bench/pane.sh: the shared anchor, as ../shared/acceptance/pane-speed.sh);
#  (d) the server's VmRSS with 4 idle sessions and per extra session (4 more,
#      the difference / 4), against the tmux server's with 4 and 8 windows.
#      The jails' processes are not the server's: only the server is counted.
# Ratios only, never timed assertions: the machine's load moves every figure.
# Usage: bench/server.sh [BUILD_DIR]   (ROUNDS=10 attaches, KEYS=100 keys,
# RUNS=3 throughput runs, PANE=0 skips (c), ANCHORS as bench/pane.sh takes it)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
amx=$build/src/agentmux
[[ -x $amx ]] || { echo "bench/server.sh: build first (meson setup build && meson compile -C build)" >&2; exit 1; }
command -v tmux >/dev/null || { echo "bench/server.sh: tmux is missing" >&2; exit 1; }
ROUNDS=${ROUNDS:-10} KEYS=${KEYS:-100} RUNS=${RUNS:-3} PANE=${PANE:-1}
work=$(mktemp -d /tmp/amx-bench-server.XXXXXX)
chmod 755 "$work"
outer=amx-srv-outer-$$ inner=amx-srv-inner-$$
cleanup() {
	tmux -L "$outer" kill-server 2>/dev/null || true
	tmux -L "$inner" kill-server 2>/dev/null || true
	"$amx" kill-server >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT
export XDG_CONFIG_HOME=$work/config XDG_DATA_HOME=$work/data XDG_RUNTIME_DIR=$work/run \
	XDG_STATE_HOME=$work/state
mkdir -p "$XDG_CONFIG_HOME/agentmux" "$XDG_DATA_HOME" "$XDG_RUNTIME_DIR" "$work/proj"
chmod 700 "$XDG_RUNTIME_DIR"
git -C "$work/proj" init -q
echo '*' >"$work/proj/.gitignore"
mark='amx-bench-drawn'

now_ms() { date +%s%N | awk '{printf "%.3f", $1 / 1e6}'; }
scr() { tmux -L "$outer" capture-pane -p -t out; }

# wait_all SECONDS PATTERN...: polls the outer pane until it shows every PATTERN (grep -F).
wait_all() {
	local end=$((SECONDS + $1)) s p ok
	shift
	while ((SECONDS < end)); do
		s=$(scr)
		ok=1
		for p in "$@"; do
			[[ $s == *"$p"* ]] || { ok=0; break; }
		done
		((ok)) && return 0
	done
	return 1
}

# stats NAME FILE: median and p90 of FILE's figures as RESULT lines.
stats() {
	sort -n "$2" | awk -v n="$1" '{ v[NR] = $1 } END {
		printf "RESULT server.%s.median_ms %.1f\n", n, v[int((NR + 1) / 2)];
		printf "RESULT server.%s.p90_ms %.1f\n", n, v[int(NR * 0.9 + 0.5)] }'
}

# attach NAME CMD DETACH PATTERN...: ROUNDS times, CMD started in the outer pane and timed until
# the pane shows every PATTERN; then DETACH (a command) and a wait for the client's end.
attach() {
	local name=$1 cmd=$2 detach=$3 i t0 t1
	shift 3
	: >"$work/$name.ms"
	for ((i = 1; i <= ROUNDS; i++)); do
		tmux -L "$outer" send-keys -t out "clear; $cmd; echo ended-\$((6*7))" Enter
		t0=$(now_ms)
		wait_all 20 "$@" || { echo "bench/server.sh: $name: never drawn" >&2; scr >&2; exit 1; }
		t1=$(now_ms)
		awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", b - a }' >>"$work/$name.ms"
		eval "$detach"
		wait_all 10 ended-42 || { echo "bench/server.sh: $name: did not detach" >&2; exit 1; }
		sleep 0.3
	done
	stats "attach.$name" "$work/$name.ms"
}

# keys NAME COMMAND...: KEYS marks typed into the client COMMAND runs, each timed until it echoes.
keys() {
	local name=$1
	shift
	python3 "$src/bench/key-echo.py" "$name" "$KEYS" "$mark-" "$@" ||
		{ echo "bench/server.sh: $name: no key figures" >&2; exit 1; }
}

rss_kib() { awk '$1 == "VmRSS:" { print $2 }' "/proc/$1/status"; }

# The outer terminal: a shell in a 160x45 pane that the clients run in.
tmux -L "$outer" -u -f /dev/null new-session -d -s out -x 160 -y 45 -c "$work/proj" \
	-e "XDG_CONFIG_HOME=$XDG_CONFIG_HOME" -e "XDG_DATA_HOME=$XDG_DATA_HOME" \
	-e "XDG_RUNTIME_DIR=$XDG_RUNTIME_DIR" -e "XDG_STATE_HOME=$XDG_STATE_HOME" \
	-e TERM=xterm-256color -e PS1='$ ' sh
sleep 0.5

# agentmux: 4 shell sessions, each showing the mark.
for n in 1 2 3 4; do
	(cd "$work/proj" && "$amx" new -d --shared -- sh -c "echo $mark-$n; exec sh" >/dev/null)
done
sleep 2
spid=$(cat "$XDG_RUNTIME_DIR/agentmux/default.pid")
rss4=$(rss_kib "$spid")
attach agentmux "$amx attach" 'tmux -L "$outer" send-keys -t out C-a d' "$mark-" '4:shell' |
	tee -a "$work/results"
python3 "$src/bench/attach-time.py" agentmux "$ROUNDS" '4:shell' key "$amx" attach |
	tee -a "$work/results"
keys agentmux "$amx" attach | tee -a "$work/results"
for n in 5 6 7 8; do
	(cd "$work/proj" && "$amx" new -d --shared -- sh -c "echo $mark-$n; exec sh" >/dev/null)
done
sleep 2
rss8=$(rss_kib "$spid")
"$amx" kill-server >/dev/null 2>&1 || true

# tmux: 4 windows, each showing the mark.
tmux -L "$inner" -u -f /dev/null new-session -d -s in -x 160 -y 45 -c "$work/proj" \
	sh -c "echo $mark-1; exec sh"
for n in 2 3 4; do
	tmux -L "$inner" new-window -t in -c "$work/proj" sh -c "echo $mark-$n; exec sh"
done
sleep 1
tpid=$(tmux -L "$inner" display-message -p '#{pid}')
trss4=$(rss_kib "$tpid")
attach tmux "TMUX= tmux -L $inner attach -t in" \
	'tmux -L "$inner" detach-client -s in' "$mark-" '3:sh' | tee -a "$work/results"
TMUX='' python3 "$src/bench/attach-time.py" tmux "$ROUNDS" '3:sh' \
	"tmux -L $inner detach-client -s in" tmux -L "$inner" attach -t in | tee -a "$work/results"
TMUX='' keys tmux tmux -L "$inner" attach -t in | tee -a "$work/results"
for n in 5 6 7 8; do
	tmux -L "$inner" new-window -d -t in -c "$work/proj" sh -c "echo $mark-$n; exec sh"
done
sleep 1
trss8=$(rss_kib "$tpid")
tmux -L "$inner" kill-server

# (d) memory.
{
	echo "RESULT server.rss.agentmux.4_sessions_kib $rss4"
	echo "RESULT server.rss.agentmux.per_session_kib $(((rss8 - rss4) / 4))"
	echo "RESULT server.rss.tmux.4_windows_kib $trss4"
	echo "RESULT server.rss.tmux.per_window_kib $(((trss8 - trss4) / 4))"
} | tee -a "$work/results"

# (c) throughput with a client attached.
if [[ $PANE == 1 ]]; then
	RUNS=$RUNS AMX=$amx "$src/bench/pane.sh" | tee "$work/pane.out" ||
		echo "bench/server.sh: bench/pane.sh failed (ANCHORS=dir of pane-throughput.sh?)" >&2
	grep '^RATIO' "$work/pane.out" | sed 's/^RATIO /RATIO pane throughput /' >>"$work/ratios"
fi

awk '{ v[$2] = $3 } END {
	tw = v["server.rss.tmux.per_window_kib"];
	if (tw <= 0)
		tw = 1;
	printf "RATIO agentmux/tmux attach until drawn, read on the client'"'"'s pty (median) %.2f (goal <= 1.0)\n",
	    v["server.attach_pty.agentmux.median_ms"] / v["server.attach_pty.tmux.median_ms"];
	printf "RATIO agentmux/tmux attach until the outer pane shows it (median; capture-pane polling) %.2f\n",
	    v["server.attach.agentmux.median_ms"] / v["server.attach.tmux.median_ms"];
	printf "RATIO agentmux/tmux key echo (median) %.2f (goal <= 1.0)\n",
	    v["server.key.agentmux.median_ms"] / v["server.key.tmux.median_ms"];
	printf "RATIO agentmux/tmux server RSS, 4 sessions %.2f; per extra session %.2f\n",
	    v["server.rss.agentmux.4_sessions_kib"] / v["server.rss.tmux.4_windows_kib"],
	    v["server.rss.agentmux.per_session_kib"] / tw }' "$work/results"
[[ -f $work/ratios ]] && cat "$work/ratios"
exit 0
