/*
 * agentd-host's side of an agent that speaks the Agent Client Protocol (core/acp.h): gemini
 * --acp, opencode acp, codex-acp, or any custom agent configured with that protocol. The process
 * itself is claudeproc.c's (spawned, read line by line, stopped the same way); this module speaks
 * to it:
 *   - initialize, then session/load of the session this host's directory remembers (acp.json in
 *     the session's state dir) when the agent can load one, else of the one --resume names (the
 *     terminal mode's conversation: agentd-api passes it), else session/new; a failed load
 *     falls back to session/new (the event log still has the conversation; the agent does not).
 *     gemini cannot load a session within the wall-clock minute it was created (it re-creates
 *     the minute-named file and loses it): for gemini the load waits for the next minute.
 *     What a load replays is history the event log holds already: it is not emitted again.
 *   - one session/prompt at a time; prompts sent meanwhile wait here (HOST_QUEUED_MAX), each its
 *     own turn, announced with the host's "queued" event like claude's.
 *   - session/update made into the common event shape (acp.h); the prompt response ends the turn
 *     with a "result" event.
 *   - session/request_permission becomes a "permission" event answered through perms.c (allow
 *     or deny mapped onto the request's option kinds, acp_permission_option).
 *   - an interrupt is session/cancel; requests still pending are then answered "cancelled" and
 *     withdrawn (permission_resolved by "agent").
 *   - any other request of the agent's (fs and terminal methods: not advertised) is answered
 * -32601.
 */
#ifndef AGENTD_HOST_ACPAGENT_H
#define AGENTD_HOST_ACPAGENT_H

#include "acp.h"
#include "config.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#define ACPAGENT_SESSION_ID_MAX 255 /* an agent's session id: UUIDs, ses_… */
#define ACPAGENT_QUEUE_MAX      32  /* prompts waiting here: more than HOST_QUEUED_MAX + 1 */
#define ACPAGENT_STATE_NAME     ACP_STATE_NAME
/* gemini's session files are named by the minute: a load waits this long past the minute's
 * end, so clocks a little apart still see the next minute. */
#define ACPAGENT_MINUTE_SLACK_MS 1500
/* gemini answers session/load first and replays the history after (not awaited): the load is
 * over once the agent has been quiet this long. Its replay is in memory and comes in a burst;
 * a prompt sent sooner would get the replay's tail as its own events. */
#define ACPAGENT_SETTLE_MS 300

struct host;

/*
 * agentd-host --acp NAME [--resume ID [--resume-made MS]]: the conversation to load when the
 * host's acp.json names none (a session that ran in terminal mode first). ID is the agent's
 * session id, or ACP_RESUME_NEWEST: the one session/list says was updated last in this
 * directory (the agent's home is the session's own, so that is the session's). MS: when the
 * agent made it (gemini's minute), 0 when not known.
 */
struct acpagent_opts {
	const char *name;
	const char *resume;
	int64_t resume_made_ms;
};

enum acpagent_state {
	ACPAGENT_INITIALIZING, /* initialize sent */
	ACPAGENT_WAITING,      /* waiting for the next minute before session/load */
	ACPAGENT_LISTING,      /* session/list sent: which session to load */
	ACPAGENT_LOADING,      /* session/load sent: its updates are history */
	ACPAGENT_SETTLING,     /* loaded: its replay may still come (gemini sends it after) */
	ACPAGENT_CREATING,     /* session/new sent */
	ACPAGENT_READY,
	ACPAGENT_FAILED, /* no session: prompts end with an error result */
};

struct acpagent {
	bool on;            /* this host speaks ACP (agentd-host --acp NAME) */
	const char *name;   /* the agent's name (argv: borrowed) */
	const char *resume; /* --resume (argv: borrowed), or NULL */
	int64_t resume_made_ms;
	enum acpagent_state state;
	uint64_t next_id; /* the next JSON-RPC id of ours */
	uint64_t init_id, session_req, prompt_req;
	bool can_load, can_list, in_turn;
	char session_id[ACPAGENT_SESSION_ID_MAX + 1];
	int64_t session_created_ms;
	char *model;
	char cwd[CONFIG_PATH_MAX];
	char state_path[CONFIG_PATH_MAX];
	struct acp_turn turn;
	uint64_t last_result;            /* the id of the last result event emitted */
	char *queue[ACPAGENT_QUEUE_MAX]; /* prompts waiting for their turn, oldest first */
	size_t qhead, qlen;
	uint64_t next_permission;
	int64_t started_ms; /* in request ids: unique across restarts */
	uv_timer_t minute;
	bool timer_init;
};

/* Starts speaking to the agent claudeproc started: initialize. */
void acpagent_start(struct host *h);

/* One line of the agent's stdout (without its '\n'). */
void acpagent_line(struct host *h, const char *line, size_t len);

/* prompt (a JSON string) as the next turn: it starts now or waits. Returns the turns ahead. */
uint64_t acpagent_prompt(struct host *h, json_object *prompt);

/* session/cancel for the running turn. */
void acpagent_interrupt(struct host *h);

/* Answers the agent's permission request (its JSON-RPC id, its params): allow or deny. */
void acpagent_answer(struct host *h, json_object *rpc_id, json_object *params, bool allow);

/* The agent exited (or the host ends): what a turn held is freed. */
void acpagent_close(struct host *h);

void acpagent_free(struct host *h);

/* For gemini's session files: whether a load at now_ms falls in created_ms's minute, and how
 * long to wait (ms) for the next one. */
bool acpagent_same_minute(int64_t created_ms, int64_t now_ms, uint64_t *wait_ms);

#endif
