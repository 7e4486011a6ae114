#!/bin/sh
# The project's .git against a hostile jailed command: snapshots and undo
# survive destructive git (update-ref -d, gc --prune=now, reflog expire,
# rm -rf of the refs, shallow marks, rewritten packed-refs), and what the
# host's git would obey stays out of the command's reach; as root and as an
# unprivileged user made for the test.
set -u
. "$(dirname "$0")/lib.sh"

# The project as it was: a tracked file, an untracked one, a subdir.
git_state() {
	(cd "$P" && printf 'one\n' >a && printf 'keep\n' >u && mkdir -p d &&
	    printf 'deep\n' >d/f && git add a && git commit -qm a) || exit 1
}

git_same() {
	[ "$(cat "$P/a")" = one ] && [ "$(cat "$P/u")" = keep ] &&
	    [ "$(cat "$P/d/f")" = deep ] && [ ! -e "$P/n" ]
}

# Everything an agent could run to get rid of agentmux's snapshots.
DESTROY='echo two >a; rm -f u; rm -rf d; echo new >n;
	git for-each-ref --format="%(refname)" refs/agentmux |
	    while read -r r; do git update-ref -d "$r"; done
	rm -rf .git/refs/agentmux
	mv .git/refs .git/refs-old
	git for-each-ref --format="%(objectname)" refs/agentmux >>.git/shallow
	sed -i "/refs\/agentmux/d" .git/packed-refs 2>/dev/null
	git reflog expire --expire=now --all
	git gc -q --prune=now
	git prune --expire=now
	git pack-refs --all
	exit 0'

snapshots_survive() {
	git_state
	jrun -- sh -c "$DESTROY" 2>&1
	[ "$RC" = 0 ] && ok || bad "the destructive command did not run: $RC $OUT"
	(cd "$P" && git show-ref -q refs/agentmux/sessions/1) && ok ||
	    bad "the session's snapshot ref is gone"
	out=$("$AMX" undo last 2>&1) && git_same && ok ||
	    bad "undo after destructive git: $out; a=$(cat "$P/a" 2>&1)"
	# The start snapshot's tree is whole: every object is there.
	(cd "$P" && git rev-list --objects refs/agentmux/sessions/1 |
	    cut -d' ' -f1 | git cat-file --batch-check | grep -q missing) &&
	    bad "objects of the snapshots are missing" || ok
}

# Refs a gc on the host packed are out of the read-only dir: they are
# written back loose before the next command runs.
packed_refs_survive() {
	(cd "$P" && git pack-refs --all) || exit 1
	[ ! -e "$P/.git/refs/agentmux/sessions/1" ] && ok ||
	    bad "pack-refs left the loose ref (the check would prove nothing)"
	jrun -- sh -c "$DESTROY" 2>&1
	out=$("$AMX" undo 1 2>&1) && git_same && ok ||
	    bad "undo of an earlier session after its refs were packed: $out"
	(cd "$P" && git show-ref -q refs/agentmux/sessions/1) && ok ||
	    bad "a packed snapshot ref of an earlier session was deleted"
}

# The first thing the command does is prune: the start snapshot must already be safe.
prune_at_once() {
	(cd "$P" && echo three >a) || exit 1
	jrun -- sh -c 'git prune --expire=now; echo four >a'
	out=$("$AMX" undo last 2>&1) && [ "$(cat "$P/a")" = three ] && ok ||
	    bad "undo after an immediate prune: $out; a=$(cat "$P/a")"
}

checks() {
	snapshots_survive
	packed_refs_survive
	prune_at_once
}

jail_main "$@"
