#!/bin/sh
# The project's .git against a hostile jailed command: snapshots and undo
# survive destructive git (update-ref -d, gc --prune=now, reflog expire,
# rm -rf of the refs, shallow marks, rewritten packed-refs), snapshots from
# before agentmux had its own repositories come over, and what the host's
# git would obey stays out of the command's reach; as root and as an
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
	mv .git/refs .git/refs-old  # (refused in a main-tree jail: .git/refs is a mount point)
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

# agentmux's own repository for the project, in its data dir.
own() {
	ls -d "$XDG_DATA_HOME"/agentmux/shadow/proj-*/ 2>/dev/null | head -n 1
}

snapshots_survive() {
	git_state
	jrun -- sh -c "$DESTROY" 2>&1
	[ "$RC" = 0 ] && ok || bad "the destructive command did not run: $RC $OUT"
	SID=$(last_session)
	GIT_DIR=$(own) git show-ref -q "refs/agentmux/sessions/$SID" && ok ||
	    bad "the session's snapshot ref is gone"
	out=$("$AMX" undo last 2>&1) && git_same && ok ||
	    bad "undo after destructive git: $out; a=$(cat "$P/a" 2>&1)"
	# The start snapshot's tree is whole: every object is there.
	(export GIT_DIR="$(own)"; git rev-list --objects "refs/agentmux/sessions/$SID" |
	    cut -d' ' -f1 | git cat-file --batch-check | grep -q missing) &&
	    bad "objects of the snapshots are missing" || ok
	# Nothing of it in the project's repository: no ref, no object, no log.
	[ -z "$(git -C "$P" for-each-ref refs/agentmux)" ] && ok ||
	    bad "snapshot refs in the project's repository"
	c=$(GIT_DIR=$(own) git rev-parse "refs/agentmux/sessions/$SID")
	git -C "$P" cat-file -e "$c" 2>/dev/null && bad "a snapshot commit is in the project's objects" || ok
	[ ! -e "$P/.git/logs/refs/agentmux" ] && ok || bad "agentmux wrote reflogs in the project"
	git -C "$P" log --all --format=%s 2>/dev/null | grep -q 'agentmux snapshot' &&
	    bad "snapshot commits show in git log --all" || ok
	# The user's own repository is theirs to mend (DESTROY moved its refs).
	if [ ! -d "$P/.git/refs" ] && [ -d "$P/.git/refs-old" ]; then
		mv "$P/.git/refs-old" "$P/.git/refs"
	fi
}

# Snapshots taken before agentmux had repositories of its own live in the
# project's .git: made here as it made them (a commit whose parent is
# HEAD, refs under refs/agentmux, the record pointing at .git), then undo
# brings them over, checked, and puts the tree back; damaged, it says so.
legacy() {
	db() { sqlite3 "$XDG_DATA_HOME/agentmux/agentmux.db" "$@"; }
	(cd "$P" && printf 'old\n' >a && git add a && git commit -qm old &&
	    printf 'legacy\n' >a && printf 'x\n' >lx) || exit 1
	c=$(cd "$P" && export GIT_INDEX_FILE="$T/legacy-index" && rm -f "$T/legacy-index" &&
	    git read-tree HEAD && git add -A && t=$(git write-tree) &&
	    git commit-tree -p HEAD -m "agentmux snapshot: start, session 900" "$t")
	t=$(git -C "$P" rev-parse "$c^{tree}")
	git -C "$P" update-ref refs/agentmux/sessions/900 "$c"
	git -C "$P" update-ref "refs/agentmux/snaps/900/$c" "$c"
	# (to the millisecond: a record rounded down to the second would seem to
	# have run beside the session that ended just before, and undo refuses)
	now=$(date +%s%3N)
	db "insert into sessions (id, kind, agent, project, command, started_at, ended_at, state, owner_pid)
	    values (900, 'run', 'shell', '$P', '[\"sh\"]', $now, $now, 'exited', 1);
	    insert into snapshots (session_id, created_at, kind, commit_id, tree, ref, files_changed)
	    values (900, $now, 'start', '$c', '$t', 'refs/agentmux/sessions/900', 2);
	    insert into snapshot_repos (session_id, git_dir, work_tree, shadow)
	    values (900, '$P/.git', '$P', 0);"
	printf 'agent\n' >"$P/a"
	rm "$P/lx"
	out=$("$AMX" undo 900 2>&1)
	[ "$(cat "$P/a")" = legacy ] && [ -e "$P/lx" ] && ok ||
	    bad "undo of a session from before own repositories: $out"
	GIT_DIR=$(own) git cat-file -e "$c" 2>/dev/null && ok ||
	    bad "the old snapshot did not come into the own repository"
	[ "$(db "select shadow from snapshot_repos where session_id = 900")" = 1 ] && ok ||
	    bad "the session still points at the project's repository"
	# A second one whose objects were damaged in the project: refused, nothing touched.
	(cd "$P" && printf 'other\n' >a) || exit 1
	c2=$(cd "$P" && git stash create)
	t2=$(git -C "$P" rev-parse "$c2^{tree}")
	b=$(git -C "$P" rev-parse "$c2:a")
	git -C "$P" update-ref refs/agentmux/sessions/901 "$c2"
	db "insert into sessions (id, kind, agent, project, command, started_at, ended_at, state, owner_pid)
	    values (901, 'run', 'shell', '$P', '[\"sh\"]', $now, $now, 'exited', 1);
	    insert into snapshots (session_id, created_at, kind, commit_id, tree, ref, files_changed)
	    values (901, $now, 'start', '$c2', '$t2', 'refs/agentmux/sessions/901', 1);
	    insert into snapshot_repos (session_id, git_dir, work_tree, shadow)
	    values (901, '$P/.git', '$P', 0);"
	obj="$P/.git/objects/$(echo "$b" | cut -c1-2)/$(echo "$b" | cut -c3-)"
	chmod u+w "$obj" && cp "$P/.git/objects/$(echo "$c" | cut -c1-2)/$(echo "$c" | cut -c3-)" "$obj"
	printf 'kept\n' >"$P/a"
	out=$("$AMX" undo 901 2>&1)
	case $out in
	*"could not be brought over"*) ok ;;
	*) bad "a damaged old snapshot: $out" ;;
	esac
	[ "$(cat "$P/a")" = kept ] && ok || bad "a damaged old snapshot changed the tree"
	(cd "$P" && git checkout -q -- a 2>/dev/null; rm -f lx) || true
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
	prune_at_once
	legacy
}

jail_main "$@"
