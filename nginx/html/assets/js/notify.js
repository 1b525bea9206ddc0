// Tells the user that an agent waits: the tab title says how many ("(2) waiting — agent-daemon")
// and, when the browser allows it, a notification names the session that started waiting.
const BASE_TITLE = "agent-daemon";

export class Notifier {
  constructor() {
    this.waiting = new Set(); // ids whose activity is waiting
    this.primed = false; // the first list sets the baseline: no notification for old waits
  }

  /** Asks for permission (call it from a click: browsers allow the prompt only then). */
  async enable() {
    if (!("Notification" in window)) return "unsupported";
    if (Notification.permission === "default") return Notification.requestPermission();
    return Notification.permission;
  }

  /** The current sessions (a Map id -> session); notifies for every new wait. */
  update(sessions, onOpen) {
    const now = new Set();
    for (const s of sessions.values()) if (s.activity === "waiting") now.add(s.id);
    if (this.primed) {
      for (const id of now) {
        if (this.waiting.has(id)) continue;
        const s = sessions.get(id);
        const p = s.pending && s.pending[0];
        this.show(id, p ? p.toolName + ": " + (p.description || "") : "needs you", onOpen);
      }
    }
    this.primed = true;
    this.waiting = now;
    document.title = now.size ? "(" + now.size + ") waiting — " + BASE_TITLE : BASE_TITLE;
  }

  show(id, body, onOpen) {
    if (!("Notification" in window) || Notification.permission !== "granted") return;
    try {
      const n = new Notification(id + " is waiting", { body, tag: "agentd-" + id });
      n.addEventListener("click", () => {
        window.focus();
        onOpen(id);
        n.close();
      });
    } catch {
      /* some browsers only allow notifications from a service worker */
    }
  }
}
