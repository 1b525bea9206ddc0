#include "state.h"

#include "fsutil.h"
#include "hostproto.h"
#include "jsontext.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define STATE_DEPTH      8
#define STATE_KEY_MODULO 2176782336u /* 36^6: keys are "k" and at most six base-36 digits */

struct state *state_create(void)
{
	return calloc(1, sizeof(struct state));
}

static void state_approval_free(struct state_approval *a)
{
	free(a->text);
	free(a->suggestions);
}

void state_destroy(struct state *st)
{
	if (st == NULL)
		return;
	for (unsigned i = 0; i < st->napprovals; i++)
		state_approval_free(&st->approvals[i]);
	for (unsigned i = 0; i < st->nturns; i++)
		free(st->turns[i].text);
	free(st);
}

/* ---- the JSON form ------------------------------------------------------------------------ */

static json_object *state_strings(const char (*list)[SESSION_ID_MAX + 1], unsigned n)
{
	json_object *a = json_object_new_array();

	for (unsigned i = 0; a != NULL && i < n; i++)
		json_object_array_add(a, json_object_new_string(list[i]));
	return a;
}

char *state_to_json(const struct state *st)
{
	json_object *o = json_object_new_object(), *a, *e, *sugg;
	char *text = NULL;

	if (o == NULL)
		return NULL;
	json_object_object_add(o, "version", json_object_new_int(STATE_VERSION));
	json_object_object_add(o, "offset", json_object_new_int64(st->offset));
	json_object_object_add(o, "eventsId", json_object_new_uint64(st->events_id));
	json_object_object_add(o, "nextKey", json_object_new_int64(st->next_key));
	a = json_object_new_array();
	for (unsigned i = 0; i < st->nrefused; i++)
		json_object_array_add(a, json_object_new_int64(st->refused[i]));
	json_object_object_add(o, "refused", a);
	a = json_object_new_array();
	for (unsigned i = 0; i < st->nchats; i++) {
		const struct state_chat *c = &st->chats[i];

		e = json_object_new_object();
		json_object_object_add(e, "chat", json_object_new_int64(c->chat));
		json_object_object_add(e, "current", json_object_new_string(c->current));
		json_object_object_add(e, "follows", state_strings(c->follows, c->nfollows));
		json_object_array_add(a, e);
	}
	json_object_object_add(o, "chats", a);
	a = json_object_new_array();
	for (unsigned i = 0; i < st->napprovals; i++) {
		const struct state_approval *p = &st->approvals[i];

		e = json_object_new_object();
		json_object_object_add(e, "key", json_object_new_string(p->key));
		json_object_object_add(e, "chat", json_object_new_int64(p->chat));
		json_object_object_add(e, "message", json_object_new_int64(p->message));
		json_object_object_add(e, "session", json_object_new_string(p->session));
		json_object_object_add(e, "requestId", json_object_new_string(p->request_id));
		json_object_object_add(e, "tool", json_object_new_string(p->tool));
		json_object_object_add(e, "terminal", json_object_new_boolean(p->terminal));
		json_object_object_add(e, "text", json_object_new_string(p->text ? p->text : ""));
		if (p->suggestions != NULL) {
			sugg = json_tokener_parse(p->suggestions);
			if (sugg != NULL)
				json_object_object_add(e, "suggestions", sugg);
		}
		json_object_array_add(a, e);
	}
	json_object_object_add(o, "approvals", a);
	a = json_object_new_array();
	for (unsigned i = 0; i < st->nturns; i++) {
		const struct state_turn *t = &st->turns[i];

		e = json_object_new_object();
		json_object_object_add(e, "session", json_object_new_string(t->session));
		json_object_object_add(e, "chat", json_object_new_int64(t->chat));
		json_object_object_add(e, "user", json_object_new_int64(t->user));
		json_object_object_add(e, "message", json_object_new_int64(t->message));
		json_object_object_add(e, "after", json_object_new_uint64(t->after));
		json_object_object_add(e, "ended", json_object_new_boolean(t->ended));
		json_object_object_add(e, "shown", json_object_new_uint64(t->shown));
		json_object_object_add(e, "text", json_object_new_string(t->text ? t->text : ""));
		json_object_array_add(a, e);
	}
	json_object_object_add(o, "turns", a);
	{
		const char *s = json_object_to_json_string_ext(
		    o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);

		if (s != NULL)
			text = strdup(s);
	}
	json_object_put(o);
	return text;
}

