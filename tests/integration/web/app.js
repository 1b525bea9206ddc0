// The installable web app in Debian's chromium (headless, puppeteer-core), against the stack
// test_web_app.sh started. PHASE=online: signs in, checks the manifest as chromium parses it (no
// errors, no installability errors, the icons), the favicon, and that the service worker is
// registered and controls the page after a reload; push messages delivered to the worker one at
// a time, each waited for until shown, leave one notification per session, and a tap on one
// shows its session in the open window. PHASE=offline (the
// stack stopped, the same profile): the page still opens from the worker's copy and says it is
// offline.
// Output: "ok - NAME" or "not ok - NAME<TAB>WHY" (test_web_app.sh counts them).
// Environment: BASE_URL, AGENTD_TEST_TOKEN, PROFILE (chromium's user data dir), PHASE, CHROMIUM.
"use strict";

const BASE = process.env.BASE_URL;
const TOKEN = process.env.AGENTD_TEST_TOKEN;
const { WAIT_MS, ok, check, until, finish, withBrowser, PHONE } = require("./tap");

/** The page's service worker, attached (DevTools keeps an attached worker running, so no push
 * meets it stopping or starting), with each notification its push handler shows counted once
 * shown. nextShown() waits for the next one (its title, or "error: ..." when showNotification
 * failed). Reading the notifications while one is being shown is a race in Chromium: its database
 * can hold one the display has not taken yet, which getNotifications() then drops as stale; so
 * the test reads them only when no push is in flight. */
async function pushWatch(page, cdp) {
  // A stopped worker has no target to attach to.
  await cdp.send("ServiceWorker.startWorker", { scopeURL: BASE + "/" });
  const target = await page.browser().waitForTarget((t) => t.type() === "service_worker" && t.url() === BASE + "/sw.js",
    { timeout: WAIT_MS });
  const worker = await target.worker();
  await worker.evaluate(() => {
    const proto = ServiceWorkerRegistration.prototype;
    const show = proto.showNotification;
    const done = [];
    const waiting = [];
    const settle = (what) => {
      done.push(what);
      while (waiting.length && done.length) waiting.shift()(done.shift());
    };
    proto.showNotification = function (title, options) {
      return show.call(this, title, options).then((v) => (settle(title), v), (e) => {
        settle("error: " + e.message);
        throw e;
      });
    };
    self.__nextShown = () => new Promise((resolve) => {
      if (done.length) resolve(done.shift());
      else waiting.push(resolve);
    });
  });
  let timer;
  worker.nextShown = () => Promise.race([
    worker.evaluate(() => self.__nextShown()).finally(() => clearTimeout(timer)),
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error("no notification shown within " + WAIT_MS + " ms of a push")), WAIT_MS);
    }),
  ]);
  return worker;
}

