#!/bin/sh
# The escape suite: real attempts from inside real jails, each of which must
# fail, first as root, then as an unprivileged user made for the test.
set -u
. "$(dirname "$0")/lib.sh"

# Host-side listeners the jail must not reach: TCP on loopback, a unix
# socket outside the project, an abstract socket. Writes the port to $1.
host_listeners() {
	python3 - "$1" "$T/host.sock" "$2" <<'PY' &
import socket, sys, time
t = socket.socket(); t.bind(("127.0.0.1", 0)); t.listen(8)
u = socket.socket(socket.AF_UNIX); u.bind(sys.argv[2]); u.listen(8)
a = socket.socket(socket.AF_UNIX); a.bind("\0" + sys.argv[3]); a.listen(8)
open(sys.argv[1] + ".tmp", "w").write(str(t.getsockname()[1]))
import os; os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(120)
PY
	KILL_PIDS="${KILL_PIDS:-} $!"
	for _ in $(seq 100); do [ -s "$1" ] && return 0; sleep 0.05; done
	return 1
}

# A listener on a unix socket file: the jail cannot hide a socket file it
# can see, so a project holding a live one is refused, and one that appears
# while a command runs is reported.
project_socket_listen() {
	python3 - "$1" <<'PY' &
import socket, sys, time
u = socket.socket(socket.AF_UNIX); u.bind(sys.argv[1]); u.listen(8)
time.sleep(60)
PY
	SOCK_PID=$!
	KILL_PIDS="${KILL_PIDS:-} $SOCK_PID"
	for _ in $(seq 100); do [ -S "$1" ] && return 0; sleep 0.05; done
	return 1
}

project_sockets() {
	mkdir -p "$P/run"
	project_socket_listen "$P/run/db.sock" || bad "no listener in the project"
	jrun -- true
	case "$RC:$OUT" in
	1:*"listens on the unix socket $P/run/db.sock"*) ok ;;
	*) bad "a host socket in the project was not refused: $RC $OUT" ;;
	esac
	kill "$SOCK_PID"; wait "$SOCK_PID" 2>/dev/null
	rm -f "$P/run/db.sock"
	# One that appears later is reported as the command runs.
	"$AMX" run -C "$P" -- sh -c 'while [ ! -S run/late.sock ]; do sleep 0.1;
	    done; sleep 3' </dev/null >/dev/null 2>&1 &
	apid=$!
	sleep 0.5
	project_socket_listen "$P/run/late.sock" || bad "no late listener"
	wait "$apid"
	kill "$SOCK_PID"; wait "$SOCK_PID" 2>/dev/null
	"$AMX" show last 2>&1 | grep -q "now listens on the unix socket $P/run/late.sock" &&
	    ok || bad "a host socket appearing in the project was not reported"
	rm -rf "$P/run"
}

reads() {
	for f in "$T/outside/secret.txt" "$HOME/.ssh/id_rsa" \
	    "$HOME/.aws/credentials" "$HOME/.config/gh/hosts.yml" \
	    "$HOME/.netrc" "$HOME/.docker/config.json" /etc/shadow \
	    /etc/gshadow /etc/sudoers /root/.bash_history \
	    /etc/ssh/ssh_host_ed25519_key "$OTHER_HOME/secret.txt"; do
		blocked "read $f" "$E" read "$f"
	done
	works "read the project" "$E" read "$P/README"
}

# Writes that land in the jail's own tmpfs must not reach the host.
host_unchanged() {
	name=$1 path=$2
	shift 2
	jrun "$@"
	if [ -e "$path" ] && [ "$(cat "$path" 2>/dev/null)" = pwned ]; then
		bad "$name: $path was written on the host"
	else
		ok
	fi
}