/* Field readers: each fails with cause naming the field. */
static json_object *st_get(json_object *o, const char *key, json_type type, bool required,
			   const char *where, struct cause *cause, int *r)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || v == NULL) {
		if (required)
			*r = cause_fail(cause, EINVAL, "%s: \"%s\" is missing", where, key);
		return NULL;
	}
	if (!json_object_is_type(v, type)) {
		*r = cause_fail(cause, EINVAL, "%s: \"%s\" has the wrong type", where, key);
		return NULL;
	}
	return v;
}

static int st_int64(json_object *o, const char *key, int64_t min, int64_t *out, const char *where,
		    struct cause *cause)
{
	int r = 0;
	json_object *v = st_get(o, key, json_type_int, true, where, cause, &r);

	if (v == NULL)
		return r;
	errno = 0;
	*out = json_object_get_int64(v);
	if (errno != 0 || *out < min)
		return cause_fail(cause, EINVAL, "%s: \"%s\" is out of range", where, key);
	return 0;
}

static int st_string(json_object *o, const char *key, char *out, size_t outlen,
		     bool (*valid)(const char *), const char *where, struct cause *cause)
{
	int r = 0;
	json_object *v = st_get(o, key, json_type_string, true, where, cause, &r);
	const char *s;

	if (v == NULL)
		return r;
	s = json_object_get_string(v);
	if (strlen(s) >= outlen || (valid != NULL && !valid(s)))
		return cause_fail(cause, EINVAL, "%s: \"%s\" is not valid", where, key);
	memcpy(out, s, strlen(s) + 1);
	return 0;
}

static bool st_session_or_empty(const char *s)
{
	return *s == '\0' || session_id_valid(s);
}

static bool st_key_valid(const char *s)
{
	size_t n = strlen(s);

	if (n < 2 || n > STATE_KEY_MAX || s[0] != 'k')
		return false;
	for (size_t i = 1; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'z')))
			return false;
	return true;
}

static bool st_tool_valid(const char *s)
{
	return strlen(s) <= SESSION_TOOL_NAME_MAX;
}

static int st_text(json_object *o, const char *key, char **out, const char *where,
		   struct cause *cause)
{
	int r = 0;
	json_object *v = st_get(o, key, json_type_string, true, where, cause, &r);

	if (v == NULL)
		return r;
	if ((size_t)json_object_get_string_len(v) > STATE_TEXT_MAX)
		return cause_fail(cause, EINVAL, "%s: \"%s\" is too long", where, key);
	*out = strdup(json_object_get_string(v));
	return *out != NULL ? 0 : -ENOMEM;
}

static int st_chats(struct state *st, json_object *a, struct cause *cause)
{
	size_t n = json_object_array_length(a);
	int r;

	if (n > STATE_CHATS_MAX)
		return cause_fail(cause, EINVAL, "more than %d chats", STATE_CHATS_MAX);
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(a, i), *f;
		struct state_chat *c = &st->chats[st->nchats];

		if (!json_object_is_type(e, json_type_object))
			return cause_fail(cause, EINVAL, "chats[%zu] is not an object", i);
		if ((r = st_int64(e, "chat", INT64_MIN, &c->chat, "chats", cause)) < 0 ||
		    (r = st_string(e, "current", c->current, sizeof(c->current),
				   st_session_or_empty, "chats", cause)) < 0)
			return r;
		r = 0;
		f = st_get(e, "follows", json_type_array, true, "chats", cause, &r);
		if (f == NULL)
			return r;
		if (json_object_array_length(f) > STATE_FOLLOW_MAX)
			return cause_fail(cause, EINVAL, "chats: too many follows");
		for (size_t j = 0; j < json_object_array_length(f); j++) {
			json_object *s = json_object_array_get_idx(f, j);

			if (!json_object_is_type(s, json_type_string) ||
			    !session_id_valid(json_object_get_string(s)))
				return cause_fail(cause, EINVAL,
						  "chats: a follow is not a session id");
			memcpy(c->follows[c->nfollows++], json_object_get_string(s),
			       strlen(json_object_get_string(s)) + 1);
		}
		if (c->chat == 0)
			return cause_fail(cause, EINVAL, "chats: chat 0");
		st->nchats++;
	}
	return 0;
}

