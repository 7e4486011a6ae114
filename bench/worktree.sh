#!/bin/sh
# Starting a worktree session, side by side with git's own worktree in one
# run, on a 10,000-file, ~100 MiB repository like the snapshot anchor's
# (../shared/bench-anchors/snapshot-bench.sh: a packed commit plus 200
# untracked files):
#   git-worktree-add   git worktree add -b NAME DIR HEAD
#   agentmux           agentmux run --worktree -- true (the linked worktree
#                      under the data dir on its own branch, the start
#                      snapshot, the jail, the command, the end snapshot)
#   agentmux-start     the same, to its command's start alone (the command
#                      prints the clock; RUNS more runs after hyperfine's,
#                      each paired with a git worktree add timed just before
#                      it: git-worktree-add-paired, the start's ratio's base)
# Each run makes a new worktree and branch; none is removed until the end
# (KEEP_TREES=0 removes each run's before the next, as before 2026-12-05).
# Why: on ext4 without a journal (this machine's root) the inode allocator
# skips every inode freed in the last 5 minutes (ext4's recently_deleted),
# so a checkout right after removing a 10,000-file tree took 0.8 to 9.6 s
# for the same command, by what the last run freed where. Untimed, before
# each run, only agentmux's background pack of its data dir is waited for.
# Goal: agentmux <= 1.3x git worktree add.
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

# Untimed, before each run: agentmux's background pack of its data dir, if
# any, is waited for, then what the last run wrote is written out (sync):
# each command's checkout starts with no other's 100 MiB still going to
# the disk (the paired runs alternate git, agentmux, git, ...: without it,
# a checkout could share the disk with the writeback of the one before).
# With KEEP_TREES=0 the last run's worktrees and branches go too. At the
# end (the trap), all of them go.
keep_trees=${KEEP_TREES:-1}
cat >"$tmp/wait" <<EOF
#!/bin/sh
while for p in /proc/[0-9]*; do readlink \$p/cwd; done 2>/dev/null |
    grep -q "^$tmp/data"; do sleep 0.2; done
sync
EOF
cat >"$tmp/clean" <<EOF
#!/bin/sh
"$tmp/wait"
rm -rf "$tmp"/gitwt* "$tmp/data/agentmux/worktrees"
git -C "$repo" worktree prune
git -C "$repo" for-each-ref --format='%(refname:short)' refs/heads/agentmux refs/heads/bench |
    xargs -r git -C "$repo" branch -q -D
EOF
# git's side: a new worktree and branch each run, named by a counter (the
# sh that counts it is a few ms on git's side).
cat >"$tmp/git-add" <<EOF
#!/bin/sh
n=\$(cat "$tmp/n" 2>/dev/null || echo 0); n=\$((n + 1)); echo \$n >"$tmp/n"
exec git worktree add -q -b bench/wt\$n "$tmp/gitwt\$n" HEAD
EOF
chmod +x "$tmp/wait" "$tmp/clean" "$tmp/git-add"
[ "$keep_trees" = 0 ] && prep=$tmp/clean || prep=$tmp/wait
# One session first: the snapshot store of the project exists, as it would
# for anyone who has used agentmux there before.
(cd "$repo" && "$amx" run --worktree -- true </dev/null >"$tmp/first.out" 2>&1) ||
    { echo "bench/worktree.sh: agentmux run --worktree failed: $(cat "$tmp/first.out")" >&2; exit 1; }

cd "$repo"
hyperfine -N --style none --warmup 1 --runs "$runs" \
    --export-json "$tmp/h.json" \
    -n git-worktree-add --prepare "$prep" "$tmp/git-add" \
    -n agentmux --prepare "$prep" \
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
# The start alone (the run above is start and end): from agentmux's
# launch to its command's first instruction (the command writes the
# clock), RUNS times, each paired with a git worktree add timed right
# before it, after the same untimed wait: the file system's state (see
# above) moves both alike, and the ratio is of the two medians.
python3 - "$amx" "$prep" "$runs" "$tmp/git-add" <<'EOF'
import statistics, subprocess, sys, time
amx, prep, runs, gitadd = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
starts, gits = [], []
for _ in range(runs):
    subprocess.run([prep], check=True)
    t0 = time.time()
    subprocess.run([gitadd], check=True)
    gits.append(time.time() - t0)
    subprocess.run([prep], check=True)
    t0 = time.time()
    out = subprocess.run([amx, "run", "--worktree", "--", "date", "+%s.%N"],
                         stdin=subprocess.DEVNULL, capture_output=True,
                         text=True, check=True).stdout
    starts.append(float(out.split()[-1]) - t0)
m, g = statistics.median(starts), statistics.median(gits)
print("RESULT worktree.git-worktree-add-paired median=%.1f min=%.1f max=%.1f "
      "runs=%d unit=ms" % (g * 1000, min(gits) * 1000, max(gits) * 1000, runs))
print("RESULT worktree.agentmux-start median=%.1f min=%.1f max=%.1f runs=%d "
      "unit=ms" % (m * 1000, min(starts) * 1000, max(starts) * 1000, runs))
print("RESULT worktree.agentmux-start-vs-git-worktree-add median=%.2f "
      "runs=derived unit=x note=goal<=1.3" % (m / g))
EOF
