/*
 * The session record: what one agent session is, how its names are derived from
 * (owner, name, issue), how input is validated (exactly the rules of API.md), and its JSON form.
 * The JSON is both the API's session object and the on-disk record; fields that only the daemons
 * use are written to disk but left out of the API form.
 */
#ifndef AGENTD_SESSION_H
#define AGENTD_SESSION_H

#include "cause.h"
#include "cgroup.h"
#include "cost.h"
#include "policy.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SESSION_OWNER_MAX  39
#define SESSION_NAME_MAX   100
#define SESSION_ISSUE_MAX  2147483647L
#define SESSION_ID_MAX     (SESSION_NAME_MAX + 1 + 10)
#define SESSION_PROMPT_MAX 8192 /* tmux carries a command in one 16 KiB message */
#define SESSION_PATH_MAX   1200
#define SESSION_ERROR_MAX  512
#define SESSION_UUID_LEN   36
#define SESSION_RECORD_MAX (64 * 1024)
#define SESSION_EXIT_MAX   255   /* exitStatus: an exit code, or 128 + a signal number */
#define SESSION_SIGNAL_MAX 16    /* "SIGKILL", "SIGRTMIN+15", ... */
#define SESSION_BY_MAX     193   /* = AUTH_BY_MAX (core/auth.h): identity[:actor] */
#define SESSION_UID_MAX    65533 /* below nobody: cageuid_parse_range's bound */
#define SESSION_AGENT_MAX  31    /* an agent's name (core/agents.h) */

enum session_state {
	SESSION_CREATING,
	SESSION_RUNNING,
	SESSION_ATTACHED,
	SESSION_STOPPING,
	SESSION_FAILED,
	SESSION_EXITED, /* the agent's process ended; its tmux session keeps the last screen */
	SESSION_LOST,   /* the tmux session is gone (killed behind our back, or the whole server) */
};

enum session_mode { SESSION_TERMINAL, SESSION_STRUCTURED };

/* Why an exited session's agent ended (its API name in quotes). */
enum session_exit_reason {
	SESSION_EXIT_EXIT,    /* "exit": it exited by itself, with exitStatus */
	SESSION_EXIT_SIGNAL,  /* "signal": a signal ended it (exitSignal), not the memory limit */
	SESSION_EXIT_OOM,     /* "oom": the kernel killed it inside its session's memory limit */
	SESSION_EXIT_UNKNOWN, /* "unknown": neither tmux nor the kernel could tell */
	SESSION_EXIT_RESTART_LIMIT, /* "restart_limit": it kept crashing; restarts stopped */
	SESSION_EXIT_TIMEOUT,       /* "timeout": stopped by the daemon at its timeout */
};

/*
 * What the agent is doing, as the bridge's attention hub last wrote it (the one writer). The API
 * form says "exited" instead whenever the state holds no running agent (session_activity_name).
 */
enum session_activity {
	SESSION_IDLE,    /* the turn ended: the agent waits for the next prompt */
	SESSION_WORKING, /* a turn is running */
	SESSION_WAITING, /* a permission request (or a question) waits for a person */
};

#define SESSION_PENDING_MAX     16  /* requests listed in a record; more wait unlisted */
#define SESSION_REQUEST_ID_MAX  127 /* = HOSTPROTO_REQUEST_ID_MAX */
#define SESSION_TOOL_NAME_MAX   64
#define SESSION_DESCRIPTION_MAX 256 /* bytes of a request's description kept (cut at UTF-8) */

/* A tool-permission request waiting for an answer, as a client lists it. */
struct session_pending {
	char request_id[SESSION_REQUEST_ID_MAX + 1];
	char tool_name[SESSION_TOOL_NAME_MAX + 1];
	char description[SESSION_DESCRIPTION_MAX + 1];
};

