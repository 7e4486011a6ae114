#!/bin/sh
# A client that detaches beside another gives back its screen's cells: ncurses 6.4 cannot free a
# SCREEN while others are open (tui-render.c says why), so the server shrinks its windows instead.
# A 1000x1000 terminal (its three windows hold about 80 MB of cells) attaches and detaches three
# times beside a small one: the server's memory does not grow by a screen each time, and the small
# client draws and takes keys throughout.
set -u
. "$(dirname "$0")/lib.sh"

# rss: the server's resident memory in kB.
rss() {
	awk '/^VmRSS:/ { print $2 }' "/proc/$(server_pid)/status"
}

DASH_SX=100 DASH_SY=30 start_dashboard
wait_for '[0-9]+:shell\* (working|needs you)' 30 || fail "no dashboard in the first terminal"
wait_for '[#$] ?$' 20 || fail "no shell prompt"
s1=$("$AGENTMUX" ls | head -n 1 | cut -d: -f1)
[ -n "$s1" ] || fail "agentmux ls lists no session"

# big N: a 1000x1000 client attaches, draws, and detaches (prefix d), as the Nth.
big() {
	tmux -L "$SOCK2" -u -f /dev/null new-session -d -x 1000 -y 1000 -c "$P" \
		-e "XDG_CONFIG_HOME=$XDG_CONFIG_HOME" -e "XDG_DATA_HOME=$XDG_DATA_HOME" \
		-e "XDG_RUNTIME_DIR=$XDG_RUNTIME_DIR" -e "XDG_STATE_HOME=$XDG_STATE_HOME" \
		-e "TERM=xterm-256color" \
		"$AGENTMUX attach -t $s1; echo ATTACH-EXITED-\$?; sleep 60" ||
		fail "tmux could not start the big client ($1)"
	wait_status 2 "$s1:shell\\* " 30 || fail2 "the big client ($1) drew no status bar"
	tmux -L "$SOCK2" send-keys -t 0 C-a d
	wait_for2 'ATTACH-EXITED-0' 30 || fail2 "the big client ($1) did not detach"
	tmux_kill "$SOCK2"
	# The small client draws and takes keys after each.
	keys "clear; echo after-big-$1-\$((1+1))" Enter
	wait_for "^after-big-$1-2\$" 20 || fail "the small client does not draw after the big one ($1) detached"
}
big 1
r1=$(rss)
big 2
big 3
r3=$(rss)
# A sanitizer's allocator keeps freed memory in quarantine: what is given back is not reused there.
if ldd "$AGENTMUX" 2>/dev/null | grep -q 'libasan\|libtsan'; then
	echo "screens: the small client draws after each big one; memory not measured (sanitizer build: freed memory is quarantined)"
	exit 0
fi
[ -n "$r1" ] && [ -n "$r3" ] || fail "cannot read the server's memory"
# Kept whole, each big screen would add ~80 MB; given back, the next one reuses its memory.
[ $((r3 - r1)) -lt 40000 ] ||
	fail "the server grew by $((r3 - r1)) kB over two big clients that detached (from $r1 kB): their screens were kept"
echo "screens: a detached client's screen is given back (server RSS $r1 kB, then $r3 kB after two more)"
