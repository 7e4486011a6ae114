#!/bin/sh
# agentmux run end to end: statuses and signals, pipes and the pty, the
# environment, overlays and binds, refusals, records, and no survivors
# after SIGKILL; as root and as an unprivileged user made for the test.
set -u
. "$(dirname "$0")/lib.sh"

expect() {
	name=$1 want=$2
	shift 2
	jrun "$@"
	if [ "$RC" = "$want" ]; then ok; else bad "$name: exit $RC, expected $want: $OUT"; fi
}

# A usage error: exit 2 and one line naming the problem.
refused() {
	name=$1 needle=$2
	shift 2
	out=$("$AMX" run "$@" </dev/null 2>&1)
	rc=$?
	lines=$(printf '%s\n' "$out" | wc -l)
	case $out in
	*"$needle"*) [ "$rc" = 2 ] && [ "$lines" = 1 ] && ok ||
	    bad "$name: exit $rc, $lines lines: $out" ;;
	*) bad "$name: '$out' lacks '$needle'" ;;
	esac
}

statuses() {
	expect "true" 0 -- true
	expect "exit 7" 7 -- sh -c 'exit 7'
	expect "killed by SIGKILL" 137 -- sh -c 'kill -KILL $$'
	expect "killed by SIGTERM" 143 -- sh -c 'kill -TERM $$'
	jrun -- no-such-command-here
	case "$RC:$OUT" in
	"1:agentmux: 'no-such-command-here' is not on your PATH"*) ok ;;
	*) bad "a missing command: exit $RC: $OUT" ;;
	esac
	printf '#!/no/such/interpreter\n' >"$P/bad.sh"
	chmod 755 "$P/bad.sh"
	jrun -- ./bad.sh
	case "$RC:$OUT" in
	"1:agentmux: cannot run ./bad.sh in the jail: No such file or directory") ok ;;
	*) bad "an exec failing inside: exit $RC: $OUT" ;;
	esac
}

# SIGTERM to agentmux reaches the command (its trap runs) and its status comes back.
forwarded() {
	"$AMX" run -C "$P" -- sh -c 'trap "exit 42" TERM; echo ready;
	    while :; do sleep 0.05; done' </dev/null >"$T/fw.out" 2>&1 &
	apid=$!
	for _ in $(seq 200); do grep -q ready "$T/fw.out" && break; sleep 0.05; done
	kill -TERM "$apid"
	wait "$apid"
	rc=$?
	[ "$rc" = 42 ] && ok || bad "SIGTERM to agentmux: exit $rc, expected 42"
}

# A command that ignores SIGTERM is killed after the grace period (5 s).
grace() {
	"$AMX" run -C "$P" -- sh -c 'trap "" TERM; echo ready; sleep 60' \
	    </dev/null >"$T/gr.out" 2>&1 &
	apid=$!
	for _ in $(seq 200); do grep -q ready "$T/gr.out" && break; sleep 0.05; done
	kill -TERM "$apid"
	wait "$apid"
	rc=$?
	[ "$rc" = 137 ] && ok || bad "SIGTERM ignored: exit $rc, expected 137 after the grace period"
}

