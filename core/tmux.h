/*
 * Control of agentd's private tmux server: one socket, one config file, argv only. Every word
 * given to tmux goes through tmux_escape_word (tmux ends a command at any argument ending in ';'),
 * and every target is exact: "=name" for sessions, "=name:" for panes. Session metadata lives in
 * user options (@agentd_*), so records can be rebuilt from tmux alone.
 */
#ifndef AGENTD_TMUX_H
#define AGENTD_TMUX_H

#include "cause.h"
#include "config.h"
#include "session.h"

#include <stdbool.h>
#include <stddef.h>

#define TMUX_ARGV_MAX      256
#define TMUX_WORD_MAX      (16 * 1024)
#define TMUX_HISTORY_LIMIT 50000
#define TMUX_OPTION_COUNT  8
#define TMUX_LIST_MAX      4096
/* The wait-for channel our hooks signal when a pane dies or a session is created or closed. tmux
 * 3.3 remembers one signal nobody waited for, but a second one before the next wait cancels it:
 * a waiter must be registered again at once, and the rest found by rescanning. */
#define TMUX_CHANNEL "agentd-liveness"

struct tmux {
	char bin[CONFIG_PATH_MAX];
	char socket[CONFIG_PATH_MAX]; /* <runtime_dir>/tmux.sock */
	char conf[CONFIG_PATH_MAX];   /* <runtime_dir>/tmux.conf */
	/* Never start a server (tmux -N): agentd-api --no-tmux-start, whose server belongs to
	 * agentd-tmux.service. new-session and start-server then fail while none runs. */
	bool no_start;
};

/* The user options agentd stores on each session. */
struct tmux_meta {
	char id[SESSION_ID_MAX + 1];
	char owner[SESSION_OWNER_MAX + 1];
	char repo[SESSION_NAME_MAX + 1];
	char issue[16];
	char mode[16];
	char agent_session[SESSION_UUID_LEN + 1];
	char created[32];
	char prompt[SESSION_PROMPT_MAX + 1]; /* raw text; stored JSON-encoded in tmux */
};

/* What tmux_list reports for one session. */
struct tmux_info {
	char name[128];
	char path[1200]; /* the session's start directory */
	long activity;   /* #{window_activity}: last output, unix seconds */
	bool pane_dead;
	int dead_status; /* #{pane_dead_status}: exit code (-1: none, a signal ended it) */
	int dead_signal; /* #{pane_dead_signal}: the signal that ended it (0: none) */
	long dead_time;  /* #{pane_dead_time}: when, unix seconds (0: unknown) */
	long pane_pid;   /* #{pane_pid}: the pane's process (also once it is dead) */
	long server_pid; /* #{pid}: the tmux server */
	struct tmux_meta meta;
};

/* One new-session request. */
struct tmux_new {
	const char *name;
	const char *cwd;
	char *const *env;  /* "KEY=value" words passed with -e; NULL-terminated or NULL */
	char *const *argv; /* the pane's command, >= 2 words (tmux execs it without a shell) */
	const struct tmux_meta *meta; /* stored as @agentd_* options in the same tmux call */
};

/*
 * Every operation on an existing session (kill, set-option, respawn, pane pid) names the session
 * by its tmux name AND the agentd id it must belong to: it acts only when the tmux session's
 * @agentd_id is that id, checked in the same tmux call (tmux_guard_format), and answers -EPERM
 * when the session belongs to another id, -ENOENT when it is gone. Two sessions can then never
 * act on each other's agent, whatever their names. An id of "" matches a session without
 * @agentd_id (one made by an older tool, for recovery to claim).
 *
 * Environment: tmux is always run with an empty environment, so a server we start has an empty
 * global environment, and tmux_start_server empties one that another process started. A pane's
 * environment is then exactly its -e words plus what tmux 3.3a itself sets (TERM, TERM_PROGRAM,
 * TERM_PROGRAM_VERSION, TMUX, TMUX_PANE, SHELL, PWD, and PATH=/usr/bin:/bin when PATH is not
 * given). new-session keeps its -e words as the session's environment (so a respawn has them
 * too) and runs with -E, so no client's variables are copied in (update-environment).
 */
#define TMUX_GUARD_FAIL "agentd-not-this-session" /* the command if-shell cannot parse */
#define TMUX_GUARD_MAX  (2 * SESSION_ID_MAX + 80)

/*
 * Writes the tmux format that is 1 only on session name whose @agentd_id is id into out. Returns
 * 0, -EINVAL (a character that could end a format argument) or -ENAMETOOLONG.
 */
int tmux_guard_format(const char *name, const char *id, char *out, size_t outlen);

/* Fills t from cfg (no_start false). Returns 0 or -ENAMETOOLONG. */
int tmux_init(struct tmux *t, const struct config *cfg);

