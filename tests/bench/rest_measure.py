#!/usr/bin/env python3
"""Timing client of tests/bench/rest_create (python3 standard library only).

  rest_measure.py create CONFIG.json OUT.json
  rest_measure.py ours CONFIG.json RUNS.json        only ours, keeping the client's timestamps
  rest_measure.py phases RUNS.json SCHED.txt EXE API_PID
                                                    phases of those runs from `perf script`

Measures, interleaved (ours then baseline, baseline then ours, ...), for each issue of the
CONFIG's lists:
  ours:     POST /sessions through nginx, then, with "wait": "events" (the default), the
            session's events on GET /events (one SSE stream opened beforehand, as a UI holds it)
            until one says "running"; with "wait": "poll", GET /sessions/<id> every poll_ms on one
            keep-alive connection until "state" is "running". The time from sending the POST to
            reading that answer.
  baseline: `git -C <bare> worktree add -b feat/issue-N <path> origin/main` and, if that
            succeeded, `tmux -S <sock> new-session -d -s <name> -c <path> -- <claude> ...`, run as
            argv (no shell); the time from spawning git to tmux's exit.
Warm-up issues are run first and not counted. Prints one line per sample and writes the samples
and their statistics to OUT.json. Exits 1 if any sample failed.
"""

import collections
import http.client
import json
import os
import re
import subprocess
import sys
import time
import uuid