/* The pull request of the session's branch (POST /sessions/<id>/pr), as GitHub last said. */
#define SESSION_PR_URL_MAX     512 /* an html_url: https://github.com/<owner>/<name>/pull/<n> */
#define SESSION_PR_FAILING_MAX 8   /* failing check names kept: a phone shows a few, not 60 */
#define SESSION_PR_CHECK_MAX   64  /* bytes of one check's name kept (cut at UTF-8) */

enum session_pr_state { SESSION_PR_OPEN, SESSION_PR_MERGED, SESSION_PR_CLOSED };
enum session_pr_checks {
	SESSION_CHECKS_NONE,    /* not known yet, or the commit has no check runs */
	SESSION_CHECKS_PENDING, /* a check runs or is queued */
	SESSION_CHECKS_SUCCESS,
	SESSION_CHECKS_FAILURE, /* at least one ended failure, timed_out, cancelled or
				   action_required */
};

struct session_pr {
	uint64_t number; /* 0: the session has no pull request */
	char url[SESSION_PR_URL_MAX + 1];
	enum session_pr_state state;
	enum session_pr_checks checks;
	unsigned n_failing;
	char failing[SESSION_PR_FAILING_MAX][SESSION_PR_CHECK_MAX + 1];
};

const char *session_pr_state_name(enum session_pr_state st);
int session_pr_state_parse(const char *s, enum session_pr_state *out);
const char *session_pr_checks_name(enum session_pr_checks c);

/* True when the session's work is done: its pull request was merged. */
bool session_finished(const struct session_pr *pr);

/* Adds a result's total_cost_usd and usage (input_tokens, output_tokens,
 * cache_read_input_tokens) to c, one turn more. Fields absent or of another type add nothing. */
void session_cost_add(struct session_cost *c, json_object *result);

struct session {
	char id[SESSION_ID_MAX + 1];
	char owner[SESSION_OWNER_MAX + 1];
	char name[SESSION_NAME_MAX + 1];
	long issue;
	char worktree[SESSION_PATH_MAX];
	char branch[32];
	char tmux_name[SESSION_ID_MAX + 1];
	enum session_state state;
	enum session_mode mode;
	/* The agent CLI it runs (core/agents.h), fixed at its creation: "claude" in a record made
	 * before agents existed. */
	char agent[SESSION_AGENT_MAX + 1];
	char agent_session_id[SESSION_UUID_LEN + 1];
	int clients;
	bool launched; /* claude has run once: later launches use --resume */
	/* Disk only: how many times agentd-api started claude for this session (session_launch),
	 * so the hub knows a request asked by an earlier claude, even one a reboot ended. */
	uint32_t launch;
	char prompt[SESSION_PROMPT_MAX + 1];
	char error[SESSION_ERROR_MAX];
	int64_t created_at, updated_at, last_activity; /* unix seconds */
	/* The record's version: store_write raises it by one with every write, so a client can
	 * tell which of two objects of the session is newer. */
	uint64_t rev;
	/* Who asked for the last change a person makes (create or restart, mode switch, delete):
	 * nginx's X-Agentd-By (core/auth.h), "" for a record made otherwise (recovery). */
	char by[SESSION_BY_MAX + 1];
	/* EXITED only: the pane process's exit code, or 128 + N when signal N ended it (the shell's
	 * convention; exit_signal then names it, e.g. "SIGKILL", else it is ""), and when. */
	int exit_status;
	char exit_signal[SESSION_SIGNAL_MAX];
	int64_t exited_at;
	enum session_exit_reason exit_reason; /* EXITED only; recovery.c writes it with the rest */
	/* The session's share of the machine, fixed at creation (each at most the configured
	 * maximum); all 0 in a record made before limits existed: the configured ones apply. */
	struct cgroup_limits limits;
	/* The session's own TCP ports (AGENTD_PORT_BASE): PORT and AGENTD_PORT_RANGE in its
	 * agent's environment, fixed at creation so they survive restarts; 0: none. */
	uint16_t port_first, port_last;
	/* A caged session's own uid, and gid of the same number (core/cageuid.h), fixed at
	 * creation and claimed again after a reboot; 0: it runs as the one agent user. */
	uint32_t uid;
	/* The pull request agentd-api opened for the branch and its poller keeps current. */
	struct session_pr pr;
	/* Restart, timeout and setup (core/policy.h): fixed at creation, counted by recovery. */
	struct session_policy policy;
	/* Written by the bridge's attention hub only: */
	enum session_activity activity;
	int64_t activity_at; /* unix milliseconds of the last activity change */
	unsigned n_pending;
	struct session_pending pending[SESSION_PENDING_MAX];
	uint32_t pending_launch; /* disk only: the launch the pending requests were asked under */
	/* Disk only: the last event of the session's agentd-host the hub took in (structured
	 * mode), so a restarted bridge goes on from there. */
	uint64_t host_event;
	/* Written by the hub with host_event, so a result is counted once across restarts:
	 * its structured turns' results (claude's total_cost_usd and usage). */
	struct session_cost cost;
	/* Written by agentd-api only: claude's transcript as read so far, for terminal turns. */
	struct cost_transcript transcript;
	/* The cost (both kinds) by UTC day, for GET /usage: whoever adds to a cost adds there. */
	struct cost_days days;
	/* Fixed at creation (or AGENTD_SESSION_BUDGET_USD): no new prompt once the cost reached
	 * it. 0: none. */
	uint64_t budget_micros;
};