/* Writes the server config file atomically (remain-on-exit, status off, history-limit, exit-empty
 * off, and the hooks of tmux_install_hooks). Returns 0 or -errno with cause. */
int tmux_write_conf(const struct tmux *t, struct cause *cause);

/* Starts the server if it does not run (start-server) and empties its global environment.
 * Returns 0 or -errno with cause. */
int tmux_start_server(const struct tmux *t, struct cause *cause);

/* Copies in to out, inserting '\' before a final ';'. Returns 0 or -ENAMETOOLONG. */
int tmux_escape_word(const char *in, char *out, size_t outlen);

/* Creates a detached session. Returns 0, -EEXIST (duplicate name), or -errno with cause (tmux's
 * own message). */
int tmux_new_session(const struct tmux *t, const struct tmux_new *req, struct cause *cause);

/* Returns 1 if session name exists, 0 if not (or no server), -errno on failure to run tmux. */
int tmux_has_session(const struct tmux *t, const char *name);

/* Kills session name of id. Returns 0, -ENOENT if it did not exist, -EPERM if it is another
 * id's, or -errno with cause. */
int tmux_kill_session(const struct tmux *t, const char *name, const char *id, struct cause *cause);

/* Sets user option key (e.g. "@agentd_mode") on session name of id. Returns 0, -ENOENT, -EPERM
 * or -errno with cause. */
int tmux_set_option(const struct tmux *t, const char *name, const char *id, const char *key,
		    const char *value, struct cause *cause);

/* Replaces the pane's process of session name of id (respawn-pane -k) with argv, env ("KEY=value"
 * words for -e, NULL-terminated, or NULL) added to the session's environment for this process.
 * Returns 0, -ENOENT, -EPERM or -errno with cause. */
int tmux_respawn(const struct tmux *t, const char *name, const char *id, char *const *env,
		 char *const *argv, struct cause *cause);

/*
 * Lists every session with its metadata. *out is allocated (caller frees), *n set. No server
 * running is an empty list. Returns 0 or -errno with cause.
 */
int tmux_list(const struct tmux *t, struct tmux_info **out, size_t *n, struct cause *cause);

/* Reads the pid of the pane process of session name of id. Returns the pid (> 0), -ENOENT,
 * -EPERM or -errno with cause. */
int tmux_pane_pid(const struct tmux *t, const char *name, const char *id, struct cause *cause);

/* Asks the server its pid (#{pid}). Returns the pid (> 0), -ENOENT when no server runs, or -errno,
 * all with cause. */
int tmux_server_pid(const struct tmux *t, struct cause *cause);

/* Returns 1 if the server answers, 0 if no server runs, -errno if tmux cannot be run. */
int tmux_server_running(const struct tmux *t);

/*
 * Sets the global hooks pane-died and session-closed to `wait-for -S TMUX_CHANNEL` on the
 * running server (one that was started before they were in the config file), and unsets an older
 * agentd's session-created hook. Returns 0, -ENOENT when no server runs, or -errno with cause.
 */
int tmux_install_hooks(const struct tmux *t, struct cause *cause);

/*
 * Blocks until TMUX_CHANNEL is signalled (or was since the last wait). Returns 0 when signalled,
 * -ENOENT when no server runs or the server went away while waiting, or -errno with cause.
 */
int tmux_wait(const struct tmux *t, struct cause *cause);

/* Signals TMUX_CHANNEL (wakes tmux_wait). Returns 0, -ENOENT (no server) or -errno. */
int tmux_signal(const struct tmux *t);

/*
 * Reads the state of session name's pane into out (name, pane_dead, dead_status, dead_signal,
 * dead_time, pane_pid, server_pid, meta.id; other fields zeroed). Returns 1 when the session
 * exists, 0 when it (or the server) does not, -errno when tmux cannot be run.
 */
int tmux_pane_state(const struct tmux *t, const char *name, struct tmux_info *out);

/*
 * Writes the text of the pane of session name of id, from history lines above its screen to its
 * end (capture-pane -p -J), into out (cut to outlen). Returns 0, -ENOENT, -EPERM or -errno with
 * cause.
 */
int tmux_capture(const struct tmux *t, const char *name, const char *id, int history, char *out,
		 size_t outlen, struct cause *cause);

/*
 * Makes the server reap its children that have ended: tmux 3.3a sometimes leaves a pane's process
 * a zombie until its next child exits, and a process that ended by itself just before its
 * session was killed stays one for good. A child that exits at once (TMUX_REAP_PROGRAM in a
 * session of its own, TMUX_REAP_SESSION, which no agent id can be, killed in the same call)
 * brings the SIGCHLD. Only while a server runs. Returns 0 or -EIO with cause.
 */
#define TMUX_REAP_SESSION "_agentd-reap"
#define TMUX_REAP_PROGRAM "/bin/true"
int tmux_reap(const struct tmux *t, struct cause *cause);

#endif
