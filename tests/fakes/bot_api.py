#!/usr/bin/env python3
"""A fake Telegram Bot API for testing agentd-telegram offline (stdlib only).

    bot_api.py --token TOKEN --port 0 [--port-file FILE] [--log FILE] [--first-update N]

Listens on 127.0.0.1 only. With --port 0 it picks a free port and prints it (one line on stdout),
or writes it to --port-file (a temp file renamed, so a reader never sees a partial number).

The Bot API, at /bot<TOKEN>/<method> (POST with a JSON body, or GET with a query string), as the
real one answers it ({"ok": true, "result": ...} or {"ok": false, "error_code", "description"}):
  getMe, getUpdates (offset confirms every update below it; long polling up to "timeout"
  seconds; a second getUpdates while one waits ends the first with 409 Conflict, as Telegram
  does), sendMessage, editMessageText ("message is not modified" when nothing changes),
  answerCallbackQuery (once per query), deleteMessage, sendDocument (multipart/form-data only,
  as a file upload must be: chat_id, document with a filename, caption).
What it enforces, as Telegram does (each refusal is counted in /test/stats):
  - text of 1 to 4096 characters (UTF-16 code units, Telegram's measure), else 400;
  - callback_data of 1 to 64 bytes, else 400;
  - at most 1 message per second per chat (sendMessage, editMessageText and deleteMessage each
    count) and 30 requests per second overall (every method but getUpdates and getMe): over
    it, 429 with "parameters": {"retry_after": N};
  - a wrong token: 401.

Test control (no token, for the test scripts):
  POST /test/message {"user", "text", ["chat"], ["first_name"]}  a user writes (chat = user by
       default); answers {"update_id", "message_id"}
  POST /test/press {"user", "chat", "message_id", "button"}  the user presses the inline button
       whose text is "button" on that message as it is now (404 when the message has none);
       answers {"update_id", "callback_query_id", "data"}; with "data" instead of "button", a
       button with that callback_data the message may no longer show (a client that had not
       refreshed it)
  POST /test/fault {"method", "status", ["retry_after"], ["count"]}  the next count (1) calls of
       method answer status (429 with retry_after, 500, ...)
  GET /test/messages[?chat=N]  every message the bot sent, as it is now: {"message_id", "chat",
       "text", "reply_markup", "edits", "deleted", "history": [every text it had]}
  GET /test/documents[?chat=N]  every document the bot sent: {"message_id", "chat", "filename",
       "content_type", "text", "caption"}
  GET /test/answers   every answerCallbackQuery: {"callback_query_id", "text", "user"}
  GET /test/stats     {"requests": {method: n}, "rejected_429", "rejected_400", "violations":
       [why each 429 or 400 was given], "offset" (the confirmed one), "pending" (updates not
       yet confirmed), "polling" (a getUpdates waits now)}

--log FILE appends one JSON line per Bot API request: {"time", "method", "body", "status"}.
--first-update N numbers updates from N (a fake started again goes on where the last one was,
as Telegram's ids do).
"""

import argparse
import email.parser
import email.policy
import json
import math
import sys
import threading
import time
from urllib.parse import parse_qs, urlsplit

import fakehttp

TEXT_MAX = 4096
CALLBACK_DATA_MAX = 64
CHAT_INTERVAL = 1.0   # seconds between two messages to one chat
GLOBAL_PER_SECOND = 30
POLL_MAX = 50         # seconds a getUpdates may wait
BODY_MAX = 1024 * 1024
CHAT_METHODS = ("sendMessage", "editMessageText", "deleteMessage")
UNLIMITED = ("getUpdates", "getMe")


def utf16_len(s):
    return len(s.encode("utf-16-le")) // 2


