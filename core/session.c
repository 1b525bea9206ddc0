#include "session.h"

#include "agents.h"
#include "isotime.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

static bool session_is_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

bool session_owner_valid(const char *s)
{
	size_t n;

	if (s == NULL || !session_is_alnum(s[0]))
		return false;
	for (n = 1; s[n] != '\0'; n++)
		if (n >= SESSION_OWNER_MAX || !(session_is_alnum(s[n]) || s[n] == '-'))
			return false;
	return true;
}

bool session_name_valid(const char *s)
{
	size_t n;

	if (s == NULL || s[0] == '\0')
		return false;
	for (n = 0; s[n] != '\0'; n++) {
		char c = s[n];

		if (n >= SESSION_NAME_MAX ||
		    !(session_is_alnum(c) || c == '.' || c == '_' || c == '-'))
			return false;
	}
	if (strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return false;
	return !(n >= 4 && strcmp(s + n - 4, ".git") == 0);
}

bool session_issue_valid(int64_t issue)
{
	return issue >= 1 && issue <= SESSION_ISSUE_MAX;
}

/* Parses a canonical decimal (no sign, no leading zero) in 1..SESSION_ISSUE_MAX. */
static bool session_parse_issue(const char *s, long *out)
{
	long v = 0;

	if (s[0] < '1' || s[0] > '9')
		return false;
	for (const char *p = s; *p != '\0'; p++) {
		if (*p < '0' || *p > '9' || p - s >= 10)
			return false;
		v = v * 10 + (*p - '0');
	}
	if (!session_issue_valid(v))
		return false;
	*out = v;
	return true;
}

bool session_id_valid(const char *id)
{
	char name[SESSION_NAME_MAX + 1];
	const char *dash;
	long issue;
	size_t nlen;

	if (id == NULL || strnlen(id, SESSION_ID_MAX + 1) > SESSION_ID_MAX)
		return false;
	dash = strrchr(id, '-');
	if (dash == NULL || !session_parse_issue(dash + 1, &issue))
		return false;
	nlen = (size_t)(dash - id);
	if (nlen == 0 || nlen > SESSION_NAME_MAX)
		return false;
	memcpy(name, id, nlen);
	name[nlen] = '\0';
	return session_name_valid(name);
}

int session_worktree_path(const char *base_dir, const char *name, long issue, char *out,
			  size_t outlen)
{
	int n = snprintf(out, outlen, "%s/%s-issue-%ld", base_dir, name, issue);

	return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

/* Maps id into out character by character: '.' becomes '_' (tmux's own rule), and '_' becomes
 * underscore (SESSION_TMUX_UNDERSCORE now, '_' for the names made before the '+' separator). */
static void session_tmux_map(const char *id, char underscore, char *out, size_t outlen)
{
	size_t i;

	for (i = 0; id[i] != '\0' && i + 1 < outlen; i++) {
		char c = id[i];

		out[i] = (c == '.' || c == ':') ? '_' : c == '_' ? underscore : c;
	}
	if (outlen > 0)
		out[i] = '\0';
}

void session_tmux_name(const char *id, char *out, size_t outlen)
{
	session_tmux_map(id, SESSION_TMUX_UNDERSCORE, out, outlen);
}

bool session_tmux_name_valid(const char *id, const char *name)
{
	char want[SESSION_ID_MAX + 1];

	if (strlen(id) > SESSION_ID_MAX)
		return false;
	session_tmux_map(id, SESSION_TMUX_UNDERSCORE, want, sizeof(want));
	if (strcmp(want, name) == 0)
		return true;
	session_tmux_map(id, '_', want, sizeof(want));
	return strcmp(want, name) == 0;
}

int session_uuid(char out[SESSION_UUID_LEN + 1])
{
	unsigned char b[16];
	size_t got = 0;

	while (got < sizeof(b)) {
		ssize_t n = getrandom(b + got, sizeof(b) - got, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		got += (size_t)n;
	}
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
	snprintf(out, SESSION_UUID_LEN + 1,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
		 b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
		 b[15]);
	return 0;
}

static bool session_uuid_valid(const char *u)
{
	if (strlen(u) != SESSION_UUID_LEN)
		return false;
	for (size_t i = 0; i < SESSION_UUID_LEN; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;
		char c = u[i];

		if (dash ? c != '-'
			 : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
			     (c >= 'A' && c <= 'F')))
			return false;
	}
	return true;
}

int session_init(struct session *s, const char *base_dir, const char *owner, const char *name,
		 long issue)
{
	int n, r;

	if (!session_owner_valid(owner) || !session_name_valid(name) || !session_issue_valid(issue))
		return -EINVAL;
	memset(s, 0, sizeof(*s));
	snprintf(s->owner, sizeof(s->owner), "%s", owner);
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->issue = issue;
	n = snprintf(s->id, sizeof(s->id), "%s-%ld", name, issue);
	if (n < 0 || (size_t)n >= sizeof(s->id))
		return -ENAMETOOLONG;
	r = session_worktree_path(base_dir, name, issue, s->worktree, sizeof(s->worktree));
	if (r < 0)
		return r;
	snprintf(s->branch, sizeof(s->branch), "feat/issue-%ld", issue);
	session_tmux_name(s->id, s->tmux_name, sizeof(s->tmux_name));
	s->state = SESSION_CREATING;
	s->mode = SESSION_TERMINAL;
	snprintf(s->agent, sizeof(s->agent), "claude");
	s->created_at = s->updated_at = s->last_activity = (int64_t)time(NULL);
	s->activity = SESSION_IDLE;
	s->activity_at = s->created_at * 1000;
	return session_uuid(s->agent_session_id);
}

int session_render_prompt(const char *tmpl, const char *owner, const char *name, long issue,
			  char *out, size_t outlen)
{
	size_t o = 0;

	for (const char *p = tmpl; *p != '\0';) {
		char issue_s[24];
		const char *sub = NULL;
		size_t skip = 0, len;

		if (strncmp(p, "{owner}", 7) == 0)
			sub = owner, skip = 7;
		else if (strncmp(p, "{name}", 6) == 0)
			sub = name, skip = 6;
		else if (strncmp(p, "{issue}", 7) == 0) {
			snprintf(issue_s, sizeof(issue_s), "%ld", issue);
			sub = issue_s, skip = 7;
		}
		if (sub == NULL) {
			sub = p;
			skip = 1;
			len = 1;
		} else {
			len = strlen(sub);
		}
		if (o + len >= outlen)
			return -ENAMETOOLONG;
		memcpy(out + o, sub, len);
		o += len;
		p += skip;
	}
	if (outlen == 0)
		return -ENAMETOOLONG;
	out[o] = '\0';
	return 0;
}

static const char *const session_state_names[] = {
    [SESSION_CREATING] = "creating", [SESSION_RUNNING] = "running", [SESSION_ATTACHED] = "attached",
    [SESSION_STOPPING] = "stopping", [SESSION_FAILED] = "failed",   [SESSION_EXITED] = "exited",
    [SESSION_LOST] = "lost",
};

static const char *const session_mode_names[] = {
    [SESSION_TERMINAL] = "terminal",
    [SESSION_STRUCTURED] = "structured",
};

static const char *const session_activity_names[] = {
    [SESSION_IDLE] = "idle",
    [SESSION_WORKING] = "working",
    [SESSION_WAITING] = "waiting",
};

const char *session_activity_name(const struct session *s)
{
	switch (s->state) {
	case SESSION_CREATING:
	case SESSION_RUNNING:
	case SESSION_ATTACHED:
		return session_activity_names[s->activity];
	default:
		return "exited";
	}
}

int session_activity_parse(const char *s, enum session_activity *out)
{
	for (size_t i = 0; i < sizeof(session_activity_names) / sizeof(session_activity_names[0]);
	     i++)
		if (strcmp(s, session_activity_names[i]) == 0) {
			*out = (enum session_activity)i;
			return 0;
		}
	return -EINVAL;
}

void session_copy_cut(char *out, size_t outlen, const char *src)
{
	size_t n = strlen(src);

	if (outlen == 0)
		return;
	if (n >= outlen) {
		n = outlen - 1;
		/* Back off continuation bytes (10xxxxxx) so no character is split. */
		while (n > 0 && ((unsigned char)src[n] & 0xC0) == 0x80)
			n--;
	}
	memcpy(out, src, n);
	out[n] = '\0';
}

const char *session_state_name(enum session_state st)
{
	return session_state_names[st];
}

int session_state_parse(const char *s, enum session_state *out)
{
	for (size_t i = 0; i < sizeof(session_state_names) / sizeof(session_state_names[0]); i++)
		if (strcmp(s, session_state_names[i]) == 0) {
			*out = (enum session_state)i;
			return 0;
		}
	return -EINVAL;
}

void session_launch(struct session *s)
{
	s->launched = true;
	s->launch++; /* wraps after 4 billion launches: only "not the same" is asked of it */
}

static const char *const session_exit_reason_names[] = {
    [SESSION_EXIT_EXIT] = "exit",
    [SESSION_EXIT_SIGNAL] = "signal",
    [SESSION_EXIT_OOM] = "oom",
    [SESSION_EXIT_UNKNOWN] = "unknown",
};

const char *session_exit_reason_name(enum session_exit_reason r)
{
	return session_exit_reason_names[r];
}

void session_set_exited(struct session *s, int status, int signal, int64_t at)
{
	const char *abbrev = signal > 0 ? sigabbrev_np(signal) : NULL;

	s->state = SESSION_EXITED;
	s->exit_reason = signal > 0   ? SESSION_EXIT_SIGNAL
			 : status < 0 ? SESSION_EXIT_UNKNOWN
				      : SESSION_EXIT_EXIT;
	s->error[0] = '\0';
	s->exit_signal[0] = '\0';
	if (signal > 0) {
		s->exit_status = 128 + signal > SESSION_EXIT_MAX ? SESSION_EXIT_MAX : 128 + signal;
		if (abbrev != NULL)
			snprintf(s->exit_signal, sizeof(s->exit_signal), "SIG%s", abbrev);
	} else {
		s->exit_status =
		    status < 0 || status > SESSION_EXIT_MAX ? SESSION_EXIT_MAX : status;
	}
	s->exited_at = at;
}

const char *session_unavailable(const struct session *s, char *msg, size_t msglen)
{
	char at[32];

	switch (s->state) {
	case SESSION_CREATING:
	case SESSION_RUNNING:
	case SESSION_ATTACHED:
		return NULL;
	case SESSION_STOPPING:
		snprintf(msg, msglen, "the session is stopping");
		return "not_running";
	case SESSION_FAILED:
		snprintf(msg, msglen, "the session failed: %s", s->error);
		return "not_running";
	case SESSION_EXITED:
		isotime_format(s->exited_at, at, sizeof(at));
		snprintf(msg, msglen,
			 "the agent exited with status %d%s%s at %s; POST /sessions restarts it",
			 s->exit_status, s->exit_signal[0] != '\0' ? " by " : "", s->exit_signal,
			 at);
		return "agent_exited";
	case SESSION_LOST:
		snprintf(msg, msglen, "the session is lost: %s; POST /sessions starts it again",
			 s->error);
		return "session_lost";
	}
	return "not_running";
}

bool session_holds_slot(enum session_state st)
{
	return st != SESSION_FAILED && st != SESSION_LOST;
}

const char *session_mode_name(enum session_mode m)
{
	return session_mode_names[m];
}

int session_mode_parse(const char *s, enum session_mode *out)
{
	for (size_t i = 0; i < sizeof(session_mode_names) / sizeof(session_mode_names[0]); i++)
		if (strcmp(s, session_mode_names[i]) == 0) {
			*out = (enum session_mode)i;
			return 0;
		}
	return -EINVAL;
}

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

static const char *session_get_str(json_object *o, const char *key)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
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

		while (why != NULL && i < sizeof(session_exit_reason_names) / sizeof(char *) &&
		       strcmp(why, session_exit_reason_names[i]) != 0)
			i++;
		if (why == NULL || i == sizeof(session_exit_reason_names) / sizeof(char *))
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
	    (r = session_ports_from_json(s, obj, cause)) < 0)
		return r;
	return session_attention_from_json(s, obj, cause);
}

