#include "relay.h"

#include "conn.h"
#include "hostproto.h"
#include "http.h"
#include "jsontext.h"
#include "log.h"
#include "origin.h"
#include "session.h"
#include "sse.h"
#include "store.h"
#include "ws.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#define RELAY_PREFIX      "/sessions/"
#define RELAY_PERMISSIONS "permissions/"
#define RELAY_SOCKET_LEAF "host.sock"
#define RELAY_PROC_FD_DIR "/proc/self/fd/%d/" RELAY_SOCKET_LEAF
/* An event line is claude's line inside {"id","event","data"}, and '\n' (core/hostproto.h). */
#define RELAY_LINE_MAX        HOSTPROTO_EVENT_LINE_MAX
#define RELAY_OK_BODY         "{\"status\":\"ok\"}\n"
#define RELAY_JSON_OUT        (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)
#define RELAY_MODE_HINT       "the session is in terminal mode; switch it with POST /sessions/<id>/mode"
#define RELAY_STATUS_MIN      400 /* a host error status outside these is a bad gateway */
#define RELAY_STATUS_MAX      599
#define RELAY_ERROR_EVENT_MAX 512 /* the `error` event that ends a prompt stream without result */

enum relay_state {
	RS_CHECK,      /* the request head is being checked (never seen by poll or tick) */
	RS_BODY,       /* reading the request body */
	RS_CONNECT,    /* session creating, or host socket missing/refusing: retried every tick */
	RS_ANSWER,     /* request sent to the host; waiting for its answer line */
	RS_STREAM,     /* event-stream head sent: host event lines go out as SSE */
	RS_WS,         /* WebSocket open: host event lines go out as text frames */
	RS_WS_CLOSING, /* close frame queued; waiting for the close handshake */
	RS_FINISH,     /* writing the rest of the response, then SHUT_WR */
	RS_LINGER,     /* response written: dropping what the peer still sends until its EOF */
	RS_DEAD,       /* handle closing; freed in the close callback */
};

struct relay;

/* One connection to the session's host.sock: the client's own (r->host) or, for a /stream
 * client, one per request frame (in r->side, answered by one line). */
struct relay_host {
	uv_pipe_t pipe;
	struct relay *r; /* the owner; a host connection never outlives its relay's state */
	LIST_ENTRY(relay_host) link;
	enum relay_kind kind;
	char request_id[RELAY_REQUEST_ID_MAX + 1]; /* a side permission: echoed in its answer */
	uint64_t deadline;                         /* a side request: for its answer */
	bool reading;
	bool closing;
	char *buf; /* received bytes; whole lines are taken from the front */
	size_t len, cap, scanned;
};
LIST_HEAD(relay_host_list, relay_host);

struct relay_write {
	uv_write_t req;
	char data[];
};

struct relay {
	struct bridge *b;
	LIST_ENTRY(relay) link;
	enum relay_kind kind;
	enum relay_state state;
	struct conn c; /* the socket, its poll handle and queued output (HTTP heads, SSE frames;
			  WebSocket frames are wslay's), lingering and pings */
	struct http_request *req;
	char id[SESSION_ID_MAX + 1];
	char request_id[RELAY_REQUEST_ID_MAX + 1];
	char *body;
	size_t body_len, body_want;
	char *host_req; /* the request line for the host */
	size_t host_req_len;
	struct relay_host *host; /* the connection whose lines go to this client */
	struct relay_host_list side;
	unsigned nside;
	struct ws *ws;
	uint64_t deadline;  /* of the current state */
	uint64_t last_out;  /* output last queued: pings fill silences */
	uint64_t last_sent; /* output last moved (or started waiting): stalls are cut */
	bool paused;        /* host (and WebSocket input) reading stopped: the client is behind */
	bool in_recv;       /* inside ws_recv: wslay is not re-entered, on_poll flushes after */
	uint64_t events_sent;
	bool result_seen; /* a prompt's stream: its turn's result went out */
	bool was_paused;  /* the host was not read for a while: it may have dropped us */
};

static void relay_on_poll(uv_poll_t *handle, int status, int events);
static void relay_close(struct relay *r);
static void relay_flush(struct relay *r);
static void relay_lookup(struct relay *r);
static void relay_host_close(struct relay_host *h);
static void relay_host_pause(struct relay_host *h);
static void relay_host_resume(struct relay_host *h);

static const char *const relay_kind_names[] = {
    [RELAY_PROMPT] = "prompt", [RELAY_PERMISSION] = "permission", [RELAY_INTERRUPT] = "interrupt",
    [RELAY_EVENTS] = "events", [RELAY_STREAM] = "stream",
};

static uint64_t relay_now(const struct relay *r)
{
	return uv_now(r->b->loop);
}

/* ---- pure parts ------------------------------------------------------------------------- */

