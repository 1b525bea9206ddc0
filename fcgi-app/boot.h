/*
 * Surviving the end of the tmux server: a reboot, or the server alone (a crash, kill -9,
 * kill-server). Either ends every agent; the records, the event logs and claude's transcripts (in
 * the agent's HOME) are on disk. The marker BOOT_MARKER in the runtime dir names the kernel boot
 * and the tmux server (pid and start time) the records were last brought in line with; it is
 * written once the pass is done. When the server that runs now is another one (a new boot, the
 * runtime dir emptied, or a server started after the last one ended) the pass runs: every session
 * that was running in the server before comes back by itself: a new tmux session in the same
 * worktree (whose branch is what it is: nothing is checked out), claude with --resume <uuid> in
 * the record's mode, activity idle, no client. Running means a record that says running or
 * attached and has no tmux session (nobody saw the end: a reboot, or agentd-api was not running),
 * or one recovery marked lost with the server (error BOOT_LOST_WITH_SERVER: agentd-api saw the
 * server go before another came). A worktree that is gone is never made again over whatever is
 * there: the session becomes `failed`, saying so. A delete the end interrupted (state stopping)
 * finishes: the record is removed (the worktree stays, listed by GET /worktrees). Other states
 * stay as they are (an exited, failed or lost agent was not running; recovery then marks exited
 * ones lost). Requests that waited for the dead claude are left to the bridge's attention hub,
 * which withdraws those no new claude asks again (permission_resolved, behavior withdrawn).
 * The pass runs in agentd-api --init (deploy/up, also when it restarts a server that died;
 * agentd-tmux.service under systemd, at each of its starts), at agentd-api's start, and in each
 * pass of its liveness watcher (watch.h), whichever sees the new server first: each session is
 * decided under its record's lock, so it comes back once.
 */
#ifndef AGENTD_BOOT_H
#define AGENTD_BOOT_H

#include "app.h"

#define BOOT_MARKER "boot-id" /* in the runtime dir: the boot and server of the last pass */
#define BOOT_ID_MAX 64
/* The error of a session recovery found without its tmux session while its server was gone (no
 * server, or another one): the pass brings such a session back. */
#define BOOT_LOST_WITH_SERVER                                                                      \
	"the tmux server ended with the agent running; it starts again (claude --resume) in the "  \
	"next server"

/*
 * Runs the pass when the server that runs is not the marker's (see above), then writes the
 * marker. Without a server it does nothing. Returns 0, or -errno with cause when the records
 * cannot be listed or the marker cannot be written (each session's outcome is logged and
 * recorded).
 */
int boot_resume(const struct app *app, struct cause *cause);

/* Returns 1 when the tmux server the marker names is gone (no server runs, or another one),
 * 0 when it still runs. */
int boot_server_changed(const struct app *app);

#endif
