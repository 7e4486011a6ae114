#!/bin/sh
# The pane's terminal emulation against vttest, the VT100/xterm test program: vttest runs jailed in an agentmux
# pane of 80x24, driven with tmux send-keys; every screen (capture-pane -e: text, attributes, colours) must
# match tests/tui/vttest/NAME.screen, each checked by hand against what vttest says on it (see README there).
# VTTEST_RECORD=1 writes the screens that have no file yet; check each one by hand before committing it.
set -u
. "$(dirname "$0")/lib.sh"
command -v vttest >/dev/null 2>&1 || { echo "SKIP: vttest is not installed (scripts/deps.sh --test installs it)"; exit 77; }
here=$(cd "$(dirname "$0")" && pwd)
exp=$here/vttest
record=${VTTEST_RECORD:-}
checked=0

# The pane's 24 rows, with attributes and colours, in one canonical form (vtscreen.awk); the status
# bar below is not vttest's.
cap() {
	tmux -L "$SOCK" capture-pane -p -e -t 0 -S 0 -E 23 2>/dev/null | awk -f "$here/vtscreen.awk"
}

# Waits for the screen to stay the same for a second (recording only).
settle() {
	i=0
	cap >"$T/a"
	while [ $i -lt 60 ]; do
		sleep 0.5
		cap >"$T/b"
		if cmp -s "$T/a" "$T/b"; then
			sleep 0.5
			cap >"$T/a"
			cmp -s "$T/a" "$T/b" && return 0
		fi
		cp "$T/b" "$T/a"
		i=$((i + 1))
	done
	fail "the screen did not settle"
}

# screen NAME: waits (up to 30 s) for the pane to show the screen NAME.
screen() {
	if [ -n "$record" ] && [ ! -f "$exp/$1.screen" ]; then
		settle
		cp "$T/a" "$exp/$1.screen"
		echo "recorded $1"
		return 0
	fi
	[ -f "$exp/$1.screen" ] || fail "no expected screen $exp/$1.screen"
	i=0
	while [ $i -lt 150 ]; do
		cap >"$T/now"
		if cmp -s "$T/now" "$exp/$1.screen"; then
			checked=$((checked + 1))
			return 0
		fi
		sleep 0.2
		i=$((i + 1))
	done
	echo "FAIL: vttest screen $1 is not as expected (- expected, + shown):"
	diff -u "$exp/$1.screen" "$T/now" | cat -v
	exit 1
}

# k KEYS...: types KEYS (tmux key names) into the pane.
k() {
	keys "$@"
}

DASH_SX=80 DASH_SY=25 start_dashboard -- vttest 24x80.80
wait_for 'Enter choice number \(0 - 12\)' 30 || fail "vttest did not start in a pane"
screen main

# Menu 1: cursor movements. 24x80.80 makes the "132 column" passes 80 wide,
# as the pane's width is the layout's (DECCOLM clears and homes, as in tmux).
k 1 Enter; screen m1-1
k Enter; screen m1-2
k Enter; screen m1-3
k Enter; screen m1-4
k Enter; screen m1-5
k Enter; screen m1-6
k Enter; screen main

# Menu 2: screen features (wrap, tabs, DECSCNM, scroll regions, origin mode,
# SGR, DECSC/DECRC with character sets).
k 2 Enter; screen m2-01
for n in 02 03 04 05 06 07 08 09 10 11 12 13 14 15; do
	k Enter; screen "m2-$n"
done
k Enter; screen main

# Menu 3: character sets.
k 3 Enter; screen m3-1
k Enter; screen main

# Menu 6: reports. The answerback message is empty, as xterm's is by
# default: vttest waits for a key, and shows the Enter typed.
k 6 Enter; screen m6
k 1 Enter; screen m6-1a
k Enter; screen m6-1b
k Enter; screen m6
k 2 Enter; screen m6-2a
k Enter; screen m6-2b
k Enter; screen m6-2c
k Enter; screen m6
for n in 3 4 5 6 7; do
	k $n Enter; screen "m6-$n"
	k Enter; screen m6
done
k 0 Enter; screen main

# Menu 8: VT102 insert and delete, at "80" and "132" columns.
k 8 Enter; screen m8-01
for n in 02 03 04 05 06 07 08 09 10 11 12 13 14; do
	k Enter; screen "m8-$n"
done
k Enter; screen main

# Menu 9, two of the known bugs: F (a mode list with DECCOLM in it) and
# the funny scroll regions (20;10 and 0;1 are no regions at all).
k 9 Enter; screen m9
k 6 Enter; screen m9-6a
k Enter; screen m9-6b
k Enter; screen m9
k 9 Enter; screen m9-9a
k Enter; screen m9-9b
k Enter; screen m9
k 0 Enter; screen main

# Menu 11: REP, colours, xterm's alternate screens and window reports.
k 11 Enter; screen m11
k 7 Enter; screen m11-7
k 2 Enter; screen m11-7-2
k Enter; screen m11-7
k 0 Enter; screen m11
k 6 Enter; screen m11-6
for n in 2 3; do
	k $n Enter; screen "m11-6-$n"
	k Enter; screen m11-6
done
k 4 Enter; screen m11-6-4a
k Enter; screen m11-6-4b
k Enter; screen m11-6
k 0 Enter; screen m11
k 8 Enter; screen m11-8
k 7 Enter; screen m11-8-7
for n in 3 4 5; do
	k $n Enter; screen "m11-8-7-${n}a"
	k Enter; screen "m11-8-7-${n}b"
	k Enter; screen "m11-8-7-${n}c"
	k Enter; screen m11-8-7
done
k 0 Enter; screen m11-8
k 9 Enter; screen m11-8-9a
k Enter; screen m11-8-9b
k Enter; screen m11-8-9c
k Enter; screen m11-8-9d
k Enter; screen m11-8
k 0 Enter; screen m11
k 0 Enter; screen main

echo "vttest: $checked screens as expected"
