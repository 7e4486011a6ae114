#!/usr/bin/env bash
# restore brings back a discarded worktree session (issue 18): the
# worktree on its branch with the agent's commits, and the files of its
# last snapshot byte for byte (untracked, modes, a symlink); a link to a
# host file stays a link, and a .git in the snapshot is not written.
# Real git, real jails.
set -u
AMX=${AGENTMUX:?AGENTMUX must name the binary}
command -v git >/dev/null || { echo "SKIP: git is missing"; exit 77; }

T=$(mktemp -d /tmp/amx-wtrs.XXXXXX)
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
echo host-secret >"$T/secret"

wtrun() { "$AMX" run --worktree --branch "$1" -- sh -c "$2" </dev/null >"$T/$1.out" 2>&1 || bad "session $1 failed: $(cat "$T/$1.out")"; }
sid() { "$AMX" sessions --json | python3 -c 'import json,sys; print([s["id"] for s in json.load(sys.stdin) if "/'"$1"', " in (s.get("worktree") or "")][0])'; }
tree() { (cd "$1" && find . -path ./.git -prune -o -printf '%p %y %m %l\n' | sort && find . -path ./.git -prune -o -type f -print0 | sort -z | xargs -0 sha256sum); }

wtrun back 'echo c >c && git add c && git commit -qm c && echo dirty >>f && printf "u\0x" >u && chmod 750 u &&
	mkdir -p d && ln -s ../c d/l && ln -s '"$T/secret"' hostlink'
id=$(sid back)
w=$("$AMX" sessions --json | python3 -c 'import json,sys; print([s["project"] for s in json.load(sys.stdin) if s["id"]=='"$id"'][0])')
before=$(tree "$w")
tip=$(git rev-parse "agentmux/$id/back")
"$AMX" discard "$id" --yes >"$T/discard.out" 2>&1 || bad "discard failed: $(cat "$T/discard.out")"
grep -q "agentmux restore $id" "$T/discard.out" && ok "discard names restore" || bad "discard: $(cat "$T/discard.out")"
"$AMX" sessions | grep -Eq "^ *$id .*\(agentmux/$id/back, discarded\)" && ok "sessions marks the discarded session with its branch" ||
	bad "sessions: $("$AMX" sessions 2>&1)"
out=$("$AMX" undo "$id" 2>&1)
grep -q "agentmux restore $id" <<<"$out" && ok "undo of a discarded session names restore" || bad "undo: $out"
[ ! -e "$w" ] || bad "discard left $w"

out=$("$AMX" restore "$id" 2>&1) || bad "restore failed: $out"
after=$(tree "$w")
[ "$before" = "$after" ] && ok "restore gives back the files byte for byte (tracked, untracked, modes, links)" ||
	bad "restore: files differ: $(diff <(echo "$before") <(echo "$after"))"
{ [ -L "$w/hostlink" ] && [ "$(readlink "$w/hostlink")" = "$T/secret" ] && [ "$(cat "$T/secret")" = host-secret ]; } &&
	ok "a link to a host file comes back as a link, the host file untouched" || bad "hostlink: $(ls -l "$w/hostlink")"
[ "$(git rev-parse "agentmux/$id/back")" = "$tip" ] && [ "$(git -C "$w" rev-parse --abbrev-ref HEAD)" = "agentmux/$id/back" ] &&
	ok "the branch is back at the agent's commit, checked out in the worktree" ||
	bad "branch: $(git -C "$w" rev-parse --abbrev-ref HEAD) $(git rev-parse "agentmux/$id/back" 2>&1) vs $tip"
