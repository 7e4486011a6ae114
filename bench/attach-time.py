#!/usr/bin/env python3
"""Attach until drawn, read straight from the client's terminal.

Usage: bench/attach-time.py NAME ROUNDS MARK DETACH COMMAND...
ROUNDS times: starts COMMAND (a multiplexer's client) on a fresh 160x45
pty, times it from the fork until the pty has shown MARK (the status line
of the drawn screen), then detaches it (DETACH "key": the prefix C-a d
typed; else a shell command run) and waits for its end. No polling of
another program's screen: the clock stops on the read that brings MARK.
Prints RESULT server.attach_pty.NAME.median_ms and .p90_ms.
"""
import fcntl
import os
import pty
import select
import statistics
import struct
import subprocess
import sys
import termios
import time


def attach_once(mark, detach, argv):
    """One attach: the milliseconds until MARK showed (None if never)."""
    t0 = time.perf_counter()
    pid, fd = pty.fork()
    if pid == 0:
        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 45, 160, 0, 0))
        os.environ["TERM"] = "xterm-256color"
        os.environ.pop("TMUX", None)
        os.execvp(argv[0], argv)
    got, took, end = b"", None, time.monotonic() + 20
    while time.monotonic() < end and took is None:
        if select.select([fd], [], [], 0.5)[0]:
            try:
                got += os.read(fd, 65536)
            except OSError:
                break
            if mark in got:
                took = (time.perf_counter() - t0) * 1000
    if detach == "key":
        os.write(fd, b"\x01d")
    else:
        subprocess.run(detach, shell=True, check=False)
    try:
        while select.select([fd], [], [], 5)[0] and os.read(fd, 65536):
            pass
    except OSError:
        pass
    os.waitpid(pid, 0)
    os.close(fd)
    return took


def main():
    name, rounds, mark, detach = (sys.argv[1], int(sys.argv[2]),
                                  sys.argv[3].encode(), sys.argv[4])
    argv = sys.argv[5:]
    v = []
    for _ in range(rounds):
        took = attach_once(mark, detach, argv)
        if took is None:
            sys.exit("bench/attach-time.py: %s: the screen never showed %r"
                     % (name, mark))
        v.append(took)
        time.sleep(0.3)
    v.sort()
    print("RESULT server.attach_pty.%s.median_ms %.2f" % (name, statistics.median(v)))
    print("RESULT server.attach_pty.%s.p90_ms %.2f" % (name, v[min(len(v) - 1, int(len(v) * 0.9))]))


main()
