#include "relay_int.h"

#include "attention.h"
#include "eventnames.h"
#include "events.h"
#include "hostsock.h"
#include "http.h"
#include "log.h"
#include "sse.h"
#include "ws.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void relay_host_closed(uv_handle_t *handle)
{
	struct relay_host *h = handle->data;

	free(h->buf);
	free(h);
}

void relay_host_close(struct relay_host *h)
{
	struct relay *r = h->r;

	if (h->closing)
		return;
	h->closing = true;
	if (h == r->host) {
		r->host = NULL;
	} else {
		LIST_REMOVE(h, link);
		r->nside--;
	}
	uv_close((uv_handle_t *)&h->pipe, relay_host_closed);
}

static void relay_host_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf)
{
	struct relay_host *h = handle->data;
	size_t want = h->len + RELAY_READ_CHUNK;

	if (want > RELAY_LINE_MAX)
		want = RELAY_LINE_MAX;
	if (want > h->cap) {
		char *grown = realloc(h->buf, want);

		if (grown != NULL) {
			h->buf = grown;
			h->cap = want;
		}
	}
	/* Nothing left (a line over the limit, or no memory): libuv reports UV_ENOBUFS. */
	buf->base = h->buf != NULL ? h->buf + h->len : NULL;
	buf->len = h->cap - h->len;
}

void relay_host_pause(struct relay_host *h)
{
	if (h->reading)
		uv_read_stop((uv_stream_t *)&h->pipe);
	h->reading = false;
}

static void relay_write_done(uv_write_t *w, int status)
{
	free(w);
}

/* Queues a copy of line on h. Returns 0 or a libuv error. */
static int relay_host_write(struct relay_host *h, const char *line, size_t len)
{
	struct relay_write *w = malloc(sizeof(*w) + len);
	uv_buf_t buf;
	int r;

	if (w == NULL)
		return UV_ENOMEM;
	memcpy(w->data, line, len);
	buf = uv_buf_init(w->data, (unsigned)len);
	r = uv_write(&w->req, (uv_stream_t *)&h->pipe, &buf, 1, relay_write_done);
	if (r < 0)
		free(w);
	return r;
}

/* ---- what the host says ----------------------------------------------------------------- */

/* A status the host gave in an error answer, or 502 when it is no error status. */
static int relay_host_status(const struct hostproto_answer *answer)
{
	int status = answer->status;

	return status >= RELAY_STATUS_MIN && status <= RELAY_STATUS_MAX ? status : 502;
}

static const char *relay_host_string(json_object *obj, const char *key, const char *dflt)
{
	json_object *v = NULL;

	if (obj != NULL)
		json_object_object_get_ex(obj, key, &v);

	return json_object_is_type(v, json_type_string) ? json_object_get_string(v) : dflt;
}

/* A prompt the host took: who sent it goes on /events (event `prompt`, {"session","by"}). */
static void relay_note_prompt(struct relay *r)
{
	json_object *data;

	if (r->b->events == NULL || (data = json_object_new_object()) == NULL)
		return;
	json_object_object_add(data, "session", json_object_new_string(r->c.id));
	json_object_object_add(data, "by", json_object_new_string(r->c.who.by));
	events_publish(r->b->events, EV_PROMPT, data);
}

/* The first line on a client's own connection: the answer to its request. */
static void relay_host_answer(struct relay *r, const char *line, size_t len)
{
	struct hostproto_answer answer;

	if (hostproto_answer_parse(line, len, &answer) < 0) {
		relay_respond(r, 502, "bad_host_answer", "the agent host gave an unexpected answer",
			      NULL);
		return;
	}
	if (answer.type == HOSTPROTO_ACCEPTED && r->kind == RELAY_PROMPT) {
		relay_note_prompt(r);
		relay_start_stream(r);
	} else if (answer.type == HOSTPROTO_OK && r->kind != RELAY_PROMPT)
		relay_respond_ok(r);
	else if (answer.type == HOSTPROTO_ERROR)
		relay_respond(
		    r, relay_host_status(&answer), answer.code != NULL ? answer.code : "host_error",
		    answer.error != NULL ? answer.error : "the agent host refused the request",
		    NULL);
	else
		relay_respond(r, 502, "bad_host_answer", "the agent host gave an unexpected answer",
			      NULL);
	hostproto_answer_release(&answer);
}

/* Queues a frame built from obj (consumed) on the WebSocket. */
static void relay_ws_json(struct relay *r, json_object *obj)
{
	const char *text = json_object_to_json_string_ext(obj, RELAY_JSON_OUT);

	if (text == NULL || conn_ws_queue(&r->c, true, text, strlen(text)) < 0)
		conn_cut(&r->c);
	json_object_put(obj);
}