static int st_approvals(struct state *st, json_object *a, struct cause *cause)
{
	size_t n = json_object_array_length(a);
	int r;

	if (n > STATE_APPROVALS_MAX)
		return cause_fail(cause, EINVAL, "more than %d approvals", STATE_APPROVALS_MAX);
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(a, i), *v;
		struct state_approval *p = &st->approvals[st->napprovals];

		if (!json_object_is_type(e, json_type_object))
			return cause_fail(cause, EINVAL, "approvals[%zu] is not an object", i);
		/* Counted at once: what is parsed so far is freed with the state on failure. */
		memset(p, 0, sizeof(*p));
		st->napprovals++;
		if ((r = st_string(e, "key", p->key, sizeof(p->key), st_key_valid, "approvals",
				   cause)) < 0 ||
		    (r = st_int64(e, "chat", INT64_MIN, &p->chat, "approvals", cause)) < 0 ||
		    (r = st_int64(e, "message", 0, &p->message, "approvals", cause)) < 0 ||
		    (r = st_string(e, "session", p->session, sizeof(p->session), session_id_valid,
				   "approvals", cause)) < 0 ||
		    (r = st_string(e, "requestId", p->request_id, sizeof(p->request_id),
				   hostproto_request_id_valid, "approvals", cause)) < 0 ||
		    (r = st_string(e, "tool", p->tool, sizeof(p->tool), st_tool_valid, "approvals",
				   cause)) < 0 ||
		    (r = st_text(e, "text", &p->text, "approvals", cause)) < 0)
			return r;
		r = 0;
		v = st_get(e, "terminal", json_type_boolean, true, "approvals", cause, &r);
		if (v == NULL)
			return r;
		p->terminal = json_object_get_boolean(v);
		v = st_get(e, "suggestions", json_type_array, false, "approvals", cause, &r);
		if (r < 0)
			return r;
		if (v != NULL) {
			const char *s = json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN);

			if (s == NULL || strlen(s) > STATE_SUGGESTIONS_MAX)
				return cause_fail(cause, EINVAL, "approvals: suggestions too long");
			if ((p->suggestions = strdup(s)) == NULL)
				return -ENOMEM;
		}
	}
	return 0;
}

static int st_turns(struct state *st, json_object *a, struct cause *cause)
{
	size_t n = json_object_array_length(a);
	int r;

	if (n > STATE_TURNS_MAX)
		return cause_fail(cause, EINVAL, "more than %d turns", STATE_TURNS_MAX);
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(a, i), *v;
		struct state_turn *t = &st->turns[st->nturns];
		int64_t after;

		if (!json_object_is_type(e, json_type_object))
			return cause_fail(cause, EINVAL, "turns[%zu] is not an object", i);
		memset(t, 0, sizeof(*t));
		st->nturns++;
		if ((r = st_string(e, "session", t->session, sizeof(t->session), session_id_valid,
				   "turns", cause)) < 0 ||
		    (r = st_int64(e, "chat", INT64_MIN, &t->chat, "turns", cause)) < 0 ||
		    (r = st_int64(e, "user", 1, &t->user, "turns", cause)) < 0 ||
		    (r = st_int64(e, "message", 0, &t->message, "turns", cause)) < 0 ||
		    (r = st_int64(e, "after", 1, &after, "turns", cause)) < 0 ||
		    (r = st_text(e, "text", &t->text, "turns", cause)) < 0)
			return r;
		t->after = (uint64_t)after;
		r = 0;
		v = st_get(e, "ended", json_type_boolean, true, "turns", cause, &r);
		if (v == NULL)
			return r;
		t->ended = json_object_get_boolean(v);
		v = st_get(e, "shown", json_type_int, false, "turns", cause, &r);
		if (r < 0)
			return r;
		t->shown = v != NULL ? json_object_get_uint64(v) : 0;
	}
	return 0;
}

