#include "approvals.h"

#include "hostproto.h"
#include "jsontext.h"
#include "log.h"
#include "render.h"
#include "session.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define APPROVAL_DATA_MAX 64             /* Telegram's limit on callback_data */
#define APPROVAL_TEXT_MAX STATE_TEXT_MAX /* bounded by render_permission's cuts anyway */

struct approval_op {
	struct bot *b;
	char key[STATE_KEY_MAX + 1];
	approvals_done_fn done;
	void *arg;
	bool remove; /* the approval ends with this call */
};

struct approval_press {
	struct bot *b;
	char key[STATE_KEY_MAX + 1];
	char callback_id[128];
	char who[RENDER_NAME_MAX + 1];
	char action;
};

static struct approval_op *ap_op(struct bot *b, const char *key, approvals_done_fn done, void *arg,
				 bool remove)
{
	struct approval_op *op = calloc(1, sizeof(*op));

	if (op == NULL)
		return NULL;
	op->b = b;
	snprintf(op->key, sizeof(op->key), "%s", key);
	op->done = done;
	op->arg = arg;
	op->remove = remove;
	return op;
}

static json_object *ap_keyboard(const struct state_approval *a)
{
	const char *texts[3], *data[3];
	char allow[APPROVAL_DATA_MAX], session[APPROVAL_DATA_MAX], deny[APPROVAL_DATA_MAX];
	size_t n = 0;

	snprintf(allow, sizeof(allow), "%s:a", a->key);
	snprintf(session, sizeof(session), "%s:s", a->key);
	snprintf(deny, sizeof(deny), "%s:d", a->key);
	texts[n] = "Allow";
	data[n++] = allow;
	if (a->suggestions != NULL) {
		texts[n] = "Allow for session";
		data[n++] = session;
	}
	texts[n] = "Deny";
	data[n++] = deny;
	return botapi_keyboard(texts, data, n);
}

/* The approval's message was sent (or not). */
static void ap_sent(void *arg, const struct outbox_result *r)
{
	struct approval_op *op = arg;
	struct state_approval *a = state_approval_by_key(op->b->st, op->key);

	if (a != NULL) {
		if (r->ok && r->message_id > 0) {
			a->message = r->message_id;
		} else {
			log_warn("the permission message of %s in chat %" PRId64
				 " was not sent: %s",
				 a->session, a->chat, r->description);
			state_approval_remove(op->b->st, a);
		}
		bot_changed(op->b);
	}
	if (op->done != NULL)
		op->done(op->arg);
	free(op);
}

/* The message's final edit is done: the approval ends. */
static void ap_edited(void *arg, const struct outbox_result *r)
{
	struct approval_op *op = arg;
	struct state_approval *a = state_approval_by_key(op->b->st, op->key);

	(void)r;
	if (a != NULL && op->remove) {
		state_approval_remove(op->b->st, a);
		bot_changed(op->b);
	}
	if (op->done != NULL)
		op->done(op->arg);
	free(op);
}

/* Sends a's message. Returns 1 when queued. */
static unsigned ap_send(struct bot *b, struct state_approval *a, approvals_done_fn done, void *arg)
{
	struct approval_op *op = ap_op(b, a->key, done, arg, false);

	if (op == NULL || outbox_send(b->out, a->chat, a->text, ap_keyboard(a), ap_sent, op) < 0) {
		log_error("cannot queue the permission message of %s", a->session);
		free(op);
		return 0;
	}
	return 1;
}

/* Edits a's message to its text and the decision line, without buttons; the approval ends
 * when it is done. Returns 1 when queued. */