# A hang-up of agentmux run's terminal hangs the command up too (a shell that
# ignores SIGTERM ends at once), and the session is recorded closed.
hangup() {
	"$AMX" run -C "$P" -- sh -c 'trap "" TERM; echo ready; sleep 60' \
	    </dev/null >"$T/hu.out" 2>&1 &
	apid=$!
	for _ in $(seq 200); do grep -q ready "$T/hu.out" && break; sleep 0.05; done
	kill -HUP "$apid"
	wait "$apid"
	rc=$?
	st=$("$AMX" sessions --json | python3 -c '
import json, sys
s = json.load(sys.stdin)[0]
print(s["state"], s["exit_status"])')
	[ "$rc" = 129 ] && [ "$st" = "closed 129" ] && ok ||
	    bad "SIGHUP to agentmux run: exit $rc, recorded '$st'; expected 129, closed 129"
}

# SIGKILL of agentmux takes the whole jail down (PR_SET_PDEATHSIG on pid 1).
no_survivors() {
	mark="9$$$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')"
	"$AMX" run -C "$P" -- sh -c "sleep $mark & sleep $mark & echo ready; wait" \
	    </dev/null >"$T/k9.out" 2>&1 &
	apid=$!
	for _ in $(seq 200); do grep -q ready "$T/k9.out" && break; sleep 0.05; done
	pgrep -f "^sleep $mark\$" >/dev/null && ok || bad "the jailed sleeps never started"
	kill -KILL "$apid"
	wait "$apid" 2>/dev/null
	for _ in $(seq 100); do pgrep -f "^sleep $mark\$" >/dev/null || break; sleep 0.05; done
	if pgrep -f "^sleep $mark\$" >/dev/null; then
		bad "jailed processes survived SIGKILL of agentmux"
		pkill -KILL -f "^sleep $mark\$"
	else
		ok
	fi
}

pipes() {
	out=$(printf 'one\ntwo\n' | "$AMX" run -C "$P" -- cat 2>&1)
	[ "$out" = "$(printf 'one\ntwo')" ] && ok || bad "stdin through a pipe: $out"
	head -c 1048576 /dev/urandom >"$T/big.in"
	"$AMX" run -C "$P" -- cat <"$T/big.in" >"$T/big.out" 2>"$T/big.err"
	cmp -s "$T/big.in" "$T/big.out" && ok || bad "1 MiB from a file did not come back whole"
	expect "stdin at /dev/null ends" 0 -- cat
	"$AMX" run -C "$P" -- sh -c 'echo out; echo err >&2' >"$T/o" 2>"$T/e" </dev/null
	[ "$(cat "$T/o")" = out ] && [ "$(cat "$T/e")" = err ] && ok ||
	    bad "stdout and stderr were mixed: $(cat "$T/o" "$T/e")"
}

pty() {
	command -v script >/dev/null || { echo "SKIP: pty checks need script(1)"; return; }
	stty_cmd="stty -g"
	script -eqc "$AMX run -C $P -- sh -c 'tty; stty size; exit 3'" /dev/null \
	    </dev/null >"$T/pty.out" 2>&1
	rc=$?
	[ "$rc" = 3 ] && ok || bad "status through the pty: $rc"
	grep -q '/dev/pts/0' "$T/pty.out" && ok || bad "no pty of its own: $(cat "$T/pty.out")"
	script -eqc "$stty_cmd >$T/before; $AMX run -C $P -- true; $stty_cmd >$T/after" \
	    /dev/null </dev/null >/dev/null 2>&1
	cmp -s "$T/before" "$T/after" && ok || bad "the terminal was not restored"
}

environment() {
	out=$(env SECRET_TOKEN=hunter2 LANG=C.UTF-8 LC_ALL=C "$AMX" run -C "$P" -- env </dev/null)
	case $out in *hunter2*) bad "a caller's variable got in" ;; *) ok ;; esac
	case $out in *LANG=C.UTF-8*) ok ;; *) bad "LANG was not passed: $out" ;; esac
	case $out in *LC_ALL=C*) ok ;; *) bad "LC_ALL was not passed" ;; esac
	case $out in *HTTPS_PROXY=http://127.0.0.1:*) ok ;; *) bad "no HTTPS_PROXY" ;; esac
	case $out in *"HOME=$HOME"*) ok ;; *) bad "HOME is not the user's" ;; esac
	# Only the way to the project (which lies under HOME here) is in it.
	expect "HOME is empty inside" 0 -- sh -c 'test "$(ls -A "$HOME")" = src'
	expect "the planted secrets are absent" 0 -- sh -c \
	    'test ! -e ~/.ssh && test ! -e ~/.aws && test ! -e ~/.bashrc'
	expect "the cwd is the project" 0 -- sh -c "test \"\$(pwd)\" = '$P'"
	mkdir -p "$P/sub/dir"
	out=$("$AMX" run -C "$P/sub/dir" -- pwd </dev/null 2>&1)
	[ "$out" = "$P/sub/dir" ] && ok || bad "-C a subdir: cwd $out"
}

# A command installed under the hidden HOME still runs: its dir is bound in.
binds() {
	mkdir -p "$HOME/.local/bin"
	cat >"$HOME/.local/bin/mytool" <<-'TOOL'
	#!/bin/sh
	echo mytool-ran
	(: >"$0") 2>/dev/null && echo writable || echo read-only
	TOOL
	chmod 755 "$HOME/.local/bin/mytool"
	out=$(PATH="$HOME/.local/bin:$PATH" "$AMX" run -C "$P" -- mytool </dev/null 2>&1)
	[ "$out" = "$(printf 'mytool-ran\nread-only')" ] && ok ||
	    bad "a command under HOME: $out"
	# /var/tmp is a link to /tmp in the jail, unless something lives there.
	vt=$(mktemp -d /var/tmp/amx-jail-vt.XXXXXX)
	mkdir "$vt/bin"
	cat >"$vt/bin/vttool" <<-TOOL
	#!/bin/sh
	echo vttool-ran
	echo x >/var/tmp/scratch-$$ && cat /var/tmp/scratch-$$
	TOOL
	chmod -R a+rX "$vt" && chmod 755 "$vt/bin/vttool"
	out=$(PATH="$vt/bin:$PATH" "$AMX" run -C "$P" -- vttool </dev/null 2>&1)
	[ "$out" = "$(printf 'vttool-ran\nx')" ] && [ ! -e /var/tmp/scratch-$$ ] &&
	    ok || bad "a command under /var/tmp: $out"
	rm -rf "$vt"
}

