#!/usr/bin/env python3
"""Raw HTTP clients for the tests of nginx's edge (python3 standard library only).

  edge.py raw PORT DATA [--timeout S]
      Sends DATA (after Python unescaping: \\r\\n, \\x00) to 127.0.0.1:PORT and prints what came
      back, latin-1, until the answer is complete (Content-Length, or the end of a 101's head),
      the peer closes, or S seconds (default 5) pass.

  edge.py slowloris PORT N [--hold S]
      Opens N connections that each send a partial request header and never finish it, then
      times GET /healthz on a new connection, and prints one JSON line: opened, still_open (of
      the N, when /healthz was asked), healthz_status, healthz_ms, and error when a connection
      could not be opened. With --hold S it then waits up to S seconds and adds
      closed_after_hold: how many of the N nginx has closed (or answered) by then.
"""
import argparse
import json
import os
import resource
import select
import socket
import sys
import time


def unescape(s):
    return s.encode("latin-1").decode("unicode_escape").encode("latin-1")


def head_complete(buf):
    """Returns True when buf holds a whole answer (or a whole 101 head)."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return False
    head = buf[:end].decode("latin-1")
    if head.startswith("HTTP/1.1 101") or head.startswith("HTTP/1.0 101"):
        return True
    for line in head.split("\r\n")[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            return len(buf) - end - 4 >= int(value.strip())
    return False


def raw(a):
    s = socket.create_connection(("127.0.0.1", a.port), timeout=a.timeout)
    s.sendall(unescape(a.data))
    buf = b""
    deadline = time.monotonic() + a.timeout
    try:
        while not head_complete(buf):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            s.settimeout(left)
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
    except (socket.timeout, ConnectionResetError):
        pass
    s.close()
    sys.stdout.write(buf.decode("latin-1"))


def healthz(port, timeout):
    """Returns (status, milliseconds) of GET /healthz on a fresh connection; status 0 on failure."""
    start = time.monotonic()
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        # The harness's token (lib.sh): /healthz is behind the door like every path.
        auth = ("Authorization: Bearer %s\r\n" % os.environ["AGENTD_TEST_TOKEN"]
                if os.environ.get("AGENTD_TEST_TOKEN") else "")
        s.sendall(("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n%sConnection: close\r\n\r\n"
                   % (port, auth)).encode())
        buf = b""
        while b"\r\n" not in buf:
            chunk = s.recv(4096)
            if not chunk:
                break
            buf += chunk
        s.close()
        status = int(buf.split(b" ", 2)[1]) if buf.startswith(b"HTTP/") else 0
    except (OSError, ValueError, IndexError):
        status = 0
    return status, int((time.monotonic() - start) * 1000)


def ended_by_peer(s):
    """True when nginx closed s or answered on it (either ends a held header); never blocks."""
    p = select.poll()  # select() cannot watch descriptors above 1023
    p.register(s, select.POLLIN | select.POLLERR | select.POLLHUP)
    return bool(p.poll(0))


def slowloris(a):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = a.n + 64
    if soft < need:
        if hard != resource.RLIM_INFINITY and hard < need:
            print(json.dumps({"error": "ulimit -n hard limit %d < %d" % (hard, need)}))
            return 1
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))
    socks = []
    partial = ("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nX-Slow: " % a.port).encode()
    failure = None
    for _ in range(a.n):
        try:
            s = socket.create_connection(("127.0.0.1", a.port), timeout=3)
            s.sendall(partial)
        except OSError as e:
            # nginx stopped accepting: report it and still ask /healthz.
            failure = "connection %d: %s" % (len(socks) + 1, e)
            break
        socks.append(s)
    # Let nginx read what was sent, so every connection is a slot in its header-reading state.
    time.sleep(0.5)
    still_open = sum(1 for s in socks if not ended_by_peer(s))
    status, ms = healthz(a.port, 5)
    out = {"opened": len(socks), "still_open": still_open, "healthz_status": status,
           "healthz_ms": ms}
    if failure is not None:
        out["error"] = failure
    if a.hold > 0:
        deadline = time.monotonic() + a.hold
        closed = 0
        while time.monotonic() < deadline:
            closed = sum(1 for s in socks if ended_by_peer(s))
            if closed == len(socks):
                break
            time.sleep(0.5)
        out["closed_after_hold"] = closed
    print(json.dumps(out))
    for s in socks:
        s.close()
    return 0


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("raw")
    r.add_argument("port", type=int)
    r.add_argument("data")
    r.add_argument("--timeout", type=float, default=5)
    sl = sub.add_parser("slowloris")
    sl.add_argument("port", type=int)
    sl.add_argument("n", type=int)
    sl.add_argument("--hold", type=float, default=0)
    a = ap.parse_args()
    if a.cmd == "raw":
        raw(a)
        return 0
    return slowloris(a)


if __name__ == "__main__":
    sys.exit(main())
