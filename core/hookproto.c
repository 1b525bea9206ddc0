#include "hookproto.h"

#include "jsontext.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const hook_event_names[HOOK_EVENT_COUNT] = {
    [HOOK_SESSION_START] = "SessionStart", [HOOK_USER_PROMPT_SUBMIT] = "UserPromptSubmit",
    [HOOK_PRE_TOOL_USE] = "PreToolUse",    [HOOK_PERMISSION_REQUEST] = "PermissionRequest",
    [HOOK_POST_TOOL_USE] = "PostToolUse",  [HOOK_POST_TOOL_USE_FAILURE] = "PostToolUseFailure",
    [HOOK_NOTIFICATION] = "Notification",  [HOOK_STOP] = "Stop",
    [HOOK_SESSION_END] = "SessionEnd",
};

#define HOOKPROTO_FLAGS (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

const char *hookproto_event_name(enum hook_event e)
{
	return (unsigned)e < HOOK_EVENT_COUNT ? hook_event_names[e] : "?";
}

int hookproto_event_parse(const char *name)
{
	for (int e = 0; e < HOOK_EVENT_COUNT; e++)
		if (strcmp(name, hook_event_names[e]) == 0)
			return e;
	return -EINVAL;
}

/* A member of a payload with its serialized size ("key":value plus a comma). */
struct member {
	const char *key;
	json_object *value;
	size_t size;
	bool dropped;
};

/* A copy of payload that fits HOOKPROTO_PAYLOAD_MAX: the largest members are dropped first and
 * named in "omitted" (room for which is counted from the start). NULL on ENOMEM. */
static json_object *payload_fit(json_object *payload)
{
	size_t n = (size_t)json_object_object_length(payload), i = 0, total = 2;
	struct member *m = calloc(n + 1, sizeof(*m));
	json_object *out = json_object_new_object(), *omitted = NULL;

	if (m == NULL || out == NULL)
		goto fail;
	total += sizeof("\"omitted\":[],");
	json_object_object_foreach(payload, k, v)
	{
		m[i].key = k;
		m[i].value = v;
		m[i].size =
		    strlen(k) + 4 + strlen(json_object_to_json_string_ext(v, HOOKPROTO_FLAGS));
		total += m[i].size + strlen(k) + 3;
		i++;
	}
	while (total > HOOKPROTO_PAYLOAD_MAX) {
		struct member *big = NULL;

		for (i = 0; i < n; i++)
			if (!m[i].dropped && (big == NULL || m[i].size > big->size))
				big = &m[i];
		if (big == NULL)
			break;
		big->dropped = true;
		total -= big->size;
	}
	for (i = 0; i < n; i++) {
		if (!m[i].dropped) {
			if (json_object_object_add(out, m[i].key, json_object_get(m[i].value)) < 0)
				goto fail;
			continue;
		}
		if (omitted == NULL) {
			omitted = json_object_new_array();
			if (omitted == NULL || json_object_object_add(out, "omitted", omitted) < 0)
				goto fail;
		}
		if (json_object_array_add(omitted, json_object_new_string(m[i].key)) < 0)
			goto fail;
	}
	free(m);
	return out;
fail:
	free(m);
	json_object_put(out);
	return NULL;
}

/* json_object_to_json_string of obj plus a newline, in a fresh buffer. */
static char *line_of(json_object *obj)
{
	const char *s = json_object_to_json_string_ext(obj, HOOKPROTO_FLAGS);
	size_t len = strlen(s);
	char *line = malloc(len + 2);

	if (line == NULL)
		return NULL;
	memcpy(line, s, len);
	line[len] = '\n';
	line[len + 1] = '\0';
	return line;
}

char *hookproto_report_encode(enum hook_event e, json_object *payload, const char *request_id)
{
	bool has_id = request_id != NULL && request_id[0] != '\0';
	json_object *obj = NULL, *fit = NULL;
	char *line = NULL;

	if ((unsigned)e >= HOOK_EVENT_COUNT || !json_object_is_type(payload, json_type_object) ||
	    (has_id && (e != HOOK_PERMISSION_REQUEST || !hostproto_request_id_valid(request_id)))) {
		errno = EINVAL;
		return NULL;
	}
	fit = payload_fit(payload);
	obj = json_object_new_object();
	if (fit == NULL || obj == NULL)
		goto out;
	json_object_object_add(obj, "event", json_object_new_string(hook_event_names[e]));
	json_object_object_add(obj, "payload", fit);
	fit = NULL;
	if (has_id)
		json_object_object_add(obj, "requestId", json_object_new_string(request_id));
	line = line_of(obj);
out:
	json_object_put(fit);
	json_object_put(obj);
	if (line == NULL)
		errno = ENOMEM;
	return line;
}

