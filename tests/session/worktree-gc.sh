#!/usr/bin/env bash
# gc and the worktrees of ended sessions (issue 18): a merged one goes with
# its branch, an unmerged one stays (and its record with it) and gc says
# why, until --force; --dry-run only says; nothing of another session's.
# Real git, real jails.
set -u
AMX=${AGENTMUX:?AGENTMUX must name the binary}
command -v git >/dev/null || { echo "SKIP: git is missing"; exit 77; }

T=$(mktemp -d /tmp/amx-wtgc.XXXXXX)
chmod 755 "$T"
export XDG_CONFIG_HOME=$T/config XDG_DATA_HOME=$T/data XDG_RUNTIME_DIR=$T/run XDG_STATE_HOME=$T/state
mkdir -p "$XDG_CONFIG_HOME/agentmux" "$XDG_DATA_HOME" "$XDG_RUNTIME_DIR"
chmod 700 "$XDG_RUNTIME_DIR"
trap 'rm -rf "$T"' EXIT
trap 'exit 1' INT TERM
fails=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

P=$T/p
mkdir -p "$P"
(cd "$P" && git init -q -b main . && git config user.email t@x && git config user.name t &&
	echo base >f && git add f && git commit -qm init) || exit 1
cd "$P" || exit 1

wtrun() { "$AMX" run --worktree --branch "$1" -- sh -c "$2" </dev/null >"$T/$1.out" 2>&1 || bad "session $1 failed: $(cat "$T/$1.out")"; }
sid() { "$AMX" sessions --json | python3 -c 'import json,sys; print([s["id"] for s in json.load(sys.stdin) if "/'"$1"', " in (s.get("worktree") or "")][0])'; }
wtdir() { git worktree list --porcelain | sed -n 's/^worktree //p' | grep -v "^$P\$" | while read -r w; do
	[ "$(git -C "$w" rev-parse --abbrev-ref HEAD)" = "agentmux/$1/$2" ] && echo "$w"; done; }

wtrun keep 'echo k >k && git add k && git commit -qm k'
wtrun done 'echo d >d && git add d && git commit -qm d'
wtrun none true
idk=$(sid keep); idd=$(sid done); idn=$(sid none)
"$AMX" merge "$idd" >/dev/null 2>&1 || bad "merge of session $idd failed"
wk=$(wtdir "$idk" keep); wd=$(wtdir "$idd" done); wn=$(wtdir "$idn" none)
{ [ -d "$wk" ] && [ -d "$wd" ] && [ -d "$wn" ]; } || bad "the worktrees are not there: '$wk' '$wd' '$wn'"

out=$("$AMX" gc --older-than 0s --dry-run 2>&1) || bad "gc --dry-run failed: $out"
{ grep -q "would remove the worktree $wd and branch agentmux/$idd/done of session $idd (merged)" <<<"$out" &&
	grep -q "kept the worktree $wk of session $idk: its branch agentmux/$idk/keep is not merged" <<<"$out" &&
	! grep -q "would remove session $idk\$" <<<"$out" && [ -d "$wd" ] && [ -d "$wn" ]; } &&
	ok "gc --dry-run says what it would remove and keep, and removes nothing" ||
	bad "gc --dry-run: $out"

out=$("$AMX" gc --older-than 0s 2>&1) || bad "gc failed: $out"
{ grep -q "removed the worktree $wd and branch agentmux/$idd/done of session $idd (merged)" <<<"$out" &&
	grep -q "removed the worktree $wn and branch agentmux/$idn/none of session $idn (merged)" <<<"$out" &&
	grep -q "^removed 2 sessions" <<<"$out" && [ ! -e "$wd" ] && [ ! -e "$wn" ] &&
	! git rev-parse -q --verify "agentmux/$idd/done" >/dev/null &&
	! git worktree list | grep -q "$wd"; } &&
	ok "gc removes merged worktrees of ended sessions with their branches, and says so" ||
	bad "gc of merged worktrees: $out; $(git worktree list)"
{ grep -q "kept the worktree $wk of session $idk: its branch agentmux/$idk/keep is not merged; merge or discard it, or gc --force" <<<"$out" &&
	[ -f "$wk/k" ] && git rev-parse -q --verify "agentmux/$idk/keep" >/dev/null &&
	"$AMX" sessions | grep -q "agentmux/$idk/keep, unmerged"; } &&
	ok "gc keeps an unmerged worktree, its branch and its session, and says why" ||
	bad "gc and the unmerged worktree: $out; $("$AMX" sessions)"

out=$("$AMX" gc --older-than 0s --force 2>&1) || bad "gc --force failed: $out"
{ grep -q "removed the worktree $wk and branch agentmux/$idk/keep of session $idk (NOT merged: --force)" <<<"$out" &&
	[ ! -e "$wk" ] && ! git rev-parse -q --verify "agentmux/$idk/keep" >/dev/null &&
	[ "$(git worktree list | wc -l)" = 1 ] && [ -z "$(ls -A "$XDG_DATA_HOME/agentmux/worktrees")" ]; } &&
	ok "gc --force removes the unmerged worktree too" ||
	bad "gc --force: $out; $(git worktree list); $(ls -A "$XDG_DATA_HOME/agentmux/worktrees")"
[ "$(git rev-parse main)" = "$(git rev-parse HEAD)" ] && [ -f d ] && [ "$(cat f)" = base ] ||
	bad "gc touched the main tree"

