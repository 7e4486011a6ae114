#!/usr/bin/env bash
# Key latency while a pane floods: two panes side by side, `yes` writing as
# fast as it can in the right one; in the left one, keys typed through tmux
# send-keys, and the time until each shows on the screen (polled with
# capture-pane). The same in tmux itself (two panes, the same flood) in the
# same run, and both without a flood. A frame is 1/60 s (16.7 ms).
# Usage: bench/flood-keys.sh [BUILD_DIR]   (KEYS=30 keys per case)
# Prints RESULT lines (median and p90 ms per case) and the ratios.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
amx=$build/src/agentmux
[[ -x $amx ]] || { echo "bench/flood-keys.sh: build first (meson setup build && ninja -C build)" >&2; exit 1; }
command -v tmux >/dev/null || { echo "bench/flood-keys.sh: tmux is missing" >&2; exit 1; }
KEYS=${KEYS:-30}
work=$(mktemp -d /tmp/amx-bench-flood.XXXXXX)
chmod 755 "$work"
sock=amx-flood-$$
cleanup() { tmux -L "$sock" kill-server 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
export XDG_CONFIG_HOME=$work/config XDG_DATA_HOME=$work/data XDG_RUNTIME_DIR=$work/run
mkdir -p "$XDG_CONFIG_HOME/agentmux" "$XDG_DATA_HOME" "$XDG_RUNTIME_DIR" "$work/proj"
chmod 700 "$XDG_RUNTIME_DIR"
git -C "$work/proj" init -q

now_ms() { date +%s%N | awk '{printf "%.3f", $1 / 1e6}'; }

# wait_screen TARGET PATTERN SECONDS: polls capture-pane until grep -F PATTERN.
wait_screen() {
	local end=$((SECONDS + $3))
	while ((SECONDS < end)); do
		tmux -L "$sock" capture-pane -p -t "$1" | grep -qF -- "$2" && return 0
	done
	return 1
}

# measure TARGET SENDTARGET NAME: types KEYS marks, one at a time, timing each.
measure() {
	local target=$1 send=$2 name=$3 i t0 t1
	: >"$work/$name.ms"
	for ((i = 1; i <= KEYS; i++)); do
		local mark="k${i}q"
		t0=$(now_ms)
		tmux -L "$sock" send-keys -t "$send" -l "$mark"
		wait_screen "$target" "$mark" 10 || { echo "bench/flood-keys.sh: $name: '$mark' never showed" >&2; exit 1; }
		t1=$(now_ms)
		awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", b - a }' >>"$work/$name.ms"
		tmux -L "$sock" send-keys -t "$send" C-u
		sleep 0.05
	done
	sort -n "$work/$name.ms" | awk -v n="$name" '{ v[NR] = $1 } END {
		printf "RESULT flood.%s.median_ms %.1f\n", n, v[int((NR + 1) / 2)];
		printf "RESULT flood.%s.p90_ms %.1f\n", n, v[int(NR * 0.9 + 0.5)] }'
}

# agentmux: the dashboard in a 160x45 tmux window, a second session beside the first.
tmux -L "$sock" -u -f /dev/null new-session -d -s amx -x 160 -y 45 -c "$work/proj" \
	-e "XDG_CONFIG_HOME=$XDG_CONFIG_HOME" -e "XDG_DATA_HOME=$XDG_DATA_HOME" \
	-e "XDG_RUNTIME_DIR=$XDG_RUNTIME_DIR" -e TERM=xterm-256color "$amx"
wait_screen amx '1:shell' 15 || { echo "bench/flood-keys.sh: the dashboard did not start" >&2; exit 1; }
sleep 1
tmux -L "$sock" send-keys -t amx C-a c; sleep 0.3
tmux -L "$sock" send-keys -t amx s Enter; sleep 0.3
tmux -L "$sock" send-keys -t amx Enter
# Session 1 works in that tree: the dialog asks, and s shares it (as the dashboard did before it asked).
wait_screen amx 'tree is in use' 15 || { echo "bench/flood-keys.sh: the dialog did not ask about the shared tree" >&2; exit 1; }
tmux -L "$sock" send-keys -t amx s
wait_screen amx '2:shell' 15 || { echo "bench/flood-keys.sh: no second session" >&2; exit 1; }
sleep 1
tmux -L "$sock" send-keys -t amx C-a '|'; sleep 0.5
tmux -L "$sock" send-keys -t amx C-a Left; sleep 0.3
measure amx amx agentmux-idle | tee -a "$work/results"
tmux -L "$sock" send-keys -t amx C-a Right; sleep 0.3
tmux -L "$sock" send-keys -t amx 'yes flood-flood-flood' Enter; sleep 1
tmux -L "$sock" send-keys -t amx C-a Left; sleep 0.3
measure amx amx agentmux-flood | tee -a "$work/results"

# tmux: two panes, the same flood in the right one.
tmux -L "$sock" -u -f /dev/null new-session -d -s tm -x 160 -y 45 -c "$work/proj"
tmux -L "$sock" split-window -h -t tm -c "$work/proj"
sleep 0.5
measure tm:0.0 tm:0.0 tmux-idle | tee -a "$work/results"
tmux -L "$sock" send-keys -t tm:0.1 'yes flood-flood-flood' Enter; sleep 1
measure tm:0.0 tm:0.0 tmux-flood | tee -a "$work/results"
tmux -L "$sock" send-keys -t tm:0.1 C-c
awk '{ v[$2] = $3 } END {
	printf "RATIO agentmux/tmux key latency under flood (median) %.2f\n",
	    v["flood.agentmux-flood.median_ms"] / v["flood.tmux-flood.median_ms"];
	printf "FRAMES agentmux under flood: median %.1f, p90 %.1f (1 frame = 16.7 ms)\n",
	    v["flood.agentmux-flood.median_ms"] / 16.7, v["flood.agentmux-flood.p90_ms"] / 16.7 }' "$work/results"
