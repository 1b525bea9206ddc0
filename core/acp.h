/*
 * The Agent Client Protocol (ACP, protocol version 1) as agentd-host speaks it to an agent that
 * is not claude (gemini --acp, opencode acp, codex-acp): the one codec of that protocol, and the
 * translation of what the agent says into the common event shape every client reads
 * (docs/API.md, "Events of every agent").
 *
 * Transport: JSON-RPC 2.0 over the agent's stdin and stdout, one message a line, no newline inside
 * a message (json-c escapes every one in a string), at most ACP_LINE_MAX bytes. The host is the
 * ACP client: it sends initialize, session/new or session/load, session/prompt and the
 * notification session/cancel; it serves session/request_permission and answers every other
 * request of the agent's (fs/..., terminal/...: not advertised) with ACP_METHOD_NOT_FOUND.
 *
 * The common event shape is claude's stream-json frames, as few of their fields as clients read,
 * so a client written for claude's frames renders every agent the same way:
 *   system     {"type":"system","subtype":"init","agent","session_id","model"}: a turn begins
 *   user       {"type":"user","message":{"role":"user","content":"<prompt>"},"isReplay":true}
 *   stream_event {"type":"stream_event","event":{"type":"content_block_delta","index":0,
 *              "delta":{"type":"text_delta","text":"…"}}}: a piece of the agent's text, live
 *   assistant  {"type":"assistant","message":{"role":"assistant","content":[{"type":"text",
 *              "text"}]}}: the agent's text so far, whole (before a tool call, at the end);
 *              [{"type":"thinking","thinking"}] for its thoughts;
 *              [{"type":"tool_use","id","name","input","kind"}] for a tool call
 *   user       {"type":"user","message":{"role":"user","content":[{"type":"tool_result",
 *              "tool_use_id","content","is_error"}]}}: a tool call ended
 *   result     {"type":"result","subtype","is_error","stop_reason","num_turns","duration_ms",
 *              "result","usage","total_cost_usd","queued_turn_count","agent","session_id"}
 * and the permission event of core/hostproto.h, built by acp_permission_event.
 *
 * Everything here is pure (no I/O). Parsed views borrow from the JSON object the struct owns.
 */
#ifndef AGENTD_ACP_H
#define AGENTD_ACP_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The longest line either side sends: the same bound as a claude line (HOSTPROTO_LINE_MAX), so
 * anything an agent says fits one event; a session/load replay or a big tool output is one line
 * each. */
#define ACP_LINE_MAX         (16 * 1024 * 1024)
#define ACP_PROTOCOL_VERSION 1
/* agentd-host's record of the agent's session, in the session's state dir ({"agent",
 * "sessionId", "createdAt"}): the host loads it again after a restart, and a terminal launch
 * resumes the same conversation by it (core/agentlaunch.h). */
#define ACP_STATE_NAME "acp.json"
/* agentd-host --resume's word for "the session the agent lists as updated last": no agent's id
 * (UUIDs, ses_...) is this word. */
#define ACP_RESUME_NEWEST "newest"
/* Nesting of a message: json-c's default; an agent's tool input deeper than that is refused. */
#define ACP_DEPTH_MAX 32
/* The agent's text gathered into one assistant event before it is sent anyway (a long answer
 * is then several events): the stream_event pieces already went out live, this bounds memory. */
#define ACP_TEXT_MAX (256 * 1024)
/* The text of a tool result carried in an event: a file read whole stays in the agent. */
#define ACP_TOOL_TEXT_MAX (64 * 1024)

/* Tool call ids of a turn remembered (for the tool_use of each tool_result): more than a turn
 * runs at once. */
#define ACP_TOOLS_SEEN 64
/* Calls waiting for their input at once (struct acp_turn's held); past it, said as they are. */
#define ACP_TOOLS_HELD 8

/* JSON-RPC error codes. */
#define ACP_PARSE_ERROR      -32700
#define ACP_INVALID_REQUEST  -32600
#define ACP_METHOD_NOT_FOUND -32601
#define ACP_INVALID_PARAMS   -32602
#define ACP_INTERNAL_ERROR   -32603

