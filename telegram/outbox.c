#include "outbox.h"

#include "log.h"
#include "split.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum outbox_kind { OUTBOX_SEND, OUTBOX_EDIT, OUTBOX_DELETE, OUTBOX_ANSWER };

struct outbox_op {
	struct outbox_op *next;
	struct outbox *ob;
	enum outbox_kind kind;
	int64_t chat;
	int64_t message;
	char *text;
	char *callback_id;
	json_object *markup;
	outbox_fn fn;
	void *arg;
	bool running;
	int64_t not_before;
	int64_t backoff;
};

struct outbox {
	struct botapi *b;
	struct ratelimit *rl;
	struct outbox_op *head, *tail;
	unsigned count;
};

static const char *const outbox_methods[] = {"sendMessage", "editMessageText", "deleteMessage",
					     "answerCallbackQuery"};

int64_t outbox_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct outbox *outbox_create(struct botapi *b, struct ratelimit *rl)
{
	struct outbox *ob = calloc(1, sizeof(*ob));

	if (ob == NULL)
		return NULL;
	ob->b = b;
	ob->rl = rl;
	return ob;
}

static void outbox_op_free(struct outbox_op *op)
{
	free(op->text);
	free(op->callback_id);
	json_object_put(op->markup);
	free(op);
}

static void outbox_unlink(struct outbox *ob, struct outbox_op *op)
{
	struct outbox_op **pp = &ob->head, *prev = NULL;

	while (*pp != NULL && *pp != op) {
		prev = *pp;
		pp = &(*pp)->next;
	}
	if (*pp == NULL)
		return;
	*pp = op->next;
	if (ob->tail == op)
		ob->tail = prev;
	ob->count--;
}

void outbox_destroy(struct outbox *ob)
{
	struct outbox_op *op, *next;

	if (ob == NULL)
		return;
	for (op = ob->head; op != NULL; op = next) {
		next = op->next;
		if (op->running) {
			/* Its transfer ends with the loop; the callback must find nothing. */
			op->fn = NULL;
			op->ob = NULL;
			continue;
		}
		outbox_op_free(op);
	}
	free(ob);
}

static int outbox_push(struct outbox *ob, enum outbox_kind kind, int64_t chat, int64_t message,
		       const char *text, const char *callback_id, json_object *markup, outbox_fn fn,
		       void *arg)
{
	struct outbox_op *op;

	if (ob->count >= OUTBOX_MAX) {
		json_object_put(markup);
		return -ENOBUFS;
	}
	op = calloc(1, sizeof(*op));
	if (op == NULL || (text != NULL && (op->text = strdup(text)) == NULL) ||
	    (callback_id != NULL && (op->callback_id = strdup(callback_id)) == NULL)) {
		if (op != NULL)
			outbox_op_free(op);
		json_object_put(markup);
		return -ENOMEM;
	}
	op->ob = ob;
	op->kind = kind;
	op->chat = chat;
	op->message = message;
	op->markup = markup;
	op->fn = fn;
	op->arg = arg;
	op->backoff = OUTBOX_BACKOFF_MS;
	if (ob->tail != NULL)
		ob->tail->next = op;
	else
		ob->head = op;
	ob->tail = op;
	ob->count++;
	return 0;
}

int outbox_send(struct outbox *ob, int64_t chat, const char *text, json_object *markup,
		outbox_fn fn, void *arg)
{
	return outbox_push(ob, OUTBOX_SEND, chat, 0, text, NULL, markup, fn, arg);
}

int outbox_edit(struct outbox *ob, int64_t chat, int64_t message, const char *text,
		json_object *markup, outbox_fn fn, void *arg)
{
	return outbox_push(ob, OUTBOX_EDIT, chat, message, text, NULL, markup, fn, arg);
}

int outbox_delete(struct outbox *ob, int64_t chat, int64_t message, outbox_fn fn, void *arg)
{
	return outbox_push(ob, OUTBOX_DELETE, chat, message, NULL, NULL, NULL, fn, arg);
}

int outbox_answer(struct outbox *ob, const char *callback_id, const char *text, outbox_fn fn,
		  void *arg)
{
	char cut[OUTBOX_ANSWER_TEXT_MAX * 4 + 1];

	if (text != NULL) {
		size_t n = split_prefix(text, strlen(text), OUTBOX_ANSWER_TEXT_MAX);

		memcpy(cut, text, n);
		cut[n] = '\0';
		text = cut;
	}
	return outbox_push(ob, OUTBOX_ANSWER, 0, 0, text, callback_id, NULL, fn, arg);
}

void outbox_forget(struct outbox *ob, void *arg)
{
	struct outbox_op *op = ob->head, *next;

	for (; op != NULL; op = next) {
		next = op->next;
		if (op->arg != arg)
			continue;
		op->fn = NULL;
		if (!op->running) {
			outbox_unlink(ob, op);
			outbox_op_free(op);
		}
	}
}

unsigned outbox_pending(const struct outbox *ob)
{
	return ob->count;
}

static enum ratelimit_kind outbox_rl_kind(const struct outbox_op *op)
{
	return op->kind == OUTBOX_ANSWER ? RATELIMIT_GLOBAL
	       : op->kind == OUTBOX_EDIT ? RATELIMIT_EDIT
					 : RATELIMIT_SEND;
}

