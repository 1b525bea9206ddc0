/*
 * The policies of a session acted on (core/policy.h holds the decisions): an agent that ended by
 * itself is started again by its restart policy after a backoff, with --resume in its own tmux
 * session and worktree, and counted; one past maxRestarts stays exited with restart_limit; a
 * session past its timeout is stopped gracefully (stop.h) and says timeout. Run by recovery.c,
 * the one writer of exited, under the session lock, so the counters and the next attempt's time
 * are in the record and survive restarts of agentd-api.
 */
#ifndef AGENTD_POLICIES_H
#define AGENTD_POLICIES_H

#include "app.h"

/* The defaults of a new session from the configuration. */
struct policy_defaults policies_defaults(const struct config *cfg);

/*
 * Applies the policies to s, which recovery has brought in line with tmux (before: the record as
 * it was read). Lowers *wake_ms (unix ms) to when a pass is next needed for s. Returns true when
 * s changed.
 */
bool policies_apply(const struct app *app, struct session *s, const struct session *before,
		    int64_t *wake_ms);

/* A person started s (created, or restarted after it exited): the counters start over and the
 * timeout runs from now. */
void policies_started(struct session *s);

#endif
