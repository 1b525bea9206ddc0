// The web UI with a structured codex session (the real codex-acp behind agentd-host, its events
// in the common shape of docs/API.md "Events of every agent"), in Debian's chromium (headless,
// puppeteer-core), against the stack test_web_agents.sh started. The page has no per-agent code:
// what it shows for claude it must show for codex.
// Output: "ok - NAME" or "not ok - NAME<TAB>WHY" (test_web_agents.sh counts them).
// Then gemini and opencode sessions from the same form (others()).
// Environment: BASE_URL, AGENTD_TEST_TOKEN, SHOTS, CODE_DIR (the worktrees), OPENAI_LOG (the
// fake model's request log), CHROMIUM.
"use strict";
const fs = require("fs");
const path = require("path");
const { shot, check, until, finish, withBrowser } = require("./tap");

const BASE = process.env.BASE_URL;
const TOKEN = process.env.AGENTD_TEST_TOKEN;
const SID = "widgets-1";
const WORKTREE = path.join(process.env.CODE_DIR, "widgets-issue-1");
// A real CLI's turn: its start, a model round trip or two through the fake.
const TURN_MS = 120000;

const text = (page, sel) => page.$eval(sel, (e) => e.textContent).catch(() => "");
const texts = (page, sel) => page.$$eval(sel, (l) => l.map((e) => e.textContent)).catch(() => []);
const count = (page, sel) => page.$$eval(sel, (l) => l.length);
const visible = (page, sel) => page.$eval(sel, (e) => !!(e.offsetWidth || e.offsetHeight)).catch(() => false);
const noOverflow = (page) => page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);
const agentField = (page) => page.$eval("#create input[name=agent]", (e) => e.value);
// The conversation as "U:<prompt>" and "R" (a turn's result), in the page's order.
const turns = (page) => page.$$eval("#conv-view .msg.user, #conv-view .msg.result",
  (l) => l.map((e) => (e.classList.contains("user") ? "U:" + e.textContent : "R")).join(" | "));

/** The fake model's requests whose body holds a tool's output (codex sends it back to the model
 * as a function_call_output item once the command ran). */
function toolOutputsSeen(word) {
  let n = 0;
  for (const line of fs.readFileSync(process.env.OPENAI_LOG, "utf8").split("\n")) {
    if (!line) continue;
    try {
      const r = JSON.parse(line);
      const body = typeof r.body === "string" ? r.body : JSON.stringify(r.body);
      if (r.method === "POST" && /function_call_output/.test(body) && body.includes(word)) n++;
    } catch {
      /* a line being written */
    }
  }
  return n;
}

const errors = [];
async function watch(page, label) {
  page.on("pageerror", (e) => errors.push(label + ": " + e.message));
  page.on("dialog", (d) => d.accept());
}

async function signIn(page) {
  await page.goto(BASE + "/?token=" + TOKEN, { waitUntil: "networkidle2" });
  await until(async () => (await text(page, "#live")) === "live", "the live badge");
}

async function create(page, owner, name, issue, mode, agent, prompt) {
  await page.$eval("#new-session", (d) => (d.open = true));
  for (const [field, v] of [["owner", owner], ["name", name], ["issue", String(issue)], ["agent", agent]]) {
    await page.$eval(`#create input[name=${field}]`, (e) => (e.value = ""));
    await page.type(`#create input[name=${field}]`, v);
  }
  await page.select("#create select[name=mode]", mode);
  if (prompt) await page.type("#create textarea[name=prompt]", prompt);
  await page.click("#create button[type=submit]");
}

/** Sends text from the conversation's form (a tap on a phone). */
async function send(page, s, tap) {
  await until(() => page.$eval("#conv-view", (v) => !v.querySelector("#prompt-text").disabled &&
    !v.querySelector(".send").disabled), "a usable prompt form", TURN_MS);
  await page.type("#prompt-text", s);
  if (tap) await page.tap("#conv-view .send");
  else await page.click("#conv-view .send");
}

