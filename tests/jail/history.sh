#!/bin/sh
# The user's own git history against a hostile jailed command: objects that
# existed at the start survive rm -rf .git/objects and gc --prune=now after
# rewritten refs, while git in the jail keeps working (commit, branch,
# rebase, fetch over the proxy) and its new objects reach the host checked;
# undo --refs puts every branch, tag, the stash and HEAD back, and no
# planted link in .git makes anyone write through it. As root and as an
# unprivileged user made for the test.
set -u
. "$(dirname "$0")/lib.sh"

# The jail sees the repository's .git at /.agentmux-git (its own .git is a
# dir of agentmux's whose entries are links there, tests/jail/gitdir.sh):
# what a check does to the repository's git dir from the jail, it does there.
G=/.agentmux-git


# Every object the repository has now, one id a line, sorted.
all_objects() {
	git -C "$P" cat-file --batch-all-objects --batch-check='%(objectname)' |
	    sort
}

# The user's refs (not agentmux's snapshots), HEAD and the stash.
user_refs() {
	git -C "$P" for-each-ref --format='%(refname) %(objectname)' |
	    grep -v '^refs/agentmux/' | grep -v "${1:-^$}"
	git -C "$P" symbolic-ref -q HEAD || git -C "$P" rev-parse HEAD
	git -C "$P" stash list
}

# Each check starts from a repository of its own, so that each fails alone.
fresh_repo() {
	rm -rf "$P"
	mkdir -p "$P"
	(cd "$P" && git init -q -b main . && git config user.email t@x &&
	    git config user.name t && echo hi >README && git add README &&
	    git commit -qm init) || exit 1
}

# A history worth destroying: branches, tags (light and annotated), a stash, packed and loose.
history_state() {
	fresh_repo
	(cd "$P" && echo a >h1 && git add h1 && git commit -qm h1 &&
	    git tag light && echo b >h2 && git add h2 && git commit -qm h2 &&
	    git tag -a -m annotated ann && git branch keepme HEAD~1 &&
	    echo s >h3 && git stash -q -u && git pack-refs --all &&
	    echo c >h4 && git add h4 && git commit -qm h4) || exit 1
	OBJ0=$(all_objects)
	REFS0=$(user_refs)
	LOG0=$(git -C "$P" reflog show --format='%H %gs' main)
}

objects_kept() {
	missing=$(printf '%s\n' "$OBJ0" | git -C "$P" cat-file --batch-check |
	    grep -c missing)
	[ "$missing" = 0 ] && ok || bad "$1: $missing objects of the start are gone"
	git -C "$P" fsck --no-dangling >/dev/null 2>&1 && ok ||
	    bad "$1: git fsck fails: $(git -C "$P" fsck --no-dangling 2>&1 | head -3)"
}

rm_objects() {
	history_state
	jrun -- sh -c 'rm -rf .git/objects; rm -rf .git/objects/*;
	    ls .git/objects | wc -l'
	case $OUT in *0*) ok ;; *) bad "rm -rf .git/objects did nothing in the jail: $OUT" ;; esac
	objects_kept "rm -rf .git/objects"
	[ "$(user_refs)" = "$REFS0" ] && ok || bad "rm -rf .git/objects changed refs"
}

# Refs rewritten, reflogs expired, everything unreachable pruned: then undo --refs.
gc_prune() {
	history_state
	jrun -- sh -c 'git checkout -q -b agent && echo x >x && git add x &&
	    git -c user.email=a@b -c user.name=a commit -qm x &&
	    git update-ref refs/heads/main $(git rev-list --max-parents=0 HEAD) &&
	    git tag -d light ann >/dev/null && git branch -D keepme >/dev/null &&
	    git stash clear && git reflog expire --expire=now --all &&
	    git gc -q --prune=now 2>/dev/null; git repack -adq 2>/dev/null;
	    git prune --expire=now; echo pruned'
	case $OUT in *pruned*) ok ;; *) bad "the destructive git did not run: $OUT" ;; esac
	objects_kept "gc --prune=now after rewriting refs"
	case $OUT in *"deleted the tag light"*"undo"*"--refs"*) ok ;;
	*) bad "the end of the session did not report the deleted tag: $OUT" ;; esac
	out=$("$AMX" undo last --refs 2>&1) || bad "undo --refs failed: $out"
	case $out in *"keep    agent"*) ok ;; *) bad "undo --refs did not name the new branch: $out" ;; esac
	[ "$(user_refs '^refs/heads/agent ')" = "$REFS0" ] && ok ||
	    bad "undo --refs did not put every ref back: $(user_refs) vs $REFS0"
	log=$(git -C "$P" reflog show --format='%H %gs' main)
	case $log in *"$LOG0") ok ;; *) bad "main's reflog lost entries: $log" ;; esac
}

# Tags (annotated and light), the stash and a branch deleted in the session,
# then the user's plain git gc over aged objects: undo --refs still puts
# them back (their objects were kept out of the repository, which gc prunes).
deleted_then_gc() {
	fresh_repo
	(cd "$P" && git checkout -q -b side && echo s >s && git add s &&
	    git commit -qm side && git tag sidetag && git checkout -q main &&
	    git branch -q -D side && echo v >v && git add v &&
	    git commit -qm v && git tag -a -m one v1 &&
	    echo x >>v && git stash -q && echo y >>v && git stash -q &&
	    git gc -q && find .git/objects -type f -exec touch -d \
	    '2 months ago' {} +) || exit 1
	refs0=$(user_refs)
	jrun -- sh -c 'git tag -d v1 sidetag >/dev/null && git stash clear &&
	    echo cleared'
	case $OUT in *cleared*) ok ;; *) bad "the deleting git did not run: $OUT" ;; esac
	git -C "$P" gc -q 2>/dev/null
	out=$("$AMX" undo last --refs 2>&1) || bad "undo --refs after gc failed: $out"
	[ "$(user_refs)" = "$refs0" ] && ok ||
	    bad "undo --refs after a host gc did not put the tags and stash back: $out"
	[ "$(git -C "$P" cat-file -t v1 2>&1)" = tag ] && ok ||
	    bad "the annotated tag's object did not come back: $out"
	git -C "$P" fsck --no-dangling >/dev/null 2>&1 && ok ||
	    bad "the repository is broken after undo --refs: $(git -C "$P" fsck --no-dangling 2>&1 | head -3)"
	case $out in *commit*gone*) bad "undo --refs calls an object a commit: $out" ;; *) ok ;; esac
}

# git stash drop stash@{1} (git reflog delete --rewrite: the entry after
# the dropped one gets a new old id): the dropped entry is put back once,
# and the one that was rewritten not added again, so the stash list is as
# at the start, each entry once, also after undo --refs.
stash_drop() {
	fresh_repo
	(cd "$P" && echo x >>README && git stash -q && echo y >>README &&
	    git stash -q) || exit 1
	stash0=$(git -C "$P" stash list --format=%H)
	jrun -- sh -c 'git stash drop -q stash@{1} && git stash list | wc -l'
	case $OUT in *1*) ok ;; *) bad "git stash drop did not run: $OUT" ;; esac
	case $OUT in *"logs/refs/stash (1 entry)"*) ok ;;
	*) bad "the end did not put back the one dropped entry: $OUT" ;; esac
	[ "$(git -C "$P" stash list --format=%H)" = "$stash0" ] && ok ||
	    bad "the stash list is not as at the start: $(git -C "$P" stash list)"
	out=$("$AMX" undo last --refs 2>&1)
	[ "$(git -C "$P" stash list --format=%H)" = "$stash0" ] && ok ||
	    bad "undo --refs changed the stash list: $out: $(git -C "$P" stash list)"
}

# An entry pushed on top of the user's stash: told in red with its id and
# message; undo --refs puts the stash list back exactly as at the start,
# so the user's git stash pop applies the user's entry, not the agent's.
stash_pushed() {
	fresh_repo
	(cd "$P" && echo user >>README && git stash -q) || exit 1
	stash0=$(git -C "$P" stash list --format=%H)
	jrun -- sh -c 'echo agent >>README && git -c user.email=a@b \
	    -c user.name=a stash push -q -m agentwork &&
	    echo PUSHED $(git rev-parse refs/stash)'
	new=$(printf '%s\n' "$OUT" | sed -n 's/^PUSHED //p')
	[ -n "$new" ] && ok || bad "stash_pushed: git stash push did not run: $OUT"
	case $OUT in *"pushed a stash entry"*"$new"*agentwork*"undo"*"--refs"*) ok ;;
	*) bad "stash_pushed: the pushed stash entry was not told: $OUT" ;; esac
	out=$(cd "$P" && "$AMX" undo last --refs 2>&1) ||
	    bad "stash_pushed: undo --refs failed: $out"
	case $out in *"drop    the stash entry $new"*) ok ;;
	*) bad "stash_pushed: undo --refs did not name the entry it took out: $out" ;; esac
	[ "$(git -C "$P" stash list --format=%H)" = "$stash0" ] && ok ||
	    bad "stash_pushed: the stash list is not as at the start: $out: $(git -C "$P" stash list)"
	(cd "$P" && git checkout -q -- README && git stash pop -q) &&
	    grep -q user "$P/README" && ! grep -q agent "$P/README" && ok ||
	    bad "stash_pushed: git stash pop after undo --refs did not apply the user's entry: $(cat "$P/README")"
}


# .git/logs and the dirs below it down to logs/refs/heads are mount points
# in the jail (logs/refs/heads/agentmux, worktree sessions' reflogs, is
# read-only in them): it can neither remove them nor rename them away, so
# it cannot put a file or a link in their place.
logs_kept() {
	fresh_repo
	jrun -- sh -c 'for d in '$G'/logs/refs/heads '$G'/logs/refs '$G'/logs; do
	    rm -rf $d 2>/dev/null; { echo x >$d || ln -sT /tmp $d; } 2>/dev/null &&
	    echo "REPLACED $d"; mv $d $d.away 2>/dev/null && echo "RENAMED $d"; done
	    [ -d '$G'/logs/refs/heads ] && [ ! -L '$G'/logs ] &&
	    [ ! -L '$G'/logs/refs ] && [ ! -L '$G'/logs/refs/heads ] && echo KEPT'
	case $OUT in
	*REPLACED*|*RENAMED*) bad "the jail replaced or renamed a dir of .git/logs: $OUT" ;;
	*KEPT*) ok ;;
	*) bad "the jail's attempt on .git/logs did not run: $OUT" ;;
	esac
}

# .git/logs, or a dir below it, made a file or a link (by the host while a
# session runs: the jail cannot, logs_kept): the reflogs kept at the start
# come back (a commit only a reflog names survives the user's gc), the
# thing is moved to the quarantine, said in red, and no message claims
# what was not done.
logs_replaced() {
	logs_kept
	for how in 'rm -rf .git/logs; echo x >.git/logs' \
	    'rm -rf .git/logs; ln -s /tmp .git/logs' \
	    'rm -rf .git/logs/refs; echo x >.git/logs/refs' \
	    'rm -rf .git/logs/refs/heads; ln -s /tmp .git/logs/refs/heads'; do
		fresh_repo
		(cd "$P" && echo d >d && git add d && git commit -qm dropped &&
		    git reset -q --hard HEAD~1) || exit 1
		dropped=$(git -C "$P" rev-parse HEAD@{1})
		beside_session "$how"
		case $OUT in *released*) ok ;; *) bad "$how: the session beside it did not run: $OUT" ;; esac
		[ -d "$P/.git/logs/refs/heads" ] && [ ! -L "$P/.git/logs" ] &&
		    [ ! -L "$P/.git/logs/refs" ] &&
		    [ ! -L "$P/.git/logs/refs/heads" ] && ok ||
		    bad "$how: .git/logs was left as it was made"
		git -C "$P" reflog show --format=%H main | grep -q "$dropped" &&
		    git -C "$P" reflog show --format=%H HEAD | grep -q "$dropped" &&
		    ok || bad "$how: the reflogs did not come back: $OUT"
		git -C "$P" gc -q --prune=now 2>/dev/null
		git -C "$P" cat-file -e "$dropped" 2>/dev/null && ok ||
		    bad "$how: a commit only the reflog named was pruned"
		case $OUT in *"replaced the reflogs"*"moved to"*) ok ;;
		*) bad "$how: the end did not say the reflogs were replaced: $OUT" ;; esac
		case $OUT in *"could not be written"*"put back"*) bad "$how: a false claim: $OUT" ;; *) ok ;; esac
	done
}

# .git/refs and .git/refs/heads are mount points in the jail (with
# refs/heads/agentmux, worktree sessions' branches, read-only in it): it
# can neither remove nor rename them, so it cannot put a file in their place.
refs_kept() {
	history_state
	jrun -- sh -c 'for d in '$G'/refs/heads '$G'/refs; do
	    rm -rf $d 2>/dev/null; echo x 2>/dev/null >$d && echo "REPLACED $d"
	    mv $d $d.away 2>/dev/null && echo "RENAMED $d"; done
	    [ -d '$G'/refs/heads ] && [ ! -L '$G'/refs ] &&
	    [ ! -L '$G'/refs/heads ] && echo KEPT'
	case $OUT in
	*REPLACED*|*RENAMED*) bad "the jail replaced or renamed .git/refs or refs/heads: $OUT" ;;
	*KEPT*) ok ;;
	*) bad "the jail's attempt on .git/refs did not run: $OUT" ;;
	esac
}

