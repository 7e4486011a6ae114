#!/bin/sh
# What keeping the user's git history out of the jail's reach costs: the
# same commands with [jail] history = on (the default) and off, interleaved,
# in one run. Figures: `agentmux run -- true` in a repository with 300
# commits, 40 branches, 20 tags and their reflogs; 100 `git commit`s in one
# jailed session (timed inside the jail), and what the session's end adds
# after them (bringing their objects back). Ratios on/off.
# Usage: bench/history.sh [AGENTMUX]   (RUNS, default 21; COMMITS, default 100)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
amx=${1:-$root/build/src/agentmux}
runs=${RUNS:-21}
commits=${COMMITS:-100}
[ -x "$amx" ] || { echo "bench/history.sh: no agentmux at $amx; build first" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/amx-bench-hist.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export XDG_DATA_HOME="$tmp/data" XDG_CONFIG_HOME="$tmp/config" XDG_RUNTIME_DIR="$tmp/run"
mkdir -p "$XDG_DATA_HOME" "$XDG_CONFIG_HOME/agentmux" "$XDG_RUNTIME_DIR"
chmod 700 "$XDG_RUNTIME_DIR"
cp "$amx" "$tmp/agentmux"
# (the whole program the front runs, where there is one beside it)
[ ! -e "$(dirname "$amx")/agentmux-full" ] || cp "$(dirname "$amx")/agentmux-full" "$tmp/agentmux-full"
amx=$tmp/agentmux

# The repository: a history with branches, tags and reflogs to keep.
p=$tmp/repo
mkdir -p "$p"
(cd "$p" && git init -q -b main . && git config user.email b@b &&
    git config user.name b && i=0 && while [ $i -lt 300 ]; do
	echo "$i" >"f$((i % 50))" && git add -A && git commit -qm "c$i" &&
	[ $((i % 7)) = 0 ] && [ $i -lt 280 ] && git branch "b$i"
	[ $((i % 15)) = 0 ] && git tag "t$i"
	i=$((i + 1))
    done && git gc -q) >/dev/null 2>&1
echo "bench/history.sh: $(git -C "$p" for-each-ref | wc -l) refs," \
    "$(git -C "$p" rev-list --all | wc -l) commits, $runs runs" >&2

setting() {
	printf '[jail]\nhistory = %s\n' "$1" >"$XDG_CONFIG_HOME/agentmux/config"
}

# Wall time of one command in ms.
ms() {
	a=$(date +%s%N)
	"$@" >/dev/null 2>&1 </dev/null
	b=$(date +%s%N)
	echo $(((b - a) / 1000000))
}

median() {
	sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan";
	    else if (NR % 2) print v[(NR + 1) / 2];
	    else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

stats() {
	sort -n "$1" | awk -v id="$2" -v u="$3" '{ v[NR] = $1 } END {
	    m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
	    printf "RESULT %s median=%s min=%s max=%s runs=%d unit=%s\n", id, m,
	    v[1], v[NR], NR, u }'
}

# `agentmux run -- true`, on and off by turns.
i=0
: >"$tmp/true.on"
: >"$tmp/true.off"
while [ $i -lt "$runs" ]; do
	for s in on off; do
		setting $s
		ms "$amx" run -C "$p" -- true >>"$tmp/true.$s"
	done
	i=$((i + 1))
done
stats "$tmp/true.on" history.run-true.on ms
stats "$tmp/true.off" history.run-true.off ms

# COMMITS commits in one session: the time inside the jail, and the whole run.
commit_loop="a=\$(date +%s%N); i=0; while [ \$i -lt $commits ]; do
	echo \$i >>loop; git add loop; git commit -qm l\$i; i=\$((i + 1)); done;
	b=\$(date +%s%N); echo INSIDE \$(((b - a) / 1000000))"
n=$((runs / 4 + 3))
i=0
: >"$tmp/commit.on"
: >"$tmp/commit.off"
: >"$tmp/whole.on"
: >"$tmp/whole.off"
while [ $i -lt $n ]; do
	for s in on off; do
		setting $s
		a=$(date +%s%N)
		out=$("$amx" run -C "$p" -- sh -c "$commit_loop" </dev/null 2>&1)
		b=$(date +%s%N)
		echo "$out" | sed -n 's/^INSIDE //p' >>"$tmp/commit.$s"
		echo $(((b - a) / 1000000)) >>"$tmp/whole.$s"
	done
	i=$((i + 1))
done
stats "$tmp/commit.on" history.commits-in-jail.on ms
stats "$tmp/commit.off" history.commits-in-jail.off ms
stats "$tmp/whole.on" history.commits-session.on ms
stats "$tmp/whole.off" history.commits-session.off ms

ratio() {
	on=$(median <"$tmp/$1.on")
	off=$(median <"$tmp/$1.off")
	awk -v a="$on" -v b="$off" -v id="$2" 'BEGIN { printf "RESULT %s " \
	    "median=%.2f min=- max=- runs=derived unit=x\n", id, a / b }'
}
ratio true history.run-true.on-vs-off
ratio commit history.commits-in-jail.on-vs-off
ratio whole history.commits-session.on-vs-off
git -C "$p" fsck --no-dangling >/dev/null 2>&1 ||
    echo "bench/history.sh: the repository is broken after the runs" >&2
