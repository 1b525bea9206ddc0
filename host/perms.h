/*
 * Tool-permission requests claude asked (can_use_tool) and nobody answered yet: each is a
 * "permission" event, answered once (by a client, or denied after AGENTD_PERMISSION_TIMEOUT),
 * or withdrawn by claude (control_cancel_request). Answered ids are remembered for a while so a
 * second answer gets 409 rather than 404. A subscriber that connects late gets the pending ones
 * again.
 */
#ifndef AGENTD_HOST_PERMS_H
#define AGENTD_HOST_PERMS_H

#include "hostproto.h"
#include "session.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#define PERMS_PENDING_MAX  64  /* requests waiting at once; more stay unanswered (logged) */
#define PERMS_ANSWERED_MAX 256 /* remembered answered ids, for 409 over 404 */

struct host;

struct pending {
	bool used;
	char request_id[HOSTPROTO_REQUEST_ID_MAX + 1];
	uint64_t event_id;
	char *event_line; /* the permission event, replayed to late subscribers */
	size_t event_len;
	json_object *input;
	json_object *acp_id, *acp_params; /* an ACP agent's request: its id and params */
	uv_timer_t timer;
	struct host *host;
};

/* A request no longer pending, and how it ended (for the 409 of a later answer). */
struct answered {
	char request_id[HOSTPROTO_REQUEST_ID_MAX + 1];
	const char *behavior;        /* "allow", "deny", "withdrawn" (static strings) */
	char by[SESSION_BY_MAX + 1]; /* who answered ("client" when unknown), "timeout", "claude" */
};

struct perms {
	struct pending pending[PERMS_PENDING_MAX];
	struct answered answered[PERMS_ANSWERED_MAX];
	size_t answered_next;
};

/* A can_use_tool control_request line of claude's: becomes a "permission" event and a pending
 * entry with a timeout. */
void perms_request(struct host *h, json_object *line);

/* An ACP agent's session/request_permission (rpc_id and params, both kept): a "permission"
 * event (acp_permission_event) and a pending entry with a timeout, named request_id. */
void perms_request_acp(struct host *h, const char *request_id, json_object *rpc_id,
		       json_object *params);

/* Withdraws every pending request of an ACP agent (after session/cancel): each is answered
 * "cancelled" and announced as "permission_resolved", behavior "withdrawn", by "agent". */
void perms_cancel_acp(struct host *h);

/* claude withdrew request_id (control_cancel_request): a "permission_resolved" event with
 * behavior "withdrawn", by "claude". */
void perms_cancel(struct host *h, const char *request_id);

/* A client's answer (a HOSTPROTO_PERMISSION request): sent to claude and announced as a
 * "permission_resolved" event. Returns 0, -ENOENT (no such request), -EALREADY (answered or
 * withdrawn; *how then says how it ended, when still remembered) or -EOPNOTSUPP (an ACP agent's
 * request answered with updatedInput, which ACP cannot carry: nothing is answered). */
int perms_answer(struct host *h, const struct hostproto_request *req, const struct answered **how);

/* Calls fn for each pending request whose event id is at most upto, in slot order. */
void perms_each_pending(struct perms *p, uint64_t upto,
			void (*fn)(void *arg, const char *line, size_t len), void *arg);

/* Forgets every pending request (the host is ending). */
void perms_close_all(struct host *h);

#endif
