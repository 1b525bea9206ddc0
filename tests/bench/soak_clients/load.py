#!/usr/bin/env python3
"""REST and structured-mode load of the soak (tests/bench/soak), python3 standard library only.

  load.py PORT [--turns ID]... [--switch ID]... [--extra OWNER/NAME:N1,N2,...] [--gap MIN,MAX]
          [--oplog FILE]

Every request goes through nginx on 127.0.0.1:PORT with the harness's token (AGENTD_TEST_TOKEN,
tests/integration/lib.sh). One thread per job, each looping until SIGTERM, then finishing what it
does (a turn ends with its result, a switched session goes back to terminal mode, an extra
session is deleted) before the process prints one JSON line of counts and exits:

  --turns ID    a structured session: prompts one after another, GAP seconds apart (default
                0.5-2). Every other prompt is "RUNBASH touch soak-<n>": the fake claude asks a
                Bash permission, answered with POST /sessions/<id>/permissions/<requestId>
                (allow, every fourth a deny with a message); the others are a plain text turn.
                The stream (POST /sessions/<id>/prompt, SSE) must end with the turn's result.
  --switch ID   a terminal session switched to structured mode (POST /sessions/<id>/mode), given
                one prompt there, and switched back, again and again.
  --extra R:Ns  sessions created (POST /sessions, terminal and structured in turn), waited for
                until running, and deleted (DELETE /sessions/<id>), cycling through the issues Ns
                of repository R. Each create and delete is written to --oplog as
                "create <id> <status>" / "delete <id> <status>".
  always        a client polling GET /sessions every 2 s and GET /worktrees every 30 s, as the
                web UI and the TUI do.

Counts: prompts (streams answered 200), results (streams that ended with their result),
approvals, denials, switches, creates, deletes, lists, failures, errors (the first few).
"""
import argparse
import http.client
import json
import os
import random
import signal
import socket
import sys
import threading
import time

TURN_TIMEOUT = 60  # seconds a turn may take, permission answer included
RUNNING_TIMEOUT = 60  # seconds a created or switched session may take to run
ERRORS_KEPT = 20


