#include "requests.h"

#include "eventnames.h"
#include "host.h"

#include "isotime.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* The 409 for a prompt that cannot be queued now: what runs, since when. */
static void requests_busy(struct host *h, struct sub *s, const char *what)
{
	char at[40], msg[256];

	isotime_format_ms(h->turn_started_ms, at, sizeof(at));
	snprintf(msg, sizeof(msg),
		 "%s; the running turn started at %s: send the prompt again once it has ended",
		 what, at);
	sub_error(s, 409, "turn_running", msg);
}

/* A prompt while a turn runs is queued by claude and runs next: the client gets "accepted"
 * with "queued" (the turns ahead of it), a `queued` event, then its own turn's events. */
static void requests_prompt(struct host *h, struct sub *s, const struct hostproto_request *req)
{
	uint64_t after = h->log.last_id, ahead, no;
	json_object *ev;

	if (!h->claude.running) {
		sub_error(s, 409, "agent_exited", "claude is not running in this session");
		return;
	}
	/* claude drops what it has queued when an interrupt asks it to, and a prompt sent
	 * meanwhile might be dropped with the turn. */
	if (h->interrupting) {
		requests_busy(h, s, "the running turn is being interrupted");
		return;
	}
	if (h->prompts - h->prompts_done > HOST_QUEUED_MAX) {
		requests_busy(h, s, "too many prompts wait for their turn in this session");
		return;
	}
	no = h->prompts + 1;
	ahead = h->prompts - h->prompts_done;
	sub_prompt(s, after, no, ahead);
	claudeproc_prompt(h, req->prompt);
	if (ahead == 0)
		return;
	ev = json_object_new_object();
	json_object_object_add(ev, "prompt", json_object_get(req->prompt));
	json_object_object_add(ev, "position", json_object_new_uint64(ahead));
	if (req->by != NULL)
		json_object_object_add(ev, "by", json_object_new_string(req->by));
	host_emit_json(h, EV_QUEUED, ev);
	/* Its stream has the queued event; the running turn's events are not its. */
	sub_hold(s);
}

static void requests_permission(struct host *h, struct sub *s, const struct hostproto_request *req)
{
	const struct answered *how = NULL;
	char msg[256];

	switch (perms_answer(h, req, &how)) {
	case 0:
		sub_ok(s);
		break;
	case -EALREADY:
		if (strcmp(how->behavior, "withdrawn") == 0)
			snprintf(msg, sizeof(msg),
				 "this permission request was withdrawn by claude");
		else
			snprintf(msg, sizeof(msg),
				 "this permission request was already answered: %s (by %s)",
				 how->behavior, how->by);
		sub_error(s, 409, "already_answered", msg);
		break;
	case -EOPNOTSUPP:
		sub_error(s, 400, "updated_input_unsupported",
			  "this agent speaks ACP, whose answer picks one of its options and cannot "
			  "change the tool's input: answer without updatedInput");
		break;
	default:
		sub_error(s, 404, "unknown_request", "no such permission request");
		break;
	}
}

static void requests_interrupt(struct host *h, struct sub *s)
{
	if (!h->claude.running) {
		sub_error(s, 409, "agent_exited", "claude is not running in this session");
		return;
	}
	claudeproc_interrupt(h);
	sub_ok(s);
}

void requests_handle(struct host *h, struct sub *s, const struct hostproto_request *req)
{
	switch (req->kind) {
	case HOSTPROTO_SUBSCRIBE:
		sub_subscribe(s, req->after);
		break;
	case HOSTPROTO_PROMPT:
		requests_prompt(h, s, req);
		break;
	case HOSTPROTO_PERMISSION:
		requests_permission(h, s, req);
		break;
	case HOSTPROTO_INTERRUPT:
		requests_interrupt(h, s);
		break;
	}
}
