// The page: the live session list (left, or the whole screen on a phone), and the selected
// session (right): its terminal or, in structured mode, its conversation. The selection lives in
// the URL's fragment (#/s/<id>) so reload, back and a notification's click all land on it.
// A read-only identity (GET /whoami says role "viewer") gets no control that would fail: the
// elements marked .needs-admin are hidden (app.css) until the role is known to be admin.
import { api, ApiError, sessionPath } from "./api.js";
import { Live, costText, sortSessions } from "./live.js";
import { TerminalView, KEYS } from "./terminal.js";
import { ConversationView } from "./conversation.js";
import { Notifier } from "./notify.js";
import { pushSupported, setupDevices, setupPairing } from "./devices.js";
import { ChangesView } from "./changes.js";
import { EV } from "./events.js";

const $ = (id) => document.getElementById(id);
const RUNNING = new Set(["creating", "running", "attached"]);
const AGENT_KEY = "agentd.agent"; // localStorage: the agent the create form last asked for

const live = new Live();
const notifier = new Notifier();
let selected = null; // session id shown on the right
let view = null; // {key, kind: "terminal"|"conversation", obj}
let busyMode = false;
let whoami = null; // GET /whoami's answer, once known
let busyPr = false; // a POST /sessions/<id>/pr is under way
let showChanges = false; // the Changes view stands in for the terminal or conversation
let changes = null; // its ChangesView while shown
let changesActivity = null; // the selected session's activity when the view last looked
const isAdmin = () => !!whoami && whoami.role === "admin";
const WHOAMI_RETRY_MS = 3000;

function say(text, ok) {
  const m = $("message");
  m.textContent = text;
  m.className = text ? (ok ? "ok" : "bad") : "";
}

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

function ago(iso) {
  if (!iso) return "";
  const s = Math.round((Date.now() - Date.parse(iso)) / 1000);
  if (!Number.isFinite(s)) return "";
  if (s < 60) return Math.max(s, 0) + " s ago";
  if (s < 3600) return Math.round(s / 60) + " min ago";
  if (s < 86400) return Math.round(s / 3600) + " h ago";
  return Math.round(s / 86400) + " d ago";
}

function repoOf(s) {
  return s.repo ? s.repo.owner + "/" + s.repo.name : "";
}

/** The badges of a session: its state when that says more than running, and its activity. */
function badges(s) {
  const out = [];
  if (s.state === "failed") out.push(el("span", "badge failed", "failed"));
  else if (s.state && !RUNNING.has(s.state) && s.state !== "exited") out.push(el("span", "badge state", s.state));
  else if (s.state === "creating") out.push(el("span", "badge state", "creating"));
  // No agent runs yet while creating: its stored activity (idle) would say one waits for a prompt.
  if (s.activity && s.state !== "failed" && s.state !== "creating") out.push(el("span", "badge " + s.activity, s.activity));
  // The pull request (POST /sessions/<id>/pr) and its checks, as agentd-api's poller last saw them.
  if (s.pr) {
    out.push(el("span", "badge pr-" + s.pr.state, "PR #" + s.pr.number + " " + s.pr.state));
    const c = s.pr.checks && s.pr.checks.state;
    if (c && c !== "none") out.push(el("span", "badge ci-" + c, "CI " + c));
  }
  return out;
}

/** The detail's pull-request button and link: "Pull request" opens one, then the link shows it. */
function renderPr(s) {
  const b = $("d-pr");
  const a = $("d-pr-link");
  b.hidden = !!s.pr;
  b.disabled = busyPr;
  b.textContent = busyPr ? "pushing…" : "Pull request";
  a.hidden = !s.pr;
  if (!s.pr) return;
  const failing = (s.pr.checks && s.pr.checks.failing) || [];
  a.href = s.pr.url;
  a.textContent = repoOf(s) + "#" + s.pr.number + " (" + s.pr.state +
    (s.pr.checks && s.pr.checks.state !== "none" ? ", CI " + s.pr.checks.state : "") +
    (failing.length ? ": " + failing.join(", ") : "") + ")" + (s.finished ? " · finished" : "");
}

