#include "relay_int.h"

#include "attention.h"
#include "eventnames.h"
#include "events.h"
#include "hostsock.h"
#include "http.h"
#include "jsontext.h"
#include "log.h"
#include "origin.h"
#include "session.h"
#include "sse.h"
#include "store.h"
#include "ws.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static void relay_lookup(struct relay *r);
static void relay_history_pump(struct relay *r);

const char *const relay_kind_names[] = {
    [RELAY_PROMPT] = "prompt", [RELAY_PERMISSION] = "permission", [RELAY_INTERRUPT] = "interrupt",
    [RELAY_EVENTS] = "events", [RELAY_STREAM] = "stream",
};

/* ---- client output ---------------------------------------------------------------------- */

static int relay_want(struct conn *c)
{
	struct relay *r = c->data;

	if (r->state == RS_BODY)
		return UV_READABLE;
	/* Notice a client that gives up; nothing more is read from it. */
	return UV_DISCONNECT | (!conn_out_empty(c) ? UV_WRITABLE : 0);
}

/* Stops reading the host (and the client's frames) while the client is behind; resumes when it
 * caught up. */
static void relay_backpressure(struct conn *c)
{
	struct relay *r = c->data;
	size_t queued = conn_queued(&r->c);
	struct relay_host *h = r->host;
	bool pause;

	if (r->end_queued) {
		/* wslay sends a close frame ahead of the data frames still queued: it waits. */
		if (queued == 0) {
			r->end_queued = false;
			conn_ws_close(&r->c, WS_CLOSE_GOING_AWAY, r->end_code);
		}
		return;
	}
	if (r->replaying) {
		/* No host: the log is read again once the client took most of what was queued. */
		if (queued < RELAY_OUT_LOW)
			relay_history_pump(r);
		return;
	}
	if (!r->paused && queued > RELAY_OUT_HIGH)
		pause = true;
	else if (r->paused && queued < RELAY_OUT_LOW)
		pause = false;
	else
		return;
	r->paused = pause;
	r->was_paused = r->was_paused || pause;
	conn_pause_input(c, pause);
	if (h == NULL || h->closing)
		return;
	if (pause)
		relay_host_pause(h);
	else
		relay_host_resume(h);
}

/* ---- lifecycle -------------------------------------------------------------------------- */

static void relay_release(struct conn *c)
{
	struct relay *r = c->data;

	conn_release(&r->c);
	evlog_close(&r->history);
	free(r->body);
	free(r->host_req);
	json_object_put(r->answer);
	free(r);
}

/* The client's side ends: its host connections go (the host keeps the turn going). */
static void relay_hosts_close(struct conn *c)
{
	struct relay *r = c->data;

	if (r->host != NULL)
		relay_host_close(r->host);
	while (!LIST_EMPTY(&r->side))
		relay_host_close(LIST_FIRST(&r->side));
	conn_unwatch_record(c);
}

static void relay_cut(struct conn *c)
{
	struct relay *r = c->data;

	if ((c->phase == CONN_SERVICE && r->state == RS_STREAM) || c->phase == CONN_WS ||
	    c->phase == CONN_WS_CLOSING || r->events_sent > 0)
		log_info("session %s: %s client closed after %llu events", r->c.id,
			 relay_kind_names[r->kind], (unsigned long long)r->events_sent);
}

/* Answers with an API.md error ({"error","code"}) and ends the connection. */
void relay_respond(struct relay *r, int status, const char *code, const char *message,
		   const char *extra)
{
	if (r->c.phase == CONN_DEAD || r->c.phase == CONN_FINISH || r->c.phase == CONN_LINGER)
		return;
	log_info("session %s: %s: %d %s", r->c.id[0] != '\0' ? r->c.id : "?",
		 relay_kind_names[r->kind], status, code);
	if (r->c.phase == CONN_SERVICE && r->state == RS_STREAM) {
		conn_cut(&r->c); /* too late for a status: the stream just ends */
		return;
	}
	conn_respond(&r->c, status, code, message, extra, 0);
}

