// The create form's known repositories in Debian's chromium (headless, puppeteer-core), against
// the stack test_repos.sh started: opening "New session" shows GET /repos as chips, the most
// recently active first, and a tap fills owner and name.
// Output: "ok - NAME" or "not ok - NAME<TAB>WHY" (test_repos.sh counts them).
// Environment: BASE_URL, AGENTD_TEST_TOKEN, CHROMIUM.
"use strict";

const BASE = process.env.BASE_URL;
const TOKEN = process.env.AGENTD_TEST_TOKEN;
const { WAIT_MS, ok, check, finish, withBrowser, PHONE } = require("./tap");

async function main() {
  await withBrowser("the browser run ends cleanly", async (browser) => {
    const page = await browser.newPage();
    await page.setViewport(PHONE);
    await page.goto(BASE + "/?token=" + TOKEN, { waitUntil: "networkidle2" });
    await page.waitForSelector("#new-session:not([hidden]) summary", { visible: true, timeout: WAIT_MS });
    await page.click("#new-session summary");
    await check("the create form offers the server's repositories, most recent first", async () => {
      await page.waitForSelector("#known-repos button", { visible: true, timeout: WAIT_MS });
      const names = await page.$$eval("#known-repos button", (bs) => bs.map((b) => b.textContent));
      if (JSON.stringify(names) !== JSON.stringify(["acme/gadgets", "acme/widgets"])) throw new Error(JSON.stringify(names));
      return true;
    });
    await check("a tap on one fills owner and name", async () => {
      await page.click('#known-repos button[data-name="widgets"]');
      const v = await page.evaluate(() => {
        const f = document.getElementById("create").elements;
        return f.namedItem("owner").value + "/" + f.namedItem("name").value;
      });
      if (v !== "acme/widgets") throw new Error("the form holds " + v);
      return true;
    });
  });
  finish();
}

main();