async function openPr() {
  if (!isAdmin() || busyPr) return;
  const id = selected;
  busyPr = true;
  renderDetail();
  try {
    const answer = await api("POST", sessionPath(id, "/pr"), {});
    say(id + ": pull request #" + answer.pr.number + " " + answer.pr.state, true);
    live.upsert(answer);
  } catch (e) {
    say(id + ": no pull request: " + e.message, false);
  } finally {
    busyPr = false;
    renderDetail();
  }
}

// ---- the list ------------------------------------------------------------------------------

function renderList() {
  const filter = $("repo-filter");
  const repos = [...new Set([...live.sessions.values()].map(repoOf))].filter(Boolean).sort();
  const want = filter.value;
  filter.replaceChildren(el("option", "", "all"));
  filter.firstChild.value = "";
  for (const r of repos) {
    const o = el("option", "", r);
    o.value = r;
    filter.appendChild(o);
  }
  filter.value = repos.includes(want) ? want : "";

  const ul = $("sessions");
  ul.replaceChildren();
  const words = $("search").value.trim().toLowerCase().split(/\s+/).filter(Boolean);
  const list = sortSessions([...live.sessions.values()].filter((s) => (!filter.value || repoOf(s) === filter.value) &&
    words.every((w) => searchText(s).includes(w))));
  if (!list.length) {
    ul.appendChild(el("li", "muted empty", !live.sessions.size ? emptyText()
      : words.length ? "no session matches “" + $("search").value.trim() + "”" : "no session of this repository"));
    return;
  }
  for (const s of list) {
    const li = el("li", "session" + (s.id === selected ? " selected" : "") + (s.activity === "waiting" ? " waiting" : ""));
    li.dataset.id = s.id;
    const a = el("a", "row");
    a.href = "#/s/" + encodeURIComponent(s.id);
    if (s.id === selected) a.setAttribute("aria-current", "page");
    const line1 = el("div", "line1");
    line1.append(el("span", "sid", s.id), ...badges(s));
    const cost = costText(s);
    if (cost) {
      const c = el("span", "cost" + (s.overBudget ? " over" : ""), cost);
      c.title = s.overBudget ? "over its budget: new prompts are refused"
        : s.budgetUsd ? "what the agent cost so far, of its budget" : "what the agent cost so far";
      line1.appendChild(c);
    }
    const line2 = el("div", "line2 muted");
    line2.textContent = [repoOf(s) + "#" + s.issue, s.agent || "claude", s.mode, (s.clients || 0) + " client" + (s.clients === 1 ? "" : "s"),
      ago(s.activityAt || s.lastActivity)].filter(Boolean).join(" · ");
    a.append(line1, line2);
    if (s.state === "failed" && s.error) {
      // What to do, in words (its first sentence); libgit2's raw text on hover and in the detail.
      const why = el("div", "line2 bad", explain(s).replace(/^(.*?\.)\s.*$/s, "$1"));
      why.title = s.error;
      a.appendChild(why);
    }
    else if (s.activity === "waiting" && s.pending && s.pending.length) {
      const p = s.pending[0];
      // Another agent's description is its tool's title, the toolName: said once.
      const what = p.description && p.description !== p.toolName ? ": " + p.description : "";
      a.appendChild(el("div", "line2 warn", p.toolName + what));
    }
    li.appendChild(a);
    ul.appendChild(li);
  }
}

/** What the search box matches in a session: its id, repository, issue, state, activity, mode
 * and agent, in lower case. */
function searchText(s) {
  return [s.id, repoOf(s), repoOf(s) + "#" + s.issue, "#" + s.issue, s.state, s.activity, s.mode, s.agent]
    .filter(Boolean).join(" ").toLowerCase();
}

/** The empty list says what to do next. */
function emptyText() {
  if (!live.loaded) return "loading…";
  return isAdmin()
    ? "No sessions yet. Open “New session” above: a repository (owner and name) and an issue number " +
      "start an agent in its own worktree on the branch feat/issue-<number>."
    : "No sessions yet. An admin starts them; they show here as they do.";
}

