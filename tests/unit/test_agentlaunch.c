/*
 * agentlaunch: the terminal argv of the agents other than claude (first launch with the prompt
 * in the agent's shape, later launches with the resume words), the files written for codex and
 * gemini, and whether a conversation exists to go on with.
 */
#include "agentlaunch.h"
#include "fsutil.h"
#include "testdir.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void expect_argv(const struct claude_argv *out, const char *const *want, size_t n)
{
	size_t got = 0;

	while (out->argv[got] != NULL)
		got++;
	cr_assert_eq(got, n, "argc %zu, want %zu", got, n);
	for (size_t i = 0; i < n; i++)
		cr_assert_str_eq(out->argv[i], want[i], "argv[%zu]", i);
}

static void setup(struct config *cfg, struct session *s, const char *agent, const char *prompt)
{
	config_defaults(cfg);
	cr_assert_eq(session_init(s, "/code", "octo", "repo", 7), 0);
	snprintf(s->agent, sizeof(s->agent), "%s", agent);
	snprintf(s->prompt, sizeof(s->prompt), "%s", prompt);
}

Test(agentlaunch, builtin_argv_first_and_later)
{
	struct config cfg;
	struct session s;
	struct claude_argv out;
	struct agent a;
	char word[128];

	setup(&cfg, &s, "codex", "--help me");
	cr_assert_eq(agents_find(&cfg, "codex", &a), 0);
	cr_assert_eq(agentlaunch_argv(&a, &s, false, &out), 0);
	expect_argv(&out,
		    (const char *[]){"codex", "--no-daemon", "--dangerously-bypass-hook-trust",
				     "--", "--help me"},
		    5);
	cr_assert_eq(agentlaunch_argv(&a, &s, true, &out), 0);
	expect_argv(&out,
		    (const char *[]){"codex", "resume", "--no-daemon",
				     "--dangerously-bypass-hook-trust", "--last"},
		    5);

	cr_assert_eq(agents_find(&cfg, "gemini", &a), 0);
	cr_assert_eq(agentlaunch_argv(&a, &s, false, &out), 0);
	snprintf(word, sizeof(word), "--session-id=%s", s.agent_session_id);
	expect_argv(
	    &out,
	    (const char *[]){"gemini", "--skip-trust", word, "--prompt-interactive=--help me"}, 4);
	cr_assert_eq(agentlaunch_argv(&a, &s, true, &out), 0);
	snprintf(word, sizeof(word), "--resume=%s", s.agent_session_id);
	expect_argv(&out, (const char *[]){"gemini", "--skip-trust", word}, 3);

	cr_assert_eq(agents_find(&cfg, "opencode", &a), 0);
	cr_assert_eq(agentlaunch_argv(&a, &s, false, &out), 0);
	expect_argv(&out, (const char *[]){"opencode", "--prompt=--help me"}, 2);
	cr_assert_eq(agentlaunch_argv(&a, &s, true, &out), 0);
	expect_argv(&out, (const char *[]){"opencode", "--continue"}, 2);

	/* No prompt: no "--" and nothing glued. */
	s.prompt[0] = '\0';
	cr_assert_eq(agents_find(&cfg, "codex", &a), 0);
	cr_assert_eq(agentlaunch_argv(&a, &s, false, &out), 0);
	expect_argv(&out,
		    (const char *[]){"codex", "--no-daemon", "--dangerously-bypass-hook-trust"}, 3);
}

