/*
 * The hook socket (<runtime>/hooks.sock): where agentd-hook, the command claude runs for its hooks
 * in a terminal-mode session, reports (core/hookproto.h). Each connection carries one report line.
 * The session is never taken from the peer's word: the peer's pid (SO_PEERCRED) and its ancestry
 * lead to a tmux pane (panes.h), and tmux's list of panes says whose it is; a peer that is in no
 * agentd session's pane is refused (closed without an answer). The list is asked of tmux again
 * (one `tmux list-panes` at a time, at most one a HOOKS_REFRESH_MIN_MS) only when a peer's pane
 * is not in the last one, and only a list made after the peer connected can refuse it.
 *
 * What a report means is the sink's business (server.c hands them to the attention hub):
 *   - every event but PermissionRequest: sink->report, answered {"decision":null};
 *   - PermissionRequest: sink->ask makes a pending request; the hook gets {"requestId"} and the
 *     connection stays open until the decision (sink calls the given attention_decided_fn, whose
 *     answer is written, then the connection closes), until wait_ms pass (sink->expired; answered
 *     {"decision":null}: the TUI's dialog asks alone), or until the hook goes (EOF: claude ended
 *     it because the dialog was answered in the terminal; sink->gone).
 * Every input is bounded: HOOKPROTO_LINE_MAX bytes of report, HOOKS_IDLE_MS to send its first
 * byte and HOOKS_READ_TIMEOUT_MS all of it, HOOKS_CONNS_MAX connections; anything after the
 * report line ends the connection (as gone). No one peer can take the others' share: a
 * session's pane holds at most HOOKS_CONNS_PER_SESSION connections at once, and a peer not
 * identified yet (no pane in the list at hand) at most HOOKS_PENDING_PER_UID per user; the
 * others are refused at once (a PermissionRequest's agentd-hook asks again). Warnings about
 * peers are at most HOOKS_WARN_BURST a HOOKS_WARN_INTERVAL_MS, then one line counts the rest.
 */
#ifndef AGENTD_BRIDGE_HOOKS_H
#define AGENTD_BRIDGE_HOOKS_H

#include "attention.h"
#include "cause.h"
#include "hookproto.h"

#include <stdbool.h>
#include <sys/types.h>
#include <uv.h>

#define HOOKS_CONNS_MAX       256         /* connections at once; more are closed at once */
#define HOOKS_READ_TIMEOUT_MS (10 * 1000) /* to send the report line and be identified */
#define HOOKS_IDLE_MS         2000 /* to send a first byte (agentd-hook writes once connected) */
/* A pane's claude runs a hook per event, a few at once (parallel tools) and one waiting
 * PermissionRequest: far fewer than this. More would let one pane take every connection. */
#define HOOKS_CONNS_PER_SESSION 16
/* Peers not in the list at hand wait for tmux's next one (a new pane, or no pane: refused then);
 * per uid, so another user (or an agent that left its pane) cannot fill the table with them. */
#define HOOKS_PENDING_PER_UID  16
#define HOOKS_WARN_BURST       5           /* warnings about peers logged per interval ... */
#define HOOKS_WARN_INTERVAL_MS (10 * 1000) /* ... then one line says how many were left out */
#define HOOKS_REFRESH_MIN_MS   250  /* between two tmux list-panes (a peer in no pane costs one) */
#define HOOKS_TMUX_TIMEOUT_MS  5000 /* for tmux's list; then it is killed and taken as empty */
#define HOOKS_SOCKET_MODE      0666 /* the agent's user connects; the peer's pane is the check */

/* What the reports are for (attention.h has the same calls with struct attention *). */
struct hooks_sink {
	void (*report)(void *arg, const char *id, enum hook_event ev, json_object *payload);
	int (*ask)(void *arg, const char *id, json_object *payload, attention_decided_fn fn,
		   void *fn_arg, char request_id[HOSTPROTO_REQUEST_ID_MAX + 1]);
	void (*gone)(void *arg, const char *id, const char *request_id);
	void (*expired)(void *arg, const char *id, const char *request_id);
	void *arg;
};

struct hooks_options {
	const char *socket_path; /* listened on (a stale file there is replaced) */
	char *const *panes_argv; /* prints PANES_TMUX_FORMAT lines: tmux -S … list-panes -a -F */
	char *const *panes_env;  /* its environment (NULL: ours) */
	const char *proc_root;   /* PANES_PROC_ROOT, or a test's */
	unsigned wait_ms;        /* a PermissionRequest's wait for a decision */
	unsigned warn_interval_ms; /* HOOKS_WARN_INTERVAL_MS, or a test's (0: the default) */
	const struct hooks_sink *sink;
	/* The uid a session's agent runs as, 0 when it has none of its own (NULL: not checked):
	 * a hook connection from a process of another uid is not that session's, wherever its
	 * process seems to be. */
	uid_t (*session_uid)(void *arg, const char *id);
	void *session_uid_arg;
};

struct hooks;

/*
 * Listens on opt->socket_path (mode HOOKS_SOCKET_MODE). opt and everything it points to are
 * borrowed for the life of the hooks. Returns the hooks, or NULL with cause.
 */
struct hooks *hooks_open(uv_loop_t *loop, const struct hooks_options *opt, struct cause *cause);

/*
 * Stops listening (the socket file is removed) and closes every connection without calling the
 * sink: a waiting hook connects again and asks the next bridge. Frees everything once the loop
 * has run the close callbacks. NULL is a no-op.
 */
void hooks_close(struct hooks *h);

/* The server reaped pid: true when it was the hooks' tmux list (then nothing else is told). */
bool hooks_child_exited(struct hooks *h, pid_t pid);

#endif
