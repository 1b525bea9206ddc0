/*
 * Everything the bot says to Telegram goes through here: a queue of sendMessage,
 * editMessageText, deleteMessage and answerCallbackQuery calls, started as the rate limiter
 * allows (ratelimit.h), one at a time per chat: new messages in their order and before waiting
 * edits (a reply is not held up by streamed answers), edits in theirs. A 429 holds the chat (or
 * everything) back for its retry_after and the call is made again; a network failure or a 5xx is
 * retried with a growing delay (1 s doubling up to 30 s), for as long as it takes; any other
 * refusal ends the call, and its callback says so. "message is not modified" counts as done.
 */
#ifndef AGENTD_TG_OUTBOX_H
#define AGENTD_TG_OUTBOX_H

#include "botapi.h"
#include "ratelimit.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#define OUTBOX_MAX             2048  /* calls queued at once; beyond, a new one is refused */
#define OUTBOX_BACKOFF_MS      1000  /* the first retry of a failed call */
#define OUTBOX_BACKOFF_MAX     30000 /* the longest wait between retries */
#define OUTBOX_ANSWER_TEXT_MAX 190   /* answerCallbackQuery allows 200 characters */

struct outbox;

struct outbox_result {
	bool ok;
	int64_t message_id; /* a sendMessage's new message */
	int error_code;
	const char *description; /* why it failed ("" when ok) */
};

/* A call's end (done or given up). Not called after outbox_forget(arg). */
typedef void (*outbox_fn)(void *arg, const struct outbox_result *r);

/* A queue calling b, paced by rl (both borrowed); NULL when out of memory. */
struct outbox *outbox_create(struct botapi *b, struct ratelimit *rl);
/* Drops every call (no callbacks); NULL-safe. */
void outbox_destroy(struct outbox *ob);

/*
 * Queue a call. text is copied (it must be 1 to 4096 UTF-16 units: the caller splits);
 * markup (an inline keyboard, or NULL) is consumed; fn (may be NULL) is called once. An edit
 * with markup NULL removes the message's buttons. Each returns 0, -ENOBUFS (OUTBOX_MAX calls
 * wait already) or -ENOMEM.
 */
int outbox_send(struct outbox *ob, int64_t chat, const char *text, json_object *markup,
		outbox_fn fn, void *arg);
int outbox_edit(struct outbox *ob, int64_t chat, int64_t message, const char *text,
		json_object *markup, outbox_fn fn, void *arg);
int outbox_delete(struct outbox *ob, int64_t chat, int64_t message, outbox_fn fn, void *arg);
/* text may be NULL (the spinner just stops); it is cut to OUTBOX_ANSWER_TEXT_MAX. */
int outbox_answer(struct outbox *ob, const char *callback_id, const char *text, outbox_fn fn,
		  void *arg);

/* Calls queued or running for arg lose their callback; queued ones are dropped. */
void outbox_forget(struct outbox *ob, void *arg);

/* Starts every call that may start at now (monotonic ms). Returns the ms until the next one
 * may, or -1 when nothing waits. */
int64_t outbox_tick(struct outbox *ob, int64_t now);

/* Calls queued or running. */
unsigned outbox_pending(const struct outbox *ob);

/* Monotonic milliseconds (the clock of the rate limiter). */
int64_t outbox_now(void);

#endif
