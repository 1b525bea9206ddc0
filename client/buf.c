#include "buf.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUF_MIN 256

void buf_init(struct buf *b, size_t max)
{
	b->p = NULL;
	b->len = 0;
	b->cap = 0;
	b->max = max;
}

void buf_free(struct buf *b)
{
	if (b == NULL)
		return;
	free(b->p);
	buf_init(b, b->max);
}

/* Makes room for n more bytes and the NUL. */
static int buf_room(struct buf *b, size_t n)
{
	size_t want, cap;
	char *p;

	if (b->max != 0 && (n > b->max || b->len > b->max - n))
		return -EOVERFLOW;
	if (n > SIZE_MAX - b->len - 1)
		return -EOVERFLOW;
	want = b->len + n + 1;
	if (want <= b->cap)
		return 0;
	cap = b->cap != 0 ? b->cap : BUF_MIN;
	while (cap < want)
		cap = cap > SIZE_MAX / 2 ? want : cap * 2;
	p = realloc(b->p, cap);
	if (p == NULL)
		return -ENOMEM;
	b->p = p;
	b->cap = cap;
	return 0;
}

int buf_add(struct buf *b, const void *p, size_t n)
{
	int r = buf_room(b, n);

	if (r < 0)
		return r;
	if (n > 0)
		memcpy(b->p + b->len, p, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

int buf_adds(struct buf *b, const char *s)
{
	return buf_add(b, s, strlen(s));
}

int buf_addf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n, r;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	r = buf_room(b, (size_t)n);
	if (r < 0)
		return r;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

void buf_consume(struct buf *b, size_t n)
{
	if (n >= b->len) {
		buf_reset(b);
		return;
	}
	memmove(b->p, b->p + n, b->len - n);
	b->len -= n;
	b->p[b->len] = '\0';
}

void buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->p != NULL)
		b->p[0] = '\0';
}

const char *buf_str(const struct buf *b)
{
	return b->p != NULL ? b->p : "";
}