class Load:
    def __init__(self, port, gap, oplog):
        self.port = port
        self.gap = gap
        self.oplog = open(oplog, "a", encoding="utf-8") if oplog else None
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.counts = {k: 0 for k in ("prompts", "results", "approvals", "denials", "switches",
                                      "creates", "deletes", "lists", "failures")}
        self.counts["errors"] = []
        token = os.environ.get("AGENTD_TEST_TOKEN", "")
        self.auth = {"Authorization": "Bearer " + token} if token else {}

    # ---- bookkeeping ------------------------------------------------------------------------
    def add(self, key, n=1):
        with self.lock:
            self.counts[key] += n

    def failure(self, why):
        with self.lock:
            self.counts["failures"] += 1
            if len(self.counts["errors"]) < ERRORS_KEPT:
                self.counts["errors"].append(why)

    def log_op(self, line):
        if self.oplog:
            with self.lock:
                self.oplog.write(line + "\n")
                self.oplog.flush()

    def pause(self, lo_hi=None):
        lo, hi = lo_hi or self.gap
        self.stop.wait(random.uniform(lo, hi))

    # ---- HTTP -------------------------------------------------------------------------------
    def request(self, method, path, body=None):
        """One request on its own connection: (status, parsed JSON or None)."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            h = dict(self.auth)
            data = None
            if body is not None:
                data = json.dumps(body).encode()
                h["Content-Type"] = "application/json"
            c.request(method, path, body=data, headers=h)
            r = c.getresponse()
            raw = r.read()
            try:
                return r.status, json.loads(raw) if raw else None
            except ValueError:
                return r.status, None
        except (OSError, http.client.HTTPException) as e:
            return 0, {"error": str(e)}
        finally:
            c.close()

    def wait_running(self, sid, mode=None):
        deadline = time.monotonic() + RUNNING_TIMEOUT
        while time.monotonic() < deadline:
            st, s = self.request("GET", "/sessions/" + sid)
            if st == 200 and s.get("state") in ("running", "attached") and \
                    (mode is None or s.get("mode") == mode):
                return True
            if st == 200 and s.get("state") == "failed":
                break
            time.sleep(0.1)
        self.failure("%s did not run within %d s" % (sid, RUNNING_TIMEOUT))
        return False

    def turn(self, sid, prompt, answer):
        """POST /sessions/<sid>/prompt; answers each permission with `answer` ("allow"/"deny").
        Returns True when the stream ended with the turn's result."""
        s = socket.create_connection(("127.0.0.1", self.port), timeout=TURN_TIMEOUT)
        try:
            body = json.dumps({"prompt": prompt}).encode()
            head = ["POST /sessions/%s/prompt HTTP/1.0" % sid, "Host: 127.0.0.1:%d" % self.port,
                    "Content-Type: application/json", "Content-Length: %d" % len(body)]
            head += ["%s: %s" % kv for kv in self.auth.items()]
            s.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + body)
            f = s.makefile("rb")
            status = f.readline().split()
            if len(status) < 2 or status[1] != b"200":
                rest = f.read(600)
                self.failure("%s prompt answered %s %s" % (sid, status[1:2], rest[-300:]))
                return False
            self.add("prompts")
            while f.readline() not in (b"\r\n", b"\n", b""):
                pass
            event, data = None, []
            for raw in f:
                line = raw.decode("utf-8", "replace").rstrip("\r\n")
                if line.startswith("event:"):
                    event = line[6:].strip()
                elif line.startswith("data:"):
                    data.append(line[5:].lstrip(" "))
                elif line == "" and event is not None:
                    text = "\n".join(data)
                    if event == "permission":
                        self.answer(sid, json.loads(text)["requestId"], answer)
                    elif event == "result":
                        self.add("results")
                        return True
                    elif event == "error":
                        self.failure("%s stream error %s" % (sid, text[:200]))
                        return False
                    event, data = None, []
            self.failure("%s stream ended before the result" % sid)
            return False
        except (OSError, ValueError, KeyError) as e:
            self.failure("%s turn: %s" % (sid, e))
            return False
        finally:
            s.close()

    def answer(self, sid, rid, behavior):
        body = {"behavior": behavior}
        if behavior == "deny":
            body["message"] = "the soak says no"
        st, b = self.request("POST", "/sessions/%s/permissions/%s" % (sid, rid), body)
        if st == 200:
            self.add("approvals" if behavior == "allow" else "denials")
        else:
            self.failure("%s permission answer %s %s" % (sid, st, b))

    # ---- jobs -------------------------------------------------------------------------------
    def turns(self, sid):
        n = 0
        while not self.stop.is_set():
            if n % 2 == 0:
                self.turn(sid, "RUNBASH touch soak-%d" % (n % 8), "deny" if n % 8 == 6 else "allow")
            else:
                self.turn(sid, "hello soak %d" % n, "allow")
            n += 1
            self.pause()

    def switch(self, sid):
        while not self.stop.is_set():
            for mode in ("structured", "terminal"):
                st, b = self.request("POST", "/sessions/%s/mode" % sid, {"mode": mode})
                if st != 200:
                    self.failure("%s mode %s answered %s %s" % (sid, mode, st, b))
                    continue
                self.add("switches")
                if not self.wait_running(sid, mode):
                    continue
                if mode == "structured":
                    self.turn(sid, "hello from a switch", "allow")
                self.pause((2, 4))

    def extra(self, owner, name, issues):
        n = 0
        while not self.stop.is_set():
            issue = issues[n % len(issues)]
            sid = "%s-%d" % (name, issue)
            mode = "terminal" if n % 2 == 0 else "structured"
            n += 1
            st, b = self.request("POST", "/sessions", {"repo": {"owner": owner, "name": name},
                                                       "issue": issue, "mode": mode})
            self.log_op("create %s %d" % (sid, st))
            if st != 201:
                self.failure("create %s answered %s %s" % (sid, st, b))
                self.pause((2, 4))
                continue
            self.add("creates")
            self.wait_running(sid)
            self.pause((1, 3))
            st, b = self.request("DELETE", "/sessions/" + sid)
            self.log_op("delete %s %d" % (sid, st))
            if st == 200:
                self.add("deletes")
            else:
                self.failure("delete %s answered %s %s" % (sid, st, b))
            self.pause((1, 3))

    def lists(self):
        n = 0
        while not self.stop.is_set():
            st, _ = self.request("GET", "/sessions")
            if n % 15 == 0 and st == 200:
                st, _ = self.request("GET", "/worktrees")
            if st == 200:
                self.add("lists")
            else:
                self.failure("list answered %s" % st)
            n += 1
            self.stop.wait(2)


def span(text):
    lo, _, hi = text.partition(",")
    return float(lo), float(hi or lo)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int)
    ap.add_argument("--turns", action="append", default=[])
    ap.add_argument("--switch", action="append", default=[])
    ap.add_argument("--extra")
    ap.add_argument("--gap", type=span, default=(0.5, 2))
    ap.add_argument("--oplog")
    a = ap.parse_args()

    load = Load(a.port, a.gap, a.oplog)
    jobs = [(load.turns, (sid,)) for sid in a.turns] + \
        [(load.switch, (sid,)) for sid in a.switch] + [(load.lists, ())]
    if a.extra:
        repo, _, issues = a.extra.partition(":")
        owner, _, name = repo.partition("/")
        jobs.append((load.extra, (owner, name, [int(i) for i in issues.split(",")])))
    signal.signal(signal.SIGTERM, lambda *_: load.stop.set())
    signal.signal(signal.SIGINT, lambda *_: load.stop.set())
    threads = [threading.Thread(target=fn, args=args, daemon=True) for fn, args in jobs]
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        for t in threads:
            t.join(0.2)
    print(json.dumps(load.counts), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
