#!/usr/bin/env python3
"""A scriptable SSE client for the structured-mode tests (python3 standard library only).

  sse.py METHOD URL [--data TEXT] [--ctype CT] [--header 'Name: value']... [--out FILE]
         [--stop-after N] [--until EVENT] [--timeout S] [--pause S] [--rate KIB]

Sends one HTTP/1.0 request (so the answer is close-delimited, never chunked) and prints
"status <code>" as soon as the head arrives. A 200 text/event-stream answer is parsed as SSE:
every event is appended to FILE (default stdout) as one JSON line {"id": N, "event": "...",
"data": "<the data lines joined with LF>"} and every comment as {"comment": "..."}, flushed at
once. Any other answer's body is printed as "body <text>". The last line says how it ended:
"end eof" (the server closed), "end stopped" (after --stop-after N events the client dropped the
connection without reading on; also after the first event named EVENT with --until), or
"end timeout". A slow reader: --pause S reads nothing of the stream for S seconds after the head,
--rate KIB then reads at most KIB KiB a second.
"""
import argparse
import json
import os
import socket
import sys
import time
import urllib.parse


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("method")
    ap.add_argument("url")
    ap.add_argument("--data")
    ap.add_argument("--ctype", default="application/json")
    ap.add_argument("--header", action="append", default=[])
    ap.add_argument("--out")
    ap.add_argument("--stop-after", type=int, default=0)
    ap.add_argument("--until")
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--pause", type=float, default=0)
    ap.add_argument("--rate", type=float, default=0)
    a = ap.parse_args()

    u = urllib.parse.urlsplit(a.url)
    target = u.path + ("?" + u.query if u.query else "")
    deadline = time.monotonic() + a.timeout
    out = open(a.out, "a", encoding="utf-8") if a.out else sys.stdout
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if a.pause or a.rate:
        # A slow reader's kernel holds little for it: what it does not read stays upstream.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    s.settimeout(a.timeout)
    s.connect((u.hostname, u.port or 80))
    head = ["%s %s HTTP/1.0" % (a.method, target), "Host: %s" % u.netloc]
    body = a.data.encode() if a.data is not None else b""
    if a.data is not None:
        if a.ctype != "none":
            head.append("Content-Type: " + a.ctype)
        head.append("Content-Length: %d" % len(body))
    head += [h for h in a.header if h.split(":", 1)[1].strip()]
    # The harness's token (lib.sh) unless the caller names Authorization (empty: none).
    if os.environ.get("AGENTD_TEST_TOKEN") and not any(
            h.lower().startswith("authorization:") for h in a.header):
        head.append("Authorization: Bearer " + os.environ["AGENTD_TEST_TOKEN"])
    s.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + body)

    buf = b""

    def more():
        nonlocal buf
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        s.settimeout(left)
        if a.rate:
            time.sleep(4096 / (a.rate * 1024))
        chunk = s.recv(4096 if a.rate else 65536)
        if not chunk:
            return False
        buf += chunk
        return True

    try:
        while b"\r\n\r\n" not in buf:
            if not more():
                print("end eof")
                return 0
        raw_head, buf = buf.split(b"\r\n\r\n", 1)
        lines = raw_head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {k.strip().lower(): v.strip() for k, v in
                   (ln.split(":", 1) for ln in lines[1:] if ":" in ln)}
        print("status %d" % status, flush=True)
        if status != 200 or not headers.get("content-type", "").startswith("text/event-stream"):
            while more():
                pass
            print("body " + buf.decode("utf-8", "replace"), flush=True)
            print("end eof")
            return 0
        time.sleep(a.pause)
        count = 0
        ev = {}
        data = []
        while True:
            while b"\n" not in buf:
                if not more():
                    print("end eof")
                    return 0
            line, buf = buf.split(b"\n", 1)
            line = line.decode("utf-8")
            if line.endswith("\r"):
                line = line[:-1]
            if line == "":
                if data or ev:
                    if "id" in ev:
                        ev["id"] = int(ev["id"])
                    ev["data"] = "\n".join(data)
                    out.write(json.dumps(ev) + "\n")
                    out.flush()
                    count += 1
                    if (a.stop_after and count >= a.stop_after) or \
                            (a.until and ev.get("event") == a.until):
                        s.close()
                        print("end stopped")
                        return 0
                    ev, data = {}, []
                continue
            if line.startswith(":"):
                out.write(json.dumps({"comment": line[1:].strip()}) + "\n")
                out.flush()
                continue
            name, _, value = line.partition(":")
            if value.startswith(" "):
                value = value[1:]
            if name == "data":
                data.append(value)
            else:
                ev[name] = value
    except (TimeoutError, socket.timeout):
        print("end timeout")
        return 0


if __name__ == "__main__":
    sys.exit(main())
