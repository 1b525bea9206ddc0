#include "session.h"
#include "session_int.h"

#include "isotime.h"

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

bool session_uuid_valid(const char *u)
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

const char *const session_activity_names[SESSION_ACTIVITIES] = {
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

const char *const session_exit_reason_names[SESSION_EXIT_REASONS] = {
    [SESSION_EXIT_EXIT] = "exit",
    [SESSION_EXIT_SIGNAL] = "signal",
    [SESSION_EXIT_OOM] = "oom",
    [SESSION_EXIT_UNKNOWN] = "unknown",
    [SESSION_EXIT_RESTART_LIMIT] = "restart_limit",
    [SESSION_EXIT_TIMEOUT] = "timeout",
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

const char *session_get_str(json_object *o, const char *key)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
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
