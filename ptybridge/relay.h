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
#include "relayreq.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#define RELAY_SSE_PING_MS       (15 * 1000) /* ": ping" after this long without output */
#define RELAY_CONNECT_WAIT_MS   (5 * 1000)  /* host socket missing or refusing: retried this long */
#define RELAY_ANSWER_TIMEOUT_MS (10 * 1000) /* for the host's answer to a request */
#define RELAY_OUT_HIGH          (256 * 1024) /* output queued to the client: stop reading the host */
#define RELAY_OUT_LOW           (64 * 1024)  /* ... and read again below this */
#define RELAY_READ_CHUNK        (64 * 1024)  /* room offered to each read from the host */
#define RELAY_WS_REQUESTS_MAX   8            /* host requests of one /stream client at once */

/* The relay as a service of the bridge (struct bridge_service) and its routes (the paths
 * relay_route accepts); its connections are in b->conns. */
extern const struct bridge_service relay_service;
extern const struct bridge_route relay_routes[];

#endif
