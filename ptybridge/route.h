/*
 * The bridge's route tables (struct bridge_route, one per service, as fcgi-app/router.c keeps
 * one per API file): a request path is matched against each pattern in turn, '*' standing for
 * one non-empty path segment without '/'. What a service then checks (method, id, headers) and
 * answers stays the service's.
 */
#ifndef AGENTD_BRIDGE_ROUTE_H
#define AGENTD_BRIDGE_ROUTE_H

#include "bridge.h"

#include <stdbool.h>
#include <stddef.h>

/* True when path matches pattern (core/pathmatch.h; nothing captured). */
bool route_match(const char *pattern, const char *path);

/* The first entry of tables[0..n) whose pattern matches path, or NULL (404). */
const struct bridge_route *route_find(const struct bridge_route *const *tables, size_t n,
				      const char *path);

#endif
