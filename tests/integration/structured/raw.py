#!/usr/bin/env python3
"""Raw requests on the bridge's unix socket, for the abuse tests (python3 standard library only).

  raw.py SOCKET HEAD_AND_BODY [--pause S] [--read-after S] [--timeout S]

HEAD_AND_BODY is sent as is, after Python unescaping (\\r\\n, \\x00). With --read-after the client
reads nothing for S seconds first (a client that does not read). Prints "bytes <n received>",
"end eof|timeout|reset" and the first line received as "first <line>".
"""
import argparse
import socket
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("socket")
    ap.add_argument("data")
    ap.add_argument("--read-after", type=float, default=0)
    ap.add_argument("--timeout", type=float, default=20)
    a = ap.parse_args()
    data = a.data.encode("latin-1").decode("unicode_escape").encode("latin-1")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(a.socket)
    s.sendall(data)
    time.sleep(a.read_after)
    total, first, end = 0, b"", "eof"
    deadline = time.monotonic() + a.timeout
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                end = "timeout"
                break
            s.settimeout(left)
            chunk = s.recv(65536)
            if not chunk:
                break
            if total == 0:
                first = chunk.split(b"\r\n", 1)[0]
            total += len(chunk)
    except socket.timeout:
        end = "timeout"
    except ConnectionResetError:
        end = "reset"
    print("bytes %d" % total)
    print("first " + first.decode("latin-1"))
    print("end " + end)
    return 0


if __name__ == "__main__":
    sys.exit(main())
