/*
 * GET /events: one stream for every session. Its events are handled one at a time, in order:
 * the next waits until every message the previous one caused is sent (a permission request's
 * messages, a resolution's edits), and only then is its id recorded as handled in the state. The
 * stream is reopened with that id (Last-Event-ID) after a break or a restart, so no event is
 * lost and none acted on twice; when agent-daemon cannot replay from it, a snapshot comes first
 * and the approvals are reconciled with what is pending now. A session deleted is no longer
 * followed; a terminal-mode session that starts waiting gets a message for each request it lists
 * that has none yet (with a link to its terminal). Reconnects back off from 1 s to 30 s.
 */
#ifndef AGENTD_TG_FEED_H
#define AGENTD_TG_FEED_H

#include "bot.h"

#define FEED_QUEUE_MAX 4096 /* events read but not handled; beyond, the stream is reopened */

/* The consumer of b's /events (not connected yet), or NULL when out of memory. */
struct feed *feed_create(struct bot *b);
void feed_destroy(struct feed *f);

/* Connects when it is time; asks for the next tick. */
void feed_tick(struct feed *f, int64_t now);

#endif
