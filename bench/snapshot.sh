#!/bin/sh
# Snapshot speed: `agentmux snapshot` of the anchor's 10,000-file repo (each run
# 500 tracked files modified and 200 untracked ones rewritten: ~700 new blobs,
# untracked files included) side by side with `git stash create` (tracked files
# only) and the anchor's private-index variants, in one run of
# ../shared/bench-anchors/snapshot-bench.sh. Goal: agentmux <= 1.2x stash create.
# Usage: bench/snapshot.sh [AGENTMUX]   (RUNS, NFILES, NMOD, NNEW as the anchor takes them)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
amx=${1:-$root/build/src/agentmux}
anchors=${ANCHORS:-$root/../shared/bench-anchors}
[ -x "$amx" ] || { echo "bench/snapshot.sh: no agentmux at $amx; build first" >&2; exit 1; }
[ -x "$anchors/snapshot-bench.sh" ] || { echo "bench/snapshot.sh: no anchors in $anchors (set ANCHORS)" >&2; exit 1; }
amx=$(cd "$(dirname "$amx")" && pwd)/$(basename "$amx")

tmp=$(mktemp -d "${TMPDIR:-/tmp}/amx-bench-snap.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# agentmux's own files (its database, the runtime dir) stay out of the user's.
export XDG_DATA_HOME="$tmp/data" XDG_CONFIG_HOME="$tmp/config" XDG_RUNTIME_DIR="$tmp/run"
mkdir -p "$XDG_DATA_HOME" "$XDG_CONFIG_HOME" "$XDG_RUNTIME_DIR"
# A copy, so that a rebuild during the run does not disturb it.
cp "$amx" "$tmp/agentmux"
# (the whole program the front runs, where there is one beside it)
[ ! -e "$(dirname "$amx")/agentmux-full" ] || cp "$(dirname "$amx")/agentmux-full" "$tmp/agentmux-full"
amx=$tmp/agentmux

SNAP_EXTRA_NAME=agentmux SNAP_EXTRA_CMD="$amx snapshot -C . -m bench >/dev/null" \
	RUNS=${RUNS:-10} "$anchors/snapshot-bench.sh" | tee "$tmp/results"

median() { awk -v k="snap.$1" '$2 == k { sub("median=", "", $3); print $3 }' "$tmp/results"; }
a=$(median agentmux)
s=$(median stash-create)
case "$a$s" in *nan*|"") echo "RESULT snap.agentmux-vs-stash-create median=nan runs=derived unit=x note=failed"; exit 1 ;; esac
awk -v a="$a" -v s="$s" 'BEGIN { printf "RESULT snap.agentmux-vs-stash-create median=%.2f min=- max=- runs=derived unit=x note=goal<=1.2\n", a / s }'
