#include "hostproto.h"

#include "auth.h"
#include "jsontext.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HOSTPROTO_JSON_OUT   (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)
#define HOSTPROTO_ID_DIGITS  20 /* UINT64_MAX has 20 digits */
#define HOSTPROTO_U64_MAX    "18446744073709551615"
#define HOSTPROTO_LINE_START "{\"id\":"
#define HOSTPROTO_EVENT_KEY  ",\"event\":\""
#define HOSTPROTO_DATA_KEY   "\",\"data\":"
#define HOSTPROTO_STRLEN(s)  (sizeof(s) - 1)
#define HOSTPROTO_READ_MIN   4096 /* first room for a line kept across reads */

static const char hostproto_permission_why[] =
    "expected {\"behavior\": \"allow\"|\"deny\"} with an optional message (string), updatedInput "
    "(object), interrupt (boolean) and, with allow, updatedPermissions (1 to 16 objects with a "
    "\"type\")";

/* base/HOSTPROTO_DIR[/id/leaf] into out. Returns 0 or -ENAMETOOLONG. */
static int hostproto_join(const char *base, const char *id, const char *leaf, char *out,
			  size_t outlen)
{
	int n = id != NULL ? snprintf(out, outlen, "%s/" HOSTPROTO_DIR "/%s/%s", base, id, leaf)
			   : snprintf(out, outlen, "%s/" HOSTPROTO_DIR, base);

	return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

int hostproto_path(const struct config *cfg, const char *id, const char *leaf, char *out,
		   size_t outlen)
{
	return hostproto_join(cfg->runtime_dir, id, leaf, out, outlen);
}

int hostproto_dir(const struct config *cfg, char *out, size_t outlen)
{
	return hostproto_join(cfg->runtime_dir, NULL, NULL, out, outlen);
}

int hostproto_state_path(const struct config *cfg, const char *id, const char *leaf, char *out,
			 size_t outlen)
{
	return hostproto_join(cfg->state_dir, id, leaf, out, outlen);
}

int hostproto_state_dir(const struct config *cfg, char *out, size_t outlen)
{
	return hostproto_join(cfg->state_dir, NULL, NULL, out, outlen);
}

static json_object *hostproto_member(json_object *obj, const char *key)
{
	json_object *v = NULL;

	if (obj != NULL)
		json_object_object_get_ex(obj, key, &v);
	return v;
}

/* ---- requests ----------------------------------------------------------------------------- */

bool hostproto_request_id_valid(const char *id)
{
	size_t n = strlen(id);

	if (n == 0 || n > HOSTPROTO_REQUEST_ID_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = id[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '_' || c == '.' || c == ':'))
			return false;
	}
	return true;
}

/* updatedPermissions: claude's PermissionUpdate list (e.g. the event's "suggestions"), bounded,
 * each naming its "type"; claude checks the entries themselves. */
static bool hostproto_updates_valid(json_object *v)
{
	size_t n;

	if (!json_object_is_type(v, json_type_array))
		return false;
	n = json_object_array_length(v);
	if (n == 0 || n > HOSTPROTO_PERMISSION_UPDATES)
		return false;
	for (size_t i = 0; i < n; i++) {
		json_object *u = json_object_array_get_idx(v, i);

		if (!json_object_is_type(u, json_type_object) ||
		    !json_object_is_type(hostproto_member(u, "type"), json_type_string))
			return false;
	}
	return true;
}

int hostproto_permission_fields(json_object *obj, struct hostproto_request *req)
{
	json_object *behavior = hostproto_member(obj, "behavior"),
		    *message = hostproto_member(obj, "message"),
		    *input = hostproto_member(obj, "updatedInput"),
		    *interrupt = hostproto_member(obj, "interrupt"),
		    *updates = hostproto_member(obj, "updatedPermissions");
	const char *b =
	    json_object_is_type(behavior, json_type_string) ? json_object_get_string(behavior) : "";

	if (strcmp(b, "allow") != 0 && strcmp(b, "deny") != 0)
		return -EINVAL;
	req->allow = strcmp(b, "allow") == 0;
	if ((message != NULL && !json_object_is_type(message, json_type_string)) ||
	    (input != NULL && !json_object_is_type(input, json_type_object)) ||
	    (interrupt != NULL && !json_object_is_type(interrupt, json_type_boolean)) ||
	    (updates != NULL && (!req->allow || !hostproto_updates_valid(updates))))
		return -EINVAL;
	req->message = message != NULL ? json_object_get_string(message) : NULL;
	req->updated_input = input;
	req->interrupt = interrupt != NULL && json_object_get_boolean(interrupt);
	req->updated_permissions = updates;
	return 0;
}

