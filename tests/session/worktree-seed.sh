#!/usr/bin/env bash
# A worktree session's start snapshot from what git's checkout hashed
# (issue 18's start figure): the files git worktree add wrote are not
# read again; their ids come from the index git wrote, checked against
# the commit's tree, and their contents are copied from the project's
# repository into agentmux's own, each checked by its id. What must hold
# (real git, real jails, as root and as a throwaway user):
#  - the start snapshot is the checkout byte for byte: undo after the
#    session edited, removed, made executable and added files gives back
#    exactly what a git worktree add of the same commit gives;
#  - a file git converted on its way out (an eol or ident attribute from
#    the project's info/attributes or the user's attributes file) is
#    snapshotted as it is on disk, not as the blob it came from;
#  - a corrupt object in the project (a loose object whose content is not
#    what its name says) is caught and told, never taken in silence;
#  - agentmux's own repository holds every object its snapshots name.
set -u
SELF=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
. "${SELF%/*}/lib.sh"
command -v git >/dev/null || { echo "SKIP: git is missing"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 is missing"; exit 77; }
wt_setup wtseed

# A project of 2,000 files: most are written well before git writes its
# index, so most are taken from it (those written in the last tick are
# read, as git's racy ones).
mkrepo() {
	mkdir -p "$1" && (cd "$1" && git init -q -b main . && git config user.email t@x &&
		git config user.name t && python3 - <<'EOF' && printf '#!/bin/sh\necho hi\n' >run.sh &&
import os
for i in range(2000):
    d = "src/d%02d" % (i % 20)
    os.makedirs(d, exist_ok=True)
    with open("%s/f%04d.txt" % (d, i), "w") as f:
        f.write("line one of %d\nline two $Id$\n" % i * (1 + i % 7))
EOF
		chmod 755 run.sh && printf 'SECRET=1\n' >.env && chmod 600 .env &&
		printf '.env\n*.o\n' >.gitignore && printf '.env\n' >.worktreeinclude &&
		mkdir -p lib && printf 'kept\n' >lib/keep.o && git add -A && git add -f lib/keep.o &&
		git commit -qm base)
}
# Every file of DIR but .git: path, type, mode, link target, then contents.
tree() { (cd "$1" && find . -path ./.git -prune -o -printf '%p %y %m %l\n' | sort &&
	find . -path ./.git -prune -o -type f -print0 | sort -z | xargs -0 sha256sum); }
sid() { "$AMX" sessions --json | python3 -c 'import json,sys; print([s["id"] for s in json.load(sys.stdin) if "/'"$1"', " in (s.get("worktree") or "")][0])'; }
wdir() { "$AMX" sessions --json | python3 -c 'import json,sys; print([s["project"] for s in json.load(sys.stdin) if s["id"]=='"$1"'][0])'; }
taken() { sed -n 's/.*files (\([0-9]*\) of them as git.s checkout hashed them).*/\1/p' "$1" | head -1; }
fsck_own() {
	local d
	for d in "$XDG_DATA_HOME"/agentmux/shadow/*; do
		git --git-dir="$d" fsck --no-dangling --no-progress >"$T/fsck.out" 2>&1 ||
			{ bad "$1: git fsck of $d: $(head -5 "$T/fsck.out")"; return; }
	done
	ok "$1: agentmux's own repositories hold every object they name"
}
# Session $id (worktree $w) made $edits: diff names those files and only
# them, and undo gives back $T/ref byte for byte; WHAT says which case.
edits_undone() {
	local out got
	out=$("$AMX" diff "$id" 2>&1) || bad "diff $id failed: $(head -5 <<<"$out")"
	got=$(grep '^diff --git' <<<"$out" | awk '{print $3}' | sed 's|^a/||' | sort | tr '\n' ' ')
	# (lib/keep.o is tracked though ignored: the start lists it from the
	# checkout's index, the rest from git ls-files -o.)
	[ "$got" = "lib/keep.o run.sh src/d01/f0001.txt src/d02/f0002.txt src/d03/f0003.txt src/new.txt " ] &&
		ok "$1: diff names the session's changes, and only them (a tracked file the rules ignore too)" ||
		bad "$1: diff $id names: $got"
	out=$("$AMX" undo "$id" 2>&1) || bad "$1: undo $id failed: $out"
	[ "$(tree "$w")" = "$(tree "$T/ref")" ] && ok "$1: undo gives back the checkout byte for byte" ||
		bad "$1: undo: the tree differs from a git worktree add: $(diff <(tree "$T/ref") <(tree "$w") | head -10)"
}
edits='echo more >>src/d01/f0001.txt && rm src/d02/f0002.txt && chmod +x src/d03/f0003.txt &&
	echo new >src/new.txt && echo >>run.sh && echo more >>lib/keep.o'

# 1. The seed taken: the session's edits undone give back the checkout.
P=$T/p
mkrepo "$P" || exit 1
cd "$P" || exit 1
git worktree add -q "$T/ref" HEAD && cp -p .env "$T/ref/.env" || exit 1
AGENTMUX_DEBUG=1 "$AMX" run --worktree --branch one -- sh -c "$edits" </dev/null >"$T/one.out" 2>&1 ||
	bad "session one failed: $(grep -v '^agentmux: git\|exit 0 after' "$T/one.out" | tail -5)"
n=$(taken "$T/one.out")
[ "${n:-0}" -ge 1000 ] && ok "the start snapshot took $n of 2,000 files from git's checkout" ||
	bad "the start snapshot took ${n:-no} files from git's checkout: $(grep 'first snapshot' "$T/one.out")"
grep -q 'start snapshot failed\|cannot be undone' "$T/one.out" && bad "session one: $(grep 'snapshot' "$T/one.out" | tail -3)"
id=$(sid one)
w=$(wdir "$id")
edits_undone "the seed (modes, run.sh, the included .env)"
fsck_own "seed"

# 2. Files git converted on their way out (eol, ident): snapshotted as on
# disk, so undo gives them back as the checkout wrote them.
printf '*.txt eol=crlf\n' >.git/info/attributes
mkdir -p "$XDG_CONFIG_HOME/git"
printf 'src/d05/* ident\n' >"$XDG_CONFIG_HOME/git/attributes"
rm -rf "$T/ref" && git worktree prune && git worktree add -q "$T/ref" HEAD && cp -p .env "$T/ref/.env" || exit 1
grep -q $'\r' "$T/ref/src/d01/f0001.txt" && grep -q '\$Id: [0-9a-f]* \$' "$T/ref/src/d05/f0005.txt" ||
	bad "the reference checkout did not convert: $(od -c "$T/ref/src/d01/f0001.txt" | head -2)"
AGENTMUX_DEBUG=1 "$AMX" run --worktree --branch conv -- sh -c "$edits"' &&
	printf "lf only\n" >src/d04/f0004.txt && printf "no id\n" >src/d05/f0025.txt' </dev/null >"$T/conv.out" 2>&1 ||
	bad "session conv failed: $(tail -5 "$T/conv.out")"
id=$(sid conv)
w=$(wdir "$id")
out=$("$AMX" undo "$id" 2>&1) || bad "undo $id failed: $out"
[ "$(tree "$w")" = "$(tree "$T/ref")" ] &&
	ok "converted files (eol from info/attributes, ident from the user's attributes) come back as checked out" ||
	bad "undo after conversions: the tree differs: $(diff <(tree "$T/ref") <(tree "$w") | head -10)"
n=$(taken "$T/conv.out")
[ -n "$n" ] && [ "$n" -le 3 ] && ok "with every .txt converted, none of them is taken from git's checkout ($n files are)" ||
	bad "with every .txt converted, ${n:-?} files were taken from git's checkout"
rm -f .git/info/attributes "$XDG_CONFIG_HOME/git/attributes"
fsck_own "conversions"

# 2b. What turns conversions off where git's checkout did not look (the
# review's attacks): a .gitattributes copied in by .worktreeinclude after
# the checkout, and one staged in the main tree's index (which a session
# there can write, and where a FIFO would hold git's open). The user's
# own attributes convert every .txt; git check-attr must see that.
printf '*.txt eol=crlf ident\n' >"$XDG_CONFIG_HOME/git/attributes"
off='* !text !eol !crlf !ident !filter !working-tree-encoding'
rm -rf "$T/ref" && git worktree prune && git worktree add -q "$T/ref" HEAD && cp -p .env "$T/ref/.env" || exit 1
printf '.env\n.gitattributes\n' >.gitignore && printf '.env\n.gitattributes\n' >.worktreeinclude &&
	printf '%s\n' "$off" >.gitattributes && chmod 600 .gitattributes && cp -p .gitattributes "$T/ref/.gitattributes"
"$AMX" run --worktree --branch incl -- true </dev/null >"$T/incl.out" 2>&1 || bad "session incl failed: $(tail -5 "$T/incl.out")"
id=$(sid incl)
w=$(wdir "$id")
[ -f "$w/.gitattributes" ] || bad "the .gitattributes was not copied in by .worktreeinclude"
out=$("$AMX" undo "$id" 2>&1) || bad "undo $id failed: $out"
[ "$(tree "$w")" = "$(tree "$T/ref")" ] &&
	ok "a .gitattributes copied in after the checkout does not hide the user's conversions" ||
	bad "a .gitattributes copied in hid conversions: $(diff <(tree "$T/ref") <(tree "$w") | head -6)"
git checkout -q -- .gitignore .worktreeinclude && rm -f .gitattributes "$T/ref/.gitattributes"
printf '%s\n' "$off" >.gitattributes && git add .gitattributes && rm .gitattributes
"$AMX" run --worktree --branch staged -- true </dev/null >"$T/staged.out" 2>&1 || bad "session staged failed: $(tail -5 "$T/staged.out")"
id=$(sid staged)
w=$(wdir "$id")
out=$("$AMX" undo "$id" 2>&1) || bad "undo $id failed: $out"
[ "$(tree "$w")" = "$(tree "$T/ref")" ] &&
	ok "a .gitattributes staged in the main tree's index does not hide the user's conversions" ||
	bad "a staged .gitattributes hid conversions: $(diff <(tree "$T/ref") <(tree "$w") | head -6)"
git rm -q --cached .gitattributes
# (Without a .worktreeinclude: its listing reads the main tree's index.
# A jail cannot make a FIFO in the project: Landlock refuses it.)
mv .worktreeinclude "$T/wti" && rm -f .git/index && mkfifo .git/index
timeout 30 "$AMX" run --worktree --branch fifo -- true </dev/null >"$T/fifo.out" 2>&1 &&
	ok "a FIFO for the main tree's index holds no worktree start" || bad "session fifo failed or hung: $(tail -5 "$T/fifo.out")"
rm -f .git/index && git reset -q && mv "$T/wti" .worktreeinclude
rm -f "$XDG_CONFIG_HOME/git/attributes"

# 4. agentmux killed while it copies the blobs in (git pack-objects slowed
# by a wrapper on agentmux's PATH): the list it left is taken up by the
# next command that opens the repository; diff and undo then work.
mkdir -p "$T/slowbin"
printf '#!/bin/sh\ncase " $* " in *" pack-objects "*) sleep 4 ;; esac\nexec %s "$@"\n' "$(command -v git)" >"$T/slowbin/git"
chmod 755 "$T/slowbin/git"
rm -rf "$T/ref" && git worktree prune && git worktree add -q "$T/ref" HEAD && cp -p .env "$T/ref/.env" || exit 1
PATH=$T/slowbin:$PATH "$AMX" run --worktree --branch killed -- sh -c 'echo STARTED; echo killed >>src/d01/f0001.txt; sleep 60' \
	</dev/null >"$T/killed.out" 2>&1 &
kpid=$!
for _ in $(seq 1 300); do grep -q STARTED "$T/killed.out" && break; sleep 0.1; done
sleep 0.3
kill -9 "$kpid"
wait "$kpid" 2>/dev/null
if ls "$XDG_DATA_HOME"/agentmux/shadow/*/agentmux-borrow >/dev/null 2>&1; then
	ok "killed while copying: the list of blobs to copy is left"
else
	bad "no list of blobs was left by the killed agentmux: $(cat "$T/killed.out")"
fi
id=$(sid killed)
out=$("$AMX" diff "$id" 2>&1) || bad "diff $id after the kill failed: $(head -5 <<<"$out")"
got=$(grep '^diff --git' <<<"$out" | awk '{print $3}' | sed 's|^a/||' | tr '\n' ' ')
[ "$got" = "src/d01/f0001.txt " ] && ok "diff after the kill copies the blobs in and shows the change" || bad "diff $id after the kill: $got"
ls "$XDG_DATA_HOME"/agentmux/shadow/*/agentmux-borrow >/dev/null 2>&1 && bad "the list of blobs is still there after the copy"
w=$(wdir "$id")
out=$("$AMX" undo "$id" 2>&1) || bad "undo $id after the kill failed: $out"
[ "$(tree "$w")" = "$(tree "$T/ref")" ] && ok "undo after the kill gives back the checkout byte for byte" ||
	bad "undo after the kill: the tree differs: $(diff <(tree "$T/ref") <(tree "$w") | head -10)"
fsck_own "killed"

# 5. The commit's tree and its files' attributes learnt while git
# worktree add runs (a git on PATH notes each git agentmux runs): asked
# once, beside the checkout, not again after it. The start snapshot is
# still the checkout byte for byte, a tracked file the rules ignore
# included; a conversion is still seen; if learning them beside git
# worktree add fails, or the attributes' files change while git checks
# out (review 13 F2: the checkout converted what agentmux was told it
# would not), the start asks git itself. And an untracked file
# .worktreeinclude copies in is listed.
mkdir -p "$T/notebin"
printf '#!/bin/sh\necho "$*" >>"%s/gitlog"\ncase " $* " in *" ls-tree "*) [ -e "%s/fail-ls-tree" ] && exit 1 ;;\n*" worktree add "*) [ -e "%s/late-attrs" ] && sleep 1 && printf "*.txt eol=crlf\\n" >"%s/.git/info/attributes"\n\t[ -e "%s/late-link" ] && sleep 1 && printf "*.txt eol=crlf\\n" >"%s/attrs-target" ;; esac\nexec %s "$@"\n' \
	"$T" "$T" "$T" "$P" "$T" "$T" "$(command -v git)" >"$T/notebin/git"
chmod 755 "$T/notebin/git"
alone() { # BRANCH: a session that makes the edits; sets id and w
	: >"$T/gitlog"
	PATH=$T/notebin:$PATH AGENTMUX_DEBUG=1 "$AMX" run --worktree --branch "$1" -- sh -c "$edits" \
		</dev/null >"$T/$1.out" 2>&1 || bad "session $1 failed: $(tail -5 "$T/$1.out")"
	id=$(sid "$1")
	w=$(wdir "$id")
}
mv .worktreeinclude "$T/wti"
rm -rf "$T/ref" && git worktree prune && git worktree add -q "$T/ref" HEAD || exit 1
alone alone
[ "$(grep -c 'check-attr' "$T/gitlog")" = 1 ] && grep -q 'ls-tree -r -z --name-only' "$T/gitlog" ||
	bad "the commit's names and attributes were not read once, beside git worktree add: $(cat "$T/gitlog")"
n=$(taken "$T/alone.out")
[ "${n:-0}" -ge 1000 ] || bad "attributes learnt beside the checkout: the start took ${n:-no} files from git's checkout"
edits_undone "attributes learnt beside the checkout"
printf '*.txt eol=crlf\n' >.git/info/attributes
rm -rf "$T/ref" && git worktree prune && git worktree add -q "$T/ref" HEAD || exit 1
# (alonelink: the user's attributes file is a link, as a dotfiles manager
# makes it, and what it names is written while git checks out; alonefile:
# the attributes file core.attributesFile names is written then.)
for b in aloneconv alonefail alonelate alonelink alonefile; do
	[ $b = alonefail ] && : >"$T/fail-ls-tree"
	[ $b = alonelate ] && rm -f "$T/fail-ls-tree" .git/info/attributes && : >"$T/late-attrs"
	[ $b = alonelink ] && rm -f "$T/late-attrs" .git/info/attributes && : >"$T/attrs-target" &&
		mkdir -p "$XDG_CONFIG_HOME/git" && ln -sf "$T/attrs-target" "$XDG_CONFIG_HOME/git/attributes" &&
		: >"$T/late-link"
	[ $b = alonefile ] && rm -f "$XDG_CONFIG_HOME/git/attributes" && : >"$T/attrs-target" &&
		git config core.attributesFile "$T/attrs-target"
	alone $b
	n=$(taken "$T/$b.out")
	out=$("$AMX" undo "$id" 2>&1) || bad "undo $id failed: $out"
	[ "$(tree "$w")" = "$(tree "$T/ref")" ] && [ -n "$n" ] && [ "$n" -le 3 ] &&
		ok "attributes ($b): converted files are read, and come back as checked out ($n taken from git's)" ||
		bad "attributes ($b): ${n:-?} taken; $(diff <(tree "$T/ref") <(tree "$w") | head -6)"
	# Asked once beside the checkout (aloneconv); by the start alone when
	# ls-tree failed beside it (alonefail); by both when the attributes
	# changed meanwhile (alonelate).
	asked=$(grep -c 'check-attr' "$T/gitlog")
	want=1
	case $b in alonelate | alonelink | alonefile) want=2 ;; esac
	[ "$asked" = $want ] || bad "$b: git check-attr asked $asked times, not $want: $(grep -c ls-tree "$T/gitlog") ls-tree"
done
rm -f "$T/fail-ls-tree" "$T/late-attrs" "$T/late-link" .git/info/attributes "$XDG_CONFIG_HOME/git/attributes"
git config --unset core.attributesFile
mv "$T/wti" .worktreeinclude && printf 'notes.txt\n' >>.worktreeinclude && echo note >notes.txt
PATH=$T/notebin:$PATH "$AMX" run --worktree --branch note -- rm notes.txt </dev/null >"$T/note.out" 2>&1 ||
	bad "session note failed: $(tail -5 "$T/note.out")"
id=$(sid note)
w=$(wdir "$id")
out=$("$AMX" undo "$id" 2>&1) || bad "undo $id failed: $out"
[ "$(cat "$w/notes.txt" 2>&1)" = note ] && ok "an untracked file .worktreeinclude copied in is in the start snapshot" ||
	bad "the copied notes.txt was not given back: $out"
rm -f notes.txt && git checkout -q -- .worktreeinclude
fsck_own "checkout alone"

# 3. A corrupt object in the project: its content is not what its name
# says. The checkout wrote that content; the snapshot cannot have it under
# the name, and says so (git fsck there tells more).
Q=$T/q
mkrepo "$Q" || exit 1
cd "$Q" || exit 1
# The first dir's files are checked out first: long before the index.
oid=$(git rev-parse HEAD:src/d00/f0020.txt)
obj=.git/objects/${oid:0:2}/${oid:2}
[ -f "$obj" ] || bad "the object $oid is not loose"
chmod u+w "$obj" && python3 -c 'import sys, zlib; open(sys.argv[1], "wb").write(zlib.compress(b"blob 11\0evil thing\n"))' "$obj"
[ "$(git cat-file -p "$oid")" = "evil thing" ] || bad "the object was not made corrupt"
AGENTMUX_DEBUG=1 "$AMX" run --worktree --branch bad -- true </dev/null >"$T/bad.out" 2>&1 ||
	bad "session bad failed: $(tail -5 "$T/bad.out")"
n=$(taken "$T/bad.out")
if [ "${n:-0}" -gt 0 ]; then
	grep -q "could not be copied from the project's repository (blob $oid is not what the project's object of that name holds: run git fsck there)" "$T/bad.out" &&
		ok "a corrupt object of the project is caught and told" ||
		bad "a corrupt object was not told: $(grep -i 'snapshot' "$T/bad.out" | grep -v 'agentmux: git' | tail -3)"
else
	bad "nothing was taken from git's checkout in the corrupt project: $(grep 'first snapshot' "$T/bad.out")"
fi
# The session's next snapshot reads every file again: it is whole.
id=$(sid bad)
out=$("$AMX" snapshots "$id" 2>&1)
grep -Eq '^ *[0-9]+ .* end ' <<<"$out" && ok "the session's end snapshot is taken all the same" || bad "snapshots after the corrupt start: $out"
cd "$T" || exit 1

# The same as an ordinary user, once, from root.
wt_as_user "$SELF" "${1:-}"

[ $fails -eq 0 ] && echo "all worktree start checks passed${1:+ ($1)}"
exit $((fails > 0))
