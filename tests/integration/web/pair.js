// "Open on phone" and "Notifications" in Debian's chromium (headless, puppeteer-core), against
// the stack test_pair.sh started. The laptop (1280x800, the harness's admin token) makes a
// pairing link in the page and sees its QR code and countdown; the phone (390x844, a browser
// context of its own, no credentials) opens the link and is signed in as device-<name>, with
// nothing wider than its screen; the laptop lists the phone and revokes it, after which the phone
// is sent to the login page. The Notifications panel lists this identity's push devices (one
// made through the API with a P-256 key from node's crypto: headless chromium has no push
// service to subscribe with) and revokes one.
// Output: "ok - NAME" or "not ok - NAME<TAB>WHY". Environment: BASE_URL, AGENTD_TEST_TOKEN,
// CHROMIUM, SHOTS (optional screenshots).
"use strict";
const crypto = require("crypto");

const BASE = process.env.BASE_URL;
const TOKEN = process.env.AGENTD_TEST_TOKEN;
const { shot, check, until, finish, withBrowser, PHONE } = require("./tap");

const visible = (page, sel) => page.$eval(sel, (e) => !e.hidden && getComputedStyle(e).display !== "none").catch(() => false);

async function laptopPairs(laptop) {
  await laptop.goto(BASE + "/?token=" + TOKEN, { waitUntil: "networkidle2" });
  await until(() => visible(laptop, "#open-phone"), "the Open on phone button (admins)");
  await laptop.click("#open-phone");
  await laptop.$eval("#pair-name", (e) => (e.value = "pixel"));
  const answer = laptop.waitForResponse((r) => r.url() === BASE + "/pairings" && r.request().method() === "POST");
  await laptop.click("#pair-form button[type=submit]");
  const p = await (await answer).json();
  await check("the page shows the link's QR code (dark modules on white) and its 5 minutes", laptop, async () => {
    await until(() => visible(laptop, "#pair-qr"), "the QR canvas");
    const dark = await laptop.$eval("#pair-qr", (c) => {
      const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
      let n = 0;
      for (let i = 0; i < d.length; i += 4) if (d[i] === 0) n++;
      return n / (d.length / 4);
    });
    const text = await laptop.$eval("#pair-expiry", (e) => e.textContent);
    if (!(dark > 0.2 && dark < 0.7)) throw new Error("dark share " + dark);
    if (!/^Valid for [45]:\d\d, once/.test(text)) throw new Error(text);
    await shot(laptop, "pair-qr");
    return true;
  });
  return p.url;
}

async function phoneOpens(phone, url) {
  await phone.goto(url, { waitUntil: "networkidle2" });
  await check("the phone that opens the link is signed in as its own device (390x844)", phone, async () => {
    const who = await until(() => phone.$eval("#whoami", (e) => e.textContent), "the header's identity");
    if (who !== "device-pixel") throw new Error("signed in as " + who);
    if (new URL(phone.url()).search !== "") throw new Error("the token stays in the address bar: " + phone.url());
    return true;
  });
  await check("nothing on the phone is wider than its screen", phone, async () => {
    const w = await phone.evaluate(() => document.documentElement.scrollWidth);
    if (w > 390) throw new Error("scrollWidth " + w);
    await shot(phone, "phone-paired");
    return true;
  });
  const seen = [];
  phone.on("response", (r) => r.url() === url && seen.push(r.status() + " " + r.headers().location));
  await phone.goto(url, { waitUntil: "networkidle2" });
  await check("the link opens nothing a second time (and the phone stays itself)", phone, async () => {
    if (seen.join() !== "303 /login?error=invalid_pairing") throw new Error("answered " + JSON.stringify(seen));
    const who = await phone.evaluate(async () => (await (await fetch("/whoami")).json()).identity);
    if (who !== "device-pixel") throw new Error("now " + who);
    return true;
  });
}

async function laptopRevokes(laptop, phone) {
  await check("the laptop lists the paired phone and revokes it", laptop, async () => {
    await laptop.click("#pair-close");
    await laptop.click("#open-phone");
    const row = await until(async () => {
      const rows = await laptop.$$("#pair-list li");
      for (const r of rows) if ((await r.evaluate((e) => e.textContent)).startsWith("device-pixel ")) return r;
      return null;
    }, "device-pixel in the list");
    await (await row.$("button")).click();
    await until(async () => /revoked/.test(await laptop.$eval("#pair-status", (e) => e.textContent)), "the revoke");
    return true;
  });
  await check("the revoked phone is sent to the login page", phone, async () => {
    await until(async () => {
      await phone.goto(BASE + "/", { waitUntil: "networkidle2" });
      return new URL(phone.url()).pathname === "/login";
    }, "the login page", 10000);
    return true;
  });
}

async function notifications(laptop) {
  const ecdh = crypto.createECDH("prime256v1");
  ecdh.generateKeys();
  const sub = {
    endpoint: "https://push.example/sub/laptop-test",
    keys: { p256dh: ecdh.getPublicKey().toString("base64url"), auth: crypto.randomBytes(16).toString("base64url") },
    name: "Test browser",
  };
  const made = await laptop.evaluate(async (s) => {
    const r = await fetch("/push/subscriptions", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(s) });
    return r.status;
  }, sub);
  await check("the Notifications panel lists this identity's devices and revokes one", laptop, async () => {
    if (made !== 201) throw new Error("POST /push/subscriptions " + made);
    await laptop.click("#notify");
    const row = await until(async () => {
      const rows = await laptop.$$("#devices-list li");
      for (const r of rows) if ((await r.evaluate((e) => e.textContent)).startsWith("Test browser · push.example")) return r;
      return null;
    }, "the device in the panel");
    await shot(laptop, "devices");
    await (await row.$("button")).click();
    await until(async () => /No device receives/.test(await laptop.$eval("#devices-list", (e) => e.textContent)), "the empty list");
    const left = await laptop.evaluate(async () => (await (await fetch("/push/subscriptions")).json()).subscriptions.length);
    if (left !== 0) throw new Error(left + " subscriptions left");
    return true;
  });
}

async function main() {
  await withBrowser("the browser run ends cleanly", async (browser) => {
    const laptop = await browser.newPage();
    await laptop.setViewport({ width: 1280, height: 800 });
    const phoneCtx = await browser.createBrowserContext();
    const phone = await phoneCtx.newPage();
    await phone.setViewport(PHONE);
    const url = await laptopPairs(laptop);
    await phoneOpens(phone, url);
    await laptopRevokes(laptop, phone);
    await notifications(laptop);
  });
  finish();
}

main();
