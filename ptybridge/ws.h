/*
 * WebSocket connections of the bridge: glue between a non-blocking socket and wslay's event API
 * (all framing, masking, fragmentation, control frames and close handshakes are wslay's), plus
 * the RFC 6455 handshake digest computed with OpenSSL's libcrypto. The owner drives it from its
 * poll callbacks: ws_recv when the socket is readable, ws_send when it is writable or after
 * queueing; it never blocks. Received text and binary messages go to on_message; wslay answers
 * pings and close frames itself.
 */
#ifndef AGENTD_BRIDGE_WS_H
#define AGENTD_BRIDGE_WS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WS_MESSAGE_MAX      (64 * 1024) /* inbound message limit; larger closes with 1009 */
#define WS_RECV_BUDGET      (16 * 1024) /* bytes read per ws_recv, so one peer cannot hog the loop */
#define WS_PREFIX_MAX       (8 * 1024)  /* bytes that came with the handshake */
#define WS_KEY_MAX          64          /* a Sec-WebSocket-Key is 24 characters */
#define WS_ACCEPT_LEN       28          /* base64 of a SHA-1 digest */
#define WS_CLOSE_REASON_MAX 123

/* Close codes the bridge sends (RFC 6455 §7.4.1). */
#define WS_CLOSE_NORMAL     1000
#define WS_CLOSE_GOING_AWAY 1001
#define WS_CLOSE_POLICY     1008
#define WS_CLOSE_TOO_BIG    1009
#define WS_CLOSE_INTERNAL   1011

struct ws;

struct ws_callbacks {
	/* A complete text or binary message; msg is borrowed for the call. */
	void (*on_message)(void *data, const uint8_t *msg, size_t len);
	/* A pong arrived (the answer to ws_queue_ping). */
	void (*on_pong)(void *data);
};

/*
 * Wraps the connected non-blocking socket fd (borrowed: the caller closes it after
 * ws_destroy). cb is copied; data is passed to every callback. Returns NULL with errno ENOMEM.
 */
struct ws *ws_create(int fd, const struct ws_callbacks *cb, void *data);

/* Frees the wslay context and every queued message. NULL-safe. Never call it from inside a
 * callback of the same ws. */
void ws_destroy(struct ws *ws);

/*
 * Hands over bytes that were read with the HTTP head (a peer may send frames right after its
 * request); they are parsed before anything else is read. Returns 0, -EOVERFLOW over
 * WS_PREFIX_MAX, -ENOMEM.
 */
int ws_prefix(struct ws *ws, const void *bytes, size_t len);

/*
 * Reads up to WS_RECV_BUDGET bytes and dispatches complete messages. Returns 0 (including when
 * the socket has no more data), -EPIPE when the peer closed the stream, -EPROTO when wslay gave
 * up on the connection, or another -errno from recv.
 */
int ws_recv(struct ws *ws);

/* Writes queued frames until done or the socket would block. Returns 0 or -errno (-EPIPE). */
int ws_send(struct ws *ws);

/* Queues one binary message (copied). Returns 0, -EPIPE once a close was queued, -ENOMEM. */
int ws_queue_binary(struct ws *ws, const void *data, size_t len);

/* Queues one text message (copied; the caller guarantees UTF-8). Returns 0, -EPIPE, -ENOMEM. */
int ws_queue_text(struct ws *ws, const void *data, size_t len);

/* Queues a ping. Returns 0, -EPIPE, -ENOMEM. */
int ws_queue_ping(struct ws *ws);

/* Queues a close frame (reason truncated to WS_CLOSE_REASON_MAX) and stops reading data
 * messages. Returns 0 or -EPIPE when one was already queued. */
int ws_queue_close(struct ws *ws, uint16_t code, const char *reason);

/* Payload bytes and messages waiting to be sent. */
size_t ws_queued_bytes(const struct ws *ws);
size_t ws_queued_count(const struct ws *ws);

/* While paused, ws_recv reads nothing new from the socket (input backpressure). */
void ws_pause_read(struct ws *ws, bool paused);

/* What the connection still wants: reading (no close received yet, not failed) and writing
 * (frames queued). When neither, the connection is finished and can be closed. */
bool ws_want_read(const struct ws *ws);
bool ws_want_write(const struct ws *ws);

/* True when the last ws_send stopped because the socket was full: wait for writability. */
bool ws_send_blocked(const struct ws *ws);

/* True once the peer's close frame was received. */
bool ws_close_received(const struct ws *ws);

/*
 * The handshake digest: writes base64(SHA-1(key + RFC 6455 GUID)) and a NUL into out.
 * Returns 0, or -EINVAL when key is not the base64 of 16 bytes (RFC 6455 §4.2.1).
 */
int ws_accept_key(const char *key, char out[WS_ACCEPT_LEN + 1]);

#endif
