#include "policy.h"

#include "isotime.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const policy_restart_names[] = {
    [POLICY_RESTART_UNSET] = "",
    [POLICY_RESTART_NO] = "no",
    [POLICY_RESTART_ON_FAILURE] = "on-failure",
    [POLICY_RESTART_ALWAYS] = "always",
};

static const char *const policy_setup_names[] = {
    [POLICY_SETUP_NONE] = "",
    [POLICY_SETUP_RUNNING] = "running",
    [POLICY_SETUP_OK] = "ok",
    [POLICY_SETUP_FAILED] = "failed",
};

int policy_restart_parse(const char *s, enum policy_restart *out)
{
	for (size_t i = POLICY_RESTART_NO;
	     i < sizeof(policy_restart_names) / sizeof(policy_restart_names[0]); i++)
		if (s != NULL && strcmp(s, policy_restart_names[i]) == 0) {
			*out = (enum policy_restart)i;
			return 0;
		}
	return -EINVAL;
}

const char *policy_restart_name(enum policy_restart r)
{
	return policy_restart_names[r];
}

int policy_parse_duration(const char *s, int64_t *secs)
{
	int64_t n = 0, unit = 1;
	const char *p = s;

	if (s == NULL || *s < '0' || *s > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		n = n * 10 + (*p - '0');
		if (n > POLICY_TIMEOUT_MAX)
			return -EINVAL;
	}
	switch (*p) {
	case '\0':
		break;
	case 's':
		break;
	case 'm':
		unit = 60;
		break;
	case 'h':
		unit = 3600;
		break;
	case 'd':
		unit = 86400;
		break;
	default:
		return -EINVAL;
	}
	if (*p != '\0' && p[1] != '\0')
		return -EINVAL;
	if (n == 0 || n > POLICY_TIMEOUT_MAX / unit)
		return -EINVAL;
	*secs = n * unit;
	return 0;
}

/* A string of a body that hides no NUL. */
static const char *policy_body_str(json_object *v)
{
	if (!json_object_is_type(v, json_type_string) ||
	    strlen(json_object_get_string(v)) != (size_t)json_object_get_string_len(v))
		return NULL;
	return json_object_get_string(v);
}

int policy_parse_create(json_object *root, const struct policy_defaults *def,
			struct session_policy *out, struct cause *cause)
{
	json_object *v;

	memset(out, 0, sizeof(*out));
	out->restart = def->restart;
	out->max_restarts = def->max_restarts;
	out->timeout = def->timeout;
	if (json_object_object_get_ex(root, "restart", &v) &&
	    policy_restart_parse(policy_body_str(v), &out->restart) < 0)
		return cause_fail(cause, EINVAL,
				  "restart must be \"no\", \"on-failure\" or \"always\"");
	if (json_object_object_get_ex(root, "maxRestarts", &v)) {
		if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0 ||
		    json_object_get_int64(v) > POLICY_MAX_RESTARTS_MAX)
			return cause_fail(cause, EINVAL,
					  "maxRestarts must be an integer from 0 to %d",
					  POLICY_MAX_RESTARTS_MAX);
		out->max_restarts = (int)json_object_get_int64(v);
	}
	if (json_object_object_get_ex(root, "timeout", &v)) {
		const char *text = policy_body_str(v);

		if (json_object_is_type(v, json_type_int) && json_object_get_int64(v) >= 1 &&
		    json_object_get_int64(v) <= POLICY_TIMEOUT_MAX)
			out->timeout = json_object_get_int64(v);
		else if (text == NULL || policy_parse_duration(text, &out->timeout) < 0)
			return cause_fail(cause, EINVAL,
					  "timeout must be a duration (\"90s\", \"30m\", \"2h\", "
					  "\"1d\") or a number of seconds, at most %ld s",
					  POLICY_TIMEOUT_MAX);
	}
	return 0;
}

bool policy_wants_restart(const struct session_policy *p, const struct policy_defaults *def,
			  int exit_status, bool signaled)
{
	enum policy_restart r = p->restart == POLICY_RESTART_UNSET ? def->restart : p->restart;

	return r == POLICY_RESTART_ALWAYS ||
	       (r == POLICY_RESTART_ON_FAILURE && (exit_status != 0 || signaled));
}

int policy_max_restarts(const struct session_policy *p, const struct policy_defaults *def)
{
	return p->restart == POLICY_RESTART_UNSET ? def->max_restarts : p->max_restarts;
}

int64_t policy_backoff_ms(uint32_t restarts, int base_ms)
{
	int64_t ms = base_ms > 0 ? base_ms : 1;

	for (uint32_t i = 0; i < restarts && ms < POLICY_BACKOFF_CAP_MS; i++)
		ms *= 2;
	return ms < POLICY_BACKOFF_CAP_MS ? ms : POLICY_BACKOFF_CAP_MS;
}

static void policy_add_time(json_object *o, const char *key, int64_t t)
{
	char buf[ISOTIME_LEN + 1];

	isotime_format(t, buf, sizeof(buf));
	json_object_object_add(o, key, json_object_new_string(buf));
}