async function laptop(browser) {
  const page = await browser.newPage();
  await watch(page, "laptop");
  await page.setViewport({ width: 1280, height: 800 });
  await signIn(page);
  await check("laptop: the form asks for no agent before one was chosen (the server's default)", page, async () => {
    const v = await agentField(page);
    if (v !== "") throw new Error("agent field: " + JSON.stringify(v));
  });

  await create(page, "acme", "widgets", 1, "structured", "codex", "bootstrap WEBONE");
  await check("laptop: the codex session is listed and selected", page, () =>
    until(async () => (await page.evaluate(() => location.hash)) === "#/s/" + SID &&
      (await count(page, `#sessions li[data-id="${SID}"]`)) === 1, SID + " in the list"));
  await check("laptop: the session shows its agent in the list and in its detail", page, () =>
    until(async () => / · codex · structured · /.test(await text(page, `#sessions li[data-id="${SID}"] .line2`)) &&
      /codex agent/.test(await text(page, "#d-info")), "codex in the row and the detail"));
  await check("laptop: after Create the form keeps the agent asked for (the next session's too)", page, async () => {
    const v = await agentField(page);
    const kept = await page.evaluate(() => localStorage.getItem("agentd.agent"));
    if (v !== "codex" || kept !== "codex") throw new Error("field " + JSON.stringify(v) + ", localStorage " + JSON.stringify(kept));
  });

  await check("laptop: the conversation opens, live", page, () =>
    until(async () => (await visible(page, "#conv-view")) && (await text(page, "#conv-view .conv-state")) === "events: live",
      "the live conversation", 90000));
  await check("laptop: the bootstrap prompt, codex's answer and its result are shown", page, () =>
    until(async () => (await turns(page)) === "U:bootstrap WEBONE | R" &&
      (await texts(page, "#conv-view .msg.assistant.md")).some((t) => /Hello from the fake model \(WEBONE\)/.test(t)),
    "the bootstrap turn", TURN_MS));
  await check("laptop: the turn's note names the agent, as the common shape's init says (no model: no \"(?)\")", page, async () => {
    const notes = await texts(page, "#conv-view .msg.note");
    if (!notes.includes("codex")) throw new Error("notes: " + JSON.stringify(notes));
  });
  await shot(page, "laptop-bootstrap");

  await send(page, "say hello WEBTWO");
  await check("laptop: a prompt sent from the page: shown once, answered, with its result", page, () =>
    until(async () => (await turns(page)) === "U:bootstrap WEBONE | R | U:say hello WEBTWO | R" &&
      (await count(page, "#conv-view .msg.user.pending")) === 0 &&
      (await count(page, "#conv-view .msg.assistant.streaming")) === 0 &&
      (await texts(page, "#conv-view .msg.assistant.md")).some((t) => /Hello from the fake model \(WEBTWO\)/.test(t)),
    "the answer and the result", TURN_MS));
  await check("laptop: the result line says the turn is done", page, async () => {
    const r = await texts(page, "#conv-view .msg.result");
    if (!/^turn done/.test(r[r.length - 1] || "")) throw new Error(JSON.stringify(r));
  });
  await shot(page, "laptop-answer");

  const file = path.join(WORKTREE, "made-by-web");
  await send(page, "RUNBASH touch " + file);
  const card = "#conv-view .msg.permission:not(.resolved)";
  await check("laptop: codex's permission request is a card with Allow and Deny", page, () =>
    until(async () => (await count(page, card)) === 1 &&
      (await page.$eval(card, (c) => !!c.querySelector(".allow") && !!c.querySelector(".deny"))), "the card", TURN_MS));
  await check("laptop: the card says what would run (the command), not only a title", page, async () => {
    const t = await text(page, card + " .perm-what");
    if (!t.includes("touch " + file)) throw new Error("card: " + JSON.stringify(await text(page, card)));
  });
  await check("laptop: the card shows the command as a shell line, the agent's raw input folded away", page, async () => {
    const c = await page.$eval(card, (e) => ({
      cmd: [...e.querySelectorAll(".perm-what .tool-cmd")].map((x) => x.textContent),
      desc: [...e.querySelectorAll(".perm-desc")].map((x) => x.textContent),
      json: [...e.querySelectorAll(".perm-what .tool-json")].filter((x) => !x.closest("details:not([open])")).length,
    }));
    if (JSON.stringify(c.cmd) !== JSON.stringify(["$ touch " + file]) || c.json !== 0 || c.desc.length !== 0) {
      throw new Error(JSON.stringify(c));
    }
  });
  await check("laptop: no Allow for this session without suggestions (ACP has none)", page, () =>
    page.$eval(card + " .allow-session", (b) => b.hidden));
  console.log("# card: " + (await text(page, card)).replace(/\s+/g, " ").slice(0, 300));
  await check("laptop: the list's line of the waiting session names the request once", page, () =>
    until(async () => JSON.stringify(await texts(page, `#sessions li[data-id="${SID}"] .line2.warn`)) ===
      JSON.stringify(["touch " + file]), "one line: touch " + file));
  await shot(page, "laptop-permission");
  await check("laptop: nothing ran before the answer", () => !fs.existsSync(file));
  await page.click(card + " .allow");
  await check("laptop: Allow from the page lets the command run", page, () =>
    until(() => fs.existsSync(file), file, TURN_MS));
  await check("laptop: the fake model sees the tool's result", page, () =>
    until(() => toolOutputsSeen("made-by-web") > 0, "a function_call_output", TURN_MS));
  await check("laptop: the card is resolved, the tool shown done, the turn's result", page, () =>
    until(async () => (await count(page, "#conv-view .msg.permission.resolved")) === 1 &&
      // "by you" from the answer, or the identity's name from permission_resolved: whichever came last.
      /^allow \(by (you|itest)\)/.test(await text(page, "#conv-view .perm-outcome")) &&
      (await count(page, "#conv-view .msg.tool.done")) >= 1 &&
      (await count(page, "#conv-view .msg.result")) === 3, "resolved + done + result", TURN_MS));
  await check("laptop: the tool card names the command once (not its words joined by commas)", page, async () => {
    const t = await texts(page, "#conv-view .msg.tool summary");
    if (!t.includes("touch " + file)) throw new Error("tool summaries: " + JSON.stringify(t));
  });

  await check("laptop: the page does not overflow sideways", page, () => noOverflow(page));
  await shot(page, "laptop-allowed");

  await page.reload({ waitUntil: "networkidle2" });
  await check("laptop: after a reload the form still offers the agent last asked for", page, () =>
    until(async () => (await agentField(page)) === "codex", "codex in the form"));
  await check("laptop: after a reload the conversation is replayed in order", page, () =>
    until(async () => (await turns(page)) ===
      "U:bootstrap WEBONE | R | U:say hello WEBTWO | R | U:RUNBASH touch " + file + " | R" &&
      (await count(page, "#conv-view .msg.permission.resolved")) === 1 &&
      (await count(page, "#conv-view .msg.permission:not(.resolved)")) === 0, "the replay", 60000));
  await page.close();
}

