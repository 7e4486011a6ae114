#!/bin/sh
# STYLE.md rule 13, checked: nothing in src/ prints to a terminal except
# through the quoting helper. Commands print with out_printf/out_puts
# (src/core/core-out.c), which escape every control, C1, bidi and invisible
# character whatever the arguments; JSON goes through json_escape; the
# dashboard draws text only with tui_screen_print (src/tui/tui-render.c),
# which does the same. A direct stdio or write(2) call to stdout/stderr, or
# a curses call that draws text outside tui-render.c, fails this check
# unless the line or the one before it says why it is raw ("raw: ...": a
# pipe, a socket, the jailed command's own output, text quoted just before).
# Usage: scripts/check-print.sh [SRC_DIR]   (default: the tree it is in)
set -u
src=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$src" || exit 1

stdio='(^|[^A-Za-z0-9_.>])(printf|fprintf|vprintf|vfprintf|dprintf|vdprintf|puts|fputs|putchar|fputc|putc|fwrite|perror|err|errx|warn|warnx|verr|verrx|vwarn|vwarnx|psignal|psiginfo)[[:space:]]*\('
fds='(write|util_write_all)[[:space:]]*\([[:space:]]*(STDOUT_FILENO|STDERR_FILENO|1|2)[[:space:]]*,'
curses='(^|[^A-Za-z0-9_])(mv)?w?(addstr|addnstr|addwstr|addnwstr|addch|addchstr|addchnstr|add_wch|add_wchstr|add_wchnstr|insstr|insnstr|ins_wstr|ins_nwstr|printw|vwprintw|vw_printw)[[:space:]]*\('

# Prints FILE:LINE: TEXT for each match of PATTERN in FILES without a
# "raw:" note on that line or the line before it.
unmarked() {
	pattern=$1
	shift
	awk -v pat="$pattern" '
		FNR == 1 { prev = "" }
		{
			line = $0
			code = line
			sub(/\/\/.*$/, "", code)
			if (code ~ pat && line !~ /raw:/ && prev !~ /raw:/ &&
			    code !~ /^[[:space:]]*\*/)
				printf "%s:%d: %s\n", FILENAME, FNR, line
			prev = line
		}' "$@"
}

files=$(git ls-files 'src/*.c' 2>/dev/null || find src -name '*.c')
found=$( {
	# shellcheck disable=SC2086
	unmarked "$stdio" $files
	# shellcheck disable=SC2086
	unmarked "$fds" $files
	# shellcheck disable=SC2086
	unmarked "$curses" $(echo "$files" | grep -v '^src/tui/tui-render\.c$')
} )
if [ -n "$found" ]; then
	echo "$found"
	echo "check-print: print through out_printf/out_puts (or draw with"
	echo "tui_screen_print), quoting hostile fields with quote_keep; if a"
	echo "call really must be raw, say why on it with a 'raw:' comment"
	exit 1
fi
echo "check-print: every print goes through the quoting helper"
