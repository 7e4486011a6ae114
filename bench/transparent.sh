#!/usr/bin/env bash
# Transparent interception against HTTPS_PROXY, in one jail and one run (issue 20's goal: within
# 10 %): a python client in the jail makes keep-alive GETs of 1 KiB over one TLS connection, through
# a CONNECT to the proxy, then with no proxy at all (the resolver's address, the redirect),
# alternating rounds; the upstream is tests/proxy/upstream.py on this machine.
# Usage: bench/transparent.sh [BUILD_DIR]   (N requests a round, ROUNDS rounds)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
[[ -x $build/src/agentmux ]] || { echo "bench/transparent.sh: build first" >&2; exit 1; }
n=${N:-500}
rounds=${ROUNDS:-3}
work=$(mktemp -d "${TMPDIR:-/tmp}/amx-bench-transparent.XXXXXX")
up=
trap '[[ -n $up ]] && kill "$up" 2>/dev/null; rm -rf "$work"' EXIT
. "$src/bench/lib.sh"
bench_isolate "$work"
mkdir -p "$work/up" "$work/proj"

UPSTREAM_LIFETIME=900 python3 "$src/tests/proxy/upstream.py" "$work/up" </dev/null >/dev/null 2>&1 &
up=$!
for _ in $(seq 100); do [[ -s $work/up/ports ]] && break; sleep 0.1; done
read -r hp _ <"$work/up/ports"
cat >"$XDG_CONFIG_HOME/agentmux/config" <<CONF
[proxy]
upstream_ca = $work/up/ca.pem
connect_to = web.test:443:127.0.0.1:$hp
[policy]
allow = web.test GET /big
CONF

cat >"$work/proj/client.py" <<'PY'
import http.client, os, ssl, sys, time
n, rounds = int(sys.argv[1]), int(sys.argv[2])
ctx = ssl.create_default_context()
proxy = os.environ["HTTPS_PROXY"].split("//", 1)[1].rstrip("/").split(":")

def conn(mode):
    if mode == "transparent":
        return http.client.HTTPSConnection("web.test", 443, context=ctx)
    c = http.client.HTTPSConnection(proxy[0], int(proxy[1]), context=ctx)
    c.set_tunnel("web.test", 443)
    return c

def one(mode):
    c = conn(mode)
    c.request("GET", "/big?size=1024"); c.getresponse().read()   # the handshake, untimed
    t = time.monotonic()
    for _ in range(n):
        c.request("GET", "/big?size=1024")
        r = c.getresponse()
        if len(r.read()) != 1024:
            sys.exit("short body")
    c.close()
    return n / (time.monotonic() - t)

best = {"proxy": 0.0, "transparent": 0.0}
for _ in range(rounds):
    for mode in ("proxy", "transparent"):
        best[mode] = max(best[mode], one(mode))
for mode, rps in best.items():
    print("RESULT %s keep-alive 1KiB GETs: %.0f req/s (best of %d rounds of %d)" % (mode, rps, rounds, n))
print("RESULT transparent / HTTPS_PROXY: %.3f" % (best["transparent"] / best["proxy"]))
PY
cd "$work/proj"
"$build/src/agentmux" run --on-unknown deny -- /usr/bin/python3 client.py "$n" "$rounds"
