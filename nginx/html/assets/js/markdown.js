// An agent's answer as Markdown: marked parses it, DOMPurify keeps only the tags below, and the
// result is a fragment of inert nodes. The text is the agent's, and the agent is hostile: no
// script, no style, no form, no image (an <img> would make the page fetch an address of the
// agent's choosing), and links only to http(s) and mailto, opened outside the app.
import { Marked } from "../vendor/marked.esm.js";
import DOMPurify from "../vendor/purify.esm.js";

const TEXT_MAX = 200000; // characters rendered as Markdown; a longer answer is shown as text

const ALLOWED_TAGS = ["a", "b", "blockquote", "br", "code", "del", "em", "h1", "h2", "h3", "h4", "h5",
  "h6", "hr", "i", "li", "ol", "p", "pre", "s", "strong", "table", "tbody", "td", "th", "thead", "tr",
  "ul"];
const ALLOWED_ATTR = ["href", "title", "align"];
const SAFE_LINK = /^(https?:|mailto:)/i;

const marked = new Marked({ gfm: true, breaks: false, async: false });
const purify = DOMPurify(window);
purify.addHook("afterSanitizeAttributes", (node) => {
  if (node.nodeName !== "A") return;
  const href = node.getAttribute("href") || "";
  if (!SAFE_LINK.test(href)) {
    node.removeAttribute("href");
    return;
  }
  node.setAttribute("target", "_blank");
  node.setAttribute("rel", "noopener noreferrer");
});

/** The DOM of text rendered as Markdown, sanitized (a DocumentFragment). */
export function renderMarkdown(text) {
  const s = String(text || "");
  if (s.length > TEXT_MAX) {
    const pre = document.createElement("pre");
    pre.textContent = s;
    const f = document.createDocumentFragment();
    f.append(pre);
    return f;
  }
  return purify.sanitize(marked.parse(s), {
    ALLOWED_TAGS,
    ALLOWED_ATTR,
    ALLOW_DATA_ATTR: false,
    RETURN_DOM_FRAGMENT: true,
  });
}