# .git/refs/heads or .git/refs/tags made a file or a link (and
# packed-refs deleted): the user's git saw "No commits yet" and its gc
# pruned the history. The thing goes to the quarantine, the dir comes
# back, said in red; undo --refs puts every branch and tag back, never
# through the link, and says nothing it did not do. refs/heads is replaced
# by the host while a session runs (the jail cannot, refs_kept); the link
# for refs/tags is made in the jail.
refs_replaced() {
	refs_kept
	jrun -- sh -c "ln -s $T/elsewhere $G/refs/tags/evil || echo REFUSED"
	case $OUT in *REFUSED*) ok ;; *) bad "the jail made a link in the repository's refs: $OUT" ;; esac
	for how in 'host:rm -rf .git/refs/heads .git/refs/tags; echo x >.git/refs/heads; echo y >.git/refs/tags' \
	    "host:rm -rf .git/refs/tags; ln -s $T/elsewhere .git/refs/tags"; do
		history_state
		rm -rf "$T/elsewhere"
		mkdir -p "$T/elsewhere"
		chmod 777 "$T/elsewhere"
		case $how in
		host:*)
			beside_session "${how#host:}; rm -f .git/packed-refs"
			case $OUT in *released*) ok ;; *) bad "$how: the session beside it did not run: $OUT" ;; esac ;;
		*)
			jrun -- sh -c "$how; rm -f .git/packed-refs && echo replaced"
			case $OUT in *replaced*) ok ;; *) bad "$how did not run: $OUT" ;; esac ;;
		esac
		[ -d "$P/.git/refs/heads" ] && [ ! -L "$P/.git/refs/heads" ] &&
		    [ -d "$P/.git/refs/tags" ] && [ ! -L "$P/.git/refs/tags" ] &&
		    ok || bad "$how: .git/refs was left as it was made"
		case $OUT in *"replaced"*"/refs/"*"moved to"*) ok ;;
		*) bad "$how: the end did not say the refs dir was replaced: $OUT" ;; esac
		out=$("$AMX" undo last --refs 2>&1) || bad "$how: undo --refs failed: $out"
		case $out in *"cannot"*) bad "$how: undo --refs could not put a ref back: $out" ;; *) ok ;; esac
		[ "$(user_refs)" = "$REFS0" ] && ok ||
		    bad "$how: undo --refs did not put every ref back: $(user_refs) vs $REFS0: $out"
		[ -z "$(ls -A "$T/elsewhere")" ] && ok ||
		    bad "$how: something was written through the planted link: $(ls -A "$T/elsewhere")"
		git -C "$P" gc -q --prune=now 2>/dev/null
		objects_kept "$how"
	done
}

# .git/HEAD made a link (out of the project or into it), deleted, or
# filled with garbage: put back as at the start, said in red; git works
# there again, undo --refs too, and the end's checks of the index run.
head_replaced() {
	for how in "ln -sf $T/outside/target.txt .git/HEAD" \
	    'ln -sf ../README .git/HEAD' 'rm -f .git/HEAD' \
	    'echo garbage >.git/HEAD'; do
		fresh_repo
		(cd "$P" && git checkout -q -b topic) || exit 1
		host_plant "cd '$P' && rm -f .git/HEAD; $how" \
		    "(rm -f $G/HEAD; echo x >$G/HEAD) 2>&1 | grep -q 'Permission denied' && echo REFUSED" 'echo replaced'
		case $OUT in *REFUSED*replaced*) ok ;; *) bad "$how: the jail was not refused, or the plant did not run: $OUT" ;; esac
		case $OUT in *".git/HEAD"*"put back as it was at the start (ref: refs/heads/topic)"*) ok ;;
		*) bad "$how: the end did not say HEAD was put back: $OUT" ;; esac
		[ ! -L "$P/.git/HEAD" ] &&
		    [ "$(git -C "$P" symbolic-ref HEAD 2>&1)" = refs/heads/topic ] &&
		    ok || bad "$how: HEAD is not back: $(git -C "$P" status 2>&1 | head -2)"
		case $OUT in *"cannot read the index"*) bad "$how: the end's checks of the index did not run: $OUT" ;; *) ok ;; esac
		out=$(cd "$P" && "$AMX" undo last --refs 2>&1) && ok ||
		    bad "$how: undo --refs failed: $out"
	done
}

# A .git/shallow made in the session hides the history from the user's git
# and its gc prunes it: taken out at the end, in red. One there at the
# start (a shallow clone) is read-only in the jail, and git works there.
shallow() {
	fresh_repo
	(cd "$P" && for i in 1 2 3; do echo $i >f && git add f &&
	    git commit -qm "c$i"; done) || exit 1
	n0=$(git -C "$P" rev-list --count HEAD)
	host_plant "git -C '$P' rev-parse HEAD >'$P/.git/shallow'" \
	    'git rev-parse HEAD >.git/shallow 2>&1 || echo refused' 'echo planted'
	case $OUT in *refused*planted*) ok ;; *) bad "the jail wrote .git/shallow, or the plant did not run: $OUT" ;; esac
	[ ! -e "$P/.git/shallow" ] && ok || bad "a planted .git/shallow stayed"
	git -C "$P" gc -q --prune=now 2>/dev/null
	[ "$(git -C "$P" rev-list --count HEAD)" = "$n0" ] && ok ||
	    bad "the history behind a planted .git/shallow was lost"
	case $OUT in *"made"*"/shallow"*"moved to"*) ok ;;
	*) bad "a planted .git/shallow was not told: $OUT" ;; esac
	# A shallow clone: its shallow file stays as it was, git works on.
	rm -rf "$T/full"
	mv "$P" "$T/full"
	git clone -q --depth 1 "file://$T/full" "$P" || exit 1
	rm -rf "$T/full"
	git -C "$P" config user.email t@x
	s0=$(cat "$P/.git/shallow")
	jrun -- sh -c '{ echo 0 >>.git/shallow; } 2>/dev/null && echo WROTE;
	    git log --oneline | wc -l;
	    git -c user.email=a@b -c user.name=a commit -q --allow-empty -m j &&
	    echo committed'
	case $OUT in *committed*) ok ;; *) bad "git in a shallow clone failed in the jail: $OUT" ;; esac
	case $OUT in *WROTE*) bad "the shallow clone's .git/shallow was writable in the jail" ;; *) ok ;; esac
	[ "$(cat "$P/.git/shallow")" = "$s0" ] && ok ||
	    bad "the shallow clone's .git/shallow was changed: $OUT"
	case $OUT in *"/shallow"*"moved to"*) bad "an unchanged .git/shallow was told: $OUT" ;; *) ok ;; esac
	git -C "$P" log --oneline >/dev/null 2>&1 && ok ||
	    bad "the shallow clone is broken after the session"
}

# A nested repository (a clone inside the project, not a submodule): its
# history is kept like the project's. rm -rf lib/.git leaves its objects,
# is said in red naming it, and undo --refs puts its refs, HEAD, reflogs
# and config back.
nested() {
	fresh_repo
	(cd "$P" && git init -q -b trunk lib && cd lib &&
	    git config user.email t@x && git config user.name t &&
	    echo 1 >a && git add a && git commit -qm one && git tag -a -m t t1 &&
	    echo 2 >a && git commit -qam two) || exit 1
	head0=$(git -C "$P/lib" rev-parse HEAD)
	refs0=$(git -C "$P/lib" for-each-ref --format='%(refname) %(objectname)')
	jrun -- sh -c 'rm -rf lib/.git 2>/dev/null; echo removed'
	case $OUT in *removed*) ok ;; *) bad "rm -rf lib/.git did not run: $OUT" ;; esac
	case $OUT in *"deleted the git repository"*"lib/.git"*) ok ;;
	*) bad "deleting a nested repository was not told: $OUT" ;; esac
	git -C "$P/lib" cat-file -e "$head0" 2>/dev/null ||
	    [ -d "$P/lib/.git/objects" ] && ok ||
	    bad "the nested repository's objects are gone"
	out=$(cd "$P" && "$AMX" undo last --refs 2>&1)
	[ "$(git -C "$P/lib" rev-parse HEAD 2>&1)" = "$head0" ] &&
	    [ "$(git -C "$P/lib" symbolic-ref HEAD 2>&1)" = refs/heads/trunk ] && ok ||
	    bad "undo --refs did not put the nested repository's HEAD back: $out"
	[ "$(git -C "$P/lib" for-each-ref --format='%(refname) %(objectname)')" = "$refs0" ] && ok ||
	    bad "undo --refs did not put the nested repository's refs back: $out"
	[ "$(git -C "$P/lib" config user.email)" = t@x ] && ok ||
	    bad "undo --refs did not put the nested repository's config back: $out"
	git -C "$P/lib" reflog show --format=%H trunk | grep -q "$head0" && ok ||
	    bad "the nested repository's reflog did not come back: $out"
	git -C "$P/lib" fsck --no-dangling >/dev/null 2>&1 && ok ||
	    bad "the nested repository is broken: $(git -C "$P/lib" fsck 2>&1 | head -3)"
}

# Every entry of repository $1's .git: path, mode, owner, size, and each
# file's checksum.
git_state() {
	(cd "$1/.git" && find . -printf '%p %m %u:%g %s\n' | sort &&
	    find . -type f -print0 | sort -z | xargs -0 md5sum)
}

# The agent swaps a nested repository's dir for a link to another of the
# user's repositories, outside the project (mv lib lib.old && ln -s OTHER
# lib). lib/.git is then not the git dir of the start: the end and undo
# --refs leave the other repository byte for byte as it was (modes, owner,
# refs, logs, objects, shallow) and say so in red. lib is ignored by the
# project (undo of one path leaves the link); $1 set: the agent repacks lib
# first (its objects all in one pack).
nested_link() {
	fresh_repo
	o="$T/other"
	rm -rf "$o" && git init -q -b master "$o" && (cd "$o" &&
	    git config user.email t@x && git config user.name t &&
	    echo o >o && git add o && git commit -qm other &&
	    git branch feature) || exit 1
	chmod 664 "$o/.git/config"
	git -C "$o" rev-parse HEAD >"$o/.git/shallow"
	(cd "$P" && echo lib/ >.gitignore && git add .gitignore &&
	    git commit -qm ignore && git init -q -b master lib && cd lib &&
	    git config user.email t@x && git config user.name t &&
	    echo l >l && git add l && git commit -qm lib &&
	    git commit -q --allow-empty -m lib2) || exit 1
	state0=$(git_state "$o")
	jrun -- sh -c "${1:+git -C lib repack -a -q && }mv lib lib.old &&
	    ln -s '$o' lib && echo swapped"
	case $OUT in *swapped*) ok ;; *) bad "nested_link${1:+ (repack)}: the swap did not run: $OUT" ;; esac
	case $OUT in *"lib/.git"*"not the dir it was at the start"*) ok ;;
	*) bad "nested_link${1:+ (repack)}: the swapped nested repository was not told: $OUT" ;; esac
	[ "$(git_state "$o")" = "$state0" ] && ok ||
	    bad "nested_link${1:+ (repack)}: the end changed the repository the link points to: $(printf '%s\n' "$state0" >"$T/state0"; git_state "$o" | diff "$T/state0" - | head -8)"
	out=$(cd "$P" && "$AMX" undo last --refs "$P/README" 2>&1)
	case $out in *"lib/.git"*"not the dir it was at the start"*) ok ;;
	*) bad "nested_link${1:+ (repack)}: undo --refs did not tell the swapped nested repository: $out" ;; esac
	[ "$(git_state "$o")" = "$state0" ] && ok ||
	    bad "nested_link${1:+ (repack)}: undo --refs changed the repository the link points to: $out"
	# The nested repository itself, moved aside, is as it was.
	git -C "$P/lib.old" fsck --no-dangling >/dev/null 2>&1 && ok ||
	    bad "nested_link${1:+ (repack)}: lib.old is broken: $(git -C "$P/lib.old" fsck 2>&1 | head -3)"
	# Put back as the message says: the next start brings the session's
	# objects in, and the end of the next session sees lib as it was.
	rm "$P/lib" && mv "$P/lib.old" "$P/lib" || exit 1
	jrun -- true
	case $OUT in *"not the dir it was"*)
		bad "nested_link${1:+ (repack)}: lib put back is still told as swapped: $OUT" ;;
	*) ok ;; esac
	left=$(find "$XDG_DATA_HOME" -path '*/history/*/work' 2>/dev/null)
	[ -z "$left" ] && ok ||
	    bad "nested_link${1:+ (repack)}: lib put back, its objects were not brought in: $left"
	git -C "$P/lib" fsck --no-dangling >/dev/null 2>&1 && ok ||
	    bad "nested_link${1:+ (repack)}: lib is broken: $(git -C "$P/lib" fsck 2>&1 | head -3)"
	rm -rf "$o"
}
nested_link_repack() { nested_link 1; }