/* Answers 200 {"status":"ok"} and ends the connection. */
void relay_respond_ok(struct relay *r)
{
	char buf[HTTP_RESPONSE_MAX];
	int n = snprintf(buf, sizeof(buf),
			 "HTTP/1.1 200 OK\r\n"
			 "Content-Type: application/json\r\n"
			 "Content-Length: %zu\r\n"
			 "Cache-Control: no-store\r\n"
			 "Connection: close\r\n"
			 "\r\n"
			 "%s",
			 strlen(RELAY_OK_BODY), RELAY_OK_BODY);

	log_info("session %s: %s: 200", r->c.id, relay_kind_names[r->kind]);
	if (n < 0 || (size_t)n >= sizeof(buf) || conn_queue(&r->c, buf, (size_t)n) < 0) {
		conn_cut(&r->c);
		return;
	}
	conn_finish(&r->c, 0);
}

/* Sends the event-stream head: from here on the answer is a stream of events. */
void relay_start_stream(struct relay *r)
{
	char head[SSE_HEAD_MAX];
	int n = sse_format_head(head, sizeof(head));

	if (n < 0 || conn_queue(&r->c, head, (size_t)n) < 0) {
		conn_cut(&r->c);
		return;
	}
	r->state = RS_STREAM;
	conn_flush(&r->c);
}

/* ---- requests --------------------------------------------------------------------------- */

/* The host listens: send the request and go on as its kind requires. */
static void relay_connected(struct relay *r, int fd)
{
	conn_unwatch_record(&r->c); /* a wait is over */
	r->host = relay_host_open(r, fd, r->host_req, r->host_req_len);
	if (r->host == NULL) {
		relay_respond(r, 503, "host_unavailable", "cannot talk to the agent host", NULL);
		return;
	}
	r->host->kind = r->kind;
	switch (r->kind) {
	case RELAY_EVENTS:
		relay_start_stream(r);
		break;
	case RELAY_STREAM:
		relay_upgrade(r);
		break;
	default:
		r->state = RS_ANSWER;
		r->c.deadline = relay_now(r) + RELAY_ANSWER_TIMEOUT_MS;
		conn_update(&r->c);
		break;
	}
}

/*
 * Waits in RS_CONNECT until deadline, then answers 409 or 503: for a `creating` record (host
 * false) woken by its change, for a host socket (host true) retried by every tick.
 */
static void relay_wait(struct relay *r, bool host, uint64_t wait_ms, int status, const char *code,
		       const char *message)
{
	uint64_t now = relay_now(r);
	int err;

	r->wait_host = host;
	if (r->state != RS_CONNECT) {
		r->state = RS_CONNECT;
		r->c.deadline = now + wait_ms;
		conn_update(&r->c);
		if (host)
			return;
		/* Watched first, then read again: a change between the two is not missed. */
		err = conn_watch_record(&r->c, r->b->store.dir, now);
		if (err < 0)
			log_warn("session %s: cannot watch its record (%s): polling it", r->c.id,
				 uv_strerror(err));
		relay_lookup(r);
		return;
	}
	if (now >= r->c.deadline)
		relay_respond(r, status, code, message, NULL);
}

/* Reads the record and connects to the host, waits, or refuses. */
/* A permission answer for a terminal session: its request waits in the attention hub (a
 * PermissionRequest hook beside the TUI's dialog). */
static void relay_answer_terminal(struct relay *r)
{
	static const char *const keep[] = {"behavior", "message", "updatedInput", "interrupt",
					   "updatedPermissions"};
	json_object *decision = json_object_new_object(), *v;
	const char *by = NULL;
	char msg[256];
	int rc;

	if (decision == NULL) {
		relay_respond(r, 503, "no_memory", "out of memory", NULL);
		return;
	}
	for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
		if (json_object_object_get_ex(r->answer, keep[i], &v))
			json_object_object_add(decision, keep[i], json_object_get(v));
	if (hookproto_decision_check(decision, NULL) < 0) {
		json_object_put(decision);
		relay_respond(r, 400, "invalid_request",
			      "this answer cannot be given to a terminal session's request", NULL);
		return;
	}
	rc = r->b->attention != NULL ? attention_answer(r->b->attention, r->c.id, r->request_id,
							decision, r->c.who.by, &by)
				     : -ENOENT;
	json_object_put(decision);
	switch (rc) {
	case 0:
		relay_respond_ok(r);
		break;
	case -EALREADY:
		snprintf(msg, sizeof(msg), "this permission request was already answered (by %s)",
			 by != NULL ? by : "someone");
		relay_respond(r, 409, "already_answered", msg, NULL);
		break;
	default:
		relay_respond(r, 404, "unknown_request", "no such permission request", NULL);
		break;
	}
}