void policy_to_json(const struct session_policy *p, json_object *o, bool for_disk)
{
	if (p->restart != POLICY_RESTART_UNSET) {
		json_object_object_add(o, "restart",
				       json_object_new_string(policy_restart_name(p->restart)));
		json_object_object_add(o, "maxRestarts", json_object_new_int(p->max_restarts));
		json_object_object_add(o, "restarts", json_object_new_int64(p->restarts));
	}
	if (p->restart_at_ms != 0) {
		char buf[ISOTIME_MS_LEN + 1];

		isotime_format_ms(p->restart_at_ms, buf, sizeof(buf));
		json_object_object_add(o, "restartAt", json_object_new_string(buf));
	}
	if (p->timeout != 0)
		json_object_object_add(o, "timeout", json_object_new_int64(p->timeout));
	if (p->timeout_at != 0)
		policy_add_time(o, "timeoutAt", p->timeout_at);
	if (p->setup != POLICY_SETUP_NONE) {
		json_object *su = json_object_new_object();

		json_object_object_add(su, "status",
				       json_object_new_string(policy_setup_names[p->setup]));
		if (p->setup != POLICY_SETUP_RUNNING) {
			json_object_object_add(su, "exitStatus",
					       json_object_new_int(p->setup_exit));
			json_object_object_add(su, "output",
					       json_object_new_string(p->setup_output));
		}
		json_object_object_add(o, "setup", su);
	}
	if (for_disk) {
		if (p->stop_at_ms != 0)
			json_object_object_add(o, "stopAt", json_object_new_int64(p->stop_at_ms));
		json_object_object_add(o, "setupDone", json_object_new_boolean(p->setup_done));
	}
}

/* An optional integer field in 0..max. */
static bool policy_int_from_json(json_object *o, const char *key, int64_t max, int64_t *out)
{
	json_object *v;

	*out = 0;
	if (!json_object_object_get_ex(o, key, &v))
		return true;
	if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0 ||
	    json_object_get_int64(v) > max)
		return false;
	*out = json_object_get_int64(v);
	return true;
}

/* An optional time field: seconds, or milliseconds with ms. */
static bool policy_time_from_json(json_object *o, const char *key, bool ms, int64_t *out)
{
	json_object *v;

	*out = 0;
	if (!json_object_object_get_ex(o, key, &v))
		return true;
	if (!json_object_is_type(v, json_type_string))
		return false;
	return (ms ? isotime_parse_ms(json_object_get_string(v), out)
		   : isotime_parse(json_object_get_string(v), out)) == 0;
}

/* The optional "setup" object of a record. */
static int policy_setup_from_json(struct session_policy *p, json_object *o, struct cause *cause)
{
	json_object *su, *v;
	size_t i = POLICY_SETUP_RUNNING;

	if (!json_object_object_get_ex(o, "setup", &su))
		return 0;
	if (!json_object_is_type(su, json_type_object) ||
	    !json_object_object_get_ex(su, "status", &v) ||
	    !json_object_is_type(v, json_type_string))
		return cause_fail(cause, EINVAL, "field setup is not {status, exitStatus, output}");
	while (i < sizeof(policy_setup_names) / sizeof(policy_setup_names[0]) &&
	       strcmp(json_object_get_string(v), policy_setup_names[i]) != 0)
		i++;
	if (i == sizeof(policy_setup_names) / sizeof(policy_setup_names[0]))
		return cause_fail(cause, EINVAL, "field setup.status is not a setup status");
	p->setup = (enum policy_setup)i;
	if (json_object_object_get_ex(su, "exitStatus", &v)) {
		if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0 ||
		    json_object_get_int64(v) > 255)
			return cause_fail(cause, EINVAL, "field setup.exitStatus is not 0..255");
		p->setup_exit = json_object_get_int(v);
	}
	if (json_object_object_get_ex(su, "output", &v)) {
		if (!json_object_is_type(v, json_type_string) ||
		    (size_t)json_object_get_string_len(v) >= sizeof(p->setup_output))
			return cause_fail(cause, EINVAL, "field setup.output is not a short text");
		memcpy(p->setup_output, json_object_get_string(v),
		       (size_t)json_object_get_string_len(v) + 1);
	}
	return 0;
}

int policy_from_json(struct session_policy *p, json_object *o, struct cause *cause)
{
	json_object *v;
	int64_t n;

	memset(p, 0, sizeof(*p));
	if (json_object_object_get_ex(o, "restart", &v) &&
	    (!json_object_is_type(v, json_type_string) ||
	     policy_restart_parse(json_object_get_string(v), &p->restart) < 0))
		return cause_fail(cause, EINVAL, "field restart is not a restart policy");
	if (!policy_int_from_json(o, "maxRestarts", POLICY_MAX_RESTARTS_MAX, &n))
		return cause_fail(cause, EINVAL, "field maxRestarts is not 0..%d",
				  POLICY_MAX_RESTARTS_MAX);
	p->max_restarts = (int)n;
	if (!policy_int_from_json(o, "restarts", UINT32_MAX, &n))
		return cause_fail(cause, EINVAL, "field restarts is not a count");
	p->restarts = (uint32_t)n;
	if (!policy_int_from_json(o, "timeout", POLICY_TIMEOUT_MAX, &p->timeout))
		return cause_fail(cause, EINVAL, "field timeout is not a number of seconds");
	if (!policy_int_from_json(o, "stopAt", INT64_MAX, &p->stop_at_ms))
		return cause_fail(cause, EINVAL, "field stopAt is not a time in ms");
	if (!policy_time_from_json(o, "restartAt", true, &p->restart_at_ms) ||
	    !policy_time_from_json(o, "timeoutAt", false, &p->timeout_at))
		return cause_fail(cause, EINVAL, "field restartAt or timeoutAt is not a time");
	if (json_object_object_get_ex(o, "setupDone", &v)) {
		if (!json_object_is_type(v, json_type_boolean))
			return cause_fail(cause, EINVAL, "field setupDone is not a boolean");
		p->setup_done = json_object_get_boolean(v);
	}
	return policy_setup_from_json(p, o, cause);
}
