#!/bin/sh
# A client run from an interactive shell (real job control, in a tmux
# window): prefix C-z gives the terminal back and stops the client as a
# job while the session runs on, 'fg' draws the dashboard again, 'bg'
# leaves it stopped; C-z without the prefix reaches the pane's own shell.
# kill-server while a client is suspended: 'fg' ends it and says why. The command prompt
# (prefix :) runs reload and detach and refuses other names. A reply
# (reload) shows in the client that asked only, a session's notice in
# both. attach and new say when the config file is not the server's.
set -u
. "$(dirname "$0")/lib.sh"
command -v bash >/dev/null 2>&1 || { echo "SKIP: bash is not installed"; exit 77; }

# A failure shows the server's log too: a server that died says why there.
fail() {
	echo "FAIL: $*"
	echo "--- screen:"
	scr
	echo "--- server log:"
	tail -n 20 "$XDG_STATE_HOME/agentmux/server.log" 2>/dev/null
	exit 1
}

# An interactive bash (job control on) in a tmux window of the size given, on tmux server $1.
start_shell() {
	tmux -L "$1" -u -f /dev/null new-session -d -x "$2" -y "$3" -c "$P" \
		-e "XDG_CONFIG_HOME=$XDG_CONFIG_HOME" -e "XDG_DATA_HOME=$XDG_DATA_HOME" \
		-e "XDG_RUNTIME_DIR=$XDG_RUNTIME_DIR" -e "XDG_STATE_HOME=$XDG_STATE_HOME" \
		-e "TERM=xterm-256color" -e "SHELL=/bin/sh" \
		"bash --norc --noprofile -i" || fail "tmux could not start bash"
	tmux -L "$1" send-keys -t 0 "PS1='OUTER\$ '" Enter
}

cat >"$XDG_CONFIG_HOME/agentmux/config" <<EOF
# first
EOF

# ---- the client runs as a job of an interactive shell ----
start_shell "$SOCK" 100 30
wait_for 'OUTER\$ ?$' || fail "no outer shell"
keys "$AGENTMUX" Enter
wait_status 1 '[0-9]+:shell\* ' 30 || fail "no dashboard"
wait_for '[#$] ?$' 20 || fail "no shell prompt in the pane"
id=$("$AGENTMUX" ls | head -n 1 | cut -d: -f1)
[ -n "$id" ] || fail "agentmux ls lists no session"

# ---- C-z without the prefix is the pane's: its shell stops its job ----
keys 'sleep 300' Enter
sleep 0.5
keys C-z
wait_for 'Stopped.*sleep 300' || fail "C-z without the prefix did not reach the pane's shell"
scr | grep -q 'OUTER\$' && fail "C-z without the prefix suspended the client"
status1 | grep -Eq "$id:shell\\* " || fail "the dashboard is gone after a plain C-z"
keys 'kill %1' Enter
echo "suspend: C-z without the prefix stops the pane's own job"

# ---- prefix C-z: the client stops, the shell has the terminal ----
keys C-a
keys C-z
wait_for '^OUTER\$ ?$' || fail "prefix C-z did not give the terminal back to the shell"
scr | grep -Eq 'Stopped.*agentmux' || fail "the shell does not show the client stopped"
wait_gone "$id:shell\\* " || fail "the dashboard stayed on the screen after prefix C-z"
# The server reads none of the keys meant for the shell.
keys 'echo back-$((40+2))' Enter
wait_for '^back-42$' || fail "the shell did not get the keys typed after the suspend"
"$AGENTMUX" ls | grep -Eq "^$id: .*(working|needs you)" ||
	fail "the session did not keep running while the client was stopped: $("$AGENTMUX" ls)"
echo "suspend: prefix C-z stops the client as a job; the session runs on"