/* json-c accepts "\u0000" inside strings; a string of a request must not hide a NUL. */
static const char *session_body_str(json_object *o, const char *key)
{
	const char *v = session_get_str(o, key);
	json_object *obj;

	if (v == NULL || !json_object_object_get_ex(o, key, &obj) ||
	    strlen(v) != (size_t)json_object_get_string_len(obj))
		return NULL;
	return v;
}

int session_parse_create(json_object *root, struct session_create *in, struct cause *cause)
{
	json_object *repo, *v;

	memset(in, 0, sizeof(*in));
	if (!json_object_is_type(root, json_type_object))
		return cause_fail(cause, EINVAL, "the body must be a JSON object");
	if (!json_object_object_get_ex(root, "repo", &repo) ||
	    !json_object_is_type(repo, json_type_object))
		return cause_fail(cause, EINVAL, "repo must be an object {\"owner\",\"name\"}");
	in->owner = session_body_str(repo, "owner");
	in->name = session_body_str(repo, "name");
	if (!session_owner_valid(in->owner))
		return cause_fail(cause, EINVAL,
				  "repo.owner must match ^[A-Za-z0-9][A-Za-z0-9-]{0,38}$");
	if (!session_name_valid(in->name))
		return cause_fail(cause, EINVAL,
				  "repo.name must match ^[A-Za-z0-9._-]{1,100}$, not be . or .. "
				  "and not end in .git");
	if (!json_object_object_get_ex(root, "issue", &v) || !json_object_is_type(v, json_type_int))
		return cause_fail(cause, EINVAL, "issue must be an integer");
	errno = 0;
	if (!session_issue_valid(json_object_get_int64(v)) || errno != 0)
		return cause_fail(cause, EINVAL, "issue must be between 1 and 2147483647");
	in->issue = (long)json_object_get_int64(v);
	in->mode = SESSION_TERMINAL;
	if (json_object_object_get_ex(root, "mode", &v)) {
		const char *m = session_body_str(root, "mode");

		if (m == NULL || session_mode_parse(m, &in->mode) < 0)
			return cause_fail(cause, EINVAL,
					  "mode must be \"terminal\" or \"structured\"");
	}
	if (json_object_object_get_ex(root, "prompt", &v)) {
		in->prompt = session_body_str(root, "prompt");
		if (in->prompt == NULL)
			return cause_fail(cause, EINVAL,
					  "prompt must be a string without NUL bytes");
		if (strlen(in->prompt) > SESSION_PROMPT_MAX)
			return cause_fail(cause, EINVAL, "prompt is longer than %d bytes",
					  SESSION_PROMPT_MAX);
	}
	if (json_object_object_get_ex(root, "agent", &v)) {
		in->agent = session_body_str(root, "agent");
		if (in->agent == NULL)
			return cause_fail(cause, EINVAL,
					  "agent must be a string without NUL bytes");
	}
	return 0;
}