"$AMX" sessions | grep -q "agentmux/$id/back, unmerged" && ok "sessions shows it unmerged" || bad "sessions: $("$AMX" sessions)"
out=$("$AMX" restore "$id" 2>&1) && bad "a second restore worked: $out"
grep -q "not discarded" <<<"$out" && ok "restore of a worktree that is there refuses" || bad "second restore: $out"
# A new session in the restored worktree would find no git (its jail shows no main .git): refused, naming
# the session and branch and the way on (a worktree of its own from that branch), which works.
out=$(cd "$w" && "$AMX" run -- sh -c 'echo x >in-wt' </dev/null 2>&1) && bad "a run in a restored worktree worked: $out"
grep -q "is the worktree of session $id (branch agentmux/$id/back).*agentmux run --worktree --base agentmux/$id/back" <<<"$out" &&
	[ ! -e "$w/in-wt" ] && ok "run in a restored session's worktree refuses, naming the way on" || bad "run in worktree: $out"
out=$(cd "$w" && "$AMX" run --worktree -- true </dev/null 2>&1) && bad "a run --worktree in a restored worktree worked: $out"
grep -q "is the worktree of session $id" <<<"$out" && ok "run --worktree in a restored session's worktree refuses the same" ||
	bad "run --worktree in worktree: $out"
"$AMX" run --worktree --base "agentmux/$id/back" --branch onward -- sh -c 'test -f c && git log -1 --format=%H >tip' </dev/null >"$T/onward.out" 2>&1 ||
	bad "run --worktree --base the restored branch failed: $(cat "$T/onward.out")"
ido=$(sid onward)
wo=$("$AMX" sessions --json | python3 -c 'import json,sys; print([s["project"] for s in json.load(sys.stdin) if s["id"]=='"$ido"'][0])')
[ "$(cat "$wo/tip" 2>&1)" = "$tip" ] && ok "run --worktree --base the restored branch goes on from its commits" ||
	bad "onward: $(cat "$wo/tip" 2>&1) vs $tip"
out=$("$AMX" merge "$id" 2>&1) || bad "merge after restore failed: $out"
[ -f "$P/c" ] && ok "merge works on the restored session" || bad "merge: $out"

# The name taken, then --branch.
wtrun two 'echo t >t && git add t && git commit -qm t'
id2=$(sid two)
"$AMX" discard "$id2" --yes >/dev/null 2>&1 || bad "discard of $id2 failed"
git branch "agentmux/$id2/two" main
out=$("$AMX" restore "$id2" 2>&1) && bad "restore onto a taken branch worked: $out"
grep -q -- "--branch NAME" <<<"$out" && ok "a taken branch name: refused, saying --branch" || bad "taken: $out"
out=$("$AMX" restore "$id2" --branch again 2>&1) || bad "restore --branch failed: $out"
git rev-parse -q --verify "agentmux/$id2/again" >/dev/null && ok "restore --branch makes the new name" || bad "--branch: $out"

# Not a worktree session.
"$AMX" run -- true </dev/null >/dev/null 2>&1
out=$("$AMX" restore last 2>&1) && bad "restore of a plain session worked"
grep -q "not a worktree session" <<<"$out" && ok "restore of a plain session refuses" || bad "plain: $out"

# A .git the agent left in the tree (a file in a subdir, a dir with a
# hook) is not written back: restore writes no git dir git would obey.
wtrun dotgit 'mkdir -p sub nest/.git/hooks && printf "gitdir: /etc\n" >sub/.git && printf "#!/bin/sh\ntouch /tmp/PWNED\n" >nest/.git/hooks/post-checkout && echo keep >sub/keep'
id3=$(sid dotgit)
w3=$("$AMX" sessions --json | python3 -c 'import json,sys; print([s["project"] for s in json.load(sys.stdin) if s["id"]=='"$id3"'][0])')
"$AMX" discard "$id3" --yes >/dev/null 2>&1 || bad "discard of $id3 failed"
out=$("$AMX" restore "$id3" 2>&1) || bad "restore of the .git session failed: $out"
{ [ "$(cat "$w3/sub/keep" 2>/dev/null)" = keep ] && [ ! -e "$w3/sub/.git" ] && [ ! -e "$w3/nest/.git/hooks/post-checkout" ] &&
	[ "$(git -C "$w3" rev-parse --git-common-dir)" = "$P/.git" ]; } &&
	ok "a .git in the snapshot is not written back" ||
	bad ".git: $(ls -la "$w3/sub" "$w3/nest" 2>&1) $out"

