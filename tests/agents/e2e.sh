#!/bin/sh
# Real agents end to end: Claude Code, Codex, OpenCode, Gemini CLI, GitHub
# Copilot CLI, Qwen Code and Crush as npm installs them, jailed by agentmux run, talking through the proxy (connect_to) to a
# local stand-in for their vendors' APIs (vendor-api.py, its own test CA).
# The real key reaches the server, the jail holds a placeholder, requests
# are recorded, config changes land in the session's overlays, denials are
# shown; no request of an agent's start and first task is left for the
# dashboard to ask about; Claude Code's own screen, driven through a real
# tmux, starts with no prompt and does not ask about its key in a second
# session; agentmux doctor passes. As root, then as a throwaway user whose
# agents live under their own (hidden) HOME: an npm prefix and an nvm tree.
set -u
: "${AGENTMUX:?run through meson test (AGENTMUX is not set)}"
: "${AGENTMUX_SHARE:?run through meson test (AGENTMUX_SHARE is not set)}"
HERE=$(cd "$(dirname "$0")" && pwd)

# Installs are cached here across runs and builds; npm only runs when an
# agent is missing, each install bounded in time.
NPM_PREFIX=${AGENTMUX_TEST_NPM:-/var/tmp/agentmux-test-npm}
NPM_TIMEOUT=${AGENTMUX_TEST_NPM_TIMEOUT:-600}
# An install made by the acceptance checks is reused if ours is missing.
NPM_ALSO=/var/tmp/amx-acceptance-npm
REPLY=agentmux-fake-vendor-says-hello
KEY_A=sk-ant-api03-agentmux-test-real-key-0123456789
KEY_C=sk-proj-agentmux-test-real-codex-key-0123456789
KEY_G=AIzaSy-agentmux-test-real-gemini-key-0123456789
KEY_GH=github_pat_11AGENTMUX0test0real0copilot0token0123456789
KEY_D=sk-agentmux-test-real-dashscope-key-0123456789

PASSES=0
FAILS=0
WHO=root

ok() { PASSES=$((PASSES + 1)); }
bad() { FAILS=$((FAILS + 1)); echo "FAIL [$WHO] $*"; }
say() { echo "[$WHO] $*"; }
# timed CHECKS: runs them and says how long they took.
timed() {
	t0=$(date +%s)
	"$@"
	say "$1: $(( $(date +%s) - t0 )) s"
}

# ---- the agents, installed once ----

# Prints the bin dir holding a working BIN, installing PKG if need be.
npm_agent() {
	pkg=$1 bin=$2
	for d in "$NPM_PREFIX/bin" "$NPM_ALSO/bin"; do
		if [ -x "$d/$bin" ] && timeout 60 "$d/$bin" --version >/dev/null 2>&1; then
			echo "$d"
			return 0
		fi
	done
	command -v npm >/dev/null || { echo "npm is not installed"; return 1; }
	mkdir -p "$NPM_PREFIX" || { echo "cannot make $NPM_PREFIX"; return 1; }
	if ! timeout 30 npm view "$pkg" version >/dev/null 2>&1; then
		echo "the npm registry cannot be reached (npm view $pkg failed)"
		return 1
	fi
	# One installer at a time: the plain and the sanitizer build may overlap.
	if ! (flock 9 && timeout "$NPM_TIMEOUT" npm install -g --prefix "$NPM_PREFIX" \
	    --no-audit --no-fund --loglevel=error "$pkg") 9>"$NPM_PREFIX.lock" \
	    >"$NPM_PREFIX.$bin.log" 2>&1; then
		why=$(grep -m 1 -E '^npm error (Error|Installation)|ENOTFOUND|ETIMEDOUT' "$NPM_PREFIX.$bin.log")
		echo "npm install $pkg failed or took over ${NPM_TIMEOUT}s: ${why:-$(tail -n 2 "$NPM_PREFIX.$bin.log" | tr '\n' ' ')}"
		return 1
	fi
	if timeout 60 "$NPM_PREFIX/bin/$bin" --version >/dev/null 2>&1; then
		echo "$NPM_PREFIX/bin"
		return 0
	fi
	echo "$pkg installed, but $bin --version fails"
	return 1
}

