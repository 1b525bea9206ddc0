/*
 * ISO-8601 UTC times as agentd's records and stores write them: "YYYY-MM-DDTHH:MM:SSZ" from unix
 * seconds, and "YYYY-MM-DDTHH:MM:SS.mmmZ" from unix milliseconds. One codec for every writer and
 * reader (session records, the token store), so a time one writes the other reads. Pure.
 *
 * Times are 1970..9999: the parsers refuse anything outside, so that every time they accept
 * formats back to the same 20 (or 24) characters (a 4-digit year, not a negative one).
 */
#ifndef AGENTD_ISOTIME_H
#define AGENTD_ISOTIME_H

#include <stddef.h>
#include <stdint.h>

#define ISOTIME_LAST   253402300799LL /* 9999-12-31T23:59:59Z, the last time parsed */
#define ISOTIME_LEN    20             /* "YYYY-MM-DDTHH:MM:SSZ" */
#define ISOTIME_MS_LEN 24             /* "YYYY-MM-DDTHH:MM:SS.mmmZ" */

/* Formats unix seconds t (in 0..ISOTIME_LAST) as "YYYY-MM-DDTHH:MM:SSZ" into out, which holds
 * at least ISOTIME_LEN + 1 bytes (a shorter out gets an empty string). */
void isotime_format(int64_t t, char *out, size_t outlen);

/* Parses "YYYY-MM-DDTHH:MM:SSZ" (nothing after the Z) into unix seconds. Returns 0 with *out
 * set, or -EINVAL (not such a time, or outside 1970..ISOTIME_LAST; *out is then unchanged). */
int isotime_parse(const char *s, int64_t *out);

/* Formats unix milliseconds ms (in 0..ISOTIME_LAST * 1000 + 999) as "YYYY-MM-DDTHH:MM:SS.mmmZ"
 * into out, which holds at least ISOTIME_MS_LEN + 1 bytes (a shorter out gets an empty string). */
void isotime_format_ms(int64_t ms, char *out, size_t outlen);

/* Parses "YYYY-MM-DDTHH:MM:SS.mmmZ" (exactly ISOTIME_MS_LEN characters) into unix milliseconds.
 * Returns 0 with *out set, or -EINVAL (as isotime_parse; *out is then unchanged). */
int isotime_parse_ms(const char *s, int64_t *out);

#endif