writes() {
	tmpf="/tmp/amx-escape-$$-$WHO"
	host_unchanged "write host /tmp" "$tmpf" "$E" write "$tmpf"
	rm -f "$tmpf"
	host_unchanged "write HOME" "$HOME/.bashrc" "$E" write "$HOME/.bashrc"
	host_unchanged "write the project's parent" "$P/../evil" \
	    "$E" write "$P/../evil"
	blocked "append /etc/passwd" "$E" append /etc/passwd
	blocked "create in /etc" "$E" write /etc/amx-evil
	blocked "create in /usr" "$E" write /usr/bin/amx-evil
	blocked "create at /" "$E" write /amx-evil
	blocked "write outside" "$E" write "$T/outside/new.txt"
	ln -s "$T/outside/target.txt" "$P/link-out"
	blocked "write through a symlink" "$E" write "$P/link-out"
	[ "$(cat "$T/outside/target.txt")" = orig ] && ok ||
	    bad "the symlink target outside changed"
	ln -s /etc/passwd "$P/link-etc"
	blocked "append through a symlink to /etc" "$E" append "$P/link-etc"
	blocked "hard link /etc/passwd" "$E" link /etc/passwd "$P/hl-passwd"
	blocked "hard link /usr/bin/sh" "$E" link /usr/bin/sh "$P/hl-sh"
	blocked "chmod /dev/null" "$E" chmod /dev/null
	works "write the project" "$E" write "$P/ok.txt"
	[ "$(cat "$P/ok.txt" 2>/dev/null)" = pwned ] && ok ||
	    bad "a write in the project did not reach the host"
	# No hard link at all, even inside the project (seccomp: EXDEV).
	blocked "hard link inside the project" "$E" link "$P/ok.txt" "$P/hl-ok"
	[ ! -e "$P/hl-ok" ] && ok || bad "a hard link was made inside the project"
}

git_plants() {
	blocked "plant a git hook" "$E" write "$P/.git/hooks/pre-commit"
	blocked "change .git/config" "$E" append "$P/.git/config"
	blocked "replace .git/hooks" "$E" rename "$P/.git/hooks" "$P/hooks-old"
	blocked "replace .git" "$E" rename "$P/.git" "$P/git-old"
	[ ! -e "$P/.git/hooks/pre-commit" ] && ! grep -q pwned "$P/.git/config" &&
	    ok || bad "a git hook or config reached the host"
	works "commit inside the jail" sh -c 'echo x > f && git add f &&
	    git -c user.email=a@b -c user.name=a commit -qm x'
	# A planted commondir would send the host's git to the agent's config
	# and hooks. (The jail sees the git dir at /.agentmux-git; one in its
	# own .git, whose entries are links there, is the jail's alone.)
	# The top of /.agentmux-git is read only: the jail's write there is
	# refused; one made there anyway (by the host, beside the session) is
	# moved out as soon as agentmux sees it.
	host_plant "echo ../evil >'$P/.git/commondir'" \
	    'mkdir -p evil/hooks && cp -r .git/objects/ .git/refs/ .git/HEAD evil/ &&
	    printf "[alias]\n\tst = !echo PWNED-ALIAS\n" > evil/config &&
	    printf "#!/bin/sh\necho PWNED-HOOK\n" > evil/hooks/pre-commit &&
	    chmod +x evil/hooks/pre-commit && echo ../evil > .git/commondir &&
	    { (echo ../evil > /.agentmux-git/commondir) 2>&1 | grep -q "Permission denied" && echo REFUSED; }' \
	    'sleep 0.3; test ! -e /.agentmux-git/commondir'
	case $OUT in *REFUSED*) ok ;; *) bad "the jail wrote a commondir at the top of the sealed dir: $OUT" ;; esac
	[ "$RC" = 0 ] && ok || bad "a planted commondir was not moved out at once: $OUT"
	[ ! -e "$P/.git/commondir" ] && ok || bad "a planted .git/commondir stayed"
	out=$(cd "$P" && git st 2>&1; git -c user.email=a@b -c user.name=a \
	    commit -q --allow-empty -m t 2>&1)
	case $out in *PWNED*) bad "the host's git ran the agent's code: $out" ;; *) ok ;; esac
	case $("$AMX" sessions --json) in *tampering*) ok ;; *) bad "the session is not flagged" ;; esac
}

