// The terminal view: xterm.js on /sessions/<id>/terminal (binary frames of the pane's bytes;
// our frames are keystrokes, "\x01<cols>;<rows>" resizes). It follows the element's size, and
// after a drop (network, a bridge restart) reconnects by itself with backoff, saying so on screen.
// Read-only (a viewer's): it shows the pane and sends nothing; the bridge would drop a viewer's
// keystrokes and resizes anyway.
import { Terminal } from "../vendor/xterm.esm.js";
import { FitAddon } from "../vendor/addon-fit.esm.js";
import { WebglAddon } from "../vendor/addon-webgl.esm.js";
import { wsUrl, sessionPath, probeAccess } from "./api.js";
import { adoptStyles } from "./xterm-styles.js";

const BACKOFF_MIN_MS = 500;
const BACKOFF_MAX_MS = 15000;
const RESIZE = "\x01";
const FONT_KEY = "agentd.fontSize"; // localStorage: the font size the user chose, per device
const FONT_DEFAULT = 14;
const FONT_MIN = 8;
const FONT_MAX = 28;

/** The font size this device's user chose last (px), or the default. */
function savedFontSize() {
  const n = Number(localStorage.getItem(FONT_KEY));
  return Number.isInteger(n) && n >= FONT_MIN && n <= FONT_MAX ? n : FONT_DEFAULT;
}
const encoder = new TextEncoder();

/** Close reasons after which reconnecting cannot help (API.md: Terminal). */
function isFinal(ev) {
  return ev.code === 1000 && /^(agent_exited|session_lost|session ended)/.test(ev.reason || "");
}

export class TerminalView {
  /**
   * host: the element to fill; status: an element for "connecting…"/"reconnecting in 2 s";
   * id: the session; readOnly: show only, send no keystroke or size.
   */
  constructor(host, status, id, readOnly = false) {
    this.host = host;
    this.readOnly = readOnly;
    this.statusEl = status;
    this.id = id;
    this.ws = null;
    this.closed = false;
    this.backoff = BACKOFF_MIN_MS;
    this.timer = 0;
    this.tick = 0;
    this.ctrl = false; // the key bar's sticky Ctrl
    this.onCtrlChange = null;
    this.unadopt = adoptStyles(host);
    this.term = new Terminal({
      cursorBlink: !readOnly,
      disableStdin: readOnly,
      fontFamily: "ui-monospace, 'DejaVu Sans Mono', Menlo, Consolas, monospace",
      fontSize: savedFontSize(),
      scrollback: 5000,
      theme: { background: "#111418", foreground: "#e6e6e6" },
    });
    this.fit = new FitAddon();
    this.term.loadAddon(this.fit);
    this.term.open(host);
    this.renderer = "dom";
    try {
      // localStorage "agentd.renderer" = "dom" keeps xterm's DOM renderer (slow GPUs, tests).
      if (localStorage.getItem("agentd.renderer") === "dom") throw new Error("DOM renderer chosen");
      const webgl = new WebglAddon();
      webgl.onContextLoss(() => {
        webgl.dispose(); // back to the DOM renderer
        this.renderer = "dom";
      });
      this.term.loadAddon(webgl);
      this.renderer = "webgl";
    } catch {
      this.renderer = "dom"; // no WebGL2 here: xterm's DOM renderer draws instead
    }
    host.dataset.renderer = this.renderer;
    host.dataset.readOnly = readOnly ? "1" : "0";
    host.xterm = this.term; // for the browser tests, which read the screen buffer
    this.term.onData((d) => this.input(d));
    this.term.onBinary((d) => this.send(Uint8Array.from(d, (c) => c.charCodeAt(0) & 0xff)));
    this.term.onResize(({ cols, rows }) => this.send(RESIZE + cols + ";" + rows));
    // Ctrl+Shift+C copies the selection (Ctrl+C is the pane's); pasting is the browser's own.
    this.term.attachCustomKeyEventHandler((ev) => {
      if (ev.type === "keydown" && ev.ctrlKey && ev.shiftKey && ev.code === "KeyC") {
        const sel = this.term.getSelection();
        if (sel && navigator.clipboard) navigator.clipboard.writeText(sel).catch(() => {});
        return false;
      }
      return true;
    });
    this.resizeObserver = new ResizeObserver(() => this.refit());
    this.resizeObserver.observe(host);
    this.refit();
    this.connect();
  }