# ---- fg: the dashboard again, drawn whole, and its keys work ----
keys 'fg' Enter
wait_status 1 "$id:shell\\* " || fail "fg did not draw the dashboard again"
wait_for 'Stopped.*sleep 300' || fail "the pane's screen was not drawn again after fg"
keys 'clear; echo pane-$((2+3))' Enter
wait_for '^pane-5$' || fail "the pane does not take keys after fg"
echo "suspend: fg draws the dashboard and it takes keys"

# ---- bg: continued in the background, the client stops again; the shell keeps the terminal ----
keys C-a
keys C-z
wait_for '^OUTER\$ ?$' || fail "prefix C-z did not give the terminal back (before bg)"
keys 'clear; bg' Enter
# The shell's jobs, asked until the client stopped again (each answer marked, on a cleared screen).
k=0
while [ $k -lt 30 ]; do
	k=$((k + 1))
	keys "clear; jobs; echo jobs-$k-listed" Enter
	wait_for "^jobs-$k-listed" || fail "the shell did not list its jobs after bg"
	scr | grep -Eq 'Stopped.*agentmux' && break
	sleep 0.2
done
scr | grep -Eq 'Stopped.*agentmux' || fail "bg did not leave the client stopped again"
scr | grep -Eq "$id:shell" && fail "bg drew the dashboard over the shell"
keys 'clear; echo after-bg-$((5+5))' Enter
wait_for '^after-bg-10$' || fail "the shell did not keep its keys after bg"
scr | grep -Eq "$id:shell" && fail "the dashboard drew over the shell after bg"
"$AGENTMUX" ls | grep -Eq "^$id: .*(working|needs you)" ||
	fail "the session did not run on after bg: $("$AGENTMUX" ls)"
keys 'fg' Enter
wait_status 1 "$id:shell\\* " || fail "fg after bg did not draw the dashboard again"
keys 'clear; echo after-bg-fg-$((6+6))' Enter
wait_for '^after-bg-fg-12$' || fail "the pane does not take keys after bg and fg"
echo "suspend: bg stops the client again; fg after it draws the dashboard"

# ---- typed right after prefix C-z, in the same read: not the pane's ----
# (a fast typist or a batching ssh: the server must not hand the rest to the agent)
tmux -L "$SOCK" send-keys -t 0 C-a C-z "touch $P/LEAKED-\$((1+1))" Enter
wait_for '^OUTER\$ ?$' || fail "prefix C-z (with keys after it) did not give the terminal back"
sleep 0.5
[ -e "$P/LEAKED-2" ] && fail "keys typed after prefix C-z in the same read reached the pane"
keys 'fg' Enter
wait_status 1 "$id:shell\\* " || fail "fg did not draw the dashboard again (after typeahead)"
sleep 0.5
[ -e "$P/LEAKED-2" ] && fail "keys typed after prefix C-z reached the pane after fg"
echo "suspend: keys after prefix C-z in the same read do not reach the pane"

# ---- a suspended client killed: the next attach draws the view it kept ----
keys C-a
keys C-z
wait_for '^OUTER\$ ?$' || fail "prefix C-z did not suspend the client (before the kill)"
keys 'kill -KILL %1' Enter
sleep 0.5
keys "clear; $AGENTMUX attach" Enter
wait_status 1 "$id:shell\\* " 20 ||
	fail "attach after a suspended client was killed drew no dashboard"
keys 'clear; echo after-kill-$((4+4))' Enter
wait_for '^after-kill-8$' || fail "the pane is not drawn after a suspended client was killed"
echo "suspend: a suspended client killed leaves its view drawable for the next attach"

# ---- the command prompt: an unknown name is refused with the list ----
keys C-a
keys :
wait_for '^:$' || fail "prefix : opened no command prompt"
keys 'bogus' Enter
wait_status 1 'bogus: no such command; Tab at the prompt lists them' ||
	fail "an unknown command was not refused, with where the list is"
