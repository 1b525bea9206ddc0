// The live session list: GET /events (SSE) gives a snapshot, then every change of every session
// and the attention events (permission, permission_resolved, result). No polling: EventSource
// reconnects by itself with Last-Event-ID, and the bridge answers with the missed events or a
// new snapshot. Listeners get "change" (the map changed), "status" (connected or not) and
// "attention" (detail: {event, data}).
//
// Objects of one session come from three places that race: the list's first answer, the event
// stream and REST answers (POST /sessions, a mode switch). Each carries `rev` (API.md: the
// record's version, one higher with every write), and the higher wins: a POST's answer that
// arrives after /events told a newer state (a create that failed at once) does not bring the old
// one back.
import { api, eventSource } from "./api.js";
import { EV } from "./events.js";

const RETRY_MIN_MS = 1000; // our own retry when EventSource gave up (a non-2xx answer)
const RETRY_MAX_MS = 30000;

export class Live extends EventTarget {
  constructor() {
    super();
    this.sessions = new Map();
    this.connected = false;
    this.statusKnown = false; // connected or not was decided once
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
    src.addEventListener(EV.SNAPSHOT, (ev) => {
      const d = parse(ev.data);
      if (!d || !Array.isArray(d.sessions)) return;
      this.snapshotSeen = true;
      this.replace(d.sessions);
    });
    src.addEventListener(EV.SESSION, (ev) => {
      const d = parse(ev.data);
      if (!d || !d.session || !d.session.id) return;
      const id = d.session.id;
      if (d.change === "deleted") this.sessions.delete(id);
      // Events come in order; only a REST answer can have brought a newer object already.
      else if (!this.keep(id, d.session)) return;
      this.changed();
    });
    for (const name of [EV.PERMISSION, EV.PERMISSION_RESOLVED, EV.RESULT]) {
      src.addEventListener(name, (ev) => {
        const d = parse(ev.data);
        if (d) this.dispatchEvent(new CustomEvent("attention", { detail: { event: name, data: d } }));
      });
    }
  }

  /** A whole list (a snapshot, or the first GET /sessions) as it is: a session deleted and made
   * again meanwhile starts over at a lower rev. A change newer than a snapshot is an event that
   * follows it. */
  replace(list) {
    this.loaded = true;
    this.sessions = new Map(list.filter((s) => s && s.id).map((s) => [s.id, s]));
    this.changed();
  }

  /** Sets session (of id) unless the object held is newer. Answers whether it did. */
  keep(id, session) {
    const mine = this.sessions.get(id);
    if (mine && rev(mine) > rev(session)) return false;
    this.sessions.set(id, session);
    return true;
  }

  /** What a REST answer told us (POST /sessions, a mode switch): taken unless /events already
   * told a newer state. */
  upsert(session) {
    if (!session || !session.id) return;
    if (this.keep(session.id, session)) this.changed();
  }

  remove(id) {
    if (this.sessions.delete(id)) this.changed();
  }

  changed() {
    this.dispatchEvent(new Event("change"));
  }

  setConnected(on) {
    // The first answer is news even when it is "not connected" (the page starts offline).
    if (this.connected === on && this.statusKnown) return;
    this.statusKnown = true;
    this.connected = on;
    this.dispatchEvent(new Event("status"));
  }
}

/** The object's version (API.md: rev); -1 without one (an older server): then the last wins. */
function rev(s) {
  return typeof s.rev === "number" ? s.rev : -1;
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

/** What the session's agent cost, as the list shows it ("$0.42", "<$0.01"), or "" while
 * nothing is known (API.md: cost.usd is 0 until an agent reports one). */
export function costText(s) {
  const usd = s && s.cost && s.cost.usd;
  // Under a cent rounds to "$0.00", which would read as free.
  const spent = typeof usd !== "number" || !(usd > 0) ? "" : usd < 0.005 ? "<$0.01" : "$" + usd.toFixed(2);
  const budget = s && s.budgetUsd;
  if (typeof budget !== "number" || !(budget > 0)) return spent;
  // A budget under a cent keeps two significant digits: "$0.00" would read as none.
  return (spent || "$0") + " / $" + (budget < 0.01 ? budget.toPrecision(2) : budget.toFixed(2));
}
