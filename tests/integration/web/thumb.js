// The web UI made for a thumb, in Debian's chromium (headless, puppeteer-core), against the stack
// test_web_thumb.sh started: an answer rendered as Markdown with the agent's HTML made inert,
// tool cards (Edit and Write as a diff, Bash as its command, Read and Grep as their target),
// search over sessions, each session's cost in the list, the next waiting session by key and
// button, a failed session explained with its actions, the form reset after Create, the empty
// list's words, the dark theme; on a 390x844 phone the key bar's keys (44 px; Shift+Tab, PgUp,
// PgDn, Esc, the arrows and Paste reach the pane), the font size remembered, no Ctrl+Enter hint,
// Delete apart from the title and confirmed, the list's cost whole at the row's edge; at 844x390
// the phone layout kept, and all that too; a session over its budget says so above its prompt
// and a prompt sent anyway is refused in words (390x844 and 1280x800). No page overflows sideways.
// Output: "ok - NAME" or "not ok - NAME<TAB>WHY" (test_web_thumb.sh counts them).
// Environment: BASE_URL, AGENTD_TEST_TOKEN, SHOTS, TMUX_SOCK, CHROMIUM.
"use strict";
const { execFileSync } = require("child_process");
const { shot, check, until, finish, withBrowser, PHONE } = require("./tap");

const BASE = process.env.BASE_URL;
const TOKEN = process.env.AGENTD_TEST_TOKEN;
const AUTH = { Authorization: "Bearer " + TOKEN, "Content-Type": "application/json" };

const paneText = (t) => execFileSync("tmux", ["-S", process.env.TMUX_SOCK, "capture-pane", "-p", "-S", "-500", "-t", "=" + t + ":"],
  { encoding: "utf8" });
const text = (page, sel) => page.$eval(sel, (e) => e.textContent).catch(() => "");
const count = (page, sel) => page.$$eval(sel, (l) => l.length);
const visible = (page, sel) => page.$eval(sel, (e) => !!(e.offsetWidth || e.offsetHeight)).catch(() => false);
const noOverflow = (page) => page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);

/** The detail head's Delete: the controls on its row, left to right, never put it right after the
 * back button, the title or its badges (a slip of the thumb there deletes a session). */
async function deleteApart(page) {
  const r = await page.evaluate(() => {
    const del = document.getElementById("d-delete");
    const d = del.getBoundingClientRect();
    const row = [...document.querySelectorAll(".detail-head > *")].filter((e) => {
      const b = e.getBoundingClientRect();
      return b.width > 0 && b.top < d.bottom && b.bottom > d.top;
    }).sort((a, b) => a.getBoundingClientRect().left - b.getBoundingClientRect().left);
    const i = row.indexOf(del);
    return { row: row.map((e) => e.id || e.className), before: i > 0 ? row[i - 1].id || row[i - 1].className : "" };
  });
  if (["back", "d-title", "d-badges"].includes(r.before)) throw new Error(JSON.stringify(r));
  return true;
}

/** widgets-1's cost: one line, its right edge at its row's (less the padding), within the
 * viewport; and the page does not overflow. */
async function costFits(page) {
  const r = await until(() => page.evaluate(() => {
    const c = document.querySelector('#sessions li[data-id="widgets-1"] .cost');
    if (!c) return null;
    const b = c.getBoundingClientRect();
    const row = c.closest(".line1").getBoundingClientRect();
    const lh = parseFloat(getComputedStyle(c).lineHeight) || 20;
    return { text: c.textContent, right: b.right, rowRight: row.right, h: b.height, lh, vw: window.innerWidth };
  }), "widgets-1's cost");
  if (r.text !== "<$0.01" || r.h > r.lh * 1.5 || Math.abs(r.right - r.rowRight) > 1 || r.right > r.vw)
    throw new Error(JSON.stringify(r));
  return noOverflow(page);
}

async function rest(method, path, body) {
  const r = await fetch(BASE + path, { method, headers: AUTH, body: body ? JSON.stringify(body) : undefined });
  return { status: r.status, body: await r.json().catch(() => null) };
}

