#!/bin/sh
# What starting a child holds the loop for (src/core/core-proc.c, through
# build*/bench/amx-spawn-bench), by the starting process's touched private
# memory (HEAPS, MiB) and the way the child is started, side by side in one
# run: `git --version` COUNT times each, one at a time.
#   spawn          no limit: cloned up to 32 MiB, posix_spawn above (the
#                  baseline: glibc's own way, which waits for the exec)
#   limit          with a memory limit (every git agentmux runs): cloned up
#                  to 32 MiB, proc_vfork above (shares memory until the exec)
#   limit-clone    with a limit, cloned whatever the size (the runner
#                  before proc_vfork: its page tables copied)
# Prints median / p90 / longest ms of each, and each median's ratio to spawn's.
# Usage: bench/spawn.sh [AMX_SPAWN_BENCH]   (HEAPS, COUNT)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$root/build/bench/amx-spawn-bench}
[ -x "$bin" ] || { echo "bench/spawn.sh: no amx-spawn-bench at $bin; build first" >&2; exit 1; }
count=${COUNT:-200}
printf '%-6s %-12s %-24s %s\n' "MiB" "how" "median / p90 / max ms" "median vs spawn"
for heap in ${HEAPS:-0 60 200}; do
	base=
	for how in spawn limit limit-clone; do
		case $how in
		spawn) flags= ;;
		limit) flags=-l ;;
		limit-clone) flags="-l -c" ;;
		esac
		# shellcheck disable=SC2046,SC2086
		set -- $("$bin" $flags "$heap" "$count")
		[ -n "$base" ] || base=$1
		printf '%-6s %-12s %-24s %s\n' "$heap" "$how" "$1 / $2 / $3" \
		    "$(awk -v a="$1" -v b="$base" 'BEGIN { printf "%.2fx", (b > 0 ? a / b : 0) }')"
	done
done
