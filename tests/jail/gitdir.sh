#!/bin/sh
# A main-tree session (no --worktree) and the user's own git run in the
# project while it runs: the jail sees the project's .git where no link,
# FIFO or socket can be made (sealed), through a dir of agentmux's at
# PROJECT/.git whose links lead there. Nothing the jail makes in .git can
# send the user's git elsewhere: no FETCH_HEAD, reflog, ref or packed-refs
# linked to a file of the user's or to /dev/zero, in the project's git dir
# or a submodule's. Git in the jail keeps working (commit, checkout,
# stash, tag, gc), and a HEAD it moves reaches the user's .git while the
# session runs, checked first. As root and as an unprivileged user.
set -u
. "$(dirname "$0")/lib.sh"

fresh_repo() {
	rm -rf "$P" "$T/remote.git"
	mkdir -p "$P"
	(cd "$P" && git init -q -b main . && git config user.email t@x &&
	    git config user.name t && echo hi >README && git add README &&
	    git commit -qm init) || exit 1
	git clone -q --bare "$P" "$T/remote.git" || exit 1
	(cd "$T/remote.git" && git branch -q other main) || exit 1
	git -C "$P" remote add origin "$T/remote.git" || exit 1
	echo orig >"$T/outside/target.txt"
}

# A submodule "sub" of one commit added to the project, committed.
add_sub() {
	sub="$T/sub"
	rm -rf "$sub"
	(git init -q -b main "$sub" && cd "$sub" && echo s >s &&
	    git add s && git -c user.email=a@b -c user.name=a commit -qm s) || exit 1
	(cd "$P" && git -c protocol.file.allow=always submodule -q add "$sub" sub &&
	    git commit -qm sub) || exit 1
}

# Starts the jail on SCRIPT, then waits for it to write $P/ready; once
# $P/seen appears, it runs THEN (if given) and ends.
session_start() {
	rm -f "$P/ready" "$P/seen"
	"$AMX" run -C "$P" -- sh -c "$1"'
	    touch ready; i=0
	    while [ ! -e seen ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
	    rm -f ready seen; '"${2:-}" </dev/null >"$T/session.out" 2>&1 &
	SPID=$!
	i=0
	while [ ! -e "$P/ready" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
	[ -e "$P/ready" ] || bad "the session did not get ready: $(cat "$T/session.out")"
}

session_end() {
	touch "$P/seen"
	wait "$SPID"
	OUT=$(cat "$T/session.out")
}

# The jail's attempts to link, while it runs: the user's fetch, commit and branch meanwhile.
links_in_gitdir() {
	fresh_repo
	git -C "$P" fetch -q origin 2>/dev/null
	for f in FETCH_HEAD ORIG_HEAD packed-refs index logs-HEAD top-link; do
		echo orig >"$T/outside/t-$f"
	done
	session_start "t=$T/outside/t-
	    for f in FETCH_HEAD ORIG_HEAD packed-refs index; do
	        rm -f .git/\$f; ln -s \$t\$f .git/\$f || echo REFUSED \$f; done
	    rm -f .git/logs/HEAD; ln -s \${t}logs-HEAD .git/logs/HEAD || echo REFUSED logs/HEAD
	    ln -s /dev/zero .git/refs/heads/zero || echo REFUSED ref
	    ln -s \${t}x .git/logs/refs/heads/main.x || echo REFUSED reflog
	    mkfifo .git/refs/heads/fifo || echo REFUSED fifo
	    mkfifo .git/fifo-top; ln -s \${t}top-link .git/top-link
	    mv .git/refs/heads/main .git/refs/heads/main.old &&
	        ln -s \${t}x .git/refs/heads/main || echo REFUSED main
	    mv .git/refs/heads/main.old .git/refs/heads/main
	    rm -rf .git/refs 2>/dev/null; ln -s \${t}x .git/refs.x"
	out=$(cat "$T/session.out")
	for what in logs/HEAD ref reflog fifo main; do
		case $out in *"REFUSED $what"*) ok ;;
		*) bad "the jail made a link or FIFO at .git/$what: $out" ;; esac
	done
	# The user's git, run there meanwhile.
	git -C "$P" fetch -q origin 2>"$T/host.err" ||
	    bad "the user's git fetch failed while the session ran: $(cat "$T/host.err")"
	(cd "$P" && git commit -q --allow-empty -m host && git branch -q mine &&
	    git status --short >/dev/null && git pack-refs --all) 2>"$T/host.err" ||
	    bad "the user's git failed while the session ran: $(cat "$T/host.err")"
	timeout 20 sh -c "ulimit -v 1000000; git -C '$P' for-each-ref >/dev/null" ||
	    bad "the user's git for-each-ref failed while the session ran"
	for f in FETCH_HEAD ORIG_HEAD packed-refs index logs-HEAD top-link; do
		[ "$(cat "$T/outside/t-$f")" = orig ] && ok ||
		    bad "the user's git wrote through the jail's link at $f: $(head -c 200 "$T/outside/t-$f")"
	done
	git -C "$P" log -1 --format=%s | grep -qx host && ok ||
	    bad "the user's commit is not on main"
	git -C "$P" reflog -1 --format=%gs HEAD | grep -q host && ok ||
	    bad "the user's commit is not in HEAD's reflog"
	find "$P/.git" -type l -o -type p -o -type s | grep . &&
	    bad "a link, FIFO or socket is in the project's .git" || ok
	session_end
	for f in FETCH_HEAD ORIG_HEAD packed-refs index logs-HEAD top-link; do
		[ "$(cat "$T/outside/t-$f")" = orig ] && ok ||
		    bad "something wrote through the jail's link at $f"
	done
	find "$P/.git" -type l -o -type p -o -type s | grep . &&
	    bad "a link, FIFO or socket is in the project's .git after the session" || ok
	git -C "$P" fsck --no-dangling >/dev/null 2>&1 && ok ||
	    bad "git fsck fails after the session: $(git -C "$P" fsck --no-dangling 2>&1 | head -3)"
}

