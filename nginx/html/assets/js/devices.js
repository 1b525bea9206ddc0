// "Notifications": this identity's devices for Web Push (docs/API.md, "Push"). The button
// subscribes this browser (pushManager.subscribe with the server's VAPID key, through the
// service worker that shows the messages: sw.js) and the panel lists the identity's devices,
// each revocable. Everything goes through api(): the same door and Origin checks as the rest.
import { api } from "./api.js";

const $ = (id) => document.getElementById(id);

/** Whether this browser can receive Web Push at all (a service worker needs https or localhost). */
export function pushSupported() {
  return "serviceWorker" in navigator && "PushManager" in window && window.isSecureContext;
}

/** The server's base64url key as the bytes applicationServerKey wants. */
function keyBytes(b64) {
  const s = atob(b64.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((b64.length + 3) % 4));
  return Uint8Array.from(s, (c) => c.charCodeAt(0));
}

/** A label for this device the list shows ("Chrome on Android"): no more than the server takes. */
function deviceName() {
  const ua = navigator.userAgent;
  const browser = /Firefox\//.test(ua) ? "Firefox" : /Edg\//.test(ua) ? "Edge" : /Chrome\//.test(ua) ? "Chrome" : /Safari\//.test(ua) ? "Safari" : "Browser";
  const os = /Android/.test(ua) ? "Android" : /iPhone|iPad/.test(ua) ? "iOS" : /Mac OS X/.test(ua) ? "macOS" : /Windows/.test(ua) ? "Windows" : /Linux/.test(ua) ? "Linux" : "";
  return (os ? browser + " on " + os : browser).slice(0, 64);
}

async function registration() {
  return navigator.serviceWorker.ready;
}

/** Subscribes this browser and tells the server. Throws with a sentence when it cannot. */
export async function subscribe() {
  if (!pushSupported()) throw new Error("this browser cannot receive push messages here (https or localhost only)");
  const perm = await Notification.requestPermission();
  if (perm !== "granted") throw new Error("notifications are blocked for this site");
  const { publicKey } = await api("GET", "/push/key");
  const reg = await registration();
  let sub = await reg.pushManager.getSubscription();
  if (sub) {
    // A subscription made with another key cannot be used: make a new one.
    const opts = sub.options && sub.options.applicationServerKey;
    const same = opts && btoa(String.fromCharCode(...new Uint8Array(opts))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "") === publicKey;
    if (!same) {
      await sub.unsubscribe();
      sub = null;
    }
  }
  if (!sub) sub = await reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: keyBytes(publicKey) });
  const json = sub.toJSON();
  return api("POST", "/push/subscriptions", { endpoint: json.endpoint, keys: json.keys, expirationTime: json.expirationTime ?? null, name: deviceName() });
}

/** This browser's subscription's endpoint, or "". */
async function ownEndpoint() {
  if (!pushSupported()) return "";
  try {
    const reg = await registration();
    const sub = await reg.pushManager.getSubscription();
    return sub ? sub.endpoint : "";
  } catch {
    return "";
  }
}

function say(text) {
  $("devices-status").textContent = text;
}

/** Fills list with a line per item, its label and a Revoke button that runs revoke(item), or
 * with the line empty when there is none. */
function revocableList(list, items, empty, labelOf, revoke) {
  list.replaceChildren();
  if (!items.length) {
    const li = document.createElement("li");
    li.className = "muted";
    li.textContent = empty;
    list.append(li);
  }
  for (const item of items) {
    const li = document.createElement("li");
    const label = document.createElement("span");
    label.textContent = labelOf(item);
    const button = document.createElement("button");
    button.type = "button";
    button.className = "small danger";
    button.textContent = "Revoke";
    button.addEventListener("click", () => {
      button.disabled = true;
      revoke(item);
    });
    li.append(label, " ", button);
    list.append(li);
  }
}

