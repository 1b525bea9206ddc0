/*
 * agents: the table's built-ins, agents of the configuration (AGENTD_AGENT_<NAME>_*), the
 * default agent's check, and the activity source each session reports.
 */
#include "agents.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

static void set(struct config *cfg, const char *key, const char *value)
{
	struct cause c = {{0}};

	cr_assert_eq(config_set(cfg, key, value, &c), 0, "%s: %s", key, c.msg);
}

Test(agents, builtins_are_found_with_claude_from_its_keys)
{
	struct config cfg;
	struct agent a;

	config_defaults(&cfg);
	snprintf(cfg.claude, sizeof(cfg.claude), "/opt/claude");
	cr_assert_eq(agents_find(&cfg, "claude", &a), 0);
	cr_assert_str_eq(a.command, "/opt/claude");
	cr_assert(a.structured);
	cr_assert_eq(agents_find(&cfg, "codex", &a), 0);
	cr_assert_str_eq(a.command, "codex");
	cr_assert_str_eq(a.prompt, "--");
	cr_assert_eq(a.resumes, AGENT_RESUME_LAST);
	cr_assert_eq(agents_find(&cfg, "gemini", &a), 0);
	cr_assert_str_eq(a.prompt, "--prompt-interactive=", "gemini breaks with --");
	cr_assert_eq(agents_find(&cfg, "opencode", &a), 0);
	cr_assert_str_eq(a.prompt, "--prompt=", "opencode's positional is a directory");
	cr_assert_str_eq(a.activity_source, "hooks", "opencode reports through its plugin");
	cr_assert_eq(agents_find(&cfg, "nope", &a), -ENOENT);
	cr_assert_eq(agents_find(&cfg, "", &a), -ENOENT);
}

Test(agents, configured_agent_and_builtin_override)
{
	struct config cfg;
	struct cause c = {{0}};
	char list[AGENTS_LIST_MAX];
	struct agent a;

	config_defaults(&cfg);
	set(&cfg, "AGENTD_AGENT_MY_TOOL2_COMMAND", "/usr/bin/mytool --x");
	set(&cfg, "AGENTD_AGENT_MY_TOOL2_PROMPT", "--task=");
	set(&cfg, "AGENTD_AGENT_MY_TOOL2_RESUME", "--continue={id}");
	set(&cfg, "AGENTD_AGENT_CODEX_COMMAND", "/opt/codex/bin/codex");
	set(&cfg, "AGENTD_AGENT_CODEX_ARGS", "-m o3");
	cr_assert_eq(agents_check_config(&cfg, &c), 0, "%s", c.msg);
	cr_assert_eq(agents_find(&cfg, "my_tool2", &a), 0);
	cr_assert_eq(a.kind, AGENT_CUSTOM);
	cr_assert_str_eq(a.command, "/usr/bin/mytool --x");
	cr_assert_str_eq(a.prompt, "--task=");
	cr_assert_eq(a.resumes, AGENT_RESUME_ID);
	cr_assert_str_eq(a.activity_source, "none");
	cr_assert_not(a.structured);
	cr_assert_eq(agents_find(&cfg, "codex", &a), 0);
	cr_assert_str_eq(a.command, "/opt/codex/bin/codex");
	cr_assert_str_eq(a.args, "-m o3");
	agents_list(&cfg, list, sizeof(list));
	cr_assert_str_eq(list, "claude, codex, gemini, opencode, my_tool2");
}

