/* acplaunch: the structured-mode argv of the agents that speak ACP (agentd-host --acp). */
#include "acp.h"
#include "acplaunch.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

static void expect_argv(const struct claude_argv *out, const char *const *want, size_t n)
{
	size_t got = 0;

	while (out->argv[got] != NULL)
		got++;
	cr_assert_eq(got, n, "argc %zu, want %zu", got, n);
	for (size_t i = 0; i < n; i++)
		cr_assert_str_eq(out->argv[i], want[i], "argv[%zu]", i);
}

static void setup(struct config *cfg, struct session *s)
{
	config_defaults(cfg);
	snprintf(cfg->runtime_dir, sizeof(cfg->runtime_dir), "/run/a");
	snprintf(cfg->state_dir, sizeof(cfg->state_dir), "/var/lib/a");
	cfg->permission_timeout = 60;
	cr_assert_eq(session_init(s, "/code", "octo", "repo", 7), 0);
}

Test(acplaunch, gemini_with_its_prompt_and_args)
{
	struct config cfg;
	struct session s;
	struct agent a;
	struct claude_argv out;
	static const char *const want[] = {"/bin/agentd-host",
					   "--set",
					   "AGENTD_RUNTIME_DIR=/run/a",
					   "--set",
					   "AGENTD_STATE_DIR=/var/lib/a",
					   "--set",
					   "AGENTD_PERMISSION_TIMEOUT=60",
					   "--set",
					   "AGENTD_STOP_GRACE=30",
					   "--acp",
					   "gemini",
					   "--prompt",
					   "--not-an-option",
					   "repo-7",
					   "--",
					   "gemini",
					   "--acp",
					   "--skip-trust",
					   "-m",
					   "flash"};

	setup(&cfg, &s);
	snprintf(cfg.agents[0].name, sizeof(cfg.agents[0].name), "gemini");
	snprintf(cfg.agents[0].args, sizeof(cfg.agents[0].args), "-m flash");
	cr_assert_eq(agents_find(&cfg, "gemini", &a), 0);
	cr_assert(a.structured);
	/* The prompt is --prompt's value: never a word of the agent's. */
	cr_assert_eq(
	    acplaunch_argv(&cfg, &a, &s, "/bin/agentd-host", "--not-an-option", NULL, 0, &out), 0);
	expect_argv(&out, want, sizeof(want) / sizeof(want[0]));
}

Test(acplaunch, codex_runs_its_adapter_and_later_launches_have_no_prompt)
{
	struct config cfg;
	struct session s;
	struct agent a;
	struct claude_argv out;

	setup(&cfg, &s);
	cr_assert_eq(agents_find(&cfg, "codex", &a), 0);
	cr_assert_eq(acplaunch_argv(&cfg, &a, &s, "h", NULL, NULL, 0, &out), 0);
	cr_assert_str_eq(out.argv[9], "--acp");
	cr_assert_str_eq(out.argv[10], "codex");
	cr_assert_str_eq(out.argv[11], "repo-7");
	cr_assert_str_eq(out.argv[13], "codex-acp");
	cr_assert_null(out.argv[14]);
	cr_assert_eq(agents_find(&cfg, "opencode", &a), 0);
	cr_assert_eq(acplaunch_argv(&cfg, &a, &s, "h", "", NULL, 0, &out), 0);
	cr_assert_str_eq(out.argv[13], "opencode");
	cr_assert_str_eq(out.argv[14], "acp");
	cr_assert_null(out.argv[15]);
}

Test(acplaunch, configured_acp_command)
{
	struct config cfg;
	struct session s;
	struct agent a;
	struct claude_argv out;

	setup(&cfg, &s);
	snprintf(cfg.agents[0].name, sizeof(cfg.agents[0].name), "mytool");
	snprintf(cfg.agents[0].command, sizeof(cfg.agents[0].command), "/opt/mytool");
	cr_assert_eq(agents_find(&cfg, "mytool", &a), 0);
	cr_assert_not(a.structured, "no _ACP: no structured mode");
	cr_assert_eq(acplaunch_argv(&cfg, &a, &s, "h", NULL, NULL, 0, &out), -EINVAL);
	snprintf(cfg.agents[0].acp, sizeof(cfg.agents[0].acp), "/opt/mytool --acp  -v");
	cr_assert_eq(agents_find(&cfg, "mytool", &a), 0);
	cr_assert(a.structured);
	cr_assert_eq(acplaunch_argv(&cfg, &a, &s, "h", NULL, NULL, 0, &out), 0);
	cr_assert_str_eq(out.argv[13], "/opt/mytool");
	cr_assert_str_eq(out.argv[14], "--acp");
	cr_assert_str_eq(out.argv[15], "-v");
	cr_assert_null(out.argv[16]);
	/* A built-in's _ACP replaces its ACP command. */
	snprintf(cfg.agents[1].name, sizeof(cfg.agents[1].name), "codex");
	snprintf(cfg.agents[1].acp, sizeof(cfg.agents[1].acp), "/opt/codex-acp");
	cr_assert_eq(agents_find(&cfg, "codex", &a), 0);
	cr_assert_eq(acplaunch_argv(&cfg, &a, &s, "h", NULL, NULL, 0, &out), 0);
	cr_assert_str_eq(out.argv[13], "/opt/codex-acp");
}

Test(acplaunch, resume_names_the_terminal_conversation)
{
	struct config cfg;
	struct session s;
	struct agent a;
	struct claude_argv out;

	setup(&cfg, &s);
	cr_assert_eq(agents_find(&cfg, "gemini", &a), 0);
	cr_assert_eq(acplaunch_argv(&cfg, &a, &s, "h", NULL, "0b7c2f4e-8a55-4a43-9a6b-2d0f4f0d9c12",
				    1795860000000, &out),
		     0);
	cr_assert_str_eq(out.argv[11], "--resume");
	cr_assert_str_eq(out.argv[12], "0b7c2f4e-8a55-4a43-9a6b-2d0f4f0d9c12");
	cr_assert_str_eq(out.argv[13], "--resume-made");
	cr_assert_str_eq(out.argv[14], "1795860000000");
	cr_assert_str_eq(out.argv[15], "repo-7");
	cr_assert_eq(agents_find(&cfg, "codex", &a), 0);
	cr_assert_eq(acplaunch_argv(&cfg, &a, &s, "h", NULL, ACP_RESUME_NEWEST, 0, &out), 0);
	cr_assert_str_eq(out.argv[11], "--resume");
	cr_assert_str_eq(out.argv[12], "newest");
	cr_assert_str_eq(out.argv[13], "repo-7");
}
