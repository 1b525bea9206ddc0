/*
 * The pull-request poller: keeps the `pr` of every session whose pull request is open current
 * (state open/merged/closed, the checks of its head commit) without spending GitHub's rate limit:
 *
 *  - at most one poll per pull request per AGENTD_PR_POLL_SECONDS (default 60, GitHub's own
 *    advice for polling);
 *  - conditional requests: the ETag of each answer is sent back as If-None-Match, and GitHub
 *    answers 304 (not counted against the limit) while nothing changed;
 *  - none for a pull request that is merged or closed (its `pr.state` is final here);
 *  - a 403 or 429 stops every poll for as long as GitHub asks (Retry-After, else until
 *    X-RateLimit-Reset when the limit is spent, else one interval).
 *
 * One thread of agentd-api: the `pr` field is agentd-api's (fcgi-app/api_pr.c writes it first),
 * the GitHub client and the token are here, and a blocking libcurl call has no place in the
 * bridge's event loop. A change is written to the record under its lock; the bridge publishes it
 * on /events (`session`, and `pr`) as it publishes every record change. The ETags live in memory:
 * after a restart the first poll of each pull request is a full one.
 */
#ifndef AGENTD_PRPOLL_H
#define AGENTD_PRPOLL_H

#include "app.h"

/* Pull requests followed at once: one per session at most (AGENTD_MAX_SESSIONS is far less). */
#define PRPOLL_MAX        1024
#define PRPOLL_TICK_MAX_S 5 /* the records are looked at this often at most: new pull requests */

struct prpoll;

/* Starts the poller's thread. Returns it, or NULL with errno set. */
struct prpoll *prpoll_start(const struct app *app);

/* Stops the thread (it ends within one GitHub call, at most GITHUB_TOTAL_SECONDS) and frees it.
 * NULL-safe. */
void prpoll_stop(struct prpoll *p);

#endif
