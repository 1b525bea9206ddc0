/*
 * The connection core every service of the bridge (terminal, relay, and the next ones) is built
 * on: one client socket watched by one poll handle, the bytes queued for it (HTTP heads, SSE
 * frames; WebSocket frames stay in wslay's queue), reading a request head, answering an HTTP
 * error, lingering after the answer (half-closed, dropping what the peer still sends, so that
 * closing never resets a response the peer has not read), the WebSocket ping, and the lookup of
 * a session record with its state mapped to the API.md answer. A service embeds a struct conn
 * in its own connection and keeps its own states; the core owns no policy beyond these steps.
 */
#ifndef AGENTD_BRIDGE_CONN_H
#define AGENTD_BRIDGE_CONN_H

#include "bridge.h"
#include "session.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#define CONN_IOV_MAX    64           /* queued chunks written by one sendmsg */
#define CONN_SINK       4096         /* bytes dropped per read while lingering */
#define CONN_LINGER_MAX (256 * 1024) /* input dropped after the answer before closing anyway */

struct conn_chunk;
struct http_request;
struct ws;

struct conn {
	int fd; /* -1 once handed over (conn_release then leaves it open) */
	uv_poll_t poll;
	int events; /* what poll watches now */
	struct conn_chunk *out_head, *out_tail;
	size_t out_bytes; /* queued and not yet written */
	uint64_t sent;    /* bytes written since init (a service compares it to see output move) */
	size_t lingered;  /* bytes dropped while lingering */
	uint64_t next_ping;
	bool pong_due;
	bool in_recv; /* inside ws_recv: wslay is not re-entered, the service flushes after */
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
 * Starts c on the non-blocking socket fd; data is what the poll handle's callbacks find in
 * handle->data. Returns 0 or a libuv error (then nothing is to be closed; fd stays open).
 */
int conn_init(struct conn *c, uv_loop_t *loop, int fd, void *data);

/* Makes the poll handle watch want (UV_READABLE | UV_WRITABLE | UV_DISCONNECT, 0 for nothing),
 * calling cb; no-op when it already does. */
void conn_watch(struct conn *c, int want, uv_poll_cb cb);

/* Closes the poll handle (it stops watching fd at once); cb runs when it is closed, and only
 * then may conn_release run and the memory go. */
void conn_close(struct conn *c, uv_close_cb cb);

/* Frees the queued output and closes fd (unless handed over, -1). */
void conn_release(struct conn *c);

/* Queues len bytes the caller writes into the returned space. NULL (errno ENOMEM) on failure. */
char *conn_reserve(struct conn *c, size_t len);

/* Queues a copy of len bytes. Returns 0 or -ENOMEM. */
int conn_queue(struct conn *c, const void *data, size_t len);

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

#endif