# Past the bounds of the search for git dirs (256 of them, 16 dirs deep):
# dummy git dirs in .git/modules do not take the protection from a real
# nested repository, and what is left unprotected is said in red at the
# start, counted.
nested_cap() {
	fresh_repo
	(cd "$P" && git init -q -b trunk lib && cd lib &&
	    git config user.email t@x && git config user.name t &&
	    echo 1 >a && git add a && git commit -qm one) || exit 1
	head0=$(git -C "$P/lib" rev-parse HEAD)
	# The 300 dummies' dirs made by one mkdir (a fork each cost 10 s of
	# the check under load); their files by the shell itself.
	i=0
	set --
	while [ $i -lt 300 ]; do
		set -- "$@" "$P/.git/modules/zz/d$i/objects"
		i=$((i + 1))
	done
	mkdir -p "$@" || exit 1
	for d in "$@"; do
		d=${d%/objects}
		echo 'ref: refs/heads/main' >"$d/HEAD" && : >"$d/config" || exit 1
	done
	git init -q "$P/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q/deep" || exit 1
	jrun -- sh -c 'rm -rf lib/.git 2>/dev/null; echo removed'
	case $OUT in *removed*) ok ;; *) bad "rm -rf lib/.git did not run: $OUT" ;; esac
	case $OUT in *"deleted the git repository"*"lib/.git"*) ok ;;
	*) bad "dummies in .git/modules took the protection from lib: $OUT" ;; esac
	# The project's, lib's and 300 dummies': 256 protected.
	case $OUT in *"46 git dirs in the project"*"not protected"*) ok ;;
	*) bad "the git dirs left unprotected were not told: $OUT" ;; esac
	case $OUT in *"1 dir in the project is too deep"*) ok ;;
	*) bad "the dirs too deep to search were not told: $OUT" ;; esac
	out=$(cd "$P" && "$AMX" undo last --refs 2>&1)
	[ "$(git -C "$P/lib" rev-parse HEAD 2>&1)" = "$head0" ] && ok ||
	    bad "undo --refs did not put lib back: $out"
}

# Git dirs not named .git are protected too, found by what they hold: a
# bare clone in an ignored dir, and the target of a --separate-git-dir kept
# in the project's own .git (found only through lib/.git's "gitdir:
# ../.git/lib-sep", relative). Deleted in the jail, each is said in red by
# name, its objects stay, and undo --refs puts its refs and HEAD back.
nested_bare() {
	fresh_repo
	(cd "$P" && echo backups/ >.gitignore && git add .gitignore &&
	    git commit -qm ignore && git clone -q --bare . backups/p.git &&
	    git init -q -b trunk --separate-git-dir "$P/.git/lib-sep" lib &&
	    echo 'gitdir: ../.git/lib-sep' >lib/.git && cd lib &&
	    git config user.email t@x && git config user.name t &&
	    echo 1 >a && git add a && git commit -qm one && git tag t1) || exit 1
	bhead=$(git -C "$P/backups/p.git" rev-parse HEAD)
	brefs=$(git -C "$P/backups/p.git" for-each-ref --format='%(refname) %(objectname)')
	lhead=$(git -C "$P/lib" rev-parse HEAD)
	lrefs=$(git -C "$P/lib" for-each-ref --format='%(refname) %(objectname)')
	jrun -- sh -c 'rm -rf backups '$G'/lib-sep 2>/dev/null; echo removed'
	case $OUT in *removed*) ok ;; *) bad "nested_bare: rm -rf did not run: $OUT" ;; esac
	case $OUT in *"deleted the git repository $P/backups/p.git"*) ok ;;
	*) bad "nested_bare: deleting a bare clone was not told: $OUT" ;; esac
	case $OUT in *"deleted the git repository $P/.git/lib-sep"*) ok ;;
	*) bad "nested_bare: deleting a --separate-git-dir was not told: $OUT" ;; esac
	case $("$AMX" show last 2>&1) in *tampering*"backups/p.git"*) ok ;;
	*) bad "nested_bare: show does not flag the bare clone" ;; esac
	out=$(cd "$P" && "$AMX" undo last --refs 2>&1)
	[ "$(git -C "$P/backups/p.git" rev-parse HEAD 2>&1)" = "$bhead" ] &&
	    [ "$(git -C "$P/backups/p.git" for-each-ref --format='%(refname) %(objectname)')" = "$brefs" ] && ok ||
	    bad "nested_bare: undo --refs did not put the bare clone back: $out"
	git -C "$P/backups/p.git" fsck --no-dangling >/dev/null 2>&1 && ok ||
	    bad "nested_bare: the bare clone is broken: $(git -C "$P/backups/p.git" fsck 2>&1 | head -3)"
	[ "$(git -C "$P/lib" rev-parse HEAD 2>&1)" = "$lhead" ] &&
	    [ "$(git -C "$P/lib" for-each-ref --format='%(refname) %(objectname)')" = "$lrefs" ] && ok ||
	    bad "nested_bare: undo --refs did not put the separate git dir back: $out"
	git -C "$P/lib" fsck --no-dangling >/dev/null 2>&1 && ok ||
	    bad "nested_bare: the separate git dir is broken: $(git -C "$P/lib" fsck 2>&1 | head -3)"
}

# A remote-tracking branch moved to a forged commit (the user's next
# `git merge origin/master` would take it in), or made, is said in red
# with the old and new ids; undo --refs puts the moved one back. A session
# that leaves them alone says nothing of them.
remote_moved() {
	fresh_repo
	(cd "$P" && git remote add origin https://example.invalid/r.git &&
	    git update-ref refs/remotes/origin/master HEAD) || exit 1
	old=$(git -C "$P" rev-parse refs/remotes/origin/master)
	jrun -- sh -c 'git status >/dev/null; echo quiet'
	case $OUT in *quiet*) ok ;; *) bad "remote_moved: the quiet session did not run: $OUT" ;; esac
	case $OUT in *remote-tracking*) bad "remote_moved: untouched remote refs told: $OUT" ;; *) ok ;; esac
	jrun -- sh -c 'c=$(git -c user.email=a@b -c user.name=a commit-tree 	    "HEAD^{tree}" -p HEAD -m forged) && git update-ref 	    refs/remotes/origin/master $c && git update-ref 	    refs/remotes/origin/evil $c && echo FORGED $c'
	new=$(printf '%s\n' "$OUT" | sed -n 's/^FORGED //p')
	[ -n "$new" ] && ok || bad "remote_moved: the forging did not run: $OUT"
	case $OUT in *"moved the remote-tracking branch origin/master"*"from $old to $new"*"undo"*"--refs"*"git fetch"*) ok ;;
	*) bad "remote_moved: a moved remote-tracking branch was not told: $OUT" ;; esac
	case $OUT in *"made the remote-tracking branch origin/evil"*"at $new"*) ok ;;
	*) bad "remote_moved: a made remote-tracking branch was not told: $OUT" ;; esac
	case $("$AMX" show last 2>&1) in *tampering*"origin/master"*) ok ;;
	*) bad "remote_moved: show does not flag it" ;; esac
	out=$(cd "$P" && "$AMX" undo last --refs 2>&1)
	[ "$(git -C "$P" rev-parse refs/remotes/origin/master)" = "$old" ] && ok ||
	    bad "remote_moved: undo --refs did not put origin/master back: $out"
}

# Refs the session made that git finds before a branch or tag of the same
# short name: refs/main, refs/tags/main and refs/v1 in the project,
# lib/.git/main in a nested repository (git 2.39 reads each for "main"
# before refs/heads/main, warning only that the name is ambiguous: a
# 'git reset --hard main' took the forged commit). Moved out, told; the
# user's names then mean their own refs again. A tag of the user's named
# as a branch, there before, is left alone.
shadow_refs() {
	fresh_repo
	(cd "$P" && git tag v1 && git tag dup && git branch dup && git branch dup2 &&
	    git branch feature/x && git update-ref refs/remotes/origin/main HEAD &&
	    git init -q -b main lib &&
	    git -C lib -c user.email=a@b -c user.name=a commit -q --allow-empty -m l &&
	    git -C lib branch feature/x && git -C lib update-ref refs/remotes/origin/main HEAD &&
	    git tag v2 && git -C lib branch topic && git -C lib branch deep/y &&
	    git -C lib branch link/z) || exit 1
	main0=$(git -C "$P" rev-parse refs/heads/main)
	lib0=$(git -C "$P/lib" rev-parse refs/heads/main)
	jrun -- sh -c 'c=$(git -c user.email=a@b -c user.name=a commit-tree "HEAD^{tree}" -m forged) &&
	    c2=$(git -c user.email=a@b -c user.name=a commit-tree "HEAD^{tree}" -m forged2) &&
	    git update-ref refs/tags/dup2 $c && git pack-refs --all && git update-ref refs/tags/dup2 $c2 &&
	    git update-ref refs/main $c && git update-ref refs/tags/main $c &&
	    git update-ref refs/v1 $c && git update-ref refs/tags/origin/main $c &&
	    git update-ref refs/feature/x $c && git -C lib rev-parse HEAD >/dev/null &&
	    echo $c >lib/.git/main && mkdir -p lib/.git/feature lib/.git/origin &&
	    echo $c >lib/.git/feature/x && echo $c >lib/.git/origin/main &&
	    { mkdir -p .git/feature 2>/dev/null && echo $c >.git/feature/x; true; } &&
	    lc=$(git -C lib -c user.email=a@b -c user.name=a commit-tree "HEAD^{tree}" -m forged) &&
	    git -C lib update-ref refs/heads/evil $lc && git update-ref refs/heads/evil $c &&
	    { ln -s refs/heads/evil .git/refs/v2 2>/dev/null; true; } &&
	    ln -s refs/heads/evil lib/.git/topic &&
	    mkdir lib/.git/elsewhere lib/.git/deep && echo $lc >lib/.git/elsewhere/z &&
	    ln -s elsewhere lib/.git/link && ln -s ../elsewhere/z lib/.git/deep/y &&
	    echo FORGED $c'
	case $OUT in *FORGED*) ok ;; *) bad "shadow_refs: the forging did not run: $OUT" ;; esac
	for r in refs/main refs/tags/main refs/v1 refs/tags/origin/main refs/tags/dup2; do
		case $OUT in *"made the ref $r in $P/.git, which git finds before a ref of yours"*) ok ;;
		*) bad "shadow_refs: $r was not told: $OUT" ;; esac
	done
	case $OUT in *"ref refs/tags/dup2"*"delete it with 'git update-ref --no-deref -d refs/tags/dup2'"*) ok ;;
	*) bad "shadow_refs: a tag both packed and loose was not told with how to delete it: $OUT" ;; esac
	case $OUT in *"made the ref main in $P/lib/.git"*"moved to"*) ok ;;
	*) bad "shadow_refs: lib/.git/main was not moved out, told: $OUT" ;; esac
	case $OUT in *"ref refs/tags/dup in"*|*"ref refs/dup in"*) bad "shadow_refs: the user's own tag named as a branch was told: $OUT" ;; *) ok ;; esac
	[ "$(git -C "$P" rev-parse main 2>&1)" = "$main0" ] && ok ||
	    bad "shadow_refs: main is not the user's branch: $(git -C "$P" rev-parse main 2>&1)"
	[ "$(git -C "$P" rev-parse v1 2>&1)" = "$main0" ] && ok ||
	    bad "shadow_refs: v1 is not the user's tag"
	[ "$(git -C "$P/lib" rev-parse main 2>&1)" = "$lib0" ] && ok ||
	    bad "shadow_refs: lib's main is not the user's branch: $(git -C "$P/lib" rev-parse main 2>&1)"
	# Deeper: refs/feature/x, and lib/.git/feature/x and lib/.git/origin/main
	# (git reads $GIT_DIR/origin/main for origin/main before the remote-tracking
	# branch): moved out too, the names unambiguous again.
	case $OUT in *"made the ref refs/feature/x in $P/.git, which git finds before a ref of yours of the short name feature/x"*) ok ;;
	*) bad "shadow_refs: refs/feature/x was not told: $OUT" ;; esac
	for n in feature/x origin/main; do
		case $OUT in *"made the ref $n in $P/lib/.git, which git finds before a ref of yours of the short name $n"*"moved to"*) ok ;;
		*) bad "shadow_refs: lib/.git/$n was not moved out, told: $OUT" ;; esac
		[ "$(git -C "$P/lib" rev-parse "$n" 2>&1)" = "$lib0" ] && ok ||
		    bad "shadow_refs: lib's $n is not the user's: $(git -C "$P/lib" rev-parse "$n" 2>&1)"
	done
	[ "$(git -C "$P" rev-parse feature/x 2>&1)" = "$main0" ] && ok ||
	    bad "shadow_refs: feature/x is not the user's branch: $(git -C "$P" rev-parse feature/x 2>&1)"
	# Links git follows: refs/v2 (the jail refuses a link there) and
	# lib/.git/topic as symbolic refs to the session's branch evil,
	# lib/.git/link a dir link on the way to link/z, lib/.git/deep/y a link
	# to a forged ref's file. Moved out, never followed.
	# (The end's scan for links in git dirs may get to one first, and say so.)
	for n in topic link deep/y; do
		case $OUT in *"made the link $n in $P/lib/.git, which git finds"*"moved to"*|\
		    *"lib/.git/$n in a git dir was made a link in the session"*"moved to"*) ok ;;
		*) bad "shadow_refs: the link lib/.git/$n was not moved out: $OUT" ;; esac
	done
	[ "$(git -C "$P" rev-parse v2 2>&1)" = "$main0" ] && ok ||
	    bad "shadow_refs: v2 is not the user's tag: $(git -C "$P" rev-parse v2 2>&1)"
	for n in topic deep/y link/z; do
		[ "$(git -C "$P/lib" rev-parse "$n" 2>&1)" = "$lib0" ] && ok ||
		    bad "shadow_refs: lib's $n is not the user's: $(git -C "$P/lib" rev-parse "$n" 2>&1)"
	done
	[ -e "$P/lib/.git/elsewhere/z" ] && ok || bad "shadow_refs: a file the links named was taken too"
	rm -rf "$P/lib"
	# A shallow clone with a branch named "shallow": the shallow file the
	# end puts back holds an id, and is git's own, not a ref (review 11 F8).
	(cd "$P" && git -c user.email=a@b -c user.name=a commit -q --allow-empty -m two &&
	    git clone -q --depth 1 "file://$P" lib && git -C lib branch shallow) || exit 1
	jrun -- sh -c 'git -C lib rev-parse HEAD >>lib/.git/shallow && echo GREW'
	case $OUT in *GREW*) ok ;; *) bad "shadow_refs: the shallow file did not grow: $OUT" ;; esac
	case $OUT in *"made the ref shallow"*) bad "shadow_refs: the shallow file was taken for a ref: $OUT" ;; *) ok ;; esac
	git -C "$P/lib" log --oneline >/dev/null 2>&1 && [ -e "$P/lib/.git/shallow" ] && ok ||
	    bad "shadow_refs: the shallow clone is broken after the end: $OUT"
	rm -rf "$P/lib"
}