network() {
	port=$(cat "$T/port")
	blocked "connect to host loopback" "$E" tcp 127.0.0.1 "$port"
	ip=$(hostname -I 2>/dev/null | awk '{print $1}')
	if [ -n "$ip" ]; then
		blocked "connect to the host's address" "$E" tcp "$ip" "$port"
	fi
	blocked "connect to a host unix socket" "$E" unix "$T/host.sock"
	# The agentmux server (which owns every jail) is out of every jail's reach.
	"$AMX" new -d -C "$P" -- sleep 300 >/dev/null 2>&1 || bad "no agentmux server started"
	[ -S "$XDG_RUNTIME_DIR/agentmux/default" ] || bad "the agentmux server has no socket"
	blocked "connect to the agentmux server" "$E" unix "$XDG_RUNTIME_DIR/agentmux/default"
	blocked "read the agentmux server's pid file" "$E" read "$XDG_RUNTIME_DIR/agentmux/default.pid"
	spid=$(cat "$XDG_RUNTIME_DIR/agentmux/default.pid" 2>/dev/null)
	"$AMX" kill-server >/dev/null 2>&1 || bad "kill-server failed"
	# The server removes its pid file as it is told to end, then ends its
	# sessions: the next start in this tree waits for the server to be gone.
	for _ in $(seq 200); do
		[ -e "$XDG_RUNTIME_DIR/agentmux/default.pid" ] ||
			{ [ -n "$spid" ] && [ -d "/proc/$spid" ]; } || break
		sleep 0.05
	done
	blocked "connect to a host abstract socket" "$E" abstract "$ABSTRACT"
	blocked "resolve a name (to anything real)" "$E" resolve example.com
	works "resolve localhost" "$E" resolve localhost
	blocked "connect to a real address" "$E" tcp 1.1.1.1 443
	blocked "connect to a private address" "$E" tcp 10.0.0.1 80
	blocked "raw socket" "$E" raw
	blocked "packet socket" "$E" packet
	blocked "audit netlink" "$E" netlink-audit
	blocked "uevent netlink" "$E" netlink-uevent
	works "route netlink" "$E" netlink-route
	# Landlock's port rule holds where it can: with transparent = no.
	# (With interception every port must reach the redirect; the jail's
	# own listeners are then its own business, inside its namespace.)
	cp "$XDG_CONFIG_HOME/agentmux/config" "$T/config.keep"
	printf '[proxy]\ntransparent = no\n' >>"$XDG_CONFIG_HOME/agentmux/config"
	skippable "connect to a port of the jail's own (Landlock)" \
	    "$E" selfconnect 8080
	blocked "resolve a name (transparent = no)" "$E" resolve example.com
	mv "$T/config.keep" "$XDG_CONFIG_HOME/agentmux/config"
}

processes() {
	sleep 120 &
	hostpid=$!
	KILL_PIDS="${KILL_PIDS:-} $hostpid"
	blocked "see a host process" "$E" stat "/proc/$hostpid"
	blocked "signal a host process" "$E" kill "$hostpid" 0
	jrun sh -c 'kill -9 -1'
	kill -0 "$hostpid" 2>/dev/null && ok ||
	    bad "kill -9 -1 in the jail killed a host process"
	for a in ptrace mount unshare clone clone3 keyctl add_key bpf perf \
	    userfaultfd io_uring personality tiocsti tioclinux; do
		blocked "$a" "$E" "$a"
	done
	skippable "an i386 syscall (killed)" "$E" int80
}

# Like blocked, but the helper may report SKIP (exit 4) with its reason.
skippable() {
	name=$1
	shift
	jrun "$@"
	if [ "$RC" = 4 ]; then
		echo "SKIP [$WHO] $name: $OUT"
		return
	fi
	case $OUT in
	*ESCAPED*) bad "$name: escaped: $OUT" ;;
	*) if [ "$RC" = 1 ] || [ "$RC" -ge 128 ]; then ok; else bad "$name: exit $RC: $OUT"; fi ;;
	esac
}