/* Answers a /stream client's request frame with an error frame. */
void relay_ws_error(struct relay *r, enum relay_kind kind, const char *request_id, int status,
		    const char *code, const char *message)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "type", json_object_new_string("error"));
	json_object_object_add(o, "request", json_object_new_string(relay_kind_names[kind]));
	if (request_id != NULL && request_id[0] != '\0')
		json_object_object_add(o, "requestId", json_object_new_string(request_id));
	json_object_object_add(o, "status", json_object_new_int(status));
	json_object_object_add(o, "code", json_object_new_string(code));
	json_object_object_add(o, "error", json_object_new_string(message));
	relay_ws_json(r, o);
}

/* A prompt frame of a session over its budget gets the error frame POST .../prompt's 402 is
 * (the record as it is now: it may have crossed the budget since the stream opened). */
static bool relay_ws_over_budget(struct relay *r, json_object *obj)
{
	struct session *s = malloc(sizeof(*s));
	struct cause cause = {{0}};
	char msg[192];
	bool over;

	over = s != NULL && store_read(&r->b->store, r->c.id, s, &cause) == 0 &&
	       session_budget_why(s, msg, sizeof(msg));
	if (over)
		relay_ws_error(r, RELAY_PROMPT, relay_host_string(obj, "requestId", ""), 402,
			       "budget_exceeded", msg);
	free(s);
	return over;
}

/* The answer line of a /stream client's request: passed on with the request it answers. */
static void relay_side_answer(struct relay *r, struct relay_host *h, const char *line, size_t len)
{
	struct hostproto_answer answer;

	if (hostproto_answer_parse(line, len, &answer) < 0) {
		relay_ws_error(r, h->kind, h->request_id, 502, "bad_host_answer",
			       "the agent host gave an unexpected answer");
		return;
	}
	if (answer.type == HOSTPROTO_ACCEPTED && h->kind == RELAY_PROMPT)
		relay_note_prompt(r);
	json_object_object_add(answer.obj, "request",
			       json_object_new_string(relay_kind_names[h->kind]));
	if (h->request_id[0] != '\0')
		json_object_object_add(answer.obj, "requestId",
				       json_object_new_string(h->request_id));
	relay_ws_json(r, json_object_get(answer.obj));
	hostproto_answer_release(&answer);
}

/* Queues one SSE `error` event without id: data {"error","code"}. */
void relay_error_event(struct relay *r, const char *error, const char *code)
{
	json_object *o = json_object_new_object();
	char frame[RELAY_ERROR_EVENT_MAX];
	int n;

	json_object_object_add(o, "error", json_object_new_string(error));
	json_object_object_add(o, "code", json_object_new_string(code));
	n = snprintf(frame, sizeof(frame), "event: " EV_ERROR "\ndata: %s\n\n",
		     json_object_to_json_string_ext(o, RELAY_JSON_OUT));
	if (n > 0 && (size_t)n < sizeof(frame))
		conn_queue(&r->c, frame, (size_t)n);
	json_object_put(o);
}

/* The host ended an event stream with an error answer (it cannot go on with it, e.g. it cannot
 * read its event log): the client gets it as one `error` event. */
static void relay_stream_failed(struct relay *r, const char *line, size_t len)
{
	struct hostproto_answer a;

	if (hostproto_answer_parse(line, len, &a) < 0)
		return;
	if (a.type == HOSTPROTO_ERROR)
		relay_error_event(r, a.error != NULL ? a.error : "the agent host ended the stream",
				  a.code != NULL ? a.code : "host_error");
	hostproto_answer_release(&a);
}

/* One event line for the client: an SSE frame, or the line itself as a text frame. room: the
 * bytes the host sent from this line on (the frames of a batch go into one piece of memory). */
void relay_event(struct relay *r, const char *line, size_t len, size_t room)
{
	struct hostproto_event ev;
	char *space;

	if (hostproto_event_parse(line, len, &ev) < 0) {
		/* Only an error answer comes here (e.g. the host cannot read its log). */
		log_warn("session %s: the agent host ended the %s stream: %.*s", r->c.id,
			 relay_kind_names[r->kind], len > 200 ? 200 : (int)len, line);
		if (r->c.phase == CONN_WS) {
			conn_ws_close(&r->c, WS_CLOSE_INTERNAL, "agent host error");
		} else {
			relay_stream_failed(r, line, len);
			conn_finish(&r->c, 0);
		}
		return;
	}
	r->events_sent++;
	if (ev.name_len == strlen(EV_RESULT) && memcmp(ev.name, EV_RESULT, ev.name_len) == 0)
		r->result_seen = true;
	if (r->c.phase == CONN_WS) {
		/* A browser fails the connection on a text frame that is not UTF-8 (a "raw" event
		 * of bytes claude wrote): such an event goes out as a binary frame instead. */
		if (conn_ws_queue(&r->c, relay_utf8_valid(line, len), line, len) < 0)
			conn_cut(&r->c);
		return;
	}
	space = conn_reserve_room(&r->c, sse_encoded_len(&ev), room);
	if (space == NULL) {
		conn_cut(&r->c);
		return;
	}
	sse_encode(&ev, space);
}

