/*
 * The route table: each resource file exports its routes; router_dispatch picks the handler by
 * method and path shape and answers 404 / 405 itself.
 */
#ifndef AGENTD_ROUTER_H
#define AGENTD_ROUTER_H

#include "app.h"
#include "pathmatch.h"
#include "request.h"

/* A path pattern as core/pathmatch.h reads it: literal segments, "*" for one segment captured
 * into args, and "**" at the end for the rest of the path, slashes included. */
#define ROUTER_MAX_ARGS PATHMATCH_ARGS_MAX

typedef void (*route_handler_cb)(const struct app *app, struct request *req,
				 const char *const args[ROUTER_MAX_ARGS]);

struct route {
	const char *method;
	const char *pattern; /* e.g. "/sessions/ * /mode" without blanks */
	route_handler_cb handler;
	bool changes_state; /* the Origin rule applies */
};

extern const struct route api_sessions_routes[];
extern const struct route api_diff_routes[];
extern const struct route api_pr_routes[];
extern const struct route api_misc_routes[];
extern const struct route api_mode_routes[];
extern const struct route api_worktrees_routes[];
extern const struct route api_auth_routes[];
extern const struct route api_metrics_routes[];
extern const struct route api_repos_routes[];
extern const struct route api_push_routes[];
extern const struct route api_pair_routes[];
extern const struct route api_usage_routes[];

/* Answers req. Returns the index of the route that answered (router_route), or -1 when none
 * matched (404, 405): GET /metrics counts requests by route template. */
int router_dispatch(const struct app *app, struct request *req);

/* The routes in dispatch order: router_route(i) for i < router_nroutes(). */
size_t router_nroutes(void);
const struct route *router_route(size_t i);

#endif
