#!/bin/bash
# An idle dashboard (issue 19's figure): CPU time and wakeups over 10 s of the agentmux server with
# 4 shell sessions at their prompts, detached and then with a client attached (in an outer tmux),
# against a tmux server with 4 shell windows, detached and attached the same way. CPU is the
# schedstat of every thread of the server; jails and shells are not counted (neither are tmux's
# shells). Each measurement starts past a new server's 10 s grace and once no git job of the
# server's has run for 2 s. Isolated XDG dirs in a temp project. Usage: bench/idle.sh [BUILD_DIR] [SECONDS]
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
secs=${2:-10}
amx=${AMX:-$build/src/agentmux}
[ -x "$amx" ] || { echo "bench/idle.sh: build first" >&2; exit 1; }
command -v tmux >/dev/null || { echo "bench/idle.sh: needs tmux" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/amx-bench-idle.XXXXXX")
outer=amx-idle-outer-$$ inner=amx-idle-inner-$$
cleanup() {
	tmux -L "$outer" kill-server 2>/dev/null || true
	tmux -L "$inner" kill-server 2>/dev/null || true
	"$amx" kill-server >/dev/null 2>&1 || true
	sp=$(cat "$XDG_RUNTIME_DIR/agentmux/default.pid" 2>/dev/null || true)
	if [ -n "$sp" ]; then kill "$sp" 2>/dev/null || true; fi
	sleep 0.5
	rm -rf "$work"
}
export XDG_CONFIG_HOME="$work/config" XDG_DATA_HOME="$work/data" XDG_RUNTIME_DIR="$work/run"
export XDG_STATE_HOME="$work/state" AGENTMUX_SHARE="$src/share/agentmux" SHELL=/bin/sh
trap cleanup EXIT
mkdir -p "$XDG_CONFIG_HOME/agentmux" "$XDG_DATA_HOME" "$XDG_RUNTIME_DIR" "$work/proj"
chmod 700 "$XDG_RUNTIME_DIR"
printf "[ui]\nidle_after = 1000\n%s" "${EXTRA_CONFIG:-}" >"$XDG_CONFIG_HOME/agentmux/config"
cd "$work/proj" && git init -q . &&
    git -c user.email=b@b -c user.name=b commit -q --allow-empty -m start

# CPU ns of every thread of PID.
cpu_ns() {
	local t sum=0 ns
	for t in /proc/"$1"/task/*/schedstat; do
		read -r ns _ <"$t" 2>/dev/null || continue
		sum=$((sum + ns))
	done
	echo $sum
}
wakeups() {
	awk '/^voluntary_ctxt_switches/ { v = $2 } /^nonvoluntary_ctxt_switches/ { n = $2 }
	    END { print v + n }' /proc/"$1"/status
}
# quiet PID: waits (up to 60 s) until PID has run no git for 2 s: the snapshot repository's keep
# (count-objects, repack) runs in the background once the sessions' snapshots are in, and is not idle.
quiet() {
	local n=0 i=0
	while [ $n -lt 10 ] && [ $i -lt 300 ]; do
		if pgrep -P "$1" -x git >/dev/null; then n=0; else n=$((n + 1)); fi
		sleep 0.2
		i=$((i + 1))
	done
}
# measure NAME PID: CPU ms and wakeups of PID over $secs seconds.
measure() {
	local c0 w0 c1 w1
	sleep 3
	quiet "$2"
	c0=$(cpu_ns "$2") w0=$(wakeups "$2")
	sleep "$secs"
	c1=$(cpu_ns "$2") w1=$(wakeups "$2")
	awk -v n="$1" -v c=$((c1 - c0)) -v w=$((w1 - w0)) -v s="$secs" 'BEGIN {
	    printf "RESULT %s: cpu_ms %.1f wakeups %d (%s s)\n", n, c / 1e6, w, s }'
}

t0=$(date +%s)
for _ in 1 2 3 4; do
	"$amx" new -d --shared -- /bin/sh >/dev/null
done
sp=$(cat "$XDG_RUNTIME_DIR/agentmux/default.pid")
# Past a new server's 10 s grace for its first client (it checks each second until then): idle is after.
while [ $(($(date +%s) - t0)) -lt 9 ]; do sleep 1; done
measure "agentmux server, 4 sessions, detached" "$sp"
# The first keep of the sessions' snapshot repository (fan-out files in every objects dir, git
# count-objects) comes some 20-30 s after the start under load, and is a one-off, not idle.
while [ $(($(date +%s) - t0)) -lt 40 ]; do sleep 1; done
tmux -L "$outer" -f /dev/null new-session -d -x 160 -y 48 \
    "TERM=xterm-256color $amx attach; sleep 60"
measure "agentmux server, 4 sessions, attached" "$sp"
tmux -L "$outer" kill-server

tmux -L "$inner" -f /dev/null new-session -d -c "$work/proj" /bin/sh
for _ in 2 3 4; do
	tmux -L "$inner" new-window -d -c "$work/proj" /bin/sh
done
tp=$(tmux -L "$inner" display-message -p '#{pid}')
measure "tmux server, 4 windows, detached" "$tp"
tmux -L "$outer" -f /dev/null new-session -d -x 160 -y 48 \
    "TMUX= tmux -L $inner attach; sleep 60"
measure "tmux server, 4 windows, attached" "$tp"