/** Sessions waiting for a person, in the list's order. */
function waitingSessions() {
  return sortSessions([...live.sessions.values()].filter((s) => s.activity === "waiting"));
}

/** Opens the next session that waits for a person after the one shown (the first one from the
 * list). The "w" key and the header's button. */
function nextWaiting() {
  const w = waitingSessions();
  if (!w.length) {
    say("no session is waiting", true);
    return;
  }
  const i = w.findIndex((s) => s.id === selected);
  location.hash = "#/s/" + encodeURIComponent(w[(i + 1) % w.length].id);
}

/** The header's "next waiting" button, with how many wait. */
function renderWaiting() {
  const n = waitingSessions().length;
  const b = $("next-waiting");
  b.hidden = n === 0;
  b.textContent = "Next waiting (" + n + ")";
}

/** A failed session's error in words a person can act on; the raw error stays beside it. */
function explain(s) {
  const e = String(s.error || "");
  const repo = repoOf(s);
  if (/clone of .* failed|cannot fetch|fetch of .* failed/i.test(e)) {
    if (/404|not found|could not find repository|does not exist|no such file/i.test(e))
      return "The repository " + repo + " was not found where the server fetches it (or it is private and the " +
        "server has no access). Check the owner and name, then delete this session and create it again.";
    if (/401|403|auth|credential|permission denied/i.test(e))
      return "The server may not read " + repo + ": give the agent user credentials for it (README: credentials), " +
        "then start it again.";
    if (/resolve|connect|timed out|network|unreachable/i.test(e))
      return "The server cannot reach the host of " + repo + " (network or DNS). Start it again once it is back.";
    return "Fetching " + repo + " failed. Start it again; if it fails again, the details below say why.";
  }
  if (/checked out in another worktree|is taken by/i.test(e))
    return "Another worktree already holds this issue's branch or directory: delete that session or worktree, then " +
      "start this one again.";
  if (/tmux/i.test(e)) return "The terminal server (tmux) could not start the agent. Start it again.";
  if (/claude|agent/i.test(e)) return "The agent could not be started. Start it again; the details below say why.";
  return "Creating the session failed. Start it again or delete it; the details below say why.";
}

// ---- the selected session ----------------------------------------------------------------

function unmount() {
  if (!view) return;
  view.obj.dispose();
  view = null;
  $("term-view").hidden = true;
  $("conv-view").hidden = true;
}

/** Shows or drops the Changes view of session s (null: none), and refreshes it when the agent's
 * turn ended (its activity left "working": what it changed is now all there). */
function syncChanges(s) {
  const on = !!s && showChanges;
  $("detail").classList.toggle("show-changes", on);
  $("changes-view").hidden = !on;
  $("d-changes").setAttribute("aria-pressed", on ? "true" : "false");
  if (!on) {
    if (changes) changes.dispose();
    changes = null;
    changesActivity = null;
    return;
  }
  if (!changes || changes.id !== s.id) {
    if (changes) changes.dispose();
    changes = new ChangesView($("changes-view"), s.id);
  } else if (changesActivity === "working" && s.activity !== "working") {
    changes.refresh();
  }
  changesActivity = s.activity;
}

