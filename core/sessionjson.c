/*
 * The session record's codec (session.h): the object of the API and of the record on disk
 * (session_to_json), and the record read back with every field checked (session_from_json),
 * with the parts of it that have their own shape (pending requests, limits, ports, the pull
 * request, the cost). The rest of session.h (names, states, a POST's body) is session.c.
 */
#include "session.h"
#include "session_int.h"

#include "agents.h"
#include "isotime.h"
#include "policy.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void session_add_str(json_object *o, const char *key, const char *val)
{
	json_object_object_add(o, key, json_object_new_string(val));
}

static void session_add_time_ms(json_object *o, const char *key, int64_t ms)
{
	char buf[ISOTIME_MS_LEN + 1];

	isotime_format_ms(ms, buf, sizeof(buf));
	session_add_str(o, key, buf);
}

static json_object *session_pending_json(const struct session *s, bool for_disk)
{
	json_object *arr = json_object_new_array();

	if (arr == NULL || (!for_disk && strcmp(session_activity_name(s), "waiting") != 0))
		return arr;
	for (unsigned i = 0; i < s->n_pending && i < SESSION_PENDING_MAX; i++) {
		json_object *p = json_object_new_object();

		if (p == NULL)
			break;
		session_add_str(p, "requestId", s->pending[i].request_id);
		session_add_str(p, "toolName", s->pending[i].tool_name);
		session_add_str(p, "description", s->pending[i].description);
		json_object_array_add(arr, p);
	}
	return arr;
}

static void session_add_time(json_object *o, const char *key, int64_t t)
{
	char buf[ISOTIME_LEN + 1];

	isotime_format(t, buf, sizeof(buf));
	session_add_str(o, key, buf);
}

static json_object *session_limits_json(const struct cgroup_limits *l)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "memory", json_object_new_int64((int64_t)l->memory_max));
	/* cpus as the number given: 1.5, and 2 (not 2.0) for whole CPUs; written from its digits,
	 * since json-c prints a double with 17 of them (0.333 as 0.33300000000000002). */
	if (l->cpu_milli % 1000 == 0) {
		json_object_object_add(o, "cpus", json_object_new_int64(l->cpu_milli / 1000));
	} else {
		char text[32];
		size_t n = (size_t)snprintf(text, sizeof(text), "%" PRIu32 ".%03" PRIu32,
					    l->cpu_milli / 1000, l->cpu_milli % 1000);

		while (n > 0 && text[n - 1] == '0')
			text[--n] = '\0';
		json_object_object_add(o, "cpus",
				       json_object_new_double_s(l->cpu_milli / 1000.0, text));
	}
	json_object_object_add(o, "tasks", json_object_new_int64(l->tasks_max));
	return o;
}

static const char *const session_pr_state_names[] = {"open", "merged", "closed"};
static const char *const session_pr_checks_names[] = {"none", "pending", "success", "failure"};

const char *session_pr_state_name(enum session_pr_state st)
{
	return session_pr_state_names[st];
}

int session_pr_state_parse(const char *s, enum session_pr_state *out)
{
	for (size_t i = 0; i < sizeof(session_pr_state_names) / sizeof(char *); i++)
		if (s != NULL && strcmp(s, session_pr_state_names[i]) == 0) {
			*out = (enum session_pr_state)i;
			return 0;
		}
	return -EINVAL;
}

const char *session_pr_checks_name(enum session_pr_checks c)
{
	return session_pr_checks_names[c];
}

bool session_finished(const struct session_pr *pr)
{
	return pr->number != 0 && pr->state == SESSION_PR_MERGED;
}

/* A result's count under key of o (an integer from 0), or 0. */
static uint64_t session_cost_count(json_object *o, const char *key)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int) ||
	    json_object_get_int64(v) < 0)
		return 0;
	return (uint64_t)json_object_get_int64(v);
}