int relay_route(const char *path, enum relay_kind *kind)
{
	static const struct {
		const char *tail;
		enum relay_kind kind;
	} tails[] = {
	    {"prompt", RELAY_PROMPT},
	    {"events", RELAY_EVENTS},
	    {"interrupt", RELAY_INTERRUPT},
	    {"stream", RELAY_STREAM},
	};
	size_t plen = strlen(RELAY_PREFIX), qlen = strlen(RELAY_PERMISSIONS);
	const char *slash, *rest;

	if (strncmp(path, RELAY_PREFIX, plen) != 0)
		return 0;
	slash = strchr(path + plen, '/');
	if (slash == NULL || slash == path + plen)
		return 0;
	rest = slash + 1;
	for (size_t i = 0; i < sizeof(tails) / sizeof(tails[0]); i++)
		if (strcmp(rest, tails[i].tail) == 0) {
			*kind = tails[i].kind;
			return 1;
		}
	if (strncmp(rest, RELAY_PERMISSIONS, qlen) == 0 && rest[qlen] != '\0' &&
	    strchr(rest + qlen, '/') == NULL) {
		*kind = RELAY_PERMISSION;
		return 1;
	}
	return 0;
}

bool relay_request_id_valid(const char *id)
{
	return hostproto_request_id_valid(id);
}

bool relay_utf8_valid(const char *s, size_t len)
{
	return jsontext_utf8_valid(s, len);
}

json_object *relay_parse_object(const char *text, size_t len)
{
	json_object *obj;

	if (len > RELAY_BODY_MAX)
		return NULL;
	/* The API's rule too: strict, UTF-8, one value, no key twice. */
	obj = jsontext_parse(text, len, JSON_TOKENER_DEFAULT_DEPTH, NULL);
	if (obj != NULL && !json_object_is_type(obj, json_type_object)) {
		json_object_put(obj);
		return NULL;
	}
	return obj;
}

static json_object *relay_member(json_object *obj, const char *key)
{
	json_object *v = NULL;

	if (obj != NULL)
		json_object_object_get_ex(obj, key, &v);
	return v;
}

char *relay_host_request(enum relay_kind kind, json_object *msg, const char *request_id,
			 size_t *len, const char **why)
{
	struct hostproto_request req = {0};
	char *line;

	switch (kind) {
	case RELAY_PROMPT:
		req.kind = HOSTPROTO_PROMPT;
		req.prompt = relay_member(msg, "prompt");
		if (!json_object_is_type(req.prompt, json_type_string) ||
		    json_object_get_string_len(req.prompt) == 0) {
			*why = "expected {\"prompt\": \"<non-empty string>\"}";
			return NULL;
		}
		break;
	case RELAY_PERMISSION:
		req.kind = HOSTPROTO_PERMISSION;
		snprintf(req.request_id, sizeof(req.request_id), "%s", request_id);
		if (hostproto_permission_fields(msg, &req) < 0) {
			*why =
			    "expected {\"behavior\": \"allow\"|\"deny\"} with an optional message "
			    "(string), updatedInput (object), interrupt (boolean) and, with allow, "
			    "updatedPermissions (1 to 16 objects with a \"type\")";
			return NULL;
		}
		break;
	case RELAY_INTERRUPT:
		req.kind = HOSTPROTO_INTERRUPT;
		break;
	case RELAY_EVENTS:
	case RELAY_STREAM:
		*why = "not a request for the host";
		return NULL;
	}
	line = hostproto_request_format(&req, len);
	if (line == NULL)
		*why = errno == ENOMEM ? "out of memory" : "not a request the agent host takes";
	return line;
}

/* ---- client output ---------------------------------------------------------------------- */

static size_t relay_queued(const struct relay *r)
{
	return r->c.out_bytes + (r->ws != NULL ? ws_queued_bytes(r->ws) : 0);
}

/* Notes that output was queued: silences are measured from here, stalls from the first byte
 * waiting. */
static void relay_queued_now(struct relay *r, size_t before)
{
	r->last_out = relay_now(r);
	if (before == 0)
		r->last_sent = r->last_out;
}

/* Queues len bytes written by the caller into the returned space. Returns NULL on ENOMEM. */
static char *relay_reserve(struct relay *r, size_t len)
{
	relay_queued_now(r, relay_queued(r));
	return conn_reserve(&r->c, len);
}

static int relay_queue(struct relay *r, const void *data, size_t len)
{
	char *space = relay_reserve(r, len);

	if (space == NULL)
		return -ENOMEM;
	memcpy(space, data, len);
	return 0;
}

/* Writes queued chunks. Returns 1 when all are out, 0 when the socket is full, -errno. */
static int relay_write_out(struct relay *r)
{
	uint64_t before = r->c.sent;
	int w = conn_write(&r->c);

	if (r->c.sent != before)
		r->last_sent = relay_now(r);
	return w;
}

static void relay_update_poll(struct relay *r)
{
	int want = 0;

	switch (r->state) {
	case RS_BODY:
	case RS_LINGER:
		want = UV_READABLE;
		break;
	case RS_CHECK:
	case RS_CONNECT:
	case RS_ANSWER:
	case RS_STREAM:
		/* Notice a client that gives up; nothing more is read from it. */
		want = UV_DISCONNECT | (!conn_out_empty(&r->c) ? UV_WRITABLE : 0);
		break;
	case RS_FINISH:
		want = UV_WRITABLE;
		break;
	case RS_WS:
	case RS_WS_CLOSING:
		if (!conn_out_empty(&r->c) || ws_want_write(r->ws))
			want |= UV_WRITABLE;
		if (conn_out_empty(&r->c) && !r->paused && ws_want_read(r->ws))
			want |= UV_READABLE;
		break;
	case RS_DEAD:
		return;
	}
	conn_watch(&r->c, want, relay_on_poll);
}