function renderDetail() {
  const s = selected ? live.sessions.get(selected) : null;
  document.body.classList.toggle("has-detail", !!selected);
  $("detail").hidden = !selected;
  if (!selected) {
    unmount();
    syncChanges(null);
    return;
  }
  $("d-title").textContent = selected;
  $("d-badges").replaceChildren(...(s ? badges(s) : []));
  if (!s) {
    unmount();
    syncChanges(null);
    $("d-info").textContent = "";
    $("d-mode").hidden = true;
    $("gone-view").hidden = false;
    $("gone-view").textContent = live.sessions.size || live.connected ? "No such session (deleted?)." : "loading…";
    return;
  }
  $("d-info").textContent = [repoOf(s) + "#" + s.issue, s.branch, s.worktree, (s.agent || "claude") + " agent",
    s.mode + " mode", s.activitySource === "none" ? "activity not reported by this agent" : "",
    (s.clients || 0) + " terminal client" + (s.clients === 1 ? "" : "s"),
    costText(s) ? "cost " + costText(s) + (s.overBudget ? " (over budget: no new prompt)" : "") : "",
    s.lastActivity ? "last activity " + ago(s.lastActivity) : ""].filter(Boolean).join(" · ");
  syncChanges(s);
  renderPr(s);
  const other = s.mode === "structured" ? "terminal" : "structured";
  $("d-mode").hidden = false;
  $("d-mode").textContent = busyMode ? "restarting…" : "Switch to " + other;
  $("d-mode").dataset.target = other;
  $("d-mode").disabled = busyMode || !(s.state === "running" || s.state === "attached");

  const runnable = RUNNING.has(s.state);
  const kind = !runnable ? null : s.mode === "structured" ? "conversation" : "terminal";
  const key = kind ? s.id + "/" + kind : null;
  const gone = $("gone-view");
  if (!kind) {
    unmount();
    gone.hidden = false;
    if (s.state === "failed") {
      gone.replaceChildren(el("p", "explain", explain(s)));
      if (s.error) {
        const det = el("details", "raw-error");
        det.append(el("summary", "muted", "details"), el("pre", "", "The agent is not running (failed: " + s.error + ")."));
        gone.appendChild(det);
      }
    } else {
      gone.replaceChildren(el("p", "", "The agent is not running (" + s.state + (s.error ? ": " + s.error : "") +
        (s.exitStatus !== undefined ? ", exit status " + s.exitStatus : "") + ")."));
    }
    if (s.state === "exited" || s.state === "failed" || s.state === "lost") {
      const actions = el("div", "gone-actions");
      const b = el("button", "primary needs-admin", "Start it again");
      b.type = "button";
      b.addEventListener("click", () => restart(s, b));
      const d = el("button", "danger needs-admin", "Delete");
      d.type = "button";
      d.addEventListener("click", removeSession);
      actions.append(b, d);
      gone.appendChild(actions);
    }
    return;
  }
  gone.hidden = true;
  if (!view || view.key !== key) {
    unmount();
    if (kind === "terminal") {
      const sec = $("term-view");
      sec.hidden = false;
      const obj = new TerminalView(sec.querySelector(".term"), sec.querySelector(".term-status"), s.id, !isAdmin());
      obj.onCtrlChange = (on) => {
        const b = sec.querySelector(".keybar .ctrl");
        if (b) b.setAttribute("aria-pressed", on ? "true" : "false");
      };
      view = { key, kind, obj };
      obj.focus();
    } else {
      const sec = $("conv-view");
      sec.hidden = false;
      view = { key, kind, obj: new ConversationView(sec, s.id, say, !isAdmin()) };
      view.obj.setOnline(live.connected);
    }
  }
  if (view.kind === "conversation") {
    view.obj.setActivity(s.activity);
    view.obj.setBudget(s.overBudget === true, costText(s));
  }
}

function render() {
  const n = live.sessions.size;
  $("count").textContent = n + " session" + (n === 1 ? "" : "s");
  renderList();
  renderWaiting();
  renderDetail();
  // The first whole list is the baseline: sessions already waiting then are not announced.
  if (live.loaded) notifier.update(live.sessions, (id) => (location.hash = "#/s/" + encodeURIComponent(id)));
}

function route() {
  const m = /^#\/s\/(.+)$/.exec(location.hash);
  const id = m ? decodeURIComponent(m[1]) : null;
  if (id !== selected) {
    selected = id;
    busyMode = false;
    showChanges = false;
    unmount();
  }
  render();
}

// ---- actions -------------------------------------------------------------------------------

async function restart(s, button) {
  if (!isAdmin()) return;
  button.disabled = true;
  try {
    live.upsert(await api("POST", "/sessions", { repo: s.repo, issue: s.issue }));
    say(s.id + " started again", true);
  } catch (e) {
    say(s.id + ": " + e.message, false);
    button.disabled = false;
  }
}

