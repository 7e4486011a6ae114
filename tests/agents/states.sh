#!/bin/sh
# Claude Code, Codex and OpenCode as npm installs them, each jailed by agentmux run in a real tmux, against
# the local stand-in for their vendors' APIs (vendor-api.py). At its prompt (and at its first-start
# questions) a session needs you (inferred: the pane quiet for [ui] idle_after, no model request in flight,
# the agent reading its terminal); a task typed makes it working, and it stays so while its turn is in
# flight (the stand-in answers late); the turn over, it needs you again. Claude Code's permission question
# and Codex's approval question need you at once through their profiles' needs_you_screen hints, with
# idle_after at its 10-minute most, and answering makes them working. Read from the records (agentmux sessions --json) as a script would.
set -u
: "${AGENTMUX:?run through meson test (AGENTMUX is not set)}"
HERE=$(cd "$(dirname "$0")" && pwd)
NPM_PREFIX=${AGENTMUX_TEST_NPM:-/var/tmp/agentmux-test-npm}
REPLY=agentmux-fake-vendor-says-hello
KEY_A=sk-ant-api03-agentmux-test-real-key-0123456789
KEY_C=sk-proj-agentmux-test-real-codex-key-0123456789

for tool in python3 openssl git tmux timeout; do
	command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed"; exit 77; }
done

# The bin dir holding a working BIN; agents-e2e installs them (npm, bounded), this test only uses what is there.
find_bin() {
	for d in "$NPM_PREFIX/bin" /var/tmp/amx-acceptance-npm/bin; do
		if [ -x "$d/$1" ] && timeout 60 "$d/$1" --version >/dev/null 2>&1; then
			echo "$d"
			return 0
		fi
	done
	return 1
}
CLAUDE_BIN=$(find_bin claude) || CLAUDE_BIN=
CODEX_BIN=$(find_bin codex) || CODEX_BIN=
OPENCODE_BIN=$(find_bin opencode) || OPENCODE_BIN=
[ -n "$CLAUDE_BIN$CODEX_BIN$OPENCODE_BIN" ] ||
	{ echo "SKIP: none of claude, codex, opencode is installed in $NPM_PREFIX (tests/agents/e2e.sh installs them)"; exit 77; }

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

# config IDLE_MS: every vendor host to the stand-in; [ui] idle_after for the sessions started next.
config() {
	{
		echo "[ui]"
		echo "idle_after = $1"
		echo "[proxy]"
		for h in api.anthropic.com platform.claude.com api.openai.com chatgpt.com \
		    models.opencode.ai registry.npmjs.org; do
			echo "connect_to = $h:443:127.0.0.1:$VPORT"
		done
		echo "upstream_ca = $V/ca.pem"
	} >"$XDG_CONFIG_HOME/agentmux/config"
}

# project NAME: a git project of its own for each agent.
project() {
	P="$T/$1"
	[ -d "$P" ] && return 0
	mkdir -p "$P"
	(cd "$P" && git init -q . && git config user.email t@x && git config user.name t &&
		echo hi >README && git add README && git commit -qm init) || exit 1
}

W=
fail() {
	echo "FAIL: $*"
	echo "--- screen:"
	screen_now
	exit 1
}
tui() { tmux -L "$TS" "$@"; }
screen_now() { tui capture-pane -p -t "$W" 2>/dev/null; }

# The latest session's field NAME, as agentmux sessions --json says.
latest() {
	"$AGENTMUX" sessions --json | python3 -c '
import json, sys
v = json.load(sys.stdin)
print(v[0][sys.argv[1]] if v else "")' "$1"
}
activity() { latest activity; }

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

# wait_screen TEXT SECONDS
wait_screen() {
	n=$(( $2 * 2 ))
	i=0
	while [ $i -lt $n ]; do
		case $(screen_now) in *"$1"*) return 0 ;; *AMX-EXITED-*) return 1 ;; esac
		sleep 0.5
		i=$((i + 1))
	done
	return 1
}

# start NAME BIN ENV COMMAND: agentmux run -a NAME in tmux window NAME, in NAME's project.
start() {
	W=$1
	project "$1"
	tui -f /dev/null new-session -d -s "$W" -x 120 -y 40 \
	    "cd '$P' && $3 PATH='$2:$PATH' '$AGENTMUX' run -a $1 -- $4; echo AMX-EXITED-\$?; sleep 600" ||
		fail "tmux could not start agentmux run -a $1"
}

# typed TEXT: as a user types it, then Enter.
typed() {
	tui send-keys -t "$W" -l "$1"
	sleep 0.3
	tui send-keys -t "$W" Enter
}