void session_cost_add(struct session_cost *c, json_object *result)
{
	json_object *usage = NULL, *v;

	if (json_object_object_get_ex(result, "total_cost_usd", &v) &&
	    (json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int)) &&
	    json_object_get_double(v) >= 0 && json_object_get_double(v) < 1e9)
		c->usd_micros += (uint64_t)(json_object_get_double(v) * 1e6 + 0.5);
	if (json_object_object_get_ex(result, "usage", &usage) &&
	    json_object_is_type(usage, json_type_object)) {
		c->input_tokens += session_cost_count(usage, "input_tokens");
		c->output_tokens += session_cost_count(usage, "output_tokens");
		c->cache_read_tokens += session_cost_count(usage, "cache_read_input_tokens");
	}
	c->turns++;
}

void session_cost_total(const struct session *s, struct session_cost *out)
{
	cost_sum(&s->cost, &s->transcript.cost, out);
}

bool session_over_budget(const struct session *s)
{
	struct session_cost c;

	session_cost_total(s, &c);
	return s->budget_micros != 0 && c.usd_micros >= s->budget_micros;
}

bool session_budget_why(const struct session *s, char *out, size_t len)
{
	struct session_cost c;

	if (!session_over_budget(s))
		return false;
	session_cost_total(s, &c);
	snprintf(out, len,
		 "the session has cost $%" PRIu64 ".%06" PRIu64 ", its budget is $%" PRIu64
		 ".%06" PRIu64 ": no new prompt (a running turn goes on)",
		 c.usd_micros / 1000000, c.usd_micros % 1000000, s->budget_micros / 1000000,
		 s->budget_micros % 1000000);
	return true;
}

/* The record's cost, transcript and budget: optional (none before they existed), checked when
 * present. */
static int session_cost_from_json(struct session *s, json_object *obj, struct cause *cause)
{
	json_object *v;

	if (json_object_object_get_ex(obj, "cost", &v) && cost_from_json(v, &s->cost) < 0)
		return cause_fail(cause, EINVAL, "field cost is not {usd, inputTokens, ...}");
	if (json_object_object_get_ex(obj, "transcript", &v) &&
	    cost_transcript_from_json(v, &s->transcript) < 0)
		return cause_fail(cause, EINVAL, "field transcript is not {offset, cost, seen}");
	if (json_object_object_get_ex(obj, "costDays", &v) && cost_days_from_json(v, &s->days) < 0)
		return cause_fail(cause, EINVAL, "field costDays is not [{day, cost}]");
	if (json_object_object_get_ex(obj, "budgetUsd", &v) &&
	    cost_usd_from_json(v, &s->budget_micros) < 0)
		return cause_fail(cause, EINVAL, "field budgetUsd is not an amount");
	return 0;
}

/* The API's cost: both kinds of turns; usdEstimated when the terminal turns' share (priced
 * from cost.c's table) is part of it. */
static json_object *session_cost_api_json(const struct session *s)
{
	struct session_cost c;
	json_object *o;

	session_cost_total(s, &c);
	o = cost_json(&c);
	/* Only when true: a cost of claude's own figures alone keeps the object it always had. */
	if (s->transcript.cost.input_tokens != 0 || s->transcript.cost.output_tokens != 0 ||
	    s->transcript.cost.cache_read_tokens != 0 || s->transcript.cost.usd_micros != 0)
		json_object_object_add(o, "usdEstimated", json_object_new_boolean(true));
	return o;
}

static json_object *session_pr_json(const struct session_pr *pr)
{
	json_object *o = json_object_new_object(), *checks = json_object_new_object(),
		    *failing = json_object_new_array();

	json_object_object_add(o, "number", json_object_new_int64((int64_t)pr->number));
	session_add_str(o, "url", pr->url);
	session_add_str(o, "state", session_pr_state_name(pr->state));
	session_add_str(checks, "state", session_pr_checks_name(pr->checks));
	for (unsigned i = 0; i < pr->n_failing; i++)
		json_object_array_add(failing, json_object_new_string(pr->failing[i]));
	json_object_object_add(checks, "failing", failing);
	json_object_object_add(o, "checks", checks);
	return o;
}