# More shadows in a nested repository (reviews of the above): a link inside
# refs/ that git goes through as a dir, a NUL in packed-refs (git reads
# past it), a symbolic ref git takes and agentmux's reading does not, a tag
# over a remote-tracking branch the session deleted, a dir parked in one session and moved into place in the next
# (a rename changes only the dir's ctime; a dir with a link in it moved
# into refs/ the same way), a capitals name (DEV; and in a
# linked worktree's git dir, where git run in that worktree reads it first),
# a name under a dir git keeps too (svn/trunk). And a shadow of a ref only the
# session made is none of the user's: left alone.
shadow_refs_more() {
	fresh_repo
	(cd "$P" && git init -q -b main lib &&
	    git -C lib -c user.email=a@b -c user.name=a commit -q --allow-empty -m l &&
	    git -C lib branch feature2/x && git -C lib branch topic2 && git -C lib branch DEV &&
	    git -C lib branch team/feature3/x && git -C lib branch topic3 &&
	    git -C lib update-ref refs/remotes/up2/main HEAD &&
	    git -C lib update-ref refs/remotes/svn/trunk HEAD &&
	    git -C lib update-ref refs/remotes/up/main HEAD) || exit 1
	rm -rf "$T/libwt"
	git -C "$P/lib" worktree add -q "$T/libwt" -b wtb || exit 1
	lib0=$(git -C "$P/lib" rev-parse refs/heads/main)
	jrun -- sh -c 'lc=$(git -C lib -c user.email=a@b -c user.name=a commit-tree "HEAD^{tree}" -m forged) &&
	    mkdir -p lib/.git/refs/zz lib/.git/parked && echo $lc >lib/.git/refs/zz/x &&
	    ln -s zz lib/.git/refs/feature2 &&
	    printf "# pack-refs with: peeled fully-peeled \n%s refs/tags/zz\0\n%s refs/tags/topic2\n" $lc $lc >lib/.git/packed-refs &&
	    echo $lc >lib/.git/DEV && mkdir lib/.git/svn && echo $lc >lib/.git/svn/trunk &&
	    echo $lc >lib/.git/worktrees/libwt/DEV && mkdir lib/.git/evil &&
	    echo $lc >lib/.git/evil/x && echo "ref: evil/x" >lib/.git/topic3 &&
	    git -C lib update-ref -d refs/remotes/up2/main && git -C lib update-ref refs/tags/up2/main $lc &&
	    echo $lc >lib/.git/parked/main && mkdir -p wrap/zz3 && echo $lc >wrap/zz3/x &&
	    ln -s zz3 wrap/feature3 && mkdir wrap2 && ln -s ../../../../../../outside-log wrap2/main &&
	    git -C lib branch newb/x $lc && mkdir lib/.git/newb && echo $lc >lib/.git/newb/x &&
	    echo FORGED'
	case $OUT in *FORGED*) ok ;; *) bad "shadow_refs_more: the forging did not run: $OUT" ;; esac
	case $OUT in *"made $P/lib/.git/refs/feature2 a link (to zz)"*"moved to"*|\
	    *"lib/.git/refs/feature2 in a git dir was made a link in the session"*"moved to"*) ok ;;
	*) bad "shadow_refs_more: the link refs/feature2 was not moved out: $OUT" ;; esac
	case $OUT in *"ref refs/tags/topic2 in $P/lib/.git"*"delete it with 'git update-ref --no-deref -d refs/tags/topic2'"*) ok ;;
	*) bad "shadow_refs_more: refs/tags/topic2, past a NUL in packed-refs, was not told: $OUT" ;; esac
	# A symbolic ref agentmux's reading refuses but git takes; a tag named as
	# a remote-tracking branch the session deleted (the next fetch makes it again).
	case $OUT in *"made the ref topic3 in $P/lib/.git, which git finds"*"moved to"*) ok ;;
	*) bad "shadow_refs_more: lib/.git/topic3 (ref: evil/x) was not moved out: $OUT" ;; esac
	case $OUT in *"made the ref refs/tags/up2/main in $P/lib/.git, which git finds"*"moved to"*) ok ;;
	*) bad "shadow_refs_more: refs/tags/up2/main, over a deleted up2/main, was not moved out: $OUT" ;; esac
	git -C "$P/lib" update-ref refs/remotes/up2/main "$lib0"
	for n in topic3 up2/main; do
		[ "$(git -C "$P/lib" rev-parse "$n" 2>&1)" = "$lib0" ] && ok ||
		    bad "shadow_refs_more: lib's $n is not the user's: $(git -C "$P/lib" rev-parse "$n" 2>&1)"
	done
	for n in DEV svn/trunk; do
		case $OUT in *"made the ref $n in $P/lib/.git, which git finds"*"moved to"*) ok ;;
		*) bad "shadow_refs_more: lib/.git/$n was not moved out: $OUT" ;; esac
	done
	case $OUT in *"made the ref worktrees/libwt/DEV in $P/lib/.git, which git finds"*"moved to"*) ok ;;
	*) bad "shadow_refs_more: lib/.git/worktrees/libwt/DEV was not moved out: $OUT" ;; esac
	[ "$(git -C "$T/libwt" rev-parse DEV 2>&1)" = "$lib0" ] && ok ||
	    bad "shadow_refs_more: DEV in lib's worktree is not the user's: $(git -C "$T/libwt" rev-parse DEV 2>&1)"
	case $OUT in *"ref newb/x"*) bad "shadow_refs_more: a shadow of the session's own branch was moved: $OUT" ;; *) ok ;; esac
	for n in feature2/x DEV svn/trunk; do
		[ "$(git -C "$P/lib" rev-parse "$n" 2>&1)" = "$lib0" ] && ok ||
		    bad "shadow_refs_more: lib's $n is not the user's: $(git -C "$P/lib" rev-parse "$n" 2>&1)"
	done
	jrun -- sh -c 'mv lib/.git/parked lib/.git/up && mv wrap lib/.git/refs/team &&
	    mkdir -p lib/.git/logs/refs/heads && mv wrap2 lib/.git/logs/refs/heads/feat && echo MOVED'
	# The reflog of a branch feat/main would be written through it: the link
	# made last session outside any git dir, its dir moved in this one.
	case $OUT in *"lib/.git/logs/refs/heads/feat/main in a git dir was made a link in the session"*"moved to"*) ok ;;
	*) bad "shadow_refs_more: the link brought into lib/.git/logs in a dir moved there was not moved out: $OUT" ;; esac
	[ -L "$P/lib/.git/logs/refs/heads/feat/main" ] && bad "shadow_refs_more: lib/.git/logs/refs/heads/feat/main is still a link" || ok
	case $OUT in *"made $P/lib/.git/refs/team/feature3 a link (to zz3)"*"moved to"*) ok ;;
	*) bad "shadow_refs_more: the link refs/team/feature3, made last session and moved into refs/ in its dir, was not moved out: $OUT" ;; esac
	[ "$(git -C "$P/lib" rev-parse team/feature3/x 2>&1)" = "$lib0" ] && ok ||
	    bad "shadow_refs_more: lib's team/feature3/x is not the user's: $(git -C "$P/lib" rev-parse team/feature3/x 2>&1)"
	case $OUT in *"made the ref up/main in $P/lib/.git, which git finds"*"moved to"*) ok ;;
	*) bad "shadow_refs_more: lib/.git/up/main, moved into place in its dir, was not moved out: $OUT" ;; esac
	[ "$(git -C "$P/lib" rev-parse up/main 2>&1)" = "$lib0" ] && ok ||
	    bad "shadow_refs_more: lib's up/main is not the user's: $(git -C "$P/lib" rev-parse up/main 2>&1)"
	rm -rf "$P/lib" "$T/libwt"
}

