/*
 * agentd-api's own numbers for GET /metrics: requests by route template and status class, and
 * their latency, counted by the request threads with C11 atomics (no lock on the request path).
 * The route is router_dispatch's index; requests no route answered share one slot.
 */
#ifndef AGENTD_APIMETRICS_H
#define AGENTD_APIMETRICS_H

#include "metrics.h"

#include <stdint.h>
#include <time.h>

/* Routes counted one by one (the tables hold about 20); a further one shares the last slot. */
#define APIMETRICS_ROUTES_MAX 40
#define APIMETRICS_CLASSES    6 /* 1xx .. 5xx, and other (no status written) */

struct apimetrics_route {
	_Atomic uint64_t by_class[APIMETRICS_CLASSES];
	struct metrics_hist latency;
};

struct apimetrics {
	time_t started_wall; /* unix seconds at start: a restart changes it */
	struct apimetrics_route routes[APIMETRICS_ROUTES_MAX + 1]; /* the last: no route */
};

void apimetrics_init(struct apimetrics *m);

/* Counts one request answered by route (router_dispatch's index, -1: none) with status (0: none
 * written) in us microseconds. m may be NULL (nothing is counted). Safe from any thread. */
void apimetrics_observe(struct apimetrics *m, int route, int status, uint64_t us);

/* Writes the agentd_api_requests_total and agentd_api_request_duration_seconds families. */
void apimetrics_write(const struct apimetrics *m, struct metrics_text *t);

#endif
