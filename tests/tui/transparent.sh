#!/bin/sh
# Transparent interception asks like a proxy does (issue 20): in a jailed pane, curl with no proxy to a
# name the jail's resolver answered raises a prompt naming that host; allow once lets it through, deny
# once gets it refused; the requests panel lists the lookup beside the requests.
set -u
. "$(dirname "$0")/lib.sh"
SRC=${AGENTMUX_SRC:?AGENTMUX_SRC must name the source tree}
command -v curl >/dev/null 2>&1 || { echo "SKIP: curl is not installed"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 is not installed"; exit 77; }
command -v openssl >/dev/null 2>&1 || { echo "SKIP: openssl is not installed"; exit 77; }

# HTTPS and HTTP servers whose certificate names web.test; they write what they served to seen.log.
u=$T/up
mkdir -p "$u"
UPSTREAM_LIFETIME=300 timeout 300 python3 "$SRC/tests/proxy/upstream.py" "$u" </dev/null >/dev/null 2>&1 &
UPID=$!
i=0
while [ $i -lt 100 ] && [ ! -s "$u/ports" ]; do sleep 0.1; i=$((i + 1)); done
read -r HP PP _ <"$u/ports" || fail "the local servers did not start"
SEEN=$u/seen.log

cat >"$XDG_CONFIG_HOME/agentmux/config" <<CONF
[proxy]
upstream_ca = $u/ca.pem
connect_to = web.test:443:127.0.0.1:$HP
connect_to = web.test:80:127.0.0.1:$PP

[policy]
on_unknown = ask
prompt_timeout = 30
CONF
probe=$("$AGENTMUX" run -C "$P" -- getent hosts web.test 2>&1 </dev/null)
case $probe in
*"198.1"*" web.test"*) ;;
*nftables*) echo "SKIP: no transparent interception on this kernel: $probe"; exit 77 ;;
*) fail "the jail's resolver did not answer: $probe" ;;
esac

start_dashboard
wait_for '[0-9][0-9]*:shell\* (working|needs you)' || fail "no first session"
wait_for '[#$] ?$' || fail "no shell prompt"

# Allow once: curl ignores every proxy; the redirect brings it to the prompt all the same.
keys "curl -s --noproxy '*' https://web.test/one; echo; echo curl-done-\$((0+1))" Enter
wait_for "1/1 [0-9][0-9]*:shell .*web\\.test" || fail "no prompt naming web.test"
grep -q '/one' "$SEEN" 2>/dev/null && fail "the request reached the server before anyone answered"
prefix a
wait_for 'allow once' || fail "the prompt queue did not take the focus"
keys a
wait_for '"path": "/one"' || fail "allow once did not let the request through"
wait_for 'curl-done-1' || fail "curl did not finish"
wait_gone 'prefix a to answer' || fail "the prompt bar stayed after the answer"

# Deny once, for plain HTTP: the proxy's 403.
keys "clear; curl -sS --noproxy '*' -w ' status=%{http_code}' http://web.test/two; echo; echo curl-done-\$((1+1))" Enter
wait_for "1/1 [0-9][0-9]*:shell .*web\\.test" || fail "no prompt for the second request"
prefix a
wait_for 'deny once' || fail "the prompt queue did not take the focus again"
keys d
wait_for 'curl-done-2' || fail "curl did not finish after deny once"
scr | grep -q 'status=403' || fail "deny once did not answer 403"
grep -q '/two' "$SEEN" && fail "a denied request reached the server"

# The requests panel lists the lookups beside the requests.
prefix r
wait_for 'requests: [0-9]+ of [0-9]+' || fail "no requests panel"
wait_for '/one' || fail "the requests panel does not list the allowed request"
scr | grep -q ' A .*web\.test' || fail "the requests panel does not list the lookup: $(scr)"
escape
echo "all passed"
