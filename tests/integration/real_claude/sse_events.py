#!/usr/bin/env python3
"""Checks one structured turn's SSE stream (POST /sessions/<id>/prompt) against agentd-host's
event log (core/hostproto.h: one {"id":N,"event":"name","data":<JSON>} a line).

    sse_events.py SSE_FILE EVENTS_LOG

Passes (exit 0, prints a one-line summary) when:
  - every SSE event has an id, an event name and one data line that is JSON;
  - the ids are strictly increasing;
  - each event has the name and (as JSON) the data the log holds for its id;
  - no logged event is missing between the first and the last id of the stream (the stream is
    the whole turn, in order).
Otherwise prints what is wrong and exits 1. Comment lines (": ping") are allowed anywhere.
"""

import json
import sys


def parse_sse(text):
    events, cur, problems = [], {}, []
    for raw in text.split("\n"):
        line = raw[:-1] if raw.endswith("\r") else raw
        if line == "":
            if cur:
                events.append(cur)
                cur = {}
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "data" and "data" in cur:
            problems.append("event %r has more than one data line" % cur.get("id"))
            cur["data"] += "\n" + value
        elif field in ("id", "event", "data"):
            cur[field] = value
        else:
            problems.append("unexpected SSE field: %r" % line[:200])
    if cur:
        problems.append("the stream ends inside an event (no blank line after it): %r" % cur)
    return events, problems


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    with open(sys.argv[1], encoding="utf-8", errors="replace") as f:
        events, problems = parse_sse(f.read())
    logged = {}
    with open(sys.argv[2], encoding="utf-8", errors="replace") as f:
        for line in f:
            try:
                ev = json.loads(line)
                logged[int(ev["id"])] = (ev["event"], ev["data"])
            except (ValueError, KeyError, TypeError):
                problems.append("event log line is not {id,event,data}: %r" % line[:200])
    if not events:
        problems.append("the stream holds no events")
    last = 0
    ids = []
    for ev in events:
        if not ev.get("id", "").isdigit() or "event" not in ev or "data" not in ev:
            problems.append("event without id, event or data: %r" % {k: v[:200] for k, v in ev.items()})
            continue
        n = int(ev["id"])
        ids.append(n)
        if n <= last:
            problems.append("id %d follows id %d" % (n, last))
        last = n
        try:
            data = json.loads(ev["data"])
        except ValueError:
            problems.append("event %d: data is not JSON: %r" % (n, ev["data"][:200]))
            continue
        if n not in logged:
            problems.append("event %d (%s) is not in the event log" % (n, ev["event"]))
        elif logged[n] != (ev["event"], data):
            problems.append("event %d differs from the log: SSE %s %s, log %s %s" % (
                n, ev["event"], ev["data"][:200], logged[n][0],
                json.dumps(logged[n][1])[:200]))
    if ids:
        missing = sorted(set(range(ids[0], ids[-1] + 1)) - set(ids))
        if missing:
            problems.append("logged events missing from the stream: %s" % missing[:20])
    if problems:
        print("\n".join(problems[:30]))
        return 1
    print("%d events, ids %d..%d: %s" % (len(ids), ids[0], ids[-1],
                                         " ".join(ev["event"] for ev in events)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
