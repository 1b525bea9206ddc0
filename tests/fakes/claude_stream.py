#!/usr/bin/env python3
"""Structured mode of the fake claude: stream-json on stdin/stdout, as in
shared notes claude-stream-json.md section 9 (init, text turn, tool use with permission allow /
deny / deny+interrupt, interrupt, EOF exit codes). Prompts choose the scenario:

  contains RUNBASH   -> a Bash tool_use that needs permission (the command is the text after
                        RUNBASH, default "touch fake-bash-ran"); on allow it really runs it
  contains TWOTOOLS  -> two tool uses needing permission at once
  contains SLOW      -> a turn that takes 30 s unless interrupted
  contains BIGLINE   -> an assistant text of 1 MB
  contains MARKDOWN  -> tool uses that need no permission (Edit, Write, Read, Grep, Bash) with
                        their results, then an answer in Markdown with hostile HTML in it
  contains MANY N [P] -> a turn of N assistant lines, each "line <i>" and P dots (default 40:
                        about 425 bytes a line)
  contains DRIP N MS -> a turn of N assistant lines "drip <i>", one every MS milliseconds (an
                        answer that streams for a while)
  contains TERMWAIT S -> from then on SIGTERM takes S seconds to end it (claude writing its
                        transcript), after which it writes "done" to <record dir>/<pid>.stopped
                        and exits 0
  contains TERMLINGER S -> from then on the first SIGTERM is taken as opencode 1.18 takes it:
                        SIGTERM goes back to its default action, <record dir>/<pid>.termed is
                        written, and the process lingers S seconds more (its background work)
                        before it exits 0
  anything else      -> "Hello!" text turn

A user message that arrives while a turn runs is queued, as the real CLI does: it runs as the
next turn (its own system/init, replay and result), and each result says how many still wait
("queued_turn_count"); an interrupt ends the running turn only.

With --replay-user-messages (and stream-json in and out, as the real CLI requires) each user
message is echoed after the turn's system/init and before the reply, as the real CLI 2.1.328
does: {"type":"user","message":<the message as sent>,"session_id",
"parent_tool_use_id":null,"uuid":<the line's uuid or a new one>,"timestamp","isReplay":true}.
"""
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from datetime import datetime, timezone

MODEL = "claude-sonnet-4-5-20250929"
LOG_DIR = [None]  # where the records go (main sets it)
out_lock = threading.Lock()


def emit(obj):
    line = json.dumps(obj, separators=(",", ":"))
    with out_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def U():
    return str(uuid.uuid4())


