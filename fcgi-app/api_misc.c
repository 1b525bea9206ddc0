/* The small resources: /healthz, /worktrees, /branches. */
#include "router.h"
#include "worktree.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static json_object *api_repo_json(const char *owner, const char *name)
{
	json_object *repo = json_object_new_object();

	json_object_object_add(repo, "owner", json_object_new_string(owner));
	json_object_object_add(repo, "name", json_object_new_string(name));
	return repo;
}

static void api_healthz(const struct app *app, struct request *req,
			const char *const args[ROUTER_MAX_ARGS])
{
	json_object *o = json_object_new_object();
	struct session *list = NULL;
	size_t n = 0;
	int tmux = tmux_server_running(&app->tmux);
	int r = store_list(&app->store, &list, &n);
	const char *problem = NULL;

	free(list);
	if (access(app->store.dir, W_OK) < 0 || r < 0)
		problem = "the runtime directory is not usable";
	else if (tmux != 1)
		problem = "the tmux server is not running";
	json_object_object_add(o, "status", json_object_new_string(problem ? "error" : "ok"));
	json_object_object_add(o, "sessions", json_object_new_int64((int64_t)n));
	json_object_object_add(o, "tmux", json_object_new_boolean(tmux == 1));
	if (problem != NULL) {
		json_object_object_add(o, "error", json_object_new_string(problem));
		json_object_object_add(o, "code", json_object_new_string("unhealthy"));
	}
	request_reply(req, problem ? 503 : 200, o, NULL);
}

static void api_worktrees(const struct app *app, struct request *req,
			  const char *const args[ROUTER_MAX_ARGS])
{
	struct worktree_entry *list;
	json_object *arr;
	size_t n;
	int r = worktree_list(app->cfg->base_dir, &list, &n);

	if (r < 0) {
		request_error(req, 500, "git_error", "cannot list worktrees: %s", strerror(-r));
		return;
	}
	arr = json_object_new_array_ext((int)n);
	for (size_t i = 0; i < n; i++) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "repo", api_repo_json(list[i].owner, list[i].name));
		json_object_object_add(o, "issue", json_object_new_int64(list[i].issue));
		json_object_object_add(o, "path", json_object_new_string(list[i].path));
		json_object_array_add(arr, o);
	}
	free(list);
	request_reply(req, 200, arr, NULL);
}

static void api_branches(const struct app *app, struct request *req,
			 const char *const args[ROUTER_MAX_ARGS])
{
	struct worktree_branch *list;
	json_object *arr;
	size_t n;
	int r = worktree_list_branches(app->cfg->base_dir, &list, &n);

	if (r < 0) {
		request_error(req, 500, "git_error", "cannot list branches: %s", strerror(-r));
		return;
	}
	arr = json_object_new_array_ext((int)n);
	for (size_t i = 0; i < n; i++) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "repo", api_repo_json(list[i].owner, list[i].name));
		json_object_object_add(o, "issue", json_object_new_int64(list[i].issue));
		json_object_object_add(o, "name", json_object_new_string(list[i].branch));
		json_object_object_add(o, "sync",
				       json_object_new_string(worktree_sync_name(list[i].sync)));
		json_object_object_add(o, "ahead", json_object_new_int64((int64_t)list[i].ahead));
		json_object_object_add(o, "behind", json_object_new_int64((int64_t)list[i].behind));
		json_object_array_add(arr, o);
	}
	free(list);
	request_reply(req, 200, arr, NULL);
}

const struct route api_misc_routes[] = {
    {"GET", "/healthz", api_healthz, false},
    {"GET", "/worktrees", api_worktrees, false},
    {"GET", "/branches", api_branches, false},
    {NULL, NULL, NULL, false},
};
