#!/usr/bin/env python3
"""A fake OpenAI API for running the real `codex` and `opencode` CLIs offline (stdlib only).

    openai_api.py --port 0 [--port-file FILE] [--log FILE]

Listens on 127.0.0.1 only; --port/--port-file as fakehttp.py says.

POST /v1/responses (the Responses API, codex's custom provider with wire_api = "responses")
answers as SSE (response.created, response.output_item.added, response.output_text.delta,
response.output_item.done, response.completed), or as one JSON response when the body does not
say "stream": true. POST /v1/chat/completions (opencode's openai-compatible provider) answers as
streamed chat.completion.chunk events ending in `data: [DONE]`, or as one chat.completion.
What either answers depends on the conversation's last item:
  - a tool's output (function_call_output / role "tool") -> text "Done."
  - a user prompt containing RUNBASH, when the request
    offers a shell tool                                   -> a call of that tool running the
                                                             rest of the line (default: touch
                                                             fake-openai-was-here)
  - anything else                                         -> "Hello from the fake model (<WORD>)",
                                                             WORD the prompt's last word
The shell tool is whichever the request offers: codex's `shell` (argv list), `shell_command` or
`exec_command` (a string; asked with sandbox_permissions require_escalated, so that codex asks
for approval), opencode's `bash` ({command, description}). opencode asks only for a command
outside the working tree (`touch /tmp/x`: external_directory).
GET /v1/models -> an empty model list; any other GET -> {}; any other POST -> {}.

--log FILE appends one JSON line per request: {"time", "method", "path", "body"}, so a test can
see that a resumed conversation sends the earlier turns again.
"""

import argparse
import json
import re
import sys
import threading
import time
import uuid

import fakehttp

MODEL = "fake-model"
MARKER = "RUNBASH"
DEFAULT_COMMAND = "touch fake-openai-was-here"
BODY_MAX = 64 * 1024 * 1024
WORD = re.compile(r"[A-Za-z0-9_-]+")
# Context codex sends as user messages before the prompt: never the prompt itself.
CONTEXT_TAGS = ("<environment_context>", "<user_instructions>", "<permissions instructions>",
                "# AGENTS.md", "<INSTRUCTIONS>")
SHELL_TOOLS = ("shell", "shell_command", "exec_command", "bash")


def text_of(content):
    """The text of a message content: a string, or a list of text/input_text parts."""
    if isinstance(content, str):
        return content
    parts = []
    if isinstance(content, list):
        for p in content:
            if isinstance(p, dict) and isinstance(p.get("text"), str):
                parts.append(p["text"])
    return "\n".join(parts)


def is_context(text):
    s = text.lstrip()
    return any(s.startswith(t) for t in CONTEXT_TAGS)


def last_turn(items):
    """('tool', None) when the last item is a tool's output, else ('user', the last prompt text)."""
    for it in reversed(items or []):
        if not isinstance(it, dict):
            continue
        kind = it.get("type")
        role = it.get("role")
        if kind == "function_call_output" or role == "tool":
            return "tool", None
        if role == "user" and (kind in (None, "message")):
            text = text_of(it.get("content"))
            if text.strip() and not is_context(text):
                return "user", text
        if role == "assistant" or kind == "function_call":
            # An answer after the last prompt (e.g. a title request) still answers that prompt.
            continue
    return "user", ""


def tool_names(body):
    names = []
    for t in body.get("tools") or []:
        if not isinstance(t, dict):
            continue
        fn = t.get("function") if isinstance(t.get("function"), dict) else t
        if isinstance(fn.get("name"), str):
            names.append(fn["name"])
    return names


def shell_call(name, command):
    """The arguments the named shell tool takes for command."""
    if name == "shell":
        return {"command": ["bash", "-lc", command]}
    if name == "exec_command":
        # Outside codex's sandbox: with approval policy on-request (a trusted project's) it asks.
        return {"cmd": command, "sandbox_permissions": "require_escalated",
                "justification": "The test asks for approval"}
    if name == "bash":
        return {"command": command, "description": "Run the command the test asked for"}
    return {"command": command}


def answer_for(items, body):
    """('text', str) or ('call', tool name, arguments dict) for this conversation."""
    kind, text = last_turn(items)
    if kind == "tool":
        return ("text", "Done.")
    offered = [n for n in SHELL_TOOLS if n in tool_names(body)]
    if MARKER in text and offered:
        command = text.split(MARKER, 1)[1].split("\n", 1)[0].strip() or DEFAULT_COMMAND
        return ("call", offered[0], shell_call(offered[0], command))
    words = WORD.findall(text)
    return ("text", "Hello from the fake model (%s)" % (words[-1] if words else "nothing"))


def sse(event, data):
    line = "data: %s\n\n" % json.dumps(data, separators=(",", ":"))
    return ("event: %s\n" % event + line) if event else line


USAGE = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
         "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15}


def responses_item(answer):
    if answer[0] == "text":
        return {"type": "message", "id": "msg_" + uuid.uuid4().hex[:24], "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": answer[1], "annotations": []}]}
    return {"type": "function_call", "id": "fc_" + uuid.uuid4().hex[:24], "status": "completed",
            "call_id": "call_" + uuid.uuid4().hex[:24], "name": answer[1],
            "arguments": json.dumps(answer[2], separators=(",", ":"))}


