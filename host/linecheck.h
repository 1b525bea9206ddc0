/*
 * A quick look at one line of claude's, before json-c: whether it is surely one JSON object that
 * json-c (as claudeproc_parse uses it) takes, and its top-level "type". In a burst most lines are
 * streaming text that the host only numbers, logs and sends on by their type: for those, building
 * json-c's objects (a hash table and a copy of every key and string) was most of the host's work.
 *
 * Only a plain subset of RFC 8259 is judged here, one that json-c takes as it is: an object from
 * the line's first byte, nested at most LINECHECK_DEPTH_MAX deep, inner whitespace only spaces,
 * strings of bytes >= 0x20 with the escapes \" \\ \/ \b \f \n \r \t and \uXXXX (no surrogate),
 * integers of at most LINECHECK_DIGITS_MAX digits (no fraction, no exponent), true, false, null;
 * after it only spaces, tabs and carriage returns. Anything else (json-c's own extensions, numbers
 * it converts, deep nesting, a "type" that is no plain string, a top-level key with an escape) is
 * left to json-c: this never says no, only "surely yes" or "ask json-c". The line must be valid
 * UTF-8 already (jsontext_utf8_valid).
 */
#ifndef AGENTD_HOST_LINECHECK_H
#define AGENTD_HOST_LINECHECK_H

#include <stdbool.h>
#include <stddef.h>

#define LINECHECK_DEPTH_MAX  16 /* nesting judged here; json-c's own limit is 32 */
#define LINECHECK_DIGITS_MAX 18 /* an integer's digits: it fits an int64_t */

/* The object's top-level "type": a string without escapes (the last one, as json-c keeps the
 * last of a key given twice), or none. */
struct linecheck {
	const char *type; /* in the line; NULL: no "type" */
	size_t type_len;
};

/* True when the line (len bytes) is surely one JSON object json-c takes; then *out is its type. */
bool linecheck_object(const char *line, size_t len, struct linecheck *out);

#endif