json_object *session_to_json(const struct session *s, bool for_disk)
{
	json_object *o = json_object_new_object(), *repo = json_object_new_object();

	if (o == NULL || repo == NULL) {
		json_object_put(o);
		json_object_put(repo);
		return NULL;
	}
	session_add_str(o, "id", s->id);
	session_add_str(repo, "owner", s->owner);
	session_add_str(repo, "name", s->name);
	json_object_object_add(o, "repo", repo); /* o takes the reference */
	json_object_object_add(o, "issue", json_object_new_int64(s->issue));
	session_add_str(o, "worktree", s->worktree);
	session_add_str(o, "branch", s->branch);
	session_add_str(o, "tmuxName", s->tmux_name);
	session_add_str(o, "state", session_state_name(s->state));
	session_add_str(o, "mode", session_mode_name(s->mode));
	session_add_str(o, "agent", s->agent);
	if (!for_disk)
		session_add_str(o, "activitySource", agents_activity_source(s));
	session_add_str(o, "agentSessionId", s->agent_session_id);
	json_object_object_add(o, "clients", json_object_new_int(s->clients));
	session_add_str(o, "prompt", s->prompt);
	session_add_time(o, "createdAt", s->created_at);
	session_add_time(o, "updatedAt", s->updated_at);
	json_object_object_add(o, "rev", json_object_new_int64((int64_t)s->rev));
	session_add_time(o, "lastActivity", s->last_activity);
	/* On disk the stored activity: the state says the rest, and it is read back. */
	session_add_str(o, "activity",
			for_disk ? session_activity_names[s->activity] : session_activity_name(s));
	session_add_time_ms(o, "activityAt", s->activity_at);
	json_object_object_add(o, "pending", session_pending_json(s, for_disk));
	if (s->state == SESSION_FAILED || s->state == SESSION_LOST)
		session_add_str(o, "error", s->error);
	if (s->by[0] != '\0')
		session_add_str(o, "by", s->by);
	if (s->state == SESSION_EXITED) {
		json_object_object_add(o, "exitStatus", json_object_new_int(s->exit_status));
		if (s->exit_signal[0] != '\0')
			session_add_str(o, "exitSignal", s->exit_signal);
		session_add_str(o, "exitReason", session_exit_reason_name(s->exit_reason));
		session_add_time(o, "exitedAt", s->exited_at);
	}
	if (s->limits.memory_max != 0 || s->limits.cpu_milli != 0 || s->limits.tasks_max != 0)
		json_object_object_add(o, "limits", session_limits_json(&s->limits));
	if (s->port_first != 0) {
		json_object *ports = json_object_new_object();

		json_object_object_add(ports, "first", json_object_new_int(s->port_first));
		json_object_object_add(ports, "last", json_object_new_int(s->port_last));
		json_object_object_add(o, "ports", ports);
	}
	if (s->uid != 0)
		json_object_object_add(o, "uid", json_object_new_int64(s->uid));
	if (s->pr.number != 0)
		json_object_object_add(o, "pr", session_pr_json(&s->pr));
	json_object_object_add(o, "finished", json_object_new_boolean(session_finished(&s->pr)));
	if (for_disk) {
		json_object_object_add(o, "cost", cost_json(&s->cost));
		json_object_object_add(o, "transcript", cost_transcript_json(&s->transcript));
		json_object_object_add(o, "costDays", cost_days_json(&s->days));
	} else {
		json_object_object_add(o, "cost", session_cost_api_json(s));
		json_object_object_add(o, "overBudget",
				       json_object_new_boolean(session_over_budget(s)));
	}
	if (s->budget_micros != 0)
		json_object_object_add(o, "budgetUsd", cost_usd_json(s->budget_micros));
	policy_to_json(&s->policy, o, for_disk);
	if (for_disk) {
		json_object_object_add(o, "launched", json_object_new_boolean(s->launched));
		json_object_object_add(o, "launch", json_object_new_int64(s->launch));
		json_object_object_add(o, "pendingLaunch",
				       json_object_new_int64(s->pending_launch));
		json_object_object_add(o, "hostEvent",
				       json_object_new_int64((int64_t)s->host_event));
	}
	return o;
}

static int session_copy_str(json_object *o, const char *key, char *out, size_t outlen,
			    struct cause *cause)
{
	const char *v = session_get_str(o, key);

	if (v == NULL)
		return cause_fail(cause, EINVAL, "field %s is missing or not a string", key);
	if (strlen(v) >= outlen)
		return cause_fail(cause, EINVAL, "field %s is too long", key);
	memcpy(out, v, strlen(v) + 1);
	return 0;
}

