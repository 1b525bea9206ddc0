#!/usr/bin/env python3
"""The soak's /events verdict (tests/bench/soak), python3 standard library only.

  events_check.py EVENTS_FILE STATE_DIR OPLOG [--created ID]...

EVENTS_FILE holds what the soak's one GET /events client received, across its reconnections:
sse.py's JSON lines ({"id","event","data"}, {"comment"}) with a line {"reconnect": true} where
the client connected again with Last-Event-ID. Checked:
  - the first event is the snapshot, and no reconnection got one (each replayed from its id);
  - the ids after it go up by exactly one: no gap, no duplicate, across reconnections;
  - the last id received is the last id in $STATE_DIR/events.log (nothing missed at the end);
  - every session of --created has a `created` event, and each extra session of OPLOG
    ("create <id> 201" / "delete <id> 200" lines) has as many `created` and `deleted` events as
    it was created and deleted.
Prints one JSON line: counts, the problems found ("problems": [...], empty when none) and the
numbers of permission, permission_resolved (allow/deny), result and prompt events.
"""
import argparse
import collections
import json
import os
import sys

PROBLEMS_KEPT = 20


def last_logged_id(run):
    """The id of the last line of events.log (events.log.1 when events.log is empty)."""
    for name in ("events.log", "events.log.1"):
        try:
            with open(os.path.join(run, name), "rb") as f:
                lines = f.read().splitlines()
        except OSError:
            continue
        for line in reversed(lines):
            try:
                return json.loads(line)["id"]
            except (ValueError, KeyError):
                continue
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("events")
    ap.add_argument("run")
    ap.add_argument("oplog")
    ap.add_argument("--created", action="append", default=[])
    a = ap.parse_args()

    problems = []

    def problem(text):
        if len(problems) < PROBLEMS_KEPT:
            problems.append(text)

    out = {"events": 0, "reconnects": 0, "snapshots": 0, "gaps": 0, "missing": 0,
           "duplicates": 0, "first_id": None, "last_id": None}
    changes = collections.Counter()  # (session id, change) -> events
    kinds = collections.Counter()
    prev = None
    after_reconnect = False
    with open(a.events, encoding="utf-8") as f:
        for n, raw in enumerate(f, 1):
            try:
                ev = json.loads(raw)
            except ValueError:
                problem("line %d of the events file is not JSON (a cut line?)" % n)
                continue
            if ev.get("reconnect"):
                out["reconnects"] += 1
                after_reconnect = True
                continue
            if "comment" in ev or "event" not in ev:
                continue
            name, ident = ev["event"], ev.get("id")
            if ident is None:
                problem("an event without id: %s %s" % (name, ev.get("data", "")[:200]))
                continue
            out["events"] += 1
            kinds[name] += 1
            if name == "snapshot":
                out["snapshots"] += 1
                if prev is not None:
                    problem("a snapshot (id %d) after %s: the log could not replay from %d" %
                            (ident, "a reconnection" if after_reconnect else "events", prev))
                prev = ident
                after_reconnect = False
                continue
            if prev is None:
                problem("the first event is %s %d, not the snapshot" % (name, ident))
            elif ident <= prev:
                out["duplicates"] += 1
                problem("id %d after %d (a duplicate)" % (ident, prev))
                continue
            elif ident != prev + 1:
                out["gaps"] += 1
                out["missing"] += ident - prev - 1
                problem("ids %d..%d never arrived" % (prev + 1, ident - 1))
            if out["first_id"] is None:
                out["first_id"] = ident
            prev = ident
            after_reconnect = False
            if name == "session":
                d = json.loads(ev["data"])
                changes[(d["session"]["id"], d["change"])] += 1
            elif name == "permission_resolved":
                kinds["resolved_" + json.loads(ev["data"]).get("behavior", "?")] += 1
    out["last_id"] = prev
    logged = last_logged_id(a.run)
    out["log_last_id"] = logged
    if prev != logged:
        problem("the last id received is %s, events.log ends at %s" % (prev, logged))
    if out["snapshots"] != 1:
        problem("%d snapshots (one expected, at the first connection)" % out["snapshots"])

    for sid in a.created:
        if changes[(sid, "created")] < 1:
            problem("no created event for %s" % sid)
    ops = collections.Counter()
    with open(a.oplog, encoding="utf-8") as f:
        for line in f:
            words = line.split()
            if len(words) == 3 and (words[0], words[2]) in (("create", "201"), ("delete", "200")):
                ops[(words[1], "created" if words[0] == "create" else "deleted")] += 1
    for (sid, change), n in sorted(ops.items()):
        if changes[(sid, change)] != n:
            problem("%s: %d %s events for %d successful %s requests" %
                    (sid, changes[(sid, change)], change, n,
                     "create" if change == "created" else "delete"))
    out["extra_created"] = sum(n for (s, c), n in ops.items() if c == "created")
    out["extra_deleted"] = sum(n for (s, c), n in ops.items() if c == "deleted")
    out["kinds"] = dict(kinds)
    out["problems"] = problems
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