# Tab on an empty prompt lists every command, on the prompt's line.
keys C-a
keys :
wait_for '^:$' || fail "prefix : opened no command prompt"
keys Tab
wait_for '^: +new  attach  kill  send  pause  resume  port  ls  reload  detach  kill-server' ||
	fail "Tab on an empty prompt did not list the commands"
keys -l 'zz'
keys Tab
wait_for '^:zz +no such command; it takes: new  attach' || fail "Tab on a name no command starts with did not say so"
keys Escape
sleep 0.3

# ---- the prompt's commands, as the CLI's (a SESSION left out: the focused one) ----
# prompt TEXT: prefix :, TEXT typed as it is, Enter.
prompt() {
	keys C-a
	keys :
	wait_for '^:' || fail "prefix : opened no command prompt"
	keys -l "$1"
	keys Enter
}
# Tab completes a unique name, and lists the names a prefix may be.
keys C-a
keys :
keys -l 'pa'
keys Tab
wait_for '^:pause *$' || fail "Tab did not complete 'pa' to 'pause'"
keys Enter
wait_status 1 "session $id \\(shell\\) paused" || fail ":pause did not pause the focused session"
"$AGENTMUX" ls | grep -Eq "^$id: .*paused" || fail "agentmux ls does not show session $id paused: $("$AGENTMUX" ls)"
keys C-a
keys :
keys -l 'ki'
keys Tab
wait_for '^:kill +kill  kill-server *$' || fail "Tab did not extend 'ki' to what kill and kill-server share, listing both"
keys Escape
sleep 0.3
prompt "resume $id"
wait_status 1 "session $id \\(shell\\) resumed" || fail ":resume $id did not resume the session"
prompt "send $id 'clear; echo sent-\$((3+4))' Enter"
wait_for '^sent-7$' || fail ":send did not type into the session"
prompt 'new -d --shared'
wait_status 1 "$id:shell\\* .*[0-9]+:shell" 20 || fail ":new -d did not start a second session beside the focused one"
n2=$("$AGENTMUX" ls | tail -n 1 | cut -d: -f1)
[ "$n2" != "$id" ] || fail ":new -d started no session: $("$AGENTMUX" ls)"
prompt "attach -t $n2"
wait_status 1 "$n2:shell\\* " || fail ":attach -t $n2 did not show session $n2"
prompt 'kill'
# ("closing session N", then "session N (shell) closed": either may be read.)
wait_status 1 "(closing )?session $n2( \\(shell\\) closed)?" || fail ":kill did not close the focused session"
i=0
while [ $i -lt 100 ] && "$AGENTMUX" ls | grep -q "^$n2:"; do sleep 0.1; i=$((i + 1)); done
"$AGENTMUX" ls | grep -q "^$n2:" && fail ":kill left session $n2 running"
prompt 'kill 99999'
wait_status 1 'kill: no running session 99999 here' || fail ":kill of no session was not refused"
prompt 'kill x'
wait_status 1 "kill: x is not a session number" || fail ":kill x was not refused"
prompt 'port'
wait_status 1 'port: usage: port \[-d\] \[-t SESSION\] JAIL_PORT' || fail ":port with nothing did not give its usage"
prompt 'reload now'
wait_status 1 'reload takes no arguments' || fail ":reload with an argument was not refused"
prompt "attach -t $id"
wait_status 1 "$id:shell\\* " || fail ":attach -t $id did not show session $id again"
# Tab completes arguments: live sessions and "last", a command's flags, agents after new -a.
keys C-a
keys :
keys -l 'kill '
keys Tab
wait_for "^:kill +$id  last *\$" || fail "Tab after kill did not list the live sessions and last"
keys Escape
sleep 0.3
keys C-a
keys :
keys -l 'pause l'
keys Tab
wait_for '^:pause last *$' || fail "Tab did not complete 'l' to last"
keys Enter
wait_status 1 "session $id \\(shell\\) paused" || fail ":pause last did not pause the last session"
prompt 'resume last'
wait_status 1 "session $id \\(shell\\) resumed" || fail ":resume last did not resume the last session"
keys C-a
keys :
keys -l 'attach '
keys Tab
wait_for '^:attach -t *$' || fail "Tab after attach did not put its one flag"
keys Tab
wait_for "^:attach -t +$id  last *\$" || fail "Tab after attach -t did not list the sessions"
keys Escape
sleep 0.3
keys C-a
keys :
keys -l 'new -'
keys Tab
wait_for '^:new - +-d  -a  -C  --worktree  --shared  -- *$' || fail "Tab after new - did not list its flags"
keys -l -- '-w'
keys Tab
wait_for '^:new --worktree *$' || fail "Tab did not complete --w to --worktree"
keys -l -- '-a she'
keys Tab
wait_for '^:new --worktree -a shell *$' || fail "Tab after -a did not complete an agent's name"
keys Escape
sleep 0.3
# A reply naming a project whose path holds an escape sequence shows it quoted, never raw.
esc=$(printf 'p\033[31mx')
mkdir "$T/$esc" || fail "mkdir"
ns=$("$AGENTMUX" new -d --shared -C "$T/$esc" -- sh) || fail "new -d in $T/$esc failed: $ns"
prompt "attach -t $ns"
wait_status 1 "$ns:shell\\* " || fail ":attach -t $ns did not show session $ns"
# (Wide enough for the reply to show whole.)
tmux -L "$SOCK" resize-window -t 0 -x 240 -y 30 || fail "tmux resize-window"
prompt 'new -d'
wait_status 1 'new: session [0-9]+ is running on .*p\\033\[31mx already' ||
	fail ":new -d in a tree in use did not name the project quoted"