# A discarded worktree session's snapshot refs go with its record: the
# own repository's config named the removed worktree, and git refused
# every command there ("Invalid path").
wtrun gone 'echo g >g'
idg=$(sid gone)
"$AMX" discard "$idg" --yes >/dev/null 2>&1 || bad "discard of session $idg failed"
out=$("$AMX" gc --older-than 0s 2>&1) || bad "gc failed: $out"
refs=$(for g in "$XDG_DATA_HOME"/agentmux/shadow/*/; do
	GIT_DIR=$g GIT_WORK_TREE=/ git for-each-ref --format='%(refname)' "refs/agentmux/snaps/$idg/" "refs/agentmux/sessions/$idg"; done 2>&1)
{ ! grep -q "cannot delete the snapshot refs" <<<"$out" && grep -q "^removed 1 session" <<<"$out" && [ -z "$refs" ]; } &&
	ok "gc deletes a discarded worktree session's snapshot refs" ||
	bad "gc and a discarded worktree session's refs: $out; refs left: $refs"

# A worktree dir whose record was never written (its start failed): said,
# and removed only with --force; a link named like one is not followed.
W=$XDG_DATA_HOME/agentmux/worktrees
mkdir -p "$W/wt-orphan/repo" "$T/outside"
echo o >"$W/wt-orphan/repo/f"
echo keep >"$T/outside/f"
ln -s "$T/outside" "$W/wt-link"
touch -h -d '2 hours ago' "$W/wt-orphan" "$W/wt-link"
out=$("$AMX" gc --older-than 1h 2>&1) || bad "gc failed: $out"
{ grep -q "kept the worktree dir $W/wt-orphan: it has no session record (its session's start failed); gc --force removes it" <<<"$out" &&
	[ -f "$W/wt-orphan/repo/f" ] && ! grep -q wt-link <<<"$out"; } &&
	ok "gc says of a worktree dir with no record and keeps it" || bad "gc and a dir with no record: $out"
out=$("$AMX" gc --older-than 1h --force --dry-run 2>&1) || bad "gc --dry-run failed: $out"
{ grep -q "would remove the worktree dir $W/wt-orphan (no session record)" <<<"$out" && [ -f "$W/wt-orphan/repo/f" ]; } &&
	ok "gc --force --dry-run only says it would remove it" || bad "gc --force --dry-run and a dir with no record: $out"
out=$("$AMX" gc --older-than 1h --force 2>&1) || bad "gc --force failed: $out"
{ grep -q "removed the worktree dir $W/wt-orphan (no session record)" <<<"$out" && [ ! -e "$W/wt-orphan" ] &&
	[ -L "$W/wt-link" ] && [ "$(cat "$T/outside/f")" = keep ]; } &&
	ok "gc --force removes a worktree dir with no record, and no link named like one" ||
	bad "gc --force and a dir with no record: $out; $(ls -la "$W")"

# The tree lock a plain session's start takes stays behind, one per
# project: gc removes it once nobody holds it, and keeps a held one.
"$AMX" run -- true </dev/null >"$T/plain.out" 2>&1 || bad "a plain session failed: $(cat "$T/plain.out")"
L=$(ls "$XDG_DATA_HOME"/agentmux/trees/*.lock 2>/dev/null)
[ -f "$L" ] || bad "no tree lock file after a plain session: '$L'"
mkfifo "$T/release"
(flock 9 && touch "$T/held" && read -r _ <"$T/release") 9>>"$L" &
holder=$!
for _ in $(seq 600); do [ -e "$T/held" ] && break; sleep 0.1; done
out=$("$AMX" gc --older-than 1h 2>&1) || bad "gc failed: $out"
{ [ -f "$L" ] && ! grep -q "tree lock" <<<"$out"; } && ok "gc keeps a tree lock file someone holds" ||
	bad "gc and a held tree lock: $out"
echo go >"$T/release"
wait "$holder"
out=$("$AMX" gc --older-than 1h --dry-run 2>&1) || bad "gc --dry-run failed: $out"
{ [ -f "$L" ] && grep -q "would remove 1 tree lock file" <<<"$out"; } && ok "gc --dry-run says it would remove a free tree lock" ||
	bad "gc --dry-run and a free tree lock: $out"
out=$("$AMX" gc --older-than 1h 2>&1) || bad "gc failed: $out"
{ [ ! -e "$L" ] && grep -q "removed 1 tree lock file" <<<"$out"; } && ok "gc removes a tree lock file nobody holds" ||
	bad "gc and a free tree lock: $out; $(ls -la "$XDG_DATA_HOME/agentmux/trees")"
"$AMX" run -- true </dev/null >"$T/plain.out" 2>&1 && [ -f "$L" ] &&
	ok "a start after gc makes the lock again" || bad "a start after gc: $(cat "$T/plain.out")"

# A start that waited for the lock while gc removed the file locks the
# file made anew, as any later start does, not the removed one.
rm -f "$T/held"
(flock 9 && touch "$T/held" && read -r _ <"$T/release") 9>>"$L" &
holder=$!
for _ in $(seq 600); do [ -e "$T/held" ] && break; sleep 0.1; done
ino=$(stat -c %i "$L")
"$AMX" run -- true </dev/null >"$T/plain.out" 2>&1 &
starter=$!
for _ in $(seq 600); do grep -q -- "-> FLOCK .*:$ino " /proc/locks && break; sleep 0.1; done
grep -q -- "-> FLOCK .*:$ino " /proc/locks || bad "the start never waited for the tree lock"
rm -f "$L"
echo go >"$T/release"
wait "$holder"
wait "$starter" || bad "the start failed: $(cat "$T/plain.out")"
[ -f "$L" ] && ok "a start whose lock file gc removed while it waited locks a new one" ||
	bad "the start locked the removed lock file: $(ls -la "$XDG_DATA_HOME/agentmux/trees")"

[ $fails -eq 0 ] && echo "all worktree gc checks passed"
exit $((fails > 0))
