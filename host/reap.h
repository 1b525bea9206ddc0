/*
 * What the agent leaves behind. agentd-host is the child subreaper of everything the agent
 * starts (prctl PR_SET_CHILD_SUBREAPER): a process that left the agent's process group and
 * session (opencode runs git with setsid), which the stop's signal to the group does not reach,
 * becomes the host's child, not init's, once its parent is gone. While the agent runs, such
 * orphans that end are reaped (reap_orphans, on SIGCHLD); once it has exited, reap_leftovers
 * ends the rest: SIGTERM, REAP_GRACE_MS, SIGKILL, until none is left (their children come to the
 * host as they die).
 */
#ifndef AGENTD_REAP_H
#define AGENTD_REAP_H

#include <sys/types.h>

#define REAP_GRACE_MS   500  /* leftovers' time to end on SIGTERM before SIGKILL */
#define REAP_POLL_MS    20   /* how often the grace looks whether they ended */
#define REAP_ROUNDS_MAX 64   /* generations of leftovers handed to the host, at most */
#define REAP_BATCH_MAX  1024 /* children handled per round; the next round takes the rest */

/* Makes this process the subreaper of its descendants. Returns 0 or -errno. */
int reap_init(void);

/* Reaps every ended child of this process except agent (libuv's to reap). */
void reap_orphans(pid_t agent);

/* Ends and reaps every child of this process left once the agent has exited. */
void reap_leftovers(void);

#endif
