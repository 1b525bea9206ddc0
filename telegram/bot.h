/*
 * The bot: one process, one loop (xfer.h), no threads. It long-polls Telegram for updates
 * (getUpdates with the offset kept in its state), hands messages to the commands (commands.h)
 * and button presses to the approvals (approvals.h), follows agent-daemon's GET /events (feed.h)
 * and streams answers (turns.h); everything it says goes through the outbox (outbox.h). Between
 * two network rounds it writes its state file if anything in it changed, so what it acted on is
 * recorded before any further request leaves.
 *
 * struct bot is shared by those modules (they are parts of one program); each keeps to the
 * fields its header names.
 */
#ifndef AGENTD_TG_BOT_H
#define AGENTD_TG_BOT_H

#include "agentc.h"
#include "botapi.h"
#include "cause.h"
#include "outbox.h"
#include "ratelimit.h"
#include "settings.h"
#include "state.h"
#include "xfer.h"

#include <stdbool.h>
#include <stdint.h>

#define BOT_BACKOFF_MS     1000  /* the first retry of getUpdates or a stream */
#define BOT_BACKOFF_MAX_MS 30000 /* the longest */
#define BOT_ROUND_MAX_MS   1000  /* the longest sleep between two rounds */

struct feed;
struct turn;

struct bot {
	const struct settings *set;
	struct xfer_loop *loop;
	struct botapi *api;
	struct agentc *agentd;
	struct ratelimit *rl;
	struct outbox *out;
	struct state *st;
	bool dirty; /* st changed since it was last written */
	struct feed *feed;
	struct turn *turns;
	/* getUpdates */
	struct xfer *poll;
	int64_t poll_at; /* when the next poll may start */
	int64_t poll_backoff;
	int64_t wake; /* the earliest time a part asked to be ticked again (0: none) */
	bool stop;
};

/*
 * Sets everything up and reads the state file (a missing one is a first start). Returns the bot,
 * or NULL with cause set.
 */
struct bot *bot_create(const struct settings *set, struct cause *cause);

/* Runs until SIGTERM or SIGINT (which the caller has blocked: they are read from sigfd).
 * Returns 0, or a negative errno when the loop itself failed. */
int bot_run(struct bot *b, int sigfd);

/* Writes the state if it changed, and frees everything. NULL-safe. */
void bot_destroy(struct bot *b);

/* The state changed: it is written before the next network round. */
void bot_changed(struct bot *b);

/* Asks for a tick at monotonic time at (ms) at the latest. */
void bot_wake_at(struct bot *b, int64_t at);

/* Sends text to chat, split into messages of at most SPLIT_MAX units (fire and forget; a
 * failure is logged). */
void bot_say(struct bot *b, int64_t chat, const char *text);

#endif
