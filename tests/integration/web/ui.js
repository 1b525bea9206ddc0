// The web UI in a real browser: Debian's chromium, headless, driven by puppeteer-core against the
// stack test_web_ui.sh started. Prints one "ok - …" / "not ok - …" line per check (the
// script counts them) and saves a screenshot of every step under $SHOTS.
//
// Output: "ok - NAME" or "not ok - NAME<TAB>WHY", "# …" for notes.
// Environment: BASE_URL, SHOTS (dir), TMUX_SOCK, CODE_DIR (worktrees), UP_PID (deploy/up),
// BRIDGE_EXE (the agentd-bridge binary), CHROMIUM (default /usr/bin/chromium), AGENTD_TEST_TOKEN
// (an admin's token), VIEWER_TOKEN (a read-only token), STACK_CTL (a dir: writing "stop" or
// "start" to STACK_CTL/request has test_web_ui.sh stop or start the stack, which then makes
// STACK_CTL/done-<it>).
"use strict";
const fs = require("fs");
const path = require("path");
const { execFileSync } = require("child_process");

const BASE = process.env.BASE_URL;
// The harness's admin token (lib.sh): Node's own requests send it; each browser context trades it
// for the cookie the way a person does (GET /?token=, or the login page).
const TOKEN = process.env.AGENTD_TEST_TOKEN;
const AUTH = { Authorization: "Bearer " + TOKEN };
const VIEWER_TOKEN = process.env.VIEWER_TOKEN;
const ORIGIN = new URL(BASE).origin;
const SHOTS = process.env.SHOTS;
const { ok, notOk, shot, check, until, finish, withBrowser, PHONE } = require("./tap");

function tmux(...args) {
  return execFileSync("tmux", ["-S", process.env.TMUX_SOCK, ...args], { encoding: "utf8" });
}
const paneText = (t) => tmux("capture-pane", "-p", "-t", "=" + t + ":");
const paneSize = (t) => tmux("display", "-p", "-t", "=" + t + ":", "#{pane_width}x#{pane_height}").trim();

/** Has test_web_ui.sh stop or start the whole stack (deploy/up and everything under it). */
async function stack(cmd) {
  const dir = process.env.STACK_CTL;
  const done = path.join(dir, "done-" + cmd);
  fs.writeFileSync(path.join(dir, "request"), cmd);
  await until(() => fs.existsSync(done), "the stack's " + cmd, 120000);
  fs.unlinkSync(done);
}

async function getSession(id) {
  const r = await fetch(BASE + "/sessions/" + id, { headers: AUTH });
  return { status: r.status, body: await r.json().catch(() => null) };
}

/** pid of the agentd-bridge under deploy/up (by the binary, among deploy/up's descendants). */
function bridgePid() {
  const exe = fs.realpathSync(process.env.BRIDGE_EXE);
  const kids = new Map();
  for (const p of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(p)) continue;
    try {
      const stat = fs.readFileSync("/proc/" + p + "/stat", "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (!kids.has(ppid)) kids.set(ppid, []);
      kids.get(ppid).push(Number(p));
    } catch {
      /* gone */
    }
  }
  const todo = [Number(process.env.UP_PID)];
  while (todo.length) {
    for (const k of kids.get(todo.pop()) || []) {
      try {
        if (fs.readlinkSync("/proc/" + k + "/exe") === exe) return k;
      } catch {
        /* not ours to read */
      }
      todo.push(k);
    }
  }
  return 0;
}

// ---- page helpers --------------------------------------------------------------------------

