#!/usr/bin/env bash
# Faults with real jails: agentmux killed (SIGKILL) while its command writes
# files and makes requests; an upstream that hangs up in the middle of a
# response; the disk holding the data dir filling up while requests are
# recorded; a command that crashes. Exit 77 (skip) with the reason when
# jails cannot start here.
set -u
AMX=${AGENTMUX:?AGENTMUX must name the binary}
SRC=${AGENTMUX_SRC:?AGENTMUX_SRC must name the source tree}
for t in python3 curl sqlite3 git; do
	command -v $t >/dev/null || { echo "SKIP: $t is missing"; exit 77; }
done

# The disk-full part runs in a mount namespace of its own, with a small
# tmpfs as the data dir (see disk_full).
if [ "${1:-}" = --disk-full ]; then
	IN_NS=1
fi

T=${FAULTS_T:-$(mktemp -d /tmp/amx-faults.XXXXXX)}
chmod 755 "$T"
export XDG_CONFIG_HOME=$T/config XDG_DATA_HOME=$T/data XDG_RUNTIME_DIR=$T/run XDG_STATE_HOME=$T/state
mkdir -p "$XDG_CONFIG_HOME/agentmux" "$XDG_DATA_HOME" "$XDG_RUNTIME_DIR" "$T/up"
chmod 700 "$XDG_RUNTIME_DIR"
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	[ -n "${IN_NS:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
has() { grep -q -- "$2" <<<"$1"; }
db() { sqlite3 "$XDG_DATA_HOME/agentmux/agentmux.db" "$@"; }

upstream() {
	UPSTREAM_LIFETIME=600 python3 "$SRC/tests/proxy/upstream.py" "$T/up" </dev/null >"$T/up.log" 2>&1 &
	PIDS+=($!)
	for _ in $(seq 100); do [ -s "$T/up/ports" ] && break; sleep 0.1; done
	read -r HP PP _ <"$T/up/ports" || { echo "FAIL: the test upstream did not start"; exit 1; }
}

project() {
	P=$T/proj
	rm -rf "$P"
	mkdir -p "$P" && (cd "$P" && git init -q && echo one >a && echo keep >u &&
		git add a && git -c user.email=f@f -c user.name=f commit -qm a) || exit 1
}

# ---- SIGKILL of agentmux while the command writes files and makes requests ----
kill9() {
	local mark apid st left
	mark="9$$$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')"
	(cd "$P" && exec setsid "$AMX" run --allow "127.0.0.1:$PP" -- sh -c "
		echo two >a; rm u; i=0
		while :; do i=\$((i+1)); echo \$i >>log; echo \$i >n.\$((i % 50))
			curl -s -o /dev/null http://127.0.0.1:$PP/k\$i; [ \$i = 20 ] && echo ready >ready
		done & sleep $mark & sleep $mark") </dev/null >"$T/k9.out" 2>&1 &
	apid=$!
	for _ in $(seq 300); do [ -e "$P/ready" ] && break; sleep 0.05; done
	[ -e "$P/ready" ] || { bad "kill -9: the command never got going: $(cat "$T/k9.out")"; return; }
	sleep 0.3
	kill -KILL "$apid"
	wait "$apid" 2>/dev/null
	for _ in $(seq 100); do pgrep -f "^sleep $mark\$" >/dev/null || break; sleep 0.05; done
	left=$(pgrep -f "^sleep $mark\$" | wc -l)
	[ "$left" = 0 ] && ok "kill -9: no jailed process survives" ||
		{ bad "kill -9: $left jailed processes survived"; kill -KILL $(pgrep -f "^sleep $mark\$"); }
	st=$(db 'pragma integrity_check')
	[ "$st" = ok ] && ok "kill -9: the database passes integrity_check" || bad "kill -9: integrity_check: $st"
	# The next agentmux to start marks the session crashed.
	st=$("$AMX" sessions --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["state"])')
	[ "$st" = crashed ] && ok "kill -9: the session is marked crashed" || bad "kill -9: the session is '$st'"
	n=$(db "select count(*) from requests where path like '/k%'")
	[ "$n" -gt 0 ] && ok "kill -9: $n requests were recorded before it" || bad "kill -9: no requests recorded"
	own=$(ls -d "$XDG_DATA_HOME"/agentmux/shadow/*/ | head -n 1)
	(export GIT_DIR="$own"; git rev-list --objects "refs/agentmux/sessions/$(db 'select max(id) from sessions')" |
		cut -d' ' -f1 | git cat-file --batch-check | grep -q missing) &&
		bad "kill -9: the snapshots lack objects" || ok "kill -9: the snapshots are whole"
	out=$("$AMX" undo last 2>&1)
	[ "$(cat "$P/a")" = one ] && [ "$(cat "$P/u")" = keep ] && [ ! -e "$P/log" ] &&
		ok "kill -9: undo puts the tree back" || bad "kill -9: undo: $out"
}

# ---- an upstream that hangs up in the middle of a response ----
upstream_cut() {
	local out rec
	out=$(cd "$P" && "$AMX" run --allow "127.0.0.1:$PP" -- sh -c \
		"curl -sS -o /dev/null http://127.0.0.1:$PP/cut?size=200000; echo curl=\$?" </dev/null 2>&1)
	has "$out" "curl=18" && ok "cut: the client sees a clean error (curl 18, a short transfer)" ||
		bad "cut: the client saw: $out"
	rec=$(db "select status || '|' || coalesce(error, '') from requests where path like '/cut%' order by id desc limit 1")
	case $rec in
	200\|*"closed the connection in the middle of the response"*) ok "cut: recorded with the error: $rec" ;;
	*) bad "cut: the record: '$rec'" ;;
	esac
}

# ---- a command that crashes ----
crashes() {
	(cd "$P" && "$AMX" run -- sh -c 'kill -SEGV $$') </dev/null >/dev/null 2>&1
	st=$?
	[ "$st" = 139 ] && ok "a crashing command: exit 139" || bad "a crashing command: exit $st"
	st=$("$AMX" sessions --json | python3 -c 'import json,sys; s=json.load(sys.stdin)[0]; print(s["state"], s["exit_status"])')
	[ "$st" = "exited 139" ] && ok "a crashing command is recorded as such" || bad "a crash recorded as '$st'"
}

# ---- the disk with the data dir fills up while requests are recorded ----
# Inside its own mount namespace: a 16 MiB tmpfs is the data dir, filled
# but for a little, while the command makes requests with 8 KiB headers.
# agentmux must say so and keep the jail and the proxy working; once
# there is room again, what was kept in memory is written; nothing is
# corrupted.
disk_full_in_ns() {
	local hdr apid i out n
	mount -t tmpfs -o size=16m tmpfs "$XDG_DATA_HOME" || { echo "SKIP: cannot mount a tmpfs"; exit 77; }
	# Filled on purpose: no reserve of free space kept ([limits] disk_reserve).
	printf '[limits]\ndisk_reserve = 0\n' >"$XDG_CONFIG_HOME/agentmux/config"
	hdr=$(head -c 6000 /dev/zero | tr '\0' 'h')
	(cd "$P" && "$AMX" run --allow "127.0.0.1:$PP" -- true) </dev/null >/dev/null 2>&1
	fallocate -l $(( $(df --output=avail -B1 "$XDG_DATA_HOME" | tail -n 1) - 300 * 1024 )) "$XDG_DATA_HOME/filler" ||
		{ echo "SKIP: fallocate on tmpfs failed"; exit 77; }
	(cd "$P" && exec "$AMX" run --allow "127.0.0.1:$PP" -- sh -c "
		i=0; ok=0
		while [ \$i -lt 300 ]; do i=\$((i+1))
			[ \$i = 150 ] && while [ ! -e go ]; do sleep 0.1; done
			curl -s -o /dev/null -w '%{http_code}\n' -H 'X-Big: $hdr' http://127.0.0.1:$PP/full\$i | grep -q 200 && ok=\$((ok+1))
		done; echo \"served \$ok of \$i\"") </dev/null >"$T/full.out" 2>"$T/full.err" &
	apid=$!
	for _ in $(seq 600); do grep -q "is full" "$T/full.err" && break; sleep 0.1; done
	grep -q "is full" "$T/full.err" && ok "disk full: agentmux says so: $(grep -m1 'is full' "$T/full.err")" ||
		bad "disk full: nothing said (stderr: $(tail -c 300 "$T/full.err"))"
	rm -f "$XDG_DATA_HOME/filler"
	touch "$P/go"
	wait "$apid"
	out=$(cat "$T/full.out")
	has "$out" "served 300 of 300" && ok "disk full: the jail and the proxy kept working ($out)" ||
		bad "disk full: $out $(tail -c 300 "$T/full.err")"
	grep -q "writable again" "$T/full.err" && ok "disk full: agentmux says when it can write again" ||
		bad "disk full: no word that it recovered"
	[ "$(db 'pragma integrity_check')" = ok ] && ok "disk full: integrity_check ok" ||
		bad "disk full: integrity_check: $(db 'pragma integrity_check')"
	n=$(db "select count(*) from requests where path like '/full%'")
	[ "$n" = 300 ] && ok "disk full: every request was recorded once there was room" ||
		bad "disk full: $n of 300 requests recorded"
	st=$("$AMX" sessions --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["state"])')
	[ "$st" = exited ] && ok "disk full: the session ended normally" || bad "disk full: the session is '$st'"
}

disk_full() {
	if [ "$(id -u)" != 0 ] || ! command -v unshare >/dev/null || ! command -v fallocate >/dev/null; then
		echo "skip: the disk-full check needs root, unshare and fallocate"
		return
	fi
	# A fresh data dir for it: the tmpfs hides what is there.
	FAULTS_T=$T HP=$HP PP=$PP P=$P unshare -m --propagation private "$BASH" "$0" --disk-full
	case $? in
	0) ok "disk full: all of it" ;;
	77) echo "skip: the disk-full check could not run here" ;;
	*) bad "disk full" ;;
	esac
}

if [ -n "${IN_NS:-}" ]; then
	disk_full_in_ns
	exit $((fails > 0))
fi

project
if ! (cd "$P" && timeout 30 "$AMX" run -- true) >"$T/jail.err" 2>&1; then
	echo "SKIP: jails cannot start here: $(tail -n 1 "$T/jail.err")"
	exit 77
fi
upstream
kill9
upstream_cut
crashes
project
disk_full
[ $fails = 0 ] && { echo "all passed"; exit 0; }
echo "$fails failed"
exit 1