# config_dir entries: overlays whose changes stay in the session's dir.
overlays() {
	mkdir -p "$HOME/.tagent"
	echo host >"$HOME/.tagent/keep"
	echo '{"host":1}' >"$HOME/.tagent.json"
	cat >>"$XDG_CONFIG_HOME/agentmux/config" <<-CONF
	[agent tagent]
	command = sh
	config_dir = ~/.tagent
	config_dir = ~/.tagent.json
	config_dir = ~/.tnew
	CONF
	jrun -a tagent -- sh -c 'cat ~/.tagent/keep && echo agent > ~/.tagent/new &&
	    echo changed > ~/.tagent/keep && echo "{}" > ~/.tagent.json &&
	    mkdir -p ~/.tnew && echo n > ~/.tnew/f'
	[ "$RC" = 0 ] && ok || bad "writing the overlays: $OUT"
	case $OUT in host) ok ;; *) bad "the lower layer was not shown: $OUT" ;; esac
	[ "$(cat "$HOME/.tagent/keep")" = host ] && [ ! -e "$HOME/.tagent/new" ] &&
	    [ "$(cat "$HOME/.tagent.json")" = '{"host":1}' ] && [ ! -e "$HOME/.tnew" ] &&
	    ok || bad "an overlay wrote through to the host"
	id=$("$AMX" sessions --json | sed -n 's/^ *"id": \([0-9]*\),.*/\1/p' | head -n 1)
	sd="$XDG_DATA_HOME/agentmux/sessions/$id"
	[ "$(cat "$sd/overlay/0/upper/new" 2>/dev/null)" = agent ] &&
	    [ "$(cat "$sd/overlay/0/upper/keep" 2>/dev/null)" = changed ] &&
	    [ "$(cat "$sd/overlay/1/file" 2>/dev/null)" = '{}' ] &&
	    [ "$(cat "$sd/overlay/2/upper/f" 2>/dev/null)" = n ] &&
	    ok || bad "the session dir lacks the changes: $(find "$sd" | head -20)"
	printf '0\tdir\t%s/.tagent\n1\tfile\t%s/.tagent.json\n2\tdir\t%s/.tnew\n' \
	    "$HOME" "$HOME" "$HOME" >"$T/manifest"
	cmp -s "$T/manifest" "$sd/overlays" && ok || bad "manifest: $(cat "$sd/overlays")"
	volatile_overlays
	file_entries
}

# Every overlay is volatile: its unmount at the jail's end does not sync
# the whole file system of its upper dir (which waited for all of the
# disk's dirty data): the two config dirs, and .git/objects if any.
volatile_overlays() {
	jrun -a tagent -- sh -c 'grep -c " overlay .*fsync=volatile" /proc/self/mountinfo;
	    grep -c " overlay " /proc/self/mountinfo'
	set -- $OUT
	[ "$RC" = 0 ] && [ "$#" = 2 ] && [ "$1" = "$2" ] && [ "$1" -ge 2 ] && ok ||
	    bad "overlays not volatile (volatile, all): $OUT"
}