static unsigned ap_decide(struct bot *b, struct state_approval *a, const char *decision,
			  approvals_done_fn done, void *arg)
{
	struct approval_op *op;
	struct buf text;
	unsigned n = 0;

	if (a->message == 0) {
		/* Never shown: nothing to edit. */
		state_approval_remove(b->st, a);
		bot_changed(b);
		return 0;
	}
	op = ap_op(b, a->key, done, arg, true);
	buf_init(&text, 0);
	a->busy = true;
	if (op != NULL && buf_addf(&text, "%s\n\n%s", a->text, decision) == 0 &&
	    outbox_edit(b->out, a->chat, a->message, buf_str(&text), NULL, ap_edited, op) == 0) {
		n = 1;
	} else {
		log_error("cannot queue the edit of the permission message of %s", a->session);
		free(op);
		state_approval_remove(b->st, a);
		bot_changed(b);
	}
	buf_free(&text);
	return n;
}

unsigned approvals_request(struct bot *b, const char *session, json_object *data,
			   approvals_done_fn done, void *arg)
{
	const char *rid = jsontext_str(data, "requestId"), *tool = jsontext_str(data, "toolName");
	const char *mode = jsontext_str(data, "mode");
	bool terminal = mode != NULL && strcmp(mode, "terminal") == 0;
	json_object *sugg = NULL;
	char *suggestions = NULL;
	struct buf text;
	unsigned n = 0;

	if (rid == NULL || !hostproto_request_id_valid(rid))
		return 0;
	if (json_object_object_get_ex(data, "suggestions", &sugg) &&
	    json_object_is_type(sugg, json_type_array) && json_object_array_length(sugg) > 0 &&
	    json_object_array_length(sugg) <= 16) {
		const char *s = json_object_to_json_string_ext(sugg, JSON_C_TO_STRING_PLAIN);

		if (s != NULL && strlen(s) <= STATE_SUGGESTIONS_MAX)
			suggestions = strdup(s);
	}
	buf_init(&text, APPROVAL_TEXT_MAX);
	if (render_permission(&text, session, data, terminal ? b->set->web_url : NULL) < 0)
		buf_adds(&text, "…");
	for (unsigned i = 0; i < b->st->nchats; i++) {
		struct state_chat *c = &b->st->chats[i];
		struct state_approval *a;

		if (!state_follows(c, session))
			continue;
		a = state_approval_find(b->st, c->chat, session, rid);
		if (a != NULL && a->message > 0)
			continue; /* shown before (a replay) */
		if (a == NULL) {
			a = state_approval_add(b->st, c->chat, session, rid, tool ? tool : "",
					       terminal, buf_str(&text), suggestions);
			if (a == NULL) {
				log_error("out of memory keeping a permission request");
				continue;
			}
			bot_changed(b);
		}
		n += ap_send(b, a, done, arg);
	}
	free(suggestions);
	buf_free(&text);
	return n;
}

unsigned approvals_resolved(struct bot *b, const char *session, json_object *data,
			    approvals_done_fn done, void *arg)
{
	const char *rid = jsontext_str(data, "requestId");
	char decision[RENDER_DECISION_MAX];
	unsigned n = 0;

	if (rid == NULL)
		return 0;
	render_decision(decision, sizeof(decision), jsontext_str(data, "behavior"),
			jsontext_str(data, "by"), NULL, false);
	for (unsigned i = 0; i < b->st->napprovals;) {
		struct state_approval *a = &b->st->approvals[i];
		unsigned before = b->st->napprovals;

		if (a->busy || strcmp(a->session, session) != 0 ||
		    strcmp(a->request_id, rid) != 0) {
			i++;
			continue;
		}
		n += ap_decide(b, a, decision, done, arg);
		if (b->st->napprovals == before)
			i++; /* still there (its edit is queued) */
	}
	return n;
}

/* The entry of sessions for id, or NULL. */
static json_object *ap_session(json_object *sessions, const char *id)
{
	for (size_t i = 0; i < json_object_array_length(sessions); i++) {
		json_object *s = json_object_array_get_idx(sessions, i);
		const char *sid = jsontext_str(s, "id");

		if (sid != NULL && strcmp(sid, id) == 0)
			return s;
	}
	return NULL;
}