# The agents' bin dirs, looked for (and installed) side by side: each
# --version starts a node, seconds each under load, and one npm install
# at a time (flock) whatever the order.
find_agents() {
	CLAUDE_BIN= CODEX_BIN= OPENCODE_BIN= GEMINI_BIN= COPILOT_BIN= QWEN_BIN= CRUSH_BIN=
	F=$(mktemp -d /tmp/amx-agents-find.XXXXXX) || exit 1
	# Its npm package downloads the binary from GitHub's releases when
	# installed (crush): where only the npm registry is reachable, it skips.
	for a in @anthropic-ai/claude-code=claude @openai/codex=codex \
	    opencode-ai=opencode @google/gemini-cli=gemini @github/copilot=copilot \
	    @qwen-code/qwen-code=qwen @charmland/crush=crush; do
		(if r=$(npm_agent "${a%=*}" "${a#*=}"); then echo "$r" >"$F/${a#*=}"
		else echo "SKIP ${a#*=}: $r" >"$F/${a#*=}.skip"; fi) &
	done
	wait
	for bin in claude codex opencode gemini copilot qwen crush; do
		[ -e "$F/$bin.skip" ] && cat "$F/$bin.skip"
		[ -e "$F/$bin" ] || continue
		d=$(cat "$F/$bin")
		case $bin in
		claude) CLAUDE_BIN=$d ;; codex) CODEX_BIN=$d ;;
		opencode) OPENCODE_BIN=$d ;; gemini) GEMINI_BIN=$d ;;
		copilot) COPILOT_BIN=$d ;; qwen) QWEN_BIN=$d ;; crush) CRUSH_BIN=$d ;;
		esac
	done
	rm -rf "$F"
}

# ---- the stand-in vendor server ----

vendor_start() {
	V=$(mktemp -d /tmp/amx-vendor.XXXXXX) || exit 1
	python3 "$HERE/vendor-api.py" "$V" >"$V/server.log" 2>&1 &
	VPID=$!
	for _ in $(seq 200); do [ -s "$V/port" ] && break; sleep 0.05; done
	[ -s "$V/port" ] || { echo "the vendor stand-in did not start: $(cat "$V/server.log")"; exit 1; }
	VPORT=$(cat "$V/port")
	chmod -R a+rX "$V"
	: >"$V/requests.jsonl"
	chmod 666 "$V/requests.jsonl"
}

vendor_stop() {
	kill "$VPID" 2>/dev/null
	wait "$VPID" 2>/dev/null
	rm -rf "$V"
}

# Requests the stand-in saw since the mark, as JSON lines.
vendor_mark() { VMARK=$(wc -l <"$V/requests.jsonl"); }
vendor_seen() { tail -n +"$((VMARK + 1))" "$V/requests.jsonl"; }

# ---- one user's test bed ----

# HOME is $1 if given (the user's, with agents in it), else a fresh one.
setup() {
	T=$(mktemp -d "${TMPDIR:-/tmp}/amx-agents-$WHO.XXXXXX") || exit 1
	chmod 755 "$T"
	export HOME="${1:-$T/home}"
	export XDG_CONFIG_HOME="$T/xdg/config" XDG_DATA_HOME="$T/xdg/data"
	export XDG_RUNTIME_DIR="$T/xdg/run"
	mkdir -p "$HOME" "$XDG_CONFIG_HOME/agentmux" "$XDG_DATA_HOME" "$XDG_RUNTIME_DIR"
	chmod 700 "$XDG_RUNTIME_DIR"
	{
		echo "[proxy]"
		for h in api.anthropic.com platform.claude.com api.openai.com \
		    chatgpt.com models.opencode.ai generativelanguage.googleapis.com \
		    api.github.com api.individual.githubcopilot.com \
		    dashscope.aliyuncs.com; do
			echo "connect_to = $h:443:127.0.0.1:$VPORT"
		done
		echo "upstream_ca = $V/ca.pem"
	} >"$XDG_CONFIG_HOME/agentmux/config"
	P="$HOME/proj"
	mkdir -p "$P"
	(cd "$P" && git init -q . && git config user.email t@x && git config user.name t &&
	    echo hi >README && git add README && git commit -qm init) || exit 1
}

cleanup() { rm -rf "$T"; }

# Runs agentmux run in the project with the agents' dirs on PATH; RC, OUT (stdout), ERR.
arun() {
	(cd "$P" && PATH="$APATH:$PATH" timeout 180 "$AMX" run "$@" </dev/null \
	    >"$T/out" 2>"$T/err")
	RC=$?
	OUT=$(cat "$T/out")
	ERR=$(cat "$T/err")
}

last_session() {
	"$AMX" sessions --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])'
}

# The session's requests: "METHOD HOST PATH STATUS DECISION" lines.
requests_of() {
	"$AMX" requests "$1" --json | python3 -c '
import json, sys
for r in json.load(sys.stdin):
    print(r["method"], r["host"], r["path"], r["status"], r["decision"])'
}