static void relay_host_line(struct relay_host *h, const char *line, size_t len, size_t room)
{
	struct relay *r = h->r;

	if (h != r->host) {
		relay_side_answer(r, h, line, len);
		relay_host_close(h);
		return;
	}
	if (r->c.phase == CONN_WS || relay_at(r) == RS_STREAM)
		relay_event(r, line, len, room);
	else if (relay_at(r) == RS_ANSWER)
		relay_host_answer(r, line, len);
}

/*
 * A prompt's stream lost its host before the turn's result: the client gets an `error` event
 * ({"error","code"}) instead of a bare end. The host ends a stream early only when it exits (it
 * died, or claude did) or when it drops a subscriber too far behind, which needs this relay to
 * have stopped reading it: stream_ended then, host_exited otherwise. (Probing the host's socket
 * would race its exit: its listener may close after the stream.)
 */
static void relay_stream_error(struct relay *r)
{
	bool gone = !r->was_paused;

	log_warn("session %s: prompt stream ended before its result: %s", r->c.id,
		 gone ? "host_exited" : "stream_ended");
	relay_error_event(r,
			  gone ? "the agent host exited before the turn's result"
			       : "the agent host ended the stream before the turn's result; "
				 "GET /sessions/<id>/events replays it",
			  gone ? "host_exited" : "stream_ended");
}

/* The host closed h (or reading failed): the end of a stream, or a request left unanswered. */
static void relay_host_ended(struct relay_host *h, const char *why)
{
	struct relay *r = h->r;

	if (h != r->host) {
		relay_ws_error(r, h->kind, h->request_id, 502, "host_closed", why);
		relay_host_close(h);
		return;
	}
	relay_host_close(h);
	if (r->c.phase == CONN_WS) {
		conn_ws_close(&r->c, WS_CLOSE_GOING_AWAY, "agent host closed the stream");
	} else if (relay_at(r) == RS_ANSWER) {
		relay_respond(r, 502, "host_closed", why, NULL);
	} else if (relay_at(r) == RS_STREAM) {
		if (r->kind == RELAY_PROMPT && !r->result_seen)
			relay_stream_error(r);
		conn_finish(&r->c, 0); /* a prompt's turn is over, or the host went away */
	}
}

static void relay_host_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
	struct relay_host *h = stream->data;
	struct relay *r = h->r;
	size_t from = 0;

	if (nread == UV_ENOBUFS) {
		log_warn("session %s: the agent host sent a line over %d bytes", r->c.id,
			 RELAY_LINE_MAX);
		relay_host_ended(h, "the agent host sent too long a line");
		return;
	}
	if (nread < 0) {
		relay_host_ended(h, "the agent host closed the connection");
		return;
	}
	h->len += (size_t)nread;
	for (;;) {
		char *nl = memchr(h->buf + h->scanned, '\n', h->len - h->scanned);

		if (nl == NULL)
			break;
		relay_host_line(h, h->buf + from, (size_t)(nl - (h->buf + from)), h->len - from);
		if (h->closing)
			return;
		from = h->scanned = (size_t)(nl - h->buf) + 1;
	}
	if (from > 0) {
		memmove(h->buf, h->buf + from, h->len - from);
		h->len -= from;
	}
	h->scanned = h->len;
	if (h->cap > 2 * RELAY_READ_CHUNK && h->len < RELAY_READ_CHUNK) {
		/* A long line went by: give its memory back. */
		char *shrunk = realloc(h->buf, RELAY_READ_CHUNK);

		if (shrunk != NULL) {
			h->buf = shrunk;
			h->cap = RELAY_READ_CHUNK;
		}
	}
	if (h == r->host)
		conn_flush(&r->c);
}

void relay_host_resume(struct relay_host *h)
{
	if (h->reading || h->closing)
		return;
	if (uv_read_start((uv_stream_t *)&h->pipe, relay_host_alloc, relay_host_read) == 0)
		h->reading = true;
}

/*
 * Opens a host connection on the connected socket fd (taken over, closed on failure too) and
 * sends line (NULL: nothing). Returns the connection, or NULL.
 */
struct relay_host *relay_host_open(struct relay *r, int fd, const char *line, size_t len)
{
	struct relay_host *h = calloc(1, sizeof(*h));