class Fake:
    def __init__(self, sid, mode, replay):
        self.sid = sid
        self.mode = mode
        self.replay = replay    # --replay-user-messages
        self.cv = threading.Condition()
        self.answers = {}       # request_id -> response dict
        self.pending = {}       # request_id -> tool_use_id
        self.interrupted = False
        self.turns = []         # queued user lines (parsed)
        self.eof = False
        self.last_error = False
        self.num = 0

    # ---- frames ---------------------------------------------------------------------------
    def init(self):
        emit({"type": "system", "subtype": "init", "cwd": os.getcwd(), "session_id": self.sid,
              "tools": ["Bash", "Read", "Write"], "mcp_servers": [], "model": MODEL,
              "permissionMode": self.mode, "slash_commands": [], "apiKeySource": "none",
              "claude_code_version": "2.1.328", "output_style": "default", "agents": [],
              "skills": [], "plugins": [], "uuid": U()})

    def replayed(self, line):
        stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        emit({"type": "user", "message": line["message"], "session_id": self.sid,
              "parent_tool_use_id": None, "uuid": line.get("uuid") or U(), "timestamp": stamp,
              "isReplay": True})

    def assistant(self, content, stop="end_turn"):
        self.num += 1
        emit({"type": "assistant", "message": {"id": "msg_%02d" % self.num, "type": "message",
              "role": "assistant", "model": MODEL, "content": content, "stop_reason": stop,
              "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 5}},
              "parent_tool_use_id": None, "session_id": self.sid, "uuid": U()})

    def tool_result(self, tool_use_id, content, is_error, tur):
        emit({"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": tool_use_id, "content": content,
             "is_error": is_error}]}, "parent_tool_use_id": None, "session_id": self.sid,
            "uuid": U(), "tool_use_result": tur})

    def result(self, text, denials=(), error=None, turns=1):
        r = {"type": "result", "subtype": "success" if error is None else "error_during_execution",
             "is_error": error is not None, "duration_ms": 12, "duration_api_ms": 1,
             "num_turns": turns, "stop_reason": "end_turn" if error is None else None,
             "session_id": self.sid, "total_cost_usd": 0.0001,
             "usage": {"input_tokens": 10, "output_tokens": 5}, "modelUsage": {},
             "permission_denials": list(denials), "uuid": U()}
        # User messages that came while this turn ran wait in the queue; the real CLI counts
        # them in every result (notes section 3.1, 4.5) and runs them next, one turn each.
        with self.cv:
            r["queued_turn_count"] = len(self.turns)
        if error is None:
            r["result"] = text
        else:
            r["errors"] = [error]
        self.last_error = error is not None
        emit(r)

    def interrupted_result(self, for_tool):
        text = "[Request interrupted by user for tool use]" if for_tool else \
            "[Request interrupted by user]"
        emit({"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": text}]},
              "parent_tool_use_id": None, "session_id": self.sid, "uuid": U()})
        self.result(None, error="[ede_diagnostic] result_type=user last_content_type=n/a stop_reason=null",
                    turns=0)

    # ---- turns ----------------------------------------------------------------------------
    def ask(self, tools):
        """Sends can_use_tool for each (id, input); waits for every answer or an interrupt."""
        ids = []
        for tool_use_id, inp in tools:
            rid = U()
            with self.cv:
                self.pending[rid] = tool_use_id
            ids.append(rid)
            emit({"type": "control_request", "request_id": rid, "request": {
                "subtype": "can_use_tool", "tool_name": "Bash", "display_name": "Bash",
                "input": inp, "tool_use_id": tool_use_id, "description": inp.get("description", ""),
                "permission_suggestions": [{"type": "addRules", "rules": [
                    {"toolName": "Bash", "ruleContent": inp["command"].split()[0] + ":*"}],
                    "behavior": "allow", "destination": "localSettings"}]}})
        with self.cv:
            while not self.interrupted and not self.eof and \
                    not all(r in self.answers for r in ids):
                self.cv.wait()
            if self.interrupted or (self.eof and not all(r in self.answers for r in ids)):
                return None, ids
            return [self.answers.pop(r) for r in ids], ids

    def cancel_pending(self, ids, tools):
        for rid, (tool_use_id, _) in zip(ids, tools):
            with self.cv:
                was = self.pending.pop(rid, None)
            if was is not None and rid not in self.answers:
                emit({"type": "control_cancel_request", "request_id": rid})
                self.tool_result(tool_use_id, "The user doesn't want to proceed with this tool use. "
                                 "The tool use was rejected.", True, "Error: rejected")

    def tool_turn(self, tools):
        self.assistant([{"type": "tool_use", "id": t, "name": "Bash", "input": i} for t, i in tools],
                       stop="tool_use")
        answers, ids = self.ask(tools)
        if answers is None:
            if self.eof and not self.interrupted:
                for (tool_use_id, _) in tools:
                    self.tool_result(tool_use_id, "Tool permission stream closed before response received",
                                     True, "Error: stream closed")
                self.result(None, error="Tool permission stream closed before response received")
                return
            self.cancel_pending(ids, tools)
            self.interrupted_result(True)
            return
        denials, stop = [], False
        for (tool_use_id, inp), a in zip(tools, answers):
            if a.get("behavior") == "allow":
                cmd = (a.get("updatedInput") or inp)["command"]
                p = subprocess.run(["/bin/sh", "-c", cmd], capture_output=True, text=True)
                self.tool_result(tool_use_id, p.stdout, p.returncode != 0,
                                 {"stdout": p.stdout, "stderr": p.stderr, "interrupted": False,
                                  "isImage": False})
            else:
                m = a.get("message", "")
                self.tool_result(tool_use_id, m, True, "Error: " + m)
                denials.append({"tool_name": "Bash", "tool_use_id": tool_use_id, "tool_input": inp})
                stop = stop or bool(a.get("interrupt"))
        if stop:
            self.result(None, denials, error="Request interrupted by user")
            return
        text = "Done." if not denials else "OK, I won't."
        self.assistant([{"type": "text", "text": text}])
        self.result(text, denials, turns=2)

    def markdown_turn(self):
        tools = [
            ("toolu_e1", "Edit", {"file_path": "src/app.py", "old_string": "x = 1\ny = 2",
                                   "new_string": "x = 10\ny = 2"}),
            ("toolu_w1", "Write", {"file_path": "NOTES.md", "content": "first\nsecond"}),
            ("toolu_r1", "Read", {"file_path": "README.md", "offset": 10, "limit": 20}),
            ("toolu_g1", "Grep", {"pattern": "TODO", "path": "src", "glob": "*.py"}),
            ("toolu_b1", "Bash", {"command": "make test", "description": "Run the tests"}),
        ]
        self.assistant([{"type": "tool_use", "id": t, "name": n, "input": i} for t, n, i in tools],
                       stop="tool_use")
        for t, n, _ in tools:
            self.tool_result(t, "ok " + n, False, {})
        md = ("## Summary\n\nI changed **two** files:\n\n- `src/app.py`\n- NOTES.md\n\n"
              "```python\nx = 10  # a long line that must scroll sideways on a phone rather than wrap "
              "or widen the page ....................................................\n```\n\n"
              "See [the docs](https://example.com/docs) and [bad](javascript:alert(1)).\n\n"
              "<img src=x onerror=\"window.__pwned=1\"><script>window.__pwned=2</script>"
              "<b onclick=\"window.__pwned=3\">bold</b>\n")
        self.assistant([{"type": "text", "text": md}])
        self.result(md, turns=2)

    def turn(self, line):
        content = line["message"].get("content")
        if isinstance(content, list):
            content = " ".join(b.get("text", "") for b in content if isinstance(b, dict))
        text = content or ""
        with self.cv:
            self.interrupted = False
        self.init()
        if self.replay:
            self.replayed(line)
        if "RUNBASH" in text:
            cmd = text.split("RUNBASH", 1)[1].strip() or "touch fake-bash-ran"
            self.tool_turn([("toolu_01", {"command": cmd, "description": "Run " + cmd})])
        elif "TWOTOOLS" in text:
            self.tool_turn([("toolu_01", {"command": "touch one", "description": "one"}),
                            ("toolu_02", {"command": "touch two", "description": "two"})])
        elif "SLOW" in text:
            with self.cv:
                self.cv.wait_for(lambda: self.interrupted or self.eof, timeout=30)
                stopped = self.interrupted
            if stopped:
                self.interrupted_result(False)
            else:
                self.assistant([{"type": "text", "text": "Slow done."}])
                self.result("Slow done.")
        elif "MANY" in text:
            words = text.split("MANY", 1)[1].split()
            n = int(words[0])
            pad = "." * (int(words[1]) if len(words) > 1 else 40)
            for i in range(n):
                self.assistant([{"type": "text", "text": "line %d %s" % (i, pad)}])
            self.result("many")
        elif "DRIP" in text:
            words = text.split("DRIP", 1)[1].split()
            n, ms = int(words[0]), int(words[1])
            stopped = False
            for i in range(n):
                with self.cv:
                    stopped = self.cv.wait_for(lambda: self.interrupted or self.eof,
                                               timeout=ms / 1000)
                if stopped:
                    break
                self.assistant([{"type": "text", "text": "drip %d" % i}])
            if stopped:
                self.interrupted_result(False)
            else:
                self.result("dripped")
        elif "TERMWAIT" in text:
            secs = float(text.split("TERMWAIT", 1)[1].split()[0])

            def slow_stop(signum, frame):
                time.sleep(secs)
                with open(os.path.join(LOG_DIR[0], "%d.stopped" % os.getpid()), "w") as f:
                    f.write("done\n")
                os._exit(0)
            signal.signal(signal.SIGTERM, slow_stop)
            self.assistant([{"type": "text", "text": "Slow stop armed."}])
            self.result("Slow stop armed.")
        elif "TERMLINGER" in text:
            secs = float(text.split("TERMLINGER", 1)[1].split()[0])

            def linger(signum, frame):
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                with open(os.path.join(LOG_DIR[0], "%d.termed" % os.getpid()), "w") as f:
                    f.write("termed\n")
                threading.Timer(secs, lambda: os._exit(0)).start()
            signal.signal(signal.SIGTERM, linger)
            self.assistant([{"type": "text", "text": "Lingering stop armed."}])
            self.result("Lingering stop armed.")
        elif "MARKDOWN" in text:
            self.markdown_turn()
        elif "BIGLINE" in text:
            big = "x" * (1024 * 1024)
            self.assistant([{"type": "text", "text": big}])
            self.result("big")
        else:
            self.assistant([{"type": "text", "text": "Hello!"}])
            self.result("Hello!")

    def worker(self):
        while True:
            with self.cv:
                while not self.turns and not self.eof:
                    self.cv.wait()
                if not self.turns:
                    break
                line = self.turns.pop(0)
            self.turn(line)
        sys.exit(1 if self.last_error else 0)

    # ---- stdin ----------------------------------------------------------------------------
    def control(self, msg):
        rid = msg.get("request_id")
        req = msg.get("request")
        if not isinstance(req, dict):
            sys.stderr.write("Error: control_request without request\n")
            os._exit(1)
        sub = req.get("subtype")
        if sub == "interrupt":
            # An interrupt ends the running turn only: what is queued stays and runs next
            # (unless cancel_queued, which agentd never sends).
            with self.cv:
                if req.get("cancel_queued"):
                    self.turns.clear()
                queued = [t.get("uuid") for t in self.turns if t.get("uuid")]
            emit({"type": "control_response", "response": {"subtype": "success", "request_id": rid,
                  "response": {"still_queued": queued}}})
            with self.cv:
                self.interrupted = True
                self.cv.notify_all()
        elif sub == "initialize":
            emit({"type": "control_response", "response": {"subtype": "success", "request_id": rid,
                  "response": {"commands": [], "agents": [], "output_style": "default",
                               "available_output_styles": ["default"], "models": [], "account": {},
                               "pid": os.getpid()}}})
        elif sub == "set_permission_mode":
            self.mode = req.get("mode", "default")
            emit({"type": "control_response", "response": {"subtype": "success", "request_id": rid,
                  "response": {"mode": self.mode}}})
        else:
            emit({"type": "control_response", "response": {"subtype": "error", "request_id": rid,
                  "error": "Unsupported control request subtype: %s" % sub}})

    def reader(self):
        for raw in sys.stdin:
            line = raw.strip()
            if not line:
                continue
            try:
                msg = json.loads(line)
            except ValueError:
                sys.stderr.write("Error parsing streaming input line (type=unknown, %d chars): "
                                 "SyntaxError\n" % len(line))
                os._exit(1)
            t = msg.get("type")
            if t == "user":
                if msg.get("message", {}).get("role") != "user":
                    sys.stderr.write("Error: Expected message role 'user', got '%s'\n"
                                     % msg.get("message", {}).get("role"))
                    os._exit(1)
                with self.cv:
                    self.turns.append(msg)
                    self.cv.notify_all()
            elif t == "control_request":
                self.control(msg)
            elif t == "control_response":
                resp = msg.get("response", {})
                rid = resp.get("request_id")
                with self.cv:
                    if rid in self.pending:
                        del self.pending[rid]
                        self.answers[rid] = resp.get("response", {}) \
                            if resp.get("subtype") == "success" else \
                            {"behavior": "deny", "message": "Tool permission request failed: "
                             + str(resp.get("error"))}
                        self.cv.notify_all()
        with self.cv:
            self.eof = True
            self.cv.notify_all()


