#!/usr/bin/env bash
# Jail start-up against bubblewrap, through the shared anchor script: (a) the
# jail alone (bench/amx-jail-bench: jail_start as a session configures it,
# without config, store or loop) and (b) the whole `agentmux run -- true`.
# Prints the anchor's RESULT lines and each figure as a ratio to bwrap
# measured in the same run. Usage: bench/jail.sh [BUILD_DIR]
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
anchors=${ANCHORS:-$src/../shared/bench-anchors}
[[ -x $build/src/agentmux && -x $build/bench/amx-jail-bench ]] ||
	{ echo "bench/jail.sh: build first (meson setup build && ninja -C build)" >&2; exit 1; }
[[ -x $anchors/jail-startup.sh ]] ||
	{ echo "bench/jail.sh: no anchor scripts at $anchors; set ANCHORS" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/amx-bench-jail.XXXXXX")
trap 'rm -rf "$work"' EXIT
# Isolated XDG dirs: the runs are recorded in a throwaway store.
export XDG_CONFIG_HOME=$work/config XDG_DATA_HOME=$work/data
mkdir -p "$XDG_CONFIG_HOME" "$XDG_DATA_HOME"

run() {
	EXTRA_JAIL_NAME=$1 EXTRA_JAIL_CMD=$2 "$anchors/jail-startup.sh" |
		tee "$work/$1.txt"
}

ratio() {
	python3 - "$work/$1.txt" "$1" <<'PY'
import re, sys
fig = {}
for line in open(sys.argv[1]):
    m = re.match(r"RESULT jail\.(\S+) median=(\S+)", line)
    if m:
        fig[m.group(1)] = float(m.group(2))
name = sys.argv[2]
if name in fig and fig.get("bwrap"):
    print("RATIO %s/bwrap = %.2f (%.1f ms vs %.1f ms)" % (name, fig[name] / fig["bwrap"], fig[name], fig["bwrap"]))
else:
    print("RATIO %s/bwrap = nan (a figure is missing)" % name)
PY
}

run agentmux-jail "$build/bench/amx-jail-bench true"
run agentmux-run "$build/src/agentmux run -- true"
ratio agentmux-jail
ratio agentmux-run
