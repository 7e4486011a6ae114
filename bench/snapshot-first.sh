#!/bin/sh
# The first snapshot of a project (no earlier snapshot, so no stat cache:
# every file is hashed and stored in agentmux's own repository), side by
# side with what git itself does from a fresh index, in one run:
#   git-add-fresh-index   GIT_INDEX_FILE=new git add -A in the project
#                         (hashes every file; its objects are mostly in the
#                         project's pack already, so little is written)
#   git-add-fresh-repo    git add -A into a fresh index and a fresh object
#                         store (hashes and writes every file: the same work)
#   agentmux              agentmux snapshot with an empty data dir
# on a 10,000-file, ~100 MiB repository like the anchor's (a packed commit
# plus 200 untracked files). Goal: agentmux <= 1.2x git add -A into a
# fresh index. OTHER=another agentmux (e.g. main's build) adds it as
# agentmux-other, in the same run.
# FRESH_REPO=0 leaves git-add-fresh-repo out (under load it alone can take
# minutes a run).
# Usage: bench/snapshot-first.sh [AGENTMUX]   (RUNS, NFILES, TOTAL_MIB, OTHER, FRESH_REPO)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
amx=${1:-$root/build/src/agentmux}
[ -x "$amx" ] || { echo "bench/snapshot-first.sh: no agentmux at $amx; build first" >&2; exit 1; }
command -v hyperfine >/dev/null || { echo "bench/snapshot-first.sh: needs hyperfine" >&2; exit 1; }
amx=$(cd "$(dirname "$amx")" && pwd)/$(basename "$amx")
runs=${RUNS:-5}
nfiles=${NFILES:-10000}
mib=${TOTAL_MIB:-100}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/amx-bench-first.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cp "$amx" "$tmp/agentmux"
# (the whole program the front runs, where there is one beside it)
[ ! -e "$(dirname "$amx")/agentmux-full" ] || cp "$(dirname "$amx")/agentmux-full" "$tmp/agentmux-full"
amx=$tmp/agentmux
repo=$tmp/repo
export XDG_CONFIG_HOME="$tmp/config" XDG_RUNTIME_DIR="$tmp/run"
mkdir -p "$repo" "$XDG_CONFIG_HOME" "$XDG_RUNTIME_DIR"
chmod 700 "$XDG_RUNTIME_DIR"

# Before each agentmux run: the last run's background pack (a git working
# in the data dir, which outlives agentmux) is waited for, so that no run
# pays for the one before it; then the data dir goes.
cat >"$tmp/fresh-data" <<EOF
#!/bin/sh
while for p in /proc/[0-9]*; do readlink \$p/cwd; done 2>/dev/null |
    grep -q "^$tmp/data"; do sleep 0.2; done
rm -rf "$tmp/data"
EOF
chmod +x "$tmp/fresh-data"
set --
if [ -n "${OTHER:-}" ]; then
	cp "$OTHER" "$tmp/agentmux-other"
	set -- -n agentmux-other --prepare "$tmp/fresh-data" \
	    "env XDG_DATA_HOME=$tmp/data $tmp/agentmux-other snapshot -C $repo"
fi

# Text files of base64 lines, 2..18 KiB (mean ~ TOTAL_MIB / NFILES), in 100 dirs.
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

if [ "${FRESH_REPO:-1}" != 0 ]; then
	set -- -n git-add-fresh-repo --prepare "sh -c 'rm -rf $tmp/fresh.git && git init -q --bare $tmp/fresh.git'" \
	    "env GIT_DIR=$tmp/fresh.git GIT_WORK_TREE=$repo GIT_INDEX_FILE=$tmp/fresh.git/index git add -A" "$@"
fi

cd "$repo"
hyperfine -N --style none --warmup 1 --runs "$runs" \
    --export-json "$tmp/h.json" \
    -n git-add-fresh-index --prepare "rm -f $tmp/fresh.idx" \
    "env GIT_INDEX_FILE=$tmp/fresh.idx git add -A" \
    -n agentmux --prepare "$tmp/fresh-data" \
    "env XDG_DATA_HOME=$tmp/data $amx snapshot -C $repo" "$@" >/dev/null
python3 - "$tmp/h.json" <<'EOF'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
for name, x in r.items():
    t = sorted(x["times"])
    print("RESULT snap-first.%s median=%.1f min=%.1f max=%.1f runs=%d unit=ms"
          % (name, x["median"] * 1000, t[0] * 1000, t[-1] * 1000, len(t)))
a = r["agentmux"]["median"]
for base in ("git-add-fresh-index", "git-add-fresh-repo", "agentmux-other"):
    if base not in r:
        continue
    print("RESULT snap-first.agentmux-vs-%s median=%.2f runs=derived unit=x%s"
          % (base, a / r[base]["median"], " note=goal<=1.2" if base ==
             "git-add-fresh-index" else ""))
EOF

# Disk use: the own repository's objects once the background pack is over.
disk() {
	"$tmp/fresh-data"
	env XDG_DATA_HOME="$tmp/data" "$2" snapshot -C "$repo" >/dev/null
	sleep 1
	while for p in /proc/[0-9]*; do readlink "$p/cwd"; done 2>/dev/null |
	    grep -q "^$tmp/data"; do sleep 0.2; done
	echo "RESULT snap-first.$1-disk-after-pack" \
	    "size=$(du -sk "$tmp"/data/agentmux/shadow/*/objects | cut -f1)" \
	    "unit=KiB"
}
disk agentmux "$amx"
[ -z "${OTHER:-}" ] || disk agentmux-other "$tmp/agentmux-other"
