#include "requests.h"

#include "host.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static void requests_prompt(struct host *h, struct sub *s, const struct hostproto_request *req)
{
	if (!h->claude.running) {
		sub_error(s, 409, "agent_exited", "claude is not running in this session");
		return;
	}
	if (h->turn_running) {
		sub_error(s, 409, "turn_running", "a turn is already running in this session");
		return;
	}
	/* The turn's events are those numbered from now on. */
	sub_prompt(s, h->log.last_id);
	claudeproc_prompt(h, req->prompt);
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