# Requests the stand-in holds or held (they mention agentmux-slow).
slow_seen() { grep -c '^{"slow": ' "$V/requests.jsonl" 2>/dev/null; }

# turn NAME: at its prompt it needs you; a task makes it working, still so while the stand-in holds
# its answer (3 s, past idle_after); the answer shown, it needs you again.
turn() {
	wait_activity "needs you" 10 || fail "$1 at its prompt is '$(activity)', not 'needs you'"
	n0=$(slow_seen)
	typed "say hello, agentmux-slow"
	[ "$(activity)" = working ] || wait_activity working 2 || fail "typing a task left $1 '$(activity)'"
	# (Before its request goes out, an agent may think quietly for longer than idle_after: that is
	# not what is checked here.)
	for _ in $(seq 300); do [ "$(slow_seen)" -gt "$n0" ] && break; sleep 0.1; done
	[ "$(slow_seen)" -gt "$n0" ] || fail "$1 did not send its task to the stand-in"
	sleep 1.5
	[ "$(activity)" = working ] || fail "$1 with its turn in flight is '$(activity)', not 'working'"
	wait_screen "$REPLY" 60 || fail "$1 did not show the stand-in's answer"
	wait_activity "needs you" 10 || fail "$1 after its turn is '$(activity)', not 'needs you'"
}

# ended NAME: the session is recorded as exited 0.
ended() {
	wait_screen AMX-EXITED- 30 || fail "$1 did not end"
	[ "$(latest state)" = "exited" ] && [ "$(latest exit_status)" = 0 ] ||
		fail "$1's session is not recorded 'exited 0': $("$AGENTMUX" sessions | head -n 3)"
	tui kill-session -t "$W"
}

# claude_seed: its onboarding done and the jail's key (the placeholder agentmux gives it) approved, as
# after a first start: left to itself, its onboarding sometimes offers the login methods instead of the
# key, and what it asks then differs from run to run. Its trust question stays.
claude_seed() {
	project claude
	ph=$(cd "$P" && ANTHROPIC_API_KEY=$KEY_A "$AGENTMUX" run -a claude -- sh -c 'printf %s "$ANTHROPIC_API_KEY"' \
	    </dev/null 2>"$T/seed.err")
	case $ph in ""|"$KEY_A") fail "the jail's ANTHROPIC_API_KEY is '$ph', not a placeholder: $(cat "$T/seed.err")" ;; esac
	python3 -c '
import json, sys
json.dump({"hasCompletedOnboarding": True, "theme": "dark",
           "customApiKeyResponses": {"approved": [sys.argv[1][-20:]], "rejected": []}},
          open(sys.argv[2], "w"))' "$ph" "$HOME/.claude.json"
}

# claude_start: through its first-start questions to its prompt; with "check", each question needs you.
claude_start() {
	start claude "$CLAUDE_BIN" "ANTHROPIC_API_KEY='$KEY_A'" claude
	asked=no
	ready=no
	for _ in $(seq 240); do
		case $(screen_now) in
		*"Detected a custom API key"*)
			if [ $asked = no ] && [ "$1" = check ]; then
				wait_activity "needs you" 5 ||
					fail "Claude Code asking about its key is '$(activity)', not 'needs you'"
				asked=yes
			fi
			tui send-keys -t "$W" Up; sleep 0.5; tui send-keys -t "$W" Enter; sleep 1 ;;
		*"Yes, I trust this folder"*)
			if [ $asked = no ] && [ "$1" = check ]; then
				wait_activity "needs you" 5 ||
					fail "Claude Code asking whether to trust the project is '$(activity)', not 'needs you'"
				asked=yes
			fi
			tui send-keys -t "$W" Enter; sleep 1 ;;
		*"Choose the text style"*|*"Press Enter to continue"*)
			tui send-keys -t "$W" Enter; sleep 1 ;;
		*"? for shortcuts"*) ready=yes; break ;;
		*AMX-EXITED-*) fail "agentmux run ended" ;;
		*) sleep 0.5 ;;
		esac
	done
	[ $ready = yes ] || fail "Claude Code's prompt did not come"
}

