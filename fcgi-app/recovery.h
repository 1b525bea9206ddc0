/*
 * Reconciling records with what runs. tmux is the truth: a tmux session without a record gets
 * one (from its @agentd_* options, or for sessions made by older tools from its name split on the
 * last hyphen and the worktree's remote URL); a record whose tmux session is gone becomes `failed`
 * with the reason; a `creating` record whose worker died becomes `failed`. Also refreshes
 * lastActivity from tmux.
 */
#ifndef AGENTD_RECOVERY_H
#define AGENTD_RECOVERY_H

#include "app.h"

#define RECOVERY_INTERVAL_S 5 /* the API re-runs reconciliation this often */

/* Runs one reconciliation pass. Returns 0 or -errno with cause (tmux could not be listed). */
int recovery_run(const struct app *app, struct cause *cause);

#endif