# The stand-in saw HEADER = VALUE on a request matching PATH-REGEX.
seen_header() {
	vendor_seen | python3 -c '
import json, re, sys
path, header, value = sys.argv[1:4]
hit = [e for e in map(json.loads, sys.stdin) if "path" in e and
       re.search(path, e["path"]) and e["headers"].get(header) == value]
sys.exit(0 if hit else 1)' "$1" "$2" "$3"
}

# Requests of session $1 that no rule decided: the dashboard would have
# asked about each (agentmux run denies them and lists them).
undecided_of() {
	"$AMX" requests "$1" --json | python3 -c '
import json, sys
for r in json.load(sys.stdin):
    if r["rule"] is None and r["decision"] == "deny":
        print(r["method"], r["host"], r["path"])'
}

# Session $1 (agent $2) left nothing for the dashboard to ask about.
no_undecided() {
	u=$(undecided_of "$1")
	[ -z "$u" ] && ok || bad "$2: requests no rule decided (the dashboard would ask): $u"
}

# Any request to the stand-in carried VALUE anywhere (headers or body)?
seen_anywhere() {
	vendor_seen | grep -qF -- "$1"
}

# The tool result Claude Code sent back, or nothing.
seen_tool_result() {
	vendor_seen | python3 -c '
import json, sys
for e in map(json.loads, sys.stdin):
    for r in e.get("tool_result", []):
        print(r.strip())'
}

# ---- Claude Code ----

claude_checks() {
	[ -n "$CLAUDE_BIN" ] || return 0
	vendor_mark
	ANTHROPIC_API_KEY=$KEY_A arun -a claude -- claude -p hello
	case $OUT in *"$REPLY"*) ok ;; *) bad "claude -p: exit $RC, no reply: $OUT $ERR" ;; esac
	[ "$RC" = 0 ] && ok || bad "claude -p exited $RC: $ERR"
	seen_header '^/v1/messages' x-api-key "$KEY_A" && ok ||
	    bad "the stand-in never got the real key in x-api-key"
	id=$(last_session)
	reqs=$(requests_of "$id")
	case $reqs in *"POST api.anthropic.com /v1/messages"*" 200 allow"*) ok ;;
	*) bad "claude's requests are not recorded: $reqs" ;; esac
	no_undecided "$id" "claude -p"
	cd_out=$("$AMX" confdiff "$id" 2>&1)
	case $cd_out in *"added $HOME/.claude.json"*) ok ;;
	*) bad "~/.claude.json was not captured: $cd_out" ;; esac
	case $cd_out in *"added $HOME/.claude/projects/"*) ok ;;
	*) bad "~/.claude/ was not captured: $(echo "$cd_out" | grep -E '^(added|modified|deleted) ')" ;; esac
	[ ! -e "$HOME/.claude.json" ] && [ ! -e "$HOME/.claude" ] && ok ||
	    bad "claude wrote to the host's HOME"
	# Kept, the next session starts from it: an existing file is shown and saved again.
	"$AMX" confdiff "$id" --apply >/dev/null 2>&1
	grep -q '"userID"' "$HOME/.claude.json" 2>/dev/null && ok ||
	    bad "confdiff --apply did not write ~/.claude.json"

	# What Claude Code's own Bash tool sees inside the jail: a placeholder.
	# Its ~/.claude.json exists now (an old one: it saves it by rename).
	echo '{"agentmuxMark": "kept"}' >"$HOME/.claude.json"
	vendor_mark
	ANTHROPIC_API_KEY=$KEY_A arun -a claude -- claude -p \
	    "agentmux-run: printenv ANTHROPIC_API_KEY" --allowedTools Bash
	ph=$(seen_tool_result)
	case $ph in
	"") bad "claude's Bash tool result never came back: exit $RC: $OUT $ERR" ;;
	*"$KEY_A"*) bad "the jail held the real key: $ph" ;;
	sk-ant-*) ok ;;
	*) bad "the jail's ANTHROPIC_API_KEY is not a placeholder: $ph" ;;
	esac
	seen_header '^/v1/messages' x-api-key "$KEY_A" && ok ||
	    bad "the second run's key was not swapped in"
	id=$(last_session)
	cd_out=$("$AMX" confdiff "$id" "$HOME/.claude.json" 2>&1)
	case $cd_out in *"modified $HOME/.claude.json"*'+  "agentmuxMark": "kept"'*'"userID"'*) ok ;;
	*) bad "an existing ~/.claude.json was not shown or its save not captured: $cd_out" ;; esac

	# A denied model host: Claude calls it an authentication failure;
	# agentmux says what it denied.
	ANTHROPIC_API_KEY=$KEY_A arun -a claude --deny api.anthropic.com:443 -- claude -p hello
	[ "$RC" != 0 ] && ok || bad "claude succeeded with its host denied"
	case $ERR in *"agentmux: denied api.anthropic.com:443 ("*"deny api.anthropic.com:443"*) ok ;;
	*) bad "agentmux run did not show the denial: $OUT $ERR" ;; esac
}

