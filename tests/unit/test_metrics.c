/*
 * metrics: the Prometheus text format the daemons answer GET /metrics with — histogram buckets
 * are cumulative and agree with _count, label values are escaped, and the text stays within its
 * bound.
 */
#include "metrics.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

Test(metrics, histogram_buckets_are_cumulative_and_bounds_inclusive)
{
	struct metrics_hist h = {0};
	struct metrics_text t;

	metrics_hist_observe(&h, 1000);     /* exactly 1 ms: in le="0.001" */
	metrics_hist_observe(&h, 1001);     /* just above: le="0.0025" */
	metrics_hist_observe(&h, 20000000); /* 20 s: only +Inf */
	metrics_text_init(&t);
	metrics_hist_write(&t, "agentd_x_seconds", "route=\"/a\"", &h);
	cr_assert_eq(t.error, 0);
	cr_assert_not_null(strstr(t.buf, "agentd_x_seconds_bucket{route=\"/a\",le=\"0.001\"} 1\n"));
	cr_assert_not_null(
	    strstr(t.buf, "agentd_x_seconds_bucket{route=\"/a\",le=\"0.0025\"} 2\n"));
	cr_assert_not_null(strstr(t.buf, "agentd_x_seconds_bucket{route=\"/a\",le=\"10\"} 2\n"));
	cr_assert_not_null(strstr(t.buf, "agentd_x_seconds_bucket{route=\"/a\",le=\"+Inf\"} 3\n"));
	cr_assert_not_null(strstr(t.buf, "agentd_x_seconds_count{route=\"/a\"} 3\n"));
	cr_assert_not_null(strstr(t.buf, "agentd_x_seconds_sum{route=\"/a\"} 20.002001\n"));
	metrics_text_free(&t);
}

Test(metrics, histogram_without_labels)
{
	struct metrics_hist h = {0};
	struct metrics_text t;

	metrics_text_init(&t);
	metrics_hist_write(&t, "agentd_y_seconds", NULL, &h);
	cr_assert_not_null(strstr(t.buf, "agentd_y_seconds_bucket{le=\"0.005\"} 0\n"));
	cr_assert_not_null(strstr(t.buf, "agentd_y_seconds_sum 0.000000\n"));
	cr_assert_not_null(strstr(t.buf, "agentd_y_seconds_count 0\n"));
	metrics_text_free(&t);
}

Test(metrics, bounds_increase)
{
	for (size_t i = 1; i < METRICS_LATENCY_BUCKETS; i++)
		cr_assert_gt(metrics_latency_bounds_us[i], metrics_latency_bounds_us[i - 1]);
}

#define THREADS 4
#define PER     10000

static void *observer(void *arg)
{
	for (int i = 0; i < PER; i++)
		metrics_hist_observe(arg, (uint64_t)(i % 3) * 3000);
	return NULL;
}

Test(metrics, observations_from_threads_are_all_counted)
{
	static struct metrics_hist h;
	pthread_t th[THREADS];
	struct metrics_text t;
	char want[128];

	for (int i = 0; i < THREADS; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, observer, &h), 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	metrics_text_init(&t);
	metrics_hist_write(&t, "h", NULL, &h);
	snprintf(want, sizeof(want), "h_count %d\n", THREADS * PER);
	cr_assert_not_null(strstr(t.buf, want), "%s", t.buf);
	metrics_text_free(&t);
}

Test(metrics, family_and_samples)
{
	struct metrics_text t;

	metrics_text_init(&t);
	metrics_family(&t, "agentd_sessions", "gauge", "Sessions by state.");
	metrics_sample(&t, "agentd_sessions", "state=\"running\"", 2);
	metrics_sample_u64(&t, "agentd_events_total", NULL, 18446744073709551615ULL);
	metrics_sample(&t, "agentd_z", "", 0.5);
	cr_assert_str_eq(t.buf, "# HELP agentd_sessions Sessions by state.\n"
				"# TYPE agentd_sessions gauge\n"
				"agentd_sessions{state=\"running\"} 2\n"
				"agentd_events_total 18446744073709551615\n"
				"agentd_z 0.5\n");
	metrics_text_free(&t);
}

Test(metrics, label_values_are_escaped)
{
	char out[64];

	cr_assert_eq(metrics_label(out, sizeof(out), "session", "a\"b\\c\nd"), 20);
	cr_assert_str_eq(out, "session=\"a\\\"b\\\\c\\nd\"");
}

Test(metrics, label_that_does_not_fit_is_refused)
{
	char out[12];

	cr_assert_eq(metrics_label(out, sizeof(out), "k", "12345678"), -EOVERFLOW);
	cr_assert_str_eq(out, "");
	cr_assert_eq(metrics_label(out, sizeof(out), "k", "1234567"), 11);
	cr_assert_eq(metrics_label(out, sizeof(out), "k", "\"\"\"\""), -EOVERFLOW);
}

Test(metrics, text_is_bounded)
{
	static char chunk[64 * 1024];
	struct metrics_text t;

	memset(chunk, 'x', sizeof(chunk));
	metrics_text_init(&t);
	for (size_t i = 0; i < METRICS_TEXT_MAX / sizeof(chunk) + 1; i++)
		metrics_append(&t, chunk, sizeof(chunk));
	cr_assert_eq(t.error, -EOVERFLOW);
	cr_assert_lt(t.len, (size_t)METRICS_TEXT_MAX);
	metrics_printf(&t, "more");
	cr_assert_eq(t.error, -EOVERFLOW);
	metrics_text_free(&t);
}

Test(metrics, status_classes)
{
	cr_assert_str_eq(metrics_status_class(200), "2xx");
	cr_assert_str_eq(metrics_status_class(599), "5xx");
	cr_assert_str_eq(metrics_status_class(101), "1xx");
	cr_assert_str_eq(metrics_status_class(0), "other");
	cr_assert_str_eq(metrics_status_class(600), "other");
}