Test(agents, config_refuses_what_the_table_cannot_take)
{
	struct config cfg;
	struct cause c = {{0}};

	config_defaults(&cfg);
	cr_assert_eq(config_set(&cfg, "AGENTD_AGENT_X_PROMPT", "--task", &c), -EINVAL,
		     "a prompt option must end in '=': else the prompt is a word of its own");
	cr_assert_eq(config_set(&cfg, "AGENTD_AGENT_X_PROMPT", "task=", &c), -EINVAL);
	cr_assert_eq(config_set(&cfg, "AGENTD_AGENT_X_COLOR", "red", &c), -EINVAL);
	cr_assert_eq(config_set(&cfg, "AGENTD_AGENT_1X_COMMAND", "/x", &c), -EINVAL);
	cr_assert_eq(config_set(&cfg, "AGENTD_AGENT_x_COMMAND", "/x", &c), -EINVAL);
	/* The fixed keys that share the prefix are still themselves. */
	set(&cfg, "AGENTD_AGENT_HOME_TEMPLATE", "/srv/template");
	cr_assert_str_eq(cfg.agent_home_template, "/srv/template");

	config_defaults(&cfg);
	set(&cfg, "AGENTD_AGENT_LONELY_ARGS", "-v");
	cr_assert_eq(agents_check_config(&cfg, &c), -EINVAL, "an agent without a command");
	cr_assert(strstr(c.msg, "lonely") != NULL, "%s", c.msg);

	config_defaults(&cfg);
	set(&cfg, "AGENTD_AGENT_GEMINI_PROMPT", "--");
	cr_assert_eq(agents_check_config(&cfg, &c), -EINVAL, "a built-in's shapes are its own");

	config_defaults(&cfg);
	set(&cfg, "AGENTD_AGENT_CLAUDE_COMMAND", "/x");
	cr_assert_eq(agents_check_config(&cfg, &c), -EINVAL, "claude's is AGENTD_CLAUDE");

	config_defaults(&cfg);
	set(&cfg, "AGENTD_DEFAULT_AGENT", "nope");
	cr_assert_eq(agents_check_config(&cfg, &c), -EINVAL);
	cr_assert(strstr(c.msg, "known: claude, codex, gemini, opencode") != NULL, "%s", c.msg);

	config_defaults(&cfg);
	for (int i = 0; i < CONFIG_AGENTS_MAX; i++) {
		char key[64];

		snprintf(key, sizeof(key), "AGENTD_AGENT_A%d_COMMAND", i);
		set(&cfg, key, "/x");
	}
	cr_assert_eq(config_set(&cfg, "AGENTD_AGENT_ONEMORE_COMMAND", "/x", &c), -E2BIG);
}

Test(agents, activity_source_by_agent_and_mode)
{
	struct session s;

	cr_assert_eq(session_init(&s, "/code", "octo", "repo", 1), 0);
	cr_assert_str_eq(s.agent, "claude", "a session runs claude unless told");
	cr_assert_str_eq(agents_activity_source(&s), "hooks");
	snprintf(s.agent, sizeof(s.agent), "codex");
	cr_assert_str_eq(agents_activity_source(&s), "hooks");
	snprintf(s.agent, sizeof(s.agent), "gemini");
	cr_assert_str_eq(agents_activity_source(&s), "hooks");
	snprintf(s.agent, sizeof(s.agent), "opencode");
	cr_assert_str_eq(agents_activity_source(&s), "hooks");
	snprintf(s.agent, sizeof(s.agent), "mytool");
	cr_assert_str_eq(agents_activity_source(&s), "none");
	snprintf(s.agent, sizeof(s.agent), "claude");
	s.mode = SESSION_STRUCTURED;
	cr_assert_str_eq(agents_activity_source(&s), "host");
}

Test(agents, record_keeps_the_agent_and_old_records_ran_claude)
{
	struct session s, back;
	struct cause c = {{0}};
	json_object *o;

	cr_assert_eq(session_init(&s, "/code", "octo", "repo", 1), 0);
	snprintf(s.agent, sizeof(s.agent), "gemini");
	o = session_to_json(&s, true);
	cr_assert_eq(session_from_json(&back, o, &c), 0, "%s", c.msg);
	cr_assert_str_eq(back.agent, "gemini");
	json_object_object_del(o, "agent");
	cr_assert_eq(session_from_json(&back, o, &c), 0, "%s", c.msg);
	cr_assert_str_eq(back.agent, "claude");
	json_object_object_add(o, "agent", json_object_new_string("../x"));
	cr_assert_eq(session_from_json(&back, o, &c), -EINVAL);
	json_object_put(o);
	o = session_to_json(&s, false);
	cr_assert_str_eq(json_object_get_string(json_object_object_get(o, "agent")), "gemini");
	cr_assert_str_eq(json_object_get_string(json_object_object_get(o, "activitySource")),
			 "hooks");
	json_object_put(o);
}
