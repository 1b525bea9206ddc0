// The Changes view of a session: what GET /sessions/<id>/diff says it changed against the merge
// base with the default branch — the files with their +/−, and each file's patch, rendered as
// plain lines (no diff library: a unified diff is lines whose first character says what they
// are). A file's patch is drawn only when it is opened, so a diff of thousands of lines costs
// nothing until someone reads it. app.js refreshes it when the agent's turn ends.
import { api, sessionPath } from "./api.js";

const STATUS_LETTER = { added: "A", modified: "M", deleted: "D", renamed: "R", copied: "C", typechange: "T" };

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

/** The patches of the unified text, in order: each starts at a "diff --git " line. */
function splitPatches(text) {
  const out = [];
  let at = text.startsWith("diff --git ") ? 0 : text.indexOf("\ndiff --git ");
  if (at < 0) return out;
  if (at > 0) at += 1;
  while (at < text.length) {
    const next = text.indexOf("\ndiff --git ", at);
    const end = next < 0 ? text.length : next + 1;
    out.push(text.slice(at, end));
    at = end;
  }
  return out;
}

/** The lines of one patch as a <pre>, each line a span classed by its first character. */
function renderPatch(patch) {
  const pre = el("pre", "patch");
  const lines = patch.replace(/\n$/, "").split("\n");
  let inHunk = false;
  for (const line of lines) {
    let cls = "ctx";
    if (line.startsWith("@@")) {
      cls = "hunk";
      inHunk = true;
    } else if (!inHunk) cls = "meta";
    else if (line[0] === "+") cls = "add";
    else if (line[0] === "-") cls = "del";
    else if (line[0] === "\\") cls = "meta";
    pre.appendChild(el("span", "ln " + cls, line + "\n"));
  }
  return pre;
}

export class ChangesView {
  constructor(section, id) {
    this.section = section;
    this.id = id;
    this.summary = section.querySelector(".changes-summary");
    this.list = section.querySelector(".changes-files");
    this.commits = section.querySelector(".changes-commits");
    this.base = "default"; // or "HEAD": the uncommitted work only
    this.asked = 0;
    this.closed = false;
    this.open = new Set(); // paths whose patch is shown, kept across refreshes
    this.baseSelect = section.querySelector(".changes-base");
    this.onBase = () => {
      this.base = this.baseSelect.value;
      this.refresh();
    };
    this.baseSelect.value = this.base;
    this.baseSelect.addEventListener("change", this.onBase);
    this.refresh();
  }

  dispose() {
    this.closed = true;
    this.baseSelect.removeEventListener("change", this.onBase);
    this.summary.textContent = "";
    this.list.replaceChildren();
    this.commits.hidden = true;
  }

  async refresh() {
    const mine = ++this.asked; // only the latest answer is drawn
    this.section.setAttribute("aria-busy", "true");
    try {
      const q = this.base === "HEAD" ? "?base=HEAD" : "";
      // The commits only matter since the default branch; without them the files still show.
      const [d, c] = await Promise.all([api("GET", sessionPath(this.id, "/diff" + q)),
        this.base === "HEAD" ? null : api("GET", sessionPath(this.id, "/commits")).catch(() => null)]);
      if (this.closed || mine !== this.asked) return;
      this.render(d);
      this.renderCommits(c);
    } catch (e) {
      if (this.closed || mine !== this.asked) return;
      this.summary.textContent = "No changes to show: " + e.message;
      this.summary.className = "changes-summary bad";
      this.list.replaceChildren();
    } finally {
      if (mine === this.asked) this.section.removeAttribute("aria-busy");
    }
  }

  render(d) {
    const t = d.totals || { files: 0, additions: 0, deletions: 0 };
    const base = d.base ? d.base.ref + (d.base.commit ? " " + d.base.commit.slice(0, 7) : "") : "?";
    const parts = [t.files + " file" + (t.files === 1 ? "" : "s") + " changed", "+" + t.additions, "−" + t.deletions,
      "against " + base];
    const cut = d.truncated || {};
    if (cut.files) parts.push(cut.files + " more files not listed");
    if (cut.uncounted) parts.push(cut.uncounted + " files not read (over " + Math.round(d.limits.readBytes / 1048576) + " MB in all)");
    if (cut.diff) parts.push("the diff was cut at " + Math.round(d.limits.diffBytes / 1048576) + " MB");
    this.summary.textContent = parts.join(" · ");
    this.summary.className = "changes-summary" + (cut.files || cut.diff ? " warn" : " muted");
    if (!d.files || !d.files.length) {
      this.list.replaceChildren(el("li", "muted", this.base === "HEAD" ? "No uncommitted changes." : "No changes."));
      return;
    }
    const patches = splitPatches(d.diff || "");
    let next = 0;
    const items = [];
    for (const f of d.files) {
      const patch = f.inDiff ? patches[next++] : null;
      items.push(this.renderFile(f, patch));
    }
    this.list.replaceChildren(...items);
  }

  /** The branch's commits (GET /sessions/<id>/commits), folded under a line that counts them. */
  renderCommits(c) {
    const list = c && Array.isArray(c.commits) ? c.commits : [];
    this.commits.hidden = !list.length;
    if (!list.length) return;
    const n = list.length + (c.truncated ? "+" : "");
    this.commits.querySelector("summary").textContent = n + " commit" + (list.length === 1 ? "" : "s") +
      " since " + (c.base ? c.base.ref : "the default branch");
    this.commits.querySelector("ol").replaceChildren(...list.map((k) => {
      const li = el("li", "commit");
      li.append(el("code", "cid", k.id.slice(0, 7)), " ", el("span", "csubject", k.subject),
        el("span", "muted cmeta", " · " + (k.author ? k.author.name : "") + " · " + (k.time || "").replace("T", " ").replace(/:\d\dZ$/, " UTC")));
      return li;
    }));
  }

  renderFile(f, patch) {
    const li = el("li", "file");
    const det = el("details");
    const sum = el("summary");
    const status = el("span", "fstatus " + f.status, STATUS_LETTER[f.status] || "?");
    status.title = f.status;
    const path = el("span", "fpath", f.oldPath ? f.oldPath + " → " + f.path : f.path);
    const stats = el("span", "fstats");
    if (f.counted === false) stats.append(el("span", "muted", "not read"));
    else if (f.binary) stats.append(el("span", "muted", f.tooLarge ? "too large" : "binary"));
    else stats.append(el("span", "add", "+" + f.additions), " ", el("span", "del", "−" + f.deletions));
    sum.append(status, path, stats);
    det.appendChild(sum);
    if (this.open.has(f.path)) det.open = true;
    const fill = () => {
      if (det.querySelector(".patch, .nopatch")) return;
      if (patch) det.appendChild(renderPatch(patch));
      else det.appendChild(el("p", "nopatch muted", f.counted === false
        ? "Not read: the files before it used up what one answer reads."
        : f.tooLarge
        ? "Over the size limit: not read, not diffed."
        : "Left out of the diff (over its size limit)."));
    };
    det.addEventListener("toggle", () => {
      if (det.open) {
        this.open.add(f.path);
        fill();
      } else this.open.delete(f.path);
    });
    if (det.open) fill();
    li.appendChild(det);
    return li;
  }
}
