#include "attention_int.h"

#include "eventnames.h"
#include "log.h"
#include "session.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- terminal sessions: claude's hooks -------------------------------------------------- */

/* A short description of a tool use for a list: the command, the file, or the tool. */
static void att_describe(json_object *payload, char *out, size_t outlen)
{
	static const char *const keys[] = {"description", "command", "file_path", "path",
					   "url",         "pattern", "prompt"};
	json_object *input;

	out[0] = '\0';
	if (!json_object_object_get_ex(payload, "tool_input", &input))
		return;
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const char *v = att_str(input, keys[i]);

		if (v != NULL) {
			session_copy_cut(out, outlen, v);
			return;
		}
	}
}

static struct att_session *att_terminal(struct attention *a, const char *id)
{
	struct att_session *s = att_session_find(a, id);
	struct session rec;

	if (s != NULL)
		return s;
	if (store_read(&a->b->store, id, &rec, NULL) < 0)
		return NULL;
	s = att_session_new(a, &rec);
	return s;
}

/* q was answered in the TUI: claude moved on without ending its hook (a "Yes" leaves it
 * running) or the hook is away. The hook learns there is nothing more to wait for, and /events
 * says who answered. */
static void att_answered_in_terminal(struct att_session *s, struct att_request *q)
{
	attention_decided_fn fn = q->fn;
	void *arg = q->arg;
	json_object *ev = json_object_new_object();

	if (ev != NULL) {
		json_object_object_add(ev, "requestId", json_object_new_string(q->request_id));
		json_object_object_add(ev, "by", json_object_new_string("terminal"));
	}
	att_drop(s, q, "terminal");
	if (fn != NULL)
		fn(arg, NULL);
	att_publish(s, EV_PERMISSION_RESOLVED, ev);
}

/* Every request of s still pending (claude's turn went on or ended: each was answered in the
 * TUI), or only those of the tool use that payload reports (PostToolUse: same tool, same input).
 */
static void att_terminal_moved_on(struct att_session *s, json_object *payload)
{
	const char *tool = payload != NULL ? att_str(payload, "tool_name") : NULL;
	json_object *input = NULL;

	if (payload != NULL &&
	    (tool == NULL || !json_object_object_get_ex(payload, "tool_input", &input)))
		return;
	for (size_t i = 0; i < ATT_PENDING_MAX; i++) {
		struct att_request *q = &s->req[i];

		if (!q->used || q->decision != NULL)
			continue;
		if (payload != NULL &&
		    (strcmp(q->tool_name, tool) != 0 || !json_object_equal(q->input, input)))
			continue;
		att_answered_in_terminal(s, q);
	}
}

/* A Notification's kind that means the TUI shows something only a person there can answer:
 * claude's, and gemini's tool-permission dialog (it asks no hook that could answer it). */
