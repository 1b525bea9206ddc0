/*
 * A session's policies (docs/API.md "Session"): whether an agent that ended by itself is started
 * again (restart, maxRestarts, the backoff between attempts), how long the session may run
 * (timeout), and whether its setup command ran. Fixed at creation from the POST body or the
 * configuration, kept in the record with their counters, so they survive daemon restarts. The
 * decisions are pure functions here; recovery.c (the one writer of exited) acts on them.
 */
#ifndef AGENTD_POLICY_H
#define AGENTD_POLICY_H

#include "cause.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

/* An agent that crashes at once every time must not restart for ever: a thousand attempts at
 * the backoff's cap is days. */
#define POLICY_MAX_RESTARTS_MAX 1000
/* The backoff doubles from its base up to this: an agent restarted every 5 minutes costs
 * little, and a fault outside it (an API outage) is retried often enough to catch its end. */
#define POLICY_BACKOFF_CAP_MS (5 * 60 * 1000)
/* A timeout of more than a year is a typo. */
#define POLICY_TIMEOUT_MAX  (366L * 86400)
#define POLICY_DURATION_MAX 24 /* the text of a duration: "31622400s" and room */
/* Words of AGENTD_SETUP_COMMAND: a program and its options, not a script. */
#define POLICY_SETUP_ARGV_MAX 64

enum policy_restart {
	POLICY_RESTART_UNSET, /* a record made before policies: the configuration decides */
	POLICY_RESTART_NO,
	POLICY_RESTART_ON_FAILURE, /* an exit status other than 0, or a signal */
	POLICY_RESTART_ALWAYS,     /* also after exit 0 */
};

/* The setup command of a new worktree: not run (none configured), running, done, failed. */
enum policy_setup { POLICY_SETUP_NONE, POLICY_SETUP_RUNNING, POLICY_SETUP_OK, POLICY_SETUP_FAILED };
#define POLICY_SETUP_LINES  10   /* the last lines of its output kept */
#define POLICY_SETUP_OUTPUT 1024 /* at most these bytes of them (the tail) */

struct session_policy {
	enum policy_restart restart;
	int max_restarts;        /* with restart set: how many restarts before restart_limit */
	uint32_t restarts;       /* restarts by the policy since the last start by a person */
	int64_t restart_at_ms;   /* unix ms of the next restart; 0: none due */
	int64_t timeout;         /* seconds the session may run; 0: no timeout */
	int64_t timeout_at;      /* unix seconds when it is stopped; 0: none */
	int64_t stop_at_ms;      /* disk only: unix ms a graceful stop for the timeout was asked */
	bool setup_done;         /* disk only: the setup command ran in this worktree */
	enum policy_setup setup; /* the setup command's progress ("setup") */
	int setup_exit;          /* its exit status (128 + N: signal N) */
	char setup_output[POLICY_SETUP_OUTPUT]; /* its last lines ("" while it runs) */
};

/* The defaults of a new session (AGENTD_RESTART_POLICY, AGENTD_MAX_RESTARTS,
 * AGENTD_SESSION_TIMEOUT). */
struct policy_defaults {
	enum policy_restart restart;
	int max_restarts;
	int64_t timeout;
};

/* "no", "on-failure", "always". Returns 0 or -EINVAL. */
int policy_restart_parse(const char *s, enum policy_restart *out);
const char *policy_restart_name(enum policy_restart r);

/*
 * A duration: digits with an optional unit s, m, h or d ("90s", "30m", "2h"; no unit: seconds),
 * 1 s to POLICY_TIMEOUT_MAX. Returns 0 with *secs, or -EINVAL.
 */
int policy_parse_duration(const char *s, int64_t *secs);

/*
 * Reads the optional "restart", "maxRestarts" and "timeout" (a duration text or seconds) of a
 * POST /sessions body into out, the defaults for what is not given. Returns 0 or -EINVAL with
 * cause naming the field.
 */
int policy_parse_create(json_object *root, const struct policy_defaults *def,
			struct session_policy *out, struct cause *cause);

/* Whether p (def for a record without a policy) restarts an agent that ended with exit_status
 * (0..255; a signal is 128 + N) or a signal. */
bool policy_wants_restart(const struct session_policy *p, const struct policy_defaults *def,
			  int exit_status, bool signaled);

/* The restart limit of p (def's for a record without a policy). */
int policy_max_restarts(const struct session_policy *p, const struct policy_defaults *def);

/* The wait before restart number restarts + 1: base_ms doubled per restart so far, at most
 * POLICY_BACKOFF_CAP_MS. */
int64_t policy_backoff_ms(uint32_t restarts, int base_ms);

/* Adds p's fields to a session object o (for_disk: also the daemons' own). */
void policy_to_json(const struct session_policy *p, json_object *o, bool for_disk);

/* Reads p from a record (every field optional). Returns 0 or -EINVAL with cause. */
int policy_from_json(struct session_policy *p, json_object *o, struct cause *cause);

#endif