# Shadows of a remote-tracking branch that does not exist yet: the user's
# next fetch makes refs/remotes/up3/fix, and then git finds the session's
# tag up3/fix, $GIT_DIR/up3/fix or refs/up3/fix first (review 2 (c)). Any
# name under a remote of the start's is taken as the user's. And a file
# named as a branch config.x (git's own config is not it: review F7).
shadow_refs_future() {
	fresh_repo
	(cd "$P" && git init -q -b main lib &&
	    git -C lib -c user.email=a@b -c user.name=a commit -q --allow-empty -m l &&
	    git -C lib update-ref refs/remotes/up3/main HEAD &&
	    git -C lib branch config.x) || exit 1
	lib0=$(git -C "$P/lib" rev-parse refs/heads/main)
	jrun -- sh -c 'lc=$(git -C lib -c user.email=a@b -c user.name=a commit-tree "HEAD^{tree}" -m forged) &&
	    git -C lib tag up3/fix $lc && mkdir -p lib/.git/up3/deep && echo $lc >lib/.git/up3/deep/x &&
	    echo $lc >lib/.git/up3/next && git -C lib update-ref refs/up3/feat $lc &&
	    echo $lc >lib/.git/config.x && git -C lib tag v1 $lc && echo FORGED'
	case $OUT in *FORGED*) ok ;; *) bad "shadow_refs_future: the forging did not run: $OUT" ;; esac
	for n in refs/tags/up3/fix up3/deep/x up3/next refs/up3/feat config.x; do
		case $OUT in *"made the ref $n in $P/lib/.git, which git finds"*"next fetch makes"*"moved to"*) ok ;;
		*) bad "shadow_refs_future: $n was not moved out: $OUT" ;; esac
	done
	# The user's next fetch.
	for n in up3/fix up3/deep/x up3/next up3/feat; do
		git -C "$P/lib" update-ref "refs/remotes/$n" "$lib0"
	done
	for n in up3/fix up3/deep/x up3/next up3/feat config.x; do
		[ "$(git -C "$P/lib" rev-parse "$n" 2>&1)" = "$lib0" ] && ok ||
		    bad "shadow_refs_future: lib's $n is not the user's: $(git -C "$P/lib" rev-parse "$n" 2>&1)"
	done
	git -C "$P/lib" rev-parse -q --verify refs/tags/v1 >/dev/null && ok ||
	    bad "shadow_refs_future: the session's tag v1, which shadows nothing, was taken"
	# Review 4: a remote named as git's own dir (git svn's svn/), one only
	# configured (never fetched), the bare remote's name (git remote
	# set-head makes up3/HEAD), HEAD refs under refs/remotes, a file named
	# as a branch sharedindex.foo; the user's annex store under a remote
	# of that name is not walked.
	(cd "$P/lib" && git update-ref refs/remotes/svn/trunk HEAD &&
	    git update-ref refs/remotes/annex/main HEAD &&
	    git remote add never "$T/nowhere.git" && git branch sharedindex.foo) || exit 1
	jrun -- sh -c 'lc=$(git -C lib -c user.email=a@b -c user.name=a commit-tree "HEAD^{tree}" -m forged2) &&
	    git -C lib tag svn/fix $lc && git -C lib update-ref refs/svn/feat $lc &&
	    git -C lib tag never/fix $lc && git -C lib tag up3 $lc &&
	    git -C lib update-ref refs/remotes/up3/HEAD $lc && git -C lib update-ref refs/remotes/up3/fix2/HEAD $lc &&
	    echo $lc >lib/.git/sharedindex.foo && mkdir -p lib/.git/annex/objects && echo blob >lib/.git/annex/objects/k1 &&
	    echo FORGED2'
	case $OUT in *FORGED2*) ok ;; *) bad "shadow_refs_future: the second forging did not run: $OUT" ;; esac
	for n in refs/tags/svn/fix refs/svn/feat refs/tags/never/fix refs/tags/up3 refs/remotes/up3/HEAD refs/remotes/up3/fix2/HEAD sharedindex.foo; do
		case $OUT in *"made the ref $n in $P/lib/.git, which git finds"*"moved to"*) ok ;;
		*) bad "shadow_refs_future: $n was not moved out: $OUT" ;; esac
	done
	case $OUT in *"remote-tracking branch up3/HEAD"*|*"remote-tracking branch up3/fix2/HEAD"*)
		bad "shadow_refs_future: a made up3/HEAD was told with git fetch's advice: $OUT" ;; *) ok ;; esac
	for n in svn/fix svn/feat never/fix; do
		git -C "$P/lib" update-ref "refs/remotes/$n" "$lib0"
	done
	git -C "$P/lib" update-ref refs/remotes/up3/HEAD "$lib0"
	for n in svn/fix svn/feat never/fix up3 sharedindex.foo; do
		[ "$(git -C "$P/lib" rev-parse "$n" 2>&1)" = "$lib0" ] && ok ||
		    bad "shadow_refs_future: lib's $n is not the user's: $(git -C "$P/lib" rev-parse "$n" 2>&1)"
	done
	[ -f "$P/lib/.git/annex/objects/k1" ] && ok || bad "shadow_refs_future: the annex store under a remote named annex was walked"
	# A walk cut (4,096 entries): the remote's dir moved whole.
	git -C "$P/lib" update-ref refs/remotes/up4/main HEAD || exit 1
	jrun -- sh -c 'lc=$(git -C lib -c user.email=a@b -c user.name=a commit-tree "HEAD^{tree}" -m forged3) &&
	    mkdir -p lib/.git/up4/a && cd lib/.git/up4/a && seq 4200 | xargs mkdir && cd ../../../.. &&
	    echo $lc >lib/.git/up4/zfix && echo FORGED3'
	case $OUT in *FORGED3*) ok ;; *) bad "shadow_refs_future: the third forging did not run: $OUT" ;; esac
	case $OUT in *"left more under $P/lib/.git/up4 than agentmux looks through"*"moved whole to"*) ok ;;
	*) bad "shadow_refs_future: a walk cut under lib/.git/up4 was not told, the dir moved: $OUT" ;; esac
	[ ! -e "$P/lib/.git/up4" ] && ok || bad "shadow_refs_future: lib/.git/up4 was left"
	# Review 5: a file at lib/.git/lfs over a branch lfs (git's dir name, not
	# its file); set-head's symbolic ref kept; a moved origin/HEAD told
	# without fetch's advice; a tool's file under a remote's dir that is no
	# ref to git left; forty tags told up to a bound, then counted.
	(cd "$P/lib" && git branch lfs && git update-ref refs/remotes/up6/HEAD HEAD &&
	    git update-ref refs/remotes/up7/main HEAD) || exit 1
	jrun -- sh -c 'lc=$(git -C lib -c user.email=a@b -c user.name=a commit-tree "HEAD^{tree}" -m forged4) &&
	    echo $lc >lib/.git/lfs && git -C lib symbolic-ref refs/remotes/up7/HEAD refs/remotes/up7/main &&
	    git -C lib update-ref --no-deref refs/remotes/up6/HEAD $lc &&
	    mkdir -p lib/.git/up3 && echo "{}" >lib/.git/up3/state.json &&
	    for i in $(seq 40); do git -C lib tag up3/t$i $lc || exit 1; done && echo FORGED4'
	case $OUT in *FORGED4*) ok ;; *) bad "shadow_refs_future: the fourth forging did not run: $OUT" ;; esac
	# (Told, or counted past the forty tags: the refs are looked at first.)
	[ ! -e "$P/lib/.git/lfs" ] && ok || bad "shadow_refs_future: lib/.git/lfs, a file over the branch lfs, was not moved out: $OUT"
	[ "$(git -C "$P/lib" rev-parse lfs 2>&1)" = "$lib0" ] && ok || bad "shadow_refs_future: lib's lfs is not the user's"
	[ "$(git -C "$P/lib" symbolic-ref refs/remotes/up7/HEAD 2>&1)" = refs/remotes/up7/main ] && ok ||
	    bad "shadow_refs_future: set-head's up7/HEAD was taken: $OUT"
	case $OUT in *"moved up6/HEAD in $P/lib/.git from"*"no fetch puts it back"*) ok ;;
	*) bad "shadow_refs_future: a moved up6/HEAD was not told as no fetch mends it: $OUT" ;; esac
	[ -f "$P/lib/.git/up3/state.json" ] && ok || bad "shadow_refs_future: a file under lib/.git/up3 that is no ref was moved"
	case $OUT in *"and 9 more refs the session made in $P/lib/.git that git finds before one of yours were moved to"*) ok ;;
	*) bad "shadow_refs_future: forty shadows were not told up to 32, then counted: $OUT" ;; esac
	[ "$(printf '%s\n' "$OUT" | grep -c 'which git finds before')" -le 33 ] && ok ||
	    bad "shadow_refs_future: more than 32 shadows told one by one"
	# Review 6 F4: those counted are listed, each name and where it went.
	list=$(printf '%s\n' "$OUT" | sed -n 's/.*and 9 more refs.* (\(.*more-shadows\.txt\) lists each name.*/\1/p' | head -n 1)
	if [ -n "$list" ] && [ -f "$list" ] && [ "$(wc -l <"$list")" = 9 ]; then
		n=0
		while IFS="$(printf '\t')" read -r name kept; do
			case $name in refs/tags/up3/t*|lfs) ;; *) bad "shadow_refs_future: the list names $name" ;; esac
			[ -f "$kept" ] && n=$((n + 1)) || bad "shadow_refs_future: the list says $name went to $kept, which is not there"
		done <"$list"
		[ "$n" = 9 ] && ok || bad "shadow_refs_future: the list of counted shadows is short: $(cat "$list")"
	else
		bad "shadow_refs_future: the shadows counted past 32 were not listed: $OUT"
	fi
	rm -rf "$P/lib"
	# Review 6: a remote named fork (a tool's name too) and a branch under
	# patches/ are looked after; names a fetch may bring (a tag v9, v8, v7)
	# shadowed by a file at the top or a ref refs/X; a bisect's
	# BISECT_START (a pseudo-ref's form) left.
	(cd "$P" && git init -q -b main lib &&
	    git -C lib -c user.email=a@b -c user.name=a commit -q --allow-empty -m l &&
	    git -C lib update-ref refs/remotes/fork/main HEAD && git -C lib branch patches/x) || exit 1
	lib0=$(git -C "$P/lib" rev-parse refs/heads/main)
	jrun -- sh -c 'lc=$(git -C lib -c user.email=a@b -c user.name=a commit-tree "HEAD^{tree}" -m forged5) &&
	    mkdir lib/.git/fork lib/.git/patches && echo $lc >lib/.git/fork/main && echo $lc >lib/.git/fork/newb &&
	    echo $lc >lib/.git/patches/x && echo $lc >lib/.git/v9 && git -C lib update-ref refs/v8 $lc &&
	    mc=$(git -c user.email=a@b -c user.name=a commit-tree "HEAD^{tree}" -m forged6) &&
	    git update-ref refs/v7 $mc && echo $lc >lib/.git/BISECT_START && echo FORGED5'
	case $OUT in *FORGED5*) ok ;; *) bad "shadow_refs_future: the fifth forging did not run: $OUT" ;; esac
	git -C "$P/lib" update-ref refs/remotes/fork/newb "$lib0"
	p0=$(git -C "$P" rev-parse HEAD)
	git -C "$P/lib" tag v9 "$lib0" && git -C "$P/lib" tag v8 "$lib0" && git -C "$P" tag v7 "$p0" || exit 1
	for n in fork/main fork/newb patches/x v9 v8; do
		[ "$(git -C "$P/lib" rev-parse "$n" 2>&1)" = "$lib0" ] && ok ||
		    bad "shadow_refs_future: lib's $n is not the user's: $(git -C "$P/lib" rev-parse "$n" 2>&1)"
	done
	[ "$(git -C "$P" rev-parse v7 2>&1)" = "$p0" ] && ok ||
	    bad "shadow_refs_future: the project's v7 is not the user's: $(git -C "$P" rev-parse v7 2>&1)"
	case $OUT in *"made the ref refs/v7 in $P/.git, which git finds"*"moved to"*) ok ;;
	*) bad "shadow_refs_future: refs/v7 was not told: $OUT" ;; esac
	[ -f "$P/lib/.git/BISECT_START" ] && ok || bad "shadow_refs_future: lib/.git/BISECT_START was taken"
	git -C "$P" tag -d v7 >/dev/null
	rm -rf "$P/lib"
	# The project's own .git, whose top the jail sees read only: a dir and
	# files the user's tools make there meanwhile are not the session's, even
	# under a remote's name (review 5 F1).
	git -C "$P" update-ref refs/remotes/up5/main HEAD && git -C "$P" update-ref refs/remotes/gitbutler/x HEAD || exit 1
	head=$(git -C "$P" rev-parse HEAD)
	(sleep 1; mkdir -p "$P/.git/up5" "$P/.git/gitbutler" && echo "$head" >"$P/.git/up5/fix" &&
	    echo "$head" >"$P/.git/gitbutler/ref") &
	hostpid=$!
	jrun -- sh -c 'sleep 2.5; echo WAITED'
	wait $hostpid
	[ -f "$P/.git/up5/fix" ] && [ -f "$P/.git/gitbutler/ref" ] && ok ||
	    bad "shadow_refs_future: the user's files under .git/up5 and .git/gitbutler were taken: $OUT"
	case $OUT in *"up5/fix"*|*"gitbutler/ref"*) bad "shadow_refs_future: the user's files told as the session's: $OUT" ;; *) ok ;; esac
	rm -rf "$P/.git/up5" "$P/.git/gitbutler"
	git -C "$P" update-ref -d refs/remotes/up5/main && git -C "$P" update-ref -d refs/remotes/gitbutler/x
}

# Ref values git reads as well as a lower-case id: upper-case hex, an id
# with text after it, "ref:" without its space, over packed values, and a
# replace ref so written (the user's git show and checkout then give the
# agent's blob), a packed tag named twice, the agent's value first (git's
# binary search takes it). The real git resolves each (so the value matters); the
# end tells what moved, and undo --refs puts every one back.
refs_as_git_reads() {
	fresh_repo
	(cd "$P" && git remote add origin https://example.invalid/r.git &&
	    echo data >file && git add file && git commit -qm file &&
	    git update-ref refs/remotes/origin/master HEAD && git tag v1 &&
	    git tag v2 && git tag v3 && git branch side &&
	    git pack-refs --all) || exit 1
	refs0=$(user_refs)
	old=$(git -C "$P" rev-parse HEAD)
	# packed-refs is read only at the top of the sealed dir (the jail's own
	# copy is merged back, and one listing a ref twice is refused): its
	# lines are forged from the host while the session runs.
	v2=$(git -C "$P" rev-parse v2)
	v3=$(git -C "$P" rev-parse v3)
	host_plant "c=\$(cat '$P/.forged'); U=\$(echo \$c | tr a-f A-F);
	    sed -i \"s/^$v2 refs\\/tags\\/v2\\\$/\$U refs\\/tags\\/v2/\" '$P/.git/packed-refs';
	    sed -i \"s/^$v3 refs\\/tags\\/v3\\\$/\$c refs\\/tags\\/v3\\n$v3 refs\\/tags\\/v3/\" '$P/.git/packed-refs'" \
	    'set -e; c=$(git -c user.email=a@b -c user.name=a \
	    commit-tree "HEAD^{tree}" -p HEAD -m forged);
	    U=$(echo $c | tr a-f A-F); mkdir -p '$G'/refs/remotes/origin;
	    echo $U >'$G'/refs/remotes/origin/master;
	    echo "$c junk" >'$G'/refs/tags/v1;
	    printf "ref:refs/remotes/origin/master\n" >'$G'/refs/heads/side;
	    { sed -i "s/^/x/" '$G'/packed-refs 2>/dev/null && echo PACKED-WRITTEN; } || true;
	    b=$(echo evil | git hash-object -w --stdin);
	    f=$(git rev-parse HEAD:file); mkdir -p '$G'/refs/replace;
	    echo $b | tr a-f A-F >'$G'/refs/replace/$f; echo $c >.forged' \
	    'echo FORGED $(cat .forged); rm -f .forged'
	case $OUT in *PACKED-WRITTEN*) bad "refs_as_git_reads: the jail wrote the sealed dir's packed-refs: $OUT" ;; *) ok ;; esac
	new=$(printf '%s\n' "$OUT" | sed -n 's/^FORGED //p')
	[ -n "$new" ] && ok || bad "refs_as_git_reads: the forging did not run: $OUT"
	# The real git reads each value so.
	for r in refs/remotes/origin/master v1 side v2 v3; do
		[ "$(git -C "$P" rev-parse "$r" 2>&1)" = "$new" ] && ok ||
		    bad "refs_as_git_reads: git does not resolve $r to the forged commit (the test proves nothing)"
	done
	[ "$(git -C "$P" show HEAD:file 2>&1)" = evil ] && ok ||
	    bad "refs_as_git_reads: git does not take the upper-case replace ref (the test proves nothing)"
	case $OUT in *"moved the remote-tracking branch origin/master"*"to $new"*) ok ;;
	*) bad "refs_as_git_reads: the upper-case origin/master was not told: $OUT" ;; esac
	case $OUT in *"moved the tag v1"*) ok ;;
	*) bad "refs_as_git_reads: the tag moved by '<id> junk' was not told: $OUT" ;; esac
	case $OUT in *"moved the tag v2"*) ok ;;
	*) bad "refs_as_git_reads: the tag moved in packed-refs alone was not told as moved: $OUT" ;; esac
	case $OUT in *"moved the tag v3"*) ok ;;
	*) bad "refs_as_git_reads: the tag named twice in packed-refs (git reads the first) was not told: $OUT" ;; esac
	case $OUT in *"deleted the tag v2"*) bad "refs_as_git_reads: a moved packed tag told as deleted: $OUT" ;; *) ok ;; esac
	case $OUT in *"replace ref refs/replace/"*) ok ;;
	*) bad "refs_as_git_reads: the upper-case replace ref was not told: $OUT" ;; esac
	out=$(cd "$P" && "$AMX" undo last --refs 2>&1) ||
	    bad "refs_as_git_reads: undo --refs failed: $out"
	case $out in *"reset   refs/remotes/origin/master"*) ok ;; *) bad "refs_as_git_reads: undo --refs did not see origin/master: $out" ;; esac
	[ "$(user_refs)" = "$refs0" ] && ok ||
	    bad "refs_as_git_reads: undo --refs did not put every ref back: $(user_refs) vs $refs0: $out"
	# v3 was listed twice: one line per ref is left.
	twice=$(sed -n 's/^[0-9a-fA-F]*[[:space:]]//p' "$P/.git/packed-refs" |
	    grep -v '^#' | sort | uniq -d)
	[ -z "$twice" ] && ok ||
	    bad "refs_as_git_reads: undo --refs left refs listed twice in packed-refs: $twice: $(cat "$P/.git/packed-refs")"
	[ "$(git -C "$P" show HEAD:file 2>&1)" = data ] && ok ||
	    bad "refs_as_git_reads: the replace ref stayed after undo --refs: $out"
	[ "$(git -C "$P" rev-parse side)" = "$old" ] && ok ||
	    bad "refs_as_git_reads: the branch side was not put back: $out"
}

