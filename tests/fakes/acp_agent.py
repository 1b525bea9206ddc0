#!/usr/bin/env python3
"""A tiny ACP agent (Agent Client Protocol, JSON-RPC 2.0 over stdio) for agentd-host's tests.

It speaks what gemini --acp, opencode acp and codex-acp speak, with none of their models:
  initialize        loadSession true
  session/new       a new session id; its conversation kept in $FAKE_ACP_DIR/<id>.json
  session/load      replays the conversation as session/update, then answers; with
                    FAKE_ACP_SAME_MINUTE_BUG=1 a load in the wall-clock minute the session was
                    made fails ("Invalid session identifier") and leaves the session unloadable,
                    as gemini 0.61.0 does (notes: agent-clis.md §2); with
                    FAKE_ACP_LATE_REPLAY=1 it answers first and replays after, as gemini does
  session/prompt    answers "echo: <prompt>" in two chunks, with usage and cost; a prompt
                    holding RUNTOOL <cmd> first asks session/request_permission (options of
                    $FAKE_ACP_OPTIONS: gemini, opencode or codex) and says "allowed: <cmd>" or
                    "denied"; a prompt holding READFILE asks the client fs/read_text_file and
                    says the error code it got; SLOW streams until session/cancel; ORPHAN
                    starts `sleep 600` in a session of its own (as opencode runs git) and
                    writes its pid to $FAKE_ACP_DIR/orphan.pid
Every prompt is logged to $FAKE_ACP_LOG as one JSON line {"sessionId","prompt","history"}
(history: the prompts of that session before it), so a test sees what a resumed agent knew.
"""
import json
import os
import select
import sys
import time
import uuid

DIR = os.environ.get("FAKE_ACP_DIR", "/tmp")
LOG = os.environ.get("FAKE_ACP_LOG")
OPTIONS = {
    "gemini": [("proceed_always", "allow_always"), ("proceed_once", "allow_once"),
               ("cancel", "reject_once")],
    "opencode": [("once", "allow_once"), ("always", "allow_always"), ("reject", "reject_once")],
    "codex": [("approved", "allow_once"), ("approved-execpolicy-amendment", "allow_always"),
              ("abort", "reject_always")],
}[os.environ.get("FAKE_ACP_OPTIONS", "gemini")]

state = {"next": 1000, "cancelled": False, "pending": [], "inbuf": b""}