/* limits.memory of a body: a size ("2G") or a number of bytes. */
static int session_body_memory(json_object *v, uint64_t *out)
{
	if (json_object_is_type(v, json_type_string))
		return strlen(json_object_get_string(v)) == (size_t)json_object_get_string_len(v)
			   ? cgroup_parse_memory(json_object_get_string(v), out)
			   : -EINVAL;
	if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0 ||
	    (uint64_t)json_object_get_int64(v) < CGROUP_MEMORY_MIN)
		return -EINVAL;
	*out = (uint64_t)json_object_get_int64(v);
	return 0;
}

/* limits.cpus of a body: a number (1.5) or its text ("1.5"), thousandths at the finest. */
static int session_body_cpus(json_object *v, uint32_t *milli)
{
	double cpus;

	if (json_object_is_type(v, json_type_string))
		return strlen(json_object_get_string(v)) == (size_t)json_object_get_string_len(v)
			   ? cgroup_parse_cpus(json_object_get_string(v), milli)
			   : -EINVAL;
	if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double))
		return -EINVAL;
	cpus = json_object_get_double(v);
	if (!(cpus > 0 && cpus <= CGROUP_CPUS_MAX) || cpus * 1000 < 0.5)
		return -EINVAL;
	*milli = (uint32_t)(cpus * 1000 + 0.5);
	return 0;
}

