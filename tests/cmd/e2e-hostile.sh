#!/usr/bin/env bash
# Every command that prints what came out of a jail, after a real jailed
# agent made hostile file names (OSC 52 clipboard and OSC 2 title
# sequences, a C1 CSI, a right-to-left override), hostile content, a nested
# repository with a hostile name and requests with hostile paths and
# headers: the raw bytes each command prints hold no control character, the
# names are there quoted, and JSON stays valid JSON. As root and as a
# throwaway unprivileged user.
set -u
AMX=${AGENTMUX:?AGENTMUX must name the binary}
HERE=$(cd "$(dirname "$0")" && pwd)
HOSTILE_LIB=$HERE/hostile-lib.sh
# shellcheck source=hostile-lib.sh
. "$HOSTILE_LIB"
for t in python3 git script; do
	command -v $t >/dev/null || { echo "SKIP: $t is missing"; exit 77; }
done
[ -x /usr/bin/python3 ] || { echo "SKIP: /usr/bin/python3 (for the jail) is missing"; exit 77; }

fails=0
passes=0
WHO=${WHO:-root}
ok() { passes=$((passes + 1)); }
bad() { echo "FAIL [$WHO]: $*"; fails=$((fails + 1)); }

# Checks the output of one command (in FILE): clean, and showing NEEDLE.
check() {
	name=$1 file=$2 needle=$3
	if ! why=$(hostile_clean "$file" 2>&1); then
		bad "$name printed a raw control character: $why"
		return
	fi
	if [ -n "$needle" ] && ! grep -qF -- "$needle" "$file"; then
		bad "$name does not show $needle: $(head -c 2000 "$file")"
		return
	fi
	ok
}

# Runs agentmux ARGS... on a terminal (script(1) gives it a pty), output in FILE.
on_tty() {
	file=$1
	shift
	NO_COLOR=1 script -qec "$(printf '%q ' "$AMX" "$@")" /dev/null \
	    </dev/null >"$file" 2>&1
}

