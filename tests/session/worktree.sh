#!/usr/bin/env bash
# Worktree sessions (issue 18), real git in real jails: each session works in a linked worktree of its own
# under the data dir, on agentmux/ID/NAME; the main working tree is not in the jail; committing on its own
# branch works and reaches the user's repository, while moving main, a tag, another branch or another
# session's branch is refused by the kernel (read-only mounts); .worktreeinclude copies untracked files in
# without following links; the profile's setup runs inside the jail; a second session in a shared tree is
# refused with the hint.
set -u
AMX=${AGENTMUX:?AGENTMUX must name the binary}
command -v git >/dev/null || { echo "SKIP: git is missing"; exit 77; }

T=$(mktemp -d /tmp/amx-worktree.XXXXXX)
chmod 755 "$T"
export XDG_CONFIG_HOME=$T/config XDG_DATA_HOME=$T/data XDG_RUNTIME_DIR=$T/run XDG_STATE_HOME=$T/state
mkdir -p "$XDG_CONFIG_HOME/agentmux" "$XDG_DATA_HOME" "$XDG_RUNTIME_DIR"
chmod 700 "$XDG_RUNTIME_DIR"
bgpid=
u=
cleanup() {
	[ -n "$bgpid" ] && kill "$bgpid" 2>/dev/null && wait "$bgpid" 2>/dev/null
	[ -n "$u" ] && userdel "$u" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
# A test timeout (TERM) or ^C still cleans up.
trap 'exit 1' INT TERM
fails=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

cat >"$XDG_CONFIG_HOME/agentmux/config" <<EOF
[agent wtsetup]
description = a shell whose worktree sessions run a setup first
command = sh
setup = echo "setup in \$(pwd)" >setup-ran; ls -A $T/p >setup-saw-main 2>&1; touch $T/setup-was-here
EOF

P=$T/p
mkdir -p "$P"
(cd "$P" && git init -q -b main . && git config user.email t@x && git config user.name t &&
	echo base >f && printf '.env\nnode_modules/\nlink-env\n' >.gitignore &&
	printf '.env\nlink-env\n' >.worktreeinclude &&
	git add f .gitignore .worktreeinclude && git commit -qm init && git tag v1 && git branch other) || exit 1
echo 'TOKEN=from-main' >"$P/.env"
echo 'outside' >"$T/outside-secret"
ln -s "$T/outside-secret" "$P/link-env"
echo 'main only' >"$P/main-only"
main0=$(git -C "$P" rev-parse main)
other0=$(git -C "$P" rev-parse other)
tag0=$(git -C "$P" rev-parse v1)
cd "$P" || exit 1

# Session one: commits on its own branch; tries main, a tag, another branch.
out=$("$AMX" run --worktree -- sh -c '
	echo "cwd=$(pwd)"
	echo "env=$(cat .env)"
	[ -e link-env ] && echo "link-env copied"
	[ -e main-only ] && echo "main-only visible"
	ls -A '"$P"' | grep -v "^\.git$" | sed "s/^/main-tree: /"
	echo two >f && git add f && git commit -qm "from session" && echo COMMIT-OK
	git update-ref refs/heads/main HEAD 2>/dev/null && echo MAIN-MOVED
	git tag -f v1 HEAD 2>/dev/null && echo TAG-MOVED
	git tag evil 2>/dev/null && echo TAG-MADE
	git branch -f other HEAD 2>/dev/null && echo OTHER-MOVED
	git branch mine 2>/dev/null && echo TOP-BRANCH-MADE
	true' </dev/null 2>"$T/err1")
rc=$?
[ $rc -eq 0 ] || bad "the worktree session failed ($rc): $(cat "$T/err1")"
id1=$("$AMX" sessions --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')
wt1=$(sed -n 's/^cwd=//p' <<<"$out")
case $wt1 in
"$XDG_DATA_HOME"/agentmux/worktrees/*/p) ok "the session ran in a worktree under the data dir" ;;
*) bad "the session did not run in a worktree under the data dir: cwd=$wt1 ($out)" ;;
esac
grep -q 'env=TOKEN=from-main' <<<"$out" && ok ".worktreeinclude copied .env" ||
	bad ".worktreeinclude did not copy .env: $out"
grep -q 'link-env copied' <<<"$out" && bad ".worktreeinclude copied a symlink out of the project"
grep -q 'main-only visible' <<<"$out" && bad "an untracked file of the main tree was in the worktree"
grep -q 'main-tree:' <<<"$out" && bad "the main working tree was visible in the jail: $out"
grep -q COMMIT-OK <<<"$out" && ok "a commit on the session's own branch worked" ||
	bad "committing on the session's branch failed: $out $(cat "$T/err1")"
for what in MAIN-MOVED TAG-MOVED TAG-MADE OTHER-MOVED TOP-BRANCH-MADE; do
	grep -q "$what" <<<"$out" && bad "the session could do $what"
done
[ "$(git -C "$P" rev-parse main)" = "$main0" ] && [ "$(git -C "$P" rev-parse other)" = "$other0" ] &&
	[ "$(git -C "$P" rev-parse v1)" = "$tag0" ] && ! git -C "$P" rev-parse -q --verify refs/tags/evil >/dev/null &&
	! git -C "$P" rev-parse -q --verify refs/heads/mine >/dev/null &&
	ok "main, other, the tag and refs/heads stayed as they were" ||
	bad "a ref of the user's moved or appeared: $(git -C "$P" show-ref)"
b1=agentmux/$id1/shell
tip=$(git -C "$P" rev-parse -q --verify "refs/heads/$b1") || bad "no branch $b1 in the user's repository"
[ "$(git -C "$P" log -1 --format=%s "$tip" 2>/dev/null)" = "from session" ] &&
	[ "$(git -C "$P" rev-parse "$tip^")" = "$main0" ] &&
	ok "the user's git sees the session's commit on $b1" ||
	bad "the user's git does not see the session's commit on $b1"
git -C "$P" fsck --no-dangling >/dev/null 2>&1 || bad "the user's repository does not pass git fsck"
[ "$(cat "$P/f")" = base ] || bad "the main working tree changed"
[ -d "$wt1" ] && [ "$(cat "$wt1/f")" = two ] && ok "ending the session kept its worktree" ||
	bad "the worktree is gone after the session ended"

# Session two, on another base: cannot move session one's branch, nor make one beside it.
out=$("$AMX" run --worktree --base v1 --branch try -- sh -c '
	git rev-parse --abbrev-ref HEAD
	git update-ref refs/heads/'"$b1"' HEAD 2>/dev/null && echo MOVED-ONE
	git branch agentmux/'"$id1"'/x 2>/dev/null && echo MADE-IN-ONE
	git branch agentmux/mine/x 2>/dev/null && echo MADE-OTHER
	git checkout -q -b agentmux/'"$id1"'/y 2>/dev/null && echo SWITCHED-INTO-ONE
	true' </dev/null 2>"$T/err2") || bad "the second session failed: $(cat "$T/err2")"
id2=$("$AMX" sessions --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')
grep -q "^agentmux/$id2/try$" <<<"$out" && ok "--branch NAME gave agentmux/$id2/try" ||
	bad "--branch try did not give agentmux/$id2/try: $out"
for what in MOVED-ONE MADE-IN-ONE MADE-OTHER SWITCHED-INTO-ONE; do
	grep -q "$what" <<<"$out" && bad "session two could do $what"
done
[ "$(git -C "$P" rev-parse "$b1")" = "$tip" ] && ok "session two could not move session one's branch" ||
	bad "session one's branch moved"

# merge, merge --squash, merge --apply, a conflict, a dirty main tree, discard.
wt_of() { git worktree list --porcelain | sed -n 's/^worktree //p' | while read -r w; do
	[ "$(git -C "$w" rev-parse --abbrev-ref HEAD)" = "$1" ] && echo "$w"; done; }
newest() { "$AMX" sessions --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])'; }
wtrun() { "$AMX" run --worktree -- sh -c "$1"'; git add -A && git commit -qm "$0"' "$2" </dev/null >/dev/null 2>&1 ||
	bad "the session for $2 failed"; }
wtrun 'echo three >f; echo g >g' s3; id3=$(newest)
wtrun 'echo h >h' s4; id4=$(newest)
wtrun 'echo i >i' s5; id5=$(newest)
echo dirty >>f
out=$("$AMX" merge "$id1" 2>&1) && bad "merge into a dirty main tree was not refused"
grep -q 'uncommitted changes; commit or stash them first' <<<"$out" || bad "merge into a dirty tree did not say why: $out"
git checkout -q f
out=$("$AMX" merge "$id1" --into other 2>&1) && bad "merge --into other with main checked out was not refused"
out=$("$AMX" merge "$id1" 2>&1) || bad "merge $id1 failed: $out"
{ [ "$(cat f)" = two ] && [ "$(git rev-parse HEAD^2)" = "$tip" ]; } && ok "merge made a merge commit of session one's branch" ||
	bad "merge did not bring session one's commit in: $out"
out=$("$AMX" merge "$id3" 2>&1) && bad "a conflicting merge said it worked: $out"
grep -q "stopped on conflicts in f: .*git merge --abort" <<<"$out" && [ -f .git/MERGE_HEAD ] &&
	ok "a conflict is left as git leaves it, the file and the way back named" ||
	bad "a conflicting merge did not name f and how to go back: $out"
git merge --abort
out=$("$AMX" merge "$id4" --squash 2>&1) || bad "merge --squash failed: $out"
{ [ "$(cat h)" = h ] && [ "$(git rev-list --parents -1 HEAD | wc -w)" = 2 ]; } &&
	ok "merge --squash made one commit" || bad "merge --squash did not make one plain commit: $out; h=$(cat h 2>&1) $(git log --oneline --graph | head -5)"
head=$(git rev-parse HEAD)
out=$("$AMX" merge "$id5" --apply 2>&1) || bad "merge --apply failed: $out"
{ [ "$(git rev-parse HEAD)" = "$head" ] && [ "$(git diff --cached --name-only)" = i ]; } &&
	ok "merge --apply left the changes staged, uncommitted" || bad "merge --apply committed or staged otherwise: $out"
git reset -q --hard
"$AMX" show "$id1" | grep -q "^  worktree  agentmux/$id1/shell, merged$" && ok "show says a merged session's branch is merged" ||
	bad "show does not say session $id1's branch is merged: $("$AMX" show "$id1" | head -6)"
"$AMX" sessions | grep -q "/p (agentmux/$id5/shell, unmerged)" && ok "sessions marks an unmerged branch" ||
	bad "sessions does not mark session $id5's branch unmerged: $("$AMX" sessions)"
wt3=$(wt_of "agentmux/$id3/shell")
"$AMX" discard "$id3" </dev/null >/dev/null 2>&1 && bad "discard off a terminal without --yes did not refuse"
out=$("$AMX" discard "$id3" --yes 2>&1) || bad "discard failed: $out"
{ ! git rev-parse -q --verify "refs/heads/agentmux/$id3/shell" >/dev/null && [ -n "$wt3" ] && [ ! -e "$wt3" ] &&
	! git worktree list | grep -q "$wt3"; } && ok "discard removed the worktree and the branch" ||
	bad "discard left the branch or the worktree ($wt3): $out"
"$AMX" snapshots "$id3" >/dev/null 2>&1 || bad "session $id3's snapshots went with discard"
"$AMX" merge "$id3" >/dev/null 2>&1 && bad "merge of a discarded session worked"
# A discarded session's snapshots: diff needs no worktree (its default end is the last snapshot, said
# once on stderr); undo has nowhere to put files and names restore.
out=$("$AMX" diff "$id3" --stat 2>"$T/diff-err") || bad "diff of a discarded session failed: $out $(cat "$T/diff-err")"
{ grep -q ' g ' <<<"$out" && grep -q "session $id3's worktree was discarded: this diff ends at its last snapshot" "$T/diff-err"; } &&
	ok "diff of a discarded session shows its snapshots and says the worktree is gone" ||
	bad "diff of a discarded session: $out / $(cat "$T/diff-err")"
out=$("$AMX" diff "$id3" --from start --to last 2>&1) && grep -q '^+g$' <<<"$out" &&
	ok "diff between two snapshots of a discarded session works" || bad "diff --from start --to last after discard: $out"
out=$("$AMX" diff "$id3" --to now 2>&1) && bad "diff --to now of a discarded session worked: $out"
grep -q "is gone (a discarded worktree): there is no 'now' to diff" <<<"$out" || bad "diff --to now after discard did not say why: $out"
out=$("$AMX" undo "$id3" --to last 2>&1) && bad "undo of a discarded session said it worked: $out"
grep -q "worktree was discarded), so undo has nowhere to put files back. 'agentmux restore $id3 --to [0-9]*' brings the worktree and branch back.*'agentmux diff $id3' shows" <<<"$out" &&
	ok "undo of a discarded session refuses and names restore (session-worktree-restore tests it)" ||
	bad "undo of a discarded session: $out"

# A session turns its own branch into a symref to main and plants a symref to other in its ref dir, and
# tries a symlinked ref (refused by Landlock; planted from the host after it, as without Landlock): merge
# refuses, sessions does not call it merged, discard deletes the links, never main.
main1=$(git rev-parse main)
other1=$(git rev-parse other)
out=$("$AMX" run --worktree -- sh -c 'b=$(git symbolic-ref HEAD) &&
	git symbolic-ref "$b" refs/heads/main && git symbolic-ref "${b%/*}/evil" refs/heads/other &&
	echo PLANTED && ln -s refs/heads/other "$(git rev-parse --path-format=absolute --git-common-dir)/${b%/*}/link" \
	2>/dev/null && echo LINKED' </dev/null 2>&1)
idl=$(newest)
grep -q PLANTED <<<"$out" || bad "the session could not plant the symrefs: $out"
if grep -q "Landlock: ABI" <<<"$("$AMX" doctor 2>&1)"; then
	grep -q LINKED <<<"$out" && bad "the jail made a link in its ref dir: $out" || ok "the jail cannot make a link in its ref dir"
fi
ln -sfn refs/heads/other ".git/refs/heads/agentmux/$idl/link" || bad "the host could not plant the symlinked ref"
# The end puts the branch back on its commit (worktree-hostile.sh 14g); made a symref again from the host,
# as on a kernel without Landlock... or by anything of the user's, merge and sessions must not follow it.
grep -q "the session made its branch agentmux/$idl/shell a symbolic ref to refs/heads/main: .*it was put back on" <<<"$out" &&
	[ -z "$(git for-each-ref --format='%(symref)' "refs/heads/agentmux/$idl/shell")" ] &&
	ok "the end puts the session's branch made a symref back, and tells it" ||
	bad "the end did not put the symref branch back: $out"
git symbolic-ref "refs/heads/agentmux/$idl/shell" refs/heads/main || bad "the host could not make the branch a symref again"
"$AMX" sessions | grep "agentmux/$idl/" | grep -q ", merged)" && bad "sessions calls a symref to main merged"
out=$("$AMX" merge "$idl" 2>&1) && bad "merge of a session whose branch is a symref worked: $out"
grep -q "is a link to another ref" <<<"$out" && ok "merge refuses a session branch that is a symref" ||
	bad "merge of a symref branch did not say why: $out"
out=$("$AMX" discard "$idl" --yes 2>&1) || bad "discard of the symref session failed: $out"
{ [ "$(git rev-parse -q --verify refs/heads/main)" = "$main1" ] &&
	[ "$(git rev-parse -q --verify refs/heads/other)" = "$other1" ]; } &&
	ok "discard deleted the session's symrefs and symlinked ref, not main or other" ||
	bad "discard through a symref deleted or moved main or other: $out; $(git for-each-ref refs/heads | head)"
[ -z "$(git for-each-ref "refs/heads/agentmux/$idl/")" ] && [ ! -L ".git/refs/heads/agentmux/$idl/link" ] ||
	bad "discard left the session's refs: $(git for-each-ref "refs/heads/agentmux/$idl/")"

# The session commits its own .env (ignored in the main tree, which holds the user's): merge, --squash and
# --apply refuse, naming it, and the user's .env stays.
"$AMX" run --worktree -- sh -c 'echo TOKEN=from-agent >.env && git add -f .env && git commit -qm env' \
	</dev/null >/dev/null 2>&1 || bad "the .env session failed"
ide=$(newest)
for how in "" --squash --apply; do
	out=$("$AMX" merge "$ide" $how 2>&1) && bad "merge $how overwrote an ignored file of the main tree: $out"
	grep -q "would overwrite 1 untracked or ignored file .*(\.env)" <<<"$out" ||
		bad "merge $how did not name .env: $out"
done
[ "$(cat .env)" = TOKEN=from-main ] && ok "merge refuses to overwrite the main tree's ignored .env" ||
	bad "merge replaced the user's .env: $(cat .env)"
git reset -q --hard

# The jail writes config.worktree (obeyed by the user's git once extensions.worktreeConfig is set, as
# sparse-checkout does) and a 'locked' file in its admin dir: the first is refused, the second does not
# stop discard.
"$AMX" run --worktree -- sh -c 'g=$(git rev-parse --absolute-git-dir)
	printf "[core]\n\tfsmonitor = \"touch '"$T"'/PWNED; false\"\n" >"$g/config.worktree" 2>/dev/null && echo WROTE
	touch "$g/locked"' </dev/null >"$T/outc" 2>&1
idc=$(newest)
wtc=$(wt_of "agentmux/$idc/shell")
git config extensions.worktreeConfig true
git -C "$wtc" status >/dev/null 2>&1
git config --unset extensions.worktreeConfig
{ ! grep -q WROTE "$T/outc" && [ ! -e "$T/PWNED" ]; } && ok "the jail cannot plant config.worktree for the user's git" ||
	bad "the jail planted config.worktree ($(cat "$T/outc")); PWNED: $(ls "$T/PWNED" 2>&1)"
out=$("$AMX" discard "$idc" --yes 2>&1) || bad "discard of a locked worktree failed: $out"
{ [ -n "$wtc" ] && [ ! -e "$wtc" ] && ! git worktree list | grep -q "$wtc"; } &&
	ok "discard removes a worktree the jail locked" || bad "discard left the locked worktree $wtc: $out"

# The profile's setup runs in the jail, in the worktree, before the command, and never on the host.
out=$("$AMX" run -a wtsetup --worktree -- sh -c 'cat setup-ran; cat setup-saw-main' </dev/null 2>"$T/err3") ||
	bad "the setup session failed: $(cat "$T/err3")"
grep -q "^setup in $XDG_DATA_HOME/agentmux/worktrees/.*/p$" <<<"$out" && ok "setup ran in the worktree first" ||
	bad "setup did not run in the worktree before the command: $out $(cat "$T/err3")"
grep -q main-only <<<"$out" && bad "setup saw the main working tree: $out"
[ -e "$T/setup-was-here" ] && bad "setup wrote outside the jail"
[ -e "$P/setup-ran" ] && bad "setup ran in the main tree"
out=$("$AMX" run -a wtsetup --worktree -- true </dev/null 2>&1) &&
	: # (the command ran after a setup that succeeded)
cat >>"$XDG_CONFIG_HOME/agentmux/config" <<EOF
[agent wtfail]
command = sh
setup = exit 3
EOF
out=$("$AMX" run -a wtfail --worktree -- sh -c 'echo COMMAND-RAN' </dev/null 2>&1)
rc=$?
{ [ $rc -eq 3 ] && ! grep -q COMMAND-RAN <<<"$out"; } && ok "a failing setup stops the command" ||
	bad "a failing setup did not stop the command (rc $rc): $out"

# Three worktree sessions of one repository at once: each branch and diff holds its own changes only, and
# undoing one leaves the others byte-for-byte as they were.
start=$(git rev-parse HEAD)
pids=
for n in 1 2 3; do
	"$AMX" run --worktree --branch "par$n" -- sh -c "echo $n >par$n && git add par$n && git commit -qm par$n &&
		sleep 2 && echo $n$n >>par$n && git commit -qam par$n-2 && echo edit$n >f" </dev/null >/dev/null 2>"$T/par$n.err" &
	pids="$pids $!"
done
for p in $pids; do wait "$p" || bad "a parallel session failed: $(cat "$T"/par*.err)"; done
sums() { (cd "$1" && find . -path ./.git -prune -o -type f -print0 | sort -z | xargs -0 sha256sum); }
for n in 1 2 3; do
	pid_=$("$AMX" sessions --json | python3 -c 'import json,sys; print([s["id"] for s in json.load(sys.stdin) if (s.get("worktree") or "").endswith("/par'"$n"', unmerged")][0])')
	eval "par$n=$pid_"
	br="agentmux/$pid_/par$n"
	[ "$(git rev-list --count "$start..$br")" = 2 ] && [ "$(git diff --name-only "$start" "$br")" = "par$n" ] ||
		bad "branch $br does not hold its own two commits alone: $(git log --oneline "$start..$br") $(git diff --name-only "$start" "$br")"
	d=$("$AMX" diff "$pid_" 2>&1)
	{ grep -q "^+edit$n" <<<"$d" && grep -q "par$n" <<<"$d" && ! grep -Eq "par[^$n]|edit[^$n]" <<<"$d"; } ||
		bad "diff $pid_ does not show its own changes alone: $d"
	eval "wt$n=\$(wt_of \"\$br\")"
done
ok "three parallel worktree sessions each committed on their own branch, each diff shows its own changes"
sums "$wt1" >"$T/s1"; sums "$wt3" >"$T/s3"
"$AMX" undo "$par2" >/dev/null 2>&1 || bad "undo $par2 failed"
{ [ ! -e "$wt2/par2" ] && [ "$(cat "$wt2/f")" != edit2 ]; } || bad "undo $par2 did not put its worktree back"
sums "$wt1" | cmp -s - "$T/s1" && sums "$wt3" | cmp -s - "$T/s3" &&
	ok "undo of one parallel session left the other two byte-for-byte" || bad "undo of $par2 touched another worktree"

# git is not safe with two `worktree add` at once in one repository (one read the other's admin dir half
# made: "failed to read .git/worktrees/p9/commondir"): agentmux takes a lock of the repository's worktrees
# (in its data dir, which jails do not see) around each add and remove. Six at once, twice, all start;
# while another holds the lock, a start waits for it on its loop, and so does a discard.
for r in 1 2; do
	pids=
	for n in 1 2 3 4 5 6; do
		"$AMX" run --worktree --branch "six$r$n" -- sh -c "echo $n >six && git add six && git commit -qm six" \
			</dev/null >/dev/null 2>"$T/six$r$n.err" &
		pids="$pids $!"
	done
	for p in $pids; do wait "$p" || bad "one of six worktree sessions at once failed: $(cat "$T"/six$r*.err)"; done
done
[ "$(git for-each-ref 'refs/heads/agentmux/*/six*' | wc -l)" = 12 ] &&
	ok "twelve worktree sessions of one repository, six at once, all started and committed" ||
	bad "six worktree sessions at once: $(git for-each-ref 'refs/heads/agentmux/*/six*' | wc -l) branches of 12"
if command -v flock >/dev/null; then
	lock=$XDG_DATA_HOME/agentmux/locks/worktrees-$(printf '%x-%x' $(stat -c '%d %i' "$P/.git")).lock
	[ -f "$lock" ] || bad "no worktrees' lock at $lock: $(ls "$XDG_DATA_HOME/agentmux/locks" 2>&1)"
	flock "$lock" sh -c "touch '$T/held'; while [ ! -e '$T/release' ]; do sleep 0.1; done" &
	hpid=$!
	for _ in $(seq 100); do [ -e "$T/held" ] && break; sleep 0.1; done
	"$AMX" run --worktree --branch waited -- sh -c 'echo w >w && git add w && git commit -qm w' \
		</dev/null >/dev/null 2>"$T/waited.err" &
	wpid=$!
	sleep 1.5
	{ kill -0 "$wpid" 2>/dev/null && [ -z "$(git for-each-ref 'refs/heads/agentmux/*/waited')" ] &&
		! git worktree list | grep -q "\[agentmux/[0-9]*/waited\]"; } &&
		ok "a worktree session waits while another holds its repository's worktrees' lock" ||
		bad "a worktree session did not wait for the worktrees' lock: $(git worktree list)"
	touch "$T/release"
	wait "$hpid"
	wait "$wpid" && [ -n "$(git for-each-ref 'refs/heads/agentmux/*/waited')" ] &&
		ok "once the lock is free, it starts" || bad "the waiting session failed: $(cat "$T/waited.err")"
	wid=$(newest)
	wwt=$(wt_of "agentmux/$wid/waited")
	rm -f "$T/held" "$T/release"
	flock "$lock" sh -c "touch '$T/held'; while [ ! -e '$T/release' ]; do sleep 0.1; done" &
	hpid=$!
	for _ in $(seq 100); do [ -e "$T/held" ] && break; sleep 0.1; done
	"$AMX" discard "$wid" --yes >"$T/dwait.out" 2>&1 &
	dpid=$!
	sleep 1.5
	{ kill -0 "$dpid" 2>/dev/null && [ -n "$wwt" ] && [ -d "$wwt" ]; } &&
		ok "a discard waits while another holds the worktrees' lock" ||
		bad "a discard did not wait for the worktrees' lock ($wwt): $(cat "$T/dwait.out")"
	touch "$T/release"
	wait "$hpid"
	wait "$dpid" && [ ! -e "$wwt" ] && ok "once the lock is free, the discard goes on" ||
		bad "the waiting discard failed: $(cat "$T/dwait.out")"
	rm -f "$T/held" "$T/release"
	# SIGTERM (and ^C's SIGINT) while a start waits for the lock: it stops at once, nothing made,
	# its session ended as failed (agentmux's default action was to die, its session left running).
	flock "$lock" sh -c "touch '$T/held'; while [ ! -e '$T/release' ]; do sleep 0.1; done" &
	hpid=$!
	for _ in $(seq 100); do [ -e "$T/held" ] && break; sleep 0.1; done
	for sig in TERM INT; do
		# (set -m: a background job's SIGINT is not ignored.)
		(set -m; exec "$AMX" run --worktree --branch "stop$sig" -- sh -c 'echo ran >ran' \
			</dev/null >/dev/null 2>"$T/stop$sig.err") &
		spid=$!
		sleep 1
		kill -"$sig" "$spid"
		for _ in $(seq 50); do kill -0 "$spid" 2>/dev/null || break; sleep 0.1; done
		if kill -0 "$spid" 2>/dev/null; then
			bad "SIG$sig to a start waiting for the worktrees' lock did not stop it within 5 s"
			continue
		fi
		wait "$spid"
		src=$?
		sid=$(newest)
		{ [ "$src" = 1 ] && grep -q "terminated before its command started" "$T/stop$sig.err" &&
			! grep -q "stays" "$T/stop$sig.err" &&
			[ -z "$(git for-each-ref "refs/heads/agentmux/*/stop$sig")" ] &&
			[ ! -e ".git/refs/heads/agentmux/$sid" ] && [ ! -e ".git/logs/refs/heads/agentmux/$sid" ] &&
			[ -d .git/refs/heads/agentmux ] &&
			"$AMX" sessions 2>&1 | grep -q "^$sid  *failed"; } &&
			ok "SIG$sig while a start waits for the worktrees' lock: it stops at once, nothing made (nor its ref dirs left)" ||
			bad "SIG$sig while waiting for the lock: exit $src, $(cat "$T/stop$sig.err"); $("$AMX" sessions 2>&1 | sed -n 2p); $(ls -d .git/refs/heads/agentmux/"$sid" .git/logs/refs/heads/agentmux/"$sid" 2>&1)"
	done
	touch "$T/release"
	wait "$hpid"
	rm -f "$T/held" "$T/release"
else
	echo "SKIP (the worktrees' lock held by hand): flock(1) is missing"
fi
# SIGTERM while the start snapshot runs (the worktree made, the jail made and held; its
# read of the project's branches, which its record waits for, slowed by a git on PATH): the
# start fails saying so and naming the worktree that stays ("the jail's setup ended"
# before), and discard finds it.
mkdir -p "$T/slowgit"
cat >"$T/slowgit/git" <<EOF
#!/bin/sh
case " \$* " in *" for-each-ref "*"%(objectname) %(refname)"*) sleep 3 ;; esac
exec $(command -v git) "\$@"
EOF
chmod 755 "$T/slowgit/git"
(set -m; PATH="$T/slowgit:$PATH" exec "$AMX" run --worktree --branch stopsnap -- sh -c 'echo ran >ran' \
	</dev/null >/dev/null 2>"$T/stopsnap.err") &
spid=$!
for _ in $(seq 100); do
	[ -n "$(git for-each-ref 'refs/heads/agentmux/*/stopsnap')" ] && break
	sleep 0.1
done
sleep 1
kill -TERM "$spid"
wait "$spid"
src=$?
sid=$(newest)
{ [ "$src" = 1 ] && grep -q "terminated before its command started; its worktree .* stays, on branch agentmux/$sid/stopsnap (agentmux discard $sid removes both)" "$T/stopsnap.err" &&
	"$AMX" sessions 2>&1 | grep -q "^$sid  *failed" &&
	"$AMX" discard --yes "$sid" >/dev/null 2>&1 &&
	[ -z "$(git for-each-ref 'refs/heads/agentmux/*/stopsnap')" ]; } &&
	ok "SIGTERM during the start snapshot: the start fails saying so, its worktree named; discard removes it" ||
	bad "SIGTERM during the start snapshot: exit $src, $(cat "$T/stopsnap.err")"

# SIGTERM while the start's read-only git hangs (rev-parse of the base, here 60 s): that
# git is killed and the start stops at once, nothing made. Before, the stop waited for it.
mkdir -p "$T/hanggit"
cat >"$T/hanggit/git" <<EOF
#!/bin/sh
case " \$* " in *" rev-parse --verify --quiet "*) touch "$T/hang-started"; exec sleep 60 ;; esac
exec $(command -v git) "\$@"
EOF
chmod 755 "$T/hanggit/git"
(set -m; PATH="$T/hanggit:$PATH" exec "$AMX" run --worktree --branch hang -- sh -c 'echo ran >ran' \
	</dev/null >/dev/null 2>"$T/hang.err") &
hpid=$!
for _ in $(seq 100); do [ -e "$T/hang-started" ] && break; sleep 0.1; done
sleep 0.5
kill -TERM "$hpid"
for _ in $(seq 30); do kill -0 "$hpid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$hpid" 2>/dev/null; then
	bad "SIGTERM while the start's rev-parse hangs: still running 3 s later"
	kill -KILL "$hpid"
	wait "$hpid"
else
	wait "$hpid"
	hrc=$?
	hid=$(newest)
	{ [ "$hrc" = 1 ] && grep -q "terminated before its command started" "$T/hang.err" &&
		! grep -q "stays" "$T/hang.err" &&
		[ -z "$(git for-each-ref 'refs/heads/agentmux/*/hang')" ] &&
		[ ! -e ".git/refs/heads/agentmux/$hid" ] &&
		"$AMX" sessions 2>&1 | grep -Eq "^ *$hid  *failed.*\(none: the start ended before it was made\)" &&
		"$AMX" show "$hid" 2>&1 | grep -q "worktree  none: the start ended before it was made"; } &&
		ok "SIGTERM while the start's read-only git hangs: it is killed, the start stops at once, nothing made (sessions and show say so, not 'discarded')" ||
		bad "SIGTERM while the start's rev-parse hangs: exit $hrc, $(cat "$T/hang.err")"
fi

# kill-server, then a SIGTERM to the server, while a start's git worktree add runs past
# the quit's grace (6 s; git's worktree add here takes 8 s more once it made the
# worktree): the server waits for it, the start fails naming the worktree, and discard
# removes both. Before, the server killed git at 6 s (at once on the SIGTERM) and left a
# worktree and branch the record ("closed") did not name.
mkdir -p "$T/slowadd"
cat >"$T/slowadd/git" <<EOF
#!/bin/sh
case " \$* " in *" worktree add "*) $(command -v git) "\$@"; rc=\$?; sleep 8; exit \$rc ;; esac
exec $(command -v git) "\$@"
EOF
chmod 755 "$T/slowadd/git"
qid=$(PATH="$T/slowadd:$PATH" "$AMX" new -L wtquit -d --worktree --branch quitadd -- sh -c 'echo ran >ran' 2>&1)
case "$qid" in
*[!0-9]* | '') bad "new -d --worktree: $qid" ;;
*)
	for _ in $(seq 100); do
		[ -n "$(git for-each-ref 'refs/heads/agentmux/*/quitadd')" ] && break
		sleep 0.1
	done
	qsrv=$(cat "$XDG_RUNTIME_DIR/agentmux/wtquit.pid" 2>/dev/null)
	# While it is made, show and sessions say so (they said "discarded").
	{ "$AMX" show "$qid" 2>&1 | grep -q "worktree  not made yet" &&
		"$AMX" sessions 2>&1 | grep -Eq "^ *$qid .*\(not made yet\)"; } &&
		ok "show and sessions of a start still making its worktree say 'not made yet'" ||
		bad "show of a start making its worktree: $("$AMX" show "$qid" 2>&1 | grep worktree)"
	"$AMX" kill-server -L wtquit || bad "kill-server failed"
	# A second kill-server finds no server (it stopped listening): the user's next
	# move is a SIGTERM, which must not cut git short either.
	sleep 1
	[ -n "$qsrv" ] && kill -TERM "$qsrv"
	for _ in $(seq 300); do
		[ -n "$qsrv" ] && kill -0 "$qsrv" 2>/dev/null || break
		sleep 0.1
	done
	qwt=$(git worktree list --porcelain | sed -n 's/^worktree //p' | grep '/wt-' | tail -n 1)
	qerr=$("$AMX" show "$qid" 2>&1)
	{ [ -n "$qsrv" ] && ! kill -0 "$qsrv" 2>/dev/null &&
		"$AMX" sessions 2>&1 | grep -Eq "^ *$qid  *failed" &&
		echo "$qerr" | grep -q "closed before its command started; its worktree .* stays, on branch agentmux/$qid/quitadd (agentmux discard $qid removes both)" &&
		[ ! -e "$qwt/ran" ] &&
		"$AMX" discard --yes "$qid" >/dev/null 2>&1 &&
		[ -z "$(git for-each-ref 'refs/heads/agentmux/*/quitadd')" ] &&
		! git worktree list | grep -q "agentmux/$qid/quitadd"; } &&
		ok "kill-server during a long git worktree add: the server waits for it; the start fails naming the worktree; discard removes it" ||
		bad "kill-server during a long git worktree add: sessions: $("$AMX" sessions 2>&1 | grep "^$qid "), show: $qerr, worktrees: $(git worktree list)"
	;;
esac

# SIGTERM while a start's git worktree add runs, and git then fails on its own: the start stops once
# git is done, and says git's failure too (it said only "terminated", and git's words were lost).
mkdir -p "$T/failadd"
cat >"$T/failadd/git" <<EOF
#!/bin/sh
case " \$* " in *" worktree add "*) touch "$T/failadd/running"; sleep 3; echo "fatal: planted failure" >&2; exit 128 ;; esac
exec $(command -v git) "\$@"
EOF
chmod 755 "$T/failadd/git"
(set -m; PATH="$T/failadd:$PATH" exec "$AMX" run --worktree --branch failadd -- sh -c 'echo ran >ran' \
	</dev/null >/dev/null 2>"$T/failadd.err") &
