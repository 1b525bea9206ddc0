/*
 * The liveness watcher: how agentd-api learns at once that an agent died or a tmux session (or
 * the tmux server) went, so that recovery.c, the one writer of `exited` and `lost`, runs a pass
 * within moments instead of on a timer. Two threads:
 *
 *  - the worker runs a pass (recovery_pass), then sleeps in poll(2) on a pidfd of every live pane
 *    process and of the tmux server, and on a pipe the waiter writes to; it wakes when any of
 *    them says something, and at least every RECOVERY_INTERVAL_S.
 *  - the waiter blocks in `tmux wait-for TMUX_CHANNEL`, which the server's pane-died and
 *    session-closed hooks signal, and so does whoever starts a pane (the creation worker once
 *    the record says running, a restart or mode switch: tmux_signal), and writes to the pipe
 *    when it returns.
 *
 * Both are needed on tmux 3.3a: a pane's process can end without pane-died firing (tmux reaps it
 * only when the next child exits), which its pidfd still reports; and a session killed behind our
 * back is news only the hooks bring. No session-created hook: it fired while the record still
 * said creating, for a pass that ignores such a session, on the way of every creation. The hooks
 * are in the config file of every server agentd-api starts; the waiter installs them again on a
 * server it finds (one started by an older agentd). Without a server, or when tmux refused the
 * hooks, it tries again every WATCH_RETRY_MS (never waiting on a server that has no hooks). Each
 * pass of the worker runs the boot pass first (boot.h): a new server (one that deploy/up or
 * agentd-tmux.service started after the last one ended) gets the sessions that were running in the
 * old one, without a restart of agentd-api.
 */
#ifndef AGENTD_WATCH_H
#define AGENTD_WATCH_H

#include "app.h"

#define WATCH_RETRY_MS     1000 /* no tmux server, or no hooks in it: try again this often */
#define WATCH_STOP_WAIT_MS 3000 /* watch_stop gives the threads this long to end */
#define WATCH_FDS_MAX      1024 /* processes watched by pidfd; beyond, hooks and the timer */
#define WATCH_RECHECK_MS   50   /* a process ended between the list and its pidfd: pass again */

struct watch;

/*
 * Starts the watcher's threads (the caller has blocked the signals it handles itself). Returns
 * the watcher, or NULL with errno set.
 */
struct watch *watch_start(const struct app *app);

/* Wakes both threads, waits up to WATCH_STOP_WAIT_MS for them to end, and frees the watcher.
 * NULL-safe. */
void watch_stop(struct watch *w);

#endif