const char *hostproto_prompt_why(json_object *prompt)
{
	if (!json_object_is_type(prompt, json_type_string) ||
	    json_object_get_string_len(prompt) == 0)
		return "prompt must be a non-empty string";
	/* claude, its transcript and the pane are C strings: a prompt is one, as POST /sessions
	 * requires of a bootstrap prompt. */
	if (strlen(json_object_get_string(prompt)) != (size_t)json_object_get_string_len(prompt))
		return HOSTPROTO_PROMPT_NUL;
	return NULL;
}

static const char *const hostproto_kind_names[] = {
    [HOSTPROTO_SUBSCRIBE] = "subscribe",
    [HOSTPROTO_PROMPT] = "prompt",
    [HOSTPROTO_PERMISSION] = "permission",
    [HOSTPROTO_INTERRUPT] = "interrupt",
};

char *hostproto_request_format(const struct hostproto_request *req, size_t *len)
{
	json_object *o = json_object_new_object();
	const char *text;
	char *line = NULL;

	if (o == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	errno = EINVAL;
	json_object_object_add(o, "type", json_object_new_string(hostproto_kind_names[req->kind]));
	switch (req->kind) {
	case HOSTPROTO_SUBSCRIBE:
		json_object_object_add(o, "after", json_object_new_uint64(req->after));
		break;
	case HOSTPROTO_PROMPT:
		if (hostproto_prompt_why(req->prompt) != NULL)
			goto out;
		json_object_object_add(o, "prompt", json_object_get(req->prompt));
		break;
	case HOSTPROTO_PERMISSION:
		if (!hostproto_request_id_valid(req->request_id) ||
		    (req->updated_permissions != NULL && !req->allow))
			goto out;
		json_object_object_add(o, "requestId", json_object_new_string(req->request_id));
		json_object_object_add(o, "behavior",
				       json_object_new_string(req->allow ? "allow" : "deny"));
		if (req->message != NULL)
			json_object_object_add(o, "message", json_object_new_string(req->message));
		if (req->updated_input != NULL)
			json_object_object_add(o, "updatedInput",
					       json_object_get(req->updated_input));
		if (req->interrupt)
			json_object_object_add(o, "interrupt", json_object_new_boolean(true));
		if (req->updated_permissions != NULL)
			json_object_object_add(o, "updatedPermissions",
					       json_object_get(req->updated_permissions));
		break;
	case HOSTPROTO_INTERRUPT:
		break;
	}
	if ((req->kind == HOSTPROTO_PROMPT || req->kind == HOSTPROTO_PERMISSION) &&
	    req->by != NULL && auth_by_valid(req->by))
		json_object_object_add(o, "by", json_object_new_string(req->by));
	text = json_object_to_json_string_ext(o, HOSTPROTO_JSON_OUT);
	*len = strlen(text) + 1;
	line = malloc(*len + 1);
	if (line == NULL) {
		errno = ENOMEM;
		goto out;
	}
	memcpy(line, text, *len - 1);
	line[*len - 1] = '\n';
	line[*len] = '\0';
out:
	json_object_put(o);
	return line;
}

size_t hostproto_subscribe_format(uint64_t after, char out[HOSTPROTO_SUBSCRIBE_MAX])
{
	/* The host reads "after" as a JSON integer (int64): a larger id means "nothing yet". */
	if (after > INT64_MAX)
		after = INT64_MAX;
	return (size_t)snprintf(out, HOSTPROTO_SUBSCRIBE_MAX,
				"{\"type\":\"subscribe\",\"after\":%" PRIu64 "}\n", after);
}

int hostproto_request_parse(const char *line, size_t len, struct hostproto_request *req,
			    const char **why)
{
	json_object *obj, *type, *v;
	const char *t;

	memset(req, 0, sizeof(*req));
	if (len > HOSTPROTO_REQUEST_MAX) {
		*why = "the request line is too long";
		return -EMSGSIZE;
	}
	obj = jsontext_parse(line, len, JSON_TOKENER_DEFAULT_DEPTH, NULL);
	type = hostproto_member(obj, "type");
	if (!json_object_is_type(obj, json_type_object) ||
	    !json_object_is_type(type, json_type_string)) {
		*why = "a request needs a type";
		goto bad;
	}
	req->owner = obj;
	t = json_object_get_string(type);
	if (strcmp(t, "subscribe") == 0) {
		req->kind = HOSTPROTO_SUBSCRIBE;
		/* A missing or odd "after" replays everything, as it always has. */
		v = hostproto_member(obj, "after");
		req->after = json_object_is_type(v, json_type_int) && json_object_get_int64(v) > 0
				 ? (uint64_t)json_object_get_int64(v)
				 : 0;
	} else if (strcmp(t, "prompt") == 0) {
		req->kind = HOSTPROTO_PROMPT;
		req->prompt = hostproto_member(obj, "prompt");
		if ((*why = hostproto_prompt_why(req->prompt)) != NULL)
			goto bad;
	} else if (strcmp(t, "permission") == 0) {
		req->kind = HOSTPROTO_PERMISSION;
		v = hostproto_member(obj, "requestId");
		if (!json_object_is_type(v, json_type_string) ||
		    !hostproto_request_id_valid(json_object_get_string(v))) {
			*why = "requestId must be a permission request id";
			goto bad;
		}
		snprintf(req->request_id, sizeof(req->request_id), "%s", json_object_get_string(v));
		if (hostproto_permission_fields(obj, req) < 0) {
			*why = hostproto_permission_why;
			goto bad;
		}
	} else if (strcmp(t, "interrupt") == 0) {
		req->kind = HOSTPROTO_INTERRUPT;
	} else {
		*why = "unknown request type";
		goto bad;
	}
	v = hostproto_member(obj, "by");
	if (req->kind != HOSTPROTO_SUBSCRIBE && json_object_is_type(v, json_type_string) &&
	    auth_by_valid(json_object_get_string(v)))
		req->by = json_object_get_string(v);
	return 0;
bad:
	json_object_put(obj);
	memset(req, 0, sizeof(*req));
	return -EINVAL;
}

void hostproto_request_release(struct hostproto_request *req)
{
	json_object_put(req->owner);
	req->owner = NULL;
}

/* ---- answers ------------------------------------------------------------------------------ */

static int hostproto_fit(int n, size_t outlen)
{
	return n < 0 || (size_t)n >= outlen ? -EOVERFLOW : n;
}

int hostproto_accepted_format(uint64_t after, uint64_t queued, char *out, size_t outlen)
{
	return hostproto_fit(snprintf(out, outlen,
				      "{\"type\":\"accepted\",\"after\":%" PRIu64
				      ",\"queued\":%" PRIu64 "}\n",
				      after, queued),
			     outlen);
}

int hostproto_ok_format(char *out, size_t outlen)
{
	return hostproto_fit(snprintf(out, outlen, "{\"type\":\"ok\"}\n"), outlen);
}

int hostproto_error_format(int status, const char *code, const char *error, char *out,
			   size_t outlen)
{
	json_object *o = json_object_new_object();
	int n;

	if (o == NULL)
		return -ENOMEM;
	json_object_object_add(o, "type", json_object_new_string("error"));
	json_object_object_add(o, "status", json_object_new_int(status));
	json_object_object_add(o, "code", json_object_new_string(code));
	json_object_object_add(o, "error", json_object_new_string(error));
	n = hostproto_fit(
	    snprintf(out, outlen, "%s\n", json_object_to_json_string_ext(o, HOSTPROTO_JSON_OUT)),
	    outlen);
	json_object_put(o);
	return n;
}

int hostproto_answer_parse(const char *line, size_t len, struct hostproto_answer *a)
{
	json_object *obj = NULL, *v;
	const char *t;

	memset(a, 0, sizeof(*a));
	if (len <= HOSTPROTO_ANSWER_MAX)
		obj = jsontext_parse(line, len, JSON_TOKENER_DEFAULT_DEPTH, NULL);
	v = hostproto_member(obj, "type");
	if (!json_object_is_type(obj, json_type_object) ||
	    !json_object_is_type(v, json_type_string))
		goto bad;
	t = json_object_get_string(v);
	if (strcmp(t, "accepted") == 0) {
		a->type = HOSTPROTO_ACCEPTED;
		v = hostproto_member(obj, "after");
		a->after = json_object_is_type(v, json_type_int) && json_object_get_int64(v) > 0
			       ? (uint64_t)json_object_get_int64(v)
			       : 0;
		v = hostproto_member(obj, "queued");
		a->queued = json_object_is_type(v, json_type_int) && json_object_get_int64(v) > 0
				? (uint64_t)json_object_get_int64(v)
				: 0;
	} else if (strcmp(t, "ok") == 0) {
		a->type = HOSTPROTO_OK;
	} else if (strcmp(t, "error") == 0) {
		a->type = HOSTPROTO_ERROR;
		v = hostproto_member(obj, "status");
		a->status = json_object_is_type(v, json_type_int) ? json_object_get_int(v) : 0;
		v = hostproto_member(obj, "code");
		a->code =
		    json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
		v = hostproto_member(obj, "error");
		a->error =
		    json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
	} else {
		goto bad;
	}
	a->obj = obj;
	return 0;
bad:
	json_object_put(obj);
	return -EBADMSG;
}

void hostproto_answer_release(struct hostproto_answer *a)
{
	json_object_put(a->obj);
	a->obj = NULL;
}

/* ---- events ------------------------------------------------------------------------------- */

static bool hostproto_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_';
}

