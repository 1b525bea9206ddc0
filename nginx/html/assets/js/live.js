// The live session list: GET /events (SSE) gives a snapshot, then every change of every session
// and the attention events (permission, permission_resolved, result). No polling: EventSource
// reconnects by itself with Last-Event-ID, and the bridge answers with the missed events or a
// new snapshot. Listeners get "change" (the map changed), "status" (connected or not) and
// "attention" (detail: {event, data}).
import { api, eventSource } from "./api.js";

const RETRY_MIN_MS = 1000; // our own retry when EventSource gave up (a non-2xx answer)
const RETRY_MAX_MS = 30000;

export class Live extends EventTarget {
  constructor() {
    super();
    this.sessions = new Map();
    this.connected = false;
    this.source = null;
    this.retry = RETRY_MIN_MS;
    this.timer = 0;
    this.snapshotSeen = false;
    this.loaded = false; // a whole list arrived (GET /sessions or a snapshot)
  }

  start() {
    // A first answer for a page whose /events is slow or missing; the snapshot replaces it.
    api("GET", "/sessions").then((list) => {
      if (this.snapshotSeen || !Array.isArray(list)) return;
      this.replace(list);
    }, () => {});
    this.open();
  }

  open() {
    const src = eventSource("/events");
    this.source = src;
    src.addEventListener("open", () => {
      this.retry = RETRY_MIN_MS;
      this.setConnected(true);
    });
    src.addEventListener("error", () => {
      this.setConnected(false);
      if (src.readyState === EventSource.CLOSED) {
        // EventSource stops for good on a non-2xx answer (a bridge being restarted answers 502).
        clearTimeout(this.timer);
        this.timer = setTimeout(() => this.open(), this.retry);
        this.retry = Math.min(this.retry * 2, RETRY_MAX_MS);
      }
    });
    src.addEventListener("snapshot", (ev) => {
      const d = parse(ev.data);
      if (!d || !Array.isArray(d.sessions)) return;
      this.snapshotSeen = true;
      this.replace(d.sessions);
    });
    src.addEventListener("session", (ev) => {
      const d = parse(ev.data);
      if (!d || !d.session || !d.session.id) return;
      if (d.change === "deleted") this.sessions.delete(d.session.id);
      else this.sessions.set(d.session.id, d.session);
      this.changed();
    });
    for (const name of ["permission", "permission_resolved", "result"]) {
      src.addEventListener(name, (ev) => {
        const d = parse(ev.data);
        if (d) this.dispatchEvent(new CustomEvent("attention", { detail: { event: name, data: d } }));
      });
    }
  }

  replace(list) {
    this.loaded = true;
    this.sessions = new Map(list.filter((s) => s && s.id).map((s) => [s.id, s]));
    this.changed();
  }

  /** What a REST answer told us (POST /sessions, a mode switch), before /events says it. */
  upsert(session) {
    if (!session || !session.id) return;
    this.sessions.set(session.id, session);
    this.changed();
  }

  remove(id) {
    if (this.sessions.delete(id)) this.changed();
  }

  changed() {
    this.dispatchEvent(new Event("change"));
  }

  setConnected(on) {
    if (this.connected === on) return;
    this.connected = on;
    this.dispatchEvent(new Event("status"));
  }
}

function parse(text) {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** Sessions that need a person first, then working, idle, exited; newest activity first. */
const RANK = { waiting: 0, working: 1, idle: 2, exited: 3 };
export function sortSessions(list) {
  const rank = (s) => (s.state === "failed" ? 1.5 : RANK[s.activity] ?? 2.5);
  const at = (s) => s.activityAt || s.lastActivity || s.createdAt || "";
  return list.sort((a, b) => rank(a) - rank(b) || (at(b) > at(a) ? 1 : at(b) < at(a) ? -1 : 0) ||
    a.id.localeCompare(b.id));
}