fpid=$!
for _ in $(seq 100); do [ -e "$T/failadd/running" ] && break; sleep 0.1; done
kill -TERM "$fpid"
wait "$fpid"
frc=$?
{ [ "$frc" = 1 ] && grep -q "terminated before its command started; meanwhile, .*planted failure" "$T/failadd.err" &&
	[ -z "$(git for-each-ref 'refs/heads/agentmux/*/failadd')" ]; } &&
	ok "SIGTERM while git worktree add runs, and git fails: the start says both" ||
	bad "SIGTERM, then git worktree add failed: exit $frc, $(cat "$T/failadd.err")"

# undo --refs of a worktree session puts back its own branch alone: the user's
# main, moved while the session ran, and the shared HEAD stay as they are.
"$AMX" run --worktree --branch refs1 -- sh -c 'sleep 2; echo r >r && git add r && git commit -qm r' \
	</dev/null >/dev/null 2>"$T/refs1.err" &
rpid=$!
sleep 1
echo user >user-commit && git add user-commit && git commit -qm user-commit
usertip=$(git rev-parse main 2>/dev/null || git rev-parse HEAD)
wait "$rpid" || bad "the refs1 session failed: $(cat "$T/refs1.err")"
rid=$("$AMX" sessions --json | python3 -c 'import json,sys; print([s["id"] for s in json.load(sys.stdin) if (s.get("worktree") or "").endswith("/refs1, unmerged")][0])')
out=$("$AMX" undo "$rid" --refs --dry-run 2>&1)
{ ! grep -Eq "(reset|switch|delete) +(main|master|HEAD)" <<<"$out" && grep -q "agentmux/$rid/refs1" <<<"$out"; } &&
	ok "undo --refs --dry-run of a worktree session names its own branch alone" ||
	bad "undo --refs --dry-run of worktree session $rid: $out"
