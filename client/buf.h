/*
 * A growable byte buffer with a ceiling: what a client accumulates from the outside (a response
 * body, an SSE line, a turn's text) never grows past the limit its owner names. The bytes are
 * always NUL-terminated, so text can be used as a C string.
 */
#ifndef AGENTD_CLIENT_BUF_H
#define AGENTD_CLIENT_BUF_H

#include <stdarg.h>
#include <stddef.h>

struct buf {
	char *p;    /* len bytes and a NUL; NULL until the first append */
	size_t len; /* bytes held, without the NUL */
	size_t cap; /* bytes allocated */
	size_t max; /* the most len may become; 0 = unlimited */
};

/* An empty buffer that holds at most max bytes (0: no limit). */
void buf_init(struct buf *b, size_t max);

/* Frees the bytes; b is empty again (same max). NULL-safe. */
void buf_free(struct buf *b);

/* Appends n bytes. Returns 0, -EOVERFLOW (over max: nothing appended) or -ENOMEM. */
int buf_add(struct buf *b, const void *p, size_t n);

/* Appends a C string. Returns as buf_add. */
int buf_adds(struct buf *b, const char *s);

/* Appends printf output. Returns as buf_add. */
int buf_addf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Removes the first n bytes (all when n >= len). */
void buf_consume(struct buf *b, size_t n);

/* Empties b, keeping its memory. */
void buf_reset(struct buf *b);

/* The text ("" when nothing was appended). Borrowed until the next change of b. */
const char *buf_str(const struct buf *b);

#endif
