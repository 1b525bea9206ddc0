// A tool use as a person reads it: Bash as its command, Edit and Write as a diff, Read, Grep and
// their kin as their target, raw JSON only for a tool this file does not know. Used by the
// conversation's tool cards and its permission cards. Everything is text nodes: the input is the
// agent's.
const LINES_MAX = 400; // lines of one diff or file shown; the rest is counted, not drawn
const SUMMARY_MAX = 80;

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = String(text);
  return e;
}

function str(v) {
  return typeof v === "string" ? v : v === undefined || v === null ? "" : String(v);
}

function cut(s, n) {
  return s.length > n ? s.slice(0, n) + "…" : s;
}

/** Lines of text as a diff block: each line marked with sign ("-" or "+"). */
function diffLines(pre, text, sign, budget) {
  const lines = str(text).split("\n");
  let shown = 0;
  for (const line of lines) {
    if (budget.left <= 0) break;
    budget.left--;
    shown++;
    pre.append(el("span", sign === "+" ? "add" : "del", sign + " " + line + "\n"));
  }
  return lines.length - shown;
}

function diffBlock(edits) {
  const pre = el("pre", "tool-diff");
  const budget = { left: LINES_MAX };
  let hidden = 0;
  for (const [i, e] of edits.entries()) {
    if (i > 0) pre.append(el("span", "hunk", "@@\n"));
    if (e.old !== undefined) hidden += diffLines(pre, e.old, "-", budget);
    hidden += diffLines(pre, e.new, "+", budget);
  }
  if (hidden > 0) pre.append(el("span", "muted", "… " + hidden + " more line" + (hidden === 1 ? "" : "s") + "\n"));
  return pre;
}

function target(parts) {
  return parts.filter(Boolean).join(" ");
}

/** A word as a shell would need it written. */
function shellWord(w) {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(w) ? w : "'" + w.replace(/'/g, "'\\''") + "'";
}

/**
 * The command of a tool's input as one line to read: a string as it is; a list of words (the raw
 * input of an ACP agent's shell tool: codex's ["/bin/bash", "-lc", "<script>"]) as the script a
 * shell -c runs, else the words joined. "" when there is none.
 */
function commandText(c) {
  if (typeof c === "string") return c;
  if (!Array.isArray(c) || !c.length || !c.every((w) => typeof w === "string")) return "";
  if (c.length === 3 && /(^|\/)(ba|da|z)?sh$/.test(c[0]) && /^-[a-z]*c$/.test(c[1])) return c[2];
  return c.map(shellWord).join(" ");
}

/** What tool `name` with `input` shows: {summary (one line), body (a Node)}. */
export function toolView(name, input) {
  const i = input && typeof input === "object" ? input : {};
  switch (name) {
    case "Bash": {
      const pre = el("pre", "tool-cmd", "$ " + str(i.command));
      return { summary: cut(str(i.description) || str(i.command), SUMMARY_MAX), body: pre };
    }
    case "Edit":
      return {
        summary: str(i.file_path) + (i.replace_all ? " (every match)" : ""),
        body: diffBlock([{ old: i.old_string, new: i.new_string }]),
      };
    case "MultiEdit": {
      const edits = Array.isArray(i.edits) ? i.edits : [];
      return {
        summary: str(i.file_path) + " (" + edits.length + " edit" + (edits.length === 1 ? "" : "s") + ")",
        body: diffBlock(edits.map((e) => ({ old: e && e.old_string, new: e && e.new_string }))),
      };
    }
    case "Write":
      return { summary: str(i.file_path) + " (new content)", body: diffBlock([{ old: undefined, new: i.content }]) };
    case "Read":
      return {
        summary: target([str(i.file_path), i.offset ? "from line " + i.offset : "", i.limit ? "(" + i.limit + " lines)" : ""]),
        body: el("div", "tool-target", str(i.file_path)),
      };
    case "Grep":
    case "Glob": {
      const where = target([str(i.path), i.glob ? "files " + str(i.glob) : "", i.type ? "type " + str(i.type) : ""]);
      return {
        summary: cut(str(i.pattern) + (where ? " in " + where : ""), SUMMARY_MAX),
        body: el("div", "tool-target", str(i.pattern) + (where ? "  in " + where : "")),
      };
    }
    case "WebFetch":
    case "WebSearch":
      return { summary: cut(str(i.url || i.query), SUMMARY_MAX), body: el("div", "tool-target", str(i.url || i.query)) };
    default: {
      const cmd = commandText(i.command);
      const json = el("pre", "tool-json", JSON.stringify(input, null, 2));
      if (cmd) {
        // A shell command under a tool name this file does not know (another agent's, whose
        // name is the call's title): the command first, the rest of the input folded.
        const body = el("div", "tool-shell");
        const more = el("details", "tool-input");
        more.append(el("summary", "muted", "input"), json);
        body.append(el("pre", "tool-cmd", "$ " + cmd), more);
        return { summary: cut(cmd.split("\n")[0], SUMMARY_MAX), body };
      }
      const v = i.file_path || i.path || i.url || i.pattern || i.description || "";
      // No input to show (gemini's calls carry none, only their title): no "{}" either.
      const empty = !Object.keys(i).length;
      return { summary: cut(str(v), SUMMARY_MAX), body: empty ? el("div", "tool-target") : json };
    }
  }
}
