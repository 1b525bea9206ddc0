/*
 * The relay's inside, shared by its two files: relay.c (the service: requests, checks, the
 * history of a session that no longer runs, the client's side) and relayhost.c (the
 * connections to agentd-host, what the host says, the /stream WebSocket's frames). Not a
 * contract for anyone else: the service's is relay.h.
 */
#ifndef AGENTD_BRIDGE_RELAY_INT_H
#define AGENTD_BRIDGE_RELAY_INT_H

#include "relay.h"

#include "conn.h"
#include "evlog.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/types.h>
#include <uv.h>

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

/* The names of the kinds, for logs and the /stream answers' "request". */
extern const char *const relay_kind_names[];

static inline uint64_t relay_now(const struct relay *r)
{
	return uv_now(r->b->loop);
}

/* The relay's state, or RS_CORE once the core drives the connection. */
static inline enum relay_state relay_at(const struct relay *r)
{
	return r->c.phase == CONN_SERVICE ? r->state : RS_CORE;
}

/* relay.c: answers with an API.md error ({"error","code"}) and ends the connection; answers
 * 200 {"status":"ok"}; sends the event-stream head. */
void relay_respond(struct relay *r, int status, const char *code, const char *message,
		   const char *extra);
void relay_respond_ok(struct relay *r);
void relay_start_stream(struct relay *r);

/* relayhost.c: the host connections of r (its own, r->host, and a /stream client's side ones):
 * open on a connected fd sending line (NULL: nothing; NULL answer: failed, fd closed), close,
 * stop and start reading. */
struct relay_host *relay_host_open(struct relay *r, int fd, const char *line, size_t len);
void relay_host_close(struct relay_host *h);
void relay_host_pause(struct relay_host *h);
void relay_host_resume(struct relay_host *h);

/* relayhost.c: the host takes a /stream subscription: answer the upgrade, relay its events as
 * frames and take its request frames. */
void relay_upgrade(struct relay *r);

/* relayhost.c: one event line for the client: an SSE frame, or the line itself as a WebSocket
 * frame. room: the bytes the host sent from this line on (the frames of a batch go into one
 * piece of memory). Also what the history of a session that no longer runs is sent with. */
void relay_event(struct relay *r, const char *line, size_t len, size_t room);

/* relayhost.c: queues one SSE `error` event without id: data {"error","code"}; a /stream
 * client's request answered with an error frame. */
void relay_error_event(struct relay *r, const char *error, const char *code);
void relay_ws_error(struct relay *r, enum relay_kind kind, const char *request_id, int status,
		    const char *code, const char *message);

#endif
