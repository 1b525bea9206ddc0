#include "ratelimit.h"

#include <stdbool.h>
#include <stdlib.h>

struct rl_chat {
	int64_t chat; /* 0: a free slot */
	int64_t last_end;
	int64_t last_edit_end;
	int64_t paused_until;
	int64_t touched; /* the last time anything happened: the slot is reused by age */
	bool busy;
};

struct ratelimit {
	struct rl_chat chats[RATELIMIT_CHATS_MAX];
	int64_t ends[RATELIMIT_GLOBAL_MAX]; /* the last calls' end times, a ring */
	unsigned next_end;
	unsigned in_flight;
	int64_t paused_until;
};

struct ratelimit *ratelimit_create(void)
{
	struct ratelimit *rl = calloc(1, sizeof(*rl));

	if (rl == NULL)
		return NULL;
	for (unsigned i = 0; i < RATELIMIT_GLOBAL_MAX; i++)
		rl->ends[i] = INT64_MIN / 2;
	return rl;
}

void ratelimit_destroy(struct ratelimit *rl)
{
	free(rl);
}

static struct rl_chat *rl_find(struct ratelimit *rl, int64_t chat)
{
	for (unsigned i = 0; i < RATELIMIT_CHATS_MAX; i++)
		if (rl->chats[i].chat == chat)
			return &rl->chats[i];
	return NULL;
}

/* The slot a chat not tracked yet would get: a free one, or the one idle longest if it has been
 * idle for longer than any gap (its pacing is over), else NULL. */
static struct rl_chat *rl_spare(struct ratelimit *rl, int64_t now)
{
	struct rl_chat *old = NULL;

	for (unsigned i = 0; i < RATELIMIT_CHATS_MAX; i++) {
		struct rl_chat *c = &rl->chats[i];

		if (c->chat == 0)
			return c;
		if (!c->busy && c->paused_until <= now &&
		    now - c->touched > RATELIMIT_EDIT_GAP_MS + RATELIMIT_CHAT_GAP_MS &&
		    (old == NULL || c->touched < old->touched))
			old = c;
	}
	return old;
}

static struct rl_chat *rl_take(struct ratelimit *rl, int64_t chat, int64_t now)
{
	struct rl_chat *c = rl_spare(rl, now);

	if (c == NULL)
		return NULL;
	*c = (struct rl_chat){.chat = chat,
			      .last_end = INT64_MIN / 2,
			      .last_edit_end = INT64_MIN / 2,
			      .touched = now};
	return c;
}

static int64_t rl_max(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

int64_t ratelimit_wait(struct ratelimit *rl, int64_t chat, enum ratelimit_kind kind, int64_t now)
{
	int64_t wait = rl_max(0, rl->paused_until - now), oldest = INT64_MAX;
	unsigned recent = 0;

	for (unsigned i = 0; i < RATELIMIT_GLOBAL_MAX; i++) {
		if (rl->ends[i] > now - RATELIMIT_WINDOW_MS) {
			recent++;
			if (rl->ends[i] < oldest)
				oldest = rl->ends[i];
		}
	}
	if (rl->in_flight >= RATELIMIT_GLOBAL_MAX)
		wait = rl_max(wait, RATELIMIT_BUSY_MS);
	else if (rl->in_flight + recent >= RATELIMIT_GLOBAL_MAX)
		wait = rl_max(wait, oldest + RATELIMIT_WINDOW_MS - now + 1);
	if (kind != RATELIMIT_GLOBAL) {
		struct rl_chat *c = rl_find(rl, chat);

		if (c == NULL) {
			/* Untracked: free to go unless the table is full of chats still paced. */
			if (rl_spare(rl, now) == NULL)
				wait = rl_max(wait, RATELIMIT_BUSY_MS);
			return wait;
		}
		if (c->busy)
			wait = rl_max(wait, RATELIMIT_BUSY_MS);
		wait = rl_max(wait, c->paused_until - now);
		wait = rl_max(wait, c->last_end + RATELIMIT_CHAT_GAP_MS - now);
		if (kind == RATELIMIT_EDIT)
			wait = rl_max(wait, c->last_edit_end + RATELIMIT_EDIT_GAP_MS - now);
	}
	return wait;
}

void ratelimit_begin(struct ratelimit *rl, int64_t chat, enum ratelimit_kind kind, int64_t now)
{
	rl->in_flight++;
	if (kind != RATELIMIT_GLOBAL) {
		struct rl_chat *c = rl_find(rl, chat);

		if (c == NULL)
			c = rl_take(rl, chat, now);
		if (c != NULL) {
			c->busy = true;
			c->touched = now;
		}
	}
}

void ratelimit_end(struct ratelimit *rl, int64_t chat, enum ratelimit_kind kind, int64_t now)
{
	if (rl->in_flight > 0)
		rl->in_flight--;
	rl->ends[rl->next_end] = now;
	rl->next_end = (rl->next_end + 1) % RATELIMIT_GLOBAL_MAX;
	if (kind != RATELIMIT_GLOBAL) {
		struct rl_chat *c = rl_find(rl, chat);

		if (c == NULL)
			return;
		c->busy = false;
		c->last_end = now;
		c->touched = now;
		if (kind == RATELIMIT_EDIT)
			c->last_edit_end = now;
	}
}

void ratelimit_pause(struct ratelimit *rl, int64_t chat, int64_t until)
{
	struct rl_chat *c;

	if (chat == 0) {
		rl->paused_until = rl_max(rl->paused_until, until);
		return;
	}
	c = rl_find(rl, chat);
	if (c == NULL)
		c = rl_take(rl, chat, until);
	if (c == NULL) {
		/* No slot to remember it in: hold everyone back rather than forget it. */
		rl->paused_until = rl_max(rl->paused_until, until);
		return;
	}
	c->paused_until = rl_max(c->paused_until, until);
	c->touched = until;
}