bool hostproto_event_name_valid(const char *name, size_t len)
{
	if (len == 0 || len >= HOSTPROTO_NAME_MAX)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!hostproto_name_char(name[i]))
			return false;
	return true;
}

void hostproto_event_name(const char *type, char out[HOSTPROTO_NAME_MAX])
{
	size_t i = 0;

	if (type != NULL)
		for (; type[i] != '\0' && i + 1 < HOSTPROTO_NAME_MAX; i++)
			if (!((type[i] >= 'a' && type[i] <= 'z') || type[i] == '_'))
				break;
	if (type == NULL || type[i] != '\0' || i == 0)
		type = "unknown", i = HOSTPROTO_STRLEN("unknown");
	memcpy(out, type, i);
	out[i] = '\0';
}

/* The longest head (20 digits, the longest name) and its NUL fit. */
_Static_assert(sizeof(HOSTPROTO_LINE_START) - 1 + HOSTPROTO_ID_DIGITS +
		       sizeof(HOSTPROTO_EVENT_KEY) - 1 + HOSTPROTO_NAME_MAX - 1 +
		       sizeof(HOSTPROTO_DATA_KEY) - 1 + 1 <=
		   HOSTPROTO_EVENT_HEAD_MAX,
	       "an event head fits HOSTPROTO_EVENT_HEAD_MAX");

