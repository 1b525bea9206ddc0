/*
 * The Prometheus text format (exposition format 0.0.4) and the few instruments the daemons
 * keep: a latency histogram with fixed buckets that request threads update with C11 atomics, and
 * a bounded text buffer the families are written into. Each daemon keeps its own numbers and
 * writes them with these; docs/API.md "Metrics" lists the families.
 *
 * Names and label values are the caller's: names are agentd_* literals, label values come from
 * fixed sets (route templates, states) or are escaped here (metrics_label_escape).
 */
#ifndef AGENTD_METRICS_H
#define AGENTD_METRICS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The latency buckets' upper bounds, in microseconds: 1 ms (a cached read) to 10 s (a create's
 * POST that waits on a slow disk); slower requests fall into +Inf. */
#define METRICS_LATENCY_BUCKETS 12
extern const uint64_t metrics_latency_bounds_us[METRICS_LATENCY_BUCKETS];

/* The most a scrape's text may grow to: a few hundred lines per daemon, with one line per session
 * for the per-session families (AGENTD_MAX_SESSIONS is small). Past it the writer fails. */
#define METRICS_TEXT_MAX (1024 * 1024)
/* A label set as written between the braces, escaped values included. */
#define METRICS_LABELS_MAX 512

/* A histogram. Zero-initialised is empty; every field is updated with relaxed atomics, so a
 * scrape may see an observation in one bucket before the count: the writer derives +Inf and
 * _count from the buckets it read, so what it writes is always consistent. */
struct metrics_hist {
	_Atomic uint64_t buckets[METRICS_LATENCY_BUCKETS + 1]; /* the last one: above every bound */
	_Atomic uint64_t sum_us;
};

/* Counts one observation of us microseconds. Safe from any thread. */
void metrics_hist_observe(struct metrics_hist *h, uint64_t us);

/* The text of one scrape, grown as needed up to METRICS_TEXT_MAX. */
struct metrics_text {
	char *buf; /* NUL-terminated; owned */
	size_t len, cap;
	int error; /* the first failure (-ENOMEM, -EOVERFLOW); later writes do nothing */
};

void metrics_text_init(struct metrics_text *t);
void metrics_text_free(struct metrics_text *t);

/* Appends printf-formatted text. */
void metrics_printf(struct metrics_text *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Appends len bytes as they are (another daemon's families). */
void metrics_append(struct metrics_text *t, const char *s, size_t len);

/* The # HELP and # TYPE lines of a family (type: "counter", "gauge", "histogram"). help must not
 * hold a backslash or a line break (they are literals). */
void metrics_family(struct metrics_text *t, const char *name, const char *type, const char *help);

/* One sample: name{labels} value; labels ("" or NULL: none) as metrics_labels writes them. */
void metrics_sample(struct metrics_text *t, const char *name, const char *labels, double value);
void metrics_sample_u64(struct metrics_text *t, const char *name, const char *labels,
			uint64_t value);

/* name_bucket{labels,le="…"} for every bound and +Inf, name_sum (seconds) and name_count. */
void metrics_hist_write(struct metrics_text *t, const char *name, const char *labels,
			const struct metrics_hist *h);

/*
 * Writes `key="value"` to out (outlen bytes), escaping the value as the format wants (\\, \",
 * \n). Returns the length, or -EOVERFLOW when it does not fit (out is then "").
 */
int metrics_label(char *out, size_t outlen, const char *key, const char *value);

/* The status class of an HTTP status as a label value: "1xx" .. "5xx" ("other" outside). */
const char *metrics_status_class(int status);

#endif
