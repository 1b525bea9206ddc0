#include "api_sessions.h"
#include "agentlaunch.h"
#include "agents.h"
#include "api_usage.h"
#include "cagecmd.h"
#include "cost.h"

#include "api_pr.h"
#include "api_worktrees.h"
#include "create.h"
#include "fsutil.h"
#include "gitrepo.h"
#include "log.h"
#include "policies.h"
#include "router.h"
#include "sessioncg.h"
#include "stop.h"
#include "worktree.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define API_JSON_DEPTH 8
/* The agent of a deleted session ends on the SIGHUP of its pane within this, or is killed. */
#define API_REAP_WAIT_MS 5000
#define API_REAP_POLL_MS 20

/* Counts sessions that hold a slot (a failed or lost session holds none). */
static int api_count_active(const struct app *app, size_t *count)
{
	struct session *list;
	size_t n;
	int r = store_list(&app->store, &list, &n);

	if (r < 0)
		return r;
	*count = 0;
	for (size_t i = 0; i < n; i++)
		if (session_holds_slot(list[i].state))
			(*count)++;
	free(list);
	return 0;
}

/*
 * Gives s the lowest range of AGENTD_PORT_SPAN ports from AGENTD_PORT_BASE on that no other
 * record holds (the caller holds the store-wide lock, so two creations never pick the same; a
 * deleted session's range is free again). Nothing when AGENTD_PORT_BASE is off. Returns 0,
 * -ENOSPC when every range up to port 65535 is taken, or -errno.
 */
static int api_pick_ports(const struct app *app, struct session *s)
{
	long base = config_port_base(app->cfg), span = app->cfg->port_span;
	struct session *list;
	size_t n;
	int r;

	s->port_first = s->port_last = 0;
	if (base == 0)
		return 0;
	if ((r = store_list(&app->store, &list, &n)) < 0)
		return r;
	r = -ENOSPC;
	for (long first = base; first + span - 1 <= UINT16_MAX; first += span) {
		bool taken = false;

		for (size_t i = 0; i < n && !taken; i++)
			taken = list[i].port_first != 0 && strcmp(list[i].id, s->id) != 0 &&
				list[i].port_first <= first + span - 1 &&
				list[i].port_last >= first;
		if (!taken) {
			s->port_first = (uint16_t)first;
			s->port_last = (uint16_t)(first + span - 1);
			r = 0;
			break;
		}
	}
	free(list);
	return r;
}

static void api_reply_session(struct request *req, int status, const struct session *s)
{
	char loc[SESSION_ID_MAX + 64];

	snprintf(loc, sizeof(loc), "Location: /sessions/%s\r\n", s->id);
	request_reply(req, status, session_to_json(s, false), status == 201 ? loc : NULL);
}

/*
 * Decides, under the store-wide lock and the session lock, whether this POST creates, repeats or
 * conflicts. Fills s with the record to answer.
 */
