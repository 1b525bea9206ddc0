// The conversation view of a structured session: GET /sessions/<id>/events (SSE: every event of
// every turn, replayed from the start on load and from Last-Event-ID after a drop) rendered as a
// chat; prompts go to POST …/prompt, answers to POST …/permissions/<requestId>, Interrupt to
// POST …/interrupt. Permission cards are answered once and follow permission_resolved, whoever
// answered. The user's prompts are claude's replays of them (a user event with isReplay, API.md:
// Structured mode), so a reload shows them too; the one this page sends is shown at once and
// taken as its own replay when that arrives.
import { api, post_stream, eventSource, sessionPath } from "./api.js";
import { renderMarkdown } from "./markdown.js";
import { toolView } from "./toolcard.js";
import { EV } from "./events.js";

// Event names of the stream (API.md: Structured mode): claude's own line types and ours; an
// EventSource hears only named ones.
const CLAUDE_EVENTS = ["system", "assistant", "user", "stream_event", "result", "control_response", "control_request"];
const EVENTS = [...new Set([...CLAUDE_EVENTS, EV.PERMISSION, EV.PERMISSION_RESOLVED, EV.RAW, EV.EXIT, EV.ERROR])];
const TEXT_MAX = 200000; // characters of one tool result shown; the rest is cut
const RETRY_MIN_MS = 1000;
const RETRY_MAX_MS = 15000;

