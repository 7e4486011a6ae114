#!/bin/sh
# Sessions in the dashboard through a real tmux (issue 23): one number everywhere (the record's id) in tabs,
# prompts, request details, notices and the CLI; a restart keeps the answers given for the session and the old
# run's requests; the new-session dialog (not installed agents, ~, Tab completion, errors kept in the dialog,
# Esc); the status bar (the focused session's project, scrolling at 80 columns, zoom, clicks); closing (a
# hang-up, the pane goes, recorded "closed"); history and CLI in the same words; quitting says what is left to
# review.
set -u
. "$(dirname "$0")/lib.sh"
command -v curl >/dev/null 2>&1 || { echo "SKIP: curl is not installed"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 is not installed"; exit 77; }
command -v openssl >/dev/null 2>&1 || { echo "SKIP: openssl is not installed"; exit 77; }

# A home of the test's own: an agent's config dir lives in it.
export HOME="$T/home"
mkdir -p "$HOME/.amxcfg"
chmod 755 "$HOME"

# A local HTTPS server with its own CA; it writes what it served to $SEEN.
https_upstream_make DNS:localhost,IP:127.0.0.1
https_upstream_start port 400
UPID=$!
PORT=$(https_upstream_port port)
[ -n "$PORT" ] || fail "the local HTTPS server did not start"
URL=https://127.0.0.1:$PORT

cat >"$XDG_CONFIG_HOME/agentmux/config" <<EOF
[proxy]
upstream_ca = $u/ca.pem

[policy]
on_unknown = ask
prompt_timeout = 60

[agent vanished]
description = an agent that is not installed
command = amx-no-such-agent-cmd

[agent keeper]
description = a shell with an overlaid config dir
command = sh
config_dir = ~/.amxcfg
EOF

# sessions_json: agentmux sessions --json, for python3 to read.
sessions_json() {
	"$AGENTMUX" sessions --all --json
}

# state_of ID: "STATE EXIT" of session ID as the store has it.
state_of() {
	sessions_json | python3 -c '
import json, sys
for s in json.load(sys.stdin):
    if s["id"] == int(sys.argv[1]): print(s["state"], s["exit_status"])' "$1"
}

# wait_state ID PATTERN: polls (the store commits in batches) until session ID's "STATE EXIT" matches.
wait_state() {
	i=0
	while [ $i -lt 100 ]; do
		st=$(state_of "$1")
		case $st in $2) return 0 ;; esac
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

# Two earlier sessions, so that records and panes number differently.
"$AGENTMUX" run -C "$P" -- true </dev/null >/dev/null 2>&1 || fail "agentmux run could not run a session"
"$AGENTMUX" run -C "$P" -- true </dev/null >/dev/null 2>&1 || fail "agentmux run could not run a session"

mkdir -p "$P/sub-a" "$P/sub-b" "$P/sub-$(printf '\033')x"
O=$T/other
mkdir -p "$O"
(cd "$O" && git init -q . && git config user.email t@x && git config user.name t &&
	echo o >o && git add o && git commit -qm o) || fail "cannot make the other project"

start_dashboard
wait_for '\[proj\] 3:shell\* (working|needs you)' || fail "the first tab is not named by its record, session 3"
wait_for '[#$] ?$' || fail "no shell prompt"

# --- the new-session dialog ---
prefix c
wait_for 'pick an agent' || fail "no agent picker"
wait_for 'vanished +\(not installed\)' || fail "an agent that is not installed is not marked"
keys v
keys Enter
wait_for 'amx-no-such-agent-cmd' || fail "picking an agent that is not installed does not say what is missing"
scr | grep -q 'pick an agent' || fail "the dialog closed on an agent that is not installed"
escape
wait_gone 'pick an agent' || fail "Esc did not close the dialog"
wait_gone 'not installed' || fail "the dialog's box stayed painted after Esc"

# ~ is answered in the dashboard's terms, and the error stays in the dialog.
prefix c
wait_for 'pick an agent' || fail "no agent picker"
keys s Enter
wait_for 'project directory' || fail "no project dir step"
keys C-u '~' Enter
wait_for 'your home directory' || fail "choosing ~ does not say it is the home directory"
scr | grep -q 'inside it' || fail "choosing ~ does not say to pick a directory inside it"
scr | grep -q -- '-C DIR' && fail "choosing ~ answers with command-line advice"
# Esc, then Down: both for the dialog, nothing reaches the shell.
escape
keys Down
wait_for 'pick an agent' || fail "Esc after an error did not go back to the agents"
escape
wait_gone 'pick an agent' || fail "Esc did not close the dialog"
keys 'echo typed-$((2+2))' Enter
wait_for 'typed-4' || fail "the shell does not take keys after the dialog"
scr | grep -q '\[B' && fail "Esc then Down typed [B into the shell"

# Tab completes directories: the common part, then a list (names quoted), then one.
prefix c
wait_for 'pick an agent' || fail "no agent picker"
keys s Enter
wait_for 'project directory' || fail "no project dir step"
keys C-u "$P/su" Tab
wait_for "dir: $P/sub-( |\$)" || fail "Tab did not complete the part the directories share"
keys Tab
wait_for 'sub-a/ +sub-b/' || fail "Tab did not list the directories"
scr | grep -q 'sub-\\033x' || fail "a directory named with an escape is not listed quoted"
keys C-u "$T/oth" Tab
wait_for "dir: $T/other/( |\$)" || fail "Tab did not complete the only directory"
keys Enter
wait_for '\[other\] 3:shell (working|needs you) 4:shell\* (working|needs you)' ||
	fail "the second session is not session 4, or the bar does not show its project"
wait_for '[#$] ?$' || fail "no prompt in session 4"

# The bar shows the focused session's project.
prefix 1
wait_for '\[proj\] 3:shell\* (working|needs you)' || fail "the bar does not show session 3's project when it has the focus"

# --- one number, and a restart that keeps the session's answers ---
keys "curl -s $URL/alpha; echo; echo curl-done-\$((0+1))" Enter
wait_for "1/1 3:shell .*127\\.0\\.0\\.1:$PORT" || fail "the prompt does not name session 3"
prefix a
wait_for 'allow session' || fail "the prompt queue did not take the focus"
keys s
wait_for 'served /alpha' || fail "allow for the session did not let the request through"
wait_for 'curl-done-1' || fail "curl did not finish"
keys 'exit' Enter
wait_for 'shell 3 exited with status 0' || fail "the exited pane does not name session 3"
keys r
wait_for '5:shell\* (working|needs you)' || fail "r did not restart the session as session 5"
wait_for 'restarts session 3' || fail "the restart does not say which session it continues"
wait_for '[#$] ?$' || fail "no prompt after the restart"
keys "curl -s $URL/bravo; echo; echo curl-done-\$((1+1))" Enter
wait_for 'curl-done-2' 20 || fail "the restarted session was asked again (or curl hung)"
grep -q 'served /bravo' "$SEEN" || fail "the answer for the session did not hold after the restart"
scr | grep -q 'prompts 1' && fail "the restarted session raised a prompt"
prefix r
wait_for 'requests: [0-9]+ of [0-9]+' || fail "no requests panel"
wait_for '/alpha' || fail "the old run's request is gone from the requests panel"
scr | grep -q '/bravo' || fail "the new run's request is not in the requests panel"
keys / a l p h a Enter
wait_gone '/bravo' || fail "the filter did not hide /bravo"
keys Enter
wait_for 'session: +3$' || fail "the request's details do not name session 3"
escape
escape
"$AGENTMUX" show 3 | grep -q "127.0.0.1" || fail "agentmux show 3 is not the session that made the request"

# --- an agent with a config dir: its change is left for review on quit ---
prefix c
wait_for 'pick an agent' || fail "no agent picker"
# The agents from the config come last: keeper is the last one.
keys End
keys Enter
wait_for 'project directory' || fail "no project dir step"
keys Enter
share_tree
wait_for '6:keeper\* (working|needs you)' || fail "the keeper session is not session 6"
wait_for '[#$] ?$' || fail "no prompt in session 6"
keys 'echo changed >~/.amxcfg/setting; echo wrote-$((3+3))' Enter
wait_for 'wrote-6' || fail "session 6 could not write its config dir"

# --- the status bar at 80 columns: the focused tab stays in view ---
for want in 7 8; do
	prefix c
	wait_for 'pick an agent' || fail "no agent picker"
	keys s Enter
	wait_for 'project directory' || fail "no project dir step"
	keys Enter
	share_tree
	wait_for "$want:shell\\* (working|needs you)" || fail "no session $want"
done
tmux -L "$SOCK" resize-window -t 0 -x 80 -y 45
wait_for '^\[proj\] < .*8:shell\* (working|needs you)' || fail "at 80 columns the focused last tab is cut off, or no mark"
prefix 1
wait_for '^\[proj\] 5:shell\* (working|needs you) .* >( |$)' || fail "at 80 columns the first tab is not shown with a mark"
prefix '|'
wait_for '│' || fail "no split to zoom"
# The split shows session 4 beside it, focused.
prefix z
wait_for '4:shell\*Z (working|needs you)' || fail "zoom has no mark"
prefix z
wait_for '4:shell\* (working|needs you)' || fail "the zoom mark stayed after unzooming"
tmux -L "$SOCK" resize-window -t 0 -x 160 -y 45
wait_for '6:keeper (working|needs you) 7:shell (working|needs you) 8:shell (working|needs you)' ||
	fail "the bar did not show every tab again at 160 columns"
# A click on a tab focuses it.
col=$(scr | tail -n 1 | awk '{ print index($0, "6:keeper") }')
[ "$col" -gt 0 ] || fail "no tab for session 6 to click"
keys -l "$(printf '\033[<0;%d;45M\033[<0;%d;45m' "$((col + 1))" "$((col + 1))")"
wait_for '\[proj\] .*6:keeper\* (working|needs you)' || fail "a click on a tab did not focus it"

# --- closing: a hang-up ends the shell, the pane goes, the record says closed ---
prefix 5
wait_for '8:shell\* (working|needs you)' || fail "prefix 5 did not focus the fifth tab"
prefix x
wait_for 'Close session 8' || fail "closing does not name session 8"
keys y
wait_gone '8:shell' 20 || fail "the closed session's pane stayed"
scr | grep -q 'exited with status' && fail "the closed session was shown as an exit"
wait_state 8 "closed 129" || fail "session 8 was recorded as '$st', not closed by the hang-up (129)"
"$AGENTMUX" sessions --all | grep -Eq '^ *8 +closed ' || fail "agentmux sessions does not say closed"
"$AGENTMUX" show 8 | grep -q 'state     closed' || fail "agentmux show 8 does not say closed"

# --- history in the same words ---
prefix h
wait_for 'history: [0-9]+ sessions' || fail "no history"
scr | grep -Eq '^ +8 shell .* closed ' || fail "history does not say session 8 was closed"
scr | grep -Eq '^ +1 [a-z]+ .* exited 0 ' || fail "history does not say exited 0 as the CLI does"
scr | grep -Eq '^ +3 shell .* exited 0 ' || fail "history does not say session 3 exited 0"
scr | grep -Eq '^ +5 shell .* (working|needs you) .* +- *$' ||
	fail "a running session's row is not 'running' with files '-'"
keys Down Down Down
keys Enter
wait_for 'session 5: .* started [0-9-]+ [0-9:]+, (working|needs you)$' || fail "the session header does not say running"
wait_for 'files changed -' || fail "a running session's files changed is not '-'"
escape
escape

# --- quitting: every session is closed, and config changes left are named ---
prefix q
wait_for 'Quit\?' || fail "quitting did not ask"
keys y
wait_for 'DASHBOARD-EXITED-0' 20 || fail "the dashboard did not exit"
scr | grep -q "1 session left config changes to review (6): see them with 'agentmux confdiff 6'" ||
	fail "quitting does not say that session 6 left config changes to review"
for id in 4 5 6 7; do
	wait_state $id "closed *" || fail "session $id was recorded as '$st' after quitting, not closed"
done

# --- the same close and quit as an unprivileged user (a throwaway one) ---
if [ "$(id -u)" != 0 ] || ! command -v useradd >/dev/null 2>&1 || ! command -v setpriv >/dev/null 2>&1; then
	echo "sessions: record ids everywhere, restart keeps answers, dialog, status bar, close, history, quit" \
		"(the unprivileged pass needs root, useradd and setpriv: skipped)"
	exit 0
fi
U="amxs$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')"
useradd -M -N -d /nonexistent -s /bin/sh "$U" || fail "cannot add a user"
cleanup_user() {
	cleanup
	i=0
	while [ $i -lt 100 ] && pgrep -u "$U" >/dev/null; do sleep 0.1; i=$((i + 1)); done
	userdel "$U" 2>/dev/null
}
trap cleanup_user EXIT
W=$T/user
mkdir -p "$W/bin" "$W/config/agentmux" "$W/data" "$W/run" "$W/home" "$W/proj"
cp "$AGENTMUX" "$W/bin/agentmux"
# (and the whole program it runs, beside it)
cp "${AGENTMUX%/*}/agentmux-full" "$W/bin/agentmux-full"
cp -r "$AGENTMUX_SHARE" "$W/share"
chmod 700 "$W/run"
(cd "$W/proj" && git init -q . && git config user.email t@x && git config user.name t &&
	echo hi >README && git add README && git commit -qm init) || fail "no project for the user"
chown -R "$U:$(id -g "$U")" "$W"
chmod -R a+rX "$W/bin" "$W/share"
# user_env CMD...: CMD as the user, with the user's own dirs.
user_env() {
	setpriv --reuid="$U" --regid="$(id -g "$U")" --init-groups env -i PATH="$PATH" HOME="$W/home" \
		XDG_CONFIG_HOME="$W/config" XDG_DATA_HOME="$W/data" XDG_RUNTIME_DIR="$W/run" \
		AGENTMUX_SHARE="$W/share" TERM=xterm-256color "$@"
}
# ust ID: "STATE EXIT" of the user's session ID.
ust() {
	user_env "$W/bin/agentmux" sessions --all --json | python3 -c '
import json, sys
for s in json.load(sys.stdin):
    if s["id"] == int(sys.argv[1]): print(s["state"], s["exit_status"])' "$1"
}
tmux -L "$SOCK" kill-server 2>/dev/null
{
	echo "cd '$W/proj' || exit 1"
	echo "setpriv --reuid='$U' --regid='$(id -g "$U")' --init-groups env -i PATH='$PATH' HOME='$W/home'" \
		"XDG_CONFIG_HOME='$W/config' XDG_DATA_HOME='$W/data' XDG_RUNTIME_DIR='$W/run'" \
		"AGENTMUX_SHARE='$W/share' TERM=xterm-256color '$W/bin/agentmux'"
	echo 'echo DASHBOARD-EXITED-$?'
	echo 'sleep 60'
} >"$W/launch.sh"
chmod a+r "$W/launch.sh"
tmux -L "$SOCK" -u -f /dev/null new-session -d -x 160 -y 45 -c "$W/proj" "sh $W/launch.sh" ||
	fail "[user] tmux could not start agentmux"
wait_for '\[proj\] 1:shell\* (working|needs you)' || fail "[user] no first session"
wait_for '[#$] ?$' || fail "[user] no shell prompt"
prefix c
wait_for 'pick an agent' || fail "[user] no agent picker"
keys s Enter
wait_for 'project directory' || fail "[user] no project dir step"
keys Enter
share_tree
wait_for '2:shell\* (working|needs you)' || fail "[user] no second session"
wait_for '[#$] ?$' || fail "[user] no prompt in session 2"
prefix x
wait_for 'Close session 2' || fail "[user] closing does not name session 2"
keys y
wait_gone '2:shell' 20 || fail "[user] the closed session's pane stayed"
i=0
while [ $i -lt 100 ] && [ "$(ust 2)" != "closed 129" ]; do sleep 0.1; i=$((i + 1)); done
[ "$(ust 2)" = "closed 129" ] || fail "[user] session 2 was recorded as '$(ust 2)', not closed by the hang-up"
prefix q
wait_for 'Quit\?' || fail "[user] quitting did not ask"
keys y
wait_for 'DASHBOARD-EXITED-0' 20 || fail "[user] the dashboard did not exit"
i=0
while [ $i -lt 100 ] && [ "$(ust 1)" != "closed 129" ]; do sleep 0.1; i=$((i + 1)); done
[ "$(ust 1)" = "closed 129" ] || fail "[user] quitting recorded session 1 as '$(ust 1)', not closed by the hang-up"
echo "sessions: record ids everywhere, restart keeps answers, dialog, status bar, close, history, quit;" \
	"as root and as a throwaway user"