static void api_create_locked(const struct app *app, struct request *req,
			      const struct session_create *in, struct session *s)
{
	struct session old;
	struct cause cause = {{0}};
	size_t active;
	int handed, r;

	r = store_read(&app->store, s->id, &old, &cause);
	if (r == 0 && strcmp(old.owner, in->owner) != 0) {
		request_error(req, 409, "id_conflict", "session %s already exists for %s/%s",
			      old.id, old.owner, old.name);
		return;
	}
	if (r == 0 && old.state == SESSION_EXITED) {
		/* Its tmux session and worktree are there: only claude starts again. It keeps the
		 * slot it holds, so the limit is not checked. */
		snprintf(old.by, sizeof(old.by), "%s", req->by);
		policies_started(&old); /* a person's restart: the policy's count starts over */
		if (create_respawn(app, &old, old.mode, &cause) < 0) {
			request_error(req, 500, "restart_failed", "cannot restart %s: %s", old.id,
				      cause.msg);
			return;
		}
		if (store_write(&app->store, &old, &cause) < 0) {
			request_error(req, 500, "store_error", "%s", cause.msg);
			return;
		}
		api_reply_session(req, 201, &old);
		return;
	}
	if (r == 0 && session_holds_slot(old.state)) {
		api_reply_session(req, 200, &old);
		return;
	}
	if (r < 0 && r != -ENOENT) {
		request_error(req, 500, "store_error", "cannot read session %s: %s", s->id,
			      cause.msg);
		return;
	}
	if (r == 0) {
		/* A failed or lost session is started over (a new tmux session in the same
		 * worktree): keep the conversation if claude ever ran with it. */
		if (old.launched) {
			memcpy(s->agent_session_id, old.agent_session_id,
			       sizeof(s->agent_session_id));
			s->launched = true;
		}
		s->launch = old.launch; /* requests of an earlier claude stay known as gone */
		/* Its worktree is not new: a setup command that ran in it does not run again. */
		s->policy.setup_done = old.policy.setup_done;
		/* Its agent is the one of its creation: its conversation is that CLI's. */
		memcpy(s->agent, old.agent, sizeof(s->agent));
		/* Its dev servers' ports stay what they were. */
		s->port_first = old.port_first;
		s->port_last = old.port_last;
		s->uid = old.uid; /* its files are that uid's */
		s->created_at = old.created_at;
		/* What it cost so far stays its cost: the transcript is the same conversation's. */
		s->cost = old.cost;
		s->transcript = old.transcript;
	}
	snprintf(s->by, sizeof(s->by), "%s", req->by);
	if ((r = api_count_active(app, &active)) < 0) {
		request_error(req, 500, "store_error", "cannot list sessions: %s", strerror(-r));
		return;
	}
	if (active >= (size_t)app->cfg->max_sessions) {
		request_error(req, 429, "too_many_sessions",
			      "%zu sessions are active; the limit is %d (AGENTD_MAX_SESSIONS)",
			      active, app->cfg->max_sessions);
		return;
	}
	if (s->port_first == 0 && (r = api_pick_ports(app, s)) < 0) {
		if (r == -ENOSPC)
			request_error(
			    req, 429, "no_free_ports",
			    "every range of %d ports from AGENTD_PORT_BASE %s to 65535 is "
			    "taken",
			    app->cfg->port_span, app->cfg->port_base);
		else
			request_error(req, 500, "store_error", "cannot list sessions: %s",
				      strerror(-r));
		return;
	}
	/* A caged session's own uid, before its files are made: the same one for the same
	 * session (a kept repository or HOME of an earlier one is still that uid's). */
	if ((r = cagecmd_uid_take(app, s, &cause)) < 0) {
		request_error(req, r == -ENOSPC ? 429 : 500,
			      r == -ENOSPC ? "no_free_uids" : "uid_error", "%s", cause.msg);
		return;
	}
	/* A bootstrap prompt is on its way (claude gets it at its first launch): the agent works
	 * from now on, so no client takes the session for idle and sends a prompt before it. */
	if (!s->launched && s->prompt[0] != '\0' && strcmp(agents_activity_source(s), "none") != 0)
		s->activity = SESSION_WORKING;
	/* The waiting worker gets the session first and starts its git work while the record is
	 * written; a worker started here reads the record, so it comes after. The list view last:
	 * it is not on the path of the creation. */
	handed = create_handoff(app, s, &cause);
	if ((r = store_write(&app->store, s, &cause)) < 0) {
		request_error(req, 500, "store_error", "%s", cause.msg); /* a worker stops */
		return;
	}
	r = handed == 0 ? create_start(app, s, &cause) : handed < 0 ? handed : 0;
	if (r < 0) {
		log_error("cannot start the worker of %s: %s", s->id, cause.msg);
		s->state = SESSION_FAILED;
		snprintf(s->error, sizeof(s->error), "cannot start the creation worker: %.400s",
			 cause.msg);
		store_write(&app->store, s, NULL);
	}
	api_reply_session(req, 201, s);
}

/* The agent of the body (or AGENTD_DEFAULT_AGENT) into s; 400 for one the table does not know,
 * naming those it knows, or for a mode the agent has not. Returns 0 or -EINVAL (answered). */