/* The pending entry of session s for rid, or NULL. */
static json_object *ap_pending(json_object *s, const char *rid)
{
	json_object *pending;

	if (s == NULL || !json_object_object_get_ex(s, "pending", &pending) ||
	    !json_object_is_type(pending, json_type_array))
		return NULL;
	for (size_t i = 0; i < json_object_array_length(pending); i++) {
		json_object *p = json_object_array_get_idx(pending, i);
		const char *id = jsontext_str(p, "requestId");

		if (id != NULL && strcmp(id, rid) == 0)
			return p;
	}
	return NULL;
}

unsigned approvals_snapshot(struct bot *b, json_object *sessions, approvals_done_fn done, void *arg)
{
	unsigned n = 0;

	if (!json_object_is_type(sessions, json_type_array))
		return 0;
	/* Messages of requests that ended while the bot was away. */
	for (unsigned i = 0; i < b->st->napprovals;) {
		struct state_approval *a = &b->st->approvals[i];
		unsigned before = b->st->napprovals;
		json_object *s = ap_session(sessions, a->session);

		if (a->busy || ap_pending(s, a->request_id) != NULL) {
			i++;
			continue;
		}
		n += ap_decide(b, a, "No longer pending: it was answered or withdrawn meanwhile.",
			       done, arg);
		if (b->st->napprovals == before)
			i++;
	}
	/* Requests pending now that a following chat has no message for. */
	for (size_t i = 0; i < json_object_array_length(sessions); i++)
		n += approvals_pending(b, json_object_array_get_idx(sessions, i), done, arg);
	return n;
}

unsigned approvals_pending(struct bot *b, json_object *s, approvals_done_fn done, void *arg)
{
	const char *id = jsontext_str(s, "id"), *mode = jsontext_str(s, "mode");
	json_object *pending;
	unsigned n = 0;

	if (id == NULL || !session_id_valid(id) ||
	    !json_object_object_get_ex(s, "pending", &pending) ||
	    !json_object_is_type(pending, json_type_array))
		return 0;
	for (size_t j = 0; j < json_object_array_length(pending); j++) {
		json_object *p = json_object_array_get_idx(pending, j), *data;
		const char *v;

		/* As a permission event says it (no input: the description shows it). */
		data = json_object_new_object();
		if ((v = jsontext_str(p, "requestId")) != NULL)
			json_object_object_add(data, "requestId", json_object_new_string(v));
		if ((v = jsontext_str(p, "toolName")) != NULL)
			json_object_object_add(data, "toolName", json_object_new_string(v));
		if ((v = jsontext_str(p, "description")) != NULL)
			json_object_object_add(data, "description", json_object_new_string(v));
		if (mode != NULL && strcmp(mode, "terminal") == 0)
			json_object_object_add(data, "mode", json_object_new_string(mode));
		n += approvals_request(b, id, data, done, arg);
		json_object_put(data);
	}
	return n;
}

/* ---- presses ----------------------------------------------------------------------------------
 */

static void ap_answer(struct bot *b, const char *callback_id, const char *text)
{
	if (outbox_answer(b->out, callback_id, text, NULL, NULL) < 0)
		log_error("cannot queue an answer to a button press");
}

