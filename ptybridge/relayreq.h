/*
 * The relay's requests as text (API.md: Structured mode): which path is which request, the
 * checks of a client's JSON, and the request line each becomes for agentd-host
 * (core/hostproto.h). Pure functions: no I/O, no loop.
 */
#ifndef AGENTD_BRIDGE_RELAYREQ_H
#define AGENTD_BRIDGE_RELAYREQ_H

#include "hostproto.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#define RELAY_PREFIX                 "/sessions/"
#define RELAY_PERMISSIONS            "permissions/"
#define RELAY_BODY_MAX               (64 * 1024) /* request bodies (API.md); larger is 413 */
#define RELAY_PERMISSION_UPDATES_MAX HOSTPROTO_PERMISSION_UPDATES /* of updatedPermissions */
#define RELAY_REQUEST_ID_MAX         HOSTPROTO_REQUEST_ID_MAX     /* a permission request id */

enum relay_kind {
	RELAY_PROMPT,
	RELAY_PERMISSION,
	RELAY_INTERRUPT,
	RELAY_EVENTS,
	RELAY_STREAM,
};

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

#endif
