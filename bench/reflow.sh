#!/bin/sh
# A pane's resize with 10,000 lines of history, a third of them wrapped: agentmux's grid
# (bench/reflow-bench.c, the reflow alone) against tmux's resize-window of a pane holding the
# same lines (the command's round trip, which includes tmux's reflow), same run.
# Usage: bench/reflow.sh [BUILD_DIR]   (default build-test)
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build-test}
bench=$build/bench/amx-reflow-bench
[ -x "$bench" ] || { echo "build $bench first (ninja -C $build)"; exit 1; }
"$bench" 10000

sock=amx-reflow-$$
dir=$(mktemp -d /tmp/amx-reflow.XXXXXX)
trap 'tmux -L $sock kill-server 2>/dev/null; rm -rf "$dir"' EXIT
# The same lines as reflow-bench.c: every third one 300 characters long.
awk 'BEGIN { for (i = 0; i < 10050; i++) { if (i % 3 == 0) { s = sprintf("%300s", ""); gsub(/ /, sprintf("%c", 97 + i % 26), s); print s } else print "line " i " of the build log" } }' >"$dir/lines"
printf 'set -g history-limit 10000\n' >"$dir/conf"
tmux -L $sock -f "$dir/conf" new-session -d -x 200 -y 50 "cat '$dir/lines'; touch '$dir/done'; sleep 600"
i=0
while [ ! -f "$dir/done" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
sleep 1
for w in 120 200 80 200 120 200 80 200 120 200 80 200 120 200 80 200 120 200 80 200; do
	t0=$(date +%s%N)
	tmux -L $sock resize-window -t 0 -x $w -y 50
	t1=$(date +%s%N)
	echo $(( (t1 - t0) / 1000 ))
done | sort -n | awk '{ v[NR] = $1 } END { printf "RESULT tmux.resize-window.10000lines median_ms=%.2f worst_ms=%.2f \n", v[int(NR / 2) + 1] / 1000, v[NR] / 1000 }'
echo "history in tmux: $(tmux -L $sock display -p -t 0 '#{history_size}')"
