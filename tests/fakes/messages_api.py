#!/usr/bin/env python3
"""A fake Anthropic Messages API for running the real `claude` CLI offline (stdlib only).

    messages_api.py --port 0 [--port-file FILE] [--log FILE]

Listens on 127.0.0.1 only. With --port 0 it picks a free port and prints it (one line on
stdout), or writes it to --port-file (written to a temp file and renamed, so a reader never
sees a partial number).

POST /v1/messages (any query string, e.g. ?beta=true) answers like the real API, as SSE when
the body says "stream": true (message_start, content_block_start/delta/stop, message_delta,
message_stop), else as one JSON message. What it answers depends on the last role "user"
message (later "system" messages are skipped):
  - it holds a tool_result block              -> text "Done.", or "The tool failed." when the
                                                 result says is_error (e.g. a denied permission)
  - its prompt text contains RUNBASH and the
    request offers a Bash tool                -> a Bash tool_use running the rest of that line
                                                 (default: touch real-claude-was-here)
  - anything else                             -> text "Hello from the fake model (<WORD>)",
                                                 WORD being the prompt's last word, so a test
                                                 can tell turns apart
The prompt text is the user message's text blocks minus <system-reminder> parts.
Any other POST (count_tokens, event logging, ...) -> {"input_tokens": 10}; any GET -> {}.

--log FILE appends one JSON line per request: {"time", "method", "path", "body"} where body
is the parsed JSON body (or the raw text when it is not JSON, or null when empty).
"""

import argparse
import json
import re
import sys
import threading
import time
import uuid

import fakehttp

MODEL = "claude-sonnet-4-5-20250929"
MARKER = "RUNBASH"
DEFAULT_COMMAND = "touch real-claude-was-here"
BODY_MAX = 64 * 1024 * 1024
REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.S)
WORD = re.compile(r"[A-Za-z0-9_-]+")


def last_user_message(messages):
    for m in reversed(messages or []):
        if isinstance(m, dict) and m.get("role") == "user":
            return m
    return None


def blocks_of(message):
    content = message.get("content") if message else None
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []


def prompt_text(message):
    parts = []
    for b in blocks_of(message):
        if b.get("type") != "text" or not isinstance(b.get("text"), str):
            continue
        text = REMINDER.sub("", b["text"]).strip()
        if text:
            parts.append(text)
    return "\n".join(parts)


def offers_bash(body):
    tools = body.get("tools")
    return isinstance(tools, list) and any(
        isinstance(t, dict) and t.get("name") == "Bash" for t in tools)


def answer_for(body):
    """Returns the content blocks and stop reason the fake model answers body with."""
    user = last_user_message(body.get("messages"))
    results = [b for b in blocks_of(user) if b.get("type") == "tool_result"]
    if results:
        failed = any(b.get("is_error") for b in results)
        return [{"type": "text", "text": "The tool failed." if failed else "Done."}], "end_turn"
    text = prompt_text(user)
    if MARKER in text and offers_bash(body):
        command = text.split(MARKER, 1)[1].split("\n", 1)[0].strip() or DEFAULT_COMMAND
        tool = {
            "type": "tool_use",
            "id": "toolu_" + uuid.uuid4().hex[:24],
            "name": "Bash",
            "input": {"command": command, "description": "Run the command the test asked for"},
        }
        return [tool], "tool_use"
    words = WORD.findall(text)
    word = words[-1] if words else "nothing"
    return [{"type": "text", "text": "Hello from the fake model (%s)" % word}], "end_turn"


def sse(event, data):
    return "event: %s\ndata: %s\n\n" % (event, json.dumps(data, separators=(",", ":")))


def stream_body(msg_id, blocks, stop_reason):
    usage = {"input_tokens": 10, "output_tokens": 1, "cache_creation_input_tokens": 0,
             "cache_read_input_tokens": 0}
    out = [sse("message_start", {
        "type": "message_start",
        "message": {"id": msg_id, "type": "message", "role": "assistant", "model": MODEL,
                    "content": [], "stop_reason": None, "stop_sequence": None,
                    "usage": usage},
    })]
    for i, b in enumerate(blocks):
        if b["type"] == "text":
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": b["text"]}
        else:
            start = {"type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}
            delta = {"type": "input_json_delta",
                     "partial_json": json.dumps(b["input"], separators=(",", ":"))}
        out.append(sse("content_block_start",
                       {"type": "content_block_start", "index": i, "content_block": start}))
        out.append(sse("content_block_delta",
                       {"type": "content_block_delta", "index": i, "delta": delta}))
        out.append(sse("content_block_stop", {"type": "content_block_stop", "index": i}))
    out.append(sse("message_delta", {
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason, "stop_sequence": None},
        "usage": {"output_tokens": 5},
    }))
    out.append(sse("message_stop", {"type": "message_stop"}))
    return "".join(out)


class Handler(fakehttp.Handler):
    server_version = "fake-messages-api/1"

    def reply(self, status, ctype, payload):
        self.send(status, ctype, payload.encode("utf-8"),
                  [("request-id", "req_" + uuid.uuid4().hex[:24])])

    def record(self, body):
        path = self.server.log_path
        if not path:
            return
        line = json.dumps({"time": round(time.time(), 3), "method": self.command,
                           "path": self.path, "body": body},
                          separators=(",", ":"))
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
        path = self.path.split("?", 1)[0].rstrip("/")
        if path != "/v1/messages" or not isinstance(body, dict):
            self.reply(200, "application/json", json.dumps({"input_tokens": 10}))
            return
        blocks, stop = answer_for(body)
        msg_id = "msg_" + uuid.uuid4().hex[:24]
        if body.get("stream"):
            self.reply(200, "text/event-stream", stream_body(msg_id, blocks, stop))
            return
        self.reply(200, "application/json", json.dumps({
            "id": msg_id, "type": "message", "role": "assistant", "model": MODEL,
            "content": blocks, "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }))


def main():
    ap = argparse.ArgumentParser(description="fake Anthropic Messages API (loopback only)")
    fakehttp.add_listen_args(ap)
    ap.add_argument("--log", help="append one JSON line per request to this file")
    args = ap.parse_args()

    server = fakehttp.server(Handler, args.port)
    server.log_path = args.log
    server.log_lock = threading.Lock()
    return fakehttp.serve(server, args.port_file)


if __name__ == "__main__":
    sys.exit(main())
