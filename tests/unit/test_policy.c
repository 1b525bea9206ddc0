/*
 * policy: durations, the POST body's restart/maxRestarts/timeout, the restart decision, the
 * backoff, and the record fields round-tripping through JSON; and the configuration keys of
 * the policies (core/config.c checks their values).
 */
#include "config.h"
#include "policy.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <string.h>

Test(policy, durations_with_units)
{
	int64_t s = 0;

	cr_assert_eq(policy_parse_duration("90s", &s), 0);
	cr_assert_eq(s, 90);
	cr_assert_eq(policy_parse_duration("30m", &s), 0);
	cr_assert_eq(s, 1800);
	cr_assert_eq(policy_parse_duration("2h", &s), 0);
	cr_assert_eq(s, 7200);
	cr_assert_eq(policy_parse_duration("1d", &s), 0);
	cr_assert_eq(s, 86400);
	cr_assert_eq(policy_parse_duration("45", &s), 0);
	cr_assert_eq(s, 45);
	static const char *const bad[] = {
	    "", "0", "0s", "h", "2x", "2hh", "-1", " 2h", "2 h", "367d", "99999999999999999999"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(policy_parse_duration(bad[i], &s), -EINVAL, "%s", bad[i]);
}

static int parse(const char *body, struct session_policy *p, struct cause *c)
{
	struct policy_defaults def = {POLICY_RESTART_ON_FAILURE, 5, 0};
	json_object *o = json_tokener_parse(body);
	int r;

	cr_assert_not_null(o, "%s", body);
	r = policy_parse_create(o, &def, p, c);
	json_object_put(o);
	return r;
}

Test(policy, body_fields_and_defaults)
{
	struct session_policy p;
	struct cause c = {{0}};

	cr_assert_eq(parse("{}", &p, &c), 0);
	cr_assert_eq(p.restart, POLICY_RESTART_ON_FAILURE);
	cr_assert_eq(p.max_restarts, 5);
	cr_assert_eq(p.timeout, 0);
	cr_assert_eq(parse("{\"restart\":\"always\",\"maxRestarts\":0,\"timeout\":\"2h\"}", &p, &c),
		     0);
	cr_assert_eq(p.restart, POLICY_RESTART_ALWAYS);
	cr_assert_eq(p.max_restarts, 0);
	cr_assert_eq(p.timeout, 7200);
	cr_assert_eq(parse("{\"restart\":\"no\",\"timeout\":90}", &p, &c), 0);
	cr_assert_eq(p.restart, POLICY_RESTART_NO);
	cr_assert_eq(p.timeout, 90);
	static const char *const bad[] = {
	    "{\"restart\":\"sometimes\"}", "{\"restart\":1}",         "{\"maxRestarts\":-1}",
	    "{\"maxRestarts\":1001}",      "{\"maxRestarts\":\"3\"}", "{\"timeout\":0}",
	    "{\"timeout\":\"2 h\"}",       "{\"timeout\":true}",      "{\"restart\":\"no\\u0000\"}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		c.msg[0] = '\0';
		cr_assert_eq(parse(bad[i], &p, &c), -EINVAL, "%s", bad[i]);
		cr_assert(c.msg[0] != '\0', "%s: a reason", bad[i]);
	}
}

Test(policy, restart_decision)
{
	struct policy_defaults def = {POLICY_RESTART_ON_FAILURE, 5, 0};
	struct session_policy p = {0};

	p.restart = POLICY_RESTART_ON_FAILURE;
	cr_assert(policy_wants_restart(&p, &def, 3, false));
	cr_assert(policy_wants_restart(&p, &def, 137, true));
	cr_assert(!policy_wants_restart(&p, &def, 0, false));
	p.restart = POLICY_RESTART_ALWAYS;
	cr_assert(policy_wants_restart(&p, &def, 0, false));
	p.restart = POLICY_RESTART_NO;
	cr_assert(!policy_wants_restart(&p, &def, 3, false));
	/* A record made before policies: the configuration's. */
	p.restart = POLICY_RESTART_UNSET;
	cr_assert(policy_wants_restart(&p, &def, 1, false));
	cr_assert_eq(policy_max_restarts(&p, &def), 5);
}

Test(policy, backoff_doubles_to_its_cap)
{
	cr_assert_eq(policy_backoff_ms(0, 3000), 3000);
	cr_assert_eq(policy_backoff_ms(1, 3000), 6000);
	cr_assert_eq(policy_backoff_ms(3, 3000), 24000);
	cr_assert_eq(policy_backoff_ms(7, 3000), POLICY_BACKOFF_CAP_MS);
	cr_assert_eq(policy_backoff_ms(UINT32_MAX, 3000), POLICY_BACKOFF_CAP_MS);
}

Test(policy, record_round_trip)
{
	struct session_policy p = {.restart = POLICY_RESTART_ALWAYS,
				   .max_restarts = 7,
				   .restarts = 3,
				   .restart_at_ms = 1700000000123,
				   .timeout = 7200,
				   .timeout_at = 1700007200,
				   .stop_at_ms = 1700000001000,
				   .setup_done = true,
				   .setup = POLICY_SETUP_FAILED,
				   .setup_exit = 3,
				   .setup_output = "npm ERR! missing\nexit"},
			      q;
	struct cause c = {{0}};
	json_object *o = json_object_new_object(), *v;

	policy_to_json(&p, o, true);
	cr_assert_eq(policy_from_json(&q, o, &c), 0, "%s", c.msg);
	json_object_put(o);
	cr_assert(p.restart == q.restart && p.max_restarts == q.max_restarts &&
		  p.restarts == q.restarts && p.restart_at_ms == q.restart_at_ms &&
		  p.timeout == q.timeout && p.timeout_at == q.timeout_at &&
		  p.stop_at_ms == q.stop_at_ms && p.setup_done == q.setup_done &&
		  p.setup == q.setup && p.setup_exit == q.setup_exit &&
		  strcmp(p.setup_output, q.setup_output) == 0);
	/* The API form leaves the daemons' own fields out. */
	o = json_object_new_object();
	policy_to_json(&p, o, false);
	cr_assert(json_object_object_get_ex(o, "restarts", &v));
	cr_assert_eq(json_object_get_int(v), 3);
	cr_assert(json_object_object_get_ex(o, "restartAt", &v));
	cr_assert_str_eq(json_object_get_string(v), "2023-11-14T22:13:20.123Z");
	cr_assert(!json_object_object_get_ex(o, "stopAt", &v));
	cr_assert(!json_object_object_get_ex(o, "setupDone", &v));
	json_object_put(o);
}

Test(policy, config_keys)
{
	struct config cfg;
	struct cause c = {{0}};

	config_defaults(&cfg);
	cr_assert_str_eq(cfg.restart_policy, "on-failure");
	cr_assert_eq(cfg.max_restarts, 5);
	cr_assert_eq(cfg.restart_backoff_ms, 3000);
	cr_assert_eq(cfg.stop_grace, 30);
	cr_assert_str_eq(cfg.session_timeout, "");
	cr_assert_eq(config_set(&cfg, "AGENTD_RESTART_POLICY", "always", &c), 0);
	cr_assert_eq(config_set(&cfg, "AGENTD_RESTART_POLICY", "sometimes", &c), -EINVAL);
	cr_assert_eq(config_set(&cfg, "AGENTD_SESSION_TIMEOUT", "2h", &c), 0);
	cr_assert_eq(config_set(&cfg, "AGENTD_SESSION_TIMEOUT", "2y", &c), -EINVAL);
	cr_assert_eq(config_set(&cfg, "AGENTD_STOP_GRACE", "0", &c), 0);
	cr_assert_eq(config_set(&cfg, "AGENTD_SETUP_COMMAND", "[\"/bin/true\",\"-x\"]", &c), 0);
	cr_assert_eq(config_set(&cfg, "AGENTD_SETUP_COMMAND", "[\"true\"]", &c), -EINVAL,
		     "a relative program");
	cr_assert_eq(config_set(&cfg, "AGENTD_SETUP_COMMAND", "/bin/true", &c), -EINVAL,
		     "not a JSON array");
	cr_assert_eq(config_set(&cfg, "AGENTD_SETUP_COMMAND", "[]", &c), -EINVAL);
	cr_assert_eq(config_set(&cfg, "AGENTD_SETUP_COMMAND", "[\"/bin/x\",1]", &c), -EINVAL);
}
