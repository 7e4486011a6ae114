#!/usr/bin/env bash
# The proxy through the real binary: agentmux proxy with curl and python, then agentmux run with
# curl, python, node and git inside real jails; records in the store; secrets; the denied summary.
# Exit 77 (skip) with the reason when something this needs is missing.
set -u
AMX=${AGENTMUX:?AGENTMUX must name the binary}
SRC=${AGENTMUX_SRC:?AGENTMUX_SRC must name the source tree}
for t in python3 curl openssl; do
	command -v $t >/dev/null || { echo "SKIP: $t is missing"; exit 77; }
done

# shellcheck source=tests/proxy/e2e-lib.sh
. "$SRC/tests/proxy/e2e-lib.sh" proxy-e2e

# The upstream: HTTPS (its own CA), HTTP, and HTTPS with a CA nobody trusts.
# What it must never receive: $T/up/watch, and what a jail writes to .watch in the project.
UPSTREAM_LIFETIME=600 UPSTREAM_WATCH=$T/proj/.watch python3 "$SRC/tests/proxy/upstream.py" "$T/up" </dev/null >"$T/up.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do [ -s "$T/up/ports" ] && break; sleep 0.1; done
read -r HP PP BP <"$T/up/ports" || { echo "FAIL: the test upstream did not start"; exit 1; }
UPCA=$T/up/ca.pem
SEEN=$T/up/seen.log

# ---- agentmux proxy ----
"$AMX" proxy --listen 127.0.0.1:0 --upstream-ca "$UPCA" --allow "127.0.0.1:$HP" \
	--allow "127.0.0.1:$PP GET" >"$T/proxy.out" 2>"$T/proxy.err" &
PPID_=$!
PIDS+=($PPID_)
for _ in $(seq 100); do grep -q "serving" "$T/proxy.out" 2>/dev/null && break; sleep 0.1; done
PORT=$(sed -n 's/.*serving http:\/\/127.0.0.1:\([0-9]*\).*/\1/p' "$T/proxy.out")
CA=$(sed -n 's/.*trust the CA \(.*\)$/\1/p' "$T/proxy.out")
[ -n "$PORT" ] && [ -f "$CA" ] || { echo "FAIL: agentmux proxy did not start: $(cat "$T/proxy.err")"; exit 1; }
[ "$(stat -c %a "$(dirname "$CA")/ca.key")" = 600 ] && ok "the CA key is 0600" || bad "CA key mode"
P="http://127.0.0.1:$PORT"

out=$(curl -sS --max-time 20 --cacert "$CA" -x "$P" "https://127.0.0.1:$HP/p1")
has "$out" '"path": "/p1"' && ok "proxy: allowed https" || bad "proxy: allowed https: $out"
out=$(curl -sS --max-time 20 -x "$P" -X POST -d x "http://127.0.0.1:$PP/p2" -w ' [%{http_code}]')
has "$out" "[403]" && has "$out" "allow 127.0.0.1:$PP POST" && ok "proxy: method rule" || bad "proxy: method rule: $out"
out=$(curl -s --max-time 20 --cacert "$CA" -x "$P" "https://localhost:$HP/p3" -w ' [%{http_connect}]')
has "$out" "[403]" && ok "proxy: unknown denied at CONNECT" || bad "proxy: unknown: $out"
out=$(PROXY=127.0.0.1:$PORT CA=$CA python3 "$SRC/tests/proxy/clients.py" get "https://127.0.0.1:$HP/p4")
has "$out" '"path": "/p4"' && ok "proxy: python urllib" || bad "proxy: python: $out"
kill -TERM $PPID_
wait $PPID_
rc=$?
[ $rc = 0 ] && ok "proxy: SIGTERM ends it cleanly" || bad "proxy: exit status $rc"
json=$("$AMX" requests --json)
n=$(python3 -c 'import json,sys; r=json.load(sys.stdin); print(len([x for x in r if x["path"] in ("/p1","/p2","/p4")]))' <<<"$json")
[ "$n" = 3 ] && ok "proxy: requests recorded" || bad "proxy: $n of 3 requests recorded: $json"
sessions=$("$AMX" sessions --json)
python3 -c 'import json,sys; s=json.load(sys.stdin)[0]; sys.exit(0 if s["kind"]=="proxy" and s["state"]=="exited" else 1)' <<<"$sessions" &&
	ok "proxy: recorded as a session of kind proxy" || bad "proxy session: $sessions"