/* Stops reading the host (and the client's frames) while the client is behind; resumes when it
 * caught up. */
static void relay_backpressure(struct relay *r)
{
	size_t queued = relay_queued(r);
	struct relay_host *h = r->host;
	bool pause;

	if (!r->paused && queued > RELAY_OUT_HIGH)
		pause = true;
	else if (r->paused && queued < RELAY_OUT_LOW)
		pause = false;
	else
		return;
	r->paused = pause;
	r->was_paused = r->was_paused || pause;
	if (r->ws != NULL)
		ws_pause_read(r->ws, pause);
	if (h == NULL || h->closing)
		return;
	if (pause)
		relay_host_pause(h);
	else
		relay_host_resume(h);
}

/* ---- lifecycle -------------------------------------------------------------------------- */

static void relay_on_close(uv_handle_t *handle)
{
	struct relay *r = handle->data;

	conn_release(&r->c);
	ws_destroy(r->ws);
	http_request_destroy(r->req);
	free(r->body);
	free(r->host_req);
	free(r);
}

static void relay_hosts_close(struct relay *r)
{
	if (r->host != NULL)
		relay_host_close(r->host);
	while (!LIST_EMPTY(&r->side))
		relay_host_close(LIST_FIRST(&r->side));
}

/* Cuts the connection now. Safe from any callback: memory goes in the close callback. */
static void relay_close(struct relay *r)
{
	if (r->state == RS_DEAD)
		return;
	relay_hosts_close(r);
	if (r->state == RS_STREAM || r->state == RS_WS || r->state == RS_WS_CLOSING ||
	    r->events_sent > 0)
		log_info("session %s: %s client closed after %llu events", r->id,
			 relay_kind_names[r->kind], (unsigned long long)r->events_sent);
	r->state = RS_DEAD;
	LIST_REMOVE(r, link);
	r->b->nrelays--;
	conn_close(&r->c, relay_on_close);
}

/* The response is complete once the queue is written: then SHUT_WR and linger. */
static void relay_finish(struct relay *r)
{
	if (r->state == RS_DEAD || r->state == RS_FINISH || r->state == RS_LINGER)
		return;
	relay_hosts_close(r);
	r->state = RS_FINISH;
	relay_flush(r);
}

/* Starts the WebSocket close handshake; the connection is cut if it does not finish in time. */
static void relay_close_ws(struct relay *r, uint16_t code, const char *reason)
{
	if (r->state != RS_WS)
		return;
	relay_hosts_close(r);
	ws_queue_close(r->ws, code, reason);
	r->state = RS_WS_CLOSING;
	r->deadline = relay_now(r) + BRIDGE_CLOSE_TIMEOUT_MS;
	relay_flush(r);
}

/* Answers with an API.md error ({"error","code"}) and ends the connection. */
static void relay_respond(struct relay *r, int status, const char *code, const char *message,
			  const char *extra)
{
	if (r->state == RS_DEAD || r->state == RS_FINISH || r->state == RS_LINGER)
		return;
	log_info("session %s: %s: %d %s", r->id[0] != '\0' ? r->id : "?", relay_kind_names[r->kind],
		 status, code);
	if (r->state == RS_STREAM || r->state == RS_WS || r->state == RS_WS_CLOSING) {
		relay_close(r); /* too late for a status: the stream just ends */
		return;
	}
	relay_queued_now(r, relay_queued(r));
	if (conn_queue_error(&r->c, status, code, message, extra) < 0) {
		relay_close(r);
		return;
	}
	relay_finish(r);
}

/* Answers 200 {"status":"ok"} and ends the connection. */
static void relay_respond_ok(struct relay *r)
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

	log_info("session %s: %s: 200", r->id, relay_kind_names[r->kind]);
	if (n < 0 || (size_t)n >= sizeof(buf) || relay_queue(r, buf, (size_t)n) < 0) {
		relay_close(r);
		return;
	}
	relay_finish(r);
}

/* Sends the event-stream head: from here on the answer is a stream of events. */
static void relay_start_stream(struct relay *r)
{
	char head[SSE_HEAD_MAX];
	int n = sse_format_head(head, sizeof(head));

	if (n < 0 || relay_queue(r, head, (size_t)n) < 0) {
		relay_close(r);
		return;
	}
	r->state = RS_STREAM;
	relay_flush(r);
}