  refit() {
    if (this.closed || !this.host.clientWidth || !this.host.clientHeight) return;
    try {
      this.fit.fit();
    } catch {
      /* not laid out yet */
    }
  }

  say(text, cls) {
    this.statusEl.textContent = text;
    this.statusEl.className = "term-status " + (cls || "");
    this.statusEl.hidden = !text;
  }

  connect() {
    if (this.closed) return;
    clearInterval(this.tick);
    const q = "?cols=" + this.term.cols + "&rows=" + this.term.rows;
    const ws = new WebSocket(wsUrl(sessionPath(this.id, "/terminal") + q));
    ws.binaryType = "arraybuffer";
    this.ws = ws;
    let opened = false;
    this.say("connecting…", "busy");
    ws.addEventListener("open", () => {
      opened = true;
      this.backoff = BACKOFF_MIN_MS;
      this.say("");
      this.host.dataset.connected = "1";
      // The pane keeps its old size until a client says otherwise.
      this.send(RESIZE + this.term.cols + ";" + this.term.rows);
    });
    ws.addEventListener("message", (ev) => {
      if (typeof ev.data === "string") this.term.write(ev.data);
      else this.term.write(new Uint8Array(ev.data));
    });
    ws.addEventListener("close", (ev) => {
      probeAccess();
      if (this.ws !== ws) return;
      this.host.dataset.connected = "0";
      this.ws = null;
      if (this.closed) return;
      if (isFinal(ev)) {
        this.say("the terminal ended: " + ev.reason, "bad");
        return;
      }
      this.retryLater(opened ? "connection lost" : "cannot connect");
    });
  }

  retryLater(why) {
    const due = Date.now() + this.backoff;
    const show = () => {
      const s = Math.max(0, Math.ceil((due - Date.now()) / 1000));
      this.say(why + " — reconnecting in " + s + " s…", "busy");
    };
    show();
    clearInterval(this.tick);
    this.tick = setInterval(show, 1000);
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.connect(), this.backoff);
    this.backoff = Math.min(this.backoff * 2, BACKOFF_MAX_MS);
  }

  /** Keystrokes from xterm or the key bar; the sticky Ctrl turns the next letter into a control. */
  input(d) {
    if (this.ctrl && d.length === 1) {
      const c = d.toUpperCase().charCodeAt(0);
      if (c >= 0x40 && c <= 0x5f) d = String.fromCharCode(c - 0x40);
      this.setCtrl(false);
    }
    this.send(d);
  }

  /** Makes the font step px larger (or smaller), within bounds, remembered for the next views;
   * the pane follows with a resize. Answers the new size. */
  zoom(step) {
    const size = Math.min(FONT_MAX, Math.max(FONT_MIN, this.term.options.fontSize + step));
    this.term.options.fontSize = size;
    localStorage.setItem(FONT_KEY, String(size));
    this.refit();
    return size;
  }

  /** The clipboard's text typed into the pane (a phone has no Ctrl+V). */
  async paste() {
    if (this.readOnly || !navigator.clipboard || !navigator.clipboard.readText) return;
    const text = await navigator.clipboard.readText();
    // As xterm's own paste: bracketed when the program asked for it.
    if (text) this.term.paste(text);
  }

  setCtrl(on) {
    this.ctrl = on;
    if (this.onCtrlChange) this.onCtrlChange(on);
  }

  send(data) {
    if (this.readOnly || !this.ws || this.ws.readyState !== WebSocket.OPEN) return;
    this.ws.send(typeof data === "string" ? encoder.encode(data) : data);
  }

  focus() {
    this.term.focus();
  }

  dispose() {
    this.closed = true;
    clearTimeout(this.timer);
    clearInterval(this.tick);
    this.resizeObserver.disconnect();
    if (this.ws) this.ws.close(1000, "view closed");
    this.ws = null;
    this.term.dispose();
    this.unadopt();
    delete this.host.xterm;
  }
}

/** The key bar's keys: what each sends (Ctrl is the sticky modifier, handled apart). */
export const KEYS = {
  Esc: "\x1b",
  Tab: "\t",
  "⇧Tab": "\x1b[Z", // claude's mode toggle (back-tab)
  PgUp: "\x1b[5~",
  PgDn: "\x1b[6~",
  "←": "\x1b[D",
  "↑": "\x1b[A",
  "↓": "\x1b[B",
  "→": "\x1b[C",
  "^C": "\x03",
  Enter: "\r",
};