def flag(argv, name):
    for i, a in enumerate(argv):
        if a == name and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return None


def main(argv):
    if "--output-format" in " ".join(argv) and "--verbose" not in argv:
        sys.stderr.write("Error: When using --print, --output-format=stream-json requires --verbose\n")
        return 1
    sid = flag(argv, "--resume") or flag(argv, "--session-id") or str(uuid.uuid4())
    log_dir = os.path.join(os.environ.get("HOME", "/tmp"), "fake-claude")
    os.makedirs(log_dir, exist_ok=True)
    LOG_DIR[0] = log_dir
    rec = {"argv": argv, "cwd": os.getcwd(), "pid": os.getpid(), "mode": "structured",
           "env": dict(os.environ)}
    tmp = os.path.join(log_dir, ".%d.tmp" % os.getpid())
    with open(tmp, "w") as f:
        json.dump(rec, f)
    os.rename(tmp, os.path.join(log_dir, "%d.json" % os.getpid()))
    replay = "--replay-user-messages" in argv and flag(argv, "--input-format") == "stream-json" \
        and flag(argv, "--output-format") == "stream-json"
    fake = Fake(sid, flag(argv, "--permission-mode") or "default", replay)
    threading.Thread(target=fake.reader, daemon=True).start()
    fake.worker()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
