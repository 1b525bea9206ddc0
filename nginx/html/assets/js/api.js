// The page's one door to the server: every REST call goes through api(), every WebSocket URL
// through wsUrl() and every SSE stream through eventSource(). Access control (issue 11: tokens,
// the login page, read-only identities) belongs here and nowhere else: add the credentials to
// the request in api(), and answer 401 by going to the login page.

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
  return new EventSource(path);
}

/** Path of a session's resource, the id encoded. */
export function sessionPath(id, rest = "") {
  return "/sessions/" + encodeURIComponent(id) + rest;
}