/* ---- the history of a session that no longer runs ------------------------------------- */

/* True while the client's stream is open: an SSE stream, or a WebSocket. */
static bool relay_history_open(const struct relay *r)
{
	return (r->c.phase == CONN_SERVICE && r->state == RS_STREAM) || r->c.phase == CONN_WS;
}

/* The replay is over: one event without id says why nothing follows ({"error","code"}, as a
 * prompt stream that lost its host ends), then the stream ends; a WebSocket closes with 1001 and
 * the code as the reason once every frame is out. code is a static string. */
static void relay_history_end(struct relay *r, const char *error, const char *code)
{
	json_object *data = json_object_new_object(), *frame = json_object_new_object();
	char text[RELAY_END_EVENT_MAX];
	int n;

	r->replaying = false;
	log_info("session %s: %s: replayed %llu events of its log, ended: %s", r->c.id,
		 relay_kind_names[r->kind], (unsigned long long)r->events_sent, code);
	json_object_object_add(data, "error", json_object_new_string(error));
	json_object_object_add(data, "code", json_object_new_string(code));
	if (r->c.phase == CONN_WS) {
		json_object_object_add(frame, "event", json_object_new_string("error"));
		json_object_object_add(frame, "data", json_object_get(data));
		n = snprintf(text, sizeof(text), "%s",
			     json_object_to_json_string_ext(frame, RELAY_JSON_OUT));
		if (n > 0 && (size_t)n < sizeof(text))
			conn_ws_queue(&r->c, true, text, (size_t)n);
		r->end_code = code;
		r->end_queued = true;
		conn_flush(&r->c); /* relay_backpressure closes once the frames are out */
	} else {
		n = snprintf(text, sizeof(text), "event: " EV_ERROR "\ndata: %s\n\n",
			     json_object_to_json_string_ext(data, RELAY_JSON_OUT));
		if (n > 0 && (size_t)n < sizeof(text))
			conn_queue(&r->c, text, (size_t)n);
		conn_finish(&r->c, 0);
	}
	json_object_put(frame);
	json_object_put(data);
}

/*
 * Sends the next pieces of the log while the client is not behind (RELAY_OUT_HIGH); the flush
 * that drains its queue (relay_backpressure) comes back here. At the log's end (as it was when
 * opened: no host writes to it any more) the stream ends.
 */
static void relay_history_pump(struct relay *r)
{
	if (r->pumping || !r->replaying)
		return;
	r->pumping = true; /* the flushes below do not come back here */
	while (r->replaying && relay_history_open(r) && conn_queued(&r->c) < RELAY_OUT_HIGH) {
		struct evlog_batch *bt = NULL;
		int err;

		if (r->history.fd < 0 || r->history_at >= r->history.end) {
			relay_history_end(r, r->end_msg, r->end_code);
			break;
		}
		err = evlog_read(&r->history, r->history_at, RELAY_READ_CHUNK, &bt);
		if (err < 0 || bt->len == 0) {
			log_error("session %s: cannot read its event log at %lld: %s", r->c.id,
				  (long long)r->history_at, strerror(err < 0 ? -err : EIO));
			evlog_batch_unref(bt);
			relay_history_end(r, "cannot read the event log", "log_error");
			break;
		}
		for (size_t i = 0; i < bt->n && relay_history_open(r); i++) {
			const struct evlog_entry *e = &bt->ev[i];

			/* Id 0: a line a crashed host tore, no event. */
			if (e->id > r->after)
				relay_event(r, bt->data + e->off, e->len - 1, bt->len - e->off);
		}
		r->history_at += (off_t)bt->len;
		evlog_batch_unref(bt);
		conn_flush(&r->c);
	}
	r->pumping = false;
}

