#!/bin/sh
# Builds the libFuzzer targets with clang (ASan+UBSan, coverage everywhere) and runs
# each for FUZZ_SECONDS (default 60) on a copy of its corpus. New interesting inputs
# stay in the scratch dir; a crash leaves its input in tests/fuzz/ and fails the run.
# Usage: tests/fuzz/run.sh [TARGET...]     (FUZZ_SECONDS=600 for a longer run by hand)
set -u
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${FUZZ_BUILD_DIR:-$src/build-fuzz}
secs=${FUZZ_SECONDS:-60}
if [ ! -f "$build/build.ninja" ]; then
	CC=clang meson setup "$build" "$src" -Dfuzz=enabled -Dtests=enabled \
		-Db_sanitize=address,undefined -Db_lundef=false \
		-Dc_args=-fsanitize=fuzzer-no-link >&2 || exit 1
fi
targets=${*:-$(cd "$src/tests/fuzz/corpus" && ls)}
for t in $targets; do
	ninja -C "$build" "tests/fuzz-$t" >&2 || exit 1
done
rc=0
for t in $targets; do
	work=$(mktemp -d "/tmp/amx-fuzz-$t.XXXXXX")
	cp "$src/tests/fuzz/corpus/$t/"* "$work/"
	log=$work.log
	"$build/tests/fuzz-$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
		-artifact_prefix="$src/tests/fuzz/crash-$t-" "$work" >"$log" 2>&1
	st=$?
	execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
	[ -n "$execs" ] || execs=$(grep -Eo '#[0-9]+' "$log" | tail -n 1 | tr -d '#')
	if [ $st -ne 0 ]; then
		echo "fuzz-$t: FAILED after ${execs:-?} executions (see $log and tests/fuzz/crash-$t-*)"
		rc=1
	else
		echo "fuzz-$t: ok, ${execs:-?} executions in ${secs}s, corpus $(ls "$work" | wc -l)"
		rm -rf "$work" "$log"
	fi
done
exit $rc
