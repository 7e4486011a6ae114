#!/bin/sh
# `agentmux run -- true` of two builds (this one and another, e.g. main's)
# side by side in one hyperfine run, with bwrap as the floor, in an empty
# project as ../shared/acceptance/jail-speed.sh uses: each build with data
# and config dirs of its own (so each has its own snapshot repository,
# whose first snapshot is taken in the warm-up). Prints each median, each
# build against bwrap, and this build against the other.
# Usage: bench/run-vs-main.sh OTHER_AGENTMUX [AGENTMUX]   (RUNS)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
other=${1:?usage: bench/run-vs-main.sh OTHER_AGENTMUX [AGENTMUX]}
this=${2:-$root/build/src/agentmux}
runs=${RUNS:-30}
for b in "$other" "$this"; do
	[ -x "$b" ] || { echo "bench/run-vs-main.sh: no agentmux at $b; build first" >&2; exit 1; }
done
for c in hyperfine bwrap; do
	command -v $c >/dev/null || { echo "bench/run-vs-main.sh: needs $c" >&2; exit 1; }
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/amx-bench-run.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
other=$(cd "$(dirname "$other")" && pwd)/$(basename "$other")
this=$(cd "$(dirname "$this")" && pwd)/$(basename "$this")
proj=$tmp/proj
mkdir -p "$proj"
for n in other this; do
	mkdir -p "$tmp/$n/config" "$tmp/$n/data"
	mkdir -m 700 "$tmp/$n/run"
done
env_of() {
	echo "env XDG_CONFIG_HOME=$tmp/$1/config XDG_DATA_HOME=$tmp/$1/data" \
	    "XDG_STATE_HOME=$tmp/$1/state XDG_CACHE_HOME=$tmp/$1/cache" \
	    "XDG_RUNTIME_DIR=$tmp/$1/run"
}
bw="bwrap --unshare-all --die-with-parent --ro-bind /usr /usr --symlink usr/lib /lib --symlink usr/lib64 /lib64 --symlink usr/bin /bin --proc /proc --dev /dev --tmpfs /tmp --bind $proj $proj true"

cd "$proj"
hyperfine -N --style none --warmup 3 --runs "$runs" \
    --export-json "$tmp/h.json" \
    -n bwrap "$bw" \
    -n other "$(env_of other) $other run -- true" \
    -n this "$(env_of this) $this run -- true" >/dev/null
python3 - "$tmp/h.json" <<'EOF'
import json, statistics, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
for name, x in r.items():
    t = sorted(x["times"])
    print("RESULT run-true.%s median=%.1f mean=%.1f stddev=%.1f user=%.1f "
          "system=%.1f runs=%d unit=ms" % (name, x["median"] * 1000,
          x["mean"] * 1000, statistics.stdev(t) * 1000, x["user"] * 1000,
          x["system"] * 1000, len(t)))
for name in ("other", "this"):
    print("RESULT run-true.%s-vs-bwrap median=%.2f unit=x" %
          (name, r[name]["median"] / r["bwrap"]["median"]))
print("RESULT run-true.this-vs-other median=%.2f unit=x" %
      (r["this"]["median"] / r["other"]["median"]))
EOF
