/*
 * Structured mode (API.md): the bridge's side of agentd-host. Each request opens its own
 * connection to the session's host socket (core/hostproto.h) and relays:
 *   POST /sessions/<id>/prompt                  {"type":"prompt"}: the turn's events as SSE
 *   POST /sessions/<id>/permissions/<requestId> {"type":"permission"}: 200 {"status":"ok"}
 *   POST /sessions/<id>/interrupt               {"type":"interrupt"}: 200 {"status":"ok"}
 *   GET  /sessions/<id>/events                  {"type":"subscribe"}: every event as SSE,
 *                                               from Last-Event-ID or ?after=N, then live
 *   GET  /sessions/<id>/stream (WebSocket)      the same subscription, one text frame per
 *                                               event ({"id","event","data"}); each client
 *                                               frame {"type":"prompt"|"permission"|"interrupt",
 *                                               ...} opens its own host connection, and the
 *                                               host's answer comes back as a frame
 *                                               {"type":"accepted"|"ok"|"error",
 *                                               "request":"<type>", ...}
 * Before a host is contacted the session record is read: 404 unknown, 409 not structured or not
 * running; a `creating` session or a host socket that does not answer yet (right after a mode
 * switch) is waited for. The events or stream of an `exited` or `lost` session are its history:
 * the bridge reads the host's event log itself (core/evlog.h) and sends it as it would live,
 * then an `error` event with the 409's code (a WebSocket then closes with 1001 and the code). The
 * host's {"type":"error","status":S,"code":C,"error":E} answers become API.md error responses with
 * status S.
 *
 * The bridge keeps no state of its own: a client that goes away only closes its host connection
 * (the host keeps the turn going, and its event log lets the client replay what it missed).
 * Every buffer is bounded: request bodies RELAY_BODY_MAX, host lines HOSTPROTO_LINE_MAX; above
 * RELAY_OUT_HIGH bytes queued for a client its host connection (and its WebSocket input) is no
 * longer read (the host then sends that stream the rest from its event log, later, so nothing
 * is lost), and a client whose output does not move for stall_timeout_ms is cut.
 */
#ifndef AGENTD_BRIDGE_RELAY_H
#define AGENTD_BRIDGE_RELAY_H

#include "bridge.h"
#include "hostproto.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#define RELAY_BODY_MAX               (64 * 1024) /* request bodies (API.md); larger is 413 */
#define RELAY_PERMISSION_UPDATES_MAX HOSTPROTO_PERMISSION_UPDATES /* of updatedPermissions */
#define RELAY_SSE_PING_MS            (15 * 1000) /* ": ping" after this long without output */
#define RELAY_CONNECT_WAIT_MS        (5 * 1000) /* host socket missing or refusing: retried this long */
#define RELAY_ANSWER_TIMEOUT_MS      (10 * 1000) /* for the host's answer to a request */
#define RELAY_OUT_HIGH               (256 * 1024) /* output queued to the client: stop reading the host */
#define RELAY_OUT_LOW                (64 * 1024) /* ... and read again below this */
#define RELAY_READ_CHUNK             (64 * 1024) /* room offered to each read from the host */
#define RELAY_WS_REQUESTS_MAX        8           /* host requests of one /stream client at once */
#define RELAY_REQUEST_ID_MAX         HOSTPROTO_REQUEST_ID_MAX /* a permission request id */

enum relay_kind {
	RELAY_PROMPT,
	RELAY_PERMISSION,
	RELAY_INTERRUPT,
	RELAY_EVENTS,
	RELAY_STREAM,
};

/* The relay as a service of the bridge (struct bridge_service) and its routes (the paths
 * relay_route accepts); its connections are in b->conns. */
extern const struct bridge_service relay_service;
extern const struct bridge_route relay_routes[];

/*
 * Classifies a request path: returns 1 and sets *kind when path is /sessions/<x>/prompt,
 * /events, /interrupt, /stream or /permissions/<y> (x and y non-empty without '/', not yet
 * validated), and 0 for every other path (not the relay's).
 */
int relay_route(const char *path, enum relay_kind *kind);

/* True when id (a permission request id from a path or a frame) has 1..RELAY_REQUEST_ID_MAX
 * characters of [A-Za-z0-9._:-] (claude's ids are UUIDs). */
bool relay_request_id_valid(const char *id);

/* True when s holds len bytes of valid UTF-8 (what a WebSocket text frame must carry). */
bool relay_utf8_valid(const char *s, size_t len);

/*
 * Parses a client's JSON text (a request body or a WebSocket frame) by core/jsontext.h's rule:
 * returns the object (caller puts it), or NULL when text is not exactly one JSON object
 * (surrounding whitespace allowed), is not UTF-8 or has an object with a key twice.
 */
json_object *relay_parse_object(const char *text, size_t len);

/*
 * Builds the request line for agentd-host (core/hostproto.h; JSON and its '\n') from a client's
 * JSON object: for RELAY_PROMPT {"prompt":"<non-empty string>"}; for RELAY_PERMISSION
 * {"behavior":"allow"|"deny"} with optional "message" (string), "updatedInput" (object),
 * "interrupt" (boolean) and, with allow only, "updatedPermissions" (1..RELAY_PERMISSION_UPDATES_MAX
 * objects with a string "type", passed to claude as they are), for the request request_id; for
 * RELAY_INTERRUPT anything (msg may be NULL). Other members are ignored. by (NULL: none) is who
 * sends a prompt or permission answer (hostproto's "by"). Returns the line (caller frees) with
 * *len set, or NULL with *why set to a sentence for a 400 answer (or errno ENOMEM: *why says so).
 */
char *relay_host_request(enum relay_kind kind, json_object *msg, const char *request_id,
			 const char *by, size_t *len, const char **why);

/* Connects a non-blocking socket to session id's host.sock (a long path through its
 * directory's fd). Returns the fd, or -errno (-ENOENT, -ECONNREFUSED, -EAGAIN: not listening
 * yet or its backlog is full; -EPERM: the listener is not b->host_uid's, so not a host). */
int relay_connect_host(const struct bridge *b, const char *id);

#endif
