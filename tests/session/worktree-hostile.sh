#!/usr/bin/env bash
# What a worktree session does to its git to reach the user's tree (issue 18, hostile review s12 r21):
# a branch reset to an older commit of the user's history that renames a directory onto one the main
# tree ignores cannot make merge, --squash or --apply carry the user's newer file (git's directory-rename
# detection) over the user's ignored file; a session that points its worktree's own HEAD at the user's main
# is told at the end and put back (and by undo --refs). Real git, real jails; as root and as an ordinary user.
set -u
AMX=${AGENTMUX:?AGENTMUX must name the binary}
CRAFT=${AMX_CRAFT:-$(cd "$(dirname "$0")/../jail" && pwd)/index-craft.py}
command -v git >/dev/null || { echo "SKIP: git is missing"; exit 77; }

T=$(mktemp -d /tmp/amx-wthost.XXXXXX)
chmod 755 "$T"
export XDG_CONFIG_HOME=$T/config XDG_DATA_HOME=$T/data XDG_RUNTIME_DIR=$T/run XDG_STATE_HOME=$T/state
mkdir -p "$XDG_CONFIG_HOME/agentmux" "$XDG_DATA_HOME" "$XDG_RUNTIME_DIR"
chmod 700 "$XDG_RUNTIME_DIR"
u=
bgpid=
cleanup() {
	[ -n "$bgpid" ] && kill "$bgpid" 2>/dev/null && wait "$bgpid" 2>/dev/null
	[ -n "$u" ] && userdel "$u" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fails=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }
