#!/usr/bin/env python3
"""A fake Gemini API for running the real `gemini` CLI offline (stdlib only).

    gemini_api.py --port 0 [--port-file FILE] [--log FILE]

Listens on 127.0.0.1 only; --port/--port-file as fakehttp.py says. The CLI reaches it with
GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:PORT and any GEMINI_API_KEY.

POST /v1beta/models/<model>:streamGenerateContent?alt=sse answers as SSE, one
GenerateContentResponse per `data:` line; POST .../<model>:generateContent answers with one
JSON GenerateContentResponse; :countTokens answers {"totalTokens": 10}. What it answers
depends on the last "user" content:
  - it holds a functionResponse part                 -> text "Done."
  - its text contains RUNBASH and the request offers
    run_shell_command                                -> a functionCall of run_shell_command
                                                        running the rest of the line (default:
                                                        touch fake-gemini-was-here)
  - anything else                                    -> "Hello from the fake model (<WORD>)",
                                                        WORD the prompt's last word
A request whose system instruction asks for JSON (the CLI's utility calls: next speaker,
routing) gets {} so it does not loop. Any GET -> {}.

--log FILE appends one JSON line per request: {"time", "method", "path", "body"}.
"""

import argparse
import json
import re
import sys
import threading
import time

import fakehttp

MODEL = "gemini-2.5-flash"
MARKER = "RUNBASH"
DEFAULT_COMMAND = "touch fake-gemini-was-here"
BODY_MAX = 64 * 1024 * 1024
WORD = re.compile(r"[A-Za-z0-9_-]+")
SHELL_TOOL = "run_shell_command"


def last_user(contents):
    for c in reversed(contents or []):
        if isinstance(c, dict) and c.get("role", "user") == "user":
            return c
    return None


def parts_of(content):
    parts = content.get("parts") if content else None
    return [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []


def offers_shell(body):
    for t in body.get("tools") or []:
        for fd in (t.get("functionDeclarations") or []) if isinstance(t, dict) else []:
            if isinstance(fd, dict) and fd.get("name") == SHELL_TOOL:
                return True
    return False


def wants_json(body):
    cfg = body.get("generationConfig") or {}
    return cfg.get("responseMimeType") == "application/json"


def answer_for(body):
    """The model's parts for this request."""
    if wants_json(body):
        return [{"text": "{}"}]
    user = last_user(body.get("contents"))
    parts = parts_of(user)
    if any("functionResponse" in p for p in parts):
        return [{"text": "Done."}]
    text = "\n".join(p["text"] for p in parts if isinstance(p.get("text"), str))
    if MARKER in text and offers_shell(body):
        command = text.split(MARKER, 1)[1].split("\n", 1)[0].strip() or DEFAULT_COMMAND
        return [{"functionCall": {"name": SHELL_TOOL, "args": {
            "command": command, "description": "Run the command the test asked for"}}}]
    words = WORD.findall(text)
    return [{"text": "Hello from the fake model (%s)" % (words[-1] if words else "nothing")}]


def response(parts):
    return {"candidates": [{"content": {"role": "model", "parts": parts},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5,
                              "totalTokenCount": 15},
            "modelVersion": MODEL}


class Handler(fakehttp.Handler):
    server_version = "fake-gemini-api/1"

    def reply(self, status, ctype, payload):
        self.send(status, ctype, payload.encode("utf-8"))

    def record(self, body):
        path = self.server.log_path
        if not path:
            return
        line = json.dumps({"time": round(time.time(), 3), "method": self.command,
                           "path": self.path, "body": body}, separators=(",", ":"))
        with self.server.log_lock, open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")

    def read_body(self):
        raw = self.read_raw_body(BODY_MAX)
        if not raw:
            return None
        text = raw.decode("utf-8", "replace")
        try:
            return json.loads(text)
        except ValueError:
            return text

    def do_GET(self):
        self.record(None)
        self.reply(200, "application/json", "{}")

    def do_POST(self):
        body = self.read_body()
        self.record(body)
        path = self.path.split("?", 1)[0]
        if not isinstance(body, dict):
            self.reply(200, "application/json", "{}")
            return
        if path.endswith(":countTokens"):
            self.reply(200, "application/json", json.dumps({"totalTokens": 10}))
            return
        if path.endswith(":streamGenerateContent"):
            data = json.dumps(response(answer_for(body)), separators=(",", ":"))
            self.reply(200, "text/event-stream", "data: %s\r\n\r\n" % data)
            return
        if path.endswith(":generateContent"):
            self.reply(200, "application/json", json.dumps(response(answer_for(body))))
            return
        self.reply(200, "application/json", "{}")


def main():
    ap = argparse.ArgumentParser(description="fake Gemini API (loopback only)")
    fakehttp.add_listen_args(ap)
    ap.add_argument("--log", help="append one JSON line per request to this file")
    args = ap.parse_args()

    server = fakehttp.server(Handler, args.port)
    server.log_path = args.log
    server.log_lock = threading.Lock()
    return fakehttp.serve(server, args.port_file)


if __name__ == "__main__":
    sys.exit(main())