# ---- agentmux run: real jails ----
if ! (cd "$T/proj" && timeout 30 "$AMX" run -- true) >"$T/jail.err" 2>&1; then
	echo "SKIP: jails cannot start here: $(tail -n 1 "$T/jail.err")"
	[ $fails = 0 ] && exit 77 || exit 1
fi
cd "$T/proj" || exit 1
run() { timeout 120 "$AMX" run --on-unknown deny --upstream-ca "$UPCA" "$@"; }

out=$(run --allow "127.0.0.1:$HP" -- sh -c "curl -sS --max-time 20 https://127.0.0.1:$HP/r1" 2>&1)
has "$out" '"path": "/r1"' && ok "run: curl through the interception" || bad "run: curl: $out"
out=$(run --allow "127.0.0.1:$HP" -- sh -c 'env' 2>&1)
for v in SSL_CERT_FILE NODE_EXTRA_CA_CERTS REQUESTS_CA_BUNDLE CURL_CA_BUNDLE GIT_SSL_CAINFO HTTPS_PROXY; do
	has "$out" "^$v=" || bad "run: $v is not set in the jail"
done
has "$out" "^NO_PROXY=$" && ok "run: the jail's environment names the CA bundle and the proxy" || bad "run: NO_PROXY: $out"
out=$(run --allow "127.0.0.1:$HP" -- /usr/bin/python3 -c "
import urllib.request, os
print(urllib.request.urlopen('https://127.0.0.1:$HP/r2', timeout=20).read().decode())" 2>&1)
has "$out" '"path": "/r2"' && ok "run: python urllib" || bad "run: python: $out"
if command -v node >/dev/null; then
	cp "$SRC/tests/proxy/client.js" "$T/proj/"   # the jail sees the project only
	out=$(run --allow "127.0.0.1:$HP" -- sh -c "PROXY=\${HTTPS_PROXY#http://} CA=\$NODE_EXTRA_CA_CERTS node client.js https://127.0.0.1:$HP/r3" 2>&1)
	has "$out" '"path": "/r3"' && ok "run: node's https client" || bad "run: node: $out"
else
	echo "skip: node is missing"
fi
if command -v git >/dev/null; then
	mkdir -p "$T/up/git" && git init -q --bare "$T/up/git/repo.git" &&
		git clone -q "$T/up/git/repo.git" "$T/seed" 2>/dev/null &&
		(cd "$T/seed" && echo hello >file && git add file && git -c user.name=t -c user.email=t@t commit -qm one && git push -q origin HEAD:master) &&
		git -C "$T/up/git/repo.git" update-server-info
	out=$(run --allow "127.0.0.1:$HP" -- sh -c "git clone -q https://127.0.0.1:$HP/git/repo.git clone && cat clone/file" 2>&1)
	has "$out" "^hello" && ok "run: git clone over https" || bad "run: git: $out"
fi
out=$(run -- curl -sS --max-time 20 "https://127.0.0.1:$HP/r4" -w ' [%{http_connect}]' 2>&1)
has "$out" "\[403\]" && ok "run: unknown denied" || bad "run: unknown: $out"
has "$out" "run again with:" && has "$out" "--allow 127.0.0.1:$HP" && ok "run: the denied summary names --allow" || bad "run: summary: $out"
out=$(run --allow '*' -- curl -sS --max-time 20 "http://127.0.0.1:$PP/r5" 2>&1)
has "$out" "loopback address, which no rule names" && ok "run: a wildcard does not reach loopback" || bad "run: ssrf: $out"
grep -q "/r4\|/r5" "$SEEN" && bad "run: a denied request reached the upstream"

# Secrets: the jail sees a placeholder; the bound host gets the value; elsewhere is blocked.
cat >"$XDG_CONFIG_HOME/agentmux/config" <<EOF
[secret test_key]
env = TEST_KEY
from_env = AMX_E2E_KEY
host = 127.0.0.1
header = x-api-key

[secret file_key]
env = FILE_KEY
file = $T/file-key
host = 127.0.0.1
header = authorization

[secret cmd_key]
env = CMD_KEY
command = printf 'sk-cmd-%s' FromACommand0123456789
host = 127.0.0.1

[agent tester]
command = sh
secret = test_key
secret = file_key
secret = cmd_key
allow = 127.0.0.1:$HP
allow = localhost:$HP
EOF
printf 'sk-file-FromAFile0123456789abcdef\n' >"$T/file-key"
export AMX_E2E_KEY=sk-e2e-Real0Value1That2Stays3Outside4
out=$(run -a tester -- sh -c "echo \"jail sees \$TEST_KEY\"; curl -sS --max-time 20 -H \"x-api-key: \$TEST_KEY\" https://127.0.0.1:$HP/s1 >/dev/null; curl -sS --max-time 20 -H \"x-api-key: \$TEST_KEY\" https://localhost:$HP/s2" 2>&1)
has "$out" "jail sees sk-e2e-" || bad "run: the placeholder keeps the value's prefix: $out"
has "$out" "$AMX_E2E_KEY" && bad "run: the real value reached the jail: $out"
grep -q "GET /s1 key=$AMX_E2E_KEY" "$SEEN" && ok "run: the bound host got the real value" || bad "run: secret swap: $(tail -n 2 "$SEEN")"
has "$out" "placeholder of secret test_key" && ok "run: a placeholder headed elsewhere is blocked" || bad "run: exfiltration: $out"
grep -q "/s2" "$SEEN" && bad "run: the exfiltration attempt reached the upstream"
"$AMX" sessions --json | python3 -c 'import json,sys; s=json.load(sys.stdin)[0]; sys.exit(0 if "exfiltration" in (s.get("flags") or "") else 1)' &&
	ok "run: the session is flagged" || bad "run: not flagged: $("$AMX" sessions --json | head -c 400)"
"$AMX" requests --json | grep -q "$AMX_E2E_KEY" && bad "run: the secret value reached the store"
out=$(run -a tester -- sh -c "curl -sS --max-time 20 -H \"Authorization: Bearer \$FILE_KEY\" -H \"x-api-key: \$CMD_KEY\" https://127.0.0.1:$HP/s3 >/dev/null; echo \"\$FILE_KEY \$CMD_KEY\"" 2>&1)
grep -q "GET /s3 key=sk-cmd-FromACommand0123456789 auth=Bearer sk-file-FromAFile0123456789abcdef" "$SEEN" &&
	ok "run: secrets from a file and a command are swapped in" || bad "run: file/command secrets: $(tail -n 1 "$SEEN")"
has "$out" "FromAFile\|FromACommand" && bad "run: a file or command secret reached the jail: $out"
# A secret command that fails says why (its first line of stderr, escaped: it never reaches the
# terminal raw), one that prints too much is refused, and neither secret is passed.
cat >"$XDG_CONFIG_HOME/agentmux/config" <<'EOF'
[secret bad_cmd]
env = BAD_KEY
command = printf 'no \033[31mkey here\n' >&2; exit 3
host = 127.0.0.1

[secret big_cmd]
env = BIG_KEY
command = head -c 70000 /dev/zero | tr '\0' a
host = 127.0.0.1

[agent tester2]
command = sh
secret = bad_cmd
secret = big_cmd
EOF
out=$(run -a tester2 -- sh -c 'echo "bad=${BAD_KEY:-unset} big=${BIG_KEY:-unset}"' 2>&1)
has "$out" "failed (exit status 3): no .*key here" && ok "run: a failing secret command says why" ||
	bad "run: secret command failure: $out"
has "$out" "$(printf '\033')" && bad "run: a secret command's stderr reached the terminal raw: $out"
has "$out" "printed more than 65536 bytes" && ok "run: a secret command's flood is refused" ||
	bad "run: secret command flood: $out"
has "$out" "bad=unset big=unset" && ok "run: failed secrets are not passed" || bad "run: failed secrets: $out"
# SIGTERM while the start waits for a secret command (a pinentry that never comes): the start
# stops at once, the command is ended, nothing runs (agentmux's default action was to die,
# leaving the command running and its session unended).
cat >"$XDG_CONFIG_HOME/agentmux/config" <<EOF
[secret slow_cmd]
env = SLOW_KEY
command = echo \$\$ >$T/slow.pid; exec sleep 60
host = 127.0.0.1

[agent tester3]
command = sh
secret = slow_cmd
EOF
rm -f "$T/slow.pid" "$T/slow.ran"
(set -m; exec timeout 120 "$AMX" run --on-unknown deny -a tester3 -- sh -c "touch $T/slow.ran" \
	</dev/null >"$T/slow.out" 2>&1) &
spid=$!
for _ in $(seq 100); do [ -s "$T/slow.pid" ] && break; sleep 0.1; done
kill -TERM "$spid"
for _ in $(seq 50); do kill -0 "$spid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$spid" 2>/dev/null; then
	bad "run: SIGTERM while a secret command runs did not stop the start within 5 s"
	kill -KILL "$spid"
fi
wait "$spid"
src=$?
secpid=$(cat "$T/slow.pid" 2>/dev/null)
# Killed, it may still be a zombie for a moment, until init reaps it.
for _ in $(seq 30); do [ -n "$secpid" ] && kill -0 "$secpid" 2>/dev/null || break; sleep 0.1; done
{ [ "$src" = 1 ] && grep -q "terminated before its command started" "$T/slow.out" &&
	[ ! -e "$T/slow.ran" ] && [ -n "$secpid" ] && ! kill -0 "$secpid" 2>/dev/null; } &&
	ok "run: SIGTERM while a secret command runs stops the start and the command" ||
	bad "run: SIGTERM during a secret command: exit $src, $(cat "$T/slow.out"), its pid ${secpid:-none}"
[ -n "$secpid" ] && kill "$secpid" 2>/dev/null
rm -f "$XDG_CONFIG_HOME/agentmux/config"

# ---- issue 15: what a hostile agent tried, inside real jails ----
# A secret bound to 127.0.0.1 and localhost (its name's port 443 maps to the plain upstream),
# one bound to 127.0.0.1 only, rules by path, and the upstream told what it must never see.
cat >"$XDG_CONFIG_HOME/agentmux/config" <<EOF
[proxy]
connect_to = localhost:443:127.0.0.1:$PP

[secret clear_key]
env = CLEAR_KEY
from_env = AMX_E2E_KEY
host = 127.0.0.1 localhost

[secret stream_key]
env = STREAM_KEY
from_env = AMX_E2E_KEY2
host = 127.0.0.1

[agent hostile]
command = sh
secret = clear_key
secret = stream_key
allow = 127.0.0.1:$HP
allow = localhost
allow = 127.0.0.1:$PP GET /pub/
deny = 127.0.0.1:$HP * /secret/
EOF
export AMX_E2E_KEY2=sk-e2e-Stream0Value1That2Stays3Out4
cp "$SRC/tests/proxy/client.js" "$SRC/tests/proxy/clients.py" "$T/proj/"
printf '%s\n%s\n' "$AMX_E2E_KEY" "$AMX_E2E_KEY2" >"$T/up/watch"
flags() { "$AMX" sessions --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0].get("flags") or "")'; }
i15() {   # NAME -- COMMAND...: a hostile command in a jail; its output in $out; the upstream saw nothing it must not
	local name=$1
	shift 2
	# Each session has placeholders of its own: the jail tells the upstream to watch for them.
	out=$(run -a hostile -- sh -c 'printf "%s\n%s\n" "$CLEAR_KEY" "$STREAM_KEY" >.watch && exec "$@"' sh "$@" 2>&1)
	if grep -q "saw-watch" "$SEEN"; then
		bad "issue 15 $name: the upstream got a secret or a placeholder: $(grep saw-watch "$SEEN")"
		sed -i '/saw-watch/d' "$SEEN"
	fi
}
# Finding 1: plain HTTP to the bound host, even to its port 443 in absolute form.
i15 cleartext -- sh -c "curl -sS --max-time 20 -x \"\$HTTPS_PROXY\" -H \"x-api-key: \$CLEAR_KEY\" http://localhost:443/e1 -w ' [%{http_code}]'"
has "$out" "\[403\]" && has "$out" "only its own hosts may receive, over TLS" &&
	ok "issue 15: curl: no secret swapped into plain HTTP to port 443" || bad "issue 15: cleartext swap: $out"