static int session_get_time(json_object *o, const char *key, int64_t *out, struct cause *cause)
{
	const char *v = session_get_str(o, key);

	if (v == NULL || isotime_parse(v, out) < 0)
		return cause_fail(cause, EINVAL, "field %s is not a time", key);
	return 0;
}

/* "SIG" and 1..12 of [A-Z0-9+] (sigabbrev_np's names: "KILL", "RTMIN+3"). */
static bool session_signal_name_valid(const char *v)
{
	size_t n = strlen(v);

	if (n < 4 || n >= SESSION_SIGNAL_MAX || strncmp(v, "SIG", 3) != 0)
		return false;
	for (size_t i = 3; i < n; i++)
		if (!((v[i] >= 'A' && v[i] <= 'Z') || (v[i] >= '0' && v[i] <= '9') || v[i] == '+'))
			return false;
	return true;
}

/* The fields of an exited record: required in that state, checked whenever present. */
static int session_exit_from_json(struct session *s, json_object *obj, struct cause *cause)
{
	bool exited = s->state == SESSION_EXITED;
	json_object *v;
	int r;

	if (json_object_object_get_ex(obj, "exitStatus", &v)) {
		if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0 ||
		    json_object_get_int64(v) > SESSION_EXIT_MAX)
			return cause_fail(cause, EINVAL, "field exitStatus is not 0..%d",
					  SESSION_EXIT_MAX);
		s->exit_status = json_object_get_int(v);
	} else if (exited) {
		return cause_fail(cause, EINVAL, "field exitStatus is missing");
	}
	if (json_object_object_get_ex(obj, "exitSignal", &v)) {
		const char *sig = session_get_str(obj, "exitSignal");

		if (sig == NULL || !session_signal_name_valid(sig))
			return cause_fail(cause, EINVAL, "field exitSignal is not a signal name");
		snprintf(s->exit_signal, sizeof(s->exit_signal), "%s", sig);
	}
	if (json_object_object_get_ex(obj, "exitedAt", &v) || exited) {
		if ((r = session_get_time(obj, "exitedAt", &s->exited_at, cause)) < 0)
			return r;
	}
	/* Records from before exitReason: what their status and signal say. */
	s->exit_reason = s->exit_signal[0] != '\0' ? SESSION_EXIT_SIGNAL : SESSION_EXIT_EXIT;
	if (json_object_object_get_ex(obj, "exitReason", &v)) {
		const char *why = session_get_str(obj, "exitReason");
		size_t i = 0;

		while (why != NULL && i < SESSION_EXIT_REASONS &&
		       strcmp(why, session_exit_reason_names[i]) != 0)
			i++;
		if (why == NULL || i == SESSION_EXIT_REASONS)
			return cause_fail(cause, EINVAL, "field exitReason is not a known reason");
		s->exit_reason = (enum session_exit_reason)i;
	}
	return 0;
}

/* A count in a record: an integer in 0..max. */
static bool session_count_from_json(json_object *o, const char *key, uint64_t max, uint64_t *out)
{
	json_object *v;

	*out = 0;
	if (!json_object_object_get_ex(o, key, &v))
		return true;
	if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0 ||
	    (uint64_t)json_object_get_int64(v) > max)
		return false;
	*out = (uint64_t)json_object_get_int64(v);
	return true;
}

/* The record's limits: optional (older records have none), checked when present. */
static int session_limits_from_json(struct session *s, json_object *obj, struct cause *cause)
{
	json_object *l, *v;
	uint64_t mem, tasks;

	if (!json_object_object_get_ex(obj, "limits", &l))
		return 0;
	if (!json_object_is_type(l, json_type_object) ||
	    !session_count_from_json(l, "memory", INT64_MAX, &mem) ||
	    !session_count_from_json(l, "tasks", UINT32_MAX, &tasks))
		return cause_fail(cause, EINVAL, "field limits is not {memory, cpus, tasks}");
	s->limits.memory_max = mem;
	s->limits.tasks_max = (uint32_t)tasks;
	if (json_object_object_get_ex(l, "cpus", &v)) {
		double cpus = json_object_get_double(v);

		if ((!json_object_is_type(v, json_type_double) &&
		     !json_object_is_type(v, json_type_int)) ||
		    !(cpus >= 0 && cpus <= CGROUP_CPUS_MAX))
			return cause_fail(cause, EINVAL, "field limits.cpus is not a CPU count");
		s->limits.cpu_milli = (uint32_t)(cpus * 1000 + 0.5);
	}
	return 0;
}