# The session's reflog dir is writable in its jail: a reflog made a link
# to a host file (its ref deleted, so discard's git does not unlink it)
# must not take restore's "branch: Created from" line; nor may a link
# for a name the agent hopes --branch will take. Landlock refuses links
# there; made from the host after the session (as without Landlock).
echo victim >"$T/victim"
chmod 666 "$T/victim"
wtrun rlog 'c=$(git rev-parse --git-common-dir); r=$(git rev-parse --symbolic-full-name HEAD);
	rm -f "$c/$r" "$c/logs/$r"; ln -s '"$T/victim"' "$c/logs/$r" 2>/dev/null && echo LINKED;
	ln -s '"$T/victim"' "$(dirname "$c/logs/$r")/other" 2>/dev/null && echo LINKED; true'
id5=$(sid rlog)
if grep -q "Landlock: ABI" <<<"$("$AMX" doctor 2>&1)"; then
	grep -q LINKED "$T/rlog.out" && bad "the jail made links in its reflog dir: $(cat "$T/rlog.out")" ||
		ok "the jail cannot make a link in its reflog dir"
fi
rm -f "$P/.git/logs/refs/heads/agentmux/$id5/rlog" && ln -s "$T/victim" "$P/.git/logs/refs/heads/agentmux/$id5/rlog" &&
	ln -s "$T/victim" "$P/.git/logs/refs/heads/agentmux/$id5/other" || bad "the host could not plant the reflog links"
"$AMX" discard "$id5" --yes >/dev/null 2>&1 || bad "discard of $id5 failed"
[ -z "$(ls -A "$P/.git/logs/refs/heads/agentmux/$id5" 2>/dev/null)" ] && ok "discard leaves nothing in the session's reflog dir" ||
	bad "discard left: $(ls -la "$P/.git/logs/refs/heads/agentmux/$id5")"
out=$("$AMX" restore "$id5" 2>&1) || bad "restore of the reflog session failed: $out"
"$AMX" discard "$id5" --yes >/dev/null 2>&1 || bad "second discard of $id5 failed"
ln -s "$T/victim" "$P/.git/logs/refs/heads/agentmux/$id5/other" 2>/dev/null ||
	{ mkdir -p "$P/.git/logs/refs/heads/agentmux/$id5" && ln -s "$T/victim" "$P/.git/logs/refs/heads/agentmux/$id5/other"; }
out=$("$AMX" restore "$id5" --branch other 2>&1) || bad "restore --branch other failed: $out"
[ "$(cat "$T/victim")" = victim ] && ok "restore writes no reflog line through a link the session planted" ||
	bad "the host file took git's reflog line: $(cat "$T/victim")"
{ [ ! -L "$P/.git/logs/refs/heads/agentmux/$id5/other" ] && git rev-parse -q --verify "agentmux/$id5/other" >/dev/null; } &&
	ok "the branch is made, the link gone" || bad "reflog: $(ls -la "$P/.git/logs/refs/heads/agentmux/$id5") $out"

# The project moved away: restore says so.
wtrun moved 'echo m >m'
id4=$(sid moved)
"$AMX" discard "$id4" --yes >/dev/null 2>&1 || bad "discard of $id4 failed"
mv "$P/.git" "$P/.git-away"
out=$("$AMX" restore "$id4" 2>&1) && bad "restore without the project repo worked: $out"
mv "$P/.git-away" "$P/.git"
grep -q "is gone or moved" <<<"$out" && ok "restore with the project repo gone says so" || bad "moved: $out"

