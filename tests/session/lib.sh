# Shared by the session tests written in shell: a private data, config
# and runtime dir, the checks' counters, and the unprivileged pass.
# Source it after set -u; AGENTMUX names the binary.

# wt_setup NAME: $T (a dir of its own, removed at exit) with the XDG dirs
# under it exported, $AMX, $fails, bad and ok.
wt_setup() {
	AMX=${AGENTMUX:?AGENTMUX must name the binary}
	T=$(mktemp -d "/tmp/amx-$1.XXXXXX")
	chmod 755 "$T"
	export XDG_CONFIG_HOME=$T/config XDG_DATA_HOME=$T/data XDG_RUNTIME_DIR=$T/run XDG_STATE_HOME=$T/state
	mkdir -p "$XDG_CONFIG_HOME/agentmux" "$XDG_DATA_HOME" "$XDG_RUNTIME_DIR"
	chmod 700 "$XDG_RUNTIME_DIR"
	trap 'rm -rf "$T"' EXIT
	trap 'exit 1' INT TERM
	fails=0
}
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

# wt_as_user SCRIPT [ARG]: SCRIPT (a full path) run again as a throwaway
# user with --as-user, once, from root; its lines prefixed "user: ". Only
# from a root pass, and not with AMX_NO_USER (the sanitizer pass).
wt_as_user() {
	local u
	[ -z "${AMX_NO_USER:-}" ] && [ "${2:-}" != --as-user ] && [ "$(id -u)" = 0 ] || return 0
	if ! command -v useradd >/dev/null || ! command -v setpriv >/dev/null; then
		echo "SKIP (the unprivileged pass): it needs useradd and setpriv"
		return 0
	fi
	u="amxu$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')"
	mkdir -p "$T/stage"
	cp "$AMX" "$T/stage/agentmux"
	cp "${AMX%/*}/agentmux-full" "$T/stage/agentmux-full"
	cp "$1" "$T/stage/${1##*/}"
	cp "${1%/*}/lib.sh" "$T/stage/lib.sh"
	cp -r "${AGENTMUX_SHARE:?}" "$T/stage/share"
	chmod -R a+rX "$T/stage"
	useradd -M -N -d /nonexistent -s /bin/sh "$u" || { bad "useradd failed"; return 0; }
	setpriv --reuid="$u" --regid="$(id -g "$u")" --init-groups \
	    env -i PATH="$PATH" AGENTMUX="$T/stage/agentmux" TMPDIR=/tmp \
	    AGENTMUX_SHARE="$T/stage/share" \
	    bash "$T/stage/${1##*/}" --as-user | sed 's/^/user: /'
	[ "${PIPESTATUS[0]}" = 0 ] || bad "the unprivileged pass failed"
	userdel "$u" 2>/dev/null
}
