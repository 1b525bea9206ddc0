#include "events_int.h"

#include "eventnames.h"
#include "hostproto.h"
#include "http.h"
#include "jsontext.h"
#include "log.h"
#include "session.h"
#include "sse.h"
#include "store.h"
#include "ws.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- clients ---------------------------------------------------------------------------- */

static bool evclient_open(const struct evclient *cl)
{
	return (cl->c.phase == CONN_SERVICE && cl->streaming) || cl->c.phase == CONN_WS;
}

bool evclient_behind(const struct evclient *cl)
{
	return conn_queued(&cl->c) >= EVENTS_QUEUE_HIGH ||
	       (cl->c.ws != NULL && ws_queued_count(cl->c.ws) >= EVENTS_FRAMES_HIGH);
}

/* Queues one event line (without its '\n'): an SSE frame, or the line as a WebSocket frame. */
void evclient_send_line(struct evclient *cl, const char *line, size_t len)
{
	struct hostproto_event e;
	char *space;

	if (hostproto_event_parse(line, len, &e) < 0)
		return; /* a torn line */
	cl->after = e.id;
	cl->sent++;
	if (cl->c.phase == CONN_WS) {
		/* A text frame must be UTF-8; data a publisher did not check goes as binary. */
		if (conn_ws_queue(&cl->c, jsontext_utf8_valid(line, len), line, len) < 0)
			conn_cut(&cl->c);
		return;
	}
	space = conn_reserve(&cl->c, sse_encoded_len(&e));
	if (space == NULL) {
		conn_cut(&cl->c);
		return;
	}
	sse_encode(&e, space);
}

/* Ends the stream with an `error` event ({"error","code"}, no id). */
static void evclient_end(struct evclient *cl, const char *code, const char *error)
{
	json_object *data = json_object_new_object(), *frame = json_object_new_object();
	char text[EVENTS_ERROR_MAX];
	int n;

	log_warn("events client ends: %s", code);
	json_object_object_add(data, "error", json_object_new_string(error));
	json_object_object_add(data, "code", json_object_new_string(code));
	if (cl->c.phase == CONN_WS) {
		json_object_object_add(frame, "event", json_object_new_string(EV_ERROR));
		json_object_object_add(frame, "data", json_object_get(data));
		n = snprintf(text, sizeof(text), "%s",
			     json_object_to_json_string_ext(frame, EVENTS_JSON_OUT));
		if (n > 0 && (size_t)n < sizeof(text))
			conn_ws_queue(&cl->c, true, text, (size_t)n);
		conn_ws_close(&cl->c, WS_CLOSE_GOING_AWAY, code);
	} else {
		n = snprintf(text, sizeof(text), "event: " EV_ERROR "\ndata: %s\n\n",
			     json_object_to_json_string_ext(data, EVENTS_JSON_OUT));
		if (n > 0 && (size_t)n < sizeof(text))
			conn_queue(&cl->c, text, (size_t)n);
		conn_finish(&cl->c, 0);
	}
	json_object_put(frame);
	json_object_put(data);
}

/* Reads the next piece of the log for the client and queues what it has not had. Returns false
 * when its stream ended. */
static bool evclient_catch_up(struct evclient *cl)
{
	struct events *ev = cl->ev;
	const struct evlog *file = events_file(ev, cl->gen);
	struct evlog_batch *bt = NULL;
	int r;

	if (file == NULL) {
		evclient_end(cl, "lagged",
			     "the client fell behind the event log's rotation; reconnect with its "
			     "Last-Event-ID");
		return false;
	}
	if (cl->offset >= file->end) {
		if (cl->gen == ev->gen) {
			cl->live = true;
		} else {
			cl->gen++;
			cl->offset = 0;
		}
		return true;
	}
	r = evlog_read(file, cl->offset, EVENTS_REPLAY_CHUNK, &bt);
	if (r < 0 || bt->len == 0) {
		log_error("cannot read the event log at %lld: %s", (long long)cl->offset,
			  strerror(r < 0 ? -r : EIO));
		evlog_batch_unref(bt);
		evclient_end(cl, "log_error", "cannot read the event log");
		return false;
	}
	for (size_t i = 0; i < bt->n && evclient_open(cl); i++) {
		const struct evlog_entry *e = &bt->ev[i];

		if (e->id > cl->after)
			evclient_send_line(cl, bt->data + e->off, e->len - 1);
	}
	cl->offset += (off_t)bt->len;
	evlog_batch_unref(bt);
	return true;
}

/*
 * Sends what the client has not had from the log while it is not behind, and goes live at the
 * log's end. Behind, it stops: the flush that moves its queue (ops->flushed) brings it back.
 */