# new_project: a fresh repository at $P (one commit of f), the current dir.
new_project() {
	mkdir -p "$P" && cd "$P" || exit 1
	git init -q -b main . && git config user.email t@x && git config user.name t
	echo a >f && git add f && git commit -qm A
}
sid() { "$AMX" sessions --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])'; }
# The jail sees the shared git dir where no writable dir lies above it, and Landlock refuses links,
# sockets and FIFOs in all of it. What agentmux does with one made there anyway (a kernel without
# Landlock; a process of the user's) is tried by planting from the host while the session runs:
# held BRANCH OUT JAILTEXT: a worktree session on BRANCH in the background, its output in OUT: it runs
# JAILTEXT, then waits for .released in its worktree (60 s at most). Once it does, sets w (its worktree),
# a (its git dir), c (the shared one) and r (its branch's ref), as the host sees them.
held() {
	"$AMX" run --worktree --branch "$1" -- sh -c "$3"'
		git rev-parse --symbolic-full-name HEAD >.held
		i=0; while [ $i -lt 600 ] && [ ! -e .released ]; do sleep 0.1; i=$((i+1)); done' </dev/null >"$2" 2>&1 &
	bgpid=$!
	w=
	for _ in $(seq 600); do
		w=$(ls -d "$XDG_DATA_HOME"/agentmux/worktrees/*/"${P##*/}" 2>/dev/null | head -n 1)
		[ -n "$w" ] && [ -s "$w/.held" ] && break
		sleep 0.1
	done
	[ -n "$w" ] && [ -s "$w/.held" ] || bad "the held session did not start: $(cat "$2")"
	a=$P/.git/worktrees/${P##*/} c=$P/.git r=$(cat "$w/.held" 2>/dev/null)
}
release() { touch "$w/.released"; wait "$bgpid"; bgpid=; }
# Whether the kernel has Landlock (what refuses links in the jail's git dirs).
landlock() { grep -q "Landlock: ABI" <<<"$("$AMX" doctor 2>&1)"; }
# The jail's text that tries to make a link to /dev/zero in each dir it names, printing LINKED for each made.
try_links='for d in "$@"; do mkdir -p "$d" 2>/dev/null; ln -s /dev/zero "$d/try-zz" 2>/dev/null && echo "LINKED $d"; done'

# A fresh repository P$1: main with config/{a,b}.json, then config/settings.json; local/ ignored, holding
# the user's private local/settings.json.
repo() {
	P=$T/p$1
	mkdir -p "$P" && cd "$P" || exit 1
	git init -q -b main . && git config user.email t@x && git config user.name t
	mkdir config && echo a >config/a.json && echo b >config/b.json && printf 'local/\n' >.gitignore
	git add -A && git commit -qm B0
	echo 'tracked defaults' >config/settings.json && git add -A && git commit -qm B1
	mkdir local && echo 'USER-PRIVATE token=hunter2' >local/settings.json
}

# 1. The directory rename: merge, --squash and --apply each leave the user's local/settings.json as it was
# (git follows no directory rename; a path the merge would write that is there untracked is refused).
repo 1
"$AMX" run --worktree -- sh -c 'git reset -q --hard HEAD~1 && git mv config local && git commit -qm tidy' \
	</dev/null >"$T/dr.out" 2>&1 || bad "the directory-rename session failed: $(cat "$T/dr.out")"
id=$(sid)
b1=$(git rev-parse HEAD)
for how in "" --squash --apply; do
	out=$("$AMX" merge "$id" $how 2>&1) || bad "merge $how failed: $out"
	[ "$(cat local/settings.json)" = 'USER-PRIVATE token=hunter2' ] &&
		ok "merge $how left the user's ignored local/settings.json alone" ||
		bad "merge $how overwrote the user's ignored local/settings.json: $(cat local/settings.json)"
	[ "$(git show :config/settings.json 2>&1)" = 'tracked defaults' ] ||
		bad "merge $how moved config/settings.json: $(git status --porcelain | tr '\n' ' ')"
	git reset -q --hard "$b1"
done

# 2. The session points its worktree's own HEAD at the user's main: the end says so (in red) and puts it
# back on the session's branch; main is the main tree's to switch to. undo --refs repairs it too.
P=$T/h
mkdir -p "$P" && cd "$P" || exit 1
git init -q -b main . && git config user.email t@x && git config user.name t
echo a >f && git add f && git commit -qm A && git branch feature
end=$("$AMX" run --worktree -- sh -c 'echo c >f && git commit -qam C && git symbolic-ref HEAD refs/heads/main' \
	</dev/null 2>&1)
id=$(sid)
wthead() { git worktree list --porcelain | awk '/^worktree /{w=$2} /^branch /{if (w ~ /\/worktrees\//) print $2}'; }
grep -q "HEAD of the session's worktree .*pointed it at refs/heads/main.*put back on its branch agentmux/" <<<"$end" &&
	ok "the end tells a worktree HEAD pointed at main" || bad "the end did not tell the worktree's HEAD: $end"
[ "$(wthead)" = "refs/heads/agentmux/$id/shell" ] && ok "the end put the worktree's HEAD back on its branch" ||
	bad "the worktree's HEAD after the end: $(wthead); $(git worktree list)"
git switch -q feature && git switch -q main && ok "the user can switch to main in the main tree" ||
	bad "git switch main in the main tree failed: $(git worktree list)"
admin=$(git rev-parse --git-common-dir)/worktrees/$(ls "$(git rev-parse --git-common-dir)/worktrees")
git switch -q feature && echo 'ref: refs/heads/main' >"$admin/HEAD"
out=$("$AMX" undo --refs "$id" 2>&1) || bad "undo --refs failed: $out"
[ "$(wthead)" = "refs/heads/agentmux/$id/shell" ] && grep -q "switch  the worktree's HEAD back" <<<"$out" &&
	ok "undo --refs puts the worktree's HEAD back on its branch" ||
	bad "after undo --refs the worktree's HEAD: $(wthead); undo said: $out"

# 3. What a worktree session does to hide its changes from git is told naming the worktree's own index
# (.git/worktrees/NAME/index, not .git/index) and the worktree as the place to run the command.
git switch -q main
echo a >g && git add g && git commit -qm G
end=$("$AMX" run --worktree -- sh -c 'git update-index --skip-worktree f &&
	o=$(git rev-parse :g) && echo evil >>g && touch -d @$(($(date +%s) - 10)) g && git add g &&
	n=$(git rev-parse :g) && python3 -c "import hashlib, sys
i, o, n = sys.argv[1], bytes.fromhex(sys.argv[2]), bytes.fromhex(sys.argv[3])
d = open(i, \"rb\").read()[:-20]
assert d.count(n) == 1
d = d.replace(n, o)
open(i, \"wb\").write(d + hashlib.sha1(d).digest())" "$(git rev-parse --git-path index)" "$o" "$n" && echo forged' \
	</dev/null 2>&1)
grep -q forged <<<"$end" || bad "the worktree session did not forge its index: $end"
wtidx="$(git rev-parse --path-format=absolute --git-common-dir)/worktrees/[^ ]*/index"
grep -q "f was marked skip-worktree in $wtidx in the session.*in the session's worktree " <<<"$end" &&
	ok "a mark in a worktree session names the worktree's index and the worktree" ||
	bad "the mark was told without the worktree's index and place: $end"
grep -q "g: its entry in $wtidx (the index of the session's worktree " <<<"$end" &&
	ok "a rewritten entry in a worktree session names the worktree's index and the worktree" ||
	bad "the rewritten entry was told without the worktree's index and place: $end"
grep -q '\.git/index' <<<"$end" && bad "a worktree session's end still says .git/index: $end" ||
	ok "a worktree session's end does not say .git/index"
# 4. The session plants a submodule git dir with a hook in its worktree's own git dir (modules/NAME, which
# the jail can write) and registers NAME in .gitmodules: the user's 'git submodule update --init' in the
# worktree would take it up and run the hook. The end moves it aside and says so.
P=$T/s
new_project
chmod 777 "$T"
end=$("$AMX" run --worktree --branch sm -- sh -c 'a=$(git rev-parse --absolute-git-dir) && mkdir -p "$a/modules" &&
	git init -q --separate-git-dir "$a/modules/evil" evil && echo x >evil/x && git -C evil add x &&
	git -C evil -c user.name=a -c user.email=a@b commit -qm x && printf "#!/bin/sh\ntouch '"$T"'/PWNED\n" >"$a/modules/evil/hooks/post-checkout" &&
	chmod 755 "$a/modules/evil/hooks/post-checkout" && git config -f .gitmodules submodule.evil.path evil &&
	git config -f .gitmodules submodule.evil.url ./nowhere && git add .gitmodules evil 2>/dev/null && git commit -qm sub && rm -rf evil' \
	</dev/null 2>&1)
chmod 755 "$T"
id=$(sid)
w=$("$AMX" sessions --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["project"])')
grep -q "made submodule git dirs in its worktree's git dir .*moved to" <<<"$end" &&
	ok "the end tells submodule git dirs made in the worktree's git dir" || bad "the end did not tell them: $end"
git -C "$w" submodule update --init >/dev/null 2>&1
[ ! -e "$T/PWNED" ] && ok "git submodule update in the worktree runs no hook the session planted" ||
	bad "the planted post-checkout hook ran at the user's git submodule update"

# 5. The session leaves an interactive rebase in progress in its worktree's own git dir (rebase-merge in
# the admin dir) whose todo holds an exec line: the user's 'git rebase --continue' in the worktree runs
# it. The end tells it, with the command, naming that git dir, as it does for the project's .git.
P=$T/r
new_project
end=$("$AMX" run --worktree --branch rb -- sh -c 'echo b >b && git add b && git commit -qm b &&
	GIT_SEQUENCE_EDITOR="printf \"break\\nexec touch /tmp/amx-wt-rebase-mark\\n\" >" git rebase -i HEAD' \
	</dev/null 2>&1)
grep -q "a rebase was left in progress in $P/.git/worktrees/[^ ]*/rebase-merge; its todo runs commands at git rebase --continue: exec touch /tmp/amx-wt-rebase-mark" <<<"$end" &&
	ok "the end tells a rebase left in progress in the worktree's git dir, with its exec line" ||
	bad "the end did not tell the rebase in the worktree's git dir: $end"

# 6. The session tries to make its worktree's own logs/HEAD (in the admin dir, which the jail can write)
# and its branch's reflog links to a host file, and ORIG_HEAD a socket: the user's next commit in the
# worktree would append its reflog lines there. Landlock refuses each. Made from the host while the
# session runs (as without Landlock), the end removes the links, unfollowed, and says so; the host file is
# untouched.
P=$T/l
new_project
echo victim >"$T/victim" && chmod 666 "$T/victim"
held lh "$T/lh.out" 'a=$(git rev-parse --absolute-git-dir) && mkdir -p "$a/logs" &&
	c=$(git rev-parse --git-common-dir) && r=$(git rev-parse --symbolic-full-name HEAD) &&
	{ rm -f "$a/logs/HEAD" && ln -s '"$T"'/victim "$a/logs/HEAD" && echo MADE-LOG; }
	{ rm -f "$a/ORIG_HEAD" && python3 -c "import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])" "$a/ORIG_HEAD" 2>/dev/null && echo MADE-SOCK; }
	{ rm -f "$c/logs/$r" && ln -s '"$T"'/victim "$c/logs/$r" && echo MADE-REFLOG; }; true'
rm -f "$a/logs/HEAD" && ln -s "$T/victim" "$a/logs/HEAD" && rm -f "$a/ORIG_HEAD" &&
	python3 -c "import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])" "$a/ORIG_HEAD" &&
	rm -f "$c/logs/$r" && ln -s "$T/victim" "$c/logs/$r" || bad "the host could not plant for case 6"
release
end=$(cat "$T/lh.out")
id=$(sid)
if landlock; then
	! grep -q MADE <<<"$end" && ok "the jail cannot make a link or socket in its worktree's git dir or its reflog dir" ||
		bad "the jail made links or sockets in its git dirs: $end"
fi
# (Removed as they came, while it ran, or by the end's walk: which one depends on when the loop reads the events.)
grep -Eq "(left links or special files in its worktree's git dir.*logs/HEAD \(a link to $T/victim\).*they were dealt with|while it ran, the session made links .*logs/HEAD \(a link to $T/victim\))" <<<"$end" &&
	grep -q "ORIG_HEAD (a special file)" <<<"$end" && grep -q "logs/refs/heads/agentmux/$id/lh (a link to $T/victim)" <<<"$end" &&
	ok "the end tells and removes links and special files in the worktree's git dir" || bad "the end did not tell them: $end"
echo x >"$w/x" && git -C "$w" add x && git -C "$w" commit -qm x
[ "$(cat "$T/victim")" = victim ] && ok "a commit in the worktree writes nothing through a link planted in its git dir" ||
	bad "the host file took the worktree's reflog line: $(cat "$T/victim")"

# 14. FIFOs, links and sockets where the user's git opens files: the worktree's git dir, its branch's ref
# and reflog dirs (git branch and for-each-ref in the main tree open every ref file, wait on a FIFO
# forever, and read /dev/zero through a link without end). Landlock refuses to make any there, or in a
# dir made there. Made from the host (as without Landlock), the end removes the socket and links in the
# ref dir and tells them; the user's git branch lists the branches.
P=$T/fifo
new_project
held ff "$T/ff.out" 'a=$(git rev-parse --absolute-git-dir) &&
	c=$(git rev-parse --git-common-dir) && r=$(git rev-parse --symbolic-full-name HEAD) &&
	for d in "$a" "$a/logs" "${c}/${r%/*}" "$c/logs/${r%/*}"; do mkdir -p "$d"; mkfifo "$d/fifo" 2>/dev/null && echo "MADE $d"; done
	mkfifo "$c/${r%/*}/fifo" 2>/dev/null || mkfifo "$c/${r%/*}/sub/fifo" 2>/dev/null && echo MADE-SUB
	mkdir -p "$c/${r%/*}/sub" && { python3 -c "import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])" "$c/${r%/*}/sub/sock" 2>/dev/null && echo MADE-SOCK; }
	set -- "$a" "$a/logs" "${c}/${r%/*}" "$c/${r%/*}/sub" "$c/logs/${r%/*}"; '"$try_links"'
	ln -s /proc/self/fd/0 "$c/${r%/*}/sub/stdin" 2>/dev/null && echo MADE-STDIN
	d="$c/${r%/*}/deep" && for i in $(seq 34); do d="$d/x"; done && mkdir -p "$d" && echo DEEP-DIRS && ln -s /dev/zero "$d/zz" 2>/dev/null && echo MADE-DEEP'
d=$c/${r%/*}
python3 -c "import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])" "$d/sub/sock" &&
	ln -s /dev/zero "$d/zz" && ln -s /proc/self/fd/0 "$d/sub/stdin" &&
	dd=$(find "$d/deep" -type d | awk '{ print length, $0 }' | sort -n | tail -n 1 | cut -d' ' -f2-) &&
	ln -s /dev/zero "$dd/zz" || bad "the host could not plant for case 14"
release
end=$(cat "$T/ff.out")
id=$(sid)
if landlock; then
	! grep -q 'MADE\|LINKED' <<<"$end" && ok "no FIFO, link or socket can be made in the worktree's git dir or its branch's ref and reflog dirs" ||
		bad "the session made FIFOs, links or sockets where git opens files: $end"
else
	echo "SKIP (FIFOs, links and sockets refused): no Landlock here"
fi
grep -q DEEP-DIRS <<<"$end" || bad "the session could not make its deep dirs: $end"
grep -q "refs/heads/agentmux/$id/sub/sock (a special file)" <<<"$end" &&
	grep -q "refs/heads/agentmux/$id/zz (a link to /dev/zero)" <<<"$end" &&
	grep -q "refs/heads/agentmux/$id/sub/stdin (a link to /proc/self/fd/0)" <<<"$end" &&
	grep -q "refs/heads/agentmux/$id/deep/x/.* (a dir 32 deep, removed with what it held)" <<<"$end" &&
	ok "the end tells and removes special files and links in the branch's ref dir (git reads /dev/zero through one)" ||
	bad "the end did not tell the socket and links: $end"
[ -z "$(find .git/refs .git/logs .git/worktrees ! -type f ! -type d 2>/dev/null)" ] ||
	bad "special files or links are left in the git dir: $(find .git/refs .git/logs .git/worktrees ! -type f ! -type d)"
out=$( (ulimit -v 4000000; timeout 20 git branch) </dev/null 2>&1) && grep -q "agentmux/$id/ff" <<<"$out" &&
	ok "the user's git branch lists the branches after it" || bad "git branch after the session: $out"

# 14e. The race the live watch cannot win: a jail that makes a link to /dev/zero in its ref dir again and
# again, while the user's git for-each-ref runs in the main tree (it read /dev/zero through one in 3 runs
# of 10, and ran out of memory). Landlock refuses every one: all ten runs work.
if landlock; then
	P=$T/replant
	new_project
	held rp "$T/rp.out" 'r=$(git rev-parse --symbolic-full-name HEAD) && d=$(git rev-parse --git-common-dir)/${r%/*} &&
		( n=0; while [ $n -lt 40000 ] && [ ! -e .released ]; do ln -sf /dev/zero "$d/zz" 2>/dev/null && echo LINKED;
			ln -sf /dev/zero "$d/zz$((n % 7))" 2>/dev/null; n=$((n + 1)); done ) >.replant 2>&1 &'
	fine=0
	for _ in $(seq 10); do
		out=$( (ulimit -v 1000000; timeout 20 git for-each-ref) </dev/null 2>&1) && grep -q "agentmux/.*/rp" <<<"$out" &&
			fine=$((fine + 1))
	done
	release
	[ "$fine" = 10 ] && ! grep -q LINKED "$w/.replant" &&
		ok "a jail re-making a link in its ref dir makes none; the user's git for-each-ref works 10 times of 10" ||
		bad "re-planting: $fine runs of 10 worked; $(sort "$w/.replant" | uniq -c | head -3)"
	cd "$T" || exit 1
fi

# 14f. Files too big for a ref in the branch's ref dir (git reads a loose ref whole; a sparse 7 GB file costs
# the jail nothing, and the user's git branch ran out of memory while the session ran and after it, which
# left the file): cut to their first line where that could be a ref (the branch itself, its commit kept),
# else removed: as soon as agentmux sees them (the live watch), or by the end's walk with [jail] history =
# off (no watch); told at the end either way.
bigplant='r=$(git rev-parse --symbolic-full-name HEAD) && d=$(git rev-parse --git-common-dir)/${r%/*} &&
	echo b >b && git add b && git commit -qm B && git rev-parse HEAD >.tip && truncate -s 7G "$d/${r##*/}" &&
	truncate -s 7G "$d/zz" && mkdir -p "$d/sub" && head -c 5000 /dev/zero >"$d/sub/zeros" &&
	python3 -c "import os, sys; fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644); os.pwrite(fd, b\"x\", 7 << 30)" "$d/far" &&
	echo planted'
bigleft() { # DIR BRANCH: whether a file too big for a ref is left in DIR
	[ "$(stat -c %s "$1/$2" 2>/dev/null || echo 0)" -gt 4096 ] || [ -e "$1/zz" ] || [ -e "$1/sub/zeros" ] || [ -e "$1/far" ]
}
bigtold() { # ID BRANCH END
	grep -q "refs/heads/agentmux/$1/$2 (a file of 7516192768 bytes where git reads a ref whole: cut to its first line)" <<<"$3" &&
		grep -q "refs/heads/agentmux/$1/zz (a file of 7516192768 bytes where git reads a ref whole: removed)" <<<"$3" &&
		grep -q "refs/heads/agentmux/$1/sub/zeros (a file of 5000 bytes where git reads a ref whole: removed)" <<<"$3" &&
		grep -q "refs/heads/agentmux/$1/far (a file of 7516192769 bytes where git reads a ref whole: removed)" <<<"$3"
}
P=$T/bigref
new_project
held bg "$T/bg.out" "$bigplant"
d=$c/${r%/*}
i=0
while [ $i -lt 100 ] && bigleft "$d" bg; do sleep 0.1; i=$((i+1)); done
[ -n "$r" ] && [ $i -lt 100 ] && ok "files too big for a ref in a running session's ref dir are cut or removed as they come" ||
	bad "files too big for a ref stayed in the ref dir: $(ls -laR "$d")"
out=$( (ulimit -v 1000000; timeout 20 git branch) </dev/null 2>&1) && grep -q "agentmux/.*/bg" <<<"$out" &&
	ok "the user's git branch works while a session that made a 7 GB ref file runs" ||
	bad "git branch while the session with a 7 GB ref file runs: $out"
release
id=$(sid)
end=$(cat "$T/bg.out")
grep -q planted <<<"$end" && bigtold "$id" bg "$end" && [ "$(git rev-parse "refs/heads/agentmux/$id/bg")" = "$(cat "$w/.tip")" ] &&
	ok "the files too big for a ref are told, and the branch still names the session's commit" ||
	bad "files too big for a ref (branch at $(git rev-parse "refs/heads/agentmux/$id/bg" 2>&1), tip $(cat "$w/.tip")): $end"
P=$T/bigref2
new_project
printf '[jail]\nhistory = off\n' >"$XDG_CONFIG_HOME/agentmux/config"
end=$("$AMX" run --worktree --branch bh -- sh -c "$bigplant" </dev/null 2>&1)
rm -f "$XDG_CONFIG_HOME/agentmux/config"
id=$(sid)
w=$("$AMX" sessions --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["project"])')
grep -q planted <<<"$end" && ! bigleft ".git/refs/heads/agentmux/$id" bh && bigtold "$id" bh "$end" &&
	[ "$(git rev-parse "refs/heads/agentmux/$id/bh")" = "$(cat "$w/.tip")" ] &&
	out=$( (ulimit -v 1000000; timeout 20 git branch) </dev/null 2>&1) && grep -q "agentmux/$id/bh" <<<"$out" &&
	ok "with no watch, the end cuts and removes the files too big for a ref, and tells them" ||
	bad "with no watch, files too big for a ref: $(ls -laR ".git/refs/heads/agentmux/$id" 2>&1); $end"
cd "$T" || exit 1

# 14g. The session makes its own branch a symbolic ref to main: the user's next commit in the worktree went
# straight onto main (two worktrees on main, the main tree's index out of step), and the end said nothing.
# The end puts the branch back on the session's last commit (its reflog's), and tells it.
P=$T/symref
new_project
main0=$(git rev-parse main)
end=$("$AMX" run --worktree --branch sy -- sh -c 'echo s >s && git add s && git commit -qm S && git rev-parse HEAD >.tip &&
	c=$(git rev-parse --git-common-dir) && r=$(git symbolic-ref HEAD) && echo "ref: refs/heads/main" >"$c/$r" && echo planted' </dev/null 2>&1)
id=$(sid)
w=$("$AMX" sessions --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["project"])')
grep -q planted <<<"$end" && grep -q "the session made its branch agentmux/$id/sy a symbolic ref to refs/heads/main: .*it was put back on $(cut -c1-12 "$w/.tip")" <<<"$end" &&
	[ "$(git rev-parse "refs/heads/agentmux/$id/sy")" = "$(cat "$w/.tip")" ] && [ -z "$(git for-each-ref --format='%(symref)' "refs/heads/agentmux/$id/")" ] &&
	ok "the session's branch made a symbolic ref to main is told and put back on its last commit" ||
	bad "the branch made a symref (now $(git for-each-ref --format='%(refname) %(symref) %(objectname)' "refs/heads/agentmux/$id/")): $end"
echo u >"$w/u" && git -C "$w" add u && git -C "$w" commit -qm U
[ "$(git rev-parse main)" = "$main0" ] && [ "$(git -C "$w" log -1 --format=%s "refs/heads/agentmux/$id/sy")" = U ] &&
	ok "the user's commit in the worktree lands on the session's branch, not main" ||
	bad "the user's commit in the worktree: main at $(git log -1 --format=%s main), branch at $(git log -1 --format=%s "refs/heads/agentmux/$id/sy")"
cd "$T" || exit 1

# 14h. Besides its branch, the session makes symbolic refs in its ref dir (agentmux/ID/y -> main: git branch
# lists it as a branch, and a commit on it checked out moves main) and leaves git's locks there and in its
# worktree's git dir (the user's git in the worktree then fails with "File exists"). The end removes the
# symbolic refs and tells them, and tells the locks with their paths.
P=$T/symrefs
new_project
main0=$(git rev-parse main)
end=$("$AMX" run --worktree --branch sr -- sh -c 'c=$(git rev-parse --git-common-dir) && r=$(git symbolic-ref HEAD) &&
	d=$c/${r%/*} && echo "ref: refs/heads/main" >"$d/y" && mkdir -p "$d/deep" && echo "ref: refs/heads/main" >"$d/deep/z" &&
	echo "ref: refs/heads/main" >"$d/$(printf "e\033]0;pwn\007")" &&
	touch "$(git rev-parse --git-dir)/index.lock" "$c/$r.lock" && echo planted' </dev/null 2>&1)
id=$(sid)
w=$("$AMX" sessions --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["project"])')
grep -q planted <<<"$end" &&
	grep -q "the session made symbolic refs beside its branch agentmux/$id/sr .*agentmux/$id/y -> refs/heads/main.*they were removed" <<<"$end" &&
	grep -q "agentmux/$id/deep/z -> refs/heads/main" <<<"$end" &&
	[ -z "$(git for-each-ref --format='%(symref)' "refs/heads/agentmux/$id/")" ] &&
	! git branch | grep -q "agentmux/$id/y" &&
	ok "symbolic refs the session made beside its branch are removed and told" ||
	bad "symbolic refs beside the branch (now $(git for-each-ref --format='%(refname) %(symref)' "refs/heads/agentmux/$id/")): $end"
! grep -q "$(printf '\033')" <<<"$end" && grep -q 'e\\033\]0;pwn.* -> refs/heads/main' <<<"$end" &&
	ok "a symbolic ref's name is told quoted" || bad "a symbolic ref's name with an escape: $(cat -v <<<"$end")"
grep -q "the session left git's locks .*worktrees/[^ ]*/index.lock" <<<"$end" &&
	grep -q "the session left git's locks .*refs/heads/agentmux/$id/sr.lock" <<<"$end" &&
	ok "git's locks the session left are told with their paths" || bad "the locks were not told: $end"
[ "$(git rev-parse main)" = "$main0" ] && ok "main is untouched" || bad "main moved"
cd "$T" || exit 1

# 14b. While the session runs: a link made in its branch's ref dir, in a subdir made there, and in its
# worktree's git dir (from the host: the jail cannot, case 14) is removed as soon as agentmux sees it (the
# user's git branch, run meanwhile in the main tree, read /dev/zero through one until the session ended),
# and told at the end; 300 dirs the jail made and removed first do not use up the watch (each held its
# slot: the 257th dir was not watched).
P=$T/live
new_project
held lv "$T/live.out" 'r=$(git rev-parse --symbolic-full-name HEAD) && d=$(git rev-parse --git-common-dir)/${r%/*} &&
	for i in $(seq 300); do mkdir "$d/c$i" && rmdir "$d/c$i"; done && mkdir -p "$d/new/deeper" && echo DIRS-MADE'
d=$c/${r%/*}
ln -s /dev/zero "$d/zz" && ln -s /dev/zero "$d/new/deeper/zz" && ln -s /dev/zero "$a/zz" ||
	bad "the host could not plant for case 14b"
i=0
while [ $i -lt 100 ] && { [ -L "$d/zz" ] || [ -L "$d/new/deeper/zz" ] || [ -L "$a/zz" ]; }; do sleep 0.1; i=$((i+1)); done
[ $i -lt 100 ] && ok "links made in a running session's ref and git dirs are removed as they come" ||
	bad "links in a running session's git dirs stayed: $(ls -la "$d" "$a")"
out=$( (ulimit -v 4000000; timeout 20 git branch) </dev/null 2>&1) && grep -q "agentmux/.*/lv" <<<"$out" &&
	kill -0 "$bgpid" 2>/dev/null &&
	ok "the user's git branch works while a session whose ref dir held links runs" ||
	bad "git branch while the session runs: $out"
release
id=$(sid)
end=$(cat "$T/live.out")
grep -q DIRS-MADE <<<"$end" &&
	grep -q "while it ran, the session made links .*refs/heads/agentmux/$id/zz (a link to /dev/zero)" <<<"$end" &&
	grep -q "refs/heads/agentmux/$id/new/deeper/zz (a link to /dev/zero)" <<<"$end" &&
	grep -q "worktrees/live/zz (a link to /dev/zero)" <<<"$end" &&
	[ -z "$(find .git/refs .git/logs .git/worktrees ! -type f ! -type d 2>/dev/null)" ] &&
	ok "links made in a running session's ref and git dirs are told at the end" ||
	bad "links in a running session's git dirs: $end"

# 14d. Dirs the session makes in its ref dir are watched through a descriptor each: under a limit of 256
# open files, 300 of them took every descriptor agentmux had, and its end read the repository as deleted
# (a false alarm, and the end's checks undone). The watches of all sessions hold a quarter of the limit at
# most; the end is right, and the commit made after the dirs is the branch's.
if command -v prlimit >/dev/null; then
	P=$T/fds
	new_project
	end=$(prlimit --nofile=256:256 "$AMX" run --worktree --branch fd -- sh -c 'c=$(git rev-parse --git-common-dir) &&
		r=$(git rev-parse --symbolic-full-name HEAD) && d="$c/${r%/*}" && for i in $(seq 300); do mkdir "$d/c$i"; done &&
		sleep 1 && echo g >g && git add g && git commit -qm G && echo committed' </dev/null 2>&1)
	rc=$?
	id=$(sid)
	[ "$rc" = 0 ] && grep -q committed <<<"$end" && ! grep -q "deleted the git repository" <<<"$end" &&
		[ "$(git log -1 --format=%s "refs/heads/agentmux/$id/fd" 2>&1)" = G ] &&
		ok "300 dirs made in the ref dir under 256 open files: the end is right, the commit is the branch's" ||
		bad "300 dirs under 256 open files (exit $rc, branch: $(git log -1 --format=%s "refs/heads/agentmux/$id/fd" 2>&1)): $end"
	cd "$T" || exit 1
fi

# 14c. (As an ordinary user: inotify instances are counted by user, and root's are shared with every test
# running beside this one.) With none of the user's 128 left (a jail can use them up), the session's git
# dirs are not watched: the end says so, and its walk still removes the link made there.
if [ "${1:-}" = --as-user ]; then
	P=$T/nowatch
	new_project
	rm -f "$T/held" "$T/release"
	python3 -c '
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
fds = []
while len(fds) < 100000:
    fd = libc.inotify_init1(0)
    if fd < 0:
        break
    fds.append(fd)
with open(sys.argv[1], "w") as f:
    f.write("%d %d" % (len(fds), ctypes.get_errno()))
for _ in range(1200):
    if os.path.exists(sys.argv[2]):
        break
    time.sleep(0.1)
' "$T/held" "$T/release" &
	bgpid=$!
	for _ in $(seq 100); do [ -s "$T/held" ] && break; sleep 0.1; done
	hold=$bgpid
	held nw "$T/nw.out" 'echo started'
	ln -s /dev/zero "$c/${r%/*}/zz" || bad "the host could not plant for case 14c"
	release
	end=$(cat "$T/nw.out")
	bgpid=$hold
	touch "$T/release"
	wait "$bgpid"
	bgpid=
	id=$(sid)
	# (errno 24: EMFILE, the user's instances used up.)
	case $(cat "$T/held") in *" 24") ;; *) bad "the user's inotify instances were not used up: $(cat "$T/held")" ;; esac
	grep -q started <<<"$end" &&
		grep -q "could not be watched while it ran (no inotify instance or watch was left" <<<"$end" &&
		grep -q "refs/heads/agentmux/$id/zz (a link to /dev/zero)" <<<"$end" &&
		[ -z "$(find .git/refs .git/logs .git/worktrees ! -type f ! -type d 2>/dev/null)" ] &&
		ok "with no inotify left, the end says the git dirs were not watched, and removes the link" ||
		bad "no inotify left: $end"
	cd "$T" || exit 1
fi

# 15. A session in the main tree makes refs git takes before a worktree session's branch named short
# (refs/agentmux/ID/NAME, then refs/tags/agentmux/ID/NAME: git log or git merge agentmux/ID/NAME took the
# session's commit, with only git's "ambiguous" warning); one loose, one written into packed-refs. The end
# tells both in red; undo --refs deletes both; a legacy snapshot ref (refs/agentmux/sessions/N) is not told.
# .git/agentmux (mode 0555: a user cannot move it to another dir whole, so it is copied) is moved into the
# session's quarantine.
P=$T/shadow
new_project
"$AMX" run --worktree --branch sh -- sh -c 'echo w >w && git add w && git commit -qm W' </dev/null >/dev/null 2>&1 ||
	bad "the worktree session for the shadow case failed"
wid=$(sid)
wtip=$(git rev-parse "refs/heads/agentmux/$wid/sh")
git update-ref refs/agentmux/sessions/99 HEAD
# (refs/agentmux is read-only in the jail where it exists, as here: the first goes into packed-refs.)
# (The jail sees the repository's .git at /.agentmux-git, whose top is read only there: its own .git
# holds links to its dirs and a copy of packed-refs, merged back. .git/agentmux is made by the host
# beside the session, as a process of the user's could.)
rm -f .plant-now .planted
(i=0; while [ ! -e .plant-now ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
	mkdir -p ".git/agentmux/$wid" && cp .shval ".git/agentmux/$wid/sh" &&
	chmod 555 ".git/agentmux/$wid" .git/agentmux; touch .planted) &
hpid=$!
end=$("$AMX" run -- sh -c 'echo evil >e && git add e && git commit -qm EVIL && h=$(git rev-parse HEAD) &&
	git update-ref refs/tags/agentmux/'"$wid"'/sh "$h" && echo "$h refs/agentmux/'"$wid"'/sh" >>.git/packed-refs &&
	{ mkdir -p /.agentmux-git/agentmux 2>/dev/null && echo TOP-WRITTEN; }
	git rev-parse HEAD~1 >.shval && touch .plant-now; i=0
	while [ ! -e .planted ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done; rm -f .plant-now .planted .shval
	git reset -q --hard HEAD~1 && echo planted' </dev/null 2>&1)
wait "$hpid"
grep -q TOP-WRITTEN <<<"$end" && bad "the jail made a dir at the top of the sealed git dir: $end"
sh_id=$(sid)
grep -q planted <<<"$end" || bad "the session did not plant its refs: $end"
grep -q "the session made refs/agentmux/$wid/sh in .*git takes it before a worktree session's branch" <<<"$end" &&
	grep -q "the session made refs/tags/agentmux/$wid/sh in .*'agentmux undo $sh_id --refs' deletes it" <<<"$end" &&
	! grep -q "refs/agentmux/sessions/99" <<<"$end" &&
	grep -q "/.git/agentmux was there .*it was moved to .*/quarantine/history-0/[0-9]*-agentmux-quarantine\.[0-9a-f]*\.d" <<<"$end" &&
	[ ! -e .git/agentmux ] && ! grep -q "could not be moved" <<<"$end" &&
	[ -z "$(ls -d .git/agentmux* 2>/dev/null)" ] &&
	qf=$(find "$XDG_DATA_HOME/agentmux/sessions/$sh_id/quarantine/history-0" -path '*-agentmux-quarantine.*' -type f \
		\( -name sh -o -name '*-sh' \) | head -n 1) && [ -n "$qf" ] && [ "$(cat "$qf")" = "$(git rev-parse HEAD)" ] &&
	ok "the end tells refs that shadow a worktree branch's short name, loose, packed and .git/agentmux/ID/NAME (moved aside)" ||
	bad "the end did not tell the shadowing refs: $end"
# agentmux itself names the branch in full: not "merged" (the file names main's commit, which is; gc
# would have removed the unmerged branch).
"$AMX" sessions | grep "agentmux/$wid/sh" | grep -q unmerged &&
	ok "sessions still calls the shadowed branch unmerged" ||
	bad "sessions took the shadowing ref for the branch: $("$AMX" sessions | grep "agentmux/$wid/sh")"
out=$("$AMX" undo "$sh_id" --refs 2>&1)
[ "$(git rev-parse "agentmux/$wid/sh" 2>/dev/null)" = "$wtip" ] &&
	[ -z "$(git for-each-ref "refs/agentmux/$wid" "refs/tags/agentmux")" ] &&
	ok "undo --refs deletes them: the short name is the worktree branch again" ||
	bad "after undo --refs, agentmux/$wid/sh is $(git rev-parse "agentmux/$wid/sh" 2>&1): $out"
cd "$T" || exit 1

# 8. The same links behind more entries than the end looks at (100,000): logs/ in the worktree's git dir
# filled with files by the jail, the links made from the host. Looked for by name first, the reflog dir
# with a count of its own; the cut told.
P=$T/n
new_project
echo victim >"$T/victim3" && chmod 666 "$T/victim3"
held nn "$T/nn.out" 'a=$(git rev-parse --absolute-git-dir) && mkdir -p "$a/logs" &&
	(cd "$a/logs" && seq 1 100100 | xargs touch) && echo filled'
rm -f "$a/logs/HEAD" && ln -s "$T/victim3" "$a/logs/HEAD" && rm -f "$c/logs/$r" && ln -s "$T/victim3" "$c/logs/$r" ||
	bad "the host could not plant for case 8"
release
end=$(cat "$T/nn.out")
id=$(sid)
grep -q filled <<<"$end" || bad "the session did not fill its logs: $end"
grep -q "logs/HEAD (a link to $T/victim3)" <<<"$end" && grep -q "logs/refs/heads/agentmux/$id/nn (a link to $T/victim3)" <<<"$end" &&
	ok "links behind 100,000 entries in the worktree's git dir are told" || bad "the links were not told: $end"
grep -q "the look stopped after 100000 entries" <<<"$end" && ok "the cut walk is told" || bad "the cut walk was not told: $end"
echo x >"$w/x" && git -C "$w" add x && git -C "$w" commit -qm x
[ "$(cat "$T/victim3")" = victim ] && ok "a commit in the worktree writes nothing through links behind 100,000 entries" ||
	bad "the host file took the worktree's reflog lines: $(cat "$T/victim3")"

# 9. A session commits files it never wrote: a loose object of SIZE bytes of 'a' takes a few kilobytes, so
# neither the jail's file_size nor its write budget sees SIZE; merge would have the user's git write it into
# the main tree, under as many names as the session likes. A file over file_size is refused, and files
# together past the disk's free space above disk_reserve; nothing is written.
# The jail's shell text that sets $id to a new loose object of SIZE bytes of 'a' (a few kilobytes on disk).
mkblob() { # SIZE
	printf '%s' 'id=$(python3 -c "
import hashlib, os, subprocess, sys, zlib
n = int(sys.argv[1]); hdr = b\"blob %d\0\" % n; z = b\"a\" * (1 << 20)
h = hashlib.sha1(hdr); c = zlib.compressobj(9); out = [c.compress(hdr)]
for i in range(n >> 20): h.update(z); out.append(c.compress(z))
out.append(c.flush()); oid = h.hexdigest()
d = subprocess.check_output([\"git\", \"rev-parse\", \"--git-path\", \"objects\"]).decode().strip()
os.makedirs(d + \"/\" + oid[:2], exist_ok=True)
open(d + \"/\" + oid[:2] + \"/\" + oid[2:], \"wb\").write(b\"\".join(out)); print(oid)
" '"$1"')'
}
blob_session() { # BRANCH SIZE NAME...
	b=$1 size=$2
	shift 2
	"$AMX" run --worktree --branch "$b" -- sh -c "$(mkblob "$size")"' && for f in '"$*"'; do
	git update-index --add --cacheinfo 100644,$id,$f; done && git commit -qm blobs && echo committed' </dev/null 2>&1
}
P=$T/b
new_project
head0=$(git rev-parse HEAD)
printf '[limits]\nfile_size = 32M\n' >"$XDG_CONFIG_HOME/agentmux/config"
out=$(blob_session big $((48 << 20)) big.bin small.txt)
grep -q committed <<<"$out" || bad "the session did not commit its blob: $out"
id=$(sid)
for how in "" --squash --apply; do
	out=$("$AMX" merge "$id" $how 2>&1) && bad "merge $how of a file over file_size went through: $out"
	grep -q "larger than \[limits\] file_size (32M).*big.bin (48M)" <<<"$out" && [ ! -e big.bin ] &&
		[ "$(git rev-parse HEAD)" = "$head0" ] && [ -z "$(git status --porcelain --untracked-files=no)" ] &&
		ok "merge $how refuses a file over file_size the session never wrote" ||
		bad "merge $how did not refuse a file over file_size: $out; $(ls -la)"
done
out=$(blob_session many $((1 << 20)) a1 a2 a3 a4)
grep -q committed <<<"$out" || bad "the session did not commit its blobs: $out"
id=$(sid)
printf '[limits]\nfile_size = 32M\ndisk_reserve = 1000T\n' >"$XDG_CONFIG_HOME/agentmux/config"
out=$("$AMX" merge "$id" 2>&1) && bad "a merge past the disk's free space went through: $out"
grep -q "would write 4.0M into $P (4 files), more than its disk has free above \[limits\] disk_reserve" <<<"$out" &&
	[ ! -e a1 ] && ok "merge refuses files past the disk's free space above disk_reserve" ||
	bad "merge did not refuse files past the disk's free space: $out"
rm -f "$XDG_CONFIG_HOME/agentmux/config"
out=$("$AMX" merge "$id" 2>&1) && [ "$(wc -c <a4)" = $((1 << 20)) ] && ok "the same merge goes through with room" ||
	bad "the merge with room failed: $out"

# 10. The same file the session never wrote, in a discarded session that restore brings back: git would
# check the branch out into the data dir. Refused before anything is made; with room it comes back.
printf '[limits]\nfile_size = 32M\n' >"$XDG_CONFIG_HOME/agentmux/config"
out=$(blob_session rst $((40 << 20)) big.bin)
grep -q committed <<<"$out" || bad "the session did not commit its blob: $out"
id=$(sid)
w=$("$AMX" sessions --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["project"])')
out=$("$AMX" discard "$id" --yes 2>&1) || bad "discard failed: $out"
out=$("$AMX" restore "$id" 2>&1) && bad "restore of a file over file_size went through: $out"
grep -q "restoring agentmux/$id/rst at [0-9a-f]* would write 1 file larger than \[limits\] file_size (32M).*big.bin (40M)" <<<"$out" &&
	[ ! -e "$w" ] && ok "restore refuses a file over file_size the session never wrote" ||
	bad "restore did not refuse a file over file_size: $out; $(ls -la "$w" 2>&1)"
rm -f "$XDG_CONFIG_HOME/agentmux/config"
out=$("$AMX" restore "$id" 2>&1) && [ -d "$w" ] && ok "the same restore goes through with room" ||
	bad "the restore with room failed: $out"

# 11. The same file, while the session still runs (merge is allowed then): the session flips its branch
# between a small commit and one that adds the file, so that the checks see the one and git merges the
# other. The checks and the merge take one commit, read once: the file never reaches the main tree.
printf '[limits]\nfile_size = 32M\n' >"$XDG_CONFIG_HOME/agentmux/config"
P=$T/race
new_project
head0=$(git rev-parse HEAD)
"$AMX" run --worktree --branch race -- sh -c 'echo b >b.txt && git add b.txt && git commit -qm small &&
	small=$(git rev-parse HEAD) && '"$(mkblob $((44 << 20)))"' && git update-index --add --cacheinfo 100644,$id,big.bin && git commit -qm big &&
	big=$(git rev-parse HEAD) && b=$(git symbolic-ref HEAD) && echo "$big" >.big && n=0 &&
	while [ ! -e .stop ] && [ $n -lt 100000 ]; do git update-ref "$b" "$small"; git update-ref "$b" "$big"; n=$((n + 1)); done' \
	</dev/null >"$T/race.out" 2>&1 &
bgpid=$!
n=0
until w=$(ls -d "$XDG_DATA_HOME"/agentmux/worktrees/*/race 2>/dev/null) && [ -s "$w/.big" ] &&
	git cat-file -e "$(cat "$w/.big"):big.bin" 2>/dev/null || [ $n -ge 600 ]; do sleep 0.2; n=$((n + 1)); done
git cat-file -e "$(cat "$w/.big" 2>/dev/null):big.bin" 2>/dev/null || bad "the racing session's commit did not reach the host: $(cat "$T/race.out")"
id=$("$AMX" sessions --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')
for i in 1 2 3 4 5 6 7 8 9 10 11 12; do
	"$AMX" merge "$id" >/dev/null 2>&1
	[ -e big.bin ] && break
	git reset -q --hard "$head0"
done
[ ! -e big.bin ] && ok "a branch flipped while merge checks it does not bring a file over file_size" ||
	bad "a branch flipped during the merge brought big.bin ($(wc -c <big.bin) bytes) into the main tree at try $i"
touch "$w/.stop"
wait "$bgpid"
bgpid=
rm -f "$XDG_CONFIG_HOME/agentmux/config"

# 7. A session in the main tree, started while the project had no .git/worktrees, and a worktree session
# started beside it: the first must not write the second's git dir (.git/worktrees/NAME), whose logs/HEAD made
# a link to a host file takes the user's next commit in the worktree, and whose commondir sends the user's git
# elsewhere. The main tree's session plants once the worktree session has ended, and waits while the user
# commits in the worktree.
P=$T/c
new_project
echo victim >"$T/victim2" && chmod 666 "$T/victim2"
"$AMX" run -- sh -c 'wait_for() { n=0; while [ ! -e "$1" ] && [ $n -lt 600 ]; do sleep 0.2; n=$((n + 1)); done; }
	touch .started; wait_for .go
	for a in .git/worktrees/* /.agentmux-git/worktrees/*; do
		mkdir -p "$a/logs" 2>/dev/null; rm -f "$a/logs/HEAD" 2>/dev/null
		ln -s '"$T"'/victim2 "$a/logs/HEAD" 2>/dev/null && echo LOG-PLANTED
	done; touch .planted; wait_for .committed
	for a in .git/worktrees/* /.agentmux-git/worktrees/*; do echo /nowhere >"$a/commondir" 2>/dev/null && echo COMMONDIR-WRITTEN; done
	touch .planted2; wait_for .done' </dev/null >"$T/main-session.out" 2>&1 &
bgpid=$!
wait_for() { n=0; while [ ! -e "$1" ] && [ $n -lt 600 ]; do sleep 0.2; n=$((n + 1)); done; }
wait_for .started
out=$("$AMX" run --worktree --branch cc -- sh -c 'echo b >f && git commit -qam B' </dev/null 2>&1) ||
	bad "the worktree session beside a running one failed: $out"
w=$(ls -d "$XDG_DATA_HOME"/agentmux/worktrees/*/c)
touch .go && wait_for .planted
echo x >"$w/x" && git -C "$w" add x && git -C "$w" commit -qm x ||
	bad "the user's commit in the worktree failed beside the main tree's session"
[ "$(cat "$T/victim2")" = victim ] && ok "a session in the main tree cannot plant a link in a worktree session's git dir" ||
	bad "a session in the main tree planted a link in the worktree's git dir; the host file took: $(cat "$T/victim2")"
touch .committed && wait_for .planted2
git -C "$w" status >/dev/null 2>&1 && ok "a session in the main tree cannot rewrite a worktree session's commondir" ||
	bad "a session in the main tree rewrote the worktree's commondir: $(git -C "$w" status 2>&1 | head -3)"
touch .done
wait "$bgpid"
bgpid=
grep -q 'PLANTED\|WRITTEN' "$T/main-session.out" && bad "the main tree's session wrote the worktree's git dir: $(cat "$T/main-session.out")"
cd "$T" || exit 1

# 12. A session in the main tree beside a worktree session must not write that session's ref and reflog
# dirs (refs/heads/agentmux/ID, logs/refs/heads/agentmux/ID, in the shared git dir): its branch's reflog
# made a link to a host file takes the user's next commit in the worktree (host git, after every jail is
# gone), its branch moved hands the user's merge another history; nor rename a dir above them (.git/refs,
# refs/heads, .git/logs, logs/refs, logs/refs/heads) away and put a copy of its own in its place. Tried by a
# main-tree session started before the worktree session, planting once it has ended, and by one started
# after it. A user branch named agentmux (loose, or packed only with no reflog) is left to git: a main-tree
# session commits on it; so does one in a project with no .git/logs.
P=$T/rl
new_project
echo victim >"$T/victim4" && chmod 666 "$T/victim4"
# The jail's text that tries every write; each one that goes through prints a line in capitals.
# (The jail sees the repository's .git at /.agentmux-git, its own .git holding links there: the
# renames are tried there, where they would reach the repository.)
plant='b=$(cd .git/refs/heads && ls -d agentmux/*/* 2>/dev/null | head -1); echo "BRANCH $b"
	m=$(git rev-parse refs/heads/main)
	g=/.agentmux-git
	try() {
		r=$g/logs/refs/heads/$b
		{ rm -f "$r" && ln -s '"$T"'/victim4 "$r"; } 2>/dev/null && echo "LINK-PLANTED $1"
		git update-ref "refs/heads/$b" "$m" 2>/dev/null && echo "MOVED $1"
		echo "$m" 2>/dev/null >"$g/refs/heads/$b" && echo "WRITTEN $1"
	}
	try in-place
	for d in $g/refs/heads/agentmux $g/refs/heads $g/refs $g/logs/refs/heads/agentmux \
		$g/logs/refs/heads $g/logs/refs $g/logs; do
		mv "$d" "$d.away" 2>/dev/null && cp -a "$d.away" "$d" && echo "RENAMED $d" && try "$d"
	done; echo TRIED'
wait_for() { n=0; while [ ! -e "$1" ] && [ $n -lt 600 ]; do sleep 0.2; n=$((n + 1)); done; }
"$AMX" run -- sh -c 'wait_for() { n=0; while [ ! -e "$1" ] && [ $n -lt 600 ]; do sleep 0.2; n=$((n + 1)); done; }
	touch .started; wait_for .go; '"$plant"'; touch .planted; wait_for .done' </dev/null >"$T/rl-main.out" 2>&1 &
bgpid=$!
wait_for .started
out=$("$AMX" run --worktree --branch rl -- sh -c 'echo b >f && git commit -qam B' </dev/null 2>&1) ||
	bad "the worktree session beside a running main-tree session failed: $out"
id=$(sid)
w=$(ls -d "$XDG_DATA_HOME"/agentmux/worktrees/*/rl)
wb=refs/heads/agentmux/$id/rl
tip=$(git rev-parse "$wb")
touch .go && wait_for .planted
grep -q "BRANCH agentmux/$id/rl" "$T/rl-main.out" && grep -q TRIED "$T/rl-main.out" ||
	bad "the main-tree session did not try its writes: $(cat "$T/rl-main.out")"
# wrote: the main-tree session OUT's writes that went through, if any (none is ok).
wrote() { # OUT
	if grep -q 'PLANTED\|MOVED\|WRITTEN\|RENAMED' "$1"; then
		bad "a main-tree session wrote the worktree session's ref or reflog dirs: $(grep 'PLANTED\|MOVED\|WRITTEN\|RENAMED' "$1" | tr '\n' ' ')"
	else
		ok "a main-tree session cannot link, move, or rename away the worktree session's branch and reflog"
	fi
}
wrote "$T/rl-main.out"
[ "$(git rev-parse "$wb")" = "$tip" ] && ok "the worktree session's branch is where the session left it" ||
	bad "the worktree session's branch was moved: $(git rev-parse "$wb") (the session left $tip)"
echo x >"$w/x" && git -C "$w" add x && git -C "$w" commit -qm x ||
	bad "the user's commit in the worktree failed beside the main-tree session"
[ "$(cat "$T/victim4")" = victim ] && ok "the user's commit in the worktree writes no host file the main-tree session named" ||
	bad "the host file took the worktree's reflog line: $(cat "$T/victim4")"
[ "$(git rev-parse "$wb~1")" = "$tip" ] && ok "the user's commit in the worktree went on from the session's" ||
	bad "the user's commit in the worktree went on from $(git rev-parse "$wb~1"), not $tip"
touch .done
wait "$bgpid"
bgpid=
rm -f .started .go .planted .done
[ "$(stat -c %a .git/refs/heads/agentmux)" = 755 ] && ok "refs/heads/agentmux is made 0755" ||
	bad "refs/heads/agentmux was made $(stat -c %a .git/refs/heads/agentmux 2>&1)"
tip=$(git rev-parse "$wb")
"$AMX" run -- sh -c "$plant" </dev/null >"$T/rl-after.out" 2>&1
grep -q "BRANCH agentmux/$id/rl" "$T/rl-after.out" && grep -q TRIED "$T/rl-after.out" ||
	bad "the later main-tree session did not try its writes: $(cat "$T/rl-after.out")"
wrote "$T/rl-after.out"
echo y >"$w/y" && git -C "$w" add y && git -C "$w" commit -qm y &&
	[ "$(git rev-parse "$wb~1")" = "$tip" ] && [ "$(cat "$T/victim4")" = victim ] &&
	ok "after a main-tree session started later the user's commit in the worktree is the user's alone" ||
	bad "after a later main-tree session: the branch $(git rev-parse "$wb~1") (was $tip), the host file: $(cat "$T/victim4")"
ls -d .git/*.away .git/*/*.away .git/*/*/*.away 2>/dev/null | grep -q . &&
	bad "renamed git dirs were left: $(ls -d .git/*.away .git/*/*.away .git/*/*/*.away 2>/dev/null)"
# A user branch named agentmux: no dir is made or bound where git keeps it, loose or packed only.
for how in loose packed; do
	P=$T/ab-$how
	new_project
	git switch -q -c agentmux
	[ $how = packed ] && git pack-refs --all && rm -f .git/logs/refs/heads/agentmux
	out=$("$AMX" run -- sh -c 'echo c >g && git add g && git commit -qm onab && echo COMMITTED' </dev/null 2>&1)
	grep -q COMMITTED <<<"$out" && [ "$(git log -1 --format=%s agentmux)" = onab ] && [ ! -d .git/refs/heads/agentmux ] &&
		ok "a main-tree session commits on the user's branch agentmux ($how)" ||
		bad "a main-tree session could not commit on the user's branch agentmux ($how): $out"
	[ $how = loose ] || [ ! -d .git/logs/refs/heads/agentmux ] ||
		bad "a dir was made where the user's branch agentmux keeps its reflog ($how)"
	# The dirs above the user's branch are mount points all the same: none renamed away.
	out=$("$AMX" run -- sh -c 'cd /.agentmux-git && for d in refs/heads refs logs/refs/heads logs/refs logs; do
		mv "$d" "$d.away" 2>/dev/null && echo "RENAMED $d"; done; echo TRIED' </dev/null 2>&1)
	grep -q TRIED <<<"$out" && ! grep -q RENAMED <<<"$out" &&
		ok "with a user branch agentmux the dirs above it cannot be renamed away ($how)" ||
		bad "with a user branch agentmux a main-tree session renamed git dirs away ($how): $out"
done
# With the user's branch agentmux (nothing bound there), a main-tree session deletes it and makes its
# reflog a link to a host dir; a worktree session started meanwhile wrote its branch's first reflog line
# through the link (its dirs were checked only after git worktree add). It is refused now, before git runs.
# The jail's link is refused where Landlock is (its .git is sealed); made from the host meanwhile, as on a
# kernel without it, the worktree session is refused all the same.
P=$T/ab-link
new_project
git branch agentmux
mkdir -p "$T/evil-logs"
"$AMX" run -- sh -c 'git branch -D agentmux >/dev/null 2>&1; rm -f /.agentmux-git/logs/refs/heads/agentmux &&
	{ ln -s '"$T"'/evil-logs /.agentmux-git/logs/refs/heads/agentmux && echo PLANTED || echo REFUSED; }; touch .planted
	n=0; while [ ! -e .go ] && [ $n -lt 600 ]; do sleep 0.2; n=$((n + 1)); done' </dev/null >"$T/ab-link.out" 2>&1 &
bgpid=$!
wait_for .planted
if landlock && grep -q REFUSED "$T/ab-link.out"; then
	ok "a main-tree session cannot make a reflog dir a link"
	rm -rf .git/logs/refs/heads/agentmux
	ln -s "$T/evil-logs" .git/logs/refs/heads/agentmux
elif landlock; then
	bad "a main-tree session made a reflog dir a link: $(cat "$T/ab-link.out")"
fi
out=$("$AMX" run --worktree --branch lk -- true </dev/null 2>&1) &&
	bad "a worktree session started with its reflog dir a link: $out"
grep -q "cannot make the branch's dirs" <<<"$out" && ok "a worktree session whose reflog dir is a link is refused before git runs" ||
	bad "the worktree session was not refused for its reflog dir: $out"
[ -z "$(ls -A "$T/evil-logs")" ] && ok "a worktree session writes no reflog line through a link a main-tree session made" ||
	bad "the worktree session's reflog went through the link: $(ls -R "$T/evil-logs")"
touch .go
wait "$bgpid"
bgpid=
landlock || grep -q PLANTED "$T/ab-link.out" || bad "the main-tree session could not plant the link: $(cat "$T/ab-link.out")"
rm -f .planted .go
# A project with no .git/logs; then one whose logs/refs/heads/agentmux is a link, refused.
P=$T/nologs
new_project
rm -rf .git/logs
out=$("$AMX" run -- sh -c 'echo c >g && git add g && git commit -qm nologs && echo COMMITTED' </dev/null 2>&1)
grep -q COMMITTED <<<"$out" && [ "$(git log -1 --format=%s)" = nologs ] &&
	ok "a main-tree session runs and commits in a project with no .git/logs" ||
	bad "a main-tree session failed in a project with no .git/logs: $out"
[ "$(stat -c %a .git/logs/refs/heads/agentmux)" = 755 ] && ok "the jail makes logs/refs/heads/agentmux 0755 (agentmux's umask is 077)" ||
	bad "logs/refs/heads/agentmux was made $(stat -c %a .git/logs/refs/heads/agentmux 2>&1)"
[ "$(stat -c %a .git/worktrees)" = 755 ] && ok "the jail makes .git/worktrees 0755" ||
	bad ".git/worktrees was made $(stat -c %a .git/worktrees 2>&1)"
# The last worktree branch deleted on the host (discard) while a main-tree session runs: git removed the
# then empty agentmux dirs, the running jail's read-only mounts went with them, and the jail could make them
# again (a link where the next worktree session's ref dir would be). A file of agentmux's keeps them.
"$AMX" run -- sh -c 'n=0; touch .started; while [ ! -e .go ] && [ $n -lt 600 ]; do sleep 0.2; n=$((n + 1)); done
	mkdir .git/refs/heads/agentmux/9 2>/dev/null && echo MADE-REF
	mkdir .git/logs/refs/heads/agentmux/9 2>/dev/null && echo MADE-LOG; echo TRIED' </dev/null >"$T/keep.out" 2>&1 &
bgpid=$!
wait_for .started
git branch agentmux/1/x && git branch -q -D agentmux/1/x || bad "the branch agentmux/1/x could not be made and deleted"
[ -d .git/refs/heads/agentmux ] && [ -d .git/logs/refs/heads/agentmux ] &&
	ok "deleting the last agentmux branch on the host leaves the agentmux dirs (git reads no ref from .agentmux-keep)" ||
	bad "git removed the agentmux dirs with the last branch under them"
touch .go
wait "$bgpid"
bgpid=
grep -q TRIED "$T/keep.out" && ! grep -q MADE "$T/keep.out" &&
	ok "a running main-tree session cannot make a ref dir there after the host deleted the last branch" ||
	bad "a main-tree session made a ref dir after the host deleted the last agentmux branch: $(cat "$T/keep.out")"
[ -z "$(git for-each-ref refs/heads/agentmux)" ] && git status >/dev/null 2>&1 &&
	ok "git sees no ref in .agentmux-keep" || bad "git took .agentmux-keep for a ref: $(git for-each-ref refs/heads/agentmux)"
rm -f .started .go
rm -rf .git/logs/refs/heads/agentmux && mkdir -p "$T/elsewhere" && ln -s "$T/elsewhere" .git/logs/refs/heads/agentmux
out=$("$AMX" run -- true </dev/null 2>&1) && bad "a session started with logs/refs/heads/agentmux a link: $out"
grep -q "logs/refs/heads/agentmux is a symlink" <<<"$out" && ok "logs/refs/heads/agentmux a link is refused" ||
	bad "logs/refs/heads/agentmux a link was not refused as such: $out"
cd "$T" || exit 1

# 13. A worktree session's branch that the user's git gc packed has no loose file: a session in the main
# tree could point its packed-refs line at a commit of its own (nothing was said, and 'merge' merged it),
# or make HEAD a link to that branch (the user's next commit moves it). The end tells both in red (the
# branch is not where its reflog says; HEAD links to a worktree branch); merge refuses the moved branch.
P=$T/pk
new_project
out=$("$AMX" run --worktree --branch pk -- sh -c 'echo b >g && git add g && git commit -qm B' </dev/null 2>&1) ||
	bad "the worktree session for case 13 failed: $out"
id=$(sid)
pb=refs/heads/agentmux/$id/pk
tip=$(git rev-parse "$pb")
git pack-refs --all && [ ! -e ".git/$pb" ] || bad "the worktree branch was not packed"
out=$("$AMX" run -- sh -c 'c=$(git commit-tree -m evil HEAD^{tree}) &&
	sed -i "s#^[0-9a-f]* '"$pb"'\$#$c '"$pb"'#" .git/packed-refs && git rev-parse '"$pb"' && echo MOVED' </dev/null 2>&1)
case $out in *MOVED*) ;; *) bad "the main-tree session could not try the packed-refs move: $out" ;; esac
if [ "$(git rev-parse "$pb")" != "$tip" ]; then
	case $out in *"a worktree session's branch, is at"*"its reflog"*"git update-ref"*) ok "a worktree branch moved through packed-refs is told in red" ;;
	*) bad "a worktree branch moved through packed-refs was not told: $out" ;; esac
	before=$(git rev-parse main)
	out=$("$AMX" merge "$id" 2>&1) && bad "merge took a branch moved through packed-refs: $out"
	case $out in *"its reflog"*"something else moved it"*) ok "merge refuses a branch not where its reflog says" ;;
	*) bad "merge did not say why it refused the moved branch: $out" ;; esac
	[ "$(git rev-parse main)" = "$before" ] || bad "main moved though the merge refused"
	git update-ref "$pb" "$tip" || exit 1
	out=$("$AMX" merge "$id" 2>&1) && ok "merge takes the branch once it is back where its reflog says" ||
		bad "merge refused the branch put back: $out"
else
	ok "a main-tree session cannot move a packed worktree branch here"
fi
out=$("$AMX" run -- sh -c 'git symbolic-ref HEAD '"$pb"' && echo LINKED' </dev/null 2>&1)
case $out in *LINKED*"a link to"*"a worktree session's branch"*) ok "HEAD made a link to a worktree branch is told in red" ;;
*) bad "HEAD made a link to a worktree branch was not told: $out" ;; esac
out=$("$AMX" undo last --refs 2>&1) || bad "undo --refs after HEAD was linked failed: $out"
[ "$(git symbolic-ref HEAD)" = refs/heads/main ] && ok "undo --refs puts HEAD back on main" ||
	bad "HEAD is $(git symbolic-ref HEAD 2>&1) after undo --refs: $out"
cd "$T" || exit 1

# 14i. The session crafts its worktree's index with entries git's checkout writes though git never adds
# them (.git/hooks/post-checkout, ../../x; hostile review 8), after writing objectformat = sha256 into its
# worktree's git dir's config in a SHA-1 repository (agentmux read the id length there, and so could not
# read the index, and left it): the end takes it away and tells it; the user's git checkout -- . in the
# worktree writes none of them, and git reset there makes the index again.
P=$T/idx
new_project
cp "$CRAFT" .craft.py && git add .craft.py && git commit -qm craft
end=$("$AMX" run --worktree --branch ix -- sh -c 'printf "[extensions]\n\tobjectformat = sha256\n" \
	>>"$(git rev-parse --git-dir)/config"; /usr/bin/python3 .craft.py plain .git/hooks/post-checkout ../../escaped-wt' \
	</dev/null 2>&1)
w=$("$AMX" sessions --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["project"])')
grep -q "CRAFTED plain" <<<"$end" &&
	grep -q "left an index in .*worktrees/.* that git's checkout could use against you (entries .*\.git/hooks/post-checkout.*moved to" <<<"$end" &&
	ok "a worktree's crafted index is taken away at the end, told" || bad "the worktree's crafted index: $end"
(cd "$w" && git checkout -- . 2>/dev/null)
[ -f "$w/.git" ] && [ ! -e "$(dirname "$(dirname "$w")")/escaped-wt" ] &&
	ok "the user's git checkout -- . in the worktree writes none of the crafted entries" ||
	bad "git checkout -- . in the worktree wrote the crafted entries: $(ls -la "$w" "$(dirname "$(dirname "$w")")")"
(cd "$w" && git reset -q && [ -z "$(git status --porcelain --untracked-files=no)" ]) &&
	ok "git reset in the worktree makes its index again" || bad "git reset in the worktree: $(cd "$w" && git status --short)"
cd "$T" || exit 1

# The same as an ordinary user, once, from root.
if [ -z "${AMX_NO_USER:-}" ] && [ "${1:-}" != --as-user ] && [ "$(id -u)" = 0 ]; then
	if ! command -v useradd >/dev/null || ! command -v setpriv >/dev/null; then
		echo "SKIP (the unprivileged pass): it needs useradd and setpriv"
	else
		u="amxh$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')"
		mkdir -p "$T/stage"
		cp "$AMX" "$T/stage/agentmux"
		cp "${AMX%/*}/agentmux-full" "$T/stage/agentmux-full"
		cp "$0" "$T/stage/worktree-hostile.sh"
		cp "$CRAFT" "$T/stage/index-craft.py"
		cp -r "${AGENTMUX_SHARE:?}" "$T/stage/share"
		chmod -R a+rX "$T/stage"
		useradd -M -N -d /nonexistent -s /bin/sh "$u" || bad "useradd failed"
		setpriv --reuid="$u" --regid="$(id -g "$u")" --init-groups \
		    env -i PATH="$PATH" AGENTMUX="$T/stage/agentmux" TMPDIR=/tmp \
		    AGENTMUX_SHARE="$T/stage/share" AMX_CRAFT="$T/stage/index-craft.py" \
		    bash "$T/stage/worktree-hostile.sh" --as-user | sed 's/^/user: /' ||
		    bad "the unprivileged pass failed"
		[ "${PIPESTATUS[0]}" = 0 ] || bad "the unprivileged pass failed"
		userdel "$u" 2>/dev/null
		u=
	fi
fi

[ $fails -eq 0 ] && echo "all hostile worktree checks passed${1:+ ($1)}"
exit $((fails > 0))
