#!/usr/bin/env python3
"""hostsock.py SOCKET LINE [SECONDS]: sends one request line to an agentd-host socket (what the
bridge does) and prints every line the host answers until it closes or SECONDS pass (default 5).
"""
import socket
import sys


def main():
    path, line = sys.argv[1], sys.argv[2]
    wait = float(sys.argv[3]) if len(sys.argv) > 3 else 5.0
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(wait)
    s.connect(path)
    s.sendall(line.encode() + b"\n")
    buf = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
    except socket.timeout:
        pass
    sys.stdout.write(buf.decode(errors="replace"))


if __name__ == "__main__":
    main()