/* Sends what can be sent and moves a finished connection on. */
static void relay_flush(struct relay *r)
{
	int w;

	if (r->state == RS_DEAD || r->in_recv)
		return;
	w = relay_write_out(r);
	if (w < 0) {
		relay_close(r);
		return;
	}
	if (w == 1 && r->state == RS_FINISH) {
		conn_shut_write(&r->c);
		r->state = RS_LINGER;
		r->deadline = relay_now(r) + BRIDGE_CLOSE_TIMEOUT_MS;
	}
	if (w == 1 && (r->state == RS_WS || r->state == RS_WS_CLOSING)) {
		size_t before = ws_queued_bytes(r->ws);

		if (ws_send(r->ws) < 0) {
			relay_close(r);
			return;
		}
		if (ws_queued_bytes(r->ws) < before)
			r->last_sent = relay_now(r);
		if (!ws_want_read(r->ws) && !ws_want_write(r->ws)) {
			relay_close(r); /* close handshake done, or the peer failed the protocol */
			return;
		}
		if (r->state == RS_WS && !ws_want_read(r->ws)) {
			/* wslay stopped reading (the peer's close, a too big message). */
			relay_hosts_close(r);
			r->state = RS_WS_CLOSING;
			r->deadline = relay_now(r) + BRIDGE_CLOSE_TIMEOUT_MS;
		}
	}
	if (relay_queued(r) == 0)
		r->last_sent = relay_now(r); /* nothing waits: no stall */
	relay_backpressure(r);
	relay_update_poll(r);
}

/* ---- host connections ------------------------------------------------------------------- */

/* Connects to the session's host.sock. Returns the connected non-blocking socket, or -errno
 * (-ENOENT, -ECONNREFUSED, -EAGAIN: no host listening, yet). */
static int relay_connect_host(const struct bridge *b, const char *id)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	char path[CONFIG_PATH_MAX];
	int fd = -1, dir = -1, r;

	r = hostproto_path(b->cfg, id, RELAY_SOCKET_LEAF, path, sizeof(path));
	if (r < 0)
		return r;
	if (strlen(path) >= sizeof(addr.sun_path)) {
		/* sun_path holds 108 bytes: reach a long path through the directory's fd. */
		r = hostproto_path(b->cfg, id, "", path, sizeof(path));
		if (r < 0)
			return r;
		dir = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (dir < 0)
			return -errno;
		snprintf(path, sizeof(path), RELAY_PROC_FD_DIR, dir);
	}
	memcpy(addr.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		r = -errno;
		goto out;
	}
	/* A unix socket connects at once or fails at once (EAGAIN: its backlog is full). */
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		r = -errno;
		close(fd);
		goto out;
	}
	r = fd;
out:
	if (dir >= 0)
		close(dir);
	return r;
}

static void relay_host_closed(uv_handle_t *handle)
{
	struct relay_host *h = handle->data;

	free(h->buf);
	free(h);
}

static void relay_host_close(struct relay_host *h)
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

static void relay_host_pause(struct relay_host *h)
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
	json_object *v = relay_member(obj, key);

	return json_object_is_type(v, json_type_string) ? json_object_get_string(v) : dflt;
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
	if (answer.type == HOSTPROTO_ACCEPTED && r->kind == RELAY_PROMPT)
		relay_start_stream(r);
	else if (answer.type == HOSTPROTO_OK && r->kind != RELAY_PROMPT)
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
	size_t before = relay_queued(r);

	if (text == NULL || ws_queue_text(r->ws, text, strlen(text)) < 0) {
		json_object_put(obj);
		relay_close(r);
		return;
	}
	json_object_put(obj);
	relay_queued_now(r, before);
}

/* Answers a /stream client's request frame with an error frame. */
static void relay_ws_error(struct relay *r, enum relay_kind kind, const char *request_id,
			   int status, const char *code, const char *message)
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

/* The answer line of a /stream client's request: passed on with the request it answers. */
static void relay_side_answer(struct relay *r, struct relay_host *h, const char *line, size_t len)
{
	struct hostproto_answer answer;

	if (hostproto_answer_parse(line, len, &answer) < 0) {
		relay_ws_error(r, h->kind, h->request_id, 502, "bad_host_answer",
			       "the agent host gave an unexpected answer");
		return;
	}
	json_object_object_add(answer.obj, "request",
			       json_object_new_string(relay_kind_names[h->kind]));
	if (h->request_id[0] != '\0')
		json_object_object_add(answer.obj, "requestId",
				       json_object_new_string(h->request_id));
	relay_ws_json(r, json_object_get(answer.obj));
	hostproto_answer_release(&answer);
}

/* The host ended an event stream with an error answer (it cannot go on with it, e.g. it cannot
 * read its event log): the client gets it as one `error` event without id, {"error","code"}. */
static void relay_stream_failed(struct relay *r, const char *line, size_t len)
{
	struct hostproto_answer a;
	json_object *o;
	char frame[RELAY_ERROR_EVENT_MAX];
	int n;

	if (hostproto_answer_parse(line, len, &a) < 0)
		return;
	o = json_object_new_object();
	json_object_object_add(
	    o, "error",
	    json_object_new_string(a.error != NULL ? a.error : "the agent host ended the stream"));
	json_object_object_add(o, "code",
			       json_object_new_string(a.code != NULL ? a.code : "host_error"));
	n = snprintf(frame, sizeof(frame), "event: error\ndata: %s\n\n",
		     json_object_to_json_string_ext(o, RELAY_JSON_OUT));
	if (a.type == HOSTPROTO_ERROR && n > 0 && (size_t)n < sizeof(frame))
		relay_queue(r, frame, (size_t)n);
	json_object_put(o);
	hostproto_answer_release(&a);
}

