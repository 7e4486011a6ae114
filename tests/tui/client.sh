#!/bin/sh
# What the client leaves behind and hands over: the server it starts keeps
# none of the starting shell's descriptors; a relative project needs a
# current directory.
set -u
. "$(dirname "$0")/lib.sh"

# ---- the server keeps no descriptor of the shell that started it ----
mkfifo "$T/fifo" || fail "mkfifo"
( exec 7>"$T/fifo"; cd "$P" && exec "$AGENTMUX" new -d -- sh >/dev/null ) &
timeout 10 cat "$T/fifo" >/dev/null
rc=$?
wait
[ $rc = 0 ] || fail "the fifo held open by the starting shell never ended (the server kept it)"
echo "client: the server keeps no descriptor of the shell that started it"

# ---- a relative project from a directory that is gone is refused ----
mkdir "$T/gone" || fail "mkdir"
out=$(cd "$T/gone" && rmdir "$T/gone" && timeout 10 "$AGENTMUX" new -d -C . -- sh 2>&1)
rc=$?
[ $rc = 1 ] || fail "new -d -C . from a removed directory exited $rc: $out"
echo "$out" | grep -q "cannot find the current directory" ||
	fail "new -d -C . from a removed directory does not say why: $out"
echo "client: a relative project from a removed directory is refused"

# ---- the server's error text reaches the terminal quoted ----
esc=$(printf 'f\033[31mx')
touch "$T/$esc" || fail "touch"
out=$(cd "$P" && timeout 10 "$AGENTMUX" new -d -C "$T/$esc" -- sh 2>&1)
[ $? = 1 ] || fail "new -d -C FILE did not fail: $out"
printf '%s' "$out" | grep -q "$(printf '\033')" &&
	fail "the server's error went out with a raw ESC: $(printf '%s' "$out" | od -c | head -5)"
printf '%s' "$out" | grep -qF 'f\033[31mx' ||
	fail "the server's error does not show the name quoted: $out"
echo "client: the server's error text is printed quoted"

timeout 10 "$AGENTMUX" kill-server >/dev/null 2>&1
exit 0
