#!/usr/bin/env bash
# "last" follows where you stand: inside a project (a nested dir, or through a symlink) it is that project's
# last session, outside every project the last of all; each command says on stderr which session it chose,
# its project quoted even when named with an escape sequence.
set -u
AMX=${AGENTMUX:?AGENTMUX must name the binary}
command -v git >/dev/null || { echo "SKIP: git is missing"; exit 77; }

T=$(mktemp -d /tmp/amx-last.XXXXXX)
chmod 755 "$T"
export XDG_CONFIG_HOME=$T/config XDG_DATA_HOME=$T/data XDG_RUNTIME_DIR=$T/run
mkdir -p "$XDG_CONFIG_HOME/agentmux" "$XDG_DATA_HOME" "$XDG_RUNTIME_DIR" "$T/out"
chmod 700 "$XDG_RUNTIME_DIR"
trap 'rm -rf "$T"' EXIT
fails=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }

A=$T/a
B=$T/a-b$(printf '\033')[31m
for p in "$A" "$B"; do
	mkdir -p "$p/sub/deeper"
	(cd "$p" && git init -q . && git config user.email t@x && git config user.name t &&
		echo base >f && git add f && git commit -qm init) || exit 1
done
ln -s "$A" "$T/link-to-a"

"$AMX" run -C "$A" -- sh -c 'echo from-a >f' </dev/null >/dev/null 2>&1 || bad "the session in a failed"
"$AMX" run -C "$B" -- sh -c 'echo from-b >f' </dev/null >/dev/null 2>&1 || bad "the session in b failed"
ida=$("$AMX" sessions --json | python3 -c 'import json,sys; print([s["id"] for s in json.load(sys.stdin) if s["project"].endswith("/a")][0])')
idb=$("$AMX" sessions --json | python3 -c 'import json,sys; print([s["id"] for s in json.load(sys.stdin) if not s["project"].endswith("/a")][0])')

# In a's nested dir, and through a symlink to a: a's session, though b's is newer.
for dir in "$A/sub/deeper" "$T/link-to-a/sub"; do
	out=$(cd "$dir" && "$AMX" diff last 2>"$T/err")
	grep -q '^+from-a' <<<"$out" || bad "diff last in $dir did not show a's session: $out"
	grep -q "^agentmux: last is session $ida (shell in .*/a, started .*), the last in the project" "$T/err" ||
		bad "diff last in $dir did not say it chose a's session $ida: $(cat "$T/err")"
done
# A sibling whose name starts with a's: its own session, never a's.
out=$(cd "$B/sub" && "$AMX" diff last 2>"$T/err")
grep -q '^+from-b' <<<"$out" || bad "diff last in b did not show b's session: $out"
grep -q "last is session $idb " "$T/err" || bad "diff last in b did not say session $idb: $(cat -v "$T/err")"
grep -q $'\033' "$T/err" && bad "the chosen session's project went to stderr with a raw escape: $(cat -v "$T/err")"

# Outside every project: the last of all, and it says so.
(cd "$T/out" && "$AMX" show last >/dev/null 2>"$T/err") || bad "show last outside a project failed"
grep -q "last is session $idb .*the last of all" "$T/err" || bad "show last outside did not choose $idb: $(cat -v "$T/err")"

# A symlink in b to a (an agent in b can make one): "last" is refused, naming both, and a is left alone.
ln -s "$A" "$B/vendor"
(cd "$B/vendor" && "$AMX" undo last >/dev/null 2>"$T/err") && bad "undo last through b/vendor -> a did not refuse"
grep -q 'ambiguous here: .*/a-b.*/a.*name the session by its id' "$T/err" ||
	bad "undo last through b/vendor did not name both projects: $(cat -v "$T/err")"
[ "$(cat "$A/f")" = from-a ] || bad "undo last through b/vendor undid a's session"
rm "$B/vendor"

# undo last in a puts a back, leaves b alone.
(cd "$A" && "$AMX" undo last >/dev/null 2>"$T/err") || bad "undo last in a failed: $(cat "$T/err")"
[ "$(cat "$A/f")" = base ] || bad "undo last in a did not put a back"
[ "$(cat "$B/f")" = from-b ] || bad "undo last in a touched b"
grep -q "last is session $ida " "$T/err" || bad "undo last in a did not say session $ida: $(cat "$T/err")"

[ $fails = 0 ] || exit 1
echo "last: the project you are in, nested or through a symlink; the last of all elsewhere; each says which"
