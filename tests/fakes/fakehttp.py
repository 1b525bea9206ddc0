"""What the fake HTTP services of tests/fakes share (stdlib only; bot_api.py, messages_api.py).

A handler base that keeps stderr quiet (each fake keeps its own --log), speaks HTTP/1.1
keep-alive, reads a request body by its Content-Length up to a cap and sends a reply with its
length; and the server: ThreadingHTTPServer on 127.0.0.1 only, its port (with --port 0 a free
one) printed as one line on stdout or written to --port-file through a temporary file renamed
over it, so a reader never sees a partial number.
"""

import os
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the clients (libcurl, the claude CLI) expect

    def log_message(self, fmt, *args):
        pass  # the request log is the fake's --log; stderr stays quiet

    def read_raw_body(self, limit):
        """The body's bytes (at most limit), or None when Content-Length is absent, bad or 0."""
        try:
            n = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            n = 0
        if n <= 0:
            return None
        return self.rfile.read(min(n, limit))

    def send(self, status, ctype, data, headers=()):
        """Sends status with data (bytes) as ctype, and the extra (name, value) headers."""
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


def add_listen_args(ap):
    """--port and --port-file, for serve()."""
    ap.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (0: a free one)")
    ap.add_argument("--port-file", help="write the port here instead of printing it")


def server(handler, port):
    """A ThreadingHTTPServer for handler on 127.0.0.1:port (0: a free one); serve() runs it."""
    s = ThreadingHTTPServer(("127.0.0.1", port), handler)
    s.daemon_threads = True
    return s


def serve(s, port_file):
    """Says s's port (to port_file, atomically, or as a line on stdout) and serves until ^C.
    Returns the exit status, 0."""
    port = s.server_address[1]
    if port_file:
        tmp = port_file + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write("%d\n" % port)
        os.replace(tmp, port_file)
    else:
        print(port, flush=True)
    try:
        s.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0
