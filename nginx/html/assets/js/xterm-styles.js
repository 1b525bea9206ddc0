// xterm.js writes some of its CSS into <style> elements it creates (the scrollbar's colours, the
// DOM renderer's cell sizes and palette). Our Content-Security-Policy has no 'unsafe-inline', so
// the browser ignores those; this mirrors each of them into a constructed stylesheet
// (document.adoptedStyleSheets), which the policy allows, and keeps it in step as xterm rewrites it.

/** Watches host; answers a function that stops watching and drops the mirrored sheets. */
export function adoptStyles(host) {
  const sheets = new Map(); // <style> element -> CSSStyleSheet
  const sync = () => {
    const seen = new Set();
    for (const el of host.querySelectorAll("style")) {
      seen.add(el);
      let sheet = sheets.get(el);
      if (!sheet) {
        sheet = new CSSStyleSheet();
        sheets.set(el, sheet);
        document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
      }
      if (sheet.agentdText !== el.textContent) {
        sheet.agentdText = el.textContent;
        try {
          sheet.replaceSync(el.textContent);
        } catch {
          /* not CSS: leave the sheet empty */
        }
      }
    }
    for (const [el, sheet] of sheets) {
      if (seen.has(el)) continue;
      sheets.delete(el);
      document.adoptedStyleSheets = document.adoptedStyleSheets.filter((s) => s !== sheet);
    }
  };
  const mo = new MutationObserver(sync);
  mo.observe(host, { childList: true, subtree: true, characterData: true });
  sync();
  return () => {
    mo.disconnect();
    const drop = new Set(sheets.values());
    document.adoptedStyleSheets = document.adoptedStyleSheets.filter((s) => !drop.has(s));
    sheets.clear();
  };
}