Test(agentlaunch, configured_words_and_id)
{
	struct config cfg;
	struct cause c = {{0}};
	struct session s;
	struct claude_argv out;
	struct agent a;
	char start[96], resume[96];

	setup(&cfg, &s, "tool", "do it; rm -rf /");
	cr_assert_eq(config_set(&cfg, "AGENTD_AGENT_TOOL_COMMAND", "/bin/tool  --a", &c), 0);
	cr_assert_eq(config_set(&cfg, "AGENTD_AGENT_TOOL_START", "--id={id} new", &c), 0);
	cr_assert_eq(config_set(&cfg, "AGENTD_AGENT_TOOL_RESUME", "--resume={id}", &c), 0);
	cr_assert_eq(config_set(&cfg, "AGENTD_AGENT_TOOL_ARGS", "-v", &c), 0);
	cr_assert_eq(config_set(&cfg, "AGENTD_AGENT_CODEX_ARGS", "-m o3", &c), 0);
	cr_assert_eq(agents_find(&cfg, "tool", &a), 0);
	snprintf(start, sizeof(start), "--id=%s", s.agent_session_id);
	snprintf(resume, sizeof(resume), "--resume=%s", s.agent_session_id);
	cr_assert_eq(agentlaunch_argv(&a, &s, false, &out), 0);
	expect_argv(
	    &out, (const char *[]){"/bin/tool", "--a", start, "new", "-v", "--", "do it; rm -rf /"},
	    7);
	cr_assert_eq(agentlaunch_argv(&a, &s, true, &out), 0);
	expect_argv(&out, (const char *[]){"/bin/tool", "--a", resume, "-v"}, 4);
	cr_assert_eq(config_set(&cfg, "AGENTD_AGENT_TOOL_PROMPT", "none", &c), 0);
	cr_assert_eq(agents_find(&cfg, "tool", &a), 0);
	cr_assert_eq(agentlaunch_argv(&a, &s, false, &out), 0);
	expect_argv(&out, (const char *[]){"/bin/tool", "--a", start, "new", "-v"}, 5);
	/* A built-in's extra words come after its own. */
	cr_assert_eq(agents_find(&cfg, "codex", &a), 0);
	cr_assert_eq(agentlaunch_argv(&a, &s, true, &out), 0);
	expect_argv(&out,
		    (const char *[]){"codex", "resume", "--no-daemon",
				     "--dangerously-bypass-hook-trust", "--last", "-m", "o3"},
		    7);
}

/* The text of path (caller frees). */
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "re");
	char *buf = calloc(1, 65536);

	cr_assert_not_null(f, "%s", path);
	cr_assert_gt(fread(buf, 1, 65535, f), 0);
	fclose(f);
	return buf;
}

Test(agentlaunch, codex_home_has_base_config_trust_and_hooks)
{
	char home[64], path[1024], *text;
	struct config cfg;
	struct cause c = {{0}};
	struct session s;
	struct agent a;
	json_object *hooks;

	testdir_make(home, sizeof(home), "/tmp/agentlaunch-XXXXXX");
	setup(&cfg, &s, "codex", "");
	snprintf(path, sizeof(path), "%s/.codex", home);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/.codex/config.toml", home);
	cr_assert_eq(fsutil_write_atomic(path, "model = \"o3\"\n[tui]\nx = 1", 0600, false), 0);
	cr_assert_eq(agents_find(&cfg, "codex", &a), 0);
	cr_assert_eq(
	    agentlaunch_prepare(&a, &s, home, "/h/agentd-hook --socket /r/hooks.sock", 600, &c), 0,
	    "%s", c.msg);
	snprintf(path, sizeof(path), "%s/.agentd-agents/repo-7/codex/config.toml", home);
	text = slurp(path);
	cr_assert_str_eq(text, "model = \"o3\"\n[tui]\nx = 1\n\n[projects.\"/code/repo-issue-7\"]\n"
			       "trust_level = \"trusted\"\n");
	free(text);
	snprintf(path, sizeof(path), "%s/.agentd-agents/repo-7/codex/hooks.json", home);
	hooks = json_object_from_file(path);
	cr_assert_not_null(hooks);
	cr_assert_str_eq(
	    json_object_get_string(json_object_object_get(
		json_object_array_get_idx(
		    json_object_object_get(
			json_object_array_get_idx(
			    json_object_object_get(json_object_object_get(hooks, "hooks"),
						   "PermissionRequest"),
			    0),
			"hooks"),
		    0),
		"command")),
	    "/h/agentd-hook --socket /r/hooks.sock --wait 600 PermissionRequest");
	json_object_put(hooks);
	/* No conversation until codex recorded one. */
	s.launched = true;
	cr_assert_not(agentlaunch_has_conversation(&a, &s, home));
	snprintf(path, sizeof(path), "%s/.agentd-agents/repo-7/codex/sessions/2026/11/28", home);
	cr_assert_eq(fsutil_mkdir_p(path), 0);
	snprintf(path, sizeof(path),
		 "%s/.agentd-agents/repo-7/codex/sessions/2026/11/28/rollout-x-y.jsonl", home);
	cr_assert_eq(fsutil_write_atomic(path, "{}\n", 0600, false), 0);
	cr_assert(agentlaunch_has_conversation(&a, &s, home));
	testdir_remove(home);
}

