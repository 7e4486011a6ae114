#!/bin/sh
# The pack writer a project's first snapshot is to use (src/snap/snap-pack.c,
# through build*/bench/amx-pack-bench), alone, side by side in one run with
# what the first-snapshot goal is measured against:
#   git-add-fresh-index   GIT_INDEX_FILE=new git add -A in the project
#   pack-writer           every file (listed beforehand) read, hashed with
#                         OpenSSL SHA-1 and stored in one pack + .idx of a
#                         fresh repository with its trees, and the index
#                         with stat data written: the first snapshot's work
#                         without the walk (git ls-files -o, ~0.1 s here)
#                         and the commit
#   job-readers-N         the same by the job a session's start snapshot
#                         runs (its helper thread, with N threads reading
#                         and hashing the files ahead of it; 0: it reads
#                         them itself), for N in READERS (default "0 1")
# on the repository of bench/snapshot-first.sh (10,000 files, ~100 MiB).
# Usage: bench/pack.sh [AMX_PACK_BENCH]   (RUNS, NFILES, TOTAL_MIB)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$root/build/bench/amx-pack-bench}
[ -x "$bin" ] || { echo "bench/pack.sh: no amx-pack-bench at $bin; build first" >&2; exit 1; }
command -v hyperfine >/dev/null || { echo "bench/pack.sh: needs hyperfine" >&2; exit 1; }
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
runs=${RUNS:-5}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/amx-bench-pack.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
repo=$tmp/repo
mkdir -p "$repo"

# The files of bench/snapshot-first.sh (same generator, same seed).
python3 - "$repo" "${NFILES:-10000}" "${TOTAL_MIB:-100}" <<'PY'
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
PY
(cd "$repo" && git init -q -b main && git config user.name b &&
    git config user.email b@localhost && git config gc.auto 0 &&
    git add src && git commit -qm base && git gc -q)
(cd "$repo" && find src untracked -type f -print0) >"$tmp/list"

cd "$repo"
set --
for k in ${READERS-0 1}; do
    set -- "$@" -n "job-readers-$k" --prepare "sh -c 'rm -rf $tmp/own.git && git init -q --bare $tmp/own.git'" \
        "sh -c '$bin -r $k $tmp/own.git <$tmp/list'"
done
hyperfine -N --style none --warmup 1 --runs "$runs" \
    --export-json "$tmp/h.json" \
    -n git-add-fresh-index --prepare "rm -f $tmp/fresh.idx" \
    "env GIT_INDEX_FILE=$tmp/fresh.idx git add -A" \
    -n pack-writer --prepare "sh -c 'rm -rf $tmp/own.git && git init -q --bare $tmp/own.git'" \
    "sh -c '$bin $tmp/own.git <$tmp/list'" "$@" >/dev/null
git --git-dir="$tmp/own.git" verify-pack "$tmp"/own.git/objects/pack/*.idx
# The same tree as git's.
rm -f "$tmp/fresh.idx"
GIT_INDEX_FILE=$tmp/fresh.idx git add -A
want=$(GIT_INDEX_FILE=$tmp/fresh.idx git write-tree)
rm -rf "$tmp/own.git" && git init -q --bare "$tmp/own.git"
got=$("$bin" "$tmp/own.git" <"$tmp/list" | cut -d' ' -f1)
[ "$got" = "$want" ] || { echo "bench/pack.sh: tree $got, git's $want" >&2; exit 1; }
# The job gives that tree and one pack, byte for byte, whatever its readers.
for k in ${READERS-0 1}; do
    rm -rf "$tmp/own.git" && git init -q --bare "$tmp/own.git"
    got=$("$bin" -r "$k" "$tmp/own.git" <"$tmp/list" | cut -d: -f1)
    [ "$got" = "$want" ] || { echo "bench/pack.sh: job with $k readers: tree $got, git's $want" >&2; exit 1; }
    sum=$(cat "$tmp"/own.git/objects/pack/*.pack | sha1sum)
    [ "${first:=$sum}" = "$sum" ] || { echo "bench/pack.sh: job with $k readers: another pack" >&2; exit 1; }
done
python3 - "$tmp/h.json" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
for name, x in r.items():
    t = sorted(x["times"])
    print("RESULT pack.%s median=%.1f min=%.1f max=%.1f runs=%d unit=ms"
          % (name, x["median"] * 1000, t[0] * 1000, t[-1] * 1000, len(t)))
print("RESULT pack.pack-writer-vs-git-add-fresh-index median=%.2f "
      "runs=derived unit=x" % (r["pack-writer"]["median"] /
                               r["git-add-fresh-index"]["median"]))
PY