static void outbox_done(void *arg, const struct botapi_answer *a)
{
	struct outbox_op *op = arg;
	struct outbox *ob = op->ob;
	struct outbox_result r = {
	    .ok = a->ok, .error_code = a->error_code, .description = a->ok ? "" : a->description};
	int64_t now = outbox_now();
	json_object *v;

	if (ob == NULL) { /* the outbox went first */
		outbox_op_free(op);
		return;
	}
	op->running = false;
	ratelimit_end(ob->rl, op->chat, outbox_rl_kind(op), now);
	if (a->aborted)
		return; /* shutting down: it stays queued, and goes with the outbox */
	if (!a->ok && a->transient) {
		if (a->error_code == 429) {
			log_warn("telegram: %s: 429, retrying after %d s", outbox_methods[op->kind],
				 a->retry_after);
			ratelimit_pause(ob->rl, op->kind == OUTBOX_ANSWER ? 0 : op->chat,
					now + (int64_t)a->retry_after * 1000);
		} else {
			log_warn("telegram: %s failed (%s); retrying in %lld ms",
				 outbox_methods[op->kind], a->description, (long long)op->backoff);
			op->not_before = now + op->backoff;
			op->backoff = op->backoff * 2 > OUTBOX_BACKOFF_MAX ? OUTBOX_BACKOFF_MAX
									   : op->backoff * 2;
		}
		return; /* stays queued where it was */
	}
	if (!a->ok && op->kind == OUTBOX_EDIT && strstr(a->description, "not modified") != NULL) {
		r.ok = true; /* what the message should say, it says */
		r.description = "";
	}
	if (!r.ok)
		log_warn("telegram: %s to chat %lld refused: %d %s", outbox_methods[op->kind],
			 (long long)op->chat, a->error_code, a->description);
	if (a->ok && op->kind == OUTBOX_SEND && a->result != NULL &&
	    json_object_object_get_ex(a->result, "message_id", &v) &&
	    json_object_is_type(v, json_type_int))
		r.message_id = json_object_get_int64(v);
	outbox_unlink(ob, op);
	if (op->fn != NULL)
		op->fn(op->arg, &r);
	outbox_op_free(op);
}

static json_object *outbox_params(const struct outbox_op *op)
{
	json_object *p = json_object_new_object();

	if (p == NULL)
		return NULL;
	if (op->kind == OUTBOX_ANSWER) {
		json_object_object_add(p, "callback_query_id",
				       json_object_new_string(op->callback_id));
		if (op->text != NULL)
			json_object_object_add(p, "text", json_object_new_string(op->text));
		return p;
	}
	json_object_object_add(p, "chat_id", json_object_new_int64(op->chat));
	if (op->kind != OUTBOX_SEND)
		json_object_object_add(p, "message_id", json_object_new_int64(op->message));
	if (op->text != NULL)
		json_object_object_add(p, "text", json_object_new_string(op->text));
	if (op->kind == OUTBOX_SEND)
		json_object_object_add(p, "disable_web_page_preview", json_object_new_boolean(1));
	if (op->markup != NULL)
		json_object_object_add(p, "reply_markup", json_object_get(op->markup));
	else if (op->kind == OUTBOX_EDIT) /* no buttons any more */
		json_object_object_add(p, "reply_markup",
				       json_tokener_parse("{\"inline_keyboard\":[]}"));
	return p;
}

/*
 * Whether op must wait for another call to its chat. New messages (sends, deletes) go in the
 * order they were queued, and before any edit that waits: a reply or a permission request is not
 * held up behind the edits of answers being streamed (an answer has one call at a time, so its
 * own order needs nothing here). Edits go in their order.
 */
static bool outbox_blocked(const struct outbox *ob, const struct outbox_op *op)
{
	bool before = true;

	for (const struct outbox_op *o = ob->head; o != NULL; o = o->next) {
		if (o == op) {
			if (op->kind != OUTBOX_EDIT)
				return false;
			before = false;
			continue;
		}
		if (o->kind == OUTBOX_ANSWER || o->chat != op->chat || o->running)
			continue;
		if (o->kind != OUTBOX_EDIT || (before && op->kind == OUTBOX_EDIT))
			return true;
	}
	return false;
}

int64_t outbox_tick(struct outbox *ob, int64_t now)
{
	int64_t next = -1;

	for (struct outbox_op *op = ob->head; op != NULL; op = op->next) {
		int64_t wait;

		if (op->running)
			continue;
		if (op->kind != OUTBOX_ANSWER && outbox_blocked(ob, op))
			continue; /* it goes when the other is done, which ticks again */
		wait = op->not_before > now ? op->not_before - now : 0;
		if (wait == 0)
			wait = ratelimit_wait(ob->rl, op->chat, outbox_rl_kind(op), now);
		if (wait > 0) {
			if (next < 0 || wait < next)
				next = wait;
			continue;
		}
		ratelimit_begin(ob->rl, op->chat, outbox_rl_kind(op), now);
		op->running = true;
		if (botapi_call(ob->b, outbox_methods[op->kind], outbox_params(op),
				BOTAPI_TIMEOUT_MS, outbox_done, op) == NULL) {
			op->running = false;
			ratelimit_end(ob->rl, op->chat, outbox_rl_kind(op), now);
			op->not_before = now + op->backoff;
			if (next < 0 || op->backoff < next)
				next = op->backoff;
		}
	}
	return next;
}