# The review's first finding alone: FETCH_HEAD linked to a file of the user's, then the user's git fetch.
fetch_head_link() {
	fresh_repo
	session_start "rm -f .git/FETCH_HEAD; ln -s $T/outside/target.txt .git/FETCH_HEAD"
	git -C "$P" fetch -q origin 2>"$T/host.err" ||
	    bad "the user's git fetch failed while the session ran: $(cat "$T/host.err")"
	[ "$(cat "$T/outside/target.txt")" = orig ] && ok ||
	    bad "the user's git fetch wrote through the jail's FETCH_HEAD: $(head -c 200 "$T/outside/target.txt")"
	grep -q "branch 'other'" "$P/.git/FETCH_HEAD" && ok ||
	    bad "the user's git fetch did not write its FETCH_HEAD"
	session_end
}

# A submodule's git dir, under .git/modules: the jail sees it there, where
# git wrote paths relative to it (core.worktree), so it is not sealed: a
# link made in it is moved out at the end, and told (SECURITY.md says what
# the user's git run there meanwhile would do).
# The user's own link in a submodule's git dir (a hook linked to a tracked
# script), there before the session: a commit in the submodule changes its
# git dir, which is no dir moved in, so the link stays, untold.
user_link_in_modules() {
	fresh_repo
	add_sub
	ln -s ../../../../tools/pre-push "$P/.git/modules/sub/hooks/pre-push" || exit 1
	jrun -- sh -c "cd sub && git -c user.email=a@b -c user.name=a commit -q --allow-empty -m in && echo COMMITTED"
	case $OUT in *COMMITTED*) ok ;; *) bad "user_link_in_modules: git in the submodule did not commit: $OUT" ;; esac
	[ -L "$P/.git/modules/sub/hooks/pre-push" ] && ok ||
	    bad "user_link_in_modules: the user's hook link was taken: $OUT"
	case $OUT in *pre-push*) bad "user_link_in_modules: the user's hook link was told: $OUT" ;; *) ok ;; esac
}

links_in_modules() {
	fresh_repo
	add_sub
	jrun -- sh -c "ln -s /dev/zero .git/modules/sub/refs/heads/zero
	    ln -s $T/outside/target.txt .git/modules/sub/FETCH_HEAD
	    ls /.agentmux-git/modules | wc -l
	    cd sub && git -c user.email=a@b -c user.name=a commit -q --allow-empty -m in &&
	    git log --oneline | wc -l"
	case $OUT in *"modules/sub/refs/heads/zero"*"moved to"*) ok ;;
	*) bad "the link in a submodule's refs was not moved out: $OUT" ;; esac
	case $OUT in *"modules/sub/FETCH_HEAD"*"moved to"*) ok ;;
	*) bad "the link in a submodule's git dir was not moved out: $OUT" ;; esac
	case $OUT in *2*) ok ;; *) bad "git in the submodule did not commit in the jail: $OUT" ;; esac
	# The submodules are not reached past their binds through the sealed dir.
	case $OUT in 0*) ok ;; *) bad "the sealed dir shows the submodules' git dirs: $OUT" ;; esac
	find "$P/.git" -type l | grep . && bad "a link is in the project's .git" || ok
	[ "$(git -C "$P/sub" log -1 --format=%s)" = in ] && ok ||
	    bad "the submodule's commit did not reach the host"
	[ "$(cat "$P/sub/.git")" = "gitdir: ../.git/modules/sub" ] && ok ||
	    bad "the submodule's .git file changed: $(cat "$P/sub/.git")"
}