/*
 * GET …/events or …/stream of a session whose agent exited or whose tmux session is gone (why:
 * conn_lookup's 409): no host runs, but its event log is on disk (the bridge may read it: the
 * daemons' group). Its events after r->after go out as they would live, then the end says why.
 */
static void relay_history_start(struct relay *r, const struct conn_refusal *why)
{
	char path[CONFIG_PATH_MAX];
	int err;

	conn_unwatch_record(&r->c); /* a wait for a creating session is over */
	r->end_code = why->code;
	snprintf(r->end_msg, sizeof(r->end_msg), "%s", why->message);
	err = hostproto_state_path(r->b->cfg, r->c.id, HOSTPROTO_LOG_NAME, path, sizeof(path));
	if (err == 0)
		err = evlog_open_read(&r->history, path);
	if (err < 0 && err != -ENOENT) {
		/* Without its log it is as before: the session does not run. */
		log_error("session %s: cannot open its event log: %s", r->c.id, strerror(-err));
		relay_respond(r, why->status, why->code, why->message, NULL);
		return;
	}
	r->replaying = true;
	log_info("session %s: %s: %s, replaying its event log from %llu", r->c.id,
		 relay_kind_names[r->kind], why->code, (unsigned long long)r->after);
	if (r->kind == RELAY_EVENTS)
		relay_start_stream(r);
	else
		relay_upgrade(r);
	relay_history_pump(r);
}

/* Answers 402 budget_exceeded with the figures (docs/API.md "Budget") and ends the connection. */
static void relay_over_budget(struct relay *r, const struct session *s)
{
	json_object *o = json_object_new_object();
	struct session_cost c;
	char msg[192], head[256];
	const char *body;
	int n;

	session_cost_total(s, &c);
	session_budget_why(s, msg, sizeof(msg));
	log_info("session %s: prompt: 402 budget_exceeded", r->c.id);
	if (o == NULL) {
		relay_respond(r, 503, "out_of_memory", "out of memory", NULL);
		return;
	}
	json_object_object_add(o, "error", json_object_new_string(msg));
	json_object_object_add(o, "code", json_object_new_string("budget_exceeded"));
	json_object_object_add(o, "costUsd", cost_usd_json(c.usd_micros));
	json_object_object_add(o, "budgetUsd", cost_usd_json(s->budget_micros));
	body = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	n = snprintf(head, sizeof(head),
		     "HTTP/1.1 402 Payment Required\r\n"
		     "Content-Type: application/json\r\n"
		     "Content-Length: %zu\r\n"
		     "Cache-Control: no-store\r\n"
		     "Connection: close\r\n\r\n",
		     strlen(body) + 1);
	conn_drop_output(&r->c);
	if (n < 0 || (size_t)n >= sizeof(head) || conn_queue(&r->c, head, (size_t)n) < 0 ||
	    conn_queue(&r->c, body, strlen(body)) < 0 || conn_queue(&r->c, "\n", 1) < 0)
		conn_cut(&r->c);
	else
		conn_finish(&r->c, 0);
	json_object_put(o);
}

