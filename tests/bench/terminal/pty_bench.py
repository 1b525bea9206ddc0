#!/usr/bin/env python3
"""Direct-PTY side of the terminal benchmark: a local process reading `tmux attach` on a PTY of
its own (what the bridge does for each client, without the bridge and nginx).

  pty_bench.py throughput TMUX SOCKET SESSION COLS ROWS COMMAND MARK
      types COMMAND + CR, reads until MARK; prints "bytes <received> seconds <elapsed>"
  pty_bench.py rtt TMUX SOCKET SESSION COLS ROWS N WARMUP
      WARMUP untimed keystrokes, then N keystrokes, each timed until its echo; prints
      microseconds, one per line
"""

import fcntl
import os
import pty
import select
import signal
import struct
import sys
import termios
import time


# Letters that never end an escape sequence tmux writes (not c d h l m q r t), so a match is
# the echo itself.
KEYS = "abefgijknopsuvwxyz"


def attach(tmux, sock, session, cols, rows):
    pid, fd = pty.fork()
    if pid == 0:
        try:
            # The size is set before tmux starts, as forkpty() does for the bridge's clients.
            fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
            env = dict(os.environ, TERM="xterm-256color")
            env.pop("TMUX", None)
            os.execve(tmux, [tmux, "-u", "-S", sock, "attach-session", "-t", "=" + session], env)
        finally:
            os._exit(127)
    return pid, fd


def quiet(fd, secs):
    """Reads until nothing arrived for secs."""
    while True:
        r, _, _ = select.select([fd], [], [], secs)
        if not r:
            return
        os.read(fd, 1 << 16)


def wait_for(fd, needle, timeout=120.0):
    """Reads until needle shows up; returns the bytes read."""
    got = 0
    tail = b""
    end = time.monotonic() + timeout
    while True:
        r, _, _ = select.select([fd], [], [], max(0.0, end - time.monotonic()))
        if not r:
            raise TimeoutError("no %r within %.0f s" % (needle, timeout))
        data = os.read(fd, 1 << 16)
        got += len(data)
        hay = tail + data
        if needle in hay:
            return got
        tail = hay[-len(needle):]


def detach(pid, fd):
    os.close(fd)
    try:
        os.kill(pid, signal.SIGHUP)
    except ProcessLookupError:
        pass
    os.waitpid(pid, 0)


def throughput(tmux, sock, session, cols, rows, command, mark):
    pid, fd = attach(tmux, sock, session, int(cols), int(rows))
    try:
        quiet(fd, 0.5)
        start = time.perf_counter()
        os.write(fd, command.encode() + b"\r")
        got = wait_for(fd, mark.encode())
        secs = time.perf_counter() - start
        print("bytes %d seconds %.4f" % (got, secs))
    finally:
        detach(pid, fd)


def rtt(tmux, sock, session, cols, rows, n, warmup):
    pid, fd = attach(tmux, sock, session, int(cols), int(rows))
    try:
        quiet(fd, 0.5)
        out = []
        warmup = int(warmup)
        for i in range(warmup + int(n)):
            if i % 40 == 39:
                os.write(fd, b"\x15")  # Ctrl-U: keep the line short
                quiet(fd, 0.05)
            ch = KEYS[i % len(KEYS)].encode()
            t0 = time.perf_counter()
            os.write(fd, ch)
            wait_for(fd, ch, 10.0)
            if i >= warmup:
                out.append((time.perf_counter() - t0) * 1e6)
            quiet(fd, 0.01)
        os.write(fd, b"\x15")
        quiet(fd, 0.05)
        print("\n".join("%.1f" % v for v in out))
    finally:
        detach(pid, fd)


def main():
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "throughput" and len(args) == 7:
        throughput(*args)
    elif mode == "rtt" and len(args) == 7:
        rtt(*args)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
