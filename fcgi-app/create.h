/*
 * Session creation. The request thread hands the session to the worker waiting for one
 * (standby.h) and records it as `creating`, or records it and starts a detached worker (this
 * program re-run with --create <id>, via posix_spawn); the worker clones or fetches,
 * adds the worktree, starts tmux with claude, and moves the record to `running` or to `failed`
 * with a reason a person can act on. The worker holds an flock on <id>.worker for its whole life,
 * so anyone can tell whether it still runs (create_worker_alive).
 */
#ifndef AGENTD_CREATE_H
#define AGENTD_CREATE_H

#include "app.h"

#define CREATE_WAIT_MS 30000 /* how long DELETE waits for a running worker */

/*
 * Hands s to the worker waiting for one (standby.h), before its record is written: the git work
 * starts while the caller writes it (and holds the session lock, which the worker takes before it
 * starts claude; a worker that finds no record then stops). Returns 1 when handed over, 0 when
 * none waits (nothing done: write the record, then create_start), or -errno with cause (the
 * worker lock is taken: a worker for s still runs).
 */
int create_handoff(const struct app *app, const struct session *s, struct cause *cause);

/*
 * Starts a worker for s (whose record is written and whose session lock the caller holds).
 * Returns 0 or -errno with cause.
 */
int create_start(const struct app *app, const struct session *s, struct cause *cause);

/* The worker's main: never returns to a request loop. Returns the process exit code. */
int create_worker_main(const struct app *app, const char *id);

/*
 * The main of a worker started ahead of need (standby.h; argv as main got it): initialises, waits
 * for a session from agentd-api, then works as create_worker_main does. Returns the exit code (0
 * also when agentd-api stopped before handing it one).
 */
int create_standby_main(const struct app *app, char **argv);

/* Returns 1 while the worker of id holds its lock, 0 when none does, -errno on error. */
int create_worker_alive(const struct app *app, const char *id);

/* Waits up to timeout_ms for the worker of id to finish. Returns 0, or -ETIMEDOUT. */
int create_worker_wait(const struct app *app, const char *id, int timeout_ms);

/*
 * Starts claude for s in a new tmux session (s->worktree must exist): with --resume when s was
 * launched before and claude has its transcript, else --session-id and the bootstrap prompt.
 * Shared by the worker and the boot pass (boot.h). Returns 0 or -errno with cause.
 */
int create_tmux_session(const struct app *app, const struct session *s, struct cause *cause);

/*
 * Starts claude again in s's tmux session (respawn-pane -k), in mode, with --resume when claude
 * has a transcript of s's conversation (else --session-id and, in terminal mode, the bootstrap
 * prompt): the restart of an exited session and the mode switch. A live agent is gone before it
 * returns. On success s is running (attached with clients), launched and in mode; the caller holds
 * the session lock and writes the record. Returns 0, -EPERM when the tmux session named
 * s->tmux_name belongs to another session, or -errno with cause.
 */
int create_respawn(const struct app *app, struct session *s, enum session_mode mode,
		   struct cause *cause);

/*
 * Whether s's conversation can go on in mode after a switch, asked before its agent is stopped:
 * 0, or -EXDEV with cause when its CLI cannot resume it there (codex's TUI and a thread it
 * began that codex-acp has written to since).
 */
int create_switch_check(const struct app *app, const struct session *s, enum session_mode mode,
			struct cause *cause);

/*
 * Starts s's pane: claude (its argv built here), or setup (the setup command's argv) when it is
 * not NULL; in a new tmux session, or with respawn in the one the setup command left. Returns 0
 * or -errno with cause.
 */
int create_pane_start(const struct app *app, const struct session *s, char *const *setup,
		      bool respawn, struct cause *cause);

#endif