async function phone(browser) {
  const ctx = await browser.createBrowserContext();
  const page = await ctx.newPage();
  await watch(page, "phone");
  await page.setViewport({ width: 390, height: 844, isMobile: true, hasTouch: true });
  await signIn(page);
  await check("phone: the list shows the session's agent", page, () =>
    until(async () => / · codex · /.test(await text(page, `#sessions li[data-id="${SID}"] .line2`)), "codex in the row"));
  await page.goto(BASE + "/#/s/" + SID, { waitUntil: "networkidle2" });
  await check("phone: the conversation is replayed (three turns, the card resolved)", page, () =>
    until(async () => (await count(page, "#conv-view .msg.result")) === 3 &&
      (await count(page, "#conv-view .msg.permission.resolved")) === 1, "the replay", 60000));
  const file = path.join(WORKTREE, "made-on-phone");
  await send(page, "RUNBASH touch " + file, true);
  const card = "#conv-view .msg.permission:not(.resolved)";
  await check("phone: the card arrives", page, () => until(async () => (await count(page, card)) === 1, "the card", TURN_MS));
  await page.$eval(card, (c) => c.scrollIntoView());
  await check("phone: the card fits the screen, Allow and Deny on it", page, () =>
    until(() => page.$eval(card, (c) => {
      const r = c.getBoundingClientRect();
      const a = c.querySelector(".allow").getBoundingClientRect();
      return r.height <= window.innerHeight && a.bottom <= window.innerHeight && a.top >= 0;
    }), "the whole card in view", 5000));
  await shot(page, "phone-permission");
  await page.tap(card + " .allow");
  await check("phone: a tap on Allow lets the command run, the turn ends", page, () =>
    until(async () => fs.existsSync(file) && (await count(page, "#conv-view .msg.result")) === 4, "made-on-phone + result", TURN_MS));
  await check("phone: the page does not overflow sideways", page, () => noOverflow(page));
  await shot(page, "phone-allowed");
  await ctx.close();
}