/* The record's ports: optional (none when AGENTD_PORT_BASE was off), checked when present. */
static int session_ports_from_json(struct session *s, json_object *obj, struct cause *cause)
{
	json_object *p;
	uint64_t first, last;

	if (!json_object_object_get_ex(obj, "ports", &p))
		return 0;
	if (!json_object_is_type(p, json_type_object) ||
	    !session_count_from_json(p, "first", UINT16_MAX, &first) ||
	    !session_count_from_json(p, "last", UINT16_MAX, &last) || first == 0 || last < first)
		return cause_fail(cause, EINVAL, "field ports is not {first, last}");
	s->port_first = (uint16_t)first;
	s->port_last = (uint16_t)last;
	return 0;
}

/* The record's pull request: optional (none until POST /sessions/<id>/pr), checked when present. */
static int session_pr_from_json(struct session *s, json_object *obj, struct cause *cause)
{
	json_object *p, *c, *f;
	const char *url, *state, *checks;
	uint64_t number;
	size_t i;

	if (!json_object_object_get_ex(obj, "pr", &p))
		return 0;
	url = session_get_str(p, "url");
	state = session_get_str(p, "state");
	if (!json_object_is_type(p, json_type_object) ||
	    !session_count_from_json(p, "number", INT32_MAX, &number) || number == 0 ||
	    url == NULL || strlen(url) > SESSION_PR_URL_MAX ||
	    session_pr_state_parse(state, &s->pr.state) < 0)
		return cause_fail(cause, EINVAL, "field pr is not {number, url, state}");
	s->pr.number = number;
	snprintf(s->pr.url, sizeof(s->pr.url), "%s", url);
	if (!json_object_object_get_ex(p, "checks", &c))
		return 0;
	checks = session_get_str(c, "state");
	for (i = 0; i < sizeof(session_pr_checks_names) / sizeof(char *); i++)
		if (checks != NULL && strcmp(checks, session_pr_checks_names[i]) == 0)
			break;
	if (i == sizeof(session_pr_checks_names) / sizeof(char *))
		return cause_fail(cause, EINVAL, "field pr.checks.state is not a checks state");
	s->pr.checks = (enum session_pr_checks)i;
	if (!json_object_object_get_ex(c, "failing", &f))
		return 0;
	if (!json_object_is_type(f, json_type_array) ||
	    json_object_array_length(f) > SESSION_PR_FAILING_MAX)
		return cause_fail(cause, EINVAL, "field pr.checks.failing is not a list of names");
	for (i = 0; i < json_object_array_length(f); i++) {
		json_object *name = json_object_array_get_idx(f, i);

		if (!json_object_is_type(name, json_type_string))
			return cause_fail(cause, EINVAL,
					  "field pr.checks.failing is not a list of names");
		session_copy_cut(s->pr.failing[i], sizeof(s->pr.failing[i]),
				 json_object_get_string(name));
	}
	s->pr.n_failing = (unsigned)i;
	return 0;
}

static bool session_request_id_valid(const char *id)
{
	size_t n = strlen(id);

	if (n == 0 || n > SESSION_REQUEST_ID_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)id[i]) && strchr("._:-", id[i]) == NULL)
			return false;
	return true;
}

static int session_pending_from_json(struct session *s, json_object *arr, struct cause *cause)
{
	size_t n;

	if (!json_object_is_type(arr, json_type_array) ||
	    (n = json_object_array_length(arr)) > SESSION_PENDING_MAX)
		return cause_fail(cause, EINVAL, "field pending is not a list of up to %d requests",
				  SESSION_PENDING_MAX);
	for (size_t i = 0; i < n; i++) {
		json_object *p = json_object_array_get_idx(arr, i);
		struct session_pending *e = &s->pending[i];
		int r;

		if (!json_object_is_type(p, json_type_object))
			return cause_fail(cause, EINVAL, "field pending holds a non-object");
		if ((r = session_copy_str(p, "requestId", e->request_id, sizeof(e->request_id),
					  cause)) < 0 ||
		    (r = session_copy_str(p, "toolName", e->tool_name, sizeof(e->tool_name),
					  cause)) < 0 ||
		    (r = session_copy_str(p, "description", e->description, sizeof(e->description),
					  cause)) < 0)
			return r;
		if (!session_request_id_valid(e->request_id))
			return cause_fail(cause, EINVAL, "field pending holds a bad requestId");
	}
	s->n_pending = (unsigned)n;
	return 0;
}

