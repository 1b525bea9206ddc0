/*
 * Server-sent events for the structured-mode relay: writing agentd-host's event lines
 * ({"id":N,"event":"name","data":DATA}, taken apart by core/hostproto.h) as SSE frames ("id:
 * N\nevent: name\ndata: DATA\n\n"), plus the event-stream response head and the parsing of the ids
 * clients send back (Last-Event-ID, ?after=). Pure functions on caller buffers: nothing here
 * allocates or does I/O.
 */
#ifndef AGENTD_BRIDGE_SSE_H
#define AGENTD_BRIDGE_SSE_H

#include "hostproto.h"

#include <stddef.h>
#include <stdint.h>

#define SSE_EVENT_NAME_MAX HOSTPROTO_NAME_MAX /* the codec's limit, with its NUL */
#define SSE_ID_DIGITS_MAX  20                 /* UINT64_MAX has 20 digits */
#define SSE_PING           ": ping\n\n"
#define SSE_HEAD_MAX       256

/* The number of bytes sse_encode writes for ev. */
size_t sse_encoded_len(const struct hostproto_event *ev);

/*
 * Writes ev as one SSE frame into out (sse_encoded_len(ev) bytes, no NUL):
 * "id: N\nevent: NAME\ndata: DATA\n\n". A CR, LF or CRLF inside DATA (JSON allows them as
 * whitespace) would end the field, so each starts a new "data: " line instead; EventSource joins
 * data lines with LF, which is the same JSON. Returns the bytes written.
 */
size_t sse_encode(const struct hostproto_event *ev, char *out);

/*
 * Parses an event id a client sent back: 1 to SSE_ID_DIGITS_MAX decimal digits, at most
 * UINT64_MAX, surrounding blanks allowed. Returns 0 with *out set, or -EINVAL.
 */
int sse_parse_id(const char *s, size_t len, uint64_t *out);

/*
 * Finds name=value in a query string (without '?') and parses value with sse_parse_id.
 * Returns 0 with *out set, -ENOENT when name is absent, -EINVAL when the value is malformed.
 */
int sse_query_id(const char *query, const char *name, uint64_t *out);

/*
 * Formats the response head of an event stream (200, text/event-stream, no caching, no proxy
 * buffering, Connection: close: the stream ends when the connection does). Returns the length,
 * or -EOVERFLOW when out is too small (SSE_HEAD_MAX always suffices).
 */
int sse_format_head(char *out, size_t outlen);

#endif