def responses_stream(resp_id, item):
    base = {"id": resp_id, "object": "response", "created_at": int(time.time()), "model": MODEL,
            "status": "in_progress", "output": []}
    out = [sse("response.created", {"type": "response.created", "response": base}),
           sse("response.in_progress", {"type": "response.in_progress", "response": base})]
    added = dict(item)
    if item["type"] == "message":
        added["content"] = []
        added["status"] = "in_progress"
    out.append(sse("response.output_item.added",
                   {"type": "response.output_item.added", "output_index": 0, "item": added}))
    if item["type"] == "message":
        text = item["content"][0]["text"]
        out.append(sse("response.content_part.added", {
            "type": "response.content_part.added", "item_id": item["id"], "output_index": 0,
            "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}}))
        out.append(sse("response.output_text.delta", {
            "type": "response.output_text.delta", "item_id": item["id"], "output_index": 0,
            "content_index": 0, "delta": text}))
        out.append(sse("response.output_text.done", {
            "type": "response.output_text.done", "item_id": item["id"], "output_index": 0,
            "content_index": 0, "text": text}))
        out.append(sse("response.content_part.done", {
            "type": "response.content_part.done", "item_id": item["id"], "output_index": 0,
            "content_index": 0, "part": item["content"][0]}))
    else:
        out.append(sse("response.function_call_arguments.delta", {
            "type": "response.function_call_arguments.delta", "item_id": item["id"],
            "output_index": 0, "delta": item["arguments"]}))
        out.append(sse("response.function_call_arguments.done", {
            "type": "response.function_call_arguments.done", "item_id": item["id"],
            "output_index": 0, "arguments": item["arguments"]}))
    out.append(sse("response.output_item.done",
                   {"type": "response.output_item.done", "output_index": 0, "item": item}))
    done = dict(base, status="completed", output=[item], usage=USAGE)
    out.append(sse("response.completed", {"type": "response.completed", "response": done}))
    return "".join(out)


def chat_messages(body):
    """Chat Completions messages as Responses-like items for last_turn."""
    return [m for m in body.get("messages") or [] if isinstance(m, dict)]


def chat_chunk(cid, delta, finish=None, usage=None):
    c = {"id": cid, "object": "chat.completion.chunk", "created": int(time.time()),
         "model": MODEL, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    if usage is not None:
        c["choices"] = []
        c["usage"] = usage
    return sse(None, c)


def chat_stream(cid, answer):
    out = [chat_chunk(cid, {"role": "assistant", "content": ""})]
    if answer[0] == "text":
        out.append(chat_chunk(cid, {"content": answer[1]}))
        out.append(chat_chunk(cid, {}, "stop"))
    else:
        call = {"index": 0, "id": "call_" + uuid.uuid4().hex[:24], "type": "function",
                "function": {"name": answer[1],
                             "arguments": json.dumps(answer[2], separators=(",", ":"))}}
        out.append(chat_chunk(cid, {"tool_calls": [call]}))
        out.append(chat_chunk(cid, {}, "tool_calls"))
    out.append(chat_chunk(cid, None, usage={"prompt_tokens": 10, "completion_tokens": 5,
                                            "total_tokens": 15}))
    out.append("data: [DONE]\n\n")
    return "".join(out)


def chat_message(answer):
    if answer[0] == "text":
        return {"role": "assistant", "content": answer[1]}, "stop"
    return {"role": "assistant", "content": None, "tool_calls": [{
        "id": "call_" + uuid.uuid4().hex[:24], "type": "function",
        "function": {"name": answer[1], "arguments": json.dumps(answer[2])}}]}, "tool_calls"


class Handler(fakehttp.Handler):
    server_version = "fake-openai-api/1"

    def reply(self, status, ctype, payload):
        self.send(status, ctype, payload.encode("utf-8"),
                  [("x-request-id", "req_" + uuid.uuid4().hex[:24])])

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
        path = self.path.split("?", 1)[0].rstrip("/")
        if path.endswith("/models"):
            self.reply(200, "application/json", json.dumps({"object": "list", "data": []}))
            return
        self.reply(200, "application/json", "{}")

    def do_POST(self):
        body = self.read_body()
        self.record(body)
        path = self.path.split("?", 1)[0].rstrip("/")
        if not isinstance(body, dict):
            self.reply(200, "application/json", "{}")
            return
        if path.endswith("/responses"):
            items = body.get("input")
            if isinstance(items, str):
                items = [{"role": "user", "content": items}]
            item = responses_item(answer_for(items, body))
            rid = "resp_" + uuid.uuid4().hex[:24]
            if body.get("stream"):
                self.reply(200, "text/event-stream", responses_stream(rid, item))
            else:
                self.reply(200, "application/json", json.dumps({
                    "id": rid, "object": "response", "created_at": int(time.time()),
                    "model": MODEL, "status": "completed", "output": [item], "usage": USAGE}))
            return
        if path.endswith("/chat/completions"):
            answer = answer_for(chat_messages(body), body)
            cid = "chatcmpl-" + uuid.uuid4().hex[:24]
            if body.get("stream"):
                self.reply(200, "text/event-stream", chat_stream(cid, answer))
            else:
                msg, finish = chat_message(answer)
                self.reply(200, "application/json", json.dumps({
                    "id": cid, "object": "chat.completion", "created": int(time.time()),
                    "model": MODEL,
                    "choices": [{"index": 0, "message": msg, "finish_reason": finish}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}))
            return
        self.reply(200, "application/json", "{}")


def main():
    ap = argparse.ArgumentParser(description="fake OpenAI Responses/Chat API (loopback only)")
    fakehttp.add_listen_args(ap)
    ap.add_argument("--log", help="append one JSON line per request to this file")
    args = ap.parse_args()

    server = fakehttp.server(Handler, args.port)
    server.log_path = args.log
    server.log_lock = threading.Lock()
    return fakehttp.serve(server, args.port_file)


if __name__ == "__main__":
    sys.exit(main())