/* A launch count: 0..UINT32_MAX. Returns 0 or -EINVAL. */
static int session_launch_from_json(json_object *v, uint32_t *out)
{
	int64_t n;

	if (!json_object_is_type(v, json_type_int))
		return -EINVAL;
	n = json_object_get_int64(v);
	if (n < 0 || n > UINT32_MAX)
		return -EINVAL;
	*out = (uint32_t)n;
	return 0;
}

/* The hub's fields: each optional (records written before them have none), checked when
 * present. */
static int session_attention_from_json(struct session *s, json_object *obj, struct cause *cause)
{
	json_object *v;
	const char *str;

	s->activity = SESSION_IDLE;
	s->activity_at = s->updated_at * 1000;
	if (json_object_object_get_ex(obj, "activity", &v) &&
	    ((str = session_get_str(obj, "activity")) == NULL ||
	     session_activity_parse(str, &s->activity) < 0))
		return cause_fail(cause, EINVAL, "field activity is invalid");
	if (json_object_object_get_ex(obj, "activityAt", &v) &&
	    ((str = session_get_str(obj, "activityAt")) == NULL ||
	     isotime_parse_ms(str, &s->activity_at) < 0))
		return cause_fail(cause, EINVAL, "field activityAt is not a time");
	if (json_object_object_get_ex(obj, "pending", &v)) {
		int r = session_pending_from_json(s, v, cause);

		if (r < 0)
			return r;
	}
	if (json_object_object_get_ex(obj, "pendingLaunch", &v) &&
	    session_launch_from_json(v, &s->pending_launch) < 0)
		return cause_fail(cause, EINVAL, "field pendingLaunch is not a count");
	if (json_object_object_get_ex(obj, "hostEvent", &v)) {
		if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0)
			return cause_fail(cause, EINVAL, "field hostEvent is not an event id");
		s->host_event = (uint64_t)json_object_get_int64(v);
	}
	return 0;
}