/* One event line for the client: an SSE frame, or the line itself as a text frame. */
static void relay_event(struct relay *r, const char *line, size_t len)
{
	struct sse_event ev;
	char *space;

	if (sse_parse_line(line, len, &ev) < 0) {
		/* Only an error answer comes here (e.g. the host cannot read its log). */
		log_warn("session %s: the agent host ended the %s stream: %.*s", r->id,
			 relay_kind_names[r->kind], len > 200 ? 200 : (int)len, line);
		if (r->state == RS_WS) {
			relay_close_ws(r, WS_CLOSE_INTERNAL, "agent host error");
		} else {
			relay_stream_failed(r, line, len);
			relay_finish(r);
		}
		return;
	}
	r->events_sent++;
	if (ev.name_len == 6 && memcmp(ev.name, "result", 6) == 0)
		r->result_seen = true;
	if (r->state == RS_WS) {
		size_t before = relay_queued(r);
		/* A browser fails the connection on a text frame that is not UTF-8 (a "raw" event
		 * of bytes claude wrote): such an event goes out as a binary frame instead. */
		int err = relay_utf8_valid(line, len) ? ws_queue_text(r->ws, line, len)
						      : ws_queue_binary(r->ws, line, len);

		if (err < 0) {
			relay_close(r);
			return;
		}
		relay_queued_now(r, before);
		return;
	}
	space = relay_reserve(r, sse_encoded_len(&ev));
	if (space == NULL) {
		relay_close(r);
		return;
	}
	sse_encode(&ev, space);
}

static void relay_host_line(struct relay_host *h, const char *line, size_t len)
{
	struct relay *r = h->r;

	if (h != r->host) {
		relay_side_answer(r, h, line, len);
		relay_host_close(h);
		return;
	}
	switch (r->state) {
	case RS_ANSWER:
		relay_host_answer(r, line, len);
		break;
	case RS_STREAM:
	case RS_WS:
		relay_event(r, line, len);
		break;
	default:
		break;
	}
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
	json_object *o = json_object_new_object();
	bool gone = !r->was_paused;
	char frame[RELAY_ERROR_EVENT_MAX];
	int n;

	json_object_object_add(
	    o, "error",
	    json_object_new_string(gone ? "the agent host exited before the turn's result"
					: "the agent host ended the stream before the turn's "
					  "result; GET /sessions/<id>/events replays it"));
	json_object_object_add(o, "code",
			       json_object_new_string(gone ? "host_exited" : "stream_ended"));
	n = snprintf(frame, sizeof(frame), "event: error\ndata: %s\n\n",
		     json_object_to_json_string_ext(o, RELAY_JSON_OUT));
	log_warn("session %s: prompt stream ended before its result: %s", r->id,
		 gone ? "host_exited" : "stream_ended");
	if (n > 0 && (size_t)n < sizeof(frame))
		relay_queue(r, frame, (size_t)n);
	json_object_put(o);
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
	switch (r->state) {
	case RS_ANSWER:
		relay_respond(r, 502, "host_closed", why, NULL);
		break;
	case RS_STREAM:
		if (r->kind == RELAY_PROMPT && !r->result_seen)
			relay_stream_error(r);
		relay_finish(r); /* a prompt's turn is over, or the host went away */
		break;
	case RS_WS:
		relay_close_ws(r, WS_CLOSE_GOING_AWAY, "agent host closed the stream");
		break;
	default:
		break;
	}
}

