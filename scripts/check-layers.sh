#!/bin/sh
# DESIGN.md's "The parts", checked on the built libraries and on the
# sources: each module calls only the modules below it (core <- store <-
# snap <- session -> jail, proxy, pane; tui -> session, pane; server -> tui,
# session; cmd on top), so there is no link cycle and a front end never
# reaches past the session layer. A symbol a library needs that another
# module of ours defines must come from one it may use, and a source file
# includes the header of no other module ("X/X.h") it may not use. Modules
# this script does not know are not checked (add them to the table).
# Usage: scripts/check-layers.sh MODULE=LIBRARY.a...   (tests/meson.build runs it)
set -u

# What each module may call. The TUI reads the records' own types through
# session.h (which has store.h's types) and does everything with them
# through the session layer; the commands ask it about the jail and the
# proxy too (they use neither directly).
may_use() {
	case $1 in
	core) echo "" ;;
	store) echo "core" ;;
	snap) echo "store core" ;;
	jail) echo "core" ;;
	proxy) echo "core" ;;
	pane) echo "core" ;;
	session) echo "snap store jail proxy pane core" ;;
	tui) echo "session pane core" ;;
	server) echo "tui session pane store core" ;;
	cmd) echo "server tui session pane snap store core" ;;
	*) echo "?" ;;
	esac
}

# The other modules' headers the sources of module M include, as
# "FILE: MODULE" lines, for those M may not use.
bad_includes() {
	m=$1
	allowed=" $m $(may_use "$m") "
	for f in "$SRC/$m"/*.c "$SRC/$m"/*.h; do
		[ -f "$f" ] || continue
		sed -n 's|^#[[:space:]]*include[[:space:]]*"\([a-z]*\)/[^"]*".*|\1|p' \
		    "$f" | sort -u | while read -r o; do
			[ -d "$SRC/$o" ] || continue
			case $allowed in *" $o "*) continue ;; esac
			echo "${f#"$SRC"/}: $o"
		done
	done
}

SRC=$(cd "$(dirname "$0")/../src" && pwd) || exit 1

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
for m in $mods; do
	[ "$(may_use "$m")" = "?" ] && continue
	bad=$(bad_includes "$m")
	[ -z "$bad" ] && continue
	echo "FAIL: $m includes the header of a module it may not use:" $bad
	rc=1
done
[ $rc = 0 ] && echo "check-layers: every module calls and includes only those below it:$mods"
exit $rc