/* obj is an object whose keys are all among the NULL-terminated keys. */
static bool only_keys(json_object *obj, const char *const *keys)
{
	json_object_object_foreach(obj, k, v)
	{
		const char *const *p = keys;

		(void)v;
		while (*p != NULL && strcmp(*p, k) != 0)
			p++;
		if (*p == NULL)
			return false;
	}
	return true;
}

int hookproto_report_decode(const char *line, size_t len, struct hook_report *out,
			    struct cause *cause)
{
	static const char *const keys[] = {"event", "payload", "requestId", NULL};
	json_object *obj, *ev, *payload, *rid;
	int e, r = -EINVAL;

	out->payload = NULL;
	out->request_id[0] = '\0';
	if (len > HOOKPROTO_LINE_MAX)
		return cause_fail(cause, EINVAL, "report over %d bytes", HOOKPROTO_LINE_MAX);
	obj = jsontext_parse(line, len, HOOKPROTO_DEPTH, cause);
	if (obj == NULL)
		return -EINVAL;
	if (!json_object_is_type(obj, json_type_object) || !only_keys(obj, keys) ||
	    !json_object_object_get_ex(obj, "event", &ev) ||
	    !json_object_is_type(ev, json_type_string) ||
	    !json_object_object_get_ex(obj, "payload", &payload) ||
	    !json_object_is_type(payload, json_type_object)) {
		cause_set(cause, "a report is {\"event\":\"<name>\",\"payload\":{…}}");
		goto out;
	}
	e = hookproto_event_parse(json_object_get_string(ev));
	if (e < 0) {
		cause_set(cause, "unknown hook event");
		goto out;
	}
	if (json_object_object_get_ex(obj, "requestId", &rid)) {
		if (e != HOOK_PERMISSION_REQUEST || !json_object_is_type(rid, json_type_string) ||
		    !hostproto_request_id_valid(json_object_get_string(rid))) {
			cause_set(cause, "requestId is a request id, only with PermissionRequest");
			goto out;
		}
		memcpy(out->request_id, json_object_get_string(rid),
		       (size_t)json_object_get_string_len(rid) + 1);
	}
	out->event = (enum hook_event)e;
	out->payload = json_object_get(payload);
	r = 0;
out:
	json_object_put(obj);
	return r;
}

void hookproto_report_clear(struct hook_report *r)
{
	json_object_put(r->payload);
	r->payload = NULL;
}

static int check_permissions(json_object *perms, struct cause *cause)
{
	size_t n;

	if (!json_object_is_type(perms, json_type_array))
		return cause_fail(cause, EINVAL, "updatedPermissions must be an array");
	n = json_object_array_length(perms);
	if (n < 1 || n > HOOKPROTO_PERMISSION_MAX)
		return cause_fail(cause, EINVAL, "updatedPermissions holds 1 to %d objects",
				  HOOKPROTO_PERMISSION_MAX);
	for (size_t i = 0; i < n; i++) {
		json_object *p = json_object_array_get_idx(perms, i), *type;

		if (!json_object_is_type(p, json_type_object) ||
		    !json_object_object_get_ex(p, "type", &type) ||
		    !json_object_is_type(type, json_type_string))
			return cause_fail(cause, EINVAL,
					  "each of updatedPermissions has a string \"type\"");
	}
	return 0;
}

