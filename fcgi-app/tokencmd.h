/*
 * `agentd-api token add NAME [--read-only] | list | revoke NAME`: the operator's commands on the
 * token store (core/tokens.h) at $AGENTD_STATE_DIR/tokens.json. Each holds an exclusive lock on
 * tokens.lock for its read-modify-write, so two commands never lose each other's change.
 */
#ifndef AGENTD_TOKENCMD_H
#define AGENTD_TOKENCMD_H

#include "config.h"
#include "tokens.h"

#define TOKENCMD_STORE TOKENS_STORE
#define TOKENCMD_LOCK  "tokens.lock"

/* Runs the command in argv[0..argc) (argv[0] is "token"). Returns the exit status: 0, 1 on
 * failure (said on stderr), 2 on bad usage. */
int tokencmd_main(const struct config *cfg, int argc, char **argv);

#endif