Test(agentlaunch, gemini_settings_keep_the_agents_own)
{
	char home[64], path[1024];
	struct config cfg;
	struct cause c = {{0}};
	struct session s;
	struct agent a;
	json_object *set, *hooks, *stop;

	testdir_make(home, sizeof(home), "/tmp/agentlaunch-XXXXXX");
	setup(&cfg, &s, "gemini", "");
	snprintf(path, sizeof(path), "%s/.gemini", home);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/.gemini/settings.json", home);
	cr_assert_eq(
	    fsutil_write_atomic(path,
				"{\"model\":{\"name\":\"m\"},\"hooks\":{\"AfterAgent\":[{"
				"\"hooks\":[{\"type\":\"command\",\"command\":\"mine\"}]}]}}",
				0600, false),
	    0);
	cr_assert_eq(agents_find(&cfg, "gemini", &a), 0);
	cr_assert_eq(agentlaunch_prepare(&a, &s, home, "/h/hook --socket /r/s", 0, &c), 0, "%s",
		     c.msg);
	snprintf(path, sizeof(path), "%s/.agentd-agents/repo-7/gemini/.gemini/settings.json", home);
	set = json_object_from_file(path);
	cr_assert_not_null(set);
	cr_assert_str_eq(json_object_to_json_string(json_object_object_get(set, "model")),
			 "{ \"name\": \"m\" }");
	hooks = json_object_object_get(set, "hooks");
	stop = json_object_object_get(hooks, "AfterAgent");
	cr_assert_eq(json_object_array_length(stop), 2, "ours, then the agent's own");
	cr_assert_str_eq(
	    json_object_get_string(json_object_object_get(
		json_object_array_get_idx(
		    json_object_object_get(json_object_array_get_idx(stop, 0), "hooks"), 0),
		"command")),
	    "/h/hook --socket /r/s Stop");
	cr_assert_eq(
	    json_object_get_int(json_object_object_get(
		json_object_array_get_idx(
		    json_object_object_get(json_object_array_get_idx(stop, 0), "hooks"), 0),
		"timeout")),
	    AGENTLAUNCH_HOOK_MS, "gemini counts milliseconds");
	cr_assert_not(json_object_object_get_ex(hooks, "BeforeToolSelection", NULL));
	json_object_put(set);
	snprintf(path, sizeof(path), "%s/.agentd-agents/repo-7/gemini/.gemini/trustedFolders.json",
		 home);
	set = json_object_from_file(path);
	cr_assert_str_eq(json_object_get_string(json_object_object_get(set, "/code/repo-issue-7")),
			 "TRUST_FOLDER");
	json_object_put(set);
	testdir_remove(home);
}

/* opencode: the attention plugin in the agent's config dir, the same for every session, doing
 * nothing unless a terminal launch gives it agentd-hook's words (spawned by an argv). */
Test(agentlaunch, opencode_gets_its_attention_plugin)
{
	char home[64], path[1024], want[1024];
	struct config cfg;
	struct cause c = {{0}};
	struct claude_env env;
	struct session s;
	struct agent a;
	char *const none[] = {NULL};
	char *js = NULL;
	size_t len;
	bool found = false;

	testdir_make(home, sizeof(home), "/tmp/agentlaunch-XXXXXX");
	setup(&cfg, &s, "opencode", "");
	cr_assert_eq(agents_find(&cfg, "opencode", &a), 0);
	cr_assert_eq(
	    agentlaunch_prepare(&a, &s, home, "/h/agentd-hook --socket /r/hooks.sock", 0, &c), 0,
	    "%s", c.msg);
	snprintf(path, sizeof(path), "%s/.config/opencode/plugin/agentd-attention.js", home);
	cr_assert_eq(fsutil_read_file(path, 65536, &js, &len), 0);
	cr_assert_not_null(strstr(js, "process.env." AGENTLAUNCH_OPENCODE_HOOK_ENV), "%s", js);
	cr_assert_not_null(strstr(js, "spawn(HOOK[0]"), "no shell: an argv");
	cr_assert_not_null(strstr(js, "\"permission.asked\""));
	free(js);
	cr_assert_eq(claude_env(&cfg, none, &env), 0);
	cr_assert_eq(agentlaunch_hook_env(&a, "/h/agentd-hook --socket /r/hooks.sock", &env), 0);
	snprintf(want, sizeof(want),
		 AGENTLAUNCH_OPENCODE_HOOK_ENV "=/h/agentd-hook --socket /r/hooks.sock");
	for (size_t i = 0; env.words[i] != NULL && !found; i++)
		found = strcmp(env.words[i], want) == 0;
	cr_assert(found, "%s", want);
	/* Structured (no hooks), or another agent: nothing. */
	cr_assert_eq(claude_env(&cfg, none, &env), 0);
	cr_assert_eq(agentlaunch_hook_env(&a, NULL, &env), 0);
	for (size_t i = 0; env.words[i] != NULL; i++)
		cr_assert_null(strstr(env.words[i], AGENTLAUNCH_OPENCODE_HOOK_ENV), "%s",
			       env.words[i]);
	testdir_remove(home);
}