static void relay_host_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
	struct relay_host *h = stream->data;
	struct relay *r = h->r;
	size_t from = 0;

	if (nread == UV_ENOBUFS) {
		log_warn("session %s: the agent host sent a line over %d bytes", r->id,
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
		relay_host_line(h, h->buf + from, (size_t)(nl - (h->buf + from)));
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
		relay_flush(r);
}

static void relay_host_resume(struct relay_host *h)
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
static struct relay_host *relay_host_open(struct relay *r, int fd, const char *line, size_t len)
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
	struct relay *r = data;
	json_object *obj;
	const char *type, *rid = "", *why;
	enum relay_kind kind = RELAY_STREAM;
	struct relay_host *h;
	char *line = NULL;
	size_t line_len;
	int fd;

	if (r->state != RS_WS)
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
	if (kind == RELAY_PERMISSION) {
		rid = relay_host_string(obj, "requestId", "");
		if (!relay_request_id_valid(rid)) {
			relay_ws_error(r, kind, NULL, 400, "invalid_request",
				       "requestId must be a permission request id");
			goto out;
		}
	}
	if (r->nside >= RELAY_WS_REQUESTS_MAX) {
		relay_ws_error(r, kind, rid, 429, "too_many_requests",
			       "too many requests of this connection are waiting for an answer");
		goto out;
	}
	line = relay_host_request(kind, obj, rid, &line_len, &why);
	if (line == NULL) {
		relay_ws_error(r, kind, rid, 400, "invalid_request", why);
		goto out;
	}
	fd = relay_connect_host(r->b, r->id);
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

static void relay_on_pong(void *data)
{
	struct relay *r = data;

	conn_pong(&r->c);
}

/* ws_recv failed: a vanished peer is cut at once; a protocol error still gets the close frame
 * wslay queued. Returns true when r is closed. */
static bool relay_recv_failed(struct relay *r, int err)
{
	if (r->state == RS_DEAD)
		return true;
	if (err == -EPIPE || err == -ECONNRESET || !ws_want_write(r->ws)) {
		relay_close(r);
		return true;
	}
	if (r->state == RS_WS) {
		relay_hosts_close(r);
		r->state = RS_WS_CLOSING;
		r->deadline = relay_now(r) + BRIDGE_CLOSE_TIMEOUT_MS;
	}
	return false;
}

static void relay_ws_recv(struct relay *r)
{
	int err;

	r->in_recv = true;
	err = ws_recv(r->ws);
	r->in_recv = false;
	if (err < 0 && relay_recv_failed(r, err))
		return;
	relay_flush(r);
}

/* The host takes the subscription: answer the upgrade and relay events as frames. */
static void relay_upgrade(struct relay *r)
{
	static const struct ws_callbacks cb = {
	    .on_message = relay_on_message,
	    .on_pong = relay_on_pong,
	};
	char accept[WS_ACCEPT_LEN + 1], head[HTTP_RESPONSE_MAX];
	const char *rest;
	size_t rest_len;
	int n;

	if (ws_accept_key(http_request_header(r->req, "Sec-WebSocket-Key", NULL), accept) < 0) {
		relay_respond(r, 400, "bad_key", "invalid Sec-WebSocket-Key", NULL);
		return;
	}
	r->ws = ws_create(r->c.fd, &cb, r);
	if (r->ws == NULL) {
		relay_respond(r, 503, "no_memory", "out of memory", NULL);
		return;
	}
	rest = http_request_rest(r->req, &rest_len);
	n = http_format_upgrade(head, sizeof(head), accept);
	if (n < 0 || ws_prefix(r->ws, rest, rest_len) < 0) {
		relay_respond(r, 400, "bad_request", "unexpected bytes after the request", NULL);
		return;
	}
	if (relay_queue(r, head, (size_t)n) < 0) {
		relay_close(r);
		return;
	}
	r->state = RS_WS;
	r->c.next_ping = relay_now(r) + r->b->opt.ping_interval_ms;
	log_info("session %s: stream client open", r->id);
	if (rest_len > 0) {
		/* Frames that came with the request: no poll event will announce them. */
		relay_ws_recv(r);
		return;
	}
	relay_flush(r);
}

/* ---- requests --------------------------------------------------------------------------- */

/* The host listens: send the request and go on as its kind requires. */
static void relay_connected(struct relay *r, int fd)
{
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
		r->deadline = relay_now(r) + RELAY_ANSWER_TIMEOUT_MS;
		relay_update_poll(r);
		break;
	}
}

/* Waits (in RS_CONNECT, retried by the tick) until deadline, then answers 409 or 503. */
static void relay_wait(struct relay *r, uint64_t wait_ms, int status, const char *code,
		       const char *message)
{
	uint64_t now = relay_now(r);

	if (r->state != RS_CONNECT) {
		r->state = RS_CONNECT;
		r->deadline = now + wait_ms;
		relay_update_poll(r);
		return;
	}
	if (now >= r->deadline)
		relay_respond(r, status, code, message, NULL);
}

/* Reads the record and connects to the host, waits, or refuses. */
static void relay_lookup(struct relay *r)
{
	struct conn_refusal why;
	struct session s;
	enum conn_record rec;
	int fd;

	rec = conn_lookup(&r->b->store, r->id, &s, &why);
	if (rec == CONN_RECORD_MISSING) {
		relay_respond(r, why.status, why.code, why.message, NULL);
		return;
	}
	if (s.mode != SESSION_STRUCTURED) {
		relay_respond(r, 409, "not_structured", RELAY_MODE_HINT, NULL);
		return;
	}
	switch (rec) {
	case CONN_RECORD_CREATING:
		relay_wait(r, r->b->opt.creating_wait_ms, 409, "not_running",
			   "the session is still being created");
		return;
	case CONN_RECORD_MISSING:
	case CONN_RECORD_UNAVAILABLE:
		relay_respond(r, why.status, why.code, why.message, NULL);
		return;
	case CONN_RECORD_READY:
		break;
	}
	fd = relay_connect_host(r->b, r->id);
	if (fd >= 0) {
		relay_connected(r, fd);
		return;
	}
	if (fd != -ENOENT && fd != -ECONNREFUSED && fd != -EAGAIN) {
		log_error("session %s: cannot connect to its host: %s", r->id, strerror(-fd));
		relay_respond(r, 503, "host_unavailable", "cannot reach the agent host", NULL);
		return;
	}
	/* Right after a mode switch the host may not listen yet. */
	relay_wait(r, RELAY_CONNECT_WAIT_MS, 503, "host_unavailable",
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
	r->host_req = relay_host_request(r->kind, obj, r->request_id, &r->host_req_len, &why);
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
			relay_close(r); /* gone before a whole request */
			return;
		}
		r->body_len += (size_t)n;
	}
	relay_body_done(r);
}

