/*
 * The connection core every service of the bridge (terminal, relay, and the next ones) is built
 * on: one client socket watched by one poll handle, the bytes queued for it (HTTP heads, SSE
 * frames; WebSocket frames stay in wslay's queue), reading a request head, answering an HTTP
 * error, lingering after the answer (half-closed, dropping what the peer still sends, so that
 * closing never resets a response the peer has not read), the WebSocket (upgrade checks, accept,
 * reading, close handshake, pings), stall and deadline cuts, the stop on SIGTERM, the lookup of
 * a session record with its state mapped to the API.md answer, and the watch of that record
 * (inotify on the records directory) that ends a wait for `creating`. A service embeds a struct
 * conn in its own connection, keeps its own states while the phase is CONN_SERVICE and says the
 * rest through struct conn_ops; the core owns no policy beyond these steps.
 */
#ifndef AGENTD_BRIDGE_CONN_H
#define AGENTD_BRIDGE_CONN_H

#include "access.h"
#include "auth.h"
#include "bridge.h"
#include "session.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#define CONN_IOV_MAX    64           /* queued chunks written by one sendmsg */
#define CONN_ROOM_MAX   (64 * 1024)  /* conn_reserve_room: the most memory one chunk takes */
#define CONN_SINK       4096         /* bytes dropped per read while lingering */
#define CONN_LINGER_MAX (256 * 1024) /* input dropped after the answer before closing anyway */
/* A watched record is re-read this often even without a notification: inotify drops events when
 * its queue overflows (many records written at once), and libuv does not report that. */
#define CONN_RECORD_FALLBACK_MS (5 * 1000)
/* The connection a libuv handle that is a member of struct conn belongs to. */
#define CONN_OF(handle, member) ((struct conn *)((char *)(handle)-offsetof(struct conn, member)))

struct conn_chunk;
struct http_request;
struct ws;
struct ws_callbacks;

/*
 * Where a connection is. A service keeps its own states while the core's phase is CONN_SERVICE
 * (reading a body, waiting for a record, talking to a host, streaming SSE); the phases after it
 * are the same for every service and the core drives them: writing the rest of an answer,
 * lingering after it, an open WebSocket and its close handshake, and the cut.
 */
enum conn_phase {
	CONN_SERVICE,    /* the service's own states (its want/on_poll callbacks) */
	CONN_FINISH,     /* writing the rest of the answer, then SHUT_WR */
	CONN_LINGER,     /* answer written: dropping what the peer still sends until its EOF */
	CONN_WS,         /* WebSocket open */
	CONN_WS_CLOSING, /* close frame queued or the peer's read: waiting for the handshake */
	CONN_DEAD,       /* handles closing; released in the last close callback */
};

struct conn;

/*
 * What a service tells the core. Every member but release may be NULL (nothing to do).
 */
struct conn_ops {
	int (*want)(struct conn *c);                 /* poll mask in CONN_SERVICE */
	void (*on_poll)(struct conn *c, int events); /* poll events in CONN_SERVICE */
	void (*detach)(struct conn *c);  /* the session side ends (closing, lingering, cut) */
	void (*flushed)(struct conn *c); /* after each flush: backpressure on the source */
	void (*record_changed)(struct conn *c); /* the watched record changed (conn_watch_record) */
	void (*tick)(struct conn *c, uint64_t now); /* each tick in CONN_SERVICE and CONN_WS */
	void (*stop)(struct conn *c);    /* the bridge stops, c in CONN_SERVICE (NULL: cut) */
	void (*cut)(struct conn *c);     /* c is being cut (still in its phase): last words */
	void (*release)(struct conn *c); /* every handle closed: free the service's memory */
	const char *kind;  /* the client kind GET /metrics counts it as (stats.h); NULL: none */
	bool cut_stalled;  /* output queued that does not move for stall_timeout_ms: cut */
	bool cut_overfull; /* more than BRIDGE_OUT_HARD bytes or BRIDGE_OUT_MSGS_HARD frames for
			      the WebSocket (frames are small, e.g. pongs owed to a ping flood): cut
			    */
};