int session_parse_limits(json_object *root, const struct cgroup_limits *max,
			 struct cgroup_limits *out, struct cause *cause)
{
	json_object *l, *v;

	*out = *max;
	if (!json_object_object_get_ex(root, "limits", &l))
		return 0;
	if (!json_object_is_type(l, json_type_object))
		return cause_fail(cause, EINVAL,
				  "limits must be an object {\"memory\", \"cpus\", \"tasks\"}");
	json_object_object_foreach(l, key, val)
	{
		(void)val;
		if (strcmp(key, "memory") != 0 && strcmp(key, "cpus") != 0 &&
		    strcmp(key, "tasks") != 0)
			return cause_fail(cause, EINVAL,
					  "limits.%.64s is not a limit (memory, cpus, tasks)", key);
	}
	if (json_object_object_get_ex(l, "memory", &v)) {
		if (session_body_memory(v, &out->memory_max) < 0)
			return cause_fail(cause, EINVAL,
					  "limits.memory must be a size of at least 16M (\"2G\", "
					  "\"512M\") or a number of bytes");
		if (out->memory_max > max->memory_max)
			return cause_fail(cause, EINVAL,
					  "limits.memory %" PRIu64 " is above the maximum %" PRIu64
					  " (AGENTD_SESSION_MEMORY_MAX)",
					  out->memory_max, max->memory_max);
	}
	if (json_object_object_get_ex(l, "cpus", &v)) {
		if (session_body_cpus(v, &out->cpu_milli) < 0)
			return cause_fail(
			    cause, EINVAL,
			    "limits.cpus must be a number of CPUs above 0 (1.5, 0.25)");
		if (out->cpu_milli > max->cpu_milli)
			return cause_fail(cause, EINVAL,
					  "limits.cpus %.3g is above the maximum %.3g "
					  "(AGENTD_SESSION_CPUS)",
					  out->cpu_milli / 1000.0, max->cpu_milli / 1000.0);
	}
	if (json_object_object_get_ex(l, "tasks", &v)) {
		if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 1 ||
		    json_object_get_int64(v) > (int64_t)max->tasks_max)
			return cause_fail(cause, EINVAL,
					  "limits.tasks must be an integer from 1 to %" PRIu32
					  " (AGENTD_SESSION_TASKS_MAX)",
					  max->tasks_max);
		out->tasks_max = (uint32_t)json_object_get_int64(v);
	}
	return 0;
}