static void ap_press_done(void *arg, const struct agentc_answer *r)
{
	struct approval_press *p = arg;
	struct bot *b = p->b;
	struct state_approval *a = state_approval_by_key(b->st, p->key);
	char decision[RENDER_DECISION_MAX + AGENTC_ERROR_MAX];

	if (r->aborted) {
		free(p);
		return;
	}
	if (r->status == 200) {
		ap_answer(b, p->callback_id,
			  p->action == 'd'   ? "Denied"
			  : p->action == 's' ? "Allowed for this session"
					     : "Allowed");
		if (a != NULL) {
			render_decision(decision, sizeof(decision),
					p->action == 'd' ? "deny" : "allow", NULL, p->who,
					p->action == 's');
			ap_decide(b, a, decision, NULL, NULL);
		}
	} else if (r->status == 409 || r->status == 404) {
		ap_answer(b, p->callback_id,
			  r->status == 409 ? "Someone answered it first"
					   : "It is no longer pending");
		if (a != NULL) {
			if (r->status == 409)
				snprintf(decision, sizeof(decision), "Answered elsewhere first: %s",
					 r->err);
			else
				snprintf(decision, sizeof(decision),
					 "No longer pending: it was withdrawn.");
			ap_decide(b, a, decision, NULL, NULL);
		}
	} else {
		char msg[AGENTC_ERROR_MAX + 64];

		snprintf(msg, sizeof(msg), "%s; try again", r->err);
		ap_answer(b, p->callback_id, msg);
		if (a != NULL)
			a->busy = false;
	}
	free(p);
}

void approvals_press(struct bot *b, const struct botapi_update *u)
{
	const char *data = u->callback_data, *colon;
	char key[STATE_KEY_MAX + 1], path[128 + SESSION_ID_MAX + SESSION_REQUEST_ID_MAX];
	struct state_approval *a = NULL;
	struct approval_press *p;
	json_object *body;
	size_t klen;

	colon = data != NULL ? strchr(data, ':') : NULL;
	klen = colon != NULL ? (size_t)(colon - data) : 0;
	if (colon != NULL && klen > 0 && klen <= STATE_KEY_MAX && colon[1] != '\0' &&
	    colon[2] == '\0' && strchr("asd", colon[1]) != NULL) {
		memcpy(key, data, klen);
		key[klen] = '\0';
		a = state_approval_by_key(b->st, key);
	}
	if (a == NULL || a->chat != u->chat || a->message != u->message_id ||
	    (colon[1] == 's' && a->suggestions == NULL)) {
		ap_answer(b, u->callback_id, "This request is no longer pending.");
		return;
	}
	if (a->busy) {
		ap_answer(b, u->callback_id, "It is being answered already.");
		return;
	}
	p = calloc(1, sizeof(*p));
	body = json_object_new_object();
	if (p == NULL || body == NULL) {
		free(p);
		json_object_put(body);
		ap_answer(b, u->callback_id, "Out of memory; try again");
		return;
	}
	p->b = b;
	p->action = colon[1];
	snprintf(p->key, sizeof(p->key), "%s", key);
	snprintf(p->callback_id, sizeof(p->callback_id), "%s", u->callback_id);
	snprintf(p->who, sizeof(p->who), "%s", u->user_name);
	if (p->action == 'd') {
		char why[RENDER_NAME_MAX + 64];

		snprintf(why, sizeof(why), "Denied from Telegram by %s", u->user_name);
		json_object_object_add(body, "behavior", json_object_new_string("deny"));
		json_object_object_add(body, "message", json_object_new_string(why));
	} else {
		json_object_object_add(body, "behavior", json_object_new_string("allow"));
	}
	if (p->action == 's') {
		/* claude's own suggestions, for this session only: nothing is written to its
		 * settings files. */
		json_object *list = json_tokener_parse(a->suggestions);

		for (size_t i = 0; list != NULL && i < json_object_array_length(list); i++) {
			json_object *s = json_object_array_get_idx(list, i), *d;

			if (json_object_is_type(s, json_type_object) &&
			    json_object_object_get_ex(s, "destination", &d))
				json_object_object_add(s, "destination",
						       json_object_new_string("session"));
		}
		if (list != NULL)
			json_object_object_add(body, "updatedPermissions", list);
	}
	snprintf(path, sizeof(path), "/sessions/%s/permissions/%s", a->session, a->request_id);
	if (agentc_request(b->agentd, "POST", path, body, u->user, ap_press_done, p) == NULL) {
		free(p);
		ap_answer(b, u->callback_id, "Out of memory; try again");
		return;
	}
	a->busy = true;
}
