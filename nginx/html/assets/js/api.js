// The page's one door to the server: every REST call goes through api(), every WebSocket URL
// through wsUrl() and every SSE stream through eventSource(). Access control belongs
// here and nowhere else: the credentials are the HttpOnly cookie the login page (or GET
// /?token=) set, which fetch, EventSource and WebSockets of this origin send by themselves; a 401
// (the cookie's token was revoked, or there is none) goes to the login page.

/** Leaves for the login page (once). */
function toLogin() {
  if (!toLogin.gone) {
    toLogin.gone = true;
    location.assign("/login");
  }
}

/** After a stream or socket broke (neither can tell a 401 from a network error): a 401 on a cheap
 * request means the credentials are gone. */
export async function probeAccess() {
  const now = Date.now();
  if (probeAccess.last && now - probeAccess.last < 5000) return;
  probeAccess.last = now;
  try {
    const res = await fetch("/healthz", { cache: "no-store" });
    if (res.status === 401) toLogin();
  } catch {
    /* the network: the stream's own reconnect handles it */
  }
}

/** An API answer that is not 2xx: message is the server's sentence, code its snake_case code. */
export class ApiError extends Error {
  constructor(status, message, code, body) {
    super(message);
    this.status = status;
    this.code = code || "";
    this.body = body;
  }
}

/**
 * One REST request. body (optional) is sent as JSON. Answers the parsed JSON body; throws
 * ApiError for a non-2xx answer (every error is {"error","code"}; nginx answers the same way when
 * a daemon is down) and TypeError when the network fails.
 */
export async function api(method, path, body, { signal } = {}) {
  const opts = { method, headers: {}, signal, cache: "no-store" };
  if (body !== undefined) {
    opts.headers["Content-Type"] = "application/json";
    opts.body = JSON.stringify(body);
  } else if (method !== "GET") {
    opts.headers["Content-Type"] = "application/json";
  }
  const res = await fetch(path, opts);
  if (res.status === 401) toLogin();
  let data = null;
  try {
    data = await res.json();
  } catch {
    data = null;
  }
  if (!res.ok) {
    const why = data && data.error ? data.error : res.status + " " + res.statusText;
    throw new ApiError(res.status, why, data && data.code, data);
  }
  return data;
}

/**
 * A request whose answer is a stream we do not need (POST …/prompt answers the turn as SSE; the
 * page follows the session's /events instead). Resolves once the server accepted it; the rest of
 * the answer is read and dropped in the background so the turn's stream is not cut short.
 */
export async function post_stream(path, body) {
  const res = await fetch(path, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
    cache: "no-store",
  });
  if (res.status === 401) toLogin();
  if (!res.ok) {
    let data = null;
    try {
      data = await res.json();
    } catch {
      data = null;
    }
    throw new ApiError(res.status, data && data.error ? data.error : String(res.status),
      data && data.code, data);
  }
  const reader = res.body.getReader();
  (async () => {
    try {
      for (;;) {
        const { done } = await reader.read();
        if (done) break;
      }
    } catch {
      /* the turn's events come from /events anyway */
    }
  })();
}

/** ws:// or wss:// URL of a path on this origin. */
export function wsUrl(path) {
  const u = new URL(path, location.href);
  u.protocol = u.protocol === "https:" ? "wss:" : "ws:";
  return u.href;
}

/** An EventSource on a path of this origin (it reconnects by itself with Last-Event-ID). */
export function eventSource(path) {
  const src = new EventSource(path);
  src.addEventListener("error", probeAccess);
  return src;
}

/** Path of a session's resource, the id encoded. */
export function sessionPath(id, rest = "") {
  return "/sessions/" + encodeURIComponent(id) + rest;
}
