#include "router.h"

#include "origin.h"
#include "pathmatch.h"

#include <string.h>

static const struct route *const router_tables[] = {
    api_auth_routes,  api_sessions_routes,  api_diff_routes, api_pr_routes,
    api_mode_routes,  api_worktrees_routes, api_misc_routes, api_metrics_routes,
    api_repos_routes, api_push_routes,      api_pair_routes, api_usage_routes};
#define ROUTER_TABLES (sizeof(router_tables) / sizeof(router_tables[0]))

size_t router_nroutes(void)
{
	size_t n = 0;

	for (size_t t = 0; t < ROUTER_TABLES; t++)
		for (const struct route *r = router_tables[t]; r->method != NULL; r++)
			n++;
	return n;
}

const struct route *router_route(size_t i)
{
	for (size_t t = 0; t < ROUTER_TABLES; t++)
		for (const struct route *r = router_tables[t]; r->method != NULL; r++)
			if (i-- == 0)
				return r;
	return NULL;
}

int router_dispatch(const struct app *app, struct request *req)
{
	struct pathmatch m;
	const char *args[ROUTER_MAX_ARGS] = {m.args[0], m.args[1], m.args[2]};
	bool path_known = false;
	int index = -1;

	for (size_t t = 0; t < ROUTER_TABLES; t++) {
		for (const struct route *r = router_tables[t]; r->method != NULL; r++) {
			index++;
			if (!pathmatch(r->pattern, req->path, &m))
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
				return index;
			}
			r->handler(app, req, args);
			return index;
		}
	}
	if (path_known)
		request_error(req, 405, "method_not_allowed", "%s is not supported on %s",
			      req->method, req->path);
	else
		request_error(req, 404, "not_found", "no such resource: %s", req->path);
	return -1;
}
