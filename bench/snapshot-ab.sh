#!/bin/sh
# `agentmux snapshot` of two builds (another, e.g. main's, and this one) and
# `git stash create`, taken in turn on one repository like the anchor's
# (NFILES files of 2..18 KiB base64 text; before each timed command NMOD
# tracked files get a fresh first line and NNEW untracked ~10 KiB files are
# rewritten: ~700 new blobs each time). Interleaved, so that a machine
# loaded by other work weighs on all three alike; each build has its own
# data dir (its own snapshot repository), and the background pack that
# follows a snapshot is waited for, untimed. Prints the medians and the
# ratios: each build against stash create, this build against the other.
# Usage: bench/snapshot-ab.sh OTHER_AGENTMUX [AGENTMUX]   (RUNS NFILES NMOD NNEW)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
other=${1:?usage: bench/snapshot-ab.sh OTHER_AGENTMUX [AGENTMUX]}
this=${2:-$root/build/src/agentmux}
runs=${RUNS:-10} nfiles=${NFILES:-10000} nmod=${NMOD:-500} nnew=${NNEW:-200}
for b in "$other" "$this"; do
	[ -x "$b" ] || { echo "bench/snapshot-ab.sh: no agentmux at $b; build first" >&2; exit 1; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/amx-bench-ab.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" && cp "$other" "$tmp/bin/other"
cp "$this" "$tmp/bin/this"
repo=$tmp/repo
mkdir -p "$repo"
python3 - "$repo" "$nfiles" <<'PY'
import base64, os, random, sys
repo, n = sys.argv[1], int(sys.argv[2])
rnd = random.Random(1234)
mean = 100 * 1048576 // n
for i in range(n):
    d = os.path.join(repo, "src", "d%03d" % (i % max(1, n // 100)))
    os.makedirs(d, exist_ok=True)
    size = max(64, int(mean * rnd.uniform(0.2, 1.8)))
    with open(os.path.join(d, "f%05d.txt" % i), "wb") as f:
        f.write(base64.encodebytes(rnd.randbytes(size * 3 // 4))[:size])
PY
cat >"$tmp/mutate.py" <<'PY'
import base64, os, sys
repo, n, nmod, nnew = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
tag, step = os.urandom(8).hex(), max(1, n // max(1, nmod))
for k in range(nmod):
    i = (k * step) % n
    p = os.path.join(repo, "src", "d%03d" % (i % max(1, n // 100)), "f%05d.txt" % i)
    data = open(p, "rb").read()
    nl = data.find(b"\n")
    head = ("mod %s %d " % (tag, k)).encode().ljust(76, b"x")
    open(p, "wb").write(head + (data[nl:] if nl >= 0 else b"\n"))
os.makedirs(os.path.join(repo, "untracked"), exist_ok=True)
for k in range(nnew):
    open(os.path.join(repo, "untracked", "n%04d.txt" % k), "wb").write(
        base64.encodebytes(os.urandom(7680)))
PY
cd "$repo"
git init -q -b main && git config user.name ab && git config user.email ab@localhost
git config gc.auto 0 && git add -A && git commit -q -m base && git gc -q
mutate() { python3 "$tmp/mutate.py" "$repo" "$nfiles" "$nmod" "$nnew"; }
amx() {
	XDG_DATA_HOME=$tmp/$1/data XDG_CONFIG_HOME=$tmp/$1/config \
	    XDG_RUNTIME_DIR=$tmp/$1/run "$tmp/bin/$1" snapshot -C . -m bench >/dev/null
}
settle() {
	for lock in "$tmp"/*/data/agentmux/shadow/*/agentmux-keep.lock; do
		[ -e "$lock" ] && timeout 300 flock "$lock" true
	done
	return 0
}
ms() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f\n", (b - a) * 1000 }'; }
for n in other this; do
	mkdir -p "$tmp/$n/data" "$tmp/$n/config"
	mkdir -m 700 "$tmp/$n/run"
	mutate && amx $n && settle        # the first snapshot, untimed
done
for i in $(seq "$runs"); do
	for c in stash other this; do
		mutate && sync && settle
		t0=$(date +%s.%N)
		if [ $c = stash ]; then git stash create >/dev/null; else amx $c; fi
		t1=$(date +%s.%N)
		ms "$t0" "$t1" >>"$tmp/$c.ms"
	done
done
median() { sort -n "$tmp/$1.ms" | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
s=$(median stash) o=$(median other) t=$(median this)
echo "RESULT snap-ab.stash-create median=$s runs=$runs unit=ms"
echo "RESULT snap-ab.other median=$o runs=$runs unit=ms"
echo "RESULT snap-ab.this median=$t runs=$runs unit=ms"
awk -v s="$s" -v o="$o" -v t="$t" 'BEGIN {
	printf "RESULT snap-ab.other-vs-stash-create median=%.2f unit=x\n", o / s
	printf "RESULT snap-ab.this-vs-stash-create median=%.2f unit=x note=goal<=1.2\n", t / s
	printf "RESULT snap-ab.this-vs-other median=%.2f unit=x\n", t / o }'
