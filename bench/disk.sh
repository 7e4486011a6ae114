#!/usr/bin/env bash
# What watching a session's disk costs ([limits] disk_write, disk_reserve):
# (a) an idle session, `agentmux run -- sleep`, CPU time of agentmux and of
# the jail's init over the idle part, and agentmux's wakeups, with the
# limits on (the defaults) against off (both 0): the tool users would
# pick instead is no watch at all; (b) a session writing 1 GiB (64 MiB
# files, rewritten) far from its limits, on against off, to show the
# counting does not slow a writer. Prints RESULT lines and ratios.
# Usage: bench/disk.sh [BUILD_DIR]   (RUNS=3, SECS=20)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
amx=$build/src/agentmux
[[ -x $amx ]] || { echo "bench/disk.sh: build first" >&2; exit 1; }
runs=${RUNS:-3}
secs=${SECS:-20}
work=$(mktemp -d "${TMPDIR:-/var/tmp}/amx-bench-disk.XXXXXX")
trap 'rm -rf "$work"' EXIT
export AGENTMUX_SHARE=$src/share/agentmux

# setup MODE: isolated dirs, a project, a config with the limits on or off.
setup() {
	local d=$work/$1
	mkdir -p "$d/config/agentmux" "$d/data" "$d/run" "$d/proj"
	chmod 700 "$d/run"
	if [[ $1 == off ]]; then
		printf '[limits]\ndisk_write = 0\ndisk_reserve = 0\n' >"$d/config/agentmux/config"
	else
		: >"$d/config/agentmux/config"
	fi
	(cd "$d/proj" && git init -q . && echo hi >README && git add README &&
		git -c user.email=b@b -c user.name=b commit -qm init)
}

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
	awk '/^voluntary_ctxt_switches/ { print $2 }' /proc/"$1"/status
}

# idle MODE: one run; prints "agentmux_ns init_ns wakeups" over the idle part.
idle() {
	local d=$work/$1 pid init a0 i0 w0 a1 i1 w1
	(cd "$d/proj" && XDG_CONFIG_HOME=$d/config XDG_DATA_HOME=$d/data XDG_RUNTIME_DIR=$d/run \
		exec "$amx" run -- sleep "$secs") </dev/null >/dev/null 2>&1 &
	pid=$!
	sleep 3
	init=$(pgrep -P "$pid" | head -n 1)
	a0=$(cpu_ns "$pid") i0=$(cpu_ns "$init") w0=$(wakeups "$pid")
	sleep $((secs - 5))
	a1=$(cpu_ns "$pid") i1=$(cpu_ns "$init") w1=$(wakeups "$pid")
	wait "$pid"
	echo "$((a1 - a0)) $((i1 - i0)) $((w1 - w0))"
}

# write MODE: ms to write 1 GiB in the jail, far from any limit.
write() {
	local d=$work/$1 t0 t1
	t0=$(date +%s%N)
	(cd "$d/proj" && XDG_CONFIG_HOME=$d/config XDG_DATA_HOME=$d/data XDG_RUNTIME_DIR=$d/run \
		"$amx" run -- sh -c 'for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16; do
		head -c 67108864 /dev/zero >w$((i % 4)); done') </dev/null >/dev/null 2>&1
	t1=$(date +%s%N)
	rm -f "$d"/proj/w*
	echo $(((t1 - t0) / 1000000))
}

setup on
setup off
for mode in on off; do
	: >"$work/idle-$mode"
	: >"$work/write-$mode"
done
for ((r = 0; r < runs; r++)); do
	for mode in on off; do
		idle $mode >>"$work/idle-$mode"
		write $mode >>"$work/write-$mode"
	done
done
python3 - "$work" "$secs" <<'PY'
import statistics as st, sys
work, secs = sys.argv[1], int(sys.argv[2]) - 5
def rows(name):
    return [list(map(int, l.split())) for l in open(f"{work}/{name}") if l.strip()]
fig = {}
for mode in ("on", "off"):
    idle = rows(f"idle-{mode}")
    for i, what in enumerate(("agentmux_cpu_us_per_s", "init_cpu_us_per_s", "wakeups_per_s")):
        vals = [r[i] / secs / (1000 if i < 2 else 1) for r in idle]
        fig[(mode, what)] = st.median(vals)
        print(f"RESULT disk.idle.{mode}.{what} median={st.median(vals):.2f} "
              f"min={min(vals):.2f} max={max(vals):.2f} runs={len(vals)} unit={what.split('_per')[0].split('_')[-1]}/s")
    w = [r[0] for r in rows(f"write-{mode}")]
    fig[(mode, "write")] = st.median(w)
    print(f"RESULT disk.write1g.{mode} median={st.median(w)} min={min(w)} max={max(w)} runs={len(w)} unit=ms")
for what in ("agentmux_cpu_us_per_s", "init_cpu_us_per_s", "wakeups_per_s"):
    on, off = fig[("on", what)], fig[("off", what)]
    print(f"RATIO idle {what} on/off = {on / off:.2f} ({on:.2f} vs {off:.2f})" if off else
          f"RATIO idle {what} on/off = n/a ({on:.2f} vs {off:.2f})")
on, off = fig[("on", "write")], fig[("off", "write")]
print(f"RATIO write 1 GiB on/off = {on / off:.2f} ({on} ms vs {off} ms)")
PY
