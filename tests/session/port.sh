#!/usr/bin/env bash
# agentmux port (issue 18, each session's dev server), real jails and real sockets: a python http.server
# inside a session's jail, on the jail's own 127.0.0.1, is reached from the host with curl through
# `agentmux port`, on the session's own loopback address (127.77.ID.1, not 127.0.0.1) whose URL it prints;
# ls and ls --json list the forward; a second forward of the same host port and a
# non-loopback address not named with --host are refused clearly; a big file and parallel clients come
# through whole; from inside the jail neither the forward's host port nor a host listener on loopback
# is reachable while the forward is up; `port -d` and the session's end take the forward away. As root
# and as a throwaway user (whose server is no root: it reaches the jail through the user namespace it owns).
set -u
AMX=${AGENTMUX:?AGENTMUX must name the binary}
for t in python3 curl sha256sum; do
	command -v "$t" >/dev/null || { echo "SKIP: $t is missing"; exit 77; }
done

T=$(mktemp -d /tmp/amx-port.XXXXXX)
chmod 755 "$T"
U=
hostpid=
cleanup() {
	[ -n "$hostpid" ] && kill "$hostpid" 2>/dev/null && wait "$hostpid" 2>/dev/null
	for d in "$T"/root "$T"/user; do
		[ -f "$d/run/agentmux/default.pid" ] && kill "$(cat "$d/run/agentmux/default.pid")" 2>/dev/null
	done
	[ -n "$U" ] && userdel "$U" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fails=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

freeport() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# A listener on the host's loopback that nothing in a jail may reach.
HOSTP=$(freeport)
python3 -c '
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(16)
while True:
    c, _ = s.accept(); c.sendall(b"HOST-SECRET\n"); c.close()
' "$HOSTP" &
hostpid=$!

# What the jail tries while the forward is up: every port it might use to get out.
cat >"$T/probe.py" <<'EOF'
import socket, sys
for port in sys.argv[1:]:
    s = socket.socket()
    s.settimeout(2)
    try:
        s.connect(("127.0.0.1", int(port)))
        print(port, "open", s.recv(64))
    except OSError as e:
        print(port, "closed", e.errno)
    s.close()
EOF

# flow WHO DIR: the whole story, with `amx` running agentmux as WHO.
flow() {
	local who=$1 D=$2 P=$2/proj id A JP HP HP2 out rc i pids
	JP=$(freeport)
	HP=$(freeport)
	HP2=$(freeport)
	[ "$JP" = "$HP" ] && HP=$(freeport)
	echo "hello from the jail" >"$P/index.txt"
	head -c 4194304 /dev/urandom >"$P/big.bin"
	cp "$T/probe.py" "$P/probe.py"
	[ "$who" = user ] && chown -R "$U" "$P"

	id=$(cd "$P" && amx new -d -- sh -c "python3 -m http.server $JP --bind 127.0.0.1 >server.log 2>&1 &
		while [ ! -e go ]; do sleep 0.2; done
		python3 probe.py $HP $HOSTP >probe.out 2>&1; touch probed; sleep 600" 2>"$D/new.err")
	[ -n "$id" ] || { bad "$who: the session did not start: $(cat "$D/new.err")"; return; }
	for i in $(seq 50); do grep -q "Serving HTTP" "$P/server.log" 2>/dev/null && break; sleep 0.2; done

	# The session's own loopback address: its pages get no cookies of 127.0.0.1's or another session's.
	A=127.$((77 + id / 256)).$((id % 256)).1
	out=$(amx port "$id" "$JP" "$HP" 2>&1) && ok "$who: port $id $JP $HP: $out" ||
		bad "$who: the forward was refused: $out"
	grep -q "^http://$A:$HP/ -> session $id's port $JP" <<<"$out" &&
		grep -q "run in your browser with this host's network" <<<"$out" &&
		grep -q "any local user can connect" <<<"$out" &&
		ok "$who: the URL is the session's own address, and the warnings are given" ||
		bad "$who: the forward's message lacks http://$A:$HP/ or its warnings: $out"
	curl -s -m 5 "http://127.0.0.1:$HP/index.txt" >/dev/null
	[ $? = 7 ] && ok "$who: nothing listens on 127.0.0.1:$HP" || bad "$who: the forward listens on 127.0.0.1 too"
	out=$(curl -s -m 10 "http://$A:$HP/index.txt")
	[ "$out" = "hello from the jail" ] && ok "$who: curl on the host got the file from the jail's server" ||
		{ bad "$who: curl through the forward got '$out'"; find "$D" -name '*.log' | xargs tail -n 5; }
	out=$(curl -s -m 30 "http://$A:$HP/big.bin" | sha256sum)
	[ "${out%% *}" = "$(sha256sum <"$P/big.bin" | cut -d' ' -f1)" ] &&
		ok "$who: 4 MiB came through whole" || bad "$who: the big file came through damaged"
	pids=
	for i in 1 2 3 4 5 6; do
		curl -s -m 20 -o "$D/par$i" "http://$A:$HP/index.txt" &
		pids="$pids $!"
	done
	wait $pids
	for i in 1 2 3 4 5 6; do
		[ "$(cat "$D/par$i" 2>/dev/null)" = "hello from the jail" ] || { bad "$who: parallel client $i got nothing"; break; }
	done
	[ "$i" = 6 ] && ok "$who: six parallel clients each got the file"

	out=$(amx ls)
	grep -q "^$id: .*ports $A:$HP->$JP" <<<"$out" && ok "$who: ls lists the forward" ||
		bad "$who: ls does not list the forward: $out"
	out=$(amx ls --json | python3 -c 'import json,sys
for s in json.load(sys.stdin):
    for p in s.get("ports", []):
        print(s["id"], p["host"], p["host_port"], p["jail_port"])')
	[ "$out" = "$id $A $HP $JP" ] && ok "$who: ls --json lists the forward" ||
		bad "$who: ls --json says '$out'"

	out=$(amx port "$id" "$JP" "$HP" 2>&1)
	rc=$?
	[ $rc -ne 0 ] && grep -q "already forwarded to session $id's port $JP" <<<"$out" &&
		ok "$who: a second forward of the same host port is refused: $out" ||
		bad "$who: a second forward of host port $HP: rc $rc, '$out'"
	out=$(amx port "$id" "$JP" "0.0.0.0:$HP2" 2>&1)
	rc=$?
	[ $rc -ne 0 ] && grep -q "not a loopback address.*--host 0.0.0.0" <<<"$out" &&
		ok "$who: a non-loopback address not named with --host is refused: $out" ||
		bad "$who: 0.0.0.0 without --host: rc $rc, '$out'"
	out=$(amx port "$id" 3128 "$HP2" 2>&1) && bad "$who: the jail's proxy listener was forwarded: $out" ||
		ok "$who: the jail's proxy listener is not forwarded: $out"
	ss -ltn 2>/dev/null | grep -q "0.0.0.0:$HP2 " && bad "$who: something listens on 0.0.0.0:$HP2 after the refusal"
	out=$(amx port --host 127.0.0.2 "$id" "$JP" "$HP2" 2>&1) &&
		[ "$(curl -s -m 10 "http://127.0.0.2:$HP2/index.txt")" = "hello from the jail" ] &&
		ok "$who: an address named with --host is used: $out" || bad "$who: --host 127.0.0.2: '$out'"

	# From inside the jail: the forward's host port and the host's loopback listener stay out of reach.
	touch "$P/go"
	for i in $(seq 50); do [ -e "$P/probed" ] && break; sleep 0.2; done
	out=$(cat "$P/probe.out" 2>/dev/null)
	if grep -q "^$HP closed" <<<"$out" && grep -q "^$HOSTP closed" <<<"$out" && ! grep -q open <<<"$out"; then
		ok "$who: from inside the jail nothing new is reachable: $(tr '\n' ';' <<<"$out")"
	else
		bad "$who: the jail reached out while the forward was up: $out"
	fi

	out=$(amx port -d "$id" "$JP" 2>&1) && ok "$who: $out" || bad "$who: port -d failed: $out"
	curl -s -m 5 "http://$A:$HP/index.txt" >/dev/null
	[ $? = 7 ] && ok "$who: after port -d curl fails (nothing listens)" || bad "$who: host port $HP still answers after port -d"
	grep -q "ports" <<<"$(amx ls)" && bad "$who: ls still lists a forward after port -d"
	out=$(amx port -d "$id" "$JP" 2>&1) && bad "$who: a second port -d succeeded" ||
		ok "$who: removing what is not there says so: $out"

	# The session's end takes its forwards with it, and frees the host port.
	amx port "$id" "$JP" "$HP" >/dev/null 2>&1 || bad "$who: the forward could not be made again"
	amx kill "$id" >/dev/null 2>&1
	amx wait --timeout 20 "$id" >/dev/null 2>&1
	# 7: nothing listens (an accepted connection that the jail refuses is another code).
	for i in $(seq 50); do curl -s -m 2 "http://$A:$HP/" >/dev/null; [ $? = 7 ] && break; sleep 0.2; done
	curl -s -m 2 "http://$A:$HP/" >/dev/null
	[ $? = 7 ] && ok "$who: the session's end removed its forward" || bad "$who: the forward outlived its session"
	python3 -c 'import socket,sys; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[2], int(sys.argv[1]))); s.listen(1)' "$HP" "$A" 2>/dev/null &&
		ok "$who: the host port is free again" || bad "$who: host port $HP still taken after the session ended"
	amx kill-server >/dev/null 2>&1
}

# As root (the user who runs the tests).
R=$T/root
mkdir -p "$R/config/agentmux" "$R/data" "$R/run" "$R/state" "$R/proj"
chmod 700 "$R/run"
amx() {
	XDG_CONFIG_HOME=$R/config XDG_DATA_HOME=$R/data XDG_RUNTIME_DIR=$R/run XDG_STATE_HOME=$R/state \
		"$AMX" "$@"
}
flow "$(id -un)" "$R"

# As a throwaway user: the server is not root, and must still reach into the jail it made.
if [ "$(id -u)" = 0 ] && command -v useradd >/dev/null && command -v setpriv >/dev/null; then
	U=amxport$$
	W=$T/user
	if useradd -M -d "$W/home" -s /bin/sh -p '*' "$U"; then
		mkdir -p "$W/bin" "$W/config/agentmux" "$W/data" "$W/run" "$W/state" "$W/home" "$W/proj"
		cp "$AMX" "$W/bin/agentmux"
		# (and the whole program it runs, beside it)
		cp "${AMX%/*}/agentmux-full" "$W/bin/agentmux-full"
		cp -r "${AGENTMUX_SHARE:?}" "$W/share"
		chmod 700 "$W/run"
		chown -R "$U:$(id -g "$U")" "$W"
		chmod -R a+rX "$W/bin" "$W/share"
		amx() {
			setpriv --reuid="$U" --regid="$(id -g "$U")" --init-groups env -i PATH="$PATH" \
				HOME="$W/home" XDG_CONFIG_HOME="$W/config" XDG_DATA_HOME="$W/data" \
				XDG_RUNTIME_DIR="$W/run" XDG_STATE_HOME="$W/state" AGENTMUX_SHARE="$W/share" \
				"$W/bin/agentmux" "$@"
		}
		flow user "$W"
	else
		U=
		echo "note: useradd failed; the ordinary-user half did not run"
	fi
else
	echo "note: not root, or no useradd/setpriv: the throwaway-user half did not run"
fi

[ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "all ok"