[ "$(flags)" = exfiltration ] && ok "issue 15: the attempt is flagged" || bad "issue 15: not flagged: $(flags)"
i15 cleartext-python -- /usr/bin/python3 -c "
import os, urllib.request, urllib.error
o = urllib.request.build_opener(urllib.request.ProxyHandler({'http': os.environ['HTTPS_PROXY']}))
try:
    print(o.open(urllib.request.Request('http://127.0.0.1:$PP/pub/e2', headers={'Authorization': 'Bearer ' + os.environ['CLEAR_KEY']}), timeout=20).status)
except urllib.error.HTTPError as e:
    print(e.code)"
has "$out" "^403" && ok "issue 15: python: none to the plain port either" || bad "issue 15: python cleartext: $out"
grep -q "/e1 \|/e2 " "$SEEN" && bad "issue 15: a cleartext attempt reached the upstream"
# Finding 2: past the first MiB, chunked, hex, URL-encoded, base64, WebSocket frames.
i15 body -- /usr/bin/python3 -c "
import os, urllib.request, urllib.error
o = urllib.request.build_opener(urllib.request.ProxyHandler({'https': os.environ['HTTPS_PROXY']}))
body = os.urandom(1200000).hex().encode() + os.environ['STREAM_KEY'].encode()
try:
    print(o.open(urllib.request.Request('https://localhost:$HP/e3', data=body), timeout=30).status)
