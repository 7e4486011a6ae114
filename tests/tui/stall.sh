#!/bin/sh
# A terminal that stops reading costs only its own frames: a client on a
# pty nobody reads, attached to the session, while a session floods its pane, leaves the server
# answering `agentmux ls`; once the pty is read again, the dashboard is
# drawn there (the held frame), with the flood in it.
set -u
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 is not installed"; exit 77; }

id=$(cd "$P" && "$AGENTMUX" new -d -- sh -c 'i=0; while :; do i=$((i + 1)); echo flood-line-with-some-text-$i; done') ||
	fail "new -d failed: $id"

# A client on a pty whose master is not read for 6 s, then read for 5 s:
# what it saw after the pause goes to $T/seen.
python3 - "$AGENTMUX" "$T/seen" "$id" <<'PY' &
import fcntl, os, pty, select, struct, sys, termios, time
exe, seen = sys.argv[1], sys.argv[2]
pid, fd = pty.fork()
if pid == 0:
    os.environ["TERM"] = "xterm-256color"
    fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    os.execv(exe, [exe, "attach", "-t", sys.argv[3]])
time.sleep(6)
out = b""
end = time.time() + 5
while time.time() < end:
    if select.select([fd], [], [], 0.2)[0]:
        try:
            out += os.read(fd, 65536)
        except OSError:
            break
open(seen, "wb").write(out)
os.kill(pid, 9)
PY
UPID=$!

sleep 2
for n in 1 2 3; do
	t0=$(date +%s)
	out=$(timeout 10 "$AGENTMUX" ls 2>&1) ||
		fail "agentmux ls did not answer while a client's terminal is not read (try $n): $out"
	[ $(( $(date +%s) - t0 )) -le 3 ] || fail "agentmux ls took more than 3 s (try $n)"
	sleep 1
done
echo "stall: a client whose terminal is not read does not stall the server"

wait "$UPID"
UPID=
grep -q 'flood-line-with-some-text' "$T/seen" ||
	fail "the client's terminal, read again, did not get the dashboard"
timeout 10 "$AGENTMUX" ls >/dev/null 2>&1 || fail "the server does not answer after"
echo "stall: read again, the terminal gets the frames it missed"
timeout 10 "$AGENTMUX" kill-server >/dev/null 2>&1
exit 0
