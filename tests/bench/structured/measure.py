#!/usr/bin/env python3
"""Client side of tests/bench/structured_bench. Sends one turn "N GAP_US" and measures, for every
assistant line of tests/bench/structured/claude_ts.py, the time from its "ts" stamp (taken just
before the fake wrote it) to this process having parsed it; prints one JSON object:
{"events", "p50_us", "p90_us", "p99_us", "max_us", "events_per_s"}.

  measure.py direct N GAP_US FAKE     the fake's stdout read straight from a pipe (the baseline)
  measure.py sse N GAP_US HOST PORT ID  POST /sessions/ID/prompt through nginx, read the SSE

How it reads (MEASURE_READ, the same for both sides):
  records  (default) one large read (up to READ_MAX bytes) at a time, split into whole records:
           lines from the pipe, events (up to the blank line) from the SSE stream; each record is
           searched for its stamp and timed once parsed. Per event both sides do the same work.
  lines    Python's readline, one line at a time (the client before the speed work): an SSE
           event is 4 lines (id, event, data, blank) against the pipe's one, so this client
           spends about four times the CPU per event on the SSE side.
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
READ_MAX = 256 * 1024


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


def collect_records(read, rest, sep, is_end):
    """Reads chunks with read() (rest: bytes already received) and splits them at sep into
    records, until is_end(record); returns (latencies, first receive, last receive)."""
    lat, first, last = [], None, None
    search = TS.search
    clock = time.monotonic_ns
    buf = rest
    while True:
        records = buf.split(sep)
        buf = records.pop()  # the unfinished one
        for rec in records:
            m = search(rec)
            now = clock()
            if m:
                lat.append(now - int(m.group(1)))
                first = first or now
                last = now
            elif is_end(rec):
                return lat, first or 0, last or 0
        data = read(READ_MAX)
        if not data:
            return lat, first or 0, last or 0
        buf += data


def by_lines():
    return os.environ.get("MEASURE_READ", "records") == "lines"


def direct(n, gap, fake):
    p = subprocess.Popen([fake], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    msg = {"type": "user", "message": {"role": "user", "content": "%d %d" % (n, gap)}}
    p.stdin.write((json.dumps(msg) + "\n").encode())
    p.stdin.flush()
    is_end = lambda l: b'"type":"result"' in l
    if by_lines():
        res = collect(open(p.stdout.fileno(), "rb", closefd=False), is_end)
    else:
        fd = p.stdout.fileno()
        res = collect_records(lambda k: os.read(fd, k), b"", b"\n", is_end)
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
    if by_lines():
        f = s.makefile("rb")
        status = f.readline()
        if b" 200 " not in status:
            sys.exit("prompt answered %r" % status)
        while f.readline() not in (b"\r\n", b"\n", b""):
            pass
        res = collect(f, lambda l: l.startswith(b"event: result"))
    else:
        head = b""
        while b"\r\n\r\n" not in head:
            data = s.recv(READ_MAX)
            if not data:
                sys.exit("the stream ended in its head: %r" % head)
            head += data
        head, rest = head.split(b"\r\n\r\n", 1)
        if b" 200 " not in head.split(b"\r\n", 1)[0]:
            sys.exit("prompt answered %r" % head.split(b"\r\n", 1)[0])
        is_end = lambda r: r.startswith(b"event: result\n") or b"\nevent: result\n" in r
        res = collect_records(s.recv, rest, b"\n\n", is_end)
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