struct conn {
	LIST_ENTRY(conn) link; /* in set, while driven and not cut */
	struct conn_set *set;
	int fd; /* -1 once handed over (conn_release then leaves it open) */
	uv_poll_t poll;
	uv_fs_event_t record; /* the records directory, while conn_watch_record watches it */
	int events;           /* what poll watches now */
	struct conn_chunk *out_head, *out_tail;
	size_t out_bytes; /* queued and not yet written */
	uint64_t sent;    /* bytes written since init (a service compares it to see output move) */
	size_t lingered;  /* bytes dropped while lingering */
	uint64_t next_ping;
	bool pong_due;
	bool in_recv; /* inside ws_recv: wslay is not re-entered, the service flushes after */
	/* Driven connections (conn_start): */
	enum conn_phase phase;
	const struct conn_ops *ops;
	void *data;                  /* the service's connection */
	char id[SESSION_ID_MAX + 1]; /* the session's, once the service knows it (logs, watch) */
	struct http_request *req;    /* the request being served (the service frees it when done) */
	struct auth_who who;         /* the sender, from the headers nginx set (core/auth.h) */
	char identity[AUTH_IDENTITY_MAX + 1]; /* X-Agentd-Identity ("": none), for the limits */
	struct access_cred cred;              /* what let it in, checked again (access.h) */
	struct ws *ws;                        /* once upgraded; destroyed by conn_release */
	uint64_t deadline; /* of the phase (FINISH: 0 for none); the service's in CONN_SERVICE */
	/* Output last moved, or found nothing queued: stalls count from here. */
	uint64_t last_moved;
	uint64_t last_queued; /* output last queued: a service's keep-alive fills silences */
	bool read_paused;     /* the service stopped the WebSocket's input (its sink is full) */
	bool ws_prefixed;     /* frames came with the request: read them without a poll event */
	bool watching;        /* the record watch is started */
	bool watch_failed;    /* ... or could not start: conn_record_due falls back to polling */
	uint64_t next_check;  /* conn_record_due: the next safety-net re-read */
	int handles;          /* open handles (poll, record) */
	uv_close_cb closed;   /* conn_close's callback, run when both are closed */
};

/* The API.md answer to a request whose session cannot be served (status, code, sentence). */
struct conn_refusal {
	int status;
	const char *code;
	char message[SESSION_ERROR_MAX + 128];
};

/* What conn_lookup found in the record. */
enum conn_record {
	CONN_RECORD_MISSING = -1,    /* no record (404) or unreadable (500): refusal set */
	CONN_RECORD_READY = 0,       /* running or attached */
	CONN_RECORD_CREATING = 1,    /* still being created: the caller waits */
	CONN_RECORD_UNAVAILABLE = 2, /* failed, stopping, exited, lost: 409, refusal set */
};

/*
 * Starts c on the non-blocking socket fd; data is what the handles' callbacks find in
 * handle->data (and c->data). Returns 0 or a libuv error (then nothing is to be closed; fd stays
 * open).
 */
int conn_init(struct conn *c, uv_loop_t *loop, int fd, void *data);

/* Makes the poll handle watch want (UV_READABLE | UV_WRITABLE | UV_DISCONNECT, 0 for nothing),
 * calling cb; no-op when it already does. */
void conn_watch(struct conn *c, int want, uv_poll_cb cb);

/* Closes the handles (poll stops watching fd at once); cb runs when both are closed, and only
 * then may conn_release run and the memory go. */
void conn_close(struct conn *c, uv_close_cb cb);

/* Frees the queued output, the WebSocket and the request, and closes fd (unless handed over,
 * -1). */
void conn_release(struct conn *c);

/* Queues len bytes the caller writes into the returned space. NULL (errno ENOMEM) on failure.
 * The space follows the last queued output in its memory when that has room left. */
char *conn_reserve(struct conn *c, size_t len);

/* conn_reserve, and when it takes new memory, room for room bytes (at most CONN_ROOM_MAX) in
 * all: a caller that knows more output follows (a batch of events) gets it queued in one piece
 * of memory, written with one iovec, instead of an allocation each. */
char *conn_reserve_room(struct conn *c, size_t len, size_t room);

/* Queues a copy of len bytes. Returns 0 or -ENOMEM. */
int conn_queue(struct conn *c, const void *data, size_t len);

/* Bytes waiting for the peer: queued here and in the WebSocket. */
size_t conn_queued(const struct conn *c);

/* Notes output just queued (before: conn_queued before it): last_queued, and last_moved when
 * nothing was waiting (a stall counts from the first byte that waits). */