/* ---- messages ---------------------------------------------------------------------------- */

enum acp_msg_type {
	ACP_REQUEST,      /* method and id */
	ACP_NOTIFICATION, /* method, no id */
	ACP_RESPONSE,     /* id, and result or error */
};

struct acp_msg {
	enum acp_msg_type type;
	const char *method;  /* REQUEST, NOTIFICATION */
	json_object *id;     /* REQUEST, RESPONSE: a string or an integer */
	json_object *params; /* REQUEST, NOTIFICATION: NULL when absent */
	json_object *result; /* RESPONSE: NULL on error (or a null result) */
	json_object *error;  /* RESPONSE: {"code","message"}, or NULL */
	json_object *obj;    /* the parsed line: owns the views above */
};

/*
 * Parses one line (without its '\n'). Returns 0 with m filled (release it), -EMSGSIZE for a
 * line over ACP_LINE_MAX, -EBADMSG for anything that is not one JSON-RPC 2.0 message ("jsonrpc"
 * other than "2.0", an id that is neither string nor integer, both result and error, ...).
 */
int acp_parse(const char *line, size_t len, struct acp_msg *m);

void acp_msg_release(struct acp_msg *m);

/* The error's code and message of a RESPONSE (0 and "" when none). */
int acp_error_code(const struct acp_msg *m);
const char *acp_error_message(const struct acp_msg *m);

/*
 * Lines to send, '\n'-terminated (the '\n' counted in *len; a NUL follows, not counted), caller
 * frees; params and result are consumed (even on failure). NULL with errno EMSGSIZE (over
 * ACP_LINE_MAX) or ENOMEM.
 */
char *acp_request(uint64_t id, const char *method, json_object *params, size_t *len);
char *acp_notification(const char *method, json_object *params, size_t *len);
char *acp_response(json_object *id, json_object *result, size_t *len);
char *acp_error_response(json_object *id, int code, const char *message, size_t *len);

/* ---- the client's messages' params (each a new object, caller puts) ---------------------- */

/* initialize: protocol version 1, no fs nor terminal capability, clientInfo. */
json_object *acp_initialize_params(const char *client_name, const char *client_version);
/* session/new {cwd, mcpServers:[]}. */
json_object *acp_session_new_params(const char *cwd);
/* session/load {sessionId, cwd, mcpServers:[]}. */
json_object *acp_session_load_params(const char *session_id, const char *cwd);
/* session/list {cwd}: the agent's sessions made in cwd. */
json_object *acp_session_list_params(const char *cwd);
/* session/prompt {sessionId, prompt:[{type:"text", text}]}. */
json_object *acp_prompt_params(const char *session_id, const char *text);
/* session/cancel {sessionId}. */
json_object *acp_cancel_params(const char *session_id);
/* A session/request_permission result: {outcome:{outcome:"selected",optionId}}, or
 * {outcome:{outcome:"cancelled"}} when option_id is NULL. */
json_object *acp_permission_result(const char *option_id);

/* ---- what the agent answers -------------------------------------------------------------- */

/* Whether an initialize result says the agent can session/load. */
bool acp_can_load(json_object *init_result);

/* Whether an initialize result says the agent answers session/list
 * (agentCapabilities.sessionCapabilities.list). */
bool acp_can_list(json_object *init_result);

/* The sessionId of the session a session/list result says was updated last (updatedAt), of
 * those in cwd (an entry without cwd counts as in it); NULL when none. Borrows from result. */
const char *acp_session_list_newest(json_object *result, const char *cwd);

/* The sessionId of a session/new result, or NULL. */
const char *acp_session_id(json_object *result);

/* The model a session/new or session/load result names (models.currentModelId), or NULL. */
const char *acp_session_model(json_object *result);

/*
 * The optionId of a session/request_permission's options that answers allow or deny: allow picks
 * an allow_once option, else allow_always; deny a reject_once, else reject_always. NULL when the
 * options have none of those (deny then answers "cancelled").
 */
const char *acp_permission_option(json_object *params, bool allow);

