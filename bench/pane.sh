#!/bin/sh
# Pane throughput: `cat` of a 50 MiB file shown in an agentmux pane (the dashboard, attached to a 200x50
# terminal) against a tmux pane with a client attached, in the same run, through the shared anchor script.
# Usage: bench/pane.sh   (AMX=path/to/agentmux, ANCHORS=dir of pane-throughput.sh, RUNS=5, SIZE_MIB=50)
# Prints the anchor's RESULT lines and the ratio; goal: agentmux >= 1.5x tmux attached.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
anchors=${ANCHORS:-$root/../shared/bench-anchors}
amx=${AMX:-$root/build/src/agentmux}
[ -x "$amx" ] || { echo "bench/pane.sh: no agentmux at $amx; build first or set AMX" >&2; exit 1; }
[ -f "$anchors/pane-throughput.sh" ] ||
	{ echo "bench/pane.sh: no pane-throughput.sh in $anchors; set ANCHORS" >&2; exit 1; }
# The payload and its data must be inside the project, the only host dir the jail sees.
proj=$(mktemp -d "${BENCH_TMP:-/tmp}"/amx-bench-pane.XXXXXX)
xdg=$(mktemp -d /tmp/amx-bench-xdg.XXXXXX)
trap 'rm -rf "$proj" "$xdg"' EXIT
export XDG_CONFIG_HOME="$xdg/config" XDG_DATA_HOME="$xdg/data" XDG_RUNTIME_DIR="$xdg/run"
mkdir -p "$XDG_CONFIG_HOME" "$XDG_DATA_HOME" "$XDG_RUNTIME_DIR"
chmod 700 "$XDG_RUNTIME_DIR"
git -C "$proj" init -q
echo '*' >"$proj/.gitignore"
TMPDIR=$proj RUNS=${RUNS:-5} SIZE_MIB=${SIZE_MIB:-50} CASES=${CASES:-tmux-attached} MUX_NAME=agentmux \
	MUX_CMD="$amx -C $proj -- sh -c {CMD}" bash "$anchors/pane-throughput.sh" | tee "$xdg/out"
awk '$1 == "RESULT" && $2 ~ /MiBps$/ { sub("median=", "", $3); v[$2] = $3 }
	END { a = v["pane.agentmux.MiBps"]; t = v["pane.tmux-attached.MiBps"];
	      if (a != "" && t != "" && t + 0 > 0) printf "RATIO agentmux/tmux-attached %.2f\n", a / t }' "$xdg/out"