"$AMX" undo "$rid" --refs >/dev/null 2>&1 || bad "undo $rid --refs failed"
{ [ "$(git rev-parse HEAD)" = "$usertip" ] && [ -e user-commit ] &&
	[ "$(git rev-list --count "$usertip..agentmux/$rid/refs1")" = 0 ]; } &&
	ok "undo --refs of a worktree session left the user's main and HEAD, and put its own branch back" ||
	bad "undo --refs of $rid: HEAD $(git rev-parse HEAD) (user's $usertip), branch $(git log --oneline -1 "agentmux/$rid/refs1")"

# A shared tree: a second session without --worktree is refused with the hint; --shared and --worktree start.
"$AMX" run -- sh -c 'sleep 60' </dev/null >/dev/null 2>&1 &
bgpid=$!
for _ in $(seq 100); do
	"$AMX" sessions --json | python3 -c 'import json,sys; sys.exit(0 if any(s["state"]=="running" for s in json.load(sys.stdin)) else 1)' && break
	sleep 0.1
done
out=$(cd "$P" && "$AMX" run -- true </dev/null 2>&1)
rc=$?
{ [ $rc -ne 0 ] && grep -q 'is running on .*--worktree.*--shared' <<<"$out"; } &&
	ok "a second session in the shared tree is refused with the hint" ||
	bad "a second session in the shared tree was not refused with the hint (rc $rc): $out"
