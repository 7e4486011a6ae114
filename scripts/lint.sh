#!/bin/sh
# Static analysis: cppcheck and clang-tidy (.clang-tidy) over the sources and
# tests; any finding fails. Needs a configured build dir for clang-tidy's
# compile_commands.json. Usage: scripts/lint.sh [BUILD_DIR]   (default build-test)
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build-test}
cd "$src" || exit 1
rc=0

# Suppressions are only for proven false positives, each with its reason, in
# scripts/cppcheck-suppressions.txt. sys/queue.h is included so that
# cppcheck can read TAILQ_HEAD(, name) declarations.
if ! command -v cppcheck >/dev/null; then
	echo "lint: cppcheck is missing (scripts/deps.sh --test installs it)"
	exit 1
fi
cppcheck --enable=warning,portability,performance --std=c11 --quiet \
    --error-exitcode=1 --inline-suppr -j2 \
    --suppressions-list=scripts/cppcheck-suppressions.txt \
    --include=/usr/include/x86_64-linux-gnu/sys/queue.h \
    -D_GNU_SOURCE -DAM_TESTABLE= -DAGENTMUX_VERSION='"lint"' \
    -DAGENTMUX_SHAREDIR='"/"' -DAGENTMUX_SRCSHAREDIR='"/"' \
    -DAGENTMUX_BUILD_EXE='"/"' -DAGENTMUX_BIN_TO_SHARE='""' -DAGENTMUX_BIN_TO_FULL='""' -DAGENTMUX_FULL='"/"' -DAGENTMUX_VTERM_VERSION='"lint"' \
    -Isrc -Itests src tests bench || { echo "lint: cppcheck found problems"; rc=1; }

if [ ! -f "$build/compile_commands.json" ]; then
	echo "lint: no $build/compile_commands.json; configure the build first (./test does)"
	exit 1
fi
# Our own files only: meson's generated ones and the fuzzers built for clang are not ours to lint.
files=$(cd "$src" && git ls-files 'src/*.c' 'tests/*.c' 'bench/*.c' | sed "s|^|$src/|")
# shellcheck disable=SC2086
run-clang-tidy -quiet -p "$build" -j 2 $files >"$build/clang-tidy.log" 2>&1 ||
    { grep -E "(warning|error):" "$build/clang-tidy.log" | sort -u;
    echo "lint: clang-tidy found problems (see $build/clang-tidy.log)"; rc=1; }
[ $rc = 0 ] && echo "lint: cppcheck and clang-tidy clean"
exit $rc
