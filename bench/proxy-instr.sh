#!/usr/bin/env bash
# Instructions a keep-alive HTTPS request costs a proxy (callgrind counts instructions, not time:
# the same figure on a loaded machine as on an idle one). agentmux proxy and bench/floor-proxy.c
# (the least an OpenSSL intercepting proxy does) each serve N sequential 1 KiB GETs from a local
# nginx, through the anchor's hbench client; instrumentation is on only around those N requests,
# so start-up, the CA and both handshakes are left out. agentmux runs with a secret bound to another
# host (every request is checked for its placeholder) and a rule for the name hbench gives.
# Usage: bench/proxy-instr.sh [BUILD_DIR]   (N=2000 requests; needs valgrind, nginx, gcc, openssl)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
anchors=$(cd "${ANCHORS:-$src/../shared/bench-anchors}" 2>/dev/null && pwd) ||
	{ echo "bench/proxy-instr.sh: no anchor scripts; set ANCHORS" >&2; exit 1; }
n=${N:-2000}
uport=${UPSTREAM_PORT:-18453} port=${AMX_PROXY_PORT:-18092}
for tool in valgrind callgrind_control nginx gcc openssl; do
	command -v "$tool" >/dev/null || { echo "bench/proxy-instr.sh: $tool is missing" >&2; exit 1; }
done
[[ -x $build/src/agentmux && -x $build/bench/amx-floor-proxy ]] ||
	{ echo "bench/proxy-instr.sh: build first (meson setup build && ninja -C build)" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/amx-bench-instr.XXXXXX")
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT
chmod 755 "$work"
mkdir -p "$work"/{www,tmp,logs}
chmod 755 "$work/www"
head -c 1024 /dev/urandom >"$work/www/1k.bin"
gcc -O2 -o "$work/hbench" "$anchors/hbench.c" -lssl -lcrypto -lpthread

# The upstream, as the anchor has it: nginx, RSA-2048, keep-alive.
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -keyout "$work/up.key" -out "$work/up.crt" \
	-subj /CN=localhost -addext 'subjectAltName=DNS:localhost,IP:127.0.0.1' 2>/dev/null
cat >"$work/nginx.conf" <<EOF
worker_processes 1;
pid $work/nginx.pid;
error_log $work/logs/error.log warn;
events { worker_connections 256; }
http {
    access_log off;
    keepalive_requests 1000000;
    types { application/octet-stream bin; }
    client_body_temp_path $work/tmp; proxy_temp_path $work/tmp; fastcgi_temp_path $work/tmp;
    uwsgi_temp_path $work/tmp; scgi_temp_path $work/tmp;
    server {
        listen 127.0.0.1:$uport ssl;
        ssl_certificate $work/up.crt;
        ssl_certificate_key $work/up.key;
        root $work/www;
    }
}
EOF
nginx -c "$work/nginx.conf" -p "$work/" -g 'daemon off;' >"$work/logs/nginx.out" 2>&1 &
pids+=($!)

# The floor's certificate, and agentmux's isolated dirs (its CA is made at first start).
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=localhost \
	-addext 'subjectAltName=DNS:localhost,IP:127.0.0.1' -keyout "$work/floor.key" \
	-out "$work/floor.crt" 2>/dev/null
. "$src/bench/lib.sh"
bench_isolate "$work"

# measure NAME READY_PATTERN CMD... -> instructions per request, on stdout (no pattern: the port)
measure() {
	local name=$1 ready=$2 pid i total
	shift 2
	valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$work/$name.cg" \
		"$@" >"$work/$name.out" 2>&1 &
	pid=$!
	pids+=("$pid")
	for i in $(seq 300); do
		if [[ -n $ready ]]; then
			grep -q "$ready" "$work/$name.out" 2>/dev/null && break
		else
			timeout 1 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null && break
		fi
		sleep 0.1
	done
	cat "$work/up.crt" "$work/floor.crt" "$XDG_DATA_HOME"/agentmux/ca.pem >"$work/trust.pem" 2>/dev/null
	hb=("$work/hbench" -t "127.0.0.1:$uport" -x "127.0.0.1:$port" -s localhost -a "$work/trust.pem"
		-L 180 -m seq -w 0 -p /1k.bin)
	"${hb[@]}" -n 50 >/dev/null   # the connections, handshakes and caches: not counted
	callgrind_control -i on "$pid" >/dev/null 2>&1
	"${hb[@]}" -n "$n" >/dev/null
	callgrind_control -i off "$pid" >/dev/null 2>&1
	# Valgrind takes a signal only between blocks: ask until it goes.
	for i in $(seq 50); do
		kill -TERM "$pid" 2>/dev/null || break
		sleep 0.2
	done
	wait "$pid" 2>/dev/null || true
	total=$(sed -n 's/^totals: *\([0-9]*\).*/\1/p' "$work/$name.cg"* | awk '{s += $1} END {print s}')
	echo $((total / n))
}

for i in $(seq 50); do timeout 1 bash -c "exec 3<>/dev/tcp/127.0.0.1/$uport" 2>/dev/null && break; sleep 0.1; done
a=$(measure agentmux 'trust the CA' "$build/src/agentmux" proxy -a bench --listen "127.0.0.1:$port" \
	--upstream-ca "$work/up.crt" --allow "127.0.0.1:$uport" --allow "localhost:$uport")
f=$(measure floor '' "$build/bench/amx-floor-proxy" "$port" "127.0.0.1:$uport" "$work/floor.crt" \
	"$work/floor.key" "$work/up.crt" localhost)
printf 'RESULT proxy-instr.agentmux median=%s min=- max=- runs=1 unit=instructions/request\n' "$a"
printf 'RESULT proxy-instr.floor median=%s min=- max=- runs=1 unit=instructions/request\n' "$f"
awk -v a="$a" -v f="$f" 'BEGIN { printf "agentmux proxy: %d instructions a keep-alive request, %.2fx the floor (%d)\n", a, a / f, f }'