int state_from_json(struct state *st, const char *text, size_t len, struct cause *cause)
{
	json_object *o = jsontext_parse(text, len, STATE_DEPTH, cause), *v;
	int64_t n;
	int r = 0;

	if (o == NULL)
		return -EINVAL;
	if (!json_object_is_type(o, json_type_object)) {
		r = cause_fail(cause, EINVAL, "not a JSON object");
		goto out;
	}
	if ((r = st_int64(o, "version", 1, &n, "state", cause)) < 0)
		goto out;
	if (n != STATE_VERSION) {
		r = cause_fail(cause, EINVAL, "version %" PRId64 " is not %d", n, STATE_VERSION);
		goto out;
	}
	if ((r = st_int64(o, "offset", 0, &st->offset, "state", cause)) < 0 ||
	    (r = st_int64(o, "eventsId", 0, &n, "state", cause)) < 0)
		goto out;
	st->events_id = (uint64_t)n;
	if ((r = st_int64(o, "nextKey", 0, &n, "state", cause)) < 0)
		goto out;
	st->next_key = (uint32_t)(n % STATE_KEY_MODULO);
	if ((v = st_get(o, "refused", json_type_array, true, "state", cause, &r)) == NULL)
		goto out;
	if (json_object_array_length(v) > STATE_REFUSED_MAX) {
		r = cause_fail(cause, EINVAL, "more than %d refused users", STATE_REFUSED_MAX);
		goto out;
	}
	for (size_t i = 0; i < json_object_array_length(v); i++) {
		json_object *u = json_object_array_get_idx(v, i);

		if (!json_object_is_type(u, json_type_int)) {
			r = cause_fail(cause, EINVAL, "refused: not a user id");
			goto out;
		}
		st->refused[st->nrefused++] = json_object_get_int64(u);
	}
	if ((v = st_get(o, "chats", json_type_array, true, "state", cause, &r)) == NULL ||
	    (r = st_chats(st, v, cause)) < 0)
		goto out;
	if ((v = st_get(o, "approvals", json_type_array, true, "state", cause, &r)) == NULL ||
	    (r = st_approvals(st, v, cause)) < 0)
		goto out;
	if ((v = st_get(o, "turns", json_type_array, true, "state", cause, &r)) == NULL ||
	    (r = st_turns(st, v, cause)) < 0)
		goto out;
out:
	json_object_put(o);
	return r;
}

int state_load(struct state *st, const char *path, struct cause *cause)
{
	char *text = NULL;
	size_t len = 0;
	int r = fsutil_read_file(path, STATE_FILE_MAX, &text, &len);

	if (r == -ENOENT)
		return 0;
	if (r == -EINVAL)
		return cause_fail(cause, EINVAL, "%s is not a regular file", path);
	if (r == -EFBIG)
		return cause_fail(cause, EFBIG, "%s is larger than %d bytes", path, STATE_FILE_MAX);
	if (r < 0)
		return cause_fail(cause, -r, "cannot read %s: %s", path, strerror(-r));
	r = state_from_json(st, text, len, cause);
	if (r == -EINVAL) {
		struct cause inner = *cause;

		cause_set(cause, "%s is not a state file of agentd-telegram: %s", path, inner.msg);
	}
	free(text);
	return r;
}

int state_save(const struct state *st, const char *path, struct cause *cause)
{
	char *text = state_to_json(st);
	int r;

	if (text == NULL)
		return cause_fail(cause, ENOMEM, "out of memory writing the state");
	r = fsutil_write_atomic(path, text, 0600, true);
	free(text);
	if (r < 0)
		return cause_fail(cause, -r, "cannot write %s: %s", path, strerror(-r));
	return 0;
}

/* ---- chats, follows, refusals -------------------------------------------------------------- */

struct state_chat *state_chat(struct state *st, int64_t chat, bool create)
{
	struct state_chat *c;

	for (unsigned i = 0; i < st->nchats; i++)
		if (st->chats[i].chat == chat)
			return &st->chats[i];
	if (!create)
		return NULL;
	if (st->nchats == STATE_CHATS_MAX) {
		memmove(&st->chats[0], &st->chats[1], (STATE_CHATS_MAX - 1) * sizeof(st->chats[0]));
		st->nchats--;
	}
	c = &st->chats[st->nchats++];
	memset(c, 0, sizeof(*c));
	c->chat = chat;
	return c;
}

static void state_unfollow(struct state_chat *c, const char *session)
{
	for (unsigned i = 0; i < c->nfollows; i++) {
		if (strcmp(c->follows[i], session) != 0)
			continue;
		memmove(c->follows[i], c->follows[i + 1],
			(c->nfollows - i - 1) * sizeof(c->follows[0]));
		c->nfollows--;
		return;
	}
}

void state_follow(struct state_chat *c, const char *session)
{
	state_unfollow(c, session);
	if (c->nfollows == STATE_FOLLOW_MAX) {
		memmove(c->follows[0], c->follows[1],
			(STATE_FOLLOW_MAX - 1) * sizeof(c->follows[0]));
		c->nfollows--;
	}
	snprintf(c->follows[c->nfollows++], sizeof(c->follows[0]), "%s", session);
}

bool state_follows(const struct state_chat *c, const char *session)
{
	for (unsigned i = 0; i < c->nfollows; i++)
		if (strcmp(c->follows[i], session) == 0)
			return true;
	return false;
}

void state_unfollow_all(struct state *st, const char *session)
{
	for (unsigned i = 0; i < st->nchats; i++) {
		state_unfollow(&st->chats[i], session);
		if (strcmp(st->chats[i].current, session) == 0)
			st->chats[i].current[0] = '\0';
	}
}

