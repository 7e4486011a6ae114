#!/usr/bin/env bash
# Export and learn-then-lock through the real binary: jailed curl and python talk to a local
# HTTPS/HTTP server; the session exports as HAR without secrets; policy suggest's rules, written
# to the config, let a rerun of the same clients through and nothing else.
set -u
AMX=${AGENTMUX:?AGENTMUX must name the binary}
SRC=${AGENTMUX_SRC:?AGENTMUX_SRC must name the source tree}
for t in python3 curl openssl; do
	command -v $t >/dev/null || { echo "SKIP: $t is missing"; exit 77; }
done
[ -x /usr/bin/python3 ] || { echo "SKIP: /usr/bin/python3 (for the jail) is missing"; exit 77; }

T=$(mktemp -d /tmp/amx-learn.XXXXXX)
chmod 755 "$T"
export XDG_CONFIG_HOME=$T/config XDG_DATA_HOME=$T/data XDG_RUNTIME_DIR=$T/run
mkdir -p "$XDG_CONFIG_HOME/agentmux" "$XDG_DATA_HOME" "$XDG_RUNTIME_DIR" "$T/up" "$T/proj"
chmod 700 "$XDG_RUNTIME_DIR"
UPID=
cleanup() {
	[ -n "$UPID" ] && kill "$UPID" 2>/dev/null && wait "$UPID" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
has() { grep -q -- "$2" <<<"$1"; }

UPSTREAM_LIFETIME=300 python3 "$SRC/tests/proxy/upstream.py" "$T/up" </dev/null >"$T/up.log" 2>&1 &
UPID=$!
for _ in $(seq 100); do [ -s "$T/up/ports" ] && break; sleep 0.1; done
read -r HP PP _ <"$T/up/ports" || { echo "FAIL: the test upstream did not start"; exit 1; }
UPCA=$T/up/ca.pem
TOKEN="sekrit-learn-$$-$RANDOM"

# What the agent does: the same every time.
cat >"$T/proj/clients.sh" <<EOF
c() { curl -s -o /dev/null -w '%{http_code}\n' --max-time 20 "\$@"; }
c "https://127.0.0.1:$HP/v1/models"
c -X POST -H 'Authorization: Bearer $TOKEN' -d '{"q":1}' "https://127.0.0.1:$HP/v1/messages"
/usr/bin/python3 -c "import urllib.request as u; print(u.urlopen('https://127.0.0.1:$HP/v1/other?x=1', timeout=20).status)"
c "http://127.0.0.1:$PP/status"
c "http://localhost:$PP/elsewhere"
EOF
run() { (cd "$T/proj" && timeout 120 "$AMX" run --on-unknown deny --upstream-ca "$UPCA" "$@"); }

# 1. A permissive session records what the clients need.
out=$(run --allow 127.0.0.1 -- sh clients.sh 2>&1)
[ "$(grep -c '^200$' <<<"$out")" = 4 ] && has "$out" '^403$' && ok "permissive run: 4 allowed, 1 denied" ||
	bad "permissive run: $out"

# 2. HAR export of it: complete, denied entry present, no secret anywhere.
"$AMX" export last --har "$T/s.har" || bad "export --har failed"
grep -q "$TOKEN" "$T/s.har" && bad "the bearer token reached the HAR file" || ok "no secret in the HAR"
"$AMX" export last --json "$T/s.json" || bad "export --json failed"
grep -q "$TOKEN" "$T/s.json" && bad "the bearer token reached the JSON export" || ok "no secret in the JSON"
python3 - "$T/s.har" "$HP" <<'PY' && ok "HAR entries match the session" || bad "HAR check failed"
import json, sys
es = json.load(open(sys.argv[1]))["log"]["entries"]
urls = [e["request"]["url"] for e in es]
hp = sys.argv[2]
assert "https://127.0.0.1:%s/v1/models" % hp in urls, urls
post = [e for e in es if e["request"]["method"] == "POST"][0]
assert post["response"]["status"] == 200 and post["request"]["bodySize"] == 7, post
assert {"name": "x", "value": "1"} in [q for e in es for q in e["request"]["queryString"]]
denied = [e for e in es if e["response"]["status"] == 403]
assert len(denied) == 1 and "denied" in denied[0]["comment"], denied
for e in es:
    assert e["timings"]["wait"] >= 0 and e["timings"]["receive"] >= 0
PY

# 3. The suggestion: exactly what was allowed, the denial as a comment.
sug=$("$AMX" policy suggest last)
has "$sug" "^allow = 127.0.0.1:$HP GET,POST /v1/$" && has "$sug" "^allow = 127.0.0.1:$PP GET /status$" &&
	has "$sug" "^;   localhost:$PP (1 request" && ok "suggest: $(grep -c '^allow' <<<"$sug") rules" ||
	bad "suggest: $sug"
"$AMX" policy suggest last --write >"$T/write.out" || bad "suggest --write failed: $(cat "$T/write.out")"
grep -q "^+allow = 127.0.0.1:$HP GET,POST /v1/" "$T/write.out" && ok "suggest --write shows the diff" ||
	bad "suggest --write: $(cat "$T/write.out")"
"$AMX" config check >/dev/null 2>&1 || bad "the written config does not check"

# 4. Locked down: the same clients, no --allow: all allowed again, the denied one still denied.
out=$(run -- sh clients.sh 2>&1)
[ "$(grep -c '^200$' <<<"$out")" = 4 ] && has "$out" '^403$' && ok "rerun under the learned rules: all allowed" ||
	bad "rerun: $out"
n=$("$AMX" requests last --json | python3 -c 'import json,sys; r=json.load(sys.stdin); print(sum(1 for x in r if x["decision"]=="allow"), sum(1 for x in r if x["decision"]=="deny"))')
[ "$n" = "4 1" ] && ok "rerun recorded 4 allowed, 1 denied" || bad "rerun records: $n"

# 5. Nothing else: another method, another path, another port.
out=$(run -- sh -c "c() { curl -s -o /dev/null -w '%{http_code}\n' --max-time 20 \"\$@\"; }
c -X DELETE https://127.0.0.1:$HP/v1/models
c https://127.0.0.1:$HP/admin
c -X POST -d x http://127.0.0.1:$PP/status
c http://127.0.0.1:$PP/other" 2>&1)
[ "$(grep -c '^403$' <<<"$out")" = 4 ] && ok "anything else is refused" || bad "not locked down: $out"
grep -q "/admin" "$T/up/seen.log" && bad "a refused request reached the upstream"

[ $fails = 0 ] || { echo "$fails failed"; exit 1; }
echo "all ok"