(cd "$P" && "$AMX" run --shared -- true </dev/null >/dev/null 2>&1) || bad "--shared did not start"
(cd "$P" && "$AMX" run --worktree -- true </dev/null >/dev/null 2>&1) ||
	bad "--worktree did not start beside a session in the shared tree"
kill "$bgpid" 2>/dev/null
wait "$bgpid" 2>/dev/null
bgpid=

# Sessions sharing a tree: undo of one refuses, naming the other session and its files, unless given paths
# or --force.
"$AMX" run --shared -- sh -c 'touch a-started; for i in $(seq 300); do [ -e go ] && break; sleep 0.1; done; sleep 2; echo from-a >a-file' \
	</dev/null >/dev/null 2>&1 &
apid=$!
"$AMX" run --shared -- sh -c 'for i in $(seq 300); do [ -e a-started ] && break; sleep 0.1; done; echo from-b >b-file; touch go' \
	</dev/null >/dev/null 2>&1 || bad "the --shared session failed"
wait "$apid" || bad "the first shared-tree session failed"
byc() { "$AMX" sessions --json | python3 -c 'import json,sys; print([s["id"] for s in json.load(sys.stdin) if "'"$1"'" in " ".join(s["command"])][0])'; }
ida=$(byc 'from-a')
idb=$(byc 'from-b')
[ "$ida" != "$idb" ] || bad "the two shared-tree sessions have one id"
# diff marks the files the other session changed too; the session's own file is not marked.
out=$("$AMX" diff "$idb" 2>&1) || bad "diff $idb failed: $out"
# (a-file comes after b's end: a's alone; b-file while both ran.)
{ grep -q "^A  a-file  \[also changed by session $ida\]$" <<<"$out" && grep -q '^+from-b$' <<<"$out" &&
	grep -q "^A  b-file  \[changed while session $ida ran too\]$" <<<"$out"; } &&
	ok "diff marks the file the other session changed alone, and the one changed while both ran" ||
	bad "diff $idb did not mark a-file as session $ida's alone: $out"