claude_states() {
	config 1000
	claude_seed
	claude_start check
	asked1=$asked
	turn "Claude Code"
	typed "/exit"
	ended "Claude Code"

	# Its permission question, with idle_after far off: only the profile's screen hint says it waits.
	config 600000
	claude_start nocheck
	typed "agentmux-run: touch amx-tool-ran"
	wait_screen "Do you want to proceed?" 60 || fail "Claude Code did not ask before running the stand-in's command"
	wait_activity "needs you" 5 ||
		fail "Claude Code asking for permission is '$(activity)', not 'needs you' (its needs_you_screen)"
	tui send-keys -t "$W" Enter
	[ "$(activity)" = working ] || wait_activity working 2 || fail "answering Claude Code left it '$(activity)'"
	wait_screen "$REPLY" 60 || fail "Claude Code did not show the stand-in's answer after its command"
	[ -e "$P/amx-tool-ran" ] || fail "Claude Code did not run the command it asked about"
	typed "/exit"
	ended "Claude Code"
	[ $asked1 = yes ] || fail "Claude Code asked neither about its key nor about the project"
	echo "claude: its first question and prompt need you, a task works," \
	    "its end needs you again; its permission question needs you at once, the answer works"
}

# codex_trust: its trust question, if drawn, answered (Enter), and gone.
codex_trust() {
	case $(screen_now) in
	*"Trust this folder?"*|*"Trust and continue"*) ;;
	*) return 1 ;;
	esac
	tui send-keys -t "$W" Enter
	for _ in $(seq 100); do
		case $(screen_now) in *"Trust this folder?"*|*"Trust and continue"*) sleep 0.2 ;; *) break ;; esac
	done
	return 0
}

# codex_shows TEXT: within 30 s its screen shows TEXT, a trust question drawn meanwhile answered.
codex_shows() {
	for _ in $(seq 60); do
		codex_trust && continue
		case $(screen_now) in *"$1"*) return 0 ;; *AMX-EXITED-*) return 1 ;; esac
		sleep 0.5
	done
	return 1
}

# codex_ready: its prompt drawn and its startup over for a while, no trust question over it (answered
# if it comes: seen drawn over the prompt seconds after it, where it took the task's Enter).
codex_ready() {
	still=0
	for _ in $(seq 300); do
		scr=$(screen_now)
		case $scr in
		*AMX-EXITED-*) fail "agentmux run ended" ;;
		*"Trust this folder?"*|*"Trust and continue"*) still=0; codex_trust ;;
		*"Waiting for startup"*) still=0; sleep 0.5 ;;
		*"? for shortcuts"*)
			# Ready for 2 s on end: a question drawn late mostly comes by then (codex_shows
			# answers one that comes later).
			still=$((still + 1))
			[ $still -ge 4 ] && return 0
			sleep 0.5 ;;
		# A task an earlier try typed, still in its box (its C-u went to a question drawn then).
		*"› agentmux-run: "*) still=0; tui send-keys -t "$W" C-u; sleep 0.5 ;;
		*) still=0; sleep 0.5 ;;
		esac
	done
	fail "Codex's prompt did not come"
}

# Requests the stand-in got that carry TEXT (a task reached it).
carried() { grep -c -F "$1" "$V/requests.jsonl" 2>/dev/null; }

# codex_task TASK: typed once its input box is ready, and again only when the screen shows it was
# lost (Codex started over a task typed during its startup, or dropped it): never while a question
# is drawn, which a second Enter would answer. Returns once Codex asks whether to run the command.
codex_task() {
	what=${1#agentmux-run: }
	for try in 1 2 3; do
		codex_ready
		n0=$(carried "$what")
		tui send-keys -t "$W" -l "$1"
		# The input box shows what was typed (and its "? for shortcuts" goes): else the keys went to
		# a screen being redrawn, and what did come is cleared before the next try. Its trust question
		# may still come now, later than 2 s after the prompt on a loaded machine: drawn over the box,
		# which keeps what was typed; answered, and the box looked at again.
		if ! codex_shows "$what"; then
			echo "  (codex: the typed task did not show, try $try)"
			tui send-keys -t "$W" C-u
			sleep 0.5
			continue
		fi
		sleep 0.3
		tui send-keys -t "$W" Enter
		k=0
		while [ $k -lt 240 ]; do
			k=$((k + 1))
			scr=$(screen_now)
			case $scr in
			*"Would you like to "*) return 0 ;;
			*"You approved"*) fail "Codex's approval question was answered before the test answered it" ;;
			*AMX-EXITED-*) fail "agentmux run ended" ;;
			# Asked over the task once it is sent (the task held until it is answered): answered once.
			*"Trust this folder?"*|*"Trust and continue"*) codex_trust; k=0; continue ;;
			esac
			sleep 0.5
			# Sent: its question is coming. Not sent in 30 s, nothing asked: looked at below.
			[ "$(carried "$what")" -gt "$n0" ] && continue
			[ $k -gt 60 ] && break
		done
		[ "$(carried "$what")" -gt "$n0" ] &&
			fail "Codex sent the task but did not ask before running the stand-in's command"
		echo "  (codex: the task was not sent, try $try: $(screen_now | grep -v '^ *$' | tail -n 4 | tr '\n' '|'))"
		# Whatever is left in its box goes before the next try.
		tui send-keys -t "$W" C-u
		sleep 0.5
	done
	fail "Codex did not take the task in 3 tries"
}

