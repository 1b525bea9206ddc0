#include "relay.h"

#include "attention.h"

#include "conn.h"
#include "events.h"
#include "evlog.h"
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
#include <stddef.h>
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
/* The event that ends the replay of a session that no longer runs: its sentence (a conn_refusal
 * message) JSON-escaped, in {"error","code"} (and {"event","data"} on a WebSocket). */
#define RELAY_END_EVENT_MAX (2 * sizeof(((struct conn_refusal *)0)->message) + 128)

/* The relay's own states, while the core's phase is CONN_SERVICE (conn.h); the answer, lingering,
 * the WebSocket (host event lines as text frames) and its close are the core's phases. */
enum relay_state {
	RS_CHECK,   /* the request head is being checked (never seen by poll or tick) */
	RS_BODY,    /* reading the request body */
	RS_CONNECT, /* session creating (its record watched), or host socket missing/refusing
		       (retried every tick) */
	RS_ANSWER,  /* request sent to the host; waiting for its answer line */
	RS_STREAM,  /* event-stream head sent: host event lines go out as SSE */
	RS_CORE,    /* (relay_at) the core's phase: a WebSocket, an answer, lingering */
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
	enum relay_kind kind;
	enum relay_state state;
	struct conn c; /* the socket, its poll handle and queued output (HTTP heads, SSE frames;
			  WebSocket frames are wslay's), the answer, lingering, the WebSocket */
	char request_id[RELAY_REQUEST_ID_MAX + 1];
	char *body;
	size_t body_len, body_want;
	json_object *answer; /* PERMISSION: the client's body (a terminal session's goes to the
				attention hub, not to a host) */
	char *host_req;      /* the request line for the host */
	size_t host_req_len;
	struct relay_host *host; /* the connection whose lines go to this client */
	struct relay_host_list side;
	unsigned nside;
	bool paused;    /* host (and WebSocket input) reading stopped: the client is behind */
	bool wait_host; /* RS_CONNECT: the host socket, not the record, is waited for */
	uint64_t events_sent;
	bool result_seen; /* a prompt's stream: its turn's result went out */
	bool was_paused;  /* the host was not read for a while: it may have dropped us */
	/* The history of a session that no longer runs (exited, lost): its event log, read here
	 * (no host to ask), sent from after on, then the end saying why (end_code, end_msg). */
	bool replaying, pumping;
	bool end_queued; /* a WebSocket's last frame is queued: the close follows once it is out */
	struct evlog history; /* fd -1: no log (nothing to replay) */
	off_t history_at;
	uint64_t after;
	const char *end_code; /* session_unavailable's code: agent_exited, session_lost */
	char end_msg[sizeof(((struct conn_refusal *)0)->message)];
};

static void relay_lookup(struct relay *r);
static void relay_history_pump(struct relay *r);
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

/* The relay's state, or RS_CORE once the core drives the connection. */
static enum relay_state relay_at(const struct relay *r)
{
	return r->c.phase == CONN_SERVICE ? r->state : RS_CORE;
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
			 const char *by, size_t *len, const char **why)
{
	struct hostproto_request req = {.by = by};
	char *line;

	switch (kind) {
	case RELAY_PROMPT:
		req.kind = HOSTPROTO_PROMPT;
		req.prompt = relay_member(msg, "prompt");
		if ((*why = hostproto_prompt_why(req.prompt)) != NULL) {
			if (strcmp(*why, HOSTPROTO_PROMPT_NUL) != 0)
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
static void relay_respond(struct relay *r, int status, const char *code, const char *message,
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

	log_info("session %s: %s: 200", r->c.id, relay_kind_names[r->kind]);
	if (n < 0 || (size_t)n >= sizeof(buf) || conn_queue(&r->c, buf, (size_t)n) < 0) {
		conn_cut(&r->c);
		return;
	}
	conn_finish(&r->c, 0);
}

/* Sends the event-stream head: from here on the answer is a stream of events. */
static void relay_start_stream(struct relay *r)
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

/* ---- host connections ------------------------------------------------------------------- */

/* The uid the session's host runs as: the record's own uid, else the agent user's. */
static uid_t relay_host_uid(const struct bridge *b, const char *id)
{
	struct session *s = malloc(sizeof(*s));
	uid_t uid = b->host_uid;

	if (s != NULL && store_read(&b->store, id, s, NULL) == 0 && s->uid != 0)
		uid = (uid_t)s->uid;
	free(s);
	return uid;
}

/* Connects to the session's host.sock. Returns the connected non-blocking socket, or -errno
 * (-ENOENT, -ECONNREFUSED, -EAGAIN: no host listening, yet; -EPERM: the listener is not the agent
 * user's). */
int relay_connect_host(const struct bridge *b, const char *id)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	struct ucred cred = {0};
	socklen_t credlen = sizeof(cred);
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
	/* The directory is the agent's: what is at that path may be its symlink to another
	 * socket (tmux's, the API's). Only the session's own listener is its host: its own uid's
	 * when it is caged with one (so that no other session's uid can speak as its host), else
	 * the agent user's. */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &credlen) < 0)
		r = -errno;
	else
		r = cred.uid == relay_host_uid(b, id) ? fd : -EPERM;
	if (r < 0)
		close(fd);
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

/* A prompt the host took: who sent it goes on /events (event `prompt`, {"session","by"}). */
static void relay_note_prompt(struct relay *r)
{
	json_object *data;

	if (r->b->events == NULL || (data = json_object_new_object()) == NULL)
		return;
	json_object_object_add(data, "session", json_object_new_string(r->c.id));
	json_object_object_add(data, "by", json_object_new_string(r->c.who.by));
	events_publish(r->b->events, "prompt", data);
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
static void relay_error_event(struct relay *r, const char *error, const char *code)
{
	json_object *o = json_object_new_object();
	char frame[RELAY_ERROR_EVENT_MAX];
	int n;

	json_object_object_add(o, "error", json_object_new_string(error));
	json_object_object_add(o, "code", json_object_new_string(code));
	n = snprintf(frame, sizeof(frame), "event: error\ndata: %s\n\n",
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
static void relay_event(struct relay *r, const char *line, size_t len, size_t room)
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
	if (ev.name_len == 6 && memcmp(ev.name, "result", 6) == 0)
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
	fd = relay_connect_host(r->b, r->c.id);
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
static void relay_upgrade(struct relay *r)
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
		n = snprintf(text, sizeof(text), "event: error\ndata: %s\n\n",
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
	if (r->kind == RELAY_PERMISSION && r->b->attention != NULL &&
	    attention_withdrawn(r->b->attention, r->c.id, r->request_id, msg, sizeof(msg))) {
		/* Its claude may be gone (a reboot): its host would not know the request at all. */
		relay_respond(r, 409, "already_answered", msg, NULL);
		return;
	}
	fd = relay_connect_host(r->b, r->c.id);
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
