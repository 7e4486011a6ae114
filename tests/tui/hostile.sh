#!/bin/sh
# The dashboard through a real tmux, with a jailed agent that makes hostile file names (OSC 52 clipboard
# and OSC 2 title sequences, a C1 CSI, a right-to-left override), hostile content, a nested repository with
# a hostile name, a hostile window title and requests with hostile paths and headers: the prompt, the
# requests panel, a request's details, the project diff, the pane title and the status bar show them
# quoted; no raw control, C1 or bidi character reaches the screen, and the outer tmux's pane title and
# paste buffers are never set by them.
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/../cmd/hostile-lib.sh"
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 is not installed"; exit 77; }
[ -x /usr/bin/python3 ] || { echo "SKIP: /usr/bin/python3 (for the jail) is missing"; exit 77; }

export HOME=$T/home
mkdir -p "$HOME/.hostile"
cat >"$XDG_CONFIG_HOME/agentmux/config" <<EOF
[policy]
on_unknown = ask
prompt_timeout = 60

[agent hostile]
command = sh
config_dir = ~/.hostile
EOF
hostile_agent_script >"$P/agent.sh"
(cd "$P" && git add agent.sh && git commit -qm agent) || fail "cannot commit the agent script"

# The outer terminal takes OSC 52 into its paste buffers and OSC 2 as the pane's title, so that
# anything agentmux let through would show. (The tmux server inherits HOME.)
start_dashboard -a hostile
tmux -L "$SOCK" set -g set-clipboard on
tmux -L "$SOCK" set -g allow-rename on
wait_for '1:hostile\* (working|needs you)' || fail "no status bar with the session"
wait_for '[#$] ?$' || fail "no shell prompt in the pane"
TITLE0=$(tmux -L "$SOCK" display -p -t 0 '#{pane_title}')

# Checks the screen: with tmux's own attribute sequences (-e) taken out, nothing unsafe is on it.
screen_clean() {
	tmux -L "$SOCK" capture-pane -e -p -t 0 | python3 -c '
import re, sys
data = sys.stdin.buffer.read()
sys.stdout.buffer.write(re.sub(rb"\x1b\[[0-9;:]*m", b"", data))' >"$T/screen"
	why=$(hostile_clean "$T/screen" 2>&1) || fail "$1: the screen holds a raw control character: $why"
}

# The agent's own title, with a bidi override in it; then the hostile agent.
keys "printf '\\033]2;title\\342\\200\\256x\\007'; sh agent.sh; echo agent-\$((2+3))" Enter
wait_for 'evil\.test:80' 30 || fail "no prompt for the hostile request"
wait_for 'evil\.test:80/p\\342\\200\\256q\\302\\2332J' || fail "the prompt does not show the path escaped"
screen_clean "the prompt"
prefix a
wait_for 'deny once' || fail "the prompt did not take the focus"
keys d
wait_for 'evil\.test:80/ok\\302\\205' 30 || fail "no prompt for the second request"
screen_clean "the second prompt"
prefix a
wait_for 'deny once' || fail "the second prompt did not take the focus"
keys d
wait_for 'agent-5' 60 || fail "the agent did not finish"
# Pane titles show with two sessions side by side.
prefix c
wait_for 'pick an agent' || fail "no agent picker"
keys s
keys Enter
wait_for 'project directory' || fail "no project dir step"
keys Enter
share_tree
wait_for '2:shell\* (working|needs you)' || fail "the second session did not start"
prefix '|'
prefix 1
wait_for '1: hostile .*title\\342\\200\\256x' || fail "the pane title does not show the agent's title escaped"
screen_clean "the pane and its title"

# The requests panel and a request's details.
prefix r
wait_for 'requests: [0-9]+ of [0-9]+' || fail "no requests panel"
wait_for '/p\\342\\200\\256q\\302\\2332J' || fail "the requests panel does not show the path escaped"
screen_clean "the requests panel"
keys Up
keys Enter
wait_for 'decision: +deny' || fail "Enter did not show the request's details"
wait_for 'X-A: v\\302\\2332J\\342\\200\\256' || fail "the details do not show the header escaped"
screen_clean "the request's details"
escape
escape

# The project diff: names and content from the jail.
prefix D
wait_for 'project diff' || fail "prefix D did not open the project diff"
wait_for 'PWNED' 30 || fail "the project diff does not show the hostile names or content"
wait_for '\\033]2;PWNED' || fail "the project diff does not show the escape sequences escaped"
screen_clean "the project diff"
escape

# The session's history: its events, and the config diff of a file with a hostile name.
prefix h
wait_for 'history: [0-9]+ sessions' || fail "no history"
keys Down
keys Enter
wait_for 'session 1: ' || fail "Enter in the history did not open session 1"
screen_clean "the session view"
keys g
wait_for '\\033]52;c;' 30 || fail "the config diff does not show the hostile name escaped"
screen_clean "the config diff"
escape
escape
escape

# The outer terminal: its title is the one it had, its paste buffers are empty.
title=$(tmux -L "$SOCK" display -p -t 0 '#{pane_title}')
case $title in
*PWNED*|*title*) fail "the outer pane's title was set: $title" ;;
esac
[ "$title" = "$TITLE0" ] || fail "the outer pane's title changed from '$TITLE0' to '$title'"
bufs=$(tmux -L "$SOCK" list-buffers 2>&1)
[ -z "$bufs" ] || fail "the outer terminal's paste buffers were set: $bufs"

prefix q
wait_for 'Quit\?' || fail "quitting did not ask"
keys y
wait_for 'DASHBOARD-EXITED-0' || fail "the dashboard did not exit"
echo "hostile: prompts, requests panel, details, diff, pane title, config diff quoted; outer title and buffers untouched"
