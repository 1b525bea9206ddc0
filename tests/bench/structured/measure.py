#!/usr/bin/env python3
"""Client side of tests/bench/structured_bench. Sends one turn "N GAP_US" and measures, for every
assistant line of tests/bench/structured/claude_ts.py, the time from its "ts" stamp (taken just
before the fake wrote it) to this process having parsed it; prints one JSON object:
{"events", "p50_us", "p90_us", "p99_us", "max_us", "events_per_s"}.

  measure.py direct N GAP_US FAKE     the fake's stdout read straight from a pipe (the baseline)
  measure.py sse N GAP_US HOST PORT ID  POST /sessions/ID/prompt through nginx, read the SSE
"""
import json
import os
import re
import socket
import subprocess
import sys
import time

TS = re.compile(rb'"ts":(\d+)')
TIMEOUT_S = 120


def summary(lat_ns, first_ns, last_ns):
    lat = sorted(lat_ns)
    if not lat:
        return {"events": 0}
    pick = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] / 1000.0
    span = (last_ns - first_ns) / 1e9
    return {"events": len(lat), "p50_us": round(pick(0.50), 1), "p90_us": round(pick(0.90), 1),
            "p99_us": round(pick(0.99), 1), "max_us": round(lat[-1] / 1000.0, 1),
            "events_per_s": round((len(lat) - 1) / span) if span > 0 else 0}


def collect(lines, is_end):
    """Reads lines until is_end(line); returns (latencies, first receive, last receive)."""
    lat, first, last = [], None, None
    for line in lines:
        now = time.monotonic_ns()
        m = TS.search(line)
        if m:
            lat.append(now - int(m.group(1)))
            first = first or now
            last = now
        elif is_end(line):
            break
    return lat, first or 0, last or 0


def direct(n, gap, fake):
    p = subprocess.Popen([fake], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    msg = {"type": "user", "message": {"role": "user", "content": "%d %d" % (n, gap)}}
    p.stdin.write((json.dumps(msg) + "\n").encode())
    p.stdin.flush()
    res = collect(p.stdout, lambda l: b'"type":"result"' in l)
    p.stdin.close()
    p.wait(TIMEOUT_S)
    return summary(*res)


def sse(n, gap, host, port, sid):
    body = json.dumps({"prompt": "%d %d" % (n, gap)}).encode()
    # The harness's token (tests/integration/lib.sh): nginx lets in only requests with one.
    token = os.environ.get("AGENTD_TEST_TOKEN", "")
    auth = b"Authorization: Bearer %s\r\n" % token.encode() if token else b""
    s = socket.create_connection((host, int(port)), timeout=TIMEOUT_S)
    # HTTP/1.0: nginx answers without chunked framing and closes at the end of the stream.
    s.sendall(b"POST /sessions/%s/prompt HTTP/1.0\r\nHost: %s:%s\r\n%s"
              b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
              % (sid.encode(), host.encode(), port.encode(), auth, len(body), body))
    f = s.makefile("rb")
    status = f.readline()
    if b" 200 " not in status:
        sys.exit("prompt answered %r" % status)
    while f.readline() not in (b"\r\n", b"\n", b""):
        pass
    res = collect(f, lambda l: l.startswith(b"event: result"))
    s.close()
    return summary(*res)


def main(argv):
    if len(argv) == 4 and argv[0] == "direct":
        out = direct(int(argv[1]), int(argv[2]), argv[3])
    elif len(argv) == 6 and argv[0] == "sse":
        out = sse(int(argv[1]), int(argv[2]), argv[3], argv[4], argv[5])
    else:
        sys.exit(__doc__)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
