#include "sseread.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* A field name and the colon are short; the limit of a line is the data limit plus room. */
#define SSEREAD_LINE_SLACK 64

void sseread_init(struct sseread *r, size_t data_max)
{
	memset(r, 0, sizeof(*r));
	r->data_max = data_max;
	buf_init(&r->line, data_max + SSEREAD_LINE_SLACK);
	buf_init(&r->data, data_max);
}

void sseread_finish(struct sseread *r)
{
	buf_free(&r->line);
	buf_free(&r->data);
}

static void sseread_clear_event(struct sseread *r)
{
	buf_reset(&r->data);
	r->name[0] = '\0';
	r->id = 0;
	r->has_id = false;
	r->have_event = false;
	r->data_over = false;
}

void sseread_reset(struct sseread *r)
{
	buf_reset(&r->line);
	sseread_clear_event(r);
	r->line_over = false;
	r->after_cr = false;
}

static int sseread_dispatch(struct sseread *r, sseread_fn fn, void *arg)
{
	struct sseread_event ev = {.id = r->id, .has_id = r->has_id};
	int ret;

	if (!r->have_event)
		return 0;
	snprintf(ev.name, sizeof(ev.name), "%s", r->name[0] != '\0' ? r->name : "message");
	ev.oversize = r->data_over;
	ev.data = r->data_over ? "" : buf_str(&r->data);
	ev.data_len = r->data_over ? 0 : r->data.len;
	ret = fn(arg, &ev);
	sseread_clear_event(r);
	return ret;
}

static bool sseread_parse_id(const char *v, size_t len, uint64_t *out)
{
	uint64_t n = 0;

	if (len == 0 || len > SSEREAD_ID_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned d;

		if (v[i] < '0' || v[i] > '9')
			return false;
		d = (unsigned)(v[i] - '0');
		if (n > (UINT64_MAX - d) / 10)
			return false;
		n = n * 10 + d;
	}
	*out = n;
	return true;
}

/* One complete line (without its end). */
static int sseread_line(struct sseread *r, sseread_fn fn, void *arg)
{
	const char *line = buf_str(&r->line), *colon, *value;
	size_t len = r->line.len, flen, vlen;
	int ret;

	if (r->line_over) {
		/* Only a data line can be this long: the event's data is lost. */
		r->line_over = false;
		r->data_over = true;
		r->have_event = true;
		return 0;
	}
	if (len == 0)
		return sseread_dispatch(r, fn, arg);
	if (line[0] == ':')
		return 0;
	colon = memchr(line, ':', len);
	flen = colon != NULL ? (size_t)(colon - line) : len;
	value = colon != NULL ? colon + 1 : line + len;
	vlen = len - (size_t)(value - line);
	if (vlen > 0 && value[0] == ' ')
		value++, vlen--;
	if (flen == 4 && memcmp(line, "data", 4) == 0) {
		r->have_event = true;
		if (r->data_over)
			return 0;
		if (r->data.len > 0 && (ret = buf_add(&r->data, "\n", 1)) < 0)
			goto over;
		if ((ret = buf_add(&r->data, value, vlen)) < 0)
			goto over;
		return 0;
	over:
		if (ret == -ENOMEM)
			return ret;
		r->data_over = true;
		buf_reset(&r->data);
		return 0;
	}
	if (flen == 5 && memcmp(line, "event", 5) == 0) {
		r->have_event = true;
		if (vlen > SSEREAD_NAME_MAX)
			vlen = SSEREAD_NAME_MAX;
		memcpy(r->name, value, vlen);
		r->name[vlen] = '\0';
		return 0;
	}
	if (flen == 2 && memcmp(line, "id", 2) == 0) {
		r->have_event = true;
		r->has_id = sseread_parse_id(value, vlen, &r->id);
		if (!r->has_id)
			r->id = 0;
		return 0;
	}
	return 0; /* retry and unknown fields */
}

int sseread_feed(struct sseread *r, const char *p, size_t n, sseread_fn fn, void *arg)
{
	size_t i = 0;
	int ret;

	while (i < n) {
		const char *end;
		size_t take;

		if (r->after_cr) {
			r->after_cr = false;
			if (p[i] == '\n') {
				i++;
				continue;
			}
		}
		/* The next line end, CR or LF. */
		end = NULL;
		for (size_t j = i; j < n; j++) {
			if (p[j] == '\n' || p[j] == '\r') {
				end = p + j;
				break;
			}
		}
		take = end != NULL ? (size_t)(end - (p + i)) : n - i;
		if (!r->line_over && buf_add(&r->line, p + i, take) < 0) {
			/* Too long (or no memory for it): skip the rest of this line. */
			r->line_over = true;
			buf_reset(&r->line);
		}
		i += take;
		if (end == NULL)
			break;
		r->after_cr = *end == '\r';
		i++;
		ret = sseread_line(r, fn, arg);
		buf_reset(&r->line);
		if (ret < 0)
			return ret;
	}
	return 0;
}
