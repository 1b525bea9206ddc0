/*
 * agentd-host: runs in a structured session's tmux pane. It starts claude with pipes, always
 * keeps reading its stdout, numbers every line into the event log, fans events out to subscribers
 * on host.sock (see core/hostproto.h), writes only JSON it built itself to claude's stdin, runs
 * one turn at a time, tracks tool-permission requests (answered once; withdrawn by
 * control_cancel_request; denied after the permission timeout), prints a readable transcript to
 * the pane, and on SIGTERM/SIGHUP ends claude's whole process group (SIGTERM, then SIGKILL).
 */
#ifndef AGENTD_HOST_H
#define AGENTD_HOST_H

#include "cause.h"
#include "config.h"

#define HOST_SUB_QUEUE_MAX (8 * 1024 * 1024) /* a subscriber further behind is dropped */
#define HOST_KILL_GRACE_MS 3000
#define HOST_PENDING_MAX   64

/* Runs the host for session id with claude_argv until claude exits; first_prompt (NULL: none)
 * starts the first turn. Returns the exit code. */
int host_run(const struct config *cfg, const char *id, const char *first_prompt,
	     char *const claude_argv[]);

#endif
