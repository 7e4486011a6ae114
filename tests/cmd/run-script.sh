#!/bin/sh
# ./run, the quick-start script, on a small tree of its own (its real run and
# scripts/deps.sh beside a one-file meson project): the first start builds,
# a start with nothing to rebuild prints nothing but the program's own
# output, a change is rebuilt, and a build error is shown and stops it.
set -u
: "${AGENTMUX_SRC:?run through meson test (AGENTMUX_SRC is not set)}"
for t in meson ninja cc; do
	command -v "$t" >/dev/null || { echo "SKIP: $t is not installed"; exit 77; }
done

PASSES=0
FAILS=0
ok() { PASSES=$((PASSES + 1)); }
bad() { FAILS=$((FAILS + 1)); echo "FAIL: $*"; }

T=$(mktemp -d /tmp/amx-run-script.XXXXXX) || exit 1
trap 'rm -rf "$T"' EXIT
W=$T/tree
mkdir -p "$W/scripts" "$W/src"
cp "$AGENTMUX_SRC/run" "$W/run"
cp "$AGENTMUX_SRC/scripts/deps.sh" "$W/scripts/deps.sh"
cat >"$W/meson.build" <<'MESON'
project('run-script-test', 'c')
subdir('src')
MESON
echo "executable('agentmux', 'main.c')" >"$W/src/meson.build"
main() {
	printf '#include <stdio.h>\nint main(int argc, char **argv) { %s }\n' "$1" \
	    >"$W/src/main.c"
}

# Runs ./run from another directory, as a user would: RC, OUT, ERR.
start() {
	(cd "$T" && timeout 300 "$W/run" "$@" >"$T/out" 2>"$T/err" </dev/null)
	RC=$?
	OUT=$(cat "$T/out")
	ERR=$(cat "$T/err")
}

main 'printf("started %s\n", argc > 1 ? argv[1] : "-"); return 0;'
start one
[ "$RC" = 0 ] && [ "$OUT" = "started one" ] && ok ||
    bad "the first start: exit $RC: $OUT $ERR"
case $ERR in *Linking*) ok ;; *) bad "the first start showed no build: $ERR" ;; esac

start two
[ "$RC" = 0 ] && [ "$OUT" = "started two" ] && ok ||
    bad "a second start: exit $RC: $OUT $ERR"
[ -z "$ERR" ] && ok || bad "a start with nothing to rebuild printed: $ERR"

main 'printf("changed %s\n", argc > 1 ? argv[1] : "-"); return 0;'
start three
[ "$RC" = 0 ] && [ "$OUT" = "changed three" ] && ok ||
    bad "a start after a change: exit $RC: $OUT $ERR"
case $ERR in *"Compiling C object"*) ok ;; *) bad "the rebuild was not shown: $ERR" ;; esac

main 'return no_such_thing;'
start four
[ "$RC" != 0 ] && ok || bad "a build error did not stop ./run"
[ -z "$OUT" ] && ok || bad "the old binary ran after a build error: $OUT"
case $ERR in *main.c*no_such_thing*) ok ;; *) bad "the build error was not shown: $ERR" ;; esac

main 'printf("fixed\n"); return 0;'
start five
start six
[ "$RC" = 0 ] && [ "$OUT" = "fixed" ] && [ -z "$ERR" ] && ok ||
    bad "after the fix: exit $RC: $OUT $ERR"

echo "$PASSES passed, $FAILS failed"
[ "$FAILS" = 0 ]