# A file entry is a plain file in the jail's HOME: saving by rename works,
# a missing one can be created, and a removed one is kept as a deletion.
file_entries() {
	cat >>"$XDG_CONFIG_HOME/agentmux/config" <<-CONF
	[agent tfile]
	command = sh
	config_dir = ~/.tagent.json
	config_dir = ~/.tmissing.json
	config_dir = ~/.config/tdeep/settings.json
	CONF
	jrun -a tfile -- sh -c 'cat ~/.tagent.json &&
	    echo "{\"saved\":1}" >~/.tagent.json.tmp && mv ~/.tagent.json.tmp ~/.tagent.json &&
	    echo made >~/.tmissing.json && mkdir -p ~/.config/tdeep &&
	    echo deep >~/.config/tdeep/settings.json'
	[ "$RC" = 0 ] && [ "$OUT" = '{"host":1}' ] && ok || bad "file entries in the jail: $RC $OUT"
	id=$("$AMX" sessions --json | sed -n 's/^ *"id": \([0-9]*\),.*/\1/p' | head -n 1)
	sd="$XDG_DATA_HOME/agentmux/sessions/$id"
	[ "$(cat "$sd/overlay/0/file" 2>/dev/null)" = '{"saved":1}' ] &&
	    [ "$(cat "$sd/overlay/1/file" 2>/dev/null)" = made ] &&
	    [ "$(cat "$sd/overlay/2/file" 2>/dev/null)" = deep ] &&
	    [ "$(cat "$HOME/.tagent.json")" = '{"host":1}' ] && [ ! -e "$HOME/.tmissing.json" ] &&
	    ok || bad "file entries were not captured: $(find "$sd" -type f | head)"
	"$AMX" confdiff "$id" --apply "$HOME/.tmissing.json" >/dev/null 2>&1
	[ "$(cat "$HOME/.tmissing.json" 2>/dev/null)" = made ] && ok ||
	    bad "a new file entry was not applied"
	jrun -a tfile -- sh -c 'rm ~/.tagent.json && ln -sf /etc/passwd ~/.tmissing.json'
	id=$("$AMX" sessions --json | sed -n 's/^ *"id": \([0-9]*\),.*/\1/p' | head -n 1)
	out=$("$AMX" confdiff "$id" 2>&1)
	case $out in *"deleted $HOME/.tagent.json"*"modified $HOME/.tmissing.json"*) ok ;;
	*) bad "a deletion and a symlink were not shown: $out" ;; esac
	"$AMX" confdiff "$id" --discard >/dev/null 2>&1
	[ -f "$HOME/.tagent.json" ] && [ -f "$HOME/.tmissing.json" ] && ok ||
	    bad "discarding touched the host"
}

refusals() {
	refused "-C /" "cannot jail /: the whole filesystem" -C / -- true
	refused "-C HOME" "cannot jail $HOME: it is your home directory" -C "$HOME" -- true
	refused "-C missing" "No such file or directory" -C "$T/nope" -- true
	refused "-C a system dir" "it is a system directory" -C /usr -- true
	if [ "$WHO" = root ]; then
		mkdir "$T/theirs" && chown 65534 "$T/theirs"
		refused "-C not yours" "not to you" -C "$T/theirs" -- true
	else
		refused "-C not yours" "not to you" -C /usr/share -- true
	fi
	refused "unknown agent" "unknown agent 'nope'" -a nope -- true
	refused "bad option" "unknown option '--frobnicate'" --frobnicate -- true
	refused "--on-unknown ask" "--on-unknown ask needs the dashboard" \
	    --on-unknown ask -- true
	refused "bad --memory" "bad --memory 'lots'" --memory lots -- true
	refused "bad --pids" "bad --pids" --pids 0 -- true
	refused "bad --allow" "bad --allow rule" --allow 'a b c d e' -- true
}

records() {
	"$AMX" run -C "$P" -- sh -c 'exit 5' </dev/null >/dev/null 2>&1
	js=$("$AMX" sessions --json)
	printf '%s' "$js" | python3 -c '
import json, sys
s = json.load(sys.stdin)[0]
assert s["state"] == "exited", s
assert s["exit_status"] == 5, s
assert s["command"] == ["sh", "-c", "exit 5"], s
assert s["project"] == sys.argv[1], s
assert s["agent"] == "shell", s
assert "user" in s["jail"]["namespaces"], s
assert s["jail"]["limits"]["pids"]["by"] != "none", s
' "$P" && ok || bad "the session record"
	printf '#!/no/such/interpreter\n' >"$P/bad.sh"
	chmod 755 "$P/bad.sh"
	"$AMX" run -C "$P" -- ./bad.sh </dev/null >/dev/null 2>&1
	st=$("$AMX" sessions --json | python3 -c 'import json,sys; s=json.load(sys.stdin)[0]; print(s["state"], "cannot run ./bad.sh" in (s["error"] or ""))')
	[ "$st" = "failed True" ] && ok || bad "a failed start is not recorded as failed: $st"
}

checks() {
	statuses
	forwarded
	grace
	hangup
	no_survivors
	pipes
	pty
	environment
	binds
	overlays
	refusals
	records
}

jail_main "$@"