# Git in the jail: commit, checkout, stash, tag, gc. HEAD moves on the host while it runs.
git_works() {
	fresh_repo
	session_start 'set -e; export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@b \
	    GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@b
	    echo one >f && git add f && git commit -qm one
	    git checkout -qb agent && echo two >f && git commit -qam two
	    echo wip >f && git stash -q && git stash list | grep -q WIP
	    git tag v1 && git pack-refs --all && git gc -q
	    git branch -q -d main 2>/dev/null || git branch -q -m main main-old
	    git log --oneline | wc -l >count.tmp'
	[ "$(cat "$P/count.tmp" 2>/dev/null)" = 3 ] && ok ||
	    bad "git in the jail did not work: $(cat "$T/session.out")"
	# (Brought back a moment after the jail's git wrote them: the last
	# write is gc's packed-refs, with the tag and the stash's ref in it,
	# which may come after HEAD and the index under load.)
	i=0
	while { [ "$(git -C "$P" symbolic-ref HEAD 2>&1)" != refs/heads/agent ] ||
	    [ -n "$(git -C "$P" status --porcelain --untracked-files=no)" ] ||
	    ! git -C "$P" rev-parse -q --verify refs/tags/v1 >/dev/null ||
	    ! git -C "$P" stash list | grep -q WIP; } && [ $i -lt 50 ]; do
		sleep 0.1; i=$((i + 1))
	done
	[ "$(git -C "$P" symbolic-ref HEAD 2>&1)" = refs/heads/agent ] && ok ||
	    bad "the jail's checkout did not reach the host while it ran: $(git -C "$P" symbolic-ref HEAD 2>&1)"
	[ "$(git -C "$P" status --porcelain --untracked-files=no)" = "" ] && ok ||
	    bad "the user's git status is not clean after the jail's commit: $(git -C "$P" status --porcelain)"
	git -C "$P" rev-parse -q --verify refs/tags/v1 >/dev/null && ok ||
	    bad "the jail's tag is not on the host"
	git -C "$P" stash list | grep -q WIP && ok || bad "the jail's stash is not on the host"
	rm -f "$P/count.tmp"
	session_end
	[ "$(git -C "$P" symbolic-ref HEAD)" = refs/heads/agent ] && ok ||
	    bad "HEAD is not on the jail's branch after the session"
	ls -d "$XDG_DATA_HOME"/agentmux/sessions/*/gitdir 2>/dev/null | grep . &&
	    bad "the jail's .git dir stayed after the session" || ok
	git -C "$P" fsck --no-dangling >/dev/null 2>&1 && ok ||
	    bad "git fsck fails after the session: $(git -C "$P" fsck --no-dangling 2>&1 | head -3)"
	find "$P/.git" -type l | grep . && bad "a link is in the project's .git" || ok
}

# What the jail makes of its HEAD that git cannot read stays out of the user's; so does a move when the user moved it too.
head_bad() {
	fresh_repo
	for how in "ln -sf $T/outside/target.txt .git/HEAD" \
	    'printf "ref: refs/heads/../../x\n" >.git/HEAD' 'printf "ref: FETCH_HEAD\n" >.git/HEAD' \
	    'printf "\033]0;pwn\007\n" >.git/HEAD'; do
		jrun -- sh -c "$how; echo made"
		[ "$(git -C "$P" symbolic-ref HEAD 2>&1)" = refs/heads/main ] && ok ||
		    bad "$how: the user's HEAD is $(cat "$P/.git/HEAD")"
		case $OUT in *"cannot read"*"left as it was"*) ok ;;
		*) bad "$how: not told: $OUT" ;; esac
		case $OUT in *"$(printf '\033')"*) bad "$how: an escape was printed raw" ;; *) ok ;; esac
	done
	# Read as a ref or an id, but one the user's git could not use: below
	# or above a ref packed only too (the user's commit there failed
	# "cannot lock ref").
	(cd "$P" && git branch pk && git branch dd/x && git pack-refs --all &&
	    git commit -q --allow-empty -m loose) || exit 1
	[ -f "$P/.git/refs/heads/main" ] && [ ! -e "$P/.git/refs/heads/pk" ] ||
	    bad "head_bad: main is not loose, or pk not packed only"
	for how in 'printf "%064d\n" 0 | tr 0 a >.git/HEAD' \
	    'echo "ref: refs/heads/loop" >/.agentmux-git/refs/heads/loop; echo "ref: refs/heads/loop" >.git/HEAD' \
	    'echo "ref: refs/heads/main/x" >.git/HEAD' 'echo "ref: refs/heads/pk/x" >.git/HEAD' \
	    'echo "ref: refs/heads/dd" >.git/HEAD'; do
		jrun -- sh -c "$how; echo made"
		rm -f "$P/.git/refs/heads/loop"
		[ "$(git -C "$P" symbolic-ref HEAD 2>&1)" = refs/heads/main ] && ok ||
		    bad "$how: the user's HEAD is $(cat "$P/.git/HEAD")"
		case $OUT in *"could not use"*"left as it was"*) ok ;;
		*) bad "$how: not told: $OUT" ;; esac
	done
	# A branch alias (a symbolic ref to a branch) checked out is brought back.
	jrun -- sh -c 'git symbolic-ref refs/heads/trunk refs/heads/main && git checkout -q trunk && echo made'
	[ "$(cat "$P/.git/HEAD")" = "ref: refs/heads/trunk" ] && ok ||
	    bad "the jail's checkout of a branch alias was not brought back: $(cat "$P/.git/HEAD") $OUT"
	git -C "$P" checkout -q main && git -C "$P" symbolic-ref --delete refs/heads/trunk
	# A detached HEAD of the repository's own ids is brought back.
	jrun -- sh -c 'git checkout -q --detach && echo made'
	[ "$(cat "$P/.git/HEAD")" = "$(git -C "$P" rev-parse main)" ] && ok ||
	    bad "the jail's detached HEAD was not brought back: $(cat "$P/.git/HEAD") $OUT"
	git -C "$P" checkout -q main
	session_start 'git checkout -qb agent; git checkout -q main' \
	    'git checkout -qb agent2'
	sleep 0.5
	git -C "$P" checkout -qb mine
	session_end
	[ "$(git -C "$P" symbolic-ref HEAD)" = refs/heads/mine ] && ok ||
	    bad "the jail's HEAD replaced the one the user moved meanwhile: $(cat "$P/.git/HEAD")"
	case $OUT in *"moved its HEAD to ref: refs/heads/agent2"*"it is left as it is"*) ok ;;
	*) bad "the HEAD left alone was not told: $OUT" ;; esac
}

# The jail's index made a link, a FIFO, a sparse 60 MiB file or one over 64 MiB: the user's stays, told.
index_bad() {
	fresh_repo
	(cd "$P" && echo x >x && git add x) || exit 1
	want=$(git -C "$P" ls-files --stage | md5sum)
	cfg="$XDG_CONFIG_HOME/agentmux/config"
	cp "$cfg" "$cfg.was"
	sed -i 's/^file_size = .*/file_size = 100M/' "$cfg"
	for how in "ln -s $T/outside/target.txt .git/index" "mkfifo .git/index" \
	    "truncate -s 60M .git/index" "head -c 70000000 /dev/urandom >.git/index"; do
		jrun -- sh -c "rm -f .git/index; $how; echo made"
		[ "$(git -C "$P" ls-files --stage | md5sum)" = "$want" ] && ok ||
		    bad "$how: the user's index changed"
		# (Landlock keeps FIFOs out of the project where the kernel has it.)
		case $OUT in *"index could not be brought back"*"left as it was"*) ok ;;
		*"mkfifo: cannot create"*) ok ;;
		*) bad "$how: not told: $OUT" ;; esac
	done
	mv "$cfg.was" "$cfg"
	[ "$(cat "$T/outside/target.txt")" = orig ] && ok || bad "the index link was written through"
}

# Whether NAME reaches the user's index within 5 s (the jail's is brought back a moment after its git writes it).
wait_index() {
	i=0
	while ! git -C "$P" ls-files | grep -qx "$1" && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
	git -C "$P" ls-files | grep -qx "$1"
}

