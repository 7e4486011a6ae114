#!/bin/sh
# meson install --destdir into a fresh prefix: the installed agentmux finds its
# profiles, man pages and completion there and never in the source tree;
# bash, zsh and fish load its completion from the prefix and complete with it.
set -u
: "${AGENTMUX_BUILD:?run through meson test (AGENTMUX_BUILD is not set)}"
: "${AGENTMUX_SRC:?run through meson test (AGENTMUX_SRC is not set)}"

PASSES=0
FAILS=0
ok() { PASSES=$((PASSES + 1)); }
bad() { FAILS=$((FAILS + 1)); echo "FAIL $*"; }
# check NAME TEXT NEEDLE: TEXT contains NEEDLE.
check() {
	case $2 in
	*"$3"*) ok ;;
	*) bad "$1: '$3' not in: $2" ;;
	esac
}

W=$(mktemp -d "${TMPDIR:-/tmp}/amx-install.XXXXXX") || exit 1
chmod 755 "$W"
TMUX_SOCK="$W/tmux.sock"
cleanup() {
	tmux -S "$TMUX_SOCK" kill-server 2>/dev/null
	[ -n "${U:-}" ] && userdel "$U" 2>/dev/null
	rm -rf "$W"
}
trap cleanup EXIT

D="$W/dest"
if ! out=$(meson install -C "$AGENTMUX_BUILD" --no-rebuild --quiet \
    --destdir "$D" 2>&1); then
	echo "FAIL meson install: $out"
	exit 1
fi
prefix=$(meson introspect "$AGENTMUX_BUILD" --buildoptions |
	python3 -c 'import json,sys; print([o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix"][0])')
P="$D$prefix"
BIN="$P/bin"
libexec=$(meson introspect "$AGENTMUX_BUILD" --buildoptions |
	python3 -c 'import json,sys; print([o["value"] for o in json.load(sys.stdin) if o["name"] == "libexecdir"][0])')
# The whole program; bin/agentmux is the small front that runs it.
FULL="$P/$libexec/agentmux"
mkdir -p "$W/home" "$W/run"
chmod 700 "$W/run"
# What a user's login gives: no AGENTMUX_SHARE, the prefix's bin on PATH.
amx_env() {
	env -i HOME="$W/home" PATH="$BIN:/usr/bin:/bin" TERM=xterm \
	    XDG_RUNTIME_DIR="$W/run" XDG_DATA_DIRS="$P/share:/usr/share" "$@"
}

# The front links no library but libc (an attach loads nothing more), and
# finds the whole program in the moved tree, not where it would be installed.
[ -x "$FULL/agentmux-full" ] && ok || bad "no $FULL/agentmux-full"
# (A sanitizer build adds its runtimes.)
libs=$(ldd "$BIN/agentmux" | awk '$1 !~ /^(linux-vdso|\/lib64\/ld-linux|libc\.so|lib(a|ub)san\.so|libstdc\+\+|libm\.so|libgcc_s)/ { print $1 }')
[ -z "$libs" ] && ok || bad "bin/agentmux links more than libc: $libs"

# The profiles come from the prefix, not from the source tree.
out=$(amx_env agentmux --version 2>&1)
check version "$out" "profiles:        $P/share/agentmux/agents"
case $out in
*"$AGENTMUX_SRC"*) bad "version: the installed binary reads the source tree: $out" ;;
*) ok ;;
esac
out=$(amx_env agentmux agents 2>&1)
for a in shell claude codex opencode aider gemini; do
	check "agents $a" "$out" "$a"
done

# Man pages.
for m in man1/agentmux.1 man5/agentmux.conf.5; do
	if [ -f "$P/share/man/$m" ]; then ok; else bad "man: no $P/share/man/$m"; fi
done
if command -v mandoc >/dev/null; then
	if out=$(mandoc -T lint -W warning "$P/share/man/man1/agentmux.1" \
	    "$P/share/man/man5/agentmux.conf.5" 2>&1); then ok; else
		bad "mandoc -T lint: $out"
	fi
