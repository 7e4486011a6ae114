# Shared by the jail's end-to-end scripts (sourced): results, scratch dirs,
# and running the same script again as a throwaway unprivileged user.
# Each script defines checks() and calls jail_main "$@".

: "${AGENTMUX:?run through meson test (AGENTMUX is not set)}"
: "${AMX_ESCAPE:?run through meson test (AMX_ESCAPE is not set)}"
: "${AGENTMUX_SHARE:?run through meson test (AGENTMUX_SHARE is not set)}"

PASSES=0
FAILS=0
WHO=root

ok() {
	PASSES=$((PASSES + 1))
}

bad() {
	FAILS=$((FAILS + 1))
	echo "FAIL [$WHO] $*"
}

# The jailed command's exit status and output land in RC and OUT.
jrun() {
	OUT=$("$AMX" run -C "$P" "$@" </dev/null 2>&1)
	RC=$?
}

# A session that waits while the host runs HOW in the project beside its
# jail; its end lands in OUT. What the jail can no longer do (a dir that is
# a mount point there) the end must still repair, whoever did it.
beside_session() { # HOW
	rm -f "$P/.ready" "$P/.go"
	"$AMX" run -C "$P" -- sh -c 'touch .ready; i=0; while [ ! -e .go ] &&
	    [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done; rm -f .ready .go;
	    echo released' </dev/null >"$T/beside.out" 2>&1 &
	pid=$!
	i=0
	while [ ! -e "$P/.ready" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
	[ -e "$P/.ready" ] || bad "beside_session: the session did not start: $(cat "$T/beside.out")"
	(cd "$P" && sh -c "$1") || bad "beside_session: the host's $1 failed"
	touch "$P/.go"
	wait "$pid"
	OUT=$(cat "$T/beside.out")
}

# The top of a main-tree session's git dir is read only in the jail (the
# user's git renames its config.lock into place there). What the end does
# with a HEAD, shallow or packed-refs made there anyway (a process of the
# user's, an older agentmux) is tried by planting from the host while the
# session runs: host_plant HOSTCMD JAILPRE [JAILPOST] runs JAILPRE in the
# jail, then HOSTCMD on the host while the jail waits, then JAILPOST.
host_plant() {
	rm -f "$P/.plant-now" "$P/.planted"
	(i=0; while [ ! -e "$P/.plant-now" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
	    sh -c "$1"; touch "$P/.planted") &
	hpid=$!
	jrun -- sh -c "$2"'
	    touch .plant-now; i=0; while [ ! -e .planted ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
	    rm -f .plant-now .planted; '"${3:-:}"
	wait "$hpid"
}

# An attempt the jail must stop: the helper reports BLOCKED (exit 1), or the
# attempt was killed (OOM, SIGXFSZ); "ESCAPED" anywhere is a failure.
blocked() {
	name=$1
	shift
	jrun "$@"
	case $OUT in
	*ESCAPED*) bad "$name: escaped: $OUT"; return ;;
	esac
	if [ "$RC" = 1 ] || [ "$RC" -ge 128 ]; then
		ok
	else
		bad "$name: exit $RC, expected 1: $OUT"
	fi
}

# A positive control: the same helper succeeds where it should, so the
# attempts above are real attempts, not a broken helper.
works() {
	name=$1
	shift
	jrun "$@"
	if [ "$RC" = 0 ]; then ok; else bad "$name: exit $RC: $OUT"; fi
}

# Fresh scratch space, isolated XDG dirs, a home with planted secrets, and
# a git project under it with the helper copied in.
jail_setup() {
	T=$(mktemp -d "${TMPDIR:-/tmp}/amx-jail-$WHO.XXXXXX") || exit 1
	chmod 755 "$T"
	export HOME="$T/home"
	export XDG_CONFIG_HOME="$T/xdg/config" XDG_DATA_HOME="$T/xdg/data"
	export XDG_RUNTIME_DIR="$T/xdg/run"
	mkdir -p "$XDG_CONFIG_HOME/agentmux" "$XDG_DATA_HOME" "$XDG_RUNTIME_DIR"
	chmod 700 "$XDG_RUNTIME_DIR"
	cat >"$XDG_CONFIG_HOME/agentmux/config" <<-CONF
	[limits]
	file_size = 8M
	tmp_size = 32M
	CONF
	for f in .ssh/id_rsa .aws/credentials .config/gh/hosts.yml .netrc \
	    .docker/config.json .bashrc; do
		mkdir -p "$(dirname "$HOME/$f")"
		echo "secret-$f" >"$HOME/$f"
	done
	P="$HOME/src/proj"
	mkdir -p "$P" "$T/outside"
	echo "outside-secret" >"$T/outside/secret.txt"
	echo "orig" >"$T/outside/target.txt"
	(cd "$P" && git init -q . && git config user.email t@x &&
	    git config user.name t && echo hi >README && git add README &&
	    git commit -qm init) || exit 1
	cp "$AMX_ESCAPE" "$P/amx-escape"
	chmod -R go+rX "$T"
	E="$P/amx-escape"
}

jail_cleanup() {
	for pid in ${KILL_PIDS:-}; do
		kill "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
	rm -rf "$T"
}

# Copies what the other user needs to run (the source tree may be private).
jail_stage() {
	S=$(mktemp -d /tmp/amx-jail-stage.XXXXXX) || exit 1
	mkdir -p "$S/bin"
	cp "$AGENTMUX" "$S/bin/agentmux"
	# (and the whole program it runs, beside it)
	cp "${AGENTMUX%/*}/agentmux-full" "$S/bin/agentmux-full"
	cp "$AMX_ESCAPE" "$S/bin/amx-escape"
	cp -r "$AGENTMUX_SHARE" "$S/share"
	cp "$JAIL_SCRIPT" "$JAIL_LIB" "$S/"
	# The jail scripts' helpers beside them (index-craft.py).
	cp "$(dirname "$JAIL_LIB")"/*.py "$S/" 2>/dev/null
	if [ -n "${AMX_UPSTREAM:-}" ]; then
		cp "$AMX_UPSTREAM" "$S/upstream.py"
	fi
	chmod -R a+rX "$S"
	chmod 755 "$S"
}

# Runs checks as root, then as a user made for the test (deleted after).
# AMX_CHECKS (space-separated check names) runs those alone, to try one by hand.
jail_main() {
	JAIL_SCRIPT=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
	JAIL_LIB=$(cd "$(dirname "$0")" && pwd)/lib.sh
	if [ "${1:-}" = --as-user ]; then
		WHO=user
		AMX=$AGENTMUX
		jail_setup
		jail_checks
		jail_cleanup
		echo "[$WHO] $PASSES passed, $FAILS failed"
		[ "$FAILS" = 0 ]
		exit
	fi
	AMX=$AGENTMUX
	if [ "$(id -u)" = 0 ]; then
		jail_setup
		jail_checks
		jail_cleanup
		echo "[root] $PASSES passed, $FAILS failed"
		rootfails=$FAILS
		jail_as_user || exit 1
		[ "$rootfails" = 0 ]
		exit
	fi
	WHO=user
	jail_setup
	jail_checks
	jail_cleanup
	echo "[$WHO] $PASSES passed, $FAILS failed (the root pass needs root)"
	[ "$FAILS" = 0 ]
}

# timed CHECK: runs it and says how long it took (where a slow run's
# seconds go, in the test's log).
timed() {
	t0=$(date +%s)
	"$@"
	echo "[$WHO] $1: $(( $(date +%s) - t0 )) s"
}

# The script's checks, or those AMX_CHECKS names.
jail_checks() {
	if [ -z "${AMX_CHECKS:-}" ]; then
		checks
		return
	fi
	for c in $AMX_CHECKS; do timed "$c"; done
}

jail_as_user() {
	if [ -n "${AMX_NO_USER:-}" ]; then
		echo "the unprivileged pass: not run (AMX_NO_USER is set; CI's sanitizer pass runs the root pass alone)"
		return 0
	fi
	if ! command -v useradd >/dev/null || ! command -v setpriv >/dev/null; then
		echo "SKIP: the unprivileged pass needs useradd and setpriv"
		return 0
	fi
	U="amxt$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')"
	useradd -M -N -d /nonexistent -s /bin/sh "$U" || return 1
	jail_stage
	rc=0
	setpriv --reuid="$U" --regid="$(id -g "$U")" --init-groups \
	    env -i PATH="$PATH" AGENTMUX="$S/bin/agentmux" \
	    AMX_ESCAPE="$S/bin/amx-escape" AGENTMUX_SHARE="$S/share" \
	    AMX_SMALLFS="${AMX_SMALLFS:-}" AMX_CHECKS="${AMX_CHECKS:-}" \
	    AMX_FEWINODES="${AMX_FEWINODES:-}" \
	    AMX_UPSTREAM="$S/upstream.py" \
	    TMPDIR=/tmp sh "$S/$(basename "$JAIL_SCRIPT")" --as-user || rc=1
	userdel "$U" 2>/dev/null
	rm -rf "$S"
	return $rc
}
