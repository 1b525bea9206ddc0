/*
 * POST /sessions/<id>/mode: restarts only the agent process, in the same tmux pane and worktree,
 * with the same conversation (--resume when claude has a transcript; the other built-ins by the
 * conversation id agentd-host records, docs/API.md "Agents"). Under the session lock, and the old
 * process is gone before the answer, so two agent processes never run for one session.
 */
#include "agents.h"
#include "api_sessions.h"
#include "create.h"
#include "log.h"
#include "router.h"
#include "stop.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MODE_JSON_DEPTH 4

static void api_mode_post(const struct app *app, struct request *req,
			  const char *const args[ROUTER_MAX_ARGS])
{
	struct cause cause = {{0}};
	struct session *s = NULL;
	enum session_mode mode;
	struct agent agent;
	json_object *root = NULL, *v;
	int fd = -1, r;

	if (!session_id_valid(args[0])) {
		request_error(req, 400, "invalid_id", "'%.120s' is not a session id", args[0]);
		return;
	}
	if ((root = request_json_body(req, APP_BODY_MAX, MODE_JSON_DEPTH)) == NULL)
		return;
	if (!json_object_object_get_ex(root, "mode", &v) ||
	    !json_object_is_type(v, json_type_string) ||
	    session_mode_parse(json_object_get_string(v), &mode) < 0) {
		request_error(
		    req, 400, "invalid_request",
		    "the body must be {\"mode\": \"terminal\"} or {\"mode\": \"structured\"}");
		goto out;
	}
	if ((fd = api_session_lock(app, req, args[0], &s)) < 0)
		goto out;
	if (s->state != SESSION_RUNNING && s->state != SESSION_ATTACHED) {
		request_error(req, 409, "not_running",
			      "session %s is %s; only a running session can switch mode", s->id,
			      session_state_name(s->state));
		goto out;
	}
	if (s->mode != mode && mode == SESSION_STRUCTURED &&
	    (agents_find(app->cfg, s->agent, &agent) < 0 || !agent.structured)) {
		request_error(req, 409, "no_structured_mode",
			      "session %s runs %s, which has no structured mode", s->id, s->agent);
		goto out;
	}
	/* The built-ins carry their conversation across (launch.c: by the id agentd-host
	 * records); a configured agent's resume words and its ACP mode share no id we know, and
	 * a switch would silently start the agent over. */
	if (s->mode != mode && agents_find(app->cfg, s->agent, &agent) == 0 &&
	    agent.kind == AGENT_CUSTOM) {
		request_error(
		    req, 409, "mode_switch_unsupported",
		    "session %s runs the configured agent %s, whose conversation cannot be "
		    "carried between its terminal and structured modes; create a new "
		    "session in %s mode",
		    s->id, s->agent, session_mode_name(mode));
		goto out;
	}
	if (s->mode != mode && create_switch_check(app, s, mode, &cause) < 0) {
		request_error(req, 409, "conversation_not_portable", "%s", cause.msg);
		goto out;
	}
	if (s->mode != mode)
		snprintf(s->by, sizeof(s->by), "%s", req->by);
	/* The agent ends gracefully first (its transcript is what --resume reads). */
	if (s->mode != mode && (r = stop_agent(app, s, &cause)) < 0 && r != -ENOENT && r != -EPERM)
		log_warn("session %s: cannot stop its agent gracefully: %s", s->id, cause.msg);
	if (s->mode != mode && ((r = create_respawn(app, s, mode, &cause)) < 0 ||
				(r = store_write(&app->store, s, &cause)) < 0)) {
		if (r == -EPERM)
			request_error(req, 409, "tmux_session_mismatch",
				      "tmux session %s belongs to another session; %s was not "
				      "switched",
				      s->tmux_name, s->id);
		else
			request_error(req, 500, "mode_switch_failed",
				      "cannot switch %s to %s mode: %s", s->id,
				      session_mode_name(mode), cause.msg);
		goto out;
	}
	if (s->mode == mode)
		log_info("session %s is in %s mode", s->id, session_mode_name(mode));
	request_reply(req, 200, session_to_json(s, false), NULL);
out:
	store_unlock(fd);
	free(s);
	json_object_put(root);
}

const struct route api_mode_routes[] = {
    {"POST", "/sessions/*/mode", api_mode_post, true},
    {NULL, NULL, NULL, false},
};
