// The chromium test clients' shared reporting: "ok - NAME" or "not ok - NAME<TAB>WHY" lines
// (the calling scripts count them), a screenshot of the page when a check fails (into SHOTS,
// when set), polling with a deadline, and the browser every client launches.
"use strict";
const path = require("path");
const puppeteer = require("puppeteer-core");

const WAIT_MS = 30000;
const SHOTS = process.env.SHOTS;

let failures = 0;
let shotNo = 0;

function ok(name) {
  console.log("ok - " + name);
}

function notOk(name, why) {
  failures++;
  // A tab between the check's name and why it failed (names may hold ": ").
  console.log("not ok - " + name.replace(/\s+/g, " ") + "\t" + String(why).replace(/\s+/g, " ").slice(0, 600));
}

/** A screenshot of page into SHOTS, numbered in the order taken; its path (or null). */
async function shot(page, name) {
  if (!SHOTS) return null;
  const file = path.join(SHOTS, String(++shotNo).padStart(2, "0") + "-" + name + ".png");
  try {
    await page.screenshot({ path: file });
    console.log("# screenshot " + file);
  } catch (e) {
    console.log("# screenshot " + name + " failed: " + e.message);
  }
  return file;
}

/** check(NAME, [page,] fn): runs fn; a throw or a false answer fails it (with a screenshot of
 * page, when given). Answers whether it passed. */
async function check(name, page, fn) {
  if (typeof page === "function") [page, fn] = [null, page];
  try {
    const r = await fn();
    if (r === false) throw new Error("condition false");
    ok(name);
    return true;
  } catch (e) {
    notOk(name, e.message);
    if (page) await shot(page, "FAILED-" + name.replace(/[^A-Za-z0-9]+/g, "_").slice(0, 60));
    return false;
  }
}

/** Polls fn until it answers something true (that answer), or throws after ms. */
async function until(fn, what, ms = WAIT_MS) {
  const end = Date.now() + ms;
  let last;
  for (;;) {
    try {
      last = await fn();
      if (last) return last;
    } catch (e) {
      last = e.message;
    }
    if (Date.now() > end) throw new Error("timed out waiting for " + what + " (last: " + JSON.stringify(last) + ")");
    await new Promise((r) => setTimeout(r, 150));
  }
}

/** A phone's viewport (the tests' 390x844). */
const PHONE = { width: 390, height: 844, isMobile: true, hasTouch: true, deviceScaleFactor: 2 };

/**
 * Runs run(browser) in Debian's chromium (CHROMIUM), headless; a throw is the failed check
 * named name. The browser is closed after. No sandbox: the tests run as root. No network but
 * ours: any other host fails to resolve. opts: webgl (software WebGL, for the terminal's
 * renderer), userDataDir (a profile kept between runs).
 */
async function withBrowser(name, run, opts = {}) {
  const args = ["--no-sandbox", "--disable-dev-shm-usage", "--no-first-run", "--disable-extensions",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"];
  if (opts.webgl) args.push("--enable-unsafe-swiftshader");
  const browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    userDataDir: opts.userDataDir,
    args,
  });
  try {
    await run(browser);
  } catch (e) {
    notOk(name, e.stack || e.message);
  } finally {
    await browser.close();
  }
}

/** Ends the process: status 1 when any check failed. */
function finish() {
  process.exit(failures ? 1 : 0);
}

module.exports = { WAIT_MS, PHONE, ok, notOk, shot, check, until, withBrowser, finish };