void conn_queued_now(struct conn *c, size_t before);

/* True when nothing is queued. */
static inline bool conn_out_empty(const struct conn *c)
{
	return c->out_head == NULL;
}

/* Drops the queued output (an answer replaces it). */
void conn_drop_output(struct conn *c);

/* Writes queued output. Returns 1 when all is out, 0 when the socket is full, -errno. */
int conn_write(struct conn *c);

/*
 * Queues an API.md error response ({"error","code"}, see http_format_error); a message too
 * long for HTTP_RESPONSE_MAX is replaced by "request failed". Returns 0 or -ENOMEM/-EOVERFLOW.
 */
int conn_queue_error(struct conn *c, int status, const char *code, const char *message,
		     const char *extra);

/*
 * Reads the request head into req as far as the socket has it. Returns 0 when more is to come,
 * 1 when the head is complete, -EOVERFLOW when it is too large (431), -EBADMSG when it is not
 * HTTP (400), -EPIPE when the peer left (or failed) before a whole head.
 */
int conn_read_head(struct conn *c, struct http_request *req);

/* Lingering: half-closes the socket (our answer is complete). */
void conn_shut_write(struct conn *c);

/* Lingering: drops what the peer still sends. Returns 1 when the connection is to be closed
 * (the peer's EOF, an error, or more than CONN_LINGER_MAX bytes), 0 while it may go on. */
int conn_drain(struct conn *c);

/*
 * The WebSocket ping, called each tick with interval_ms (0: no pings). Returns 1 when a ping was
 * queued on ws, 0 when none was due, -ETIMEDOUT when the previous one went unanswered (the
 * caller cuts the connection). conn_pong records an answer.
 */
int conn_ping(struct conn *c, struct ws *ws, uint64_t now, unsigned interval_ms);
void conn_pong(struct conn *c);

/*
 * Reads session id's record into *s and classifies it (enum conn_record). For MISSING and
 * UNAVAILABLE, *why holds the answer (404 not_found, 500 store_error, or 409 with the code of
 * session_unavailable); *s is valid for every result but MISSING.
 */
enum conn_record conn_lookup(const struct store *st, const char *id, struct session *s,
			     struct conn_refusal *why);

/* ---- driven connections ---------------------------------------------------------------------
 * A service that calls conn_start hands the shared phases to the core: it keeps its own states
 * in CONN_SERVICE (ops->want and ops->on_poll), and the core answers, flushes, lingers, runs the
 * WebSocket and its close handshake, and cuts, calling ops back where the service has a say.
 */

/* Makes c a driven connection in CONN_SERVICE, one of set until it is cut. */
void conn_start(struct conn *c, struct conn_set *set, const struct conn_ops *ops);

/* Watches what the phase (or, in CONN_SERVICE, ops->want) needs. */
void conn_update(struct conn *c);

/*
 * Sends what can be sent and moves the phase on: a written answer half-closes and lingers, an
 * open WebSocket sends its frames, a finished close handshake cuts; ops->flushed then runs.
 * No-op inside ws_recv (the core flushes after it).
 */
void conn_flush(struct conn *c);

/* Cuts the connection now: ops->detach, ops->cut, then the handles close and ops->release
 * runs. Safe from any callback. */
void conn_cut(struct conn *c);

/* The answer is queued: write it, then SHUT_WR and linger. deadline_ms bounds writing and
 * lingering together (0: writing is bounded only by the service, lingering by
 * BRIDGE_CLOSE_TIMEOUT_MS). */
void conn_finish(struct conn *c, unsigned deadline_ms);

/* Answers with an API.md error (conn_queue_error) in place of any queued output and finishes
 * (deadline_ms as conn_finish); an open WebSocket is cut instead (too late for a status). */
void conn_respond(struct conn *c, int status, const char *code, const char *message,
		  const char *extra, unsigned deadline_ms);

/*
 * Checks a WebSocket upgrade request as API.md says: Upgrade: websocket with exactly one key
 * (400 not_websocket), version 13 (400 bad_version). Returns true, or false with *why set.
 */
bool conn_upgrade_ok(const struct http_request *req, struct conn_refusal *why, const char **extra);