# The jail's index is written into the user's .git the way git writes one,
# under git's index.lock: while the user's git holds it (a commit waiting
# for its editor) the jail's index waits, and the lock is not touched; let
# go, the next sync brings it. Held as the session ends: the session's
# index kept aside, told. (Before, a
# git add of the user's between agentmux's look and its write was lost.)
index_lock() {
	fresh_repo
	: >"$P/.git/index.lock"
	session_start 'echo j >j && git add j'
	sleep 2.5
	git -C "$P" ls-files | grep -qx j && bad "index_lock: the jail's index was written while the user's git held index.lock" || ok
	[ -e "$P/.git/index.lock" ] && [ ! -s "$P/.git/index.lock" ] && ok ||
	    bad "index_lock: the user's index.lock was taken or written"
	rm -f "$P/.git/index.lock"
	wait_index j && ok || bad "index_lock: the jail's index did not come back once index.lock was let go"
	session_end
	: >"$P/.git/index.lock"
	# The end's 2 s wait for index.lock holds no turn of the loop (it is a
	# helper thread's): no turn or gap of the loop near it is in the trace.
	rm -f "$T/loop.trace"
	export AGENTMUX_LOOP_TRACE="$T/loop.trace" AGENTMUX_LOOP_TRACE_MS=1900
	session_start 'echo k >k && git add k'
	unset AGENTMUX_LOOP_TRACE AGENTMUX_LOOP_TRACE_MS
	session_end
	rm -f "$P/.git/index.lock"
	[ -s "$T/loop.trace" ] || bad "index_lock: no loop trace was written"
	grep -E ' (turn|gap) ' "$T/loop.trace" >"$T/loop.long" &&
	    bad "index_lock: the loop waited for the user's index.lock at the end: $(cat "$T/loop.long")" || ok
	case $OUT in *"the session's git staged changes, and $P/.git/index.lock stayed taken (by your git?) for 2 s: its index is kept at"*) ok ;;
	*) bad "index_lock: an index not brought back at the end for the user's index.lock was not told: $OUT" ;; esac
	kept=$(printf '%s\n' "$OUT" | sed -n 's/.*its index is kept at \([^,;]*\)[,;].*/\1/p' | head -n 1)
	[ -n "$kept" ] && [ -f "$kept" ] && GIT_INDEX_FILE=$kept git -C "$P" ls-files | grep -qx k && ok ||
	    bad "index_lock: the session's index was not kept where told: $kept"
	git -C "$P" ls-files | grep -qx k && bad "index_lock: the jail's index was written over the user's index.lock" || ok
	ls "$P/.git" | grep -q '^index\.agentmux-' && bad "index_lock: a temp index was left in .git" || ok
}

# The user's index, written by their own git while the session runs, is not replaced by the jail's; an
# index the jail only touches is not written again; what the jail leaves under way is told, and the
# user's own merge under way is not the jail's.
index_theirs() {
	fresh_repo
	session_start 'echo j >j && git add j'
	wait_index j && ok || bad "the jail's git add did not reach the user's index"
	echo u >"$P/u" && git -C "$P" add u
	session_end
	git -C "$P" ls-files | grep -qx u && ok ||
	    bad "the jail's index replaced the one the user wrote meanwhile"
	session_start 'echo k >k && git add k' 'echo l >l && git add l'
	echo v >"$P/v" && git -C "$P" add v
	session_end
	git -C "$P" ls-files | grep -qx l && bad "the jail's index replaced the user's" || ok
	git -C "$P" ls-files | grep -qx v && ok || bad "the user's git add is not in the index"
	case $OUT in *"index changed while the session ran"*"git reset"*) ok ;;
	*) bad "the index left alone was not told: $OUT" ;; esac
	# Touched only: not written again.
	session_start 'echo m >m && git add m'
	wait_index m || bad "the jail's git add m did not reach the user's index"
	ino=$(stat -c %i "$P/.git/index")
	session_end
	session_start 'i=0; while [ $i -lt 200 ]; do touch .git/index; i=$((i + 1)); done'
	session_end
	[ "$(stat -c %i "$P/.git/index")" = "$ino" ] && ok ||
	    bad "an index the jail only touched was written again"
	# A merge left with conflicts in the jail: told.
	git -C "$P" reset -q --hard && git -C "$P" checkout -qb side &&
	    echo a >"$P/README" && git -C "$P" commit -qam a &&
	    git -C "$P" checkout -q main && echo b >"$P/README" &&
	    git -C "$P" commit -qam b || exit 1
	jrun -- sh -c 'git -c user.email=a@b -c user.name=a merge side >/dev/null 2>&1; echo merged'
	case $OUT in *"left a merge, rebase"*MERGE_HEAD*"not carried over"*) ok ;;
	*) bad "the merge left under way was not told: $OUT" ;; esac
	[ ! -e "$P/.git/MERGE_HEAD" ] && ok || bad "the jail's merge state reached the user's .git"
	git -C "$P" checkout -q -- . 2>/dev/null; git -C "$P" reset -q --hard
	# The user's merge under way is not the jail's to see or end.
	git -C "$P" -c user.email=a@b -c user.name=a merge side >/dev/null 2>&1
	[ -e "$P/.git/MERGE_HEAD" ] || bad "the user's merge did not stop on its conflict"
	jrun -- sh -c 'git merge --abort 2>&1; echo tried'
	case $OUT in *"no merge to abort"*tried*) ok ;; *) bad "the jail saw the user's merge: $OUT" ;; esac
	[ -e "$P/.git/MERGE_HEAD" ] && ok || bad "the jail ended the user's merge"
	git -C "$P" merge --abort 2>/dev/null; git -C "$P" reset -q --hard
}

