#!/bin/sh
# The server through real tmux windows as terminals: detach and reattach
# from a second tmux server (same pane, its scrollback), a terminal killed
# or a client SIGKILLed leave the sessions running, a server SIGKILLed
# leaves nothing jailed and its sessions crashed, a socket directory with
# the wrong mode or owner is refused, another user's connection and a
# client of another protocol version are refused.
set -u
. "$(dirname "$0")/lib.sh"

# attach2 [ARGS]: `agentmux attach` in a second tmux server, 100x30.
attach2() {
	# (a tmux server still going away makes the next one fail to start)
	tmux -L "$SOCK2" kill-server 2>/dev/null && sleep 0.5
	tmux -L "$SOCK2" -u -f /dev/null new-session -d -x 100 -y 30 -c "$P" \
		-e "XDG_CONFIG_HOME=$XDG_CONFIG_HOME" -e "XDG_DATA_HOME=$XDG_DATA_HOME" \
		-e "XDG_RUNTIME_DIR=$XDG_RUNTIME_DIR" -e "XDG_STATE_HOME=$XDG_STATE_HOME" \
		-e "TERM=xterm-256color" \
		"$AGENTMUX attach $*; echo ATTACH-EXITED-\$?; sleep 60" ||
		fail "tmux could not start agentmux attach"
}
wait_for2() {
	i=0
	while [ $i -lt $(( ${2:-10} * 10 )) ]; do
		scr2 | grep -Eq -- "$1" && return 0
		sleep 0.1
		i=$((i + 1))
	done
	echo "--- second terminal:"
	scr2
	return 1
}
# sleeping NUM: the session's `sleep NUM` runs (host pids; none: empty).
sleeping() {
	pgrep -f "^(/usr/bin/)?sleep $1\$"
}

# ---- a terminal the server cannot draw on starts nothing ----
tmux -L "$SOCK" -u -f /dev/null new-session -d -x 100 -y 30 -c "$P" \
	-e "XDG_CONFIG_HOME=$XDG_CONFIG_HOME" -e "XDG_DATA_HOME=$XDG_DATA_HOME" \
	-e "XDG_RUNTIME_DIR=$XDG_RUNTIME_DIR" -e "XDG_STATE_HOME=$XDG_STATE_HOME" \
	"TERM=no-such-terminal $AGENTMUX; echo BADTERM-EXITED-\$?; sleep 60" ||
	fail "tmux could not start agentmux"
wait_for 'BADTERM-EXITED-1' 20 || fail "a client with an unknown TERM did not exit 1"
scr | grep -q "cannot use terminal type 'no-such-terminal'" || fail "the unknown TERM is not named"
out=$("$AGENTMUX" ls 2>&1)
[ -z "$out" ] || fail "a client with an unknown TERM started a session: $out"
tmux -L "$SOCK" kill-server
sleep 0.5
echo "server: a terminal it cannot draw on starts no session"

# ---- detach with the prefix, the session keeps running ----
start_dashboard
wait_for '1:shell\* (working|needs you)' 30 || fail "no dashboard"
wait_for '[#$] ?$' 20 || fail "no shell prompt"
keys 'echo very-$((2*3))-first; for i in $(seq 1 80); do echo scroll-$i; done; echo marker-$((6*7))' Enter
wait_for '^marker-42$' || fail "the shell did not run"
spid=$(server_pid)
[ -n "$spid" ] && kill -0 "$spid" || fail "no server pid file, or no server"
prefix d
wait_for '^\[detached \(from agentmux, 1 session running\)\]$' ||
	fail "prefix d did not detach with the message"
wait_for 'DASHBOARD-EXITED-0' || fail "the detached client did not exit 0"
kill -0 "$spid" || fail "the server ended on detach"
echo "server: prefix d detaches; the session keeps running"

