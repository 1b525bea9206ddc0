/*
 * The attention hub: what each running session's agent is doing (activity: working, waiting,
 * idle; exited is derived from the state) and which tool-permission requests wait for a person
 * (pending). The bridge is the one writer of these facts: it mirrors them into the records
 * (roster.c) and announces requests, answers and turn results on /events (events.h).
 *
 * Sources:
 *   structured  one subscription to every running structured session's agentd-host (from the
 *               last host event this bridge saw, so a restart misses nothing): a prompt's turn
 *               start, `permission`, `permission_resolved`, `result`;
 *   terminal    reports of claude's own hooks (hooks.c: agentd-hook over the hook socket, the
 *               session found from the peer's credentials): UserPromptSubmit / PreToolUse /
 *               PostToolUse → working, PermissionRequest → waiting (a pending request that a
 *               client may answer while the TUI's dialog shows), Notification permission_prompt
 *               / agent_needs_input / elicitation_dialog → waiting with nothing a client can
 *               answer (a dialog no hook was asked for), Stop / Notification idle_prompt →
 *               idle, SessionEnd → exited. A request whose dialog was answered in the TUI ends
 *               as answered by "terminal": when its hook goes (claude ends it on "No" and
 *               Escape, which interrupt the turn: idle), or when claude reports past it (its
 *               tool's PostToolUse, the turn's Stop, the next prompt: claude 2.1.328 leaves
 *               the hook running after "Yes").
 */
#ifndef AGENTD_BRIDGE_ATTENTION_H
#define AGENTD_BRIDGE_ATTENTION_H

#include "bridge.h"
#include "hookproto.h"
#include "hostproto.h"
#include "session.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

struct attention;

/* Starts the hub (b->attention). It learns of the sessions from the records watch (events.c:
 * attention_session_changed), so open it first. Returns 0 or -errno with cause. */
int attention_open(struct bridge *b, struct cause *cause);

/* Ends every subscription and withdraws nothing (the requests outlive the bridge); no
 * attention_decided_fn is called (hooks.c closes its connections, and their hooks ask the next
 * bridge again). */
void attention_close(struct bridge *b);

/* Session id's record changed (rec: as it is now; NULL: deleted), as the records watch saw it:
 * a structured session that runs is subscribed to, a mode switch or an ended agent withdraws
 * its requests. */
void attention_session_changed(struct attention *a, const char *id, const struct session *rec);

/* A hook report of terminal session id: event and claude's payload (borrowed). */
void attention_hook_report(struct attention *a, const char *id, enum hook_event ev,
			   json_object *payload);

/*
 * A decision for a hook's PermissionRequest: a hookproto decision object (borrowed), or NULL when
 * the request ended without one (withdrawn: the session stopped, the bridge stops).
 */
typedef void (*attention_decided_fn)(void *arg, json_object *decision);

/*
 * A PermissionRequest hook of terminal session id asks (payload borrowed). request_id is the id
 * a previous ask of the same hook was given ("" for a first ask: a new one is made and written
 * there). Adds a pending request and calls fn(arg, …) at most once, from the loop, when a client
 * answers it. Returns 0 or -errno (-EALREADY: request_id was answered already; then no pending).
 */
int attention_hook_ask(struct attention *a, const char *id, json_object *payload,
		       attention_decided_fn fn, void *arg,
		       char request_id[HOSTPROTO_REQUEST_ID_MAX + 1]);

/*
 * The hook that asked request_id will wait no more (its connection ended without a decision:
 * claude ended it because the TUI's dialog was answered "No" or with Escape); fn is not called
 * after. The request is resolved as answered in the terminal, and the session is idle.
 */
void attention_hook_gone(struct attention *a, const char *id, const char *request_id);

/*
 * The wait of the hook that asked request_id ran out (AGENTD_TERMINAL_PERMISSION_WAIT) before any
 * client answered: the request leaves `pending` (resolved by "timeout"; fn is not called), and the
 * session stays waiting, the TUI's dialog asking alone, until claude reports again.
 */
void attention_hook_expired(struct attention *a, const char *id, const char *request_id);

/*
 * A client's answer (POST /sessions/<id>/permissions/<requestId> of a terminal session): a
 * hookproto decision (borrowed) and who gave it. Returns 0, -ENOENT (no such request), or
 * -EALREADY (answered already; *by_out then names who, when known).
 */
int attention_answer(struct attention *a, const char *id, const char *request_id,
		     json_object *decision, const char *by, const char **by_out);

/*
 * True when the hub withdrew request_id of session id because the claude that asked went (a
 * restart, a reboot: the new agent never heard of it); msg then says so, for a 409. False
 * otherwise: the agent itself knows its requests and their answers.
 */
bool attention_withdrawn(struct attention *a, const char *id, const char *request_id, char *msg,
			 size_t msglen);

#endif
