/*
 * The Origin rule of API.md: a browser request that changes state, and every WebSocket upgrade,
 * must carry an Origin equal to the request's own origin (scheme + Host) or listed in
 * AGENTD_ALLOWED_ORIGINS. A request without Origin (curl, bots) passes.
 */
#ifndef AGENTD_ORIGIN_H
#define AGENTD_ORIGIN_H

#include <stdbool.h>

/*
 * origin: the Origin header or NULL; scheme: "http"/"https" as nginx received the request (its
 * own $scheme, never a client-sent X-Forwarded-Proto: an https origin in front of nginx, such as
 * tailscale serve, must be listed); host: the Host header with port, one nginx's Host rule
 * allowed; allowed: AGENTD_ALLOWED_ORIGINS (blank- or comma-separated). Comparison is exact on
 * scheme and host (case-insensitive), so "null" and look-alike prefixes fail.
 */
bool origin_allowed(const char *origin, const char *scheme, const char *host, const char *allowed);

/* True when origin appears in the allowed list (for CORS answers). */
bool origin_listed(const char *origin, const char *allowed);

#endif