except urllib.error.HTTPError as e:
    print(e.code)
except OSError as e:
    print('cut off:', e)"
has "$out" "^403\|cut off" && ok "issue 15: python: a placeholder 2.4 MB into a body" || bad "issue 15: long body: $out"
i15 chunked -- sh -c "head -c 1500000 /dev/zero | tr '\\0' a >big && printf '%s' \"\$STREAM_KEY\" >>big && curl -sS --max-time 30 -H 'Transfer-Encoding: chunked' --data-binary @big https://localhost:$HP/e4 -w ' [%{http_code}]'; rm -f big"
has "$out" "\[403\]" && ok "issue 15: curl: in a chunked upload" || bad "issue 15: chunked: $out"
i15 hex -- sh -c "curl -sS --max-time 20 -H \"X-Trace: \$(printf '%s' \"\$STREAM_KEY\" | od -An -tx1 | tr -d ' \\n' | tr a-f A-F)\" https://localhost:$HP/e5 -w ' [%{http_code}]'"
has "$out" "\[403\]" && ok "issue 15: curl: as hex in a header" || bad "issue 15: hex: $out"
i15 urlenc -- sh -c "curl -sS --max-time 20 \"https://localhost:$HP/e6?k=\$(printf '%s' \"\$STREAM_KEY\" | od -An -tx1 -v | tr -d '\\n' | sed 's/ /%/g')\" -w ' [%{http_code}]'"
has "$out" "\[403\]" && ok "issue 15: curl: percent-encoded in the query" || bad "issue 15: urlencoded: $out"
if command -v node >/dev/null; then
	i15 node-b64 -- sh -c "PROXY=\${HTTPS_PROXY#http://} CA=\$NODE_EXTRA_CA_CERTS BODY_B64_OF=\$STREAM_KEY node client.js https://localhost:$HP/e7"
	has "$out" "^403 " && ok "issue 15: node: as base64 in a JSON body" || bad "issue 15: node base64: $out"