bool state_refused(const struct state *st, int64_t user)
{
	for (unsigned i = 0; i < st->nrefused; i++)
		if (st->refused[i] == user)
			return true;
	return false;
}

bool state_refuse(struct state *st, int64_t user)
{
	if (state_refused(st, user))
		return false;
	if (st->nrefused == STATE_REFUSED_MAX) {
		memmove(&st->refused[0], &st->refused[1],
			(STATE_REFUSED_MAX - 1) * sizeof(st->refused[0]));
		st->nrefused--;
	}
	st->refused[st->nrefused++] = user;
	return true;
}

/* ---- approvals ----------------------------------------------------------------------------- */

static void state_new_key(struct state *st, char out[STATE_KEY_MAX + 1])
{
	static const char digits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
	char rev[8];
	uint32_t k;
	size_t n;

	/* A key in use is skipped: a wrapped counter never hands out a live one twice. */
	do {
		k = st->next_key;
		st->next_key = (st->next_key + 1) % STATE_KEY_MODULO;
		n = 0;
		do {
			rev[n++] = digits[k % 36];
			k /= 36;
		} while (k > 0);
		out[0] = 'k';
		for (size_t i = 0; i < n; i++)
			out[1 + i] = rev[n - 1 - i];
		out[1 + n] = '\0';
	} while (state_approval_by_key(st, out) != NULL);
}

struct state_approval *state_approval_add(struct state *st, int64_t chat, const char *session,
					  const char *request_id, const char *tool, bool terminal,
					  const char *text, const char *suggestions)
{
	struct state_approval *p;
	char key[STATE_KEY_MAX + 1];
	char *t = strdup(text), *s = suggestions != NULL ? strdup(suggestions) : NULL;

	if (t == NULL || (suggestions != NULL && s == NULL)) {
		free(t);
		free(s);
		return NULL;
	}
	if (st->napprovals == STATE_APPROVALS_MAX)
		state_approval_remove(st, &st->approvals[0]);
	state_new_key(st, key); /* before the entry exists: it must not find itself */
	p = &st->approvals[st->napprovals++];
	memset(p, 0, sizeof(*p));
	memcpy(p->key, key, sizeof(key));
	p->chat = chat;
	snprintf(p->session, sizeof(p->session), "%s", session);
	snprintf(p->request_id, sizeof(p->request_id), "%s", request_id);
	session_copy_cut(p->tool, sizeof(p->tool), tool);
	p->terminal = terminal;
	p->text = t;
	p->suggestions = s;
	return p;
}

struct state_approval *state_approval_by_key(struct state *st, const char *key)
{
	for (unsigned i = 0; i < st->napprovals; i++)
		if (strcmp(st->approvals[i].key, key) == 0)
			return &st->approvals[i];
	return NULL;
}

struct state_approval *state_approval_find(struct state *st, int64_t chat, const char *session,
					   const char *request_id)
{
	for (unsigned i = 0; i < st->napprovals; i++) {
		struct state_approval *p = &st->approvals[i];

		if (p->chat == chat && strcmp(p->session, session) == 0 &&
		    strcmp(p->request_id, request_id) == 0)
			return p;
	}
	return NULL;
}

void state_approval_remove(struct state *st, struct state_approval *a)
{
	size_t i = (size_t)(a - st->approvals);

	state_approval_free(a);
	memmove(&st->approvals[i], &st->approvals[i + 1],
		(st->napprovals - i - 1) * sizeof(st->approvals[0]));
	st->napprovals--;
}

/* ---- turns ---------------------------------------------------------------------------------- */

struct state_turn *state_turn(struct state *st, int64_t chat, const char *session, bool create)
{
	struct state_turn *t;

	for (unsigned i = 0; i < st->nturns; i++)
		if (st->turns[i].chat == chat && strcmp(st->turns[i].session, session) == 0)
			return &st->turns[i];
	if (!create || st->nturns == STATE_TURNS_MAX)
		return NULL;
	t = &st->turns[st->nturns++];
	memset(t, 0, sizeof(*t));
	t->chat = chat;
	snprintf(t->session, sizeof(t->session), "%s", session);
	return t;
}

int state_turn_set_text(struct state_turn *t, const char *text)
{
	char *copy = strdup(text);

	if (copy == NULL)
		return -ENOMEM;
	free(t->text);
	t->text = copy;
	return 0;
}

void state_turn_remove(struct state *st, struct state_turn *t)
{
	size_t i = (size_t)(t - st->turns);

	free(t->text);
	memmove(&st->turns[i], &st->turns[i + 1], (st->nturns - i - 1) * sizeof(st->turns[0]));
	st->nturns--;
}