out=$("$AMX" undo "$idb" 2>&1) && bad "undo of a session whose tree another session changed meanwhile did not refuse"
grep -q "shared its tree with session $ida, .*changed .*a-file.*; .*name the paths to undo, or pass --force" <<<"$out" &&
	[ -e a-file ] && [ -e b-file ] && ok "undo refuses naming the other session and its file" ||
	bad "undo did not refuse naming session $ida and a-file: $out $("$AMX" sessions | head -4) $("$AMX" snapshots "$ida")"
"$AMX" undo "$idb" b-file >/dev/null 2>&1 || bad "undo $idb b-file failed"
{ [ ! -e b-file ] && [ "$(cat a-file)" = from-a ]; } && ok "undo with a path undid that path alone" ||
	bad "undo $idb b-file did not leave a-file alone"

# Usage errors.
"$AMX" run --branch x -- true </dev/null >/dev/null 2>&1 && bad "--branch without --worktree was accepted"
"$AMX" run --worktree --branch '../x' -- true </dev/null >/dev/null 2>&1 && bad "--branch ../x was accepted"
out=$("$AMX" run --worktree --base no-such-ref -- true </dev/null 2>&1) &&
	bad "--base no-such-ref was accepted"
grep -q "no such commit" <<<"$out" || bad "--base no-such-ref did not say why: $out"