async function switchMode() {
  const s = live.sessions.get(selected);
  if (!s || busyMode || !isAdmin()) return;
  const target = $("d-mode").dataset.target;
  busyMode = true;
  say("restarting claude in " + target + " mode (with --resume: the conversation is kept)…", true);
  renderDetail();
  try {
    const answer = await api("POST", sessionPath(s.id, "/mode"), { mode: target });
    say(s.id + ": now in " + answer.mode + " mode", true);
    busyMode = false;
    live.upsert(answer);
  } catch (e) {
    busyMode = false;
    say(s.id + ": mode switch failed: " + e.message, false);
    renderDetail();
  }
}

async function removeSession() {
  if (!isAdmin()) return;
  const id = selected;
  const s = live.sessions.get(id);
  const force = $("d-force").checked;
  const what = force
    ? "Delete session " + id + " and remove its worktree even with uncommitted changes? (commits are kept under refs/agentd/kept)"
    : "Delete session " + id + "? The branch is kept; the worktree is removed only if nothing would be lost.";
  if (!confirm(what)) return;
  $("d-delete").disabled = true;
  try {
    const r = await api("DELETE", sessionPath(id, force ? "?force=true" : ""));
    live.remove(id);
    location.hash = "#/";
    reportDelete(id, s, r);
  } catch (e) {
    say(id + ": " + e.message, false);
  } finally {
    $("d-delete").disabled = false;
    $("d-force").checked = false;
  }
}

/** What the delete did to the worktree; a kept one can be removed by force, after a confirmation. */
function reportDelete(id, s, r) {
  let text = id + " deleted; worktree " + r.worktree;
  if (r.reason) text += ": " + r.reason;
  if (r.keptRef) text += " (commits kept as " + r.keptRef + ")";
  say(text, true);
  if (r.worktree !== "kept" || !s || !s.repo) return;
  const dir = s.repo.name + "-issue-" + s.issue;
  const b = el("button", "small danger", "Remove the worktree anyway");
  b.type = "button";
  b.addEventListener("click", async () => {
    if (!confirm("Remove the worktree " + dir + " with its " + (r.reason || "changes") + "? Commits no branch has are kept under refs/agentd/kept.")) return;
    b.disabled = true;
    try {
      const w = await api("DELETE", "/worktrees/" + encodeURIComponent(dir) + "?force=true");
      say(dir + ": worktree " + w.worktree + (w.keptRef ? " (commits kept as " + w.keptRef + ")" : ""), true);
    } catch (e) {
      say(dir + ": " + e.message, false);
      b.disabled = false;
    }
  });
  $("message").append(" ", b);
}

/**
 * The repositories the server already has (GET /repos, most recent activity first) as chips in
 * the create form: a tap fills owner and name, so a phone starts a task in a known project
 * with its issue number alone. Asked again each time the form opens.
 */
async function knownRepos() {
  const box = $("known-repos");
  let repos;
  try {
    repos = await api("GET", "/repos");
  } catch (e) {
    box.hidden = true; // the form works without them
    return;
  }
  box.replaceChildren();
  for (const r of repos) {
    const open = (r.sessions || []).length;
    const b = el("button", "small chip", r.repo.owner + "/" + r.repo.name);
    b.type = "button";
    b.dataset.owner = r.repo.owner;
    b.dataset.name = r.repo.name;
    b.title = open + " session" + (open === 1 ? "" : "s") + (r.defaultBranch ? ", default branch " + r.defaultBranch : "");
    b.addEventListener("click", () => {
      const f = $("create").elements;
      f.namedItem("owner").value = r.repo.owner;
      f.namedItem("name").value = r.repo.name;
      f.namedItem("issue").focus();
    });
    box.append(b);
  }
  box.hidden = repos.length === 0;
}

