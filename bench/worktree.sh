#!/bin/sh
# Starting a worktree session, side by side with git's own worktree in one
# run, on a 10,000-file, ~100 MiB repository like the snapshot anchor's
# (../shared/bench-anchors/snapshot-bench.sh: a packed commit plus 200
# untracked files):
#   git-worktree-add   git worktree add -b NAME DIR HEAD
#   agentmux           agentmux run --worktree -- true (the linked worktree
#                      under the data dir on its own branch, the start
#                      snapshot, the jail, the command, the end snapshot)
# Before each run (untimed) the previous worktree and its branch go, so
# each run makes a new one. Goal: agentmux <= 1.3x git worktree add.
# Usage: bench/worktree.sh [AGENTMUX]   (RUNS, NFILES, TOTAL_MIB)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
amx=${1:-$root/build/src/agentmux}
[ -x "$amx" ] || { echo "bench/worktree.sh: no agentmux at $amx; build first" >&2; exit 1; }
command -v hyperfine >/dev/null || { echo "bench/worktree.sh: needs hyperfine" >&2; exit 1; }
amx=$(cd "$(dirname "$amx")" && pwd)/$(basename "$amx")
runs=${RUNS:-7}
nfiles=${NFILES:-10000}
mib=${TOTAL_MIB:-100}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/amx-bench-wt.XXXXXX")
chmod 755 "$tmp"
# The last run's background pack of the data dir is waited for first
# (its clean, once written, waits for it): else rm finds its files coming.
trap '[ -x "$tmp/clean" ] && "$tmp/clean" >/dev/null 2>&1; rm -rf "$tmp"' EXIT
repo=$tmp/repo
export XDG_CONFIG_HOME="$tmp/config" XDG_RUNTIME_DIR="$tmp/run" XDG_DATA_HOME="$tmp/data"
mkdir -p "$repo" "$XDG_CONFIG_HOME" "$XDG_RUNTIME_DIR"
chmod 700 "$XDG_RUNTIME_DIR"

python3 - "$repo" "$nfiles" "$mib" <<'EOF'
import base64, os, random, sys
repo, n, total = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]) * 1048576
rnd = random.Random(1234)
mean = total // n
for i in range(n):
    d = os.path.join(repo, "src", "d%03d" % (i % max(1, n // 100)))
    os.makedirs(d, exist_ok=True)
    size = max(64, int(mean * rnd.uniform(0.2, 1.8)))
    with open(os.path.join(d, "f%05d.txt" % i), "wb") as f:
        f.write(base64.encodebytes(rnd.randbytes(size * 3 // 4))[:size])
u = os.path.join(repo, "untracked")
os.makedirs(u, exist_ok=True)
for k in range(200):
    with open(os.path.join(u, "n%04d.txt" % k), "wb") as f:
        f.write(base64.encodebytes(rnd.randbytes(7680)))
EOF
(cd "$repo" && git init -q -b main && git config user.name b &&
    git config user.email b@localhost && git config gc.auto 0 &&
    git add src && git commit -qm base && git gc -q)

# Untimed, before each run: the last run's worktrees and branches go (and
# agentmux's background pack of its data dir, if any, is waited for).
cat >"$tmp/clean" <<EOF
#!/bin/sh
while for p in /proc/[0-9]*; do readlink \$p/cwd; done 2>/dev/null |
    grep -q "^$tmp/data"; do sleep 0.2; done
rm -rf "$tmp/gitwt" "$tmp/data/agentmux/worktrees"
git -C "$repo" worktree prune
git -C "$repo" for-each-ref --format='%(refname:short)' refs/heads/agentmux refs/heads/bench |
    xargs -r git -C "$repo" branch -q -D
EOF
chmod +x "$tmp/clean"
# One session first: the snapshot store of the project exists, as it would
# for anyone who has used agentmux there before.
(cd "$repo" && "$amx" run --worktree -- true </dev/null >"$tmp/first.out" 2>&1) ||
    { echo "bench/worktree.sh: agentmux run --worktree failed: $(cat "$tmp/first.out")" >&2; exit 1; }

cd "$repo"
hyperfine -N --style none --warmup 1 --runs "$runs" \
    --export-json "$tmp/h.json" \
    -n git-worktree-add --prepare "$tmp/clean" \
    "git worktree add -q -b bench/wt $tmp/gitwt HEAD" \
    -n agentmux --prepare "$tmp/clean" \
    "$amx run --worktree -- true" >/dev/null
python3 - "$tmp/h.json" <<'EOF'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
for name, x in r.items():
    t = sorted(x["times"])
    print("RESULT worktree.%s median=%.1f min=%.1f max=%.1f runs=%d unit=ms"
          % (name, x["median"] * 1000, t[0] * 1000, t[-1] * 1000, len(t)))
print("RESULT worktree.agentmux-vs-git-worktree-add median=%.2f runs=derived "
      "unit=x note=goal<=1.3" % (r["agentmux"]["median"] /
                                 r["git-worktree-add"]["median"]))
EOF
