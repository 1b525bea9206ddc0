#include "sse.h"

#include "hostproto.h"
#include "http.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define SSE_DATA_CONT    "\ndata: "
#define SSE_FRAME_ID     "id: "
#define SSE_FRAME_EVENT  "\nevent: "
#define SSE_FRAME_DATA   "\ndata: "
#define SSE_FRAME_END    "\n\n"
#define SSE_STRLEN(lit)  (sizeof(lit) - 1)
#define SSE_U64_MAX_TEXT "18446744073709551615"

/* Parses exactly len digits (1..SSE_ID_DIGITS_MAX) as a uint64 without overflow. */
static int sse_digits(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;

	if (len == 0 || len > SSE_ID_DIGITS_MAX)
		return -EINVAL;
	for (size_t i = 0; i < len; i++)
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
	/* 20 digits fit only up to UINT64_MAX: compare as text (same length, so lexically). */
	if (len == SSE_ID_DIGITS_MAX && memcmp(s, SSE_U64_MAX_TEXT, len) > 0)
		return -EINVAL;
	for (size_t i = 0; i < len; i++)
		v = v * 10 + (uint64_t)(s[i] - '0');
	*out = v;
	return 0;
}

static size_t sse_u64_len(uint64_t v)
{
	size_t n = 1;

	while (v >= 10) {
		v /= 10;
		n++;
	}
	return n;
}

size_t sse_encoded_len(const struct hostproto_event *ev)
{
	size_t n = SSE_STRLEN(SSE_FRAME_ID) + sse_u64_len(ev->id) + SSE_STRLEN(SSE_FRAME_EVENT) +
		   ev->name_len + SSE_STRLEN(SSE_FRAME_DATA) + ev->data_len +
		   SSE_STRLEN(SSE_FRAME_END);

	for (size_t i = 0; i < ev->data_len; i++) {
		if (ev->data[i] == '\r' && i + 1 < ev->data_len && ev->data[i + 1] == '\n')
			i++, n--; /* CRLF is one break */
		if (ev->data[i] == '\r' || ev->data[i] == '\n')
			n += SSE_STRLEN(SSE_DATA_CONT) - 1;
	}
	return n;
}

static char *sse_put(char *out, const char *s, size_t len)
{
	memcpy(out, s, len);
	return out + len;
}

size_t sse_encode(const struct hostproto_event *ev, char *out)
{
	char digits[SSE_ID_DIGITS_MAX + 1];
	char *p = out;
	size_t from = 0;
	int dn = snprintf(digits, sizeof(digits), "%llu", (unsigned long long)ev->id);

	p = sse_put(p, SSE_FRAME_ID, SSE_STRLEN(SSE_FRAME_ID));
	p = sse_put(p, digits, (size_t)dn);
	p = sse_put(p, SSE_FRAME_EVENT, SSE_STRLEN(SSE_FRAME_EVENT));
	p = sse_put(p, ev->name, ev->name_len);
	p = sse_put(p, SSE_FRAME_DATA, SSE_STRLEN(SSE_FRAME_DATA));
	for (size_t i = 0; i < ev->data_len; i++) {
		char c = ev->data[i];

		if (c != '\r' && c != '\n')
			continue;
		p = sse_put(p, ev->data + from, i - from);
		p = sse_put(p, SSE_DATA_CONT, SSE_STRLEN(SSE_DATA_CONT));
		if (c == '\r' && i + 1 < ev->data_len && ev->data[i + 1] == '\n')
			i++;
		from = i + 1;
	}
	p = sse_put(p, ev->data + from, ev->data_len - from);
	p = sse_put(p, SSE_FRAME_END, SSE_STRLEN(SSE_FRAME_END));
	return (size_t)(p - out);
}

int sse_parse_id(const char *s, size_t len, uint64_t *out)
{
	while (len > 0 && (*s == ' ' || *s == '\t'))
		s++, len--;
	while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t'))
		len--;
	return sse_digits(s, len, out);
}

int sse_query_id(const char *query, const char *name, uint64_t *out)
{
	struct http_param p;

	while (http_query_next(&query, &p)) {
		if (!http_param_is(&p, name))
			continue;
		if (!p.has_value)
			return -EINVAL; /* "after" without a value */
		return sse_digits(p.value, p.value_len, out) < 0 ? -EINVAL : 0;
	}
	return -ENOENT;
}

int sse_format_head(char *out, size_t outlen)
{
	int n = snprintf(out, outlen,
			 "HTTP/1.1 200 OK\r\n"
			 "Content-Type: text/event-stream\r\n"
			 "Cache-Control: no-store\r\n"
			 "X-Accel-Buffering: no\r\n"
			 "Connection: close\r\n"
			 "\r\n");

	return n < 0 || (size_t)n >= outlen ? -EOVERFLOW : n;
}
