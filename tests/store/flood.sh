#!/usr/bin/env bash
# A jailed agent floods the proxy with requests to denied hosts, each with a
# 60 KB header (unbounded, that grew the database by ~150 MB/s): each
# request's stored headers are cut at [proxy] record_headers, the session's
# records stop at [proxy] record_budget, the rest are counted, and the
# session is flagged; `run`, `show` and `sessions` say so. As root and as a
# throwaway unprivileged user.
set -u
AMX=${AGENTMUX:?AGENTMUX must name the binary}
HERE=$(cd "$(dirname "$0")" && pwd)
HOSTILE_LIB=$HERE/hostile-lib.sh
[ -f "$HOSTILE_LIB" ] || HOSTILE_LIB=$HERE/../cmd/hostile-lib.sh
# shellcheck source=../cmd/hostile-lib.sh
. "$HOSTILE_LIB"
command -v python3 >/dev/null || { echo "SKIP: python3 is missing"; exit 77; }
[ -x /usr/bin/python3 ] || { echo "SKIP: /usr/bin/python3 (for the jail) is missing"; exit 77; }

WHO=${WHO:-root}
fails=0
bad() { echo "FAIL [$WHO]: $*"; fails=$((fails + 1)); }
N=2000

checks() {
	T=$(mktemp -d "${TMPDIR:-/tmp}/amx-flood-$WHO.XXXXXX") || exit 1
	chmod 755 "$T"
	export HOME=$T/home
	export XDG_CONFIG_HOME=$T/config XDG_DATA_HOME=$T/data XDG_RUNTIME_DIR=$T/run
	mkdir -p "$XDG_CONFIG_HOME/agentmux" "$XDG_DATA_HOME" "$XDG_RUNTIME_DIR" "$HOME/proj"
	chmod 700 "$XDG_RUNTIME_DIR"
	printf '[proxy]\nrecord_budget = 4M\n' >"$XDG_CONFIG_HOME/agentmux/config"
	cat >"$HOME/proj/flood.py" <<-PY
	import os, socket, time
	port = int(os.environ["HTTP_PROXY"].rstrip("/").rsplit(":", 1)[1])
	pad = b"X-Pad: " + b"a" * 60000 + b"\r\n"
	end = time.monotonic() + 120
	sent = 0
	for i in range($N):
	    if time.monotonic() > end:
	        break
	    s = socket.create_connection(("127.0.0.1", port), timeout=20)
	    s.sendall(b"GET http://flood-%d.test/x HTTP/1.1\r\nHost: flood-%d.test\r\n" % (i, i)
	              + pad + b"Connection: close\r\n\r\n")
	    while s.recv(65536):
	        pass
	    s.close()
	    sent += 1
	print("sent", sent)
	PY
	(cd "$HOME/proj" && timeout 300 "$AMX" run --on-unknown deny -- \
	    /usr/bin/python3 flood.py) >"$T/run.out" 2>"$T/run.err" </dev/null
	sent=$(sed -n 's/^sent //p' "$T/run.out")
	[ "$sent" = "$N" ] || bad "the flood sent ${sent:-nothing} of $N: $(head -c 1000 "$T/run.err")"
	grep -q 'record_budget' "$T/run.err" ||
	    bad "run did not say the budget was reached: $(head -c 1000 "$T/run.err")"

	# Bounded: unbounded, this is over 110 MB of headers alone.
	size=$(du -cb "$XDG_DATA_HOME"/agentmux/agentmux.db* | tail -n 1 | cut -f1)
	echo "[$WHO] $N requests with 60 KB headers: the database holds $size bytes"
	[ "$size" -lt $((24 * 1024 * 1024)) ] ||
	    bad "the database grew to $size bytes for a budget of 4M"

	"$AMX" show last >"$T/show" 2>&1
	grep -q "requests  $N ($N denied)" "$T/show" ||
	    bad "show does not count every request: $(head -c 1000 "$T/show")"
	grep -Eq 'BUDGET +the session reached its record budget: [0-9]+ requests' "$T/show" ||
	    bad "show does not say the budget was hit: $(head -c 1000 "$T/show")"
	grep -q 'flags     budget' "$T/show" || bad "the session is not flagged"
	"$AMX" sessions >"$T/sessions" 2>&1
	grep -q 'budget' "$T/sessions" || bad "sessions does not show the flag: $(cat "$T/sessions")"
	"$AMX" requests last --json >"$T/req.json" 2>"$T/req.err"
	python3 - "$T/req.json" "$N" <<-'PY' || bad "the stored requests: see above"
	import json, sys
	rs = json.load(open(sys.argv[1]))
	n = int(sys.argv[2])
	assert 0 < len(rs) < n // 4, len(rs)
	for r in rs:
	    h = r["request_headers"] or ""
	    assert len(h.encode()) < 16 * 1024 + 200, len(h)
	    assert "bytes of headers not recorded" in h, h[-200:]
	PY
	rm -rf "$T"
}

if [ "${1:-}" = --as-user ]; then
	checks
	echo "[$WHO] flood: $fails failed"
	[ "$fails" = 0 ]
	exit
fi
checks
echo "[root] flood: $fails failed"
as_throwaway_user "$HERE/$(basename "$0")" || fails=$((fails + 1))
[ "$fails" = 0 ]
