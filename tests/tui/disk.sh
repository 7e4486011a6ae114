#!/bin/sh
# A session past its disk write budget, in the dashboard through a real
# tmux: it is frozen (nothing it runs writes or runs, while it was forking
# as fast as it could), the user is asked; continue gives it a larger
# budget, stop ends it. A process that keeps sending itself SIGCONT does
# not get out: the cgroup freezer holds it, and without one the jail's
# init sees it run and ends the session. As root (cgroup v1 freezer here)
# and as a throwaway user (SIGSTOP from the jail's init).
set -u
. "$(dirname "$0")/lib.sh"
: "${AMX_ESCAPE:?run through meson test (AMX_ESCAPE is not set)}"
command -v setpriv >/dev/null 2>&1 || { echo "SKIP: setpriv is not installed"; exit 77; }

# A failure shows the last session's record too, not only the screen.
fail() {
	echo "FAIL: $*"
	echo "--- screen:"
	scr
	echo "--- the last session's record:"
	[ -n "${W:-}" ] && as_who "$T/bin/agentmux" show last 2>&1 | tail -n 12
	exit 1
}

U=
cleanup_user() {
	cleanup
	[ -n "$U" ] || return
	# Its dashboard goes with the tmux server; the user once it has.
	i=0
	while [ $i -lt 100 ] && pgrep -u "$U" >/dev/null; do sleep 0.1; i=$((i + 1)); done
	userdel "$U" 2>/dev/null
}
trap cleanup_user EXIT

# What the other user needs to run (the source tree may be private).
mkdir -p "$T/bin"
cp "$AGENTMUX" "$T/bin/agentmux"
# (and the whole program it runs, beside it)
cp "${AGENTMUX%/*}/agentmux-full" "$T/bin/agentmux-full"
cp "$AMX_ESCAPE" "$T/bin/amx-escape"
cp -r "$AGENTMUX_SHARE" "$T/share"
chmod -R a+rX "$T/bin" "$T/share"

# A check's own dirs (NAME), owned by whoever runs it: W, its project WP.
pass_dirs() {
	W=$T/$WHO-$1
	WP=$W/proj
	mkdir -p "$W/config/agentmux" "$W/data" "$W/run" "$W/home" "$WP"
	chmod 700 "$W/run"
	printf '[limits]\ndisk_write = 16M\ndisk_reserve = 0\n' >"$W/config/agentmux/config"
	(cd "$WP" && git init -q . && git config user.email t@x && git config user.name t &&
		echo hi >README && git add README && git commit -qm init) || fail "no project"
	cp "$T/bin/amx-escape" "$WP/amx-escape"
	chmod 755 "$WP/amx-escape"
	[ "$WHO" = root ] || chown -R "$U:$(id -g "$U")" "$W"
}

as_who() {
	if [ "$WHO" = root ]; then
		env HOME="$W/home" XDG_CONFIG_HOME="$W/config" XDG_DATA_HOME="$W/data" \
			XDG_RUNTIME_DIR="$W/run" "$@"
	else
		setpriv --reuid="$U" --regid="$(id -g "$U")" --init-groups env -i PATH="$PATH" \
			HOME="$W/home" XDG_CONFIG_HOME="$W/config" XDG_DATA_HOME="$W/data" \
			XDG_RUNTIME_DIR="$W/run" AGENTMUX_SHARE="$T/share" "$@"
	fi
}

# dash SCRIPT: the dashboard in a fresh tmux, running SCRIPT in the project
# (as amxmark.sh: the shells running it are marked, for all_held).
dash() {
	tmux_kill "$SOCK"
	printf '%s\n' "$1" >"$WP/amxmark.sh"
	cat >"$W/launch.sh" <<-EOF
	cd "$WP" || exit 1
	if [ "$WHO" = root ]; then set --; else set -- setpriv --reuid="$U" \
		--regid="$(id -g "$U" 2>/dev/null)" --init-groups; fi
	"\$@" env -i PATH="$PATH" TERM=xterm-256color HOME="$W/home" \
		XDG_CONFIG_HOME="$W/config" XDG_DATA_HOME="$W/data" XDG_RUNTIME_DIR="$W/run" \
		AGENTMUX_SHARE="$T/share" "$T/bin/agentmux" -- sh amxmark.sh
	echo DASHBOARD-EXITED-\$?
	sleep 60
	EOF
	chmod a+r "$WP/amxmark.sh" "$W/launch.sh"
	tmux -L "$SOCK" -u -f /dev/null new-session -d -x 200 -y 45 -c "$WP" "sh $W/launch.sh" ||
		fail "[$WHO] tmux could not start agentmux"
}

# The bytes of FILE in the project (0 if none).
size() {
	wc -c <"$WP/$1" 2>/dev/null || echo 0
}

# Every jailed process marked amxmark is stopped (T) or frozen (D), or a
# zombie; not agentmux (in our pid namespace), nor the jail's init (pid 1
# in its own: it runs on to hold the others without a cgroup freezer).
all_held() {
	ours=$(readlink /proc/self/ns/pid)
	for pid in $(pgrep -f amxmark); do
		[ "$(readlink "/proc/$pid/ns/pid" 2>/dev/null)" != "$ours" ] || continue
		grep -q '^NSpid:.*[[:space:]]1$' "/proc/$pid/status" 2>/dev/null && continue
		st=$(sed 's/.*) \(.\).*/\1/' "/proc/$pid/stat" 2>/dev/null) || continue
		case $st in T|t|D|Z|X|'') ;; *) echo "$pid:$st"; return 1 ;; esac
	done
	return 0
}