/** Fills the panel: this browser's state and the identity's devices with a Revoke each. */
export async function renderDevices() {
  const list = $("devices-list");
  let subs = [];
  try {
    subs = (await api("GET", "/push/subscriptions")).subscriptions;
  } catch (e) {
    say("Cannot list the devices: " + e.message);
    return;
  }
  revocableList(list, subs, "No device receives notifications yet.",
    (s) => (s.name || "device") + " · " + s.service.replace(/^https?:\/\//, "") + " · since " + s.createdAt.slice(0, 10),
    async (s) => {
      try {
        await api("DELETE", "/push/subscriptions/" + encodeURIComponent(s.id));
        say("Revoked " + (s.name || "the device") + ".");
      } catch (e) {
        say("Cannot revoke: " + e.message);
      }
      renderDevices();
    });
  const own = await ownEndpoint();
  $("devices-subscribe").textContent = own ? "Subscribe again" : "Notify this device";
  $("devices-subscribe").disabled = !pushSupported();
  if (!pushSupported()) say("This browser cannot receive push messages here: open the page over https (tailscale serve) or on localhost.");
}

/** Wires the header's "Notifications" button to the panel. */
export function setupDevices() {
  const panel = $("devices");
  $("notify").hidden = false;
  $("notify").addEventListener("click", () => {
    panel.hidden = !panel.hidden;
    if (!panel.hidden) renderDevices();
  });
  $("devices-close").addEventListener("click", () => (panel.hidden = true));
  $("devices-subscribe").addEventListener("click", async () => {
    $("devices-subscribe").disabled = true;
    try {
      const s = await subscribe();
      say("This device is subscribed (" + s.name + ").");
    } catch (e) {
      say("Cannot subscribe: " + e.message);
    }
    renderDevices();
  });
}

/** Draws a QR code ({size, rows: ["0101…"]}, from POST /pairings) on the canvas, with the quiet
 * zone of 4 modules a scanner needs. */
function drawQr(canvas, qr) {
  const n = qr.size + 8;
  const scale = Math.max(1, Math.floor(canvas.width / n));
  const ctx = canvas.getContext("2d");
  ctx.fillStyle = "#fff";
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  ctx.fillStyle = "#000";
  qr.rows.forEach((row, y) => {
    for (let x = 0; x < row.length; x++) if (row[x] === "1") ctx.fillRect((x + 4) * scale, (y + 4) * scale, scale, scale);
  });
}

function pairSay(text) {
  $("pair-status").textContent = text;
}

/** The paired devices' tokens, each with a Revoke. */
export async function renderPaired() {
  const list = $("pair-list");
  let devices = [];
  try {
    devices = (await api("GET", "/devices")).devices;
  } catch (e) {
    pairSay("Cannot list the paired devices: " + e.message);
    return;
  }
  revocableList(list, devices, "No phone is paired.",
    (d) => d.name + " · since " + d.createdAt.slice(0, 10) + (d.lastUsed ? " · used " + d.lastUsed.slice(0, 16).replace("T", " ") : ""),
    async (d) => {
      try {
        await api("DELETE", "/devices/" + encodeURIComponent(d.name));
        pairSay(d.name + " is revoked: it opens nothing any more.");
      } catch (e) {
        pairSay("Cannot revoke: " + e.message);
      }
      renderPaired();
    });
}

/** Wires "Open on phone": a one-time link as a QR code, and the paired devices. */
export function setupPairing() {
  const panel = $("pair");
  let timer = 0;
  $("open-phone").addEventListener("click", () => {
    panel.hidden = !panel.hidden;
    if (!panel.hidden) renderPaired();
  });
  $("pair-close").addEventListener("click", () => (panel.hidden = true));
  $("pair-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    clearInterval(timer);
    pairSay("");
    try {
      const p = await api("POST", "/pairings", { name: $("pair-name").value });
      const canvas = $("pair-qr");
      drawQr(canvas, p.qr);
      canvas.hidden = false;
      const until = Date.parse(p.expiresAt);
      const tick = () => {
        const left = Math.round((until - Date.now()) / 1000);
        if (left <= 0) {
          clearInterval(timer);
          canvas.hidden = true;
          $("pair-expiry").textContent = "The link expired: make another.";
          return;
        }
        // Its own line: a revoke's message below is not overwritten every second.
        $("pair-expiry").textContent = "Valid for " + Math.floor(left / 60) + ":" + String(left % 60).padStart(2, "0") + ", once. It makes the token " + p.device + p.name + ".";
      };
      tick();
      timer = setInterval(tick, 1000);
    } catch (e) {
      pairSay("Cannot make a link: " + e.message);
    }
  });
}