async function online(page) {
  let worker = null;
  await page.goto(BASE + "/?token=" + TOKEN, { waitUntil: "networkidle2" });
  const cdp = await page.target().createCDPSession();
  await check("chromium parses the manifest without errors", async () => {
    const m = await until(async () => {
      const r = await cdp.send("Page.getAppManifest");
      return r.url ? r : null;
    }, "the page's manifest");
    if (!m.url.endsWith("/manifest.webmanifest")) throw new Error("manifest url " + m.url);
    if (m.errors.length) throw new Error(JSON.stringify(m.errors));
    const data = JSON.parse(m.data);
    if (data.name !== "agent-daemon" || data.display !== "standalone") throw new Error(m.data);
    return true;
  });
  await check("the service worker is registered and controls the page after a reload", async () => {
    await until(() => page.evaluate(async () => {
      const r = await navigator.serviceWorker.getRegistration("/");
      return !!(r && r.active && r.active.state === "activated");
    }), "an active worker");
    await page.reload({ waitUntil: "networkidle2" });
    return until(() => page.evaluate(() => !!navigator.serviceWorker.controller), "a controlled page");
  });
  // The phone first (the viewport main() set), then the phone turned and a laptop.
  for (const vp of [null, { width: 844, height: 390, isMobile: true, hasTouch: true, deviceScaleFactor: 2 },
    { width: 1280, height: 800 }]) {
    if (vp) await page.setViewport(vp);
    const size = vp ? vp.width + "x" + vp.height : "390x844";
    await check("chromium finds the app installable at " + size + " (no installability errors)", async () => {
      const r = await until(async () => {
        const x = await cdp.send("Page.getInstallabilityErrors");
        return x.installabilityErrors.length === 0 ? x : null;
      }, "no installability errors");
      return !!r;
    });
  }
  await page.setViewport(PHONE);
  await check("the manifest's icons and the favicon are PNG images the page can load", async () => {
    const sizes = await page.evaluate(async () => {
      const out = [];
      for (const src of ["/assets/icons/icon-192.png", "/assets/icons/icon-512.png", "/assets/icons/maskable-512.png", "/favicon.ico"]) {
        const img = new Image();
        img.src = src;
        await img.decode();
        out.push(src + "=" + img.naturalWidth + "x" + img.naturalHeight);
      }
      return out.join(" ");
    });
    const want = "/assets/icons/icon-192.png=192x192 /assets/icons/icon-512.png=512x512 /assets/icons/maskable-512.png=512x512 /favicon.ico=32x32";
    if (sizes !== want) throw new Error(sizes);
    return true;
  });
  await check("a push message shows one notification per session, linked to the session (text only, cut to size)", async () => {
    await page.browserContext().overridePermissions(BASE, ["notifications"]);
    const regs = new Map();
    cdp.on("ServiceWorker.workerRegistrationUpdated", (e) => {
      for (const r of e.registrations) if (!r.isDeleted) regs.set(r.scopeURL, r.registrationId);
    });
    await cdp.send("ServiceWorker.enable");
    const id = await until(() => regs.get(BASE + "/"), "the worker's registration id");
    worker = await pushWatch(page, cdp);
    const push = (m) => cdp.send("ServiceWorker.deliverPushMessage", { origin: BASE, registrationId: id, data: JSON.stringify(m) });
    const sent = [
      { session: "widgets-7", title: "widgets-7 waits", body: "Bash: make test" },
      { session: "widgets-7", title: "widgets-7 failed", body: "exit 1" },
      { session: "../evil", title: "x".repeat(500), body: "<b>text</b>" },
    ];
    // One at a time, each waited for: shown in the order sent, as a phone would.
    const shown = [];
    for (const m of sent) {
      await push(m);
      shown.push(await worker.nextShown());
    }
    if (shown.join("|") !== ["widgets-7 waits", "widgets-7 failed", "x".repeat(120)].join("|"))
      throw new Error("shown: " + JSON.stringify(shown));
    const got = await page.evaluate(async () => {
      const r = await navigator.serviceWorker.getRegistration("/");
      return (await r.getNotifications()).map((n) => ({ title: n.title, body: n.body, tag: n.tag, url: n.data.url }));
    });
    got.sort((a, b) => a.tag.localeCompare(b.tag));
    const want = [
      { title: "x".repeat(120), body: "<b>text</b>", tag: "agentd", url: "/" },
      { title: "widgets-7 failed", body: "exit 1", tag: "session:widgets-7", url: "/#/s/widgets-7" },
    ];
    if (JSON.stringify(got) !== JSON.stringify(want)) throw new Error(JSON.stringify(got));
    return true;
  });
  // A tap: sw.js's own handler on the real notification the push left (a NotificationEvent a
  // script makes is untrusted and cannot waitUntil, so the check calls what the listener calls).
  await check("a tap on a session's notification shows that session in the app's window and closes it", async () => {
    if (!worker) throw new Error("no service worker (the push check failed)");
    await page.evaluate(() => { location.hash = ""; });
    await until(() => page.$eval("#detail", (e) => e.hidden), "no session shown before the tap");
    const url = await worker.evaluate(async () => {
      const ns = await self.registration.getNotifications({ tag: "session:widgets-7" });
      if (ns.length !== 1) return "notifications of widgets-7: " + ns.length;
      const w = await openFromNotification(ns[0]);
      return w ? w.url : "no window";
    });
    // A client's url leaves the fragment out: the page itself says where it is, below.
    if (!url.startsWith(BASE + "/")) throw new Error("the window is at " + url);
    await until(() => page.evaluate(() => location.hash === "#/s/widgets-7" && !document.getElementById("detail").hidden &&
      document.getElementById("d-title").textContent === "widgets-7"), "the session shown in the page");
    const left = await worker.evaluate(async () =>
      (await self.registration.getNotifications({ tag: "session:widgets-7" })).length);
    if (left !== 0) throw new Error(left + " notification(s) of widgets-7 left after the tap");
    return true;
  });
  await check("online: the offline note is hidden", () =>
    until(() => page.$eval("#offline", (e) => e.hidden && getComputedStyle(e).display === "none"), "a hidden note"));
}

async function offline(page) {
  let resp;
  await check("offline: the page opens from the device's copy", async () => {
    resp = await page.goto(BASE + "/", { waitUntil: "load" });
    if (!resp || !resp.fromServiceWorker()) throw new Error("not from the service worker: " + (resp && resp.status()));
    return until(() => page.$("#sessions"), "the page's session list");
  });
  await check("offline: the page says it is offline", () =>
    until(async () => (await page.$eval("#offline", (e) => !e.hidden && getComputedStyle(e).display !== "none" && e.textContent)) &&
      (await page.$eval("#live", (e) => e.textContent)) === "offline", "the offline note and badge"));
}

async function main() {
  await withBrowser("the browser run ends cleanly", async (browser) => {
    const page = await browser.newPage();
    await page.setViewport(PHONE);
    if (process.env.PHASE === "offline") await offline(page);
    else await online(page);
  }, { userDataDir: process.env.PROFILE });
  finish();
}

main();