fi

# bash: bash-completion's loader finds it through XDG_DATA_DIRS, and it
# completes commands, subcommands, options and agent names.
bcomp=/usr/share/bash-completion/bash_completion
bash_complete() {
	amx_env bash --norc --noprofile -c '
		. "$1"; shift
		__load_completion agentmux || { echo "not loaded"; exit 1; }
		complete -p agentmux
		COMP_WORDS=(agentmux "$@"); COMP_CWORD=$#
		COMP_LINE="agentmux $*"; COMP_POINT=${#COMP_LINE}
		_agentmux agentmux "${COMP_WORDS[COMP_CWORD]}" \
		    "${COMP_WORDS[COMP_CWORD-1]}"
		printf "%s\n" "${COMPREPLY[@]}"' bash "$bcomp" "$@" 2>&1
}
if [ -f "$bcomp" ]; then
	out=$(bash_complete con)
	check "bash complete -p" "$out" "complete -F _agentmux agentmux"
	check "bash commands" "$out" "config"
	check "bash commands" "$out" "confdiff"
	out=$(bash_complete config "")
	check "bash subcommands" "$out" "keys"
	out=$(bash_complete diff --s)
	check "bash options" "$out" "--stat"
	out=$(bash_complete run -a cl)
	check "bash agents" "$out" "claude"
	out=$(bash_complete config keys "")
	check "bash sections" "$out" "snapshots"
else
	echo "SKIP bash: no bash-completion"
fi

# zsh: compinit finds _agentmux on the prefix's fpath.
zdir="$P/share/zsh/site-functions"
out=$(amx_env zsh -f -c "fpath=($zdir \$fpath); autoload -Uz compinit;
    compinit -u -d '$W/zcompdump'; print -r -- \$_comps[agentmux]" 2>&1)
check "zsh compinit" "$out" "_agentmux"

# fish: its vendor completions dir under XDG_DATA_DIRS.
out=$(amx_env fish -c 'complete -C "agentmux con"' 2>&1)
check "fish commands" "$out" "config"
out=$(amx_env fish -c 'complete -C "agentmux config k"' 2>&1)
check "fish subcommands" "$out" "keys"
out=$(amx_env fish -c 'complete -C "agentmux run --a"' 2>&1)
check "fish options" "$out" "--agent"

# Session numbers and snapshots come from the store, as a person would see
# them: a real snapshot session, then zsh driven through tmux.
git -C "$W" init -q proj && echo hi >"$W/proj/a.txt"
amx_env sh -c "cd '$W/proj' && agentmux snapshot -m first" >/dev/null 2>&1 ||
	bad "snapshot: could not make a session"
out=$(amx_env agentmux completion words -- show "")
check "words sessions" "$out" "last"
check "words sessions" "$out" "1	snapshot"
out=$(amx_env agentmux completion words -- diff 1 --to "")
check "words snapshots" "$out" "1	first"
check "words snapshots" "$out" "worktree"
if [ -f "$bcomp" ]; then
	out=$(bash_complete undo 1 --to "")
	check "bash snapshots" "$out" "latest"
fi

# A hostile project name reaches no terminal raw through a description.
hostile=$(printf 'p\033]0;pwned\007x')
mkdir "$W/$hostile" && git -C "$W/$hostile" init -q &&
	echo x >"$W/$hostile/f" &&
	amx_env sh -c "cd \"\$1\" && agentmux snapshot" sh "$W/$hostile" \
	    >/dev/null 2>&1
out=$(amx_env agentmux completion words -- show "" | od -An -c)
case $out in
*033*|*007*) bad "words: a control byte of a project name came out raw" ;;
*) ok ;;
esac

if command -v tmux >/dev/null; then
	cat >"$W/.zshrc" <<EOF