# ---- Codex ----

codex_checks() {
	[ -n "$CODEX_BIN" ] || return 0
	vendor_mark
	CODEX_API_KEY=$KEY_C arun -a codex -- codex exec --skip-git-repo-check hello
	case $OUT in *"$REPLY"*) ok ;; *) bad "codex exec: exit $RC, no reply: $OUT $ERR" ;; esac
	[ "$RC" = 0 ] && ok || bad "codex exec exited $RC: $ERR"
	seen_header '^/v1/responses' authorization "Bearer $KEY_C" && ok ||
	    bad "the stand-in never got the real key from codex"
	id=$(last_session)
	reqs=$(requests_of "$id")
	case $reqs in *"api.openai.com /v1/responses 101 allow"*|*"POST api.openai.com /v1/responses 200 allow"*) ok ;;
	*) bad "codex's model requests are not recorded: $reqs" ;; esac
	no_undecided "$id" codex
	cd_out=$("$AMX" confdiff "$id" 2>&1)
	case $cd_out in *"added $HOME/.codex/sessions/"*) ok ;;
	*) bad "~/.codex/ was not captured: $(echo "$cd_out" | grep -E '^(added|modified|deleted) ')" ;; esac
	CODEX_API_KEY=$KEY_C arun -a codex -- sh -c 'printf %s "$CODEX_API_KEY"'
	case $OUT in "$KEY_C"|"") bad "the jail's CODEX_API_KEY: '$OUT'" ;; *) ok ;; esac
}

# ---- OpenCode ----

opencode_checks() {
	[ -n "$OPENCODE_BIN" ] || return 0
	vendor_mark
	ANTHROPIC_API_KEY=$KEY_A arun -a opencode -- opencode run \
	    -m anthropic/claude-sonnet-4-5 hello
	case $OUT in *"$REPLY"*) ok ;; *) bad "opencode run: exit $RC, no reply: $OUT $ERR" ;; esac
	[ "$RC" = 0 ] && ok || bad "opencode run exited $RC: $ERR"
	seen_header '^/v1/messages' x-api-key "$KEY_A" && ok ||
	    bad "the stand-in never got the real key from opencode"
	id=$(last_session)
	reqs=$(requests_of "$id")
	case $reqs in *"GET models.opencode.ai /api.json 200 allow"*) ok ;;
	*) bad "opencode's model list request is not recorded: $reqs" ;; esac
	case $reqs in *"POST api.anthropic.com /v1/messages 200 allow"*) ok ;;
	*) bad "opencode's model requests are not recorded: $reqs" ;; esac
	no_undecided "$id" opencode
	cd_out=$("$AMX" confdiff "$id" 2>&1)
	case $cd_out in *"added $HOME/.local/share/opencode/"*) ok ;;
	*) bad "~/.local/share/opencode was not captured: $(echo "$cd_out" | grep -E '^(added|modified|deleted) ')" ;; esac
}

# ---- Gemini CLI ----

gemini_checks() {
	[ -n "$GEMINI_BIN" ] || return 0
	vendor_mark
	GEMINI_API_KEY=$KEY_G arun -a gemini -- gemini --skip-trust -p hello
	case $OUT in *"$REPLY"*) ok ;; *) bad "gemini -p: exit $RC, no reply: $OUT $ERR" ;; esac
	[ "$RC" = 0 ] && ok || bad "gemini -p exited $RC: $ERR"
	seen_header 'streamGenerateContent' x-goog-api-key "$KEY_G" && ok ||
	    bad "the stand-in never got the real key from gemini"
	id=$(last_session)
	reqs=$(requests_of "$id")
	case $reqs in *"POST generativelanguage.googleapis.com /v1beta/models/"*":streamGenerateContent?alt=sse 200 allow"*) ok ;;
	*) bad "gemini's model requests are not recorded: $reqs" ;; esac
	no_undecided "$id" gemini
	cd_out=$("$AMX" confdiff "$id" 2>&1)
	case $cd_out in *"added $HOME/.gemini/"*) ok ;;
	*) bad "~/.gemini/ was not captured: $(echo "$cd_out" | grep -E '^(added|modified|deleted) ')" ;; esac
}

