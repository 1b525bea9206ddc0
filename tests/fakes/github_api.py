#!/usr/bin/env python3
"""A fake GitHub REST API for the pull-request tests (stdlib only).

    github_api.py --port 0 [--port-file FILE] [--log FILE] [--token TOKEN]...
                  [--control FILE]

Listens on 127.0.0.1 only (fakehttp.py). Every request must carry `Authorization: Bearer T` or
`token T` with T one of --token (default: any non-empty token): otherwise 401
{"message": "Requires authentication"} (no header) or "Bad credentials".

Routes (the subset of https://docs.github.com/rest agentd uses):
  POST /repos/{o}/{r}/pulls {"title","head","base","body"?,"draft"?}
       -> 201 the pull request {number, html_url, url, state: "open", draft, merged: false,
          head: {ref, sha}, base: {ref}, title, body}; 422 {"message": "Validation Failed",
          "errors": [{"message": "A pull request already exists for o:head."}]} when an open
          one has that head; 422 without title/head/base.
  GET  /repos/{o}/{r}/pulls?head=o:branch&state=all -> 200 [pull requests], newest first.
  GET  /repos/{o}/{r}/pulls/{n} -> 200 the pull request, 404.
  GET  /repos/{o}/{r}/commits/{sha}/check-runs -> 200 {"total_count", "check_runs": [{name,
       status, conclusion}]}.
Every 200 carries an ETag (a hash of the body); a GET whose If-None-Match equals it is 304
with no body (GitHub does not count a 304 against the rate limit: nor does this fake). Every
answer carries X-RateLimit-Limit/-Remaining/-Used/-Reset and X-RateLimit-Resource: core.

The test steers it by writing JSON to --control FILE (read again at each request):
  {"merge": [N...]}            those pull requests are merged (state closed, merged true)
  {"close": [N...]}            those are closed without merging
  {"checks": {"<sha or *>": [{"name","status","conclusion"}]}}  the check runs of a commit
  {"secondary_limit": K}       the next K requests answer 403 {"message": "You have exceeded a
                               secondary rate limit..."} with Retry-After: 60 (or
                               "retry_after": S of the control file)
  {"deny_create": "message"}   POST pulls answers 403 with that message (no push rights, ...)
  {"primary_limit": K}         the next K requests answer 403 {"message": "API rate limit
                               exceeded..."} with X-RateLimit-Remaining: 0 and X-RateLimit-Reset
                               "reset_in" (default 60) seconds ahead, and no Retry-After
  {"stale": [N...]}            a conditional GET of those pull requests answers 304 whatever
                               changed (GitHub's answers are cached for up to 60 s): only an
                               unconditional GET sees a merge
  {"merged_checks_limit": K}   the next K check-runs requests for the head of a merged pull
                               request answer 429 with Retry-After: "retry_after" (default 60):
                               the limit falls between the poll that sees the merge and the
                               poll of its checks
The control file holds the whole wished state; the fake applies merges/closes once per number.

--log FILE appends one JSON line per request: {"time","method","path","status","etag"?,"body"?}
(etag: the If-None-Match sent; body: a POST's JSON), so a test can count polls, conditional ones
and 304s, and read what was asked for.
"""

import argparse
import hashlib
import json
import re
import sys
import threading
import time
from urllib.parse import parse_qs, urlsplit

import fakehttp

BODY_MAX = 1024 * 1024
RATE_LIMIT = 5000
SECONDARY_RETRY_AFTER = 60

PULLS = re.compile(r"^/repos/([^/]+)/([^/]+)/pulls$")
PULL = re.compile(r"^/repos/([^/]+)/([^/]+)/pulls/([0-9]+)$")
CHECKS = re.compile(r"^/repos/([^/]+)/([^/]+)/commits/([^/]+)/check-runs$")


class State:
    def __init__(self, args):
        self.lock = threading.Lock()
        self.args = args
        self.pulls = {}  # (owner, repo) -> {number: pull}
        self.next_number = 12  # "acme/widgets#12" reads like a real one
        self.used = 0
        self.secondary_spent = 0
        self.merged_checks_spent = 0
        self.primary_spent = 0
        self.applied = set()

    def control(self):
        if not self.args.control:
            return {}
        try:
            with open(self.args.control, encoding="utf-8") as f:
                return json.load(f)
        except (OSError, ValueError):
            return {}


def pull_view(pull):
    return dict(pull)


