#!/bin/sh
# DESIGN.md's "The parts", checked on the built libraries: each module calls
# only the modules below it (core <- store <- snap <- session -> jail, proxy,
# pane; tui -> session, pane; server -> tui, session; cmd on top), so there is no link cycle and a front end
# never reaches past the session layer. A symbol a library needs that
# another module of ours defines must come from one it may use. Modules this
# script does not know are not checked (add them to the table).
# Usage: scripts/check-layers.sh MODULE=LIBRARY.a...   (tests/meson.build runs it)
set -u

# What each module may call. The TUI reads the records' own types from
# store.h (their _free calls, how a session ended), never the store itself.
may_use() {
	case $1 in
	core) echo "" ;;
	store) echo "core" ;;
	snap) echo "store core" ;;
	jail) echo "core" ;;
	proxy) echo "core" ;;
	pane) echo "core" ;;
	session) echo "snap store jail proxy pane core" ;;
	tui) echo "session pane store core" ;;
	server) echo "tui session pane store core" ;;
	cmd) echo "server tui session pane snap store jail proxy core" ;;
	*) echo "?" ;;
	esac
}

T=$(mktemp -d /tmp/amx-layers.XXXXXX) || exit 1
trap 'rm -rf "$T"' EXIT
mods=""
for arg in "$@"; do
	m=${arg%%=*}
	lib=${arg#*=}
	[ -f "$lib" ] || { echo "check-layers: no library $lib for $m"; exit 1; }
	nm --defined-only "$lib" 2>/dev/null |
	    awk 'NF == 3 && $2 ~ /[TDBRVW]/ { print $3 }' | sort -u >"$T/$m.def"
	nm -u "$lib" 2>/dev/null | awk 'NF == 2 { print $2 }' | sort -u >"$T/$m.und"
	mods="$mods $m"
done

rc=0
for m in $mods; do
	allowed=$(may_use "$m")
	[ "$allowed" = "?" ] && continue
	for o in $mods; do
		[ "$o" = "$m" ] && continue
		case " $allowed " in *" $o "*) continue ;; esac
		bad=$(comm -12 "$T/$m.und" "$T/$o.def")
		[ -z "$bad" ] && continue
		echo "FAIL: $m calls into $o, which it may not use:" $bad
		rc=1
	done
done
[ $rc = 0 ] && echo "check-layers: every module calls only those below it:$mods"
exit $rc