tmux -L "$SOCK" capture-pane -p -e -t 0 | grep -qF "$esc" && fail "the prompt's reply drew the project's escape raw"
tmux -L "$SOCK" resize-window -t 0 -x 100 -y 30 || fail "tmux resize-window"
"$AGENTMUX" kill "$ns"
i=0
while [ $i -lt 100 ] && "$AGENTMUX" ls | grep -q "^$ns:"; do sleep 0.1; i=$((i + 1)); done
prompt "attach -t $id"
wait_status 1 "$id:shell\\* " || fail ":attach -t $id did not show session $id again"
wait_gone "$ns:shell" || fail "session $ns's tab stayed after it was killed"
echo "suspend: the command prompt runs new, attach, kill, send, pause and resume, completes with Tab"
keys C-a
keys :
keys 'reload' Escape
sleep 0.3
status1 | grep -q 'config is reloaded' && fail "Esc in the command prompt ran the command"

# ---- a second client: a reply shows in the client that asked only ----
start_shell "$SOCK2" 100 30
sleep 0.3
tmux -L "$SOCK2" send-keys -t 0 "$AGENTMUX attach" Enter
wait_status 2 "$id:shell\\* " 30 || fail2 "no dashboard in the second terminal"
keys C-a
keys :
keys 'reload' Enter
wait_status 1 'the config is reloaded' || fail "the command prompt's reload said nothing"
sleep 0.3
status2 | grep -q 'config is reloaded' && fail2 "the reply to the first client's reload showed in the second"
# A session's notice is everyone's.
s2=$("$AGENTMUX" new -d --shared -C "$P") || fail "new -d failed: $s2"
"$AGENTMUX" kill "$s2"
wait_status 1 "session $s2" || fail "the first client did not see session $s2 close"
wait_status 2 "session $s2" || fail2 "the second client did not see session $s2 close"
echo "suspend: a reply is the asking client's, a session's notice everyone's"

