#!/bin/sh
# Claude Code as npm installs it, jailed by agentmux run in a real tmux, against the local stand-in for its
# vendor's API (vendor-api.py): at its prompt the session needs you (inferred: the pane quiet for
# [ui] idle_after, no model request in flight, Claude reading its terminal); typing a task makes it working;
# the turn over, it needs you again. Read from the records (agentmux sessions --json) as a script would.
set -u
: "${AGENTMUX:?run through meson test (AGENTMUX is not set)}"
HERE=$(cd "$(dirname "$0")" && pwd)
NPM_PREFIX=${AGENTMUX_TEST_NPM:-/var/tmp/agentmux-test-npm}
REPLY=agentmux-fake-vendor-says-hello
KEY_A=sk-ant-api03-agentmux-test-real-key-0123456789

for tool in python3 openssl git tmux timeout; do
	command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed"; exit 77; }
done
CLAUDE_BIN=
for d in "$NPM_PREFIX/bin" /var/tmp/amx-acceptance-npm/bin; do
	if [ -x "$d/claude" ] && timeout 60 "$d/claude" --version >/dev/null 2>&1; then
		CLAUDE_BIN=$d
		break
	fi
done
# agents-e2e installs it (npm, bounded); this test only uses what is there.
[ -n "$CLAUDE_BIN" ] || { echo "SKIP: Claude Code is not installed in $NPM_PREFIX (tests/agents/e2e.sh installs it)"; exit 77; }

V=$(mktemp -d /tmp/amx-vendor.XXXXXX) || exit 1
T=$(mktemp -d /tmp/amx-states.XXXXXX) || exit 1
TS="amx-states-$$"
python3 "$HERE/vendor-api.py" "$V" >"$V/server.log" 2>&1 &
VPID=$!
cleanup() {
	tmux -L "$TS" kill-server 2>/dev/null
	kill "$VPID" 2>/dev/null
	wait "$VPID" 2>/dev/null
	rm -rf "$V" "$T"
}
trap cleanup EXIT
for _ in $(seq 200); do [ -s "$V/port" ] && break; sleep 0.05; done
[ -s "$V/port" ] || { echo "FAIL: the vendor stand-in did not start: $(cat "$V/server.log")"; exit 1; }
VPORT=$(cat "$V/port")

export HOME="$T/home" XDG_CONFIG_HOME="$T/config" XDG_DATA_HOME="$T/data" XDG_RUNTIME_DIR="$T/run"
mkdir -p "$HOME" "$XDG_CONFIG_HOME/agentmux" "$XDG_DATA_HOME" "$XDG_RUNTIME_DIR"
chmod 700 "$XDG_RUNTIME_DIR"
cat >"$XDG_CONFIG_HOME/agentmux/config" <<CONF
[ui]
idle_after = 1000
[proxy]
connect_to = api.anthropic.com:443:127.0.0.1:$VPORT
connect_to = platform.claude.com:443:127.0.0.1:$VPORT
upstream_ca = $V/ca.pem
CONF
P="$T/proj"
mkdir -p "$P"
(cd "$P" && git init -q . && git config user.email t@x && git config user.name t &&
	echo hi >README && git add README && git commit -qm init) || exit 1

fail() {
	echo "FAIL: $*"
	echo "--- screen:"
	screen_now
	exit 1
}
tui() { tmux -L "$TS" "$@"; }
screen_now() { tui capture-pane -p -t amx 2>/dev/null; }

# What the running session does, as agentmux sessions --json says.
activity() {
	"$AGENTMUX" sessions --json | python3 -c '
import json, sys
v = json.load(sys.stdin)
print(v[0]["activity"] if v else "")'
}

# wait_activity STATE SECONDS: polls the records.
wait_activity() {
	n=$(( $2 * 10 ))
	i=0
	while [ $i -lt $n ]; do
		[ "$(activity)" = "$1" ] && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

tui -f /dev/null new-session -d -s amx -x 120 -y 40 \
    "cd '$P' && ANTHROPIC_API_KEY='$KEY_A' PATH='$CLAUDE_BIN:$PATH' '$AGENTMUX' run -a claude -- claude; echo AMX-EXITED-\$?; sleep 600" ||
	fail "tmux could not start agentmux run"

# Its first-start questions: while one is on the screen, it needs you too.
asked=no
ready=no
for _ in $(seq 240); do
	case $(screen_now) in
	*"Detected a custom API key"*)
		if [ $asked = no ]; then
			wait_activity "needs you" 5 ||
				fail "Claude Code asking about its key is '$(activity)', not 'needs you'"
			asked=yes
		fi
		tui send-keys -t amx Up; sleep 0.5; tui send-keys -t amx Enter; sleep 1 ;;
	*"Choose the text style"*|*"Press Enter to continue"*|*"Yes, I trust this folder"*)
		tui send-keys -t amx Enter; sleep 1 ;;
	*"? for shortcuts"*) ready=yes; break ;;
	*AMX-EXITED-*) fail "agentmux run ended" ;;
	*) sleep 0.5 ;;
	esac
done
[ $ready = yes ] || fail "Claude Code's prompt did not come"

# At its prompt: needs you within idle_after + 1 s of its last output.
wait_activity "needs you" 10 || fail "Claude Code at its prompt is '$(activity)', not 'needs you'"

# A task typed: working; its turn over (the stand-in's answer shown), needs you again.
tui send-keys -t amx -l "say hello"
sleep 0.3
tui send-keys -t amx Enter
[ "$(activity)" = working ] || wait_activity working 2 || fail "typing a task left the session '$(activity)'"
for _ in $(seq 120); do
	case $(screen_now) in *"$REPLY"*) break ;; esac
	sleep 0.5
done
case $(screen_now) in *"$REPLY"*) ;; *) fail "Claude Code did not show the stand-in's answer" ;; esac
wait_activity "needs you" 10 || fail "Claude Code after its turn is '$(activity)', not 'needs you'"

tui send-keys -t amx -l "/exit"
sleep 0.5
tui send-keys -t amx Enter
for _ in $(seq 60); do
	case $(screen_now) in *AMX-EXITED-*) break ;; esac
	sleep 0.5
done
"$AGENTMUX" sessions | grep -Eq '^ *1 +exited 0' || fail "the session is not recorded 'exited 0': $("$AGENTMUX" sessions)"
echo "claude: key question and prompt need you (asked about its key: $asked), a task works, its end needs you again"