# ---- Claude Code's own screen, through a real tmux ----

tui() { tmux -L "$TS" "$@"; }
screen_now() { tui capture-pane -p -t amx 2>/dev/null; }

# Sends KEY and waits (10 s at most) for the screen to change.
tui_key() {
	before=$(screen_now)
	tui send-keys -t amx "$@"
	for _ in $(seq 40); do
		[ "$(screen_now)" != "$before" ] && return 0
		sleep 0.25
	done
}

# Answers Claude Code's first-start questions until its prompt is ready
# (120 s at most). $1: what to do when it asks about the key ("yes": pick
# Yes; else it is a failure). ASKED_KEY says whether it asked.
tui_until_ready() {
	ASKED_KEY=no
	for _ in $(seq 240); do
		scr=$(screen_now)
		case $scr in
		*"Detected a custom API key"*)
			ASKED_KEY=yes
			[ "$1" = yes ] || return 1
			tui_key Up; tui_key Enter ;;
		*"Choose the text style"*|*"Press Enter to continue"*|*"Yes, I trust this folder"*)
			tui_key Enter ;;
		*"? for shortcuts"*) return 0 ;;
		*AMX-EXITED-*) return 1 ;;
		*) sleep 0.5 ;;
		esac
	done
	return 1
}

# Waits (60 s at most) for TEXT on the screen.
tui_wait() {
	for _ in $(seq 120); do
		case $(screen_now) in *"$1"*) return 0 ;; esac
		sleep 0.5
	done
	return 1
}

# One interactive session: start, answer, one task, /exit. $1 as for
# tui_until_ready; prints nothing, sets ASKED_KEY, and TUI_OK=yes on success.
claude_tui_session() {
	TUI_OK=no
	tui kill-server 2>/dev/null
	tui -f /dev/null new-session -d -s amx -x 120 -y 40 \
	    "cd '$P' && ANTHROPIC_API_KEY='$KEY_A' PATH='$APATH:$PATH' '$AMX' run -a claude -- claude; echo AMX-EXITED-\$?; sleep 600" ||
	    return 1
	if tui_until_ready "$1"; then
		tui send-keys -t amx -l "say hello"
		sleep 0.5
		tui_key Enter
		if tui_wait "$REPLY"; then
			tui send-keys -t amx -l "/exit"
			sleep 0.5
			tui_key Enter
			tui_wait AMX-EXITED-0 && TUI_OK=yes
		fi
	fi
	[ "$TUI_OK" = yes ] || TUI_SCREEN=$(screen_now)
	tui kill-server 2>/dev/null
}

claude_tui_checks() {
	[ -n "$CLAUDE_BIN" ] || return 0
	# Once, as root: the user pass checks the agents under a user's own
	# HOME, and proxy-placeholder another user's placeholders.
	[ "$WHO" = root ] || return 0
	if ! command -v tmux >/dev/null; then
		say "skip: Claude Code's screen (tmux is not installed)"
		return 0
	fi
	TS="amx-agents-$$-$WHO"
	# First start: its questions are its own; agentmux asks nothing.
	claude_tui_session yes
	[ "$TUI_OK" = yes ] && ok ||
	    bad "claude's first interactive start did not answer: $TUI_SCREEN"
	[ "$ASKED_KEY" = yes ] && ok ||
	    bad "claude did not ask about its key on its first start (the test no longer shows item 1)"
	id=$(last_session)
	no_undecided "$id" "claude's first interactive start"
	reqs=$(requests_of "$id")
	case $reqs in *"GET platform.claude.com /v1/oauth/hello 200 allow"*) ok ;;
	*) bad "claude's OAuth hello was not allowed by its profile: $reqs" ;; esac
	# Its approval of the key is kept in ~/.claude.json: the next session
	# has the same placeholder, so it does not ask again.
	"$AMX" confdiff "$id" --apply >/dev/null 2>&1
	grep -q customApiKeyResponses "$HOME/.claude.json" 2>/dev/null && ok ||
	    bad "claude's approval of the key was not kept in ~/.claude.json"
	claude_tui_session no
	[ "$ASKED_KEY" = no ] && ok ||
	    bad "claude asked about its key again in the next session (its placeholder changed?)"
	[ "$TUI_OK" = yes ] && ok ||
	    bad "claude's second interactive session did not answer: $TUI_SCREEN"
	no_undecided "$(last_session)" "claude's second interactive session"
}