# The writer rewrites 64 files of 1 MiB (up to 2 GiB written, no more
# than 64 MiB kept) and counts; a storm of short-lived shells forks
# meanwhile, so that the freeze races forks and exits.
WRITER='(while :; do sh -c ": amxmark; echo y >>storm"; sleep 0.002; done) &
i=0; while [ $i -lt 2000 ]; do i=$((i+1)); head -c 1048576 /dev/zero >w$((i % 64)); echo $i >count; sleep 0.02; done
echo writer-done; sleep 600'

# Frozen at the budget, continued with a larger one, frozen again, stopped.
budget() {
	pass_dirs budget
	dash "$WRITER"
	wait_for "frozen: its processes wrote [0-9.]+M, past its 16M disk write budget" 60 ||
		fail "[$WHO] no disk question at the budget"
	wait_for '[0-9][0-9]*:shell\* frozen' || fail "[$WHO] the status bar does not say frozen"
	sleep 0.5
	c1=$(cat "$WP/count") s1=$(size storm)
	held=$(all_held) || fail "[$WHO] a jailed process runs while frozen: $held"
	sleep 1
	c2=$(cat "$WP/count") s2=$(size storm)
	[ "$c1" = "$c2" ] && [ "$s1" = "$s2" ] ||
		fail "[$WHO] the frozen session wrote: count $c1 -> $c2, storm $s1 -> $s2"
	held=$(all_held) || fail "[$WHO] a jailed process runs while frozen: $held"
	prefix a
	wait_for '\[c\] continue \(budget 32M\) \[s\] stop' || fail "[$WHO] the question has no answers"
	keys c
	i=0
	while [ $i -lt 100 ] && [ "$(cat "$WP/count")" = "$c2" ]; do sleep 0.1; i=$((i + 1)); done
	[ "$(cat "$WP/count")" != "$c2" ] || fail "[$WHO] continue did not thaw the session"
	wait_for "past its 32M disk write budget" 60 || fail "[$WHO] not frozen again at the larger budget"
	prefix a
	wait_for '\[s\] stop' || fail "[$WHO] no answers the second time"
	keys s
	wait_for 'exited 137' 20 || fail "[$WHO] stop did not end the session"
	rec=$(as_who "$T/bin/agentmux" show last 2>&1)
	case $rec in
	*"stopped session "*" at the user's word: its processes wrote "*"past its 32M disk write budget"*) ;;
	*) fail "[$WHO] the record does not say why it ended: $rec" ;;
	esac
	echo "ok [$WHO] frozen at the budget, continued, frozen again, stopped"
}

# A process that has the kernel send it SIGCONT as lines are typed on its
# terminal (and a timer), stopping itself between beats: frozen, it must
# not beat however much is typed; without a cgroup the init sees it run
# and ends the jail.
selfcont() {
	pass_dirs selfcont
	dash "./amx-escape selfcont beat &
$WRITER"
	wait_for "frozen: its processes wrote" 60 || fail "[$WHO] no disk question (selfcont)"
	sleep 0.5
	b1=$(size beat)
	for i in 1 2 3 4 5 6 7 8 9 10; do keys k Enter; sleep 0.15; done
	if [ "$WHO" = root ]; then
		b2=$(size beat)
		[ "$b1" -gt 0 ] || fail "[$WHO] the self-continuing process never beat"
		[ "$b1" = "$b2" ] || fail "[$WHO] it beat while frozen: $b1 -> $b2"
		scr | grep -q '[0-9][0-9]*:shell\* frozen' || fail "[$WHO] no longer frozen"
		prefix a
		keys s
		wait_for 'exited 137' 20 || fail "[$WHO] stop did not end it"
		echo "ok [$WHO] a process sending itself SIGCONT stays frozen ($b1 beats, none while frozen)"
		return
	fi
	# Without a cgroup the init sees it run again, and ends the jail.
	wait_for 'exited 137' 20 || fail "[$WHO] the jail went on while its process ran frozen"
	rec=$(as_who "$T/bin/agentmux" show last 2>&1)
	case $rec in
	*"error     session "*" was stopped: process "*" SIGCONT"*"the jail was killed"*) ;;
	*) fail "[$WHO] the record does not say why: $rec" ;;
	esac
	b2=$(size beat)
	sleep 0.5
	[ "$b2" -gt 0 ] && [ "$b2" = "$(size beat)" ] || fail "[$WHO] it beat on after the end"
	echo "ok [$WHO] a process sent SIGCONT while frozen ends the session ($b1 -> $b2 beats)"
}

WHO=root
budget
selfcont
if [ "$(id -u)" = 0 ]; then
	U="amxt$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')"
	useradd -M -N -d /nonexistent -s /bin/sh "$U" || fail "cannot add a user"
	WHO=user
	budget
	selfcont
else
	echo "SKIP: the unprivileged pass needs root to make a user"
fi
echo "all passed"