class GitHubHandler(fakehttp.Handler):
    state = None

    def rate_headers(self):
        st = self.state
        return [("X-RateLimit-Limit", str(RATE_LIMIT)),
                ("X-RateLimit-Remaining", str(max(0, RATE_LIMIT - st.used))),
                ("X-RateLimit-Used", str(st.used)),
                ("X-RateLimit-Reset", str(int(time.time()) + 3600)),
                ("X-RateLimit-Resource", "core")]

    def log_request_line(self, status, etag=None):
        if not self.state.args.log:
            return
        line = {"time": time.time(), "method": self.command, "path": self.path,
                "status": status}
        if etag:
            line["etag"] = etag
        if getattr(self, "body_json", None) is not None:
            line["body"] = self.body_json
        with open(self.state.args.log, "a", encoding="utf-8") as f:
            f.write(json.dumps(line) + "\n")

    def reply(self, status, obj, extra=()):
        data = json.dumps(obj).encode()
        headers = list(self.rate_headers()) + list(extra)
        etag = None
        if status == 200:
            etag = '"%s"' % hashlib.sha1(data).hexdigest()
            headers.append(("ETag", etag))
            if self.command == "GET" and self.headers.get("If-None-Match") == etag:
                return self.not_modified(headers)
        self.send(status, "application/json; charset=utf-8", data, headers)
        self.log_request_line(status, self.headers.get("If-None-Match"))

    def not_modified(self, headers=None):
        self.send_response(304)
        for name, value in (headers if headers is not None else self.rate_headers()):
            self.send_header(name, value)
        self.send_header("Content-Length", "0")
        self.end_headers()
        self.log_request_line(304, self.headers.get("If-None-Match"))

    def authorized(self):
        auth = self.headers.get("Authorization") or ""
        m = re.match(r"^(?:Bearer|token) (\S+)$", auth)
        if not auth:
            self.reply(401, {"message": "Requires authentication",
                             "documentation_url": "https://docs.github.com/rest"})
            return False
        if m is None or (self.state.args.token and m.group(1) not in self.state.args.token):
            self.reply(401, {"message": "Bad credentials",
                             "documentation_url": "https://docs.github.com/rest"})
            return False
        return True

    def apply_control(self, ctl):
        """Merges and closes named in the control file, once each."""
        for key, merged in (("merge", True), ("close", False)):
            for n in ctl.get(key) or []:
                if (key, n) in self.state.applied:
                    continue
                for pulls in self.state.pulls.values():
                    p = pulls.get(n)
                    if p is not None:
                        p["state"] = "closed"
                        p["merged"] = merged
                        p["merged_at"] = "2026-01-01T00:00:00Z" if merged else None
                        p["closed_at"] = "2026-01-01T00:00:00Z"
                        self.state.applied.add((key, n))

    def limited(self, ctl):
        """Answers the secondary rate limit while the control file asks for it."""
        want = int(ctl.get("secondary_limit") or 0)
        if self.state.secondary_spent >= want:
            return False
        self.state.secondary_spent += 1
        self.reply(403, {"message": "You have exceeded a secondary rate limit. Please wait a "
                                    "few minutes before you try again.",
                         "documentation_url": "https://docs.github.com/rest"},
                   [("Retry-After", str(ctl.get("retry_after", SECONDARY_RETRY_AFTER)))])
        return True

    def primary_limited(self, ctl):
        """Answers a spent primary rate limit while the control file asks for it."""
        st = self.state
        want = int(ctl.get("primary_limit") or 0)
        if st.primary_spent >= want:
            return False
        st.primary_spent += 1
        reset = int(time.time()) + int(ctl.get("reset_in", SECONDARY_RETRY_AFTER))
        data = json.dumps({"message": "API rate limit exceeded for user.",
                           "documentation_url": "https://docs.github.com/rest"}).encode()
        self.send(403, "application/json; charset=utf-8", data,
                  [("X-RateLimit-Limit", str(RATE_LIMIT)), ("X-RateLimit-Remaining", "0"),
                   ("X-RateLimit-Used", str(RATE_LIMIT)), ("X-RateLimit-Reset", str(reset)),
                   ("X-RateLimit-Resource", "core")])
        self.log_request_line(403, self.headers.get("If-None-Match"))
        return True

    def merged_checks_limited(self, sha, ctl):
        """Answers 429 to the check runs of a merged pull request's head while asked to."""
        st = self.state
        want = int(ctl.get("merged_checks_limit") or 0)
        if st.merged_checks_spent >= want or not any(
                p["merged"] and p["head"]["sha"] == sha
                for pulls in st.pulls.values() for p in pulls.values()):
            return False
        st.merged_checks_spent += 1
        self.reply(429, {"message": "API rate limit exceeded",
                         "documentation_url": "https://docs.github.com/rest"},
                   [("Retry-After", str(ctl.get("retry_after", SECONDARY_RETRY_AFTER)))])
        return True

    def handle_any(self, method):
        st = self.state
        url = urlsplit(self.path)
        body = None
        if method == "POST":
            raw = self.read_raw_body(BODY_MAX)
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = None
        self.body_json = body
        with st.lock:
            if not self.authorized():
                return
            ctl = st.control()
            if self.limited(ctl) or self.primary_limited(ctl):
                return
            st.used += 1
            self.apply_control(ctl)
            m = PULLS.match(url.path)
            if m and method == "POST":
                return self.create_pull(m.group(1), m.group(2), body, ctl)
            if m and method == "GET":
                return self.list_pulls(m.group(1), m.group(2), parse_qs(url.query))
            m = PULL.match(url.path)
            if m and method == "GET":
                p = st.pulls.get((m.group(1), m.group(2)), {}).get(int(m.group(3)))
                if p is None:
                    return self.reply(404, {"message": "Not Found"})
                if p["number"] in (ctl.get("stale") or []) and self.headers.get("If-None-Match"):
                    return self.not_modified()
                return self.reply(200, pull_view(p))
            m = CHECKS.match(url.path)
            if m and method == "GET" and self.merged_checks_limited(m.group(3), ctl):
                return
            if m and method == "GET":
                checks = ctl.get("checks") or {}
                runs = checks.get(m.group(3), checks.get("*", []))
                return self.reply(200, {"total_count": len(runs), "check_runs": runs})
            return self.reply(404, {"message": "Not Found"})

    def create_pull(self, owner, repo, body, ctl):
        st = self.state
        if ctl.get("deny_create"):
            return self.reply(403, {"message": ctl["deny_create"]})
        if not isinstance(body, dict) or not all(
                isinstance(body.get(k), str) and body.get(k) for k in ("title", "head", "base")):
            return self.reply(422, {"message": "Validation Failed",
                                    "errors": [{"resource": "PullRequest",
                                                "code": "missing_field"}]})
        pulls = st.pulls.setdefault((owner, repo), {})
        head = body["head"].split(":")[-1]
        for p in pulls.values():
            if p["head"]["ref"] == head and p["state"] == "open":
                return self.reply(422, {
                    "message": "Validation Failed",
                    "errors": [{"resource": "PullRequest", "code": "custom",
                                "message": "A pull request already exists for %s:%s." %
                                           (owner, head)}]})
        n = st.next_number
        st.next_number += 1
        pulls[n] = {
            "number": n,
            "url": "https://api.github.com/repos/%s/%s/pulls/%d" % (owner, repo, n),
            "html_url": "https://github.com/%s/%s/pull/%d" % (owner, repo, n),
            "state": "open", "merged": False, "merged_at": None, "closed_at": None,
            "draft": bool(body.get("draft")), "title": body["title"],
            "body": body.get("body"),
            "head": {"ref": head, "sha": "%040d" % n},
            "base": {"ref": body["base"]},
        }
        return self.reply(201, pull_view(pulls[n]))

    def list_pulls(self, owner, repo, query):
        head = (query.get("head") or [""])[0].split(":")[-1]
        want = (query.get("state") or ["open"])[0]
        out = [p for _, p in sorted(self.state.pulls.get((owner, repo), {}).items(),
                                    reverse=True)
               if (not head or p["head"]["ref"] == head) and (want == "all" or p["state"] == want)]
        return self.reply(200, [pull_view(p) for p in out])

    def do_GET(self):
        self.handle_any("GET")

    def do_POST(self):
        self.handle_any("POST")

    def do_PATCH(self):
        self.handle_any("PATCH")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    fakehttp.add_listen_args(ap)
    ap.add_argument("--log", help="append one JSON line per request here")
    ap.add_argument("--token", action="append", default=[], help="a token it accepts")
    ap.add_argument("--control", help="a JSON file that steers the fake (see above)")
    args = ap.parse_args()
    GitHubHandler.state = State(args)
    s = fakehttp.server(GitHubHandler, args.port)
    return fakehttp.serve(s, args.port_file)


if __name__ == "__main__":
    sys.exit(main())
