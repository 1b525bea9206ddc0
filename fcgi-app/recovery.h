/*
 * Reconciling records with what runs, the one writer of `exited` and `lost`. tmux is the truth: a
 * tmux session without a record gets one (from its @agentd_* options, or for sessions made by
 * older tools from its name split on the last hyphen and the worktree's remote URL); a record
 * whose pane is dead becomes `exited` (exit status and time from tmux), one whose pane runs again
 * becomes `running`; a record whose tmux session is gone (or whose tmux server is) becomes `lost`
 * with the reason; a `creating` record whose worker died becomes `failed`. Each change is decided
 * again under the session lock from what tmux says at that moment. Also refreshes lastActivity.
 * It runs at agentd-api start (so `exited` survives restarts) and from the liveness watcher
 * (watch.h) whenever tmux or a pane process says something changed.
 */
#ifndef AGENTD_RECOVERY_H
#define AGENTD_RECOVERY_H

#include "app.h"

#define RECOVERY_INTERVAL_S 5 /* the watcher runs a pass at least this often */

/* Runs one reconciliation pass. Returns 0 or -errno with cause (tmux could not be listed). */
int recovery_run(const struct app *app, struct cause *cause);

/*
 * As recovery_run, and hands over tmux's list as it was at the start of the pass when list is not
 * NULL (*list allocated, caller frees; NULL and 0 when tmux could not be listed), and when
 * wake_ms is not NULL the time (unix ms) a session's policy needs the next pass (policies.h: a
 * restart's backoff, a timeout, its grace), 0 for none.
 */
int recovery_pass(const struct app *app, struct tmux_info **list, size_t *n, int64_t *wake_ms,
		  struct cause *cause);

#endif