static void relay_lookup(struct relay *r)
{
	struct conn_refusal why;
	struct session s;
	enum conn_record rec;
	char msg[256];
	int fd;

	rec = conn_lookup(&r->b->store, r->c.id, &s, &why);
	if (rec == CONN_RECORD_MISSING) {
		relay_respond(r, why.status, why.code, why.message, NULL);
		return;
	}
	if (s.mode != SESSION_STRUCTURED && r->kind == RELAY_PERMISSION &&
	    rec == CONN_RECORD_READY) {
		relay_answer_terminal(r);
		return;
	}
	if (s.mode != SESSION_STRUCTURED) {
		relay_respond(r, 409, "not_structured", RELAY_MODE_HINT, NULL);
		return;
	}
	switch (rec) {
	case CONN_RECORD_CREATING:
		relay_wait(r, false, r->b->opt.creating_wait_ms, 409, "not_running",
			   "the session is still being created");
		return;
	case CONN_RECORD_UNAVAILABLE:
		/* What happened stays readable; only a live follow needs a live host. */
		if ((r->kind == RELAY_EVENTS || r->kind == RELAY_STREAM) &&
		    (s.state == SESSION_EXITED || s.state == SESSION_LOST)) {
			relay_history_start(r, &why);
			return;
		}
		relay_respond(r, why.status, why.code, why.message, NULL);
		return;
	case CONN_RECORD_MISSING:
		relay_respond(r, why.status, why.code, why.message, NULL);
		return;
	case CONN_RECORD_READY:
		break;
	}
	if (r->kind == RELAY_PROMPT && session_over_budget(&s)) {
		/* Only new prompts: a turn that runs is the host's, and goes on. */
		relay_over_budget(r, &s);
		return;
	}
	if (r->kind == RELAY_PERMISSION && r->b->attention != NULL &&
	    attention_withdrawn(r->b->attention, r->c.id, r->request_id, msg, sizeof(msg))) {
		/* Its claude may be gone (a reboot): its host would not know the request at all. */
		relay_respond(r, 409, "already_answered", msg, NULL);
		return;
	}
	fd = hostsock_connect(r->b, r->c.id);
	if (fd >= 0) {
		relay_connected(r, fd);
		return;
	}
	if (fd == -EPERM) {
		/* Its directory is the agent's: someone put another socket where the host's was. */
		log_error("session %s: the socket at its host's path is not the agent user's: "
			  "not talking to it",
			  r->c.id);
		relay_respond(r, 503, "host_unavailable", "cannot reach the agent host", NULL);
		return;
	}
	if (fd != -ENOENT && fd != -ECONNREFUSED && fd != -EAGAIN) {
		log_error("session %s: cannot connect to its host: %s", r->c.id, strerror(-fd));
		relay_respond(r, 503, "host_unavailable", "cannot reach the agent host", NULL);
		return;
	}
	/* Right after a mode switch the host may not listen yet. */
	relay_wait(r, true, RELAY_CONNECT_WAIT_MS, 503, "host_unavailable",
		   "the agent host of this session does not answer");
}

/* The body is complete: build the host request and look the session up. */
static void relay_body_done(struct relay *r)
{
	json_object *obj = NULL;
	const char *why;

	if (r->kind == RELAY_PROMPT || r->kind == RELAY_PERMISSION) {
		obj = relay_parse_object(r->body != NULL ? r->body : "", r->body_len);
		if (obj == NULL) {
			relay_respond(
			    r, 400, "invalid_json",
			    "the body must be one JSON object in UTF-8, with no key twice", NULL);
			return;
		}
	}
	r->host_req =
	    relay_host_request(r->kind, obj, r->request_id, r->c.who.by, &r->host_req_len, &why);
	if (r->kind == RELAY_PERMISSION)
		r->answer = json_object_get(obj);
	json_object_put(obj);
	if (r->host_req == NULL) {
		relay_respond(r, errno == ENOMEM ? 503 : 400, "invalid_request", why, NULL);
		return;
	}
	relay_lookup(r);
}

static void relay_read_body(struct relay *r)
{
	while (r->body_len < r->body_want) {
		ssize_t n = recv(r->c.fd, r->body + r->body_len, r->body_want - r->body_len, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			conn_cut(&r->c); /* gone before a whole request */
			return;
		}
		r->body_len += (size_t)n;
	}
	relay_body_done(r);
}

/* True when the upgrade (for a WebSocket) and the Origin rule of API.md let this request
 * through (answered otherwise). */
static bool relay_checks_ok(struct relay *r, bool upgrade)
{
	struct conn_refusal why;
	const char *extra = NULL;

	if ((upgrade && !conn_upgrade_ok(r->c.req, &why, &extra)) ||
	    !conn_origin_ok(r->c.req, r->b->cfg->allowed_origins,
			    "this Origin may not use this session", &why)) {
		relay_respond(r, why.status, why.code, why.message, extra);
		return false;
	}
	return true;
}