class Fake:
    def __init__(self, token, log_path, first_update=1):
        self.token = token
        self.log_path = log_path
        self.cv = threading.Condition()
        self.updates = []          # unconfirmed updates, in order
        self.next_update = first_update
        self.confirmed = 0         # every update below this id is confirmed
        self.poll_gen = 0          # bumped by each getUpdates: an older waiter ends with 409
        self.polling = False
        self.messages = {}         # (chat, message_id) -> message dict
        self.next_message = {}     # chat -> next message id
        self.callbacks = {}        # callback_query_id -> {"answered", "user"}
        self.next_callback = 1
        self.answers = []
        self.documents = []        # every sendDocument, in order
        self.chat_last = {}        # chat -> time of its last accepted message
        self.recent = []           # times of accepted requests within the last second
        self.requests = {}
        self.rejected_429 = 0
        self.rejected_400 = 0
        self.violations = []
        self.faults = {}           # method -> [status, retry_after, count]

    # ---- bookkeeping ---------------------------------------------------------------------
    def log(self, method, body, status):
        if not self.log_path:
            return
        line = json.dumps({"time": round(time.time(), 3), "method": method, "body": body,
                           "status": status}, separators=(",", ":"))
        with open(self.log_path, "a", encoding="utf-8") as f:
            f.write(line + "\n")

    def new_message_id(self, chat):
        n = self.next_message.get(chat, 1)
        self.next_message[chat] = n + 1
        return n

    def add_update(self, upd):
        upd["update_id"] = self.next_update
        self.next_update += 1
        self.updates.append(upd)
        self.cv.notify_all()
        return upd["update_id"]

    # ---- limits --------------------------------------------------------------------------
    def rate_check(self, method, chat):
        """Returns None or a 429 answer. Called with the lock held."""
        now = time.monotonic()
        self.recent = [t for t in self.recent if now - t < 1.0]
        wait = 0.0
        why = None
        if method in CHAT_METHODS and chat is not None:
            last = self.chat_last.get(chat)
            if last is not None and now - last < CHAT_INTERVAL:
                wait = CHAT_INTERVAL - (now - last)
                why = "%s to chat %s %.3f s after the last message" % (method, chat, now - last)
        if why is None and len(self.recent) >= GLOBAL_PER_SECOND:
            wait = 1.0 - (now - self.recent[0])
            why = "%s: %d requests within a second" % (method, len(self.recent) + 1)
        if why is not None:
            self.rejected_429 += 1
            self.violations.append(why)
            n = max(1, math.ceil(wait))
            return 429, {"ok": False, "error_code": 429,
                         "description": "Too Many Requests: retry after %d" % n,
                         "parameters": {"retry_after": n}}
        self.recent.append(now)
        if method in CHAT_METHODS and chat is not None:
            self.chat_last[chat] = now
        return None

    def bad(self, why):
        self.rejected_400 += 1
        self.violations.append(why)
        return 400, {"ok": False, "error_code": 400, "description": "Bad Request: " + why}

    def check_text(self, text):
        if not isinstance(text, str) or text == "":
            return self.bad("message text is empty")
        if utf16_len(text) > TEXT_MAX:
            return self.bad("message is too long (%d characters)" % utf16_len(text))
        return None

    def check_markup(self, markup):
        if markup is None:
            return None
        if isinstance(markup, str):
            try:
                markup = json.loads(markup)
            except ValueError:
                return self.bad("can't parse reply keyboard markup JSON object")
        rows = markup.get("inline_keyboard") if isinstance(markup, dict) else None
        if not isinstance(rows, list):
            return self.bad("reply markup is not an inline keyboard")
        for row in rows:
            if not isinstance(row, list):
                return self.bad("inline keyboard row is not an array")
            for b in row:
                data = b.get("callback_data") if isinstance(b, dict) else None
                if not isinstance(b, dict) or not isinstance(b.get("text"), str) or \
                        not isinstance(data, str):
                    return self.bad("button without text or callback_data")
                if not 1 <= len(data.encode("utf-8")) <= CALLBACK_DATA_MAX:
                    return self.bad("BUTTON_DATA_INVALID (%d bytes)" % len(data.encode()))
        return None

    # ---- methods -------------------------------------------------------------------------
    def call(self, method, p, handler):
        with self.cv:
            self.requests[method] = self.requests.get(method, 0) + 1
            fault = self.faults.get(method)
            if fault and fault[2] > 0:
                fault[2] -= 1
                status, retry = fault[0], fault[1]
                if status == 429:
                    self.rejected_429 += 1
                    return 429, {"ok": False, "error_code": 429,
                                 "description": "Too Many Requests: retry after %d" % retry,
                                 "parameters": {"retry_after": retry}}
                return status, {"ok": False, "error_code": status,
                                "description": "injected failure"}
            if method not in UNLIMITED:
                chat = p.get("chat_id")
                limited = self.rate_check(method, chat if isinstance(chat, int) else None)
                if limited:
                    return limited
        fn = getattr(self, "m_" + method, None)
        if fn is None:
            return 404, {"ok": False, "error_code": 404, "description": "Not Found"}
        return fn(p)

    def m_getMe(self, p):
        return 200, {"ok": True, "result": {"id": 42, "is_bot": True, "first_name": "agentd",
                                            "username": "agentd_test_bot"}}

    def m_getUpdates(self, p):
        offset = p.get("offset")
        timeout = min(max(int(p.get("timeout") or 0), 0), POLL_MAX)
        limit = min(max(int(p.get("limit") or 100), 1), 100)
        deadline = time.monotonic() + timeout
        with self.cv:
            self.poll_gen += 1
            gen = self.poll_gen
            self.cv.notify_all()
            if isinstance(offset, int) and offset > self.confirmed:
                self.confirmed = offset
                self.updates = [u for u in self.updates if u["update_id"] >= offset]
            self.polling = True
            try:
                while True:
                    if self.poll_gen != gen:
                        return 409, {"ok": False, "error_code": 409, "description":
                                     "Conflict: terminated by other getUpdates request"}
                    if self.updates:
                        return 200, {"ok": True, "result": self.updates[:limit]}
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return 200, {"ok": True, "result": []}
                    self.cv.wait(left)
            finally:
                if self.poll_gen == gen:
                    self.polling = False

    def m_sendMessage(self, p):
        chat = p.get("chat_id")
        if not isinstance(chat, int):
            return self.bad("chat_id is not an integer")
        with self.cv:
            err = self.check_text(p.get("text")) or self.check_markup(p.get("reply_markup"))
            if err:
                return err
            mid = self.new_message_id(chat)
            msg = {"message_id": mid, "chat": chat, "text": p["text"],
                   "reply_markup": p.get("reply_markup"), "edits": 0, "deleted": False,
                   "history": [p["text"]], "date": int(time.time())}
            self.messages[(chat, mid)] = msg
            return 200, {"ok": True, "result": self.tg_message(msg)}

    def m_sendDocument(self, p):
        chat = p.get("chat_id")
        doc = p.get("document")
        if not isinstance(chat, int):
            return self.bad("chat_id is not an integer")
        if not isinstance(doc, dict) or not doc.get("filename"):
            return self.bad("document is not an uploaded file")
        caption = p.get("caption")
        if caption is not None and not 0 <= utf16_len(caption) <= 1024:
            return self.bad("caption is longer than 1024")
        with self.cv:
            mid = self.new_message_id(chat)
            self.documents.append({"message_id": mid, "chat": chat, "filename": doc["filename"],
                                   "content_type": doc.get("content_type"),
                                   "text": doc.get("text"), "caption": caption})
            return 200, {"ok": True, "result": {"message_id": mid, "chat": {"id": chat},
                                                "date": int(time.time()),
                                                "document": {"file_name": doc["filename"]}}}

    def t_documents(self, q):
        chat = q.get("chat")
        with self.cv:
            return 200, [d for d in self.documents if chat is None or str(d["chat"]) == chat]

    def m_editMessageText(self, p):
        chat, mid = p.get("chat_id"), p.get("message_id")
        with self.cv:
            msg = self.messages.get((chat, mid))
            if msg is None or msg["deleted"]:
                return self.bad("message to edit not found")
            err = self.check_text(p.get("text")) or self.check_markup(p.get("reply_markup"))
            if err:
                return err
            markup = p.get("reply_markup")
            if p["text"] == msg["text"] and markup == msg["reply_markup"]:
                return self.bad("message is not modified: specified new message content and "
                                "reply markup are exactly the same as a current content and "
                                "reply markup of the message")
            msg["text"] = p["text"]
            msg["reply_markup"] = markup
            msg["edits"] += 1
            msg["history"].append(p["text"])
            return 200, {"ok": True, "result": self.tg_message(msg)}

    def m_deleteMessage(self, p):
        with self.cv:
            msg = self.messages.get((p.get("chat_id"), p.get("message_id")))
            if msg is None or msg["deleted"]:
                return self.bad("message to delete not found")
            msg["deleted"] = True
            return 200, {"ok": True, "result": True}

    def m_answerCallbackQuery(self, p):
        qid = p.get("callback_query_id")
        with self.cv:
            q = self.callbacks.get(qid)
            if q is None or q["answered"]:
                return self.bad("query is too old and response timeout expired or query ID "
                                "is invalid")
            text = p.get("text")
            if text is not None and (not isinstance(text, str) or len(text) > 200):
                return self.bad("answer text is longer than 200 characters")
            q["answered"] = True
            self.answers.append({"callback_query_id": qid, "text": text, "user": q["user"]})
            return 200, {"ok": True, "result": True}

    def tg_message(self, msg):
        m = {"message_id": msg["message_id"], "date": msg["date"],
             "chat": {"id": msg["chat"], "type": "private"},
             "from": {"id": 42, "is_bot": True, "first_name": "agentd"}, "text": msg["text"]}
        if msg["reply_markup"] is not None:
            m["reply_markup"] = msg["reply_markup"]
        return m

    # ---- test control --------------------------------------------------------------------
    def t_message(self, p):
        user = p.get("user")
        if not isinstance(user, int) or not isinstance(p.get("text"), str):
            return 400, {"error": "user (integer) and text (string) are required"}
        chat = p.get("chat", user)
        with self.cv:
            mid = self.new_message_id(chat)
            uid = self.add_update({"message": {
                "message_id": mid, "date": int(time.time()), "text": p["text"],
                "from": {"id": user, "is_bot": False, "first_name": p.get("first_name", "U%d" % user)},
                "chat": {"id": chat, "type": "private" if chat == user else "group"}}})
        return 200, {"update_id": uid, "message_id": mid}

    def t_press(self, p):
        user, chat, mid, button = p.get("user"), p.get("chat"), p.get("message_id"), p.get("button")
        with self.cv:
            msg = self.messages.get((chat, mid))
            if msg is None:
                return 404, {"error": "no message %s in chat %s" % (mid, chat)}
            markup = msg["reply_markup"]
            if isinstance(markup, str):
                markup = json.loads(markup)
            data = p.get("data") if isinstance(p.get("data"), str) else None
            for row in (markup or {}).get("inline_keyboard", []) if data is None else []:
                for b in row:
                    if b.get("text") == button:
                        data = b.get("callback_data")
            if data is None:
                return 404, {"error": "message %s has no button %r" % (mid, button)}
            qid = "cq%d" % self.next_callback
            self.next_callback += 1
            self.callbacks[qid] = {"answered": False, "user": user}
            uid = self.add_update({"callback_query": {
                "id": qid, "data": data, "chat_instance": "ci%d" % chat,
                "from": {"id": user, "is_bot": False, "first_name": p.get("first_name", "U%d" % user)},
                "message": self.tg_message(msg)}})
        return 200, {"update_id": uid, "callback_query_id": qid, "data": data}

    def t_fault(self, p):
        with self.cv:
            self.faults[p["method"]] = [int(p["status"]), int(p.get("retry_after", 1)),
                                        int(p.get("count", 1))]
        return 200, {}

    def t_messages(self, q):
        chat = q.get("chat")
        with self.cv:
            out = [dict(m) for (c, _), m in sorted(self.messages.items())
                   if chat is None or str(c) == chat]
        return 200, out

    def t_answers(self, q):
        with self.cv:
            return 200, list(self.answers)

    def t_stats(self, q):
        with self.cv:
            return 200, {"requests": dict(self.requests), "rejected_429": self.rejected_429,
                         "rejected_400": self.rejected_400, "violations": list(self.violations),
                         "offset": self.confirmed, "pending": len(self.updates),
                         "polling": self.polling}


