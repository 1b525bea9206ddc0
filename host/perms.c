#include "perms.h"

#include "eventnames.h"
#include "host.h"
#include "log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_object *perms_get(json_object *o, const char *key)
{
	json_object *v = NULL;

	json_object_object_get_ex(o, key, &v);
	return v;
}

static struct pending *perms_find(struct perms *perms, const char *request_id)
{
	for (size_t i = 0; i < PERMS_PENDING_MAX; i++)
		if (perms->pending[i].used && strcmp(perms->pending[i].request_id, request_id) == 0)
			return &perms->pending[i];
	return NULL;
}

static const struct answered *perms_was_answered(const struct perms *perms, const char *request_id)
{
	for (size_t i = 0; i < PERMS_ANSWERED_MAX; i++)
		if (strcmp(perms->answered[i].request_id, request_id) == 0)
			return &perms->answered[i];
	return NULL;
}

static void perms_timer_closed(uv_handle_t *handle)
{
	struct pending *p = handle->data;

	json_object_put(p->input);
	json_object_put(p->acp_id);
	json_object_put(p->acp_params);
	free(p->event_line);
	memset(p, 0, sizeof(*p));
}

/* Forgets p (answered, withdrawn or timed out); its id is remembered for 409 answers. The slot
 * is free again once its timer has closed. */
static void perms_drop(struct perms *perms, struct pending *p, const char *behavior, const char *by)
{
	struct answered *a = &perms->answered[perms->answered_next];

	snprintf(a->request_id, sizeof(a->request_id), "%s", p->request_id);
	a->behavior = behavior;
	snprintf(a->by, sizeof(a->by), "%s", by);
	perms->answered_next = (perms->answered_next + 1) % PERMS_ANSWERED_MAX;
	p->request_id[0] = '\0';
	uv_timer_stop(&p->timer);
	uv_close((uv_handle_t *)&p->timer, perms_timer_closed);
}

/* Answers a can_use_tool request on claude's stdin and announces the decision. */
static void perms_decide(struct host *h, struct pending *p, bool allow, const char *message,
			 json_object *updated_input, json_object *updated_permissions,
			 bool interrupt, const char *by)
{
	json_object *msg, *resp, *inner, *ev = json_object_new_object();

	if (p->acp_id != NULL) {
		/* An ACP agent: the option that says allow or deny (perms_answer refused an
		 * updatedInput); rules (updatedPermissions) have no place in ACP. */
		acpagent_answer(h, p->acp_id, p->acp_params, allow);
		goto announce;
	}
	msg = json_object_new_object();
	resp = json_object_new_object();
	inner = json_object_new_object();
	json_object_object_add(inner, "behavior", json_object_new_string(allow ? "allow" : "deny"));
	if (allow)
		json_object_object_add(inner, "updatedInput",
				       updated_input ? json_object_get(updated_input)
						     : json_object_get(p->input));
	else
		json_object_object_add(inner, "message", json_object_new_string(message));
	/* "Allow for this session": claude adds these rules (the event's suggestions) itself. */
	if (allow && updated_permissions != NULL)
		json_object_object_add(inner, "updatedPermissions",
				       json_object_get(updated_permissions));
	if (!allow && interrupt)
		json_object_object_add(inner, "interrupt", json_object_new_boolean(true));
	json_object_object_add(resp, "subtype", json_object_new_string("success"));
	json_object_object_add(resp, "request_id", json_object_new_string(p->request_id));
	json_object_object_add(resp, "response", inner);
	json_object_object_add(msg, "type", json_object_new_string("control_response"));
	json_object_object_add(msg, "response", resp);
	claudeproc_send(h, msg);
announce:
	json_object_object_add(ev, "requestId", json_object_new_string(p->request_id));
	json_object_object_add(ev, "behavior", json_object_new_string(allow ? "allow" : "deny"));
	json_object_object_add(ev, "by", json_object_new_string(by));
	if (message != NULL)
		json_object_object_add(ev, "message", json_object_new_string(message));
	perms_drop(&h->perms, p, allow ? "allow" : "deny", by);
	host_emit_json(h, EV_PERMISSION_RESOLVED, ev);
}

static void perms_timeout(uv_timer_t *t)
{
	struct pending *p = t->data;
	char msg[256];

	snprintf(msg, sizeof(msg),
		 "No answer within %d seconds (AGENTD_PERMISSION_TIMEOUT); denied automatically.",
		 p->host->cfg->permission_timeout);
	perms_decide(p->host, p, false, msg, NULL, NULL, false, "timeout");
}

/* A free slot for a request, or NULL (logged: the request stays unanswered). */
static struct pending *perms_slot(struct host *h, const char *request_id)
{
	struct pending *p = NULL;

	for (size_t i = 0; i < PERMS_PENDING_MAX && p == NULL; i++)
		if (!h->perms.pending[i].used && h->perms.pending[i].request_id[0] == '\0')
			p = &h->perms.pending[i];
	if (p == NULL || request_id == NULL || strlen(request_id) > HOSTPROTO_REQUEST_ID_MAX) {
		log_error("cannot track another permission request; it stays unanswered");
		return NULL;
	}
	memset(p, 0, sizeof(*p));
	p->used = true;
	p->host = h;
	snprintf(p->request_id, sizeof(p->request_id), "%s", request_id);
	return p;
}