# The jail's index written into .git keeps the mode the user's has (a
# repository shared with a group: 0664 whatever the umask; before, 0644
# and the group's git could no longer write it). An index without a
# checksum (index.skipHash, on with feature.manyFiles from git 2.40)
# rewritten to the same size is brought back all the same: before, its
# zeros were taken for the same checksum and the second was dropped.
index_nohash() {
	fresh_repo
	chmod 0664 "$P/.git/index"
	# Temp files an agentmux killed mid-write left: removed at the next start, a minute old.
	echo x >"$P/.git/index.agentmux-0123456789ab" && touch -d '2 minutes ago' "$P/.git/index.agentmux-0123456789ab"
	echo x >"$P/.git/index.agentmux-ba9876543210"
	cat >"$P/.nohash.py" <<'PY'
import os, subprocess, sys
env = dict(os.environ, GIT_INDEX_FILE=".git/index.new")
open(".git/index.new", "wb").write(open(".git/index", "rb").read())
open("a", "w").write(sys.argv[1] + "\n")
subprocess.run(["git", "add", "a"], env=env, check=True)
with open(".git/index.new", "r+b") as f:
    f.seek(-20, 2)
    f.write(b"\0" * 20)
os.rename(".git/index.new", ".git/index")
PY
	session_start 'python3 .nohash.py one' 'python3 .nohash.py two'
	wait_index a || bad "index_nohash: the jail's first index did not come back"
	sleep 0.5
	session_end
	[ "$(stat -c %a "$P/.git/index")" = 664 ] && ok ||
	    bad "index_nohash: the user's 0664 index came back $(stat -c %a "$P/.git/index")"
	[ "$(git -C "$P" ls-files -s a | cut -d' ' -f2)" = "$(echo two | git hash-object --stdin)" ] && ok ||
	    bad "index_nohash: the second index, of the same size without a checksum, was not brought back: $(git -C "$P" ls-files -s a) $OUT"
	[ ! -e "$P/.git/index.agentmux-0123456789ab" ] && ok || bad "index_nohash: an old temp index was left in .git"
	[ -e "$P/.git/index.agentmux-ba9876543210" ] && ok || bad "index_nohash: a fresh temp index (another session's under way) was taken"
	rm -f "$P/.nohash.py" "$P/.git/index.agentmux-ba9876543210"
}

# No hard link in the jail (seccomp: EXDEV, as across file systems):
# COMMIT_EDITMSG and FETCH_HEAD made names of packed-refs had the user's
# git commit and fetch write into their packed refs; a reflog, a
# submodule's git dir likewise. Git and cp go on without.
hard_links() {
	fresh_repo
	add_sub
	(cd "$P" && git tag t1 && git branch b1 && git pack-refs --all &&
	    git -C sub pack-refs --all) || exit 1
	refs0=$(git -C "$P" for-each-ref --format='%(refname) %(objectname)')
	subrefs0=$(git -C "$P/sub" for-each-ref --format='%(refname) %(objectname)')
	session_start 'G=/.agentmux-git; M=.git/modules/sub
	    for l in "$G/packed-refs $G/COMMIT_EDITMSG" "$G/packed-refs $G/FETCH_HEAD" \
	        "$G/logs/refs/heads/main $G/logs/refs/heads/late2" "$M/packed-refs $M/COMMIT_EDITMSG" \
	        "README notes.txt"; do
	        ln -f $l 2>>link.err && echo "LINKED $l"; done
	    grep -c "Invalid cross-device link" link.err; rm -f link.err
	    echo more >>README && cp README copy.txt && git add copy.txt && echo GIT-OK'
	sleep 0.2
	(cd "$P" && git commit -q --allow-empty -m during && git fetch -q origin &&
	    git -C sub commit -q --allow-empty -m during) 2>/dev/null
	[ "$(git -C "$P" for-each-ref --format='%(refname) %(objectname)' refs/tags refs/heads/b1)" = \
	    "$(printf '%s\n' "$refs0" | grep 'refs/tags\|refs/heads/b1')" ] && ok ||
	    bad "the user's commit and fetch wrote through a second name of packed-refs: $(head -c 300 "$P/.git/packed-refs")"
	[ "$(git -C "$P/sub" for-each-ref --format='%(refname) %(objectname)' refs/remotes)" = \
	    "$(printf '%s\n' "$subrefs0" | grep 'refs/remotes')" ] && ok ||
	    bad "the user's commit in the submodule wrote through a second name of its packed-refs"
	session_end
	case $OUT in *LINKED*) bad "the jail made a hard link: $OUT" ;; *) ok ;; esac
	case $OUT in *5*GIT-OK*) ok ;; *) bad "the links were not refused as across file systems, or git failed: $OUT" ;; esac
	# (Objects aside: git clone --local, which added the submodule, links those.)
	n=$(find "$P/.git" -name objects -prune -o -type f -links +1 -print | wc -l)
	[ "$n" = 0 ] && ok || bad "$n files of .git have more than one name"
	git -C "$P" fsck --no-dangling >/dev/null 2>&1 && ok || bad "git fsck fails after hard_links"
}

# The review's escape: a jail linking config.lock again and again at the
# top of the sealed dir while the user's git writes .git/config there
# (git push -u, git remote add): the link, made, was the user's new config
# (read only in the jail), where the jail wrote a core.fsmonitor that the
# user's next git status ran. No link is ever made.
config_lock() {
	fresh_repo
	session_start '(i=0; while [ $i -lt 1000 ]; do ln /.agentmux-git/config.lock /.agentmux-git/zz 2>/dev/null &&
	    { echo "[core]"; echo "	fsmonitor = /bin/false"; } >>/.agentmux-git/zz && echo LINKED; i=$((i + 1)); done) &' 'wait'
	n=0
	while [ $n -lt 20 ]; do git -C "$P" config remote.origin.pushurl "x$n"; n=$((n + 1)); done
	session_end
	case $OUT in *LINKED*) bad "the jail linked the user's config.lock: $OUT" ;; *) ok ;; esac
	git -C "$P" config --get core.fsmonitor >/dev/null && bad "the jail wrote the user's .git/config" || ok
	[ ! -e "$P/.git/zz" ] && ok || bad "the jail's link is in .git"
	# The same with a descriptor: the lock opened for writing, again and
	# again, then written once it is the user's config (the top of .git is
	# read only in the jail).
	cat >"$P/grab.py" <<'PY'
import os, time
p = "/.agentmux-git/config.lock"
t0 = time.time()
while time.time() - t0 < 4:
    try:
        fd = os.open(p, os.O_WRONLY | os.O_APPEND)
    except OSError:
        continue
    while os.path.exists(p):
        pass
    os.write(fd, b"\n[core]\n\tfsmonitor = /bin/false\n")
    print("WROTE", flush=True)
    break