/* The session's whole cost: its structured turns' and its terminal turns'. */
void session_cost_total(const struct session *s, struct session_cost *out);

/* True when s has a budget and its cost reached it. */
bool session_over_budget(const struct session *s);

/* When s is over its budget, the sentence a refused prompt gets (with both figures) in out;
 * returns whether it is. */
bool session_budget_why(const struct session *s, char *out, size_t len);

/* Notes that claude was just started for s (the first time or again: create, restart, mode
 * switch, after a reboot): later launches resume its conversation, and the requests an earlier
 * claude asked are known as gone. */
void session_launch(struct session *s);

/* Validators for API input. Return true when s is acceptable. */
bool session_owner_valid(const char *s);
bool session_name_valid(const char *s);
bool session_issue_valid(int64_t issue);

/*
 * Validates an id taken from a URL path: it must be "<valid name>-<valid issue>" as produced by
 * session_init. Returns true when well-formed.
 */
bool session_id_valid(const char *id);

/*
 * Fills every derived field of s from owner, name and issue (which must be valid): id, worktree
 * under base_dir, branch, tmux_name; sets created_at/updated_at/last_activity to now, state
 * CREATING, mode TERMINAL, a fresh agent_session_id. Returns 0 or -ENAMETOOLONG / -EINVAL.
 */
int session_init(struct session *s, const char *base_dir, const char *owner, const char *name,
		 long issue);

/* Writes "<name>-issue-<issue>" path of the worktree into out. Returns 0 or -ENAMETOOLONG. */
int session_worktree_path(const char *base_dir, const char *name, long issue, char *out,
			  size_t outlen);

/*
 * The tmux session name of id, one character for each: tmux forbids '.' and ':' in session names,
 * so '.' becomes '_' (tmux's own rule), and '_' becomes SESSION_TMUX_UNDERSCORE so that two ids
 * never share a name ("a.b-1" -> "a_b-1", "a_b-1" -> "a+b-1"). out must hold strlen(id)+1.
 */
#define SESSION_TMUX_UNDERSCORE '+'
void session_tmux_name(const char *id, char *out, size_t outlen);

/*
 * Tells whether name is a tmux name id may have: session_tmux_name's, or the one it had before the
 * '+' separator ('_' kept as is), which records and tmux sessions made then still carry.
 */
bool session_tmux_name_valid(const char *id, const char *name);

/* Fills prompt_template with {owner} {name} {issue} replaced into out. -ENAMETOOLONG if it is too
 * long. */
