#include "metrics.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const uint64_t metrics_latency_bounds_us[METRICS_LATENCY_BUCKETS] = {
    1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000, 1000000, 2500000, 10000000,
};

#define METRICS_TEXT_START 4096

void metrics_hist_observe(struct metrics_hist *h, uint64_t us)
{
	size_t i = 0;

	while (i < METRICS_LATENCY_BUCKETS && us > metrics_latency_bounds_us[i])
		i++;
	atomic_fetch_add_explicit(&h->buckets[i], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->sum_us, us, memory_order_relaxed);
}

void metrics_text_init(struct metrics_text *t)
{
	memset(t, 0, sizeof(*t));
}

void metrics_text_free(struct metrics_text *t)
{
	free(t->buf);
	memset(t, 0, sizeof(*t));
}

/* Makes room for need more bytes and the NUL. Returns 0 or sets t->error. */
static int metrics_reserve(struct metrics_text *t, size_t need)
{
	size_t cap = t->cap != 0 ? t->cap : METRICS_TEXT_START;
	char *buf;

	if (t->error != 0)
		return t->error;
	if (need > METRICS_TEXT_MAX || t->len + need + 1 > METRICS_TEXT_MAX)
		return t->error = -EOVERFLOW;
	if (t->buf != NULL && t->len + need + 1 <= t->cap)
		return 0;
	while (cap < t->len + need + 1)
		cap *= 2;
	if (cap > METRICS_TEXT_MAX)
		cap = METRICS_TEXT_MAX;
	if ((buf = realloc(t->buf, cap)) == NULL)
		return t->error = -ENOMEM;
	t->buf = buf;
	t->cap = cap;
	return 0;
}

void metrics_append(struct metrics_text *t, const char *s, size_t len)
{
	if (metrics_reserve(t, len) < 0)
		return;
	memcpy(t->buf + t->len, s, len);
	t->len += len;
	t->buf[t->len] = '\0';
}

void metrics_printf(struct metrics_text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || metrics_reserve(t, (size_t)n) < 0)
		return;
	va_start(ap, fmt);
	vsnprintf(t->buf + t->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	t->len += (size_t)n;
}

void metrics_family(struct metrics_text *t, const char *name, const char *type, const char *help)
{
	metrics_printf(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static const char *metrics_braces(const char *labels, char open[2], char close[2])
{
	bool any = labels != NULL && *labels != '\0';

	open[0] = any ? '{' : '\0';
	close[0] = any ? '}' : '\0';
	open[1] = close[1] = '\0';
	return any ? labels : "";
}

void metrics_sample(struct metrics_text *t, const char *name, const char *labels, double value)
{
	char open[2], close[2];
	const char *l = metrics_braces(labels, open, close);

	if (isnan(value))
		metrics_printf(t, "%s%s%s%s NaN\n", name, open, l, close);
	else if (isinf(value))
		metrics_printf(t, "%s%s%s%s %s\n", name, open, l, close,
			       value > 0 ? "+Inf" : "-Inf");
	else
		metrics_printf(t, "%s%s%s%s %.17g\n", name, open, l, close, value);
}

void metrics_sample_u64(struct metrics_text *t, const char *name, const char *labels,
			uint64_t value)
{
	char open[2], close[2];
	const char *l = metrics_braces(labels, open, close);

	metrics_printf(t, "%s%s%s%s %" PRIu64 "\n", name, open, l, close, value);
}

void metrics_hist_write(struct metrics_text *t, const char *name, const char *labels,
			const struct metrics_hist *h)
{
	bool any = labels != NULL && *labels != '\0';
	const char *sep = any ? "," : "";
	const char *l = any ? labels : "";
	uint64_t cum = 0, sum;
	char open[2], close[2];

	for (size_t i = 0; i <= METRICS_LATENCY_BUCKETS; i++) {
		cum += atomic_load_explicit(&h->buckets[i], memory_order_relaxed);
		if (i < METRICS_LATENCY_BUCKETS)
			metrics_printf(t, "%s_bucket{%s%sle=\"%g\"} %" PRIu64 "\n", name, l, sep,
				       (double)metrics_latency_bounds_us[i] / 1e6, cum);
		else
			metrics_printf(t, "%s_bucket{%s%sle=\"+Inf\"} %" PRIu64 "\n", name, l, sep,
				       cum);
	}
	sum = atomic_load_explicit(&h->sum_us, memory_order_relaxed);
	metrics_braces(labels, open, close);
	metrics_printf(t, "%s_sum%s%s%s %.6f\n", name, open, l, close, (double)sum / 1e6);
	metrics_printf(t, "%s_count%s%s%s %" PRIu64 "\n", name, open, l, close, cum);
}

int metrics_label(char *out, size_t outlen, const char *key, const char *value)
{
	size_t n = 0;
	int k = snprintf(out, outlen, "%s=\"", key);

	if (k < 0 || (size_t)k >= outlen)
		goto overflow;
	n = (size_t)k;
	for (const char *p = value; *p != '\0'; p++) {
		const char *esc = *p == '\\'   ? "\\\\"
				  : *p == '"'  ? "\\\""
				  : *p == '\n' ? "\\n"
					       : NULL;
		size_t w = esc != NULL ? 2 : 1;

		if (n + w + 2 > outlen)
			goto overflow;
		if (esc != NULL)
			memcpy(out + n, esc, 2);
		else
			out[n] = *p;
		n += w;
	}
	if (n + 2 > outlen)
		goto overflow;
	out[n++] = '"';
	out[n] = '\0';
	return (int)n;
overflow:
	if (outlen > 0)
		out[0] = '\0';
	return -EOVERFLOW;
}

const char *metrics_status_class(int status)
{
	static const char *const classes[] = {"1xx", "2xx", "3xx", "4xx", "5xx"};

	if (status < 100 || status > 599)
		return "other";
	return classes[status / 100 - 1];
}