int hookproto_decision_check(json_object *decision, struct cause *cause)
{
	static const char *const keys[] = {
	    "behavior", "message", "interrupt", "updatedInput", "updatedPermissions", NULL};
	json_object *behavior, *v;
	bool allow;

	if (!json_object_is_type(decision, json_type_object) || !only_keys(decision, keys))
		return cause_fail(cause, EINVAL,
				  "a decision has behavior, message, interrupt, updatedInput, "
				  "updatedPermissions");
	if (!json_object_object_get_ex(decision, "behavior", &behavior) ||
	    !json_object_is_type(behavior, json_type_string))
		return cause_fail(cause, EINVAL, "behavior must be \"allow\" or \"deny\"");
	if (strcmp(json_object_get_string(behavior), "allow") == 0)
		allow = true;
	else if (strcmp(json_object_get_string(behavior), "deny") == 0)
		allow = false;
	else
		return cause_fail(cause, EINVAL, "behavior must be \"allow\" or \"deny\"");
	if (json_object_object_get_ex(decision, "message", &v)) {
		if (allow)
			return cause_fail(cause, EINVAL, "message goes only with deny");
		if (!json_object_is_type(v, json_type_string) ||
		    json_object_get_string_len(v) > HOOKPROTO_MESSAGE_MAX)
			return cause_fail(cause, EINVAL, "message is a string of at most %d bytes",
					  HOOKPROTO_MESSAGE_MAX);
	}
	if (json_object_object_get_ex(decision, "interrupt", &v)) {
		if (allow)
			return cause_fail(cause, EINVAL, "interrupt goes only with deny");
		if (!json_object_is_type(v, json_type_boolean))
			return cause_fail(cause, EINVAL, "interrupt must be a boolean");
	}
	if (json_object_object_get_ex(decision, "updatedInput", &v)) {
		if (!allow)
			return cause_fail(cause, EINVAL, "updatedInput goes only with allow");
		if (!json_object_is_type(v, json_type_object))
			return cause_fail(cause, EINVAL, "updatedInput must be an object");
	}
	if (json_object_object_get_ex(decision, "updatedPermissions", &v)) {
		if (!allow)
			return cause_fail(cause, EINVAL, "updatedPermissions goes only with allow");
		return check_permissions(v, cause);
	}
	return 0;
}

char *hookproto_answer_encode(json_object *decision)
{
	json_object *obj = json_object_new_object();
	char *line;

	if (obj == NULL)
		return NULL;
	json_object_object_add(obj, "decision", json_object_get(decision));
	line = line_of(obj);
	json_object_put(obj);
	return line;
}

int hookproto_interim_encode(const char *request_id, char out[HOOKPROTO_INTERIM_MAX])
{
	/* A valid id needs no JSON escaping: [A-Za-z0-9._:-] only. */
	if (!hostproto_request_id_valid(request_id))
		return -EINVAL;
	return snprintf(out, HOOKPROTO_INTERIM_MAX, "{\"requestId\":\"%s\"}\n", request_id);
}

int hookproto_answer_decode(const char *line, size_t len, json_object **decision,
			    char request_id[HOSTPROTO_REQUEST_ID_MAX + 1], struct cause *cause)
{
	static const char *const keys[] = {"decision", NULL};
	static const char *const interim[] = {"requestId", NULL};
	json_object *obj, *d;
	int r = -EINVAL;

	*decision = NULL;
	request_id[0] = '\0';
	if (len > HOOKPROTO_ANSWER_MAX)
		return cause_fail(cause, EINVAL, "answer over %d bytes", HOOKPROTO_ANSWER_MAX);
	obj = jsontext_parse(line, len, HOOKPROTO_DEPTH, cause);
	if (obj == NULL)
		return -EINVAL;
	if (json_object_is_type(obj, json_type_object) && only_keys(obj, interim) &&
	    json_object_object_get_ex(obj, "requestId", &d)) {
		if (!json_object_is_type(d, json_type_string) ||
		    !hostproto_request_id_valid(json_object_get_string(d))) {
			cause_set(cause, "requestId must be a request id");
			goto out;
		}
		memcpy(request_id, json_object_get_string(d),
		       (size_t)json_object_get_string_len(d) + 1);
		r = 1;
		goto out;
	}
	if (!json_object_is_type(obj, json_type_object) || !only_keys(obj, keys) ||
	    !json_object_object_get_ex(obj, "decision", &d)) {
		cause_set(cause, "an answer is {\"decision\":null|{…}} or {\"requestId\":\"…\"}");
		goto out;
	}
	if (d != NULL) {
		r = hookproto_decision_check(d, cause);
		if (r < 0)
			goto out;
		*decision = json_object_get(d);
	}
	r = 0;
out:
	json_object_put(obj);
	return r;
}

char *hookproto_claude_output(json_object *decision)
{
	json_object *obj = json_object_new_object(), *spec = json_object_new_object();
	char *line = NULL;

	if (obj == NULL || spec == NULL) {
		json_object_put(obj);
		json_object_put(spec);
		return NULL;
	}
	json_object_object_add(spec, "hookEventName",
			       json_object_new_string(hook_event_names[HOOK_PERMISSION_REQUEST]));
	json_object_object_add(spec, "decision", json_object_get(decision));
	json_object_object_add(obj, "hookSpecificOutput", spec);
	line = line_of(obj);
	json_object_put(obj);
	return line;
}
