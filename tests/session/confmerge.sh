#!/usr/bin/env bash
# Config changes from two sessions (issue 18): two real jailed sessions, running at once, change the same
# overlaid config files; applying the first, then the second, merges three ways against the host file as
# it is by then: disjoint JSON keys merge (a ~/.claude.json-like file entry), non-overlapping text lines
# merge, both appends to a log stay, and the same key changed by both is a conflict that is shown and
# left pending, the host file untouched, until --force.
set -u
AMX=${AGENTMUX:?AGENTMUX must name the binary}
command -v git >/dev/null || { echo "SKIP: git is missing"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 is missing"; exit 77; }

T=$(mktemp -d /tmp/amx-confmerge.XXXXXX)
chmod 755 "$T"
export HOME=$T/home XDG_CONFIG_HOME=$T/config XDG_DATA_HOME=$T/data XDG_RUNTIME_DIR=$T/run
mkdir -p "$HOME/.tcd" "$XDG_CONFIG_HOME/agentmux" "$XDG_DATA_HOME" "$XDG_RUNTIME_DIR" "$T/p"
chmod 700 "$XDG_RUNTIME_DIR"
u=
cleanup() {
	[ -n "$u" ] && userdel "$u" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fails=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

cat >"$XDG_CONFIG_HOME/agentmux/config" <<EOF
[agent tc]
command = sh
config_dir = ~/.tc.json
config_dir = ~/.tcd
EOF
printf '{\n  "theme": "dark",\n  "numStartups": 1\n}\n' >"$HOME/.tc.json"
printf '{"model": "a"}\n' >"$HOME/.tcd/settings.json"
printf 'one\ntwo\nthree\nfour\nfive\n' >"$HOME/.tcd/notes.txt"
printf '{"q":0}\n' >"$HOME/.tcd/history.jsonl"
cd "$T/p" || exit 1

# What each session does to its config: KEY=VALUE in ~/.tc.json, the model, one line of notes, a log line.
edit() {
	cat <<EOF
python3 - <<'PY'
import json, os
h = os.environ["HOME"]
p = h + "/.tc.json"
c = json.load(open(p)); c["$1"] = "$2"; json.dump(c, open(p, "w"), indent=2)
s = h + "/.tcd/settings.json"
c = json.load(open(s)); c["model"] = "$2"; json.dump(c, open(s, "w"))
n = h + "/.tcd/notes.txt"
l = open(n).read().split("\n"); l[$3] = "$2"; open(n, "w").write("\n".join(l))
open(h + "/.tcd/history.jsonl", "a").write('{"q":"$2"}\n')
PY
EOF
}
# Both run at once: each starts, then waits for the other, so both start from the same host files.
"$AMX" run -a tc --shared -- sh -c "touch a-up; for i in \$(seq 300); do [ -e b-up ] && break; sleep 0.1; done
	$(edit fromA sessionA 0)" </dev/null >"$T/a.out" 2>&1 &
apid=$!
"$AMX" run -a tc --shared -- sh -c "touch b-up; for i in \$(seq 300); do [ -e a-up ] && break; sleep 0.1; done
	$(edit fromB sessionB 4)" </dev/null >"$T/b.out" 2>&1 || bad "session B failed: $(cat "$T/b.out")"
wait "$apid" || bad "session A failed: $(cat "$T/a.out")"
byc() { "$AMX" sessions --json | python3 -c 'import json,sys; print([s["id"] for s in json.load(sys.stdin) if "'"$1"'" in " ".join(s["command"])][0])'; }
ida=$(byc fromA)
idb=$(byc fromB)

out=$("$AMX" confdiff "$ida" --apply 2>&1) || bad "applying session A failed: $out"
out=$("$AMX" confdiff "$idb" --apply 2>&1)
rc=$?
python3 - "$HOME/.tc.json" <<'PY' && ok "disjoint keys of a JSON file entry changed by two sessions merged" ||
import json, sys
c = json.load(open(sys.argv[1]))
sys.exit(0 if c == {"theme": "dark", "numStartups": 1, "fromA": "sessionA", "fromB": "sessionB"} else 1)
PY
	bad "$HOME/.tc.json did not merge: $(cat "$HOME/.tc.json") ($out)"
[ "$(cat "$HOME/.tcd/notes.txt")" = "$(printf 'sessionA\ntwo\nthree\nfour\nsessionB')" ] &&
	ok "non-overlapping line edits of a text file merged" ||
	bad "notes.txt did not merge: $(cat "$HOME/.tcd/notes.txt")"
[ "$(cat "$HOME/.tcd/history.jsonl")" = "$(printf '{"q":0}\n{"q":"sessionA"}\n{"q":"sessionB"}')" ] &&
	ok "both sessions' appends to history.jsonl stayed" ||
	bad "history.jsonl: $(cat "$HOME/.tcd/history.jsonl")"
{ [ $rc -ne 0 ] && grep -q "conflict .*settings.json" <<<"$out" && grep -q "^ *model$" <<<"$out" &&
	grep -q "3 applied, 1 conflict" <<<"$out" &&
	[ "$(cat "$HOME/.tcd/settings.json")" = '{"model": "sessionA"}' ]; } &&
	ok "the same key changed by both is a conflict, shown with its key, the host file untouched" ||
	bad "the conflict (rc $rc): $out; settings.json: $(cat "$HOME/.tcd/settings.json")"
"$AMX" confdiff "$idb" 2>&1 | grep -q "modified $HOME/.tcd/settings.json" &&
	ok "the conflicting change stays pending" || bad "the conflicting change is not pending"
out=$("$AMX" confdiff "$idb" --apply --force 2>&1) || bad "--apply --force failed: $out"
grep -q '"model": *"sessionB"' "$HOME/.tcd/settings.json" && ok "--force takes the session's version" ||
	bad "--force: $(cat "$HOME/.tcd/settings.json")"

# The same as an ordinary user, once, from root.
if [ -z "${AMX_NO_USER:-}" ] && [ "${1:-}" != --as-user ] && [ "$(id -u)" = 0 ]; then
	if ! command -v useradd >/dev/null || ! command -v setpriv >/dev/null; then
		echo "SKIP (the unprivileged pass): it needs useradd and setpriv"
	else
		u="amxc$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')"
		mkdir -p "$T/stage"
		cp "$AMX" "$T/stage/agentmux"
		# (and the whole program it runs, beside it)
		cp "${AMX%/*}/agentmux-full" "$T/stage/agentmux-full"
		cp "$0" "$T/stage/confmerge.sh"
		cp -r "${AGENTMUX_SHARE:?}" "$T/stage/share"
		chmod -R a+rX "$T/stage"
		useradd -M -N -d /nonexistent -s /bin/sh "$u" || bad "useradd failed"
		setpriv --reuid="$u" --regid="$(id -g "$u")" --init-groups \
		    env -i PATH="$PATH" AGENTMUX="$T/stage/agentmux" TMPDIR=/tmp \
		    AGENTMUX_SHARE="$T/stage/share" \
		    bash "$T/stage/confmerge.sh" --as-user | sed 's/^/user: /'
		[ "${PIPESTATUS[0]}" = 0 ] || bad "the unprivileged pass failed"
		userdel "$u" 2>/dev/null
		u=
	fi
fi

[ $fails -eq 0 ] && echo "all confmerge checks passed${1:+ ($1)}"
exit $((fails > 0))