kernel() {
	before=$(cat /proc/sys/kernel/core_pattern)
	blocked "write core_pattern" "$E" write /proc/sys/kernel/core_pattern
	if [ "$(cat /proc/sys/kernel/core_pattern)" = "$before" ]; then
		ok
	else
		bad "core_pattern changed on the host"
		printf '%s\n' "$before" >/proc/sys/kernel/core_pattern
	fi
	blocked "write another sysctl" "$E" write /proc/sys/vm/drop_caches
	blocked "write sysrq-trigger" "$E" write /proc/sysrq-trigger
	blocked "write /sys" "$E" write /sys/kernel/uevent_helper
}

environment() {
	jrun "$E" env AMX_ESCAPE_SECRET
	case $RC in 1) ok ;; *) bad "the caller's secret variable got in: $OUT" ;; esac
	blocked "find the secret in /proc/self/environ" \
	    "$E" grep /proc/self/environ "$AMX_ESCAPE_SECRET"
	blocked "find the secret in /proc/1/environ" \
	    "$E" grep /proc/1/environ "$AMX_ESCAPE_SECRET"
}

limits() {
	blocked "fork bomb" --pids 40 -- "$E" forks 200
	blocked "allocation" --memory 64M -- "$E" alloc 512
	blocked "fill the disk" "$E" fill "$P/big" 64
	blocked "fill /tmp" "$E" fill /tmp/big 64
	[ ! -e "$P/big" ] && ok || bad "the big file was left in the project"
}

# Extended attributes: a default ACL on a project dir would make the
# user's later files world-writable, unseen by diff and undo. Every call
# that sets or removes one fails with ENOTSUP; the same attempt on the
# host shows the file system takes them (else the check says SKIP).
xattrs() {
	mkdir -p "$T/xattr-host" "$P/xattr"
	if ! "$E" xattr "$T/xattr-host" >/dev/null 2>&1; then
		echo "SKIP [$WHO] extended attributes: the file system under $T takes none"
		return
	fi
	blocked "set a default ACL or any extended attribute" "$E" xattr "$P/xattr"
	jrun sh -c 'cd xattr && umask 077 && : >later && stat -c %a later'
	case $OUT in 600) ok ;; *) bad "a file made in the jail after the attempts: $OUT" ;; esac
	m=$(cd "$P/xattr" && umask 077 && : >host-later && stat -c %a host-later)
	[ "$m" = 600 ] && ok ||
	    bad "a file the user made in the project dir after the session is $m, not 600 (umask 077)"
	rm -rf "$P/xattr" "$T/xattr-host"
}

# A whiteout (renameat2's RENAME_WHITEOUT leaves a 0:0 character device at
# the old name, which Landlock's MAKE_CHAR does not see): refused, and the
# file stays where it was.
whiteout() {
	echo w >"$P/wh-a"
	blocked "leave a whiteout device by rename" "$E" whiteout "$P/wh-a" "$P/wh-b"
	[ -f "$P/wh-a" ] && [ ! -e "$P/wh-b" ] && ok || bad "the whiteout rename moved the file: $(ls -la "$P"/wh-*)"
	rm -f "$P/wh-a" "$P/wh-b"
}

checks() {
	OTHER_HOME=${OTHER_HOME:-/root}
	if [ "$WHO" = root ]; then
		OTHER_HOME=$(mktemp -d /tmp/amx-other-home.XXXXXX)
		chmod 755 "$OTHER_HOME"
		echo other >"$OTHER_HOME/secret.txt"
	fi
	export AMX_ESCAPE_SECRET="s3cret-$$-$WHO"
	ABSTRACT="amx-escape-$$-$WHO"
	host_listeners "$T/port" "$ABSTRACT" || bad "no host listeners"
	reads
	writes
	xattrs
	whiteout
	git_plants
	project_sockets
	network
	processes
	kernel
	environment
	limits
	[ "$WHO" = root ] && rm -rf "$OTHER_HOME"
}

jail_main "$@"