static int api_pick_agent(const struct app *app, struct request *req,
			  const struct session_create *in, struct session *s)
{
	const char *name = in->agent != NULL ? in->agent : app->cfg->default_agent;
	char known[AGENTS_LIST_MAX];
	struct agent a;

	if (agents_find(app->cfg, name, &a) < 0) {
		agents_list(app->cfg, known, sizeof(known));
		request_error(req, 400, "unknown_agent", "unknown agent '%.64s'; known: %s", name,
			      known);
		return -EINVAL;
	}
	if (in->mode == SESSION_STRUCTURED && !a.structured) {
		request_error(req, 400, "no_structured_mode",
			      "the agent %s has no structured mode: create it in terminal mode",
			      a.name);
		return -EINVAL;
	}
	snprintf(s->agent, sizeof(s->agent), "%s", a.name);
	return 0;
}

/* The session's budget: the body's "budgetUsd", else AGENTD_SESSION_BUDGET_USD, else none.
 * Returns 0, or -EINVAL once answered 400. */
static int api_pick_budget(const struct app *app, struct request *req, json_object *root,
			   struct session *s)
{
	json_object *v;

	if (json_object_object_get_ex(root, "budgetUsd", &v)) {
		if (cost_usd_from_json(v, &s->budget_micros) < 0) {
			request_error(req, 400, "invalid_budget",
				      "budgetUsd must be a number of US dollars above 0 and at "
				      "most 1000000");
			return -EINVAL;
		}
		return 0;
	}
	/* The configuration was checked at its load. */
	if (app->cfg->session_budget_usd[0] != '\0' &&
	    cost_parse_usd(app->cfg->session_budget_usd, &s->budget_micros) < 0)
		s->budget_micros = 0;
	return 0;
}

static void api_sessions_create(const struct app *app, struct request *req,
				const char *const args[ROUTER_MAX_ARGS])
{
	struct cgroup_limits max = sessioncg_max(app->cfg);
	struct policy_defaults defaults = policies_defaults(app->cfg);
	struct session_policy policy;
	struct cause cause = {{0}};
	struct session_create in;
	struct cgroup_limits limits;
	struct session *s = NULL;
	json_object *root = NULL;
	int all_fd = -1, fd = -1;

	if ((root = request_json_body(req, APP_BODY_MAX, API_JSON_DEPTH)) == NULL)
		return;
	if (session_parse_create(root, &in, &cause) < 0 ||
	    session_parse_limits(root, &max, &limits, &cause) < 0 ||
	    policy_parse_create(root, &defaults, &policy, &cause) < 0) {
		request_error(req, 400, "invalid_request", "%s", cause.msg);
		goto out;
	}
	s = calloc(1, sizeof(*s));
	if (s == NULL || session_init(s, app->cfg->base_dir, in.owner, in.name, in.issue) < 0) {
		request_error(req, 400, "invalid_request", "the session paths are too long");
		goto out;
	}
	if (api_pick_agent(app, req, &in, s) < 0)
		goto out;
	s->mode = in.mode;
	s->limits = limits;
	s->policy = policy;
	if (api_pick_budget(app, req, root, s) < 0)
		goto out;
	policies_started(s);
	if (in.prompt != NULL)
		snprintf(s->prompt, sizeof(s->prompt), "%s", in.prompt);
	else if (session_render_prompt(app->cfg->prompt, in.owner, in.name, in.issue, s->prompt,
				       sizeof(s->prompt)) < 0) {
		request_error(req, 500, "bad_config", "AGENTD_PROMPT renders too long a prompt");
		goto out;
	}
	all_fd = store_lock_all(&app->store);
	fd = all_fd >= 0 ? store_lock_create(&app->store, s->id) : -1;
	if (fd < 0) {
		request_error(req, 500, "store_error", "cannot lock the session store");
		goto out;
	}
	api_create_locked(app, req, &in, s);
out:
	/* A refused create leaves no lock file. */
	if (s != NULL)
		store_unlock_session(&app->store, s->id, fd);
	store_unlock(all_fd);
	free(s);
	json_object_put(root);
}

