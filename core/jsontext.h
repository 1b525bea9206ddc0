/*
 * The one codec rule of both daemons for JSON text at the edge. What a client sends: exactly one
 * JSON value, strict syntax, valid UTF-8, no object with the same key twice (keys compared after
 * decoding, so "a\u0062" and "ab" are the same key), under a Content-Type of application/json
 * whose charset, if any, is utf-8. What the daemons answer: valid UTF-8 whatever bytes an error
 * message echoes.
 */
#ifndef AGENTD_JSONTEXT_H
#define AGENTD_JSONTEXT_H

#include "cause.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#define JSONTEXT_UTF8_REPLACEMENT "\xef\xbf\xbd" /* U+FFFD, for each invalid byte */

/* True when s holds len bytes of valid UTF-8 (no overlong forms, surrogates or > U+10FFFF). */
bool jsontext_utf8_valid(const char *s, size_t len);

/*
 * Returns a NUL-terminated copy of s (len bytes) in which every byte that is not part of a valid
 * UTF-8 sequence is replaced by U+FFFD (caller frees), or NULL when out of memory.
 */
char *jsontext_utf8_scrub(const char *s, size_t len);

/*
 * True when a Content-Type header value is application/json (case-insensitive), with parameters
 * allowed, but no charset parameter other than utf-8 (case-insensitive, quoted or not).
 */
bool jsontext_content_type_ok(const char *value);

/*
 * Parses len bytes of text as one JSON value (surrounding whitespace allowed) nested at most depth
 * deep. Returns the value (caller puts it; a JSON null is refused), or NULL with cause set: not
 * JSON, not UTF-8, trailing data, too deep, or a duplicate key.
 */
json_object *jsontext_parse(const char *text, size_t len, int depth, struct cause *cause);

/*
 * True when some object of text has the same key twice (or text holds what JSON does not, such
 * as single-quoted strings). root is what json-c parsed from exactly this text in strict mode
 * (jsontext_parse calls it; exposed for tests).
 */
bool jsontext_has_duplicate_key(const char *text, size_t len, json_object *root);

/*
 * The string member key of o, or NULL (o NULL or not an object, no such member, or not a string).
 * Borrowed: valid while o is.
 */
const char *jsontext_str(json_object *o, const char *key);

#endif
