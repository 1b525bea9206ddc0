/*
 * The pace of the bot's calls to Telegram. Telegram allows about one message a second per chat
 * and thirty requests a second overall, and answers 429 with retry_after beyond that; the bot
 * also edits a streamed answer at most once per 1.5 s per chat. Gaps are counted from the end of
 * the previous call (its answer), not its start: a call reaches Telegram between the two, so two
 * calls can never arrive closer together than the gap, however the network delays them. The
 * overall count likewise holds every call in flight plus those answered within the last second.
 * Pure bookkeeping on times the caller gives (milliseconds of a monotonic clock).
 */
#ifndef AGENTD_TG_RATELIMIT_H
#define AGENTD_TG_RATELIMIT_H

#include <stdint.h>

#define RATELIMIT_CHATS_MAX   256  /* chats paced at once; an idle one is forgotten for another */
#define RATELIMIT_CHAT_GAP_MS 1050 /* Telegram's message a second per chat, and a margin */
#define RATELIMIT_EDIT_GAP_MS 1500 /* at most one edit per 1.5 s per chat (the promise) */
#define RATELIMIT_GLOBAL_MAX  28   /* Telegram's 30 a second overall, two kept in hand */
#define RATELIMIT_WINDOW_MS   1000
#define RATELIMIT_BUSY_MS     100 /* the wait answered while the slot is taken by a call */

enum ratelimit_kind {
	RATELIMIT_SEND,  /* a message to a chat (sendMessage, deleteMessage) */
	RATELIMIT_EDIT,  /* editMessageText: the chat's gap and the edit gap */
	RATELIMIT_GLOBAL /* not bound to a chat (answerCallbackQuery): the overall count only */
};

struct ratelimit;

/* A limiter with nothing recorded, or NULL when out of memory. */
struct ratelimit *ratelimit_create(void);
void ratelimit_destroy(struct ratelimit *rl);

/*
 * How many milliseconds a call of kind for chat (ignored for RATELIMIT_GLOBAL) must wait from
 * now: 0 when it may start now. A chat has one call in flight at a time.
 */
int64_t ratelimit_wait(struct ratelimit *rl, int64_t chat, enum ratelimit_kind kind, int64_t now);

/* A call starts now (after ratelimit_wait said 0). */
void ratelimit_begin(struct ratelimit *rl, int64_t chat, enum ratelimit_kind kind, int64_t now);

/* The call begun with the same chat and kind ended now (answered or failed). */
void ratelimit_end(struct ratelimit *rl, int64_t chat, enum ratelimit_kind kind, int64_t now);

/* Telegram said retry_after: nothing for chat before until (chat 0: nothing for anyone). */
void ratelimit_pause(struct ratelimit *rl, int64_t chat, int64_t until);

#endif
