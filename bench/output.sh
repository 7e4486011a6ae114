#!/bin/sh
# What quoting costs where it is paid most: listing a big store. A store of
# N request records (one in ten with a hostile path: a bidi override, a C1
# character) is listed by `agentmux requests` (a table, every field through
# the quoting helper), `agentmux requests --json`, and sqlite3 printing the
# same columns (what one would use instead); with AGENTMUX_BASE set, by that
# binary too (a build from before the quoting), from a store it made. Medians
# of the CPU time (user + system) of RUNS runs, in ms, and the ratios.
# Usage: bench/output.sh [N] [RUNS]   (default 50000, 7)
set -u
AMX=${AGENTMUX:-$(cd "$(dirname "$0")/.." && pwd)/build-test/src/agentmux}
N=${1:-50000}
RUNS=${2:-7}
for t in sqlite3 bc /usr/bin/time; do
	command -v $t >/dev/null || { echo "output.sh: needs $t" >&2; exit 1; }
done
T=$(mktemp -d /tmp/amx-bench-output.XXXXXX) || exit 1
trap 'rm -rf "$T"' EXIT
export XDG_CONFIG_HOME=$T/config XDG_DATA_HOME=$T/data XDG_RUNTIME_DIR=$T/run
mkdir -p "$XDG_CONFIG_HOME" "$XDG_DATA_HOME" "$XDG_RUNTIME_DIR" "$T/base"
chmod 700 "$XDG_RUNTIME_DIR"

# fill DATA_DIR BINARY: a store made by BINARY, holding the N records.
fill() {
	XDG_DATA_HOME=$1 "$2" sessions >/dev/null || exit 1
	sqlite3 "$1/agentmux/agentmux.db" <<-SQL || exit 1
	INSERT INTO sessions (kind, agent, project, command, started_at, state,
	  owner_pid) VALUES ('run', 'bench', '/proj', '["sh"]', 1, 'exited', 1);
	WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $N)
	INSERT INTO requests (session_id, started_at, method, scheme, host, port,
	  path, status, decision, rule, error, req_headers)
	SELECT 1, 1700000000000 + i, 'GET', 'https',
	  'api' || (i % 50) || '.example.com', 443,
	  CASE WHEN i % 10 = 0 THEN '/v1/p' || char(0x202e) || 'q' || char(0x9b) || i
	  ELSE '/v1/items/' || i END, 200, 'allow',
	  'allow api*.example.com (config:3)', NULL,
	  'Host: x' || char(10) || 'User-Agent: bench' || char(10)
	FROM n;
	SQL
}

# Median CPU time in ms of RUNS runs of the command line "$@": the machine
# is shared, and CPU time moves less with its load than wall time.
median_ms() {
	i=0
	: >"$T/times"
	while [ $i -lt "$RUNS" ]; do
		/usr/bin/time -f '%U %S' -o "$T/one" "$@" >/dev/null 2>&1
		awk '{ printf "%d\n", ($1 + $2) * 1000 }' "$T/one" >>"$T/times"
		i=$((i + 1))
	done
	sort -n "$T/times" | sed -n "$(((RUNS + 1) / 2))p"
}

ratio() {
	[ "$2" -gt 0 ] && echo "scale=2; $1 / $2" | bc || echo "-"
}

fill "$XDG_DATA_HOME" "$AMX"
DB=$XDG_DATA_HOME/agentmux/agentmux.db
sq=$(median_ms sqlite3 -separator '  ' "$DB" "SELECT id, session_id, \
started_at, decision, method, host || ':' || port, path, status, bytes_down, \
duration_us, rule FROM requests ORDER BY id")
tab=$(median_ms "$AMX" requests)
js=$(median_ms "$AMX" requests --json)
echo "RESULT requests-table-$N cpu=${tab}ms ratio-to-sqlite3=$(ratio "$tab" "$sq")"
echo "RESULT requests-json-$N cpu=${js}ms ratio-to-sqlite3=$(ratio "$js" "$sq")"
echo "RESULT sqlite3-$N cpu=${sq}ms"
if [ -n "${AGENTMUX_BASE:-}" ]; then
	fill "$T/base" "$AGENTMUX_BASE"
	export XDG_DATA_HOME=$T/base
	base=$(median_ms "$AGENTMUX_BASE" requests)
	basej=$(median_ms "$AGENTMUX_BASE" requests --json)
	echo "RESULT requests-table-$N-base cpu=${base}ms quoted-to-base=$(ratio "$tab" "$base")"
	echo "RESULT requests-json-$N-base cpu=${basej}ms quoted-to-base=$(ratio "$js" "$basej")"
fi
