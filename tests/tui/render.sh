#!/bin/sh
# The pane pipeline through a real tmux, without sessions: keys reach the program, its output (colours, wide
# characters, the alternate screen) is drawn, and a resize reaches it. Runs tests/tui-pty-harness.
set -u
harness=${AGENTMUX_BUILD:?}/tests/tui-pty-harness
command -v tmux >/dev/null 2>&1 || { echo "SKIP: tmux is not installed"; exit 77; }
[ -x "$harness" ] || { echo "harness $harness not built"; exit 1; }
sock=amx-render-$$
dir=$(mktemp -d /tmp/amx-render.XXXXXX)
trap 'tmux -L $sock kill-server 2>/dev/null; rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; echo "--- screen:"; scr; exit 1; }
scr() { tmux -L $sock capture-pane -p -t 0 2>/dev/null; }
scr_e() { tmux -L $sock capture-pane -p -e -t 0 2>/dev/null; }
# wait_for PATTERN: polls the screen for up to 10 s.
wait_for() {
	i=0
	while [ $i -lt 100 ]; do
		scr | grep -q -- "$1" && return 0
		sleep 0.1; i=$((i + 1))
	done
	return 1
}
cat >"$dir/rc" <<'RC'
PS1='prompt$ '
RC
tmux -L $sock -u -f /dev/null new-session -d -x 100 -y 30 \
	"env TERM=xterm-256color $harness bash --noprofile --rcfile $dir/rc -i" ||
	fail "tmux could not start the harness"
wait_for 'prompt\$' || fail "no shell prompt"

tmux -L $sock send-keys -t 0 'echo hello-$((6*7))' Enter
wait_for 'hello-42' || fail "a typed command did not run"

tmux -L $sock send-keys -t 0 "printf '\\033[31mRED\\033[0m \\033[1mBOLD\\033[0m \\344\\270\\255\\346\\226\\207|\\n'" Enter
wait_for 'RED BOLD' || fail "coloured text not shown"
scr_e | grep -q "$(printf '\033')\\[31mRED" || fail "red is not red"
scr_e | grep -q "$(printf '\033')\\[1mBOLD" || fail "bold is not bold"
scr | grep -q "中文|" || fail "wide characters not shown in two columns each"

# Concealed text shows as blanks; a double-width line is drawn two columns a character.
tmux -L $sock send-keys -t 0 "printf 'c1:a\\033[8msecret\\033[28mb|\\n\\033#6wide|\\n'" Enter
wait_for '^c1:a      b|$' || fail "concealed text is shown"
wait_for '^w i d e |$' || fail "a double-width line is not drawn two columns a character"

tmux -L $sock send-keys -t 0 "printf '\\033[?1049hALT%sSCREEN' X; sleep 1; printf '\\033[?1049l'" Enter
wait_for 'ALTXSCREEN' || fail "alternate screen not shown"
scr | grep -q 'hello-42' && fail "the normal screen showed through the alternate one"
i=0
while [ $i -lt 100 ] && ! scr | grep -q 'hello-42'; do sleep 0.1; i=$((i + 1)); done
scr | grep -q 'hello-42' || fail "the normal screen did not come back"

tmux -L $sock resize-window -t 0 -x 72 -y 20
sleep 0.2
tmux -L $sock send-keys -t 0 'clear; stty size' Enter
wait_for '^20 72' || fail "the program did not get the new size"
echo "render: keys, colours, wide characters, alternate screen and resize through tmux"
