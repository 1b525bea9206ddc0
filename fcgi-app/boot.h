/*
 * Reboot survival. A reboot empties the runtime dir (a tmpfs) and ends the tmux server and every
 * agent; the records, the event logs and claude's transcripts (in the agent's HOME) are on disk.
 * agentd-api's start (--init first) tells a fresh boot by the marker BOOT_MARKER in the runtime
 * dir, which it writes once the pass is done: absent, or holding another kernel boot id, means
 * this is the first start since the machine (or the runtime dir) came up. Then every session
 * whose record says its agent was running (running, attached) and that has no tmux session comes
 * back by itself: a new tmux session in the same worktree (whose branch is what it is: nothing
 * is checked out), claude with --resume <uuid> in the record's mode, activity idle, no client.
 * A worktree that is gone is never made again over whatever is there: the session becomes
 * `failed`, saying so. A delete the reboot interrupted (state stopping) finishes: the record is
 * removed (the worktree stays, listed by GET /worktrees). Other states stay as they are (an
 * exited, failed or lost agent was not running; recovery then marks exited ones lost).
 * Requests that waited for the dead claude are left to the bridge's attention hub, which
 * withdraws those no new claude asks again (permission_resolved, behavior withdrawn).
 * Without a fresh boot (a daemon restart, or only the tmux server killed) nothing happens here.
 */
#ifndef AGENTD_BOOT_H
#define AGENTD_BOOT_H

#include "app.h"

#define BOOT_MARKER "boot-id" /* in the runtime dir: the kernel boot id of the last pass */
#define BOOT_ID_MAX 64

/*
 * Runs the pass when this is a fresh boot (see above), then writes the marker. The tmux server
 * must run (or be startable: deploy/up) for sessions to come back. Returns 0, or -errno with
 * cause when the marker cannot be written (each session's outcome is logged and recorded).
 */
int boot_resume(const struct app *app, struct cause *cause);

#endif
