#!/usr/bin/env bash
# Transparent interception in real jails (issue 20): clients that ignore HTTP_PROXY (curl --noproxy,
# python http.client, node's fetch, raw TCP) reach local servers only through agentmux's resolver and
# redirect, judged and recorded like proxy-aware ones; denied names get NXDOMAIN; raw TCP needs a
# tunnel rule; a jailed root cannot remove the redirect or reach a real address.
# Exit 77 (skip) with the reason when something this needs is missing.
set -u
AMX=${AGENTMUX:?AGENTMUX must name the binary}
SRC=${AGENTMUX_SRC:?AGENTMUX_SRC must name the source tree}
for t in python3 curl openssl; do
	command -v $t >/dev/null || { echo "SKIP: $t is missing"; exit 77; }
done

# shellcheck source=tests/proxy/e2e-lib.sh
. "$SRC/tests/proxy/e2e-lib.sh" transparent

# HTTPS and HTTP upstreams whose certificate names web.test, and a raw TCP
# server that speaks first (as sshd does) and echoes one line.
UPSTREAM_LIFETIME=600 python3 "$SRC/tests/proxy/upstream.py" "$T/up" </dev/null >"$T/up.log" 2>&1 &
PIDS+=($!)
python3 -c '
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0)); s.listen(8)
open(sys.argv[1] + ".tmp", "w").write("%d\n" % s.getsockname()[1])
import os; os.rename(sys.argv[1] + ".tmp", sys.argv[1])
while True:
    c, _ = s.accept(); c.settimeout(10)
    try:
        c.sendall(b"SSH-2.0-amxtest\r\n"); c.sendall(b"echo:" + c.recv(100))
    except OSError:
        pass
    c.close()
' "$T/rawport" </dev/null >"$T/raw.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do [ -s "$T/up/ports" ] && [ -s "$T/rawport" ] && break; sleep 0.1; done
read -r HP PP _ <"$T/up/ports" || { echo "FAIL: the test upstream did not start"; exit 1; }
RP=$(cat "$T/rawport")
UPCA=$T/up/ca.pem
SEEN=$T/up/seen.log

cat >"$XDG_CONFIG_HOME/agentmux/config" <<EOF
[proxy]
connect_to = web.test:443:127.0.0.1:$HP
connect_to = web.test:80:127.0.0.1:$PP
connect_to = git.test:22:127.0.0.1:$RP
connect_to = raw.test:2222:127.0.0.1:$RP
connect_to = pinned.test:22:127.0.0.1:$RP
connect_to = pinned.test:8443:127.0.0.1:$HP
connect_to = pinned.test:443:127.0.0.1:$HP
[policy]
allow = web.test
allow = raw.test
tunnel = git.test:22
tunnel = pinned.test
deny = evil.test
EOF

cd "$T/proj" || exit 1
if ! timeout 30 "$AMX" run -- true >"$T/jail.err" 2>&1; then
	if grep -q "nftables redirect" "$T/jail.err"; then
		echo "SKIP: this kernel gives a jail no nf_tables: $(tail -n 1 "$T/jail.err")"
	else
		echo "SKIP: jails cannot start here: $(tail -n 1 "$T/jail.err")"
	fi
	exit 77