# .worktreeinclude copies a sparse file sparse, and no more than 1 GiB of
# data in all: what is past it is not copied, and said. Both files are
# ignored, as what .worktreeinclude names usually is (.env): the session's
# snapshots then leave them out, and need not hash 8 GiB of holes twice.
printf '.env\nlink-env\nsparse.img\nbig.bin\n' >.worktreeinclude
cp .git/info/exclude "$T/exclude" 2>/dev/null || : >"$T/exclude"
printf 'sparse.img\nbig.bin\n' >>.git/info/exclude
truncate -s 8G sparse.img
printf middle | dd of=sparse.img bs=1 seek=4294967296 conv=notrunc status=none
fallocate -l 1100M big.bin 2>/dev/null || head -c 1100M /dev/zero >big.bin
out=$("$AMX" run --worktree --branch sparse -- sh -c 'stat -c "size=%s blocks=%b" sparse.img
	echo "middle=$(dd if=sparse.img bs=1 skip=4294967296 count=6 status=none)"
	[ -e big.bin ] && echo BIG-COPIED; true' </dev/null 2>&1)
sid=$("$AMX" sessions --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')
blocks=$(sed -n 's/^size=8589934592 blocks=\([0-9]*\)$/\1/p' <<<"$out")
{ [ -n "$blocks" ] && [ "$blocks" -lt 4096 ] && grep -q '^middle=middle$' <<<"$out"; } &&
	ok ".worktreeinclude copied a sparse 8 GiB file sparse, its data in place" ||
	bad ".worktreeinclude's copy of a sparse file: $out"
{ ! grep -q BIG-COPIED <<<"$out" && "$AMX" show "$sid" 2>&1 | grep -q "past the 1 GiB it may copy"; } &&
	ok ".worktreeinclude copied nothing past 1 GiB of data, and said so" ||
	bad ".worktreeinclude past 1 GiB: $out $("$AMX" show "$sid" 2>&1 | grep -i worktree)"
rm -f sparse.img big.bin
cp "$T/exclude" .git/info/exclude
git checkout -q .worktreeinclude

# Host git runs no filter driver over what a session's branch holds: the
# project's .gitattributes names the driver (git-lfs would fetch from a
# URL in the project's .lfsconfig). Neither at worktree add nor at merge.
printf 'filtered*.txt filter=amxevil\n' >.gitattributes
echo data >filtered.txt
git add -A && git commit -qm filtered
# (the user's driver, configured once the files are in)
git config filter.amxevil.smudge "touch '$T/FILTER-RAN'; cat"
git config filter.amxevil.process "touch '$T/FILTER-RAN'; false"
"$AMX" run --worktree --branch filt -- sh -c 'echo more >filtered2.txt && git -c filter.amxevil.process= -c filter.amxevil.smudge= add filtered2.txt && git -c filter.amxevil.process= -c filter.amxevil.smudge= commit -qm f2' \
	</dev/null >"$T/filt.out" 2>&1 || bad "the filter session failed: $(cat "$T/filt.out")"
fid=$("$AMX" sessions --json | python3 -c 'import json,sys; print([s["id"] for s in json.load(sys.stdin) if (s.get("worktree") or "").endswith("/filt, unmerged")][0])')
[ ! -e "$T/FILTER-RAN" ] && ok "worktree add ran no filter driver the project's attributes name" ||
	bad "worktree add ran the filter driver"
out=$("$AMX" merge "$fid" 2>&1) || bad "merge of the filter session failed: $out"
{ [ ! -e "$T/FILTER-RAN" ] && [ "$(cat filtered2.txt 2>/dev/null)" = more ]; } &&
	ok "merge checked the branch's file out as it is, with no filter driver" ||
	bad "merge ran the filter driver, or filtered2.txt is not as committed: $(cat filtered2.txt 2>&1)"
git config --unset filter.amxevil.smudge; git config --unset filter.amxevil.process

# What agentmux writes into the user's repository takes the user's umask (022 here), not agentmux's own
# (077): the objects a session's git wrote (brought back from the jail), its pack, a worktree session's ref
# and reflog dirs and config.worktree, the index undo --refs puts back. Each was 0700 or 0600/0400 before.
M=$T/modes
mkdir -p "$M" && (
	umask 022
	cd "$M" && git init -q -b main . && git config user.email t@x && git config user.name t &&
		echo a >f && git add f && git commit -qm A || exit 1
	"$AMX" run -- sh -c 'echo b >f && git add f && git commit -qm B && head -c 300000 /dev/urandom >big &&
		git add big && git commit -qm big && git repack -q' </dev/null >"$T/modes.out" 2>&1 || exit 1
	"$AMX" undo last --refs </dev/null >"$T/modes.out" 2>&1 || exit 1
	"$AMX" run --worktree --branch modes -- sh -c 'echo c >g && git add g && git commit -qm C' \
		</dev/null >"$T/modes.out" 2>&1
) || bad "the modes' repository could not be made: $(cat "$T/modes.out")"
odd=$(find "$M/.git" \( -type d ! -perm -0755 \) -o \( -type f ! -perm -0444 ! -name '*.lock' \) -print)
[ -z "$odd" ] && ok "what agentmux wrote into the repository has the user's umask's modes" ||
	bad "agentmux wrote these with its own umask's modes: $(ls -ld $odd | head -n 8)"
# A repository shared with a group (core.sharedRepository, set-gid dirs): a session leaves .git set-gid
# (its end took the bit off, as if the session had set it), and what agentmux makes there is the group's.
M=$T/shared
mkdir -p "$M" && (
	umask 022
	cd "$M" && git init -q -b main . && git config user.email t@x && git config user.name t &&
		git config core.sharedRepository group && chmod -R g+ws .git && echo a >f && git add f &&
		git commit -qm A || exit 1
	"$AMX" run -- sh -c 'echo b >f && : >.git/probe && rm .git/probe' </dev/null >"$T/modes.out" 2>&1 || exit 1
	"$AMX" undo last --refs </dev/null >"$T/modes.out" 2>&1 || exit 1
	"$AMX" run --worktree --branch modes -- true </dev/null >"$T/modes.out" 2>&1
) || bad "the shared repository could not be made: $(cat "$T/modes.out")"
[ -g "$M/.git" ] && ok "a session leaves a shared repository's .git set-gid" ||
	bad "a session took the set-gid bit off a shared repository's .git: $(stat -c %A "$M/.git")"
odd=$(find "$M/.git/refs" "$M/.git/logs" "$M/.git/worktrees" "$M/.git/index" \( -type d ! -perm -2070 \) -o \
	\( -type f ! -perm -0040 \) -print)
[ -z "$odd" ] && ok "in a repository shared with a group, what agentmux wrote is the group's" ||
	bad "in a shared repository, these are not the group's: $(ls -ld $odd | head -n 8)"

# The same as an ordinary user (users are not root; the mounts and Landlock differ), once, from root.
if [ -z "${AMX_NO_USER:-}" ] && [ "${1:-}" != --as-user ] && [ "$(id -u)" = 0 ]; then
	if ! command -v useradd >/dev/null || ! command -v setpriv >/dev/null; then
		echo "SKIP (the unprivileged pass): it needs useradd and setpriv"
	else
		u="amxw$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')"
		mkdir -p "$T/stage"
		cp "$AMX" "$T/stage/agentmux"
		# (and the whole program it runs, beside it)
		cp "${AMX%/*}/agentmux-full" "$T/stage/agentmux-full"
		cp "$0" "$T/stage/worktree.sh"
		cp -r "${AGENTMUX_SHARE:?}" "$T/stage/share"
		chmod -R a+rX "$T/stage"
		useradd -M -N -d /nonexistent -s /bin/sh "$u" || bad "useradd failed"
		setpriv --reuid="$u" --regid="$(id -g "$u")" --init-groups \
		    env -i PATH="$PATH" AGENTMUX="$T/stage/agentmux" TMPDIR=/tmp \
		    AGENTMUX_SHARE="$T/stage/share" \
		    bash "$T/stage/worktree.sh" --as-user | sed 's/^/user: /' ||
		    bad "the unprivileged pass failed"
		[ "${PIPESTATUS[0]}" = 0 ] || bad "the unprivileged pass failed"
		userdel "$u" 2>/dev/null
		u=
	fi
fi

[ $fails -eq 0 ] && echo "all worktree checks passed${1:+ ($1)}"
exit $((fails > 0))