fi
i15 websocket -- sh -c "PROXY=\${HTTPS_PROXY#http://} CA=\$SSL_CERT_FILE python3 clients.py wsmsg wss://localhost:$HP/ws \"\$STREAM_KEY\""
has "$out" "101 Switching" && ok "issue 15: python: split over WebSocket frames" || bad "issue 15: websocket: $out"
# Finding 3: rules match the normalised path.
i15 dotdot -- curl -sS --max-time 20 --path-as-is "http://127.0.0.1:$PP/pub/../secret/e8" -w ' [%{http_code}]'
has "$out" "\[403\]" && ok "issue 15: curl: /pub/../secret is not under /pub/" || bad "issue 15: dot segments: $out"
i15 slashes -- curl -sS --max-time 20 "https://127.0.0.1:$HP//secret/e9" -w ' [%{http_code}]'
has "$out" "\[403\]" && ok "issue 15: curl: //secret is /secret" || bad "issue 15: repeated slashes: $out"
i15 escapes -- /usr/bin/python3 -c "
import urllib.request, urllib.error
try:
    print(urllib.request.urlopen('https://127.0.0.1:$HP/%73ecret/e10', timeout=20).status)
except urllib.error.HTTPError as e:
    print(e.code)"
has "$out" "^403" && ok "issue 15: python: /%73ecret is /secret" || bad "issue 15: escapes: $out"
i15 encslash -- curl -sS --max-time 20 "http://127.0.0.1:$PP/pub/..%2fsecret/e11" -w ' [%{http_code}]'
has "$out" "\[400\]" && ok "issue 15: curl: an encoded '/' is refused" || bad "issue 15: encoded slash: $out"
# An encoded '/' inside a name (npm's scoped packages: GET /@scope%2fname) goes up as
# it came; the reading of a server that decodes it is judged too.
i15 scoped -- curl -sS --max-time 20 "https://127.0.0.1:$HP/@scope%2fname" -w ' [%{http_code}]'
has "$out" "\[200\]" && grep -q "/@scope%2Fname" "$SEEN" && ok "npm: a scoped package's name (@scope%2fname) passes" ||
	bad "npm: scoped package name: $out"
