/*
 * The protocol between agentd-hook (the command claude runs for its hooks in terminal mode, as the
 * agent's user) and agentd-bridge (which turns the reports into activity and pending permission
 * requests). Everything that comes from the hook is the agent's word: bounded, validated, and never
 * trusted to name its session (the bridge finds that from the peer's credentials).
 *
 * On the bridge's hook socket (<runtime>/HOOKPROTO_SOCKET_NAME) the hook sends one line
 *   {"event":"<HookEvent>","payload":{…}}
 * where payload is what claude gave the hook on stdin, with fields too large to carry dropped
 * (HOOKPROTO_PAYLOAD_MAX) and "omitted":[names] saying which. The bridge answers one line:
 *   {"decision":null}                                      (nothing to tell claude)
 *   {"decision":{"behavior":"allow","updatedInput":{…},"updatedPermissions":[{…}]}}
 *   {"decision":{"behavior":"deny","message":"why","interrupt":true}}
 * A decision is allowed only in answer to PermissionRequest; the hook then prints it for claude as
 *   {"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{…}}}
 * A PermissionRequest is first answered with an interim line naming the pending request,
 *   {"requestId":"<id>"}
 * and the connection stays open until the decision line. A hook whose connection breaks before
 * the decision (the bridge restarts) connects again and asks once more with
 *   {"event":"PermissionRequest","payload":{…},"requestId":"<id>"}
 * so the request keeps its id, and an answer given meanwhile reaches it.
 */
#ifndef AGENTD_HOOKPROTO_H
#define AGENTD_HOOKPROTO_H

#include "cause.h"
#include "hostproto.h"

#include <json-c/json.h>
#include <stddef.h>

#define HOOKPROTO_PAYLOAD_MAX    (64 * 1024) /* a report's payload, serialized */
#define HOOKPROTO_LINE_MAX       (HOOKPROTO_PAYLOAD_MAX + 256)
#define HOOKPROTO_ANSWER_MAX     (HOOKPROTO_PAYLOAD_MAX + 256)
#define HOOKPROTO_MESSAGE_MAX    1024 /* a deny's message */
#define HOOKPROTO_PERMISSION_MAX 16   /* updatedPermissions entries */
#define HOOKPROTO_DEPTH          32   /* JSON nesting accepted on either side */
/* The hook socket lives in a directory of its own in the runtime dir: a cage binds the
 * directory, so a restarted bridge's new socket is the one a running pane's hooks reach (a bind
 * of the socket file would hold the old inode). */
#define HOOKPROTO_SOCKET_DIR      "hooks"
#define HOOKPROTO_SOCKET_NAME     HOOKPROTO_SOCKET_DIR "/hooks.sock"
#define HOOKPROTO_SOCKET_DIR_MODE 0711 /* the agents' uids reach the socket; nothing to list */
/* Where the socket was before it had a directory: a symlink to it, for the claudes started
 * before (their settings name this path). */
#define HOOKPROTO_SOCKET_LEGACY "hooks.sock"

/* The hook events agent-daemon listens to (claude 2.1.328 names; see docs/DESIGN.md). */
enum hook_event {
	HOOK_SESSION_START,
	HOOK_USER_PROMPT_SUBMIT,
	HOOK_PRE_TOOL_USE,
	HOOK_PERMISSION_REQUEST,
	HOOK_POST_TOOL_USE,
	HOOK_POST_TOOL_USE_FAILURE,
	HOOK_NOTIFICATION,
	HOOK_STOP,
	HOOK_SESSION_END,
	HOOK_EVENT_COUNT,
};

/* The event's name as claude spells it. */
const char *hookproto_event_name(enum hook_event e);

/* The event named name, or -EINVAL. */
int hookproto_event_parse(const char *name);

/*
 * The report line (with its newline; caller frees) for event e and claude's payload (borrowed).
 * Members whose serialized size would take the payload over HOOKPROTO_PAYLOAD_MAX are left out,
 * largest first, and listed in "omitted". request_id (NULL or "": none) is the id an earlier ask
 * of this PermissionRequest was given. NULL with errno ENOMEM or EINVAL (payload not an object,
 * a request id with another event, or one hostproto_request_id_valid refuses).
 */
char *hookproto_report_encode(enum hook_event e, json_object *payload, const char *request_id);

/* A decoded report: the event, its payload (owned; put it with hookproto_report_clear) and the
 * request id of an ask made again ("" for none). */
struct hook_report {
	enum hook_event event;
	json_object *payload;
	char request_id[HOSTPROTO_REQUEST_ID_MAX + 1];
};

/* Decodes one report line (len bytes, the newline excluded). A requestId is accepted only with
 * PermissionRequest. Returns 0 or -EINVAL with cause. */
int hookproto_report_decode(const char *line, size_t len, struct hook_report *out,
			    struct cause *cause);
void hookproto_report_clear(struct hook_report *r);

/*
 * Checks a decision as a client sent it (behavior allow|deny; message only with deny, a string of
 * at most HOOKPROTO_MESSAGE_MAX bytes; interrupt a boolean, only with deny; updatedInput an
 * object, only with allow; updatedPermissions 1..HOOKPROTO_PERMISSION_MAX objects with a string
 * "type", only with allow). Returns 0 or -EINVAL with cause.
 */
int hookproto_decision_check(json_object *decision, struct cause *cause);

/* The answer line (with its newline; caller frees) for decision (NULL: none). NULL on ENOMEM. */
char *hookproto_answer_encode(json_object *decision);

/* The interim line {"requestId":"<id>"} (with its newline) into out. Returns its length, or
 * -EINVAL when hostproto_request_id_valid refuses id. */
#define HOOKPROTO_INTERIM_MAX (HOSTPROTO_REQUEST_ID_MAX + 32)
int hookproto_interim_encode(const char *request_id, char out[HOOKPROTO_INTERIM_MAX]);

/*
 * Decodes an answer line (the newline excluded): a decision line puts its decision in *decision
 * (NULL when none; owned by the caller; checked as hookproto_decision_check does) and returns 0;
 * an interim line copies its id into request_id and returns 1 (*decision NULL). -EINVAL with
 * cause for anything else.
 */
int hookproto_answer_decode(const char *line, size_t len, json_object **decision,
			    char request_id[HOSTPROTO_REQUEST_ID_MAX + 1], struct cause *cause);

/* What the hook prints for claude to apply decision (caller frees). NULL on ENOMEM. */
char *hookproto_claude_output(json_object *decision);

#endif
