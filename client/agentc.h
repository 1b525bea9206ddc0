/*
 * agent-daemon's HTTP API as a client sees it (docs/API.md), through nginx at AGENTD_URL:
 * requests with a JSON answer, and SSE streams (GET /events, a turn's POST /sessions/<id>/prompt,
 * GET /sessions/<id>/events). Every request carries "Authorization: Bearer <AGENTD_TOKEN>" when a
 * token is set, and a state-changing request made for someone else (the Telegram bot's user)
 * carries "X-Agentd-Actor: <id>", so that agent-daemon records who decided. A stream's events are
 * read as they arrive but handed to the caller only between network rounds (agentc_dispatch), never
 * from inside libcurl, and a stream that falls too far behind its reader is ended (it is replayed
 * from its last id by reconnecting, which agent-daemon supports) rather than buffered without
 * bound.
 */
#ifndef AGENTD_CLIENT_AGENTC_H
#define AGENTD_CLIENT_AGENTC_H

#include "sseread.h"
#include "xfer.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#define AGENTC_ANSWER_MAX                                                                          \
	(1024 * 1024) /* GET /sessions of 10000 sessions would not fit:                            \
			 agentd allows AGENTD_MAX_SESSIONS of them */
#define AGENTC_TIMEOUT_MS 30000
#define AGENTC_EVENT_MAX  (2 * 1024 * 1024) /* an event's data (claude's longest lines) */
#define AGENTC_QUEUE_MAX  (8 * 1024 * 1024) /* bytes of events read but not yet handled */
#define AGENTC_STALL_S    60 /* agentd pings every 15 s: a minute of silence is a dead link */
#define AGENTC_DEPTH      64
#define AGENTC_ERROR_MAX  512

struct agentc;
struct agentc_stream;

struct agentc_answer {
	long status;                /* 0: no answer (err says why) */
	bool transient;             /* no answer or 502/503/504: worth trying again later */
	bool aborted;               /* ended by xfer_loop_finish (shutdown): nothing to report */
	json_object *body;          /* the JSON answer, or NULL; borrowed for the callback */
	char err[AGENTC_ERROR_MAX]; /* the "error" sentence of a 4xx/5xx, or curl's */
	char code[64];              /* the "code" of an error answer */
};

typedef void (*agentc_fn)(void *arg, const struct agentc_answer *a);
/* A stream's event, its data parsed (NULL when it is not JSON). Borrowed for the call. */
typedef void (*agentc_event_fn)(void *arg, const struct sseread_event *ev, json_object *data);

/* A client of agent-daemon at url (no trailing slash needed) with token (NULL or "": none);
 * both copied. NULL when out of memory. */
struct agentc *agentc_create(struct xfer_loop *loop, const char *url, const char *token);
/* Closes every stream (no callbacks) and frees c. NULL-safe. */
void agentc_destroy(struct agentc *c);

/*
 * method path with body (consumed; NULL: none), for actor (e.g. a Telegram user id; 0: none). fn
 * gets the answer unless the transfer is cancelled. Returns the transfer, or NULL with errno.
 */
struct xfer *agentc_request(struct agentc *c, const char *method, const char *path,
			    json_object *body, int64_t actor, agentc_fn fn, void *arg);

/*
 * Opens an SSE stream: method path with body (consumed; NULL: none), Last-Event-ID: last_id when
 * last_id > 0, for actor. on_event gets each event; on_end once, when it ends (a->status 200 for a
 * stream that ran and ended; otherwise the refusal or failure), after every event it brought.
 * Neither is called after agentc_stream_close. Returns the stream, or NULL with errno.
 */
struct agentc_stream *agentc_stream_open(struct agentc *c, const char *method, const char *path,
					 json_object *body, uint64_t last_id, int64_t actor,
					 agentc_event_fn on_event, agentc_fn on_end, void *arg);

/* Ends s; no callback follows. NULL-safe; may be called from its own callbacks. */
void agentc_stream_close(struct agentc_stream *s);

/* Hands every stream's waiting events to their callbacks, in order. Call after each round. */
void agentc_dispatch(struct agentc *c);

#endif
