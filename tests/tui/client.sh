#!/bin/sh
# What the client leaves behind and hands over: the server it starts keeps
# none of the starting shell's descriptors.
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

timeout 10 "$AGENTMUX" kill-server >/dev/null 2>&1
exit 0