/* Appends the n bytes of s at out + *at. */
static void hostproto_put(char *out, size_t *at, const char *s, size_t n)
{
	memcpy(out + *at, s, n);
	*at += n;
}

int hostproto_event_head(uint64_t id, const char *name, char out[HOSTPROTO_EVENT_HEAD_MAX])
{
	char digits[HOSTPROTO_ID_DIGITS];
	size_t len = strlen(name), n = 0, at = 0;

	if (!hostproto_event_name_valid(name, len))
		return -EINVAL;
	/* One head for every event of a burst: put together by hand (snprintf was 5 % of
	 * agentd-host's instructions a line). */
	do {
		digits[n++] = (char)('0' + id % 10);
		id /= 10;
	} while (id > 0);
	hostproto_put(out, &at, HOSTPROTO_LINE_START, sizeof(HOSTPROTO_LINE_START) - 1);
	while (n > 0)
		out[at++] = digits[--n];
	hostproto_put(out, &at, HOSTPROTO_EVENT_KEY, sizeof(HOSTPROTO_EVENT_KEY) - 1);
	hostproto_put(out, &at, name, len);
	hostproto_put(out, &at, HOSTPROTO_DATA_KEY, sizeof(HOSTPROTO_DATA_KEY) - 1);
	out[at] = '\0';
	return (int)at;
}

/* Parses exactly len digits (1..HOSTPROTO_ID_DIGITS) as a uint64 without overflow. */
static int hostproto_digits(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;

	if (len == 0 || len > HOSTPROTO_ID_DIGITS)
		return -EINVAL;
	/* 20 digits fit only up to UINT64_MAX: compare as text (same length, so lexically). */
	if (len == HOSTPROTO_ID_DIGITS && memcmp(s, HOSTPROTO_U64_MAX, len) > 0)
		return -EINVAL;
	for (size_t i = 0; i < len; i++)
		v = v * 10 + (uint64_t)(s[i] - '0');
	*out = v;
	return 0;
}