	if (h == NULL) {
		close(fd);
		return NULL;
	}
	h->r = r;
	if (uv_pipe_init(r->b->loop, &h->pipe, 0) < 0) {
		close(fd);
		free(h);
		return NULL;
	}
	h->pipe.data = h;
	if (uv_pipe_open(&h->pipe, fd) < 0) {
		close(fd);
		h->closing = true;
		uv_close((uv_handle_t *)&h->pipe, relay_host_closed);
		return NULL;
	}
	if ((line != NULL && relay_host_write(h, line, len) < 0) ||
	    uv_read_start((uv_stream_t *)&h->pipe, relay_host_alloc, relay_host_read) < 0) {
		h->closing = true;
		uv_close((uv_handle_t *)&h->pipe, relay_host_closed);
		return NULL;
	}
	h->reading = true;
	return h;
}

/* ---- the WebSocket (/stream) ------------------------------------------------------------ */

/* A request frame of a /stream client: its own host connection, answered by one frame. */
static void relay_on_message(void *data, const uint8_t *msg, size_t len)
{
	static const struct {
		const char *type;
		enum relay_kind kind;
	} types[] = {
	    {"prompt", RELAY_PROMPT},
	    {"permission", RELAY_PERMISSION},
	    {"interrupt", RELAY_INTERRUPT},
	};
	struct relay *r = ((struct conn *)data)->data;
	json_object *obj;
	const char *type, *rid = "", *why;
	enum relay_kind kind = RELAY_STREAM;
	struct relay_host *h;
	char *line = NULL, ended[256];
	size_t line_len;
	int fd;

	if (r->c.phase != CONN_WS)
		return;
	obj = relay_parse_object((const char *)msg, len);
	type = relay_host_string(obj, "type", "");
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (strcmp(type, types[i].type) == 0)
			kind = types[i].kind;
	if (kind == RELAY_STREAM) {
		relay_ws_error(r, kind, NULL, 400, "invalid_request",
			       "expected a JSON object with type prompt, permission or interrupt");
		goto out;
	}
	/* A read-only identity may watch the stream; each request it sends is refused as the HTTP
	 * request would be at the door. */
	if (!r->c.who.admin) {
		relay_ws_error(r, kind, relay_host_string(obj, "requestId", ""), 403, "read_only",
			       "this identity is read-only: it may not change anything");
		goto out;
	}
	if (kind == RELAY_PERMISSION) {
		rid = relay_host_string(obj, "requestId", "");
		if (!relay_request_id_valid(rid)) {
			relay_ws_error(r, kind, NULL, 400, "invalid_request",
				       "requestId must be a permission request id");
			goto out;
		}
	}
	if (kind == RELAY_PROMPT && relay_ws_over_budget(r, obj))
		goto out;
	if (r->nside >= RELAY_WS_REQUESTS_MAX) {
		relay_ws_error(r, kind, rid, 429, "too_many_requests",
			       "too many requests of this connection are waiting for an answer");
		goto out;
	}
	line = relay_host_request(kind, obj, rid, r->c.who.by, &line_len, &why);
	if (line == NULL) {
		relay_ws_error(r, kind, rid, 400, "invalid_request", why);
		goto out;
	}
	if (kind == RELAY_PERMISSION && r->b->attention != NULL &&
	    attention_withdrawn(r->b->attention, r->c.id, rid, ended, sizeof(ended))) {
		relay_ws_error(r, kind, rid, 409, "already_answered", ended);
		goto out;
	}
	fd = hostsock_connect(r->b, r->c.id);
	h = fd >= 0 ? relay_host_open(r, fd, line, line_len) : NULL;
	if (h == NULL) {
		relay_ws_error(r, kind, rid, 503, "host_unavailable",
			       "the agent host of this session does not answer");
		goto out;
	}
	h->kind = kind;
	snprintf(h->request_id, sizeof(h->request_id), "%s", rid);
	h->deadline = relay_now(r) + RELAY_ANSWER_TIMEOUT_MS;
	LIST_INSERT_HEAD(&r->side, h, link);
	r->nside++;
out:
	free(line);
	json_object_put(obj);
}

/* The host takes the subscription: answer the upgrade and relay events as frames. */
void relay_upgrade(struct relay *r)
{
	static const struct ws_callbacks cb = {
	    .on_message = relay_on_message,
	    .on_pong = conn_on_pong,
	};
	struct conn_refusal why;
	char head[HTTP_RESPONSE_MAX];
	size_t n;

	if (conn_ws_accept(&r->c, &cb, &r->c, head, &n, &why) < 0) {
		relay_respond(r, why.status, why.code, why.message, NULL);
		return;
	}
	if (conn_ws_begin(&r->c, head, n, relay_now(r), r->b->opt.ping_interval_ms) < 0) {
		conn_cut(&r->c);
		return;
	}
	log_info("session %s: stream client open", r->c.id);
	if (r->c.ws_prefixed)
		conn_ws_recv(&r->c); /* frames that came with the request: no poll event for them */
	else
		conn_flush(&r->c);
}
