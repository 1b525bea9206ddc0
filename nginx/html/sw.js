// The web app's service worker: the app shell (the page, its styles and modules, the icons) is
// kept on the device so the page opens without the server and says it is offline. Only those
// files are ever stored: no API answer (sessions, events, whoami) is written to the device, and
// everything but the shell goes to the network untouched (the streams, WebSockets, changes).
"use strict";

// A new name whenever the list below changes: the old cache is dropped on activate.
const CACHE = "agentd-shell-v2";
const SHELL = [
  "/index.html",
  "/assets/app.css",
  "/assets/js/api.js",
  "/assets/js/app.js",
  "/assets/js/changes.js",
  "/assets/js/conversation.js",
  "/assets/js/events.js",
  "/assets/js/devices.js",
  "/assets/js/live.js",
  "/assets/js/markdown.js",
  "/assets/js/notify.js",
  "/assets/js/terminal.js",
  "/assets/js/toolcard.js",
  "/assets/js/xterm-styles.js",
  "/assets/vendor/xterm.css",
  "/assets/vendor/xterm.esm.js",
  "/assets/vendor/addon-fit.esm.js",
  "/assets/vendor/addon-webgl.esm.js",
  "/assets/vendor/marked.esm.js",
  "/assets/vendor/purify.esm.js",
  "/manifest.webmanifest",
  "/assets/icons/icon-192.png",
  "/assets/icons/favicon-32.png",
];

self.addEventListener("install", (event) => {
  // With the cookie (same origin): the page registers this worker only once signed in.
  event.waitUntil(
    caches
      .open(CACHE)
      .then((c) => c.addAll(SHELL))
      .then(() => self.skipWaiting()),
  );
});

self.addEventListener("activate", (event) => {
  event.waitUntil(
    caches
      .keys()
      .then((keys) => Promise.all(keys.filter((k) => k !== CACHE).map((k) => caches.delete(k))))
      .then(() => self.clients.claim()),
  );
});

/** The shell's own files: the web UI's assets and the app's public files, never the API. */
function isShell(url) {
  return url.pathname.startsWith("/assets/") || url.pathname === "/manifest.webmanifest";
}

/** Network first (a deploy's new page is used at once), the stored copy when nothing answers. */
async function networkFirst(request, key) {
  const cache = await caches.open(CACHE);
  try {
    const r = await fetch(request);
    // Only a plain 200 of this origin refreshes the copy (never a redirect to /login, a 401).
    if (r.ok && r.type === "basic" && !r.redirected) await cache.put(key, r.clone());
    return r;
  } catch (e) {
    const stored = await cache.match(key);
    if (stored) return stored;
    throw e;
  }
}

self.addEventListener("fetch", (event) => {
  const req = event.request;
  const url = new URL(req.url);
  if (req.method !== "GET" || url.origin !== self.location.origin) return;
  if (req.mode === "navigate") {
    // The page's own URLs (/, /?token=, /login) go to the network as they are; only when it
    // cannot be reached does the stored page stand in for "/", and /login is never faked.
    if (url.pathname === "/login") return;
    event.respondWith(
      fetch(req).catch(async () => (await caches.match("/index.html")) || Response.error()),
    );
    return;
  }
  if (isShell(url)) event.respondWith(networkFirst(req, url.pathname));
});

// Web Push (docs/DESIGN.md, "Notifications"): a message is JSON {"session", "title", "body"}.
// One notification a session: its tag replaces the session's earlier one. Whatever arrives is
// shown as text only, cut to a size, and a click opens only a page of this origin.
const SESSION_RE = /^[A-Za-z0-9._-]{1,200}$/;
const TITLE_MAX = 120;
const BODY_MAX = 400;

self.addEventListener("push", (event) => {
  let m = {};
  try {
    m = event.data ? event.data.json() : {};
  } catch {
    m = {};
  }
  if (!m || typeof m !== "object") m = {};
  const session = typeof m.session === "string" && SESSION_RE.test(m.session) ? m.session : "";
  const title = typeof m.title === "string" && m.title ? m.title.slice(0, TITLE_MAX) : "agent-daemon";
  const body = typeof m.body === "string" ? m.body.slice(0, BODY_MAX) : "";
  event.waitUntil(
    self.registration.showNotification(title, {
      body,
      tag: session ? "session:" + session : "agentd",
      renotify: true,
      icon: "/assets/icons/icon-192.png",
      data: { url: session ? "/#/s/" + encodeURIComponent(session) : "/" },
    }),
  );
});

/* What a tap on a notification does: the app's open window shows its session (focused where the
 * browser lets it), or a new window opens on it. A function of its own so that the tests can run
 * it on a real notification: a NotificationEvent a script makes is untrusted and cannot
 * waitUntil. Only windows this worker controls: navigate() works on those alone. */
async function openFromNotification(notification) {
  notification.close();
  const url = new URL((notification.data && notification.data.url) || "/", self.location.origin);
  if (url.origin !== self.location.origin) return null;
  for (const w of await self.clients.matchAll({ type: "window" })) {
    if (new URL(w.url).origin !== self.location.origin) continue;
    // Focusing is a tap's privilege: without one (a test) the window is still navigated.
    await w.focus().catch(() => null);
    return w.navigate(url.href);
  }
  return self.clients.openWindow(url.href);
}

self.addEventListener("notificationclick", (event) => {
  event.waitUntil(openFromNotification(event.notification));
});