fpath=($zdir \$fpath)
autoload -Uz compinit && compinit -u -d '$W/zcompdump'
PS1='zsh> '
EOF
	amx_env ZDOTDIR="$W" tmux -S "$TMUX_SOCK" -f /dev/null new-session -d \
	    -x 120 -y 30 "zsh -i"
	screen_has() {
		i=0
		while [ $i -lt 600 ]; do
			case $(tmux -S "$TMUX_SOCK" capture-pane -p 2>/dev/null) in
			*"$1"*) return 0 ;;
			esac
			sleep 0.1
			i=$((i + 1))
		done
		return 1
	}
	if screen_has "zsh>"; then
		tmux -S "$TMUX_SOCK" send-keys "agentmux confi" Tab
		if screen_has "agentmux config"; then ok; else
			bad "zsh: Tab after 'confi': $(tmux -S "$TMUX_SOCK" capture-pane -p)"
		fi
		tmux -S "$TMUX_SOCK" send-keys "ke" Tab
		if screen_has "agentmux config keys"; then ok; else
			bad "zsh: Tab after 'config ke': $(tmux -S "$TMUX_SOCK" capture-pane -p)"
		fi
		tmux -S "$TMUX_SOCK" send-keys C-u "agentmux show " Tab
		if screen_has "last"; then ok; else
			bad "zsh: Tab after 'show ': $(tmux -S "$TMUX_SOCK" capture-pane -p)"
		fi
	else
		bad "zsh: no prompt in tmux: $(tmux -S "$TMUX_SOCK" capture-pane -p)"
	fi
fi

# doctor passes from the installed binary (as root: jails need no more).
# A sanitizer runtime cannot run in doctor's jails (no ptrace, shadow memory
# over the memory limit): the sanitizer build leaves doctor to agents-e2e,
# and CI runs it from the Debian package as well.
if ldd "$BIN/agentmux" 2>/dev/null | grep -q 'libasan\|libubsan'; then
	echo "doctor: not run from a sanitizer build"
elif [ "$(id -u)" = 0 ]; then
	if out=$(cd "$W/proj" && amx_env timeout 300 agentmux doctor 2>&1); then
		ok
	else
		bad "doctor: $out"
	fi
fi
if [ "$(id -u)" = 0 ]; then
	# And an unprivileged user's installed agentmux finds its profiles too.
	if command -v useradd >/dev/null && command -v setpriv >/dev/null; then
		U="amxi$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')"
		useradd -M -N -d /nonexistent -s /bin/sh "$U"
		out=$(setpriv --reuid="$U" --regid="$(id -g "$U")" --init-groups \
		    env -i HOME=/nonexistent PATH="$BIN:/usr/bin:/bin" \
		    XDG_CONFIG_HOME=/nonexistent XDG_DATA_HOME=/nonexistent \
		    agentmux agents 2>&1)
		check "agents as $U" "$out" "claude"
		# Profiles the user cannot read (a prefix in a private dir): the
		# error names the directory and why, instead of "no agents".
		chmod 700 "$P/share/agentmux"
		mkdir -m 777 "$W/uproj"
		out=$(cd "$W/uproj" && setpriv --reuid="$U" --regid="$(id -g "$U")" \
		    --init-groups env -i HOME="$W/uproj" PATH="$BIN:/usr/bin:/bin" \
		    XDG_CONFIG_HOME="$W/uproj/c" XDG_DATA_HOME="$W/uproj/d" \
		    agentmux run -- true 2>&1)
		check "unreadable profiles" "$out" "unknown agent 'shell': cannot read the agent profiles in $FULL/../../share/agentmux/agents: Permission denied (make it readable by you"
		out=$(setpriv --reuid="$U" --regid="$(id -g "$U")" --init-groups \
		    env -i HOME=/nonexistent PATH="$BIN:/usr/bin:/bin" \
		    XDG_CONFIG_HOME=/nonexistent XDG_DATA_HOME=/nonexistent \
		    agentmux agents 2>&1)
		check "agents, unreadable profiles" "$out" "cannot read the agent profiles in $FULL/../../share/agentmux/agents: Permission denied"
		chmod 755 "$P/share/agentmux"
	fi
fi

echo "$PASSES passed, $FAILS failed"
[ "$FAILS" = 0 ]