# commit, branch, rebase and fetch over the proxy work in the jail, and their objects reach the host.
git_works() {
	history_state
	UP=$T/up
	mkdir -p "$UP/git"
	git init -q --bare "$UP/git/repo.git" &&
	    git clone -q "$UP/git/repo.git" "$T/seed" 2>/dev/null &&
	    (cd "$T/seed" && for i in 1 2 3; do echo "$i" >"f$i" &&
	    git add "f$i" && git -c user.name=t -c user.email=t@t commit -qm \
	    "up$i"; done && git push -q origin HEAD:main) &&
	    git -C "$UP/git/repo.git" gc -q &&
	    git -C "$UP/git/repo.git" update-server-info || exit 1
	UPSTREAM_LIFETIME=300 python3 "$AMX_UPSTREAM" "$UP" </dev/null \
	    >"$T/up.log" 2>&1 &
	KILL_PIDS="${KILL_PIDS:-} $!"
	i=0
	while [ ! -s "$UP/ports" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
	read -r HP _ _ <"$UP/ports" || { bad "the test upstream did not start"; return; }
	up=$(git -C "$UP/git/repo.git" rev-parse main)
	jrun --on-unknown deny --upstream-ca "$UP/ca.pem" --allow "127.0.0.1:$HP" \
	    -- sh -c "set -e; git -c user.email=a@b -c user.name=a commit -q \
	    --allow-empty -m one; git checkout -q -b feat; echo f >feat &&
	    git add feat && git -c user.email=a@b -c user.name=a commit -qm feat;
	    git checkout -q main; git -c user.email=a@b -c user.name=a commit -q \
	    --allow-empty -m two; git -c user.email=a@b -c user.name=a rebase -q \
	    main feat; git fetch -q https://127.0.0.1:$HP/git/repo.git \
	    main:refs/remotes/up/main; echo FEAT \$(git rev-parse feat);
	    echo OVERLAYS \$(grep -c ' overlay ' /proc/self/mountinfo) \
	    \$(grep -c ' overlay .*fsync=volatile' /proc/self/mountinfo)"
	[ "$RC" = 0 ] && ok || bad "git in the jail failed: $OUT"
	# .git/objects is a volatile overlay: its unmount at the end does not
	# sync the whole file system under the data dir.
	case $OUT in
	*"OVERLAYS 1 1"*) ok ;;
	*) bad "the objects overlay is not volatile (overlays, volatile): $OUT" ;;
	esac
	feat=$(printf '%s\n' "$OUT" | sed -n 's/^FEAT //p')
	git -C "$P" cat-file -e "$feat" 2>/dev/null &&
	    [ "$(git -C "$P" rev-parse feat)" = "$feat" ] && ok ||
	    bad "the rebased commit did not reach the host: $OUT"
	git -C "$P" cat-file -e "$up" 2>/dev/null &&
	    git -C "$P" log --oneline "$up" | grep -q up1 && ok ||
	    bad "the fetched pack did not reach the host"
	objects_kept "commit, rebase and fetch"
	# The overlay's dirs go once imported (work/work is left mode 000).
	left=$(find "$XDG_DATA_HOME" -path '*/history/*/work' 2>/dev/null)
	[ -z "$left" ] && ok || bad "an imported history overlay was left: $left"
}

# The agent's commits reach the host while the session runs (the user's own git works there).
during_session() {
	fresh_repo
	rm -f "$T/commit" "$T/seen"
	"$AMX" run -C "$P" -- sh -c 'git -c user.email=a@b -c user.name=a commit \
	    -q --allow-empty -m during && git rev-parse HEAD >commit.tmp &&
	    i=0; while [ ! -e seen ] && [ $i -lt 600 ]; do sleep 0.1;
	    i=$((i + 1)); done; rm -f commit.tmp seen' </dev/null \
	    >"$T/during.out" 2>&1 &
	pid=$!
	i=0
	while [ ! -s "$P/commit.tmp" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
	c=$(cat "$P/commit.tmp" 2>/dev/null)
	i=0
	while ! git -C "$P" cat-file -e "$c" 2>/dev/null && [ $i -lt 300 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	git -C "$P" cat-file -e "$c" 2>/dev/null && ok ||
	    bad "the session's commit did not reach the host while it ran"
	touch "$P/seen"
	wait "$pid"
}

# A loose object forged (another's bytes under a name), a link and a FIFO in the jail's objects.
# (Landlock refuses the FIFO, and the link in the sealed git dir, where the kernel has it:
# tests/jail/snap.sh *planted*, tests/jail/gitdir.sh.)
forged_objects() {
	fresh_repo
	ln -sf "$T/outside/secret.txt" "$T/outside/link-target" 2>/dev/null
	jrun -- sh -c 'set -e; blob=$(echo real | git hash-object -w --stdin);
	    other=$(echo forged | git hash-object --stdin);
	    d=.git/objects/$(echo $other | cut -c1-2); mkdir -p $d;
	    cp .git/objects/$(echo $blob | cut -c1-2)/$(echo $blob | cut -c3-) \
	    $d/$(echo $other | cut -c3-);
	    ln -s '"$HOME"'/.ssh/id_rsa .git/objects/aa/$(printf "%038d" 0) 2>/dev/null ||
	    { mkdir -p .git/objects/aa; ln -s '"$HOME"'/.ssh/id_rsa \
	    .git/objects/aa/$(printf "%038d" 0) 2>/dev/null || echo "NO LINK"; };
	    mkdir -p .git/objects/bb;
	    mkfifo .git/objects/bb/$(printf "%038d" 1) 2>/dev/null ||
	    echo "NO FIFO";
	    echo OTHER $other'
	other=$(printf '%s\n' "$OUT" | sed -n 's/^OTHER //p')
	[ -n "$other" ] && ok || bad "the forging did not run: $OUT"
	git -C "$P" cat-file -e "$other" 2>/dev/null &&
	    bad "a forged object reached the host as $other" || ok
	[ ! -e "$P/.git/objects/aa/$(printf '%038d' 0)" ] &&
	    [ ! -e "$P/.git/objects/bb/$(printf '%038d' 1)" ] && ok ||
	    bad "a planted link or FIFO reached the host's objects"
	case $OUT in *"not what their names said"*) ok ;;
	*) bad "the forged object was not reported: $OUT" ;; esac
}

# A reflog made a link to a host file: nobody writes through it, undo --refs mends it.
reflog_link() {
	fresh_repo
	orig=$(cat "$T/outside/target.txt")
	jrun -- sh -c "ln -sf $T/outside/target.txt .git/logs/refs/heads/main &&
	    ln -sf $T/outside/target.txt .git/logs/refs/heads/later &&
	    git branch later"
	(cd "$P" && git -c user.email=a@b -c user.name=a commit -q --allow-empty \
	    -m host && git branch -q -f later HEAD) 2>/dev/null
	[ "$(cat "$T/outside/target.txt")" = "$orig" ] && ok ||
	    bad "the host's git wrote through a reflog link the jail planted"
	[ ! -L "$P/.git/logs/refs/heads/main" ] &&
	    [ ! -L "$P/.git/logs/refs/heads/later" ] && ok ||
	    bad "a reflog link stayed in .git/logs"
	out=$("$AMX" undo last --refs 2>&1)
	[ "$(cat "$T/outside/target.txt")" = "$orig" ] && ok ||
	    bad "undo --refs wrote through a reflog link: $out"
}

# agentmux killed mid-session, before it brought the commit back: the next start does.
crash() {
	fresh_repo
	rm -f "$P/go" "$P/done" "$P/ready"
	"$AMX" run -C "$P" -- sh -c 'touch ready; i=0; while [ ! -e go ] &&
	    [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done;
	    git -c user.email=a@b -c user.name=a commit -q --allow-empty \
	    -m crashed && git rev-parse HEAD >done.tmp && mv done.tmp done;
	    sleep 60' </dev/null >/dev/null 2>&1 &
	pid=$!
	i=0
	while [ ! -e "$P/ready" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
	# agentmux stopped: its jail goes on, and nothing brings objects back.
	kill -STOP "$pid"
	touch "$P/go"
	i=0
	while [ ! -s "$P/done" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
	c=$(cat "$P/done")
	kill -KILL "$pid"
	wait "$pid" 2>/dev/null
	rm -f "$P/go" "$P/done" "$P/ready"
	git -C "$P" cat-file -e "$c" 2>/dev/null &&
	    bad "the commit reached the host while agentmux was stopped (the check proves nothing)"
	jrun -- true
	git -C "$P" cat-file -e "$c" 2>/dev/null && ok ||
	    bad "a killed session's commit was not brought back at the next start: $OUT"
	git -C "$P" fsck --no-dangling >/dev/null 2>&1 && ok ||
	    bad "the repository is broken after a killed session"
}

# The git dir's own modes: the session opens .git, its refs, hooks, HEAD,
# index and config (and a nested repository's git dir) to every local
# user. The end puts each back and names it; a ref the session made loses
# its group and world write; undo --refs puts back what was opened after.
mode_of() { stat -c %a "$P/$1"; }
git_modes() {
	fresh_repo
	(cd "$P" && git init -q -b trunk lib && mkdir -p .git/hooks .git/info &&
	    echo x >.git/info/exclude && git pack-refs --all) || exit 1
	set -- .git .git/refs .git/refs/heads .git/hooks .git/objects .git/info \
	    .git/logs .git/HEAD .git/index .git/packed-refs .git/config \
	    .git/info/exclude lib/.git lib/.git/config
	m0=; for f in "$@"; do m0="$m0 $f=$(mode_of "$f")"; done
	jrun -- sh -c 'G=/.agentmux-git; git branch newb && mkdir $G/refs/heads/team &&
	    git branch team/x && chmod 0666 $G/refs/heads/newb \
	    $G/refs/heads/team/x && chmod 0777 $G/refs/heads/team &&
	    chmod 0777 $G $G/refs $G/refs/heads \
	    $G/objects $G/logs lib/.git &&
	    chmod 0666 $G/HEAD $G/index $G/packed-refs \
	    lib/.git/config && echo chmods-ran'
	case $OUT in *chmods-ran*) ok ;; *) bad "the chmods did not run: $OUT" ;; esac
	m1=; for f in "$@"; do m1="$m1 $f=$(mode_of "$f")"; done
	[ "$m1" = "$m0" ] && ok || bad "the git dir's modes were not put back: was$m0, now$m1"
	for f in .git/HEAD .git/index .git/refs/heads lib/.git/config; do
		case $OUT in *"$f mode 06"*|*"$f mode 07"*|*"$f mode 27"*) ok ;;
		*) bad "$f opened to every user was not told: $OUT" ;; esac
	done
	for f in .git/refs/heads/newb .git/refs/heads/team .git/refs/heads/team/x; do
		case $(stat -c %A "$P/$f") in ?????w*|????????w*)
			bad "$f, made by the session, left $(mode_of "$f")" ;;
		*) ok ;; esac
	done
	# Opened after the end (as if it could not put them back): undo --refs does.
	chmod 0777 "$P/.git/refs/heads" "$P/lib/.git"
	chmod 0666 "$P/.git/HEAD"
	# As root, one given to another user too (chown takes the set-id bits).
	own0=$(stat -c %u:%g "$P/.git/logs")
	[ "$(id -u)" = 0 ] && chown 65534:65534 "$P/.git/logs"
	out=$(cd "$P" && "$AMX" undo last --refs 2>&1)
	m2=; for f in "$@"; do m2="$m2 $f=$(mode_of "$f")"; done
	[ "$m2" = "$m0" ] && ok || bad "undo --refs did not put the modes back: was$m0, now$m2: $out"
	[ "$(stat -c %u:%g "$P/.git/logs")" = "$own0" ] && ok ||
	    bad "undo --refs did not give .git/logs back to its owner: $out"
	if [ "$(id -u)" = 0 ]; then
		case $out in *".git/logs mode"*"changed its owner"*) ok ;;
		*) bad "undo --refs did not tell the owner change: $out" ;; esac
	fi
	# core.sharedRepository=group at the start: git's group-writable refs stay.
	fresh_repo
	git -C "$P" config core.sharedRepository group
	jrun -- sh -c 'git branch shared && chmod o+w .git/refs && echo made'
	case $(mode_of .git/refs/heads/shared) in 66?) ok ;;
	*) bad "core.sharedRepository=group: the new ref lost its group write: $(mode_of .git/refs/heads/shared): $OUT" ;; esac
	case $(stat -c %A "$P/.git/refs") in ????????w*)
		bad "core.sharedRepository=group: .git/refs left world-writable" ;;
	*) ok ;; esac
}

