#!/usr/bin/env python3
"""A stream-json `claude` for the structured-mode benchmark: every user message "N GAP_US"
makes it emit N assistant lines, each stamped with CLOCK_MONOTONIC in nanoseconds ("ts") just
before it is written, GAP_US microseconds apart (0: as fast as the pipe takes them), then a
result line. The system/init line comes first, as the real CLI's does."""
import json
import sys
import time

SID = next((a.split("=", 1)[1] for a in sys.argv if a.startswith(("--session-id=", "--resume="))),
           "bench")
PAD = "x" * 200  # a short assistant text: claude's streaming lines are a few hundred bytes


def write(obj):
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def turn(n, gap_ns):
    head = '{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"%s"}]},"session_id":"%s","seq":' % (PAD, SID)
    out = sys.stdout
    next_at = time.monotonic_ns()
    for i in range(n):
        if gap_ns:
            next_at += gap_ns
            delay = next_at - time.monotonic_ns()
            if delay > 0:
                time.sleep(delay / 1e9)
        out.write('%s%d,"ts":%d}\n' % (head, i, time.monotonic_ns()))
        out.flush()
    write({"type": "result", "subtype": "success", "is_error": False, "num_turns": 1,
           "result": "done", "session_id": SID})


def main():
    write({"type": "system", "subtype": "init", "session_id": SID, "tools": [], "model": "bench"})
    for line in sys.stdin:
        try:
            msg = json.loads(line)
            content = msg["message"]["content"]
            n, gap_us = (int(x) for x in str(content).split())
        except (ValueError, KeyError, TypeError):
            continue  # not a turn this fake understands (control messages and the like)
        turn(n, gap_us * 1000)
    return 0


if __name__ == "__main__":
    sys.exit(main())
