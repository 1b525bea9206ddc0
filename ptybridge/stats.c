#include "stats.h"

#include "conn.h"
#include "eventnames.h"

#include <stdio.h>

#include <string.h>

static const char *const stats_event_names[STATS_EVENT_TYPES] = {EV_PUBLISHED};

/* The kinds of client a service's conn_ops names (terminal.c, relay.c, events.c). */
static const char *const stats_kinds[] = {"terminal", "stream", "events"};
#define STATS_KINDS (sizeof(stats_kinds) / sizeof(stats_kinds[0]))

void stats_init(struct stats *s)
{
	memset(s, 0, sizeof(*s));
	s->started_wall = time(NULL);
	clock_gettime(CLOCK_MONOTONIC, &s->started);
}

void stats_request(struct stats *s, const char *pattern, uint64_t us)
{
	struct stats_route *r = &s->routes[STATS_ROUTES_MAX];

	for (size_t i = 0; i < s->nroutes; i++)
		if (s->routes[i].pattern == pattern)
			r = &s->routes[i];
	if (r == &s->routes[STATS_ROUTES_MAX] && s->nroutes < STATS_ROUTES_MAX) {
		r = &s->routes[s->nroutes++];
		r->pattern = pattern;
	}
	r->requests++;
	metrics_hist_observe(&r->dispatch, us);
}

void stats_refused(struct stats *s, int status)
{
	if (status >= 100 && status <= 599)
		s->refused[status / 100 - 1]++;
	else
		s->refused[5]++;
}

void stats_event(struct stats *s, const char *name)
{
	size_t i = 0;

	while (i < STATS_EVENT_TYPES && strcmp(stats_event_names[i], name) != 0)
		i++;
	s->events[i]++;
}

static void stats_write_routes(const struct stats *s, struct metrics_text *t)
{
	char label[METRICS_LABELS_MAX];

	metrics_family(t, "agentd_bridge_requests_total", "counter",
		       "Requests agentd-bridge handed to a service, by route template.");
	for (size_t i = 0; i <= STATS_ROUTES_MAX; i++) {
		const struct stats_route *r = &s->routes[i];

		if (i >= s->nroutes && i < STATS_ROUTES_MAX)
			continue;
		metrics_label(label, sizeof(label), "route",
			      r->pattern != NULL ? r->pattern : "other");
		metrics_sample_u64(t, "agentd_bridge_requests_total", label, r->requests);
	}
	metrics_family(t, "agentd_bridge_dispatch_duration_seconds", "histogram",
		       "From accepting a connection to handing its request to the service (the "
		       "head read and the admission checks), by route template.");
	for (size_t i = 0; i <= STATS_ROUTES_MAX; i++) {
		const struct stats_route *r = &s->routes[i];

		if (i >= s->nroutes && i < STATS_ROUTES_MAX)
			continue;
		metrics_label(label, sizeof(label), "route",
			      r->pattern != NULL ? r->pattern : "other");
		metrics_hist_write(t, "agentd_bridge_dispatch_duration_seconds", label,
				   &r->dispatch);
	}
	metrics_family(t, "agentd_bridge_refused_total", "counter",
		       "Requests agentd-bridge answered at its front door (no route, a bad head, a "
		       "revoked credential, a connection limit), by status class.");
	for (int c = 0; c < 6; c++) {
		static const char *const classes[] = {"1xx", "2xx", "3xx", "4xx", "5xx", "other"};

		snprintf(label, sizeof(label), "code=\"%s\"", classes[c]);
		metrics_sample_u64(t, "agentd_bridge_refused_total", label, s->refused[c]);
	}
}

void stats_write(const struct stats *s, const struct conn_set *set, struct metrics_text *t)
{
	unsigned clients[STATS_KINDS] = {0};
	struct timespec now;
	char label[METRICS_LABELS_MAX];
	const struct conn *c;

	clock_gettime(CLOCK_MONOTONIC, &now);
	metrics_family(t, "agentd_bridge_build_info", "gauge",
		       "agentd-bridge's version (the value is always 1).");
	metrics_sample(t, "agentd_bridge_build_info", "version=\"" AGENTD_VERSION "\"", 1);
	metrics_family(t, "agentd_bridge_start_time_seconds", "gauge",
		       "When agentd-bridge started, in unix seconds (a restart changes it).");
	metrics_sample(t, "agentd_bridge_start_time_seconds", NULL, (double)s->started_wall);
	metrics_family(t, "agentd_bridge_uptime_seconds", "gauge",
		       "Seconds since agentd-bridge started.");
	metrics_sample(t, "agentd_bridge_uptime_seconds", NULL,
		       (double)(now.tv_sec - s->started.tv_sec));
	stats_write_routes(s, t);
	metrics_family(t, "agentd_bridge_events_total", "counter",
		       "Events agentd-bridge published on /events since it started, by type.");
	for (size_t i = 0; i <= STATS_EVENT_TYPES; i++) {
		metrics_label(label, sizeof(label), "type",
			      i < STATS_EVENT_TYPES ? stats_event_names[i] : "other");
		metrics_sample_u64(t, "agentd_bridge_events_total", label, s->events[i]);
	}
	LIST_FOREACH(c, &set->head, link)
	{
		for (size_t k = 0; k < STATS_KINDS; k++)
			if (c->ops != NULL && c->ops->kind != NULL &&
			    strcmp(c->ops->kind, stats_kinds[k]) == 0)
				clients[k]++;
	}
	metrics_family(
	    t, "agentd_bridge_clients", "gauge",
	    "Clients connected to agentd-bridge now: terminal WebSockets, structured-mode "
	    "streams and requests, /events streams.");
	for (size_t k = 0; k < STATS_KINDS; k++) {
		metrics_label(label, sizeof(label), "kind", stats_kinds[k]);
		metrics_sample_u64(t, "agentd_bridge_clients", label, clients[k]);
	}
}
