#!/usr/bin/env python3
"""A git server over smart HTTP for the tests: Debian git's own `git http-backend` as CGI (argv, no
shell), on 127.0.0.1 only, serving the bare repositories under --root as /<owner>/<name>.git.

Fetches are anonymous. A push (git-receive-pack) needs HTTP Basic credentials whose password is
a token of --tokens (a JSON object token -> "write" | "read"): none or an unknown token is 401
(with the challenge a client answers), a "read" token 403, as GitHub answers a token without
push rights; a "write" token pushes as REMOTE_USER, and the repository's own hooks run
(a pre-receive hook is how a test plays branch protection). --log: one JSON line per request
{"method","path","user","status"}.

    git_http.py --root DIR --tokens FILE [--log FILE] [--port N | --port-file FILE]
"""
import argparse
import base64
import json
import os
import subprocess
import sys
import threading

from fakehttp import Handler, add_listen_args, serve, server

BODY_MAX = 64 * 1024 * 1024  # a pack of the tests' small repositories, with room
ARGS = None
LOG_LOCK = threading.Lock()


def tokens():
    with open(ARGS.tokens, encoding="utf-8") as f:
        return json.load(f)


class GitHandler(Handler):
    def log(self, status, user):
        if not ARGS.log:
            return
        with LOG_LOCK, open(ARGS.log, "a", encoding="utf-8") as f:
            f.write(json.dumps({"method": self.command, "path": self.path, "user": user,
                                "status": status}) + "\n")

    def body(self):
        """The request body: by Content-Length, or chunked (libgit2 streams a push's pack)."""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return bytes(out)
                out += self.rfile.read(size)
                self.rfile.readline()
                if len(out) > BODY_MAX:
                    raise ValueError("body too large")
        return self.read_raw_body(BODY_MAX) or b""

    def user(self):
        """(user, rights) from Basic credentials whose password is a known token, else None."""
        auth = self.headers.get("Authorization", "")
        if not auth.startswith("Basic "):
            return None
        try:
            name, _, token = base64.b64decode(auth[6:]).decode().partition(":")
        except ValueError:
            return None
        rights = tokens().get(token)
        return (name or "token", rights) if rights else None

    def handle_git(self):
        path, _, query = self.path.partition("?")
        push = path.endswith("/git-receive-pack") or "service=git-receive-pack" in query
        user = None
        if push:
            who = self.user()
            if who is None:
                self.log(401, None)
                self.send(401, "text/plain", b"Authentication required\n",
                          [("WWW-Authenticate", 'Basic realm="git"')])
                return
            user, rights = who
            if rights != "write":
                self.log(403, user)
                self.send(403, "text/plain",
                          b"Permission to push denied: this token cannot write here.\n")
                return
        body = self.body() if self.command == "POST" else b""
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_PROJECT_ROOT": ARGS.root,
               "GIT_HTTP_EXPORT_ALL": "1", "PATH_INFO": path, "QUERY_STRING": query,
               "REQUEST_METHOD": self.command, "REMOTE_ADDR": "127.0.0.1",
               "CONTENT_TYPE": self.headers.get("Content-Type", ""),
               "CONTENT_LENGTH": str(len(body)), "GATEWAY_INTERFACE": "CGI/1.1"}
        if self.headers.get("Content-Encoding"):
            env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
        if self.headers.get("Git-Protocol"):
            env["GIT_PROTOCOL"] = self.headers["Git-Protocol"]
        if user:
            env["REMOTE_USER"] = user
        r = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True,
                           timeout=60)
        head, _, data = r.stdout.partition(b"\r\n\r\n")
        status, headers, ctype = 200, [], "application/octet-stream"
        for line in head.decode(errors="replace").split("\r\n"):
            name, _, value = line.partition(":")
            if not name:
                continue
            if name.lower() == "status":
                status = int(value.strip().split()[0])
            elif name.lower() not in ("content-length", "content-type"):
                headers.append((name, value.strip()))
            elif name.lower() == "content-type":
                ctype = value.strip()
        self.log(status, user)
        self.send(status, ctype, data, headers)

    do_GET = handle_git
    do_POST = handle_git


def main():
    global ARGS
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", required=True)
    ap.add_argument("--tokens", required=True)
    ap.add_argument("--log")
    add_listen_args(ap)
    ARGS = ap.parse_args()
    return serve(server(GitHandler, ARGS.port), ARGS.port_file)


if __name__ == "__main__":
    sys.exit(main())