i15 encdeny -- curl -sS --max-time 20 "https://127.0.0.1:$HP/secret%2fe14" -w ' [%{http_code}]'
has "$out" "\[403\]" && ok "issue 15: curl: /secret%2f is judged as /secret/ too" || bad "issue 15: encoded slash deny: $out"
grep -q "secret/e" "$SEEN" && bad "issue 15: a path around the rules reached the upstream: $(grep 'secret/e' "$SEEN")"
# Finding 4: the user's path deny beats a port allow.
out=$(run --allow "127.0.0.1:$HP" --deny "127.0.0.1 * /secret/" -- curl -sS --max-time 20 "https://127.0.0.1:$HP/secret/e12" -w ' [%{http_code}]' 2>&1)
has "$out" "\[403\]" && ok "issue 15: a path deny beats a port allow" || bad "issue 15: specificity: $out"
# Finding 5: at an allowed address, the Host header and SNI may not name another host.
out=$(run --allow "127.0.0.1" -- curl -sS --max-time 20 -H "Host: evil.example" "http://127.0.0.1:$PP/e13" -w ' [%{http_code}]' 2>&1)
has "$out" "\[403\]" && has "$out" "names the host evil.example, which no rule allows" &&
	ok "issue 15: curl: no Host fronting at an allowed address" || bad "issue 15: Host fronting: $out"