export class ConversationView {
  /**
   * host: the view's element (holds .conv, .prompt-form); id: the session; onStatus(text, ok);
   * readOnly: the identity may not change anything (no prompt, no answer, no interrupt).
   */
  constructor(host, id, onStatus, readOnly = false) {
    this.readOnly = readOnly;
    this.host = host;
    this.id = id;
    this.onStatus = onStatus;
    this.list = host.querySelector(".conv");
    this.form = host.querySelector(".prompt-form");
    this.textarea = this.form.querySelector("textarea");
    this.sendButton = this.form.querySelector(".send");
    this.interruptButton = this.form.querySelector(".interrupt");
    this.streamState = host.querySelector(".conv-state");
    this.budgetNote = this.form.querySelector(".budget-note");
    this.budgetNote.hidden = true;
    this.budgetNote.textContent = "";
    this.list.replaceChildren();
    this.tools = new Map(); // tool_use_id -> <details>
    this.cards = new Map(); // requestId -> card element
    this.streaming = null; // the assistant bubble partial messages grow
    this.running = false; // a turn runs, from the events: its first event until its result
    this.results = 0; // results seen, so that a POST answered after its turn's result starts none
    this.activityBusy = false; // the session's activity says working or waiting
    this.sending = false;
    this.sent = []; // {text, li}: prompts shown as sent whose replay has not come yet
    this.closed = false;
    // Answers need the server: while the page's live list or this view's event stream is cut
    // (the stack stopped, the network gone), Send, Interrupt and the cards' buttons are
    // disabled, and enabled again once both are back (the stream then replays what was missed).
    this.liveOnline = true;
    this.streamOnline = true;
    this.onSubmit = (ev) => {
      ev.preventDefault();
      this.sendPrompt();
    };
    this.onKey = (ev) => {
      if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) {
        ev.preventDefault();
        this.sendPrompt();
      }
    };
    this.onInterrupt = () => this.interrupt();
    this.form.addEventListener("submit", this.onSubmit);
    this.textarea.addEventListener("keydown", this.onKey);
    this.interruptButton.addEventListener("click", this.onInterrupt);
    this.lastId = "";
    this.retry = RETRY_MIN_MS;
    this.timer = 0;
    this.open();
    this.update();
  }

  /**
   * Follows the session's events. EventSource itself reconnects after a drop with Last-Event-ID;
   * after an answer that is not a stream (a bridge being restarted answers 502) it gives up, and
   * we open a new one from ?after=<the last id seen>.
   */
  open() {
    const q = this.lastId ? "?after=" + encodeURIComponent(this.lastId) : "";
    const src = eventSource(sessionPath(this.id, "/events" + q));
    this.source = src;
    src.addEventListener("open", () => {
      this.retry = RETRY_MIN_MS;
      this.state("live");
      this.setStreamOnline(true);
    });
    src.addEventListener("error", () => {
      if (this.closed || this.source !== src) return;
      this.setStreamOnline(false);
      if (src.readyState !== EventSource.CLOSED) {
        this.state("reconnecting…");
        return;
      }
      this.state("not available — retrying in " + Math.round(this.retry / 1000) + " s");
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.open(), this.retry);
      this.retry = Math.min(this.retry * 2, RETRY_MAX_MS);
    });
    for (const name of EVENTS) {
      src.addEventListener(name, (ev) => this.event(name, ev.data, ev.lastEventId));
    }
    src.addEventListener("message", (ev) => this.event("message", ev.data, ev.lastEventId));
  }

  state(text) {
    this.streamState.textContent = "events: " + text;
  }

  get online() {
    return this.liveOnline && this.streamOnline;
  }

  /** The page's live list (GET /events) is connected or not. */
  setOnline(on) {
    if (this.liveOnline === on) return;
    this.liveOnline = on;
    this.refreshControls();
  }

  setStreamOnline(on) {
    if (this.streamOnline === on) return;
    this.streamOnline = on;
    this.refreshControls();
  }

  refreshControls() {
    this.update();
    for (const li of this.cards.values()) this.cardControls(li);
  }

  /** A card's buttons: usable while it is unanswered, no answer of ours is on its way, and the
   * server can be reached; the card says when it waits for the connection. */
  cardControls(li) {
    if (this.readOnly || li.dataset.resolved) return;
    const off = !this.online;
    for (const b of li.querySelectorAll(".perm-actions button, .perm-actions input")) {
      b.disabled = off || li.dataset.sending === "1";
    }
    li.classList.toggle("offline", off);
    const out = li.querySelector(".perm-outcome");
    if (off) out.textContent = "offline: answer once the connection is back";
    else if (out.textContent.startsWith("offline:")) out.textContent = "";
  }

  dispose() {
    this.closed = true;
    clearTimeout(this.timer);
    this.source.close();
    this.form.removeEventListener("submit", this.onSubmit);
    this.textarea.removeEventListener("keydown", this.onKey);
    this.interruptButton.removeEventListener("click", this.onInterrupt);
  }

  /**
   * The session's activity from the live list: working or waiting means a turn runs (a turn
   * another client started shows here before its first event). The end of a turn is taken from
   * the events (its result), which this view reads in order.
   */
  setActivity(activity) {
    this.activityBusy = activity === "working" || activity === "waiting";
    this.update();
  }

  /**
   * Said where the prompt is typed, before anyone types one: the server refuses every new prompt
   * of a session over its budget (402 budget_exceeded), a turn already running goes on.
   */
  setBudget(over, cost) {
    if (!over) {
      this.budgetNote.hidden = true;
      return;
    }
    if (this.budgetNote.dataset.refused === "1") return;
    this.budgetNote.textContent = "Over its budget" + (cost ? " (" + cost + ")" : "") +
      ": new prompts are refused.";
    this.budgetNote.hidden = false;
  }

  turnStarts() {
    if (this.running) return;
    this.running = true;
    this.update();
  }

  update() {
    if (this.readOnly) {
      // The form is hidden (app.css); disabled too, so no key or script sends from it.
      this.sendButton.disabled = this.textarea.disabled = this.interruptButton.disabled = true;
      this.form.dataset.busy = "1";
      return;
    }
    const turn = this.running || this.activityBusy;
    const busy = turn || this.sending;
    this.sendButton.disabled = busy || !this.online;
    this.textarea.disabled = busy;
    this.interruptButton.disabled = !turn || !this.online;
    this.form.dataset.busy = busy ? "1" : "0";
  }

  async sendPrompt() {
    const text = this.textarea.value.trim();
    if (this.readOnly || !text || this.running || this.activityBusy || this.sending) return;
    this.sending = true;
    this.update();
    // Shown first: the turn's events may come in before the POST's answer does. claude's replay
    // of it then confirms this bubble instead of adding a second one.
    const mine = this.bubble("user pending", text);
    const entry = { text, li: mine };
    const results = this.results;
    this.sent.push(entry);
    try {
      await post_stream(sessionPath(this.id, "/prompt"), { prompt: text });
      this.textarea.value = "";
      // Running from now until the events bring its result, unless they already did: a short
      // turn can end on the event stream before this answer arrives.
      if (this.results === results) this.turnStarts();
    } catch (e) {
      // Unless claude already echoed it (the turn ran; only the answer was lost on the way).
      if (this.sent.includes(entry)) {
        this.sent = this.sent.filter((x) => x !== entry);
        mine.remove();
      }
      if (e.code === "budget_exceeded") {
        // In words beside the prompt: what it cost against what it was given, not the answer's JSON.
        const b = e.body || {};
        const usd = (v) => (typeof v === "number" ? "$" + (v < 0.01 ? v.toPrecision(2) : v.toFixed(2)) : "");
        this.budgetNote.textContent = "Not sent: this session is over its budget" +
          (usd(b.costUsd) && usd(b.budgetUsd) ? " (spent " + usd(b.costUsd) + " of " + usd(b.budgetUsd) + ")" : "") +
          ". Start a new session to go on.";
        this.budgetNote.dataset.refused = "1";
        this.budgetNote.hidden = false;
      } else {
        // The refusal above is said beside the prompt already: not a second time, raw, up top.
        this.onStatus("prompt: " + e.message, false);
      }
    } finally {
      this.sending = false;
      this.update();
    }
  }

  async interrupt() {
    if (this.readOnly) return;
    try {
      await api("POST", sessionPath(this.id, "/interrupt"));
      this.onStatus("interrupt sent", true);
    } catch (e) {
      this.onStatus("interrupt: " + e.message, false);
    }
  }

  // ---- rendering ---------------------------------------------------------------------------

  item(cls) {
    const li = document.createElement("li");
    li.className = "msg " + cls;
    const nearEnd = this.list.scrollHeight - this.list.scrollTop - this.list.clientHeight < 80;
    this.list.appendChild(li);
    if (nearEnd) queueMicrotask(() => (this.list.scrollTop = this.list.scrollHeight));
    return li;
  }

  bubble(who, text) {
    const li = this.item(who);
    li.textContent = text;
    return li;
  }

  event(name, raw, id) {
    let d;
    try {
      d = JSON.parse(raw);
    } catch {
      d = null;
    }
    if (!d) return;
    switch (name) {
      case "system":
        // claude says init at the start of every turn: noted once, and again when the model changes.
        // Another agent's init (the common shape, API.md) names it in "agent".
        if (d.subtype === "init") {
          this.turnStarts();
          if (d.model !== this.model) {
            this.item("note").textContent = (d.agent || "claude") + (d.model ? " (" + d.model + ")" : "");
          }
          this.model = d.model;
        }
        break;
      case "assistant":
        this.assistant(d);
        break;
      case "user":
        this.user(d);
        break;
      case "stream_event":
        this.partial(d);
        break;
      case EV.RESULT:
        this.result(d);
        break;
      case EV.PERMISSION:
        this.permission(d);
        break;
      case EV.PERMISSION_RESOLVED:
        this.resolved(d);
        break;
      case EV.EXIT:
        this.item("note").textContent = "agent host exited" + (d.status !== undefined ? " (status " + d.status + ")" : "");
        this.running = false;
        this.update();
        break;
      case EV.ERROR:
        this.item("error").textContent = (d.error || "error") + (d.code ? " (" + d.code + ")" : "");
        break;
      default:
        break;
    }
    if (id) {
      this.lastId = id;
      this.host.dataset.lastEventId = id;
    }
  }

  assistant(d) {
    const content = d.message && Array.isArray(d.message.content) ? d.message.content : [];
    if (this.streaming) {
      this.streaming.remove();
      this.streaming = null;
    }
    this.turnStarts();
    for (const c of content) {
      if (c.type === "text" && c.text) this.item("assistant md").append(renderMarkdown(c.text));
      else if (c.type === "tool_use") this.toolUse(c);
    }
  }

  toolUse(c) {
    const li = this.item("tool");
    const det = document.createElement("details");
    const sum = document.createElement("summary");
    const name = el("span", "tool-name", c.name || "tool");
    const shown = toolView(c.name, c.input);
    // Another agent's tool is named by the call's title, often what the summary says again.
    sum.append(name, shown.summary && shown.summary !== c.name ? " " + shown.summary : "");
    det.append(sum, shown.body);
    li.appendChild(det);
    if (c.id) this.tools.set(c.id, det);
  }

  user(d) {
    const m = d.message || {};
    if (d.isReplay) {
      this.prompt(m.content);
      return;
    }
    if (typeof m.content === "string") {
      this.bubble("user", m.content);
      return;
    }
    for (const c of Array.isArray(m.content) ? m.content : []) {
      if (c.type === "tool_result") this.toolResult(c);
      else if (c.type === "text" && c.text) this.item("note").textContent = c.text;
    }
  }

  /**
   * claude's replay of a prompt (its content as the host sent it: a string, or text blocks): the
   * bubble this page showed when it sent that text, or a new one (a reload, another client's
   * prompt, the session's bootstrap prompt). A replayed note of claude's own (set_model's
   * <local-command-stdout>) is a note.
   */
  prompt(content) {
    const text = typeof content === "string" ? content
      : Array.isArray(content) ? content.filter((c) => c && c.type === "text").map((c) => c.text || "").join("\n") : "";
    if (!text) return;
    if (/^<local-command-std(out|err)>/.test(text)) {
      this.item("note").textContent = text.replace(/<\/?local-command-std(out|err)>/g, "");
      return;
    }
    const i = this.sent.findIndex((x) => x.text === text);
    if (i >= 0) {
      const [mine] = this.sent.splice(i, 1);
      mine.li.classList.remove("pending");
      return;
    }
    this.bubble("user", text);
  }

  toolResult(c) {
    let text = typeof c.content === "string" ? c.content
      : Array.isArray(c.content) ? c.content.map((x) => x.text || "").join("\n") : JSON.stringify(c.content);
    if (text.length > TEXT_MAX) text = text.slice(0, TEXT_MAX) + "\n… (cut)";
    const det = this.tools.get(c.tool_use_id);
    const pre = document.createElement("pre");
    pre.className = "tool-result" + (c.is_error ? " bad" : "");
    pre.textContent = text || "(no output)";
    if (det) {
      det.appendChild(pre);
      det.querySelector("summary").dataset.result = c.is_error ? "error" : "done";
      det.parentElement.classList.add(c.is_error ? "failed" : "done");
    } else {
      this.item("tool").appendChild(pre);
    }
  }

  partial(d) {
    const e = d.event || {};
    if (e.type === "content_block_delta" && e.delta && e.delta.type === "text_delta") {
      this.turnStarts();
      if (!this.streaming) this.streaming = this.item("assistant streaming");
      this.streaming.textContent += e.delta.text || "";
    }
  }

  result(d) {
    if (this.streaming) {
      this.streaming.remove();
      this.streaming = null;
    }
    const li = this.item("result" + (d.is_error ? " bad" : ""));
    const parts = [d.is_error ? "turn failed (" + (d.subtype || "error") + ")" : "turn done"];
    if (typeof d.num_turns === "number") parts.push(d.num_turns + " turn" + (d.num_turns === 1 ? "" : "s"));
    if (typeof d.total_cost_usd === "number") parts.push("$" + d.total_cost_usd.toFixed(4));
    if (typeof d.duration_ms === "number") parts.push((d.duration_ms / 1000).toFixed(1) + " s");
    li.textContent = parts.join(" · ");
    this.results++;
    this.running = false;
    this.update();
  }

  permission(d) {
    if (!d.requestId || this.cards.has(d.requestId)) return; // replayed again after a reconnect
    this.turnStarts();
    const li = this.item("permission");
    li.dataset.requestId = d.requestId;
    const h = document.createElement("div");
    h.className = "perm-title";
    h.textContent = "Allow " + (d.toolName || "this tool") + "?";
    // What the tool would do (the command, the diff), with claude's description of it.
    const desc = document.createElement("div");
    desc.className = "perm-what";
    // Another agent's description is the call's title, the tool's name here already.
    if (d.description && d.description !== d.toolName) desc.append(el("div", "perm-desc", d.description));
    if (d.input && typeof d.input === "object") desc.append(toolView(d.toolName, d.input).body);
    const actions = document.createElement("div");
    actions.className = "perm-actions";
    const allow = button("Allow", "allow primary");
    const allowSession = button("Allow for this session", "allow-session");
    const reason = document.createElement("input");
    reason.type = "text";
    reason.placeholder = "reason (optional)";
    reason.maxLength = 1000;
    reason.setAttribute("aria-label", "reason for denying");
    const deny = button("Deny", "deny danger");
    const suggestions = Array.isArray(d.suggestions) ? d.suggestions.slice(0, 16) : [];
    if (!suggestions.length) allowSession.hidden = true;
    const outcome = document.createElement("div");
    outcome.className = "perm-outcome";
    outcome.setAttribute("role", "status");
    actions.append(allow, allowSession, reason, deny);
    if (this.readOnly) {
      // Nothing to answer with: the card says who may.
      actions.replaceChildren(el("span", "muted perm-readonly", "read-only: an admin answers this"));
    }
    li.append(h, desc, actions, outcome);
    const answer = async (body) => {
      li.dataset.sending = "1";
      this.cardControls(li);
      try {
        await api("POST", sessionPath(this.id, "/permissions/" + encodeURIComponent(d.requestId)), body);
        this.settle(d.requestId, body.behavior, "you");
      } catch (e) {
        if (e.code === "already_answered") this.settle(d.requestId, null, null, e.message);
        else outcome.textContent = e.message;
      } finally {
        li.dataset.sending = "0";
        this.cardControls(li);
      }
    };
    allow.addEventListener("click", () => answer({ behavior: "allow" }));
    allowSession.addEventListener("click", () => answer({ behavior: "allow", updatedPermissions: suggestions }));
    deny.addEventListener("click", () => {
      const body = { behavior: "deny", message: reason.value.trim() || "denied in the web UI" };
      answer(body);
    });
    this.cards.set(d.requestId, li);
    if (!this.readOnly) this.cardControls(li);
  }

  resolved(d) {
    this.settle(d.requestId, d.behavior, d.by, d.message);
  }

  /** A card answered (here, elsewhere, by a timeout or withdrawn): no more buttons. */
  settle(requestId, behavior, by, message) {
    const li = this.cards.get(requestId);
    if (!li) return;
    if (li.dataset.resolved && !behavior) return;
    li.dataset.resolved = behavior || li.dataset.resolved || "answered";
    li.classList.add("resolved");
    li.classList.remove("offline");
    for (const b of li.querySelectorAll("button, input")) b.disabled = true;
    const out = li.querySelector(".perm-outcome");
    let text = behavior ? behavior + (by ? " (by " + by + ")" : "") : "answered elsewhere";
    if (message) text += ": " + message;
    out.textContent = text;
  }
}

function el(tag, cls, text) {
  const e = document.createElement(tag);
  e.className = cls;
  e.textContent = text;
  return e;
}

function button(text, cls) {
  const b = document.createElement("button");
  b.type = "button";
  b.textContent = text;
  b.className = cls;
  return b;
}