checks() {
	T=$(mktemp -d "${TMPDIR:-/tmp}/amx-hostile-$WHO.XXXXXX") || exit 1
	chmod 755 "$T"
	export HOME=$T/home
	export XDG_CONFIG_HOME=$T/config XDG_DATA_HOME=$T/data XDG_RUNTIME_DIR=$T/run
	mkdir -p "$XDG_CONFIG_HOME/agentmux" "$XDG_DATA_HOME" "$XDG_RUNTIME_DIR" \
	    "$HOME/proj" "$HOME/.hostile"
	chmod 700 "$XDG_RUNTIME_DIR"
	cat >"$XDG_CONFIG_HOME/agentmux/config" <<-EOF
	[agent hostile]
	command = sh
	config_dir = ~/.hostile
	EOF
	P=$HOME/proj
	(cd "$P" && git init -q . && git config user.email t@x &&
	    git config user.name t && echo hi >README && git add README &&
	    git commit -qm init) || { bad "cannot make the project"; return; }
	hostile_agent_script >"$P/agent.sh"

	(cd "$P" && timeout 300 "$AMX" run -a hostile --on-unknown deny -- sh agent.sh) \
	    >"$T/run.out" 2>"$T/run.err" </dev/null
	check "run (stderr: denied summary, alerts)" "$T/run.err" 'evil.test:80'
	check "run (stdout)" "$T/run.out" ""

	"$AMX" undo last --dry-run >"$T/undo" 2>&1
	check "undo --dry-run" "$T/undo" '"f\033]52;c;cHduZWQ=\a\033]2;PWNED\a"'
	grep -qF 'bidi\342\200\256txt.exe' "$T/undo" && grep -qF '"c1\302\2332J"' "$T/undo" &&
	    ok || bad "undo --dry-run does not quote the C1 and bidi names: $(cat "$T/undo")"

	on_tty "$T/diffstat" diff last --stat
	check "diff --stat (terminal)" "$T/diffstat" 'bidi\342\200\256txt.exe'
	on_tty "$T/diff" diff last
	check "diff (terminal)" "$T/diff" 'content \033]2;PWNED\a \302\2332J'
	# To a pipe, diff is git's patch: names quoted by git, content as it is.
	"$AMX" diff last >"$T/patch" 2>&1
	grep -qF '"b/f\033]52;c;cHduZWQ=\a\033]2;PWNED\a"' "$T/patch" &&
	    ok || bad "diff to a pipe: $(head -c 2000 "$T/patch")"
	# Every line of the patch but the content's: the C1 names (U+009B, and
	# a raw 0x9b byte) quoted by git, octal.
	grep -av '^[-+ ]' "$T/patch" | grep -av '^+++ \|^--- ' >"$T/patch.names"
	grep -a '^+++ \|^--- ' "$T/patch" >>"$T/patch.names"
	check "diff to a pipe (names)" "$T/patch.names" '"b/c1\302\2332J"'
	grep -qF '"b/raw\2332J"' "$T/patch.names" && ok ||
	    bad "diff to a pipe does not quote the raw 0x9b name: $(cat -v "$T/patch.names")"
	"$AMX" diff last --stat >"$T/stat" 2>&1
	check "diff --stat to a pipe" "$T/stat" 'raw\2332J'

	"$AMX" show last >"$T/show" 2>&1
	check "show" "$T/show" 'repository'
	grep -qF '/nf\033]52;c;cHduZWQ=\a\033]2;PWNED\a"' "$T/show" && ok ||
	    bad "show: the nested repository's name is not quoted: $(cat "$T/show")"
	# JSON on stdout; stderr says which session "last" chose, and is checked too.
	"$AMX" show last --json >"$T/show.json" 2>"$T/show.err"
	check "show --json" "$T/show.json" ""
	check "show --json (stderr)" "$T/show.err" 'last is session'
	python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$T/show.json" &&
	    ok || bad "show --json is not JSON"

	"$AMX" requests last >"$T/req" 2>&1
	check "requests" "$T/req" '/p\342\200\256q\302\2332J'
	"$AMX" requests last --json >"$T/req.json" 2>"$T/req.err"
	check "requests --json" "$T/req.json" '\u202e'
	check "requests --json (stderr)" "$T/req.err" 'last is session'
	python3 - "$T/req.json" <<-'PY' && ok || bad "requests --json: the path does not decode back"
	import json, sys
	paths = [r["path"] for r in json.load(open(sys.argv[1]))]
	assert "/p\u202eq\u009b2J" in paths, paths
	heads = [r["request_headers"] or "" for r in json.load(open(sys.argv[1]))]
	assert any("v\u009b2J\u202e" in h for h in heads), heads
	PY

	"$AMX" sessions >"$T/sessions" 2>&1
	check "sessions" "$T/sessions" 'hostile'
	"$AMX" snapshots last >"$T/snaps" 2>&1
	check "snapshots" "$T/snaps" 'start'
	"$AMX" confdiff last >"$T/confdiff" 2>&1
	check "confdiff" "$T/confdiff" '\033]52;c;cHduZWQ=\a\033]2;PWNED\a'
	grep -qF 'x \033]52;c;Y2xpcA==\a' "$T/confdiff" && ok ||
	    bad "confdiff does not show the content escaped: $(cat "$T/confdiff")"
	on_tty "$T/confdiff.tty" confdiff last
	check "confdiff (terminal)" "$T/confdiff.tty" 'PWNED'
	"$AMX" export last --har - >"$T/har" 2>"$T/har.err"
	check "export --har" "$T/har" ""
	check "export --har (stderr)" "$T/har.err" 'last is session'
	python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$T/har" &&
	    ok || bad "export --har is not JSON"
	"$AMX" policy suggest last >"$T/suggest" 2>&1
	check "policy suggest" "$T/suggest" 'evil.test'
	"$AMX" snapshot last -m "$HOSTILE_OSC" >"$T/snapshot" 2>&1
	check "snapshot" "$T/snapshot" ''
	"$AMX" snapshots last >"$T/snaps2" 2>&1
	check "snapshots (a hostile label)" "$T/snaps2" '"f\033]52;'
	# Completion shows labels as descriptions: quoted, C1 and bidi too.
	"$AMX" snapshot last -m "$HOSTILE_C1 $HOSTILE_BIDI" >/dev/null 2>&1
	"$AMX" completion words -- diff last --to "" >"$T/words" 2>&1
	check "completion words (hostile labels)" "$T/words" '"f\033]52;'
	grep -qF '"c1\302\2332J bidi\342\200\256txt.exe"' "$T/words" && ok ||
	    bad "completion words: the C1 and bidi label is not quoted: $(cat "$T/words")"
	"$AMX" completion words -- show "" >"$T/words2" 2>&1
	check "completion words (sessions)" "$T/words2" 'hostile'
	"$AMX" undo last >"$T/undo2" 2>&1
	check "undo" "$T/undo2" 'remove'
	[ ! -e "$P/$HOSTILE_OSC" ] && ok || bad "undo did not remove the hostile file"
	"$AMX" confdiff last --discard >"$T/discard" 2>&1
	check "confdiff --discard" "$T/discard" '\033]52'
	rm -rf "$T"
}

if [ "${1:-}" = --as-user ]; then
	checks
	echo "[$WHO] $passes passed, $fails failed"
	[ "$fails" = 0 ]
	exit
fi
checks
echo "[root] $passes passed, $fails failed"
as_throwaway_user "$HERE/$(basename "$0")" || fails=$((fails + 1))
[ "$fails" = 0 ]