async function create(ev) {
  ev.preventDefault();
  if (!isAdmin()) return;
  const f = ev.target.elements; // not form.name: that is the form's own name attribute
  const body = {
    repo: { owner: f.namedItem("owner").value.trim(), name: f.namedItem("name").value.trim() },
    issue: Number(f.namedItem("issue").value),
  };
  // The agent (claude, codex, gemini, opencode or a configured one); empty: the server's
  // default. The last one asked for is remembered for the next session.
  const agent = f.namedItem("agent").value.trim();
  if (agent) body.agent = agent;
  try {
    localStorage.setItem(AGENT_KEY, agent);
  } catch (e) {
    // No storage (private mode): the form simply does not remember.
  }
  const mode = f.namedItem("mode").value;
  if (mode !== "terminal") body.mode = mode;
  const prompt = f.namedItem("prompt").value.trim();
  if (prompt) body.prompt = prompt;
  const submit = ev.target.querySelector("button[type=submit]");
  submit.disabled = true;
  try {
    const s = await api("POST", "/sessions", body);
    live.upsert(s);
    say("");
    ev.target.reset(); // the next task starts from an empty form
    rememberedAgent(); // but with the agent just asked for, as after a reload
    location.hash = "#/s/" + encodeURIComponent(s.id);
  } catch (e) {
    say(e instanceof ApiError ? e.message + (e.code ? " (" + e.code + ")" : "") : e.message, false);
  } finally {
    submit.disabled = false;
  }
}

function buildKeybar() {
  const bar = document.querySelector("#term-view .keybar");
  const add = (label, cls, fn, aria) => {
    const b = el("button", "key " + cls, label);
    b.type = "button";
    if (aria) b.setAttribute("aria-label", aria);
    // Keep the focus (and a phone's keyboard) in the terminal.
    b.addEventListener("pointerdown", (ev) => ev.preventDefault());
    b.addEventListener("click", () => {
      if (view && view.kind === "terminal") {
        fn(view.obj);
        view.obj.focus();
      }
    });
    bar.appendChild(b);
    return b;
  };
  const names = { Esc: "Escape", Tab: "Tab", "⇧Tab": "Shift-Tab", "←": "Left", "↑": "Up", "↓": "Down", "→": "Right",
    PgUp: "Page-Up", PgDn: "Page-Down", "^C": "Control-C", Enter: "Enter" };
  const key = (k) => add(k, "k-" + names[k].toLowerCase(), (t) => t.send(KEYS[k]), names[k]);
  key("Esc");
  key("Tab");
  key("⇧Tab");
  const ctrl = add("Ctrl", "ctrl", (t) => t.setCtrl(!t.ctrl), "Control (applies to the next key)");
  ctrl.setAttribute("aria-pressed", "false");
  for (const k of ["←", "↑", "↓", "→", "PgUp", "PgDn", "^C", "Enter"]) key(k);
  add("Paste", "paste", (t) => t.paste().catch((e) => say("paste: " + e.message, false)), "Paste the clipboard");
  add("A−", "font-down", (t) => say("font size " + t.zoom(-1) + " px", true), "Smaller text");
  add("A+", "font-up", (t) => say("font size " + t.zoom(1) + " px", true), "Larger text");
}

/**
 * The header's health (GET /healthz). Green only while the live list is connected as well: with
 * the stack stopped an earlier "ok" must not stay green beside "offline".
 */
async function health() {
  const h = $("health");
  const mine = ++health.asked; // only the latest answer is shown: an older one may come later
  try {
    const r = await api("GET", "/healthz");
    if (mine !== health.asked) return;
    $("offline").hidden = true;
    const up = r.status === "ok" && r.tmux;
    h.textContent = (live.connected ? "ok" : "api ok, live updates down") + " · tmux " + (r.tmux ? "up" : "down");
    h.className = up && live.connected ? "ok" : "warn";
  } catch (e) {
    if (mine !== health.asked) return;
    // A TypeError is the network: nothing answered at all.
    h.textContent = e instanceof ApiError ? e.message : "unreachable";
    h.className = "bad";
    // Nothing answered: the page may be the copy the service worker keeps on the device.
    $("offline").hidden = e instanceof ApiError;
  }
}
health.asked = 0;

/**
 * Who the page is (GET /whoami): the header says it, with a read-only badge for a viewer, and
 * the body's data-role lets app.css show the controls an admin may use. Asked again after a
 * failure other than 401 (which goes to the login page).
 */
