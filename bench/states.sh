#!/bin/sh
# Session states (issue 19's figures): CPU of an idle loop with 4 shell sessions at their prompts (state
# inference is event-driven: a timer per output burst, no polling), how long after its last output a
# session is shown as needing you (goal: within idle_after + 1 s), and how long a pause takes to freeze
# a jail of 200 processes (goal: 100 ms). Isolated XDG dirs in a temp project. Usage: bench/states.sh [BUILD_DIR]
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
[ -x "$build/bench/amx-states-bench" ] || { echo "bench/states.sh: build first" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/amx-bench-states.XXXXXX")
trap 'rm -rf "$work"' EXIT
export XDG_CONFIG_HOME="$work/config" XDG_DATA_HOME="$work/data" XDG_RUNTIME_DIR="$work/run"
export AGENTMUX_SHARE="$src/share/agentmux"
mkdir -p "$XDG_CONFIG_HOME/agentmux" "$XDG_DATA_HOME" "$XDG_RUNTIME_DIR" "$work/proj"
chmod 700 "$XDG_RUNTIME_DIR"
printf "[ui]\nidle_after = %s\n%s" "${IDLE_AFTER:-1000}" "${EXTRA_CONFIG:-}" >"$XDG_CONFIG_HOME/agentmux/config"
cd "$work/proj" && git init -q . && "$build/bench/amx-states-bench"
