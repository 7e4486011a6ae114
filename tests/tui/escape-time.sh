#!/bin/sh
# [ui] escape_time through a real tmux: how long the dashboard waits after
# ESC for the rest of a sequence. The pane runs `cat -v`, which shows what
# reaches it: a lone ESC as ^[, ESC read with the next key as Alt as ^[ and
# that key. With escape_time = 0 a lone ESC reaches the pane at once and
# the prefix typed after it works; with a long escape_time the prefix typed
# a second later is still read as Alt+prefix and goes to the pane, as the
# fixed 50 ms of old could not be changed to.
set -u
. "$(dirname "$0")/lib.sh"

# typed PATTERN: waits for what cat -v echoed of the keys the pane got.
typed() {
	wait_for "$1" 20
}

# ---- escape_time = 0: ESC alone at once, then the prefix works ----
printf '[ui]\nescape_time = 0\n' >"$XDG_CONFIG_HOME/agentmux/config"
start_dashboard -- cat -v
wait_for '1:shell\* (starting|working|needs you)' 30 || fail "no status bar with the cat session"
keys Escape
typed '^\^\[$' || fail "escape_time = 0: a lone ESC did not reach the pane"
# The ESC went through on its own: the prefix right after it is the prefix.
prefix '?'
wait_for 'new session' || fail "escape_time = 0: the prefix after ESC was not the prefix"
escape
wait_gone 'new session' || fail "the key list did not close"
# A tmux and an agentmux server of their own for the second dashboard
# (cleanup ends the last ones): the server reads the config.
tmux -L "$SOCK" kill-server 2>/dev/null
stop_server || fail "the first agentmux server did not end"
SOCK=$SOCK-long

# ---- escape_time = 10000: ESC then the prefix a second later is Alt+prefix ----
printf '[ui]\nescape_time = 10000\n' >"$XDG_CONFIG_HOME/agentmux/config"
start_dashboard -- cat -v
wait_for '[0-9]+:shell\* (starting|working|needs you)' 30 || fail "no status bar with the second cat session"
keys Escape
sleep 1
scr | grep -q '\^\[' && fail "escape_time = 10000: ESC was taken alone within a second"
keys C-a
keys x
typed '^\^\[\^Ax$' || fail "escape_time = 10000: ESC, then the prefix a second later, was not Alt+prefix"
scr | grep -q 'close' && fail "escape_time = 10000: the prefix acted after ESC"

# ---- a bad value is named, with the file and line ----
tmux -L "$SOCK" kill-server 2>/dev/null
printf '[ui]\nescape_time = soon\n' >"$XDG_CONFIG_HOME/agentmux/config"
out=$("$AGENTMUX" config check 2>&1) && fail "config check took escape_time = soon: $out"
echo "$out" | grep -q "config:2: escape_time: " || fail "config check: $out"
printf '[ui]\nescape_time = 10001\n' >"$XDG_CONFIG_HOME/agentmux/config"
out=$("$AGENTMUX" config check 2>&1) && fail "config check took escape_time = 10001: $out"

echo "1 passed, 0 failed"
