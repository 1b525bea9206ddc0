/*
 * Telegram's measure of a message and where to cut a long text into messages. Telegram refuses a
 * text over 4096 characters, counted in UTF-16 code units (an emoji outside the BMP is two), so
 * that is what is counted here; a cut never falls inside a UTF-8 sequence and prefers the end of
 * a line, then a blank, so that a message ends where a reader expects a pause. Pure functions.
 */
#ifndef AGENTD_TG_SPLIT_H
#define AGENTD_TG_SPLIT_H

#include <stddef.h>

#define SPLIT_MAX 4096 /* Telegram's limit on a message's text (UTF-16 code units) */

/*
 * The byte length of the UTF-8 character at s (at most len bytes): 1 to 4, or 1 for a byte that
 * does not start a valid sequence (it is counted as one character, as U+FFFD would be).
 * *units is set to the UTF-16 code units it takes (2 above U+FFFF, else 1). len must be > 0.
 */
size_t split_char(const char *s, size_t len, size_t *units);

/* The length of len bytes of UTF-8 in UTF-16 code units. */
size_t split_units(const char *s, size_t len);

/*
 * Where the first message of text ends: the byte length of the longest prefix of at most max
 * UTF-16 code units (max >= 2), cut after the last newline in its second half if there is one,
 * else after the last blank there, else at a character boundary. len when it all fits; always
 * > 0 when len > 0.
 */
size_t split_point(const char *s, size_t len, size_t max);

/*
 * The byte length of the longest prefix of s (len bytes) with at most max UTF-16 code units,
 * ending at a character boundary (for text that is cut with an ellipsis rather than split).
 */
size_t split_prefix(const char *s, size_t len, size_t max);

#endif
