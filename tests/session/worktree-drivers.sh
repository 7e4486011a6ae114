#!/usr/bin/env bash
# Host-side git runs nothing the project names (issue 18): merging a worktree
# session's branch into the user's tree runs no filter or merge driver (the project's
# .gitattributes picks it, the repository config defines it), no diff
# textconv, no external diff, no signing program and no hook; the file a
# driver would have merged is merged as text instead. Real git, real jails.
set -u
AMX=${AGENTMUX:?AGENTMUX must name the binary}
command -v git >/dev/null || { echo "SKIP: git is missing"; exit 77; }

T=$(mktemp -d /tmp/amx-wtdrv.XXXXXX)
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
	printf 'one\ntwo\nthree\nfour\nfive\n' >m.txt && printf 'a\n' >s.txt &&
	printf '*.txt merge=amxevil diff=amxevil filter=amxevil\n' >.gitattributes &&
	git add -A && git commit -qm init) || exit 1
cd "$P" || exit 1

# Two sessions: one edits m.txt's first line, one adds to s.txt; both commit on their branches.
"$AMX" run --worktree --branch drv1 -- sh -c 'sed -i 1s/one/ONE/ m.txt && git add m.txt && git commit -qm s1' \
	</dev/null >"$T/s1.out" 2>&1 || bad "session one failed: $(cat "$T/s1.out")"
"$AMX" run --worktree --branch drv2 -- sh -c 'echo b >>s.txt && git add s.txt && git commit -qm s2' \
	</dev/null >"$T/s2.out" 2>&1 || bad "session two failed: $(cat "$T/s2.out")"
sid() { "$AMX" sessions --json | python3 -c 'import json,sys; print([s["id"] for s in json.load(sys.stdin) if (s.get("worktree") or "").endswith("/'"$1"', unmerged")][0])'; }
id1=$(sid drv1)
id2=$(sid drv2)

# Meanwhile the user edits m.txt's last line: merging session one is a real three-way merge of m.txt.
sed -i 5s/five/FIVE/ m.txt && git commit -qam user

# The user's own git below, with what is planted next kept out of it.
nf="-c filter.amxevil.clean= -c filter.amxevil.smudge= -c filter.amxevil.process="
ug() { git -c core.hooksPath=/dev/null -c commit.gpgSign=false $nf "$@"; }

# What the project's config names (a jailed command in a shared tree can write .git/config).
m=$T/RAN
git config merge.amxevil.driver "echo merge-driver >>'$m'; cp %B %A"
git config merge.default amxevil
git config diff.amxevil.textconv "echo textconv >>'$m'; cat"
git config diff.amxevil.command "echo diff-command >>'$m'; true"
git config diff.external "echo diff-external >>'$m'; true"
git config filter.amxevil.smudge "echo smudge >>'$m'; cat"
git config filter.amxevil.clean "echo clean >>'$m'; cat"
git config gpg.program "echo gpg >>'$m'; false"
git config commit.gpgSign true
git config merge.verifySignatures false
mkdir -p .git/hooks
printf '#!/bin/sh\necho hook >>"%s"\n' "$m" >.git/hooks/pre-merge-commit
cp .git/hooks/pre-merge-commit .git/hooks/post-merge
cp .git/hooks/pre-merge-commit .git/hooks/pre-commit
chmod +x .git/hooks/*

out=$("$AMX" merge "$id1" 2>&1) || bad "merge of session one failed: $out"
[ ! -e "$m" ] && ok "merge ran no filter or merge driver, textconv, external diff, signing program or hook" ||
	bad "merge ran what the project names: $(cat "$m")"
[ "$(cat m.txt)" = "$(printf 'ONE\ntwo\nthree\nfour\nFIVE\n')" ] &&
	ok "the file a driver would have merged is merged as text: both sides' lines are in" ||
	bad "m.txt is not the text merge of both sides: $(cat m.txt)"
git log -1 --format=%G? | grep -q N && ok "the merge commit is not signed" || bad "the merge commit: $(git log -1 --format=%G?)"
rm -f "$m"

out=$("$AMX" merge "$id2" --squash 2>&1) || bad "merge --squash of session two failed: $out"
[ ! -e "$m" ] && ok "merge --squash ran nothing the project names" ||
	bad "merge --squash ran what the project names: $(cat "$m")"
[ "$(cat s.txt)" = "$(printf 'a\nb\n')" ] && ok "merge --squash brought s.txt in" || bad "s.txt: $(cat s.txt)"

# A conflict a driver would have hidden (it copies the branch's side) is a conflict, with markers.
echo cone >c.txt && ug add c.txt && ug commit -qm c0
"$AMX" run --worktree --branch drv3 -- sh -c 'echo branch >c.txt && git '"$nf"' add c.txt && git -c commit.gpgSign=false '"$nf"' commit -qm s3' \
	</dev/null >"$T/s3.out" 2>&1 || bad "session three failed: $(cat "$T/s3.out")"
id3=$(sid drv3)
echo user >c.txt && ug commit -qam c1
out=$("$AMX" merge "$id3" 2>&1) && bad "a conflicting merge said it worked: $out"
{ [ ! -e "$m" ] && grep -q "stopped on conflicts in c.txt" <<<"$out" && grep -q '^<<<<<<<' c.txt; } &&
	ok "a conflict stays a conflict, with markers, and no driver ran" ||
	bad "conflict: $out; ran: $(cat "$m" 2>&1); c.txt: $(cat c.txt)"
ug merge --abort 2>/dev/null

[ $fails -eq 0 ] && echo "all worktree driver checks passed"
exit $((fails > 0))