int hostproto_event_parse(const char *line, size_t len, struct hostproto_event *ev)
{
	size_t i = HOSTPROTO_STRLEN(HOSTPROTO_LINE_START), start;

	if (len < i || memcmp(line, HOSTPROTO_LINE_START, i) != 0)
		return -EBADMSG;
	for (start = i; i < len && line[i] >= '0' && line[i] <= '9'; i++)
		;
	if (hostproto_digits(line + start, i - start, &ev->id) < 0)
		return -EBADMSG;
	if (len - i < HOSTPROTO_STRLEN(HOSTPROTO_EVENT_KEY) ||
	    memcmp(line + i, HOSTPROTO_EVENT_KEY, HOSTPROTO_STRLEN(HOSTPROTO_EVENT_KEY)) != 0)
		return -EBADMSG;
	i += HOSTPROTO_STRLEN(HOSTPROTO_EVENT_KEY);
	for (start = i; i < len && hostproto_name_char(line[i]); i++)
		;
	if (!hostproto_event_name_valid(line + start, i - start))
		return -EBADMSG;
	ev->name = line + start;
	ev->name_len = i - start;
	if (len - i < HOSTPROTO_STRLEN(HOSTPROTO_DATA_KEY) ||
	    memcmp(line + i, HOSTPROTO_DATA_KEY, HOSTPROTO_STRLEN(HOSTPROTO_DATA_KEY)) != 0)
		return -EBADMSG;
	i += HOSTPROTO_STRLEN(HOSTPROTO_DATA_KEY);
	/* What remains is DATA and the line's closing brace. */
	if (len - i < 2 || line[len - 1] != '}')
		return -EBADMSG;
	ev->data = line + i;
	ev->data_len = len - 1 - i;
	return 0;
}

/* ---- lines -------------------------------------------------------------------------------- */

void hostproto_reader_init(struct hostproto_reader *rd, size_t max)
{
	memset(rd, 0, sizeof(*rd));
	rd->max = max;
}

/* Keeps n more bytes of the unfinished line; over max the line is given up. Returns 0, or a
 * callback's value / -ENOMEM. */
static int hostproto_reader_keep(struct hostproto_reader *rd, const char *data, size_t n,
				 hostproto_line_fn fn, void *arg)
{
	size_t want;

	if (rd->skip)
		return 0;
	if (rd->len + n > rd->max) {
		size_t seen = rd->len + n;

		rd->skip = true;
		rd->len = 0;
		return fn(arg, NULL, seen);
	}
	if (rd->len + n > rd->cap) {
		char *grown;

		want = rd->cap > 0 ? rd->cap : HOSTPROTO_READ_MIN;
		while (want < rd->len + n)
			want *= 2;
		if (want > rd->max)
			want = rd->max;
		grown = realloc(rd->buf, want);
		if (grown == NULL) {
			rd->skip = true;
			rd->len = 0;
			return -ENOMEM;
		}
		rd->buf = grown;
		rd->cap = want;
	}
	memcpy(rd->buf + rd->len, data, n);
	rd->len += n;
	return 0;
}

int hostproto_reader_feed(struct hostproto_reader *rd, const char *data, size_t n,
			  hostproto_line_fn fn, void *arg)
{
	while (n > 0) {
		const char *nl = memchr(data, '\n', n);
		size_t take = nl != NULL ? (size_t)(nl - data) : n;
		int r = 0;

		if (nl == NULL)
			return hostproto_reader_keep(rd, data, n, fn, arg);
		if (rd->skip) {
			rd->skip = false;
		} else if (rd->len == 0) {
			/* The common case: a whole line in this read, passed where it is. */
			r = take > rd->max ? fn(arg, NULL, take) : fn(arg, data, take);
		} else {
			r = hostproto_reader_keep(rd, data, take, fn, arg);
			if (r == 0 && !rd->skip)
				r = fn(arg, rd->buf, rd->len);
			rd->skip = false;
			rd->len = 0;
		}
		if (r != 0)
			return r;
		data = nl + 1;
		n -= take + 1;
	}
	return 0;
}

size_t hostproto_reader_pending(const struct hostproto_reader *rd)
{
	return rd->len;
}

void hostproto_reader_free(struct hostproto_reader *rd)
{
	free(rd->buf);
	rd->buf = NULL;
	rd->len = rd->cap = 0;
}