# A nested repository's git dir is no mount point in the jail: a project
# file is put in place of one of its entries, as a hard link (the jail
# cannot make one; the host does, beside it). The end must not give that
# file another mode or owner (it is not a git dir entry), and says so.
git_modes_linked() {
	fresh_repo
	(cd "$P" && git init -q lib && echo l >lib/l && git -C lib add l &&
	    git -C lib -c user.name=t -c user.email=t@x commit -qm lib) || exit 1
	echo notes >"$P/shared.txt"
	chmod 664 "$P/shared.txt"
	# As root, another user's file, writable by all: the jail may link it.
	if [ "$(id -u)" = 0 ]; then
		chmod 666 "$P/shared.txt"
		chown 65534:65534 "$P/shared.txt"
	fi
	s0=$(stat -c '%a %u:%g' "$P/shared.txt")
	# The jail makes no hard link (seccomp: EXDEV); the host makes it while the session runs.
	(i=0; while [ ! -e "$P/linkme" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
	    rm -f "$P/lib/.git/description" && ln "$P/shared.txt" "$P/lib/.git/description" &&
	    touch "$P/linked") &
	lpid=$!
	jrun -- sh -c 'ln shared.txt lib/x 2>&1 | grep -q "cross-device" && echo REFUSED; touch linkme
	    i=0; while [ ! -e linked ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done; rm -f linked linkme
	    [ "$(stat -c %h lib/.git/description)" = 2 ] && echo linked'
	wait "$lpid"
	case $OUT in *REFUSED*linked*) ok ;; *) bad "the link was not refused in the jail, or not made beside it: $OUT" ;; esac
	s1=$(stat -c '%a %u:%G' "$P/shared.txt")
	[ "$(stat -c '%a %u:%g' "$P/shared.txt")" = "$s0" ] && ok ||
	    bad "the end changed shared.txt, linked into lib/.git: $s0 -> $s1: $OUT"
	case $OUT in *"lib/.git/description a file with 1 other name"*) ok ;;
	*) bad "the hard link into lib/.git was not told: $OUT" ;; esac
}

# A dir the session makes in .git/modules (where each submodule's git dir
# is kept apart), opened to every user with a dir in it: put back too.
git_modes_modules() {
	fresh_repo
	S=$T/subsrc
	rm -rf "$S"
	(git init -q "$S" && cd "$S" && echo s >s && git add s &&
	    git -c user.name=t -c user.email=t@x commit -qm s) || exit 1
	(cd "$P" && git -c protocol.file.allow=always submodule add -q "$S" \
	    sub 2>/dev/null && git -c user.name=t -c user.email=t@x commit -qm sub) ||
	    exit 1
	jrun -- sh -c 'mkdir -p .git/modules/new/hooks &&
	    chmod 0777 .git/modules/new .git/modules/new/hooks && echo made'
	case $OUT in
	*made*)
		for d in .git/modules/new .git/modules/new/hooks; do
			case $(stat -c %A "$P/$d") in ????????w*)
				bad "$d, made by the session, left $(mode_of "$d"): $OUT" ;;
			*) ok ;; esac
		done ;;
	*) echo "git_modes_modules: .git/modules not writable in the jail here: $OUT" ;;
	esac
}

# A submodule's refs (its git dir in .git/modules): the session deletes
# its tag and moves its branch; the end tells the tag deleted and that
# undo --refs puts it back, which it did not (it put back the project's
# own git dir and nested clones, never .git/modules).
module_refs() {
	fresh_repo
	S=$T/subsrc
	rm -rf "$S"
	(git init -q -b main "$S" && cd "$S" && echo s >s && git add s &&
	    git -c user.name=t -c user.email=t@x commit -qm s) || exit 1
	(cd "$P" && git -c protocol.file.allow=always submodule add -q "$S" \
	    sub 2>/dev/null && git -c user.name=t -c user.email=t@x commit -qm sub &&
	    git -C sub tag st1 && git -C sub tag st2 && git -C sub pack-refs --all &&
	    git -C sub tag st3) || exit 1
	sub0=$(git -C "$P/sub" for-each-ref --format='%(refname) %(objectname)'; git -C "$P/sub" rev-parse HEAD)
	jrun -- sh -c 'cd sub && git tag -d st1 st3 >/dev/null &&
	    git -c user.name=a -c user.email=a@x commit -q --allow-empty -m agent &&
	    git tag -f st2 >/dev/null && echo moved'
	case $OUT in *moved*) ok ;; *) bad "module_refs: the session did not change the submodule: $OUT" ;; esac
	case $OUT in *"deleted refs/tags/st1"*|*"deleted st1"*|*"st1"*"undo"*) ok ;;
	*) bad "module_refs: the end did not tell the submodule's tag deleted: $OUT" ;; esac
	out=$(cd "$P" && "$AMX" undo last --refs 2>&1) && ok ||
	    bad "module_refs: undo --refs failed: $out"
	sub1=$(git -C "$P/sub" for-each-ref --format='%(refname) %(objectname)'; git -C "$P/sub" rev-parse HEAD)
	[ "$sub1" = "$sub0" ] && ok ||
	    bad "module_refs: the submodule's refs are not the start's: $sub1 vs $sub0: $out"
	case $out in *".git/modules/sub"*"reset   refs/tags/st1"*) ok ;;
	*) bad "module_refs: undo --refs did not say what it put back in the submodule: $out" ;; esac
}

# A packed-refs line git cannot parse (git then fails at every ref
# command): told at the end, in red, the line quoted; undo --refs takes it
# out, and puts back the ref whose line the session broke.
packed_bad() {
	fresh_repo
	(cd "$P" && git tag v1 && git tag v2 && git pack-refs --all) || exit 1
	refs0=$(user_refs)
	# The top of the sealed dir is read only: the jail cannot; the host does, beside a session.
	jrun -- sh -c 'echo "bad-line here" >>'$G'/packed-refs 2>&1; echo tried'
	# (Its stderr and stdout may come in either order.)
	case $OUT in *"Permission denied"*) ok ;; *) bad "packed_bad: the jail wrote the sealed dir's packed-refs: $OUT" ;; esac
	# Also lines git cannot read that look like refs (review 4 F2): an id
	# of SHA-256's length in a SHA-1 repository, C's vertical tab for the
	# separator, a peeled id too long; "@" alone (review 5: git dies,
	# "packed refname is dangerous").
	beside_session 'v=$(git rev-parse v2) &&
	    sed -i "s/ refs\/tags\/v1\$/  refs\/tags\/v1/" .git/packed-refs &&
	    echo "bad-line here" >>.git/packed-refs &&
	    printf "%saaaaaaaaaaaaaaaaaaaaaaaa refs/heads/long\n%s\vrefs/heads/vt\n%s refs/heads/pl\n^%saaaaaaaaaaaaaaaaaaaaaaaa\n%s @\n" \
	    "$v" "$v" "$v" "$v" "$v" >>.git/packed-refs && echo broke'
	case $OUT in *released*) ok ;; *) bad "packed_bad: the session beside did not run: $OUT" ;; esac
	# The end mends the file (told in red, the file as left kept) before it keeps the objects of moved refs.
	git -C "$P" for-each-ref >/dev/null 2>&1 && ok ||
	    bad "packed_bad: the end left a packed-refs git cannot read: $(git -C "$P" for-each-ref 2>&1 | head -2): $OUT"
	case $OUT in *"packed-refs held a line git cannot parse"*"bad-line here"*"agentmux took it out"*) ok ;;
	*) bad "packed_bad: the line git cannot parse was not told taken out: $OUT" ;; esac
	case $OUT in *"cannot parse"*"  refs/tags/v1"*) ok ;;
	*) bad "packed_bad: v1's broken line was not told: $OUT" ;; esac
	for l in refs/heads/long refs/heads/vt; do
		case $OUT in *"cannot parse"*"$l"*) ok ;;
		*) bad "packed_bad: the line of $l git cannot read was not told: $OUT" ;; esac
	done
	grep -q 'refs/heads/long\|refs/heads/vt\|^^.\{41\}\| @$' "$P/.git/packed-refs" &&
	    bad "packed_bad: a line git cannot read is left: $(cat "$P/.git/packed-refs")" || ok
	case $OUT in *"could not be kept"*) bad "packed_bad: the end could not keep the objects of moved refs: $OUT" ;;
	*) ok ;; esac
	left=$(find "$XDG_DATA_HOME" -path '*/history/*/packed-refs-as-left' 2>/dev/null | head -1)
	[ -n "$left" ] && grep -q '^bad-line here$' "$left" && grep -q '  refs/tags/v1$' "$left" && ok ||
	    bad "packed_bad: the file as the session left it was not kept in the history dir: ${left:-none}"
	out=$(cd "$P" && "$AMX" undo last --refs 2>&1) && ok ||
	    bad "packed_bad: undo --refs failed: $out"
	git -C "$P" for-each-ref >/dev/null 2>&1 && ok ||
	    bad "packed_bad: git still fails after undo --refs: $(git -C "$P" for-each-ref 2>&1 | head -2): $out"
	# (pl's own line git reads: the session's new branch, kept as undo keeps one.)
	[ "$(user_refs 'refs/heads/pl ')" = "$refs0" ] && ok ||
	    bad "packed_bad: a ref was lost: $(user_refs 2>&1) vs $refs0: $out"
}

# packed-refs whose header claims its refs sorted, with the user's refs
# listed out of order (git looks a ref up by halving the file: main, a
# branch and a tag, packed only, look gone to git; HEAD looks unborn):
# the end takes the claim out, told in red; undo --refs does too.
packed_unsorted() {
	fresh_repo
	(cd "$P" && git branch aa && git tag zz && git pack-refs --all) ||
	    exit 1
	refs0=$(user_refs)
	beside_session '{ head -1 .git/packed-refs && sed 1d .git/packed-refs |
	    sort -r; } >.git/pr.new && mv .git/pr.new .git/packed-refs &&
	    { git rev-parse -q --verify refs/heads/aa >/dev/null || echo hidden >.git/hidden; }'
	[ -e "$P/.git/hidden" ] && ok || bad "packed_unsorted: git still found aa: $OUT"
	rm -f "$P/.git/hidden"
	for r in refs/heads/aa refs/heads/main refs/tags/zz HEAD; do
		git -C "$P" rev-parse -q --verify "$r" >/dev/null && ok ||
		    bad "packed_unsorted: git does not find $r after the end: $(head -c 600 "$P/.git/packed-refs"): $OUT"
	done
	case $OUT in *"packed-refs said its refs were sorted, and "*" were not"*"took that claim out"*) ok ;;
	*) bad "packed_unsorted: the end did not tell the refs out of order: $OUT" ;; esac
	[ "$(user_refs)" = "$refs0" ] && ok ||
	    bad "packed_unsorted: the refs changed: $(user_refs 2>&1) vs $refs0"
	# The same file left after the session (by another, say): undo --refs mends it.
	(cd "$P" && { head -1 .git/packed-refs | sed 's/ *$/ sorted /' &&
	    sed 1d .git/packed-refs | sort -r; } >.git/pr.new &&
	    mv .git/pr.new .git/packed-refs) || exit 1
	out=$(cd "$P" && "$AMX" undo last --refs 2>&1) && ok ||
	    bad "packed_unsorted: undo --refs failed: $out"
	git -C "$P" rev-parse -q --verify refs/heads/aa >/dev/null &&
	    git -C "$P" rev-parse -q --verify refs/tags/zz >/dev/null && ok ||
	    bad "packed_unsorted: git does not find aa or zz after undo --refs: $out"
	case $out in *"claim that its refs are sorted"*) ok ;;
	*) bad "packed_unsorted: undo --refs did not say what it took out: $out" ;; esac
}