static void api_sessions_list(const struct app *app, struct request *req,
			      const char *const args[ROUTER_MAX_ARGS])
{
	struct session *list;
	char v[8];
	const char *finished = request_query(req, "finished", v, sizeof(v));
	json_object *arr;
	size_t n;
	int r;

	/* ?finished=false hides the sessions whose work is merged, ?finished=true shows them. */
	if ((finished == NULL && strstr(req->query, "finished=") != NULL) ||
	    (finished != NULL && strcmp(finished, "true") != 0 && strcmp(finished, "false") != 0)) {
		request_error(req, 400, "invalid_finished", "finished must be true or false");
		return;
	}
	r = store_list(&app->store, &list, &n);
	if (r < 0) {
		request_error(req, 500, "store_error", "cannot list sessions: %s", strerror(-r));
		return;
	}
	arr = json_object_new_array_ext((int)n);
	for (size_t i = 0; i < n; i++)
		if (finished == NULL ||
		    session_finished(&list[i].pr) == (strcmp(finished, "true") == 0))
			json_object_array_add(arr, session_to_json(&list[i], false));
	free(list);
	request_reply(req, 200, arr, NULL);
}

int api_session_lock(const struct app *app, struct request *req, const char *id, struct session **s)
{
	struct cause cause = {{0}};
	int fd, r;

	*s = malloc(sizeof(**s));
	fd = *s != NULL ? store_lock(&app->store, id) : -ENOMEM;
	r = fd == -ENOENT ? fd : fd < 0 ? 0 : store_read(&app->store, id, *s, &cause);
	if (r == -ENOENT)
		request_error(req, 404, "not_found", "no session %s", id);
	else if (fd < 0)
		request_error(req, 500, "store_error", "cannot lock session %s", id);
	else if (r < 0)
		request_error(req, 500, "store_error", "%s", cause.msg);
	else
		return fd;
	store_unlock(fd);
	free(*s);
	*s = NULL;
	return -1;
}

/* Validates the id of a path: 400 when malformed. Returns true when the caller may go on. */
static bool api_check_id(struct request *req, const char *id)
{
	if (session_id_valid(id))
		return true;
	request_error(req, 400, "invalid_id", "'%.120s' is not a session id (<name>-<issue>)", id);
	return false;
}

static void api_sessions_get(const struct app *app, struct request *req,
			     const char *const args[ROUTER_MAX_ARGS])
{
	struct cause cause = {{0}};
	struct session *s;
	int r;

	if (!api_check_id(req, args[0]))
		return;
	s = malloc(sizeof(*s));
	if (s == NULL) {
		request_error(req, 500, "out_of_memory", "out of memory");
		return;
	}
	/* A terminal turn's cost is in claude's transcript: taken in first, so the answer has it.
	 */
	usage_refresh(app, args[0]);
	r = store_read(&app->store, args[0], s, &cause);
	if (r == -ENOENT)
		request_error(req, 404, "not_found", "no session %s", args[0]);
	else if (r < 0)
		request_error(req, 500, "store_error", "%s", cause.msg);
	else {
		json_object *o = session_to_json(s, false);

		sessioncg_add_usage(app, s->id, o);
		request_reply(req, 200, o, NULL);
	}
	free(s);
}

/* Deletes the branch of a finished session, and says so in the answer o: "branch": "deleted", or
 * "kept" with "branchReason". The worktree layout's from its clone (the caller holds the clone's
 * lock, as the agent); the store layout's from the store, where the removal of the session's
 * repository has just put it (as the daemon: api_branches_delete_stored takes the store's lock). */
static void api_delete_merged_branch(const struct app *app, const struct session *s, bool stored,
				     json_object *o)
{
	struct cause cause = {{0}};
	int r = stored ? api_branches_delete_stored(app, s->owner, s->name, s->branch, &cause)
		       : worktree_branch_delete(app->cfg->base_dir, s->owner, s->name, s->branch,
						&cause);

	json_object_object_add(o, "branch", json_object_new_string(r == 0 ? "deleted" : "kept"));
	if (r < 0)
		json_object_object_add(o, "branchReason", json_object_new_string(cause.msg));
	log_info("session %s: merged; branch %s %s%s", s->id, s->branch,
		 r == 0 ? "deleted" : "kept: ", r == 0 ? "" : cause.msg);
}

