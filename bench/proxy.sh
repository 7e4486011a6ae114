#!/usr/bin/env bash
# The proxy against mitmdump, tinyproxy and no proxy, through the shared anchor script
# (../shared/bench-anchors/proxy-bench.sh): `agentmux proxy` is the extra proxy, with isolated XDG
# dirs, its CA made beforehand, and the anchor's nginx upstream allowed by rule. Prints the anchor's
# RESULT lines, then each goal of the proxy issue as a ratio measured in the same run. A second run
# of the anchor measures bench/floor-proxy.c (the least an OpenSSL intercepting proxy does per
# request, see there) against no proxy, so that what agentmux itself adds shows (FLOOR=0 skips it).
# agentmux runs with a secret bound to another host, so that every request is checked for its
# placeholder as a jail's would be, and with a rule for the name the anchor's client gives
# (CONNECT 127.0.0.1, SNI and Host "localhost": a name at an address needs a rule of its own).
# Usage: bench/proxy.sh [BUILD_DIR]   (knobs of the anchor script pass through: ROUNDS, SEQ_SECS, ...)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
anchors=$(cd "${ANCHORS:-$src/../shared/bench-anchors}" 2>/dev/null && pwd) ||
	{ echo "bench/proxy.sh: no anchor scripts; set ANCHORS" >&2; exit 1; }
[[ -x $build/src/agentmux ]] ||
	{ echo "bench/proxy.sh: build first (meson setup build && ninja -C build)" >&2; exit 1; }
port=${AMX_PROXY_PORT:-18090}
upstream=${UPSTREAM_PORT:-18443}
work=$(mktemp -d "${TMPDIR:-/tmp}/amx-bench-proxy.XXXXXX")
trap 'rm -rf "$work"' EXIT
. "$src/bench/lib.sh"
bench_isolate "$work"

# The CA must exist before the anchor builds its trust file: one short start.
"$build/src/agentmux" proxy --listen "127.0.0.1:0" >"$work/first.out" 2>&1 &
pid=$!
for _ in $(seq 50); do grep -q "trust the CA" "$work/first.out" && break; sleep 0.1; done
kill "$pid" 2>/dev/null
wait "$pid" 2>/dev/null || true
ca=$(sed -n 's/.*trust the CA \(.*\)$/\1/p' "$work/first.out")
[[ -f $ca ]] || { echo "bench/proxy.sh: agentmux proxy did not start: $(cat "$work/first.out")" >&2; exit 1; }

PROXY_NAME=agentmux PROXY_URL="http://127.0.0.1:$port" PROXY_CA="$ca" \
PROXY_CMD="$build/src/agentmux proxy -a bench --listen 127.0.0.1:$port --upstream-ca \$ANCHOR_UPSTREAM_CA --allow 127.0.0.1:$upstream --allow localhost:$upstream" \
	"$anchors/proxy-bench.sh" | tee "$work/results.txt"

# The floor: its own CA and a leaf for the name the anchor's client asks for.
touch "$work/floor.txt"
if [[ ${FLOOR:-1} != 0 && -x $build/bench/amx-floor-proxy ]]; then
	fport=${AMX_FLOOR_PORT:-18091}
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
		-subj /CN=floor-ca -keyout "$work/floor-ca.key" -out "$work/floor-ca.crt" 2>/dev/null
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=localhost \
		-keyout "$work/floor.key" -out "$work/floor.csr" 2>/dev/null
	printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >"$work/floor.ext"
	openssl x509 -req -in "$work/floor.csr" -CA "$work/floor-ca.crt" -CAkey "$work/floor-ca.key" \
		-CAcreateserial -days 2 -extfile "$work/floor.ext" -out "$work/floor.crt" 2>/dev/null
	PROXIES=direct PROXY_NAME=floor PROXY_URL="http://127.0.0.1:$fport" PROXY_CA="$work/floor-ca.crt" \
	PROXY_CMD="$build/bench/amx-floor-proxy $fport \$ANCHOR_UPSTREAM $work/floor.crt $work/floor.key \$ANCHOR_UPSTREAM_CA localhost" \
		"$anchors/proxy-bench.sh" | sed 's/^RESULT proxy\.direct\./RESULT proxy.direct-floor-run./' |
		tee "$work/floor.txt"
fi

python3 - "$work/results.txt" "$work/floor.txt" <<'PY'
import re, sys
fig = {}
for path in sys.argv[1:]:
    for line in open(path):
        m = re.match(r"RESULT proxy\.(\S+?)\.(\S+) median=(\S+)", line)
        if m:
            try:
                fig[(m.group(1), m.group(2))] = float(m.group(3))
            except ValueError:
                pass
def f(p, k):
    return fig.get((p, k), float("nan"))
conc = next((k for (p, k) in fig if p == "agentmux" and k.startswith("conc") and k.endswith("_rps")), "conc32_rps")
n = conc[4:-4]
rows = [
    ("keep-alive 1 KiB GETs vs mitmdump", f("agentmux", "seq_rps") / f("mitmdump", "seq_rps"), ">= 15x"),
    ("keep-alive 1 KiB GETs vs direct", f("agentmux", "seq_rps") / f("direct", "seq_rps"), ">= 0.5x"),
    ("added p50 latency (us)", f("agentmux", "added_seq_latency_us"), "<= 50"),
    ("new TLS connections vs mitmdump", f("agentmux", "newconn_cps") / f("mitmdump", "newconn_cps"), ">= 4x"),
    ("1 MiB downloads vs direct", f("agentmux", "dl_1m_MBps") / f("direct", "dl_1m_MBps"), ">= 0.5x"),
    ("%s clients vs mitmdump" % n, f("agentmux", conc) / f("mitmdump", conc), ">= 15x"),
    ("%s clients p99 (ms)" % n, f("agentmux", "conc%s_p99_ms" % n), "<= 5"),
    ("%s clients errors" % n, f("agentmux", "conc%s_errors" % n), "0"),
    ("peak RSS (MiB)", f("agentmux", "rss_peak_mib"), "<= 8"),
]
for name, value, goal in rows:
    print("GOAL %-36s %10.2f   (goal %s)" % (name, value, goal))
# The floor ran in a run of its own: each is compared with no proxy in its run.
floor = [
    ("floor keep-alive vs direct", f("floor", "seq_rps") / f("direct-floor-run", "seq_rps")),
    ("agentmux keep-alive vs the floor (across runs)", (f("agentmux", "seq_rps") / f("direct", "seq_rps")) /
     (f("floor", "seq_rps") / f("direct-floor-run", "seq_rps"))),
    ("floor added p50 latency (us)", f("floor", "seq_p50_us") - f("direct-floor-run", "seq_p50_us")),
    ("floor 1 MiB downloads vs direct", f("floor", "dl_1m_MBps") / f("direct-floor-run", "dl_1m_MBps")),
    ("floor %s clients p99 (ms)" % n, f("floor", "conc%s_p99_ms" % n)),
    ("floor peak RSS (MiB)", f("floor", "rss_peak_mib")),
]
for name, value in floor:
    if value == value:
        print("FLOOR %-35s %10.2f" % (name, value))
PY