void evclient_pump(struct evclient *cl)
{
	if (cl->pumping)
		return;
	cl->pumping = true; /* the flushes below do not come back here */
	for (;;) {
		while (!cl->live && evclient_open(cl) && !evclient_behind(cl))
			if (!evclient_catch_up(cl))
				break;
		if (!evclient_open(cl))
			break;
		conn_flush(&cl->c);
		if (cl->live || !evclient_open(cl) || evclient_behind(cl))
			break;
	}
	cl->pumping = false;
}

/* Builds the snapshot line: {"id":<last>,"event":"snapshot","data":{"snapshot":true,
 * "sessions":[every known session, by id]}}. Returns it (caller frees) or NULL. */
static char *events_snapshot(struct events *ev, size_t *len)
{
	json_object *data = json_object_new_object(), *list = json_object_new_array();
	char head[HOSTPROTO_EVENT_HEAD_MAX], *line = NULL;
	const char *text;
	size_t tlen;
	int hn;

	if (data == NULL || list == NULL) {
		json_object_put(list);
		goto out;
	}
	json_object_object_add(data, "snapshot", json_object_new_boolean(true));
	json_object_object_foreach(ev->known, key, val)
	{
		(void)key;
		json_object_array_add(list, json_object_get(val));
	}
	json_object_object_add(data, "sessions", list);
	text = json_object_to_json_string_length(data, EVENTS_JSON_OUT, &tlen);
	hn = hostproto_event_head(ev->log.last_id, EV_SNAPSHOT, head);
	if (text == NULL || hn < 0)
		goto out;
	*len = (size_t)hn + tlen + 1;
	line = malloc(*len + 1);
	if (line != NULL)
		snprintf(line, *len + 1, "%s%s}", head, text);
out:
	json_object_put(data);
	return line;
}

/*
 * Where a client that saw every event up to after (has_after) starts: true with its position
 * when the log holds every later event; false when it needs the snapshot (no id, an id older
 * than the oldest kept, or newer than the last).
 */
static bool events_position(const struct events *ev, bool has_after, uint64_t after, unsigned *gen,
			    off_t *offset)
{
	*offset = 0;
	if (!has_after || after > ev->log.last_id)
		return false;
	if (after == ev->log.last_id) {
		*gen = ev->gen;
		*offset = ev->log.end;
		return true;
	}
	if (ev->first != 0 && after >= ev->first - 1) {
		*gen = ev->gen;
		return true;
	}
	if (ev->old.fd >= 0 && ev->old_first != 0 && after >= ev->old_first - 1) {
		*gen = ev->gen - 1;
		return true;
	}
	return false;
}

static int evclient_want(struct conn *c)
{
	/* Notice a client that gives up; nothing is read from it. */
	return UV_DISCONNECT | (!conn_out_empty(c) ? UV_WRITABLE : 0);
}

static void evclient_on_poll(struct conn *c, int events)
{
	if (events & UV_DISCONNECT)
		conn_cut(c);
	else
		conn_flush(c);
}

static void evclient_unlink(struct conn *c)
{
	struct evclient *cl = c->data;

	if (cl->linked)
		LIST_REMOVE(cl, link);
	cl->linked = false;
}

static void evclient_flushed(struct conn *c)
{
	struct evclient *cl = c->data;

	if (!cl->live && cl->linked)
		evclient_pump(cl);
}

static void evclient_tick(struct conn *c, uint64_t now)
{
	struct evclient *cl = c->data;

	if (c->phase == CONN_SERVICE && cl->streaming &&
	    now - c->last_queued >= EVENTS_SSE_PING_MS) {
		if (conn_queue(c, SSE_PING, strlen(SSE_PING)) < 0) {
			conn_cut(c);
			return;
		}
		conn_flush(c);
	}
}

/* The bridge stops: a stream ends (the client reconnects with Last-Event-ID). */
static void evclient_stop(struct conn *c)
{
	struct evclient *cl = c->data;

	if (cl->streaming)
		conn_finish(c, 0);
	else
		conn_cut(c);
}

static void evclient_cut(struct conn *c)
{
	struct evclient *cl = c->data;

	if (cl->streaming || c->phase == CONN_WS || c->phase == CONN_WS_CLOSING)
		log_info("events client closed after %llu events", (unsigned long long)cl->sent);
}

static void evclient_release(struct conn *c)
{
	struct evclient *cl = c->data;

	evclient_unlink(c);
	conn_release(&cl->c);
	free(cl);
}

static const struct conn_ops evclient_ops = {
    .kind = "events",
    .want = evclient_want,
    .on_poll = evclient_on_poll,
    .detach = evclient_unlink,
    .flushed = evclient_flushed,
    .tick = evclient_tick,
    .stop = evclient_stop,
    .cut = evclient_cut,
    .release = evclient_release,
    .cut_stalled = true,
};