/* The id to replay after: Last-Event-ID, else ?after=, else 0. Returns 0 or -EINVAL. */
static int relay_after(const struct relay *r, uint64_t *after)
{
	const char *last = http_request_header(r->c.req, "Last-Event-ID", NULL);
	int err;

	*after = 0;
	if (last != NULL)
		return sse_parse_id(last, strlen(last), after);
	err = sse_query_id(http_request_query(r->c.req), "after", after);
	return err == -ENOENT ? 0 : err;
}

/* Checks the request against API.md, in the order that reveals least to a refused caller, and
 * starts it. */
static void relay_handle_request(struct relay *r)
{
	const char *path = http_request_path(r->c.req) + strlen(RELAY_PREFIX);
	const char *slash = strchr(path, '/'), *ct;
	bool post =
	    r->kind == RELAY_PROMPT || r->kind == RELAY_PERMISSION || r->kind == RELAY_INTERRUPT;
	size_t idlen = (size_t)(slash - path), rest_len;
	const char *rest;
	uint64_t len, after;
	int body;

	if (idlen > SESSION_ID_MAX) {
		relay_respond(r, 400, "invalid_id", "malformed session id", NULL);
		return;
	}
	memcpy(r->c.id, path, idlen);
	r->c.id[idlen] = '\0';
	if (strcmp(http_request_method(r->c.req), post ? "POST" : "GET") != 0) {
		relay_respond(r, 405, "method_not_allowed", post ? "use POST" : "use GET",
			      post ? "Allow: POST\r\n" : "Allow: GET\r\n");
		return;
	}
	if (!session_id_valid(r->c.id)) {
		relay_respond(r, 400, "invalid_id", "malformed session id", NULL);
		return;
	}
	if (r->kind == RELAY_PERMISSION) {
		const char *rid = slash + 1 + strlen(RELAY_PERMISSIONS);

		if (!relay_request_id_valid(rid)) {
			relay_respond(r, 404, "unknown_request", "no such permission request",
				      NULL);
			return;
		}
		snprintf(r->request_id, sizeof(r->request_id), "%s", rid);
	}
	if ((post || r->kind == RELAY_STREAM) && !relay_checks_ok(r, r->kind == RELAY_STREAM))
		return;
	body = http_request_body_length(r->c.req, &len);
	if (body < 0) {
		relay_respond(r, 411, "length_required", "send the body with a Content-Length",
			      NULL);
		return;
	}
	if (len > RELAY_BODY_MAX) {
		relay_respond(r, 413, "body_too_large", "request body is larger than 64 KiB", NULL);
		return;
	}
	ct = http_request_header(r->c.req, "Content-Type", NULL);
	if (r->kind != RELAY_INTERRUPT && body > 0 && !jsontext_content_type_ok(ct)) {
		relay_respond(r, 415, "unsupported_media_type",
			      "send the body as Content-Type: application/json (charset utf-8)",
			      NULL);
		return;
	}
	if (r->kind == RELAY_EVENTS || r->kind == RELAY_STREAM) {
		char line[HOSTPROTO_SUBSCRIBE_MAX];

		if (relay_after(r, &after) < 0) {
			relay_respond(r, 400, "invalid_event_id",
				      "Last-Event-ID and ?after= must be event ids", NULL);
			return;
		}
		r->after = after;
		r->host_req_len = hostproto_subscribe_format(after, line);
		r->host_req = strdup(line);
		if (r->host_req == NULL) {
			conn_cut(&r->c);
			return;
		}
		relay_lookup(r);
		return;
	}
	r->body_want = (size_t)len;
	r->body = malloc(r->body_want + 1);
	if (r->body == NULL) {
		conn_cut(&r->c);
		return;
	}
	rest = http_request_rest(r->c.req, &rest_len);
	if (rest_len > r->body_want) {
		relay_respond(r, 400, "bad_request", "unexpected bytes after the body", NULL);
		return;
	}
	memcpy(r->body, rest, rest_len);
	r->body_len = rest_len;
	r->body[r->body_want] = '\0';
	r->state = RS_BODY;
	r->c.deadline = relay_now(r) + r->b->opt.handshake_timeout_ms;
	relay_read_body(r);
	if (relay_at(r) == RS_BODY)
		conn_update(&r->c);
}