print("GRAB-DONE", flush=True)
PY
	session_start '(/usr/bin/python3 grab.py) &' 'wait'
	n=0
	while [ $n -lt 100 ]; do git -C "$P" config remote.origin.pushurl "y$n"; n=$((n + 1)); done
	sleep 4
	session_end
	case $OUT in *WROTE*) bad "the jail held the user's config.lock open: $OUT" ;; *GRAB-DONE*) ok ;;
	*) bad "the descriptor attack did not run: $OUT" ;; esac
	git -C "$P" config --get core.fsmonitor >/dev/null && bad "the jail wrote the user's .git/config through a descriptor" || ok
	rm -f "$P/grab.py"
}

# Second names the user made before the session (a submodule's hook shared
# on purpose, a file of the top linked from outside, git-annex's objects
# linked to the working tree) are theirs: left, untold, their modes kept.
links_users() {
	fresh_repo
	add_sub
	rm -rf "$T/hooks"
	mkdir -p "$T/hooks"
	printf '#!/bin/sh\necho SHARED-HOOK-RAN >&2\n' >"$T/hooks/pre-commit"
	chmod 755 "$T/hooks/pre-commit"
	ln "$T/hooks/pre-commit" "$P/.git/modules/sub/hooks/pre-commit" || exit 1
	echo mine >"$T/desc"
	ln -f "$T/desc" "$P/.git/description" || exit 1
	# git-annex's thin mode: an object linked to the working tree's file, which the jail writes.
	mkdir -p "$P/.git/annex/objects/K" && echo data >"$P/thin.dat" &&
	    ln "$P/thin.dat" "$P/.git/annex/objects/K/K" || exit 1
	sleep 0.1
	jrun -- sh -c 'echo more >>thin.dat; cd sub && git -c user.email=a@b -c user.name=a commit -q --allow-empty -m in 2>&1; echo done'
	case $OUT in *"second name"*) bad "a link the user made was told as the session's: $OUT" ;; *) ok ;; esac
	h="$P/.git/modules/sub/hooks/pre-commit"
	[ -x "$h" ] && [ "$(stat -c %h "$h")" = 2 ] && ok ||
	    bad "the user's shared submodule hook was changed: $(ls -l "$h" 2>&1)"
	[ "$(stat -c %h "$P/.git/description")" = 2 ] && ok ||
	    bad "the user's linked description was parted"
	[ "$(stat -c %h "$P/.git/annex/objects/K/K")" = 2 ] && ok ||
	    bad "git-annex's object linked to the working tree was parted"
}

# The user's git packs refs while a session runs (pack-refs, gc, branch
# -d, fetch --prune move refs into packed-refs and delete their files):
# the jail's copy of packed-refs is given again, so its git reads the
# user's branches as they are and a commit there builds on the user's
# (review 4 F1: it read the start's value, and the user's commit was
# dropped from the branch). The jail's own change meanwhile (a branch
# deleted) is brought back, the user's kept.
packed_fresh() {
	fresh_repo
	(cd "$P" && git branch y && git branch z && git branch w &&
	    git pack-refs --all) || exit 1
	rm -f "$P/.want"
	session_start 'git rev-parse -q --verify z >/dev/null && echo "jail had z"' '
	    want=$(cat .want); i=0
	    while [ "$(git rev-parse -q --verify y)" != "$want" ] && [ $i -lt 100 ]; do
	        sleep 0.1; i=$((i + 1)); done
	    echo "jail sees y=$(git rev-parse -q --verify y) z=$(git rev-parse -q --verify z || echo none)"
	    git checkout -q y && echo j >jf && git add jf &&
	        git -c user.email=a@b -c user.name=a commit -qm jailcommit && echo COMMITTED
	    git branch -D w >/dev/null && echo WDELETED'
	c=$(git -C "$P" commit-tree -p y -m hostwork 'y^{tree}') &&
	    git -C "$P" update-ref refs/heads/y "$c" &&
	    git -C "$P" branch -qD z && git -C "$P" pack-refs --all || exit 1
	[ -e "$P/.git/refs/heads/y" ] && bad "packed_fresh: y was not packed on the host"
	echo "$c" >"$P/.want"
	session_end
	rm -f "$P/.want"
	case $OUT in *"jail had z"*) ok ;; *) bad "packed_fresh: the jail did not see z at its start: $OUT" ;; esac
	case $OUT in *"jail sees y=$c z=none"*) ok ;;
	*) bad "packed_fresh: the jail read the user's packed branches as they were at the start (y should be $c, z gone): $OUT" ;; esac
	case $OUT in *COMMITTED*WDELETED*) ok ;; *) bad "packed_fresh: the jail's git failed: $OUT" ;; esac
	log=$(git -C "$P" log --format=%s y | tr '\n' ' ')
	case $log in "jailcommit hostwork init "*) ok ;;
	*) bad "packed_fresh: the user's commit on y is not under the jail's: $log: $OUT" ;; esac
	git -C "$P" rev-parse -q --verify z >/dev/null &&
	    bad "packed_fresh: the branch the user deleted came back: $OUT" || ok
	git -C "$P" rev-parse -q --verify w >/dev/null &&
	    bad "packed_fresh: the branch the jail deleted is still there: $OUT" || ok
	git -C "$P" for-each-ref >/dev/null && ok || bad "packed_fresh: the user's git cannot read its refs"
	case $OUT in *"both changed"*|*"could not be brought back"*) bad "packed_fresh: told a conflict: $OUT" ;; *) ok ;; esac
	git -C "$P" checkout -q main
}

