/*
 * What a request on host.sock asks (core/hostproto.h), answered through subs.h:
 *   subscribe   every event after N from the log, pending permissions again, then live
 *   prompt      "accepted" and the turn's events (queued behind a running turn: a `queued`
 *               event first), or 409 agent_exited / turn_running (an interrupt under way,
 *               HOST_QUEUED_MAX waiting)
 *   permission  the answer goes to claude: "ok", 404 unknown_request, 409 already_answered
 *   interrupt   a control_request to claude: "ok", or 409 agent_exited
 */
#ifndef AGENTD_HOST_REQUESTS_H
#define AGENTD_HOST_REQUESTS_H

#include "hostproto.h"

struct host;
struct sub;

void requests_handle(struct host *h, struct sub *s, const struct hostproto_request *req);

#endif
