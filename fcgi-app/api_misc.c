/* The small resources: /healthz and /whoami (the git ones are in api_worktrees.c). */
#include "router.h"

#include "auth.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void api_healthz(const struct app *app, struct request *req,
			const char *const args[ROUTER_MAX_ARGS])
{
	json_object *o = json_object_new_object();
	struct session *list = NULL;
	size_t n = 0;
	int tmux = tmux_server_running(&app->tmux);
	int r = store_list(&app->store, &list, &n);
	const char *problem = NULL;
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	free(list);
	if (access(app->store.dir, W_OK) < 0 || r < 0)
		problem = "the session records directory (in the state dir) is not usable";
	else if (tmux != 1)
		problem = "the tmux server is not running";
	json_object_object_add(o, "status", json_object_new_string(problem ? "error" : "ok"));
	json_object_object_add(o, "sessions", json_object_new_int64((int64_t)n));
	json_object_object_add(o, "tmux", json_object_new_boolean(tmux == 1));
	/* Monitoring tells a restart loop from a steady daemon, and which build answers. */
	json_object_object_add(o, "uptimeSeconds",
			       json_object_new_int64((int64_t)(now.tv_sec - app->started.tv_sec)));
	json_object_object_add(o, "version", json_object_new_string(AGENTD_VERSION));
	if (problem != NULL) {
		json_object_object_add(o, "error", json_object_new_string(problem));
		json_object_object_add(o, "code", json_object_new_string("unhealthy"));
	}
	request_reply(req, problem ? 503 : 200, o, NULL);
}

/* GET /whoami: who nginx's door says the request is (docs/API.md, Access), so that a client such
 * as the web UI shows a read-only identity no button that would fail. The identity and role come
 * from the decision nginx passed (AGENTD_IDENTITY, AGENTD_ROLE, AGENTD_BY); without one (not
 * through nginx) the sender is a viewer with no identity, as every daemon treats it. */
static void api_whoami(const struct app *app, struct request *req,
		       const char *const args[ROUTER_MAX_ARGS])
{
	json_object *o = json_object_new_object();
	const char *identity = request_param_value(req, "AGENTD_IDENTITY");
	struct auth_who who;

	auth_who_from_headers(&who, request_param_value(req, "AGENTD_ROLE"), req->by);
	json_object_object_add(
	    o, "identity",
	    identity != NULL && auth_by_valid(identity) ? json_object_new_string(identity) : NULL);
	json_object_object_add(
	    o, "role", json_object_new_string(who.admin ? AUTH_ROLE_ADMIN : AUTH_ROLE_VIEWER));
	json_object_object_add(o, "by", json_object_new_string(who.by));
	request_reply(req, 200, o, "Cache-Control: no-store\r\n");
}

const struct route api_misc_routes[] = {
    {"GET", "/healthz", api_healthz, false},
    {"GET", "/whoami", api_whoami, false},
    {NULL, NULL, NULL, false},
};