int session_from_json(struct session *s, json_object *obj, struct cause *cause)
{
	json_object *repo, *v;
	uint64_t uid;
	int r;

	memset(s, 0, sizeof(*s));
	if (!json_object_is_type(obj, json_type_object))
		return cause_fail(cause, EINVAL, "record is not a JSON object");
	if (!json_object_object_get_ex(obj, "repo", &repo) ||
	    !json_object_is_type(repo, json_type_object))
		return cause_fail(cause, EINVAL, "field repo is missing");
	if ((r = session_copy_str(repo, "owner", s->owner, sizeof(s->owner), cause)) < 0 ||
	    (r = session_copy_str(repo, "name", s->name, sizeof(s->name), cause)) < 0 ||
	    (r = session_copy_str(obj, "id", s->id, sizeof(s->id), cause)) < 0 ||
	    (r = session_copy_str(obj, "worktree", s->worktree, sizeof(s->worktree), cause)) < 0 ||
	    (r = session_copy_str(obj, "branch", s->branch, sizeof(s->branch), cause)) < 0 ||
	    (r = session_copy_str(obj, "tmuxName", s->tmux_name, sizeof(s->tmux_name), cause)) <
		0 ||
	    (r = session_copy_str(obj, "agentSessionId", s->agent_session_id,
				  sizeof(s->agent_session_id), cause)) < 0 ||
	    (r = session_copy_str(obj, "prompt", s->prompt, sizeof(s->prompt), cause)) < 0)
		return r;
	if (!session_owner_valid(s->owner) || !session_name_valid(s->name))
		return cause_fail(cause, EINVAL, "repo owner or name is invalid");
	if (!json_object_object_get_ex(obj, "issue", &v) ||
	    !json_object_is_type(v, json_type_int) ||
	    !session_issue_valid(json_object_get_int64(v)))
		return cause_fail(cause, EINVAL, "field issue is invalid");
	s->issue = (long)json_object_get_int64(v);
	{
		char want[SESSION_ID_MAX + 1];

		snprintf(want, sizeof(want), "%s-%ld", s->name, s->issue);
		if (!session_id_valid(s->id) || strcmp(want, s->id) != 0)
			return cause_fail(cause, EINVAL,
					  "field id does not match repo name and issue");
	}
	if (!session_uuid_valid(s->agent_session_id))
		return cause_fail(cause, EINVAL, "field agentSessionId is not a UUID");
	if (!session_tmux_name_valid(s->id, s->tmux_name))
		return cause_fail(cause, EINVAL, "field tmuxName does not match id");
	if (session_state_parse(session_get_str(obj, "state") ? session_get_str(obj, "state") : "",
				&s->state) < 0)
		return cause_fail(cause, EINVAL, "field state is invalid");
	if (session_mode_parse(session_get_str(obj, "mode") ? session_get_str(obj, "mode") : "",
			       &s->mode) < 0)
		return cause_fail(cause, EINVAL, "field mode is invalid");
	/* Optional: a record made before agents existed ran claude. */
	snprintf(s->agent, sizeof(s->agent), "claude");
	if (json_object_object_get_ex(obj, "agent", &v) &&
	    ((r = session_copy_str(obj, "agent", s->agent, sizeof(s->agent), cause)) < 0 ||
	     !agents_name_valid(s->agent)))
		return cause_fail(cause, EINVAL, "field agent is not an agent's name");
	if (json_object_object_get_ex(obj, "clients", &v)) {
		if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) > INT32_MAX)
			return cause_fail(cause, EINVAL, "field clients is not a count");
		/* A negative count (a crashed writer's arithmetic) reads as none attached. */
		s->clients = json_object_get_int64(v) < 0 ? 0 : json_object_get_int(v);
	}
	if (json_object_object_get_ex(obj, "launched", &v)) {
		if (!json_object_is_type(v, json_type_boolean))
			return cause_fail(cause, EINVAL, "field launched is not a boolean");
		s->launched = json_object_get_boolean(v);
	}
	if (json_object_object_get_ex(obj, "launch", &v) &&
	    session_launch_from_json(v, &s->launch) < 0)
		return cause_fail(cause, EINVAL, "field launch is not a count");
	if (json_object_object_get_ex(obj, "error", &v) &&
	    (r = session_copy_str(obj, "error", s->error, sizeof(s->error), cause)) < 0)
		return r;
	if (json_object_object_get_ex(obj, "by", &v) &&
	    (r = session_copy_str(obj, "by", s->by, sizeof(s->by), cause)) < 0)
		return r;
	/* Optional: records written before it have none (version 0). */
	if (json_object_object_get_ex(obj, "rev", &v)) {
		if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0)
			return cause_fail(cause, EINVAL, "field rev is not a version");
		s->rev = (uint64_t)json_object_get_int64(v);
	}
	if ((r = session_get_time(obj, "createdAt", &s->created_at, cause)) < 0 ||
	    (r = session_get_time(obj, "updatedAt", &s->updated_at, cause)) < 0 ||
	    (r = session_get_time(obj, "lastActivity", &s->last_activity, cause)) < 0)
		return r;
	if ((r = session_exit_from_json(s, obj, cause)) < 0 ||
	    (r = session_limits_from_json(s, obj, cause)) < 0 ||
	    (r = session_ports_from_json(s, obj, cause)) < 0 ||
	    (r = session_pr_from_json(s, obj, cause)) < 0 ||
	    (r = session_cost_from_json(s, obj, cause)) < 0 ||
	    (r = policy_from_json(&s->policy, obj, cause)) < 0)
		return r;
	/* Optional: none for an uncaged session or a record made before per-session uids. */
	if (!session_count_from_json(obj, "uid", SESSION_UID_MAX, &uid))
		return cause_fail(cause, EINVAL, "field uid is not a uid");
	s->uid = (uint32_t)uid;
	return session_attention_from_json(s, obj, cause);
}