# The branch's commits pruned from the project after the discard (reflogs expired, gc --prune=now):
# restore brings them back from agentmux's own copy; with no copy it refuses, naming the commit gone.
wtrun pruned 'echo p >p && git add p && git commit -qm p && echo pp >>p'
id5=$(sid pruned)
w5=$("$AMX" sessions --json | python3 -c 'import json,sys; print([s["project"] for s in json.load(sys.stdin) if s["id"]=='"$id5"'][0])')
before5=$(tree "$w5")
tip5=$(git rev-parse "agentmux/$id5/pruned")
wtrun nocopy 'echo n >n && git add n && git commit -qm n'
id6=$(sid nocopy)
tip6=$(git rev-parse "agentmux/$id6/nocopy")
w6=$("$AMX" sessions --json | python3 -c 'import json,sys; print([s["project"] for s in json.load(sys.stdin) if s["id"]=='"$id6"'][0])')
"$AMX" discard "$id5" --yes >/dev/null 2>&1 || bad "discard of $id5 failed"
"$AMX" discard "$id6" --yes >/dev/null 2>&1 || bad "discard of $id6 failed"
[ -s "$XDG_DATA_HOME/agentmux/sessions/$id5/worktree.pack" ] && ok "discard keeps the branch's commits in agentmux's store" ||
	bad "no kept pack: $(ls "$XDG_DATA_HOME/agentmux/sessions/$id5" 2>&1)"
rm -f "$XDG_DATA_HOME/agentmux/sessions/$id6/worktree.pack"
git reflog expire --expire=now --all && git gc -q --prune=now
{ ! git cat-file -e "$tip5^{commit}" 2>/dev/null && ! git cat-file -e "$tip6^{commit}" 2>/dev/null; } &&
	ok "the project's gc pruned the discarded branches' commits" || bad "gc did not prune (the test proves nothing)"
out=$("$AMX" restore "$id5" 2>&1) || bad "restore after the project's gc failed: $out"
[ "$(git rev-parse "agentmux/$id5/pruned" 2>&1)" = "$tip5" ] && [ "$(tree "$w5")" = "$before5" ] &&
	ok "restore after the project's gc: the branch at the agent's commit, the files byte for byte" ||
	bad "restore after gc: $(git rev-parse "agentmux/$id5/pruned" 2>&1) vs $tip5: $out"
out=$("$AMX" restore "$id6" 2>&1) && bad "restore with the commits gone and no copy worked: $out"
grep -q "the commit ${tip6:0:12} .* is gone from .*kept no copy" <<<"$out" && [ ! -e "$w6" ] &&
	ok "restore with the commits gone and no copy refuses, naming the commit" || bad "no copy: $out"

# The pack of the branch's commits cannot be written (a directory where it goes: rename fails,
# as root too): discard refuses, saying what and what to do, and leaves the worktree and branch.
wtrun nopack 'echo q >q && git add q && git commit -qm q'
id7=$(sid nopack)
w7=$("$AMX" sessions --json | python3 -c 'import json,sys; print([s["project"] for s in json.load(sys.stdin) if s["id"]=='"$id7"'][0])')
tip7=$(git rev-parse "agentmux/$id7/nopack")
mkdir -p "$XDG_DATA_HOME/agentmux/sessions/$id7/worktree.pack/block"
out=$("$AMX" discard "$id7" --yes 2>&1) && bad "discard with the pack unwritable worked: $out"
grep -q "kept the worktree .* and branch agentmux/$id7/nopack as they are: cannot write .*worktree.pack.*--no-keep" <<<"$out" &&
	[ -d "$w7" ] && [ -f "$w7/q" ] && [ "$(git rev-parse "agentmux/$id7/nopack" 2>&1)" = "$tip7" ] &&
	ok "discard that cannot keep the branch's commits refuses and removes nothing" ||
	bad "unwritable pack: $out; $(ls -A "$w7" 2>&1)"