# Lines the jail writes into its copy of packed-refs that git cannot read
# (review 4 F2: an id of SHA-256's length in a SHA-1 repository, C's
# vertical tab for the separator, a peeled id too long) never reach the
# user's: the merge is refused, told; the user's git goes on.
packed_lines() {
	fresh_repo
	(cd "$P" && git branch y && git pack-refs --all) || exit 1
	# (Two ids each: printf would repeat a format of one for the second.)
	# Review 5: "@" alone (git dies: "packed refname is dangerous"); names
	# git only warns of there (a backslash, a CR before the newline), which
	# made git gc fail ("bad object") and its pack-refs write a zero id.
	# Review 6 F2: such a line made the whole merge fail, and every later
	# change of the jail's there (and the user's given to it) was lost: now
	# it alone is left out, told, and the good line beside it comes back.
	for l in 'long %saaaaaaaaaaaaaaaaaaaaaaaa refs/heads/long\n%s refs/heads/ok' \
	    'vt %s\vrefs/heads/vt\n%s refs/heads/ok' \
	    'peel %s refs/heads/pl\n^%saaaaaaaaaaaaaaaaaaaaaaaa' \
	    'at %s @\n%s refs/heads/ok' 'bs %s refs/heads/a\\\\b\n%s refs/heads/ok' \
	    'cr %s refs/heads/crlf\r\n%s refs/heads/ok' 'lock %s refs/heads/x.lock/y\n%s refs/heads/ok' \
	    'twice %s refs/heads/y\n%s refs/heads/ok' 'onelevel %s main\n%s refs/heads/ok' \
	    'onetag %s v1\n%s refs/heads/ok'; do
		name=${l%% *}
		jrun -- sh -c 'v=$(git rev-parse HEAD); printf "'"${l#* }"'\n" "$v" "$v" >>.git/packed-refs && echo APPENDED'
		case $OUT in *APPENDED*) ok ;; *) bad "packed_lines $name: the jail could not write its copy: $OUT" ;; esac
		git -C "$P" for-each-ref >/dev/null 2>&1 && ok ||
		    bad "packed_lines $name: the user's git cannot read its refs: $(git -C "$P" for-each-ref 2>&1 | head -1): $OUT"
		grep -q 'refs/heads/long\|refs/heads/vt\|refs/heads/pl\| @$\|refs/heads/a\|crlf\|x\.lock\| main$\| v1$' "$P/.git/packed-refs" &&
		    bad "packed_lines $name: the line reached the user's packed-refs: $(cat "$P/.git/packed-refs")" || ok
		case $OUT in *"packed-refs that git cannot read, or names git refuses"*"left out of"*"kept as yours has it"*"the rest of its change was brought back"*) ok ;;
		*) bad "packed_lines $name: the line left out was not told: $OUT" ;; esac
		case $name in
		peel) ;;
		*)	git -C "$P" rev-parse -q --verify refs/heads/ok >/dev/null && ok ||
			    bad "packed_lines $name: the good line beside the bad one did not come back: $(cat "$P/.git/packed-refs")"
			git -C "$P" branch -D ok >/dev/null 2>&1 ;;
		esac
		# y listed twice by the jail is y kept as the user has it (review 7 F5: it was deleted).
		git -C "$P" rev-parse -q --verify y >/dev/null && ok || bad "packed_lines $name: y was lost: $OUT"
		git -C "$P" gc -q >/dev/null 2>&1 && ok || bad "packed_lines $name: git gc fails: $(git -C "$P" gc 2>&1 | tail -1)"
	done
	# A packed ref of the user's the jail left alone keeps its line, and git gc
	# goes on, even where its name is one git only warns of (where git sorts it:
	# the file claims its refs sorted).
	(cd "$P" && git branch -f y && git pack-refs --all) || exit 1
	v=$(git -C "$P" rev-parse HEAD)
	printf '%s refs/heads/zmine\\x\n' "$v" >>"$P/.git/packed-refs"
	jrun -- sh -c 'git branch -D y >/dev/null 2>&1; echo DELETED'
	git -C "$P" rev-parse -q --verify y >/dev/null &&
	    bad "packed_lines: the jail's branch -D y beside a user's odd line was not brought back: $OUT" || ok
	grep -q 'refs/heads/zmine' "$P/.git/packed-refs" && ok ||
	    bad "packed_lines: the user's own odd line was taken out: $(cat "$P/.git/packed-refs")"
	sed -i '/refs\/heads\/zmine/d' "$P/.git/packed-refs"
}

# A session that runs SETUP, then THEN (if given), then waits (10 s at most)
# until its git reads y as the commit the host made on it (packed) and
# packed meanwhile, into C; says what it read. OUT as session_end leaves it.
y_packed_meanwhile() { # SETUP [THEN]
	fresh_repo
	(cd "$P" && git branch y && git pack-refs --all) || exit 1
	rm -f "$P/.want"
	session_start "$1" "${2:-}"'
	    want=$(cat .want); i=0
	    while [ "$(git rev-parse -q --verify y)" != "$want" ] && [ $i -lt 100 ]; do
	        sleep 0.1; i=$((i + 1)); done
	    echo "jail sees y=$(git rev-parse -q --verify y)"'
	C=$(git -C "$P" commit-tree -p y -m hostwork 'y^{tree}') &&
	    git -C "$P" update-ref refs/heads/y "$C" && git -C "$P" pack-refs --all || exit 1
	echo "$C" >"$P/.want"
	session_end
	rm -f "$P/.want"
}

# A line git cannot read in the jail's copy leaves it given again all the
# same when the user's git packs (review 6 F2: the merge failed for good,
# and with it every later refresh: the jail read y as at the start, and a
# commit there dropped the user's).
packed_bad_fresh() {
	y_packed_meanwhile 'printf "%s\vrefs/heads/vt\n" "$(git rev-parse HEAD)" >>.git/packed-refs'
	c=$C
	case $OUT in *"jail sees y=$c"*) ok ;;
	*) bad "packed_bad_fresh: a bad line in the jail's copy kept it from being given again: $OUT" ;; esac
	[ "$(git -C "$P" rev-parse y)" = "$c" ] && ok || bad "packed_bad_fresh: the user's y moved: $OUT"
	grep -q 'refs/heads/vt' "$P/.git/packed-refs" &&
	    bad "packed_bad_fresh: the bad line reached the user's packed-refs" || ok
}