/* Removes the worktree unless that would lose work (worktree_delete; force keeps only commits).
 * Returns the answer object. */
static json_object *api_remove_worktree(const struct app *app, const struct session *s, bool force)
{
	json_object *o = json_object_new_object();
	struct worktree_removal rm = {.fate = WORKTREE_KEPT};
	struct cause cause = {{0}};
	struct agentuser_fs fs;
	int lock;

	json_object_object_add(o, "status", json_object_new_string("stopped"));
	if (api_remove_session_repo(app, s->owner, s->name, s->worktree, s->branch, s->id, force,
				    &rm) == 0) {
		/* Merged: the store layout's branch goes as the worktree layout's does (below). */
		if (session_finished(&s->pr) && rm.fate != WORKTREE_KEPT)
			api_delete_merged_branch(app, s, true, o);
		api_worktree_removal_json(o, &rm);
		return o;
	}
	/* The worktree and its clone are the agent's files: worked on as the agent user. */
	if ((lock = agentuser_fs_enter(&app->agent, &fs)) < 0)
		snprintf(rm.reason, sizeof(rm.reason), "cannot take the agent user's identity: %s",
			 strerror(-lock));
	else if ((lock = worktree_lock(app->cfg->base_dir, s->owner, s->name)) < 0)
		snprintf(rm.reason, sizeof(rm.reason), "cannot lock the repository %s/%s: %s",
			 s->owner, s->name, strerror(-lock));
	else if (worktree_delete(app->cfg->base_dir, s->owner, s->name, s->worktree, s->branch,
				 s->id, force, &rm, &cause) < 0)
		log_error("cannot remove worktree %s: %s", s->worktree, cause.msg);
	/* Merged: the branch's work is the default branch's now, so the branch goes too, under the
	 * rule of DELETE /branches (origin has every commit of it): a commit made after the last
	 * push keeps it. */
	else if (session_finished(&s->pr) && rm.fate != WORKTREE_KEPT)
		api_delete_merged_branch(app, s, false, o);
	store_unlock(lock);
	agentuser_fs_leave(&fs);
	api_worktree_removal_json(o, &rm);
	return o;
}

/*
 * Waits for the agent's process pid (the pane's, whose tmux session was just killed) to end, and
 * kills its process group past API_REAP_WAIT_MS: gemini catches the SIGHUP and goes on writing
 * its chat files for a while, which would put back the directory the delete removes. Without a
 * cgroup nothing else ends it (with one, sessioncg_remove already did).
 */
static void api_reap_agent(pid_t pid)
{
	struct timespec pause = {0, API_REAP_POLL_MS * 1000000L};

	for (int waited = 0; waited < API_REAP_WAIT_MS; waited += API_REAP_POLL_MS) {
		if (kill(pid, 0) < 0 && errno == ESRCH)
			return;
		nanosleep(&pause, NULL);
	}
	log_warn("agent process %d outlived its tmux session; killing its process group", (int)pid);
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
	for (int waited = 0; waited < API_REAP_WAIT_MS; waited += API_REAP_POLL_MS) {
		if (kill(pid, 0) < 0 && errno == ESRCH)
			return;
		nanosleep(&pause, NULL);
	}
}

/* Removes s's directory of agentlaunch.h in the agent user's HOME (a caged session's is in its
 * own HOME, removed with it), as the agent: its files. Returns 0 or -errno. */
static int api_remove_agent_dir(const struct app *app, const struct session *s)
{
	char dir[CONFIG_PATH_MAX];
	struct agentuser_fs fs;
	int r;

	if ((r = agentlaunch_dir(app->agent.home, s, dir, sizeof(dir))) < 0 ||
	    (r = agentuser_fs_enter(&app->agent, &fs)) < 0)
		return r;
	r = fsutil_rm_tree(dir);
	agentuser_fs_leave(&fs);
	return r;
}

