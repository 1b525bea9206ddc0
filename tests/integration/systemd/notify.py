#!/usr/bin/env python3
"""A stand-in for systemd's notification socket (sd_notify(3)).

    notify.py SOCKET OUT WATCH

Binds a datagram unix socket at SOCKET and appends one line to OUT per message received:
the message with newlines shown as '|', then ' watch=1' if the path WATCH existed at the moment
it arrived (a READY=1 must come after the daemon's own socket exists), else ' watch=0'.
Runs until killed; OUT is flushed after every line.
"""
import os
import socket
import sys


def main():
    path, out_path, watch = sys.argv[1:4]
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    with open(out_path, "a", encoding="utf-8") as out:
        out.write("listening\n")
        out.flush()
        while True:
            data = sock.recv(4096)
            seen = 1 if os.path.exists(watch) else 0
            text = data.decode("utf-8", "replace").replace("\n", "|")
            out.write(f"{text} watch={seen}\n")
            out.flush()


if __name__ == "__main__":
    main()
