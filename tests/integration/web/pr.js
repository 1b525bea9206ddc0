// The web UI's "Pull request" button in a real browser (Debian's chromium, headless,
// puppeteer-core), against the stack test_web_pr.sh started with the fake GitHub API and a session
// widgets-1 that has a commit: the button opens the pull request and gives way to its link
// (acme/widgets#12, its state), the badges follow the checks the poller finds ("CI failure",
// the failing check named), at 1280x800; at 390x844 a read-only identity sees the link and the
// badges but no button, and the page does not scroll sideways. Screenshots go to $SHOTS.
//
// Output: "ok - NAME" or "not ok - NAME<TAB>WHY", "# …" for notes (test_web_pr.sh counts them).
// Environment: BASE_URL, SHOTS (dir), AGENTD_TEST_TOKEN (admin), VIEWER_TOKEN (read-only),
// GH_CONTROL (the fake GitHub's control file), CHROMIUM (default /usr/bin/chromium).
"use strict";
const fs = require("fs");

const BASE = process.env.BASE_URL;
const TOKEN = process.env.AGENTD_TEST_TOKEN;
const { WAIT_MS, shot, check, until, finish, withBrowser, PHONE } = require("./tap");

const text = (page, sel) => page.$eval(sel, (e) => (e.offsetParent !== null ? e.textContent : null));
const badges = (page) => page.$$eval("#d-badges .badge", (bs) => bs.map((b) => b.textContent));

async function laptop(browser) {
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 800 });
  await page.goto(BASE + "/?token=" + TOKEN, { waitUntil: "networkidle2" });
  await page.goto(BASE + "/#/s/widgets-1", { waitUntil: "networkidle2" });
  await page.waitForSelector("#d-pr", { visible: true, timeout: WAIT_MS });
  await check("laptop: no pull request yet: the button, no link", page, async () =>
    (await text(page, "#d-pr")) === "Pull request" && (await page.$eval("#d-pr-link", (e) => e.hidden)));
  await page.click("#d-pr");
  await check("laptop: the button opens the pull request and its link shows it", page, async () => {
    const t = await until(() => text(page, "#d-pr-link"), "the pull request's link");
    if (t !== "acme/widgets#12 (open)") throw new Error(t);
    const href = await page.$eval("#d-pr-link", (e) => e.href);
    if (href !== "https://github.com/acme/widgets/pull/12") throw new Error(href);
    if (await page.$eval("#d-pr", (e) => e.offsetParent !== null)) throw new Error("the button stays");
  });
  await check("laptop: a PR badge", page, async () => (await badges(page)).includes("PR #12 open"));
  await shot(page, "laptop-pr-open");

  fs.writeFileSync(process.env.GH_CONTROL, JSON.stringify({ checks: { "*": [
    { name: "build", status: "completed", conclusion: "failure" },
    { name: "lint", status: "completed", conclusion: "success" }] } }));
  await check("laptop: the checks fail: a CI badge and the failing check named", page, async () => {
    await until(async () => (await badges(page)).includes("CI failure"), "the CI failure badge", 20000);
    const t = await text(page, "#d-pr-link");
    if (t !== "acme/widgets#12 (open, CI failure: build)") throw new Error(t);
  });
  await check("laptop: the list shows them too", page, async () => {
    const t = await page.$eval("#sessions", (e) => e.textContent);
    if (!t.includes("PR #12 open") || !t.includes("CI failure")) throw new Error(t);
  });
  await shot(page, "laptop-pr-ci-failure");
  await page.close();
}

async function phone(browser) {
  const ctx = await browser.createBrowserContext();
  const page = await ctx.newPage();
  await page.setViewport(PHONE);
  await page.goto(BASE + "/?token=" + process.env.VIEWER_TOKEN, { waitUntil: "networkidle2" });
  await page.goto(BASE + "/#/s/widgets-1", { waitUntil: "networkidle2" });
  await check("phone (read-only): the pull request's link, no button", page, async () => {
    const t = await until(() => text(page, "#d-pr-link"), "the link");
    if (!t.startsWith("acme/widgets#12 (open")) throw new Error(t);
    if (await page.$eval("#d-pr", (e) => e.offsetParent !== null)) throw new Error("a button for a viewer");
  });
  await check("phone: the page does not scroll sideways", page, async () => {
    const w = await page.evaluate(() => document.documentElement.scrollWidth);
    if (w > 390) throw new Error("scrollWidth " + w);
  });
  await shot(page, "phone-pr");
  await ctx.close();
}

async function main() {
  await withBrowser("the browser scenario runs to its end", async (browser) => {
    await laptop(browser);
    await phone(browser);
  });
  finish();
}

main();
