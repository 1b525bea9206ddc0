#!/usr/bin/env python3
"""A stand-in for agent-daemon that records what a client sends (stdlib only).

    recorder.py --port-file FILE --log FILE

Listens on 127.0.0.1 (a free port, written to --port-file). Every request is appended to --log
as one JSON line {"method", "path", "headers": {lower-case name: value}, "body"}. Answers:
GET /events an SSE snapshot of no sessions, then pings until the client goes; POST /sessions
201 with a session object; anything else 200 {}.
"""
import argparse
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def record(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n).decode("utf-8", "replace") if n > 0 else None
        line = json.dumps({"method": self.command, "path": self.path,
                           "headers": {k.lower(): v for k, v in self.headers.items()},
                           "body": body})
        with self.server.lock, open(self.server.log, "a", encoding="utf-8") as f:
            f.write(line + "\n")

    def answer(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.record()
        if self.path.split("?")[0] != "/events":
            self.answer(200, {})
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        try:
            self.wfile.write(b'id: 1\nevent: snapshot\ndata: {"snapshot":true,"sessions":[]}\n\n')
            self.wfile.flush()
            while True:
                time.sleep(1)
                self.wfile.write(b": ping\n\n")
                self.wfile.flush()
        except OSError:
            pass

    def do_POST(self):
        self.record()
        if self.path == "/sessions":
            self.answer(201, {"id": "widgets-3", "state": "creating", "mode": "terminal",
                              "activity": "idle", "pending": []})
        else:
            self.answer(200, {})

    do_DELETE = do_POST


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log", required=True)
    args = ap.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.log = args.log
    server.lock = threading.Lock()
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % server.server_address[1])
    os.replace(tmp, args.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
