#include "router.h"

#include "origin.h"

#include <string.h>

#define ROUTER_SEGMENT_MAX 256

static const struct route *const router_tables[] = {api_sessions_routes, api_mode_routes,
						    api_worktrees_routes, api_misc_routes};

/*
 * Matches path against pattern; captured segments are copied into bufs. Returns true on match.
 * A segment (or, for "**", the rest of the path) longer than ROUTER_SEGMENT_MAX never matches
 * (the validators would refuse it).
 */
static bool router_match(const char *pattern, const char *path,
			 char bufs[ROUTER_MAX_ARGS][ROUTER_SEGMENT_MAX], int *nargs)
{
	const char *p = pattern, *s = path;

	*nargs = 0;
	while (*p != '\0' && *s != '\0') {
		if (p[0] == '*' && p[1] == '*') {
			size_t len = strlen(s);

			if (p[2] != '\0' || len >= ROUTER_SEGMENT_MAX || *nargs == ROUTER_MAX_ARGS)
				return false;
			memcpy(bufs[*nargs], s, len + 1);
			(*nargs)++;
			return true;
		}
		if (*p == '*') {
			size_t len = strcspn(s, "/");

			if (len == 0 || len >= ROUTER_SEGMENT_MAX || *nargs == ROUTER_MAX_ARGS)
				return false;
			memcpy(bufs[*nargs], s, len);
			bufs[*nargs][len] = '\0';
			(*nargs)++;
			s += len;
			p++;
			continue;
		}
		if (*p != *s)
			return false;
		p++;
		s++;
	}
	return *p == '\0' && *s == '\0';
}

void router_dispatch(const struct app *app, struct request *req)
{
	char bufs[ROUTER_MAX_ARGS][ROUTER_SEGMENT_MAX];
	const char *args[ROUTER_MAX_ARGS] = {bufs[0], bufs[1], bufs[2]};
	bool path_known = false;
	int nargs;

	for (size_t t = 0; t < sizeof(router_tables) / sizeof(router_tables[0]); t++) {
		for (const struct route *r = router_tables[t]; r->method != NULL; r++) {
			if (!router_match(r->pattern, req->path, bufs, &nargs))
				continue;
			path_known = true;
			if (strcmp(r->method, req->method) != 0)
				continue;
			if (r->changes_state &&
			    (req->origin_repeated ||
			     !origin_allowed(req->origin, req->scheme, req->host,
					     app->cfg->allowed_origins))) {
				request_error(req, 403, "origin_forbidden",
					      "origin %s may not change state here", req->origin);
				return;
			}
			r->handler(app, req, args);
			return;
		}
	}
	if (path_known)
		request_error(req, 405, "method_not_allowed", "%s is not supported on %s",
			      req->method, req->path);
	else
		request_error(req, 404, "not_found", "no such resource: %s", req->path);
}
