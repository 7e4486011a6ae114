#!/usr/bin/env python3
"""Key echo through a terminal client, read straight from its terminal.

Usage: bench/key-echo.py NAME KEYS MARK COMMAND...
Runs COMMAND (a multiplexer's client) on a 160x45 pty as its terminal,
waits until the pty shows MARK (the screen is drawn), then types KEYS
marks one at a time and times each until its bytes come back on the pty
(through the client, the server, the pane's shell and the redraw). No
polling of another program's screen: the clock stops on the read.
Prints RESULT server.key.NAME.median_ms and .p90_ms.
"""
import fcntl
import os
import pty
import select
import signal
import statistics
import struct
import sys
import termios
import time


def read_until(fd, want, secs):
    """Reads the pty until WANT shows (or, WANT None, until it is quiet)."""
    got, end = b"", time.monotonic() + secs
    while time.monotonic() < end:
        if select.select([fd], [], [], 0.02)[0]:
            try:
                got += os.read(fd, 65536)
            except OSError:
                return None
            if want is not None and want in got:
                return got
        elif want is None:
            return got
    return None if want is not None else got


def main():
    name, keys, mark, argv = sys.argv[1], int(sys.argv[2]), sys.argv[3].encode(), sys.argv[4:]
    pid, fd = pty.fork()
    if pid == 0:
        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 45, 160, 0, 0))
        os.environ["TERM"] = "xterm-256color"
        os.execvp(argv[0], argv)
    try:
        if read_until(fd, mark, 30) is None:
            sys.exit("bench/key-echo.py: %s: the screen never showed %r" % (name, mark))
        time.sleep(1)
        read_until(fd, None, 2)
        v = []
        for i in range(1, keys + 1):
            k = ("k%dq" % i).encode()
            t0 = time.perf_counter()
            os.write(fd, k)
            if read_until(fd, k, 10) is None:
                sys.exit("bench/key-echo.py: %s: %r never came back" % (name, k))
            v.append((time.perf_counter() - t0) * 1000)
            os.write(fd, b"\x15")  # C-u: the line is cleared for the next mark
            time.sleep(0.05)
            read_until(fd, None, 1)
        v.sort()
        print("RESULT server.key.%s.median_ms %.2f" % (name, statistics.median(v)))
        print("RESULT server.key.%s.p90_ms %.2f" % (name, v[min(len(v) - 1, int(len(v) * 0.9))]))
    finally:
        os.kill(pid, signal.SIGHUP)
        os.waitpid(pid, 0)


main()