int session_render_prompt(const char *tmpl, const char *owner, const char *name, long issue,
			  char *out, size_t outlen);

/* Writes a random RFC 4122 version-4 UUID (36 chars + NUL) into out. Returns 0 or -errno. */
int session_uuid(char out[SESSION_UUID_LEN + 1]);

/*
 * Moves s to EXITED from what tmux says of its dead pane: status is the exit code (ignored when
 * signal > 0), signal the number of the signal that ended it (0: none), at the time it died.
 */
void session_set_exited(struct session *s, int status, int signal, int64_t at);

const char *session_exit_reason_name(enum session_exit_reason r);

/* True for the states that hold a claude or its tmux session: not failed or lost. */
bool session_holds_slot(enum session_state st);

/*
 * For a session that has no agent to talk to (stopping, failed, exited, lost): writes a sentence
 * for a 409 answer into msg and returns its error code ("not_running", "agent_exited",
 * "session_lost"). Returns NULL (msg untouched) for creating, running and attached.
 */
const char *session_unavailable(const struct session *s, char *msg, size_t msglen);

const char *session_state_name(enum session_state st);
int session_state_parse(const char *s, enum session_state *out);
const char *session_mode_name(enum session_mode m);

/* The API's activity of s: "exited" when its state holds no running agent (stopping, failed,
 * exited, lost), else the stored activity's name. */
const char *session_activity_name(const struct session *s);
int session_activity_parse(const char *s, enum session_activity *out);

/* Copies src into out (outlen bytes), cut at a UTF-8 character boundary when too long. */
void session_copy_cut(char *out, size_t outlen, const char *src);
int session_mode_parse(const char *s, enum session_mode *out);

/* A POST /sessions body, validated; the strings point into the parsed body. */
struct session_create {
	const char *owner, *name;
	const char *prompt; /* NULL: none given */
	const char *agent;  /* NULL: none given (AGENTD_DEFAULT_AGENT) */
	long issue;
	enum session_mode mode; /* SESSION_TERMINAL unless given */
};

/*
 * Checks a POST /sessions body (docs/API.md: repo{owner,name}, issue, optional mode, prompt and
 * agent (a string: whether it names an agent is the caller's to check, agents_find); strings
 * hiding a NUL are refused). Returns 0 with *in filled, or -EINVAL with the reason in
 * cause.
 */
int session_parse_create(json_object *root, struct session_create *in, struct cause *cause);

/*
 * Reads the optional "limits" of a POST /sessions body: {"memory": "2G" or bytes, "cpus": 1.5 or
 * "1.5", "tasks": 1024}, each above 0 and at most max's (cgroup_parse_memory, _cpus); one not
 * given is max's. Returns 0 with *out filled, or -EINVAL with cause naming the field.
 */
int session_parse_limits(json_object *root, const struct cgroup_limits *max,
			 struct cgroup_limits *out, struct cause *cause);

/*
 * Encodes s as a new JSON object (caller puts it). With for_disk, fields used only by the daemons
 * (launched, hostEvent) are included. "activity" is session_activity_name's, "activityAt" a time
 * with milliseconds, "pending" the listed requests while the activity is waiting (else []),
 * "agent" and (API form only) "activitySource" (agents_activity_source). "error"
 * is present in states failed and lost; "exitStatus", "exitReason", "exitedAt" (and "exitSignal"
 * when a signal ended the agent) only in state exited; "limits" ({memory bytes, cpus, tasks})
 * when the record has them. Returns NULL on allocation failure.
 */
json_object *session_to_json(const struct session *s, bool for_disk);

/*
 * Decodes a record written by session_to_json(for_disk). Every field is checked (an exited
 * record must carry exitStatus 0..SESSION_EXIT_MAX and exitedAt, and exitSignal if present must
 * be "SIG" and up to 12 of [A-Z0-9+]); returns 0 or -EINVAL with cause naming the bad field.
 */
int session_from_json(struct session *s, json_object *obj, struct cause *cause);

#endif