/* Announces p with the permission event data (consumed) and starts its timeout. */
static void perms_track(struct host *h, struct pending *p, json_object *data)
{
	const char *text = json_object_to_json_string_ext(data, JSON_C_TO_STRING_PLAIN);

	p->event_id = host_emit(h, "permission", text, strlen(text), &p->event_line, &p->event_len);
	json_object_put(data);
	uv_timer_init(h->loop, &p->timer);
	p->timer.data = p;
	uv_timer_start(&p->timer, perms_timeout, (uint64_t)h->cfg->permission_timeout * 1000, 0);
}

void perms_request(struct host *h, json_object *line)
{
	json_object *req = perms_get(line, "request"), *rid = perms_get(line, "request_id");
	json_object *data;
	struct pending *p = perms_slot(h, rid != NULL ? json_object_get_string(rid) : NULL);

	if (p == NULL)
		return;
	data = json_object_new_object();
	p->input = json_object_get(perms_get(req, "input"));
	json_object_object_add(data, "requestId", json_object_new_string(p->request_id));
	json_object_object_add(data, "toolName", json_object_get(perms_get(req, "tool_name")));
	json_object_object_add(data, "input", json_object_get(p->input));
	json_object_object_add(data, "toolUseId", json_object_get(perms_get(req, "tool_use_id")));
	json_object_object_add(data, "description", json_object_get(perms_get(req, "description")));
	json_object_object_add(data, "suggestions",
			       json_object_get(perms_get(req, "permission_suggestions")));
	json_object_object_add(data, "blockedPath",
			       json_object_get(perms_get(req, "blocked_path")));
	perms_track(h, p, data);
}

void perms_request_acp(struct host *h, const char *request_id, json_object *rpc_id,
		       json_object *params)
{
	struct pending *p = perms_slot(h, request_id);

	if (p == NULL) {
		/* The agent waits for an answer: it gets the one a person would not give. */
		acpagent_answer(h, rpc_id, params, false);
		return;
	}
	p->acp_id = json_object_get(rpc_id);
	p->acp_params = json_object_get(params);
	perms_track(h, p, acp_permission_event(params, request_id));
}

void perms_cancel_acp(struct host *h)
{
	for (size_t i = 0; i < PERMS_PENDING_MAX; i++) {
		struct pending *p = &h->perms.pending[i];
		json_object *ev;
		size_t len;
		char *line;

		if (!p->used || p->request_id[0] == '\0' || p->acp_id == NULL)
			continue;
		/* After session/cancel ACP wants every pending request answered "cancelled". */
		line = acp_response(p->acp_id, acp_permission_result(NULL), &len);
		if (line != NULL)
			claudeproc_write(h, line, len);
		free(line);
		ev = json_object_new_object();
		json_object_object_add(ev, "requestId", json_object_new_string(p->request_id));
		json_object_object_add(ev, "behavior", json_object_new_string("withdrawn"));
		json_object_object_add(ev, "by", json_object_new_string("agent"));
		perms_drop(&h->perms, p, "withdrawn", "agent");
		host_emit_json(h, EV_PERMISSION_RESOLVED, ev);
	}
}

void perms_cancel(struct host *h, const char *request_id)
{
	struct pending *p = request_id != NULL ? perms_find(&h->perms, request_id) : NULL;

	json_object *ev;

	if (p == NULL)
		return;
	ev = json_object_new_object();
	json_object_object_add(ev, "requestId", json_object_new_string(p->request_id));
	json_object_object_add(ev, "behavior", json_object_new_string("withdrawn"));
	json_object_object_add(ev, "by", json_object_new_string("claude"));
	perms_drop(&h->perms, p, "withdrawn", "claude");
	host_emit_json(h, EV_PERMISSION_RESOLVED, ev);
}

int perms_answer(struct host *h, const struct hostproto_request *req, const struct answered **how)
{
	struct pending *p = perms_find(&h->perms, req->request_id);

	if (p == NULL)
		return (*how = perms_was_answered(&h->perms, req->request_id)) != NULL ? -EALREADY
										       : -ENOENT;
	/* ACP's answer only names one of the agent's options: an edited input would be dropped
	 * while the client believes it ran. Refused, the request stays pending. */
	if (p->acp_id != NULL && req->updated_input != NULL)
		return -EOPNOTSUPP;
	perms_decide(h, p, req->allow,
		     req->allow ? NULL
				: (req->message != NULL ? req->message : "Denied by the user."),
		     req->updated_input, req->updated_permissions, req->interrupt,
		     req->by != NULL ? req->by : "client");
	return 0;
}

void perms_each_pending(struct perms *perms, uint64_t upto,
			void (*fn)(void *arg, const char *line, size_t len), void *arg)
{
	for (size_t i = 0; i < PERMS_PENDING_MAX; i++) {
		struct pending *p = &perms->pending[i];

		if (p->used && p->request_id[0] != '\0' && p->event_line != NULL &&
		    p->event_id <= upto)
			fn(arg, p->event_line, p->event_len);
	}
}

void perms_close_all(struct host *h)
{
	for (size_t i = 0; i < PERMS_PENDING_MAX; i++)
		if (h->perms.pending[i].used && h->perms.pending[i].request_id[0] != '\0')
			perms_drop(&h->perms, &h->perms.pending[i], "withdrawn", "claude");
}