const requests = []; // every URL any page asked for
const answers = []; // bodies of the permission answers the pages sent
const termFramesSent = new Map(); // page label -> frames the page sent on terminal sockets
async function watch(page, label) {
  page.on("request", (r) => {
    requests.push(r.url());
    if (r.method() === "POST" && /\/permissions\//.test(r.url())) answers.push(r.postData() || "");
  });
  page.on("pageerror", (e) => notOk(label + ": no uncaught exception in the page", e.message));
  page.on("dialog", (d) => d.accept());
  const cdp = await page.createCDPSession();
  await cdp.send("Network.enable");
  const sockets = new Map(); // requestId -> URL
  cdp.on("Network.webSocketCreated", (e) => {
    requests.push(e.url);
    sockets.set(e.requestId, e.url);
  });
  cdp.on("Network.webSocketFrameSent", (e) => {
    if (/\/terminal(\?|$)/.test(sockets.get(e.requestId) || "")) {
      termFramesSent.set(label, (termFramesSent.get(label) || 0) + 1);
    }
  });
  await page.evaluateOnNewDocument(() => {
    // Notifications the page shows (the permission is granted to the desktop's context).
    window.__notes = [];
    if (window.Notification) {
      const Base = window.Notification;
      window.Notification = class extends Base {
        constructor(title, opts) {
          super(title, opts);
          window.__notes.push(title);
        }
      };
    }
    window.__csp = [];
    document.addEventListener("securitypolicyviolation", (e) =>
      window.__csp.push(e.effectiveDirective + " " + e.blockedURI));
  });
}

const screen = (page) => page.evaluate(() => {
  const t = document.querySelector("#term-view .term").xterm;
  if (!t) return "";
  const b = t.buffer.active;
  const out = [];
  for (let i = 0; i < b.length; i++) {
    const l = b.getLine(i);
    if (l) out.push(l.translateToString(true));
  }
  return out.join("\n");
});
// The fake claude's first line, on a screen of any width: it printed it in the 200-column pane
// before the browser attached, and when the window shrinks to a phone's width tmux may reflow the
// start of it into its history. Its end survives, cut anywhere into rows (whitespace ignored).
const READY = /fakeclaudeready|issueview[0-9]+-Racme\/widgets/;
const showsReady = (text) => READY.test(text.replace(/\s/g, ""));
const termSize = (page) => page.evaluate(() => {
  const t = document.querySelector("#term-view .term").xterm;
  return t ? t.cols + "x" + t.rows : "";
});
const connected = (page) => page.$eval("#term-view .term", (e) => e.dataset.connected === "1");
const text = (page, sel) => page.$eval(sel, (e) => e.textContent).catch(() => "");
const visible = (page, sel) => page.$eval(sel, (e) => !!(e.offsetWidth || e.offsetHeight) &&
  getComputedStyle(e).visibility !== "hidden").catch(() => false);
const count = (page, sel) => page.$$eval(sel, (l) => l.length);
// The conversation as "U:<prompt>" and "R" (a turn's result), in the page's order.
const turns = (page) => page.$$eval("#conv-view .msg.user, #conv-view .msg.result",
  (l) => l.map((e) => (e.classList.contains("user") ? "U:" + e.textContent : "R")).join(" | "));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// The controls a read-only identity must not be shown (each would answer 403).
const ADMIN_CONTROLS = ["#new-session", "#d-mode", "#d-force", "#d-delete", "#term-view .keybar",
  "#conv-view .prompt-form", "#conv-view .send", "#conv-view .interrupt", "#gone-view button"];
async function shownControls(page) {
  const shown = [];
  for (const sel of ADMIN_CONTROLS) if (await visible(page, sel)) shown.push(sel);
  return shown;
}

async function typeTerm(page, s) {
  await page.focus("#term-view .xterm-helper-textarea");
  await page.keyboard.type(s);
  await page.keyboard.press("Enter");
}

async function createFromForm(page, owner, name, issue, mode, agent) {
  await page.$eval("#new-session", (d) => (d.open = true));
  const f = "#create ";
  const fields = [["owner", owner], ["name", name], ["issue", String(issue)]];
  if (agent !== undefined) fields.push(["agent", agent]);
  for (const [field, v] of fields) {
    await page.$eval(f + `input[name=${field}]`, (e) => (e.value = ""));
    await page.type(f + `input[name=${field}]`, v);
  }
  await page.select(f + "select[name=mode]", mode);
  await page.click(f + "button[type=submit]");
}

// ---- the scenario --------------------------------------------------------------------------

async function desktop(browser) {
  await browser.defaultBrowserContext().overridePermissions(ORIGIN, ["notifications"]);
  const page = await browser.newPage();
  await watch(page, "desktop");
  await page.setViewport({ width: 1280, height: 800 });
  const noCookie = await page.goto(BASE + "/", { waitUntil: "networkidle2" });
  await check("without credentials the page is the login page", page, async () => {
    if (new URL(page.url()).pathname !== "/login") throw new Error("at " + page.url() + " " + noCookie.status());
  });
  // The answer of the redirect's last step: / itself.
  const res = await page.goto(BASE + "/?token=" + TOKEN, { waitUntil: "networkidle2" });
  await check("GET /?token= lands on / without the token, with an HttpOnly cookie", page, async () => {
    const u = new URL(page.url());
    if (u.pathname !== "/" || u.search !== "") throw new Error("at " + page.url());
    const c = (await page.cookies()).find((k) => k.name === "agentd_token");
    if (!c || !c.httpOnly || c.sameSite !== "Strict") throw new Error(JSON.stringify(c));
  });
  await check("GET / answers 200 with a Content-Security-Policy without unsafe-inline", page, () => {
    const csp = res.headers()["content-security-policy"] || "";
    if (res.status() !== 200 || !/script-src 'self'/.test(csp) || /unsafe/.test(csp)) throw new Error(res.status() + " " + csp);
  });
  await check("the page shows the live list (connected to /events)", page, () =>
    until(async () => (await text(page, "#live")) === "live", "the live badge"));
  await shot(page, "desktop-empty");

  await check("the create form's placeholders are neutral (owner, repository)", page, async () => {
    const p = await page.$$eval("#create input[placeholder]", (l) => l.map((e) => e.placeholder).join(","));
    if (p !== "owner,repository") throw new Error(p);
  });
  await check("with the stack up the header's health is green", page, () =>
    until(async () => (await page.$eval("#health", (e) => e.className)) === "ok", "#health.ok"));

  // A session whose repository cannot be cloned fails, with its reason. The POST's answer
  // (creating) is held until the failure has reached the page through /events, as on a slow
  // network: the older answer must not bring "creating" back.
  const holder = await page.createCDPSession();
  let heldCreate = 0;
  holder.on("Fetch.requestPaused", async (ev) => {
    heldCreate++;
    await until(async () => (await getSession("missing-9")).body.state === "failed", "missing-9 failed", 20000)
      .catch(() => {});
    await sleep(1500); // the bridge publishes within milliseconds
    await holder.send("Fetch.continueRequest", { requestId: ev.requestId }).catch(() => {});
  });
  await holder.send("Fetch.enable", { patterns: [{ urlPattern: "*/sessions", requestStage: "Response" }] });
  await createFromForm(page, "acme", "missing", 9, "terminal");
  await check("a create whose answer comes after its failure ends failed, not creating", page, async () => {
    await until(async () => (await page.evaluate(() => location.hash)) === "#/s/missing-9", "the POST's answer");
    await sleep(1000);
    const badges = await page.$$eval('#sessions li[data-id="missing-9"] .badge', (l) => l.map((e) => e.textContent));
    if (heldCreate !== 1) throw new Error("the POST's answer was held " + heldCreate + " times, not once");
    if (badges.join(",") !== "failed") throw new Error("badges: " + badges.join(","));
    if (await visible(page, "#term-view")) throw new Error("a terminal view is open for the failed session");
  });
  await holder.send("Fetch.disable");
  await holder.detach();
  await check("a failed session is listed as failed with its reason", page, () =>
    until(async () => (await count(page, '#sessions li[data-id="missing-9"] .badge.failed')) === 1 &&
      /\S/.test(await text(page, '#sessions li[data-id="missing-9"] .line2.bad')) &&
      /not running \(failed: .+\)/.test(await text(page, "#gone-view")), "the failed badge and reason"));
  await shot(page, "desktop-failed");

  await createFromForm(page, "acme", "widgets", 1, "terminal", "claude");
  await check("create: the new session is listed and selected", page, () =>
    until(async () => (await page.evaluate(() => location.hash)) === "#/s/widgets-1" &&
      (await count(page, '#sessions li[data-id="widgets-1"]')) === 1, "widgets-1 in the list"));
  await check("create: the session shows its agent, and the form remembers the agent asked for", page, async () => {
    await until(async () => / · claude · /.test(await text(page, '#sessions li[data-id="widgets-1"] .line2')) &&
      /claude agent/.test(await text(page, "#d-info")), "claude in the row and the detail");
    const kept = await page.evaluate(() => localStorage.getItem("agentd.agent"));
    if (kept !== "claude") throw new Error("localStorage agentd.agent: " + kept);
  });
  await check("a session shows no activity while creating, then running's", page, async () => {
    const seen = [];
    await until(async () => {
      const b = (await page.$$eval('#sessions li[data-id="widgets-1"] .badge', (l) => l.map((e) => e.textContent))).join(",");
      if (!seen.includes(b)) seen.push(b);
      return b === "idle" || b === "working";
    }, "running's badge");
    const bad = seen.filter((b) => /creating/.test(b) && b !== "creating");
    if (bad.length) throw new Error("badges seen: " + seen.join(" | "));
  });
  await check("terminal: the fake claude's screen is shown", page, () =>
    until(async () => showsReady(await screen(page)), "fake claude ready"));
  const renderer = await page.$eval("#term-view .term", (e) => e.dataset.renderer);
  console.log("# xterm renderer: " + renderer);
  await check("the filter by repository shows only that repository's sessions", page, async () => {
    await until(async () => (await count(page, "#repo-filter option")) === 3, "two repositories in the filter");
    await page.select("#repo-filter", "acme/widgets");
    await until(async () => (await count(page, "#sessions li.session")) === 1 &&
      (await count(page, '#sessions li[data-id="widgets-1"]')) === 1, "only widgets-1");
    await page.select("#repo-filter", "");
    await until(async () => (await count(page, "#sessions li.session")) === 2, "both again");
  });
  await check("the failed session is deleted (API)", page, async () => {
    const r = await fetch(BASE + "/sessions/missing-9", { method: "DELETE", headers: AUTH });
    if (r.status !== 200) throw new Error("DELETE answered " + r.status);
    await until(async () => (await count(page, '#sessions li[data-id="missing-9"]')) === 0, "missing-9 gone from the list");
  });

  await typeTerm(page, "hello from the web");
  await check("typed input reaches the pane", page, () =>
    until(() => /fake claude got: hello from the web/.test(paneText("widgets-1")), "the pane's echo"));
  await check("the pane's answer is shown in the page", page, () =>
    until(async () => /fake claude got: hello from the web/.test(await screen(page)), "the echo on screen"));
  await shot(page, "desktop-terminal");

  const before = await termSize(page);
  await page.setViewport({ width: 900, height: 560 });
  await check("resize: the terminal follows the window and the pane gets its size", page, async () => {
    const after = await until(async () => {
      const s = await termSize(page);
      return s && s !== before ? s : "";
    }, "a new xterm size");
    await until(() => paneSize("widgets-1") === after, "tmux pane " + after);
  });

  const old = bridgePid();
  await check("the bridge runs under deploy/up", page, () => old > 0);
  if (old) process.kill(old, "SIGKILL");
  await check("bridge killed: the page says it is reconnecting", page, () =>
    until(async () => /reconnecting/.test(await text(page, "#term-view .term-status")), "the reconnect notice"));
  await shot(page, "desktop-reconnecting");
  await check("the page reconnects by itself after the bridge restarts", page, () =>
    until(async () => (await connected(page)) && (await visible(page, "#term-view .term-status")) === false,
      "connected again", 60000));
  await typeTerm(page, "after the restart");
  await check("input after the reconnect reaches the pane", page, () =>
    until(() => /fake claude got: after the restart/.test(paneText("widgets-1")), "the pane's echo"));

  // A second tab on the same session.
  const tab2 = await browser.newPage();
  await watch(tab2, "tab 2");
  await tab2.setViewport({ width: 900, height: 560 });
  await tab2.goto(BASE + "/#/s/widgets-1", { waitUntil: "networkidle2" });
  await check("a second tab attaches to the same session", tab2, () =>
    until(async () => (await connected(tab2)) && /after the restart/.test(await screen(tab2)), "tab 2's screen"));
  await typeTerm(tab2, "from tab two");
  await check("what tab 2 types shows in tab 1", page, () =>
    until(async () => /fake claude got: from tab two/.test(await screen(page)), "the echo in tab 1"));
  await check("the list counts two clients", page, () =>
    until(async () => /2 clients/.test(await text(page, '#sessions li[data-id="widgets-1"]')), "2 clients"));
  await tab2.close();

  // A read-only identity: a third browser context, signed in with a --read-only token, on a
  // phone-sized screen (where an admin gets the key bar).
  const vctx = await browser.createBrowserContext();
  const viewer = await vctx.newPage();
  await watch(viewer, "viewer");
  await viewer.setViewport({ width: 390, height: 844, isMobile: true, hasTouch: true });
  await viewer.goto(BASE + "/?token=" + VIEWER_TOKEN, { waitUntil: "networkidle2" });
  const paneBefore = paneSize("widgets-1");
  await check("viewer: the header shows a read-only badge and the identity", viewer, () =>
    until(async () => (await visible(viewer, "#read-only")) && (await text(viewer, "#read-only")) === "read-only" &&
      (await text(viewer, "#whoami")) === "web-viewer" && (await text(viewer, "#live")) === "live", "the badge"));
  await check("viewer: the list shows the session", viewer, () =>
    until(async () => (await count(viewer, '#sessions li[data-id="widgets-1"]')) === 1, "widgets-1 listed"));
  await check("viewer: no create form", viewer, async () => !(await visible(viewer, "#new-session")));
  await viewer.tap('#sessions li[data-id="widgets-1"] a');
  await check("viewer: the terminal shows the pane", viewer, () =>
    until(async () => (await connected(viewer)) && /fake claude got: from tab two/.test(await screen(viewer)),
      "the pane's screen"));
  await check("viewer: no control that would fail (mode switch, delete, force, key bar)", viewer, async () => {
    const shown = await shownControls(viewer);
    if (shown.length) throw new Error("shown: " + shown.join(", "));
  });
  await check("an admin's page shows the same controls, and no read-only badge", page, async () => {
    for (const sel of ["#new-session", "#d-mode", "#d-force", "#d-delete"]) {
      if (!(await visible(page, sel))) throw new Error(sel + " is hidden");
    }
    if (await visible(page, "#read-only")) throw new Error("the read-only badge is shown");
  });
  await shot(viewer, "viewer-terminal");
  await typeTerm(viewer, "viewer typed this");
  await typeTerm(page, "admin after the viewer");
  await check("viewer: its typing does not reach the pane (an admin's does)", viewer, async () => {
    await until(() => /fake claude got: admin after the viewer/.test(paneText("widgets-1")), "the admin's echo");
    await sleep(1000);
    if (/viewer typed this/.test(paneText("widgets-1"))) throw new Error("the pane got the viewer's keys");
  });
  await check("viewer: its page sent nothing on the terminal socket (no keystroke, no size)", viewer, () => {
    const n = termFramesSent.get("viewer") || 0;
    if (n) throw new Error(n + " frames sent");
    if (!termFramesSent.get("desktop")) throw new Error("no frame counted for the admin's page either");
  });
  await check("viewer: its screen size does not change the pane's", viewer, () => paneSize("widgets-1") === paneBefore);

  // Structured mode.
  await check("mode switch: the button restarts claude in structured mode", page, async () => {
    await page.click("#d-mode");
    await until(async () => (await visible(page, "#conv-view")) && (await text(page, "#conv-view .conv-state")) === "events: live",
      "the conversation view", 60000);
  });
  await check("the prompt box is enabled (no turn runs after the switch)", page, () =>
    until(() => page.$eval("#prompt-text", (e) => !e.disabled), "an enabled prompt box"));
  // The POST's answer is held (Chromium's Fetch domain, at the response) until the turn's result
  // has come on the event stream, as on a slow network: the late answer must start no turn.
  const cdp = await page.createCDPSession();
  let held = 0;
  cdp.on("Fetch.requestPaused", async (ev) => {
    held++;
    await until(async () => (await count(page, "#conv-view .msg.result")) === 1, "the result", 15000)
      .catch(() => {});
    await cdp.send("Fetch.continueRequest", { requestId: ev.requestId }).catch(() => {});
  });
  await cdp.send("Fetch.enable", { patterns: [{ urlPattern: "*/sessions/widgets-1/prompt", requestStage: "Response" }] });
  await page.type("#prompt-text", "hello there");
  await page.click("#conv-view .send");
  await check("a prompt's answer streams into the conversation", page, () =>
    until(async () => /hello there/.test(await text(page, "#conv-view .msg.user")) &&
      /Hello!/.test(await text(page, "#conv-view .msg.assistant")) &&
      (await count(page, "#conv-view .msg.result")) === 1, "the prompt, Hello! and the result"));
  await check("the prompt shows once: claude's replay confirms the bubble the page showed", page, () =>
    until(async () => (await count(page, "#conv-view .msg.user.pending")) === 0 &&
      (await turns(page)) === "U:hello there | R", "one confirmed prompt, then the result"));
  await check("the prompt box is enabled again after the turn (its POST answered after the result)", page, async () => {
    await until(() => page.$eval("#prompt-text", (e) => !e.disabled), "an enabled prompt box");
    if (held !== 1) throw new Error("the POST's answer was held " + held + " times, not once");
  });
  await cdp.send("Fetch.disable");
  await page.type("#prompt-text", "RUNBASH touch web-ran");
  await page.click("#conv-view .send");
  await check("a permission request shows as a card", page, () =>
    until(async () => (await count(page, "#conv-view .msg.permission:not(.resolved)")) === 1, "the card"));
  await check("the prompt box is disabled while the turn runs, Interrupt enabled", page, async () =>
    page.$eval("#conv-view", (v) => v.querySelector("#prompt-text").disabled && !v.querySelector(".interrupt").disabled));
  await check("the API says the session waits (activity, pending)", page, () =>
    until(async () => {
      const b = (await getSession("widgets-1")).body;
      return b.activity === "waiting" && b.pending.length === 1 && b.pending[0].toolName === "Bash";
    }, "activity waiting"));
  await check("the list shows the session waiting, with the tool", page, () =>
    until(async () => /waiting[\s\S]*Bash: /.test(await text(page, '#sessions li[data-id="widgets-1"]')), "waiting badge"));
  await check("the tab title counts the waiting session", page, () =>
    until(async () => /^\(1\) waiting/.test(await page.title()), "(1) waiting"));
  await check("a notification says the session waits", page, () =>
    until(() => page.evaluate(() => window.__notes.includes("widgets-1 is waiting")), "the notification"));
  await shot(page, "desktop-permission");

  const ctx2 = await browser.createBrowserContext();
  const other = await ctx2.newPage();
  await other.goto(BASE + "/?token=" + TOKEN, { waitUntil: "networkidle2" });
  await watch(other, "second context");
  await other.setViewport({ width: 1000, height: 700 });
  await other.goto(BASE + "/#/s/widgets-1", { waitUntil: "networkidle2" });
  await check("a second browser context sees the pending card", other, () =>
    until(async () => (await count(other, "#conv-view .msg.permission:not(.resolved)")) === 1, "the card"));
  await check("viewer: the conversation follows the mode switch and shows the card without buttons", viewer, () =>
    until(async () => (await count(viewer, "#conv-view .msg.permission:not(.resolved)")) === 1 &&
      (await count(viewer, "#conv-view .msg.permission button")) === 0 &&
      /read-only/.test(await text(viewer, "#conv-view .msg.permission .perm-actions")), "the card, read-only"));
  await check("viewer: the conversation shows the prompts", viewer, () =>
    until(async () => (await turns(viewer)) === "U:hello there | R | U:RUNBASH touch web-ran", "the prompts"));
  await check("viewer: no prompt box, no Interrupt, no mode switch", viewer, async () => {
    const shown = await shownControls(viewer);
    if (shown.length) throw new Error("shown: " + shown.join(", "));
  });
  await shot(viewer, "viewer-conversation");

  await page.click("#conv-view .msg.permission .allow");
  await check("Allow: the tool's result and the final result appear", page, () =>
    until(async () => (await count(page, "#conv-view .msg.tool.done")) >= 1 &&
      (await count(page, "#conv-view .msg.result")) === 2, "tool result + result"));
  await check("the allowed command ran in the worktree", page, () =>
    until(() => fs.existsSync(path.join(process.env.CODE_DIR, "widgets-issue-1", "web-ran")), "web-ran"));
  await check("the second context sees the card resolved", other, () =>
    until(async () => (await count(other, "#conv-view .msg.permission.resolved")) === 1 &&
      /allow/.test(await text(other, "#conv-view .perm-outcome")), "resolved card"));
  await check("viewer: the card resolved there too", viewer, () =>
    until(async () => (await count(viewer, "#conv-view .msg.permission.resolved")) === 1, "resolved card"));
  await vctx.close();
  await check("the tab title is back to normal", page, () =>
    until(async () => (await page.title()) === "agent-daemon", "the plain title"));
  await shot(other, "desktop-second-context");
  await other.reload({ waitUntil: "networkidle2" });
  await check("a reload replays the conversation (answers, tool result, results, the card resolved)", other, () =>
    until(async () => (await count(other, "#conv-view .msg.result")) === 2 &&
      (await count(other, "#conv-view .msg.tool.done")) === 1 &&
      (await count(other, "#conv-view .msg.permission.resolved")) === 1 &&
      (await count(other, "#conv-view .msg.permission:not(.resolved)")) === 0, "the replayed conversation"));
  await check("a reload shows every prompt, in order, with the answers", other, () =>
    until(async () => (await turns(other)) === "U:hello there | R | U:RUNBASH touch web-ran | R", "the turns"));
  await ctx2.close();

  // Allow for this session: claude's suggestions go back as updatedPermissions.
  await page.type("#prompt-text", "RUNBASH touch second-ran");
  await page.click("#conv-view .send");
  await check("a second request shows a second card", page, () =>
    until(async () => (await count(page, "#conv-view .msg.permission:not(.resolved)")) === 1, "the card"));
  await page.click("#conv-view .msg.permission:not(.resolved) .allow-session");
  await check("Allow for this session sends the event's suggestions as updatedPermissions", page, async () => {
    await until(async () => (await count(page, "#conv-view .msg.result")) === 3 &&
      fs.existsSync(path.join(process.env.CODE_DIR, "widgets-issue-1", "second-ran")), "the turn's end and second-ran");
    const body = JSON.parse(answers[answers.length - 1]);
    if (body.behavior !== "allow" || !Array.isArray(body.updatedPermissions) ||
      body.updatedPermissions[0].type !== "addRules") throw new Error(JSON.stringify(body));
  });

  // Interrupt ends a long turn.
  await page.type("#prompt-text", "SLOW");
  await page.click("#conv-view .send");
  await check("Interrupt is enabled while a turn runs", page, () =>
    until(() => page.$eval("#conv-view .interrupt", (b) => !b.disabled), "an enabled Interrupt"));
  const t0 = Date.now();
  await page.click("#conv-view .interrupt");
  await check("Interrupt ends the turn with its result (well before the 30 s it would take)", page, async () => {
    await until(async () => (await count(page, "#conv-view .msg.result")) === 4, "the 4th result", 25000);
    if (Date.now() - t0 > 25000) throw new Error("took " + (Date.now() - t0) + " ms");
  });

  await check("each prompt shows once, in order, on the page that sent them", page, () =>
    until(async () => (await turns(page)) ===
      "U:hello there | R | U:RUNBASH touch web-ran | R | U:RUNBASH touch second-ran | R | U:SLOW | R", "the turns"));

  await page.click("#d-delete");
  await check("delete: the session leaves the list and the API", page, () =>
    until(async () => (await count(page, '#sessions li[data-id="widgets-1"]')) === 0 &&
      (await getSession("widgets-1")).status === 404, "widgets-1 gone"));
  // The worktree has files git does not know (web-ran, second-ran): kept, then removed by force.
  await check("delete: the page says the worktree was kept, and why", page, () =>
    until(async () => /widgets-1 deleted; worktree kept: .+/.test(await text(page, "#message")), "the message"));
  await page.click("#message button");
  await check("delete: removing the kept worktree by force (after a confirmation)", page, () =>
    until(async () => /widgets-issue-1: worktree removed/.test(await text(page, "#message")) &&
      !fs.existsSync(path.join(process.env.CODE_DIR, "widgets-issue-1")), "the worktree gone"));
  await shot(page, "desktop-deleted");
  await check("no Content-Security-Policy violation other than xterm's own <style>", page, async () => {
    const v = await page.evaluate(() => window.__csp);
    const bad = v.filter((x) => !/^style-src-elem inline/.test(x));
    if (bad.length) throw new Error(bad.join(", "));
    console.log("# xterm <style> elements refused by the CSP (mirrored into adopted sheets): " + v.length);
  });
  await page.close();
}

async function phone(browser) {
  const ctx = await browser.createBrowserContext();
  const page = await ctx.newPage();
  await watch(page, "phone");
  // The phone uses xterm's DOM renderer, the fallback where WebGL2 is missing.
  await page.evaluateOnNewDocument(() => {
    try {
      localStorage.setItem("agentd.renderer", "dom");
    } catch {
      /* about:blank has no storage */
    }
  });
  await page.setViewport(PHONE);
  // The phone signs in on the login page with the token pasted.
  await page.goto(BASE + "/", { waitUntil: "networkidle2" });
  await check("phone: the login page takes a pasted token and leads to the app", page, async () => {
    if (new URL(page.url()).pathname !== "/login") throw new Error("at " + page.url());
    await page.type("#token", TOKEN);
    await Promise.all([page.waitForNavigation({ waitUntil: "networkidle2" }), page.click("#login button")]);
    if (new URL(page.url()).pathname !== "/") throw new Error("at " + page.url());
  });
  await check("phone: the page does not overflow 390 px", page, async () =>
    page.evaluate(() => document.documentElement.scrollWidth <= 390));
  await createFromForm(page, "acme", "widgets", 2, "terminal");
  await check("phone: the terminal fills the screen, the list is hidden", page, () =>
    until(async () => (await visible(page, "#term-view .term")) && !(await visible(page, "#list-pane")), "the terminal alone"));
  await check("phone: the key bar is shown", page, () => visible(page, "#term-view .keybar"));
  await check("phone: the fake claude's screen is shown", page, () =>
    until(async () => showsReady(await screen(page)), "fake claude ready"));
  await check("phone: the DOM renderer draws the screen, styled under the CSP (adopted sheets)", page, () =>
    until(async () => showsReady(await page.$eval("#term-view .term .xterm-rows", (e) => e.textContent)) &&
      page.evaluate(() => {
        const term = document.querySelector("#term-view .term");
        const span = term.querySelector(".xterm-rows span");
        return term.dataset.renderer === "dom" && document.adoptedStyleSheets.length > 0 && span &&
          getComputedStyle(span).display === "inline-block";
      }), "DOM rows with xterm's generated styles"));
  await check("phone: still no horizontal overflow", page, async () =>
    page.evaluate(() => document.documentElement.scrollWidth <= 390));
  await page.focus("#term-view .xterm-helper-textarea");
  await page.keyboard.type("keybar");
  await page.tap("#term-view .keybar .k-enter");
  await check("phone: the key bar's Enter reaches the pane", page, () =>
    until(() => /fake claude got: keybar/.test(paneText("widgets-2")), "the pane's echo"));
  await shot(page, "phone-terminal");
  await page.tap("#term-view .keybar .k-control-c");
  await check("phone: the key bar's Ctrl-C reaches the pane (the fake claude exits on SIGINT)", page, () =>
    until(async () => {
      const s = (await getSession("widgets-2")).body;
      return s && s.state === "exited" && s.exitStatus === 130;
    }, "widgets-2 exited 130"));
  await check("phone: the page says the agent exited", page, () =>
    until(async () => /not running \(exited/.test(await text(page, "#gone-view")), "the exited notice"));

  await page.tap("#back");
  await createFromForm(page, "acme", "widgets", 3, "structured");
  await check("phone: a structured session opens its conversation", page, () =>
    until(async () => (await visible(page, "#conv-view")) && (await text(page, "#conv-view .conv-state")) === "events: live",
      "the conversation", 60000));
  await check("phone: the session's first prompt is answered", page, () =>
    until(async () => (await count(page, "#conv-view .msg.result")) === 1 &&
      page.$eval("#prompt-text", (e) => !e.disabled), "the first result"));
  await check("phone: the session's bootstrap prompt is the conversation's first message", page, async () => {
    const want = (await getSession("widgets-3")).body.prompt;
    await until(async () => (await turns(page)) === "U:" + want + " | R", "U:" + want + " | R");
  });
  await page.type("#prompt-text", "RUNBASH touch phone-ran");
  await page.tap("#conv-view .send");
  await check("phone: the permission card appears", page, () =>
    until(async () => (await count(page, "#conv-view .msg.permission:not(.resolved)")) === 1, "the card"));
  await check("phone: the conversation does not overflow 390 px", page, async () =>
    page.evaluate(() => document.documentElement.scrollWidth <= 390));
  await shot(page, "phone-conversation");
  await page.type("#conv-view .msg.permission input", "not on a phone");
  await page.tap("#conv-view .msg.permission .deny");
  await check("phone: Deny with a reason resolves the card", page, () =>
    until(async () => /deny/.test(await text(page, "#conv-view .perm-outcome")) &&
      (await count(page, "#conv-view .msg.result")) >= 2, "denied + result"));
  await check("phone: the denied command did not run", page, () =>
    !fs.existsSync(path.join(process.env.CODE_DIR, "widgets-issue-3", "phone-ran")));
  // A link with another identity's token does not replace this sign-in behind its user's back.
  const cookie = async () => ((await page.cookies()).find((k) => k.name === "agentd_token") || {}).value;
  await page.goto(BASE + "/?token=" + VIEWER_TOKEN, { waitUntil: "networkidle2" });
  await check("phone: a link with another identity's token asks first; the sign-in stays", page, async () => {
    const u = new URL(page.url());
    if (u.pathname !== "/login" || u.hash !== "") throw new Error("at " + page.url());
    await until(async () => (await visible(page, "#confirm")) &&
      /signed in as itest\b/.test(await text(page, "#confirm-text")), "the question");
    if ((await cookie()) !== TOKEN) throw new Error("the cookie changed");
  });
  await shot(page, "phone-login-confirm");
  await check("phone: ... keeping it goes back to the app, still signed in", page, async () => {
    await Promise.all([page.waitForNavigation({ waitUntil: "networkidle2" }), page.tap("#confirm-no")]);
    if (new URL(page.url()).pathname !== "/" || (await cookie()) !== TOKEN) throw new Error("at " + page.url());
  });
  await page.goto(BASE + "/?token=" + VIEWER_TOKEN, { waitUntil: "networkidle2" });
  await check("phone: ... confirmed, the link's token signs it in", page, async () => {
    await until(() => visible(page, "#confirm-yes"), "the question");
    await Promise.all([page.waitForNavigation({ waitUntil: "networkidle2" }), page.tap("#confirm-yes")]);
    if (new URL(page.url()).pathname !== "/" || (await cookie()) !== VIEWER_TOKEN) throw new Error("at " + page.url());
    await until(async () => (await text(page, "#whoami")) === "web-viewer", "the viewer's identity");
  });
  await ctx.close();
}

/**
 * The stack stopped under open pages (a laptop and a phone, a permission card pending): the
 * header says offline with no green health, the card's buttons and Send are disabled; once the
 * stack is back the page says live again, the health is green, and the card can be answered.
 */
async function stackStopped(browser) {
  const ctx = await browser.createBrowserContext();
  const page = await ctx.newPage();
  await watch(page, "offline laptop");
  await page.setViewport({ width: 1280, height: 800 });
  await page.goto(BASE + "/?token=" + TOKEN, { waitUntil: "networkidle2" });
  await page.goto(BASE + "/#/s/widgets-3", { waitUntil: "networkidle2" });
  const phone = await ctx.newPage();
  await watch(phone, "offline phone");
  await phone.setViewport(PHONE);
  await phone.goto(BASE + "/#/s/widgets-3", { waitUntil: "networkidle2" });
  const pages = [["laptop", page], ["phone", phone]];
  for (const [name, p] of pages) {
    await check(name + ": the conversation of widgets-3 is live", p, () =>
      until(async () => (await text(p, "#conv-view .conv-state")) === "events: live" &&
        (await text(p, "#live")) === "live", "events: live"));
  }
  // Typing, clicks and screenshots wait for the page's frames: a background tab draws none.
  await page.bringToFront();
  await page.type("#prompt-text", "RUNBASH touch offline-ran");
  await page.click("#conv-view .send");
  const card = "#conv-view .msg.permission:not(.resolved)";
  for (const [name, p] of pages) {
    await check(name + ": the card is pending, Allow and Deny usable, health green", p, () =>
      until(async () => (await count(p, card)) === 1 &&
        (await p.$eval(card, (c) => !c.querySelector(".allow").disabled && !c.querySelector(".deny").disabled)) &&
        (await p.$eval("#health", (e) => e.className)) === "ok", "an answerable card"));
  }

  await stack("stop");
  for (const [name, p] of pages) {
    await check(name + ": stack stopped: the header says offline, with no green health", p, () =>
      until(async () => (await text(p, "#live")) === "offline" &&
        (await p.$eval("#health", (e) => e.className)) !== "ok", "offline, no green"));
    await check(name + ": stack stopped: Allow, Deny and Send are disabled", p, () =>
      until(() => p.$eval("#conv-view", (v) => {
        const c = v.querySelector(".msg.permission:not(.resolved)");
        return c && c.classList.contains("offline") && [...c.querySelectorAll("button, input")].every((b) => b.disabled) &&
          v.querySelector(".send").disabled;
      }), "disabled controls"));
    await p.bringToFront();
    await shot(p, name + "-stack-stopped");
  }

  await stack("start");
  for (const [name, p] of pages) {
    await check(name + ": stack back: live again, health green", p, () =>
      until(async () => (await text(p, "#live")) === "live" &&
        (await p.$eval("#health", (e) => e.className)) === "ok", "live and green", 60000));
    await check(name + ": stack back: the card is answerable again, or shown resolved", p, () =>
      until(() => p.$eval("#conv-view", (v) => {
        const c = v.querySelector(".msg.permission:last-of-type");
        if (!c) return false;
        if (c.classList.contains("resolved")) return true;
        return !c.classList.contains("offline") && !c.querySelector(".allow").disabled;
      }), "an answerable or resolved card", 60000));
    await p.bringToFront();
    await shot(p, name + "-stack-back");
  }
  await page.bringToFront();
  if ((await count(page, card)) === 1) {
    await page.click(card + " .allow");
    await check("stack back: Allow answers the card, and the command runs", page, () =>
      until(() => fs.existsSync(path.join(process.env.CODE_DIR, "widgets-issue-3", "offline-ran")), "offline-ran"));
  } else {
    console.log("# the pending request was withdrawn by the restart: " + (await text(page, "#conv-view .perm-outcome")));
  }
  await ctx.close();
}

async function main() {
  fs.mkdirSync(SHOTS, { recursive: true });
  await withBrowser("the browser scenario runs to its end", async (browser) => {
    await desktop(browser);
    await phone(browser);
    await stackStopped(browser);
  }, { webgl: true });
  const foreign = [...new Set(requests.filter((u) => {
    try {
      const o = new URL(u).origin;
      return !u.startsWith("data:") && o !== ORIGIN && o !== ORIGIN.replace(/^http/, "ws");
    } catch {
      return true;
    }
  }))];
  if (requests.length && !foreign.length) ok("every request of the page went to its own origin (" + requests.length + " requests)");
  else notOk("every request of the page went to its own origin", foreign.join(" ") || "no requests recorded");
  finish();
}

main();