out=$(run --allow "127.0.0.1" -- /usr/bin/python3 -c "
import os, socket, ssl
p = os.environ['HTTPS_PROXY'].split('//')[1].split(':')
s = socket.create_connection((p[0], int(p[1])), timeout=20)
s.sendall(b'CONNECT 127.0.0.1:$HP HTTP/1.1\r\nHost: 127.0.0.1:$HP\r\n\r\n')
s.recv(4096)
t = ssl.create_default_context().wrap_socket(s, server_hostname='evil.example')
t.sendall(b'GET /e14 HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n')
print(t.recv(4096).decode(errors='replace'))" 2>&1)
has "$out" "403 Forbidden" && ok "issue 15: python: no SNI fronting at an allowed address" || bad "issue 15: SNI fronting: $out"
grep -q "/e1[34]" "$SEEN" && bad "issue 15: a fronted request reached the upstream"
rm -f "$T/up/watch" "$T/proj/.watch" "$XDG_CONFIG_HOME/agentmux/config"

# The unprivileged path: a throwaway user gets its own CA and its jail's requests go through.
if [ "$(id -u)" = 0 ] && command -v useradd >/dev/null && command -v setpriv >/dev/null; then
	TUSER=amxe2e$$
	if useradd -M -d "$T/home" "$TUSER" 2>/dev/null; then
		mkdir -p "$T/home" "$T/uproj" && chown "$TUSER:" "$T/home" "$T/uproj"
		uid=$(id -u "$TUSER") gid=$(id -g "$TUSER")
		# The binary and its profiles, copied where the user can read them:
		# the source and build trees may be in a private directory.
		mkdir -p "$T/stage/bin" && cp "$AMX" "$T/stage/bin/agentmux" &&
			cp "${AMX%/*}/agentmux-full" "$T/stage/bin/agentmux-full" &&
			cp -r "${AGENTMUX_SHARE:?}" "$T/stage/share" && chmod -R a+rX "$T/stage"
		out=$(cd "$T/uproj" && env -i PATH="$PATH" HOME="$T/home" XDG_DATA_HOME="$T/home/data" \
			XDG_CONFIG_HOME="$T/home/config" AGENTMUX_SHARE="$T/stage/share" \
			timeout 120 setpriv --reuid="$uid" --regid="$gid" --init-groups \
			"$T/stage/bin/agentmux" run --on-unknown deny --upstream-ca "$UPCA" --allow "127.0.0.1:$HP" -- \
			curl -sS --max-time 20 "https://127.0.0.1:$HP/u1" 2>&1)
		if has "$out" '"path": "/u1"'; then
			ok "unprivileged user: curl through its own jail and CA"
			[ "$(stat -c %U:%a "$T/home/data/agentmux/ca.key")" = "$TUSER:600" ] &&
				ok "unprivileged user: its CA key is its own, 0600" || bad "unprivileged CA key: $(stat -c %U:%a "$T/home/data/agentmux/ca.key")"
			# Issue 15 as an ordinary user: no cleartext swap, normalised paths, no fronting.
			mkdir -p "$T/home/config/agentmux"
			printf '[proxy]\nconnect_to = localhost:443:127.0.0.1:%s\n[secret k]\nenv = K\nfrom_env = AMX_E2E_KEY\nhost = localhost\n%b\n' \
				"$PP" '[agent u]\ncommand = sh\nsecret = k' >"$T/home/config/agentmux/config"
			chown -R "$TUSER:" "$T/home/config"
			urun() { (cd "$T/uproj" && env -i PATH="$PATH" HOME="$T/home" XDG_DATA_HOME="$T/home/data" XDG_CONFIG_HOME="$T/home/config" \
				AGENTMUX_SHARE="$T/stage/share" AMX_E2E_KEY="$AMX_E2E_KEY" \
				timeout 120 setpriv --reuid="$uid" --regid="$gid" --init-groups \
				"$T/stage/bin/agentmux" run --on-unknown deny --upstream-ca "$UPCA" "$@" 2>&1); }
			out=$(urun -a u --allow localhost -- sh -c "curl -sS --max-time 20 -x \"\$HTTPS_PROXY\" -H \"x-api-key: \$K\" http://localhost:443/u2 -w ' [%{http_code}]'")
			has "$out" "\[403\]" && ! grep -q "/u2" "$SEEN" && ok "unprivileged user: issue 15: no secret in cleartext" ||
				bad "unprivileged user: cleartext: $out"
			out=$(urun --allow "127.0.0.1:$PP GET /pub/" -- curl -sS --max-time 20 --path-as-is "http://127.0.0.1:$PP/pub/%2e%2e/u3" -w ' [%{http_code}]')
			has "$out" "\[403\]" && ! grep -q "/u3" "$SEEN" && ok "unprivileged user: issue 15: normalised paths" ||
				bad "unprivileged user: paths: $out"
			out=$(urun --allow 127.0.0.1 -- curl -sS --max-time 20 -H "Host: evil.example" "http://127.0.0.1:$PP/u4" -w ' [%{http_code}]')
			has "$out" "\[403\]" && ! grep -q "/u4" "$SEEN" && ok "unprivileged user: issue 15: no Host fronting" ||
				bad "unprivileged user: fronting: $out"
		elif has "$out" "user namespace"; then
			echo "skip: unprivileged user namespaces are not available: $out"
		else
			bad "unprivileged user: $out"
		fi
	fi
fi

[ $fails = 0 ] && { echo "all passed"; exit 0; }
echo "$fails failed"
exit 1