def multipart_params(ctype, raw):
    """The fields of a multipart/form-data body: text fields as str (integers as int, as the Bot
    API reads chat_id), files as {"filename", "content_type", "text"}; None when malformed."""
    msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: " + ctype.encode("latin-1") + b"\r\n\r\n" + raw)
    if not msg.is_multipart():
        return None
    out = {}
    for part in msg.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if not name:
            return None
        data = part.get_payload(decode=True) or b""
        filename = part.get_filename()
        if filename is not None:
            out[name] = {"filename": filename, "content_type": part.get_content_type(),
                         "text": data.decode("utf-8", "replace")}
        else:
            v = data.decode("utf-8", "replace")
            out[name] = int(v) if v.lstrip("-").isdigit() else v
    return out


class Handler(fakehttp.Handler):
    server_version = "fake-bot-api/1"

    def reply(self, status, obj):
        data = json.dumps(obj, separators=(",", ":")).encode("utf-8")
        try:
            self.send(status, "application/json", data)
        except OSError:
            pass  # the client went away (a bot killed while it polled)

    def body(self):
        raw = self.read_raw_body(BODY_MAX)
        if raw is None:
            return {}
        ctype = self.headers.get("Content-Type", "")
        if ctype.startswith("multipart/form-data"):
            return multipart_params(ctype, raw)
        try:
            v = json.loads(raw.decode("utf-8"))
        except ValueError:
            return None
        return v if isinstance(v, dict) else None

    def route(self, params):
        fake = self.server.fake
        url = urlsplit(self.path)
        parts = url.path.split("/")
        if url.path.startswith("/test/"):
            name = parts[2] if len(parts) > 2 else ""
            q = {k: v[-1] for k, v in parse_qs(url.query).items()}
            fn = getattr(fake, "t_" + name, None)
            if fn is None:
                self.reply(404, {"error": "no such test endpoint"})
                return
            status, obj = fn(params if self.command == "POST" else q)
            self.reply(status, obj)
            return
        if len(parts) != 3 or not parts[1].startswith("bot"):
            self.reply(404, {"ok": False, "error_code": 404, "description": "Not Found"})
            return
        method = parts[2]
        if parts[1][3:] != fake.token:
            fake.log(method, params, 401)
            self.reply(401, {"ok": False, "error_code": 401, "description": "Unauthorized"})
            return
        if params is None:
            status, obj = 400, {"ok": False, "error_code": 400,
                                "description": "Bad Request: the body is not a JSON object"}
        else:
            if self.command == "GET":
                params = {k: (int(v[-1]) if v[-1].lstrip("-").isdigit() else v[-1])
                          for k, v in parse_qs(url.query).items()}
            status, obj = fake.call(method, params, self)
        fake.log(method, params, status)
        self.reply(status, obj)

    def do_GET(self):
        self.route({})

    def do_POST(self):
        self.route(self.body())


def main():
    ap = argparse.ArgumentParser(description="fake Telegram Bot API (loopback only)")
    ap.add_argument("--token", required=True, help="the bot token it accepts")
    fakehttp.add_listen_args(ap)
    ap.add_argument("--log", help="append one JSON line per Bot API request to this file")
    ap.add_argument("--first-update", type=int, default=1, help="the first update's id")
    args = ap.parse_args()

    server = fakehttp.server(Handler, args.port)
    server.fake = Fake(args.token, args.log, args.first_update)
    return fakehttp.serve(server, args.port_file)


if __name__ == "__main__":
    sys.exit(main())