static bool att_notification_asks(const char *kind)
{
	static const char *const kinds[] = {"permission_prompt", "agent_needs_input",
					    "elicitation_dialog", "ToolPermission"};

	for (size_t i = 0; kind != NULL && i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (strcmp(kind, kinds[i]) == 0)
			return true;
	return false;
}

void attention_hook_report(struct attention *a, const char *id, enum hook_event ev,
			   json_object *payload)
{
	struct att_session *s = att_terminal(a, id);
	const char *kind;

	if (s == NULL || s->mode != SESSION_TERMINAL)
		return;
	switch (ev) {
	case HOOK_USER_PROMPT_SUBMIT:
		/* A new turn: whatever the last one asked was settled in the TUI. */
		s->tui_asks = false;
		att_terminal_moved_on(s, NULL);
		att_set(s, SESSION_WORKING, false);
		break;
	case HOOK_PRE_TOOL_USE:
		att_set(s, SESSION_WORKING, false);
		break;
	case HOOK_POST_TOOL_USE:
	case HOOK_POST_TOOL_USE_FAILURE:
		/* The tool ran: its request was allowed, in the TUI when its hook still waits. */
		s->tui_asks = false;
		att_terminal_moved_on(s, payload);
		att_set(s, SESSION_WORKING, false);
		break;
	case HOOK_NOTIFICATION:
		kind = att_str(payload, "notification_type");
		if (kind != NULL && strcmp(kind, "idle_prompt") == 0) {
			s->tui_asks = false;
			att_set(s, SESSION_IDLE, false);
		} else if (att_notification_asks(kind)) {
			/* e.g. auto mode's dialog when its safety check cannot run: no
			 * PermissionRequest hook is asked for it. */
			s->tui_asks = true;
			att_set(s, SESSION_WAITING, false);
		}
		break;
	case HOOK_STOP:
		s->tui_asks = false;
		att_terminal_moved_on(s, NULL);
		att_set(s, SESSION_IDLE, false);
		break;
	case HOOK_SESSION_START:
		/* claude starts before it submits the bootstrap prompt of its argv. */
		s->tui_asks = false;
		att_terminal_moved_on(s, NULL);
		att_set(s, s->bootstrap ? SESSION_WORKING : SESSION_IDLE, false);
		break;
	case HOOK_SESSION_END:
		s->tui_asks = false;
		att_withdraw_all(s, "exit");
		att_set(s, SESSION_IDLE, true);
		break;
	default:
		break;
	}
}

int attention_hook_ask(struct attention *a, const char *id, json_object *payload,
		       attention_decided_fn fn, void *arg,
		       char request_id[HOSTPROTO_REQUEST_ID_MAX + 1])
{
	struct att_session *s = att_terminal(a, id);
	char desc[SESSION_DESCRIPTION_MAX + 1];
	const char *tool = att_str(payload, "tool_name");
	struct att_request *q;
	json_object *ev;

	if (s == NULL || s->mode != SESSION_TERMINAL)
		return -ENOENT;
	if (request_id[0] != '\0') {
		/* Asked again after a broken connection (a bridge restart). */
		if (!hostproto_request_id_valid(request_id))
			return -EINVAL;
		if (att_was_answered(s, request_id) != NULL)
			return -EALREADY;
		q = att_find(s, request_id);
		if (q != NULL) {
			json_object *decision = q->decision;

			q->fn = fn;
			q->arg = arg;
			q->orphan_until = 0;
			if (decision != NULL) {
				/* Answered while the hook was away. */
				q->decision = NULL;
				att_drop(s, q, "client");
				att_set(s, SESSION_WORKING, true);
				fn(arg, decision);
				json_object_put(decision);
			}
			return 0;
		}
	} else {
		char uuid[SESSION_UUID_LEN + 1];
		int r = session_uuid(uuid);

		if (r < 0)
			return r;
		snprintf(request_id, HOSTPROTO_REQUEST_ID_MAX + 1, "%s", uuid);
	}
	att_describe(payload, desc, sizeof(desc));
	q = att_add(s, request_id, tool, desc);
	if (q == NULL)
		return -ENOSPC;
	q->fn = fn;
	q->arg = arg;
	if (json_object_object_get_ex(payload, "tool_input", &q->input))
		json_object_get(q->input);
	else
		q->input = NULL;
	att_set(s, SESSION_WAITING, true);
	ev = json_object_new_object();
	if (ev != NULL) {
		json_object *v;

		json_object_object_add(ev, "requestId", json_object_new_string(q->request_id));
		json_object_object_add(ev, "toolName", json_object_new_string(q->tool_name));
		if (json_object_object_get_ex(payload, "tool_input", &v))
			json_object_object_add(ev, "input", json_object_get(v));
		json_object_object_add(ev, "description", json_object_new_string(q->description));
		if (json_object_object_get_ex(payload, "permission_suggestions", &v))
			json_object_object_add(ev, "suggestions", json_object_get(v));
		json_object_object_add(ev, "mode", json_object_new_string("terminal"));
	}
	att_publish(s, EV_PERMISSION, ev);
	return 0;
}

void attention_hook_gone(struct attention *a, const char *id, const char *request_id)
{
	struct att_session *s = att_session_find(a, id);
	struct att_request *q = s != NULL ? att_find(s, request_id) : NULL;

	if (q == NULL)
		return;
	q->fn = NULL; /* gone: nothing to tell it */
	att_answered_in_terminal(s, q);
	/* claude 2.1.328 ends the hook when the dialog is answered "No" or with Escape: either
	 * interrupts the turn and no Stop follows ("Yes" leaves the hook running; the tool's
	 * PostToolUse says working). */
	s->tui_asks = false;
	att_set(s, SESSION_IDLE, true);
}

void attention_hook_expired(struct attention *a, const char *id, const char *request_id)
{
	struct att_session *s = att_session_find(a, id);
	struct att_request *q = s != NULL ? att_find(s, request_id) : NULL;
	json_object *ev;

	if (q == NULL)
		return;
	ev = json_object_new_object();
	if (ev != NULL) {
		json_object_object_add(ev, "requestId", json_object_new_string(q->request_id));
		json_object_object_add(ev, "by", json_object_new_string("timeout"));
	}
	att_drop(s, q, "timeout");
	/* The dialog still shows: a person at the terminal answers it now. */
	s->tui_asks = true;
	att_set(s, SESSION_WAITING, true);
	att_publish(s, EV_PERMISSION_RESOLVED, ev);
}

int attention_answer(struct attention *a, const char *id, const char *request_id,
		     json_object *decision, const char *by, const char **by_out)
{
	struct att_session *s = att_session_find(a, id);
	const struct att_answered *done;
	struct att_request *q;
	attention_decided_fn fn;
	json_object *ev, *v;
	void *arg;

	*by_out = NULL;
	if (s == NULL)
		return -ENOENT;
	q = att_find(s, request_id);
	if (q != NULL && q->decision != NULL) {
		*by_out = q->decided_by;
		return -EALREADY;
	}
	if (q == NULL) {
		done = att_was_answered(s, request_id);
		if (done == NULL)
			return -ENOENT;
		*by_out = done->by;
		return -EALREADY;
	}
	ev = json_object_new_object();
	if (ev != NULL) {
		json_object_object_add(ev, "requestId", json_object_new_string(q->request_id));
		if (json_object_object_get_ex(decision, "behavior", &v))
			json_object_object_add(ev, "behavior", json_object_get(v));
		if (json_object_object_get_ex(decision, "message", &v))
			json_object_object_add(ev, "message", json_object_get(v));
		json_object_object_add(ev, "by", json_object_new_string(by));
	}
	fn = q->fn;
	arg = q->arg;
	/* A decision through the hook closes the TUI's dialog. */
	s->tui_asks = false;
	if (fn == NULL) {
		/* Its hook is reconnecting: the decision waits for it. */
		q->decision = json_object_get(decision);
		session_copy_cut(q->decided_by, sizeof(q->decided_by), by);
		att_set(s, SESSION_WORKING, true);
		att_publish(s, EV_PERMISSION_RESOLVED, ev);
		return 0;
	}
	att_drop(s, q, by);
	att_set(s, SESSION_WORKING, true);
	fn(arg, decision);
	att_publish(s, EV_PERMISSION_RESOLVED, ev);
	return 0;
}
