#include "relayreq.h"

#include "jsontext.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int relay_route(const char *path, enum relay_kind *kind)
{
	static const struct {
		const char *tail;
		enum relay_kind kind;
	} tails[] = {
	    {"prompt", RELAY_PROMPT},
	    {"events", RELAY_EVENTS},
	    {"interrupt", RELAY_INTERRUPT},
	    {"stream", RELAY_STREAM},
	};
	size_t plen = strlen(RELAY_PREFIX), qlen = strlen(RELAY_PERMISSIONS);
	const char *slash, *rest;

	if (strncmp(path, RELAY_PREFIX, plen) != 0)
		return 0;
	slash = strchr(path + plen, '/');
	if (slash == NULL || slash == path + plen)
		return 0;
	rest = slash + 1;
	for (size_t i = 0; i < sizeof(tails) / sizeof(tails[0]); i++)
		if (strcmp(rest, tails[i].tail) == 0) {
			*kind = tails[i].kind;
			return 1;
		}
	if (strncmp(rest, RELAY_PERMISSIONS, qlen) == 0 && rest[qlen] != '\0' &&
	    strchr(rest + qlen, '/') == NULL) {
		*kind = RELAY_PERMISSION;
		return 1;
	}
	return 0;
}

bool relay_request_id_valid(const char *id)
{
	return hostproto_request_id_valid(id);
}

bool relay_utf8_valid(const char *s, size_t len)
{
	return jsontext_utf8_valid(s, len);
}

json_object *relay_parse_object(const char *text, size_t len)
{
	json_object *obj;

	if (len > RELAY_BODY_MAX)
		return NULL;
	/* The API's rule too: strict, UTF-8, one value, no key twice. */
	obj = jsontext_parse(text, len, JSON_TOKENER_DEFAULT_DEPTH, NULL);
	if (obj != NULL && !json_object_is_type(obj, json_type_object)) {
		json_object_put(obj);
		return NULL;
	}
	return obj;
}

static json_object *relay_member(json_object *obj, const char *key)
{
	json_object *v = NULL;

	if (obj != NULL)
		json_object_object_get_ex(obj, key, &v);
	return v;
}

char *relay_host_request(enum relay_kind kind, json_object *msg, const char *request_id,
			 const char *by, size_t *len, const char **why)
{
	struct hostproto_request req = {.by = by};
	char *line;

	switch (kind) {
	case RELAY_PROMPT:
		req.kind = HOSTPROTO_PROMPT;
		req.prompt = relay_member(msg, "prompt");
		if ((*why = hostproto_prompt_why(req.prompt)) != NULL) {
			if (strcmp(*why, HOSTPROTO_PROMPT_NUL) != 0)
				*why = "expected {\"prompt\": \"<non-empty string>\"}";
			return NULL;
		}
		break;
	case RELAY_PERMISSION:
		req.kind = HOSTPROTO_PERMISSION;
		snprintf(req.request_id, sizeof(req.request_id), "%s", request_id);
		if (hostproto_permission_fields(msg, &req) < 0) {
			*why =
			    "expected {\"behavior\": \"allow\"|\"deny\"} with an optional message "
			    "(string), updatedInput (object), interrupt (boolean) and, with allow, "
			    "updatedPermissions (1 to 16 objects with a \"type\")";
			return NULL;
		}
		break;
	case RELAY_INTERRUPT:
		req.kind = HOSTPROTO_INTERRUPT;
		break;
	case RELAY_EVENTS:
	case RELAY_STREAM:
		*why = "not a request for the host";
		return NULL;
	}
	line = hostproto_request_format(&req, len);
	if (line == NULL)
		*why = errno == ENOMEM ? "out of memory" : "not a request the agent host takes";
	return line;
}