static void evclient_respond(struct evclient *cl, int status, const char *code, const char *message,
			     const char *extra)
{
	log_info("GET " EVENTS_PATH ": %d %s", status, code);
	conn_respond(&cl->c, status, code, message, extra, 0);
}

/* The id to replay after: Last-Event-ID, else ?after=. Returns 1 (one given), 0 (none) or
 * -EINVAL. */
static int evclient_after(const struct evclient *cl, uint64_t *after)
{
	const char *last = http_request_header(cl->c.req, "Last-Event-ID", NULL);
	int err;

	*after = 0;
	if (last != NULL)
		return sse_parse_id(last, strlen(last), after) < 0 ? -EINVAL : 1;
	err = sse_query_id(http_request_query(cl->c.req), "after", after);
	return err == -ENOENT ? 0 : err < 0 ? -EINVAL : 1;
}

/* Sends the SSE head or accepts the WebSocket. Returns 0, or -1 when answered otherwise. */
static int evclient_begin(struct evclient *cl, bool upgrade)
{
	static const struct ws_callbacks cb = {.on_pong = conn_on_pong};
	struct bridge *b = cl->ev->b;
	struct conn_refusal why;
	char head[HTTP_RESPONSE_MAX];
	size_t n;
	int hn;

	if (!upgrade) {
		hn = sse_format_head(head, sizeof(head));
		if (hn < 0 || conn_queue(&cl->c, head, (size_t)hn) < 0) {
			conn_cut(&cl->c);
			return -1;
		}
		cl->streaming = true;
		return 0;
	}
	if (conn_ws_accept(&cl->c, &cb, &cl->c, head, &n, &why) < 0) {
		evclient_respond(cl, why.status, why.code, why.message, NULL);
		return -1;
	}
	if (conn_ws_begin(&cl->c, head, n, uv_now(b->loop), b->opt.ping_interval_ms) < 0) {
		conn_cut(&cl->c);
		return -1;
	}
	cl->streaming = true;
	return 0;
}

/* Checks the request (API.md), answers the stream's head, then a snapshot or the replay. */
static void evclient_start(struct evclient *cl)
{
	struct events *ev = cl->ev;
	struct conn_refusal why;
	const char *extra = NULL;
	bool upgrade = http_request_header(cl->c.req, "Upgrade", NULL) != NULL;
	uint64_t after;
	int has_after;

	if (strcmp(http_request_method(cl->c.req), "GET") != 0) {
		evclient_respond(cl, 405, "method_not_allowed", "use GET", "Allow: GET\r\n");
		return;
	}
	if ((upgrade && !conn_upgrade_ok(cl->c.req, &why, &extra)) ||
	    !conn_origin_ok(cl->c.req, ev->b->cfg->allowed_origins,
			    "this Origin may not read the events", &why)) {
		evclient_respond(cl, why.status, why.code, why.message, extra);
		return;
	}
	has_after = evclient_after(cl, &after);
	if (has_after < 0) {
		evclient_respond(cl, 400, "invalid_event_id",
				 "Last-Event-ID and ?after= must be event ids", NULL);
		return;
	}
	if (evclient_begin(cl, upgrade) < 0)
		return;
	LIST_INSERT_HEAD(&ev->clients, cl, link);
	cl->linked = true;
	if (!events_position(ev, has_after > 0, after, &cl->gen, &cl->offset)) {
		size_t len;
		char *line = events_snapshot(ev, &len);

		if (line == NULL) {
			conn_cut(&cl->c);
			return;
		}
		evclient_send_line(cl, line, len);
		free(line);
		cl->gen = ev->gen;
		cl->offset = ev->log.end;
		cl->after = ev->log.last_id;
	} else {
		cl->after = after;
	}
	log_info("events client open (%s, %s %llu)", upgrade ? "WebSocket" : "SSE",
		 has_after > 0 ? "after" : "snapshot at", (unsigned long long)cl->after);
	if (cl->c.phase == CONN_WS && cl->c.ws_prefixed)
		conn_ws_recv(&cl->c);
	evclient_pump(cl);
}

static int events_accept(struct bridge *b, int fd, struct http_request *req, int route)
{
	struct evclient *cl = conn_open(sizeof(*cl), offsetof(struct evclient, c), b->loop, fd,
					&b->conns, &evclient_ops, req);

	(void)route;
	if (cl == NULL)
		return -ENOMEM;
	cl->ev = b->events;
	if (cl->ev == NULL) {
		conn_respond(&cl->c, 503, "unavailable", "the event stream is not available", NULL,
			     0);
		return 0;
	}
	evclient_start(cl);
	return 0;
}

const struct bridge_service events_service = {
    .accept = events_accept,
};

const struct bridge_route events_routes[] = {
    {EVENTS_PATH, &events_service, 0},
    {NULL, NULL, 0},
};
