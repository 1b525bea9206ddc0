#!/usr/bin/env python3
"""Holds kept FastCGI connections to agentd-api idle, as nginx's upstream keepalive does.

fcgi_hold.py SOCKET COUNT GO_FILE: opens COUNT connections to SOCKET, sends GET /healthz with
FCGI_KEEP_CONN on each and reads the whole answer, then prints "idle COUNT" and leaves them
idle until GO_FILE exists (at most 300 s). Then it sends one more request on each, prints "reused N" (the number
answered on the same connection) and exits. Any failure prints "error ..." and exits 1.
"""
import os
import socket
import struct
import sys
import time

BEGIN, END, PARAMS, STDIN, STDOUT = 1, 3, 4, 5, 6


def record(kind, body=b"", rid=1):
    return struct.pack(">BBHHBB", 1, kind, rid, len(body), 0, 0) + body


def pair(name, value):
    n, v = name.encode(), value.encode()
    return bytes([len(n), len(v)]) + n + v  # every name and value here is < 128 bytes


def request(sock):
    params = b"".join(pair(k, v) for k, v in (
        ("REQUEST_METHOD", "GET"), ("DOCUMENT_URI", "/healthz"), ("REQUEST_URI", "/healthz"),
        ("QUERY_STRING", ""), ("SERVER_PROTOCOL", "HTTP/1.1")))
    sock.sendall(record(BEGIN, struct.pack(">HB5x", 1, 1)) + record(PARAMS, params) +
                 record(PARAMS) + record(STDIN))
    out, buf = b"", b""
    while True:
        while len(buf) < 8:
            chunk = sock.recv(65536)
            if not chunk:
                raise EOFError("connection closed before the end of the answer")
            buf += chunk
        _, kind, _, length, pad, _ = struct.unpack(">BBHHBB", buf[:8])
        while len(buf) < 8 + length + pad:
            chunk = sock.recv(65536)
            if not chunk:
                raise EOFError("connection closed inside a record")
            buf += chunk
        body, buf = buf[8:8 + length], buf[8 + length + pad:]
        if kind == STDOUT:
            out += body
        if kind == END:
            return out


def main():
    path, count, go = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    socks = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(30)
            s.connect(path)
            if b'"status":"ok"' not in request(s):
                raise ValueError("unexpected answer")
            socks.append(s)
    except Exception as e:  # noqa: BLE001 - reported to the test
        print("error", type(e).__name__, e, flush=True)
        return 1
    print("idle", len(socks), flush=True)
    deadline = time.monotonic() + 300
    while not os.path.exists(go) and time.monotonic() < deadline:
        time.sleep(0.05)
    reused = 0
    for s in socks:
        try:
            if b'"status":"ok"' in request(s):
                reused += 1
        except Exception as e:  # noqa: BLE001
            print("error", type(e).__name__, e, flush=True)
    print("reused", reused, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