fi
run() { timeout 120 "$AMX" run --on-unknown deny --upstream-ca "$UPCA" "$@"; }
lastreq() { "$AMX" requests --json | python3 -c "
import json, sys
want = sys.argv[1:]
for r in json.load(sys.stdin):
    if all(w in json.dumps(r) for w in want):
        print(json.dumps(r)); break
" "$@"; }

# ---- the resolver ----
out=$(run -- sh -c 'cat /etc/resolv.conf; grep hosts: /etc/nsswitch.conf; getent hosts web.test; getent hosts evil.test; echo "evil=$?"' 2>&1)
has "$out" "nameserver 127.0.0.53" && has "$out" "hosts: *files dns" && ok "resolv.conf and nsswitch point at the jail's resolver" ||
	bad "resolver config: $out"
has "$out" "198\.1[89]\.[0-9]*\.[0-9]* *web.test" && ok "a name gets a synthetic address in 198.18.0.0/15" || bad "synthetic address: $out"
has "$out" "evil=2" && ok "a denied name is not found (NXDOMAIN)" || bad "denied name: $out"
r=$(lastreq '"host": "evil.test"' NXDOMAIN)
has "$r" '"decision": "deny"' && has "$r" "deny evil.test" && ok "the denied lookup is recorded with its rule" || bad "denied lookup record: $r"
r=$(lastreq '"host": "web.test"' '"scheme": "dns"' '"method": "A"')
has "$r" '"method": "A"' && has "$r" '"decision": "allow"' && ok "a lookup is recorded" || bad "lookup record: $r"
out=$("$AMX" requests 2>&1)
has "$out" "evil.test" && ok "agentmux requests lists lookups" || bad "requests: $out"

# The resolver over TCP too (a stub retries there when a UDP answer is cut).
out=$(run -- /usr/bin/python3 -c '
import socket, struct
q = struct.pack("!HHHHHH", 7, 0x100, 1, 0, 0, 0) + b"\x03web\x04test\x00" + struct.pack("!HH", 1, 1)
s = socket.create_connection(("127.0.0.53", 53), timeout=5)
s.sendall(struct.pack("!H", len(q)) + q)
a = s.recv(600)[2:]
print("rcode=%d answers=%d addr=%s" % (a[3] & 15, a[7], socket.inet_ntoa(a[-4:])))' 2>&1)
has "$out" "rcode=0 answers=1 addr=198\.1[89]\." && ok "the resolver answers over TCP" || bad "DNS over TCP: $out"
"$AMX" show last --json 2>/dev/null | grep -q '"transparent": *true' && ok "the session's jail summary says transparent" ||
	bad "jail summary: $("$AMX" show last --json 2>&1 | head -c 300)"

# ---- clients with no proxy ----
out=$(run -- curl -sS --noproxy '*' --max-time 20 https://web.test/t1 2>&1)
has "$out" '"path": "/t1"' && ok "curl --noproxy: https intercepted and allowed" || bad "curl https: $out"
r=$(lastreq '"path": "/t1"')
has "$r" '"scheme": "https"' && has "$r" "allow web.test" && ok "its request is recorded like a proxied one" || bad "t1 record: $r"
out=$(run -- curl -sS --noproxy '*' --max-time 20 http://web.test/t2 2>&1)
has "$out" '"path": "/t2"' && ok "curl --noproxy: plain http allowed" || bad "curl http: $out"
out=$(run -- /usr/bin/python3 -c '
import http.client, ssl
c = http.client.HTTPSConnection("web.test", context=ssl.create_default_context(), timeout=20)
c.request("GET", "/t3"); print(c.getresponse().read().decode())' 2>&1)
has "$out" '"path": "/t3"' && ok "python http.client (no proxy support) through interception" || bad "python: $out"
if command -v node >/dev/null; then
	out=$(run -- node -e 'fetch("https://web.test/t4").then(r => r.text()).then(t => console.log(t), e => console.log("ERR", e.cause || e))' 2>&1)
	has "$out" '"path": "/t4"' && ok "node's global fetch through interception" || bad "node fetch: $out"
else
	echo "skip: node is missing"
fi

# ---- refusals ----
out=$(run -- curl -sS --noproxy '*' --max-time 20 http://other.test/t5 -w ' [%{http_code}]' 2>&1)
! grep -q "/t5" "$SEEN" && has "$out" "other.test" && ok "an unknown destination is refused, with the rule that would allow it" ||
	bad "unknown: $out"
out=$(run -- curl -sS --noproxy '*' --max-time 20 -H "Host: evil.test" http://web.test/t6 -w ' [%{http_code}]' 2>&1)
has "$out" "\[403\]" && ! grep -q "/t6" "$SEEN" && ok "a Host header naming another host is refused" || bad "Host fronting: $out"
out=$(run -- curl -sS --noproxy '*' --max-time 20 --connect-to other.test:443:web.test:443 https://other.test/t7 -w ' [%{http_code}]' 2>&1)
! grep -q "/t7" "$SEEN" && ok "TLS naming another host (SNI) than the address stands for is refused" || bad "SNI fronting: $out"

# ---- raw TCP ----
RAWPY='
import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10)
if sys.argv[3] == "listen": print(s.recv(100)); sys.argv[3] = "hello"
s.sendall(sys.argv[3].encode() + b"\n"); print(s.recv(100))'
out=$(run -- /usr/bin/python3 -c "$RAWPY" git.test 22 listen 2>&1)
has "$out" "SSH-2.0-amxtest" && has "$out" "echo:hello" && ok "raw TCP through a tunnel rule" || bad "tunnel: $out"
r=$(lastreq '"host": "git.test"' '"scheme": "tunnel"')
has "$r" '"decision": "tunnel"' && has "$r" "tunnel git.test:22" && python3 -c '
import json, sys; r = json.loads(sys.argv[1]); sys.exit(0 if r["bytes_up"] >= 6 and r["bytes_down"] >= 17 else 1)' "$r" &&
	ok "the tunnel is recorded with its rule and bytes" || bad "tunnel record: $r"
if command -v nc >/dev/null; then
	out=$(run -- sh -c 'printf "hello\n" | nc -w 5 git.test 22' 2>&1)
	has "$out" "echo:hello" && ok "nc through a tunnel rule" || bad "nc: $out"
fi
out=$(run -- /usr/bin/python3 -c "$RAWPY" raw.test 2222 talk 2>&1)
r=$(lastreq '"host": "raw.test"' '"decision": "deny"')
! has "$out" "echo:hello" && has "$r" "tunnel raw.test:2222" && ok "raw TCP without a tunnel rule is refused, with the rule that would allow it" ||
	bad "raw without tunnel: $out / $r"
# A host-wide tunnel (for clients that pin certificates) carries TLS naming
# its host on any port, never raw TCP: that takes `tunnel HOST:PORT`.
out=$(run -- /usr/bin/python3 -c "$RAWPY" pinned.test 22 talk 2>&1)
r=$(lastreq '"host": "pinned.test"' '"port": 22')
! has "$out" "echo:hello" && ! has "$out" "SSH-2.0" && has "$r" "tunnel pinned.test:22" &&
	ok "a host-wide tunnel rule refuses raw TCP, naming the rule that would allow it" || bad "host-wide tunnel raw: $out / $r"
TLSPY='
import socket, ssl, sys
c = ssl.create_default_context(); c.check_hostname = False; c.verify_mode = ssl.CERT_NONE
s = c.wrap_socket(socket.create_connection(("pinned.test", int(sys.argv[1])), timeout=10), server_hostname="pinned.test")
s.sendall(b"GET /" + sys.argv[2].encode() + b" HTTP/1.1\r\nHost: pinned.test\r\nConnection: close\r\n\r\n"); print(s.recv(4000).decode())'
out=$(run -- /usr/bin/python3 -c "$TLSPY" 443 p1 2>&1)
grep -q "/p1" "$SEEN" && ok "a host-wide tunnel passes TLS naming its host to port 443" || bad "host-wide tunnel TLS: $out"
# Elsewhere its first record could carry any bytes to whatever listens there
# (a hello naming the host, then a line protocol's commands): not without a port.
out=$(run -- /usr/bin/python3 -c "$TLSPY" 8443 p2 2>&1)
r=$(lastreq '"host": "pinned.test"' '"port": 8443')
! grep -q "/p2" "$SEEN" && has "$r" "tunnel pinned.test:8443" && has "$r" "passes TLS to port 443 only" &&
	ok "a host-wide tunnel rule does not reach port 8443, naming the rule that would" || bad "host-wide tunnel to 8443: $out / $r"
# ---- secrets: swapped over intercepted TLS, never let through a raw tunnel ----
export AMX_TP_KEY=sk-tp-Real0Value1That2Stays3Outside4
cp "$XDG_CONFIG_HOME/agentmux/config" "$T/config.keep"
printf '[secret k]\nenv = K\nfrom_env = AMX_TP_KEY\nhost = web.test\n[agent u]\ncommand = sh\nsecret = k\n' \
	>>"$XDG_CONFIG_HOME/agentmux/config"
out=$(run -a u -- sh -c 'echo "jail sees $K"; curl -sS --noproxy "*" --max-time 20 -H "x-api-key: $K" https://web.test/s1' 2>&1)
! has "$out" "jail sees $AMX_TP_KEY" && has "$out" "\"x-api-key\": \"$AMX_TP_KEY\"" &&
	ok "a secret's placeholder is swapped for its value over intercepted TLS" || bad "secret swap: $out"
out=$(run -a u -- sh -c "/usr/bin/python3 -c '$RAWPY' git.test 22 \"\$K\"" 2>&1)
r=$(lastreq '"host": "git.test"' '"decision": "deny"')
! has "$out" "echo:" && has "$r" "secret k" && "$AMX" sessions --json | grep -q exfiltration &&
	ok "a placeholder sent into a raw tunnel is blocked and flagged" || bad "raw tunnel leak: $out / $r"
mv "$T/config.keep" "$XDG_CONFIG_HOME/agentmux/config"

# ---- the boundary ----
out=$(run -- /usr/bin/python3 -c '
import socket
for a in (("1.1.1.1", 443), ("10.0.0.1", 80), ("127.0.0.1", 22)):
    try:
        socket.create_connection(a, timeout=3); print("REACHED", a)
    except OSError as e:
        print("refused", a, e.errno)
try:
    n = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 12)   # NETLINK_NETFILTER
    n.bind((0, 0)); print("NETLINK open")
except OSError as e:
    print("netlink refused", e.errno)
' 2>&1)
! has "$out" "REACHED" && ok "a jailed process reaches no real address" || bad "real address: $out"
if command -v nft >/dev/null; then
	out=$(run -- sh -c 'id -u; nft flush ruleset; echo "flush=$?"; nft delete table ip agentmux; echo "delete=$?"; curl -sS --noproxy "*" --max-time 20 https://web.test/t8' 2>&1)
	has "$out" "^0$" && ! has "$out" "flush=0" && ! has "$out" "delete=0" && has "$out" '"path": "/t8"' &&
		ok "a jailed root cannot remove the redirect (nft refused, interception holds)" || bad "nft in the jail: $out"
fi
if command -v ip >/dev/null; then
	out=$(run -- sh -c 'ip addr del 198.18.0.1/15 dev lo; echo "del=$?"' 2>&1)
	! has "$out" "del=0" && ok "a jailed root cannot take the synthetic range off lo" || bad "ip addr del: $out"
fi

# ---- an ordinary user: its own jail's netns, redirect and resolver ----
if [ "$(id -u)" = 0 ] && command -v useradd >/dev/null && command -v setpriv >/dev/null; then
	TUSER=amxtp$$
	if useradd -M -d "$T/home" "$TUSER" 2>/dev/null; then
		mkdir -p "$T/home/config/agentmux" "$T/uproj" && cp "$XDG_CONFIG_HOME/agentmux/config" "$T/home/config/agentmux/" &&
			chown -R "$TUSER:" "$T/home" "$T/uproj"
		# The binary and its profiles where the user can read them.
		mkdir -p "$T/stage/bin" && cp "$AMX" "$T/stage/bin/agentmux" &&
			cp "${AMX%/*}/agentmux-full" "$T/stage/bin/agentmux-full" &&
			cp -r "${AGENTMUX_SHARE:?}" "$T/stage/share" && chmod -R a+rX "$T/stage"
		out=$(cd "$T/uproj" && env -i PATH="$PATH" HOME="$T/home" XDG_DATA_HOME="$T/home/data" \
			XDG_CONFIG_HOME="$T/home/config" AGENTMUX_SHARE="$T/stage/share" \
			timeout 120 setpriv --reuid="$(id -u "$TUSER")" --regid="$(id -g "$TUSER")" --init-groups \
			"$T/stage/bin/agentmux" run --on-unknown deny --upstream-ca "$UPCA" -- \
			sh -c 'curl -sS --noproxy "*" --max-time 20 https://web.test/u1; getent hosts evil.test; echo "evil=$?"; nft flush ruleset 2>/dev/null; echo "flush=$?"' 2>&1)
		if has "$out" "user namespace"; then
			echo "skip: unprivileged user namespaces are not available: $out"
		else
			has "$out" '"path": "/u1"' && has "$out" "evil=2" && ! has "$out" "flush=0" &&
				ok "ordinary user: interception, NXDOMAIN, and a redirect the jail cannot remove" || bad "ordinary user: $out"
		fi
	fi
fi

# ---- the switch ----
printf '[proxy]\ntransparent = no\n' >>"$XDG_CONFIG_HOME/agentmux/config"
out=$(run -- sh -c 'getent hosts web.test; echo "rc=$?"; curl -sS --noproxy "*" --max-time 10 https://web.test/t9' 2>&1)
has "$out" "rc=2" && ! grep -q "/t9" "$SEEN" && ok "transparent = no: no resolver, no interception" || bad "transparent = no: $out"
out=$(run -- sh -c 'curl -sS --max-time 20 "https://web.test/t10"' 2>&1)
has "$out" '"path": "/t10"' && ok "transparent = no: HTTPS_PROXY clients still work" || bad "transparent = no, proxied: $out"

[ $fails = 0 ] && { echo "all passed"; exit 0; }
echo "$fails failed"
exit 1