codex_states() {
	config 1000
	# A provider of its own reading CODEX_API_KEY: Codex's own API-key provider would first ask to sign
	# in (ChatGPT, a device code, or a key typed into its screen), and the key is never typed into a jail.
	mkdir -p "$HOME/.codex"
	cat >"$HOME/.codex/config.toml" <<-TOML
	model_provider = "agentmux"
	model = "gpt-5"
	[model_providers.agentmux]
	name = "OpenAI through agentmux"
	base_url = "https://api.openai.com/v1"
	env_key = "CODEX_API_KEY"
	wire_api = "responses"
	TOML
	start codex "$CODEX_BIN" "CODEX_API_KEY='$KEY_C'" codex
	wait_screen "Trust this folder?" 90 || fail "Codex did not ask whether to trust the project"
	wait_activity "needs you" 10 || fail "Codex asking about the project is '$(activity)', not 'needs you'"
	tui send-keys -t "$W" Enter
	wait_screen "? for shortcuts" 60 || fail "Codex's prompt did not come"
	turn Codex
	typed "/quit"
	ended Codex

	# Its approval question, with idle_after far off: only the profile's screen hint says it waits.
	config 600000
	# The stand-in's call asks to run outside Codex's sandbox: on-request, Codex asks the user first.
	start codex "$CODEX_BIN" "CODEX_API_KEY='$KEY_C'" "codex -a on-request"
	codex_task "agentmux-run: touch amx-tool-ran"
	wait_screen "Would you like to run the following command?" 5 ||
		fail "Codex did not ask before running the stand-in's command: $(tail -c 600 "$V/requests.jsonl")"
	wait_activity "needs you" 5 ||
		fail "Codex asking for approval is '$(activity)', not 'needs you' (its needs_you_screen)"
	tui send-keys -t "$W" Enter
	[ "$(activity)" = working ] || wait_activity working 2 || fail "answering Codex left it '$(activity)'"
	wait_screen "$REPLY" 60 || fail "Codex did not show the stand-in's answer after its command"
	[ -e "$P/amx-tool-ran" ] || fail "Codex did not run the command it asked about"
	typed "/quit"
	ended Codex
	echo "codex: its trust question and prompt need you, a task works, its end needs you again;" \
	    "its approval question needs you at once, the answer works"
}

opencode_states() {
	config 1000
	start opencode "$OPENCODE_BIN" "ANTHROPIC_API_KEY='$KEY_A'" "opencode -m anthropic/claude-sonnet-4-5"
	# Its plugin package is not in the stand-in's registry: it retries a while before its prompt, its
	# screen blank, in its event loop (reading its terminal as at its prompt): starting, never needs you.
	blank=0
	for _ in $(seq 300); do
		scr=$(screen_now)
		case $scr in *"Ask anything"*|*AMX-EXITED-*) break ;; esac
		if [ -z "$(printf %s "$scr" | tr -d ' \n')" ]; then
			act=$(activity)
			[ "$act" = "needs you" ] && fail "OpenCode starting behind a blank screen is 'needs you'"
			[ "$act" = starting ] && blank=$((blank + 1))
		fi
		sleep 0.5
	done
	wait_screen "Ask anything" 1 || fail "OpenCode's prompt did not come"
	[ $blank -gt 0 ] || echo "  (OpenCode's blank screen was not seen: nothing said of it)"
	turn OpenCode
	tui send-keys -t "$W" C-c
	sleep 1
	case $(screen_now) in *AMX-EXITED-*) ;; *) tui send-keys -t "$W" C-c ;; esac
	ended OpenCode
	echo "opencode: starting while its screen is blank, its prompt needs you, a task works, its end needs you again"
}

# AGENTMUX_TEST_AGENTS="claude codex" runs only those.
for a in ${AGENTMUX_TEST_AGENTS:-claude codex opencode}; do
	case $a in
	claude) bin=$CLAUDE_BIN ;;
	codex) bin=$CODEX_BIN ;;
	opencode) bin=$OPENCODE_BIN ;;
	*) echo "FAIL: AGENTMUX_TEST_AGENTS names '$a': claude, codex or opencode"; exit 1 ;;
	esac
	if [ -n "$bin" ]; then
		t0=$(date +%s)
		"${a}_states"
		echo "  ($a: $(( $(date +%s) - t0 )) s)"
	else
		echo "SKIP $a: not installed in $NPM_PREFIX"
	fi
done