# ---- reattach from another tmux server: the same pane and its history ----
attach2
wait_for2 '^marker-42$' 20 || fail "the reattached client did not show the pane"
tmux -L "$SOCK2" send-keys -t 0 C-a '['
wait_for2 'q: back' || fail "no copy mode after reattaching"
tmux -L "$SOCK2" send-keys -t 0 '?'
tmux -L "$SOCK2" send-keys -t 0 -l 'very-6-first'
tmux -L "$SOCK2" send-keys -t 0 Enter
wait_for2 '^very-6-first( |$)' || fail "the scrollback did not survive the detach"
tmux -L "$SOCK2" send-keys -t 0 q
echo "server: reattached from a second tmux: the same pane and scrollback"

# ---- the client's terminal resized: the client tells the server (SIGWINCH) ----
tmux -L "$SOCK2" send-keys -t 0 'clear; stty size' Enter
wait_for2 '^[0-9]+ 100$' || fail "the pane is not 100 columns wide in a 100-column client"
tmux -L "$SOCK2" resize-window -t 0 -x 80 -y 24
sleep 0.5
tmux -L "$SOCK2" send-keys -t 0 'clear; stty size' Enter
wait_for2 '^[0-9]+ 80$' || fail "after the client's terminal went to 80 columns the pane did not follow"
echo "server: a resized client terminal resizes the pane (SIGWINCH forwarded)"

# ---- the terminal killed: the session keeps running ----
tmux -L "$SOCK2" kill-server
sleep 0.5
kill -0 "$spid" || fail "the server ended with its client's terminal"
attach2
# (The pane as the resize left it: its 'clear' took marker-42 away, now
# that the session has its own client's TERM, not the server's first.)
wait_for2 '^[0-9]+ 80$' 20 || fail "no pane after the terminal was killed"
tmux -L "$SOCK2" send-keys -t 0 'echo still-$((7*7))' Enter
wait_for2 '^still-49$' || fail "the session did not run after the terminal was killed"
echo "server: a killed terminal detaches; the session keeps running"

# ---- the client SIGKILLed: the same ----
cpid=$(pgrep -f "^$AGENTMUX attach\$")
[ -n "$cpid" ] || fail "no client process"
kill -KILL $cpid
i=0
while kill -0 $cpid 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
kill -0 $cpid 2>/dev/null && fail "the client did not die"
sleep 0.5
kill -0 "$spid" || fail "the server ended with a SIGKILLed client"
attach2
wait_for2 '^still-49$' 20 || fail "no pane after the client was killed"
echo "server: a SIGKILLed client leaves the session running"

# ---- commands over the socket: ls, new -d, send, kill, kill-server ----
out=$("$AGENTMUX" ls) || fail "ls failed: $out"
echo "$out" | grep -Eq "^1: shell .*/proj, (working|needs you), [0-9]*s, 0 requests, 0 denied, 0 prompts waiting$" ||
	fail "ls: $out"
out=$(cd "$P" && "$AGENTMUX" new -d -- sh 2>&1) &&
	fail "new -d in a tree session 1 runs in was not refused: $out"
echo "$out" | grep -q "session 1 is running on .* with --worktree .* --shared" ||
	fail "new -d in a shared tree: $out"
id=$(cd "$P" && "$AGENTMUX" new -d --shared -- sh) || fail "new -d failed: $id"
[ "$id" = 2 ] || fail "new -d printed '$id', not 2"
wait_for2 '2:shell' || fail "the attached client does not show the new session"
tmux -L "$SOCK2" send-keys -t 0 C-a 2
wait_for2 '2:shell\* (working|needs you)' 20 || fail "session 2 did not start"
"$AGENTMUX" send -l 2 'echo sent-$((5*5))' || fail "send -l failed"
"$AGENTMUX" send 2 Enter || fail "send Enter failed"
wait_for2 '^sent-25$' || fail "what send typed did not run in session 2"
"$AGENTMUX" send 2 'sleep 1000' Enter || fail "send with key names failed"
sleep 0.5
"$AGENTMUX" send 2 C-c || fail "send C-c failed"
sleep 0.3
"$AGENTMUX" send 2 'echo after-int' Enter || fail "send after C-c failed"
wait_for2 '^after-int$' || fail "send C-c did not interrupt the sleep"