# ---- one client suspended, the other draws and types on ----
keys C-a
keys C-z
wait_for '^OUTER\$ ?$' || fail "prefix C-z with two clients did not suspend the first"
tmux -L "$SOCK2" send-keys -t 0 'clear; echo other-$((3+4))' Enter
wait_for2 '^other-7$' || fail2 "the second client does not type into the pane while the first is suspended"
scr | grep -q 'other-7' && fail "the suspended client's terminal was drawn on"
keys 'fg' Enter
wait_for '^other-7$' || fail "fg did not draw what the pane showed meanwhile"
echo "suspend: the other client goes on while one is suspended"

# ---- attach and new say when the config file is not the server's ----
echo '# second' >>"$XDG_CONFIG_HOME/agentmux/config"
tmux -L "$SOCK2" send-keys -t 0 C-a d
wait_for2 'detached \(from agentmux' || fail2 "prefix d did not detach the second client"
tmux -L "$SOCK2" send-keys -t 0 "$AGENTMUX attach" Enter
wait_status 2 'config changed since the server read it: prefix R reloads' ||
	fail2 "attach did not say the config file changed"
status1 | grep -q 'config changed' && fail "the second client's config warning showed in the first"
out=$("$AGENTMUX" new -d --shared -C "$P" 2>"$T/new.err") || fail "new -d failed: $out"
echo "$out" | grep -Eq '^[0-9]+$' || fail "new -d printed more than the session number: $out"
grep -q "config file changed since the server loaded it.*'agentmux reload'" "$T/new.err" ||
	fail "new -d did not say the config file changed: $(cat "$T/new.err")"
[ "$(wc -l <"$T/new.err")" -eq 1 ] || fail "the warning is not one line: $(cat "$T/new.err")"
"$AGENTMUX" kill "$out"
"$AGENTMUX" reload >/dev/null || fail "agentmux reload failed"
out=$("$AGENTMUX" new -d --shared -C "$P" 2>"$T/new.err") || fail "new -d failed: $out"
[ -s "$T/new.err" ] && fail "new -d warned with the server's config current: $(cat "$T/new.err")"
"$AGENTMUX" kill "$out"
echo "suspend: attach and new say when the config file changed"

# ---- :detach lets this client go ----
keys C-a
keys :
keys 'detach' Enter
wait_for 'detached \(from agentmux' || fail ":detach did not detach the client"
wait_status 2 "$id:shell\\* " || fail2 "the first client's :detach took the second with it"
echo "suspend: :detach detaches"

# ---- kill-server while a client is suspended: fg says the server is gone, starts none ----
tmux -L "$SOCK2" send-keys -t 0 C-a
tmux -L "$SOCK2" send-keys -t 0 C-z
wait_for2 '^OUTER\$ ?$' || fail2 "prefix C-z did not suspend the second client (before kill-server)"
sv=$(server_pid)
"$AGENTMUX" kill-server || fail "kill-server failed"
i=0
while [ -n "$sv" ] && kill -0 "$sv" 2>/dev/null && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
[ -n "$sv" ] && kill -0 "$sv" 2>/dev/null && fail "kill-server did not end the server"
tmux -L "$SOCK2" send-keys -t 0 'clear; fg; echo FG-EXITED-$?' Enter
wait_for2 'FG-EXITED-[0-9]+' 20 || fail2 "the suspended client did not end after fg with its server gone"
# (As an attached client's: 0, the server ended as asked.)
scr2 | grep -q 'FG-EXITED-0' || fail2 "the client did not exit 0 with its server killed"
scr2 | grep -Fq '[server exited (agentmux kill-server)]' ||
	fail2 "the client did not say its server exited"
sleep 0.5
[ -z "$(server_pid)" ] || ! kill -0 "$(server_pid)" 2>/dev/null ||
	fail2 "fg after kill-server started a new server"
tmux -L "$SOCK2" send-keys -t 0 'echo shell-ok-$((8+8))' Enter
wait_for2 '^shell-ok-16$' || fail2 "the shell does not work after the client ended"
echo "suspend: kill-server while a client is suspended: fg ends it, with why"
exit 0
