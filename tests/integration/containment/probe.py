#!/usr/bin/env python3
"""What an agent tries against agent-daemon (test_containment.sh runs it as the agents' user,
with setpriv, and from inside a session's pane). Each command prints one word: what happened.

  probe.py connect PATH                  "ok" or the errno name of connect(2) (EACCES, ENOENT...)
  probe.py open PATH r|w|create          "ok" or the errno name of open(2): read, write, or a new
                                         file at PATH (O_CREAT|O_EXCL; removed again if made)
  probe.py rename PATH                   "ok" or the errno name of replacing PATH by a new file
                                         (a file made beside it, renamed over it)
  probe.py http PORT METHOD PATH [-H 'Name: value']... [--data BODY]
                                         the HTTP status from 127.0.0.1:PORT ("000": no answer);
                                         only the head is read (a prompt's stream is not awaited)
  probe.py ws PORT PATH [-H 'Name: value']... [--send TEXT]
                                         the status of a WebSocket upgrade; after a 101, TEXT is
                                         sent as one text frame (what a browser's keystrokes are)
Python's standard library only.
"""

import argparse
import base64
import errno
import http.client
import os
import socket
import sys
import time

TIMEOUT = 10


def err_name(e):
    return errno.errorcode.get(e.errno, str(e.errno))


def cmd_connect(a):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.settimeout(TIMEOUT)
        s.connect(a.path)
        return "ok"
    except OSError as e:
        return err_name(e)
    finally:
        s.close()


def cmd_open(a):
    flags = {"r": os.O_RDONLY, "w": os.O_WRONLY,
             "create": os.O_WRONLY | os.O_CREAT | os.O_EXCL}[a.mode]
    try:
        fd = os.open(a.path, flags, 0o644)
    except OSError as e:
        return err_name(e)
    os.close(fd)
    if a.mode == "create":
        os.unlink(a.path)
    return "ok"


def cmd_rename(a):
    tmp = a.path + ".agent-probe"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except OSError as e:
        return err_name(e)
    os.close(fd)
    try:
        os.rename(tmp, a.path)
        return "ok"
    except OSError as e:
        os.unlink(tmp)
        return err_name(e)


def headers_of(a):
    out = {}
    for h in a.header or []:
        name, _, value = h.partition(":")
        out[name.strip()] = value.strip()
    return out


def cmd_http(a):
    hdrs = headers_of(a)
    body = None
    if a.data is not None:
        body = a.data.encode()
        hdrs.setdefault("Content-Type", "application/json")
    try:
        c = http.client.HTTPConnection("127.0.0.1", a.port, timeout=TIMEOUT)
        c.request(a.method, a.path, body=body, headers=hdrs)
        r = c.getresponse()
        status = r.status
        c.close()
        return str(status)
    except (OSError, http.client.HTTPException):
        return "000"


def ws_frame(text):
    """One masked text frame, as a client must send it."""
    payload = text.encode()
    mask = os.urandom(4)
    head = bytes([0x81])
    n = len(payload)
    if n < 126:
        head += bytes([0x80 | n])
    else:
        head += bytes([0x80 | 126]) + n.to_bytes(2, "big")
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def cmd_ws(a):
    key = base64.b64encode(os.urandom(16)).decode()
    lines = ["GET %s HTTP/1.1" % a.path, "Host: 127.0.0.1:%d" % a.port, "Upgrade: websocket",
             "Connection: Upgrade", "Sec-WebSocket-Key: " + key, "Sec-WebSocket-Version: 13"]
    lines += ["%s: %s" % kv for kv in headers_of(a).items()]
    try:
        s = socket.create_connection(("127.0.0.1", a.port), timeout=TIMEOUT)
        s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head and len(head) < 65536:
            chunk = s.recv(4096)
            if not chunk:
                break
            head += chunk
        parts = head.split(b" ", 2)
        status = parts[1].decode() if len(parts) > 1 else "000"
        if status == "101" and a.send is not None:
            # The first frame (the screen) says the tmux client is attached: keys sent before
            # that could be lost, and the test would not see them although the door was open.
            if len(head.split(b"\r\n\r\n", 1)[1]) == 0:
                try:
                    s.recv(4096)
                except OSError:
                    pass
            s.sendall(ws_frame(a.send))
            time.sleep(0.5)
            # A close frame, so the bridge ends the client cleanly.
            s.sendall(bytes([0x88, 0x82]) + b"\0\0\0\0" + (1000).to_bytes(2, "big"))
            try:
                s.recv(4096)
            except OSError:
                pass
        s.close()
        return status
    except OSError:
        return "000"


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("connect")
    c.add_argument("path")
    o = sub.add_parser("open")
    o.add_argument("path")
    o.add_argument("mode", choices=["r", "w", "create"])
    r = sub.add_parser("rename")
    r.add_argument("path")
    h = sub.add_parser("http")
    h.add_argument("port", type=int)
    h.add_argument("method")
    h.add_argument("path")
    h.add_argument("-H", "--header", action="append")
    h.add_argument("--data")
    w = sub.add_parser("ws")
    w.add_argument("port", type=int)
    w.add_argument("path")
    w.add_argument("-H", "--header", action="append")
    w.add_argument("--send")
    a = p.parse_args()
    print({"connect": cmd_connect, "open": cmd_open, "rename": cmd_rename, "http": cmd_http,
           "ws": cmd_ws}[a.cmd](a))


if __name__ == "__main__":
    sys.exit(main())
