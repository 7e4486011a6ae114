#!/usr/bin/env bash
# Load through the real proxy: `agentmux proxy` (recording every request in
# its store) in front of a local upstream (tests/proxy/upstream.py), with
# LOAD_CLIENTS threads (default 64) for LOAD_SECONDS (default 60) of plain
# and intercepted HTTPS requests on keep-alive connections. Samples the
# proxy's RSS each second and reports it after a warm-up, at its peak and at
# the end. Fails on any error, a proxy that dies or does not exit cleanly,
# requests missing from the store, or RSS at the end more than
# LOAD_RSS_SLACK_KB (default 16384) above the warm-up figure.
# Usage: AGENTMUX=build/src/agentmux bench/load.sh   (tests run it shortened)
set -u
AMX=${AGENTMUX:-$(dirname "$0")/../build/src/agentmux}
SRC=$(cd "$(dirname "$0")/.." && pwd)
CLIENTS=${LOAD_CLIENTS:-64}
SECONDS_=${LOAD_SECONDS:-60}
SLACK=${LOAD_RSS_SLACK_KB:-16384}
for t in python3 openssl sqlite3; do
	command -v $t >/dev/null || { echo "SKIP: $t is missing"; exit 77; }
done
[ -x "$AMX" ] || { echo "load: no agentmux binary at $AMX (set AGENTMUX)"; exit 1; }
# Under AddressSanitizer freed memory sits in a quarantine: RSS says nothing.
if ldd "$AMX" 2>/dev/null | grep -q libasan; then
	SLACK=$((1 << 30))
	echo "load: a sanitizer build: RSS is reported, not checked"
fi

T=$(mktemp -d /tmp/amx-load.XXXXXX)
export XDG_CONFIG_HOME=$T/config XDG_DATA_HOME=$T/data XDG_RUNTIME_DIR=$T/run XDG_STATE_HOME=$T/state
mkdir -p "$XDG_CONFIG_HOME/agentmux" "$XDG_DATA_HOME" "$XDG_RUNTIME_DIR" "$T/up"
chmod 700 "$XDG_RUNTIME_DIR"
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "load: FAIL: $*"; exit 1; }

UPSTREAM_LIFETIME=$((SECONDS_ + 120)) python3 "$SRC/tests/proxy/upstream.py" "$T/up" \
	</dev/null >"$T/up.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do [ -s "$T/up/ports" ] && break; sleep 0.1; done
read -r HP PP _ <"$T/up/ports" || fail "the upstream did not start"

"$AMX" proxy --listen 127.0.0.1:0 --upstream-ca "$T/up/ca.pem" \
	--allow "127.0.0.1:$HP" --allow "127.0.0.1:$PP" >"$T/proxy.out" 2>"$T/proxy.err" &
APID=$!
PIDS+=($APID)
for _ in $(seq 100); do grep -q serving "$T/proxy.out" 2>/dev/null && break; sleep 0.1; done
PORT=$(sed -n 's/.*serving http:\/\/127.0.0.1:\([0-9]*\).*/\1/p' "$T/proxy.out")
CA=$(sed -n 's/.*trust the CA \(.*\)$/\1/p' "$T/proxy.out")
[ -n "$PORT" ] || fail "agentmux proxy did not start: $(cat "$T/proxy.err")"

rss() { awk '/^VmRSS/ {print $2}' "/proc/$APID/status" 2>/dev/null; }
( while kill -0 "$APID" 2>/dev/null; do echo "$(date +%s) $(rss)"; sleep 1; done ) >"$T/rss" &
PIDS+=($!)

python3 "$SRC/bench/load-client.py" "127.0.0.1:$PORT" "$CA" \
	"http://127.0.0.1:$PP/load" "https://127.0.0.1:$HP/load" "$CLIENTS" "$SECONDS_" \
	>"$T/client.json" 2>"$T/client.err" || fail "the load client failed: $(tail -3 "$T/client.err")"
kill -0 "$APID" 2>/dev/null || fail "agentmux proxy died under load: $(tail -5 "$T/proxy.err")"
kill -TERM "$APID"
wait "$APID"
st=$?
[ $st = 0 ] || fail "agentmux proxy exited $st after SIGTERM: $(tail -5 "$T/proxy.err")"
DB=$(find "$XDG_DATA_HOME" -name '*.db' | head -n 1)
recorded=$(sqlite3 "$DB" 'select count(*) from requests' 2>/dev/null || echo 0)

python3 - "$T/client.json" "$T/rss" "$recorded" "$SLACK" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
rows = [l.split() for l in open(sys.argv[2]) if len(l.split()) == 2]
rss = [int(r[1]) for r in rows]
warm = rss[min(3, len(rss) - 1)] if rss else 0
end, peak = (rss[-1], max(rss)) if rss else (0, 0)
rec, slack = int(sys.argv[3]), int(sys.argv[4])
print("load: %d clients x %.0f s: %d requests (%.0f/s), %d errors, p50 %s ms, p99 %s ms"
      % (c["clients"], c["seconds"], c["requests"], c["rps"], c["errors"],
         c["p50_ms"], c["p99_ms"]))
print("load: proxy RSS %d KiB after warm-up, %d KiB peak, %d KiB at the end (%+d KiB)"
      % (warm, peak, end, end - warm))
print("load: %d requests recorded in the store" % rec)
bad = []
if c["errors"]:
    bad.append("%d errors: %s" % (c["errors"], c["reasons"]))
if rec < c["requests"] - c["errors"]:
    bad.append("only %d of %d requests recorded" % (rec, c["requests"]))
if end - warm > slack:
    bad.append("RSS grew by %d KiB" % (end - warm))
if bad:
    print("load: FAIL: " + "; ".join(bad))
    sys.exit(1)
PY
