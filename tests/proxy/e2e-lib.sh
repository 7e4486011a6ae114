# What the proxy's end-to-end scripts share (sourced by bash, with the
# script's short name as $1): isolated XDG dirs in a temp dir $T (with
# $T/up for upstreams and $T/proj for the project), a cleanup on exit that
# ends the processes listed in PIDS and deletes the throwaway user TUSER,
# and ok/bad/has to report ($fails counts what failed).
T=$(mktemp -d "/tmp/amx-$1.XXXXXX")
chmod 755 "$T"
export XDG_CONFIG_HOME=$T/config XDG_DATA_HOME=$T/data XDG_RUNTIME_DIR=$T/run XDG_STATE_HOME=$T/state
mkdir -p "$XDG_CONFIG_HOME/agentmux" "$XDG_DATA_HOME" "$XDG_RUNTIME_DIR" "$T/up" "$T/proj"
chmod 700 "$XDG_RUNTIME_DIR"
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	[ -n "${TUSER:-}" ] && userdel "$TUSER" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
has() { grep -q -- "$2" <<<"$1"; }