/** gemini and opencode from the same form and page: the bootstrap turn, a card allowed. */
async function others(browser) {
  const page = await browser.newPage();
  await watch(page, "others");
  await page.setViewport({ width: 1280, height: 800 });
  await signIn(page);
  for (const [agent, issue] of [["gemini", 2], ["opencode", 3]]) {
    const sid = "widgets-" + issue;
    const word = "WEB" + agent.toUpperCase();
    const file = path.join(process.env.CODE_DIR, "widgets-issue-" + issue, "made-by-" + agent);
    await create(page, "acme", "widgets", issue, "structured", agent, "bootstrap " + word);
    await check(agent + ": listed with its agent, the form keeps it", page, () =>
      until(async () => (await page.evaluate(() => location.hash)) === "#/s/" + sid &&
        new RegExp(" · " + agent + " · structured · ").test(await text(page, `#sessions li[data-id="${sid}"] .line2`)) &&
        (await agentField(page)) === agent, sid + " with " + agent));
    await check(agent + ": the bootstrap prompt and its answer are shown", page, () =>
      until(async () => (await turns(page)) === "U:bootstrap " + word + " | R" &&
        (await texts(page, "#conv-view .msg.assistant.md")).some((t) => t.includes("Hello from the fake model (" + word + ")")),
      "the bootstrap turn", TURN_MS));
    await send(page, "RUNBASH touch " + file);
    const card = "#conv-view .msg.permission:not(.resolved)";
    await check(agent + ": the card says what would run, no JSON unfolded", page, async () => {
      await until(async () => (await count(page, card)) === 1, "the card", TURN_MS);
      const c = await page.$eval(card, (e) => ({
        shown: e.querySelector(".perm-title").innerText + "\n" + e.querySelector(".perm-what").innerText,
        json: [...e.querySelectorAll(".tool-json")].filter((x) => !x.closest("details:not([open])")).length,
      }));
      console.log("# " + agent + " card: " + JSON.stringify(c));
      if (!c.shown.includes("touch " + file) || c.json !== 0) throw new Error(JSON.stringify(c));
    });
    await shot(page, agent + "-permission");
    await page.click(card + " .allow");
    await check(agent + ": Allow lets the command run, the turn ends", page, () =>
      until(async () => fs.existsSync(file) && (await count(page, "#conv-view .msg.result")) === 2 &&
        (await count(page, "#conv-view .msg.permission.resolved")) === 1, "made-by-" + agent + " + result", TURN_MS));
    await shot(page, agent + "-allowed");
  }
  await page.close();
}

async function main() {
  await withBrowser("the browser scenario runs to its end", async (browser) => {
    await laptop(browser);
    await phone(browser);
    await others(browser);
  }, { webgl: true });
  await check("no uncaught exception in the pages", () => {
    if (errors.length) throw new Error(errors.join("; "));
  });
  finish();
}

main();
