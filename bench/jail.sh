#!/usr/bin/env bash
# Jail start-up against bubblewrap, through the shared anchor script: (a) the
# jail alone (bench/amx-jail-bench: jail_start as a session configures it,
# without config, store or loop) and (b) the whole `agentmux run -- true`.
# As root the limits go through cgroup v1 (where a cgroup attach can cost an
# RCU grace period); an ordinary user gets rlimits. So when run as root it
# also runs both figures as a throwaway unprivileged user (removed after).
# Prints the anchor's RESULT lines and each figure as a ratio to bwrap
# measured in the same run. Usage: bench/jail.sh [BUILD_DIR]
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
anchors=$(cd "${ANCHORS:-$src/../shared/bench-anchors}" 2>/dev/null && pwd) ||
	{ echo "bench/jail.sh: no anchor scripts; set ANCHORS" >&2; exit 1; }
[[ -x $build/src/agentmux && -x $build/bench/amx-jail-bench ]] ||
	{ echo "bench/jail.sh: build first (meson setup build && ninja -C build)" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/amx-bench-jail.XXXXXX")
user=""
cleanup() {
	[[ -n $user ]] && userdel "$user" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
chmod 755 "$work"
mkdir -p "$work/bin"
cp "$build/src/agentmux" "$build/src/agentmux-full" "$build/bench/amx-jail-bench" "$work/bin/"
cp -r "$src/share/agentmux" "$work/share"
cp -r "$anchors" "$work/anchors"
chmod -R a+rX "$work"

# run NAME COMMAND [PREFIX...]: one anchor run with COMMAND as the extra jail.
run() {
	local name=$1 cmd=$2
	shift 2
	"$@" env EXTRA_JAIL_NAME="$name" EXTRA_JAIL_CMD="$cmd" \
	    AGENTMUX_SHARE="$work/share" XDG_CONFIG_HOME="$work/x-$name/config" \
	    XDG_DATA_HOME="$work/x-$name/data" "$work/anchors/jail-startup.sh" |
		tee "$work/$name.txt"
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
    print("RATIO %s/bwrap = %.2f (%.1f ms vs bwrap %.1f ms in the same run)" %
          (name, fig[name] / fig["bwrap"], fig[name], fig["bwrap"]))
else:
    print("RATIO %s/bwrap = nan (a figure is missing)" % name)
PY
}

names=(agentmux-jail agentmux-run)
mkdir -p "$work"/x-agentmux-{jail,run}/{config,data}
run agentmux-jail "$work/bin/amx-jail-bench true"
run agentmux-run "$work/bin/agentmux run -- true"
if [[ $(id -u) == 0 ]] && command -v useradd >/dev/null && command -v setpriv >/dev/null; then
	user="amxb$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')"
	useradd -M -N -d /nonexistent -s /bin/sh "$user"
	mkdir -p "$work"/x-user-agentmux-{jail,run}/{config,data}
	chown -R "$user" "$work"/x-user-*
	as=(setpriv --reuid="$user" --regid="$(id -g "$user")" --init-groups)
	run user-agentmux-jail "$work/bin/amx-jail-bench true" "${as[@]}"
	run user-agentmux-run "$work/bin/agentmux run -- true" "${as[@]}"
	names+=(user-agentmux-jail user-agentmux-run)
fi
for n in "${names[@]}"; do ratio "$n"; done
