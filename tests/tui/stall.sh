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

# ---- a server that dies leaves the client's terminal blocking ----
# The terminal is held open here too, to read its flags after the client.
spid=$(server_pid)
[ -n "$spid" ] || fail "no server pid file"
out=$(python3 - "$AGENTMUX" "$id" "$spid" <<'PY'
import fcntl, os, select, signal, subprocess, sys, termios, time
exe, sid, spid = sys.argv[1], sys.argv[2], int(sys.argv[3])
m, s = os.openpty()
fcntl.ioctl(s, termios.TIOCSWINSZ, b"\x1e\x00\x64\x00\x00\x00\x00\x00")
def ctty():
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
p = subprocess.Popen([exe, "attach", "-t", sid], stdin=s, stdout=s, stderr=s,
                     preexec_fn=ctty, env=dict(os.environ, TERM="xterm-256color"))
out, end = b"", time.time() + 10
while b"flood-line" not in out and time.time() < end:
    if select.select([m], [], [], 0.2)[0]:
        out += os.read(m, 65536)
os.kill(spid, signal.SIGKILL)
try:
    rc = p.wait(timeout=10)
except subprocess.TimeoutExpired:
    p.kill()
    rc = "hung"
nb = fcntl.fcntl(s, fcntl.F_GETFL) & os.O_NONBLOCK
print("drawn" if b"flood-line" in out else "not-drawn", rc, "nonblock" if nb else "blocking")
PY
)
case $out in
drawn\ 1\ blocking) ;;
*) fail "a client whose server died: $out (want: drawn 1 blocking)" ;;
esac
echo "stall: the client of a server that died gives its terminal back blocking"
exit 0