async function signIn(page) {
  page.on("dialog", (d) => d.accept()); // the delete's confirm
  await page.goto(BASE + "/?token=" + TOKEN, { waitUntil: "networkidle2" });
  await until(async () => (await text(page, "#live")) === "live", "the live badge");
}

async function create(page, owner, name, issue, mode, prompt) {
  await page.$eval("#new-session", (d) => (d.open = true));
  for (const [field, v] of [["owner", owner], ["name", name], ["issue", String(issue)]]) {
    await page.$eval(`#create input[name=${field}]`, (e) => (e.value = ""));
    await page.type(`#create input[name=${field}]`, v);
  }
  await page.select("#create select[name=mode]", mode);
  if (prompt) await page.type("#create textarea[name=prompt]", prompt);
  await page.click("#create button[type=submit]");
}

async function laptop(browser) {
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 800 });
  await signIn(page);
  await check("the empty list says how to start a session", page, () =>
    until(async () => /No sessions yet.*New session.*issue number/.test(await text(page, "#sessions")), "the empty list's words"));
  await check("the prompt's Ctrl+Enter hint is shown where there is a keyboard", page, async () =>
    /Ctrl\+Enter/.test(await page.$eval("#prompt-text", (e) => e.placeholder)));

  await create(page, "acme", "widgets", 1, "structured", "MARKDOWN please");
  await check("the create form is empty again after Create", page, () =>
    until(async () => (await page.$$eval("#create input, #create textarea", (l) => l.map((e) => e.value).join(""))) === "",
      "an empty form"));
  const md = "#conv-view .msg.assistant.md";
  await check("the answer renders as Markdown (heading, bold, list, code block)", page, () =>
    until(async () => (await text(page, md + " h2")) === "Summary" && (await text(page, md + " strong")) === "two" &&
      (await count(page, md + " li")) === 2 && /x = 10/.test(await text(page, md + " pre code")), "the rendered answer"));
  await shot(page, "laptop-markdown");
  await check("the agent's HTML is inert: no image, script or handler, nothing ran", page, async () => {
    const r = await page.evaluate((sel) => {
      const m = document.querySelector(sel);
      return {
        img: m.querySelectorAll("img, script, style, iframe").length,
        handlers: [...m.querySelectorAll("*")].filter((e) => [...e.attributes].some((a) => /^on/i.test(a.name))).length,
        pwned: window.__pwned === undefined ? "no" : String(window.__pwned),
        bold: (m.querySelector("b") || {}).textContent,
      };
    }, md);
    if (r.img || r.handlers || r.pwned !== "no" || r.bold !== "bold") throw new Error(JSON.stringify(r));
  });
  await check("links open outside the app and only to http(s): a javascript: link has no target", page, async () => {
    const links = await page.$$eval(md + " a", (l) => l.map((a) => [a.textContent, a.getAttribute("href"), a.target, a.rel]));
    const docs = links.find((x) => x[0] === "the docs");
    const bad = links.find((x) => x[0] === "bad");
    if (!docs || docs[1] !== "https://example.com/docs" || docs[2] !== "_blank" || !/noopener/.test(docs[3]))
      throw new Error(JSON.stringify(links));
    if (bad && bad[1] !== null) throw new Error("javascript: link kept: " + JSON.stringify(bad));
  });
  await check("a long code line scrolls inside its block, the page does not widen", page, async () => {
    const r = await page.$eval(md + " pre", (p) => [p.scrollWidth, p.clientWidth]);
    if (!(r[0] > r[1])) throw new Error("pre " + r.join(" <= "));
    return noOverflow(page);
  });
  await check("tool cards: Edit as a diff, Write as added lines, Bash as its command, Read and Grep as their target", page, async () => {
    const cards = await until(async () => {
      const c = await page.$$eval("#conv-view .msg.tool", (l) => l.map((li) => ({
        summary: li.querySelector("summary").textContent,
        del: [...li.querySelectorAll(".tool-diff .del")].map((e) => e.textContent.trimEnd()),
        add: [...li.querySelectorAll(".tool-diff .add")].map((e) => e.textContent.trimEnd()),
        cmd: (li.querySelector(".tool-cmd") || {}).textContent || "",
        json: li.querySelectorAll(".tool-json").length,
      })));
      return c.length === 5 ? c : null;
    }, "five tool cards");
    const [edit, write, read, grep, bash] = cards;
    const want = [
      [edit.summary, "Edit src/app.py"],
      [edit.del.join("|"), "- x = 1|- y = 2"],
      [edit.add.join("|"), "+ x = 10|+ y = 2"],
      [write.summary, "Write NOTES.md (new content)"],
      [write.add.join("|") + "/" + write.del.length, "+ first|+ second/0"],
      [read.summary, "Read README.md from line 10 (20 lines)"],
      [grep.summary, "Grep TODO in src files *.py"],
      [bash.summary, "Bash Run the tests"],
      [bash.cmd, "$ make test"],
      [String(cards.reduce((n, c) => n + c.json, 0)), "0"],
    ];
    const wrong = want.filter(([got, exp]) => got !== exp);
    if (wrong.length) throw new Error(JSON.stringify(wrong));
  });

  await check("the list shows what a session cost once its agent reported it (widgets-1's turn: under a cent)", page, () =>
    until(async () => (await text(page, '#sessions li[data-id="widgets-1"] .cost')) === "<$0.01", "<$0.01 on widgets-1's row"));
  await check("the cost reads as dollars and cents; nothing while unknown or zero", page, async () => {
    const got = await page.evaluate(async () => {
      const { costText } = await import("/assets/js/live.js");
      return [{ usd: 0.42 }, { usd: 3.5 }, { usd: 0.004 }, { usd: 0 }, undefined, { usd: "1" }]
        .map((cost) => costText({ id: "x", cost })).join("|");
    });
    if (got !== "$0.42|$3.50|<$0.01|||") throw new Error(got);
  });
  await check("a budget shows beside the cost, and one under a cent is not shown as none", page, async () => {
    const got = await page.evaluate(async () => {
      const { costText } = await import("/assets/js/live.js");
      return [[{ usd: 0.42 }, 1], [undefined, 2.5], [{ usd: 0.0002 }, 0.00015], [{ usd: 0.42 }, 0], [{ usd: 0.42 }, "1"]]
        .map(([cost, budgetUsd]) => costText({ id: "x", cost, budgetUsd })).join("|");
    });
    if (got !== "$0.42 / $1.00|$0 / $2.50|<$0.01 / $0.00015|$0.42|$0.42") throw new Error(got);
  });

  // A second session that waits for a person, and a third in another repository.
  await rest("POST", "/sessions", { repo: { owner: "acme", name: "widgets" }, issue: 2, mode: "structured", prompt: "RUNBASH true" });
  await rest("POST", "/sessions", { repo: { owner: "acme", name: "gadgets" }, issue: 3 });
  await check("the header offers the next waiting session", page, () =>
    until(async () => (await visible(page, "#next-waiting")) && /\(1\)/.test(await text(page, "#next-waiting")), "Next waiting (1)"));
  await page.goto(BASE + "/#/", { waitUntil: "networkidle2" });
  await until(async () => (await count(page, "#sessions li.session")) === 3, "three sessions");
  await check("a session that cost nothing yet shows no cost", page, async () =>
    (await count(page, '#sessions li[data-id="gadgets-3"] .cost')) === 0);
  await check("the key w opens the session that waits", page, async () => {
    await page.keyboard.press("w");
    return until(() => page.evaluate(() => location.hash === "#/s/widgets-2"), "#/s/widgets-2");
  });
  await check("search narrows the list: by repository and issue, by state words, and says when nothing matches", page, async () => {
    const shown = () => page.$$eval("#sessions li.session", (l) => l.map((e) => e.dataset.id).sort().join(" "));
    await page.type("#search", "widgets#2");
    await until(async () => (await shown()) === "widgets-2", "widgets-2 alone");
    await page.$eval("#search", (e) => (e.value = ""));
    await page.type("#search", "gadgets");
    await until(async () => (await shown()) === "gadgets-3", "gadgets-3 alone");
    await page.$eval("#search", (e) => (e.value = ""));
    await page.type("#search", "waiting");
    await until(async () => (await shown()) === "widgets-2", "the waiting one");
    await page.$eval("#search", (e) => (e.value = ""));
    await page.type("#search", "nothing-like-this");
    await until(async () => /no session matches/.test(await text(page, "#sessions")), "no match");
    await page.$eval("#search", (e) => (e.value = ""));
    await page.type("#search", " ");
    return until(async () => (await count(page, "#sessions li.session")) === 3, "all three again");
  });

  // A repository that does not exist: the session fails, and the page says what to do.
  await create(page, "acme", "nope", 4, "terminal");
  await check("a failed session says what failed in words, with its raw error and Start again / Delete", page, () =>
    until(async () => /was not found/.test(await text(page, "#gone-view .explain")) &&
      (await count(page, "#gone-view .raw-error pre")) === 1 &&
      (await count(page, "#gone-view .gone-actions button")) === 2, "the explained failure"));
  await shot(page, "laptop-failed");
  await check("its row in the list says it in words too, the raw error only on hover", page, async () => {
    const r = await page.$eval('#sessions li[data-id="nope-4"] .line2.bad', (e) => [e.textContent, e.title]);
    if (!/^The repository acme\/nope was not found .*\.$/.test(r[0]) || /file:|libgit2|failed to resolve/.test(r[0]) ||
      !/clone of .* failed/.test(r[1])) throw new Error(JSON.stringify(r));
  });
  await check("its Delete removes it", page, async () => {
    await page.click("#gone-view .gone-actions .danger");
    // Gone on the server, and the page has taken the answer (it then shows the list).
    await until(async () => (await rest("GET", "/sessions/nope-4")).status === 404 &&
      (await page.evaluate(() => location.hash)) === "#/" && (await count(page, '#sessions li[data-id="nope-4"]')) === 0,
      "nope-4 gone, the page back on the list");
  });

  await check("the dark theme follows the device (prefers-color-scheme)", page, async () => {
    const lum = () => page.evaluate(() => {
      const m = getComputedStyle(document.body).backgroundColor.match(/\d+/g).map(Number);
      return (0.2126 * m[0] + 0.7152 * m[1] + 0.0722 * m[2]) / 255;
    });
    await page.emulateMediaFeatures([{ name: "prefers-color-scheme", value: "dark" }]);
    const dark = await lum();
    await page.goto(BASE + "/#/s/widgets-1", { waitUntil: "networkidle2" });
    await until(async () => (await count(page, "#conv-view .msg.assistant.md")) === 1, "the conversation");
    await shot(page, "laptop-dark");
    await page.emulateMediaFeatures([{ name: "prefers-color-scheme", value: "light" }]);
    const light = await lum();
    if (!(dark < 0.2 && light > 0.8)) throw new Error("background luminance dark " + dark + ", light " + light);
  });
  await check("the laptop page does not overflow", page, () => noOverflow(page));
  await page.close();
}

