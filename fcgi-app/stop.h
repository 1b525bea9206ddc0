/*
 * The graceful stop of an agent, everywhere the daemon stops one (DELETE, a mode switch, the
 * session's timeout): SIGINT to the agent (claude in terminal mode, agentd-host in structured
 * mode, which passes it on as SIGTERM to claude's process group), up to AGENTD_STOP_GRACE
 * seconds for it to end, then SIGKILL to the pane's process group. claude gets the chance to
 * finish writing its transcript, which the next --resume reads.
 *
 * The agent is the pane's process, or, in a cage, the process below agentd-cage's bubblewrap
 * (bwrap and its pid namespace's init are skipped: a SIGINT to bwrap would end it, and
 * --die-with-parent then SIGKILLs the agent). A pane's process is checked to be a child of the
 * tmux server before it is signalled, so a pid the kernel gave again is never touched.
 */
#ifndef AGENTD_STOP_H
#define AGENTD_STOP_H

#include "app.h"

#define STOP_WRAPPER_DEPTH 4    /* agentd-cage's bwrap, its pid namespace's init, and room */
#define STOP_KILL_WAIT_MS  2000 /* after SIGKILL: how long the pane's process may take to end */
#define STOP_REAP_WAIT_MS  200  /* then how long tmux may take to reap it on its own */
#define STOP_REAP_POLL_MS  10

/*
 * Interrupts the agent of s and waits up to AGENTD_STOP_GRACE for the pane's process to end,
 * then kills the pane's process group. The caller holds the session lock. Returns 0 when it
 * ended within the grace (or had ended before), 1 when it was killed, -ENOENT when the tmux
 * session is gone, -EPERM when it is another session's, or -errno with cause.
 */
int stop_agent(const struct app *app, const struct session *s, struct cause *cause);

/*
 * The two halves of stop_agent for a caller that cannot wait (the liveness watcher at a
 * timeout): stop_interrupt sends SIGINT, stop_kill the SIGKILL. Each returns 0 when it signalled
 * a live agent, 1 when the pane's process had ended already, or -errno as stop_agent.
 */
int stop_interrupt(const struct app *app, const struct session *s, struct cause *cause);
int stop_kill(const struct app *app, const struct session *s, struct cause *cause);

#endif