# ---- GitHub Copilot CLI ----

copilot_checks() {
	[ -n "$COPILOT_BIN" ] || return 0
	vendor_mark
	# The stand-in lists one model; copilot picks none of its own defaults.
	COPILOT_GITHUB_TOKEN=$KEY_GH arun -a copilot -- copilot -p hello \
	    --allow-all-tools --model test-model
	case $OUT in *"$REPLY"*) ok ;; *) bad "copilot -p: exit $RC, no reply: $OUT $ERR" ;; esac
	[ "$RC" = 0 ] && ok || bad "copilot -p exited $RC: $ERR"
	seen_header '^/chat/completions' authorization "Bearer $KEY_GH" && ok ||
	    bad "the stand-in never got the real token from copilot"
	id=$(last_session)
	reqs=$(requests_of "$id")
	case $reqs in *"POST api.individual.githubcopilot.com /chat/completions 200 allow"*) ok ;;
	*) bad "copilot's model requests are not recorded: $reqs" ;; esac
	case $reqs in *"GET api.github.com /copilot_internal/user 200 allow"*) ok ;;
	*) bad "copilot's user request is not recorded: $reqs" ;; esac
	no_undecided "$id" copilot
	cd_out=$("$AMX" confdiff "$id" 2>&1)
	case $cd_out in *"added $HOME/.copilot/"*) ok ;;
	*) bad "~/.copilot/ was not captured: $(echo "$cd_out" | grep -E '^(added|modified|deleted) ')" ;; esac
	COPILOT_GITHUB_TOKEN=$KEY_GH arun -a copilot -- sh -c 'printf %s "$COPILOT_GITHUB_TOKEN"'
	case $OUT in "$KEY_GH"|"") bad "the jail's COPILOT_GITHUB_TOKEN: '$OUT'" ;; github_pat_*) ok ;;
	*) bad "the jail's COPILOT_GITHUB_TOKEN lost its prefix: '$OUT'" ;; esac
}

# ---- Qwen Code ----

qwen_checks() {
	[ -n "$QWEN_BIN" ] || return 0
	vendor_mark
	DASHSCOPE_API_KEY=$KEY_D arun -a qwen -- qwen -p hello --auth-type openai \
	    --model test-model
	case $OUT in *"$REPLY"*) ok ;; *) bad "qwen -p: exit $RC, no reply: $OUT $ERR" ;; esac
	[ "$RC" = 0 ] && ok || bad "qwen -p exited $RC: $ERR"
	seen_header 'chat/completions' authorization "Bearer $KEY_D" && ok ||
	    bad "the stand-in never got the real key from qwen"
	id=$(last_session)
	reqs=$(requests_of "$id")
	case $reqs in *"POST dashscope.aliyuncs.com /compatible-mode/v1/chat/completions 200 allow"*) ok ;;
	*) bad "qwen's model requests are not recorded: $reqs" ;; esac
	no_undecided "$id" qwen
	cd_out=$("$AMX" confdiff "$id" 2>&1)
	case $cd_out in *"added $HOME/.qwen/"*) ok ;;
	*) bad "~/.qwen/ was not captured: $(echo "$cd_out" | grep -E '^(added|modified|deleted) ')" ;; esac
	DASHSCOPE_API_KEY=$KEY_D arun -a qwen -- sh -c 'printf %s "$OPENAI_API_KEY"'
	case $OUT in "$KEY_D"|"") bad "the jail's OPENAI_API_KEY for qwen: '$OUT'" ;; *) ok ;; esac
}

# ---- Crush (where its install can download its binary) ----

crush_checks() {
	[ -n "$CRUSH_BIN" ] || return 0
	vendor_mark
	ANTHROPIC_API_KEY=$KEY_A arun -a crush -- crush run hello
	case $OUT in *"$REPLY"*) ok ;; *) bad "crush run: exit $RC, no reply: $OUT $ERR" ;; esac
	seen_header '^/v1/messages' x-api-key "$KEY_A" && ok ||
	    bad "the stand-in never got the real key from crush"
	no_undecided "$(last_session)" crush
}