def next_line(timeout=None):
    """One line of stdin (fd 0, unbuffered by Python: select sees what is left), or None when
    timeout passes; exits at EOF."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while b"\n" not in state["inbuf"]:
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        r, _, _ = select.select([0], [], [], left)
        if not r:
            return None
        data = os.read(0, 65536)
        if not data:
            sys.exit(0)
        state["inbuf"] += data
    line, state["inbuf"] = state["inbuf"].split(b"\n", 1)
    return line


def send(msg):
    msg["jsonrpc"] = "2.0"
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def update(sid, u):
    send({"method": "session/update", "params": {"sessionId": sid, "update": u}})


def chunk(sid, text, kind="agent_message_chunk"):
    update(sid, {"sessionUpdate": kind, "content": {"type": "text", "text": text}})


def path(sid):
    return os.path.join(DIR, "fake-acp-" + sid.replace("/", "_") + ".json")


def load(sid):
    try:
        with open(path(sid)) as f:
            return json.load(f)
    except OSError:
        return None


def save(sid, conv):
    with open(path(sid), "w") as f:
        json.dump(conv, f)


def read_msg(timeout=None):
    """The next message from the client, or None at timeout; queued ones first (not while
    waiting with a timeout: those are for the main loop)."""
    if state["pending"] and timeout is None:
        return state["pending"].pop(0)
    line = next_line(timeout)
    return None if line is None else json.loads(line)


def call(method, params):
    """A request of ours to the client; other messages meanwhile are kept for the main loop."""
    state["next"] += 1
    rid = state["next"]
    send({"id": rid, "method": method, "params": params})
    while True:
        m = json.loads(next_line())
        if m.get("id") == rid and "method" not in m:
            return m
        if m.get("method") == "session/cancel":
            state["cancelled"] = True
        else:
            state["pending"].append(m)


def prompt(mid, p):
    sid = p["sessionId"]
    conv = load(sid)
    if conv is None:
        send({"id": mid, "error": {"code": -32602, "message": "unknown session"}})
        return
    text = "".join(b.get("text", "") for b in p.get("prompt", []) if b.get("type") == "text")
    if LOG:
        with open(LOG, "a") as f:
            f.write(json.dumps({"sessionId": sid, "prompt": text,
                                "history": [t["prompt"] for t in conv["turns"]]}) + "\n")
    state["cancelled"] = False
    answer = "echo: " + text
    if "RUNTOOL" in text:
        cmd = text.split("RUNTOOL", 1)[1].strip() or "true"
        call_id = "call_%d" % (len(conv["turns"]) + 1)
        update(sid, {"sessionUpdate": "tool_call", "toolCallId": call_id, "title": "Shell",
                     "kind": "execute", "status": "pending", "rawInput": {"command": cmd}})
        r = call("session/request_permission", {
            "sessionId": sid,
            "toolCall": {"toolCallId": call_id, "title": "Shell", "kind": "execute",
                         "rawInput": {"command": cmd}},
            "options": [{"optionId": o, "name": o, "kind": k} for o, k in OPTIONS]})
        outcome = (r.get("result") or {}).get("outcome", {})
        kinds = dict(OPTIONS)
        if outcome.get("outcome") == "selected" and kinds.get(outcome.get("optionId"), "").startswith("allow"):
            update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": call_id,
                         "status": "completed",
                         "content": [{"type": "content", "content": {"type": "text", "text": "ran " + cmd}}]})
            answer = "allowed: " + cmd
        else:
            update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": call_id,
                         "status": "failed",
                         "content": [{"type": "content", "content": {"type": "text", "text": "denied"}}]})
            answer = "denied: " + (outcome.get("optionId") or outcome.get("outcome") or "?")
    if "ORPHAN" in text:
        import subprocess
        p = subprocess.Popen(["sleep", "600"], start_new_session=True,
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        try:  # the answer says the pid too: an agent user may not write to DIR
            with open(os.path.join(DIR, "orphan.pid"), "w") as f:
                f.write("%d\n" % p.pid)
        except OSError:
            pass
        answer = "started %d" % p.pid
    if "READFILE" in text:
        r = call("fs/read_text_file", {"sessionId": sid, "path": "/etc/hostname"})
        answer = "fs error %s" % (r.get("error") or {}).get("code")
    if "SLOW" in text:
        for i in range(600):
            chunk(sid, "tick %d " % i)
            m = read_msg(0.1)
            if m is not None and m.get("method") == "session/cancel":
                state["cancelled"] = True
            elif m is not None:
                state["pending"].append(m)
            if state["cancelled"]:
                break
    if state["cancelled"]:
        conv["turns"].append({"prompt": text, "answer": ""})
        save(sid, conv)
        send({"id": mid, "result": {"stopReason": "cancelled"}})
        return
    chunk(sid, "thinking about it", "agent_thought_chunk")
    half = len(answer) // 2
    chunk(sid, answer[:half])
    chunk(sid, answer[half:])
    update(sid, {"sessionUpdate": "usage_update", "used": 100, "size": 1000,
                 "cost": {"amount": 0.0125, "currency": "USD"}})
    conv["turns"].append({"prompt": text, "answer": answer})
    save(sid, conv)
    send({"id": mid, "result": {"stopReason": "end_turn",
                                "usage": {"inputTokens": 11, "outputTokens": 7, "totalTokens": 18}}})


def main():
    while True:
        m = read_msg()
        method, mid, p = m.get("method"), m.get("id"), m.get("params") or {}
        if method is None:
            continue  # a response to nothing we wait for
        if method == "initialize":
            send({"id": mid, "result": {"protocolVersion": 1,
                                        "agentCapabilities": {"loadSession": True},
                                        "authMethods": []}})
        elif method == "session/new":
            sid = str(uuid.uuid4())
            save(sid, {"cwd": p.get("cwd"), "created": time.time(), "turns": []})
            send({"id": mid, "result": {"sessionId": sid,
                                        "models": {"currentModelId": "fake-acp-model",
                                                   "availableModels": []}}})
        elif method == "session/load":
            sid = p.get("sessionId", "")
            conv = load(sid)
            same = conv is not None and int(conv["created"] // 60) == int(time.time() // 60)
            if conv is None or conv.get("broken") or (
                    os.environ.get("FAKE_ACP_SAME_MINUTE_BUG") == "1" and same):
                if conv is not None:
                    conv["broken"] = True
                    save(sid, conv)
                send({"id": mid, "error": {"code": -32603, "message": "Invalid session identifier"}})
                continue
            late = os.environ.get("FAKE_ACP_LATE_REPLAY") == "1"
            if late:  # gemini answers first and replays after (not awaited)
                send({"id": mid, "result": {"models": {"currentModelId": "fake-acp-model"}}})
            for t in conv["turns"]:
                chunk(sid, t["prompt"], "user_message_chunk")
                chunk(sid, t["answer"])
            if not late:
                send({"id": mid, "result": {"models": {"currentModelId": "fake-acp-model"}}})
        elif method == "session/prompt":
            prompt(mid, p)
        elif method == "session/cancel":
            state["cancelled"] = True
        elif mid is not None:
            send({"id": mid, "error": {"code": -32601, "message": "method not found"}})


if __name__ == "__main__":
    main()