/*
 * The Origin rule of API.md: exactly one Host (400 bad_host) and at most one Origin that
 * origin_allowed accepts (403 forbidden_origin with message). Returns true, or false with *why.
 */
bool conn_origin_ok(const struct http_request *req, const char *allowed, const char *message,
		    struct conn_refusal *why);

/*
 * Accepts the WebSocket upgrade of c->req: creates c->ws with cb and data, takes the bytes that
 * came after the head, and formats the 101 answer into head (HTTP_RESPONSE_MAX), its length in
 * *len. Returns 0, or -1 with *why set (400 bad_key or bad_request, 503 no_memory).
 */
int conn_ws_accept(struct conn *c, const struct ws_callbacks *cb, void *data, char *head,
		   size_t *len, struct conn_refusal *why);

/* Queues the 101 head and enters CONN_WS with the first ping due after ping_ms. Returns 0 or
 * -ENOMEM (then nothing changed). */
int conn_ws_begin(struct conn *c, const char *head, size_t len, uint64_t now, unsigned ping_ms);

/* Queues a text (else binary) message on the WebSocket. Returns 0 or -errno. */
int conn_ws_queue(struct conn *c, bool text, const void *data, size_t len);

/* Stops or resumes reading the WebSocket (the service's sink is full or drained). */
void conn_pause_input(struct conn *c, bool pause);

/* Reads the WebSocket (the bytes that came with the request first) and flushes. */
void conn_ws_recv(struct conn *c);

/* Starts the close handshake of an open WebSocket (ops->detach first); it is cut if it does not
 * finish within BRIDGE_CLOSE_TIMEOUT_MS. */
void conn_ws_close(struct conn *c, uint16_t code, const char *reason);

/*
 * Ends c because the door no longer lets it in (code and message as access.h's refusal: plain
 * ASCII without quotes): an open WebSocket closes with 1008 and code as the reason; a stream
 * whose head is out (SSE) gets an `error` event {"error","code"} and ends; a connection that has
 * answered nothing yet gets 401 {"error","code"}. Nothing more it sends reaches its service.
 */
void conn_end(struct conn *c, const char *code, const char *message);

/* Reads the token store again when it changed and ends c (conn_end) when its credential no
 * longer lets it in. Returns true while c is let in. */
bool conn_allowed(struct conn *c);

/* After the store changed (access_refresh): ends every connection of set it no longer lets in. */
void conn_set_recheck(struct conn_set *set);

/* Records an answered ping (a struct ws_callbacks on_pong whose data is the conn). */
void conn_on_pong(void *data);

/*
 * A tick of c: cuts it when its output stalled (ops->cut_stalled) or its FINISH, LINGER or
 * WS_CLOSING deadline passed, pings an open WebSocket every opt->ping_interval_ms (cut when the
 * last one went unanswered), then runs ops->tick in CONN_SERVICE and CONN_WS.
 */
void conn_tick(struct conn *c, uint64_t now, const struct bridge_options *opt);

/* conn_tick for every connection of set. */
void conn_set_tick(struct conn_set *set, uint64_t now, const struct bridge_options *opt);

/* The bridge stops: an open WebSocket gets close 1001, a connection in CONN_SERVICE ops->stop
 * (or the cut); answers and close handshakes are left to finish. */
void conn_set_stop(struct conn_set *set);

/* Cuts every connection of set (the shutdown deadline passed). */
void conn_set_abort(struct conn_set *set);

/*
 * Allocates a service's connection of size zeroed bytes with its struct conn at offset, and
 * starts it on fd in set with ops (conn_init, conn_start), serving req (NULL: none yet).
 * Returns it, or NULL with fd closed and req freed.
 */
void *conn_open(size_t size, size_t offset, uv_loop_t *loop, int fd, struct conn_set *set,
		const struct conn_ops *ops, struct http_request *req);

/*
 * Watches the records directory dir for changes of c->id's record: ops->record_changed runs on
 * each. Returns 0, or a libuv error (then conn_record_due polls every BRIDGE_CREATING_POLL_MS).
 * No-op while watching. conn_unwatch_record stops.
 */
int conn_watch_record(struct conn *c, const char *dir, uint64_t now);
void conn_unwatch_record(struct conn *c);

/* True once per fallback interval while the record is watched (a tick re-reads it then). */
bool conn_record_due(struct conn *c, uint64_t now);

#endif
