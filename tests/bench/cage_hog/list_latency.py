#!/usr/bin/env python3
"""GET PATH N times, one after the other, on one keep-alive connection to BASE_URL; prints each
request's wall time in microseconds, one a line (the bench takes the percentiles).

    list_latency.py BASE_URL PATH N

The harness's token (AGENTD_TEST_TOKEN, tests/integration/lib.sh) goes with each request: the
access door refuses one without it. Exits 1 on any answer but 200.
"""
import http.client
import os
import sys
import time
import urllib.parse


def main():
    if len(sys.argv) != 4:
        sys.stderr.write("usage: list_latency.py BASE_URL PATH N\n")
        return 2
    base = urllib.parse.urlsplit(sys.argv[1])
    path, n = sys.argv[2], int(sys.argv[3])
    token = os.environ.get("AGENTD_TEST_TOKEN", "")
    headers = {"Authorization": "Bearer " + token} if token else {}
    conn = http.client.HTTPConnection(base.hostname, base.port, timeout=10)
    out = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        conn.request("GET", path, headers=headers)
        resp = conn.getresponse()
        resp.read()
        if resp.status != 200:
            sys.stderr.write("GET %s: %d\n" % (path, resp.status))
            return 1
        out.append((time.perf_counter_ns() - t0) // 1000)
    conn.close()
    sys.stdout.write("".join("%d\n" % us for us in out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