doctor_checks() {
	# doctor proves the boundary by running this binary as a probe in real
	# jails; a sanitizer runtime cannot run there (no ptrace, and its
	# terabytes of shadow memory exceed the memory limit), so a sanitizer
	# build checks doctor's own side only: it ends cleanly, the machine holds.
	if ldd "$AMX" 2>/dev/null | grep -q 'libasan\|libtsan\|libubsan'; then
		timeout 120 "$AMX" doctor --json >"$T/doctor.json" 2>&1
		rc=$?
		python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
machine = [c for c in d["checks"] if c["name"] in ("user namespaces", "seccomp",
           "Landlock", "overlayfs", "git", "data dir", "CA", "config")]
assert len(machine) == 8 and all(c["ok"] for c in machine), machine
' "$T/doctor.json" && [ "$rc" -le 1 ] && ok ||
		    bad "doctor (sanitizer build) exited $rc: $(cat "$T/doctor.json")"
		return
	fi
	out=$(timeout 120 "$AMX" doctor 2>&1)
	rc=$?
	[ "$rc" = 0 ] && ok || bad "doctor exited $rc: $(echo "$out" | grep -A1 '✗')"
	case $out in *"everything holds"*) ok ;; *) bad "doctor: $out" ;; esac
}

# agentmux agents: where each agent was found, what it may reach.
agents_checks() {
	js=$(PATH="$APATH:$PATH" "$AMX" agents --json 2>&1)
	printf '%s' "$js" | python3 -c '
import json, os, sys
want = dict(a.split("=", 1) for a in sys.argv[1:] if a.split("=", 1)[1])
agents = {a["name"]: a for a in json.load(sys.stdin)}
for name in ("claude", "codex", "opencode", "gemini", "aider", "shell",
             "copilot", "qwen", "crush"):
    assert name in agents, "profile %s is not listed" % name
for name, bindir in want.items():
    a = agents[name]
    assert a["found"], (name, a)
    assert os.path.realpath(a["path"]) == a["path"], a
c = agents["claude"]
assert "~/.claude.json" in c["config_dirs"] and "~/.claude" in c["config_dirs"], c
assert any(s["env"] == "ANTHROPIC_API_KEY" and s["hosts"] == ["api.anthropic.com"]
           for s in c["secrets"]), c
assert "allow api.anthropic.com:443" in c["rules"], c
assert "deny ab.chatgpt.com" in agents["codex"]["rules"], agents["codex"]
assert "deny platform.claude.com" in c["rules"], c
p = agents["copilot"]
assert any(s["env"] == "COPILOT_GITHUB_TOKEN" and "api.github.com" in s["hosts"]
           for s in p["secrets"]), p
assert "~/.copilot" in p["config_dirs"], p
q = agents["qwen"]
assert any(s["env"] == "OPENAI_API_KEY" and
           s["hosts"] == ["dashscope.aliyuncs.com", "dashscope-intl.aliyuncs.com"]
           for s in q["secrets"]), q
assert "deny data.charm.land" in agents["crush"]["rules"], agents["crush"]
' claude="$CLAUDE_BIN" codex="$CODEX_BIN" opencode="$OPENCODE_BIN" \
	    gemini="$GEMINI_BIN" copilot="$COPILOT_BIN" qwen="$QWEN_BIN" \
	    crush="$CRUSH_BIN" && ok ||
	    bad "agents --json: $js"
}

# A profile's wall_clock stops an agent that would retry forever.
wall_clock_checks() {
	cat >>"$XDG_CONFIG_HOME/agentmux/config" <<-CONF
	[agent forever]
	command = sleep 600
	wall_clock = 1s
	CONF
	arun -a forever
	[ "$RC" = 143 ] && ok || bad "wall_clock: exit $RC, expected 143: $ERR"
	case $ERR in *"reached its wall_clock limit of 1s"*) ok ;;
	*) bad "wall_clock: no notice: $ERR" ;; esac
}

checks() {
	timed agents_checks
	timed wall_clock_checks
	timed doctor_checks
	timed claude_checks
	timed claude_tui_checks
	timed codex_checks
	timed opencode_checks
	timed gemini_checks
	timed copilot_checks
	timed qwen_checks
	timed crush_checks
}

# ---- the unprivileged pass: agents under the user's own HOME ----

# Shows package tree SRC at DEST (hard links: root may link anything).
place() {
	mkdir -p "$(dirname "$2")"
	cp -al "$1" "$2" 2>/dev/null || cp -a "$1" "$2"
}