# The user's git packs while the jail's git holds its own packed-refs.lock,
# which it then deletes (a transaction rolled back: no rename tells of it):
# the jail's copy is given again all the same (review 5 D: it stayed as it
# was, and a commit there dropped the user's); held 10 s, told.
packed_locked() {
	y_packed_meanwhile ': >.git/packed-refs.lock' 'sleep 11; rm -f .git/packed-refs.lock'
	c=$C
	case $OUT in *"jail sees y=$c"*) ok ;;
	*) bad "packed_locked: the jail read y as it was once its lock went: $OUT" ;; esac
	case $OUT in *"held its .git/packed-refs.lock for 10 s"*) ok ;;
	*) bad "packed_locked: the lock held 10 s was not told: $OUT" ;; esac
}

# A repository shared with a group (core.sharedRepository): the packed-refs
# the jail's change is merged into keeps the group's bits, whatever the
# user's umask (review 5 E: 0660 came back 0600).
packed_shared() {
	fresh_repo
	(cd "$P" && git config core.sharedRepository group && git branch y &&
	    git branch w && git pack-refs --all) || exit 1
	chmod 0660 "$P/.git/packed-refs"
	um=$(umask)
	umask 077
	jrun -- sh -c 'git branch -D w >/dev/null && echo DELETED'
	umask "$um"
	git -C "$P" rev-parse -q --verify w >/dev/null &&
	    bad "packed_shared: the jail's branch -D w was not brought back: $OUT" || ok
	[ "$(stat -c %a "$P/.git/packed-refs")" = 660 ] && ok ||
	    bad "packed_shared: packed-refs is $(stat -c %a "$P/.git/packed-refs"), not 660"
}

# A fresh repository with a nested one, lib (one commit, ignored).
nested_lib() {
	fresh_repo
	git init -q -b main "$P/lib" && (cd "$P/lib" && echo x >x && git add x &&
	    git -c user.email=a@b -c user.name=a commit -qm l) || exit 1
	echo lib/ >"$P/.gitignore"
}

# index-craft.py (see there) copied into DIR, as .craft.py.
craft_script() { # DIR
	cp "$(dirname "$JAIL_SCRIPT")/index-craft.py" "$1/.craft.py"
}

# An index the jail's git wrote with entries git's checkout writes where
# git itself never adds one (a part .git, ".."): a 'git checkout -- .' of
# the user's then wrote .git/hooks/post-checkout, run by their next
# checkout, or a file outside the project (found 2026-12-06: both, on the
# project's index brought back from the jail and a nested repository's
# written in place). Review 8: hidden from agentmux's reader by a name
# length in the flags past the NUL, extended flags in version 2, IEOT
# offsets (git's threaded reader), or a split index. The project's is not
# brought back; a nested one is taken away at the end; each told.
index_paths() {
	for how in plain desync v2ext ieot eoie; do
		fresh_repo
		craft_script "$P"
		rm -f "$T/home/src/escaped-idx" "$T/home/pwned"
		jrun -- /usr/bin/python3 .craft.py $how .git/hooks/post-checkout ../escaped-idx sub/.git/hooks/pre-commit
		case $OUT in *"CRAFTED $how"*) ok ;; *) bad "index_paths $how: the jail could not write its index: $OUT" ;; esac
		case $how:$OUT in ieot:*|eoie:*) ;;
		plain:*"index has entries that git's checkout would write into a git dir or outside the tree"*".git/hooks/post-checkout"*) ok ;;
		*:*"could not be brought back"*"cannot be read as git would read them"*) ok ;;
		*) bad "index_paths $how: the refused index was not told: $OUT" ;; esac
		git -C "$P" -c index.threads=4 ls-files | grep -q 'hooks\|escaped' &&
		    bad "index_paths $how: the jail's entries reached the user's index: $(git -C "$P" ls-files)" || ok
		(cd "$P" && git -c index.threads=4 checkout -- . 2>/dev/null)
		[ -e "$P/.git/hooks/post-checkout" ] || [ -e "$T/home/src/escaped-idx" ] || [ -e "$P/sub/.git" ] &&
		    bad "index_paths $how: the user's git checkout -- . wrote the jail's entries" || ok
	done
	# A nested repository's index, written in place by the jail.
	for how in plain desync split eoie; do
		nested_lib
		craft_script "$P/lib"
		jrun -- sh -c "cd lib && /usr/bin/python3 .craft.py $how .git/hooks/post-checkout ../../escaped-idx"
		case $OUT in *"CRAFTED $how"*) ok ;; *) bad "index_paths $how: the jail could not write lib's index: $OUT" ;; esac
		case $OUT in *"left an index in $P/lib/.git that git's checkout could use against you"*"moved to"*"git reset"*) ok ;;
		*) bad "index_paths $how: lib's index was not taken away, told: $OUT" ;; esac
		(cd "$P/lib" && git checkout -- . 2>/dev/null)
		[ -e "$P/lib/.git/hooks/post-checkout" ] || [ -e "$T/home/src/escaped-idx" ] &&
		    bad "index_paths $how: the user's git checkout -- . in lib wrote the jail's entries" || ok
		(cd "$P/lib" && git reset -q && git status --short | grep -q '^ D\|^D ') &&
		    bad "index_paths $how: git reset in lib did not make its index again" || ok
	done
	# lib's index the jail left alone is not touched.
	nested_lib
	before=$(stat -c '%i %Y' "$P/lib/.git/index")
	sleep 0.3
	jrun -- true
	[ "$(stat -c '%i %Y' "$P/lib/.git/index")" = "$before" ] && ok ||
	    bad "index_paths: lib's index, which the session left alone, was written again"
	[ -e "$T/home/pwned" ] && bad "index_paths: a crafted hook ran" || ok
	rm -rf "$P/lib" "$P/.gitignore"
}

checks() {
	index_paths
	links_in_gitdir
	fetch_head_link
	links_in_modules
	user_link_in_modules
	git_works
	head_bad
	index_bad
	index_theirs
	index_lock
	index_nohash
	hard_links
	config_lock
	links_users
	packed_fresh
	packed_lines
	packed_bad_fresh
	packed_locked
	packed_shared
}

jail_main "$@"
