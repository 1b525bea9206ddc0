/*
 * agentctl's commands over agent-daemon's HTTP API (docs/API.md) through client/agentc.h: each
 * request is made and waited for in the one libcurl loop; streams (a prompt's answer, a session's
 * events, GET /events) print as they arrive. SIGINT and SIGTERM end a stream cleanly.
 */
#ifndef AGENTD_CTL_CMDS_H
#define AGENTD_CTL_CMDS_H

#include "cli.h"
#include "conf.h"

#include <json-c/json.h>

#define CTL_LOGS_QUIET_MS 1000 /* logs without -f: the replay is over after a second of quiet */

/* Runs the command of args (not attach). Returns a CTL_EXIT_* code; output on stdout, messages on
 * stderr. */
int ctl_run(const struct ctl_args *args, const struct ctl_conf *conf);

/* The exit code for an HTTP status (0: no answer). */
int ctl_exit_for_status(long status);

/* The sessions (a JSON array, borrowed) in ls's order, as a new array (the caller puts it; NULL
 * when out of memory): waiting first, then working, idle, the rest, each group in the server's
 * order; without all, only the sessions with an agent (creating, running, attached). */
json_object *ctl_ls_order(json_object *sessions, bool all);

/* "45s", "12m", "3h", "2d": an age of secs seconds. */
void ctl_age(long long secs, char *out, size_t size);

#endif
