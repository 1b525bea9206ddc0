// The web UI's Changes view in a real browser (Debian's chromium, headless, puppeteer-core),
// against the stack test_web_changes.sh started with a structured session widgets-1 whose worktree
// has a commit, an uncommitted change and an untracked file: the files with +/−, a file's patch,
// the uncommitted-only choice, the refresh when the agent's turn ends (a prompt's result), at
// 1280x800 and at 390x844, and for a read-only identity. Screenshots of each step go to $SHOTS.
//
// Output: "ok - NAME" or "not ok - NAME<TAB>WHY", "# …" for notes (test_web_changes.sh counts them).
// Environment: BASE_URL, SHOTS (dir), CODE_DIR (worktrees), AGENTD_TEST_TOKEN (admin), VIEWER_TOKEN
// (read-only), CHROMIUM (default /usr/bin/chromium), AGENT_SH (a script: agent-sh DIR SCRIPT runs
// SCRIPT in DIR as the agents' user).
"use strict";
const path = require("path");
const { execFileSync } = require("child_process");

const BASE = process.env.BASE_URL;
const TOKEN = process.env.AGENTD_TEST_TOKEN;
const AUTH = { Authorization: "Bearer " + TOKEN };
const SHOTS = process.env.SHOTS;
const WT = path.join(process.env.CODE_DIR, "widgets-issue-1");
const { WAIT_MS, ok, shot, check, until, finish, withBrowser, PHONE } = require("./tap");

const agentSh = (script) => execFileSync(process.env.AGENT_SH, [WT, script], { encoding: "utf8" });

/** The files the view lists: [[status letter, path, stats]]. */
const listed = (page) => page.$$eval("#changes-view li.file summary", (ss) =>
  ss.map((s) => [s.querySelector(".fstatus").textContent, s.querySelector(".fpath").textContent,
    s.querySelector(".fstats").textContent]));

async function openChanges(page) {
  await page.goto(BASE + "/#/s/widgets-1", { waitUntil: "networkidle2" });
  await page.waitForSelector("#d-changes", { visible: true, timeout: WAIT_MS });
  await page.click("#d-changes");
  await until(async () => (await listed(page)).length > 0, "the Changes view's files");
}

async function laptop(browser) {
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 800 });
  await page.goto(BASE + "/?token=" + TOKEN, { waitUntil: "networkidle2" });
  await openChanges(page);
  await check("laptop: the files with their status and +/−", page, async () => {
    const got = JSON.stringify((await listed(page)).sort());
    const want = JSON.stringify([["A", "feature.c", "+2 −0"], ["A", "notes.txt", "+1 −0"], ["M", "main.c", "+1 −0"]]);
    if (got !== want) throw new Error(got);
  });
  await check("laptop: the summary counts them against origin/main", page, async () => {
    const t = await page.$eval("#changes-view .changes-summary", (e) => e.textContent);
    if (!/^3 files changed · \+4 · −0 · against origin\/main [0-9a-f]{7}$/.test(t)) throw new Error(t);
  });
  await check("laptop: the branch's commit, folded under its count", page, async () => {
    const t = await page.$eval("#changes-view .changes-commits summary", (e) => e.textContent);
    if (t !== "1 commit since origin/main") throw new Error(t);
    await page.click("#changes-view .changes-commits summary");
    const s = await page.$$eval("#changes-view .changes-commits li .csubject", (ls) => ls.map((l) => l.textContent));
    if (JSON.stringify(s) !== '["add feature.c"]') throw new Error(JSON.stringify(s));
  });
  await check("laptop: the conversation gives way to the Changes view", page, async () =>
    !(await page.$eval("#conv-view", (e) => e.offsetParent !== null)));
  await page.$$eval("#changes-view li.file summary", (ss) => ss.find((s) => s.textContent.includes("main.c")).click());
  await check("laptop: a file opens on its patch, added lines marked", page, async () => {
    const lines = await until(() => page.$$eval("#changes-view .patch .ln.add", (ls) => ls.map((l) => l.textContent)),
      "the patch of main.c");
    if (!lines.includes("+int x;\n")) throw new Error(JSON.stringify(lines));
    const hunk = await page.$$eval("#changes-view .patch .ln.hunk", (ls) => ls.length);
    if (hunk < 1) throw new Error("no hunk header");
  });
  await shot(page, "laptop-changes");

  await page.select("#changes-view .changes-base", "HEAD");
  await check("laptop: uncommitted only leaves the commit out", page, async () => {
    await until(async () => (await listed(page)).length === 2, "two files");
    if (await page.$eval("#changes-view .changes-commits", (e) => !e.hidden)) throw new Error("commits shown");
    const paths = (await listed(page)).map((f) => f[1]).sort();
    if (JSON.stringify(paths) !== '["main.c","notes.txt"]') throw new Error(JSON.stringify(paths));
  });
  await page.select("#changes-view .changes-base", "default");
  await until(async () => (await listed(page)).length === 3, "three files again");

  // The agent writes a file, then its turn ends: the view shows it without being asked.
  agentSh("printf 'late\\n' >late.txt");
  const r = await fetch(BASE + "/sessions/widgets-1/prompt", {
    method: "POST", headers: { ...AUTH, "Content-Type": "application/json" }, body: JSON.stringify({ prompt: "hi" }),
  });
  await r.text(); // the turn's SSE, until its result
  await check("laptop: the view refreshes itself when the agent's turn ends", page, async () => {
    await until(async () => (await listed(page)).some((f) => f[1] === "late.txt"), "late.txt listed", 15000);
  });
  await check("laptop: a file opened before the refresh stays open", page, async () =>
    (await page.$$eval("#changes-view details[open] .fpath", (ps) => ps.map((p) => p.textContent))).includes("main.c"));
  await shot(page, "laptop-changes-after-turn");
  await page.click("#d-changes");
  await check("laptop: Changes again brings the conversation back", page, async () =>
    await until(() => page.$eval("#conv-view", (e) => e.offsetParent !== null), "the conversation"));
  await page.close();
}

async function phone(browser) {
  const ctx = await browser.createBrowserContext();
  const page = await ctx.newPage();
  await page.setViewport(PHONE);
  await page.goto(BASE + "/?token=" + process.env.VIEWER_TOKEN, { waitUntil: "networkidle2" });
  await openChanges(page);
  await page.$$eval("#changes-view li.file summary", (ss) => ss.find((s) => s.textContent.includes("feature.c")).click());
  await page.waitForSelector("#changes-view .patch", { visible: true, timeout: WAIT_MS });
  await check("phone (read-only): the files and a patch are there", page, async () =>
    (await listed(page)).length === 4);
  await check("phone: the page does not scroll sideways (long lines scroll in their patch)", page, async () => {
    const w = await page.evaluate(() => document.documentElement.scrollWidth);
    if (w > 390) throw new Error("scrollWidth " + w);
  });
  await check("phone: the file list is on screen, below the head", page, async () => {
    const box = await (await page.$("#changes-view .changes-files")).boundingBox();
    if (!box || box.y > 400 || box.height < 200) throw new Error(JSON.stringify(box));
  });
  await shot(page, "phone-changes");
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