# ---- wait, pause, resume ----
"$AGENTMUX" send 2 'sleep 2' Enter || fail "send sleep failed"
out=$("$AGENTMUX" wait 2 --for needs-you --timeout 60 2>&1) ||
	fail "wait --for needs-you did not see the shell's prompt: $out"
out=$("$AGENTMUX" wait 2 --for prompt --timeout 1 2>&1) &&
	fail "wait --for prompt returned 0 with no prompt: $out"
echo "$out" | grep -q "did not reach 'prompt' in time" || fail "wait's timeout: $out"
out=$("$AGENTMUX" wait 2 --for nothing 2>&1) && fail "wait --for nothing succeeded"
echo "$out" | grep -q "needs-you, prompt or exit" || fail "wait --for nothing: $out"
"$AGENTMUX" send -l 2 'i=0; while :; do i=$((i+1)); echo $i > count.t; mv count.t count; sleep 0.05; done' &&
	"$AGENTMUX" send 2 Enter || fail "send of the counter failed"
i=0
while [ ! -s "$P/count" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
"$AGENTMUX" pause 2 || fail "pause 2 failed"
"$AGENTMUX" ls --json | python3 -c 'import json, sys; s = [x for x in json.load(sys.stdin) if x["id"] == 2][0]; sys.exit(0 if s["paused"] and s["costs"]["processes"] > 0 else 1)' ||
	fail "ls --json does not say session 2 is paused, with its processes: $("$AGENTMUX" ls --json)"
sleep 0.3
c1=$(cat "$P/count"); sleep 1; c2=$(cat "$P/count")
[ "$c1" = "$c2" ] || fail "the counter went on while paused ($c1 -> $c2)"
[ -n "$c2" ] || fail "the counter file was empty while paused"
"$AGENTMUX" resume 2 || fail "resume 2 failed"
sleep 1; c3=$(cat "$P/count")
[ "$c3" -gt "$c2" ] || fail "the counter did not go on after resume ($c2 -> $c3)"
"$AGENTMUX" send 2 C-c || fail "send C-c to the counter failed"
rm -f "$P/count" "$P/count.t"
echo "server: wait (needs-you, timeout, a bad state), pause and resume"
tmux -L "$SOCK2" send-keys -t 0 C-a R
wait_for2 'the config is reloaded' || fail "prefix R did not reload the config"
echo "server: prefix R reloads the config"
n=$("$AGENTMUX" ls --json | python3 -c 'import json, sys; print(len(json.load(sys.stdin)))')
[ "$n" = 2 ] || fail "ls --json lists $n sessions, not 2"
out=$("$AGENTMUX" kill 9 2>&1) && fail "kill 9 succeeded: $out"
echo "$out" | grep -q "no running session 9 here" || fail "kill 9: $out"
"$AGENTMUX" wait 2 --for exit --timeout 60 >"$T/wait-exit" 2>&1 &
waitpid=$!
sleep 0.3
"$AGENTMUX" kill 2 || fail "kill 2 failed"
wait $waitpid || fail "wait --for exit did not return 0 when kill ended it: $(cat "$T/wait-exit")"
i=0
# (a session closed by kill goes from the list once it ended)
while "$AGENTMUX" ls | grep -q "^2: "; do
	[ $i -lt 100 ] || fail "kill 2 did not end session 2: $("$AGENTMUX" ls)"
	sleep 0.1
	i=$((i + 1))
done
echo "server: ls, new -d, send (text and key names), kill"

# ---- new --worktree: a session of its own branch, out of the user's tree ----
id=$(cd "$P" && "$AGENTMUX" new -d --worktree --branch srv -- sh -c \
	'git rev-parse --abbrev-ref HEAD >branch; pwd >where; echo started; sleep 60') ||
	fail "new -d --worktree failed: $id"
i=0
while ! "$AGENTMUX" ls --json | python3 -c 'import json, sys; [s] = [x for x in json.load(sys.stdin) if x["id"] == '"$id"']; sys.exit(0 if s["state"] != "starting" else 1)' 2>/dev/null; do
	[ $i -lt 200 ] || fail "the worktree session did not start: $("$AGENTMUX" ls)"
	sleep 0.1; i=$((i + 1))
done
wt=$(cd "$P" && git worktree list --porcelain | sed -n 's/^worktree //p' | grep -v "^$P\$" | head -n 1)
[ -n "$wt" ] || fail "new --worktree made no worktree: $(cd "$P" && git worktree list)"
case "$wt" in "$P"/*) fail "the worktree is inside the user's tree: $wt" ;; esac
i=0
while [ ! -s "$wt/branch" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ "$(cat "$wt/branch" 2>/dev/null)" = "agentmux/$id/srv" ] ||
	fail "the worktree session is on '$(cat "$wt/branch" 2>/dev/null)', not agentmux/$id/srv"
[ ! -e "$P/branch" ] || fail "the worktree session wrote into the user's tree"
"$AGENTMUX" ls | grep -q "^$id: shell .* on agentmux/$id/srv, " || fail "ls does not show the branch: $("$AGENTMUX" ls)"
"$AGENTMUX" kill "$id" || fail "kill of the worktree session failed"
echo "server: new --worktree starts a session on a branch of its own, in a worktree outside the tree"

# ---- another user cannot connect (SO_PEERCRED), a bad version is refused ----
D="$XDG_RUNTIME_DIR/agentmux"
hello() { # hello VERSION: the server's answer to a hello of VERSION, as text
	python3 - "$D/default" "$1" <<-'PY'
	import socket, struct, sys
	s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
	s.settimeout(5)
	try:
	    s.connect(sys.argv[1])
	    s.send(struct.pack("=II", int(sys.argv[2]), 1) + b"TERM=dumb\0")
	    m = s.recv(65536)
	    print("closed" if not m else m[12:].decode(errors="replace"))
	except Exception as e:
	    print("error", e)
	PY
}
out=$(hello 99)
echo "$out" | grep -q "protocol 2, the client 99: end the server with 'agentmux kill-server'" ||
	fail "a client of protocol 99 got: $out"
if [ "$(id -u)" = 0 ] && [ -x /usr/bin/python3 ] && command -v useradd >/dev/null 2>&1 &&
	command -v setpriv >/dev/null 2>&1; then
	U="amxv$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')"
	useradd -M -N -d /nonexistent -s /bin/sh "$U" || fail "cannot add a user"
	# The directory is the first wall; opened a crack, the socket is the second.
	out=$(setpriv --reuid="$U" --regid="$(id -g "$U")" --init-groups env -i PATH="$PATH" \
		XDG_RUNTIME_DIR="$XDG_RUNTIME_DIR" TERM=dumb "$AGENTMUX" attach 2>&1 </dev/null)
	echo "$out" | grep -Eq "socket directory .*(Permission denied|not by you)" ||
		{ userdel "$U"; fail "another user got past the socket directory: $out"; }
	chmod 711 "$T" "$XDG_RUNTIME_DIR" "$D"
	chmod 777 "$D/default"
	out=$(setpriv --reuid="$U" --regid="$(id -g "$U")" --init-groups sh -c \
		"/usr/bin/python3 -c '
import socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.settimeout(5)
s.connect(sys.argv[1])
try:
    s.send(struct.pack(\"=II\", 1, 1) + b\"TERM=dumb\\0\")
    print(\"closed\" if not s.recv(65536) else \"answered\")
except (BrokenPipeError, ConnectionResetError):
    print(\"closed\")' '$D/default'" 2>&1)
	chmod 700 "$XDG_RUNTIME_DIR" "$D"
	chmod 755 "$T"
	chmod 755 "$D/default"
	userdel "$U"
	[ "$out" = closed ] || fail "another user's connection was not closed: $out"
	grep -q "refused a connection from uid $(id -u "$U" 2>/dev/null || echo)" \
		"$XDG_STATE_HOME/agentmux/server.log" ||
		grep -q "refused a connection from uid" "$XDG_STATE_HOME/agentmux/server.log" ||
		fail "the refused connection is not in the server's log"
	echo "server: another user is refused (directory, then SO_PEERCRED, logged)"
else
	echo "server: another user: skipped (needs root, useradd and setpriv)"
fi
kill -0 "$spid" || fail "the server ended after refusing connections"

"$AGENTMUX" kill-server || fail "kill-server failed"
wait_for2 'ATTACH-EXITED-0' 15 || fail "kill-server did not let the client go"
i=0
while kill -0 "$spid" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
kill -0 "$spid" 2>/dev/null && fail "kill-server did not end the server"
out=$("$AGENTMUX" ls 2>&1) && fail "ls with no server succeeded: $out"
echo "$out" | grep -q "no server is running" || fail "ls with no server: $out"
echo "server: kill-server ends the sessions, the clients and the server"

# ---- the server SIGKILLed: nothing jailed survives, the session crashed ----
tmux -L "$SOCK2" kill-server
# A new first terminal: the one detached at the start may be gone by now
# (its 'sleep 60' ran out on a slow run, under ASan).
tmux -L "$SOCK" kill-server 2>/dev/null && sleep 0.5
start_dashboard -- sleep 4243
wait_for '[0-9]+:shell\* (starting|working|needs you)' 30 || fail "the session of a new server did not start"
spid=$(server_pid)
i=0
while [ -z "$(sleeping 4243)" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
[ -n "$(sleeping 4243)" ] || fail "no jailed sleep 4243"
kill -KILL "$spid"
wait_for 'DASHBOARD-EXITED-1' || fail "the client did not see its server go"
scr | grep -q "lost the server; its log is $XDG_STATE_HOME/agentmux/server.log" ||
	fail "the client did not say where the log is"
i=0
while [ -n "$(sleeping 4243)" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
[ -z "$(sleeping 4243)" ] || fail "a jailed process outlived the SIGKILLed server"
# (until its parent reaps it, a dead server still looks alive)
i=0
while kill -0 "$spid" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
st=$("$AGENTMUX" sessions --all --json | python3 -c '
import json, sys
print(max(json.load(sys.stdin), key=lambda s: s["id"])["state"])')
[ "$st" = crashed ] || fail "the session of the killed server is '$st', not crashed"
echo "server: SIGKILLed, it takes every jail with it; its sessions crashed"

# ---- no session and no client left: the server ends by itself ----
# The session outlives the new server's 10 s grace: only its end (nothing ticks) can end the server.
(cd "$P" && "$AGENTMUX" new -d --shared -- sh -c 'sleep 12' >/dev/null) || fail "new -d did not start a server"
spid=$(server_pid)
[ -n "$spid" ] && kill -0 "$spid" || fail "no server for the detached session"
i=0
while kill -0 "$spid" 2>/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
kill -0 "$spid" 2>/dev/null && fail "the server stayed after its last session ended, with no client"
echo "server: it ends by itself once its last session ends with no client attached"

# ---- a socket directory with the wrong mode or owner is refused ----
rm -f "$D/default" "$D/default.pid"
chmod 755 "$D"
out=$("$AGENTMUX" attach 2>&1 </dev/null)
echo "$out" | grep -q "refusing the server's socket directory: $D has mode 0755" ||
	fail "a 0755 socket dir was used: $out"
chmod 700 "$D"
if [ "$(id -u)" = 0 ]; then
	chown 1:1 "$D"
	out=$("$AGENTMUX" attach 2>&1 </dev/null)
	echo "$out" | grep -q "$D is owned by uid 1, not by you" ||
		fail "a socket dir of uid 1 was used: $out"
	chown 0:0 "$D"
fi
rmdir "$D" 2>/dev/null || rm -rf "$D"
ln -s "$T" "$D"
out=$("$AGENTMUX" attach 2>&1 </dev/null)
echo "$out" | grep -q "is not a directory (or is a symlink)" ||
	fail "a symlinked socket dir was used: $out"
rm "$D"
echo "server: a socket dir with another mode, owner, or a symlink is refused"

echo "1 passed, 0 failed"