enum acp_update_kind {
	ACP_UPDATE_UNKNOWN,
	ACP_UPDATE_USER_MESSAGE_CHUNK,
	ACP_UPDATE_AGENT_MESSAGE_CHUNK,
	ACP_UPDATE_AGENT_THOUGHT_CHUNK,
	ACP_UPDATE_TOOL_CALL,
	ACP_UPDATE_TOOL_CALL_UPDATE,
	ACP_UPDATE_PLAN,
	ACP_UPDATE_AVAILABLE_COMMANDS,
	ACP_UPDATE_CURRENT_MODE,
	ACP_UPDATE_CONFIG_OPTION,
	ACP_UPDATE_SESSION_INFO,
	ACP_UPDATE_USAGE,
};

/* The kind of a session/update's params ({sessionId, update:{sessionUpdate, …}}); *update is
 * set to the update object (NULL when there is none). */
enum acp_update_kind acp_update_kind(json_object *params, json_object **update);

/* ---- the common event shape -------------------------------------------------------------- */

/* Called for each event built: name (an event name) and data (consumed). */
typedef void (*acp_emit_fn)(void *arg, const char *name, json_object *data);

/* One turn's state: the agent's text not yet sent as an assistant event, the usage and cost it
 * reported, the tool calls whose result was sent. */
struct acp_turn {
	const char *agent;      /* borrowed: the agent's name, put in system and result */
	const char *session_id; /* borrowed: the ACP session id */
	char *text;             /* the agent's text since the last assistant event */
	size_t len, cap;
	char *last;         /* the last assistant text sent: the result's "result" */
	bool thinking;      /* text holds thoughts, not answer */
	json_object *usage; /* the last usage_update's, or NULL */
	double cost;
	bool has_cost;
	int64_t started_ms;
	uint64_t n;
	/* The tool calls announced as tool_use (a ring): an agent that asks a permission or ends
	 * a call it never announced (gemini) gets its tool_use made first, so every tool_result
	 * has its tool_use. */
	char *tools[ACP_TOOLS_SEEN];
	size_t tools_next;
	/* Calls announced before their input (opencode: pending, rawInput empty): held until a
	 * later update gives it, a permission asks for it, the call ends or the turn does, so
	 * that the tool_use says what the call does ("bash" alone says nothing). */
	json_object *held[ACP_TOOLS_HELD];
};

/* Starts a turn at now_ms: emits system init and the prompt as a user event with isReplay. */
void acp_turn_begin(struct acp_turn *t, const char *agent, const char *session_id,
		    const char *model, const char *prompt, int64_t now_ms, acp_emit_fn emit,
		    void *arg);

/* One session/update's update object (acp_update_kind's *update) within the turn. Returns true
 * when it made an event. */
bool acp_turn_update(struct acp_turn *t, enum acp_update_kind kind, json_object *update,
		     acp_emit_fn emit, void *arg);

/*
 * Ends the turn: the text still gathered as an assistant event, then the result. stop_reason is
 * the session/prompt result's (NULL when it failed: then error is its message), usage its
 * "usage" (or NULL), queued the prompts still waiting. Frees what the turn held.
 */
void acp_turn_end(struct acp_turn *t, const char *stop_reason, json_object *usage,
		  const char *error, uint64_t queued, int64_t now_ms, acp_emit_fn emit, void *arg);

/* A session/request_permission's params within the turn: the tool call's tool_use, unless it
 * was announced already. */
void acp_turn_permission(struct acp_turn *t, json_object *params, acp_emit_fn emit, void *arg);

/* Frees what the turn holds (acp_turn_end does it too). */
void acp_turn_free(struct acp_turn *t);

/*
 * The permission event's data for a session/request_permission's params: {"requestId",
 * "toolName" (the tool call's title, else its kind), "input" (its rawInput, else {}),
 * "toolUseId", "description" (title), "suggestions":null, "blockedPath":null, "options" (the
 * agent's, as they are)}. A new object.
 */
json_object *acp_permission_event(json_object *params, const char *request_id);

#endif