static void api_sessions_delete(const struct app *app, struct request *req,
				const char *const args[ROUTER_MAX_ARGS])
{
	struct cause cause = {{0}};
	struct session *s = NULL;
	char force[8];
	json_object *answer;
	bool running, keep_home;
	pid_t pane;
	int fd = -1, r;

	if (!api_check_id(req, args[0]))
		return;
	/* A running worker finishes first, so it cannot recreate what we remove. */
	if (create_worker_wait(app, args[0], CREATE_WAIT_MS) < 0) {
		request_error(req, 409, "still_creating",
			      "session %s is still being created; try again", args[0]);
		return;
	}
	if ((fd = api_session_lock(app, req, args[0], &s)) < 0)
		goto out;
	running = s->state == SESSION_RUNNING || s->state == SESSION_ATTACHED;
	s->state = SESSION_STOPPING;
	snprintf(s->by, sizeof(s->by), "%s", req->by);
	store_write(&app->store, s, NULL);
	/* Gracefully: claude finishes its transcript before its tmux session goes. This request
	 * waits for it (its answer says what became of the worktree, which the agent may still
	 * write); an agent that obeys the interrupt takes a moment, one that does not the grace. */
	if (running && (r = stop_agent(app, s, &cause)) < 0 && r != -ENOENT && r != -EPERM)
		log_warn("session %s: cannot stop its agent gracefully: %s", s->id, cause.msg);
	/* The agent's process, to see it gone before its files are removed (below). */
	pane = tmux_pane_pid(&app->tmux, s->tmux_name, s->id, NULL);
	/* A tmux session of that name that carries another session's id is not this session's:
	 * it is left alone, and this session is deleted as one whose tmux session is gone. */
	r = tmux_kill_session(&app->tmux, s->tmux_name, s->id, &cause);
	if (r == -EPERM)
		log_warn("session %s: tmux session %s belongs to another session; not killed",
			 s->id, s->tmux_name);
	if (r < 0 && r != -ENOENT && r != -EPERM) {
		request_error(req, 500, "tmux_error", "cannot stop tmux session %s: %s",
			      s->tmux_name, cause.msg);
		goto out;
	}
	sessioncg_remove(app, s->id); /* what the agent left running, then its cgroup */
	if (r == 0 && pane > 0)
		api_reap_agent(pane);
	/* Merged a moment ago: the poller may not have seen it yet, and the branch's fate hangs on
	 * it (api_remove_worktree). */
	if (api_pr_refresh(app, s) == 1)
		store_write(&app->store, s, NULL);
	answer = api_remove_worktree(app, s,
				     request_query(req, "force", force, sizeof(force)) != NULL &&
					 strcmp(force, "true") == 0);
	/* The cage's own HOME goes with the session (its transcripts, its tools' state), unless
	 * asked to stay; a commit is never in it. */
	keep_home = request_query(req, "keepHome", force, sizeof(force)) != NULL &&
		    strcmp(force, "true") == 0;
	if (!keep_home && (r = cagecmd_remove_home(app, s->id, s->uid)) < 0 && r != -ENOENT)
		log_warn("session %s: cannot remove its HOME: %s", s->id, strerror(-r));
	/* So does its agent CLI's own directory in the agents' shared HOME (agentlaunch.h). */
	if (!keep_home && (r = api_remove_agent_dir(app, s)) < 0 && r != -ENOENT)
		log_warn("session %s: cannot remove its agent's directory: %s", s->id,
			 strerror(-r));
	if ((r = cagecmd_uid_release(app, s->id, s->uid, s->worktree)) < 0)
		log_warn("session %s: cannot give uid %u back: %s", s->id, (unsigned)s->uid,
			 strerror(-r));
	store_remove(&app->store, s->id);
	log_info("session %s deleted", s->id);
	request_reply(req, 200, answer, NULL);
out:
	store_unlock(fd);
	free(s);
}

const struct route api_sessions_routes[] = {
    {"POST", "/sessions", api_sessions_create, true},
    {"GET", "/sessions", api_sessions_list, false},
    {"GET", "/sessions/*", api_sessions_get, false},
    {"DELETE", "/sessions/*", api_sessions_delete, true},
    {NULL, NULL, NULL, false},
};
