/*
 * The bridge's own numbers for GET /metrics (docs/API.md "Metrics"): requests per route and how
 * long the front door took to hand each to its service, the requests it answered itself, the
 * /events events published per type, and the clients connected now by kind. agentd-api asks for
 * them on the bridge's socket (STATS_PATH) and serves them with its own: each daemon counts
 * only what it does. One loop thread: plain counters.
 */
#ifndef AGENTD_BRIDGE_STATS_H
#define AGENTD_BRIDGE_STATS_H

#include "metrics.h"

#include <stdint.h>
#include <time.h>

/* The internal path agentd-api reads the bridge's families from. nginx sends nothing under
 * /.agentd/ to the bridge, so only a process that reaches its socket (nginx's group) asks. */
#define STATS_PATH "/.agentd/metrics"
/* Route templates counted one by one (the route tables have 7); any further one is "other". */
#define STATS_ROUTES_MAX 16
/* The /events event types counted by name (docs/API.md "Events"); any other is "other". */
#define STATS_EVENT_TYPES 7

struct conn_set;

struct stats_route {
	const char *pattern; /* a route table's template (static), NULL for the "other" slot */
	uint64_t requests;
	struct metrics_hist dispatch; /* accept to hand-over: head read and admission */
};

struct stats {
	time_t started_wall;     /* the bridge's start, unix seconds */
	struct timespec started; /* CLOCK_MONOTONIC: uptime */
	struct stats_route routes[STATS_ROUTES_MAX + 1];
	size_t nroutes;      /* used slots before the "other" one */
	uint64_t refused[6]; /* answered by the front door, by status class (1xx..5xx) */
	uint64_t events[STATS_EVENT_TYPES + 1]; /* the last: other names */
};

void stats_init(struct stats *s);

/* A request handed to the service of pattern (a route table's, kept by pointer), us
 * microseconds after its connection was accepted. */
void stats_request(struct stats *s, const char *pattern, uint64_t us);

/* A request the front door answered itself with status. */
void stats_refused(struct stats *s, int status);

/* An event published on /events under name. */
void stats_event(struct stats *s, const char *name);

/* Writes the agentd_bridge_* families into t, counting the clients of set by their service's
 * conn_ops kind. */
void stats_write(const struct stats *s, const struct conn_set *set, struct metrics_text *t);

#endif