async function phone(browser) {
  const ctx = await browser.createBrowserContext();
  const page = await ctx.newPage();
  await page.evaluateOnNewDocument(() => {
    try {
      localStorage.setItem("agentd.renderer", "dom");
    } catch {
      /* about:blank has no storage */
    }
  });
  await page.setViewport(PHONE);
  await signIn(page);
  await check("phone: no Ctrl+Enter hint where there is no Ctrl key", page, async () =>
    !/Ctrl/.test(await page.$eval("#prompt-text", (e) => e.placeholder)));
  await page.goto(BASE + "/#/s/gadgets-3", { waitUntil: "networkidle2" });
  await until(() => page.$eval("#term-view .term", (e) => e.dataset.connected === "1"), "the terminal", 30000);
  await until(() => /fake claude ready/.test(paneText("gadgets-3")), "the fake claude");
  await shot(page, "phone-terminal");
  await check("phone: every key of the key bar is at least 44 px each way", page, async () => {
    const small = await page.$$eval("#term-view .keybar .key", (l) => l.map((b) => {
      const r = b.getBoundingClientRect();
      return [b.textContent, Math.round(r.width), Math.round(r.height)];
    }).filter(([, w, h]) => w < 44 || h < 44));
    if (small.length) throw new Error(JSON.stringify(small));
  });
  await check("phone: Shift+Tab, PgUp and PgDn from the key bar reach the pane", page, async () => {
    for (const k of ["k-shift-tab", "k-page-up", "k-page-down", "k-enter"]) await page.tap("#term-view .keybar ." + k);
    // The pane's tty echoes control bytes as ^[ (echoctl): the exact sequences arrived.
    return until(() => /\^\[\[Z\^\[\[5~\^\[\[6~/.test(paneText("gadgets-3")), "^[[Z^[[5~^[[6~ in the pane");
  });
  await check("phone: Esc and the arrows from the key bar reach the pane", page, async () => {
    for (const k of ["k-escape", "k-left", "k-up", "k-down", "k-right", "k-enter"]) await page.tap("#term-view .keybar ." + k);
    return until(() => /\^\[\^\[\[D\^\[\[A\^\[\[B\^\[\[C/.test(paneText("gadgets-3")), "^[^[[D^[[A^[[B^[[C in the pane");
  });
  await check("phone: Paste from the key bar types the clipboard's text into the pane", page, async () => {
    await ctx.overridePermissions(BASE, ["clipboard-read", "clipboard-sanitized-write"]);
    await page.evaluate(() => navigator.clipboard.writeText("pasted-from-phone"));
    await page.tap("#term-view .keybar .paste");
    await page.tap("#term-view .keybar .k-enter");
    return until(() => /pasted-from-phone/.test(paneText("gadgets-3")), "the clipboard's text in the pane");
  });
  await check("phone: A+ makes the terminal's text larger, and the size is kept after a reload", page, async () => {
    const size = () => page.$eval("#term-view .term", (e) => e.xterm.options.fontSize);
    const before = await size();
    await page.tap("#term-view .keybar .font-up");
    await page.tap("#term-view .keybar .font-up");
    await until(async () => (await size()) === before + 2, "font size " + (before + 2));
    await page.reload({ waitUntil: "networkidle2" });
    await until(async () => (await size().catch(() => 0)) === before + 2, "font size " + (before + 2) + " after the reload");
    await page.tap("#term-view .keybar .font-down");
    await page.tap("#term-view .keybar .font-down");
    return until(async () => (await size()) === before, "font size back to " + before);
  });
  await check("phone: the terminal page does not overflow 390 px", page, () => noOverflow(page));
  await check("phone: Delete does not sit beside the title", page, () => deleteApart(page));
  await check("phone: Delete asks first; dismissed, the session stays", page, async () => {
    let asked = "";
    page.removeAllListeners("dialog");
    page.once("dialog", (d) => {
      asked = d.message();
      d.dismiss();
    });
    await page.tap("#d-delete");
    await until(() => asked, "the confirmation");
    page.on("dialog", (d) => d.accept());
    if (!/^Delete session gadgets-3\?/.test(asked)) throw new Error("asked: " + asked);
    const r = await rest("GET", "/sessions/gadgets-3");
    if (r.status !== 200) throw new Error("GET /sessions/gadgets-3: " + r.status);
    return (await page.evaluate(() => location.hash)) === "#/s/gadgets-3";
  });
  await page.goto(BASE + "/#/", { waitUntil: "networkidle2" });
  await check("phone: the list's search and rows fit; nothing overflows", page, async () => {
    await until(async () => (await count(page, "#sessions li.session")) === 3, "three sessions");
    await shot(page, "phone-list");
    const h = await page.$eval("#search", (e) => e.getBoundingClientRect().height);
    if (h < 44) throw new Error("search field " + h + " px high");
    return noOverflow(page);
  });
  await check("phone: the cost sits whole at its row's right edge, inside the screen", page, () => costFits(page));
  await page.setViewport({ width: 844, height: 390, isMobile: true, hasTouch: true, deviceScaleFactor: 2 });
  await page.goto(BASE + "/#/s/gadgets-3", { waitUntil: "networkidle2" });
  await check("landscape phone (844x390): the phone layout is kept (one pane, the key bar)", page, async () => {
    await until(() => visible(page, "#term-view .keybar"), "the key bar");
    await shot(page, "phone-landscape");
    if (await visible(page, "#list-pane")) throw new Error("the list is shown beside the terminal");
    return noOverflow(page);
  });
  await check("landscape phone: no Ctrl+Enter hint, and Delete not beside the title", page, async () =>
    !/Ctrl/.test(await page.$eval("#prompt-text", (e) => e.placeholder)) && deleteApart(page));
  await page.goto(BASE + "/#/", { waitUntil: "networkidle2" });
  await check("landscape phone (844x390): the list's cost fits too", page, async () => {
    await until(async () => (await count(page, "#sessions li.session")) === 3, "three sessions");
    await shot(page, "phone-landscape-list");
    return costFits(page);
  });
  // A session past its budget (one turn of the fake costs $0.0001): its row says so.
  await rest("POST", "/sessions", { repo: { owner: "acme", name: "widgets" }, issue: 9, mode: "structured",
    prompt: "hello", budgetUsd: 0.00005 });
  await check("a session over its budget: the row shows cost / budget, marked over", page, () =>
    until(async () => (await text(page, '#sessions li[data-id="widgets-9"] .cost.over')) === "<$0.01 / $0.000050",
      "<$0.01 / $0.000050, marked over, on widgets-9's row"));
  // Its view says so where the prompt is typed, and a prompt sent anyway is refused in words.
  for (const [w, h, mobile] of [[390, 844, true], [1280, 800, false]]) {
    await page.setViewport({ width: w, height: h, isMobile: mobile, hasTouch: mobile, deviceScaleFactor: mobile ? 2 : 1 });
    await page.goto(BASE + "/#/s/widgets-9", { waitUntil: "networkidle2" });
    await check(`${w}x${h}: an over-budget session says so above its prompt, with cost / budget`, page, () =>
      until(async () => (await visible(page, "#conv-view .budget-note")) &&
        (await text(page, "#conv-view .budget-note")) === "Over its budget (<$0.01 / $0.000050): new prompts are refused.",
        "the budget note above the prompt"));
    await check(`${w}x${h}: the session's view shows the budget beside the cost`, page, () =>
      until(async () => (await text(page, "#d-info")).includes("cost <$0.01 / $0.000050 (over budget"), "cost / budget in the view"));
    await until(() => page.$eval("#conv-view .send", (b) => !b.disabled), "Send enabled (the turn over)", 30000);
    await page.type("#prompt-text", "one more");
    await page.click("#conv-view .send");
    await check(`${w}x${h}: a prompt past the budget is refused in words beside the prompt, not as JSON`, page, async () => {
      const note = await until(async () => {
        const t = await text(page, "#conv-view .budget-note");
        return /^Not sent/.test(t) ? t : null;
      }, "the refusal beside the prompt");
      if (!/over its budget \(spent \$0\.0001\d* of \$0\.000050\)/.test(note) || /[{}"]/.test(note)) throw new Error(note);
      await shot(page, `budget-${w}x${h}`);
      return noOverflow(page);
    });
  }
  await ctx.close();
}

async function main() {
  await withBrowser("the browser scenario runs to its end", async (browser) => {
    await laptop(browser);
    await phone(browser);
  }, { webgl: true });
  finish();
}

main();