async function identify() {
  try {
    whoami = await api("GET", "/whoami");
  } catch (e) {
    $("whoami").textContent = "identity unknown (" + e.message + ")";
    setTimeout(identify, WHOAMI_RETRY_MS);
    return;
  }
  const admin = isAdmin();
  document.body.dataset.role = admin ? "admin" : "viewer";
  $("whoami").textContent = whoami.identity || "";
  $("whoami").title = "signed in as " + (whoami.identity || "?") + " (" + whoami.role + ")";
  $("read-only").hidden = admin;
  // Views made before the role was known were made read-only: make them again.
  if (admin && view) unmount();
  render();
}

/** The live list connected or not: the header says it, the health is asked again (it was
 * green for a stack that may be gone), and a conversation's answers wait for the connection. */
function liveStatus() {
  $("live").textContent = live.connected ? "live" : "offline";
  $("live").className = "badge " + (live.connected ? "live" : "offline");
  if (!live.connected) {
    $("health").textContent = "checking…";
    $("health").className = "muted";
  }
  if (view && view.kind === "conversation") view.obj.setOnline(live.connected);
  health();
}

/**
 * The service worker (/sw.js) keeps the app shell on the device, so the installed app opens
 * without the server and says it is offline. Registered from the signed-in page only: it fetches
 * the shell with the cookie. Without one (an insecure origin, an old browser) the page is as before.
 */
function registerWorker() {
  if (!("serviceWorker" in navigator)) return;
  navigator.serviceWorker.register("/sw.js", { scope: "/" }).catch((e) => {
    console.warn("service worker not registered: " + e.message);
  });
}

/** The create form starts with the agent last asked for on this device. */
function rememberedAgent() {
  try {
    $("create").elements.namedItem("agent").value = localStorage.getItem(AGENT_KEY) || "";
  } catch (e) {
    // No storage: the server's default.
  }
}

async function main() {
  $("create").addEventListener("submit", create);
  rememberedAgent();
  $("new-session").addEventListener("toggle", () => $("new-session").open && knownRepos());
  $("repo-filter").addEventListener("change", renderList);
  $("search").addEventListener("input", renderList);
  $("next-waiting").addEventListener("click", nextWaiting);
  document.addEventListener("keydown", (ev) => {
    // "w": the next waiting session, unless the key is someone's text (a field, the terminal).
    const t = ev.target;
    if (ev.key !== "w" || ev.ctrlKey || ev.metaKey || ev.altKey || ev.repeat) return;
    if (t instanceof HTMLElement && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName) || t.closest(".term"))) return;
    ev.preventDefault();
    nextWaiting();
  });
  // Ctrl+Enter sends a prompt: not said on a touch screen, which has no Ctrl key to press.
  $("prompt-text").placeholder = matchMedia("(pointer: coarse)").matches ? "Message the agent" : "Message the agent (Ctrl+Enter sends)";
  $("d-mode").addEventListener("click", switchMode);
  $("d-delete").addEventListener("click", removeSession);
  $("d-pr").addEventListener("click", openPr);
  $("back").addEventListener("click", () => (location.hash = "#/"));
  $("d-changes").addEventListener("click", () => {
    showChanges = !showChanges;
    renderDetail();
  });
  document.querySelector("#changes-view .changes-refresh").addEventListener("click", () => changes && changes.refresh());
  // "Notifications" opens this identity's devices (Web Push; devices.js); where the browser can
  // take no push (plain http off localhost), it still asks for the page's own notifications.
  setupPairing();
  if (pushSupported()) setupDevices();
  else if ("Notification" in window && Notification.permission === "default") {
    $("notify").hidden = false;
    $("notify").addEventListener("click", async () => {
      await notifier.enable();
      $("notify").hidden = true;
    });
  }
  buildKeybar();
  registerWorker();
  // The role first, so that an admin's views are made with their controls from the start.
  await identify();
  live.addEventListener("change", render);
  live.addEventListener("status", liveStatus);
  // A structured turn's result: the agent is done for now, its changes are worth a new look.
  live.addEventListener("attention", (ev) => {
    const { event, data } = ev.detail;
    if (event === EV.RESULT && changes && data.session === changes.id) changes.refresh();
  });
  window.addEventListener("hashchange", route);
  live.start(); // its first status asks for the health
  route();
}

main();