def pct(values, p):
    """Nearest-rank percentile."""
    v = sorted(values)
    if not v:
        return float("nan")
    k = max(1, -(-len(v) * p // 100))  # ceil
    return v[int(k) - 1]


def median(values):
    v = sorted(values)
    n = len(v)
    if n == 0:
        return float("nan")
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def auth_headers():
    """The harness's token (tests/integration/lib.sh): the access door refuses a request without
    credentials."""
    token = os.environ.get("AGENTD_TEST_TOKEN", "")
    return {"Authorization": "Bearer " + token} if token else {}


class Events:
    """GET /events as SSE: yields (event name, data) as they come."""

    def __init__(self, cfg):
        self.conn = http.client.HTTPConnection(cfg["host"], cfg["port"], timeout=cfg["timeout_s"])
        self.conn.request("GET", "/events", headers=auth_headers())
        self.resp = self.conn.getresponse()
        if self.resp.status != 200:
            raise RuntimeError("GET /events answered %d" % self.resp.status)

    def next(self):
        name, data = None, []
        while True:
            line = self.resp.fp.readline()
            if not line:
                raise RuntimeError("GET /events ended")
            line = line.rstrip(b"\r\n")
            if not line:
                if data:
                    return name, json.loads(b"\n".join(data))
                name, data = None, []
            elif line.startswith(b"event:"):
                name = line[6:].strip().decode()
            elif line.startswith(b"data:"):
                data.append(line[5:].lstrip())


class Ours:
    def __init__(self, cfg):
        self.cfg = cfg
        self.host, self.port = cfg["host"], cfg["port"]
        self.conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
        self.events = Events(cfg) if cfg.get("wait", "events") == "events" else None

    def _request(self, method, path, body=None):
        headers = {"Content-Type": "application/json"} if body is not None else {}
        headers.update(auth_headers())
        for attempt in (0, 1):
            try:
                self.conn.request(method, path, body=body, headers=headers)
                resp = self.conn.getresponse()
                data = resp.read()
                if resp.getheader("Connection", "").lower() == "close":
                    self.conn.close()
                return resp.status, data
            except (http.client.HTTPException, ConnectionError):
                # nginx closed the idle keep-alive connection: reconnect once.
                self.conn.close()
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def run(self, issue):
        cfg = self.cfg
        body = json.dumps({"repo": {"owner": cfg["owner"], "name": cfg["name"]}, "issue": issue})
        sid = "%s-%d" % (cfg["name"], issue)
        poll = cfg["poll_ms"] / 1000.0
        polls = 0
        t0 = time.perf_counter()
        status, data = self._request("POST", "/sessions", body)
        t_post = time.perf_counter()
        if status != 201:
            return None, "POST answered %d: %s" % (status, data[:300])
        if self.events is not None:
            return self.wait_event(sid, t0, t_post)
        deadline = t0 + cfg["timeout_s"]
        while True:
            status, data = self._request("GET", "/sessions/" + sid)
            now = time.perf_counter()
            polls += 1
            state = None
            if status == 200:
                state = json.loads(data).get("state")
            if state == "running":
                return {"ms": (now - t0) * 1000, "post_ms": (t_post - t0) * 1000,
                        "polls": polls, "t0": t0, "t_post": t_post, "t_running": now}, None
            if state == "failed" or status != 200:
                return None, "GET answered %d: %s" % (status, data[:300])
            if now > deadline:
                return None, "still %s after %d s" % (state, cfg["timeout_s"])
            time.sleep(poll)

    def wait_event(self, sid, t0, t_post):
        """Reads /events until the session's record says running (or failed)."""
        seen = 0
        while True:
            name, data = self.events.next()
            if name != "session" or data.get("session", {}).get("id") != sid:
                continue
            seen += 1
            state = data["session"].get("state")
            if state == "running":
                now = time.perf_counter()
                return {"ms": (now - t0) * 1000, "post_ms": (t_post - t0) * 1000,
                        "polls": 0, "events": seen, "t0": t0, "t_post": t_post,
                        "t_running": now}, None
            if state == "failed":
                return None, "failed: %s" % data["session"].get("error", "")[:300]


class Baseline:
    def __init__(self, cfg):
        self.cfg = cfg

    def run(self, issue):
        cfg = self.cfg
        path = os.path.join(cfg["baseline_dir"], "%s-issue-%d" % (cfg["name"], issue))
        name = "%s-%d" % (cfg["name"], issue)
        prompt = "Work on %s/%s#%d. Start by running: gh issue view %d -R %s/%s" % (
            cfg["owner"], cfg["name"], issue, issue, cfg["owner"], cfg["name"])
        git = ["git", "-C", cfg["bare"], "worktree", "add", "-q", "-b", "feat/issue-%d" % issue,
               path, "origin/main"]
        tmux = [cfg["tmux"], "-S", cfg["baseline_sock"], "new-session", "-d", "-s", name, "-c",
                path, "--", cfg["claude"], "--session-id=%s" % uuid.uuid4(), prompt]
        t0 = time.perf_counter()
        g = subprocess.run(git, stdin=subprocess.DEVNULL, capture_output=True)
        t1 = time.perf_counter()
        if g.returncode != 0:
            return None, "git worktree add: %s" % g.stderr.decode(errors="replace")[:300]
        t = subprocess.run(tmux, stdin=subprocess.DEVNULL, capture_output=True)
        t2 = time.perf_counter()
        if t.returncode != 0:
            return None, "tmux new-session: %s" % t.stderr.decode(errors="replace")[:300]
        return {"ms": (t2 - t0) * 1000, "git_ms": (t1 - t0) * 1000,
                "tmux_ms": (t2 - t1) * 1000}, None


def cmd_create(cfg_path, out_path):
    with open(cfg_path, encoding="utf-8") as f:
        cfg = json.load(f)
    ours, base = Ours(cfg), Baseline(cfg)
    samples = {"ours": [], "baseline": []}
    errors = 0

    def one(kind, runner, issue, counted):
        nonlocal errors
        # Each sample on a quiet machine: the previous one's agent (a python3 fake claude)
        # starts right after it and would otherwise run during this one.
        time.sleep(cfg["settle_ms"] / 1000)
        res, err = runner.run(issue)
        tag = "warm-up " if not counted else ""
        if err:
            errors += 1
            print("# %s%-8s issue %-5d FAILED: %s" % (tag, kind, issue, err), flush=True)
            return
        extra = " ".join("%s=%.1f" % (k, v) if isinstance(v, float) else "%s=%s" % (k, v)
                         for k, v in res.items() if k != "ms" and not k.startswith("t"))
        print("# %s%-8s issue %-5d %8.1f ms  (%s)" % (tag, kind, issue, res["ms"], extra),
              flush=True)
        if counted:
            res["issue"] = issue
            samples[kind].append(res)

    one("ours", ours, cfg["warmup_issue"], False)
    one("baseline", base, cfg["warmup_baseline_issue"], False)
    for i, (a, b) in enumerate(zip(cfg["issues"], cfg["baseline_issues"])):
        # Alternate who goes first, so neither side always runs right after the other.
        if i % 2 == 0:
            one("ours", ours, a, True)
            one("baseline", base, b, True)
        else:
            one("baseline", base, b, True)
            one("ours", ours, a, True)

    stats = {}
    for kind, s in samples.items():
        ms = [x["ms"] for x in s]
        stats[kind] = {"n": len(ms), "median": median(ms), "p90": pct(ms, 90),
                       "min": min(ms) if ms else None, "max": max(ms) if ms else None}
    # Each pair ran back to back: the median of their ratios cancels a shared machine's drift.
    pairs = [o["ms"] / b["ms"] for o, b in zip(samples["ours"], samples["baseline"])]
    stats["paired_ratio_median"] = median(pairs)
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump({"samples": samples, "stats": stats, "errors": errors}, f, indent=1)
    return 1 if errors else 0


def cmd_ours(cfg_path, out_path):
    """Only our side, for the profile pass: the client's timestamps of each creation."""
    with open(cfg_path, encoding="utf-8") as f:
        cfg = json.load(f)
    ours, runs = Ours(cfg), []
    for i, issue in enumerate(cfg["issues"]):
        # As in cmd_create: the previous session's agent starts in the pause, not in the sample.
        if i > 0:
            time.sleep(cfg.get("settle_ms", 0) / 1000)
        res, err = ours.run(issue)
        if err:
            print("# profile: issue %d FAILED: %s" % (issue, err), flush=True)
            return 1
        runs.append(res)
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(runs, f)
    return 0


SCHED = re.compile(r"^\s*(\S.*?)\s+(\d+)/(\d+)\s+([\d.]+):\s+sched:(\w+):\s+(.*)$")


def cmd_phases(runs_path, sched_path, exe, api_pid):
    """Splits each creation into phases from `perf script` of the sched:sched_process_{exec,
    fork,exit} events (perf record -k CLOCK_MONOTONIC, the clock of time.perf_counter). The
    worker is started ahead of need (fcgi-app/standby.c): what marks a creation is its one tmux
    command (new-session with its options), run by a process other than agentd-api itself."""
    with open(runs_path, encoding="utf-8") as f:
        runs = json.load(f)
    api_pid = int(api_pid)
    events = []
    with open(sched_path, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = SCHED.match(line)
            if m:
                events.append((float(m.group(4)), int(m.group(2)), m.group(5), m.group(6)))
    events.sort()
    parent = {}
    for t, pid, ev, rest in events:
        if ev == "sched_process_fork":
            c = re.search(r"child_pid=(\d+)", rest)
            if c:
                parent[int(c.group(1))] = pid
    exits = {pid: t for t, pid, ev, rest in events if ev == "sched_process_exit"}
    names = ["POST -> tmux new-session (handoff, fetch, checkout)", "tmux new-session",
             "tmux done -> client sees running (record, /events)"]
    table = collections.defaultdict(list)
    # A worker's later tmux command (wait-for -S, once its record says running) may fall in the
    # next creation's window: each worker's first tmux command is its new-session.
    done_workers = set()
    for run in runs:
        t0, t1 = run["t0"], run["t_running"]
        tm = next(((t, pid) for t, pid, ev, rest in events
                   if ev == "sched_process_exec" and t0 <= t <= t1
                   and "tmux" in rest.split()[0]
                   and parent.get(pid) not in (None, api_pid)
                   and parent.get(pid) not in done_workers), None)
        if tm is None:
            print("# phases: no tmux new-session found for a run", flush=True)
            continue
        done_workers.add(parent[tm[1]])
        marks = [t0, tm[0], min(exits.get(tm[1], tm[0]), t1), t1]
        for i, name in enumerate(names):
            table[name].append((marks[i + 1] - marks[i]) * 1000)
        table["total (POST -> running seen)"].append((t1 - t0) * 1000)
        table["POST answered"].append((run["t_post"] - t0) * 1000)
    n = len(table["total (POST -> running seen)"])
    print("phases of our creations (median of %d, ms; from sched exec/fork/exit events):" % n)
    for name in names + ["total (POST -> running seen)", "POST answered"]:
        if table[name]:
            print("    %-52s %7.1f" % (name, median(table[name])))
    return 0 if n else 1


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "create":
        return cmd_create(sys.argv[2], sys.argv[3])
    if len(sys.argv) == 4 and sys.argv[1] == "ours":
        return cmd_ours(sys.argv[2], sys.argv[3])
    if len(sys.argv) == 6 and sys.argv[1] == "phases":
        return cmd_phases(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5])
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
