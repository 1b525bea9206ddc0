#include "acp.h"

#include "cause.h"
#include "jsontext.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_object *acp_get(json_object *o, const char *key)
{
	json_object *v = NULL;

	if (json_object_is_type(o, json_type_object))
		json_object_object_get_ex(o, key, &v);
	return v;
}

static const char *acp_str(json_object *o, const char *key)
{
	json_object *v = acp_get(o, key);

	return json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

/* ---- messages ---------------------------------------------------------------------------- */

int acp_parse(const char *line, size_t len, struct acp_msg *m)
{
	struct cause cause = {{0}};
	json_object *v, *method, *id;

	memset(m, 0, sizeof(*m));
	if (len > ACP_LINE_MAX)
		return -EMSGSIZE;
	m->obj = jsontext_parse(line, len, ACP_DEPTH_MAX, &cause);
	if (!json_object_is_type(m->obj, json_type_object))
		goto bad;
	v = acp_get(m->obj, "jsonrpc");
	if (!json_object_is_type(v, json_type_string) ||
	    strcmp(json_object_get_string(v), "2.0") != 0)
		goto bad;
	method = acp_get(m->obj, "method");
	id = acp_get(m->obj, "id");
	if (id != NULL && !json_object_is_type(id, json_type_string) &&
	    !json_object_is_type(id, json_type_int))
		goto bad;
	m->id = id;
	if (method != NULL) {
		if (!json_object_is_type(method, json_type_string) ||
		    json_object_get_string_len(method) == 0)
			goto bad;
		m->method = json_object_get_string(method);
		m->params = acp_get(m->obj, "params");
		m->type = id != NULL ? ACP_REQUEST : ACP_NOTIFICATION;
		return 0;
	}
	m->result = acp_get(m->obj, "result");
	m->error = acp_get(m->obj, "error");
	/* A response has its id and exactly one of result and error. */
	if (id == NULL || json_object_object_get_ex(m->obj, "result", NULL) ==
			      json_object_object_get_ex(m->obj, "error", NULL))
		goto bad;
	if (m->error != NULL && !json_object_is_type(m->error, json_type_object))
		goto bad;
	m->type = ACP_RESPONSE;
	return 0;
bad:
	acp_msg_release(m);
	return -EBADMSG;
}

void acp_msg_release(struct acp_msg *m)
{
	json_object_put(m->obj);
	memset(m, 0, sizeof(*m));
}

int acp_error_code(const struct acp_msg *m)
{
	json_object *c = acp_get(m->error, "code");

	return json_object_is_type(c, json_type_int) ? json_object_get_int(c) : 0;
}

const char *acp_error_message(const struct acp_msg *m)
{
	const char *s = acp_str(m->error, "message");

	return s != NULL ? s : "";
}

/* msg (consumed) as one line. */
static char *acp_line(json_object *msg, size_t *len)
{
	const char *text;
	size_t n;
	char *line = NULL;

	if (msg == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	text = json_object_to_json_string_ext(msg, JSON_C_TO_STRING_PLAIN);
	n = text != NULL ? strlen(text) : 0;
	if (text == NULL)
		errno = ENOMEM;
	else if (n + 1 > ACP_LINE_MAX)
		errno = EMSGSIZE;
	else if ((line = malloc(n + 2)) != NULL) {
		memcpy(line, text, n);
		line[n] = '\n';
		line[n + 1] = '\0';
		*len = n + 1;
	}
	json_object_put(msg);
	return line;
}

static json_object *acp_envelope(void)
{
	json_object *msg = json_object_new_object();

	json_object_object_add(msg, "jsonrpc", json_object_new_string("2.0"));
	return msg;
}

char *acp_request(uint64_t id, const char *method, json_object *params, size_t *len)
{
	json_object *msg = acp_envelope();

	json_object_object_add(msg, "id", json_object_new_uint64(id));
	json_object_object_add(msg, "method", json_object_new_string(method));
	json_object_object_add(msg, "params", params != NULL ? params : json_object_new_object());
	return acp_line(msg, len);
}

char *acp_notification(const char *method, json_object *params, size_t *len)
{
	json_object *msg = acp_envelope();

	json_object_object_add(msg, "method", json_object_new_string(method));
	json_object_object_add(msg, "params", params != NULL ? params : json_object_new_object());
	return acp_line(msg, len);
}

char *acp_response(json_object *id, json_object *result, size_t *len)
{
	json_object *msg = acp_envelope();

	json_object_object_add(msg, "id", json_object_get(id));
	json_object_object_add(msg, "result", result != NULL ? result : json_object_new_object());
	return acp_line(msg, len);
}

char *acp_error_response(json_object *id, int code, const char *message, size_t *len)
{
	json_object *msg = acp_envelope(), *err = json_object_new_object();

	json_object_object_add(err, "code", json_object_new_int(code));
	json_object_object_add(err, "message", json_object_new_string(message));
	json_object_object_add(msg, "id", id != NULL ? json_object_get(id) : NULL);
	json_object_object_add(msg, "error", err);
	return acp_line(msg, len);
}

/* ---- the client's messages' params ------------------------------------------------------- */

json_object *acp_initialize_params(const char *client_name, const char *client_version)
{
	json_object *p = json_object_new_object(), *caps = json_object_new_object(),
		    *fs = json_object_new_object(), *info = json_object_new_object();

	/* Neither files nor terminals are served: the agent uses its own tools, inside the
	 * session's cage, and asks before it runs one. */
	json_object_object_add(fs, "readTextFile", json_object_new_boolean(false));
	json_object_object_add(fs, "writeTextFile", json_object_new_boolean(false));
	json_object_object_add(caps, "fs", fs);
	json_object_object_add(caps, "terminal", json_object_new_boolean(false));
	json_object_object_add(info, "name", json_object_new_string(client_name));
	json_object_object_add(info, "version", json_object_new_string(client_version));
	json_object_object_add(p, "protocolVersion", json_object_new_int(ACP_PROTOCOL_VERSION));
	json_object_object_add(p, "clientCapabilities", caps);
	json_object_object_add(p, "clientInfo", info);
	return p;
}

json_object *acp_session_new_params(const char *cwd)
{
	json_object *p = json_object_new_object();

	json_object_object_add(p, "cwd", json_object_new_string(cwd));
	json_object_object_add(p, "mcpServers", json_object_new_array());
	return p;
}

json_object *acp_session_load_params(const char *session_id, const char *cwd)
{
	json_object *p = acp_session_new_params(cwd);

	json_object_object_add(p, "sessionId", json_object_new_string(session_id));
	return p;
}

json_object *acp_session_list_params(const char *cwd)
{
	json_object *p = json_object_new_object();

	json_object_object_add(p, "cwd", json_object_new_string(cwd));
	return p;
}

json_object *acp_prompt_params(const char *session_id, const char *text)
{
	json_object *p = json_object_new_object(), *blocks = json_object_new_array(),
		    *b = json_object_new_object();

	json_object_object_add(b, "type", json_object_new_string("text"));
	json_object_object_add(b, "text", json_object_new_string(text));
	json_object_array_add(blocks, b);
	json_object_object_add(p, "sessionId", json_object_new_string(session_id));
	json_object_object_add(p, "prompt", blocks);
	return p;
}

json_object *acp_cancel_params(const char *session_id)
{
	json_object *p = json_object_new_object();

	json_object_object_add(p, "sessionId", json_object_new_string(session_id));
	return p;
}

json_object *acp_permission_result(const char *option_id)
{
	json_object *r = json_object_new_object(), *o = json_object_new_object();

	json_object_object_add(
	    o, "outcome", json_object_new_string(option_id != NULL ? "selected" : "cancelled"));
	if (option_id != NULL)
		json_object_object_add(o, "optionId", json_object_new_string(option_id));
	json_object_object_add(r, "outcome", o);
	return r;
}

/* ---- what the agent answers -------------------------------------------------------------- */

bool acp_can_load(json_object *init_result)
{
	json_object *v = acp_get(acp_get(init_result, "agentCapabilities"), "loadSession");

	return json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v);
}

bool acp_can_list(json_object *init_result)
{
	json_object *caps =
	    acp_get(acp_get(init_result, "agentCapabilities"), "sessionCapabilities");

	/* The capability is an object (its options), present when the agent lists. */
	return json_object_is_type(acp_get(caps, "list"), json_type_object);
}

const char *acp_session_list_newest(json_object *result, const char *cwd)
{
	json_object *sessions = acp_get(result, "sessions");
	size_t n =
	    json_object_is_type(sessions, json_type_array) ? json_object_array_length(sessions) : 0;
	const char *best = NULL, *best_at = NULL;

	for (size_t i = 0; i < n; i++) {
		json_object *o = json_object_array_get_idx(sessions, i);
		const char *id = acp_str(o, "sessionId"), *at = acp_str(o, "updatedAt"),
			   *dir = acp_str(o, "cwd");

		if (id == NULL || id[0] == '\0' || (dir != NULL && strcmp(dir, cwd) != 0))
			continue;
		/* RFC 3339 times of one agent compare as text; one without a time counts as the
		 * oldest, and of equals the first listed wins (the agents list newest first). */
		if (best == NULL || (at != NULL && (best_at == NULL || strcmp(at, best_at) > 0))) {
			best = id;
			best_at = at;
		}
	}
	return best;
}

const char *acp_session_id(json_object *result)
{
	const char *s = acp_str(result, "sessionId");

	return s != NULL && s[0] != '\0' ? s : NULL;
}

const char *acp_session_model(json_object *result)
{
	return acp_str(acp_get(result, "models"), "currentModelId");
}

const char *acp_permission_option(json_object *params, bool allow)
{
	static const char *const kinds[2][2] = {{"reject_once", "reject_always"},
						{"allow_once", "allow_always"}};
	json_object *options = acp_get(params, "options");
	size_t n =
	    json_object_is_type(options, json_type_array) ? json_object_array_length(options) : 0;

	/* The narrowest answer first: a person who allows once has not allowed for good. */
	for (size_t k = 0; k < 2; k++)
		for (size_t i = 0; i < n; i++) {
			json_object *o = json_object_array_get_idx(options, i);
			const char *kind = acp_str(o, "kind"), *id = acp_str(o, "optionId");

			if (kind != NULL && id != NULL && strcmp(kind, kinds[allow][k]) == 0)
				return id;
		}
	return NULL;
}

enum acp_update_kind acp_update_kind(json_object *params, json_object **update)
{
	static const struct {
		const char *name;
		enum acp_update_kind kind;
	} kinds[] = {
	    {"user_message_chunk", ACP_UPDATE_USER_MESSAGE_CHUNK},
	    {"agent_message_chunk", ACP_UPDATE_AGENT_MESSAGE_CHUNK},
	    {"agent_thought_chunk", ACP_UPDATE_AGENT_THOUGHT_CHUNK},
	    {"tool_call", ACP_UPDATE_TOOL_CALL},
	    {"tool_call_update", ACP_UPDATE_TOOL_CALL_UPDATE},
	    {"plan", ACP_UPDATE_PLAN},
	    {"available_commands_update", ACP_UPDATE_AVAILABLE_COMMANDS},
	    {"current_mode_update", ACP_UPDATE_CURRENT_MODE},
	    {"config_option_update", ACP_UPDATE_CONFIG_OPTION},
	    {"session_info_update", ACP_UPDATE_SESSION_INFO},
	    {"usage_update", ACP_UPDATE_USAGE},
	};
	json_object *u = acp_get(params, "update");
	const char *name = acp_str(u, "sessionUpdate");

	*update = json_object_is_type(u, json_type_object) ? u : NULL;
	for (size_t i = 0; name != NULL && i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (strcmp(name, kinds[i].name) == 0)
			return kinds[i].kind;
	return ACP_UPDATE_UNKNOWN;
}

/* ---- the common event shape -------------------------------------------------------------- */

static void acp_emit_message(acp_emit_fn emit, void *arg, const char *role, json_object *content)
{
	json_object *ev = json_object_new_object(), *m = json_object_new_object();

	json_object_object_add(m, "role", json_object_new_string(role));
	json_object_object_add(m, "content", content);
	json_object_object_add(ev, "type", json_object_new_string(role));
	json_object_object_add(ev, "message", m);
	emit(arg, role, ev);
}

/* The gathered text as one assistant event (text or thinking block). */
static void acp_turn_flush(struct acp_turn *t, acp_emit_fn emit, void *arg)
{
	json_object *content, *b;

	if (t->len == 0)
		return;
	content = json_object_new_array();
	b = json_object_new_object();
	json_object_object_add(b, "type",
			       json_object_new_string(t->thinking ? "thinking" : "text"));
	json_object_object_add(b, t->thinking ? "thinking" : "text",
			       json_object_new_string_len(t->text, (int)t->len));
	json_object_array_add(content, b);
	if (!t->thinking) {
		/* text has no NUL: copied by its length (strndup may look past it for one). */
		free(t->last);
		if ((t->last = malloc(t->len + 1)) != NULL) {
			memcpy(t->last, t->text, t->len);
			t->last[t->len] = '\0';
		}
	}
	t->len = 0;
	acp_emit_message(emit, arg, "assistant", content);
}

/* Adds a chunk to the gathered text: thoughts and answer each make their own events. */
static void acp_turn_gather(struct acp_turn *t, bool thinking, const char *s, size_t n,
			    acp_emit_fn emit, void *arg)
{
	if (t->thinking != thinking)
		acp_turn_flush(t, emit, arg);
	t->thinking = thinking;
	while (n > 0) {
		size_t take = n < ACP_TEXT_MAX - t->len ? n : ACP_TEXT_MAX - t->len;
		char *grown;

		if (t->cap < t->len + take) {
			size_t want = t->cap > 0 ? t->cap : 4096;

			while (want < t->len + take)
				want *= 2;
			if ((grown = realloc(t->text, want)) == NULL)
				return; /* no memory: the pieces went out live already */
			t->text = grown;
			t->cap = want;
		}
		memcpy(t->text + t->len, s, take);
		t->len += take;
		s += take;
		n -= take;
		if (t->len == ACP_TEXT_MAX)
			acp_turn_flush(t, emit, arg);
	}
}

void acp_turn_begin(struct acp_turn *t, const char *agent, const char *session_id,
		    const char *model, const char *prompt, int64_t now_ms, acp_emit_fn emit,
		    void *arg)
{
	json_object *init = json_object_new_object(), *user = json_object_new_object(),
		    *m = json_object_new_object();

	memset(t, 0, sizeof(*t));
	t->agent = agent;
	t->session_id = session_id;
	t->started_ms = now_ms;
	json_object_object_add(init, "type", json_object_new_string("system"));
	json_object_object_add(init, "subtype", json_object_new_string("init"));
	json_object_object_add(init, "agent", json_object_new_string(agent));
	json_object_object_add(init, "session_id", json_object_new_string(session_id));
	json_object_object_add(init, "model", model != NULL ? json_object_new_string(model) : NULL);
	emit(arg, "system", init);
	json_object_object_add(m, "role", json_object_new_string("user"));
	json_object_object_add(m, "content", json_object_new_string(prompt));
	json_object_object_add(user, "type", json_object_new_string("user"));
	json_object_object_add(user, "message", m);
	json_object_object_add(user, "isReplay", json_object_new_boolean(true));
	emit(arg, "user", user);
}

/* The text of a tool call's content list (text blocks, a diff's path), cut to
 * ACP_TOOL_TEXT_MAX; rawOutput as JSON when there is none. Caller frees. */
static char *acp_tool_text(json_object *update)
{
	json_object *content = acp_get(update, "content"), *raw = acp_get(update, "rawOutput");
	size_t n =
	    json_object_is_type(content, json_type_array) ? json_object_array_length(content) : 0;
	size_t len = 0;
	char *out = malloc(ACP_TOOL_TEXT_MAX + 1);

	if (out == NULL)
		return NULL;
	out[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		json_object *c = json_object_array_get_idx(content, i);
		const char *type = acp_str(c, "type"), *s = NULL, *pre = "";

		if (type == NULL)
			continue;
		if (strcmp(type, "content") == 0)
			s = acp_str(acp_get(c, "content"), "text");
		else if (strcmp(type, "diff") == 0) {
			pre = "diff ";
			s = acp_str(c, "path");
		}
		if (s == NULL)
			continue;
		len += (size_t)snprintf(out + len, ACP_TOOL_TEXT_MAX + 1 - len, "%s%s%s",
					len > 0 ? "\n" : "", pre, s);
		if (len >= ACP_TOOL_TEXT_MAX) {
			len = ACP_TOOL_TEXT_MAX;
			break;
		}
	}
	if (len == 0 && raw != NULL)
		snprintf(out, ACP_TOOL_TEXT_MAX + 1, "%s",
			 json_object_is_type(raw, json_type_string)
			     ? json_object_get_string(raw)
			     : json_object_to_json_string_ext(raw, JSON_C_TO_STRING_PLAIN));
	/* A cut may fall inside a character: clients get valid UTF-8 only. */
	len = strlen(out);
	while (len > 0 && !jsontext_utf8_valid(out, len))
		out[--len] = '\0';
	return out;
}

/* Whether the tool call id was announced; remembers it when not (and announce is set). */
static bool acp_turn_tool_seen(struct acp_turn *t, const char *id, bool announce)
{
	if (id == NULL)
		return false;
	for (size_t i = 0; i < ACP_TOOLS_SEEN; i++)
		if (t->tools[i] != NULL && strcmp(t->tools[i], id) == 0)
			return true;
	if (announce) {
		free(t->tools[t->tools_next]);
		t->tools[t->tools_next] = strdup(id);
		t->tools_next = (t->tools_next + 1) % ACP_TOOLS_SEEN;
	}
	return false;
}

/* Whether a tool call's update carries no input yet (rawInput absent, null or {}). */
static bool acp_input_empty(json_object *update)
{
	json_object *input = acp_get(update, "rawInput");

	return input == NULL || (json_object_is_type(input, json_type_object) &&
				 json_object_object_length(input) == 0);
}

/* The held announcement of call id, taken out of the turn (the caller's to put), or NULL. */
static json_object *acp_held_take(struct acp_turn *t, const char *id)
{
	for (size_t i = 0; id != NULL && i < ACP_TOOLS_HELD; i++) {
		json_object *h = t->held[i];

		if (h != NULL && acp_str(h, "toolCallId") != NULL &&
		    strcmp(acp_str(h, "toolCallId"), id) == 0) {
			t->held[i] = NULL;
			return h;
		}
	}
	return NULL;
}

static json_object *acp_held_merge(json_object *held, json_object *update);

/* Whether call id is held. */
static bool acp_held_has(const struct acp_turn *t, const char *id)
{
	for (size_t i = 0; id != NULL && i < ACP_TOOLS_HELD; i++)
		if (t->held[i] != NULL && acp_str(t->held[i], "toolCallId") != NULL &&
		    strcmp(acp_str(t->held[i], "toolCallId"), id) == 0)
			return true;
	return false;
}

/* Holds update (a call without input; over its earlier announcement): true, or false when it
 * has no id or no room is left (the caller then announces it as it is). */
static bool acp_held_put(struct acp_turn *t, json_object *update)
{
	json_object *old = acp_held_take(t, acp_str(update, "toolCallId"));
	json_object *h = old != NULL ? acp_held_merge(old, update) : json_object_get(update);

	json_object_put(old);
	for (size_t i = 0; acp_str(h, "toolCallId") != NULL && i < ACP_TOOLS_HELD; i++)
		if (t->held[i] == NULL) {
			t->held[i] = h;
			return true;
		}
	json_object_put(h);
	return false;
}

/* A call's announcement with a later update's fields over the held one's (title, kind and
 * input as the agent last said them). New reference. */
static json_object *acp_held_merge(json_object *held, json_object *update)
{
	json_object *m = json_object_new_object();

	json_object_object_foreach(held, k1, v1) json_object_object_add(m, k1, json_object_get(v1));
	json_object_object_foreach(update, k2, v2)
	{
		if (strcmp(k2, "rawInput") == 0 && acp_input_empty(update))
			continue;
		json_object_object_add(m, k2, json_object_get(v2));
	}
	return m;
}

static void acp_tool_use(struct acp_turn *t, json_object *update, acp_emit_fn emit, void *arg)
{
	json_object *content = json_object_new_array(), *b = json_object_new_object(),
		    *input = acp_get(update, "rawInput");
	const char *title = acp_str(update, "title"), *kind = acp_str(update, "kind");

	json_object_object_add(b, "type", json_object_new_string("tool_use"));
	json_object_object_add(b, "id", json_object_get(acp_get(update, "toolCallId")));
	json_object_object_add(b, "name",
			       json_object_new_string(title != NULL  ? title
						      : kind != NULL ? kind
								     : "tool"));
	json_object_object_add(b, "input",
			       input != NULL ? json_object_get(input) : json_object_new_object());
	if (kind != NULL)
		json_object_object_add(b, "kind", json_object_new_string(kind));
	json_object_array_add(content, b);
	t->n++;
	acp_turn_tool_seen(t, acp_str(update, "toolCallId"), true);
	acp_emit_message(emit, arg, "assistant", content);
}

/* The tool_use of the call update is about, merged with its held announcement if any. */
static void acp_tool_use_held(struct acp_turn *t, json_object *update, acp_emit_fn emit, void *arg)
{
	json_object *held = acp_held_take(t, acp_str(update, "toolCallId"));
	json_object *m = held != NULL ? acp_held_merge(held, update) : json_object_get(update);

	acp_tool_use(t, m, emit, arg);
	json_object_put(m);
	json_object_put(held);
}

void acp_turn_permission(struct acp_turn *t, json_object *params, acp_emit_fn emit, void *arg)
{
	json_object *call = acp_get(params, "toolCall");

	if (!json_object_is_type(call, json_type_object) ||
	    acp_turn_tool_seen(t, acp_str(call, "toolCallId"), false))
		return;
	acp_turn_flush(t, emit, arg);
	acp_tool_use_held(t, call, emit, arg);
}

static void acp_tool_result(json_object *update, bool failed, acp_emit_fn emit, void *arg)
{
	json_object *content = json_object_new_array(), *b = json_object_new_object();
	char *text = acp_tool_text(update);

	json_object_object_add(b, "type", json_object_new_string("tool_result"));
	json_object_object_add(b, "tool_use_id", json_object_get(acp_get(update, "toolCallId")));
	json_object_object_add(b, "content", json_object_new_string(text != NULL ? text : ""));
	json_object_object_add(b, "is_error", json_object_new_boolean(failed));
	json_object_array_add(content, b);
	free(text);
	acp_emit_message(emit, arg, "user", content);
}

bool acp_turn_update(struct acp_turn *t, enum acp_update_kind kind, json_object *update,
		     acp_emit_fn emit, void *arg)
{
	json_object *content = acp_get(update, "content");
	const char *text = acp_str(content, "text"), *status = acp_str(update, "status");
	json_object *ev, *e, *d, *cost;
	const char *id;
	bool ended, held, pending, made;

	switch (kind) {
	case ACP_UPDATE_AGENT_MESSAGE_CHUNK:
	case ACP_UPDATE_AGENT_THOUGHT_CHUNK:
		if (text == NULL || text[0] == '\0')
			return false;
		acp_turn_gather(t, kind == ACP_UPDATE_AGENT_THOUGHT_CHUNK, text, strlen(text), emit,
				arg);
		if (kind == ACP_UPDATE_AGENT_THOUGHT_CHUNK)
			return true;
		/* The piece live, as claude's partial messages are: a client shows the text
		 * grow; the assistant event replaces it. */
		ev = json_object_new_object();
		e = json_object_new_object();
		d = json_object_new_object();
		json_object_object_add(d, "type", json_object_new_string("text_delta"));
		json_object_object_add(d, "text", json_object_new_string(text));
		json_object_object_add(e, "type", json_object_new_string("content_block_delta"));
		json_object_object_add(e, "index", json_object_new_int(0));
		json_object_object_add(e, "delta", d);
		json_object_object_add(ev, "type", json_object_new_string("stream_event"));
		json_object_object_add(ev, "event", e);
		emit(arg, "stream_event", ev);
		return true;
	case ACP_UPDATE_TOOL_CALL:
	case ACP_UPDATE_TOOL_CALL_UPDATE:
		ended = status != NULL &&
			(strcmp(status, "completed") == 0 || strcmp(status, "failed") == 0);
		id = acp_str(update, "toolCallId");
		if (acp_turn_tool_seen(t, id, false)) {
			/* Progress of a call announced already is no event: it is in the pane. */
			if (!ended)
				return false;
			acp_turn_flush(t, emit, arg);
			acp_tool_result(update, strcmp(status, "failed") == 0, emit, arg);
			return true;
		}
		held = acp_held_has(t, id);
		if (!ended && kind == ACP_UPDATE_TOOL_CALL_UPDATE && !held)
			return false; /* an unannounced call's progress: its end announces it */
		/* A call still pending (ACP's default status) may not have its input yet (opencode
		 * gives only its cwd): held until it runs, is asked for or ends, or the turn does.
		 * An update that says no status changes none. */
		pending = status == NULL ? kind == ACP_UPDATE_TOOL_CALL || held
					 : strcmp(status, "pending") == 0;
		made = t->len > 0; /* text before the call: said now, whatever the call waits for */
		acp_turn_flush(t, emit, arg);
		if (!ended && pending && acp_held_put(t, update))
			return made;
		acp_tool_use_held(t, update, emit, arg);
		if (ended)
			acp_tool_result(update, strcmp(status, "failed") == 0, emit, arg);
		return true;
	case ACP_UPDATE_USAGE:
		json_object_put(t->usage);
		t->usage = json_object_get(update);
		cost = acp_get(acp_get(update, "cost"), "amount");
		if (json_object_is_type(cost, json_type_double) ||
		    json_object_is_type(cost, json_type_int)) {
			t->cost = json_object_get_double(cost);
			t->has_cost = true;
		}
		return false;
	default:
		return false;
	}
}

/* ACP's usage (camelCase token counts) in claude's names, the agent's own kept beside. */
static json_object *acp_usage(json_object *usage, json_object *update)
{
	static const char *const names[][2] = {
	    {"inputTokens", "input_tokens"},
	    {"outputTokens", "output_tokens"},
	    {"cachedReadTokens", "cache_read_input_tokens"},
	    {"cachedWriteTokens", "cache_creation_input_tokens"},
	    {"thoughtTokens", "thought_tokens"},
	    {"totalTokens", "total_tokens"},
	};
	json_object *out, *v;

	if (usage == NULL && update == NULL)
		return NULL;
	out = json_object_new_object();
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if ((v = acp_get(usage, names[i][0])) != NULL &&
		    json_object_is_type(v, json_type_int))
			json_object_object_add(out, names[i][1], json_object_get(v));
	/* usage_update says how full the context is: "used" of "size" tokens. */
	if ((v = acp_get(update, "used")) != NULL)
		json_object_object_add(out, "context_used", json_object_get(v));
	if ((v = acp_get(update, "size")) != NULL)
		json_object_object_add(out, "context_size", json_object_get(v));
	return out;
}

void acp_turn_end(struct acp_turn *t, const char *stop_reason, json_object *usage,
		  const char *error, uint64_t queued, int64_t now_ms, acp_emit_fn emit, void *arg)
{
	json_object *ev = json_object_new_object();
	const char *subtype;
	bool ok = stop_reason != NULL && strcmp(stop_reason, "end_turn") == 0;

	acp_turn_flush(t, emit, arg);
	/* Calls whose input never came: announced as they are, so none goes unsaid. */
	for (size_t i = 0; i < ACP_TOOLS_HELD; i++)
		if (t->held[i] != NULL) {
			acp_tool_use(t, t->held[i], emit, arg);
			json_object_put(t->held[i]);
			t->held[i] = NULL;
		}
	if (ok)
		subtype = "success";
	else if (stop_reason == NULL)
		subtype = "error_during_execution";
	else if (strcmp(stop_reason, "cancelled") == 0)
		subtype = "cancelled";
	else if (strcmp(stop_reason, "max_turn_requests") == 0)
		subtype = "error_max_turns";
	else if (strcmp(stop_reason, "max_tokens") == 0)
		subtype = "error_max_tokens";
	else
		subtype = stop_reason; /* refusal, or one a later protocol adds */
	json_object_object_add(ev, "type", json_object_new_string("result"));
	json_object_object_add(ev, "subtype", json_object_new_string(subtype));
	json_object_object_add(ev, "is_error", json_object_new_boolean(!ok));
	json_object_object_add(ev, "stop_reason",
			       stop_reason != NULL ? json_object_new_string(stop_reason) : NULL);
	json_object_object_add(ev, "num_turns", json_object_new_int(1));
	json_object_object_add(
	    ev, "duration_ms",
	    json_object_new_int64(now_ms > t->started_ms ? now_ms - t->started_ms : 0));
	json_object_object_add(ev, "result",
			       json_object_new_string(error != NULL     ? error
						      : t->last != NULL ? t->last
									: ""));
	if (error != NULL) {
		json_object *errors = json_object_new_array();

		json_object_array_add(errors, json_object_new_string(error));
		json_object_object_add(ev, "errors", errors);
	}
	if ((usage = acp_usage(usage, t->usage)) != NULL)
		json_object_object_add(ev, "usage", usage);
	if (t->has_cost)
		json_object_object_add(ev, "total_cost_usd", json_object_new_double(t->cost));
	json_object_object_add(ev, "queued_turn_count", json_object_new_uint64(queued));
	json_object_object_add(ev, "agent", json_object_new_string(t->agent));
	json_object_object_add(ev, "session_id", json_object_new_string(t->session_id));
	acp_turn_free(t);
	emit(arg, "result", ev);
}

void acp_turn_free(struct acp_turn *t)
{
	free(t->text);
	free(t->last);
	json_object_put(t->usage);
	for (size_t i = 0; i < ACP_TOOLS_SEEN; i++) {
		free(t->tools[i]);
		t->tools[i] = NULL;
	}
	for (size_t i = 0; i < ACP_TOOLS_HELD; i++) {
		json_object_put(t->held[i]);
		t->held[i] = NULL;
	}
	t->text = t->last = NULL;
	t->usage = NULL;
	t->len = t->cap = 0;
}

json_object *acp_permission_event(json_object *params, const char *request_id)
{
	json_object *ev = json_object_new_object(), *call = acp_get(params, "toolCall"),
		    *input = acp_get(call, "rawInput"), *options = acp_get(params, "options");
	const char *title = acp_str(call, "title"), *kind = acp_str(call, "kind");

	json_object_object_add(ev, "requestId", json_object_new_string(request_id));
	json_object_object_add(ev, "toolName",
			       json_object_new_string(title != NULL  ? title
						      : kind != NULL ? kind
								     : "tool"));
	json_object_object_add(ev, "input",
			       input != NULL ? json_object_get(input) : json_object_new_object());
	json_object_object_add(ev, "toolUseId", json_object_get(acp_get(call, "toolCallId")));
	json_object_object_add(ev, "description",
			       title != NULL ? json_object_new_string(title) : NULL);
	json_object_object_add(ev, "suggestions", NULL);
	json_object_object_add(ev, "blockedPath", NULL);
	json_object_object_add(ev, "options", json_object_get(options));
	/* What the tool does (execute, edit, read, …): clients word the request by it, since the
	 * title is the agent's own text ("touch /x"), not a tool's name. */
	if (kind != NULL)
		json_object_object_add(ev, "kind", json_object_new_string(kind));
	return ev;
}