rm -rf "$XDG_DATA_HOME/agentmux/sessions/$id7/worktree.pack"
"$AMX" discard "$id7" --yes >/dev/null 2>&1 && [ ! -e "$w7" ] &&
	[ -s "$XDG_DATA_HOME/agentmux/sessions/$id7/worktree.pack" ] &&
	ok "discard once the pack can be written keeps it and removes the worktree" || bad "discard of $id7 after the fix failed"

# The pack is bounded by [snapshots] max_size: over it discard refuses, naming the bound and the ways out;
# --no-keep discards without the copy (and restore still works while the project has the commits).
wtrun bigpack 'head -c 300000 /dev/urandom >big && git add big && git commit -qm big'
id8=$(sid bigpack)
w8=$("$AMX" sessions --json | python3 -c 'import json,sys; print([s["project"] for s in json.load(sys.stdin) if s["id"]=='"$id8"'][0])')
printf '[snapshots]\nmax_size = 100K\n' >"$XDG_CONFIG_HOME/agentmux/config"
out=$("$AMX" discard "$id8" --yes 2>&1) && bad "discard over max_size worked: $out"
grep -q "take more than \[snapshots\] max_size = .*merge .*--no-keep" <<<"$out" && [ -f "$w8/big" ] &&
	git rev-parse -q --verify "agentmux/$id8/bigpack" >/dev/null &&
	[ ! -e "$XDG_DATA_HOME/agentmux/sessions/$id8/worktree.pack" ] &&
	[ -z "$(find "$XDG_DATA_HOME/agentmux/sessions/$id8" -name '*.tmp' 2>/dev/null)" ] &&
	ok "discard over [snapshots] max_size refuses, keeps all, leaves no partial pack" || bad "over max_size: $out"
out=$("$AMX" discard "$id8" --yes --no-keep 2>&1) || bad "discard --no-keep failed: $out"
[ ! -e "$w8" ] && [ ! -e "$XDG_DATA_HOME/agentmux/sessions/$id8/worktree.pack" ] &&
	ok "discard --no-keep discards without keeping the commits" || bad "--no-keep: $out"
rm -f "$XDG_CONFIG_HOME/agentmux/config"
out=$("$AMX" restore "$id8" 2>&1) && [ -f "$w8/big" ] && ok "restore after discard --no-keep (the commits still in the project)" ||
	bad "restore after --no-keep: $out"

# The same as an ordinary user (the mounts and Landlock differ), once, from root.
if [ -z "${AMX_NO_USER:-}" ] && [ "${1:-}" != --as-user ] && [ "$(id -u)" = 0 ]; then
	if ! command -v useradd >/dev/null || ! command -v setpriv >/dev/null; then
		echo "SKIP (the unprivileged pass): it needs useradd and setpriv"
	else
		u="amxr$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')"
		mkdir -p "$T/stage"
		cp "$AMX" "$T/stage/agentmux"
		cp "${AMX%/*}/agentmux-full" "$T/stage/agentmux-full"
		cp "$0" "$T/stage/worktree-restore.sh"
		cp -r "${AGENTMUX_SHARE:?}" "$T/stage/share"
		chmod -R a+rX "$T/stage"
		useradd -M -N -d /nonexistent -s /bin/sh "$u" || bad "useradd failed"
		setpriv --reuid="$u" --regid="$(id -g "$u")" --init-groups \
		    env -i PATH="$PATH" AGENTMUX="$T/stage/agentmux" TMPDIR=/tmp \
		    AGENTMUX_SHARE="$T/stage/share" \
		    bash "$T/stage/worktree-restore.sh" --as-user | sed 's/^/user: /' ||
		    bad "the unprivileged pass failed"
		[ "${PIPESTATUS[0]}" = 0 ] || bad "the unprivileged pass failed"
		userdel "$u" 2>/dev/null
	fi
fi

[ "$fails" -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "all restore checks passed${1:+ ($1)}"