/* Drops what the peer still sends; closes at its EOF or past CONN_LINGER_MAX. */
static void relay_linger(struct relay *r)
{
	if (conn_drain(&r->c) > 0)
		relay_close(r);
}

/* True when the Origin rule of API.md lets this request through (403 answered otherwise). */
static bool relay_origin_ok(struct relay *r)
{
	const char *origin, *host, *proto;
	unsigned norigin, nhost;

	origin = http_request_header(r->req, "Origin", &norigin);
	host = http_request_header(r->req, "Host", &nhost);
	proto = http_request_header(r->req, "X-Forwarded-Proto", NULL);
	if (nhost != 1) {
		relay_respond(r, 400, "bad_host", "exactly one Host header is required", NULL);
		return false;
	}
	if (norigin > 1 || !origin_allowed(origin, proto != NULL && *proto != '\0' ? proto : "http",
					   host, r->b->cfg->allowed_origins)) {
		relay_respond(r, 403, "forbidden_origin", "this Origin may not use this session",
			      NULL);
		return false;
	}
	return true;
}

/* Checks a WebSocket upgrade as terminal.c does. */
static bool relay_upgrade_ok(struct relay *r)
{
	const char *version = http_request_header(r->req, "Sec-WebSocket-Version", NULL);
	unsigned nkey, nversion;

	http_request_header(r->req, "Sec-WebSocket-Version", &nversion);
	http_request_header(r->req, "Sec-WebSocket-Key", &nkey);
	if (!http_request_is_upgrade(r->req) ||
	    !http_has_token(http_request_header(r->req, "Upgrade", NULL), "websocket") ||
	    nkey != 1) {
		relay_respond(r, 400, "not_websocket", "expected a WebSocket upgrade", NULL);
		return false;
	}
	if (nversion != 1 || strcmp(version, "13") != 0) {
		relay_respond(r, 400, "bad_version", "WebSocket version 13 is required",
			      "Sec-WebSocket-Version: 13\r\n");
		return false;
	}
	return true;
}

/* The id to replay after: Last-Event-ID, else ?after=, else 0. Returns 0 or -EINVAL. */
static int relay_after(const struct relay *r, uint64_t *after)
{
	const char *last = http_request_header(r->req, "Last-Event-ID", NULL);
	int err;

	*after = 0;
	if (last != NULL)
		return sse_parse_id(last, strlen(last), after);
	err = sse_query_id(http_request_query(r->req), "after", after);
	return err == -ENOENT ? 0 : err;
}

/* Checks the request against API.md, in the order that reveals least to a refused caller, and
 * starts it. */
static void relay_handle_request(struct relay *r)
{
	const char *path = http_request_path(r->req) + strlen(RELAY_PREFIX);
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
	memcpy(r->id, path, idlen);
	r->id[idlen] = '\0';
	if (strcmp(http_request_method(r->req), post ? "POST" : "GET") != 0) {
		relay_respond(r, 405, "method_not_allowed", post ? "use POST" : "use GET",
			      post ? "Allow: POST\r\n" : "Allow: GET\r\n");
		return;
	}
	if (!session_id_valid(r->id)) {
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
	if (r->kind == RELAY_STREAM && !relay_upgrade_ok(r))
		return;
	if ((post || r->kind == RELAY_STREAM) && !relay_origin_ok(r))
		return;
	body = http_request_body_length(r->req, &len);
	if (body < 0) {
		relay_respond(r, 411, "length_required", "send the body with a Content-Length",
			      NULL);
		return;
	}
	if (len > RELAY_BODY_MAX) {
		relay_respond(r, 413, "body_too_large", "request body is larger than 64 KiB", NULL);
		return;
	}
	ct = http_request_header(r->req, "Content-Type", NULL);
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
		r->host_req_len = hostproto_subscribe_format(after, line);
		r->host_req = strdup(line);
		if (r->host_req == NULL) {
			relay_close(r);
			return;
		}
		relay_lookup(r);
		return;
	}
	r->body_want = (size_t)len;
	r->body = malloc(r->body_want + 1);
	if (r->body == NULL) {
		relay_close(r);
		return;
	}
	rest = http_request_rest(r->req, &rest_len);
	if (rest_len > r->body_want) {
		relay_respond(r, 400, "bad_request", "unexpected bytes after the body", NULL);
		return;
	}
	memcpy(r->body, rest, rest_len);
	r->body_len = rest_len;
	r->body[r->body_want] = '\0';
	r->state = RS_BODY;
	r->deadline = relay_now(r) + r->b->opt.handshake_timeout_ms;
	relay_read_body(r);
	if (r->state == RS_BODY)
		relay_update_poll(r);
}

