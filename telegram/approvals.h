/*
 * Permission requests in the chats. Every request of a session a chat follows (a `permission`
 * event of GET /events, both modes) becomes a message with the buttons Allow / Allow for session
 * (when claude suggested rules) / Deny; a button's callback_data is the approval's short key and
 * the action ("k1a:a"), the rest stays in the state, so buttons keep working across restarts.
 * Pressing one answers the request once (POST /sessions/<id>/permissions/<requestId>, for the
 * user who pressed), always answers the callback query, and edits the message to say who
 * decided; if another client answered first (409) or the request went, the message says so.
 * A `permission_resolved` event edits the other chats' messages likewise. A terminal-mode
 * session's message links to its terminal in the web UI.
 */
#ifndef AGENTD_TG_APPROVALS_H
#define AGENTD_TG_APPROVALS_H

#include "bot.h"

#include <json-c/json.h>

/* Called once per message a function below queued, when it is sent or given up. */
typedef void (*approvals_done_fn)(void *arg);

/*
 * A permission event's data (session, requestId, toolName, input, description, suggestions,
 * mode): a message to each chat following session that has none for it yet. Returns the number
 * of messages queued.
 */
unsigned approvals_request(struct bot *b, const char *session, json_object *data,
			   approvals_done_fn done, void *arg);

/* A permission_resolved event's data (requestId, behavior, by): the messages of that request
 * say how it ended and lose their buttons. Returns the number of edits queued. */
unsigned approvals_resolved(struct bot *b, const char *session, json_object *data,
			    approvals_done_fn done, void *arg);

/* A snapshot's sessions: requests still pending get a message where they have none; messages of
 * requests that ended while the bot was away say so. Returns the number of calls queued. */
unsigned approvals_snapshot(struct bot *b, json_object *sessions, approvals_done_fn done,
			    void *arg);

/* The requests a session object (of GET /sessions) lists as pending get a message in each chat
 * following it that has none (after /use, and from a snapshot). Returns the calls queued. */
unsigned approvals_pending(struct bot *b, json_object *session, approvals_done_fn done, void *arg);

/* A button press (a callback query update from an allowed user). */
void approvals_press(struct bot *b, const struct botapi_update *u);

#endif
