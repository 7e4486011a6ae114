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

last_session() {
	"$AMX" sessions --json | python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["id"])'
}

snapshots_survive() {
	git_state
	jrun -- sh -c "$DESTROY" 2>&1
	[ "$RC" = 0 ] && ok || bad "the destructive command did not run: $RC $OUT"
	SID=$(last_session)
	(cd "$P" && git show-ref -q "refs/agentmux/sessions/$SID") && ok ||
	    bad "the session's snapshot ref is gone"
	out=$("$AMX" undo last 2>&1) && git_same && ok ||
	    bad "undo after destructive git: $out; a=$(cat "$P/a" 2>&1)"
	# The start snapshot's tree is whole: every object is there.
	(cd "$P" && git rev-list --objects "refs/agentmux/sessions/$SID" |
	    cut -d' ' -f1 | git cat-file --batch-check | grep -q missing) &&
	    bad "objects of the snapshots are missing" || ok
}

# Refs a gc on the host packed are out of the read-only dir: they are
# written back loose before the next command runs.
packed_refs_survive() {
	(cd "$P" && git pack-refs --all) || exit 1
	[ ! -e "$P/.git/refs/agentmux/sessions/$SID" ] && ok ||
	    bad "pack-refs left the loose ref (the check would prove nothing)"
	jrun -- sh -c "$DESTROY" 2>&1
	out=$("$AMX" undo "$SID" 2>&1) && git_same && ok ||
	    bad "undo of an earlier session after its refs were packed: $out"
	(cd "$P" && git show-ref -q "refs/agentmux/sessions/$SID") && ok ||
	    bad "a packed snapshot ref of an earlier session was deleted"
}

# The first thing the command does is prune: the start snapshot must already be safe.
prune_at_once() {
	(cd "$P" && echo three >a) || exit 1
	jrun -- sh -c 'git prune --expire=now; echo four >a'
	out=$("$AMX" undo last 2>&1) && [ "$(cat "$P/a")" = three ] && ok ||
	    bad "undo after an immediate prune: $out; a=$(cat "$P/a")"
}

# A nested repository with a command in its config, made a submodule in the
# index: the user's next `git status` in the project would run it.
nested_repos() {
	(cd "$P" && mkdir -p mine && cd mine && git init -q &&
	    git config core.pager "less -R" && git config alias.st '!git status') ||
	    exit 1
	sleep 1
	jrun -- sh -c 'mkdir sub && cd sub && git init -q &&
	    git -c user.email=a@b -c user.name=a commit -q --allow-empty -m s &&
	    git config core.fsmonitor "echo PWNED >&2; false" &&
	    git config filter.x.clean "touch /tmp/pwned" &&
	    printf "#!/bin/sh\necho PWNED\n" >.git/hooks/post-checkout &&
	    chmod +x .git/hooks/post-checkout && cd .. &&
	    git update-index --add --cacheinfo 160000,$(git -C sub rev-parse HEAD),sub &&
	    mkdir wt && echo "gitdir: ../.git/modules/wt" >wt/.git &&
	    mkdir -p .git/modules/wt && cp -r sub/.git/* .git/modules/wt/ &&
	    git config --file .git/modules/wt/config core.sshCommand "sh -c pwned"'
	case $OUT in
	*"agentmux: the repository $P/sub had settings git could run commands from (core.fsmonitor, filter.x.clean)"*) ok ;;
	*) bad "no alert about the nested repository's config: $OUT" ;;
	esac
	case $OUT in *"agentmux: the repository $P/sub had a new hook"*) ok ;;
	*) bad "no alert about the nested repository's hook: $OUT" ;; esac
	case $OUT in *"had settings git could run commands from ("*"core.sshcommand"*".git/modules/wt/config"*) ok ;;
	*) bad "no alert about a git dir a .git file points to: $OUT" ;; esac
	out=$(cd "$P" && git status 2>&1; git diff 2>&1)
	case $out in *PWNED*) bad "the host's git ran the nested repository's command" ;; *) ok ;; esac
	[ ! -e "$P/sub/.git/hooks/post-checkout" ] && ok || bad "the nested hook stayed"
	[ -z "$(git -C "$P/wt" config core.sshCommand)" ] && ok ||
	    bad "the config a .git file points to kept its command"
	ls "$XDG_DATA_HOME"/agentmux/sessions/*/quarantine/*config >/dev/null 2>&1 &&
	    ok || bad "the nested config was not kept in the quarantine"
	# What the user had before the session is left alone.
	[ "$(git -C "$P/mine" config core.pager)" = "less -R" ] &&
	    [ "$(git -C "$P/mine" config alias.st)" = '!git status' ] && ok ||
	    bad "a nested repository's own config was changed"
	"$AMX" sessions --json | grep -q tampering && ok ||
	    bad "the session is not flagged for tampering"
	rm -rf "$P/sub" "$P/wt" "$P/mine" "$P/.git/modules"
	(cd "$P" && git update-index --force-remove sub) || exit 1
}

# Linked worktrees outside the project obey their git dirs in .git/worktrees.
linked_worktrees() {
	(cd "$P" && git worktree add -q "$T/linked" 2>/dev/null) || exit 1
	jrun -- sh -c 'echo ../../evil > .git/worktrees/linked/commondir'
	[ "$(cat "$P/.git/worktrees/linked/commondir")" = ../.. ] && ok ||
	    bad "the jail changed a linked worktree's commondir"
	(cd "$T/linked" && git status >/dev/null 2>&1) && ok ||
	    bad "the linked worktree is broken"
	(cd "$P" && git worktree remove --force "$T/linked") || exit 1
}

checks() {
	nested_repos
	linked_worktrees
	snapshots_survive
	packed_refs_survive
	prune_at_once
}

jail_main "$@"
