/*
 * agentd-push's work (docs/DESIGN.md, "Notifications (Web Push)"): it follows GET /events like
 * any client and turns what a person should hear about into one Web Push message per session and
 * state change, sent to the subscriptions of the state dir (core/pushsubs.h) with the VAPID key
 * (core/webpush.h):
 * - a permission request (the session waits): to every identity, with the tool and command;
 * - a session that fails, exits or is lost: to every identity;
 * - a structured turn's result: to the identity whose prompt started it;
 * - a permission answered: to every identity but the one who answered (its phone then shows the
 *   answer instead of the request, under the same tag); never to the one who acted.
 * A push service's 404 or 410 removes the subscription. Single-threaded on client/'s loop.
 */
#ifndef AGENTD_PUSH_SENDER_H
#define AGENTD_PUSH_SENDER_H

#include "cause.h"
#include "config.h"

#include <stdint.h>

#define SENDER_INFLIGHT_MAX 64    /* pushes on the wire at once; more are dropped, and logged */
#define SENDER_SESSIONS_MAX 10000 /* = AGENTD_MAX_SESSIONS' ceiling */
#define SENDER_BACKOFF_MS   1000
#define SENDER_BACKOFF_MAX  30000
#define SENDER_PUSH_TIMEOUT 30000 /* a push service that takes longer is failed, and logged */
#define SENDER_TOKEN_FILE   "push-token" /* in AGENTD_STATE_DIR: agentd-push's own read token */
#define SENDER_TOKEN_NAME   "push"

struct sender;

/* A sender for cfg (kept): the VAPID key (made when absent) and agent-daemon at cfg's URL. Its
 * own read-only token (made in the token store when push-token is absent) and GET /events wait
 * for the first subscription: until then it holds nothing of the bridge. NULL with cause. */
struct sender *sender_create(const struct config *cfg, struct cause *cause);
void sender_destroy(struct sender *s);

/* Runs until sigfd (signalfd) is readable. Returns 0, or -EIO when the network loop failed. */
int sender_run(struct sender *s, int sigfd);

#endif