# The user's HOME, made by root: claude in an npm prefix (~/.npm-global),
# codex with a node of its own from an nvm tree (~/.nvm), as users have them.
user_home() {
	UH=$(mktemp -d /tmp/amx-agents-home.XXXXXX) || exit 1
	UPATH=
	if [ -n "$CLAUDE_BIN" ]; then
		pre=$UH/.npm-global
		place "$(dirname "$(dirname "$(readlink -f "$CLAUDE_BIN/claude")")")" \
		    "$pre/lib/node_modules/@anthropic-ai/claude-code"
		mkdir -p "$pre/bin"
		ln -s ../lib/node_modules/@anthropic-ai/claude-code/bin/claude.exe "$pre/bin/claude"
		UPATH=$pre/bin
	fi
	if [ -n "$CODEX_BIN" ]; then
		nvm=$UH/.nvm/versions/node/v20
		mkdir -p "$nvm/bin"
		place "$(readlink -f "$(command -v node)")" "$nvm/bin/node"
		place "$(dirname "$(dirname "$(readlink -f "$CODEX_BIN/codex")")")" \
		    "$nvm/lib/node_modules/@openai/codex"
		ln -s ../lib/node_modules/@openai/codex/bin/codex.js "$nvm/bin/codex"
		UPATH=$UPATH${UPATH:+:}$nvm/bin
	fi
	[ -n "$OPENCODE_BIN" ] && UPATH=$UPATH${UPATH:+:}$OPENCODE_BIN
	for d in "$GEMINI_BIN" "$COPILOT_BIN" "$QWEN_BIN" "$CRUSH_BIN"; do
		[ -n "$d" ] && UPATH=$UPATH${UPATH:+:}$d
	done
	chown "$U" "$UH"
	chmod 700 "$UH"
}

stage() {
	S=$(mktemp -d /tmp/amx-agents-stage.XXXXXX) || exit 1
	mkdir -p "$S/bin"
	cp "$AGENTMUX" "$S/bin/agentmux"
	# (and the whole program it runs, beside it)
	cp "${AGENTMUX%/*}/agentmux-full" "$S/bin/agentmux-full"
	cp -r "$AGENTMUX_SHARE" "$S/share"
	cp "$HERE/e2e.sh" "$HERE/vendor-api.py" "$S/"
	chmod -R a+rX "$S"
	chmod 755 "$S"
}

as_user() {
	if [ -n "${AMX_NO_USER:-}" ]; then
		echo "the unprivileged pass: not run (AMX_NO_USER is set; CI's sanitizer pass runs the root pass alone)"
		return 0
	fi
	if ! command -v useradd >/dev/null || ! command -v setpriv >/dev/null; then
		echo "SKIP: the unprivileged pass needs useradd and setpriv"
		return 0
	fi
	U="amxa$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')"
	useradd -M -N -d /nonexistent -s /bin/sh "$U" || return 1
	stage
	user_home
	rc=0
	setpriv --reuid="$U" --regid="$(id -g "$U")" --init-groups \
	    env -i PATH="$PATH" AGENTMUX="$S/bin/agentmux" AGENTMUX_SHARE="$S/share" \
	    TMPDIR=/tmp V="$V" VPORT="$VPORT" UH="$UH" UPATH="$UPATH" \
	    CLAUDE_BIN="$CLAUDE_BIN" CODEX_BIN="$CODEX_BIN" \
	    OPENCODE_BIN="$OPENCODE_BIN" GEMINI_BIN="$GEMINI_BIN" \
	    COPILOT_BIN="$COPILOT_BIN" QWEN_BIN="$QWEN_BIN" CRUSH_BIN="$CRUSH_BIN" \
	    sh "$S/e2e.sh" --as-user || rc=1
	userdel "$U" 2>/dev/null
	rm -rf "$S" "$UH"
	return $rc
}

AMX=$AGENTMUX
if [ "${1:-}" = --as-user ]; then
	WHO=user
	# The agents are found under the user's HOME, which the jail hides.
	setup "$UH"
	APATH=$UPATH
	checks
	cleanup
	say "$PASSES passed, $FAILS failed"
	[ "$FAILS" = 0 ]
	exit
fi

for tool in python3 openssl git timeout flock; do
	command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed"; exit 77; }
done
timed find_agents
vendor_start
trap vendor_stop EXIT
setup
APATH=$CLAUDE_BIN:$CODEX_BIN:$OPENCODE_BIN:$GEMINI_BIN:$COPILOT_BIN:$QWEN_BIN:$CRUSH_BIN
checks
cleanup
say "$PASSES passed, $FAILS failed"
rootfails=$FAILS
if [ "$(id -u)" = 0 ]; then
	as_user || rootfails=$((rootfails + 1))
fi
[ "$rootfails" = 0 ] || exit 1
if [ -z "$CLAUDE_BIN$CODEX_BIN$OPENCODE_BIN$GEMINI_BIN$COPILOT_BIN$QWEN_BIN$CRUSH_BIN" ]; then
	echo "SKIP: no agent could be installed (see above); only doctor ran"
	exit 77
fi
exit 0
