#!/bin/sh
# "Allow always" through a real tmux lets the user pick the rule it saves, each shown exactly as it goes into
# the config: this host and port (the default), any port, this method and path prefix, any subdomain of the
# registrable domain (from Debian's public suffix list). Each writes the rule shown, and later requests that
# the rule covers pass with no prompt while those it does not cover are asked about.
set -u
. "$(dirname "$0")/lib.sh"
for c in curl python3 openssl; do
	command -v $c >/dev/null 2>&1 || { echo "SKIP: $c is not installed"; exit 77; }
done
[ -r /usr/share/publicsuffix/public_suffix_list.dat ] ||
	{ echo "SKIP: the publicsuffix package is not installed"; exit 77; }

https_upstream_make DNS:localhost,IP:127.0.0.1,DNS:api.two.test,DNS:www.two.test,DNS:api.other.test
https_upstream_start port 300
UPID=$!
https_upstream_start port2 300
UPID2=$!
trap 'kill $UPID2 2>/dev/null; cleanup' EXIT
PORT=$(https_upstream_port port)
PORT2=$(https_upstream_port port2)
[ -n "$PORT" ] && [ -n "$PORT2" ] || fail "the local HTTPS servers did not start"
CONF=$XDG_CONFIG_HOME/agentmux/config
cat >"$CONF" <<EOF
[proxy]
upstream_ca = $u/ca.pem
connect_to = api.two.test:$PORT:127.0.0.1:$PORT
connect_to = www.two.test:$PORT:127.0.0.1:$PORT

[policy]
on_unknown = ask
prompt_timeout = 120
EOF
start_dashboard
wait_for '1:shell\* (working|needs you)' || fail "no first session"
wait_for '[#$] ?$' || fail "no shell prompt"
req=0

# get URL: curl in the pane; the pane says when it is done, with the status.
get() {
	req=$((req + 1))
	keys "clear; curl -sS -o /dev/null -w 'code=%{http_code} ' $1; echo done-\$((1000+$req))" Enter
}
done_ok() {
	wait_for "code=200 done-$((1000 + req))" 20 || fail "$1"
}
ask_always() {
	wait_for "1/1 1:shell .*$1" || fail "no prompt for $1"
	prefix a
	wait_for 'allow always' || fail "the prompt did not take the focus"
	keys A
}

# The default is the narrowest: this host and port, shown as the line it writes.
get "https://127.0.0.1:$PORT/v1/a"
ask_always "127\\.0\\.0\\.1:$PORT"
wait_for "save allow 127\\.0\\.0\\.1:$PORT \\[1/3 this host and port\\]" ||
	fail "allow always does not show the narrowest rule first"
keys Right Right
wait_for "save allow 127\\.0\\.0\\.1:$PORT GET /v1/ \\[3/3 " || fail "no method and path prefix scope"
keys Enter
done_ok "the method and path scope did not let the held request through"
grep -q "^allow = 127.0.0.1:$PORT GET /v1/\$" "$CONF" || { cat "$CONF"; fail "the method and path rule is not the line shown"; }
get "https://127.0.0.1:$PORT/v1/b"
done_ok "a request the method and path rule covers did not pass"
get "https://127.0.0.1:$PORT/v2/c"
ask_always "127\\.0\\.0\\.1:$PORT"
wait_for "save allow 127\\.0\\.0\\.1:$PORT \\[1/3" || fail "the second question does not default to host and port"
keys Enter
done_ok "host and port did not let the held request through"
grep -q "^allow = 127.0.0.1:$PORT\$" "$CONF" || { cat "$CONF"; fail "the host and port rule is not the line shown"; }
get "https://127.0.0.1:$PORT/v3/d"
done_ok "a request the host and port rule covers did not pass"

# Any port: localhost on one port, then on another with no question.
get "https://localhost:$PORT/p1"
ask_always "localhost:$PORT"
keys Right
wait_for "save allow localhost \\[2/3 this host, any port\\]" || fail "no any-port scope"
keys Enter
done_ok "any port did not let the held request through"
grep -q "^allow = localhost\$" "$CONF" || { cat "$CONF"; fail "the any-port rule is not the line shown"; }
get "https://localhost:$PORT2/p2"
done_ok "a request to another port was not covered by the any-port rule"

# The registrable domain's subdomains: another subdomain passes, another domain is asked about.
get "https://api.two.test:$PORT/s1"
ask_always "api\\.two\\.test:$PORT"
wait_for "\\[1/4 this host and port\\]" || fail "a name has no fourth scope"
keys 4
done_ok "the subdomain scope did not let the held request through"
grep -q '^allow = \*\.two\.test$' "$CONF" || { cat "$CONF"; fail "the subdomain rule is not *.two.test"; }
get "https://www.two.test:$PORT/s2"
done_ok "another subdomain was not covered by the subdomain rule"
get "https://api.other.test:$PORT/s3"
wait_for "1/1 1:shell .*api\\.other\\.test:$PORT" || fail "another registrable domain was not asked about"
prefix a
wait_for 'deny once' || fail "the prompt did not take the focus"
keys d
wait_for "code=403 done-$((1000 + req))" 20 || fail "deny once did not refuse the other domain"
grep -q 'api.other.test' "$SEEN" && fail "the other domain's request reached the server"

prefix q
wait_for 'Quit\?' || fail "quitting did not ask"
keys y
wait_for 'DASHBOARD-EXITED-0' || fail "the dashboard did not exit"
echo "scope: host and port (default), any port, method and path prefix, subdomains; each writes the rule shown"
