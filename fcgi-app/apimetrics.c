#include "apimetrics.h"

#include "router.h"

#include <stdio.h>
#include <string.h>

static const char *const apimetrics_classes[APIMETRICS_CLASSES] = {"1xx", "2xx", "3xx",
								   "4xx", "5xx", "other"};

void apimetrics_init(struct apimetrics *m)
{
	memset(m, 0, sizeof(*m));
	m->started_wall = time(NULL);
}

static size_t apimetrics_slot(int route)
{
	return route < 0 || route >= APIMETRICS_ROUTES_MAX ? APIMETRICS_ROUTES_MAX : (size_t)route;
}

void apimetrics_observe(struct apimetrics *m, int route, int status, uint64_t us)
{
	struct apimetrics_route *r;
	size_t c = status >= 100 && status <= 599 ? (size_t)(status / 100 - 1) : 5;

	if (m == NULL)
		return;
	r = &m->routes[apimetrics_slot(route)];
	atomic_fetch_add_explicit(&r->by_class[c], 1, memory_order_relaxed);
	metrics_hist_observe(&r->latency, us);
}

/* The labels of slot i: its method and route template ("other" for the shared slot). */
static void apimetrics_labels(size_t i, size_t n, char *out, size_t outlen)
{
	const struct route *r = i < APIMETRICS_ROUTES_MAX && i < n ? router_route(i) : NULL;
	char method[64], route[METRICS_LABELS_MAX / 2];

	metrics_label(method, sizeof(method), "method", r != NULL ? r->method : "other");
	metrics_label(route, sizeof(route), "route", r != NULL ? r->pattern : "other");
	snprintf(out, outlen, "%s,%s", method, route);
}

void apimetrics_write(const struct apimetrics *m, struct metrics_text *t)
{
	size_t n = router_nroutes();
	char labels[METRICS_LABELS_MAX], full[METRICS_LABELS_MAX + 16];

	metrics_family(t, "agentd_api_requests_total", "counter",
		       "Requests agentd-api answered since it started, by method, route template "
		       "and status class (route other: no route matched).");
	for (size_t i = 0; i <= APIMETRICS_ROUTES_MAX; i++) {
		if (i >= n && i < APIMETRICS_ROUTES_MAX)
			continue;
		apimetrics_labels(i, n, labels, sizeof(labels));
		for (size_t c = 0; c < APIMETRICS_CLASSES; c++) {
			uint64_t v =
			    atomic_load_explicit(&m->routes[i].by_class[c], memory_order_relaxed);

			snprintf(full, sizeof(full), "%s,code=\"%s\"", labels,
				 apimetrics_classes[c]);
			metrics_sample_u64(t, "agentd_api_requests_total", full, v);
		}
	}
	metrics_family(
	    t, "agentd_api_request_duration_seconds", "histogram",
	    "How long agentd-api took to answer a request, by method and route template.");
	for (size_t i = 0; i <= APIMETRICS_ROUTES_MAX; i++) {
		if (i >= n && i < APIMETRICS_ROUTES_MAX)
			continue;
		apimetrics_labels(i, n, labels, sizeof(labels));
		metrics_hist_write(t, "agentd_api_request_duration_seconds", labels,
				   &m->routes[i].latency);
	}
}