# A packed-refs past what agentmux reads (256 MiB): the session deleted
# v1 and wrote a replace ref into it, and 4.6 million junk tags. Read as
# none, the end told main and v1 deleted and missed the replace ref, and
# undo --refs left the session's refs. Now the end says in red that the
# file's refs cannot be told (and tells no ref of the user's deleted);
# undo --refs keeps the file aside and writes the start's packed refs.
packed_huge() {
	fresh_repo
	(cd "$P" && git tag v1 && git pack-refs --all) || exit 1
	refs0=$(user_refs)
	# (The suite's 8M file_size would stop the file; the rest as it is.)
	cf="$XDG_CONFIG_HOME/agentmux/config"
	cp "$cf" "$cf.saved" && sed -i 's/^file_size = .*/file_size = 512M/' "$cf" || exit 1
	beside_session 'h=$(git rev-parse HEAD) && t=$(git rev-parse HEAD^{tree}) &&
	    { echo "# pack-refs with: peeled fully-peeled sorted " &&
	      echo "$h refs/heads/main" && echo "$h refs/heads/topic" &&
	      echo "$t refs/replace/$h" &&
	      awk -v h="$h" "BEGIN { for (i = 0; i < 4600000; i++)
	          printf \"%s refs/tags/junk%08d\\n\", h, i }"; } >.git/pr.new &&
	    mv .git/pr.new .git/packed-refs'
	mv "$cf.saved" "$cf" || exit 1
	case $OUT in *released*) ok ;; *) bad "packed_huge: the session beside did not run: $OUT" ;; esac
	[ "$(stat -c %s "$P/.git/packed-refs")" -gt 268435456 ] && ok ||
	    bad "packed_huge: packed-refs is not past 256 MiB: $(stat -c %s "$P/.git/packed-refs")"
	case $OUT in *"packed-refs is now "*"M, more than the 256M agentmux reads"*"cannot be told"*"undo "*" --refs"*) ok ;;
	*) bad "packed_huge: the end did not tell packed-refs past what it reads: $OUT" ;; esac
	case $OUT in *"deleted main"*|*"deleted v1"*|*"deleted refs/"*) bad "packed_huge: the end told refs deleted it could not read: $OUT" ;;
	*) ok ;; esac
	out=$(cd "$P" && "$AMX" undo last --refs --dry-run 2>&1) && ok ||
	    bad "packed_huge: undo --refs --dry-run failed: $out"
	case $out in *"would keep packed-refs aside"*"write the start's 2 packed refs"*) ok ;;
	*) bad "packed_huge: the dry run did not say what it would do: $out" ;; esac
	case $out in *"would reset"*main*) bad "packed_huge: the dry run would reset main, which the file keeps: $out" ;;
	*) ok ;; esac
	[ "$(stat -c %s "$P/.git/packed-refs")" -gt 268435456 ] && ok ||
	    bad "packed_huge: the dry run changed packed-refs"
	# A packed-refs.lock left there (the session's, say): nothing is moved aside, and it is said.
	: >"$P/.git/packed-refs.lock"
	out=$(cd "$P" && "$AMX" undo last --refs 2>&1) &&
	    bad "packed_huge: undo --refs with packed-refs.lock there exited 0: $out"
	case $out in *"a packed-refs.lock is there"*"delete it and run undo --refs again"*) ok ;;
	*) bad "packed_huge: undo --refs did not say the lock was in the way: $out" ;; esac
	ls "$P"/.git/packed-refs-as-left-* >/dev/null 2>&1 &&
	    bad "packed_huge: packed-refs was moved aside though the new one could not be written"
	case $out in *"(it was deleted)"*) bad "packed_huge: undo said a ref deleted that it could not read: $out" ;;
	*) ok ;; esac
	rm -f "$P/.git/packed-refs.lock"
	out=$(cd "$P" && "$AMX" undo last --refs 2>&1) && ok ||
	    bad "packed_huge: undo --refs failed: $out"
	case $out in *"keep    packed-refs aside as packed-refs-as-left-"*"put     the start's 2 packed refs"*) ok ;;
	*) bad "packed_huge: undo --refs did not say it kept the file aside: $out" ;; esac
	# What the file kept aside holds that the start did not (a branch the user packed since would be there): counted, branches named.
	case $out in *"names 4600001 refs that were not there at the start"*"as the branch refs/heads/topic"*) ok ;;
	*) bad "packed_huge: undo --refs did not count and name what the file kept aside holds: $out" ;; esac
	[ "$(user_refs)" = "$refs0" ] && ok ||
	    bad "packed_huge: the refs are not the start's: $(user_refs 2>&1 | head -5) vs $refs0: $out"
	# Written with the user's umask (agentmux's own, 077, made it 0600).
	want=$(printf '%o' $((0644 & ~0$(umask))))
	[ "$(mode_of .git/packed-refs)" = "$want" ] && ok ||
	    bad "packed_huge: packed-refs written back $(mode_of .git/packed-refs), not $want"
	git -C "$P" for-each-ref refs/replace | grep -q . &&
	    bad "packed_huge: the session's replace ref is still there" || ok
	aside=$(ls "$P"/.git/packed-refs-as-left-* 2>/dev/null | head -1)
	[ -n "$aside" ] && [ "$(stat -c %s "$aside")" -gt 268435456 ] && ok ||
	    bad "packed_huge: the file as the session left it was not kept: ${aside:-none}"
	rm -f "$P"/.git/packed-refs-as-left-*
}

# The user's own packed-refs past 256 MiB when the session starts (with
# a remote branch and a replace ref of theirs in it): the session shrinks
# it. The end tells no ref of the user's as the session's, undo deletes
# none of them and names none to delete; a second session that changes
# the still unreadable file is told in red.
packed_huge_start() {
	fresh_repo
	(cd "$P" && git tag v1 && h=$(git rev-parse HEAD) &&
	    t=$(git rev-parse HEAD^{tree}) &&
	    { echo "# pack-refs with: peeled fully-peeled sorted " &&
	      echo "$h refs/heads/main" && echo "$h refs/remotes/origin/main" &&
	      echo "$t refs/replace/$h" &&
	      awk -v h="$h" 'BEGIN { for (i = 0; i < 4600000; i++)
	          printf "%s refs/tags/junk%08d\n", h, i }' &&
	      echo "$h refs/tags/v1"; } >.git/packed-refs.new &&
	    rm -f .git/refs/heads/main .git/refs/tags/v1 &&
	    mv .git/packed-refs.new .git/packed-refs) || exit 1
	[ "$(stat -c %s "$P/.git/packed-refs")" -gt 268435456 ] || exit 1
	beside_session 'grep -v refs/tags/junk .git/packed-refs >.git/pr.new &&
	    mv .git/pr.new .git/packed-refs'
	case $OUT in *released*) ok ;; *) bad "packed_huge_start: the session did not run: $OUT" ;; esac
	case $OUT in *"packed-refs could not be read when the session started"*) ok ;;
	*) bad "packed_huge_start: the end did not say the start's packed refs were not kept: $OUT" ;; esac
	case $OUT in *"made the remote-tracking"*|*"made the replace ref"*|*"deleted main"*)
		bad "packed_huge_start: the end took the user's refs for the session's: $OUT" ;;
	*) ok ;; esac
	refs1=$(user_refs)
	out=$(cd "$P" && "$AMX" undo last --refs 2>&1) && ok ||
	    bad "packed_huge_start: undo --refs failed: $out"
	case $out in *"leave   refs that are not in the start's record as they are"*) ok ;;
	*) bad "packed_huge_start: undo did not say it leaves the refs it cannot place: $out" ;; esac
	case $out in *"delete  refs/replace"*|*"keep    main"*|*"branch -D"*)
		bad "packed_huge_start: undo took the user's refs for the session's: $out" ;;
	*) ok ;; esac
	[ "$(user_refs)" = "$refs1" ] && ok ||
	    bad "packed_huge_start: undo changed the user's refs: $(user_refs 2>&1 | head -5) vs $refs1"
	# Past the cap again, then changed by a session: told, in red.
	(cd "$P" && h=$(git rev-parse HEAD) && awk -v h="$h" 'BEGIN { for (i = 0; i < 4600000; i++)
	    printf "%s refs/zz/junk%08d\n", h, i }' >>.git/packed-refs) || exit 1
	cf="$XDG_CONFIG_HOME/agentmux/config"
	cp "$cf" "$cf.saved" && sed -i 's/^file_size = .*/file_size = 512M/' "$cf" || exit 1
	beside_session 'h=$(git rev-parse HEAD) && echo "$h refs/zz/zzevil" >>.git/packed-refs'
	mv "$cf.saved" "$cf" || exit 1
	case $OUT in *released*"packed-refs, which agentmux could not read when the session started, was changed or replaced in the session"*) ok ;;
	*) bad "packed_huge_start: a change to the unreadable file was not told: $OUT" ;; esac
	rm -f "$P/.git/packed-refs"
}

# packed-refs made a link (to a file of the session's, with a replace
# ref): agentmux follows none, so its refs are not known, as above (the
# end's sweep moves the link to the quarantine). The same link made again
# after the end (by another session, say): undo --refs keeps the link
# aside, not what it names, and writes the start's packed refs.
packed_link() {
	fresh_repo
	(cd "$P" && git tag v1 && git pack-refs --all) || exit 1
	refs0=$(user_refs)
	# The jail's link is refused (its .git is sealed); made by the host beside a session, as on a
	# kernel without Landlock, the end must still tell it.
	jrun -- sh -c '{ ln -sf pr '$G'/packed-refs 2>/dev/null && echo linked || echo REFUSED; }'
	case $OUT in *REFUSED*) ok ;; *) bad "packed_link: the jail made packed-refs a link: $OUT" ;; esac
	beside_session 'h=$(git rev-parse HEAD) && t=$(git rev-parse HEAD^{tree}) &&
	    { cat .git/packed-refs && echo "$t refs/replace/$h"; } >.git/pr &&
	    ln -sf pr .git/packed-refs'
	case $OUT in *"packed-refs is now a symbolic link (agentmux follows none)"*"cannot be told"*) ok ;;
	*) bad "packed_link: the end did not tell packed-refs a link: $OUT" ;; esac
	[ -L "$P/.git/packed-refs" ] && bad "packed_link: the end left the link" || ok
	ln -s pr "$P/.git/packed-refs" || exit 1
	out=$(cd "$P" && "$AMX" undo last --refs 2>&1) && ok ||
	    bad "packed_link: undo --refs failed: $out"
	[ -f "$P/.git/packed-refs" ] && [ ! -L "$P/.git/packed-refs" ] &&
	    [ "$(user_refs)" = "$refs0" ] && ok ||
	    bad "packed_link: the refs are not the start's: $(ls -l "$P/.git/packed-refs" 2>&1) $(user_refs 2>&1 | head -5): $out"
	aside=$(ls "$P"/.git/packed-refs-as-left-* 2>/dev/null | head -1)
	[ -L "$aside" ] && [ "$(readlink "$aside")" = pr ] && ok ||
	    bad "packed_link: the link was not kept aside as a link: ${aside:-none}: $out"
	grep -q refs/replace "$P/.git/pr" && ok ||
	    bad "packed_link: the file the link named was changed"
}

# HEAD broken after the session ended (or by another session): undo
# --refs puts it back as the end would, and works.
head_after() {
	for how in 'echo garbage >.git/HEAD' 'rm -f .git/HEAD' \
	    'ln -sf ../README .git/HEAD'; do
		fresh_repo
		(cd "$P" && git checkout -q -b topic) || exit 1
		jrun -- sh -c 'echo ran'
		case $OUT in *ran*) ok ;; *) bad "head_after: the session did not run: $OUT" ;; esac
		(cd "$P" && rm -f .git/HEAD && sh -c "$how") || exit 1
		out=$(cd "$P" && "$AMX" undo last --refs 2>&1) && ok ||
		    bad "head_after: $how: undo --refs failed: $out"
		[ ! -L "$P/.git/HEAD" ] &&
		    [ "$(git -C "$P" symbolic-ref HEAD 2>&1)" = refs/heads/topic ] &&
		    ok || bad "head_after: $how: HEAD is not back: $(git -C "$P" status 2>&1 | head -2): $out"
		case $out in *"HEAD"*"put back as it was at the start"*) ok ;;
		*) bad "head_after: $how: undo --refs did not say HEAD was put back: $out" ;; esac
	done
}

checks() {
	if [ -n "${AMX_CHECKS:-}" ]; then
		for c in $AMX_CHECKS; do "$c"; done
		return
	fi
	rm_objects
	deleted_then_gc
	stash_drop
	stash_pushed
	logs_replaced
	refs_replaced
	head_replaced
	shallow
	nested
	nested_cap
	nested_link
	nested_link_repack
	nested_bare
	remote_moved
	shadow_refs
	shadow_refs_more
	shadow_refs_future
	refs_as_git_reads
	packed_bad
	packed_unsorted
	packed_huge
	packed_huge_start
	packed_link
	head_after
	gc_prune
	git_works
	during_session
	forged_objects
	reflog_link
	crash
	git_modes
	git_modes_linked
	git_modes_modules
	module_refs
}

jail_main "$@"