Test(agentlaunch, a_later_launch_resumes_the_recorded_conversation_by_its_id)
{
	char home[64], path[1024], conv[ACP_CONVERSATION_MAX + 1], word[128];
	struct config cfg;
	struct session s;
	struct claude_argv out;
	struct agent a;

	setup(&cfg, &s, "codex", "");
	testdir_make(home, sizeof(home), "/tmp/agentlaunch-XXXXXX");
	/* What agentd-host recorded in structured mode. */
	snprintf(path, sizeof(path), "%s/acp.json", home);
	cr_assert_eq(agentlaunch_recorded_conversation(path, conv, sizeof(conv)), -ENOENT);
	cr_assert_eq(fsutil_write_atomic(path,
					 "{\"agent\":\"codex\",\"sessionId\":"
					 "\"019a-7f3e-b2c1\",\"createdAt\":1}",
					 0600, false),
		     0);
	cr_assert_eq(agentlaunch_recorded_conversation(path, conv, sizeof(conv)), 0);
	cr_assert_str_eq(conv, "019a-7f3e-b2c1");
	/* An id that would be an option, or a glob, is no id. */
	cr_assert_eq(fsutil_write_atomic(path, "{\"sessionId\":\"--last\"}", 0600, false), 0);
	cr_assert_eq(agentlaunch_recorded_conversation(path, conv, sizeof(conv)), -EINVAL);
	cr_assert_eq(fsutil_write_atomic(path, "{\"sessionId\":\"a*\"}", 0600, false), 0);
	cr_assert_eq(agentlaunch_recorded_conversation(path, conv, sizeof(conv)), -EINVAL);

	cr_assert_eq(agents_find(&cfg, "codex", &a), 0);
	cr_assert_eq(agentlaunch_argv_conversation(&a, &s, true, "019a-7f3e-b2c1", &out), 0);
	expect_argv(&out,
		    (const char *[]){"codex", "resume", "--no-daemon",
				     "--dangerously-bypass-hook-trust", "019a-7f3e-b2c1"},
		    5);
	/* A first launch is one, whatever was recorded. */
	cr_assert_eq(agentlaunch_argv_conversation(&a, &s, false, "019a-7f3e-b2c1", &out), 0);
	expect_argv(&out,
		    (const char *[]){"codex", "--no-daemon", "--dangerously-bypass-hook-trust"}, 3);
	cr_assert_eq(agents_find(&cfg, "gemini", &a), 0);
	cr_assert_eq(agentlaunch_argv_conversation(&a, &s, true, "5e1f0c2a-1111", &out), 0);
	expect_argv(&out, (const char *[]){"gemini", "--skip-trust", "--resume=5e1f0c2a-1111"}, 3);
	cr_assert_eq(agents_find(&cfg, "opencode", &a), 0);
	cr_assert_eq(agentlaunch_argv_conversation(&a, &s, true, "ses_42", &out), 0);
	expect_argv(&out, (const char *[]){"opencode", "--session=ses_42"}, 2);

	/* codex has the recorded conversation when its rollout of that id is there. */
	cr_assert_eq(agents_find(&cfg, "codex", &a), 0);
	s.launched = true;
	snprintf(path, sizeof(path), "%s/.agentd-agents/repo-7/codex/sessions/2026/11/28", home);
	cr_assert_eq(fsutil_mkdir_p(path), 0);
	snprintf(path, sizeof(path),
		 "%s/.agentd-agents/repo-7/codex/sessions/2026/11/28/"
		 "rollout-2026-11-28T10-00-00-019a-7f3e-b2c1.jsonl",
		 home);
	cr_assert_eq(fsutil_write_atomic(path, "{}\n", 0600, false), 0);
	cr_assert(agentlaunch_has_conversation_id(&a, &s, home, "019a-7f3e-b2c1"));
	cr_assert_not(agentlaunch_has_conversation_id(&a, &s, home, "0000-other"));
	/* The newest rollout's thread id: what codex-acp loads after the TUI. */
	cr_assert_eq(agentlaunch_codex_newest(&s, home, conv, sizeof(conv)), -EINVAL);
	snprintf(path, sizeof(path),
		 "%s/.agentd-agents/repo-7/codex/sessions/2026/11/28/"
		 "rollout-2026-11-28T15-37-16-01a222cd-b337-7440-905e-6187c83201c0.jsonl",
		 home);
	cr_assert_eq(fsutil_write_atomic(path, "{}\n", 0600, false), 0);
	snprintf(path, sizeof(path), "%s/.agentd-agents/repo-7/codex/sessions/2026/11/27", home);
	cr_assert_eq(fsutil_mkdir_p(path), 0);
	snprintf(path, sizeof(path),
		 "%s/.agentd-agents/repo-7/codex/sessions/2026/11/27/"
		 "rollout-2026-11-27T09-00-00-01a00000-0000-7000-8000-000000000000.jsonl",
		 home);
	cr_assert_eq(fsutil_write_atomic(path, "{}\n", 0600, false), 0);
	cr_assert_eq(agentlaunch_codex_newest(&s, home, conv, sizeof(conv)), 0);
	cr_assert_str_eq(conv, "01a222cd-b337-7440-905e-6187c83201c0");
	/* The TUI's own thread (ordinals) goes on in the TUI; once codex-acp wrote to it last (no
	 * ordinal), codex 0.169 refuses it. codex-acp's own thread (none) goes on in both. */
	snprintf(path, sizeof(path),
		 "%s/.agentd-agents/repo-7/codex/sessions/2026/11/28/"
		 "rollout-2026-11-28T15-37-16-01a222cd-b337-7440-905e-6187c83201c0.jsonl",
		 home);
	cr_assert_eq(
	    fsutil_write_atomic(path,
				"{\"timestamp\":\"t\",\"ordinal\":0,\"type\":\"session_meta\"}\n"
				"{\"timestamp\":\"t\",\"ordinal\":1,\"type\":\"event_msg\"}\n",
				0600, false),
	    0);
	cr_assert(
	    agentlaunch_codex_tui_can_resume(&s, home, "01a222cd-b337-7440-905e-6187c83201c0"));
	cr_assert_eq(
	    fsutil_write_atomic(path,
				"{\"timestamp\":\"t\",\"ordinal\":0,\"type\":\"session_meta\"}\n"
				"{\"timestamp\":\"t\",\"ordinal\":1,\"type\":\"event_msg\"}\n"
				"{\"timestamp\":\"t\",\"type\":\"event_msg\"}\n",
				0600, false),
	    0);
	cr_assert_not(
	    agentlaunch_codex_tui_can_resume(&s, home, "01a222cd-b337-7440-905e-6187c83201c0"));
	cr_assert_eq(fsutil_write_atomic(path,
					 "{\"timestamp\":\"t\",\"type\":\"session_meta\"}\n"
					 "{\"timestamp\":\"t\",\"type\":\"event_msg\"}\n",
					 0600, false),
		     0);
	cr_assert(
	    agentlaunch_codex_tui_can_resume(&s, home, "01a222cd-b337-7440-905e-6187c83201c0"));
	cr_assert(
	    agentlaunch_codex_tui_can_resume(&s, home, "01a00000-dead-7000-8000-000000000000"));

	/* gemini's chat of agentSessionId: the minute in its name (UTC). */
	snprintf(path, sizeof(path), "%s/.agentd-agents/repo-7/gemini/.gemini/tmp/p/chats", home);
	cr_assert_eq(fsutil_mkdir_p(path), 0);
	cr_assert_eq(agentlaunch_gemini_made_ms(&s, home), 0);
	snprintf(word, sizeof(word), "%.8s", s.agent_session_id);
	snprintf(path, sizeof(path),
		 "%s/.agentd-agents/repo-7/gemini/.gemini/tmp/p/chats/"
		 "session-2026-11-28T15-31-%s.jsonl",
		 home, word);
	cr_assert_eq(fsutil_write_atomic(path, "{}\n", 0600, false), 0);
	cr_assert_eq(agentlaunch_gemini_made_ms(&s, home), (int64_t)1795879860 * 1000);
	testdir_remove(home);
}