static void relay_on_poll(uv_poll_t *handle, int status, int events)
{
	struct relay *r = handle->data;

	if (status < 0) {
		relay_close(r);
		return;
	}
	switch (r->state) {
	case RS_BODY:
		relay_read_body(r);
		break;
	case RS_CHECK:
	case RS_CONNECT:
	case RS_ANSWER:
	case RS_STREAM:
		if (events & UV_DISCONNECT)
			relay_close(r); /* the client left: only its host connection ends */
		else
			relay_flush(r);
		break;
	case RS_FINISH:
		relay_flush(r);
		break;
	case RS_LINGER:
		relay_linger(r);
		break;
	case RS_WS:
	case RS_WS_CLOSING:
		if ((events & (UV_READABLE | UV_DISCONNECT)) && conn_out_empty(&r->c)) {
			relay_ws_recv(r);
			break;
		}
		relay_flush(r);
		break;
	case RS_DEAD:
		break;
	}
	if (r->state != RS_DEAD)
		relay_update_poll(r);
}

/* ---- the service ------------------------------------------------------------------------ */

static bool relay_claims(const char *path)
{
	enum relay_kind kind;

	return relay_route(path, &kind) == 1;
}

static int relay_accept(struct bridge *b, int fd, struct http_request *req)
{
	struct relay *r = calloc(1, sizeof(*r));
	int err;

	if (r == NULL) {
		close(fd);
		http_request_destroy(req);
		return -ENOMEM;
	}
	r->b = b;
	r->req = req;
	LIST_INIT(&r->side);
	err = conn_init(&r->c, b->loop, fd, r);
	if (err < 0) {
		close(fd);
		http_request_destroy(req);
		free(r);
		return err;
	}
	relay_route(http_request_path(req), &r->kind);
	r->state = RS_CHECK;
	LIST_INSERT_HEAD(&b->relays, r, link);
	b->nrelays++;
	relay_handle_request(r);
	return 0;
}

/* Pings, stalls and the deadline of one connection. */
static void relay_tick_one(struct relay *r, uint64_t now)
{
	const struct bridge_options *opt = &r->b->opt;
	struct relay_host *h, *next;

	if (relay_queued(r) > 0 && now - r->last_sent >= opt->stall_timeout_ms) {
		log_warn("session %s: %s client has not read its output for %u ms, cut", r->id,
			 relay_kind_names[r->kind], opt->stall_timeout_ms);
		relay_close(r);
		return;
	}
	switch (r->state) {
	case RS_CHECK:
		return;
	case RS_BODY:
		if (now >= r->deadline)
			relay_respond(r, 408, "body_timeout", "the request body did not arrive",
				      NULL);
		return;
	case RS_CONNECT:
		relay_lookup(r);
		return;
	case RS_ANSWER:
		if (now >= r->deadline)
			relay_respond(r, 504, "host_timeout", "the agent host did not answer",
				      NULL);
		return;
	case RS_STREAM:
		if (now - r->last_out >= RELAY_SSE_PING_MS) {
			if (relay_queue(r, SSE_PING, strlen(SSE_PING)) < 0) {
				relay_close(r);
				return;
			}
			relay_flush(r);
		}
		return;
	case RS_WS:
		break;
	case RS_WS_CLOSING:
	case RS_LINGER:
		if (now >= r->deadline)
			relay_close(r);
		return;
	case RS_FINISH:
	case RS_DEAD:
		return;
	}
	for (h = LIST_FIRST(&r->side); h != NULL && r->state == RS_WS; h = next) {
		next = LIST_NEXT(h, link);
		if (now >= h->deadline) {
			relay_ws_error(r, h->kind, h->request_id, 504, "host_timeout",
				       "the agent host did not answer");
			relay_host_close(h);
		}
	}
	if (r->state == RS_WS && conn_ping(&r->c, r->ws, now, opt->ping_interval_ms) < 0) {
		log_warn("session %s: stream client did not answer a ping, closing", r->id);
		relay_close(r);
		return;
	}
	relay_flush(r);
}

static void relay_tick(struct bridge *b, uint64_t now)
{
	struct relay *r, *next;

	for (r = LIST_FIRST(&b->relays); r != NULL; r = next) {
		next = LIST_NEXT(r, link);
		relay_tick_one(r, now);
	}
}

static void relay_shutdown(struct bridge *b)
{
	struct relay *r, *next;

	for (r = LIST_FIRST(&b->relays); r != NULL; r = next) {
		next = LIST_NEXT(r, link);
		switch (r->state) {
		case RS_STREAM:
			relay_finish(r); /* the client reconnects with Last-Event-ID */
			break;
		case RS_WS:
			relay_close_ws(r, WS_CLOSE_GOING_AWAY, "bridge shutting down");
			break;
		case RS_CHECK:
		case RS_BODY:
		case RS_CONNECT:
		case RS_ANSWER:
			relay_close(r);
			break;
		case RS_WS_CLOSING:
		case RS_FINISH:
		case RS_LINGER:
		case RS_DEAD:
			break;
		}
	}
}

static void relay_abort(struct bridge *b)
{
	while (!LIST_EMPTY(&b->relays))
		relay_close(LIST_FIRST(&b->relays));
}

static unsigned relay_count(const struct bridge *b)
{
	return b->nrelays;
}

const struct bridge_service relay_service = {
    .claims = relay_claims,
    .accept = relay_accept,
    .tick = relay_tick,
    .shutdown = relay_shutdown,
    .abort = relay_abort,
    .count = relay_count,
};
