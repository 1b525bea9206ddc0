/*
 * HTTP/1.1 request heads for the bridge: bytes are read straight into the request's own bounded
 * buffer and parsed incrementally by http-parser (Debian's libhttp-parser); nothing here is a
 * hand-written parser. Once a head is complete, every accessor returns NUL-terminated views into
 * that buffer, valid until http_request_destroy. Also formats the few responses the bridge sends
 * before a WebSocket exists (errors as API.md's JSON body, and the 101 upgrade).
 */
#ifndef AGENTD_BRIDGE_HTTP_H
#define AGENTD_BRIDGE_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HTTP_HEAD_MAX     (8 * 1024) /* request line + headers; larger heads are refused */
#define HTTP_HEADERS_MAX  48         /* header lines kept; more is -EOVERFLOW */
#define HTTP_RESPONSE_MAX 1024       /* every response the bridge formats fits */

struct http_request;

/* Returns a new empty request (caller destroys), or NULL with errno ENOMEM. */
struct http_request *http_request_create(void);

/* NULL-safe. */
void http_request_destroy(struct http_request *req);

/*
 * Where the next bytes read from the peer go: returns a pointer into the request buffer and sets
 * *avail to the room left (0 when the buffer is full; feeding then fails with -EOVERFLOW).
 */
char *http_request_space(struct http_request *req, size_t *avail);

/*
 * Parses n bytes that were just written at http_request_space. Returns 0 when the head is still
 * incomplete, 1 when it is complete (further calls keep returning 1 and ignore their bytes; a
 * request with a body is complete at the end of its head, and the body is left to the caller),
 * -EBADMSG when the bytes are not HTTP/1.x, -EOVERFLOW when the head outgrows HTTP_HEAD_MAX or
 * HTTP_HEADERS_MAX.
 */
int http_request_feed(struct http_request *req, size_t n);

/*
 * Bytes that arrived after a complete upgrade head (the peer's first WebSocket frames) or after
 * the head of a request with a body (the start of the body). *len is set; the pointer is valid
 * until destroy. Empty for any other request.
 */
const char *http_request_rest(const struct http_request *req, size_t *len);

/* The method ("GET") and the path of the request target without its query (raw, not decoded). */
const char *http_request_method(const struct http_request *req);
const char *http_request_path(const struct http_request *req);

/* The query string without '?', or "" when there is none. */
const char *http_request_query(const struct http_request *req);

/*
 * The value of header name (case-insensitive), leading/trailing blanks removed, or NULL if absent.
 * When count is not NULL it receives the number of lines with that name (the first is returned).
 */
const char *http_request_header(const struct http_request *req, const char *name, unsigned *count);

/*
 * The body the head announces: returns 0 when there is none, 1 with *len set to its
 * Content-Length, -EINVAL for a chunked body (no length known in advance).
 */
int http_request_body_length(const struct http_request *req, uint64_t *len);

/* True when http-parser saw Upgrade with Connection: upgrade, HTTP/1.1 or later, and no body. */
bool http_request_is_upgrade(const struct http_request *req);

/* True when the comma-separated header value contains token (case-insensitive). NULL-safe. */
bool http_has_token(const char *value, const char *token);

/* One parameter of a query string, as views into it (nothing is decoded). */
struct http_param {
	const char *name; /* up to the first '=' */
	size_t name_len;
	const char *value; /* after the '=' ("" when there is none) */
	size_t value_len;
	bool has_value; /* "name=..." rather than a bare "name" */
};

/*
 * Takes the next '&'-separated parameter off *query (NULL or "" when none is left) and advances
 * *query past it. Returns false at the end.
 */
bool http_query_next(const char **query, struct http_param *p);

/* True when p's name is exactly name. */
bool http_param_is(const struct http_param *p, const char *name);

/*
 * Finds name=value in a query string and parses value as a decimal integer in [min, max].
 * Returns 0 with *out set, -ENOENT when absent, -ERANGE when malformed or outside the range.
 */
int http_query_int(const char *query, const char *name, long min, long max, long *out);

/*
 * Formats an error response with API.md's body {"error": message, "code": code} (built by
 * json-c; bytes that are not valid UTF-8 become U+FFFD) and Connection: close. extra is NULL or
 * further header lines, each ending in "\r\n". Returns the length written, or -EOVERFLOW when out
 * is too small (or memory ran out).
 */
int http_format_error(char *out, size_t outlen, int status, const char *code, const char *message,
		      const char *extra);

/* Formats the 101 answer with Sec-WebSocket-Accept accept. Returns the length or -EOVERFLOW. */
int http_format_upgrade(char *out, size_t outlen, const char *accept);

#endif