static void relay_on_poll(struct conn *c, int events)
{
	struct relay *r = c->data;

	if (r->state == RS_BODY)
		relay_read_body(r);
	else if (events & UV_DISCONNECT)
		conn_cut(c); /* the client left: only its host connection ends */
	else
		conn_flush(c);
}

/* The session's record changed while a `creating` session is waited for: read it again. */
static void relay_record_changed(struct conn *c)
{
	struct relay *r = c->data;

	if (relay_at(r) == RS_CONNECT && !r->wait_host)
		relay_lookup(r);
}

/* ---- the service ------------------------------------------------------------------------ */

/* The tick of one connection in the relay's states and on an open WebSocket. */
static void relay_tick(struct conn *c, uint64_t now)
{
	struct relay *r = c->data;
	struct relay_host *h, *next;

	switch (relay_at(r)) {
	case RS_CHECK:
		return;
	case RS_BODY:
		if (now >= c->deadline)
			relay_respond(r, 408, "body_timeout", "the request body did not arrive",
				      NULL);
		return;
	case RS_CONNECT:
		if (r->wait_host || now >= c->deadline || conn_record_due(c, now))
			relay_lookup(r);
		return;
	case RS_ANSWER:
		if (now >= c->deadline)
			relay_respond(r, 504, "host_timeout", "the agent host did not answer",
				      NULL);
		return;
	case RS_STREAM:
		if (now - r->c.last_queued >= RELAY_SSE_PING_MS) {
			if (conn_queue(&r->c, SSE_PING, strlen(SSE_PING)) < 0) {
				conn_cut(c);
				return;
			}
			conn_flush(c);
		}
		return;
	case RS_CORE:
		break;
	}
	for (h = LIST_FIRST(&r->side); h != NULL && c->phase == CONN_WS; h = next) {
		next = LIST_NEXT(h, link);
		if (now >= h->deadline) {
			relay_ws_error(r, h->kind, h->request_id, 504, "host_timeout",
				       "the agent host did not answer");
			relay_host_close(h);
		}
	}
	conn_flush(c);
}

/* The bridge stops: a stream ends (the client reconnects with Last-Event-ID), the rest is cut. */
static void relay_stop(struct conn *c)
{
	struct relay *r = c->data;

	if (r->state == RS_STREAM)
		conn_finish(c, 0);
	else
		conn_cut(c);
}

static const struct conn_ops relay_ops = {
    .kind = "stream",
    .want = relay_want,
    .on_poll = relay_on_poll,
    .detach = relay_hosts_close,
    .flushed = relay_backpressure,
    .record_changed = relay_record_changed,
    .tick = relay_tick,
    .stop = relay_stop,
    .cut = relay_cut,
    .release = relay_release,
    .cut_stalled = true,
};

static int relay_accept(struct bridge *b, int fd, struct http_request *req, int route)
{
	struct relay *r = conn_open(sizeof(*r), offsetof(struct relay, c), b->loop, fd, &b->conns,
				    &relay_ops, req);

	if (r == NULL)
		return -ENOMEM;
	r->b = b;
	r->history.fd = -1;
	LIST_INIT(&r->side);
	r->kind = (enum relay_kind)route;
	r->state = RS_CHECK;
	relay_handle_request(r);
	return 0;
}

const struct bridge_service relay_service = {
    .accept = relay_accept,
};

const struct bridge_route relay_routes[] = {
    {RELAY_PREFIX "*/prompt", &relay_service, RELAY_PROMPT},
    {RELAY_PREFIX "*/events", &relay_service, RELAY_EVENTS},
    {RELAY_PREFIX "*/interrupt", &relay_service, RELAY_INTERRUPT},
    {RELAY_PREFIX "*/stream", &relay_service, RELAY_STREAM},
    {RELAY_PREFIX "*/" RELAY_PERMISSIONS "*", &relay_service, RELAY_PERMISSION},
    {NULL, NULL, 0},
};
