#!/usr/bin/env python3
"""Client side of tests/bench/attention: how long a change of an agent's attention takes to reach
a client of GET /events, against the same change seen on the session's own stream
(GET /sessions/ID/events, the host's events relayed by the bridge: the baseline, read by the same
kind of client in the same process). For each of N turns that ask for a tool permission:
  permission  /events `permission`                      - session stream `permission`
  waiting     /events `session` with activity "waiting" - session stream `permission`
  result      /events `result`                          - session stream `result`
  idle        /events `session` with activity "idle"    - session stream `result`
Prints one JSON object {"turns", "<kind>": {"p50_ms","p99_ms","max_ms"}, ...}.

  measure.py HOST PORT ID N
"""
import http.client
import json
import os
import queue
import sys
import threading
import time

TIMEOUT_S = 60
# The harness's token (tests/integration/lib.sh): the access door refuses a request without one.
AUTH = ({"Authorization": "Bearer " + os.environ["AGENTD_TEST_TOKEN"]}
        if os.environ.get("AGENTD_TEST_TOKEN") else {})


def sse(host, port, path, out, name):
    """Reads an SSE stream, putting (name, monotonic ns, event, data) on out."""
    conn = http.client.HTTPConnection(host, port, timeout=TIMEOUT_S * 10)
    conn.request("GET", path, headers=dict(AUTH, Accept="text/event-stream"))
    resp = conn.getresponse()
    if resp.status != 200:
        out.put((name, 0, "http_error", str(resp.status)))
        return
    ev, data = None, []
    while True:
        line = resp.fp.readline()
        if not line:
            out.put((name, time.monotonic_ns(), "eof", None))
            return
        line = line.rstrip(b"\r\n")
        if line == b"":
            if ev is not None:
                out.put((name, time.monotonic_ns(), ev, "\n".join(data)))
            ev, data = None, []
        elif line.startswith(b"event:"):
            ev = line[6:].strip().decode()
        elif line.startswith(b"data:"):
            data.append(line[5:].lstrip().decode())


def post(host, port, path, body):
    conn = http.client.HTTPConnection(host, port, timeout=TIMEOUT_S)
    conn.request("POST", path, body=json.dumps(body),
                 headers=dict(AUTH, **{"Content-Type": "application/json"}))
    resp = conn.getresponse()
    if path.endswith("/prompt"):
        # The turn's own stream: drained in the background.
        threading.Thread(target=resp.read, daemon=True).start()
        return resp.status
    resp.read()
    conn.close()
    return resp.status


def main():
    host, port, sid, n = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    q = queue.Queue()
    threading.Thread(target=sse, args=(host, port, "/sessions/%s/events" % sid, q, "s"),
                     daemon=True).start()
    threading.Thread(target=sse, args=(host, port, "/events", q, "e"), daemon=True).start()
    time.sleep(1.0)  # both streams connected and past their replay / snapshot
    while not q.empty():
        q.get()
    lat = {"permission": [], "waiting": [], "result": [], "idle": []}

    def wait_for(want):
        """Waits until every (stream, predicate) of want was seen; returns their times."""
        got = {}
        deadline = time.monotonic() + TIMEOUT_S
        while len(got) < len(want):
            name, t, ev, data = q.get(timeout=max(0.1, deadline - time.monotonic()))
            if ev in ("eof", "http_error"):
                raise SystemExit("stream %s ended: %s" % (name, data))
            try:
                d = json.loads(data) if data else None
            except ValueError:
                d = None
            for key, (stream, pred) in want.items():
                if key not in got and stream == name and pred(ev, d):
                    got[key] = t
        return got

    def activity(want):
        return lambda ev, d: (ev == "session" and isinstance(d, dict) and
                              d.get("session", {}).get("id") == sid and
                              d.get("session", {}).get("activity") == want)

    for i in range(n):
        post(host, port, "/sessions/%s/prompt" % sid, {"prompt": "RUNBASH touch bench-%d" % i})
        t = wait_for({
            "s": ("s", lambda ev, d: ev == "permission"),
            "e": ("e", lambda ev, d: ev == "permission" and d.get("session") == sid),
            "w": ("e", activity("waiting")),
        })
        lat["permission"].append(t["e"] - t["s"])
        lat["waiting"].append(t["w"] - t["s"])
        # The request id, from the record (any client may answer).
        conn = http.client.HTTPConnection(host, port, timeout=TIMEOUT_S)
        conn.request("GET", "/sessions/%s" % sid, headers=AUTH)
        rid = json.loads(conn.getresponse().read())["pending"][0]["requestId"]
        conn.close()
        post(host, port, "/sessions/%s/permissions/%s" % (sid, rid), {"behavior": "allow"})
        t = wait_for({
            "s": ("s", lambda ev, d: ev == "result"),
            "e": ("e", lambda ev, d: ev == "result" and d.get("session") == sid),
            "i": ("e", activity("idle")),
        })
        lat["result"].append(t["e"] - t["s"])
        lat["idle"].append(t["i"] - t["s"])

    def pick(v, q):
        v = sorted(v)
        return round(v[min(len(v) - 1, int(q * len(v)))] / 1e6, 2)

    out = {"turns": n}
    for k, v in lat.items():
        out[k] = {"p50_ms": pick(v, 0.5), "p99_ms": pick(v, 0.99), "max_ms": round(max(v) / 1e6, 2)}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
